/* elementwise-more.c — the further float element-wise ops ONNX graphs use:
 * trigonometry (sin, cos, tan, asin, acos, atan, sinh, cosh, asinh, acosh,
 * atanh), activations (elu, selu, celu, softplus, softsign,
 * thresholded_relu, shrink, prelu with a learnt slope per channel and
 * prelu_broadcast with the slope as a second input), round (half to even)
 * and the internal grad ops their backward rules emit.
 *
 * The kernels use libm through <tgmath.h> (sinf for f32, sin for f64); the
 * backward rules of the smooth ops are written with other registered ops
 * (d sin = dy cos x), so they differentiate again.  The comparisons, logic
 * ops and mod are in logic.c. */
#define G_LOG_DOMAIN "twb-ops-ew"

#include "engine/ops/ew-unary-private.h"

#include <math.h>
#include <tgmath.h>

/* in[0]: x (any shape); in[1]: dy shaped like x for the grad ops; out[0]:
 * x's shape.  P, Q: the attributes read into p and q (NULL: unused). */
#define EWM_OP(NAME, P, PDEF, Q, QDEF, EXPR)                                                  \
  TW_EWU_KERNELS (NAME, EXPR)                                                               \
  static gboolean NAME##_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, \
                                  int n_in, tw_tensor *const *out, GError **error)          \
  {                                                                                         \
    const char *pn = P, *qn = Q;                                                            \
    double p = pn ? tw_attrs_get_float (a, pn, PDEF) : 0;                                   \
    double q = qn ? tw_attrs_get_float (a, qn, QDEF) : 0;                                   \
    TW_EWU_RUN (NAME, ctx, in, n_in, out, p, q);                                            \
    return TRUE;                                                                            \
  }

/* ONNX's defaults: Elu alpha 1; Selu alpha and gamma (Klambauer et al.
 * 2017, to the float precision ONNX states them); Celu alpha 1;
 * ThresholdedRelu alpha 1; Shrink bias 0, lambd 0.5. */
#define SELU_ALPHA 1.67326319217681884765625
#define SELU_GAMMA 1.05070102214813232421875

EWM_OP (sin, NULL, 0, NULL, 0, sin (x))
EWM_OP (cos, NULL, 0, NULL, 0, cos (x))
EWM_OP (tan, NULL, 0, NULL, 0, tan (x))
EWM_OP (asin, NULL, 0, NULL, 0, asin (x))
EWM_OP (acos, NULL, 0, NULL, 0, acos (x))
EWM_OP (atan, NULL, 0, NULL, 0, atan (x))
EWM_OP (sinh, NULL, 0, NULL, 0, sinh (x))
EWM_OP (cosh, NULL, 0, NULL, 0, cosh (x))
EWM_OP (asinh, NULL, 0, NULL, 0, asinh (x))
EWM_OP (acosh, NULL, 0, NULL, 0, acosh (x))
EWM_OP (atanh, NULL, 0, NULL, 0, atanh (x))
/* rint rounds half to even in the default rounding mode (ONNX's Round). */
EWM_OP (round, NULL, 0, NULL, 0, rint (x))
EWM_OP (elu, "alpha", 1.0, NULL, 0, x > 0 ? x : p * expm1 (x))
EWM_OP (selu, "alpha", SELU_ALPHA, "gamma", SELU_GAMMA, x > 0 ? q * x : q * p * expm1 (x))
EWM_OP (celu, "alpha", 1.0, NULL, 0, x > 0 ? x : p * expm1 (x / p))
/* log (1 + e^x) without overflow: x + log1p (e^-x) for x > 0. */
EWM_OP (softplus, NULL, 0, NULL, 0, x > 0 ? x + log1p (exp (-x)) : log1p (exp (x)))
EWM_OP (softsign, NULL, 0, NULL, 0, x / ((T) 1 + fabs (x)))
EWM_OP (thresholded_relu, "alpha", 1.0, NULL, 0, x > p ? x : (T) 0)
EWM_OP (shrink, "bias", 0.0, "lambd", 0.5, x < -q ? x + p : (x > q ? x - p : (T) 0))

