/* chrome-read.c — streaming Chrome Trace Event JSON import (chrome-read.h). */
#define G_LOG_DOMAIN "tw-profiler"

#include "profiler/chrome-read.h"
#include "engine/json-text.h"
#include "engine/memory.h"

#include <errno.h>
#include <math.h>
#include <glib/gstdio.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_parse.h>
#include <zlib.h>

#define READ_CHUNK ((gsize) 64 << 10)
/* Copies a long string makes on its way into the trace: the read buffer,
 * yajl's decoded copy (when it holds escapes), the event's field and the
 * copy interned in the trace. */
#define TOKEN_COPIES 4

/* What each open container is to the importer. */
typedef enum
{
  R_ROOT,       /* the top-level object */
  R_EVENTS,     /* the event array */
  R_EVENT,      /* one event */
  R_ARGS,       /* an event's args */
  R_META,       /* the top-level "metadata" object */
  R_CAPTURE,    /* a nested value kept as JSON text */
  R_SKIP,       /* a nested value ignored */
} role;

typedef struct
{
  gint64 ts;
  const char *name, *category;
  const tw_trace_arg *args;
  guint n_args;
} open_b;

typedef struct
{
  guint lane;
  gint64 ts;
} flow_start;

typedef struct
{
  tw_trace *t;
  GArray *roles;
  char *root_key, *ev_key, *arg_key, *meta_key;
  gboolean saw_events;
  char *reason;                 /* a callback's reason to stop */
  yajl_gen gen;                 /* the capture in progress */

  /* The event being read. */
  GString *ph, *name, *cat, *pid, *tid, *ts, *dur, *id;
  gboolean has_ph, has_name, has_cat, has_pid, has_tid, has_ts, has_dur, has_id;
  gboolean pid_str, tid_str;
  GPtrArray *arg_keys, *arg_values;

  GHashTable *str_pids;         /* string pid → int */
  GHashTable *str_tids;         /* "pid\x1ftid" → gint64 */
  GHashTable *str_ids;          /* string flow id → guint64 */
  GHashTable *b_stacks;         /* lane → GArray of open_b */
  GHashTable *flow_starts;      /* id → flow_start */
  GHashTable *skipped;          /* phase → count */
  guint64 n_events, n_malformed, n_unmatched_e;
  guint64 n_invalid_utf8;       /* strings whose invalid UTF-8 was replaced */
} importer;

static role
top_role (importer *p)
{
  return p->roles->len ? g_array_index (p->roles, role, p->roles->len - 1) : (role) -1;
}

static void
push_role (importer *p, role r)
{
  g_array_append_val (p->roles, r);
}

static void
set_key (char **slot, const unsigned char *s, size_t len)
{
  g_free (*slot);
  *slot = g_strndup ((const char *) s, len);
}

static void
field_set (GString *g, gboolean *has, const unsigned char *s, size_t len)
{
  g_string_truncate (g, 0);
  g_string_append_len (g, (const char *) s, (gssize) len);
  *has = TRUE;
}

/* Microseconds as JSON number text to nanoseconds: exact for plain
 * decimals, through a double otherwise. */
static gboolean
us_to_ns (const char *s, gint64 *out)
{
  const char *p = s;
  gboolean neg = *p == '-';
  if (neg)
    p++;
  gint64 whole = 0;
  int digits = 0;
  while (g_ascii_isdigit (*p) && digits < 15)
    whole = whole * 10 + (*p++ - '0'), digits++;
  if (digits > 0 && !g_ascii_isdigit (*p) && *p != 'e' && *p != 'E')
    {
      gint64 frac = 0;
      int n = 0;
      if (*p == '.')
        {
          p++;
          for (; g_ascii_isdigit (*p); p++, n++)
            if (n < 3)
              frac = frac * 10 + (*p - '0');
            else if (n == 3 && *p >= '5')
              frac++;
          while (n < 3 && n >= 0)
            frac *= 10, n++;
        }
      if (*p == '\0')
        {
          gint64 ns = whole * 1000 + frac;
          *out = neg ? -ns : ns;
          return TRUE;
        }
    }
  char *end;
  double v = g_ascii_strtod (s, &end);
  /* Within the trace's range of times (trace.h), in µs. */
  if (end == s || *end || !(fabs (v) <= (double) (TW_TRACE_MAX_NS / 1000)))
    return FALSE;
  *out = (gint64) (v * 1000.0 + (v < 0 ? -0.5 : 0.5));
  return TRUE;
}

static void
add_arg (importer *p, const char *key, const char *value, gsize len)
{
  g_ptr_array_add (p->arg_keys, g_strdup (key ? key : ""));
  g_ptr_array_add (p->arg_values, g_strndup (value, len));
}

/* A finished scalar or captured value in a map the importer reads. */
static void
deliver (importer *p, role where, const char *text, gsize len)
{
  g_autofree char *value = g_strndup (text, len);
  switch (where)
    {
    case R_ROOT:
      if (p->root_key && strcmp (p->root_key, "traceEvents") != 0)
        tw_trace_set_meta (p->t, p->root_key, value);
      break;
    case R_ARGS:
      add_arg (p, p->arg_key, text, len);
      break;
    case R_META:
      if (p->meta_key)
        tw_trace_set_meta (p->t, p->meta_key, value);
      break;
    default:
      break;
    }
}

