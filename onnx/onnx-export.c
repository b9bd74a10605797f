/* onnx-export.c — a twb model's inference graph as an ONNX ModelProto.
 *
 * The protobuf-c structures are built in an arena (every block this file
 * allocates is kept in ex->blocks and freed at the end); parameter data is
 * not copied: raw_data points into the store's contiguous tensors, which
 * outlive the packing. */
#include "onnx/onnx-export.h"
#include "onnx/onnx-export-private.h"

#include "engine/eager.h"
#include "engine/fileutil.h"
#include "engine/train.h"
#include "onnx/onnx-read.h"

#include <math.h>
#include <string.h>

void *
tw_ex_alloc (tw_ex_ctx *ex, gsize size)
{
  void *p = g_malloc0 (MAX (size, 1));
  g_ptr_array_add (ex->blocks, p);
  return p;
}

char *
tw_ex_strdup (tw_ex_ctx *ex, const char *s)
{
  char *p = g_strdup (s);
  g_ptr_array_add (ex->blocks, p);
  return p;
}

char *
tw_ex_printf (tw_ex_ctx *ex, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  char *p = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_ptr_array_add (ex->blocks, p);
  return p;
}

int32_t
tw_ex_onnx_dtype (tw_dtype d)
{
  switch (d)
    {
    case TW_F32: return ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    case TW_F64: return ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE;
    case TW_I32: return ONNX__TENSOR_PROTO__DATA_TYPE__INT32;
    case TW_I64: return ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    case TW_U8: return ONNX__TENSOR_PROTO__DATA_TYPE__UINT8;
    default: g_assert_not_reached ();
    }
}

/* ---- values ------------------------------------------------------------- */

/* The ONNX value of a twb port: "ID" for output 0, "ID:k" for output k,
 * then through the aliases of dropped nodes. */
static const char *
ex_port_value (tw_ex_ctx *ex, tw_port p)
{
  const tw_node *src = tw_graph_node (ex->g, p.node);
  const char *v =
    p.output == 0 ? tw_ex_strdup (ex, src->id) : tw_ex_printf (ex, "%s:%d", src->id, p.output);
  const char *a;
  while ((a = g_hash_table_lookup (ex->alias, v)) != NULL)
    v = a;
  return v;
}

const char *
tw_ex_input (tw_ex_ctx *ex, const tw_node *n, int i)
{
  return ex_port_value (ex, n->in_ports[i]);
}

const tw_tinfo *
tw_ex_input_info (tw_ex_ctx *ex, const tw_node *n, int i)
{
  const tw_node *src = tw_graph_node (ex->g, n->in_ports[i].node);
  return &src->out_info[n->in_ports[i].output];
}

const char *
tw_ex_output (tw_ex_ctx *ex, const tw_node *n, int k)
{
  return k == 0 ? tw_ex_strdup (ex, n->id) : tw_ex_printf (ex, "%s:%d", n->id, k);
}

/* ---- initializers --------------------------------------------------------- */

static Onnx__TensorProto *
ex_tensor_proto (tw_ex_ctx *ex, const char *name, tw_dtype dtype, int ndim, const int64_t *dims,
                 const void *data, gsize nbytes)
{
  Onnx__TensorProto *t = tw_ex_alloc (ex, sizeof *t);
  onnx__tensor_proto__init (t);
  t->name = tw_ex_strdup (ex, name);
  t->has_data_type = TRUE;
  t->data_type = tw_ex_onnx_dtype (dtype);
  t->n_dims = ndim;
  t->dims = tw_ex_alloc (ex, sizeof (int64_t) * MAX (ndim, 1));
  if (ndim > 0)
    memcpy (t->dims, dims, sizeof (int64_t) * ndim);
  t->has_raw_data = TRUE;
  t->raw_data.len = nbytes;
  t->raw_data.data = (uint8_t *) data;
  g_ptr_array_add (ex->inits, t);
  g_hash_table_add (ex->init_names, t->name);
  return t;
}

/* A constant the mapping needs, copied into the arena.  Returns its name. */
const char *
tw_ex_const (tw_ex_ctx *ex, const char *name, tw_dtype dtype, int ndim, const int64_t *dims,
             const void *data)
{
  int64_t numel = 1;
  for (int i = 0; i < ndim; i++)
    numel *= dims[i];
  gsize nbytes = numel * tw_dtype_size (dtype);
  void *copy = tw_ex_alloc (ex, nbytes);
  memcpy (copy, data, nbytes);
  return ex_tensor_proto (ex, name, dtype, ndim, dims, copy, nbytes)->name;
}

const char *
tw_ex_const_i64 (tw_ex_ctx *ex, const char *name, int n, const int64_t *v)
{
  int64_t dims[1] = { n };
  return tw_ex_const (ex, name, TW_I64, 1, dims, v);
}

/* A 0-d constant of dtype (x's). */
const char *
tw_ex_const_scalar (tw_ex_ctx *ex, const char *name, tw_dtype dtype, double v)
{
  union
  {
    float f;
    double d;
    int32_t i32;
    int64_t i64;
    guint8 u8;
  } u;
  switch (dtype)
    {
    case TW_F64: u.d = v; break;
    case TW_I32: u.i32 = (int32_t) v; break;
    case TW_I64: u.i64 = (int64_t) v; break;
    case TW_U8: u.u8 = (guint8) v; break;
    default: u.f = (float) v; break;
    }
  return tw_ex_const (ex, name, dtype, 0, NULL, &u);
}

/* A tensor of one value: shape dims, the dtype of x. */
static const char *
ex_const_fill (tw_ex_ctx *ex, const char *name, tw_dtype dtype, int ndim, const int64_t *dims,
               double v)
{
  int64_t numel = 1;
  for (int i = 0; i < ndim; i++)
    numel *= dims[i];
  g_autoptr (GArray) buf = g_array_sized_new (FALSE, FALSE, tw_dtype_size (dtype), numel);
  for (int64_t i = 0; i < numel; i++)
    {
      float f = (float) v;
      g_array_append_vals (buf, dtype == TW_F64 ? (const void *) &v : (const void *) &f, 1);
    }
  return tw_ex_const (ex, name, dtype, ndim, dims, buf->data);
}

