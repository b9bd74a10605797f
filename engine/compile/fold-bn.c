/* fold-bn.c — inference batch norm folded into the layer before it.
 *
 * In an inference (or evaluation) program a batch_norm with running
 * statistics is an affine map per channel:
 *
 *   y = (v - mean) * s + beta,   s = weight / sqrt (running_var + eps)
 *
 * so a conv2d or linear whose output only the batch norm reads can apply it
 * to its own output as the GEMM's result is copied out: the same as running
 * the layer with W' = W · s and b' = (b - mean) · s + beta, without a copy of
 * W.  s and the shift are worked out from the parameters at every run (a
 * few operations per channel), never at compile time: the parameters are
 * bound to the store, and a program cached across training steps, or
 * reused after new weights were loaded into the same store, always sees
 * the values of that run.  The batch norm's own expression and rounding are
 * kept ((v - mean) * s + beta with s rounded to float from a double, as
 * batch_norm's kernel), so folding changes only what the GEMM changes.
 *
 * Training-mode batch norms (batch statistics, running statistics updated)
 * and batch norms without running statistics are left alone, as is every
 * instruction of a training program.
 */
#define G_LOG_DOMAIN "twb-compile"

#include "engine/compile/fuse-private.h"
#include "engine/cpu/parallel.h"

#include <math.h>
#include <string.h>

/* The batch norm reading layer l's output (its only reader), eval mode with
 * running statistics, or NULL. */
static tw_instr *
bn_after (tw_program *p, const tw_instr *l, int *bi)
{
  *bi = tw_fuse_sole_reader (p, l->out[0]);
  tw_instr *b = tw_fuse_at (p, *bi);
  if (!tw_fuse_is_op (b, "batch_norm") || !tw_fuse_all_f32 (p, b) || b->training ||
      b->in[0] != l->out[0])
    return NULL;
  gboolean affine = tw_attrs_get_bool (b->attrs, "affine", TRUE);
  gboolean track = tw_attrs_get_bool (b->attrs, "track_running_stats", TRUE);
  /* Without running statistics batch_norm normalises by the batch's own,
   * in evaluation too. */
  if (!track || b->n_in != 3 + 2 * affine)
    return NULL;
  return b;
}

static int
fold_conv (tw_program *p, int i, tw_instr *c, int bi, tw_instr *b)
{
  if (c->n_in + b->n_in - 1 > TW_MAX_INPUTS + TW_MAX_PARAMS - 1)
    return 0; /* no room for the residual fuse.c may add */
  tw_fused_conv *k = tw_fused_conv_new (c->n_in > 2);
  k->bn = c->n_in;
  k->bn_affine = tw_attrs_get_bool (b->attrs, "affine", TRUE);
  k->bn_eps = tw_attrs_get_float (b->attrs, "eps", 1e-5);
  tw_instr *cov[2] = { c, b };
  tw_instr *f = tw_fuse_new ("fused conv2d+batch_norm", "fused_conv2d", k, c->attrs, cov, 2);
  int in[TW_MAX_INPUTS + TW_MAX_PARAMS], n_in = 0;
  for (int j = 0; j < c->n_in; j++)
    in[n_in++] = c->in[j];
  for (int j = 1; j < b->n_in; j++)
    in[n_in++] = b->in[j];
  tw_fuse_set_io (f, n_in, in, 1, b->out);
  int drop[1] = { i };
  tw_fuse_install (p, bi, f, drop, 1);
  return 1;
}

