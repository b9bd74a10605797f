/* test-ops-ew-more.c — the element-wise ops of engine/ops/elementwise-more.c
 * and logic.c, and the integer forms of the broadcasting arithmetic:
 *
 * - forward against float64 references written from the definitions (libm
 *   in double), f32 within a rounding or two, on batch-1, odd and large
 *   (threaded) shapes; backward against central finite differences;
 * - comparisons, logic, isnan / isinf, mod and integer add ... maximum in
 *   every element type against references computed per output element
 *   with NumPy's broadcasting written out (not the kernels' row plan);
 * - attribute, dtype and shape errors that name what is wrong;
 * - ONNX's own node cases (data/onnx-node-ops-ew.json, made by
 *   data/gen-onnx-node-ops-ew.py from libonnx-testdata) through the
 *   registry, and, where libonnx-testdata is installed, each case's
 *   model.onnx through the importer (fixed inputs) and the eager executor;
 * - a model of all of them exported (opsets 13 and 17, onnx.checker where
 *   python3-onnx is installed) and imported again: the same outputs;
 * - a network of the differentiable ones trained by the eager and the
 *   compiled executors: the same losses and weights.
 */
#include "opcheck.h"

#include "engine/eager.h"
#include "engine/params.h"
#include "engine/train.h"
#include "onnx/onnx-export.h"
#include "onnx/onnx-import.h"

#include <math.h>
#include <glib/gstdio.h>
#include <string.h>

/* f64 kernels call the same libm functions as the references: equal up to
 * the compiler's contraction of a multiply-add (a few ulps at 2^-53). */
#define TOL_F64 1e-14
/* f32 kernels (sinf, expm1f, ...) against the double reference: libm's f32
 * functions are within an ulp or two (2^-23 relative, 1.2e-7) and the
 * inputs are f32-exact, so 1e-6 normalised leaves room and still catches a
 * wrong formula (errors of order 1e-2). */
#define TOL_F32 1e-6
/* Central differences in float64 (opcheck.c): ~1e-9 on smooth functions. */
#define TOL_GRAD 1e-6
/* ONNX computed its outputs with NumPy in the inputs' type: float32 math
 * within a few ulps of ours (TOL_F32); integers and bools exactly. */
#define TOL_ONNX 1e-6

static tw_tensor *
run_op (const char *op, const tw_attrs *a, tw_tensor **in, int n_in)
{
  tw_tensor *out[1];
  twt_run_guarded (op, a, in, n_in, out, NULL);
  return out[0];
}

/* ---- unary float ops against libm ------------------------------------------------ */

typedef struct
{
  const char *op;
  double lo, hi;     /* the inputs' range (the op's domain) */
  const char *p, *q; /* attributes set, or NULL */
  double pv, qv;
} unary_case;

static double
ref_unary (const char *op, double x, double p, double q)
{
  if (!strcmp (op, "sin"))
    return sin (x);
  if (!strcmp (op, "cos"))
    return cos (x);
  if (!strcmp (op, "tan"))
    return tan (x);
  if (!strcmp (op, "asin"))
    return asin (x);
  if (!strcmp (op, "acos"))
    return acos (x);
  if (!strcmp (op, "atan"))
    return atan (x);
  if (!strcmp (op, "sinh"))
    return sinh (x);
  if (!strcmp (op, "cosh"))
    return cosh (x);
  if (!strcmp (op, "asinh"))
    return asinh (x);
  if (!strcmp (op, "acosh"))
    return acosh (x);
  if (!strcmp (op, "atanh"))
    return atanh (x);
  if (!strcmp (op, "round"))
    return nearbyint (x);
  if (!strcmp (op, "elu"))
    return x > 0 ? x : p * (exp (x) - 1);
  if (!strcmp (op, "selu"))
    return q * (x > 0 ? x : p * (exp (x) - 1));
  if (!strcmp (op, "celu"))
    return fmax (0, x) + fmin (0, p * (exp (x / p) - 1));
  if (!strcmp (op, "softplus"))
    return log (1 + exp (x));
  if (!strcmp (op, "softsign"))
    return x / (1 + fabs (x));
  if (!strcmp (op, "thresholded_relu"))
    return x > p ? x : 0;
  g_assert_cmpstr (op, ==, "shrink");
  return x < -q ? x + p : (x > q ? x - p : 0);
}

static const unary_case unary_cases[] = {
  { "sin", -6, 6 },
  { "cos", -6, 6 },
  { "tan", -1.3, 1.3 },
  { "asin", -0.95, 0.95 },
  { "acos", -0.95, 0.95 },
  { "atan", -8, 8 },
  { "sinh", -5, 5 },
  { "cosh", -5, 5 },
  { "asinh", -8, 8 },
  { "acosh", 1.05, 8 },
  { "atanh", -0.95, 0.95 },
  { "round", -6, 6 },
  { "elu", -4, 4 },
  { "elu", -4, 4, "alpha", NULL, 0.3 },
  { "selu", -4, 4, "alpha", "gamma", 1.67326319217681884765625, 1.05070102214813232421875 },
  { "selu", -4, 4, "alpha", "gamma", 2, 0.5 },
  { "celu", -4, 4, "alpha", NULL, 1 },
  { "celu", -4, 4, "alpha", NULL, 0.4 },
  { "softplus", -30, 30 },
  { "softsign", -8, 8 },
  { "thresholded_relu", -3, 3, "alpha", NULL, 1 },
  { "thresholded_relu", -3, 3, "alpha", NULL, -0.5 },
  { "shrink", -3, 3, "bias", "lambd", 0, 0.5 },
  { "shrink", -3, 3, "bias", "lambd", 0.75, 1.5 },
};

/* The kinks and jumps of the piecewise ops, where finite differences do
 * not hold: round's halves, elu/selu/celu at 0 (selu's slopes differ),
 * thresholded_relu at alpha, shrink at +-lambd. */
