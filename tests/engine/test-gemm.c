/* test-gemm.c — tw_gemm_f32 / tw_gemm_f32_ex (engine/cpu/gemm.h) against
 * the double-precision naive reference tw_gemm_f32_ref: every trans
 * combination, every size 1..67 in each dimension (around the 14 × 32
 * micro-tile), K = 0 and 1, K across several K blocks, padded leading
 * dimensions, alpha/beta (beta = 0 over NaNs), the fused epilogue, the MLP
 * and LeNet shapes, guard floats around C, bitwise identity between 1 and 2
 * threads, and the OpenBLAS fallback under the same tolerance.
 *
 * The kernel reads A and B only through masked AVX-512 loads, which ASan
 * does not instrument, so inputs are placed to end exactly where an
 * inaccessible page begins (the last row without padding): a read one float
 * past op(A) or op(B) faults.  (Masked-off lanes never fault.) */
#include "engine/cpu/gemm.h"

#include <math.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Error of a result against the reference, normalised by the largest
 * reference value: max |c - ref| / max |ref|.  Each output is a sum of K
 * products accumulated in f32 (fused multiply-adds, in blocks of at most 512
 * along K), so its rounding error is at most about K · 2^-24 relative to the
 * sum of |products| and, for random signs, grows like sqrt (K) · 2^-24
 * relative to the result; alpha, beta, bias and the activation add a few
 * more roundings of 2^-24 each.  Hence the tolerance 4 · sqrt (K) · 2^-24 +
 * 8 · 2^-24: 1.2e-6 at K = 1, 7.2e-6 at K = 784, 1.6e-5 at K = 4096 (measured
 * worst: 1.1e-6).  A wrong index or
 * a missed tile gives errors of order 1. */
static double
tolerance (int64_t K)
{
  return (4.0 * sqrt ((double) K) + 8.0) * 0x1p-24;
}

/* Guard floats on each side of C and in the padding of its rows. */
#define GUARD 64
static const guint32 CANARY = 0x7fc0dead; /* a quiet NaN no kernel produces */

typedef struct
{
  gboolean ta, tb;
  int64_t M, N, K;
  int64_t pad_a, pad_b, pad_c; /* extra floats at the end of each stored row */
  float alpha, beta;
} problem;

typedef struct
{
  float *a, *b;
  int64_t na, nb; /* floats in a and b */
  int64_t lda, ldb, ldc;
  float *cbuf; /* GUARD + M · ldc + GUARD */
  float *c;    /* cbuf + GUARD */
} operands;

static float
canary (void)
{
  float f;
  memcpy (&f, &CANARY, sizeof f);
  return f;
}

