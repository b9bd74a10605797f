/* session.c — a training session on its own thread (session.h).
 *
 * The worker runs the epoch loop and is a client of its trainer's event bus:
 * every op event is a place where it may pause (block for the next command),
 * check breakpoints and the NaN watch, or copy watched tensors.  Commands
 * arrive through a queue; the caller-side functions check the state under a
 * lock and refuse what makes no sense, so nothing blocks. */
#define G_LOG_DOMAIN "twb-session"

#include "engine/session-private.h"
#include "engine/cpu/scan.h"
#include "engine/data-fit.h"
#include "engine/device.h"
#include "engine/params.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Gradients are only looked at (and, in compiled mode, their norms only
 * computed) when metrics or a breakpoint need them. */
static guint
session_mask (tw_session *s)
{
  /* A pause may come at any op's end (a NaN, a pause command): its inputs
   * are shown as the op read them, also where compiled mode writes over
   * them (TW_EV_INPUTS_AT_END; a copy per in-place instruction). */
  guint m =
    TW_EV_MASK_OPS | TW_EV_BIT (TW_EV_KERNEL) | TW_EV_BIT (TW_EV_ITERATION) | TW_EV_INPUTS_AT_END;
  if (s->opt.grad_norms)
    m |= TW_EV_BIT (TW_EV_GRAD_READY);
  return m;
}

/* ---- the worker: commands ------------------------------------------------------- */

static void ses_update_inspect (tw_session *s);

static void ses_refresh_graph_names (tw_session *s);
static gboolean ses_make_trainer (tw_session *s, GError **error);