static gboolean
near_kink (const unary_case *c, double x)
{
  const double h = 1e-3;
  if (!strcmp (c->op, "round"))
    return fabs (x - floor (x) - 0.5) < h;
  if (!strcmp (c->op, "thresholded_relu"))
    return fabs (x - c->pv) < h;
  if (!strcmp (c->op, "shrink"))
    return fabs (fabs (x) - c->qv) < h;
  return fabs (x) < h;
}

static void
test_unary (void)
{
  static const struct
  {
    int nd;
    int64_t d[3];
  } shapes[] = { { 2, { 1, 9 } }, { 3, { 3, 5, 7 } }, { 1, { 40000 } } };
  for (guint k = 0; k < G_N_ELEMENTS (unary_cases); k++)
    for (guint s = 0; s < G_N_ELEMENTS (shapes); s++)
      {
        const unary_case *c = &unary_cases[k];
        tw_attrs *a = tw_attrs_new ();
        if (c->p)
          tw_attrs_set_float (a, c->p, c->pv);
        if (c->q)
          tw_attrs_set_float (a, c->q, c->qv);
        double pv = c->p ? c->pv : 1.0, qv = c->q ? c->qv : 0.5;
        if (!strcmp (c->op, "shrink") && !c->p)
          pv = 0;
        g_autoptr (tw_tensor) x32 =
          twt_uniform (TW_F32, shapes[s].nd, shapes[s].d, 7 * k + s, c->lo, c->hi);
        g_autoptr (tw_tensor) x = tw_tensor_cast (x32, TW_F64);
        for (int64_t i = 0; i < tw_tensor_numel (x); i++)
          if (near_kink (c, tw_tensor_f64 (x)[i]))
            tw_tensor_f64 (x)[i] = tw_tensor_f32 (x32)[i] = (float) (tw_tensor_f64 (x)[i] + 2e-3);
        g_autoptr (tw_tensor) ref = tw_tensor_new_like (x);
        for (int64_t i = 0; i < tw_tensor_numel (x); i++)
          tw_tensor_f64 (ref)[i] = ref_unary (c->op, tw_tensor_f64 (x)[i], pv, qv);
        g_autoptr (tw_tensor) y64 = run_op (c->op, a, (tw_tensor *[]){ x }, 1);
        g_autoptr (tw_tensor) y32 = run_op (c->op, a, (tw_tensor *[]){ x32 }, 1);
        double e64 = twt_max_error (y64, ref), e32 = twt_max_error (y32, ref);
        if (!(e64 <= TOL_F64 && e32 <= TOL_F32))
          g_error ("%s (case %u, shape %u): errors %.3g (f64), %.3g (f32)", c->op, k, s, e64, e32);
        if (tw_tensor_numel (x) <= 1000)
          twt_assert_grad (c->op, a, (tw_tensor *[]){ x }, 1, (gboolean[]){ TRUE }, TOL_GRAD);
        tw_attrs_free (a);
      }
}

/* ---- prelu ------------------------------------------------------------------------- */

static void
test_prelu (void)
{
  /* prelu: x [2, 3, 4, 5] with one slope per channel, and one shared. */
  int64_t xs[] = { 2, 3, 4, 5 };
  for (int np = 1; np <= 3; np += 2)
    {
      g_autoptr (tw_tensor) x = twt_uniform (TW_F64, 4, xs, 11 + np, -2, 2);
      g_autoptr (tw_tensor) w = twt_uniform (TW_F64, 1, (int64_t[]){ np }, 12 + np, -1, 1);
      tw_attrs *a = twt_attrs_int ("num_parameters", np);
      g_autoptr (tw_tensor) y = run_op ("prelu", a, (tw_tensor *[]){ x, w }, 2);
      for (int64_t i = 0; i < tw_tensor_numel (x); i++)
        {
          double v = tw_tensor_f64 (x)[i], s = tw_tensor_f64 (w)[np == 1 ? 0 : (i / 20) % 3];
          g_assert_cmpfloat (tw_tensor_f64 (y)[i], ==, v < 0 ? s * v : v);
        }
      tw_tensor *in[2] = { x, w };
      gboolean wrt[2] = { TRUE, TRUE };
      twt_assert_grad ("prelu", a, in, 2, wrt, TOL_GRAD);
      tw_attrs_free (a);
    }
  /* prelu_broadcast: a slope [4, 1] against x [2, 4, 3]. */
  g_autoptr (tw_tensor) x = twt_uniform (TW_F64, 3, (int64_t[]){ 2, 4, 3 }, 21, -2, 2);
  g_autoptr (tw_tensor) s = twt_uniform (TW_F64, 2, (int64_t[]){ 4, 1 }, 22, -1, 1);
  g_autoptr (tw_tensor) y = run_op ("prelu_broadcast", NULL, (tw_tensor *[]){ x, s }, 2);
  for (int64_t i = 0; i < tw_tensor_numel (x); i++)
    {
      double v = tw_tensor_f64 (x)[i], sl = tw_tensor_f64 (s)[(i / 3) % 4];
      g_assert_cmpfloat (tw_tensor_f64 (y)[i], ==, v < 0 ? sl * v : v);
    }
  tw_tensor *in[2] = { x, s };
  gboolean wrt[2] = { TRUE, TRUE };
  twt_assert_grad ("prelu_broadcast", NULL, in, 2, wrt, TOL_GRAD);
}

/* ---- broadcasting ops in every element type --------------------------------------- */

/* Flat index into a (shape ad[an]) of output element f of shape yd[yn]
 * (NumPy: dims aligned right, size-1 dims broadcast). */
