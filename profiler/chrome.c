/* chrome.c — Chrome Trace Event JSON export (chrome.h). */
#define G_LOG_DOMAIN "tw-profiler"

#include "profiler/chrome.h"
#include "engine/fileutil.h"

#include <math.h>
#include <string.h>
#include <zlib.h>

/* Text is generated into a buffer and handed on once it passes 1 MiB:
 * large enough that writes are few, small enough not to matter in memory. */
#define CHUNK ((gsize) 1 << 20)

static void
append_escaped_valid (GString *out, const char *s)
{
  for (const unsigned char *p = (const unsigned char *) s; *p; p++)
    {
      unsigned char c = *p;
      switch (c)
        {
        case '"': g_string_append (out, "\\\""); break;
        case '\\': g_string_append (out, "\\\\"); break;
        case '\n': g_string_append (out, "\\n"); break;
        case '\r': g_string_append (out, "\\r"); break;
        case '\t': g_string_append (out, "\\t"); break;
        case '\b': g_string_append (out, "\\b"); break;
        case '\f': g_string_append (out, "\\f"); break;
        default:
          if (c < 0x20 || c == 0x7f)
            g_string_append_printf (out, "\\u%04x", c);
          else
            g_string_append_c (out, (char) c);
        }
    }
}

void
tw_json_append_string (GString *out, const char *s)
{
  g_string_append_c (out, '"');
  if (s && g_utf8_validate (s, -1, NULL))
    append_escaped_valid (out, s);
  else if (s)
    {
      g_autofree char *valid = g_utf8_make_valid (s, -1);
      append_escaped_valid (out, valid);
    }
  g_string_append_c (out, '"');
}

typedef struct
{
  tw_save *save;
  const char *path;
  gboolean gz;
  z_stream z;
  GString *buf;
  unsigned char *zout;
} writer;

static gboolean
writer_flush (writer *w, gboolean finish, GError **error)
{
  if (!w->gz)
    {
      gboolean ok = tw_save_write (w->save, w->buf->str, w->buf->len, error);
      g_string_truncate (w->buf, 0);
      return ok;
    }
  w->z.next_in = (Bytef *) w->buf->str;
  w->z.avail_in = (uInt) w->buf->len;
  int rc;
  do
    {
      w->z.next_out = w->zout;
      w->z.avail_out = CHUNK;
      rc = deflate (&w->z, finish ? Z_FINISH : Z_NO_FLUSH);
      if (rc == Z_STREAM_ERROR)
        {
          g_autofree char *display = g_filename_display_name (w->path);
          g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "%s: compression failed", display);
          return FALSE;
        }
      if (!tw_save_write (w->save, w->zout, CHUNK - w->z.avail_out, error))
        return FALSE;
    }
  while (w->z.avail_out == 0 || (finish && rc != Z_STREAM_END));
  g_string_truncate (w->buf, 0);
  return TRUE;
}

static gboolean
writer_maybe_flush (writer *w, GError **error)
{
  return w->buf->len < CHUNK || writer_flush (w, FALSE, error);
}

/* Nanoseconds as microseconds with three decimals, exactly. */
static void
append_us (GString *s, gint64 ns)
{
  if (ns < 0)
    {
      g_string_append_c (s, '-');
      ns = -ns;
    }
  g_string_append_printf (s, "%" G_GINT64_FORMAT ".%03d", ns / 1000, (int) (ns % 1000));
}

static void
append_common (GString *s, gboolean *first, const char *ph, const char *name, const char *cat,
               int pid, gint64 tid)
{
  g_string_append (s, *first ? "{\"ph\":\"" : ",\n{\"ph\":\"");
  *first = FALSE;
  g_string_append (s, ph);
  g_string_append (s, "\",\"name\":");
  tw_json_append_string (s, name);
  if (cat)
    {
      g_string_append (s, ",\"cat\":");
      tw_json_append_string (s, cat);
    }
  g_string_append_printf (s, ",\"pid\":%d,\"tid\":%" G_GINT64_FORMAT, pid, tid);
}

static void
append_name_meta (GString *s, gboolean *first, const char *what, int pid, gint64 tid,
                  const char *name)
{
  append_common (s, first, "M", what, NULL, pid, tid);
  g_string_append (s, ",\"args\":{\"name\":");
  tw_json_append_string (s, name);
  g_string_append (s, "}}");
}

