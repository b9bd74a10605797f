/* readers.c — who reads each slot, for the passes (program.h).
 *
 * Passes ask "the one reader of this slot", "how many read it", "the first
 * reader that is a linear_grad_bias": a scan of the schedule per question
 * made them quadratic (a 10,000-layer chain took 46 s in fusion).  The index
 * answers in O(1) (or in the slot's own readers) and is built once per
 * compaction in O(instructions); tw_program_set_instr keeps it exact while a
 * pass replaces instructions in place.
 *
 * Per slot: the number of reads (an instruction reading it twice counts
 * twice) and the sum of the readers' positions, so that a slot read once has
 * its reader's position there; and the positions of its readers at build
 * time plus those set since, which queries check against the schedule
 * (a position may hold another instruction now). */
#define G_LOG_DOMAIN "twb-compile"

#include "engine/compile/program.h"

struct tw_readers
{
  int n_slots;
  int *count;       /* [n_slots] reads */
  int64_t *pos_sum; /* [n_slots] sum of the readers' positions, one per read */
  int *first;       /* [n_slots + 1] CSR offsets into list */
  int *list;        /* reader positions at build time, increasing per slot */
  int *extra_head;  /* [n_slots] first entry of extra for the slot, -1 */
  GArray *extra;    /* extra_entry: readers set since the build */
};

typedef struct
{
  int pos, next;
} extra_entry;

void
tw_readers_free (tw_readers *r)
{
  if (r == NULL)
    return;
  g_free (r->count);
  g_free (r->pos_sum);
  g_free (r->first);
  g_free (r->list);
  g_free (r->extra_head);
  g_array_unref (r->extra);
  g_free (r);
}

void
tw_program_drop_readers (tw_program *p)
{
  g_clear_pointer (&p->readers, tw_readers_free);
}

static tw_readers *
readers_build (const tw_program *p)
{
  tw_readers *r = g_new0 (tw_readers, 1);
  int ns = (int) p->slots->len, ni = (int) p->instrs->len;
  r->n_slots = ns;
  r->count = g_new0 (int, ns);
  r->pos_sum = g_new0 (int64_t, ns);
  r->first = g_new0 (int, ns + 1);
  r->extra_head = g_new (int, ns);
  r->extra = g_array_new (FALSE, FALSE, sizeof (extra_entry));
  for (int s = 0; s < ns; s++)
    r->extra_head[s] = -1;
  int total = 0;
  for (int i = 0; i < ni; i++)
    {
      const tw_instr *ins = g_ptr_array_index (p->instrs, i);
      for (int k = 0; ins && k < ins->n_in; k++)
        {
          r->count[ins->in[k]]++;
          r->pos_sum[ins->in[k]] += i;
          total++;
        }
    }
  for (int s = 0; s < ns; s++)
    r->first[s + 1] = r->first[s] + r->count[s];
  r->list = g_new (int, MAX (total, 1));
  g_autofree int *fill = g_memdup2 (r->first, ns * sizeof (int));
  for (int i = 0; i < ni; i++)
    {
      const tw_instr *ins = g_ptr_array_index (p->instrs, i);
      for (int k = 0; ins && k < ins->n_in; k++)
        r->list[fill[ins->in[k]]++] = i;
    }
  return r;
}

/* The index, built now if there is none or it predates slot. */
static tw_readers *
readers_of (tw_program *p, int slot)
{
  if (p->readers && slot >= p->readers->n_slots)
    tw_program_drop_readers (p);
  if (p->readers == NULL)
    p->readers = readers_build (p);
  return p->readers;
}

tw_instr *
tw_program_set_instr (tw_program *p, int pos, tw_instr *ins)
{
  tw_instr *old = g_ptr_array_index (p->instrs, pos);
  tw_readers *r = p->readers;
  for (int k = 0; r && old && k < old->n_in; k++)
    {
      r->count[old->in[k]]--;
      r->pos_sum[old->in[k]] -= pos;
    }
  for (int k = 0; r && ins && k < ins->n_in; k++)
    {
      int s = ins->in[k];
      if (s >= r->n_slots)
        {
          /* A slot added since the build: start over on the next question. */
          tw_program_drop_readers (p);
          r = NULL;
          break;
        }
      r->count[s]++;
      r->pos_sum[s] += pos;
      extra_entry e = { pos, r->extra_head[s] };
      r->extra_head[s] = (int) r->extra->len;
      g_array_append_val (r->extra, e);
    }
  g_ptr_array_index (p->instrs, pos) = ins;
  return old;
}

int
tw_program_use_count (const tw_program *p, int slot)
{
  tw_readers *r = readers_of ((tw_program *) p, slot);
  return r->count[slot];
}

int
tw_program_sole_reader (const tw_program *p, int slot)
{
  if (tw_program_slot (p, slot)->keep)
    return -1;
  tw_readers *r = readers_of ((tw_program *) p, slot);
  return r->count[slot] == 1 ? (int) r->pos_sum[slot] : -1;
}

/* Whether the instruction at pos (still) reads slot as an input. */
static gboolean
reads_at (const tw_program *p, int pos, int slot)
{
  const tw_instr *ins = g_ptr_array_index (p->instrs, pos);
  for (int k = 0; ins && k < ins->n_in; k++)
    if (ins->in[k] == slot)
      return TRUE;
  return FALSE;
}

int
tw_program_first_reader (const tw_program *p, int slot, tw_reader_pred pred, gconstpointer data)
{
  tw_readers *r = readers_of ((tw_program *) p, slot);
  int best = -1;
  for (int j = r->first[slot]; j < r->first[slot + 1]; j++)
    {
      int pos = r->list[j];
      if ((best < 0 || pos < best) && reads_at (p, pos, slot) &&
          pred (p, pos, g_ptr_array_index (p->instrs, pos), slot, data))
        best = pos;
    }
  for (int e = r->extra_head[slot]; e >= 0; e = g_array_index (r->extra, extra_entry, e).next)
    {
      int pos = g_array_index (r->extra, extra_entry, e).pos;
      if ((best < 0 || pos < best) && reads_at (p, pos, slot) &&
          pred (p, pos, g_ptr_array_index (p->instrs, pos), slot, data))
        best = pos;
    }
  return best;
}

static int
compare_int (gconstpointer a, gconstpointer b)
{
  int x = *(const int *) a, y = *(const int *) b;
  return x < y ? -1 : x > y;
}

GArray *
tw_program_readers (const tw_program *p, int slot)
{
  tw_readers *r = readers_of ((tw_program *) p, slot);
  GArray *out = g_array_new (FALSE, FALSE, sizeof (int));
  for (int j = r->first[slot]; j < r->first[slot + 1]; j++)
    g_array_append_val (out, r->list[j]);
  for (int e = r->extra_head[slot]; e >= 0; e = g_array_index (r->extra, extra_entry, e).next)
    g_array_append_val (out, g_array_index (r->extra, extra_entry, e).pos);
  g_array_sort (out, compare_int);
  guint kept = 0;
  for (guint i = 0; i < out->len; i++)
    {
      int pos = g_array_index (out, int, i);
      if ((kept == 0 || g_array_index (out, int, kept - 1) != pos) && reads_at (p, pos, slot))
        g_array_index (out, int, kept++) = pos;
    }
  g_array_set_size (out, kept);
  return out;
}