EWM_OP (elu_grad, "alpha", 1.0, NULL, 0, x > 0 ? d : d * p * exp (x))
EWM_OP (selu_grad, "alpha", SELU_ALPHA, "gamma", SELU_GAMMA, x > 0 ? q * d : d * q * p * exp (x))
EWM_OP (celu_grad, "alpha", 1.0, NULL, 0, x > 0 ? d : d * exp (x / p))
EWM_OP (thresholded_relu_grad, "alpha", 1.0, NULL, 0, x > p ? d : (T) 0)
EWM_OP (shrink_grad, "bias", 0.0, "lambd", 0.5, x < -q || x > q ? d : (T) 0)

/* ---- prelu ---------------------------------------------------------------------- */

/* prelu_broadcast: y = x < 0 ? s x : x, s = in[1] broadcast to x's shape
 * (ONNX's unidirectional broadcasting).  prelu: s = weight[c] along dim 1
 * (one weight shared when num_parameters is 1). */
#define PRELU_KERNEL(TY)                                                                      \
  static void prelu_k_##TY (const tw_tensor *xt, const tw_tensor *st, tw_tensor *yt,         \
                            gboolean channel, int nt)                                       \
  {                                                                                         \
    const TY *restrict x = tw_tensor_data (xt), *restrict s = tw_tensor_data (st);          \
    TY *restrict y = tw_tensor_data (yt);                                                   \
    int64_t n = tw_tensor_numel (yt), st_[TW_MAX_DIMS];                                     \
    int nd = yt->ndim;                                                                      \
    int64_t inner = 1, nch = tw_tensor_numel (st);                                          \
    if (channel)                                                                            \
      for (int d = 2; d < nd; d++)                                                          \
        inner *= yt->shape[d];                                                              \
    else                                                                                    \
      tw_broadcast_strides (st, yt, st_);                                                   \
    TW_PARALLEL_FOR (n > TW_EWU_PAR_MIN, nt, blk, (n + 4095) / 4096, {                        \
        int64_t b = blk * 4096, e = MIN (n, b + 4096);                                      \
        for (int64_t i = b; i < e; i++)                                                     \
          {                                                                                 \
            int64_t o = 0;                                                                  \
            if (channel)                                                                    \
              o = nch == 1 ? 0 : (i / inner) % nch;                                         \
            else                                                                            \
              for (int64_t r = i, d = nd - 1; d >= 0; d--)                                  \
                {                                                                           \
                  o += (r % yt->shape[d]) * st_[d];                                         \
                  r /= yt->shape[d];                                                        \
                }                                                                           \
            y[i] = x[i] < 0 ? s[o] * x[i] : x[i];                                           \
          }                                                                                 \
      });                                                                                   \
  }

PRELU_KERNEL (float)
PRELU_KERNEL (double)

static gboolean
prelu_run (const tw_kctx *ctx, tw_tensor *const *in, tw_tensor *const *out, gboolean channel)
{
  if (tw_tensor_numel (out[0]) == 0)
    return TRUE;
  if (out[0]->dtype == TW_F32)
    prelu_k_float (in[0], in[1], out[0], channel, tw_ewu_threads (ctx));
  else
    prelu_k_double (in[0], in[1], out[0], channel, tw_ewu_threads (ctx));
  return TRUE;
}

static gboolean
prelu_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
               tw_tensor *const *out, GError **error)
{
  return prelu_run (ctx, in, out, TRUE);
}

static gboolean
prelu_broadcast_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                         tw_tensor *const *out, GError **error)
{
  return prelu_run (ctx, in, out, FALSE);
}

/* ---- infer ---------------------------------------------------------------------- */

static gboolean
check_float (const char *op, const tw_tinfo *t, GError **error)
{
  if (tw_dtype_is_float (t->dtype))
    return TRUE;
  g_autofree char *s = tw_tinfo_to_string (t);
  g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_DTYPE, "%s%sexpects a float input (f32 or f64), got %s",
               op ? op : "", op ? " " : "", s);
  return FALSE;
}

