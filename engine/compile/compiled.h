/* compiled.h — the compiled (static-graph) executor.
 *
 * Turns a graph into static programs — one for training (forward, loss,
 * backward), one for inference — specialised to the batch shape, optimised
 * by the passes in program.h and planned into one arena, then runs them
 * with no allocation during a step.  Programs are cached by (kind, batch);
 * a new batch size (the last, smaller batch of an epoch) compiles a new
 * program and the cache notes why.
 *
 *   g_autoptr (tw_compiled) c = tw_compiled_new (graph, params, seed, &error);
 *   tw_compiled_set_optimizer (c, opt);
 *   tw_optimizer_begin_step (opt, lr);
 *   tw_compiled_run (c, TW_PROGRAM_STEP, x, y, step, &error);   // forward, backward, update
 *   double loss = tw_compiled_loss_value (c);
 *
 * (TW_PROGRAM_TRAIN instead keeps the gradients: tw_compiled_bind_grads ()
 * points the params' grads at them for an external update.)
 *
 * A training program can also start from given gradients of chosen values
 * instead of the loss, give the gradients of chosen inputs and add its
 * parameter gradients into the params store (tw_compiled_set_grads, as a
 * pipeline stage needs), its forward and backward parts run apart, with
 * other work between them; the arena holds the forward's values meanwhile
 * (one tw_compiled per run in flight):
 *
 *   tw_compiled_set_grads (c, &(tw_grad_spec) { .seeds = (const char *[]) { "fc2", NULL },
 *                                               .grad_inputs = (const char *[]) { "x", NULL },
 *                                               .accumulate = TRUE });
 *   tw_compiled_forward_feeds (c, feeds, 1, step, &error);        // fc2 = ...
 *   tw_compiled_backward_from (c, &(tw_feed) { "fc2", g }, 1, TRUE, &error);
 *   tw_tensor *gx = tw_compiled_input_grad (c, "x");               // d/dx of <fc2, g>
 *
 * Ownership: the executor borrows the graph and the params store (they must
 * outlive it) and owns its programs and arenas.  Tensors returned by getters
 * are borrowed views into the arena, valid until the next run.
 */
#pragma once

#include "engine/compile/program.h"

G_BEGIN_DECLS

typedef struct tw_compiled tw_compiled;

/* Creates missing parameters (as the eager executor does) and checks the graph. */
tw_compiled *tw_compiled_new (tw_graph *graph, tw_params *params, guint64 seed, GError **error);
void tw_compiled_free (tw_compiled *c);

void tw_compiled_set_passes (tw_compiled *c, tw_pass_flags passes);   /* default TW_PASS_ALL */
void tw_compiled_set_guards (tw_compiled *c, gboolean guards);       /* guard bytes (tests) */
void tw_compiled_set_num_threads (tw_compiled *c, int n);
void tw_compiled_set_seed (tw_compiled *c, guint64 seed);
/* Publish events (engine/events.h) on bus (a reference is taken; NULL: none). */
void tw_compiled_set_bus (tw_compiled *c, tw_bus *bus);
/* Run another graph (same parameters store) from the next run on: every
 * cached program is dropped.  FALSE, with the errors, when it does not infer. */
gboolean tw_compiled_set_graph (tw_compiled *c, tw_graph *graph, GError **error);
/* grad_ready of a weight whose gradient is fused into its update carries
 * the gradient's norm (computed in the fused kernel, a pass over each block)
 * only when this is on (default off). */
void tw_compiled_set_grad_norms (tw_compiled *c, gboolean on);
/* A client asked to stop after the run had updated a parameter: the run
 * finished the step instead (no parameter is left half-updated) and returns
 * TRUE; this says so once, and clears. */
gboolean tw_compiled_stop_pending (tw_compiled *c);
/* Drop every cached program (the next run compiles again). */
void tw_compiled_invalidate (tw_compiled *c);
/* Nodes that fusion must leave alone, so that their values exist and are
 * whole at the end of their instruction (breakpoints, requested tensors).
 * NULL or empty: none.  Returns TRUE when the set changed (programs are then
 * rebuilt on the next run). */
gboolean tw_compiled_set_keep_nodes (tw_compiled *c, const char *const *node_ids);
/* What TRAIN programs differentiate from the next run on (tw_grad_spec,
 * copied; NULL: the loss, into kept gradient slots).  Cached programs are
 * dropped. */
