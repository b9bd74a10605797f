/* compiled.c — running static programs out of one arena. */
#define G_LOG_DOMAIN "twb-compile"

#include "engine/compile/compiled.h"
#include "engine/device.h"
#include "engine/kernels.h"
#include "engine/memory.h"
#include "engine/workspace-private.h"

#include <math.h>
#include <string.h>

#define GUARD_BYTE 0xA5
#define GUARD_BYTES 64

/* A program ready to run: its arena and one tensor header per slot. */
typedef struct
{
  tw_program *prog;
  guint8 *arena;
  tw_tensor **t;           /* [n_slots] views; NULL for DATA/LABEL until bound */
  tw_op_ident *ident;      /* [n_instrs] */
  GPtrArray **ready;       /* [n_instrs] tw_param* whose gradient is final at its end, or NULL */
  GPtrArray *ready_last;   /* trainable params the program gives no gradient (end of run) */
  GStrv *nodes;            /* [n_instrs] NULL-terminated ids, owned */
  GStrv *names;            /* [2 * n_instrs] input / output slot names, owned */
  int **node_index;        /* [n_instrs] */
  const tw_device *device; /* the arena's */
  tw_forward_fn *fwd;      /* [n_instrs] the kernel of a registered op, or NULL */
  tw_kernel_fn *fused;     /* [n_instrs] the kernel of a fused op, or NULL */
  guint32 *overwrites;     /* [n_instrs] bit k: input k shares its buffer with an output
                            * (written in place) */
  tw_tensor **kept;        /* [n_slots] host copy of a slot an instruction writes over,
                            * kept from step to step (keep_overwritten); NULL: none yet */
  int bwd_start;           /* tw_program_backward_start */
  gboolean fwd_pending;    /* tw_compiled_forward_feeds ran; the backward part is due */
  guint64 fwd_step;        /* its step */
} runnable;


struct tw_compiled
{
  tw_graph *graph;
  tw_params *params;
  guint64 seed;
  int num_threads;
  tw_pass_flags passes;
  gboolean guards;
  const tw_device *device;
  tw_workspace *ws;        /* kernels' scratch, grown in the first run */
  tw_bus *bus;
  GHashTable *keep_nodes;  /* node ids never fused (inspectable), or NULL */
  GHashTable *cache;       /* (kind << 48 | batch) → runnable* */
  tw_update_ctx update;
  gboolean allow_nan;
  runnable *last;
  GPtrArray *notes;
  const char *rebuild_reason;  /* why the cache was emptied, for the next program's note */
  gboolean grad_norms;     /* fused gradient+update kernels report their gradient's norm */
  gboolean updating;       /* this run has updated a parameter */
  gboolean has_spec;       /* training programs differentiate spec, not the loss alone */
  char **spec_seeds, **spec_inputs;   /* spec's lists, owned */
  tw_grad_spec spec;
  gboolean stop_pending;   /* a client asked to stop after that */
};

/* Bytes of every live program's arena (a relaxed atomic; the profiler's
 * "arena in use" counter reads it). */
static gint64 arena_bytes_live;

guint64
tw_compiled_arena_bytes (void)
{
  return (guint64) __atomic_load_n (&arena_bytes_live, __ATOMIC_RELAXED);
}

static void
runnable_free (gpointer data)
{
  runnable *r = data;
  for (guint s = 0; s < r->prog->slots->len; s++)
    {
      tw_tensor_unref (r->t[s]);
      if (r->kept)
        tw_tensor_unref (r->kept[s]);
    }
  g_free (r->t);
  g_free (r->kept);
  for (guint i = 0; i < r->prog->instrs->len; i++)
    {
      g_strfreev (r->nodes[i]);
      g_strfreev (r->names[2 * i]);
      g_strfreev (r->names[2 * i + 1]);
      g_free (r->node_index[i]);
      if (r->ready[i])
        g_ptr_array_unref (r->ready[i]);
    }
  g_free (r->nodes);
  g_free (r->names);
  g_free (r->node_index);
  g_free (r->ready);
  g_free (r->ident);
  g_free (r->fwd);
  g_free (r->fused);
  g_free (r->overwrites);
  g_ptr_array_unref (r->ready_last);
  tw_device_free (r->device, r->arena, MAX (r->prog->arena_bytes, 64));
  __atomic_sub_fetch (&arena_bytes_live, (gint64) MAX (r->prog->arena_bytes, 64), __ATOMIC_RELAXED);
  tw_program_free (r->prog);
  g_free (r);
}

static tw_tensor *
view_tensor (const tw_tinfo *info, void *data)
{
  return tw_tensor_new_borrowed (info->dtype, info->ndim, info->dims, data);
}

/* A slot's name: its own, else what made it (tw_value_name: the
 * instruction that writes it applied to that instruction's inputs), given
 * in made[] as the instructions are walked in order. */
static const char *
slot_name (const tw_program *p, const GPtrArray *made, int s)
{
  const tw_slot *sl = tw_program_slot (p, s);
  return sl->name ? sl->name : g_ptr_array_index (made, s);
}

/* Each instruction's identity, computed once: the nodes it covers (their
 * indices in the executor's graph), cost, whether it ends its node's work in
 * this phase; and which parameters' gradients are final when it ends. */
