/* test-cluster.c — training on several processes from the window, under
 * Xvfb, through its actions: the Cluster device's dialog (its check and
 * the command it shows), a 2-rank run of `twb train --progress-json` in a
 * subprocess listed finished in the Runs list with rank 0's curves, a
 * compressed run overlaid on the synchronous one, Stop ending every process
 * of the run, a failing run's error in the notice area, and the
 * Profiler's Ranks page on a merged trace of twb profile --ranks 2.
 * Screenshots are saved for a person to look at (TWB_TEST_SHOTS or a
 * temporary folder).  The twb program is argv[1] (TWB_PROGRAM). */
#include "ui-test.h"
#include "window-test.h"
#include "ui/twb-cluster-dialog.h"
#include "ui/twb-dashboard.h"
#include "ui/twb-inspector.h"
#include "graph_editor/twb-graph-canvas.h"
#include "graph_editor/twb-graph-scene.h"
#include "ui/twb-profiler-panel.h"
#include "ui/twb-run-store.h"
#include "ui/twb-stat-table.h"
#include "profiler/ranks.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static TwbApplication *app;
static char *shots_dir, *twb_program;

/* A 2-rank run of the spirals model: mpirun's start (≈ 0.7 s,
 * TOOLCHAIN.md) and 40 steps of a few ms; 90 s only ends a hung test
 * (an ASan build on a shared machine is ~20x slower). */
#define CLUSTER_TIMEOUT_S 90

static TwbWindow *
open_spirals (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TwbDocument) doc
    = twb_document_new_from_file (TWB_ASSETS_DIR "/models/spirals.json", &error);
  g_assert_no_error (error);
  TwbWindow *w = twb_window_new (GTK_APPLICATION (app), doc);
  gtk_window_set_default_size (GTK_WINDOW (w), 1280, 900);
  gtk_window_present (GTK_WINDOW (w));
  twt_ui_pump ();
  return w;
}

static void
set_spin (GtkWidget *dialog, const char *name, double v)
{
  GtkWidget *s = twb_cluster_dialog_get_control (dialog, name);
  g_assert_nonnull (s);
  gtk_spin_button_set_value (GTK_SPIN_BUTTON (s), v);
}

static void
set_pick (GtkWidget *dialog, const char *name, guint i)
{
  gtk_drop_down_set_selected (GTK_DROP_DOWN (twb_cluster_dialog_get_control (dialog, name)), i);
}

static const char *
dialog_text (GtkWidget *dialog, const char *name)
{
  return gtk_label_get_text (GTK_LABEL (twb_cluster_dialog_get_control (dialog, name)));
}

/* Opens the dialog through debugger.device::cluster. */
static GtkWidget *
open_dialog (TwbWindow *w)
{
  gtk_widget_activate_action (GTK_WIDGET (w), "debugger.device", "s", "cluster");
  twt_ui_pump ();
  GtkWidget *d = twb_window_get_cluster_dialog (w);
  g_assert_nonnull (d);
  return d;
}

static void
use (GtkWidget *dialog)
{
  GtkWidget *b = twb_cluster_dialog_get_control (dialog, "use");
  g_assert_true (gtk_widget_get_sensitive (b));
  g_signal_emit_by_name (b, "clicked");
  twt_ui_pump ();
}

static gboolean
action_enabled (TwbWindow *w, const char *name)
{
  return g_action_group_get_action_enabled (G_ACTION_GROUP (w->debugger_actions), name);
}

/* Run (F5) and wait for the processes to end. */
static void
run_and_wait (TwbWindow *w)
{
  gtk_widget_activate_action (GTK_WIDGET (w), "debugger.run", NULL);
  g_assert_true (twb_window_run_is_active (w));
  g_assert_true (twb_run_is_external (twb_window_get_run (w)));
  gint64 end = g_get_monotonic_time () + CLUSTER_TIMEOUT_S * G_USEC_PER_SEC;
  while (twb_window_run_is_active (w) && g_get_monotonic_time () < end)
    g_main_context_iteration (NULL, TRUE);
  g_assert_false (twb_window_run_is_active (w));
  twt_ui_pump ();
}

static gsize
points (TwbWindow *w, const char *run, const char *series)
{
  guint s = twb_metrics_find_series (w->metrics, run, series);
  return s == G_MAXUINT ? 0 : twb_metrics_series_len (w->metrics, s);
}

static TwbRunRecord *
record_of (TwbWindow *w, const char *id)
{
  g_autofree char *dir = twb_run_store_dir_for_id (twb_document_get_model_id (w->doc));
  g_autoptr (GPtrArray) runs = twb_run_store_list (dir);
  for (guint i = 0; i < runs->len; i++)
    {
      TwbRunRecord *r = g_ptr_array_index (runs, i);
      if (strcmp (r->id, id) == 0)
        return g_ptr_array_steal_index (runs, i);
    }
  return NULL;
}

static gboolean
row_with (TwbWindow *w, const char *id, const char *needle)
{
  const char *rid, *text;
  GdkRGBA c;
  for (guint i = 0; twb_dashboard_get_run_row (TWB_DASHBOARD (w->dashboard), i, &rid, &c, &text);
       i++)
    if (strcmp (rid, id) == 0 && strstr (text, needle))
      return TRUE;
  return FALSE;
}

/* The Runs list's check box of run id, under root. */
static GtkWidget *
run_check (GtkWidget *root, const char *id)
{
  if (GTK_IS_CHECK_BUTTON (root) && g_strcmp0 (g_object_get_data (G_OBJECT (root), "run"), id) == 0)
    return root;
  for (GtkWidget *c = gtk_widget_get_first_child (root); c; c = gtk_widget_get_next_sibling (c))
    {
      GtkWidget *found = run_check (c, id);
      if (found)
        return found;
    }
  return NULL;
}

