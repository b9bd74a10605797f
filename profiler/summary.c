/* summary.c — what a trace adds up to (summary.h).
 *
 * Exact semantics:
 *
 * - Range.  A slice overlaps [start, end) when its interval meets it
 *   (start < its end and its start < end); a zero-length slice when its
 *   instant lies in [start, end).  Its time inside is the clipped length.
 *   start >= end means the whole trace: nothing is clipped, every slice
 *   counts.
 * - Children.  A slice's direct children are the slices one depth deeper on
 *   its lane (tw_slice.depth, set by tw_trace_sort) whose parent it is: the
 *   latest slice before them in start order at that depth, which nests them.
 *   With the lane sorted that is the top of a stack indexed by depth, so
 *   one walk per lane finds every parent, with one hash lookup per slice
 *   inside the range.  A parent that starts long before the range must be
 *   on the stack when the range begins: the walk starts at the latest
 *   top-level slice ending by the range's start (walk_start: a binary
 *   search, then back to it) and stops at the first slice starting at or
 *   after the range's end, so O(log n + k) per lane where k is the slices
 *   from there.
 * - by_name.  One row per (name, phase): the phase as layers reads it
 *   (below), so an op's forward and backward slices are never added up.
 *   count: slices overlapping the range; total: Σ time inside;
 *   self: Σ per slice max (0, its time inside − its direct children's time
 *   inside) (children that overlap one another could make it negative);
 *   flops, bytes: Σ the argument × time inside / duration (1 for a
 *   zero-length slice).  category: that of the first slice counted.
 * - layers.  Only slices with a non-empty "nodes" argument that have no
 *   ancestor with one (a kernel nested in an op is the op's time already).
 *   Each such slice's time inside is split evenly among its nodes (in whole
 *   ns, the remainder to the first ones, so the parts add up).  Phase:
 *   the "phase" argument, else the category (forward / backward / update),
 *   else other.  A slice belongs to the step whose interval holds its start;
 *   n_steps counts the distinct steps (slices outside every step count as one
 *   more), at least 1.  Node names are interned in the trace (the only change
 *   these functions make to it).
 * - steps.  Ours: category "step", name "step N"; PyTorch's: "ProfilerStep#N".
 *   A step number found on several lanes or processes spans from its earliest
 *   start to its latest end.
 * - ranks.  Per process over its lanes: communication slices are those of
 *   category collective, copy, nccl, comm or gpu_memcpy, and kernel slices
 *   named nccl*, *AllReduce*, *Send*, *Recv*, Memcpy*; compute, every other
 *   slice except steps (as above), the steps lane's epochs, data loading
 *   (category data: the model waits for it, so it shows as idle) and
 *   annotations that wrap work rather than do it (categories user_annotation
 *   and Trace, as PyTorch writes them).  Each kind's time is the length of
 *   the union of its intervals (sorted and merged: a sweep); overlap the
 *   length of the two unions' intersection; idle the span less their union.
 * - compare.  Steps present in both traces (by number); each trace's node
 *   time over those steps (slices attributed as in layers, clipped to their
 *   step) divided by the number of such steps.  Traces without a step in
 *   common are compared whole, as one step each.
 * - peak.  See tw_machine_peak_gflops below.
 */
#define G_LOG_DOMAIN "tw-profiler"

#include "profiler/summary.h"
#include "engine/cpu/blas.h"
#include "engine/device.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct
{
  gint64 start, end;
  gboolean all;
} range;

static range
range_make (gint64 start_ns, gint64 end_ns)
{
  if (start_ns >= end_ns)
    return (range) { G_MININT64, G_MAXINT64, TRUE };
  return (range) { start_ns, end_ns, FALSE };
}

/* The time of s inside r in *inside; FALSE when s does not overlap r. */
static inline gboolean
clip (const tw_slice *s, range r, gint64 *inside)
{
  if (r.all)
    {
      *inside = s->dur_ns;
      return TRUE;
    }
  gint64 s0 = s->start_ns, s1 = s->start_ns + s->dur_ns;
  *inside = 0;
  if (s->dur_ns == 0)
    return s0 >= r.start && s0 < r.end;
  if (s0 >= r.end || s1 <= r.start)
    return FALSE;
  *inside = MIN (s1, r.end) - MAX (s0, r.start);
  return TRUE;
}

/* The slice's fraction inside r (for flops and bytes). */
static inline double
fraction (const tw_slice *s, gint64 inside)
{
  return s->dur_ns > 0 ? (double) inside / (double) s->dur_ns : 1.0;
}

/* Where a walk over lane for range r may start: a top-level slice before
 * which nothing reaches r.  The first slice starting in r is found by
 * binary search; from there back to the latest top-level slice that ends
 * by r's start.  That is enough: every slice open when a top-level slice
 * starts ends before it does (it would be its parent otherwise), so none
 * before that one reaches r; and a walk starting at a top-level slice
 * sees the same stack as one from the lane's start.  Typically a step's
 * worth of slices before r, whatever the lane's length. */
