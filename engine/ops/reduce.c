/* reduce.c — sum, mean, max and min over axes, and the internal ops their
 * gradients (and those of broadcasting) need: sum_to, broadcast_to,
 * max_grad.
 *
 * All reductions go through one plan: the input's dims with size-1 dims
 * dropped and adjacent dims of the same kind (kept / reduced) merged.  Each
 * output row (all kept dims but a trailing kept group of length `inner`) is
 * produced by one thread, walking the reduced dims in row-major order; a
 * trailing reduced group is summed as one contiguous span in fixed blocks of
 * RED_BLOCK elements combined in order.  The summation order therefore
 * depends on the shapes only, never on the thread count: results are
 * bitwise identical for any num_threads.  f32 inputs accumulate in double. */
#include "engine/cpu/parallel.h"
#include "engine/ops/reduce-private.h"

#include <math.h>
#include <omp.h>
#include <string.h>

/* Below this many input elements a reduction stays on one thread (fork/join
 * costs a few µs, summing runs at ~1 ns per element). */
#define RED_PAR_MIN 32768
/* Block of a contiguous span sum: 4096 elements = 16 KiB of f32, fits L1;
 * fixed so that the partial sums do not depend on the thread count. */
#define RED_BLOCK 4096
/* Independent accumulators inside a block: 8 doubles = two AVX registers,
 * enough to hide the add latency and let gcc vectorise. */
#define RED_LANES 8
/* v beats the running extremum m: larger for max (dir 1), smaller for min (-1). */
#define RED_BETTER(v, m, dir) ((dir) > 0 ? (v) > (m) : (v) < (m))

static inline int
red_threads (const tw_kctx *ctx)
{
  return ctx && ctx->num_threads > 0 ? ctx->num_threads : 1;
}

/* ---- axes --------------------------------------------------------------- */

/* mask[d] = TRUE for each reduced dim of an ndim input, from the "axes"
 * attribute (absent or empty: every dim; negative: counted from the end). */
gboolean
tw_reduce_axes_mask (const tw_attrs *a, int ndim, gboolean *mask, GError **error)
{
  int64_t axes[TW_ATTR_MAX_LIST];
  int n = tw_attrs_get_ints (a, "axes", axes, TW_ATTR_MAX_LIST);
  for (int d = 0; d < ndim; d++)
    mask[d] = n <= 0;
  for (int i = 0; i < n; i++)
    {
      int64_t ax = axes[i] < 0 ? axes[i] + ndim : axes[i];
      if (ax < 0 || ax >= ndim)
        {
          g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                       "axis %" G_GINT64_FORMAT " is out of range for a %d-d input "
                       "(expected %d..%d)", axes[i], ndim, -ndim, ndim - 1);
          return FALSE;
        }
      if (mask[ax])
        {
          g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                       "axis %" G_GINT64_FORMAT " is listed twice in 'axes'", axes[i]);
          return FALSE;
        }
      mask[ax] = TRUE;
    }
  return TRUE;
}

/* ---- plan --------------------------------------------------------------- */

typedef struct
{
  int nk, nr;                       /* kept groups (without the inner one), reduced groups */
  int64_t kshape[TW_MAX_DIMS], kstride[TW_MAX_DIMS];
  int64_t rshape[TW_MAX_DIMS], rstride[TW_MAX_DIMS];
  int64_t inner;                    /* length of a trailing kept group (1 if none) */
  int64_t span;                     /* length of a trailing reduced group (1 if none) */
  int64_t rows;                     /* product of kshape */
  int64_t rcount;                   /* product of rshape (span excluded) */
} red_plan;

/* x: ndim dims `shape` (contiguous); mask: reduced dims. */
static void
red_plan_init (red_plan *p, int ndim, const int64_t *shape, const gboolean *mask)
{
  int n = 0;
  int64_t gs[TW_MAX_DIMS], gst[TW_MAX_DIMS];
  gboolean gr[TW_MAX_DIMS];
  int64_t st = 1;
  int64_t strides[TW_MAX_DIMS];
  for (int d = ndim - 1; d >= 0; d--)
    {
      strides[d] = st;
      st *= shape[d];
    }
  for (int d = 0; d < ndim; d++)
    {
      if (shape[d] == 1)
        continue;
      if (n > 0 && gr[n - 1] == mask[d])
        {
          gs[n - 1] *= shape[d];
          gst[n - 1] = strides[d];
        }
      else
        {
          gs[n] = shape[d];
          gst[n] = strides[d];
          gr[n] = mask[d];
          n++;
        }
    }
  memset (p, 0, sizeof *p);
  p->inner = p->span = 1;
  if (n > 0 && !gr[n - 1])
    p->inner = gs[--n];
  else if (n > 0)
    p->span = gs[--n];
  for (int g = 0; g < n; g++)
    {
      if (gr[g])
        {
          p->rshape[p->nr] = gs[g];
          p->rstride[p->nr++] = gst[g];
        }
      else
        {
          p->kshape[p->nk] = gs[g];
          p->kstride[p->nk++] = gst[g];
        }
    }
  p->rows = p->rcount = 1;
  for (int g = 0; g < p->nk; g++)
    p->rows *= p->kshape[g];
  for (int g = 0; g < p->nr; g++)
    p->rcount *= p->rshape[g];
}

