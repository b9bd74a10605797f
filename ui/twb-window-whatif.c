/* twb-window-whatif.c — the What if tab: the cluster simulator's sweep
 * (twb-whatif-sweep.h) of the document's model over rank counts, a
 * topology, a device, an all-reduce algorithm, a bucket size and a global
 * batch; a scaling curve (throughput against ranks, log x), a stacked bar
 * per configuration (twb-whatif-bars.h), a table, and the `twb simulate`
 * command line that prints the same figures.  Simulate (win.whatif-run)
 * runs the sweep on a worker (GTask) on a copy of the graph. */
#define G_LOG_DOMAIN "twb-whatif"

#include "ui/twb-window-private.h"
#include "ui/twb-plot.h"
#include "ui/twb-whatif-bars.h"
#include "ui/twb-whatif-sweep.h"
#include "app/twb-simulate-trace.h"

#include <math.h>

struct _TwbWindowWhatif
{
  GtkWidget *ranks, *topology, *per_node, *device, *algo, *bucket, *batch;
  GtkWidget *run_button, *spinner;
  GtkWidget *message, *command, *command_title;
  GtkWidget *plot, *bars, *table;
  GListStore *rows;           /* GtkStringObject: the row's index in result->rows */
  TwbMetrics *metrics;
  guint s_throughput, s_ideal;
  TwbWhatifResult *result;
  char *last_trace;           /* the last row opened as a trace (its file) */
  GCancellable *cancel;       /* while a sweep runs */
  gboolean device_has_local;
};

static const char *const topologies[] = { "nvlink+ib", "nvlink+roce", "pcie+eth", "shm+eth", NULL };
static const char *const algos[] = { "ring", "tree", "ps", "hier", NULL };
static const tw_algo algo_values[] = { TW_ALGO_RING, TW_ALGO_TREE, TW_ALGO_PS, TW_ALGO_HIER };
static const char *const devices[] = { "h100", "h200", "a100", "mi300x", "local", NULL };

static const char *
selected_string (GtkWidget *dd)
{
  GObject *item = gtk_drop_down_get_selected_item (GTK_DROP_DOWN (dd));
  return item ? gtk_string_object_get_string (GTK_STRING_OBJECT (item)) : NULL;
}

/* The widgets' configuration; FALSE (error) when the ranks do not parse. */
static gboolean
read_config (TwbWindow *self, TwbWhatifConfig *c, GError **error)
{
  TwbWindowWhatif *w = self->whatif;
  twb_whatif_config_init (c);
  if (!twb_whatif_parse_ranks (gtk_editable_get_text (GTK_EDITABLE (w->ranks)), c, error))
    return FALSE;
  g_strlcpy (c->topology, selected_string (w->topology), sizeof c->topology);
  g_strlcpy (c->device, selected_string (w->device), sizeof c->device);
  c->algo = algo_values[gtk_drop_down_get_selected (GTK_DROP_DOWN (w->algo))];
  c->devices_per_node = gtk_spin_button_get_value_as_int (GTK_SPIN_BUTTON (w->per_node));
  c->bucket_mb = gtk_spin_button_get_value (GTK_SPIN_BUTTON (w->bucket));
  g_autofree char *batch = g_strstrip (g_strdup (gtk_editable_get_text (GTK_EDITABLE (w->batch))));
  gint64 b = 0;
  if (*batch && !g_ascii_string_to_signed (batch, 10, 1, G_GINT64_CONSTANT (1) << 40, &b, NULL))
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                   "Global batch: \"%s\" is not a whole number above 0 (empty: the recipe's "
                   "batch × the ranks)", batch);
      return FALSE;
    }
  c->batch = b;
  return TRUE;
}

static void
show_message (TwbWindow *self, const char *text, gboolean is_error)
{
  TwbWindowWhatif *w = self->whatif;
  gtk_label_set_text (GTK_LABEL (w->message), text ? text : "");
  gtk_widget_set_visible (w->message, text && *text);
  if (is_error)
    gtk_widget_add_css_class (w->message, "error");
  else
    gtk_widget_remove_css_class (w->message, "error");
}

