/* resize.c — nearest-neighbour resize (ONNX Resize, mode "nearest") of the
 * spatial dims of an [N, C, ...] tensor, and its gradient, resize_grad.
 *
 * The output size comes from scales (floor (in * scale), the scale itself
 * then maps coordinates) or from sizes (the scale is then out / in), one
 * value per spatial dim; ONNX's full-rank form (leading N, C entries that
 * leave those dims alone) is accepted too.  Output index i along a dim maps
 * to a source coordinate by coordinate_transformation_mode:
 *
 *   half_pixel          (i + 0.5) / scale - 0.5
 *   pytorch_half_pixel  the same, 0 when the output dim is 1
 *   asymmetric          i / scale            (PyTorch's nearest upsampling)
 *   align_corners       i (in - 1) / (out - 1), 0 when out is 1
 *   tf_half_pixel_for_nearest  (i + 0.5) / scale (opset 11: tf_half_pixel_for_nn)
 *
 * then rounds by nearest_mode (floor, ceil, round_prefer_floor,
 * round_prefer_ceil: halves go down or up) and clamps to [0, in - 1], as
 * ONNX's reference implementation does.  Every output element copies one
 * input element, so resize_grad sums dy back onto the elements it copied.
 */
#define G_LOG_DOMAIN "twb-ops-resize"

#include "engine/op.h"
#include "engine/ops/index-map.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

typedef struct
{
  int nd;
  int64_t in[TW_MAX_DIMS], out[TW_MAX_DIMS];
  double scale[TW_MAX_DIMS];          /* of the spatial dims (1 for N and C) */
} resize_plan;

static gboolean G_GNUC_PRINTF (3, 4)
resize_error (GError **error, int code, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error_literal (error, TW_OP_ERROR, code, msg);
  return FALSE;
}

/* Plan for x (op names the op in errors). */
static gboolean
resize_plan_init (resize_plan *p, const char *op, const tw_attrs *a, const tw_tinfo *x,
                  GError **error)
{
  g_autofree char *xs = tw_tinfo_to_string (x);
  const tw_attr_value *sc = tw_attrs_lookup (a, "scales");
  const tw_attr_value *sz = tw_attrs_lookup (a, "sizes");
  if (x->ndim < 3)
    return resize_error (error, TW_OP_ERROR_SHAPE,
                         "%s expects an input [N, C, spatial...] of rank 3 or more, got %s", op,
                         xs);
  if ((sc == NULL) == (sz == NULL))
    return resize_error (error, TW_OP_ERROR_ATTR, "%s: give exactly one of scales and sizes", op);
  int ns = x->ndim - 2, n = sc ? sc->n : sz->n;
  const char *what = sc ? "scales" : "sizes";
  if (n != ns && n != x->ndim)
    return resize_error (error, TW_OP_ERROR_ATTR,
                         "%s: %s needs %d values (one per spatial dim of %s) or %d, got %d", op,
                         what, ns, xs, x->ndim, n);
  int lead = n - ns;
  p->nd = x->ndim;
  for (int d = 0; d < 2; d++)
    {
      p->in[d] = p->out[d] = x->dims[d];
      p->scale[d] = 1;
      if (lead == 0)
        continue;
      /* The full-rank form may not resize N or C (an exporter writes the
       * batch it traced with: any size is accepted against the symbolic N). */
      gboolean keeps = sc ? sc->floats[d] == 1.0
                          : (sz->ints[d] == x->dims[d] || (x->dims[d] == TW_DIM_N && sz->ints[d] > 0));
      if (!keeps)
        return resize_error (error, TW_OP_ERROR_ATTR, "%s: %s may not resize dim %d (%s) of %s",
                             op, what, d, d == 0 ? "N" : "C", xs);
    }
  for (int d = 2; d < x->ndim; d++)
    {
      int64_t in = x->dims[d];
      p->in[d] = in;
      if (in == TW_DIM_N || in <= 0)
        return resize_error (error, TW_OP_ERROR_SHAPE,
                             "%s needs known, non-empty spatial dims, got %s", op, xs);
      if (sc)
        {
          double s = sc->floats[lead + d - 2];
          if (!(s > 0) || !isfinite (s))
            return resize_error (error, TW_OP_ERROR_ATTR,
                                 "%s: scales must be positive and finite, got %g for dim %d", op,
                                 s, d);
          double o = floor ((double) in * s);
          if (o < 1 || o > (double) G_MAXINT32)
            return resize_error (error, TW_OP_ERROR_ATTR,
                                 "%s: scale %g turns dim %d of %s into %.0f elements", op, s, d,
                                 xs, o);
          p->out[d] = (int64_t) o;
          p->scale[d] = s;
        }
      else
        {
          int64_t o = sz->ints[lead + d - 2];
          if (o < 1 || o > G_MAXINT32)
            return resize_error (error, TW_OP_ERROR_ATTR,
                                 "%s: sizes must lie in [1, 2^31), got %" G_GINT64_FORMAT
                                 " for dim %d",
                                 op, o, d);
          p->out[d] = o;
          p->scale[d] = (double) o / (double) in;
        }
    }
  return TRUE;
}

