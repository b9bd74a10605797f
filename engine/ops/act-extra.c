/* act-extra.c — the clamping activations real ONNX models use: clip (ONNX
 * Clip), relu6 (MobileNet's clip to [0, 6]), hard_sigmoid (HardSigmoid) and
 * hard_swish (HardSwish, MobileNetV3), with the internal grad ops their
 * backward rules emit (clip_grad, hard_sigmoid_grad, hard_swish_grad).
 *
 * All are piecewise linear (hard_swish piecewise quadratic): the grad ops
 * take the forward's input x and dy and mask dy by the linear piece x lies
 * on.  At a kink the gradient follows PyTorch's clamp: the bounds belong to
 * the inside (d clip / dx = 1 at x = min and at x = max).
 */
#define G_LOG_DOMAIN "twb-ops-act"

#include "engine/ops/ew-unary-private.h"

#include <math.h>

/* ONNX HardSwish: x * max (0, min (1, x / 6 + 1 / 2)), a fixed alpha = 1/6,
 * beta = 1/2 (the HardSigmoid defaults are 0.2 and 0.5). */
#define HSWISH_ALPHA (1.0 / 6.0)
#define HSWISH_BETA 0.5

/* The op's forward: in[0] is x (any shape), in[1] dy (same shape) for the
 * grad ops; out[0] has x's shape.  PARAMS fills p and q from the attributes. */
#define ACT_OP(NAME, PARAMS, EXPR)                                                            \
  TW_EWU_KERNELS (NAME, EXPR)                                                               \
  static gboolean NAME##_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, \
                                  int n_in, tw_tensor *const *out, GError **error)          \
  {                                                                                         \
    double p, q;                                                                            \
    PARAMS (a, &p, &q);                                                                     \
    TW_EWU_RUN (NAME, ctx, in, n_in, out, p, q);                                            \
    return TRUE;                                                                            \
  }

/* p = min, q = max; an absent bound is unbounded. */
static void
clip_params (const tw_attrs *a, double *lo, double *hi)
{
  *lo = tw_attrs_get_float (a, "min", -INFINITY);
  *hi = tw_attrs_get_float (a, "max", INFINITY);
}

static void
relu6_params (const tw_attrs *a, double *lo, double *hi)
{
  *lo = 0;
  *hi = 6;
}

/* p = alpha, q = beta. */
static void
hard_sigmoid_params (const tw_attrs *a, double *alpha, double *beta)
{
  *alpha = tw_attrs_get_float (a, "alpha", 0.2);
  *beta = tw_attrs_get_float (a, "beta", 0.5);
}

static void
hard_swish_params (const tw_attrs *a, double *alpha, double *beta)
{
  *alpha = HSWISH_ALPHA;
  *beta = HSWISH_BETA;
}

ACT_OP (clip, clip_params, x < p ? p : (x > q ? q : x))
ACT_OP (relu6, relu6_params, x < p ? p : (x > q ? q : x))
ACT_OP (clip_grad, clip_params, x >= p && x <= q ? d : (T) 0)
ACT_OP (hard_sigmoid, hard_sigmoid_params,
        ({
          const T t = p * x + q;
          t < (T) 0 ? (T) 0 : (t > (T) 1 ? (T) 1 : t);
        }))
ACT_OP (hard_sigmoid_grad, hard_sigmoid_params,
        ({
          const T t = p * x + q;
          t > (T) 0 && t < (T) 1 ? p * d : (T) 0;
        }))
ACT_OP (hard_swish, hard_swish_params,
        ({
          const T t = p * x + q;
          x * (t < (T) 0 ? (T) 0 : (t > (T) 1 ? (T) 1 : t));
        }))
/* d/dx [x h(x)] = h(x) + x h'(x) = (2 alpha x + beta) inside, 0 below, 1 above. */
ACT_OP (hard_swish_grad, hard_swish_params,
        ({
          const T t = p * x + q;
          t <= (T) 0 ? (T) 0 : (t >= (T) 1 ? d : d * ((T) 2 * p * x + q));
        }))

/* ---- infer ------------------------------------------------------------------- */

static gboolean
check_float_input (const char *op, const tw_tinfo *t, GError **error)
{
  if (tw_dtype_is_float (t->dtype))
    return TRUE;
  g_autofree char *s = tw_tinfo_to_string (t);
  g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_DTYPE,
               "%s expects a float input (f32 or f64), got %s", op, s);
  return FALSE;
}

static gboolean
check_finite_attr (const char *op, const char *name, double v, GError **error)
{
  if (isfinite (v))
    return TRUE;
  g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR, "%s: %s must be a finite number, got %g",
               op, name, v);
  return FALSE;
}

