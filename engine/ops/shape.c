/* shape.c — flatten, reshape, transpose, concat, split, slice and the
 * internal ops their gradients use (reshape_like, slice_grad).
 *
 * These ops move data without arithmetic, so they accept every dtype (labels
 * and indices are i64).  The kernels share one strided copy: dims of size 1
 * dropped, dims merged wherever both sides step contiguously, a memcpy for a
 * contiguous innermost run. */
#include "engine/cpu/parallel.h"
#include "engine/op.h"

#include <string.h>

/* Below this many elements a copy stays on one thread (fork/join costs a few
 * µs; a copy moves ~1 element per ns). */
#define SHAPE_PAR_MIN 32768

static inline int
shape_threads (const tw_kctx *ctx)
{
  return ctx && ctx->num_threads > 0 ? ctx->num_threads : 1;
}

static inline void
contiguous_strides (int nd, const int64_t *shape, int64_t *st)
{
  int64_t s = 1;
  for (int d = nd - 1; d >= 0; d--)
    {
      st[d] = s;
      s *= shape[d];
    }
}

/* dst[i] = src[i] for every index i of shape; strides and both pointers in
 * elements of size es. */
static void
copy_nd (size_t es, int nd0, const int64_t *shape0, void *dst, const int64_t *ds0,
         const void *src, const int64_t *ss0, int nt)
{
  int64_t shape[TW_MAX_DIMS], ds[TW_MAX_DIMS], ss[TW_MAX_DIMS];
  int nd = 0;
  for (int d = 0; d < nd0; d++)
    {
      int64_t n = shape0[d];
      if (n == 0)
        return;
      if (n == 1)
        continue;
      if (nd > 0 && ds[nd - 1] == ds0[d] * n && ss[nd - 1] == ss0[d] * n)
        {
          shape[nd - 1] *= n;
          ds[nd - 1] = ds0[d];
          ss[nd - 1] = ss0[d];
        }
      else
        {
          shape[nd] = n;
          ds[nd] = ds0[d];
          ss[nd++] = ss0[d];
        }
    }
  if (nd == 0)
    {
      memcpy (dst, src, es);
      return;
    }
  int64_t inner = shape[nd - 1], dsi = ds[nd - 1], ssi = ss[nd - 1], rows = 1;
  for (int d = 0; d < nd - 1; d++)
    rows *= shape[d];
  TW_PARALLEL_FOR (rows * inner > SHAPE_PAR_MIN, nt, r, rows, {
      int64_t od = 0, os = 0, q = r;
      for (int d = nd - 2; d >= 0; d--)
        {
          int64_t i = q % shape[d];
          q /= shape[d];
          od += i * ds[d];
          os += i * ss[d];
        }
      char *restrict dp = (char *) dst + od * es;
      const char *restrict sp = (const char *) src + os * es;
      if (dsi == 1 && ssi == 1)
        memcpy (dp, sp, inner * es);
      else if (es == 4)
        for (int64_t j = 0; j < inner; j++)
          ((uint32_t *) dp)[j * dsi] = ((const uint32_t *) sp)[j * ssi];
      else if (es == 8)
        for (int64_t j = 0; j < inner; j++)
          ((uint64_t *) dp)[j * dsi] = ((const uint64_t *) sp)[j * ssi];
      else
        for (int64_t j = 0; j < inner; j++)
          memcpy (dp + j * dsi * es, sp + j * ssi * es, es);
    });
}

static int
norm_dim (int64_t d, int ndim)
{
  return (int) (d < 0 ? d + ndim : d);
}

static gboolean
dim_error (GError **error, const char *what, int64_t d, const tw_tinfo *t)
{
  g_autofree char *s = tw_tinfo_to_string (t);
  g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
               "%s %" G_GINT64_FORMAT " is out of range for input %s (expected %d..%d)", what, d,
               s, -MAX (t->ndim, 1), MAX (t->ndim, 1) - 1);
  return FALSE;
}

