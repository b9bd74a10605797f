/* test-training.c — training and debugging in the window, under Xvfb,
 * driven only through the window's actions ("win.train-steps(5)",
 * "debugger.step-op", "debugger.toggle-breakpoint('fc2')" …) with the main
 * loop pumped; what the run, the dashboard, the debugger tab and the canvas
 * show is checked against numbers: the metric series, the pause's position
 * and tensors, files read back, an independent float64 computation.
 *
 * The models are small MLPs on the synthetic 2-D "spirals" set (or a CSV
 * written here), so that each test takes a fraction of a second. */
#include "ui-test.h"
#include "window-test.h"
#include "app/twb-application.h"
#include "engine/safetensors.h"
#include "engine/tensor-stats.h"
#include "graph_editor/twb-graph-render.h"
#include "ui/twb-dashboard.h"
#include "ui/twb-debugger-panel.h"
#include "ui/twb-run-store.h"
#include "ui/twb-window-private.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static TwbApplication *app;
static char *tmp_dir;

/* ---- Models ---------------------------------------------------------------------------- */

/* x [2] → HIDDEN → fc3 (2 classes) → cross entropy, SGD with momentum.
 * hidden: node objects (JSON) between x and fc3, the last one "h". */
static char *
model_json (const char *hidden, const char *dataset, int epochs, int batch)
{
  return g_strdup_printf (
    "{ \"format\": \"twb-model\", \"version\": 1, \"name\": \"small\",\n"
    "  \"graph\": { \"nodes\": [\n"
    "    { \"id\": \"x\", \"op\": \"input\", \"attrs\": { \"shape\": [2], \"dtype\": \"f32\", "
    "\"role\": \"data\" }, \"pos\": [40, 40] },\n"
    "    { \"id\": \"y\", \"op\": \"input\", \"attrs\": { \"shape\": [], \"dtype\": \"i64\", "
    "\"role\": \"label\" }, \"pos\": [40, 300] },\n"
    "    %s,\n"
    "    { \"id\": \"fc3\", \"op\": \"linear\", \"inputs\": [\"h\"], \"attrs\": { "
    "\"out_features\": 2 }, \"pos\": [540, 200] },\n"
    "    { \"id\": \"loss\", \"op\": \"cross_entropy\", \"inputs\": [\"fc3\", \"y\"], "
    "\"pos\": [790, 220] } ],\n"
    "    \"outputs\": [\"fc3\"] },\n"
    "  \"training\": { \"loss\": \"loss\", \"batch_size\": %d, \"epochs\": %d, \"seed\": 0,\n"
    "    \"dataset\": \"%s\", \"validation_split\": 0,\n"
    "    \"optimizer\": { \"type\": \"sgd\", \"lr\": 0.05, \"momentum\": 0.9, "
    "\"nesterov\": false, \"weight_decay\": 0 },\n"
    "    \"schedule\": { \"type\": \"constant\" } } }\n",
    hidden, batch, epochs, dataset);
}

/* fc1 (16) → relu1 → fc2 (16) → relu2 ("h"). */
static const char mlp_hidden[] =
  "{ \"id\": \"fc1\", \"op\": \"linear\", \"inputs\": [\"x\"], \"attrs\": { \"out_features\": 16 }, "
  "\"pos\": [290, 40] },\n"
  "{ \"id\": \"relu1\", \"op\": \"relu\", \"inputs\": [\"fc1\"], \"pos\": [540, 40] },\n"
  "{ \"id\": \"fc2\", \"op\": \"linear\", \"inputs\": [\"relu1\"], \"attrs\": { \"out_features\": 16 }, "
  "\"pos\": [790, 40] },\n"
  "{ \"id\": \"h\", \"op\": \"relu\", \"inputs\": [\"fc2\"], \"pos\": [290, 200] }";

/* fc1 → log: the log of fc1's negative outputs is NaN in the first forward. */
static const char log_hidden[] =
  "{ \"id\": \"fc1\", \"op\": \"linear\", \"inputs\": [\"x\"], \"attrs\": { \"out_features\": 16 }, "
  "\"pos\": [290, 40] },\n"
  "{ \"id\": \"h\", \"op\": \"log\", \"inputs\": [\"fc1\"], \"pos\": [540, 40] }";

/* fc1 → relu1 → sqrt: the forward is finite (sqrt (0) = 0), but the
 * gradient of sqrt at the relu's zeros is dy / (2 · 0) = ±Inf: the first
 * non-finite value is made in the backward, by "h". */
static const char sqrt_hidden[] =
  "{ \"id\": \"fc1\", \"op\": \"linear\", \"inputs\": [\"x\"], \"attrs\": { \"out_features\": 16 }, "
  "\"pos\": [290, 40] },\n"
  "{ \"id\": \"relu1\", \"op\": \"relu\", \"inputs\": [\"fc1\"], \"pos\": [540, 40] },\n"
  "{ \"id\": \"h\", \"op\": \"sqrt\", \"inputs\": [\"relu1\"], \"pos\": [790, 40] }";

static char *
write_model (const char *name, const char *hidden, const char *dataset, int epochs, int batch)
{
  g_autofree char *json = model_json (hidden, dataset, epochs, batch);
  char *path = g_build_filename (tmp_dir, name, NULL);
  g_autoptr (GError) error = NULL;
  g_assert_true (g_file_set_contents (path, json, -1, &error));
  g_assert_no_error (error);
  return path;
}

static TwbWindow *
open_window (const char *path)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TwbDocument) doc = twb_document_new_from_file (path, &error);
  g_assert_no_error (error);
  TwbWindow *w = twb_window_new (GTK_APPLICATION (app), doc);
  gtk_window_set_default_size (GTK_WINDOW (w), 1200, 800);
  gtk_window_present (GTK_WINDOW (w));
  twt_ui_pump ();
  g_assert_cmpint (twb_window_count_issues (w), ==, 0);
  return w;
}

static TwbWindow *
open_mlp (void)
{
  g_autofree char *path = write_model ("mlp.json", mlp_hidden, "spirals", 1, 32);
  return open_window (path);
}

static void
close_window (TwbWindow *w)
{
  twb_window_stop_run_now (w);
  twb_window_close_now (w);
  twt_ui_pump ();
}

/* ---- Driving the window ---------------------------------------------------------------- */

static guint
series (TwbWindow *w, const char *name)
{
  guint s = twb_metrics_find_series (w->metrics, twb_run_get_id (run_of (w)), name);
  g_assert_cmpuint (s, !=, G_MAXUINT);
  return s;
}

static gsize
series_len (TwbWindow *w, const char *name)
{
  return twb_metrics_series_len (w->metrics, series (w, name));
}

static gboolean
strv_has (char **v, const char *s)
{
  return v && g_strv_contains ((const char *const *) v, s);
}

static gboolean
same_bits (tw_tensor *a, tw_tensor *b)
{
  if (a->dtype != b->dtype || a->ndim != b->ndim)
    return FALSE;
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] != b->shape[d])
      return FALSE;
  g_autoptr (tw_tensor) ca = tw_tensor_contiguous (a);
  g_autoptr (tw_tensor) cb = tw_tensor_contiguous (b);
  return memcmp (tw_tensor_data (ca), tw_tensor_data (cb), tw_tensor_nbytes (ca)) == 0;
}