/* Gradient norms were turned on: listen to grad_ready from now on. */
static void
refresh_grad_norms (tw_session *s)
{
  ses_refresh_graph_names (s);
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
      ses_cmd_free (c);
      return TRUE;
    case CMD_SET_MODE:
      s->mode_dirty = TRUE;
      s->mode = (tw_exec_mode) c->value;
      ses_cmd_free (c);
      return TRUE;
    case CMD_FREEZE:
      g_ptr_array_add (s->freeze, c);
      return TRUE;
    case CMD_GRAPH:
      if (s->new_graph)
        tw_graph_free (s->new_graph);
      s->new_graph = g_steal_pointer (&c->graph);
      ses_cmd_free (c);
      return TRUE;
    case CMD_BREAK_ADD:
      /* A nan / inf breakpoint watches even where --allow-nan turned the
       * watch off (then only what it names stops the run). */
      if (c->bp.kind == BREAK_NAN || c->bp.kind == BREAK_INF)
        s->opt.nan_watch = TRUE;
      if (c->bp.kind == BREAK_GRAD_NORM && !s->opt.grad_norms)
        {
          s->opt.grad_norms = TRUE;
          refresh_grad_norms (s);
        }
      g_array_append_val (s->breaks, c->bp);
      memset (&c->bp, 0, sizeof c->bp);
      ses_cmd_free (c);
      ses_update_inspect (s);
      return TRUE;
    case CMD_BREAK_CLEAR:
      for (guint i = 0; i < s->breaks->len; i++)
        ses_breakpoint_clear (&g_array_index (s->breaks, breakpoint, i));
      g_array_set_size (s->breaks, 0);
      ses_cmd_free (c);
      ses_update_inspect (s);
      return TRUE;
    case CMD_WATCH:
      if (c->node)
        g_hash_table_add (s->watch, g_strdup (c->node));
      else
        g_hash_table_remove_all (s->watch);
      ses_cmd_free (c);
      ses_update_inspect (s);
      return TRUE;
    case CMD_PAUSE:
      s->pause_requested = TRUE;
      ses_cmd_free (c);
      return TRUE;
    case CMD_REQUEST:
      ses_request_tensor (s, c->node);
      ses_cmd_free (c);
      return TRUE;
    case CMD_SUBSCRIBE:
      /* On the publishing thread, between two events: the bus is not being
       * walked by anyone else (events.c tolerates a change during its own walk). */
      tw_bus_subscribe_id (s->bus, c->id, c->mask, c->fn, c->user_data, c->destroy);
      c->destroy = NULL;
      ses_cmd_free (c);
      return TRUE;
    case CMD_UNSUBSCRIBE:
      tw_bus_unsubscribe (s->bus, c->id);
      ses_cmd_free (c);
      return TRUE;
    case CMD_SAVE_WEIGHTS:
      {
        GError *err = NULL;
        if (s->paused_phase == TW_PHASE_UPDATE)
          g_set_error (&err, TW_SESSION_ERROR, TW_SESSION_ERROR_STATE,
                       "cannot save weights in the middle of the step's updates: step to the "
                       "end of the iteration first");
        else
          tw_trainer_save_weights (s->trainer, c->node, &err);
        g_mutex_lock (&s->lock);
        s->reply_error = err;
        s->reply_ready = TRUE;
        g_cond_broadcast (&s->reply);
        g_mutex_unlock (&s->lock);
        ses_cmd_free (c);
        return TRUE;
      }
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
  ses_cmd_free (c);
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

void
ses_request_tensor (tw_session *s, const char *name)
{
  tw_params *params = tw_trainer_params (s->trainer);
  tw_tensor *t = NULL;
  const char *role = "parameter";
  g_autofree char *why = NULL;
  if (g_str_has_prefix (name, "grad:"))
    {
      tw_param *p = tw_params_get (params, name + 5);
      t = p ? p->grad : NULL;
      role = "gradient";
      if (p && t == NULL)
        why = g_strdup_printf ("%s has no gradient (a buffer, or none computed yet)", name + 5);
    }
  else if (g_str_has_prefix (name, "state:"))
    {
      g_autofree char *pname = g_strdup (name + 6);
      char *colon = strrchr (pname, ':');
      int k = colon ? atoi (colon + 1) : 0;
      if (colon)
        *colon = '\0';
      tw_param *p = tw_params_get (params, pname);
      t = p && k >= 0 && k < 2 ? p->state[k] : NULL;
      role = "optimizer state";
      if (p && t == NULL)
        why = g_strdup_printf ("%s has no optimizer state %d (yet)", pname, k);
    }
  else if (tw_params_get (params, name))
    t = tw_params_get (params, name)->value;
  else if (tw_trainer_get_mode (s->trainer) == TW_MODE_EAGER)
    {
      t = tw_eager_value (tw_trainer_executor (s->trainer), name);
      role = "output";
      if (t == NULL && tw_graph_resolve (tw_trainer_model (s->trainer)->graph, name).node >= 0)
        why = g_strdup_printf ("node %s has no value now (not run yet in this iteration, or "
                               "released after it)", name);
    }
  else if (tw_graph_resolve (tw_trainer_model (s->trainer)->graph, name).node >= 0)
    why = g_strdup_printf ("compiled mode keeps node values only for watched nodes: watch %s "
                           "(its values then come each time its op ends)", name);
  if (t == NULL)
    {
      ses_note (s, "no tensor '%s': %s", name, why ? why : "no such parameter or node");
      return;
    }
  tw_snapshot *sn = ses_snap_new (s, TW_SNAP_TENSOR);
  sn->iteration = tw_trainer_step_count (s->trainer) + 1;
  sn->tensors = g_ptr_array_new_with_free_func (ses_snap_tensor_free);
  ses_add_tensor (s, sn->tensors, name, role, t);
  ses_push (s, sn);
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

/* An event's inputs (or outputs) by the names its identity gives them
 * (engine/events.h: the node's values, a backward rule's gradients and
 * intermediates, a compiled instruction's slots), with the role the name
 * says: a gradient ("grad:…"), a parameter, else an input or output.  An
 * identity whose names run short (none should) names the rest by the op. */
static void
add_event_values (tw_session *s, GPtrArray *a, const tw_event *ev, gboolean outputs)
{
  const tw_op_ident *id = ev->ident;
  const char *const *names = outputs ? id->out_names : id->in_names;
  tw_tensor *const *ts = outputs ? ev->outputs : ev->inputs;
  int n = outputs ? ev->n_outputs : ev->n_inputs;
  tw_params *params = tw_trainer_params (s->trainer);
  gboolean ended = names == NULL;
  for (int k = 0; k < n; k++)
    {
      ended |= !ended && names[k] == NULL;
      g_autofree char *fallback = g_strdup_printf ("%s's %s %d", id->label ? id->label : "op",
                                                   outputs ? "output" : "input", k);
      const char *name = ended ? fallback : names[k];
      const char *role = g_str_has_prefix (name, "grad:")    ? "gradient"
                         : tw_params_get (params, name)      ? "parameter"
                         : outputs                            ? "output"
                                                              : "input";
      ses_add_tensor (s, a, name, role, ts[k]);
    }
}

/* The tensors of a paused op: its inputs and outputs as the event gives
 * them, and the parameters (and, past forward, their gradients) of its nodes. */
static GPtrArray *
event_tensors (tw_session *s, const tw_event *ev)
{
  GPtrArray *a = g_ptr_array_new_with_free_func (ses_snap_tensor_free);
  const tw_op_ident *id = ev->ident;
  add_event_values (s, a, ev, FALSE);
  add_event_values (s, a, ev, TRUE);
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
          ses_add_tensor (s, a, name, "parameter", p->value);
          /* A backward event's outputs hold the gradients already. */
          if (ev->ident->phase == TW_PHASE_UPDATE && p->grad
              && tw_trainer_get_mode (s->trainer) == TW_MODE_EAGER)
            {
              g_autofree char *gname = g_strconcat ("grad:", name, NULL);
              ses_add_tensor (s, a, gname, "gradient", p->grad);
            }
        }
    }
  return a;
}

