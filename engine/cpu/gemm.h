/* gemm.h — single-precision matrix product for the compiled executor.
 *
 * A packed, cache-blocked GEMM with an AVX-512 micro-kernel or, on x86-64
 * CPUs without AVX-512, an AVX2 + FMA one (picked at run time: the binary
 * runs on any x86-64), and OpenBLAS.  Which of our kernel and OpenBLAS runs
 * a product is measured per shape on each machine and remembered (see
 * tw_gemm_choices below).
 * It is the one dispatch for every matrix product in the engine, eager and
 * compiled alike: linear layers and their gradients, matmul, the
 * convolutions' im2col products, the fused kernels.  Float64 products (the
 * gradient checks' runs) go to OpenBLAS through tw_gemm_f64.
 *
 * Everything is row-major.  op(X) is X or Xᵀ as trans_x says:
 *
 *   C [M, N] = alpha · op(A) [M, K] · op(B) [K, N] + beta · C [M, N]
 *
 *   A is stored [M, lda] (lda >= K) or, transposed, [K, lda] (lda >= M);
 *   B is stored [K, ldb] (ldb >= N) or, transposed, [N, ldb] (ldb >= K);
 *   C is stored [M, ldc] (ldc >= N).
 *
 * BLAS semantics: beta == 0 means C is not read (NaNs in it do not
 * propagate); K == 0 gives C = beta · C.  Only the M × N elements are written;
 * the padding of rows (ldc > N) is left alone.  The caller owns all buffers;
 * none is kept after the call.
 *
 * A linear layer y [B, out] = relu (x [B, in] · W [out, in]ᵀ + b [out]):
 *
 *   tw_gemm_epilogue ep = { .bias = b, .act = TW_GEMM_ACT_RELU };
 *   tw_gemm_f32_ex (FALSE, TRUE, B, out, in, 1.0f, x, in, W, in, 0.0f, y, out, &ep);
 *
 * Results do not depend on the thread count, bit for bit: work is split over
 * rows or columns of C, never over K, and every element is summed in the
 * same order whichever thread computes it.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef enum
{
  TW_GEMM_ACT_NONE,
  TW_GEMM_ACT_RELU,
  TW_GEMM_ACT_LEAKY_RELU,  /* x > 0 ? x : slope · x */
  TW_GEMM_ACT_GELU_TANH,   /* 0.5 x (1 + tanh (√(2/π) (x + 0.044715 x³))) */
} tw_gemm_act;

/* Applied to each tile of C while it is still in registers (bias, pre, ReLU
 * and leaky ReLU) or in L1 (GELU), after the product:
 *
 *   z = alpha · op(A) · op(B) + beta · C + bias    (bias broadcast over rows)
 *   pre = z                                        (when pre is not NULL)
 *   C = act (z)
 *
 * bias: [N] or NULL.  pre: [M, ldpre] (ldpre >= N) or NULL, a second output
 * holding the pre-activation values (what GELU's backward needs; ReLU's can
 * use C itself).  Caller-owned, read or written during the call only. */
typedef struct
{
  const float *bias;
  tw_gemm_act act;
  float slope;  /* LEAKY_RELU only */
  float *pre;
  int64_t ldpre;
} tw_gemm_epilogue;

typedef enum
{
  TW_GEMM_BACKEND_AUTO,      /* per shape, the faster of ours and OpenBLAS on this machine */
  TW_GEMM_BACKEND_OURS,      /* always our kernel (where the CPU runs one) */
  TW_GEMM_BACKEND_OPENBLAS,  /* always cblas_sgemm, epilogue applied after it */
} tw_gemm_backend;
/* The old name of OURS, from when the AVX-512 kernel was the only one. */
#define TW_GEMM_BACKEND_AVX512 TW_GEMM_BACKEND_OURS

/* C = alpha · op(A) · op(B) + beta · C; see the top of this file. */
void tw_gemm_f32 (gboolean trans_a, gboolean trans_b, int64_t M, int64_t N, int64_t K,
                  float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                  float beta, float *C, int64_t ldc);

/* The same with an epilogue (ep may be NULL: plain tw_gemm_f32). */
void tw_gemm_f32_ex (gboolean trans_a, gboolean trans_b, int64_t M, int64_t N, int64_t K,
                     float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                     float beta, float *C, int64_t ldc, const tw_gemm_epilogue *ep);

/* The same in float64 (BLAS semantics, NULL epilogue): always OpenBLAS's
 * dgemm, split over the engine's threads as engine/cpu/blas.h says.  Our
 * kernels are single precision only; float64 runs are the gradient checks'
 * and the parity benchmarks' references, not a speed path. */