/* n floats that end where a PROT_NONE page starts; free with block_free. */
static float *
block_new (int64_t n)
{
  size_t page = (size_t) sysconf (_SC_PAGESIZE);
  size_t bytes = (size_t) n * sizeof (float);
  size_t data_pages = (bytes + page - 1) / page;
  size_t len = (data_pages + 1) * page;
  char *base = mmap (NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  g_assert_true (base != MAP_FAILED);
  g_assert_cmpint (mprotect (base + data_pages * page, page, PROT_NONE), ==, 0);
  return (float *) (base + data_pages * page - bytes);
}

static void
block_free (float *p, int64_t n)
{
  size_t page = (size_t) sysconf (_SC_PAGESIZE);
  size_t bytes = (size_t) n * sizeof (float);
  size_t data_pages = (bytes + page - 1) / page;
  char *end = (char *) p + bytes;
  munmap (end - data_pages * page, (data_pages + 1) * page);
}

static int64_t
block_size (int64_t rows, int64_t cols, int64_t ld)
{
  /* (rows - 1) · ld + cols floats: the last row has no padding. */
  return rows > 0 ? (rows - 1) * ld + cols : 0;
}

static float *
random_block (GRand *r, int64_t rows, int64_t cols, int64_t ld)
{
  int64_t n = block_size (rows, cols, ld);
  float *p = block_new (n);
  for (int64_t i = 0; i < n; i++)
    p[i] = (float) g_rand_double_range (r, -1.0, 1.0);
  return p;
}

/* c_init: 'r' random, 'n' NaN. */
static void
operands_init (operands *o, const problem *p, guint32 seed, char c_init)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (seed);
  int64_t a_rows = p->ta ? p->K : p->M, a_cols = p->ta ? p->M : p->K;
  int64_t b_rows = p->tb ? p->N : p->K, b_cols = p->tb ? p->K : p->N;
  o->lda = MAX (a_cols + p->pad_a, 1);
  o->ldb = MAX (b_cols + p->pad_b, 1);
  o->ldc = p->N + p->pad_c;
  o->a = random_block (r, a_rows, a_cols, o->lda);
  o->b = random_block (r, b_rows, b_cols, o->ldb);
  o->na = block_size (a_rows, a_cols, o->lda);
  o->nb = block_size (b_rows, b_cols, o->ldb);
  o->cbuf = g_new (float, 2 * GUARD + p->M * o->ldc);
  o->c = o->cbuf + GUARD;
  for (int64_t i = 0; i < 2 * GUARD + p->M * o->ldc; i++)
    o->cbuf[i] = canary ();
  for (int64_t i = 0; i < p->M; i++)
    for (int64_t j = 0; j < p->N; j++)
      o->c[i * o->ldc + j]
        = c_init == 'n' ? NAN : (float) g_rand_double_range (r, -1.0, 1.0);
}

static void
operands_clear (operands *o)
{
  block_free (o->a, o->na);
  block_free (o->b, o->nb);
  g_free (o->cbuf);
}

static void
check_guards (const problem *p, const operands *o, const char *what)
{
  for (int64_t i = 0; i < 2 * GUARD + p->M * o->ldc; i++)
    {
      int64_t off = i - GUARD;
      gboolean inside = off >= 0 && off < p->M * o->ldc && off % o->ldc < p->N;
      guint32 bits;
      memcpy (&bits, &o->cbuf[i], sizeof bits);
      if (!inside && bits != CANARY)
        g_error ("%s: guard float at offset %" G_GINT64_FORMAT " of C overwritten", what, off);
    }
}

static double
max_error (const float *c, const float *ref, int64_t M, int64_t N, int64_t ldc)
{
  double err = 0, scale = 0;
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++)
      {
        double d = fabs ((double) c[i * ldc + j] - ref[i * ldc + j]);
        err = isnan (c[i * ldc + j]) != isnan (ref[i * ldc + j]) ? INFINITY : MAX (err, d);
        scale = MAX (scale, fabs (ref[i * ldc + j]));
      }
  return scale > 0 ? err / scale : err;
}

/* Runs p through tw_gemm_f32_ex and the reference; asserts the error bound
 * and the guards.  Returns the error. */
static double
check_problem (const problem *p, const tw_gemm_epilogue *ep, guint32 seed, char c_init)
{
  operands o;
  operands_init (&o, p, seed, c_init);
  g_autofree float *ref = g_memdup2 (o.c, sizeof (float) * MAX (p->M * o.ldc, 1));
  g_autofree char *what
    = g_strdup_printf ("%c%c M=%" G_GINT64_FORMAT " N=%" G_GINT64_FORMAT " K=%" G_GINT64_FORMAT
                       " alpha=%g beta=%g pads=%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                       ",%" G_GINT64_FORMAT " act=%d",
                       p->ta ? 'T' : 'N', p->tb ? 'T' : 'N', p->M, p->N, p->K, p->alpha, p->beta,
                       p->pad_a, p->pad_b, p->pad_c, ep ? (int) ep->act : -1);

  tw_gemm_f32_ref (p->ta, p->tb, p->M, p->N, p->K, p->alpha, o.a, o.lda, o.b, o.ldb, p->beta, ref,
                   o.ldc, ep);
  tw_gemm_f32_ex (p->ta, p->tb, p->M, p->N, p->K, p->alpha, o.a, o.lda, o.b, o.ldb, p->beta, o.c,
                  o.ldc, ep);
  check_guards (p, &o, what);
  double err = max_error (o.c, ref, p->M, p->N, o.ldc);
  if (!(err <= tolerance (p->K)))
    g_error ("%s: error %.3g exceeds %.3g", what, err, tolerance (p->K));
  operands_clear (&o);
  return err;
}

