/* test-panels.c — the Training, Debugger and Profiler panels as a new user
 * found them, under Xvfb, driven through the window's actions with the
 * main loop pumped; checked on the models the widgets draw and on files
 * read back, with screenshots saved for a person to look at
 * (TWB_TEST_SHOTS or a temporary folder):
 *
 * - every run has one colour on every chart and on its Runs row;
 * - the run being trained is listed (and says so) while it trains;
 * - the runs follow the model through Save As, reopening and a copy; runs
 *   kept before identities are still listed;
 * - the progress line's samples/s is the session's, from finished steps;
 * - the inspector marks a tensor stale once the run ends, and Diff names
 *   the two iterations it compares;
 * - the Profiler's Top keeps an op's forward and backward apart, and
 *   Compare says when two traces share no step. */
#include "ui-test.h"
#include "window-test.h"
#include "profiler/summary.h"
#include "ui/twb-dashboard.h"
#include "ui/twb-debugger-panel.h"
#include "ui/twb-profiler-panel.h"
#include "ui/twb-run-store.h"
#include "ui/twb-stat-table.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

static TwbApplication *app;
static char *tmp_dir, *shots_dir;

/* x [2] → fc1 (16) → relu → fc2 (2) → cross entropy on spirals: thousands
 * of steps a second. */
static char *
write_model (const char *name, int epochs)
{
  g_autofree char *json = g_strdup_printf (
    "{ \"format\": \"twb-model\", \"version\": 1, \"name\": \"small\",\n"
    "  \"graph\": { \"nodes\": [\n"
    "    { \"id\": \"x\", \"op\": \"input\", \"attrs\": { \"shape\": [2], \"dtype\": \"f32\", "
    "\"role\": \"data\" }, \"pos\": [40, 40] },\n"
    "    { \"id\": \"y\", \"op\": \"input\", \"attrs\": { \"shape\": [], \"dtype\": \"i64\", "
    "\"role\": \"label\" }, \"pos\": [40, 300] },\n"
    "    { \"id\": \"fc1\", \"op\": \"linear\", \"inputs\": [\"x\"], \"attrs\": { "
    "\"out_features\": 16 }, \"pos\": [290, 40] },\n"
    "    { \"id\": \"relu1\", \"op\": \"relu\", \"inputs\": [\"fc1\"], \"pos\": [540, 40] },\n"
    "    { \"id\": \"fc2\", \"op\": \"linear\", \"inputs\": [\"relu1\"], \"attrs\": { "
    "\"out_features\": 2 }, \"pos\": [790, 40] },\n"
    "    { \"id\": \"loss\", \"op\": \"cross_entropy\", \"inputs\": [\"fc2\", \"y\"], "
    "\"pos\": [790, 220] } ],\n"
    "    \"outputs\": [\"fc2\"] },\n"
    "  \"training\": { \"loss\": \"loss\", \"batch_size\": 32, \"epochs\": %d, \"seed\": 0,\n"
    "    \"dataset\": \"spirals\", \"validation_split\": 0.1,\n"
    "    \"optimizer\": { \"type\": \"sgd\", \"lr\": 0.05, \"momentum\": 0.9, "
    "\"nesterov\": false, \"weight_decay\": 0 },\n"
    "    \"schedule\": { \"type\": \"constant\" } } }\n",
    epochs);
  char *path = g_build_filename (tmp_dir, name, NULL);
  g_assert_true (g_file_set_contents (path, json, -1, NULL));
  return path;
}

static TwbWindow *
open_doc (TwbDocument *doc)
{
  TwbWindow *w = twb_window_new (GTK_APPLICATION (app), doc);
  gtk_window_set_default_size (GTK_WINDOW (w), 1400, 900);
  gtk_window_present (GTK_WINDOW (w));
  twt_ui_pump ();
  return w;
}

static TwbWindow *
open_path (const char *path)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TwbDocument) doc = twb_document_new_from_file (path, &error);
  g_assert_no_error (error);
  return open_doc (doc);
}

