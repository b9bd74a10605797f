/* test-ops-conv.c — conv2d and the pools against naive double-precision
 * references, guard bytes, float64 finite-difference gradients, shape errors. */
#include "opcheck.h"

#include <math.h>
#include <string.h>

/* f32 kernels against a float64 reference: sums of at most a few hundred
 * products of O(1) values round to ~1e-6 of the largest output (sqrt(K)
 * eps_f32 ~ 12 * 6e-8), so 1e-5 leaves a 10x margin. */
#define TOL_F32 1e-5
/* f64 kernels: the same sums in double, ~1e-14; 1e-12 allows for order. */
#define TOL_F64 1e-12
/* Finite differences in float64 (opcheck.h: eps 1e-6, errors ~1e-10 for
 * these piecewise-linear and bilinear ops). */
#define TOL_GRAD 1e-6

typedef struct
{
  int64_t o, kh, kw, sh, sw, ph, pw, dh, dw, groups;
  gboolean bias;
} conv_cfg;

static tw_attrs *
conv_attrs (const conv_cfg *c)
{
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, "out_channels", c->o);
  tw_attrs_set_ints (a, "kernel_size", 2, (int64_t[]) { c->kh, c->kw });
  tw_attrs_set_ints (a, "stride", 2, (int64_t[]) { c->sh, c->sw });
  tw_attrs_set_ints (a, "padding", 2, (int64_t[]) { c->ph, c->pw });
  tw_attrs_set_ints (a, "dilation", 2, (int64_t[]) { c->dh, c->dw });
  tw_attrs_set_int (a, "groups", c->groups);
  tw_attrs_set_bool (a, "bias", c->bias);
  return a;
}

