/* test-whatif.c — the What if tab under Xvfb: the application opens a
 * model as `twb MODEL.json` does, the tab is chosen with the pointer
 * (xdotool on its switcher button), ranks 8 and 64 are set through
 * win.whatif-ranks and Simulate is clicked; the table's two rows give the
 * step times tw_sim_dp_step gives here directly and that `twb simulate
 * --json` prints for the command line the page shows (argv: the twb
 * program, optional).  Then the problems the page reports instead of
 * crashing: ranks that are not whole nodes, a list that does not parse,
 * an empty document.  Screenshots are saved for a person to look at
 * (TWB_TEST_SHOTS or a temporary folder). */
#include "ui-test.h"
#include "ui-xdo.h"
#include "window-test.h"
#include "ui/twb-plot.h"
#include "ui/twb-whatif-bars.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

static TwbApplication *app;
static char *shots_dir, *twb_program;

/* A sweep of two configurations of the MLP takes milliseconds; 60 s only
 * ends a test that hangs (an ASan build on a shared machine). */
#define SWEEP_TIMEOUT_S 60

/* The step times are the same computation in two processes (or the
 * page's worker and this thread): equal but for printing, which
 * `twb simulate --json` does with 17 significant digits. */
#define STEP_RTOL 1e-6

static void
shot (TwbWindow *w, const char *name)
{
  g_autofree char *path = g_build_filename (shots_dir, name, NULL);
  twt_window_screenshot (GTK_WIDGET (w), path);
  g_test_message ("screenshot: %s", path);
}

static void
wait_sweep (TwbWindow *w)
{
  twt_ui_pump ();
  gint64 end = g_get_monotonic_time () + SWEEP_TIMEOUT_S * G_USEC_PER_SEC;
  while (twb_window_whatif_busy (w) && g_get_monotonic_time () < end)
    g_main_context_iteration (NULL, TRUE);
  g_assert_false (twb_window_whatif_busy (w));
  twt_ui_pump ();
}

static const char *
message_of (TwbWindow *w)
{
  GtkWidget *m = twb_window_whatif_widget (w, "message");
  return gtk_widget_get_visible (m) ? gtk_label_get_text (GTK_LABEL (m)) : "";
}

/* tw_sim_dp_step at r ranks of h100s on nvlink+ib nodes of 8, ring, 25 MB
 * buckets, the recipe's batch a rank: what the page's defaults ask. */
static double
direct_step (const tw_model *m, int r)
{
  g_autoptr (GError) error = NULL;
  tw_device_profile d;
  g_assert_true (tw_device_profile_named ("h100", &d, &error));
  g_autoptr (tw_topo) t = tw_topo_cluster (r <= 8 ? 1 : r / 8, r <= 8 ? r : 8, "nvlink+ib",
                                           &error);
  g_assert_no_error (error);
  tw_sim_dp_options o;
  tw_sim_dp_options_init (&o);
  o.ranks = r;
  o.algo = TW_ALGO_RING;
  o.bucket_mb = 25;
  tw_sim_dp_result res;
  g_assert_true (tw_sim_dp_step (m->graph, m->recipe.batch_size * r, &d, t, &o, &res, &error));
  g_assert_no_error (error);
  return res.step_s;
}

/* The page's command line run (its first word the twb program): each
 * configuration's step_ms. */
static GArray *
cli_steps (const char *command)
{
  g_autoptr (GError) error = NULL;
  g_auto (GStrv) argv = NULL;
  g_assert_true (g_shell_parse_argv (command, NULL, &argv, &error));
  g_assert_cmpstr (argv[0], ==, "twb");
  g_free (argv[0]);
  argv[0] = g_strdup (twb_program);
  GStrvBuilder *b = g_strv_builder_new ();
  g_strv_builder_addv (b, (const char **) argv);
  g_strv_builder_add (b, "--json");
  g_auto (GStrv) full = g_strv_builder_end (b);
  g_strv_builder_unref (b);
  g_autofree char *out = NULL;
  int status = -1;
  g_assert_true (g_spawn_sync (NULL, full, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out,
                               NULL, &status, &error));
  g_assert_no_error (error);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_autoptr (JsonParser) p = json_parser_new ();
  g_assert_true (json_parser_load_from_data (p, out, -1, &error));
  JsonObject *root = json_node_get_object (json_parser_get_root (p));
  JsonArray *configs = json_object_get_array_member (root, "configs");
  GArray *steps = g_array_new (FALSE, FALSE, sizeof (double));
  for (guint i = 0; i < json_array_get_length (configs); i++)
    {
      double ms = json_object_get_double_member (json_array_get_object_element (configs, i),
                                                 "step_ms");
      g_array_append_val (steps, ms);
    }
  return steps;
}