/* The Training tab, tall enough for both rows of charts. */
static void
show_dashboard (TwbWindow *w)
{
  twb_window_show_panel (w, "training");
  gtk_paned_set_position (GTK_PANED (w->vpaned), 330);
  twt_ui_pump ();
}

static void
shot (TwbWindow *w, const char *name)
{
  g_autofree char *path = g_build_filename (shots_dir, name, NULL);
  twt_window_screenshot (GTK_WIDGET (w), path);
  g_test_message ("screenshot: %s", path);
}

/* The dialog: its inline check is the command line's, the strategies go
 * with data parallelism, stages show for pipelines only. */
static void
test_dialog (void)
{
  TwbWindow *w = open_spirals ();
  GtkWidget *d = open_dialog (w);
  g_assert_nonnull (strstr (dialog_text (d, "command"), "--ranks 2 --progress-json"));
  GtkWidget *stages = twb_cluster_dialog_get_control (d, "stages");
  GtkWidget *micro = twb_cluster_dialog_get_control (d, "micro-batches");
  g_assert_false (gtk_widget_get_visible (stages));
  g_assert_false (gtk_widget_get_visible (micro));
  /* Hybrid: 3 ranks are no multiple of 2 stages (twb_dist_args_check). */
  set_pick (d, "parallel", 2);
  set_spin (d, "ranks", 3);
  g_assert_true (gtk_widget_get_visible (stages));
  g_assert_true (gtk_widget_get_visible (micro));
  g_assert_false (gtk_widget_get_sensitive (twb_cluster_dialog_get_control (d, "compress")));
  g_assert_false (gtk_widget_get_sensitive (twb_cluster_dialog_get_control (d, "use")));
  g_assert_nonnull (strstr (dialog_text (d, "error"), "multiple of the 2 stages"));
  set_spin (d, "ranks", 4);
  g_assert_true (gtk_widget_get_sensitive (twb_cluster_dialog_get_control (d, "use")));
  g_assert_nonnull (strstr (dialog_text (d, "command"), "--parallel hybrid --stages 2"));
  /* Asynchronous updates send no gradients to compress. */
  set_pick (d, "parallel", 0);
  set_pick (d, "update", 1);
  g_assert_false (gtk_widget_get_sensitive (twb_cluster_dialog_get_control (d, "compress")));
  g_assert_nonnull (strstr (dialog_text (d, "command"), "--async 2"));
  set_pick (d, "update", 0);
  set_pick (d, "compress", 1);
  g_assert_true (gtk_widget_get_visible (twb_cluster_dialog_get_control (d, "topk")));
  g_assert_nonnull (strstr (dialog_text (d, "command"), "--compress topk:0.01"));
  /* More ranks than samples in a batch of 32. */
  set_spin (d, "ranks", 64);
  g_assert_false (gtk_widget_get_sensitive (twb_cluster_dialog_get_control (d, "use")));
  g_assert_nonnull (strstr (dialog_text (d, "error"), "cannot be split into 64"));
  set_spin (d, "ranks", 4);
  g_autofree char *path = g_build_filename (shots_dir, "cluster-dialog.png", NULL);
  twt_window_screenshot (d, path);
  g_test_message ("screenshot: %s", path);
  use (d);
  g_assert_null (twb_window_get_cluster_dialog (w));
  /* The debugger is one process's: stepping is greyed out, saying why. */
  g_assert_false (action_enabled (w, "step-op"));
  g_assert_false (action_enabled (w, "step-iteration"));
  g_assert_true (action_enabled (w, "run"));
  GtkWidget *first = gtk_widget_get_first_child (w->step_buttons);
  g_assert_nonnull (strstr (gtk_widget_get_tooltip_text (first), "one process"));
  /* CPU again: the debugger is back. */
  gtk_widget_activate_action (GTK_WIDGET (w), "debugger.device", "s", "cpu");
  g_assert_true (action_enabled (w, "step-op"));
  gtk_window_destroy (GTK_WINDOW (w));
  twt_ui_pump ();
}

/* The Simulated cluster device: its dialog (device, network, the
 * command), then a run of 8 virtual ranks in one process: rank 0's curves
 * with every step the simulated cluster's (virtual) time, and every rank's
 * compute time on the step-time chart. */