static void
close_window (TwbWindow *w)
{
  twb_window_stop_run_now (w);
  twb_window_close_now (w);
  twt_ui_pump ();
}

static void
screenshot (GtkWidget *window, const char *name)
{
  g_autofree char *path = g_build_filename (shots_dir, name, NULL);
  twt_window_screenshot (window, path);
}

static gboolean
same_rgba (const GdkRGBA *a, const GdkRGBA *b)
{
  return fabs (a->red - b->red) < 1e-6 && fabs (a->green - b->green) < 1e-6
         && fabs (a->blue - b->blue) < 1e-6;
}

/* The Runs list's ids, top first, as a space-separated string. */
static char *
listed (TwbDashboard *d)
{
  GString *s = g_string_new (NULL);
  const char *id;
  for (guint i = 0; twb_dashboard_get_run_row (d, i, &id, NULL, NULL); i++)
    g_string_append_printf (s, "%s%s", s->len ? " " : "", id);
  return g_string_free (s, FALSE);
}

/* ---- Runs ------------------------------------------------------------------------------ */

/* Two runs, the first overlaid: on each chart, each curve has its run's
 * colour, the two runs differ, and each Runs row's swatch is its run's
 * colour. */
static void
test_run_colours (void)
{
  g_autofree char *path = write_model ("colours.json", 1);
  TwbWindow *w = open_path (path);
  TwbDashboard *d = TWB_DASHBOARD (w->dashboard);
  act (w, "debugger.run");
  act (w, "debugger.run");
  g_assert_cmpstr (twb_run_get_id (run_of (w)), ==, "run-2");
  g_autoptr (GError) error = NULL;
  g_assert_true (twb_dashboard_show_run (d, "run-1", TRUE, &error));
  g_assert_no_error (error);
  twt_ui_pump ();
  GdkRGBA c1, c2;
  twb_dashboard_run_colour ("run-1", &c1);
  twb_dashboard_run_colour ("run-2", &c2);
  g_assert_false (same_rgba (&c1, &c2));
  const char *charts[] = { "loss", "accuracy", "lr", "throughput", "grad-norm" };
  guint checked = 0;
  for (guint c = 0; c < G_N_ELEMENTS (charts); c++)
    {
      TwbPlot *p = twb_dashboard_get_plot (d, charts[c]);
      guint seen_runs = 0;
      for (guint s = 0; s < twb_metrics_n_series (w->metrics); s++)
        {
          GdkRGBA got;
          if (!twb_plot_get_curve_colour (p, s, &got))
            continue;
          const char *run = twb_metrics_series_run (w->metrics, s);
          const GdkRGBA *want = strcmp (run, "run-1") == 0 ? &c1 : &c2;
          if (strcmp (charts[c], "grad-norm") == 0)
            {
              /* Shades of the run's colour: closer to it than to the other's. */
              double d1 = fabs (got.red - want->red) + fabs (got.green - want->green)
                          + fabs (got.blue - want->blue);
              const GdkRGBA *other = want == &c1 ? &c2 : &c1;
              double d2 = fabs (got.red - other->red) + fabs (got.green - other->green)
                          + fabs (got.blue - other->blue);
              g_assert_cmpfloat (d1, <, d2);
            }
          else
            g_assert_true (same_rgba (&got, want));
          seen_runs |= want == &c1 ? 1 : 2;
          checked++;
        }
      g_assert_cmpuint (seen_runs, ==, 3);
    }
  g_assert_cmpuint (checked, >=, 10);
  /* The Runs rows: run-2 (this run) then run-1, each its colour. */
  g_autofree char *ids = listed (d);
  g_assert_cmpstr (ids, ==, "run-2 run-1");
  for (guint i = 0; i < 2; i++)
    {
      const char *id;
      GdkRGBA sw;
      g_assert_true (twb_dashboard_get_run_row (d, i, &id, &sw, NULL));
      g_assert_true (same_rgba (&sw, strcmp (id, "run-1") == 0 ? &c1 : &c2));
    }
  twb_window_show_panel (w, "training");
  screenshot (GTK_WIDGET (w), "panels-run-colours.png");
  close_window (w);
}

