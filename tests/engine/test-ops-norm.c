/* test-ops-norm.c — batch_norm and layer_norm against naive double-precision
 * references, running statistics, guard bytes, float64 finite-difference
 * gradients, shape errors. */
#include "opcheck.h"

#include <math.h>
#include <string.h>

/* f32 kernels against float64 references: normalisation of a few hundred
 * values rounds to a few f32 ulps of the O(1) outputs (~1e-6); 1e-5 leaves
 * a margin. */
#define TOL_F32 1e-5
/* f64 kernels: double rounding only. */
#define TOL_F64 1e-12
/* Central differences in float64 (opcheck.h: eps 1e-6; errors ~1e-9 for
 * these smooth ops). */
#define TOL_GRAD 1e-6

static const tw_kctx train_ctx = { .training = TRUE, .seed = 1, .num_threads = 1 };
static const tw_kctx eval_ctx = { .training = FALSE, .seed = 1, .num_threads = 1 };

static tw_tensor *
run1 (const char *op, const tw_attrs *a, tw_tensor *const *in, int n_in, const tw_kctx *ctx)
{
  tw_tensor *out[TW_MAX_OUTPUTS] = { 0 };
  twt_run_guarded (op, a, in, n_in, out, ctx);
  for (int k = 1; k < TW_MAX_OUTPUTS; k++)
    g_clear_pointer (&out[k], tw_tensor_unref);
  return out[0];
}

/* Reference batch norm of x [N, C, S...] in double.  mean / var (biased)
 * come from the batch when rm is NULL. */
static tw_tensor *
ref_bn (tw_tensor *x, tw_tensor *w, tw_tensor *b, tw_tensor *rm, tw_tensor *rv, double eps,
        double *bmean, double *bvar)
{
  int64_t N = x->shape[0], C = x->shape[1], S = tw_tensor_numel (x) / (N * C);
  tw_tensor *y = tw_tensor_new (TW_F64, x->ndim, x->shape);
  for (int64_t c = 0; c < C; c++)
    {
      double s = 0, q = 0, m, v;
      for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < S; i++)
          s += tw_tensor_get_flat (x, (n * C + c) * S + i);
      m = s / (N * S);
      for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < S; i++)
          q += pow (tw_tensor_get_flat (x, (n * C + c) * S + i) - m, 2);
      v = q / (N * S);
      if (bmean)
        bmean[c] = m, bvar[c] = v;
      if (rm)
        m = tw_tensor_get_flat (rm, c), v = tw_tensor_get_flat (rv, c);
      double wc = w ? tw_tensor_get_flat (w, c) : 1, bc = b ? tw_tensor_get_flat (b, c) : 0;
      for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < S; i++)
          {
            int64_t k = (n * C + c) * S + i;
            tw_tensor_set_flat (y, k, (tw_tensor_get_flat (x, k) - m) / sqrt (v + eps) * wc + bc);
          }
    }
  return y;
}

static void
assert_close (const char *what, tw_tensor *y, tw_tensor *r, double tol)
{
  double e = twt_max_error (y, r);
  g_test_message ("%s: error %.3g", what, e);
  if (!(e < tol))
    g_error ("%s: error %.3g exceeds %.3g", what, e, tol);
}