static int
on_scalar (importer *p, const char *text, gsize len, gboolean is_string, yajl_gen_status gs)
{
  (void) gs;
  role r = top_role (p);
  switch ((int) r)
    {
    case R_CAPTURE:
    case R_SKIP:
      return 1;
    case -1:
      p->reason = g_strdup ("not a Chrome trace (expected an object or an array)");
      return 0;
    case R_EVENTS:
      p->n_malformed++;
      return 1;
    case R_ROOT:
      if (p->root_key && !strcmp (p->root_key, "traceEvents"))
        {
          p->reason = g_strdup ("\"traceEvents\" is not an array");
          return 0;
        }
      deliver (p, r, text, len);
      return 1;
    case R_EVENT:
      {
        const char *k = p->ev_key ? p->ev_key : "";
        const unsigned char *u = (const unsigned char *) text;
        if (!strcmp (k, "ph") && is_string)
          field_set (p->ph, &p->has_ph, u, len);
        else if (!strcmp (k, "name"))
          field_set (p->name, &p->has_name, u, len);
        else if (!strcmp (k, "cat"))
          field_set (p->cat, &p->has_cat, u, len);
        else if (!strcmp (k, "pid"))
          field_set (p->pid, &p->has_pid, u, len), p->pid_str = is_string;
        else if (!strcmp (k, "tid"))
          field_set (p->tid, &p->has_tid, u, len), p->tid_str = is_string;
        else if (!strcmp (k, "ts") && !is_string)
          field_set (p->ts, &p->has_ts, u, len);
        else if (!strcmp (k, "dur") && !is_string)
          field_set (p->dur, &p->has_dur, u, len);
        else if (!strcmp (k, "id"))
          field_set (p->id, &p->has_id, u, len);
        return 1;
      }
    default:
      deliver (p, r, text, len);
      return 1;
    }
}

#define P ((importer *) ctx)

static int
cb_null (void *ctx)
{
  if (top_role (P) == R_CAPTURE)
    return yajl_gen_null (P->gen) == yajl_gen_status_ok;
  return on_scalar (P, "null", 4, FALSE, 0);
}

static int
cb_boolean (void *ctx, int b)
{
  if (top_role (P) == R_CAPTURE)
    return yajl_gen_bool (P->gen, b) == yajl_gen_status_ok;
  return on_scalar (P, b ? "true" : "false", b ? 4 : 5, FALSE, 0);
}

static int
cb_number (void *ctx, const char *s, size_t len)
{
  if (top_role (P) == R_CAPTURE)
    return yajl_gen_number (P->gen, s, len) == yajl_gen_status_ok;
  return on_scalar (P, s, len, FALSE, 0);
}

/* Strings as yajl decodes them may be invalid UTF-8: yajl's check lets
 * overlong forms (C0 80) and encoded surrogates through, and "\udc00"
 * decodes to one.  The rule for traces: each invalid sequence becomes
 * U+FFFD (the trace still opens; the count goes into the import note), so
 * every string the trace holds, and prints as JSON, is valid UTF-8.  NUL
 * bytes stop the import.  s is replaced by *fixed when that is set. */
static gboolean
check_text (importer *p, const unsigned char **s, size_t *len, char **fixed)
{
  *fixed = NULL;
  if (memchr (*s, 0, *len))
    {
      p->reason = g_strdup ("a string holds a NUL character");
      return FALSE;
    }
  if (g_utf8_validate_len ((const char *) *s, *len, NULL))
    return TRUE;
  *fixed = g_utf8_make_valid ((const char *) *s, (gssize) *len);
  *s = (const unsigned char *) *fixed;
  *len = strlen (*fixed);
  p->n_invalid_utf8++;
  return TRUE;
}

static int
cb_string (void *ctx, const unsigned char *s, size_t len)
{
  g_autofree char *fixed = NULL;
  if (!check_text (P, &s, &len, &fixed))
    return 0;
  if (top_role (P) == R_CAPTURE)
    return yajl_gen_string (P->gen, s, len) == yajl_gen_status_ok;
  return on_scalar (P, (const char *) s, len, TRUE, 0);
}

static int
cb_map_key (void *ctx, const unsigned char *s, size_t len)
{
  g_autofree char *fixed = NULL;
  if (!check_text (P, &s, &len, &fixed))
    return 0;
  switch ((int) top_role (P))
    {
    case R_CAPTURE:
      return yajl_gen_string (P->gen, s, len) == yajl_gen_status_ok;
    case R_ROOT: set_key (&P->root_key, s, len); break;
    case R_EVENT: set_key (&P->ev_key, s, len); break;
    case R_ARGS: set_key (&P->arg_key, s, len); break;
    case R_META: set_key (&P->meta_key, s, len); break;
    default: break;
    }
  return 1;
}