static int64_t
bcast_index (int yn, const int64_t *yd, int an, const int64_t *ad, int64_t f)
{
  int64_t idx = 0, stride = 1;
  for (int d = yn - 1; d >= 0; d--)
    {
      int64_t i = f % yd[d];
      f /= yd[d];
      int ad_i = d - (yn - an);
      if (ad_i >= 0)
        {
          idx += (ad[ad_i] == 1 ? 0 : i) * stride;
          stride *= ad[ad_i];
        }
    }
  return idx;
}

/* Python's % (fm 0) or C's (fm 1), with twb's 0 for a zero divisor. */
static double
ref_mod (double a, double b, int fm, gboolean integer)
{
  if (integer && b == 0)
    return 0;
  double r = integer ? (double) ((int64_t) a % (int64_t) b) : fmod (a, b);
  if (!fm && r != 0 && ((r < 0) != (b < 0)))
    r += b;
  return r;
}

/* Integer results as C computes them (in int, stored back in the type). */
static double
wrap (tw_dtype dt, double v)
{
  if (dt == TW_U8)
    return (double) (uint8_t) (int64_t) v;
  if (dt == TW_I32)
    return (double) (int32_t) (int64_t) v;
  return v;
}

static double
ref_binary (const char *op, double a, double b, tw_dtype dt)
{
  gboolean integer = !tw_dtype_is_float (dt);
  if (!strcmp (op, "equal"))
    return a == b;
  if (!strcmp (op, "greater"))
    return a > b;
  if (!strcmp (op, "less"))
    return a < b;
  if (!strcmp (op, "greater_equal"))
    return a >= b;
  if (!strcmp (op, "less_equal"))
    return a <= b;
  if (!strcmp (op, "logical_and"))
    return a != 0 && b != 0;
  if (!strcmp (op, "logical_or"))
    return a != 0 || b != 0;
  if (!strcmp (op, "logical_xor"))
    return (a != 0) != (b != 0);
  if (!strcmp (op, "mod"))
    return ref_mod (a, b, 0, integer);
  if (!strcmp (op, "mod_fmod"))
    return ref_mod (a, b, 1, integer);
  if (!strcmp (op, "add"))
    return wrap (dt, a + b);
  if (!strcmp (op, "sub"))
    return wrap (dt, a - b);
  if (!strcmp (op, "mul"))
    return wrap (dt, a * b);
  if (!strcmp (op, "div"))
    return !integer ? a / b : b == 0 ? 0 : wrap (dt, trunc (a / b));
  if (!strcmp (op, "minimum"))
    return fmin (a, b);
  if (!strcmp (op, "maximum"))
    return fmax (a, b);
  g_assert_cmpstr (op, ==, "pow");
  return wrap (dt, pow (a, b));
}

/* Small integers (ties for the comparisons, zero divisors, negatives for
 * the signs of mod and div) as a tensor of dt. */
static tw_tensor *
small_ints (tw_dtype dt, int nd, const int64_t *shape, guint64 seed, int lo, int hi)
{
  g_autoptr (tw_tensor) r = twt_randint (nd, shape, seed, hi - lo + 1);
  tw_tensor *t = tw_tensor_new (dt, nd, shape);
  for (int64_t i = 0; i < tw_tensor_numel (t); i++)
    tw_tensor_set_flat (t, i, (double) (tw_tensor_i64 (r)[i] + lo));
  return t;
}

static void
check_binary (const char *op, tw_dtype dt, int an, const int64_t *ad, int bn, const int64_t *bd,
              guint64 seed)
{
  const char *twop = g_str_has_prefix (op, "mod") ? "mod" : op;
  gboolean logic = g_str_has_prefix (op, "logical_"), unsigned_ = dt == TW_U8;
  gboolean is_pow = !strcmp (op, "pow");
  int lo = logic || unsigned_ ? 0 : -7, hi = logic ? 2 : 7;
  g_autoptr (tw_tensor) a = small_ints (dt, an, ad, seed, lo, hi);
  g_autoptr (tw_tensor) b = small_ints (dt, bn, bd, seed + 1, is_pow ? 0 : lo, is_pow ? 3 : hi);
  if (tw_dtype_is_float (dt) && !logic)
    for (int64_t i = 0; i < tw_tensor_numel (a); i++) /* fractions for fmod, div */
      tw_tensor_set_flat (a, i, tw_tensor_get_flat (a, i) * 0.75);
  if (tw_dtype_is_float (dt) && (g_str_has_prefix (op, "mod") || !strcmp (op, "div")))
    for (int64_t i = 0; i < tw_tensor_numel (b); i++) /* float division by zero: inf, NaN */
      if (tw_tensor_get_flat (b, i) == 0)
        tw_tensor_set_flat (b, i, 2.5);
  tw_attrs *at = NULL;
  if (!strcmp (op, "mod_fmod"))
    at = twt_attrs_int ("fmod", 1);
  g_autoptr (tw_tensor) y = run_op (twop, at, (tw_tensor *[]){ a, b }, 2);
  tw_attrs_free (at);
  int yn = MAX (an, bn);
  int64_t yd[TW_MAX_DIMS];
  for (int d = 0; d < yn; d++)
    {
      int ia = d - (yn - an), ib = d - (yn - bn);
      yd[d] = MAX (ia >= 0 ? ad[ia] : 1, ib >= 0 ? bd[ib] : 1);
    }
  g_assert_cmpint (y->ndim, ==, yn);
  for (int d = 0; d < yn; d++)
    g_assert_cmpint (y->shape[d], ==, yd[d]);
  gboolean cmp = logic || strstr ("equal greater less greater_equal less_equal", op) != NULL;
  g_assert_cmpint (y->dtype, ==, cmp ? TW_U8 : dt);
  for (int64_t f = 0; f < tw_tensor_numel (y); f++)
    {
      double va = tw_tensor_get_flat (a, bcast_index (yn, yd, an, ad, f));
      double vb = tw_tensor_get_flat (b, bcast_index (yn, yd, bn, bd, f));
      double want = ref_binary (op, va, vb, dt), got = tw_tensor_get_flat (y, f);
      if (tw_dtype_is_float (dt) && !cmp ? fabs (got - want) > 1e-6 * MAX (1, fabs (want))
                                         : got != want)
        g_error ("%s (%s): element %" G_GINT64_FORMAT " of %g and %g is %g, expected %g", op,
                 tw_dtype_name (dt), f, va, vb, got, want);
    }
}