static int64_t
out_size (int64_t in, int64_t k, int64_t s, int64_t p, int64_t d)
{
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

/* Direct 7-loop convolution in double. */
static tw_tensor *
ref_conv (const conv_cfg *c, tw_tensor *xt, tw_tensor *wt, tw_tensor *bt)
{
  g_autoptr (tw_tensor) x64 = tw_tensor_cast (xt, TW_F64);
  g_autoptr (tw_tensor) w64 = tw_tensor_cast (wt, TW_F64);
  const double *x = tw_tensor_f64 (x64), *w = tw_tensor_f64 (w64);
  int64_t N = xt->shape[0], C = xt->shape[1], H = xt->shape[2], W = xt->shape[3];
  int64_t cg = C / c->groups, og = c->o / c->groups;
  int64_t Ho = out_size (H, c->kh, c->sh, c->ph, c->dh), Wo = out_size (W, c->kw, c->sw, c->pw, c->dw);
  tw_tensor *yt = tw_tensor_zeros (TW_F64, 4, (int64_t[]) { N, c->o, Ho, Wo });
  double *y = tw_tensor_f64 (yt);
  for (int64_t n = 0; n < N; n++)
    for (int64_t o = 0; o < c->o; o++)
      for (int64_t oh = 0; oh < Ho; oh++)
        for (int64_t ow = 0; ow < Wo; ow++)
          {
            double s = bt ? tw_tensor_get_flat (bt, o) : 0;
            int64_t g = o / og;
            for (int64_t ci = 0; ci < cg; ci++)
              for (int64_t ki = 0; ki < c->kh; ki++)
                for (int64_t kj = 0; kj < c->kw; kj++)
                  {
                    int64_t ih = oh * c->sh - c->ph + ki * c->dh;
                    int64_t iw = ow * c->sw - c->pw + kj * c->dw;
                    if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                      continue;
                    s += x[((n * C + g * cg + ci) * H + ih) * W + iw]
                         * w[((o * cg + ci) * c->kh + ki) * c->kw + kj];
                  }
            y[((n * c->o + o) * Ho + oh) * Wo + ow] = s;
          }
  return yt;
}

/* Reference gradients of sum (dy * conv (x, w)) by the same loops. */
static void
ref_conv_grads (const conv_cfg *c, tw_tensor *xt, tw_tensor *wt, tw_tensor *dyt, tw_tensor **dxt,
                tw_tensor **dwt)
{
  g_autoptr (tw_tensor) x64 = tw_tensor_cast (xt, TW_F64);
  g_autoptr (tw_tensor) w64 = tw_tensor_cast (wt, TW_F64);
  g_autoptr (tw_tensor) dy64 = tw_tensor_cast (dyt, TW_F64);
  const double *x = tw_tensor_f64 (x64), *w = tw_tensor_f64 (w64), *dy = tw_tensor_f64 (dy64);
  int64_t N = xt->shape[0], C = xt->shape[1], H = xt->shape[2], W = xt->shape[3];
  int64_t cg = C / c->groups, og = c->o / c->groups, Ho = dyt->shape[2], Wo = dyt->shape[3];
  *dxt = tw_tensor_zeros (TW_F64, 4, xt->shape);
  *dwt = tw_tensor_zeros (TW_F64, 4, wt->shape);
  double *dx = tw_tensor_f64 (*dxt), *dw = tw_tensor_f64 (*dwt);
  for (int64_t n = 0; n < N; n++)
    for (int64_t o = 0; o < c->o; o++)
      for (int64_t oh = 0; oh < Ho; oh++)
        for (int64_t ow = 0; ow < Wo; ow++)
          {
            double g = dy[((n * c->o + o) * Ho + oh) * Wo + ow];
            int64_t gi = o / og;
            for (int64_t ci = 0; ci < cg; ci++)
              for (int64_t ki = 0; ki < c->kh; ki++)
                for (int64_t kj = 0; kj < c->kw; kj++)
                  {
                    int64_t ih = oh * c->sh - c->ph + ki * c->dh;
                    int64_t iw = ow * c->sw - c->pw + kj * c->dw;
                    if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                      continue;
                    int64_t xi = ((n * C + gi * cg + ci) * H + ih) * W + iw;
                    int64_t wi = ((o * cg + ci) * c->kh + ki) * c->kw + kj;
                    dx[xi] += g * w[wi];
                    dw[wi] += g * x[xi];
                  }
          }
}

static tw_tensor *
run1 (const char *op, const tw_attrs *a, tw_tensor *const *in, int n_in, const tw_kctx *ctx)
{
  tw_tensor *out[TW_MAX_OUTPUTS] = { 0 };
  twt_run_guarded (op, a, in, n_in, out, ctx);
  return out[0];
}

/* Forward of conv2d on x [N, C, H, W] in dtype dt against ref_conv. */
static void
check_conv_forward (const conv_cfg *c, int64_t N, int64_t C, int64_t H, int64_t W, tw_dtype dt,
                    guint64 seed)
{
  tw_attrs *a = conv_attrs (c);
  g_autoptr (tw_tensor) x = twt_randn (dt, 4, (int64_t[]) { N, C, H, W }, seed);
  g_autoptr (tw_tensor) w = twt_randn (dt, 4, (int64_t[]) { c->o, C / c->groups, c->kh, c->kw },
                                       seed + 1);
  g_autoptr (tw_tensor) b = twt_randn (dt, 1, (int64_t[]) { c->o }, seed + 2);
  tw_tensor *in[3] = { x, w, b };
  g_autoptr (tw_tensor) y = run1 ("conv2d", a, in, c->bias ? 3 : 2, NULL);
  g_autoptr (tw_tensor) r = ref_conv (c, x, w, c->bias ? b : NULL);
  double err = twt_max_error (y, r);
  g_test_message ("conv2d forward %s N=%" G_GINT64_FORMAT ": error %.3g", tw_dtype_name (dt), N,
                  err);
  if (!(err < (dt == TW_F32 ? TOL_F32 : TOL_F64)))
    g_error ("conv2d forward %s: error %.3g", tw_dtype_name (dt), err);
  tw_attrs_free (a);
}

static const conv_cfg fwd_cfgs[] = {
  /* o kh kw sh sw ph pw dh dw groups bias */
  { 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, TRUE },       /* 3x3 "same" */
  { 5, 3, 2, 2, 1, 1, 0, 2, 1, 1, TRUE },       /* stride, padding, dilation per axis */
  { 6, 2, 3, 2, 3, 0, 1, 1, 2, 2, FALSE },      /* groups=2, no bias */
  { 6, 3, 3, 1, 1, 1, 1, 1, 1, 6, TRUE },       /* depthwise: groups = C = 6 */
  { 3, 1, 1, 1, 1, 0, 0, 1, 1, 1, TRUE },       /* 1x1 pointwise fast path */
  { 3, 1, 1, 2, 2, 0, 0, 1, 1, 1, TRUE },       /* 1x1 with stride 2 (im2col path) */
};
/* Input channels of each config. */
static const int64_t fwd_channels[] = { 3, 2, 4, 6, 5, 5 };

static void
test_conv_forward (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (fwd_cfgs); i++)
    for (int batch = 1; batch <= 3; batch += 2)
      {
        check_conv_forward (&fwd_cfgs[i], batch, fwd_channels[i], 7, 6, TW_F32, 10 * i + 1);
        check_conv_forward (&fwd_cfgs[i], batch, fwd_channels[i], 7, 6, TW_F64, 10 * i + 1);
      }
}

static void
test_conv_lenet (void)
{
  /* The LeNet-5 layers (batch 5 keeps the test quick). */
  conv_cfg c1 = { 6, 5, 5, 1, 1, 2, 2, 1, 1, 1, TRUE };
  conv_cfg c2 = { 16, 5, 5, 1, 1, 0, 0, 1, 1, 1, TRUE };
  check_conv_forward (&c1, 5, 1, 28, 28, TW_F32, 101);
  check_conv_forward (&c2, 5, 6, 14, 14, TW_F32, 102);
}

/* Batches larger than one workspace chunk (conv.c: CONV_WS_BUDGET = 256 KiB):
 * 4 channels, 3x3, 8x8 with 4 outputs needs (36 + 4) * 64 elements per
 * sample, so a batch of 30 runs as chunks of 25 + 5 in f32 and 12 + 12 + 6 in
 * f64.  The internal gradient ops are compared with reference gradients. */