static void
reset_event (importer *p)
{
  p->has_ph = p->has_name = p->has_cat = p->has_pid = p->has_tid = FALSE;
  p->has_ts = p->has_dur = p->has_id = FALSE;
  p->pid_str = p->tid_str = FALSE;
  g_clear_pointer (&p->ev_key, g_free);
  g_ptr_array_set_size (p->arg_keys, 0);
  g_ptr_array_set_size (p->arg_values, 0);
}

static void
begin_capture (importer *p)
{
  p->gen = yajl_gen_alloc (NULL);
  push_role (p, R_CAPTURE);
}

static int
start_container (importer *p, gboolean is_map)
{
  /* The rule of every JSON text read (engine/json-text.h). */
  if (p->roles->len >= TW_JSON_MAX_DEPTH)
    {
      p->reason = g_strdup_printf ("nested more than %d levels deep", TW_JSON_MAX_DEPTH);
      return 0;
    }
  role r = top_role (p);
  switch ((int) r)
    {
    case R_CAPTURE:
      push_role (p, R_CAPTURE);
      return (is_map ? yajl_gen_map_open (p->gen) : yajl_gen_array_open (p->gen)) == yajl_gen_status_ok;
    case R_SKIP:
      push_role (p, R_SKIP);
      return 1;
    case -1:
      if (!is_map)
        p->saw_events = TRUE;
      push_role (p, is_map ? R_ROOT : R_EVENTS);
      return 1;
    case R_ROOT:
      if (p->root_key && !strcmp (p->root_key, "traceEvents") && !is_map && !p->saw_events)
        {
          p->saw_events = TRUE;
          push_role (p, R_EVENTS);
        }
      else if (p->root_key && !strcmp (p->root_key, "metadata") && is_map)
        push_role (p, R_META);
      else if (p->root_key && !strcmp (p->root_key, "traceEvents"))
        {
          p->reason = g_strdup ("\"traceEvents\" is not an array (or appears twice)");
          return 0;
        }
      else
        begin_capture (p);
      break;
    case R_EVENTS:
      if (is_map)
        {
          reset_event (p);
          push_role (p, R_EVENT);
        }
      else
        {
          p->n_malformed++;
          push_role (p, R_SKIP);
        }
      break;
    case R_EVENT:
      push_role (p, is_map && p->ev_key && !strcmp (p->ev_key, "args") ? R_ARGS : R_SKIP);
      if (top_role (p) == R_ARGS)
        g_clear_pointer (&p->arg_key, g_free);
      break;
    default:    /* R_ARGS, R_META */
      begin_capture (p);
      break;
    }
  if (top_role (p) == R_CAPTURE)
    return (is_map ? yajl_gen_map_open (p->gen) : yajl_gen_array_open (p->gen)) == yajl_gen_status_ok;
  return 1;
}

static int cb_start_map (void *ctx) { return start_container (P, TRUE); }
static int cb_start_array (void *ctx) { return start_container (P, FALSE); }

static void finish_event (importer *p);

static int
end_container (importer *p, gboolean is_map)
{
  role r = top_role (p);
  g_array_set_size (p->roles, p->roles->len - 1);
  if (r == R_CAPTURE)
    {
      if ((is_map ? yajl_gen_map_close (p->gen) : yajl_gen_array_close (p->gen)) != yajl_gen_status_ok)
        return 0;
      if (top_role (p) != R_CAPTURE)
        {
          const unsigned char *buf;
          size_t len;
          yajl_gen_get_buf (p->gen, &buf, &len);
          deliver (p, top_role (p), (const char *) buf, len);
          g_clear_pointer (&p->gen, yajl_gen_free);
        }
    }
  else if (r == R_EVENT)
    finish_event (p);
  return 1;
}

static int cb_end_map (void *ctx) { return end_container (P, TRUE); }
static int cb_end_array (void *ctx) { return end_container (P, FALSE); }

#undef P

static const yajl_callbacks callbacks = {
  cb_null, cb_boolean, NULL, NULL, cb_number, cb_string,
  cb_start_map, cb_map_key, cb_end_map, cb_start_array, cb_end_array,
};

/* ---- events into the trace ------------------------------------------- */

static gboolean
parse_int (const char *s, gint64 lo, gint64 hi, gint64 *out)
{
  char *end;
  if (!*s)
    return FALSE;
  errno = 0;
  gint64 v = g_ascii_strtoll (s, &end, 10);
  if (errno || *end || v < lo || v > hi)
    return FALSE;
  *out = v;
  return TRUE;
}

static int
event_pid (importer *p)
{
  if (!p->has_pid)
    return 0;
  gint64 v;
  if (!p->pid_str && parse_int (p->pid->str, G_MININT, G_MAXINT, &v))
    return (int) v;
  gpointer found;
  if (g_hash_table_lookup_extended (p->str_pids, p->pid->str, NULL, &found))
    return GPOINTER_TO_INT (found);
  int pid = 0x40000000 + (int) g_hash_table_size (p->str_pids);
  g_hash_table_insert (p->str_pids, g_strdup (p->pid->str), GINT_TO_POINTER (pid));
  tw_trace_add_process (p->t, pid, p->pid->str);
  return pid;
}

