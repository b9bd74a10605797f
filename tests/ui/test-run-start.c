/* test-run-start.c — starting a run of a model with ImageNet-sized inputs
 * ([3, 224, 224]) in the window: the synthetic set (seconds of work) is
 * made on the session's worker, so the main loop goes on while the run
 * prepares — a heartbeat every 50 ms keeps firing, the status line says
 * what the run prepares, a second F5 does nothing — Stop while preparing
 * ends the run cleanly, and an error while preparing (the initial weights'
 * file broken after it was loaded) reaches the window naming the file.
 *
 * Through the window's actions (F5 is debugger.run, Shift+F5 debugger.stop),
 * the main loop running as it does for a person. */
#include "ui-test.h"
#include "window-test.h"
#include "engine/safetensors.h"
#include "ui/twb-run-store.h"

#include <glib/gstdio.h>
#include <string.h>
#include <time.h>

static TwbApplication *app;
static char *tmp_dir, *shots_dir;

/* The heartbeat's period: three frames at 60 Hz, often enough to see any
 * stall a person would. */
#define BEAT_MS 50
/* The longest the main thread may compute between two heartbeats (its CPU
 * time, which a loaded machine's preemption does not inflate): past a
 * quarter of a second a person sees the window freeze (input and frames
 * wait), and this set's making alone takes 1-3 s of CPU here (ResNet-18's
 * 20 s before it moved to the worker), so a start that blocks is caught
 * with room to spare.  Sanitizer builds run the window's own frames 2-4x
 * slower: four times as much there. */
#if defined(__SANITIZE_ADDRESS__)
#define MAX_BUSY_MS 1000
#else
#define MAX_BUSY_MS 250
#endif
/* The longest wall-clock gap between heartbeats: a main loop blocked
 * without computing (a join, a wait for the worker) shows only here; loose,
 * as a machine with a load of 15 on 2 cores may leave the thread waiting
 * for a core for a while. */
#define MAX_GAP_MS 3000

/* x [3, 224, 224] -> global average pool -> 10 classes, on dataset. */
static char *
write_model (const char *name, const char *dataset)
{
  g_autofree char *json = g_strdup_printf (
    "{ \"format\": \"twb-model\", \"version\": 1, \"name\": \"images\",\n"
    "  \"graph\": { \"nodes\": [\n"
    "    { \"id\": \"x\", \"op\": \"input\", \"attrs\": { \"shape\": [3, 224, 224], \"dtype\": "
    "\"f32\", \"role\": \"data\" }, \"pos\": [40, 40] },\n"
    "    { \"id\": \"y\", \"op\": \"input\", \"attrs\": { \"shape\": [], \"dtype\": \"i64\", "
    "\"role\": \"label\" }, \"pos\": [40, 300] },\n"
    "    { \"id\": \"pool\", \"op\": \"global_avg_pool2d\", \"inputs\": [\"x\"], \"pos\": [290, 40] },\n"
    "    { \"id\": \"flat\", \"op\": \"flatten\", \"inputs\": [\"pool\"], \"pos\": [540, 40] },\n"
    "    { \"id\": \"fc\", \"op\": \"linear\", \"inputs\": [\"flat\"], \"attrs\": { "
    "\"out_features\": 10 }, \"pos\": [790, 40] },\n"
    "    { \"id\": \"loss\", \"op\": \"cross_entropy\", \"inputs\": [\"fc\", \"y\"], "
    "\"pos\": [1040, 220] } ],\n"
    "    \"outputs\": [\"fc\"] },\n"
    "  \"training\": { \"loss\": \"loss\", \"batch_size\": 16, \"epochs\": 1, \"seed\": 0,\n"
    "    \"dataset\": \"%s\", \"validation_split\": 0,\n"
    "    \"optimizer\": { \"type\": \"sgd\", \"lr\": 0.01, \"momentum\": 0, "
    "\"nesterov\": false, \"weight_decay\": 0 },\n"
    "    \"schedule\": { \"type\": \"constant\" } } }\n",
    dataset);
  char *path = g_build_filename (tmp_dir, name, NULL);
  g_autoptr (GError) error = NULL;
  g_assert_true (g_file_set_contents (path, json, -1, &error));
  return path;
}

static TwbWindow *
open_window (const char *path)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TwbDocument) doc = twb_document_new_from_file (path, &error);
  g_assert_no_error (error);
  TwbWindow *w = twb_window_new (GTK_APPLICATION (app), doc);
  gtk_window_set_default_size (GTK_WINDOW (w), 1280, 800);
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

/* ---- The heartbeat ---------------------------------------------------------------------- */

typedef struct
{
  guint source;
  guint beats;
  gint64 last_us, last_cpu_us;
  gint64 max_gap_us, max_busy_us;
} Heart;

static gint64
thread_cpu_us (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return (gint64) ts.tv_sec * G_USEC_PER_SEC + ts.tv_nsec / 1000;
}

