/* fuse-private.h — what the fusion passes (fuse.c, fold-bn.c) and the fused
 * kernels (fused_linear.c, fused_conv.c, fused_ew.c) share.  Not a public
 * header.
 *
 * A fused instruction has op == NULL, kernel set to one of the functions
 * below and kdata pointing at the kernel's description (freed with g_free
 * unless said otherwise).  Inputs and outputs are contiguous f32 tensors in
 * the order each kernel documents.
 */
#pragma once

#include "engine/compile/program.h"
#include "engine/cpu/gemm.h"

G_BEGIN_DECLS

/* ---- dense layers (fused_linear.c) ------------------------------------- */

typedef struct
{
  tw_gemm_act act;        /* NONE, RELU or LEAKY_RELU */
  float slope;            /* LEAKY_RELU's negative_slope */
  gboolean has_bias;
} tw_fused_linear;

/* in: x [M, K], W [N, K], b [N] (when has_bias); out: y [M, N] = act (x Wᵀ + b). */
gboolean tw_fused_linear_fwd (const tw_kctx *ctx, const tw_instr *ins, tw_tensor *const *in,
                              tw_tensor *const *out, GError **error);

/* The activation's backward, with the bias gradient of the layer below folded in.
 *
 *   mode MASK:         in: y, g              dz = act' (y) ⊙ g
 *   mode GEMM_MASK:    in: y, d, W           dz = act' (y) ⊙ (d W)      (linear_grad_input first)
 *   mode GEMM:         in: d, W              dz = d W                   (linear_grad_input alone)
 *
 * y [M, N] is the activation's OUTPUT (relu' (x) = [y > 0], exact for ReLU
 * and for leaky ReLU with a slope >= 0); d [M, P], W [P, N].  out: dz [M, N],
 * then db [N] (column sums of dz, as linear_grad_bias) when bias_grad. */
typedef enum
{
  TW_FUSED_MASK,
  TW_FUSED_GEMM_MASK,
  TW_FUSED_GEMM,
} tw_fused_bwd_mode;

typedef struct
{
  tw_fused_bwd_mode mode;
  tw_gemm_act act;        /* RELU or LEAKY_RELU (ignored for GEMM) */
  float slope;
  gboolean bias_grad;
} tw_fused_act_bwd;

gboolean tw_fused_act_bwd_run (const tw_kctx *ctx, const tw_instr *ins, tw_tensor *const *in,
                           tw_tensor *const *out, GError **error);

/* linear_grad_weight through tw_gemm: in: dy [M, N], x [M, K]; out: dW [N, K] = dyᵀ x. */
gboolean tw_fused_linear_grad_weight (const tw_kctx *ctx, const tw_instr *ins,
                                      tw_tensor *const *in, tw_tensor *const *out,
                                      GError **error);

/* ---- convolution (fused_conv.c) ---------------------------------------- */

/* ins->attrs holds the conv2d's attributes; kdata a tw_fused_conv.  The
 * epilogue, per output channel o, as the GEMM's output is copied out:
 *   v = acc + b[o]                                   (has_bias)
 *   v = (v - mean[o]) * s[o] + beta[o]               (bn >= 0: an inference batch
 *        s = weight[o] / sqrt (var[o] + eps)          norm folded in, fold-bn.c)
 *   v = v + r                                        (residual >= 0)
 *   y = v > 0 ? v : 0                                (relu)
 * s and the shift are computed from the parameters at every run, so they
 * follow the parameters. */
typedef struct
{
  gboolean relu;          /* conv2d + bias (+ ...) + relu */
  gboolean has_bias;
  int bn;                 /* index of the batch norm's first input: [weight, bias,]
                           * running_mean, running_var (bn_affine: with weight and bias); -1 */
  gboolean bn_affine;
  double bn_eps;
  int residual;           /* index of r [N, O, Ho, Wo] added after the batch norm; -1 */
} tw_fused_conv;

/* A tw_fused_conv for a plain conv2d (no batch norm, residual or relu). */
tw_fused_conv *tw_fused_conv_new (gboolean has_bias);

/* in: x [N, C, H, W], W [O, C/G, kh, kw], b [O] (has_bias), then the batch
 * norm's and the residual's inputs as tw_fused_conv says; out: y [N, O, Ho, Wo]. */
gboolean tw_fused_conv_fwd (const tw_kctx *ctx, const tw_instr *ins, tw_tensor *const *in,
                            tw_tensor *const *out, GError **error);
/* conv2d_grad_input and conv2d_grad_weight through tw_gemm (ins->attrs: the
 * grad op's attributes).  in/out as the ops. */
gboolean tw_fused_conv_grad_input (const tw_kctx *ctx, const tw_instr *ins, tw_tensor *const *in,
                                   tw_tensor *const *out, GError **error);
gboolean tw_fused_conv_grad_weight (const tw_kctx *ctx, const tw_instr *ins,
                                    tw_tensor *const *in, tw_tensor *const *out, GError **error);

