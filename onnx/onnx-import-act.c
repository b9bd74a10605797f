/* onnx-import-act.c — the ONNX ops whose attributes need translating into
 * the ops added for mobile networks: LeakyRelu, Clip (relu6 for 0..6),
 * HardSigmoid, Pad and Resize (see onnx-import.c for the rest). */
#define G_LOG_DOMAIN "tw-onnx"

#include "onnx/onnx-import-private.h"

#include <math.h>
#include <string.h>

void
tw_imp_leaky_relu (tw_imp *im)
{
  static const char *const known[] = { "alpha", NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "X");
  double alpha = tw_imp_attr_float (im, "alpha", 0.01f);
  if (x == NULL || im->failed)
    return;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_float (a, "negative_slope", tw_imp_short_double ((float) alpha));
  tw_imp_emit1 (im, NULL, "leaky_relu", a, x);
}

static gboolean
optional_scalar (tw_imp *im, gsize i, const char *what, gboolean *present, double *v)
{
  const tw_imp_val *c = tw_imp_input (im, i);
  *present = c != NULL;
  if (c && !tw_imp_scalar_of (c, v))
    {
      tw_imp_problem (im, "%s must be a constant scalar", what);
      return FALSE;
    }
  return TRUE;
}

/* Clip: bounds as inputs from opset 11, attributes before; (0, 6) is relu6. */
void
tw_imp_clip (tw_imp *im)
{
  static const char *const known[] = { "min", "max", NULL };
  tw_imp_check_attrs (im, im->opset < 11 ? known : NULL);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "the input");
  gboolean has_lo = FALSE, has_hi = FALSE;
  double lo = 0, hi = 0;
  if (im->opset < 11)
    {
      has_lo = tw_onnx_attr (im->n, "min") != NULL, has_hi = tw_onnx_attr (im->n, "max") != NULL;
      lo = tw_imp_attr_float (im, "min", 0), hi = tw_imp_attr_float (im, "max", 0);
    }
  else if ((tw_imp_input (im, 1) && tw_imp_input (im, 1)->kind == TW_IMP_DYN) ||
           (tw_imp_input (im, 2) && tw_imp_input (im, 2)->kind == TW_IMP_DYN))
    {
      /* Computed bounds: min (max (x, lo), hi). */
      const char *r = x ? x->ref : NULL;
      for (int k = 1; k <= 2 && r; k++)
        if (tw_imp_input (im, k))
          {
            const char *b = tw_imp_ref_input (im, k, k == 1 ? "min" : "max");
            tw_node *n = b ? tw_imp_emitn (im, k == 1 ? "maximum" : "minimum", NULL,
                                           (const char *const[]){ r, b, NULL }, 1)
                           : NULL;
            r = n ? n->id : NULL;
          }
      return;
    }
  else if (!optional_scalar (im, 1, "min", &has_lo, &lo) ||
           !optional_scalar (im, 2, "max", &has_hi, &hi))
    return;
  if (x == NULL || im->failed)
    return;
  if (has_lo && has_hi && lo == 0 && hi == 6)
    {
      tw_imp_emit1 (im, NULL, "relu6", NULL, x);
      return;
    }
  tw_attrs *a = tw_attrs_new ();
  if (has_lo)
    tw_attrs_set_float (a, "min", tw_imp_short_double ((float) lo));
  if (has_hi)
    tw_attrs_set_float (a, "max", tw_imp_short_double ((float) hi));
  tw_imp_emit1 (im, NULL, "clip", a, x);
}

void
tw_imp_hard_sigmoid (tw_imp *im)
{
  static const char *const known[] = { "alpha", "beta", NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "X");
  double alpha = tw_imp_attr_float (im, "alpha", 0.2f), beta = tw_imp_attr_float (im, "beta", 0.5f);
  if (x == NULL || im->failed)
    return;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_float (a, "alpha", tw_imp_short_double ((float) alpha));
  tw_attrs_set_float (a, "beta", tw_imp_short_double ((float) beta));
  tw_imp_emit1 (im, NULL, "hard_sigmoid", a, x);
}