static void
test_simulated (void)
{
  TwbWindow *w = open_spirals ();
  gtk_widget_activate_action (GTK_WIDGET (w), "debugger.device", "s", "simulated");
  twt_ui_pump ();
  GtkWidget *d = twb_window_get_cluster_dialog (w);
  g_assert_nonnull (d);
  g_assert_cmpstr (gtk_window_get_title (GTK_WINDOW (d)), ==, "Train on a Simulated Cluster");
  g_assert_false (gtk_widget_get_visible (twb_cluster_dialog_get_control (d, "parallel")));
  g_assert_nonnull (strstr (dialog_text (d, "command"),
                            "twb simulate MODEL.json --mode train --ranks 8 --nodes 1 "
                            "--devices-per-node 8 --algo ring --progress-json"));
  set_pick (d, "sim-device", 1);
  set_pick (d, "sim-topology", 2);
  set_spin (d, "max-steps", 30);
  g_assert_nonnull (strstr (dialog_text (d, "command"),
                            "--device h200 --topology pcie+eth --algo ring --max-steps 30"));
  /* Asynchronous updates: the parameter server, as a real run's. */
  set_pick (d, "update", 1);
  g_assert_nonnull (strstr (dialog_text (d, "command"), "--async 2"));
  set_pick (d, "update", 0);
  set_spin (d, "ranks", 16);
  g_assert_nonnull (strstr (dialog_text (d, "command"), "--ranks 16 --nodes 2 --devices-per-node 8"));
  set_spin (d, "ranks", 8);
  g_autofree char *path = g_build_filename (shots_dir, "simulated-dialog.png", NULL);
  twt_window_screenshot (d, path);
  g_test_message ("screenshot: %s", path);
  use (d);
  g_assert_cmpstr (gtk_menu_button_get_label (GTK_MENU_BUTTON (w->device_button)), ==,
                   "Simulated: 8 × h200, pcie+eth, ring");
  run_and_wait (w);
  TwbRun *run = twb_window_get_run (w);
  g_assert_null (twb_run_get_error (run));
  g_assert_cmpint (twb_run_get_state (run), ==, TW_SESSION_FINISHED);
  const char *id = twb_run_get_id (run);
  g_assert_cmpuint (points (w, id, "loss"), ==, 30);
  g_assert_cmpuint (points (w, id, "test_accuracy"), ==, 1);
  g_assert_cmpuint (twb_run_get_n_ranks (run), ==, 8);
  /* Virtual time: every step the same, the time mode's prediction. */
  guint st = twb_metrics_find_series (w->metrics, id, "step_ms");
  g_assert_cmpuint (twb_metrics_series_len (w->metrics, st), ==, 30);
  double x0, y0, x, y;
  twb_metrics_get_point (w->metrics, st, 0, &x0, &y0);
  g_assert_cmpfloat (y0, >, 0);
  for (guint i = 1; i < 30; i++)
    {
      twb_metrics_get_point (w->metrics, st, i, &x, &y);
      g_assert_cmpfloat (y, ==, y0);
    }
  char *argv[] = { g_strdup (twb_program), g_strdup ("simulate"),
                              g_strdup (TWB_ASSETS_DIR "/models/spirals.json"),
                              g_strdup ("--ranks"), g_strdup ("8"), g_strdup ("--nodes"),
                              g_strdup ("1"), g_strdup ("--devices-per-node"), g_strdup ("8"),
                              g_strdup ("--device"), g_strdup ("h200"), g_strdup ("--topology"),
                              g_strdup ("pcie+eth"), g_strdup ("--batch"), g_strdup ("32"),
                              g_strdup ("--json"), NULL };
  g_autofree char *out = NULL;
  g_assert_true (g_spawn_sync (NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, NULL, NULL,
                               NULL));
  for (int i = 0; argv[i]; i++)
    g_free (argv[i]);
  const char *k = out ? strstr (out, "\"step_ms\":") : NULL;
  g_assert_nonnull (k);
  double want = g_ascii_strtod (k + strlen ("\"step_ms\":"), NULL);
  g_assert_cmpfloat (fabs (y0 - want), <=, 1e-9 * want);
  g_autoptr (TwbRunRecord) rec = record_of (w, id);
  g_assert_nonnull (rec);
  g_assert_cmpstr (rec->label, ==, "8 × h200, pcie+eth, ring");
  show_dashboard (w);
  shot (w, "simulated-run.png");
  gtk_widget_activate_action (GTK_WIDGET (w), "debugger.device", "s", "cpu");
  gtk_window_destroy (GTK_WINDOW (w));
  twt_ui_pump ();
}

