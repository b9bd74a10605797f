/* test-ranks-ui.c — traces of several ranks in the Profiler tab, under
 * Xvfb: the median step's critical path drawn across the rank lanes (the
 * "Critical path" toggle, the segments the timeline holds against
 * tw_trace_critical_path_median, its summary), two PyTorch traces of one
 * run (distributedInfo.rank) opened together as one trace of two ranks,
 * and a collective picked (by the action and by the pointer through
 * xdotool) selecting on the canvas the nodes whose gradients it carries —
 * and nothing, silently, when the trace is of another model.  The merged
 * trace is written once by `twb profile --ranks 2` (argv[1]).  Screenshots
 * are saved for a person to look at (TWB_TEST_SHOTS or a temporary folder). */
#include "ui-test.h"
#include "ui-xdo.h"
#include "window-test.h"
#include "ui/twb-profiler-panel.h"
#include "profiler/ranks.h"

#include <glib/gstdio.h>
#include <string.h>

static TwbApplication *app;
static char *shots_dir, *twb_program, *work_dir, *merged_trace;

/* Loading a trace of a few hundred events takes milliseconds; 60 s only
 * ends a test that hangs (an ASan build on a shared machine). */
#define LOAD_TIMEOUT_S 60

static void
shot (TwbWindow *w, const char *name)
{
  g_autofree char *path = g_build_filename (shots_dir, name, NULL);
  twt_window_screenshot (GTK_WIDGET (w), path);
  g_test_message ("screenshot: %s", path);
}

static void
wait_loaded (TwbWindow *w)
{
  twt_ui_pump ();
  gint64 end = g_get_monotonic_time () + LOAD_TIMEOUT_S * G_USEC_PER_SEC;
  while (twb_window_is_busy (w) && g_get_monotonic_time () < end)
    g_main_context_iteration (NULL, TRUE);
  g_assert_false (twb_window_is_busy (w));
  twt_ui_pump ();
}

/* A window of model (NULL: an empty one) with the merged trace open in the
 * Profiler tab, which takes most of the height. */
static TwbWindow *
open_with_trace (const char *model)
{
  g_autoptr (TwbDocument) doc = NULL;
  if (model)
    {
      g_autoptr (GError) error = NULL;
      doc = twb_document_new_from_file (model, &error);
      g_assert_no_error (error);
    }
  TwbWindow *w = twb_window_new (GTK_APPLICATION (app), doc);
  gtk_window_set_default_size (GTK_WINDOW (w), 1280, 1000);
  gtk_window_present (GTK_WINDOW (w));
  twt_ui_pump ();
  twb_window_open_trace (w, merged_trace);
  wait_loaded (w);
  twb_window_grow_bottom_panel (w);
  twt_ui_pump ();
  return w;
}

static void
prof_act (TwbWindow *w, const char *detailed)
{
  g_autofree char *name = NULL;
  g_autoptr (GVariant) target = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_true (g_action_parse_detailed_name (detailed, &name, &target, &error));
  g_assert_no_error (error);
  g_assert_true (gtk_widget_activate_action_variant (GTK_WIDGET (w), name, target));
  twt_ui_pump ();
}

static TwbProfilerPanel *
panel_of (TwbWindow *w)
{
  return TWB_PROFILER_PANEL (w->profiler_panel);
}

/* ---- The critical path ------------------------------------------------------------------ */

