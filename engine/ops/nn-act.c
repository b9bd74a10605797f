/* nn-act.c — dropout, softmax, log_softmax and the internal ops their
 * backward rules use (dropout_grad, softmax_grad, log_softmax_grad).
 *
 * Dropout draws no state: its mask is a pure function of (seed, step, node
 * key, element index) through Philox, so dropout_grad recomputes the very
 * same mask from the kernel context the executor hands to the backward.
 */
#define G_LOG_DOMAIN "twb-ops-nn"

#include "engine/ops/nn-private.h"
#include "engine/rng.h"

#include <math.h>
#include <string.h>

static gboolean
act_set_shape_error (GError **error, const char *op, const tw_tinfo *a, const tw_tinfo *b)
{
  g_autofree char *sa = tw_tinfo_to_string (a);
  g_autofree char *sb = tw_tinfo_to_string (b);
  g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
               "%s expects two tensors of one type and shape, got %s and %s", op, sa, sb);
  return FALSE;
}

static const char *const x_input_names[] = { "x", NULL };

/* ---- dropout ---------------------------------------------------------------- */

static const tw_attr_spec dropout_attrs[] = {
  { "p", TW_ATTR_FLOAT, "0.5", FALSE, "probability of zeroing an element in training" },
  { NULL }
};

static gboolean
dropout_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  double p = tw_attrs_get_float (a, "p", 0.5);
  if (!(p >= 0 && p <= 1))
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR, "dropout: p must lie in [0, 1], got %g",
                   p);
      return FALSE;
    }
  if (!tw_nn_check_float ("dropout", "input", &in[0], error))
    return FALSE;
  out[0] = in[0];
  return TRUE;
}

/* Philox stream of a dropout node at a training step.  0x9E3779B97F4A7C15 is
 * 2^64 / golden ratio (odd): consecutive steps land far apart in the stream
 * space and never cancel the node key. */
static inline uint64_t
dropout_stream (const tw_kctx *ctx)
{
  return ctx->node_key ^ (ctx->step * G_GUINT64_CONSTANT (0x9E3779B97F4A7C15));
}

/* x, y are (n).  Element i uses word i % 4 of the Philox block at counter
 * i / 4 (24 bits, as tw_rng_uniform does) and is kept when u >= p, that is
 * when its 24-bit draw is >= thr = ceil (p 2^24). */
#define NN_DEFINE_DROPOUT(T, SFX)                                                            \
  static void dropout_##SFX (const T *x, T *y, int64_t n, uint64_t seed, uint64_t stream,  \
                             uint32_t thr, T scale, int nthreads)                          \
  {                                                                                        \
    TW_NN_FOR (g, (n + 3) / 4, n, nthreads, {                                              \
      uint32_t r[4];                                                                       \
      int64_t i0 = 4 * g;                                                                  \
      tw_philox4x32 (seed, stream, (uint64_t) g, r);                                       \
      for (int k = 0; k < 4 && i0 + k < n; k++)                                            \
        y[i0 + k] = (r[k] >> 8) >= thr ? x[i0 + k] * scale : (T) 0;                        \
    });                                                                                    \
  }

NN_DEFINE_DROPOUT (float, f32)
NN_DEFINE_DROPOUT (double, f64)

/* Shared by dropout (x -> y) and dropout_grad (dy -> dx): the same mask and
 * scale, or the identity outside training. */
static gboolean
dropout_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                 tw_tensor *const *out, GError **error)
{
  double p = tw_attrs_get_float (a, "p", 0.5);
  const tw_tensor *x = in[0];
  int64_t n = tw_tensor_numel (x);

  if (ctx == NULL || !ctx->training || p == 0)
    {
      memcpy (tw_tensor_data (out[0]), tw_tensor_data (x), tw_tensor_nbytes (x));
      return TRUE;
    }
  /* 16777216 = 2^24, the resolution of the draws. */
  uint32_t thr = (uint32_t) ceil (p * 16777216.0);
  double scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
  uint64_t stream = dropout_stream (ctx);
  if (x->dtype == TW_F32)
    dropout_f32 (tw_tensor_f32 (x), tw_tensor_f32 (out[0]), n, ctx->seed, stream, thr,
                 (float) scale, tw_nn_threads (ctx));
  else
    dropout_f64 (tw_tensor_f64 (x), tw_tensor_f64 (out[0]), n, ctx->seed, stream, thr, scale,
                 tw_nn_threads (ctx));
  return TRUE;
}

