/* test-ops-loss.c — cross_entropy, mse_loss, bce_with_logits: values against
 * naive double-precision references (guard bytes around the scalar), float64
 * finite-difference gradients for every float input, label range errors,
 * shape inference with the symbolic batch and thread-count independence. */
#include "opcheck.h"

#include <math.h>
#include <string.h>

/* f32 losses against a double reference of the same f32 inputs: the kernels
 * sum in double, so the error is the f32 rounding of exp/log per term
 * (~1e-7 relative) plus the final cast; measured <= 2.3e-8.  1e-5 is loose
 * enough for any libm and still catches a wrong term. */
#define TOL_F32 1e-5
/* f64 kernels against the same formulas summed in another order. */
#define TOL_F64 1e-12
/* Central differences in float64 (eps = 1e-6, opcheck.c): truncation and
 * rounding both near 1e-10 for these smooth functions; measured worst
 * 5.7e-9 (mse_loss, sum). */
#define TOL_GRAD 1e-6

static const char *const reductions[2] = { "mean", "sum" };

static void
check_grad (const char *op, const tw_attrs *a, tw_tensor *const *in, int n_in,
            const gboolean *wrt)
{
  double err = twt_grad_check (op, a, in, n_in, wrt, 0, NULL);
  g_test_message ("%s: gradient error %.3g (tolerance %.3g)", op, err, TOL_GRAD);
  if (!(err < TOL_GRAD))
    g_error ("%s: gradient error %.3g exceeds %.3g", op, err, TOL_GRAD);
}

/* The scalar a loss returns, through a guarded run. */
static double
run_loss (const char *op, const tw_attrs *a, tw_tensor *const *in, int n_in)
{
  tw_tensor *out[TW_MAX_OUTPUTS] = { 0 };
  twt_run_guarded (op, a, in, n_in, out, NULL);
  g_assert_cmpint (out[0]->ndim, ==, 0);
  g_assert_cmpint (out[0]->dtype, ==, in[0]->dtype);
  double v = tw_tensor_get_flat (out[0], 0);
  tw_tensor_unref (out[0]);
  return v;
}

static void
check_value (const char *what, double got, double want, double tol)
{
  double err = fabs (got - want) / MAX (1.0, fabs (want));
  g_test_message ("%s: %.10g vs %.10g, error %.3g (tolerance %.3g)", what, got, want, err, tol);
  if (!(err < tol))
    g_error ("%s: %.10g vs reference %.10g, error %.3g exceeds %.3g", what, got, want, err, tol);
}

static tw_tinfo
ti (tw_dtype dt, int ndim, ...)
{
  tw_tinfo t;
  int64_t d[TW_MAX_DIMS];
  va_list ap;
  va_start (ap, ndim);
  for (int i = 0; i < ndim; i++)
    d[i] = va_arg (ap, int64_t);
  va_end (ap);
  tw_tinfo_set (&t, dt, ndim, d);
  return t;
}

static void
assert_infer_scalar (const char *op, const tw_attrs *a, const tw_tinfo *in, int n_in,
                     tw_dtype dt)
{
  g_autoptr (GError) error = NULL;
  tw_tinfo out;
  g_assert_true (twt_infer (op, a, in, n_in, &out, &error));
  g_assert_no_error (error);
  g_assert_cmpint (out.ndim, ==, 0);
  g_assert_cmpint (out.dtype, ==, dt);
}

/* ---- cross_entropy -------------------------------------------------------------- */

/* PyTorch's definition, in double: with log p = log_softmax (x),
 * loss_i = -(1 - eps) log p[i, y_i] - eps / C sum_c log p[i, c]. */
static double
ref_cross_entropy (const tw_tensor *x, const tw_tensor *y, double eps, gboolean mean)
{
  int64_t N = x->shape[0], C = x->shape[1];
  double total = 0;
  for (int64_t i = 0; i < N; i++)
    {
      double m = -INFINITY, s = 0, sum_logp = 0;
      for (int64_t c = 0; c < C; c++)
        m = fmax (m, tw_tensor_get_flat (x, i * C + c));
      for (int64_t c = 0; c < C; c++)
        s += exp (tw_tensor_get_flat (x, i * C + c) - m);
      for (int64_t c = 0; c < C; c++)
        sum_logp += tw_tensor_get_flat (x, i * C + c) - m - log (s);
      double logp_y = tw_tensor_get_flat (x, i * C + tw_tensor_i64 (y)[i]) - m - log (s);
      total += -(1 - eps) * logp_y - eps / (double) C * sum_logp;
    }
  return mean ? total / (double) N : total;
}

