/* twb-profiler-panel.c — the Profiler tab (twb-profiler-panel.h).
 *
 * Everything shown is computed by profiler/summary.h from the traces the
 * panel holds; the panel only lays it out and follows the timeline's range
 * and slice. */
#define G_LOG_DOMAIN "twb-profiler"

#include "ui/twb-profiler-panel.h"
#include "ui/twb-stat-table.h"
#include "profiler/ranks.h"

#include <math.h>
#include <string.h>

typedef struct
{
  tw_trace *trace;
  char *title;
  char *path;
  gboolean path_done;           /* its critical path was looked for */
  GArray *crit;                 /* tw_path_segment of its median step, NULL when none */
  tw_path_summary crit_sum;
} open_trace;

struct _TwbProfilerPanel
{
  GtkWidget parent_instance;
  GtkWidget *box;
  GtkWidget *trace_drop, *compare_drop;
  GtkStringList *trace_names, *compare_names;
  GtkWidget *search, *search_count, *status;
  GtkWidget *path_check, *path_label;
  gboolean path_on;             /* draw the critical path of a trace of several ranks */
  TwbTimeline *timeline;
  GtkWidget *empty, *content_stack, *paned;
  gboolean paned_user;          /* the user moved the divider: keep it */
  gboolean paned_setting;
  int paned_max;                /* max-position when we last placed it */
  guint paned_idle;
  int last_height;
  GtkWidget *notebook;
  GtkWidget *t_sel, *t_top, *t_layers, *t_ranks, *t_compare;
  GArray *rank_pids;           /* int: the pid of each row of Ranks */
  GtkWidget *slice_grid, *slice_placeholder, *slice_nodes, *slice_note;
  GPtrArray *traces;            /* open_trace */
  int current, compare;
  GHashTable *shares;           /* node (g_strdup) → double * (current trace) */
  GPtrArray *layer_nodes;       /* the Layers table's node per row id */
  GPtrArray *compare_nodes;     /* the Compare table's node per row id */
  GPtrArray *slice_node_ids;    /* the selected slice's nodes */
  double peak;                  /* GFLOP/s; 0 until measured */
  gboolean peak_started;
  gboolean updating;            /* the drop-downs are being refilled */
  GCancellable *cancel;
};

G_DEFINE_FINAL_TYPE (TwbProfilerPanel, twb_profiler_panel, GTK_TYPE_WIDGET)

enum
{
  SIG_NODES_ACTIVATED,
  SIG_HEAT_CHANGED,
  N_SIGNALS
};
static guint signals[N_SIGNALS];

static const char *const page_names[] = { "selection", "slice", "top", "layers", "ranks", "compare" };

static void
open_trace_free (gpointer p)
{
  open_trace *o = p;
  tw_trace_free (o->trace);
  g_clear_pointer (&o->crit, g_array_unref);
  g_free (o->title);
  g_free (o->path);
  g_free (o);
}

static open_trace *
trace_at (TwbProfilerPanel *p, int i)
{
  return i >= 0 && (guint) i < p->traces->len ? p->traces->pdata[i] : NULL;
}

/* ---- Tables ------------------------------------------------------------------------------ */

/* Names are aggregated per phase (profiler/summary.h): an op's forward and
 * backward slices are two rows, told apart by the Phase column. */
enum { SEL_NAME, SEL_PHASE, SEL_CAT, SEL_TRACE, SEL_COUNT, SEL_TOTAL, SEL_SELF, SEL_AVG, SEL_PCT,
       SEL_GFLOPS, SEL_PEAK, SEL_N };
static const TwbStatColumn sel_cols[SEL_N] = {
  { "Name", TWB_COL_TEXT }, { "Phase", TWB_COL_TEXT }, { "Category", TWB_COL_TEXT },
  { "Trace", TWB_COL_TEXT },
  { "Count", TWB_COL_COUNT }, { "Total", TWB_COL_TIME }, { "Self", TWB_COL_TIME },
  { "Average", TWB_COL_TIME }, { "% of range", TWB_COL_PERCENT }, { "GFLOP/s", TWB_COL_NUMBER },
  { "% of peak", TWB_COL_PERCENT },
};

enum { TOP_NAME, TOP_PHASE, TOP_CAT, TOP_COUNT, TOP_SELF, TOP_TOTAL, TOP_AVG, TOP_PCT, TOP_GFLOPS,
       TOP_N };
static const TwbStatColumn top_cols[TOP_N] = {
  { "Name", TWB_COL_TEXT }, { "Phase", TWB_COL_TEXT }, { "Category", TWB_COL_TEXT },
  { "Count", TWB_COL_COUNT },
  { "Self", TWB_COL_TIME }, { "Total", TWB_COL_TIME }, { "Average", TWB_COL_TIME },
  { "Self % of trace", TWB_COL_PERCENT }, { "GFLOP/s", TWB_COL_NUMBER },
};

enum { LAY_NODE, LAY_FWD, LAY_BWD, LAY_UPD, LAY_TOTAL, LAY_SHARE, LAY_STEP, LAY_COUNT, LAY_N };
static const TwbStatColumn layer_cols[LAY_N] = {
  { "Node", TWB_COL_TEXT }, { "Forward", TWB_COL_TIME }, { "Backward", TWB_COL_TIME },
  { "Update", TWB_COL_TIME }, { "Total", TWB_COL_TIME }, { "Share", TWB_COL_PERCENT },
  { "Per step", TWB_COL_TIME }, { "Slices", TWB_COL_COUNT },
};

/* A trace of several ranks (tw_trace_is_multi_rank) fills every column
 * from tw_trace_rank_stats; another trace's processes leave Exposed, Median
 * step and Straggler empty (tw_summary_ranks). */
enum { RANK_PID, RANK_NAME, RANK_SPAN, RANK_COMPUTE, RANK_COMM, RANK_EXPOSED, RANK_IDLE,
       RANK_OVERLAP, RANK_IDLE_PCT, RANK_STEP, RANK_STRAGGLER, RANK_N };
static const TwbStatColumn rank_cols[RANK_N] = {
  { "Rank", TWB_COL_COUNT }, { "Process", TWB_COL_TEXT }, { "Span", TWB_COL_TIME },
  { "Compute", TWB_COL_TIME }, { "Communication", TWB_COL_TIME }, { "Exposed", TWB_COL_TIME },
  { "Idle", TWB_COL_TIME }, { "Overlap", TWB_COL_PERCENT }, { "Idle share", TWB_COL_PERCENT },
  { "Median step", TWB_COL_TIME }, { "Straggler", TWB_COL_TEXT },
};

enum { CMP_NODE, CMP_A, CMP_B, CMP_DIFF, CMP_RATIO, CMP_FUSED, CMP_N };
static const TwbStatColumn compare_cols[CMP_N] = {
  { "Node", TWB_COL_TEXT }, { "This trace, per step", TWB_COL_TIME },
  { "Compared, per step", TWB_COL_TIME }, { "Difference", TWB_COL_SIGNED_TIME },
  { "Compared / this", TWB_COL_PERCENT }, { "Fused in", TWB_COL_TEXT },
};

/* Trace time of view time t in group g. */
static gint64
trace_time (TwbProfilerPanel *p, guint g, gint64 t)
{
  return t + twb_timeline_get_offset (p->timeline, g);
}

