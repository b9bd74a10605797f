/* trace.c — the trace model (trace.h). */
#define G_LOG_DOMAIN "tw-profiler"

#include "profiler/trace.h"

#include <string.h>

/* Arguments live in fixed blocks that never move, so slices can point at
 * them while lanes grow.  4096 pairs (64 KiB) a block: a few blocks for a
 * typical recording, little waste for a small one. */
#define ARG_BLOCK 4096

typedef struct
{
  tw_lane_info info;
  GArray *slices;               /* tw_slice */
  GArray *instants;             /* tw_instant */
} lane;

struct tw_trace
{
  GStringChunk *strings;
  GHashTable *interned;         /* string → itself, in strings */
  GHashTable *meta;             /* interned key → interned value */
  GPtrArray *meta_keys;         /* insertion order, NULL-terminated */
  GArray *processes;            /* tw_process */
  GHashTable *process_index;    /* pid → its index + 1 */
  GPtrArray *lanes;             /* lane * */
  GHashTable *lane_index;       /* &lane->info (pid, tid) → its index + 1 */
  GArray *counters;             /* tw_counter_sample */
  GArray *flows;                /* tw_flow */
  GPtrArray *arg_blocks;
  guint arg_fill;               /* used in the last block */
  gboolean sorted;
};

/* Lanes are found by (pid, tid) in a hash table: a linear search made a
 * trace of 100,000 lanes take 48 s to open. */
static guint
lane_key_hash (gconstpointer p)
{
  const tw_lane_info *k = p;
  guint64 h = (guint64) (guint32) k->pid * G_GUINT64_CONSTANT (0x9e3779b97f4a7c15);
  h ^= (guint64) k->tid + G_GUINT64_CONSTANT (0xc2b2ae3d27d4eb4f) + (h << 6) + (h >> 2);
  return (guint) (h ^ (h >> 32));
}

static gboolean
lane_key_equal (gconstpointer a, gconstpointer b)
{
  const tw_lane_info *x = a, *y = b;
  return x->pid == y->pid && x->tid == y->tid;
}

static void
lane_free (gpointer p)
{
  lane *l = p;
  g_array_unref (l->slices);
  g_array_unref (l->instants);
  g_free (l);
}

tw_trace *
tw_trace_new (void)
{
  tw_trace *t = g_new0 (tw_trace, 1);
  t->strings = g_string_chunk_new (64 * 1024);
  t->interned = g_hash_table_new (g_str_hash, g_str_equal);
  t->meta = g_hash_table_new (g_direct_hash, g_direct_equal);
  t->meta_keys = g_ptr_array_new ();
  g_ptr_array_add (t->meta_keys, NULL);
  t->processes = g_array_new (FALSE, FALSE, sizeof (tw_process));
  t->process_index = g_hash_table_new (g_direct_hash, g_direct_equal);
  t->lanes = g_ptr_array_new_with_free_func (lane_free);
  t->lane_index = g_hash_table_new (lane_key_hash, lane_key_equal);
  t->counters = g_array_new (FALSE, FALSE, sizeof (tw_counter_sample));
  t->flows = g_array_new (FALSE, FALSE, sizeof (tw_flow));
  t->arg_blocks = g_ptr_array_new_with_free_func (g_free);
  t->arg_fill = ARG_BLOCK;
  t->sorted = TRUE;
  return t;
}

void
tw_trace_free (tw_trace *t)
{
  if (t == NULL)
    return;
  g_string_chunk_free (t->strings);
  g_hash_table_unref (t->interned);
  g_hash_table_unref (t->meta);
  g_ptr_array_unref (t->meta_keys);
  g_array_unref (t->processes);
  g_hash_table_unref (t->process_index);
  g_hash_table_unref (t->lane_index);
  g_ptr_array_unref (t->lanes);
  g_array_unref (t->counters);
  g_array_unref (t->flows);
  g_ptr_array_unref (t->arg_blocks);
  g_free (t);
}

const char *
tw_trace_intern (tw_trace *t, const char *s)
{
  if (s == NULL)
    return NULL;
  const char *found = g_hash_table_lookup (t->interned, s);
  if (found)
    return found;
  char *copy = g_string_chunk_insert (t->strings, s);
  g_hash_table_add (t->interned, copy);
  return copy;
}

void
tw_trace_set_meta (tw_trace *t, const char *key, const char *value)
{
  const char *k = tw_trace_intern (t, key);
  if (!g_hash_table_contains (t->meta, k))
    {
      g_ptr_array_index (t->meta_keys, t->meta_keys->len - 1) = (gpointer) k;
      g_ptr_array_add (t->meta_keys, NULL);
    }
  g_hash_table_insert (t->meta, (gpointer) k, (gpointer) tw_trace_intern (t, value ? value : ""));
}