static void
test_conv_chunks (void)
{
  conv_cfg c = { 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, TRUE };
  const int64_t N = 30, C = 4, H = 8, P = 64;
  for (int k = 0; k < 2; k++)
    {
      tw_dtype dt = k == 0 ? TW_F32 : TW_F64;
      double tol = k == 0 ? TOL_F32 : TOL_F64;
      check_conv_forward (&c, N, C, H, H, dt, 200);
      tw_attrs *a = conv_attrs (&c);
      g_autoptr (tw_tensor) x = twt_randn (dt, 4, (int64_t[]) { N, C, H, H }, 201);
      g_autoptr (tw_tensor) w = twt_randn (dt, 4, (int64_t[]) { c.o, C, 3, 3 }, 202);
      g_autoptr (tw_tensor) dy = twt_randn (dt, 4, (int64_t[]) { N, c.o, H, H }, 203);
      tw_tensor *dx_ref, *dw_ref;
      ref_conv_grads (&c, x, w, dy, &dx_ref, &dw_ref);

      tw_attrs *ga = tw_attrs_new ();
      tw_attrs_set_ints (ga, "kernel_size", 1, (int64_t[]) { 3 });
      tw_attrs_set_ints (ga, "padding", 1, (int64_t[]) { 1 });
      tw_attrs *gi = tw_attrs_copy (ga);
      tw_attrs_set_int (gi, "in_h", H);
      tw_attrs_set_int (gi, "in_w", H);
      g_autoptr (tw_tensor) dx = run1 ("conv2d_grad_input", gi, (tw_tensor *[]) { dy, w }, 2, NULL);
      g_autoptr (tw_tensor) dw = run1 ("conv2d_grad_weight", ga, (tw_tensor *[]) { dy, x }, 2, NULL);
      g_autoptr (tw_tensor) db = run1 ("conv2d_grad_bias", NULL, (tw_tensor *[]) { dy }, 1, NULL);
      double e1 = twt_max_error (dx, dx_ref);
      /* dweight sums 30 * 64 products per entry: f32 rounding grows to
       * ~sqrt(1920) * 6e-8 ~ 3e-6 of the largest entry; allow 1e-4. */
      double e2 = twt_max_error (dw, dw_ref);
      g_test_message ("conv2d chunked grads %s: dx %.3g dw %.3g", tw_dtype_name (dt), e1, e2);
      if (!(e1 < tol) || !(e2 < (k == 0 ? 1e-4 : tol)))
        g_error ("conv2d chunked gradients %s: dx %.3g dw %.3g", tw_dtype_name (dt), e1, e2);
      for (int64_t o = 0; o < c.o; o++)
        {
          double s = 0;
          for (int64_t n = 0; n < N; n++)
            for (int64_t p = 0; p < P; p++)
              s += tw_tensor_get_flat (dy, (n * c.o + o) * P + p);
          g_assert_cmpfloat (fabs (tw_tensor_get_flat (db, o) - s), <, 1e-4 * MAX (1, fabs (s)));
        }
      tw_tensor_unref (dx_ref);
      tw_tensor_unref (dw_ref);
      tw_attrs_free (a);
      tw_attrs_free (ga);
      tw_attrs_free (gi);
    }
}

/* Gradients of x, weight and bias by central differences. */
static void
check_conv_grad (const conv_cfg *c, int64_t N, int64_t C, int64_t H, int64_t W, guint64 seed)
{
  tw_attrs *a = conv_attrs (c);
  g_autoptr (tw_tensor) x = twt_randn (TW_F64, 4, (int64_t[]) { N, C, H, W }, seed);
  g_autoptr (tw_tensor) w = twt_randn (TW_F64, 4, (int64_t[]) { c->o, C / c->groups, c->kh, c->kw },
                                       seed + 1);
  g_autoptr (tw_tensor) b = twt_randn (TW_F64, 1, (int64_t[]) { c->o }, seed + 2);
  tw_tensor *in[3] = { x, w, b };
  gboolean wrt[3] = { TRUE, TRUE, TRUE };
  double e = twt_grad_check ("conv2d", a, in, c->bias ? 3 : 2, wrt, 0, NULL);
  g_test_message ("conv2d grad: error %.3g", e);
  g_assert_cmpfloat (e, <, TOL_GRAD);
  tw_attrs_free (a);
}

static void
test_conv_grad (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (fwd_cfgs); i++)
    check_conv_grad (&fwd_cfgs[i], 2, fwd_channels[i], 5, 4, 300 + i);
  /* One sample (the per-sample GEMM path), depthwise with depth multiplier 2. */
  check_conv_grad (&fwd_cfgs[0], 1, 3, 4, 5, 320);
  conv_cfg pw1 = { 3, 1, 1, 1, 1, 0, 0, 1, 1, 1, TRUE };
  check_conv_grad (&pw1, 1, 4, 3, 3, 340);
}

