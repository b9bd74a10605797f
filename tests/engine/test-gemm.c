/* test-gemm.c — tw_gemm_f32 / tw_gemm_f32_ex (engine/cpu/gemm.h) and each
 * of our kernels on its own (engine/cpu/gemm-private.h: the AVX-512 14 × 32
 * and the AVX2 + FMA 6 × 16 one, whichever this CPU runs) against the
 * double-precision naive reference tw_gemm_f32_ref: every trans
 * combination, every size 1..67 in each dimension (around both micro-tiles
 * and their 8- and 16-float vectors), K = 0 and 1, K across several K
 * blocks, padded leading dimensions, alpha/beta (beta = 0 over NaNs), the
 * fused epilogue, the MLP and LeNet shapes (and shapes taking each kernel's
 * special paths: B or A read in place, wide N, short K), guard floats
 * around C, bitwise identity between 1 and 2 threads and between any split
 * of C along the kernel's tiles, and the OpenBLAS fallback under the same
 * tolerance.
 *
 * Each case runs for "ours" (tw_gemm_f32_ex with the backend forced to our
 * kernel, threads and all) and for each kernel directly; a kernel the CPU
 * lacks is skipped.
 *
 * The kernels read A and B only through masked vector loads, which ASan
 * does not instrument, so inputs are placed to end exactly where an
 * inaccessible page begins (the last row without padding): a read one float
 * past op(A) or op(B) faults.  (Masked-off lanes never fault.) */
#include "engine/cpu/gemm-private.h"

#include <math.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* What a case runs: the dispatch (run NULL) or one kernel directly. */
typedef struct
{
  const char *name;
  int mr, nr;
  gboolean (*supported) (void);
  void (*run) (const tw_gemm_args *g, int64_t m0, int64_t m1, int64_t n0, int64_t n1);
} impl;

static gboolean
dispatch_has_kernel (void)
{
  return tw_gemm_have_kernel ();
}

static const impl impls[] = {
  { "ours", 0, 0, dispatch_has_kernel, NULL },
  { "avx512", TW_GEMM_MR, TW_GEMM_NR, tw_gemm_avx512_supported, tw_gemm_avx512_run },
  { "avx2", TW_GEMM_AVX2_MR, TW_GEMM_AVX2_NR, tw_gemm_avx2_supported, tw_gemm_avx2_run },
};

/* FALSE (and the test skipped) when the CPU does not run im.  "ours"
 * still runs without a kernel: it is then the OpenBLAS fallback. */
static gboolean
impl_ready (const impl *im)
{
  if (im->run && !im->supported ())
    {
      g_autofree char *why = g_strdup_printf ("this CPU does not run the %s kernel", im->name);
      g_test_skip (why);
      return FALSE;
    }
  return TRUE;
}

/* tw_gemm_f32_ex through im: a kernel computes the whole of C in one call
 * (K = 0 and empty products, which never reach a kernel, go through the
 * dispatch). */
static void
impl_gemm (const impl *im, gboolean ta, gboolean tb, int64_t M, int64_t N, int64_t K,
           float alpha, const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
           float *C, int64_t ldc, const tw_gemm_epilogue *ep)
{
  if (im->run == NULL || M == 0 || N == 0 || K == 0)
    {
      tw_gemm_f32_ex (ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ep);
      return;
    }
  tw_gemm_args g = {
    .ta = ta, .tb = tb, .M = M, .N = N, .K = K, .alpha = alpha, .beta = beta,
    .A = A, .lda = lda, .B = B, .ldb = ldb, .C = C, .ldc = ldc, .ep = ep,
  };
  im->run (&g, 0, M, 0, N);
}