static void
build_identities (tw_compiled *c, runnable *r)
{
  tw_program *prog = r->prog;
  guint ni = prog->instrs->len;
  r->ident = g_new0 (tw_op_ident, MAX (ni, 1));
  r->nodes = g_new0 (GStrv, MAX (ni, 1));
  r->names = g_new0 (GStrv, 2 * MAX (ni, 1));
  r->node_index = g_new0 (int *, MAX (ni, 1));
  r->ready = g_new0 (GPtrArray *, MAX (ni, 1));
  r->ready_last = g_ptr_array_new ();
  g_autoptr (GPtrArray) made = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_set_size (made, (int) prog->slots->len);
  g_autofree gboolean *final_grad = g_new0 (gboolean, MAX (prog->slots->len, 1));
  /* A parameter's final gradient by the eager executor's name for it. */
  GHashTableIter it;
  gpointer pname, slot1;
  g_hash_table_iter_init (&it, prog->grad_slot);
  while (g_hash_table_iter_next (&it, &pname, &slot1))
    {
      final_grad[GPOINTER_TO_INT (slot1) - 1] = TRUE;
      int root = tw_program_alias_root (prog, GPOINTER_TO_INT (slot1) - 1);
      if (!tw_program_slot (prog, root)->name && g_ptr_array_index (made, root) == NULL)
        made->pdata[root] = g_strconcat ("grad:", (const char *) pname, NULL);
    }
  for (guint i = 0; i < ni; i++)
    {
      tw_instr *ins = tw_program_instr (prog, (int) i);
      int nn = (int) ins->sources->len;
      r->nodes[i] = g_new0 (char *, nn + 1);
      r->node_index[i] = g_new0 (int, MAX (nn, 1));
      for (int k = 0; k < nn; k++)
        {
          const char *id = g_ptr_array_index (ins->sources, k);
          r->nodes[i][k] = g_strdup (id);
          const tw_node *n = tw_graph_find (c->graph, id);
          r->node_index[i][k] = n ? tw_graph_index_of (c->graph, n->id) : -1;
        }
      tw_op_ident *id = &r->ident[i];
      id->label = ins->label;
      id->nodes = (const char *const *) r->nodes[i];
      id->node_index = r->node_index[i];
      id->n_nodes = nn;
      id->phase = ins->phase;
      /* What the report calls fused: several ops in one kernel. */
      id->fused = g_str_has_prefix (ins->label, "fused ");
      id->flops = ins->cost.flops;
      id->bytes = ins->cost.bytes_read + ins->cost.bytes_written;
      id->device = tw_device_cpu ();
      GStrv in = g_new0 (char *, ins->n_in + 1), out = g_new0 (char *, ins->n_out + 1);
      for (int k = 0; k < ins->n_in; k++)
        in[k] = g_strdup (slot_name (prog, made, ins->in[k]));
      /* A view's output is its input's value under the same name; an op
       * that writes over an input's buffer (in place) makes a new value. */
      gboolean view = ins->op && (ins->op->flags & TW_OP_VIEW);
      for (int k = 0; k < ins->n_out; k++)
        {
          int o = ins->out[k];
          int root = tw_program_alias_root (prog, o);
          if (!tw_program_slot (prog, o)->name && g_ptr_array_index (made, o) == NULL &&
              root != o && g_ptr_array_index (made, root) && (view || final_grad[o]))
            made->pdata[o] = g_strdup (g_ptr_array_index (made, root));
          if (!tw_program_slot (prog, o)->name && g_ptr_array_index (made, o) == NULL)
            made->pdata[o] = tw_value_name (ins->label, (const char *const *) in, ins->n_in, k,
                                            ins->n_out, o);
          out[k] = g_strdup (slot_name (prog, made, o));
        }
      r->names[2 * i] = in;
      r->names[2 * i + 1] = out;
      id->in_names = (const char *const *) in;
      id->out_names = (const char *const *) out;
    }
  /* An instruction ends its nodes' work when the next one (in the same
   * phase) covers another first node. */
  for (guint i = 0; i < ni; i++)
    {
      tw_instr *a = tw_program_instr (prog, (int) i);
      tw_instr *b = i + 1 < ni ? tw_program_instr (prog, (int) i + 1) : NULL;
      r->ident[i].layer_end = b == NULL || b->phase != a->phase || a->sources->len == 0
                              || b->sources->len == 0
                              || strcmp (g_ptr_array_index (a->sources, 0),
                                         g_ptr_array_index (b->sources, 0)) != 0;
    }
  /* The first instruction writing each slot, and the first updating each
   * parameter: one pass, not one per parameter. */
  g_autofree int *writer = g_new (int, MAX (prog->slots->len, 1));
  for (guint k = 0; k < prog->slots->len; k++)
    writer[k] = -1;
  g_autoptr (GHashTable) updater = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr (GHashTable) accumulator = g_hash_table_new (g_str_hash, g_str_equal);
  for (guint k = ni; k-- > 0;)
    {
      tw_instr *ins = tw_program_instr (prog, (int) k);
      for (int o = 0; o < ins->n_out; o++)
        writer[ins->out[o]] = (int) k;
      if (ins->param)
        g_hash_table_insert (updater, ins->param, GINT_TO_POINTER (k + 1));
      if (ins->fused_op && strcmp (ins->fused_op, "grad_accumulate") == 0)
        g_hash_table_insert (accumulator, ins->kdata, GINT_TO_POINTER (k + 1));
    }
  for (int i = 0; i < tw_params_count (c->params); i++)
    {
      tw_param *pp = tw_params_at (c->params, i);
      if (!pp->trainable)
        continue;
      int at = -1;
      gpointer v = g_hash_table_lookup (prog->grad_slot, pp->name);
      if (v && g_hash_table_contains (accumulator, pp->name))
        /* Final in the store once accumulated. */
        at = GPOINTER_TO_INT (g_hash_table_lookup (accumulator, pp->name)) - 1;
      else if (v)
        {
          at = writer[GPOINTER_TO_INT (v) - 1];
          /* A fused gradient+update: final inside the update. */
          if (at < 0)
            at = GPOINTER_TO_INT (g_hash_table_lookup (updater, pp->name)) - 1;
        }
      if (at < 0)
        g_ptr_array_add (r->ready_last, pp);
      else
        {
          if (r->ready[at] == NULL)
            r->ready[at] = g_ptr_array_new ();
          g_ptr_array_add (r->ready[at], pp);
        }
    }
}