static guint
walk_start (const tw_trace *t, guint lane, range r)
{
  guint lo = 0, hi = tw_trace_lane_n_slices (t, lane);
  if (r.all)
    return 0;
  while (lo < hi)
    {
      guint mid = lo + (hi - lo) / 2;
      if (tw_trace_lane_slice (t, lane, mid)->start_ns < r.start)
        lo = mid + 1;
      else
        hi = mid;
    }
  while (lo > 0)
    {
      const tw_slice *s = tw_trace_lane_slice (t, lane, lo - 1);
      if (s->depth == 0 && s->start_ns + s->dur_ns <= r.start)
        return lo - 1;
      lo--;
    }
  return 0;
}

static double
arg_double (const tw_slice *s, const char *key)
{
  const char *v = tw_slice_arg (s, key);
  if (v == NULL || *v == '\0')
    return 0;
  double d = g_ascii_strtod (v, NULL);
  return isfinite (d) ? d : 0;
}

typedef enum
{
  PH_FORWARD,
  PH_BACKWARD,
  PH_UPDATE,
  PH_OTHER,
  PH_N
} phase_kind;

static const char *const phase_names[] = { "forward", "backward", "update" };

/* The "phase" argument, else the category (forward / backward / update),
 * else other. */
static phase_kind
phase_of (const tw_slice *s)
{
  const char *p = tw_slice_arg (s, "phase");
  for (guint pass = 0; pass < 2; pass++, p = s->category)
    if (p)
      for (guint i = 0; i < G_N_ELEMENTS (phase_names); i++)
        if (strcmp (p, phase_names[i]) == 0)
          return (phase_kind) i;
  return PH_OTHER;
}

/* ---- by name ---------------------------------------------------------- */

typedef struct
{
  tw_summary_row r;
  const tw_trace_arg *args;     /* the last slice's, whose flops and bytes are below */
  double flops, bytes;
} row_acc;

typedef struct
{
  gint64 inside, child;
  int row;                      /* -1: not counted */
} open_slice;

/* A row is a (name, phase) pair: the forward and the backward slices of
 * "linear (fc1)" are two rows.  Names are interned, so a pair is found by
 * the name's pointer and the phase: first in a small direct-mapped cache
 * (a lane cycles through a few dozen op names), then in the hash table,
 * keyed by name pointer × PH_N + phase (distinct for distinct pairs: two
 * interned names are at least one byte apart).  64 entries: 1,000,000
 * slices of 16 names in 27 ms against 44 ms with the table alone (best of
 * 4 each, interleaved, on the shared 2-core machine; test-summary's million
 * case).  A slice's phase reads its arguments: the last (args, category)
 * pair's phase is kept, as slices of one op share their interned args. */
#define NAME_CACHE 64

typedef struct
{
  GArray *rows;                 /* row_acc */
  GHashTable *index;            /* name pointer × PH_N + phase → row index + 1 */
  const char *cache_name[NAME_CACHE];
  phase_kind cache_phase[NAME_CACHE];
  int cache_row[NAME_CACHE];
  const tw_trace_arg *last_args;
  const char *last_category;
  phase_kind last_phase;
  gboolean have_last;
} name_table;

static phase_kind
slice_phase (name_table *nt, const tw_slice *s)
{
  if (!nt->have_last || s->args != nt->last_args || s->category != nt->last_category)
    {
      nt->last_args = s->args;
      nt->last_category = s->category;
      nt->last_phase = phase_of (s);
      nt->have_last = TRUE;
    }
  return nt->last_phase;
}

static int
row_for (name_table *nt, const tw_slice *s)
{
  phase_kind ph = slice_phase (nt, s);
  guintptr key = (guintptr) s->name * PH_N + ph;
  guint slot = (guint) ((key >> 3) % NAME_CACHE);
  if (nt->cache_name[slot] == s->name && nt->cache_phase[slot] == ph)
    return nt->cache_row[slot];
  int i = GPOINTER_TO_INT (g_hash_table_lookup (nt->index, (gpointer) key)) - 1;
  if (i < 0)
    {
      row_acc a = { .r = { .name = s->name, .category = s->category,
                           .phase = ph < PH_OTHER ? phase_names[ph] : NULL } };
      g_array_append_val (nt->rows, a);
      i = (int) nt->rows->len - 1;
      g_hash_table_insert (nt->index, (gpointer) key, GINT_TO_POINTER (i + 1));
    }
  nt->cache_name[slot] = s->name;
  nt->cache_phase[slot] = ph;
  nt->cache_row[slot] = i;
  return i;
}

static void
close_slice (name_table *nt, const open_slice *o)
{
  if (o->row < 0)
    return;
  row_acc *a = &g_array_index (nt->rows, row_acc, o->row);
  a->r.self_ns = tw_trace_ns_sum (a->r.self_ns, MAX (o->inside - o->child, 0));
}

