/* session.c — a training session on its own thread (session.h).
 *
 * The worker runs the epoch loop and is a client of its trainer's event bus:
 * every op event is a place where it may pause (block for the next command),
 * check breakpoints and the NaN watch, or copy watched tensors.  Commands
 * arrive through a queue; the caller-side functions check the state under a
 * lock and refuse what makes no sense, so nothing blocks. */
#define G_LOG_DOMAIN "twb-session"

#include "engine/session.h"
#include "engine/cpu/scan.h"
#include "engine/device.h"

#include <math.h>
#include <string.h>

G_DEFINE_QUARK (tw-session-error-quark, tw_session_error)

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
  int64_t per_epoch, total;
  guint client;               /* the session's own subscription to its bus */
};

/* gradients are only looked at (and, in compiled mode, their norms only
 * computed) when metrics or a breakpoint need them. */
static guint
session_mask (tw_session *s)
{
  guint m = TW_EV_MASK_OPS | TW_EV_BIT (TW_EV_KERNEL) | TW_EV_BIT (TW_EV_ITERATION);
  if (s->opt.grad_norms)
    m |= TW_EV_BIT (TW_EV_GRAD_READY);
  return m;
}

/* ---- options, snapshots ------------------------------------------------------ */

void
tw_session_options_init (tw_session_options *o)
{
  memset (o, 0, sizeof *o);
  o->threads = 1;
  o->nan_watch = TRUE;
  o->grad_norms = TRUE;
  o->evaluate_test = TRUE;
  o->eval_batch = 256;
  o->max_queued = 1024;
}

void
tw_session_options_clear (tw_session_options *o)
{
  g_clear_pointer (&o->checkpoint, g_free);
}

const char *
tw_session_state_name (tw_session_state s)
{
  static const char *const names[] = { "idle", "running", "paused", "finished", "stopped",
                                        "failed" };
  return s <= TW_SESSION_FAILED ? names[s] : "?";
}

static void
snap_tensor_free (gpointer p)
{
  tw_snapshot_tensor *t = p;
  g_free (t->name);
  g_free (t->role);
  tw_tensor_unref (t->tensor);
  g_free (t);
}

void
tw_snapshot_free (tw_snapshot *s)
{
  if (s == NULL)
    return;
  g_strfreev (s->param_names);
  g_free (s->grad_norm);
  g_strfreev (s->nodes);
  g_free (s->op);
  g_free (s->reason);
  g_strfreev (s->trace);
  if (s->tensors)
    g_ptr_array_unref (s->tensors);
  tw_graph_change_clear (&s->change);
  g_free (s->message);
  g_free (s);
}

static tw_snapshot *
snap_new (tw_session *s, tw_snapshot_kind kind)
{
  tw_snapshot *sn = g_new0 (tw_snapshot, 1);
  sn->kind = kind;
  sn->step = s->trainer ? tw_trainer_step_count (s->trainer) : 0;
  sn->phase = -1;
  sn->loss = sn->accuracy = sn->val_loss = sn->val_accuracy = NAN;
  sn->test_loss = sn->test_accuracy = sn->train_loss = NAN;
  g_mutex_lock (&s->lock);
  sn->state = s->state;
  g_mutex_unlock (&s->lock);
  return sn;
}

static void
push (tw_session *s, tw_snapshot *sn)
{
  if (sn->kind == TW_SNAP_METRICS)
    {
      /* A slow reader costs dropped metrics, never memory or speed. */
      if (g_atomic_int_get (&s->n_metrics) >= s->opt.max_queued)
        {
          g_atomic_int_inc (&s->dropped);
          tw_snapshot_free (sn);
          return;
        }
      sn->dropped = (guint) g_atomic_int_and (&s->dropped, 0);
      g_atomic_int_inc (&s->n_metrics);
    }
  g_async_queue_push (s->snaps, sn);
}

static void
note (tw_session *s, const char *fmt, ...) G_GNUC_PRINTF (2, 3);

static void
note (tw_session *s, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  tw_snapshot *sn = snap_new (s, TW_SNAP_NOTE);
  sn->message = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  push (s, sn);
}

static void
add_tensor (GPtrArray *a, const char *name, const char *role, const tw_tensor *t)
{
  if (t == NULL)
    return;
  tw_snapshot_tensor *st = g_new0 (tw_snapshot_tensor, 1);
  g_autoptr (tw_tensor) host = tw_tensor_to_host ((tw_tensor *) t);
  st->name = g_strdup (name);
  st->role = g_strdup (role);
  st->tensor = tw_tensor_clone (host);
  g_ptr_array_add (a, st);
}

/* ---- breakpoints --------------------------------------------------------------- */

static void
breakpoint_clear (breakpoint *b)
{
  g_clear_pointer (&b->node, g_free);
  g_clear_pointer (&b->spec, g_free);
}

static gboolean
parse_number (const char *text, double *out)
{
  char *end = NULL;
  *out = g_ascii_strtod (text, &end);
  return end != text && *end == '\0' && isfinite (*out);
}

static gboolean
breakpoint_parse (const char *spec, breakpoint *b, GError **error)
{
  memset (b, 0, sizeof *b);
  b->phases = (1u << TW_PHASE_FORWARD) | (1u << TW_PHASE_BACKWARD);
  if (strcmp (spec, "nan") == 0)
    b->kind = BREAK_NAN;
  else if (strcmp (spec, "inf") == 0)
    b->kind = BREAK_INF;
  else if (g_str_has_prefix (spec, "loss>"))
    {
      b->kind = BREAK_LOSS;
      if (!parse_number (spec + 5, &b->threshold))
        goto bad;
    }
  else if (g_str_has_prefix (spec, "grad-norm>"))
    {
      b->kind = BREAK_GRAD_NORM;
      if (!parse_number (spec + 10, &b->threshold))
        goto bad;
    }
  else if (g_str_has_prefix (spec, "step="))
    {
      double v;
      b->kind = BREAK_STEP;
      if (!parse_number (spec + 5, &v) || v < 1 || v != floor (v))
        goto bad;
      b->step = (int64_t) v;
    }
  else if (g_str_has_prefix (spec, "node=") && spec[5] != '\0')
    {
      b->kind = BREAK_NODE;
      const char *colon = strrchr (spec + 5, ':');
      if (colon && (strcmp (colon, ":forward") == 0 || strcmp (colon, ":backward") == 0))
        {
          b->node = g_strndup (spec + 5, colon - (spec + 5));
          b->phases = strcmp (colon, ":forward") == 0 ? 1u << TW_PHASE_FORWARD
                                                       : 1u << TW_PHASE_BACKWARD;
        }
      else
        b->node = g_strdup (spec + 5);
      if (b->node[0] == '\0')
        goto bad;
    }
  else
    goto bad;
  b->spec = g_strdup (spec);
  return TRUE;

bad:
  breakpoint_clear (b);
  g_set_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_ARG,
               "breakpoint '%s': expected nan, inf, loss>X, grad-norm>X, node=ID[:forward|backward] "
               "or step=N",
               spec);
  return FALSE;
}

/* ---- commands (caller side) ---------------------------------------------------- */

static gboolean
refuse (GError **error, const char *what, tw_session_state st)
{
  g_set_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_STATE, "cannot %s: the session is %s",
               what, tw_session_state_name (st));
  return FALSE;
}

static gpointer worker (gpointer data);

static void
send (tw_session *s, command *c)
{
  g_atomic_int_inc (&s->n_cmds);
  g_async_queue_push (s->cmds, c);
}

static command *
cmd_new (cmd_kind kind)
{
  command *c = g_new0 (command, 1);
  c->kind = kind;
  return c;
}

static void
cmd_free (command *c)
{
  if (c == NULL)
    return;
  g_free (c->node);
  if (c->graph)
    tw_graph_free (c->graph);
  breakpoint_clear (&c->bp);
  g_free (c);
}