/* Threads of this process named name (/proc/self/task/ID/comm). */
static guint
count_threads (const char *name)
{
  g_autoptr (GDir) d = g_dir_open ("/proc/self/task", 0, NULL);
  g_assert_nonnull (d);
  guint n = 0;
  const char *e;
  while ((e = g_dir_read_name (d)))
    {
      g_autofree char *path = g_build_filename ("/proc/self/task", e, "comm", NULL);
      g_autofree char *comm = NULL;
      if (g_file_get_contents (path, &comm, NULL, NULL) && strcmp (g_strstrip (comm), name) == 0)
        n++;
    }
  return n;
}

/* Whether the Debugger tab shows the pause's reason as an error. */
static gboolean
reason_is_error (TwbWindow *w)
{
  GtkWidget *l = find_label (w->debugger_panel, "Paused: ");
  g_assert_nonnull (l);
  return gtk_widget_has_css_class (l, "error");
}

/* ---- Tests ----------------------------------------------------------------------------- */

/* win.train-steps(5) runs five steps and pauses between iterations: five
 * finite loss points at x = 1..5, the progress line at step 5. */
static void
test_train_steps (void)
{
  TwbWindow *w = open_mlp ();
  act (w, "win.train-steps(5)");
  const tw_snapshot *p = pause_of (w);
  g_assert_cmpint (p->phase, ==, -1);
  g_assert_cmpint (p->step, ==, 5);
  guint s = series (w, "loss");
  g_assert_cmpuint (twb_metrics_series_len (w->metrics, s), ==, 5);
  for (gsize i = 0; i < 5; i++)
    {
      double x, y;
      twb_metrics_get_point (w->metrics, s, i, &x, &y);
      g_assert_cmpfloat (x, ==, (double) (i + 1));
      g_assert_true (isfinite (y));
      g_assert_cmpfloat (y, >, 0);
    }
  const char *text = twb_dashboard_get_progress_text (TWB_DASHBOARD (w->dashboard));
  g_assert_nonnull (text);
  g_assert_nonnull (strstr (text, "paused"));
  /* 2000 spirals points in batches of 32: 63 steps in the one epoch. */
  g_assert_nonnull (strstr (text, "step 5/63"));
  close_window (w);
}

/* debugger.step-op advances by one op: the trace grows by one, and the
 * canvas's "current" ring moves to the new op's node(s). */
static void
test_step_op (void)
{
  TwbWindow *w = open_mlp ();
  TwbGraphCanvas *c = twb_window_get_canvas (w);
  act (w, "win.train-steps(1)");
  g_assert_cmpint (pause_of (w)->step, ==, 1);
  act (w, "debugger.step-op");
  const tw_snapshot *p = pause_of (w);
  g_assert_cmpint (p->iteration, ==, 2);
  g_assert_cmpint (p->phase, ==, TW_PHASE_FORWARD);
  guint n = p->trace ? g_strv_length (p->trace) : 0;
  g_assert_cmpuint (n, ==, 1);
  g_auto (GStrv) before = g_strdupv (p->nodes);
  g_assert_nonnull (before);
  g_assert_nonnull (before[0]);
  for (char **id = before; *id; id++)
    g_assert_true (twb_graph_canvas_get_mark (c, *id) & TWB_MARK_CURRENT);
  /* Through the forward: every node is a different op, so the ring leaves
   * the old node as it reaches the new one. */
  for (int k = 0; k < 4; k++)
    {
      act (w, "debugger.step-op");
      p = pause_of (w);
      g_assert_cmpint (p->phase, ==, TW_PHASE_FORWARD);
      g_assert_cmpuint (g_strv_length (p->trace), ==, n + 1);
      n++;
      g_assert_cmpuint (twb_debugger_panel_n_trace (TWB_DEBUGGER_PANEL (w->debugger_panel)), ==, n);
      g_assert_nonnull (p->nodes);
      for (char **id = p->nodes; *id; id++)
        g_assert_true (twb_graph_canvas_get_mark (c, *id) & TWB_MARK_CURRENT);
      for (char **id = before; *id; id++)
        if (!strv_has (p->nodes, *id))
          g_assert_false (twb_graph_canvas_get_mark (c, *id) & TWB_MARK_CURRENT);
      g_strfreev (before);
      before = g_strdupv (p->nodes);
    }
  close_window (w);
}

/* A breakpoint on fc2 stops in its forward; set to backward only, the next
 * stop is fc2's backward; the canvas shows the breakpoint's phases. */
static void
test_breakpoint (void)
{
  TwbWindow *w = open_mlp ();
  TwbGraphCanvas *c = twb_window_get_canvas (w);
  act (w, "debugger.toggle-breakpoint('fc2')");
  guint both = TWB_MARK_BREAK_FORWARD | TWB_MARK_BREAK_BACKWARD;
  g_assert_cmpuint (twb_graph_canvas_get_mark (c, "fc2") & both, ==, both);
  g_assert_cmpuint (twb_graph_canvas_get_mark (c, "fc1") & both, ==, 0);
  g_assert_cmpuint (twb_debugger_panel_n_breakpoints (TWB_DEBUGGER_PANEL (w->debugger_panel)), ==, 1);
  act (w, "debugger.run");
  const tw_snapshot *p = pause_of (w);
  g_assert_nonnull (strstr (p->reason, "fc2"));
  g_assert_cmpint (p->phase, ==, TW_PHASE_FORWARD);
  g_assert_cmpint (p->iteration, ==, 1);
  g_assert_true (strv_has (p->nodes, "fc2"));
  g_assert_cmpstr (twb_window_get_panel (w), ==, "debugger");
  const char *pos = twb_debugger_panel_get_position (TWB_DEBUGGER_PANEL (w->debugger_panel));
  g_assert_nonnull (strstr (pos, "iteration 1 › forward › fc2"));
  g_assert_false (reason_is_error (w));

  act (w, "debugger.add-breakpoint('node=fc2:backward')");
  g_assert_cmpuint (twb_graph_canvas_get_mark (c, "fc2") & both, ==, TWB_MARK_BREAK_BACKWARD);
  g_assert_cmpuint (twb_debugger_panel_n_breakpoints (TWB_DEBUGGER_PANEL (w->debugger_panel)), ==, 1);
  act (w, "debugger.run");
  p = pause_of (w);
  g_assert_nonnull (strstr (p->reason, "fc2"));
  g_assert_cmpint (p->phase, ==, TW_PHASE_BACKWARD);
  g_assert_cmpint (p->iteration, ==, 1);
  g_assert_true (strv_has (p->nodes, "fc2"));
  g_assert_true (twb_graph_canvas_get_mark (c, "fc2") & TWB_MARK_CURRENT);
  pos = twb_debugger_panel_get_position (TWB_DEBUGGER_PANEL (w->debugger_panel));
  g_assert_nonnull (strstr (pos, "iteration 1 › backward › fc2"));

  /* Toggling it again removes it: the run goes on to the end. */
  act (w, "debugger.toggle-breakpoint('fc2')");
  g_assert_cmpuint (twb_graph_canvas_get_mark (c, "fc2") & both, ==, 0);
  act (w, "debugger.run");
  g_assert_cmpint (twb_run_get_state (run_of (w)), ==, TW_SESSION_FINISHED);
  g_assert_cmpint (twb_run_get_result (run_of (w))->step, ==, 63);
  close_window (w);
}

/* A planted NaN or Inf pauses at the op that made it: the node marked as
 * the fault on the canvas (and no other), the Debugger tab shown, a notice. */