/* max_pool2d_grad + relu_grad (+ conv2d_grad_bias) for non-overlapping
 * windows (stride = kernel, no padding, no dilation).  ins->attrs: the
 * pool's attributes; kdata: tw_fused_pool_bwd.
 * in: y [N, C, H, W] (the relu's output = the pool's input), dp [N, C, Ho, Wo];
 * out: dz [N, C, H, W], then db [C] when bias_grad (as conv2d_grad_bias). */
typedef struct
{
  gboolean relu;          /* mask by [y > 0] */
  gboolean bias_grad;
} tw_fused_pool_bwd;

gboolean tw_fused_pool_bwd_run (const tw_kctx *ctx, const tw_instr *ins, tw_tensor *const *in,
                            tw_tensor *const *out, GError **error);
/* relu_grad + conv2d_grad_bias: in: y, g [N, C, H, W]; out: dz, db [C]. */
gboolean tw_fused_relu_conv_bias_bwd (const tw_kctx *ctx, const tw_instr *ins,
                                      tw_tensor *const *in, tw_tensor *const *out,
                                      GError **error);

/* ---- batch norm folded into a linear layer (fold-bn.c) ----------------- */

/* in: x [M, K], W [N, K], b [N] (lin.has_bias), then the batch norm's
 * [weight, bias,] running_mean, running_var from in[bn] on (affine: with
 * weight and bias); out: y [M, N] = act (batch_norm (x Wᵀ + b)), the batch
 * norm in its own expression ((v - mean) * scale + shift, per column). */
typedef struct
{
  tw_fused_linear lin;    /* lin.act: NONE or RELU, applied after the batch norm */
  int bn;
  gboolean affine;
  double eps;
} tw_fused_linear_bn;

gboolean tw_fused_linear_bn_fwd (const tw_kctx *ctx, const tw_instr *ins, tw_tensor *const *in,
                                 tw_tensor *const *out, GError **error);

/* ---- helpers of fuse.c for the passes beside it (fold-bn.c) ------------- */

/* The instruction at i, or NULL (out of range, or removed by this pass). */
tw_instr *tw_fuse_at (tw_program *p, int i);
/* A registered op `name`, not fused yet, not pinned. */
gboolean tw_fuse_is_op (const tw_instr *ins, const char *name);
gboolean tw_fuse_all_f32 (const tw_program *p, const tw_instr *ins);
/* The index of the one instruction reading slot s (once), or -1: none,
 * several, or s is kept past the program. */
int tw_fuse_sole_reader (const tw_program *p, int s);
/* A fused instruction covering covered[0..n-1] (their sources and costs),
 * with the phase, RNG key and training flag of the first; kdata is freed
 * with g_free. */
tw_instr *tw_fuse_new (const char *label, const char *fused_op, gpointer kdata,
                       const tw_attrs *attrs, tw_instr *const *covered, int n);
void tw_fuse_set_io (tw_instr *f, int n_in, const int *in, int n_out, const int *out);
/* f takes position pos; the instructions at drop[] (and pos) are freed,
 * their entries NULL until tw_program_compact. */
void tw_fuse_install (tw_program *p, int pos, tw_instr *f, const int *drop, int n_drop);

/* ---- element-wise chains (fused_ew.c) ---------------------------------- */

/* A register program run per block of elements.  Registers 0..n_in-1 hold
 * the inputs; each step writes a new register; the last step's register is
 * the output. */
typedef enum
{
  TW_EW_ADD, TW_EW_SUB, TW_EW_MUL, TW_EW_DIV,
  TW_EW_NEG, TW_EW_SCALE, TW_EW_ADD_SCALAR, TW_EW_SQUARE, TW_EW_SQRT, TW_EW_RECIPROCAL,
  TW_EW_RELU, TW_EW_LEAKY_RELU,
  TW_EW_RELU_GRAD, TW_EW_LEAKY_RELU_GRAD, TW_EW_SIGMOID_GRAD, TW_EW_TANH_GRAD,
} tw_ew_code;

#define TW_EW_MAX_STEPS 16
#define TW_EW_MAX_REGS (TW_EW_MAX_STEPS + TW_MAX_INPUTS)

typedef struct
{
  tw_ew_code code;
  int a, b;               /* source registers (b unused by unary codes) */
  float p;                /* the op's float attribute */
} tw_ew_step;

typedef struct
{
  int n_in, n_steps;
  tw_ew_step steps[TW_EW_MAX_STEPS];
} tw_ew_program;

/* The code for a registered op, or -1 when the interpreter lacks it.
 * *p receives its attribute. */
int tw_ew_code_for (const tw_op_def *op, const tw_attrs *attrs, float *p);
/* in: n_in same-shaped tensors; out: one of that shape. */
gboolean tw_fused_ew (const tw_kctx *ctx, const tw_instr *ins, tw_tensor *const *in,
                      tw_tensor *const *out, GError **error);

G_END_DECLS
