/* test-ops-nn.c — linear, matmul, embedding, dropout, softmax, log_softmax,
 * argmax: forward against naive double-precision references (guard bytes
 * around every output), backward against float64 central differences, shape
 * inference with the symbolic batch, error messages and parameter specs. */
#include "opcheck.h"

#include <math.h>
#include <string.h>

/* f32 kernels against a double reference of the same f32 inputs: each output
 * is a sum of K products rounded to f32 along the way, so the error grows
 * like K * 2^-24 relative in the worst case and like sqrt (K) * 2^-24 in
 * practice.  Measured: <= 9e-8 at K <= 13, 4.5e-7 at K = 784; 1e-5 leaves a
 * wide margin while still catching a wrong index (errors of order 1). */
#define TOL_F32 1e-5
/* f64 kernels against the same sums in another order: rounding at 2^-53. */
#define TOL_F64 1e-12
/* Central differences in float64 with eps = 1e-6 (opcheck.c): truncation
 * O(eps^2 f''') and rounding O(1e-16 / eps) both near 1e-10 for these smooth
 * ops; measured worst 3.3e-9 (matmul with broadcast batches). */
#define TOL_GRAD 1e-6

static void
check_grad (const char *op, const tw_attrs *a, tw_tensor *const *in, int n_in,
            const gboolean *wrt, const tw_kctx *ctx)
{
  double err = twt_grad_check (op, a, in, n_in, wrt, 0, ctx);
  g_test_message ("%s: gradient error %.3g (tolerance %.3g)", op, err, TOL_GRAD);
  if (!(err < TOL_GRAD))
    g_error ("%s: gradient error %.3g exceeds %.3g", op, err, TOL_GRAD);
}

static tw_tensor *
run1 (const char *op, const tw_attrs *a, tw_tensor *const *in, int n_in)
{
  tw_tensor *out[TW_MAX_OUTPUTS] = { 0 };
  twt_run_guarded (op, a, in, n_in, out, NULL);
  return out[0];
}

static tw_tensor *
run1_ctx (const char *op, const tw_attrs *a, tw_tensor *const *in, int n_in, const tw_kctx *ctx)
{
  tw_tensor *out[TW_MAX_OUTPUTS] = { 0 };
  twt_run_guarded (op, a, in, n_in, out, ctx);
  return out[0];
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
assert_tinfo (const tw_tinfo *t, const char *want)
{
  g_autofree char *s = tw_tinfo_to_string (t);
  g_assert_cmpstr (s, ==, want);
}

static tw_attrs *
attrs_int (const char *name, int64_t v)
{
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, name, v);
  return a;
}

static void
check_close (const char *what, const tw_tensor *got, const tw_tensor *ref, double tol)
{
  double err = twt_max_error (got, ref);
  g_test_message ("%s: error %.3g (tolerance %.3g)", what, err, tol);
  if (!(err < tol))
    g_error ("%s: error %.3g exceeds %.3g", what, err, tol);
}

/* ---- linear ------------------------------------------------------------------ */

/* y (M, N) = x (M, K) w (N, K)^T + b (N), all in double. */
static tw_tensor *
ref_linear (const tw_tensor *x, const tw_tensor *w, const tw_tensor *b)
{
  int64_t K = w->shape[1], N = w->shape[0], M = tw_tensor_numel (x) / K;
  int64_t shape[TW_MAX_DIMS];
  memcpy (shape, x->shape, sizeof shape);
  shape[x->ndim - 1] = N;
  tw_tensor *y = tw_tensor_new (TW_F64, x->ndim, shape);
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++)
      {
        double s = b ? tw_tensor_get_flat (b, n) : 0;
        for (int64_t k = 0; k < K; k++)
          s += tw_tensor_get_flat (x, m * K + k) * tw_tensor_get_flat (w, n * K + k);
        tw_tensor_f64 (y)[m * N + n] = s;
      }
  return y;
}

static void
test_linear_forward (void)
{
  static const struct
  {
    int ndim;
    int64_t x[3];
    int64_t out;
  } cases[] = {
    { 2, { 5, 7 }, 3 },
    { 2, { 1, 13 }, 1 },        /* batch 1, one output */
    { 3, { 2, 3, 5 }, 4 },      /* extra leading dim */
    { 2, { 64, 784 }, 256 },    /* the MLP's first layer */
  };
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    for (int dt = 0; dt < 2; dt++)
      for (int bias = 0; bias < 2; bias++)
        {
          tw_dtype dtype = dt ? TW_F64 : TW_F32;
          int64_t K = cases[c].x[cases[c].ndim - 1], N = cases[c].out;
          g_autoptr (tw_tensor) x = twt_randn (dtype, cases[c].ndim, cases[c].x, 1 + c);
          g_autoptr (tw_tensor) w = twt_uniform (dtype, 2, (int64_t[]) { N, K }, 2 + c, -0.5, 0.5);
          g_autoptr (tw_tensor) b = twt_randn (dtype, 1, &N, 3 + c);
          tw_attrs *a = attrs_int ("out_features", N);
          tw_attrs_set_bool (a, "bias", bias);
          tw_tensor *in[3] = { x, w, b };
          g_autoptr (tw_tensor) y = run1 ("linear", a, in, bias ? 3 : 2);
          g_autoptr (tw_tensor) ref = ref_linear (x, w, bias ? b : NULL);
          g_autofree char *what = g_strdup_printf ("linear case %u %s bias %d", c,
                                                   tw_dtype_name (dtype), bias);
          check_close (what, y, ref, dt ? TOL_F64 : TOL_F32);
          tw_attrs_free (a);
        }
}

