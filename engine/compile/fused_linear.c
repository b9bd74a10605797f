/* fused_linear.c — fused kernels of dense layers: GEMM with a bias and
 * activation epilogue, the activation's backward folded into the GEMM that
 * produces its incoming gradient, and the bias gradient folded into the
 * masking pass.  All through tw_gemm_f32 (AVX-512 where the CPU has it,
 * OpenBLAS otherwise: see engine/cpu/gemm.h).
 *
 * Bitwise notes: the masking and column sums are the generic kernels'
 * expressions in the generic kernels' order (relu_grad: y > 0 ? g : 0,
 * linear_grad_bias: tw_colsum_f32's blocked order), so only the GEMMs
 * differ from the unfused program, by float32 rounding of the sums.
 */
#define G_LOG_DOMAIN "twb-compile"

#include "engine/compile/fuse-private.h"
#include "engine/cpu/parallel.h"
#include "engine/cpu/scan.h"

#include <string.h>

/* Loops go parallel above this many elements (an OpenMP region costs about
 * 1 µs even when it does nothing: see engine/ops/nn-private.h). */
#define FUSED_PAR_MIN 32768

static int
kctx_threads (const tw_kctx *ctx)
{
  return ctx && ctx->num_threads > 0 ? ctx->num_threads : 1;
}

gboolean
tw_fused_linear_fwd (const tw_kctx *ctx, const tw_instr *ins, tw_tensor *const *in,
                     tw_tensor *const *out, GError **error)
{
  const tw_fused_linear *k = ins->kdata;
  const tw_tensor *x = in[0], *w = in[1];
  int64_t N = w->shape[0], K = w->shape[1];
  int64_t M = tw_tensor_numel (out[0]) / MAX (N, 1);
  tw_gemm_epilogue ep = {
    .bias = k->has_bias ? tw_tensor_f32 (in[2]) : NULL,
    .act = k->act,
    .slope = k->slope,
  };
  /* y [M, N] = act (x [M, K] · W [N, K]ᵀ + b [N]) */
  tw_gemm_f32_ex (FALSE, TRUE, M, N, K, 1.0f, tw_tensor_f32 (x), K, tw_tensor_f32 (w), K, 0.0f,
                  tw_tensor_f32 (out[0]), N, &ep);
  return TRUE;
}

/* Row i of dz [., N] (g may be dz itself) masked by act' (y row). */
static inline void
mask_row (const tw_fused_act_bwd *k, const float *restrict y, const float *g, float *dz, int64_t N)
{
  if (k->mode == TW_FUSED_GEMM)
    {
      if (dz != g)
        memcpy (dz, g, N * sizeof (float));
    }
  /* g [j] is loaded whichever way the select goes, so the loop is a
   * vector blend (a conditional load kept it scalar and branchy: 6x the
   * unfused relu_grad's time). */
  else if (k->act == TW_GEMM_ACT_LEAKY_RELU)
    {
      const float p = k->slope;
#pragma omp simd
      for (int64_t j = 0; j < N; j++)
        {
          float gj = g[j];
          dz[j] = y[j] > 0 ? gj : p * gj;
        }
    }
  else
    {
#pragma omp simd
      for (int64_t j = 0; j < N; j++)
        {
          float gj = g[j];
          dz[j] = y[j] > 0 ? gj : 0.0f;
        }
    }
}

/* Column sums of dz [M, N] into db [N] (tw_colsum_f32's order), in blocks
 * of 256 columns, one block per thread at a time. */
static void
colsum (const float *dz, float *db, int64_t M, int64_t N, int nt)
{
  int64_t nblk = (N + 255) / 256;
  TW_PARALLEL_FOR (TRUE, nt, b, nblk, {
    tw_colsum_f32 (dz, db, M, N, b * 256, MIN (N, b * 256 + 256));
  });
}

gboolean
tw_fused_act_bwd_run (const tw_kctx *ctx, const tw_instr *ins, tw_tensor *const *in,
                  tw_tensor *const *out, GError **error)
{
  const tw_fused_act_bwd *k = ins->kdata;
  float *dz = tw_tensor_f32 (out[0]);
  float *db = k->bias_grad ? tw_tensor_f32 (out[1]) : NULL;
  int64_t N = out[0]->shape[out[0]->ndim - 1];
  int64_t M = tw_tensor_numel (out[0]) / MAX (N, 1);
  const float *y = NULL, *g = dz;

  switch (k->mode)
    {
    case TW_FUSED_MASK:
      y = tw_tensor_f32 (in[0]);
      g = tw_tensor_f32 (in[1]);
      break;
    case TW_FUSED_GEMM_MASK:
    case TW_FUSED_GEMM:
      {
        int a = k->mode == TW_FUSED_GEMM_MASK ? 1 : 0;
        if (a)
          y = tw_tensor_f32 (in[0]);
        const tw_tensor *d = in[a], *w = in[a + 1];
        int64_t P = w->shape[0];
        /* dz [M, N] = d [M, P] · W [P, N] */
        tw_gemm_f32 (FALSE, FALSE, M, N, P, 1.0f, tw_tensor_f32 (d), P, tw_tensor_f32 (w), N,
                     0.0f, dz, N);
        break;
      }
    }
  if (k->mode == TW_FUSED_GEMM && db == NULL)
    return TRUE;

  int nt = kctx_threads (ctx);
  if (nt > 1 && M * N > FUSED_PAR_MIN)
    {
      TW_PARALLEL_FOR (TRUE, nt, i, M, {
        mask_row (k, y ? y + i * N : NULL, g + i * N, dz + i * N, N);
      });
      if (db)
        colsum (dz, db, M, N, nt);
      return TRUE;
    }
  if (db)
    memset (db, 0, N * sizeof (float));
  /* Row blocks of the column sum's: each block is masked, then added to db
   * while it is still in cache. */
  for (int64_t i0 = 0; i0 < M; i0 += TW_COLSUM_ROWS)
    {
      int64_t rows = MIN (TW_COLSUM_ROWS, M - i0);
      for (int64_t i = i0; i < i0 + rows; i++)
        mask_row (k, y ? y + i * N : NULL, g + i * N, dz + i * N, N);
      if (db)
        tw_colsum_block_add_f32 (dz + i0 * N, db, rows, N, 0, N);
    }
  return TRUE;
}

gboolean
tw_fused_linear_grad_weight (const tw_kctx *ctx, const tw_instr *ins, tw_tensor *const *in,
                             tw_tensor *const *out, GError **error)
{
  const tw_tensor *dy = in[0], *x = in[1];
  int64_t N = out[0]->shape[0], K = out[0]->shape[1];
  int64_t M = tw_tensor_numel (dy) / MAX (N, 1);
  /* dW [N, K] = dy [M, N]ᵀ · x [M, K] */
  tw_gemm_f32 (TRUE, FALSE, N, K, M, 1.0f, tw_tensor_f32 (dy), N, tw_tensor_f32 (x), K, 0.0f,
               tw_tensor_f32 (out[0]), K);
  return TRUE;
}