static void
by_name_lane (const tw_trace *t, guint lane, range r, name_table *nt, GArray *stack)
{
  g_array_set_size (stack, 0);
  guint n = tw_trace_lane_n_slices (t, lane);
  for (guint k = walk_start (t, lane, r); k < n; k++)
    {
      const tw_slice *s = tw_trace_lane_slice (t, lane, k);
      if (!r.all && s->start_ns >= r.end)
        break;
      while (stack->len > s->depth)
        {
          close_slice (nt, &g_array_index (stack, open_slice, stack->len - 1));
          g_array_set_size (stack, stack->len - 1);
        }
      open_slice o = { 0, 0, -1 };
      if (clip (s, r, &o.inside))
        {
          o.row = row_for (nt, s);
          row_acc *a = &g_array_index (nt->rows, row_acc, o.row);
          if (s->args != a->args)
            {
              a->args = s->args;
              a->flops = arg_double (s, "flops");
              a->bytes = arg_double (s, "bytes");
            }
          a->r.count++;
          a->r.total_ns = tw_trace_ns_sum (a->r.total_ns, o.inside);
          if (a->flops != 0 || a->bytes != 0)
            {
              double f = fraction (s, o.inside);
              a->r.flops += a->flops * f;
              a->r.bytes += a->bytes * f;
            }
          if (s->depth > 0 && stack->len > 0)
            {
              open_slice *parent = &g_array_index (stack, open_slice, stack->len - 1);
              parent->child = tw_trace_ns_sum (parent->child, o.inside);
            }
        }
      g_array_append_val (stack, o);
    }
  while (stack->len)
    {
      close_slice (nt, &g_array_index (stack, open_slice, stack->len - 1));
      g_array_set_size (stack, stack->len - 1);
    }
}

static int
cmp_row (gconstpointer pa, gconstpointer pb)
{
  const tw_summary_row *a = pa, *b = pb;
  if (a->total_ns != b->total_ns)
    return a->total_ns > b->total_ns ? -1 : 1;
  int c = strcmp (a->name, b->name);
  return c ? c : g_strcmp0 (a->phase, b->phase);
}

GArray *
tw_summary_by_name (const tw_trace *t, gint64 start_ns, gint64 end_ns, const guint *lanes,
                    guint n_lanes)
{
  for (guint i = 0; lanes && i < n_lanes; i++)
    g_return_val_if_fail (lanes[i] < tw_trace_n_lanes (t), NULL);
  range r = range_make (start_ns, end_ns);
  name_table nt = { .rows = g_array_new (FALSE, FALSE, sizeof (row_acc)),
                    .index = g_hash_table_new (g_direct_hash, g_direct_equal) };
  g_autoptr (GArray) stack = g_array_new (FALSE, FALSE, sizeof (open_slice));
  guint n = lanes ? n_lanes : tw_trace_n_lanes (t);
  for (guint i = 0; i < n; i++)
    {
      by_name_lane (t, lanes ? lanes[i] : i, r, &nt, stack);
    }
  GArray *rows = g_array_sized_new (FALSE, FALSE, sizeof (tw_summary_row), nt.rows->len);
  for (guint i = 0; i < nt.rows->len; i++)
    g_array_append_val (rows, g_array_index (nt.rows, row_acc, i).r);
  g_array_sort (rows, cmp_row);
  g_array_unref (nt.rows);
  g_hash_table_unref (nt.index);
  return rows;
}

double
tw_summary_row_gflops (const tw_summary_row *r)
{
  if (r->flops <= 0 || r->total_ns <= 0)
    return 0;
  return r->flops / (double) r->total_ns;       /* flop per ns = GFLOP/s */
}

/* ---- steps ------------------------------------------------------------ */

typedef struct
{
  guint64 n;
  gint64 start, end;
} step_span;

/* The step number of s, or FALSE when it is not a step. */
static gboolean
step_number (const tw_slice *s, guint64 *n)
{
  const char *num;
  if (s->category && strcmp (s->category, "step") == 0 && g_str_has_prefix (s->name, "step "))
    num = s->name + strlen ("step ");
  else if (g_str_has_prefix (s->name, "ProfilerStep#"))
    num = s->name + strlen ("ProfilerStep#");
  else
    return FALSE;
  return *num && g_ascii_string_to_unsigned (num, 10, 0, G_MAXUINT64, n, NULL);
}

static int
cmp_step_n (gconstpointer pa, gconstpointer pb)
{
  const step_span *a = pa, *b = pb;
  return a->n < b->n ? -1 : a->n > b->n;
}

static int
cmp_step_start (gconstpointer pa, gconstpointer pb)
{
  const step_span *a = pa, *b = pb;
  if (a->start != b->start)
    return a->start < b->start ? -1 : 1;
  return cmp_step_n (pa, pb);
}