/* Each instruction's kernel for the executor's device, looked up once. */
static gboolean
resolve_kernels (tw_compiled *c, runnable *r, GError **error)
{
  guint ni = r->prog->instrs->len;
  r->fwd = g_new0 (tw_forward_fn, MAX (ni, 1));
  r->fused = g_new0 (tw_kernel_fn, MAX (ni, 1));
  for (guint i = 0; i < ni; i++)
    {
      tw_instr *ins = tw_program_instr (r->prog, (int) i);
      const char *op = ins->fused_op ? ins->fused_op : ins->op ? ins->op->name : NULL;
      const tw_kernel *k = op ? tw_kernel_find (op, c->device, ins->attrs, NULL, 0) : NULL;
      if (k == NULL || (ins->fused_op ? k->fused == NULL : k->forward == NULL))
        {
          g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_KERNEL,
                       "no %s kernel for %s (instruction %u, %s)", tw_device_name (c->device),
                       op ? op : "?", i, ins->label);
          return FALSE;
        }
      if (ins->fused_op)
        r->fused[i] = (tw_kernel_fn) k->fused;
      else
        r->fwd[i] = k->forward;
    }
  return TRUE;
}

static runnable *
runnable_new (tw_compiled *c, tw_program *prog)
{
  runnable *r = g_new0 (runnable, 1);
  r->prog = prog;
  r->device = c->device;
  r->arena = tw_device_alloc (c->device, MAX (prog->arena_bytes, 64));
  if (r->arena == NULL)
    {
      g_free (r);
      return NULL;
    }
  __atomic_add_fetch (&arena_bytes_live, (gint64) MAX (prog->arena_bytes, 64), __ATOMIC_RELAXED);
  if (prog->guards)
    memset (r->arena, GUARD_BYTE, prog->arena_bytes);
  r->t = g_new0 (tw_tensor *, prog->slots->len);
  for (guint s = 0; s < prog->slots->len; s++)
    {
      tw_slot *sl = tw_program_slot (prog, (int) s);
      if (sl->kind == TW_SLOT_CONST)
        r->t[s] = tw_tensor_ref (sl->value);
      else if (sl->kind == TW_SLOT_PARAM)
        {
          tw_param *pp = tw_params_get (c->params, sl->name);
          g_assert (pp != NULL);
          r->t[s] = tw_tensor_ref (pp->value);
        }
      else if (sl->kind == TW_SLOT_ACT && sl->offset >= 0)
        r->t[s] = view_tensor (&sl->info, r->arena + sl->offset);
    }
  /* Views of data, labels or parameters share the bound tensor's memory;
   * they are (re)pointed at bind time. */
  for (guint s = 0; s < prog->slots->len; s++)
    {
      tw_slot *sl = tw_program_slot (prog, (int) s);
      if (sl->kind == TW_SLOT_ACT && sl->offset < 0)
        r->t[s] = view_tensor (&sl->info, NULL);
    }
  build_identities (c, r);
  G_STATIC_ASSERT (TW_MAX_INPUTS + TW_MAX_PARAMS <= 32); /* a bit per input */
  r->bwd_start = tw_program_backward_start (prog);
  r->overwrites = g_new0 (guint32, MAX (prog->instrs->len, 1));
  for (guint i = 0; i < prog->instrs->len; i++)
    {
      tw_instr *ins = tw_program_instr (prog, (int) i);
      for (int k = 0; k < ins->n_in; k++)
        for (int j = 0; j < ins->n_out; j++)
          if (tw_program_alias_root (prog, ins->in[k]) == tw_program_alias_root (prog, ins->out[j]))
            r->overwrites[i] |= 1u << k;
    }
  return r;
}

/* Host copies of the inputs instruction i is about to write over, for its
 * end event (TW_EV_INPUTS_AT_END): end_in is in with those replaced.  On
 * the host a slot's copy is made once and refilled each step, unless a
 * client still holds the last one (a pause's snapshot): a step allocates
 * nothing for it.  kept[k] holds what the caller unrefs (a device's host
 * copy), or NULL. */
static void
keep_overwritten (runnable *r, const tw_instr *ins, guint32 bits, tw_tensor *const *in,
                  tw_tensor **kept, tw_tensor **end_in)
{
  if (r->kept == NULL)
    r->kept = g_new0 (tw_tensor *, MAX (r->prog->slots->len, 1));
  for (int k = 0; k < ins->n_in; k++)
    {
      kept[k] = NULL;
      end_in[k] = in[k];
      if (!(bits & (1u << k)))
        continue;
      tw_tensor *h = tw_tensor_to_host (in[k]);
      if (h != in[k])
        {
          kept[k] = end_in[k] = h;
          continue;
        }
      tw_tensor_unref (h);
      tw_tensor **copy = &r->kept[ins->in[k]];
      tw_tensor *c = *copy;
      gboolean reuse = c && g_atomic_int_get (&c->refcount) == 1 &&
                       g_atomic_int_get (&c->storage->refcount) == 1 && c->dtype == in[k]->dtype &&
                       c->ndim == in[k]->ndim &&
                       memcmp (c->shape, in[k]->shape, sizeof (int64_t) * (size_t) c->ndim) == 0 &&
                       tw_tensor_copy_into (c, in[k]);
      if (!reuse)
        {
          tw_tensor_unref (c);
          *copy = tw_tensor_clone (in[k]);
        }
      end_in[k] = *copy;
    }
}