/* One float input, or x and dy of one type and shape (the grad ops). */
static gboolean
float_infer (const char *op, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  if (!check_float (op, &in[0], error))
    return FALSE;
  if (n_in > 1 && !tw_tinfo_equal (&in[0], &in[1]))
    {
      g_autofree char *s0 = tw_tinfo_to_string (&in[0]);
      g_autofree char *s1 = tw_tinfo_to_string (&in[1]);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "%s%sexpects dy shaped like x: x is %s, dy is %s", op ? op : "", op ? " " : "",
                   s0, s1);
      return FALSE;
    }
  out[0] = in[0];
  return TRUE;
}

static gboolean
plain_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  return float_infer (NULL, in, n_in, out, error);
}

static gboolean
check_finite (const char *name, double v, GError **error)
{
  if (isfinite (v))
    return TRUE;
  g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR, "%s must be a finite number, got %g", name, v);
  return FALSE;
}

/* elu, selu, celu, thresholded_relu, shrink and their grads: finite
 * attributes (celu divides by alpha: nonzero). */
static gboolean
attr_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  static const char *const names[] = { "alpha", "gamma", "bias", "lambd" };
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    if (tw_attrs_has (a, names[i])
        && !check_finite (names[i], tw_attrs_get_float (a, names[i], 0), error))
      return FALSE;
  return plain_infer (a, in, n_in, out, error);
}

static gboolean
celu_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  double alpha = tw_attrs_get_float (a, "alpha", 1.0);
  if (alpha == 0 || !isfinite (alpha))
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "celu: alpha must be a finite nonzero number, got %g", alpha);
      return FALSE;
    }
  return float_infer (n_in > 1 ? "celu_grad" : "celu", in, n_in, out, error);
}

/* x and a slope of the same float type that broadcasts to x's shape. */
static gboolean
prelu_broadcast_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                       GError **error)
{
  if (!check_float ("prelu_broadcast", &in[0], error))
    return FALSE;
  tw_tinfo b;
  if (in[1].dtype != in[0].dtype || !tw_infer_broadcast (a, in, 2, &b, NULL)
      || !tw_tinfo_equal (&b, &in[0]))
    {
      g_autofree char *s0 = tw_tinfo_to_string (&in[0]);
      g_autofree char *s1 = tw_tinfo_to_string (&in[1]);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "prelu_broadcast: the slope %s must broadcast to x %s (same element type)", s1,
                   s0);
      return FALSE;
    }
  out[0] = in[0];
  return TRUE;
}

static gboolean
prelu_check (const tw_attrs *a, const tw_tinfo *x, int64_t *np, GError **error)
{
  *np = tw_attrs_get_int (a, "num_parameters", 1);
  if (!check_float ("prelu", x, error))
    return FALSE;
  if (*np < 1 || (*np > 1 && (x->ndim < 2 || x->dims[1] != *np)))
    {
      g_autofree char *s = tw_tinfo_to_string (x);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "prelu: num_parameters %" G_GINT64_FORMAT
                   " must be 1 or the channel count (dim 1) of the input %s", *np, s);
      return FALSE;
    }
  return TRUE;
}

static int
prelu_params (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_param_spec *out, GError **error)
{
  int64_t np;
  if (!prelu_check (a, &in[0], &np, error))
    return -1;
  out[0] = (tw_param_spec) { .suffix = "weight", .init = TW_INIT_ZEROS, .fan_in = 1, .fan_out = 1,
                             .trainable = TRUE };
  tw_tinfo_set (&out[0].info, in[0].dtype, 1, &np);
  return 1;
}

static gboolean
prelu_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  int64_t np;
  if (!prelu_check (a, &in[0], &np, error))
    return FALSE;
  if (n_in > 1 && (in[1].ndim != 1 || in[1].dims[0] != np || in[1].dtype != in[0].dtype))
    {
      g_autofree char *s = tw_tinfo_to_string (&in[1]);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "prelu: the weight is %s, expected [%" G_GINT64_FORMAT "]", s, np);
      return FALSE;
    }
  out[0] = in[0];
  return TRUE;
}

/* ---- backward ------------------------------------------------------------------- */