static gboolean
dropout_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
                  tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  if (!needs[0])
    return TRUE;
  if (gout[0] == NULL)
    {
      gin[0] = tw_emit1 (e, "nn_zeros_like", NULL, in[0]);
      return gin[0] != NULL;
    }
  tw_attrs *ga = tw_attrs_new ();
  tw_attrs_set_float (ga, "p", tw_attrs_get_float (a, "p", 0.5));
  gin[0] = tw_emit1 (e, "dropout_grad", ga, gout[0]);
  tw_attrs_free (ga);
  return gin[0] != NULL;
}

static void
dropout_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
              tw_cost *cost)
{
  /* One multiply per element plus a quarter of a Philox block (10 rounds of
   * two 32x32 multiplies) — counted as 6 flops. */
  tw_cost_elementwise (in, n_in, out, n_out, 6, cost);
}

static const tw_op_def dropout_def = {
  .name = "dropout",
  .category = "Core",
  .doc = "Zero elements with probability p in training and scale the rest by 1/(1-p)",
  .attrs = dropout_attrs,
  .min_inputs = 1,
  .max_inputs = 1,
  .input_names = x_input_names,
  .n_outputs = 1,
  .infer = dropout_infer,
  .forward = dropout_forward,
  .backward = dropout_backward,
  .cost = dropout_cost,
  .onnx_name = "Dropout",
  .flags = TW_OP_RANDOM,
};

static const tw_op_def dropout_grad_def = {
  .name = "dropout_grad",
  .category = "Core",
  .doc = "Gradient of dropout: dy through the forward's mask (recomputed)",
  .attrs = dropout_attrs,
  .min_inputs = 1,
  .max_inputs = 1,
  .n_outputs = 1,
  .infer = dropout_infer,
  .forward = dropout_forward,
  .cost = dropout_cost,
  .flags = TW_OP_INTERNAL | TW_OP_RANDOM,
};

/* ---- softmax, log_softmax ------------------------------------------------- */

static const tw_attr_spec axis_attrs[] = {
  { "axis", TW_ATTR_INT, "-1", FALSE, "dimension the probabilities sum over" },
  { NULL }
};

static gboolean
softmax_infer_named (const char *op, const tw_attrs *a, const tw_tinfo *in, int n_in,
                     tw_tinfo *out, GError **error)
{
  int axis;
  if (!tw_nn_check_float (op, "input", &in[0], error)
      || !tw_nn_axis (op, tw_attrs_get_int (a, "axis", -1), &in[0], &axis, error))
    return FALSE;
  if (n_in == 2 && !tw_tinfo_equal (&in[0], &in[1]))
    return act_set_shape_error (error, op, &in[0], &in[1]);
  out[0] = in[0];
  return TRUE;
}

static gboolean
softmax_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  return softmax_infer_named ("softmax", a, in, n_in, out, error);
}

static gboolean
log_softmax_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                   GError **error)
{
  return softmax_infer_named ("log_softmax", a, in, n_in, out, error);
}

static gboolean
softmax_grad_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                    GError **error)
{
  return softmax_infer_named ("softmax_grad", a, in, n_in, out, error);
}

static gboolean
log_softmax_grad_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                        GError **error)
{
  return softmax_infer_named ("log_softmax_grad", a, in, n_in, out, error);
}

/* One row of length L with element stride st.  The max is subtracted before
 * exp so nothing overflows; log_softmax is (x - max) - log sum exp (x - max),
 * in that order so large logits (x ~ 1000) keep their low bits.
 * Inlined with st = 1 for the usual last-axis case so the loops vectorise. */
