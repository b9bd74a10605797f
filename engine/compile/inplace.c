/* inplace.c — in-place reuse and zero-copy views. */
#define G_LOG_DOMAIN "twb-compile"

#include "engine/compile/program.h"

#include <string.h>

/* Buffers as groups of slots (a slot and the slots aliasing it), with what
 * the pass asks of a group: the last instruction reading any member, and
 * whether one is kept past the program.  A union-find over the slots, so
 * that each question and each new alias costs about O(1): walking every
 * slot and every instruction per question made a chain of n element-wise
 * ops cost O(n^3) (a 4,000-op chain took 8 minutes). */
typedef struct
{
  int *parent;      /* union-find; roots are the buffers' own slots */
  int *last;        /* at a root: the group's last reader, or -1 */
  gboolean *keep;   /* at a root: a member is kept */
} groups;

static int
group_of (groups *g, int s)
{
  int r = s;
  while (g->parent[r] != r)
    r = g->parent[r];
  while (g->parent[s] != r)
    {
      int up = g->parent[s];
      g->parent[s] = r;
      s = up;
    }
  return r;
}

static void
groups_init (groups *g, const tw_program *p)
{
  int ns = (int) p->slots->len;
  g->parent = g_new (int, ns);
  g->last = g_new (int, ns);
  g->keep = g_new0 (gboolean, ns);
  g_autofree int *last_read = g_new (int, ns);
  for (int s = 0; s < ns; s++)
    {
      const tw_slot *sl = tw_program_slot (p, s);
      g->parent[s] = sl->alias_of >= 0 ? sl->alias_of : s;
      last_read[s] = -1;
      g->last[s] = -1;
    }
  for (guint i = 0; i < p->instrs->len; i++)
    {
      const tw_instr *ins = g_ptr_array_index (p->instrs, i);
      for (int k = 0; k < ins->n_in; k++)
        last_read[ins->in[k]] = (int) i;
    }
  for (int s = 0; s < ns; s++)
    {
      int r = group_of (g, s);
      g->last[r] = MAX (g->last[r], last_read[s]);
      g->keep[r] |= tw_program_slot (p, s)->keep;
    }
}

static void
groups_clear (groups *g)
{
  g_free (g->parent);
  g_free (g->last);
  g_free (g->keep);
}

/* Slot o (a group of its own so far) shares the buffer of slot s from now
 * on: alias_of names s's buffer itself, so that following alias_of takes
 * one step however long the chain of in-place ops. */
static void
join (tw_program *p, groups *g, tw_slot *o, int s)
{
  int r = group_of (g, s), mine = group_of (g, o->id);
  o->alias_of = r;
  g->parent[mine] = r;
  g->last[r] = MAX (g->last[r], g->last[mine]);
  g->keep[r] |= g->keep[mine];
}

/* Views (flatten, reshape) share their input's buffer: nothing to copy.  An
 * element-wise op whose input dies at it writes over that input. */
int
tw_pass_inplace (tw_program *p)
{
  int reused = 0;
  groups g;
  groups_init (&g, p);
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
              join (p, &g, o, s->id);
              reused++;
              break;
            }
          if (!tw_tinfo_equal (&s->info, &o->info))
            continue;
          int root = group_of (&g, s->id);
          if (tw_program_slot (p, root)->kind != TW_SLOT_ACT)
            continue;
          /* The input's buffer must not be read after this instruction, and
           * no other input of this instruction may share it (the kernel reads
           * them element by element while writing). */
          if (g.keep[root] || g.last[root] != (int) i)
            continue;
          gboolean shared = FALSE;
          for (int j = 0; j < ins->n_in; j++)
            shared |= j != k && group_of (&g, ins->in[j]) == root;
          if (shared)
            continue;
          join (p, &g, o, s->id);
          reused++;
          break;
        }
    }
  groups_clear (&g);
  return reused;
}