static void
update_command (TwbWindow *self)
{
  TwbWindowWhatif *w = self->whatif;
  const char *path = self->doc ? twb_document_get_path (self->doc) : NULL;
  /* The command reads the file; the page simulates the graph as drawn. */
  gtk_label_set_text (GTK_LABEL (w->command_title),
                      path == NULL ? "Command line (once saved):"
                      : self->doc && twb_document_get_dirty (self->doc)
                        ? "Command line (of the saved file; there are unsaved edits):"
                        : "Command line:");
  TwbWhatifConfig c;
  g_autoptr (GError) error = NULL;
  if (!read_config (self, &c, &error))
    {
      gtk_label_set_text (GTK_LABEL (w->command), error->message);
      return;
    }
  g_autofree char *cmd = twb_whatif_command_line (&c, path);
  gtk_label_set_text (GTK_LABEL (w->command), cmd);
  /* A local profile brings its own topology. */
  gtk_widget_set_sensitive (w->topology, g_strcmp0 (c.device, "local") != 0);
}

static void
config_changed (TwbWindow *self)
{
  /* Widgets may still notify while the window goes (after dispose). */
  if (self->whatif)
    update_command (self);
}

/* ---- Results ------------------------------------------------------------------------ */

static void
show_result (TwbWindow *self)
{
  TwbWindowWhatif *w = self->whatif;
  TwbWhatifResult *r = w->result;
  g_list_store_remove_all (w->rows);
  twb_metrics_clear_run (w->metrics, "whatif");
  guint n = r ? r->rows->len : 0;
  g_autofree TwbWhatifBar *bars = g_new0 (TwbWhatifBar, MAX (n, 1));
  g_autofree guint *order = g_new (guint, MAX (n, 1));
  for (guint i = 0; i < n; i++)
    {
      const TwbWhatifRow *row = &g_array_index (r->rows, TwbWhatifRow, i);
      char idx[16];
      g_snprintf (idx, sizeof idx, "%u", i);
      g_autoptr (GtkStringObject) item = gtk_string_object_new (idx);
      g_list_store_append (w->rows, item);
      g_snprintf (bars[i].label, sizeof bars[i].label, "%d", row->ranks);
      bars[i].compute_ms = row->r.compute_s * 1e3;
      bars[i].exposed_ms = row->r.exposed_s * 1e3;
      bars[i].rest_ms = (row->r.step_s - row->r.compute_s - row->r.exposed_s) * 1e3;
      order[i] = i;
    }
  twb_whatif_bars_set (TWB_WHATIF_BARS (w->bars), bars, n, "ranks");
  /* The curve by increasing ranks (the plot's x never goes back); ideal:
   * the fewest ranks' throughput per rank times the ranks. */
  for (guint i = 1; i < n; i++)
    for (guint j = i; j > 0; j--)
      {
        int a = g_array_index (r->rows, TwbWhatifRow, order[j - 1]).ranks;
        int b = g_array_index (r->rows, TwbWhatifRow, order[j]).ranks;
        if (a <= b)
          break;
        guint t = order[j];
        order[j] = order[j - 1];
        order[j - 1] = t;
      }
  for (guint i = 0; i < n; i++)
    {
      const TwbWhatifRow *row = &g_array_index (r->rows, TwbWhatifRow, order[i]);
      const TwbWhatifRow *first = &g_array_index (r->rows, TwbWhatifRow, order[0]);
      double x = log2 (row->ranks);
      twb_metrics_append (w->metrics, w->s_throughput, x, row->r.samples_per_s);
      twb_metrics_append (w->metrics, w->s_ideal, x,
                          first->r.samples_per_s / first->ranks * row->ranks);
    }
  /* Beyond the ends (half a power of two on the left, one on the right):
   * their ticks' labels clear the axis's "log" and "ranks". */
  if (n > 0)
    twb_plot_set_x_range (TWB_PLOT (w->plot),
                          log2 (g_array_index (r->rows, TwbWhatifRow, order[0]).ranks) - 0.5,
                          log2 (g_array_index (r->rows, TwbWhatifRow, order[n - 1]).ranks) + 1);
  else
    twb_plot_reset_zoom (TWB_PLOT (w->plot));
  if (r && r->error)
    show_message (self, r->error, TRUE);
  else if (r && r->note)
    show_message (self, r->note, FALSE);
  else if (r)
    {
      g_autofree char *text = g_strdup_printf ("%u configurations on %s: done.", n,
                                               r->device_name ? r->device_name : "");
      show_message (self, text, FALSE);
    }
  else
    show_message (self, NULL, FALSE);
}