static void
test_bn_forward (void)
{
  static const int64_t shapes[][4] = { { 4, 3, 5, 6 }, { 7, 5, 0, 0 }, { 1, 2, 3, 3 } };
  static const int ranks[] = { 4, 2, 4 };
  for (guint s = 0; s < G_N_ELEMENTS (shapes); s++)
    for (int k = 0; k < 2; k++)
      {
        tw_dtype dt = k == 0 ? TW_F32 : TW_F64;
        int64_t C = shapes[s][1];
        /* Offset and scale so the two-pass statistics matter. */
        g_autoptr (tw_tensor) x = twt_uniform (dt, ranks[s], shapes[s], 10 + s, 3.0, 5.0);
        g_autoptr (tw_tensor) w = twt_randn (dt, 1, &C, 20 + s);
        g_autoptr (tw_tensor) b = twt_randn (dt, 1, &C, 30 + s);
        g_autoptr (tw_tensor) rm = twt_randn (dt, 1, &C, 40 + s);
        g_autoptr (tw_tensor) rv = twt_uniform (dt, 1, &C, 50 + s, 0.5, 2.0);
        g_autoptr (tw_tensor) rm0 = tw_tensor_clone (rm);
        g_autoptr (tw_tensor) rv0 = tw_tensor_clone (rv);
        tw_tensor *in[5] = { x, w, b, rm, rv };
        double tol = dt == TW_F32 ? TOL_F32 : TOL_F64;

        /* Training: batch statistics, then running stats updated in place. */
        double bm[8], bv[8];
        g_autoptr (tw_tensor) y = run1 ("batch_norm", NULL, in, 5, &train_ctx);
        g_autoptr (tw_tensor) r = ref_bn (x, w, b, NULL, NULL, 1e-5, bm, bv);
        assert_close ("batch_norm train", y, r, tol);
        int64_t M = tw_tensor_numel (x) / C;
        for (int64_t c = 0; c < C; c++)
          {
            /* PyTorch: momentum 0.1, running_var from the unbiased variance. */
            double em = 0.9 * tw_tensor_get_flat (rm0, c) + 0.1 * bm[c];
            double ev = 0.9 * tw_tensor_get_flat (rv0, c) + 0.1 * bv[c] * M / (M - 1);
            g_assert_cmpfloat (fabs (tw_tensor_get_flat (rm, c) - em), <, tol * 10);
            g_assert_cmpfloat (fabs (tw_tensor_get_flat (rv, c) - ev), <, tol * 10);
          }

        /* Eval: the (updated) running statistics, buffers untouched. */
        g_autoptr (tw_tensor) rm1 = tw_tensor_clone (rm);
        g_autoptr (tw_tensor) ye = run1 ("batch_norm", NULL, in, 5, &eval_ctx);
        g_autoptr (tw_tensor) re = ref_bn (x, w, b, rm, rv, 1e-5, NULL, NULL);
        assert_close ("batch_norm eval", ye, re, tol);
        g_assert_cmpfloat (twt_max_error (rm, rm1), ==, 0);

        /* affine = false, track_running_stats = false: batch statistics in eval too. */
        tw_attrs *a = tw_attrs_new ();
        tw_attrs_set_bool (a, "affine", FALSE);
        tw_attrs_set_bool (a, "track_running_stats", FALSE);
        tw_attrs_set_float (a, "eps", 1e-3);
        g_autoptr (tw_tensor) yp = run1 ("batch_norm", a, in, 1, &eval_ctx);
        g_autoptr (tw_tensor) rp = ref_bn (x, NULL, NULL, NULL, NULL, 1e-3, NULL, NULL);
        assert_close ("batch_norm plain", yp, rp, tol);
        tw_attrs_free (a);
      }
}

