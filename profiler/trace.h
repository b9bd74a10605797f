/* trace.h — the profiler's trace model: what a recording holds and what the
 * exporters write.  GTK-free.
 *
 * A trace has metadata (string → string: "model", "mode", "machine", ...),
 * processes (pid, name), lanes (one thread, device or stream of a process),
 * slices on lanes (a named interval with a category and arguments),
 * instants, counters (a named value over time) and flows (an arrow from
 * one slice to another).  Times are nanoseconds on one clock
 * (CLOCK_MONOTONIC for recordings).  Strings are interned in the trace:
 * every const char * a trace returns lives as long as the trace.
 *
 *   g_autoptr (tw_trace) t = tw_trace_new ();
 *   tw_trace_add_process (t, 1, "twb");
 *   guint lane = tw_trace_add_lane (t, 1, 42, "main", TW_LANE_THREAD);
 *   tw_trace_add_slice (t, lane, 1000, 500, "step 0", "step", NULL, 0);
 *   tw_trace_sort (t);                       // slices by start, depths set
 *   for (guint i = 0; i < tw_trace_lane_n_slices (t, lane); i++)
 *     g_print ("%s\n", tw_trace_lane_slice (t, lane, i)->name);
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum
{
  TW_LANE_THREAD,
  TW_LANE_DEVICE,
  TW_LANE_STREAM,
} tw_lane_kind;

typedef struct
{
  const char *key;
  const char *value;
} tw_trace_arg;

typedef struct
{
  gint64 start_ns;
  gint64 dur_ns;
  const char *name;
  const char *category;
  const tw_trace_arg *args;     /* n_args of them, inside the trace */
  guint n_args;
  guint depth;                  /* nesting on its lane (0: top level); set by tw_trace_sort */
} tw_slice;

typedef struct
{
  gint64 t_ns;
  const char *name;
  const char *category;
} tw_instant;

typedef struct
{
  int pid;
  const char *name;
  gint64 t_ns;
  double value;
} tw_counter_sample;

typedef struct
{
  guint64 id;
  const char *name;
  guint from_lane, to_lane;
  gint64 from_ns, to_ns;        /* the start of the slices it joins */
} tw_flow;

typedef struct
{
  int pid;
  const char *name;
} tw_process;

typedef struct
{
  int pid;
  gint64 tid;
  const char *name;
  tw_lane_kind kind;
} tw_lane_info;

typedef struct tw_trace tw_trace;

/* Every time a trace holds lies within ±TW_TRACE_MAX_NS (half the range of
 * gint64: 146 years) and every slice ends by TW_TRACE_MAX_NS, so a start
 * plus a duration, or the difference of any two times, fits in gint64.
 * The add functions clamp what lies outside (readers refuse it first, as
 * malformed). */
#define TW_TRACE_MAX_NS (G_MAXINT64 / 2)

/* a + b saturating at G_MININT64 and G_MAXINT64: for totals of durations
 * over many slices (each up to TW_TRACE_MAX_NS), which can exceed gint64. */
static inline gint64
tw_trace_ns_sum (gint64 a, gint64 b)
{
  gint64 r;
  if (!__builtin_add_overflow (a, b, &r))
    return r;
  return b > 0 ? G_MAXINT64 : G_MININT64;
}

tw_trace *tw_trace_new (void);               /* free with tw_trace_free */
void tw_trace_free (tw_trace *t);            /* NULL-safe */

/* Interns s in the trace (NULL stays NULL). */
const char *tw_trace_intern (tw_trace *t, const char *s);

void tw_trace_set_meta (tw_trace *t, const char *key, const char *value);
const char *tw_trace_get_meta (const tw_trace *t, const char *key);     /* NULL when unset */
/* Keys in insertion order (NULL-terminated, lives in t). */
const char *const *tw_trace_meta_keys (const tw_trace *t);

/* Adds a process or renames an existing one with this pid. */
void tw_trace_add_process (tw_trace *t, int pid, const char *name);
guint tw_trace_n_processes (const tw_trace *t);
const tw_process *tw_trace_process (const tw_trace *t, guint i);

/* Returns the lane's index; an existing lane of (pid, tid) is returned (and
 * renamed when name is not NULL).  Adds the process when new. */
guint tw_trace_add_lane (tw_trace *t, int pid, gint64 tid, const char *name, tw_lane_kind kind);
guint tw_trace_n_lanes (const tw_trace *t);
const tw_lane_info *tw_trace_lane (const tw_trace *t, guint lane);
/* The lane of (pid, tid), or -1. */
int tw_trace_find_lane (const tw_trace *t, int pid, gint64 tid);

/* args: n_args pairs, copied (and interned).  Marks the trace unsorted. */
void tw_trace_add_slice (tw_trace *t, guint lane, gint64 start_ns, gint64 dur_ns, const char *name,
                         const char *category, const tw_trace_arg *args, guint n_args);
/* The same without copying: name and category from tw_trace_intern, args
 * from tw_trace_intern_args (shared by any number of slices). */
void tw_trace_add_slice_interned (tw_trace *t, guint lane, gint64 start_ns, gint64 dur_ns,
                                  const char *name, const char *category, const tw_trace_arg *args,
                                  guint n_args);
/* n_args pairs copied into t, keys and values interned; lives in t. */
const tw_trace_arg *tw_trace_intern_args (tw_trace *t, const tw_trace_arg *args, guint n_args);
void tw_trace_add_instant (tw_trace *t, guint lane, gint64 t_ns, const char *name,
                           const char *category);
void tw_trace_add_counter (tw_trace *t, int pid, const char *name, gint64 t_ns, double value);
/* A flow from the slice of from_lane starting at from_ns to that of to_lane
 * starting at to_ns. */
void tw_trace_add_flow (tw_trace *t, guint64 id, const char *name, guint from_lane, gint64 from_ns,
                        guint to_lane, gint64 to_ns);

/* Sorts each lane's slices by start (a parent, longer, before its
 * children at the same start), its instants by time and the counters by
 * time, and sets every slice's depth.  Idempotent; the accessors below
 * want a sorted trace (they assert it). */
void tw_trace_sort (tw_trace *t);

guint tw_trace_lane_n_slices (const tw_trace *t, guint lane);
/* Borrowed; valid until the next add to t. */
const tw_slice *tw_trace_lane_slice (const tw_trace *t, guint lane, guint i);
guint tw_trace_lane_n_instants (const tw_trace *t, guint lane);
const tw_instant *tw_trace_lane_instant (const tw_trace *t, guint lane, guint i);
guint tw_trace_n_counters (const tw_trace *t);
const tw_counter_sample *tw_trace_counter (const tw_trace *t, guint i);
guint tw_trace_n_flows (const tw_trace *t);
const tw_flow *tw_trace_flow (const tw_trace *t, guint i);

/* Calls fn on each slice of the lane in start order; stops when it returns FALSE. */
typedef gboolean (*tw_slice_fn) (const tw_slice *s, gpointer user_data);
void tw_trace_foreach_slice (const tw_trace *t, guint lane, tw_slice_fn fn, gpointer user_data);

/* Totals over all lanes. */
guint64 tw_trace_n_slices (const tw_trace *t);
guint64 tw_trace_n_instants (const tw_trace *t);
/* The value of a slice's argument, or NULL. */
const char *tw_slice_arg (const tw_slice *s, const char *key);
/* From the earliest start to the latest end of anything in the trace (0 when empty). */
gint64 tw_trace_start_ns (const tw_trace *t);
gint64 tw_trace_duration_ns (const tw_trace *t);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_trace, tw_trace_free)

G_END_DECLS
