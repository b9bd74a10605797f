/* summary.h — what a trace adds up to: the aggregated table of a time
 * range, the top ops and kernels, the per-layer table, each rank's compute
 * / communication / idle time, eager against compiled per layer, and the
 * machine's measured peak.  GTK-free; the Profiler tab and `twb trace-info`
 * both read these.
 *
 *   g_autoptr (GArray) rows = tw_summary_by_name (trace, start, end, NULL, 0);
 *   for (guint i = 0; i < rows->len; i++)
 *     {
 *       const tw_summary_row *r = &g_array_index (rows, tw_summary_row, i);
 *       g_print ("%s %" G_GUINT64_FORMAT " %.3f ms\n", r->name, r->count, r->total_ns / 1e6);
 *     }
 *
 * Times are trace times (ns), the trace sorted (tw_trace_sort).
 */
#pragma once

#include "profiler/trace.h"

G_BEGIN_DECLS

/* One name's share of a range, in one phase. */
typedef struct
{
  const char *name;             /* interned in the trace */
  const char *category;         /* of its first slice */
  const char *phase;            /* "forward", "backward", "update" (the slices' "phase"
                                 * argument, else their category), or NULL for any other:
                                 * a name in two phases is two rows; static strings */
  guint64 count;                /* slices overlapping the range */
  gint64 total_ns;              /* their time inside the range (clipped to it) */
  gint64 self_ns;               /* the same less their children's time inside the range */
  double flops;                 /* Σ "flops" argument × the fraction of each slice inside the range */
  double bytes;                 /* the same for "bytes" */
} tw_summary_row;

/* Aggregates by name and phase the slices of the given lanes (NULL, 0:
 * every lane) that overlap [start_ns, end_ns) (start_ns >= end_ns: the
 * whole trace).  Rows sorted by total_ns descending, then name, then phase.
 * Free with g_array_unref. */
GArray *tw_summary_by_name (const tw_trace *t, gint64 start_ns, gint64 end_ns, const guint *lanes,
                            guint n_lanes);

/* Achieved GFLOP/s of a row (flops / total time), 0 without flops. */
double tw_summary_row_gflops (const tw_summary_row *r);

/* One graph node's time in a trace: the slices whose "nodes" argument
 * names it (a fused slice's time is split evenly among its nodes). */
typedef struct
{
  const char *node;             /* interned in the trace */
  gint64 forward_ns, backward_ns, update_ns, other_ns;
  gint64 total_ns;
  guint64 count;                /* slices naming it */
  double share;                 /* total_ns / Σ every node's total_ns (0..1) */
  guint64 n_steps;              /* distinct steps it appears in (>= 1) */
} tw_layer_row;

/* Per node, over [start_ns, end_ns) as above (only top-level op slices:
 * kernels nested in an op are not counted twice).  Rows by total_ns
 * descending.  Free with g_array_unref.  Node names are interned in t
 * (the one change it makes to t: call it where t is not read meanwhile). */
GArray *tw_summary_layers (const tw_trace *t, gint64 start_ns, gint64 end_ns);

/* A rank's (process's) breakdown over its span (first to last event). */
typedef struct
{
  int pid;
  const char *name;
  gint64 span_ns;
  gint64 compute_ns;            /* the union of compute slices' time */
  gint64 comm_ns;               /* the union of communication slices' time */
  gint64 overlap_ns;            /* communication time during which compute ran */
  gint64 idle_ns;               /* span less the union of both */
  double overlap_pct;           /* 100 × overlap / comm (0 without communication) */
} tw_rank_row;

/* Communication: category "collective", "copy", "nccl", "comm",
 * "gpu_memcpy"; "kernel" slices named like nccl* / *AllReduce* / *Send* /
 * *Recv* / Memcpy*; compute: every other slice on a thread, device or
 * stream lane except steps ("step N", ProfilerStep#N), the "steps" lane's
 * epochs, data loading (category "data": counted as idle) and annotations
 * that wrap work (categories "user_annotation", "Trace").  One row per
 * process, in pid order. */
GArray *tw_summary_ranks (const tw_trace *t);

/* The steps of a trace: ours ("step N", category "step") or PyTorch's
 * ("ProfilerStep#N").  Returns FALSE when step n is not in t. */
gboolean tw_summary_find_step (const tw_trace *t, guint64 n, gint64 *start_ns, gint64 *end_ns);
/* How many steps t holds, and the first one's number. */
guint64 tw_summary_n_steps (const tw_trace *t, guint64 *first);

/* One step: a number found on several lanes or processes spans from its
 * earliest start to its latest end. */
typedef struct
{
  guint64 n;
  gint64 start_ns, end_ns;
} tw_step_span;

/* Every step of t, by number.  Free with g_array_unref. */
GArray *tw_summary_steps (const tw_trace *t);

/* Two traces of one model (eager a, compiled b) per layer, over the steps
 * both hold: each node's mean time per step in a and in b. */
typedef struct
{
  const char *node;             /* interned in a or b */
  double a_ns, b_ns;            /* mean per step; 0 where the node has no slice */
  double diff_ns;               /* b - a */
  gboolean fused_a;             /* a ran it inside a fused slice */
  gboolean fused_b;             /* b did */
} tw_compare_row;

/* Rows by |diff| descending, then a "(step)" row with the mean step times.
 * Traces without a step in common are compared whole (one "step" each: the
 * trace's duration): tw_summary_steps_in_common tells which, and whoever
 * shows the rows must say so.  Free with g_array_unref. */
GArray *tw_summary_compare (const tw_trace *a, const tw_trace *b);
/* How many step numbers a and b both hold (0: compared whole). */
guint64 tw_summary_steps_in_common (const tw_trace *a, const tw_trace *b);

/* This machine's measured single-precision peak (GFLOP/s) for threads
 * threads (<= 0: the engine's default): an OpenBLAS SGEMM large enough to
 * be compute-bound, timed once per process (about 0.2 s) and cached.  The
 * "% of peak" the tables show divides by it. */
double tw_machine_peak_gflops (int threads);

G_END_DECLS