static tw_val *
emit_f (tw_emit *e, const char *op, const char *attr, double v, tw_val *x)
{
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_float (a, attr, v);
  tw_val *y = tw_emit1 (e, op, a, x);
  tw_attrs_free (a);
  return y;
}

/* g summed to x's shape (the broadcast dims reduced). */
static tw_val *
reduce_to (tw_emit *e, tw_val *g, tw_val *x)
{
  const tw_tinfo *gi = tw_val_info (e, g), *xi = tw_val_info (e, x);
  gboolean same = gi->ndim == xi->ndim;
  for (int d = 0; same && d < gi->ndim; d++)
    same = gi->dims[d] == xi->dims[d];
  return same ? g : tw_emit2 (e, "sum_to", NULL, g, x);
}

/* 1 - x^2 (asin, acos, atanh) or x^2 + c (atan, asinh, acosh). */
static tw_val *
one_minus_sq (tw_emit *e, tw_val *x)
{
  return emit_f (e, "add_scalar", "value", 1.0, tw_emit1 (e, "neg", NULL, tw_emit1 (e, "square", NULL, x)));
}

static tw_val *
sq_plus (tw_emit *e, tw_val *x, double c)
{
  return emit_f (e, "add_scalar", "value", c, tw_emit1 (e, "square", NULL, x));
}

#define EWM_BACKWARD(NAME, EXPR)                                                              \
  static gboolean NAME##_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, \
                                   tw_val *const *out, tw_val *const *gout,                \
                                   const gboolean *needs, tw_val **gin)                    \
  {                                                                                         \
    tw_val *x = in[0], *y = out[0], *dy = gout[0];                                          \
    (void) x;                                                                               \
    (void) y;                                                                               \
    (void) dy;                                                                              \
    gin[0] = (EXPR);                                                                        \
    return gin[0] != NULL;                                                                  \
  }

EWM_BACKWARD (sin, tw_emit2 (e, "mul", NULL, dy, tw_emit1 (e, "cos", NULL, x)))
EWM_BACKWARD (cos, tw_emit1 (e, "neg", NULL, tw_emit2 (e, "mul", NULL, dy, tw_emit1 (e, "sin", NULL, x))))
EWM_BACKWARD (tan, tw_emit2 (e, "mul", NULL, dy, sq_plus (e, y, 1.0)))
EWM_BACKWARD (asin, tw_emit2 (e, "div", NULL, dy, tw_emit1 (e, "sqrt", NULL, one_minus_sq (e, x))))
EWM_BACKWARD (acos, tw_emit1 (e, "neg", NULL,
                              tw_emit2 (e, "div", NULL, dy,
                                        tw_emit1 (e, "sqrt", NULL, one_minus_sq (e, x)))))
EWM_BACKWARD (atan, tw_emit2 (e, "div", NULL, dy, sq_plus (e, x, 1.0)))
EWM_BACKWARD (sinh, tw_emit2 (e, "mul", NULL, dy, tw_emit1 (e, "cosh", NULL, x)))
EWM_BACKWARD (cosh, tw_emit2 (e, "mul", NULL, dy, tw_emit1 (e, "sinh", NULL, x)))
EWM_BACKWARD (asinh, tw_emit2 (e, "div", NULL, dy, tw_emit1 (e, "sqrt", NULL, sq_plus (e, x, 1.0))))
EWM_BACKWARD (acosh, tw_emit2 (e, "div", NULL, dy, tw_emit1 (e, "sqrt", NULL, sq_plus (e, x, -1.0))))
EWM_BACKWARD (atanh, tw_emit2 (e, "div", NULL, dy, one_minus_sq (e, x)))
/* d softplus = sigmoid (x); d softsign = 1 / (1 + |x|)^2. */
EWM_BACKWARD (softplus, tw_emit2 (e, "mul", NULL, dy, tw_emit1 (e, "sigmoid", NULL, x)))
EWM_BACKWARD (softsign, tw_emit2 (e, "div", NULL, dy,
                                  tw_emit1 (e, "square", NULL,
                                            emit_f (e, "add_scalar", "value", 1.0,
                                                    tw_emit1 (e, "abs", NULL, x)))))
