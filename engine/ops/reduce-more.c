/* reduce-more.c — the reductions ONNX has beyond sum, mean, max and min:
 *
 *   prod       (x) -> product over axes             ReduceProd
 *   logsumexp  (x) -> log (sum (exp x)) over axes   ReduceLogSumExp
 *   prod_grad  (x, dy) -> dx (internal)
 *
 * Attributes as sum's ("axes" absent or empty: every dim; "keepdim").
 * Both accumulate in double, walking the input once in row-major order
 * (single-threaded: ONNX graphs use them on small tensors), so results do
 * not depend on the thread count.  logsumexp subtracts each group's maximum
 * first: exact for large inputs where the naive form overflows.  The
 * gradient of prod is the product of the other elements of the group (no
 * division by a zero element); that of logsumexp is dy * exp (x - y). */
#include "engine/ops/reduce-private.h"

#include <math.h>
#include <string.h>

/* ---- the input → output map ------------------------------------------------------ */

/* Output offset of each input element: ost[d] is the output stride of a
 * kept dim, 0 for a reduced one. */
typedef struct
{
  int nd;
  int64_t shape[TW_MAX_DIMS], ost[TW_MAX_DIMS];
  int64_t n, nout;
} rm_map;

static void
rm_map_init (rm_map *m, const tw_tensor *x, const gboolean *mask)
{
  int64_t st = 1;
  m->nd = x->ndim;
  m->n = tw_tensor_numel (x);
  for (int d = x->ndim - 1; d >= 0; d--)
    {
      m->shape[d] = x->shape[d];
      m->ost[d] = mask[d] ? 0 : st;
      if (!mask[d])
        st *= x->shape[d];
    }
  m->nout = st;
}

/* for every input element i (row-major), with o its output offset: body. */
#define RM_WALK(m, i, o, ...)                                                                \
  do                                                                                        \
    {                                                                                       \
      int64_t rm_idx_[TW_MAX_DIMS] = { 0 };                                                 \
      int64_t o = 0;                                                                        \
      for (int64_t i = 0; i < (m)->n; i++)                                                  \
        {                                                                                   \
          __VA_ARGS__;                                                                      \
          for (int d_ = (m)->nd - 1; d_ >= 0; d_--)                                         \
            {                                                                               \
              o += (m)->ost[d_];                                                            \
              if (++rm_idx_[d_] < (m)->shape[d_])                                           \
                break;                                                                      \
              o -= (m)->ost[d_] * (m)->shape[d_];                                           \
              rm_idx_[d_] = 0;                                                              \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
  while (0)

static inline double
rm_get (const tw_tensor *t, int64_t i)
{
  return t->dtype == TW_F32 ? (double) tw_tensor_f32 (t)[i] : tw_tensor_f64 (t)[i];
}

static inline void
rm_set (tw_tensor *t, int64_t i, double v)
{
  if (t->dtype == TW_F32)
    tw_tensor_f32 (t)[i] = (float) v;
  else
    tw_tensor_f64 (t)[i] = v;
}

/* ---- prod ------------------------------------------------------------------------ */

static gboolean
prod_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
              tw_tensor *const *out, GError **error)
{
  gboolean mask[TW_MAX_DIMS];
  rm_map m;
  if (!tw_reduce_axes_mask (a, in[0]->ndim, mask, error))
    return FALSE;
  rm_map_init (&m, in[0], mask);
  double *acc = tw_scratch (ctx, MAX (m.nout, 1) * sizeof (double));
  for (int64_t o = 0; o < m.nout; o++)
    acc[o] = 1.0;
  RM_WALK (&m, i, o, acc[o] *= rm_get (in[0], i));
  for (int64_t o = 0; o < m.nout; o++)
    rm_set (out[0], o, acc[o]);
  return TRUE;
}

static gboolean
prod_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
               tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  gin[0] = tw_emit2 (e, "prod_grad", a, in[0], gout[0]);
  return gin[0] != NULL;
}

static gboolean
prod_grad_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  tw_tinfo y;
  if (!tw_reduce_infer (a, &in[0], 1, &y, error))
    return FALSE;
  if (!tw_tinfo_equal (&y, &in[1]))
    {
      g_autofree char *want = tw_tinfo_to_string (&y);
      g_autofree char *got = tw_tinfo_to_string (&in[1]);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "prod_grad expects dy of shape %s (prod's output), got %s", want, got);
      return FALSE;
    }
  out[0] = in[0];
  return TRUE;
}

/* dx = dy times the product of the other elements of the group: the
 * product of the non-zero ones over x when the group has no zero, that
 * product at the single zero, 0 elsewhere. */
static gboolean
prod_grad_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                   tw_tensor *const *out, GError **error)
{
  gboolean mask[TW_MAX_DIMS];
  rm_map m;
  if (!tw_reduce_axes_mask (a, in[0]->ndim, mask, error))
    return FALSE;
  rm_map_init (&m, in[0], mask);
  double *nz = tw_scratch (ctx, MAX (m.nout, 1) * 2 * sizeof (double));
  double *zeros = nz + MAX (m.nout, 1);
  for (int64_t o = 0; o < m.nout; o++)
    nz[o] = 1.0, zeros[o] = 0;
  RM_WALK (&m, i, o, {
    double v = rm_get (in[0], i);
    if (v == 0)
      zeros[o] += 1;
    else
      nz[o] *= v;
  });
  RM_WALK (&m, i, o, {
    double v = rm_get (in[0], i), g = rm_get (in[1], o), r;
    if (zeros[o] == 0)
      r = nz[o] / v;
    else
      r = zeros[o] == 1 && v == 0 ? nz[o] : 0.0;
    rm_set (out[0], i, g * r);
  });
  return TRUE;
}

