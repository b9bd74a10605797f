/* passes.c — the order passes run in, and the compile report's records.
 * Each pass lives in its own file (constfold.c, dce.c, cse.c, fold-bn.c,
 * fuse.c, schedule.c, fuse_update.c, inplace.c, memplan.c). */
#define G_LOG_DOMAIN "twb-compile"

#include "engine/compile/program.h"

#include <string.h>

/* What the pass before fusion just made, one line each: "bn1 into conv1"
 * (fold batch norm: the layer is the first source, the batch norm the
 * second), "conv2d+batch_norm+add+relu: conv3, bn3, add1, relu3". */
static char *
describe_fusions (const tw_program *p, tw_pass_flags pass)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < p->instrs->len; i++)
    {
      const tw_instr *ins = g_ptr_array_index (p->instrs, i);
      if (ins->kernel == NULL || !g_str_has_prefix (ins->label, "fused "))
        continue;
      if (pass == TW_PASS_FOLD_BN && strstr (ins->label, "+batch_norm") && ins->sources->len >= 2)
        g_string_append_printf (s, "%s into %s\n", (char *) g_ptr_array_index (ins->sources, 1),
                                (char *) g_ptr_array_index (ins->sources, 0));
      else if (pass == TW_PASS_FUSE_RESIDUAL && strstr (ins->label, "+add"))
        {
          g_string_append_printf (s, "%s:", ins->label + strlen ("fused "));
          for (guint k = 0; k < ins->sources->len; k++)
            g_string_append_printf (s, "%s%s", k ? ", " : " ",
                                    (char *) g_ptr_array_index (ins->sources, k));
          g_string_append_c (s, '\n');
        }
    }
  return g_string_free (s, FALSE);
}

gboolean
tw_program_optimize (tw_program *p, tw_pass_flags passes, GError **error)
{
  static const struct
  {
    tw_pass_flags flag;
    const char *name;
    int (*run) (tw_program *p);
  } table[] = {
    { TW_PASS_CONSTFOLD, "constant folding", tw_pass_constfold },
    { TW_PASS_DCE, "dead code", tw_pass_dce },
    { TW_PASS_CSE, "common subexpressions", tw_pass_cse },
    { TW_PASS_FOLD_BN, "fold batch norm", tw_pass_fold_bn },
    { TW_PASS_FUSE_RESIDUAL, "conv + residual add", tw_pass_fuse_residual },
    { TW_PASS_FUSE, "fusion", tw_pass_fuse },
    { TW_PASS_DCE, "dead code (after fusion)", tw_pass_dce },
    { TW_PASS_SCHEDULE, "schedule updates early", tw_pass_schedule_updates },
    { TW_PASS_FUSE, "fuse weight gradients into updates", tw_pass_fuse_updates },
    { TW_PASS_INPLACE, "in-place and views", tw_pass_inplace },
  };
  /* Instructions of nodes that must stay inspectable are left out of fusion. */
  for (guint i = 0; p->keep_nodes && i < p->instrs->len; i++)
    {
      tw_instr *ins = tw_program_instr (p, (int) i);
      for (guint k = 0; k < ins->sources->len && !ins->pinned; k++)
        ins->pinned = g_hash_table_contains (p->keep_nodes, g_ptr_array_index (ins->sources, k));
    }
  for (guint t = 0; t < G_N_ELEMENTS (table); t++)
    {
      if (!(passes & table[t].flag))
        continue;
      if (table[t].run == tw_pass_fuse_updates && !(passes & TW_PASS_FUSE_UPDATES))
        continue;
      /* The inference passes before fusion run only with it, and only on
       * programs without a backward (training ones have nothing for them). */
      if ((table[t].flag & (TW_PASS_FOLD_BN | TW_PASS_FUSE_RESIDUAL))
          && (!(passes & TW_PASS_FUSE) || p->kind == TW_PROGRAM_TRAIN
              || p->kind == TW_PROGRAM_STEP))
        continue;
      tw_pass_record r = { g_strdup (table[t].name), (int) p->instrs->len, 0, 0, NULL };
      gint64 t0 = g_get_monotonic_time ();
      int n = table[t].run (p);
      r.ms = (g_get_monotonic_time () - t0) / 1000.0;
      r.instrs_after = (int) p->instrs->len;
      if (table[t].flag == TW_PASS_INPLACE)
        r.detail = g_strdup_printf ("%d buffers shared", n);
      else if (table[t].flag == TW_PASS_FOLD_BN || table[t].flag == TW_PASS_FUSE_RESIDUAL)
        r.detail = describe_fusions (p, table[t].flag);
      g_array_append_val (p->records, r);
    }
  tw_pass_record r = { g_strdup ("memory plan"), (int) p->instrs->len, (int) p->instrs->len, 0, NULL };
  gint64 t0 = g_get_monotonic_time ();
  tw_program_plan_memory (p, p->guards);
  r.ms = (g_get_monotonic_time () - t0) / 1000.0;
  r.detail = g_strdup_printf ("arena %zu bytes for %zu bytes of slots", p->arena_bytes,
                              p->unplanned_bytes);
  g_array_append_val (p->records, r);
  return TRUE;
}