/* Grad ops: x and dy of one type and shape. */
static gboolean
check_grad_inputs (const char *op, const tw_tinfo *in, int n_in, GError **error)
{
  if (n_in < 2 || tw_tinfo_equal (&in[0], &in[1]))
    return TRUE;
  g_autofree char *s0 = tw_tinfo_to_string (&in[0]);
  g_autofree char *s1 = tw_tinfo_to_string (&in[1]);
  g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
               "%s expects dy shaped like x: x is %s, dy is %s", op, s0, s1);
  return FALSE;
}

/* clip and clip_grad: NaN bounds and min > max are refused (ONNX would give
 * max everywhere for min > max: almost surely a mistake on the canvas). */
static gboolean
clip_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  const char *op = n_in > 1 ? "clip_grad" : "clip";
  double lo, hi;
  clip_params (a, &lo, &hi);
  if (isnan (lo) || isnan (hi))
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR, "%s: %s is NaN", op,
                   isnan (lo) ? "min" : "max");
      return FALSE;
    }
  if (lo > hi)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "%s: min (%g) is greater than max (%g)", op, lo, hi);
      return FALSE;
    }
  if (!check_float_input (op, &in[0], error) || !check_grad_inputs (op, in, n_in, error))
    return FALSE;
  out[0] = in[0];
  return TRUE;
}

static gboolean
hard_sigmoid_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                    GError **error)
{
  const char *op = n_in > 1 ? "hard_sigmoid_grad" : "hard_sigmoid";
  double alpha, beta;
  hard_sigmoid_params (a, &alpha, &beta);
  if (!check_finite_attr (op, "alpha", alpha, error) || !check_finite_attr (op, "beta", beta, error)
      || !check_float_input (op, &in[0], error) || !check_grad_inputs (op, in, n_in, error))
    return FALSE;
  out[0] = in[0];
  return TRUE;
}

static gboolean
plain_infer (const char *op, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  if (!check_float_input (op, &in[0], error) || !check_grad_inputs (op, in, n_in, error))
    return FALSE;
  out[0] = in[0];
  return TRUE;
}

static gboolean
relu6_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  return plain_infer ("relu6", in, n_in, out, error);
}

static gboolean
hard_swish_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                  GError **error)
{
  return plain_infer (n_in > 1 ? "hard_swish_grad" : "hard_swish", in, n_in, out, error);
}

/* ---- backward ---------------------------------------------------------------- */

/* The attributes clip_grad needs for relu6: its bounds. */
static tw_attrs *
relu6_bounds (void)
{
  tw_attrs *b = tw_attrs_new ();
  tw_attrs_set_float (b, "min", 0);
  tw_attrs_set_float (b, "max", 6);
  return b;
}

/* y = f (x): dx = f_grad (x, dy), attributes passed through. */
#define ACT_BACKWARD(NAME, GRAD)                                                              \
  static gboolean NAME##_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, \
                                   tw_val *const *out, tw_val *const *gout,                \
                                   const gboolean *needs, tw_val **gin)                    \
  {                                                                                         \
    gin[0] = tw_emit2 (e, GRAD, a, in[0], gout[0]);                                         \
    return gin[0] != NULL;                                                                  \
  }

ACT_BACKWARD (clip, "clip_grad")
ACT_BACKWARD (hard_sigmoid, "hard_sigmoid_grad")
ACT_BACKWARD (hard_swish, "hard_swish_grad")

static gboolean
relu6_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
                tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  tw_attrs *b = relu6_bounds ();
  gin[0] = tw_emit2 (e, "clip_grad", b, in[0], gout[0]);
  tw_attrs_free (b);
  return gin[0] != NULL;
}

/* clip_grad and hard_sigmoid_grad mask dy by the piece x lies on. */
TW_EWU_MASK_GRAD_BACKWARD (clip_grad)
TW_EWU_MASK_GRAD_BACKWARD (hard_sigmoid_grad)

/* dx = dy s (x) with s = 2 alpha x + beta inside (-3, 3): d/dx = 2 alpha dy g
 * inside, which is 2 hard_sigmoid_grad (x, dy g) with HardSwish's alpha and
 * beta (alpha d inside the same interval); d/d(dy) = hard_swish_grad (x, g). */
