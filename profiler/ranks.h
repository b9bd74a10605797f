/* ranks.h — the traces of a distributed run: each rank's recording merged
 * into one trace on rank 0's clock, the same collective found on every
 * rank, and each rank's compute / communication breakdown.  GTK-free.
 *
 *   // on rank 0, after gathering every rank's trace (tw_chrome_trace_to_bytes
 *   // on each, tw_trace_from_chrome_bytes here) and the ping-pong offsets
 *   // (tw_comm_clock_offsets):
 *   g_autoptr (tw_trace) merged = tw_trace_merge_ranks (traces, n, offsets, rtts, &error);
 *   tw_chrome_trace_save (merged, "run.json.gz", &error);
 *
 *   // reading one:
 *   int n_ranks;
 *   if (tw_trace_is_multi_rank (merged, &n_ranks))
 *     {
 *       g_autoptr (GArray) peers = tw_trace_collective_peers (merged, lane, i);
 *       for (guint k = 0; peers && k < peers->len; k++)
 *         {
 *           const tw_coll_peer *p = &g_array_index (peers, tw_coll_peer, k);
 *           g_print ("rank %d arrived %.1f us before the last, waited %.1f us\n",
 *                    p->rank, -p->skew_ns / 1e3, p->wait_ns / 1e3);
 *         }
 *     }
 *
 * The merged trace has a process per rank (pid = rank, named "rank R", or
 * "rank R (HOST)" when the rank's metadata has "host").  A collective is a
 * slice of category "collective" with an argument "seq" > 0 (the
 * recorder's, profiler/recorder.h): the same seq on every rank is the same
 * collective; a message is one of kind "send" or "recv" with "peer" and
 * "msg_seq", matched on (sender, receiver, msg_seq).  PyTorch's NCCL
 * kernels (category "kernel" with "Collective name" and "Seq" arguments,
 * as Kineto writes them) are collectives too; a PyTorch trace's rank is
 * its top-level distributedInfo.rank (tw_trace_pytorch_rank), and all its
 * processes (CPU, GPU) become that rank's.
 *
 * Clocks.  offset_ns[r] (tw_comm_clock_offsets: accurate to ±rtt_ns[r]/2)
 * is added to rank r's times first.  Then, per rank r > 0, the collectives
 * both rank 0 and r hold give pairs (end on rank 0, end on rank r): an
 * all-reduce or a barrier ends at nearly the same instant on every rank
 * (within one message's latency).  A least-squares line through them
 * gives a further offset and a drift; it is applied when it rests on at
 * least 3 pairs and its RMS residual is below rtt_ns[r] / 2 (or the rtt is
 * unknown): then it is the better estimate.  Metadata of the merged trace:
 *
 *   ranks                  n
 *   clock_offset_ns.R      the offset given (0 when none)
 *   clock_rtt_ns.R         its round trip (absent when unknown)
 *   clock_refined.R        "OFFSET_NS DRIFT_PPM RESIDUAL_NS N_PAIRS": the fit
 *                          (OFFSET_NS: the whole offset at the middle of the
 *                          pairs; DRIFT_PPM: how fast rank R's clock falls
 *                          behind rank 0's, in ns per ms); absent with no pair
 *   clock_used.R           "refined", "ping-pong" (offset_ns) or "none"
 *   host.R                 the rank's "host", when it has one
 *   merge.note             what did not match (messages without their other
 *                          end, collectives missing on some ranks)
 *
 * and the first trace's other metadata.
 */
#pragma once

#include "profiler/trace.h"

G_BEGIN_DECLS

#define TW_RANKS_ERROR (tw_ranks_error_quark ())
GQuark tw_ranks_error_quark (void);

typedef enum
{
  TW_RANKS_ERROR_ARG,           /* no rank, a missing trace, a trace of several ranks */
} tw_ranks_error_code;

/* Merges per_rank[0 .. n_ranks-1] (rank r's trace at index r; each is
 * sorted here if it is not) into a new sorted trace, as above: every lane,
 * slice, instant, counter and flow of each rank copied with its times
 * moved onto rank 0's clock, and a flow "message" from each send slice
 * to its receive.  offset_ns and rtt_ns (n_ranks entries) may be NULL:
 * offsets 0, round trips unknown.  NULL with TW_RANKS_ERROR_ARG naming
 * the rank when n_ranks < 1, a trace is NULL or already holds several
 * ranks.  The caller frees the result; the inputs stay the caller's. */
tw_trace *tw_trace_merge_ranks (tw_trace *const *per_rank, int n_ranks, const gint64 *offset_ns,
                                const gint64 *rtt_ns, GError **error);

/* A PyTorch trace's rank: its top-level "distributedInfo" object's
 * "rank" (the importer keeps that object as JSON text in the metadata).
 * FALSE when t has none. */
gboolean tw_trace_pytorch_rank (const tw_trace *t, int *rank);

/* Whether t holds several ranks: its metadata "ranks" (a merged trace's)
 * says 2 or more, or, without it, two or more processes are named
 * "rank N".  *n_ranks (may be NULL) gets the count, 1 when not. */
