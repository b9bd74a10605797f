/* twb-trace-info.c — `twb trace-info FILE…`: what a Chrome trace holds (ours
 * or PyTorch's, plain or gzip): event counts by phase and category, the top
 * names by total and by self time, step-time statistics, each rank's
 * compute / communication / idle time, the top layers; per file and, for
 * several files, merged.  `--compare A B`: eager against compiled per layer,
 * aligned by step.  `--peak`: the machine's measured SGEMM peak.  A trace
 * of several ranks (profiler/ranks.h) also gets a per-rank table and its
 * stragglers (`--straggler-threshold PCT`).  The
 * figures are profiler/summary.h's; this file only formats them. */
#define G_LOG_DOMAIN "twb"

#include "app/twb-cli.h"
#include "engine/device.h"
#include "profiler/chrome-read.h"
#include "profiler/ranks.h"
#include "profiler/summary.h"

#include <json-glib/json-glib.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#define TOP_N 10

typedef struct
{
  const char *name;     /* in the stats' own string chunk */
  const char *phase;    /* tw_summary_row's (static), or NULL */
  guint64 count;
  gint64 total_ns, self_ns;
  double flops;
} name_time;

typedef struct
{
  GStringChunk *strings;
  guint64 n_slices, n_instants, n_counters, n_flows, n_lanes, n_processes;
  gint64 span_ns;
  GHashTable *by_cat;   /* category → count (slices and instants) */
  GHashTable *by_name;  /* "name" or "name\nphase" → name_time: phases apart, as the rows */
  GArray *steps;        /* gint64 step durations */
  GPtrArray *notes;     /* the importer's notes */
  GArray *ranks;        /* tw_rank_row, names in strings; files' rows one after another */
  GHashTable *layers;   /* node → tw_layer_row (node in strings) */
  /* A trace of several ranks (per file only): */
  int n_ranks;          /* 0: not one */
  GArray *rank_stats;   /* tw_rank_stats, names in strings */
  gint64 median_step_ns;
  double straggler_pct;
  GPtrArray *clocks;    /* per rank: its clock_used, or NULL */
  /* The critical path of the median step across the ranks. */
  gboolean have_path;
  tw_path_summary path;
  GArray *path_top;     /* the longest tw_path_segment (names in strings), longest first */
} trace_stats;

static trace_stats *
stats_new (void)
{
  trace_stats *s = g_new0 (trace_stats, 1);
  s->strings = g_string_chunk_new (4096);
  s->by_cat = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, g_free);
  s->by_name = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, g_free);
  s->steps = g_array_new (FALSE, FALSE, sizeof (gint64));
  s->notes = g_ptr_array_new_with_free_func (g_free);
  s->ranks = g_array_new (FALSE, FALSE, sizeof (tw_rank_row));
  s->layers = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, g_free);
  s->rank_stats = g_array_new (FALSE, FALSE, sizeof (tw_rank_stats));
  s->clocks = g_ptr_array_new ();
  s->path_top = g_array_new (FALSE, FALSE, sizeof (tw_path_segment));
  return s;
}