static gboolean
terminal (tw_session_state st)
{
  return st == TW_SESSION_FINISHED || st == TW_SESSION_STOPPED || st == TW_SESSION_FAILED;
}

/* Sends a go-command (run or a step): allowed from idle and paused (run also
 * needs not be running already).  Starts the worker on first use. */
static gboolean
go (tw_session *s, cmd_kind kind, const char *what, GError **error)
{
  g_mutex_lock (&s->lock);
  tw_session_state st = s->state;
  if (st != TW_SESSION_IDLE && st != TW_SESSION_PAUSED)
    {
      g_mutex_unlock (&s->lock);
      return refuse (error, what, st);
    }
  s->state = TW_SESSION_RUNNING;
  send (s, cmd_new (kind));
  if (!s->started)
    {
      s->started = TRUE;
      s->thread = g_thread_new ("twb-session", worker, s);
    }
  g_mutex_unlock (&s->lock);
  return TRUE;
}

gboolean
tw_session_run (tw_session *s, GError **error)
{
  return go (s, CMD_RUN, "run", error);
}

gboolean
tw_session_step_op (tw_session *s, GError **error)
{
  return go (s, CMD_STEP_OP, "step an op", error);
}

gboolean
tw_session_step_layer (tw_session *s, GError **error)
{
  return go (s, CMD_STEP_LAYER, "step a layer", error);
}

gboolean
tw_session_step_iteration (tw_session *s, GError **error)
{
  return go (s, CMD_STEP_ITER, "step an iteration", error);
}

gboolean
tw_session_pause (tw_session *s, GError **error)
{
  g_mutex_lock (&s->lock);
  tw_session_state st = s->state;
  if (st == TW_SESSION_RUNNING)
    send (s, cmd_new (CMD_PAUSE));
  g_mutex_unlock (&s->lock);
  return st == TW_SESSION_RUNNING || refuse (error, "pause", st);
}

gboolean
tw_session_stop (tw_session *s, GError **error)
{
  g_mutex_lock (&s->lock);
  tw_session_state st = s->state;
  gboolean ok = !terminal (st);
  if (st == TW_SESSION_IDLE && !s->started)
    s->state = TW_SESSION_STOPPED;      /* never started: nothing to run */
  else if (ok)
    send (s, cmd_new (CMD_STOP));
  g_mutex_unlock (&s->lock);
  if (st == TW_SESSION_IDLE && ok && s->state == TW_SESSION_STOPPED && s->thread == NULL)
    {
      tw_snapshot *sn = snap_new (s, TW_SNAP_FINISHED);
      sn->message = g_strdup ("stopped before the first step");
      push (s, sn);
    }
  return ok || refuse (error, "stop", st);
}

/* A command that changes something at the next boundary: any time before the end. */
static gboolean
send_change (tw_session *s, command *c, const char *what, GError **error)
{
  g_mutex_lock (&s->lock);
  tw_session_state st = s->state;
  if (terminal (st))
    {
      g_mutex_unlock (&s->lock);
      cmd_free (c);
      return refuse (error, what, st);
    }
  send (s, c);
  g_mutex_unlock (&s->lock);
  return TRUE;
}

static gboolean
send_value (tw_session *s, cmd_kind kind, double v, gboolean positive, const char *what,
            GError **error)
{
  if (!isfinite (v) || v < 0 || (positive && v == 0))
    {
      g_set_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_ARG, "%s: %g is not %s", what, v,
                   positive ? "positive" : "zero or more");
      return FALSE;
    }
  command *c = cmd_new (kind);
  c->value = v;
  return send_change (s, c, what, error);
}

gboolean
tw_session_set_lr (tw_session *s, double lr, GError **error)
{
  return send_value (s, CMD_SET_LR, lr, TRUE, "set the learning rate", error);
}

gboolean
tw_session_set_momentum (tw_session *s, double momentum, GError **error)
{
  if (momentum >= 1)
    {
      g_set_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_ARG,
                   "set the momentum: %g is not below 1", momentum);
      return FALSE;
    }
  return send_value (s, CMD_SET_MOMENTUM, momentum, FALSE, "set the momentum", error);
}

gboolean
tw_session_set_weight_decay (tw_session *s, double wd, GError **error)
{
  return send_value (s, CMD_SET_WD, wd, FALSE, "set the weight decay", error);
}

gboolean
tw_session_set_mode (tw_session *s, tw_exec_mode mode, GError **error)
{
  command *c = cmd_new (CMD_SET_MODE);
  c->value = mode;
  return send_change (s, c, "change the execution mode", error);
}

gboolean
tw_session_freeze (tw_session *s, const char *node_id, gboolean frozen, GError **error)
{
  g_mutex_lock (&s->lock);
  const tw_node *n = tw_graph_find (s->shadow, node_id);
  gboolean ok = n != NULL && n->n_params > 0;
  if (!ok)
    g_set_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_GRAPH,
                 n ? "node '%s' has no parameters to freeze" : "no node '%s' in the graph",
                 node_id);
  g_mutex_unlock (&s->lock);
  if (!ok)
    return FALSE;
  command *c = cmd_new (CMD_FREEZE);
  c->node = g_strdup (node_id);
  c->flag = frozen;
  return send_change (s, c, frozen ? "freeze" : "unfreeze", error);
}

gboolean
tw_session_replace_graph (tw_session *s, const tw_graph *graph, GError **error)
{
  g_autoptr (tw_graph) g = tw_graph_copy (graph);
  if (tw_graph_infer (g) > 0)
    {
      g_autofree char *msg = tw_graph_errors_to_string (g);
      g_set_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_GRAPH,
                   "the edited graph does not fit; the session keeps its graph:\n%s", msg);
      return FALSE;
    }
  if (tw_graph_find_loss (g) == NULL || tw_graph_find_source (g, "data") == NULL)
    {
      g_set_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_GRAPH,
                   "the edited graph needs an input with role \"data\" and a loss node; the "
                   "session keeps its graph");
      return FALSE;
    }
  g_mutex_lock (&s->lock);
  tw_session_state st = s->state;
  if (st != TW_SESSION_IDLE && st != TW_SESSION_PAUSED)
    {
      g_mutex_unlock (&s->lock);
      return refuse (error, "edit the graph", st);
    }
  tw_graph_free (s->shadow);
  s->shadow = tw_graph_copy (g);
  tw_graph_infer (s->shadow);
  command *c = cmd_new (CMD_GRAPH);
  c->graph = g_steal_pointer (&g);
  send (s, c);
  g_mutex_unlock (&s->lock);
  return TRUE;
}

gboolean
tw_session_add_breakpoint (tw_session *s, const char *spec, GError **error)
{
  command *c = cmd_new (CMD_BREAK_ADD);
  if (!breakpoint_parse (spec, &c->bp, error))
    {
      cmd_free (c);
      return FALSE;
    }
  if (c->bp.kind == BREAK_NODE)
    {
      g_mutex_lock (&s->lock);
      gboolean found = tw_graph_find (s->shadow, c->bp.node) != NULL;
      g_mutex_unlock (&s->lock);
      if (!found)
        {
          g_set_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_GRAPH,
                       "breakpoint '%s': no node '%s' in the graph", spec, c->bp.node);
          cmd_free (c);
          return FALSE;
        }
    }
  return send_change (s, c, "set a breakpoint", error);
}

void
tw_session_clear_breakpoints (tw_session *s)
{
  send_change (s, cmd_new (CMD_BREAK_CLEAR), "clear breakpoints", NULL);
}

