/* loss-more.c — the negative log-likelihood loss of ONNX graphs:
 *
 *   nll_loss      (x [N, C, d1...], target [N, d1...] (i64/i32), [weight [C]]) -> loss
 *   nll_loss_grad (x, target, [weight], dy) -> dx (internal)
 *
 * loss[n, d] = -weight[t] x[n, t, d] with t = target[n, d] (weight 1 when
 * absent); a target equal to ignore_index counts neither in the loss nor in
 * the weight total.  reduction "none" gives loss shaped as target, "sum" its
 * sum, "mean" the sum over the total weight of the counted targets (as
 * ONNX's NegativeLogLikelihoodLoss and torch.nn.functional.nll_loss).  x
 * holds log-probabilities (log_softmax over dim 1 makes it
 * SoftmaxCrossEntropyLoss).  Sums run in double in row-major order.  A
 * target outside 0..C-1 (and not ignored) is an error naming its position.
 * The gradient flows to x only (not to weight). */
#define G_LOG_DOMAIN "twb-ops-loss"

#include "engine/ops/nn-private.h"

#include <math.h>
#include <string.h>

static const char *const reduction_choices[] = { "none", "sum", "mean", NULL };
static const char *const names_nll[] = { "x", "target", "weight", NULL };
static const char *const names_nll_grad[] = { "x", "target", "weight", "dy", NULL };

static gboolean
is_none (const tw_attrs *a)
{
  return strcmp (tw_attrs_get_string (a, "reduction", "mean"), "none") == 0;
}

static gboolean
is_mean (const tw_attrs *a)
{
  return strcmp (tw_attrs_get_string (a, "reduction", "mean"), "mean") == 0;
}

static gboolean
dims_match (int64_t a, int64_t b)
{
  return a == b || a == TW_DIM_N || b == TW_DIM_N;
}

/* x [N, C, d...], target [N, d...], weight [C] (has_w). */
static gboolean
nll_check (const char *op, const tw_tinfo *x, const tw_tinfo *t, const tw_tinfo *w,
           GError **error)
{
  g_autofree char *sx = tw_tinfo_to_string (x);
  g_autofree char *st = tw_tinfo_to_string (t);
  if (!tw_nn_check_float (op, "x", x, error))
    return FALSE;
  if (x->ndim < 2)
    return tw_nn_shape_error (error, "%s expects x of rank 2 or more ([N, C, d1...]), got %s", op,
                              sx);
  if (t->dtype != TW_I64 && t->dtype != TW_I32)
    return tw_nn_shape_error (error, "%s expects i64 or i32 targets, got %s", op, st);
  gboolean ok = t->ndim == x->ndim - 1 && dims_match (t->dims[0], x->dims[0]);
  for (int d = 1; ok && d < t->ndim; d++)
    ok = dims_match (t->dims[d], x->dims[d + 1]);
  if (!ok)
    return tw_nn_shape_error (error, "%s expects target shaped as x without dim 1: x %s, target %s",
                              op, sx, st);
  if (x->dims[1] == TW_DIM_N)
    return tw_nn_shape_error (error, "%s expects a known class count (dim 1 of x %s)", op, sx);
  if (w)
    {
      g_autofree char *sw = tw_tinfo_to_string (w);
      if (w->dtype != x->dtype || w->ndim != 1 || w->dims[0] != x->dims[1])
        return tw_nn_shape_error (error, "%s expects weight %s[%" G_GINT64_FORMAT "], got %s", op,
                                  tw_dtype_name (x->dtype), x->dims[1], sw);
    }
  return TRUE;
}

static gboolean
nll_loss_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  if (!nll_check ("nll_loss", &in[0], &in[1], n_in > 2 ? &in[2] : NULL, error))
    return FALSE;
  if (is_none (a))
    {
      out[0] = in[1];
      out[0].dtype = in[0].dtype;
    }
  else
    tw_tinfo_set (&out[0], in[0].dtype, 0, NULL);
  return TRUE;
}

static inline double
fget (const tw_tensor *t, int64_t i)
{
  return t->dtype == TW_F32 ? (double) tw_tensor_f32 (t)[i] : tw_tensor_f64 (t)[i];
}

static inline void
fset (tw_tensor *t, int64_t i, double v)
{
  if (t->dtype == TW_F32)
    tw_tensor_f32 (t)[i] = (float) v;
  else
    tw_tensor_f64 (t)[i] = v;
}

/* Per position p of target (N * D of them): the class t (or -1 when
 * ignored) into cls[p], the weight into wp[p]; *wsum the counted weight.
 * FALSE naming the first target out of range. */
static gboolean
nll_classes (const tw_attrs *a, const tw_tensor *x, const tw_tensor *target, const tw_tensor *w,
             int64_t *cls, double *wp, double *wsum, GError **error)
{
  int64_t C = x->shape[1], P = tw_tensor_numel (target);
  gboolean has_ii = tw_attrs_has (a, "ignore_index");
  int64_t ii = tw_attrs_get_int (a, "ignore_index", 0);
  *wsum = 0;
  for (int64_t p = 0; p < P; p++)
    {
      int64_t t = target->dtype == TW_I64 ? tw_tensor_i64 (target)[p]
                                          : (int64_t) tw_tensor_i32 (target)[p];
      if (has_ii && t == ii)
        {
          cls[p] = -1, wp[p] = 0;
          continue;
        }
      if (t < 0 || t >= C)
        {
          g_autofree char *where = tw_nn_index_string (target->ndim, target->shape, p);
          return tw_nn_shape_error (error,
                                    "nll_loss: target %" G_GINT64_FORMAT " at %s is outside the %"
                                    G_GINT64_FORMAT " classes", t, where, C);
        }
      cls[p] = t;
      wp[p] = w ? fget (w, t) : 1.0;
      *wsum += wp[p];
    }
  return TRUE;
}