static void
check_fault (const char *hidden, const char *what, int phase)
{
  g_autofree char *path = write_model ("fault.json", hidden, "spirals", 1, 32);
  TwbWindow *w = open_window (path);
  g_assert_cmpstr (twb_window_get_panel (w), !=, "debugger");
  act (w, "debugger.run");
  const tw_snapshot *p = pause_of (w);
  g_test_message ("pause: %s", p->reason);
  g_assert_cmpint (p->iteration, ==, 1);
  g_assert_cmpint (p->phase, ==, phase);
  g_assert_true (strv_has (p->nodes, "h"));
  g_assert_true (g_str_has_prefix (p->reason, what));
  g_assert_nonnull (strstr (p->reason, "node h"));
  TwbGraphCanvas *c = twb_window_get_canvas (w);
  g_assert_true (twb_graph_canvas_get_mark (c, "h") & TWB_MARK_FAULT);
  g_assert_false (twb_graph_canvas_get_mark (c, "h") & TWB_MARK_CURRENT);
  g_assert_false (twb_graph_canvas_get_mark (c, "fc1") & TWB_MARK_FAULT);
  g_assert_false (twb_graph_canvas_get_mark (c, "fc3") & TWB_MARK_FAULT);
  g_assert_cmpstr (twb_window_get_panel (w), ==, "debugger");
  const char *pos = twb_debugger_panel_get_position (TWB_DEBUGGER_PANEL (w->debugger_panel));
  g_assert_nonnull (strstr (pos, phase == TW_PHASE_FORWARD ? "› forward › h" : "› backward › h"));
  g_assert_true (reason_is_error (w));
  const char *toast = twb_window_get_toast (w);
  g_assert_nonnull (toast);
  g_assert_true (g_str_has_prefix (toast, "Training paused"));
  g_assert_nonnull (strstr (toast, "node h"));
  close_window (w);
}

/* The log of fc1's negative outputs: NaN in the first forward. */
static void
test_nan_forward (void)
{
  check_fault (log_hidden, "NaN", TW_PHASE_FORWARD);
}

/* sqrt after relu: finite forward, Inf first made by sqrt's backward. */
static void
test_inf_backward (void)
{
  check_fault (sqrt_hidden, "Inf", TW_PHASE_BACKWARD);
}

/* debugger.set-lr(0.5) at a pause after step 3 applies from step 4: the lr
 * series reads the recipe's 0.05 for steps 1..3 and 0.5 for 4..5. */
static void
test_set_lr (void)
{
  TwbWindow *w = open_mlp ();
  act (w, "win.train-steps(3)");
  g_assert_cmpint (pause_of (w)->step, ==, 3);
  act (w, "debugger.set-lr(0.5)");
  act (w, "win.train-steps(2)");
  g_assert_cmpint (pause_of (w)->step, ==, 5);
  guint s = series (w, "lr");
  g_assert_cmpuint (twb_metrics_series_len (w->metrics, s), ==, 5);
  for (gsize i = 0; i < 5; i++)
    {
      double x, y;
      twb_metrics_get_point (w->metrics, s, i, &x, &y);
      g_assert_cmpfloat (x, ==, (double) (i + 1));
      /* The recipe's lr as the session reports it (double, constant schedule). */
      g_assert_cmpfloat (y, ==, i < 3 ? 0.05 : 0.5);
    }
  close_window (w);
}

/* An edit while paused (fc2's out_features 16 → 24) applies when the run
 * goes on: fc1, unchanged, keeps its weights bit for bit; fc2 and fc3 (whose
 * input width changed) are initialised again, and the notice says so. */
static void
test_edit_while_paused (void)
{
  TwbWindow *w = open_mlp ();
  act (w, "win.train-steps(2)");
  g_autoptr (tw_tensor) w1 = inspect_fresh (w, "fc1.weight", NULL);
  g_autoptr (tw_tensor) b1 = inspect_fresh (w, "fc1.bias", NULL);
  g_autoptr (tw_tensor) w2 = inspect_fresh (w, "fc2.weight", NULL);
  g_assert_cmpint (w2->shape[0], ==, 16);

  g_autoptr (GError) error = NULL;
  g_assert_true (twb_document_set_attr_int (twb_window_get_document (w), "fc2", "out_features", 24,
                                            &error));
  g_assert_no_error (error);
  twt_ui_pump ();
  g_assert_true (w->graph_pending);
  /* One op into the next iteration: the edit is applied at its start, and
   * no parameter has been updated yet. */
  act (w, "debugger.step-op");
  const tw_snapshot *p = pause_of (w);
  g_assert_cmpint (p->iteration, ==, 3);
  const char *toast = twb_window_get_toast (w);
  g_assert_nonnull (toast);
  g_test_message ("notice: %s", toast);
  g_assert_nonnull (strstr (toast, "Applied the graph edit: fc2, fc3 initialised again"));
  g_assert_nonnull (strstr (toast, "1 node kept its weights"));

  g_autoptr (tw_tensor) w1_after = inspect_fresh (w, "fc1.weight", w1);
  g_autoptr (tw_tensor) b1_after = inspect_fresh (w, "fc1.bias", b1);
  g_assert_true (same_bits (w1, w1_after));
  g_assert_true (same_bits (b1, b1_after));
  g_autoptr (tw_tensor) w2_after = inspect_fresh (w, "fc2.weight", w2);
  g_assert_cmpint (w2_after->shape[0], ==, 24);
  g_assert_cmpint (w2_after->shape[1], ==, 16);
  /* The inspector shows the copy asked for (not one of the pause's). */
  const tw_tensor_stats *st =
    twb_tensor_view_get_stats (twb_debugger_panel_get_tensor_view (TWB_DEBUGGER_PANEL (w->debugger_panel)));
  g_assert_nonnull (st);
  g_assert_cmpint (st->count, ==, 24 * 16);
  close_window (w);
}

/* Eager for three steps, debugger.mode('compiled'), three more: the loss
 * curve equals one trained in eager all the way (parity; the executors
 * differ only in the order of float32 sums). */
static void
test_mode_switch (void)
{
  double mixed[6], eager[6];
  for (int k = 0; k < 2; k++)
    {
      TwbWindow *w = open_mlp ();
      act (w, "win.train-steps(3)");
      if (k == 0)
        act (w, "debugger.mode('compiled')");
      act (w, "win.train-steps(3)");
      g_assert_cmpint (pause_of (w)->step, ==, 6);
      guint s = series (w, "loss");
      g_assert_cmpuint (twb_metrics_series_len (w->metrics, s), ==, 6);
      for (gsize i = 0; i < 6; i++)
        {
          double x;
          twb_metrics_get_point (w->metrics, s, i, &x, k == 0 ? &mixed[i] : &eager[i]);
          g_assert_cmpfloat (x, ==, (double) (i + 1));
        }
      if (k == 0)
        {
          g_autoptr (GVariant) st = g_action_group_get_action_state (
            G_ACTION_GROUP (w->debugger_actions), "mode");
          g_assert_cmpstr (g_variant_get_string (st, NULL), ==, "compiled");
        }
      /* Which executor the run is in now: one op into iteration 7. */
      act (w, "debugger.step-op");
      g_assert_cmpint (pause_of (w)->iteration, ==, 7);
      g_assert_cmpint (pause_of (w)->compiled, ==, k == 0);
      close_window (w);
    }
  for (int i = 0; i < 6; i++)
    {
      g_test_message ("step %d: %.9g (eager, then compiled) vs %.9g (eager)", i + 1, mixed[i],
                      eager[i]);
      /* 1e-5 relative: float32 losses (~1e-7 each) after a few steps of
       * differently ordered sums, well below the step-to-step change. */
      g_assert_cmpfloat (fabs (mixed[i] - eager[i]), <=, 1e-5 * fabs (eager[i]));
    }
  /* And the curve moved: the check is not between constants. */
  g_assert_cmpfloat (fabs (eager[5] - eager[0]), >, 1e-3);
}

