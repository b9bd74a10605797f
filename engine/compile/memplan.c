/* memplan.c — liveness-based placement of every activation, gradient and
 * temporary in one arena.
 *
 * Each buffer (a slot and the slots aliasing it) lives from the instruction
 * that first writes it to the last one that reads it; kept slots (loss,
 * predictions, parameter gradients) live to the end.  Buffers are placed
 * largest first at the lowest 64-byte-aligned offset that overlaps no placed
 * buffer whose lifetime intersects its own (greedy interval packing, as
 * TensorFlow's and XLA's planners do). */
#define G_LOG_DOMAIN "twb-compile"

#include "engine/compile/program.h"

#include <string.h>

#define ALIGN 64
#define GUARD_BYTES 64
/* Programs whose slots add up to more are not placed (offsets stay within
 * int64 below it): their arena is SIZE_MAX, which no allocation grants. */
#define MAX_PLANNED ((size_t) 1 << 62)

typedef struct
{
  int root;
  size_t size;
  int start, end;       /* instruction indices, inclusive */
  int64_t offset;
} buffer;

static int
compare_size_desc (gconstpointer a, gconstpointer b)
{
  const buffer *x = a, *y = b;
  if (x->size != y->size)
    return x->size < y->size ? 1 : -1;
  return x->start - y->start;
}

void
tw_program_plan_memory (tw_program *p, gboolean guards)
{
  int ns = (int) p->slots->len, ni = (int) p->instrs->len;
  g_autofree int *buf_of = g_new (int, ns);
  g_autoptr (GArray) bufs = g_array_new (FALSE, TRUE, sizeof (buffer));

  p->guards = guards;
  p->unplanned_bytes = 0;
  for (int s = 0; s < ns; s++)
    buf_of[s] = -1;
  for (int s = 0; s < ns; s++)
    {
      tw_slot *sl = tw_program_slot (p, s);
      sl->offset = -1;
      if (sl->kind != TW_SLOT_ACT)
        continue;
      if (!g_size_checked_add (&p->unplanned_bytes, p->unplanned_bytes, tw_slot_bytes (sl)))
        p->unplanned_bytes = SIZE_MAX;
      int r = tw_program_alias_root (p, s);
      if (tw_program_slot (p, r)->kind != TW_SLOT_ACT)
        continue;     /* a view of data or a parameter: no arena space */
      if (buf_of[r] < 0)
        {
          buffer b = { r, tw_slot_bytes (tw_program_slot (p, r)), G_MAXINT, -1, -1 };
          buf_of[r] = (int) bufs->len;
          g_array_append_val (bufs, b);
        }
      buf_of[s] = buf_of[r];
    }
  if (p->unplanned_bytes > MAX_PLANNED)
    {
      p->arena_bytes = SIZE_MAX;
      return;
    }
  /* Lifetimes: from the first writer to the last reader of any member. */
  for (int i = 0; i < ni; i++)
    {
      tw_instr *ins = tw_program_instr (p, i);
      for (int k = 0; k < ins->n_out; k++)
        if (buf_of[ins->out[k]] >= 0)
          {
            buffer *b = &g_array_index (bufs, buffer, buf_of[ins->out[k]]);
            b->start = MIN (b->start, i);
            b->end = MAX (b->end, i);
          }
      for (int k = 0; k < ins->n_in; k++)
        if (buf_of[ins->in[k]] >= 0)
          {
            buffer *b = &g_array_index (bufs, buffer, buf_of[ins->in[k]]);
            b->end = MAX (b->end, i);
          }
    }
  for (int s = 0; s < ns; s++)
    if (buf_of[s] >= 0 && tw_program_slot (p, s)->keep)
      g_array_index (bufs, buffer, buf_of[s]).end = ni;
  for (guint b = 0; b < bufs->len; b++)
    {
      buffer *bb = &g_array_index (bufs, buffer, b);
      if (bb->start == G_MAXINT && bb->end < 0)
        {
          bb->size = 0;            /* neither written nor read: left by a pass */
          continue;
        }
      if (bb->start == G_MAXINT)   /* read but never written: alive throughout */
        bb->start = 0;
      if (bb->end < bb->start)
        bb->end = bb->start;
    }

  /* Keep the index order for lookups; place in size order. */
  g_autoptr (GArray) order = g_array_sized_new (FALSE, FALSE, sizeof (buffer), bufs->len);
  g_array_append_vals (order, bufs->data, bufs->len);
  g_array_sort (order, compare_size_desc);
  g_autoptr (GArray) placed = g_array_new (FALSE, FALSE, sizeof (buffer));
  size_t arena = 0;
  const size_t pad = guards ? GUARD_BYTES : 0;

  for (guint i = 0; i < order->len; i++)
    {
      buffer *b = &g_array_index (order, buffer, i);
      if (b->size == 0)
        continue;   /* offset stays -1 */
      size_t need = (b->size + pad + ALIGN - 1) / ALIGN * ALIGN;
      int64_t off = (int64_t) pad;
      /* Candidate offsets: the start and the end of every conflicting buffer;
       * take the lowest that fits. */
      gboolean moved = TRUE;
      while (moved)
        {
          moved = FALSE;
          for (guint j = 0; j < placed->len; j++)
            {
              buffer *q = &g_array_index (placed, buffer, j);
              gboolean live_overlap = !(q->end < b->start || b->end < q->start);
              size_t qneed = (q->size + pad + ALIGN - 1) / ALIGN * ALIGN;
              gboolean mem_overlap = off < q->offset + (int64_t) qneed
                                     && q->offset < off + (int64_t) need;
              if (live_overlap && mem_overlap)
                {
                  off = q->offset + (int64_t) qneed;
                  moved = TRUE;
                }
            }
        }
      b->offset = off;
      g_array_append_val (placed, *b);
      arena = MAX (arena, (size_t) off + need);
      g_array_index (bufs, buffer, buf_of[b->root]).offset = off;
    }
  for (int s = 0; s < ns; s++)
    if (buf_of[s] >= 0)
      tw_program_slot (p, s)->offset = g_array_index (bufs, buffer, buf_of[s]).offset;
  /* Slots of unused buffers: no space (offset -1 from above). */
  p->arena_bytes = arena + pad;
}