/* The node's k-th parameter as an initializer (added once per name). */
static const char *
ex_param (tw_ex_ctx *ex, const tw_node *n, int k, GString *problems)
{
  g_autofree char *name = tw_node_param_name (n, k);
  if (g_hash_table_contains (ex->init_names, name))
    return tw_ex_strdup (ex, name);
  tw_param *p = ex->params ? tw_params_get (ex->params, name) : NULL;
  if (p == NULL || !tw_tensor_is_contiguous (p->value) ||
      p->value->ndim != n->params[k].info.ndim ||
      memcmp (p->value->shape, n->params[k].info.dims, sizeof (int64_t) * p->value->ndim) != 0)
    {
      g_string_append_printf (problems, "node %s (%s): no weights of the right shape for %s\n",
                              n->id, n->op_name, name);
      return tw_ex_strdup (ex, name);
    }
  /* The store keeps trainable parameters in f32; the graph's values may be
   * f64, and ONNX wants the parameters in their type. */
  tw_tensor *v = p->value;
  if (v->dtype != n->params[k].info.dtype)
    {
      v = tw_tensor_cast (v, n->params[k].info.dtype);
      g_ptr_array_add (ex->held, v);
    }
  return ex_tensor_proto (ex, name, v->dtype, v->ndim, v->shape, tw_tensor_data (v),
                          tw_tensor_nbytes (v))
    ->name;
}

/* ---- nodes ------------------------------------------------------------------ */

/* A node; inputs and outputs NULL-terminated ("" for an omitted optional input). */
Onnx__NodeProto *
tw_ex_node (tw_ex_ctx *ex, const char *op_type, const char *name, const char *const *inputs,
            const char *const *outputs)
{
  Onnx__NodeProto *n = tw_ex_alloc (ex, sizeof *n);
  onnx__node_proto__init (n);
  n->op_type = tw_ex_strdup (ex, op_type);
  n->name = tw_ex_strdup (ex, name);
  for (const char *const *s = inputs; *s; s++)
    n->n_input++;
  for (const char *const *s = outputs; *s; s++)
    n->n_output++;
  n->input = tw_ex_alloc (ex, sizeof (char *) * MAX (n->n_input, 1));
  n->output = tw_ex_alloc (ex, sizeof (char *) * n->n_output);
  for (gsize i = 0; i < n->n_input; i++)
    n->input[i] = tw_ex_strdup (ex, inputs[i]);
  for (gsize i = 0; i < n->n_output; i++)
    n->output[i] = tw_ex_strdup (ex, outputs[i]);
  n->attribute = tw_ex_alloc (ex, sizeof (Onnx__AttributeProto *) * EX_MAX_NODE_ATTRS);
  g_ptr_array_add (ex->nodes, n);
  return n;
}

/* A one-output node whose output value is named like the node. */
Onnx__NodeProto *
tw_ex_node1 (tw_ex_ctx *ex, const char *op_type, const char *name, const char *const *inputs)
{
  return tw_ex_node (ex, op_type, name, inputs, (const char *const[]){ name, NULL });
}

static Onnx__AttributeProto *
ex_attr (tw_ex_ctx *ex, Onnx__NodeProto *n, const char *name,
         Onnx__AttributeProto__AttributeType type)
{
  g_assert (n->n_attribute < EX_MAX_NODE_ATTRS);
  Onnx__AttributeProto *a = tw_ex_alloc (ex, sizeof *a);
  onnx__attribute_proto__init (a);
  a->name = tw_ex_strdup (ex, name);
  a->has_type = TRUE;
  a->type = type;
  n->attribute[n->n_attribute++] = a;
  return a;
}