static void
stats_free (trace_stats *s)
{
  g_string_chunk_free (s->strings);
  g_hash_table_unref (s->by_cat);
  g_hash_table_unref (s->by_name);
  g_array_unref (s->steps);
  g_ptr_array_unref (s->notes);
  g_array_unref (s->ranks);
  g_hash_table_unref (s->layers);
  g_array_unref (s->rank_stats);
  g_ptr_array_unref (s->clocks);
  g_array_unref (s->path_top);
  g_free (s);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (trace_stats, stats_free)

static void
count_cat (trace_stats *s, const char *cat)
{
  const char *key = g_string_chunk_insert_const (s->strings, cat && *cat ? cat : "(none)");
  guint64 *n = g_hash_table_lookup (s->by_cat, key);
  if (!n)
    {
      n = g_new0 (guint64, 1);
      g_hash_table_insert (s->by_cat, (gpointer) key, n);
    }
  (*n)++;
}

static void
add_name (trace_stats *s, const tw_summary_row *r)
{
  g_autofree char *pair = r->phase ? g_strconcat (r->name, "\n", r->phase, NULL) : NULL;
  const char *key = g_string_chunk_insert_const (s->strings, pair ? pair : r->name);
  name_time *nt = g_hash_table_lookup (s->by_name, key);
  if (!nt)
    {
      nt = g_new0 (name_time, 1);
      nt->name = g_string_chunk_insert_const (s->strings, r->name);
      nt->phase = r->phase;
      g_hash_table_insert (s->by_name, (gpointer) key, nt);
    }
  /* Totals of many slices (and files) saturate (profiler/trace.h). */
  nt->count += r->count;
  nt->total_ns = tw_trace_ns_sum (nt->total_ns, r->total_ns);
  nt->self_ns = tw_trace_ns_sum (nt->self_ns, r->self_ns);
  nt->flops += r->flops;
}

static void
add_layer (trace_stats *s, const tw_layer_row *r)
{
  const char *key = g_string_chunk_insert_const (s->strings, r->node);
  tw_layer_row *l = g_hash_table_lookup (s->layers, key);
  if (!l)
    {
      l = g_new0 (tw_layer_row, 1);
      l->node = key;
      g_hash_table_insert (s->layers, (gpointer) key, l);
    }
  l->forward_ns = tw_trace_ns_sum (l->forward_ns, r->forward_ns);
  l->backward_ns = tw_trace_ns_sum (l->backward_ns, r->backward_ns);
  l->update_ns = tw_trace_ns_sum (l->update_ns, r->update_ns);
  l->other_ns = tw_trace_ns_sum (l->other_ns, r->other_ns);
  l->total_ns = tw_trace_ns_sum (l->total_ns, r->total_ns);
  l->count += r->count;
  l->n_steps += r->n_steps;
}

/* Adds t's figures to s: the summaries' (by name over the whole trace,
 * steps, ranks, layers) and the event counts. */
static void
stats_add (trace_stats *s, const tw_trace *t)
{
  s->n_slices += tw_trace_n_slices (t);
  s->n_instants += tw_trace_n_instants (t);
  s->n_counters += tw_trace_n_counters (t);
  s->n_flows += tw_trace_n_flows (t);
  s->n_lanes += tw_trace_n_lanes (t);
  s->n_processes += tw_trace_n_processes (t);
  s->span_ns = MAX (s->span_ns, tw_trace_duration_ns (t));
  for (guint l = 0; l < tw_trace_n_lanes (t); l++)
    {
      for (guint k = 0, n = tw_trace_lane_n_slices (t, l); k < n; k++)
        count_cat (s, tw_trace_lane_slice (t, l, k)->category);
      for (guint k = 0; k < tw_trace_lane_n_instants (t, l); k++)
        count_cat (s, tw_trace_lane_instant (t, l, k)->category);
    }
  g_autoptr (GArray) rows = tw_summary_by_name (t, 0, 0, NULL, 0);
  for (guint i = 0; i < rows->len; i++)
    add_name (s, &g_array_index (rows, tw_summary_row, i));
  g_autoptr (GArray) steps = tw_summary_steps (t);
  for (guint i = 0; i < steps->len; i++)
    {
      const tw_step_span *st = &g_array_index (steps, tw_step_span, i);
      gint64 d = st->end_ns - st->start_ns;
      g_array_append_val (s->steps, d);
    }
  g_autoptr (GArray) ranks = tw_summary_ranks (t);
  for (guint i = 0; i < ranks->len; i++)
    {
      tw_rank_row r = g_array_index (ranks, tw_rank_row, i);
      r.name = g_string_chunk_insert_const (s->strings, r.name ? r.name : "");
      g_array_append_val (s->ranks, r);
    }
  g_autoptr (GArray) layers = tw_summary_layers (t, 0, 0);
  for (guint i = 0; i < layers->len; i++)
    add_layer (s, &g_array_index (layers, tw_layer_row, i));
  const char *keys[] = { "import.note", "import.skipped" };
  for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
    if (tw_trace_get_meta (t, keys[i]))
      g_ptr_array_add (s->notes, g_strdup_printf ("%s: %s", keys[i] + strlen ("import."),
                                                  tw_trace_get_meta (t, keys[i])));
}

/* The per-rank table of a trace of several ranks (one file's). */
static int
cmp_seg_dur (gconstpointer a, gconstpointer b)
{
  const tw_path_segment *x = a, *y = b;
  return x->dur_ns > y->dur_ns ? -1 : x->dur_ns < y->dur_ns;
}

static const char *const path_kinds[] = { "compute", "communication", "wait", "idle" };

static void
stats_add_ranks (trace_stats *s, const tw_trace *t, double straggler_pct)
{
  int n;
  if (!tw_trace_is_multi_rank (t, &n))
    return;
  s->n_ranks = n;
  s->straggler_pct = straggler_pct;
  g_autoptr (GArray) rows = tw_trace_rank_stats (t, straggler_pct);
  s->median_step_ns = tw_rank_stats_median_step (rows);
  for (guint i = 0; i < rows->len; i++)
    {
      tw_rank_stats r = g_array_index (rows, tw_rank_stats, i);
      r.name = g_string_chunk_insert_const (s->strings, r.name ? r.name : "");
      g_array_append_val (s->rank_stats, r);
      g_autofree char *key = g_strdup_printf ("clock_used.%d", r.rank);
      const char *used = tw_trace_get_meta (t, key);
      g_ptr_array_add (s->clocks, used ? g_string_chunk_insert_const (s->strings, used) : NULL);
    }
  /* The critical path of the step of median span. */
  g_autoptr (GArray) p = tw_trace_critical_path_median (t, &s->path);
  if (p == NULL)
    return;
  s->have_path = TRUE;
  g_array_sort (p, cmp_seg_dur);
  for (guint i = 0; i < p->len && i < 3; i++)
    {
      tw_path_segment seg = g_array_index (p, tw_path_segment, i);
      seg.name = g_string_chunk_insert_const (s->strings, seg.name ? seg.name : "");
      g_array_append_val (s->path_top, seg);
    }
}

static int
cmp_total (gconstpointer a, gconstpointer b)
{
  const name_time *x = *(name_time *const *) a, *y = *(name_time *const *) b;
  if (x->total_ns != y->total_ns)
    return x->total_ns > y->total_ns ? -1 : 1;
  int c = strcmp (x->name, y->name);
  return c ? c : g_strcmp0 (x->phase, y->phase);
}

static int
cmp_self (gconstpointer a, gconstpointer b)
{
  const name_time *x = *(name_time *const *) a, *y = *(name_time *const *) b;
  if (x->self_ns != y->self_ns)
    return x->self_ns > y->self_ns ? -1 : 1;
  int c = strcmp (x->name, y->name);
  return c ? c : g_strcmp0 (x->phase, y->phase);
}

static int
cmp_i64 (gconstpointer a, gconstpointer b)
{
  gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;
  return x < y ? -1 : x > y;
}

static int
cmp_cat (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

/* Names sorted by cmp (newly allocated array of borrowed entries). */
static GPtrArray *
sorted_names (const trace_stats *s, GCompareFunc cmp)
{
  GPtrArray *a = g_ptr_array_new ();
  GHashTableIter it;
  gpointer v;
  g_hash_table_iter_init (&it, s->by_name);
  while (g_hash_table_iter_next (&it, NULL, &v))
    g_ptr_array_add (a, v);
  g_ptr_array_sort (a, cmp);
  return a;
}

typedef struct
{
  guint64 count;
  double mean_ms, median_ms, min_ms, max_ms;
} step_stats;

static step_stats
steps_of (const trace_stats *s)
{
  step_stats st = { s->steps->len, 0, 0, 0, 0 };
  if (!st.count)
    return st;
  g_autoptr (GArray) d = g_array_copy (s->steps);
  g_array_sort (d, cmp_i64);
  double sum = 0;
  for (guint i = 0; i < d->len; i++)
    sum += (double) g_array_index (d, gint64, i);
  guint n = d->len;
  double median = n % 2 ? (double) g_array_index (d, gint64, n / 2)
                        : ((double) g_array_index (d, gint64, n / 2 - 1) + (double) g_array_index (d, gint64, n / 2)) / 2;
  st.mean_ms = sum / n / 1e6;
  st.median_ms = median / 1e6;
  st.min_ms = (double) g_array_index (d, gint64, 0) / 1e6;
  st.max_ms = (double) g_array_index (d, gint64, n - 1) / 1e6;
  return st;
}

static GPtrArray *
sorted_cats (const trace_stats *s)
{
  GPtrArray *a = g_ptr_array_new ();
  GHashTableIter it;
  gpointer k;
  g_hash_table_iter_init (&it, s->by_cat);
  while (g_hash_table_iter_next (&it, &k, NULL))
    g_ptr_array_add (a, k);
  g_ptr_array_sort (a, cmp_cat);
  return a;
}

static void
print_top (const trace_stats *s, const char *title, GCompareFunc cmp)
{
  g_autoptr (GPtrArray) names = sorted_names (s, cmp);
  g_print ("  top %s:\n    %12s %12s %8s  name\n", title, "total ms", "self ms", "count");
  for (guint i = 0; i < names->len && i < TOP_N; i++)
    {
      const name_time *nt = names->pdata[i];
      g_print ("    %12.3f %12.3f %8" G_GUINT64_FORMAT "  %s%s%s%s\n", nt->total_ns / 1e6,
               nt->self_ns / 1e6, nt->count, nt->name, nt->phase ? " [" : "",
               nt->phase ? nt->phase : "", nt->phase ? "]" : "");
    }
}

static int
cmp_layer (gconstpointer a, gconstpointer b)
{
  const tw_layer_row *x = *(tw_layer_row *const *) a, *y = *(tw_layer_row *const *) b;
  if (x->total_ns != y->total_ns)
    return x->total_ns > y->total_ns ? -1 : 1;
  return strcmp (x->node, y->node);
}

/* The layers by total time (borrowed entries), their shares set over all. */
static GPtrArray *
sorted_layers (const trace_stats *s)
{
  GPtrArray *a = g_ptr_array_new ();
  GHashTableIter it;
  gpointer v;
  gint64 sum = 0;
  g_hash_table_iter_init (&it, s->layers);
  while (g_hash_table_iter_next (&it, NULL, &v))
    {
      g_ptr_array_add (a, v);
      sum = tw_trace_ns_sum (sum, ((tw_layer_row *) v)->total_ns);
    }
  for (guint i = 0; i < a->len; i++)
    {
      tw_layer_row *l = a->pdata[i];
      l->share = sum > 0 ? (double) l->total_ns / (double) sum : 0;
    }
  g_ptr_array_sort (a, cmp_layer);
  return a;
}

static void
print_ranks (const trace_stats *s)
{
  g_print ("  ranks (compute, communication, idle over each one's span):\n"
           "    %8s %10s %11s %10s %11s %10s %9s  name\n",
           "pid", "span ms", "compute ms", "comm ms", "overlap ms", "idle ms", "overlap %");
  for (guint i = 0; i < s->ranks->len; i++)
    {
      const tw_rank_row *r = &g_array_index (s->ranks, tw_rank_row, i);
      g_print ("    %8d %10.3f %11.3f %10.3f %11.3f %10.3f %9.1f  %s\n", r->pid, r->span_ns / 1e6,
               r->compute_ns / 1e6, r->comm_ns / 1e6, r->overlap_ns / 1e6, r->idle_ns / 1e6,
               r->overlap_pct, r->name);
    }
}

static void
print_rank_stats (const trace_stats *s)
{
  if (s->n_ranks < 2)
    return;
  g_print ("  Ranks (%d; exposed: communication no compute covers; overlap %% = 1 - exposed / comm):\n"
           "    %6s %11s %10s %11s %10s %9s %14s %6s %10s  name\n", s->n_ranks, "rank", "compute ms",
           "comm ms", "exposed ms", "idle ms", "overlap %", "step median ms", "steps", "clock");
  for (guint i = 0; i < s->rank_stats->len; i++)
    {
      const tw_rank_stats *r = &g_array_index (s->rank_stats, tw_rank_stats, i);
      const char *clock = s->clocks->pdata[i];
      g_print ("    %6d %11.3f %10.3f %11.3f %10.3f %9.1f %14.3f %6" G_GUINT64_FORMAT " %10s  %s\n",
               r->rank, r->compute_ns / 1e6, r->comm_ns / 1e6, r->exposed_ns / 1e6, r->idle_ns / 1e6,
               r->overlap_pct, r->step_median_ns / 1e6, r->n_steps, clock ? clock : "-", r->name);
    }
  if (s->median_step_ns <= 0)
    {
      g_print ("  stragglers: unknown (no rank has steps)\n");
      return;
    }
  g_autoptr (GString) line = g_string_new (NULL);
  for (guint i = 0; i < s->rank_stats->len; i++)
    {
      const tw_rank_stats *r = &g_array_index (s->rank_stats, tw_rank_stats, i);
      if (r->straggler)
        g_string_append_printf (line, "%s rank %d (%+.1f%%)", line->len ? "," : "", r->rank,
                                r->slower_pct);
    }
  g_print ("  stragglers (median step more than %g%% above the ranks' median, %.3f ms):%s\n",
           s->straggler_pct, s->median_step_ns / 1e6, line->len ? line->str : " none");
  if (!s->have_path)
    return;
  const tw_path_summary *p = &s->path;
  g_autoptr (GString) through = g_string_new (NULL);
  for (int r = 0; r < 64; r++)
    if (p->ranks_mask & (G_GUINT64_CONSTANT (1) << r))
      g_string_append_printf (through, "%s%d", through->len ? ", " : "", r);
  g_print ("  critical path of step %" G_GUINT64_FORMAT " (the median step; ends on rank %d): "
           "%.3f ms = compute %.3f + communication %.3f + wait %.3f + idle %.3f, through rank%s "
           "%s\n", p->step, p->end_rank, p->span_ns / 1e6, p->compute_ns / 1e6, p->comm_ns / 1e6,
           p->wait_ns / 1e6, p->idle_ns / 1e6, strchr (through->str, ',') ? "s" : "",
           through->str);
  for (guint i = 0; i < s->path_top->len; i++)
    {
      const tw_path_segment *g = &g_array_index (s->path_top, tw_path_segment, i);
      g_print ("    %8.3f ms  %-13s rank %d  %s\n", g->dur_ns / 1e6, path_kinds[g->kind], g->rank,
               g->name);
    }
}

static void
print_layers (const trace_stats *s)
{
  g_autoptr (GPtrArray) layers = sorted_layers (s);
  if (layers->len == 0)
    {
      g_print ("  layers: none (no slice names graph nodes)\n");
      return;
    }
  g_print ("  top layers by total time:\n    %12s %12s %12s %12s %8s %8s %6s  node\n", "total ms",
           "forward ms", "backward ms", "update ms", "share %", "count", "steps");
  for (guint i = 0; i < layers->len && i < TOP_N; i++)
    {
      const tw_layer_row *l = layers->pdata[i];
      g_print ("    %12.3f %12.3f %12.3f %12.3f %8.2f %8" G_GUINT64_FORMAT " %6" G_GUINT64_FORMAT "  %s\n",
               l->total_ns / 1e6, l->forward_ns / 1e6, l->backward_ns / 1e6, l->update_ns / 1e6,
               100 * l->share, l->count, l->n_steps, l->node);
    }
}

static void
add_int (JsonBuilder *b, const char *key, gint64 v)
{
  json_builder_set_member_name (b, key);
  json_builder_add_int_value (b, v);
}

/* JSON has no inf or nan (json-glib would write them as such): null. */
static void
add_double (JsonBuilder *b, const char *key, double v)
{
  json_builder_set_member_name (b, key);
  if (isfinite (v))
    json_builder_add_double_value (b, v);
  else
    json_builder_add_null_value (b);
}

static void
build_ranks (JsonBuilder *b, const trace_stats *s)
{
  json_builder_set_member_name (b, "ranks");
  json_builder_begin_array (b);
  for (guint i = 0; i < s->ranks->len; i++)
    {
      const tw_rank_row *r = &g_array_index (s->ranks, tw_rank_row, i);
      json_builder_begin_object (b);
      add_int (b, "pid", r->pid);
      json_builder_set_member_name (b, "name");
      json_builder_add_string_value (b, r->name);
      add_int (b, "span_ns", r->span_ns);
      add_int (b, "compute_ns", r->compute_ns);
      add_int (b, "comm_ns", r->comm_ns);
      add_int (b, "overlap_ns", r->overlap_ns);
      add_int (b, "idle_ns", r->idle_ns);
      add_double (b, "overlap_pct", r->overlap_pct);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
}

static void
build_rank_stats (JsonBuilder *b, const trace_stats *s)
{
  add_int (b, "n_ranks", MAX (s->n_ranks, 1));
  if (s->n_ranks < 2)
    return;
  add_double (b, "straggler_threshold_pct", s->straggler_pct);
  add_int (b, "median_step_ns", s->median_step_ns);
  json_builder_set_member_name (b, "rank_stats");
  json_builder_begin_array (b);
  for (guint i = 0; i < s->rank_stats->len; i++)
    {
      const tw_rank_stats *r = &g_array_index (s->rank_stats, tw_rank_stats, i);
      json_builder_begin_object (b);
      add_int (b, "rank", r->rank);
      json_builder_set_member_name (b, "name");
      json_builder_add_string_value (b, r->name);
      add_int (b, "span_ns", r->span_ns);
      add_int (b, "compute_ns", r->compute_ns);
      add_int (b, "comm_ns", r->comm_ns);
      add_int (b, "exposed_ns", r->exposed_ns);
      add_int (b, "idle_ns", r->idle_ns);
      add_double (b, "overlap_pct", r->overlap_pct);
      add_int (b, "steps", (gint64) r->n_steps);
      add_int (b, "step_median_ns", r->step_median_ns);
      add_double (b, "slower_pct", r->slower_pct);
      json_builder_set_member_name (b, "straggler");
      json_builder_add_boolean_value (b, r->straggler);
      json_builder_set_member_name (b, "clock");
      if (s->clocks->pdata[i])
        json_builder_add_string_value (b, s->clocks->pdata[i]);
      else
        json_builder_add_null_value (b);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_set_member_name (b, "stragglers");
  json_builder_begin_array (b);
  for (guint i = 0; i < s->rank_stats->len; i++)
    if (g_array_index (s->rank_stats, tw_rank_stats, i).straggler)
      json_builder_add_int_value (b, g_array_index (s->rank_stats, tw_rank_stats, i).rank);
  json_builder_end_array (b);
  if (!s->have_path)
    return;
  json_builder_set_member_name (b, "critical_path");
  json_builder_begin_object (b);
  add_int (b, "step", (gint64) s->path.step);
  add_int (b, "end_rank", s->path.end_rank);
  add_int (b, "span_ns", s->path.span_ns);
  add_int (b, "compute_ns", s->path.compute_ns);
  add_int (b, "comm_ns", s->path.comm_ns);
  add_int (b, "wait_ns", s->path.wait_ns);
  add_int (b, "idle_ns", s->path.idle_ns);
  json_builder_set_member_name (b, "longest");
  json_builder_begin_array (b);
  for (guint i = 0; i < s->path_top->len; i++)
    {
      const tw_path_segment *g = &g_array_index (s->path_top, tw_path_segment, i);
      json_builder_begin_object (b);
      add_int (b, "rank", g->rank);
      json_builder_set_member_name (b, "kind");
      json_builder_add_string_value (b, path_kinds[g->kind]);
      json_builder_set_member_name (b, "name");
      json_builder_add_string_value (b, g->name);
      add_int (b, "dur_ns", g->dur_ns);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_end_object (b);
}

static void
build_layers (JsonBuilder *b, const trace_stats *s)
{
  g_autoptr (GPtrArray) layers = sorted_layers (s);
  json_builder_set_member_name (b, "layers");
  json_builder_begin_array (b);
  for (guint i = 0; i < layers->len && i < TOP_N; i++)
    {
      const tw_layer_row *l = layers->pdata[i];
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "node");
      json_builder_add_string_value (b, l->node);
      add_int (b, "total_ns", l->total_ns);
      add_int (b, "forward_ns", l->forward_ns);
      add_int (b, "backward_ns", l->backward_ns);
      add_int (b, "update_ns", l->update_ns);
      add_int (b, "other_ns", l->other_ns);
      add_int (b, "count", (gint64) l->count);
      add_int (b, "steps", (gint64) l->n_steps);
      add_double (b, "share", l->share);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
}

static void
print_text (const char *title, const trace_stats *s)
{
  g_print ("%s: %" G_GUINT64_FORMAT " slices, %" G_GUINT64_FORMAT " instants, %" G_GUINT64_FORMAT
           " counter samples, %" G_GUINT64_FORMAT " flows on %" G_GUINT64_FORMAT " lanes of %"
           G_GUINT64_FORMAT " processes, %.3f ms\n", title, s->n_slices, s->n_instants, s->n_counters,
           s->n_flows, s->n_lanes, s->n_processes, s->span_ns / 1e6);
  for (guint i = 0; i < s->notes->len; i++)
    g_print ("  %s\n", (char *) s->notes->pdata[i]);
  g_autoptr (GPtrArray) cats = sorted_cats (s);
  g_print ("  by category (slices and instants):");
  for (guint i = 0; i < cats->len; i++)
    g_print ("%s %s %" G_GUINT64_FORMAT, i ? "," : "", (char *) cats->pdata[i],
             *(guint64 *) g_hash_table_lookup (s->by_cat, cats->pdata[i]));
  g_print ("\n");
  print_top (s, "by total time", cmp_total);
  print_top (s, "by self time", cmp_self);
  step_stats st = steps_of (s);
  if (st.count)
    g_print ("  steps: %" G_GUINT64_FORMAT ", mean %.3f ms, median %.3f ms, min %.3f ms, max %.3f ms\n",
             st.count, st.mean_ms, st.median_ms, st.min_ms, st.max_ms);
  else
    g_print ("  steps: none\n");
  /* A trace of several ranks gets the fuller table (exposed time, steps,
   * clocks, stragglers); the short one is for processes of one run. */
  if (s->n_ranks < 2)
    print_ranks (s);
  print_rank_stats (s);
  print_layers (s);
}

static void
build_top (JsonBuilder *b, const trace_stats *s, GCompareFunc cmp)
{
  g_autoptr (GPtrArray) names = sorted_names (s, cmp);
  json_builder_begin_array (b);
  for (guint i = 0; i < names->len && i < TOP_N; i++)
    {
      const name_time *nt = names->pdata[i];
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "name");
      json_builder_add_string_value (b, nt->name);
      json_builder_set_member_name (b, "phase");
      if (nt->phase)
        json_builder_add_string_value (b, nt->phase);
      else
        json_builder_add_null_value (b);
      json_builder_set_member_name (b, "count");
      json_builder_add_int_value (b, (gint64) nt->count);
      json_builder_set_member_name (b, "total_ns");
      json_builder_add_int_value (b, nt->total_ns);
      json_builder_set_member_name (b, "self_ns");
      json_builder_add_int_value (b, nt->self_ns);
      add_double (b, "flops", nt->flops);
      add_double (b, "gflops", nt->total_ns > 0 ? nt->flops / (double) nt->total_ns : 0);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
}

static void
build_json (JsonBuilder *b, const char *file, const trace_stats *s)
{
  json_builder_begin_object (b);
  if (file)
    {
      json_builder_set_member_name (b, "file");
      json_builder_add_string_value (b, file);
    }
  struct { const char *k; guint64 v; } counts[] = {
    { "slices", s->n_slices }, { "instants", s->n_instants }, { "counter_samples", s->n_counters },
    { "flows", s->n_flows }, { "lanes", s->n_lanes }, { "processes", s->n_processes },
  };
  for (guint i = 0; i < G_N_ELEMENTS (counts); i++)
    {
      json_builder_set_member_name (b, counts[i].k);
      json_builder_add_int_value (b, (gint64) counts[i].v);
    }
  json_builder_set_member_name (b, "span_ns");
  json_builder_add_int_value (b, s->span_ns);
  json_builder_set_member_name (b, "notes");
  json_builder_begin_array (b);
  for (guint i = 0; i < s->notes->len; i++)
    json_builder_add_string_value (b, s->notes->pdata[i]);
  json_builder_end_array (b);
  json_builder_set_member_name (b, "categories");
  json_builder_begin_object (b);
  g_autoptr (GPtrArray) cats = sorted_cats (s);
  for (guint i = 0; i < cats->len; i++)
    {
      json_builder_set_member_name (b, cats->pdata[i]);
      json_builder_add_int_value (b, (gint64) *(guint64 *) g_hash_table_lookup (s->by_cat, cats->pdata[i]));
    }
  json_builder_end_object (b);
  json_builder_set_member_name (b, "top_total");
  build_top (b, s, cmp_total);
  json_builder_set_member_name (b, "top_self");
  build_top (b, s, cmp_self);
  step_stats st = steps_of (s);
  json_builder_set_member_name (b, "steps");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "count");
  json_builder_add_int_value (b, (gint64) st.count);
  if (st.count)
    {
      struct { const char *k; double v; } f[] = {
        { "mean_ms", st.mean_ms }, { "median_ms", st.median_ms }, { "min_ms", st.min_ms }, { "max_ms", st.max_ms },
      };
      for (guint i = 0; i < G_N_ELEMENTS (f); i++)
        add_double (b, f[i].k, f[i].v);
    }
  json_builder_end_object (b);
  build_ranks (b, s);
  build_rank_stats (b, s);
  build_layers (b, s);
  json_builder_end_object (b);
}

/* Loads path, printing the error; NULL on failure. */
static tw_trace *
load_trace (const char *path)
{
  g_autoptr (GError) error = NULL;
  tw_trace *t = tw_trace_load_chrome (path, &error);
  if (!t)
    g_printerr ("twb: %s\n", error->message);
  return t;
}

/* PyTorch traces of distinct ranks as one trace of several ranks
 * (tw_trace_merge_pytorch_ranks); NULL, the traces left as files, when
 * two share a rank. */
static tw_trace *
merge_by_rank (GPtrArray *traces)
{
  g_autoptr (GError) error = NULL;
  tw_trace *m = tw_trace_merge_pytorch_ranks ((tw_trace *const *) traces->pdata, traces->len,
                                              &error);
  if (!m)
    g_debug ("trace-info: %s", error->message);
  return m;
}

static void
print_json (JsonBuilder *b)
{
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  json_generator_set_pretty (gen, TRUE);
  g_autofree char *text = json_generator_to_data (gen, NULL);
  g_print ("%s\n", text);
}

/* `--compare A B`: each node's mean time per step in A and in B, the
 * difference, and the step's. */
static int
compare_files (const char *path_a, const char *path_b, gboolean json)
{
  g_autoptr (tw_trace) a = load_trace (path_a);
  g_autoptr (tw_trace) b = a ? load_trace (path_b) : NULL;
  if (!a || !b)
    return 1;
  g_autoptr (GArray) rows = tw_summary_compare (a, b);
  guint64 common = tw_summary_steps_in_common (a, b);
  g_autofree char *name_a = g_filename_display_name (path_a);
  g_autofree char *name_b = g_filename_display_name (path_b);
  const char *mode_a = tw_trace_get_meta (a, "mode"), *mode_b = tw_trace_get_meta (b, "mode");
  if (json)
    {
      g_autoptr (JsonBuilder) jb = json_builder_new ();
      json_builder_begin_object (jb);
      const char *sides[][3] = { { "a", name_a, mode_a }, { "b", name_b, mode_b } };
      for (guint i = 0; i < 2; i++)
        {
          json_builder_set_member_name (jb, sides[i][0]);
          json_builder_begin_object (jb);
          json_builder_set_member_name (jb, "file");
          json_builder_add_string_value (jb, sides[i][1]);
          json_builder_set_member_name (jb, "mode");
          if (sides[i][2])
            json_builder_add_string_value (jb, sides[i][2]);
          else
            json_builder_add_null_value (jb);
          json_builder_end_object (jb);
        }
      add_int (jb, "steps_in_common", common);
      json_builder_set_member_name (jb, "rows");
      json_builder_begin_array (jb);
      for (guint i = 0; i < rows->len; i++)
        {
          const tw_compare_row *r = &g_array_index (rows, tw_compare_row, i);
          json_builder_begin_object (jb);
          json_builder_set_member_name (jb, "node");
          json_builder_add_string_value (jb, r->node);
          add_double (jb, "a_ns", r->a_ns);
          add_double (jb, "b_ns", r->b_ns);
          add_double (jb, "diff_ns", r->diff_ns);
          json_builder_set_member_name (jb, "fused_b");
          json_builder_add_boolean_value (jb, r->fused_b);
          json_builder_end_object (jb);
        }
      json_builder_end_array (jb);
      json_builder_end_object (jb);
      print_json (jb);
      return 0;
    }
  g_print ("A: %s (%s)\nB: %s (%s)\n", name_a, mode_a ? mode_a : "mode not recorded", name_b,
           mode_b ? mode_b : "mode not recorded");
  if (common)
    g_print ("mean per step over the %" G_GUINT64_FORMAT " steps both hold:\n", common);
  else
    g_print ("no step in common: each trace whole, as one step\n");
  g_print ("    %12s %12s %12s %8s  node\n", "A ms", "B ms", "B-A ms", "B/A");
  for (guint i = 0; i < rows->len; i++)
    {
      const tw_compare_row *r = &g_array_index (rows, tw_compare_row, i);
      char ratio[16] = "-";
      if (r->a_ns > 0)
        g_snprintf (ratio, sizeof ratio, "%.2f", r->b_ns / r->a_ns);
      g_print ("    %12.3f %12.3f %+12.3f %8s  %s%s\n", r->a_ns / 1e6, r->b_ns / 1e6, r->diff_ns / 1e6,
               ratio, r->node, r->fused_b ? " (fused in B)" : "");
    }
  return 0;
}

static int
print_peak (gboolean json)
{
  int threads = tw_get_num_threads ();
  double peak = tw_machine_peak_gflops (threads);
  if (json)
    g_print ("{\n  \"peak_gflops\" : %.3f,\n  \"threads\" : %d\n}\n", peak, threads);
  else
    g_print ("peak: %.1f GFLOP/s (SGEMM, %d threads)\n", peak, threads);
  return 0;
}

static void
usage_trace_info (void)
{
  g_printerr ("usage: twb trace-info [--json] [--straggler-threshold PCT] FILE.json[.gz]...\n"
              "       twb trace-info [--json] --compare A.json B.json\n"
              "       twb trace-info [--json] --peak\n"
              "  event counts by phase and category, the top %d names by total and by self time,\n"
              "  step-time statistics, each rank's compute / communication / idle time, the top\n"
              "  %d layers; per file and, for several, merged.  --compare: each layer's mean time\n"
              "  per step in A and B (eager and compiled) over the steps both hold.  --peak: this\n"
              "  machine's measured SGEMM GFLOP/s.  A trace of several ranks also gets a table\n"
              "  per rank (compute, communication, exposed communication, idle, overlap, median\n"
              "  step) and its stragglers: ranks whose median step is more than\n"
              "  --straggler-threshold PCT percent (default %g) above the ranks' median\n",
              TOP_N, TOP_N, TW_STRAGGLER_DEFAULT_PCT);
}

int
twb_cmd_trace_info (int argc, char **argv)
{
  gboolean json = FALSE, compare = FALSE, peak = FALSE;
  double straggler_pct = TW_STRAGGLER_DEFAULT_PCT;
  g_autoptr (GPtrArray) files = g_ptr_array_new ();
  for (int i = 1; i < argc; i++)
    {
      const char *threshold = NULL;
      if (strcmp (argv[i], "--straggler-threshold") == 0)
        {
          if (i + 1 == argc)
            {
              g_printerr ("twb: trace-info: --straggler-threshold needs a value (a percentage)\n");
              return 2;
            }
          threshold = argv[++i];
        }
      else if (g_str_has_prefix (argv[i], "--straggler-threshold="))
        threshold = argv[i] + strlen ("--straggler-threshold=");
      if (threshold)
        {
          g_autoptr (GError) error = NULL;
          const tw_real_range pct = { 0, INFINITY, FALSE, FALSE };
          if (!tw_number_parse_real (threshold, &pct, "--straggler-threshold", &straggler_pct, &error))
            {
              g_printerr ("twb: %s\n", error->message);
              return 2;
            }
        }
      else if (strcmp (argv[i], "--json") == 0)
        json = TRUE;
      else if (strcmp (argv[i], "--compare") == 0)
        compare = TRUE;
      else if (strcmp (argv[i], "--peak") == 0)
        peak = TRUE;
      else if (strcmp (argv[i], "--help") == 0 || strcmp (argv[i], "-h") == 0)
        {
          usage_trace_info ();
          return 0;
        }
      else if (argv[i][0] == '-' && argv[i][1])
        {
          g_printerr ("twb: trace-info: unknown option '%s'\n", argv[i]);
          usage_trace_info ();
          return 2;
        }
      else
        g_ptr_array_add (files, argv[i]);
    }
  if (peak && !compare && files->len == 0)
    return print_peak (json);
  if (compare && !peak && files->len == 2)
    return compare_files (files->pdata[0], files->pdata[1], json);
  if (compare || peak)
    {
      g_printerr ("twb: trace-info: %s\n", compare && !peak ? "--compare takes two files, A and B"
                                                             : peak && !compare ? "--peak takes no file"
                                                             : "--compare and --peak are separate commands");
      usage_trace_info ();
      return 2;
    }
  if (files->len == 0)
    {
      usage_trace_info ();
      return 2;
    }
  g_autoptr (GPtrArray) stats = g_ptr_array_new_with_free_func ((GDestroyNotify) stats_free);
  g_autoptr (trace_stats) merged = stats_new ();
  /* Several PyTorch traces of one run, a rank each (distributedInfo.rank):
   * kept to be merged as the ranks of one trace (ranks.h). */
  g_autoptr (GPtrArray) per_rank = g_ptr_array_new_with_free_func ((GDestroyNotify) tw_trace_free);
  gboolean by_rank = files->len > 1;
  int status = 0;
  for (guint i = 0; i < files->len; i++)
    {
      g_autoptr (tw_trace) t = load_trace (files->pdata[i]);
      if (!t)
        {
          status = 1;
          continue;
        }
      trace_stats *s = stats_new ();
      stats_add (s, t);
      stats_add_ranks (s, t, straggler_pct);
      stats_add (merged, t);
      g_ptr_array_add (stats, s);
      by_rank = by_rank && tw_trace_is_pytorch_rank (t);
      if (by_rank)
        g_ptr_array_add (per_rank, g_steal_pointer (&t));
      else
        g_ptr_array_set_size (per_rank, 0);
    }
  g_autoptr (tw_trace) ranks_merged = by_rank && !status ? merge_by_rank (per_rank) : NULL;
  g_ptr_array_set_size (per_rank, 0);
  if (ranks_merged)
    {
      g_clear_pointer (&merged, stats_free);
      merged = stats_new ();
      stats_add (merged, ranks_merged);
      stats_add_ranks (merged, ranks_merged, straggler_pct);
    }
  if (status)
    return status;
  if (json)
    {
      g_autoptr (JsonBuilder) b = json_builder_new ();
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "files");
      json_builder_begin_array (b);
      for (guint i = 0; i < stats->len; i++)
        {
          g_autofree char *display = g_filename_display_name (files->pdata[i]);
          build_json (b, display, stats->pdata[i]);
        }
      json_builder_end_array (b);
      if (files->len > 1)
        {
          json_builder_set_member_name (b, "merged");
          build_json (b, NULL, merged);
          json_builder_set_member_name (b, "merged_by_rank");
          json_builder_add_boolean_value (b, ranks_merged != NULL);
        }
      json_builder_end_object (b);
      print_json (b);
      return 0;
    }
  for (guint i = 0; i < stats->len; i++)
    {
      g_autofree char *display = g_filename_display_name (files->pdata[i]);
      print_text (display, stats->pdata[i]);
    }
  if (files->len > 1)
    {
      g_autofree char *title = ranks_merged
        ? g_strdup_printf ("merged (%u files, a rank each by distributedInfo.rank)", files->len)
        : g_strdup_printf ("merged (%u files)", files->len);
      print_text (title, merged);
    }
  return 0;
}