const char *
tw_trace_get_meta (const tw_trace *t, const char *key)
{
  const char *k = g_hash_table_lookup (t->interned, key);
  return k ? g_hash_table_lookup (t->meta, k) : NULL;
}

const char *const *
tw_trace_meta_keys (const tw_trace *t)
{
  return (const char *const *) t->meta_keys->pdata;
}

/* pid's index in processes, or -1 (a hash lookup: 100,000 processes took
 * over 100 s to add one by one with a linear search). */
static int
find_process (const tw_trace *t, int pid)
{
  gpointer v = g_hash_table_lookup (t->process_index, GINT_TO_POINTER (pid));
  return v ? GPOINTER_TO_INT (v) - 1 : -1;
}

void
tw_trace_add_process (tw_trace *t, int pid, const char *name)
{
  int found = find_process (t, pid);
  if (found >= 0)
    {
      if (name)
        g_array_index (t->processes, tw_process, found).name = tw_trace_intern (t, name);
      return;
    }
  tw_process p = { pid, tw_trace_intern (t, name ? name : "") };
  g_array_append_val (t->processes, p);
  g_hash_table_insert (t->process_index, GINT_TO_POINTER (pid),
                       GINT_TO_POINTER ((int) t->processes->len));
}

guint
tw_trace_n_processes (const tw_trace *t)
{
  return t->processes->len;
}

const tw_process *
tw_trace_process (const tw_trace *t, guint i)
{
  g_return_val_if_fail (i < t->processes->len, NULL);
  return &g_array_index (t->processes, tw_process, i);
}

int
tw_trace_find_lane (const tw_trace *t, int pid, gint64 tid)
{
  tw_lane_info key = { .pid = pid, .tid = tid };
  gpointer v = g_hash_table_lookup (t->lane_index, &key);
  return v ? GPOINTER_TO_INT (v) - 1 : -1;
}

guint
tw_trace_add_lane (tw_trace *t, int pid, gint64 tid, const char *name, tw_lane_kind kind)
{
  int found = tw_trace_find_lane (t, pid, tid);
  if (found >= 0)
    {
      lane *l = g_ptr_array_index (t->lanes, found);
      if (name)
        l->info.name = tw_trace_intern (t, name);
      return (guint) found;
    }
  if (find_process (t, pid) < 0)
    tw_trace_add_process (t, pid, NULL);
  lane *l = g_new0 (lane, 1);
  l->info.pid = pid;
  l->info.tid = tid;
  l->info.name = tw_trace_intern (t, name ? name : "");
  l->info.kind = kind;
  l->slices = g_array_new (FALSE, FALSE, sizeof (tw_slice));
  l->instants = g_array_new (FALSE, FALSE, sizeof (tw_instant));
  g_ptr_array_add (t->lanes, l);
  g_hash_table_insert (t->lane_index, &l->info, GINT_TO_POINTER ((int) t->lanes->len));
  return t->lanes->len - 1;
}

guint
tw_trace_n_lanes (const tw_trace *t)
{
  return t->lanes->len;
}

const tw_lane_info *
tw_trace_lane (const tw_trace *t, guint i)
{
  g_return_val_if_fail (i < t->lanes->len, NULL);
  return &((const lane *) g_ptr_array_index (t->lanes, i))->info;
}

static tw_trace_arg *
args_alloc (tw_trace *t, guint n)
{
  if (n == 0)
    return NULL;
  if (n > ARG_BLOCK)
    {
      /* A slice with more arguments than a block: a block of its own. */
      tw_trace_arg *own = g_new (tw_trace_arg, n);
      g_ptr_array_insert (t->arg_blocks, MAX ((int) t->arg_blocks->len - 1, 0), own);
      return own;
    }
  if (t->arg_fill + n > ARG_BLOCK)
    {
      g_ptr_array_add (t->arg_blocks, g_new (tw_trace_arg, ARG_BLOCK));
      t->arg_fill = 0;
    }
  tw_trace_arg *block = g_ptr_array_index (t->arg_blocks, t->arg_blocks->len - 1);
  tw_trace_arg *a = block + t->arg_fill;
  t->arg_fill += n;
  return a;
}

static lane *
get_lane (const tw_trace *t, guint i)
{
  g_assert (i < t->lanes->len);
  return g_ptr_array_index (t->lanes, i);
}

