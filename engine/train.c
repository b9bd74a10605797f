/* train.c — training steps, evaluation and checkpoints. */
#define G_LOG_DOMAIN "twb-train"

#include "engine/train-private.h"
#include "engine/device.h"
#include "engine/safetensors.h"

#include <math.h>
#include <string.h>


/* The eager update of parameter i is an UPDATE event naming the node that
 * owns it (the scope of "fc1.weight"). */
static void
build_update_idents (tw_trainer *tr)
{
  g_clear_pointer (&tr->upd_ident, g_array_unref);
  g_clear_pointer (&tr->upd_strings, g_ptr_array_unref);
  tr->upd_ident = g_array_new (FALSE, TRUE, sizeof (tw_op_ident));
  tr->upd_strings = g_ptr_array_new_with_free_func (g_free);
  int np = tw_params_count (tr->params);
  g_array_set_size (tr->upd_ident, np);
  for (int i = 0; i < np; i++)
    {
      tw_param *p = tw_params_at (tr->params, i);
      const char **nodes = g_new0 (const char *, 2);
      int *index = g_new (int, 1);
      char *scope = g_strdup (p->name);
      char *dot = strrchr (scope, '.');
      if (dot)
        *dot = '\0';
      nodes[0] = scope;
      const tw_node *n = tw_graph_find (tr->model->graph, scope);
      *index = n ? tw_graph_index_of (tr->model->graph, n->id) : -1;
      g_ptr_array_add (tr->upd_strings, scope);
      g_ptr_array_add (tr->upd_strings, nodes);
      g_ptr_array_add (tr->upd_strings, index);
      /* Its event reads the value and its gradient and writes the value. */
      char **in = g_new0 (char *, 3), **out = g_new0 (char *, 2);
      in[0] = g_strdup (p->name);
      in[1] = g_strconcat ("grad:", p->name, NULL);
      out[0] = g_strdup (p->name);
      g_ptr_array_add (tr->upd_strings, in[0]);
      g_ptr_array_add (tr->upd_strings, in[1]);
      g_ptr_array_add (tr->upd_strings, in);
      g_ptr_array_add (tr->upd_strings, out[0]);
      g_ptr_array_add (tr->upd_strings, out);
      double numel = (double) tw_tensor_numel (p->value);
      tw_op_ident id = { .label = "optimizer update", .nodes = nodes, .node_index = index,
                         .n_nodes = 1, .phase = TW_PHASE_UPDATE, .layer_end = TRUE,
                         .flops = 4 * numel, .bytes = 7 * numel * sizeof (float),
                         .device = tw_device_cpu (), .in_names = (const char *const *) in,
                         .out_names = (const char *const *) out };
      g_array_index (tr->upd_ident, tw_op_ident, i) = id;
    }
}

tw_trainer *
tw_trainer_new (tw_model *model, GError **error)
{
  g_autoptr (tw_trainer) tr = g_new0 (tw_trainer, 1);
  tr->model = model;
  tr->params = tw_params_new ();
  tr->num_threads = 1;
  tr->ex = tw_eager_new (model->graph, tr->params, model->recipe.seed, error);
  if (tr->ex == NULL)
    return NULL;
  if (tw_graph_find_loss (model->graph) == NULL)
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH,
                   "the model has no loss node to train (add cross_entropy, mse_loss or "
                   "bce_with_logits)");
      return NULL;
    }
  if (tw_graph_find_source (model->graph, "data") == NULL)
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH,
                   "the model has no input node with role \"data\"");
      return NULL;
    }
  tr->opt = tw_optimizer_new (&model->recipe.optimizer);
  tr->lr = model->recipe.optimizer.lr;
  build_update_idents (tr);
  return g_steal_pointer (&tr);
}

void
tw_trainer_free (tw_trainer *tr)
{
  if (tr == NULL)
    return;
  g_clear_pointer (&tr->dist, tw_dist_free);
  g_clear_pointer (&tr->pipe, tw_pipe_free);
  tw_eager_free (tr->ex);
  tw_compiled_free (tr->compiled);
  if (tr->opt)
    tw_optimizer_free (tr->opt);
  if (tr->params)
    tw_params_free (tr->params);
  g_clear_pointer (&tr->bus, tw_bus_unref);
  g_clear_pointer (&tr->upd_ident, g_array_unref);
  g_clear_pointer (&tr->upd_strings, g_ptr_array_unref);
  g_free (tr->rank_ms);
  g_free (tr);
}