static inline int64_t
plan_row_offset (const red_plan *p, int64_t r)
{
  int64_t o = 0;
  for (int g = p->nk - 1; g >= 0; g--)
    {
      o += (r % p->kshape[g]) * p->kstride[g];
      r /= p->kshape[g];
    }
  return o;
}

/* Offset of the k-th reduced multi-index (row-major over rshape). */
static inline int64_t
plan_red_offset (const red_plan *p, int64_t k)
{
  int64_t o = 0;
  for (int g = p->nr - 1; g >= 0; g--)
    {
      o += (k % p->rshape[g]) * p->rstride[g];
      k /= p->rshape[g];
    }
  return o;
}

/* ---- kernels (float and double) ----------------------------------------- */

#define RED_KERNELS(T)                                                                       \
  /* Sum of one block (<= RED_BLOCK elements) with RED_LANES accumulators. */               \
  static inline double block_sum_##T (const T *restrict xb, int64_t m)                      \
  {                                                                                         \
    double acc[RED_LANES] = { 0 }, s = 0;                                                   \
    int64_t i = 0;                                                                          \
    for (; i + RED_LANES <= m; i += RED_LANES)                                              \
      for (int l = 0; l < RED_LANES; l++)                                                   \
        acc[l] += (double) xb[i + l];                                                       \
    for (; i < m; i++)                                                                      \
      s += (double) xb[i];                                                                  \
    for (int l = 0; l < RED_LANES; l++)                                                     \
      s += acc[l];                                                                          \
    return s;                                                                               \
  }                                                                                         \
                                                                                            \
  /* Sum of x[0..n) in fixed blocks, partials added in block order: the same                \
   * value whether the blocks run on one thread (nt = 1) or several. */                     \
  static double span_sum_##T (const T *restrict x, int64_t n, int nt)                       \
  {                                                                                         \
    int64_t nb = (n + RED_BLOCK - 1) / RED_BLOCK;                                           \
    if (nt <= 1 || n <= RED_PAR_MIN)                                                        \
      {                                                                                     \
        double s = 0;                                                                       \
        for (int64_t b = 0; b < nb; b++)                                                    \
          s += block_sum_##T (x + b * RED_BLOCK, MIN (RED_BLOCK, n - b * RED_BLOCK));       \
        return s;                                                                           \
      }                                                                                     \
    double *part = tw_scratch (NULL, nb * sizeof (double));                                 \
    TW_PARALLEL_FOR (TRUE, nt, b, nb, {                                                     \
        part[b] = block_sum_##T (x + b * RED_BLOCK, MIN (RED_BLOCK, n - b * RED_BLOCK));    \
      });                                                                                   \
    double s = 0;                                                                           \
    for (int64_t b = 0; b < nb; b++)                                                        \
      s += part[b];                                                                         \
    return s;                                                                               \
  }                                                                                         \
                                                                                            \
  /* Max (dir 1) or min (-1) of x[0..n), NaN if any element is NaN (as torch.max). */     \
  static T span_max_##T (const T *restrict x, int64_t n, int dir)                           \
  {                                                                                         \
    T m[RED_LANES];                                                                         \
    int nan = 0;                                                                            \
    int64_t i = 0;                                                                          \
    for (int l = 0; l < RED_LANES; l++)                                                     \
      m[l] = x[0];                                                                          \
    for (; i + RED_LANES <= n; i += RED_LANES)                                              \
      for (int l = 0; l < RED_LANES; l++)                                                   \
        {                                                                                   \
          T v = x[i + l];                                                                   \
          nan |= v != v;                                                                    \
          m[l] = RED_BETTER (v, m[l], dir) ? v : m[l];                                      \
        }                                                                                   \
    for (; i < n; i++)                                                                      \
      {                                                                                     \
        nan |= x[i] != x[i];                                                                \
        m[0] = RED_BETTER (x[i], m[0], dir) ? x[i] : m[0];                                  \
      }                                                                                     \
    for (int l = 1; l < RED_LANES; l++)                                                     \
      m[0] = RED_BETTER (m[l], m[0], dir) ? m[l] : m[0];                                    \
    return nan ? (T) NAN : m[0];                                                            \
  }                                                                                         \
                                                                                            \
  /* Row r of a reduction: y[r, :] from its part of x; acc: [inner] doubles. */             \
  static void reduce_row_##T (const red_plan *p, const T *x, T *y, int is_max, double mul,    \
                              double *acc, int64_t r)                                       \
  {                                                                                         \
    const T *xr = x + plan_row_offset (p, r);                                               \
    T *restrict yr = y + r * p->inner;                                                      \
    if (p->inner > 1 && !is_max)                                                            \
      {                                                                                     \
        for (int64_t j = 0; j < p->inner; j++)                                              \
          acc[j] = 0;                                                                       \
        for (int64_t k = 0; k < p->rcount * p->span; k++)                                   \
          {                                                                                 \
            /* span == 1 here: a trailing group is kept, not reduced */                     \
            const T *restrict xk = xr + plan_red_offset (p, k);                             \
            _Pragma ("omp simd")                                                            \
            for (int64_t j = 0; j < p->inner; j++)                                          \
              acc[j] += (double) xk[j];                                                     \
          }                                                                                 \
        for (int64_t j = 0; j < p->inner; j++)                                              \
          yr[j] = (T) (acc[j] * mul);                                                       \
      }                                                                                     \
    else if (p->inner > 1)                                                                  \
      {                                                                                     \
        memcpy (yr, xr + plan_red_offset (p, 0), p->inner * sizeof (T));                    \
        for (int64_t k = 1; k < p->rcount; k++)                                             \
          {                                                                                 \
            const T *restrict xk = xr + plan_red_offset (p, k);                             \
            for (int64_t j = 0; j < p->inner; j++)                                          \
              yr[j] = (RED_BETTER (xk[j], yr[j], is_max) || isnan (xk[j])) ? xk[j] : yr[j]; \
          }                                                                                 \
      }                                                                                     \
    else if (!is_max)                                                                       \
      {                                                                                     \
        double s = 0;                                                                       \
        for (int64_t k = 0; k < p->rcount; k++)                                             \
          s += span_sum_##T (xr + plan_red_offset (p, k), p->span, 1);                      \
        yr[0] = (T) (s * mul);                                                              \
      }                                                                                     \
    else                                                                                    \
      {                                                                                     \
        T m = span_max_##T (xr + plan_red_offset (p, 0), p->span, is_max);                 \
        for (int64_t k = 1; k < p->rcount; k++)                                             \
          {                                                                                 \
            T v = span_max_##T (xr + plan_red_offset (p, k), p->span, is_max);             \
            m = (RED_BETTER (v, m, is_max) || isnan (v)) ? v : m;                           \
          }                                                                                 \
        yr[0] = m;                                                                          \
      }                                                                                     \
  }                                                                                         \
                                                                                            \
  /* x: the plan's input; y: [rows, inner] = the output, contiguous.                        \
   * is_max: 1 max, -1 min, 0 sum; sum results are multiplied by mul. */                    \
  static void reduce_##T (const red_plan *p, const T *x, T *y, int is_max, double mul,      \
                          int nt)                                                           \
  {                                                                                         \
    int64_t total = p->rows * p->inner * p->rcount * p->span;                               \
    if (p->rows == 1 && p->inner == 1 && p->rcount == 1 && !is_max)                         \
      {                                                                                     \
        y[0] = (T) (span_sum_##T (x, p->span, nt) * mul);                                   \
        return;                                                                             \
      }                                                                                     \
    /* Per-thread accumulators, taken before the team starts (kernels never allocate). */   \
    gboolean par = total > RED_PAR_MIN && p->rows > 1;                                      \
    int team = par && nt > 1 ? nt : 1;                                                      \
    double *acc_all = p->inner > 1 ? tw_scratch (NULL, (size_t) team * p->inner * sizeof (double))\
                                   : NULL;                                                  \
    TW_PARALLEL_FOR (par, nt, r, p->rows, {                                                 \
        double *acc = acc_all ? acc_all + (size_t) omp_get_thread_num () * p->inner : NULL; \
        reduce_row_##T (p, x, y, is_max, mul, acc, r);                                      \
      });                                                                                   \
  }                                                                                         \
                                                                                            \
  /* Row r of max_grad; done: [inner] flags. */                                             \
  static void max_grad_row_##T (const red_plan *p, const T *x, const T *y, const T *dy, T *dx,\
                                guint8 *done, int64_t r)                                    \
  {                                                                                         \
    int64_t base = plan_row_offset (p, r);                                                  \
    const T *yr = y + r * p->inner, *dyr = dy + r * p->inner;                               \
    int64_t left = p->inner;                                                                \
    memset (done, 0, p->inner);                                                             \
    for (int64_t k = 0; k < p->rcount && left > 0; k++)                                     \
      for (int64_t s = 0; s < p->span && left > 0; s++)                                     \
        {                                                                                   \
          int64_t o = base + plan_red_offset (p, k) + s;                                    \
          for (int64_t j = 0; j < p->inner; j++)                                            \
            if (!done[j] && (x[o + j] == yr[j] || (isnan (x[o + j]) && isnan (yr[j]))))     \
              {                                                                             \
                dx[o + j] = dyr[j];                                                         \
                done[j] = 1;                                                                \
                left--;                                                                     \
              }                                                                             \
        }                                                                                   \
  }                                                                                         \
                                                                                            \
  /* dx (shaped like x) = 0 except dy at the first position (row-major over                 \
   * the reduced dims) where x equals its max y. */                                         \
  static void max_grad_##T (const red_plan *p, const T *x, const T *y, const T *dy, T *dx,  \
                            int nt)                                                         \
  {                                                                                         \
    int64_t total = p->rows * p->inner * p->rcount * p->span;                               \
    memset (dx, 0, total * sizeof (T));                                                     \
    gboolean par = total > RED_PAR_MIN && p->rows > 1;                                      \
    int team = par && nt > 1 ? nt : 1;                                                      \
    int64_t width = MAX (p->inner, 1);                                                      \
    guint8 *done_all = tw_scratch (NULL, (size_t) team * width);                            \
    TW_PARALLEL_FOR (par, nt, r, p->rows, {                                                 \
        max_grad_row_##T (p, x, y, dy, dx, done_all + (size_t) omp_get_thread_num () * width, r);\
      });                                                                                   \
  }

