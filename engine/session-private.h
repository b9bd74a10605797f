/* session-private.h — what the session's files share (engine/session.c:
 * the worker; session-commands.c: the callers' side; session-watch.c: the
 * NaN/Inf watch).  Not for other modules. */
#pragma once

#include "engine/rate.h"
#include "engine/session.h"

G_BEGIN_DECLS

typedef enum
{
  CMD_RUN,
  CMD_PAUSE,
  CMD_STEP_OP,
  CMD_STEP_LAYER,
  CMD_STEP_ITER,
  CMD_STOP,
  CMD_SET_LR,
  CMD_SET_MOMENTUM,
  CMD_SET_WD,
  CMD_SET_MODE,
  CMD_FREEZE,
  CMD_GRAPH,
  CMD_BREAK_ADD,
  CMD_BREAK_CLEAR,
  CMD_WATCH,
  CMD_REQUEST,
  CMD_SUBSCRIBE,
  CMD_UNSUBSCRIBE,
  CMD_SAVE_WEIGHTS,
} cmd_kind;

typedef enum
{
  BREAK_NAN,
  BREAK_INF,
  BREAK_LOSS,
  BREAK_GRAD_NORM,
  BREAK_NODE,
  BREAK_STEP,
} break_kind;

typedef struct
{
  break_kind kind;
  double threshold;
  char *node;
  guint phases;               /* bit TW_PHASE_FORWARD / _BACKWARD */
  int64_t step;               /* 1-based */
  char *spec;                 /* as written */
} breakpoint;

typedef struct
{
  cmd_kind kind;
  double value;
  gboolean flag;
  char *node;
  tw_graph *graph;
  breakpoint bp;
  /* SUBSCRIBE, UNSUBSCRIBE */
  guint id, mask;
  tw_event_fn fn;
  gpointer user_data;
  GDestroyNotify destroy;
} command;

typedef enum
{
  GO_FREE,
  GO_STEP_OP,
  GO_STEP_LAYER,
  GO_STEP_ITER,
} go_mode;

typedef struct
{
  tw_event_kind kind;
  int phase;
  const char *label;
  const char *node;
} trace_entry;

typedef struct
{
  tw_tensor *tensor;          /* borrowed: alive until the node's backward ends */
  const char *label;
} deferred_check;

struct tw_session
{
  /* Shared with callers, under lock. */
  GMutex lock;
  tw_session_state state;
  gboolean started;
  tw_graph *shadow;           /* the graph as callers last set it, for checks */
  GAsyncQueue *cmds;
  gint n_cmds;                /* atomic: commands queued */
  GAsyncQueue *snaps;
  gint n_metrics;             /* atomic: METRICS snapshots queued */
  gint dropped;               /* atomic: METRICS snapshots dropped since the last kept */
  GThread *thread;
  GCancellable *cancel;       /* cancelled by stop and free: ends a preparation early */

  /* tw_session_new_deferred's source, prepared by the worker (then prepared
   * is TRUE and these are freed); the trainer is NULL until then. */
  gboolean prepared;
  char *src_data;
  gboolean src_want_test;
  char *src_init_weights;

