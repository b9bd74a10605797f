/* program.c — building a static program from a graph: forward nodes, then
 * backward through the ops' own backward rules recorded by a graph emitter;
 * slots, helpers for passes, the report. */
#define G_LOG_DOMAIN "twb-compile"

#include "engine/compile/program.h"
#include "engine/kernels.h"
#include "engine/emit.h"
#include "engine/optim.h"

#include <string.h>

/* ---- slots and instructions -------------------------------------------- */

static void
slot_free (gpointer p)
{
  tw_slot *s = p;
  g_free (s->name);
  tw_tensor_unref (s->value);
  g_free (s);
}

void
tw_instr_free (tw_instr *ins)
{
  if (ins == NULL)
    return;
  tw_attrs_free (ins->attrs);
  if (ins->kdata_free)
    ins->kdata_free (ins->kdata);
  g_free (ins->label);
  g_free (ins->param);
  g_clear_pointer (&ins->source_set, g_hash_table_unref);
  g_ptr_array_unref (ins->sources);
  g_free (ins);
}

tw_instr *
tw_instr_new (const tw_op_def *op, const tw_attrs *attrs, const char *label)
{
  tw_instr *ins = g_new0 (tw_instr, 1);
  ins->op = op;
  ins->attrs = tw_attrs_copy (attrs);
  ins->label = g_strdup (label ? label : op ? op->name : "?");
  ins->sources = g_ptr_array_new_with_free_func (g_free);
  return ins;
}

/* Sources a plain scan dedups; past this a set does (an instruction CSE
 * merged 100,000 copies into covers 100,000 nodes). */
#define SOURCES_SCANNED 16

void
tw_instr_add_source (tw_instr *ins, const char *node_id)
{
  if (ins->source_set == NULL && ins->sources->len >= SOURCES_SCANNED)
    {
      ins->source_set = g_hash_table_new (g_str_hash, g_str_equal);
      for (guint i = 0; i < ins->sources->len; i++)
        g_hash_table_add (ins->source_set, g_ptr_array_index (ins->sources, i));
    }
  if (ins->source_set)
    {
      if (g_hash_table_contains (ins->source_set, node_id))
        return;
    }
  else
    for (guint i = 0; i < ins->sources->len; i++)
      if (strcmp (g_ptr_array_index (ins->sources, i), node_id) == 0)
        return;
  char *id = g_strdup (node_id);
  g_ptr_array_add (ins->sources, id);
  if (ins->source_set)
    g_hash_table_add (ins->source_set, id);
}

tw_slot *
tw_program_slot (const tw_program *p, int id)
{
  g_assert (id >= 0 && id < (int) p->slots->len);
  return g_ptr_array_index (p->slots, id);
}

tw_instr *
tw_program_instr (const tw_program *p, int i)
{
  return g_ptr_array_index (p->instrs, i);
}

int
tw_program_add_slot (tw_program *p, tw_slot_kind kind, const tw_tinfo *info, const char *name)
{
  tw_slot *s = g_new0 (tw_slot, 1);
  s->id = (int) p->slots->len;
  s->kind = kind;
  s->info = *info;
  s->name = g_strdup (name);
  s->producer = -1;
  s->alias_of = -1;
  s->offset = -1;
  g_ptr_array_add (p->slots, s);
  return s->id;
}

static void
record_free (gpointer p)
{
  tw_pass_record *r = p;
  g_free (r->pass);
  g_free (r->detail);
}

void
tw_program_free (tw_program *p)
{
  if (p == NULL)
    return;
  g_ptr_array_unref (p->instrs);
  g_ptr_array_unref (p->slots);
  tw_graph_free (p->graph);
  g_array_unref (p->output_slots);
  g_hash_table_unref (p->param_slot);
  g_hash_table_unref (p->grad_slot);
  g_hash_table_unref (p->seed_slot);
  g_hash_table_unref (p->input_grad_slot);
  g_array_unref (p->records);
  g_array_unref (p->param_order);
  g_clear_pointer (&p->keep_nodes, g_hash_table_unref);
  tw_readers_free (p->readers);
  g_free (p);
}

static tw_program *
program_new (void)
{
  tw_program *p = g_new0 (tw_program, 1);
  p->slots = g_ptr_array_new_with_free_func (slot_free);
  p->instrs = g_ptr_array_new_with_free_func ((GDestroyNotify) tw_instr_free);
  p->output_slots = g_array_new (FALSE, FALSE, sizeof (int));
  p->param_slot = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  p->grad_slot = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  p->seed_slot = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  p->input_grad_slot = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  p->records = g_array_new (FALSE, TRUE, sizeof (tw_pass_record));
  p->param_order = g_array_new (FALSE, FALSE, sizeof (int));
  g_array_set_clear_func (p->records, record_free);
  p->data_slot = p->label_slot = p->loss_slot = p->pred_slot = -1;
  return p;
}