static const float alphas[] = { 1.0f, 0.5f, 1.0f, -2.0f };
static const float betas[] = { 0.0f, 0.0f, 1.0f, 0.25f };

/* Sizes around the micro-tile (MR = 14, NR = 32, 16-float vectors). */
static const int64_t sizes[] = { 1, 2, 3, 5, 7, 8, 13, 14, 15, 16, 17, 27, 28, 29,
                                 31, 32, 33, 42, 47, 48, 63, 64, 65, 67 };

/* Every size 1..67 in each of M, N, K in turn (K from 0), the other two
 * cycling through `sizes`, for all four trans combinations, with padded
 * leading dimensions on every third problem and alpha/beta cycling. */
static void
test_sizes (void)
{
  int count = 0;
  double worst = 0;
  for (int t = 0; t < 4; t++)
    for (int dim = 0; dim < 3; dim++)
      for (int64_t s = dim == 2 ? 0 : 1; s <= 67; s++)
        {
          int64_t o1 = sizes[(s * 7 + dim) % G_N_ELEMENTS (sizes)];
          int64_t o2 = sizes[(s * 11 + 3 * t) % G_N_ELEMENTS (sizes)];
          int v = (int) ((s + t + dim) % G_N_ELEMENTS (alphas));
          int64_t pad = count % 3 == 0 ? 3 : 0;
          problem p = {
            .ta = t & 1, .tb = (t >> 1) & 1,
            .M = dim == 0 ? s : o1, .N = dim == 1 ? s : (dim == 0 ? o1 : o2),
            .K = dim == 2 ? s : o2,
            .pad_a = pad, .pad_b = 2 * pad, .pad_c = pad + (count % 2),
            .alpha = alphas[v], .beta = betas[v],
          };
          worst = MAX (worst, check_problem (&p, NULL, 1000 + count, 'r'));
          count++;
        }
  g_test_message ("%d problems, worst normalised error %.3g", count, worst);
}

/* beta = 0: C is not read, so NaNs in it must not come through; K = 0 and
 * K = 1 included. */
static void
test_beta_zero_nan (void)
{
  const int64_t ks[] = { 0, 1, 5, 300, 784 };
  for (int t = 0; t < 4; t++)
    for (guint i = 0; i < G_N_ELEMENTS (ks); i++)
      {
        problem p = { .ta = t & 1, .tb = (t >> 1) & 1, .M = 30, .N = 45, .K = ks[i],
                      .pad_c = 1, .alpha = 1.5f, .beta = 0.0f };
        check_problem (&p, NULL, 7 + i, 'n');
        tw_gemm_epilogue ep = { .act = TW_GEMM_ACT_RELU };
        check_problem (&p, &ep, 17 + i, 'n');
      }
}

/* K = 0: C = beta · C (0 · C overwrites). */
static void
test_k_zero (void)
{
  for (guint v = 0; v < G_N_ELEMENTS (alphas); v++)
    {
      problem p = { .M = 19, .N = 37, .K = 0, .pad_c = 2, .alpha = alphas[v], .beta = betas[v] };
      check_problem (&p, NULL, 3, 'r');
    }
  /* Nothing is touched when M or N is 0. */
  float c = 1.0f;
  tw_gemm_f32 (FALSE, FALSE, 0, 1, 4, 1.0f, NULL, 4, NULL, 1, 0.0f, &c, 1);
  tw_gemm_f32 (FALSE, FALSE, 1, 0, 4, 1.0f, NULL, 4, NULL, 1, 0.0f, &c, 1);
  g_assert_cmpfloat (c, ==, 1.0f);
}

/* Bias + activation (+ the pre-activation copy), over one and several K
 * blocks (K = 600 is two), with and without beta. */