/* Every step of t, one per number, sorted by number.  Free with g_array_unref. */
static GArray *
steps_of (const tw_trace *t)
{
  GArray *all = g_array_new (FALSE, FALSE, sizeof (step_span));
  for (guint l = 0; l < tw_trace_n_lanes (t); l++)
    for (guint k = 0, n = tw_trace_lane_n_slices (t, l); k < n; k++)
      {
        const tw_slice *s = tw_trace_lane_slice (t, l, k);
        step_span sp = { 0, s->start_ns, s->start_ns + s->dur_ns };
        if (step_number (s, &sp.n))
          g_array_append_val (all, sp);
      }
  g_array_sort (all, cmp_step_n);
  guint out = 0;
  for (guint i = 0; i < all->len; i++)
    {
      step_span *s = &g_array_index (all, step_span, i);
      step_span *last = out ? &g_array_index (all, step_span, out - 1) : NULL;
      if (last && last->n == s->n)
        {
          last->start = MIN (last->start, s->start);
          last->end = MAX (last->end, s->end);
        }
      else
        g_array_index (all, step_span, out++) = *s;
    }
  g_array_set_size (all, out);
  return all;
}

gboolean
tw_summary_find_step (const tw_trace *t, guint64 n, gint64 *start_ns, gint64 *end_ns)
{
  g_autoptr (GArray) steps = steps_of (t);
  step_span key = { n, 0, 0 };
  guint i;
  if (!g_array_binary_search (steps, &key, cmp_step_n, &i))
    return FALSE;
  const step_span *s = &g_array_index (steps, step_span, i);
  if (start_ns)
    *start_ns = s->start;
  if (end_ns)
    *end_ns = s->end;
  return TRUE;
}

guint64
tw_summary_n_steps (const tw_trace *t, guint64 *first)
{
  g_autoptr (GArray) steps = steps_of (t);
  if (first)
    *first = steps->len ? g_array_index (steps, step_span, 0).n : 0;
  return steps->len;
}

GArray *
tw_summary_steps (const tw_trace *t)
{
  g_autoptr (GArray) steps = steps_of (t);
  GArray *out = g_array_sized_new (FALSE, FALSE, sizeof (tw_step_span), steps->len);
  for (guint i = 0; i < steps->len; i++)
    {
      const step_span *s = &g_array_index (steps, step_span, i);
      tw_step_span o = { s->n, s->start, s->end };
      g_array_append_val (out, o);
    }
  return out;
}

/* The index in steps (sorted by start) of the step holding instant ts, or -1. */
static int
step_at (const GArray *steps, gint64 ts)
{
  int lo = 0, hi = (int) steps->len;        /* first step starting after ts */
  while (lo < hi)
    {
      int mid = (lo + hi) / 2;
      if (g_array_index (steps, step_span, mid).start <= ts)
        lo = mid + 1;
      else
        hi = mid;
    }
  if (lo == 0)
    return -1;
  const step_span *s = &g_array_index (steps, step_span, lo - 1);
  return ts < s->end || (s->start == s->end && ts == s->start) ? lo - 1 : -1;
}

/* ---- layers ----------------------------------------------------------- */

typedef struct
{
  tw_layer_row r;
  guint8 *seen;                 /* a bit per step, and one for outside any */
  gboolean fused;               /* a slice naming it was fused or named several nodes */
} node_acc;

typedef struct
{
  tw_trace *t;
  GArray *nodes;                /* node_acc */
  GHashTable *by_name;          /* interned node name → index + 1 */
  GHashTable *lists;            /* interned "nodes" value → GArray of guint indices */
  GArray *steps;                /* step_span, sorted by start */
  guint n_bits;
} layer_acc;

static void
free_index_list (gpointer p)
{
  g_array_unref (p);
}

static void
layer_acc_init (layer_acc *acc, const tw_trace *t)
{
  /* Interning node names is the one change made to t (summary.h). */
  acc->t = (tw_trace *) t;
  acc->nodes = g_array_new (FALSE, FALSE, sizeof (node_acc));
  acc->by_name = g_hash_table_new (g_direct_hash, g_direct_equal);
  acc->lists = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, free_index_list);
  acc->steps = steps_of (t);
  g_array_sort (acc->steps, cmp_step_start);
  acc->n_bits = acc->steps->len + 1;
}

static void
layer_acc_clear (layer_acc *acc)
{
  for (guint i = 0; i < acc->nodes->len; i++)
    g_free (g_array_index (acc->nodes, node_acc, i).seen);
  g_array_unref (acc->nodes);
  g_hash_table_unref (acc->by_name);
  g_hash_table_unref (acc->lists);
  g_array_unref (acc->steps);
}

/* The node indices a "nodes" value names (made once per distinct value). */
static const GArray *
node_list (layer_acc *acc, const char *nodes)
{
  GArray *list = g_hash_table_lookup (acc->lists, nodes);
  if (list)
    return list;
  list = g_array_new (FALSE, FALSE, sizeof (guint));
  g_auto (GStrv) parts = g_strsplit (nodes, ",", -1);
  for (guint i = 0; parts[i]; i++)
    {
      const char *name = g_strstrip (parts[i]);
      if (!*name)
        continue;
      const char *key = tw_trace_intern (acc->t, name);
      guint idx = GPOINTER_TO_UINT (g_hash_table_lookup (acc->by_name, key));
      if (idx == 0)
        {
          node_acc a = { .r = { .node = key }, .seen = g_new0 (guint8, (acc->n_bits + 7) / 8) };
          g_array_append_val (acc->nodes, a);
          idx = acc->nodes->len;
          g_hash_table_insert (acc->by_name, (gpointer) key, GUINT_TO_POINTER (idx));
        }
      idx--;
      g_array_append_val (list, idx);
    }
  g_hash_table_insert (acc->lists, (gpointer) nodes, list);
  return list;
}