RED_KERNELS (float)
RED_KERNELS (double)

/* out[0] = sum or max of in[0] over the dims in mask, times mul. */
static void
run_reduce (const tw_kctx *ctx, const tw_tensor *x, const gboolean *mask, tw_tensor *y,
            int is_max, double mul)
{
  red_plan p;
  if (tw_tensor_numel (y) == 0)
    return;
  red_plan_init (&p, x->ndim, x->shape, mask);
  if (x->dtype == TW_F32)
    reduce_float (&p, tw_tensor_f32 (x), tw_tensor_f32 (y), is_max, mul, red_threads (ctx));
  else
    reduce_double (&p, tw_tensor_f64 (x), tw_tensor_f64 (y), is_max, mul, red_threads (ctx));
}

/* ---- sum / mean / max ---------------------------------------------------- */

static gboolean
check_float (const tw_tinfo *t, GError **error)
{
  if (tw_dtype_is_float (t->dtype))
    return TRUE;
  g_autofree char *s = tw_tinfo_to_string (t);
  g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_DTYPE,
               "expects a float input (f32 or f64), got %s", s);
  return FALSE;
}

gboolean
tw_reduce_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  gboolean mask[TW_MAX_DIMS];
  gboolean keep = tw_attrs_get_bool (a, "keepdim", FALSE);
  if (!check_float (&in[0], error) || !tw_reduce_axes_mask (a, in[0].ndim, mask, error))
    return FALSE;
  out[0].dtype = in[0].dtype;
  out[0].ndim = 0;
  for (int d = 0; d < in[0].ndim; d++)
    if (!mask[d])
      out[0].dims[out[0].ndim++] = in[0].dims[d];
    else if (keep)
      out[0].dims[out[0].ndim++] = 1;
  return TRUE;
}

