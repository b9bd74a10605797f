/* index-more.c — index and selection ops of ONNX graphs:
 *
 *   argmin          (x) -> i64 index of the smallest element along axis     ArgMin
 *   trilu           (x, [k]) -> x with the upper or lower triangle kept     Trilu
 *   gather_elements (data, indices) -> data picked along axis per index     GatherElements
 *   cumsum          (x, [axis]) -> running sum along axis (exclusive, reverse)  CumSum
 *   hardmax         (x) -> 1 at the first maximum along axis, 0 elsewhere   Hardmax
 *   scatter_elements (data, indices, updates) -> data with updates written  ScatterElements
 *                   (or added, multiplied) along axis at the indices
 *   gather_nd       (data, indices) -> slices of data at index tuples       GatherND
 *   scatter_nd      (data, indices, updates) -> data with slices written    ScatterND
 *                   (or added, multiplied) at the index tuples
 *   eye_like        (x) -> ones on diagonal k of x's 2-D shape, zeros        EyeLike
 *   topk            (x) -> the k largest (or smallest) along axis, and their  TopK
 *                   i64 indices (ties: the lower index first)
 *   gather_elements_grad (data, indices, dy) -> dx (internal: dy added at the indices)
 *   gather_nd_grad  (data, indices, dy) -> dx (internal)
 *
 * argmin keeps the first minimum, or the last with select_last_index, and
 * counts a NaN as the minimum (as torch.argmin).  Indices of gather_elements
 * may be negative (counted from the end of the axis); one outside the axis is
 * an error naming its position.  trilu and gather_elements copy elements of
 * any dtype; cumsum sums floats in double and integers in int64.  trilu's
 * diagonal and cumsum's axis may come as an optional second input (an
 * integer scalar read at run time, as ONNX graphs feed them; the output's
 * shape does not depend on it), overriding the attribute. */
#define G_LOG_DOMAIN "twb-ops-index"

#include "engine/ops/nn-private.h"

#include <math.h>
#include <string.h>

static const char *const names_x[] = { "x", NULL };
static const char *const names_trilu[] = { "x", "k", NULL };
static const char *const names_cumsum[] = { "x", "axis", NULL };
static const char *const names_gather[] = { "data", "indices", NULL };
static const char *const names_gather_grad[] = { "data", "indices", "dy", NULL };
static const char *const names_scatter[] = { "data", "indices", "updates", NULL };

static gboolean
is_index_dtype (tw_dtype dt)
{
  return dt == TW_I64 || dt == TW_I32;
}

static inline int64_t
index_at (const tw_tensor *t, int64_t i)
{
  return t->dtype == TW_I64 ? tw_tensor_i64 (t)[i] : (int64_t) tw_tensor_i32 (t)[i];
}

static int
norm_axis (const tw_attrs *a, const char *name, int64_t def, int ndim)
{
  int64_t ax = tw_attrs_get_int (a, name, def);
  return (int) (ax < 0 ? ax + ndim : ax);
}

/* An optional integer scalar input i (one element) checked at infer time. */
static gboolean
check_scalar_input (const char *op, const char *what, const tw_tinfo *in, int n_in, int i,
                    GError **error)
{
  if (n_in <= i)
    return TRUE;
  gboolean sym;
  if (is_index_dtype (in[i].dtype) && tw_tinfo_numel (&in[i], &sym) == 1 && !sym)
    return TRUE;
  g_autofree char *s = tw_tinfo_to_string (&in[i]);
  return tw_nn_shape_error (error, "%s expects %s as an i64 or i32 scalar, got %s", op, what, s);
}

/* The attribute name, or input i's value when given. */
static int64_t
int_from (const tw_attrs *a, const char *name, int64_t def, tw_tensor *const *in, int n_in, int i)
{
  return n_in > i ? index_at (in[i], 0) : tw_attrs_get_int (a, name, def);
}

/* ---- argmin ---------------------------------------------------------------------- */

static gboolean
argmin_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  return tw_nn_arg_infer ("argmin", a, in, 0, TRUE, out, error);
}

#define DEFINE_ARGMIN(T, SFX)                                                                \
  static void argmin_##SFX (const T *x, int64_t *idx, int64_t outer, int64_t L, int64_t inner,\
                            gboolean last)                                                  \
  {                                                                                         \
    for (int64_t r = 0; r < outer * inner; r++)                                             \
      {                                                                                     \
        const T *p = x + (r / inner) * L * inner + r % inner;                               \
        int64_t best = 0;                                                                   \
        T bv = p[0];                                                                        \
        for (int64_t l = 1; l < L && !isnan (bv); l++)                                      \
          {                                                                                 \
            T v = p[l * inner];                                                             \
            if (v < bv || isnan (v) || (last && v == bv))                                   \
              {                                                                             \
                bv = v;                                                                     \
                best = l;                                                                   \
              }                                                                             \
          }                                                                                 \
        idx[r] = best;                                                                      \
      }                                                                                     \
  }

DEFINE_ARGMIN (float, f32)
DEFINE_ARGMIN (double, f64)

static gboolean
argmin_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                tw_tensor *const *out, GError **error)
{
  int axis = norm_axis (a, "axis", 0, in[0]->ndim);
  gboolean last = tw_attrs_get_bool (a, "select_last_index", FALSE);
  int64_t outer, L, inner;
  tw_nn_split_axis (in[0], axis, &outer, &L, &inner);
  if (L == 0)
    return tw_nn_shape_error (error, "argmin over an empty dimension");
  if (in[0]->dtype == TW_F32)
    argmin_f32 (tw_tensor_f32 (in[0]), tw_tensor_i64 (out[0]), outer, L, inner, last);
  else
    argmin_f64 (tw_tensor_f64 (in[0]), tw_tensor_i64 (out[0]), outer, L, inner, last);
  return TRUE;
}