static void
test_broadcasting_types (void)
{
  static const char *const ops[] = { "equal",      "greater",     "less",       "greater_equal",
                                     "less_equal", "logical_and", "logical_or", "logical_xor",
                                     "mod",        "mod_fmod",    "add",        "sub",
                                     "mul",        "div",         "minimum",    "maximum",
                                     "pow" };
  static const tw_dtype dts[] = { TW_F32, TW_F64, TW_I32, TW_I64, TW_U8 };
  static const struct
  {
    int an, bn;
    int64_t ad[3], bd[3];
  } sh[] = {
    { 2, 2, { 1, 7 }, { 1, 7 } },       { 2, 1, { 3, 13 }, { 13 } },
    { 3, 2, { 2, 1, 5 }, { 3, 1 } },    { 0, 2, { 0 }, { 4, 7 } },
    { 3, 3, { 1, 4, 1 }, { 3, 1, 6 } },
  };
  guint64 seed = 300;
  for (guint o = 0; o < G_N_ELEMENTS (ops); o++)
    for (guint d = 0; d < G_N_ELEMENTS (dts); d++)
      {
        if (g_str_has_prefix (ops[o], "logical_") && dts[d] != TW_U8)
          continue;
        for (guint s = 0; s < G_N_ELEMENTS (sh); s++)
          check_binary (ops[o], dts[d], sh[s].an, sh[s].ad, sh[s].bn, sh[s].bd, seed += 2);
      }

  /* The edges of integer division and remainder. */
  g_autoptr (tw_tensor) a =
    tw_tensor_from_data (TW_I32, 1, (int64_t[]){ 5 }, (int32_t[]){ INT32_MIN, 7, -7, 7, -7 });
  g_autoptr (tw_tensor) b =
    tw_tensor_from_data (TW_I32, 1, (int64_t[]){ 5 }, (int32_t[]){ -1, -2, 2, 0, 0 });
  g_autoptr (tw_tensor) q = run_op ("div", NULL, (tw_tensor *[]){ a, b }, 2);
  g_autoptr (tw_tensor) r = run_op ("mod", NULL, (tw_tensor *[]){ a, b }, 2);
  static const int32_t wq[] = { INT32_MIN, -3, -3, 0, 0 }, wr[] = { 0, -1, 1, 0, 0 };
  for (int i = 0; i < 5; i++)
    {
      g_assert_cmpint (tw_tensor_i32 (q)[i], ==, wq[i]);
      g_assert_cmpint (tw_tensor_i32 (r)[i], ==, wr[i]);
    }
  /* Signed overflow wraps as two's complement (no undefined behaviour). */
  g_autoptr (tw_tensor) big =
    tw_tensor_from_data (TW_I32, 1, (int64_t[]){ 2 }, (int32_t[]){ INT32_MAX, INT32_MIN });
  g_autoptr (tw_tensor) two = tw_tensor_from_data (TW_I32, 1, (int64_t[]){ 1 }, (int32_t[]){ 2 });
  g_autoptr (tw_tensor) sum = run_op ("add", NULL, (tw_tensor *[]){ big, two }, 2);
  g_autoptr (tw_tensor) dif = run_op ("sub", NULL, (tw_tensor *[]){ big, two }, 2);
  g_autoptr (tw_tensor) prod = run_op ("mul", NULL, (tw_tensor *[]){ big, two }, 2);
  g_assert_cmpint (tw_tensor_i32 (sum)[0], ==, INT32_MIN + 1);
  g_assert_cmpint (tw_tensor_i32 (dif)[1], ==, INT32_MAX - 1);
  g_assert_cmpint (tw_tensor_i32 (prod)[0], ==, -2);
  g_autoptr (tw_tensor) b64 =
    tw_tensor_from_data (TW_I64, 1, (int64_t[]){ 1 }, (int64_t[]){ INT64_MAX });
  g_autoptr (tw_tensor) p64 = run_op ("mul", NULL, (tw_tensor *[]){ b64, b64 }, 2);
  g_assert_cmpint (tw_tensor_i64 (p64)[0], ==, 1);
}

/* where of integer values (u8 cond from a comparison, ONNX's NLL graphs). */
static void
test_where_ints (void)
{
  static const tw_dtype dts[] = { TW_I32, TW_I64, TW_U8 };
  for (guint d = 0; d < G_N_ELEMENTS (dts); d++)
    {
      g_autoptr (tw_tensor) c = small_ints (TW_U8, 2, (int64_t[]){ 3, 1 }, 60 + d, 0, 1);
      g_autoptr (tw_tensor) a = small_ints (dts[d], 1, (int64_t[]){ 4 }, 70 + d, 0, 9);
      g_autoptr (tw_tensor) b = small_ints (dts[d], 2, (int64_t[]){ 3, 4 }, 80 + d, 0, 9);
      g_autoptr (tw_tensor) y = run_op ("where", NULL, (tw_tensor *[]){ c, a, b }, 3);
      g_assert_cmpint (y->dtype, ==, dts[d]);
      for (int64_t f = 0; f < 12; f++)
        g_assert_cmpfloat (tw_tensor_get_flat (y, f), ==,
                           tw_tensor_u8 (c)[f / 4] ? tw_tensor_get_flat (a, f % 4)
                                                   : tw_tensor_get_flat (b, f));
    }
}

