/* nn-private.h — helpers shared by nn.c, matmul.c, nn-act.c and loss.c (not
 * public). */
#pragma once

#include "engine/cpu/parallel.h"
#include "engine/op.h"

G_BEGIN_DECLS

/* Loops go parallel above this many elements: below it an OpenMP fork/join
 * (a few microseconds) costs more than the work.  The brief's common value. */
#define TW_NN_PAR_MIN 32768

/* for (int64_t i = 0; i < n; i++) { body }, on nthreads threads when work
 * exceeds TW_NN_PAR_MIN.  The serial branch stays out of OpenMP entirely: a
 * parallel region costs about 1.1 us even when its if clause is false
 * (measured with libgomp 12 on a 640-element column sum: 1.31 us against
 * 0.22 us), which adds up over the dozen small kernels of an MLP step.
 * The body must not contain _Pragma (put such loops in a helper).  Timed
 * and degraded under contention as every region (engine/cpu/parallel.h). */
#define TW_NN_FOR(i, n, work, nthreads, ...)                                                  \
  TW_PARALLEL_FOR ((work) > TW_NN_PAR_MIN, nthreads, i, n, { __VA_ARGS__; })

/* Threads a kernel may use; 1 when the context does not say. */
static inline int
tw_nn_threads (const tw_kctx *ctx)
{
  return ctx != NULL && ctx->num_threads > 0 ? ctx->num_threads : 1;
}

/* TRUE if t is f32 or f64; else FALSE with "<op> expects <what> of type f32
 * or f64, got i64[N]". */
gboolean tw_nn_check_float (const char *op, const char *what, const tw_tinfo *t, GError **error);
/* Normalise a possibly negative axis of t into *out, or fail naming op. */
gboolean tw_nn_axis (const char *op, int64_t axis, const tw_tinfo *t, int *out, GError **error);
/* The output of argmax / argmin: i64, x's shape without "axis" (default
 * def_axis) unless "keepdims" (default def_keep) keeps it as 1. */
gboolean tw_nn_arg_infer (const char *op, const tw_attrs *a, const tw_tinfo *in, int64_t def_axis,
                          gboolean def_keep, tw_tinfo *out, GError **error);
/* x viewed as (outer, len, inner) around axis. */
void tw_nn_split_axis (const tw_tensor *x, int axis, int64_t *outer, int64_t *len,
                       int64_t *inner);
/* "[3, 1]": the multi-index of flat position flat in shape; caller frees. */
char *tw_nn_index_string (int ndim, const int64_t *shape, int64_t flat);

/* Always FALSE, after setting a TW_OP_ERROR_SHAPE error from the format. */
gboolean tw_nn_shape_error (GError **error, const char *fmt, ...) G_GNUC_PRINTF (2, 3);

/* Pointer to element off of a buffer of es-byte elements. */
static inline void *
tw_nn_at (const void *p, int64_t off, size_t es)
{
  return (char *) p + off * (int64_t) es;
}

/* C (m, n) = op(A) op(B) + beta C in row major through the engine's GEMM
 * dispatch (tw_gemm_f32 / tw_gemm_f64, engine/cpu/gemm.h; dt is TW_F32 or
 * TW_F64); op(A) is (m, k), op(B) is (k, n); lda/ldb/ldc are the row lengths
 * of A, B, C as stored.  Empty sizes are handled. */
void tw_nn_gemm (tw_dtype dt, gboolean ta, gboolean tb, int64_t m, int64_t n, int64_t k,
                 const void *a, int64_t lda, const void *b, int64_t ldb, double beta, void *c,
                 int64_t ldc);

/* Registration of the files the nn family is split into. */
void tw_ops_register_nn_matmul (void);   /* matmul.c */
void tw_ops_register_nn_act (void);      /* nn-act.c: dropout, softmax, log_softmax */

G_END_DECLS
