/* train.h — a training run: parameters, eager executor, optimizer, schedule,
 * metrics and checkpoints for one model.  The command line and the GUI's
 * training session both drive it.
 *
 *   g_autoptr (tw_trainer) tr = tw_trainer_new (model, &error);
 *   tw_trainer_set_total_steps (tr, epochs * batches_per_epoch);
 *   while (tw_batcher_next (b, &x, &y))
 *     if (!tw_trainer_step (tr, x, y, &loss, &error)) ...;
 *   tw_trainer_evaluate (tr, test_set, 256, &test_loss, &accuracy, &error);
 *
 * Ownership: the trainer borrows the model (which must outlive it) and owns
 * its parameters, executor and optimizer.
 */
#pragma once

#include "engine/compile/compiled.h"
#include "engine/data.h"
#include "engine/eager.h"
#include "engine/model.h"
#include "engine/optim.h"

G_BEGIN_DECLS

typedef struct tw_trainer tw_trainer;

typedef enum
{
  TW_MODE_EAGER,
  TW_MODE_COMPILED,
} tw_exec_mode;

tw_trainer *tw_trainer_new (tw_model *model, GError **error);
void tw_trainer_free (tw_trainer *tr);

tw_params *tw_trainer_params (tw_trainer *tr);            /* borrowed */
tw_eager *tw_trainer_executor (tw_trainer *tr);           /* borrowed */
/* Eager (default) or compiled execution; switching keeps the parameters and
 * the optimizer state, so a run can change mode between steps. */
void tw_trainer_set_mode (tw_trainer *tr, tw_exec_mode mode);
tw_exec_mode tw_trainer_get_mode (const tw_trainer *tr);
/* The compiled executor (created on first use of compiled mode). Borrowed. */
tw_compiled *tw_trainer_compiled (tw_trainer *tr);
void tw_trainer_set_num_threads (tw_trainer *tr, int n);
/* Publish events (engine/events.h) on bus from both executors and the
 * trainer itself (iterations, eager updates).  A reference is taken. */
void tw_trainer_set_bus (tw_trainer *tr, tw_bus *bus);
tw_bus *tw_trainer_bus (tw_trainer *tr);                  /* borrowed, may be NULL */
/* grad_ready events of compiled mode's fused weight-gradient updates carry
 * the gradient's norm (tw_compiled_set_grad_norms). */
void tw_trainer_set_grad_norms (tw_trainer *tr, gboolean on);
/* An event client asked to stop while the parameters were being updated:
 * the step was finished (tw_trainer_step returned TRUE).  Says so once. */
gboolean tw_trainer_stop_pending (tw_trainer *tr);
tw_model *tw_trainer_model (tw_trainer *tr);               /* borrowed */
tw_optimizer *tw_trainer_optimizer (tw_trainer *tr);       /* borrowed */
/* New hyper-parameters (base lr, momentum, weight decay, betas; the
 * optimizer type stays): from the next step, state kept. */
void tw_trainer_set_optimizer_config (tw_trainer *tr, const tw_optimizer_config *cfg);
/* Freeze (or unfreeze) every parameter of a node: its values and optimizer
 * state stay bit-identical while frozen, in both modes. */
gboolean tw_trainer_set_frozen (tw_trainer *tr, const char *node_id, gboolean frozen,
                                GError **error);

/* What a graph replacement did to the parameters, by node id
 * (NULL-terminated; free with tw_graph_change_clear). */
typedef struct
{
  char **kept;             /* same op, attributes, inputs and parameter shapes: weights
                            * and optimizer state kept bit for bit */
  char **reinitialised;    /* changed: parameters initialised again */
  char **added;
  char **removed;
} tw_graph_change;

void tw_graph_change_clear (tw_graph_change *change);

/* Run graph (taken, whatever the result) from the next step on.  Fails,
 * leaving the trainer on its old graph, when the new one does not infer (the
 * error names each node) or has no data input or loss.  Compiled programs
 * are rebuilt on their next use. */
gboolean tw_trainer_replace_graph (tw_trainer *tr, tw_graph *graph, tw_graph_change *change,
                                   GError **error);