/* The compiled executor's notes since the last call ("training program,
 * batch 64: compiled in 1.2 ms (the graph was edited)") as NOTE snapshots:
 * the window says when and why a new program was compiled. */
void
ses_forward_compile_notes (tw_session *s)
{
  if (tw_trainer_get_mode (s->trainer) != TW_MODE_COMPILED)
    return;
  const GPtrArray *notes = tw_compiled_notes (tw_trainer_compiled (s->trainer));
  for (; s->notes_seen < notes->len; s->notes_seen++)
    ses_note (s, "%s", (const char *) g_ptr_array_index (notes, s->notes_seen));
}

/* Pause here: tell the callers where and why, and wait.  FALSE: stop. */
gboolean
ses_pause_here (tw_session *s, const tw_event *ev, char *reason /* taken */)
{
  ses_forward_compile_notes (s);
  ses_set_state (s, TW_SESSION_PAUSED);
  s->paused_phase = ev && ev->ident ? ev->ident->phase : -1;
  tw_snapshot *sn = ses_snap_new (s, TW_SNAP_PAUSED);
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
        ses_add_tensor (s, sn->tensors, ev->param->name, "parameter", ev->param->value);
    }
  else if (ev && ev->kind == TW_EV_ITERATION && ev->end)
    sn->iteration--;
  sn->trace = trace_strings (s);
  s->go = GO_FREE;
  s->pause_requested = FALSE;
  /* Paused time is no step's. */
  tw_rate_stop (s->rate, tw_now_ns ());
  ses_push (s, sn);
  gboolean go_on = wait_for_go (s);
  tw_rate_start (s->rate, tw_now_ns ());
  return go_on;
}

/* ---- the worker: event client ------------------------------------------------------ */

static gboolean
ses_covers (const tw_op_ident *id, const char *node)
{
  for (int k = 0; k < id->n_nodes; k++)
    if (strcmp (id->nodes[k], node) == 0)
      return TRUE;
  return FALSE;
}

static void
copy_watched (tw_session *s, const tw_event *ev)
{
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init (&it, s->watch);
  while (g_hash_table_iter_next (&it, &key, NULL))
    if (ses_covers (ev->ident, key))
      {
        tw_snapshot *sn = ses_snap_new (s, TW_SNAP_TENSOR);
        sn->iteration = tw_trainer_step_count (s->trainer) + 1;
        sn->phase = ev->ident->phase;
        sn->nodes = g_strdupv ((char **) ev->ident->nodes);
        sn->op = g_strdup (ev->ident->label);
        sn->tensors = g_ptr_array_new_with_free_func (ses_snap_tensor_free);
        add_event_values (s, sn->tensors, ev, TRUE);
        ses_push (s, sn);
        return;
      }
}

