/* session-commands.c — the callers' side of a training session: options,
 * snapshots, breakpoints, and commands checked against the state and queued
 * for the worker (engine/session.c) without ever blocking. */
#define G_LOG_DOMAIN "twb-session"

#include "engine/session-private.h"
#include "engine/number.h"

#include <math.h>
#include <string.h>

G_DEFINE_QUARK (tw-session-error-quark, tw_session_error)

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
  tw_dist_options_init (&o->dist);
  tw_pipeline_options_init (&o->pipeline);
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

void
ses_snap_tensor_free (gpointer p)
{
  tw_snapshot_tensor *t = p;
  g_free (t->name);
  g_free (t->role);
  g_free (t->what);
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
  g_free (s->rank_step_ms);
  g_strfreev (s->nodes);
  g_free (s->op);
  g_free (s->reason);
  g_strfreev (s->trace);
  if (s->tensors)
    g_ptr_array_unref (s->tensors);
  tw_graph_change_clear (&s->change);
  if (s->classes)
    {
      tw_class_report_clear (s->classes);
      g_free (s->classes);
    }
  g_free (s->message);
  g_free (s);
}

tw_snapshot *
ses_snap_new (tw_session *s, tw_snapshot_kind kind)
{
  tw_snapshot *sn = g_new0 (tw_snapshot, 1);
  sn->kind = kind;
  sn->step = s->trainer ? tw_trainer_step_count (s->trainer) : 0;
  sn->phase = -1;
  sn->loss = sn->accuracy = sn->val_loss = sn->val_accuracy = NAN;
  sn->test_loss = sn->test_accuracy = sn->train_loss = NAN;
  sn->eta_s = -1;
  g_mutex_lock (&s->lock);
  sn->state = s->state;
  g_mutex_unlock (&s->lock);
  return sn;
}

void
ses_push (tw_session *s, tw_snapshot *sn)
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

void
ses_note (tw_session *s, const char *fmt, ...) G_GNUC_PRINTF (2, 3);

void
ses_note (tw_session *s, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  tw_snapshot *sn = ses_snap_new (s, TW_SNAP_NOTE);
  sn->message = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  ses_push (s, sn);
}

/* A node output reference ("fc1", "split:1") in words, or NULL when g has
 * no such node. */
static char *
describe_output (const tw_graph *g, const char *ref, const char *what)
{
  g_autofree char *id = NULL;
  int k = 0;
  if (!tw_ref_parse (ref, &id, &k))
    return NULL;
  const tw_node *n = tw_graph_find (g, id);
  if (n == NULL)
    return NULL;
  if (n->n_outputs > 1)
    return g_strdup_printf ("%s %s's output %d", what, n->id, k);
  return g_strdup_printf ("%s %s's output", what, n->id);
}

/* The name in words, by the naming of engine/eager.c and tw_value_name. */
static char *
describe (tw_session *s, const char *name)
{
  tw_params *params = s->trainer ? tw_trainer_params (s->trainer) : NULL;
  const tw_graph *g = s->trainer ? tw_trainer_model (s->trainer)->graph : s->model->graph;
  if (g_str_has_prefix (name, "grad:"))
    {
      const char *of = name + strlen ("grad:");
      if (params && tw_params_get (params, of))
        return g_strdup_printf ("gradient of parameter %s", of);
      char *o = describe_output (g, of, "gradient of");
      return o ? o : g_strdup_printf ("gradient of %s", of);
    }
  if (params && tw_params_get (params, name))
    return g_strdup_printf ("parameter %s", name);
  const char *paren = strchr (name, '(');
  if (paren && paren > name)
    return g_strdup_printf ("made by %.*s inside this op", (int) (paren - name), name);
  g_autofree char *id = NULL;
  int k = 0;
  const tw_node *n = tw_ref_parse (name, &id, &k) ? tw_graph_find (g, id) : NULL;
  if (n && n->op && strcmp (n->op->name, "input") == 0)
    return g_strdup_printf ("the input %s", n->id);
  if (n && n->n_outputs > 1)
    return g_strdup_printf ("output %d of %s (%s)", k, n->id, n->op ? n->op->name : "?");
  if (n)
    return g_strdup_printf ("output of %s (%s)", n->id, n->op ? n->op->name : "?");
  return g_strdup (name);
}

void
ses_add_tensor (tw_session *s, GPtrArray *a, const char *name, const char *role,
                const tw_tensor *t)
{
  if (t == NULL)
    return;
  tw_snapshot_tensor *st = g_new0 (tw_snapshot_tensor, 1);
  g_autoptr (tw_tensor) host = tw_tensor_to_host ((tw_tensor *) t);
  st->name = g_strdup (name);
  st->role = g_strdup (role);
  st->what = describe (s, name);
  st->tensor = tw_tensor_clone (host);
  g_ptr_array_add (a, st);
}