void
tw_program_compact (tw_program *p)
{
  /* One pass, order kept (removing entries one by one was quadratic). */
  guint kept = 0;
  for (guint i = 0; i < p->instrs->len; i++)
    if (g_ptr_array_index (p->instrs, i) != NULL)
      p->instrs->pdata[kept++] = p->instrs->pdata[i];
  for (guint i = kept; i < p->instrs->len; i++)
    p->instrs->pdata[i] = NULL;   /* moved: shrinking must not free them */
  g_ptr_array_set_size (p->instrs, kept);
  tw_program_drop_readers (p);
  for (guint s = 0; s < p->slots->len; s++)
    ((tw_slot *) g_ptr_array_index (p->slots, s))->producer = -1;
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_instr *ins = g_ptr_array_index (p->instrs, i);
      for (int k = 0; k < ins->n_out; k++)
        tw_program_slot (p, ins->out[k])->producer = (int) i;
    }
}

void
tw_program_replace_uses (tw_program *p, int from, int to)
{
  tw_program_drop_readers (p);
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_instr *ins = g_ptr_array_index (p->instrs, i);
      if (ins == NULL)
        continue;
      for (int k = 0; k < ins->n_in; k++)
        if (ins->in[k] == from)
          ins->in[k] = to;
    }
  for (guint k = 0; k < p->output_slots->len; k++)
    if (g_array_index (p->output_slots, int, k) == from)
      g_array_index (p->output_slots, int, k) = to;
  if (p->loss_slot == from)
    p->loss_slot = to;
  if (p->pred_slot == from)
    p->pred_slot = to;
  GHashTable *maps[] = { p->grad_slot, p->input_grad_slot };
  for (guint m = 0; m < G_N_ELEMENTS (maps); m++)
    {
      GHashTableIter it;
      gpointer key, val;
      g_hash_table_iter_init (&it, maps[m]);
      while (g_hash_table_iter_next (&it, &key, &val))
        if (GPOINTER_TO_INT (val) - 1 == from)
          g_hash_table_iter_replace (&it, GINT_TO_POINTER (to + 1));
    }
}

/* ---- building ------------------------------------------------------------ */

/* in[0] the parameter (bound to the store), in[1] its gradient. */
static gboolean
update_kernel (const tw_kctx *ctx, const tw_instr *ins, tw_tensor *const *in,
               tw_tensor *const *out, GError **error)
{
  const tw_update_ctx *u = ctx->exec_data;
  tw_param *prm = u ? tw_params_get (u->params, ins->kdata) : NULL;
  if (prm == NULL)
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_KERNEL, "no parameter '%s' to update",
                   (const char *) ins->kdata);
      return FALSE;
    }
  tw_optimizer_update (u->opt, prm, tw_tensor_f32 (in[1]), 0, tw_tensor_numel (in[1]));
  return TRUE;
}

/* in[0] the parameter (bound to the store), in[1] this run's gradient of
 * it: into the store's gradient, = or += (tw_update_ctx.grads_set).  A
 * gradient that points into an arena (tw_compiled_bind_grads) is replaced
 * by one of the parameter's own. */
static gboolean
accumulate_kernel (const tw_kctx *ctx, const tw_instr *ins, tw_tensor *const *in,
                   tw_tensor *const *out, GError **error)
{
  const tw_update_ctx *u = ctx->exec_data;
  tw_param *prm = u ? tw_params_get (u->params, ins->kdata) : NULL;
  if (prm == NULL)
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_KERNEL,
                   "no parameter '%s' to accumulate a gradient into", (const char *) ins->kdata);
      return FALSE;
    }
  int64_t n = tw_tensor_numel (in[1]);
  g_assert (n == tw_tensor_numel (prm->value) && in[1]->dtype == TW_F32);
  gboolean set = u->grads_set;
  if (prm->grad && !prm->grad->storage->owns_data)
    {
      g_autoptr (tw_tensor) own = tw_tensor_new_like (prm->value);
      if (!set)
        tw_tensor_copy_into (own, prm->grad);
      tw_tensor_unref (prm->grad);
      prm->grad = g_steal_pointer (&own);
    }
  if (prm->grad == NULL)
    {
      prm->grad = tw_tensor_new_like (prm->value);
      set = TRUE;
    }
  float *restrict a = tw_tensor_f32 (prm->grad);
  const float *restrict b = tw_tensor_f32 (in[1]);
  if (set)
    memcpy (a, b, (size_t) n * sizeof (float));
  else
    for (int64_t i = 0; i < n; i++)
      a[i] += b[i];
  return TRUE;
}