gboolean tw_trace_is_multi_rank (const tw_trace *t, int *n_ranks);

/* One rank's part in a collective (tw_trace_collective_peers). */
typedef struct
{
  int rank;                     /* the process's pid */
  guint lane;
  guint slice_index;            /* on the lane, as tw_trace_lane_slice counts */
  gint64 start_ns, end_ns;
  gint64 skew_ns;               /* start - the latest start of all: <= 0, 0 for the last to arrive */
  gint64 wait_ns;               /* the part of its slice spent waiting for the last to arrive:
                                 * MIN (-skew_ns, end_ns - start_ns) */
} tw_coll_peer;

/* The collective of slice slice_index of lane (sorted t) on every rank
 * that holds it (slices of the same "seq" on each process; the first per
 * process), by rank.  NULL when that slice is not a collective (no seq
 * > 0: messages have none).  Free with g_array_unref. */
GArray *tw_trace_collective_peers (const tw_trace *t, guint lane, guint slice_index);

/* One rank's time over its span: tw_summary_ranks's figures (summary.h:
 * which slices are compute and which communication) and its steps. */
typedef struct
{
  int rank;                     /* the process's pid */
  const char *name;             /* the process's, in t */
  gint64 span_ns, compute_ns, comm_ns;
  gint64 exposed_ns;            /* communication during which no compute ran */
  gint64 idle_ns;
  double overlap_pct;           /* 100 × (1 - exposed / comm); 0 without communication */
  guint64 n_steps;              /* the rank's own "step N" / ProfilerStep#N slices */
  gint64 step_median_ns;        /* their median duration; 0 without steps */
  double slower_pct;            /* 100 × (step median / median of the ranks' medians - 1) */
  gboolean straggler;           /* slower_pct > the threshold given */
} tw_rank_stats;

/* A straggler's median step is slower than the median of the ranks'
 * medians by more than this (percent), unless told otherwise. */
#define TW_STRAGGLER_DEFAULT_PCT 10.0

/* A row per process of t, by pid; stragglers marked against
 * straggler_pct.  Free with g_array_unref. */
GArray *tw_trace_rank_stats (const tw_trace *t, double straggler_pct);
/* The median of the rows' step medians (ranks without steps left out):
 * what slower_pct compares against.  0 when no rank has steps. */
gint64 tw_rank_stats_median_step (const GArray *rows);

/* The critical path of step `step` (its "step N" slices) across the
 * ranks (ranks-path.c says how it is walked): segments oldest first. */
typedef enum
{
  TW_PATH_COMPUTE,              /* an op of a rank's worker */
  TW_PATH_COMM,                 /* a collective, from its last rank's arrival to its end */
  TW_PATH_WAIT,                 /* a rank noticing that a collective ended */
  TW_PATH_IDLE,                 /* a gap nothing recorded explains */
} tw_path_kind;

typedef struct
{
  int rank;
  tw_path_kind kind;
  const char *name;             /* the op's or collective's (in t), "idle" */
  gint64 start_ns, dur_ns;
  guint lane;                   /* where it is drawn: the op's or the last rank's collective's
                                 * lane; for a wait or a gap the lane of the rank's ops (of
                                 * its step when it has none) */
  guint slice_index;            /* the slice on that lane (tw_trace_lane_slice); G_MAXUINT
                                 * for a wait or a gap, which no slice covers */
} tw_path_segment;

typedef struct
{
  guint64 step;
  int end_rank;                 /* the rank whose step ended last */
  gint64 span_ns;               /* from the first rank's step start to the last end */
  gint64 compute_ns, comm_ns, wait_ns, idle_ns;
  guint64 ranks_mask;           /* bit r: the path runs through rank r (r < 64) */
} tw_path_summary;

/* NULL when t holds one rank or no rank has that step; else the segments
 * (g_array_unref) and *sum filled. */
GArray *tw_trace_critical_path (const tw_trace *t, guint64 step, tw_path_summary *sum);
/* The same for the step of median span among those tw_trace_critical_path
 * finds (of an even count, the upper middle one): what `twb trace-info`
 * prints and the timeline draws.  NULL when there is none. */
GArray *tw_trace_critical_path_median (const tw_trace *t, tw_path_summary *sum);

/* Whether t is one rank's PyTorch trace: it has a distributedInfo.rank
 * (tw_trace_pytorch_rank) and does not already hold several ranks. */
gboolean tw_trace_is_pytorch_rank (const tw_trace *t);
/* PyTorch traces of one run, a rank each (distributedInfo.rank), merged
 * as the ranks of one trace (tw_trace_merge_ranks, no offsets: their
 * clocks are the profiler's wall clock, the collectives refine them), each
 * at its rank; a rank no trace has stays empty.  NULL with
 * TW_RANKS_ERROR_ARG when a trace is not one rank's (index named), two
 * share a rank, or a rank lies more than 4096 past the count given (not a
 * run's: it bounds the empty ranks made).  The inputs stay the caller's;
 * the caller frees the result. */
tw_trace *tw_trace_merge_pytorch_ranks (tw_trace *const *traces, guint n, GError **error);

G_END_DECLS
