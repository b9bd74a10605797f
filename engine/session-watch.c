/* session-watch.c — the NaN/Inf watch of a training session: the first op
 * whose outputs hold a NaN or an Inf stops the run (or pauses it at a nan /
 * inf breakpoint) naming that op.  Runs on the worker at the end of every
 * op; bench/bus-bench measures its cost (README, "Benchmarks"). */
#define G_LOG_DOMAIN "twb-session"

#include "engine/session-private.h"
#include "engine/cpu/scan.h"

#include <math.h>
#include <string.h>

static const char *const phase_names[] = { "forward", "backward", "update" };

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

int
ses_nonfinite (tw_tensor *t)
{
  if (t == NULL)
    return 0;
  g_autoptr (tw_tensor) h = tw_tensor_to_host (t);
  return nonfinite_host (h);
}

gboolean
ses_has_break (tw_session *s, break_kind kind)
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
  if (ses_has_break (s, found == 1 ? BREAK_NAN : BREAK_INF))
    {
      *paused_ok = ses_pause_here (s, ev, g_strdup_printf ("%s first produced by %s in %s", what, op,
                                                      where));
      g_free (op);
      g_free (where);
      return TRUE;
    }
  if (s->opt.allow_nan)
    {
      /* Watching for the other kind only: this one may pass. */
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
gboolean
ses_watch_nan (tw_session *s, const tw_event *ev, gboolean *paused_ok)
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
      if ((found = ses_nonfinite (ev->outputs[k])))
        which = k;
    }
  if (!found)
    return TRUE;
  int bad_in = -1;
  for (int k = 0; k < ev->n_inputs && bad_in < 0; k++)
    if (ses_nonfinite (ev->inputs[k]))
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
gboolean
ses_watch_deferred (tw_session *s, const tw_event *ev, gboolean *paused_ok)
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
      int found = ses_nonfinite (d->tensor);
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
gboolean
ses_watch_update (tw_session *s, const tw_event *ev, gboolean *paused_ok)
{
  if (ev->compiled || ev->param == NULL
      || !tw_optimizer_last_grad_nonfinite (tw_trainer_optimizer (s->trainer)))
    return TRUE;
  int found = ses_nonfinite (ev->param->grad);
  const char *producer = g_hash_table_lookup (s->grad_producer, ev->param->name);
  return report_nonfinite (s, ev, found ? found : 1,
                           g_strdup (producer ? producer : "the backward"),
                           g_strdup_printf ("the gradient of %s (found by its update)",
                                            ev->param->name),
                           paused_ok);
}