/* Adds one top-level op slice: inside ns of it in step step (-1: outside). */
static void
layer_add (layer_acc *acc, const tw_slice *s, const char *nodes, gint64 inside, int step)
{
  const GArray *list = node_list (acc, nodes);
  if (list->len == 0)
    return;
  phase_kind ph = phase_of (s);
  const char *fused = tw_slice_arg (s, "fused");
  gboolean is_fused = list->len > 1 || (fused && strcmp (fused, "true") == 0);
  /* Split evenly; the remainder's nanoseconds go to the first nodes, so
   * the parts add up to the slice's time exactly. */
  gint64 part = inside / list->len, rest = inside % list->len;
  guint bit = step < 0 ? acc->n_bits - 1 : (guint) step;
  for (guint i = 0; i < list->len; i++)
    {
      node_acc *a = &g_array_index (acc->nodes, node_acc, g_array_index (list, guint, i));
      gint64 ns = part + ((gint64) i < rest ? 1 : 0);
      switch (ph)
        {
        case PH_FORWARD: a->r.forward_ns = tw_trace_ns_sum (a->r.forward_ns, ns); break;
        case PH_BACKWARD: a->r.backward_ns = tw_trace_ns_sum (a->r.backward_ns, ns); break;
        case PH_UPDATE: a->r.update_ns = tw_trace_ns_sum (a->r.update_ns, ns); break;
        default: a->r.other_ns = tw_trace_ns_sum (a->r.other_ns, ns); break;
        }
      a->r.total_ns = tw_trace_ns_sum (a->r.total_ns, ns);
      a->r.count++;
      a->fused |= is_fused;
      if (!(a->seen[bit / 8] & (1u << (bit % 8))))
        {
          a->seen[bit / 8] |= (guint8) (1u << (bit % 8));
          a->r.n_steps++;
        }
    }
}

/* Every top-level op slice of t overlapping r; with use_step (a flag per
 * step of acc->steps), only those in a flagged step, clipped to it. */
static void
layers_scan (layer_acc *acc, range r, const gboolean *use_step)
{
  const tw_trace *t = acc->t;
  g_autoptr (GArray) covered = g_array_new (FALSE, FALSE, sizeof (gboolean));
  for (guint l = 0; l < tw_trace_n_lanes (t); l++)
    {
      g_array_set_size (covered, 0);
      for (guint k = walk_start (t, l, r), n = tw_trace_lane_n_slices (t, l); k < n; k++)
        {
          const tw_slice *s = tw_trace_lane_slice (t, l, k);
          if (!r.all && s->start_ns >= r.end)
            break;
          g_array_set_size (covered, MIN (covered->len, s->depth));
          gboolean above = covered->len > 0 && g_array_index (covered, gboolean, covered->len - 1);
          const char *nodes = above ? NULL : tw_slice_arg (s, "nodes");
          gboolean mine = nodes && *nodes;
          gboolean flag = above || mine;
          g_array_append_val (covered, flag);
          if (!mine)
            continue;
          int step = step_at (acc->steps, s->start_ns);
          range rr = r;
          if (use_step)
            {
              if (step < 0 || !use_step[step])
                continue;
              const step_span *sp = &g_array_index (acc->steps, step_span, step);
              rr = (range) { sp->start, sp->end, FALSE };
              if (sp->start == sp->end)
                continue;
            }
          gint64 inside;
          if (clip (s, rr, &inside))
            layer_add (acc, s, nodes, inside, step);
        }
    }
}

static int
cmp_layer (gconstpointer pa, gconstpointer pb)
{
  const tw_layer_row *a = pa, *b = pb;
  if (a->total_ns != b->total_ns)
    return a->total_ns > b->total_ns ? -1 : 1;
  return strcmp (a->node, b->node);
}

GArray *
tw_summary_layers (const tw_trace *t, gint64 start_ns, gint64 end_ns)
{
  layer_acc acc;
  layer_acc_init (&acc, t);
  layers_scan (&acc, range_make (start_ns, end_ns), NULL);
  gint64 sum = 0;
  for (guint i = 0; i < acc.nodes->len; i++)
    sum = tw_trace_ns_sum (sum, g_array_index (acc.nodes, node_acc, i).r.total_ns);
  GArray *rows = g_array_sized_new (FALSE, FALSE, sizeof (tw_layer_row), acc.nodes->len);
  for (guint i = 0; i < acc.nodes->len; i++)
    {
      tw_layer_row row = g_array_index (acc.nodes, node_acc, i).r;
      row.share = sum > 0 ? (double) row.total_ns / (double) sum : 0;
      row.n_steps = MAX (row.n_steps, 1);
      g_array_append_val (rows, row);
    }
  g_array_sort (rows, cmp_layer);
  layer_acc_clear (&acc);
  return rows;
}