static void
copy_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
           tw_cost *cost)
{
  cost->flops = 0;
  cost->bytes_read = cost->bytes_written = 0;
  for (int k = 0; k < n_out; k++)
    cost->bytes_written += (double) tw_tinfo_numel (&out[k], NULL) * tw_dtype_size (out[k].dtype);
  cost->bytes_read = cost->bytes_written;
}

/* Same element order in and out: one memcpy (flatten, reshape, reshape_like). */
static gboolean
memcpy_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                tw_tensor *const *out, GError **error)
{
  memcpy (tw_tensor_data (out[0]), tw_tensor_data (in[0]), tw_tensor_nbytes (out[0]));
  return TRUE;
}

/* Gradient of an op that only reshapes input 0. */
static gboolean
reshape_back_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                       tw_val *const *out, tw_val *const *gout, const gboolean *needs,
                       tw_val **gin)
{
  if (needs[0])
    gin[0] = tw_emit2 (e, "reshape_like", NULL, gout[0], in[0]);
  for (int i = 1; i < n_in; i++)
    if (needs[i])
      gin[i] = tw_emit1 (e, "zeros_like", NULL, in[i]);
  return TRUE;
}

/* ---- flatten -------------------------------------------------------------- */

static gboolean
flatten_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  const tw_tinfo *x = &in[0];
  int nd = MAX (x->ndim, 1);  /* a 0-d input flattens like a [1] */
  int64_t s0 = tw_attrs_get_int (a, "start_dim", 1), e0 = tw_attrs_get_int (a, "end_dim", -1);
  int s = norm_dim (s0, nd), e = norm_dim (e0, nd);
  if (s < 0 || s >= nd)
    return dim_error (error, "flatten: start_dim", s0, x);
  if (e < 0 || e >= nd)
    return dim_error (error, "flatten: end_dim", e0, x);
  if (s > e)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "flatten: start_dim %" G_GINT64_FORMAT " comes after end_dim %" G_GINT64_FORMAT,
                   s0, e0);
      return FALSE;
    }
  if (x->ndim == 0)
    {
      out[0] = *x;
      out[0].ndim = 1;
      out[0].dims[0] = 1;
      return TRUE;
    }
  int64_t prod = 1;
  int n_sym = 0;
  for (int d = s; d <= e; d++)
    {
      if (x->dims[d] == TW_DIM_N)
        n_sym++;
      else
        prod *= x->dims[d];
    }
  if (n_sym > 0 && prod != 1)
    {
      g_autofree char *sx = tw_tinfo_to_string (x);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "flatten: dims %d..%d of %s include the batch dimension N; flattening it "
                   "with other dims is not supported (use start_dim >= 1)", s, e, sx);
      return FALSE;
    }
  out[0].dtype = x->dtype;
  out[0].ndim = 0;
  for (int d = 0; d < s; d++)
    out[0].dims[out[0].ndim++] = x->dims[d];
  out[0].dims[out[0].ndim++] = n_sym ? TW_DIM_N : prod;
  for (int d = e + 1; d < x->ndim; d++)
    out[0].dims[out[0].ndim++] = x->dims[d];
  return TRUE;
}

/* ---- reshape / reshape_like -------------------------------------------------- */

