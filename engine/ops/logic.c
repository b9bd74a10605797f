/* logic.c — comparisons (equal, greater, less, greater_equal, less_equal:
 * any two inputs of one element type, NumPy broadcasting, u8 0/1 out: ONNX's
 * bool), logic on u8 (logical_and, logical_or, logical_xor, logical_not;
 * any nonzero byte is true), the float tests isnan and isinf, and mod
 * (ONNX's Mod: every element type; fmod = 0 takes the divisor's sign as
 * Python's %, fmod = 1 the dividend's as C's fmod and %).
 *
 * The broadcasting loop walks the output in rows of its last dim, the
 * inputs by the element-wise ops' broadcast plan (tw_bcast_plan).  These ops
 * select or compare: results are exact in every type.  Gradients: the
 * comparisons and tests are piecewise constant (zero); logic has none (its
 * inputs are bytes); mod's is dy for a and -dy trunc-or-floor (a / b) for b. */
#define G_LOG_DOMAIN "twb-ops-logic"

#include "engine/op.h"

#include <math.h>
#include <string.h>

/* out[0][i] = EXPR (x0, x1) over the broadcast, x0 and x1 of type TA. */
#define BC_LOOP(TA, TY, EXPR)                                                                 \
  do                                                                                        \
    {                                                                                       \
      const TA *A_ = tw_tensor_data (in[0]), *B_ = tw_tensor_data (in[1]);                  \
      TY *Y_ = tw_tensor_data (out[0]);                                                     \
      const int64_t inner_ = p.shape[p.nd - 1], ia_ = p.sa[p.nd - 1], ib_ = p.sb[p.nd - 1];  \
      const int64_t rows_ = tw_tensor_numel (out[0]) / inner_;                              \
      for (int64_t r = 0; r < rows_; r++)                                                   \
        {                                                                                   \
          int64_t oa, ob;                                                                   \
          tw_bcast_row_offsets (&p, r, &oa, &ob);                                           \
          TY *yr = Y_ + r * inner_;                                                         \
          for (int64_t i = 0; i < inner_; i++)                                              \
            {                                                                               \
              const TA x0 = A_[oa + i * ia_], x1 = B_[ob + i * ib_];                        \
              yr[i] = (TY) (EXPR);                                                          \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
  while (0)

/* Every element type of the inputs; the output has type TYOUT. */
#define BC_ANY(TYOUT, EXPR)                                                      \
  switch (in[0]->dtype)                                                                     \
    {                                                                                       \
    case TW_F32: { typedef float T; BC_LOOP (T, TYOUT, EXPR); break; }                      \
    case TW_F64: { typedef double T; BC_LOOP (T, TYOUT, EXPR); break; }                     \
    case TW_I32: { typedef int32_t T; BC_LOOP (T, TYOUT, EXPR); break; }                    \
    case TW_I64: { typedef int64_t T; BC_LOOP (T, TYOUT, EXPR); break; }                    \
    case TW_U8: { typedef uint8_t T; BC_LOOP (T, TYOUT, EXPR); break; }                     \
    default: g_assert_not_reached ();                                                       \
    }

#define CMP_OP(NAME, EXPR)                                                                    \
  static gboolean NAME##_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, \
                                  int n_in, tw_tensor *const *out, GError **error)          \
  {                                                                                         \
    tw_bcast_plan p;                                                                              \
    if (tw_tensor_numel (out[0]) == 0)                                                      \
      return TRUE;                                                                          \
    tw_bcast_plan_init (&p, in[0], in[1], out[0]);                                                     \
    BC_ANY (uint8_t, EXPR)                                                               \
    return TRUE;                                                                            \
  }

CMP_OP (equal, x0 == x1)
CMP_OP (greater, x0 > x1)
CMP_OP (less, x0 < x1)
CMP_OP (greater_equal, x0 >= x1)
CMP_OP (less_equal, x0 <= x1)

#define LOGIC_OP(NAME, EXPR)                                                                  \
  static gboolean NAME##_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, \
                                  int n_in, tw_tensor *const *out, GError **error)          \
  {                                                                                         \
    tw_bcast_plan p;                                                                              \
    if (tw_tensor_numel (out[0]) == 0)                                                      \
      return TRUE;                                                                          \
    tw_bcast_plan_init (&p, in[0], in[1], out[0]);                                                     \
    BC_LOOP (uint8_t, uint8_t, EXPR);                                                       \
    return TRUE;                                                                            \
  }

LOGIC_OP (logical_and, (x0 != 0) & (x1 != 0))
LOGIC_OP (logical_or, (x0 != 0) | (x1 != 0))
LOGIC_OP (logical_xor, (x0 != 0) ^ (x1 != 0))

/* Integer remainder; b = 0 gives 0 (ONNX leaves it undefined, C traps), b =
 * -1 gives 0 without the overflow of INT64_MIN % -1.  fm = 0: the sign of b
 * (Python's %), fm = 1: the sign of a (C's %). */
static inline int64_t
imod (int64_t a, int64_t b, int fm)
{
  if (b == 0 || b == -1)
    return 0;
  int64_t r = a % b;
  if (!fm && r != 0 && ((r < 0) != (b < 0)))
    r += b;
  return r;
}

static inline double
dmod (double a, double b, int fm)
{
  double r = fmod (a, b);
  if (!fm && r != 0 && ((r < 0) != (b < 0)))
    r += b;
  return r;
}

static inline float
fmodf_ (float a, float b, int fm)
{
  float r = fmodf (a, b);
  if (!fm && r != 0 && ((r < 0) != (b < 0)))
    r += b;
  return r;
}

static gboolean
mod_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
             tw_tensor *const *out, GError **error)
{
  tw_bcast_plan p;
  int fm = tw_attrs_get_int (a, "fmod", 0) != 0;
  if (tw_tensor_numel (out[0]) == 0)
    return TRUE;
  tw_bcast_plan_init (&p, in[0], in[1], out[0]);
  switch (in[0]->dtype)
    {
    case TW_F32: BC_LOOP (float, float, fmodf_ (x0, x1, fm)); break;
    case TW_F64: BC_LOOP (double, double, dmod (x0, x1, fm)); break;
    case TW_I32: BC_LOOP (int32_t, int32_t, imod (x0, x1, fm)); break;
    case TW_I64: BC_LOOP (int64_t, int64_t, imod (x0, x1, fm)); break;
    case TW_U8: BC_LOOP (uint8_t, uint8_t, imod (x0, x1, fm)); break;
    default: g_assert_not_reached ();
    }
  return TRUE;
}

