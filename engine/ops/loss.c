/* loss.c — training losses: cross_entropy (softmax + NLL fused, with label
 * smoothing), mse_loss and bce_with_logits, each with an internal gradient op.
 *
 * Every loss returns a 0-d scalar of its input's float dtype.  Sums run over
 * fixed chunks of LOSS_CHUNK terms in double, then over the chunk sums in
 * order, so the value has the same bits for any thread count.
 */
#define G_LOG_DOMAIN "twb-ops-loss"

#include "engine/ops/nn-private.h"

#include <math.h>
#include <string.h>

/* Terms per chunk of a reduction: large enough that the partial-sum array
 * stays tiny, small enough to split a 64x784 batch over threads. */
#define LOSS_CHUNK 4096

static const char *const reduction_choices[] = { "mean", "sum", NULL };

/* ---- helpers ---------------------------------------------------------------- */

static gboolean
loss_is_mean (const tw_attrs *a)
{
  return strcmp (tw_attrs_get_string (a, "reduction", "mean"), "mean") == 0;
}

/* Dims match, a symbolic batch matching anything. */
static gboolean
loss_same_shape (const tw_tinfo *a, const tw_tinfo *b)
{
  if (a->ndim != b->ndim)
    return FALSE;
  for (int i = 0; i < a->ndim; i++)
    if (a->dims[i] != b->dims[i] && a->dims[i] != TW_DIM_N && b->dims[i] != TW_DIM_N)
      return FALSE;
  return TRUE;
}

static void
loss_scalar_out (tw_tinfo *out, tw_dtype dt)
{
  tw_tinfo_set (out, dt, 0, NULL);
}

/* The upstream gradient of a loss: a one-element float tensor. */
static gboolean
loss_check_dloss (const char *op, const tw_tinfo *d, tw_dtype dt, GError **error)
{
  gboolean sym;
  if (d->dtype == dt && tw_tinfo_numel (d, &sym) == 1 && !sym)
    return TRUE;
  g_autofree char *s = tw_tinfo_to_string (d);
  return tw_nn_shape_error (error, "%s expects dloss to be a %s scalar, got %s", op,
                            tw_dtype_name (dt), s);
}

static double
loss_read_scalar (const tw_tensor *t)
{
  return t->dtype == TW_F32 ? (double) tw_tensor_f32 (t)[0] : tw_tensor_f64 (t)[0];
}

static void
loss_write_scalar (tw_tensor *t, double v)
{
  if (t->dtype == TW_F32)
    tw_tensor_f32 (t)[0] = (float) v;
  else
    tw_tensor_f64 (t)[0] = v;
}

static double
loss_sum_parts (const double *part, int64_t n)
{
  double s = 0;
  for (int64_t i = 0; i < n; i++)
    s += part[i];
  return s;
}

static void
loss_cost (const tw_tinfo *in, int n_in, double flops_per_elem, tw_cost *cost)
{
  double n = (double) tw_tinfo_numel (&in[0], NULL);
  cost->flops = flops_per_elem * n;
  cost->bytes_read = 0;
  for (int i = 0; i < n_in; i++)
    cost->bytes_read += (double) tw_tinfo_numel (&in[i], NULL) * tw_dtype_size (in[i].dtype);
  cost->bytes_written = tw_dtype_size (in[0].dtype);
}

static void
loss_grad_cost (const tw_tinfo *in, int n_in, double flops_per_elem, tw_cost *cost)
{
  loss_cost (in, n_in, flops_per_elem, cost);
  cost->bytes_written = (double) tw_tinfo_numel (&in[0], NULL) * tw_dtype_size (in[0].dtype);
}

/* Emit grad_op (in[0], in[1], dloss; attrs) for each needed input < n_grad;
 * wrt_target selects the second input's gradient. */
