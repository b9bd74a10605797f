/* step.h — the simulator's time mode for a data-parallel training step:
 * every rank's forward and backward from the ops' cost model on a device
 * profile, its gradients bucketed as the engine buckets them
 * (engine/train-dist.c: the last parameter first, cut at bucket_mb), each
 * bucket's all-reduce posted when its last gradient is ready and run one
 * at a time in order, as the communication thread runs them, over the
 * network model (net.h), then each bucket's update.  No arithmetic: what
 * comes out is time.  Variants of the same step: ZeRO-1, local SGD and
 * compression (options below), the parameter server's asynchronous
 * updates (tw_sim_async_step); pipelines are pipe.h's.  With o->spans set
 * the step also records what each rank did, for a trace.
 *
 *   tw_device_profile d;
 *   tw_device_profile_named ("h100", &d, &error);
 *   g_autoptr (tw_topo) t = tw_topo_cluster (8, 8, "nvlink+ib", &error);
 *   tw_sim_dp_options o;
 *   tw_sim_dp_options_init (&o);
 *   tw_sim_dp_result r;
 *   tw_sim_dp_step (graph, 1024, &d, t, &o, &r, &error);   // a global batch of 1024
 *
 * GTK-free. */
#pragma once

#include "engine/events.h"
#include "engine/graph.h"
#include "engine/sim/net.h"

G_BEGIN_DECLS

/* A device's roofline: an op takes the longer of its FLOPs at the peak of
 * its class times an efficiency and its bytes at the memory bandwidth
 * times an efficiency, plus a launch overhead. */
typedef struct
{
  char name[32];
  double matmul_flops;        /* FLOP/s of matrix products (linear, matmul, convolutions) */
  double vector_flops;        /* FLOP/s of everything else */
  double mem_bw;              /* bytes/s */
  double matmul_eff, vector_eff, mem_eff;   /* achieved fractions of the peaks */
  double launch_s;            /* per op (kernel launch, dispatch) */
  double memory_bytes;        /* the device's memory */
} tw_device_profile;

/* "h100", "h200", "a100", "mi300x": datasheet peaks (cited in step.c). */
gboolean tw_device_profile_named (const char *name, tw_device_profile *out, GError **error);
/* The time of node n (inferred at the batch wanted) on d; backward: the
 * op's backward, taken as twice its forward's FLOPs and bytes for ops with
 * parameters (the input's and the weights' gradients) and once otherwise. */
double tw_device_op_time (const tw_device_profile *d, const tw_node *n, gboolean backward);

typedef struct
{
  int ranks;                  /* data-parallel ranks: the topology's first `ranks` devices */
  tw_algo algo;
  double bucket_mb;           /* default 25, as the engine */
  double gamma;               /* seconds per byte reduced (default: from the device's memory
                               * bandwidth: reading two buffers and writing one) */
  /* Every rank's every event and message simulated (O(p²) messages for a
   * ring), instead of one rank's chain with each collective's time from
   * tw_sim_allreduce_time: the ranks are identical, so both give the same
   * step (the tests check it); the fast one reaches thousands of ranks. */
  gboolean exact;
  /* What a calibration measured, instead of the roofline (engine/sim/
   * calibrate.h): node id → double[2] {forward, backward} seconds at the
   * rank's batch (NULL: none; nodes missing from it take the roofline),
   * the update's seconds per gradient byte (0: the roofline's), a fixed
   * cost per step (data, bookkeeping), a fixed cost per collective (the
   * communication thread's hand-off), and a factor on every compute time
   * (ranks sharing cores: ranks / cores). */
  GHashTable *node_times;
  double update_s_per_byte;
  double step_overhead_s;
  double collective_overhead_s;
  double collective_s_per_byte;  /* and per byte of its buffer */
  double compute_scale;       /* 0 or 1: none */
  /* What ranks stepping in lockstep cost (calibrated: they arrive apart,
   * the first waits for the last): the step's last collective, the loss's,
   * which every rank waits for, costs this instead of the collective's
   * fixed cost (0: that). */
  double lockstep_s;
  /* ZeRO-1 (--shard-optimizer): each rank keeps 1/ranks of the optimizer
   * state; a bucket's all-reduce becomes a ring reduce-scatter during
   * backward, the update of the rank's shard, then an all-gather. */
  gboolean shard_optimizer;
  /* Local SGD (--local-sgd H, H > 1): no gradient all-reduce; every H
   * steps the parameters are averaged (one all-reduce of them), its time
   * amortised over the H steps. */
  int local_sgd;
  /* Gradient compression (--compress, engine/comm/compress.h): each
   * bucket's payload all-gathered instead of all-reduced, plus the
   * compressor's and decompressor's passes over the bucket as memory-
   * bound roofline ops.  TW_SIM_COMPRESS_NONE: off. */
  int compress;               /* tw_sim_compress */
  double compress_fraction;   /* top-k's F */
  /* When set, a GArray of tw_sim_span (below) the step appends what the
   * ranks did to: every rank's with exact, rank 0's alone otherwise (the
   * ranks are identical).  Borrowed; the caller frees it. */
  GArray *spans;
  /* Ranks that are not alike: the last data-parallel rank (the last worker
   * with a parameter server) computes `straggler` times slower (0 or 1:
   * none), and each rank's each step takes a log-normal factor of mean 1
   * and coefficient of variation `jitter` (0: none) drawn from `seed`
   * (tw_sim_rank_factor).  A synchronous step waits for its slowest rank
   * at every bucket's all-reduce, so its compute is taken at the expected
   * slowest of the ranks' factors (tw_sim_slowest_factor); the
   * asynchronous step draws each worker's every step. */
  double straggler, jitter;
  guint64 seed;
  /* The parameter server's bound (twb train --async K): a worker starts
   * its step k only when the server has applied every worker's step
   * k − K − 1 (stale synchronous parallel); < 0 (the default): none. */
  int staleness;
} tw_sim_dp_options;