/* ---- trilu ------------------------------------------------------------------------ */

static gboolean
trilu_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  if (in[0].ndim < 2)
    {
      g_autofree char *s = tw_tinfo_to_string (&in[0]);
      return tw_nn_shape_error (error, "trilu expects an input of rank 2 or more, got %s", s);
    }
  if (!check_scalar_input ("trilu", "k", in, n_in, 1, error))
    return FALSE;
  out[0] = in[0];
  return TRUE;
}

/* Keeps x[..., i, j] where j - i >= k (upper) or j - i <= k (lower). */
static gboolean
trilu_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
               tw_tensor *const *out, GError **error)
{
  const tw_tensor *x = in[0];
  int64_t R = x->shape[x->ndim - 2], C = x->shape[x->ndim - 1];
  int64_t mats = R * C > 0 ? tw_tensor_numel (x) / (R * C) : 0;
  int64_t k = int_from (a, "k", 0, in, n_in, 1);
  gboolean upper = tw_attrs_get_bool (a, "upper", TRUE);
  size_t es = tw_dtype_size (x->dtype);
  const char *src = tw_tensor_data (x);
  char *dst = tw_tensor_data (out[0]);
  for (int64_t m = 0; m < mats; m++)
    for (int64_t i = 0; i < R; i++)
      for (int64_t j = 0; j < C; j++)
        {
          int64_t off = (m * R + i) * C + j;
          gboolean keep = upper ? j - i >= k : j - i <= k;
          if (keep)
            memcpy (dst + off * es, src + off * es, es);
          else
            memset (dst + off * es, 0, es);
        }
  return TRUE;
}

static gboolean
trilu_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
                tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  tw_val *args[2] = { gout[0], n_in > 1 ? in[1] : NULL };
  if (needs[0])
    gin[0] = tw_emit_op (e, "trilu", a, n_in, args);
  return !needs[0] || gin[0] != NULL;
}

/* ---- gather_elements ----------------------------------------------------------------- */

static gboolean
gather_check (const char *op, const tw_attrs *a, const tw_tinfo *data, const tw_tinfo *idx,
              int *axis, GError **error)
{
  g_autofree char *sd = tw_tinfo_to_string (data);
  g_autofree char *si = tw_tinfo_to_string (idx);
  if (!is_index_dtype (idx->dtype))
    return tw_nn_shape_error (error, "%s expects i64 or i32 indices, got %s", op, si);
  if (data->ndim != idx->ndim || data->ndim < 1)
    return tw_nn_shape_error (error, "%s expects indices of the data's rank: data %s, indices %s",
                              op, sd, si);
  if (!tw_nn_axis (op, tw_attrs_get_int (a, "axis", 0), data, axis, error))
    return FALSE;
  for (int d = 0; d < data->ndim; d++)
    if (d != *axis && idx->dims[d] != data->dims[d]
        && !(idx->dims[d] != TW_DIM_N && data->dims[d] != TW_DIM_N && idx->dims[d] <= data->dims[d]))
      return tw_nn_shape_error (error,
                                "%s: indices %s do not fit data %s in dim %d (at most the data's "
                                "size off the axis)", op, si, sd, d);
  return TRUE;
}

static gboolean
gather_elements_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                       GError **error)
{
  int axis;
  if (!gather_check ("gather_elements", a, &in[0], &in[1], &axis, error))
    return FALSE;
  out[0] = in[1];
  out[0].dtype = in[0].dtype;
  return TRUE;
}

/* For each element e of indices (row-major): the offset of the data
 * element it picks, into off[]; FALSE naming the first bad index. */
static gboolean
gather_offsets (const tw_tensor *data, const tw_tensor *idx, int axis, int64_t *off,
                GError **error)
{
  int nd = data->ndim;
  int64_t dst[TW_MAX_DIMS], st = 1;
  for (int d = nd - 1; d >= 0; d--)
    {
      dst[d] = st;
      st *= data->shape[d];
    }
  int64_t pos[TW_MAX_DIMS] = { 0 }, n = tw_tensor_numel (idx), L = data->shape[axis];
  for (int64_t e = 0; e < n; e++)
    {
      int64_t v = index_at (idx, e), j = v < 0 ? v + L : v;
      if (j < 0 || j >= L)
        {
          g_autofree char *where = tw_nn_index_string (nd, idx->shape, e);
          return tw_nn_shape_error (error,
                                    "gather_elements: index %" G_GINT64_FORMAT " at %s is outside "
                                    "axis %d of size %" G_GINT64_FORMAT, v, where, axis, L);
        }
      int64_t o = 0;
      for (int d = 0; d < nd; d++)
        o += (d == axis ? j : pos[d]) * dst[d];
      off[e] = o;
      for (int d = nd - 1; d >= 0; d--)
        {
          if (++pos[d] < idx->shape[d])
            break;
          pos[d] = 0;
        }
    }
  return TRUE;
}

static gboolean
gather_elements_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                         tw_tensor *const *out, GError **error)
{
  int axis = norm_axis (a, "axis", 0, in[0]->ndim);
  int64_t n = tw_tensor_numel (in[1]);
  int64_t *off = tw_scratch (ctx, MAX (n, 1) * sizeof (int64_t));
  if (!gather_offsets (in[0], in[1], axis, off, error))
    return FALSE;
  size_t es = tw_dtype_size (in[0]->dtype);
  const char *src = tw_tensor_data (in[0]);
  char *dst = tw_tensor_data (out[0]);
  for (int64_t e = 0; e < n; e++)
    memcpy (dst + e * es, src + off[e] * es, es);
  return TRUE;
}

