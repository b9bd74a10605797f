/* gemm.c — tw_gemm_f32: backend choice, threads, the OpenBLAS fallback, the
 * plain-C epilogue and the naive reference.  The AVX-512 kernel itself is in
 * gemm_avx512.c. */
#define G_LOG_DOMAIN "twb-gemm"

#include "engine/cpu/gemm-private.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <string.h>

/* ---- settings ------------------------------------------------------------ */

static gint backend_setting = -1; /* -1: not chosen yet (read TWB_GEMM) */
static gint num_threads_setting = 0;

gboolean
tw_gemm_have_avx512 (void)
{
  static gsize once = 0;
  static gboolean have;
  if (g_once_init_enter (&once))
    {
      have = tw_gemm_avx512_supported ();
      g_once_init_leave (&once, 1);
    }
  return have;
}

tw_gemm_backend
tw_gemm_get_backend (void)
{
  gint b = g_atomic_int_get (&backend_setting);
  if (b < 0)
    {
      const char *env = g_getenv ("TWB_GEMM");
      b = TW_GEMM_BACKEND_AUTO;
      if (env && g_ascii_strcasecmp (env, "openblas") == 0)
        b = TW_GEMM_BACKEND_OPENBLAS;
      else if (env && g_ascii_strcasecmp (env, "avx512") == 0 && tw_gemm_have_avx512 ())
        b = TW_GEMM_BACKEND_AVX512;
      else if (env && *env && g_ascii_strcasecmp (env, "auto") != 0)
        g_warning ("TWB_GEMM=%s: not one of auto, avx512 (on a CPU with it), openblas; "
                   "using auto", env);
      g_atomic_int_compare_and_exchange (&backend_setting, -1, b);
      b = g_atomic_int_get (&backend_setting);
    }
  return (tw_gemm_backend) b;
}

gboolean
tw_gemm_set_backend (tw_gemm_backend backend)
{
  if (backend == TW_GEMM_BACKEND_AVX512 && !tw_gemm_have_avx512 ())
    return FALSE;
  g_atomic_int_set (&backend_setting, backend);
  return TRUE;
}

const char *
tw_gemm_kernel_name (void)
{
  if (tw_gemm_get_backend () != TW_GEMM_BACKEND_OPENBLAS && tw_gemm_have_avx512 ())
    return "avx512 14x32";
  return "openblas fallback";
}

void
tw_gemm_set_num_threads (int n)
{
  g_atomic_int_set (&num_threads_setting, MAX (n, 0));
}

int
tw_gemm_get_num_threads (void)
{
  int n = g_atomic_int_get (&num_threads_setting);
  return n > 0 ? n : omp_get_max_threads ();
}

/* ---- epilogue in plain C --------------------------------------------------- */

float
tw_gemm_gelu_tanh (float x)
{
  /* √(2/π) and 0.044715: the tanh approximation of GELU (Hendrycks and
   * Gimpel 2016, as PyTorch's approximate="tanh"). */
  const float s = 0.7978845608028654f;
  return 0.5f * x * (1.0f + tanhf (s * (x + 0.044715f * x * x * x)));
}

void
tw_gemm_act_block (tw_gemm_act act, float slope, float *c, int64_t ldc, int64_t m, int64_t n)
{
  for (int64_t i = 0; i < m; i++)
    {
      float *r = c + i * ldc;
      switch (act)
        {
        case TW_GEMM_ACT_NONE:
          return;
        case TW_GEMM_ACT_RELU:
          for (int64_t j = 0; j < n; j++)
            r[j] = r[j] < 0 ? 0.0f : r[j];
          break;
        case TW_GEMM_ACT_LEAKY_RELU:
          for (int64_t j = 0; j < n; j++)
            r[j] = r[j] < 0 ? r[j] * slope : r[j];
          break;
        case TW_GEMM_ACT_GELU_TANH:
          for (int64_t j = 0; j < n; j++)
            r[j] = tw_gemm_gelu_tanh (r[j]);
          break;
        }
    }
}