static void
test_linear_grad (void)
{
  for (int bias = 0; bias < 2; bias++)
    for (int rank = 2; rank <= 3; rank++)
      {
        int64_t xs[3] = { 2, 4, 5 };
        g_autoptr (tw_tensor) x = twt_randn (TW_F64, rank, rank == 2 ? xs + 1 : xs, 11);
        g_autoptr (tw_tensor) w = twt_randn (TW_F64, 2, (int64_t[]) { 3, 5 }, 12);
        g_autoptr (tw_tensor) b = twt_randn (TW_F64, 1, (int64_t[]) { 3 }, 13);
        tw_attrs *a = attrs_int ("out_features", 3);
        tw_attrs_set_bool (a, "bias", bias);
        tw_tensor *in[3] = { x, w, b };
        gboolean wrt[3] = { TRUE, TRUE, TRUE };
        check_grad ("linear", a, in, bias ? 3 : 2, wrt, NULL);
        /* Only the weight, as for a first layer fed by data. */
        gboolean wrt_w[3] = { FALSE, TRUE, FALSE };
        check_grad ("linear", a, in, bias ? 3 : 2, wrt_w, NULL);
        tw_attrs_free (a);
      }
}

static void
test_linear_infer (void)
{
  tw_attrs *a = attrs_int ("out_features", 256);
  tw_tinfo out;
  g_autoptr (GError) error = NULL;

  tw_tinfo ok[3] = { ti (TW_F32, 2, TW_DIM_N, (int64_t) 784), ti (TW_F32, 2, (int64_t) 256,
                                                                   (int64_t) 784),
                     ti (TW_F32, 1, (int64_t) 256) };
  g_assert_true (twt_infer ("linear", a, ok, 3, &out, &error));
  assert_tinfo (&out, "f32[N, 256]");
  g_assert_true (twt_infer ("linear", a, ok, 1, &out, &error));   /* before params exist */
  assert_tinfo (&out, "f32[N, 256]");
  tw_tinfo ok3[3] = { ti (TW_F64, 3, TW_DIM_N, (int64_t) 7, (int64_t) 784),
                      ti (TW_F64, 2, (int64_t) 256, (int64_t) 784), ti (TW_F64, 1, (int64_t) 256) };
  g_assert_true (twt_infer ("linear", a, ok3, 3, &out, &error));
  assert_tinfo (&out, "f64[N, 7, 256]");

  tw_tinfo bad_in[3] = { ti (TW_F32, 2, TW_DIM_N, (int64_t) 100), ok[1], ok[2] };
  twt_assert_infer_error ("linear", a, bad_in, 3, "[..., 784] (in_features from the weight)",
                      "got f32[N, 100]");
  tw_tinfo bad_w[3] = { ok[0], ti (TW_F32, 2, (int64_t) 128, (int64_t) 784), ok[2] };
  twt_assert_infer_error ("linear", a, bad_w, 3, "weight of shape f32[256, in_features]",
                      "got f32[128, 784]");
  tw_tinfo bad_b[3] = { ok[0], ok[1], ti (TW_F32, 2, (int64_t) 1, (int64_t) 256) };
  twt_assert_infer_error ("linear", a, bad_b, 3, "bias of shape f32[256]", "got f32[1, 256]");
  tw_tinfo bad_dt[3] = { ti (TW_I64, 2, TW_DIM_N, (int64_t) 784), ok[1], ok[2] };
  twt_assert_infer_error ("linear", a, bad_dt, 3, "f32 or f64", "got i64[N, 784]");
  tw_tinfo scalar[1] = { ti (TW_F32, 0) };
  twt_assert_infer_error ("linear", a, scalar, 1, "[..., in_features]", "got f32[]");
  twt_assert_infer_error ("linear", a, ok, 2, "x, weight and bias", "got 2 inputs");
  tw_attrs_set_bool (a, "bias", FALSE);
  twt_assert_infer_error ("linear", a, ok, 3, "x and weight", "got 3 inputs");
  tw_attrs_free (a);
}

static void
test_linear_params (void)
{
  const tw_op_def *def = tw_op_lookup ("linear");
  tw_param_spec p[TW_MAX_PARAMS];
  g_autoptr (GError) error = NULL;
  tw_attrs *a = attrs_int ("out_features", 256);
  tw_attrs *ra = tw_op_resolve_attrs (def, a, &error);
  tw_tinfo x = ti (TW_F32, 2, TW_DIM_N, (int64_t) 784);

  g_assert_cmpint (def->params (ra, &x, 1, p, &error), ==, 2);
  g_assert_no_error (error);
  g_assert_cmpstr (p[0].suffix, ==, "weight");
  assert_tinfo (&p[0].info, "f32[256, 784]");
  g_assert_cmpint (p[0].init, ==, TW_INIT_UNIFORM_FAN_IN);
  g_assert_cmpint (p[0].fan_in, ==, 784);
  g_assert_cmpint (p[0].fan_out, ==, 256);
  g_assert_true (p[0].trainable);
  g_assert_cmpstr (p[1].suffix, ==, "bias");
  assert_tinfo (&p[1].info, "f32[256]");
  g_assert_cmpint (p[1].init, ==, TW_INIT_UNIFORM_FAN_IN);
  g_assert_cmpint (p[1].fan_in, ==, 784);
  g_assert_true (p[1].trainable);
  tw_attrs_free (ra);

  /* init choice, no bias */
  tw_attrs_set_string (a, "init", "he_normal");
  ra = tw_op_resolve_attrs (def, a, &error);
  g_assert_cmpint (def->params (ra, &x, 1, p, &error), ==, 2);
  g_assert_cmpint (p[0].init, ==, TW_INIT_HE_NORMAL);
  g_assert_cmpint (p[1].init, ==, TW_INIT_ZEROS);
  tw_attrs_free (ra);
  tw_attrs_set_bool (a, "bias", FALSE);
  tw_attrs_set_string (a, "init", "xavier_uniform");
  ra = tw_op_resolve_attrs (def, a, &error);
  g_assert_cmpint (def->params (ra, &x, 1, p, &error), ==, 1);
  g_assert_cmpint (p[0].init, ==, TW_INIT_XAVIER_UNIFORM);
  tw_attrs_free (ra);

  /* a bad init name is refused by the schema */
  tw_attrs_set_string (a, "init", "orthogonal");
  g_assert_null (tw_op_resolve_attrs (def, a, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR);
  g_clear_error (&error);
  tw_attrs_free (a);

  /* in_features must be known */
  a = attrs_int ("out_features", 10);
  ra = tw_op_resolve_attrs (def, a, &error);
  tw_tinfo sym = ti (TW_F32, 2, (int64_t) 3, TW_DIM_N);
  g_assert_cmpint (def->params (ra, &sym, 1, p, &error), ==, -1);
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE);
  tw_attrs_free (ra);
  tw_attrs_free (a);
}