static gboolean
gather_elements_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                          tw_val *const *out, tw_val *const *gout, const gboolean *needs,
                          tw_val **gin)
{
  if (needs[0])
    {
      gin[0] = tw_emit3 (e, "gather_elements_grad", a, in[0], in[1], gout[0]);
      if (gin[0] == NULL)
        return FALSE;
    }
  return TRUE;
}

static gboolean
gather_elements_grad_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                            GError **error)
{
  int axis;
  if (!gather_check ("gather_elements_grad", a, &in[0], &in[1], &axis, error)
      || !tw_nn_check_float ("gather_elements_grad", "data", &in[0], error))
    return FALSE;
  tw_tinfo want = in[1];
  want.dtype = in[0].dtype;
  if (!tw_tinfo_equal (&want, &in[2]))
    {
      g_autofree char *w = tw_tinfo_to_string (&want);
      g_autofree char *g = tw_tinfo_to_string (&in[2]);
      return tw_nn_shape_error (error, "gather_elements_grad expects dy %s, got %s", w, g);
    }
  out[0] = in[0];
  return TRUE;
}

static gboolean
gather_elements_grad_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in,
                              int n_in, tw_tensor *const *out, GError **error)
{
  int axis = norm_axis (a, "axis", 0, in[0]->ndim);
  int64_t n = tw_tensor_numel (in[1]);
  int64_t *off = tw_scratch (ctx, MAX (n, 1) * sizeof (int64_t));
  if (!gather_offsets (in[0], in[1], axis, off, error))
    return FALSE;
  tw_tensor_fill (out[0], 0.0);
  if (out[0]->dtype == TW_F32)
    for (int64_t e = 0; e < n; e++)
      tw_tensor_f32 (out[0])[off[e]] += tw_tensor_f32 (in[2])[e];
  else
    for (int64_t e = 0; e < n; e++)
      tw_tensor_f64 (out[0])[off[e]] += tw_tensor_f64 (in[2])[e];
  return TRUE;
}

/* ---- cumsum --------------------------------------------------------------------------- */

static gboolean
cumsum_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  int axis;
  g_autofree char *s = tw_tinfo_to_string (&in[0]);
  if (!tw_dtype_is_float (in[0].dtype) && !is_index_dtype (in[0].dtype))
    return tw_nn_shape_error (error, "cumsum expects f32, f64, i32 or i64, got %s", s);
  if (!check_scalar_input ("cumsum", "the axis", in, n_in, 1, error)
      || (n_in < 2 && !tw_nn_axis ("cumsum", tw_attrs_get_int (a, "axis", 0), &in[0], &axis, error)))
    return FALSE;
  out[0] = in[0];
  return TRUE;
}

static gboolean
cumsum_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                tw_tensor *const *out, GError **error)
{
  const tw_tensor *x = in[0];
  int64_t ax = int_from (a, "axis", 0, in, n_in, 1);
  if (ax < -x->ndim || ax >= x->ndim)
    return tw_nn_shape_error (error, "cumsum: axis %" G_GINT64_FORMAT " is outside a rank-%d input",
                              ax, x->ndim);
  int axis = (int) (ax < 0 ? ax + x->ndim : ax);
  gboolean excl = tw_attrs_get_bool (a, "exclusive", FALSE);
  gboolean rev = tw_attrs_get_bool (a, "reverse", FALSE);
  int64_t outer, L, inner;
  tw_nn_split_axis (x, axis, &outer, &L, &inner);
  gboolean fl = tw_dtype_is_float (x->dtype);
  for (int64_t r = 0; r < outer * inner; r++)
    {
      int64_t base = (r / inner) * L * inner + r % inner;
      double sf = 0;
      int64_t si = 0;
      for (int64_t t = 0; t < L; t++)
        {
          int64_t o = base + (rev ? L - 1 - t : t) * inner;
          double vf = 0;
          int64_t vi = 0;
          if (fl)
            vf = tw_tensor_get_flat (x, o);
          else
            vi = index_at (x, o);
          if (!excl)
            sf += vf, si += vi;
          if (x->dtype == TW_F32)
            tw_tensor_f32 (out[0])[o] = (float) sf;
          else if (x->dtype == TW_F64)
            tw_tensor_f64 (out[0])[o] = sf;
          else if (x->dtype == TW_I64)
            tw_tensor_i64 (out[0])[o] = si;
          else
            tw_tensor_i32 (out[0])[o] = (int32_t) si;
          if (excl)
            sf += vf, si += vi;
        }
    }
  return TRUE;
}

/* The adjoint of a running sum is the running sum the other way. */
static gboolean
cumsum_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
                 tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  tw_attrs *b = tw_attrs_copy (a);
  tw_attrs_set_bool (b, "reverse", !tw_attrs_get_bool (a, "reverse", FALSE));
  tw_val *args[2] = { gout[0], n_in > 1 ? in[1] : NULL };
  if (needs[0])
    gin[0] = tw_emit_op (e, "cumsum", b, n_in, args);
  tw_attrs_free (b);
  return !needs[0] || gin[0] != NULL;
}

/* ---- hardmax ------------------------------------------------------------------------------ */

static gboolean
hardmax_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  int axis;
  if (!tw_nn_check_float ("hardmax", "input", &in[0], error)
      || !tw_nn_axis ("hardmax", tw_attrs_get_int (a, "axis", -1), &in[0], &axis, error))
    return FALSE;
  out[0] = in[0];
  return TRUE;
}