/* The inspector's statistics of each tensor of a pause equal a plain
 * float64 computation over the same snapshot copy. */
static void
test_inspector_stats (void)
{
  TwbWindow *w = open_mlp ();
  act (w, "debugger.toggle-breakpoint('fc2')");
  act (w, "debugger.run");
  const tw_snapshot *p = pause_of (w);
  g_assert_nonnull (p->tensors);
  g_assert_cmpuint (p->tensors->len, >=, 2);
  TwbTensorView *view = twb_debugger_panel_get_tensor_view (TWB_DEBUGGER_PANEL (w->debugger_panel));
  for (guint i = 0; i < p->tensors->len; i++)
    {
      const tw_snapshot_tensor *st = g_ptr_array_index (p->tensors, i);
      act_s (w, "debugger.inspect", st->name);
      const tw_tensor_stats *s = twb_tensor_view_get_stats (view);
      g_assert_nonnull (s);
      /* The header names the first tensor so named, in its role, as the
       * list selects it ("fc2.weight" is an input and a parameter). */
      const tw_snapshot_tensor *first = NULL;
      for (guint j = 0; first == NULL && j < p->tensors->len; j++)
        if (strcmp (((tw_snapshot_tensor *) g_ptr_array_index (p->tensors, j))->name, st->name) == 0)
          first = g_ptr_array_index (p->tensors, j);
      g_autofree char *head = g_strdup_printf ("%s · %s · ", first->name, first->role);
      g_assert_nonnull (find_label (GTK_WIDGET (view), head));
      int64_t n = tw_tensor_numel (st->tensor);
      double lo = INFINITY, hi = -INFINITY, sum = 0;
      int64_t zeros = 0;
      for (int64_t j = 0; j < n; j++)
        {
          double v = tw_tensor_get_flat (st->tensor, j);
          g_assert_true (isfinite (v));
          lo = MIN (lo, v);
          hi = MAX (hi, v);
          sum += v;
          zeros += v == 0;
        }
      double mean = sum / n, ss = 0;
      for (int64_t j = 0; j < n; j++)
        {
          double d = tw_tensor_get_flat (st->tensor, j) - mean;
          ss += d * d;
        }
      double sd = sqrt (ss / n);
      g_test_message ("%s %s: n %" G_GINT64_FORMAT " mean %.17g std %.17g", st->role, st->name, n,
                      mean, sd);
      g_assert_cmpint (s->count, ==, n);
      g_assert_cmpint (s->finite, ==, n);
      g_assert_cmpint (s->nan, ==, 0);
      g_assert_cmpint (s->inf, ==, 0);
      g_assert_cmpint (s->zeros, ==, zeros);
      g_assert_cmpfloat (s->min, ==, lo);
      g_assert_cmpfloat (s->max, ==, hi);
      /* The plain sums' own rounding over at most a few thousand values:
       * ~n · 2^-53 relative; 1e-12 of the scale is far above it. */
      double scale = MAX (fabs (lo), fabs (hi));
      g_assert_cmpfloat (fabs (s->mean - mean), <=, 1e-12 * scale);
      g_assert_cmpfloat (fabs (s->std - sd), <=, 1e-12 * scale);
      int64_t in_hist = 0;
      for (int b = 0; b < s->n_bins; b++)
        in_hist += s->hist[b];
      g_assert_cmpint (in_hist, ==, n);
    }
  close_window (w);
}

/* One epoch over a 100-row CSV (the test set is the same file): the epoch's
 * confusion matrix counts each of the 100 test samples once. */
static void
test_confusion (void)
{
  const int rows = 100;
  GString *csv = g_string_new ("x0,x1,label\n");
  g_autoptr (GRand) rng = g_rand_new_with_seed (7);
  for (int i = 0; i < rows; i++)
    {
      int label = i % 2;
      g_string_append_printf (csv, "%.4f,%.4f,%d\n", g_rand_double_range (rng, -1, 1),
                              label ? 0.5 + g_rand_double (rng) * 0.5 : -g_rand_double (rng) * 0.5,
                              label);
    }
  g_autofree char *csv_path = g_build_filename (tmp_dir, "points.csv", NULL);
  g_autoptr (GError) error = NULL;
  g_assert_true (g_file_set_contents (csv_path, csv->str, -1, &error));
  g_string_free (csv, TRUE);
  g_autofree char *path = write_model ("csv.json", mlp_hidden, csv_path, 1, 32);
  TwbWindow *w = open_window (path);
  act (w, "debugger.run");
  TwbRun *r = run_of (w);
  g_assert_cmpint (twb_run_get_state (r), ==, TW_SESSION_FINISHED);
  g_assert_cmpint (twb_run_get_result (r)->step, ==, 4);   /* 100 rows in batches of 32 */
  int64_t epoch = -1;
  const tw_class_report *rep = twb_run_get_class_report (r, &epoch);
  g_assert_nonnull (rep);
  g_assert_cmpint (epoch, ==, 0);
  g_assert_cmpint (rep->n_classes, ==, 2);
  g_assert_cmpint (rep->total, ==, rows);
  int64_t sum = 0, diag = 0;
  for (int t = 0; t < rep->n_classes; t++)
    for (int q = 0; q < rep->n_classes; q++)
      {
        sum += rep->confusion[t * rep->n_classes + q];
        diag += t == q ? rep->confusion[t * rep->n_classes + q] : 0;
      }
  g_assert_cmpint (sum, ==, rows);
  g_assert_cmpint (diag, ==, rep->correct);
  /* Each true class has its 50 rows. */
  g_assert_cmpint (rep->confusion[0] + rep->confusion[1], ==, rows / 2);
  close_window (w);
}

static GtkDialog *
find_message_dialog (void)
{
  GtkDialog *found = NULL;
  GList *tops = gtk_window_list_toplevels ();
  for (GList *l = tops; l; l = l->next)
    if (GTK_IS_MESSAGE_DIALOG (l->data) && gtk_widget_get_visible (l->data))
      found = l->data;
  g_list_free (tops);
  return found;
}

/* Closing the window while it trains asks; "Stop and Close" stops the
 * worker, and the window goes with no session thread left. */