/* While it trains (here: paused between iterations), the run is listed
 * first and says so; once it ends, the store's record takes its place. */
static void
test_running_run_listed (void)
{
  g_autofree char *path = write_model ("listed.json", 1);
  TwbWindow *w = open_path (path);
  TwbDashboard *d = TWB_DASHBOARD (w->dashboard);
  g_assert_cmpuint (twb_dashboard_n_runs_listed (d), ==, 0);
  act (w, "win.train-steps(5)");
  const char *id, *text;
  g_assert_true (twb_dashboard_get_run_row (d, 0, &id, NULL, &text));
  g_assert_cmpstr (id, ==, "run-1");
  g_assert_nonnull (strstr (text, "paused at step 5/"));
  g_assert_cmpuint (twb_dashboard_n_runs_listed (d), ==, 1);
  act (w, "debugger.run");
  g_assert_cmpint (twb_run_get_state (run_of (w)), ==, TW_SESSION_FINISHED);
  g_assert_true (twb_dashboard_get_run_row (d, 0, &id, NULL, &text));
  g_assert_cmpstr (id, ==, "run-1");
  g_assert_null (strstr (text, "paused"));
  g_assert_nonnull (strstr (text, "eager"));
  g_assert_cmpuint (twb_dashboard_n_runs_listed (d), ==, 1);
  close_window (w);
}

static char *
saved_model_id (const char *path)
{
  g_autoptr (JsonParser) p = json_parser_new ();
  g_assert_true (json_parser_load_from_file (p, path, NULL));
  JsonObject *root = json_node_get_object (json_parser_get_root (p));
  JsonObject *ed = json_object_get_object_member (root, "editor");
  g_assert_nonnull (ed);
  return g_strdup (json_object_get_string_member (ed, "model_id"));
}

/* A model's runs follow it: through Save As to another name, a second run
 * after it, reopening the new file, a copy of it; a file from before
 * identities lists the runs kept under its path; an unsaved model's runs
 * follow it into its first save. */
static void
test_runs_follow_model (void)
{
  g_autofree char *a = write_model ("first.json", 1);
  /* Kept before identities: under the file's path hash. */
  g_autofree char *legacy = twb_run_store_dir_for (a, "small");
  TwbWindow *w = open_path (a);
  TwbDashboard *d = TWB_DASHBOARD (w->dashboard);
  act (w, "debugger.run");
  g_autofree char *dir1 = twb_run_store_dir_for_id (twb_document_get_model_id (w->doc));
  g_assert_cmpstr (dir1, ==, legacy);
  g_autoptr (GPtrArray) kept = twb_run_store_list (legacy);
  g_assert_cmpuint (kept->len, ==, 1);

  g_autofree char *b = g_build_filename (tmp_dir, "renamed.json", NULL);
  g_autoptr (GError) error = NULL;
  g_assert_true (twb_window_save_to (w, b, &error));
  g_assert_no_error (error);
  twt_ui_pump ();
  g_autofree char *ids = listed (d);
  g_assert_cmpstr (ids, ==, "run-1");
  act (w, "debugger.run");
  g_assert_cmpstr (twb_run_get_id (run_of (w)), ==, "run-2");
  g_autofree char *ids2 = listed (d);
  g_assert_cmpstr (ids2, ==, "run-2 run-1");
  g_autofree char *id_b = saved_model_id (b);
  g_autofree char *want_id = twb_run_store_new_model_id (a);
  g_assert_cmpstr (id_b, ==, want_id);
  close_window (w);

  /* Reopened, and a byte copy of it (the same model): both runs. */
  g_autofree char *c = g_build_filename (tmp_dir, "copy.json", NULL);
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (b, &text, NULL, NULL));
  g_assert_true (g_file_set_contents (c, text, -1, NULL));
  const char *again[] = { b, c };
  for (guint i = 0; i < G_N_ELEMENTS (again); i++)
    {
      TwbWindow *w2 = open_path (again[i]);
      g_autofree char *l = listed (TWB_DASHBOARD (w2->dashboard));
      g_assert_cmpstr (l, ==, "run-2 run-1");
      /* A kept run's curves overlay from the identity's folder. */
      g_assert_true (twb_dashboard_show_run (TWB_DASHBOARD (w2->dashboard), "run-1", TRUE, &error));
      g_assert_no_error (error);
      g_assert_cmpuint (twb_metrics_find_series (w2->metrics, "run-1", "loss"), !=, G_MAXUINT);
      close_window (w2);
    }

  /* A new model: a fresh identity, its runs kept under it and still
   * listed after its first save. */
  g_autoptr (GError) e2 = NULL;
  g_autofree char *src = write_model ("template.json", 1);
  tw_model *m = tw_model_load (src, &e2);
  g_assert_no_error (e2);
  g_autoptr (TwbDocument) doc = twb_document_new_for_model (m);
  TwbWindow *w3 = open_doc (doc);
  const char *fresh = twb_document_get_model_id (w3->doc);
  g_assert_nonnull (fresh);
  g_assert_true (g_str_has_prefix (fresh, "model-"));
  act (w3, "debugger.run");
  g_autofree char *n = g_build_filename (tmp_dir, "new.json", NULL);
  g_assert_true (twb_window_save_to (w3, n, &e2));
  g_assert_no_error (e2);
  twt_ui_pump ();
  g_autofree char *l3 = listed (TWB_DASHBOARD (w3->dashboard));
  g_assert_cmpstr (l3, ==, "run-1");
  g_autofree char *id_n = saved_model_id (n);
  g_assert_cmpstr (id_n, ==, fresh);
  close_window (w3);
}