static void
test_epilogue (void)
{
  const int64_t ks[] = { 1, 37, 600 };
  const tw_gemm_act acts[]
    = { TW_GEMM_ACT_NONE, TW_GEMM_ACT_RELU, TW_GEMM_ACT_LEAKY_RELU, TW_GEMM_ACT_GELU_TANH };
  g_autoptr (GRand) r = g_rand_new_with_seed (99);
  int n = 0;
  for (int t = 0; t < 4; t++)
    for (guint ki = 0; ki < G_N_ELEMENTS (ks); ki++)
      for (guint ai = 0; ai < G_N_ELEMENTS (acts); ai++, n++)
        {
          problem p = { .ta = t & 1, .tb = (t >> 1) & 1, .M = 29 + t, .N = 50 + 3 * ki,
                        .K = ks[ki], .pad_c = 3, .alpha = n % 2 ? 1.0f : 0.75f,
                        .beta = n % 3 ? 0.0f : 0.5f };
          g_autofree float *bias = g_new (float, p.N);
          for (int64_t j = 0; j < p.N; j++)
            bias[j] = (float) g_rand_double_range (r, -1.0, 1.0);
          int64_t ldpre = p.N + 5;
          g_autofree float *pre = g_new0 (float, p.M * ldpre);
          g_autofree float *pre_ref = g_new0 (float, p.M * ldpre);
          tw_gemm_epilogue ep = { .bias = n % 4 == 3 ? NULL : bias, .act = acts[ai],
                                  .slope = 0.1f, .pre = pre_ref, .ldpre = ldpre };

          /* The reference writes pre_ref; run the same problem for pre. */
          operands o;
          operands_init (&o, &p, 500 + n, 'r');
          g_autofree float *ref = g_memdup2 (o.c, sizeof (float) * p.M * o.ldc);
          tw_gemm_f32_ref (p.ta, p.tb, p.M, p.N, p.K, p.alpha, o.a, o.lda, o.b, o.ldb, p.beta,
                           ref, o.ldc, &ep);
          ep.pre = pre;
          tw_gemm_f32_ex (p.ta, p.tb, p.M, p.N, p.K, p.alpha, o.a, o.lda, o.b, o.ldb, p.beta,
                          o.c, o.ldc, &ep);
          check_guards (&p, &o, "epilogue");
          double e = max_error (o.c, ref, p.M, p.N, o.ldc);
          double ep_err = max_error (pre, pre_ref, p.M, p.N, ldpre);
          if (!(e <= tolerance (p.K) && ep_err <= tolerance (p.K)))
            g_error ("epilogue act %d K=%" G_GINT64_FORMAT ": error %.3g, pre %.3g > %.3g",
                     acts[ai], p.K, e, ep_err, tolerance (p.K));
          operands_clear (&o);
        }
}

/* A shape of the hot list, checked on a sample of rows of C (the naive
 * reference on the whole of the big ones would take seconds). */
static void
check_shape_rows (gboolean ta, gboolean tb, int64_t M, int64_t N, int64_t K, int64_t row_step,
                  const tw_gemm_epilogue *ep0)
{
  problem p = { .ta = ta, .tb = tb, .M = M, .N = N, .K = K, .alpha = 1.0f, .beta = 0.0f };
  operands o;
  operands_init (&o, &p, (guint32) (M * 31 + N * 7 + K), 'n');
  g_autofree float *ref = g_new (float, N);
  g_autofree float *bias = NULL;
  tw_gemm_epilogue ep = { 0 };
  if (ep0)
    {
      g_autoptr (GRand) r = g_rand_new_with_seed (5);
      ep = *ep0;
      bias = g_new (float, N);
      for (int64_t j = 0; j < N; j++)
        bias[j] = (float) g_rand_double_range (r, -1.0, 1.0);
      ep.bias = bias;
    }
  tw_gemm_f32_ex (ta, tb, M, N, K, 1.0f, o.a, o.lda, o.b, o.ldb, 0.0f, o.c, o.ldc,
                  ep0 ? &ep : NULL);
  check_guards (&p, &o, "shape");
  double worst = 0;
  for (int64_t i = 0; i < M; i += row_step)
    {
      const float *a_row = ta ? o.a + i : o.a + i * o.lda;
      tw_gemm_f32_ref (ta, tb, 1, N, K, 1.0f, a_row, o.lda, o.b, o.ldb, 0.0f, ref, N,
                       ep0 ? &ep : NULL);
      worst = MAX (worst, max_error (o.c + i * o.ldc, ref, 1, N, N));
    }
  g_test_message ("%c%c %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                  ": normalised error %.3g (tolerance %.3g)",
                  ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, worst, tolerance (K));
  if (!(worst <= tolerance (K)))
    g_error ("%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
             ": error %.3g exceeds %.3g", M, N, K, worst, tolerance (K));
  operands_clear (&o);
}

