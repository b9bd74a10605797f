/* fuse_update.c — a linear layer's weight gradient fused with its optimizer
 * update, in row blocks.
 *
 * The weight gradient dW [out, in] = dyᵀ·x is the largest buffer of a
 * training step (fc1 of the MLP: 784×256 floats, more than every activation
 * together), and in a STEP program its only reader is the update.  Computing
 * it a block of rows at a time into a small scratch buffer and updating those
 * rows at once means the full gradient never exists: the arena loses its
 * largest slot.  Each element gets exactly the arithmetic of the unfused
 * program (the same GEMM over the same K, the same update formula). */
#define G_LOG_DOMAIN "twb-compile"

#include "engine/compile/program.h"
#include "engine/cpu/gemm.h"
#include "engine/cpu/scan.h"
#include "engine/optim.h"

#include "engine/kernels.h"

#include <math.h>
#include <string.h>

/* Blocks: a quarter of the rows each, in whole 14-row micro-tiles of the
 * GEMM (engine/cpu/gemm.h).  Each block's GEMM reads all of x again, so many
 * thin blocks turn a compute-bound product into a memory-bound one (measured:
 * 4-row blocks made the 4096x4096 layer's step 1.8x slower); four blocks cost
 * three extra passes over x, a few percent of the product, and keep the
 * saving at three quarters of the gradient. */
#define BLOCKS 4
#define TILE_ROWS 14

typedef struct
{
  char *param;              /* state_dict name of the weight */
  int64_t rows;             /* rows per block */
  double grad_sq;           /* squared norm of the last run's gradient (when asked) */
} grad_update_data;

static gboolean grad_update_kernel (const tw_kctx *ctx, const tw_instr *ins, tw_tensor *const *in,
                                    tw_tensor *const *out, GError **error);

double
tw_fused_update_grad_sq (const tw_instr *ins)
{
  return ins->kernel == grad_update_kernel ? ((grad_update_data *) ins->kdata)->grad_sq : NAN;
}

static void
grad_update_data_free (gpointer p)
{
  grad_update_data *d = p;
  g_free (d->param);
  g_free (d);
}

static int64_t
block_rows (int64_t n_out)
{
  int64_t rows = (n_out + BLOCKS - 1) / BLOCKS;
  return MIN ((rows + TILE_ROWS - 1) / TILE_ROWS * TILE_ROWS, n_out);
}

/* in[0] dy [M, out], in[1] x [M, in], in[2] the weight [out, in] (bound to
 * the store; updated in place).  out[0] is the scratch block [rows, in], an
 * arena slot that lives for this instruction only. */
static gboolean
grad_update_kernel (const tw_kctx *ctx, const tw_instr *ins, tw_tensor *const *in,
                    tw_tensor *const *out, GError **error)
{
  grad_update_data *d = ins->kdata;
  const tw_update_ctx *u = ctx->exec_data;
  tw_param *prm = u ? tw_params_get (u->params, d->param) : NULL;
  if (prm == NULL || u->opt == NULL)
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_KERNEL, "no parameter '%s' to update",
                   d->param);
      return FALSE;
    }
  const tw_tensor *dy = in[0], *x = in[1];
  int64_t n_out = in[2]->shape[0], n_in = in[2]->shape[1];
  int64_t m = tw_tensor_numel (dy) / MAX (n_out, 1);
  int64_t rows = d->rows;
  float *scratch = tw_tensor_f32 (out[0]);
  double sq = 0;
  d->grad_sq = NAN;
  for (int64_t r0 = 0; r0 < n_out; r0 += rows)
    {
      int64_t nr = MIN (rows, n_out - r0);
      /* scratch [nr, in] = dy[:, r0 : r0+nr]ᵀ · x */
      tw_gemm_f32 (TRUE, FALSE, nr, n_in, m, 1.0f, tw_tensor_f32 (dy) + r0, n_out,
                   tw_tensor_f32 (x), n_in, 0.0f, scratch, n_in);
      /* The gradient exists only block by block: its norm is taken here. */
      if (u->grad_norms)
        {
          sq += tw_scan_sumsq_f32 (scratch, nr * n_in);
        }
      tw_optimizer_update (u->opt, prm, scratch, r0 * n_in, nr * n_in);
    }
  if (u->grad_norms)
    d->grad_sq = sq;
  return TRUE;
}