/* round is piecewise constant: zero gradient (as floor and ceil). */
EWM_BACKWARD (round, tw_emit1 (e, "zeros_like", NULL, x))
/* The piecewise ops: their grad op on x and dy, attributes passed through. */
EWM_BACKWARD (elu, tw_emit2 (e, "elu_grad", a, x, dy))
EWM_BACKWARD (selu, tw_emit2 (e, "selu_grad", a, x, dy))
EWM_BACKWARD (celu, tw_emit2 (e, "celu_grad", a, x, dy))
EWM_BACKWARD (thresholded_relu, tw_emit2 (e, "thresholded_relu_grad", a, x, dy))
EWM_BACKWARD (shrink, tw_emit2 (e, "shrink_grad", a, x, dy))

/* thresholded_relu_grad and shrink_grad mask dy by where x lies. */
TW_EWU_MASK_GRAD_BACKWARD (thresholded_relu_grad)
TW_EWU_MASK_GRAD_BACKWARD (shrink_grad)

/* y = x for x >= 0, s x below: with m = [x >= 0], dx = dy (m + (1 - m) s)
 * and ds = sum over the broadcast of dy x (1 - m). */
static void
prelu_grads (tw_emit *e, tw_val *x, tw_val *s, tw_val *dy, gboolean need_x, gboolean need_s,
             tw_val **gx, tw_val **gs)
{
  tw_val *m = tw_emit2 (e, "ge_mask", NULL, x, tw_emit1 (e, "zeros_like", NULL, x));
  tw_val *nm = emit_f (e, "add_scalar", "value", 1.0, tw_emit1 (e, "neg", NULL, m));
  if (need_x)
    *gx = tw_emit2 (e, "mul", NULL, dy, tw_emit2 (e, "add", NULL, m, tw_emit2 (e, "mul", NULL, nm, s)));
  if (need_s)
    *gs = reduce_to (e, tw_emit2 (e, "mul", NULL, tw_emit2 (e, "mul", NULL, dy, x), nm), s);
}

static gboolean
prelu_broadcast_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                          tw_val *const *out, tw_val *const *gout, const gboolean *needs,
                          tw_val **gin)
{
  prelu_grads (e, in[0], in[1], gout[0], needs[0], needs[1], &gin[0], &gin[1]);
  return TRUE;
}

/* The weight [C] (x's dtype) read as [C, 1, ..., 1] against x [N, C, d2, ...]. */
static gboolean
prelu_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
                tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  const tw_tinfo *xi = tw_val_info (e, in[0]), *wi = tw_val_info (e, in[1]);
  tw_val *w = in[1];
  int64_t axes[TW_MAX_DIMS];
  int na = 0;
  if (wi->dims[0] > 1)
    for (int d = 2; d < xi->ndim; d++)
      axes[na] = na + 1, na++;
  tw_attrs *ax = NULL;
  if (na > 0)
    {
      ax = tw_attrs_new ();
      tw_attrs_set_ints (ax, "axes", na, axes);
      w = tw_emit1 (e, "unsqueeze", ax, w);
    }
  prelu_grads (e, in[0], w, gout[0], needs[0], needs[1], &gin[0], &gin[1]);
  if (needs[1] && gin[1] && ax)
    gin[1] = tw_emit1 (e, "squeeze", ax, gin[1]);
  tw_attrs_free (ax);
  return TRUE;
}

/* ---- cost and definitions ------------------------------------------------------- */

static void
cost_2flops (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
             tw_cost *cost)
{
  tw_cost_elementwise (in, n_in, out, n_out, 2, cost);
}

/* libm's transcendental functions: ~10-20 flops each; 10 as for exp/log. */
static void
cost_10flops (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
              tw_cost *cost)
{
  tw_cost_elementwise (in, n_in, out, n_out, 10, cost);
}

static const char *const names_x[] = { "x", NULL };
static const char *const names_x_dy[] = { "x", "dy", NULL };
static const char *const names_x_slope[] = { "x", "slope", NULL };

