/* memplan.c — liveness-based placement of every activation, gradient and
 * temporary in one arena.
 *
 * Each buffer (a slot and the slots aliasing it) lives from the instruction
 * that first writes it to the last one that reads it; kept slots (loss,
 * predictions, parameter gradients) live to the end.  Buffers are placed
 * largest first at the lowest 64-byte-aligned offset that overlaps no placed
 * buffer whose lifetime intersects its own (greedy interval packing, as
 * TensorFlow's and XLA's planners do); past MAX_BY_SIZE buffers, in order of
 * first use into the best-fitting free block (linear-scan allocation). */
#define G_LOG_DOMAIN "twb-compile"

#include "engine/compile/program.h"

#include <string.h>

#define ALIGN 64
#define GUARD_BYTES 64
/* Programs whose slots add up to more are not placed (offsets stay within
 * int64 below it): their arena is SIZE_MAX, which no allocation grants. */
#define MAX_PLANNED ((size_t) 1 << 62)
/* Programs of up to this many buffers are placed largest first (greedy by
 * size: O(B²) checks, a few tens of ms here; on the example models its
 * arenas are up to a third smaller than first-use order's); larger ones in
 * order of first use, O(B log B), so that a chain of 100,000 layers plans
 * in well under a second. */
#define MAX_BY_SIZE 4096

typedef struct
{
  int root;
  int index;            /* in the buffers' array */
  size_t size;
  int start, end;       /* instruction indices, inclusive */
  int64_t offset;
} buffer;

/* By first use; at the same instruction, larger first. */
static int
compare_start (gconstpointer a, gconstpointer b)
{
  const buffer *x = a, *y = b;
  if (x->start != y->start)
    return x->start < y->start ? -1 : 1;
  if (x->size != y->size)
    return x->size < y->size ? 1 : -1;
  return x->root - y->root;
}

/* Bytes a buffer takes: its size and the guard after it, 64-byte aligned. */
static int64_t
aligned (size_t size, size_t pad)
{
  return (int64_t) ((size + pad + ALIGN - 1) / ALIGN * ALIGN);
}

/* ---- live buffers: a binary heap by last use ---- */

static void
heap_push (GArray *h, const buffer *b)
{
  g_array_append_val (h, *b);
  buffer *v = (buffer *) h->data;
  for (guint i = h->len - 1; i > 0 && v[(i - 1) / 2].end > v[i].end; i = (i - 1) / 2)
    {
      buffer t = v[i];
      v[i] = v[(i - 1) / 2];
      v[(i - 1) / 2] = t;
    }
}

static buffer
heap_pop (GArray *h)
{
  buffer *v = (buffer *) h->data, top = v[0];
  v[0] = v[h->len - 1];
  g_array_set_size (h, h->len - 1);
  for (guint i = 0;;)
    {
      guint l = 2 * i + 1, r = l + 1, m = i;
      if (l < h->len && v[l].end < v[m].end)
        m = l;
      if (r < h->len && v[r].end < v[m].end)
        m = r;
      if (m == i)
        break;
      buffer t = v[i];
      v[i] = v[m];
      v[m] = t;
      i = m;
    }
  return top;
}

/* ---- the arena's free blocks ---- */

typedef struct
{
  int64_t offset, size;
} block;

typedef struct
{
  GTree *by_offset;   /* block → block (owns them) */
  GTree *by_size;     /* the same blocks by (size, offset) */
  int64_t top;        /* the end of the highest block handed out */
} arena;