gboolean
tw_session_watch (tw_session *s, const char *node_id, GError **error)
{
  if (node_id)
    {
      g_mutex_lock (&s->lock);
      gboolean found = tw_graph_find (s->shadow, node_id) != NULL;
      g_mutex_unlock (&s->lock);
      if (!found)
        {
          g_set_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_GRAPH,
                       "watch: no node '%s' in the graph", node_id);
          return FALSE;
        }
    }
  command *c = cmd_new (CMD_WATCH);
  c->node = g_strdup (node_id);
  return send_change (s, c, "watch a node", error);
}

tw_snapshot *
tw_session_pop (tw_session *s, gint64 timeout_us)
{
  tw_snapshot *sn = timeout_us < 0   ? g_async_queue_pop (s->snaps)
                    : timeout_us == 0 ? g_async_queue_try_pop (s->snaps)
                                      : g_async_queue_timeout_pop (s->snaps, (guint64) timeout_us);
  if (sn && sn->kind == TW_SNAP_METRICS)
    g_atomic_int_dec_and_test (&s->n_metrics);
  return sn;
}

tw_session_state
tw_session_get_state (tw_session *s)
{
  g_mutex_lock (&s->lock);
  tw_session_state st = s->state;
  g_mutex_unlock (&s->lock);
  return st;
}

int64_t
tw_session_total_steps (tw_session *s)
{
  return s->total;
}

tw_trainer *
tw_session_trainer (tw_session *s)
{
  return s->trainer;
}

tw_bus *
tw_session_bus (tw_session *s)
{
  return s->bus;
}

const GArray *
tw_session_step_times (tw_session *s)
{
  return s->times;
}

static void
set_state (tw_session *s, tw_session_state st)
{
  g_mutex_lock (&s->lock);
  s->state = st;
  g_mutex_unlock (&s->lock);
}

/* ---- the worker: commands ------------------------------------------------------- */

static void update_inspect (tw_session *s);

static void refresh_graph_names (tw_session *s);

/* Gradient norms were turned on: listen to grad_ready from now on. */
static void
refresh_grad_norms (tw_session *s)
{
  refresh_graph_names (s);
  tw_trainer_set_grad_norms (s->trainer, TRUE);
  tw_bus_set_mask (s->bus, s->client, session_mask (s));
}

/* Handles one command that does not resume or stop the run; TRUE if it was one. */
static gboolean
handle_change (tw_session *s, command *c)
{
  switch (c->kind)
    {
    case CMD_SET_LR:
    case CMD_SET_MOMENTUM:
    case CMD_SET_WD:
      if (!s->cfg_dirty)
        s->cfg = *tw_optimizer_get_config (tw_trainer_optimizer (s->trainer));
      s->cfg_dirty = TRUE;
      if (c->kind == CMD_SET_LR)
        s->cfg.lr = c->value;
      else if (c->kind == CMD_SET_MOMENTUM)
        s->cfg.momentum = c->value;
      else
        s->cfg.weight_decay = c->value;
      cmd_free (c);
      return TRUE;
    case CMD_SET_MODE:
      s->mode_dirty = TRUE;
      s->mode = (tw_exec_mode) c->value;
      cmd_free (c);
      return TRUE;
    case CMD_FREEZE:
      g_ptr_array_add (s->freeze, c);
      return TRUE;
    case CMD_GRAPH:
      if (s->new_graph)
        tw_graph_free (s->new_graph);
      s->new_graph = g_steal_pointer (&c->graph);
      cmd_free (c);
      return TRUE;
    case CMD_BREAK_ADD:
      if (c->bp.kind == BREAK_GRAD_NORM && !s->opt.grad_norms)
        {
          s->opt.grad_norms = TRUE;
          refresh_grad_norms (s);
        }
      g_array_append_val (s->breaks, c->bp);
      memset (&c->bp, 0, sizeof c->bp);
      cmd_free (c);
      update_inspect (s);
      return TRUE;
    case CMD_BREAK_CLEAR:
      for (guint i = 0; i < s->breaks->len; i++)
        breakpoint_clear (&g_array_index (s->breaks, breakpoint, i));
      g_array_set_size (s->breaks, 0);
      cmd_free (c);
      update_inspect (s);
      return TRUE;
    case CMD_WATCH:
      if (c->node)
        g_hash_table_add (s->watch, g_strdup (c->node));
      else
        g_hash_table_remove_all (s->watch);
      cmd_free (c);
      update_inspect (s);
      return TRUE;
    case CMD_PAUSE:
      s->pause_requested = TRUE;
      cmd_free (c);
      return TRUE;
    default:
      return FALSE;
    }
}

/* A go or stop command: sets how to go on.  FALSE: stop. */
static gboolean
handle_go (tw_session *s, command *c)
{
  gboolean go_on = TRUE;
  switch (c->kind)
    {
    case CMD_RUN:
      s->go = GO_FREE;
      break;
    case CMD_STEP_OP:
      s->go = GO_STEP_OP;
      break;
    case CMD_STEP_LAYER:
      s->go = GO_STEP_LAYER;
      break;
    case CMD_STEP_ITER:
      s->go = GO_STEP_ITER;
      break;
    case CMD_STOP:
      s->stop_requested = TRUE;
      go_on = FALSE;
      break;
    default:
      g_assert_not_reached ();
    }
  s->pause_requested = FALSE;
  cmd_free (c);
  return go_on;
}

/* Non-blocking: take whatever commands are queued.  FALSE: stop. */
static gboolean
poll_commands (tw_session *s)
{
  while (g_atomic_int_get (&s->n_cmds) > 0)
    {
      command *c = g_async_queue_try_pop (s->cmds);
      if (c == NULL)
        break;
      g_atomic_int_add (&s->n_cmds, -1);
      if (!handle_change (s, c) && !handle_go (s, c))
        return FALSE;
    }
  return !s->stop_requested;
}

/* Block until a go or stop command.  FALSE: stop. */
static gboolean
wait_for_go (tw_session *s)
{
  for (;;)
    {
      command *c = g_async_queue_pop (s->cmds);
      g_atomic_int_add (&s->n_cmds, -1);
      if (handle_change (s, c))
        continue;
      return handle_go (s, c);
    }
}

/* ---- the worker: pausing --------------------------------------------------------- */

static const char *const phase_names[] = { "forward", "backward", "update" };

static char **
trace_strings (tw_session *s)
{
  char **v = g_new0 (char *, s->trace->len + 1);
  for (guint i = 0; i < s->trace->len; i++)
    {
      trace_entry *e = &g_array_index (s->trace, trace_entry, i);
      v[i] = g_strdup_printf ("%s %s %s%s", phase_names[e->phase], e->node ? e->node : "?",
                              e->label, e->kind == TW_EV_KERNEL ? " (kernel)" : "");
    }
  return v;
}

/* The tensors of a paused op: its inputs and outputs as the event gives
 * them, and the parameters (and, past forward, their gradients) of its nodes. */