static void
test_float_tests (void)
{
  static const double v[] = { 1.5, NAN, INFINITY, -INFINITY, -0.0, -3, HUGE_VAL, -NAN };
  for (int f32 = 0; f32 < 2; f32++)
    {
      g_autoptr (tw_tensor) x64 = tw_tensor_from_data (TW_F64, 1, (int64_t[]){ 8 }, v);
      g_autoptr (tw_tensor) x = tw_tensor_cast (x64, f32 ? TW_F32 : TW_F64);
      g_autoptr (tw_tensor) n = run_op ("isnan", NULL, &x, 1);
      tw_attrs *a = tw_attrs_new ();
      for (int mode = 0; mode < 3; mode++)
        {
          tw_attrs_set_bool (a, "detect_positive", mode != 1);
          tw_attrs_set_bool (a, "detect_negative", mode != 2);
          g_autoptr (tw_tensor) inf = run_op ("isinf", a, &x, 1);
          for (int i = 0; i < 8; i++)
            g_assert_cmpint (tw_tensor_u8 (inf)[i], ==,
                             isinf (v[i]) && ((v[i] > 0 && mode != 1) || (v[i] < 0 && mode != 2)));
        }
      tw_attrs_free (a);
      for (int i = 0; i < 8; i++)
        g_assert_cmpint (tw_tensor_u8 (n)[i], ==, isnan (v[i]));
      g_assert_cmpint (n->dtype, ==, TW_U8);
    }
  g_autoptr (tw_tensor) b =
    tw_tensor_from_data (TW_U8, 1, (int64_t[]){ 3 }, (uint8_t[]){ 0, 1, 7 });
  g_autoptr (tw_tensor) nb = run_op ("logical_not", NULL, &b, 1);
  g_assert_cmpint (tw_tensor_u8 (nb)[0], ==, 1);
  g_assert_cmpint (tw_tensor_u8 (nb)[1], ==, 0);
  g_assert_cmpint (tw_tensor_u8 (nb)[2], ==, 0);
}

/* ---- errors ------------------------------------------------------------------------- */

static void
test_errors (void)
{
  tw_tinfo f32, f64, u8, i64, bad;
  tw_tinfo_set (&f32, TW_F32, 2, (int64_t[]){ 3, 4 });
  tw_tinfo_set (&f64, TW_F64, 2, (int64_t[]){ 3, 4 });
  tw_tinfo_set (&u8, TW_U8, 2, (int64_t[]){ 3, 4 });
  tw_tinfo_set (&i64, TW_I64, 1, (int64_t[]){ 4 });
  tw_tinfo_set (&bad, TW_F32, 1, (int64_t[]){ 5 });
  twt_assert_infer_error ("sin", NULL, &u8, 1, "float", "u8[3, 4]");
  twt_assert_infer_error ("equal", NULL, (tw_tinfo[]){ f32, f64 }, 2, "same element type",
                          "f64[3, 4]");
  twt_assert_infer_error ("equal", NULL, (tw_tinfo[]){ f32, bad }, 2, "broadcast", NULL);
  twt_assert_infer_error ("logical_and", NULL, (tw_tinfo[]){ f32, f32 }, 2, "u8", "f32[3, 4]");
  twt_assert_infer_error ("isnan", NULL, &i64, 1, "float", "i64[4]");
  twt_assert_infer_error ("add", NULL, (tw_tinfo[]){ u8, f32 }, 2, "same element type", NULL);
  twt_assert_infer_error ("prelu_broadcast", NULL, (tw_tinfo[]){ f32, bad }, 2, "must broadcast",
                          "f32[5]");
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_float (a, "alpha", 0);
  twt_assert_infer_error ("celu", a, &f32, 1, "alpha", "nonzero");
  tw_attrs_free (a);
  a = twt_attrs_int ("num_parameters", 3);
  twt_assert_infer_error ("prelu", a, &f32, 1, "num_parameters 3", "f32[3, 4]");
  tw_attrs_free (a);
  tw_tinfo out;
  g_autoptr (GError) error = NULL;
  g_assert_true (twt_infer ("greater", NULL, (tw_tinfo[]){ f64, f64 }, 2, &out, &error));
  g_assert_cmpint (out.dtype, ==, TW_U8);
}

/* ---- export ------------------------------------------------------------------------- */

/* Every op of elementwise-more.c and logic.c in one model (u8 values through
 * the logic ops, prelu per channel and shared). */