static int64_t
reduced_count (const tw_tensor *x, const gboolean *mask)
{
  int64_t c = 1;
  for (int d = 0; d < x->ndim; d++)
    if (mask[d])
      c *= x->shape[d];
  return c;
}

static gboolean
sum_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
             tw_tensor *const *out, GError **error)
{
  gboolean mask[TW_MAX_DIMS];
  if (!tw_reduce_axes_mask (a, in[0]->ndim, mask, error))
    return FALSE;
  run_reduce (ctx, in[0], mask, out[0], FALSE, 1.0);
  return TRUE;
}

static gboolean
mean_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
              tw_tensor *const *out, GError **error)
{
  gboolean mask[TW_MAX_DIMS];
  if (!tw_reduce_axes_mask (a, in[0]->ndim, mask, error))
    return FALSE;
  int64_t c = reduced_count (in[0], mask);
  run_reduce (ctx, in[0], mask, out[0], FALSE, c > 0 ? 1.0 / (double) c : NAN);
  return TRUE;
}

/* dir 1: max, -1: min. */
static gboolean
extremum_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in,
                  tw_tensor *const *out, int dir, GError **error)
{
  gboolean mask[TW_MAX_DIMS];
  if (!tw_reduce_axes_mask (a, in[0]->ndim, mask, error))
    return FALSE;
  if (reduced_count (in[0], mask) == 0)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "%s over an empty set of elements (a reduced dim has size 0)",
                   dir > 0 ? "max" : "min");
      return FALSE;
    }
  run_reduce (ctx, in[0], mask, out[0], dir, 1.0);
  return TRUE;
}