/* Running statistics by hand: one channel holding 1, 2, 3, 4. */
static void
test_bn_running (void)
{
  g_autoptr (tw_tensor) x = tw_tensor_from_data (TW_F32, 2, (int64_t[]) { 4, 1 },
                                                 (float[]) { 1, 2, 3, 4 });
  g_autoptr (tw_tensor) w = tw_tensor_from_data (TW_F32, 1, (int64_t[]) { 1 }, (float[]) { 2 });
  g_autoptr (tw_tensor) b = tw_tensor_from_data (TW_F32, 1, (int64_t[]) { 1 }, (float[]) { 1 });
  g_autoptr (tw_tensor) rm = tw_tensor_from_data (TW_F32, 1, (int64_t[]) { 1 }, (float[]) { 0 });
  g_autoptr (tw_tensor) rv = tw_tensor_from_data (TW_F32, 1, (int64_t[]) { 1 }, (float[]) { 1 });
  tw_tensor *in[5] = { x, w, b, rm, rv };
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_float (a, "momentum", 0.25);
  tw_attrs_set_float (a, "eps", 0.0);
  g_autoptr (tw_tensor) y = run1 ("batch_norm", a, in, 5, &train_ctx);
  /* mean 2.5, biased var 1.25, unbiased 5/3: y = 2 (x - 2.5) / sqrt (1.25) + 1. */
  for (int i = 0; i < 4; i++)
    g_assert_cmpfloat (fabs (tw_tensor_f32 (y)[i] - (2 * (i + 1 - 2.5) / sqrt (1.25) + 1)), <,
                       1e-6);
  g_assert_cmpfloat (fabs (tw_tensor_f32 (rm)[0] - 0.25 * 2.5), <, 1e-7);
  g_assert_cmpfloat (fabs (tw_tensor_f32 (rv)[0] - (0.75 + 0.25 * 5.0 / 3.0)), <, 1e-6);

  /* One value per channel cannot be normalised in training (PyTorch's rule). */
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_tensor) x1 = tw_tensor_from_data (TW_F32, 2, (int64_t[]) { 1, 1 }, (float[]) { 1 });
  tw_tensor *in1[5] = { x1, w, b, rm, rv };
  tw_tensor *out[1] = { NULL };
  const tw_op_def *def = tw_op_lookup ("batch_norm");
  tw_attrs *ra = tw_op_resolve_attrs (def, a, &error);
  g_assert_false (tw_op_run (def, &train_ctx, ra, in1, 5, out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE);
  g_assert_nonnull (strstr (error->message, "more than 1 value per channel"));
  g_clear_error (&error);
  /* ... but it can in eval. */
  g_assert_true (tw_op_run (def, &eval_ctx, ra, in1, 5, out, &error));
  tw_tensor_unref (out[0]);
  tw_attrs_free (ra);
  tw_attrs_free (a);
}

static void
test_bn_grad (void)
{
  int64_t xs[4] = { 3, 2, 3, 2 }, C = 2;
  g_autoptr (tw_tensor) x = twt_uniform (TW_F64, 4, xs, 60, -2.0, 3.0);
  g_autoptr (tw_tensor) w = twt_randn (TW_F64, 1, &C, 61);
  g_autoptr (tw_tensor) b = twt_randn (TW_F64, 1, &C, 62);
  g_autoptr (tw_tensor) rm = twt_randn (TW_F64, 1, &C, 63);
  g_autoptr (tw_tensor) rv = twt_uniform (TW_F64, 1, &C, 64, 0.5, 2.0);
  tw_tensor *in[5] = { x, w, b, rm, rv };
  gboolean wrt[5] = { TRUE, TRUE, TRUE, FALSE, FALSE };
  for (int mode = 0; mode < 2; mode++)
    {
      const tw_kctx *ctx = mode == 0 ? &train_ctx : &eval_ctx;
      double e = twt_grad_check ("batch_norm", NULL, in, 5, wrt, 0, ctx);
      g_test_message ("batch_norm grad (%s): error %.3g", mode == 0 ? "train" : "eval", e);
      g_assert_cmpfloat (e, <, TOL_GRAD);
    }
  /* [N, C] input and no affine parameters. */
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_bool (a, "affine", FALSE);
  g_autoptr (tw_tensor) x2 = twt_randn (TW_F64, 2, (int64_t[]) { 5, 3 }, 65);
  g_autoptr (tw_tensor) rm2 = tw_tensor_zeros (TW_F64, 1, (int64_t[]) { 3 });
  g_autoptr (tw_tensor) rv2 = tw_tensor_zeros (TW_F64, 1, (int64_t[]) { 3 });
  tw_tensor_fill (rv2, 1.0);
  double e = twt_grad_check ("batch_norm", a, (tw_tensor *[]) { x2, rm2, rv2 }, 3,
                             (gboolean[]) { TRUE, FALSE, FALSE }, 0, &train_ctx);
  g_test_message ("batch_norm grad (no affine): error %.3g", e);
  g_assert_cmpfloat (e, <, TOL_GRAD);
  tw_attrs_free (a);
}

static tw_tinfo
ti (int ndim, const int64_t *dims)
{
  tw_tinfo t;
  tw_tinfo_set (&t, TW_F32, ndim, dims);
  return t;
}

static void
expect_error (const char *op, const tw_attrs *a, const tw_tinfo *in, int n_in,
              const char *const *want)
{
  g_autoptr (GError) error = NULL;
  tw_tinfo out[TW_MAX_OUTPUTS];
  g_assert_false (twt_infer (op, a, in, n_in, out, &error));
  g_assert_nonnull (error);
  g_test_message ("%s", error->message);
  for (const char *const *w = want; *w; w++)
    if (!strstr (error->message, *w))
      g_error ("%s error \"%s\" lacks \"%s\"", op, error->message, *w);
}

