/* session.h — a training session: one model trained on its own thread,
 * driven by commands and watched through snapshots.
 *
 * The session owns copies of the model (graph and recipe) and the datasets
 * it is given, and a trainer over them.  Its worker thread runs the epoch
 * loop (the same loop `twb train` and the GUI use); callers never touch the
 * worker's tensors: everything comes out as copies (tw_snapshot) through a
 * queue, which the GUI drains on its main loop and the command line in a
 * plain loop.
 *
 *   tw_session_options o;
 *   tw_session_options_init (&o);
 *   g_autoptr (tw_session) s = tw_session_new (model, train, val, test, &o, &error);
 *   tw_session_add_breakpoint (s, "node=fc1:forward", &error);
 *   tw_session_run (s, &error);
 *   for (;;)
 *     {
 *       g_autoptr (tw_snapshot) snap = tw_session_pop (s, -1);
 *       if (snap->kind == TW_SNAP_PAUSED)   // position, tensors of the op
 *         tw_session_step_op (s, &error);
 *       if (snap->kind == TW_SNAP_FINISHED)
 *         break;
 *     }
 *
 * Where it stops.  Pauses happen between two ops, never inside one: after an
 * op of the forward or backward, after a parameter's update, or between two
 * iterations.  Stop is answered between two ops too, but once a step has
 * started updating parameters it is finished first, so no parameter is ever
 * half-updated (the session says "finished the step's updates").
 *
 * What an "op" is for stepping.  Eager: one forward op (a graph node), one
 * kernel of a backward rule (a node whose rule runs none counts as one op),
 * one parameter update.  Compiled: one instruction (a fused one covers and
 * names several nodes).  Step layer runs to the end of the next node's work
 * in its phase (all its backward kernels in eager; all the instructions
 * that name it first in compiled).  Step iteration runs to the end of the
 * iteration.
 *
 * Changes.  Hyper-parameters, freezing and graph replacement apply at the
 * next iteration boundary.  A replaced graph keeps the weights and optimizer
 * state of every node whose op, attributes, inputs and parameter shapes are
 * unchanged, bit for bit; the others are initialised again, and a
 * TW_SNAP_GRAPH_CHANGED snapshot lists which.  A graph that does not infer
 * is refused at once, the error naming the nodes, and the session goes on
 * with its old graph.
 *
 * Inspecting compiled code.  A node with a breakpoint, or watched with
 * tw_session_watch, is left out of fusion in compiled mode so that its
 * values exist when its instruction ends (the program is rebuilt, and a
 * TW_SNAP_NOTE says which nodes).
 *
 * Ownership: tw_session_new copies the model and takes the datasets.
 * Snapshots popped are the caller's (tw_snapshot_free).  tw_session_free
 * stops the worker (at the next op) and frees everything.
 */
#pragma once

#include "engine/classes.h"
#include "engine/train.h"

G_BEGIN_DECLS

#define TW_SESSION_ERROR (tw_session_error_quark ())
GQuark tw_session_error_quark (void);

typedef enum
{
  TW_SESSION_ERROR_STATE,     /* a command at the wrong time (step while running) */
  TW_SESSION_ERROR_GRAPH,     /* a graph that does not fit, or no such node */
  TW_SESSION_ERROR_ARG,       /* a bad breakpoint or value */
} tw_session_error_code;

typedef enum
{
  TW_SESSION_IDLE,            /* made, not started */
  TW_SESSION_RUNNING,
  TW_SESSION_PAUSED,
  TW_SESSION_FINISHED,        /* every epoch (or max_steps) done */
  TW_SESSION_STOPPED,         /* stopped by a command or an event client */
  TW_SESSION_FAILED,          /* an error (snapshot's message says which) */
} tw_session_state;

const char *tw_session_state_name (tw_session_state s);