/* One span of a simulated step, as a real run's trace holds them: a
 * node's forward or backward, a bucket's update, the step's fixed cost
 * (TW_EV_DATA) on the rank's main thread, or a collective on its
 * communication thread.  Times in seconds from the step's start. */
typedef struct
{
  int rank;
  tw_event_kind kind;         /* TW_EV_DATA, _FORWARD, _BACKWARD, _UPDATE or _COLLECTIVE */
  int node;                   /* the graph node's index (forward, backward), or -1 */
  int seq;                    /* a collective's 1-based order on its rank, else 0 */
  double start_s, dur_s;
  double bytes;               /* a collective's buffer, an update's gradients */
  tw_algo algo;               /* a collective's */
  tw_coll_kind coll;          /* a collective's kind (zero: an all-reduce) */
  char name[80];              /* "linear (fc1)", "update bucket 0", "allreduce bucket 0" */
  char what[24];              /* a collective's: "bucket 0", "loss" */
} tw_sim_span;

void tw_sim_dp_options_init (tw_sim_dp_options *o);

/* Rank `rank`'s compute factor at step `step` (of o->ranks ranks, the
 * last the straggler): the same for the same seed on every machine. */
double tw_sim_rank_factor (const tw_sim_dp_options *o, int rank, int ranks, int step);
/* The mean over 256 steps of the largest of the ranks' factors: the
 * factor a synchronous step's compute takes (1 for alike ranks). */
double tw_sim_slowest_factor (const tw_sim_dp_options *o, int ranks);

typedef enum
{
  TW_SIM_COMPRESS_NONE,
  TW_SIM_COMPRESS_TOPK,       /* 8·max (1, ceil (F·n)) bytes */
  TW_SIM_COMPRESS_INT8,       /* n + 4 */
  TW_SIM_COMPRESS_SIGN,       /* ceil (n/8) + 4 */
} tw_sim_compress;

/* "topk:F", "int8", "sign" into o (compress.h's specs; PowerSGD's payload
 * depends on the buckets' matrix shapes and is not modelled yet).  FALSE
 * with an error naming the spec. */
gboolean tw_sim_compress_parse (const char *spec, tw_sim_dp_options *o, GError **error);
/* The payload a rank all-gathers for a bucket of n floats, compress.h's
 * sizes. */
double tw_sim_compress_payload (const tw_sim_dp_options *o, double n);

typedef struct
{
  double step_s;              /* the step: the last rank's end */
  double compute_s;           /* forward + backward + updates, one rank */
  double comm_s;              /* rank 0's collectives' times summed (the buckets' and the
                               * loss's; one at a time, so they never overlap) */
  double exposed_s;           /* what the step waited for communication after backward */
  int buckets;
  double grad_bytes;          /* all-reduced per step and rank */
  double samples_per_s;
  /* Memory per device: parameters, gradients, optimizer state (Adam's two
   * moments), the activations of the rank's shard. */
  double param_bytes, grad_mem_bytes, optimizer_bytes, activation_bytes;
  double busiest_link_bytes;  /* the link that carried most, per step */
  int busiest_link;           /* its index in the topology, or -1 */
} tw_sim_dp_result;

/* One step of data parallelism over o->ranks ranks of t with the global
 * batch (each rank its share); the graph is inferred at the shard's batch
 * on a copy.  FALSE with an error naming the node or the ranks when the
 * graph does not infer or the topology has fewer devices than ranks. */
gboolean tw_sim_dp_step (const tw_graph *g, int64_t global_batch, const tw_device_profile *d,
                         tw_topo *t, const tw_sim_dp_options *o, tw_sim_dp_result *out,
                         GError **error);

/* Asynchronous updates through a parameter server (twb train --async K):
 * rank ranks − 1 is the server, the others workers; each worker's step is
 * its forward and backward at its shard (global_batch / workers), its
 * gradients pushed to the server, the server's update, the weights pulled
 * back, over the network model, every worker starting its next step when
 * its pull is in and the staleness bound (o->staleness) allows.  The
 * server applies the pushes one at a time in the order they arrive: the
 * order is found by simulating again with the last run's arrival order
 * until it no longer changes (at most 8 runs; alike workers: one).
 * `steps` steps each are simulated (at least 3; with a straggler or
 * jitter at least 4 (K + 2), up to 64) and the steady state reported:
 * step_s the time the server takes for one update of every worker,
 * measured over the second half of the run until the first worker is
 * done; comm_s a step's push and pull; busiest_link_bytes per step (the
 * server's link carries every worker's push and pull: 2 (p − 1) times the
 * gradients, where a ring's busiest carries about 4).  Alike workers
 * never wait for the bound; a slow one makes the others wait once they
 * are K steps ahead, so a lasting straggler sets the pace whatever K,
 * while K absorbs jitter.  o->ranks ≥ 2. */
gboolean tw_sim_async_step (const tw_graph *g, int64_t global_batch, const tw_device_profile *d,
                            tw_topo *t, const tw_sim_dp_options *o, int steps,
                            tw_sim_dp_result *out, double *server_link_busy, GError **error);

G_END_DECLS