static void
fill_selection (TwbProfilerPanel *p)
{
  TwbStatTable *t = TWB_STAT_TABLE (p->t_sel);
  twb_stat_table_clear (t);
  gint64 a, b;
  if (!twb_timeline_get_range (p->timeline, &a, &b) || b <= a)
    {
      twb_stat_table_set_footer (t, NULL);
      return;
    }
  guint64 n_slices = 0;
  for (guint g = 0; g < twb_timeline_n_groups (p->timeline); g++)
    {
      const tw_trace *tr = twb_timeline_get_trace (p->timeline, g);
      const char *title = g == 0 ? trace_at (p, p->current)->title : trace_at (p, p->compare)->title;
      g_autoptr (GArray) rows = tw_summary_by_name (tr, trace_time (p, g, a), trace_time (p, g, b),
                                                    NULL, 0);
      for (guint i = 0; i < rows->len; i++)
        {
          const tw_summary_row *r = &g_array_index (rows, tw_summary_row, i);
          double gf = tw_summary_row_gflops (r);
          const char *texts[SEL_N] = { [SEL_NAME] = r->name, [SEL_PHASE] = r->phase,
                                       [SEL_CAT] = r->category, [SEL_TRACE] = title };
          double v[SEL_N] = {
            [SEL_COUNT] = r->count, [SEL_TOTAL] = r->total_ns, [SEL_SELF] = r->self_ns,
            [SEL_AVG] = r->count ? (double) r->total_ns / r->count : NAN,
            [SEL_PCT] = 100.0 * r->total_ns / (double) (b - a),
            [SEL_GFLOPS] = r->flops > 0 ? gf : NAN,
            [SEL_PEAK] = r->flops > 0 && p->peak > 0 ? 100.0 * gf / p->peak : NAN,
          };
          twb_stat_table_append (t, texts, v);
          n_slices += r->count;
        }
    }
  g_autofree char *len = twb_format_duration (b - a);
  g_autofree char *from = twb_format_duration (a);
  g_autofree char *to = twb_format_duration (b);
  g_autofree char *peak = p->peak > 0 ? g_strdup_printf ("%.1f GFLOP/s", p->peak)
                                      : g_strdup ("being measured");
  g_autofree char *foot = g_strdup_printf (
    "Range %s (%s to %s): %" G_GUINT64_FORMAT " slices, by name and phase. Total counts each "
    "slice's time inside the range; self leaves out its children's. Peak: this machine's SGEMM, "
    "%s. Pick a row to find its slices.",
    len, from, to, n_slices, peak);
  twb_stat_table_set_footer (t, foot);
  twb_stat_table_sort (t, SEL_TOTAL, GTK_SORT_DESCENDING);
}

static void
fill_top (TwbProfilerPanel *p, const tw_trace *tr)
{
  TwbStatTable *t = TWB_STAT_TABLE (p->t_top);
  twb_stat_table_clear (t);
  if (tr == NULL)
    return;
  g_autoptr (GArray) rows = tw_summary_by_name (tr, 0, 0, NULL, 0);
  double self_sum = 0;
  for (guint i = 0; i < rows->len; i++)
    self_sum += g_array_index (rows, tw_summary_row, i).self_ns;
  for (guint i = 0; i < rows->len; i++)
    {
      const tw_summary_row *r = &g_array_index (rows, tw_summary_row, i);
      const char *texts[TOP_N] = { [TOP_NAME] = r->name, [TOP_PHASE] = r->phase,
                                   [TOP_CAT] = r->category };
      double v[TOP_N] = {
        [TOP_COUNT] = r->count, [TOP_SELF] = r->self_ns, [TOP_TOTAL] = r->total_ns,
        [TOP_AVG] = r->count ? (double) r->total_ns / r->count : NAN,
        [TOP_PCT] = self_sum > 0 ? 100.0 * r->self_ns / self_sum : NAN,
        [TOP_GFLOPS] = r->flops > 0 ? tw_summary_row_gflops (r) : NAN,
      };
      twb_stat_table_append (t, texts, v);
    }
  twb_stat_table_set_footer (t, "Every slice of the trace by name and phase (an op's forward and "
                                "backward are two rows). Self % is of the self time of "
                                "all slices (each moment counted once per lane). Pick a row to find its "
                                "slices on the timeline.");
  twb_stat_table_sort (t, TOP_SELF, GTK_SORT_DESCENDING);
}

static void
fill_layers (TwbProfilerPanel *p, const tw_trace *tr)
{
  TwbStatTable *t = TWB_STAT_TABLE (p->t_layers);
  twb_stat_table_clear (t);
  g_ptr_array_set_size (p->layer_nodes, 0);
  g_hash_table_remove_all (p->shares);
  if (tr == NULL)
    return;
  g_autoptr (GArray) rows = tw_summary_layers (tr, 0, 0);
  for (guint i = 0; i < rows->len; i++)
    {
      const tw_layer_row *r = &g_array_index (rows, tw_layer_row, i);
      const char *texts[LAY_N] = { [LAY_NODE] = r->node };
      double v[LAY_N] = {
        [LAY_FWD] = r->forward_ns, [LAY_BWD] = r->backward_ns, [LAY_UPD] = r->update_ns,
        [LAY_TOTAL] = r->total_ns, [LAY_SHARE] = 100.0 * r->share,
        [LAY_STEP] = (double) r->total_ns / MAX (r->n_steps, 1), [LAY_COUNT] = r->count,
      };
      twb_stat_table_append (t, texts, v);
      g_ptr_array_add (p->layer_nodes, g_strdup (r->node));
      double *s = g_new (double, 1);
      *s = r->share;
      g_hash_table_replace (p->shares, g_strdup (r->node), s);
    }
  twb_stat_table_set_footer (t, rows->len
                                  ? "Time per graph node; a fused slice's time is split evenly "
                                    "among its nodes. Pick a row to select the node on the canvas."
                                  : NULL);
  twb_stat_table_set_placeholder (t, "This trace names no graph nodes (a trace from another "
                                     "tool times its own ops: see Top).");
  twb_stat_table_sort (t, LAY_TOTAL, GTK_SORT_DESCENDING);
}

