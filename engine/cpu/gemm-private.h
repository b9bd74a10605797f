/* gemm-private.h — what gemm.c (dispatch, threads, fallback) and
 * gemm_avx512.c (packing, blocking, micro-kernel) share. */
#pragma once

#include "engine/cpu/gemm.h"

G_BEGIN_DECLS

/* One call's arguments, as tw_gemm_f32_ex received them (ep NULL when there
 * is nothing to apply).  M, N, K > 0. */
typedef struct
{
  gboolean ta, tb;
  int64_t M, N, K;
  float alpha, beta;
  const float *A;
  int64_t lda;
  const float *B;
  int64_t ldb;
  float *C;
  int64_t ldc;
  const tw_gemm_epilogue *ep;
} tw_gemm_args;

/* What a micro-tile's write-back does, fixed for one K block (both
 * kernels). */
typedef struct
{
  int64_t kc;
  float alpha;
  float beta;        /* first K block: the caller's beta; later ones: C += */
  gboolean first;    /* first K block: C is scaled by beta (not read if 0) */
  gboolean last;     /* last K block: bias, pre and activation */
  const float *bias; /* at the tile's first column, or NULL */
  tw_gemm_act act;
  float slope;
  float *pre;        /* at the tile's first element, or NULL */
  int64_t ldpre;
} tw_gemm_tile_ctx;

/* Micro-tile of the AVX-512 kernel: MR rows × NR columns of C (NR = two
 * 16-float zmm vectors).  gemm.c splits work between threads along these. */
#define TW_GEMM_MR 14
#define TW_GEMM_NR 32

/* Computes rows [m0, m1) × columns [n0, n1) of C, the whole of K, with the
 * epilogue; one thread's share.  Only call when tw_gemm_avx512_supported (). */
void tw_gemm_avx512_run (const tw_gemm_args *g, int64_t m0, int64_t m1, int64_t n0, int64_t n1);

/* Whether gemm_avx512.c was compiled with its kernel (x86-64 GCC or Clang)
 * and the CPU runs it. */
gboolean tw_gemm_avx512_supported (void);

/* The AVX2 + FMA kernel (gemm_avx2.c), for x86-64 CPUs without AVX-512:
 * the same packed, blocked structure with an MR × NR = 6 × 16 tile (12 ymm
 * accumulators).  Same contract as tw_gemm_avx512_run. */
#define TW_GEMM_AVX2_MR 6
#define TW_GEMM_AVX2_NR 16
void tw_gemm_avx2_run (const tw_gemm_args *g, int64_t m0, int64_t m1, int64_t n0, int64_t n1);
gboolean tw_gemm_avx2_supported (void);

/* The activation on an m × n block in place (rows ldc apart), and GELU on
 * one value: plain C, shared by the kernel's GELU epilogue and the
 * fallback. */
void tw_gemm_act_block (tw_gemm_act act, float slope, float *c, int64_t ldc, int64_t m,
                        int64_t n);
float tw_gemm_gelu_tanh (float x);

/* The calling thread's pack buffer `which` (0: A, 1: B) of at least n
 * floats, 64-byte aligned (a cache line; the kernels' B panels are read
 * with aligned loads); grown on demand and kept for the thread's next
 * call (OpenMP's pool threads live as long as the process). */
float *tw_gemm_pack_buffer (int which, size_t n);

/* One whole call on nt threads: our kernel (split between threads along its
 * tiles) or cblas_sgemm followed by the epilogue. */
typedef void (*tw_gemm_runner) (const tw_gemm_args *g, int nt);

/* Whether AUTO sends this call to our kernel, and on how many threads
 * (*run_nt: nt, or 1): the remembered choice for its shape and thread count,
 * measured now (both runners timed on scratch outputs, on nt threads and,
 * when nt > 1, on one) the first time it is seen on this machine.
 * gemm-choice.c. */
gboolean tw_gemm_choice_ours (const tw_gemm_args *g, int nt, tw_gemm_runner ours,
                              tw_gemm_runner openblas, int *run_nt);

/* "avx512 14x32", "avx2 6x16", or NULL when the CPU runs neither. */
const char *tw_gemm_kernel_name_ours (void);

G_END_DECLS
