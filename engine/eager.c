/* eager.c — the eager executor: forward with a tape, backward through the
 * ops' backward rules, hooks around every op. */
#define G_LOG_DOMAIN "twb-eager"

#include "engine/eager.h"
#include "engine/device.h"
#include "engine/emit.h"
#include "engine/memory.h"

#include <math.h>
#include <string.h>

G_DEFINE_QUARK (tw-exec-error-quark, tw_exec_error)

typedef struct
{
  tw_tensor **out;            /* [n_outputs] values of the last forward */
  tw_tensor **grad;           /* [n_outputs] accumulated gradients during backward */
  tw_param *params[TW_MAX_PARAMS];
  int param_index[TW_MAX_PARAMS];   /* in the params store */
  gboolean ran;
  gboolean requires_grad;     /* depends on a trainable parameter */
  tw_op_ident ident[2];       /* forward, backward */
  const char *ident_nodes[2];
  int ident_index;
  GStrv names[4];             /* forward in/out, backward in/out */
} node_state;

struct tw_eager
{
  tw_graph *graph;
  tw_params *params;
  guint64 seed;
  guint64 step;
  gboolean training;
  int num_threads;
  tw_bus *bus;
  tw_workspace *ws;           /* kernels' scratch */
  int64_t ident_batch;        /* batch the idents' costs are for */
  int *param_uses;            /* [n params] remaining backward uses (grad_ready) */
  int n_param_uses;
  GArray *order;              /* topological order of node indices */
  node_state *state;          /* [n_nodes] */
  int n_state;
  int loss_node;              /* -1 when no loss */
  size_t live_bytes, peak_bytes;
  int64_t mem_batch;          /* batch whose memory estimate was checked (0: none) */
  gboolean mem_training;
  gboolean keep_values;       /* tw_eager_set_keep_values */
  char **grad_inputs;         /* tw_eager_set_grad_inputs: ids, or NULL */
  gboolean *grad_input;       /* [n_nodes]: a source node in grad_inputs */
};

static gboolean
params_sync_node (tw_params *params, const tw_node *n, guint64 seed, GError **error)
{
  for (int k = 0; k < n->n_params; k++)
    {
      const tw_param_spec *s = &n->params[k];
      g_autofree char *name = tw_node_param_name (n, k);
      tw_param *p = tw_params_get (params, name);
      if (p && p->value->ndim == s->info.ndim
          && memcmp (p->value->shape, s->info.dims, s->info.ndim * sizeof (int64_t)) == 0)
        continue;
      g_autoptr (tw_tensor) t = tw_tensor_try_new (TW_F32, s->info.ndim, s->info.dims);
      if (t == NULL)
        {
          g_autofree char *shape = tw_tinfo_to_string (&s->info);
          size_t nbytes = 0;
          tw_tinfo_nbytes (&s->info, 1, &nbytes);
          g_autofree char *b = tw_format_bytes (nbytes);
          g_autofree char *have = tw_format_bytes (tw_memory_available ());
          g_set_error (error, TW_MEMORY_ERROR, TW_MEMORY_ERROR_EXHAUSTED,
                       "node %s: out of memory for parameter %s (%s, %s; %s available)", n->id,
                       name, shape, b, have);
          return FALSE;
        }
      tw_param_init (t, s, seed, name);
      tw_params_set (params, name, t, s->trainable);
    }
  return TRUE;
}

gboolean
tw_params_sync_graph (tw_params *params, const tw_graph *graph, guint64 seed, GError **error)
{
  /* Parameters (and one sample's activations) must fit before any is made. */
  if (!tw_graph_check_memory (graph, 1, FALSE, error))
    return FALSE;
  for (int i = 0; i < tw_graph_n_nodes (graph); i++)
    {
      const tw_node *n = tw_graph_node (graph, i);
      /* Shared scopes: the owner creates the parameters. */
      if (n->share == NULL && !params_sync_node (params, n, seed, error))
        return FALSE;
    }
  return TRUE;
}

static void
free_state (tw_eager *ex)
{
  for (int i = 0; i < ex->n_state; i++)
    {
      node_state *s = &ex->state[i];
      const tw_node *n = i < tw_graph_n_nodes (ex->graph) ? tw_graph_node (ex->graph, i) : NULL;
      int no = n ? n->n_outputs : 0;
      for (int k = 0; s->out && k < no; k++)
        tw_tensor_unref (s->out[k]);
      for (int k = 0; s->grad && k < no; k++)
        tw_tensor_unref (s->grad[k]);
      g_free (s->out);
      g_free (s->grad);
      for (int k = 0; k < 4; k++)
        g_strfreev (s->names[k]);
    }
  g_clear_pointer (&ex->state, g_free);
  ex->n_state = 0;
  g_clear_pointer (&ex->param_uses, g_free);
  ex->n_param_uses = 0;
  g_clear_pointer (&ex->grad_input, g_free);
}