static void
test_bn_shapes (void)
{
  g_autoptr (GError) error = NULL;
  const tw_op_def *def = tw_op_lookup ("batch_norm");
  tw_attrs *ra = tw_op_resolve_attrs (def, NULL, &error);
  tw_tinfo in[5] = { ti (4, (int64_t[]) { TW_DIM_N, 16, 8, 8 }) }, out[1];
  tw_param_spec ps[TW_MAX_PARAMS];
  static const char *const names[] = { "weight", "bias", "running_mean", "running_var" };
  static const tw_init inits[] = { TW_INIT_ONES, TW_INIT_ZEROS, TW_INIT_ZEROS, TW_INIT_ONES };
  g_assert_cmpint (def->params (ra, in, 1, ps, &error), ==, 4);
  for (int i = 0; i < 4; i++)
    {
      g_assert_cmpstr (ps[i].suffix, ==, names[i]);
      g_assert_cmpint (ps[i].info.ndim, ==, 1);
      g_assert_cmpint (ps[i].info.dims[0], ==, 16);
      g_assert_cmpint (ps[i].init, ==, inits[i]);
      g_assert_cmpint (ps[i].trainable, ==, i < 2);
      in[i + 1] = ps[i].info;
    }
  g_assert_true (def->infer (ra, in, 5, out, &error));
  g_assert_true (tw_tinfo_equal (&out[0], &in[0]));
  g_assert_true ((def->flags & TW_OP_STATEFUL) != 0);

  in[4] = ti (1, (int64_t[]) { 8 });
  expect_error ("batch_norm", NULL, in, 5,
                (const char *[]) { "running_var", "f32[16]", "got f32[8]", NULL });
  in[0] = ti (1, (int64_t[]) { TW_DIM_N });
  expect_error ("batch_norm", NULL, in, 1, (const char *[]) { "[N, C]", "got f32[N]", NULL });
  in[0] = ti (2, (int64_t[]) { TW_DIM_N, 16 });
  expect_error ("batch_norm", NULL, in, 3, (const char *[]) { "expects 5 inputs", "got 3", NULL });
  tw_attrs_free (ra);

  /* affine = false: only the buffers. */
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_bool (a, "affine", FALSE);
  ra = tw_op_resolve_attrs (def, a, &error);
  g_assert_cmpint (def->params (ra, in, 1, ps, &error), ==, 2);
  g_assert_cmpstr (ps[0].suffix, ==, "running_mean");
  tw_attrs_free (ra);
  tw_attrs_free (a);
}

/* ---- layer_norm --------------------------------------------------------- */

static tw_tensor *
ref_ln (tw_tensor *x, int k, tw_tensor *w, tw_tensor *b, double eps)
{
  int64_t D = 1;
  for (int i = x->ndim - k; i < x->ndim; i++)
    D *= x->shape[i];
  int64_t R = tw_tensor_numel (x) / D;
  tw_tensor *y = tw_tensor_new (TW_F64, x->ndim, x->shape);
  for (int64_t r = 0; r < R; r++)
    {
      double s = 0, q = 0;
      for (int64_t i = 0; i < D; i++)
        s += tw_tensor_get_flat (x, r * D + i);
      double m = s / D;
      for (int64_t i = 0; i < D; i++)
        q += pow (tw_tensor_get_flat (x, r * D + i) - m, 2);
      double is = 1 / sqrt (q / D + eps);
      for (int64_t i = 0; i < D; i++)
        tw_tensor_set_flat (y, r * D + i,
                            (tw_tensor_get_flat (x, r * D + i) - m) * is
                                    * (w ? tw_tensor_get_flat (w, i) : 1)
                                + (b ? tw_tensor_get_flat (b, i) : 0));
    }
  return y;
}

