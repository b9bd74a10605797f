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

struct tw_chrome_writer
{
  tw_save *save;                /* the file, or NULL when writing to mem */
  GByteArray *mem;              /* tw_chrome_trace_to_bytes's */
  char *display;                /* the path, for messages */
  gboolean gz;
  z_stream z;
  GString *buf;
  unsigned char *zout;
  gboolean first;               /* no event written yet */
  GError *error;                /* the first failure; later calls do nothing */
  GHashTable *named;            /* "p PID" / "t PID TID" → the name written for it */
};

/* The writer's output: the file's temporary or memory. */
static gboolean
sink_write (tw_chrome_writer *w, const void *data, gsize len)
{
  if (w->mem)
    {
      g_byte_array_append (w->mem, data, (guint) len);
      return TRUE;
    }
  return tw_save_write (w->save, data, len, &w->error);
}

static gboolean
deflate_out (tw_chrome_writer *w, int flush)
{
  w->z.next_in = (Bytef *) w->buf->str;
  w->z.avail_in = (uInt) w->buf->len;
  int rc;
  do
    {
      w->z.next_out = w->zout;
      w->z.avail_out = CHUNK;
      rc = deflate (&w->z, flush);
      if (rc == Z_STREAM_ERROR)
        {
          g_set_error (&w->error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "%s: compression failed",
                       w->display);
          return FALSE;
        }
      if (!sink_write (w, w->zout, CHUNK - w->z.avail_out))
        return FALSE;
    }
  while (w->z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
  return TRUE;
}

/* Hands the text so far to the file.  flush: Z_NO_FLUSH (compression may
 * hold some back), Z_SYNC_FLUSH (all of it decodable from the file) or
 * Z_FINISH. */
static gboolean
writer_flush (tw_chrome_writer *w, int flush)
{
  if (w->error)
    return FALSE;
  gboolean ok = w->gz ? deflate_out (w, flush) : sink_write (w, w->buf->str, w->buf->len);
  g_string_truncate (w->buf, 0);
  return ok;
}

static void
writer_maybe_flush (tw_chrome_writer *w)
{
  if (w->buf->len >= CHUNK)
    writer_flush (w, Z_NO_FLUSH);
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

gboolean
tw_json_is_number (const char *s)
{
  const char *p = s;
  if (*p == '-')
    p++;
  if (*p == '0')
    p++;
  else if (*p >= '1' && *p <= '9')
    while (g_ascii_isdigit (*p))
      p++;
  else
    return FALSE;
  if (*p == '.')
    {
      if (!g_ascii_isdigit (*++p))
        return FALSE;
      while (g_ascii_isdigit (*p))
        p++;
    }
  if (*p == 'e' || *p == 'E')
    {
      p++;
      if (*p == '+' || *p == '-')
        p++;
      if (!g_ascii_isdigit (*p))
        return FALSE;
      while (g_ascii_isdigit (*p))
        p++;
    }
  return *p == '\0';
}

static void
append_common (tw_chrome_writer *w, const char *ph, const char *name, const char *cat, int pid,
               gint64 tid)
{
  GString *s = w->buf;
  g_string_append (s, w->first ? "{\"ph\":\"" : ",\n{\"ph\":\"");
  w->first = FALSE;
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

/* FALSE when key was named so already. */
static gboolean
rename_needed (tw_chrome_writer *w, char *key, const char *name)
{
  const char *had = g_hash_table_lookup (w->named, key);
  if (had && strcmp (had, name) == 0)
    {
      g_free (key);
      return FALSE;
    }
  g_hash_table_replace (w->named, key, g_strdup (name));
  return TRUE;
}

static void
append_name_meta (tw_chrome_writer *w, const char *what, int pid, gint64 tid, const char *name)
{
  append_common (w, "M", what, NULL, pid, tid);
  g_string_append (w->buf, ",\"args\":{\"name\":");
  tw_json_append_string (w->buf, name);
  g_string_append (w->buf, "}}");
}

/* A writer to save (a file's temporary) or, save NULL, to memory. */
static tw_chrome_writer *
writer_new (tw_save *save, const char *display, gboolean gz, GError **error)
{
  tw_chrome_writer *w = g_new0 (tw_chrome_writer, 1);
  w->save = save;
  w->mem = save ? NULL : g_byte_array_new ();
  w->display = g_strdup (display);
  w->gz = gz;
  w->buf = g_string_sized_new (CHUNK + 4096);
  w->first = TRUE;
  w->named = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  if (w->gz)
    {
      w->zout = g_malloc (CHUNK);
      /* 15 + 16: a gzip header and trailer around the deflate stream. */
      if (deflateInit2 (&w->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY)
          != Z_OK)
        {
          g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOMEM, "%s: cannot start compression",
                       w->display);
          w->gz = FALSE;        /* nothing to end */
          tw_chrome_writer_abort (w);
          return NULL;
        }
    }
  g_string_append (w->buf, "{\"traceEvents\":[\n");
  return w;
}

tw_chrome_writer *
tw_chrome_writer_begin (const char *path, GError **error)
{
  tw_save *save = tw_save_begin (path, error);
  if (save == NULL)
    return NULL;
  g_autofree char *display = g_filename_display_name (path);
  return writer_new (save, display, g_str_has_suffix (path, ".gz"), error);
}

const char *
tw_chrome_writer_temp_path (const tw_chrome_writer *w)
{
  return w->save ? tw_save_temp_path (w->save) : NULL;
}

void
tw_chrome_writer_process (tw_chrome_writer *w, int pid, const char *name)
{
  if (!rename_needed (w, g_strdup_printf ("p %d", pid), name))
    return;
  append_name_meta (w, "process_name", pid, 0, name);
}

void
tw_chrome_writer_lane (tw_chrome_writer *w, int pid, gint64 tid, const char *name, guint sort_index)
{
  if (!rename_needed (w, g_strdup_printf ("t %d %" G_GINT64_FORMAT, pid, tid), name))
    return;
  append_name_meta (w, "thread_name", pid, tid, name);
  append_common (w, "M", "thread_sort_index", NULL, pid, tid);
  g_string_append_printf (w->buf, ",\"args\":{\"sort_index\":%u}}", sort_index);
}

void
tw_chrome_writer_slice (tw_chrome_writer *w, int pid, gint64 tid, gint64 start_ns, gint64 dur_ns,
                        const char *name, const char *category, const tw_trace_arg *args,
                        guint n_args)
{
  GString *s = w->buf;
  append_common (w, "X", name, category, pid, tid);
  g_string_append (s, ",\"ts\":");
  append_us (s, start_ns);
  g_string_append (s, ",\"dur\":");
  append_us (s, dur_ns);
  if (n_args)
    {
      g_string_append (s, ",\"args\":{");
      for (guint a = 0; a < n_args; a++)
        {
          if (a)
            g_string_append_c (s, ',');
          tw_json_append_string (s, args[a].key);
          g_string_append_c (s, ':');
          /* A plain number stays one: Perfetto shows (and sorts) it as such. */
          if (args[a].value && tw_json_is_number (args[a].value))
            g_string_append (s, args[a].value);
          else
            tw_json_append_string (s, args[a].value);
        }
      g_string_append_c (s, '}');
    }
  g_string_append_c (s, '}');
  writer_maybe_flush (w);
}

void
tw_chrome_writer_instant (tw_chrome_writer *w, int pid, gint64 tid, gint64 t_ns, const char *name,
                          const char *category)
{
  append_common (w, "i", name, category, pid, tid);
  g_string_append (w->buf, ",\"s\":\"t\",\"ts\":");
  append_us (w->buf, t_ns);
  g_string_append_c (w->buf, '}');
  writer_maybe_flush (w);
}

void
tw_chrome_writer_counter (tw_chrome_writer *w, int pid, const char *name, gint64 t_ns, double value)
{
  if (!isfinite (value))
    return;                     /* JSON has no NaN; the counter's gap shows it */
  char num[G_ASCII_DTOSTR_BUF_SIZE];
  append_common (w, "C", name, NULL, pid, 0);
  g_string_append (w->buf, ",\"ts\":");
  append_us (w->buf, t_ns);
  g_string_append (w->buf, ",\"args\":{");
  tw_json_append_string (w->buf, name);
  g_string_append_printf (w->buf, ":%s}}", g_ascii_formatd (num, sizeof num, "%.17g", value));
  writer_maybe_flush (w);
}

void
tw_chrome_writer_flow (tw_chrome_writer *w, guint64 id, const char *name, int from_pid,
                       gint64 from_tid, gint64 from_ns, int to_pid, gint64 to_tid, gint64 to_ns)
{
  append_common (w, "s", name, "flow", from_pid, from_tid);
  g_string_append_printf (w->buf, ",\"id\":%" G_GUINT64_FORMAT ",\"ts\":", id);
  append_us (w->buf, from_ns);
  g_string_append_c (w->buf, '}');
  append_common (w, "f", name, "flow", to_pid, to_tid);
  g_string_append_printf (w->buf, ",\"id\":%" G_GUINT64_FORMAT ",\"bp\":\"e\",\"ts\":", id);
  append_us (w->buf, to_ns);
  g_string_append_c (w->buf, '}');
  writer_maybe_flush (w);
}

void
tw_chrome_writer_add_trace (tw_chrome_writer *w, const tw_trace *t)
{
  for (guint i = 0; i < tw_trace_n_processes (t); i++)
    {
      const tw_process *p = tw_trace_process (t, i);
      tw_chrome_writer_process (w, p->pid, p->name);
    }
  for (guint l = 0; l < tw_trace_n_lanes (t); l++)
    {
      const tw_lane_info *li = tw_trace_lane (t, l);
      tw_chrome_writer_lane (w, li->pid, li->tid, li->name, l);
      for (guint k = 0; k < tw_trace_lane_n_slices (t, l); k++)
        {
          const tw_slice *sl = tw_trace_lane_slice (t, l, k);
          tw_chrome_writer_slice (w, li->pid, li->tid, sl->start_ns, sl->dur_ns, sl->name,
                                  sl->category, sl->args, sl->n_args);
        }
      for (guint k = 0; k < tw_trace_lane_n_instants (t, l); k++)
        {
          const tw_instant *in = tw_trace_lane_instant (t, l, k);
          tw_chrome_writer_instant (w, li->pid, li->tid, in->t_ns, in->name, in->category);
        }
    }
  for (guint k = 0; k < tw_trace_n_counters (t); k++)
    {
      const tw_counter_sample *c = tw_trace_counter (t, k);
      tw_chrome_writer_counter (w, c->pid, c->name, c->t_ns, c->value);
    }
  for (guint k = 0; k < tw_trace_n_flows (t); k++)
    {
      const tw_flow *f = tw_trace_flow (t, k);
      const tw_lane_info *from = tw_trace_lane (t, f->from_lane), *to = tw_trace_lane (t, f->to_lane);
      tw_chrome_writer_flow (w, f->id, f->name, from->pid, from->tid, f->from_ns, to->pid, to->tid,
                             f->to_ns);
    }
}

gboolean
tw_chrome_writer_sync (tw_chrome_writer *w, GError **error)
{
  if (!writer_flush (w, Z_SYNC_FLUSH))
    {
      if (error)
        *error = g_error_copy (w->error);
      return FALSE;
    }
  return TRUE;
}

/* Writes meta's metadata, closes the array and hands everything to the
 * sink.  FALSE with the writer's error on failure (w is not freed). */
static gboolean
writer_close (tw_chrome_writer *w, const tw_trace *meta, GError **error)
{
  GString *s = w->buf;
  g_string_append (s, "\n],\n\"displayTimeUnit\":\"ns\",\n\"metadata\":{");
  const char *const *keys = meta ? tw_trace_meta_keys (meta) : NULL;
  for (int i = 0; keys && keys[i]; i++)
    {
      if (i)
        g_string_append_c (s, ',');
      tw_json_append_string (s, keys[i]);
      g_string_append_c (s, ':');
      tw_json_append_string (s, tw_trace_get_meta (meta, keys[i]));
    }
  g_string_append (s, "}}\n");
  if (!writer_flush (w, Z_FINISH))
    {
      g_propagate_error (error, g_steal_pointer (&w->error));
      return FALSE;
    }
  return TRUE;
}

gboolean
tw_chrome_writer_end (tw_chrome_writer *w, const tw_trace *meta, GError **error)
{
  if (!writer_close (w, meta, error))
    {
      tw_chrome_writer_abort (w);
      return FALSE;
    }
  gboolean ok = tw_save_commit (g_steal_pointer (&w->save), error);
  tw_chrome_writer_abort (w);
  return ok;
}

void
tw_chrome_writer_abort (tw_chrome_writer *w)
{
  if (w == NULL)
    return;
  if (w->gz)
    deflateEnd (&w->z);
  g_free (w->zout);
  g_string_free (w->buf, TRUE);
  g_hash_table_unref (w->named);
  tw_save_abort (w->save);
  if (w->mem)
    g_byte_array_unref (w->mem);
  g_clear_error (&w->error);
  g_free (w->display);
  g_free (w);
}

gboolean
tw_chrome_trace_save (const tw_trace *t, const char *path, GError **error)
{
  tw_chrome_writer *w = tw_chrome_writer_begin (path, error);
  if (w == NULL)
    return FALSE;
  tw_chrome_writer_add_trace (w, t);
  return tw_chrome_writer_end (w, t, error);
}

GBytes *
tw_chrome_trace_to_bytes (const tw_trace *t, GError **error)
{
  tw_chrome_writer *w = writer_new (NULL, "trace in memory", TRUE, error);
  if (w == NULL)
    return NULL;
  tw_chrome_writer_add_trace (w, t);
  if (!writer_close (w, t, error))
    {
      tw_chrome_writer_abort (w);
      return NULL;
    }
  GBytes *b = g_byte_array_free_to_bytes (g_steal_pointer (&w->mem));
  tw_chrome_writer_abort (w);
  return b;
}