/* linear [M, N] + batch_norm (+ relu). */
static int
fold_linear (tw_program *p, int i, tw_instr *l, int bi, tw_instr *b)
{
  const tw_slot *o = tw_program_slot (p, l->out[0]);
  if (o->info.ndim != 2 || l->n_in + b->n_in - 1 > TW_MAX_INPUTS + TW_MAX_PARAMS)
    return 0; /* batch_norm's channels would not be the linear's features */
  int ri = tw_fuse_sole_reader (p, b->out[0]);
  tw_instr *r = tw_fuse_at (p, ri);
  gboolean relu = tw_fuse_is_op (r, "relu") && tw_fuse_all_f32 (p, r) && !r->training;
  tw_fused_linear_bn *k = g_new0 (tw_fused_linear_bn, 1);
  k->lin.act = relu ? TW_GEMM_ACT_RELU : TW_GEMM_ACT_NONE;
  k->lin.has_bias = l->n_in > 2;
  k->bn = l->n_in;
  k->affine = tw_attrs_get_bool (b->attrs, "affine", TRUE);
  k->eps = tw_attrs_get_float (b->attrs, "eps", 1e-5);
  tw_instr *cov[3] = { l, b, r };
  tw_instr *f = tw_fuse_new (relu ? "fused linear+batch_norm+relu" : "fused linear+batch_norm",
                             "fused_linear_batch_norm", k, NULL, cov, relu ? 3 : 2);
  int in[TW_MAX_INPUTS + TW_MAX_PARAMS], n_in = 0;
  for (int j = 0; j < l->n_in; j++)
    in[n_in++] = l->in[j];
  for (int j = 1; j < b->n_in; j++)
    in[n_in++] = b->in[j];
  tw_fuse_set_io (f, n_in, in, 1, relu ? r->out : b->out);
  int drop[2] = { i, relu ? bi : -1 };
  tw_fuse_install (p, relu ? ri : bi, f, drop, 2);
  return 1;
}

int
tw_pass_fold_bn (tw_program *p)
{
  int n = 0;
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_instr *l = tw_fuse_at (p, (int) i), *b;
      int bi;
      gboolean conv = tw_fuse_is_op (l, "conv2d"), lin = tw_fuse_is_op (l, "linear");
      if ((!conv && !lin) || l->training || l->phase != TW_PHASE_FORWARD ||
          !tw_fuse_all_f32 (p, l) || (b = bn_after (p, l, &bi)) == NULL)
        continue;
      n += conv ? fold_conv (p, (int) i, l, bi, b) : fold_linear (p, (int) i, l, bi, b);
    }
  tw_program_compact (p);
  return n;
}

/* ---- the kernel of linear + batch_norm (+ relu) ------------------------- */

gboolean
tw_fused_linear_bn_fwd (const tw_kctx *ctx, const tw_instr *ins, tw_tensor *const *in,
                        tw_tensor *const *out, GError **error)
{
  const tw_fused_linear_bn *k = ins->kdata;
  const tw_tensor *w = in[1];
  const int64_t N = w->shape[0], K = w->shape[1];
  const int64_t M = tw_tensor_numel (out[0]) / MAX (N, 1);
  float *y = tw_tensor_f32 (out[0]);
  /* y [M, N] = x [M, K] · W [N, K]ᵀ + b [N] */
  tw_gemm_epilogue ep = { .bias = k->lin.has_bias ? tw_tensor_f32 (in[2]) : NULL };
  tw_gemm_f32_ex (FALSE, TRUE, M, N, K, 1.0f, tw_tensor_f32 (in[0]), K, tw_tensor_f32 (w), K, 0.0f,
                  y, N, &ep);

  /* Per column, from the parameters as they are now: batch_norm's mean,
   * scale (float of a double) and shift. */
  float *cm = tw_scratch (ctx, 3 * MAX (N, 1) * sizeof (float)), *cs = cm + N, *ct = cs + N;
  int j = k->bn;
  const float *bw = k->affine ? tw_tensor_f32 (in[j++]) : NULL;
  const float *bb = k->affine ? tw_tensor_f32 (in[j++]) : NULL;
  const float *rm = tw_tensor_f32 (in[j++]), *rv = tw_tensor_f32 (in[j]);
  for (int64_t c = 0; c < N; c++)
    {
      const double invstd = 1.0 / sqrt ((double) rv[c] + k->eps);
      cm[c] = rm[c];
      cs[c] = (float) (invstd * (bw ? (double) bw[c] : 1.0));
      ct[c] = bb ? bb[c] : 0.0f;
    }
  const gboolean relu = k->lin.act == TW_GEMM_ACT_RELU;
  const int nt = ctx && ctx->num_threads > 0 ? ctx->num_threads : 1;
  /* Loops go parallel above 32768 elements, as batch_norm's. */
  TW_PARALLEL_FOR (M * N > 32768, nt, r, M, {
    float *row = y + r * N;
    if (relu)
      for (int64_t c = 0; c < N; c++)
        {
          const float v = (row[c] - cm[c]) * cs[c] + ct[c];
          row[c] = v > 0 ? v : 0.0f;
        }
    else
      for (int64_t c = 0; c < N; c++)
        row[c] = (row[c] - cm[c]) * cs[c] + ct[c];
  });
  return TRUE;
}
