/* op.c — the op registry, attribute resolution, eager op runs and the eager
 * emitter used by backward rules. */
#define G_LOG_DOMAIN "twb-op"

#include "engine/op.h"
#include "engine/emit.h"
#include "engine/kernels.h"
#include "engine/memory.h"
#include "engine/workspace-private.h"

#include <cblas.h>
#include <string.h>

G_DEFINE_QUARK (tw-op-error-quark, tw_op_error)

/* ---- tinfo ------------------------------------------------------------ */

void
tw_tinfo_set (tw_tinfo *t, tw_dtype dtype, int ndim, const int64_t *dims)
{
  memset (t, 0, sizeof *t);
  t->dtype = dtype;
  t->ndim = ndim;
  for (int i = 0; i < ndim; i++)
    t->dims[i] = dims[i];
}

void
tw_tinfo_from_tensor (tw_tinfo *t, const tw_tensor *x)
{
  tw_tinfo_set (t, x->dtype, x->ndim, x->shape);
}

gboolean
tw_tinfo_equal (const tw_tinfo *a, const tw_tinfo *b)
{
  if (a->dtype != b->dtype || a->ndim != b->ndim)
    return FALSE;
  for (int i = 0; i < a->ndim; i++)
    if (a->dims[i] != b->dims[i])
      return FALSE;
  return TRUE;
}

char *
tw_tinfo_to_string (const tw_tinfo *t)
{
  g_autofree char *s = tw_shape_to_string (t->ndim, t->dims);
  return g_strdup_printf ("%s%s", tw_dtype_name (t->dtype), s);
}

int64_t
tw_tinfo_numel (const tw_tinfo *t, gboolean *symbolic)
{
  int64_t n = 1;
  gboolean sym = FALSE;
  for (int i = 0; i < t->ndim; i++)
    {
      if (t->dims[i] == TW_DIM_N)
        sym = TRUE;
      else if (n != 0 && !tw_size_mul (n, MAX (t->dims[i], 0), &n))
        n = G_MAXINT64;   /* saturated: refused by tw_tinfo_nbytes where it matters */
    }
  if (symbolic)
    *symbolic = sym;
  return n;
}

gboolean
tw_tinfo_nbytes (const tw_tinfo *t, int64_t batch, size_t *nbytes)
{
  int64_t dims[TW_MAX_DIMS];
  if (t->ndim < 0 || t->ndim > TW_MAX_DIMS)
    return FALSE;
  for (int d = 0; d < t->ndim; d++)
    dims[d] = t->dims[d] == TW_DIM_N ? MAX (batch, 1) : t->dims[d];
  return tw_shape_nbytes_checked (t->dtype, t->ndim, dims, nbytes);
}

/* ---- registry ---------------------------------------------------------- */

static GHashTable *registry;            /* name → const tw_op_def * */
static GPtrArray *sorted_ops;

static int
compare_defs (gconstpointer a, gconstpointer b)
{
  const tw_op_def *da = *(const tw_op_def *const *) a;
  const tw_op_def *db = *(const tw_op_def *const *) b;
  return strcmp (da->name, db->name);
}

void
tw_op_register (const tw_op_def *def)
{
  g_assert (registry != NULL);
  if (g_hash_table_contains (registry, def->name))
    g_error ("op %s registered twice", def->name);
  g_hash_table_insert (registry, (gpointer) def->name, (gpointer) def);
  if (sorted_ops)
    {
      /* Registered after tw_ops_init: the list shows it too. */
      g_ptr_array_add (sorted_ops, (gpointer) def);
      g_ptr_array_sort (sorted_ops, compare_defs);
    }
  if (def->forward)
    {
      /* The definition's forward is the op's CPU kernel (lives as long as
       * the registry: never freed). */
      tw_kernel *k = g_new0 (tw_kernel, 1);
      k->op = def->name;
      k->device = TW_DEVICE_CPU;
      k->name = def->name;
      k->forward = def->forward;
      tw_kernel_register (k);
    }
}