static GPtrArray *
event_tensors (tw_session *s, const tw_event *ev)
{
  GPtrArray *a = g_ptr_array_new_with_free_func (snap_tensor_free);
  /* An eager node's backward reads and writes gradients only; kernels and
   * compiled instructions mix them with activations. */
  gboolean bwd = ev->kind == TW_EV_BACKWARD && !ev->compiled;
  const tw_op_ident *id = ev->ident;
  gboolean in_ended = id->in_names == NULL;
  for (int k = 0; k < ev->n_inputs; k++)
    {
      in_ended |= !in_ended && id->in_names[k] == NULL;
      g_autofree char *fallback = g_strdup_printf ("input %d", k);
      const char *name = in_ended ? fallback : id->in_names[k];
      add_tensor (a, name, bwd ? "gradient" : "input", ev->inputs[k]);
    }
  gboolean out_ended = id->out_names == NULL;
  for (int k = 0; k < ev->n_outputs; k++)
    {
      out_ended |= !out_ended && id->out_names[k] == NULL;
      g_autofree char *fallback = g_strdup_printf ("output %d", k);
      const char *name = out_ended ? fallback : id->out_names[k];
      add_tensor (a, name, bwd ? "gradient" : "output", ev->outputs[k]);
    }
  tw_params *params = tw_trainer_params (s->trainer);
  const tw_graph *g = tw_trainer_model (s->trainer)->graph;
  for (int i = 0; i < id->n_nodes; i++)
    {
      const tw_node *n = tw_graph_find (g, id->nodes[i]);
      for (int k = 0; n && k < n->n_params; k++)
        {
          g_autofree char *name = tw_node_param_name (n, k);
          tw_param *p = tw_params_get (params, name);
          if (p == NULL)
            continue;
          add_tensor (a, name, "parameter", p->value);
          if (ev->ident->phase != TW_PHASE_FORWARD && p->grad
              && tw_trainer_get_mode (s->trainer) == TW_MODE_EAGER)
            {
              g_autofree char *gname = g_strconcat ("grad:", name, NULL);
              add_tensor (a, gname, "gradient", p->grad);
            }
        }
    }
  return a;
}

/* Pause here: tell the callers where and why, and wait.  FALSE: stop. */
static gboolean
pause_here (tw_session *s, const tw_event *ev, char *reason /* taken */)
{
  set_state (s, TW_SESSION_PAUSED);
  tw_snapshot *sn = snap_new (s, TW_SNAP_PAUSED);
  sn->reason = reason;
  sn->iteration = tw_trainer_step_count (s->trainer) + 1;
  sn->compiled = tw_trainer_get_mode (s->trainer) == TW_MODE_COMPILED;
  if (ev && ev->ident)
    {
      sn->phase = ev->ident->phase;
      sn->op = g_strdup (ev->ident->label);
      sn->nodes = g_strdupv ((char **) ev->ident->nodes);
      sn->tensors = event_tensors (s, ev);
      if (ev->kind == TW_EV_UPDATE && ev->param)
        add_tensor (sn->tensors, ev->param->name, "parameter", ev->param->value);
    }
  else if (ev && ev->kind == TW_EV_ITERATION && ev->end)
    sn->iteration--;
  sn->trace = trace_strings (s);
  s->go = GO_FREE;
  s->pause_requested = FALSE;
  push (s, sn);
  return wait_for_go (s);
}

/* ---- the worker: event client ------------------------------------------------------ */

static gboolean
covers (const tw_op_ident *id, const char *node)
{
  for (int k = 0; k < id->n_nodes; k++)
    if (strcmp (id->nodes[k], node) == 0)
      return TRUE;
  return FALSE;
}

/* 1: NaN, 2: Inf, 0: finite. */
static int
nonfinite_host (const tw_tensor *t)
{
  if (t == NULL || !tw_dtype_is_float (t->dtype) || !tw_tensor_is_contiguous (t))
    return 0;
  int64_t n = tw_tensor_numel (t);
  if (t->dtype == TW_F32)
    return tw_scan_nonfinite_f32 (tw_tensor_f32 ((tw_tensor *) t), n);
  for (int64_t i = 0; i < n; i++)
    {
      double v = tw_tensor_get_flat (t, i);
      if (!isfinite (v))
        return isnan (v) ? 1 : 2;
    }
  return 0;
}

static int
nonfinite (tw_tensor *t)
{
  if (t == NULL)
    return 0;
  g_autoptr (tw_tensor) h = tw_tensor_to_host (t);
  return nonfinite_host (h);
}

static gboolean
has_break (tw_session *s, break_kind kind)
{
  for (guint i = 0; i < s->breaks->len; i++)
    if (g_array_index (s->breaks, breakpoint, i).kind == kind)
      return TRUE;
  return FALSE;
}

static char *
describe_op (const tw_event *ev)
{
  GString *nodes = g_string_new (NULL);
  for (int k = 0; k < ev->ident->n_nodes; k++)
    g_string_append_printf (nodes, "%s%s", k ? ", " : "", ev->ident->nodes[k]);
  char *d = g_strdup_printf ("node %s (%s%s, %s)", nodes->str, ev->ident->label,
                             ev->kind == TW_EV_KERNEL ? " kernel" : "",
                             phase_names[ev->ident->phase]);
  g_string_free (nodes, TRUE);
  return d;
}

/* A NaN or Inf was found: pause there with a nan/inf breakpoint, else fail
 * the run naming the op.  FALSE: stop.  op and where are taken. */
static gboolean
report_nonfinite (tw_session *s, const tw_event *ev, int found, char *op, char *where,
                  gboolean *paused_ok)
{
  const char *what = found == 1 ? "NaN" : "Inf";
  if (has_break (s, found == 1 ? BREAK_NAN : BREAK_INF))
    {
      *paused_ok = pause_here (s, ev, g_strdup_printf ("%s first produced by %s in %s", what, op,
                                                      where));
      g_free (op);
      g_free (where);
      return TRUE;
    }
  g_free (s->fail_message);
  s->fail_message = g_strdup_printf ("step %" G_GINT64_FORMAT ": %s first produced by %s in %s "
                                     "(lower the learning rate, or pass --allow-nan to go on)",
                                     tw_trainer_step_count (s->trainer) + 1, what, op, where);
  g_free (op);
  g_free (where);
  return FALSE;
}

/* Is t shaped like a parameter of the node an eager backward kernel works for?
 * (Then it is most likely that parameter's gradient: the optimizer checks
 * those as it reads them, tw_optimizer_last_grad_nonfinite.) */
static gboolean
param_shaped (tw_session *s, const tw_event *ev, const tw_tensor *t)
{
  if (t == NULL || ev->ident->n_nodes == 0 || ev->ident->node_index[0] < 0)
    return FALSE;
  const tw_graph *g = tw_trainer_model (s->trainer)->graph;
  if (ev->ident->node_index[0] >= tw_graph_n_nodes (g))
    return FALSE;
  const tw_node *n = tw_graph_node (g, ev->ident->node_index[0]);
  for (int k = 0; k < n->n_params; k++)
    {
      const tw_tinfo *pi = &n->params[k].info;
      if (pi->ndim == t->ndim && memcmp (pi->dims, t->shape, t->ndim * sizeof (int64_t)) == 0)
        return TRUE;
    }
  return FALSE;
}

/* The NaN watch: the first op whose outputs hold a NaN or an Inf.  Returns
 * FALSE to stop (the run then fails naming it).
 *
 * Updated parameters are not scanned (they are the largest tensors of a
 * step, and an update makes a non-finite value only from a huge step): the
 * first op that reads one finds it, and is told where it came from.  In eager
 * mode the parameters' gradients are not scanned either: the optimizer finds
 * a non-finite one in the pass that applies it, and the kernel that made it
 * is named then (deferred until the node's backward ends, where it is known
 * which outputs are parameter gradients). */
static gboolean
watch_nan (tw_session *s, const tw_event *ev, gboolean *paused_ok)
{
  gboolean eager_kernel = ev->kind == TW_EV_KERNEL && !ev->compiled;
  int found = 0, which = -1;
  for (int k = 0; k < ev->n_outputs && !found; k++)
    {
      if (eager_kernel && param_shaped (s, ev, ev->outputs[k]))
        {
          deferred_check d = { ev->outputs[k], ev->ident->label };
          g_array_append_val (s->deferred, d);
          continue;
        }
      if ((found = nonfinite (ev->outputs[k])))
        which = k;
    }
  if (!found)
    return TRUE;
  int bad_in = -1;
  for (int k = 0; k < ev->n_inputs && bad_in < 0; k++)
    if (nonfinite (ev->inputs[k]))
      bad_in = k;
  const char *out_name = which >= 0 && ev->ident->out_names ? ev->ident->out_names[which] : NULL;
  const char *in_name = bad_in >= 0 && ev->ident->in_names ? ev->ident->in_names[bad_in] : NULL;
  char *where
    = bad_in >= 0 ? g_strdup_printf ("output %s, from its input %s, already not finite (a "
                                     "parameter the previous update or the loaded weights made so)",
                                     out_name ? out_name : "0", in_name ? in_name : "?")
      : out_name ? g_strdup_printf ("output %s", out_name)
                 : g_strdup_printf ("output %d", which);
  return report_nonfinite (s, ev, found, describe_op (ev), where, paused_ok);
}

