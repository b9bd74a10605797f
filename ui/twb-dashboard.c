/* twb-dashboard.c — the Training tab. */
#define G_LOG_DOMAIN "twb-dashboard"

#include "ui/twb-dashboard.h"
#include "graph_editor/twb-picture.h"
#include "ui/twb-confusion.h"
#include "ui/twb-run-store.h"
#include "engine/fileutil.h"
#include "engine/rate.h"

#include <math.h>
#include <string.h>

/* One chart per concept; the series each shows (per run), dashed ones per epoch. */
/* Each run has one colour on every chart and in the Runs list
 * (twb_dashboard_run_colour); a chart's series of one run differ by line
 * style: per step solid, the epoch's training loss dashed, validation
 * dotted, test dash-dot; gradient norms by shades of the run's colour. */
typedef struct
{
  const char *name, *title;
  const char *series[4];
  TwbPlotDash dash[4];
  const char *prefix;        /* every series whose name starts so (grad norms) */
  gboolean log_default;
} ChartSpec;

static const ChartSpec charts[] = {
  { "loss", "Loss", { "loss", "train_loss", "val_loss", "test_loss" },
    { TWB_PLOT_SOLID, TWB_PLOT_DASHED, TWB_PLOT_DOTTED, TWB_PLOT_DASH_DOT }, NULL, FALSE },
  { "accuracy", "Accuracy", { "accuracy", "val_accuracy", "test_accuracy" },
    { TWB_PLOT_SOLID, TWB_PLOT_DOTTED, TWB_PLOT_DASH_DOT }, NULL, FALSE },
  { "lr", "Learning rate", { "lr" }, { TWB_PLOT_SOLID }, NULL, FALSE },
  { "throughput", "Samples/s", { "samples_per_s" }, { TWB_PLOT_SOLID }, NULL, FALSE },
  { "step-time", "Step time (ms)", { "step_ms" }, { TWB_PLOT_SOLID }, "step_ms:", FALSE },
  { "grad-norm", "Gradient norm per layer", { NULL }, { TWB_PLOT_SOLID }, "grad_norm:", TRUE },
};

/* A cluster run's step time per rank ("step_ms:rank N") on the step-time
 * chart: dotted, in shades of the run's colour, and the straggler
 * (twb_run_get_straggler) solid in this red, whatever the run's colour. */
static const GdkRGBA straggler_colour = { 0.88, 0.11, 0.14, 1 };

/* Gradient norms of one run: shade k of the run's colour mixes it with
 * white (odd k) or black (even k) by 12 % more every second step, at most
 * 60 %, so neighbouring layers differ and all read as the run's hue. */
#define SHADE_STEP 0.12
#define SHADE_MAX 0.60
#define N_CHARTS G_N_ELEMENTS (charts)

/* Live charts redraw at most 4 times a second, all in the same frame
 * (twb_plot_set_redraw_interval aligns them): enough to watch a run.  A
 * frame of five charts every 30 ms drain cost the worker up to 40 % of its
 * throughput on two cores; at 150 ms on timers of their own the window
 * thread still spent 18–24 % of a core on a 121-layer MLP at 12 steps a
 * second, against 2–3 % at 250 ms (bench/gui-train-bench, "window
 * thread"). */
#define CHART_REDRAW_MS 250

/* Exported pictures: each chart at this size, two to a row. */
#define EXPORT_W 560
#define EXPORT_H 300

struct _TwbDashboard
{
  GtkWidget parent_instance;

  TwbMetrics *metrics;
  TwbRun *run;
  char *runs_dir;
  GtkWidget *box;
  GtkWidget *progress_bar, *progress_label;
  GtkWidget *runs_list;
  GtkWidget *smoothing, *log_check;
  GtkWidget *grid;
  GtkWidget *plots[N_CHARTS];
  GtkWidget *classes_box, *confusion, *all_classes;
  GHashTable *curves;        /* series id + 1 → TRUE: already on a chart */
  GHashTable *shown;         /* run ids overlaid (the current run's always is) */
  int straggler;             /* the current run's, as its curves are drawn (-1: none) */
  char *progress_text;
  guint n_runs_listed;
};

G_DEFINE_FINAL_TYPE (TwbDashboard, twb_dashboard, GTK_TYPE_WIDGET)

static int
chart_index (const char *name)
{
  for (guint c = 0; c < N_CHARTS; c++)
    if (strcmp (charts[c].name, name) == 0)
      return (int) c;
  g_return_val_if_reached (0);
}