static void
mark_grad_inputs (tw_eager *ex)
{
  g_free (ex->grad_input);
  ex->grad_input = g_new0 (gboolean, MAX (ex->n_state, 1));
  for (char **id = ex->grad_inputs; id && *id; id++)
    {
      int i = tw_graph_index_of (ex->graph, *id);
      if (i >= 0 && i < ex->n_state)
        ex->grad_input[i] = TRUE;
    }
}

void
tw_eager_set_grad_inputs (tw_eager *ex, const char *const *input_ids)
{
  g_strfreev (ex->grad_inputs);
  ex->grad_inputs = g_strdupv ((char **) input_ids);
  mark_grad_inputs (ex);
}

gboolean
tw_eager_rebuild (tw_eager *ex, GError **error)
{
  free_state (ex);
  g_clear_pointer (&ex->order, g_array_unref);
  if (tw_graph_infer (ex->graph) > 0)
    {
      g_autofree char *msg = tw_graph_errors_to_string (ex->graph);
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH, "the graph has errors:\n%s", msg);
      return FALSE;
    }
  if (!tw_graph_topo_order (ex->graph, &ex->order, error))
    return FALSE;
  ex->mem_batch = 0;
  if (!tw_params_sync_graph (ex->params, ex->graph, ex->seed, error))
    return FALSE;

  int nn = tw_graph_n_nodes (ex->graph);
  ex->state = g_new0 (node_state, nn);
  ex->n_state = nn;
  for (int i = 0; i < nn; i++)
    {
      tw_node *n = tw_graph_node (ex->graph, i);
      node_state *s = &ex->state[i];
      s->out = g_new0 (tw_tensor *, n->n_outputs);
      s->grad = g_new0 (tw_tensor *, n->n_outputs);
      for (int k = 0; k < n->n_params; k++)
        {
          g_autofree char *name = tw_node_param_name (n, k);
          s->params[k] = tw_params_get (ex->params, name);
          g_assert (s->params[k] != NULL);
          s->param_index[k] = -1;
          for (int j = 0; j < tw_params_count (ex->params); j++)
            if (tw_params_at (ex->params, j) == s->params[k])
              s->param_index[k] = j;
        }
      s->ident_nodes[0] = n->id;
      s->ident_nodes[1] = NULL;
      s->ident_index = i;
      {
        /* forward: inputs then parameters -> outputs; backward: gradients of
         * the outputs -> gradients of the inputs and parameters. */
        int n_all = n->n_inputs + n->n_params;
        GStrv fin = g_new0 (char *, n_all + 1), fout = g_new0 (char *, n->n_outputs + 1);
        GStrv bin = g_new0 (char *, n->n_outputs + 1), bout = g_new0 (char *, n_all + 1);
        for (int k = 0; k < n->n_inputs; k++)
          {
            tw_port p = n->in_ports[k];
            const tw_node *src = tw_graph_node (ex->graph, p.node);
            fin[k] = src->n_outputs > 1 ? g_strdup_printf ("%s:%d", src->id, p.output)
                                        : g_strdup (src->id);
          }
        for (int k = 0; k < n->n_params; k++)
          fin[n->n_inputs + k] = tw_node_param_name (n, k);
        for (int k = 0; k < n->n_outputs; k++)
          fout[k] = n->n_outputs > 1 ? g_strdup_printf ("%s:%d", n->id, k) : g_strdup (n->id);
        for (int k = 0; k < n->n_outputs; k++)
          bin[k] = g_strconcat ("grad:", fout[k], NULL);
        for (int k = 0; k < n_all; k++)
          bout[k] = g_strconcat ("grad:", fin[k], NULL);
        s->names[0] = fin;
        s->names[1] = fout;
        s->names[2] = bin;
        s->names[3] = bout;
      }
      for (int ph = 0; ph < 2; ph++)
        {
          tw_op_ident *id = &s->ident[ph];
          id->label = n->op->name;
          id->nodes = s->ident_nodes;
          id->node_index = &s->ident_index;
          id->n_nodes = 1;
          id->phase = ph == 0 ? TW_PHASE_FORWARD : TW_PHASE_BACKWARD;
          id->layer_end = TRUE;
          id->device = tw_device_cpu ();
          id->in_names = (const char *const *) s->names[2 * ph];
          id->out_names = (const char *const *) s->names[2 * ph + 1];
        }
    }
  ex->n_param_uses = tw_params_count (ex->params);
  ex->param_uses = g_new0 (int, MAX (ex->n_param_uses, 1));
  ex->ident_batch = 0;
  tw_node *loss = tw_graph_find_loss (ex->graph);
  ex->loss_node = loss ? tw_graph_index_of (ex->graph, loss->id) : -1;
  mark_grad_inputs (ex);
  return TRUE;
}

tw_eager *
tw_eager_new (tw_graph *graph, tw_params *params, guint64 seed, GError **error)
{
  tw_eager *ex = g_new0 (tw_eager, 1);
  ex->graph = graph;
  ex->params = params;
  ex->seed = seed;
  ex->num_threads = 1;
  ex->ws = tw_workspace_new (tw_device_cpu ());
  if (!tw_eager_rebuild (ex, error))
    {
      tw_eager_free (ex);
      return NULL;
    }
  return ex;
}