/* What the worker takes: its own copy of the graph. */
typedef struct
{
  tw_graph *g;
  char *name;
  int64_t batch;
  TwbWhatifConfig c;
} SweepJob;

static void
sweep_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancel)
{
  SweepJob *job = data;
  g_task_return_pointer (task, twb_whatif_run (job->g, job->name, job->batch, &job->c),
                         (GDestroyNotify) twb_whatif_result_free);
}

static void
sweep_job_free (SweepJob *job)
{
  tw_graph_free (job->g);
  g_free (job->name);
  g_free (job);
}

static void
set_running (TwbWindow *self, gboolean running)
{
  TwbWindowWhatif *w = self->whatif;
  gtk_widget_set_sensitive (w->run_button, !running);
  gtk_widget_set_visible (w->spinner, running);
  gtk_spinner_set_spinning (GTK_SPINNER (w->spinner), running);
  GAction *a = g_action_map_lookup_action (G_ACTION_MAP (self), "whatif-run");
  g_simple_action_set_enabled (G_SIMPLE_ACTION (a), !running);
}

static void
sweep_done (GObject *source, GAsyncResult *res, gpointer data)
{
  g_autoptr (GError) error = NULL;
  TwbWhatifResult *r = g_task_propagate_pointer (G_TASK (res), &error);
  if (r == NULL)
    return;                   /* cancelled: the window has gone */
  TwbWindow *self = data;
  TwbWindowWhatif *w = self->whatif;
  g_clear_object (&w->cancel);
  g_clear_pointer (&w->result, twb_whatif_result_free);
  g_clear_pointer (&w->last_trace, g_free);
  w->result = r;
  set_running (self, FALSE);
  show_result (self);
}

static void
whatif_run (TwbWindow *self)
{
  TwbWindowWhatif *w = self->whatif;
  if (w->cancel)
    return;
  TwbWhatifConfig c;
  g_autoptr (GError) error = NULL;
  if (!read_config (self, &c, &error))
    {
      show_message (self, error->message, TRUE);
      return;
    }
  tw_model *m = self->doc ? twb_document_get_model (self->doc) : NULL;
  if (m == NULL || m->graph == NULL || tw_graph_n_nodes (m->graph) == 0)
    {
      show_message (self, "No model to simulate: open one or draw a graph in the editor.", TRUE);
      return;
    }
  update_command (self);
  SweepJob *job = g_new0 (SweepJob, 1);
  job->g = tw_graph_copy (m->graph);
  job->name = g_strdup (m->name ? m->name : "");
  job->batch = m->recipe.batch_size;
  job->c = c;
  w->cancel = g_cancellable_new ();
  set_running (self, TRUE);
  show_message (self, "Simulating…", FALSE);
  GTask *task = g_task_new (NULL, w->cancel, sweep_done, self);
  g_task_set_task_data (task, job, (GDestroyNotify) sweep_job_free);
  g_task_run_in_thread (task, sweep_thread);
  g_object_unref (task);
}

static void
act_whatif_run (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  twb_window_show_panel (self, "whatif");
  whatif_run (self);
}

static void
act_whatif_ranks (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  gtk_editable_set_text (GTK_EDITABLE (self->whatif->ranks), g_variant_get_string (p, NULL));
}

/* Row i of the last sweep as a trace of its simulated step, opened on the
 * Profiler tab (twb simulate --trace for that configuration). */