/* The training GEMMs (forward y = x Wᵀ: NT; dx = dy W: NN; dW = dyᵀ x: TN)
 * of the MLP 784-256-128-10 at batch 64 and 256, LeNet-5's im2col products
 * at batch 8, and the big MLP 784-4096-4096-10 at batch 256. */
static void
test_shapes (void)
{
  const int64_t layers[][2] = { { 784, 256 }, { 256, 128 }, { 128, 10 } };
  const tw_gemm_epilogue relu = { .act = TW_GEMM_ACT_RELU };
  for (int b = 64; b <= 256; b *= 4)
    for (guint l = 0; l < G_N_ELEMENTS (layers); l++)
      {
        int64_t in = layers[l][0], out = layers[l][1];
        check_shape_rows (FALSE, TRUE, b, out, in, 1, &relu);
        check_shape_rows (FALSE, FALSE, b, in, out, 1, NULL);
        check_shape_rows (TRUE, FALSE, out, in, b, 1, NULL);
      }
  check_shape_rows (FALSE, FALSE, 6, 8 * 784, 25, 1, NULL);
  check_shape_rows (FALSE, TRUE, 6, 25, 8 * 784, 1, NULL);
  check_shape_rows (TRUE, FALSE, 25, 8 * 784, 6, 1, NULL);
  check_shape_rows (FALSE, FALSE, 16, 8 * 100, 150, 1, NULL);
  check_shape_rows (FALSE, TRUE, 16, 150, 8 * 100, 1, NULL);
  check_shape_rows (TRUE, FALSE, 150, 8 * 100, 16, 1, NULL);
  check_shape_rows (FALSE, TRUE, 256, 4096, 784, 37, &relu);
  check_shape_rows (FALSE, FALSE, 256, 4096, 4096, 61, NULL);
  check_shape_rows (TRUE, FALSE, 4096, 4096, 256, 509, NULL);
  check_shape_rows (FALSE, TRUE, 256, 10, 4096, 1, NULL);
}

/* Results do not depend on the thread count, bit for bit: shapes that split
 * over columns (M ≤ N) and over rows (N = 10; K ≤ 32), several K blocks,
 * epilogue.  (Each has enough work for two threads: ≥ 2^22 multiply-adds.) */