/* The lane of the event's pid/tid, made when new: a stream when the tid or
 * the name given (a thread_name's) says "stream" or is the recorder's
 * "communication" (profiler/recorder.h), or the category is a kernel's, a
 * GPU copy's or a collective's. */
static guint
event_lane (importer *p, int pid, const char *lane_name)
{
  gint64 tid = 0;
  const char *name = NULL;
  if (p->has_tid && (p->tid_str || !parse_int (p->tid->str, G_MININT64, G_MAXINT64, &tid)))
    {
      g_autofree char *key = g_strdup_printf ("%d\x1f%s", pid, p->tid->str);
      gint64 *found = g_hash_table_lookup (p->str_tids, key);
      if (found)
        tid = *found;
      else
        {
          gint64 *v = g_new (gint64, 1);
          *v = ((gint64) 1 << 40) + g_hash_table_size (p->str_tids);
          tid = *v;
          g_hash_table_insert (p->str_tids, g_steal_pointer (&key), v);
          name = p->tid->str;
        }
    }
  int found = tw_trace_find_lane (p->t, pid, tid);
  if (found >= 0)
    return (guint) found;
  tw_lane_kind kind = TW_LANE_THREAD;
  if ((name && g_str_has_prefix (name, "stream")) || (lane_name && g_str_has_prefix (lane_name, "stream"))
      || (lane_name && !strcmp (lane_name, "communication"))
      || (p->has_cat && (!strcmp (p->cat->str, "kernel") || !strcmp (p->cat->str, "collective")
                         || g_str_has_prefix (p->cat->str, "gpu_"))))
    kind = TW_LANE_STREAM;
  return tw_trace_add_lane (p->t, pid, tid, name, kind);
}

static guint64
event_id (importer *p)
{
  gint64 v;
  if (parse_int (p->id->str, 0, G_MAXINT64, &v))
    return (guint64) v;
  gpointer found;
  if (g_hash_table_lookup_extended (p->str_ids, p->id->str, NULL, &found))
    return GPOINTER_TO_SIZE (found);
  guint64 id = ((guint64) 1 << 62) + g_hash_table_size (p->str_ids);
  g_hash_table_insert (p->str_ids, g_strdup (p->id->str), GSIZE_TO_POINTER ((gsize) id));
  return id;
}

static const char *
event_arg (importer *p, const char *key)
{
  for (guint i = 0; i < p->arg_keys->len; i++)
    if (!strcmp (g_ptr_array_index (p->arg_keys, i), key))
      return g_ptr_array_index (p->arg_values, i);
  return NULL;
}

static tw_trace_arg *
event_args (importer *p)
{
  tw_trace_arg *a = g_new (tw_trace_arg, p->arg_keys->len + 1);
  for (guint i = 0; i < p->arg_keys->len; i++)
    {
      a[i].key = g_ptr_array_index (p->arg_keys, i);
      a[i].value = g_ptr_array_index (p->arg_values, i);
    }
  return a;
}

static void
count_skipped (importer *p, const char *ph)
{
  gpointer n = g_hash_table_lookup (p->skipped, ph);
  g_hash_table_insert (p->skipped, g_strdup (ph), GSIZE_TO_POINTER (GPOINTER_TO_SIZE (n) + 1));
}