static void
test_conv_depthwise (void)
{
  /* groups = C = 3, O = 6: two filters per input channel (depth multiplier 2). */
  conv_cfg c = { 6, 3, 3, 1, 1, 1, 1, 1, 1, 3, TRUE };
  check_conv_forward (&c, 2, 3, 5, 9, TW_F32, 77);
  check_conv_forward (&c, 2, 3, 5, 9, TW_F64, 77);
  check_conv_grad (&c, 2, 3, 4, 4, 330);
}

static tw_tinfo
ti (int ndim, const int64_t *dims)
{
  tw_tinfo t;
  tw_tinfo_set (&t, TW_F32, ndim, dims);
  return t;
}

/* infer must fail with a message holding every string in want (NULL-terminated). */
static void
expect_error (const char *op, const tw_attrs *a, const tw_tinfo *in, int n_in,
              const char *const *want)
{
  g_autoptr (GError) error = NULL;
  tw_tinfo out[TW_MAX_OUTPUTS];
  g_assert_false (twt_infer (op, a, in, n_in, out, &error));
  g_assert_nonnull (error);
  g_test_message ("%s: %s", op, error->message);
  for (const char *const *w = want; *w; w++)
    if (!strstr (error->message, *w))
      g_error ("%s error \"%s\" lacks \"%s\"", op, error->message, *w);
}

static void
test_conv_errors (void)
{
  conv_cfg c = { 6, 5, 5, 1, 1, 2, 2, 1, 1, 1, TRUE };
  tw_attrs *a = conv_attrs (&c);
  /* Weight drawn for 3 input channels, input with 1. */
  tw_tinfo in[3] = { ti (4, (int64_t[]) { TW_DIM_N, 1, 28, 28 }),
                     ti (4, (int64_t[]) { 6, 3, 5, 5 }), ti (1, (int64_t[]) { 6 }) };
  expect_error ("conv2d", a, in, 3,
                (const char *[]) { "expects input with 3 channels", "got f32[N, 1, 28, 28]", NULL });
  /* Wrong weight kernel. */
  in[1] = ti (4, (int64_t[]) { 6, 1, 3, 3 });
  expect_error ("conv2d", a, in, 3,
                (const char *[]) { "weight f32[6, 1, 5, 5]", "got f32[6, 1, 3, 3]", NULL });
  in[1] = ti (4, (int64_t[]) { 6, 1, 5, 5 });
  in[2] = ti (1, (int64_t[]) { 5 });
  expect_error ("conv2d", a, in, 3, (const char *[]) { "bias f32[6]", "got f32[5]", NULL });
  /* Wrong rank. */
  in[0] = ti (2, (int64_t[]) { TW_DIM_N, 784 });
  expect_error ("conv2d", a, in, 1, (const char *[]) { "rank 4", "got f32[N, 784]", NULL });
  /* Output smaller than 1x1: 3x3 input, 5x5 kernel, no padding. */
  tw_attrs_set_ints (a, "padding", 1, (int64_t[]) { 0 });
  in[0] = ti (4, (int64_t[]) { 2, 1, 3, 3 });
  expect_error ("conv2d", a, in, 1,
                (const char *[]) { "too small", "f32[2, 1, 3, 3]", "expected H >= 5 and W >= 5",
                                   NULL });
  /* Groups that do not divide the channels or the outputs. */
  tw_attrs_set_int (a, "groups", 2);
  in[0] = ti (4, (int64_t[]) { 2, 3, 8, 8 });
  expect_error ("conv2d", a, in, 1,
                (const char *[]) { "divisible by groups=2", "got 3 channels", NULL });
  tw_attrs_set_int (a, "out_channels", 5);
  in[0] = ti (4, (int64_t[]) { 2, 4, 8, 8 });
  expect_error ("conv2d", a, in, 1, (const char *[]) { "out_channels", "got 5", NULL });
  /* Bad attributes. */
  tw_attrs_set_int (a, "out_channels", 6);
  tw_attrs_set_ints (a, "stride", 2, (int64_t[]) { 0, 1 });
  expect_error ("conv2d", a, in, 1, (const char *[]) { "'stride' must be at least 1", NULL });
  tw_attrs_free (a);

  /* Pools. */
  tw_attrs *p = tw_attrs_new ();
  tw_attrs_set_ints (p, "kernel_size", 1, (int64_t[]) { 3 });
  tw_attrs_set_ints (p, "padding", 1, (int64_t[]) { 2 });
  in[0] = ti (4, (int64_t[]) { 2, 3, 8, 8 });
  expect_error ("max_pool2d", p, in, 1, (const char *[]) { "at most half", "got 2x2", NULL });
  expect_error ("avg_pool2d", p, in, 1, (const char *[]) { "at most half", NULL });
  tw_attrs_set_ints (p, "padding", 1, (int64_t[]) { 0 });
  in[0] = ti (4, (int64_t[]) { 2, 3, 2, 8 });
  expect_error ("max_pool2d", p, in, 1, (const char *[]) { "too small", "expected H >= 3", NULL });
  in[0] = ti (3, (int64_t[]) { 2, 8, 8 });
  expect_error ("max_pool2d", p, in, 1, (const char *[]) { "rank 4", "got f32[2, 8, 8]", NULL });
  expect_error ("global_avg_pool2d", NULL, in, 1, (const char *[]) { "rank 4", NULL });
  tw_attrs_free (p);
}