/* Two ranks for a few steps, then a compressed run overlaid on it. */
static void
test_run_and_overlay (void)
{
  TwbWindow *w = open_spirals ();
  GtkWidget *d = open_dialog (w);
  set_spin (d, "ranks", 2);
  set_spin (d, "max-steps", 40);
  use (d);
  run_and_wait (w);
  TwbRun *run = twb_window_get_run (w);
  g_autofree char *sync_id = g_strdup (twb_run_get_id (run));
  g_assert_null (twb_run_get_error (run));
  g_assert_cmpint (twb_run_get_state (run), ==, TW_SESSION_FINISHED);
  /* Rank 0's curves, one point a step, and its per-step time. */
  g_assert_cmpuint (points (w, sync_id, "loss"), ==, 40);
  g_assert_cmpuint (points (w, sync_id, "step_ms"), ==, 40);
  g_assert_cmpuint (points (w, sync_id, "comm_bytes"), ==, 40);
  g_assert_cmpuint (points (w, sync_id, "test_accuracy"), ==, 1);
  /* Every rank's step time, a series each on the step-time chart, and rank
   * 0's gradient norms on the gradient chart as a local run's. */
  TwbDashboard *dash = TWB_DASHBOARD (w->dashboard);
  TwbPlot *step_plot = twb_dashboard_get_plot (dash, "step-time");
  TwbPlot *grad_plot = twb_dashboard_get_plot (dash, "grad-norm");
  GdkRGBA rc;
  g_assert_cmpuint (twb_run_get_n_ranks (run), ==, 2);
  for (int k = 0; k < 2; k++)
    {
      g_autofree char *name = g_strdup_printf ("step_ms:rank %d", k);
      g_assert_cmpuint (points (w, sync_id, name), ==, 40);
      g_assert_true (twb_plot_get_curve_colour (
        step_plot, twb_metrics_find_series (w->metrics, sync_id, name), &rc));
    }
  g_assert_cmpuint (twb_plot_n_curves (step_plot), ==, 3);   /* step_ms and 2 ranks */
  static const char *const params[] = { "fc1.weight", "fc1.bias", "fc2.weight",
                                        "fc2.bias",   "fc3.weight", "fc3.bias" };
  for (guint i = 0; i < G_N_ELEMENTS (params); i++)
    {
      g_autofree char *name = g_strconcat ("grad_norm:", params[i], NULL);
      g_assert_cmpuint (points (w, sync_id, name), ==, 40);
      g_assert_true (twb_plot_get_curve_colour (
        grad_plot, twb_metrics_find_series (w->metrics, sync_id, name), &rc));
    }
  g_autoptr (TwbRunRecord) rec = record_of (w, sync_id);
  g_assert_nonnull (rec);
  g_assert_cmpstr (rec->state, ==, "finished");
  g_assert_cmpstr (rec->label, ==, "2 ranks");
  g_assert_cmpint (rec->steps, ==, 40);
  g_assert_true (row_with (w, sync_id, "2 ranks · 40 steps"));
  show_dashboard (w);
  shot (w, "cluster-run.png");

  /* The same with top-k 1%, then the synchronous run ticked in the list. */
  d = open_dialog (w);
  set_pick (d, "compress", 1);
  g_assert_nonnull (strstr (dialog_text (d, "command"), "--compress topk:0.01"));
  use (d);
  run_and_wait (w);
  TwbRun *zrun = twb_window_get_run (w);
  const char *zid = twb_run_get_id (zrun);
  g_assert_cmpstr (zid, !=, sync_id);
  g_assert_cmpint (twb_run_get_state (zrun), ==, TW_SESSION_FINISHED);
  g_assert_cmpstr (twb_run_get_label (zrun), ==, "2 ranks, top-k 1%");
  g_assert_true (row_with (w, zid, "2 ranks, top-k 1% · 40 steps"));
  /* The last run left the charts when the new one began: ticked in the
   * Runs list, it is overlaid again from the store. */
  GtkWidget *check = run_check (w->dashboard, sync_id);
  g_assert_nonnull (check);
  g_assert_false (gtk_check_button_get_active (GTK_CHECK_BUTTON (check)));
  gtk_check_button_set_active (GTK_CHECK_BUTTON (check), TRUE);
  twt_ui_pump ();
  g_assert_cmpuint (points (w, sync_id, "loss"), ==, 40);
  g_assert_cmpuint (points (w, zid, "loss"), ==, 40);
  /* Top-k 1% sends far fewer bytes than the dense all-reduce. */
  double xs, ys, xz, yz;
  twb_metrics_get_point (w->metrics, twb_metrics_find_series (w->metrics, sync_id, "comm_bytes"),
                         5, &xs, &ys);
  twb_metrics_get_point (w->metrics, twb_metrics_find_series (w->metrics, zid, "comm_bytes"), 5,
                         &xz, &yz);
  g_assert_cmpfloat (yz, <, ys * 0.5);
  GdkRGBA c;
  TwbPlot *loss = twb_dashboard_get_plot (TWB_DASHBOARD (w->dashboard), "loss");
  g_assert_true (twb_plot_get_curve_colour (
    loss, twb_metrics_find_series (w->metrics, sync_id, "loss"), &c));
  g_assert_true (twb_plot_get_curve_colour (loss, twb_metrics_find_series (w->metrics, zid, "loss"),
                                            &c));
  twt_ui_pump ();
  shot (w, "cluster-overlay.png");
  gtk_window_destroy (GTK_WINDOW (w));
  twt_ui_pump ();
}

/* A rank twice as slow as the other (fed as --progress-json lines): its
 * curve turns the straggler's red, the others stay the run's dotted
 * shades, and the progress line names it. */
static void
test_straggler (void)
{
  TwbWindow *w = open_spirals ();
  TwbRun *run = twb_run_new_external ("run-9", "2 ranks", "twb train …",
                                      twb_document_get_model (w->doc), w->metrics);
  TwbDashboard *dash = TWB_DASHBOARD (w->dashboard);
  twb_dashboard_set_run (dash, run);
  for (int s = 1; s <= 30; s++)
    {
      g_autofree char *line = g_strdup_printf (
        "{\"event\":\"metrics\",\"step\":%d,\"epoch\":0,\"loss\":%g,\"accuracy\":0.5,"
        "\"lr\":0.01,\"step_ms\":%g,\"samples_per_s\":900,\"comm_bytes\":1000,"
        "\"total_steps\":30,\"rank_step_ms\":[%g,%g]}",
        s, 1.0 / s, 24.0 + (s % 3), 10.0 + (s % 4), 21.0 + (s % 5));
      g_assert_true (twb_run_feed_line (run, line));
      twb_dashboard_update (dash);
    }
  twt_ui_pump ();
  double ratio;
  g_assert_cmpint (twb_run_get_straggler (run, &ratio), ==, 1);
  g_assert_cmpfloat (ratio, >, 1.8);
  TwbPlot *p = twb_dashboard_get_plot (dash, "step-time");
  GdkRGBA c0, c1, mine;
  g_assert_true (twb_plot_get_curve_colour (
    p, twb_metrics_find_series (w->metrics, "run-9", "step_ms:rank 0"), &c0));
  g_assert_true (twb_plot_get_curve_colour (
    p, twb_metrics_find_series (w->metrics, "run-9", "step_ms:rank 1"), &c1));
  twb_dashboard_run_colour ("run-9", &mine);
  g_assert_cmpfloat (c1.red, >, 0.8);
  g_assert_cmpfloat (c1.green, <, 0.2);
  g_assert_false (gdk_rgba_equal (&c0, &c1));
  g_assert_nonnull (strstr (twb_dashboard_get_progress_text (dash), "rank 1 slowest"));
  show_dashboard (w);
  shot (w, "cluster-straggler.png");
  twb_run_end_external (run, TW_SESSION_STOPPED, NULL);
  twb_dashboard_set_run (dash, NULL);
  g_object_unref (run);
  gtk_window_destroy (GTK_WINDOW (w));
  twt_ui_pump ();
}