static void
test_linear_cost (void)
{
  const tw_op_def *def = tw_op_lookup ("linear");
  tw_attrs *a = attrs_int ("out_features", 256);
  tw_tinfo in[3] = { ti (TW_F32, 2, (int64_t) 64, (int64_t) 784),
                     ti (TW_F32, 2, (int64_t) 256, (int64_t) 784), ti (TW_F32, 1, (int64_t) 256) };
  tw_tinfo out = ti (TW_F32, 2, (int64_t) 64, (int64_t) 256);
  tw_cost c = { 0 };
  def->cost (a, in, 3, &out, 1, &c);
  g_assert_cmpfloat (c.flops, ==, 2.0 * 64 * 784 * 256 + 64 * 256);
  g_assert_cmpfloat (c.bytes_written, ==, 4.0 * 64 * 256);
  g_assert_cmpfloat (c.bytes_read, ==, 4.0 * (64 * 784 + 256 * 784 + 256));
  tw_attrs_free (a);
}

/* The bias gradient's column sums: same bits for 1 and 4 threads on a batch
 * large enough to go parallel (M N > 32768). */
static void
test_linear_grad_bias_threads (void)
{
  const tw_op_def *def = tw_op_lookup ("linear_grad_bias");
  g_autoptr (tw_tensor) dy = twt_randn (TW_F32, 2, (int64_t[]) { 300, 700 }, 21);
  tw_tensor *o1 = NULL, *o4 = NULL;
  tw_kctx c1 = { .num_threads = 1 }, c4 = { .num_threads = 4 };
  g_assert_true (tw_op_run (def, &c1, NULL, &dy, 1, &o1, NULL));
  g_assert_true (tw_op_run (def, &c4, NULL, &dy, 1, &o4, NULL));
  g_assert_cmpmem (tw_tensor_data (o1), 700 * 4, tw_tensor_data (o4), 700 * 4);
  tw_tensor_unref (o1);
  tw_tensor_unref (o4);
}

/* Empty sizes: every output element is still written (guard runs fill the
 * outputs with 0x5A bytes first, so a skipped write shows). */
static void
test_linear_empty (void)
{
  g_autoptr (tw_tensor) x0 = twt_randn (TW_F32, 2, (int64_t[]) { 3, 0 }, 1);
  g_autoptr (tw_tensor) w0 = twt_randn (TW_F32, 2, (int64_t[]) { 4, 0 }, 2);
  g_autoptr (tw_tensor) b = twt_randn (TW_F32, 1, (int64_t[]) { 4 }, 3);
  tw_attrs *a = attrs_int ("out_features", 4);
  tw_tensor *in[3] = { x0, w0, b };
  g_autoptr (tw_tensor) y = run1 ("linear", a, in, 3);       /* K = 0: y = bias */
  for (int64_t i = 0; i < 12; i++)
    g_assert_cmpfloat (tw_tensor_f32 (y)[i], ==, tw_tensor_f32 (b)[i % 4]);
  tw_attrs_set_bool (a, "bias", FALSE);
  g_autoptr (tw_tensor) y0 = run1 ("linear", a, in, 2);      /* K = 0, no bias: zeros */
  for (int64_t i = 0; i < 12; i++)
    g_assert_cmpfloat (tw_tensor_f32 (y0)[i], ==, 0.0f);

  /* M = 0: the weight gradient is zero. */
  g_autoptr (tw_tensor) dy = twt_randn (TW_F32, 2, (int64_t[]) { 0, 4 }, 4);
  g_autoptr (tw_tensor) x = twt_randn (TW_F32, 2, (int64_t[]) { 0, 5 }, 5);
  tw_tensor *gin[2] = { dy, x };
  g_autoptr (tw_tensor) dw = run1 ("linear_grad_weight", NULL, gin, 2);
  g_autoptr (tw_tensor) db = run1 ("linear_grad_bias", NULL, gin, 1);
  for (int64_t i = 0; i < 20; i++)
    g_assert_cmpfloat (tw_tensor_f32 (dw)[i], ==, 0.0f);
  for (int64_t i = 0; i < 4; i++)
    g_assert_cmpfloat (tw_tensor_f32 (db)[i], ==, 0.0f);

  /* matmul with K = 0 and its gradients on an empty batch. */
  g_autoptr (tw_tensor) ma = twt_randn (TW_F64, 2, (int64_t[]) { 2, 0 }, 6);
  g_autoptr (tw_tensor) mb = twt_randn (TW_F64, 2, (int64_t[]) { 0, 3 }, 7);
  tw_tensor *min[2] = { ma, mb };
  g_autoptr (tw_tensor) my = run1 ("matmul", NULL, min, 2);
  for (int64_t i = 0; i < 6; i++)
    g_assert_cmpfloat (tw_tensor_f64 (my)[i], ==, 0.0);
  g_autoptr (tw_tensor) ba = twt_randn (TW_F64, 3, (int64_t[]) { 2, 0, 4 }, 8);
  g_autoptr (tw_tensor) bb = twt_randn (TW_F64, 3, (int64_t[]) { 1, 4, 3 }, 9);
  g_autoptr (tw_tensor) bdy = twt_randn (TW_F64, 3, (int64_t[]) { 2, 0, 3 }, 10);
  tw_tensor *gmin[3] = { bdy, ba, bb };
  g_autoptr (tw_tensor) gb = run1 ("matmul_grad_b", NULL, gmin, 3);
  for (int64_t i = 0; i < 12; i++)
    g_assert_cmpfloat (tw_tensor_f64 (gb)[i], ==, 0.0);
  tw_attrs_free (a);
}