static void
open_row_trace (TwbWindow *self, guint i)
{
  TwbWindowWhatif *w = self->whatif;
  TwbWhatifResult *res = w->result;
  if (res == NULL || i >= res->rows->len)
    {
      twb_window_show_toast (self, "No such row: run the sweep first (Simulate)");
      return;
    }
  const tw_model *m = twb_document_get_model (self->doc);
  g_autoptr (GArray) spans = g_array_new (FALSE, FALSE, sizeof (tw_sim_span));
  g_autoptr (TwbWhatifResult) one = twb_whatif_run_row (m->graph, m->name, m->recipe.batch_size,
                                                         &res->config, (int) i, spans);
  if (one->error || one->rows->len <= i)
    {
      twb_window_show_toast (self, one->error ? one->error : "The configuration did not run");
      return;
    }
  int ranks = g_array_index (one->rows, TwbWhatifRow, i).ranks;
  g_autofree char *dir = g_build_filename (g_get_user_cache_dir (), "twb", "whatif", NULL);
  g_mkdir_with_parents (dir, 0700);
  g_autofree char *name = g_strdup_printf ("%s-%d-ranks-%s-%s.json", m->name ? m->name : "model",
                                           ranks, res->config.topology,
                                           tw_algo_name (res->config.algo));
  g_autofree char *path = g_build_filename (dir, name, NULL);
  const char *meta[] = { "model", m->name ? m->name : "", "device", one->device_name ? one->device_name : "",
                         "topology", res->config.topology, "algo", tw_algo_name (res->config.algo),
                         NULL };
  g_autoptr (GError) error = NULL;
  if (!twb_simulate_trace_save (path, spans, ranks, FALSE, meta, &error))
    {
      twb_window_show_toast (self, error->message);
      return;
    }
  g_free (w->last_trace);
  w->last_trace = g_strdup (path);
  twb_window_open_trace (self, path);
}

static void
act_whatif_open_trace (GSimpleAction *a, GVariant *p, gpointer data)
{
  open_row_trace (data, g_variant_get_uint32 (p));
}

static void
table_activate (GtkColumnView *v, guint position, TwbWindow *self)
{
  open_row_trace (self, position);
}

static const GActionEntry whatif_entries[] = {
  { "whatif-run", act_whatif_run },
  { "whatif-ranks", act_whatif_ranks, "s" },
  { "whatif-open-trace", act_whatif_open_trace, "u" },
};

/* ---- The table ---------------------------------------------------------------------- */

enum
{
  COL_RANKS,
  COL_STEP,
  COL_SAMPLES,
  COL_EFFICIENCY,
  COL_COMM_SHARE,
  COL_EXPOSED,
  COL_MEMORY,
  COL_LINK,
  N_COLS
};

static const char *const col_titles[N_COLS] = {
  "Ranks", "Step ms", "Samples/s", "Efficiency", "Comm. share", "Exposed ms",
  "Memory/device", "Busiest link (bytes a step)",
};

char *
twb_window_whatif_cell_text (TwbWindow *self, guint row, int col)
{
  TwbWhatifResult *r = self->whatif ? self->whatif->result : NULL;
  if (r == NULL || row >= r->rows->len)
    return NULL;
  const TwbWhatifRow *w = &g_array_index (r->rows, TwbWhatifRow, row);
  switch (col)
    {
    case COL_RANKS:
      return g_strdup_printf ("%d", w->ranks);
    case COL_STEP:
      return g_strdup_printf ("%.3f", w->r.step_s * 1e3);
    case COL_SAMPLES:
      return g_strdup_printf ("%.0f", w->r.samples_per_s);
    case COL_EFFICIENCY:
      /* Two significant digits below 0.1: 0.0023, not 0.00. */
      return g_strdup_printf (w->efficiency >= 0.1 ? "%.2f" : "%.2g", w->efficiency);
    case COL_COMM_SHARE:
      return g_strdup_printf ("%.0f %%", 100 * w->comm_share);
    case COL_EXPOSED:
      return g_strdup_printf ("%.3f", w->r.exposed_s * 1e3);
    case COL_MEMORY:
      return g_format_size ((guint64) w->memory);
    case COL_LINK:
      {
        if (w->link == NULL)
          return g_strdup ("none");
        g_autofree char *b = g_format_size ((guint64) w->r.busiest_link_bytes);
        return g_strdup_printf ("%s (%s)", w->link, b);
      }
    }
  return NULL;
}