static void
bind_views (runnable *r)
{
  tw_program *p = r->prog;
  for (guint s = 0; s < p->slots->len; s++)
    {
      tw_slot *sl = tw_program_slot (p, (int) s);
      if (sl->kind != TW_SLOT_ACT || sl->offset >= 0)
        continue;
      int root = tw_program_alias_root (p, (int) s);
      tw_tensor *src = r->t[root];
      r->t[s]->storage->data = src ? tw_tensor_data (src) : NULL;
      r->t[s]->offset = 0;
    }
}

tw_compiled *
tw_compiled_new (tw_graph *graph, tw_params *params, guint64 seed, GError **error)
{
  if (tw_graph_infer (graph) > 0)
    {
      g_autofree char *msg = tw_graph_errors_to_string (graph);
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH, "the graph has errors:\n%s", msg);
      return NULL;
    }
  if (!tw_params_sync_graph (params, graph, seed, error))
    return NULL;
  tw_compiled *c = g_new0 (tw_compiled, 1);
  c->graph = graph;
  c->params = params;
  c->seed = seed;
  c->num_threads = 1;
  c->passes = TW_PASS_ALL;
  c->device = tw_device_cpu ();
  c->ws = tw_workspace_new (c->device);
  c->cache = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, runnable_free);
  c->notes = g_ptr_array_new_with_free_func (g_free);
  c->update.params = params;
  return c;
}

void
tw_compiled_free (tw_compiled *c)
{
  if (c == NULL)
    return;
  g_hash_table_unref (c->cache);
  g_ptr_array_unref (c->notes);
  g_clear_pointer (&c->bus, tw_bus_unref);
  g_clear_pointer (&c->keep_nodes, g_hash_table_unref);
  g_strfreev (c->spec_seeds);
  g_strfreev (c->spec_inputs);
  tw_workspace_free (c->ws);
  g_free (c);
}

void
tw_compiled_set_passes (tw_compiled *c, tw_pass_flags passes)
{
  c->passes = passes;
  g_hash_table_remove_all (c->cache);
  c->last = NULL;
}

void
tw_compiled_set_guards (tw_compiled *c, gboolean guards)
{
  c->guards = guards;
  g_hash_table_remove_all (c->cache);
  c->last = NULL;
}

void
tw_compiled_set_num_threads (tw_compiled *c, int n)
{
  c->num_threads = MAX (1, n);
}

void
tw_compiled_set_seed (tw_compiled *c, guint64 seed)
{
  c->seed = seed;
}

void
tw_compiled_set_bus (tw_compiled *c, tw_bus *bus)
{
  if (bus)
    tw_bus_ref (bus);
  g_clear_pointer (&c->bus, tw_bus_unref);
  c->bus = bus;
}

static void
invalidate_because (tw_compiled *c, const char *reason)
{
  if (g_hash_table_size (c->cache) > 0)
    c->rebuild_reason = reason;
  g_hash_table_remove_all (c->cache);
  c->last = NULL;
}

void
tw_compiled_invalidate (tw_compiled *c)
{
  invalidate_because (c, "recompiled on request");
}

gboolean
tw_compiled_set_graph (tw_compiled *c, tw_graph *graph, GError **error)
{
  if (tw_graph_infer (graph) > 0)
    {
      g_autofree char *msg = tw_graph_errors_to_string (graph);
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH, "the graph has errors:\n%s", msg);
      return FALSE;
    }
  c->graph = graph;
  invalidate_because (c, "the graph was edited");
  return TRUE;
}

gboolean
tw_compiled_set_keep_nodes (tw_compiled *c, const char *const *node_ids)
{
  g_autoptr (GHashTable) set = NULL;
  if (node_ids && node_ids[0])
    {
      set = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
      for (const char *const *n = node_ids; *n; n++)
        g_hash_table_add (set, g_strdup (*n));
    }
  gboolean same = (set == NULL && c->keep_nodes == NULL)
                  || (set && c->keep_nodes && g_hash_table_size (set) == g_hash_table_size (c->keep_nodes));
  if (same && set)
    {
      GHashTableIter it;
      gpointer k;
      g_hash_table_iter_init (&it, set);
      while (same && g_hash_table_iter_next (&it, &k, NULL))
        same = g_hash_table_contains (c->keep_nodes, k);
    }
  if (same)
    return FALSE;
  g_clear_pointer (&c->keep_nodes, g_hash_table_unref);
  c->keep_nodes = g_steal_pointer (&set);
  invalidate_because (c, "the nodes kept out of fusion for the debugger changed");
  return TRUE;
}

void
tw_compiled_set_grads (tw_compiled *c, const tw_grad_spec *spec)
{
  g_clear_pointer (&c->spec_seeds, g_strfreev);
  g_clear_pointer (&c->spec_inputs, g_strfreev);
  c->has_spec = spec != NULL;
  if (spec)
    {
      c->spec_seeds = g_strdupv ((char **) spec->seeds);
      c->spec_inputs = g_strdupv ((char **) spec->grad_inputs);
      c->spec = (tw_grad_spec) { .seeds = (const char *const *) c->spec_seeds,
                                 .grad_inputs = (const char *const *) c->spec_inputs,
                                 .accumulate = spec->accumulate };
    }
  invalidate_because (c, "what training differentiates changed");
}

void
tw_compiled_set_optimizer (tw_compiled *c, struct tw_optimizer *opt)
{
  c->update.opt = opt;
}

