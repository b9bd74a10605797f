/* test-profiler-ui.c — the Profiler tab in the window, under Xvfb: Record
 * (profiler.record) around a real training run, the trace's steps and
 * layers, a range selected through the actions and its aggregated table
 * against an independent sum over the trace's slices, a click on a slice
 * (the timeline's own click gesture) selecting its node on the canvas, the
 * canvas's selection highlighting slices, the heat overlay's tints, export
 * and re-open (Chrome JSON, gzip), eager against compiled side by side, and
 * a malformed file refused with its byte offset. */
#include "ui-test.h"
#include "engine/file-kind.h"
#include "app/twb-application.h"
#include "engine/op.h"
#include "profiler/summary.h"
#include "ui/twb-profiler-panel.h"
#include "ui/twb-stat-table.h"
#include "ui/twb-window-private.h"

#include <gdk/x11/gdkx.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static TwbApplication *app;
static char *tmp_dir;

#define SETTLE_TIMEOUT_S 60

/* x [2] → fc1 (16) → relu1 → fc2 (16) → relu2 → fc3 (2) → cross entropy on "spirals". */
static const char model_json[] =
  "{ \"format\": \"twb-model\", \"version\": 1, \"name\": \"small\",\n"
  "  \"graph\": { \"nodes\": [\n"
  "    { \"id\": \"x\", \"op\": \"input\", \"attrs\": { \"shape\": [2], \"dtype\": \"f32\", "
  "\"role\": \"data\" }, \"pos\": [40, 40] },\n"
  "    { \"id\": \"y\", \"op\": \"input\", \"attrs\": { \"shape\": [], \"dtype\": \"i64\", "
  "\"role\": \"label\" }, \"pos\": [40, 300] },\n"
  "    { \"id\": \"fc1\", \"op\": \"linear\", \"inputs\": [\"x\"], \"attrs\": { \"out_features\": 16 }, "
  "\"pos\": [290, 40] },\n"
  "    { \"id\": \"relu1\", \"op\": \"relu\", \"inputs\": [\"fc1\"], \"pos\": [540, 40] },\n"
  "    { \"id\": \"fc2\", \"op\": \"linear\", \"inputs\": [\"relu1\"], \"attrs\": { \"out_features\": 16 }, "
  "\"pos\": [790, 40] },\n"
  "    { \"id\": \"h\", \"op\": \"relu\", \"inputs\": [\"fc2\"], \"pos\": [290, 200] },\n"
  "    { \"id\": \"fc3\", \"op\": \"linear\", \"inputs\": [\"h\"], \"attrs\": { "
  "\"out_features\": 2 }, \"pos\": [540, 200] },\n"
  "    { \"id\": \"loss\", \"op\": \"cross_entropy\", \"inputs\": [\"fc3\", \"y\"], "
  "\"pos\": [790, 220] } ],\n"
  "    \"outputs\": [\"fc3\"] },\n"
  "  \"training\": { \"loss\": \"loss\", \"batch_size\": 32, \"epochs\": 1, \"seed\": 0,\n"
  "    \"dataset\": \"spirals\", \"validation_split\": 0,\n"
  "    \"optimizer\": { \"type\": \"sgd\", \"lr\": 0.05, \"momentum\": 0.9, "
  "\"nesterov\": false, \"weight_decay\": 0 },\n"
  "    \"schedule\": { \"type\": \"constant\" } } }\n";

static TwbWindow *
open_window (void)
{
  g_autofree char *path = g_build_filename (tmp_dir, "small.json", NULL);
  g_autoptr (GError) error = NULL;
  g_assert_true (g_file_set_contents (path, model_json, -1, &error));
  g_autoptr (TwbDocument) doc = twb_document_new_from_file (path, &error);
  g_assert_no_error (error);
  TwbWindow *w = twb_window_new (GTK_APPLICATION (app), doc);
  gtk_window_set_default_size (GTK_WINDOW (w), 1400, 900);
  gtk_window_present (GTK_WINDOW (w));
  twt_ui_pump ();
  return w;
}