/* ---- unary ------------------------------------------------------------------------ */

static gboolean
logical_not_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                     tw_tensor *const *out, GError **error)
{
  const uint8_t *x = tw_tensor_u8 (in[0]);
  uint8_t *y = tw_tensor_u8 (out[0]);
  for (int64_t i = 0, n = tw_tensor_numel (out[0]); i < n; i++)
    y[i] = x[i] == 0;
  return TRUE;
}

#define FLOAT_TEST(NAME, EXPR)                                                                \
  static gboolean NAME##_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, \
                                  int n_in, tw_tensor *const *out, GError **error)          \
  {                                                                                         \
    gboolean pos = tw_attrs_get_bool (a, "detect_positive", TRUE);                          \
    gboolean neg = tw_attrs_get_bool (a, "detect_negative", TRUE);                          \
    (void) pos;                                                                             \
    (void) neg;                                                                             \
    uint8_t *y = tw_tensor_u8 (out[0]);                                                     \
    int64_t n = tw_tensor_numel (out[0]);                                                   \
    if (in[0]->dtype == TW_F32)                                                             \
      {                                                                                     \
        const float *xs = tw_tensor_f32 (in[0]);                                            \
        for (int64_t i = 0; i < n; i++)                                                     \
          {                                                                                 \
            const double x = xs[i];                                                         \
            y[i] = (EXPR);                                                                  \
          }                                                                                 \
      }                                                                                     \
    else                                                                                    \
      {                                                                                     \
        const double *xs = tw_tensor_f64 (in[0]);                                           \
        for (int64_t i = 0; i < n; i++)                                                     \
          {                                                                                 \
            const double x = xs[i];                                                         \
            y[i] = (EXPR);                                                                  \
          }                                                                                 \
      }                                                                                     \
    return TRUE;                                                                            \
  }