void
tw_ops_init (void)
{
  static gsize once = 0;
  if (g_once_init_enter (&once))
    {
      /* OpenBLAS runs single-threaded under the engine, which splits large
       * products over its own OpenMP team (engine/cpu/blas.h). */
      openblas_set_num_threads (1);
      registry = g_hash_table_new (g_str_hash, g_str_equal);
      tw_ops_register_source ();
      tw_ops_register_constant ();
      tw_ops_register_elementwise ();
      tw_ops_register_reduce ();
      tw_ops_register_shape ();
      tw_ops_register_nn ();
      tw_ops_register_conv ();
      tw_ops_register_norm ();
      tw_ops_register_loss ();
      tw_ops_register_act_extra ();
      tw_ops_register_pad ();
      tw_ops_register_resize ();
      tw_ops_register_shape_extra ();
      tw_ops_register_select ();
      tw_ops_register_elementwise_more ();
      tw_ops_register_logic ();
      tw_ops_register_reduce_more ();
      tw_ops_register_index_more ();
      tw_ops_register_loss_more ();
      tw_fused_ops_register ();
      sorted_ops = g_ptr_array_new ();
      GHashTableIter it;
      gpointer v;
      g_hash_table_iter_init (&it, registry);
      while (g_hash_table_iter_next (&it, NULL, &v))
        g_ptr_array_add (sorted_ops, v);
      g_ptr_array_sort (sorted_ops, compare_defs);
      g_once_init_leave (&once, 1);
    }
}

const tw_op_def *
tw_op_lookup (const char *name)
{
  tw_ops_init ();
  return name ? g_hash_table_lookup (registry, name) : NULL;
}

const tw_op_def *const *
tw_op_list (int *n)
{
  tw_ops_init ();
  *n = (int) sorted_ops->len;
  return (const tw_op_def *const *) sorted_ops->pdata;
}

int
tw_op_num_outputs (const tw_op_def *def, const tw_attrs *a)
{
  if (def->n_outputs > 0)
    return def->n_outputs;
  return def->num_outputs ? def->num_outputs (a) : 1;
}

static gboolean
attr_type_compatible (tw_attr_type want, tw_attr_type got)
{
  /* A single integer stands for a one-element list ("kernel_size": 5). */
  return want == got || (want == TW_ATTR_FLOAT && got == TW_ATTR_INT)
         || (want == TW_ATTR_FLOATS && got == TW_ATTR_INTS)
         || (want == TW_ATTR_INTS && got == TW_ATTR_INT);
}

tw_attrs *
tw_op_resolve_attrs (const tw_op_def *def, const tw_attrs *a, GError **error)
{
  g_autoptr (GError) local = NULL;
  tw_attrs *out = tw_attrs_copy (a);

  for (int i = 0; a && i < tw_attrs_count (a); i++)
    {
      const char *name = tw_attrs_name_at (a, i);
      const tw_attr_spec *spec = NULL;
      for (const tw_attr_spec *s = def->attrs; s && s->name; s++)
        if (strcmp (s->name, name) == 0)
          spec = s;
      /* Every node's pipeline stage (train.h, tw_pipeline_assign_stages). */
      if (spec == NULL && strcmp (name, "stage") == 0)
        continue;
      if (spec == NULL)
        {
          g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR, "%s has no attribute '%s'",
                       def->name, name);
          tw_attrs_free (out);
          return NULL;
        }
      const tw_attr_value *v = tw_attrs_lookup (a, name);
      if (!attr_type_compatible (spec->type, v->type))
        {
          g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                       "%s: attribute '%s' must be %s, got %s", def->name, name,
                       tw_attr_type_name (spec->type), tw_attr_type_name (v->type));
          tw_attrs_free (out);
          return NULL;
        }
      if (spec->choices && v->type == TW_ATTR_STRING)
        {
          gboolean ok = FALSE;
          for (const char *const *c = spec->choices; *c; c++)
            ok |= strcmp (*c, v->s) == 0;
          if (!ok)
            {
              g_autofree char *list = g_strjoinv (", ", (char **) spec->choices);
              g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                           "%s: attribute '%s' is \"%s\"; expected one of %s", def->name, name,
                           v->s, list);
              tw_attrs_free (out);
              return NULL;
            }
        }
    }

  for (const tw_attr_spec *s = def->attrs; s && s->name; s++)
    {
      if (tw_attrs_has (out, s->name))
        continue;
      if (s->required)
        {
          g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR, "%s needs attribute '%s'",
                       def->name, s->name);
          tw_attrs_free (out);
          return NULL;
        }
      if (s->default_value)
        {
          tw_attr_value v;
          if (!tw_attr_value_parse (s->type, s->default_value, &v, &local))
            g_error ("op %s: bad default for %s: %s", def->name, s->name, local->message);
          tw_attrs_set (out, s->name, &v);
          tw_attr_value_clear (&v);
        }
    }
  return out;
}