/* A run store written before identities (run-4.json and .csv under the
 * path's hash): opening the file lists it and overlays its curves. */
static void
test_old_store_read (void)
{
  g_autofree char *path = write_model ("old.json", 1);
  g_autofree char *dir = twb_run_store_dir_for (path, "small");
  g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
  g_autofree char *json = g_build_filename (dir, "run-4.json", NULL);
  g_autofree char *csv = g_build_filename (dir, "run-4.csv", NULL);
  g_assert_true (g_file_set_contents (
    json,
    "{ \"format\": \"twb-run\", \"id\": \"run-4\", \"created\": 1700000000, \"state\": "
    "\"finished\", \"mode\": \"eager\", \"steps\": 3, \"final_loss\": 0.5, \"test_accuracy\": 0.75 }",
    -1, NULL));
  g_assert_true (g_file_set_contents (csv, "run,series,x,y\nrun-4,loss,1,0.9\nrun-4,loss,2,0.7\n"
                                           "run-4,loss,3,0.5\n", -1, NULL));
  TwbWindow *w = open_path (path);
  TwbDashboard *d = TWB_DASHBOARD (w->dashboard);
  const char *id, *text;
  g_assert_true (twb_dashboard_get_run_row (d, 0, &id, NULL, &text));
  g_assert_cmpstr (id, ==, "run-4");
  g_assert_nonnull (strstr (text, "75.0 %"));
  g_autoptr (GError) error = NULL;
  g_assert_true (twb_dashboard_show_run (d, "run-4", TRUE, &error));
  g_assert_no_error (error);
  guint s = twb_metrics_find_series (w->metrics, "run-4", "loss");
  g_assert_cmpuint (s, !=, G_MAXUINT);
  g_assert_cmpuint (twb_metrics_series_len (w->metrics, s), ==, 3);
  /* The next run is numbered after it, in the same folder. */
  act (w, "debugger.run");
  g_assert_cmpstr (twb_run_get_id (run_of (w)), ==, "run-5");
  g_autoptr (GPtrArray) runs = twb_run_store_list (dir);
  g_assert_cmpuint (runs->len, ==, 2);
  close_window (w);
}

/* ---- Progress -------------------------------------------------------------------------- */

/* The progress line's samples/s and ETA are the session's (from finished
 * steps), not a count of steps in the last second: paused mid-run, the
 * figure shown is the last snapshot's, which is batch / mean step time. */