static gboolean
max_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
             tw_tensor *const *out, GError **error)
{
  return extremum_forward (ctx, a, in, out, 1, error);
}

static gboolean
min_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
             tw_tensor *const *out, GError **error)
{
  return extremum_forward (ctx, a, in, out, -1, error);
}

/* Attributes for broadcast_to re-inserting the dims a keepdim=false
 * reduction dropped (NULL when keepdim is set: plain broadcasting works). */
tw_attrs *
tw_reduce_reinsert_attrs (tw_emit *e, const tw_attrs *a, tw_val *x)
{
  gboolean mask[TW_MAX_DIMS];
  int64_t axes[TW_MAX_DIMS];
  int n = 0, ndim = tw_val_info (e, x)->ndim;
  if (tw_attrs_get_bool (a, "keepdim", FALSE) || !tw_reduce_axes_mask (a, ndim, mask, NULL))
    return NULL;
  for (int d = 0; d < ndim; d++)
    if (mask[d])
      axes[n++] = d;
  tw_attrs *b = tw_attrs_new ();
  tw_attrs_set_ints (b, "axes", n, axes);
  return b;
}

static gboolean
sum_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
              tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  tw_attrs *b = tw_reduce_reinsert_attrs (e, a, in[0]);
  gin[0] = tw_emit2 (e, "broadcast_to", b, gout[0], in[0]);
  tw_attrs_free (b);
  return TRUE;
}

static gboolean
mean_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
               tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  const tw_tinfo *xi = tw_val_info (e, in[0]);
  gboolean mask[TW_MAX_DIMS];
  int64_t c = 1;
  if (!tw_reduce_axes_mask (a, xi->ndim, mask, NULL))
    return FALSE;
  for (int d = 0; d < xi->ndim; d++)
    if (mask[d])
      c *= xi->dims[d];
  /* scale the (smaller) reduced gradient before expanding it */
  tw_attrs *s = tw_attrs_new ();
  tw_attrs_set_float (s, "alpha", 1.0 / (double) MAX (c, 1));
  tw_val *g = tw_emit1 (e, "scale", s, gout[0]);
  tw_attrs_free (s);
  tw_attrs *b = tw_reduce_reinsert_attrs (e, a, in[0]);
  gin[0] = tw_emit2 (e, "broadcast_to", b, g, in[0]);
  tw_attrs_free (b);
  return TRUE;
}

static gboolean
max_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
              tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  gin[0] = tw_emit3 (e, "max_grad", a, in[0], out[0], gout[0]);
  return TRUE;
}

/* max_grad routes dy to the first element equal to y: the minimum's too. */
#define min_backward max_backward

static void
reduce_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
             tw_cost *cost)
{
  double es = tw_dtype_size (in[0].dtype);
  double n = (double) tw_tinfo_numel (&in[0], NULL);
  cost->flops = n;
  cost->bytes_read = n * es;
  cost->bytes_written = (double) tw_tinfo_numel (&out[0], NULL) * es;
}

/* ---- max_grad ---------------------------------------------------------------- */