static void
test_conv_symbolic (void)
{
  g_autoptr (GError) error = NULL;
  conv_cfg c = { 6, 5, 5, 1, 1, 2, 2, 1, 1, 1, TRUE };
  tw_attrs *a = conv_attrs (&c);
  tw_tinfo in[3] = { ti (4, (int64_t[]) { TW_DIM_N, 1, 28, 28 }) };
  tw_tinfo out[1];
  tw_param_spec ps[TW_MAX_PARAMS];
  const tw_op_def *def = tw_op_lookup ("conv2d");
  tw_attrs *ra = tw_op_resolve_attrs (def, a, &error);
  g_assert_no_error (error);

  /* params(): PyTorch's state_dict layout and fan-in of nn.Conv2d(1, 6, 5). */
  g_assert_cmpint (def->params (ra, in, 1, ps, &error), ==, 2);
  g_assert_cmpstr (ps[0].suffix, ==, "weight");
  int64_t wd[4] = { 6, 1, 5, 5 };
  tw_tinfo wi = ti (4, wd);
  g_assert_true (tw_tinfo_equal (&ps[0].info, &wi));
  g_assert_cmpint (ps[0].fan_in, ==, 25);
  g_assert_cmpint (ps[0].fan_out, ==, 150);
  g_assert_cmpint (ps[0].init, ==, TW_INIT_UNIFORM_FAN_IN);
  g_assert_true (ps[0].trainable);
  g_assert_cmpstr (ps[1].suffix, ==, "bias");
  g_assert_cmpint (ps[1].info.ndim, ==, 1);
  g_assert_cmpint (ps[1].info.dims[0], ==, 6);
  g_assert_cmpint (ps[1].fan_in, ==, 25);
  in[1] = ps[0].info;
  in[2] = ps[1].info;

  g_assert_true (def->infer (ra, in, 3, out, &error));
  g_assert_no_error (error);
  int64_t od[4] = { TW_DIM_N, 6, 28, 28 };
  tw_tinfo want = ti (4, od);
  g_assert_true (tw_tinfo_equal (&out[0], &want));

  /* cost: 2 N O Ho Wo C kh kw with N = 64. */
  tw_cost cost;
  in[0].dims[0] = 64;
  out[0].dims[0] = 64;
  def->cost (ra, in, 3, out, 1, &cost);
  g_assert_cmpfloat (cost.flops, ==, 2.0 * 64 * 6 * 28 * 28 * 25);
  tw_attrs_free (ra);

  /* init "he_normal" and no bias. */
  tw_attrs_set_string (a, "init", "he_normal");
  tw_attrs_set_bool (a, "bias", FALSE);
  ra = tw_op_resolve_attrs (def, a, &error);
  g_assert_cmpint (def->params (ra, in, 1, ps, &error), ==, 1);
  g_assert_cmpint (ps[0].init, ==, TW_INIT_HE_NORMAL);
  tw_attrs_free (ra);
  tw_attrs_free (a);

  /* A kernel_size written as one int in the model file. */
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_assert_true (json_parser_load_from_data (parser, "{\"out_channels\": 16, \"kernel_size\": 5}",
                                             -1, NULL));
  a = tw_attrs_from_json (json_node_get_object (json_parser_get_root (parser)), def->attrs,
                          "test", &error);
  g_assert_no_error (error);
  in[0] = ti (4, (int64_t[]) { TW_DIM_N, 6, 14, 14 });
  g_assert_true (twt_infer ("conv2d", a, in, 1, out, &error));
  int64_t od2[4] = { TW_DIM_N, 16, 10, 10 };
  want = ti (4, od2);
  g_assert_true (tw_tinfo_equal (&out[0], &want));
  tw_attrs_free (a);

  /* Pools keep N (and even a symbolic C). */
  a = tw_attrs_new ();
  tw_attrs_set_ints (a, "kernel_size", 1, (int64_t[]) { 2 });
  in[0] = ti (4, (int64_t[]) { TW_DIM_N, 6, 28, 28 });
  g_assert_true (twt_infer ("max_pool2d", a, in, 1, out, &error));
  int64_t pd[4] = { TW_DIM_N, 6, 14, 14 };
  want = ti (4, pd);
  g_assert_true (tw_tinfo_equal (&out[0], &want));
  g_assert_true (twt_infer ("avg_pool2d", a, in, 1, out, &error));
  g_assert_true (tw_tinfo_equal (&out[0], &want));
  g_assert_true (twt_infer ("global_avg_pool2d", NULL, in, 1, out, &error));
  int64_t gd[4] = { TW_DIM_N, 6, 1, 1 };
  want = ti (4, gd);
  g_assert_true (tw_tinfo_equal (&out[0], &want));
  tw_attrs_free (a);
}

/* ---- pools -------------------------------------------------------------- */

typedef struct
{
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
  gboolean include_pad;
} pool_cfg;

