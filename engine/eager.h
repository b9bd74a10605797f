/* eager.h — the eager (define-by-run) executor with autograd.
 *
 * Runs a graph node by node in topological order, allocating outputs as it
 * goes and keeping them for backward (the tape).  Backward walks the executed
 * nodes in reverse and calls each op's backward rule through the eager
 * emitter; parameter gradients accumulate (+=) into the tw_params store,
 * activation gradients are assigned and freed as soon as they are used.
 *
 * It publishes an event (engine/events.h) before and after every op, in
 * forward and backward, for each kernel a backward rule runs, and
 * grad_ready for each parameter: the debugger blocks in them to pause, the
 * profiler timestamps them.
 * The graph may change between steps: call tw_eager_rebuild () and parameters
 * of nodes whose scope and shapes did not change are kept.
 *
 *   g_autoptr (tw_eager) ex = tw_eager_new (graph, params, &error);
 *   tw_eager_forward (ex, x, y, TRUE, step, &error);
 *   float loss = tw_eager_loss_value (ex);
 *   tw_params_zero_grad (params);
 *   tw_eager_backward (ex, &error);
 *
 * Ownership: the executor borrows the graph and the params store; both must
 * outlive it.  Tensors returned by getters are borrowed and live until the
 * next forward or tw_eager_release ().
 */
#pragma once

#include "engine/events.h"
#include "engine/graph.h"
#include "engine/params.h"

G_BEGIN_DECLS

#define TW_EXEC_ERROR (tw_exec_error_quark ())
GQuark tw_exec_error_quark (void);

typedef enum
{
  TW_EXEC_ERROR_GRAPH,      /* the graph has shape errors (message lists them) */
  TW_EXEC_ERROR_INPUT,      /* fed tensors do not match the graph's inputs */
  TW_EXEC_ERROR_KERNEL,     /* a kernel failed (message names the node) */
  TW_EXEC_ERROR_NAN,        /* non-finite loss */
  TW_EXEC_ERROR_STOPPED,    /* an event client asked to stop */
} tw_exec_error;

typedef enum
{
  TW_PHASE_FORWARD,
  TW_PHASE_BACKWARD,
  TW_PHASE_UPDATE,
} tw_phase;

typedef struct tw_eager tw_eager;

/* Infers shapes (symbolic batch) and creates missing parameters in params,
 * initialised from seed.  Fails with every shape error listed. */
tw_eager *tw_eager_new (tw_graph *graph, tw_params *params, guint64 seed, GError **error);
void tw_eager_free (tw_eager *ex);
/* After an edit of the graph: re-infer, keep matching parameters, create new ones. */
gboolean tw_eager_rebuild (tw_eager *ex, GError **error);
/* Run another graph (borrowed, as the first): tw_eager_rebuild on it. */
gboolean tw_eager_set_graph (tw_eager *ex, tw_graph *graph, GError **error);
/* Publish events (events.h) on bus; NULL publishes nothing.  The executor
 * takes a reference. */
void tw_eager_set_bus (tw_eager *ex, tw_bus *bus);
void tw_eager_set_num_threads (tw_eager *ex, int n);
/* Seed of the kernels' random streams (dropout); parameters are not touched. */
void tw_eager_set_seed (tw_eager *ex, guint64 seed);

/* Runs the graph on a batch.  labels may be NULL: then only the nodes the
 * graph's outputs need are run (no loss).  training selects dropout and
 * batch-norm behaviour and keeps the tape for backward. */
gboolean tw_eager_forward (tw_eager *ex, tw_tensor *data, tw_tensor *labels, gboolean training,
                           guint64 step, GError **error);
/* One graph input and the tensor fed to it (borrowed). */
typedef struct
{
  const char *input;          /* the id of an "input" node */
  tw_tensor *tensor;
} tw_feed;

/* The same with any number of inputs, each named by its node id (data,
 * labels and role "other" alike; an unknown name is an error, an input the
 * needed nodes read but that is not fed is one too).  with_loss: run the
 * loss node as well (its inputs must be fed). */
gboolean tw_eager_forward_feeds (tw_eager *ex, const tw_feed *feeds, int n_feeds,
                                 gboolean with_loss, gboolean training, guint64 step,
                                 GError **error);