/* (x, y, dy) → dx like x; y and dy shaped as max's output. */
static gboolean
max_grad_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  tw_tinfo r;
  if (!tw_reduce_infer (a, in, 1, &r, error))
    return FALSE;
  for (int i = 1; i < 3; i++)
    if (!tw_tinfo_equal (&r, &in[i]))
      {
        g_autofree char *want = tw_tinfo_to_string (&r);
        g_autofree char *got = tw_tinfo_to_string (&in[i]);
        g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                     "max_grad expects input %d of shape %s (max's output), got %s", i, want,
                     got);
        return FALSE;
      }
  out[0] = in[0];
  return TRUE;
}

static gboolean
max_grad_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                  tw_tensor *const *out, GError **error)
{
  gboolean mask[TW_MAX_DIMS];
  red_plan p;
  if (!tw_reduce_axes_mask (a, in[0]->ndim, mask, error))
    return FALSE;
  if (tw_tensor_numel (in[0]) == 0)
    return TRUE;
  red_plan_init (&p, in[0]->ndim, in[0]->shape, mask);
  if (in[0]->dtype == TW_F32)
    max_grad_float (&p, tw_tensor_f32 (in[0]), tw_tensor_f32 (in[1]), tw_tensor_f32 (in[2]),
                    tw_tensor_f32 (out[0]), red_threads (ctx));
  else
    max_grad_double (&p, tw_tensor_f64 (in[0]), tw_tensor_f64 (in[1]), tw_tensor_f64 (in[2]),
                     tw_tensor_f64 (out[0]), red_threads (ctx));
  return TRUE;
}

/* ---- sum_to ------------------------------------------------------------------ */

/* (g, like) → g summed down to like's shape; like must broadcast to g. */
static gboolean
sum_to_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  const tw_tinfo *g = &in[0], *l = &in[1];
  if (!check_float (g, error))
    return FALSE;
  gboolean ok = l->ndim <= g->ndim;
  for (int d = 0; ok && d < l->ndim; d++)
    {
      int64_t gd = g->dims[d + g->ndim - l->ndim];
      ok = l->dims[d] == gd || l->dims[d] == 1;
    }
  if (!ok)
    {
      g_autofree char *sg = tw_tinfo_to_string (g);
      g_autofree char *sl = tw_tinfo_to_string (l);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "sum_to: %s does not broadcast to the gradient's shape %s", sl, sg);
      return FALSE;
    }
  out[0] = *l;
  out[0].dtype = g->dtype;
  return TRUE;
}

static gboolean
sum_to_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                tw_tensor *const *out, GError **error)
{
  const tw_tensor *g = in[0], *l = in[1];
  gboolean mask[TW_MAX_DIMS];
  int lead = g->ndim - l->ndim;
  for (int d = 0; d < g->ndim; d++)
    mask[d] = d < lead || (l->shape[d - lead] == 1 && g->shape[d] != 1);
  run_reduce (ctx, g, mask, out[0], FALSE, 1.0);
  return TRUE;
}

static gboolean
sum_to_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
                 tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  if (needs[0])
    gin[0] = tw_emit2 (e, "broadcast_to", NULL, gout[0], in[0]);
  if (needs[1])
    gin[1] = tw_emit1 (e, "zeros_like", NULL, in[1]);
  return TRUE;
}

/* ---- broadcast_to ------------------------------------------------------------ */

/* g's shape with size-1 dims inserted at "axes" (if given), in *gs. */
static gboolean
reinserted_shape (const tw_attrs *a, const tw_tinfo *g, const tw_tinfo *like, tw_tinfo *gs,
                  GError **error)
{
  gboolean mask[TW_MAX_DIMS];
  *gs = *g;
  if (!tw_attrs_has (a, "axes"))
    return TRUE;
  int n = tw_attrs_get_ints (a, "axes", NULL, 0);
  if (g->ndim + n != like->ndim || !tw_reduce_axes_mask (a, like->ndim, mask, NULL))
    {
      g_autofree char *sg = tw_tinfo_to_string (g);
      g_autofree char *sl = tw_tinfo_to_string (like);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "broadcast_to: %s plus %d re-inserted axes does not give the rank of %s", sg,
                   n, sl);
      return FALSE;
    }
  for (int d = 0, k = 0; d < like->ndim; d++)
    gs->dims[d] = mask[d] ? 1 : g->dims[k++];
  gs->ndim = like->ndim;
  return TRUE;
}