static void
cell_setup (GtkSignalListItemFactory *f, GtkListItem *li, gpointer data)
{
  GtkWidget *l = gtk_label_new (NULL);
  int col = GPOINTER_TO_INT (data);
  gtk_label_set_xalign (GTK_LABEL (l), col == COL_LINK ? 0 : 1);
  gtk_widget_add_css_class (l, "numeric");
  gtk_list_item_set_child (li, l);
}

static void
cell_bind (GtkSignalListItemFactory *f, GtkListItem *li, gpointer data)
{
  TwbWindow *self = g_object_get_data (G_OBJECT (f), "twb-window");
  GtkStringObject *item = gtk_list_item_get_item (li);
  guint row = (guint) g_ascii_strtoull (gtk_string_object_get_string (item), NULL, 10);
  g_autofree char *text = twb_window_whatif_cell_text (self, row, GPOINTER_TO_INT (data));
  gtk_label_set_text (GTK_LABEL (gtk_list_item_get_child (li)), text ? text : "");
}

static GtkWidget *
build_table (TwbWindow *self)
{
  TwbWindowWhatif *w = self->whatif;
  w->rows = g_list_store_new (GTK_TYPE_STRING_OBJECT);
  GtkNoSelection *sel = gtk_no_selection_new (G_LIST_MODEL (g_object_ref (w->rows)));
  w->table = gtk_column_view_new (GTK_SELECTION_MODEL (sel));
  /* A row activated (double click, Enter): its step as a trace. */
  g_signal_connect (w->table, "activate", G_CALLBACK (table_activate), self);
  gtk_widget_set_tooltip_text (w->table, "Double-click a row to open its simulated step as a "
                                         "trace in the Profiler");
  gtk_column_view_set_show_column_separators (GTK_COLUMN_VIEW (w->table), TRUE);
  gtk_widget_add_css_class (w->table, "data-table");
  for (int c = 0; c < N_COLS; c++)
    {
      GtkListItemFactory *f = gtk_signal_list_item_factory_new ();
      g_object_set_data (G_OBJECT (f), "twb-window", self);
      g_signal_connect (f, "setup", G_CALLBACK (cell_setup), GINT_TO_POINTER (c));
      g_signal_connect (f, "bind", G_CALLBACK (cell_bind), GINT_TO_POINTER (c));
      GtkColumnViewColumn *col = gtk_column_view_column_new (col_titles[c], f);
      gtk_column_view_column_set_resizable (col, TRUE);
      if (c == COL_LINK)
        gtk_column_view_column_set_expand (col, TRUE);
      gtk_column_view_append_column (GTK_COLUMN_VIEW (w->table), col);
      g_object_unref (col);
    }
  gtk_accessible_update_property (GTK_ACCESSIBLE (w->table), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  "Simulated configurations", -1);
  return w->table;
}

/* ---- Setup -------------------------------------------------------------------------- */

static GtkWidget *
labelled (GtkWidget *grid, int col, const char *text, GtkWidget *child)
{
  GtkWidget *l = gtk_label_new_with_mnemonic (text);
  gtk_label_set_xalign (GTK_LABEL (l), 0);
  gtk_label_set_mnemonic_widget (GTK_LABEL (l), child);
  gtk_widget_add_css_class (l, "dim-label");
  gtk_grid_attach (GTK_GRID (grid), l, col, 0, 1, 1);
  gtk_grid_attach (GTK_GRID (grid), child, col, 1, 1, 1);
  return child;
}

