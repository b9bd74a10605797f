/* fused_ew.c — chains of element-wise ops run as one loop.
 *
 * The fused instruction carries a small register program (fuse-private.h).
 * It runs over blocks of EW_BLOCK elements: for each step, one plain loop
 * over the block (the op switch is taken once per block, not per element),
 * so the loops vectorise and the intermediates stay in L1 instead of going
 * through memory between instructions.  Each step uses the generic kernel's
 * expression (engine/ops/elementwise.c) in float, so the fused result is
 * bitwise the unfused one.  Blocks are independent: the split across
 * threads cannot change a result.
 */
#define G_LOG_DOMAIN "twb-compile"

#include "engine/compile/fuse-private.h"
#include "engine/cpu/parallel.h"

#include <math.h>
#include <string.h>

/* 256 floats: a register is 1 KiB, a 16-step program's scratch 16 KiB (L1). */
#define EW_BLOCK 256

int
tw_ew_code_for (const tw_op_def *op, const tw_attrs *attrs, float *p)
{
  static const struct
  {
    const char *name;
    tw_ew_code code;
    const char *attr;
    double dflt;
  } table[] = {
    { "add", TW_EW_ADD, NULL, 0 },
    { "sub", TW_EW_SUB, NULL, 0 },
    { "mul", TW_EW_MUL, NULL, 0 },
    { "div", TW_EW_DIV, NULL, 0 },
    { "neg", TW_EW_NEG, NULL, 0 },
    { "scale", TW_EW_SCALE, "alpha", 1.0 },
    { "add_scalar", TW_EW_ADD_SCALAR, "value", 0.0 },
    { "square", TW_EW_SQUARE, NULL, 0 },
    { "sqrt", TW_EW_SQRT, NULL, 0 },
    { "reciprocal", TW_EW_RECIPROCAL, NULL, 0 },
    { "relu", TW_EW_RELU, NULL, 0 },
    { "leaky_relu", TW_EW_LEAKY_RELU, "negative_slope", 0.01 },
    { "relu_grad", TW_EW_RELU_GRAD, NULL, 0 },
    { "leaky_relu_grad", TW_EW_LEAKY_RELU_GRAD, "negative_slope", 0.01 },
    { "sigmoid_grad", TW_EW_SIGMOID_GRAD, NULL, 0 },
    { "tanh_grad", TW_EW_TANH_GRAD, NULL, 0 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (table); i++)
    if (strcmp (op->name, table[i].name) == 0)
      {
        /* The generic kernels read the attribute as a double and use it as (T) p. */
        *p = table[i].attr ? (float) tw_attrs_get_float (attrs, table[i].attr, table[i].dflt) : 0;
        return table[i].code;
      }
  return -1;
}

/* y [n] = step (a [n], b [n]); the generic kernels' expressions. */
static void
ew_step (const tw_ew_step *s, int64_t n, const float *restrict a, const float *restrict b,
         float *restrict y)
{
  const float p = s->p;
  switch (s->code)
    {
#define EW_LOOP(EXPR)                                                                      \
  _Pragma ("omp simd") for (int64_t i = 0; i < n; i++) y[i] = (EXPR);                     \
  break
    case TW_EW_ADD: EW_LOOP (a[i] + b[i]);
    case TW_EW_SUB: EW_LOOP (a[i] - b[i]);
    case TW_EW_MUL: EW_LOOP (a[i] * b[i]);
    case TW_EW_DIV: EW_LOOP (a[i] / b[i]);
    case TW_EW_NEG: EW_LOOP (-a[i]);
    case TW_EW_SCALE: EW_LOOP (p * a[i]);
    case TW_EW_ADD_SCALAR: EW_LOOP (a[i] + p);
    case TW_EW_SQUARE: EW_LOOP (a[i] * a[i]);
    case TW_EW_SQRT: EW_LOOP (sqrtf (a[i]));
    case TW_EW_RECIPROCAL: EW_LOOP (1.0f / a[i]);
    case TW_EW_RELU: EW_LOOP (a[i] > 0 ? a[i] : 0.0f);
    case TW_EW_LEAKY_RELU: EW_LOOP (a[i] > 0 ? a[i] : p * a[i]);
    case TW_EW_RELU_GRAD: EW_LOOP (a[i] > 0 ? b[i] : 0.0f);
    case TW_EW_LEAKY_RELU_GRAD: EW_LOOP (a[i] > 0 ? b[i] : p * b[i]);
    case TW_EW_SIGMOID_GRAD: EW_LOOP (b[i] * a[i] * (1.0f - a[i]));
    case TW_EW_TANH_GRAD: EW_LOOP (b[i] * (1.0f - a[i] * a[i]));
#undef EW_LOOP
    }
}

/* Elements [i0, i0 + n) of the output, n <= EW_BLOCK. */
static void
ew_block (const tw_ew_program *prog, const float *const *in, float *out, int64_t i0, int64_t n,
          float (*scratch)[EW_BLOCK])
{
  const float *reg[TW_EW_MAX_REGS];
  for (int k = 0; k < prog->n_in; k++)
    reg[k] = in[k] + i0;
  for (int s = 0; s < prog->n_steps; s++)
    {
      const tw_ew_step *st = &prog->steps[s];
      float *dst = s == prog->n_steps - 1 ? out + i0 : scratch[s];
      ew_step (st, n, reg[st->a], reg[st->b], dst);
      reg[prog->n_in + s] = dst;
    }
}

gboolean
tw_fused_ew (const tw_kctx *ctx, const tw_instr *ins, tw_tensor *const *in, tw_tensor *const *out,
             GError **error)
{
  const tw_ew_program *prog = ins->kdata;
  const float *x[TW_MAX_INPUTS];
  for (int k = 0; k < prog->n_in; k++)
    x[k] = tw_tensor_f32 (in[k]);
  float *y = tw_tensor_f32 (out[0]);
  int64_t n = tw_tensor_numel (out[0]), nblk = (n + EW_BLOCK - 1) / EW_BLOCK;
  int nt = ctx && ctx->num_threads > 0 ? ctx->num_threads : 1;

  if (nt > 1 && n > 32768 && (nt = tw_team_threads (nt)) > 1)
    {
      tw_team_region r;
      tw_team_begin (&r, nt);
#pragma omp parallel num_threads (nt)
      {
        float scratch[TW_EW_MAX_STEPS][EW_BLOCK];
#pragma omp for schedule (static) nowait
        for (int64_t b = 0; b < nblk; b++)
          ew_block (prog, x, y, b * EW_BLOCK, MIN (EW_BLOCK, n - b * EW_BLOCK), scratch);
        tw_team_arrive (&r);
      }
      tw_team_end (&r);
      return TRUE;
    }
  float scratch[TW_EW_MAX_STEPS][EW_BLOCK];
  for (int64_t b = 0; b < nblk; b++)
    ew_block (prog, x, y, b * EW_BLOCK, MIN (EW_BLOCK, n - b * EW_BLOCK), scratch);
  return TRUE;
}