void
tw_ex_attr_int (tw_ex_ctx *ex, Onnx__NodeProto *n, const char *name, int64_t v)
{
  Onnx__AttributeProto *a = ex_attr (ex, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  a->has_i = TRUE;
  a->i = v;
}

void
tw_ex_attr_float (tw_ex_ctx *ex, Onnx__NodeProto *n, const char *name, double v)
{
  Onnx__AttributeProto *a = ex_attr (ex, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
  a->has_f = TRUE;
  a->f = (float) v;
}

void
tw_ex_attr_ints (tw_ex_ctx *ex, Onnx__NodeProto *n, const char *name, int len, const int64_t *v)
{
  Onnx__AttributeProto *a = ex_attr (ex, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  a->n_ints = len;
  a->ints = tw_ex_alloc (ex, sizeof (int64_t) * MAX (len, 1));
  memcpy (a->ints, v, sizeof (int64_t) * len);
}

/* Pair attributes (kernel, stride, padding, dilation) from the resolved bag. */
static void
ex_attr_pair (tw_ex_ctx *ex, Onnx__NodeProto *o, const char *onnx_name, const tw_attrs *a,
              const char *name, int64_t fallback)
{
  int64_t v[2];
  tw_attrs_get_ints2 (a, name, v, fallback);
  tw_ex_attr_ints (ex, o, onnx_name, 2, v);
}

static void
ex_attr_pads (tw_ex_ctx *ex, Onnx__NodeProto *o, const tw_attrs *a)
{
  int64_t p[2];
  tw_attrs_get_ints2 (a, "padding", p, 0);
  tw_ex_attr_ints (ex, o, "pads", 4, (int64_t[]){ p[0], p[1], p[0], p[1] });
}

/* Reshape of value x to the output info of n (0 keeps the batch dimension,
 * -1 stands for a dimension the batch symbol is part of).  FALSE when the
 * shape needs two unknowns. */
static gboolean
ex_reshape_to (tw_ex_ctx *ex, const tw_node *n, const char *x, const tw_tinfo *in,
               const tw_tinfo *out, const char *name)
{
  int64_t shape[TW_MAX_DIMS];
  int unknown = 0;
  for (int d = 0; d < out->ndim; d++)
    {
      if (d == 0 && out->dims[0] == TW_DIM_N && in->ndim > 0 && in->dims[0] == TW_DIM_N)
        shape[d] = 0;
      else if (out->dims[d] == TW_DIM_N)
        {
          shape[d] = -1;
          unknown++;
        }
      else
        shape[d] = out->dims[d];
    }
  if (unknown > 1)
    return FALSE;
  const char *s = tw_ex_const_i64 (ex, tw_ex_printf (ex, "%s/shape", n->id), out->ndim, shape);
  tw_ex_node1 (ex, "Reshape", name, (const char *const[]){ x, s, NULL });
  return TRUE;
}

/* (x - mean) / sqrt (var + eps) over axes (keepdims), the helpers named
 * "ID/..."; returns the normalised value's name (out_name when given). */
static const char *
ex_normalise (tw_ex_ctx *ex, const tw_node *n, const char *x, tw_dtype dtype, int n_axes,
              const int64_t *axes, double eps, const char *out_name)
{
  const char *id = n->id;
  const char *mean = tw_ex_printf (ex, "%s/mean", id);
  Onnx__NodeProto *o = tw_ex_node1 (ex, "ReduceMean", mean, (const char *const[]){ x, NULL });
  tw_ex_attr_ints (ex, o, "axes", n_axes, axes);
  tw_ex_attr_int (ex, o, "keepdims", 1);
  const char *c = tw_ex_printf (ex, "%s/centered", id);
  tw_ex_node1 (ex, "Sub", c, (const char *const[]){ x, mean, NULL });
  const char *sq = tw_ex_printf (ex, "%s/squared", id);
  tw_ex_node1 (ex, "Mul", sq, (const char *const[]){ c, c, NULL });
  const char *var = tw_ex_printf (ex, "%s/var", id);
  o = tw_ex_node1 (ex, "ReduceMean", var, (const char *const[]){ sq, NULL });
  tw_ex_attr_ints (ex, o, "axes", n_axes, axes);
  tw_ex_attr_int (ex, o, "keepdims", 1);
  const char *e = tw_ex_const_scalar (ex, tw_ex_printf (ex, "%s/eps", id), dtype, eps);
  const char *ve = tw_ex_printf (ex, "%s/var_eps", id);
  tw_ex_node1 (ex, "Add", ve, (const char *const[]){ var, e, NULL });
  const char *sd = tw_ex_printf (ex, "%s/std", id);
  tw_ex_node1 (ex, "Sqrt", sd, (const char *const[]){ ve, NULL });
  const char *y = out_name ? out_name : tw_ex_printf (ex, "%s/normalised", id);
  tw_ex_node1 (ex, "Div", y, (const char *const[]){ c, sd, NULL });
  return y;
}

/* ---- one twb node ----------------------------------------------------------- */

gboolean
tw_ex_is (const tw_node *n, const char *op)
{
  return strcmp (n->op_name, op) == 0;
}

/* Element-wise and other one-to-one ops: twb name → ONNX op type. */
static const char *const ex_direct[][2] = {
  { "add", "Add" },
  { "sub", "Sub" },
  { "mul", "Mul" },
  { "div", "Div" },
  { "neg", "Neg" },
  { "sqrt", "Sqrt" },
  { "exp", "Exp" },
  { "log", "Log" },
  { "reciprocal", "Reciprocal" },
  { "relu", "Relu" },
  { "sigmoid", "Sigmoid" },
  { "tanh", "Tanh" },
  { "matmul", "MatMul" },
  { "global_avg_pool2d", "GlobalAveragePool" },
};

/* Emit n's ONNX nodes.  FALSE with a line in problems when it has no
 * ONNX form (nothing useful is emitted then; the export fails anyway). */
static gboolean
ex_emit (tw_ex_ctx *ex, const tw_node *n, GString *problems)
{
  const tw_attrs *a = n->resolved;
  const char *id = n->id;
  const tw_tinfo *xi = n->n_inputs > 0 ? tw_ex_input_info (ex, n, 0) : NULL;
  const char *x = n->n_inputs > 0 ? tw_ex_input (ex, n, 0) : NULL;
  int r = xi ? xi->ndim : 0;
  gsize before = problems->len;
  const char *p[TW_MAX_PARAMS] = { NULL };
  for (int k = 0; k < n->n_params; k++)
    p[k] = ex_param (ex, n, k, problems);
  if (problems->len != before)
    return FALSE;

  for (gsize i = 0; i < G_N_ELEMENTS (ex_direct); i++)
    if (tw_ex_is (n, ex_direct[i][0]))
      {
        const char *ins[3] = { x, n->n_inputs > 1 ? tw_ex_input (ex, n, 1) : NULL, NULL };
        tw_ex_node1 (ex, ex_direct[i][1], id, ins);
        return TRUE;
      }

  if (tw_ex_is (n, "dropout"))
    {
      /* The identity at inference: dropped, unless it is an output. */
      if (g_hash_table_contains (ex->output_values, id))
        tw_ex_node1 (ex, "Identity", id, (const char *const[]){ x, NULL });
      else
        g_hash_table_insert (ex->alias, tw_ex_strdup (ex, id), (char *) x);
      return TRUE;
    }
  if (tw_ex_is (n, "constant"))
    {
      /* Its value is an initializer already ("ID.value", f32 as the store
       * keeps it): an alias of it, or a Cast to the node's dtype. */
      tw_dtype dt = n->out_info[0].dtype;
      if (dt != TW_F32)
        {
          Onnx__NodeProto *o = tw_ex_node1 (ex, "Cast", id, (const char *const[]){ p[0], NULL });
          tw_ex_attr_int (ex, o, "to", tw_ex_onnx_dtype (dt));
        }
      else if (g_hash_table_contains (ex->output_values, id))
        tw_ex_node1 (ex, "Identity", id, (const char *const[]){ p[0], NULL });
      else
        g_hash_table_insert (ex->alias, tw_ex_strdup (ex, id), (char *) p[0]);
      return TRUE;
    }
  if (tw_ex_is (n, "linear"))
    {
      gboolean bias = tw_attrs_get_bool (a, "bias", TRUE);
      if (r == 2)
        {
          Onnx__NodeProto *o = tw_ex_node1 (
            ex, "Gemm", id, (const char *const[]){ x, p[0], bias ? p[1] : NULL, NULL });
          tw_ex_attr_int (ex, o, "transB", 1);
          return TRUE;
        }
      /* x [..., in] @ W^T [in, out] (+ b): Gemm takes matrices only. */
      const char *wt = tw_ex_printf (ex, "%s/weight_t", id);
      Onnx__NodeProto *t = tw_ex_node1 (ex, "Transpose", wt, (const char *const[]){ p[0], NULL });
      tw_ex_attr_ints (ex, t, "perm", 2, (int64_t[]){ 1, 0 });
      if (!bias)
        {
          tw_ex_node1 (ex, "MatMul", id, (const char *const[]){ x, wt, NULL });
          return TRUE;
        }
      const char *mm = tw_ex_printf (ex, "%s/matmul", id);
      tw_ex_node1 (ex, "MatMul", mm, (const char *const[]){ x, wt, NULL });
      tw_ex_node1 (ex, "Add", id, (const char *const[]){ mm, p[1], NULL });
      return TRUE;
    }
  if (tw_ex_is (n, "conv2d"))
    {
      gboolean bias = tw_attrs_get_bool (a, "bias", TRUE);
      Onnx__NodeProto *o =
        tw_ex_node1 (ex, "Conv", id, (const char *const[]){ x, p[0], bias ? p[1] : NULL, NULL });
      ex_attr_pair (ex, o, "kernel_shape", a, "kernel_size", 1);
      ex_attr_pair (ex, o, "strides", a, "stride", 1);
      ex_attr_pads (ex, o, a);
      ex_attr_pair (ex, o, "dilations", a, "dilation", 1);
      tw_ex_attr_int (ex, o, "group", tw_attrs_get_int (a, "groups", 1));
      return TRUE;
    }
  if (tw_ex_is (n, "max_pool2d") || tw_ex_is (n, "avg_pool2d"))
    {
      gboolean max = tw_ex_is (n, "max_pool2d");
      Onnx__NodeProto *o =
        tw_ex_node1 (ex, max ? "MaxPool" : "AveragePool", id, (const char *const[]){ x, NULL });
      int64_t k[2];
      tw_attrs_get_ints2 (a, "kernel_size", k, 1);
      tw_ex_attr_ints (ex, o, "kernel_shape", 2, k);
      if (tw_attrs_has (a, "stride"))
        ex_attr_pair (ex, o, "strides", a, "stride", 1);
      else
        tw_ex_attr_ints (ex, o, "strides", 2, k);
      ex_attr_pads (ex, o, a);
      if (max)
        ex_attr_pair (ex, o, "dilations", a, "dilation", 1);
      else
        tw_ex_attr_int (ex, o, "count_include_pad",
                        tw_attrs_get_bool (a, "count_include_pad", TRUE));
      return TRUE;
    }
  if (tw_ex_is (n, "batch_norm"))
    {
      gboolean affine = tw_attrs_get_bool (a, "affine", TRUE);
      gboolean track = tw_attrs_get_bool (a, "track_running_stats", TRUE);
      double eps = tw_attrs_get_float (a, "eps", 1e-5);
      int64_t C = xi->dims[1];
      const char *w = affine ? p[0] : NULL, *b = affine ? p[1] : NULL;
      if (track)
        {
          if (!affine)
            {
              w = ex_const_fill (ex, tw_ex_printf (ex, "%s/scale", id), xi->dtype, 1, &C, 1.0);
              b = ex_const_fill (ex, tw_ex_printf (ex, "%s/shift", id), xi->dtype, 1, &C, 0.0);
            }
          const char *mean = p[affine ? 2 : 0], *var = p[affine ? 3 : 1];
          Onnx__NodeProto *o = tw_ex_node1 (ex, "BatchNormalization", id,
                                            (const char *const[]){ x, w, b, mean, var, NULL });
          tw_ex_attr_float (ex, o, "epsilon", eps);
          /* ONNX's running = running * momentum + batch * (1 - momentum); PyTorch's
           * (and twb's) momentum is the batch's share. */
          tw_ex_attr_float (ex, o, "momentum", 1.0 - tw_attrs_get_float (a, "momentum", 0.1));
          return TRUE;
        }
      /* No running statistics: inference normalises with the batch's own. */
      int64_t axes[TW_MAX_DIMS];
      int na = 0;
      for (int d = 0; d < r; d++)
        if (d != 1)
          axes[na++] = d;
      if (!affine)
        {
          ex_normalise (ex, n, x, xi->dtype, na, axes, eps, id);
          return TRUE;
        }
      const char *y = ex_normalise (ex, n, x, xi->dtype, na, axes, eps, NULL);
      int64_t bshape[TW_MAX_DIMS] = { C };
      for (int d = 2; d < r; d++)
        bshape[d - 1] = 1;
      const char *bs = tw_ex_const_i64 (ex, tw_ex_printf (ex, "%s/param_shape", id), r - 1, bshape);
      const char *wr = tw_ex_printf (ex, "%s/weight_c", id),
                 *br = tw_ex_printf (ex, "%s/bias_c", id);
      tw_ex_node1 (ex, "Reshape", wr, (const char *const[]){ w, bs, NULL });
      tw_ex_node1 (ex, "Reshape", br, (const char *const[]){ b, bs, NULL });
      const char *sc = tw_ex_printf (ex, "%s/scaled", id);
      tw_ex_node1 (ex, "Mul", sc, (const char *const[]){ y, wr, NULL });
      tw_ex_node1 (ex, "Add", id, (const char *const[]){ sc, br, NULL });
      return TRUE;
    }
  if (tw_ex_is (n, "layer_norm"))
    {
      int k = (int) tw_attrs_get_int (a, "normalized_ndim", 1);
      gboolean affine = tw_attrs_get_bool (a, "elementwise_affine", TRUE);
      double eps = tw_attrs_get_float (a, "eps", 1e-5);
      if (ex->opset >= 17)
        {
          const char *w = affine ? p[0]
                                 : ex_const_fill (ex, tw_ex_printf (ex, "%s/scale", id), xi->dtype,
                                                  k, xi->dims + r - k, 1.0);
          Onnx__NodeProto *o =
            tw_ex_node1 (ex, "LayerNormalization", id,
                         (const char *const[]){ x, w, affine ? p[1] : NULL, NULL });
          tw_ex_attr_int (ex, o, "axis", -k);
          tw_ex_attr_float (ex, o, "epsilon", eps);
          return TRUE;
        }
      int64_t axes[TW_MAX_DIMS];
      for (int i = 0; i < k; i++)
        axes[i] = r - k + i;
      if (!affine)
        {
          ex_normalise (ex, n, x, xi->dtype, k, axes, eps, id);
          return TRUE;
        }
      const char *y = ex_normalise (ex, n, x, xi->dtype, k, axes, eps, NULL);
      const char *sc = tw_ex_printf (ex, "%s/scaled", id);
      tw_ex_node1 (ex, "Mul", sc, (const char *const[]){ y, p[0], NULL });
      tw_ex_node1 (ex, "Add", id, (const char *const[]){ sc, p[1], NULL });
      return TRUE;
    }
  if (tw_ex_is (n, "scale") || tw_ex_is (n, "add_scalar"))
    {
      gboolean sc = tw_ex_is (n, "scale");
      double v = tw_attrs_get_float (a, sc ? "alpha" : "value", sc ? 1.0 : 0.0);
      const char *c = tw_ex_const_scalar (
        ex, tw_ex_printf (ex, "%s/%s", id, sc ? "alpha" : "value"), xi->dtype, v);
      tw_ex_node1 (ex, sc ? "Mul" : "Add", id, (const char *const[]){ x, c, NULL });
      return TRUE;
    }
  if (tw_ex_is (n, "square"))
    {
      tw_ex_node1 (ex, "Mul", id, (const char *const[]){ x, x, NULL });
      return TRUE;
    }
  if (tw_ex_is (n, "leaky_relu"))
    {
      Onnx__NodeProto *o = tw_ex_node1 (ex, "LeakyRelu", id, (const char *const[]){ x, NULL });
      tw_ex_attr_float (ex, o, "alpha", tw_attrs_get_float (a, "negative_slope", 0.01));
      return TRUE;
    }
  if (tw_ex_is (n, "gelu"))
    {
      /* ONNX has Gelu from opset 20 only: 0.5 x (1 + erf (x / sqrt 2)), or with
       * approximate "tanh": 0.5 x (1 + tanh (sqrt (2 / pi) (x + 0.044715 x^3))). */
      tw_dtype dt = xi->dtype;
      const char *inner;
      if (g_strcmp0 (tw_attrs_get_string (a, "approximate", "none"), "tanh") == 0)
        {
          const char *x2 = tw_ex_printf (ex, "%s/x2", id), *x3 = tw_ex_printf (ex, "%s/x3", id);
          tw_ex_node1 (ex, "Mul", x2, (const char *const[]){ x, x, NULL });
          tw_ex_node1 (ex, "Mul", x3, (const char *const[]){ x2, x, NULL });
          const char *k = tw_ex_const_scalar (ex, tw_ex_printf (ex, "%s/c", id), dt, 0.044715);
          const char *kx3 = tw_ex_printf (ex, "%s/cx3", id), *s = tw_ex_printf (ex, "%s/sum", id);
          tw_ex_node1 (ex, "Mul", kx3, (const char *const[]){ x3, k, NULL });
          tw_ex_node1 (ex, "Add", s, (const char *const[]){ x, kx3, NULL });
          const char *r2pi = tw_ex_const_scalar (ex, tw_ex_printf (ex, "%s/sqrt_2_over_pi", id), dt,
                                                 sqrt (2.0 / G_PI));
          const char *arg = tw_ex_printf (ex, "%s/arg", id);
          tw_ex_node1 (ex, "Mul", arg, (const char *const[]){ s, r2pi, NULL });
          inner = tw_ex_printf (ex, "%s/tanh", id);
          tw_ex_node1 (ex, "Tanh", inner, (const char *const[]){ arg, NULL });
        }
      else
        {
          const char *rs2 =
            tw_ex_const_scalar (ex, tw_ex_printf (ex, "%s/rsqrt2", id), dt, M_SQRT1_2);
          const char *arg = tw_ex_printf (ex, "%s/arg", id);
          tw_ex_node1 (ex, "Mul", arg, (const char *const[]){ x, rs2, NULL });
          inner = tw_ex_printf (ex, "%s/erf", id);
          tw_ex_node1 (ex, "Erf", inner, (const char *const[]){ arg, NULL });
        }
      const char *one = tw_ex_const_scalar (ex, tw_ex_printf (ex, "%s/one", id), dt, 1.0);
      const char *half = tw_ex_const_scalar (ex, tw_ex_printf (ex, "%s/half", id), dt, 0.5);
      const char *op1 = tw_ex_printf (ex, "%s/one_plus", id),
                 *hx = tw_ex_printf (ex, "%s/half_x", id);
      tw_ex_node1 (ex, "Add", op1, (const char *const[]){ inner, one, NULL });
      tw_ex_node1 (ex, "Mul", hx, (const char *const[]){ x, half, NULL });
      tw_ex_node1 (ex, "Mul", id, (const char *const[]){ hx, op1, NULL });
      return TRUE;
    }
  if (tw_ex_is (n, "softmax") || tw_ex_is (n, "log_softmax"))
    {
      Onnx__NodeProto *o = tw_ex_node1 (ex, tw_ex_is (n, "softmax") ? "Softmax" : "LogSoftmax", id,
                                        (const char *const[]){ x, NULL });
      tw_ex_attr_int (ex, o, "axis", tw_attrs_get_int (a, "axis", -1));
      return TRUE;
    }
  if (tw_ex_is (n, "argmax"))
    {
      gboolean cast = n->out_info[0].dtype != TW_I64;
      const char *am = cast ? tw_ex_printf (ex, "%s/argmax", id) : id;
      Onnx__NodeProto *o = tw_ex_node1 (ex, "ArgMax", am, (const char *const[]){ x, NULL });
      tw_ex_attr_int (ex, o, "axis", tw_attrs_get_int (a, "axis", -1));
      tw_ex_attr_int (ex, o, "keepdims", tw_attrs_get_bool (a, "keepdims", FALSE));
      if (cast)
        {
          o = tw_ex_node1 (ex, "Cast", id, (const char *const[]){ am, NULL });
          tw_ex_attr_int (ex, o, "to", tw_ex_onnx_dtype (n->out_info[0].dtype));
        }
      return TRUE;
    }
  if (tw_ex_is (n, "sum") || tw_ex_is (n, "mean") || tw_ex_is (n, "max"))
    {
      int64_t axes[TW_ATTR_MAX_LIST];
      int na = tw_attrs_get_ints (a, "axes", axes, TW_ATTR_MAX_LIST);
      gboolean keep = tw_attrs_get_bool (a, "keepdim", FALSE);
      if (na == 0)
        na = -1; /* empty: every dim, as absent */
      Onnx__NodeProto *o;
      if (tw_ex_is (n, "sum"))
        {
          /* ReduceSum takes its axes as an input from opset 13. */
          const char *ax =
            na > 0 ? tw_ex_const_i64 (ex, tw_ex_printf (ex, "%s/axes", id), na, axes) : NULL;
          o = tw_ex_node1 (ex, "ReduceSum", id, (const char *const[]){ x, ax, NULL });
        }
      else
        {
          o = tw_ex_node1 (ex, tw_ex_is (n, "mean") ? "ReduceMean" : "ReduceMax", id,
                           (const char *const[]){ x, NULL });
          if (na > 0)
            tw_ex_attr_ints (ex, o, "axes", na, axes);
        }
      tw_ex_attr_int (ex, o, "keepdims", keep);
      return TRUE;
    }
  if (tw_ex_is (n, "flatten"))
    {
      int64_t s = tw_attrs_get_int (a, "start_dim", 1), e = tw_attrs_get_int (a, "end_dim", -1);
      if (s < 0)
        s += r;
      if (e < 0)
        e += r;
      if (s == 1 && e == r - 1)
        {
          Onnx__NodeProto *o = tw_ex_node1 (ex, "Flatten", id, (const char *const[]){ x, NULL });
          tw_ex_attr_int (ex, o, "axis", 1);
          return TRUE;
        }
    }
  if (tw_ex_is (n, "flatten") || tw_ex_is (n, "reshape"))
    {
      if (ex_reshape_to (ex, n, x, xi, &n->out_info[0], id))
        return TRUE;
      g_string_append_printf (problems,
                              "node %s (%s): the output shape has two dimensions that depend on "
                              "the batch size (export with a fixed batch)\n",
                              id, n->op_name);
      return FALSE;
    }
  if (tw_ex_is (n, "transpose"))
    {
      int64_t perm[TW_MAX_DIMS];
      if (tw_attrs_get_ints (a, "perm", perm, TW_MAX_DIMS) < 0)
        for (int d = 0; d < r; d++)
          perm[d] = r - 1 - d;
      Onnx__NodeProto *o = tw_ex_node1 (ex, "Transpose", id, (const char *const[]){ x, NULL });
      tw_ex_attr_ints (ex, o, "perm", r, perm);
      return TRUE;
    }
  if (tw_ex_is (n, "concat"))
    {
      const char **ins = tw_ex_alloc (ex, sizeof (char *) * (n->n_inputs + 1));
      for (int i = 0; i < n->n_inputs; i++)
        ins[i] = tw_ex_input (ex, n, i);
      Onnx__NodeProto *o = tw_ex_node1 (ex, "Concat", id, ins);
      tw_ex_attr_int (ex, o, "axis", tw_attrs_get_int (a, "axis", 1));
      return TRUE;
    }
  if (tw_ex_is (n, "split"))
    {
      int64_t sizes[TW_ATTR_MAX_LIST];
      int ns = tw_attrs_get_ints (a, "sizes", sizes, TW_ATTR_MAX_LIST);
      const char *sp = tw_ex_const_i64 (ex, tw_ex_printf (ex, "%s/split", id), ns, sizes);
      const char **outs = tw_ex_alloc (ex, sizeof (char *) * (ns + 1));
      for (int k = 0; k < ns; k++)
        outs[k] = tw_ex_output (ex, n, k);
      /* Split takes its sizes as an input from opset 13. */
      Onnx__NodeProto *o = tw_ex_node (ex, "Split", id, (const char *const[]){ x, sp, NULL }, outs);
      tw_ex_attr_int (ex, o, "axis", tw_attrs_get_int (a, "axis", 1));
      return TRUE;
    }
  if (tw_ex_is (n, "slice"))
    {
      int64_t v[4] = { tw_attrs_get_int (a, "start", 0), tw_attrs_get_int (a, "end", G_MAXINT64),
                       tw_attrs_get_int (a, "axis", 1), tw_attrs_get_int (a, "step", 1) };
      static const char *const what[4] = { "starts", "ends", "axes", "steps" };
      const char *c[4];
      for (int i = 0; i < 4; i++)
        c[i] = tw_ex_const_i64 (ex, tw_ex_printf (ex, "%s/%s", id, what[i]), 1, &v[i]);
      tw_ex_node1 (ex, "Slice", id, (const char *const[]){ x, c[0], c[1], c[2], c[3], NULL });
      return TRUE;
    }
  /* The element-wise ops of elementwise-more.c and logic.c: their ONNX op,
   * attributes of the same names (isinf's bools as ints); prelu's weight
   * [C] reshaped to [C, 1, ...] against x [N, C, ...]. */
  static const char *const ew_more[] = { "sin",         "cos",
                                         "tan",         "asin",
                                         "acos",        "atan",
                                         "sinh",        "cosh",
                                         "asinh",       "acosh",
                                         "atanh",       "round",
                                         "softplus",    "softsign",
                                         "elu",         "selu",
                                         "celu",        "thresholded_relu",
                                         "shrink",      "prelu_broadcast",
                                         "equal",       "greater",
                                         "less",        "greater_equal",
                                         "less_equal",  "logical_and",
                                         "logical_or",  "logical_xor",
                                         "logical_not", "isnan",
                                         "isinf",       "mod",
                                         NULL };
  if (g_strv_contains (ew_more, n->op_name) || tw_ex_is (n, "prelu"))
    {
      const char *ins[3] = { x, n->n_inputs > 1 ? tw_ex_input (ex, n, 1) : p[0], NULL };
      int64_t c = tw_ex_is (n, "prelu") ? tw_attrs_get_int (a, "num_parameters", 1) : 1;
      if (c > 1 && r > 2)
        {
          int64_t shape[TW_MAX_DIMS] = { c };
          for (int d = 2; d < r; d++)
            shape[d - 1] = 1;
          const char *sh =
            tw_ex_const_i64 (ex, tw_ex_printf (ex, "%s/slope_shape", id), r - 1, shape);
          ins[1] = tw_ex_printf (ex, "%s/slope", id);
          tw_ex_node1 (ex, "Reshape", ins[1], (const char *const[]){ p[0], sh, NULL });
        }
      /* twb's u8 is ONNX's bool for these: Cast to BOOL in (logic), to
       * UINT8 out (comparisons, tests, logic), as the graph's u8 values. */
      gboolean to_bool = g_str_has_prefix (n->op_name, "logical_");
      gboolean from_bool = to_bool || tw_ex_is (n, "isnan") || tw_ex_is (n, "isinf") ||
                           (n->out_info[0].dtype == TW_U8 && !tw_ex_is (n, "mod"));
      for (int i = 0; to_bool && i < n->n_inputs; i++)
        {
          const char *b = tw_ex_printf (ex, "%s/in%d_bool", id, i);
          Onnx__NodeProto *cast =
            tw_ex_node1 (ex, "Cast", b, (const char *const[]){ ins[i], NULL });
          tw_ex_attr_int (ex, cast, "to", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL);
          ins[i] = b;
        }
      const char *type = tw_ex_is (n, "prelu") ? "PRelu" : n->op->onnx_name;
      const char *oid = from_bool ? tw_ex_printf (ex, "%s/bool", id) : id;
      Onnx__NodeProto *o = tw_ex_node1 (ex, type, oid, ins);
      if (from_bool)
        {
          Onnx__NodeProto *cast = tw_ex_node1 (ex, "Cast", id, (const char *const[]){ oid, NULL });
          tw_ex_attr_int (ex, cast, "to", ONNX__TENSOR_PROTO__DATA_TYPE__UINT8);
        }
      static const char *const floats[] = { "alpha", "gamma", "bias", "lambd" };
      for (gsize i = 0; i < G_N_ELEMENTS (floats); i++)
        if (tw_attrs_has (a, floats[i]))
          tw_ex_attr_float (ex, o, floats[i], tw_attrs_get_float (a, floats[i], 0));
      if (tw_ex_is (n, "mod"))
        tw_ex_attr_int (ex, o, "fmod", tw_attrs_get_int (a, "fmod", 0));
      if (tw_ex_is (n, "isinf"))
        {
          tw_ex_attr_int (ex, o, "detect_positive", tw_attrs_get_bool (a, "detect_positive", TRUE));
          tw_ex_attr_int (ex, o, "detect_negative", tw_attrs_get_bool (a, "detect_negative", TRUE));
        }
      return TRUE;
    }
  if (tw_ex_is (n, "embedding"))
    {
      Onnx__NodeProto *o = tw_ex_node1 (ex, "Gather", id, (const char *const[]){ p[0], x, NULL });
      tw_ex_attr_int (ex, o, "axis", 0);
      return TRUE;
    }

  gboolean ok;
  if (tw_ex_emit_more (ex, n, problems, &ok))
    return ok;
  const char *why = tw_onnx_export_refusal (n->op_name);
  if (why != NULL)
    g_string_append_printf (problems, "node %s (%s): %s\n", id, n->op_name, why);
  else
    g_string_append_printf (problems, "node %s (%s): no ONNX form for this op\n", id, n->op_name);
  return FALSE;
}

/* ---- the graph -------------------------------------------------------------- */

static Onnx__ValueInfoProto *
ex_value_info (tw_ex_ctx *ex, const char *name, const tw_tinfo *t)
{
  Onnx__ValueInfoProto *vi = tw_ex_alloc (ex, sizeof *vi);
  onnx__value_info_proto__init (vi);
  vi->name = tw_ex_strdup (ex, name);
  Onnx__TypeProto *tp = tw_ex_alloc (ex, sizeof *tp);
  onnx__type_proto__init (tp);
  Onnx__TypeProto__Tensor *tt = tw_ex_alloc (ex, sizeof *tt);
  onnx__type_proto__tensor__init (tt);
  tt->has_elem_type = TRUE;
  tt->elem_type = tw_ex_onnx_dtype (t->dtype);
  Onnx__TensorShapeProto *sh = tw_ex_alloc (ex, sizeof *sh);
  onnx__tensor_shape_proto__init (sh);
  sh->n_dim = t->ndim;
  sh->dim = tw_ex_alloc (ex, sizeof (Onnx__TensorShapeProto__Dimension *) * MAX (t->ndim, 1));
  for (int d = 0; d < t->ndim; d++)
    {
      Onnx__TensorShapeProto__Dimension *dim = tw_ex_alloc (ex, sizeof *dim);
      onnx__tensor_shape_proto__dimension__init (dim);
      if (t->dims[d] == TW_DIM_N)
        {
          dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
          dim->dim_param = tw_ex_strdup (ex, "N");
        }
      else
        {
          dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
          dim->dim_value = t->dims[d];
        }
      sh->dim[d] = dim;
    }
  tt->shape = sh;
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  vi->type = tp;
  return vi;
}

/* IR version a file of this opset declares (onnx/helper.py's VERSION_TABLE:
 * opsets 13 and 14 came with IR 7, 15 to 17 with IR 8). */
static int64_t
ex_ir_version (int opset)
{
  return opset >= 15 ? 8 : 7;
}

static void
ex_ctx_clear (tw_ex_ctx *ex)
{
  g_clear_pointer (&ex->nodes, g_ptr_array_unref);
  g_clear_pointer (&ex->inits, g_ptr_array_unref);
  g_clear_pointer (&ex->blocks, g_ptr_array_unref);
  g_clear_pointer (&ex->held, g_ptr_array_unref);
  g_clear_pointer (&ex->init_names, g_hash_table_unref);
  g_clear_pointer (&ex->alias, g_hash_table_unref);
  g_clear_pointer (&ex->output_values, g_hash_table_unref);
}

static gboolean
ex_check_opset (int opset, GError **error)
{
  if (opset < TW_ONNX_EXPORT_MIN_OPSET || opset > TW_ONNX_EXPORT_MAX_OPSET)
    {
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_OPSET,
                   "opset %d is outside the %d–%d twb exports", opset, TW_ONNX_EXPORT_MIN_OPSET,
                   TW_ONNX_EXPORT_MAX_OPSET);
      return FALSE;
    }
  return TRUE;
}

GBytes *
tw_onnx_export_to_bytes (const tw_model *m, const tw_params *params,
                         const tw_onnx_export_options *opt, GError **error)
{
  int opset = opt && opt->opset ? opt->opset : TW_ONNX_EXPORT_MAX_OPSET;
  gboolean dynamic = opt && opt->dynamic_batch;
  int64_t batch = opt && opt->batch > 0 ? opt->batch : 1;
  const char *mname = m->name ? m->name : "model";

  if (!ex_check_opset (opset, error))
    return NULL;
  g_autoptr (tw_graph) g = tw_graph_copy (m->graph);
  int n_err = dynamic ? tw_graph_infer (g) : tw_graph_infer_batch (g, batch);
  GError *local = NULL;
  if (n_err == 0 && !tw_graph_check_runnable (g, &local))
    {
      g_propagate_error (error, local);
      return NULL;
    }

  int nn = tw_graph_n_nodes (g);
  g_autofree gboolean *needed = g_new0 (gboolean, nn);
  const char *const *outs = tw_graph_outputs (g);
  g_autoptr (GString) problems = g_string_new (NULL);
  for (int i = 0; outs && outs[i]; i++)
    {
      tw_port p = tw_graph_resolve (g, outs[i]);
      if (p.node < 0)
        g_string_append_printf (problems, "output %s: no such node\n", outs[i]);
      else
        tw_graph_mark_upstream (g, p.node, needed);
    }
  if (n_err > 0)
    {
      /* Only the errors of nodes the outputs need matter. */
      const GArray *diags = tw_graph_diagnostics (g);
      for (guint i = 0; i < diags->len; i++)
        {
          const tw_diag *d = &g_array_index (diags, tw_diag, i);
          int k = tw_graph_index_of (g, d->node_id);
          if (k < 0 || needed[k])
            g_string_append_printf (problems, "node %s: %s\n", d->node_id, d->message);
        }
    }
  if (problems->len > 0)
    {
      g_string_truncate (problems, problems->len - 1);
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED, "not exported:\n%s",
                   problems->str);
      return NULL;
    }
  g_autoptr (GArray) order = NULL;
  if (!tw_graph_topo_order (g, &order, error))
    return NULL;

  tw_ex_ctx ex = {
    .g = g,
    .params = params,
    .opset = opset,
    .blocks = g_ptr_array_new_with_free_func (g_free),
    .held = g_ptr_array_new_with_free_func ((GDestroyNotify) tw_tensor_unref),
    .nodes = g_ptr_array_new (),
    .inits = g_ptr_array_new (),
    .init_names = g_hash_table_new (g_str_hash, g_str_equal),
    .alias = g_hash_table_new (g_str_hash, g_str_equal),
    .output_values = g_hash_table_new (g_str_hash, g_str_equal),
  };
  for (int i = 0; outs && outs[i]; i++)
    {
      tw_port p = tw_graph_resolve (g, outs[i]);
      const tw_node *src = tw_graph_node (g, p.node);
      g_hash_table_add (ex.output_values, p.output == 0
                                            ? tw_ex_strdup (&ex, src->id)
                                            : tw_ex_printf (&ex, "%s:%d", src->id, p.output));
    }

  GPtrArray *inputs = g_ptr_array_new ();
  for (guint i = 0; i < order->len; i++)
    {
      const tw_node *n = tw_graph_node (g, g_array_index (order, int, i));
      if (!needed[g_array_index (order, int, i)])
        continue;
      if (n->op && (n->op->flags & TW_OP_SOURCE))
        {
          const char *role = tw_attrs_get_string (n->resolved, "role", "data");
          if (strcmp (role, "data") != 0)
            g_string_append_printf (problems,
                                    "node %s (input): a %s input feeds the outputs; only data "
                                    "inputs are exported\n",
                                    n->id, role);
          else if (g_hash_table_contains (ex.output_values, n->id))
            g_string_append_printf (problems, "node %s (input): a graph input is an output\n",
                                    n->id);
          else
            g_ptr_array_add (inputs, ex_value_info (&ex, n->id, &n->out_info[0]));
          continue;
        }
      ex_emit (&ex, n, problems);
    }

  GBytes *bytes = NULL;
  if (problems->len > 0)
    {
      g_string_truncate (problems, problems->len - 1);
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED, "not exported:\n%s",
                   problems->str);
      g_ptr_array_unref (inputs);
      ex_ctx_clear (&ex);
      return NULL;
    }

  Onnx__GraphProto graph = ONNX__GRAPH_PROTO__INIT;
  graph.name = tw_ex_strdup (&ex, mname);
  graph.n_node = ex.nodes->len;
  graph.node = (Onnx__NodeProto **) ex.nodes->pdata;
  graph.n_initializer = ex.inits->len;
  graph.initializer = (Onnx__TensorProto **) ex.inits->pdata;
  graph.n_input = inputs->len;
  graph.input = (Onnx__ValueInfoProto **) inputs->pdata;
  GPtrArray *outputs = g_ptr_array_new ();
  for (int i = 0; outs && outs[i]; i++)
    {
      tw_port p = tw_graph_resolve (g, outs[i]);
      const tw_node *src = tw_graph_node (g, p.node);
      g_ptr_array_add (outputs,
                       ex_value_info (&ex, ex_port_value (&ex, p), &src->out_info[p.output]));
    }
  graph.n_output = outputs->len;
  graph.output = (Onnx__ValueInfoProto **) outputs->pdata;

  Onnx__OperatorSetIdProto os = ONNX__OPERATOR_SET_ID_PROTO__INIT;
  os.domain = tw_ex_strdup (&ex, "");
  os.has_version = TRUE;
  os.version = opset;
  Onnx__OperatorSetIdProto *osp = &os;
  Onnx__ModelProto model = ONNX__MODEL_PROTO__INIT;
  model.has_ir_version = TRUE;
  model.ir_version = ex_ir_version (opset);
  model.n_opset_import = 1;
  model.opset_import = &osp;
  model.producer_name = tw_ex_strdup (&ex, "twb");
  model.graph = &graph;

  gsize len = onnx__model_proto__get_packed_size (&model);
  guint8 *buf = g_malloc (MAX (len, 1));
  gsize packed = onnx__model_proto__pack (&model, buf);
  g_assert (packed == len);
  bytes = g_bytes_new_take (buf, len);

  g_ptr_array_unref (outputs);
  g_ptr_array_unref (inputs);
  ex_ctx_clear (&ex);
  return bytes;
}

gboolean
tw_onnx_export (const tw_model *m, const tw_params *params, const tw_onnx_export_options *opt,
                const char *path, GError **error)
{
  g_autoptr (GBytes) bytes = tw_onnx_export_to_bytes (m, params, opt, error);
  if (bytes == NULL)
    return FALSE;
  gsize len;
  const void *data = g_bytes_get_data (bytes, &len);
  return tw_file_save (path, data, len, error);
}

tw_params *
tw_onnx_export_params (const tw_model *m, const char *weights, GError **error)
{
  g_autoptr (tw_graph) g = tw_graph_copy (m->graph);
  if (tw_graph_infer (g) > 0)
    {
      g_autofree char *errs = tw_graph_errors_to_string (g);
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED, "%s: %s",
                   m->name ? m->name : "model", errs);
      return NULL;
    }
  g_autoptr (tw_params) params = tw_params_new ();
  if (!tw_params_sync_graph (params, g, m->recipe.seed, error))
    return NULL;
  if (weights && !tw_params_load_weights (params, weights, error))
    return NULL;
  return g_steal_pointer (&params);
}