/* ---- ranks ------------------------------------------------------------ */

typedef struct
{
  gint64 start, end;
} interval;

static int
cmp_interval (gconstpointer pa, gconstpointer pb)
{
  const interval *a = pa, *b = pb;
  if (a->start != b->start)
    return a->start < b->start ? -1 : 1;
  return a->end < b->end ? -1 : a->end > b->end;
}

/* Sorts and merges iv in place into disjoint intervals; returns their length. */
static gint64
union_of (GArray *iv)
{
  g_array_sort (iv, cmp_interval);
  guint out = 0;
  gint64 len = 0;
  for (guint i = 0; i < iv->len; i++)
    {
      interval x = g_array_index (iv, interval, i);
      interval *last = out ? &g_array_index (iv, interval, out - 1) : NULL;
      if (last && x.start <= last->end)
        last->end = MAX (last->end, x.end);
      else
        g_array_index (iv, interval, out++) = x;
    }
  g_array_set_size (iv, out);
  for (guint i = 0; i < iv->len; i++)
    len += g_array_index (iv, interval, i).end - g_array_index (iv, interval, i).start;
  return len;
}

/* The length of the intersection of two disjoint sorted interval lists. */
static gint64
intersection_of (const GArray *a, const GArray *b)
{
  gint64 len = 0;
  guint i = 0, j = 0;
  while (i < a->len && j < b->len)
    {
      const interval *x = &g_array_index (a, interval, i), *y = &g_array_index (b, interval, j);
      gint64 lo = MAX (x->start, y->start), hi = MIN (x->end, y->end);
      if (hi > lo)
        len += hi - lo;
      if (x->end < y->end)
        i++;
      else
        j++;
    }
  return len;
}

static gboolean
is_comm (const tw_slice *s)
{
  const char *cat = s->category ? s->category : "";
  const char *comm_cats[] = { "collective", "copy", "nccl", "comm", "gpu_memcpy" };
  for (guint i = 0; i < G_N_ELEMENTS (comm_cats); i++)
    if (strcmp (cat, comm_cats[i]) == 0)
      return TRUE;
  if (strcmp (cat, "kernel") != 0)
    return FALSE;
  return g_str_has_prefix (s->name, "nccl") || g_str_has_prefix (s->name, "Memcpy")
         || strstr (s->name, "AllReduce") || strstr (s->name, "Send") || strstr (s->name, "Recv");
}

/* Slices that are neither compute nor communication. */
static gboolean
is_wrapper (const tw_slice *s, gboolean steps_lane)
{
  guint64 n;
  const char *cat = s->category ? s->category : "";
  if (step_number (s, &n) || strcmp (cat, "data") == 0 || strcmp (cat, "user_annotation") == 0
      || strcmp (cat, "Trace") == 0)
    return TRUE;
  return steps_lane && (strcmp (cat, "step") == 0 || strcmp (cat, "epoch") == 0);
}

static int
cmp_rank (gconstpointer pa, gconstpointer pb)
{
  const tw_rank_row *a = pa, *b = pb;
  return a->pid < b->pid ? -1 : a->pid > b->pid;
}

GArray *
tw_summary_ranks (const tw_trace *t)
{
  GArray *rows = g_array_new (FALSE, FALSE, sizeof (tw_rank_row));
  g_autoptr (GArray) compute = g_array_new (FALSE, FALSE, sizeof (interval));
  g_autoptr (GArray) comm = g_array_new (FALSE, FALSE, sizeof (interval));
  /* Each process's lanes, found in one pass (looking through every lane
   * for each process took minutes on 100,000 processes). */
  g_autoptr (GHashTable) lanes_of = g_hash_table_new_full (NULL, NULL, NULL,
                                                           (GDestroyNotify) g_array_unref);
  for (guint l = 0; l < tw_trace_n_lanes (t); l++)
    {
      gpointer pid = GINT_TO_POINTER (tw_trace_lane (t, l)->pid);
      GArray *of = g_hash_table_lookup (lanes_of, pid);
      if (of == NULL)
        g_hash_table_insert (lanes_of, pid, of = g_array_new (FALSE, FALSE, sizeof (guint)));
      g_array_append_val (of, l);
    }
  for (guint p = 0; p < tw_trace_n_processes (t); p++)
    {
      const tw_process *proc = tw_trace_process (t, p);
      tw_rank_row row = { .pid = proc->pid, .name = proc->name };
      gint64 lo = G_MAXINT64, hi = G_MININT64;
      g_array_set_size (compute, 0);
      g_array_set_size (comm, 0);
      GArray *of = g_hash_table_lookup (lanes_of, GINT_TO_POINTER (proc->pid));
      for (guint j = 0; of && j < of->len; j++)
        {
          guint l = g_array_index (of, guint, j);
          const tw_lane_info *li = tw_trace_lane (t, l);
          gboolean steps_lane = li->name && strcmp (li->name, "steps") == 0;
          for (guint k = 0, n = tw_trace_lane_n_slices (t, l); k < n; k++)
            {
              const tw_slice *s = tw_trace_lane_slice (t, l, k);
              interval iv = { s->start_ns, s->start_ns + s->dur_ns };
              lo = MIN (lo, iv.start);
              hi = MAX (hi, iv.end);
              if (iv.end == iv.start)
                continue;
              if (is_comm (s))
                g_array_append_val (comm, iv);
              else if (!is_wrapper (s, steps_lane))
                g_array_append_val (compute, iv);
            }
          for (guint k = 0, n = tw_trace_lane_n_instants (t, l); k < n; k++)
            {
              gint64 ts = tw_trace_lane_instant (t, l, k)->t_ns;
              lo = MIN (lo, ts);
              hi = MAX (hi, ts);
            }
        }
      if (lo <= hi)
        {
          row.span_ns = hi - lo;
          row.compute_ns = union_of (compute);
          row.comm_ns = union_of (comm);
          row.overlap_ns = intersection_of (compute, comm);
          /* The union of both, (compute - overlap) + comm, is within the span:
           * no sum here exceeds it. */
          row.idle_ns = MAX (row.span_ns - ((row.compute_ns - row.overlap_ns) + row.comm_ns), 0);
          row.overlap_pct = row.comm_ns > 0 ? 100.0 * (double) row.overlap_ns / (double) row.comm_ns : 0;
        }
      g_array_append_val (rows, row);
    }
  g_array_sort (rows, cmp_rank);
  return rows;
}