static void
test_close_while_training (void)
{
  g_autofree char *path = write_model ("long.json", mlp_hidden, "spirals", 100000, 32);
  TwbWindow *w = open_window (path);
  g_object_add_weak_pointer (G_OBJECT (w), (gpointer *) &w);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (w), "debugger.run", NULL));
  twt_ui_pump ();
  g_assert_cmpint (twb_run_get_state (run_of (w)), ==, TW_SESSION_RUNNING);
  g_assert_cmpuint (count_threads ("twb-session"), ==, 1);

  /* Cancel keeps the window and the run. */
  gtk_window_close (GTK_WINDOW (w));
  twt_ui_pump ();
  GtkDialog *d = find_message_dialog ();
  g_assert_nonnull (d);
  gtk_dialog_response (d, GTK_RESPONSE_CANCEL);
  twt_ui_pump ();
  g_assert_nonnull (w);
  g_assert_null (find_message_dialog ());
  g_assert_cmpint (twb_run_get_state (run_of (w)), ==, TW_SESSION_RUNNING);

  gtk_window_close (GTK_WINDOW (w));
  twt_ui_pump ();
  d = find_message_dialog ();
  g_assert_nonnull (d);
  gtk_dialog_response (d, GTK_RESPONSE_ACCEPT);
  gint64 end = g_get_monotonic_time () + SETTLE_TIMEOUT_S * G_USEC_PER_SEC;
  while (w && g_get_monotonic_time () < end)
    {
      g_main_context_iteration (NULL, FALSE);
      g_usleep (500);
    }
  g_assert_null (w);
  twt_ui_pump ();
  g_assert_null (find_message_dialog ());
  g_assert_cmpuint (count_threads ("twb-session"), ==, 0);
  /* Its curves are kept with the model's runs, as the question says. */
  g_autofree char *dir = twb_run_store_dir_for (path, "small");
  g_autoptr (GPtrArray) runs = twb_run_store_list (dir);
  g_assert_cmpuint (runs->len, ==, 1);
  TwbRunRecord *rec = g_ptr_array_index (runs, 0);
  g_assert_cmpstr (rec->state, ==, "stopped");
  g_assert_cmpint (rec->steps, >, 0);
  g_autoptr (TwbMetrics) back = twb_metrics_new ();
  g_autoptr (GError) error = NULL;
  g_assert_true (twb_metrics_import_csv (back, rec->csv_path, NULL, &error));
  g_assert_no_error (error);
  guint s = twb_metrics_find_series (back, rec->id, "loss");
  g_assert_cmpuint (s, !=, G_MAXUINT);
  /* One point per step, but a window that drained slowly may have been
   * handed fewer (metrics are dropped rather than queued without end). */
  gsize n = twb_metrics_series_len (back, s);
  g_assert_cmpuint (n, >=, 1);
  g_assert_cmpuint (n, <=, rec->steps);
  double x, y;
  twb_metrics_get_point (back, s, n - 1, &x, &y);
  g_assert_cmpfloat (x, <=, (double) rec->steps);
  g_assert_true (isfinite (y));
}

/* Save Weights while paused writes what the session holds: the file's
 * tensors equal the paused run's parameters bit for bit; Load Weights in a
 * fresh window starts its run from exactly them. */
static void
test_save_load_weights (void)
{
  TwbWindow *w = open_mlp ();
  act (w, "win.train-steps(2)");
  g_autofree char *file = g_build_filename (tmp_dir, "weights.safetensors", NULL);
  act_s (w, "win.save-weights-to", file);
  g_autoptr (GHashTable) saved = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_safetensors_load (file, &saved, NULL, &error));
  g_assert_no_error (error);
  const char *params[] = { "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight",
                           "fc3.bias" };
  g_assert_cmpuint (g_hash_table_size (saved), ==, G_N_ELEMENTS (params));
  for (guint i = 0; i < G_N_ELEMENTS (params); i++)
    {
      g_autoptr (tw_tensor) live = inspect_fresh (w, params[i], NULL);
      tw_tensor *t = g_hash_table_lookup (saved, params[i]);
      g_assert_nonnull (t);
      g_assert_true (same_bits (live, t));
    }
  close_window (w);

  /* A fresh window: load, step into the first op (no update yet), compare. */
  TwbWindow *v = open_mlp ();
  act_s (v, "win.load-weights-to", file);
  g_assert_nonnull (strstr (twb_window_get_toast (v), "weights.safetensors"));
  act (v, "debugger.step-op");
  g_assert_cmpint (pause_of (v)->iteration, ==, 1);
  for (guint i = 0; i < G_N_ELEMENTS (params); i++)
    {
      g_autoptr (tw_tensor) live = inspect_fresh (v, params[i], NULL);
      g_assert_true (same_bits (live, g_hash_table_lookup (saved, params[i])));
    }
  close_window (v);
}

/* The trace entries ("backward fc1 linear_grad_weight (kernel)") after the
 * first n name node. */
static guint
entries_naming (const tw_snapshot *p, guint n, const char *node)
{
  guint k = 0, len = g_strv_length (p->trace);
  for (guint i = n; i < len; i++)
    {
      g_auto (GStrv) words = g_strsplit (p->trace[i], " ", 3);
      g_assert_cmpuint (g_strv_length (words), >=, 2);
      g_assert_cmpstr (words[1], ==, node);
      k++;
    }
  return k;
}

/* Step layer runs one node's whole work in its phase (relu1's one backward
 * kernel, then fc1's two); step iteration runs to the iteration's end. */
static void
test_step_layer_iteration (void)
{
  TwbWindow *w = open_mlp ();
  act (w, "debugger.add-breakpoint('node=fc2:backward')");
  act (w, "debugger.run");
  const tw_snapshot *p = pause_of (w);
  g_assert_cmpint (p->phase, ==, TW_PHASE_BACKWARD);
  guint n = g_strv_length (p->trace);
  g_assert_true (g_str_has_prefix (p->trace[n - 1], "backward fc2 "));
  const struct
  {
    const char *node;
    guint kernels;
  } want[] = { { "relu1", 1 }, { "fc1", 2 } };   /* fc1 has no input gradient: x is data */
  for (guint k = 0; k < G_N_ELEMENTS (want); k++)
    {
      act (w, "debugger.step-layer");
      p = pause_of (w);
      g_assert_cmpint (p->phase, ==, TW_PHASE_BACKWARD);
      g_assert_cmpstr (p->nodes[0], ==, want[k].node);
      g_assert_null (p->nodes[1]);
      g_assert_cmpuint (entries_naming (p, n, want[k].node), ==, want[k].kernels);
      g_assert_true (twb_graph_canvas_get_mark (twb_window_get_canvas (w), want[k].node)
                     & TWB_MARK_CURRENT);
      n = g_strv_length (p->trace);
    }
  g_assert_cmpuint (series_len (w, "loss"), ==, 0);
  act (w, "debugger.step-iteration");
  p = pause_of (w);
  g_assert_cmpint (p->phase, ==, -1);
  g_assert_cmpint (p->step, ==, 1);
  g_assert_cmpint (p->iteration, ==, 2);
  g_assert_cmpuint (series_len (w, "loss"), ==, 1);
  /* Without the breakpoint (else it stops iteration 2 at fc2 again). */
  act (w, "debugger.remove-breakpoint('node=fc2:backward')");
  g_assert_cmpuint (twb_debugger_panel_n_breakpoints (TWB_DEBUGGER_PANEL (w->debugger_panel)), ==, 0);
  act (w, "debugger.step-iteration");
  g_assert_cmpint (pause_of (w)->phase, ==, -1);
  g_assert_cmpint (pause_of (w)->step, ==, 2);
  g_assert_cmpuint (series_len (w, "loss"), ==, 2);
  close_window (w);
}

/* debugger.toggle-freeze('fc1') while paused: the lock on the canvas, and
 * from the next step fc1 keeps its values bit for bit while fc2 trains;
 * toggled again, fc1 trains again. */