/* Source index along spatial dim d for output index i. */
static int64_t
source_index (const tw_attrs *a, const resize_plan *p, int d, int64_t i)
{
  const char *ct = tw_attrs_get_string (a, "coordinate_transformation_mode", "half_pixel");
  const char *nm = tw_attrs_get_string (a, "nearest_mode", "round_prefer_floor");
  double s = p->scale[d], n = (double) p->in[d], m = (double) p->out[d], x;
  if (strcmp (ct, "asymmetric") == 0)
    x = (double) i / s;
  else if (strcmp (ct, "align_corners") == 0)
    x = m > 1 ? (double) i * (n - 1) / (m - 1) : 0;
  else if (strcmp (ct, "pytorch_half_pixel") == 0)
    x = m > 1 ? ((double) i + 0.5) / s - 0.5 : 0;
  else if (strcmp (ct, "tf_half_pixel_for_nearest") == 0 || strcmp (ct, "tf_half_pixel_for_nn") == 0)
    x = ((double) i + 0.5) / s;
  else
    x = ((double) i + 0.5) / s - 0.5;
  double f = floor (x), r;
  if (strcmp (nm, "floor") == 0)
    r = f;
  else if (strcmp (nm, "ceil") == 0)
    r = ceil (x);
  else if (x - f == 0.5)
    r = strcmp (nm, "round_prefer_ceil") == 0 ? f + 1 : f;
  else
    r = round (x);
  return (int64_t) CLAMP (r, 0, n - 1);
}

typedef struct
{
  const tw_attrs *a;
  const resize_plan *p;
} resize_source;

/* tw_index_map_fn over a resize_source: the identity for N and C. */
static int64_t
plan_source (const void *data, int d, int64_t i)
{
  const resize_source *rs = data;
  return d < 2 ? i : source_index (rs->a, rs->p, d, i);
}

/* The gather (resize) from src shaped like shape into dst, or its adjoint
 * (resize_grad) from src resized into dst shaped like shape. */
static gboolean
resize_run (const tw_kctx *ctx, const char *op, const tw_attrs *a, const tw_tensor *shape,
            const tw_tensor *src, tw_tensor *dst, gboolean grad, GError **error)
{
  resize_plan p;
  tw_tinfo xi;
  tw_tinfo_from_tensor (&xi, shape);
  if (!resize_plan_init (&p, op, a, &xi, error))
    return FALSE;
  if (tw_tensor_numel (dst) == 0)
    return TRUE;
  tw_index_map m;
  resize_source rs = { a, &p };
  tw_index_map_build (&m, ctx, p.nd, p.in, p.out, plan_source, &rs);
  if (!grad)
    tw_index_map_gather (&m, ctx, src, dst, 0.0);
  else
    /* The [N, C] planes are never resized, so threads split them and no two
     * threads write one element. */
    tw_index_map_scatter_add (&m, ctx, src, dst, 2);
  return TRUE;
}

/* in[0]: x [N, C, spatial...]; out[0]: x resized. */
static gboolean
resize_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                tw_tensor *const *out, GError **error)
{
  return resize_run (ctx, "resize", a, in[0], in[0], out[0], FALSE, error);
}

/* in[0]: dy (x resized); in[1]: x (its shape); out[0]: dx shaped like x. */
static gboolean
resize_grad_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                     tw_tensor *const *out, GError **error)
{
  return resize_run (ctx, "resize_grad", a, in[1], in[0], out[0], TRUE, error);
}