static void
test_critical_path (void)
{
  TwbWindow *w = open_with_trace (TWB_ASSETS_DIR "/models/mlp.json");
  TwbProfilerPanel *p = panel_of (w);
  TwbTimeline *tl = twb_profiler_panel_get_timeline (p);
  const tw_trace *t = twb_profiler_panel_get_trace (p, 0);
  g_assert_null (twb_timeline_get_critical_path (tl, NULL));
  g_assert_null (twb_profiler_panel_get_path_text (p));

  prof_act (w, "profiler.critical-path");
  g_assert_true (twb_profiler_panel_get_critical_path (p));
  guint group = 99;
  const GArray *drawn = twb_timeline_get_critical_path (tl, &group);
  g_assert_nonnull (drawn);
  g_assert_cmpuint (group, ==, 0);
  tw_path_summary sum;
  g_autoptr (GArray) want = tw_trace_critical_path_median (t, &sum);
  g_assert_nonnull (want);
  g_assert_cmpuint (drawn->len, ==, want->len);
  gint64 total = 0, t0 = G_MAXINT64, t1 = G_MININT64;
  guint n_comm = 0;
  for (guint i = 0; i < drawn->len; i++)
    {
      const tw_path_segment *a = &g_array_index (drawn, tw_path_segment, i);
      const tw_path_segment *b = &g_array_index (want, tw_path_segment, i);
      g_assert_cmpint (a->rank, ==, b->rank);
      g_assert_cmpint (a->kind, ==, b->kind);
      g_assert_cmpint (a->start_ns, ==, b->start_ns);
      g_assert_cmpint (a->dur_ns, ==, b->dur_ns);
      /* Each op or collective is the slice it names, on its rank's lane. */
      if (a->slice_index != G_MAXUINT)
        {
          const tw_slice *s = tw_trace_lane_slice (t, a->lane, a->slice_index);
          g_assert_cmpstr (s->name, ==, a->name);
          g_assert_cmpint (tw_trace_lane (t, a->lane)->pid, ==, a->rank);
          /* An op's part lies within it; a collective's runs from its
           * last rank's arrival (that rank's slice) to its end on the rank
           * that waited, which that rank's clock may put a little later. */
          g_assert_cmpint (a->start_ns, >=, s->start_ns);
          g_assert_cmpint (a->start_ns, <=, s->start_ns + s->dur_ns);
          if (a->kind == TW_PATH_COMPUTE)
            g_assert_cmpint (a->start_ns + a->dur_ns, <=, s->start_ns + s->dur_ns);
        }
      n_comm += a->kind == TW_PATH_COMM;
      total += a->dur_ns;
      t0 = MIN (t0, a->start_ns);
      t1 = MAX (t1, a->start_ns + a->dur_ns);
    }
  /* Two ranks all-reducing each step: the path waits on a collective. */
  g_assert_cmpuint (n_comm, >, 0);
  g_assert_cmpint (total, ==, sum.compute_ns + sum.comm_ns + sum.wait_ns + sum.idle_ns);
  const char *text = twb_profiler_panel_get_path_text (p);
  g_assert_nonnull (text);
  g_autofree char *head = g_strdup_printf ("Critical path of step %" G_GUINT64_FORMAT
                                           " (the median step): ", sum.step);
  g_assert_true (g_str_has_prefix (text, head));
  g_assert_nonnull (strstr (text, "communication"));
  g_assert_nonnull (find_label (GTK_WIDGET (w), "Critical path of step"));

  /* The step in view, both ranks' lanes under it (the canvas small): its
   * last segment lies on screen. */
  gtk_paned_set_position (GTK_PANED (w->vpaned), 100);
  gint64 off = twb_timeline_get_offset (tl, 0);
  gint64 pad = (t1 - t0) / 20;
  twb_timeline_set_view (tl, t0 - off - pad, t1 - off + pad);
  twt_ui_pump ();
  const tw_path_segment *last = &g_array_index (drawn, tw_path_segment, drawn->len - 1);
  double x = twb_timeline_time_to_x (tl, last->start_ns - off);
  g_assert_cmpfloat (x, >, 0);
  g_assert_cmpfloat (x, <, gtk_widget_get_width (GTK_WIDGET (tl)));
  shot (w, "ranks-critical-path.png");
  /* Rank 0 collapsed to its summary row: rank 1's lanes come up, the path
   * still drawn across both. */
  twb_timeline_set_collapsed (tl, 0, 0, TRUE);
  twt_ui_pump ();
  g_assert_nonnull (twb_timeline_get_critical_path (tl, NULL));
  shot (w, "ranks-critical-path-rank0-collapsed.png");
  twb_timeline_set_collapsed (tl, 0, 0, FALSE);

  prof_act (w, "profiler.critical-path");
  g_assert_null (twb_timeline_get_critical_path (tl, NULL));
  g_assert_null (twb_profiler_panel_get_path_text (p));
  gtk_window_destroy (GTK_WINDOW (w));
  twt_ui_pump ();
}