typedef struct
{
  int64_t max_steps;          /* 0: every epoch of the recipe */
  int threads;                /* the worker's CPU threads (default 1) */
  tw_exec_mode mode;
  gboolean allow_nan;         /* go on through non-finite values */
  gboolean nan_watch;         /* default TRUE: a NaN or Inf produced by any op fails the run
                               * naming that op (or pauses there with a nan/inf breakpoint) */
  gboolean grad_norms;        /* default TRUE: per-parameter gradient norms in metrics */
  gboolean evaluate_test;     /* default TRUE when a test set is given */
  int64_t eval_batch;         /* default 256 */
  char *checkpoint;           /* save after each epoch and at the end (NULL: never); owned */
  int64_t epoch0, batch0;     /* where to start (after a resume) */
  int max_queued;             /* metric snapshots queued before new ones are dropped (1024) */
  int class_samples;          /* > 0: each EPOCH snapshot of a classifier carries a class report
                               * (engine/classes.h) on the test set (else the validation set)
                               * with this many samples; default 0 */
  struct tw_comm *comm;       /* data parallel over this communicator (borrowed; it must
                               * outlive the session), or NULL: tw_trainer_set_dist before the
                               * first step; checkpoints are then written by rank 0 only */
  tw_dist_options dist;
  tw_pipeline_options pipeline;  /* pipeline.stages > 0 with comm: pipeline (hybrid when comm
                                  * has more ranks than stages) instead of data parallel:
                                  * tw_trainer_set_pipeline before the first step */
} tw_session_options;

void tw_session_options_init (tw_session_options *o);
void tw_session_options_clear (tw_session_options *o);

typedef enum
{
  TW_SNAP_METRICS,            /* after each step */
  TW_SNAP_EPOCH,              /* after each epoch: validation (NaN without a validation set) */
  TW_SNAP_PAUSED,             /* the run is paused: position, reason, tensors */
  TW_SNAP_TENSOR,             /* a watched or requested tensor */
  TW_SNAP_GRAPH_CHANGED,      /* a replaced graph was applied: kept / reinitialised nodes */
  TW_SNAP_NOTE,               /* something the session did on its own, in message */
  TW_SNAP_FINISHED,           /* the worker is done: state, results, error */
  TW_SNAP_PREPARING,          /* tw_session_new_deferred: what the worker prepares now, in
                               * message ("Preparing the data (synthetic)…") */
  TW_SNAP_READY,              /* tw_session_new_deferred: prepared; total_steps, per_epoch */
} tw_snapshot_kind;

typedef struct
{
  char *name;                 /* "fc1", "fc1.weight", "grad:fc1"; a value of no node's
                               * (inside a backward rule, a compiled temporary) by what made
                               * it: "matmul(grad:fc1, fc1.weight)" (tw_value_name) */
  char *role;                 /* "input", "output", "parameter", "gradient" */
  char *what;                 /* the name in words: "gradient of fc1's output", "parameter
                               * fc1.weight", "output of relu1 (relu)", "made by matmul" */
  tw_tensor *tensor;          /* a copy, owned */
} tw_snapshot_tensor;

typedef struct
{
  tw_snapshot_kind kind;
  tw_session_state state;     /* of the session when the snapshot was made */
  int64_t step;               /* steps done (METRICS: including this one) */
  int64_t epoch;              /* 0-based */
  /* METRICS */
  double loss, accuracy;      /* of the batch; accuracy NaN when the model has no classes */
  double lr, step_ms;
  double samples_per_s;       /* over the latest finished steps, pauses and evaluations left
                               * out (engine/rate.h) */
  double eta_s;               /* seconds until the last step ends, by the same steps; -1 unknown */
  double comm_bytes;          /* data parallel: bytes this rank sent in the step; NAN alone */
  char **param_names;         /* NULL-terminated, with grad_norm[i] for each (NaN: unknown) */
  double *grad_norm;
  int n_ranks;                /* over a communicator: rank_step_ms[n_ranks], every rank's
                               * compute time of the step (tw_trainer_rank_step_ms); else 0 */
  double *rank_step_ms;
  /* EPOCH and FINISHED */
  double val_loss, val_accuracy, test_loss, test_accuracy, train_loss;
  tw_class_report *classes;      /* EPOCH with options.class_samples: owned, or NULL */
  /* PAUSED: where, and why */
  int64_t iteration;          /* 1-based iteration the position is in */
  int phase;                  /* tw_phase, or -1 between iterations */
  char **nodes;               /* node ids the op covers (NULL-terminated) */
  char *op;                   /* the op or instruction label */
  gboolean compiled;
  char *reason;               /* "breakpoint node=fc1:forward", "step op", "NaN in fc1 (forward)" */
  char **trace;               /* ops of this iteration so far, oldest first ("forward fc1 linear") */
  GPtrArray *tensors;         /* tw_snapshot_tensor*: PAUSED, TENSOR */
  /* READY: the steps the run will take (tw_session_total_steps), batches per epoch */
  int64_t total_steps, per_epoch;
  /* GRAPH_CHANGED */
  tw_graph_change change;
  /* NOTE, FINISHED (error), PAUSED */
  char *message;
  guint dropped;              /* METRICS snapshots dropped before this one (slow reader) */
} tw_snapshot;