void
tw_compiled_set_allow_nan (tw_compiled *c, gboolean allow)
{
  c->allow_nan = allow;
}

void
tw_compiled_set_grad_norms (tw_compiled *c, gboolean on)
{
  c->grad_norms = on;
}

gboolean
tw_compiled_stop_pending (tw_compiled *c)
{
  gboolean p = c->stop_pending;
  c->stop_pending = FALSE;
  return p;
}

const tw_workspace *
tw_compiled_workspace (tw_compiled *c)
{
  return c->ws;
}

const GPtrArray *
tw_compiled_notes (tw_compiled *c)
{
  return c->notes;
}

static runnable *
get_runnable (tw_compiled *c, tw_program_kind kind, int64_t batch, GError **error)
{
  gint64 key = ((gint64) kind << 48) | batch;
  runnable *r = g_hash_table_lookup (c->cache, &key);
  if (r)
    return r;
  gint64 t0 = g_get_monotonic_time ();
  tw_program *p = tw_program_build_grads (c->graph, batch, kind, c->has_spec ? &c->spec : NULL,
                                          error);
  if (p == NULL)
    return NULL;
  p->guards = c->guards;
  if (c->keep_nodes)
    p->keep_nodes = g_hash_table_ref (c->keep_nodes);
  if (!tw_program_optimize (p, c->passes, error))
    {
      tw_program_free (p);
      return NULL;
    }
  /* The arena is planned, not yet allocated: refuse it with the figure when
   * it cannot fit (Linux would overcommit and kill the process later). */
  g_autofree char *what = g_strdup_printf ("the %s program's arena at batch %" G_GINT64_FORMAT,
                                           kind == TW_PROGRAM_INFER ? "inference" : "training",
                                           batch);
  if (tw_device_is_host (c->device) && !tw_memory_check (p->arena_bytes, what, error))
    {
      tw_program_free (p);
      return NULL;
    }
  r = runnable_new (c, p);
  if (r == NULL)
    {
      g_autofree char *b = tw_format_bytes (p->arena_bytes);
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_KERNEL,
                   "out of memory allocating the %zu-byte arena (%s)", p->arena_bytes, b);
      tw_program_free (p);
      return NULL;
    }
  if (!resolve_kernels (c, r, error))
    {
      runnable_free (r);
      return NULL;
    }
  gboolean first = g_hash_table_size (c->cache) == 0;
  const char *why = c->rebuild_reason ? c->rebuild_reason
                    : first           ? "first use"
                                      : "a new input shape";
  c->rebuild_reason = NULL;
  g_ptr_array_add (c->notes,
                   g_strdup_printf ("%s program, batch %" G_GINT64_FORMAT ": compiled in %.2f ms (%s)",
                                    kind == TW_PROGRAM_TRAIN || kind == TW_PROGRAM_STEP ? "training"
                                    : kind == TW_PROGRAM_EVAL ? "evaluation" : "inference", batch,
                                    (g_get_monotonic_time () - t0) / 1000.0, why));
  gint64 *k = g_new (gint64, 1);
  *k = key;
  g_hash_table_insert (c->cache, k, r);
  return r;
}

tw_program *
tw_compiled_program (tw_compiled *c, tw_program_kind kind, int64_t batch, GError **error)
{
  runnable *r = get_runnable (c, kind, batch, error);
  return r ? r->prog : NULL;
}

static gboolean
publish (tw_compiled *c, const tw_event *ev, GError **error)
{
  if (tw_bus_publish (c->bus, ev))
    return TRUE;
  /* Once a parameter has been updated the step is finished first. */
  if (c->updating)
    {
      c->stop_pending = TRUE;
      return TRUE;
    }
  if (ev->kind == TW_EV_GRAD_READY)
    g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_STOPPED, "stopped at the gradient of %s",
                 ev->param->name);
  else
    g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_STOPPED, "stopped at node %s (%s)",
                 ev->ident->n_nodes ? ev->ident->nodes[0] : "?", ev->ident->label);
  return FALSE;
}

static const tw_event_kind phase_kind[] = { TW_EV_FORWARD, TW_EV_BACKWARD, TW_EV_UPDATE };

/* grad_ready for each parameter in ready (its gradient is the program's;
 * ins: the fused gradient+update that consumed it, or NULL). */
static gboolean
publish_ready (tw_compiled *c, runnable *r, GPtrArray *ready, const tw_instr *ins, guint64 step,
               GError **error)
{
  for (guint k = 0; ready && k < ready->len; k++)
    {
      tw_param *pp = g_ptr_array_index (ready, k);
      gpointer v = g_hash_table_lookup (r->prog->grad_slot, pp->name);
      int gs = v ? GPOINTER_TO_INT (v) - 1 : -1;
      tw_slot *sl = gs >= 0 ? tw_program_slot (r->prog, gs) : NULL;
      gboolean exists = sl && (sl->producer >= 0 || sl->offset >= 0);
      gint64 t = tw_now_ns ();
      tw_event ev = { .kind = TW_EV_GRAD_READY, .end = TRUE, .compiled = TRUE, .step = step,
                      .t_start = t, .t_end = t, .param = pp,
                      .grad = exists ? r->t[gs] : NULL, .grad_norm = NAN };
      /* Accumulated into the store: the sum so far is what is final. */
      if (r->prog->n_accumulates > 0)
        ev.grad = pp->grad;
      if (ev.grad == NULL && ins)
        ev.grad_norm = sqrt (tw_fused_update_grad_sq (ins));
      if (!publish (c, &ev, error))
        return FALSE;
    }
  return TRUE;
}