static gboolean
loss_backward_common (tw_emit *e, const char *grad_op, tw_attrs *ga, tw_val *const *in,
                      tw_val *const *gout, const gboolean *needs, tw_val **gin, int n_grad)
{
  gboolean ok = TRUE;
  for (int i = 0; i < n_grad; i++)
    {
      if (!needs[i])
        continue;
      if (gout[0] == NULL)
        gin[i] = tw_emit1 (e, "nn_zeros_like", NULL, in[i]);
      else
        {
          tw_attrs_set_bool (ga, "wrt_target", i == 1);
          gin[i] = tw_emit3 (e, grad_op, ga, in[0], in[1], gout[0]);
        }
      ok &= gin[i] != NULL;
    }
  tw_attrs_free (ga);
  return ok;
}

/* ---- cross_entropy ------------------------------------------------------------ */

static const tw_attr_spec ce_attrs[] = {
  { "label_smoothing", TW_ATTR_FLOAT, "0", FALSE,
    "mix eps of the uniform distribution into the targets, as in PyTorch" },
  { "reduction", TW_ATTR_STRING, "\"mean\"", FALSE, "mean or sum over the batch",
    reduction_choices },
  { NULL }
};

static const char *const ce_input_names[] = { "logits", "labels", NULL };

static gboolean
ce_check (const char *op, const tw_attrs *a, const tw_tinfo *in, GError **error)
{
  const tw_tinfo *x = &in[0], *y = &in[1];
  double eps = tw_attrs_get_float (a, "label_smoothing", 0);
  if (!(eps >= 0 && eps <= 1))
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "%s: label_smoothing must lie in [0, 1], got %g", op, eps);
      return FALSE;
    }
  g_autofree char *sx = tw_tinfo_to_string (x);
  g_autofree char *sy = tw_tinfo_to_string (y);
  if (x->ndim != 2 || !tw_dtype_is_float (x->dtype))
    return tw_nn_shape_error (error, "%s expects logits of shape [N, C] (f32 or f64), got %s",
                              op, sx);
  tw_tinfo want = { .dtype = TW_I64, .ndim = 1, .dims = { x->dims[0] } };
  if (y->ndim != 1 || y->dtype != TW_I64 || !loss_same_shape (y, &want))
    {
      g_autofree char *n = tw_shape_to_string (1, x->dims);
      return tw_nn_shape_error (error,
                                "%s expects labels of shape %s (i64) to go with logits %s, "
                                "got %s",
                                op, n, sx, sy);
    }
  return TRUE;
}

static gboolean
ce_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  if (!ce_check ("cross_entropy", a, in, error))
    return FALSE;
  loss_scalar_out (&out[0], in[0].dtype);
  return TRUE;
}

static gboolean
ce_grad_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  if (!ce_check ("cross_entropy_grad", a, in, error)
      || !loss_check_dloss ("cross_entropy_grad", &in[2], in[0].dtype, error))
    return FALSE;
  out[0] = in[0];
  return TRUE;
}

/* FALSE with an error naming the first label outside [0, C). */
static gboolean
ce_check_labels (const char *op, const tw_tensor *labels, int64_t C, GError **error)
{
  const int64_t *y = tw_tensor_i64 (labels);
  int64_t N = labels->shape[0];
  for (int64_t i = 0; i < N; i++)
    if (y[i] < 0 || y[i] >= C)
      {
        g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                     "%s: label %" G_GINT64_FORMAT " of sample %" G_GINT64_FORMAT
                     " is outside [0, %" G_GINT64_FORMAT ")",
                     op, y[i], i, C);
        return FALSE;
      }
  return TRUE;
}

/* x is (N, C), y is (N); row i's loss is
 *   lse_i - (1 - eps) x[i, y_i] - eps mean_c x[i, c],  lse_i = log sum_c exp x[i, c],
 * which is (1 - eps) (-log p_{y_i}) + eps mean_c (-log p_c).  Everything is
 * taken relative to the row max m (lse_i = m + log sum exp (x - m)), so exp
 * never overflows and logits near 1000 keep their low bits.  Losses of
 * LOSS_CHUNK / C rows (at least one) go into one partial sum. */