static const char export_model[] =
  "{\n"
  "  \"format\": \"twb-model\", \"version\": 1, \"name\": \"ew\",\n"
  "  \"graph\": {\n"
  "    \"nodes\": [\n"
  "      { \"id\": \"x\", \"op\": \"input\", \"attrs\": { \"shape\": [3, 4, 5], \"dtype\": \"f32\", \"role\": \"data\" } },\n"
  "      { \"id\": \"s\", \"op\": \"sin\", \"inputs\": [\"x\"] },\n"
  "      { \"id\": \"e\", \"op\": \"elu\", \"inputs\": [\"s\"], \"attrs\": { \"alpha\": 0.5 } },\n"
  "      { \"id\": \"se\", \"op\": \"selu\", \"inputs\": [\"e\"] },\n"
  "      { \"id\": \"c\", \"op\": \"celu\", \"inputs\": [\"se\"], \"attrs\": { \"alpha\": 2.0 } },\n"
  "      { \"id\": \"sp\", \"op\": \"softplus\", \"inputs\": [\"c\"] },\n"
  "      { \"id\": \"ss\", \"op\": \"softsign\", \"inputs\": [\"sp\"] },\n"
  "      { \"id\": \"tr\", \"op\": \"thresholded_relu\", \"inputs\": [\"ss\"], \"attrs\": { \"alpha\": 0.1 } },\n"
  "      { \"id\": \"sh\", \"op\": \"shrink\", \"inputs\": [\"x\"], \"attrs\": { \"lambd\": 0.3, \"bias\": 0.1 } },\n"
  "      { \"id\": \"pr\", \"op\": \"prelu\", \"inputs\": [\"sh\"], \"attrs\": { \"num_parameters\": 3 } },\n"
  "      { \"id\": \"pr1\", \"op\": \"prelu\", \"inputs\": [\"pr\"] },\n"
  "      { \"id\": \"at\", \"op\": \"atan\", \"inputs\": [\"pr1\"] },\n"
  "      { \"id\": \"md\", \"op\": \"mod\", \"inputs\": [\"at\", \"tr\"], \"attrs\": { \"fmod\": 1 } },\n"
  "      { \"id\": \"rd\", \"op\": \"round\", \"inputs\": [\"md\"] },\n"
  "      { \"id\": \"gt\", \"op\": \"greater\", \"inputs\": [\"x\", \"at\"] },\n"
  "      { \"id\": \"nn\", \"op\": \"isnan\", \"inputs\": [\"md\"] },\n"
  "      { \"id\": \"ii\", \"op\": \"isinf\", \"inputs\": [\"md\"], \"attrs\": { \"detect_negative\": false } },\n"
  "      { \"id\": \"o\", \"op\": \"logical_or\", \"inputs\": [\"nn\", \"ii\"] },\n"
  "      { \"id\": \"an\", \"op\": \"logical_and\", \"inputs\": [\"o\", \"gt\"] },\n"
  "      { \"id\": \"no\", \"op\": \"logical_not\", \"inputs\": [\"an\"] },\n"
  "      { \"id\": \"pb\", \"op\": \"prelu_broadcast\", \"inputs\": [\"x\", \"at\"] }\n"
  "    ],\n"
  "    \"outputs\": [\"rd\", \"no\", \"pb\"]\n"
  "  }\n"
  "}\n";

/* Outputs of m (weights from params) on x, eagerly; new references. */
static void
eager_outputs (tw_model *m, tw_params *params, tw_tensor *x, tw_tensor **out, int n)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_eager) ex = tw_eager_new (m->graph, params, 0, &error);
  g_assert_no_error (error);
  tw_feed feed = { tw_graph_find_source (m->graph, "data")->id, x };
  g_assert_true (tw_eager_forward_feeds (ex, &feed, 1, FALSE, FALSE, 0, &error));
  g_assert_no_error (error);
  const char *const *refs = tw_graph_outputs (m->graph);
  for (int k = 0; k < n; k++)
    out[k] = tw_tensor_ref (tw_eager_value (ex, refs[k]));
}

/* Exported at opsets 13 and 17, imported again: the same ops and the same
 * outputs bit for bit (eager); onnx.checker (full_check) where
 * /usr/bin/python3 has onnx. */
static void
test_export (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = tw_model_load_from_data (export_model, -1, "ew.json", &error);
  g_assert_no_error (error);
  g_autoptr (tw_params) params = tw_onnx_export_params (m, NULL, &error);
  g_assert_no_error (error);
  g_autoptr (tw_tensor) x = twt_uniform (TW_F32, 4, (int64_t[]){ 2, 3, 4, 5 }, 77, -3, 3);
  tw_tensor *want[3], *got[3];
  eager_outputs (m, params, x, want, 3);
  g_autofree char *dir = g_dir_make_tmp ("twb-ew-export-XXXXXX", &error);
  g_assert_no_error (error);
  g_autofree char *path = g_build_filename (dir, "ew.onnx", NULL);
  gboolean python =
    g_file_test ("/usr/bin/python3", G_FILE_TEST_IS_EXECUTABLE) &&
    g_spawn_command_line_sync ("/usr/bin/python3 -c 'import onnx'", NULL, NULL, NULL, NULL);
  for (int opset = 13; opset <= 17; opset += 4)
    {
      tw_onnx_export_options opt = { .opset = opset, .batch = 2 };
      g_assert_true (tw_onnx_export (m, params, &opt, path, &error));
      g_assert_no_error (error);
      if (python)
        {
          g_autofree char *cmd = g_strdup_printf (
            "/usr/bin/python3 -c 'import onnx, sys; "
            "onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)' %s",
            path);
          int status = 0;
          g_autofree char *err = NULL;
          g_assert_true (g_spawn_command_line_sync (cmd, NULL, &err, &status, NULL));
          if (status != 0)
            g_error ("onnx.checker refuses the export at opset %d: %s", opset, err);
        }
      GHashTable *weights = NULL;
      g_autoptr (tw_model) back = tw_onnx_import (path, &weights, &error);
      g_assert_no_error (error);
      g_autoptr (tw_params) bp = tw_params_new ();
      eager_outputs (back, bp, x, got, 0);
      g_assert_true (tw_params_load_state_dict (bp, weights, NULL, "import", FALSE, NULL, &error));
      g_assert_no_error (error);
      g_hash_table_unref (weights);
      eager_outputs (back, bp, x, got, 3);
      for (int k = 0; k < 3; k++)
        {
          g_assert_true (tw_tensor_same_shape (got[k], want[k]));
          g_assert_cmpint (got[k]->dtype, ==, want[k]->dtype);
          g_assert_cmpint (
            memcmp (tw_tensor_data (got[k]), tw_tensor_data (want[k]), tw_tensor_nbytes (want[k])),
            ==, 0);
          tw_tensor_unref (got[k]);
        }
    }
  for (int k = 0; k < 3; k++)
    tw_tensor_unref (want[k]);
  g_unlink (path);
  g_rmdir (dir);
}

/* ---- ONNX's own cases ------------------------------------------------------------------ */