static gboolean
broadcast_to_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                    GError **error)
{
  tw_tinfo gs;
  if (!check_float (&in[0], error) || !reinserted_shape (a, &in[0], &in[1], &gs, error))
    return FALSE;
  gboolean ok = gs.ndim <= in[1].ndim;
  for (int d = 0; ok && d < gs.ndim; d++)
    {
      int64_t ld = in[1].dims[d + in[1].ndim - gs.ndim];
      ok = gs.dims[d] == ld || gs.dims[d] == 1;
    }
  if (!ok)
    {
      g_autofree char *sg = tw_tinfo_to_string (&gs);
      g_autofree char *sl = tw_tinfo_to_string (&in[1]);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "broadcast_to: %s does not broadcast to %s", sg, sl);
      return FALSE;
    }
  out[0] = in[1];
  out[0].dtype = in[0].dtype;
  return TRUE;
}

#define EXPAND_KERNEL(T)                                                                     \
  /* y: shape (contiguous); x: stride per dim (0 = broadcast). */                           \
  static void expand_##T (int nd, const int64_t *shape, const int64_t *xs, const T *x, T *y, \
                          int nt)                                                           \
  {                                                                                         \
    int64_t inner = shape[nd - 1], sx = xs[nd - 1], rows = 1;                               \
    for (int d = 0; d < nd - 1; d++)                                                        \
      rows *= shape[d];                                                                     \
    TW_PARALLEL_FOR (rows * inner > RED_PAR_MIN, nt, r, rows, {                             \
        int64_t o = 0, q = r;                                                               \
        for (int d = nd - 2; d >= 0; d--)                                                   \
          {                                                                                 \
            o += (q % shape[d]) * xs[d];                                                    \
            q /= shape[d];                                                                  \
          }                                                                                 \
        T *restrict yr = y + r * inner;                                                     \
        const T *restrict xr = x + o;                                                       \
        if (sx)                                                                             \
          memcpy (yr, xr, inner * sizeof (T));                                              \
        else                                                                                \
          for (int64_t j = 0; j < inner; j++)                                               \
            yr[j] = xr[0];                                                                  \
      });                                                                                   \
  }

EXPAND_KERNEL (float)
EXPAND_KERNEL (double)

static gboolean
broadcast_to_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                      tw_tensor *const *out, GError **error)
{
  tw_tinfo g, l, gs;
  int64_t shape[TW_MAX_DIMS], xs[TW_MAX_DIMS];
  int nd = 0;
  tw_tinfo_from_tensor (&g, in[0]);
  tw_tinfo_from_tensor (&l, in[1]);
  if (!reinserted_shape (a, &g, &l, &gs, error))
    return FALSE;
  if (tw_tensor_numel (out[0]) == 0)
    return TRUE;
  /* strides of g in out's dims, size-1 dims dropped, contiguous runs merged */
  int lead = out[0]->ndim - gs.ndim;
  int64_t st = 1, s[TW_MAX_DIMS];
  for (int d = out[0]->ndim - 1; d >= 0; d--)
    {
      int64_t gd = d < lead ? 1 : gs.dims[d - lead];
      s[d] = gd == 1 ? 0 : st;
      st *= gd;
    }
  for (int d = 0; d < out[0]->ndim; d++)
    {
      int64_t n = out[0]->shape[d];
      if (n == 1)
        continue;
      if (nd > 0 && xs[nd - 1] == s[d] * n)
        {
          shape[nd - 1] *= n;
          xs[nd - 1] = s[d];
        }
      else
        {
          shape[nd] = n;
          xs[nd++] = s[d];
        }
    }
  if (nd == 0)
    {
      shape[0] = 1;
      xs[0] = 0;
      nd = 1;
    }
  if (in[0]->dtype == TW_F32)
    expand_float (nd, shape, xs, tw_tensor_f32 (in[0]), tw_tensor_f32 (out[0]),
                  red_threads (ctx));
  else
    expand_double (nd, shape, xs, tw_tensor_f64 (in[0]), tw_tensor_f64 (out[0]),
                   red_threads (ctx));
  return TRUE;
}

