/* test-ops-elementwise.c — broadcasting arithmetic, unary math, activations
 * and their grad ops against naive double references; finite-difference
 * gradients; shape errors; the symbolic batch. */
#include "opcheck.h"

#include <math.h>
#include <string.h>

/* f32 kernel vs a double reference after one rounding (and libm's float
 * functions, within a few ulp): 2^-24 ≈ 6e-8 relative per op; 1e-6 leaves
 * room for the ulps of expf/erff/tanhf. */
#define TOL_F32 1e-6
/* f64 kernel vs f64 reference: only libm ulps and operation order. */
#define TOL_F64 1e-12
/* Central differences in float64 on smooth ops: ~1e-9 seen; 1e-6 as the
 * brief states. */
#define TOL_GRAD 1e-6

typedef struct
{
  int nd;
  int64_t d[TW_MAX_DIMS];
} shp;

static gboolean
infer_op (const char *op, const tw_attrs *attrs, int n_in, const tw_tinfo *in, tw_tinfo *out,
          GError **error)
{
  const tw_op_def *def = tw_op_lookup (op);
  g_assert_nonnull (def);
  tw_attrs *ra = tw_op_resolve_attrs (def, attrs, error);
  if (ra == NULL)
    return FALSE;
  gboolean ok = def->infer (ra, in, n_in, out, error);
  tw_attrs_free (ra);
  return ok;
}

/* Value of x (broadcast to out's shape) at out's flat index i. */
static double
bcast_get (const tw_tensor *x, const tw_tensor *out, int64_t i)
{
  int64_t idx[TW_MAX_DIMS], flat = 0;
  for (int d = out->ndim - 1; d >= 0; d--)
    {
      idx[d] = i % out->shape[d];
      i /= out->shape[d];
    }
  int lead = out->ndim - x->ndim;
  for (int d = 0; d < x->ndim; d++)
    flat = flat * x->shape[d] + (x->shape[d] == 1 ? 0 : idx[d + lead]);
  return tw_tensor_get_flat (x, flat);
}

static double
ref_binary (const char *op, double a, double b)
{
  if (strcmp (op, "add") == 0)
    return a + b;
  if (strcmp (op, "sub") == 0)
    return a - b;
  if (strcmp (op, "mul") == 0)
    return a * b;
  return a / b;
}

static const shp bcast_cases[][2] = {
  { { 3, { 2, 3, 4 } }, { 2, { 3, 1 } } },
  { { 1, { 4 } }, { 3, { 2, 1, 4 } } },
  { { 0, { 0 } }, { 2, { 2, 3 } } },
  { { 2, { 3, 5 } }, { 0, { 0 } } },
  { { 0, { 0 } }, { 0, { 0 } } },
  { { 2, { 5, 7 } }, { 2, { 5, 7 } } },
  { { 3, { 1, 3, 1 } }, { 3, { 2, 1, 5 } } },
  { { 4, { 2, 3, 4, 5 } }, { 3, { 3, 1, 1 } } },
  { { 2, { 1, 6 } }, { 2, { 4, 1 } } },
  { { 2, { 300, 200 } }, { 1, { 200 } } },      /* 60000 > parallel threshold */
  { { 1, { 70001 } }, { 1, { 1 } } },           /* one long row, odd length */
};

static void
test_binary_forward (void)
{
  const char *ops[] = { "add", "sub", "mul", "div" };
  tw_kctx ctx = { .num_threads = 2 };
  for (gsize c = 0; c < G_N_ELEMENTS (bcast_cases); c++)
    for (int dt = 0; dt < 2; dt++)
      for (gsize o = 0; o < G_N_ELEMENTS (ops); o++)
        {
          tw_dtype t = dt ? TW_F64 : TW_F32;
          const shp *sa = &bcast_cases[c][0], *sb = &bcast_cases[c][1];
          g_autoptr (tw_tensor) a = twt_randn (t, sa->nd, sa->d, 10 + c);
          /* b in [0.5, 2]: keeps div well conditioned */
          g_autoptr (tw_tensor) b = twt_uniform (t, sb->nd, sb->d, 20 + c, 0.5, 2.0);
          tw_tensor *in[2] = { a, b }, *out[1];
          twt_run_guarded (ops[o], NULL, in, 2, out, &ctx);
          g_autoptr (tw_tensor) y = out[0];
          g_autoptr (tw_tensor) ref = tw_tensor_new (TW_F64, y->ndim, y->shape);
          for (int64_t i = 0; i < tw_tensor_numel (y); i++)
            tw_tensor_f64 (ref)[i]
              = ref_binary (ops[o], bcast_get (a, y, i), bcast_get (b, y, i));
          double err = twt_max_error (y, ref);
          if (err > (dt ? TOL_F64 : TOL_F32))
            g_error ("%s case %zu %s: error %g", ops[o], c, tw_dtype_name (t), err);
        }
}