static gboolean
hardmax_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                 tw_tensor *const *out, GError **error)
{
  const tw_tensor *x = in[0];
  int axis = norm_axis (a, "axis", -1, x->ndim);
  int64_t outer, L, inner;
  tw_nn_split_axis (x, axis, &outer, &L, &inner);
  tw_tensor_fill (out[0], 0.0);
  for (int64_t r = 0; r < outer * inner; r++)
    {
      int64_t base = (r / inner) * L * inner + r % inner, best = 0;
      double bv = L > 0 ? tw_tensor_get_flat (x, base) : 0;
      for (int64_t l = 1; l < L; l++)
        {
          double v = tw_tensor_get_flat (x, base + l * inner);
          if (v > bv)
            bv = v, best = l;
        }
      if (L > 0)
        tw_tensor_set_flat (out[0], base + best * inner, 1.0);
    }
  return TRUE;
}

/* ---- scatter_elements ------------------------------------------------------------------- */

static const char *const scatter_reductions[] = { "none", "add", "mul", NULL };

static gboolean
scatter_elements_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                        GError **error)
{
  int axis;
  if (!gather_check ("scatter_elements", a, &in[0], &in[1], &axis, error))
    return FALSE;
  tw_tinfo want = in[1];
  want.dtype = in[0].dtype;
  if (!tw_tinfo_equal (&want, &in[2]))
    {
      g_autofree char *w = tw_tinfo_to_string (&want);
      g_autofree char *g = tw_tinfo_to_string (&in[2]);
      return tw_nn_shape_error (error, "scatter_elements expects updates %s (shaped as indices, "
                                "typed as data), got %s", w, g);
    }
  out[0] = in[0];
  return TRUE;
}

static gboolean
scatter_elements_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                          tw_tensor *const *out, GError **error)
{
  int axis = norm_axis (a, "axis", 0, in[0]->ndim);
  const char *red = tw_attrs_get_string (a, "reduction", "none");
  int64_t n = tw_tensor_numel (in[1]);
  int64_t *off = tw_scratch (ctx, MAX (n, 1) * sizeof (int64_t));
  if (!gather_offsets (in[0], in[1], axis, off, error))
    return FALSE;
  size_t es = tw_dtype_size (in[0]->dtype);
  memcpy (tw_tensor_data (out[0]), tw_tensor_data (in[0]), tw_tensor_numel (in[0]) * es);
  if (strcmp (red, "none") == 0)
    {
      const char *src = tw_tensor_data (in[2]);
      char *dst = tw_tensor_data (out[0]);
      for (int64_t e = 0; e < n; e++)
        memcpy (dst + off[e] * es, src + e * es, es);
      return TRUE;
    }
  gboolean add = strcmp (red, "add") == 0;
  for (int64_t e = 0; e < n; e++)
    {
      double v = tw_tensor_get_flat (out[0], off[e]), u = tw_tensor_get_flat (in[2], e);
      tw_tensor_set_flat (out[0], off[e], add ? v + u : v * u);
    }
  return TRUE;
}

/* none: data's gradient is dy with the written positions zeroed, the
 * updates' is dy read there; add: dy, and dy read there. */
static gboolean
scatter_elements_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                           tw_val *const *out, tw_val *const *gout, const gboolean *needs,
                           tw_val **gin)
{
  const char *red = tw_attrs_get_string (a, "reduction", "none");
  gboolean none = strcmp (red, "none") == 0;
  if (!none && strcmp (red, "add") != 0)
    return FALSE;             /* mul: not written */
  tw_attrs *ga = tw_attrs_new ();
  tw_attrs_set_int (ga, "axis", tw_attrs_get_int (a, "axis", 0));
  gboolean ok = TRUE;
  if (needs[0])
    {
      tw_val *z = none ? tw_emit1 (e, "zeros_like", NULL, in[2]) : NULL;
      gin[0] = none ? (z ? tw_emit3 (e, "scatter_elements", ga, gout[0], in[1], z) : NULL)
                    : gout[0];
      ok &= gin[0] != NULL;
    }
  if (needs[2])
    {
      gin[2] = tw_emit2 (e, "gather_elements", ga, gout[0], in[1]);
      ok &= gin[2] != NULL;
    }
  tw_attrs_free (ga);
  return ok;
}

/* ---- gather_nd --------------------------------------------------------------------------- */

/* data [B..., D...], indices [B..., I..., k] with b = batch_dims leading
 * dims shared; output [B..., I..., D[b + k]...]. */
static gboolean
gather_nd_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  const tw_tinfo *d = &in[0], *ix = &in[1];
  int64_t b = tw_attrs_get_int (a, "batch_dims", 0);
  g_autofree char *sd = tw_tinfo_to_string (d);
  g_autofree char *si = tw_tinfo_to_string (ix);
  if (!is_index_dtype (ix->dtype))
    return tw_nn_shape_error (error, "gather_nd expects i64 or i32 indices, got %s", si);
  if (b < 0 || ix->ndim < b + 1 || d->ndim < b + 1)
    return tw_nn_shape_error (error, "gather_nd: batch_dims %" G_GINT64_FORMAT " does not fit data "
                              "%s and indices %s", b, sd, si);
  int64_t k = ix->dims[ix->ndim - 1];
  if (k == TW_DIM_N || k < 1 || k > d->ndim - b)
    return tw_nn_shape_error (error, "gather_nd: index tuples of %" G_GINT64_FORMAT " entries for "
                              "data %s past %" G_GINT64_FORMAT " batch dims", k, sd, b);
  for (int i = 0; i < b; i++)
    if (ix->dims[i] != d->dims[i])
      return tw_nn_shape_error (error, "gather_nd: the %" G_GINT64_FORMAT " batch dims of data %s "
                                "and indices %s differ", b, sd, si);
  out[0].dtype = d->dtype;
  out[0].ndim = 0;
  for (int i = 0; i < ix->ndim - 1; i++)
    out[0].dims[out[0].ndim++] = ix->dims[i];
  for (int i = (int) (b + k); i < d->ndim; i++)
    out[0].dims[out[0].ndim++] = d->dims[i];
  if (out[0].ndim > TW_MAX_DIMS)
    return tw_nn_shape_error (error, "gather_nd: the output of data %s at indices %s has more "
                              "than %d dims", sd, si, TW_MAX_DIMS);
  return TRUE;
}