#define LOSS_DEFINE_CE(T, SFX, EXP, LOG)                                                     \
  /* The summed losses of rows [i0, i1). */                                                \
  static inline double ce_rows_##SFX (const T *x, const int64_t *y, int64_t i0, int64_t i1, \
                                      int64_t C, double eps)                               \
  {                                                                                        \
    double s = 0;                                                                          \
    for (int64_t i = i0; i < i1; i++)                                                      \
      {                                                                                    \
        const T *r = x + i * C;                                                            \
        T m = r[0], se = 0, sx = 0;                                                        \
        for (int64_t k = 1; k < C; k++)                                                    \
          m = r[k] > m ? r[k] : m;                                                         \
        for (int64_t k = 0; k < C; k++)                                                    \
          {                                                                                \
            se += EXP (r[k] - m);                                                          \
            sx += r[k] - m;                                                                \
          }                                                                                \
        s += (double) LOG (se) - (1 - eps) * (double) (r[y[i]] - m)                        \
             - eps * (double) sx / (double) C;                                             \
      }                                                                                    \
    return s;                                                                              \
  }                                                                                        \
                                                                                           \
  static double ce_sum_##SFX (const T *x, const int64_t *y, int64_t N, int64_t C, double eps, \
                              int nthreads)                                                \
  {                                                                                        \
    int64_t rows = MAX (1, LOSS_CHUNK / MAX (C, 1));                                       \
    int64_t nc = (N + rows - 1) / rows;                                                    \
    if (nc <= 1)                                                                           \
      return ce_rows_##SFX (x, y, 0, N, C, eps);                                           \
    double *part = tw_scratch (NULL, nc * sizeof (double));                                \
    TW_NN_FOR (c, nc, N * C, nthreads,                                                     \
               part[c] = ce_rows_##SFX (x, y, c * rows, MIN (N, (c + 1) * rows), C, eps)); \
    double total = loss_sum_parts (part, nc);                                              \
    return total;                                                                          \
  }                                                                                        \
                                                                                           \
  /* dx (N, C) = (softmax (x) - ((1 - eps) onehot (y) + eps / C)) * scale */               \
  static void ce_grad_##SFX (const T *x, const int64_t *y, T *dx, int64_t N, int64_t C,     \
                             double eps, double scale, int nthreads)                       \
  {                                                                                        \
    T off = (T) (eps / (double) C * scale), on = (T) ((1 - eps) * scale);                  \
    TW_NN_FOR (i, N, N * C, nthreads, {                                                    \
      const T *r = x + i * C;                                                              \
      T *d = dx + i * C;                                                                   \
      T m = r[0], se = 0;                                                                  \
      for (int64_t k = 1; k < C; k++)                                                      \
        m = r[k] > m ? r[k] : m;                                                           \
      for (int64_t k = 0; k < C; k++)                                                      \
        {                                                                                  \
          d[k] = EXP (r[k] - m);                                                           \
          se += d[k];                                                                      \
        }                                                                                  \
      T f = (T) scale / se;                                                                \
      for (int64_t k = 0; k < C; k++)                                                      \
        d[k] = d[k] * f - off;                                                             \
      d[y[i]] -= on;                                                                       \
    });                                                                                    \
  }

LOSS_DEFINE_CE (float, f32, expf, logf)
LOSS_DEFINE_CE (double, f64, exp, log)

static gboolean
ce_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
            tw_tensor *const *out, GError **error)
{
  const tw_tensor *x = in[0], *labels = in[1];
  int64_t N = x->shape[0], C = x->shape[1];
  double eps = tw_attrs_get_float (a, "label_smoothing", 0);
  double total;
  if (!ce_check_labels ("cross_entropy", labels, C, error))
    return FALSE;
  if (x->dtype == TW_F32)
    total = ce_sum_f32 (tw_tensor_f32 (x), tw_tensor_i64 (labels), N, C, eps, tw_nn_threads (ctx));
  else
    total = ce_sum_f64 (tw_tensor_f64 (x), tw_tensor_i64 (labels), N, C, eps, tw_nn_threads (ctx));
  /* The mean over an empty batch is NaN, as in PyTorch. */
  loss_write_scalar (out[0], loss_is_mean (a) ? total / (double) N : total);
  return TRUE;
}