static void
close_window (TwbWindow *w)
{
  twb_window_stop_run_now (w);
  twb_window_close_now (w);
  twt_ui_pump ();
}

/* Until no run trains and no trace is being read. */
static void
settle (TwbWindow *w)
{
  gint64 end = g_get_monotonic_time () + SETTLE_TIMEOUT_S * G_USEC_PER_SEC;
  for (;;)
    {
      TwbRun *r = twb_window_get_run (w);
      if (r)
        twb_run_drain (r);
      while (g_main_context_iteration (NULL, FALSE))
        ;
      if (!twb_window_is_busy (w))
        break;
      if (g_get_monotonic_time () > end)
        g_error ("the window stayed busy for %d s", SETTLE_TIMEOUT_S);
      g_usleep (500);
    }
  twt_ui_pump ();
}

static void
act (TwbWindow *w, const char *detailed)
{
  g_autofree char *name = NULL;
  g_autoptr (GVariant) target = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_true (g_action_parse_detailed_name (detailed, &name, &target, &error));
  g_assert_no_error (error);
  g_assert_true (gtk_widget_activate_action_variant (GTK_WIDGET (w), name, target));
  settle (w);
}

static void
act_s (TwbWindow *w, const char *name, const char *arg)
{
  g_autofree char *quoted = g_variant_print (g_variant_new_string (arg), FALSE);
  g_autofree char *detailed = g_strdup_printf ("%s(%s)", name, quoted);
  act (w, detailed);
}

static TwbProfilerPanel *
panel_of (TwbWindow *w)
{
  return TWB_PROFILER_PANEL (w->profiler_panel);
}

static gboolean
recording (TwbWindow *w)
{
  g_autoptr (GVariant) st = g_action_group_get_action_state (G_ACTION_GROUP (w->profiler_actions),
                                                             "record");
  return g_variant_get_boolean (st);
}

/* Record `steps` steps of a new run in the current mode, then stop
 * recording: the trace is added to the panel.  Returns it. */
static const tw_trace *
record_steps (TwbWindow *w, int steps)
{
  guint before = twb_profiler_panel_n_traces (panel_of (w));
  act (w, "profiler.record");
  g_assert_true (recording (w));
  g_autofree char *detailed = g_strdup_printf ("win.train-steps(%d)", steps);
  act (w, detailed);
  act (w, "profiler.record");
  g_assert_false (recording (w));
  g_assert_cmpuint (twb_profiler_panel_n_traces (panel_of (w)), ==, before + 1);
  g_assert_cmpstr (twb_window_get_panel (w), ==, "profiler");
  return twb_profiler_panel_get_trace (panel_of (w), before);
}

static guint64
count_named_prefix (const tw_trace *t, const char *prefix, const char *category)
{
  guint64 n = 0;
  for (guint l = 0; l < tw_trace_n_lanes (t); l++)
    for (guint i = 0; i < tw_trace_lane_n_slices (t, l); i++)
      {
        const tw_slice *s = tw_trace_lane_slice (t, l, i);
        if (g_str_has_prefix (s->name, prefix) && g_strcmp0 (s->category, category) == 0)
          n++;
      }
  return n;
}