/* ---- PyTorch traces of two ranks --------------------------------------------------------- */

/* One rank's PyTorch profiler trace, as Kineto writes it: its
 * distributedInfo, a step on the CPU thread with an op, and an NCCL
 * all-reduce kernel on a CUDA stream (rank 1 arrives 30 µs later; both
 * end together). */
static char *
write_torch_rank (int rank)
{
  g_autofree char *name = g_strdup_printf ("torch-rank%d.json", rank);
  char *path = g_build_filename (work_dir, name, NULL);
  double base = 1700000000000.0;
  int pid = 4000 + rank;
  g_autofree char *text = g_strdup_printf (
    "{\"schemaVersion\": 1,\n"
    " \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d, \"world_size\": 2},\n"
    " \"traceEvents\": [\n"
    "  {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"tid\": 0, \"args\": {\"name\": \"python\"}},\n"
    "  {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 0, \"tid\": 0, \"args\": {\"name\": \"CUDA GPU 0\"}},\n"
    "  {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", \"pid\": %d, \"tid\": %d,"
    " \"ts\": %.3f, \"dur\": 400.0},\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::linear\", \"pid\": %d, \"tid\": %d,"
    " \"ts\": %.3f, \"dur\": %.3f},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllReduce_Sum_f32_RING_LL\","
    " \"pid\": 0, \"tid\": 7, \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"Collective name\": \"allreduce\","
    " \"Seq\": 1, \"In msg nelems\": 1024, \"Group size\": 2, \"dtype\": \"Float\"}}\n"
    " ]}\n",
    rank, pid, pid, pid, base + 10, pid, pid, base + 20, 100.0 + 30 * rank, base + 130 + 30 * rank,
    200.0 - 30 * rank);
  g_autoptr (GError) error = NULL;
  g_assert_true (g_file_set_contents (path, text, -1, &error));
  g_assert_no_error (error);
  return path;
}

/* The distinct pids of the trace's lanes. */
static guint
n_lane_pids (const tw_trace *t)
{
  g_autoptr (GHashTable) pids = g_hash_table_new (NULL, NULL);
  for (guint l = 0; l < tw_trace_n_lanes (t); l++)
    g_hash_table_add (pids, GINT_TO_POINTER (tw_trace_lane (t, l)->pid + 1));
  return g_hash_table_size (pids);
}