/* ---- compare ---------------------------------------------------------- */

/* One trace's side: its layer accumulator over the steps in common, and
 * their count and total time. */
typedef struct
{
  layer_acc acc;
  guint64 n_steps;
  gint64 step_ns;
} compare_side;

static void
compare_scan (compare_side *side, const tw_trace *t, const GArray *common)
{
  layer_acc_init (&side->acc, t);
  side->n_steps = 0;
  side->step_ns = 0;
  if (common->len == 0)
    {
      layers_scan (&side->acc, range_make (0, 0), NULL);
      side->n_steps = 1;
      return;
    }
  GArray *steps = side->acc.steps;
  g_autofree gboolean *use = g_new0 (gboolean, MAX (steps->len, 1));
  for (guint i = 0; i < steps->len; i++)
    {
      const step_span *s = &g_array_index (steps, step_span, i);
      guint at;
      if (g_array_binary_search ((GArray *) common, &s->n, cmp_step_n, &at))
        {
          use[i] = TRUE;
          side->n_steps++;
          side->step_ns = tw_trace_ns_sum (side->step_ns, s->end - s->start);
        }
    }
  layers_scan (&side->acc, range_make (0, 0), use);
}

static int
cmp_compare (gconstpointer pa, gconstpointer pb)
{
  const tw_compare_row *a = pa, *b = pb;
  double x = fabs (a->diff_ns), y = fabs (b->diff_ns);
  if (x != y)
    return x > y ? -1 : 1;
  return strcmp (a->node, b->node);
}

/* The steps of a whose numbers b holds too (sorted by number). */
static GArray *
common_steps (const tw_trace *a, const tw_trace *b)
{
  g_autoptr (GArray) sa = steps_of (a);
  g_autoptr (GArray) sb = steps_of (b);
  GArray *common = g_array_new (FALSE, FALSE, sizeof (step_span));
  for (guint i = 0; i < sa->len; i++)
    {
      guint at;
      if (g_array_binary_search (sb, &g_array_index (sa, step_span, i), cmp_step_n, &at))
        g_array_append_val (common, g_array_index (sa, step_span, i));
    }
  return common;
}

guint64
tw_summary_steps_in_common (const tw_trace *a, const tw_trace *b)
{
  g_autoptr (GArray) common = common_steps (a, b);
  return common->len;
}

GArray *
tw_summary_compare (const tw_trace *a, const tw_trace *b)
{
  g_autoptr (GArray) common = common_steps (a, b);
  compare_side side[2];
  compare_scan (&side[0], a, common);
  compare_scan (&side[1], b, common);
  GArray *rows = g_array_new (FALSE, FALSE, sizeof (tw_compare_row));
  GHashTable *where = g_hash_table_new (g_str_hash, g_str_equal);    /* node → row index + 1 */
  for (guint w = 0; w < 2; w++)
    for (guint i = 0; i < side[w].acc.nodes->len; i++)
      {
        const node_acc *n = &g_array_index (side[w].acc.nodes, node_acc, i);
        guint idx = GPOINTER_TO_UINT (g_hash_table_lookup (where, n->r.node));
        if (idx == 0)
          {
            tw_compare_row row = { .node = n->r.node };
            g_array_append_val (rows, row);
            idx = rows->len;
            g_hash_table_insert (where, (gpointer) n->r.node, GUINT_TO_POINTER (idx));
          }
        tw_compare_row *row = &g_array_index (rows, tw_compare_row, idx - 1);
        double mean = (double) n->r.total_ns / (double) side[w].n_steps;
        if (w == 0)
          {
            row->a_ns = mean;
            row->fused_a = n->fused;
          }
        else
          {
            row->b_ns = mean;
            row->fused_b = n->fused;
          }
      }
  g_hash_table_unref (where);
  for (guint i = 0; i < rows->len; i++)
    {
      tw_compare_row *row = &g_array_index (rows, tw_compare_row, i);
      row->diff_ns = row->b_ns - row->a_ns;
    }
  g_array_sort (rows, cmp_compare);
  tw_compare_row step = { .node = tw_trace_intern (side[0].acc.t, "(step)") };
  if (common->len)
    {
      step.a_ns = (double) side[0].step_ns / (double) side[0].n_steps;
      step.b_ns = (double) side[1].step_ns / (double) side[1].n_steps;
    }
  else
    {
      step.a_ns = (double) tw_trace_duration_ns (a);
      step.b_ns = (double) tw_trace_duration_ns (b);
    }
  step.diff_ns = step.b_ns - step.a_ns;
  g_array_append_val (rows, step);
  layer_acc_clear (&side[0].acc);
  layer_acc_clear (&side[1].acc);
  return rows;
}