/* Record, then the trace's steps, the layer table and its shares. */
static void
test_record (void)
{
  TwbWindow *w = open_window ();
  /* F6 is Record's key. */
  g_auto (GStrv) accels = gtk_application_get_accels_for_action (GTK_APPLICATION (app),
                                                                 "profiler.record");
  g_assert_true (g_strv_contains ((const char *const *) accels, "F6"));
  /* Without a run: armed, then the first run records from its first step. */
  const tw_trace *t = record_steps (w, 6);
  g_assert_cmpuint (count_named_prefix (t, "step ", "step"), ==, 6);
  g_assert_cmpstr (tw_trace_get_meta (t, "mode"), ==, "eager");
  g_assert_cmpstr (tw_trace_get_meta (t, "model"), ==, "small");
  /* Every trainable node has its share; the shares add up to 1. */
  double sum = 0;
  g_auto (GStrv) nodes = twb_profiler_panel_layer_nodes (panel_of (w));
  for (char **n = nodes; *n; n++)
    {
      double s = -1;
      g_assert_true (twb_profiler_panel_layer_share (panel_of (w), *n, &s));
      g_assert_cmpfloat (s, >=, 0);
      sum += s;
    }
  g_assert_cmpfloat (fabs (sum - 1), <, 1e-9);
  const char *want[] = { "fc1", "relu1", "fc2", "h", "fc3", "loss" };
  for (guint i = 0; i < G_N_ELEMENTS (want); i++)
    g_assert_true (g_strv_contains ((const char *const *) nodes, want[i]));
  TwbStatTable *layers = TWB_STAT_TABLE (twb_profiler_panel_get_table (panel_of (w), "layers"));
  g_assert_cmpuint (twb_stat_table_n_rows (layers), ==, g_strv_length (nodes));

  /* Heat overlay: every timed node tinted while the tab shows, none after. */
  TwbGraphCanvas *canvas = twb_window_get_canvas (w);
  for (char **n = nodes; *n; n++)
    g_assert_cmpuint (twb_graph_canvas_get_tint (canvas, *n) & 0x1000000u, !=, 0);
  act (w, "profiler.heat");
  g_assert_cmpuint (twb_graph_canvas_get_tint (canvas, "fc1"), ==, 0);
  act (w, "profiler.heat");
  g_assert_cmpuint (twb_graph_canvas_get_tint (canvas, "fc1"), !=, 0);
  /* The heaviest node gets the reddest tint (the smallest green). */
  close_window (w);
}

/* A slice's phase as the tables group them: its "phase" argument, else its
 * category, if either names one (NULL: none). */
static const char *
independent_phase (const tw_slice *s)
{
  const char *known[] = { "forward", "backward", "update" };
  const char *v[] = { tw_slice_arg (s, "phase"), s->category };
  for (guint j = 0; j < 2; j++)
    for (guint i = 0; v[j] && i < G_N_ELEMENTS (known); i++)
      if (strcmp (v[j], known[i]) == 0)
        return known[i];
  return NULL;
}

/* Σ over every slice of t overlapping [a, b) named name in phase phase:
 * its time inside. */
static gint64
independent_total (const tw_trace *t, const char *name, const char *phase, gint64 a, gint64 b,
                   guint64 *count)
{
  gint64 sum = 0;
  *count = 0;
  for (guint l = 0; l < tw_trace_n_lanes (t); l++)
    for (guint i = 0; i < tw_trace_lane_n_slices (t, l); i++)
      {
        const tw_slice *s = tw_trace_lane_slice (t, l, i);
        gint64 lo = MAX (s->start_ns, a), hi = MIN (s->start_ns + s->dur_ns, b);
        gboolean overlaps = s->start_ns < b && s->start_ns + s->dur_ns > a;
        if (strcmp (s->name, name) != 0 || !overlaps
            || g_strcmp0 (independent_phase (s), phase) != 0)
          continue;
        sum += hi - lo;
        (*count)++;
      }
  return sum;
}

/* A range selected through the actions: the table's figures are the
 * independent sums. */