/* ---- logsumexp ----------------------------------------------------------------- */

static gboolean
logsumexp_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                   tw_tensor *const *out, GError **error)
{
  gboolean mask[TW_MAX_DIMS];
  rm_map m;
  if (!tw_reduce_axes_mask (a, in[0]->ndim, mask, error))
    return FALSE;
  rm_map_init (&m, in[0], mask);
  double *mx = tw_scratch (ctx, MAX (m.nout, 1) * 2 * sizeof (double));
  double *s = mx + MAX (m.nout, 1);
  for (int64_t o = 0; o < m.nout; o++)
    mx[o] = -INFINITY, s[o] = 0;
  RM_WALK (&m, i, o, {
    double v = rm_get (in[0], i);
    if (v > mx[o] || isnan (v))
      mx[o] = isnan (mx[o]) ? mx[o] : v;
  });
  RM_WALK (&m, i, o, {
    if (isfinite (mx[o]))
      s[o] += exp (rm_get (in[0], i) - mx[o]);
  });
  for (int64_t o = 0; o < m.nout; o++)
    rm_set (out[0], o, isfinite (mx[o]) ? mx[o] + log (s[o]) : mx[o]);
  return TRUE;
}

static gboolean
logsumexp_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                    tw_val *const *out, tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  tw_attrs *b = tw_reduce_reinsert_attrs (e, a, in[0]);
  tw_val *yb = tw_emit2 (e, "broadcast_to", b, out[0], in[0]);
  tw_val *gb = tw_emit2 (e, "broadcast_to", b, gout[0], in[0]);
  tw_attrs_free (b);
  if (yb == NULL || gb == NULL)
    return FALSE;
  tw_val *d = tw_emit2 (e, "sub", NULL, in[0], yb);
  tw_val *p = d ? tw_emit1 (e, "exp", NULL, d) : NULL;
  gin[0] = p ? tw_emit2 (e, "mul", NULL, gb, p) : NULL;
  return gin[0] != NULL;
}

static void
rm_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
         tw_cost *cost)
{
  double es = tw_dtype_size (in[0].dtype);
  double n = (double) tw_tinfo_numel (&in[0], NULL);
  cost->flops = n;
  cost->bytes_read = n * es * (n_in > 1 ? 2 : 1);
  cost->bytes_written = (double) tw_tinfo_numel (&out[0], NULL) * es;
}

static void
logsumexp_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
                tw_cost *cost)
{
  rm_cost (a, in, n_in, out, n_out, cost);
  cost->flops = 12.0 * (double) tw_tinfo_numel (&in[0], NULL);   /* compare, exp, add */
  cost->bytes_read *= 2;                                          /* two passes */
}

/* ---- definitions ------------------------------------------------------------------ */

static const tw_attr_spec rm_attrs[] = {
  { "axes", TW_ATTR_INTS, NULL, FALSE, "dims to reduce (negative from the end); absent: all" },
  { "keepdim", TW_ATTR_BOOL, "false", FALSE, "keep reduced dims with size 1" },
  { NULL }
};
static const char *const names_x[] = { "x", NULL };
static const char *const names_x_dy[] = { "x", "dy", NULL };

static const tw_op_def prod_def = {
  .name = "prod", .category = "Math", .doc = "product over axes", .attrs = rm_attrs,
  .min_inputs = 1, .max_inputs = 1, .input_names = names_x, .n_outputs = 1,
  .infer = tw_reduce_infer, .forward = prod_forward, .backward = prod_backward, .cost = rm_cost,
  .onnx_name = "ReduceProd",
};

static const tw_op_def prod_grad_def = {
  .name = "prod_grad", .category = "Math",
  .doc = "dy times the product of the other elements of each reduced group",
  .attrs = rm_attrs, .min_inputs = 2, .max_inputs = 2, .input_names = names_x_dy,
  .n_outputs = 1, .infer = prod_grad_infer, .forward = prod_grad_forward, .cost = rm_cost,
  .flags = TW_OP_INTERNAL,
};

static const tw_op_def logsumexp_def = {
  .name = "logsumexp", .category = "Math",
  .doc = "log of the sum of exponentials over axes (max subtracted first)", .attrs = rm_attrs,
  .min_inputs = 1, .max_inputs = 1, .input_names = names_x, .n_outputs = 1,
  .infer = tw_reduce_infer, .forward = logsumexp_forward, .backward = logsumexp_backward,
  .cost = logsumexp_cost, .onnx_name = "ReduceLogSumExp",
};

void
tw_ops_register_reduce_more (void)
{
  tw_op_register (&prod_def);
  tw_op_register (&prod_grad_def);
  tw_op_register (&logsumexp_def);
}