static int
chart_for_series (const char *name, TwbPlotDash *dash)
{
  for (guint c = 0; c < N_CHARTS; c++)
    {
      if (charts[c].prefix && g_str_has_prefix (name, charts[c].prefix))
        {
          *dash = g_str_has_prefix (name, "step_ms:rank ") ? TWB_PLOT_DOTTED : TWB_PLOT_SOLID;
          return (int) c;
        }
      for (int k = 0; k < 4 && charts[c].series[k]; k++)
        if (strcmp (charts[c].series[k], name) == 0)
          {
            *dash = charts[c].dash[k];
            return (int) c;
          }
    }
  return -1;
}

void
twb_dashboard_run_colour (const char *run_id, GdkRGBA *out)
{
  /* "run-N": colour N - 1, so a run keeps its colour across sessions and
   * neighbours differ; any other id by its hash. */
  guint i = g_str_hash (run_id ? run_id : "");
  if (run_id && g_str_has_prefix (run_id, "run-"))
    {
      guint64 n;
      if (g_ascii_string_to_unsigned (run_id + 4, 10, 1, G_MAXUINT, &n, NULL))
        i = (guint) (n - 1);
    }
  *out = *twb_plot_palette_colour (i);
}

static void
shade (GdkRGBA *c, guint k)
{
  double f = MIN (SHADE_STEP * ((k + 1) / 2), SHADE_MAX);
  double to = k % 2 ? 1.0 : 0.0;
  c->red = c->red * (1 - f) + to * f;
  c->green = c->green * (1 - f) + to * f;
  c->blue = c->blue * (1 - f) + to * f;
}

/* Which of its run's series with this prefix s is (0, 1, …, in order added). */
static guint
rank_in_run (TwbDashboard *d, guint s, const char *run, const char *prefix)
{
  guint k = 0;
  for (guint t = 0; t < s; t++)
    if (g_strcmp0 (twb_metrics_series_run (d->metrics, t), run) == 0
        && g_str_has_prefix (twb_metrics_series_name (d->metrics, t), prefix))
      k++;
  return k;
}

/* Put every series of the shown runs on its chart (once). */
static void
add_new_curves (TwbDashboard *d)
{
  guint n = twb_metrics_n_series (d->metrics);
  for (guint s = 0; s < n; s++)
    {
      if (g_hash_table_contains (d->curves, GUINT_TO_POINTER (s + 1)))
        continue;
      const char *run = twb_metrics_series_run (d->metrics, s);
      if (run == NULL)
        continue;   /* a removed run's id */
      gboolean current = d->run && g_strcmp0 (run, twb_run_get_id (d->run)) == 0;
      if (!current && !g_hash_table_contains (d->shown, run))
        continue;
      TwbPlotDash dash = TWB_PLOT_SOLID;
      int c = chart_for_series (twb_metrics_series_name (d->metrics, s), &dash);
      if (c < 0)
        continue;
      GdkRGBA colour;
      twb_dashboard_run_colour (run, &colour);
      const char *name = twb_metrics_series_name (d->metrics, s);
      guint64 rank = 0;
      if (charts[c].prefix && g_str_has_prefix (name, charts[c].prefix))
        shade (&colour, rank_in_run (d, s, run, charts[c].prefix));
      if (current && g_str_has_prefix (name, "step_ms:rank ")
          && g_ascii_string_to_unsigned (name + 13, 10, 0, G_MAXINT, &rank, NULL)
          && (int) rank == d->straggler)
        {
          colour = straggler_colour;
          dash = TWB_PLOT_SOLID;
        }
      twb_plot_add_curve_styled (TWB_PLOT (d->plots[c]), s, &colour, dash);
      g_hash_table_add (d->curves, GUINT_TO_POINTER (s + 1));
    }
}

static void
remove_run_curves (TwbDashboard *d, const char *run)
{
  guint n = twb_metrics_n_series (d->metrics);
  for (guint s = 0; s < n; s++)
    if (g_strcmp0 (twb_metrics_series_run (d->metrics, s), run) == 0
        && g_hash_table_remove (d->curves, GUINT_TO_POINTER (s + 1)))
      for (guint c = 0; c < N_CHARTS; c++)
        twb_plot_remove_curve (TWB_PLOT (d->plots[c]), s);
}