static tw_tensor *
tensor_from_json (JsonObject *o)
{
  tw_dtype dt;
  g_assert_true (tw_dtype_from_name (json_object_get_string_member (o, "dtype"), &dt));
  JsonArray *sh = json_object_get_array_member (o, "shape");
  JsonArray *d = json_object_get_array_member (o, "data");
  int64_t dims[TW_MAX_DIMS];
  int nd = (int) json_array_get_length (sh);
  for (int i = 0; i < nd; i++)
    dims[i] = json_array_get_int_element (sh, i);
  tw_tensor *t = tw_tensor_new (dt, nd, dims);
  g_assert_cmpint (tw_tensor_numel (t), ==, json_array_get_length (d));
  for (guint i = 0; i < json_array_get_length (d); i++)
    {
      JsonNode *n = json_array_get_element (d, i);
      /* The generator writes NaN and the infinities as Python's repr. */
      double v = JSON_NODE_HOLDS_VALUE (n) && json_node_get_value_type (n) == G_TYPE_STRING
                   ? g_ascii_strtod (json_node_get_string (n), NULL)
                   : json_node_get_double (n);
      tw_tensor_set_flat (t, i, v);
    }
  return t;
}

/* NaN matches NaN (NumPy's assert_allclose). */
static double
onnx_error (const tw_tensor *got, const tw_tensor *want)
{
  g_assert_cmpint (got->dtype, ==, want->dtype);
  g_assert_true (tw_tensor_same_shape (got, want));
  double err = 0, scale = 1;
  for (int64_t i = 0; i < tw_tensor_numel (want); i++)
    if (isfinite (tw_tensor_get_flat (want, i)))
      scale = MAX (scale, fabs (tw_tensor_get_flat (want, i)));
  for (int64_t i = 0; i < tw_tensor_numel (want); i++)
    {
      double g = tw_tensor_get_flat (got, i), w = tw_tensor_get_flat (want, i);
      if ((isnan (g) && isnan (w)) || g == w)
        continue;
      err = MAX (err, isfinite (w) ? fabs (g - w) / scale : INFINITY);
    }
  return err;
}

/* The case's model.onnx imported with fixed inputs and run eagerly; FALSE
 * when libonnx-testdata is not installed. */
static gboolean
run_imported (const char *suite, const char *name, GPtrArray *ins, const tw_tensor *want)
{
  g_autofree char *path =
    g_build_filename ("/usr/share/libonnx-testdata/data", suite, name, "model.onnx", NULL);
  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    return FALSE;
  g_autoptr (GError) error = NULL;
  tw_onnx_import_options opts = { .fixed_inputs = TRUE, .any_opset = TRUE };
  GHashTable *weights = NULL;
  g_autoptr (tw_model) m = tw_onnx_import_with (path, &opts, &weights, &error);
  if (m == NULL)
    g_error ("%s: %s", name, error->message);
  g_autoptr (tw_params) params = tw_params_new ();
  g_autoptr (tw_eager) ex = tw_eager_new (m->graph, params, 0, &error);
  g_assert_no_error (error);
  g_assert_true (tw_params_load_state_dict (params, weights, NULL, "import", TRUE, NULL, &error));
  g_assert_no_error (error);
  g_hash_table_unref (weights);
  tw_feed feeds[TW_MAX_INPUTS];
  int n = 0;
  for (int i = 0; i < tw_graph_n_nodes (m->graph); i++)
    {
      tw_node *node = tw_graph_node (m->graph, i);
      if (strcmp (node->op->name, "input") == 0)
        {
          g_assert_cmpuint (n, <, ins->len);
          feeds[n] = (tw_feed){ node->id, g_ptr_array_index (ins, n) };
          n++;
        }
    }
  if (!tw_eager_forward_feeds (ex, feeds, n, FALSE, FALSE, 0, &error))
    g_error ("%s: %s", name, error->message);
  const char *const *outs = tw_graph_outputs (m->graph);
  tw_tensor *got = tw_eager_value (ex, outs[0]);
  double err = onnx_error (got, want);
  if (!(err <= TOL_ONNX))
    g_error ("%s imported: error %.3g against ONNX's output", name, err);
  return TRUE;
}

static void
test_onnx_cases (void)
{
  g_autofree char *path = g_build_filename (TW_TEST_DATA_DIR, "onnx-node-ops-ew.json", NULL);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  g_assert_true (json_parser_load_from_file (parser, path, &error));
  JsonArray *cases =
    json_object_get_array_member (json_node_get_object (json_parser_get_root (parser)), "cases");
  g_assert_cmpuint (json_array_get_length (cases), >=, 120);
  guint n_reg = 0, n_imp = 0;
  for (guint i = 0; i < json_array_get_length (cases); i++)
    {
      JsonObject *c = json_array_get_object_element (cases, i);
      const char *name = json_object_get_string_member (c, "case");
      JsonArray *ji = json_object_get_array_member (c, "inputs");
      g_autoptr (GPtrArray) ins = g_ptr_array_new_with_free_func ((GDestroyNotify) tw_tensor_unref);
      for (guint k = 0; k < json_array_get_length (ji); k++)
        g_ptr_array_add (ins, tensor_from_json (json_array_get_object_element (ji, k)));
      g_autoptr (tw_tensor) want = tensor_from_json (json_object_get_object_member (c, "output"));
      JsonNode *opn = json_object_get_member (c, "op");
      if (!JSON_NODE_HOLDS_NULL (opn))
        {
          const char *op = json_node_get_string (opn);
          const tw_op_def *def = tw_op_lookup (op);
          g_assert_nonnull (def);
          tw_attrs *a = tw_attrs_from_json (json_object_get_object_member (c, "attrs"), def->attrs,
                                            name, &error);
          g_assert_no_error (error);
          g_autoptr (tw_tensor) got = run_op (op, a, (tw_tensor **) ins->pdata, (int) ins->len);
          double err = onnx_error (got, want);
          if (!(err <= TOL_ONNX))
            g_error ("%s (%s): error %.3g against ONNX's output", name, op, err);
          /* The same in float64 for the float ops. */
          if (want->dtype == TW_F32)
            {
              g_autoptr (GPtrArray) in64 =
                g_ptr_array_new_with_free_func ((GDestroyNotify) tw_tensor_unref);
              for (guint k = 0; k < ins->len; k++)
                {
                  tw_tensor *t = g_ptr_array_index (ins, k);
                  g_ptr_array_add (in64, t->dtype == TW_F32 ? tw_tensor_cast (t, TW_F64)
                                                            : tw_tensor_ref (t));
                }
              g_autoptr (tw_tensor) g64 =
                run_op (op, a, (tw_tensor **) in64->pdata, (int) in64->len);
              g_autoptr (tw_tensor) g32 = tw_tensor_cast (g64, TW_F32);
              double e64 = onnx_error (g32, want);
              if (!(e64 <= TOL_ONNX))
                g_error ("%s (%s, f64): error %.3g against ONNX's output", name, op, e64);
            }
          tw_attrs_free (a);
          n_reg++;
        }
      n_imp += run_imported (json_object_get_string_member (c, "suite"), name, ins, want);
    }
  g_test_message ("%u ONNX node cases through the registry, %u through the importer", n_reg, n_imp);
  if (n_imp == 0)
    g_test_message ("libonnx-testdata is not installed: the importer runs were skipped");
}