/* Offsets (in data) of the slices the index tuples pick, into off[]
 * (one per tuple); *slice the slice's element count. */
static gboolean
gather_nd_offsets (const tw_attrs *a, const tw_tensor *d, const tw_tensor *ix, int64_t *off,
                   int64_t *slice, GError **error)
{
  int b = (int) tw_attrs_get_int (a, "batch_dims", 0);
  int64_t k = ix->shape[ix->ndim - 1], tuples = k > 0 ? tw_tensor_numel (ix) / k : 0;
  int64_t per_batch = 1, bsize = 1, st[TW_MAX_DIMS], acc = 1;
  for (int i = d->ndim - 1; i >= 0; i--)
    {
      st[i] = acc;
      acc *= d->shape[i];
    }
  *slice = 1;
  for (int i = b + (int) k; i < d->ndim; i++)
    *slice *= d->shape[i];
  for (int i = 0; i < b; i++)
    bsize *= d->shape[i];
  per_batch = bsize > 0 ? tuples / bsize : 0;
  for (int64_t t = 0; t < tuples; t++)
    {
      int64_t bi = per_batch > 0 ? t / per_batch : 0, o = bi * (b > 0 ? st[b - 1] : 0);
      for (int64_t j = 0; j < k; j++)
        {
          int dim = b + (int) j;
          int64_t v = index_at (ix, t * k + j), L = d->shape[dim], w = v < 0 ? v + L : v;
          if (w < 0 || w >= L)
            {
              g_autofree char *where = tw_nn_index_string (ix->ndim, ix->shape, t * k + j);
              return tw_nn_shape_error (error, "gather_nd: index %" G_GINT64_FORMAT " at %s is "
                                        "outside dim %d of size %" G_GINT64_FORMAT, v, where, dim, L);
            }
          o += w * st[dim];
        }
      off[t] = o;
    }
  return TRUE;
}

static gboolean
gather_nd_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                   tw_tensor *const *out, GError **error)
{
  int64_t k = in[1]->shape[in[1]->ndim - 1], tuples = tw_tensor_numel (in[1]) / k, slice;
  int64_t *off = tw_scratch (ctx, MAX (tuples, 1) * sizeof (int64_t));
  if (!gather_nd_offsets (a, in[0], in[1], off, &slice, error))
    return FALSE;
  size_t es = tw_dtype_size (in[0]->dtype);
  const char *src = tw_tensor_data (in[0]);
  char *dst = tw_tensor_data (out[0]);
  for (int64_t t = 0; t < tuples; t++)
    memcpy (dst + t * slice * es, src + off[t] * es, slice * es);
  return TRUE;
}

static gboolean
gather_nd_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                    tw_val *const *out, tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  if (needs[0])
    gin[0] = tw_emit3 (e, "gather_nd_grad", a, in[0], in[1], gout[0]);
  return !needs[0] || gin[0] != NULL;
}

static gboolean
gather_nd_grad_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                      GError **error)
{
  tw_tinfo y;
  if (!gather_nd_infer (a, in, 2, &y, error)
      || !tw_nn_check_float ("gather_nd_grad", "data", &in[0], error))
    return FALSE;
  if (!tw_tinfo_equal (&y, &in[2]))
    {
      g_autofree char *w = tw_tinfo_to_string (&y);
      g_autofree char *g = tw_tinfo_to_string (&in[2]);
      return tw_nn_shape_error (error, "gather_nd_grad expects dy %s, got %s", w, g);
    }
  out[0] = in[0];
  return TRUE;
}

static gboolean
gather_nd_grad_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                        tw_tensor *const *out, GError **error)
{
  int64_t k = in[1]->shape[in[1]->ndim - 1], tuples = tw_tensor_numel (in[1]) / k, slice;
  int64_t *off = tw_scratch (ctx, MAX (tuples, 1) * sizeof (int64_t));
  if (!gather_nd_offsets (a, in[0], in[1], off, &slice, error))
    return FALSE;
  tw_tensor_fill (out[0], 0.0);
  for (int64_t t = 0; t < tuples; t++)
    for (int64_t j = 0; j < slice; j++)
      if (out[0]->dtype == TW_F32)
        tw_tensor_f32 (out[0])[off[t] + j] += tw_tensor_f32 (in[2])[t * slice + j];
      else
        tw_tensor_f64 (out[0])[off[t] + j] += tw_tensor_f64 (in[2])[t * slice + j];
  return TRUE;
}

/* ---- scatter_nd ----------------------------------------------------------------------------- */

/* updates are shaped as gather_nd's output (batch_dims 0). */
static gboolean
scatter_nd_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  tw_tinfo want;
  if (!gather_nd_infer (NULL, in, 2, &want, error))
    return FALSE;
  if (!tw_tinfo_equal (&want, &in[2]))
    {
      g_autofree char *w = tw_tinfo_to_string (&want);
      g_autofree char *g = tw_tinfo_to_string (&in[2]);
      return tw_nn_shape_error (error, "scatter_nd expects updates %s (the slices the indices "
                                "name), got %s", w, g);
    }
  out[0] = in[0];
  return TRUE;
}