/* Pad: ONNX lists begin pads of every dim, then end pads; twb's pad takes
 * those of the last k dims, the batch never padded. */
void
tw_imp_pad (tw_imp *im)
{
  static const char *const known_old[] = { "mode", "pads", "value", NULL };
  static const char *const known[] = { "mode", NULL };
  tw_imp_check_attrs (im, im->opset < 11 ? known_old : known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "data");
  g_autofree int64_t *pads = NULL;
  int64_t np = 0;
  double value = 0;
  gboolean has_value = FALSE;
  if (im->opset < 11)
    {
      int64_t buf[TW_MAX_DIMS * 2];
      gsize len = 0;
      if (!tw_imp_attr_ints (im, "pads", 0, 0, buf, &len))
        return;
      pads = g_memdup2 (buf, MAX (len, 1) * sizeof *buf), np = (int64_t) len;
      value = tw_imp_attr_float (im, "value", 0);
    }
  else
    {
      if (!tw_imp_const_ints (im, tw_imp_input (im, 1), "pads", &pads, &np) ||
          !optional_scalar (im, 2, "constant_value", &has_value, &value))
        return;
      if (tw_imp_input (im, 3))
        tw_imp_problem (im, "the axes input (opset 18) is not supported");
    }
  g_autofree char *mode =
    tw_onnx_attr (im->n, "mode") ? tw_imp_attr_string_dup (im, "mode") : g_strdup ("constant");
  tw_tinfo info;
  if (x == NULL || im->failed || !tw_imp_dyn_info (im, x, &info))
    return;
  int r = info.ndim;
  if (np != 2 * r)
    {
      tw_imp_problem (im, "%" G_GINT64_FORMAT " pads for a rank-%d input", np, r);
      return;
    }
  int first = r;
  for (int d = 0; d < r; d++)
    if ((pads[d] != 0 || pads[d + r] != 0) && first == r)
      first = d;
  if (first == 0)
    {
      tw_imp_problem (im, "pads on the batch dimension");
      return;
    }
  if (first == r)
    first = r - 1; /* nothing padded: pad the last dim by 0 */
  int k = r - first;
  int64_t tp[TW_ATTR_MAX_LIST];
  if (2 * k > TW_ATTR_MAX_LIST)
    {
      tw_imp_problem (im, "pads on %d dims", k);
      return;
    }
  for (int d = 0; d < k; d++)
    {
      tp[d] = pads[first + d];
      tp[k + d] = pads[first + d + r];
      if (tp[d] < 0 || tp[k + d] < 0)
        {
          tw_imp_problem (im, "negative pads (cropping)");
          return;
        }
    }
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_ints (a, "pads", 2 * k, tp);
  tw_attrs_set_string (a, "mode", mode);
  if (value != 0)
    tw_attrs_set_float (a, "value", tw_imp_short_double ((float) value));
  tw_imp_emit1 (im, NULL, "pad", a, x);
}