static gboolean
write_events (writer *w, const tw_trace *t, GError **error)
{
  GString *s = w->buf;
  g_string_append (s, "{\"traceEvents\":[\n");
  gboolean first = TRUE;
  for (guint i = 0; i < tw_trace_n_processes (t); i++)
    {
      const tw_process *p = tw_trace_process (t, i);
      append_name_meta (s, &first, "process_name", p->pid, 0, p->name);
    }
  for (guint l = 0; l < tw_trace_n_lanes (t); l++)
    {
      const tw_lane_info *li = tw_trace_lane (t, l);
      append_name_meta (s, &first, "thread_name", li->pid, li->tid, li->name);
      append_common (s, &first, "M", "thread_sort_index", NULL, li->pid, li->tid);
      g_string_append_printf (s, ",\"args\":{\"sort_index\":%u}}", l);
      for (guint k = 0; k < tw_trace_lane_n_slices (t, l); k++)
        {
          const tw_slice *sl = tw_trace_lane_slice (t, l, k);
          append_common (s, &first, "X", sl->name, sl->category, li->pid, li->tid);
          g_string_append (s, ",\"ts\":");
          append_us (s, sl->start_ns);
          g_string_append (s, ",\"dur\":");
          append_us (s, sl->dur_ns);
          if (sl->n_args)
            {
              g_string_append (s, ",\"args\":{");
              for (guint a = 0; a < sl->n_args; a++)
                {
                  if (a)
                    g_string_append_c (s, ',');
                  tw_json_append_string (s, sl->args[a].key);
                  g_string_append_c (s, ':');
                  tw_json_append_string (s, sl->args[a].value);
                }
              g_string_append_c (s, '}');
            }
          g_string_append_c (s, '}');
          if (!writer_maybe_flush (w, error))
            return FALSE;
        }
      for (guint k = 0; k < tw_trace_lane_n_instants (t, l); k++)
        {
          const tw_instant *in = tw_trace_lane_instant (t, l, k);
          append_common (s, &first, "i", in->name, in->category, li->pid, li->tid);
          g_string_append (s, ",\"s\":\"t\",\"ts\":");
          append_us (s, in->t_ns);
          g_string_append_c (s, '}');
          if (!writer_maybe_flush (w, error))
            return FALSE;
        }
    }
  for (guint k = 0; k < tw_trace_n_counters (t); k++)
    {
      const tw_counter_sample *c = tw_trace_counter (t, k);
      if (!isfinite (c->value))
        continue;               /* JSON has no NaN; the counter's gap shows it */
      char num[G_ASCII_DTOSTR_BUF_SIZE];
      append_common (s, &first, "C", c->name, NULL, c->pid, 0);
      g_string_append (s, ",\"ts\":");
      append_us (s, c->t_ns);
      g_string_append (s, ",\"args\":{");
      tw_json_append_string (s, c->name);
      g_string_append_printf (s, ":%s}}", g_ascii_formatd (num, sizeof num, "%.17g", c->value));
      if (!writer_maybe_flush (w, error))
        return FALSE;
    }
  for (guint k = 0; k < tw_trace_n_flows (t); k++)
    {
      const tw_flow *f = tw_trace_flow (t, k);
      const tw_lane_info *from = tw_trace_lane (t, f->from_lane), *to = tw_trace_lane (t, f->to_lane);
      append_common (s, &first, "s", f->name, "flow", from->pid, from->tid);
      g_string_append_printf (s, ",\"id\":%" G_GUINT64_FORMAT ",\"ts\":", f->id);
      append_us (s, f->from_ns);
      g_string_append_c (s, '}');
      append_common (s, &first, "f", f->name, "flow", to->pid, to->tid);
      g_string_append_printf (s, ",\"id\":%" G_GUINT64_FORMAT ",\"bp\":\"e\",\"ts\":", f->id);
      append_us (s, f->to_ns);
      g_string_append_c (s, '}');
      if (!writer_maybe_flush (w, error))
        return FALSE;
    }
  g_string_append (s, "\n],\n\"displayTimeUnit\":\"ns\",\n\"metadata\":{");
  const char *const *keys = tw_trace_meta_keys (t);
  for (int i = 0; keys[i]; i++)
    {
      if (i)
        g_string_append_c (s, ',');
      tw_json_append_string (s, keys[i]);
      g_string_append_c (s, ':');
      tw_json_append_string (s, tw_trace_get_meta (t, keys[i]));
    }
  g_string_append (s, "}}\n");
  return TRUE;
}

gboolean
tw_chrome_trace_save (const tw_trace *t, const char *path, GError **error)
{
  writer w = { 0 };
  w.path = path;
  w.gz = g_str_has_suffix (path, ".gz");
  w.save = tw_save_begin (path, error);
  if (w.save == NULL)
    return FALSE;
  w.buf = g_string_sized_new (CHUNK + 4096);
  if (w.gz)
    {
      w.zout = g_malloc (CHUNK);
      /* 15 + 16: a gzip header and trailer around the deflate stream. */
      if (deflateInit2 (&w.z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        {
          g_autofree char *display = g_filename_display_name (path);
          g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOMEM, "%s: cannot start compression", display);
          g_free (w.zout);
          g_string_free (w.buf, TRUE);
          tw_save_abort (w.save);
          return FALSE;
        }
    }
  gboolean ok = write_events (&w, t, error) && writer_flush (&w, TRUE, error);
  if (w.gz)
    {
      deflateEnd (&w.z);
      g_free (w.zout);
    }
  g_string_free (w.buf, TRUE);
  if (!ok)
    {
      tw_save_abort (w.save);
      return FALSE;
    }
  return tw_save_commit (w.save, error);
}