static tw_attrs *
pool_attrs (const pool_cfg *c, gboolean max)
{
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_ints (a, "kernel_size", 2, (int64_t[]) { c->kh, c->kw });
  tw_attrs_set_ints (a, "stride", 2, (int64_t[]) { c->sh, c->sw });
  tw_attrs_set_ints (a, "padding", 2, (int64_t[]) { c->ph, c->pw });
  if (max)
    tw_attrs_set_ints (a, "dilation", 2, (int64_t[]) { c->dh, c->dw });
  else
    tw_attrs_set_bool (a, "count_include_pad", c->include_pad);
  return a;
}

/* Naive max (max = TRUE) or average pool in double. */
static tw_tensor *
ref_pool (const pool_cfg *c, gboolean max, tw_tensor *xt)
{
  int64_t N = xt->shape[0], C = xt->shape[1], H = xt->shape[2], W = xt->shape[3];
  int64_t dh = max ? c->dh : 1, dw = max ? c->dw : 1;
  int64_t Ho = out_size (H, c->kh, c->sh, c->ph, dh), Wo = out_size (W, c->kw, c->sw, c->pw, dw);
  tw_tensor *yt = tw_tensor_zeros (TW_F64, 4, (int64_t[]) { N, C, Ho, Wo });
  for (int64_t p = 0; p < N * C; p++)
    for (int64_t oh = 0; oh < Ho; oh++)
      for (int64_t ow = 0; ow < Wo; ow++)
        {
          double m = -INFINITY, s = 0;
          int cnt = 0;
          for (int64_t ki = 0; ki < c->kh; ki++)
            for (int64_t kj = 0; kj < c->kw; kj++)
              {
                int64_t ih = oh * c->sh - c->ph + ki * dh, iw = ow * c->sw - c->pw + kj * dw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                  continue;
                double v = tw_tensor_get_flat (xt, (p * H + ih) * W + iw);
                m = MAX (m, v);
                s += v;
                cnt++;
              }
          double r = max ? m : s / (c->include_pad ? (double) (c->kh * c->kw) : cnt);
          tw_tensor_set_flat (yt, (p * Ho + oh) * Wo + ow, r);
        }
  return yt;
}

static const pool_cfg pool_cfgs[] = {
  /* kh kw sh sw ph pw dh dw include_pad */
  { 2, 2, 2, 2, 0, 0, 1, 1, TRUE },     /* LeNet 2x2 fast path */
  { 3, 3, 2, 2, 1, 1, 1, 1, TRUE },     /* ResNet stem: 3x3 s2 p1 */
  { 3, 2, 1, 2, 1, 0, 2, 1, FALSE },    /* odd: stride 1x2, padding per axis, dilation */
  { 2, 3, 3, 1, 1, 1, 1, 2, FALSE },    /* stride larger than the kernel */
};

static void
test_pool_forward (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (pool_cfgs); i++)
    for (int max = 0; max < 2; max++)
      for (int k = 0; k < 2; k++)
        {
          tw_dtype dt = k == 0 ? TW_F32 : TW_F64;
          tw_attrs *a = pool_attrs (&pool_cfgs[i], max);
          g_autoptr (tw_tensor) x = twt_randn (dt, 4, (int64_t[]) { 2, 3, 7, 9 }, 400 + i);
          g_autoptr (tw_tensor) y = run1 (max ? "max_pool2d" : "avg_pool2d", a, &x, 1, NULL);
          g_autoptr (tw_tensor) r = ref_pool (&pool_cfgs[i], max, x);
          double err = twt_max_error (y, r);
          g_test_message ("pool %u max=%d %s: error %.3g", i, max, tw_dtype_name (dt), err);
          /* max copies values (exact); averages of <= 9 values in double. */
          if (!(err < (dt == TW_F32 ? TOL_F32 : TOL_F64)))
            g_error ("%s config %u %s: error %.3g", max ? "max_pool2d" : "avg_pool2d", i,
                     tw_dtype_name (dt), err);
          tw_attrs_free (a);
        }
  /* stride defaults to the kernel size. */
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_ints (a, "kernel_size", 1, (int64_t[]) { 3 });
  g_autoptr (tw_tensor) x = twt_randn (TW_F32, 4, (int64_t[]) { 1, 2, 7, 8 }, 450);
  g_autoptr (tw_tensor) y = run1 ("max_pool2d", a, &x, 1, NULL);
  pool_cfg d = { 3, 3, 3, 3, 0, 0, 1, 1, TRUE };
  g_autoptr (tw_tensor) r = ref_pool (&d, TRUE, x);
  g_assert_cmpfloat (twt_max_error (y, r), ==, 0);
  tw_attrs_free (a);
}

