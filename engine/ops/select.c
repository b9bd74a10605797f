/* select.c — where (ONNX Where: cond ? a : b) and expand (ONNX Expand: x
 * broadcast to a shape), both with NumPy broadcasting.
 *
 * cond may be of any dtype: an element is true when it is not zero.  The
 * gradient of where sends dy to a where cond holds and to b elsewhere,
 * summed down to their shapes (sum_to); expand's gradient is dy summed down
 * to x's shape.
 */
#define G_LOG_DOMAIN "twb-ops-select"

#include "engine/cpu/parallel.h"
#include "engine/op.h"

#include <string.h>

/* Rows go parallel above this many elements (fork/join costs a few µs). */
#define SELECT_PAR_MIN 32768

/* Offset of output row r (all dims but the last) in an input with strides st. */
static inline int64_t
row_offset (const tw_tensor *y, const int64_t *st, int64_t r)
{
  int64_t off = 0;
  for (int d = y->ndim - 2; d >= 0; d--)
    {
      off += (r % y->shape[d]) * st[d];
      r /= y->shape[d];
    }
  return off;
}

static inline int
select_threads (const tw_kctx *ctx)
{
  return ctx && ctx->num_threads > 0 ? ctx->num_threads : 1;
}

/* Non-zero test of element i of a condition of any dtype. */
static inline gboolean
cond_at (const tw_tensor *c, int64_t i)
{
  switch (c->dtype)
    {
    case TW_F32: return tw_tensor_f32 (c)[i] != 0;
    case TW_F64: return tw_tensor_f64 (c)[i] != 0;
    case TW_I32: return tw_tensor_i32 (c)[i] != 0;
    case TW_I64: return tw_tensor_i64 (c)[i] != 0;
    default: return tw_tensor_u8 (c)[i] != 0;
    }
}

/* y (broadcast shape) = cond ? a : b; each input contiguous in its own shape. */
#define WHERE_KERNEL(T)                                                                        \
  static void where_##T (const tw_tensor *c, const T *a, const T *b, tw_tensor *yt,          \
                         const int64_t *sc, const int64_t *sa, const int64_t *sb, int nt)    \
  {                                                                                          \
    int nd = yt->ndim;                                                                       \
    int64_t w = nd ? yt->shape[nd - 1] : 1, rows = tw_tensor_numel (yt) / MAX (w, 1);        \
    int64_t lc = nd ? sc[nd - 1] : 0, la = nd ? sa[nd - 1] : 0, lb = nd ? sb[nd - 1] : 0;    \
    T *y = (T *) tw_tensor_data (yt);                                                        \
    TW_PARALLEL_FOR (rows * w > SELECT_PAR_MIN, nt, r, rows, {                               \
        int64_t oc = nd ? row_offset (yt, sc, r) : 0, oa = nd ? row_offset (yt, sa, r) : 0;   \
        int64_t ob = nd ? row_offset (yt, sb, r) : 0;                                        \
        for (int64_t j = 0; j < w; j++)                                                      \
          y[r * w + j] = cond_at (c, oc + j * lc) ? a[oa + j * la] : b[ob + j * lb];         \
      });                                                                                    \
  }

WHERE_KERNEL (float)
WHERE_KERNEL (double)
WHERE_KERNEL (int32_t)
WHERE_KERNEL (int64_t)
WHERE_KERNEL (uint8_t)

/* in[0]: cond (any dtype), in[1]: a, in[2]: b (one dtype, any); out[0]:
 * the broadcast shape. */
static gboolean
where_forward (const tw_kctx *ctx, const tw_attrs *attrs, tw_tensor *const *in, int n_in,
               tw_tensor *const *out, GError **error)
{
  int64_t sc[TW_MAX_DIMS], sa[TW_MAX_DIMS], sb[TW_MAX_DIMS];
  if (tw_tensor_numel (out[0]) == 0)
    return TRUE;
  tw_broadcast_strides (in[0], out[0], sc);
  tw_broadcast_strides (in[1], out[0], sa);
  tw_broadcast_strides (in[2], out[0], sb);
  int nt = select_threads (ctx);
  const tw_tensor *a = in[1], *b = in[2];
  switch (out[0]->dtype)
    {
    case TW_F32:
      where_float (in[0], tw_tensor_f32 (a), tw_tensor_f32 (b), out[0], sc, sa, sb, nt);
      break;
    case TW_F64:
      where_double (in[0], tw_tensor_f64 (a), tw_tensor_f64 (b), out[0], sc, sa, sb, nt);
      break;
    case TW_I32:
      where_int32_t (in[0], tw_tensor_i32 (a), tw_tensor_i32 (b), out[0], sc, sa, sb, nt);
      break;
    case TW_I64:
      where_int64_t (in[0], tw_tensor_i64 (a), tw_tensor_i64 (b), out[0], sc, sa, sb, nt);
      break;
    default:
      where_uint8_t (in[0], tw_tensor_u8 (a), tw_tensor_u8 (b), out[0], sc, sa, sb, nt);
      break;
    }
  return TRUE;
}