/* Resize (opset 11+): scales or sizes of all four NCHW dims, N and C kept. */
void
tw_imp_resize (tw_imp *im)
{
  static const char *const known[] = { "mode",
                                       "coordinate_transformation_mode",
                                       "nearest_mode",
                                       "cubic_coeff_a",
                                       "exclude_outside",
                                       "extrapolation_value",
                                       NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "X");
  if (im->opset < 11)
    {
      tw_imp_problem (im, "Resize before opset 11 (scales as attributes)");
      return;
    }
  if (!tw_imp_attr_string_is (im, "mode", "nearest"))
    {
      g_autofree char *m = tw_imp_attr_string_dup (im, "mode");
      tw_imp_problem (im, "mode %s (twb's resize is nearest only)", m);
    }
  if (tw_imp_attr_int (im, "exclude_outside", 0) != 0)
    tw_imp_problem (im, "exclude_outside=1");
  const tw_imp_val *sc = tw_imp_input (im, 2), *sz = tw_imp_input (im, 3);
  if (sc && sc->kind == TW_IMP_CONST && tw_tensor_numel (sc->c) == 0)
    sc = NULL; /* an empty scales beside sizes */
  tw_attrs *a = tw_attrs_new ();
  if (sz)
    {
      g_autofree int64_t *v = NULL;
      int64_t n = 0;
      if (tw_imp_const_ints (im, sz, "sizes", &v, &n) && n != 4)
        tw_imp_problem (im, "sizes for %" G_GINT64_FORMAT " dims (twb resizes NCHW)", n);
      else if (v)
        tw_attrs_set_ints (a, "sizes", 2, v + 2);
    }
  else if (sc && sc->kind == TW_IMP_CONST && tw_tensor_numel (sc->c) == 4)
    {
      double f[4];
      for (int i = 0; i < 4; i++)
        f[i] = tw_imp_short_double ((float) tw_tensor_get_flat (sc->c, i));
      if (f[0] != 1 || f[1] != 1)
        tw_imp_problem (im, "scales that resize N or C");
      tw_attrs_set_floats (a, "scales", 2, f + 2);
    }
  else
    tw_imp_problem (im, "needs constant scales or sizes of the 4 NCHW dims");
  if (x == NULL || im->failed)
    {
      tw_attrs_free (a);
      return;
    }
  g_autofree char *ct = tw_onnx_attr (im->n, "coordinate_transformation_mode")
                          ? tw_imp_attr_string_dup (im, "coordinate_transformation_mode")
                          : g_strdup ("half_pixel");
  g_autofree char *nm = tw_onnx_attr (im->n, "nearest_mode")
                          ? tw_imp_attr_string_dup (im, "nearest_mode")
                          : g_strdup ("round_prefer_floor");
  tw_attrs_set_string (a, "coordinate_transformation_mode", ct);
  tw_attrs_set_string (a, "nearest_mode", nm);
  tw_imp_emit1 (im, NULL, "resize", a, x);
}

/* Cast of a computed value to a dtype twb has (bool from integers only:
 * twb's cast truncates floats, ONNX's bool is x != 0). */
void
tw_imp_cast (tw_imp *im)
{
  static const char *const known[] = { "to", NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "the input");
  int64_t to = tw_imp_attr_int (im, "to", 0);
  tw_tinfo info;
  if (x == NULL || im->failed || !tw_imp_dyn_info (im, x, &info))
    return;
  const char *dt = NULL;
  switch (to)
    {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: dt = "f32"; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: dt = "f64"; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: dt = "i32"; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: dt = "i64"; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: dt = "u8"; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
      if (info.dtype == TW_U8)
        dt = "u8";
      else
        {
          /* x != 0: not (x == 0). */
          g_autoptr (tw_tensor) zero = tw_tensor_new (info.dtype, 0, NULL);
          tw_tensor_fill (zero, 0.0);
          tw_imp_val zv = { .kind = TW_IMP_CONST, .c = zero };
          const char *z = tw_imp_ref (im, &zv);
          tw_node *eq =
            z ? tw_imp_emitn (im, "equal", NULL, (const char *const[]){ x->ref, z, NULL }, 1)
              : NULL;
          g_free (zv.ref);
          if (eq)
            tw_imp_emitn (im, "logical_not", NULL, (const char *const[]){ eq->id, NULL }, 1);
          return;
        }
      break;
    default: break;
    }
  if (dt == NULL)
    {
      tw_imp_problem (im, "cast of %s to ONNX data type %" G_GINT64_FORMAT " is not supported",
                      tw_dtype_name (info.dtype), to);
      return;
    }
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_string (a, "to", dt);
  tw_imp_emit1 (im, NULL, "cast", a, x);
}

/* Squeeze / Unsqueeze of a computed value: the axes constant (attribute
 * before opset 13).  With a batch dimension, axes must leave it alone. */