static tw_attrs *
ce_attrs (double eps, const char *reduction)
{
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_float (a, "label_smoothing", eps);
  tw_attrs_set_string (a, "reduction", reduction);
  return a;
}

static void
test_ce_forward (void)
{
  static const int64_t shapes[][2] = { { 8, 10 }, { 1, 3 }, { 64, 10 }, { 5, 1 } };
  static const double eps[] = { 0, 0.1, 1 };
  for (guint s = 0; s < G_N_ELEMENTS (shapes); s++)
    for (int dt = 0; dt < 2; dt++)
      for (guint e = 0; e < G_N_ELEMENTS (eps); e++)
        for (int r = 0; r < 2; r++)
          {
            tw_dtype dtype = dt ? TW_F64 : TW_F32;
            g_autoptr (tw_tensor) x = twt_randn (dtype, 2, shapes[s], 10 + s);
            g_autoptr (tw_tensor) y = twt_randint (1, shapes[s], 20 + s, shapes[s][1]);
            /* Large logits in the first row: a naive exp overflows. */
            for (int64_t c = 0; c < shapes[s][1]; c++)
              tw_tensor_set_flat (x, c, 500 + 3 * tw_tensor_get_flat (x, c));
            tw_attrs *a = ce_attrs (eps[e], reductions[r]);
            tw_tensor *in[2] = { x, y };
            double got = run_loss ("cross_entropy", a, in, 2);
            double want = ref_cross_entropy (x, y, eps[e], r == 0);
            g_autofree char *what = g_strdup_printf ("cross_entropy [%" G_GINT64_FORMAT
                                                     ", %" G_GINT64_FORMAT "] %s eps %g %s",
                                                     shapes[s][0], shapes[s][1],
                                                     tw_dtype_name (dtype), eps[e], reductions[r]);
            check_value (what, got, want, dt ? TOL_F64 : TOL_F32);
            tw_attrs_free (a);
          }
}

static void
test_ce_grad (void)
{
  static const double eps[] = { 0, 0.2 };
  for (guint e = 0; e < G_N_ELEMENTS (eps); e++)
    for (int r = 0; r < 2; r++)
      {
        g_autoptr (tw_tensor) x = twt_randn (TW_F64, 2, (int64_t[]) { 6, 5 }, 30 + e);
        g_autoptr (tw_tensor) y = twt_randint (1, (int64_t[]) { 6 }, 31, 5);
        tw_attrs *a = ce_attrs (eps[e], reductions[r]);
        tw_tensor *in[2] = { x, y };
        gboolean wrt[2] = { TRUE, FALSE };
        check_grad ("cross_entropy", a, in, 2, wrt);
        tw_attrs_free (a);
      }
}

static void
test_ce_labels (void)
{
  const tw_op_def *def = tw_op_lookup ("cross_entropy");
  const tw_op_def *gdef = tw_op_lookup ("cross_entropy_grad");
  g_autoptr (tw_tensor) x = twt_randn (TW_F32, 2, (int64_t[]) { 4, 10 }, 40);
  g_autoptr (tw_tensor) y = twt_randint (1, (int64_t[]) { 4 }, 41, 10);
  g_autoptr (tw_tensor) dl = tw_tensor_scalar_f32 (1.0f);
  tw_kctx ctx = { .num_threads = 1 };
  int64_t bad[2] = { 10, -3 };
  for (int k = 0; k < 2; k++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (GError) gerror = NULL;
      tw_tensor *in[3] = { x, y, dl }, *out = NULL;
      tw_tensor_i64 (y)[2] = bad[k];
      g_assert_false (tw_op_run (def, &ctx, NULL, in, 2, &out, &error));
      g_assert_null (out);
      g_assert_nonnull (error);
      g_test_message ("%s", error->message);
      g_autofree char *want = g_strdup_printf ("label %" G_GINT64_FORMAT " of sample 2 is "
                                               "outside [0, 10)",
                                               bad[k]);
      g_assert_nonnull (strstr (error->message, want));
      g_assert_false (tw_op_run (gdef, &ctx, NULL, in, 3, &out, &gerror));
      g_assert_nonnull (gerror);
      g_assert_nonnull (strstr (gerror->message, want));
    }
}