/* ---- breakpoints --------------------------------------------------------------- */

void
ses_breakpoint_clear (breakpoint *b)
{
  g_clear_pointer (&b->node, g_free);
  g_clear_pointer (&b->spec, g_free);
}

/* The number of a breakpoint spec of the form `form` ("step=N", "loss>X"):
 * engine/number.h's rule, the error naming the spec and the form. */
static gboolean
spec_number (const char *spec, const char *form, gboolean whole, double *d, int64_t *i,
             GError **error)
{
  static const tw_real_range any = { -INFINITY, INFINITY, FALSE, FALSE };
  g_autoptr (GError) local = NULL;
  const char *num = spec + strlen (form) - 1, *what = form;
  gboolean ok = whole ? tw_number_parse_int (num, 1, G_MAXINT64, what, i, &local)
                      : tw_number_parse_real (num, &any, what, d, &local);
  if (!ok)
    {
      g_autofree char *shown = tw_number_head (spec);
      g_set_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_ARG, "breakpoint '%s': %s", shown,
                   local->message);
    }
  return ok;
}

static gboolean
ses_breakpoint_parse (const char *spec, breakpoint *b, GError **error)
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
      if (!spec_number (spec, "loss>X", FALSE, &b->threshold, NULL, error))
        return FALSE;
    }
  else if (g_str_has_prefix (spec, "grad-norm>"))
    {
      b->kind = BREAK_GRAD_NORM;
      if (!spec_number (spec, "grad-norm>X", FALSE, &b->threshold, NULL, error))
        return FALSE;
    }
  else if (g_str_has_prefix (spec, "step="))
    {
      b->kind = BREAK_STEP;
      if (!spec_number (spec, "step=N", TRUE, NULL, &b->step, error))
        return FALSE;
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
  ses_breakpoint_clear (b);
  {
    g_autofree char *shown = tw_number_head (spec);
    g_set_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_ARG,
                 "breakpoint '%s': expected nan, inf, loss>X, grad-norm>X, "
                 "node=ID[:forward|backward] or step=N",
                 shown);
  }
  return FALSE;
}

/* ---- commands (caller side) ---------------------------------------------------- */

gboolean
ses_refuse (GError **error, const char *what, tw_session_state st)
{
  g_set_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_STATE, "cannot %s: the session is %s",
               what, tw_session_state_name (st));
  return FALSE;
}

void
ses_send (tw_session *s, command *c)
{
  g_atomic_int_inc (&s->n_cmds);
  g_async_queue_push (s->cmds, c);
}

command *
ses_cmd_new (cmd_kind kind)
{
  command *c = g_new0 (command, 1);
  c->kind = kind;
  return c;
}

void
ses_cmd_free (command *c)
{
  if (c == NULL)
    return;
  g_free (c->node);
  if (c->graph)
    tw_graph_free (c->graph);
  ses_breakpoint_clear (&c->bp);
  if (c->kind == CMD_SUBSCRIBE && c->destroy)
    c->destroy (c->user_data);     /* never subscribed: the session ended first */
  g_free (c);
}

gboolean
ses_terminal (tw_session_state st)
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
      return ses_refuse (error, what, st);
    }
  s->state = TW_SESSION_RUNNING;
  ses_send (s, ses_cmd_new (kind));
  if (!s->started)
    {
      s->started = TRUE;
      s->thread = g_thread_new ("twb-session", ses_worker, s);
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
    ses_send (s, ses_cmd_new (CMD_PAUSE));
  g_mutex_unlock (&s->lock);
  return st == TW_SESSION_RUNNING || ses_refuse (error, "pause", st);
}

gboolean
tw_session_stop (tw_session *s, GError **error)
{
  g_mutex_lock (&s->lock);
  tw_session_state st = s->state;
  gboolean ok = !ses_terminal (st);
  if (st == TW_SESSION_IDLE && !s->started)
    s->state = TW_SESSION_STOPPED;      /* never started: nothing to run */
  else if (ok)
    ses_send (s, ses_cmd_new (CMD_STOP));
  g_mutex_unlock (&s->lock);
  if (ok)
    ses_cancel (s);       /* a preparation under way ends soon */
  if (st == TW_SESSION_IDLE && ok && s->state == TW_SESSION_STOPPED && s->thread == NULL)
    {
      tw_snapshot *sn = ses_snap_new (s, TW_SNAP_FINISHED);
      sn->message = g_strdup ("stopped before the first step");
      ses_push (s, sn);
    }
  return ok || ses_refuse (error, "stop", st);
}

