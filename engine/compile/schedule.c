/* schedule.c — moving each optimizer update right after its gradient. */
#define G_LOG_DOMAIN "twb-compile"

#include "engine/compile/program.h"

#include <string.h>

int
tw_pass_schedule_updates (tw_program *p)
{
  int n = (int) p->instrs->len, moved = 0;
  g_autofree int *after = g_new (int, n);     /* update → insert after this index */
  g_autoptr (GPtrArray) order = g_ptr_array_new ();
  for (int i = 0; i < n; i++)
    {
      tw_instr *u = tw_program_instr (p, i);
      after[i] = -2;
      if (u->phase != TW_PHASE_UPDATE)
        continue;
      int at = tw_program_slot (p, u->in[1])->producer;
      for (int j = 0; j < n; j++)
        {
          tw_instr *r = tw_program_instr (p, j);
          if (r->phase == TW_PHASE_UPDATE)
            continue;
          for (int k = 0; k < r->n_in; k++)
            if (r->in[k] == u->in[0])
              at = MAX (at, j);
        }
      after[i] = at;
      moved += at < n - 1;
    }
  for (int j = -1; j < n; j++)
    {
      if (j >= 0 && tw_program_instr (p, j)->phase != TW_PHASE_UPDATE)
        g_ptr_array_add (order, tw_program_instr (p, j));
      for (int i = 0; i < n; i++)
        if (after[i] == j)
          g_ptr_array_add (order, tw_program_instr (p, i));
    }
  g_assert ((int) order->len == n);
  for (int i = 0; i < n; i++)
    g_ptr_array_index (p->instrs, i) = g_ptr_array_index (order, i);
  tw_program_compact (p);
  return moved;
}