static void
fill_ranks (TwbProfilerPanel *p, const tw_trace *tr)
{
  TwbStatTable *t = TWB_STAT_TABLE (p->t_ranks);
  twb_stat_table_clear (t);
  g_array_set_size (p->rank_pids, 0);
  if (tr == NULL)
    return;
  int n_ranks = 0;
  if (tw_trace_is_multi_rank (tr, &n_ranks))
    {
      g_autoptr (GArray) stats = tw_trace_rank_stats (tr, TW_STRAGGLER_DEFAULT_PCT);
      for (guint i = 0; i < stats->len; i++)
        {
          const tw_rank_stats *r = &g_array_index (stats, tw_rank_stats, i);
          g_autofree char *strag = r->straggler ? g_strdup_printf ("slower by %.0f %%",
                                                                   r->slower_pct)
                                                : g_strdup ("");
          const char *texts[RANK_N] = { [RANK_NAME] = r->name, [RANK_STRAGGLER] = strag };
          double v[RANK_N] = {
            [RANK_PID] = r->rank, [RANK_SPAN] = r->span_ns, [RANK_COMPUTE] = r->compute_ns,
            [RANK_COMM] = r->comm_ns, [RANK_EXPOSED] = r->exposed_ns, [RANK_IDLE] = r->idle_ns,
            [RANK_OVERLAP] = r->comm_ns > 0 ? r->overlap_pct : NAN,
            [RANK_IDLE_PCT] = r->span_ns > 0 ? 100.0 * r->idle_ns / r->span_ns : NAN,
            [RANK_STEP] = r->n_steps > 0 ? r->step_median_ns : NAN,
          };
          twb_stat_table_append (t, texts, v);
          g_array_append_val (p->rank_pids, r->rank);
        }
      g_autofree char *foot = g_strdup_printf (
        "%d ranks: the time each runs compute, communication (collectives, messages), "
        "communication with no compute under it (exposed), neither (idle); a straggler's "
        "median step is over %.0f %% slower than the ranks' median.  Pick a rank to show its "
        "lanes alone.", n_ranks, TW_STRAGGLER_DEFAULT_PCT);
      twb_stat_table_set_footer (t, foot);
      return;
    }
  g_autoptr (GArray) rows = tw_summary_ranks (tr);
  for (guint i = 0; i < rows->len; i++)
    {
      const tw_rank_row *r = &g_array_index (rows, tw_rank_row, i);
      const char *texts[RANK_N] = { [RANK_NAME] = r->name };
      double v[RANK_N] = {
        [RANK_PID] = r->pid, [RANK_SPAN] = r->span_ns, [RANK_COMPUTE] = r->compute_ns,
        [RANK_COMM] = r->comm_ns, [RANK_IDLE] = r->idle_ns,
        [RANK_OVERLAP] = r->comm_ns > 0 ? r->overlap_pct : NAN,
        [RANK_IDLE_PCT] = r->span_ns > 0 ? 100.0 * r->idle_ns / r->span_ns : NAN,
        [RANK_EXPOSED] = NAN, [RANK_STEP] = NAN,
      };
      twb_stat_table_append (t, texts, v);
      g_array_append_val (p->rank_pids, r->pid);
    }
  twb_stat_table_set_footer (t, "Per process: the time any compute slice runs, any "
                                "communication (collectives, copies), neither (idle); overlap is "
                                "the share of communication hidden under compute.");
}

static void
fill_compare (TwbProfilerPanel *p)
{
  TwbStatTable *t = TWB_STAT_TABLE (p->t_compare);
  twb_stat_table_clear (t);
  g_ptr_array_set_size (p->compare_nodes, 0);
  open_trace *a = trace_at (p, p->current), *b = trace_at (p, p->compare);
  if (a == NULL || b == NULL)
    {
      twb_stat_table_set_footer (t, NULL);
      return;
    }
  g_autoptr (GArray) rows = tw_summary_compare (a->trace, b->trace);
  guint64 common = tw_summary_steps_in_common (a->trace, b->trace);
  /* Without a step in common the figures are each trace's totals: the
   * headers and the step row say so rather than "per step". */
  twb_stat_table_set_title (t, CMP_A, common ? "This trace, per step" : "This trace, whole");
  twb_stat_table_set_title (t, CMP_B, common ? "Compared, per step" : "Compared, whole");
  for (guint i = 0; i < rows->len; i++)
    {
      const tw_compare_row *r = &g_array_index (rows, tw_compare_row, i);
      gboolean step_row = i + 1 == rows->len;
      const char *node = step_row && !common ? "(whole trace)" : r->node;
      const char *texts[CMP_N] = { [CMP_NODE] = node, [CMP_FUSED] = r->fused_a && r->fused_b ? "both"
                                                                   : r->fused_a ? "this trace"
                                                                   : r->fused_b ? "compared"
                                                                                : "" };
      double v[CMP_N] = {
        [CMP_A] = r->a_ns, [CMP_B] = r->b_ns, [CMP_DIFF] = r->diff_ns,
        [CMP_RATIO] = r->a_ns > 0 ? 100.0 * r->b_ns / r->a_ns : NAN,
      };
      twb_stat_table_append (t, texts, v);
      g_ptr_array_add (p->compare_nodes, g_strdup (r->node));
    }
  g_autofree char *foot
    = common ? g_strdup_printf ("This trace: %s. Compared: %s. Mean time per step over the %"
                                G_GUINT64_FORMAT " step%s both hold; the timeline aligns their "
                                "first common step.", a->title, b->title, common,
                                common == 1 ? "" : "s")
             : g_strdup_printf ("This trace: %s. Compared: %s. The two traces share no step (no "
                                "step number is in both), so these are each whole trace's "
                                "totals, not times per step.", a->title, b->title);
  twb_stat_table_set_footer (t, foot);
}

/* ---- The selected slice --------------------------------------------------------------------- */

static void
grid_row (GtkGrid *g, int row, const char *key, const char *value)
{
  GtkWidget *k = gtk_label_new (key);
  gtk_label_set_xalign (GTK_LABEL (k), 1.0f);
  gtk_label_set_yalign (GTK_LABEL (k), 0.0f);
  gtk_widget_add_css_class (k, "dim-label");
  GtkWidget *v = gtk_label_new (value);
  gtk_label_set_xalign (GTK_LABEL (v), 0.0f);
  gtk_label_set_selectable (GTK_LABEL (v), TRUE);
  gtk_label_set_wrap (GTK_LABEL (v), TRUE);
  gtk_label_set_wrap_mode (GTK_LABEL (v), PANGO_WRAP_WORD_CHAR);
  gtk_widget_set_hexpand (v, TRUE);
  gtk_grid_attach (g, k, 0, row, 1, 1);
  gtk_grid_attach (g, v, 1, row, 1, 1);
}

static void
clear_grid (GtkWidget *grid)
{
  GtkWidget *c;
  while ((c = gtk_widget_get_first_child (grid)))
    gtk_grid_remove (GTK_GRID (grid), c);
}

static void
node_button_clicked (GtkButton *b, TwbProfilerPanel *p)
{
  const char *id = g_object_get_data (G_OBJECT (b), "twb-node");
  const char *ids[] = { id, NULL };
  g_signal_emit (p, signals[SIG_NODES_ACTIVATED], 0, ids);
}