FLOAT_TEST (isnan, isnan (x))
FLOAT_TEST (isinf, isinf (x) && ((x > 0 && pos) || (x < 0 && neg)))

/* ---- infer ------------------------------------------------------------------------ */

static gboolean
same_dtype (const char *op, const tw_tinfo *in, GError **error)
{
  if (in[0].dtype == in[1].dtype)
    return TRUE;
  g_autofree char *sa = tw_tinfo_to_string (&in[0]);
  g_autofree char *sb = tw_tinfo_to_string (&in[1]);
  g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_DTYPE,
               "%s: the inputs must have the same element type, got %s and %s", op, sa, sb);
  return FALSE;
}

static gboolean
cmp_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  if (!same_dtype ("a comparison", in, error) || !tw_infer_broadcast (a, in, n_in, out, error))
    return FALSE;
  out[0].dtype = TW_U8;
  return TRUE;
}

static gboolean
mod_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  return same_dtype ("mod", in, error) && tw_infer_broadcast (a, in, n_in, out, error);
}

static gboolean
check_u8 (const char *op, const tw_tinfo *in, int n_in, GError **error)
{
  for (int i = 0; i < n_in; i++)
    if (in[i].dtype != TW_U8)
      {
        g_autofree char *s = tw_tinfo_to_string (&in[i]);
        g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_DTYPE,
                     "%s expects u8 inputs (0 false, else true), got %s", op, s);
        return FALSE;
      }
  return TRUE;
}

static gboolean
logic_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  return check_u8 ("a logic op", in, n_in, error) && tw_infer_broadcast (a, in, n_in, out, error);
}

static gboolean
not_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  if (!check_u8 ("logical_not", in, 1, error))
    return FALSE;
  out[0] = in[0];
  return TRUE;
}

static gboolean
test_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  if (!tw_dtype_is_float (in[0].dtype))
    {
      g_autofree char *s = tw_tinfo_to_string (&in[0]);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_DTYPE,
                   "isnan / isinf expect a float input (f32 or f64), got %s", s);
      return FALSE;
    }
  out[0] = in[0];
  out[0].dtype = TW_U8;
  return TRUE;
}

/* ---- backward --------------------------------------------------------------------- */

static tw_val *
reduce_to (tw_emit *e, tw_val *g, tw_val *x)
{
  const tw_tinfo *gi = tw_val_info (e, g), *xi = tw_val_info (e, x);
  gboolean same = gi->ndim == xi->ndim;
  for (int d = 0; same && d < gi->ndim; d++)
    same = gi->dims[d] == xi->dims[d];
  return same ? g : tw_emit2 (e, "sum_to", NULL, g, x);
}

/* y = a - b q with q = (a - y) / b an integer: da = dy, db = -dy q (almost
 * everywhere). */
static gboolean
mod_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
              tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  if (needs[0])
    gin[0] = reduce_to (e, gout[0], in[0]);
  if (needs[1])
    {
      tw_val *q = tw_emit2 (e, "div", NULL, tw_emit2 (e, "sub", NULL, in[0], out[0]), in[1]);
      gin[1] = tw_emit1 (e, "neg", NULL, reduce_to (e, tw_emit2 (e, "mul", NULL, gout[0], q), in[1]));
    }
  return TRUE;
}

/* ---- cost and definitions --------------------------------------------------------- */

static void
cost_1flop (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
            tw_cost *cost)
{
  tw_cost_elementwise (in, n_in, out, n_out, 1, cost);
}

static const char *const names_ab[] = { "a", "b", NULL };
static const char *const names_x[] = { "x", NULL };
static const tw_attr_spec no_attrs[] = { { NULL } };
static const tw_attr_spec mod_attrs[] = {
  { "fmod", TW_ATTR_INT, "0", FALSE,
    "0: the result takes the sign of b (Python's %); 1: of a (C's fmod)" },
  { NULL }
};
static const tw_attr_spec isinf_attrs[] = {
  { "detect_positive", TW_ATTR_BOOL, "true", FALSE, "+inf gives 1" },
  { "detect_negative", TW_ATTR_BOOL, "true", FALSE, "-inf gives 1" },
  { NULL }
};