void
tw_program_register_update_op (void)
{
  static const tw_kernel update = { .op = "optimizer_update", .device = TW_DEVICE_CPU,
                                    .name = "optimizer_update", .fused = (gpointer) update_kernel };
  static const tw_kernel accumulate = { .op = "grad_accumulate", .device = TW_DEVICE_CPU,
                                        .name = "grad_accumulate",
                                        .fused = (gpointer) accumulate_kernel };
  tw_fused_op_register (update.op, "the optimizer's update of one parameter from its gradient");
  tw_kernel_register (&update);
  tw_fused_op_register (accumulate.op,
                        "a parameter's gradient of one run into the gradient kept across runs");
  tw_kernel_register (&accumulate);
}

/* Appends an instruction running a registered op; infers its outputs. */
static gboolean
append_op (tw_program *p, const tw_op_def *def, const tw_attrs *attrs, int n_in, const int *in,
           tw_phase phase, guint64 node_key, gboolean training, const char *source, int *out,
           GError **error)
{
  tw_tinfo info_in[TW_MAX_INPUTS + TW_MAX_PARAMS], info_out[TW_MAX_OUTPUTS];
  g_autoptr (GError) local = NULL;
  tw_attrs *ra = tw_op_resolve_attrs (def, attrs, error);
  if (ra == NULL)
    return FALSE;
  int n_out = tw_op_num_outputs (def, ra);
  for (int i = 0; i < n_in; i++)
    info_in[i] = tw_program_slot (p, in[i])->info;
  memset (info_out, 0, sizeof info_out);
  if (!def->infer (ra, info_in, n_in, info_out, error))
    {
      tw_attrs_free (ra);
      return FALSE;
    }
  tw_instr *ins = tw_instr_new (def, NULL, NULL);
  tw_attrs_free (ins->attrs);
  ins->attrs = ra;
  ins->n_in = n_in;
  memcpy (ins->in, in, n_in * sizeof (int));
  ins->n_out = n_out;
  ins->phase = phase;
  ins->node_key = node_key;
  ins->training = training;
  ins->inplace_ok = (def->flags & TW_OP_ELEMENTWISE) != 0;
  if (source)
    tw_instr_add_source (ins, source);
  if (def->cost)
    def->cost (ra, info_in, n_in, info_out, n_out, &ins->cost);
  for (int k = 0; k < n_out; k++)
    {
      int s = tw_program_add_slot (p, TW_SLOT_ACT, &info_out[k], NULL);
      tw_program_slot (p, s)->producer = (int) p->instrs->len;
      ins->out[k] = s;
      out[k] = s;
    }
  g_ptr_array_add (p->instrs, ins);
  return TRUE;
}

/* The graph emitter: backward rules append instructions; a tw_val is a slot
 * id + 1. */
typedef struct
{
  tw_emit base;
  tw_program *p;
  const char *source;        /* node being differentiated */
} graph_emit;

#define VAL(slot) ((tw_val *) GINT_TO_POINTER ((slot) + 1))
#define SLOT(val) (GPOINTER_TO_INT (val) - 1)

static gboolean
graph_emit_op (tw_emit *e, const tw_op_def *def, const tw_attrs *a, int n_in, tw_val *const *in,
               int n_out, tw_val **out, GError **error)
{
  graph_emit *ge = (graph_emit *) e;
  int ins[TW_MAX_INPUTS + TW_MAX_PARAMS], outs[TW_MAX_OUTPUTS];
  for (int i = 0; i < n_in; i++)
    ins[i] = SLOT (in[i]);
  if (!append_op (ge->p, def, a, n_in, ins, TW_PHASE_BACKWARD, e->kctx.node_key, e->kctx.training,
                  ge->source, outs, error))
    return FALSE;
  for (int k = 0; k < n_out; k++)
    out[k] = VAL (outs[k]);
  return TRUE;
}

static const tw_tinfo *
graph_emit_info (tw_emit *e, tw_val *v)
{
  graph_emit *ge = (graph_emit *) e;
  return &tw_program_slot (ge->p, SLOT (v))->info;
}

static const tw_emit_vtable graph_vtable = { graph_emit_op, graph_emit_info };

/* Gradient of a slot: first contribution kept, later ones added ("add" in
 * the same order as the eager executor's accumulation). */