/* Total steps of the run, for schedules that need it (cosine). */
void tw_trainer_set_total_steps (tw_trainer *tr, int64_t total);
/* Keep going on a non-finite loss instead of failing the step. */
void tw_trainer_set_allow_nan (tw_trainer *tr, gboolean allow);
int64_t tw_trainer_step_count (const tw_trainer *tr);
double tw_trainer_current_lr (const tw_trainer *tr);

/* One training step: forward, backward, optimizer update.  Fails with
 * TW_EXEC_ERROR_NAN naming the step when the loss is not finite. */
gboolean tw_trainer_step (tw_trainer *tr, tw_tensor *x, tw_tensor *y, double *loss,
                          GError **error);

/* Loss and accuracy (argmax of the prediction vs labels) in eval mode;
 * accuracy NaN when the prediction is not class scores [N, C] (a
 * regression), an error when class labels meet no prediction at all. */
gboolean tw_trainer_evaluate (tw_trainer *tr, const tw_dataset *d, int64_t batch_size,
                              double *loss, double *accuracy, GError **error);

/* Rows of pred [N, C] whose argmax is the label (labels i64 [N]); -1 when
 * the shapes are not those of a classifier. */
int64_t tw_count_correct (tw_tensor *pred, const tw_tensor *labels);

/* Checkpoints (safetensors): parameters and buffers under their state_dict
 * names, optimizer state as "optimizer.<name>.<k>", and in the metadata the
 * step, epoch and batch within the epoch to resume at and the run's seed.
 * Loading sets the model's recipe seed to the checkpoint's, so a resumed run
 * shuffles and drops out exactly as the uninterrupted one would.  It checks
 * everything before changing anything: the "format" (twb-checkpoint), the
 * counters (whole numbers from 0 to 2^53), the seed, every parameter's shape
 * and the optimizer state's (f32, the parameter's shape); an error names the
 * file and the member or tensor. */
gboolean tw_trainer_save_checkpoint (tw_trainer *tr, const char *path, int64_t epoch,
                                     int64_t batch_in_epoch, GError **error);
/* Whether every rank must call tw_trainer_save_checkpoint (a pipeline's
 * stages, or ZeRO-1's optimizer shards, are gathered; rank 0 writes); else
 * rank 0 alone calls it. */
gboolean tw_trainer_checkpoint_is_collective (tw_trainer *tr);
gboolean tw_trainer_load_checkpoint (tw_trainer *tr, const char *path, int64_t *epoch,
                                     int64_t *batch_in_epoch, GError **error);

/* The parameters and buffers alone, under their state_dict names (what
 * PyTorch's load_state_dict and `--init-weights` read), metadata "format":
 * "twb-weights", the model's name and the step.  Atomic. */
gboolean tw_trainer_save_weights (tw_trainer *tr, const char *path, GError **error);

/* Load parameter values (a checkpoint or any safetensors file with matching
 * names and shapes) into params; every parameter must be present. */
gboolean tw_params_load_weights (tw_params *params, const char *path, GError **error);

/* Data parallel (engine/train-dist.c).  Every rank runs the same trainer
 * on the same global batches; tw_trainer_step then takes this rank's
 * shard of each (rows [N·r/p, N·(r+1)/p)), so that p ranks together do
 * what one process does with the whole batch: gradients are packed into
 * buckets of about bucket_mb (in the order their grad_ready events came
 * in the first step, as PyTorch DDP rebuilds its buckets; the first step
 * takes the parameters in reverse), each bucket's all-reduce starts the
 * moment its last gradient is final, overlapping the rest of backward,
 * and each parameter is updated from the summed gradient as soon as its
 * bucket is back.  Every rank then holds the same weights (up to the
 * order of the reduction).  Evaluation splits the batches between the
 * ranks and sums.  Gradients are weighted by the shard's share of the
 * batch, so an uneven split (a last batch smaller than p) stays exact. */