void
tw_eager_free (tw_eager *ex)
{
  if (ex == NULL)
    return;
  free_state (ex);
  g_clear_pointer (&ex->order, g_array_unref);
  g_clear_pointer (&ex->bus, tw_bus_unref);
  g_strfreev (ex->grad_inputs);
  tw_workspace_free (ex->ws);
  g_free (ex);
}

gboolean
tw_eager_set_graph (tw_eager *ex, tw_graph *graph, GError **error)
{
  ex->graph = graph;
  return tw_eager_rebuild (ex, error);
}

void
tw_eager_set_bus (tw_eager *ex, tw_bus *bus)
{
  if (bus)
    tw_bus_ref (bus);
  g_clear_pointer (&ex->bus, tw_bus_unref);
  ex->bus = bus;
}

/* Forward costs depend on the batch: recomputed when it changes, and only
 * while someone listens. */
static void
update_ident_costs (tw_eager *ex, int64_t batch)
{
  if (ex->ident_batch == batch)
    return;
  ex->ident_batch = batch;
  for (int i = 0; i < ex->n_state; i++)
    {
      tw_node *n = tw_graph_node (ex->graph, i);
      tw_op_ident *id = &ex->state[i].ident[0];
      id->flops = id->bytes = 0;
      if (n->op->cost == NULL)
        continue;
      tw_tinfo in[TW_MAX_INPUTS + TW_MAX_PARAMS], out[TW_MAX_OUTPUTS];
      int n_in = n->n_inputs;
      for (int k = 0; k < n_in; k++)
        {
          tw_port p = n->in_ports[k];
          in[k] = tw_graph_node (ex->graph, p.node)->out_info[p.output];
        }
      for (int k = 0; k < n->n_params; k++)
        in[n_in + k] = n->params[k].info;
      for (int k = 0; k < n->n_outputs; k++)
        out[k] = n->out_info[k];
      for (int k = 0; k < n_in + n->n_params; k++)
        for (int d = 0; d < in[k].ndim; d++)
          if (in[k].dims[d] == TW_DIM_N)
            in[k].dims[d] = batch;
      for (int k = 0; k < n->n_outputs; k++)
        for (int d = 0; d < out[k].ndim; d++)
          if (out[k].dims[d] == TW_DIM_N)
            out[k].dims[d] = batch;
      tw_cost c = { 0 };
      n->op->cost (n->resolved, in, n_in + n->n_params, out, n->n_outputs, &c);
      id->flops = c.flops;
      id->bytes = c.bytes_read + c.bytes_written;
    }
}

void
tw_eager_set_num_threads (tw_eager *ex, int n)
{
  ex->num_threads = MAX (1, n);
}

void
tw_eager_set_seed (tw_eager *ex, guint64 seed)
{
  ex->seed = seed;
}

void
tw_eager_set_keep_values (tw_eager *ex, gboolean keep)
{
  ex->keep_values = keep;
}

static void
release_values (tw_eager *ex)
{
  for (int i = 0; i < ex->n_state; i++)
    {
      tw_node *n = tw_graph_node (ex->graph, i);
      node_state *s = &ex->state[i];
      for (int k = 0; k < n->n_outputs; k++)
        {
          g_clear_pointer (&s->out[k], tw_tensor_unref);
          g_clear_pointer (&s->grad[k], tw_tensor_unref);
        }
      s->ran = FALSE;
    }
  ex->live_bytes = 0;
}

void
tw_eager_release (tw_eager *ex)
{
  release_values (ex);
}

static void
count_alloc (tw_eager *ex, const tw_tensor *t)
{
  ex->live_bytes += tw_tensor_nbytes (t);
  ex->peak_bytes = MAX (ex->peak_bytes, ex->live_bytes);
}

static void
count_free (tw_eager *ex, const tw_tensor *t)
{
  size_t b = tw_tensor_nbytes (t);
  ex->live_bytes = ex->live_bytes > b ? ex->live_bytes - b : 0;
}

/* Readers left of each node output in an inference forward freeing early:
 * uses[base[i] + k] for output k of node i, counted over the needed nodes;
 * graph outputs get one more that is never given back.  base [n_nodes]. */
static int *
count_readers (tw_eager *ex, const gboolean *needed, int **base_out)
{
  int nn = tw_graph_n_nodes (ex->graph), total = 0;
  int *base = g_new (int, nn);
  for (int i = 0; i < nn; i++)
    {
      base[i] = total;
      total += tw_graph_node (ex->graph, i)->n_outputs;
    }
  int *uses = g_new0 (int, MAX (total, 1));
  for (int i = 0; i < nn; i++)
    {
      tw_node *n = tw_graph_node (ex->graph, i);
      if (!needed[i])
        continue;
      for (int k = 0; k < n->n_inputs; k++)
        uses[base[n->in_ports[k].node] + n->in_ports[k].output]++;
    }
  for (const char *const *o = tw_graph_outputs (ex->graph); *o; o++)
    {
      tw_port p = tw_graph_resolve (ex->graph, *o);
      if (p.node >= 0)
        uses[base[p.node] + p.output]++;
    }
  *base_out = base;
  return uses;
}