#define NN_DEFINE_SOFTMAX(T, SFX, EXP, LOG)                                                    \
  static inline void softmax_row_##SFX (const T *x, T *y, int64_t L, int64_t st,            \
                                        gboolean log_out)                                   \
  {                                                                                         \
    T m = x[0], s = 0;                                                                      \
    for (int64_t l = 1; l < L; l++)                                                         \
      m = x[l * st] > m ? x[l * st] : m;                                                    \
    if (log_out)                                                                            \
      {                                                                                     \
        for (int64_t l = 0; l < L; l++)                                                     \
          s += EXP (x[l * st] - m);                                                         \
        T ls = LOG (s);                                                                     \
        for (int64_t l = 0; l < L; l++)                                                     \
          y[l * st] = (x[l * st] - m) - ls;                                                 \
      }                                                                                     \
    else                                                                                    \
      {                                                                                     \
        for (int64_t l = 0; l < L; l++)                                                     \
          {                                                                                 \
            T ev = EXP (x[l * st] - m);                                                     \
            y[l * st] = ev;                                                                 \
            s += ev;                                                                        \
          }                                                                                 \
        T inv = (T) 1 / s;                                                                  \
        for (int64_t l = 0; l < L; l++)                                                     \
          y[l * st] *= inv;                                                                 \
      }                                                                                     \
  }                                                                                         \
                                                                                            \
  /* x, y are (outer, L, inner); rows run along L. */                                      \
  static void softmax_##SFX (const T *x, T *y, int64_t outer, int64_t L, int64_t inner,     \
                             gboolean log_out, int nthreads)                                \
  {                                                                                         \
    TW_NN_FOR (r, outer * inner, outer * L * inner, nthreads, {                             \
      int64_t base = (r / inner) * L * inner + r % inner;                                   \
      if (inner == 1)                                                                       \
        softmax_row_##SFX (x + base, y + base, L, 1, log_out);                              \
      else                                                                                  \
        softmax_row_##SFX (x + base, y + base, L, inner, log_out);                          \
    });                                                                                     \
  }                                                                                         \
                                                                                            \
  /* One row of y (the forward's output), dy, dx, length L, stride st.                    \
   * softmax:     dx = y (dy - sum (dy y))                                               \
   * log_softmax: dx = dy - exp (y) sum (dy) */                                           \
  static inline void softmax_grad_row_##SFX (const T *yr, const T *gr, T *dr, int64_t L,    \
                                             int64_t st, gboolean log_out)                  \
  {                                                                                         \
    T s = 0;                                                                                \
    if (log_out)                                                                            \
      {                                                                                     \
        for (int64_t l = 0; l < L; l++)                                                     \
          s += gr[l * st];                                                                  \
        for (int64_t l = 0; l < L; l++)                                                     \
          dr[l * st] = gr[l * st] - EXP (yr[l * st]) * s;                                   \
      }                                                                                     \
    else                                                                                    \
      {                                                                                     \
        for (int64_t l = 0; l < L; l++)                                                     \
          s += gr[l * st] * yr[l * st];                                                     \
        for (int64_t l = 0; l < L; l++)                                                     \
          dr[l * st] = yr[l * st] * (gr[l * st] - s);                                       \
      }                                                                                     \
  }                                                                                         \
                                                                                            \
  /* y, dy, dx are (outer, L, inner). */                                                   \
  static void softmax_grad_##SFX (const T *y, const T *dy, T *dx, int64_t outer, int64_t L, \
                                  int64_t inner, gboolean log_out, int nthreads)            \
  {                                                                                         \
    TW_NN_FOR (r, outer * inner, outer * L * inner, nthreads, {                             \
      int64_t base = (r / inner) * L * inner + r % inner;                                   \
      if (inner == 1)                                                                       \
        softmax_grad_row_##SFX (y + base, dy + base, dx + base, L, 1, log_out);             \
      else                                                                                  \
        softmax_grad_row_##SFX (y + base, dy + base, dx + base, L, inner, log_out);         \
    });                                                                                     \
  }

NN_DEFINE_SOFTMAX (float, f32, expf, logf)
NN_DEFINE_SOFTMAX (double, f64, exp, log)

static gboolean
softmax_run (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
             tw_tensor *const *out, gboolean log_out, gboolean grad)
{
  int axis = (int) tw_attrs_get_int (a, "axis", -1);
  int64_t outer, L, inner;
  if (axis < 0)
    axis += in[0]->ndim;
  tw_nn_split_axis (in[0], axis, &outer, &L, &inner);
  if (L == 0)
    return TRUE;
  int nt = tw_nn_threads (ctx);
  if (in[0]->dtype == TW_F32)
    {
      if (grad)
        softmax_grad_f32 (tw_tensor_f32 (in[0]), tw_tensor_f32 (in[1]), tw_tensor_f32 (out[0]),
                          outer, L, inner, log_out, nt);
      else
        softmax_f32 (tw_tensor_f32 (in[0]), tw_tensor_f32 (out[0]), outer, L, inner, log_out, nt);
    }
  else
    {
      if (grad)
        softmax_grad_f64 (tw_tensor_f64 (in[0]), tw_tensor_f64 (in[1]), tw_tensor_f64 (out[0]),
                          outer, L, inner, log_out, nt);
      else
        softmax_f64 (tw_tensor_f64 (in[0]), tw_tensor_f64 (out[0]), outer, L, inner, log_out, nt);
    }
  return TRUE;
}

static gboolean
softmax_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                 tw_tensor *const *out, GError **error)
{
  return softmax_run (ctx, a, in, n_in, out, FALSE, FALSE);
}