static gboolean
reshape_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  const tw_tinfo *x = &in[0];
  int64_t shape[TW_ATTR_MAX_LIST];
  int n = tw_attrs_get_ints (a, "shape", shape, TW_ATTR_MAX_LIST);
  g_autofree char *sx = tw_tinfo_to_string (x);
  if (n < 0 || n + 1 > TW_MAX_DIMS)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "reshape: 'shape' must list at most %d dims (the per-sample shape)",
                   TW_MAX_DIMS - 1);
      return FALSE;
    }
  if (x->ndim < 1)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "reshape expects an input with a batch dimension, got %s", sx);
      return FALSE;
    }
  int64_t per = 1, known = 1;
  int infer_at = -1;
  for (int d = 1; d < x->ndim; d++)
    {
      if (x->dims[d] == TW_DIM_N)
        {
          g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                       "reshape expects the batch dimension N first only, got %s", sx);
          return FALSE;
        }
      per *= x->dims[d];   /* representable: checked where x was inferred */
    }
  for (int i = 0; i < n; i++)
    {
      if (shape[i] == -1 && infer_at < 0)
        infer_at = i;
      else if (shape[i] <= 0)
        {
          g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                       "reshape: entry %d of 'shape' is %" G_GINT64_FORMAT
                       "; entries must be positive, with at most one -1", i, shape[i]);
          return FALSE;
        }
      else if (!tw_size_mul (known, shape[i], &known))
        {
          g_autofree char *ss = tw_shape_to_string (n, shape);
          g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                       "reshape: 'shape' %s has more than 2^63 elements per sample (input %s "
                       "has %" G_GINT64_FORMAT ")", ss, sx, per);
          return FALSE;
        }
    }
  if (infer_at >= 0 && known > 0 && per % known == 0)
    shape[infer_at] = per / known;
  g_autofree char *ss = tw_shape_to_string (n, shape);
  if ((infer_at >= 0 && (known == 0 || per % known != 0)) || (infer_at < 0 && known != per))
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "reshape: input %s has %" G_GINT64_FORMAT " elements per sample but shape %s "
                   "%s %" G_GINT64_FORMAT, sx, per, ss, infer_at >= 0 ? "has a multiple of" : "has",
                   known);
      return FALSE;
    }
  out[0].dtype = x->dtype;
  out[0].ndim = n + 1;
  out[0].dims[0] = x->dims[0];
  for (int i = 0; i < n; i++)
    out[0].dims[i + 1] = shape[i];
  return TRUE;
}

static gboolean
reshape_like_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                    GError **error)
{
  gboolean sg, sl;
  int64_t ng = tw_tinfo_numel (&in[0], &sg), nl = tw_tinfo_numel (&in[1], &sl);
  if (ng != nl || sg != sl)
    {
      g_autofree char *s0 = tw_tinfo_to_string (&in[0]);
      g_autofree char *s1 = tw_tinfo_to_string (&in[1]);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "reshape_like: %s and %s hold different numbers of elements", s0, s1);
      return FALSE;
    }
  out[0] = in[1];
  out[0].dtype = in[0].dtype;
  return TRUE;
}

/* ---- transpose ------------------------------------------------------------ */

/* perm from the attribute (default: reversed dims), checked. */
static gboolean
get_perm (const tw_attrs *a, const tw_tinfo *x, int *perm, GError **error)
{
  int64_t p[TW_ATTR_MAX_LIST];
  int n = tw_attrs_get_ints (a, "perm", p, TW_ATTR_MAX_LIST);
  gboolean seen[TW_MAX_DIMS] = { 0 };
  if (n < 0)
    {
      for (int d = 0; d < x->ndim; d++)
        perm[d] = x->ndim - 1 - d;
      return TRUE;
    }
  gboolean ok = n == x->ndim;
  for (int d = 0; ok && d < n; d++)
    {
      int64_t v = p[d] < 0 ? p[d] + n : p[d];
      ok = v >= 0 && v < n && !seen[v];
      if (ok)
        {
          seen[v] = TRUE;
          perm[d] = (int) v;
        }
    }
  if (!ok)
    {
      g_autofree char *sx = tw_tinfo_to_string (x);
      g_autofree char *sp = tw_shape_to_string (MIN (MAX (n, 0), TW_MAX_DIMS), p);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "transpose: perm %s is not a permutation of the %d dims of %s", sp, x->ndim,
                   sx);
      return FALSE;
    }
  return TRUE;
}