static void
test_binary_grad (void)
{
  const char *ops[] = { "add", "sub", "mul", "div" };
  gboolean wrt[2] = { TRUE, TRUE };
  for (gsize c = 0; c < G_N_ELEMENTS (bcast_cases) - 2; c++)   /* the small cases */
    for (gsize o = 0; o < G_N_ELEMENTS (ops); o++)
      {
        const shp *sa = &bcast_cases[c][0], *sb = &bcast_cases[c][1];
        g_autoptr (tw_tensor) a = twt_randn (TW_F64, sa->nd, sa->d, 30 + c);
        g_autoptr (tw_tensor) b = twt_uniform (TW_F64, sb->nd, sb->d, 40 + c, 0.5, 2.0);
        tw_tensor *in[2] = { a, b };
        twt_assert_grad (ops[o], NULL, in, 2, wrt, TOL_GRAD);
      }
}

/* The gradient of a broadcast input is summed, not just taken from one slot:
 * d/db sum(a + b) for a [2,3,4], b [3,1] is 8 per element. */
static void
test_broadcast_grad_values (void)
{
  g_autoptr (tw_tensor) a = twt_randn (TW_F64, 3, (int64_t[]) { 2, 3, 4 }, 1);
  g_autoptr (tw_tensor) b = twt_randn (TW_F64, 2, (int64_t[]) { 3, 1 }, 2);
  g_autoptr (tw_tensor) g = tw_tensor_new (TW_F64, 3, (int64_t[]) { 2, 3, 4 });
  tw_tensor_fill (g, 1.0);
  tw_emit *e = tw_eager_emit_new (NULL);
  tw_val *in[2] = { tw_eager_emit_wrap (e, a), tw_eager_emit_wrap (e, b) };
  tw_val *y = tw_emit2 (e, "add", NULL, in[0], in[1]);
  tw_val *gout[1] = { tw_eager_emit_wrap (e, g) }, *gin[2] = { 0 }, *outs[1] = { y };
  gboolean needs[2] = { TRUE, TRUE };
  g_assert_true (tw_op_lookup ("add")->backward (e, NULL, in, 2, outs, gout, needs, gin));
  g_assert_null (tw_emit_take_error (e));
  tw_tensor *gb = tw_eager_emit_tensor (gin[1]);
  g_assert_cmpint (gb->ndim, ==, 2);
  for (int i = 0; i < 3; i++)
    g_assert_cmpfloat (tw_tensor_f64 (gb)[i], ==, 8.0);
  /* same shape: the gradient passes through, nothing extra emitted */
  g_assert_true (gin[0] == gout[0]);
  tw_eager_emit_free (e);
}

/* ---- unary ---------------------------------------------------------------- */

typedef struct
{
  const char *op;
  const char *attr;           /* one float attribute, or NULL */
  double attr_value;
  double lo, hi;              /* input range (uniform); lo == hi: randn */
  double (*ref) (double x, double p);
} unary_case;