/* Node n has run: its inputs that nobody else reads are freed. */
static void
release_read (tw_eager *ex, const tw_node *n, int *uses, const int *base)
{
  for (int k = 0; k < n->n_inputs; k++)
    {
      tw_port p = n->in_ports[k];
      tw_tensor **t = &ex->state[p.node].out[p.output];
      if (--uses[base[p.node] + p.output] == 0 && *t)
        {
          count_free (ex, *t);
          g_clear_pointer (t, tw_tensor_unref);
        }
    }
}

static tw_kctx
make_kctx (tw_eager *ex, const tw_node *n)
{
  tw_kctx c = {
    .training = ex->training,
    .seed = ex->seed,
    .step = ex->step,
    .node_key = tw_node_key (n->id),
    .num_threads = ex->num_threads,
    .ws = ex->ws,
    .device = tw_device_cpu (),
  };
  return c;
}

/* Mark the nodes needed for `targets` (node indices). */
gboolean
tw_check_feed (const char *input, const tw_tinfo *want, const tw_tensor *t, GError **error)
{
  gboolean ok = t->dtype == want->dtype && t->ndim == want->ndim;
  for (int d = 0; ok && d < want->ndim; d++)
    ok = want->dims[d] == TW_DIM_N || t->shape[d] == want->dims[d];
  if (!ok)
    {
      g_autofree char *w = tw_tinfo_to_string (want);
      g_autofree char *s = tw_shape_to_string (t->ndim, t->shape);
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT,
                   "input '%s' expects %s, was given %s%s", input, w, tw_dtype_name (t->dtype), s);
    }
  return ok;
}

static gboolean
publish (tw_eager *ex, tw_event *ev, GError **error)
{
  if (tw_bus_publish (ex->bus, ev))
    return TRUE;
  g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_STOPPED, "stopped at node %s%s",
               ev->ident->nodes[0], ev->kind == TW_EV_BACKWARD ? " (backward)" : "");
  return FALSE;
}

gboolean
tw_eager_forward (tw_eager *ex, tw_tensor *data, tw_tensor *labels, gboolean training,
                  guint64 step, GError **error)
{
  tw_node *data_src = tw_graph_find_source (ex->graph, "data");
  tw_node *label_src = tw_graph_find_source (ex->graph, "label");
  tw_feed feeds[2];
  int n_feeds = 0;
  if (data_src && data)
    feeds[n_feeds++] = (tw_feed) { data_src->id, data };
  if (label_src && labels)
    feeds[n_feeds++] = (tw_feed) { label_src->id, labels };
  return tw_eager_forward_feeds (ex, feeds, n_feeds, labels != NULL, training, step, error);
}

/* The tensor fed to source node n, or NULL. */
static tw_tensor *
find_feed (const tw_node *n, const tw_feed *feeds, int n_feeds)
{
  for (int i = 0; i < n_feeds; i++)
    if (g_strcmp0 (feeds[i].input, n->id) == 0)
      return feeds[i].tensor;
  return NULL;
}