static gboolean
transpose_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  int perm[TW_MAX_DIMS];
  if (!get_perm (a, &in[0], perm, error))
    return FALSE;
  out[0] = in[0];
  for (int d = 0; d < in[0].ndim; d++)
    out[0].dims[d] = in[0].dims[perm[d]];
  return TRUE;
}

/* out[i0..] = x[i_perm^-1 ...]: out dim d walks x's dim perm[d]. */
static gboolean
transpose_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                   tw_tensor *const *out, GError **error)
{
  tw_tinfo xi;
  int perm[TW_MAX_DIMS];
  int64_t xs[TW_MAX_DIMS], ss[TW_MAX_DIMS], ds[TW_MAX_DIMS];
  tw_tinfo_from_tensor (&xi, in[0]);
  if (!get_perm (a, &xi, perm, error))
    return FALSE;
  contiguous_strides (in[0]->ndim, in[0]->shape, xs);
  contiguous_strides (out[0]->ndim, out[0]->shape, ds);
  for (int d = 0; d < in[0]->ndim; d++)
    ss[d] = xs[perm[d]];
  copy_nd (tw_dtype_size (in[0]->dtype), out[0]->ndim, out[0]->shape, tw_tensor_data (out[0]), ds,
           tw_tensor_data (in[0]), ss, shape_threads (ctx));
  return TRUE;
}

static gboolean
transpose_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                    tw_val *const *out, tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  int perm[TW_MAX_DIMS];
  int64_t inv[TW_MAX_DIMS];
  const tw_tinfo *xi = tw_val_info (e, in[0]);
  if (!get_perm (a, xi, perm, NULL))
    return FALSE;
  for (int d = 0; d < xi->ndim; d++)
    inv[perm[d]] = d;
  tw_attrs *b = tw_attrs_new ();
  tw_attrs_set_ints (b, "perm", xi->ndim, inv);
  gin[0] = tw_emit1 (e, "transpose", b, gout[0]);
  tw_attrs_free (b);
  return TRUE;
}

/* ---- concat / split ---------------------------------------------------------- */

static gboolean
concat_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  int64_t ax0 = tw_attrs_get_int (a, "axis", 1);
  int nd = in[0].ndim, ax = norm_dim (ax0, nd);
  if (ax < 0 || ax >= nd)
    return dim_error (error, "concat: axis", ax0, &in[0]);
  out[0] = in[0];
  out[0].dims[ax] = 0;
  for (int i = 0; i < n_in; i++)
    {
      g_autofree char *s0 = tw_tinfo_to_string (&in[0]);
      g_autofree char *si = tw_tinfo_to_string (&in[i]);
      if (in[i].dtype != in[0].dtype || in[i].ndim != nd)
        {
          g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                       "concat: input %d is %s but input 0 is %s (same element type and rank "
                       "expected)", i, si, s0);
          return FALSE;
        }
      for (int d = 0; d < nd; d++)
        if (d != ax && in[i].dims[d] != in[0].dims[d])
          {
            g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                         "concat: input %d is %s and input 0 is %s: dim %d differs (all dims "
                         "but axis %d must match)", i, si, s0, d, ax);
            return FALSE;
          }
      if (in[i].dims[ax] == TW_DIM_N)
        {
          g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                       "concat: input %d is %s: cannot concatenate along the batch dimension N",
                       i, si);
          return FALSE;
        }
      out[0].dims[ax] += in[i].dims[ax];
    }
  return TRUE;
}

static gboolean
concat_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                tw_tensor *const *out, GError **error)
{
  int nd = out[0]->ndim, ax = norm_dim (tw_attrs_get_int (a, "axis", 1), nd);
  size_t es = tw_dtype_size (out[0]->dtype);
  int64_t ds[TW_MAX_DIMS], off = 0;
  contiguous_strides (nd, out[0]->shape, ds);
  for (int i = 0; i < n_in; i++)
    {
      int64_t ss[TW_MAX_DIMS];
      contiguous_strides (nd, in[i]->shape, ss);
      copy_nd (es, nd, in[i]->shape, (char *) tw_tensor_data (out[0]) + off * ds[ax] * es, ds,
               tw_tensor_data (in[i]), ss, shape_threads (ctx));
      off += in[i]->shape[ax];
    }
  return TRUE;
}