/* Select node id and type text into its inspector's stage field, as a
 * user does (the text, then Enter). */
static void
type_stage (TwbWindow *w, const char *id, const char *text)
{
  const char *ids[] = { id, NULL };
  twb_document_select (w->doc, ids, FALSE);
  twt_ui_pump ();
  GtkWidget *e = twb_inspector_get_attr_widget (w->inspector, "stage");
  g_assert_true (GTK_IS_ENTRY (e));
  gtk_widget_grab_focus (e);
  gtk_editable_set_text (GTK_EDITABLE (e), text);
  g_signal_emit_by_name (e, "activate");
  twt_ui_pump ();
}

static int
stage_of (TwbWindow *w, const char *id, GdkRGBA *colour)
{
  int s = -1;
  twb_graph_canvas_get_stage_colour (w->canvas, id, &s, colour);
  return s;
}

static const TwbSceneNode *
scene_node (TwbWindow *w, const char *id)
{
  const TwbGraphScene *s = twb_graph_canvas_get_scene (w->canvas);
  int i = twb_graph_scene_find (s, id);
  g_assert_cmpint (i, >=, 0);
  return &s->nodes[i];
}

/* Stages typed in the inspector paint the canvas (a band per stage's
 * colour, a legend); a stage naming none is an error on its node; a
 * pipeline chosen in the Cluster dialog places the rest automatically. */
static void
test_stages (void)
{
  TwbWindow *w = open_spirals ();
  g_assert_cmpint (twb_graph_canvas_get_n_stages (w->canvas), ==, 0);
  g_assert_cmpint (stage_of (w, "fc1", NULL), ==, -1);
  /* Inputs have no stage: no field. */
  const char *x[] = { "x", NULL };
  twb_document_select (w->doc, x, FALSE);
  twt_ui_pump ();
  g_assert_null (twb_inspector_get_attr_widget (w->inspector, "stage"));

  /* fc2 in stage 1: it and what follows it are stage 1, fc1 and tanh1 stage 0. */
  type_stage (w, "fc2", "1");
  g_assert_null (twb_inspector_get_attr_error (w->inspector, "stage"));
  g_assert_cmpint (twb_graph_canvas_get_n_stages (w->canvas), ==, 2);
  GdkRGBA c0, c1, c;
  g_assert_cmpint (stage_of (w, "fc1", &c0), ==, 0);
  g_assert_cmpint (stage_of (w, "tanh1", &c), ==, 0);
  g_assert_true (gdk_rgba_equal (&c, &c0));
  g_assert_cmpint (stage_of (w, "fc2", &c1), ==, 1);
  g_assert_false (gdk_rgba_equal (&c0, &c1));
  g_assert_cmpint (stage_of (w, "fc3", &c), ==, 1);
  g_assert_true (gdk_rgba_equal (&c, &c1));
  g_assert_cmpint (stage_of (w, "loss", NULL), ==, 1);
  g_assert_cmpint (stage_of (w, "x", NULL), ==, -1);
  g_assert_cmpint (twb_document_get_node_stage (w->doc, "tanh2"), ==, 1);
  /* Saved with the model. */
  const tw_attr_value *v = tw_attrs_lookup (tw_graph_find (twb_document_get_graph (w->doc), "fc2")->attrs,
                                            "stage");
  g_assert_true (v && v->type == TW_ATTR_INT && v->i == 1);
  /* Not a number: refused under the field, as any attribute. */
  type_stage (w, "fc3", "two");
  g_assert_nonnull (strstr (twb_inspector_get_attr_error (w->inspector, "stage"), "a whole number"));
  g_assert_cmpint (twb_graph_canvas_get_n_stages (w->canvas), ==, 2);
  /* A negative stage names none: the engine's error, on the node, in the
   * Issues and the status, and no stages painted. */
  type_stage (w, "fc3", "-1");
  const char *err = twb_inspector_get_attr_error (w->inspector, "stage");
  g_assert_nonnull (err);
  g_assert_nonnull (strstr (err, "names no stage"));
  g_assert_nonnull (scene_node (w, "fc3")->error);
  g_assert_cmpint (twb_window_count_issues (w), ==, 1);
  g_assert_cmpint (twb_graph_canvas_get_n_stages (w->canvas), ==, 0);
  shot (w, "stages-error.png");
  type_stage (w, "fc3", "");
  g_assert_null (twb_inspector_get_attr_error (w->inspector, "stage"));
  g_assert_null (scene_node (w, "fc3")->error);
  g_assert_cmpint (twb_window_count_issues (w), ==, 0);
  g_assert_cmpint (twb_graph_canvas_get_n_stages (w->canvas), ==, 2);
  shot (w, "stages-typed.png");

  /* A pipeline of 2 ranks in the Cluster dialog: 2 stages, so a stage 2
   * names none (as twb train --parallel pipeline --ranks 2 says). */
  GtkWidget *d = open_dialog (w);
  set_pick (d, "parallel", 1);
  set_spin (d, "ranks", 2);
  use (d);
  g_assert_cmpint (twb_document_get_pipeline_stages (w->doc), ==, 2);
  type_stage (w, "tanh2", "2");
  err = twb_inspector_get_attr_error (w->inspector, "stage");
  g_assert_nonnull (err);
  g_assert_nonnull (strstr (err, "stage 2 names no stage (the pipeline has 2: 0 to 1)"));
  g_assert_nonnull (strstr (scene_node (w, "tanh2")->error, "names no stage"));
  type_stage (w, "tanh2", "");
  type_stage (w, "fc2", "");
  g_assert_null (twb_inspector_get_attr_error (w->inspector, "stage"));
  /* No stage attributes: the engine's automatic placement (equal FLOPs). */
  g_assert_cmpint (twb_graph_canvas_get_n_stages (w->canvas), ==, 2);
  g_assert_cmpint (stage_of (w, "fc1", NULL), ==, 0);
  g_assert_cmpint (stage_of (w, "loss", NULL), ==, 1);
  twb_document_clear_selection (w->doc);
  twt_ui_pump ();
  shot (w, "stages-auto.png");
  /* CPU again: nothing asked, nothing painted. */
  gtk_widget_activate_action (GTK_WIDGET (w), "debugger.device", "s", "cpu");
  twt_ui_pump ();
  g_assert_cmpint (twb_graph_canvas_get_n_stages (w->canvas), ==, 0);
  gtk_window_destroy (GTK_WINDOW (w));
  twt_ui_pump ();
}