void
tw_trainer_set_rank_ms (tw_trainer *tr, const double *ms, int n)
{
  if (n != tr->n_rank_ms)
    {
      g_free (tr->rank_ms);
      tr->rank_ms = g_new0 (double, MAX (n, 1));
      tr->n_rank_ms = n;
    }
  memcpy (tr->rank_ms, ms, n * sizeof (double));
}

int
tw_trainer_rank_step_ms (tw_trainer *tr, double *out, int max)
{
  for (int i = 0; out && i < MIN (max, tr->n_rank_ms); i++)
    out[i] = tr->rank_ms[i];
  return tr->n_rank_ms;
}

tw_params *
tw_trainer_params (tw_trainer *tr)
{
  return tr->params;
}

tw_eager *
tw_trainer_executor (tw_trainer *tr)
{
  return tr->ex;
}

void
tw_trainer_set_num_threads (tw_trainer *tr, int n)
{
  tr->num_threads = MAX (1, n);
  tw_eager_set_num_threads (tr->ex, tr->num_threads);
  if (tr->compiled)
    tw_compiled_set_num_threads (tr->compiled, tr->num_threads);
}

tw_compiled *
tw_trainer_compiled (tw_trainer *tr)
{
  if (tr->compiled == NULL)
    {
      /* The graph was checked by the eager executor already. */
      tr->compiled = tw_compiled_new (tr->model->graph, tr->params, tr->model->recipe.seed, NULL);
      g_assert (tr->compiled != NULL);
      tw_compiled_set_num_threads (tr->compiled, tr->num_threads);
      tw_compiled_set_optimizer (tr->compiled, tr->opt);
      tw_compiled_set_allow_nan (tr->compiled, tr->allow_nan);
      tw_compiled_set_bus (tr->compiled, tr->bus);
      tw_compiled_set_grad_norms (tr->compiled, tr->grad_norms);
    }
  return tr->compiled;
}

void
tw_trainer_set_mode (tw_trainer *tr, tw_exec_mode mode)
{
  tr->mode = mode;
  if (mode == TW_MODE_COMPILED)
    tw_trainer_compiled (tr);
}

tw_exec_mode
tw_trainer_get_mode (const tw_trainer *tr)
{
  return tr->mode;
}

void
tw_trainer_set_bus (tw_trainer *tr, tw_bus *bus)
{
  if (bus)
    tw_bus_ref (bus);
  g_clear_pointer (&tr->bus, tw_bus_unref);
  tr->bus = bus;
  tw_eager_set_bus (tr->ex, bus);
  if (tr->compiled)
    tw_compiled_set_bus (tr->compiled, bus);
}

void
tw_trainer_set_grad_norms (tw_trainer *tr, gboolean on)
{
  tr->grad_norms = on;
  if (tr->compiled)
    tw_compiled_set_grad_norms (tr->compiled, on);
}

tw_bus *
tw_trainer_bus (tw_trainer *tr)
{
  return tr->bus;
}

gboolean
tw_trainer_stop_pending (tw_trainer *tr)
{
  gboolean p = tr->stop_pending;
  tr->stop_pending = FALSE;
  return p;
}

tw_model *
tw_trainer_model (tw_trainer *tr)
{
  return tr->model;
}

tw_optimizer *
tw_trainer_optimizer (tw_trainer *tr)
{
  return tr->opt;
}

void
tw_trainer_set_optimizer_config (tw_trainer *tr, const tw_optimizer_config *cfg)
{
  tw_optimizer_config c = *cfg;
  c.type = tr->model->recipe.optimizer.type;
  tr->model->recipe.optimizer = c;
  tw_optimizer_set_config (tr->opt, &c);
}

gboolean
tw_trainer_set_frozen (tw_trainer *tr, const char *node_id, gboolean frozen, GError **error)
{
  const tw_node *n = tw_graph_find (tr->model->graph, node_id);
  if (n == NULL)
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH, "no node '%s' in the graph", node_id);
      return FALSE;
    }
  if (n->n_params == 0)
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH,
                   "node '%s' (%s) has no parameters to freeze", node_id, n->op->name);
      return FALSE;
    }
  for (int k = 0; k < n->n_params; k++)
    {
      g_autofree char *name = tw_node_param_name (n, k);
      tw_param *p = tw_params_get (tr->params, name);
      if (p)
        p->frozen = frozen;
    }
  return TRUE;
}

