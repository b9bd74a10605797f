/* schedule.c — moving each optimizer update (and gradient accumulate)
 * right after its gradient. */
#define G_LOG_DOMAIN "twb-compile"

#include "engine/compile/program.h"

#include <string.h>

/* An optimizer update, or a gradient's accumulate (tw_grad_spec): it
 * writes no slot, only the parameters store. */
static gboolean
movable (const tw_instr *ins)
{
  return ins->phase == TW_PHASE_UPDATE
         || (ins->fused_op && strcmp (ins->fused_op, "grad_accumulate") == 0);
}

/* Each update goes after the last instruction that reads its parameter's
 * old value or produces its gradient (an accumulate, which leaves the
 * parameter alone: right after its gradient).  Linear: one pass finds the last
 * non-update reader of every slot, one more lays the schedule out, updates
 * after their position in their old order. */
int
tw_pass_schedule_updates (tw_program *p)
{
  int n = (int) p->instrs->len, moved = 0;
  guint ns = p->slots->len;
  g_autofree int *last_read = g_new (int, ns);   /* by a non-update instruction, or -1 */
  g_autofree int *after = g_new (int, n);        /* update → insert after this index */
  g_autofree int *head = g_new (int, n + 1);     /* updates going after index j - 1 */
  g_autofree int *next = g_new (int, n);
  g_autofree int *tail = g_new (int, n + 1);
  for (guint s = 0; s < ns; s++)
    last_read[s] = -1;
  for (int j = 0; j < n; j++)
    {
      tw_instr *r = tw_program_instr (p, j);
      if (movable (r))
        continue;
      for (int k = 0; k < r->n_in; k++)
        last_read[r->in[k]] = j;
    }
  for (int j = 0; j <= n; j++)
    head[j] = tail[j] = -1;
  for (int i = 0; i < n; i++)
    {
      tw_instr *u = tw_program_instr (p, i);
      after[i] = -2;
      next[i] = -1;
      if (!movable (u))
        continue;
      int at = tw_program_slot (p, u->in[1])->producer;
      if (u->phase == TW_PHASE_UPDATE)
        at = MAX (at, last_read[u->in[0]]);
      after[i] = at;
      moved += at < n - 1;
      /* Bucket at + 1 (at may be -1), in the updates' order. */
      if (tail[at + 1] < 0)
        head[at + 1] = i;
      else
        next[tail[at + 1]] = i;
      tail[at + 1] = i;
    }
  g_autoptr (GPtrArray) order = g_ptr_array_sized_new (n);
  for (int j = -1; j < n; j++)
    {
      if (j >= 0 && !movable (tw_program_instr (p, j)))
        g_ptr_array_add (order, tw_program_instr (p, j));
      for (int i = head[j + 1]; i >= 0; i = next[i])
        g_ptr_array_add (order, tw_program_instr (p, i));
    }
  g_assert ((int) order->len == n);
  for (int i = 0; i < n; i++)
    g_ptr_array_index (p->instrs, i) = g_ptr_array_index (order, i);
  tw_program_compact (p);
  return moved;
}