static void
test_freeze (void)
{
  TwbWindow *w = open_mlp ();
  TwbGraphCanvas *c = twb_window_get_canvas (w);
  act (w, "win.train-steps(1)");
  act (w, "debugger.toggle-freeze('fc1')");
  g_assert_true (twb_graph_canvas_get_mark (c, "fc1") & TWB_MARK_FROZEN);
  g_assert_false (twb_graph_canvas_get_mark (c, "fc2") & TWB_MARK_FROZEN);
  g_autoptr (tw_tensor) w1 = inspect_fresh (w, "fc1.weight", NULL);
  g_autoptr (tw_tensor) w2 = inspect_fresh (w, "fc2.weight", NULL);
  act (w, "win.train-steps(2)");
  g_assert_cmpint (pause_of (w)->step, ==, 3);
  g_autoptr (tw_tensor) w1_frozen = inspect_fresh (w, "fc1.weight", NULL);
  g_autoptr (tw_tensor) w2_trained = inspect_fresh (w, "fc2.weight", NULL);
  g_assert_true (same_bits (w1, w1_frozen));
  g_assert_false (same_bits (w2, w2_trained));

  act (w, "debugger.toggle-freeze('fc1')");
  g_assert_false (twb_graph_canvas_get_mark (c, "fc1") & TWB_MARK_FROZEN);
  act (w, "win.train-steps(1)");
  g_autoptr (tw_tensor) w1_again = inspect_fresh (w, "fc1.weight", NULL);
  g_assert_false (same_bits (w1, w1_again));
  /* A node without parameters cannot be frozen: said, nothing marked. */
  act (w, "debugger.toggle-freeze('relu1')");
  g_assert_false (twb_graph_canvas_get_mark (c, "relu1") & TWB_MARK_FROZEN);
  g_assert_nonnull (strstr (twb_window_get_toast (w), "relu1"));
  close_window (w);
}

/* A breakpoint on a node that a graph edit removes goes with the node, with
 * a notice; the edit applied, the run goes on without stopping there, and
 * the nodes whose op, attributes and inputs are unchanged keep their
 * weights. */
static void
test_breakpoint_on_removed_node (void)
{
  TwbWindow *w = open_mlp ();
  TwbDocument *doc = twb_window_get_document (w);
  act (w, "debugger.add-breakpoint('node=relu1:forward')");
  act (w, "debugger.run");
  g_assert_true (strv_has (pause_of (w)->nodes, "relu1"));
  /* fc1 → fc2 without relu1: fc2's input changed (it is initialised
   * again), fc1 and fc3 are as they were. */
  g_autoptr (GError) error = NULL;
  const char *ids[] = { "relu1", NULL };
  twb_document_begin_group (doc, "Remove relu1");
  g_assert_true (twb_document_remove_nodes (doc, ids, &error));
  g_assert_true (twb_document_connect (doc, "fc1", "fc2", 0, &error));
  twb_document_end_group (doc);
  g_assert_no_error (error);
  twt_ui_pump ();
  g_assert_cmpuint (w->breakpoints->len, ==, 0);
  g_assert_cmpuint (twb_debugger_panel_n_breakpoints (TWB_DEBUGGER_PANEL (w->debugger_panel)), ==, 0);
  const char *toast = twb_window_get_toast (w);
  g_test_message ("notice: %s", toast);
  g_assert_nonnull (strstr (toast, "node=relu1:forward"));
  g_assert_nonnull (strstr (toast, "gone"));

  act (w, "win.train-steps(1)");
  const tw_snapshot *p = pause_of (w);
  g_assert_cmpint (p->phase, ==, -1);
  g_assert_cmpint (p->step, ==, 1);
  /* After step 1; the session applies the edit as iteration 2 starts. */
  g_autoptr (tw_tensor) w1 = inspect_fresh (w, "fc1.weight", NULL);
  g_autoptr (tw_tensor) w3 = inspect_fresh (w, "fc3.weight", NULL);
  act (w, "debugger.step-op");
  g_assert_cmpint (pause_of (w)->iteration, ==, 2);
  toast = twb_window_get_toast (w);
  g_test_message ("notice: %s", toast);
  g_assert_nonnull (strstr (toast, "fc2 initialised again; relu1 removed; 2 nodes kept"));
  g_autoptr (tw_tensor) w1_after = inspect_fresh (w, "fc1.weight", w1);
  g_autoptr (tw_tensor) w3_after = inspect_fresh (w, "fc3.weight", w3);
  g_assert_true (same_bits (w1, w1_after));
  g_assert_true (same_bits (w3, w3_after));
  act (w, "win.train-steps(3)");
  g_assert_cmpint (pause_of (w)->step, ==, 4);
  g_assert_cmpint (pause_of (w)->phase, ==, -1);
  close_window (w);
}

static GHashTable *
saved_weights (TwbWindow *w, const char *name)
{
  g_autofree char *file = g_build_filename (tmp_dir, name, NULL);
  act_s (w, "win.save-weights-to", file);
  GHashTable *t = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_safetensors_load (file, &t, NULL, &error));
  g_assert_no_error (error);
  return t;
}

static void
assert_same_weights (GHashTable *a, GHashTable *b)
{
  g_assert_cmpuint (g_hash_table_size (a), ==, g_hash_table_size (b));
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init (&it, a);
  while (g_hash_table_iter_next (&it, &k, &v))
    {
      tw_tensor *o = g_hash_table_lookup (b, k);
      g_assert_nonnull (o);
      if (!same_bits (v, o))
        g_error ("%s differs", (const char *) k);
    }
}

/* Stop mid-step leaves the weights of the last finished step: stopped in
 * the forward of iteration 3, those after step 2; stopped in the updates
 * of iteration 1 (one parameter updated), the step is finished first:
 * those of a run that trained one step. */
