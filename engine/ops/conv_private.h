/* conv_private.h — geometry shared by the convolution and pooling ops
 * (engine/ops/conv.c, engine/ops/pool.c).  Not a public header. */
#pragma once

#include "engine/op.h"

G_BEGIN_DECLS

/* A 2-D sliding window over NCHW data.  For pools o == c and groups == c. */
typedef struct
{
  int64_t n, c, h, w;           /* input [N, C, H, W] */
  int64_t o, ho, wo;            /* output [N, O, Ho, Wo] */
  int64_t kh, kw;               /* kernel_size */
  int64_t sh, sw;               /* stride */
  int64_t ph, pw;               /* padding (each side) */
  int64_t dh, dw;               /* dilation */
  int64_t groups;
  int threads;                  /* OpenMP threads for the copy loops */
} conv_geom;

/* Read kernel_size, stride, padding and dilation of op into g.  A pair
 * attribute is an int or [h, w].  stride falls back to the kernel size when
 * absent and stride_is_kernel is TRUE (pools), else to 1.  Checks that kernel,
 * stride and dilation are positive and padding is not negative. */
gboolean tw_conv_read_window (const char *op, const tw_attrs *a, gboolean stride_is_kernel,
                              conv_geom *g, GError **error);

/* Output length of a window sliding over `in` (PyTorch floor mode):
 * floor ((in + 2 p - d (k - 1) - 1) / s) + 1.  TW_DIM_N stays symbolic.
 * Returns FALSE when the window does not fit once (the result would be < 1). */
gboolean tw_conv_out_size (int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, int64_t *out);
/* Checked: padded = in + 2 p, span = d (k - 1) + 1; FALSE when either
 * overflows int64 (attributes of any size may reach here). */
gboolean tw_conv_window_fits (int64_t in, int64_t k, int64_t p, int64_t d, int64_t *padded,
                              int64_t *span);

/* Checks the spatial sizes of x [N, C, H, W] against the window in g and sets
 * g->ho, g->wo (TW_DIM_N where H or W is symbolic).  The error names the op,
 * the input and the smallest size that would fit. */
gboolean tw_conv_check_spatial (const char *op, const tw_tinfo *x, conv_geom *g, GError **error);

/* Threads for kernels from the run context (at least 1). */
static inline int
tw_conv_threads (const tw_kctx *ctx)
{
  return ctx && ctx->num_threads > 0 ? ctx->num_threads : 1;
}

/* Registers the pooling ops (pool.c); called by tw_ops_register_conv. */
void tw_ops_register_pool (void);

/* Samples per im2col chunk so the workspace stays within CONV_WS_BUDGET
 * bytes (elements of es bytes); at least 1, at most N. */
int64_t tw_conv_chunk (const conv_geom *g, size_t es);
/* Workspace elements for chunks of nb samples: columns + GEMM output + one
 * padded sample. */
size_t tw_conv_workspace_elems (const conv_geom *g, int64_t nb);
/* Threads that share a convolution's chunks of nb samples at once, each
 * chunk's GEMM on one thread (1: the chunks one after another, each GEMM
 * split over g->threads instead). */
int tw_conv_team (const conv_geom *g, int64_t nb);
/* Runs of consecutive chunks the weight gradient sums into partials of
 * their own (conv_tmpl.h, conv_grad_weight): a function of the shape and
 * nb only, so that the result does not depend on the thread count; 1 when
 * there is a single chunk or the partials would not fit their budget. */
int64_t tw_conv_wgrad_groups (const conv_geom *g, int64_t nb, size_t es);
/* Workspace for `copies` threads' chunks of nb samples plus `extra` more
 * elements, of es bytes each (tw_scratch_try): NULL with an error naming op
 * and the bytes when it cannot be had. */
void *tw_conv_scratch (const tw_kctx *ctx, const conv_geom *g, int64_t nb, int copies,
                       size_t extra, size_t es, const char *op, GError **error);
/* Concrete geometry at run time from x [N, C, H, W] and y [N, O, Ho, Wo]. */
void tw_conv_geom_run (const tw_kctx *ctx, const tw_attrs *a, const tw_tensor *x,
                       const tw_tensor *y, conv_geom *g);

G_END_DECLS