static gboolean
accumulate_grad (tw_program *p, GHashTable *grads, int slot, int g, const char *source,
                 GError **error)
{
  gpointer cur;
  if (!g_hash_table_lookup_extended (grads, GINT_TO_POINTER (slot), NULL, &cur))
    {
      g_hash_table_insert (grads, GINT_TO_POINTER (slot), GINT_TO_POINTER (g));
      return TRUE;
    }
  int sum;
  int in[2] = { GPOINTER_TO_INT (cur), g };
  if (!append_op (p, tw_op_lookup ("add"), NULL, 2, in, TW_PHASE_BACKWARD, 0, TRUE, source, &sum,
                  error))
    return FALSE;
  g_hash_table_insert (grads, GINT_TO_POINTER (slot), GINT_TO_POINTER (sum));
  return TRUE;
}

tw_program *
tw_program_build (const tw_graph *graph, int64_t batch, tw_program_kind kind, GError **error)
{
  return tw_program_build_grads (graph, batch, kind, NULL, error);
}

int
tw_program_backward_start (const tw_program *p)
{
  int n = (int) p->instrs->len, start = n;
  for (int i = 0; i < n && start == n; i++)
    {
      const tw_instr *ins = tw_program_instr (p, i);
      if (ins->phase != TW_PHASE_FORWARD)
        start = i;
      for (int k = 0; k < ins->n_in && start == n; k++)
        if (tw_program_slot (p, ins->in[k])->kind == TW_SLOT_SEED)
          start = i;
    }
  /* What the forward part hands over must be made inside it. */
  g_autoptr (GArray) want = g_array_copy (p->output_slots);
  if (p->loss_slot >= 0)
    g_array_append_val (want, p->loss_slot);
  if (p->pred_slot >= 0)
    g_array_append_val (want, p->pred_slot);
  for (guint k = 0; k < want->len; k++)
    {
      int s = g_array_index (want, int, k), root = tw_program_alias_root (p, s);
      if (tw_program_slot (p, s)->producer >= start || tw_program_slot (p, root)->producer >= start)
        return -1;
    }
  return start;
}

