/* pad.c — pad (ONNX Pad) and its internal gradient, pad_grad.
 *
 * pads lists the begin pads of the padded dims, then their end pads, as
 * ONNX orders them: [x1_begin, x2_begin, ..., x1_end, x2_end, ...].  With 2k
 * values it pads the last k dims, so [1, 1, 2, 2] on NCHW pads H by 1 and W
 * by 2 on both sides, and ONNX's own form (2 * rank values) pads every dim.
 * Modes: "constant" (value), "reflect" (mirror without repeating the edge,
 * numpy's reflect: pads must be smaller than the dim) and "edge" (repeat the
 * edge).  Negative pads (cropping) are refused.
 *
 * The output is a gather: y[i] = x[src (i)] or value.  pad_grad is its
 * adjoint, a scatter-add dx[src (i)] += dy[i] (for constant mode simply the
 * inner slice of dy); the adjoint of pad_grad is pad again with value 0.
 */
#define G_LOG_DOMAIN "twb-ops-pad"

#include "engine/op.h"
#include "engine/ops/index-map.h"

#include <stdarg.h>

typedef enum
{
  PAD_CONSTANT,
  PAD_REFLECT,
  PAD_EDGE,
} pad_mode;

/* Padding of every dim of x (0 for dims the pads do not cover). */
typedef struct
{
  int nd;
  int64_t in[TW_MAX_DIMS], out[TW_MAX_DIMS];
  int64_t begin[TW_MAX_DIMS];
  pad_mode mode;
  double value;
} pad_plan;

static gboolean
attr_error (GError **error, const char *op, const char *fmt, ...) G_GNUC_PRINTF (3, 4);

static gboolean
attr_error (GError **error, const char *op, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR, "%s: %s", op, msg);
  return FALSE;
}

static pad_mode
mode_of (const tw_attrs *a)
{
  const char *m = tw_attrs_get_string (a, "mode", "constant");
  if (g_strcmp0 (m, "reflect") == 0)
    return PAD_REFLECT;
  if (g_strcmp0 (m, "edge") == 0)
    return PAD_EDGE;
  return PAD_CONSTANT;
}

/* The plan for x (which may hold TW_DIM_N in dims the pads leave alone). */
static gboolean
pad_plan_init (pad_plan *p, const char *op, const tw_attrs *a, const tw_tinfo *x, GError **error)
{
  int64_t pads[TW_ATTR_MAX_LIST];
  int np = tw_attrs_get_ints (a, "pads", pads, TW_ATTR_MAX_LIST);
  g_autofree char *xs = tw_tinfo_to_string (x);

  p->nd = x->ndim;
  p->mode = mode_of (a);
  p->value = tw_attrs_get_float (a, "value", 0.0);
  if (np < 0 || np % 2 != 0 || np / 2 > x->ndim)
    return attr_error (error, op,
                       "pads must hold 2 values per padded dim (begins, then ends) for at most "
                       "the %d dims of the input %s, got %d values",
                       x->ndim, xs, np);
  int k = np / 2, first = x->ndim - k;
  for (int d = 0; d < x->ndim; d++)
    {
      int64_t n = x->dims[d], b = 0, e = 0;
      if (d >= first)
        {
          b = pads[d - first];
          e = pads[d - first + k];
        }
      if (b < 0 || e < 0)
        return attr_error (error, op, "pads must not be negative, got %" G_GINT64_FORMAT
                           " for dim %d of %s", MIN (b, e), d, xs);
      p->in[d] = n;
      p->begin[d] = b;
      if (b == 0 && e == 0)
        {
          p->out[d] = n;
          continue;
        }
      if (n == TW_DIM_N)
        return attr_error (error, op, "cannot pad the batch dim N (dim %d of %s)", d, xs);
      if (p->mode == PAD_REFLECT && (b >= n || e >= n))
        return attr_error (error, op,
                           "reflect mode needs pads smaller than the dim: pads %" G_GINT64_FORMAT
                           ", %" G_GINT64_FORMAT " for dim %d of %s",
                           b, e, d, xs);
      if (p->mode == PAD_EDGE && n == 0)
        return attr_error (error, op, "edge mode cannot pad the empty dim %d of %s", d, xs);
      if (!tw_size_add (n, b, &p->out[d]) || !tw_size_add (p->out[d], e, &p->out[d]))
        return attr_error (error, op, "pads overflow dim %d of %s", d, xs);
    }
  return TRUE;
}

/* Source index along a dim of length n for output index i, or -1 where the
 * constant fills. */
static inline int64_t
src_index (pad_mode mode, int64_t i, int64_t begin, int64_t n)
{
  int64_t s = i - begin;
  if (s >= 0 && s < n)
    return s;
  switch (mode)
    {
    case PAD_REFLECT:
      return s < 0 ? -s : 2 * (n - 1) - s;
    case PAD_EDGE:
      return s < 0 ? 0 : n - 1;
    default:
      return -1;
    }
}

/* tw_index_map_fn over a pad_plan. */
static int64_t
plan_source (const void *data, int d, int64_t i)
{
  const pad_plan *p = data;
  return src_index (p->mode, i, p->begin[d], p->in[d]);
}

/* A 0-d tensor pads like a one-element vector with no pads. */
static void
plan_scalar (pad_plan *p)
{
  if (p->nd > 0)
    return;
  p->nd = 1;
  p->in[0] = p->out[0] = 1;
  p->begin[0] = 0;
}

