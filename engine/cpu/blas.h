/* blas.h — OpenBLAS GEMMs threaded by the engine's own OpenMP team.
 *
 * OpenBLAS's pthread pool and our OpenMP team both spin while waiting for
 * work; on a machine with as many cores as threads they take the CPU from
 * each other (measured: eager LeNet-5 at 2 threads was slower than at 1).
 * So OpenBLAS always runs single-threaded (tw_set_num_threads sets it to 1)
 * and large products are split here over the OpenMP team: the longer side
 * of C in one fixed block per thread, each a whole-K cblas call (no partial
 * sums are combined; results are deterministic for a given thread count,
 * and agree across thread counts to float32 rounding — OpenBLAS's kernels
 * round blocks of different widths differently).  Measured at 2 threads:
 * eager LeNet-5 6.1 → 5.1 ms/step, MLP b256 3.15 → 1.99, 784-4096-4096-10
 * b256 235 → 172 ms.
 *
 * Same arguments as cblas_?gemm in row-major order; the thread count is
 * tw_get_num_threads ().  Inside an OpenMP region it runs on the calling
 * thread alone.
 */
#pragma once

#include <cblas.h>

void tw_blas_sgemm (CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m,
                    blasint n, blasint k, float alpha, const float *a, blasint lda,
                    const float *b, blasint ldb, float beta, float *c, blasint ldc);
void tw_blas_dgemm (CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m,
                    blasint n, blasint k, double alpha, const double *a, blasint lda,
                    const double *b, blasint ldb, double beta, double *c, blasint ldc);