/* Does node a (in graph ga) compute what node b (in gb) does: same op, the
 * same resolved attributes, parameter shapes and input connections? */
static gboolean
node_unchanged (const tw_graph *ga, const tw_node *a, const tw_graph *gb, const tw_node *b)
{
  if (a->op != b->op || a->n_inputs != b->n_inputs || a->n_params != b->n_params
      || a->n_outputs != b->n_outputs || g_strcmp0 (a->share, b->share) != 0)
    return FALSE;
  for (int k = 0; k < a->n_inputs; k++)
    {
      tw_port pa = a->in_ports[k], pb = b->in_ports[k];
      if (pa.output != pb.output
          || strcmp (tw_graph_node (ga, pa.node)->id, tw_graph_node (gb, pb.node)->id) != 0)
        return FALSE;
    }
  for (int k = 0; k < a->n_params; k++)
    if (!tw_tinfo_equal (&a->params[k].info, &b->params[k].info))
      return FALSE;
  return tw_attrs_equal (a->resolved, b->resolved);
}

gboolean
tw_trainer_replace_graph (tw_trainer *tr, tw_graph *graph, tw_graph_change *change,
                          GError **error)
{
  g_return_val_if_fail (graph != NULL, FALSE);
  if (tw_graph_infer (graph) > 0)
    {
      g_autofree char *msg = tw_graph_errors_to_string (graph);
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH, "the new graph has errors:\n%s",
                   msg);
      tw_graph_free (graph);
      return FALSE;
    }
  if (tw_graph_find_loss (graph) == NULL || tw_graph_find_source (graph, "data") == NULL)
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH,
                   "the new graph needs an input with role \"data\" and a loss node");
      tw_graph_free (graph);
      return FALSE;
    }
  tw_graph *old = tr->model->graph;
  g_autoptr (GPtrArray) kept = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) reinit = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) added = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) removed = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GHashTable) wanted = g_hash_table_new (g_str_hash, g_str_equal);
  for (int i = 0; i < tw_graph_n_nodes (graph); i++)
    {
      const tw_node *n = tw_graph_node (graph, i);
      const tw_node *o = tw_graph_find (old, n->id);
      if (o == NULL)
        {
          g_ptr_array_add (added, g_strdup (n->id));
          continue;
        }
      if (n->n_params == 0 && n->share == NULL)
        continue;
      if (node_unchanged (old, o, graph, n))
        g_ptr_array_add (kept, g_strdup (n->id));
      else
        {
          g_ptr_array_add (reinit, g_strdup (n->id));
          /* Its parameters start again: drop them so the sync below makes new ones. */
          for (int k = 0; k < o->n_params && o->share == NULL; k++)
            {
              g_autofree char *name = tw_node_param_name (o, k);
              tw_params_remove (tr->params, name);
            }
        }
    }
  for (int i = 0; i < tw_graph_n_nodes (old); i++)
    {
      const tw_node *o = tw_graph_node (old, i);
      if (tw_graph_find (graph, o->id) == NULL)
        g_ptr_array_add (removed, g_strdup (o->id));
    }
  /* Parameters no node of the new graph owns go. */
  for (int i = 0; i < tw_graph_n_nodes (graph); i++)
    {
      const tw_node *n = tw_graph_node (graph, i);
      for (int k = 0; k < n->n_params; k++)
        g_hash_table_add (wanted, tw_node_param_name (n, k));
    }
  g_autoptr (GPtrArray) drop = g_ptr_array_new_with_free_func (g_free);
  for (int i = 0; i < tw_params_count (tr->params); i++)
    if (!g_hash_table_contains (wanted, tw_params_at (tr->params, i)->name))
      g_ptr_array_add (drop, g_strdup (tw_params_at (tr->params, i)->name));
  for (guint i = 0; i < drop->len; i++)
    tw_params_remove (tr->params, g_ptr_array_index (drop, i));
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init (&it, wanted);
  while (g_hash_table_iter_next (&it, &key, NULL))
    g_free (key);

  tr->model->graph = graph;
  g_autoptr (GError) local = NULL;
  if (!tw_eager_set_graph (tr->ex, graph, &local)
      || (tr->compiled && !tw_compiled_set_graph (tr->compiled, graph, &local)))
    {
      /* Cannot happen for a graph that inferred; keep the message if it does. */
      g_propagate_error (error, g_steal_pointer (&local));
      return FALSE;
    }
  tw_graph_free (old);
  build_update_idents (tr);
  if (change)
    {
      g_ptr_array_add (kept, NULL);
      g_ptr_array_add (reinit, NULL);
      g_ptr_array_add (added, NULL);
      g_ptr_array_add (removed, NULL);
      change->kept = (char **) g_ptr_array_steal (kept, NULL);
      change->reinitialised = (char **) g_ptr_array_steal (reinit, NULL);
      change->added = (char **) g_ptr_array_steal (added, NULL);
      change->removed = (char **) g_ptr_array_steal (removed, NULL);
    }
  return TRUE;
}