void tw_gemm_f64 (gboolean trans_a, gboolean trans_b, int64_t M, int64_t N, int64_t K,
                  double alpha, const double *A, int64_t lda, const double *B, int64_t ldb,
                  double beta, double *C, int64_t ldc);

/* Naive reference for tests, in plain C: sums, beta, bias and activation in
 * double, rounded to float once at the end.  Same arguments and semantics as
 * tw_gemm_f32_ex. */
void tw_gemm_f32_ref (gboolean trans_a, gboolean trans_b, int64_t M, int64_t N, int64_t K,
                      float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                      float beta, float *C, int64_t ldc, const tw_gemm_epilogue *ep);

/* The backend in force is, in order: the last tw_gemm_set_backend, else the
 * environment variable TWB_GEMM (auto, ours, openblas; avx512 is read as
 * ours) read at first use, else AUTO.  Returns FALSE (and changes nothing)
 * when OURS is asked for on a CPU that runs none of our kernels.
 * Process-wide; do not change it while another thread is inside
 * tw_gemm_f32. */
gboolean tw_gemm_set_backend (tw_gemm_backend backend);
tw_gemm_backend tw_gemm_get_backend (void);

/* TRUE when the CPU (and compiler) support the AVX-512 kernel. */
gboolean tw_gemm_have_avx512 (void);
/* TRUE when the CPU runs one of our kernels (AVX-512, else AVX2 + FMA). */
gboolean tw_gemm_have_kernel (void);

/* What tw_gemm_f32 uses with the backend in force: "avx512 14x32", "avx2
 * 6x16", "openblas fallback", or for AUTO "avx512 14x32 or openblas, per
 * shape" (likewise for avx2).  Static string.  The AVX-512 tile is 14 × 32,
 * not 16 × 32: 16 rows × 2 vectors of accumulators plus the two B vectors
 * would need 34 of the 32 zmm registers. */
const char *tw_gemm_kernel_name (void);

/* One remembered choice of AUTO: for this shape (op(A) [m, k], op(B) [k,
 * n], with or without an epilogue) offered this many threads, ours or
 * OpenBLAS and on how many threads, with the per-call times that decided it
 * (the fastest of `samples` measurements, each in another process: a choice
 * is re-measured by the first 3 processes that meet it, so one run on a
 * busy machine cannot fix a wrong choice for good).
 *
 * At threads > 1 both kernels are timed on one thread too: below some size
 * splitting a product costs more than it saves (waking the team, packing an
 * operand once per thread), and that size differs between machines (an
 * AVX-512 Xeon, where OpenBLAS is fast and a core's wake-up slow, against
 * the EPYC the thresholds were first set on), so it is measured rather than
 * fixed.  One thread is chosen only when more than 3 % faster. */
typedef struct
{
  gboolean trans_a, trans_b;
  int64_t m, n, k;
  gboolean epilogue;
  int threads;                  /* offered (the key) */
  gboolean ours;                /* the kernel that runs it */
  int run_threads;              /* threads it runs on: threads, or 1 */
  double ours_us, openblas_us;  /* on `threads` threads */
  double serial_ours_us, serial_openblas_us; /* on one (0: threads is 1, or not measured) */
  int samples;
} tw_gemm_choice;

/* Adds c to b as one JSON object: trans_a, trans_b, m, n, k, epilogue,
 * threads (integers), kernel ("ours" or "openblas"), run_threads, ours_us,
 * openblas_us, serial_ours_us, serial_openblas_us, samples — the form of
 * the cache file and of `twb devices --json`. */
struct _JsonBuilder;
void tw_gemm_choice_to_json (const tw_gemm_choice *c, struct _JsonBuilder *b);

/* The choices known to this process (read from the machine's cache file or
 * measured since), sorted by shape.  Free with g_array_unref. */
GArray *tw_gemm_choices (void);
/* The machine's cache file ($XDG_CACHE_HOME/twb/gemm-ID.json), or NULL when
 * there is no cache directory.  g_free it. */
char *tw_gemm_choice_cache_path (void);
/* Shape measurements this process has made (a shape read from the cache
 * with fewer than 3 measurements is measured once more). */
guint tw_gemm_choice_measured (void);
/* Writes pending choices to the cache file now (otherwise at most once a
 * second, and at exit). */
void tw_gemm_choice_flush (void);
/* Writes pending choices, then forgets the table: the next product reads the
 * cache file again, as a new process would (and XDG_CACHE_HOME anew). */
void tw_gemm_choice_forget (void);

/* Threads for our kernels (OpenMP); n <= 0 means omp_get_max_threads ()
 * at call time (the default).  The OpenBLAS fallback keeps OpenBLAS's own
 * setting (openblas_set_num_threads), which eager mode owns. */
void tw_gemm_set_num_threads (int n);
int tw_gemm_get_num_threads (void);

G_END_DECLS