static gboolean
hard_swish_grad_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                          tw_val *const *out, tw_val *const *gout, const gboolean *needs,
                          tw_val **gin)
{
  if (needs[0])
    {
      tw_attrs *ha = tw_attrs_new ();
      tw_attrs_set_float (ha, "alpha", HSWISH_ALPHA);
      tw_attrs_set_float (ha, "beta", HSWISH_BETA);
      tw_val *dg = tw_emit2 (e, "mul", NULL, in[1], gout[0]);
      tw_val *m = tw_emit2 (e, "hard_sigmoid_grad", ha, in[0], dg);
      tw_attrs_free (ha);
      tw_attrs *sa = tw_attrs_new ();
      tw_attrs_set_float (sa, "alpha", 2.0);
      gin[0] = tw_emit1 (e, "scale", sa, m);
      tw_attrs_free (sa);
    }
  if (needs[1])
    gin[1] = tw_emit2 (e, "hard_swish_grad", NULL, in[0], gout[0]);
  return TRUE;
}

/* ---- cost and definitions ----------------------------------------------------- */

/* Two compares (and a select) per element; the hard_* ops add a multiply-add
 * (and hard_swish a multiply). */
static void
cost_2flops (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
             tw_cost *cost)
{
  tw_cost_elementwise (in, n_in, out, n_out, 2, cost);
}

static void
cost_4flops (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
             tw_cost *cost)
{
  tw_cost_elementwise (in, n_in, out, n_out, 4, cost);
}

static const char *const names_x[] = { "x", NULL };
static const char *const names_x_dy[] = { "x", "dy", NULL };

static const tw_attr_spec no_attrs[] = { { NULL } };
static const tw_attr_spec clip_attrs[] = {
  { "min", TW_ATTR_FLOAT, NULL, FALSE, "lower bound (absent: none)" },
  { "max", TW_ATTR_FLOAT, NULL, FALSE, "upper bound (absent: none)" },
  { NULL }
};
static const tw_attr_spec hard_sigmoid_attrs[] = {
  { "alpha", TW_ATTR_FLOAT, "0.2", FALSE, "slope: y = max (0, min (1, alpha x + beta))" },
  { "beta", TW_ATTR_FLOAT, "0.5", FALSE, "offset" },
  { NULL }
};

#define DEF_ACT(NAME, DOC, ATTRS, INFER, COST, ONNX)                                          \
  static const tw_op_def NAME##_def = {                                                     \
    .name = #NAME, .category = "Activation", .doc = DOC, .attrs = ATTRS, .min_inputs = 1,   \
    .max_inputs = 1, .input_names = names_x, .n_outputs = 1, .infer = INFER,                \
    .forward = NAME##_forward, .backward = NAME##_backward, .cost = COST, .onnx_name = ONNX, \
    .flags = TW_OP_ELEMENTWISE,                                                             \
  };

#define DEF_ACT_GRAD(NAME, DOC, ATTRS, INFER, COST)                                           \
  static const tw_op_def NAME##_def = {                                                     \
    .name = #NAME, .category = "Activation", .doc = DOC, .attrs = ATTRS, .min_inputs = 2,   \
    .max_inputs = 2, .input_names = names_x_dy, .n_outputs = 1, .infer = INFER,             \
    .forward = NAME##_forward, .backward = NAME##_backward, .cost = COST,                   \
    .flags = TW_OP_ELEMENTWISE | TW_OP_INTERNAL,                                            \
  };

DEF_ACT (clip, "x limited to [min, max]", clip_attrs, clip_infer, cost_2flops, "Clip")
/* relu6 has no ONNX op of its own: exporters write Clip (min 0, max 6). */
DEF_ACT (relu6, "min (max (x, 0), 6)", no_attrs, relu6_infer, cost_2flops, NULL)
DEF_ACT (hard_sigmoid, "max (0, min (1, alpha x + beta))", hard_sigmoid_attrs, hard_sigmoid_infer,
         cost_4flops, "HardSigmoid")
DEF_ACT (hard_swish, "x max (0, min (1, x / 6 + 1 / 2))", no_attrs, hard_swish_infer, cost_4flops,
         "HardSwish")
DEF_ACT_GRAD (clip_grad, "dy where min <= x <= max, else 0", clip_attrs, clip_infer, cost_2flops)
DEF_ACT_GRAD (hard_sigmoid_grad, "alpha dy where 0 < alpha x + beta < 1, else 0",
              hard_sigmoid_attrs, hard_sigmoid_infer, cost_4flops)
DEF_ACT_GRAD (hard_swish_grad, "dy * hard_swish'(x)", no_attrs, hard_swish_infer, cost_4flops)

void
tw_ops_register_act_extra (void)
{
  static const tw_op_def *const defs[] = {
    &clip_def, &relu6_def, &hard_sigmoid_def, &hard_swish_def,
    &clip_grad_def, &hard_sigmoid_grad_def, &hard_swish_grad_def,
  };
  for (gsize i = 0; i < G_N_ELEMENTS (defs); i++)
    tw_op_register (defs[i]);
}