static void
update_progress (TwbDashboard *d)
{
  g_clear_pointer (&d->progress_text, g_free);
  if (d->run == NULL)
    {
      gtk_progress_bar_set_fraction (GTK_PROGRESS_BAR (d->progress_bar), 0);
      gtk_label_set_text (GTK_LABEL (d->progress_label),
                          "Not trained yet: Run (F5) trains with the model's recipe; "
                          "F10 / F11 step through it.");
      return;
    }
  TwbRunProgress p;
  twb_run_get_progress (d->run, &p);
  double frac = CLAMP (p.total_steps > 0 ? (double) p.step / p.total_steps : 0, 0, 1);
  /* GtkProgressBar relayouts on every set, even to the same value. */
  if (frac != gtk_progress_bar_get_fraction (GTK_PROGRESS_BAR (d->progress_bar)))
    gtk_progress_bar_set_fraction (GTK_PROGRESS_BAR (d->progress_bar), frac);
  tw_session_state st = twb_run_get_state (d->run);
  char eta[32];
  tw_rate_format_eta (p.eta_s, eta, sizeof eta);
  GString *t = g_string_new (NULL);
  const char *id = twb_run_get_id (d->run);
  switch (st)
    {
    case TW_SESSION_IDLE:
      g_string_append_printf (t, "%s · ready", id);
      break;
    case TW_SESSION_RUNNING:
    case TW_SESSION_PAUSED:
      if (twb_run_get_preparing (d->run))
        {
          /* Before its first step: the data, the parameters, the weights. */
          g_string_append_printf (t, "%s · %s", id, twb_run_get_preparing (d->run));
          break;
        }
      g_string_append_printf (t, "%s · %s · epoch %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT
                                 " · step %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT,
                              id, st == TW_SESSION_PAUSED ? "paused" : "training",
                              MIN (p.epoch + 1, p.epochs), p.epochs, p.step, p.total_steps);
      if (st == TW_SESSION_RUNNING && p.samples_per_s > 0)
        g_string_append_printf (t, " · %.0f samples/s · ETA %s", p.samples_per_s, eta);
      break;
    default:
      {
        const tw_snapshot *res = twb_run_get_result (d->run);
        g_string_append_printf (t, "%s · %s after %" G_GINT64_FORMAT " steps", id,
                                tw_session_state_name (st), p.step);
        if (res && !isnan (res->test_accuracy))
          g_string_append_printf (t, " · test accuracy %.2f %%", res->test_accuracy * 100);
        else if (res && !isnan (res->test_loss))
          g_string_append_printf (t, " · test loss %.4g", res->test_loss);
        if (twb_run_get_error (d->run))
          g_string_append_printf (t, " · %s", twb_run_get_error (d->run));
        break;
      }
    }
  if (!isnan (p.loss) && (st == TW_SESSION_RUNNING || st == TW_SESSION_PAUSED))
    g_string_append_printf (t, " · loss %.4g", p.loss);
  double ratio;
  int slow = twb_run_get_straggler (d->run, &ratio);
  if (slow >= 0)
    g_string_append_printf (t, " · rank %d slowest (%.1f× the others)", slow, ratio);
  d->progress_text = g_string_free (t, FALSE);
  gtk_label_set_text (GTK_LABEL (d->progress_label), d->progress_text);
}

/* The current run's straggler changed: its rank curves are drawn anew. */
static void
update_straggler (TwbDashboard *d)
{
  int now = d->run ? twb_run_get_straggler (d->run, NULL) : -1;
  if (now == d->straggler)
    return;
  d->straggler = now;
  const char *run = twb_run_get_id (d->run);
  TwbPlot *p = TWB_PLOT (d->plots[chart_index ("step-time")]);
  guint n = twb_metrics_n_series (d->metrics);
  for (guint s = 0; s < n; s++)
    if (g_strcmp0 (twb_metrics_series_run (d->metrics, s), run) == 0
        && g_str_has_prefix (twb_metrics_series_name (d->metrics, s), "step_ms:rank ")
        && g_hash_table_remove (d->curves, GUINT_TO_POINTER (s + 1)))
      twb_plot_remove_curve (p, s);
}

void
twb_dashboard_update (TwbDashboard *d)
{
  update_straggler (d);
  add_new_curves (d);
  update_progress (d);
}

void
twb_dashboard_update_classes (TwbDashboard *d)
{
  int64_t epoch = 0;
  const tw_class_report *r = d->run ? twb_run_get_class_report (d->run, &epoch) : NULL;
  gtk_widget_set_visible (d->classes_box, r != NULL);
  if (r == NULL)
    return;
  /* The view titles it "Epoch N · accuracy …", N counted from 1. */
  twb_confusion_view_set_report (TWB_CONFUSION_VIEW (d->confusion), r, epoch + 1);
  /* Many classes: the view shows the most confused, this shows them all. */
  gboolean many = r->n_classes > 30;
  gtk_widget_set_visible (d->all_classes, many);
  if (many)
    {
      g_autofree char *label = g_strdup_printf ("Show all %d classes", r->n_classes);
      gtk_check_button_set_label (GTK_CHECK_BUTTON (d->all_classes), label);
    }
}