static gboolean
beat (gpointer data)
{
  Heart *h = data;
  gint64 now = g_get_monotonic_time (), cpu = thread_cpu_us ();
  h->max_gap_us = MAX (h->max_gap_us, now - h->last_us);
  h->max_busy_us = MAX (h->max_busy_us, cpu - h->last_cpu_us);
  h->last_us = now;
  h->last_cpu_us = cpu;
  h->beats++;
  return G_SOURCE_CONTINUE;
}

static void
heart_start (Heart *h)
{
  memset (h, 0, sizeof *h);
  h->last_us = g_get_monotonic_time ();
  h->last_cpu_us = thread_cpu_us ();
  h->source = g_timeout_add (BEAT_MS, beat, h);
}

/* Stops it, counting the time since the last beat as a gap too. */
static void
heart_stop (Heart *h)
{
  beat (h);
  g_clear_handle_id (&h->source, g_source_remove);
  g_test_message ("heartbeat: %u beats, longest gap %.0f ms, most main-thread CPU between two "
                  "%.0f ms", h->beats, h->max_gap_us / 1e3, h->max_busy_us / 1e3);
}

static void
heart_check (const Heart *h)
{
  g_assert_cmpint (h->max_busy_us, <, MAX_BUSY_MS * 1000);
  g_assert_cmpint (h->max_gap_us, <, MAX_GAP_MS * 1000);
}

/* ---- Driving the window as a person does -------------------------------------------------- */

/* Presses an action's key: activates it if enabled, as the accelerator
 * does; FALSE when it is greyed out. */
static gboolean
press (TwbWindow *w, const char *group_name, const char *action)
{
  GActionGroup *g = g_str_equal (group_name, "debugger") ? G_ACTION_GROUP (w->debugger_actions)
                                                          : G_ACTION_GROUP (w);
  if (!g_action_group_get_action_enabled (g, action))
    return FALSE;
  g_action_group_activate_action (g, action, NULL);
  return TRUE;
}

/* Runs the main loop (blocking iterations, the way gtk_main does) until
 * done (w) or SETTLE_TIMEOUT_S. */
static void
run_until (TwbWindow *w, gboolean (*done) (TwbWindow *w), const char *what)
{
  gint64 end = g_get_monotonic_time () + 4 * SETTLE_TIMEOUT_S * G_USEC_PER_SEC;
  while (!done (w))
    {
      if (g_get_monotonic_time () > end)
        g_error ("%s: not within %d s", what, 4 * SETTLE_TIMEOUT_S);
      g_main_context_iteration (NULL, TRUE);
    }
}

static gboolean
is_preparing (TwbWindow *w)
{
  TwbRun *r = twb_window_get_run (w);
  return r && twb_run_get_preparing (r) != NULL
         && strstr (gtk_label_get_text (GTK_LABEL (w->status_run)), "Preparing the data") != NULL;
}

static gboolean
has_steps (TwbWindow *w)
{
  TwbRunProgress p;
  TwbRun *r = twb_window_get_run (w);
  if (r == NULL)
    return FALSE;
  twb_run_get_progress (r, &p);
  return p.step > 0 || !twb_run_is_active (r);
}

static gboolean
has_ended (TwbWindow *w)
{
  TwbRun *r = twb_window_get_run (w);
  return r && !twb_run_is_active (r) && twb_run_get_result (r) != NULL;
}

static void
screenshot (TwbWindow *w, const char *name)
{
  g_autofree char *path = g_build_filename (shots_dir, name, NULL);
  twt_window_screenshot (GTK_WIDGET (w), path);
}

/* ---- Tests ----------------------------------------------------------------------------- */

/* F5 on an ImageNet-sized model: the heartbeat keeps beating from the key
 * press to the first step; the status line says the run prepares its data
 * meanwhile, and F5 is greyed out (pressing it changes nothing). */
static void
test_responsive_start (void)
{
  g_autofree char *path = write_model ("images.json", "synthetic");
  TwbWindow *w = open_window (path);
  twb_window_show_panel (w, "training");
  twt_ui_pump ();
  Heart h;
  heart_start (&h);
  g_assert_true (press (w, "debugger", "run"));
  TwbRun *r = run_of (w);
  run_until (w, is_preparing, "the status line saying the run prepares");
  g_test_message ("status: %s", gtk_label_get_text (GTK_LABEL (w->status_run)));
  g_assert_nonnull (strstr (gtk_label_get_text (GTK_LABEL (w->status_run)),
                            "Preparing the data (synthetic)"));
  screenshot (w, "run-start-preparing.png");
  /* A second F5 while preparing: greyed out, and nothing else starts. */
  g_assert_false (press (w, "debugger", "run"));
  g_assert_true (twb_window_get_run (w) == r);
  guint beats_preparing = h.beats;
  run_until (w, has_steps, "the first step");
  heart_stop (&h);
  /* It did beat while the data was made. */
  g_assert_cmpuint (h.beats, >, beats_preparing);
  heart_check (&h);
  g_assert_null (twb_run_get_preparing (r));
  run_until (w, has_ended, "the run's end");
  g_assert_cmpint (twb_run_get_state (r), ==, TW_SESSION_FINISHED);
  /* 111 images (2^24 values), batch 16. */
  TwbRunProgress p;
  twb_run_get_progress (r, &p);
  g_assert_cmpint (p.total_steps, ==, 7);
  g_assert_cmpint (p.step, ==, 7);
  close_window (w);
}