static gboolean
ce_grad_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                 tw_tensor *const *out, GError **error)
{
  const tw_tensor *x = in[0], *labels = in[1];
  int64_t N = x->shape[0], C = x->shape[1];
  double eps = tw_attrs_get_float (a, "label_smoothing", 0);
  double scale = loss_read_scalar (in[2]) / (loss_is_mean (a) ? (double) N : 1.0);
  if (!ce_check_labels ("cross_entropy_grad", labels, C, error))
    return FALSE;
  if (x->dtype == TW_F32)
    ce_grad_f32 (tw_tensor_f32 (x), tw_tensor_i64 (labels), tw_tensor_f32 (out[0]), N, C, eps,
                 scale, tw_nn_threads (ctx));
  else
    ce_grad_f64 (tw_tensor_f64 (x), tw_tensor_i64 (labels), tw_tensor_f64 (out[0]), N, C, eps,
                 scale, tw_nn_threads (ctx));
  return TRUE;
}

static gboolean
ce_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
             tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  if (!needs[0])
    return TRUE;      /* labels (input 1) have no gradient */
  if (gout[0] == NULL)
    {
      gin[0] = tw_emit1 (e, "nn_zeros_like", NULL, in[0]);
      return gin[0] != NULL;
    }
  tw_attrs *ga = tw_attrs_new ();
  tw_attrs_set_float (ga, "label_smoothing", tw_attrs_get_float (a, "label_smoothing", 0));
  tw_attrs_set_string (ga, "reduction", tw_attrs_get_string (a, "reduction", "mean"));
  gin[0] = tw_emit3 (e, "cross_entropy_grad", ga, in[0], in[1], gout[0]);
  tw_attrs_free (ga);
  return gin[0] != NULL;
}

static void
ce_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
         tw_cost *cost)
{
  /* max, exp, two sums and the subtraction: 5 per logit. */
  loss_cost (in, n_in, 5, cost);
}

static void
ce_grad_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
              tw_cost *cost)
{
  /* max, exp, sum, scale and the subtraction: 5 per logit. */
  loss_grad_cost (in, n_in, 5, cost);
}

static const tw_op_def ce_def = {
  .name = "cross_entropy",
  .category = "Loss",
  .doc = "Softmax cross-entropy of logits [N, C] against class labels [N]",
  .attrs = ce_attrs,
  .min_inputs = 2,
  .max_inputs = 2,
  .input_names = ce_input_names,
  .n_outputs = 1,
  .infer = ce_infer,
  .forward = ce_forward,
  .backward = ce_backward,
  .cost = ce_cost,
  .onnx_name = "SoftmaxCrossEntropyLoss",
  .flags = TW_OP_LOSS,
};

static const char *const ce_grad_input_names[] = { "logits", "labels", "dloss", NULL };

static const tw_op_def ce_grad_def = {
  .name = "cross_entropy_grad",
  .category = "Loss",
  .doc = "Gradient of cross_entropy: (softmax - smoothed one-hot) dloss / N",
  .attrs = ce_attrs,
  .min_inputs = 3,
  .max_inputs = 3,
  .input_names = ce_grad_input_names,
  .n_outputs = 1,
  .infer = ce_grad_infer,
  .forward = ce_grad_forward,
  .cost = ce_grad_cost,
  .flags = TW_OP_INTERNAL,
};

/* ---- mse_loss, bce_with_logits ---------------------------------------------- */

static const tw_attr_spec mse_attrs[] = {
  { "reduction", TW_ATTR_STRING, "\"mean\"", FALSE, "mean or sum over all elements",
    reduction_choices },
  { NULL }
};

static const tw_attr_spec mse_grad_attrs[] = {
  { "reduction", TW_ATTR_STRING, "\"mean\"", FALSE, "as the loss", reduction_choices },
  { "wrt_target", TW_ATTR_BOOL, "false", FALSE, "gradient of the target instead of pred" },
  { NULL }
};