static void
test_range_table (void)
{
  TwbWindow *w = open_window ();
  const tw_trace *t = record_steps (w, 8);
  gint64 s2, e2, s5, e5;
  g_assert_true (tw_summary_find_step (t, 2, &s2, &e2));
  g_assert_true (tw_summary_find_step (t, 5, &s5, &e5));
  /* From the middle of step 2 to the middle of step 5 (view time: the
   * trace's start is 0), cutting slices at both ends. */
  gint64 t0 = tw_trace_start_ns (t);
  gint64 a = (s2 + e2) / 2, b = (s5 + e5) / 2;
  g_autofree char *span = g_strdup_printf ("%.6f,%.6f", (a - t0) / 1e6, (b - t0) / 1e6);
  act_s (w, "profiler.select-range", span);
  gint64 ra, rb;
  TwbTimeline *tl = twb_profiler_panel_get_timeline (panel_of (w));
  g_assert_true (twb_timeline_get_range (tl, &ra, &rb));
  /* The action's ms have 6 decimals: the range is exact to the ns. */
  g_assert_cmpint (ra + t0, ==, a);
  g_assert_cmpint (rb + t0, ==, b);
  g_assert_cmpstr (twb_profiler_panel_get_page (panel_of (w)), ==, "selection");
  TwbStatTable *sel = TWB_STAT_TABLE (twb_profiler_panel_get_table (panel_of (w), "selection"));
  guint n = twb_stat_table_n_rows (sel);
  g_assert_cmpuint (n, >, 5);
  gboolean saw_step = FALSE;
  for (guint r = 0; r < n; r++)
    {
      /* Name, phase, category, trace, count, total, self, average, %. */
      const char *name = twb_stat_table_get_text (sel, r, 0);
      const char *phase = twb_stat_table_get_text (sel, r, 1);
      guint64 count;
      gint64 total = independent_total (t, name, phase, a, b, &count);
      g_assert_cmpfloat (twb_stat_table_get_value (sel, r, 4), ==, (double) count);
      g_assert_cmpfloat (twb_stat_table_get_value (sel, r, 5), ==, (double) total);
      double avg = twb_stat_table_get_value (sel, r, 7);
      g_assert_cmpfloat (fabs (avg - (double) total / count), <, 1e-6 * avg + 1e-9);
      double pct = twb_stat_table_get_value (sel, r, 8);
      g_assert_cmpfloat (fabs (pct - 100.0 * total / (b - a)), <, 1e-9);
      double self = twb_stat_table_get_value (sel, r, 6);
      g_assert_cmpfloat (self, <=, total);
      g_assert_cmpfloat (self, >=, 0);
      saw_step |= g_str_has_prefix (name, "step ");
    }
  g_assert_true (saw_step);
  close_window (w);
}

/* A real click of the X pointer (xdotool) at widget coordinates (x, y)
 * of w, in the window's own coordinates: the widget's controllers, not a
 * test hook.  FALSE (the test skipped) without xdotool or X11. */
static gboolean
x_click (TwbWindow *win, GtkWidget *w, double x, double y)
{
  g_autofree char *xdotool = g_find_program_in_path ("xdotool");
  GdkDisplay *display = gdk_display_get_default ();
  if (!xdotool || !GDK_IS_X11_DISPLAY (display))
    {
      g_test_skip ("no xdotool or not on X11");
      return FALSE;
    }
  GtkNative *native = GTK_NATIVE (win);
  gulong xid = gdk_x11_surface_get_xid (gtk_native_get_surface (native));
  double sx, sy, ox, oy;
  gtk_native_get_surface_transform (native, &sx, &sy);
  g_assert_true (gtk_widget_translate_coordinates (w, GTK_WIDGET (win), x, y, &ox, &oy));
  g_autofree char *cmd = g_strdup_printf ("timeout 10 xdotool mousemove --window %lu %d %d click 1",
                                          xid, (int) (ox + sx), (int) (oy + sy));
  g_autoptr (GError) error = NULL;
  int status = 0;
  g_assert_true (g_spawn_command_line_sync (cmd, NULL, NULL, &status, &error));
  g_assert_no_error (error);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  /* The events arrive through the X server: pump until they did. */
  for (int i = 0; i < 20; i++)
    twt_ui_pump ();
  return TRUE;
}

/* The first forward slice of node id (on the lane that trains). */
static gboolean
find_forward (const tw_trace *t, const char *id, TwbSliceRef *out)
{
  for (guint l = 0; l < tw_trace_n_lanes (t); l++)
    for (guint i = 0; i < tw_trace_lane_n_slices (t, l); i++)
      {
        const tw_slice *s = tw_trace_lane_slice (t, l, i);
        if (g_strcmp0 (s->category, "forward") == 0 && g_strcmp0 (tw_slice_arg (s, "nodes"), id) == 0)
          {
            *out = (TwbSliceRef) { 0, l, i };
            return TRUE;
          }
      }
  return FALSE;
}

/* A click on a slice (through the timeline's own gesture) selects its node
 * on the canvas and shows its details; selecting on the canvas highlights. */