  /* The worker's. */
  tw_model *model;
  tw_dataset *train, *val, *test;
  tw_session_options opt;
  tw_trainer *trainer;
  tw_bus *bus;
  go_mode go;
  gboolean pause_requested;
  gboolean stop_requested;
  gboolean in_eval;
  GArray *breaks;             /* breakpoint */
  GHashTable *watch;          /* node id → TRUE */
  GHashTable *inspect;        /* node ids kept unfused, as last set on the compiled executor */
  /* Changes waiting for the next iteration boundary. */
  gboolean cfg_dirty;
  tw_optimizer_config cfg;
  gboolean mode_dirty;
  tw_exec_mode mode;
  GPtrArray *freeze;          /* command* (CMD_FREEZE) */
  tw_graph *new_graph;
  /* This iteration. */
  GArray *trace;              /* trace_entry */
  int backward_kernels;       /* kernels seen inside the current eager backward */
  double *grad_sq;            /* [n params] squared gradient norms (NaN: unknown) */
  int n_grad;
  tw_tensor *labels;          /* borrowed, this step's */
  int64_t correct;
  gboolean have_accuracy;
  char *loss_id, *pred_ref;
  char *fail_message;         /* the NaN watch's finding */
  GArray *deferred;           /* deferred_check: this eager backward's param-shaped outputs */
  GHashTable *grad_producer;  /* parameter name → the kernel that made its gradient */
  gboolean stop_note;         /* a stop came during the updates */
  GArray *times;              /* double ms per step */
  tw_rate *rate;              /* samples/s and the time left, from finished steps */
  int64_t samples;            /* samples of the steps in times */
  int64_t per_epoch, total;
  int64_t step_break_done;    /* the step a step=N breakpoint last paused before */
  guint client;               /* the session's own subscription to its bus */
  int paused_phase;           /* tw_phase of the pause, -1 between iterations */
  guint notes_seen;           /* compiled-executor notes already forwarded */
  /* CMD_SAVE_WEIGHTS's answer, under lock. */
  GCond reply;
  gboolean reply_ready;
  GError *reply_error;
};

/* session-commands.c */
void ses_snap_tensor_free (gpointer p);
tw_snapshot *ses_snap_new (tw_session *s, tw_snapshot_kind kind);
/* Queue a snapshot for the callers (metrics dropped past max_queued). */
void ses_push (tw_session *s, tw_snapshot *sn);
void ses_note (tw_session *s, const char *fmt, ...) G_GNUC_PRINTF (2, 3);
/* Append a host copy of t named name to a (no-op for NULL). */
/* A copy of t in a, named and described (tw_snapshot_tensor.what) with the
 * session's graph and parameters. */
void ses_add_tensor (tw_session *s, GPtrArray *a, const char *name, const char *role,
                     const tw_tensor *t);
void ses_breakpoint_clear (breakpoint *b);
gboolean ses_refuse (GError **error, const char *what, tw_session_state st);
void ses_send (tw_session *s, command *c);
command *ses_cmd_new (cmd_kind kind);
void ses_cmd_free (command *c);
gboolean ses_terminal (tw_session_state st);
void ses_set_state (tw_session *s, tw_session_state st);

/* session.c */
gpointer ses_worker (gpointer data);
/* Cancel a preparation under way (stop, free); any thread. */
void ses_cancel (tw_session *s);
/* A TENSOR snapshot with a copy of the named value (a parameter, "grad:P",
 * or in eager mode a node output of this iteration), or a NOTE saying why
 * not.  On the worker while it waits, or on the caller's thread before the
 * worker exists. */
void ses_request_tensor (tw_session *s, const char *name);
/* Pause here: tell the callers where and why (reason taken), and wait for
 * the next go.  FALSE: stop. */
void ses_forward_compile_notes (tw_session *s);
gboolean ses_pause_here (tw_session *s, const tw_event *ev, char *reason);

/* session-watch.c */
/* 1: NaN, 2: Inf (and no NaN), 0: finite or not a float tensor. */
int ses_nonfinite (tw_tensor *t);
gboolean ses_has_break (tw_session *s, break_kind kind);
/* The NaN watch at the end of an op, of an eager node's backward, of an
 * eager update; FALSE: stop the run (s->fail_message says why); *paused_ok
 * FALSE: a pause there was told to stop. */
gboolean ses_watch_nan (tw_session *s, const tw_event *ev, gboolean *paused_ok);
gboolean ses_watch_deferred (tw_session *s, const tw_event *ev, gboolean *paused_ok);
gboolean ses_watch_update (tw_session *s, const tw_event *ev, gboolean *paused_ok);

G_END_DECLS