gboolean
tw_op_forward (const tw_op_def *def, const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in,
               int n_in, tw_tensor *const *out, GError **error)
{
  const tw_device *dev = ctx && ctx->device ? ctx->device : tw_device_cpu ();
  const tw_kernel *k = tw_kernel_find (def->name, dev, a, in, n_in);
  if (k == NULL)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_UNSUPPORTED, "%s has no %s kernel%s",
                   def->name, tw_device_name (dev),
                   tw_kernels_for (def->name) ? " for these inputs" : "");
      return FALSE;
    }
  tw_workspace *prev = tw_workspace_enter (ctx);
  gboolean ok = k->forward (ctx, a, in, n_in, out, error);
  tw_workspace_leave (prev);
  return ok;
}

gboolean
tw_op_run (const tw_op_def *def, const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in,
           int n_in, tw_tensor **out, GError **error)
{
  tw_tinfo info_in[TW_MAX_INPUTS + TW_MAX_PARAMS];
  tw_tinfo info_out[TW_MAX_OUTPUTS];
  tw_tensor *cin[TW_MAX_INPUTS + TW_MAX_PARAMS];
  int n_out = tw_op_num_outputs (def, a);
  gboolean ok;

  g_assert (n_in <= TW_MAX_INPUTS + TW_MAX_PARAMS && n_out <= TW_MAX_OUTPUTS);
  if (def->forward == NULL)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_UNSUPPORTED, "%s has no CPU kernel",
                   def->name);
      return FALSE;
    }
  for (int i = 0; i < n_in; i++)
    tw_tinfo_from_tensor (&info_in[i], in[i]);
  memset (info_out, 0, sizeof info_out);
  if (!def->infer (a, info_in, n_in, info_out, error))
    return FALSE;
  for (int k = 0; k < n_out; k++)
    {
      out[k] = tw_tensor_try_new_on (ctx && ctx->device ? ctx->device : tw_device_cpu (),
                                     info_out[k].dtype, info_out[k].ndim, info_out[k].dims);
      if (out[k] == NULL)
        {
          g_autofree char *s = tw_tinfo_to_string (&info_out[k]);
          size_t nbytes = 0;
          g_autofree char *b = tw_tinfo_nbytes (&info_out[k], 1, &nbytes)
                                 ? tw_format_bytes (nbytes) : g_strdup ("more than 2^63 bytes");
          g_autofree char *have = tw_format_bytes (tw_memory_available ());
          g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_UNSUPPORTED,
                       "out of memory allocating output %d (%s, %s; %s available)", k, s, b,
                       have);
          for (int j = 0; j < k; j++)
            g_clear_pointer (&out[j], tw_tensor_unref);
          return FALSE;
        }
    }
  for (int i = 0; i < n_in; i++)
    cin[i] = tw_tensor_contiguous (in[i]);
  ok = tw_op_forward (def, ctx, a, cin, n_in, out, error);
  for (int i = 0; i < n_in; i++)
    tw_tensor_unref (cin[i]);
  if (!ok)
    for (int k = 0; k < n_out; k++)
      g_clear_pointer (&out[k], tw_tensor_unref);
  return ok;
}