static const char *
live_checks_of (TwbWindow *w, const char *id)
{
  const char *ids[] = { id, NULL };
  twb_document_select (w->doc, ids, FALSE);
  twt_ui_pump ();
  return gtk_label_get_text (GTK_LABEL (twb_inspector_get_live_checks (w->inspector)));
}

/* The inspector names a parameter's gradient bucket: the engine's
 * prediction before a data-parallel run, the run's final layout after.
 * Hidden layers of 256 and buckets of 0.1 MB, filled (as DDP's) until they
 * hold 0.1 MB or more: fc3's and fc2's parameters (265 kB, fc2.weight
 * closing it) in the first, fc1's in the second. */
static void
test_buckets (void)
{
  TwbWindow *w = open_spirals ();
  g_autoptr (GError) error = NULL;
  g_assert_true (twb_document_set_attr_text (w->doc, "fc1", "out_features", "256", &error));
  g_assert_true (twb_document_set_attr_text (w->doc, "fc2", "out_features", "256", &error));
  twt_ui_pump ();
  /* The CPU trains in one process: no buckets. */
  g_assert_null (strstr (live_checks_of (w, "fc2"), "bucket"));
  GtkWidget *d = open_dialog (w);
  set_spin (d, "ranks", 2);
  set_spin (d, "max-steps", 5);
  set_spin (d, "bucket", 0.1);
  g_assert_nonnull (strstr (dialog_text (d, "command"), "--bucket-mb 0.1"));
  use (d);
  const char *t = live_checks_of (w, "fc2");
  g_assert_nonnull (strstr (t, "gradient buckets (predicted for the first step, 0.1 MB):"));
  if (strstr (t, "bucket 1 of 2, 265 kB, all-reduced first") == NULL)
    g_error ("fc2's live checks: %s", t);
  g_assert_nonnull (strstr (live_checks_of (w, "fc3"), "bucket 1 of 2"));
  t = live_checks_of (w, "fc1");
  if (strstr (t, "bucket 2 of 2, 3.07 kB, all-reduced after fc3's and fc2's") == NULL)
    g_error ("fc1's live checks: %s", t);
  g_assert_null (strstr (live_checks_of (w, "tanh1"), "bucket"));
  run_and_wait (w);
  TwbRun *run = twb_window_get_run (w);
  g_assert_cmpint (twb_run_get_state (run), ==, TW_SESSION_FINISHED);
  double mb = 0;
  const tw_bucket_layout *l = twb_run_get_buckets (run, &mb);
  g_assert_nonnull (l);
  g_assert_cmpfloat (mb, ==, 0.1);
  g_assert_cmpint (l->n, ==, 2);
  g_assert_cmpint (tw_bucket_layout_find (l, "fc2.weight", NULL), >=, 0);
  t = live_checks_of (w, "fc2");
  g_assert_nonnull (strstr (t, "gradient buckets (as the last run packed them, 0.1 MB):"));
  g_assert_nonnull (strstr (t, "bucket"));
  g_assert_nonnull (strstr (t, " of 2, "));
  shot (w, "cluster-buckets.png");
  /* An edit that changes the parameters: the prediction again. */
  g_assert_true (twb_document_set_attr_text (w->doc, "fc3", "bias", "false", &error));
  twt_ui_pump ();
  g_assert_nonnull (strstr (live_checks_of (w, "fc2"), "predicted for the first step"));
  gtk_window_destroy (GTK_WINDOW (w));
  twt_ui_pump ();
}

/* The run's processes: root and its descendants, zombies aside (a
 * re-parented mpirun's exit may wait for a reaper). */
static GArray *
tree_of (int root)
{
  g_autoptr (GArray) pid = g_array_new (FALSE, FALSE, sizeof (int));
  g_autoptr (GArray) ppid = g_array_new (FALSE, FALSE, sizeof (int));
  g_autoptr (GDir) proc = g_dir_open ("/proc", 0, NULL);
  const char *name;
  while (proc && (name = g_dir_read_name (proc)))
    {
      if (!g_ascii_isdigit (name[0]))
        continue;
      g_autofree char *path = g_build_filename ("/proc", name, "stat", NULL);
      g_autofree char *stat = NULL;
      if (!g_file_get_contents (path, &stat, NULL, NULL))
        continue;
      const char *close = strrchr (stat, ')');
      char state = 0;
      int parent = 0, pgrp = 0;
      if (close && sscanf (close + 1, " %c %d %d", &state, &parent, &pgrp) == 3 && state != 'Z')
        {
          int p = atoi (name);
          g_array_append_val (pid, p);
          g_array_append_val (ppid, parent);
        }
    }
  GArray *tree = g_array_new (FALSE, FALSE, sizeof (int));
  g_array_append_val (tree, root);
  for (guint k = 0; k < tree->len; k++)
    for (guint i = 0; i < pid->len; i++)
      if (g_array_index (ppid, int, i) == g_array_index (tree, int, k))
        g_array_append_val (tree, g_array_index (pid, int, i));
  return tree;
}