static double r_neg (double x, double p) { return -x; }
static double r_scale (double x, double p) { return p * x; }
static double r_add_scalar (double x, double p) { return x + p; }
static double r_square (double x, double p) { return x * x; }
static double r_sqrt (double x, double p) { return sqrt (x); }
static double r_exp (double x, double p) { return exp (x); }
static double r_log (double x, double p) { return log (x); }
static double r_recip (double x, double p) { return 1 / x; }
static double r_relu (double x, double p) { return x > 0 ? x : 0; }
static double r_leaky (double x, double p) { return x > 0 ? x : p * x; }
static double r_gelu (double x, double p) { return 0.5 * x * (1 + erf (x / sqrt (2.0))); }
static double
r_gelu_tanh (double x, double p)
{
  return 0.5 * x * (1 + tanh (sqrt (2 / M_PI) * (x + 0.044715 * x * x * x)));
}
static double r_sigmoid (double x, double p) { return 1 / (1 + exp (-x)); }
static double r_tanh (double x, double p) { return tanh (x); }
static double r_fill (double x, double p) { return p; }
static double r_zero (double x, double p) { return 0; }

static const unary_case unary_cases[] = {
  { "neg", NULL, 0, 0, 0, r_neg },
  { "scale", "alpha", -1.7, 0, 0, r_scale },
  { "add_scalar", "value", 0.3, 0, 0, r_add_scalar },
  { "square", NULL, 0, 0, 0, r_square },
  { "sqrt", NULL, 0, 0.5, 3, r_sqrt },
  { "exp", NULL, 0, 0, 0, r_exp },
  { "log", NULL, 0, 0.5, 3, r_log },
  { "reciprocal", NULL, 0, 0.5, 3, r_recip },
  { "relu", NULL, 0, 0, 0, r_relu },
  { "leaky_relu", "negative_slope", 0.2, 0, 0, r_leaky },
  { "leaky_relu", NULL, 0.01, 0, 0, r_leaky },       /* default slope */
  { "gelu", NULL, 0, 0, 0, r_gelu },
  { "sigmoid", NULL, 0, 0, 0, r_sigmoid },
  { "tanh", NULL, 0, 0, 0, r_tanh },
  { "fill_like", "value", 2.5, 0, 0, r_fill },
  { "zeros_like", NULL, 0, 0, 0, r_zero },
};

/* Inputs kept at least 0.05 away from 0, the kink of relu / leaky_relu. */
static tw_tensor *
unary_input (const unary_case *u, tw_dtype t, int nd, const int64_t *shape, guint64 seed)
{
  tw_tensor *x = u->lo < u->hi ? twt_uniform (t, nd, shape, seed, u->lo, u->hi)
                               : twt_randn (t, nd, shape, seed);
  for (int64_t i = 0; u->lo == u->hi && i < tw_tensor_numel (x); i++)
    {
      double v = tw_tensor_get_flat (x, i);
      if (fabs (v) < 0.05)
        tw_tensor_set_flat (x, i, v < 0 ? v - 0.05 : v + 0.05);
    }
  return x;
}

static tw_attrs *
unary_attrs (const unary_case *u)
{
  tw_attrs *a = tw_attrs_new ();
  if (u->attr)
    tw_attrs_set_float (a, u->attr, u->attr_value);
  return a;
}

static const shp unary_shapes[] = {
  { 0, { 0 } }, { 1, { 1 } }, { 2, { 3, 7 } }, { 4, { 2, 3, 5, 4 } }, { 1, { 40000 } },
};

static void
test_unary_forward (void)
{
  tw_kctx ctx = { .num_threads = 2 };
  for (gsize c = 0; c < G_N_ELEMENTS (unary_cases); c++)
    for (gsize s = 0; s < G_N_ELEMENTS (unary_shapes); s++)
      for (int dt = 0; dt < 2; dt++)
        {
          const unary_case *u = &unary_cases[c];
          tw_dtype t = dt ? TW_F64 : TW_F32;
          tw_attrs *a = unary_attrs (u);
          g_autoptr (tw_tensor) x = unary_input (u, t, unary_shapes[s].nd, unary_shapes[s].d, s);
          tw_tensor *in[1] = { x }, *out[1];
          twt_run_guarded (u->op, a, in, 1, out, &ctx);
          g_autoptr (tw_tensor) y = out[0];
          g_autoptr (tw_tensor) ref = tw_tensor_new (TW_F64, x->ndim, x->shape);
          for (int64_t i = 0; i < tw_tensor_numel (x); i++)
            tw_tensor_f64 (ref)[i] = u->ref (tw_tensor_get_flat (x, i), u->attr_value);
          double err = twt_max_error (y, ref);
          if (err > (dt ? TOL_F64 : TOL_F32))
            g_error ("%s shape %zu %s: error %g", u->op, s, tw_dtype_name (t), err);
          tw_attrs_free (a);
        }
}