static const tw_attr_spec bce_attrs[] = {
  { "reduction", TW_ATTR_STRING, "\"mean\"", FALSE, "mean or sum over all elements",
    reduction_choices },
  { "pos_weight", TW_ATTR_FLOAT, NULL, FALSE, "weight of the positive term (absent: 1)" },
  { NULL }
};

static const tw_attr_spec bce_grad_attrs[] = {
  { "reduction", TW_ATTR_STRING, "\"mean\"", FALSE, "as the loss", reduction_choices },
  { "pos_weight", TW_ATTR_FLOAT, NULL, FALSE, "as the loss" },
  { "wrt_target", TW_ATTR_BOOL, "false", FALSE, "gradient of the target instead of logits" },
  { NULL }
};

static const char *const mse_input_names[] = { "pred", "target", NULL };
static const char *const bce_input_names[] = { "logits", "target", NULL };
static const char *const pair_grad_input_names[] = { "x", "target", "dloss", NULL };

/* Two float tensors of one dtype and shape. */
static gboolean
pair_check (const char *op, const char *first, const tw_tinfo *in, GError **error)
{
  if (!tw_nn_check_float (op, first, &in[0], error))
    return FALSE;
  if (in[1].dtype == in[0].dtype && loss_same_shape (&in[0], &in[1]))
    return TRUE;
  g_autofree char *s0 = tw_tinfo_to_string (&in[0]);
  g_autofree char *s1 = tw_tinfo_to_string (&in[1]);
  return tw_nn_shape_error (error,
                            "%s expects target of the same shape and type as %s %s, got %s", op,
                            first, s0, s1);
}

static gboolean
mse_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  if (!pair_check ("mse_loss", "pred", in, error))
    return FALSE;
  loss_scalar_out (&out[0], in[0].dtype);
  return TRUE;
}

static gboolean
bce_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  if (!pair_check ("bce_with_logits", "logits", in, error))
    return FALSE;
  loss_scalar_out (&out[0], in[0].dtype);
  return TRUE;
}

static gboolean
mse_grad_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  if (!pair_check ("mse_loss_grad", "pred", in, error)
      || !loss_check_dloss ("mse_loss_grad", &in[2], in[0].dtype, error))
    return FALSE;
  out[0] = in[0];
  return TRUE;
}

static gboolean
bce_grad_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  if (!pair_check ("bce_with_logits_grad", "logits", in, error)
      || !loss_check_dloss ("bce_with_logits_grad", &in[2], in[0].dtype, error))
    return FALSE;
  out[0] = in[0];
  return TRUE;
}

/* x, t, dx are (n).  With sp (z) = log (1 + exp (z)) computed as
 * max (z, 0) + log1p (exp (-|z|)) and c = 1 + (pw - 1) t:
 *   mse: l = (x - t)^2,                  dl/dx = 2 (x - t),  dl/dt = -dl/dx
 *   bce: l = (1 - t) x + c sp (-x),      dl/dx = (1 - t) - c sigmoid (-x),
 *                                        dl/dt = -x + (pw - 1) sp (-x)
 * (for pw = 1, l = max (x, 0) - x t + log (1 + exp (-|x|)), PyTorch's form). */