/* How many of pids are alive (not zombies). */
static int
alive (GArray *pids)
{
  int n = 0;
  for (guint i = 0; i < pids->len; i++)
    {
      g_autofree char *path = g_strdup_printf ("/proc/%d/stat", g_array_index (pids, int, i));
      g_autofree char *stat = NULL;
      const char *close;
      char state = 0;
      if (g_file_get_contents (path, &stat, NULL, NULL) && (close = strrchr (stat, ')'))
          && sscanf (close + 1, " %c", &state) == 1 && state != 'Z')
        n++;
    }
  return n;
}

static void
test_stop (void)
{
  TwbWindow *w = open_spirals ();
  GtkWidget *d = open_dialog (w);
  set_spin (d, "ranks", 2);
  set_spin (d, "max-steps", 10000000);   /* far longer than the test */
  use (d);
  gtk_widget_activate_action (GTK_WIDGET (w), "debugger.run", NULL);
  int pgid = twb_window_cluster_get_pgid (w);
  g_assert_cmpint (pgid, >, 0);
  TwbRun *run = twb_window_get_run (w);
  TwbRunProgress p = { 0 };
  gint64 end = g_get_monotonic_time () + CLUSTER_TIMEOUT_S * G_USEC_PER_SEC;
  while (p.step < 20 && g_get_monotonic_time () < end)
    {
      g_main_context_iteration (NULL, TRUE);
      twb_run_get_progress (run, &p);
    }
  g_assert_cmpint (p.step, >=, 20);
  /* Pausing is one process's: greyed out. */
  g_assert_false (action_enabled (w, "pause"));
  g_assert_true (action_enabled (w, "stop"));
  /* The launcher, mpirun and 2 ranks (Open MPI 4 starts no orted for a
   * local job). */
  g_autoptr (GArray) tree = tree_of (pgid);
  for (guint i = 0; i < tree->len; i++)
    {
      g_autofree char *path = g_strdup_printf ("/proc/%d/comm", g_array_index (tree, int, i));
      g_autofree char *comm = NULL;
      g_file_get_contents (path, &comm, NULL, NULL);
      g_test_message ("process %d: %s", g_array_index (tree, int, i), comm ? g_strstrip (comm) : "?");
    }
  g_assert_cmpint (alive (tree), >=, 4);
  gtk_widget_activate_action (GTK_WIDGET (w), "debugger.stop", NULL);
  while (twb_window_run_is_active (w) && g_get_monotonic_time () < end)
    g_main_context_iteration (NULL, TRUE);
  g_assert_cmpint (twb_run_get_state (run), ==, TW_SESSION_STOPPED);
  /* Every process of the run has gone. */
  while (alive (tree) > 0 && g_get_monotonic_time () < end)
    g_usleep (20000);
  g_assert_cmpint (alive (tree), ==, 0);
  g_autoptr (TwbRunRecord) rec = record_of (w, twb_run_get_id (run));
  g_assert_nonnull (rec);
  g_assert_cmpstr (rec->state, ==, "stopped");
  gtk_window_destroy (GTK_WINDOW (w));
  twt_ui_pump ();
}

/* A run whose ranks fail: their lines in the notice area and the run's
 * error. */
static void
test_failure_shown (void)
{
  TwbWindow *w = open_spirals ();
  GtkWidget *d = open_dialog (w);
  set_spin (d, "ranks", 2);
  set_spin (d, "max-steps", 5);
  use (d);
  /* The weights file goes to every rank; it is not one. */
  g_autofree char *bad = g_build_filename (g_get_tmp_dir (), "twb-cluster-bad.safetensors", NULL);
  g_assert_true (g_file_set_contents (bad, "not safetensors", -1, NULL));
  g_free (w->init_weights);
  w->init_weights = g_strdup (bad);
  run_and_wait (w);
  TwbRun *run = twb_window_get_run (w);
  g_assert_cmpint (twb_run_get_state (run), ==, TW_SESSION_FAILED);
  g_assert_nonnull (twb_run_get_error (run));
  g_test_message ("error: %s", twb_run_get_error (run));
  g_assert_nonnull (strstr (twb_run_get_error (run), "twb-cluster-bad.safetensors"));
  g_assert_nonnull (strstr (twb_window_get_toast (w), "twb-cluster-bad.safetensors"));
  g_unlink (bad);
  shot (w, "cluster-failed.png");
  gtk_window_destroy (GTK_WINDOW (w));
  twt_ui_pump ();
}

/* twb profile --ranks 2's merged trace: a row per rank from
 * tw_trace_rank_stats, and a rank picked showing its lanes alone. */