/* ---- infer / cost helpers --------------------------------------------- */

gboolean
tw_zero_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
                  tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  for (int i = 0; i < n_in; i++)
    if (needs[i])
      gin[i] = tw_emit1 (e, "zeros_like", NULL, in[i]);
  return TRUE;
}

gboolean
tw_infer_same_as_input0 (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                         GError **error)
{
  out[0] = in[0];
  return TRUE;
}

gboolean
tw_infer_broadcast (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                    GError **error)
{
  tw_tinfo r = in[0];
  for (int k = 1; k < n_in; k++)
    {
      const tw_tinfo *b = &in[k];
      int n = MAX (r.ndim, b->ndim);
      tw_tinfo t = r;
      t.ndim = n;
      for (int i = 0; i < n; i++)
        {
          int64_t da = i < n - r.ndim ? 1 : r.dims[i - (n - r.ndim)];
          int64_t db = i < n - b->ndim ? 1 : b->dims[i - (n - b->ndim)];
          if (da == db || db == 1)
            t.dims[i] = da;
          else if (da == 1)
            t.dims[i] = db;
          else
            {
              g_autofree char *sa = tw_shape_to_string (r.ndim, r.dims);
              g_autofree char *sb = tw_shape_to_string (b->ndim, b->dims);
              g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                           "shapes %s and %s do not broadcast", sa, sb);
              return FALSE;
            }
        }
      r = t;
    }
  out[0] = r;
  return TRUE;
}

void
tw_cost_elementwise (const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
                     double flops_per_elem, tw_cost *cost)
{
  double es = tw_dtype_size (out[0].dtype);
  double n = (double) tw_tinfo_numel (&out[0], NULL);
  cost->flops = flops_per_elem * n;
  cost->bytes_written = n * es;
  cost->bytes_read = 0;
  for (int i = 0; i < n_in; i++)
    cost->bytes_read += (double) tw_tinfo_numel (&in[i], NULL) * tw_dtype_size (in[i].dtype);
}

guint64
tw_node_key (const char *node_id)
{
  guint64 h = 0xcbf29ce484222325ull;
  for (const unsigned char *p = (const unsigned char *) node_id; p && *p; p++)
    {
      h ^= *p;
      h *= 0x100000001b3ull;
    }
  return h;
}

/* ---- emitters ----------------------------------------------------------- */

tw_val *
tw_emit_op (tw_emit *e, const char *op_name, const tw_attrs *attrs, int n_in, tw_val *const *in)
{
  tw_val *out = NULL;
  if (!tw_emit_op_multi (e, op_name, attrs, n_in, in, 1, &out))
    return NULL;
  return out;
}

gboolean
tw_emit_op_multi (tw_emit *e, const char *op_name, const tw_attrs *attrs, int n_in,
                  tw_val *const *in, int n_out, tw_val **out)
{
  GError *error = NULL;
  if (e->error)
    return FALSE;
  for (int i = 0; i < n_in; i++)
    if (in[i] == NULL)
      {
        g_set_error (&e->error, TW_OP_ERROR, TW_OP_ERROR_UNSUPPORTED,
                     "%s: input %d is missing (an earlier step failed)", op_name, i);
        return FALSE;
      }
  const tw_op_def *def = tw_op_lookup (op_name);
  if (def == NULL)
    {
      g_set_error (&e->error, TW_OP_ERROR, TW_OP_ERROR_UNKNOWN_OP,
                   "backward rule uses unknown op '%s'", op_name);
      return FALSE;
    }
  g_assert (n_out == tw_op_num_outputs (def, attrs));
  if (!e->vt->op (e, def, attrs, n_in, in, n_out, out, &error))
    {
      g_propagate_prefixed_error (&e->error, error, "%s: ", op_name);
      return FALSE;
    }
  return TRUE;
}

tw_val *
tw_emit1 (tw_emit *e, const char *op_name, const tw_attrs *attrs, tw_val *a)
{
  return tw_emit_op (e, op_name, attrs, 1, &a);
}