static const tw_attr_spec no_attrs[] = { { NULL } };
static const tw_attr_spec elu_attrs[] = {
  { "alpha", TW_ATTR_FLOAT, "1.0", FALSE, "y = alpha (e^x - 1) for x <= 0" },
  { NULL }
};
static const tw_attr_spec selu_attrs[] = {
  { "alpha", TW_ATTR_FLOAT, "1.67326319217681884765625", FALSE, "y = gamma alpha (e^x - 1) for x <= 0" },
  { "gamma", TW_ATTR_FLOAT, "1.05070102214813232421875", FALSE, "y = gamma x for x > 0" },
  { NULL }
};
static const tw_attr_spec celu_attrs[] = {
  { "alpha", TW_ATTR_FLOAT, "1.0", FALSE, "y = alpha (e^(x / alpha) - 1) for x <= 0 (nonzero)" },
  { NULL }
};
static const tw_attr_spec thresholded_attrs[] = {
  { "alpha", TW_ATTR_FLOAT, "1.0", FALSE, "threshold: y = x where x > alpha, else 0" },
  { NULL }
};
static const tw_attr_spec shrink_attrs[] = {
  { "bias", TW_ATTR_FLOAT, "0.0", FALSE, "subtracted from x > lambd, added to x < -lambd" },
  { "lambd", TW_ATTR_FLOAT, "0.5", FALSE, "y = 0 for -lambd <= x <= lambd" },
  { NULL }
};
static const tw_attr_spec prelu_attrs[] = {
  { "num_parameters", TW_ATTR_INT, "1", FALSE,
    "1: one slope shared; else one per channel (dim 1 of the input)" },
  { NULL }
};

#define DEF_EWM(NAME, CAT, DOC, ATTRS, INFER, COST, ONNX)                                     \
  static const tw_op_def NAME##_def = {                                                     \
    .name = #NAME, .category = CAT, .doc = DOC, .attrs = ATTRS, .min_inputs = 1,            \
    .max_inputs = 1, .input_names = names_x, .n_outputs = 1, .infer = INFER,                \
    .forward = NAME##_forward, .backward = NAME##_backward, .cost = COST, .onnx_name = ONNX, \
    .flags = TW_OP_ELEMENTWISE,                                                             \
  };

#define DEF_EWM_GRAD(NAME, DOC, ATTRS, INFER, BWD)                                            \
  static const tw_op_def NAME##_def = {                                                     \
    .name = #NAME, .category = "Activation", .doc = DOC, .attrs = ATTRS, .min_inputs = 2,   \
    .max_inputs = 2, .input_names = names_x_dy, .n_outputs = 1, .infer = INFER,             \
    .forward = NAME##_forward, .backward = BWD, .cost = cost_10flops,                       \
    .flags = TW_OP_ELEMENTWISE | TW_OP_INTERNAL,                                            \
  };

DEF_EWM (sin, "Math", "sine", no_attrs, plain_infer, cost_10flops, "Sin")
DEF_EWM (cos, "Math", "cosine", no_attrs, plain_infer, cost_10flops, "Cos")
DEF_EWM (tan, "Math", "tangent", no_attrs, plain_infer, cost_10flops, "Tan")
DEF_EWM (asin, "Math", "arcsine (NaN outside [-1, 1])", no_attrs, plain_infer, cost_10flops, "Asin")
DEF_EWM (acos, "Math", "arccosine (NaN outside [-1, 1])", no_attrs, plain_infer, cost_10flops,
         "Acos")
DEF_EWM (atan, "Math", "arctangent", no_attrs, plain_infer, cost_10flops, "Atan")
DEF_EWM (sinh, "Math", "hyperbolic sine", no_attrs, plain_infer, cost_10flops, "Sinh")
DEF_EWM (cosh, "Math", "hyperbolic cosine", no_attrs, plain_infer, cost_10flops, "Cosh")
DEF_EWM (asinh, "Math", "inverse hyperbolic sine", no_attrs, plain_infer, cost_10flops, "Asinh")
DEF_EWM (acosh, "Math", "inverse hyperbolic cosine (NaN below 1)", no_attrs, plain_infer,
         cost_10flops, "Acosh")
DEF_EWM (atanh, "Math", "inverse hyperbolic tangent (NaN outside [-1, 1])", no_attrs, plain_infer,
         cost_10flops, "Atanh")
