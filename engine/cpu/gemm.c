/* gemm.c — tw_gemm_f32: backend, threads, the OpenBLAS path, the plain-C
 * epilogue and the naive reference.  Our kernels are in gemm_avx512.c and
 * gemm_avx2.c; which of them and OpenBLAS runs a shape, in gemm-choice.c. */
#define G_LOG_DOMAIN "twb-gemm"

#include "engine/cpu/gemm-private.h"
#include "engine/cpu/blas.h"
#include "engine/cpu/parallel.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* ---- settings ------------------------------------------------------------ */

static gint backend_setting = -1; /* -1: not chosen yet (read TWB_GEMM) */
static gint num_threads_setting = 0;

/* Our kernels, best first: the first the CPU runs is "ours". */
typedef struct
{
  const char *name;
  int mr, nr;
  gboolean (*supported) (void);
  void (*run) (const tw_gemm_args *g, int64_t m0, int64_t m1, int64_t n0, int64_t n1);
} kernel;

static const kernel kernels[] = {
  { "avx512 14x32", TW_GEMM_MR, TW_GEMM_NR, tw_gemm_avx512_supported, tw_gemm_avx512_run },
  { "avx2 6x16", TW_GEMM_AVX2_MR, TW_GEMM_AVX2_NR, tw_gemm_avx2_supported, tw_gemm_avx2_run },
};

static const kernel *
our_kernel (void)
{
  static gsize once = 0;
  static const kernel *k;
  if (g_once_init_enter (&once))
    {
      for (guint i = 0; i < G_N_ELEMENTS (kernels) && k == NULL; i++)
        if (kernels[i].supported ())
          k = &kernels[i];
      g_once_init_leave (&once, 1);
    }
  return k;
}

gboolean
tw_gemm_have_avx512 (void)
{
  return our_kernel () == &kernels[0];
}

gboolean
tw_gemm_have_kernel (void)
{
  return our_kernel () != NULL;
}

const char *
tw_gemm_kernel_name_ours (void)
{
  const kernel *k = our_kernel ();
  return k ? k->name : NULL;
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
      else if (env && (g_ascii_strcasecmp (env, "ours") == 0 || g_ascii_strcasecmp (env, "avx512") == 0)
               && tw_gemm_have_kernel ())
        b = TW_GEMM_BACKEND_OURS;
      else if (env && *env && g_ascii_strcasecmp (env, "auto") != 0)
        g_warning ("TWB_GEMM=%s: not one of auto, ours (on a CPU with AVX-512 or AVX2), "
                   "openblas; using auto", env);
      g_atomic_int_compare_and_exchange (&backend_setting, -1, b);
      b = g_atomic_int_get (&backend_setting);
    }
  return (tw_gemm_backend) b;
}

gboolean
tw_gemm_set_backend (tw_gemm_backend backend)
{
  if (backend == TW_GEMM_BACKEND_OURS && !tw_gemm_have_kernel ())
    return FALSE;
  g_atomic_int_set (&backend_setting, backend);
  return TRUE;
}