/* Any dtype: elements are copied as bytes. */
static gboolean
expand_forward (const tw_kctx *ctx, const tw_attrs *attrs, tw_tensor *const *in, int n_in,
                tw_tensor *const *out, GError **error)
{
  const tw_tensor *y = out[0];
  int64_t st[TW_MAX_DIMS];
  size_t es = tw_dtype_size (y->dtype);
  if (tw_tensor_numel (y) == 0)
    return TRUE;
  tw_broadcast_strides (in[0], y, st);
  int nd = y->ndim;
  int64_t w = nd ? y->shape[nd - 1] : 1, rows = tw_tensor_numel (y) / w, lst = nd ? st[nd - 1] : 0;
  const char *x = tw_tensor_data (in[0]);
  char *yp = tw_tensor_data (y);
  TW_PARALLEL_FOR (rows * w > SELECT_PAR_MIN, select_threads (ctx), r, rows, {
      int64_t off = nd ? row_offset (y, st, r) : 0;
      if (lst == 1)
        memcpy (yp + r * w * es, x + off * es, w * es);
      else
        for (int64_t j = 0; j < w; j++)
          memcpy (yp + (r * w + j) * es, x + (off + j * lst) * es, es);
    });
  return TRUE;
}

/* ---- infer -------------------------------------------------------------------- */

static gboolean
where_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  if (in[1].dtype != in[2].dtype)
    {
      g_autofree char *s1 = tw_tinfo_to_string (&in[1]);
      g_autofree char *s2 = tw_tinfo_to_string (&in[2]);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_DTYPE,
                   "where expects a and b of one element type, got %s and %s", s1, s2);
      return FALSE;
    }
  if (!tw_infer_broadcast (a, in, 3, out, error))
    return FALSE;
  out[0].dtype = in[1].dtype;
  return TRUE;
}

static gboolean
expand_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  int64_t shape[TW_ATTR_MAX_LIST];
  int n = tw_attrs_get_ints (a, "shape", shape, TW_ATTR_MAX_LIST);
  if (n < 0 || n > TW_MAX_DIMS)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "expand: 'shape' must list at most %d dims", TW_MAX_DIMS);
      return FALSE;
    }
  for (int d = 0; d < n; d++)
    if (shape[d] < 0)
      {
        g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                     "expand: entry %d of 'shape' is %" G_GINT64_FORMAT ", not a size", d,
                     shape[d]);
        return FALSE;
      }
  tw_tinfo two[2];
  two[0] = in[0];
  tw_tinfo_set (&two[1], in[0].dtype, n, shape);
  return tw_infer_broadcast (a, two, 2, out, error);
}

/* ---- backward ------------------------------------------------------------------- */

/* g summed down to the shape of x (g itself when the shapes match). */
static tw_val *
reduce_to (tw_emit *e, tw_val *g, tw_val *x)
{
  const tw_tinfo *gi = tw_val_info (e, g), *xi = tw_val_info (e, x);
  gboolean same = gi->ndim == xi->ndim;
  for (int d = 0; same && d < gi->ndim; d++)
    same = gi->dims[d] == xi->dims[d];
  return same ? g : tw_emit2 (e, "sum_to", NULL, g, x);
}

static gboolean
where_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
                tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  tw_val *zero = tw_emit1 (e, "zeros_like", NULL, gout[0]);
  if (needs[0])
    gin[0] = tw_emit1 (e, "zeros_like", NULL, in[0]);
  if (needs[1])
    gin[1] = reduce_to (e, tw_emit3 (e, "where", NULL, in[0], gout[0], zero), in[1]);
  if (needs[2])
    gin[2] = reduce_to (e, tw_emit3 (e, "where", NULL, in[0], zero, gout[0]), in[2]);
  return TRUE;
}

static gboolean
expand_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
                 tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  gin[0] = reduce_to (e, gout[0], in[0]);
  return gin[0] != NULL;
}

static void
copy_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
           tw_cost *cost)
{
  tw_cost_elementwise (in, n_in, out, n_out, 0, cost);
}

static void
where_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
            tw_cost *cost)
{
  tw_cost_elementwise (in, n_in, out, n_out, 1, cost);   /* one test and select per element */
}

static const tw_attr_spec no_attrs[] = { { NULL } };
static const tw_attr_spec expand_attrs[] = {
  { "shape", TW_ATTR_INTS, NULL, TRUE, "the shape x broadcasts with (NumPy's rule, both ways)" },
  { NULL }
};
static const char *const names_where[] = { "cond", "a", "b", NULL };
static const char *const names_x[] = { "x", NULL };

static const tw_op_def where_def = {
  .name = "where", .category = "Math", .doc = "a where cond is non-zero, else b (broadcasting)",
  .attrs = no_attrs, .min_inputs = 3, .max_inputs = 3, .input_names = names_where,
  .n_outputs = 1, .infer = where_infer, .forward = where_forward, .backward = where_backward,
  .cost = where_cost, .onnx_name = "Where",
};

static const tw_op_def expand_def = {
  .name = "expand", .category = "Shape", .doc = "x broadcast to a shape",
  .attrs = expand_attrs, .min_inputs = 1, .max_inputs = 1, .input_names = names_x,
  .n_outputs = 1, .infer = expand_infer, .forward = expand_forward, .backward = expand_backward,
  .cost = copy_cost, .onnx_name = "Expand",
};

void
tw_ops_register_select (void)
{
  tw_op_register (&where_def);
  tw_op_register (&expand_def);
}
