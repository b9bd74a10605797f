/* twb-trace-info.c — `twb trace-info FILE…`: what a Chrome trace holds (ours
 * or PyTorch's, plain or gzip): event counts by phase and category, the top
 * names by total and by self time, step-time statistics; per file and, for
 * several files, merged. */
#define G_LOG_DOMAIN "twb"

#include "app/twb-cli.h"
#include "profiler/chrome-read.h"

#include <json-glib/json-glib.h>
#include <stdlib.h>
#include <string.h>

#define TOP_N 10

typedef struct
{
  const char *name;     /* in the stats' own string chunk */
  guint64 count;
  gint64 total_ns, self_ns;
} name_time;

typedef struct
{
  GStringChunk *strings;
  guint64 n_slices, n_instants, n_counters, n_flows, n_lanes, n_processes;
  gint64 span_ns;
  GHashTable *by_cat;   /* category → count (slices and instants) */
  GHashTable *by_name;  /* name → name_time */
  GArray *steps;        /* gint64 step durations */
  GPtrArray *notes;     /* the importer's notes */
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
add_name (trace_stats *s, const char *name, gint64 total, gint64 self)
{
  const char *key = g_string_chunk_insert_const (s->strings, name);
  name_time *nt = g_hash_table_lookup (s->by_name, key);
  if (!nt)
    {
      nt = g_new0 (name_time, 1);
      nt->name = key;
      g_hash_table_insert (s->by_name, (gpointer) key, nt);
    }
  nt->count++;
  nt->total_ns += total;
  nt->self_ns += self;
}

static gboolean
is_step_name (const char *name)
{
  if (strcmp (name, "step") == 0)
    return TRUE;
  if (!g_str_has_prefix (name, "ProfilerStep#"))
    return FALSE;
  const char *p = name + strlen ("ProfilerStep#");
  if (!*p)
    return FALSE;
  for (; *p; p++)
    if (!g_ascii_isdigit (*p))
      return FALSE;
  return TRUE;
}

/* Adds t's figures to s.  Self time is a slice's duration less that of its
 * children on the same lane (the slices directly inside it). */
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
  g_autoptr (GArray) open = g_array_new (FALSE, FALSE, sizeof (guint));
  for (guint l = 0; l < tw_trace_n_lanes (t); l++)
    {
      const tw_lane_info *li = tw_trace_lane (t, l);
      gboolean steps_lane = strcmp (li->name, "steps") == 0;
      guint n = tw_trace_lane_n_slices (t, l);
      g_autofree gint64 *child_ns = g_new0 (gint64, n);
      g_array_set_size (open, 0);
      for (guint k = 0; k < n; k++)
        {
          const tw_slice *sl = tw_trace_lane_slice (t, l, k);
          count_cat (s, sl->category);
          if (steps_lane || is_step_name (sl->name))
            g_array_append_val (s->steps, sl->dur_ns);
          while (open->len)
            {
              const tw_slice *top = tw_trace_lane_slice (t, l, g_array_index (open, guint, open->len - 1));
              if (top->start_ns + top->dur_ns > sl->start_ns)
                break;
              g_array_set_size (open, open->len - 1);
            }
          if (open->len)
            {
              guint parent = g_array_index (open, guint, open->len - 1);
              const tw_slice *top = tw_trace_lane_slice (t, l, parent);
              gint64 end = MIN (sl->start_ns + sl->dur_ns, top->start_ns + top->dur_ns);
              child_ns[parent] += end - sl->start_ns;
            }
          g_array_append_val (open, k);
        }
      for (guint k = 0; k < n; k++)
        {
          const tw_slice *sl = tw_trace_lane_slice (t, l, k);
          add_name (s, sl->name, sl->dur_ns, MAX (sl->dur_ns - child_ns[k], 0));
        }
      for (guint k = 0; k < tw_trace_lane_n_instants (t, l); k++)
        count_cat (s, tw_trace_lane_instant (t, l, k)->category);
    }
  const char *keys[] = { "import.note", "import.skipped" };
  for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
    if (tw_trace_get_meta (t, keys[i]))
      g_ptr_array_add (s->notes, g_strdup_printf ("%s: %s", keys[i] + strlen ("import."),
                                                  tw_trace_get_meta (t, keys[i])));
}

static int
cmp_total (gconstpointer a, gconstpointer b)
{
  const name_time *x = *(name_time *const *) a, *y = *(name_time *const *) b;
  if (x->total_ns != y->total_ns)
    return x->total_ns > y->total_ns ? -1 : 1;
  return strcmp (x->name, y->name);
}

static int
cmp_self (gconstpointer a, gconstpointer b)
{
  const name_time *x = *(name_time *const *) a, *y = *(name_time *const *) b;
  if (x->self_ns != y->self_ns)
    return x->self_ns > y->self_ns ? -1 : 1;
  return strcmp (x->name, y->name);
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
      g_print ("    %12.3f %12.3f %8" G_GUINT64_FORMAT "  %s\n", nt->total_ns / 1e6, nt->self_ns / 1e6,
               nt->count, nt->name);
    }
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
      json_builder_set_member_name (b, "count");
      json_builder_add_int_value (b, (gint64) nt->count);
      json_builder_set_member_name (b, "total_ns");
      json_builder_add_int_value (b, nt->total_ns);
      json_builder_set_member_name (b, "self_ns");
      json_builder_add_int_value (b, nt->self_ns);
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
        {
          json_builder_set_member_name (b, f[i].k);
          json_builder_add_double_value (b, f[i].v);
        }
    }
  json_builder_end_object (b);
  json_builder_end_object (b);
}

static void
usage_trace_info (void)
{
  g_printerr ("usage: twb trace-info [--json] FILE.json[.gz]...\n"
              "  event counts by phase and category, the top %d names by total and by self time,\n"
              "  step-time statistics; per file and, for several, merged\n", TOP_N);
}

int
twb_cmd_trace_info (int argc, char **argv)
{
  gboolean json = FALSE;
  g_autoptr (GPtrArray) files = g_ptr_array_new ();
  for (int i = 1; i < argc; i++)
    {
      if (strcmp (argv[i], "--json") == 0)
        json = TRUE;
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
  if (files->len == 0)
    {
      usage_trace_info ();
      return 2;
    }
  g_autoptr (GPtrArray) stats = g_ptr_array_new_with_free_func ((GDestroyNotify) stats_free);
  g_autoptr (trace_stats) merged = stats_new ();
  int status = 0;
  for (guint i = 0; i < files->len; i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (tw_trace) t = tw_trace_load_chrome (files->pdata[i], &error);
      if (!t)
        {
          g_printerr ("twb: %s\n", error->message);
          status = 1;
          continue;
        }
      trace_stats *s = stats_new ();
      stats_add (s, t);
      stats_add (merged, t);
      g_ptr_array_add (stats, s);
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
        }
      json_builder_end_object (b);
      g_autoptr (JsonGenerator) gen = json_generator_new ();
      g_autoptr (JsonNode) root = json_builder_get_root (b);
      json_generator_set_root (gen, root);
      json_generator_set_pretty (gen, TRUE);
      g_autofree char *text = json_generator_to_data (gen, NULL);
      g_print ("%s\n", text);
      return 0;
    }
  for (guint i = 0; i < stats->len; i++)
    {
      g_autofree char *display = g_filename_display_name (files->pdata[i]);
      print_text (display, stats->pdata[i]);
    }
  if (files->len > 1)
    {
      g_autofree char *title = g_strdup_printf ("merged (%u files)", files->len);
      print_text (title, merged);
    }
  return 0;
}