void
tw_graph_change_clear (tw_graph_change *change)
{
  g_clear_pointer (&change->kept, g_strfreev);
  g_clear_pointer (&change->reinitialised, g_strfreev);
  g_clear_pointer (&change->added, g_strfreev);
  g_clear_pointer (&change->removed, g_strfreev);
}

void
tw_trainer_set_total_steps (tw_trainer *tr, int64_t total)
{
  tr->total_steps = total;
}

void
tw_trainer_set_allow_nan (tw_trainer *tr, gboolean allow)
{
  tr->allow_nan = allow;
  if (tr->compiled)
    tw_compiled_set_allow_nan (tr->compiled, allow);
}

int64_t
tw_trainer_step_count (const tw_trainer *tr)
{
  return tr->step;
}

double
tw_trainer_current_lr (const tw_trainer *tr)
{
  return tr->lr;
}

gboolean
tw_trainer_publish_iteration (tw_trainer *tr, gboolean end, gint64 t0, double loss, GError **error)
{
  tw_event ev = { .kind = TW_EV_ITERATION, .end = end, .compiled = tr->mode == TW_MODE_COMPILED,
                  .step = (guint64) tr->step, .t_start = t0, .t_end = end ? tw_now_ns () : 0,
                  .loss = loss };
  if (tw_bus_publish (tr->bus, &ev))
    return TRUE;
  if (end)
    {
      tr->stop_pending = TRUE;      /* the step is done: stop after it */
      return TRUE;
    }
  g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_STOPPED, "stopped before step %" G_GINT64_FORMAT,
               tr->step + 1);
  return FALSE;
}

void
tw_trainer_update_range (tw_trainer *tr, int i, const float *grad, int64_t offset, int64_t n,
                         float *const *state, gboolean listen)
{
  tw_param *p = tw_params_at (tr->params, i);
  tw_event ev = { .kind = TW_EV_UPDATE, .ident = &g_array_index (tr->upd_ident, tw_op_ident, i),
                  .step = (guint64) tr->step, .param = p };
  tw_tensor *io[2] = { p->value, p->grad };
  if (listen)
    {
      ev.t_start = tw_now_ns ();
      ev.inputs = io;
      ev.n_inputs = p->grad ? 2 : 1;
      if (!tw_bus_publish (tr->bus, &ev))
        tr->stop_pending = TRUE;
    }
  if (state)
    tw_optimizer_update_with_state (tr->opt, p, grad, offset, n, state);
  else
    tw_optimizer_update (tr->opt, p, grad, offset, n);
  if (listen)
    {
      ev.end = TRUE;
      ev.t_end = tw_now_ns ();
      ev.outputs = io;
      ev.n_outputs = 1;
      if (!tw_bus_publish (tr->bus, &ev))
        tr->stop_pending = TRUE;
    }
}

void
tw_trainer_update_param (tw_trainer *tr, int i, const float *grad, gboolean listen)
{
  tw_trainer_update_range (tr, i, grad, 0, tw_tensor_numel (tw_params_at (tr->params, i)->value),
                           NULL, listen);
}

/* The optimizer update of every trainable parameter, one UPDATE event each.
 * A client asking to stop here is answered after the last parameter: a step
 * never ends half-applied. */
static void
eager_update (tw_trainer *tr, double lr)
{
  gboolean listen = tw_bus_wants (tr->bus, TW_EV_UPDATE);
  if (!listen)
    {
      tw_optimizer_step (tr->opt, tr->params, lr);
      return;
    }
  tw_optimizer_begin_step (tr->opt, lr);
  for (int i = 0; i < tw_params_count (tr->params); i++)
    {
      tw_param *p = tw_params_at (tr->params, i);
      if (p->trainable && p->grad != NULL)
        tw_trainer_update_param (tr, i, tw_tensor_f32 (p->grad), TRUE);
    }
}

