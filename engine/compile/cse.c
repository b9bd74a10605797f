/* cse.c — common-subexpression elimination. */
#define G_LOG_DOMAIN "twb-compile"

#include "engine/compile/program.h"

#include <string.h>

/* Instructions as keys: op, inputs and attributes. */
static guint
instr_hash (gconstpointer key)
{
  const tw_instr *a = key;
  guint h = g_direct_hash (a->op) * 31u + (guint) a->n_in;
  for (int k = 0; k < a->n_in; k++)
    h = h * 31u + (guint) a->in[k];
  return h;
}

static gboolean
instr_equal (gconstpointer x, gconstpointer y)
{
  const tw_instr *a = x, *b = y;
  return a->op == b->op && a->n_in == b->n_in && a->n_out == b->n_out
         && memcmp (a->in, b->in, a->n_in * sizeof (int)) == 0
         && tw_attrs_equal (a->attrs, b->attrs);
}

/* Same op, same attributes, same inputs: one computation.  One pass in
 * schedule order: an instruction's inputs are renamed (merged ones read the
 * first copy's outputs) before it is looked up among the ones seen, so the
 * merges cascade as they would pair by pair, in time linear in the
 * instructions. */
int
tw_pass_cse (tw_program *p)
{
  int removed = 0;
  guint ns = p->slots->len;
  g_autofree int *rename = g_new (int, ns);
  for (guint s = 0; s < ns; s++)
    rename[s] = -1;
  g_autoptr (GHashTable) seen = g_hash_table_new (instr_hash, instr_equal);
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_instr *b = g_ptr_array_index (p->instrs, i);
      if (b == NULL)
        continue;
      for (int k = 0; k < b->n_in; k++)
        if (rename[b->in[k]] >= 0)
          b->in[k] = rename[b->in[k]];
      if (!tw_instr_is_pure (b))
        continue;
      tw_instr *a = g_hash_table_lookup (seen, b);
      if (a == NULL)
        {
          g_hash_table_add (seen, b);
          continue;
        }
      gboolean kept = FALSE;
      for (int k = 0; k < b->n_out; k++)
        kept |= tw_program_slot (p, b->out[k])->keep;
      if (kept)
        continue;
      for (int k = 0; k < b->n_out; k++)
        rename[b->out[k]] = a->out[k];
      for (guint s = 0; s < b->sources->len; s++)
        tw_instr_add_source (a, g_ptr_array_index (b->sources, s));
      g_ptr_array_index (p->instrs, i) = NULL;
      tw_instr_free (b);
      removed++;
    }
  /* What lives past the program: outputs, the loss, final gradients. */
  for (guint k = 0; k < p->output_slots->len; k++)
    {
      int *o = &g_array_index (p->output_slots, int, k);
      if (rename[*o] >= 0)
        *o = rename[*o];
    }
  if (p->loss_slot >= 0 && rename[p->loss_slot] >= 0)
    p->loss_slot = rename[p->loss_slot];
  GHashTableIter it;
  gpointer val;
  g_hash_table_iter_init (&it, p->grad_slot);
  while (g_hash_table_iter_next (&it, NULL, &val))
    if (rename[GPOINTER_TO_INT (val) - 1] >= 0)
      g_hash_table_iter_replace (&it, GINT_TO_POINTER (rename[GPOINTER_TO_INT (val) - 1] + 1));
  tw_program_compact (p);
  return removed;
}