void
tw_trace_add_slice (tw_trace *t, guint lane_index, gint64 start_ns, gint64 dur_ns, const char *name,
                    const char *category, const tw_trace_arg *args, guint n_args)
{
  /* Depths are set by tw_trace_sort. */
  tw_trace_add_slice_interned (t, lane_index, start_ns, dur_ns, tw_trace_intern (t, name ? name : ""),
                               tw_trace_intern (t, category ? category : ""),
                               tw_trace_intern_args (t, args, n_args), n_args);
}

const tw_trace_arg *
tw_trace_intern_args (tw_trace *t, const tw_trace_arg *args, guint n_args)
{
  tw_trace_arg *a = args_alloc (t, n_args);
  for (guint i = 0; i < n_args; i++)
    {
      a[i].key = tw_trace_intern (t, args[i].key);
      a[i].value = tw_trace_intern (t, args[i].value ? args[i].value : "");
    }
  return a;
}

/* A time within ±TW_TRACE_MAX_NS (trace.h). */
static gint64
clamp_time (gint64 t_ns)
{
  return CLAMP (t_ns, -TW_TRACE_MAX_NS, TW_TRACE_MAX_NS);
}

void
tw_trace_add_slice_interned (tw_trace *t, guint lane_index, gint64 start_ns, gint64 dur_ns,
                             const char *name, const char *category, const tw_trace_arg *args,
                             guint n_args)
{
  lane *l = get_lane (t, lane_index);
  start_ns = clamp_time (start_ns);
  /* Ends by TW_TRACE_MAX_NS: start + dur never overflows. */
  dur_ns = CLAMP (dur_ns, 0, TW_TRACE_MAX_NS - start_ns);
  tw_slice s = { start_ns, dur_ns, name, category, args, n_args, 0 };
  t->sorted = FALSE;
  g_array_append_val (l->slices, s);
}

void
tw_trace_add_instant (tw_trace *t, guint lane_index, gint64 t_ns, const char *name,
                      const char *category)
{
  lane *l = get_lane (t, lane_index);
  tw_instant in = { clamp_time (t_ns), tw_trace_intern (t, name ? name : ""),
                    tw_trace_intern (t, category ? category : "") };
  g_array_append_val (l->instants, in);
  t->sorted = FALSE;
}

void
tw_trace_add_counter (tw_trace *t, int pid, const char *name, gint64 t_ns, double value)
{
  tw_counter_sample c = { pid, tw_trace_intern (t, name), clamp_time (t_ns), value };
  g_array_append_val (t->counters, c);
  t->sorted = FALSE;
}

void
tw_trace_add_flow (tw_trace *t, guint64 id, const char *name, guint from_lane, gint64 from_ns,
                   guint to_lane, gint64 to_ns)
{
  g_return_if_fail (from_lane < t->lanes->len && to_lane < t->lanes->len);
  tw_flow f = { id, tw_trace_intern (t, name ? name : ""), from_lane, to_lane,
                clamp_time (from_ns), clamp_time (to_ns) };
  g_array_append_val (t->flows, f);
}

static int
cmp_slice (gconstpointer pa, gconstpointer pb)
{
  const tw_slice *a = pa, *b = pb;
  if (a->start_ns != b->start_ns)
    return a->start_ns < b->start_ns ? -1 : 1;
  /* The parent, longer, first. */
  return a->dur_ns > b->dur_ns ? -1 : a->dur_ns < b->dur_ns;
}

static int
cmp_instant (gconstpointer pa, gconstpointer pb)
{
  const tw_instant *a = pa, *b = pb;
  return a->t_ns < b->t_ns ? -1 : a->t_ns > b->t_ns;
}

static int
cmp_counter (gconstpointer pa, gconstpointer pb)
{
  const tw_counter_sample *a = pa, *b = pb;
  return a->t_ns < b->t_ns ? -1 : a->t_ns > b->t_ns;
}

void
tw_trace_sort (tw_trace *t)
{
  if (t->sorted)
    return;
  g_autoptr (GArray) ends = g_array_new (FALSE, FALSE, sizeof (gint64));
  for (guint i = 0; i < t->lanes->len; i++)
    {
      lane *l = g_ptr_array_index (t->lanes, i);
      /* g_array_sort is a stable merge sort: equal slices keep their order. */
      g_array_sort (l->slices, cmp_slice);
      g_array_sort (l->instants, cmp_instant);
      /* Depth: how many earlier slices still open at this one's start and
       * ending at or after its end (a slice that overlaps without nesting
       * is not counted as its parent). */
      g_array_set_size (ends, 0);
      for (guint k = 0; k < l->slices->len; k++)
        {
          tw_slice *s = &g_array_index (l->slices, tw_slice, k);
          gint64 end = s->start_ns + s->dur_ns;
          while (ends->len > 0 && g_array_index (ends, gint64, ends->len - 1) <= s->start_ns)
            g_array_set_size (ends, ends->len - 1);
          while (ends->len > 0 && g_array_index (ends, gint64, ends->len - 1) < end)
            g_array_set_size (ends, ends->len - 1);
          s->depth = ends->len;
          g_array_append_val (ends, end);
        }
    }
  g_array_sort (t->counters, cmp_counter);
  t->sorted = TRUE;
}