static void
show_slice (TwbProfilerPanel *p, const TwbSliceRef *ref)
{
  clear_grid (p->slice_grid);
  gtk_widget_set_visible (p->slice_note, FALSE);
  GtkWidget *c;
  while ((c = gtk_widget_get_first_child (p->slice_nodes)))
    gtk_box_remove (GTK_BOX (p->slice_nodes), c);
  g_ptr_array_set_size (p->slice_node_ids, 0);
  const tw_trace *tr = ref ? twb_timeline_get_trace (p->timeline, ref->group) : NULL;
  if (tr == NULL || ref->lane >= tw_trace_n_lanes (tr)
      || ref->index >= tw_trace_lane_n_slices (tr, ref->lane))
    {
      gtk_widget_set_visible (p->slice_placeholder, TRUE);
      return;
    }
  gtk_widget_set_visible (p->slice_placeholder, FALSE);
  const tw_slice *s = tw_trace_lane_slice (tr, ref->lane, ref->index);
  const tw_lane_info *lane = tw_trace_lane (tr, ref->lane);
  GtkGrid *g = GTK_GRID (p->slice_grid);
  int row = 0;
  gint64 off = twb_timeline_get_offset (p->timeline, ref->group);
  g_autofree char *start = twb_format_duration (s->start_ns - off);
  g_autofree char *dur = twb_format_duration (s->dur_ns);
  g_autofree char *where = g_strdup_printf ("%s (process %d, %s %" G_GINT64_FORMAT ")",
                                            lane->name ? lane->name : "", lane->pid,
                                            lane->kind == TW_LANE_THREAD ? "thread" : "lane",
                                            lane->tid);
  grid_row (g, row++, "Name", s->name);
  grid_row (g, row++, "Category", s->category ? s->category : "");
  grid_row (g, row++, "Start", start);
  grid_row (g, row++, "Duration", dur);
  /* Self: less the direct children (one level deeper, inside it). */
  gint64 children = 0;
  for (guint i = ref->index + 1; i < tw_trace_lane_n_slices (tr, ref->lane); i++)
    {
      const tw_slice *ch = tw_trace_lane_slice (tr, ref->lane, i);
      if (ch->start_ns >= s->start_ns + s->dur_ns)
        break;
      if (ch->depth == s->depth + 1)
        children += MIN (ch->start_ns + ch->dur_ns, s->start_ns + s->dur_ns) - ch->start_ns;
    }
  g_autofree char *self_time = twb_format_duration (MAX (s->dur_ns - children, 0));
  grid_row (g, row++, "Self", self_time);
  grid_row (g, row++, "Lane", where);
  const char *nodes = NULL;
  for (guint i = 0; i < s->n_args; i++)
    {
      grid_row (g, row++, s->args[i].key, s->args[i].value ? s->args[i].value : "");
      if (g_strcmp0 (s->args[i].key, "nodes") == 0)
        nodes = s->args[i].value;
    }
  if (nodes && *nodes)
    {
      g_auto (GStrv) ids = g_strsplit (nodes, ",", -1);
      GtkWidget *l = gtk_label_new ("Nodes:");
      gtk_widget_add_css_class (l, "dim-label");
      gtk_box_append (GTK_BOX (p->slice_nodes), l);
      for (char **id = ids; *id; id++)
        {
          g_strstrip (*id);
          if (!**id)
            continue;
          GtkWidget *b = gtk_button_new_with_label (*id);
          gtk_widget_set_tooltip_text (b, "Select this node on the canvas");
          g_object_set_data_full (G_OBJECT (b), "twb-node", g_strdup (*id), g_free);
          g_signal_connect (b, "clicked", G_CALLBACK (node_button_clicked), p);
          gtk_box_append (GTK_BOX (p->slice_nodes), b);
          g_ptr_array_add (p->slice_node_ids, g_strdup (*id));
        }
    }
}

static void
slice_selected (TwbTimeline *tl, gpointer ref, TwbProfilerPanel *p)
{
  show_slice (p, ref);
  if (ref == NULL)
    return;
  twb_profiler_panel_set_page (p, "slice");
  if (p->slice_node_ids->len)
    {
      g_ptr_array_add (p->slice_node_ids, NULL);
      g_signal_emit (p, signals[SIG_NODES_ACTIVATED], 0, p->slice_node_ids->pdata);
      g_ptr_array_set_size (p->slice_node_ids, p->slice_node_ids->len - 1);
    }
}

static void
range_changed (TwbTimeline *tl, TwbProfilerPanel *p)
{
  fill_selection (p);
  gint64 a, b;
  if (twb_timeline_get_range (tl, &a, &b))
    twb_profiler_panel_set_page (p, "selection");
}

/* A row of Selection or Top picked: its slices found on the timeline. */
static void
name_row_activated (TwbStatTable *t, guint row, TwbProfilerPanel *p)
{
  const char *name = twb_stat_table_get_text (t, row, 0);
  if (name)
    twb_profiler_panel_set_search (p, name);
}

/* A rank picked: its lanes alone open on the timeline (the others'
 * collapsed to their headers); the same rank again opens them all. */
static void
rank_row_activated (TwbStatTable *t, guint row, TwbProfilerPanel *p)
{
  if (row >= p->rank_pids->len || twb_timeline_n_groups (p->timeline) == 0)
    return;
  int pick = g_array_index (p->rank_pids, int, row);
  gboolean alone = TRUE;
  for (guint i = 0; i < p->rank_pids->len; i++)
    {
      int pid = g_array_index (p->rank_pids, int, i);
      alone &= twb_timeline_get_collapsed (p->timeline, 0, pid) == (pid != pick);
    }
  for (guint i = 0; i < p->rank_pids->len; i++)
    {
      int pid = g_array_index (p->rank_pids, int, i);
      twb_timeline_set_collapsed (p->timeline, 0, pid, !alone && pid != pick);
    }
}

static void
layer_row_activated (TwbStatTable *t, guint row, TwbProfilerPanel *p)
{
  GPtrArray *nodes = t == TWB_STAT_TABLE (p->t_layers) ? p->layer_nodes : p->compare_nodes;
  if (row >= nodes->len)
    return;
  const char *ids[] = { nodes->pdata[row], NULL };
  if (g_strcmp0 (ids[0], "(step)") == 0)
    return;
  twb_timeline_set_highlight_nodes (p->timeline, ids);
  g_signal_emit (p, signals[SIG_NODES_ACTIVATED], 0, ids);
}

/* ---- The peak ------------------------------------------------------------------------------- */

static void
peak_thread (GTask *task, gpointer src, gpointer data, GCancellable *c)
{
  double *v = g_new (double, 1);
  *v = tw_machine_peak_gflops (0);
  g_task_return_pointer (task, v, g_free);
}

static void
peak_done (GObject *src, GAsyncResult *res, gpointer data)
{
  g_autoptr (GApplication) app = data;   /* held while it measured */
  if (app)
    g_application_release (app);
  g_autofree double *v = g_task_propagate_pointer (G_TASK (res), NULL);
  TwbProfilerPanel *p = TWB_PROFILER_PANEL (src);
  if (v == NULL || g_cancellable_is_cancelled (p->cancel))
    return;
  p->peak = *v;
  fill_selection (p);
}

/* The measurement cannot be cancelled (a few SGEMMs on the engine's team):
 * the application is held until it ends, so the process never exits with
 * the thread inside OpenMP (`twb --screenshot TRACE` closes at once). */
static void
start_peak (TwbProfilerPanel *p)
{
  if (p->peak_started)
    return;
  p->peak_started = TRUE;
  GApplication *app = g_application_get_default ();
  if (app)
    g_application_hold (g_object_ref (app));
  GTask *task = g_task_new (p, p->cancel, peak_done, app);
  g_task_set_return_on_cancel (task, FALSE);
  g_task_run_in_thread (task, peak_thread);
  g_object_unref (task);
}

/* ---- Traces --------------------------------------------------------------------------------- */

static void
refill_drops (TwbProfilerPanel *p)
{
  p->updating = TRUE;
  guint n = g_list_model_get_n_items (G_LIST_MODEL (p->trace_names));
  g_autoptr (GPtrArray) titles = g_ptr_array_new ();
  for (guint i = 0; i < p->traces->len; i++)
    g_ptr_array_add (titles, ((open_trace *) p->traces->pdata[i])->title);
  g_ptr_array_add (titles, NULL);
  gtk_string_list_splice (p->trace_names, 0, n, (const char *const *) titles->pdata);
  n = g_list_model_get_n_items (G_LIST_MODEL (p->compare_names));
  gtk_string_list_splice (p->compare_names, 1, n - 1, (const char *const *) titles->pdata);
  if (p->current >= 0)
    gtk_drop_down_set_selected (GTK_DROP_DOWN (p->trace_drop), p->current);
  gtk_drop_down_set_selected (GTK_DROP_DOWN (p->compare_drop), p->compare + 1);
  gtk_widget_set_sensitive (p->compare_drop, p->traces->len > 1);
  p->updating = FALSE;
}