typedef struct
{
  double bucket_mb;          /* default 25 (PyTorch DDP's bucket_cap_mb) */
  /* Local SGD (H > 0): no gradient is sent; each rank updates its own
   * weights from its own shard's gradient, and every H steps the weights
   * are averaged (weighted by the shards' shares).  H = 1 is synchronous
   * SGD again, up to rounding, for SGD with or without momentum: the
   * update is linear in the gradient.  0: off (synchronous). */
  int local_sgd;
  /* Asynchronous updates through a parameter server (K ≥ 0; −1: off, the
   * default): the last rank holds the weights and the optimizer and
   * trains on no data; the others (the workers) each take their shard of
   * the global batch, push its gradient and pull the weights back.  The
   * server applies each gradient as it comes (its share of a step), so a
   * gradient may be computed on weights that others have changed since:
   * its staleness (updates in between) is recorded.  A worker may be at
   * most K steps ahead of the slowest one: the server holds its reply
   * until the others catch up. */
  int async_staleness;
  /* Gradient compression of each bucket (engine/comm/compress.h):
   * "topk:F", "int8", "sign", "powersgd:R", with error feedback; NULL or
   * "none": dense.  Borrowed: copied by tw_trainer_set_dist. */
  const char *compress;
  /* ZeRO-1: each rank keeps the optimizer state of its 1/p of every bucket
   * only.  A bucket's gradients are reduce-scattered (each rank receives
   * the sum of its shard), each rank updates its shard's weights, and the
   * weights are all-gathered back.  The same updates as without it, up to
   * the reduction's rounding; synchronous, uncompressed training only. */
  gboolean shard_optimizer;
} tw_dist_options;

void tw_dist_options_init (tw_dist_options *o);

struct tw_comm;
/* Before the first step: checks that every rank has the same model (the
 * error names the ranks that differ), broadcasts rank 0's parameters and
 * buffers, and trains data parallel from then on.  comm is borrowed (it
 * must outlive the trainer); collective: every rank calls it. */
gboolean tw_trainer_set_dist (tw_trainer *tr, struct tw_comm *comm, const tw_dist_options *o,
                              GError **error);
/* This rank and the number of ranks (0 and 1 without data parallelism). */
int tw_trainer_rank (tw_trainer *tr);
int tw_trainer_ranks (tw_trainer *tr);
/* What data parallelism did so far (all zeros without it). */
typedef struct
{
  int ranks, buckets;
  int64_t steps;
  double payload_bytes;      /* gradient (or weight) bytes reduced per step, per rank */
  double sent_bytes;         /* bytes this rank put on the wire per step: our algorithms'
                              * count, a compressor's, or for MPI's own all-reduce the ring's
                              * 2(p−1)/p of the payload (MPI does not say) */
  double exposed_ms;         /* per step: time the step waited for communication after its
                              * backward (what overlap did not hide) */
  double last_sent_bytes;    /* the last step's */
  /* Asynchronous: gradients applied by the server so far, and their
   * staleness (updates the server made between a worker's pull and its
   * push), as the server last said. */
  int64_t async_updates;
  double staleness_mean;
  int64_t staleness_max;
  /* Bytes of optimizer state this rank holds (momentum, Adam's moments):
   * with shard_optimizer its shard's, else the whole model's. */
  double optimizer_state_bytes;
  gboolean sharded;          /* shard_optimizer is on */
} tw_dist_stats;

void tw_trainer_dist_stats (tw_trainer *tr, tw_dist_stats *out);

/* Every rank's compute time (ms) of the last step, as rank 0 (and every
 * rank) learnt it from the step's own totals: data parallel and local SGD
 * carry it in the all-reduce of the loss (one slot per rank), a pipeline in
 * its per-step totals (there the time the rank's schedule did not wait for
 * activations or gradients).  Compute is forward and backward of the rank's
 * shard, the optimizer and communication left out, so a slow rank (a
 * straggler) stands out from the others' waits.  Copies at most max values
 * into out (may be NULL) and returns the number of ranks; 0 before the first
 * step, without a communicator, and for asynchronous updates (which have no
 * per-step collective). */
int tw_trainer_rank_step_ms (tw_trainer *tr, double *out, int max);

/* Data parallel's gradient buckets, as a layout: bucket b holds the
 * parameters names[b] (NULL-terminated, in the order they are packed) and
 * bytes[b] bytes of f32.  The rules (train-dist.c): the parameters are taken
 * in an order (the first step's: every trainable parameter in reverse, the
 * guess at the order backward finishes them; from the second step on: the
 * order their gradients became final in the first) and a bucket is closed
 * when the next parameter would take it past bucket_mb (10^6 bytes each); a
 * parameter larger than that has a bucket of its own.
 *
 *   tw_bucket_layout l = { 0 };
 *   if (tw_dist_bucket_predict (graph, 25, &l))
 *     b = tw_bucket_layout_find (&l, "fc3.weight", NULL);   // 0: all-reduced first
 *   tw_bucket_layout_clear (&l);
 *
 * Ownership: the layout owns its arrays; clear frees them. */