gboolean
tw_trainer_step (tw_trainer *tr, tw_tensor *x, tw_tensor *y, double *loss, GError **error)
{
  const tw_recipe *r = &tr->model->recipe;
  double lr = tw_schedule_lr (&r->schedule, r->optimizer.lr, tr->step,
                              tr->total_steps > 0 ? tr->total_steps : tr->step + 1);
  if (tr->dist)
    return tw_dist_step (tr, x, y, lr, loss, error);
  if (tr->pipe)
    return tw_pipe_step (tr, x, y, lr, loss, error);
  gboolean iter_events = tw_bus_wants (tr->bus, TW_EV_ITERATION);
  gint64 t0 = iter_events ? tw_now_ns () : 0;
  if (iter_events && !tw_trainer_publish_iteration (tr, FALSE, t0, NAN, error))
    return FALSE;

  if (tr->mode == TW_MODE_COMPILED)
    {
      /* Forward, backward and the update of each parameter in one program;
       * it stops before any update when the loss is not finite. */
      int64_t opt_step = tw_optimizer_get_step (tr->opt);
      tw_optimizer_begin_step (tr->opt, lr);
      if (!tw_compiled_run (tr->compiled, TW_PROGRAM_STEP, x, y, (guint64) tr->step, error))
        {
          tw_optimizer_set_step (tr->opt, opt_step);
          return FALSE;
        }
      tr->stop_pending |= tw_compiled_stop_pending (tr->compiled);
      double l = tw_compiled_loss_value (tr->compiled);
      if (loss)
        *loss = l;
      tr->lr = lr;
      if (iter_events)
        tw_trainer_publish_iteration (tr, TRUE, t0, l, NULL);
      tr->step++;
      return TRUE;
    }

  if (!tw_eager_forward (tr->ex, x, y, TRUE, (guint64) tr->step, error))
    return FALSE;
  double l = tw_eager_loss_value (tr->ex);
  if (loss)
    *loss = l;
  if (!isfinite (l) && !tr->allow_nan)
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_NAN,
                   "the loss became %s at step %" G_GINT64_FORMAT
                   " (lower the learning rate, or pass --allow-nan to go on)",
                   isnan (l) ? "NaN" : "infinite", tr->step + 1);
      tw_eager_release (tr->ex);
      return FALSE;
    }
  if (!tw_eager_backward_set (tr->ex, error))
    return FALSE;
  tw_eager_release (tr->ex);
  tr->lr = lr;
  eager_update (tr, lr);
  if (iter_events)
    tw_trainer_publish_iteration (tr, TRUE, t0, l, NULL);
  tr->step++;
  return TRUE;
}

int64_t
tw_count_correct (tw_tensor *pred, const tw_tensor *labels)
{
  if (pred == NULL || labels == NULL || pred->ndim != 2 || labels->dtype != TW_I64
      || labels->ndim != 1 || labels->shape[0] != pred->shape[0])
    return -1;
  int64_t n = pred->shape[0], c = pred->shape[1], correct = 0;
  g_autoptr (tw_tensor) host = tw_tensor_to_host (pred);
  g_autoptr (tw_tensor) p = tw_tensor_cast (host, TW_F32);
  g_autoptr (tw_tensor) lh = tw_tensor_to_host ((tw_tensor *) labels);
  g_autoptr (tw_tensor) lc = tw_tensor_contiguous (lh);
  const float *pp = tw_tensor_f32 (p);
  const int64_t *lp = tw_tensor_i64 (lc);
  for (int64_t i = 0; i < n; i++)
    {
      int64_t best = 0;
      for (int64_t j = 1; j < c; j++)
        if (pp[i * c + j] > pp[i * c + best])
          best = j;
      correct += best == lp[i];
    }
  return correct;
}

