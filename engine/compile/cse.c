/* cse.c — common-subexpression elimination. */
#define G_LOG_DOMAIN "twb-compile"

#include "engine/compile/program.h"

#include <string.h>

/* Same op, same attributes, same inputs: one computation. */
int
tw_pass_cse (tw_program *p)
{
  int removed = 0;
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_instr *a = g_ptr_array_index (p->instrs, i);
      if (a == NULL || !tw_instr_is_pure (a))
        continue;
      for (guint j = i + 1; j < p->instrs->len; j++)
        {
          tw_instr *b = g_ptr_array_index (p->instrs, j);
          if (b == NULL || b->op != a->op || b->n_in != a->n_in || b->n_out != a->n_out
              || memcmp (a->in, b->in, a->n_in * sizeof (int)) != 0
              || !tw_attrs_equal (a->attrs, b->attrs))
            continue;
          gboolean kept = FALSE;
          for (int k = 0; k < b->n_out; k++)
            kept |= tw_program_slot (p, b->out[k])->keep;
          if (kept)
            continue;
          for (int k = 0; k < b->n_out; k++)
            tw_program_replace_uses (p, b->out[k], a->out[k]);
          for (guint s = 0; s < b->sources->len; s++)
            tw_instr_add_source (a, g_ptr_array_index (b->sources, s));
          g_ptr_array_index (p->instrs, j) = NULL;
          tw_instr_free (b);
          removed++;
        }
    }
  tw_program_compact (p);
  return removed;
}