/* ---- peak ------------------------------------------------------------- */

/* The size: at least 512 and large enough that one operand exceeds the L2
 * cache the machine reports (so the product streams from L3 or memory, as
 * a real layer's does); then grown until one product takes about 40 ms at
 * the rate the warm-up measured, so that a fast machine (AVX-512, many
 * cores) is timed on a product long enough to be compute-bound and the
 * whole measurement stays near 4 × 40 ms.  At most 4096 (192 MiB). */
#define PEAK_MIN_N 512
#define PEAK_MAX_N 4096
#define PEAK_TARGET_S 0.04

typedef struct
{
  int threads;
  int n;                        /* the size timed */
  double gflops;
} peak_job;

/* One n × n × n product in seconds, on fresh operands of that size. */
typedef struct
{
  int n;
  float *a, *b, *c;
} peak_operands;

static void
operands_resize (peak_operands *p, int n)
{
  gsize len = (gsize) n * (gsize) n;
  p->n = n;
  p->a = g_renew (float, p->a, len);
  p->b = g_renew (float, p->b, len);
  p->c = g_renew (float, p->c, len);
  for (gsize i = 0; i < len; i++)
    {
      p->a[i] = (float) ((i * 7) % 13) * 0.01f;
      p->b[i] = (float) ((i * 5) % 11) * 0.01f;
    }
}

static double
time_sgemm (const peak_operands *p)
{
  int n = p->n;
  gint64 t0 = g_get_monotonic_time ();
  tw_blas_sgemm (CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, p->a, n, p->b, n, 0.0f,
                 p->c, n);
  return MAX ((double) (g_get_monotonic_time () - t0) / 1e6, 1e-6);
}

static gpointer
peak_thread (gpointer data)
{
  peak_job *job = data;
  /* This thread's own count: the caller's setting is left alone. */
  tw_set_thread_num_threads (job->threads);
  long l2 = sysconf (_SC_LEVEL2_CACHE_SIZE);
  int n = PEAK_MIN_N;
  while (l2 > 0 && (gint64) n * n * 4 <= l2 && n < PEAK_MAX_N)
    n += 64;
  peak_operands p = { 0 };
  operands_resize (&p, n);
  double warm = time_sgemm (&p);
  double rate = 2.0 * n * n * (double) n / warm;       /* flop/s */
  int grown = (int) cbrt (rate * PEAK_TARGET_S / 2.0);
  grown = CLAMP (grown / 64 * 64, n, PEAK_MAX_N);
  if (grown > n)
    {
      operands_resize (&p, grown);
      time_sgemm (&p);                              /* warm at the new size too */
    }
  double best = G_MAXDOUBLE;
  for (int i = 0; i < 3; i++)
    best = MIN (best, time_sgemm (&p));
  job->n = p.n;
  job->gflops = 2.0 * p.n * p.n * (double) p.n / best / 1e9;
  g_free (p.a);
  g_free (p.b);
  g_free (p.c);
  return NULL;
}

double
tw_machine_peak_gflops (int threads)
{
  static GMutex lock;
  static GHashTable *cache;     /* threads → double * */
  if (threads <= 0)
    threads = tw_get_num_threads ();
  g_mutex_lock (&lock);
  if (cache == NULL)
    cache = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, g_free);
  double *found = g_hash_table_lookup (cache, GINT_TO_POINTER (threads));
  if (found == NULL)
    {
      peak_job job = { threads, 0, 0 };
      g_thread_join (g_thread_new ("twb-peak", peak_thread, &job));
      found = g_new (double, 1);
      *found = job.gflops;
      g_debug ("peak: %d threads, SGEMM n=%d, %.1f GFLOP/s", threads, job.n, job.gflops);
      g_hash_table_insert (cache, GINT_TO_POINTER (threads), found);
    }
  double v = *found;
  g_mutex_unlock (&lock);
  return v;
}