/* Gradients of the loss into params (+=).  Needs a training forward with labels. */
gboolean tw_eager_backward (tw_eager *ex, GError **error);
/* The same, but each trainable parameter's gradient is set (=) to this
 * backward's gradient (zero where the loss does not reach it): no separate
 * zeroing pass, and weight gradients are taken over instead of copied. */
gboolean tw_eager_backward_set (tw_eager *ex, GError **error);
/* Backward from given gradients instead of the loss (a pipeline stage's
 * sub-graph, engine/train-pipe.c): out_grads[i].input names a value the
 * last training forward computed ("fc2", "split:1"; the loss node too),
 * out_grads[i].tensor its gradient (borrowed; any shape of the value's
 * size; the same value named twice: the gradients add).  set as in
 * tw_eager_backward_set (TRUE: parameter gradients =, FALSE: +=, which is
 * how micro-batches accumulate).  The loss's own gradient 1 is not added:
 * name the loss with the weight wanted (a micro-batch's share of the
 * batch) to start from it.
 *
 *   tw_eager_set_grad_inputs (ex, (const char *[]) { "fc1", NULL });   // a received value
 *   tw_eager_forward_feeds (ex, feeds, 2, FALSE, TRUE, step, &error);
 *   tw_eager_backward_from (ex, &(tw_feed) { "fc2", grad_fc2 }, 1, TRUE, &error);
 *   tw_tensor *g = tw_eager_input_grad (ex, "fc1");   // d(loss)/d(fc1), to send back
 */
gboolean tw_eager_backward_from (tw_eager *ex, const tw_feed *out_grads, int n, gboolean set,
                                 GError **error);
/* Inputs ("input" nodes, by id; NULL-terminated, copied; NULL: none, the
 * default) whose gradient backward computes, as if they were parameters'.
 * Kept across tw_eager_rebuild. */
void tw_eager_set_grad_inputs (tw_eager *ex, const char *const *input_ids);
/* After backward: the gradient of such an input, [batch, ...] as it was fed
 * (borrowed, until the next forward or release); NULL when input_id is not
 * one of them or no gradient reached it. */
tw_tensor *tw_eager_input_grad (tw_eager *ex, const char *input_id);
/* Drop the tape and all activations. */
void tw_eager_release (tw_eager *ex);

/* An inference forward (training FALSE, no loss) that no bus client watches
 * frees each value once the last node that reads it has run, keeping only
 * the graph's outputs: it then holds about what the compiled program's
 * arena holds instead of every activation.  keep TRUE keeps every value
 * until the next forward or release, for tw_eager_value on inner nodes
 * (default FALSE; forwards with training or a loss always keep them). */
void tw_eager_set_keep_values (tw_eager *ex, gboolean keep);

/* After forward: a node output ("fc3", "split:1"), borrowed, or NULL (also
 * for an inner node of an inference forward that freed it early: see
 * tw_eager_set_keep_values). */
tw_tensor *tw_eager_value (tw_eager *ex, const char *ref);
/* The prediction accuracy scores (tw_graph_prediction), borrowed; NULL
 * when the graph has none or the last run did not compute it. */
tw_tensor *tw_eager_prediction (tw_eager *ex);
/* The loss (0-d), borrowed, or NULL without labels. */
tw_tensor *tw_eager_loss (tw_eager *ex);
double tw_eager_loss_value (tw_eager *ex);
/* Peak bytes of activations and activation gradients held at once since the
 * executor was made or tw_eager_reset_peak () was called, plus the gradients
 * of all trainable parameters (which the eager executor keeps allocated). */
size_t tw_eager_peak_bytes (const tw_eager *ex);
void tw_eager_reset_peak (tw_eager *ex);

/* Does t fit the graph input `input` of type want (same dtype and rank, the
 * same sizes past the batch dimension)?  FALSE with TW_EXEC_ERROR_INPUT
 * naming the input otherwise.  Shared by both executors. */
gboolean tw_check_feed (const char *input, const tw_tinfo *want, const tw_tensor *t,
                        GError **error);

/* Create (or keep) the parameters the graph's nodes need.  Graph must be
 * inferred.  Parameters whose shape changed are re-initialised. */
gboolean tw_params_sync_graph (tw_params *params, const tw_graph *graph, guint64 seed,
                               GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_eager, tw_eager_free)

G_END_DECLS