DEF_EWM (round, "Math", "nearest integer, halves to even", no_attrs, plain_infer, cost_2flops,
         "Round")
DEF_EWM (elu, "Activation", "x if x > 0 else alpha (e^x - 1)", elu_attrs, attr_infer,
         cost_10flops, "Elu")
DEF_EWM (selu, "Activation", "gamma (x if x > 0 else alpha (e^x - 1))", selu_attrs, attr_infer,
         cost_10flops, "Selu")
DEF_EWM (celu, "Activation", "max (0, x) + min (0, alpha (e^(x / alpha) - 1))", celu_attrs,
         celu_infer, cost_10flops, "Celu")
DEF_EWM (softplus, "Activation", "log (1 + e^x)", no_attrs, plain_infer, cost_10flops, "Softplus")
DEF_EWM (softsign, "Activation", "x / (1 + |x|)", no_attrs, plain_infer, cost_2flops, "Softsign")
DEF_EWM (thresholded_relu, "Activation", "x if x > alpha else 0", thresholded_attrs, attr_infer,
         cost_2flops, "ThresholdedRelu")
DEF_EWM (shrink, "Activation", "x - bias if x > lambd, x + bias if x < -lambd, else 0",
         shrink_attrs, attr_infer, cost_2flops, "Shrink")

DEF_EWM_GRAD (elu_grad, "dy * elu'(x)", elu_attrs, attr_infer, NULL)
DEF_EWM_GRAD (selu_grad, "dy * selu'(x)", selu_attrs, attr_infer, NULL)
DEF_EWM_GRAD (celu_grad, "dy * celu'(x)", celu_attrs, celu_infer, NULL)
DEF_EWM_GRAD (thresholded_relu_grad, "dy where x > alpha, else 0", thresholded_attrs, attr_infer,
              thresholded_relu_grad_backward)
DEF_EWM_GRAD (shrink_grad, "dy where |x| > lambd, else 0", shrink_attrs, attr_infer,
              shrink_grad_backward)

/* The learnt form (PyTorch's nn.PReLU): weight [num_parameters], starting at
 * 0 (relu; PyTorch starts at 0.25).  The importer maps ONNX's PRelu with a
 * constant per-channel slope to it, and with a computed slope to
 * prelu_broadcast. */
static const tw_op_def prelu_def = {
  .name = "prelu", .category = "Activation",
  .doc = "x if x >= 0 else weight[c] x, a learnt slope per channel (dim 1) or one shared",
  .attrs = prelu_attrs, .min_inputs = 1, .max_inputs = 1, .input_names = names_x, .n_outputs = 1,
  .params = prelu_params, .infer = prelu_infer, .forward = prelu_forward,
  .backward = prelu_backward, .cost = cost_2flops, .onnx_name = NULL, .flags = 0,
};

static const tw_op_def prelu_broadcast_def = {
  .name = "prelu_broadcast", .category = "Activation",
  .doc = "x if x >= 0 else slope x, the slope an input broadcast to x's shape",
  .attrs = no_attrs, .min_inputs = 2, .max_inputs = 2, .input_names = names_x_slope,
  .n_outputs = 1, .infer = prelu_broadcast_infer, .forward = prelu_broadcast_forward,
  .backward = prelu_broadcast_backward, .cost = cost_2flops, .onnx_name = "PRelu",
  .flags = TW_OP_ELEMENTWISE,
};

void
tw_ops_register_elementwise_more (void)
{
  static const tw_op_def *const defs[] = {
    &sin_def, &cos_def, &tan_def, &asin_def, &acos_def, &atan_def, &sinh_def, &cosh_def,
    &asinh_def, &acosh_def, &atanh_def, &round_def, &elu_def, &selu_def, &celu_def,
    &softplus_def, &softsign_def, &thresholded_relu_def, &shrink_def, &elu_grad_def,
    &selu_grad_def, &celu_grad_def, &thresholded_relu_grad_def, &shrink_grad_def, &prelu_def,
    &prelu_broadcast_def,
  };
  for (gsize i = 0; i < G_N_ELEMENTS (defs); i++)
    tw_op_register (defs[i]);
}