gboolean
tw_eager_forward_feeds (tw_eager *ex, const tw_feed *feeds, int n_feeds, gboolean with_loss,
                        gboolean training, guint64 step, GError **error)
{
  int nn = tw_graph_n_nodes (ex->graph);
  g_autofree gboolean *needed = g_new0 (gboolean, nn);

  for (int i = 0; i < n_feeds; i++)
    {
      tw_node *n = tw_graph_find (ex->graph, feeds[i].input);
      if (n == NULL || n->op == NULL || !(n->op->flags & TW_OP_SOURCE))
        {
          g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT,
                       "'%s' was fed, but the graph has no input of that name", feeds[i].input);
          return FALSE;
        }
    }

  release_values (ex);
  ex->training = training;
  ex->step = step;

  /* A batch whose activations cannot fit is refused before the first op
   * allocates (Linux would overcommit and kill the process later).  The
   * batch is the leading size of the first input that has a batch
   * dimension (1 when every input is of fixed size). */
  int64_t batch = 1;
  for (int i = 0; i < nn; i++)
    {
      tw_node *n = tw_graph_node (ex->graph, i);
      tw_tensor *t = n->op && (n->op->flags & TW_OP_SOURCE) && n->n_outputs > 0
                       && n->out_info[0].ndim > 0 && n->out_info[0].dims[0] == TW_DIM_N
                       ? find_feed (n, feeds, n_feeds) : NULL;
      if (t && t->ndim > 0)
        {
          batch = t->shape[0];
          break;
        }
    }
  if (batch != ex->mem_batch || (training && !ex->mem_training))
    {
      if (!tw_graph_check_memory (ex->graph, batch, training, error))
        return FALSE;
      ex->mem_batch = batch;
      ex->mem_training = training;
    }

  for (const char *const *o = tw_graph_outputs (ex->graph); *o; o++)
    tw_graph_mark_upstream (ex->graph, tw_graph_resolve (ex->graph, *o).node, needed);
  /* The prediction accuracy scores, also where it is not an output. */
  const char *pred = tw_graph_prediction (ex->graph);
  tw_port pred_port = pred ? tw_graph_resolve (ex->graph, pred) : (tw_port) { -1, 0 };
  if (pred_port.node >= 0)
    tw_graph_mark_upstream (ex->graph, pred_port.node, needed);
  if (with_loss && ex->loss_node >= 0)
    tw_graph_mark_upstream (ex->graph, ex->loss_node, needed);

  /* An inference nobody watches frees values as it goes (eager.h,
   * tw_eager_set_keep_values).  Measured: ResNet-50 at batch 8 held 1.2 GB
   * of activations, past the CPU device's 1 GB block cache, so every run
   * page-faulted 15,000 times; now it holds what its widest layers need. */
  g_autofree int *uses = NULL, *base = NULL;
  if (!training && !with_loss && !ex->keep_values && !tw_bus_wants (ex->bus, TW_EV_FORWARD))
    uses = count_readers (ex, needed, &base);

  for (guint oi = 0; oi < ex->order->len; oi++)
    {
      int i = g_array_index (ex->order, int, oi);
      tw_node *n = tw_graph_node (ex->graph, i);
      node_state *s = &ex->state[i];
      if (!needed[i])
        continue;

      if (n->op->flags & TW_OP_SOURCE)
        {
          tw_tensor *feed = find_feed (n, feeds, n_feeds);
          if (feed == NULL)
            {
              g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT,
                           "input '%s' (role %s) was not fed", n->id,
                           tw_attrs_get_string (n->attrs, "role", "data"));
              return FALSE;
            }
          if (!tw_check_feed (n->id, &n->out_info[0], feed, error))
            return FALSE;
          s->out[0] = tw_tensor_contiguous (feed);
          s->ran = TRUE;
          s->requires_grad = ex->grad_input && ex->grad_input[i];
          continue;
        }

      tw_tensor *in[TW_MAX_INPUTS + TW_MAX_PARAMS];
      int n_in = n->n_inputs;
      s->requires_grad = FALSE;
      for (int k = 0; k < n_in; k++)
        {
          tw_port p = n->in_ports[k];
          in[k] = ex->state[p.node].out[p.output];
          s->requires_grad |= ex->state[p.node].requires_grad;
        }
      for (int k = 0; k < n->n_params; k++)
        {
          in[n_in + k] = s->params[k]->value;
          s->requires_grad |= s->params[k]->trainable;
        }

      gboolean listen = tw_bus_wants (ex->bus, TW_EV_FORWARD);
      tw_event ev = { .kind = TW_EV_FORWARD, .ident = &s->ident[0], .step = step,
                      .inputs = in, .n_inputs = n_in + n->n_params };
      if (listen)
        {
          update_ident_costs (ex, batch);
          ev.t_start = tw_now_ns ();
          if (!publish (ex, &ev, error))
            return FALSE;
        }

      tw_kctx kc = make_kctx (ex, n);
      g_autoptr (GError) local = NULL;
      if (!tw_op_run (n->op, &kc, n->resolved, in, n_in + n->n_params, s->out, &local))
        {
          g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_KERNEL, "node %s (%s): %s", n->id,
                       n->op->name, local->message);
          return FALSE;
        }
      s->ran = TRUE;
      for (int k = 0; k < n->n_outputs; k++)
        count_alloc (ex, s->out[k]);
      if (uses)
        release_read (ex, n, uses, base);

      if (listen)
        {
          ev.end = TRUE;
          ev.t_end = tw_now_ns ();
          ev.outputs = s->out;
          ev.n_outputs = n->n_outputs;
          if (!publish (ex, &ev, error))
            return FALSE;
        }
    }
  return TRUE;
}

/* dst += src, replacing *dst by a fresh tensor unless we hold the only
 * reference to it (activation gradients may alias other tensors). */
static void
accumulate (tw_eager *ex, tw_tensor **dst, tw_tensor *src)
{
  if (*dst == NULL)
    {
      *dst = tw_tensor_ref (src);
      count_alloc (ex, src);
      return;
    }
  tw_tensor *d = *dst;
  if (d->refcount != 1 || d->storage->refcount != 1 || !tw_tensor_is_contiguous (d))
    {
      tw_tensor *c = tw_tensor_clone (d);
      tw_tensor_unref (d);
      *dst = d = c;
    }
  g_autoptr (tw_tensor) s = tw_tensor_cast (src, d->dtype);
  int64_t n = tw_tensor_numel (d);
  g_assert (tw_tensor_numel (s) == n);
  if (d->dtype == TW_F32)
    {
      float *restrict a = tw_tensor_f32 (d);
      const float *restrict b = tw_tensor_f32 (s);
      for (int64_t i = 0; i < n; i++)
        a[i] += b[i];
    }
  else
    for (int64_t i = 0; i < n; i++)
      tw_tensor_set_flat (d, i, tw_tensor_get_flat (d, i) + tw_tensor_get_flat (s, i));
}