/* ---- eager against compiled ------------------------------------------------------------ */

/* The differentiable ops in one trainable network: linear layers between
 * prelu (per channel), elu, selu, celu, softplus, softsign, sin, atan,
 * shrink, thresholded_relu, and a prelu_broadcast with a computed slope. */
static const char train_json[] =
  "{ \"format\": \"twb-model\", \"version\": 1, \"name\": \"ew-more\","
  "  \"graph\": { \"nodes\": ["
  "    { \"id\": \"x\", \"op\": \"input\", \"attrs\": { \"shape\": [3, 8], \"role\": \"data\" } },"
  "    { \"id\": \"y\", \"op\": \"input\", \"attrs\": { \"shape\": [], \"dtype\": \"i64\", \"role\": \"label\" } },"
  "    { \"id\": \"p\", \"op\": \"prelu\", \"inputs\": [\"x\"], \"attrs\": { \"num_parameters\": 3 } },"
  "    { \"id\": \"f0\", \"op\": \"flatten\", \"inputs\": [\"p\"] },"
  "    { \"id\": \"l1\", \"op\": \"linear\", \"inputs\": [\"f0\"], \"attrs\": { \"out_features\": 16 } },"
  "    { \"id\": \"a1\", \"op\": \"elu\", \"inputs\": [\"l1\"], \"attrs\": { \"alpha\": 0.5 } },"
  "    { \"id\": \"a2\", \"op\": \"selu\", \"inputs\": [\"a1\"] },"
  "    { \"id\": \"a3\", \"op\": \"softsign\", \"inputs\": [\"a2\"] },"
  "    { \"id\": \"l2\", \"op\": \"linear\", \"inputs\": [\"a3\"], \"attrs\": { \"out_features\": 16 } },"
  "    { \"id\": \"a4\", \"op\": \"celu\", \"inputs\": [\"l2\"], \"attrs\": { \"alpha\": 1.5 } },"
  "    { \"id\": \"a5\", \"op\": \"sin\", \"inputs\": [\"a4\"] },"
  "    { \"id\": \"a6\", \"op\": \"softplus\", \"inputs\": [\"a5\"] },"
  "    { \"id\": \"a7\", \"op\": \"shrink\", \"inputs\": [\"a6\"], \"attrs\": { \"lambd\": 0.1, \"bias\": 0.05 } },"
  "    { \"id\": \"s\", \"op\": \"atan\", \"inputs\": [\"l2\"] },"
  "    { \"id\": \"a8\", \"op\": \"prelu_broadcast\", \"inputs\": [\"a7\", \"s\"] },"
  "    { \"id\": \"a9\", \"op\": \"thresholded_relu\", \"inputs\": [\"a8\"], \"attrs\": { \"alpha\": -2 } },"
  "    { \"id\": \"fc\", \"op\": \"linear\", \"inputs\": [\"a9\"], \"attrs\": { \"out_features\": 4 } },"
  "    { \"id\": \"loss\", \"op\": \"cross_entropy\", \"inputs\": [\"fc\", \"y\"] }"
  "  ], \"outputs\": [\"fc\"] },"
  "  \"training\": { \"loss\": \"loss\", \"batch_size\": 6, \"seed\": 5,"
  "                \"optimizer\": { \"type\": \"sgd\", \"lr\": 0.1 } } }";

static void
test_eager_compiled (void)
{
  twt_check_train_parity (train_json, "ew-more", 10, 3, (int64_t[]) { 6, 3, 8 }, 910, 4);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  g_test_add_func ("/engine/ops/ew-more/unary", test_unary);
  g_test_add_func ("/engine/ops/ew-more/prelu", test_prelu);
  g_test_add_func ("/engine/ops/ew-more/broadcasting-types", test_broadcasting_types);
  g_test_add_func ("/engine/ops/ew-more/isnan-isinf-not", test_float_tests);
  g_test_add_func ("/engine/ops/ew-more/where-ints", test_where_ints);
  g_test_add_func ("/engine/ops/ew-more/errors", test_errors);
  g_test_add_func ("/engine/ops/ew-more/onnx-cases", test_onnx_cases);
  g_test_add_func ("/engine/ops/ew-more/export", test_export);
  g_test_add_func ("/engine/ops/ew-more/eager-compiled", test_eager_compiled);
  return g_test_run ();
}
