/* blas.c — see blas.h. */
#include "engine/cpu/blas.h"
#include "engine/cpu/parallel.h"
#include "engine/device.h"

#include <glib.h>
#include <omp.h>

/* Below ~2M multiply-adds a second thread costs more than it saves (the same
 * threshold the engine's own GEMM measured; engine/cpu/gemm.c). */
#define MIN_WORK ((double) (1 << 21))
/* Row blocks narrower than this starve OpenBLAS's micro-kernel. */
#define MIN_ROWS 16

#define DEFINE_GEMM(fn, T, cblas_fn)                                                             \
  void fn (CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n,      \
           blasint k, T alpha, const T *a, blasint lda, const T *b, blasint ldb, T beta, T *c,   \
           blasint ldc)                                                                          \
  {                                                                                              \
    int nt = omp_in_parallel () ? 1 : tw_get_num_threads ();                                     \
    g_assert (order == CblasRowMajor);                                                           \
    if (nt > 1 && (double) m * n * k >= MIN_WORK && (m >= nt * MIN_ROWS || n >= nt * MIN_ROWS) \
        && (nt = tw_team_threads (nt)) > 1)                                                      \
      {                                                                                          \
        /* Split the longer side of C: the blocks keep OpenBLAS's tiles full. */                \
        gboolean by_rows = m >= nt * MIN_ROWS && (m >= n || n < nt * MIN_ROWS);                  \
        blasint len = by_rows ? m : n;                                                           \
        tw_team_region r_;                                                                       \
        tw_team_begin (&r_, nt);                                                                 \
        _Pragma ("omp parallel num_threads (nt)")                                                \
        {                                                                                        \
        _Pragma ("omp for schedule (static, 1) nowait")                                          \
        for (int t = 0; t < nt; t++)                                                             \
          {                                                                                      \
            blasint i0 = (blasint) ((int64_t) len * t / nt);                                     \
            blasint i1 = (blasint) ((int64_t) len * (t + 1) / nt);                               \
            if (i1 <= i0)                                                                        \
              continue;                                                                          \
            if (by_rows) /* rows i0..i1 of C need rows i0..i1 of op(A) */                        \
              cblas_fn (order, ta, tb, i1 - i0, n, k, alpha,                                     \
                        ta == CblasNoTrans ? a + (int64_t) i0 * lda : a + i0, lda, b, ldb, beta, \
                        c + (int64_t) i0 * ldc, ldc);                                            \
            else /* columns i0..i1 of C need columns i0..i1 of op(B) */                          \
              cblas_fn (order, ta, tb, m, i1 - i0, k, alpha, a, lda,                             \
                        tb == CblasNoTrans ? b + i0 : b + (int64_t) i0 * ldb, ldb, beta, c + i0, \
                        ldc);                                                                    \
          }                                                                                      \
        tw_team_arrive (&r_);                                                                    \
        }                                                                                        \
        tw_team_end (&r_);                                                                       \
        return;                                                                                  \
      }                                                                                          \
    cblas_fn (order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);                      \
  }

DEFINE_GEMM (tw_blas_sgemm, float, cblas_sgemm)
DEFINE_GEMM (tw_blas_dgemm, double, cblas_dgemm)