/* The gather (pad) from src shaped like shape padded into dst, or its adjoint
 * (pad_grad) from src padded into dst shaped like shape. */
static gboolean
pad_run (const tw_kctx *ctx, const char *op, const tw_attrs *a, const tw_tensor *shape,
         const tw_tensor *src, tw_tensor *dst, gboolean grad, GError **error)
{
  pad_plan p;
  tw_tinfo xi;
  tw_tinfo_from_tensor (&xi, shape);
  if (!pad_plan_init (&p, op, a, &xi, error))
    return FALSE;
  plan_scalar (&p);
  if (tw_tensor_numel (dst) == 0)
    return TRUE;
  tw_index_map m;
  tw_index_map_build (&m, ctx, p.nd, p.in, p.out, plan_source, &p);
  if (!grad)
    tw_index_map_gather (&m, ctx, src, dst, p.value);
  else
    /* Several rows of dy may land on one row of dx (reflect, edge): rows are
     * split over threads by the first dim only when that dim is not padded. */
    tw_index_map_scatter_add (&m, ctx, src, dst,
                              p.nd > 1 && p.in[0] == p.out[0] && p.in[0] > 1 ? 1 : 0);
  return TRUE;
}

/* in[0]: x; out[0]: x padded. */
static gboolean
pad_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
             tw_tensor *const *out, GError **error)
{
  return pad_run (ctx, "pad", a, in[0], in[0], out[0], FALSE, error);
}

/* in[0]: dy (x padded); in[1]: x (its shape); out[0]: dx shaped like x. */
static gboolean
pad_grad_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                  tw_tensor *const *out, GError **error)
{
  return pad_run (ctx, "pad_grad", a, in[1], in[0], out[0], TRUE, error);
}

static gboolean
pad_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  pad_plan p;
  if (!tw_index_map_check_float ("pad", "input", &in[0], error)
      || !pad_plan_init (&p, "pad", a, &in[0], error))
    return FALSE;
  tw_tinfo_set (&out[0], in[0].dtype, p.nd, p.out);
  if (!tw_tinfo_nbytes (&out[0], 1, NULL))
    {
      g_autofree char *s = tw_tinfo_to_string (&out[0]);
      return attr_error (error, "pad", "the padded shape %s is too large", s);
    }
  return TRUE;
}

static gboolean
pad_grad_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  pad_plan p;
  if (!tw_index_map_check_float ("pad_grad", "gradient", &in[0], error)
      || !pad_plan_init (&p, "pad_grad", a, &in[1], error))
    return FALSE;
  if (!tw_index_map_check_grad ("pad_grad", "padded", &in[0], p.nd, p.out, error))
    return FALSE;
  tw_tinfo_set (&out[0], in[0].dtype, in[1].ndim, in[1].dims);
  return TRUE;
}

static gboolean
pad_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
              tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  gin[0] = tw_emit2 (e, "pad_grad", a, gout[0], in[0]);
  return gin[0] != NULL;
}

/* pad_grad is linear in dy; its adjoint is the gather, pad with value 0. */
static gboolean
pad_grad_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                   tw_val *const *out, tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  if (needs[0])
    {
      tw_attrs *pa = tw_attrs_copy (a);
      tw_attrs_set_float (pa, "value", 0.0);
      gin[0] = tw_emit1 (e, "pad", pa, gout[0]);
      tw_attrs_free (pa);
    }
  if (needs[1])
    gin[1] = tw_emit1 (e, "zeros_like", NULL, in[1]);
  return TRUE;
}

static const char *const mode_choices[] = { "constant", "reflect", "edge", NULL };
static const tw_attr_spec pad_attrs[] = {
  { "pads", TW_ATTR_INTS, NULL, TRUE,
    "begin pads of the last k dims, then their end pads ([1, 1, 1, 1]: H and W of NCHW by 1)" },
  { "mode", TW_ATTR_STRING, "\"constant\"", FALSE,
    "\"constant\": value; \"reflect\": mirror (pads < dim); \"edge\": repeat the edge",
    mode_choices },
  { "value", TW_ATTR_FLOAT, "0.0", FALSE, "fill of constant mode" },
  { NULL }
};

static const char *const names_x[] = { "x", NULL };
static const char *const names_dy_x[] = { "dy", "x", NULL };

static const tw_op_def pad_def = {
  .name = "pad",
  .category = "Shape",
  .doc = "Pad the last dims with a constant, their mirror image or their edge",
  .attrs = pad_attrs,
  .min_inputs = 1,
  .max_inputs = 1,
  .input_names = names_x,
  .n_outputs = 1,
  .infer = pad_infer,
  .forward = pad_forward,
  .backward = pad_backward,
  .cost = tw_index_map_cost,
  .onnx_name = "Pad",
};

static const tw_op_def pad_grad_def = {
  .name = "pad_grad",
  .category = "Shape",
  .doc = "Gradient of pad: dy's inner part plus, for reflect and edge, the padding summed back",
  .attrs = pad_attrs,
  .min_inputs = 2,
  .max_inputs = 2,
  .input_names = names_dy_x,
  .n_outputs = 1,
  .infer = pad_grad_infer,
  .forward = pad_grad_forward,
  .backward = pad_grad_backward,
  .cost = tw_index_map_grad_cost,
  .flags = TW_OP_INTERNAL,
};

void
tw_ops_register_pad (void)
{
  tw_op_register (&pad_def);
  tw_op_register (&pad_grad_def);
}
