/* dce.c — dead-code elimination. */
#define G_LOG_DOMAIN "twb-compile"

#include "engine/compile/program.h"

#include <string.h>

/* Drop instructions whose outputs nobody reads and nobody keeps. */
int
tw_pass_dce (tw_program *p)
{
  int removed = 0;
  g_autofree int *uses = g_new0 (int, p->slots->len);
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_instr *ins = g_ptr_array_index (p->instrs, i);
      for (int k = 0; k < ins->n_in; k++)
        uses[ins->in[k]]++;
    }
  for (int i = (int) p->instrs->len - 1; i >= 0; i--)
    {
      tw_instr *ins = g_ptr_array_index (p->instrs, i);
      /* Side effects: updates and running-statistics updates. */
      gboolean live = ins->n_out == 0 || ins->phase == TW_PHASE_UPDATE
                      || (ins->op && (ins->op->flags & TW_OP_STATEFUL) && ins->training);
      for (int k = 0; !live && k < ins->n_out; k++)
        {
          tw_slot *s = tw_program_slot (p, ins->out[k]);
          live = s->keep || uses[s->id] > 0;
        }
      if (live)
        continue;
      for (int k = 0; k < ins->n_in; k++)
        uses[ins->in[k]]--;
      g_ptr_array_index (p->instrs, i) = NULL;
      tw_instr_free (ins);
      removed++;
    }
  tw_program_compact (p);
  return removed;
}