/* The first step both traces hold: where the timeline aligns them. */
static void
align_offsets (const tw_trace *a, const tw_trace *b, gint64 *oa, gint64 *ob)
{
  *oa = tw_trace_start_ns (a);
  *ob = tw_trace_start_ns (b);
  guint64 fa = 0, fb = 0;
  guint64 na = tw_summary_n_steps (a, &fa), nb = tw_summary_n_steps (b, &fb);
  if (na == 0 || nb == 0)
    return;
  guint64 first = MAX (fa, fb);
  gint64 sa, ea, sb, eb;
  if (tw_summary_find_step (a, first, &sa, &ea) && tw_summary_find_step (b, first, &sb, &eb))
    *oa = sa, *ob = sb;
}

/* ---- The critical path ------------------------------------------------------------------ */

static double
pct (gint64 part, gint64 whole)
{
  return whole > 0 ? 100.0 * (double) part / (double) whole : 0;
}

/* The current trace's critical path (of its median step) on the timeline
 * and its summary above it, while the toggle is on; the toggle shows for
 * traces of several ranks only. */
static void
show_path (TwbProfilerPanel *p)
{
  open_trace *a = trace_at (p, p->current);
  gboolean multi = a && tw_trace_is_multi_rank (a->trace, NULL);
  gtk_widget_set_visible (p->path_check, multi);
  if (!multi || !p->path_on)
    {
      twb_timeline_set_critical_path (p->timeline, 0, NULL);
      gtk_widget_set_visible (p->path_label, FALSE);
      return;
    }
  if (!a->path_done)
    {
      a->crit = tw_trace_critical_path_median (a->trace, &a->crit_sum);
      a->path_done = TRUE;
    }
  twb_timeline_set_critical_path (p->timeline, 0, a->crit);
  g_autofree char *text = NULL;
  if (a->crit == NULL)
    text = g_strdup ("Critical path: none (no rank of this trace has a \"step N\" slice)");
  else
    {
      const tw_path_summary *s = &a->crit_sum;
      g_autofree char *span = twb_format_duration ((double) s->span_ns);
      GString *ranks = g_string_new (NULL);
      for (int r = 0; r < 64; r++)
        if (s->ranks_mask & (G_GUINT64_CONSTANT (1) << r))
          g_string_append_printf (ranks, "%s%d", ranks->len ? ", " : "", r);
      text = g_strdup_printf ("Critical path of step %" G_GUINT64_FORMAT " (the median step): %s "
                              "\u2014 compute %.0f %%, communication %.0f %%, wait %.0f %%, "
                              "idle %.0f %%; through rank%s %s, ending on rank %d",
                              s->step, span, pct (s->compute_ns, s->span_ns),
                              pct (s->comm_ns, s->span_ns), pct (s->wait_ns, s->span_ns),
                              pct (s->idle_ns, s->span_ns), strchr (ranks->str, ',') ? "s" : "",
                              ranks->str, s->end_rank);
      g_string_free (ranks, TRUE);
    }
  gtk_label_set_text (GTK_LABEL (p->path_label), text);
  gtk_widget_set_visible (p->path_label, TRUE);
}

void
twb_profiler_panel_set_critical_path (TwbProfilerPanel *p, gboolean on)
{
  g_return_if_fail (TWB_IS_PROFILER_PANEL (p));
  p->path_on = on;
  show_path (p);
}

void
twb_profiler_panel_set_slice_note (TwbProfilerPanel *p, const char *text)
{
  gtk_label_set_text (GTK_LABEL (p->slice_note), text ? text : "");
  gtk_widget_set_visible (p->slice_note, text && *text);
}

const char *
twb_profiler_panel_get_slice_note (TwbProfilerPanel *p)
{
  return gtk_widget_get_visible (p->slice_note) ? gtk_label_get_text (GTK_LABEL (p->slice_note))
                                                : NULL;
}

const char *
twb_profiler_panel_get_status (TwbProfilerPanel *p)
{
  return gtk_label_get_text (GTK_LABEL (p->status));
}

gboolean
twb_profiler_panel_get_critical_path (TwbProfilerPanel *p)
{
  return p->path_on;
}

const char *
twb_profiler_panel_get_path_text (TwbProfilerPanel *p)
{
  return gtk_widget_get_visible (p->path_label) ? gtk_label_get_text (GTK_LABEL (p->path_label))
                                                : NULL;
}

static void
show_current (TwbProfilerPanel *p)
{
  twb_timeline_clear (p->timeline);
  open_trace *a = trace_at (p, p->current), *b = trace_at (p, p->compare);
  gtk_stack_set_visible_child_name (GTK_STACK (p->content_stack), a ? "trace" : "empty");
  if (a)
    {
      /* View time 0: the trace's start, or the first step both share. */
      gint64 oa = tw_trace_start_ns (a->trace), ob = 0;
      if (b)
        align_offsets (a->trace, b->trace, &oa, &ob);
      twb_timeline_add_trace (p->timeline, a->trace, a->title, oa);
      if (b)
        twb_timeline_add_trace (p->timeline, b->trace, b->title, ob);
      twb_timeline_zoom_all (p->timeline);
      const char *text = gtk_editable_get_text (GTK_EDITABLE (p->search));
      twb_profiler_panel_set_search (p, text);
    }
  fill_selection (p);
  show_slice (p, NULL);
  fill_top (p, a ? a->trace : NULL);
  fill_layers (p, a ? a->trace : NULL);
  fill_ranks (p, a ? a->trace : NULL);
  fill_compare (p);
  show_path (p);
  gtk_widget_set_visible (gtk_notebook_get_nth_page (GTK_NOTEBOOK (p->notebook), 5), b != NULL);
  refill_drops (p);
  g_signal_emit (p, signals[SIG_HEAT_CHANGED], 0);
}

guint
twb_profiler_panel_add_trace (TwbProfilerPanel *p, tw_trace *t, const char *title, const char *path)
{
  g_return_val_if_fail (TWB_IS_PROFILER_PANEL (p) && t != NULL, 0);
  open_trace *o = g_new0 (open_trace, 1);
  o->trace = t;
  tw_trace_sort (t);
  /* Titles stay apart in the menus: "lenet5 eager", "lenet5 eager (2)". */
  g_autofree char *base = g_strdup (title && *title ? title : "trace");
  char *name = g_strdup (base);
  for (guint k = 2;; k++)
    {
      gboolean clash = FALSE;
      for (guint i = 0; i < p->traces->len && !clash; i++)
        clash = strcmp (((open_trace *) p->traces->pdata[i])->title, name) == 0;
      if (!clash)
        break;
      g_free (name);
      name = g_strdup_printf ("%s (%u)", base, k);
    }
  o->title = name;
  o->path = g_strdup (path);
  g_ptr_array_add (p->traces, o);
  p->current = (int) p->traces->len - 1;
  if (p->compare == p->current)
    p->compare = -1;
  start_peak (p);
  show_current (p);
  return p->current;
}

guint
twb_profiler_panel_n_traces (TwbProfilerPanel *p)
{
  return p->traces->len;
}

const tw_trace *
twb_profiler_panel_get_trace (TwbProfilerPanel *p, guint i)
{
  open_trace *o = trace_at (p, (int) i);
  return o ? o->trace : NULL;
}

const char *
twb_profiler_panel_get_title (TwbProfilerPanel *p, guint i)
{
  open_trace *o = trace_at (p, (int) i);
  return o ? o->title : NULL;
}