/* An output gradient that is absent (NULL) gives zero gradients. */
static void
test_linear_no_gout (void)
{
  const tw_op_def *def = tw_op_lookup ("linear");
  tw_kctx ctx = { .training = TRUE, .num_threads = 1 };
  g_autoptr (tw_tensor) x = twt_randn (TW_F32, 2, (int64_t[]) { 2, 3 }, 1);
  g_autoptr (tw_tensor) w = twt_randn (TW_F32, 2, (int64_t[]) { 4, 3 }, 2);
  g_autoptr (tw_tensor) b = twt_randn (TW_F32, 1, (int64_t[]) { 4 }, 3);
  tw_attrs *a = attrs_int ("out_features", 4);
  tw_emit *e = tw_eager_emit_new (&ctx);
  tw_val *in[3] = { tw_eager_emit_wrap (e, x), tw_eager_emit_wrap (e, w),
                    tw_eager_emit_wrap (e, b) };
  tw_val *vout[1] = { NULL }, *gout[1] = { NULL }, *gin[3] = { NULL };
  gboolean needs[3] = { TRUE, TRUE, TRUE };
  g_assert_true (def->backward (e, a, in, 3, vout, gout, needs, gin));
  for (int i = 0; i < 3; i++)
    {
      tw_tensor *g = tw_eager_emit_tensor (gin[i]);
      g_assert_true (tw_tensor_same_shape (g, i == 0 ? x : i == 1 ? w : b));
      for (int64_t j = 0; j < tw_tensor_numel (g); j++)
        g_assert_cmpfloat (tw_tensor_f32 (g)[j], ==, 0.0f);
    }
  tw_eager_emit_free (e);
  tw_attrs_free (a);
}

/* ---- matmul --------------------------------------------------------------------- */

/* NumPy matmul in double through broadcast views and get_flat. */
static tw_tensor *
ref_matmul (tw_tensor *a, tw_tensor *b)
{
  int64_t as[TW_MAX_DIMS], bs[TW_MAX_DIMS], bt[TW_MAX_DIMS], full[TW_MAX_DIMS],
    final[TW_MAX_DIMS];
  int ra = a->ndim, rb = b->ndim, nbt, nf = 0;
  memcpy (as, a->shape, sizeof as);
  memcpy (bs, b->shape, sizeof bs);
  if (ra == 1)
    {
      as[0] = 1;
      as[1] = a->shape[0];
      ra = 2;
    }
  if (rb == 1)
    {
      bs[1] = 1;
      rb = 2;
    }
  int64_t M = as[ra - 2], K = as[ra - 1], P = bs[rb - 1];
  g_assert_true (tw_broadcast_shapes (ra - 2, as, rb - 2, bs, &nbt, bt));
  g_autoptr (tw_tensor) a2 = tw_tensor_reshape (a, ra, as);
  g_autoptr (tw_tensor) b2 = tw_tensor_reshape (b, rb, bs);
  memcpy (full, bt, sizeof (int64_t) * nbt);
  full[nbt] = M;
  full[nbt + 1] = K;
  g_autoptr (tw_tensor) ae = tw_tensor_expand (a2, nbt + 2, full);
  full[nbt] = K;
  full[nbt + 1] = P;
  g_autoptr (tw_tensor) be = tw_tensor_expand (b2, nbt + 2, full);
  int64_t nb = 1;
  for (int i = 0; i < nbt; i++)
    nb *= final[nf++] = bt[i];
  if (a->ndim > 1)
    final[nf++] = M;
  if (b->ndim > 1)
    final[nf++] = P;
  tw_tensor *y = tw_tensor_new (TW_F64, nf, final);
  for (int64_t i = 0; i < nb; i++)
    for (int64_t m = 0; m < M; m++)
      for (int64_t p = 0; p < P; p++)
        {
          double s = 0;
          for (int64_t k = 0; k < K; k++)
            s += tw_tensor_get_flat (ae, (i * M + m) * K + k)
                 * tw_tensor_get_flat (be, (i * K + k) * P + p);
          tw_tensor_f64 (y)[(i * M + m) * P + p] = s;
        }
  return y;
}

static const struct
{
  int na, nb;
  int64_t a[4], b[4];
  const char *out;
} mm_cases[] = {
  { 2, 2, { 3, 4 }, { 4, 5 }, "[3, 5]" },
  { 3, 2, { 2, 3, 4 }, { 4, 5 }, "[2, 3, 5]" },             /* shared b: one GEMM */
  { 2, 3, { 3, 4 }, { 2, 4, 5 }, "[2, 3, 5]" },             /* shared a */
  { 3, 3, { 2, 3, 4 }, { 2, 4, 5 }, "[2, 3, 5]" },          /* batched */
  { 4, 3, { 2, 1, 3, 4 }, { 5, 4, 6 }, "[2, 5, 3, 6]" },    /* both broadcast */
  { 3, 3, { 1, 3, 4 }, { 3, 4, 2 }, "[3, 3, 2]" },
  { 1, 2, { 4 }, { 4, 5 }, "[5]" },
  { 2, 1, { 3, 4 }, { 4 }, "[3]" },
  { 1, 3, { 4 }, { 2, 4, 5 }, "[2, 5]" },
  { 3, 1, { 2, 3, 4 }, { 4 }, "[2, 3]" },
  { 1, 1, { 4 }, { 4 }, "[]" },
  { 2, 2, { 1, 1 }, { 1, 1 }, "[1, 1]" },
};

static void
test_matmul_forward (void)
{
  for (guint c = 0; c < G_N_ELEMENTS (mm_cases); c++)
    for (int dt = 0; dt < 2; dt++)
      {
        tw_dtype dtype = dt ? TW_F64 : TW_F32;
        g_autoptr (tw_tensor) a = twt_randn (dtype, mm_cases[c].na, mm_cases[c].a, 30 + c);
        g_autoptr (tw_tensor) b = twt_randn (dtype, mm_cases[c].nb, mm_cases[c].b, 60 + c);
        tw_tensor *in[2] = { a, b };
        g_autoptr (tw_tensor) y = run1 ("matmul", NULL, in, 2);
        g_autoptr (tw_tensor) ref = ref_matmul (a, b);
        g_autofree char *shape = tw_shape_to_string (y->ndim, y->shape);
        g_assert_cmpstr (shape, ==, mm_cases[c].out);
        g_autofree char *what = g_strdup_printf ("matmul case %u %s", c, tw_dtype_name (dtype));
        check_close (what, y, ref, dt ? TOL_F64 : TOL_F32);
      }
}