static void
finish_event (importer *p)
{
  p->n_events++;
  if (!p->has_ph)
    {
      p->n_malformed++;
      return;
    }
  const char *ph = p->ph->str;
  const char *name = p->has_name ? p->name->str : "";
  const char *cat = p->has_cat ? p->cat->str : NULL;
  gint64 ts = 0, dur = 0;
  gboolean need_ts = strcmp (ph, "M") != 0;
  if (need_ts && (!p->has_ts || !us_to_ns (p->ts->str, &ts)))
    {
      p->n_malformed++;
      return;
    }
  if (p->has_dur && (!us_to_ns (p->dur->str, &dur) || dur < 0))
    {
      p->n_malformed++;
      return;
    }
  /* A slice ends by TW_TRACE_MAX_NS (trace.h): ts + dur fits in gint64. */
  if (dur > TW_TRACE_MAX_NS - ts)
    {
      p->n_malformed++;
      return;
    }
  int pid = event_pid (p);

  if (!strcmp (ph, "M"))
    {
      const char *n = event_arg (p, "name");
      if (!strcmp (name, "process_name") && n)
        tw_trace_add_process (p->t, pid, n);
      else if (!strcmp (name, "thread_name") && n)
        tw_trace_add_lane (p->t, pid, tw_trace_lane (p->t, event_lane (p, pid, n))->tid, n,
                           TW_LANE_THREAD);
      return;
    }
  if (!strcmp (ph, "C"))
    {
      for (guint i = 0; i < p->arg_keys->len; i++)
        {
          const char *k = g_ptr_array_index (p->arg_keys, i), *v = g_ptr_array_index (p->arg_values, i);
          char *end;
          double x = g_ascii_strtod (v, &end);
          /* JSON has no inf or nan: 1e999 is refused as a value too. */
          if (end == v || *end || !isfinite (x))
            continue;
          g_autofree char *cname = !strcmp (k, name) || !*name ? g_strdup (k) : g_strdup_printf ("%s %s", name, k);
          tw_trace_add_counter (p->t, pid, cname, ts, x);
        }
      return;
    }

  guint lane = event_lane (p, pid, NULL);
  if (!strcmp (ph, "X"))
    {
      g_autofree tw_trace_arg *args = event_args (p);
      tw_trace_add_slice (p->t, lane, ts, dur, name, cat, args, p->arg_keys->len);
    }
  else if (!strcmp (ph, "B"))
    {
      GArray *stack = g_hash_table_lookup (p->b_stacks, GUINT_TO_POINTER (lane));
      if (!stack)
        {
          stack = g_array_new (FALSE, FALSE, sizeof (open_b));
          g_hash_table_insert (p->b_stacks, GUINT_TO_POINTER (lane), stack);
        }
      g_autofree tw_trace_arg *args = event_args (p);
      open_b b = { ts, tw_trace_intern (p->t, name), tw_trace_intern (p->t, cat),
                   tw_trace_intern_args (p->t, args, p->arg_keys->len), p->arg_keys->len };
      g_array_append_val (stack, b);
    }
  else if (!strcmp (ph, "E"))
    {
      GArray *stack = g_hash_table_lookup (p->b_stacks, GUINT_TO_POINTER (lane));
      if (!stack || stack->len == 0)
        {
          p->n_unmatched_e++;
          return;
        }
      open_b b = g_array_index (stack, open_b, stack->len - 1);
      g_array_set_size (stack, stack->len - 1);
      tw_trace_add_slice_interned (p->t, lane, b.ts, MAX (ts - b.ts, 0), b.name, b.category, b.args,
                                   b.n_args);
    }
  else if (!strcmp (ph, "i") || !strcmp (ph, "I"))
    tw_trace_add_instant (p->t, lane, ts, name, cat);
  else if ((!strcmp (ph, "s") || !strcmp (ph, "f")) && p->has_id)
    {
      guint64 id = event_id (p);
      if (ph[0] == 's')
        {
          flow_start *fs = g_new (flow_start, 1);
          fs->lane = lane;
          fs->ts = ts;
          g_hash_table_insert (p->flow_starts, g_memdup2 (&id, sizeof id), fs);
        }
      else
        {
          flow_start *fs = g_hash_table_lookup (p->flow_starts, &id);
          if (fs)
            {
              tw_trace_add_flow (p->t, id, name, fs->lane, fs->ts, lane, ts);
              g_hash_table_remove (p->flow_starts, &id);
            }
          else
            count_skipped (p, "f without s");
        }
    }
  else
    count_skipped (p, ph);
}

/* ---- the file -------------------------------------------------------- */

static void
importer_clear (importer *p)
{
  g_array_unref (p->roles);
  g_free (p->root_key);
  g_free (p->ev_key);
  g_free (p->arg_key);
  g_free (p->meta_key);
  g_free (p->reason);
  if (p->gen)
    yajl_gen_free (p->gen);
  GString *fields[] = { p->ph, p->name, p->cat, p->pid, p->tid, p->ts, p->dur, p->id };
  for (guint i = 0; i < G_N_ELEMENTS (fields); i++)
    g_string_free (fields[i], TRUE);
  g_ptr_array_unref (p->arg_keys);
  g_ptr_array_unref (p->arg_values);
  g_hash_table_unref (p->str_pids);
  g_hash_table_unref (p->str_tids);
  g_hash_table_unref (p->str_ids);
  g_hash_table_unref (p->b_stacks);
  g_hash_table_unref (p->flow_starts);
  g_hash_table_unref (p->skipped);
}