static int
compare_offset (gconstpointer a, gconstpointer b, gpointer unused)
{
  const block *x = a, *y = b;
  return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int
compare_size (gconstpointer a, gconstpointer b, gpointer unused)
{
  const block *x = a, *y = b;
  if (x->size != y->size)
    return x->size < y->size ? -1 : 1;
  return compare_offset (a, b, NULL);
}

static arena
arena_init (int64_t base)
{
  arena a = { g_tree_new_full (compare_offset, NULL, g_free, NULL),
              g_tree_new_full (compare_size, NULL, NULL, NULL), base };
  return a;
}

static void
arena_clear (arena *a)
{
  g_tree_destroy (a->by_size);
  g_tree_destroy (a->by_offset);
}

static void
block_add (arena *a, int64_t offset, int64_t size)
{
  block *k = g_new (block, 1);
  k->offset = offset;
  k->size = size;
  g_tree_insert (a->by_offset, k, k);
  g_tree_insert (a->by_size, k, k);
}

static void
block_remove (arena *a, block *k)
{
  g_tree_remove (a->by_size, k);
  g_tree_remove (a->by_offset, k);   /* frees k */
}

/* The offset of need bytes: the smallest free block that fits, else the
 * top (from the free block ending there, if any). */
static int64_t
arena_take (arena *a, int64_t need)
{
  block key = { 0, need };
  GTreeNode *n = g_tree_lower_bound (a->by_size, &key);
  if (n)
    {
      block *k = g_tree_node_key (n);
      int64_t off = k->offset, rest = k->size - need;
      block_remove (a, k);
      if (rest > 0)
        block_add (a, off + need, rest);
      return off;
    }
  int64_t off = a->top;
  GTreeNode *last = g_tree_node_last (a->by_offset);
  block *k = last ? g_tree_node_key (last) : NULL;
  if (k && k->offset + k->size == a->top)
    {
      off = k->offset;
      block_remove (a, k);
    }
  a->top = off + need;
  return off;
}

static void
arena_free (arena *a, int64_t offset, int64_t size)
{
  block key = { offset, 0 };
  GTreeNode *next = g_tree_lower_bound (a->by_offset, &key);
  GTreeNode *prev = next ? g_tree_node_previous (next) : g_tree_node_last (a->by_offset);
  block *p = prev ? g_tree_node_key (prev) : NULL, *q = next ? g_tree_node_key (next) : NULL;
  if (p && p->offset + p->size == offset)
    {
      offset = p->offset;
      size += p->size;
      block_remove (a, p);
    }
  if (q && offset + size == q->offset)
    {
      size += q->size;
      block_remove (a, q);
    }
  block_add (a, offset, size);
}

static int
compare_size_desc (gconstpointer a, gconstpointer b)
{
  const buffer *x = a, *y = b;
  if (x->size != y->size)
    return x->size < y->size ? 1 : -1;
  return x->start - y->start;
}

static int
compare_offset_of (gconstpointer a, gconstpointer b)
{
  const buffer *x = *(const buffer *const *) a, *y = *(const buffer *const *) b;
  return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Largest first, each at the lowest offset (from pad) clear of every placed
 * buffer live at the same time: those, sorted by offset, swept for the
 * first gap.  Sets the offsets in bufs (index order); returns the end of
 * the highest buffer. */
static size_t
place_by_size (GArray *bufs, size_t pad)
{
  g_autoptr (GArray) sorted = g_array_sized_new (FALSE, FALSE, sizeof (buffer), bufs->len);
  g_array_append_vals (sorted, bufs->data, bufs->len);
  g_array_sort (sorted, compare_size_desc);
  g_autoptr (GPtrArray) placed = g_ptr_array_new ();
  g_autoptr (GPtrArray) conflicts = g_ptr_array_new ();
  size_t end = 0;
  for (guint i = 0; i < sorted->len; i++)
    {
      buffer *b = &g_array_index (sorted, buffer, i);
      if (b->size == 0)
        continue;   /* offset stays -1 */
      int64_t need = aligned (b->size, pad), off = (int64_t) pad;
      g_ptr_array_set_size (conflicts, 0);
      for (guint j = 0; j < placed->len; j++)
        {
          buffer *q = g_ptr_array_index (placed, j);
          if (!(q->end < b->start || b->end < q->start))
            g_ptr_array_add (conflicts, q);
        }
      g_ptr_array_sort (conflicts, compare_offset_of);
      for (guint j = 0; j < conflicts->len; j++)
        {
          buffer *q = g_ptr_array_index (conflicts, j);
          if (q->offset >= off + need)
            break;
          off = MAX (off, q->offset + aligned (q->size, pad));
        }
      b->offset = off;
      g_ptr_array_add (placed, b);
      end = MAX (end, (size_t) (off + need));
    }
  for (guint i = 0; i < sorted->len; i++)
    {
      const buffer *b = &g_array_index (sorted, buffer, i);
      g_array_index (bufs, buffer, b->index).offset = b->offset;
    }
  return end;
}

/* In order of first use: a buffer takes the smallest free block that fits
 * (the lowest of equal ones), or the top of the arena; blocks of buffers
 * whose last use has passed return to the free list, joined with free
 * neighbours.  O(B log B): free blocks in two balanced trees, live buffers
 * in a heap by last use.  Same contract as place_by_size. */
static size_t
place_by_start (GArray *bufs, size_t pad)
{
  g_autoptr (GArray) order = g_array_sized_new (FALSE, FALSE, sizeof (buffer), bufs->len);
  g_array_append_vals (order, bufs->data, bufs->len);
  g_array_sort (order, compare_start);
  arena a = arena_init ((int64_t) pad);
  g_autoptr (GArray) live = g_array_new (FALSE, FALSE, sizeof (buffer));   /* heap by end */
  for (guint i = 0; i < order->len; i++)
    {
      buffer *b = &g_array_index (order, buffer, i);
      if (b->size == 0)
        continue;
      while (live->len > 0 && g_array_index (live, buffer, 0).end < b->start)
        {
          buffer q = heap_pop (live);
          arena_free (&a, q.offset, aligned (q.size, pad));
        }
      b->offset = arena_take (&a, aligned (b->size, pad));
      heap_push (live, b);
      g_array_index (bufs, buffer, b->index).offset = b->offset;
    }
  size_t end = (size_t) a.top;
  arena_clear (&a);
  return end;
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
          buffer b = { r, (int) bufs->len, tw_slot_bytes (tw_program_slot (p, r)), G_MAXINT, -1, -1 };
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

  const size_t pad = guards ? GUARD_BYTES : 0;
  size_t arena_end = bufs->len <= MAX_BY_SIZE ? place_by_size (bufs, pad) : place_by_start (bufs, pad);
  for (int s = 0; s < ns; s++)
    if (buf_of[s] >= 0)
      tw_program_slot (p, s)->offset = g_array_index (bufs, buffer, buf_of[s]).offset;
  /* Slots of unused buffers: no space (offset -1 from above). */
  p->arena_bytes = arena_end + pad;
}