static GtkWidget *
drop_down (const char *const *items, const char *tooltip)
{
  GtkWidget *dd = gtk_drop_down_new_from_strings (items);
  gtk_widget_set_tooltip_text (dd, tooltip);
  return dd;
}

static GtkWidget *
spin (double lo, double hi, double step, double value, int digits, const char *tooltip)
{
  GtkWidget *s = gtk_spin_button_new_with_range (lo, hi, step);
  gtk_spin_button_set_digits (GTK_SPIN_BUTTON (s), digits);
  gtk_spin_button_set_value (GTK_SPIN_BUTTON (s), value);
  gtk_widget_set_tooltip_text (s, tooltip);
  return s;
}

static void
changed_cb (GObject *o, GParamSpec *p, TwbWindow *self)
{
  config_changed (self);
}

static void
ranks_activate (GtkEntry *e, TwbWindow *self)
{
  if (self->whatif)
    whatif_run (self);
}

static void
run_clicked (GtkButton *b, TwbWindow *self)
{
  whatif_run (self);
}

void
twb_window_whatif_init (TwbWindow *self)
{
  TwbWindowWhatif *w = self->whatif = g_new0 (TwbWindowWhatif, 1);
  g_action_map_add_action_entries (G_ACTION_MAP (self), whatif_entries,
                                   G_N_ELEMENTS (whatif_entries), self);

  GtkWidget *page = gtk_box_new (GTK_ORIENTATION_VERTICAL, 6);
  gtk_widget_set_margin_start (page, 12);
  gtk_widget_set_margin_end (page, 12);
  gtk_widget_set_margin_bottom (page, 8);

  GtkWidget *grid = gtk_grid_new ();
  gtk_grid_set_column_spacing (GTK_GRID (grid), 12);
  gtk_grid_set_row_spacing (GTK_GRID (grid), 2);
  w->ranks = gtk_entry_new ();
  gtk_editable_set_text (GTK_EDITABLE (w->ranks), "8, 64, 512, 1024");
  gtk_editable_set_width_chars (GTK_EDITABLE (w->ranks), 16);
  gtk_widget_set_tooltip_text (w->ranks, "Rank counts to simulate, e.g. 8, 64, 512, 1024 "
                                         "(Enter simulates)");
  labelled (grid, 0, "_Ranks", w->ranks);
  w->topology = labelled (grid, 1, "_Topology",
                          drop_down (topologies, "NVLink in a node and InfiniBand between "
                                                 "nodes, or RoCE; PCIe and Ethernet; CPU "
                                                 "processes (shared memory and Ethernet)"));
  w->per_node = labelled (grid, 2, "Devices per _node",
                          spin (1, 64, 1, 8, 0, "Devices in each node (8: fewer ranks make "
                                                "one node of them)"));
  w->device_has_local = twb_whatif_local_available ();
  const char *const *dev_items = devices;
  const char *no_local[] = { devices[0], devices[1], devices[2], devices[3], NULL };
  if (!w->device_has_local)
    dev_items = no_local;
  w->device = labelled (grid, 3, "_Device",
                        drop_down (dev_items, w->device_has_local
                                                ? "Datasheet profiles, or local: this machine "
                                                  "as twb simulate --calibrate measured it"
                                                : "Datasheet profiles (twb simulate MODEL "
                                                  "--calibrate adds local: this machine)"));
  w->algo = labelled (grid, 4, "_All-reduce",
                      drop_down (algos, "Ring, binary tree, parameter server, or "
                                        "hierarchical (tree–ring–tree)"));
  w->bucket = labelled (grid, 5, "_Bucket MB",
                        spin (0.01, 65536, 1, 25, 2, "Gradient bucket size in MB (25: PyTorch's "
                                                      "and the engine's default)"));
  w->batch = gtk_entry_new ();
  gtk_entry_set_placeholder_text (GTK_ENTRY (w->batch), "recipe × ranks");
  gtk_editable_set_width_chars (GTK_EDITABLE (w->batch), 14);
  gtk_widget_set_tooltip_text (w->batch, "The global batch, split among the ranks (empty: the "
                                         "recipe's batch × the ranks)");
  labelled (grid, 6, "_Global batch", w->batch);
  w->run_button = gtk_button_new_with_mnemonic ("Si_mulate");
  gtk_widget_add_css_class (w->run_button, "suggested-action");
  gtk_widget_set_valign (w->run_button, GTK_ALIGN_END);
  gtk_widget_set_tooltip_text (w->run_button, "Simulate every configuration");
  gtk_grid_attach (GTK_GRID (grid), w->run_button, 7, 1, 1, 1);
  w->spinner = gtk_spinner_new ();
  gtk_widget_set_visible (w->spinner, FALSE);
  gtk_grid_attach (GTK_GRID (grid), w->spinner, 8, 1, 1, 1);
  GtkWidget *gsw = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (gsw), GTK_POLICY_AUTOMATIC,
                                  GTK_POLICY_NEVER);
  gtk_scrolled_window_set_propagate_natural_height (GTK_SCROLLED_WINDOW (gsw), TRUE);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (gsw), grid);
  gtk_box_append (GTK_BOX (page), gsw);

  /* The title above the command: the command has the page's width and
   * wraps only when longer (Pango breaks after a "--"). */
  GtkWidget *cmd_box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
  GtkWidget *cmd_title = w->command_title = gtk_label_new ("Command line:");
  gtk_label_set_xalign (GTK_LABEL (cmd_title), 0);
  gtk_widget_add_css_class (cmd_title, "dim-label");
  gtk_box_append (GTK_BOX (cmd_box), cmd_title);
  w->command = gtk_label_new (NULL);
  gtk_label_set_selectable (GTK_LABEL (w->command), TRUE);
  gtk_label_set_wrap (GTK_LABEL (w->command), TRUE);
  gtk_label_set_wrap_mode (GTK_LABEL (w->command), PANGO_WRAP_WORD_CHAR);
  gtk_label_set_xalign (GTK_LABEL (w->command), 0);
  gtk_widget_set_hexpand (w->command, TRUE);
  gtk_widget_add_css_class (w->command, "monospace");
  gtk_accessible_update_property (GTK_ACCESSIBLE (w->command), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  "The equivalent command line", -1);
  gtk_box_append (GTK_BOX (cmd_box), w->command);
  gtk_box_append (GTK_BOX (page), cmd_box);

  w->message = gtk_label_new (NULL);
  gtk_label_set_wrap (GTK_LABEL (w->message), TRUE);
  gtk_label_set_xalign (GTK_LABEL (w->message), 0);
  gtk_label_set_selectable (GTK_LABEL (w->message), TRUE);
  gtk_widget_set_visible (w->message, FALSE);
  gtk_box_append (GTK_BOX (page), w->message);

  /* The charts side by side, the table under them at full width. */
  GtkWidget *charts = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 12);
  gtk_box_set_homogeneous (GTK_BOX (charts), TRUE);
  w->metrics = twb_metrics_new ();
  w->s_throughput = twb_metrics_add_series (w->metrics, "whatif", "samples/s");
  w->s_ideal = twb_metrics_add_series (w->metrics, "whatif", "ideal (linear)");
  w->plot = twb_plot_new (w->metrics, "Throughput");
  g_object_set (w->plot, "x-label", "ranks", "wheel-needs-ctrl", TRUE, NULL);
  twb_plot_set_x_log2 (TWB_PLOT (w->plot), TRUE);
  twb_plot_set_log_y (TWB_PLOT (w->plot), TRUE);
  twb_plot_add_curve (TWB_PLOT (w->plot), w->s_throughput, twb_plot_palette_colour (0), FALSE);
  twb_plot_add_curve_styled (TWB_PLOT (w->plot), w->s_ideal, twb_plot_palette_colour (1),
                             TWB_PLOT_DASHED);
  gtk_widget_set_size_request (w->plot, 300, 220);
  gtk_widget_set_hexpand (w->plot, TRUE);
  gtk_box_append (GTK_BOX (charts), w->plot);
  w->bars = twb_whatif_bars_new ();
  gtk_widget_set_size_request (w->bars, 260, 220);
  gtk_widget_set_hexpand (w->bars, TRUE);
  gtk_box_append (GTK_BOX (charts), w->bars);
  gtk_box_append (GTK_BOX (page), charts);
  GtkWidget *tsw = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (tsw), GTK_POLICY_AUTOMATIC,
                                  GTK_POLICY_NEVER);
  gtk_scrolled_window_set_propagate_natural_height (GTK_SCROLLED_WINDOW (tsw), TRUE);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (tsw), build_table (self));
  gtk_box_append (GTK_BOX (page), tsw);

  GtkWidget *sw = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (sw), GTK_POLICY_NEVER,
                                  GTK_POLICY_AUTOMATIC);
  gtk_widget_set_vexpand (sw, TRUE);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (sw), page);
  gtk_box_append (GTK_BOX (self->whatif_page), sw);

  g_signal_connect (w->batch, "notify::text", G_CALLBACK (changed_cb), self);
  g_signal_connect (w->batch, "activate", G_CALLBACK (ranks_activate), self);
  g_signal_connect (w->ranks, "notify::text", G_CALLBACK (changed_cb), self);
  g_signal_connect (w->ranks, "activate", G_CALLBACK (ranks_activate), self);
  g_signal_connect (w->run_button, "clicked", G_CALLBACK (run_clicked), self);
  GtkWidget *watched[] = { w->topology, w->device, w->algo };
  for (guint i = 0; i < G_N_ELEMENTS (watched); i++)
    g_signal_connect (watched[i], "notify::selected", G_CALLBACK (changed_cb), self);
  GtkWidget *spins[] = { w->per_node, w->bucket };
  for (guint i = 0; i < G_N_ELEMENTS (spins); i++)
    g_signal_connect (spins[i], "notify::value", G_CALLBACK (changed_cb), self);
  update_command (self);
}