static void
test_ln_forward (void)
{
  for (int k = 1; k <= 2; k++)
    for (int d = 0; d < 2; d++)
      {
        tw_dtype dt = d == 0 ? TW_F32 : TW_F64;
        int64_t xs[3] = { 3, 4, 7 };
        g_autoptr (tw_tensor) x = twt_uniform (dt, 3, xs, 70 + k, 2.0, 6.0);
        g_autoptr (tw_tensor) w = twt_randn (dt, k, xs + 3 - k, 80 + k);
        g_autoptr (tw_tensor) b = twt_randn (dt, k, xs + 3 - k, 90 + k);
        tw_attrs *a = tw_attrs_new ();
        tw_attrs_set_int (a, "normalized_ndim", k);
        g_autoptr (tw_tensor) y = run1 ("layer_norm", a, (tw_tensor *[]) { x, w, b }, 3, NULL);
        g_autoptr (tw_tensor) r = ref_ln (x, k, w, b, 1e-5);
        double tol = dt == TW_F32 ? TOL_F32 : TOL_F64;
        assert_close ("layer_norm", y, r, tol);
        tw_attrs_set_bool (a, "elementwise_affine", FALSE);
        g_autoptr (tw_tensor) y2 = run1 ("layer_norm", a, &x, 1, NULL);
        g_autoptr (tw_tensor) r2 = ref_ln (x, k, NULL, NULL, 1e-5);
        assert_close ("layer_norm (no affine)", y2, r2, tol);
        tw_attrs_free (a);
      }
}

static void
test_ln_grad (void)
{
  for (int k = 1; k <= 2; k++)
    {
      int64_t xs[3] = { 2, 3, 5 };
      g_autoptr (tw_tensor) x = twt_randn (TW_F64, 3, xs, 100 + k);
      g_autoptr (tw_tensor) w = twt_randn (TW_F64, k, xs + 3 - k, 110 + k);
      g_autoptr (tw_tensor) b = twt_randn (TW_F64, k, xs + 3 - k, 120 + k);
      tw_attrs *a = tw_attrs_new ();
      tw_attrs_set_int (a, "normalized_ndim", k);
      double e = twt_grad_check ("layer_norm", a, (tw_tensor *[]) { x, w, b }, 3,
                                 (gboolean[]) { TRUE, TRUE, TRUE }, 0, NULL);
      g_test_message ("layer_norm grad (k=%d): error %.3g", k, e);
      g_assert_cmpfloat (e, <, TOL_GRAD);
      tw_attrs_set_bool (a, "elementwise_affine", FALSE);
      e = twt_grad_check ("layer_norm", a, &x, 1, (gboolean[]) { TRUE }, 0, NULL);
      g_test_message ("layer_norm grad (k=%d, no affine): error %.3g", k, e);
      g_assert_cmpfloat (e, <, TOL_GRAD);
      tw_attrs_free (a);
    }
  /* Wider rows than one 64-column block of the dweight sums. */
  int64_t xs[2] = { 3, 150 };
  g_autoptr (tw_tensor) x = twt_randn (TW_F64, 2, xs, 130);
  g_autoptr (tw_tensor) w = twt_randn (TW_F64, 1, xs + 1, 131);
  g_autoptr (tw_tensor) b = twt_randn (TW_F64, 1, xs + 1, 132);
  double e = twt_grad_check ("layer_norm", NULL, (tw_tensor *[]) { x, w, b }, 3,
                             (gboolean[]) { TRUE, TRUE, TRUE }, 200, NULL);
  g_test_message ("layer_norm grad (D=150): error %.3g", e);
  g_assert_cmpfloat (e, <, TOL_GRAD);
}