void
tw_imp_squeeze (tw_imp *im)
{
  gboolean un = strcmp (im->n->op_type, "Unsqueeze") == 0;
  static const char *const known[] = { "axes", NULL };
  tw_imp_check_attrs (im, im->opset < 13 ? known : NULL);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "the input");
  g_autofree int64_t *axes = NULL;
  int64_t na = -1;
  tw_tinfo info;
  if (x == NULL || !tw_imp_axes_of (im, &axes, &na) || im->failed ||
      !tw_imp_dyn_info (im, x, &info))
    return;
  int rank = un ? info.ndim + (int) MAX (na, 0) : info.ndim;
  if (un && (na <= 0 || rank > TW_MAX_DIMS))
    {
      tw_imp_problem (im, "needs axes giving at most %d dims", TW_MAX_DIMS);
      return;
    }
  int64_t norm[TW_MAX_DIMS * 2];
  for (int64_t k = 0; k < na && k < TW_MAX_DIMS * 2; k++)
    {
      int ax = tw_imp_norm_axis (im, axes[k], rank);
      if (ax < 0)
        return;
      if (ax == 0 && !im->fixed)
        {
          tw_imp_problem (im, "axis 0 is the batch dimension");
          return;
        }
      norm[k] = ax;
    }
  if (na < 0 && !im->fixed)
    {
      tw_imp_problem (im, "no axes (every size-1 dim, the batch's too)");
      return;
    }
  tw_attrs *a = tw_attrs_new ();
  if (na >= 0)
    tw_attrs_set_ints (a, "axes", (int) MIN (na, TW_MAX_DIMS * 2), norm);
  tw_imp_emit1 (im, NULL, un ? "unsqueeze" : "squeeze", a, x);
}

/* Slice of a computed value: one twb slice per axis, from constant starts,
 * ends, axes and steps (inputs from opset 10, attributes before; ONNX's
 * clamping is twb's).  With a batch dimension, axis 0 stays whole. */
void
tw_imp_slice (tw_imp *im)
{
  static const char *const known_old[] = { "starts", "ends", "axes", NULL };
  tw_imp_check_attrs (im, im->opset < 10 ? known_old : NULL);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "data");
  tw_tinfo info;
  if (x == NULL || im->failed || !tw_imp_dyn_info (im, x, &info))
    return;
  g_autofree int64_t *st = NULL, *en = NULL, *ax = NULL, *sp = NULL;
  int64_t ns = 0, ne = 0, na = -1, np = -1;
  if (im->opset < 10)
    {
      int64_t buf[3][TW_MAX_DIMS * 2];
      gsize len[3] = { 0, 0, 0 };
      if (!tw_imp_attr_ints (im, "starts", 0, 0, buf[0], &len[0]) ||
          !tw_imp_attr_ints (im, "ends", 0, 0, buf[1], &len[1]) ||
          !tw_imp_attr_ints (im, "axes", 0, 0, buf[2], &len[2]))
        return;
      st = g_memdup2 (buf[0], sizeof buf[0]), ns = (int64_t) len[0];
      en = g_memdup2 (buf[1], sizeof buf[1]), ne = (int64_t) len[1];
      if (tw_onnx_attr (im->n, "axes"))
        ax = g_memdup2 (buf[2], sizeof buf[2]), na = (int64_t) len[2];
    }
  else
    {
      if (!tw_imp_const_ints (im, tw_imp_input (im, 1), "starts", &st, &ns) ||
          !tw_imp_const_ints (im, tw_imp_input (im, 2), "ends", &en, &ne))
        return;
      if (tw_imp_input (im, 3) && !tw_imp_const_ints (im, tw_imp_input (im, 3), "axes", &ax, &na))
        return;
      if (tw_imp_input (im, 4) && !tw_imp_const_ints (im, tw_imp_input (im, 4), "steps", &sp, &np))
        return;
    }
  if (ns != ne || (na >= 0 && na != ns) || (np >= 0 && np != ns) || ns > info.ndim)
    {
      tw_imp_problem (im, "starts, ends, axes and steps of different lengths");
      return;
    }
  const tw_imp_val *cur = x;
  tw_imp_val link = { .kind = TW_IMP_DYN };
  g_autofree char *ref = NULL;
  for (int64_t k = 0; k < ns; k++)
    {
      int a = tw_imp_norm_axis (im, ax ? ax[k] : k, info.ndim);
      int64_t step = sp ? sp[k] : 1;
      if (a < 0)
        return;
      if (step == 0)
        {
          tw_imp_problem (im, "a step of 0");
          return;
        }
      if (a == 0 && !im->fixed)
        {
          tw_imp_problem (im, "a slice of the batch dimension");
          return;
        }
      tw_attrs *at = tw_attrs_new ();
      tw_attrs_set_int (at, "axis", a);
      tw_attrs_set_int (at, "start", st[k]);
      tw_attrs_set_int (at, "end", en[k]);
      tw_attrs_set_int (at, "step", step);
      tw_node *node = tw_imp_emit1 (im, NULL, "slice", at, cur);
      if (node == NULL)
        return;
      g_free (ref);
      ref = g_strdup (node->id);
      link.ref = ref;
      cur = &link;
    }
  if (ns == 0)
    tw_imp_problem (im, "no axes to slice");
}