static void
check_merged_torch (TwbWindow *w)
{
  TwbProfilerPanel *p = panel_of (w);
  g_assert_cmpuint (twb_profiler_panel_n_traces (p), ==, 1);
  const tw_trace *t = twb_profiler_panel_get_trace (p, 0);
  int n_ranks = 0;
  g_assert_true (tw_trace_is_multi_rank (t, &n_ranks));
  g_assert_cmpint (n_ranks, ==, 2);
  g_assert_cmpuint (n_lane_pids (t), ==, 2);
  g_assert_cmpuint (tw_trace_n_processes (t), ==, 2);
  for (guint i = 0; i < tw_trace_n_processes (t); i++)
    {
      const tw_process *pr = tw_trace_process (t, i);
      g_autofree char *want = g_strdup_printf ("rank %d", pr->pid);
      g_assert_cmpstr (pr->name, ==, want);
    }
  /* The timeline shows one group, its kernel one collective of both ranks. */
  TwbTimeline *tl = twb_profiler_panel_get_timeline (p);
  g_assert_cmpuint (twb_timeline_n_groups (tl), ==, 1);
  g_assert_true (twb_window_select_slice_named (w, "ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
  twt_ui_pump ();
  const GArray *peers = twb_timeline_get_collective_peers (tl, NULL);
  g_assert_nonnull (peers);
  g_assert_cmpuint (peers->len, ==, 2);
}

static void
test_torch_ranks (void)
{
  g_autofree char *r0 = write_torch_rank (0), *r1 = write_torch_rank (1);

  /* As `twb r1.json r0.json` hands them to the application: one trace. */
  TwbWindow *w = twb_window_new (GTK_APPLICATION (app), NULL);
  gtk_window_set_default_size (GTK_WINDOW (w), 1280, 900);
  gtk_window_present (GTK_WINDOW (w));
  twt_ui_pump ();
  g_autoptr (GFile) f0 = g_file_new_for_path (r0);
  g_autoptr (GFile) f1 = g_file_new_for_path (r1);
  GFile *files[] = { f1, f0 };
  g_application_open (G_APPLICATION (app), files, 2, "");
  wait_loaded (w);
  check_merged_torch (w);
  g_assert_true (g_str_has_suffix (twb_profiler_panel_get_title (panel_of (w), 0),
                                   "(2 ranks)"));
  twb_window_grow_bottom_panel (w);
  twt_ui_pump ();
  shot (w, "ranks-torch-merged.png");
  gtk_window_destroy (GTK_WINDOW (w));
  twt_ui_pump ();

  /* The same through the action the Open dialog's multiple choice takes. */
  w = twb_window_new (GTK_APPLICATION (app), NULL);
  gtk_window_present (GTK_WINDOW (w));
  twt_ui_pump ();
  g_autofree char *detailed = g_strdup_printf ("profiler.open-files(['%s', '%s'])", r0, r1);
  prof_act (w, detailed);
  wait_loaded (w);
  check_merged_torch (w);
  gtk_window_destroy (GTK_WINDOW (w));
  twt_ui_pump ();

  /* One file alone stays itself: one rank's trace. */
  w = twb_window_new (GTK_APPLICATION (app), NULL);
  gtk_window_present (GTK_WINDOW (w));
  twt_ui_pump ();
  twb_window_open_trace (w, r1);
  wait_loaded (w);
  g_assert_cmpuint (twb_profiler_panel_n_traces (panel_of (w)), ==, 1);
  g_assert_false (tw_trace_is_multi_rank (twb_profiler_panel_get_trace (panel_of (w), 0), NULL));
  gtk_window_destroy (GTK_WINDOW (w));
  twt_ui_pump ();
  g_unlink (r0);
  g_unlink (r1);
}

/* ---- A collective selecting its nodes ------------------------------------------------------ */

static int
cmp_str (gconstpointer a, gconstpointer b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* The node ids the slice's params name ("fc2.weight" → fc2), found here
 * from the names alone, sorted. */
static GStrv
expected_nodes (const tw_slice *s)
{
  const char *params = tw_slice_arg (s, "params");
  g_assert_nonnull (params);
  g_auto (GStrv) names = g_strsplit (params, ",", -1);
  g_autoptr (GHashTable) set = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (char **n = names; *n; n++)
    {
      char *dot = strrchr (*n, '.');
      g_assert_nonnull (dot);
      g_hash_table_add (set, g_strndup (*n, dot - *n));
    }
  GStrv ids = (GStrv) g_hash_table_get_keys_as_array (set, NULL);
  g_hash_table_steal_all (set);
  qsort (ids, g_strv_length (ids), sizeof (char *), cmp_str);
  return ids;
}

static GStrv
sorted_selection (TwbWindow *w)
{
  GStrv sel = twb_document_get_selection (w->doc);
  qsort (sel, g_strv_length (sel), sizeof (char *), cmp_str);
  return sel;
}

/* The k-th (from 0) slice called name on rank's lanes. */
static gboolean
find_slice (const tw_trace *t, int rank, const char *name, guint k, TwbSliceRef *out)
{
  for (guint l = 0; l < tw_trace_n_lanes (t); l++)
    {
      if (tw_trace_lane (t, l)->pid != rank)
        continue;
      for (guint i = 0; i < tw_trace_lane_n_slices (t, l); i++)
        if (strcmp (tw_trace_lane_slice (t, l, i)->name, name) == 0 && k-- == 0)
          {
            *out = (TwbSliceRef) { 0, l, i };
            return TRUE;
          }
    }
  return FALSE;
}

static void
assert_selected (TwbWindow *w, const tw_slice *s)
{
  g_auto (GStrv) want = expected_nodes (s);
  g_auto (GStrv) got = sorted_selection (w);
  g_assert_cmpstrv (got, want);
  /* "bucket 0: 2 parameters of fc3 (5.2 kB)" */
  const char *status = twb_profiler_panel_get_status (panel_of (w));
  g_autofree char *head = g_strdup_printf ("%s: ", tw_slice_arg (s, "what"));
  g_assert_true (g_str_has_prefix (status, head));
  g_assert_nonnull (strstr (status, " parameter"));
  g_assert_nonnull (strstr (status, want[0]));
  g_assert_nonnull (strstr (status, "B)"));
  /* The same on the Slice page, above its arguments. */
  const char *note = twb_profiler_panel_get_slice_note (panel_of (w));
  g_assert_nonnull (note);
  g_assert_nonnull (strstr (note, status));
}

static void
test_collective_selects (void)
{
  if (!twt_xdo_ready ())
    {
      g_test_skip ("no xdotool or no X11");
      return;
    }
  TwbWindow *w = open_with_trace (TWB_ASSETS_DIR "/models/mlp.json");
  twt_xdo_place (GTK_WINDOW (w), 1280, 1000);
  twb_window_grow_bottom_panel (w);
  twt_ui_pump ();
  TwbProfilerPanel *p = panel_of (w);
  TwbTimeline *tl = twb_profiler_panel_get_timeline (p);
  const tw_trace *t = twb_profiler_panel_get_trace (p, 0);

  /* By the action: rank 0's first "allreduce bucket 0". */
  prof_act (w, "profiler.select-slice('allreduce bucket 0')");
  TwbSliceRef ref;
  g_assert_true (twb_timeline_get_selected_slice (tl, &ref));
  const tw_slice *s = tw_trace_lane_slice (t, ref.lane, ref.index);
  g_assert_cmpstr (s->category, ==, "collective");
  assert_selected (w, s);

  /* By the pointer: rank 1's "allreduce bucket 1" of the second step,
   * zoomed so that it is wide enough to click, rank 0 collapsed so that
   * rank 1's lanes are in view. */
  twb_timeline_set_collapsed (tl, 0, 0, TRUE);
  TwbSliceRef b1;
  g_assert_true (find_slice (t, 1, "allreduce bucket 1", 1, &b1));
  const tw_slice *s1 = tw_trace_lane_slice (t, b1.lane, b1.index);
  g_auto (GStrv) want1 = expected_nodes (s1);
  g_auto (GStrv) before = sorted_selection (w);
  g_assert_false (g_strv_equal ((const char *const *) want1, (const char *const *) before));
  gint64 off = twb_timeline_get_offset (tl, 0);
  twb_timeline_set_view (tl, s1->start_ns - off - 4 * s1->dur_ns,
                         s1->start_ns + s1->dur_ns - off + 4 * s1->dur_ns);
  twt_ui_pump ();
  graphene_rect_t r;
  g_assert_true (twb_timeline_slice_rect (tl, &b1, &r));
  twt_xdo_click (GTK_WIDGET (tl), r.origin.x + r.size.width / 2, r.origin.y + r.size.height / 2, 1);
  TwbSliceRef got;
  g_assert_true (twb_timeline_get_selected_slice (tl, &got));
  g_assert_cmpuint (got.lane, ==, b1.lane);
  g_assert_cmpuint (got.index, ==, b1.index);
  assert_selected (w, s1);
  shot (w, "ranks-collective-selects.png");
  gtk_window_destroy (GTK_WINDOW (w));
  twt_ui_pump ();

  /* Another model's window (no parameter of the trace's in it): nothing
   * selected, the status says nothing of it; warnings would be fatal. */
  w = open_with_trace (TWB_ASSETS_DIR "/models/functional.json");
  p = panel_of (w);
  g_autofree char *status_before = g_strdup (twb_profiler_panel_get_status (p));
  prof_act (w, "profiler.select-slice('allreduce bucket 0')");
  g_assert_true (twb_timeline_get_selected_slice (twb_profiler_panel_get_timeline (p), &ref));
  g_auto (GStrv) none = twb_document_get_selection (w->doc);
  g_assert_cmpuint (g_strv_length (none), ==, 0);
  g_assert_cmpstr (twb_profiler_panel_get_status (p), ==, status_before);
  g_assert_null (twb_profiler_panel_get_slice_note (p));
  gtk_window_destroy (GTK_WINDOW (w));
  twt_ui_pump ();
}

int
main (int argc, char **argv)
{
  g_setenv ("TWB_COLOR_SCHEME", "light", FALSE);
  g_setenv ("OMPI_MCA_rmaps_base_oversubscribe", "1", FALSE);
  g_setenv ("OMPI_ALLOW_RUN_AS_ROOT", "1", FALSE);
  g_setenv ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", FALSE);
  g_autofree char *home = twt_ui_private_home ("ranks-ui");
  const char *env = g_getenv ("TWB_TEST_SHOTS");
  shots_dir = env ? g_strdup (env) : g_build_filename (home, "shots", NULL);
  g_mkdir_with_parents (shots_dir, 0700);
  work_dir = g_build_filename (home, "work", NULL);
  g_mkdir_with_parents (work_dir, 0700);
  app = twt_window_test_init (&argc, &argv, G_APPLICATION_HANDLES_OPEN);
  if (app == NULL)
    return 0;
  for (int i = 1; i < argc; i++)
    if (argv[i][0] != '-')
      twb_program = g_canonicalize_filename (argv[i], NULL);
  g_test_add_func ("/ui/ranks/torch-ranks-open-as-one", test_torch_ranks);
  g_autofree char *mpirun = g_find_program_in_path ("mpirun");
  if (mpirun && twb_program)
    {
      /* The MLP's buckets of 0.2 MB: its parameters in several all-reduces
       * (fc3 and fc2's, fc1's weight, fc1's bias). */
      merged_trace = g_build_filename (work_dir, "mlp-2-ranks.json", NULL);
      const char *cmd[] = { twb_program, "profile", TWB_ASSETS_DIR "/models/mlp.json", "--steps",
                            "3", "--bucket-mb", "0.2", "--trace", merged_trace, "--ranks", "2",
                            NULL };
      int status = -1;
      g_autofree char *err = NULL;
      g_autoptr (GError) error = NULL;
      if (!g_spawn_sync (NULL, (char **) cmd, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL,
                         &err, &status, &error)
          || !g_spawn_check_wait_status (status, NULL))
        g_error ("twb profile --ranks 2 failed: %s", error ? error->message : err);
      g_test_add_func ("/ui/ranks/critical-path", test_critical_path);
      g_test_add_func ("/ui/ranks/collective-selects-nodes", test_collective_selects);
    }
  int st = g_test_run ();
  g_object_unref (app);
  if (merged_trace)
    g_unlink (merged_trace);
  g_rmdir (work_dir);
  return st;
}