tw_program *
tw_program_build_grads (const tw_graph *graph, int64_t batch, tw_program_kind kind,
                        const tw_grad_spec *spec, GError **error)
{
  g_autoptr (tw_program) p = program_new ();
  g_autoptr (GArray) order = NULL;
  gint64 t0 = g_get_monotonic_time ();
  gboolean training = kind == TW_PROGRAM_TRAIN || kind == TW_PROGRAM_STEP;
  gboolean with_loss = kind != TW_PROGRAM_INFER;
  gboolean seeded = training && spec && spec->seeds;
  if (!training)
    spec = NULL;
  if (spec && spec->accumulate && kind != TW_PROGRAM_TRAIN)
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT,
                   "gradients accumulate in training programs without updates only");
      return NULL;
    }

  if (batch < 1)
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT,
                   "a static program needs a batch of at least 1 sample, got %" G_GINT64_FORMAT,
                   batch);
      return NULL;
    }
  p->kind = kind;
  p->batch = batch;
  p->graph = tw_graph_copy (graph);
  tw_graph *g = p->graph;
  if (tw_graph_infer_batch (g, batch) > 0)
    {
      g_autofree char *msg = tw_graph_errors_to_string (g);
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH, "the graph has errors:\n%s", msg);
      return NULL;
    }
  if (!tw_graph_topo_order (g, &order, error))
    return NULL;

  int nn = tw_graph_n_nodes (g);
  g_autofree gboolean *needed = g_new0 (gboolean, nn);
  g_autofree int *first_slot = g_new0 (int, nn);     /* slot of each node's output 0 */
  g_autofree gboolean *req = g_new0 (gboolean, nn);  /* depends on a trainable param */
  tw_node *loss = tw_graph_find_loss (g);
  int loss_index = loss ? tw_graph_index_of (g, loss->id) : -1;

  for (const char *const *o = tw_graph_outputs (g); *o; o++)
    tw_graph_mark_upstream (g, tw_graph_resolve (g, *o).node, needed);
  const char *pred = tw_graph_prediction (g);
  tw_port pred_port = pred ? tw_graph_resolve (g, pred) : (tw_port) { -1, 0 };
  if (pred_port.node >= 0)
    tw_graph_mark_upstream (g, pred_port.node, needed);
  if (with_loss && loss == NULL && !seeded)
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH,
                   "the model has no loss node to %s", training ? "train" : "evaluate");
      return NULL;
    }
  if (with_loss && loss)
    {
      tw_graph_mark_upstream (g, loss_index, needed);
      p->loss_slot = -2;    /* set after the forward */
    }
  for (const char *const *r = seeded ? spec->seeds : NULL; r && *r; r++)
    {
      tw_port pt = tw_graph_resolve (g, *r);
      if (pt.node < 0)
        {
          g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT,
                       "a gradient is seeded at '%s', which is no value of the graph", *r);
          return NULL;
        }
      tw_graph_mark_upstream (g, pt.node, needed);
    }
  g_autofree gboolean *grad_input = g_new0 (gboolean, nn);
  for (const char *const *id = spec ? spec->grad_inputs : NULL; id && *id; id++)
    {
      tw_node *n = tw_graph_find (g, *id);
      if (n == NULL || !(n->op->flags & TW_OP_SOURCE))
        {
          g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT,
                       "the gradient of '%s' is asked for, which is no input of the graph", *id);
          return NULL;
        }
      grad_input[tw_graph_index_of (g, n->id)] = TRUE;
    }

  /* Forward. */
  for (guint oi = 0; oi < order->len; oi++)
    {
      int i = g_array_index (order, int, oi);
      tw_node *n = tw_graph_node (g, i);
      if (!needed[i])
        continue;
      p->n_graph_nodes++;
      if (n->op->flags & TW_OP_SOURCE)
        {
          const char *role = tw_attrs_get_string (n->attrs, "role", "data");
          gboolean is_label = g_strcmp0 (role, "label") == 0;
          int s = tw_program_add_slot (p, is_label ? TW_SLOT_LABEL : TW_SLOT_DATA, &n->out_info[0],
                                       n->id);
          if (is_label)
            p->label_slot = s;
          else
            p->data_slot = s;
          first_slot[i] = s;
          req[i] = grad_input[i];
          continue;
        }
      int in[TW_MAX_INPUTS + TW_MAX_PARAMS], out[TW_MAX_OUTPUTS];
      for (int k = 0; k < n->n_inputs; k++)
        {
          tw_port pt = n->in_ports[k];
          in[k] = first_slot[pt.node] + pt.output;
          req[i] |= req[pt.node];
        }
      for (int k = 0; k < n->n_params; k++)
        {
          g_autofree char *name = tw_node_param_name (n, k);
          gpointer v = g_hash_table_lookup (p->param_slot, name);
          int s = v ? GPOINTER_TO_INT (v) - 1
                    : tw_program_add_slot (p, TW_SLOT_PARAM, &n->params[k].info, name);
          if (!v)
            {
              g_hash_table_insert (p->param_slot, g_strdup (name), GINT_TO_POINTER (s + 1));
              g_array_append_val (p->param_order, s);
            }
          in[n->n_inputs + k] = s;
          req[i] |= n->params[k].trainable;
        }
      /* Outputs of one node get consecutive slots (first_slot + k). */
      if (!append_op (p, n->op, n->resolved, n->n_inputs + n->n_params, in, TW_PHASE_FORWARD,
                      tw_node_key (n->id), training, n->id, out, error))
        {
          g_prefix_error (error, "node %s: ", n->id);
          return NULL;
        }
      first_slot[i] = out[0];
      for (int k = 0; k < n->n_outputs; k++)
        tw_program_slot (p, out[k])->name = g_strdup_printf (k ? "%s:%d" : "%s", n->id, k);
    }
  for (const char *const *o = tw_graph_outputs (g); *o; o++)
    {
      tw_port pt = tw_graph_resolve (g, *o);
      int s = first_slot[pt.node] + pt.output;
      g_array_append_val (p->output_slots, s);
      tw_program_slot (p, s)->keep = TRUE;
    }
  if (pred_port.node >= 0)
    {
      p->pred_slot = first_slot[pred_port.node] + pred_port.output;
      tw_program_slot (p, p->pred_slot)->keep = TRUE;
    }

  if (with_loss && loss)
    {
      p->loss_slot = first_slot[loss_index];
      tw_program_slot (p, p->loss_slot)->keep = TRUE;
    }
  if (training)
    {
      g_autoptr (GHashTable) grads = g_hash_table_new (g_direct_hash, g_direct_equal);
      g_autoptr (GHashTable) pgrads = g_hash_table_new (g_direct_hash, g_direct_equal);
      if (!seeded)
        {
          tw_slot *ls = tw_program_slot (p, p->loss_slot);
          /* The seed, named as the eager executor names it (grad:LOSS). */
          g_autofree char *seed = g_strconcat ("grad:", ls->name ? ls->name : "loss", NULL);
          int one = tw_program_add_slot (p, TW_SLOT_CONST, &ls->info, seed);
          tw_slot *os = tw_program_slot (p, one);
          os->value = tw_tensor_new (ls->info.dtype, ls->info.ndim, ls->info.dims);
          tw_tensor_fill (os->value, 1.0);
          g_hash_table_insert (grads, GINT_TO_POINTER (p->loss_slot), GINT_TO_POINTER (one));
        }
      /* Fed seeds, each value once (the executor sums a value fed twice). */
      for (const char *const *r = seeded ? spec->seeds : NULL; r && *r; r++)
        {
          if (g_hash_table_contains (p->seed_slot, *r))
            continue;
          tw_port pt = tw_graph_resolve (g, *r);
          int vs = first_slot[pt.node] + pt.output;
          g_autofree char *name = g_strconcat ("grad:", *r, NULL);
          int ss = tw_program_add_slot (p, TW_SLOT_SEED, &tw_program_slot (p, vs)->info, name);
          g_hash_table_insert (p->seed_slot, g_strdup (*r), GINT_TO_POINTER (ss + 1));
          if (!accumulate_grad (p, grads, vs, ss, NULL, error))
            return NULL;
        }

      graph_emit ge = { { &graph_vtable, { 0 }, NULL }, p, NULL };
      for (int oi = (int) order->len - 1; oi >= 0; oi--)
        {
          int i = g_array_index (order, int, oi);
          tw_node *n = tw_graph_node (g, i);
          if (!needed[i] || !req[i] || (n->op->flags & TW_OP_SOURCE))
            continue;
          tw_val *vin[TW_MAX_INPUTS + TW_MAX_PARAMS], *vout[TW_MAX_OUTPUTS],
            *vg[TW_MAX_OUTPUTS];
          tw_val *gin[TW_MAX_INPUTS + TW_MAX_PARAMS] = { 0 };
          gboolean needs[TW_MAX_INPUTS + TW_MAX_PARAMS] = { 0 };
          gboolean any = FALSE;
          int n_in = n->n_inputs, n_all = n_in + n->n_params;
          tw_instr *fwd = tw_program_instr (p, tw_program_slot (p, first_slot[i])->producer);
          for (int k = 0; k < n_all; k++)
            vin[k] = VAL (fwd->in[k]);
          for (int k = 0; k < n_in; k++)
            needs[k] = req[n->in_ports[k].node];
          for (int k = 0; k < n->n_params; k++)
            needs[n_in + k] = n->params[k].trainable;
          for (int k = 0; k < n->n_outputs; k++)
            {
              gpointer gv;
              vout[k] = VAL (first_slot[i] + k);
              vg[k] = g_hash_table_lookup_extended (grads, GINT_TO_POINTER (first_slot[i] + k),
                                                    NULL, &gv)
                        ? VAL (GPOINTER_TO_INT (gv))
                        : NULL;
              any |= vg[k] != NULL;
            }
          if (!any)
            continue;
          if (n->op->backward == NULL)
            {
              g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_KERNEL,
                           "node %s: op %s is not differentiable", n->id, n->op->name);
              return NULL;
            }
          tw_kctx kc = { .training = TRUE, .node_key = tw_node_key (n->id), .num_threads = 1 };
          tw_emit_set_kctx (&ge.base, &kc);
          ge.source = n->id;
          gboolean ok = n->op->backward (&ge.base, n->resolved, vin, n_all, vout, vg, needs, gin);
          g_autoptr (GError) eerr = tw_emit_take_error (&ge.base);
          if (!ok || eerr)
            {
              g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_KERNEL, "node %s (%s) backward: %s",
                           n->id, n->op->name, eerr ? eerr->message : "failed");
              return NULL;
            }
          for (int k = 0; k < n_in; k++)
            if (needs[k] && gin[k]
                && !accumulate_grad (p, grads, fwd->in[k], SLOT (gin[k]), n->id, error))
              return NULL;
          for (int k = 0; k < n->n_params; k++)
            if (needs[n_in + k] && gin[n_in + k]
                && !accumulate_grad (p, pgrads, fwd->in[n_in + k], SLOT (gin[n_in + k]), n->id,
                                     error))
              return NULL;
        }
      /* Gradients of the inputs asked for (those reached). */
      for (int i = 0; i < nn; i++)
        {
          gpointer gv;
          if (!grad_input[i] || !needed[i]
              || !g_hash_table_lookup_extended (grads, GINT_TO_POINTER (first_slot[i]), NULL, &gv))
            continue;
          int gs = GPOINTER_TO_INT (gv);
          tw_program_slot (p, gs)->keep = TRUE;
          g_hash_table_insert (p->input_grad_slot, g_strdup (tw_graph_node (g, i)->id),
                               GINT_TO_POINTER (gs + 1));
        }
      /* Final parameter gradients, and for STEP programs their updates. */
      for (guint k = 0; k < p->param_order->len; k++)
        {
          int ps = g_array_index (p->param_order, int, k);
          const char *name = tw_program_slot (p, ps)->name;
          gpointer gv;
          if (!g_hash_table_lookup_extended (pgrads, GINT_TO_POINTER (ps), NULL, &gv))
            continue;
          int gs = GPOINTER_TO_INT (gv);
          tw_slot *s = tw_program_slot (p, gs);
          /* Backward rules always produce fresh slots for parameter gradients. */
          g_assert (s->kind == TW_SLOT_ACT);
          g_hash_table_insert (p->grad_slot, g_strdup (name), GINT_TO_POINTER (gs + 1));
          if (spec && spec->accumulate)
            {
              tw_instr *a = tw_instr_new (NULL, NULL, TW_GRAD_ACCUMULATE_LABEL);
              a->fused_op = "grad_accumulate";
              a->kernel = tw_fused_cpu_kernel (a->fused_op);
              a->kdata = g_strdup (name);
              a->kdata_free = g_free;
              double numel = (double) tw_tinfo_numel (&s->info, NULL);
              a->cost.flops = numel;
              a->cost.bytes_read = 2 * numel * sizeof (float);
              a->cost.bytes_written = numel * sizeof (float);
              a->phase = TW_PHASE_BACKWARD;
              a->training = TRUE;
              a->n_in = 2;
              a->in[0] = ps;
              a->in[1] = gs;
              g_autofree char *scope = g_strdup (name);
              char *dot = strrchr (scope, '.');
              if (dot)
                *dot = '\0';
              tw_instr_add_source (a, scope);
              g_ptr_array_add (p->instrs, a);
              p->n_accumulates++;
              continue;
            }
          if (kind != TW_PROGRAM_STEP)
            {
              s->keep = TRUE;
              continue;
            }
          tw_instr *u = tw_instr_new (NULL, NULL, "optimizer update");
          u->fused_op = "optimizer_update";
          u->kernel = tw_fused_cpu_kernel (u->fused_op);
          u->kdata = g_strdup (name);
          u->kdata_free = g_free;
          u->param = g_strdup (name);
          /* Read parameter, gradient and (up to two) state tensors, write
           * parameter and state; a few flops per element. */
          {
            double numel = (double) tw_tinfo_numel (&s->info, NULL);
            u->cost.flops = 4 * numel;
            u->cost.bytes_read = 4 * numel * sizeof (float);
            u->cost.bytes_written = 3 * numel * sizeof (float);
          }
          u->phase = TW_PHASE_UPDATE;
          u->training = TRUE;
          u->n_in = 2;
          u->in[0] = ps;
          u->in[1] = gs;
          u->n_out = 0;
          g_autofree char *scope = g_strdup (name);
          char *dot = strrchr (scope, '.');
          if (dot)
            *dot = '\0';
          tw_instr_add_source (u, scope);
          g_ptr_array_add (p->instrs, u);
          p->n_updates++;
        }
    }
  p->build_ms = (g_get_monotonic_time () - t0) / 1000.0;
  return g_steal_pointer (&p);
}

