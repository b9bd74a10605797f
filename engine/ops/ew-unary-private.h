/* ew-unary-private.h — the kernel skeleton shared by the parametrised
 * element-wise ops of act-extra.c and elementwise-more.c: a blocked,
 * threaded loop y[i] = EXPR over x (and dy for the grad ops) with the op's
 * two float parameters p and q, its f32 / f64 dispatch, and the backward
 * rule of the grad ops that mask dy by where x lies. */
#pragma once

#include "engine/cpu/parallel.h"
#include "engine/op.h"

/* Below this many elements a loop stays on one thread (an OpenMP fork/join
 * costs a few µs; these loops take about 1–20 ns an element). */
#define TW_EWU_PAR_MIN 32768

static inline int
tw_ewu_threads (const tw_kctx *ctx)
{
  return ctx && ctx->num_threads > 0 ? ctx->num_threads : 1;
}

/* NAME##_k_TY (n, xs, ds, y, p, q, threads): y[i] = EXPR with x = xs[i],
 * d = ds[i] (ds NULL for the forward ops: d is 0) and T the element type. */
#define TW_EWU_KERNEL(NAME, TY, EXPR)                                                         \
  static void NAME##_k_##TY (int64_t n, const TY *restrict xs, const TY *restrict ds,       \
                             TY *restrict y, double pd, double qd, int nt)                  \
  {                                                                                         \
    typedef TY T;                                                                           \
    const T p = (T) pd, q = (T) qd;                                                         \
    (void) p;                                                                               \
    (void) q;                                                                               \
    (void) ds;                                                                              \
    TW_PARALLEL_FOR (n > TW_EWU_PAR_MIN, nt, blk, (n + 4095) / 4096, {                     \
        int64_t s = blk * 4096, e = MIN (n, s + 4096);                                      \
        for (int64_t i = s; i < e; i++)                                                     \
          {                                                                                 \
            const T x = xs[i];                                                              \
            const T d = ds ? ds[i] : (T) 0;                                                 \
            (void) d;                                                                       \
            y[i] = (EXPR);                                                                  \
          }                                                                                 \
      });                                                                                   \
  }

/* Both kernels of NAME, and the statements of a forward running the one of
 * out[0]'s type: in[0] is x, in[1] dy for the grad ops (n_in > 1). */
#define TW_EWU_KERNELS(NAME, EXPR)                                                            \
  TW_EWU_KERNEL (NAME, float, EXPR)                                                         \
  TW_EWU_KERNEL (NAME, double, EXPR)
#define TW_EWU_RUN(NAME, ctx, in, n_in, out, p, q)                                            \
  do                                                                                        \
    {                                                                                       \
      int64_t n_ = tw_tensor_numel (out[0]);                                                \
      if (out[0]->dtype == TW_F32)                                                          \
        NAME##_k_float (n_, tw_tensor_f32 (in[0]), n_in > 1 ? tw_tensor_f32 (in[1]) : NULL,  \
                        tw_tensor_f32 (out[0]), p, q, tw_ewu_threads (ctx));                \
      else                                                                                  \
        NAME##_k_double (n_, tw_tensor_f64 (in[0]), n_in > 1 ? tw_tensor_f64 (in[1]) : NULL, \
                         tw_tensor_f64 (out[0]), p, q, tw_ewu_threads (ctx));               \
    }                                                                                       \
  while (0)

/* A grad op (x, dy) linear in dy with a mask constant in x almost
 * everywhere: d/dx = 0, d/d(dy) = the same op on the incoming gradient. */
#define TW_EWU_MASK_GRAD_BACKWARD(NAME)                                                       \
  static gboolean NAME##_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, \
                                   tw_val *const *out, tw_val *const *gout,                \
                                   const gboolean *needs, tw_val **gin)                    \
  {                                                                                         \
    if (needs[0])                                                                           \
      gin[0] = tw_emit1 (e, "zeros_like", NULL, in[0]);                                     \
    if (needs[1])                                                                           \
      gin[1] = tw_emit2 (e, #NAME, a, in[0], gout[0]);                                      \
    return TRUE;                                                                            \
  }