/* An eager node's backward ended: its deferred kernel outputs that are not
 * parameter gradients are scanned now; the others are left to the optimizer,
 * with the kernel that made them remembered. */
static gboolean
watch_deferred (tw_session *s, const tw_event *ev, gboolean *paused_ok)
{
  const tw_graph *g = tw_trainer_model (s->trainer)->graph;
  const tw_node *n = ev->ident->node_index[0] >= 0 ? tw_graph_node (g, ev->ident->node_index[0])
                                                    : NULL;
  int n_params = n ? n->n_params : 0, first_param = ev->n_outputs - n_params;
  for (guint i = 0; i < s->deferred->len; i++)
    {
      deferred_check *d = &g_array_index (s->deferred, deferred_check, i);
      int param = -1;
      for (int k = 0; k < n_params && param < 0; k++)
        if (first_param + k >= 0 && ev->outputs[first_param + k] == d->tensor)
          param = k;
      if (param >= 0)
        {
          g_autofree char *name = tw_node_param_name (n, param);
          g_hash_table_insert (s->grad_producer, g_strdup (name),
                               g_strdup_printf ("node %s (%s kernel, backward)", n->id, d->label));
          continue;
        }
      int found = nonfinite (d->tensor);
      if (found)
        {
          g_array_set_size (s->deferred, 0);
          return report_nonfinite (s, ev, found,
                                   g_strdup_printf ("node %s (%s kernel, backward)",
                                                    ev->ident->nodes[0], d->label),
                                   g_strdup ("a kernel output"), paused_ok);
        }
    }
  g_array_set_size (s->deferred, 0);
  return TRUE;
}

/* An eager parameter update read a NaN or Inf gradient (the optimizer saw it). */
static gboolean
watch_update (tw_session *s, const tw_event *ev, gboolean *paused_ok)
{
  if (ev->compiled || ev->param == NULL
      || !tw_optimizer_last_grad_nonfinite (tw_trainer_optimizer (s->trainer)))
    return TRUE;
  int found = nonfinite (ev->param->grad);
  const char *producer = g_hash_table_lookup (s->grad_producer, ev->param->name);
  return report_nonfinite (s, ev, found ? found : 1,
                           g_strdup (producer ? producer : "the backward"),
                           g_strdup_printf ("the gradient of %s (found by its update)",
                                            ev->param->name),
                           paused_ok);
}

static void
copy_watched (tw_session *s, const tw_event *ev)
{
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init (&it, s->watch);
  while (g_hash_table_iter_next (&it, &key, NULL))
    if (covers (ev->ident, key))
      {
        tw_snapshot *sn = snap_new (s, TW_SNAP_TENSOR);
        sn->iteration = tw_trainer_step_count (s->trainer) + 1;
        sn->phase = ev->ident->phase;
        sn->nodes = g_strdupv ((char **) ev->ident->nodes);
        sn->op = g_strdup (ev->ident->label);
        sn->tensors = g_ptr_array_new_with_free_func (snap_tensor_free);
        gboolean bwd = ev->ident->phase == TW_PHASE_BACKWARD;
        for (int k = 0; k < ev->n_outputs; k++)
          {
            const char *nm = ev->ident->out_names ? ev->ident->out_names[k] : NULL;
            g_autofree char *fallback = g_strdup_printf ("output %d", k);
            add_tensor (sn->tensors, nm ? nm : fallback, bwd ? "gradient" : "output",
                        ev->outputs[k]);
          }
        push (s, sn);
        return;
      }
}

static void
count_correct (tw_session *s, tw_tensor *pred_any)
{
  const tw_tensor *y = s->labels;
  g_autoptr (tw_tensor) pred = pred_any ? tw_tensor_to_host (pred_any) : NULL;
  if (y == NULL || pred == NULL || pred->ndim != 2 || y->dtype != TW_I64 || pred->dtype != TW_F32
      || y->shape[0] != pred->shape[0] || !tw_tensor_is_contiguous (pred))
    return;
  int64_t n = pred->shape[0], c = pred->shape[1], correct = 0;
  const float *p = tw_tensor_f32 ((tw_tensor *) pred);
  const int64_t *l = tw_tensor_i64 ((tw_tensor *) y);
  for (int64_t i = 0; i < n; i++)
    {
      int64_t best = 0;
      for (int64_t j = 1; j < c; j++)
        if (p[i * c + j] > p[i * c + best])
          best = j;
      correct += best == l[i];
    }
  s->correct = correct;
  s->have_accuracy = TRUE;
}

/* Is this the end of an "op" for stepping (session.h)? */
static gboolean
op_stop (tw_session *s, const tw_event *ev)
{
  if (ev->kind == TW_EV_KERNEL)
    return TRUE;
  if (ev->kind == TW_EV_BACKWARD && !ev->compiled)
    return s->backward_kernels == 0;
  return TRUE;
}

static gboolean
on_op_end (tw_session *s, const tw_event *ev)
{
  const tw_op_ident *id = ev->ident;
  g_autofree char *reason = NULL;
  trace_entry te = { ev->kind, id->phase, id->label, id->n_nodes ? id->nodes[0] : NULL };
  if (op_stop (s, ev))       /* an eager backward holding kernels is not an op itself */
    g_array_append_val (s->trace, te);

  if (id->phase == TW_PHASE_FORWARD && s->pred_ref && id->out_names)
    for (int k = 0; k < ev->n_outputs && id->out_names[k]; k++)
      if (strcmp (id->out_names[k], s->pred_ref) == 0)
        count_correct (s, ev->outputs[k]);

  /* An eager backward's outputs are its kernels' outputs, checked already
   * (or gradients passed through unchanged, checked where they were made). */
  gboolean checked = ev->kind == TW_EV_BACKWARD && !ev->compiled && s->backward_kernels > 0;
  if (s->opt.nan_watch)
    {
      gboolean go_on = TRUE;
      gboolean ok = checked ? watch_deferred (s, ev, &go_on)
                    : ev->kind == TW_EV_UPDATE && !ev->compiled ? watch_update (s, ev, &go_on)
                                                                : watch_nan (s, ev, &go_on);
      if (!ok || !go_on)
        return FALSE;
    }
  if (ev->kind != TW_EV_KERNEL && id->phase != TW_PHASE_UPDATE)
    {
      gboolean node_end = id->layer_end;
      if (g_hash_table_size (s->watch) && node_end)
        copy_watched (s, ev);
      for (guint i = 0; i < s->breaks->len && reason == NULL; i++)
        {
          breakpoint *b = &g_array_index (s->breaks, breakpoint, i);
          if (b->kind == BREAK_NODE && node_end && (b->phases & (1u << id->phase))
              && covers (id, b->node))
            reason = g_strdup_printf ("breakpoint %s", b->spec);
          else if (b->kind == BREAK_LOSS && id->phase == TW_PHASE_FORWARD && s->loss_id
                   && covers (id, s->loss_id) && ev->n_outputs > 0)
            {
              g_autoptr (tw_tensor) lh = tw_tensor_to_host (ev->outputs[0]);
              double l = tw_tensor_get_flat (lh, 0);
              if (l > b->threshold)
                reason = g_strdup_printf ("breakpoint %s: the loss is %g", b->spec, l);
            }
        }
    }
  if (reason == NULL)
    {
      if (s->go == GO_STEP_OP && op_stop (s, ev))
        reason = g_strdup ("step op");
      else if (s->go == GO_STEP_LAYER && id->layer_end && ev->kind != TW_EV_KERNEL)
        reason = g_strdup ("step layer");
      else if (s->pause_requested)
        reason = g_strdup ("paused");
    }
  if (reason)
    return pause_here (s, ev, g_steal_pointer (&reason));
  return TRUE;
}