/* x as a reference, transposed (the last two dims) when trans. */
static const char *
maybe_transposed (tw_imp *im, const char *ref, gboolean trans)
{
  if (!trans)
    return ref;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_ints (a, "perm", 2, (int64_t[]){ 1, 0 });
  tw_node *n = tw_imp_emitn (im, "transpose", a, (const char *const[]){ ref, NULL }, 1);
  return n ? n->id : NULL;
}

static const char *
scaled (tw_imp *im, const char *ref, double alpha)
{
  if (ref == NULL || alpha == 1.0)
    return ref;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_float (a, "alpha", tw_imp_short_double ((float) alpha));
  tw_node *n = tw_imp_emitn (im, "scale", a, (const char *const[]){ ref, NULL }, 1);
  return n ? n->id : NULL;
}

void
tw_imp_gemm_values (tw_imp *im)
{
  double alpha = tw_imp_attr_float (im, "alpha", 1.0f), beta = tw_imp_attr_float (im, "beta", 1.0f);
  int64_t ta = tw_imp_attr_int (im, "transA", 0), tb = tw_imp_attr_int (im, "transB", 0);
  if (im->failed)
    return;
  const char *a = tw_imp_ref_input (im, 0, "A");
  const char *b = a ? tw_imp_ref_input (im, 1, "B") : NULL;
  a = a && b ? maybe_transposed (im, a, ta != 0) : NULL;
  b = a ? maybe_transposed (im, b, tb != 0) : NULL;
  if (a == NULL || b == NULL)
    return;
  tw_node *y = tw_imp_emitn (im, "matmul", NULL, (const char *const[]){ a, b, NULL }, 1);
  const char *r = y ? scaled (im, y->id, alpha) : NULL;
  if (r == NULL || tw_imp_input (im, 2) == NULL)
    return;
  const char *c = scaled (im, tw_imp_ref_input (im, 2, "C"), beta);
  if (c)
    tw_imp_emitn (im, "add", NULL, (const char *const[]){ r, c, NULL }, 1);
}

/* Split of a computed value into constant sizes (the 'split' input from
 * opset 13, the attribute before, else equal parts). */
