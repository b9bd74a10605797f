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
tw_tensor *tw_compiled_loss (tw_compiled *c);
double tw_compiled_loss_value (tw_compiled *c);
tw_tensor *tw_compiled_prediction (tw_compiled *c);
/* After a TRAIN run: point every trainable parameter's grad at the program's
 * gradient for it (zero-filled where the loss does not reach it). */
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