static gboolean
resize_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  resize_plan p;
  if (!tw_index_map_check_float ("resize", "input", &in[0], error)
      || !resize_plan_init (&p, "resize", a, &in[0], error))
    return FALSE;
  tw_tinfo_set (&out[0], in[0].dtype, p.nd, p.out);
  if (!tw_tinfo_nbytes (&out[0], 1, NULL))
    {
      g_autofree char *s = tw_tinfo_to_string (&out[0]);
      return resize_error (error, TW_OP_ERROR_ATTR, "resize: the output %s is too large", s);
    }
  return TRUE;
}

static gboolean
resize_grad_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                   GError **error)
{
  resize_plan p;
  if (!tw_index_map_check_float ("resize_grad", "gradient", &in[0], error)
      || !resize_plan_init (&p, "resize_grad", a, &in[1], error))
    return FALSE;
  if (!tw_index_map_check_grad ("resize_grad", "resized", &in[0], p.nd, p.out, error))
    return FALSE;
  tw_tinfo_set (&out[0], in[0].dtype, in[1].ndim, in[1].dims);
  return TRUE;
}

static gboolean
resize_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
                 tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  gin[0] = tw_emit2 (e, "resize_grad", a, gout[0], in[0]);
  return gin[0] != NULL;
}

/* resize_grad is linear in dy; its adjoint is the gather, resize itself. */
static gboolean
resize_grad_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                      tw_val *const *out, tw_val *const *gout, const gboolean *needs,
                      tw_val **gin)
{
  if (needs[0])
    gin[0] = tw_emit1 (e, "resize", a, gout[0]);
  if (needs[1])
    gin[1] = tw_emit1 (e, "zeros_like", NULL, in[1]);
  return TRUE;
}

static const char *const mode_choices[] = { "nearest", NULL };
static const char *const ct_choices[] = {
  "half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners", "tf_half_pixel_for_nearest",
  "tf_half_pixel_for_nn",
  NULL
};
static const char *const nearest_choices[] = {
  "round_prefer_floor", "round_prefer_ceil", "floor", "ceil", NULL
};
static const tw_attr_spec resize_attrs[] = {
  { "scales", TW_ATTR_FLOATS, NULL, FALSE,
    "factor per spatial dim ([2, 2]: twice H and W); output floor (in * scale)" },
  { "sizes", TW_ATTR_INTS, NULL, FALSE, "output size per spatial dim (instead of scales)" },
  { "mode", TW_ATTR_STRING, "\"nearest\"", FALSE, "interpolation (nearest only)", mode_choices },
  { "coordinate_transformation_mode", TW_ATTR_STRING, "\"half_pixel\"", FALSE,
    "how an output index maps to an input coordinate (ONNX's names)", ct_choices },
  { "nearest_mode", TW_ATTR_STRING, "\"round_prefer_floor\"", FALSE,
    "rounding of the input coordinate", nearest_choices },
  { NULL }
};

static const char *const names_x[] = { "x", NULL };
static const char *const names_dy_x[] = { "dy", "x", NULL };

static const tw_op_def resize_def = {
  .name = "resize",
  .category = "Shape",
  .doc = "Nearest-neighbour resize of the spatial dims of [N, C, H, W] by scales or sizes",
  .attrs = resize_attrs,
  .min_inputs = 1,
  .max_inputs = 1,
  .input_names = names_x,
  .n_outputs = 1,
  .infer = resize_infer,
  .forward = resize_forward,
  .backward = resize_backward,
  .cost = tw_index_map_cost,
  .onnx_name = "Resize",
};

static const tw_op_def resize_grad_def = {
  .name = "resize_grad",
  .category = "Shape",
  .doc = "Gradient of resize: dy summed onto the input elements each output copied",
  .attrs = resize_attrs,
  .min_inputs = 2,
  .max_inputs = 2,
  .input_names = names_dy_x,
  .n_outputs = 1,
  .infer = resize_grad_infer,
  .forward = resize_grad_forward,
  .backward = resize_grad_backward,
  .cost = tw_index_map_grad_cost,
  .flags = TW_OP_INTERNAL,
};

void
tw_ops_register_resize (void)
{
  tw_op_register (&resize_def);
  tw_op_register (&resize_grad_def);
}