static gboolean
log_softmax_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                     tw_tensor *const *out, GError **error)
{
  return softmax_run (ctx, a, in, n_in, out, TRUE, FALSE);
}

static gboolean
softmax_grad_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                      tw_tensor *const *out, GError **error)
{
  return softmax_run (ctx, a, in, n_in, out, FALSE, TRUE);
}

static gboolean
log_softmax_grad_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                          tw_tensor *const *out, GError **error)
{
  return softmax_run (ctx, a, in, n_in, out, TRUE, TRUE);
}

static gboolean
softmax_backward_named (const char *grad_op, tw_emit *e, const tw_attrs *a, tw_val *const *in,
                        tw_val *const *out, tw_val *const *gout, const gboolean *needs,
                        tw_val **gin)
{
  if (!needs[0])
    return TRUE;
  if (gout[0] == NULL)
    {
      gin[0] = tw_emit1 (e, "nn_zeros_like", NULL, in[0]);
      return gin[0] != NULL;
    }
  tw_attrs *ga = tw_attrs_new ();
  tw_attrs_set_int (ga, "axis", tw_attrs_get_int (a, "axis", -1));
  gin[0] = tw_emit2 (e, grad_op, ga, out[0], gout[0]);
  tw_attrs_free (ga);
  return gin[0] != NULL;
}

static gboolean
softmax_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
                  tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  return softmax_backward_named ("softmax_grad", e, a, in, out, gout, needs, gin);
}

static gboolean
log_softmax_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                      tw_val *const *out, tw_val *const *gout, const gboolean *needs,
                      tw_val **gin)
{
  return softmax_backward_named ("log_softmax_grad", e, a, in, out, gout, needs, gin);
}

static void
softmax_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
              tw_cost *cost)
{
  /* max, subtract, exp, add, scale: 5 per element (exp counted as one). */
  tw_cost_elementwise (in, n_in, out, n_out, 5, cost);
}

static void
softmax_grad_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out,
                   int n_out, tw_cost *cost)
{
  /* multiply-add for the sum, subtract and multiply: 4 per element. */
  tw_cost_elementwise (in, n_in, out, n_out, 4, cost);
}

static const char *const grad_input_names[] = { "y", "dy", NULL };

static const tw_op_def softmax_def = {
  .name = "softmax",
  .category = "Activation",
  .doc = "exp (x) / sum (exp (x)) along an axis, computed stably",
  .attrs = axis_attrs,
  .min_inputs = 1,
  .max_inputs = 1,
  .input_names = x_input_names,
  .n_outputs = 1,
  .infer = softmax_infer,
  .forward = softmax_forward,
  .backward = softmax_backward,
  .cost = softmax_cost,
  .onnx_name = "Softmax",
};

static const tw_op_def log_softmax_def = {
  .name = "log_softmax",
  .category = "Activation",
  .doc = "x - log (sum (exp (x))) along an axis, computed stably",
  .attrs = axis_attrs,
  .min_inputs = 1,
  .max_inputs = 1,
  .input_names = x_input_names,
  .n_outputs = 1,
  .infer = log_softmax_infer,
  .forward = log_softmax_forward,
  .backward = log_softmax_backward,
  .cost = softmax_cost,
  .onnx_name = "LogSoftmax",
};

static const tw_op_def softmax_grad_def = {
  .name = "softmax_grad",
  .category = "Activation",
  .doc = "Gradient of softmax from its output y: y (dy - sum (dy y))",
  .attrs = axis_attrs,
  .min_inputs = 2,
  .max_inputs = 2,
  .input_names = grad_input_names,
  .n_outputs = 1,
  .infer = softmax_grad_infer,
  .forward = softmax_grad_forward,
  .cost = softmax_grad_cost,
  .flags = TW_OP_INTERNAL,
};

static const tw_op_def log_softmax_grad_def = {
  .name = "log_softmax_grad",
  .category = "Activation",
  .doc = "Gradient of log_softmax from its output y: dy - exp (y) sum (dy)",
  .attrs = axis_attrs,
  .min_inputs = 2,
  .max_inputs = 2,
  .input_names = grad_input_names,
  .n_outputs = 1,
  .infer = log_softmax_grad_infer,
  .forward = log_softmax_grad_forward,
  .cost = softmax_grad_cost,
  .flags = TW_OP_INTERNAL,
};

void
tw_ops_register_nn_act (void)
{
  tw_op_register (&dropout_def);
  tw_op_register (&dropout_grad_def);
  tw_op_register (&softmax_def);
  tw_op_register (&log_softmax_def);
  tw_op_register (&softmax_grad_def);
  tw_op_register (&log_softmax_grad_def);
}