gboolean
tw_compiled_run (tw_compiled *c, tw_program_kind kind, tw_tensor *x, tw_tensor *labels,
                 guint64 step, GError **error)
{
  tw_node *data_src = tw_graph_find_source (c->graph, "data");
  tw_node *label_src = tw_graph_find_source (c->graph, "label");
  tw_feed feeds[2];
  int n_feeds = 0;
  if (data_src && x)
    feeds[n_feeds++] = (tw_feed) { data_src->id, x };
  if (label_src && labels)
    feeds[n_feeds++] = (tw_feed) { label_src->id, labels };
  return tw_compiled_run_feeds (c, kind, feeds, n_feeds, step, error);
}

/* The program for the feeds' batch with every DATA and LABEL slot bound
 * (c->last), or NULL. */
static runnable *
bind_feeds (tw_compiled *c, tw_program_kind kind, const tw_feed *feeds, int n_feeds,
            GError **error)
{
  /* The batch: the leading size of the first fed input that has a batch
   * dimension (1 when every input is of fixed size). */
  int64_t batch = 1;
  for (int i = 0; i < n_feeds; i++)
    {
      tw_node *n = tw_graph_find (c->graph, feeds[i].input);
      if (n == NULL || n->op == NULL || !(n->op->flags & TW_OP_SOURCE))
        {
          g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT,
                       "'%s' was fed, but the graph has no input of that name", feeds[i].input);
          return NULL;
        }
    }
  for (int i = 0; i < n_feeds; i++)
    {
      tw_node *n = tw_graph_find (c->graph, feeds[i].input);
      if (n->n_outputs > 0 && n->out_info[0].ndim > 0 && n->out_info[0].dims[0] == TW_DIM_N
          && feeds[i].tensor->ndim > 0)
        {
          batch = feeds[i].tensor->shape[0];
          break;
        }
    }
  runnable *r = get_runnable (c, kind, batch, error);
  if (r == NULL)
    return NULL;
  tw_program *p = r->prog;
  c->last = r;
  r->fwd_pending = FALSE;

  for (guint si = 0; si < p->slots->len; si++)
    {
      tw_slot *sl = tw_program_slot (p, (int) si);
      if (sl->kind != TW_SLOT_DATA && sl->kind != TW_SLOT_LABEL)
        continue;
      tw_tensor *t = NULL;
      for (int i = 0; i < n_feeds && t == NULL; i++)
        if (g_strcmp0 (feeds[i].input, sl->name) == 0)
          t = feeds[i].tensor;
      if (t == NULL)
        {
          g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT, "input '%s'%s was not fed",
                       sl->name, sl->kind == TW_SLOT_LABEL ? " (labels)" : "");
          return NULL;
        }
      if (!tw_check_feed (sl->name, &sl->info, t, error))
        return NULL;
      g_clear_pointer (&r->t[si], tw_tensor_unref);
      r->t[si] = tw_tensor_contiguous (t);
    }
  bind_views (r);
  return r;
}

/* Instructions [from, to) of r's program. */
static gboolean
run_range (tw_compiled *c, runnable *r, tw_program_kind kind, int from, int to, guint64 step,
           GError **error)
{
  tw_program *p = r->prog;

  if (kind == TW_PROGRAM_STEP && p->n_updates > 0 && c->update.opt == NULL)
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT,
                   "a training step needs an optimizer (tw_compiled_set_optimizer)");
      return FALSE;
    }
  tw_kctx kc = { .seed = c->seed, .step = step, .num_threads = c->num_threads,
                 .exec_data = &c->update, .ws = c->ws, .device = c->device };
  c->updating = FALSE;
  c->update.grad_norms = c->grad_norms && tw_bus_wants (c->bus, TW_EV_GRAD_READY);
  tw_tensor *in[TW_MAX_INPUTS + TW_MAX_PARAMS], *out[TW_MAX_OUTPUTS];
  for (int i = from; i < to; i++)
    {
      tw_instr *ins = tw_program_instr (p, i);
      /* A view sharing its input's buffer has nothing to do. */
      if (ins->op && (ins->op->flags & TW_OP_VIEW) && ins->n_out == 1
          && tw_program_alias_root (p, ins->out[0]) == tw_program_alias_root (p, ins->in[0]))
        continue;
      for (int k = 0; k < ins->n_in; k++)
        in[k] = r->t[ins->in[k]];
      for (int k = 0; k < ins->n_out; k++)
        out[k] = r->t[ins->out[k]];
      kc.training = ins->training;
      kc.node_key = ins->node_key;

      tw_event ev = { .kind = phase_kind[ins->phase], .compiled = TRUE, .ident = &r->ident[i],
                      .step = step, .inputs = in, .n_inputs = ins->n_in };
      gboolean listen = tw_bus_wants (c->bus, ev.kind);
      if (listen)
        {
          if (ins->param)
            ev.param = tw_params_get (c->params, ins->param);
          ev.t_start = tw_now_ns ();
          if (!publish (c, &ev, error))
            return FALSE;
        }
      /* The inputs as the kernel reads them, for a client that looks at
       * them when it ends. */
      tw_tensor *kept[TW_MAX_INPUTS + TW_MAX_PARAMS], *end_in[TW_MAX_INPUTS + TW_MAX_PARAMS];
      gboolean keep = listen && r->overwrites[i] && tw_bus_wants_inputs_at_end (c->bus);
      if (keep)
        {
          keep_overwritten (r, ins, r->overwrites[i], in, kept, end_in);
          ev.inputs = end_in;
        }
      g_autoptr (GError) local = NULL;
      c->updating |= ins->phase == TW_PHASE_UPDATE;
      tw_workspace *prev_ws = tw_workspace_enter (&kc);
      gboolean ok = r->fused[i] ? r->fused[i] (&kc, ins, in, out, &local)
                                : r->fwd[i] (&kc, ins->attrs, in, ins->n_in, out, &local);
      tw_workspace_leave (prev_ws);
      if (!ok)
        {
          g_autofree char *src = NULL;
          GString *s = g_string_new (NULL);
          for (guint k = 0; k < ins->sources->len; k++)
            g_string_append_printf (s, "%s%s", k ? ", " : "", (char *) g_ptr_array_index (ins->sources, k));
          src = g_string_free (s, FALSE);
          g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_KERNEL, "node %s (%s%s): %s", src,
                       ins->label, ins->phase == TW_PHASE_BACKWARD ? ", backward" : "",
                       local ? local->message : "failed");
          for (int k = 0; keep && k < ins->n_in; k++)
            g_clear_pointer (&kept[k], tw_tensor_unref);
          return FALSE;
        }
      if (listen)
        {
          ev.end = TRUE;
          ev.t_end = tw_now_ns ();
          ev.outputs = out;
          ev.n_outputs = ins->n_out;
          /* A fused gradient+update: its gradient was final inside it. */
          gboolean published =
            !(ins->param && r->ready[i]) || publish_ready (c, r, r->ready[i], ins, step, error);
          published = published && publish (c, &ev, error);
          for (int k = 0; keep && k < ins->n_in; k++)
            g_clear_pointer (&kept[k], tw_tensor_unref);
          if (!published)
            return FALSE;
        }
      if (r->ready[i] && ins->param == NULL && tw_bus_wants (c->bus, TW_EV_GRAD_READY)
          && !publish_ready (c, r, r->ready[i], NULL, step, error))
        return FALSE;
      /* Stop before backward (and any update) when the loss is not finite. */
      if (ins->n_out > 0 && ins->out[0] == p->loss_slot && kind != TW_PROGRAM_INFER
          && !c->allow_nan)
        {
          g_autoptr (tw_tensor) lh = tw_tensor_to_host (out[0]);
          double l = tw_tensor_get_flat (lh, 0);
          if (!isfinite (l) && ins->training)
            {
              g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_NAN,
                           "the loss became %s at step %" G_GUINT64_FORMAT
                           " (lower the learning rate, or pass --allow-nan to go on)",
                           isnan (l) ? "NaN" : "infinite", step + 1);
              return FALSE;
            }
        }
    }
  return TRUE;
}