/* ---- report -------------------------------------------------------------- */

static char *
sources_string (const tw_instr *ins)
{
  GString *s = g_string_new (NULL);
  for (guint k = 0; k < ins->sources->len; k++)
    g_string_append_printf (s, "%s%s", k ? ", " : "", (char *) g_ptr_array_index (ins->sources, k));
  return g_string_free (s, FALSE);
}

char *
tw_program_dump (const tw_program *p)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_instr *ins = g_ptr_array_index (p->instrs, i);
      g_autofree char *src = sources_string (ins);
      for (int k = 0; k < ins->n_out; k++)
        g_string_append_printf (s, "%s%%%d", k ? ", " : "", ins->out[k]);
      g_string_append_printf (s, " = %s(", ins->label);
      for (int k = 0; k < ins->n_in; k++)
        g_string_append_printf (s, "%s%%%d", k ? ", " : "", ins->in[k]);
      g_string_append_printf (s, ")  [%s]%s\n", src,
                              ins->phase == TW_PHASE_BACKWARD ? " backward" : "");
    }
  return g_string_free (s, FALSE);
}

char *
tw_program_report (const tw_program *p)
{
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "%s program, batch %" G_GINT64_FORMAT ": %d graph nodes → %u instructions\n",
                          p->kind == TW_PROGRAM_STEP    ? "training step"
                          : p->kind == TW_PROGRAM_TRAIN ? "training"
                          : p->kind == TW_PROGRAM_EVAL  ? "evaluation"
                                                        : "inference", p->batch,
                          p->n_graph_nodes, p->instrs->len);
  g_string_append_printf (s, "  %-22s %8s %8s %9s\n", "pass", "before", "after", "ms");
  g_string_append_printf (s, "  %-22s %8d %8s %9.3f\n", "build", p->n_graph_nodes, "", p->build_ms);
  for (guint i = 0; i < p->records->len; i++)
    {
      tw_pass_record *r = &g_array_index (p->records, tw_pass_record, i);
      g_string_append_printf (s, "  %-22s %8d %8d %9.3f\n", r->pass, r->instrs_before,
                              r->instrs_after, r->ms);
      if (r->detail && *r->detail)
        {
          g_auto (GStrv) lines = g_strsplit (r->detail, "\n", -1);
          for (char **l = lines; *l; l++)
            if (**l)
              g_string_append_printf (s, "      %s\n", *l);
        }
    }
  g_string_append (s, "fused kernels:\n");
  gboolean any = FALSE;
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_instr *ins = g_ptr_array_index (p->instrs, i);
      if (ins->kernel == NULL || strcmp (ins->label, "optimizer update") == 0
          || strcmp (ins->label, TW_GRAD_ACCUMULATE_LABEL) == 0)
        continue;
      g_autofree char *src = sources_string (ins);
      g_string_append_printf (s, "  %-34s covers %s%s\n", ins->label, src,
                              ins->phase == TW_PHASE_BACKWARD ? " (backward)"
                              : ins->phase == TW_PHASE_UPDATE ? " (update)"
                                                              : "");
      any = TRUE;
    }
  if (!any)
    g_string_append (s, "  none\n");
  if (p->n_updates > 0)
    g_string_append_printf (s, "optimizer: %d parameter updates in the program, each right after "
                               "its gradient is ready\n", p->n_updates);
  g_string_append_printf (s, "memory: arena %zu bytes (all activation/gradient slots without reuse: %zu)\n",
                          p->arena_bytes, p->unplanned_bytes);
  return g_string_free (s, FALSE);
}