static int
cmp_strp (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

static void
note_skipped (importer *p)
{
  g_autoptr (GString) s = g_string_new (NULL);
  guint64 open = 0;
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init (&it, p->b_stacks);
  while (g_hash_table_iter_next (&it, &k, &v))
    open += ((GArray *) v)->len;
  guint n_phases;
  g_autofree gpointer *phases = g_hash_table_get_keys_as_array (p->skipped, &n_phases);
  qsort (phases, n_phases, sizeof *phases, cmp_strp);
  for (guint i = 0; i < n_phases; i++)
    g_string_append_printf (s, "%s%zu of phase \"%s\"", s->len ? ", " : "",
                            GPOINTER_TO_SIZE (g_hash_table_lookup (p->skipped, phases[i])),
                            (char *) phases[i]);
  if (p->n_malformed)
    g_string_append_printf (s, "%s%" G_GUINT64_FORMAT " malformed", s->len ? ", " : "", p->n_malformed);
  if (p->n_unmatched_e)
    g_string_append_printf (s, "%s%" G_GUINT64_FORMAT " E without B", s->len ? ", " : "",
                            p->n_unmatched_e);
  if (open)
    g_string_append_printf (s, "%s%" G_GUINT64_FORMAT " B without E", s->len ? ", " : "", open);
  if (s->len)
    tw_trace_set_meta (p->t, "import.skipped", s->str);
}

/* Adds a sentence to the trace's "import.note" ("; " between them). */
static void
add_note (tw_trace *t, const char *note)
{
  const char *was = tw_trace_get_meta (t, "import.note");
  g_autofree char *now = was ? g_strconcat (was, "; ", note, NULL) : g_strdup (note);
  tw_trace_set_meta (t, "import.note", now);
}

static void
set_parse_error (GError **error, const char *display, guint64 offset, yajl_handle h, importer *p)
{
  if (p->reason)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: byte %" G_GUINT64_FORMAT ": %s",
                   display, offset, p->reason);
      return;
    }
  /* Not verbose: the text is not needed. */
  unsigned char *msg = yajl_get_error (h, 0, NULL, 0);
  g_autofree char *reason = g_strstrip (g_strdup ((const char *) msg));
  yajl_free_error (h, msg);
  g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: byte %" G_GUINT64_FORMAT ": %s", display,
               offset, reason);
}

/* ---- where the text comes from: a file (zlib's gz reader, plain or gzip)
 * or memory (plain, or gzip inflated here) ---- */

typedef struct
{
  gzFile f;                     /* a file, or NULL */
  const char *path;             /* the file's, for zlib's messages */
  const guint8 *data;           /* memory */
  gsize len, pos;
  gboolean gz;                  /* memory holds gzip */
  gboolean z_live;              /* z initialised */
  gboolean z_member_done;       /* the last gzip member ended */
  z_stream z;
} source;

/* Reads up to n bytes of trace text.  Returns the count, 0 at the end
 * (*cut >= 0 when a gzip stream stops early: where), or -1 with an error
 * naming display. */
static int
source_read (source *src, unsigned char *buf, unsigned n, const char *display, guint64 text,
             gint64 *cut, GError **error)
{
  if (src->f)
    {
      int got = gzread (src->f, buf, n);
      if (got < 0)
        {
          int errnum;
          const char *msg = gzerror (src->f, &errnum);
          /* zlib's message starts with the path. */
          if (g_str_has_prefix (msg, src->path) && g_str_has_prefix (msg + strlen (src->path), ": "))
            msg += strlen (src->path) + 2;
          if (errnum == Z_ERRNO)
            g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_IO, "%s: byte %lld: %s", display,
                         (long long) gzoffset (src->f), g_strerror (errno));
          else
            g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                         "%s: corrupt gzip data near byte %lld of the file (after %" G_GUINT64_FORMAT
                         " bytes of trace text): %s", display, (long long) gzoffset (src->f), text, msg);
          return -1;
        }
      if (got == 0)
        {
          int errnum;
          gzerror (src->f, &errnum);
          if (errnum == Z_BUF_ERROR)    /* a gzip stream cut short */
            *cut = (gint64) gzoffset (src->f);
        }
      return got;
    }
  if (!src->gz)
    {
      gsize k = MIN ((gsize) n, src->len - src->pos);
      memcpy (buf, src->data + src->pos, k);
      src->pos += k;
      return (int) k;
    }
  /* gzip in memory: members one after another, as gzread reads them. */
  src->z.next_out = buf;
  src->z.avail_out = n;
  while (src->z.avail_out > 0)
    {
      if (src->z_member_done)
        {
          if (src->z.avail_in == 0)
            break;
          inflateReset (&src->z);
          src->z_member_done = FALSE;
        }
      if (src->z.avail_in == 0)
        {
          *cut = (gint64) src->len;
          break;
        }
      int rc = inflate (&src->z, Z_NO_FLUSH);
      if (rc == Z_STREAM_END)
        src->z_member_done = TRUE;
      else if (rc != Z_OK && !(rc == Z_BUF_ERROR && src->z.avail_in == 0))
        {
          g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                       "%s: corrupt gzip data near byte %" G_GUINT64_FORMAT " (after %" G_GUINT64_FORMAT
                       " bytes of trace text): %s", display, (guint64) (src->len - src->z.avail_in),
                       text, src->z.msg ? src->z.msg : "inflate failed");
          return -1;
        }
    }
  int got = (int) (n - src->z.avail_out);
  if (got > 0)
    *cut = -1;                  /* only the end can be a cut */
  return got;
}

/* What importing len bytes starting with magic and ending with trailer
 * takes (tw_trace_chrome_memory_estimate). */
static guint64
estimate (guint64 size, const unsigned char magic[2], const unsigned char trailer[4])
{
  guint64 text = size;
  /* 18: the smallest gzip file (header and trailer). */
  if (size >= 18 && magic[0] == 0x1f && magic[1] == 0x8b)
    {
      guint64 isize = trailer[0] | trailer[1] << 8 | trailer[2] << 16 | (guint64) trailer[3] << 24;
      text = isize >= size ? isize : size * 10;
    }
  return text / 10 * 8;
}