static gboolean
broadcast_to_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                       tw_val *const *out, tw_val *const *gout, const gboolean *needs,
                       tw_val **gin)
{
  if (needs[0])
    {
      tw_val *g = gout[0];
      if (tw_attrs_has (a, "axes"))
        {
          int64_t axes[TW_ATTR_MAX_LIST];
          int n = tw_attrs_get_ints (a, "axes", axes, TW_ATTR_MAX_LIST);
          tw_attrs *s = tw_attrs_new ();
          tw_attrs_set_ints (s, "axes", n, axes);
          tw_attrs_set_bool (s, "keepdim", FALSE);
          g = n > 0 ? tw_emit1 (e, "sum", s, g) : g;
          tw_attrs_free (s);
        }
      const tw_tinfo *gi = tw_val_info (e, g), *xi = tw_val_info (e, in[0]);
      gboolean same = gi->ndim == xi->ndim;
      for (int d = 0; same && d < gi->ndim; d++)
        same = gi->dims[d] == xi->dims[d];
      gin[0] = same ? g : tw_emit2 (e, "sum_to", NULL, g, in[0]);
    }
  if (needs[1])
    gin[1] = tw_emit1 (e, "zeros_like", NULL, in[1]);
  return TRUE;
}

static void
copy_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
           tw_cost *cost)
{
  tw_cost_elementwise (in, 1, out, n_out, 0, cost);
}

/* ---- definitions ------------------------------------------------------------- */

static const tw_attr_spec reduce_attrs[] = {
  { "axes", TW_ATTR_INTS, NULL, FALSE, "dims to reduce (negative from the end); absent: all" },
  { "keepdim", TW_ATTR_BOOL, "false", FALSE, "keep reduced dims with size 1" },
  { NULL }
};
static const tw_attr_spec broadcast_to_attrs[] = {
  { "axes", TW_ATTR_INTS, NULL, FALSE,
    "dims of like that g lacks (re-inserted with size 1); absent: NumPy broadcasting" },
  { NULL }
};
static const tw_attr_spec no_attrs[] = { { NULL } };
static const char *const names_x[] = { "x", NULL };
static const char *const names_g_like[] = { "g", "like", NULL };
static const char *const names_max_grad[] = { "x", "y", "dy", NULL };

#define DEF_REDUCE(NAME, DOC, ONNX)                                                          \
  static const tw_op_def NAME##_def = {                                                     \
    .name = #NAME, .category = "Math", .doc = DOC, .attrs = reduce_attrs, .min_inputs = 1,  \
    .max_inputs = 1, .input_names = names_x, .n_outputs = 1, .infer = tw_reduce_infer,         \
    .forward = NAME##_forward, .backward = NAME##_backward, .cost = reduce_cost,            \
    .onnx_name = ONNX,                                                                      \
  };

DEF_REDUCE (sum, "sum over axes", "ReduceSum")
DEF_REDUCE (mean, "mean over axes", "ReduceMean")
DEF_REDUCE (max, "maximum over axes (gradient to the first maximum)", "ReduceMax")
DEF_REDUCE (min, "minimum over axes (gradient to the first minimum)", "ReduceMin")

static const tw_op_def max_grad_def = {
  .name = "max_grad", .category = "Math",
  .doc = "dy routed to the first position of the maximum (or minimum) y of x",
  .attrs = reduce_attrs, .min_inputs = 3, .max_inputs = 3, .input_names = names_max_grad,
  .n_outputs = 1, .infer = max_grad_infer, .forward = max_grad_forward, .cost = copy_cost,
  .flags = TW_OP_INTERNAL,
};

static const tw_op_def sum_to_def = {
  .name = "sum_to", .category = "Math",
  .doc = "g summed over its broadcast dims down to the shape of like",
  .attrs = no_attrs, .min_inputs = 2, .max_inputs = 2, .input_names = names_g_like,
  .n_outputs = 1, .infer = sum_to_infer, .forward = sum_to_forward, .backward = sum_to_backward,
  .cost = reduce_cost, .flags = TW_OP_INTERNAL,
};

static const tw_op_def broadcast_to_def = {
  .name = "broadcast_to", .category = "Math",
  .doc = "g expanded to the shape of like",
  .attrs = broadcast_to_attrs, .min_inputs = 2, .max_inputs = 2, .input_names = names_g_like,
  .n_outputs = 1, .infer = broadcast_to_infer, .forward = broadcast_to_forward,
  .backward = broadcast_to_backward, .cost = copy_cost, .flags = TW_OP_INTERNAL,
};

void
tw_ops_register_reduce (void)
{
  tw_op_register (&sum_def);
  tw_op_register (&mean_def);
  tw_op_register (&max_def);
  tw_op_register (&min_def);
  tw_op_register (&max_grad_def);
  tw_op_register (&sum_to_def);
  tw_op_register (&broadcast_to_def);
}