static void
test_matmul_grad (void)
{
  for (guint c = 0; c < G_N_ELEMENTS (mm_cases); c++)
    {
      g_autoptr (tw_tensor) a = twt_randn (TW_F64, mm_cases[c].na, mm_cases[c].a, 90 + c);
      g_autoptr (tw_tensor) b = twt_randn (TW_F64, mm_cases[c].nb, mm_cases[c].b, 120 + c);
      tw_tensor *in[2] = { a, b };
      gboolean wrt[2] = { TRUE, TRUE };
      check_grad ("matmul", NULL, in, 2, wrt, NULL);
    }
}

static void
test_matmul_infer (void)
{
  tw_tinfo out;
  g_autoptr (GError) error = NULL;
  tw_tinfo in1[2] = { ti (TW_F32, 3, TW_DIM_N, (int64_t) 3, (int64_t) 4),
                      ti (TW_F32, 2, (int64_t) 4, (int64_t) 5) };
  g_assert_true (twt_infer ("matmul", NULL, in1, 2, &out, &error));
  assert_tinfo (&out, "f32[N, 3, 5]");
  tw_tinfo in2[2] = { ti (TW_F32, 2, TW_DIM_N, (int64_t) 4),
                      ti (TW_F32, 2, (int64_t) 4, (int64_t) 5) };
  g_assert_true (twt_infer ("matmul", NULL, in2, 2, &out, &error));
  assert_tinfo (&out, "f32[N, 5]");
  tw_tinfo in3[2] = { ti (TW_F32, 3, TW_DIM_N, (int64_t) 3, (int64_t) 4),
                      ti (TW_F32, 3, (int64_t) 1, (int64_t) 4, (int64_t) 5) };
  g_assert_true (twt_infer ("matmul", NULL, in3, 2, &out, &error));
  assert_tinfo (&out, "f32[N, 3, 5]");

  tw_tinfo bad_k[2] = { ti (TW_F32, 2, (int64_t) 3, (int64_t) 4),
                        ti (TW_F32, 2, (int64_t) 5, (int64_t) 6) };
  twt_assert_infer_error ("matmul", NULL, bad_k, 2, "f32[3, 4] (K = 4)", "f32[5, 6] (K = 5)");
  tw_tinfo bad_batch[2] = { ti (TW_F32, 3, (int64_t) 2, (int64_t) 3, (int64_t) 4),
                            ti (TW_F32, 3, (int64_t) 3, (int64_t) 4, (int64_t) 5) };
  twt_assert_infer_error ("matmul", NULL, bad_batch, 2, "do not broadcast", "f32[2, 3, 4]");
  tw_tinfo bad_dt[2] = { ti (TW_F32, 2, (int64_t) 3, (int64_t) 4),
                         ti (TW_F64, 2, (int64_t) 4, (int64_t) 5) };
  twt_assert_infer_error ("matmul", NULL, bad_dt, 2, "one dtype", "f64[4, 5]");
  tw_tinfo scalar[2] = { ti (TW_F32, 0), ti (TW_F32, 1, (int64_t) 4) };
  twt_assert_infer_error ("matmul", NULL, scalar, 2, "matmul expects", "got f32[]");
}

/* ---- embedding -------------------------------------------------------------- */

static void
test_embedding_forward (void)
{
  for (int dt = 0; dt < 2; dt++)
    {
      tw_dtype dtype = dt ? TW_F64 : TW_F32;
      int64_t ishape[2] = { 3, 4 };
      g_autoptr (tw_tensor) idx = twt_randint (2, ishape, 5, 10);
      tw_tensor_i64 (idx)[0] = 9;             /* both ends of the table */
      tw_tensor_i64 (idx)[1] = 0;
      g_autoptr (tw_tensor) w = twt_randn (dtype, 2, (int64_t[]) { 10, 6 }, 6);
      tw_attrs *a = attrs_int ("num_embeddings", 10);
      tw_attrs_set_int (a, "embedding_dim", 6);
      tw_tensor *in[2] = { idx, w };
      g_autoptr (tw_tensor) y = run1 ("embedding", a, in, 2);
      g_autoptr (tw_tensor) ref = tw_tensor_new (TW_F64, 3, (int64_t[]) { 3, 4, 6 });
      for (int64_t i = 0; i < 12; i++)
        for (int64_t j = 0; j < 6; j++)
          tw_tensor_f64 (ref)[i * 6 + j] = tw_tensor_get_flat (w, tw_tensor_i64 (idx)[i] * 6 + j);
      g_assert_cmpfloat (twt_max_error (y, ref), ==, 0);     /* a copy: exact */
      tw_attrs_free (a);
    }
}

static void
test_embedding_range (void)
{
  const tw_op_def *def = tw_op_lookup ("embedding");
  g_autoptr (tw_tensor) idx = tw_tensor_zeros (TW_I64, 2, (int64_t[]) { 2, 3 });
  g_autoptr (tw_tensor) w = twt_randn (TW_F32, 2, (int64_t[]) { 5, 2 }, 1);
  tw_attrs *a = attrs_int ("num_embeddings", 5);
  tw_attrs_set_int (a, "embedding_dim", 2);
  tw_tensor *in[2] = { idx, w }, *out = NULL;
  tw_kctx ctx = { .num_threads = 1 };
  int64_t bad[2] = { 5, -1 };
  for (int k = 0; k < 2; k++)
    {
      g_autoptr (GError) error = NULL;
      tw_tensor_i64 (idx)[4] = bad[k];        /* position [1, 1] */
      g_assert_false (tw_op_run (def, &ctx, a, in, 2, &out, &error));
      g_assert_null (out);
      g_assert_nonnull (error);
      g_test_message ("%s", error->message);
      g_autofree char *want = g_strdup_printf ("index %" G_GINT64_FORMAT " at position [1, 1]",
                                               bad[k]);
      g_assert_nonnull (strstr (error->message, want));
      g_assert_nonnull (strstr (error->message, "[0, 5)"));
    }
  tw_attrs_free (a);
}