static void
test_ranks_page (void)
{
  g_autofree char *dir = g_dir_make_tmp ("twb-ranks-XXXXXX", NULL);
  g_autofree char *trace = g_build_filename (dir, "two-ranks.json.gz", NULL);
  const char *argv[] = { twb_program, "profile", TWB_ASSETS_DIR "/models/spirals.json", "--steps",
                         "6", "--trace", trace, "--ranks", "2", NULL };
  int status = -1;
  g_autofree char *err = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL,
                               NULL, NULL, &err, &status, &error));
  g_assert_no_error (error);
  if (status != 0)
    g_test_message ("twb profile: %s", err);
  g_assert_cmpint (status, ==, 0);

  TwbWindow *w = open_spirals ();
  twb_window_open_trace (w, trace);
  gint64 end = g_get_monotonic_time () + CLUSTER_TIMEOUT_S * G_USEC_PER_SEC;
  while (twb_window_is_busy (w) && g_get_monotonic_time () < end)
    g_main_context_iteration (NULL, TRUE);
  TwbProfilerPanel *panel = TWB_PROFILER_PANEL (w->profiler_panel);
  g_assert_cmpuint (twb_profiler_panel_n_traces (panel), ==, 1);
  int n_ranks = 0;
  g_assert_true (tw_trace_is_multi_rank (twb_profiler_panel_get_trace (panel, 0), &n_ranks));
  g_assert_cmpint (n_ranks, ==, 2);
  twb_window_show_panel (w, "profiler");
  twb_profiler_panel_set_page (panel, "ranks");
  twt_ui_pump ();
  TwbStatTable *t = TWB_STAT_TABLE (twb_profiler_panel_get_table (panel, "ranks"));
  g_assert_cmpuint (twb_stat_table_n_rows (t), ==, 2);
  g_assert_cmpstr (twb_stat_table_get_title (t, 5), ==, "Exposed");
  g_assert_cmpstr (twb_stat_table_get_title (t, 9), ==, "Median step");
  g_autoptr (GArray) stats = tw_trace_rank_stats (twb_profiler_panel_get_trace (panel, 0),
                                                  TW_STRAGGLER_DEFAULT_PCT);
  for (guint row = 0; row < 2; row++)
    {
      const tw_rank_stats *r = &g_array_index (stats, tw_rank_stats, row);
      g_assert_cmpfloat (twb_stat_table_get_value (t, row, 0), ==, r->rank);
      g_assert_cmpfloat (twb_stat_table_get_value (t, row, 3), ==, r->compute_ns);
      g_assert_cmpfloat (twb_stat_table_get_value (t, row, 4), ==, r->comm_ns);
      g_assert_cmpfloat (twb_stat_table_get_value (t, row, 5), ==, r->exposed_ns);
      g_assert_cmpfloat (twb_stat_table_get_value (t, row, 9), ==, r->step_median_ns);
      g_assert_cmpfloat (r->compute_ns, >, 0);
      g_assert_cmpfloat (r->comm_ns, >, 0);
      g_assert_cmpuint (r->n_steps, ==, 6);
    }
  g_autofree char *path = g_build_filename (shots_dir, "cluster-ranks-page.png", NULL);
  twt_window_screenshot (GTK_WIDGET (w), path);
  g_test_message ("screenshot: %s", path);
  /* Rank 1 picked: its lanes alone; again: all. */
  TwbTimeline *tl = twb_profiler_panel_get_timeline (panel);
  g_signal_emit_by_name (t, "row-activated", 1u);
  g_assert_true (twb_timeline_get_collapsed (tl, 0, 0));
  g_assert_false (twb_timeline_get_collapsed (tl, 0, 1));
  twt_ui_pump ();
  g_autofree char *path2 = g_build_filename (shots_dir, "cluster-rank-1-alone.png", NULL);
  twt_window_screenshot (GTK_WIDGET (w), path2);
  g_signal_emit_by_name (t, "row-activated", 1u);
  g_assert_false (twb_timeline_get_collapsed (tl, 0, 0));
  g_assert_false (twb_timeline_get_collapsed (tl, 0, 1));
  gtk_window_destroy (GTK_WINDOW (w));
  twt_ui_pump ();
  g_unlink (trace);
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  g_setenv ("TWB_COLOR_SCHEME", "light", FALSE);
  g_setenv ("OMPI_MCA_rmaps_base_oversubscribe", "1", FALSE);
  g_autofree char *home = twt_ui_private_home ("cluster");
  const char *env = g_getenv ("TWB_TEST_SHOTS");
  shots_dir = env ? g_strdup (env) : g_build_filename (home, "shots", NULL);
  g_mkdir_with_parents (shots_dir, 0700);
  app = twt_window_test_init (&argc, &argv, 0);
  if (app == NULL)
    return 0;
  for (int i = 1; i < argc; i++)
    if (argv[i][0] != '-')
      twb_program = g_canonicalize_filename (argv[i], NULL);
  if (twb_program)
    g_setenv ("TWB_PROGRAM", twb_program, TRUE);
  g_test_add_func ("/ui/cluster/dialog", test_dialog);
  g_test_add_func ("/ui/cluster/straggler", test_straggler);
  g_test_add_func ("/ui/cluster/stages", test_stages);
  if (twb_program)
    g_test_add_func ("/ui/cluster/simulated", test_simulated);
  g_autofree char *mpirun = g_find_program_in_path ("mpirun");
  if (mpirun && twb_program)
    {
      g_test_add_func ("/ui/cluster/run-and-overlay", test_run_and_overlay);
      g_test_add_func ("/ui/cluster/buckets", test_buckets);
      g_test_add_func ("/ui/cluster/stop", test_stop);
      g_test_add_func ("/ui/cluster/failure-shown", test_failure_shown);
      g_test_add_func ("/ui/cluster/ranks-page", test_ranks_page);
    }
  int st = g_test_run ();
  g_object_unref (app);
  return st;
}