int
twb_profiler_panel_get_current (TwbProfilerPanel *p)
{
  return p->current;
}

void
twb_profiler_panel_show_trace (TwbProfilerPanel *p, guint i)
{
  if (i >= p->traces->len || (int) i == p->current)
    return;
  p->current = (int) i;
  if (p->compare == p->current)
    p->compare = -1;
  show_current (p);
}

void
twb_profiler_panel_set_compare (TwbProfilerPanel *p, int i)
{
  if (i >= (int) p->traces->len || i == p->current)
    i = -1;
  if (i == p->compare)
    return;
  p->compare = i;
  show_current (p);
  if (i >= 0)
    twb_profiler_panel_set_page (p, "compare");
}

int
twb_profiler_panel_get_compare (TwbProfilerPanel *p)
{
  return p->compare;
}

void
twb_profiler_panel_close_current (TwbProfilerPanel *p)
{
  if (p->current < 0)
    return;
  int gone = p->current;
  /* The timeline borrows the trace: let it go first. */
  twb_timeline_clear (p->timeline);
  g_ptr_array_remove_index (p->traces, gone);
  if (p->compare == gone)
    p->compare = -1;
  else if (p->compare > gone)
    p->compare--;
  p->current = p->traces->len ? MIN (gone, (int) p->traces->len - 1) : -1;
  if (p->compare == p->current)
    p->compare = -1;
  show_current (p);
}

TwbTimeline *
twb_profiler_panel_get_timeline (TwbProfilerPanel *p)
{
  return p->timeline;
}

void
twb_profiler_panel_set_page (TwbProfilerPanel *p, const char *name)
{
  for (guint i = 0; i < G_N_ELEMENTS (page_names); i++)
    if (g_strcmp0 (name, page_names[i]) == 0)
      {
        gtk_notebook_set_current_page (GTK_NOTEBOOK (p->notebook), (int) i);
        return;
      }
  g_warning ("no profiler page '%s'", name);
}

const char *
twb_profiler_panel_get_page (TwbProfilerPanel *p)
{
  int i = gtk_notebook_get_current_page (GTK_NOTEBOOK (p->notebook));
  return i >= 0 && i < (int) G_N_ELEMENTS (page_names) ? page_names[i] : NULL;
}

GtkWidget *
twb_profiler_panel_get_table (TwbProfilerPanel *p, const char *page)
{
  GtkWidget *tables[] = { p->t_sel, NULL, p->t_top, p->t_layers, p->t_ranks, p->t_compare };
  for (guint i = 0; i < G_N_ELEMENTS (page_names); i++)
    if (g_strcmp0 (page, page_names[i]) == 0)
      return tables[i];
  return NULL;
}

void
twb_profiler_panel_set_status (TwbProfilerPanel *p, const char *text)
{
  gtk_label_set_text (GTK_LABEL (p->status), text ? text : "");
  /* The bar may cut it short: the whole line on hover. */
  gtk_widget_set_tooltip_text (p->status, text && *text ? text : NULL);
}

void
twb_profiler_panel_set_search (TwbProfilerPanel *p, const char *text)
{
  if (g_strcmp0 (gtk_editable_get_text (GTK_EDITABLE (p->search)), text ? text : "") != 0)
    {
      /* Through the entry: its "search-changed" comes back here. */
      gtk_editable_set_text (GTK_EDITABLE (p->search), text ? text : "");
    }
  guint64 n = twb_timeline_set_search (p->timeline, text);
  g_autofree char *s = text && *text ? g_strdup_printf ("%" G_GUINT64_FORMAT " found", n) : NULL;
  gtk_label_set_text (GTK_LABEL (p->search_count), s ? s : "");
}

gboolean
twb_profiler_panel_layer_share (TwbProfilerPanel *p, const char *node, double *share)
{
  double *s = g_hash_table_lookup (p->shares, node);
  if (s && share)
    *share = *s;
  return s != NULL;
}

char **
twb_profiler_panel_layer_nodes (TwbProfilerPanel *p)
{
  g_autofree const char **keys = (const char **) g_hash_table_get_keys_as_array (p->shares, NULL);
  return g_strdupv ((char **) keys);
}

/* ---- Building ----------------------------------------------------------------------------- */

static void
search_changed (GtkSearchEntry *e, TwbProfilerPanel *p)
{
  twb_profiler_panel_set_search (p, gtk_editable_get_text (GTK_EDITABLE (e)));
}

static void
search_next (GtkSearchEntry *e, TwbProfilerPanel *p)
{
  twb_timeline_search_step (p->timeline, TRUE);
}

static void
search_previous (GtkSearchEntry *e, TwbProfilerPanel *p)
{
  twb_timeline_search_step (p->timeline, FALSE);
}

static void
trace_drop_changed (GtkDropDown *d, GParamSpec *ps, TwbProfilerPanel *p)
{
  if (p->updating)
    return;
  guint i = gtk_drop_down_get_selected (d);
  if (i != GTK_INVALID_LIST_POSITION)
    twb_profiler_panel_show_trace (p, i);
}

static void
compare_drop_changed (GtkDropDown *d, GParamSpec *ps, TwbProfilerPanel *p)
{
  if (p->updating)
    return;
  guint i = gtk_drop_down_get_selected (d);
  twb_profiler_panel_set_compare (p, i == GTK_INVALID_LIST_POSITION ? -1 : (int) i - 1);
}

/* The timeline takes 58 % of the height until the user moves the divider
 * (two traces beside each other want the room; the tables scroll). */
static gboolean
place_paned (gpointer data)
{
  TwbProfilerPanel *p = data;
  p->paned_idle = 0;
  int max = 0;
  g_object_get (p->paned, "max-position", &max, NULL);
  if (p->paned_user || max <= 0)
    return G_SOURCE_REMOVE;
  p->paned_setting = TRUE;
  p->paned_max = max;
  /* max-position already leaves the tables their minimum. */
  gtk_paned_set_position (GTK_PANED (p->paned), MIN (max, gtk_widget_get_height (p->paned) * 58 / 100));
  p->paned_setting = FALSE;
  return G_SOURCE_REMOVE;
}

/* The panel's layout: its box fills it; when its height changes the
 * divider is placed again (after this allocation, not inside it). */
static void
panel_measure (GtkWidget *w, GtkOrientation o, int for_size, int *min, int *nat, int *min_b,
               int *nat_b)
{
  TwbProfilerPanel *p = TWB_PROFILER_PANEL (w);
  gtk_widget_measure (p->box, o, for_size, min, nat, min_b, nat_b);
}

static void
panel_allocate (GtkWidget *w, int width, int height, int baseline)
{
  TwbProfilerPanel *p = TWB_PROFILER_PANEL (w);
  gtk_widget_allocate (p->box, width, height, baseline, NULL);
  if (height != p->last_height && !p->paned_user && p->paned_idle == 0)
    p->paned_idle = g_idle_add (place_paned, p);
  p->last_height = height;
}

static void
paned_moved (GtkPaned *paned, GParamSpec *ps, TwbProfilerPanel *p)
{
  /* A move at an unchanged size is the user's (a resize moves it with the
   * size, and is followed by paned_resized). */
  int max = 0;
  g_object_get (paned, "max-position", &max, NULL);
  if (!p->paned_setting && p->paned_max > 0 && max == p->paned_max)
    p->paned_user = TRUE;
}