static void
test_embedding_grad (void)
{
  g_autoptr (tw_tensor) idx = twt_randint (2, (int64_t[]) { 4, 5 }, 7, 6);  /* repeats */
  g_autoptr (tw_tensor) w = twt_randn (TW_F64, 2, (int64_t[]) { 6, 3 }, 8);
  tw_attrs *a = attrs_int ("num_embeddings", 6);
  tw_attrs_set_int (a, "embedding_dim", 3);
  tw_tensor *in[2] = { idx, w };
  gboolean wrt[2] = { FALSE, TRUE };
  check_grad ("embedding", a, in, 2, wrt, NULL);
  tw_attrs_free (a);
}

static void
test_embedding_infer_params (void)
{
  const tw_op_def *def = tw_op_lookup ("embedding");
  tw_attrs *a = attrs_int ("num_embeddings", 100);
  tw_attrs_set_int (a, "embedding_dim", 16);
  tw_tinfo out;
  g_autoptr (GError) error = NULL;
  tw_tinfo in[2] = { ti (TW_I64, 2, TW_DIM_N, (int64_t) 12),
                     ti (TW_F32, 2, (int64_t) 100, (int64_t) 16) };
  g_assert_true (twt_infer ("embedding", a, in, 2, &out, &error));
  assert_tinfo (&out, "f32[N, 12, 16]");
  tw_tinfo bad_idx[2] = { ti (TW_F32, 2, TW_DIM_N, (int64_t) 12), in[1] };
  twt_assert_infer_error ("embedding", a, bad_idx, 2, "i64 indices", "got f32[N, 12]");
  tw_tinfo bad_w[2] = { in[0], ti (TW_F32, 2, (int64_t) 16, (int64_t) 100) };
  twt_assert_infer_error ("embedding", a, bad_w, 2, "weight of shape [100, 16]", "got f32[16, 100]");

  tw_param_spec p[TW_MAX_PARAMS];
  tw_attrs *ra = tw_op_resolve_attrs (def, a, &error);
  g_assert_cmpint (def->params (ra, in, 1, p, &error), ==, 1);
  g_assert_cmpstr (p[0].suffix, ==, "weight");
  assert_tinfo (&p[0].info, "f32[100, 16]");
  g_assert_cmpint (p[0].init, ==, TW_INIT_NORMAL);
  g_assert_true (p[0].trainable);
  tw_attrs_free (ra);
  tw_attrs_free (a);

  a = attrs_int ("num_embeddings", 100);
  g_assert_null (tw_op_resolve_attrs (def, a, &error));     /* embedding_dim is required */
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR);
  tw_attrs_free (a);
}

/* ---- dropout ---------------------------------------------------------------- */

static tw_tensor *
dropout_run (tw_tensor *x, double p, const tw_kctx *ctx)
{
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_float (a, "p", p);
  tw_tensor *y = run1_ctx ("dropout", a, &x, 1, ctx);
  tw_attrs_free (a);
  return y;
}

static void
test_dropout_mask (void)
{
  /* 1e5 ones, p = 0.3: kept ~ Binomial (1e5, 0.7), mean 70000, sigma
   * sqrt (1e5 * 0.7 * 0.3) = 144.9. */
  const int64_t n = 100000;
  const double p = 0.3;
  g_autoptr (tw_tensor) x = tw_tensor_new (TW_F32, 1, &n);
  tw_tensor_fill (x, 1.0);
  tw_kctx ctx = { .training = TRUE, .seed = 7, .step = 3, .node_key = tw_node_key ("drop1"),
                  .num_threads = 1 };
  g_autoptr (tw_tensor) y1 = dropout_run (x, p, &ctx);
  g_autoptr (tw_tensor) y1b = dropout_run (x, p, &ctx);
  g_assert_cmpmem (tw_tensor_data (y1), n * 4, tw_tensor_data (y1b), n * 4);

  int64_t kept = 0;
  float scale = (float) (1.0 / (1.0 - p));
  for (int64_t i = 0; i < n; i++)
    {
      float v = tw_tensor_f32 (y1)[i];
      g_assert_true (v == 0.0f || v == scale);
      kept += v != 0.0f;
    }
  double sigma = sqrt (n * p * (1 - p));
  g_test_message ("kept %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT " (expected %.0f +- %.0f)",
                  kept, n, n * (1 - p), sigma);
  g_assert_cmpfloat (fabs ((double) kept - n * (1 - p)), <, 3 * sigma);

  /* Threads do not change the mask (n > the parallel threshold). */
  tw_kctx ctx4 = ctx;
  ctx4.num_threads = 4;
  g_autoptr (tw_tensor) y4 = dropout_run (x, p, &ctx4);
  g_assert_cmpmem (tw_tensor_data (y1), n * 4, tw_tensor_data (y4), n * 4);

  /* Another step, another node, another seed: other masks. */
  tw_kctx other[3] = { ctx, ctx, ctx };
  other[0].step = 4;
  other[1].node_key = tw_node_key ("drop2");
  other[2].seed = 8;
  for (int k = 0; k < 3; k++)
    {
      g_autoptr (tw_tensor) y2 = dropout_run (x, p, &other[k]);
      int64_t differ = 0;
      for (int64_t i = 0; i < n; i++)
        differ += (tw_tensor_f32 (y1)[i] == 0) != (tw_tensor_f32 (y2)[i] == 0);
      /* independent masks differ with probability 2 p (1 - p) = 0.42 */
      g_assert_cmpint (differ, >, n / 3);
    }

  /* Eval mode and p = 0 are the identity; p = 1 drops everything. */
  g_autoptr (tw_tensor) xr = twt_randn (TW_F32, 1, &n, 9);
  tw_kctx eval = ctx;
  eval.training = FALSE;
  g_autoptr (tw_tensor) ye = dropout_run (xr, p, &eval);
  g_assert_cmpmem (tw_tensor_data (ye), n * 4, tw_tensor_data (xr), n * 4);
  g_autoptr (tw_tensor) y0 = dropout_run (xr, 0, &ctx);
  g_assert_cmpmem (tw_tensor_data (y0), n * 4, tw_tensor_data (xr), n * 4);
  g_autoptr (tw_tensor) yall = dropout_run (xr, 1, &ctx);
  for (int64_t i = 0; i < n; i++)
    g_assert_cmpfloat (tw_tensor_f32 (yall)[i], ==, 0.0f);
}