static void
test_stop_mid_step (void)
{
  TwbWindow *w = open_mlp ();
  act (w, "win.train-steps(2)");
  g_autoptr (GHashTable) after2 = saved_weights (w, "after2.safetensors");
  act (w, "debugger.step-op");
  g_assert_cmpint (pause_of (w)->iteration, ==, 3);
  /* At once the run is no longer at its pause: it is stopping. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (w), "debugger.stop", NULL));
  g_assert_null (twb_run_get_pause (run_of (w)));
  g_assert_cmpint (twb_run_get_state (run_of (w)), ==, TW_SESSION_RUNNING);
  settle (w);
  TwbRun *r = run_of (w);
  g_assert_cmpint (twb_run_get_state (r), ==, TW_SESSION_STOPPED);
  g_assert_cmpint (twb_run_get_result (r)->step, ==, 2);
  g_assert_nonnull (strstr (twb_window_get_toast (w), "stopped after 2 steps"));
  g_autoptr (GHashTable) stopped = saved_weights (w, "stopped.safetensors");
  assert_same_weights (after2, stopped);
  close_window (w);

  TwbWindow *ref = open_mlp ();
  act (ref, "win.train-steps(1)");
  g_autoptr (GHashTable) after1 = saved_weights (ref, "after1.safetensors");
  close_window (ref);

  w = open_mlp ();
  act (w, "debugger.add-breakpoint('node=fc1:backward')");
  act (w, "debugger.run");
  act (w, "debugger.step-layer");
  const tw_snapshot *p = pause_of (w);
  g_assert_cmpint (p->phase, ==, TW_PHASE_UPDATE);
  g_assert_cmpint (p->iteration, ==, 1);
  act (w, "debugger.stop");
  g_assert_cmpint (twb_run_get_state (run_of (w)), ==, TW_SESSION_STOPPED);
  g_assert_cmpint (twb_run_get_result (run_of (w))->step, ==, 1);
  g_autoptr (GHashTable) finished = saved_weights (w, "finished.safetensors");
  assert_same_weights (after1, finished);
  close_window (w);
}

/* The loss points of run in m, as (x, y) pairs. */
static GArray *
loss_points (TwbMetrics *m, const char *run)
{
  guint s = twb_metrics_find_series (m, run, "loss");
  g_assert_cmpuint (s, !=, G_MAXUINT);
  GArray *a = g_array_new (FALSE, FALSE, sizeof (double));
  for (gsize i = 0; i < twb_metrics_series_len (m, s); i++)
    {
      double xy[2];
      twb_metrics_get_point (m, s, i, &xy[0], &xy[1]);
      g_array_append_vals (a, xy, 2);
    }
  return a;
}

static void
assert_same_points (GArray *a, GArray *b)
{
  g_assert_cmpuint (a->len, ==, b->len);
  for (guint i = 0; i < a->len; i++)
    g_assert_cmpfloat (g_array_index (a, double, i), ==, g_array_index (b, double, i));
}

/* Every run is kept beside the model's others: its record (state, steps,
 * final loss, test accuracy) and its curves as CSV read back equal to what
 * the dashboard showed; the dashboard lists it; win.export-curves writes
 * the same points; a second run is listed first. */
static void
test_runs_kept (void)
{
  g_autofree char *path = write_model ("kept.json", mlp_hidden, "spirals", 1, 32);
  g_autofree char *dir = twb_run_store_dir_for (path, "small");
  TwbWindow *w = open_window (path);
  TwbDashboard *dash = TWB_DASHBOARD (w->dashboard);
  g_assert_cmpuint (twb_dashboard_n_runs_listed (dash), ==, 0);
  act (w, "debugger.run");
  TwbRun *r = run_of (w);
  g_assert_cmpint (twb_run_get_state (r), ==, TW_SESSION_FINISHED);
  const tw_snapshot *res = twb_run_get_result (r);
  g_assert_cmpint (res->step, ==, 63);
  g_assert_true (isfinite (res->test_accuracy));
  const char *id = twb_run_get_id (r);
  g_assert_cmpstr (id, ==, "run-1");
  g_autoptr (GArray) shown = loss_points (w->metrics, id);
  g_assert_cmpuint (shown->len, ==, 2 * 63);

  g_autoptr (GPtrArray) runs = twb_run_store_list (dir);
  g_assert_cmpuint (runs->len, ==, 1);
  TwbRunRecord *rec = g_ptr_array_index (runs, 0);
  g_assert_cmpstr (rec->id, ==, id);
  g_assert_cmpstr (rec->state, ==, "finished");
  g_assert_cmpstr (rec->mode, ==, "eager");
  g_assert_cmpint (rec->steps, ==, 63);
  /* JSON keeps a double to the last bit (json-glib prints %.17g). */
  g_assert_cmpfloat (rec->final_loss, ==, g_array_index (shown, double, shown->len - 1));
  g_assert_cmpfloat (rec->test_accuracy, ==, res->test_accuracy);
  g_autoptr (TwbMetrics) back = twb_metrics_new ();
  g_autoptr (GError) error = NULL;
  g_assert_true (twb_metrics_import_csv (back, rec->csv_path, NULL, &error));
  g_assert_no_error (error);
  g_autoptr (GArray) kept = loss_points (back, id);
  assert_same_points (shown, kept);
  g_assert_cmpuint (twb_dashboard_n_runs_listed (dash), ==, 1);
  g_autofree char *acc = g_strdup_printf ("test accuracy %.2f %%", res->test_accuracy * 100);
  const char *text = twb_dashboard_get_progress_text (dash);
  g_test_message ("progress: %s", text);
  g_assert_nonnull (strstr (text, "finished after 63 steps"));
  g_assert_nonnull (strstr (text, acc));

  g_autofree char *csv = g_build_filename (tmp_dir, "curves.csv", NULL);
  act_s (w, "win.export-curves", csv);
  g_autoptr (TwbMetrics) exported = twb_metrics_new ();
  g_assert_true (twb_metrics_import_csv (exported, csv, NULL, &error));
  g_assert_no_error (error);
  g_autoptr (GArray) ex = loss_points (exported, id);
  assert_same_points (shown, ex);

  /* Again: a new run, kept too, listed first. */
  act (w, "debugger.run");
  g_assert_cmpstr (twb_run_get_id (run_of (w)), ==, "run-2");
  g_assert_cmpint (twb_run_get_state (run_of (w)), ==, TW_SESSION_FINISHED);
  g_autoptr (GPtrArray) again = twb_run_store_list (dir);
  g_assert_cmpuint (again->len, ==, 2);
  g_assert_cmpstr (((TwbRunRecord *) g_ptr_array_index (again, 0))->id, ==, "run-2");
  g_assert_cmpuint (twb_dashboard_n_runs_listed (dash), ==, 2);
  close_window (w);
}

/* Conditional breakpoints: "loss>X" stops in the forward of the first
 * iteration whose loss is above X (found on a reference run of the same
 * seed), saying the loss; "step=N" stops before iteration N, and leaves
 * the user's tab as it was. */
static void
test_conditional_breakpoints (void)
{
  double ref[8];
  TwbWindow *w = open_mlp ();
  act (w, "win.train-steps(8)");
  guint s = series (w, "loss");
  for (gsize i = 0; i < 8; i++)
    {
      double x;
      twb_metrics_get_point (w->metrics, s, i, &x, &ref[i]);
    }
  close_window (w);
  /* A threshold the first step is under and a later one over. */
  int first = -1;
  double threshold = NAN;
  for (int i = 1; i < 8 && first < 0; i++)
    if (ref[i] > ref[0])
      {
        first = i;
        threshold = (ref[0] + ref[i]) / 2;
      }
  g_assert_cmpint (first, >, 0);
  for (int i = 1; i < first; i++)
    g_assert_cmpfloat (ref[i], <, threshold);

  w = open_mlp ();
  g_autofree char *spec = g_strdup_printf ("loss>%.9g", threshold);
  act_s (w, "debugger.add-breakpoint", spec);
  act (w, "debugger.run");
  const tw_snapshot *p = pause_of (w);
  g_test_message ("pause: %s", p->reason);
  g_assert_cmpint (p->iteration, ==, first + 1);
  g_assert_cmpint (p->phase, ==, TW_PHASE_FORWARD);
  g_assert_true (strv_has (p->nodes, "loss"));
  const char *said = strstr (p->reason, "the loss is ");
  g_assert_nonnull (said);
  double l = g_ascii_strtod (said + strlen ("the loss is "), NULL);
  /* %g: six significant digits. */
  g_assert_cmpfloat (fabs (l - ref[first]), <=, 1e-5 * ref[first]);
  close_window (w);

  w = open_mlp ();
  act (w, "win.show-panel('training')");
  act (w, "debugger.add-breakpoint('step=4')");
  act (w, "debugger.run");
  p = pause_of (w);
  g_assert_cmpint (p->phase, ==, -1);
  g_assert_cmpint (p->step, ==, 3);
  g_assert_true (g_str_has_prefix (p->reason, "breakpoint step=4"));
  g_assert_cmpstr (twb_window_get_panel (w), ==, "training");
  close_window (w);
}

/* A dataset that does not fit the model's input ends the run as it
 * prepares (on its worker, before any step), the notice naming both; the
 * worker is gone and no run is filed. */
static void
test_data_mismatch (void)
{
  g_autofree char *json = model_json (mlp_hidden, "spirals", 1, 32);
  /* x [3]: spirals' points have 2 coordinates. */
  char *at = strstr (json, "\"shape\": [2]");
  g_assert_nonnull (at);
  at[10] = '3';
  g_autofree char *path = g_build_filename (tmp_dir, "mismatch.json", NULL);
  g_autoptr (GError) error = NULL;
  g_assert_true (g_file_set_contents (path, json, -1, &error));
  TwbWindow *w = open_window (path);
  act (w, "debugger.run");
  TwbRun *r = run_of (w);
  g_assert_cmpint (twb_run_get_state (r), ==, TW_SESSION_FAILED);
  g_assert_null (twb_run_get_preparing (r));
  g_assert_cmpint (twb_run_get_result (r)->step, ==, 0);
  /* The worker returned; its task leaves /proc as it exits. */
  for (int i = 0; i < 1000 && count_threads ("twb-session") > 0; i++)
    g_usleep (1000);
  g_assert_cmpuint (count_threads ("twb-session"), ==, 0);
  g_autofree char *dir = twb_run_store_dir_for (path, "small");
  g_autoptr (GPtrArray) runs = twb_run_store_list (dir);
  g_assert_cmpuint (runs->len, ==, 0);
  const char *toast = twb_window_get_toast (w);
  g_test_message ("notice: %s", toast);
  g_assert_nonnull (toast);
  g_assert_nonnull (strstr (toast, "spirals"));
  g_assert_nonnull (strstr (toast, "x"));
  close_window (w);
}

/* Compiled from the start: step op goes by instruction; a fused one names
 * several nodes, and the canvas rings every one of them. */
static void
test_compiled_step (void)
{
  TwbWindow *w = open_mlp ();
  TwbGraphCanvas *c = twb_window_get_canvas (w);
  act (w, "debugger.mode('compiled')");
  gboolean fused = FALSE;
  guint n = 0;
  for (int k = 0; k < 12 && !fused; k++)
    {
      act (w, "debugger.step-op");
      const tw_snapshot *p = pause_of (w);
      g_assert_true (p->compiled);
      g_assert_cmpint (p->iteration, ==, 1);
      g_assert_cmpuint (g_strv_length (p->trace), ==, ++n);
      g_assert_nonnull (p->nodes);
      for (char **id = p->nodes; *id; id++)
        g_assert_true (twb_graph_canvas_get_mark (c, *id) & TWB_MARK_CURRENT);
      fused = g_strv_length (p->nodes) >= 2;
      if (fused)
        {
          g_autofree char *nodes = g_strjoinv (", ", p->nodes);
          g_test_message ("instruction %s covers %s", p->op, nodes);
          const char *pos = twb_debugger_panel_get_position (TWB_DEBUGGER_PANEL (w->debugger_panel));
          g_assert_nonnull (strstr (pos, nodes));
          g_assert_nonnull (strstr (pos, "instruction"));
        }
    }
  g_assert_true (fused);
  close_window (w);

  /* A breakpoint leaves its node out of fusion: the run stops at relu1 alone. */
  w = open_mlp ();
  act (w, "debugger.mode('compiled')");
  act (w, "debugger.toggle-breakpoint('relu1')");
  act (w, "debugger.run");
  const tw_snapshot *p = pause_of (w);
  g_assert_true (p->compiled);
  g_assert_cmpint (p->phase, ==, TW_PHASE_FORWARD);
  g_assert_cmpstr (p->nodes[0], ==, "relu1");
  g_assert_null (p->nodes[1]);
  g_assert_true (twb_graph_canvas_get_mark (twb_window_get_canvas (w), "relu1") & TWB_MARK_CURRENT);
  g_assert_false (twb_graph_canvas_get_mark (twb_window_get_canvas (w), "fc1") & TWB_MARK_CURRENT);
  close_window (w);
}

/* A copy asked for at one pause is not taken for a value at the next: the
 * request answered, the run stepped on before the window drained it. */
static void
test_stale_request (void)
{
  TwbWindow *w = open_mlp ();
  act (w, "win.train-steps(1)");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (w), "debugger.inspect", "s", "fc3.weight"));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (w), "debugger.step-op", NULL));
  settle (w);
  const tw_snapshot *p = pause_of (w);
  g_assert_cmpint (p->iteration, ==, 2);
  g_assert_false (strv_has (p->nodes, "fc3"));
  g_assert_null (twb_run_get_tensor (run_of (w), "fc3.weight"));
  /* Asked again, it comes fresh from this pause. */
  g_autoptr (tw_tensor) t = inspect_fresh (w, "fc3.weight", NULL);
  g_assert_cmpint (t->shape[0], ==, 2);
  close_window (w);
}