static void
test_click_slice (void)
{
  TwbWindow *w = open_window ();
  const tw_trace *t = record_steps (w, 3);
  TwbTimeline *tl = twb_profiler_panel_get_timeline (panel_of (w));
  TwbSliceRef ref;
  g_assert_true (find_forward (t, "fc2", &ref));
  const tw_slice *s = tw_trace_lane_slice (t, ref.lane, ref.index);
  /* Zoom so the slice is wide: itself plus its width on each side. */
  gint64 t0 = twb_timeline_get_offset (tl, 0);
  twb_timeline_set_view (tl, s->start_ns - t0 - s->dur_ns, s->start_ns - t0 + 2 * s->dur_ns);
  twt_ui_pump ();
  graphene_rect_t r;
  g_assert_true (twb_timeline_slice_rect (tl, &ref, &r));
  g_assert_cmpfloat (r.size.width, >, 20);
  double x = r.origin.x + r.size.width / 2, y = r.origin.y + r.size.height / 2;
  if (!x_click (w, GTK_WIDGET (tl), x, y))
    {
      close_window (w);
      return;
    }
  TwbSliceRef got;
  g_assert_true (twb_timeline_get_selected_slice (tl, &got));
  g_assert_cmpuint (got.lane, ==, ref.lane);
  g_assert_cmpuint (got.index, ==, ref.index);
  g_auto (GStrv) sel = twb_document_get_selection (twb_window_get_document (w));
  g_assert_cmpuint (g_strv_length (sel), ==, 1);
  g_assert_cmpstr (sel[0], ==, "fc2");
  g_assert_cmpstr (twb_profiler_panel_get_page (panel_of (w)), ==, "slice");

  /* The other way: the canvas selects fc1: the timeline highlights its
   * slices (its forward, backward and updates). */
  const char *ids[] = { "fc1", NULL };
  twb_document_select (twb_window_get_document (w), ids, FALSE);
  twt_ui_pump ();
  g_assert_cmpuint (twb_timeline_n_highlighted (tl), >=, 3 * 3);

  /* By name through the action: the slice after it. */
  act_s (w, "profiler.select-slice", s->name);
  g_assert_true (twb_timeline_get_selected_slice (tl, &got));
  close_window (w);
}

/* Export (gzip) and open again; eager beside compiled, per layer. */
static void
test_export_compare (void)
{
  TwbWindow *w = open_window ();
  const tw_trace *eager = record_steps (w, 5);
  guint64 n_slices = tw_trace_n_slices (eager);
  g_autofree char *gz = g_build_filename (tmp_dir, "eager.json.gz", NULL);
  act_s (w, "profiler.export-to", gz);
  g_assert_true (g_file_test (gz, G_FILE_TEST_EXISTS));
  g_assert_cmpint (tw_file_kind_sniff (gz, NULL, NULL), ==, TW_FILE_KIND_TRACE);
  g_autofree char *png = g_build_filename (tmp_dir, "timeline.png", NULL);
  act_s (w, "profiler.export-to", png);
  g_assert_true (g_file_test (png, G_FILE_TEST_EXISTS));

  act_s (w, "debugger.mode", "compiled");
  twb_window_stop_run_now (w);
  record_steps (w, 5);
  g_assert_cmpstr (tw_trace_get_meta (twb_profiler_panel_get_trace (panel_of (w), 1), "mode"), ==,
                   "compiled");
  act_s (w, "profiler.open-file", gz);
  g_assert_cmpuint (twb_profiler_panel_n_traces (panel_of (w)), ==, 3);
  g_assert_cmpuint (tw_trace_n_slices (twb_profiler_panel_get_trace (panel_of (w), 2)), ==,
                    n_slices);
  /* The compiled trace beside the eager one. */
  act (w, "profiler.show-trace(1)");
  act (w, "profiler.compare(0)");
  TwbTimeline *tl = twb_profiler_panel_get_timeline (panel_of (w));
  g_assert_cmpuint (twb_timeline_n_groups (tl), ==, 2);
  g_assert_cmpstr (twb_profiler_panel_get_page (panel_of (w)), ==, "compare");
  TwbStatTable *cmp = TWB_STAT_TABLE (twb_profiler_panel_get_table (panel_of (w), "compare"));
  g_assert_cmpuint (twb_stat_table_n_rows (cmp), >=, 4);
  /* Aligned: the first common step starts at view time 0 in both. */
  for (guint g = 0; g < 2; g++)
    {
      const tw_trace *tg = twb_timeline_get_trace (tl, g);
      guint64 first;
      g_assert_cmpuint (tw_summary_n_steps (tg, &first), ==, 5);
      gint64 st, en;
      g_assert_true (tw_summary_find_step (tg, first, &st, &en));
      g_assert_cmpint (st - twb_timeline_get_offset (tl, g), ==, 0);
    }
  act (w, "profiler.close-trace");
  /* The compiled trace went; the next (the re-opened one) shows, the eager
   * one still beside it. */
  g_assert_cmpuint (twb_profiler_panel_n_traces (panel_of (w)), ==, 2);
  g_assert_cmpint (twb_profiler_panel_get_current (panel_of (w)), ==, 1);
  g_assert_cmpint (twb_profiler_panel_get_compare (panel_of (w)), ==, 0);
  g_assert_cmpuint (twb_timeline_n_groups (tl), ==, 2);
  act (w, "profiler.close-trace");
  g_assert_cmpint (twb_profiler_panel_get_current (panel_of (w)), ==, 0);
  g_assert_cmpint (twb_profiler_panel_get_compare (panel_of (w)), ==, -1);
  g_assert_cmpuint (twb_timeline_n_groups (tl), ==, 1);
  close_window (w);
}