static void
test_dropout_grad (void)
{
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_float (a, "p", 0.4);
  g_autoptr (tw_tensor) x = twt_randn (TW_F64, 2, (int64_t[]) { 7, 9 }, 10);
  tw_kctx ctx = { .training = TRUE, .seed = 3, .step = 11, .node_key = 99, .num_threads = 1 };
  gboolean wrt[1] = { TRUE };
  check_grad ("dropout", a, &x, 1, wrt, &ctx);
  ctx.training = FALSE;
  check_grad ("dropout", a, &x, 1, wrt, &ctx);

  /* dropout_grad applies the forward's mask and scale: dx = y / x * dy. */
  ctx.training = TRUE;
  g_autoptr (tw_tensor) y = dropout_run (x, 0.4, &ctx);
  g_autoptr (tw_tensor) dy = twt_randn (TW_F64, 2, (int64_t[]) { 7, 9 }, 12);
  g_autoptr (tw_tensor) dx = run1_ctx ("dropout_grad", a, &dy, 1, &ctx);
  for (int64_t i = 0; i < 63; i++)
    {
      double want = tw_tensor_f64 (y)[i] == 0 ? 0
                    : tw_tensor_f64 (dy)[i] / 0.6;
      g_assert_cmpfloat (fabs (tw_tensor_f64 (dx)[i] - want), <, 1e-15 * (1 + fabs (want)));
    }
  tw_attrs_free (a);
}

static void
test_dropout_infer (void)
{
  tw_tinfo in = ti (TW_F32, 2, TW_DIM_N, (int64_t) 128), out;
  g_autoptr (GError) error = NULL;
  g_assert_true (twt_infer ("dropout", NULL, &in, 1, &out, &error));
  assert_tinfo (&out, "f32[N, 128]");
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_float (a, "p", 1.5);
  twt_assert_infer_error ("dropout", a, &in, 1, "p must lie in [0, 1]", "1.5");
  tw_attrs_free (a);
  g_assert_true (tw_op_lookup ("dropout")->flags & TW_OP_RANDOM);
}

/* ---- softmax, log_softmax ------------------------------------------------------ */

static tw_tensor *
ref_softmax (const tw_tensor *x, int axis, gboolean log_out)
{
  int64_t outer = 1, L = x->shape[axis], inner = 1;
  for (int d = 0; d < axis; d++)
    outer *= x->shape[d];
  for (int d = axis + 1; d < x->ndim; d++)
    inner *= x->shape[d];
  tw_tensor *y = tw_tensor_new (TW_F64, x->ndim, x->shape);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < inner; j++)
      {
        double m = -INFINITY, s = 0;
        for (int64_t l = 0; l < L; l++)
          m = fmax (m, tw_tensor_get_flat (x, (o * L + l) * inner + j));
        for (int64_t l = 0; l < L; l++)
          s += exp (tw_tensor_get_flat (x, (o * L + l) * inner + j) - m);
        for (int64_t l = 0; l < L; l++)
          {
            double v = tw_tensor_get_flat (x, (o * L + l) * inner + j) - m;
            tw_tensor_f64 (y)[(o * L + l) * inner + j] = log_out ? v - log (s) : exp (v) / s;
          }
      }
  return y;
}

static void
test_softmax_forward (void)
{
  static const char *const ops[2] = { "softmax", "log_softmax" };
  int64_t shape[3] = { 3, 4, 5 };
  for (int op = 0; op < 2; op++)
    for (int dt = 0; dt < 2; dt++)
      for (int axis = -1; axis < 3; axis++)
        {
          tw_dtype dtype = dt ? TW_F64 : TW_F32;
          g_autoptr (tw_tensor) x = twt_randn (dtype, 3, shape, 40 + axis);
          /* Logits near 1000 overflow a naive exp. */
          if (axis == 0)
            for (int64_t i = 0; i < 60; i++)
              tw_tensor_set_flat (x, i, tw_tensor_get_flat (x, i) * 3 + 1000);
          tw_attrs *a = attrs_int ("axis", axis);
          g_autoptr (tw_tensor) y = run1 (ops[op], a, &x, 1);
          g_autoptr (tw_tensor) ref = ref_softmax (x, axis < 0 ? 2 : axis, op == 1);
          g_autofree char *what = g_strdup_printf ("%s axis %d %s", ops[op], axis,
                                                   tw_dtype_name (dtype));
          check_close (what, y, ref, dt ? TOL_F64 : TOL_F32);
          tw_attrs_free (a);
        }
}

static void
test_softmax_grad (void)
{
  static const char *const ops[2] = { "softmax", "log_softmax" };
  int64_t shape[3] = { 2, 3, 5 };
  for (int op = 0; op < 2; op++)
    for (int axis = -1; axis < 3; axis++)
      {
        g_autoptr (tw_tensor) x = twt_randn (TW_F64, 3, shape, 50 + axis);
        tw_attrs *a = attrs_int ("axis", axis);
        gboolean wrt[1] = { TRUE };
        check_grad (ops[op], a, &x, 1, wrt, NULL);
        tw_attrs_free (a);
      }
}

static void
test_softmax_infer (void)
{
  tw_tinfo in = ti (TW_F32, 2, TW_DIM_N, (int64_t) 10), out;
  g_autoptr (GError) error = NULL;
  g_assert_true (twt_infer ("softmax", NULL, &in, 1, &out, &error));
  assert_tinfo (&out, "f32[N, 10]");
  g_assert_true (twt_infer ("log_softmax", NULL, &in, 1, &out, &error));
  assert_tinfo (&out, "f32[N, 10]");
  tw_attrs *a = attrs_int ("axis", 2);
  twt_assert_infer_error ("softmax", a, &in, 1, "axis 2 is out of range", "f32[N, 10]");
  tw_attrs_free (a);
  tw_tinfo iin = ti (TW_I64, 1, (int64_t) 3);
  twt_assert_infer_error ("log_softmax", NULL, &iin, 1, "f32 or f64", "got i64[3]");
}