static void
count_correct (tw_session *s, tw_tensor *pred)
{
  int64_t k = tw_count_correct (pred, s->labels);
  if (k >= 0)
    {
      s->correct = k;
      s->have_accuracy = TRUE;
    }
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
      gboolean ok = checked ? ses_watch_deferred (s, ev, &go_on)
                    : ev->kind == TW_EV_UPDATE && !ev->compiled ? ses_watch_update (s, ev, &go_on)
                                                                : ses_watch_nan (s, ev, &go_on);
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
              && ses_covers (id, b->node))
            reason = g_strdup_printf ("breakpoint %s", b->spec);
          else if (b->kind == BREAK_LOSS && id->phase == TW_PHASE_FORWARD && s->loss_id
                   && ses_covers (id, s->loss_id) && ev->n_outputs > 0)
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
    return ses_pause_here (s, ev, g_steal_pointer (&reason));
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
          return ses_pause_here (s, ev, reason);
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
ses_refresh_graph_names (tw_session *s)
{
  const tw_graph *g = tw_trainer_model (s->trainer)->graph;
  g_clear_pointer (&s->loss_id, g_free);
  g_clear_pointer (&s->pred_ref, g_free);
  const tw_node *loss = tw_graph_find_loss (g);
  s->loss_id = loss ? g_strdup (loss->id) : NULL;
  s->pred_ref = g_strdup (tw_graph_prediction (g));
  g_clear_pointer (&s->grad_sq, g_free);
  s->n_grad = tw_params_count (tw_trainer_params (s->trainer));
  if (s->opt.grad_norms)
    s->grad_sq = g_new0 (double, MAX (s->n_grad, 1));
}

/* Nodes that compiled mode must keep unfused: breakpoints and watches. */
static void
ses_update_inspect (tw_session *s)
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
      ses_note (s, "compiled mode: %s left unfused so that %s values can be inspected (the program "
               "is rebuilt)",
            list, ids->len > 2 ? "their" : "its");
    }
}