void tw_compiled_set_grads (tw_compiled *c, const tw_grad_spec *spec);
/* The optimizer that STEP programs update parameters with; the caller calls
 * tw_optimizer_begin_step () before each STEP run.  Borrowed. */
void tw_compiled_set_optimizer (tw_compiled *c, struct tw_optimizer *opt);
/* Without this, a run stops with TW_EXEC_ERROR_NAN as soon as the loss is not
 * finite — before any parameter is updated. */
void tw_compiled_set_allow_nan (tw_compiled *c, gboolean allow);

/* The program for (kind, batch), compiled on first use.  Borrowed. */
tw_program *tw_compiled_program (tw_compiled *c, tw_program_kind kind, int64_t batch,
                                 GError **error);

/* Run the program for x's batch size.  labels may be NULL for INFER. */
gboolean tw_compiled_run (tw_compiled *c, tw_program_kind kind, tw_tensor *x, tw_tensor *labels,
                          guint64 step, GError **error);
/* The same with any number of inputs, each named by its node id (as
 * tw_eager_forward_feeds): every input the program reads must be fed. */
gboolean tw_compiled_run_feeds (tw_compiled *c, tw_program_kind kind, const tw_feed *feeds,
                                int n_feeds, guint64 step, GError **error);
/* The forward part of the TRAIN program for the feeds' batch (up to
 * tw_program_backward_start: outputs, loss and prediction are readable
 * after it, as tw_compiled_run leaves them); its backward part waits for
 * tw_compiled_backward_from.  Dropout and batch-norm statistics are those
 * of a whole TRAIN run at this step (no forward is recomputed). */
gboolean tw_compiled_forward_feeds (tw_compiled *c, const tw_feed *feeds, int n_feeds,
                                    guint64 step, GError **error);
/* The backward part of the program the last tw_compiled_forward_feeds
 * ran, from the gradients of its seeds (tw_grad_spec.seeds: every seed
 * given, out_grads[i].input naming it; any shape of the value's size; a
 * seed named twice: the sum; borrowed for the call).  set: the program's
 * accumulate instructions assign (=) rather than add (+=) the parameters'
 * gradients (as tw_eager_backward_from's set).  A plain
 * tw_compiled_run_feeds of an accumulating program assigns. */
gboolean tw_compiled_backward_from (tw_compiled *c, const tw_feed *out_grads, int n,
                                    gboolean set, GError **error);
/* After a training run: the gradient of an input named in
 * tw_grad_spec.grad_inputs, shaped as it was fed (borrowed from the arena,
 * until the next run); NULL when no gradient reached it. */
tw_tensor *tw_compiled_input_grad (tw_compiled *c, const char *input_id);
/* After a run: a graph output by its ref (as tw_graph_set_outputs names
 * it: "fc2", "split:1"), borrowed from the arena until the next run; NULL
 * when it is none of them. */
tw_tensor *tw_compiled_output (tw_compiled *c, const char *ref);
tw_tensor *tw_compiled_loss (tw_compiled *c);
double tw_compiled_loss_value (tw_compiled *c);
tw_tensor *tw_compiled_prediction (tw_compiled *c);
/* After a TRAIN run: point every trainable parameter's grad at the program's
 * gradient for it (zero-filled where the loss does not reach it).  Not for
 * accumulating programs (tw_grad_spec.accumulate), whose gradients are in
 * the store already. */
void tw_compiled_bind_grads (tw_compiled *c);
/* FALSE when guard bytes around arena slots were overwritten (guards on). */
gboolean tw_compiled_check_guards (tw_compiled *c, GError **error);

/* The kernels' scratch memory (sized by the first run; borrowed). */
const tw_workspace *tw_compiled_workspace (tw_compiled *c);

/* Cache notes ("train, batch 64: compiled (first use) in 3.1 ms"), in order. */
const GPtrArray *tw_compiled_notes (tw_compiled *c);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_compiled, tw_compiled_free)

/* Bytes of the arenas of every compiled program alive in the process (each
 * program, one per kind and batch size, plans one arena). */
guint64 tw_compiled_arena_bytes (void);

G_END_DECLS