/* C = act (C + bias), pre = C + bias: the epilogue after a product that
 * did not fuse it (OpenBLAS, K = 0). */
static void
epilogue_after (const tw_gemm_epilogue *ep, int64_t M, int64_t N, float *C, int64_t ldc)
{
  for (int64_t i = 0; i < M; i++)
    {
      float *r = C + i * ldc;
      if (ep->bias)
        for (int64_t j = 0; j < N; j++)
          r[j] += ep->bias[j];
      if (ep->pre)
        memcpy (ep->pre + i * ep->ldpre, r, N * sizeof (float));
      tw_gemm_act_block (ep->act, ep->slope, r, ldc, 1, N);
    }
}

/* ---- dispatch -------------------------------------------------------------- */

/* Whether AUTO sends this shape to the AVX-512 kernel.  A function of the
 * shape alone, never of the thread count, so that results stay the same
 * for any number of threads.  gemm-bench (all the training shapes of the MLPs
 * and LeNet-5, at 1 and 2 threads) found no class where OpenBLAS is faster
 * beyond the noise: the closest are the K = 10 products (dx of a 10-way
 * output layer, 64×128×10: 1.0-1.3x), bound by writing C either way.  So
 * every shape goes to the kernel; this is where a threshold would go. */
static gboolean
auto_uses_avx512 (const tw_gemm_args *g)
{
  return TRUE;
}

/* Work chunks per thread: a preempted thread then holds up a quarter of
 * its share at most, while each chunk re-packs the operand it shares (see
 * run_avx512), so more would cost packing. */
#define CHUNKS_PER_THREAD 4

static void
run_avx512 (const tw_gemm_args *g)
{
  int64_t M = g->M, N = g->N;
  int nt = tw_gemm_get_num_threads ();
  /* Each thread gets at least 2^21 multiply-adds (~20 µs on one core at
   * ~190 GFLOP/s): below that a second thread saved nothing measurable
   * (64×128×256: 197 against 187 GFLOP/s), while on this shared machine a
   * worker thread that is preempted holds the call up for a time slice. */
  double work = (double) M * N * g->K;
  nt = (int) MIN ((double) nt, MAX (1.0, work / (1 << 21)));
  if (nt <= 1 || omp_in_parallel ())
    {
      tw_gemm_avx512_run (g, 0, M, 0, N);
      return;
    }
  /* Split the dimension whose split duplicates less packing: chunks that
   * share rows of C each pack the whole of op(A) (M·K), chunks that share
   * columns each pack op(B) (K·N).  Chunks are whole micro-tiles, CHUNKS_PER_THREAD
   * per thread handed out dynamically: on a loaded machine (these 2 cores
   * are shared) a thread that is preempted for a time slice then delays
   * only its current chunk instead of the whole call. */
  int64_t col_tiles = (N + TW_GEMM_NR - 1) / TW_GEMM_NR;
  int64_t row_tiles = (M + TW_GEMM_MR - 1) / TW_GEMM_MR;
  gboolean split_n = (M <= N && col_tiles >= nt) || row_tiles < nt;
  /* Short K: the call is bound by writing C; whole rows per thread keep
   * each thread's writes contiguous. */
  if (g->K <= 32 && row_tiles >= (int64_t) nt * CHUNKS_PER_THREAD)
    split_n = FALSE;
  int64_t tiles = split_n ? col_tiles : row_tiles;
  int64_t step = split_n ? TW_GEMM_NR : TW_GEMM_MR;
  int64_t extent = split_n ? N : M;
  nt = (int) MIN (nt, tiles);
  int64_t chunks = MIN (tiles, (int64_t) nt * CHUNKS_PER_THREAD);
  int64_t per = (tiles + chunks - 1) / chunks;
  chunks = (tiles + per - 1) / per;

#pragma omp parallel for num_threads (nt) schedule (dynamic, 1)
  for (int64_t t = 0; t < chunks; t++)
    {
      int64_t lo = MIN (t * per * step, extent);
      int64_t hi = MIN ((t + 1) * per * step, extent);
      if (lo >= hi)
        continue;
      if (split_n)
        tw_gemm_avx512_run (g, 0, M, lo, hi);
      else
        tw_gemm_avx512_run (g, lo, hi, 0, N);
    }
}