guint64
tw_trace_chrome_memory_estimate (const char *path)
{
  GStatBuf st;
  if (g_stat (path, &st) != 0 || !S_ISREG (st.st_mode))
    return 0;
  FILE *f = fopen (path, "rb");
  if (!f)
    return 0;
  unsigned char magic[2] = { 0 }, trailer[4] = { 0 };
  guint64 size = (guint64) st.st_size;
  if (size < 18 || fread (magic, 1, 2, f) != 2 || fseeko (f, -4, SEEK_END) != 0
      || fread (trailer, 1, 4, f) != 4)
    magic[0] = 0;               /* not gzip: the size is the text's */
  fclose (f);
  return estimate (size, magic, trailer);
}

gboolean
tw_trace_chrome_fits (const char *path, guint64 available, GError **error)
{
  guint64 need = tw_trace_chrome_memory_estimate (path);
  if (available == 0 || need <= available)
    return TRUE;
  g_autofree char *display = g_filename_display_name (path);
  g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOMEM,
               "%s: too large for memory: opening it needs about %.1f MB, %.1f MB are available", display,
               need / 1e6, available / 1e6);
  return FALSE;
}

/* Parses src into a trace (the importer's work; display names the input
 * in errors). */
static tw_trace *
load (source *src, const char *display, GError **error)
{
  importer p = { 0 };
  p.t = tw_trace_new ();
  p.roles = g_array_new (FALSE, FALSE, sizeof (role));
  GString **fields[] = { &p.ph, &p.name, &p.cat, &p.pid, &p.tid, &p.ts, &p.dur, &p.id };
  for (guint i = 0; i < G_N_ELEMENTS (fields); i++)
    *fields[i] = g_string_new (NULL);
  p.arg_keys = g_ptr_array_new_with_free_func (g_free);
  p.arg_values = g_ptr_array_new_with_free_func (g_free);
  p.str_pids = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  p.str_tids = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  p.str_ids = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  p.b_stacks = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) g_array_unref);
  p.flow_starts = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_free);
  p.skipped = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);

  yajl_handle h = yajl_alloc (&callbacks, NULL, &p);
  /* The memory this process may take (engine/memory.h) bounds, as the
   * text is decompressed and parsed, the text read (0.8× of it becomes
   * the trace, as tw_trace_chrome_memory_estimate says: a gzip trailer
   * tells only its last member's size, and lies in a crafted file) and the
   * longest token held (TOKEN_COPIES copies of it are made on its way into
   * the trace).  0: unknown, no bound. */
  guint64 available = tw_memory_available ();
  /* yajl's lexer buffers a token cut by the end of a chunk and reads that
   * buffer again from its start with every later chunk: a 64 MB string
   * read in 64 KiB chunks was read 1,000 times (17 s).  So each chunk given
   * to yajl ends after a structural character or white space outside
   * strings; the bytes after it wait for the next read, and the buffer
   * doubles for a token longer than a chunk.  Every byte is scanned once
   * here and lexed once by yajl. */
  gsize cap = 2 * READ_CHUNK, have = 0;
  unsigned char *buf = g_malloc (cap);
  gboolean in_string = FALSE, escaped = FALSE;
  guint64 offset = 0, text = 0;
  gint64 gz_cut = -1;           /* where a truncated gzip stream ends */
  gboolean ok = TRUE;
  for (;;)
    {
      if (cap - have < READ_CHUNK)
        {
          if (available && (guint64) cap * 2 * TOKEN_COPIES > available)
            {
              g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOMEM,
                           "%s: byte %" G_GUINT64_FORMAT ": too large for memory: a single value "
                           "of more than %.1f MB, and %.1f MB are available", display, offset,
                           have / 1e6, available / 1e6);
              ok = FALSE;
              break;
            }
          cap *= 2;
          buf = g_realloc (buf, cap);
        }
      int n = source_read (src, buf + have, (unsigned) READ_CHUNK, display, text, &gz_cut, error);
      if (n < 0)
        {
          ok = FALSE;
          break;
        }
      if (n == 0)
        break;
      text += (guint64) n;
      if (available && text / 10 * 8 > available)
        {
          g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOMEM,
                       "%s: too large for memory: after %.1f MB of trace text, opening it needs "
                       "more than the %.1f MB available", display, text / 1e6, available / 1e6);
          ok = FALSE;
          break;
        }
      gsize cut = 0;
      for (gsize i = have; i < have + (gsize) n; i++)
        {
          unsigned char c = buf[i];
          if (in_string)
            {
              if (escaped)
                escaped = FALSE;
              else if (c == '\\')
                escaped = TRUE;
              else if (c == '"')
                in_string = FALSE;
            }
          else if (c == '"')
            in_string = TRUE;
          else if (c == ',' || c == ':' || c == '[' || c == ']' || c == '{' || c == '}' || c == ' '
                   || c == '\n' || c == '\t' || c == '\r')
            cut = i + 1;
        }
      have += (gsize) n;
      if (cut == 0)
        continue;
      if (yajl_parse (h, buf, cut) != yajl_status_ok)
        {
          set_parse_error (error, display, offset + yajl_get_bytes_consumed (h), h, &p);
          ok = FALSE;
          break;
        }
      offset += cut;
      memmove (buf, buf + cut, have - cut);
      have -= cut;
    }
  if (ok && have > 0)
    {
      if (yajl_parse (h, buf, have) != yajl_status_ok)
        {
          set_parse_error (error, display, offset + yajl_get_bytes_consumed (h), h, &p);
          ok = FALSE;
        }
      offset += have;
    }
  gboolean complete = ok && yajl_complete_parse (h) == yajl_status_ok;
  if (complete && gz_cut >= 0 && p.saw_events)
    {
      /* The JSON is whole but the gzip stream is not: cut inside (or
       * before) its CRC and length trailer, so the text is unchecked. */
      g_autofree char *note = g_strdup_printf (
        "the gzip data stops early, at byte %" G_GINT64_FORMAT " of the file, before its CRC "
        "trailer: the %" G_GUINT64_FORMAT " bytes of trace text could not be checked", gz_cut,
        offset);
      add_note (p.t, note);
    }
  if (ok && !complete)
    {
      if (p.saw_events && !p.reason)
        {
          g_autofree char *gz = gz_cut >= 0 ? g_strdup_printf (" (the gzip data stops at byte %" G_GINT64_FORMAT
                                                               " of the file)", gz_cut) : g_strdup ("");
          g_autofree char *note = g_strdup_printf (
              "the trace stops early, at byte %" G_GUINT64_FORMAT "%s after %" G_GUINT64_FORMAT
              " events, as a crashed run leaves it: opened with what is there", offset, gz, p.n_events);
          add_note (p.t, note);
        }
      else if (offset == 0)
        {
          g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: byte 0: the file is empty", display);
          ok = FALSE;
        }
      else if (gz_cut >= 0)
        {
          g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                       "%s: the gzip data stops early, at byte %" G_GINT64_FORMAT " of the file", display,
                       gz_cut);
          ok = FALSE;
        }
      else
        {
          set_parse_error (error, display, offset, h, &p);
          ok = FALSE;
        }
    }
  if (ok && !p.saw_events)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: byte %" G_GUINT64_FORMAT
                   ": no \"traceEvents\" array: not a Chrome trace", display, offset);
      ok = FALSE;
    }
  g_free (buf);
  yajl_free (h);
  tw_trace *t = p.t;
  if (ok)
    note_skipped (&p);
  if (ok && p.n_invalid_utf8)
    {
      g_autofree char *note = g_strdup_printf (
        "%" G_GUINT64_FORMAT " string%s held invalid UTF-8, shown with U+FFFD in place of each "
        "invalid sequence", p.n_invalid_utf8, p.n_invalid_utf8 == 1 ? "" : "s");
      add_note (t, note);
    }
  importer_clear (&p);
  if (!ok)
    {
      tw_trace_free (t);
      return NULL;
    }
  tw_trace_sort (t);
  return t;
}