static void
test_gelu_tanh (void)
{
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_string (a, "approximate", "tanh");
  for (int dt = 0; dt < 2; dt++)
    {
      tw_dtype t = dt ? TW_F64 : TW_F32;
      g_autoptr (tw_tensor) x = twt_uniform (t, 1, (int64_t[]) { 257 }, 5, -6, 6);
      tw_tensor *in[1] = { x }, *out[1];
      twt_run_guarded ("gelu", a, in, 1, out, NULL);
      g_autoptr (tw_tensor) y = out[0];
      g_autoptr (tw_tensor) ref = tw_tensor_new (TW_F64, 1, x->shape);
      for (int64_t i = 0; i < 257; i++)
        tw_tensor_f64 (ref)[i] = r_gelu_tanh (tw_tensor_get_flat (x, i), 0);
      g_assert_cmpfloat (twt_max_error (y, ref), <, dt ? TOL_F64 : TOL_F32);
    }
  g_autoptr (tw_tensor) x = twt_randn (TW_F64, 2, (int64_t[]) { 4, 9 }, 6);
  tw_tensor *in[1] = { x };
  twt_assert_grad ("gelu", a, in, 1, (gboolean[]) { TRUE }, TOL_GRAD);
  tw_attrs_free (a);
}

static void
test_unary_grad (void)
{
  for (gsize c = 0; c < G_N_ELEMENTS (unary_cases); c++)
    {
      const unary_case *u = &unary_cases[c];
      tw_attrs *a = unary_attrs (u);
      g_autoptr (tw_tensor) x = unary_input (u, TW_F64, 3, (int64_t[]) { 2, 3, 5 }, 100 + c);
      tw_tensor *in[1] = { x };
      twt_assert_grad (u->op, a, in, 1, (gboolean[]) { TRUE }, TOL_GRAD);
      tw_attrs_free (a);
    }
}

/* Grad ops: forward against the derivative formulas, and their own
 * backward rules where they have one. */
static void
test_grad_ops (void)
{
  const char *ops[] = { "relu_grad", "leaky_relu_grad", "gelu_grad", "sigmoid_grad",
                        "tanh_grad" };
  for (gsize o = 0; o < G_N_ELEMENTS (ops); o++)
    for (int dt = 0; dt < 2; dt++)
      {
        tw_dtype t = dt ? TW_F64 : TW_F32;
        const unary_case relu_like = { NULL, NULL, 0, 0, 0, NULL };
        g_autoptr (tw_tensor) s = unary_input (&relu_like, t, 2, (int64_t[]) { 6, 11 }, 7);
        if (o >= 3)   /* saved outputs y of sigmoid / tanh lie in (0, 1) / (-1, 1) */
          {
            tw_tensor_unref (s);
            s = twt_uniform (t, 2, (int64_t[]) { 6, 11 }, 7, o == 3 ? 0.05 : -0.95, 0.95);
          }
        g_autoptr (tw_tensor) d = twt_randn (t, 2, (int64_t[]) { 6, 11 }, 8);
        tw_tensor *in[2] = { s, d }, *out[1];
        twt_run_guarded (ops[o], NULL, in, 2, out, NULL);
        g_autoptr (tw_tensor) y = out[0];
        g_autoptr (tw_tensor) ref = tw_tensor_new (TW_F64, 2, s->shape);
        for (int64_t i = 0; i < 66; i++)
          {
            double sv = tw_tensor_get_flat (s, i), dv = tw_tensor_get_flat (d, i), r;
            switch (o)
              {
              case 0: r = sv > 0 ? dv : 0; break;
              case 1: r = sv > 0 ? dv : 0.01 * dv; break;
              case 2:
                r = dv * (0.5 * (1 + erf (sv / sqrt (2.0)))
                          + sv * exp (-0.5 * sv * sv) / sqrt (2 * M_PI));
                break;
              case 3: r = dv * sv * (1 - sv); break;
              default: r = dv * (1 - sv * sv); break;
              }
            tw_tensor_f64 (ref)[i] = r;
          }
        g_assert_cmpfloat (twt_max_error (y, ref), <, dt ? TOL_F64 : TOL_F32);
        if (o != 2)
          twt_assert_grad (ops[o], NULL, in, 2, ((gboolean[]) { TRUE, TRUE }), TOL_GRAD);
      }
}