static void
run_state_changed (TwbRun *run, TwbDashboard *d)
{
  /* The current run's row says training / paused; a finished run is in
   * the store by the time the window reloads the list. */
  twb_dashboard_reload_runs (d);
}

void
twb_dashboard_set_run (TwbDashboard *d, TwbRun *run)
{
  if (run)
    g_object_ref (run);
  if (d->run)
    g_signal_handlers_disconnect_by_func (d->run, run_state_changed, d);
  if (d->run && run != d->run)
    {
      /* The last run leaves the charts (the Runs list overlays it again,
       * from its saved curves). */
      const char *old = twb_run_get_id (d->run);
      if (!g_hash_table_contains (d->shown, old))
        {
          remove_run_curves (d, old);
          twb_metrics_remove_run (d->metrics, old);
        }
    }
  g_clear_object (&d->run);
  d->run = run;
  d->straggler = -1;
  if (run)
    g_signal_connect (run, "state-changed", G_CALLBACK (run_state_changed), d);
  twb_dashboard_update (d);
  twb_dashboard_update_classes (d);
  twb_dashboard_reload_runs (d);
}

/* ---- Runs list -------------------------------------------------------------------------- */

static void
run_toggled (GtkCheckButton *b, TwbDashboard *d)
{
  const char *id = g_object_get_data (G_OBJECT (b), "run");
  g_autoptr (GError) error = NULL;
  if (!twb_dashboard_show_run (d, id, gtk_check_button_get_active (b), &error))
    {
      g_message ("%s", error->message);
      gtk_check_button_set_active (b, FALSE);
    }
}

gboolean
twb_dashboard_show_run (TwbDashboard *d, const char *run_id, gboolean shown, GError **error)
{
  gboolean current = d->run && g_strcmp0 (run_id, twb_run_get_id (d->run)) == 0;
  if (!shown)
    {
      g_hash_table_remove (d->shown, run_id);
      if (!current)
        {
          remove_run_curves (d, run_id);
          twb_metrics_remove_run (d->metrics, run_id);
        }
      twb_dashboard_update (d);
      return TRUE;
    }
  if (g_hash_table_contains (d->shown, run_id) || current)
    return TRUE;
  g_autofree char *csv = g_strdup_printf ("%s/%s.csv", d->runs_dir ? d->runs_dir : ".", run_id);
  if (!twb_metrics_import_csv (d->metrics, csv, run_id, error))
    return FALSE;
  g_hash_table_add (d->shown, g_strdup (run_id));
  twb_dashboard_update (d);
  return TRUE;
}

static void
draw_swatch (GtkDrawingArea *area, cairo_t *cr, int width, int height, gpointer data)
{
  const GdkRGBA *c = g_object_get_data (G_OBJECT (area), "twb-colour");
  double s = MIN (width, height) - 2;
  gdk_cairo_set_source_rgba (cr, c);
  cairo_rectangle (cr, (width - s) / 2, (height - s) / 2, s, s);
  cairo_fill (cr);
}

/* One row: the run's colour, a check box to overlay it, its summary. */
static void
add_run_row (TwbDashboard *d, const char *id, const char *text, const char *tip,
             gboolean current)
{
  GtkWidget *row = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 4);
  GtkWidget *swatch = gtk_drawing_area_new ();
  GdkRGBA *colour = g_new (GdkRGBA, 1);
  twb_dashboard_run_colour (id, colour);
  g_object_set_data_full (G_OBJECT (swatch), "twb-colour", colour, g_free);
  gtk_drawing_area_set_content_width (GTK_DRAWING_AREA (swatch), 12);
  gtk_drawing_area_set_content_height (GTK_DRAWING_AREA (swatch), 12);
  gtk_widget_set_valign (swatch, GTK_ALIGN_CENTER);
  gtk_drawing_area_set_draw_func (GTK_DRAWING_AREA (swatch), draw_swatch, NULL, NULL);
  GtkWidget *check = gtk_check_button_new ();
  GtkWidget *label = gtk_label_new (text);
  gtk_label_set_ellipsize (GTK_LABEL (label), PANGO_ELLIPSIZE_END);
  gtk_label_set_xalign (GTK_LABEL (label), 0);
  gtk_check_button_set_child (GTK_CHECK_BUTTON (check), label);
  gtk_widget_set_hexpand (check, TRUE);
  g_object_set_data_full (G_OBJECT (check), "run", g_strdup (id), g_free);
  /* The current run is always on the charts. */
  gtk_check_button_set_active (GTK_CHECK_BUTTON (check),
                               current || g_hash_table_contains (d->shown, id));
  gtk_widget_set_sensitive (check, !current);
  gtk_widget_set_tooltip_text (row, tip);
  g_signal_connect (check, "toggled", G_CALLBACK (run_toggled), d);
  gtk_box_append (GTK_BOX (row), swatch);
  gtk_box_append (GTK_BOX (row), check);
  g_object_set_data_full (G_OBJECT (row), "run", g_strdup (id), g_free);
  g_object_set_data_full (G_OBJECT (row), "text", g_strdup (text), g_free);
  g_object_set_data (G_OBJECT (row), "swatch", swatch);
  gtk_list_box_append (GTK_LIST_BOX (d->runs_list), row);
  d->n_runs_listed++;
}