static gboolean
concat_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
                 tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  int nd = tw_val_info (e, out[0])->ndim, ax = norm_dim (tw_attrs_get_int (a, "axis", 1), nd);
  int64_t off = 0;
  for (int i = 0; i < n_in; i++)
    {
      int64_t len = tw_val_info (e, in[i])->dims[ax];
      if (needs[i])
        {
          tw_attrs *s = tw_attrs_new ();
          tw_attrs_set_int (s, "axis", ax);
          tw_attrs_set_int (s, "start", off);
          tw_attrs_set_int (s, "end", off + len);
          gin[i] = tw_emit1 (e, "slice", s, gout[0]);
          tw_attrs_free (s);
        }
      off += len;
    }
  return TRUE;
}

static int
split_num_outputs (const tw_attrs *a)
{
  return MAX (1, tw_attrs_get_ints (a, "sizes", NULL, 0));
}

static gboolean
split_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  int64_t sizes[TW_ATTR_MAX_LIST], ax0 = tw_attrs_get_int (a, "axis", 1), total = 0;
  int n = tw_attrs_get_ints (a, "sizes", sizes, TW_ATTR_MAX_LIST);
  int nd = in[0].ndim, ax = norm_dim (ax0, nd);
  g_autofree char *sx = tw_tinfo_to_string (&in[0]);
  if (ax < 0 || ax >= nd)
    return dim_error (error, "split: axis", ax0, &in[0]);
  if (n < 1 || n > TW_MAX_OUTPUTS)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "split: 'sizes' must list 1 to %d sizes", TW_MAX_OUTPUTS);
      return FALSE;
    }
  if (in[0].dims[ax] == TW_DIM_N)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "split: cannot split %s along the batch dimension N (axis %d)", sx, ax);
      return FALSE;
    }
  for (int k = 0; k < n; k++)
    {
      if (sizes[k] < 0)
        {
          g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                       "split: size %d is %" G_GINT64_FORMAT "; sizes must be >= 0", k,
                       sizes[k]);
          return FALSE;
        }
      total += sizes[k];
      out[k] = in[0];
      out[k].dims[ax] = sizes[k];
    }
  if (total != in[0].dims[ax])
    {
      g_autofree char *ss = tw_shape_to_string (n, sizes);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "split: sizes %s add up to %" G_GINT64_FORMAT " but dim %d of %s is %"
                   G_GINT64_FORMAT, ss, total, ax, sx, in[0].dims[ax]);
      return FALSE;
    }
  return TRUE;
}

static gboolean
split_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
               tw_tensor *const *out, GError **error)
{
  int nd = in[0]->ndim, ax = norm_dim (tw_attrs_get_int (a, "axis", 1), nd);
  int n = split_num_outputs (a);
  size_t es = tw_dtype_size (in[0]->dtype);
  int64_t ss[TW_MAX_DIMS], off = 0;
  contiguous_strides (nd, in[0]->shape, ss);
  for (int k = 0; k < n; k++)
    {
      int64_t ds[TW_MAX_DIMS];
      contiguous_strides (nd, out[k]->shape, ds);
      copy_nd (es, nd, out[k]->shape, tw_tensor_data (out[k]), ds,
               (const char *) tw_tensor_data (in[0]) + off * ss[ax] * es, ss, shape_threads (ctx));
      off += out[k]->shape[ax];
    }
  return TRUE;
}