static gboolean
scatter_nd_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                    tw_tensor *const *out, GError **error)
{
  int64_t k = in[1]->shape[in[1]->ndim - 1], tuples = tw_tensor_numel (in[1]) / k, slice;
  int64_t *off = tw_scratch (ctx, MAX (tuples, 1) * sizeof (int64_t));
  if (!gather_nd_offsets (NULL, in[0], in[1], off, &slice, error))
    return FALSE;
  const char *red = tw_attrs_get_string (a, "reduction", "none");
  size_t es = tw_dtype_size (in[0]->dtype);
  memcpy (tw_tensor_data (out[0]), tw_tensor_data (in[0]), tw_tensor_numel (in[0]) * es);
  char *dst = tw_tensor_data (out[0]);
  const char *src = tw_tensor_data (in[2]);
  gboolean none = strcmp (red, "none") == 0, add = strcmp (red, "add") == 0;
  for (int64_t t = 0; t < tuples; t++)
    if (none)
      memcpy (dst + off[t] * es, src + t * slice * es, slice * es);
    else
      for (int64_t j = 0; j < slice; j++)
        {
          double v = tw_tensor_get_flat (out[0], off[t] + j);
          double u = tw_tensor_get_flat (in[2], t * slice + j);
          tw_tensor_set_flat (out[0], off[t] + j, add ? v + u : v * u);
        }
  return TRUE;
}

static gboolean
scatter_nd_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                     tw_val *const *out, tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  const char *red = tw_attrs_get_string (a, "reduction", "none");
  gboolean none = strcmp (red, "none") == 0;
  if (!none && strcmp (red, "add") != 0)
    return FALSE;             /* mul: not written */
  gboolean ok = TRUE;
  if (needs[0])
    {
      tw_val *z = none ? tw_emit1 (e, "zeros_like", NULL, in[2]) : NULL;
      gin[0] = none ? (z ? tw_emit3 (e, "scatter_nd", NULL, gout[0], in[1], z) : NULL) : gout[0];
      ok &= gin[0] != NULL;
    }
  if (needs[2])
    {
      gin[2] = tw_emit2 (e, "gather_nd", NULL, gout[0], in[1]);
      ok &= gin[2] != NULL;
    }
  return ok;
}

/* ---- eye_like ------------------------------------------------------------------------------ */

static const char *const eye_dtypes[] = { "f32", "f64", "i32", "i64", "u8", NULL };

static gboolean
eye_like_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  if (in[0].ndim != 2)
    {
      g_autofree char *s = tw_tinfo_to_string (&in[0]);
      return tw_nn_shape_error (error, "eye_like expects a 2-D input, got %s", s);
    }
  out[0] = in[0];
  const char *to = tw_attrs_get_string (a, "to", NULL);
  if (to && !tw_dtype_from_name (to, &out[0].dtype))
    return tw_nn_shape_error (error, "eye_like: unknown dtype '%s'", to);
  return TRUE;
}

static gboolean
eye_like_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                  tw_tensor *const *out, GError **error)
{
  int64_t R = out[0]->shape[0], C = out[0]->shape[1], k = tw_attrs_get_int (a, "k", 0);
  tw_tensor_fill (out[0], 0.0);
  for (int64_t i = 0; i < R; i++)
    if (i + k >= 0 && i + k < C)
      tw_tensor_set_flat (out[0], i * C + i + k, 1.0);
  return TRUE;
}

/* The output depends on x's shape only. */
static gboolean
eye_like_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                   tw_val *const *out, tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  if (needs[0])
    gin[0] = tw_emit1 (e, "zeros_like", NULL, in[0]);
  return !needs[0] || gin[0] != NULL;
}

/* ---- topk ---------------------------------------------------------------------------------- */

static gboolean
topk_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  int axis;
  int64_t k = tw_attrs_get_int (a, "k", 1);
  if (!tw_nn_check_float ("topk", "input", &in[0], error)
      || !tw_nn_axis ("topk", tw_attrs_get_int (a, "axis", -1), &in[0], &axis, error))
    return FALSE;
  if (k < 0 || (in[0].dims[axis] != TW_DIM_N && k > in[0].dims[axis]))
    {
      g_autofree char *s = tw_tinfo_to_string (&in[0]);
      return tw_nn_shape_error (error, "topk: k = %" G_GINT64_FORMAT " for axis %d of %s", k, axis,
                                s);
    }
  out[0] = in[0];
  out[0].dims[axis] = k;
  out[1] = out[0];
  out[1].dtype = TW_I64;
  return TRUE;
}

typedef struct
{
  const tw_tensor *x;
  int64_t base, inner;
  gboolean largest;
} topk_row;

/* Larger (or smaller) first, then the lower index; NaN as the largest. */
static gint
topk_cmp (gconstpointer pa, gconstpointer pb, gpointer data)
{
  const topk_row *r = data;
  int64_t ia = *(const int64_t *) pa, ib = *(const int64_t *) pb;
  double va = tw_tensor_get_flat (r->x, r->base + ia * r->inner);
  double vb = tw_tensor_get_flat (r->x, r->base + ib * r->inner);
  if (isnan (va) || isnan (vb))
    {
      if (isnan (va) != isnan (vb))
        return (isnan (va) ? -1 : 1) * (r->largest ? 1 : -1);
    }
  else if (va != vb)
    return (va > vb ? -1 : 1) * (r->largest ? 1 : -1);
  return ia < ib ? -1 : ia > ib;
}