#define LOSS_DEFINE_PAIR(T, SFX, EXP, LOG1P, FABS)                                          \
  static inline T softplus_neg_##SFX (T x)                                                \
  {                                                                                       \
    return (x < 0 ? -x : (T) 0) + LOG1P (EXP (-FABS (x)));                                \
  }                                                                                       \
                                                                                          \
  /* The summed terms [i0, i1). */                                                        \
  static inline double pair_terms_##SFX (const T *x, const T *t, int64_t i0, int64_t i1,  \
                                         gboolean bce, double pw)                         \
  {                                                                                       \
    double s = 0;                                                                         \
    if (bce)                                                                              \
      for (int64_t i = i0; i < i1; i++)                                                   \
        s += (1 - (double) t[i]) * (double) x[i]                                          \
             + (1 + (pw - 1) * (double) t[i]) * (double) softplus_neg_##SFX (x[i]);       \
    else                                                                                  \
      for (int64_t i = i0; i < i1; i++)                                                   \
        {                                                                                 \
          double d = (double) x[i] - (double) t[i];                                       \
          s += d * d;                                                                     \
        }                                                                                 \
    return s;                                                                             \
  }                                                                                       \
                                                                                          \
  static double pair_sum_##SFX (const T *x, const T *t, int64_t n, gboolean bce, double pw, \
                                int nthreads)                                             \
  {                                                                                       \
    int64_t nc = (n + LOSS_CHUNK - 1) / LOSS_CHUNK;                                       \
    if (nc <= 1)                                                                          \
      return pair_terms_##SFX (x, t, 0, n, bce, pw);                                      \
    double *part = tw_scratch (NULL, nc * sizeof (double));                               \
    TW_NN_FOR (c, nc, n, nthreads,                                                        \
               part[c] = pair_terms_##SFX (x, t, c * LOSS_CHUNK,                          \
                                           MIN (n, (c + 1) * LOSS_CHUNK), bce, pw));      \
    double total = loss_sum_parts (part, nc);                                             \
    return total;                                                                         \
  }                                                                                       \
                                                                                          \
  static void pair_grad_##SFX (const T *x, const T *t, T *dx, int64_t n, gboolean bce,    \
                               gboolean wrt_t, T pw, T scale, int nthreads)               \
  {                                                                                       \
    TW_NN_FOR (i, n, n, nthreads, {                                                       \
      T g;                                                                                \
      if (!bce)                                                                           \
        g = 2 * (x[i] - t[i]) * (wrt_t ? -1 : 1);                                         \
      else if (wrt_t)                                                                     \
        g = -x[i] + (pw - 1) * softplus_neg_##SFX (x[i]);                                 \
      else                                                                                \
        g = (1 - t[i]) - (1 + (pw - 1) * t[i]) / (1 + EXP (x[i]));                        \
      dx[i] = g * scale;                                                                  \
    });                                                                                   \
  }

LOSS_DEFINE_PAIR (float, f32, expf, log1pf, fabsf)
LOSS_DEFINE_PAIR (double, f64, exp, log1p, fabs)

static gboolean
pair_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, tw_tensor *const *out,
              gboolean bce)
{
  const tw_tensor *x = in[0], *t = in[1];
  int64_t n = tw_tensor_numel (x);
  double pw = tw_attrs_get_float (a, "pos_weight", 1.0);
  double total;
  if (x->dtype == TW_F32)
    total = pair_sum_f32 (tw_tensor_f32 (x), tw_tensor_f32 (t), n, bce, pw, tw_nn_threads (ctx));
  else
    total = pair_sum_f64 (tw_tensor_f64 (x), tw_tensor_f64 (t), n, bce, pw, tw_nn_threads (ctx));
  loss_write_scalar (out[0], loss_is_mean (a) ? total / (double) n : total);
  return TRUE;
}

static gboolean
pair_grad_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in,
                   tw_tensor *const *out, gboolean bce)
{
  const tw_tensor *x = in[0], *t = in[1];
  int64_t n = tw_tensor_numel (x);
  double pw = tw_attrs_get_float (a, "pos_weight", 1.0);
  gboolean wrt_t = tw_attrs_get_bool (a, "wrt_target", FALSE);
  double scale = loss_read_scalar (in[2]) / (loss_is_mean (a) ? (double) n : 1.0);
  if (x->dtype == TW_F32)
    pair_grad_f32 (tw_tensor_f32 (x), tw_tensor_f32 (t), tw_tensor_f32 (out[0]), n, bce, wrt_t,
                   (float) pw, (float) scale, tw_nn_threads (ctx));
  else
    pair_grad_f64 (tw_tensor_f64 (x), tw_tensor_f64 (t), tw_tensor_f64 (out[0]), n, bce, wrt_t,
                   pw, scale, tw_nn_threads (ctx));
  return TRUE;
}

static gboolean
mse_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
             tw_tensor *const *out, GError **error)
{
  return pair_forward (ctx, a, in, out, FALSE);
}