/* Error of a result against the reference, normalised by the largest
 * reference value: max |c - ref| / max |ref|.  Each output is a sum of K
 * products accumulated in f32 (fused multiply-adds, in blocks of at most 512
 * along K; OpenBLAS likewise), so its rounding error is at most about K · 2^-24 relative to the
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
check_problem (const impl *im, const problem *p, const tw_gemm_epilogue *ep, guint32 seed,
               char c_init)
{
  operands o;
  operands_init (&o, p, seed, c_init);
  g_autofree float *ref = g_memdup2 (o.c, sizeof (float) * MAX (p->M * o.ldc, 1));
  g_autofree char *what
    = g_strdup_printf ("%s %c%c M=%" G_GINT64_FORMAT " N=%" G_GINT64_FORMAT " K=%" G_GINT64_FORMAT
                       " alpha=%g beta=%g pads=%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                       ",%" G_GINT64_FORMAT " act=%d",
                       im->name, p->ta ? 'T' : 'N', p->tb ? 'T' : 'N', p->M, p->N, p->K, p->alpha,
                       p->beta, p->pad_a, p->pad_b, p->pad_c, ep ? (int) ep->act : -1);

  tw_gemm_f32_ref (p->ta, p->tb, p->M, p->N, p->K, p->alpha, o.a, o.lda, o.b, o.ldb, p->beta, ref,
                   o.ldc, ep);
  impl_gemm (im, p->ta, p->tb, p->M, p->N, p->K, p->alpha, o.a, o.lda, o.b, o.ldb, p->beta, o.c,
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

/* Sizes around the micro-tiles (AVX-512: MR = 14, NR = 32, 16-float
 * vectors; AVX2: MR = 6, NR = 16, 8-float vectors) and their multiples. */
static const int64_t sizes[] = { 1,  2,  3,  4,  5,  6,  7,  8,  9,  11, 12, 13, 14, 15, 16, 17,
                                 18, 19, 23, 24, 25, 27, 28, 29, 31, 32, 33, 35, 36, 37, 42, 47,
                                 48, 63, 64, 65, 67 };

/* Every size 1..67 in each of M, N, K in turn (K from 0), the other two
 * cycling through `sizes`, for all four trans combinations, with padded
 * leading dimensions on every third problem and alpha/beta cycling. */
static void
test_sizes (gconstpointer data)
{
  const impl *im = data;
  if (!impl_ready (im))
    return;
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
          worst = MAX (worst, check_problem (im, &p, NULL, 1000 + count, 'r'));
          count++;
        }
  g_test_message ("%d problems, worst normalised error %.3g", count, worst);
}

/* The same edges with N past 128, where the AVX2 kernel packs A rather
 * than read it in place (it does for up to 8 column panels): every M and K
 * of `sizes`, all four trans combinations. */
static void
test_wide (gconstpointer data)
{
  const impl *im = data;
  if (!impl_ready (im))
    return;
  int count = 0;
  for (int t = 0; t < 4; t++)
    for (guint i = 0; i < G_N_ELEMENTS (sizes); i++, count++)
      {
        int v = count % G_N_ELEMENTS (alphas);
        int64_t pad = count % 3 == 1 ? 5 : 0;
        problem p = {
          .ta = t & 1, .tb = (t >> 1) & 1, .M = sizes[i],
          .N = 129 + (int64_t) (i * 7 % 40), .K = sizes[(i * 5 + t) % G_N_ELEMENTS (sizes)],
          .pad_a = pad, .pad_b = 2 * pad, .pad_c = count % 2, .alpha = alphas[v], .beta = betas[v],
        };
        check_problem (im, &p, NULL, 2000 + count, 'r');
      }
}

/* beta = 0: C is not read, so NaNs in it must not come through; K = 0 and
 * K = 1 included. */
static void
test_beta_zero_nan (gconstpointer data)
{
  const impl *im = data;
  if (!impl_ready (im))
    return;
  const int64_t ks[] = { 0, 1, 5, 300, 784 };
  for (int t = 0; t < 4; t++)
    for (guint i = 0; i < G_N_ELEMENTS (ks); i++)
      {
        problem p = { .ta = t & 1, .tb = (t >> 1) & 1, .M = 30, .N = 45, .K = ks[i],
                      .pad_c = 1, .alpha = 1.5f, .beta = 0.0f };
        check_problem (im, &p, NULL, 7 + i, 'n');
        tw_gemm_epilogue ep = { .act = TW_GEMM_ACT_RELU };
        check_problem (im, &p, &ep, 17 + i, 'n');
      }
}