static void
test_progress_rate (void)
{
  g_autofree char *path = write_model ("rate.json", 3);
  TwbWindow *w = open_path (path);
  act (w, "win.train-steps(40)");
  TwbRunProgress p;
  twb_run_get_progress (run_of (w), &p);
  g_assert_cmpint (p.step, ==, 40);
  g_assert_cmpfloat (p.samples_per_s, >, 0);
  /* From the steps the run timed: samples_per_s series' last point. */
  guint s = twb_metrics_find_series (w->metrics, twb_run_get_id (run_of (w)), "samples_per_s");
  double x, y;
  twb_metrics_get_point (w->metrics, s, twb_metrics_series_len (w->metrics, s) - 1, &x, &y);
  g_assert_cmpfloat (x, ==, 40);
  g_assert_cmpfloat (y, ==, p.samples_per_s);
  g_assert_cmpfloat (p.eta_s, >=, 0);
  /* Continue to the end: ETA 0, and the line says finished. */
  act (w, "debugger.run");
  twb_run_get_progress (run_of (w), &p);
  g_assert_cmpfloat (p.eta_s, ==, 0);
  close_window (w);
}

/* ---- Inspector ------------------------------------------------------------------------- */

/* Paused at fc2 in two iterations, the Diff page names both; after the run
 * ends the tensor shown is marked stale, visibly. */
static void
test_inspector_stale_and_diff (void)
{
  g_autofree char *path = write_model ("inspect.json", 1);
  TwbWindow *w = open_path (path);
  TwbTensorView *v = twb_debugger_panel_get_tensor_view (TWB_DEBUGGER_PANEL (w->debugger_panel));
  act (w, "debugger.add-breakpoint('node=fc2:forward')");
  act (w, "debugger.run");
  g_assert_cmpint (pause_of (w)->iteration, ==, 1);
  act (w, "debugger.inspect('fc2.weight')");
  g_assert_null (twb_tensor_view_get_stale (v));
  act (w, "debugger.run");
  g_assert_cmpint (pause_of (w)->iteration, ==, 2);
  act (w, "debugger.inspect('fc2.weight')");
  act (w, "debugger.inspector-page('diff')");
  const char *note = twb_tensor_view_page_note (v, "diff");
  g_test_message ("diff: %s", note);
  g_assert_true (g_str_has_prefix (note, "Iteration 2 − iteration 1: "));
  g_assert_null (twb_tensor_view_get_stale (v));
  act (w, "debugger.remove-breakpoint('node=fc2:forward')");
  act (w, "debugger.run");
  g_assert_cmpint (twb_run_get_state (run_of (w)), ==, TW_SESSION_FINISHED);
  const char *stale = twb_tensor_view_get_stale (v);
  g_assert_nonnull (stale);
  g_assert_nonnull (strstr (stale, "iteration 2"));
  g_assert_nonnull (strstr (stale, "finished"));
  twb_window_show_panel (w, "debugger");
  twt_ui_pump ();
  GtkWidget *line = find_label (GTK_WIDGET (v), "Stale: ");
  g_assert_nonnull (line);
  g_assert_true (gtk_widget_get_mapped (line));
  g_assert_cmpint (gtk_widget_get_height (line), >, 0);
  screenshot (GTK_WIDGET (w), "panels-inspector-stale.png");
  close_window (w);
}

/* ---- Profiler -------------------------------------------------------------------------- */

/* A trace of an op's forward and backward (the same name) and one whose
 * steps are not the first's: Top keeps the phases apart; Compare titles its
 * columns "whole" and its step row "(whole trace)". */