/* Parameter gradients: the first contribution of a "set" backward replaces
 * the gradient (taking the tensor itself when nothing else holds it, which
 * saves a copy of every weight gradient each step); later ones add. */
static void
accumulate_param (tw_param *p, tw_tensor *g, gboolean first)
{
  g_autoptr (tw_tensor) c = g->dtype == TW_F32 ? tw_tensor_contiguous (g) : tw_tensor_cast (g, TW_F32);
  int64_t n = tw_tensor_numel (c);
  g_assert (n == tw_tensor_numel (p->value));
  if (first)
    {
      /* c holds one reference, the emitter the other. */
      if (c == g && c->refcount == 2 && c->storage->refcount == 1
          && tw_tensor_same_shape (c, p->value))
        {
          tw_tensor_unref (p->grad);
          p->grad = g_steal_pointer (&c);
          return;
        }
      if (p->grad == NULL)
        p->grad = tw_tensor_new_like (p->value);
      memcpy (tw_tensor_f32 (p->grad), tw_tensor_f32 (c), n * sizeof (float));
      return;
    }
  if (p->grad == NULL)
    p->grad = tw_tensor_zeros_like (p->value);
  float *restrict a = tw_tensor_f32 (p->grad);
  const float *restrict b = tw_tensor_f32 (c);
  for (int64_t i = 0; i < n; i++)
    a[i] += b[i];
}

static gboolean backward_impl (tw_eager *ex, const tw_feed *seeds, int n_seeds, gboolean set,
                               GError **error);

gboolean
tw_eager_backward (tw_eager *ex, GError **error)
{
  return backward_impl (ex, NULL, 0, FALSE, error);
}

gboolean
tw_eager_backward_set (tw_eager *ex, GError **error)
{
  return backward_impl (ex, NULL, 0, TRUE, error);
}

gboolean
tw_eager_backward_from (tw_eager *ex, const tw_feed *out_grads, int n, gboolean set,
                        GError **error)
{
  g_return_val_if_fail (out_grads != NULL || n == 0, FALSE);
  return backward_impl (ex, out_grads ? out_grads : (const tw_feed[]) { { NULL, NULL } }, n, set,
                        error);
}

tw_tensor *
tw_eager_input_grad (tw_eager *ex, const char *input_id)
{
  int i = tw_graph_index_of (ex->graph, input_id);
  if (i < 0 || i >= ex->n_state || ex->grad_input == NULL || !ex->grad_input[i])
    return NULL;
  return ex->state[i].grad[0];
}

/* The gradients backward starts from: d(loss)/d(loss) = 1, or the given
 * gradients of node outputs (seeds, n of them; several for one output add). */
static gboolean
seed_grads (tw_eager *ex, const tw_feed *seeds, int n_seeds, GError **error)
{
  if (seeds == NULL)
    {
      if (ex->loss_node < 0 || !ex->state[ex->loss_node].ran)
        {
          g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT,
                       "backward needs a forward with labels through a loss node");
          return FALSE;
        }
      node_state *ls = &ex->state[ex->loss_node];
      g_autoptr (tw_tensor) one = tw_tensor_new_like (ls->out[0]);
      tw_tensor_fill (one, 1.0);
      accumulate (ex, &ls->grad[0], one);
      return TRUE;
    }
  for (int i = 0; i < n_seeds; i++)
    {
      tw_port p = tw_graph_resolve (ex->graph, seeds[i].input);
      tw_tensor *out = p.node >= 0 && p.node < ex->n_state
                       && p.output < tw_graph_node (ex->graph, p.node)->n_outputs
                       ? ex->state[p.node].out[p.output] : NULL;
      if (out == NULL || !ex->state[p.node].ran)
        {
          g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT,
                       "backward from '%s': %s", seeds[i].input,
                       p.node < 0 ? "the graph has no such value"
                                  : "the last forward did not compute it");
          return FALSE;
        }
      if (seeds[i].tensor == NULL || tw_tensor_numel (seeds[i].tensor) != tw_tensor_numel (out))
        {
          g_autofree char *want = tw_shape_to_string (out->ndim, out->shape);
          g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT,
                       "backward from '%s': its gradient must have the value's shape %s",
                       seeds[i].input, want);
          return FALSE;
        }
    }
  for (int i = 0; i < n_seeds; i++)
    {
      tw_port p = tw_graph_resolve (ex->graph, seeds[i].input);
      tw_tensor *out = ex->state[p.node].out[p.output];
      /* The gradient has the value's shape (a flat message is reshaped). */
      g_autoptr (tw_tensor) c = tw_tensor_contiguous (seeds[i].tensor);
      g_autoptr (tw_tensor) g = tw_tensor_clone (c);
      g_autoptr (tw_tensor) shaped = tw_tensor_reshape (g, out->ndim, out->shape);
      accumulate (ex, &ex->state[p.node].grad[p.output], shaped ? shaped : g);
    }
  return TRUE;
}