static void
test_pool_grad (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (pool_cfgs); i++)
    for (int max = 0; max < 2; max++)
      {
        tw_attrs *a = pool_attrs (&pool_cfgs[i], max);
        /* randn values: the closest pair among 126 normals is ~1e-4 apart,
         * far beyond the 1e-6 steps, so no window's argmax flips. */
        g_autoptr (tw_tensor) x = twt_randn (TW_F64, 4, (int64_t[]) { 2, 3, 7, 9 }, 500 + i);
        double e = twt_grad_check (max ? "max_pool2d" : "avg_pool2d", a, &x, 1,
                                   (gboolean[]) { TRUE }, 0, NULL);
        g_test_message ("pool %u max=%d grad: error %.3g", i, max, e);
        g_assert_cmpfloat (e, <, TOL_GRAD);
        tw_attrs_free (a);
      }
  g_autoptr (tw_tensor) x = twt_randn (TW_F64, 4, (int64_t[]) { 2, 3, 5, 4 }, 550);
  twt_assert_grad ("global_avg_pool2d", NULL, &x, 1, (gboolean[]) { TRUE }, TOL_GRAD);
}

/* Ties: the first maximum in row-major window order takes the gradient,
 * in the forward's 2x2 fast path and in the general path alike. */
static void
test_pool_ties (void)
{
  for (int general = 0; general < 2; general++)
    {
      tw_attrs *a = tw_attrs_new ();
      tw_attrs_set_ints (a, "kernel_size", 1, (int64_t[]) { 2 });
      if (general)
        tw_attrs_set_ints (a, "padding", 1, (int64_t[]) { 1 });
      g_autoptr (tw_tensor) x = tw_tensor_zeros (TW_F32, 4, (int64_t[]) { 1, 1, 4, 4 });
      tw_tensor_fill (x, 1.0);
      tw_tensor_f32 (x)[5] = NAN;       /* row 1, column 1 */
      g_autoptr (tw_tensor) y = run1 ("max_pool2d", a, &x, 1, NULL);
      g_autoptr (tw_tensor) dy = tw_tensor_new_like (y);
      tw_tensor_fill (dy, 1.0);
      g_autoptr (tw_tensor) dx = run1 ("max_pool2d_grad", a, (tw_tensor *[]) { x, dy }, 2, NULL);
      const float *g = tw_tensor_f32 (dx);
      if (!general)
        {
          /* Windows: [0,1,4,5] holds the NaN, the others tie at 1. */
          g_assert_true (isnan (tw_tensor_f32 (y)[0]));
          g_assert_cmpfloat (tw_tensor_f32 (y)[1], ==, 1.0f);
          float want[16] = { 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0 };
          for (int i = 0; i < 16; i++)
            g_assert_cmpfloat (g[i], ==, want[i]);
        }
      else
        {
          /* Padding 1: windows start at -1; element 0 is the first valid tap
           * of window (0,0); the NaN at (1,1) wins window (1,1). */
          g_assert_cmpfloat (g[0], ==, 1.0f);
          g_assert_cmpfloat (g[5], ==, 1.0f);
          g_assert_true (isnan (tw_tensor_f32 (y)[1 * 3 + 1]));
        }
      tw_attrs_free (a);
    }
}

/* The same bits with 1, 2 and 3 OpenMP threads (sizes above the kernels'
 * 32768-element threshold for going parallel). */
static void
check_threads (const char *op, const tw_attrs *a, tw_tensor *const *in, int n_in)
{
  tw_kctx c1 = { .training = TRUE, .seed = 1, .num_threads = 1 };
  g_autoptr (tw_tensor) y1 = run1 (op, a, in, n_in, &c1);
  for (int nt = 2; nt <= 3; nt++)
    {
      tw_kctx cn = c1;
      cn.num_threads = nt;
      g_autoptr (tw_tensor) yn = run1 (op, a, in, n_in, &cn);
      if (twt_max_error (yn, y1) != 0)
        g_error ("%s: %d threads differ from 1 by %.3g", op, nt, twt_max_error (yn, y1));
    }
}

/* LeNet-5's second convolution at batch 64 (16 5x5 filters over 6 14x14
 * planes): chunks of a few samples whose GEMMs are too small to split, so
 * the threads share the chunks (tw_conv_team) and the weight gradient sums
 * them in fixed runs (tw_conv_wgrad_groups).  Every thread count gives the
 * bits of one thread, and those agree with the float64 reference. */