/* Stop while the worker makes 1,000 images: the run ends stopped before
 * any step, told so, nothing filed; the next F5 starts afresh. */
static void
test_stop_while_preparing (void)
{
  g_autofree char *path = write_model ("many.json", "synthetic:1000");
  TwbWindow *w = open_window (path);
  Heart h;
  heart_start (&h);
  g_assert_true (press (w, "debugger", "run"));
  run_until (w, is_preparing, "the status line saying the run prepares");
  TwbRun *r = run_of (w);
  g_assert_true (press (w, "debugger", "stop"));
  run_until (w, has_ended, "the run's end after Stop");
  heart_stop (&h);
  heart_check (&h);
  g_assert_cmpint (twb_run_get_state (r), ==, TW_SESSION_STOPPED);
  g_assert_cmpstr (twb_run_get_result (r)->message, ==, "stopped while preparing the run");
  const char *toast = twb_window_get_toast (w);
  g_test_message ("notice: %s", toast);
  g_assert_nonnull (toast);
  g_assert_nonnull (strstr (toast, "before its first step"));
  g_assert_null (strstr (gtk_label_get_text (GTK_LABEL (w->status_run)), "Preparing"));
  g_autofree char *dir = twb_run_store_dir_for (path, "images");
  g_autoptr (GPtrArray) runs = twb_run_store_list (dir);
  g_assert_cmpuint (runs->len, ==, 0);
  /* Run again: a new run prepares (and the window closes while it does). */
  g_assert_true (press (w, "debugger", "run"));
  g_assert_true (twb_window_get_run (w) != r);
  run_until (w, is_preparing, "the second run preparing");
  close_window (w);
}

/* Initial weights loaded, then their file broken before F5: the run fails
 * as it loads them, after its data, the notice naming the file. */
static void
test_error_while_preparing (void)
{
  g_autofree char *path = write_model ("weights.json", "synthetic");
  g_autofree char *wpath = g_build_filename (tmp_dir, "fc.safetensors", NULL);
  g_autoptr (GHashTable) t = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                                    (GDestroyNotify) tw_tensor_unref);
  g_hash_table_insert (t, g_strdup ("fc.weight"), tw_tensor_zeros (TW_F32, 2, (int64_t[]) { 10, 3 }));
  g_hash_table_insert (t, g_strdup ("fc.bias"), tw_tensor_zeros (TW_F32, 1, (int64_t[]) { 10 }));
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_safetensors_save (wpath, t, NULL, &error));
  TwbWindow *w = open_window (path);
  act_s (w, "win.load-weights-to", wpath);
  g_assert_nonnull (strstr (twb_window_get_toast (w), "fc.safetensors"));
  g_assert_true (g_file_set_contents (wpath, "not a safetensors file", -1, &error));
  Heart h;
  heart_start (&h);
  g_assert_true (press (w, "debugger", "run"));
  run_until (w, has_ended, "the run's end");
  heart_stop (&h);
  heart_check (&h);
  TwbRun *r = run_of (w);
  g_assert_cmpint (twb_run_get_state (r), ==, TW_SESSION_FAILED);
  const char *toast = twb_window_get_toast (w);
  g_test_message ("notice: %s", toast);
  g_assert_true (g_str_has_prefix (toast, "Training failed: "));
  g_assert_nonnull (strstr (toast, wpath));
  screenshot (w, "run-start-failed.png");
  g_autofree char *dir = twb_run_store_dir_for (path, "images");
  g_autoptr (GPtrArray) runs = twb_run_store_list (dir);
  g_assert_cmpuint (runs->len, ==, 0);
  close_window (w);
}

int
main (int argc, char **argv)
{
  g_setenv ("TWB_COLOR_SCHEME", "light", FALSE);
  g_autofree char *home = twt_ui_private_home ("run-start");
  tmp_dir = g_build_filename (home, "models", NULL);
  g_mkdir_with_parents (tmp_dir, 0700);
  const char *env = g_getenv ("TWB_TEST_SHOTS");
  shots_dir = env ? g_strdup (env) : g_build_filename (home, "shots", NULL);
  g_mkdir_with_parents (shots_dir, 0700);
  app = twt_window_test_init (&argc, &argv, 0);
  if (app == NULL)
    return 0;
  g_test_add_func ("/ui/run-start/responsive", test_responsive_start);
  g_test_add_func ("/ui/run-start/stop-while-preparing", test_stop_while_preparing);
  g_test_add_func ("/ui/run-start/error-while-preparing", test_error_while_preparing);
  int st = g_test_run ();
  g_object_unref (app);
  return st;
}