void
tw_imp_split (tw_imp *im)
{
  static const char *const known_old[] = { "axis", "split", NULL };
  static const char *const known[] = { "axis", NULL };
  tw_imp_check_attrs (im, im->opset < 13 ? known_old : known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "the input");
  tw_tinfo info;
  if (x == NULL || im->failed || !tw_imp_dyn_info (im, x, &info))
    return;
  int ax = tw_imp_norm_axis (im, tw_imp_attr_int (im, "axis", 0), info.ndim);
  if (ax < 0)
    return;
  if (ax == 0 && !im->fixed)
    {
      tw_imp_problem (im, "a split of the batch dimension");
      return;
    }
  gsize n_out = im->n->n_output;
  g_autofree int64_t *sizes = NULL;
  int64_t ns = -1;
  if (im->opset < 13 && tw_onnx_attr (im->n, "split"))
    {
      int64_t buf[TW_MAX_DIMS * 2];
      gsize len = 0;
      if (!tw_imp_attr_ints (im, "split", 0, 0, buf, &len))
        return;
      sizes = g_memdup2 (buf, MAX (len, 1) * sizeof *buf), ns = (int64_t) len;
    }
  else if (im->opset >= 13 && tw_imp_input (im, 1) &&
           !tw_imp_const_ints (im, tw_imp_input (im, 1), "split", &sizes, &ns))
    return;
  if (ns < 0)
    {
      int64_t d = info.dims[ax];
      if (n_out == 0 || n_out > TW_MAX_OUTPUTS || d % (int64_t) n_out != 0)
        {
          tw_imp_problem (im, "%" G_GSIZE_FORMAT " equal parts of a dim of %" G_GINT64_FORMAT,
                          n_out, d);
          return;
        }
      ns = (int64_t) n_out;
      sizes = g_new (int64_t, n_out);
      for (int64_t k = 0; k < ns; k++)
        sizes[k] = d / (int64_t) n_out;
    }
  if (ns != (int64_t) n_out || ns > TW_MAX_OUTPUTS)
    {
      tw_imp_problem (im, "%" G_GINT64_FORMAT " sizes for %" G_GSIZE_FORMAT " outputs", ns, n_out);
      return;
    }
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, "axis", ax);
  tw_attrs_set_ints (a, "sizes", (int) ns, sizes);
  tw_imp_emitn (im, "split", a, (const char *const[]){ x->ref, NULL }, (int) ns);
}

/* Expand of a computed value to a constant shape. */
void
tw_imp_expand (tw_imp *im)
{
  tw_imp_check_attrs (im, NULL);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "the input");
  g_autofree int64_t *shape = NULL;
  int64_t n = 0;
  if (x == NULL || !tw_imp_const_ints (im, tw_imp_input (im, 1), "shape", &shape, &n))
    return;
  if (!im->fixed)
    {
      tw_imp_problem (im, "an expand of a batched value (twb expands fixed shapes)");
      return;
    }
  if (n > TW_MAX_DIMS)
    {
      tw_imp_problem (im, "a rank-%" G_GINT64_FORMAT " shape", n);
      return;
    }
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_ints (a, "shape", (int) n, shape);
  tw_imp_emit1 (im, NULL, "expand", a, x);
}