gboolean
tw_trainer_evaluate (tw_trainer *tr, const tw_dataset *d, int64_t batch_size, double *loss,
                     double *accuracy, GError **error)
{
  g_autoptr (tw_batcher) b = tw_batcher_new (d, batch_size, FALSE, 0, FALSE);
  double total_loss = 0;
  int64_t correct = 0, seen = 0;
  gboolean scored = TRUE;   /* every batch's prediction could be scored */
  tw_tensor *x, *y;

  tw_batcher_reset (b, 0);
  gboolean compiled = tr->mode == TW_MODE_COMPILED;
  /* Data parallel: rank r evaluates batches r, r + p, ... and the totals
   * are summed (asynchronous: on the server's weights).  A pipeline's ranks
   * do the same on the whole graph, once every stage's parameters are on
   * every rank. */
  if (tr->dist && !tw_dist_sync_weights (tr, error))
    return FALSE;
  int rank = tr->dist ? tw_dist_rank (tr) : 0, ranks = tr->dist ? tw_dist_size (tr) : 1;
  if (tr->pipe)
    {
      if (!tw_pipe_gather (tr, FALSE, error))
        return FALSE;
      rank = tw_pipe_rank (tr);
      ranks = tw_pipe_size (tr);
    }
  for (int64_t bi = 0; tw_batcher_next (b, &x, &y); bi++)
    {
      if (bi % ranks != rank)
        {
          tw_tensor_unref (x);
          tw_tensor_unref (y);
          continue;
        }
      gboolean ok = compiled ? tw_compiled_run (tr->compiled, TW_PROGRAM_EVAL, x, y, (guint64) tr->step, error)
                             : tw_eager_forward (tr->ex, x, y, FALSE, (guint64) tr->step, error);
      if (ok)
        {
          int64_t n = x->shape[0];
          total_loss += (compiled ? tw_compiled_loss_value (tr->compiled)
                                  : tw_eager_loss_value (tr->ex)) * n;
          tw_tensor *pred = compiled ? tw_compiled_prediction (tr->compiled)
                                     : tw_eager_prediction (tr->ex);
          /* Class labels (a classifier) with no prediction to score: an
           * error naming the loss, never an accuracy of 0. */
          if (pred == NULL && y->dtype == TW_I64)
            {
              const tw_node *l = tw_graph_find_loss (tr->model->graph);
              g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH,
                           "node %s: the model computes no prediction for it, so there is "
                           "no accuracy to report",
                           l ? l->id : "(no loss)");
              ok = FALSE;
            }
          int64_t k = ok ? tw_count_correct (pred, y) : -1;
          if (k >= 0)
            correct += k;
          else
            scored = FALSE;   /* not class scores: no accuracy (NaN), never 0 */
          seen += n;
        }
      tw_tensor_unref (x);
      tw_tensor_unref (y);
      tw_eager_release (tr->ex);
      if (!ok)
        return FALSE;
    }
  if (tr->dist || tr->pipe)
    {
      double v[4] = { total_loss, (double) correct, (double) seen, scored ? 0 : 1 };
      if (!(tr->dist ? tw_dist_sum (tr, v, 4, error) : tw_pipe_sum (tr, v, 4, error)))
        return FALSE;
      total_loss = v[0];
      correct = (int64_t) v[1];
      seen = (int64_t) v[2];
      scored = v[3] == 0;
    }
  if (loss)
    *loss = seen ? total_loss / seen : NAN;
  if (accuracy)
    *accuracy = seen && scored ? (double) correct / seen : NAN;
  return TRUE;
}

static gboolean save_checkpoint (tw_trainer *tr, const char *path, int64_t epoch,
                                 int64_t batch_in_epoch, GError **error);

gboolean
tw_trainer_save_checkpoint (tw_trainer *tr, const char *path, int64_t epoch,
                            int64_t batch_in_epoch, GError **error)
{
  /* A pipeline: every stage's parameters and state to rank 0, which
   * writes; ZeRO-1: every rank's optimizer shards likewise. */
  if (tr->pipe)
    {
      if (!tw_pipe_gather (tr, TRUE, error))
        return FALSE;
      if (tw_pipe_rank (tr) != 0)
        return TRUE;
    }
  if (tw_trainer_checkpoint_is_collective (tr) && tr->dist)
    {
      if (!tw_dist_state_gather (tr, error))
        return FALSE;
      gboolean ok = tw_dist_rank (tr) != 0 || save_checkpoint (tr, path, epoch, batch_in_epoch, error);
      tw_dist_state_release (tr);
      return ok;
    }
  return save_checkpoint (tr, path, epoch, batch_in_epoch, error);
}