/* K = 0: C = beta · C (0 · C overwrites). */
static void
test_k_zero (void)
{
  for (guint v = 0; v < G_N_ELEMENTS (alphas); v++)
    {
      problem p = { .M = 19, .N = 37, .K = 0, .pad_c = 2, .alpha = alphas[v], .beta = betas[v] };
      check_problem (&impls[0], &p, NULL, 3, 'r');
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
test_epilogue (gconstpointer data)
{
  const impl *im = data;
  if (!impl_ready (im))
    return;
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
          impl_gemm (im, p.ta, p.tb, p.M, p.N, p.K, p.alpha, o.a, o.lda, o.b, o.ldb, p.beta, o.c,
                     o.ldc, &ep);
          check_guards (&p, &o, "epilogue");
          double e = max_error (o.c, ref, p.M, p.N, o.ldc);
          double ep_err = max_error (pre, pre_ref, p.M, p.N, ldpre);
          if (!(e <= tolerance (p.K) && ep_err <= tolerance (p.K)))
            g_error ("%s epilogue act %d K=%" G_GINT64_FORMAT ": error %.3g, pre %.3g > %.3g",
                     im->name, acts[ai], p.K, e, ep_err, tolerance (p.K));
          operands_clear (&o);
        }
}

/* A shape of the hot list, checked on a sample of rows of C (the naive
 * reference on the whole of the big ones would take seconds). */
static void
check_shape_rows (const impl *im, gboolean ta, gboolean tb, int64_t M, int64_t N, int64_t K,
                  int64_t row_step, const tw_gemm_epilogue *ep0)
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
  impl_gemm (im, ta, tb, M, N, K, 1.0f, o.a, o.lda, o.b, o.ldb, 0.0f, o.c, o.ldc,
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
  g_test_message ("%s %c%c %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                  ": normalised error %.3g (tolerance %.3g)",
                  im->name, ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, worst, tolerance (K));
  if (!(worst <= tolerance (K)))
    g_error ("%s %c%c %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
             ": error %.3g exceeds %.3g",
             im->name, ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, worst, tolerance (K));
  operands_clear (&o);
}

/* The training GEMMs (forward y = x Wᵀ: NT; dx = dy W: NN; dW = dyᵀ x: TN)
 * of the MLP 784-256-128-10 at batch 64 and 256, LeNet-5's im2col products
 * at batch 8, the big MLP 784-4096-4096-10 at batch 256, and shapes that
 * take the kernels' other paths. */
static void
test_shapes (gconstpointer data)
{
  const impl *im = data;
  if (!impl_ready (im))
    return;
  const int64_t layers[][2] = { { 784, 256 }, { 256, 128 }, { 128, 10 } };
  const tw_gemm_epilogue relu = { .act = TW_GEMM_ACT_RELU };
  for (int b = 64; b <= 256; b *= 4)
    for (guint l = 0; l < G_N_ELEMENTS (layers); l++)
      {
        int64_t in = layers[l][0], out = layers[l][1];
        check_shape_rows (im, FALSE, TRUE, b, out, in, 1, &relu);
        check_shape_rows (im, FALSE, FALSE, b, in, out, 1, NULL);
        check_shape_rows (im, TRUE, FALSE, out, in, b, 1, NULL);
      }
  check_shape_rows (im, FALSE, FALSE, 6, 8 * 784, 25, 1, NULL);
  check_shape_rows (im, FALSE, TRUE, 6, 25, 8 * 784, 1, NULL);
  check_shape_rows (im, TRUE, FALSE, 25, 8 * 784, 6, 1, NULL);
  check_shape_rows (im, FALSE, FALSE, 16, 8 * 100, 150, 1, NULL);
  check_shape_rows (im, FALSE, TRUE, 16, 150, 8 * 100, 1, NULL);
  check_shape_rows (im, TRUE, FALSE, 150, 8 * 100, 16, 1, NULL);
  check_shape_rows (im, FALSE, TRUE, 256, 4096, 784, 37, &relu);
  check_shape_rows (im, FALSE, FALSE, 256, 4096, 4096, 61, NULL);
  check_shape_rows (im, TRUE, FALSE, 4096, 4096, 256, 509, NULL);
  check_shape_rows (im, FALSE, TRUE, 256, 10, 4096, 1, NULL);
  /* B in place over several row panels, its rows 16 KiB apart (the AVX2
   * kernel packs it: they would evict each other from L2) and 1 KiB apart
   * (read in place). */
  check_shape_rows (im, TRUE, FALSE, 10, 4096, 256, 1, NULL);
  check_shape_rows (im, TRUE, FALSE, 17, 256, 300, 1, &relu);
  /* Wider than one column block (4096): equal blocks, B packed twice. */
  check_shape_rows (im, FALSE, FALSE, 7, 4100, 40, 1, &relu);
  check_shape_rows (im, FALSE, TRUE, 20, 4200, 33, 1, NULL);
  /* A in place (N ≤ 16), stored either way, over several K blocks. */
  check_shape_rows (im, FALSE, TRUE, 100, 16, 1100, 1, &relu);
  check_shape_rows (im, TRUE, FALSE, 100, 9, 1100, 1, NULL);
}

/* Around each kernel's K blocks (AVX2: 256 on a 32 KiB L1, 384 on 48 KiB;
 * AVX-512: 512): C += over 2-5 blocks, with beta and an epilogue on the
 * last. */
static void
test_k_blocks (gconstpointer data)
{
  const impl *im = data;
  if (!impl_ready (im))
    return;
  const int64_t ks[] = { 255, 256, 257, 383, 384, 385, 511, 512, 513, 1025, 1537 };
  int n = 0;
  for (int t = 0; t < 4; t++)
    for (guint i = 0; i < G_N_ELEMENTS (ks); i++, n++)
      {
        problem p = { .ta = t & 1, .tb = (t >> 1) & 1, .M = 13 + t, .N = 21 + 5 * t, .K = ks[i],
                      .pad_a = n % 2, .pad_b = n % 3, .pad_c = 1, .alpha = alphas[n % 4],
                      .beta = betas[n % 4] };
        tw_gemm_epilogue ep = { .act = TW_GEMM_ACT_LEAKY_RELU, .slope = 0.25f };
        check_problem (im, &p, n % 2 ? &ep : NULL, 300 + n, 'r');
      }
}

/* Results do not depend on the thread count, bit for bit: shapes that split
 * over columns (M ≤ N) and over rows (N = 10; K ≤ 32), several K blocks,
 * epilogue.  (Each has enough work for two threads: ≥ 2^22 multiply-adds.) */
static void
test_threads (void)
{
  if (!impl_ready (&impls[0]))
    return;
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

/* A kernel gives the same bits whichever rectangles of C it is asked for,
 * as long as they are cut along its tiles (MR rows, NR columns), as gemm.c
 * cuts them between threads: each element is summed in K order in K blocks
 * that depend on K alone.  Rectangles that take other paths than the whole
 * (a single row panel reads B in place, a single column panel A) must agree
 * too.  C and the pre-activation copy are compared. */
static void
test_splits (gconstpointer data)
{
  const impl *im = data;
  if (!impl_ready (im))
    return;
  const problem ps[] = {
    { .tb = TRUE, .M = 64, .N = 256, .K = 784, .pad_c = 1, .alpha = 1.0f },
    { .ta = TRUE, .M = 77, .N = 130, .K = 600, .pad_a = 2, .alpha = 0.5f, .beta = 1.0f },
    { .M = 40, .N = 70, .K = 1030, .pad_b = 1, .alpha = 1.0f, .beta = 0.5f },
    { .ta = TRUE, .tb = TRUE, .M = 50, .N = 45, .K = 301, .alpha = -1.0f },
    { .M = 90, .N = 200, .K = 10, .pad_c = 3, .alpha = 1.0f }, /* short K */
  };
  g_autoptr (GRand) r = g_rand_new_with_seed (77);
  for (guint i = 0; i < G_N_ELEMENTS (ps); i++)
    {
      const problem *p = &ps[i];
      g_autofree float *bias = g_new (float, p->N);
      for (int64_t j = 0; j < p->N; j++)
        bias[j] = (float) g_rand_double_range (r, -1.0, 1.0);
      int64_t npre = p->M * p->N;
      g_autofree float *pre1 = g_new0 (float, npre), *pre2 = g_new0 (float, npre);
      tw_gemm_epilogue ep1 = { .bias = bias, .act = TW_GEMM_ACT_GELU_TANH, .pre = pre1,
                               .ldpre = p->N };
      tw_gemm_epilogue ep2 = ep1;
      ep2.pre = pre2;
      operands o1, o2;
      operands_init (&o1, p, 90 + i, 'r');
      operands_init (&o2, p, 90 + i, 'r');
      tw_gemm_args g1 = {
        .ta = p->ta, .tb = p->tb, .M = p->M, .N = p->N, .K = p->K, .alpha = p->alpha,
        .beta = p->beta, .A = o1.a, .lda = o1.lda, .B = o1.b, .ldb = o1.ldb, .C = o1.c,
        .ldc = o1.ldc, .ep = &ep1,
      };
      tw_gemm_args g2 = g1;
      g2.A = o2.a;
      g2.B = o2.b;
      g2.C = o2.c;
      g2.ep = &ep2;
      im->run (&g1, 0, p->M, 0, p->N);
      /* Random cuts: rows in runs of 1-4 tiles, each row run's columns in
       * runs of 1-3 tiles (so some rectangles are a single panel). */
      for (int64_t m0 = 0; m0 < p->M;)
        {
          int64_t rows = im->mr * g_rand_int_range (r, 1, 5);
          int64_t m1 = MIN (p->M, m0 + rows);
          for (int64_t n0 = 0; n0 < p->N;)
            {
              int64_t cols = im->nr * g_rand_int_range (r, 1, 4);
              int64_t n1 = MIN (p->N, n0 + cols);
              im->run (&g2, m0, m1, n0, n1);
              n0 = n1;
            }
          m0 = m1;
        }
      check_guards (p, &o2, "splits");
      g_assert_cmpmem (o1.cbuf, sizeof (float) * (2 * GUARD + p->M * o1.ldc), o2.cbuf,
                       sizeof (float) * (2 * GUARD + p->M * o2.ldc));
      g_assert_cmpmem (pre1, sizeof (float) * npre, pre2, sizeof (float) * npre);
      operands_clear (&o1);
      operands_clear (&o2);
    }
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
        check_problem (&impls[0], &p, NULL, 60 + v, v == 0 ? 'n' : 'r');
        tw_gemm_epilogue ep = { .act = TW_GEMM_ACT_RELU };
        check_problem (&impls[0], &p, &ep, 70 + v, 'r');
      }
  check_shape_rows (&impls[0], FALSE, TRUE, 64, 256, 784, 1,
                    &(tw_gemm_epilogue){ .act = TW_GEMM_ACT_RELU });
  tw_gemm_set_backend (saved);
}

/* The kernel the dispatch runs is the first of ours the CPU has. */
static void
test_kernel (void)
{
  g_test_message ("kernel: %s", tw_gemm_kernel_name ());
  const char *expect = tw_gemm_avx512_supported () ? "avx512 14x32"
                       : tw_gemm_avx2_supported () ? "avx2 6x16"
                                                   : NULL;
  g_assert_cmpint (tw_gemm_have_kernel (), ==, expect != NULL);
  g_assert_cmpint (tw_gemm_have_avx512 (), ==, tw_gemm_avx512_supported ());
  if (expect == NULL)
    {
      g_test_message ("no AVX-512 nor AVX2 + FMA on this CPU: 'ours' is the OpenBLAS fallback");
      g_assert_false (tw_gemm_set_backend (TW_GEMM_BACKEND_OURS));
      g_assert_cmpstr (tw_gemm_kernel_name (), ==, "openblas fallback");
    }
  else if (tw_gemm_get_backend () == TW_GEMM_BACKEND_OPENBLAS)
    g_test_message ("TWB_GEMM=openblas: 'ours' runs the OpenBLAS fallback");
  else
    g_assert_cmpstr (tw_gemm_kernel_name (), ==, expect);
}

static void
add_impl_test (const char *what, const impl *im, GTestDataFunc fn)
{
  g_autofree char *path = g_strdup_printf ("/engine/gemm/%s/%s", im->name, what);
  g_test_add_data_func (path, im, fn);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  /* The kernel under test, unless TWB_GEMM=openblas asks for the fallback
   * throughout (the OpenBLAS test switches to it either way; the kernels'
   * own cases call them directly). */
  if (g_strcmp0 (g_getenv ("TWB_GEMM"), "openblas") != 0)
    tw_gemm_set_backend (TW_GEMM_BACKEND_OURS);
  g_test_add_func ("/engine/gemm/kernel", test_kernel);
  for (guint i = 0; i < G_N_ELEMENTS (impls); i++)
    {
      add_impl_test ("sizes", &impls[i], test_sizes);
      add_impl_test ("wide", &impls[i], test_wide);
      add_impl_test ("beta-zero-nan", &impls[i], test_beta_zero_nan);
      add_impl_test ("epilogue", &impls[i], test_epilogue);
      add_impl_test ("k-blocks", &impls[i], test_k_blocks);
      add_impl_test ("shapes", &impls[i], test_shapes);
      if (impls[i].run)
        add_impl_test ("splits", &impls[i], test_splits);
    }
  g_test_add_func ("/engine/gemm/ours/k-zero", test_k_zero);
  g_test_add_func ("/engine/gemm/ours/threads", test_threads);
  g_test_add_func ("/engine/gemm/openblas", test_openblas);
  return g_test_run ();
}