static gboolean
on_grad_ready (tw_session *s, const tw_event *ev)
{
  if (s->grad_sq == NULL || ev->param == NULL)
    return TRUE;
  tw_params *params = tw_trainer_params (s->trainer);
  int idx = -1;
  for (int i = 0; i < tw_params_count (params) && idx < 0; i++)
    if (tw_params_at (params, i) == ev->param)
      idx = i;
  if (idx < 0 || idx >= s->n_grad)
    return TRUE;
  double sq = NAN;
  if (ev->grad == NULL && isfinite (ev->grad_norm))
    sq = ev->grad_norm * ev->grad_norm;
  else if (ev->grad && ev->grad->dtype == TW_F32 && tw_tensor_is_contiguous (ev->grad))
    {
      g_autoptr (tw_tensor) host = tw_tensor_to_host (ev->grad);
      const float *g = tw_tensor_f32 (host);
      int64_t n = tw_tensor_numel (host);
      sq = tw_scan_sumsq_f32 (g, n);
    }
  s->grad_sq[idx] = sq;
  for (guint i = 0; i < s->breaks->len; i++)
    {
      breakpoint *b = &g_array_index (s->breaks, breakpoint, i);
      if (b->kind == BREAK_GRAD_NORM && isfinite (sq) && sqrt (sq) > b->threshold)
        {
          char *reason = g_strdup_printf ("breakpoint %s: the gradient of %s has norm %g",
                                          b->spec, ev->param->name, sqrt (sq));
          return pause_here (s, ev, reason);
        }
    }
  return TRUE;
}

static gboolean
on_event (const tw_event *ev, gpointer user)
{
  tw_session *s = user;
  if (!poll_commands (s))
    return FALSE;
  if (s->in_eval)
    return TRUE;
  switch (ev->kind)
    {
    case TW_EV_ITERATION:
      if (!ev->end)
        {
          g_array_set_size (s->trace, 0);
          for (int i = 0; s->grad_sq && i < s->n_grad; i++)
            s->grad_sq[i] = NAN;
        }
      return TRUE;
    case TW_EV_GRAD_READY:
      return on_grad_ready (s, ev);
    case TW_EV_BACKWARD:
      if (!ev->end)
        {
          s->backward_kernels = 0;
          g_array_set_size (s->deferred, 0);
          return TRUE;
        }
      return on_op_end (s, ev);
    case TW_EV_KERNEL:
      if (ev->end)
        s->backward_kernels++;
      return ev->end ? on_op_end (s, ev) : TRUE;
    case TW_EV_FORWARD:
    case TW_EV_UPDATE:
      return ev->end ? on_op_end (s, ev) : TRUE;
    default:
      return TRUE;
    }
}

/* ---- the worker: the loop ------------------------------------------------------------ */

static void
refresh_graph_names (tw_session *s)
{
  const tw_graph *g = tw_trainer_model (s->trainer)->graph;
  g_clear_pointer (&s->loss_id, g_free);
  g_clear_pointer (&s->pred_ref, g_free);
  const tw_node *loss = tw_graph_find_loss (g);
  s->loss_id = loss ? g_strdup (loss->id) : NULL;
  const char *const *outs = tw_graph_outputs (g);
  s->pred_ref = outs && outs[0] ? g_strdup (outs[0]) : NULL;
  g_clear_pointer (&s->grad_sq, g_free);
  s->n_grad = tw_params_count (tw_trainer_params (s->trainer));
  if (s->opt.grad_norms)
    s->grad_sq = g_new0 (double, MAX (s->n_grad, 1));
}

/* Nodes that compiled mode must keep unfused: breakpoints and watches. */
static void
update_inspect (tw_session *s)
{
  if (s->trainer == NULL || tw_trainer_get_mode (s->trainer) != TW_MODE_COMPILED)
    return;
  g_autoptr (GPtrArray) ids = g_ptr_array_new ();
  for (guint i = 0; i < s->breaks->len; i++)
    {
      breakpoint *b = &g_array_index (s->breaks, breakpoint, i);
      if (b->kind == BREAK_NODE)
        g_ptr_array_add (ids, b->node);
    }
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init (&it, s->watch);
  while (g_hash_table_iter_next (&it, &key, NULL))
    g_ptr_array_add (ids, key);
  g_ptr_array_add (ids, NULL);
  if (tw_compiled_set_keep_nodes (tw_trainer_compiled (s->trainer),
                                  (const char *const *) ids->pdata)
      && ids->len > 1)
    {
      g_autofree char *list = g_strjoinv (", ", (char **) ids->pdata);
      note (s, "compiled mode: %s left unfused so that %s values can be inspected (the program "
               "is rebuilt)",
            list, ids->len > 2 ? "their" : "its");
    }
}

static void
set_mode (tw_session *s, tw_exec_mode mode)
{
  tw_trainer_set_mode (s->trainer, mode);
  update_inspect (s);
}

/* Changes that wait for an iteration boundary. */
static gboolean
apply_pending (tw_session *s)
{
  if (s->cfg_dirty)
    {
      tw_trainer_set_optimizer_config (s->trainer, &s->cfg);
      s->cfg_dirty = FALSE;
    }
  for (guint i = 0; i < s->freeze->len; i++)
    {
      command *c = g_ptr_array_index (s->freeze, i);
      g_autoptr (GError) error = NULL;
      if (!tw_trainer_set_frozen (s->trainer, c->node, c->flag, &error))
        note (s, "%s", error->message);
    }
  g_ptr_array_set_size (s->freeze, 0);
  if (s->new_graph)
    {
      tw_graph_change change = { 0 };
      g_autoptr (GError) error = NULL;
      tw_graph *g = g_steal_pointer (&s->new_graph);
      if (!tw_trainer_replace_graph (s->trainer, g, &change, &error))
        note (s, "the edited graph was not applied: %s", error->message);
      else
        {
          tw_snapshot *sn = snap_new (s, TW_SNAP_GRAPH_CHANGED);
          sn->change = change;
          push (s, sn);
          refresh_graph_names (s);
          /* Breakpoints and watches on nodes that are gone go with them. */
          const tw_graph *ng = tw_trainer_model (s->trainer)->graph;
          for (guint i = s->breaks->len; i-- > 0;)
            {
              breakpoint *b = &g_array_index (s->breaks, breakpoint, i);
              if (b->kind == BREAK_NODE && tw_graph_find (ng, b->node) == NULL)
                {
                  note (s, "breakpoint %s removed: the node is gone", b->spec);
                  breakpoint_clear (b);
                  g_array_remove_index (s->breaks, i);
                }
            }
          update_inspect (s);
        }
    }
  if (s->mode_dirty)
    {
      set_mode (s, s->mode);
      s->mode_dirty = FALSE;
    }
  return TRUE;
}

static gboolean
finish_with (tw_session *s, tw_session_state st, const char *message, double train_loss,
             double test_loss, double test_acc, double val_loss, double val_acc)
{
  set_state (s, st);
  tw_snapshot *sn = snap_new (s, TW_SNAP_FINISHED);
  sn->message = g_strdup (message);
  sn->train_loss = train_loss;
  sn->test_loss = test_loss;
  sn->test_accuracy = test_acc;
  sn->val_loss = val_loss;
  sn->val_accuracy = val_acc;
  push (s, sn);
  return st == TW_SESSION_FINISHED;
}