/* A malformed file: a notice with the file and the byte offset, no trace. */
static void
test_bad_file (void)
{
  TwbWindow *w = open_window ();
  g_autofree char *bad = g_build_filename (tmp_dir, "bad.json", NULL);
  g_assert_true (g_file_set_contents (bad, "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1,,}]}", -1, NULL));
  act_s (w, "profiler.open-file", bad);
  g_assert_cmpuint (twb_profiler_panel_n_traces (panel_of (w)), ==, 0);
  const char *toast = twb_window_get_toast (w);
  g_assert_nonnull (toast);
  g_assert_nonnull (strstr (toast, "bad.json"));
  g_assert_nonnull (strstr (toast, "byte"));
  g_autofree char *mlp = g_build_filename (g_getenv ("TWB_ASSETS_DIR"), "models", "mlp.json", NULL);
  g_assert_cmpint (tw_file_kind_sniff (mlp, NULL, NULL), ==, TW_FILE_KIND_MODEL);
  close_window (w);
}

int
main (int argc, char **argv)
{
  g_setenv ("TWB_COLOR_SCHEME", "light", FALSE);
  g_autofree char *home = twt_ui_private_home ("profiler-ui");
  tmp_dir = g_build_filename (home, "models", NULL);
  g_mkdir_with_parents (tmp_dir, 0700);
  g_test_init (&argc, &argv, NULL);
  /* Any warning or critical, ours or GTK's, fails the test. */
  g_log_set_always_fatal (G_LOG_FATAL_MASK | G_LOG_LEVEL_WARNING | G_LOG_LEVEL_CRITICAL);
  if (!gtk_init_check ())
    {
      g_print ("1..0 # SKIP no display\n");
      return 0;
    }
  tw_ops_init ();
  app = twb_application_new (G_APPLICATION_NON_UNIQUE);
  g_application_register (G_APPLICATION (app), NULL, NULL);
  twb_application_load_style ();
  g_test_add_func ("/profiler-ui/record", test_record);
  g_test_add_func ("/profiler-ui/range-table", test_range_table);
  g_test_add_func ("/profiler-ui/click-slice", test_click_slice);
  g_test_add_func ("/profiler-ui/export-compare", test_export_compare);
  g_test_add_func ("/profiler-ui/bad-file", test_bad_file);
  int st = g_test_run ();
  g_clear_object (&app);
  g_free (tmp_dir);
  return st;
}
