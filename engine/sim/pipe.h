/* pipe.h — the simulator's time mode for pipeline and hybrid parallelism:
 * the graph cut into S stages as the engine cuts it
 * (tw_pipeline_assign_stages, engine/train.h), a replica's shard cut into
 * M micro-batches run through the stages in the schedule's real order
 * (GPipe: every forward, then every backward; 1F1B: S − s − 1 warm-up
 * forwards on stage s, then one forward and one backward in turn, then the
 * cool-down), the activations sent forward and their gradients back over
 * the network model (net.h), and with R = ranks / S replicas each stage's
 * gradients packed into buckets (tw_dist_bucket_cut) and all-reduced over
 * the stage's R ranks after its last backward, then the update.
 *
 *   tw_sim_pipe_options o;
 *   tw_sim_pipe_options_init (&o);
 *   o.ranks = 8; o.stages = 4; o.micro_batches = 8;
 *   tw_sim_pipe_result r;
 *   tw_sim_pipe_step (graph, 256, &d, topo, &o, &r, &error);
 *   // r.bubble: the idle share of the busiest stage's pipeline span
 *
 * Rank r runs stage r % S of replica r / S, as the engine.  The replicas
 * are identical: replica 0's stages are simulated event by event; each
 * stage's all-reduce takes tw_sim_allreduce_time over its R members.
 * GTK-free; no arithmetic. */
#pragma once

#include "engine/sim/step.h"
#include "engine/train.h"

G_BEGIN_DECLS

typedef struct
{
  int ranks;                  /* a multiple of stages */
  int stages;                 /* S ≥ 1 */
  int micro_batches;          /* M ≥ 1 (default 4, as the engine) */
  tw_pipe_schedule schedule;  /* default 1F1B */
  tw_algo algo;               /* the replicas' all-reduce */
  double bucket_mb;           /* default 25 */
  double gamma;               /* seconds per byte reduced (-1: from the device) */
  GArray *spans;              /* tw_sim_span, as tw_sim_dp_options's (replica 0's ranks) */
} tw_sim_pipe_options;

void tw_sim_pipe_options_init (tw_sim_pipe_options *o);

typedef struct
{
  double step_s;
  double compute_s;           /* the busiest stage's forwards, backwards and update */
  double comm_s;              /* activations' and gradients' transfers on the critical
                               * stage plus its replicas' all-reduces */
  double pipeline_s;          /* from the first forward to the last backward */
  double bubble;              /* 1 − the busiest stage's forward and backward time / pipeline_s */
  double samples_per_s;
  int micro_batches;          /* as run (fewer when a shard has fewer rows) */
  double stage_flops_max, stage_flops_min;   /* forward FLOPs of a micro-batch */
  /* Memory per device (the largest stage): its parameters, gradients,
   * Adam's moments, and the activations of the micro-batches it holds at
   * once (GPipe: M; 1F1B: at most S − s). */
  double param_bytes, grad_mem_bytes, optimizer_bytes, activation_bytes;
  int peak_in_flight;         /* micro-batches held at once, the most of any stage */
  double grad_bytes;          /* all-reduced per step by a rank (hybrid) */
  int buckets;
} tw_sim_pipe_result;

/* FALSE with an error naming the stage or node (the engine's), or when
 * ranks is not a multiple of stages, the topology has fewer devices, or a
 * replica's shard has fewer rows than one. */
gboolean tw_sim_pipe_step (const tw_graph *g, int64_t global_batch, const tw_device_profile *d,
                           tw_topo *t, const tw_sim_pipe_options *o, tw_sim_pipe_result *out,
                           GError **error);

G_END_DECLS