/* ---- argmax ------------------------------------------------------------------ */

static void
test_argmax (void)
{
  /* (2, 3) with a tie in row 0 (first index wins). */
  double xv[6] = { 1, 5, 5, -3, -1, -2 };
  g_autoptr (tw_tensor) x = tw_tensor_new (TW_F64, 2, (int64_t[]) { 2, 3 });
  memcpy (tw_tensor_f64 (x), xv, sizeof xv);
  g_autoptr (tw_tensor) y = run1 ("argmax", NULL, &x, 1);
  g_assert_cmpint (y->ndim, ==, 1);
  g_assert_cmpint (tw_tensor_i64 (y)[0], ==, 1);
  g_assert_cmpint (tw_tensor_i64 (y)[1], ==, 1);
  tw_attrs *a = attrs_int ("axis", 0);
  tw_attrs_set_bool (a, "keepdims", TRUE);
  g_autoptr (tw_tensor) y0 = run1 ("argmax", a, &x, 1);
  g_assert_cmpint (y0->ndim, ==, 2);
  g_assert_cmpint (y0->shape[0], ==, 1);
  g_assert_cmpint (tw_tensor_i64 (y0)[0], ==, 0);
  g_assert_cmpint (tw_tensor_i64 (y0)[1], ==, 0);
  g_assert_cmpint (tw_tensor_i64 (y0)[2], ==, 0);

  /* f32 against a naive search, middle axis. */
  g_autoptr (tw_tensor) r = twt_randn (TW_F32, 3, (int64_t[]) { 3, 7, 4 }, 77);
  tw_attrs *a1 = attrs_int ("axis", 1);
  g_autoptr (tw_tensor) yr = run1 ("argmax", a1, &r, 1);
  for (int o = 0; o < 3; o++)
    for (int j = 0; j < 4; j++)
      {
        int best = 0;
        for (int l = 1; l < 7; l++)
          if (tw_tensor_f32 (r)[(o * 7 + l) * 4 + j] > tw_tensor_f32 (r)[(o * 7 + best) * 4 + j])
            best = l;
        g_assert_cmpint (tw_tensor_i64 (yr)[o * 4 + j], ==, best);
      }

  tw_tinfo in = ti (TW_F32, 2, TW_DIM_N, (int64_t) 10), out;
  g_autoptr (GError) error = NULL;
  g_assert_true (twt_infer ("argmax", NULL, &in, 1, &out, &error));
  assert_tinfo (&out, "i64[N]");
  g_assert_null (tw_op_lookup ("argmax")->backward);
  tw_attrs_free (a);
  tw_attrs_free (a1);
}

/* Every op of the family is registered with the flags the palette reads. */
static void
test_registry (void)
{
  static const char *const pub[] = { "linear", "matmul", "embedding", "dropout", "softmax",
                                     "log_softmax", "argmax" };
  static const char *const internal[] = { "linear_grad_input", "linear_grad_weight",
                                          "linear_grad_bias", "matmul_grad_a", "matmul_grad_b",
                                          "embedding_grad", "dropout_grad", "softmax_grad",
                                          "log_softmax_grad", "nn_zeros_like" };
  for (guint i = 0; i < G_N_ELEMENTS (pub); i++)
    {
      const tw_op_def *d = tw_op_lookup (pub[i]);
      g_assert_nonnull (d);
      g_assert_false (d->flags & TW_OP_INTERNAL);
      g_assert_nonnull (d->doc);
      g_assert_nonnull (d->cost);
    }
  for (guint i = 0; i < G_N_ELEMENTS (internal); i++)
    {
      const tw_op_def *d = tw_op_lookup (internal[i]);
      g_assert_nonnull (d);
      g_assert_true (d->flags & TW_OP_INTERNAL);
      g_assert_nonnull (d->forward);
    }
  g_assert_cmpstr (tw_op_lookup ("linear")->onnx_name, ==, "Gemm");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  g_test_add_func ("/engine/ops/nn/registry", test_registry);
  g_test_add_func ("/engine/ops/linear/forward", test_linear_forward);
  g_test_add_func ("/engine/ops/linear/grad", test_linear_grad);
  g_test_add_func ("/engine/ops/linear/infer", test_linear_infer);
  g_test_add_func ("/engine/ops/linear/params", test_linear_params);
  g_test_add_func ("/engine/ops/linear/cost", test_linear_cost);
  g_test_add_func ("/engine/ops/linear/grad-bias-threads", test_linear_grad_bias_threads);
  g_test_add_func ("/engine/ops/linear/no-output-grad", test_linear_no_gout);
  g_test_add_func ("/engine/ops/linear/empty", test_linear_empty);
  g_test_add_func ("/engine/ops/matmul/forward", test_matmul_forward);
  g_test_add_func ("/engine/ops/matmul/grad", test_matmul_grad);
  g_test_add_func ("/engine/ops/matmul/infer", test_matmul_infer);
  g_test_add_func ("/engine/ops/embedding/forward", test_embedding_forward);
  g_test_add_func ("/engine/ops/embedding/range", test_embedding_range);
  g_test_add_func ("/engine/ops/embedding/grad", test_embedding_grad);
  g_test_add_func ("/engine/ops/embedding/infer-params", test_embedding_infer_params);
  g_test_add_func ("/engine/ops/dropout/mask", test_dropout_mask);
  g_test_add_func ("/engine/ops/dropout/grad", test_dropout_grad);
  g_test_add_func ("/engine/ops/dropout/infer", test_dropout_infer);
  g_test_add_func ("/engine/ops/softmax/forward", test_softmax_forward);
  g_test_add_func ("/engine/ops/softmax/grad", test_softmax_grad);
  g_test_add_func ("/engine/ops/softmax/infer", test_softmax_infer);
  g_test_add_func ("/engine/ops/argmax", test_argmax);
  return g_test_run ();
}