static void
test_ln_shapes (void)
{
  g_autoptr (GError) error = NULL;
  const tw_op_def *def = tw_op_lookup ("layer_norm");
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, "normalized_ndim", 2);
  tw_attrs *ra = tw_op_resolve_attrs (def, a, &error);
  tw_tinfo in[3] = { ti (3, (int64_t[]) { TW_DIM_N, 10, 32 }) }, out[1];
  tw_param_spec ps[TW_MAX_PARAMS];
  g_assert_cmpint (def->params (ra, in, 1, ps, &error), ==, 2);
  g_assert_cmpstr (ps[0].suffix, ==, "weight");
  g_assert_cmpstr (ps[1].suffix, ==, "bias");
  int64_t nd[2] = { 10, 32 };
  tw_tinfo want = ti (2, nd);
  g_assert_true (tw_tinfo_equal (&ps[0].info, &want));
  g_assert_true (tw_tinfo_equal (&ps[1].info, &want));
  g_assert_cmpint (ps[0].init, ==, TW_INIT_ONES);
  g_assert_cmpint (ps[1].init, ==, TW_INIT_ZEROS);
  in[1] = ps[0].info;
  in[2] = ps[1].info;
  g_assert_true (def->infer (ra, in, 3, out, &error));
  g_assert_true (tw_tinfo_equal (&out[0], &in[0]));
  tw_attrs_free (ra);

  in[2] = ti (1, (int64_t[]) { 32 });
  expect_error ("layer_norm", a, in, 3,
                (const char *[]) { "bias", "f32[10, 32]", "got f32[32]", NULL });
  in[0] = ti (1, (int64_t[]) { 32 });
  expect_error ("layer_norm", a, in, 1,
                (const char *[]) { "normalized_ndim=2", "rank at least 2", "got f32[32]", NULL });
  in[0] = ti (2, (int64_t[]) { 4, TW_DIM_N });
  expect_error ("layer_norm", a, in, 1, (const char *[]) { "known", "got f32[4, N]", NULL });
  tw_attrs_free (a);
}

/* The same bits with 1 and 3 OpenMP threads (sizes above the kernels'
 * 32768-element threshold for going parallel). */
static void
test_norm_threads (void)
{
  tw_kctx c3 = train_ctx;
  c3.num_threads = 3;
  int64_t xs[4] = { 8, 16, 17, 17 }, C = 16;
  g_autoptr (tw_tensor) x = twt_randn (TW_F32, 4, xs, 700);
  g_autoptr (tw_tensor) w = twt_randn (TW_F32, 1, &C, 701);
  g_autoptr (tw_tensor) dy = twt_randn (TW_F32, 4, xs, 702);
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_bool (a, "track_running_stats", FALSE);
  tw_attrs_set_bool (a, "affine", FALSE);
  g_autoptr (tw_tensor) y1 = run1 ("batch_norm", a, &x, 1, &train_ctx);
  g_autoptr (tw_tensor) y3 = run1 ("batch_norm", a, &x, 1, &c3);
  g_assert_cmpfloat (twt_max_error (y3, y1), ==, 0);
  tw_attrs_free (a);
  for (int op = 0; op < 2; op++)
    {
      const char *name = op == 0 ? "batch_norm_grad" : "layer_norm_grad";
      tw_tensor *o1[3] = { 0 }, *o3[3] = { 0 };
      a = tw_attrs_new ();
      tw_attrs_set_bool (a, "affine", op == 0);
      if (op == 1)
        tw_attrs_set_int (a, "normalized_ndim", 2);
      tw_tensor *in[3] = { x, w, dy };
      tw_tensor *in_ln[2] = { x, dy };
      twt_run_guarded (name, a, op == 0 ? in : in_ln, op == 0 ? 3 : 2, o1, &train_ctx);
      twt_run_guarded (name, a, op == 0 ? in : in_ln, op == 0 ? 3 : 2, o3, &c3);
      for (int k = 0; k < 3; k++)
        {
          g_assert_cmpfloat (twt_max_error (o3[k], o1[k]), ==, 0);
          tw_tensor_unref (o1[k]);
          tw_tensor_unref (o3[k]);
        }
      tw_attrs_free (a);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  g_test_add_func ("/engine/ops/batch_norm/forward", test_bn_forward);
  g_test_add_func ("/engine/ops/batch_norm/running", test_bn_running);
  g_test_add_func ("/engine/ops/batch_norm/grad", test_bn_grad);
  g_test_add_func ("/engine/ops/batch_norm/shapes", test_bn_shapes);
  g_test_add_func ("/engine/ops/layer_norm/forward", test_ln_forward);
  g_test_add_func ("/engine/ops/layer_norm/grad", test_ln_grad);
  g_test_add_func ("/engine/ops/layer_norm/shapes", test_ln_shapes);
  g_test_add_func ("/engine/ops/norm/threads", test_norm_threads);
  return g_test_run ();
}