static gboolean
topk_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
              tw_tensor *const *out, GError **error)
{
  const tw_tensor *x = in[0];
  int axis = norm_axis (a, "axis", -1, x->ndim);
  int64_t k = tw_attrs_get_int (a, "k", 1), outer, L, inner;
  tw_nn_split_axis (x, axis, &outer, &L, &inner);
  if (k > L)                /* a batch axis, unknown at infer time */
    return tw_nn_shape_error (error, "topk: k = %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT
                              " elements along axis %d", k, L, axis);
  topk_row r = { x, 0, inner, tw_attrs_get_bool (a, "largest", TRUE) };
  int64_t *order = tw_scratch (ctx, MAX (L, 1) * sizeof (int64_t));
  for (int64_t q = 0; q < outer * inner; q++)
    {
      r.base = (q / inner) * L * inner + q % inner;
      for (int64_t l = 0; l < L; l++)
        order[l] = l;
      g_qsort_with_data (order, (gint) L, sizeof *order, topk_cmp, &r);    /* stable */
      int64_t ob = (q / inner) * k * inner + q % inner;
      for (int64_t j = 0; j < k; j++)
        {
          tw_tensor_set_flat (out[0], ob + j * inner, tw_tensor_get_flat (x, r.base + order[j] * inner));
          tw_tensor_i64 (out[1])[ob + j * inner] = order[j];
        }
    }
  return TRUE;
}

/* The values' gradient goes back to the positions they came from. */
static gboolean
topk_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
               tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  if (!needs[0])
    return TRUE;
  if (gout[0] == NULL)
    gin[0] = tw_emit1 (e, "zeros_like", NULL, in[0]);
  else
    {
      tw_attrs *ga = tw_attrs_new ();
      tw_attrs_set_int (ga, "axis", tw_attrs_get_int (a, "axis", -1));
      gin[0] = tw_emit3 (e, "gather_elements_grad", ga, in[0], out[1], gout[0]);
      tw_attrs_free (ga);
    }
  return gin[0] != NULL;
}

/* ---- costs and definitions ------------------------------------------------------------------ */

static void
copy_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
           tw_cost *cost)
{
  double n = (double) tw_tinfo_numel (&out[0], NULL), es = tw_dtype_size (out[0].dtype);
  cost->flops = 0;
  cost->bytes_read = 0;
  for (int i = 0; i < n_in; i++)
    cost->bytes_read += (double) tw_tinfo_numel (&in[i], NULL) * tw_dtype_size (in[i].dtype);
  cost->bytes_written = n * es;
}

static void
scan_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
           tw_cost *cost)
{
  copy_cost (a, in, n_in, out, n_out, cost);
  cost->flops = (double) tw_tinfo_numel (&in[0], NULL);
}

static const tw_attr_spec argmin_attrs[] = {
  { "axis", TW_ATTR_INT, "0", FALSE, "dimension to search" },
  { "keepdims", TW_ATTR_BOOL, "true", FALSE, "keep the searched dimension with size 1" },
  { "select_last_index", TW_ATTR_BOOL, "false", FALSE, "the last minimum rather than the first" },
  { NULL }
};
static const tw_attr_spec trilu_attrs[] = {
  { "upper", TW_ATTR_BOOL, "true", FALSE, "keep the upper triangle (else the lower)" },
  { "k", TW_ATTR_INT, "0", FALSE,
    "diagonal offset: keep j - i >= k (upper) or <= k (lower); input k overrides it" },
  { NULL }
};
static const tw_attr_spec axis0_attrs[] = {
  { "axis", TW_ATTR_INT, "0", FALSE, "dimension to index (negative from the end)" },
  { NULL }
};
static const tw_attr_spec cumsum_attrs[] = {
  { "axis", TW_ATTR_INT, "0", FALSE,
    "dimension to sum along (negative from the end); input axis overrides it" },
  { "exclusive", TW_ATTR_BOOL, "false", FALSE, "each sum leaves out its own element" },
  { "reverse", TW_ATTR_BOOL, "false", FALSE, "sum from the end of the axis" },
  { NULL }
};
static const tw_attr_spec hardmax_attrs[] = {
  { "axis", TW_ATTR_INT, "-1", FALSE, "dimension to search" },
  { NULL }
};

static const tw_attr_spec scatter_attrs[] = {
  { "axis", TW_ATTR_INT, "0", FALSE, "dimension to index (negative from the end)" },
  { "reduction", TW_ATTR_STRING, "\"none\"", FALSE,
    "none: the updates replace; add, mul: they are added to or multiply the data",
    scatter_reductions },
  { NULL }
};
static const tw_attr_spec scatter_nd_attrs[] = {
  { "reduction", TW_ATTR_STRING, "\"none\"", FALSE,
    "none: the updates replace; add, mul: they are added to or multiply the data",
    scatter_reductions },
  { NULL }
};
static const tw_attr_spec gather_nd_attrs[] = {
  { "batch_dims", TW_ATTR_INT, "0", FALSE, "leading dims data and indices share" },
  { NULL }
};
static const tw_attr_spec eye_like_attrs[] = {
  { "k", TW_ATTR_INT, "0", FALSE, "diagonal: 0 main, > 0 above, < 0 below" },
  { "to", TW_ATTR_STRING, NULL, FALSE, "element type of the output (absent: x's)", eye_dtypes },
  { NULL }
};

static const tw_attr_spec topk_attrs[] = {
  { "k", TW_ATTR_INT, "1", FALSE, "how many to keep" },
  { "axis", TW_ATTR_INT, "-1", FALSE, "dimension to search" },
  { "largest", TW_ATTR_BOOL, "true", FALSE, "the largest (else the smallest)" },
  { NULL }
};

static const tw_op_def argmin_def = {
  .name = "argmin", .category = "Math", .doc = "index of the smallest element along an axis (i64)",
  .attrs = argmin_attrs, .min_inputs = 1, .max_inputs = 1, .input_names = names_x,
  .n_outputs = 1, .infer = argmin_infer, .forward = argmin_forward, .cost = scan_cost,
  .onnx_name = "ArgMin",
};