static void
test_sweep (void)
{
  if (!twt_xdo_ready ())
    {
      g_test_skip ("no xdotool or no X11");
      return;
    }
  const char *model = TWB_ASSETS_DIR "/models/mlp.json";
  /* As `twb mlp.json` hands it to the application. */
  g_autoptr (GFile) f = g_file_new_for_path (model);
  GFile *files[] = { f };
  g_application_open (G_APPLICATION (app), files, 1, "");
  twt_ui_pump ();
  TwbWindow *w = TWB_WINDOW (gtk_application_get_active_window (GTK_APPLICATION (app)));
  g_assert_nonnull (w);
  g_assert_cmpstr (twb_document_get_path (twb_window_get_document (w)), ==, model);
  twt_xdo_place (GTK_WINDOW (w), 1280, 1000);
  gtk_paned_set_position (GTK_PANED (w->vpaned), 420);
  twt_ui_pump ();

  /* The tab, by the pointer on its switcher button. */
  GtkWidget *tab = twt_find_label (GTK_WIDGET (w), "What if");
  g_assert_nonnull (tab);
  twt_xdo_click (tab, -1, -1, 1);
  g_assert_cmpstr (twb_window_get_panel (w), ==, "whatif");

  act_s (w, "win.whatif-ranks", "8, 64");
  GtkWidget *command = twb_window_whatif_widget (w, "command");
  g_autofree char *want_cmd = g_strdup_printf (
    "twb simulate %s --sweep ranks=8,64 --topology nvlink+ib --device h100 --algo ring "
    "--bucket-mb 25", model);
  g_assert_cmpstr (gtk_label_get_text (GTK_LABEL (command)), ==, want_cmd);
  g_assert_true (gtk_label_get_selectable (GTK_LABEL (command)));

  twt_xdo_click (twb_window_whatif_widget (w, "simulate"), -1, -1, 1);
  wait_sweep (w);
  g_assert_cmpstr (message_of (w), ==, "2 configurations on h100: done.");

  GtkColumnView *table = GTK_COLUMN_VIEW (twb_window_whatif_widget (w, "table"));
  GListModel *rows = G_LIST_MODEL (gtk_column_view_get_model (table));
  g_assert_cmpuint (g_list_model_get_n_items (rows), ==, 2);
  const TwbWhatifResult *res = twb_window_whatif_result (w);
  g_assert_nonnull (res);
  g_assert_cmpuint (res->rows->len, ==, 2);
  tw_model *m = twb_document_get_model (twb_window_get_document (w));
  g_autoptr (GArray) cli = twb_program ? cli_steps (gtk_label_get_text (GTK_LABEL (command)))
                                       : NULL;
  if (cli)
    g_assert_cmpuint (cli->len, ==, 2);
  const int ranks[] = { 8, 64 };
  for (guint i = 0; i < 2; i++)
    {
      const TwbWhatifRow *row = &g_array_index (res->rows, TwbWhatifRow, i);
      g_assert_cmpint (row->ranks, ==, ranks[i]);
      double want = direct_step (m, ranks[i]);
      g_assert_cmpfloat (fabs (row->r.step_s - want), <=, STEP_RTOL * want);
      if (cli)
        g_assert_cmpfloat (fabs (row->r.step_s * 1e3 - g_array_index (cli, double, i)), <=,
                           STEP_RTOL * want * 1e3);
      /* The table shows it. */
      g_autofree char *cell = twb_window_whatif_cell_text (w, i, 1);
      g_autofree char *shown = g_strdup_printf ("%.3f", want * 1e3);
      g_assert_cmpstr (cell, ==, shown);
      g_assert_true (row->efficiency > 0 && row->efficiency <= 1 + 1e-9);
    }
  g_assert_cmpuint (twb_whatif_bars_get_n (TWB_WHATIF_BARS (twb_window_whatif_widget (w, "bars"))),
                    ==, 2);
  TwbPlot *plot = TWB_PLOT (twb_window_whatif_widget (w, "plot"));
  g_assert_cmpuint (twb_metrics_series_len (twb_plot_get_metrics (plot), 0), ==, 2);
  shot (w, "whatif-8-64.png");

  /* The default sweep up to 1,024 ranks, a pcie+eth cluster, hierarchical. */
  act_s (w, "win.whatif-ranks", "8, 64, 512, 1024");
  gtk_drop_down_set_selected (GTK_DROP_DOWN (twb_window_whatif_widget (w, "topology")), 2);
  gtk_drop_down_set_selected (GTK_DROP_DOWN (twb_window_whatif_widget (w, "algo")), 3);
  act (w, "win.whatif-run");
  wait_sweep (w);
  g_assert_cmpuint (twb_window_whatif_result (w)->rows->len, ==, 4);
  g_assert_null (twb_window_whatif_result (w)->error);
  shot (w, "whatif-pcie-hier.png");
  /* Row 1 (64 ranks) as a trace of its step: on the Profiler tab, a
   * process a rank written (the first few of the identical ranks). */
  g_action_group_activate_action (G_ACTION_GROUP (w), "whatif-open-trace",
                                  g_variant_new_uint32 (1));
  twt_ui_pump ();
  const char *tp = twb_window_whatif_last_trace (w);
  g_assert_nonnull (tp);
  g_assert_nonnull (strstr (tp, "64-ranks-pcie+eth-hier"));
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (tp, &text, NULL, NULL));
  g_assert_nonnull (strstr (text, "\"rank 0\""));
  g_assert_nonnull (strstr (text, "summarised"));
  g_assert_cmpstr (twb_window_get_panel (w), ==, "profiler");
  shot (w, "whatif-trace.png");
  twb_window_show_panel (w, "whatif");
  twt_ui_pump ();
  /* A smaller window: the controls scroll sideways, the legend wraps. */
  gtk_window_set_default_size (GTK_WINDOW (w), 1024, 768);
  twt_xdo_place (GTK_WINDOW (w), 1024, 768);
  gtk_paned_set_position (GTK_PANED (w->vpaned), 260);
  twt_ui_pump ();
  shot (w, "whatif-small.png");

  /* Problems named on the page. */
  act_s (w, "win.whatif-ranks", "8, 12");
  act (w, "win.whatif-run");
  wait_sweep (w);
  g_assert_nonnull (strstr (message_of (w), "12 ranks are not whole nodes of 8 devices"));
  g_assert_cmpuint (twb_window_whatif_result (w)->rows->len, ==, 1);
  shot (w, "whatif-error.png");
  act_s (w, "win.whatif-ranks", "8, lots");
  act (w, "win.whatif-run");
  g_assert_nonnull (strstr (message_of (w), "\"lots\" is not a rank count"));
  g_assert_true (gtk_widget_has_css_class (twb_window_whatif_widget (w, "message"), "error"));

  /* A graph that does not infer: fc3 without its input. */
  g_autoptr (GError) error = NULL;
  TwbDocument *doc = twb_window_get_document (w);
  g_assert_true (twb_document_disconnect (doc, "fc3", 0, &error));
  g_assert_no_error (error);
  twt_ui_pump ();
  g_assert_nonnull (find_label (GTK_WIDGET (w), "Command line (of the saved file"));
  act_s (w, "win.whatif-ranks", "8");
  act (w, "win.whatif-run");
  wait_sweep (w);
  g_test_message ("no input: %s", message_of (w));
  g_assert_nonnull (strstr (message_of (w), "fc3"));
  g_assert_cmpuint (twb_window_whatif_result (w)->rows->len, ==, 0);
  g_assert_cmpuint (g_list_model_get_n_items (rows), ==, 0);
  shot (w, "whatif-no-infer.png");
  g_assert_true (twb_document_undo (doc));
  twb_window_close_now (w);
  twt_ui_pump ();
}