/* grad_ready for the trainable parameters the program gives no gradient,
 * at the end of a training run. */
static gboolean
publish_ready_last (tw_compiled *c, runnable *r, tw_program_kind kind, guint64 step,
                    GError **error)
{
  return kind == TW_PROGRAM_INFER || kind == TW_PROGRAM_EVAL
         || !tw_bus_wants (c->bus, TW_EV_GRAD_READY)
         || publish_ready (c, r, r->ready_last, NULL, step, error);
}

gboolean
tw_compiled_run_feeds (tw_compiled *c, tw_program_kind kind, const tw_feed *feeds, int n_feeds,
                       guint64 step, GError **error)
{
  runnable *r = bind_feeds (c, kind, feeds, n_feeds, error);
  if (r == NULL)
    return FALSE;
  if (g_hash_table_size (r->prog->seed_slot) > 0)
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT,
                   "this training program starts from fed gradients: run it with "
                   "tw_compiled_forward_feeds and tw_compiled_backward_from");
      return FALSE;
    }
  c->update.grads_set = TRUE;
  return run_range (c, r, kind, 0, (int) r->prog->instrs->len, step, error)
         && publish_ready_last (c, r, kind, step, error);
}

gboolean
tw_compiled_forward_feeds (tw_compiled *c, const tw_feed *feeds, int n_feeds, guint64 step,
                           GError **error)
{
  runnable *r = bind_feeds (c, TW_PROGRAM_TRAIN, feeds, n_feeds, error);
  if (r == NULL)
    return FALSE;
  if (r->bwd_start < 0)
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH,
                   "the training program computes an output or its loss after its first "
                   "backward instruction: its forward cannot run apart");
      return FALSE;
    }
  if (!run_range (c, r, TW_PROGRAM_TRAIN, 0, r->bwd_start, step, error))
    return FALSE;
  r->fwd_pending = TRUE;
  r->fwd_step = step;
  return TRUE;
}