static void
test_conv_team (void)
{
  conv_cfg c = { 16, 5, 5, 1, 1, 0, 0, 1, 1, 1, TRUE };
  const int64_t N = 64, C = 6, H = 14, Ho = 10;
  for (int k = 0; k < 2; k++)
    {
      tw_dtype dt = k == 0 ? TW_F32 : TW_F64;
      tw_attrs *a = conv_attrs (&c);
      g_autoptr (tw_tensor) x = twt_randn (dt, 4, (int64_t[]) { N, C, H, H }, 620);
      g_autoptr (tw_tensor) w = twt_randn (dt, 4, (int64_t[]) { c.o, C, 5, 5 }, 621);
      g_autoptr (tw_tensor) b = twt_randn (dt, 1, (int64_t[]) { c.o }, 622);
      g_autoptr (tw_tensor) dy = twt_randn (dt, 4, (int64_t[]) { N, c.o, Ho, Ho }, 623);
      check_threads ("conv2d", a, (tw_tensor *[]) { x, w, b }, 3);
      tw_attrs *ga = tw_attrs_new ();
      tw_attrs_set_ints (ga, "kernel_size", 1, (int64_t[]) { 5 });
      check_threads ("conv2d_grad_weight", ga, (tw_tensor *[]) { dy, x }, 2);
      tw_attrs *gi = tw_attrs_copy (ga);
      tw_attrs_set_int (gi, "in_h", H);
      tw_attrs_set_int (gi, "in_w", H);
      check_threads ("conv2d_grad_input", gi, (tw_tensor *[]) { dy, w }, 2);

      tw_kctx c2 = { .training = TRUE, .seed = 1, .num_threads = 2 };
      tw_tensor *dx_ref, *dw_ref;
      ref_conv_grads (&c, x, w, dy, &dx_ref, &dw_ref);
      g_autoptr (tw_tensor) dx = run1 ("conv2d_grad_input", gi, (tw_tensor *[]) { dy, w }, 2, &c2);
      g_autoptr (tw_tensor) dw = run1 ("conv2d_grad_weight", ga, (tw_tensor *[]) { dy, x }, 2, &c2);
      /* dweight sums 64 * 100 products per entry: ~sqrt(6400) * 6e-8 ~ 5e-6
       * of the largest entry in f32; 1e-4 as test_conv_chunks allows. */
      double e1 = twt_max_error (dx, dx_ref), e2 = twt_max_error (dw, dw_ref);
      if (!(e1 < (k == 0 ? TOL_F32 : TOL_F64)) || !(e2 < (k == 0 ? 1e-4 : TOL_F64)))
        g_error ("conv2d shared chunks %s: dx %.3g dw %.3g", tw_dtype_name (dt), e1, e2);
      tw_tensor_unref (dx_ref);
      tw_tensor_unref (dw_ref);
      tw_attrs_free (gi);
      tw_attrs_free (ga);
      tw_attrs_free (a);
    }
}

static void
test_conv_threads (void)
{
  conv_cfg c = { 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, TRUE };
  tw_attrs *a = conv_attrs (&c);
  g_autoptr (tw_tensor) x = twt_randn (TW_F32, 4, (int64_t[]) { 3, 16, 16, 16 }, 600);
  g_autoptr (tw_tensor) w = twt_randn (TW_F32, 4, (int64_t[]) { 8, 16, 3, 3 }, 601);
  g_autoptr (tw_tensor) b = twt_randn (TW_F32, 1, (int64_t[]) { 8 }, 602);
  g_autoptr (tw_tensor) dy = twt_randn (TW_F32, 4, (int64_t[]) { 3, 8, 16, 16 }, 603);
  check_threads ("conv2d", a, (tw_tensor *[]) { x, w, b }, 3);
  tw_attrs *ga = tw_attrs_new ();
  tw_attrs_set_ints (ga, "kernel_size", 1, (int64_t[]) { 3 });
  tw_attrs_set_ints (ga, "padding", 1, (int64_t[]) { 1 });
  check_threads ("conv2d_grad_weight", ga, (tw_tensor *[]) { dy, x }, 2);
  tw_attrs_set_int (ga, "in_h", 16);
  tw_attrs_set_int (ga, "in_w", 16);
  check_threads ("conv2d_grad_input", ga, (tw_tensor *[]) { dy, w }, 2);
  tw_attrs_free (ga);
  tw_attrs_free (a);

  pool_cfg pc = { 3, 3, 1, 1, 1, 1, 1, 1, FALSE };
  g_autoptr (tw_tensor) px = twt_randn (TW_F32, 4, (int64_t[]) { 4, 16, 30, 30 }, 610);
  for (int max = 0; max < 2; max++)
    {
      tw_attrs *pa = pool_attrs (&pc, max);
      check_threads (max ? "max_pool2d" : "avg_pool2d", pa, &px, 1);
      if (max)
        check_threads ("max_pool2d_grad", pa, (tw_tensor *[]) { px, px }, 2);
      tw_attrs_free (pa);
    }
  check_threads ("global_avg_pool2d", NULL, &px, 1);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  g_test_add_func ("/engine/ops/conv2d/forward", test_conv_forward);
  g_test_add_func ("/engine/ops/conv2d/depthwise", test_conv_depthwise);
  g_test_add_func ("/engine/ops/conv2d/lenet", test_conv_lenet);
  g_test_add_func ("/engine/ops/conv2d/chunks", test_conv_chunks);
  g_test_add_func ("/engine/ops/conv2d/grad", test_conv_grad);
  g_test_add_func ("/engine/ops/conv2d/errors", test_conv_errors);
  g_test_add_func ("/engine/ops/conv2d/symbolic", test_conv_symbolic);
  g_test_add_func ("/engine/ops/pool/forward", test_pool_forward);
  g_test_add_func ("/engine/ops/pool/grad", test_pool_grad);
  g_test_add_func ("/engine/ops/pool/ties", test_pool_ties);
  g_test_add_func ("/engine/ops/conv2d/threads", test_conv_threads);
  g_test_add_func ("/engine/ops/conv2d/team", test_conv_team);
  return g_test_run ();
}