void
twb_window_whatif_doc_changed (TwbWindow *self)
{
  if (self->whatif)
    update_command (self);
}

gboolean
twb_window_whatif_busy (TwbWindow *self)
{
  return self->whatif && self->whatif->cancel != NULL;
}

const TwbWhatifResult *
twb_window_whatif_result (TwbWindow *self)
{
  return self->whatif ? self->whatif->result : NULL;
}

GtkWidget *
twb_window_whatif_widget (TwbWindow *self, const char *name)
{
  TwbWindowWhatif *w = self->whatif;
  if (w == NULL)
    return NULL;
  const struct { const char *name; GtkWidget *w; } all[] = {
    { "ranks", w->ranks }, { "topology", w->topology }, { "devices-per-node", w->per_node },
    { "device", w->device }, { "algo", w->algo }, { "bucket-mb", w->bucket },
    { "batch", w->batch }, { "simulate", w->run_button }, { "message", w->message },
    { "command", w->command }, { "plot", w->plot }, { "bars", w->bars }, { "table", w->table },
  };
  for (guint i = 0; i < G_N_ELEMENTS (all); i++)
    if (g_strcmp0 (all[i].name, name) == 0)
      return all[i].w;
  return NULL;
}

void
twb_window_whatif_dispose (TwbWindow *self)
{
  TwbWindowWhatif *w = self->whatif;
  if (w == NULL)
    return;
  /* A sweep still running finishes on its worker; its result is dropped
   * (sweep_done sees the cancellation and touches nothing). */
  if (w->cancel)
    g_cancellable_cancel (w->cancel);
  g_clear_object (&w->cancel);
  g_clear_pointer (&w->result, twb_whatif_result_free);
  g_clear_pointer (&w->last_trace, g_free);
  g_clear_object (&w->rows);
  g_clear_object (&w->metrics);
  g_clear_pointer (&self->whatif, g_free);
}

const char *
twb_window_whatif_last_trace (TwbWindow *self)
{
  return self->whatif ? self->whatif->last_trace : NULL;
}