static void
test_ce_infer (void)
{
  tw_tinfo ok[2] = { ti (TW_F32, 2, TW_DIM_N, (int64_t) 10), ti (TW_I64, 1, TW_DIM_N) };
  assert_infer_scalar ("cross_entropy", NULL, ok, 2, TW_F32);
  tw_tinfo ok64[2] = { ti (TW_F64, 2, (int64_t) 64, (int64_t) 10), ti (TW_I64, 1, (int64_t) 64) };
  assert_infer_scalar ("cross_entropy", NULL, ok64, 2, TW_F64);

  tw_tinfo bad_labels[2] = { ok[0], ti (TW_F32, 2, TW_DIM_N, (int64_t) 10) };
  twt_assert_infer_error ("cross_entropy", NULL, bad_labels, 2, "labels of shape [N] (i64)",
                      "got f32[N, 10]");
  tw_tinfo bad_n[2] = { ok64[0], ti (TW_I64, 1, (int64_t) 32) };
  twt_assert_infer_error ("cross_entropy", NULL, bad_n, 2, "labels of shape [64] (i64)",
                      "got i64[32]");
  tw_tinfo bad_logits[2] = { ti (TW_F32, 1, (int64_t) 10), ok[1] };
  twt_assert_infer_error ("cross_entropy", NULL, bad_logits, 2, "logits of shape [N, C]",
                      "got f32[10]");
  tw_tinfo int_logits[2] = { ti (TW_I64, 2, TW_DIM_N, (int64_t) 10), ok[1] };
  twt_assert_infer_error ("cross_entropy", NULL, int_logits, 2, "logits of shape [N, C]",
                      "got i64[N, 10]");
  g_autoptr (GError) error = NULL;
  tw_attrs *a = ce_attrs (1.5, "mean");
  tw_tinfo out;
  g_assert_false (twt_infer ("cross_entropy", a, ok, 2, &out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR);
  tw_attrs_free (a);

  const tw_op_def *def = tw_op_lookup ("cross_entropy");
  g_assert_true (def->flags & TW_OP_LOSS);
  g_assert_cmpstr (def->category, ==, "Loss");
}

/* ---- mse_loss, bce_with_logits ------------------------------------------------ */

static double
ref_pair (const char *op, const tw_tensor *x, const tw_tensor *t, double pw, gboolean mean)
{
  int64_t n = tw_tensor_numel (x);
  double total = 0;
  for (int64_t i = 0; i < n; i++)
    {
      double xv = tw_tensor_get_flat (x, i), tv = tw_tensor_get_flat (t, i);
      if (strcmp (op, "mse_loss") == 0)
        total += (xv - tv) * (xv - tv);
      else
        {
          /* -[pw t log sigmoid (x) + (1 - t) log (1 - sigmoid (x))], with
           * log sigmoid (x) = -log1p (exp (-x)) written stably. */
          double log_sig = -(fmax (-xv, 0) + log1p (exp (-fabs (xv))));
          double log_1m_sig = -(fmax (xv, 0) + log1p (exp (-fabs (xv))));
          total += -(pw * tv * log_sig + (1 - tv) * log_1m_sig);
        }
    }
  return mean ? total / (double) n : total;
}

static tw_attrs *
pair_attrs (const char *reduction, double pw)
{
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_string (a, "reduction", reduction);
  if (pw != 1)
    tw_attrs_set_float (a, "pos_weight", pw);
  return a;
}

static void
test_pair_forward (void)
{
  static const char *const ops[2] = { "mse_loss", "bce_with_logits" };
  static const int64_t shape[3] = { 3, 4, 5 };
  static const double pws[2] = { 1, 2.5 };
  for (int op = 0; op < 2; op++)
    for (int dt = 0; dt < 2; dt++)
      for (int r = 0; r < 2; r++)
        for (int w = 0; w < (op == 1 ? 2 : 1); w++)
          {
            tw_dtype dtype = dt ? TW_F64 : TW_F32;
            g_autoptr (tw_tensor) x = twt_randn (dtype, 3, shape, 50 + op);
            g_autoptr (tw_tensor) t = twt_uniform (dtype, 3, shape, 51, 0, 1);
            if (op == 1)
              {
                /* Saturated logits: a naive log (sigmoid) gives -inf. */
                tw_tensor_set_flat (x, 0, 100);
                tw_tensor_set_flat (x, 1, -100);
              }
            tw_attrs *a = pair_attrs (reductions[r], pws[w]);
            tw_tensor *in[2] = { x, t };
            double got = run_loss (ops[op], a, in, 2);
            double want = ref_pair (ops[op], x, t, pws[w], r == 0);
            g_autofree char *what = g_strdup_printf ("%s %s %s pos_weight %g", ops[op],
                                                     tw_dtype_name (dtype), reductions[r],
                                                     pws[w]);
            check_value (what, got, want, dt ? TOL_F64 : TOL_F32);
            tw_attrs_free (a);
          }
}

static void
test_pair_grad (void)
{
  static const char *const ops[2] = { "mse_loss", "bce_with_logits" };
  static const double pws[2] = { 1, 2.5 };
  for (int op = 0; op < 2; op++)
    for (int r = 0; r < 2; r++)
      for (int w = 0; w < (op == 1 ? 2 : 1); w++)
        {
          g_autoptr (tw_tensor) x = twt_randn (TW_F64, 2, (int64_t[]) { 4, 6 }, 60 + op);
          g_autoptr (tw_tensor) t = twt_uniform (TW_F64, 2, (int64_t[]) { 4, 6 }, 61, 0, 1);
          tw_attrs *a = pair_attrs (reductions[r], pws[w]);
          tw_tensor *in[2] = { x, t };
          gboolean wrt[2] = { TRUE, TRUE };
          check_grad (ops[op], a, in, 2, wrt);
          gboolean wrt_t[2] = { FALSE, TRUE };
          check_grad (ops[op], a, in, 2, wrt_t);
          tw_attrs_free (a);
        }
}

static void
test_pair_infer (void)
{
  static const char *const ops[2] = { "mse_loss", "bce_with_logits" };
  for (int op = 0; op < 2; op++)
    {
      tw_tinfo ok[2] = { ti (TW_F32, 2, TW_DIM_N, (int64_t) 1), ti (TW_F32, 2, TW_DIM_N,
                                                                    (int64_t) 1) };
      assert_infer_scalar (ops[op], NULL, ok, 2, TW_F32);
      tw_tinfo ok2[2] = { ok[0], ti (TW_F32, 2, (int64_t) 64, (int64_t) 1) };
      assert_infer_scalar (ops[op], NULL, ok2, 2, TW_F32);
      tw_tinfo bad[2] = { ok[0], ti (TW_F32, 2, TW_DIM_N, (int64_t) 5) };
      twt_assert_infer_error (ops[op], NULL, bad, 2, "target of the same shape and type",
                          "f32[N, 1], got f32[N, 5]");
      tw_tinfo bad_dt[2] = { ok[0], ti (TW_I64, 2, TW_DIM_N, (int64_t) 1) };
      twt_assert_infer_error (ops[op], NULL, bad_dt, 2, "same shape and type", "got i64[N, 1]");
      tw_tinfo bad_x[2] = { ti (TW_I64, 1, (int64_t) 3), ti (TW_I64, 1, (int64_t) 3) };
      twt_assert_infer_error (ops[op], NULL, bad_x, 2, "f32 or f64", "got i64[3]");
      g_assert_true (tw_op_lookup (ops[op])->flags & TW_OP_LOSS);
    }
}

/* Losses reduce in fixed chunks: 1 and 4 threads give the same bits. */
static void
test_threads (void)
{
  tw_kctx c1 = { .num_threads = 1 }, c4 = { .num_threads = 4 };
  g_autoptr (tw_tensor) x = twt_randn (TW_F32, 2, (int64_t[]) { 100, 1000 }, 70);
  g_autoptr (tw_tensor) t = twt_uniform (TW_F32, 2, (int64_t[]) { 100, 1000 }, 71, 0, 1);
  g_autoptr (tw_tensor) y = twt_randint (1, (int64_t[]) { 100 }, 72, 1000);
  static const char *const ops[3] = { "cross_entropy", "mse_loss", "bce_with_logits" };
  for (int op = 0; op < 3; op++)
    {
      const tw_op_def *def = tw_op_lookup (ops[op]);
      tw_tensor *in[2] = { x, op == 0 ? y : t }, *o1 = NULL, *o4 = NULL;
      g_assert_true (tw_op_run (def, &c1, NULL, in, 2, &o1, NULL));
      g_assert_true (tw_op_run (def, &c4, NULL, in, 2, &o4, NULL));
      g_assert_cmpmem (tw_tensor_data (o1), 4, tw_tensor_data (o4), 4);
      tw_tensor_unref (o1);
      tw_tensor_unref (o4);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  g_test_add_func ("/engine/ops/cross_entropy/forward", test_ce_forward);
  g_test_add_func ("/engine/ops/cross_entropy/grad", test_ce_grad);
  g_test_add_func ("/engine/ops/cross_entropy/labels", test_ce_labels);
  g_test_add_func ("/engine/ops/cross_entropy/infer", test_ce_infer);
  g_test_add_func ("/engine/ops/mse_bce/forward", test_pair_forward);
  g_test_add_func ("/engine/ops/mse_bce/grad", test_pair_grad);
  g_test_add_func ("/engine/ops/mse_bce/infer", test_pair_infer);
  g_test_add_func ("/engine/ops/loss/threads", test_threads);
  return g_test_run ();
}