JsonNode *
tw_program_report_json (const tw_program *p)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "kind");
  json_builder_add_string_value (b, p->kind == TW_PROGRAM_STEP    ? "step"
                                    : p->kind == TW_PROGRAM_TRAIN ? "train"
                                    : p->kind == TW_PROGRAM_EVAL  ? "eval"
                                                                  : "infer");
  json_builder_set_member_name (b, "batch");
  json_builder_add_int_value (b, p->batch);
  json_builder_set_member_name (b, "graph_nodes");
  json_builder_add_int_value (b, p->n_graph_nodes);
  json_builder_set_member_name (b, "instructions");
  json_builder_add_int_value (b, p->instrs->len);
  json_builder_set_member_name (b, "build_ms");
  json_builder_add_double_value (b, p->build_ms);
  json_builder_set_member_name (b, "passes");
  json_builder_begin_array (b);
  for (guint i = 0; i < p->records->len; i++)
    {
      tw_pass_record *r = &g_array_index (p->records, tw_pass_record, i);
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "pass");
      json_builder_add_string_value (b, r->pass);
      json_builder_set_member_name (b, "before");
      json_builder_add_int_value (b, r->instrs_before);
      json_builder_set_member_name (b, "after");
      json_builder_add_int_value (b, r->instrs_after);
      json_builder_set_member_name (b, "ms");
      json_builder_add_double_value (b, r->ms);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_set_member_name (b, "fused");
  json_builder_begin_array (b);
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_instr *ins = g_ptr_array_index (p->instrs, i);
      if (ins->kernel == NULL || strcmp (ins->label, "optimizer update") == 0
          || strcmp (ins->label, TW_GRAD_ACCUMULATE_LABEL) == 0)
        continue;
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "kernel");
      json_builder_add_string_value (b, ins->label);
      json_builder_set_member_name (b, "phase");
      json_builder_add_string_value (b, ins->phase == TW_PHASE_BACKWARD ? "backward"
                                        : ins->phase == TW_PHASE_UPDATE ? "update"
                                                                        : "forward");
      json_builder_set_member_name (b, "sources");
      json_builder_begin_array (b);
      for (guint k = 0; k < ins->sources->len; k++)
        json_builder_add_string_value (b, g_ptr_array_index (ins->sources, k));
      json_builder_end_array (b);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_set_member_name (b, "updates");
  json_builder_add_int_value (b, p->n_updates);
  json_builder_set_member_name (b, "arena_bytes");
  json_builder_add_int_value (b, (gint64) p->arena_bytes);
  json_builder_set_member_name (b, "unplanned_bytes");
  json_builder_add_int_value (b, (gint64) p->unplanned_bytes);
  json_builder_end_object (b);
  return json_builder_get_root (b);
}

size_t
tw_slot_bytes (const tw_slot *s)
{
  size_t n;
  /* Slots come from inferred shapes, representable (engine/graph.c). */
  return tw_tinfo_nbytes (&s->info, 1, &n) ? n : SIZE_MAX;
}

int
tw_program_alias_root (const tw_program *p, int s)
{
  while (tw_program_slot (p, s)->alias_of >= 0)
    s = tw_program_slot (p, s)->alias_of;
  return s;
}