static gboolean
split_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
                tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  int n = split_num_outputs (a);
  tw_val *parts[TW_MAX_OUTPUTS];
  for (int k = 0; k < n; k++)
    parts[k] = gout[k] ? gout[k] : tw_emit1 (e, "zeros_like", NULL, out[k]);
  tw_attrs *c = tw_attrs_new ();
  tw_attrs_set_int (c, "axis", tw_attrs_get_int (a, "axis", 1));
  gin[0] = tw_emit_op (e, "concat", c, n, parts);
  tw_attrs_free (c);
  return TRUE;
}

/* ---- slice / slice_grad -------------------------------------------------------- */

/* Python's slice.indices (): first index and count of start:end:step over a
 * dim of length len, with negative indices counted from the end and clamped. */
static void
slice_range (int64_t len, int64_t start, int64_t end, int64_t step, int64_t *first,
             int64_t *count)
{
  int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? len : len - 1;
  if (start < 0)
    start = MAX (start + len, lo);
  else
    start = MIN (start, hi);
  if (end < 0)
    end = MAX (end + len, lo);
  else
    end = MIN (end, hi);
  *first = start;
  if (step > 0)
    *count = end > start ? (end - start - 1) / step + 1 : 0;
  else
    *count = start > end ? (start - end - 1) / (-step) + 1 : 0;
}

/* Slice of x described by the attributes: axis, first index, step, count. */
static gboolean
slice_params (const tw_attrs *a, const tw_tinfo *x, int *ax, int64_t *first, int64_t *step,
              int64_t *count, GError **error)
{
  int64_t ax0 = tw_attrs_get_int (a, "axis", 1);
  *ax = norm_dim (ax0, x->ndim);
  *step = tw_attrs_get_int (a, "step", 1);
  if (*ax < 0 || *ax >= x->ndim)
    return dim_error (error, "slice: axis", ax0, x);
  if (*step == 0)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR, "slice: step must not be 0");
      return FALSE;
    }
  if (x->dims[*ax] == TW_DIM_N)
    {
      g_autofree char *sx = tw_tinfo_to_string (x);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "slice: cannot slice %s along the batch dimension N (axis %d)", sx, *ax);
      return FALSE;
    }
  slice_range (x->dims[*ax], tw_attrs_get_int (a, "start", 0),
               tw_attrs_get_int (a, "end", G_MAXINT64), *step, first, count);
  return TRUE;
}

static gboolean
slice_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  int ax;
  int64_t first, step, count;
  if (!slice_params (a, &in[0], &ax, &first, &step, &count, error))
    return FALSE;
  out[0] = in[0];
  out[0].dims[ax] = count;
  return TRUE;
}

/* Strides and start offset (elements) of the slice inside x (contiguous). */
static void
slice_view (const tw_tensor *x, int ax, int64_t first, int64_t step, int64_t *st, int64_t *off)
{
  contiguous_strides (x->ndim, x->shape, st);
  *off = first * st[ax];
  st[ax] *= step;
}

static gboolean
slice_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
               tw_tensor *const *out, GError **error)
{
  tw_tinfo xi;
  int ax;
  int64_t first, step, count, ss[TW_MAX_DIMS], ds[TW_MAX_DIMS], off;
  size_t es = tw_dtype_size (in[0]->dtype);
  tw_tinfo_from_tensor (&xi, in[0]);
  if (!slice_params (a, &xi, &ax, &first, &step, &count, error))
    return FALSE;
  slice_view (in[0], ax, first, step, ss, &off);
  contiguous_strides (out[0]->ndim, out[0]->shape, ds);
  copy_nd (es, out[0]->ndim, out[0]->shape, tw_tensor_data (out[0]), ds,
           (const char *) tw_tensor_data (in[0]) + off * es, ss, shape_threads (ctx));
  return TRUE;
}

static gboolean
slice_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
                tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  gin[0] = tw_emit2 (e, "slice_grad", a, gout[0], in[0]);
  return TRUE;
}