void
twb_dashboard_reload_runs (TwbDashboard *d)
{
  GtkWidget *child;
  while ((child = gtk_widget_get_first_child (d->runs_list)))
    gtk_list_box_remove (GTK_LIST_BOX (d->runs_list), child);
  g_autoptr (GPtrArray) runs = twb_run_store_list (d->runs_dir);
  d->n_runs_listed = 0;
  const char *cur = d->run ? twb_run_get_id (d->run) : NULL;
  gboolean cur_stored = FALSE;
  for (guint i = 0; cur && i < runs->len; i++)
    cur_stored |= g_strcmp0 (((const TwbRunRecord *) g_ptr_array_index (runs, i))->id, cur) == 0;
  if (cur && !cur_stored && twb_run_get_state (d->run) != TW_SESSION_IDLE)
    {
      /* The run being trained: listed (first) while it trains, kept in the
       * store when it ends. */
      TwbRunProgress p;
      twb_run_get_progress (d->run, &p);
      tw_session_state st = twb_run_get_state (d->run);
      const char *what = twb_run_get_preparing (d->run) ? "preparing"
                         : st == TW_SESSION_RUNNING  ? "training"
                         : st == TW_SESSION_PAUSED ? "paused"
                                                   : tw_session_state_name (st);
      /* The row is rebuilt on state changes only: the step count goes with
       * a pause, the progress line shows it while training. */
      g_autofree char *text
        = st == TW_SESSION_PAUSED
            ? g_strdup_printf ("%s · paused at step %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT, cur,
                               p.step, p.total_steps)
            : twb_run_get_label (d->run)
              ? g_strdup_printf ("%s · %s · %s", cur, twb_run_get_label (d->run), what)
              : g_strdup_printf ("%s · %s", cur, what);
      g_autofree char *tip = g_strdup_printf ("This run (%s): its curves are on the charts", what);
      add_run_row (d, cur, text, tip, TRUE);
    }
  for (guint i = 0; i < runs->len; i++)
    {
      const TwbRunRecord *r = g_ptr_array_index (runs, i);
      gboolean current = g_strcmp0 (r->id, cur) == 0;
      GString *l = g_string_new (r->id);
      g_string_append_printf (l, " · %s · %" G_GINT64_FORMAT " steps",
                              r->label ? r->label : r->mode, r->steps);
      if (!isnan (r->test_accuracy))
        g_string_append_printf (l, " · %.1f %%", r->test_accuracy * 100);
      else if (!isnan (r->final_loss))
        g_string_append_printf (l, " · loss %.3g", r->final_loss);
      g_autoptr (GDateTime) when = g_date_time_new_from_unix_local (r->created);
      g_autofree char *date = when ? g_date_time_format (when, "%Y-%m-%d %H:%M") : g_strdup ("");
      g_autofree char *tip = g_strdup_printf ("%s, %s%s%s\n%s", date, r->state,
                                              r->summary ? "\n" : "", r->summary ? r->summary : "",
                                              current ? "This run: its curves are on the charts"
                                                      : "Tick to overlay its curves");
      add_run_row (d, r->id, l->str, tip, current);
      g_string_free (l, TRUE);
    }
  if (d->n_runs_listed == 0)
    {
      GtkWidget *l = gtk_label_new ("Runs of this model are kept here");
      gtk_widget_add_css_class (l, "dim-label");
      gtk_list_box_append (GTK_LIST_BOX (d->runs_list), l);
    }
}

gboolean
twb_dashboard_get_run_row (TwbDashboard *d, guint i, const char **run_id, GdkRGBA *colour,
                           const char **text)
{
  guint k = 0;
  for (GtkWidget *c = gtk_widget_get_first_child (d->runs_list); c;
       c = gtk_widget_get_next_sibling (c))
    {
      GtkWidget *row = gtk_list_box_row_get_child (GTK_LIST_BOX_ROW (c));
      if (row == NULL || g_object_get_data (G_OBJECT (row), "run") == NULL)
        continue;
      if (k++ != i)
        continue;
      if (run_id)
        *run_id = g_object_get_data (G_OBJECT (row), "run");
      if (text)
        *text = g_object_get_data (G_OBJECT (row), "text");
      if (colour)
        *colour = *(const GdkRGBA *) g_object_get_data (
          G_OBJECT (g_object_get_data (G_OBJECT (row), "swatch")), "twb-colour");
      return TRUE;
    }
  return FALSE;
}