/* The f32 kernels use their own exp / tanh / erf: check the edges. */
static void
test_f32_math_edges (void)
{
  const float xs[] = { 100.f, -100.f, NAN, 88.f, -87.f, 1e-5f, -30.f, 30.f, 0.f };
  g_autoptr (tw_tensor) x = tw_tensor_from_data (TW_F32, 1, (int64_t[]) { 9 }, xs);
  tw_tensor *in[1] = { x }, *out[1];
  twt_run_guarded ("exp", NULL, in, 1, out, NULL);
  const float *e = tw_tensor_f32 (out[0]);
  g_assert_true (isinf (e[0]) && e[0] > 0);
  g_assert_cmpfloat (e[1], ==, 0);
  g_assert_true (isnan (e[2]));
  g_assert_cmpfloat (fabs (e[3] / exp (88.0) - 1), <, 1e-6);
  g_assert_cmpfloat (fabs (e[4] / exp (-87.0) - 1), <, 1e-6);
  tw_tensor_unref (out[0]);
  const char *ops[] = { "tanh", "sigmoid", "gelu" };
  double (*refs[]) (double, double) = { r_tanh, r_sigmoid, r_gelu };
  for (int o = 0; o < 3; o++)
    {
      twt_run_guarded (ops[o], NULL, in, 1, out, NULL);
      for (int i = 0; i < 9; i++)
        {
          double r = refs[o] (xs[i], 0), v = tw_tensor_f32 (out[0])[i];
          if (isnan (r))
            g_assert_true (isnan (v));
          else   /* absolute error of the f32 approximations: ~1.5e-7 */
            g_assert_cmpfloat (fabs (v - r), <=, 2e-7 * MAX (1, fabs (r)));
        }
      tw_tensor_unref (out[0]);
    }
}

/* ---- shapes, errors, threads ------------------------------------------------- */