/* (g, like) → zeros like `like` with g written into the slice. */
static gboolean
slice_grad_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                  GError **error)
{
  tw_tinfo want;
  if (!slice_infer (a, &in[1], 1, &want, error))
    return FALSE;
  want.dtype = in[0].dtype;
  if (!tw_tinfo_equal (&want, &in[0]))
    {
      g_autofree char *sw = tw_tinfo_to_string (&want);
      g_autofree char *sg = tw_tinfo_to_string (&in[0]);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "slice_grad expects a gradient of shape %s, got %s", sw, sg);
      return FALSE;
    }
  out[0] = in[1];
  out[0].dtype = in[0].dtype;
  return TRUE;
}

static gboolean
slice_grad_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                    tw_tensor *const *out, GError **error)
{
  tw_tinfo li;
  int ax;
  int64_t first, step, count, ds[TW_MAX_DIMS], ss[TW_MAX_DIMS], off;
  size_t es = tw_dtype_size (out[0]->dtype);
  tw_tinfo_from_tensor (&li, in[1]);
  if (!slice_params (a, &li, &ax, &first, &step, &count, error))
    return FALSE;
  memset (tw_tensor_data (out[0]), 0, tw_tensor_nbytes (out[0]));
  slice_view (out[0], ax, first, step, ds, &off);
  contiguous_strides (in[0]->ndim, in[0]->shape, ss);
  copy_nd (es, in[0]->ndim, in[0]->shape, (char *) tw_tensor_data (out[0]) + off * es, ds,
           tw_tensor_data (in[0]), ss, shape_threads (ctx));
  return TRUE;
}

static gboolean
slice_grad_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                     tw_val *const *out, tw_val *const *gout, const gboolean *needs,
                     tw_val **gin)
{
  if (needs[0])
    gin[0] = tw_emit1 (e, "slice", a, gout[0]);
  if (needs[1])
    gin[1] = tw_emit1 (e, "zeros_like", NULL, in[1]);
  return TRUE;
}

/* ---- definitions ---------------------------------------------------------------- */

static const tw_attr_spec flatten_attrs[] = {
  { "start_dim", TW_ATTR_INT, "1", FALSE, "first dim to flatten (negative from the end)" },
  { "end_dim", TW_ATTR_INT, "-1", FALSE, "last dim to flatten (negative from the end)" },
  { NULL }
};
static const tw_attr_spec reshape_attrs[] = {
  { "shape", TW_ATTR_INTS, NULL, TRUE,
    "shape of one sample (the batch dim is kept); one entry may be -1" },
  { NULL }
};
static const tw_attr_spec transpose_attrs[] = {
  { "perm", TW_ATTR_INTS, NULL, FALSE,
    "output dim d is input dim perm[d], batch included; absent: dims reversed" },
  { NULL }
};
static const tw_attr_spec concat_attrs[] = {
  { "axis", TW_ATTR_INT, "1", FALSE, "dim to join along" },
  { NULL }
};
static const tw_attr_spec split_attrs[] = {
  { "axis", TW_ATTR_INT, "1", FALSE, "dim to split" },
  { "sizes", TW_ATTR_INTS, NULL, TRUE, "length of each part; they add up to the dim" },
  { NULL }
};
static const tw_attr_spec slice_attrs[] = {
  { "axis", TW_ATTR_INT, "1", FALSE, "dim to slice" },
  { "start", TW_ATTR_INT, "0", FALSE, "first index (negative from the end; clamped)" },
  { "end", TW_ATTR_INT, "9223372036854775807", FALSE,
    "index after the last (negative from the end; clamped)" },
  { "step", TW_ATTR_INT, "1", FALSE, "stride (negative walks backwards; not 0)" },
  { NULL }
};
static const tw_attr_spec no_attrs[] = { { NULL } };
static const char *const names_x[] = { "x", NULL };
static const char *const names_g_like[] = { "g", "like", NULL };