static gboolean
bce_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
             tw_tensor *const *out, GError **error)
{
  return pair_forward (ctx, a, in, out, TRUE);
}

static gboolean
mse_grad_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                  tw_tensor *const *out, GError **error)
{
  return pair_grad_forward (ctx, a, in, out, FALSE);
}

static gboolean
bce_grad_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                  tw_tensor *const *out, GError **error)
{
  return pair_grad_forward (ctx, a, in, out, TRUE);
}

static gboolean
mse_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
              tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  tw_attrs *ga = tw_attrs_new ();
  tw_attrs_set_string (ga, "reduction", tw_attrs_get_string (a, "reduction", "mean"));
  return loss_backward_common (e, "mse_loss_grad", ga, in, gout, needs, gin, 2);
}

static gboolean
bce_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
              tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  tw_attrs *ga = tw_attrs_new ();
  tw_attrs_set_string (ga, "reduction", tw_attrs_get_string (a, "reduction", "mean"));
  if (tw_attrs_has (a, "pos_weight"))
    tw_attrs_set_float (ga, "pos_weight", tw_attrs_get_float (a, "pos_weight", 1.0));
  return loss_backward_common (e, "bce_with_logits_grad", ga, in, gout, needs, gin, 2);
}

static void
mse_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
          tw_cost *cost)
{
  loss_cost (in, n_in, 3, cost);    /* subtract, square, add */
}

static void
mse_grad_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
               tw_cost *cost)
{
  loss_grad_cost (in, n_in, 2, cost);    /* subtract, scale */
}

static void
bce_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
          tw_cost *cost)
{
  loss_cost (in, n_in, 8, cost);    /* exp, log1p and six arithmetic ops, exp/log as one */
}

static const tw_op_def mse_def = {
  .name = "mse_loss",
  .category = "Loss",
  .doc = "Mean (or sum) of squared differences between pred and target",
  .attrs = mse_attrs,
  .min_inputs = 2,
  .max_inputs = 2,
  .input_names = mse_input_names,
  .n_outputs = 1,
  .infer = mse_infer,
  .forward = mse_forward,
  .backward = mse_backward,
  .cost = mse_cost,
  .flags = TW_OP_LOSS,
};

static const tw_op_def mse_grad_def = {
  .name = "mse_loss_grad",
  .category = "Loss",
  .doc = "Gradient of mse_loss: 2 (pred - target) dloss / n (negated for the target)",
  .attrs = mse_grad_attrs,
  .min_inputs = 3,
  .max_inputs = 3,
  .input_names = pair_grad_input_names,
  .n_outputs = 1,
  .infer = mse_grad_infer,
  .forward = mse_grad_forward,
  .cost = mse_grad_cost,
  .flags = TW_OP_INTERNAL,
};

static const tw_op_def bce_def = {
  .name = "bce_with_logits",
  .category = "Loss",
  .doc = "Binary cross-entropy of sigmoid (logits) against targets in [0, 1], computed stably",
  .attrs = bce_attrs,
  .min_inputs = 2,
  .max_inputs = 2,
  .input_names = bce_input_names,
  .n_outputs = 1,
  .infer = bce_infer,
  .forward = bce_forward,
  .backward = bce_backward,
  .cost = bce_cost,
  .flags = TW_OP_LOSS,
};

static const tw_op_def bce_grad_def = {
  .name = "bce_with_logits_grad",
  .category = "Loss",
  .doc = "Gradient of bce_with_logits for the logits or the target",
  .attrs = bce_grad_attrs,
  .min_inputs = 3,
  .max_inputs = 3,
  .input_names = pair_grad_input_names,
  .n_outputs = 1,
  .infer = bce_grad_infer,
  .forward = bce_grad_forward,
  .cost = bce_cost,
  .flags = TW_OP_INTERNAL,
};

void
tw_ops_register_loss (void)
{
  tw_op_register (&ce_def);
  tw_op_register (&ce_grad_def);
  tw_op_register (&mse_def);
  tw_op_register (&mse_grad_def);
  tw_op_register (&bce_def);
  tw_op_register (&bce_grad_def);
}