static void
push_metrics (tw_session *s, int64_t epoch, double loss, double ms, int64_t batch)
{
  tw_snapshot *sn = snap_new (s, TW_SNAP_METRICS);
  sn->epoch = epoch;
  sn->loss = loss;
  sn->accuracy = s->have_accuracy ? (double) s->correct / MAX (batch, 1) : NAN;
  sn->lr = tw_trainer_current_lr (s->trainer);
  sn->step_ms = ms;
  sn->samples_per_s = ms > 0 ? batch / (ms * 1e-3) : 0;
  if (s->grad_sq)
    {
      tw_params *params = tw_trainer_params (s->trainer);
      int n = MIN (s->n_grad, tw_params_count (params)), m = 0;
      sn->param_names = g_new0 (char *, n + 1);
      sn->grad_norm = g_new0 (double, MAX (n, 1));
      for (int i = 0; i < n; i++)
        {
          tw_param *p = tw_params_at (params, i);
          if (!p->trainable)
            continue;
          sn->param_names[m] = g_strdup (p->name);
          sn->grad_norm[m++] = sqrt (s->grad_sq[i]);
        }
    }
  push (s, sn);
}

/* A step=N breakpoint for the iteration about to start, if any. */
static const breakpoint *
step_break (tw_session *s)
{
  int64_t next = tw_trainer_step_count (s->trainer) + 1;
  for (guint i = 0; i < s->breaks->len; i++)
    {
      const breakpoint *b = &g_array_index (s->breaks, breakpoint, i);
      if (b->kind == BREAK_STEP && b->step == next)
        return b;
    }
  return NULL;
}

static gpointer
worker (gpointer data)
{
  tw_session *s = data;
  const tw_recipe *r = &tw_trainer_model (s->trainer)->recipe;
  g_autoptr (tw_batcher) b = tw_batcher_new (s->train, r->batch_size, TRUE, r->seed, FALSE);
  int64_t per_epoch = s->per_epoch, total = s->total;
  double val_loss = NAN, val_acc = NAN, loss = NAN;
  double epoch_loss_sum = 0;
  int64_t epoch_loss_n = 0;

  tw_set_thread_num_threads (s->opt.threads);
  tw_trainer_set_total_steps (s->trainer, per_epoch * r->epochs);
  if (!wait_for_go (s))
    return GINT_TO_POINTER (finish_with (s, TW_SESSION_STOPPED, "stopped before the first step",
                                         NAN, NAN, NAN, NAN, NAN));
  set_state (s, TW_SESSION_RUNNING);
  apply_pending (s);

  int64_t epoch = s->opt.epoch0;
  for (; epoch < r->epochs && tw_trainer_step_count (s->trainer) < total; epoch++)
    {
      tw_batcher_reset (b, epoch);
      int64_t k = epoch == s->opt.epoch0 ? s->opt.batch0 : 0;
      if (k > 0)
        tw_batcher_seek (b, k);
      epoch_loss_sum = 0;
      epoch_loss_n = 0;
      tw_tensor *x, *y;
      for (;;)
        {
          /* The iteration boundary: changes apply, pauses may happen here. */
          gboolean go_on = poll_commands (s);
          const breakpoint *at = step_break (s);
          if (go_on && at)
            go_on = pause_here (s, NULL, g_strdup_printf ("breakpoint %s", at->spec));
          else if (go_on && s->pause_requested)
            go_on = pause_here (s, NULL, g_strdup ("paused between iterations"));
          if (go_on)
            {
              set_state (s, TW_SESSION_RUNNING);
              apply_pending (s);
            }
          if (!go_on)
            return GINT_TO_POINTER (finish_with (s, TW_SESSION_STOPPED, "stopped", epoch_loss_n ? epoch_loss_sum / epoch_loss_n : loss, NAN, NAN, val_loss, val_acc));
          if (tw_trainer_step_count (s->trainer) >= total)
            break;
          gboolean want_data = tw_bus_wants (s->bus, TW_EV_DATA);
          gint64 t_data = want_data ? tw_now_ns () : 0;
          if (!tw_batcher_next (b, &x, &y))
            break;
          if (want_data)
            {
              tw_event dev = { .kind = TW_EV_DATA, .end = TRUE,
                               .step = (guint64) tw_trainer_step_count (s->trainer),
                               .t_start = t_data, .t_end = tw_now_ns () };
              tw_bus_publish (s->bus, &dev);
            }
          int64_t bs = x->shape[0];
          g_autoptr (GError) error = NULL;
          s->labels = y;
          s->have_accuracy = FALSE;
          if (s->opt.nan_watch && nonfinite (x))
            {
              g_autofree char *msg = g_strdup_printf (
                "step %" G_GINT64_FORMAT ": the data batch holds %s values",
                tw_trainer_step_count (s->trainer) + 1, nonfinite (x) == 1 ? "NaN" : "Inf");
              tw_tensor_unref (x);
              tw_tensor_unref (y);
              return GINT_TO_POINTER (
                finish_with (s, TW_SESSION_FAILED, msg, NAN, NAN, NAN, val_loss, val_acc));
            }
          gint64 t0 = g_get_monotonic_time ();
          gboolean ok = tw_trainer_step (s->trainer, x, y, &loss, &error);
          double ms = (g_get_monotonic_time () - t0) / 1000.0;
          s->labels = NULL;
          tw_tensor_unref (x);
          tw_tensor_unref (y);
          k++;
          if (!ok)
            {
              if (s->fail_message)
                return GINT_TO_POINTER (finish_with (s, TW_SESSION_FAILED, s->fail_message,
                                                     NAN, NAN, NAN, val_loss, val_acc));
              if (g_error_matches (error, TW_EXEC_ERROR, TW_EXEC_ERROR_STOPPED))
                return GINT_TO_POINTER (finish_with (
                  s, TW_SESSION_STOPPED, error->message,
                  epoch_loss_n ? epoch_loss_sum / epoch_loss_n : NAN, NAN, NAN, val_loss, val_acc));
              return GINT_TO_POINTER (
                finish_with (s, TW_SESSION_FAILED, error->message, NAN, NAN, NAN, val_loss, val_acc));
            }
          g_array_append_val (s->times, ms);
          if (isfinite (loss))
            {
              epoch_loss_sum += loss;
              epoch_loss_n++;
            }
          push_metrics (s, epoch, loss, ms, bs);
          if (tw_trainer_stop_pending (s->trainer) || s->stop_requested)
            {
              if (s->fail_message)
                return GINT_TO_POINTER (finish_with (s, TW_SESSION_FAILED, s->fail_message,
                                                     NAN, NAN, NAN, val_loss, val_acc));
              return GINT_TO_POINTER (finish_with (
                s, TW_SESSION_STOPPED,
                "stopped after finishing the step's parameter updates",
                epoch_loss_sum / MAX (epoch_loss_n, 1), NAN, NAN, val_loss, val_acc));
            }
          if (s->go == GO_STEP_ITER)
            s->pause_requested = TRUE;
        }
      if (s->val && k >= per_epoch)
        {
          g_autoptr (GError) error = NULL;
          s->in_eval = TRUE;
          gboolean ok = tw_trainer_evaluate (s->trainer, s->val, s->opt.eval_batch, &val_loss,
                                             &val_acc, &error);
          s->in_eval = FALSE;
          if (!ok && s->stop_requested)
            return GINT_TO_POINTER (finish_with (s, TW_SESSION_STOPPED, "stopped", NAN, NAN,
                                                 NAN, NAN, NAN));
          if (!ok)
            {
              g_autofree char *msg = g_strdup_printf ("validation: %s", error->message);
              return GINT_TO_POINTER (
                finish_with (s, TW_SESSION_FAILED, msg, NAN, NAN, NAN, NAN, NAN));
            }
          tw_snapshot *sn = snap_new (s, TW_SNAP_EPOCH);
          sn->epoch = epoch;
          sn->val_loss = val_loss;
          sn->val_accuracy = val_acc;
          sn->train_loss = epoch_loss_n ? epoch_loss_sum / epoch_loss_n : NAN;
          push (s, sn);
        }
      if (s->opt.checkpoint)
        {
          g_autoptr (GError) error = NULL;
          gboolean done = k >= per_epoch;
          if (!tw_trainer_save_checkpoint (s->trainer, s->opt.checkpoint, done ? epoch + 1 : epoch,
                                           done ? 0 : k, &error))
            return GINT_TO_POINTER (
              finish_with (s, TW_SESSION_FAILED, error->message, NAN, NAN, NAN, val_loss, val_acc));
        }
      if (tw_trainer_step_count (s->trainer) >= total)
        break;
    }

  double train_loss = epoch_loss_n ? epoch_loss_sum / epoch_loss_n : loss;
  double test_loss = NAN, test_acc = NAN;
  if (s->test && s->opt.evaluate_test)
    {
      g_autoptr (GError) error = NULL;
      s->in_eval = TRUE;
      gboolean ok = tw_trainer_evaluate (s->trainer, s->test, s->opt.eval_batch, &test_loss,
                                         &test_acc, &error);
      s->in_eval = FALSE;
      if (!ok && s->stop_requested)
        return GINT_TO_POINTER (finish_with (s, TW_SESSION_STOPPED, "stopped", train_loss, NAN,
                                             NAN, val_loss, val_acc));
      if (!ok)
        {
          g_autofree char *msg = g_strdup_printf ("evaluation: %s", error->message);
          return GINT_TO_POINTER (
            finish_with (s, TW_SESSION_FAILED, msg, train_loss, NAN, NAN, val_loss, val_acc));
        }
    }
  return GINT_TO_POINTER (finish_with (s, TW_SESSION_FINISHED, NULL, train_loss, test_loss,
                                       test_acc, val_loss, val_acc));
}