guint
tw_trace_lane_n_slices (const tw_trace *t, guint i)
{
  return get_lane (t, i)->slices->len;
}

const tw_slice *
tw_trace_lane_slice (const tw_trace *t, guint i, guint k)
{
  g_assert (t->sorted);
  lane *l = get_lane (t, i);
  g_return_val_if_fail (k < l->slices->len, NULL);
  return &g_array_index (l->slices, tw_slice, k);
}

guint
tw_trace_lane_n_instants (const tw_trace *t, guint i)
{
  return get_lane (t, i)->instants->len;
}

const tw_instant *
tw_trace_lane_instant (const tw_trace *t, guint i, guint k)
{
  g_assert (t->sorted);
  lane *l = get_lane (t, i);
  g_return_val_if_fail (k < l->instants->len, NULL);
  return &g_array_index (l->instants, tw_instant, k);
}

guint
tw_trace_n_counters (const tw_trace *t)
{
  return t->counters->len;
}

const tw_counter_sample *
tw_trace_counter (const tw_trace *t, guint i)
{
  g_assert (t->sorted);
  g_return_val_if_fail (i < t->counters->len, NULL);
  return &g_array_index (t->counters, tw_counter_sample, i);
}

guint
tw_trace_n_flows (const tw_trace *t)
{
  return t->flows->len;
}

const tw_flow *
tw_trace_flow (const tw_trace *t, guint i)
{
  g_return_val_if_fail (i < t->flows->len, NULL);
  return &g_array_index (t->flows, tw_flow, i);
}

void
tw_trace_foreach_slice (const tw_trace *t, guint i, tw_slice_fn fn, gpointer user_data)
{
  g_assert (t->sorted);
  lane *l = get_lane (t, i);
  for (guint k = 0; k < l->slices->len; k++)
    if (!fn (&g_array_index (l->slices, tw_slice, k), user_data))
      return;
}

guint64
tw_trace_n_slices (const tw_trace *t)
{
  guint64 n = 0;
  for (guint i = 0; i < t->lanes->len; i++)
    n += get_lane (t, i)->slices->len;
  return n;
}

guint64
tw_trace_n_instants (const tw_trace *t)
{
  guint64 n = 0;
  for (guint i = 0; i < t->lanes->len; i++)
    n += get_lane (t, i)->instants->len;
  return n;
}

const char *
tw_slice_arg (const tw_slice *s, const char *key)
{
  for (guint i = 0; i < s->n_args; i++)
    if (strcmp (s->args[i].key, key) == 0)
      return s->args[i].value;
  return NULL;
}

static void
span (const tw_trace *t, gint64 *lo, gint64 *hi)
{
  *lo = G_MAXINT64;
  *hi = G_MININT64;
  for (guint i = 0; i < t->lanes->len; i++)
    {
      lane *l = get_lane (t, i);
      for (guint k = 0; k < l->slices->len; k++)
        {
          const tw_slice *s = &g_array_index (l->slices, tw_slice, k);
          *lo = MIN (*lo, s->start_ns);
          *hi = MAX (*hi, s->start_ns + s->dur_ns);
        }
      for (guint k = 0; k < l->instants->len; k++)
        {
          const tw_instant *in = &g_array_index (l->instants, tw_instant, k);
          *lo = MIN (*lo, in->t_ns);
          *hi = MAX (*hi, in->t_ns);
        }
    }
  for (guint k = 0; k < t->counters->len; k++)
    {
      const tw_counter_sample *c = &g_array_index (t->counters, tw_counter_sample, k);
      *lo = MIN (*lo, c->t_ns);
      *hi = MAX (*hi, c->t_ns);
    }
}

gint64
tw_trace_start_ns (const tw_trace *t)
{
  gint64 lo, hi;
  span (t, &lo, &hi);
  return lo <= hi ? lo : 0;
}

gint64
tw_trace_duration_ns (const tw_trace *t)
{
  gint64 lo, hi;
  span (t, &lo, &hi);
  return lo <= hi ? hi - lo : 0;
}