#define DEF_BIN(NAME, DOC, INFER, BWD, ONNX, FLAGS, ATTRS)                                    \
  static const tw_op_def NAME##_def = {                                                     \
    .name = #NAME, .category = "Math", .doc = DOC, .attrs = ATTRS, .min_inputs = 2,         \
    .max_inputs = 2, .input_names = names_ab, .n_outputs = 1, .infer = INFER,               \
    .forward = NAME##_forward, .backward = BWD, .cost = cost_1flop, .onnx_name = ONNX,      \
    .flags = FLAGS,                                                                         \
  };

/* Not TW_OP_ELEMENTWISE: their output type differs from the inputs' (the
 * compiler's in-place and fusion passes work on same-typed chains). */
DEF_BIN (equal, "1 where a == b, else 0 (u8), NumPy broadcasting", cmp_infer, tw_zero_backward,
         "Equal", 0, no_attrs)
DEF_BIN (greater, "1 where a > b, else 0 (u8), NumPy broadcasting", cmp_infer, tw_zero_backward,
         "Greater", 0, no_attrs)
DEF_BIN (less, "1 where a < b, else 0 (u8), NumPy broadcasting", cmp_infer, tw_zero_backward, "Less",
         0, no_attrs)
DEF_BIN (greater_equal, "1 where a >= b, else 0 (u8), NumPy broadcasting", cmp_infer,
         tw_zero_backward, "GreaterOrEqual", 0, no_attrs)
DEF_BIN (less_equal, "1 where a <= b, else 0 (u8), NumPy broadcasting", cmp_infer, tw_zero_backward,
         "LessOrEqual", 0, no_attrs)
DEF_BIN (logical_and, "a and b on u8 (nonzero is true), NumPy broadcasting", logic_infer, NULL,
         "And", TW_OP_ELEMENTWISE, no_attrs)
DEF_BIN (logical_or, "a or b on u8 (nonzero is true), NumPy broadcasting", logic_infer, NULL, "Or",
         TW_OP_ELEMENTWISE, no_attrs)
DEF_BIN (logical_xor, "a xor b on u8 (nonzero is true), NumPy broadcasting", logic_infer, NULL,
         "Xor", TW_OP_ELEMENTWISE, no_attrs)
DEF_BIN (mod, "remainder of a / b (any element type), NumPy broadcasting", mod_infer,
         mod_backward, "Mod", TW_OP_ELEMENTWISE, mod_attrs)

static const tw_op_def logical_not_def = {
  .name = "logical_not", .category = "Math", .doc = "1 where x is 0, else 0 (u8)",
  .attrs = no_attrs, .min_inputs = 1, .max_inputs = 1, .input_names = names_x, .n_outputs = 1,
  .infer = not_infer, .forward = logical_not_forward, .cost = cost_1flop, .onnx_name = "Not",
  .flags = TW_OP_ELEMENTWISE,
};

static const tw_op_def isnan_def = {
  .name = "isnan", .category = "Math", .doc = "1 where x is NaN, else 0 (u8)", .attrs = no_attrs,
  .min_inputs = 1, .max_inputs = 1, .input_names = names_x, .n_outputs = 1, .infer = test_infer,
  .forward = isnan_forward, .backward = tw_zero_backward, .cost = cost_1flop, .onnx_name = "IsNaN",
};

static const tw_op_def isinf_def = {
  .name = "isinf", .category = "Math", .doc = "1 where x is +inf or -inf (as detected), else 0 (u8)",
  .attrs = isinf_attrs, .min_inputs = 1, .max_inputs = 1, .input_names = names_x, .n_outputs = 1,
  .infer = test_infer, .forward = isinf_forward, .backward = tw_zero_backward, .cost = cost_1flop,
  .onnx_name = "IsInf",
};

void
tw_ops_register_logic (void)
{
  static const tw_op_def *const defs[] = {
    &equal_def, &greater_def, &less_def, &greater_equal_def, &less_equal_def, &logical_and_def,
    &logical_or_def, &logical_xor_def, &logical_not_def, &isnan_def, &isinf_def, &mod_def,
  };
  for (gsize i = 0; i < G_N_ELEMENTS (defs); i++)
    tw_op_register (defs[i]);
}
