/* constfold.c — constant folding: instructions whose inputs are all
 * constants run at compile time. */
#define G_LOG_DOMAIN "twb-compile"

#include "engine/compile/program.h"

#include <string.h>

gboolean
tw_instr_is_pure (const tw_instr *ins)
{
  return ins->op != NULL && ins->kernel == NULL
         && !(ins->op->flags & (TW_OP_RANDOM | TW_OP_STATEFUL | TW_OP_SOURCE));
}

/* Instructions whose inputs are all constants run now; their outputs become
 * constants. */
int
tw_pass_constfold (tw_program *p)
{
  int removed = 0;
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_instr *ins = g_ptr_array_index (p->instrs, i);
      gboolean all_const = tw_instr_is_pure (ins) && ins->n_in > 0;
      for (int k = 0; all_const && k < ins->n_in; k++)
        all_const = tw_program_slot (p, ins->in[k])->kind == TW_SLOT_CONST;
      if (!all_const)
        continue;
      tw_tensor *in[TW_MAX_INPUTS + TW_MAX_PARAMS], *out[TW_MAX_OUTPUTS] = { 0 };
      tw_kctx kc = { .training = ins->training, .node_key = ins->node_key, .num_threads = 1 };
      for (int k = 0; k < ins->n_in; k++)
        in[k] = tw_program_slot (p, ins->in[k])->value;
      if (!tw_op_run (ins->op, &kc, ins->attrs, in, ins->n_in, out, NULL))
        continue;   /* leave it to run time, which reports the error */
      for (int k = 0; k < ins->n_out; k++)
        {
          tw_slot *s = tw_program_slot (p, ins->out[k]);
          s->kind = TW_SLOT_CONST;
          s->value = out[k];
          s->producer = -1;
        }
      g_ptr_array_index (p->instrs, i) = NULL;
      tw_instr_free (ins);
      removed++;
    }
  tw_program_compact (p);
  return removed;
}