void
tw_gemm_f32_ex (gboolean trans_a, gboolean trans_b, int64_t M, int64_t N, int64_t K,
                float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                float beta, float *C, int64_t ldc, const tw_gemm_epilogue *ep)
{
  g_return_if_fail (M >= 0 && N >= 0 && K >= 0);
  g_return_if_fail (lda >= (trans_a ? M : K) && ldb >= (trans_b ? K : N) && ldc >= N);
  if (M == 0 || N == 0)
    return;
  if (ep && !ep->bias && !ep->pre && ep->act == TW_GEMM_ACT_NONE)
    ep = NULL;

  if (K == 0)
    {
      /* BLAS: C = beta C, with beta = 0 meaning "overwrite" (C unread). */
      for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++)
          C[i * ldc + j] = beta == 0 ? 0.0f : beta * C[i * ldc + j];
      if (ep)
        epilogue_after (ep, M, N, C, ldc);
      return;
    }

  tw_gemm_args g = {
    .ta = trans_a, .tb = trans_b, .M = M, .N = N, .K = K, .alpha = alpha, .beta = beta,
    .A = A, .lda = lda, .B = B, .ldb = ldb, .C = C, .ldc = ldc, .ep = ep,
  };
  tw_gemm_backend backend = tw_gemm_get_backend ();
  gboolean ours = tw_gemm_have_avx512 ()
                  && (backend == TW_GEMM_BACKEND_AVX512
                      || (backend == TW_GEMM_BACKEND_AUTO && auto_uses_avx512 (&g)));
  if (ours)
    {
      run_avx512 (&g);
      return;
    }

  cblas_sgemm (CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
               trans_b ? CblasTrans : CblasNoTrans, (blasint) M, (blasint) N, (blasint) K, alpha,
               A, (blasint) lda, B, (blasint) ldb, beta, C, (blasint) ldc);
  if (ep)
    epilogue_after (ep, M, N, C, ldc);
}

void
tw_gemm_f32 (gboolean trans_a, gboolean trans_b, int64_t M, int64_t N, int64_t K, float alpha,
             const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
             int64_t ldc)
{
  tw_gemm_f32_ex (trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL);
}

/* ---- reference ------------------------------------------------------------- */

void
tw_gemm_f32_ref (gboolean trans_a, gboolean trans_b, int64_t M, int64_t N, int64_t K,
                 float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                 float beta, float *C, int64_t ldc, const tw_gemm_epilogue *ep)
{
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++)
      {
        double s = 0;
        for (int64_t k = 0; k < K; k++)
          {
            double a = trans_a ? A[k * lda + i] : A[i * lda + k];
            double b = trans_b ? B[j * ldb + k] : B[k * ldb + j];
            s += a * b;
          }
        double z = (double) alpha * s;
        if (beta != 0)
          z += (double) beta * C[i * ldc + j];
        if (ep && ep->bias)
          z += ep->bias[j];
        if (ep && ep->pre)
          ep->pre[i * ep->ldpre + j] = (float) z;
        if (ep && ep->act == TW_GEMM_ACT_RELU)
          z = z < 0 ? 0.0 : z;
        else if (ep && ep->act == TW_GEMM_ACT_LEAKY_RELU)
          z = z < 0 ? z * ep->slope : z;
        else if (ep && ep->act == TW_GEMM_ACT_GELU_TANH)
          z = 0.5 * z * (1.0 + tanh (sqrt (2.0 / G_PI) * (z + 0.044715 * z * z * z)));
        C[i * ldc + j] = (float) z;
      }
}