static void
set_mode (tw_session *s, tw_exec_mode mode)
{
  tw_trainer_set_mode (s->trainer, mode);
  ses_update_inspect (s);
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
        ses_note (s, "%s", error->message);
    }
  g_ptr_array_set_size (s->freeze, 0);
  if (s->new_graph)
    {
      tw_graph_change change = { 0 };
      g_autoptr (GError) error = NULL;
      tw_graph *g = g_steal_pointer (&s->new_graph);
      if (!tw_trainer_replace_graph (s->trainer, g, &change, &error))
        ses_note (s, "the edited graph was not applied: %s", error->message);
      else
        {
          tw_snapshot *sn = ses_snap_new (s, TW_SNAP_GRAPH_CHANGED);
          sn->change = change;
          ses_push (s, sn);
          ses_refresh_graph_names (s);
          /* Breakpoints and watches on nodes that are gone go with them. */
          const tw_graph *ng = tw_trainer_model (s->trainer)->graph;
          for (guint i = s->breaks->len; i-- > 0;)
            {
              breakpoint *b = &g_array_index (s->breaks, breakpoint, i);
              if (b->kind == BREAK_NODE && tw_graph_find (ng, b->node) == NULL)
                {
                  ses_note (s, "breakpoint %s removed: the node is gone", b->spec);
                  ses_breakpoint_clear (b);
                  g_array_remove_index (s->breaks, i);
                }
            }
          ses_update_inspect (s);
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
  ses_set_state (s, st);
  tw_snapshot *sn = ses_snap_new (s, TW_SNAP_FINISHED);
  sn->message = g_strdup (message);
  sn->train_loss = train_loss;
  sn->test_loss = test_loss;
  sn->test_accuracy = test_acc;
  sn->val_loss = val_loss;
  sn->val_accuracy = val_acc;
  ses_push (s, sn);
  return st == TW_SESSION_FINISHED;
}

static void
push_metrics (tw_session *s, int64_t epoch, double loss, double ms, int64_t batch)
{
  tw_snapshot *sn = ses_snap_new (s, TW_SNAP_METRICS);
  sn->epoch = epoch;
  sn->loss = loss;
  sn->accuracy = s->have_accuracy ? (double) s->correct / MAX (batch, 1) : NAN;
  sn->lr = tw_trainer_current_lr (s->trainer);
  sn->step_ms = ms;
  sn->samples_per_s = tw_rate_samples_per_s (s->rate);
  sn->eta_s = tw_rate_eta_s (s->rate, s->total - tw_trainer_step_count (s->trainer), tw_now_ns ());
  sn->comm_bytes = NAN;
  if (s->opt.comm)
    {
      tw_dist_stats ds;
      tw_trainer_dist_stats (s->trainer, &ds);
      sn->comm_bytes = ds.last_sent_bytes;
      sn->n_ranks = tw_trainer_rank_step_ms (s->trainer, NULL, 0);
      if (sn->n_ranks > 0)
        {
          sn->rank_step_ms = g_new (double, sn->n_ranks);
          tw_trainer_rank_step_ms (s->trainer, sn->rank_step_ms, sn->n_ranks);
        }
    }
  if (s->grad_sq)
    {
      tw_params *params = tw_trainer_params (s->trainer);
      int n = MIN (s->n_grad, tw_params_count (params)), m = 0;
      /* A pipeline rank knows its own stage's gradients only (the others'
       * come to it as zeros: parameters its sub-graph does not reach). */
      int stage = tw_trainer_pipeline_stage (s->trainer);
      sn->param_names = g_new0 (char *, n + 1);
      sn->grad_norm = g_new0 (double, MAX (n, 1));
      for (int i = 0; i < n; i++)
        {
          tw_param *p = tw_params_at (params, i);
          if (!p->trainable)
            continue;
          sn->param_names[m] = g_strdup (p->name);
          gboolean mine = stage < 0 || tw_trainer_pipeline_param_stage (s->trainer, i) == stage;
          sn->grad_norm[m++] = mine ? sqrt (s->grad_sq[i]) : NAN;
        }
    }
  ses_push (s, sn);
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

/* A PREPARING snapshot saying what the worker prepares now. */
static void
preparing (tw_session *s, const char *fmt, ...) G_GNUC_PRINTF (2, 3);

static void
preparing (tw_session *s, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  tw_snapshot *sn = ses_snap_new (s, TW_SNAP_PREPARING);
  sn->message = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  ses_push (s, sn);
}

/* A deferred session's preparation (tw_session_new_deferred), on the worker
 * before its first step: the datasets, the trainer, the initial weights,
 * the cancellable looked at between them.  FALSE: the run ended (its
 * FINISHED snapshot is queued). */
static gboolean
ses_prepare (tw_session *s)
{
  if (s->prepared)
    return TRUE;
  g_autoptr (GError) error = NULL;
  const char *data = s->src_data ? s->src_data : s->model->recipe.dataset;
  preparing (s, "Preparing the data (%s)…", data ? data : "no dataset");
  /* The copy has no shapes yet; the data is fitted to the input's. */
  tw_graph_infer (s->model->graph);
  gboolean ok = tw_datasets_open_for_training_cancellable (s->model, s->src_data,
                                                           s->src_want_test, &s->train, &s->val,
                                                           &s->test, s->cancel, &error);
  if (ok && !g_cancellable_set_error_if_cancelled (s->cancel, &error))
    {
      preparing (s, "Setting up the model…");
      ok = ses_make_trainer (s, &error);
    }
  else
    ok = FALSE;
  if (ok && s->src_init_weights && !g_cancellable_set_error_if_cancelled (s->cancel, &error))
    {
      g_autofree char *base = g_path_get_basename (s->src_init_weights);
      preparing (s, "Loading the weights in %s…", base);
      tw_state_dict_report rep = { 0 };
      ok = tw_params_load_state_dict_file (tw_trainer_params (s->trainer), s->src_init_weights,
                                           FALSE, &rep, &error);
      tw_state_dict_report_clear (&rep);
    }
  if (ok && g_cancellable_set_error_if_cancelled (s->cancel, &error))
    ok = FALSE;
  if (!ok)
    {
      gboolean stopped = g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
      finish_with (s, stopped ? TW_SESSION_STOPPED : TW_SESSION_FAILED,
                   stopped ? "stopped while preparing the run" : error->message, NAN, NAN, NAN,
                   NAN, NAN);
      return FALSE;
    }
  tw_snapshot *sn = ses_snap_new (s, TW_SNAP_READY);
  sn->total_steps = s->total;
  sn->per_epoch = s->per_epoch;
  ses_push (s, sn);
  return TRUE;
}

gpointer
ses_worker (gpointer data)
{
  tw_session *s = data;
  tw_set_thread_num_threads (s->opt.threads);
  if (!ses_prepare (s))
    return GINT_TO_POINTER (FALSE);
  if (s->opt.comm)
    {
      g_autoptr (GError) error = NULL;
      gboolean ok = s->opt.pipeline.stages > 0
                      ? tw_trainer_set_pipeline (s->trainer, s->opt.comm, &s->opt.pipeline, &error)
                      : tw_trainer_set_dist (s->trainer, s->opt.comm, &s->opt.dist, &error);
      if (!ok)
        return GINT_TO_POINTER (finish_with (s, TW_SESSION_FAILED, error->message, NAN, NAN, NAN,
                                             NAN, NAN));
    }
  const tw_recipe *r = &tw_trainer_model (s->trainer)->recipe;
  g_autoptr (tw_batcher) b = tw_batcher_new (s->train, r->batch_size, TRUE, r->seed, FALSE);
  int64_t per_epoch = s->per_epoch, total = s->total;
  double val_loss = NAN, val_acc = NAN, loss = NAN;
  double epoch_loss_sum = 0;
  int64_t epoch_loss_n = 0;

  int64_t all_epochs;
  if (!tw_size_mul (per_epoch, r->epochs, &all_epochs))
    all_epochs = G_MAXINT64;   /* epochs from the file may be any count: saturate */
  tw_trainer_set_total_steps (s->trainer, all_epochs);
  if (!wait_for_go (s))
    return GINT_TO_POINTER (finish_with (s, TW_SESSION_STOPPED, "stopped before the first step",
                                         NAN, NAN, NAN, NAN, NAN));
  ses_set_state (s, TW_SESSION_RUNNING);
  apply_pending (s);
  tw_rate_start (s->rate, tw_now_ns ());

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
          /* (An epoch that ends passes through here twice before the same step.) */
          const breakpoint *at = step_break (s);
          int64_t next = tw_trainer_step_count (s->trainer) + 1;
          if (go_on && at && s->step_break_done != next)
            {
              s->step_break_done = next;
              go_on = ses_pause_here (s, NULL, g_strdup_printf ("breakpoint %s", at->spec));
            }
          else if (go_on && s->pause_requested)
            go_on = ses_pause_here (s, NULL, g_strdup ("paused between iterations"));
          if (go_on)
            {
              ses_set_state (s, TW_SESSION_RUNNING);
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
          if (s->opt.nan_watch && ses_nonfinite (x))
            {
              g_autofree char *msg = g_strdup_printf (
                "step %" G_GINT64_FORMAT ": the data batch holds %s values",
                tw_trainer_step_count (s->trainer) + 1, ses_nonfinite (x) == 1 ? "NaN" : "Inf");
              tw_tensor_unref (x);
              tw_tensor_unref (y);
              return GINT_TO_POINTER (
                finish_with (s, TW_SESSION_FAILED, msg, NAN, NAN, NAN, val_loss, val_acc));
            }
          gint64 t0 = g_get_monotonic_time ();
          gboolean ok = tw_trainer_step (s->trainer, x, y, &loss, &error);
          double ms = (g_get_monotonic_time () - t0) / 1000.0;
          ses_forward_compile_notes (s);
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
          if (s->opt.comm)
            {
              /* The whole global batch's, summed over the ranks. */
              int64_t c = tw_trainer_pipeline_stage (s->trainer) >= 0
                            ? tw_trainer_pipeline_correct (s->trainer)
                            : tw_trainer_dist_correct (s->trainer);
              s->have_accuracy = c >= 0;
              s->correct = MAX (c, 0);
            }
          g_array_append_val (s->times, ms);
          tw_rate_step (s->rate, tw_now_ns (), bs);
          s->samples += bs;
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
      /* Validation and checkpoints are no training step's time. */
      tw_rate_stop (s->rate, tw_now_ns ());
      if (k >= per_epoch)
        {
          g_autoptr (GError) error = NULL;
          s->in_eval = TRUE;
          gboolean ok = s->val == NULL
                        || tw_trainer_evaluate (s->trainer, s->val, s->opt.eval_batch, &val_loss,
                                                &val_acc, &error);
          tw_class_report *classes = NULL;
          const tw_dataset *judge = s->test ? s->test : s->val;
          if (ok && s->opt.class_samples > 0 && judge && judge->n_classes > 1)
            {
              classes = g_new0 (tw_class_report, 1);
              /* Not a classifier after all (an output that is not [N, C]): no report. */
              if (!tw_trainer_classify (s->trainer, judge, s->opt.eval_batch,
                                        s->opt.class_samples, classes, NULL))
                g_clear_pointer (&classes, g_free);
            }
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
          tw_snapshot *sn = ses_snap_new (s, TW_SNAP_EPOCH);
          sn->epoch = epoch;
          sn->val_loss = val_loss;
          sn->val_accuracy = val_acc;
          sn->train_loss = epoch_loss_n ? epoch_loss_sum / epoch_loss_n : NAN;
          sn->classes = classes;
          ses_push (s, sn);
        }
      /* A pipeline's or sharded optimizer's checkpoint is collective:
       * every rank gathers, rank 0 writes. */
      if (s->opt.checkpoint
          && (tw_trainer_rank (s->trainer) == 0
              || tw_trainer_checkpoint_is_collective (s->trainer)))
        {
          g_autoptr (GError) error = NULL;
          gboolean done = k >= per_epoch;
          if (!tw_trainer_save_checkpoint (s->trainer, s->opt.checkpoint, done ? epoch + 1 : epoch,
                                           done ? 0 : k, &error))
            return GINT_TO_POINTER (
              finish_with (s, TW_SESSION_FAILED, error->message, NAN, NAN, NAN, val_loss, val_acc));
        }
      tw_rate_start (s->rate, tw_now_ns ());
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

/* The cheap half of making a session: the copies, the queues, the bus. */
static tw_session *
session_alloc (const tw_model *model, const tw_session_options *options)
{
  tw_session *s = g_new0 (tw_session, 1);
  g_mutex_init (&s->lock);
  g_cond_init (&s->reply);
  s->paused_phase = -1;
  s->cmds = g_async_queue_new ();
  s->snaps = g_async_queue_new ();
  s->cancel = g_cancellable_new ();
  if (options)
    {
      s->opt = *options;
      s->opt.checkpoint = g_strdup (options->checkpoint);
    }
  else
    tw_session_options_init (&s->opt);
  s->opt.max_queued = MAX (s->opt.max_queued, 1);
  s->opt.eval_batch = MAX (s->opt.eval_batch, 1);
  if (s->opt.allow_nan)
    s->opt.nan_watch = FALSE;
  s->breaks = g_array_new (FALSE, FALSE, sizeof (breakpoint));
  s->watch = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  s->freeze = g_ptr_array_new_with_free_func ((GDestroyNotify) ses_cmd_free);
  s->trace = g_array_new (FALSE, FALSE, sizeof (trace_entry));
  s->deferred = g_array_new (FALSE, FALSE, sizeof (deferred_check));
  s->grad_producer = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  s->times = g_array_new (FALSE, FALSE, sizeof (double));
  s->rate = tw_rate_new (TW_RATE_WINDOW_NS);
  s->model = model_copy (model);
  s->shadow = tw_graph_copy (model->graph);
  tw_graph_infer (s->shadow);
  s->bus = tw_bus_new ();
  s->client = tw_bus_subscribe (s->bus, session_mask (s), on_event, s, NULL);
  return s;
}

/* The slow half: the trainer over the datasets (the parameters are
 * initialised here), and the steps to take. */
static gboolean
ses_make_trainer (tw_session *s, GError **error)
{
  s->trainer = tw_trainer_new (s->model, error);
  if (s->trainer == NULL)
    return FALSE;
  tw_trainer_set_num_threads (s->trainer, MAX (s->opt.threads, 1));
  tw_trainer_set_allow_nan (s->trainer, s->opt.allow_nan);
  tw_trainer_set_bus (s->trainer, s->bus);
  tw_trainer_set_grad_norms (s->trainer, s->opt.grad_norms);
  ses_refresh_graph_names (s);
  {
    const tw_recipe *r = &s->model->recipe;
    g_autoptr (tw_batcher) b = tw_batcher_new (s->train, r->batch_size, TRUE, r->seed, FALSE);
    s->per_epoch = tw_batcher_batches_per_epoch (b);
    if (!tw_size_mul (s->per_epoch, r->epochs, &s->total))
      s->total = G_MAXINT64;   /* epochs from the file may be any count: saturate */
    if (s->opt.max_steps > 0 && s->opt.max_steps < s->total)
      s->total = s->opt.max_steps;
  }
  if (s->opt.mode == TW_MODE_COMPILED)
    set_mode (s, TW_MODE_COMPILED);
  s->prepared = TRUE;
  return TRUE;
}

tw_session *
tw_session_new (const tw_model *model, tw_dataset *train, tw_dataset *val, tw_dataset *test,
                const tw_session_options *options, GError **error)
{
  tw_session *s = session_alloc (model, options);
  s->train = train;
  s->val = val;
  s->test = test;
  if (train == NULL)
    {
      g_set_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_ARG, "a session needs training data");
      tw_session_free (s);
      return NULL;
    }
  if (!ses_make_trainer (s, error))
    {
      tw_session_free (s);
      return NULL;
    }
  return s;
}

tw_session *
tw_session_new_deferred (const tw_model *model, const tw_session_source *source,
                         const tw_session_options *options, GError **error)
{
  tw_session *s = session_alloc (model, options);
  s->src_data = g_strdup (source ? source->data : NULL);
  s->src_want_test = source && source->want_test;
  s->src_init_weights = g_strdup (source ? source->init_weights : NULL);
  return s;
}

void
ses_cancel (tw_session *s)
{
  g_cancellable_cancel (s->cancel);
}

static gboolean
check_idle (tw_session *s, const char *what, GError **error)
{
  g_mutex_lock (&s->lock);
  tw_session_state st = s->state;
  gboolean started = s->started;
  g_mutex_unlock (&s->lock);
  if (st == TW_SESSION_IDLE && !started && s->trainer == NULL)
    {
      g_set_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_STATE,
                   "cannot %s: the session prepares its model when it starts", what);
      return FALSE;
    }
  if (st == TW_SESSION_IDLE && !started)
    return TRUE;
  return ses_refuse (error, what, st);
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

gboolean
tw_session_init_weights (tw_session *s, const char *path, gboolean strict,
                         tw_state_dict_report *report, GError **error)
{
  if (!check_idle (s, "load weights", error))
    return FALSE;
  return tw_params_load_state_dict_file (tw_trainer_params (s->trainer), path, strict, report,
                                         error);
}

gboolean
tw_session_save_weights (tw_session *s, const char *path, GError **error)
{
  g_mutex_lock (&s->lock);
  tw_session_state st = s->state;
  gboolean started = s->started;
  if (st == TW_SESSION_PAUSED)
    {
      /* The worker waits for commands while paused: it saves and answers. */
      command *c = ses_cmd_new (CMD_SAVE_WEIGHTS);
      c->node = g_strdup (path);
      s->reply_ready = FALSE;
      ses_send (s, c);
      while (!s->reply_ready)
        g_cond_wait (&s->reply, &s->lock);
      GError *err = g_steal_pointer (&s->reply_error);
      g_mutex_unlock (&s->lock);
      if (err)
        {
          g_propagate_error (error, err);
          return FALSE;
        }
      return TRUE;
    }
  g_mutex_unlock (&s->lock);
  if (((st == TW_SESSION_IDLE && !started) || ses_terminal (st)) && s->trainer == NULL)
    {
      g_set_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_STATE,
                   "cannot save weights: the run has none (it ended before its model was "
                   "set up)");
      return FALSE;
    }
  if ((st == TW_SESSION_IDLE && !started) || ses_terminal (st))
    return tw_trainer_save_weights (s->trainer, path, error);
  return ses_refuse (error, "save weights", st);
}

void
tw_session_free (tw_session *s)
{
  if (s == NULL)
    return;
  if (s->thread)
    {
      g_mutex_lock (&s->lock);
      if (!ses_terminal (s->state))
        ses_send (s, ses_cmd_new (CMD_STOP));
      g_mutex_unlock (&s->lock);
      ses_cancel (s);
      g_thread_join (s->thread);
    }
  command *c;
  while ((c = g_async_queue_try_pop (s->cmds)))
    ses_cmd_free (c);
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
    ses_breakpoint_clear (&g_array_index (s->breaks, breakpoint, i));
  g_array_unref (s->breaks);
  g_hash_table_unref (s->watch);
  g_ptr_array_unref (s->freeze);
  if (s->new_graph)
    tw_graph_free (s->new_graph);
  g_array_unref (s->trace);
  g_array_unref (s->deferred);
  g_hash_table_unref (s->grad_producer);
  g_array_unref (s->times);
  tw_rate_free (s->rate);
  g_free (s->grad_sq);
  g_free (s->loss_id);
  g_free (s->pred_ref);
  g_free (s->fail_message);
  tw_session_options_clear (&s->opt);
  g_free (s->src_data);
  g_free (s->src_init_weights);
  g_clear_object (&s->cancel);
  g_clear_error (&s->reply_error);
  g_cond_clear (&s->reply);
  g_mutex_clear (&s->lock);
  g_free (s);
}