/* A graph with no nodes: a message, no sweep. */
static void
test_empty (void)
{
  TwbWindow *w = twb_window_new (GTK_APPLICATION (app), NULL);
  gtk_window_present (GTK_WINDOW (w));
  twt_ui_pump ();
  act (w, "win.whatif-run");
  g_assert_cmpstr (twb_window_get_panel (w), ==, "whatif");
  g_assert_false (twb_window_whatif_busy (w));
  g_assert_nonnull (strstr (message_of (w), "No model to simulate"));
  g_assert_null (twb_window_whatif_result (w));
  twb_window_close_now (w);
  twt_ui_pump ();
}

int
main (int argc, char **argv)
{
  g_setenv ("TWB_COLOR_SCHEME", "light", FALSE);
  g_autofree char *home = twt_ui_private_home ("whatif");
  const char *env = g_getenv ("TWB_TEST_SHOTS");
  shots_dir = env ? g_strdup (env) : g_build_filename (home, "shots", NULL);
  g_mkdir_with_parents (shots_dir, 0700);
  app = twt_window_test_init (&argc, &argv, G_APPLICATION_HANDLES_OPEN);
  if (app == NULL)
    return 0;
  for (int i = 1; i < argc; i++)
    if (argv[i][0] != '-')
      twb_program = g_canonicalize_filename (argv[i], NULL);
  g_test_add_func ("/ui/whatif/sweep", test_sweep);
  g_test_add_func ("/ui/whatif/empty", test_empty);
  int status = g_test_run ();
  g_object_unref (app);
  g_free (shots_dir);
  g_free (twb_program);
  return status;
}