void tw_snapshot_free (tw_snapshot *s);

typedef struct tw_session tw_session;

/* model is copied; train (required), val and test (may be NULL) are taken. */
tw_session *tw_session_new (const tw_model *model, tw_dataset *train, tw_dataset *val,
                            tw_dataset *test, const tw_session_options *options, GError **error);
void tw_session_free (tw_session *s);

/* Where tw_session_new_deferred's worker finds what it prepares. */
typedef struct
{
  const char *data;           /* a dataset spec overriding the recipe's, or NULL
                               * (tw_datasets_open_for_training) */
  gboolean want_test;         /* open the test split too */
  const char *init_weights;   /* a state_dict to start from (not strict), or NULL */
} tw_session_source;

/* A session that does nothing slow on the caller's thread: it copies the
 * model and checks that it has a data input and a loss (else NULL with an
 * error), and that is all.  The worker, started by the first go command,
 * opens the datasets (source->data, or the recipe's), makes the trainer
 * (the parameters' initialisation) and loads source->init_weights before its
 * first step, saying what it does in TW_SNAP_PREPARING snapshots and then
 * TW_SNAP_READY.  A failure there ends the run (TW_SNAP_FINISHED, FAILED,
 * the message naming the dataset, the input or the file); a stop or
 * tw_session_free cancels it soon (between those stages, and between the
 * samples of a synthetic set), STOPPED.  Commands sent meanwhile (a
 * breakpoint, a freeze, pause) are taken once it is ready.  Until READY
 * the trainer is NULL (tw_session_trainer), tw_session_total_steps is 0 and
 * what works "before the first command" on the trainer (loading weights or
 * checkpoints, request, save_weights) is refused. */
tw_session *tw_session_new_deferred (const tw_model *model, const tw_session_source *source,
                                     const tw_session_options *options, GError **error);

/* Before the first command only: load a checkpoint (weights, optimizer
 * state, step; options epoch0/batch0 follow it). */
gboolean tw_session_load_checkpoint (tw_session *s, const char *path, GError **error);
/* Before the first command only: parameter values from a safetensors file. */
gboolean tw_session_load_weights (tw_session *s, const char *path, GError **error);
/* Before the first command only: start from a state_dict (a PyTorch one
 * saved as safetensors loads as it is), reporting missing and unexpected
 * keys; see tw_params_load_state_dict in engine/params.h. */
gboolean tw_session_init_weights (tw_session *s, const char *path, gboolean strict,
                                  tw_state_dict_report *report, GError **error);

/* The parameters and buffers as a state_dict (tw_trainer_save_weights):
 * before the first command, while paused (between iterations or inside the
 * forward or backward, not inside the updates) or after the end; refused
 * while running.  Blocks until written. */
gboolean tw_session_save_weights (tw_session *s, const char *path, GError **error);

tw_session_state tw_session_get_state (tw_session *s);
/* Steps the run will take: epochs × batches per epoch, or max_steps if fewer. */
int64_t tw_session_total_steps (tw_session *s);

/* Commands.  Each returns FALSE with TW_SESSION_ERROR_STATE when it makes no
 * sense now (stepping while running, pausing what is not running, anything
 * after the end), and never blocks. */