void
twb_dashboard_set_runs_dir (TwbDashboard *d, const char *dir)
{
  if (g_strcmp0 (dir, d->runs_dir) == 0)
    return;
  g_free (d->runs_dir);
  d->runs_dir = g_strdup (dir);
  twb_dashboard_reload_runs (d);
}

guint
twb_dashboard_n_runs_listed (TwbDashboard *d)
{
  return d->n_runs_listed;
}

/* ---- Controls and export ---------------------------------------------------------------- */

static void
smoothing_changed (GtkRange *r, TwbDashboard *d)
{
  for (guint c = 0; c < N_CHARTS; c++)
    twb_plot_set_smoothing (TWB_PLOT (d->plots[c]), gtk_range_get_value (r));
}

static void
log_toggled (GtkCheckButton *b, TwbDashboard *d)
{
  gboolean on = gtk_check_button_get_active (b);
  /* Loss and gradient norms read best on a log axis; accuracy never does. */
  int g = chart_index ("grad-norm");
  twb_plot_set_log_y (TWB_PLOT (d->plots[chart_index ("loss")]), on);
  twb_plot_set_log_y (TWB_PLOT (d->plots[g]), on || charts[g].log_default);
}

static void
draw_charts (cairo_t *cr, double w, double h, gpointer data)
{
  TwbDashboard *d = data;
  cairo_set_source_rgb (cr, 1, 1, 1);
  cairo_paint (cr);
  for (guint c = 0; c < N_CHARTS; c++)
    {
      cairo_save (cr);
      cairo_translate (cr, (c % 2) * EXPORT_W, (c / 2) * EXPORT_H);
      twb_plot_draw (TWB_PLOT (d->plots[c]), cr, EXPORT_W, EXPORT_H);
      cairo_restore (cr);
    }
}

gboolean
twb_dashboard_export (TwbDashboard *d, const char *path, GError **error)
{
  g_autofree char *lower = g_ascii_strdown (path, -1);
  if (g_str_has_suffix (lower, ".csv"))
    return twb_metrics_export_csv (d->metrics, path, error);
  /* The charts two to a row. */
  int rows = (N_CHARTS + 1) / 2;
  return twb_picture_save (path, 2 * EXPORT_W, rows * EXPORT_H, 1,
                           TWB_PICTURE_PNG | TWB_PICTURE_SVG | TWB_PICTURE_PDF, draw_charts, d,
                           error);
}

static void
export_response (GtkNativeDialog *dlg, int response, TwbDashboard *d)
{
  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr (GFile) f = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dlg));
      g_autofree char *path = g_file_get_path (f);
      g_autoptr (GError) error = NULL;
      if (path && !twb_dashboard_export (d, path, &error))
        g_message ("%s", error->message);
    }
  g_object_unref (dlg);
}

static void
export_clicked (GtkButton *b, TwbDashboard *d)
{
  const char *ext = g_object_get_data (G_OBJECT (b), "ext");
  GtkRoot *root = gtk_widget_get_root (GTK_WIDGET (d));
  GtkFileChooserNative *dlg = gtk_file_chooser_native_new (
    "Export Curves", GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL,
    GTK_FILE_CHOOSER_ACTION_SAVE, "_Export", "_Cancel");
  g_autofree char *name = g_strdup_printf ("%s-curves.%s", d->run ? twb_run_get_id (d->run) : "runs",
                                           ext);
  gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (dlg), name);
  g_signal_connect (dlg, "response", G_CALLBACK (export_response), d);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dlg));
}

static GtkWidget *
export_menu (TwbDashboard *d)
{
  GtkWidget *pop_box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 2);
  const char *exts[] = { "csv", "png", "svg" };
  const char *labels[] = { "Points as CSV…", "Charts as PNG…", "Charts as SVG…" };
  for (int i = 0; i < 3; i++)
    {
      GtkWidget *b = gtk_button_new_with_label (labels[i]);
      gtk_widget_add_css_class (b, "flat");
      g_object_set_data (G_OBJECT (b), "ext", (gpointer) exts[i]);
      g_signal_connect (b, "clicked", G_CALLBACK (export_clicked), d);
      gtk_box_append (GTK_BOX (pop_box), b);
    }
  GtkWidget *pop = gtk_popover_new ();
  gtk_popover_set_child (GTK_POPOVER (pop), pop_box);
  GtkWidget *mb = gtk_menu_button_new ();
  gtk_menu_button_set_label (GTK_MENU_BUTTON (mb), "Export");
  gtk_menu_button_set_popover (GTK_MENU_BUTTON (mb), pop);
  gtk_widget_set_tooltip_text (mb, "Export the curves (twb train --metrics FILE.csv writes the "
                                   "points from the command line)");
  return mb;
}