static gboolean
save_checkpoint (tw_trainer *tr, const char *path, int64_t epoch, int64_t batch_in_epoch,
                 GError **error)
{
  g_autoptr (GHashTable) tensors = tw_tensor_table_new ();
  g_autoptr (GHashTable) meta = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);

  for (int i = 0; i < tw_params_count (tr->params); i++)
    {
      tw_param *p = tw_params_at (tr->params, i);
      g_hash_table_insert (tensors, g_strdup (p->name), tw_tensor_ref (p->value));
      for (int k = 0; k < 2; k++)
        if (p->state[k])
          g_hash_table_insert (tensors, g_strdup_printf ("optimizer.%s.%d", p->name, k),
                               tw_tensor_ref (p->state[k]));
    }
  g_hash_table_insert (meta, g_strdup ("format"), g_strdup ("twb-checkpoint"));
  g_hash_table_insert (meta, g_strdup ("model"), g_strdup (tr->model->name ? tr->model->name : ""));
  g_hash_table_insert (meta, g_strdup ("step"), g_strdup_printf ("%" G_GINT64_FORMAT, tr->step));
  g_hash_table_insert (meta, g_strdup ("optimizer_step"),
                       g_strdup_printf ("%" G_GINT64_FORMAT, tw_optimizer_get_step (tr->opt)));
  g_hash_table_insert (meta, g_strdup ("seed"),
                       g_strdup_printf ("%" G_GUINT64_FORMAT, tr->model->recipe.seed));
  g_hash_table_insert (meta, g_strdup ("epoch"), g_strdup_printf ("%" G_GINT64_FORMAT, epoch));
  g_hash_table_insert (meta, g_strdup ("batch"),
                       g_strdup_printf ("%" G_GINT64_FORMAT, batch_in_epoch));
  return tw_safetensors_save (path, tensors, meta, error);
}

gboolean
tw_trainer_save_weights (tw_trainer *tr, const char *path, GError **error)
{
  if (tr->pipe)
    {
      if (!tw_pipe_gather (tr, FALSE, error))
        return FALSE;
      if (tw_pipe_rank (tr) != 0)
        return TRUE;
    }
  g_autoptr (GHashTable) tensors = tw_tensor_table_new ();
  g_autoptr (GHashTable) meta = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  for (int i = 0; i < tw_params_count (tr->params); i++)
    {
      tw_param *p = tw_params_at (tr->params, i);
      g_hash_table_insert (tensors, g_strdup (p->name), tw_tensor_ref (p->value));
    }
  g_hash_table_insert (meta, g_strdup ("format"), g_strdup ("twb-weights"));
  g_hash_table_insert (meta, g_strdup ("model"), g_strdup (tr->model->name ? tr->model->name : ""));
  g_hash_table_insert (meta, g_strdup ("step"), g_strdup_printf ("%" G_GINT64_FORMAT, tr->step));
  return tw_safetensors_save (path, tensors, meta, error);
}

/* The tensor of tensors that param p takes: there, and of a shape and
 * dtype it accepts (tw_param_accepts: the rule of every weights reader). */
static tw_tensor *
tensor_for (const tw_param *p, GHashTable *tensors, const char *path, GError **error)
{
  tw_tensor *src = g_hash_table_lookup (tensors, p->name);
  if (src == NULL)
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT, "%s: no tensor '%s'", path, p->name);
      return NULL;
    }
  return tw_param_accepts (p, src, path, error) ? src : NULL;
}

gboolean
tw_params_load_weights (tw_params *params, const char *path, GError **error)
{
  g_autoptr (GHashTable) tensors = NULL;
  if (!tw_safetensors_load (path, &tensors, NULL, error))
    return FALSE;
  /* Check everything before changing anything: a failed load leaves the
   * parameters as they were. */
  for (int i = 0; i < tw_params_count (params); i++)
    if (tensor_for (tw_params_at (params, i), tensors, path, error) == NULL)
      return FALSE;
  for (int i = 0; i < tw_params_count (params); i++)
    {
      tw_param *p = tw_params_at (params, i);
      tw_tensor_copy_into (p->value, tensor_for (p, tensors, path, NULL));
    }
  return TRUE;
}

/* Counters of a checkpoint's metadata are whole numbers from 0 to 2^53:
 * more steps than any run takes, and still exact in the double arithmetic of
 * learning-rate schedules.  An absent counter is 0. */
#define CHECKPOINT_MAX_COUNT (G_GINT64_CONSTANT (1) << 53)