static const tw_op_def trilu_def = {
  .name = "trilu", .category = "Shape",
  .doc = "upper or lower triangle of the last two dims, the rest zero", .attrs = trilu_attrs,
  .min_inputs = 1, .max_inputs = 2, .input_names = names_trilu, .n_outputs = 1,
  .infer = trilu_infer, .forward = trilu_forward, .backward = trilu_backward,
  .cost = copy_cost, .onnx_name = "Trilu",
};

static const tw_op_def gather_elements_def = {
  .name = "gather_elements", .category = "Shape",
  .doc = "data picked along axis at each index (output shaped as indices)",
  .attrs = axis0_attrs, .min_inputs = 2, .max_inputs = 2, .input_names = names_gather,
  .n_outputs = 1, .infer = gather_elements_infer, .forward = gather_elements_forward,
  .backward = gather_elements_backward, .cost = copy_cost, .onnx_name = "GatherElements",
};

static const tw_op_def gather_elements_grad_def = {
  .name = "gather_elements_grad", .category = "Shape",
  .doc = "dy added into zeros shaped as data at the indices gather_elements read",
  .attrs = axis0_attrs, .min_inputs = 3, .max_inputs = 3, .input_names = names_gather_grad,
  .n_outputs = 1, .infer = gather_elements_grad_infer, .forward = gather_elements_grad_forward,
  .cost = copy_cost, .flags = TW_OP_INTERNAL,
};

static const tw_op_def cumsum_def = {
  .name = "cumsum", .category = "Math", .doc = "running sum along an axis",
  .attrs = cumsum_attrs, .min_inputs = 1, .max_inputs = 2, .input_names = names_cumsum,
  .n_outputs = 1, .infer = cumsum_infer, .forward = cumsum_forward, .backward = cumsum_backward,
  .cost = scan_cost, .onnx_name = "CumSum",
};

static const tw_op_def hardmax_def = {
  .name = "hardmax", .category = "Activation",
  .doc = "1 at the first maximum along an axis, 0 elsewhere", .attrs = hardmax_attrs,
  .min_inputs = 1, .max_inputs = 1, .input_names = names_x, .n_outputs = 1,
  .infer = hardmax_infer, .forward = hardmax_forward, .cost = scan_cost, .onnx_name = "Hardmax",
};

static const tw_op_def scatter_elements_def = {
  .name = "scatter_elements", .category = "Shape",
  .doc = "data with updates written (or added, multiplied) along axis at the indices",
  .attrs = scatter_attrs, .min_inputs = 3, .max_inputs = 3, .input_names = names_scatter,
  .n_outputs = 1, .infer = scatter_elements_infer, .forward = scatter_elements_forward,
  .backward = scatter_elements_backward, .cost = copy_cost, .onnx_name = "ScatterElements",
};

static const tw_op_def gather_nd_def = {
  .name = "gather_nd", .category = "Shape",
  .doc = "slices of data at the index tuples of the last dim of indices",
  .attrs = gather_nd_attrs, .min_inputs = 2, .max_inputs = 2, .input_names = names_gather,
  .n_outputs = 1, .infer = gather_nd_infer, .forward = gather_nd_forward,
  .backward = gather_nd_backward, .cost = copy_cost, .onnx_name = "GatherND",
};

static const tw_op_def gather_nd_grad_def = {
  .name = "gather_nd_grad", .category = "Shape",
  .doc = "dy added into zeros shaped as data at the slices gather_nd read",
  .attrs = gather_nd_attrs, .min_inputs = 3, .max_inputs = 3, .input_names = names_gather_grad,
  .n_outputs = 1, .infer = gather_nd_grad_infer, .forward = gather_nd_grad_forward,
  .cost = copy_cost, .flags = TW_OP_INTERNAL,
};

static const tw_op_def scatter_nd_def = {
  .name = "scatter_nd", .category = "Shape",
  .doc = "data with slices written (or added, multiplied) at the index tuples",
  .attrs = scatter_nd_attrs, .min_inputs = 3, .max_inputs = 3, .input_names = names_scatter,
  .n_outputs = 1, .infer = scatter_nd_infer, .forward = scatter_nd_forward,
  .backward = scatter_nd_backward, .cost = copy_cost, .onnx_name = "ScatterND",
};

static const tw_op_def eye_like_def = {
  .name = "eye_like", .category = "Shape",
  .doc = "ones on a diagonal of x's 2-D shape, zeros elsewhere", .attrs = eye_like_attrs,
  .min_inputs = 1, .max_inputs = 1, .input_names = names_x, .n_outputs = 1,
  .infer = eye_like_infer, .forward = eye_like_forward, .backward = eye_like_backward,
  .cost = copy_cost, .onnx_name = "EyeLike",
};

static const tw_op_def topk_def = {
  .name = "topk", .category = "Math",
  .doc = "the k largest (or smallest) along an axis, sorted, and their indices (i64)",
  .attrs = topk_attrs, .min_inputs = 1, .max_inputs = 1, .input_names = names_x,
  .n_outputs = 2, .infer = topk_infer, .forward = topk_forward, .backward = topk_backward,
  .cost = scan_cost, .onnx_name = "TopK",
};

void
tw_ops_register_index_more (void)
{
  tw_op_register (&argmin_def);
  tw_op_register (&trilu_def);
  tw_op_register (&gather_elements_def);
  tw_op_register (&gather_elements_grad_def);
  tw_op_register (&cumsum_def);
  tw_op_register (&hardmax_def);
  tw_op_register (&scatter_elements_def);
  tw_op_register (&gather_nd_def);
  tw_op_register (&gather_nd_grad_def);
  tw_op_register (&scatter_nd_def);
  tw_op_register (&eye_like_def);
  tw_op_register (&topk_def);
}