/* ---- life ------------------------------------------------------------------------------ */

static tw_model *
model_copy (const tw_model *m)
{
  tw_model *c = tw_model_new (m->name);
  tw_graph_free (c->graph);
  c->graph = tw_graph_copy (m->graph);
  tw_recipe_clear (&c->recipe);
  tw_recipe_copy (&c->recipe, &m->recipe);
  return c;
}

tw_session *
tw_session_new (const tw_model *model, tw_dataset *train, tw_dataset *val, tw_dataset *test,
                const tw_session_options *options, GError **error)
{
  tw_session *s = g_new0 (tw_session, 1);
  g_mutex_init (&s->lock);
  s->cmds = g_async_queue_new ();
  s->snaps = g_async_queue_new ();
  s->train = train;
  s->val = val;
  s->test = test;
  if (options)
    {
      s->opt = *options;
      s->opt.checkpoint = g_strdup (options->checkpoint);
    }
  else
    tw_session_options_init (&s->opt);
  s->opt.max_queued = MAX (s->opt.max_queued, 1);
  s->opt.eval_batch = MAX (s->opt.eval_batch, 1);
  s->breaks = g_array_new (FALSE, FALSE, sizeof (breakpoint));
  s->watch = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  s->freeze = g_ptr_array_new_with_free_func ((GDestroyNotify) cmd_free);
  s->trace = g_array_new (FALSE, FALSE, sizeof (trace_entry));
  s->deferred = g_array_new (FALSE, FALSE, sizeof (deferred_check));
  s->grad_producer = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  s->times = g_array_new (FALSE, FALSE, sizeof (double));
  s->model = model_copy (model);
  s->shadow = tw_graph_copy (model->graph);
  tw_graph_infer (s->shadow);
  if (train == NULL)
    {
      g_set_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_ARG, "a session needs training data");
      tw_session_free (s);
      return NULL;
    }
  s->trainer = tw_trainer_new (s->model, error);
  if (s->trainer == NULL)
    {
      tw_session_free (s);
      return NULL;
    }
  tw_trainer_set_num_threads (s->trainer, MAX (s->opt.threads, 1));
  tw_trainer_set_allow_nan (s->trainer, s->opt.allow_nan);
  if (s->opt.allow_nan)
    s->opt.nan_watch = FALSE;
  s->bus = tw_bus_new ();
  s->client = tw_bus_subscribe (s->bus, session_mask (s), on_event, s, NULL);
  tw_trainer_set_bus (s->trainer, s->bus);
  tw_trainer_set_grad_norms (s->trainer, s->opt.grad_norms);
  refresh_graph_names (s);
  {
    const tw_recipe *r = &s->model->recipe;
    g_autoptr (tw_batcher) b = tw_batcher_new (train, r->batch_size, TRUE, r->seed, FALSE);
    s->per_epoch = tw_batcher_batches_per_epoch (b);
    s->total = s->per_epoch * r->epochs;
    if (s->opt.max_steps > 0 && s->opt.max_steps < s->total)
      s->total = s->opt.max_steps;
  }
  if (s->opt.mode == TW_MODE_COMPILED)
    set_mode (s, TW_MODE_COMPILED);
  return s;
}

static gboolean
check_idle (tw_session *s, const char *what, GError **error)
{
  g_mutex_lock (&s->lock);
  tw_session_state st = s->state;
  gboolean started = s->started;
  g_mutex_unlock (&s->lock);
  if (st == TW_SESSION_IDLE && !started)
    return TRUE;
  return refuse (error, what, st);
}

gboolean
tw_session_load_checkpoint (tw_session *s, const char *path, GError **error)
{
  if (!check_idle (s, "load a checkpoint", error))
    return FALSE;
  if (!tw_trainer_load_checkpoint (s->trainer, path, &s->opt.epoch0, &s->opt.batch0, error))
    return FALSE;
  return TRUE;
}

gboolean
tw_session_load_weights (tw_session *s, const char *path, GError **error)
{
  if (!check_idle (s, "load weights", error))
    return FALSE;
  return tw_params_load_weights (tw_trainer_params (s->trainer), path, error);
}

void
tw_session_free (tw_session *s)
{
  if (s == NULL)
    return;
  if (s->thread)
    {
      g_mutex_lock (&s->lock);
      if (!terminal (s->state))
        send (s, cmd_new (CMD_STOP));
      g_mutex_unlock (&s->lock);
      g_thread_join (s->thread);
    }
  command *c;
  while ((c = g_async_queue_try_pop (s->cmds)))
    cmd_free (c);
  g_async_queue_unref (s->cmds);
  tw_snapshot *sn;
  while ((sn = g_async_queue_try_pop (s->snaps)))
    tw_snapshot_free (sn);
  g_async_queue_unref (s->snaps);
  tw_trainer_free (s->trainer);
  if (s->bus)
    tw_bus_unref (s->bus);
  tw_model_free (s->model);
  tw_graph_free (s->shadow);
  tw_dataset_free (s->train);
  tw_dataset_free (s->val);
  tw_dataset_free (s->test);
  for (guint i = 0; i < s->breaks->len; i++)
    breakpoint_clear (&g_array_index (s->breaks, breakpoint, i));
  g_array_unref (s->breaks);
  g_hash_table_unref (s->watch);
  g_ptr_array_unref (s->freeze);
  if (s->new_graph)
    tw_graph_free (s->new_graph);
  g_array_unref (s->trace);
  g_array_unref (s->deferred);
  g_hash_table_unref (s->grad_producer);
  g_array_unref (s->times);
  g_free (s->grad_sq);
  g_free (s->loss_id);
  g_free (s->pred_ref);
  g_free (s->fail_message);
  tw_session_options_clear (&s->opt);
  g_mutex_clear (&s->lock);
  g_free (s);
}