void
tw_imp_gather (tw_imp *im)
{
  static const char *const known[] = { "axis", NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *data = tw_imp_input (im, 0), *idx = tw_imp_input (im, 1);
  int64_t axis = tw_imp_attr_int (im, "axis", 0);
  if (data == NULL || idx == NULL || im->failed)
    {
      if (!im->failed)
        tw_imp_problem (im, "needs data and indices");
      return;
    }
  if (data->kind == TW_IMP_CONST && idx->kind == TW_IMP_DYN && data->c->ndim == 2 && axis == 0 &&
      tw_dtype_is_float (data->c->dtype))
    {
      /* A lookup table: embedding, the table its weight. */
      tw_attrs *a = tw_attrs_new ();
      tw_attrs_set_int (a, "num_embeddings", data->c->shape[0]);
      tw_attrs_set_int (a, "embedding_dim", data->c->shape[1]);
      tw_node *n = tw_imp_emit1 (im, data, "embedding", a, idx);
      if (n)
        tw_imp_add_weight (im, n, "weight", tw_imp_as_f32 (data->c));
      return;
    }
  if (!im->fixed)
    {
      tw_imp_problem (im, "a gather of computed values with a batch dimension");
      return;
    }
  const char *dref = tw_imp_ref (im, data), *iref = dref ? tw_imp_ref (im, idx) : NULL;
  tw_imp_val dv = { .kind = TW_IMP_DYN, .ref = (char *) dref };
  tw_imp_val iv = { .kind = TW_IMP_DYN, .ref = (char *) iref };
  tw_tinfo di, ii;
  if (iref == NULL || !tw_imp_dyn_info (im, &dv, &di) || !tw_imp_dyn_info (im, &iv, &ii))
    return;
  int a = tw_imp_norm_axis (im, axis, di.ndim);
  if (a < 0)
    return;
  int r_out = di.ndim - 1 + ii.ndim;
  if (r_out > TW_MAX_DIMS || di.ndim > TW_MAX_DIMS - 1)
    {
      tw_imp_problem (im, "a rank-%d result", r_out);
      return;
    }
  /* indices [I...] → [1.., n, ..1] (n at the axis) → expanded to data's
   * shape with n at the axis → gather_elements → [data[:a], I..., data[a+1:]]. */
  int64_t n = 1;
  for (int d = 0; d < ii.ndim; d++)
    n *= ii.dims[d];
  int64_t col[TW_MAX_DIMS], full[TW_MAX_DIMS], out[TW_MAX_DIMS];
  for (int d = 0; d < di.ndim; d++)
    {
      col[d] = d == a ? n : 1;
      full[d] = d == a ? n : di.dims[d];
    }
  int k = 0;
  for (int d = 0; d < a; d++)
    out[k++] = di.dims[d];
  for (int d = 0; d < ii.ndim; d++)
    out[k++] = ii.dims[d];
  for (int d = a + 1; d < di.ndim; d++)
    out[k++] = di.dims[d];
  const char *c = tw_imp_reshape_full (im, &iv, &ii, di.ndim, col);
  if (c == NULL)
    return;
  tw_attrs *at = tw_attrs_new ();
  tw_attrs_set_ints (at, "shape", di.ndim, full);
  tw_node *e = tw_imp_emitn (im, "expand", at, (const char *const[]){ c, NULL }, 1);
  if (e == NULL)
    return;
  at = tw_attrs_new ();
  tw_attrs_set_int (at, "axis", a);
  tw_node *g =
    tw_imp_emitn (im, "gather_elements", at, (const char *const[]){ dref, e->id, NULL }, 1);
  if (g == NULL)
    return;
  tw_imp_val gv = { .kind = TW_IMP_DYN, .ref = g->id };
  tw_tinfo gi;
  tw_tinfo_set (&gi, di.dtype, di.ndim, full);
  tw_imp_reshape_full (im, &gv, &gi, r_out, out);
}

/* A pool's pads [b_h, b_w] and [e_h, e_w] over spatial dims hw (a 1-D
 * pool's as [0, p], hw [1, L]): explicit pads or auto_pad's SAME_UPPER /
 * SAME_LOWER / VALID, and with ceil_mode the end pads that make the last
 * partial window (ONNX's output size ceil ((in + pads - dk) / s) + 1). */
gboolean
tw_imp_pool_pads (tw_imp *im, int nsp, const int64_t hw[2], const int64_t k[2], const int64_t s[2],
                  const int64_t d[2], gboolean ceil_mode, int64_t b[2], int64_t e[2])
{
  int64_t p[4] = { 0, 0, 0, 0 };
  if (!tw_imp_attr_ints (im, "pads", 2 * nsp, 0, p, NULL))
    return FALSE;
  for (int i = 0; i < 2; i++)
    {
      int j = i - (2 - nsp); /* the ONNX spatial index of 2-D dim i; < 0: the added H */
      b[i] = j < 0 ? 0 : p[j];
      e[i] = j < 0 ? 0 : p[j + nsp];
    }
  gboolean upper =
    tw_imp_attr_string_is (im, "auto_pad", "SAME_UPPER") && tw_onnx_attr (im->n, "auto_pad");
  gboolean lower =
    tw_imp_attr_string_is (im, "auto_pad", "SAME_LOWER") && tw_onnx_attr (im->n, "auto_pad");
  if (!upper && !lower && !tw_imp_attr_string_is (im, "auto_pad", "NOTSET") &&
      !tw_imp_attr_string_is (im, "auto_pad", "VALID"))
    {
      g_autofree char *ap = tw_imp_attr_string_dup (im, "auto_pad");
      tw_imp_problem (im, "auto_pad %s", ap);
      return FALSE;
    }
  if (tw_imp_attr_string_is (im, "auto_pad", "VALID") && tw_onnx_attr (im->n, "auto_pad"))
    b[0] = b[1] = e[0] = e[1] = 0;
  for (int i = 0; i < 2; i++)
    {
      int64_t dk = (k[i] - 1) * d[i] + 1;
      if (upper || lower)
        {
          /* Output ceil (in / s); the pads that make it, the odd one at the end (upper). */
          int64_t out = (hw[i] + s[i] - 1) / s[i];
          int64_t total = MAX ((out - 1) * s[i] + dk - hw[i], 0);
          b[i] = upper ? total / 2 : total - total / 2;
          e[i] = total - b[i];
        }
      if (ceil_mode)
        {
          int64_t span = hw[i] + b[i] + e[i] - dk;
          if (span >= 0 && span % s[i] != 0)
            e[i] += s[i] - span % s[i];
        }
    }
  return TRUE;
}

/* BatchNormalization (inference) of computed scale, bias, mean and var:
 * (x - mean) / sqrt (var + eps) * scale + bias, each [C] as [C, 1, ...]. */
void
tw_imp_batch_norm_values (tw_imp *im, double eps)
{
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "X");
  tw_tinfo xi;
  if (x == NULL || !tw_imp_dyn_info (im, x, &xi))
    return;
  if (xi.ndim < 2)
    {
      tw_imp_problem (im, "X of rank %d", xi.ndim);
      return;
    }
  const char *p[4];
  for (int k = 0; k < 4; k++)
    {
      const char *r = tw_imp_ref_input (im, k + 1, "every parameter");
      if (r == NULL)
        return;
      tw_imp_val v = { .kind = TW_IMP_DYN, .ref = (char *) r };
      tw_tinfo info;
      if (!tw_imp_dyn_info (im, &v, &info))
        return;
      if (info.ndim != 1 || info.dims[0] != xi.dims[1])
        {
          tw_imp_problem (im, "parameter %d is not of [C] (C = %" G_GINT64_FORMAT ")", k + 1,
                          xi.dims[1]);
          return;
        }
      int64_t dims[TW_MAX_DIMS];
      dims[0] = xi.dims[1];
      for (int d = 1; d < xi.ndim - 1; d++)
        dims[d] = 1;
      p[k] = xi.ndim == 2 ? r : tw_imp_reshape_full (im, &v, &info, xi.ndim - 1, dims);
      if (p[k] == NULL)
        return;
    }
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_float (a, "value", tw_imp_short_double ((float) eps));
  tw_node *ve = tw_imp_emitn (im, "add_scalar", a, (const char *const[]){ p[3], NULL }, 1);
  tw_node *sd =
    ve ? tw_imp_emitn (im, "sqrt", NULL, (const char *const[]){ ve->id, NULL }, 1) : NULL;
  tw_node *c =
    sd ? tw_imp_emitn (im, "sub", NULL, (const char *const[]){ x->ref, p[2], NULL }, 1) : NULL;
  tw_node *nrm =
    c ? tw_imp_emitn (im, "div", NULL, (const char *const[]){ c->id, sd->id, NULL }, 1) : NULL;
  tw_node *sc =
    nrm ? tw_imp_emitn (im, "mul", NULL, (const char *const[]){ nrm->id, p[0], NULL }, 1) : NULL;
  if (sc)
    tw_imp_emitn (im, "add", NULL, (const char *const[]){ sc->id, p[1], NULL }, 1);
}