gboolean
tw_compiled_backward_from (tw_compiled *c, const tw_feed *out_grads, int n, gboolean set,
                           GError **error)
{
  runnable *r = c->last;
  if (r == NULL || !r->fwd_pending)
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT,
                   "backward needs a forward of the training program first "
                   "(tw_compiled_forward_feeds)");
      return FALSE;
    }
  tw_program *p = r->prog;
  for (int i = 0; i < n; i++)
    if (!g_hash_table_contains (p->seed_slot, out_grads[i].input))
      {
        g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT,
                     "backward from '%s': the program's gradients start from %s only",
                     out_grads[i].input, g_hash_table_size (p->seed_slot) ? "its seeds"
                                                                         : "the loss");
        return FALSE;
      }
  GHashTableIter it;
  gpointer ref, slot1;
  g_hash_table_iter_init (&it, p->seed_slot);
  while (g_hash_table_iter_next (&it, &ref, &slot1))
    {
      int si = GPOINTER_TO_INT (slot1) - 1;
      tw_slot *sl = tw_program_slot (p, si);
      int64_t want = tw_tinfo_numel (&sl->info, NULL);
      g_autoptr (tw_tensor) sum = NULL;
      for (int i = 0; i < n; i++)
        {
          if (strcmp (out_grads[i].input, ref) != 0)
            continue;
          tw_tensor *t = out_grads[i].tensor;
          if (t->dtype != sl->info.dtype || tw_tensor_numel (t) != want)
            {
              g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT,
                           "backward from '%s': a gradient of %" G_GINT64_FORMAT
                           " %s elements was given, the value has %" G_GINT64_FORMAT " %s",
                           (const char *) ref, tw_tensor_numel (t), tw_dtype_name (t->dtype),
                           want, tw_dtype_name (sl->info.dtype));
              return FALSE;
            }
          /* The slot's shape over t's elements (a view where t is
           * contiguous); a value named twice: the sum, in a copy. */
          g_autoptr (tw_tensor) v = tw_tensor_reshape (t, sl->info.ndim, sl->info.dims);
          if (sum == NULL)
            sum = g_steal_pointer (&v);
          else
            {
              if (sum->storage == t->storage || sum->storage->refcount > 1)
                {
                  tw_tensor *own = tw_tensor_clone (sum);
                  tw_tensor_unref (sum);
                  sum = own;
                }
              for (int64_t e = 0; e < want; e++)
                tw_tensor_set_flat (sum, e, tw_tensor_get_flat (sum, e) + tw_tensor_get_flat (v, e));
            }
        }
      if (sum == NULL)
        {
          g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT,
                       "backward: no gradient was given for '%s'", (const char *) ref);
          return FALSE;
        }
      g_clear_pointer (&r->t[si], tw_tensor_unref);
      r->t[si] = g_steal_pointer (&sum);
    }
  bind_views (r);
  r->fwd_pending = FALSE;
  c->update.grads_set = set;
  return run_range (c, r, TW_PROGRAM_TRAIN, r->bwd_start, (int) p->instrs->len, r->fwd_step,
                    error)
         && publish_ready_last (c, r, TW_PROGRAM_TRAIN, r->fwd_step, error);
}

tw_tensor *
tw_compiled_input_grad (tw_compiled *c, const char *input_id)
{
  if (c->last == NULL || c->last->fwd_pending)
    return NULL;
  gpointer v = g_hash_table_lookup (c->last->prog->input_grad_slot, input_id);
  return v ? c->last->t[GPOINTER_TO_INT (v) - 1] : NULL;
}

tw_tensor *
tw_compiled_output (tw_compiled *c, const char *ref)
{
  if (c->last == NULL)
    return NULL;
  tw_program *p = c->last->prog;
  const char *const *outs = tw_graph_outputs (p->graph);
  for (guint k = 0; outs && outs[k] && k < p->output_slots->len; k++)
    if (strcmp (outs[k], ref) == 0)
      return c->last->t[g_array_index (p->output_slots, int, k)];
  return NULL;
}

tw_tensor *
tw_compiled_loss (tw_compiled *c)
{
  if (c->last == NULL || c->last->prog->loss_slot < 0)
    return NULL;
  return c->last->t[c->last->prog->loss_slot];
}

double
tw_compiled_loss_value (tw_compiled *c)
{
  tw_tensor *l = tw_compiled_loss (c);
  if (l == NULL)
    return NAN;
  g_autoptr (tw_tensor) h = tw_tensor_to_host (l);
  return tw_tensor_get_flat (h, 0);
}

tw_tensor *
tw_compiled_prediction (tw_compiled *c)
{
  if (c->last == NULL || c->last->prog->pred_slot < 0)
    return NULL;
  return c->last->t[c->last->prog->pred_slot];
}

void
tw_compiled_bind_grads (tw_compiled *c)
{
  if (c->last == NULL)
    return;
  tw_program *p = c->last->prog;
  g_return_if_fail (p->n_accumulates == 0);
  for (int i = 0; i < tw_params_count (c->params); i++)
    {
      tw_param *pp = tw_params_at (c->params, i);
      if (!pp->trainable)
        continue;
      gpointer v = g_hash_table_lookup (p->grad_slot, pp->name);
      if (v)
        {
          tw_tensor *g = c->last->t[GPOINTER_TO_INT (v) - 1];
          if (pp->grad != g)
            {
              tw_tensor_unref (pp->grad);
              pp->grad = tw_tensor_ref (g);
            }
        }
      else if (pp->grad)
        {
          /* Not reached by the loss: a zero gradient of its own. */
          if (pp->grad->storage->owns_data == FALSE)
            {
              tw_tensor_unref (pp->grad);
              pp->grad = tw_tensor_zeros_like (pp->value);
            }
          else
            tw_tensor_fill (pp->grad, 0);
        }
    }
}

gboolean
tw_compiled_check_guards (tw_compiled *c, GError **error)
{
  GHashTableIter it;
  gpointer val;
  g_hash_table_iter_init (&it, c->cache);
  while (g_hash_table_iter_next (&it, NULL, &val))
    {
      runnable *r = val;
      tw_program *p = r->prog;
      if (!p->guards)
        continue;
      /* Every byte not inside a slot's extent must still hold the pattern. */
      g_autofree guint8 *used = g_new0 (guint8, p->arena_bytes);
      for (guint s = 0; s < p->slots->len; s++)
        {
          tw_slot *sl = tw_program_slot (p, (int) s);
          if (sl->kind != TW_SLOT_ACT || sl->offset < 0)
            continue;
          size_t n = tw_slot_bytes (sl);
          memset (used + sl->offset, 1, n);
        }
      for (size_t b = 0; b < p->arena_bytes; b++)
        if (!used[b] && r->arena[b] != GUARD_BYTE)
          {
            g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_KERNEL,
                         "arena byte %zu (outside every slot) was overwritten", b);
            return FALSE;
          }
    }
  return TRUE;
}