tw_val *
tw_emit2 (tw_emit *e, const char *op_name, const tw_attrs *attrs, tw_val *a, tw_val *b)
{
  tw_val *in[2] = { a, b };
  return tw_emit_op (e, op_name, attrs, 2, in);
}

tw_val *
tw_emit3 (tw_emit *e, const char *op_name, const tw_attrs *attrs, tw_val *a, tw_val *b,
          tw_val *c)
{
  tw_val *in[3] = { a, b, c };
  return tw_emit_op (e, op_name, attrs, 3, in);
}

const tw_tinfo *
tw_val_info (tw_emit *e, tw_val *v)
{
  return e->vt->info (e, v);
}

const tw_kctx *
tw_emit_kctx (tw_emit *e)
{
  return &e->kctx;
}

GError *
tw_emit_take_error (tw_emit *e)
{
  return g_steal_pointer (&e->error);
}

void
tw_emit_set_kctx (tw_emit *e, const tw_kctx *ctx)
{
  e->kctx = *ctx;
}

/* Eager: a tw_val is an eager_val owned by the emitter. */
typedef struct
{
  tw_tensor *t;
  tw_tinfo info;
  char *name;         /* as kernel events name it: given when wrapped, else made
                       * (tw_value_name) while a client listens for kernels; or NULL */
} eager_val;

typedef struct
{
  tw_emit base;
  GPtrArray *vals;    /* eager_val*, freed with the emitter */
  tw_bus *bus;        /* kernel events, borrowed */
  const tw_op_ident *parent;
  guint64 step;
  gboolean stopped;
} eager_emit;

/* Publishes the kernel def runs inside ee->parent. */
static gboolean
publish_kernel (eager_emit *ee, const tw_op_def *def, const tw_attrs *ra, tw_tensor *const *in,
                int n_in, tw_tensor *const *out, int n_out, gint64 t0, gint64 t1,
                const char *const *in_names, const char *const *out_names)
{
  tw_op_ident id = *ee->parent;
  id.label = def->name;
  /* The rule's own values by their names (grad:fc1, flat, fc1.weight), the
   * kernels' results by what made them (matmul(grad:fc1, fc1.weight)). */
  id.in_names = in_names;
  id.out_names = out_names;
  id.fused = FALSE;
  id.layer_end = FALSE;
  id.flops = id.bytes = 0;
  if (def->cost)
    {
      tw_tinfo ii[TW_MAX_INPUTS + TW_MAX_PARAMS], oi[TW_MAX_OUTPUTS];
      tw_cost c = { 0 };
      for (int k = 0; k < n_in; k++)
        tw_tinfo_from_tensor (&ii[k], in[k]);
      for (int k = 0; k < n_out; k++)
        tw_tinfo_from_tensor (&oi[k], out[k]);
      def->cost (ra, ii, n_in, oi, n_out, &c);
      id.flops = c.flops;
      id.bytes = c.bytes_read + c.bytes_written;
    }
  tw_event ev = { .kind = TW_EV_KERNEL, .ident = &id, .step = ee->step, .t_start = t0,
                  .inputs = in, .n_inputs = n_in };
  gboolean go_on = tw_bus_publish (ee->bus, &ev);
  ev.end = TRUE;
  ev.t_end = t1;
  ev.outputs = out;
  ev.n_outputs = n_out;
  go_on &= tw_bus_publish (ee->bus, &ev);
  return go_on;
}

static void
eager_val_free (gpointer p)
{
  eager_val *v = p;
  tw_tensor_unref (v->t);
  g_free (v->name);
  g_free (v);
}

static tw_val *
eager_wrap_steal (eager_emit *ee, tw_tensor *t)
{
  eager_val *v = g_new0 (eager_val, 1);
  v->t = t;
  tw_tinfo_from_tensor (&v->info, t);
  g_ptr_array_add (ee->vals, v);
  return (tw_val *) v;
}