static gboolean
meta_count (GHashTable *meta, const char *key, const char *path, int64_t *out, GError **error)
{
  const char *v = g_hash_table_lookup (meta, key);
  guint64 u = 0;
  if (v && !g_ascii_string_to_unsigned (v, 10, 0, CHECKPOINT_MAX_COUNT, &u, NULL))
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT,
                   "%s: checkpoint metadata \"%s\" is \"%s\" (expected a whole number from 0 to "
                   "%" G_GINT64_FORMAT ")", path, key, v, CHECKPOINT_MAX_COUNT);
      return FALSE;
    }
  *out = (int64_t) u;
  return TRUE;
}

gboolean
tw_trainer_load_checkpoint (tw_trainer *tr, const char *path, int64_t *epoch,
                            int64_t *batch_in_epoch, GError **error)
{
  g_autoptr (GHashTable) tensors = NULL;
  g_autoptr (GHashTable) meta = NULL;
  if (!tw_safetensors_load (path, &tensors, &meta, error))
    return FALSE;

  /* Everything is checked before anything changes. */
  const char *format = g_hash_table_lookup (meta, "format");
  if (g_strcmp0 (format, "twb-checkpoint") != 0)
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT,
                   "%s: not a twb checkpoint (its metadata has %s%s%s): only a checkpoint twb "
                   "saved can be resumed; to start from these weights, load them as initial "
                   "weights (twb train --init-weights)",
                   path, format ? "format \"" : "no \"format\"", format ? format : "",
                   format ? "\"" : "");
      return FALSE;
    }
  int64_t step, opt_step, ep, batch;
  if (!meta_count (meta, "step", path, &step, error)
      || !meta_count (meta, "optimizer_step", path, &opt_step, error)
      || !meta_count (meta, "epoch", path, &ep, error)
      || !meta_count (meta, "batch", path, &batch, error))
    return FALSE;
  const char *seed = g_hash_table_lookup (meta, "seed");
  guint64 seed_value = 0;
  if (seed && !g_ascii_string_to_unsigned (seed, 10, 0, G_MAXUINT64, &seed_value, NULL))
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT,
                   "%s: checkpoint metadata \"seed\" is \"%s\" (expected a whole number >= 0)",
                   path, seed);
      return FALSE;
    }
  for (int i = 0; i < tw_params_count (tr->params); i++)
    {
      tw_param *p = tw_params_at (tr->params, i);
      if (tensor_for (p, tensors, path, error) == NULL)
        return FALSE;
      for (int k = 0; k < 2; k++)
        {
          g_autofree char *name = g_strdup_printf ("optimizer.%s.%d", p->name, k);
          tw_tensor *st = g_hash_table_lookup (tensors, name);
          if (st && (st->dtype != TW_F32 || !tw_tensor_same_shape (st, p->value)))
            {
              g_autofree char *a = tw_shape_to_string (st->ndim, st->shape);
              g_autofree char *b = tw_shape_to_string (p->value->ndim, p->value->shape);
              g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT,
                           "%s: optimizer state '%s' is %s %s; the parameter is f32 %s", path,
                           name, tw_dtype_name (st->dtype), a, b);
              return FALSE;
            }
        }
    }

  for (int i = 0; i < tw_params_count (tr->params); i++)
    {
      tw_param *p = tw_params_at (tr->params, i);
      tw_tensor_copy_into (p->value, tensor_for (p, tensors, path, NULL));
      for (int k = 0; k < 2; k++)
        {
          g_autofree char *name = g_strdup_printf ("optimizer.%s.%d", p->name, k);
          tw_tensor *st = g_hash_table_lookup (tensors, name);
          g_clear_pointer (&p->state[k], tw_tensor_unref);
          if (st)
            p->state[k] = tw_tensor_clone (st);
        }
    }
  /* The run goes on with the seed it started with (dropout masks, shuffling). */
  if (seed)
    {
      tr->model->recipe.seed = seed_value;
      tw_eager_set_seed (tr->ex, tr->model->recipe.seed);
      if (tr->compiled)
        tw_compiled_set_seed (tr->compiled, tr->model->recipe.seed);
    }
  tr->step = step;
  tw_optimizer_set_step (tr->opt, opt_step);
  if (epoch)
    *epoch = ep;
  if (batch_in_epoch)
    *batch_in_epoch = batch;
  return TRUE;
}