/* ---- The widget ------------------------------------------------------------------------- */

TwbPlot *
twb_dashboard_get_plot (TwbDashboard *d, const char *name)
{
  for (guint c = 0; c < N_CHARTS; c++)
    if (strcmp (charts[c].name, name) == 0)
      return TWB_PLOT (d->plots[c]);
  return NULL;
}

const char *
twb_dashboard_get_progress_text (TwbDashboard *d)
{
  return d->progress_text;
}

static void
twb_dashboard_dispose (GObject *o)
{
  TwbDashboard *d = TWB_DASHBOARD (o);
  if (d->run)
    g_signal_handlers_disconnect_by_func (d->run, run_state_changed, d);
  g_clear_object (&d->run);
  g_clear_pointer (&d->box, gtk_widget_unparent);
  g_clear_object (&d->metrics);
  G_OBJECT_CLASS (twb_dashboard_parent_class)->dispose (o);
}

static void
twb_dashboard_finalize (GObject *o)
{
  TwbDashboard *d = TWB_DASHBOARD (o);
  g_free (d->runs_dir);
  g_free (d->progress_text);
  g_hash_table_unref (d->curves);
  g_hash_table_unref (d->shown);
  G_OBJECT_CLASS (twb_dashboard_parent_class)->finalize (o);
}