void
tw_fused_update_ops_register (void)
{
  static const tw_kernel grad_update = { .op = "fused_linear_grad_weight_update",
                                         .device = TW_DEVICE_CPU,
                                         .name = "fused_linear_grad_weight_update",
                                         .fused = (gpointer) grad_update_kernel };
  tw_fused_op_register (grad_update.op, "a linear layer's weight gradient computed and applied "
                                        "by the optimizer in row blocks");
  tw_kernel_register (&grad_update);
  tw_program_register_update_op ();
}

static gboolean
is_weight_grad (const tw_instr *ins)
{
  return ins->n_out == 1 && ins->n_in == 2 && !ins->pinned
         && ((ins->op && strcmp (ins->op->name, "linear_grad_weight") == 0)
             || g_str_has_prefix (ins->label, "linear_grad_weight"));
}

int
tw_pass_fuse_updates (tw_program *p)
{
  int fused = 0;
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_instr *g = g_ptr_array_index (p->instrs, i);
      if (g == NULL || !is_weight_grad (g))
        continue;
      int gs = g->out[0];
      tw_slot *gslot = tw_program_slot (p, gs);
      if (gslot->keep || gslot->info.dtype != TW_F32)
        continue;
      /* The one reader must be this gradient's update. */
      int ui = tw_program_sole_reader (p, gs);
      tw_instr *u = ui > (int) i ? g_ptr_array_index (p->instrs, ui) : NULL;
      if (u == NULL || u->phase != TW_PHASE_UPDATE || u->n_in != 2 || u->in[1] != gs)
        continue;
      /* Nothing between the gradient and the update may read the weight's
       * old value after its first rows change: the fused instruction sits
       * where the update was scheduled (after every reader of the weight). */
      tw_instr *f = tw_instr_new (NULL, NULL, "fused linear_grad_weight+update");
      grad_update_data *d = g_new0 (grad_update_data, 1);
      const tw_tinfo *w = &tw_program_slot (p, u->in[0])->info;
      d->param = g_strdup (u->kdata);
      f->param = g_strdup (u->kdata);
      f->cost.flops = g->cost.flops + u->cost.flops;
      /* The gradient is neither written nor read back whole. */
      f->cost.bytes_read = g->cost.bytes_read + u->cost.bytes_read;
      f->cost.bytes_written = u->cost.bytes_written;
      d->rows = block_rows (w->dims[0]);
      f->fused_op = "fused_linear_grad_weight_update";
      f->kernel = tw_fused_cpu_kernel (f->fused_op);
      f->kdata = d;
      f->kdata_free = grad_update_data_free;
      f->phase = TW_PHASE_UPDATE;
      f->training = TRUE;
      f->node_key = g->node_key;
      f->n_in = 3;
      f->in[0] = g->in[0];
      f->in[1] = g->in[1];
      f->in[2] = u->in[0];
      tw_tinfo sinfo;
      tw_tinfo_set (&sinfo, TW_F32, 2, (int64_t[]) { d->rows, w->dims[1] });
      f->n_out = 1;
      f->out[0] = tw_program_add_slot (p, TW_SLOT_ACT, &sinfo, "update scratch");
      for (guint k = 0; k < g->sources->len; k++)
        tw_instr_add_source (f, g_ptr_array_index (g->sources, k));
      tw_instr_free (tw_program_set_instr (p, ui, f));
      tw_instr_free (tw_program_set_instr (p, (int) i, NULL));
      fused++;
    }
  tw_program_compact (p);
  return fused;
}