/* The same edit in compiled mode: the notice that lists the nodes
 * initialised again stays shown beside the session's own note that it
 * compiled a new program, and why. */
static void
test_edit_notice_compiled (void)
{
  TwbWindow *w = open_mlp ();
  act (w, "debugger.mode('compiled')");
  act (w, "win.train-steps(2)");
  g_autoptr (GError) error = NULL;
  g_assert_true (twb_document_set_attr_int (twb_window_get_document (w), "fc2", "out_features", 24,
                                            &error));
  twt_ui_pump ();
  act (w, "debugger.step-op");
  g_assert_true (pause_of (w)->compiled);
  const char *toast = twb_window_get_toast (w);
  g_test_message ("notice: %s", toast);
  g_assert_nonnull (toast);
  /* Both: what the edit did, and that (and why) a program was compiled. */
  g_assert_nonnull (strstr (toast, "fc2, fc3 initialised again"));
  g_assert_nonnull (strstr (toast, "compiled in"));
  g_assert_nonnull (strstr (toast, "(the graph was edited)"));
  close_window (w);
}

int
main (int argc, char **argv)
{
  g_setenv ("TWB_COLOR_SCHEME", "light", FALSE);
  /* Private data dirs: the runs each test makes are kept there. */
  g_autofree char *home = twt_ui_private_home ("training");
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

  g_test_add_func ("/ui/training/train-steps", test_train_steps);
  g_test_add_func ("/ui/training/step-op", test_step_op);
  g_test_add_func ("/ui/training/breakpoint", test_breakpoint);
  g_test_add_func ("/ui/training/nan-forward", test_nan_forward);
  g_test_add_func ("/ui/training/inf-backward", test_inf_backward);
  g_test_add_func ("/ui/training/set-lr", test_set_lr);
  g_test_add_func ("/ui/training/edit-while-paused", test_edit_while_paused);
  g_test_add_func ("/ui/training/mode-switch", test_mode_switch);
  g_test_add_func ("/ui/training/inspector-stats", test_inspector_stats);
  g_test_add_func ("/ui/training/confusion", test_confusion);
  g_test_add_func ("/ui/training/close-while-training", test_close_while_training);
  g_test_add_func ("/ui/training/save-load-weights", test_save_load_weights);
  g_test_add_func ("/ui/training/step-layer-iteration", test_step_layer_iteration);
  g_test_add_func ("/ui/training/freeze", test_freeze);
  g_test_add_func ("/ui/training/breakpoint-on-removed-node", test_breakpoint_on_removed_node);
  g_test_add_func ("/ui/training/stop-mid-step", test_stop_mid_step);
  g_test_add_func ("/ui/training/runs-kept", test_runs_kept);
  g_test_add_func ("/ui/training/conditional-breakpoints", test_conditional_breakpoints);
  g_test_add_func ("/ui/training/data-mismatch", test_data_mismatch);
  g_test_add_func ("/ui/training/compiled-step", test_compiled_step);
  g_test_add_func ("/ui/training/stale-request", test_stale_request);
  g_test_add_func ("/ui/training/edit-notice-compiled", test_edit_notice_compiled);
  int st = g_test_run ();
  g_object_unref (app);
  return st;
}
