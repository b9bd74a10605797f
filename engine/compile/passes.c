/* passes.c — constant folding, dead-code elimination, common-subexpression
 * elimination, in-place reuse, and the driver that runs them in order. */
#define G_LOG_DOMAIN "twb-compile"

#include "engine/compile/program.h"

#include <string.h>

static gboolean
is_pure (const tw_instr *ins)
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
      gboolean all_const = is_pure (ins) && ins->n_in > 0;
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

/* Same op, same attributes, same inputs: one computation. */
int
tw_pass_cse (tw_program *p)
{
  int removed = 0;
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_instr *a = g_ptr_array_index (p->instrs, i);
      if (a == NULL || !is_pure (a))
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

static int
alias_root (const tw_program *p, int s)
{
  while (tw_program_slot (p, s)->alias_of >= 0)
    s = tw_program_slot (p, s)->alias_of;
  return s;
}

/* Last instruction reading any slot that shares root's buffer; G_MAXINT when
 * one of them is kept past the program. */
static int
group_last_use (const tw_program *p, int root)
{
  int last = -1;
  for (guint s = 0; s < p->slots->len; s++)
    {
      if (alias_root (p, (int) s) != root)
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
          int root = alias_root (p, s->id);
          if (tw_program_slot (p, root)->kind != TW_SLOT_ACT)
            continue;
          /* The input's buffer must not be read after this instruction, and
           * no other input of this instruction may share it (the kernel reads
           * them element by element while writing). */
          if (group_last_use (p, root) != (int) i)
            continue;
          gboolean shared = FALSE;
          for (int j = 0; j < ins->n_in; j++)
            shared |= j != k && alias_root (p, ins->in[j]) == root;
          if (shared)
            continue;
          o->alias_of = s->id;
          reused++;
          break;
        }
    }
  return reused;
}

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
    { TW_PASS_FUSE, "fusion", tw_pass_fuse },
    { TW_PASS_DCE, "dead code (after fusion)", tw_pass_dce },
    { TW_PASS_SCHEDULE, "schedule updates early", tw_pass_schedule_updates },
    { TW_PASS_FUSE, "fuse weight gradients into updates", tw_pass_fuse_updates },
    { TW_PASS_INPLACE, "in-place and views", tw_pass_inplace },
  };
  for (guint t = 0; t < G_N_ELEMENTS (table); t++)
    {
      if (!(passes & table[t].flag))
        continue;
      tw_pass_record r = { g_strdup (table[t].name), (int) p->instrs->len, 0, 0, NULL };
      gint64 t0 = g_get_monotonic_time ();
      int n = table[t].run (p);
      r.ms = (g_get_monotonic_time () - t0) / 1000.0;
      r.instrs_after = (int) p->instrs->len;
      if (table[t].flag == TW_PASS_INPLACE)
        r.detail = g_strdup_printf ("%d buffers shared", n);
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