static gboolean
eager_op (tw_emit *e, const tw_op_def *def, const tw_attrs *a, int n_in, tw_val *const *in,
          int n_out, tw_val **out, GError **error)
{
  eager_emit *ee = (eager_emit *) e;
  tw_tensor *tin[TW_MAX_INPUTS + TW_MAX_PARAMS];
  tw_tensor *tout[TW_MAX_OUTPUTS] = { 0 };
  tw_attrs *ra = tw_op_resolve_attrs (def, a, error);
  if (ra == NULL)
    return FALSE;
  for (int i = 0; i < n_in; i++)
    tin[i] = ((eager_val *) in[i])->t;
  gboolean listen = tw_bus_wants (ee->bus, TW_EV_KERNEL) && ee->parent;
  gint64 t0 = listen ? tw_now_ns () : 0;
  gboolean ok = tw_op_run (def, &e->kctx, ra, tin, n_in, tout, error);
  /* Names only while a client listens: a plain backward formats nothing. */
  const char *in_names[TW_MAX_INPUTS + TW_MAX_PARAMS + 1] = { 0 };
  char *out_names[TW_MAX_OUTPUTS + 1] = { 0 };
  if (ok && listen)
    {
      for (int i = 0; i < n_in; i++)
        in_names[i] = ((eager_val *) in[i])->name;
      /* Serials: where the results will sit among the rule's values. */
      for (int k = 0; k < n_out; k++)
        out_names[k] = tw_value_name (def->name, in_names, n_in, k, n_out,
                                      (int) ee->vals->len + k);
    }
  if (ok && listen
      && !publish_kernel (ee, def, ra, tin, n_in, tout, n_out, t0, tw_now_ns (), in_names,
                          (const char *const *) out_names))
    {
      for (int k = 0; k < n_out; k++)
        g_free (out_names[k]);
      ee->stopped = TRUE;
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_UNSUPPORTED, "stopped after %s", def->name);
      for (int k = 0; k < n_out; k++)
        g_clear_pointer (&tout[k], tw_tensor_unref);
      ok = FALSE;
    }
  tw_attrs_free (ra);
  if (!ok)
    return FALSE;
  for (int k = 0; k < n_out; k++)
    {
      out[k] = eager_wrap_steal (ee, tout[k]);
      ((eager_val *) out[k])->name = out_names[k];
    }
  return TRUE;
}

static const tw_tinfo *
eager_info (tw_emit *e, tw_val *v)
{
  return &((eager_val *) v)->info;
}

static const tw_emit_vtable eager_vtable = { eager_op, eager_info };

tw_emit *
tw_eager_emit_new (const tw_kctx *ctx)
{
  eager_emit *ee = g_new0 (eager_emit, 1);
  ee->base.vt = &eager_vtable;
  if (ctx)
    ee->base.kctx = *ctx;
  ee->vals = g_ptr_array_new_with_free_func (eager_val_free);
  return &ee->base;
}

void
tw_eager_emit_free (tw_emit *e)
{
  if (e == NULL)
    return;
  eager_emit *ee = (eager_emit *) e;
  g_ptr_array_unref (ee->vals);
  g_clear_error (&e->error);
  g_free (ee);
}

tw_val *
tw_eager_emit_wrap (tw_emit *e, tw_tensor *t)
{
  return eager_wrap_steal ((eager_emit *) e, tw_tensor_ref (t));
}

tw_val *
tw_eager_emit_wrap_named (tw_emit *e, tw_tensor *t, const char *name)
{
  tw_val *v = tw_eager_emit_wrap (e, t);
  ((eager_val *) v)->name = g_strdup (name);
  return v;
}

void
tw_eager_emit_set_bus (tw_emit *e, tw_bus *bus, const tw_op_ident *parent, guint64 step)
{
  eager_emit *ee = (eager_emit *) e;
  ee->bus = bus;
  ee->parent = parent;
  ee->step = step;
}

gboolean
tw_eager_emit_stopped (tw_emit *e)
{
  return ((eager_emit *) e)->stopped;
}

tw_tensor *
tw_eager_emit_tensor (tw_val *v)
{
  return ((eager_val *) v)->t;
}