static void
test_infer (void)
{
  g_autoptr (GError) error = NULL;
  tw_tinfo in[2], out[1];
  tw_tinfo_set (&in[0], TW_F32, 2, (int64_t[]) { TW_DIM_N, 10 });
  tw_tinfo_set (&in[1], TW_F32, 1, (int64_t[]) { 10 });
  g_assert_true (infer_op ("add", NULL, 2, in, out, &error));
  g_assert_cmpint (out[0].ndim, ==, 2);
  g_assert_cmpint (out[0].dims[0], ==, TW_DIM_N);
  g_assert_cmpint (out[0].dims[1], ==, 10);

  tw_tinfo_set (&in[1], TW_F32, 2, (int64_t[]) { TW_DIM_N, 1 });
  g_assert_true (infer_op ("mul", NULL, 2, in, out, &error));
  g_assert_cmpint (out[0].dims[0], ==, TW_DIM_N);
  g_assert_true (infer_op ("relu", NULL, 1, in, out, &error));
  g_assert_cmpint (out[0].dims[0], ==, TW_DIM_N);

  tw_tinfo_set (&in[1], TW_F32, 1, (int64_t[]) { 4 });
  g_assert_false (infer_op ("sub", NULL, 2, in, out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE);
  g_assert_nonnull (strstr (error->message, "[N, 10]"));
  g_assert_nonnull (strstr (error->message, "[4]"));
  g_clear_error (&error);

  tw_tinfo_set (&in[1], TW_F64, 1, (int64_t[]) { 10 });
  g_assert_false (infer_op ("div", NULL, 2, in, out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_DTYPE);
  g_assert_nonnull (strstr (error->message, "f64[10]"));
  g_clear_error (&error);

  tw_tinfo_set (&in[0], TW_I64, 1, (int64_t[]) { 3 });
  g_assert_false (infer_op ("sigmoid", NULL, 1, in, out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_DTYPE);
  g_assert_nonnull (strstr (error->message, "i64[3]"));
  g_clear_error (&error);

  tw_tinfo_set (&in[0], TW_F32, 1, (int64_t[]) { 3 });
  tw_tinfo_set (&in[1], TW_F32, 1, (int64_t[]) { 4 });
  g_assert_false (infer_op ("relu_grad", NULL, 2, in, out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE);
  g_clear_error (&error);

  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_string (a, "approximate", "erf");
  g_assert_false (infer_op ("gelu", a, 1, in, out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR);
  tw_attrs_free (a);
}

/* Results do not depend on the thread count. */
static void
test_threads (void)
{
  g_autoptr (tw_tensor) a = twt_randn (TW_F32, 2, (int64_t[]) { 500, 300 }, 1);
  g_autoptr (tw_tensor) b = twt_randn (TW_F32, 2, (int64_t[]) { 500, 1 }, 2);
  const char *ops[] = { "mul", "gelu" };
  for (gsize o = 0; o < G_N_ELEMENTS (ops); o++)
    {
      tw_tensor *in[2] = { a, b }, *y1[1], *y4[1];
      int n_in = o == 0 ? 2 : 1;
      twt_run_guarded (ops[o], NULL, in, n_in, y1, &(tw_kctx) { .num_threads = 1 });
      twt_run_guarded (ops[o], NULL, in, n_in, y4, &(tw_kctx) { .num_threads = 4 });
      g_assert_cmpmem (tw_tensor_data (y1[0]), tw_tensor_nbytes (y1[0]),
                       tw_tensor_data (y4[0]), tw_tensor_nbytes (y4[0]));
      tw_tensor_unref (y1[0]);
      tw_tensor_unref (y4[0]);
    }
}

/* Every op of the family is registered with a doc, category and cost. */
static void
test_registry (void)
{
  const char *names[] = { "add", "sub", "mul", "div", "neg", "scale", "add_scalar", "square",
                          "sqrt", "exp", "log", "reciprocal", "relu", "leaky_relu", "gelu",
                          "sigmoid", "tanh", "fill_like", "zeros_like", "relu_grad",
                          "leaky_relu_grad", "gelu_grad", "sigmoid_grad", "tanh_grad" };
  for (gsize i = 0; i < G_N_ELEMENTS (names); i++)
    {
      const tw_op_def *d = tw_op_lookup (names[i]);
      g_assert_nonnull (d);
      g_assert_nonnull (d->doc);
      g_assert_nonnull (d->category);
      g_assert_nonnull (d->cost);
      g_assert_true (d->flags & TW_OP_ELEMENTWISE);
      tw_tinfo in[2], out[1];
      tw_cost cost;
      tw_tinfo_set (&in[0], TW_F32, 2, (int64_t[]) { 8, 4 });
      in[1] = in[0];
      g_assert_true (d->infer (NULL, in, d->min_inputs, out, NULL));
      d->cost (NULL, in, d->min_inputs, out, 1, &cost);
      g_assert_cmpfloat (cost.bytes_written, ==, 32 * 4);
    }
  g_assert_true (tw_op_lookup ("zeros_like")->flags & TW_OP_INTERNAL);
  g_assert_false (tw_op_lookup ("relu")->flags & TW_OP_INTERNAL);
  g_assert_cmpstr (tw_op_lookup ("relu")->category, ==, "Activation");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  g_test_add_func ("/engine/ops/binary/forward", test_binary_forward);
  g_test_add_func ("/engine/ops/binary/grad", test_binary_grad);
  g_test_add_func ("/engine/ops/binary/broadcast-grad-values", test_broadcast_grad_values);
  g_test_add_func ("/engine/ops/unary/forward", test_unary_forward);
  g_test_add_func ("/engine/ops/unary/grad", test_unary_grad);
  g_test_add_func ("/engine/ops/gelu/tanh", test_gelu_tanh);
  g_test_add_func ("/engine/ops/unary/f32-math-edges", test_f32_math_edges);
  g_test_add_func ("/engine/ops/activation-grad-ops", test_grad_ops);
  g_test_add_func ("/engine/ops/elementwise/infer", test_infer);
  g_test_add_func ("/engine/ops/elementwise/threads", test_threads);
  g_test_add_func ("/engine/ops/elementwise/registry", test_registry);
  return g_test_run ();
}