static gboolean
grad_ready (tw_eager *ex, tw_param *p, GError **error)
{
  gint64 t = tw_now_ns ();
  tw_event ev = { .kind = TW_EV_GRAD_READY, .end = TRUE, .step = ex->step, .t_start = t,
                  .t_end = t, .param = p, .grad = p->grad };
  if (tw_bus_publish (ex->bus, &ev))
    return TRUE;
  g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_STOPPED, "stopped at the gradient of %s",
               p->name);
  return FALSE;
}

/* Counts, per parameter, the nodes whose backward will add to its gradient
 * (a shared layer uses its parameters once per node). */
static void
count_param_uses (tw_eager *ex)
{
  memset (ex->param_uses, 0, ex->n_param_uses * sizeof (int));
  for (guint oi = 0; oi < ex->order->len; oi++)
    {
      int i = g_array_index (ex->order, int, oi);
      tw_node *n = tw_graph_node (ex->graph, i);
      node_state *s = &ex->state[i];
      if (!s->ran || !s->requires_grad || (n->op->flags & TW_OP_SOURCE))
        continue;
      for (int k = 0; k < n->n_params; k++)
        if (s->params[k]->trainable && s->param_index[k] >= 0)
          ex->param_uses[s->param_index[k]]++;
    }
}

static gboolean
backward_impl (tw_eager *ex, const tw_feed *seeds, int n_seeds, gboolean set, GError **error)
{
  g_autoptr (GHashTable) touched = g_hash_table_new (g_direct_hash, g_direct_equal);
  if (!seed_grads (ex, seeds, n_seeds, error))
    return FALSE;
  gboolean ready_events = tw_bus_wants (ex->bus, TW_EV_GRAD_READY);
  gboolean listen = tw_bus_wants (ex->bus, TW_EV_BACKWARD);
  if (ready_events)
    count_param_uses (ex);

  for (int oi = (int) ex->order->len - 1; oi >= 0; oi--)
    {
      int i = g_array_index (ex->order, int, oi);
      tw_node *n = tw_graph_node (ex->graph, i);
      node_state *s = &ex->state[i];
      gboolean any = FALSE;
      if (!s->ran || !s->requires_grad || (n->op->flags & TW_OP_SOURCE))
        continue;
      for (int k = 0; k < n->n_outputs; k++)
        any |= s->grad[k] != NULL;
      if (!any)
        continue;
      if (n->op->backward == NULL)
        {
          g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_KERNEL,
                       "node %s: op %s is not differentiable", n->id, n->op->name);
          return FALSE;
        }

      int n_in = n->n_inputs, n_all = n_in + n->n_params;
      tw_tensor *in[TW_MAX_INPUTS + TW_MAX_PARAMS];
      gboolean needs[TW_MAX_INPUTS + TW_MAX_PARAMS] = { 0 };
      for (int k = 0; k < n_in; k++)
        {
          tw_port p = n->in_ports[k];
          in[k] = ex->state[p.node].out[p.output];
          needs[k] = ex->state[p.node].requires_grad;
        }
      for (int k = 0; k < n->n_params; k++)
        {
          in[n_in + k] = s->params[k]->value;
          needs[n_in + k] = s->params[k]->trainable;
        }

      tw_event ev = { .kind = TW_EV_BACKWARD, .ident = &s->ident[1], .step = ex->step,
                      .inputs = s->grad, .n_inputs = n->n_outputs };
      if (listen)
        {
          ev.t_start = tw_now_ns ();
          if (!publish (ex, &ev, error))
            return FALSE;
        }

      tw_kctx kc = make_kctx (ex, n);
      tw_emit *e = tw_eager_emit_new (&kc);
      tw_eager_emit_set_bus (e, ex->bus, &s->ident[1], ex->step);
      tw_val *vin[TW_MAX_INPUTS + TW_MAX_PARAMS], *vout[TW_MAX_OUTPUTS], *vg[TW_MAX_OUTPUTS];
      tw_val *gin[TW_MAX_INPUTS + TW_MAX_PARAMS] = { 0 };
      tw_tensor *gin_t[TW_MAX_INPUTS + TW_MAX_PARAMS] = { 0 };
      /* Named as the node's events name them, so its kernels' events do too. */
      for (int k = 0; k < n_all; k++)
        vin[k] = tw_eager_emit_wrap_named (e, in[k], s->names[0][k]);
      for (int k = 0; k < n->n_outputs; k++)
        {
          vout[k] = tw_eager_emit_wrap_named (e, s->out[k], s->names[1][k]);
          vg[k] = s->grad[k] ? tw_eager_emit_wrap_named (e, s->grad[k], s->names[2][k]) : NULL;
        }
      gboolean ok = n->op->backward (e, n->resolved, vin, n_all, vout, vg, needs, gin);
      g_autoptr (GError) eerr = tw_emit_take_error (e);
      if (tw_eager_emit_stopped (e))
        {
          g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_STOPPED,
                       "stopped in the backward of node %s", n->id);
          tw_eager_emit_free (e);
          return FALSE;
        }
      if (!ok || eerr)
        {
          g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_KERNEL, "node %s (%s) backward: %s",
                       n->id, n->op->name, eerr ? eerr->message : "failed");
          tw_eager_emit_free (e);
          return FALSE;
        }
      for (int k = 0; k < n_all; k++)
        {
          if (!needs[k] || gin[k] == NULL)
            continue;
          gin_t[k] = tw_eager_emit_tensor (gin[k]);
          if (tw_tensor_numel (gin_t[k]) != tw_tensor_numel (in[k]))
            {
              g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_KERNEL,
                           "node %s (%s) backward: gradient %d has the wrong size", n->id,
                           n->op->name, k);
              tw_eager_emit_free (e);
              return FALSE;
            }
        }

      /* Adding into the inputs' and the parameters' gradients is part of this
       * node's backward (its time counts in the event, and a client paused at
       * its end sees the parameters' gradients with it); gin_t stay valid
       * until the emitter goes. */
      for (int k = 0; k < n_in; k++)
        if (gin_t[k])
          {
            tw_port p = n->in_ports[k];
            accumulate (ex, &ex->state[p.node].grad[p.output], gin_t[k]);
          }
      for (int k = 0; k < n->n_params; k++)
        if (gin_t[n_in + k])
          accumulate_param (s->params[k], gin_t[n_in + k],
                            set && g_hash_table_add (touched, s->params[k]));
      gboolean go_on = TRUE;
      if (listen)
        {
          ev.end = TRUE;
          ev.t_end = tw_now_ns ();
          ev.outputs = gin_t;
          ev.n_outputs = n_all;
          go_on = publish (ex, &ev, error);
        }
      tw_eager_emit_free (e);

      /* This node's output gradients are consumed. */
      for (int k = 0; k < n->n_outputs; k++)
        if (s->grad[k])
          {
            count_free (ex, s->grad[k]);
            g_clear_pointer (&s->grad[k], tw_tensor_unref);
          }
      if (ready_events)
        for (int k = 0; k < n->n_params && go_on; k++)
          {
            int pi = s->param_index[k];
            if (s->params[k]->trainable && pi >= 0 && --ex->param_uses[pi] == 0)
              {
                ex->param_uses[pi] = -1;      /* published */
                go_on = grad_ready (ex, s->params[k], error);
              }
          }
      if (!go_on)
        return FALSE;
    }
  for (int i = 0; i < tw_params_count (ex->params); i++)
    {
      tw_param *p = tw_params_at (ex->params, i);
      if (set && p->trainable && p->grad && !g_hash_table_contains (touched, p))
        tw_tensor_fill (p->grad, 0);
      /* Not reached by the loss (or by a node that got no gradient): final now. */
      if (ready_events && p->trainable && i < ex->n_param_uses && ex->param_uses[i] >= 0
          && !grad_ready (ex, p, error))
        return FALSE;
    }
  return TRUE;
}