typedef struct
{
  int n;
  char ***names;
  int64_t *bytes;
} tw_bucket_layout;

void tw_bucket_layout_clear (tw_bucket_layout *l);
/* The bucket holding param (and its position there, may be NULL); -1. */
int tw_bucket_layout_find (const tw_bucket_layout *l, const char *param, int *pos);
/* The cut alone: bucket_of[j] for the j-th parameter taken (numel[j]
 * floats), each bucket taking parameters until it holds bucket_mb or more
 * (PyTorch DDP's rule); returns the number of buckets.  Pure. */
int tw_dist_bucket_cut (const int64_t *numel, int n, double bucket_mb, int *bucket_of);
/* The first step's layout of an inferred graph's trainable parameters
 * (those tw_params_sync_graph makes, in its order, reversed; a shared
 * scope once).  FALSE (out empty) when there is none.  Pure. */
gboolean tw_dist_bucket_predict (const tw_graph *g, double bucket_mb, tw_bucket_layout *out);
/* The layout a data-parallel trainer uses now: after its first step, the
 * final one.  FALSE (out empty) without data parallelism, before the
 * first step, and for local SGD and asynchronous updates (which pack no
 * gradients). */
gboolean tw_trainer_dist_buckets (tw_trainer *tr, tw_bucket_layout *out);

/* After a data-parallel step: the correct predictions over the whole
 * global batch (every rank's shard), or -1 when the prediction is not
 * class scores.  -1 without data parallelism. */
int64_t tw_trainer_dist_correct (tw_trainer *tr);

/* Pipeline and hybrid parallelism (engine/train-pipe.c), eager or
 * compiled mode.
 *
 * The graph is cut into S stages: a node's integer attribute "stage"
 * (0-based) puts it in that stage; a node without one follows its inputs
 * (the latest of their stages); a graph with no "stage" at all is cut
 * automatically into S contiguous runs of its topological order of about
 * equal FLOPs (the ops' cost functions).  Input nodes belong to no stage:
 * every stage that reads one is fed it (each rank has the global batch).
 * The loss is in the last stage.  Each stage runs a sub-graph of its nodes
 * in which the values it receives from earlier stages are input nodes of
 * the same shapes (named as the value: "fc2", or "split.1" for "split:1")
 * and the values later stages need are its outputs; parameters keep their
 * names.
 *
 * With W ranks, S stages and R = W / S replicas, rank r runs stage r % S of
 * replica r / S (a replica is S consecutive ranks).  A step takes the
 * replica's shard of the global batch (rows [N·q/R, N·(q+1)/R)), cuts it
 * into M micro-batches and runs them through the stages by a schedule:
 *
 *   GPipe: every micro-batch's forward, then every backward;
 *   1F1B:  S − s − 1 forwards on stage s (the warm-up), then one forward
 *          and one backward in turn, then the backwards left (cool-down):
 *          at most S − s tapes held at once instead of M.
 *
 * Activations go forward and their gradients back with tw_comm_send /
 * tw_comm_recv on the world communicator (tagged "activations mb 3 (fc2)",
 * "gradients mb 3 (fc2)").  The last stage starts each micro-batch's
 * backward from its loss weighted by the micro-batch's share of the
 * global batch, so that parameter gradients accumulated over the
 * micro-batches (and summed over the replicas of the stage on a
 * communicator per stage, tw_comm_split, packed into buckets of
 * bucket_mb, each bucket's all-reduce posted the moment its last gradient
 * is final in the step's last backward) are those of one process taking the whole batch; the update is
 * applied once per step.
 * The loss of the global batch is summed over the last stages and known to
 * every rank (an all-reduce over the world).
 *
 * Every rank holds every parameter's value (the trainer is built on the
 * whole model), but trains only its stage's: tw_trainer_evaluate,
 * tw_trainer_save_checkpoint and tw_trainer_save_weights first bring every
 * stage's current parameters (and, for a checkpoint, optimizer state) to
 * every rank; they are collective (every rank calls them) and only rank 0
 * writes the file.
 *
 * In compiled mode (tw_trainer_set_mode, before or after this) each
 * micro-batch in flight has a tw_compiled on the stage's sub-graph whose
 * TRAIN program starts from the received gradients (and the weighted
 * loss), gives those of the received values and accumulates parameter
 * gradients in the store (tw_grad_spec, engine/compile/program.h); its
 * forward part runs at the micro-batch's forward slot
 * (tw_compiled_forward_feeds) and its backward part at its backward slot
 * (tw_compiled_backward_from) over the same arena, which holds the
 * forward's values in between: no forward is recomputed, and a stage
 * holds one arena per micro-batch in flight, as eager holds one tape each.
 *
 * Dropout masks are drawn per micro-batch (so a run with dropout differs
 * from one process; the backward uses the forward's masks in both modes),
 * batch norm normalises over each micro-batch (as GPipe's does). */