static const tw_op_def flatten_def = {
  .name = "flatten", .category = "Shape",
  .doc = "merge dims start_dim..end_dim into one",
  .attrs = flatten_attrs, .min_inputs = 1, .max_inputs = 1, .input_names = names_x,
  .n_outputs = 1, .infer = flatten_infer, .forward = memcpy_forward,
  .backward = reshape_back_backward, .cost = copy_cost, .onnx_name = "Flatten",
  .flags = TW_OP_VIEW,
};

static const tw_op_def reshape_def = {
  .name = "reshape", .category = "Shape",
  .doc = "give each sample a new shape with the same number of elements",
  .attrs = reshape_attrs, .min_inputs = 1, .max_inputs = 1, .input_names = names_x,
  .n_outputs = 1, .infer = reshape_infer, .forward = memcpy_forward,
  .backward = reshape_back_backward, .cost = copy_cost, .onnx_name = "Reshape",
  .flags = TW_OP_VIEW,
};

static const tw_op_def reshape_like_def = {
  .name = "reshape_like", .category = "Shape",
  .doc = "g's elements in the shape of like",
  .attrs = no_attrs, .min_inputs = 2, .max_inputs = 2, .input_names = names_g_like,
  .n_outputs = 1, .infer = reshape_like_infer, .forward = memcpy_forward,
  .backward = reshape_back_backward, .cost = copy_cost,
  .flags = TW_OP_VIEW | TW_OP_INTERNAL,
};

static const tw_op_def transpose_def = {
  .name = "transpose", .category = "Shape",
  .doc = "permute dims (ONNX Transpose)",
  .attrs = transpose_attrs, .min_inputs = 1, .max_inputs = 1, .input_names = names_x,
  .n_outputs = 1, .infer = transpose_infer, .forward = transpose_forward,
  .backward = transpose_backward, .cost = copy_cost, .onnx_name = "Transpose",
  .flags = TW_OP_VIEW,
};

static const tw_op_def concat_def = {
  .name = "concat", .category = "Shape",
  .doc = "join inputs along axis",
  .attrs = concat_attrs, .min_inputs = 1, .max_inputs = -1, .n_outputs = 1,
  .infer = concat_infer, .forward = concat_forward, .backward = concat_backward,
  .cost = copy_cost, .onnx_name = "Concat",
};

static const tw_op_def split_def = {
  .name = "split", .category = "Shape",
  .doc = "cut the input along axis into parts of the given sizes",
  .attrs = split_attrs, .min_inputs = 1, .max_inputs = 1, .input_names = names_x,
  .num_outputs = split_num_outputs, .infer = split_infer, .forward = split_forward,
  .backward = split_backward, .cost = copy_cost, .onnx_name = "Split",
};

static const tw_op_def slice_def = {
  .name = "slice", .category = "Shape",
  .doc = "x[start:end:step] along axis, as in Python",
  .attrs = slice_attrs, .min_inputs = 1, .max_inputs = 1, .input_names = names_x,
  .n_outputs = 1, .infer = slice_infer, .forward = slice_forward, .backward = slice_backward,
  .cost = copy_cost, .onnx_name = "Slice",
};

static const tw_op_def slice_grad_def = {
  .name = "slice_grad", .category = "Shape",
  .doc = "zeros like `like` with g written into the slice",
  .attrs = slice_attrs, .min_inputs = 2, .max_inputs = 2, .input_names = names_g_like,
  .n_outputs = 1, .infer = slice_grad_infer, .forward = slice_grad_forward,
  .backward = slice_grad_backward, .cost = copy_cost, .flags = TW_OP_INTERNAL,
};

void
tw_ops_register_shape (void)
{
  tw_op_register (&flatten_def);
  tw_op_register (&reshape_def);
  tw_op_register (&reshape_like_def);
  tw_op_register (&transpose_def);
  tw_op_register (&concat_def);
  tw_op_register (&split_def);
  tw_op_register (&slice_def);
  tw_op_register (&slice_grad_def);
}