tw_tensor *
tw_eager_value (tw_eager *ex, const char *ref)
{
  tw_port p = tw_graph_resolve (ex->graph, ref);
  if (p.node < 0 || p.node >= ex->n_state)
    return NULL;
  tw_node *n = tw_graph_node (ex->graph, p.node);
  if (p.output >= n->n_outputs)
    return NULL;
  return ex->state[p.node].out[p.output];
}

tw_tensor *
tw_eager_prediction (tw_eager *ex)
{
  const char *ref = tw_graph_prediction (ex->graph);
  return ref ? tw_eager_value (ex, ref) : NULL;
}

tw_tensor *
tw_eager_loss (tw_eager *ex)
{
  if (ex->loss_node < 0)
    return NULL;
  return ex->state[ex->loss_node].out[0];
}

double
tw_eager_loss_value (tw_eager *ex)
{
  tw_tensor *l = tw_eager_loss (ex);
  if (l == NULL)
    return NAN;
  g_autoptr (tw_tensor) h = tw_tensor_to_host (l);
  return tw_tensor_get_flat (h, 0);
}

size_t
tw_eager_peak_bytes (const tw_eager *ex)
{
  /* Parameter gradients live as long as the parameters (allocated once,
   * reused every step): they count in full. */
  size_t grads = 0;
  for (int i = 0; i < tw_params_count (ex->params); i++)
    {
      tw_param *p = tw_params_at (ex->params, i);
      if (p->trainable)
        grads += tw_tensor_nbytes (p->value);
    }
  return ex->peak_bytes + grads;
}

void
tw_eager_reset_peak (tw_eager *ex)
{
  ex->peak_bytes = ex->live_bytes;
}