static void
twb_dashboard_class_init (TwbDashboardClass *klass)
{
  GObjectClass *oc = G_OBJECT_CLASS (klass);
  oc->dispose = twb_dashboard_dispose;
  oc->finalize = twb_dashboard_finalize;
  gtk_widget_class_set_layout_manager_type (GTK_WIDGET_CLASS (klass), GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name (GTK_WIDGET_CLASS (klass), "dashboard");
}

static void
twb_dashboard_init (TwbDashboard *d)
{
  d->curves = g_hash_table_new (g_direct_hash, g_direct_equal);
  d->shown = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  d->straggler = -1;
}

static void
all_classes_toggled (GtkCheckButton *b, TwbDashboard *d)
{
  twb_confusion_view_set_show_all (TWB_CONFUSION_VIEW (d->confusion),
                                   gtk_check_button_get_active (b));
}

static GtkWidget *
heading (const char *text)
{
  GtkWidget *l = gtk_label_new (text);
  gtk_label_set_xalign (GTK_LABEL (l), 0);
  gtk_widget_add_css_class (l, "heading");
  return l;
}

GtkWidget *
twb_dashboard_new (TwbMetrics *metrics)
{
  TwbDashboard *d = g_object_new (TWB_TYPE_DASHBOARD, NULL);
  d->metrics = g_object_ref (metrics);
  d->box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 12);
  gtk_widget_set_margin_start (d->box, 8);
  gtk_widget_set_margin_end (d->box, 8);
  gtk_widget_set_margin_bottom (d->box, 6);
  gtk_widget_set_parent (d->box, GTK_WIDGET (d));

  /* Left: progress, controls, runs. */
  GtkWidget *left = gtk_box_new (GTK_ORIENTATION_VERTICAL, 6);
  gtk_widget_set_size_request (left, 200, -1);
  d->progress_bar = gtk_progress_bar_new ();
  gtk_accessible_update_property (GTK_ACCESSIBLE (d->progress_bar), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  "Training progress", -1);
  d->progress_label = gtk_label_new (NULL);
  gtk_label_set_wrap (GTK_LABEL (d->progress_label), TRUE);
  gtk_label_set_wrap_mode (GTK_LABEL (d->progress_label), PANGO_WRAP_WORD_CHAR);
  gtk_label_set_xalign (GTK_LABEL (d->progress_label), 0);
  gtk_label_set_max_width_chars (GTK_LABEL (d->progress_label), 24);
  gtk_label_set_lines (GTK_LABEL (d->progress_label), 3);
  gtk_label_set_ellipsize (GTK_LABEL (d->progress_label), PANGO_ELLIPSIZE_END);
  gtk_box_append (GTK_BOX (left), d->progress_bar);
  gtk_box_append (GTK_BOX (left), d->progress_label);

  GtkWidget *row = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
  GtkWidget *sl = gtk_label_new ("Smoothing");
  gtk_widget_add_css_class (sl, "dim-label");
  d->smoothing = gtk_scale_new_with_range (GTK_ORIENTATION_HORIZONTAL, 0, 0.99, 0.01);
  gtk_range_set_value (GTK_RANGE (d->smoothing), 0.6);
  gtk_scale_set_draw_value (GTK_SCALE (d->smoothing), FALSE);
  gtk_widget_set_hexpand (d->smoothing, TRUE);
  gtk_widget_set_tooltip_text (d->smoothing, "Exponential moving average, as TensorBoard's");
  gtk_accessible_update_property (GTK_ACCESSIBLE (d->smoothing), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  "Smoothing", -1);
  g_signal_connect (d->smoothing, "value-changed", G_CALLBACK (smoothing_changed), d);
  gtk_box_append (GTK_BOX (row), sl);
  gtk_box_append (GTK_BOX (row), d->smoothing);
  gtk_box_append (GTK_BOX (left), row);
  GtkWidget *row2 = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
  d->log_check = gtk_check_button_new_with_label ("Log scale");
  gtk_widget_set_hexpand (d->log_check, TRUE);
  g_signal_connect (d->log_check, "toggled", G_CALLBACK (log_toggled), d);
  gtk_box_append (GTK_BOX (row2), d->log_check);
  gtk_box_append (GTK_BOX (row2), export_menu (d));
  gtk_box_append (GTK_BOX (left), row2);

  gtk_box_append (GTK_BOX (left), heading ("Runs"));
  GtkWidget *sw = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (sw), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
  gtk_widget_set_vexpand (sw, TRUE);
  d->runs_list = gtk_list_box_new ();
  gtk_list_box_set_selection_mode (GTK_LIST_BOX (d->runs_list), GTK_SELECTION_NONE);
  gtk_accessible_update_property (GTK_ACCESSIBLE (d->runs_list), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  "Runs of this model: tick one to overlay its curves", -1);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (sw), d->runs_list);
  gtk_box_append (GTK_BOX (left), sw);
  gtk_box_append (GTK_BOX (d->box), left);

  /* Centre: the charts, three to a row. */
  d->grid = gtk_grid_new ();
  gtk_grid_set_column_homogeneous (GTK_GRID (d->grid), TRUE);
  gtk_grid_set_row_homogeneous (GTK_GRID (d->grid), TRUE);
  gtk_grid_set_column_spacing (GTK_GRID (d->grid), 6);
  gtk_grid_set_row_spacing (GTK_GRID (d->grid), 6);
  gtk_widget_set_hexpand (d->grid, TRUE);
  for (guint c = 0; c < N_CHARTS; c++)
    {
      d->plots[c] = twb_plot_new (metrics, charts[c].title);
      gtk_widget_set_size_request (d->plots[c], 200, 110);
      twb_plot_set_smoothing (TWB_PLOT (d->plots[c]), 0.6);
      /* The tab scrolls: the plain wheel scrolls it, Ctrl+wheel zooms a chart. */
      g_object_set (d->plots[c], "wheel-needs-ctrl", TRUE, NULL);
      twb_plot_set_redraw_interval (TWB_PLOT (d->plots[c]), CHART_REDRAW_MS);
      if (charts[c].log_default)
        twb_plot_set_log_y (TWB_PLOT (d->plots[c]), TRUE);
      gtk_grid_attach (GTK_GRID (d->grid), d->plots[c], c % 3, c / 3, 1, 1);
    }
  gtk_box_append (GTK_BOX (d->box), d->grid);

  /* Right: the epoch's class report (classifiers only). */
  d->classes_box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 4);
  d->confusion = twb_confusion_view_new ();
  gtk_widget_set_size_request (d->confusion, 280, 240);
  gtk_widget_set_vexpand (d->confusion, TRUE);
  gtk_box_append (GTK_BOX (d->classes_box), d->confusion);
  d->all_classes = gtk_check_button_new_with_label ("Show all classes");
  gtk_widget_set_tooltip_text (d->all_classes, "Off: the most confused classes only, large "
                                               "enough to read");
  g_signal_connect (d->all_classes, "toggled", G_CALLBACK (all_classes_toggled), d);
  gtk_widget_set_visible (d->all_classes, FALSE);
  gtk_box_append (GTK_BOX (d->classes_box), d->all_classes);
  gtk_widget_set_visible (d->classes_box, FALSE);
  gtk_box_append (GTK_BOX (d->box), d->classes_box);

  update_progress (d);
  twb_dashboard_reload_runs (d);
  return GTK_WIDGET (d);
}