static void
test_profiler_phases_compare (void)
{
  g_autofree char *path = write_model ("profile.json", 1);
  TwbWindow *w = open_path (path);
  TwbProfilerPanel *pp = TWB_PROFILER_PANEL (w->profiler_panel);
  for (int j = 0; j < 2; j++)
    {
      tw_trace *t = tw_trace_new ();
      guint lane = tw_trace_add_lane (t, 1, 1, "train", TW_LANE_THREAD);
      tw_trace_arg fa[] = { { "nodes", "fc1" }, { "phase", "forward" } };
      tw_trace_arg ba[] = { { "nodes", "fc1" }, { "phase", "backward" } };
      for (int i = 0; i < 572; i++)
        {
          gint64 t0 = (gint64) i * 10000;
          g_autofree char *step = g_strdup_printf ("step %d", j * 1000 + i + 1);
          tw_trace_add_slice (t, lane, t0, 9000, step, "step", NULL, 0);
          tw_trace_add_slice (t, lane, t0 + 100, 3000, "linear (fc1)", "forward", fa, 2);
          tw_trace_add_slice (t, lane, t0 + 4000, 4000, "linear (fc1)", "backward", ba, 2);
        }
      tw_trace_sort (t);
      twb_profiler_panel_add_trace (pp, t, j ? "later" : "first", NULL);
    }
  twt_ui_pump ();
  twb_profiler_panel_show_trace (pp, 0);
  TwbStatTable *top = TWB_STAT_TABLE (twb_profiler_panel_get_table (pp, "top"));
  guint fwd = 0, bwd = 0;
  for (guint r = 0; r < twb_stat_table_n_rows (top); r++)
    if (g_strcmp0 (twb_stat_table_get_text (top, r, 0), "linear (fc1)") == 0)
      {
        const char *phase = twb_stat_table_get_text (top, r, 1);
        double count = twb_stat_table_get_value (top, r, 3);
        g_assert_cmpfloat (count, ==, 572);
        fwd += g_strcmp0 (phase, "forward") == 0;
        bwd += g_strcmp0 (phase, "backward") == 0;
      }
  g_assert_cmpuint (fwd, ==, 1);
  g_assert_cmpuint (bwd, ==, 1);
  g_assert_cmpstr (twb_stat_table_get_title (top, 1), ==, "Phase");
  twb_profiler_panel_set_compare (pp, 1);
  twt_ui_pump ();
  TwbStatTable *cmp = TWB_STAT_TABLE (twb_profiler_panel_get_table (pp, "compare"));
  g_assert_cmpstr (twb_stat_table_get_title (cmp, 1), ==, "This trace, whole");
  g_assert_cmpstr (twb_stat_table_get_title (cmp, 2), ==, "Compared, whole");
  guint n = twb_stat_table_n_rows (cmp);
  g_assert_cmpuint (n, >=, 2);
  gboolean whole_row = FALSE;
  for (guint r = 0; r < n; r++)
    whole_row |= g_strcmp0 (twb_stat_table_get_text (cmp, r, 0), "(whole trace)") == 0;
  g_assert_true (whole_row);
  twb_window_show_panel (w, "profiler");
  twb_profiler_panel_set_page (pp, "compare");
  screenshot (GTK_WIDGET (w), "panels-profiler-compare-whole.png");
  close_window (w);
}

int
main (int argc, char **argv)
{
  g_setenv ("TWB_COLOR_SCHEME", "light", FALSE);
  g_autofree char *home = twt_ui_private_home ("panels");
  tmp_dir = g_build_filename (home, "models", NULL);
  g_mkdir_with_parents (tmp_dir, 0700);
  const char *env = g_getenv ("TWB_TEST_SHOTS");
  shots_dir = env ? g_strdup (env) : g_build_filename (home, "shots", NULL);
  g_mkdir_with_parents (shots_dir, 0700);
  app = twt_window_test_init (&argc, &argv, 0);
  if (app == NULL)
    return 0;
  g_test_add_func ("/ui/panels/run-colours", test_run_colours);
  g_test_add_func ("/ui/panels/running-run-listed", test_running_run_listed);
  g_test_add_func ("/ui/panels/runs-follow-model", test_runs_follow_model);
  g_test_add_func ("/ui/panels/old-store-read", test_old_store_read);
  g_test_add_func ("/ui/panels/progress-rate", test_progress_rate);
  g_test_add_func ("/ui/panels/inspector-stale-and-diff", test_inspector_stale_and_diff);
  g_test_add_func ("/ui/panels/profiler-phases-compare", test_profiler_phases_compare);
  int st = g_test_run ();
  g_object_unref (app);
  return st;
}