tw_trace *
tw_trace_load_chrome (const char *path, GError **error)
{
  g_autofree char *display = g_filename_display_name (path);
  if (!tw_trace_chrome_fits (path, tw_memory_available (), error))
    return NULL;
  errno = 0;
  source src = { .path = path };
  src.f = gzopen (path, "rb");
  if (!src.f)
    {
      int e = errno ? errno : ENOMEM;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "%s: %s", display, g_strerror (e));
      return NULL;
    }
  gzbuffer (src.f, 128 << 10);
  tw_trace *t = load (&src, display, error);
  gzclose (src.f);
  return t;
}

tw_trace *
tw_trace_from_chrome_bytes (GBytes *b, const char *name_for_errors, GError **error)
{
  const char *display = name_for_errors ? name_for_errors : "trace in memory";
  gsize len;
  const guint8 *data = g_bytes_get_data (b, &len);
  static const unsigned char none[4];
  guint64 need = estimate (len, len >= 2 ? data : none, len >= 4 ? data + len - 4 : none);
  guint64 available = tw_memory_available ();
  if (available && need > available)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOMEM,
                   "%s: too large for memory: opening it needs about %.1f MB, %.1f MB are available",
                   display, need / 1e6, available / 1e6);
      return NULL;
    }
  source src = { .data = data, .len = len };
  src.gz = len >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  if (src.gz)
    {
      src.z.next_in = (Bytef *) data;
      src.z.avail_in = (uInt) MIN (len, (gsize) G_MAXUINT);
      /* 15 + 16: gzip only (the magic said so). */
      if (inflateInit2 (&src.z, 15 + 16) != Z_OK)
        {
          g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOMEM, "%s: cannot start decompression",
                       display);
          return NULL;
        }
      src.z_live = TRUE;
    }
  tw_trace *t = load (&src, display, error);
  if (src.z_live)
    inflateEnd (&src.z);
  return t;
}