typedef enum
{
  TW_SCHEDULE_1F1B,
  TW_SCHEDULE_GPIPE,
} tw_pipe_schedule;

const char *tw_pipe_schedule_name (tw_pipe_schedule s);              /* "1f1b", "gpipe" */
gboolean tw_pipe_schedule_from_name (const char *name, tw_pipe_schedule *out, GError **error);

typedef struct
{
  int stages;                /* S ≥ 1; 0: no pipeline (data parallel, tw_session_options) */
  int micro_batches;         /* M ≥ 1 (default 4); fewer when a shard has fewer rows */
  tw_pipe_schedule schedule; /* default 1F1B */
  double bucket_mb;          /* hybrid: the replicas' gradient buckets (default 25) */
} tw_pipeline_options;

void tw_pipeline_options_init (tw_pipeline_options *o);

/* The stage of every node of an inferred graph (stage_of [n_nodes]; -1
 * for input nodes), by the rules above.  FALSE with TW_EXEC_ERROR_GRAPH
 * naming the node or stage: a "stage" that is not an integer from 0 to
 * S − 1, a stage left without nodes, more stages than nodes (inputs aside),
 * a node reading from a later stage (the stages do not form a chain), a
 * shared layer (share) split across stages, the loss outside the last
 * stage. */
gboolean tw_pipeline_assign_stages (const tw_graph *g, int n_stages, int *stage_of,
                                    GError **error);
/* The same; on failure *bad_node is the index of the node the error names
 * (-1 for a graph-wide one: too many stages, a stage without nodes).  Pure:
 * the editor paints the stages with it. */
gboolean tw_pipeline_assign_stages_full (const tw_graph *g, int n_stages, int *stage_of,
                                         int *bad_node, GError **error);

/* Before the first step (eager or compiled mode): checks that every rank has the same
 * model, broadcasts rank 0's parameters and buffers, cuts the graph and
 * trains pipeline parallel (hybrid when the communicator has more ranks
 * than o->stages; its size must be a multiple of it) from then on.  comm is
 * borrowed (it must outlive the trainer); collective. */
gboolean tw_trainer_set_pipeline (tw_trainer *tr, struct tw_comm *comm,
                                  const tw_pipeline_options *o, GError **error);
/* This rank's stage (-1 without a pipeline) and replica. */
int tw_trainer_pipeline_stage (tw_trainer *tr);
int tw_trainer_pipeline_replica (tw_trainer *tr);
/* The stage that trains parameter i (a tw_params index); -1 without a
 * pipeline. */
int tw_trainer_pipeline_param_stage (tw_trainer *tr, int i);
/* The pipeline's bubble: the fraction of the schedule's time the ranks
 * spent waiting for activations or gradients (their waits summed over every
 * rank, over their schedules' time summed; over the steps after the first,
 * or the first alone), and the theory for equal stages,
 * (S − 1) / (M + S − 1).  FALSE (both NaN) without a pipeline or before
 * the first step. */
gboolean tw_trainer_pipeline_bubble (tw_trainer *tr, double *measured, double *theory);
/* After a pipeline step: the correct predictions over the global batch
 * (every replica's last stage), or -1 (not class scores; no pipeline). */
int64_t tw_trainer_pipeline_correct (tw_trainer *tr);
/* This rank's own fraction (NaN without a pipeline or before a step). */
double tw_trainer_pipeline_rank_bubble (tw_trainer *tr);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_trainer, tw_trainer_free)

G_END_DECLS