static void
test_threads (void)
{
  const problem ps[] = {
    { .tb = TRUE, .M = 64, .N = 256, .K = 784, .pad_c = 1, .alpha = 1.0f },
    { .ta = TRUE, .M = 256, .N = 784, .K = 256, .alpha = 0.5f, .beta = 1.0f },
    { .M = 256, .N = 10, .K = 4096, .alpha = 1.0f },
    { .tb = TRUE, .M = 301, .N = 333, .K = 517, .alpha = 1.0f, .beta = 0.5f },
    { .M = 256, .N = 2000, .K = 10, .pad_c = 3, .alpha = 1.0f }, /* short K: rows */
  };
  const tw_gemm_epilogue ep = { .act = TW_GEMM_ACT_LEAKY_RELU, .slope = 0.01f };
  int saved = tw_gemm_get_num_threads ();
  for (guint i = 0; i < G_N_ELEMENTS (ps); i++)
    {
      const problem *p = &ps[i];
      operands o1, o2;
      operands_init (&o1, p, 40 + i, 'r');
      operands_init (&o2, p, 40 + i, 'r');
      tw_gemm_set_num_threads (1);
      tw_gemm_f32_ex (p->ta, p->tb, p->M, p->N, p->K, p->alpha, o1.a, o1.lda, o1.b, o1.ldb,
                      p->beta, o1.c, o1.ldc, &ep);
      tw_gemm_set_num_threads (2);
      tw_gemm_f32_ex (p->ta, p->tb, p->M, p->N, p->K, p->alpha, o2.a, o2.lda, o2.b, o2.ldb,
                      p->beta, o2.c, o2.ldc, &ep);
      g_assert_cmpmem (o1.cbuf, sizeof (float) * (2 * GUARD + p->M * o1.ldc), o2.cbuf,
                       sizeof (float) * (2 * GUARD + p->M * o2.ldc));
      operands_clear (&o1);
      operands_clear (&o2);
    }
  tw_gemm_set_num_threads (saved);
}

/* The OpenBLAS fallback meets the same bounds, epilogue included. */
static void
test_openblas (void)
{
  tw_gemm_backend saved = tw_gemm_get_backend ();
  g_assert_true (tw_gemm_set_backend (TW_GEMM_BACKEND_OPENBLAS));
  g_assert_cmpstr (tw_gemm_kernel_name (), ==, "openblas fallback");
  for (int t = 0; t < 4; t++)
    for (int v = 0; v < 4; v++)
      {
        problem p = { .ta = t & 1, .tb = (t >> 1) & 1, .M = 33 + v, .N = 47, .K = 5 + 200 * v,
                      .pad_a = 1, .pad_c = 2, .alpha = alphas[v], .beta = betas[v] };
        check_problem (&p, NULL, 60 + v, v == 0 ? 'n' : 'r');
        tw_gemm_epilogue ep = { .act = TW_GEMM_ACT_RELU };
        check_problem (&p, &ep, 70 + v, 'r');
      }
  check_shape_rows (FALSE, TRUE, 64, 256, 784, 1, &(tw_gemm_epilogue){ .act = TW_GEMM_ACT_RELU });
  tw_gemm_set_backend (saved);
}

static void
test_kernel (void)
{
  g_test_message ("kernel: %s", tw_gemm_kernel_name ());
  if (!tw_gemm_have_avx512 ())
    {
      g_test_message ("no AVX-512 on this CPU: every test runs the OpenBLAS fallback");
      g_assert_false (tw_gemm_set_backend (TW_GEMM_BACKEND_AVX512));
      g_assert_cmpstr (tw_gemm_kernel_name (), ==, "openblas fallback");
    }
  else if (tw_gemm_get_backend () == TW_GEMM_BACKEND_OPENBLAS)
    g_test_message ("TWB_GEMM=openblas: every test runs the OpenBLAS fallback");
  else
    g_assert_true (g_str_has_prefix (tw_gemm_kernel_name (), "avx512"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  /* The kernel under test, unless TWB_GEMM=openblas asks for the fallback
   * throughout (the OpenBLAS test switches to it either way). */
  if (g_strcmp0 (g_getenv ("TWB_GEMM"), "openblas") != 0)
    tw_gemm_set_backend (TW_GEMM_BACKEND_AVX512);
  g_test_add_func ("/engine/gemm/kernel", test_kernel);
  g_test_add_func ("/engine/gemm/sizes", test_sizes);
  g_test_add_func ("/engine/gemm/beta-zero-nan", test_beta_zero_nan);
  g_test_add_func ("/engine/gemm/k-zero", test_k_zero);
  g_test_add_func ("/engine/gemm/epilogue", test_epilogue);
  g_test_add_func ("/engine/gemm/shapes", test_shapes);
  g_test_add_func ("/engine/gemm/threads", test_threads);
  g_test_add_func ("/engine/gemm/openblas", test_openblas);
  return g_test_run ();
}