const char *
tw_gemm_kernel_name (void)
{
  const kernel *k = our_kernel ();
  tw_gemm_backend b = tw_gemm_get_backend ();
  if (k == NULL || b == TW_GEMM_BACKEND_OPENBLAS)
    return "openblas fallback";
  if (b == TW_GEMM_BACKEND_OURS)
    return k->name;
  return k == &kernels[0] ? "avx512 14x32 or openblas, per shape"
                          : "avx2 6x16 or openblas, per shape";
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

/* ---- pack buffers ------------------------------------------------------ */

typedef struct
{
  float *buf[2];
  size_t cap[2]; /* in floats */
} pack_bufs;

static void
pack_bufs_free (gpointer data)
{
  pack_bufs *p = data;
  free (p->buf[0]);
  free (p->buf[1]);
  g_free (p);
}

/* GPrivate frees a thread's buffers if the thread ends. */
static GPrivate pack_bufs_key = G_PRIVATE_INIT (pack_bufs_free);

float *
tw_gemm_pack_buffer (int which, size_t n)
{
  pack_bufs *p = g_private_get (&pack_bufs_key);
  if (p == NULL)
    {
      p = g_new0 (pack_bufs, 1);
      g_private_set (&pack_bufs_key, p);
    }
  if (p->cap[which] < n)
    {
      void *q = NULL;
      free (p->buf[which]);
      p->buf[which] = NULL;
      p->cap[which] = 0;
      /* Bounded by the block sizes (a few MiB), not by the product. */
      if (posix_memalign (&q, 64, n * sizeof (float)) != 0)
        g_error ("gemm: cannot allocate %zu bytes of pack buffer", n * sizeof (float));
      p->buf[which] = q;
      p->cap[which] = n;
    }
  return p->buf[which];
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

/* Work chunks per thread: a preempted thread then holds up a quarter of
 * its share at most, while each chunk re-packs the operand it shares (see
 * run_avx512), so more would cost packing. */
#define CHUNKS_PER_THREAD 4

/* The threads a call of this size uses: each gets at least 2^19
 * multiply-adds (~5 µs on one core at ~100 GFLOP/s, several times what
 * waking OpenMP's pool costs).  2^21 was measured on an AVX-512 machine,
 * where a preempted worker held calls up; on AVX2 it left most products of
 * the MLP at batch 64 on one thread, and the compiled step at 2 threads
 * slower than eager's (OpenBLAS threads everything): median of 5 runs 1.06
 * ms at 2^21, 0.78 at 2^19, 0.82 at 2^18.  1 inside a parallel region. */
static int
threads_for (const tw_gemm_args *g)
{
  if (omp_in_parallel ())
    return 1;
  double work = (double) g->M * g->N * g->K;
  return tw_team_threads (
    (int) MIN ((double) tw_gemm_get_num_threads (), MAX (1.0, work / (1 << 19))));
}

static void
run_ours (const tw_gemm_args *g, int nt)
{
  const kernel *kn = our_kernel ();
  int64_t M = g->M, N = g->N;
  if (nt <= 1)
    {
      kn->run (g, 0, M, 0, N);
      return;
    }
  /* Split the dimension whose split duplicates less packing: chunks that
   * share rows of C each pack the whole of op(A) (M·K), chunks that share
   * columns each pack op(B) (K·N).  Chunks are whole micro-tiles, CHUNKS_PER_THREAD
   * per thread handed out dynamically: on a loaded machine (these 2 cores
   * are shared) a thread that is preempted for a time slice then delays
   * only its current chunk instead of the whole call. */
  int64_t col_tiles = (N + kn->nr - 1) / kn->nr;
  int64_t row_tiles = (M + kn->mr - 1) / kn->mr;
  gboolean split_n = (M <= N && col_tiles >= nt) || row_tiles < nt;
  /* Short K: the call is bound by writing C; whole rows per thread keep
   * each thread's writes contiguous. */
  if (g->K <= 32 && row_tiles >= (int64_t) nt * CHUNKS_PER_THREAD)
    split_n = FALSE;
  int64_t tiles = split_n ? col_tiles : row_tiles;
  int64_t step = split_n ? kn->nr : kn->mr;
  int64_t extent = split_n ? N : M;
  nt = (int) MIN (nt, tiles);
  int64_t chunks = MIN (tiles, (int64_t) nt * CHUNKS_PER_THREAD);
  int64_t per = (tiles + chunks - 1) / chunks;
  chunks = (tiles + per - 1) / per;

  tw_team_region r;
  tw_team_begin (&r, nt);
#pragma omp parallel num_threads (nt)
  {
#pragma omp for schedule (dynamic, 1) nowait
    for (int64_t t = 0; t < chunks; t++)
      {
        int64_t lo = MIN (t * per * step, extent);
        int64_t hi = MIN ((t + 1) * per * step, extent);
        if (lo >= hi)
          continue;
        if (split_n)
          kn->run (g, 0, M, lo, hi);
        else
          kn->run (g, lo, hi, 0, N);
      }
    tw_team_arrive (&r);
  }
  tw_team_end (&r);
}

/* At nt > 1 through tw_blas_sgemm, which splits C over the engine's OpenMP
 * team as eager mode does (OpenBLAS itself runs single-threaded under the
 * engine: engine/cpu/blas.h), so a shape given to OpenBLAS keeps its
 * threads. */
static void
run_openblas (const tw_gemm_args *g, int nt)
{
  (nt > 1 ? tw_blas_sgemm : cblas_sgemm) (CblasRowMajor, g->ta ? CblasTrans : CblasNoTrans, g->tb ? CblasTrans : CblasNoTrans,
               (blasint) g->M, (blasint) g->N, (blasint) g->K, g->alpha, g->A, (blasint) g->lda,
               g->B, (blasint) g->ldb, g->beta, g->C, (blasint) g->ldc);
  if (g->ep)
    epilogue_after (g->ep, g->M, g->N, g->C, g->ldc);
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
  int nt = threads_for (&g), run_nt = nt;
  gboolean ours = tw_gemm_have_kernel ()
                  && (backend == TW_GEMM_BACKEND_OURS
                      || (backend == TW_GEMM_BACKEND_AUTO
                          && tw_gemm_choice_ours (&g, nt, run_ours, run_openblas, &run_nt)));
  if (ours)
    run_ours (&g, run_nt);
  else
    run_openblas (&g, run_nt);
}

void
tw_gemm_f32 (gboolean trans_a, gboolean trans_b, int64_t M, int64_t N, int64_t K, float alpha,
             const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
             int64_t ldc)
{
  tw_gemm_f32_ex (trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL);
}

void
tw_gemm_f64 (gboolean trans_a, gboolean trans_b, int64_t M, int64_t N, int64_t K, double alpha,
             const double *A, int64_t lda, const double *B, int64_t ldb, double beta, double *C,
             int64_t ldc)
{
  g_return_if_fail (M >= 0 && N >= 0 && K >= 0);
  g_return_if_fail (lda >= (trans_a ? M : K) && ldb >= (trans_b ? K : N) && ldc >= N);
  if (M == 0 || N == 0)
    return;
  if (K == 0)
    {
      /* BLAS rejects lda = 0 here; C = beta C, beta = 0 overwriting. */
      for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++)
          C[i * ldc + j] = beta == 0 ? 0.0 : beta * C[i * ldc + j];
      return;
    }
  tw_blas_dgemm (CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                 trans_b ? CblasTrans : CblasNoTrans, (blasint) M, (blasint) N, (blasint) K, alpha,
                 A, (blasint) lda, B, (blasint) ldb, beta, C, (blasint) ldc);
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