static GtkWidget *
tool_button (const char *icon, const char *label, const char *action, const char *tip)
{
  GtkWidget *b = gtk_button_new ();
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 4);
  gtk_box_append (GTK_BOX (box), gtk_image_new_from_icon_name (icon));
  gtk_box_append (GTK_BOX (box), gtk_label_new (label));
  gtk_button_set_child (GTK_BUTTON (b), box);
  gtk_actionable_set_action_name (GTK_ACTIONABLE (b), action);
  gtk_widget_set_tooltip_text (b, tip);
  return b;
}

static GtkWidget *
add_table_page (TwbProfilerPanel *p, const TwbStatColumn *cols, guint n, const char *title,
                const char *placeholder)
{
  GtkWidget *t = twb_stat_table_new (cols, n);
  twb_stat_table_set_placeholder (TWB_STAT_TABLE (t), placeholder);
  gtk_widget_set_vexpand (t, TRUE);
  gtk_notebook_append_page (GTK_NOTEBOOK (p->notebook), t, gtk_label_new (title));
  return t;
}

static void
build_toolbar (TwbProfilerPanel *p)
{
  GtkWidget *bar = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
  gtk_widget_add_css_class (bar, "toolbar");
  GtkWidget *rec = gtk_toggle_button_new ();
  GtkWidget *rbox = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 4);
  gtk_box_append (GTK_BOX (rbox), gtk_image_new_from_icon_name ("media-record-symbolic"));
  gtk_box_append (GTK_BOX (rbox), gtk_label_new ("Record"));
  gtk_button_set_child (GTK_BUTTON (rec), rbox);
  gtk_actionable_set_action_name (GTK_ACTIONABLE (rec), "profiler.record");
  gtk_widget_set_tooltip_text (rec, "Record every op of the current run, or of the next one "
                                    "(F6); press again to stop and show the trace");
  gtk_box_append (GTK_BOX (bar), rec);
  gtk_box_append (GTK_BOX (bar), tool_button ("document-open-symbolic", "Open…", "profiler.open",
                                              "Open a Chrome trace (ours, PyTorch's; .json or "
                                              ".json.gz)"));
  gtk_box_append (GTK_BOX (bar), tool_button ("document-save-as-symbolic", "Export…",
                                              "profiler.export", "Save the trace shown as a "
                                              "Chrome trace, or the timeline as PNG/SVG/PDF"));
  gtk_box_append (GTK_BOX (bar), gtk_separator_new (GTK_ORIENTATION_VERTICAL));
  gtk_box_append (GTK_BOX (bar), gtk_label_new ("Trace"));
  p->trace_names = gtk_string_list_new (NULL);
  p->trace_drop = gtk_drop_down_new (G_LIST_MODEL (g_object_ref (p->trace_names)), NULL);
  gtk_widget_set_tooltip_text (p->trace_drop, "The trace shown");
  g_signal_connect (p->trace_drop, "notify::selected", G_CALLBACK (trace_drop_changed), p);
  gtk_box_append (GTK_BOX (bar), p->trace_drop);
  GtkWidget *close = gtk_button_new_from_icon_name ("window-close-symbolic");
  gtk_actionable_set_action_name (GTK_ACTIONABLE (close), "profiler.close-trace");
  gtk_widget_set_tooltip_text (close, "Close this trace");
  gtk_widget_add_css_class (close, "flat");
  gtk_box_append (GTK_BOX (bar), close);
  gtk_box_append (GTK_BOX (bar), gtk_label_new ("beside"));
  p->compare_names = gtk_string_list_new ((const char *[]) { "nothing", NULL });
  p->compare_drop = gtk_drop_down_new (G_LIST_MODEL (g_object_ref (p->compare_names)), NULL);
  gtk_widget_set_tooltip_text (p->compare_drop, "Another trace to show beside it, aligned by "
                                                "step (eager against compiled)");
  g_signal_connect (p->compare_drop, "notify::selected", G_CALLBACK (compare_drop_changed), p);
  gtk_box_append (GTK_BOX (bar), p->compare_drop);
  p->path_check = gtk_check_button_new_with_label ("Critical path");
  gtk_actionable_set_action_name (GTK_ACTIONABLE (p->path_check), "profiler.critical-path");
  gtk_widget_set_tooltip_text (p->path_check, "Draw the median step's critical path across the "
                                              "ranks: the ops and collectives the step waited "
                                              "on, rank to rank");
  gtk_widget_set_visible (p->path_check, FALSE);
  gtk_box_append (GTK_BOX (bar), p->path_check);
  gtk_box_append (GTK_BOX (bar), gtk_separator_new (GTK_ORIENTATION_VERTICAL));
  p->search = gtk_search_entry_new ();
  g_object_set (p->search, "placeholder-text", "Find slices by name", NULL);
  gtk_widget_set_size_request (p->search, 200, -1);
  gtk_widget_set_tooltip_text (p->search, "Enter: next match; Shift+Enter: previous");
  g_signal_connect (p->search, "search-changed", G_CALLBACK (search_changed), p);
  g_signal_connect (p->search, "activate", G_CALLBACK (search_next), p);
  g_signal_connect (p->search, "next-match", G_CALLBACK (search_next), p);
  g_signal_connect (p->search, "previous-match", G_CALLBACK (search_previous), p);
  gtk_box_append (GTK_BOX (bar), p->search);
  p->search_count = gtk_label_new (NULL);
  gtk_widget_add_css_class (p->search_count, "dim-label");
  gtk_box_append (GTK_BOX (bar), p->search_count);
  p->status = gtk_label_new (NULL);
  gtk_widget_set_hexpand (p->status, TRUE);
  gtk_label_set_xalign (GTK_LABEL (p->status), 1.0f);
  gtk_label_set_ellipsize (GTK_LABEL (p->status), PANGO_ELLIPSIZE_END);
  gtk_widget_add_css_class (p->status, "dim-label");
  gtk_box_append (GTK_BOX (bar), p->status);
  gtk_box_append (GTK_BOX (p->box), bar);
}