static gboolean
nll_loss_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                  tw_tensor *const *out, GError **error)
{
  const tw_tensor *x = in[0], *target = in[1], *w = n_in > 2 ? in[2] : NULL;
  int64_t C = x->shape[1], P = tw_tensor_numel (target), N = x->shape[0];
  int64_t D = N > 0 ? P / N : 0;
  int64_t *cls = tw_scratch (ctx, MAX (P, 1) * (sizeof (int64_t) + sizeof (double)));
  double *wp = (double *) (cls + MAX (P, 1)), wsum;
  if (!nll_classes (a, x, target, w, cls, wp, &wsum, error))
    return FALSE;
  double s = 0;
  for (int64_t p = 0; p < P; p++)
    {
      double l = cls[p] < 0 ? 0.0 : -wp[p] * fget (x, ((p / D) * C + cls[p]) * D + p % D);
      if (is_none (a))
        fset (out[0], p, l);
      else
        s += l;
    }
  if (!is_none (a))
    fset (out[0], 0, is_mean (a) ? s / wsum : s);
  return TRUE;
}

static gboolean
nll_loss_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                   tw_val *const *out, tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  if (n_in > 2 && needs[2])
    {
      /* Not written: ONNX graphs feed the class weights as constants. */
      return FALSE;
    }
  if (!needs[0])
    return TRUE;
  tw_val *args[4] = { in[0], in[1], n_in > 2 ? in[2] : gout[0], gout[0] };
  gin[0] = tw_emit_op (e, "nll_loss_grad", a, n_in + 1, args);
  return gin[0] != NULL;
}

static gboolean
nll_loss_grad_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                     GError **error)
{
  tw_tinfo y;
  if (!nll_check ("nll_loss_grad", &in[0], &in[1], n_in > 3 ? &in[2] : NULL, error)
      || !nll_loss_infer (a, in, n_in - 1, &y, error))
    return FALSE;
  if (!tw_tinfo_equal (&y, &in[n_in - 1]))
    {
      g_autofree char *want = tw_tinfo_to_string (&y);
      g_autofree char *got = tw_tinfo_to_string (&in[n_in - 1]);
      return tw_nn_shape_error (error, "nll_loss_grad expects dy %s (the loss's shape), got %s",
                                want, got);
    }
  out[0] = in[0];
  return TRUE;
}

static gboolean
nll_loss_grad_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                       tw_tensor *const *out, GError **error)
{
  const tw_tensor *x = in[0], *target = in[1], *w = n_in > 3 ? in[2] : NULL, *dy = in[n_in - 1];
  int64_t C = x->shape[1], P = tw_tensor_numel (target), N = x->shape[0];
  int64_t D = N > 0 ? P / N : 0;
  int64_t *cls = tw_scratch (ctx, MAX (P, 1) * (sizeof (int64_t) + sizeof (double)));
  double *wp = (double *) (cls + MAX (P, 1)), wsum;
  if (!nll_classes (a, x, target, w, cls, wp, &wsum, error))
    return FALSE;
  tw_tensor_fill (out[0], 0.0);
  double g0 = is_none (a) ? 0.0 : fget (dy, 0) / (is_mean (a) ? wsum : 1.0);
  for (int64_t p = 0; p < P; p++)
    if (cls[p] >= 0)
      fset (out[0], ((p / D) * C + cls[p]) * D + p % D,
            -wp[p] * (is_none (a) ? fget (dy, p) : g0));
  return TRUE;
}

static void
nll_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
          tw_cost *cost)
{
  double P = (double) tw_tinfo_numel (&in[1], NULL), es = tw_dtype_size (in[0].dtype);
  cost->flops = 2 * P;
  cost->bytes_read = P * (es + tw_dtype_size (in[1].dtype));
  cost->bytes_written = (double) tw_tinfo_numel (&out[0], NULL) * es;
}

static const tw_attr_spec nll_attrs[] = {
  { "reduction", TW_ATTR_STRING, "\"mean\"", FALSE,
    "none: per target; sum; mean: over the total weight", reduction_choices },
  { "ignore_index", TW_ATTR_INT, NULL, FALSE, "a target value that counts for nothing" },
  { NULL }
};

static const tw_op_def nll_loss_def = {
  .name = "nll_loss", .category = "Loss",
  .doc = "negative log-likelihood of log-probabilities x [N, C, ...] at the targets",
  .attrs = nll_attrs, .min_inputs = 2, .max_inputs = 3, .input_names = names_nll,
  .n_outputs = 1, .infer = nll_loss_infer, .forward = nll_loss_forward,
  .backward = nll_loss_backward, .cost = nll_cost, .onnx_name = "NegativeLogLikelihoodLoss",
};

static const tw_op_def nll_loss_grad_def = {
  .name = "nll_loss_grad", .category = "Loss",
  .doc = "gradient of nll_loss with respect to x", .attrs = nll_attrs, .min_inputs = 3,
  .max_inputs = 4, .input_names = names_nll_grad, .n_outputs = 1, .infer = nll_loss_grad_infer,
  .forward = nll_loss_grad_forward, .cost = nll_cost, .flags = TW_OP_INTERNAL,
};

void
tw_ops_register_loss_more (void)
{
  tw_op_register (&nll_loss_def);
  tw_op_register (&nll_loss_grad_def);
}