/* A command that changes something at the next boundary: any time before the end. */
static gboolean
send_change (tw_session *s, command *c, const char *what, GError **error)
{
  g_mutex_lock (&s->lock);
  tw_session_state st = s->state;
  if (ses_terminal (st))
    {
      g_mutex_unlock (&s->lock);
      ses_cmd_free (c);
      return ses_refuse (error, what, st);
    }
  ses_send (s, c);
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
  command *c = ses_cmd_new (kind);
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
  command *c = ses_cmd_new (CMD_SET_MODE);
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
  command *c = ses_cmd_new (CMD_FREEZE);
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
      return ses_refuse (error, "edit the graph", st);
    }
  tw_graph_free (s->shadow);
  s->shadow = tw_graph_copy (g);
  tw_graph_infer (s->shadow);
  command *c = ses_cmd_new (CMD_GRAPH);
  c->graph = g_steal_pointer (&g);
  ses_send (s, c);
  g_mutex_unlock (&s->lock);
  return TRUE;
}

gboolean
tw_session_check_breakpoint (const char *spec, GError **error)
{
  breakpoint b;
  if (!ses_breakpoint_parse (spec, &b, error))
    return FALSE;
  ses_breakpoint_clear (&b);
  return TRUE;
}

gboolean
tw_session_add_breakpoint (tw_session *s, const char *spec, GError **error)
{
  command *c = ses_cmd_new (CMD_BREAK_ADD);
  if (!ses_breakpoint_parse (spec, &c->bp, error))
    {
      ses_cmd_free (c);
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
          ses_cmd_free (c);
          return FALSE;
        }
    }
  return send_change (s, c, "set a breakpoint", error);
}

void
tw_session_clear_breakpoints (tw_session *s)
{
  send_change (s, ses_cmd_new (CMD_BREAK_CLEAR), "clear breakpoints", NULL);
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
  command *c = ses_cmd_new (CMD_WATCH);
  c->node = g_strdup (node_id);
  return send_change (s, c, "watch a node", error);
}

/* No worker runs now (not started, or done): the caller may touch the
 * trainer and the bus itself.  Call with the lock held. */
static gboolean
no_worker_locked (tw_session *s)
{
  return (s->state == TW_SESSION_IDLE && !s->started) || ses_terminal (s->state);
}

gboolean
tw_session_request (tw_session *s, const char *name, GError **error)
{
  g_mutex_lock (&s->lock);
  tw_session_state st = s->state;
  gboolean direct = no_worker_locked (s);
  if (st == TW_SESSION_PAUSED)
    {
      command *c = ses_cmd_new (CMD_REQUEST);
      c->node = g_strdup (name);
      ses_send (s, c);
    }
  g_mutex_unlock (&s->lock);
  if (direct && s->trainer == NULL)
    {
      g_set_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_STATE,
                   "cannot copy a tensor: the run has no model set up (it prepares it when it "
                   "starts)");
      return FALSE;
    }
  if (direct)
    ses_request_tensor (s, name);
  return st == TW_SESSION_PAUSED || direct || ses_refuse (error, "copy a tensor (pause first)", st);
}

guint
tw_session_subscribe (tw_session *s, guint mask, tw_event_fn fn, gpointer user_data,
                      GDestroyNotify destroy)
{
  g_return_val_if_fail (fn != NULL, 0);
  guint id = tw_bus_reserve_id (s->bus);
  g_mutex_lock (&s->lock);
  gboolean direct = no_worker_locked (s);
  if (!direct)
    {
      /* The worker subscribes it between two events it publishes. */
      command *c = ses_cmd_new (CMD_SUBSCRIBE);
      c->id = id;
      c->mask = mask;
      c->fn = fn;
      c->user_data = user_data;
      c->destroy = destroy;
      ses_send (s, c);
    }
  g_mutex_unlock (&s->lock);
  if (direct)
    tw_bus_subscribe_id (s->bus, id, mask, fn, user_data, destroy);
  return id;
}

void
tw_session_unsubscribe (tw_session *s, guint id)
{
  g_mutex_lock (&s->lock);
  gboolean direct = no_worker_locked (s);
  if (!direct)
    {
      command *c = ses_cmd_new (CMD_UNSUBSCRIBE);
      c->id = id;
      ses_send (s, c);
    }
  g_mutex_unlock (&s->lock);
  if (direct)
    tw_bus_unsubscribe (s->bus, id);
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
tw_session_step_samples (tw_session *s)
{
  return s->samples;
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

void
ses_set_state (tw_session *s, tw_session_state st)
{
  g_mutex_lock (&s->lock);
  s->state = st;
  g_mutex_unlock (&s->lock);
}