static void
twb_profiler_panel_init (TwbProfilerPanel *p)
{
  p->traces = g_ptr_array_new_with_free_func (open_trace_free);
  p->current = p->compare = -1;
  p->shares = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  p->layer_nodes = g_ptr_array_new_with_free_func (g_free);
  p->compare_nodes = g_ptr_array_new_with_free_func (g_free);
  p->rank_pids = g_array_new (FALSE, FALSE, sizeof (int));
  p->slice_node_ids = g_ptr_array_new_with_free_func (g_free);
  p->cancel = g_cancellable_new ();

  gtk_widget_set_layout_manager (GTK_WIDGET (p),
                                 gtk_custom_layout_new (NULL, panel_measure, panel_allocate));
  p->box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 4);
  gtk_widget_set_parent (p->box, GTK_WIDGET (p));
  build_toolbar (p);
  p->path_label = gtk_label_new (NULL);
  gtk_label_set_xalign (GTK_LABEL (p->path_label), 0.0f);
  gtk_label_set_ellipsize (GTK_LABEL (p->path_label), PANGO_ELLIPSIZE_END);
  gtk_label_set_selectable (GTK_LABEL (p->path_label), TRUE);
  gtk_widget_set_margin_start (p->path_label, 8);
  gtk_widget_add_css_class (p->path_label, "critical-path");
  gtk_widget_set_visible (p->path_label, FALSE);
  gtk_box_append (GTK_BOX (p->box), p->path_label);

  p->content_stack = gtk_stack_new ();
  gtk_widget_set_vexpand (p->content_stack, TRUE);
  p->empty = gtk_label_new ("No trace yet. Press Record (F6) and train (F5): every op, kernel, "
                            "data load and step of the run goes on a timeline here. Or open a "
                            "Chrome trace, ours or PyTorch's (Open…).\n"
                            "From the command line: twb profile MODEL.json --steps 20 --trace "
                            "run.json.gz; twb run.json.gz opens it here.");
  gtk_label_set_wrap (GTK_LABEL (p->empty), TRUE);
  gtk_label_set_justify (GTK_LABEL (p->empty), GTK_JUSTIFY_CENTER);
  gtk_widget_add_css_class (p->empty, "dim-label");
  gtk_widget_add_css_class (p->empty, "panel-placeholder");
  gtk_stack_add_named (GTK_STACK (p->content_stack), p->empty, "empty");

  GtkWidget *paned = gtk_paned_new (GTK_ORIENTATION_VERTICAL);
  p->paned = paned;
  g_signal_connect (paned, "notify::position", G_CALLBACK (paned_moved), p);
  gtk_paned_set_wide_handle (GTK_PANED (paned), TRUE);
  p->timeline = TWB_TIMELINE (twb_timeline_new ());
  gtk_widget_set_vexpand (GTK_WIDGET (p->timeline), TRUE);
  gtk_widget_set_size_request (GTK_WIDGET (p->timeline), -1, 120);
  g_signal_connect (p->timeline, "slice-selected", G_CALLBACK (slice_selected), p);
  g_signal_connect (p->timeline, "range-changed", G_CALLBACK (range_changed), p);
  gtk_paned_set_start_child (GTK_PANED (paned), GTK_WIDGET (p->timeline));
  gtk_paned_set_resize_start_child (GTK_PANED (paned), TRUE);
  gtk_paned_set_shrink_start_child (GTK_PANED (paned), FALSE);

  p->notebook = gtk_notebook_new ();
  gtk_notebook_set_scrollable (GTK_NOTEBOOK (p->notebook), TRUE);
  gtk_widget_set_size_request (p->notebook, -1, 120);
  p->t_sel = add_table_page (p, sel_cols, SEL_N, "Selection",
                             "Drag across the timeline to select a time range: what ran in it "
                             "shows here, by name.");
  GtkWidget *slice_sw = gtk_scrolled_window_new ();
  GtkWidget *slice_box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 6);
  gtk_widget_set_margin_start (slice_box, 8);
  gtk_widget_set_margin_end (slice_box, 8);
  gtk_widget_set_margin_top (slice_box, 6);
  p->slice_placeholder = gtk_label_new ("Click a slice on the timeline to see its arguments; its "
                                        "nodes are selected on the canvas.");
  gtk_widget_add_css_class (p->slice_placeholder, "dim-label");
  gtk_box_append (GTK_BOX (slice_box), p->slice_placeholder);
  p->slice_note = gtk_label_new (NULL);
  gtk_label_set_xalign (GTK_LABEL (p->slice_note), 0.0f);
  gtk_label_set_wrap (GTK_LABEL (p->slice_note), TRUE);
  gtk_widget_add_css_class (p->slice_note, "heading");
  gtk_widget_set_visible (p->slice_note, FALSE);
  gtk_box_append (GTK_BOX (slice_box), p->slice_note);
  p->slice_grid = gtk_grid_new ();
  gtk_grid_set_column_spacing (GTK_GRID (p->slice_grid), 12);
  gtk_grid_set_row_spacing (GTK_GRID (p->slice_grid), 2);
  gtk_box_append (GTK_BOX (slice_box), p->slice_grid);
  p->slice_nodes = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 4);
  gtk_box_append (GTK_BOX (slice_box), p->slice_nodes);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (slice_sw), slice_box);
  gtk_notebook_append_page (GTK_NOTEBOOK (p->notebook), slice_sw, gtk_label_new ("Slice"));
  p->t_top = add_table_page (p, top_cols, TOP_N, "Top", "No slices in this trace.");
  p->t_layers = add_table_page (p, layer_cols, LAY_N, "Layers", "");
  p->t_ranks = add_table_page (p, rank_cols, RANK_N, "Ranks", "No processes in this trace.");
  p->t_compare = add_table_page (p, compare_cols, CMP_N, "Compare",
                                 "Pick a second trace (\"beside\") to compare per layer.");
  g_signal_connect (p->t_sel, "row-activated", G_CALLBACK (name_row_activated), p);
  g_signal_connect (p->t_top, "row-activated", G_CALLBACK (name_row_activated), p);
  g_signal_connect (p->t_layers, "row-activated", G_CALLBACK (layer_row_activated), p);
  g_signal_connect (p->t_ranks, "row-activated", G_CALLBACK (rank_row_activated), p);
  g_signal_connect (p->t_compare, "row-activated", G_CALLBACK (layer_row_activated), p);
  gtk_paned_set_end_child (GTK_PANED (paned), p->notebook);
  gtk_paned_set_resize_end_child (GTK_PANED (paned), TRUE);
  gtk_paned_set_shrink_end_child (GTK_PANED (paned), FALSE);
  gtk_stack_add_named (GTK_STACK (p->content_stack), paned, "trace");
  gtk_stack_set_visible_child_name (GTK_STACK (p->content_stack), "empty");
  gtk_box_append (GTK_BOX (p->box), p->content_stack);
  show_current (p);
}

static void
twb_profiler_panel_dispose (GObject *o)
{
  TwbProfilerPanel *p = TWB_PROFILER_PANEL (o);
  if (p->cancel)
    g_cancellable_cancel (p->cancel);
  g_clear_handle_id (&p->paned_idle, g_source_remove);
  if (p->timeline)
    {
      g_signal_handlers_disconnect_by_data (p->timeline, p);
      twb_timeline_clear (p->timeline);
      p->timeline = NULL;
    }
  g_clear_pointer (&p->box, gtk_widget_unparent);
  g_clear_object (&p->trace_names);
  g_clear_object (&p->compare_names);
  G_OBJECT_CLASS (twb_profiler_panel_parent_class)->dispose (o);
}

static void
twb_profiler_panel_finalize (GObject *o)
{
  TwbProfilerPanel *p = TWB_PROFILER_PANEL (o);
  g_ptr_array_unref (p->traces);
  g_hash_table_unref (p->shares);
  g_ptr_array_unref (p->layer_nodes);
  g_ptr_array_unref (p->compare_nodes);
  g_array_unref (p->rank_pids);
  g_ptr_array_unref (p->slice_node_ids);
  g_clear_object (&p->cancel);
  G_OBJECT_CLASS (twb_profiler_panel_parent_class)->finalize (o);
}

static void
twb_profiler_panel_class_init (TwbProfilerPanelClass *klass)
{
  GObjectClass *oc = G_OBJECT_CLASS (klass);
  oc->dispose = twb_profiler_panel_dispose;
  oc->finalize = twb_profiler_panel_finalize;
  signals[SIG_NODES_ACTIVATED] = g_signal_new ("nodes-activated", G_TYPE_FROM_CLASS (klass),
                                               G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                               G_TYPE_NONE, 1, G_TYPE_STRV);
  signals[SIG_HEAT_CHANGED] = g_signal_new ("heat-changed", G_TYPE_FROM_CLASS (klass),
                                            G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE, 0);
}

GtkWidget *
twb_profiler_panel_new (void)
{
  return g_object_new (TWB_TYPE_PROFILER_PANEL, NULL);
}