gboolean tw_session_run (tw_session *s, GError **error);          /* start or continue */
gboolean tw_session_pause (tw_session *s, GError **error);
gboolean tw_session_step_op (tw_session *s, GError **error);
gboolean tw_session_step_layer (tw_session *s, GError **error);
gboolean tw_session_step_iteration (tw_session *s, GError **error);
gboolean tw_session_stop (tw_session *s, GError **error);
/* Hyper-parameters: from the next step on. */
gboolean tw_session_set_lr (tw_session *s, double lr, GError **error);
gboolean tw_session_set_momentum (tw_session *s, double momentum, GError **error);
gboolean tw_session_set_weight_decay (tw_session *s, double wd, GError **error);
gboolean tw_session_set_mode (tw_session *s, tw_exec_mode mode, GError **error);
/* From the next step on; the node must have parameters. */
gboolean tw_session_freeze (tw_session *s, const char *node_id, gboolean frozen, GError **error);
/* graph is copied.  Only while idle or paused; checked at once (shape
 * errors name the nodes), applied at the next iteration boundary. */
gboolean tw_session_replace_graph (tw_session *s, const tw_graph *graph, GError **error);

/* Breakpoints, as `twb train --break-on` writes them: "nan", "inf",
 * "loss>X", "grad-norm>X", "node=ID", "node=ID:forward", "node=ID:backward",
 * "step=N" (1-based: pause before iteration N).  Checked at once. */
gboolean tw_session_add_breakpoint (tw_session *s, const char *spec, GError **error);
void tw_session_clear_breakpoints (tw_session *s);
/* Whether spec is a breakpoint as above, without a session (node ids are
 * not looked up). */
gboolean tw_session_check_breakpoint (const char *spec, GError **error);
/* Copies of a node's outputs (forward) and their gradients (backward) as
 * TW_SNAP_TENSOR each time its op ends; NULL clears the list. */
gboolean tw_session_watch (tw_session *s, const char *node_id, GError **error);

/* A copy of one value, as a TW_SNAP_TENSOR (or a TW_SNAP_NOTE saying why
 * not): a parameter or buffer ("fc1.weight", "bn1.running_mean"), its
 * gradient ("grad:fc1.weight"), its optimizer state ("state:fc1.weight:0"),
 * or — eager mode, while paused inside an iteration — a node's output
 * ("fc1", "split:1").  Only while paused, before the first command, or after
 * the end. */
gboolean tw_session_request (tw_session *s, const char *name, GError **error);

/* Snapshots.  timeout_us < 0 waits; 0 does not.  NULL on timeout. */
tw_snapshot *tw_session_pop (tw_session *s, gint64 timeout_us);

/* The session's trainer, for reading results after FINISHED (or before the
 * first command).  Borrowed; never touch it while the worker runs.  NULL
 * for a deferred session until it is prepared (one that failed or stopped
 * while preparing never has one). */
tw_trainer *tw_session_trainer (tw_session *s);
/* The worker's bus.  Borrowed.  Subscribe to it directly only before the
 * first command or after FINISHED; while the session runs, use
 * tw_session_subscribe. */
tw_bus *tw_session_bus (tw_session *s);
/* A client of the session's events (engine/events.h) at any time: while the
 * worker runs it takes the client at its next op (the callback then runs on
 * the worker's thread).  Returns the id for tw_session_unsubscribe, which is
 * as safe; destroy (may be NULL) runs when the client goes. */
guint tw_session_subscribe (tw_session *s, guint mask, tw_event_fn fn, gpointer user_data,
                            GDestroyNotify destroy);
void tw_session_unsubscribe (tw_session *s, guint id);

/* Per-step wall times (ms) of the run so far, after FINISHED.  Borrowed. */
const GArray *tw_session_step_times (tw_session *s);
/* Samples those steps took, in all (the rows of their batches: a batch size
 * larger than the data counts what was there). */
int64_t tw_session_step_samples (tw_session *s);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_session, tw_session_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_snapshot, tw_snapshot_free)

G_END_DECLS
