/* inplace.c — in-place reuse and zero-copy views. */
#define G_LOG_DOMAIN "twb-compile"

#include "engine/compile/program.h"

#include <string.h>

/* Last instruction reading any slot that shares root's buffer; G_MAXINT when
 * one of them is kept past the program. */
static int
group_last_use (const tw_program *p, int root)
{
  int last = -1;
  for (guint s = 0; s < p->slots->len; s++)
    {
      if (tw_program_alias_root (p, (int) s) != root)
        continue;
      if (tw_program_slot (p, (int) s)->keep)
        return G_MAXINT;
      for (guint i = 0; i < p->instrs->len; i++)
        {
          tw_instr *ins = g_ptr_array_index (p->instrs, i);
          for (int k = 0; k < ins->n_in; k++)
            if (ins->in[k] == (int) s)
              last = MAX (last, (int) i);
        }
    }
  return last;
}

/* Views (flatten, reshape) share their input's buffer: nothing to copy.  An
 * element-wise op whose input dies at it writes over that input. */
int
tw_pass_inplace (tw_program *p)
{
  int reused = 0;
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_instr *ins = g_ptr_array_index (p->instrs, i);
      if (ins->n_out != 1 || ins->kernel)
        continue;
      tw_slot *o = tw_program_slot (p, ins->out[0]);
      if (o->kind != TW_SLOT_ACT || o->alias_of >= 0)
        continue;
      gboolean view = ins->op && (ins->op->flags & TW_OP_VIEW) && ins->n_in >= 1
                      && (strcmp (ins->op->name, "flatten") == 0
                          || strcmp (ins->op->name, "reshape") == 0
                          || strcmp (ins->op->name, "reshape_like") == 0);
      for (int k = 0; k < (view ? 1 : ins->n_in); k++)
        {
          tw_slot *s = tw_program_slot (p, ins->in[k]);
          if (!view && !ins->inplace_ok)
            break;
          if (s->info.dtype != o->info.dtype)
            continue;
          if (view)
            {
              /* Same bytes in the same order: alias whatever the input is.
               * Writers never touch an aliased group before its last reader
               * (checked below for in-place writes). */
              if (s->kind == TW_SLOT_CONST)
                continue;
              o->alias_of = s->id;
              reused++;
              break;
            }
          if (!tw_tinfo_equal (&s->info, &o->info))
            continue;
          int root = tw_program_alias_root (p, s->id);
          if (tw_program_slot (p, root)->kind != TW_SLOT_ACT)
            continue;
          /* The input's buffer must not be read after this instruction, and
           * no other input of this instruction may share it (the kernel reads
           * them element by element while writing). */
          if (group_last_use (p, root) != (int) i)
            continue;
          gboolean shared = FALSE;
          for (int j = 0; j < ins->n_in; j++)
            shared |= j != k && tw_program_alias_root (p, ins->in[j]) == root;
          if (shared)
            continue;
          o->alias_of = s->id;
          reused++;
          break;
        }
    }
  return reused;
}
