/* gui-train-bench.c — what the window costs while it trains: throughput
 * against `twb train`'s headless loop, the dashboard's frame time with
 * 100,000 points per curve, and main-loop latency during a run.
 *
 *   xvfb-run -a -s "-screen 0 1280x1024x24" build/bench/gui-train-bench
 *       [--steps N] [--warm K] [--rounds R] [--threads T] [--model MODEL.json]
 *
 * On MODEL (default assets/models/mlp.json) with its recipe's dataset when
 * that holds at least K + N batches (Fashion-MNIST from /usr/share/datasets;
 * the bundled 4,000-image subset does not), else a synthetic set of the
 * same shapes (60,000 random 28x28 images, 10 classes, IDX files in a
 * temporary folder), so no epoch ends inside the timing.  T: the window's
 * worker threads (its TwbRun's default: the cores, at most 4).  Runs, the
 * recent-files list and the like go to a temporary XDG home.
 *
 * 1. Throughput, R rounds of these paths, the order turning each round
 *    (A/B interleaved: the machine is noisy):
 *      headless       `twb train`'s path: a tw_session in a plain loop that
 *                     polls its queue every 10 ms, gradient norms off (as
 *                     app/twb-train.c), T threads
 *      headless+gn    the same with gradient norms on, as the window's run
 *                     asks for (the engine's part of any difference)
 *      window         a TwbWindow at 1280x800, the Training tab shown, the
 *                     dashboard live: win.train-steps(K + N) under
 *                     g_main_loop_run (nothing pumped by hand)
 *      headless T-1t  headless with one thread fewer (when T > 1)
 *      dashboard T-1t the window's wiring (a TwbRun into the window's
 *                     metrics, the dashboard and status line updated on
 *                     each "progress") with T - 1 worker threads: what
 *                     keeping a core for the UI gives
 *      dash T-1t 250  the same, the charts and status line redrawn at most
 *                     every 250 ms (the drain still every 30 ms; the plots'
 *                     own redraw on each TwbMetrics "changed" blocked)
 *    samples/s = batch x steps from the first look at or past step K to the
 *    look at step K + N (each path looking its own way: the 10 ms poll, the
 *    run's 30 ms drain); "worker step" is the worker's median step_ms over
 *    those steps.  GUI cost = 1 - window / headless, medians of the rounds
 *    (target < 5 %).
 * 2. Dashboard frames: the window's own frames (the frame clock, from
 *    before-paint to after-paint, split at the end of layout) after
 *    twb_dashboard_update, engine idle; then with 100,000 points in every
 *    series the dashboard shows (loss, accuracy, lr, samples/s, step_ms, the
 *    per-epoch ones, a gradient norm per parameter) in a saved run overlaid
 *    through twb_dashboard_show_run as a user ticks it: twb_plot_draw of
 *    every chart at its on-screen size into image surfaces (cold, then
 *    warm), the window's snapshot with its charts invalidated and its
 *    render_texture by the window's renderer (GSK_RENDERER=cairo unless
 *    set), and the window's frames again.  Median and p95 (target < 16 ms).
 * 3. The main loop while training (the window rounds, the dashboard T-1t
 *    rounds, and one window run with the 100k overlay): a thread posts a
 *    G_PRIORITY_DEFAULT source (GDK's input events' priority) every 2–10 ms
 *    and the delay until it runs is what an input event waits; each
 *    main-loop iteration's busy time (poll () return to the next poll (),
 *    through a poll function wrapper), with and without a frame; the
 *    frames as in 2.  Median, p95, p99 and max (target < 50 ms).
 */
#include "app/twb-application.h"
#include "engine/data-fit.h"
#include "engine/params.h"
#include "engine/session.h"
#include "engine/train.h"
#include "ui/twb-dashboard.h"
#include "ui/twb-run-store.h"
#include "ui/twb-window-private.h"

#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WIN_W 1280
#define WIN_H 800
/* The overlaid run's points per series (issue's benchmark: 100,000). */
#define N_POINTS 100000
/* A window run that has not reached its step by then has hung. */
#define RUN_TIMEOUT_S 300
#define FRAMES 50
/* The throttled dashboard path's redraw interval: 4 a second. */
#define SLOW_REDRAW_MS 250

typedef struct
{
  int64_t steps, warm;
  int rounds, threads;
  char *model; /* the temporary copy trained */
} Config;

/* ---- Statistics ------------------------------------------------------------------------- */

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* Quantile q of v (sorted in place; nearest rank). */
static double
quantile (GArray *v, double q)
{
  if (v->len == 0)
    return NAN;
  qsort (v->data, v->len, sizeof (double), cmp_double);
  guint i = (guint) ceil (q * v->len);
  return g_array_index (v, double, MIN (MAX (i, 1), v->len) - 1);
}

static double
median_of (double *v, int n)
{
  g_autoptr (GArray) a = g_array_new (FALSE, FALSE, sizeof (double));
  g_array_append_vals (a, v, n);
  return quantile (a, 0.5);
}

static void
print_dist (const char *what, GArray *v)
{
  guint n = v->len;
  double mx = quantile (v, 1.0);
  printf ("  %-34s median %7.2f  p95 %7.2f  p99 %7.2f  max %7.2f ms  (%u)\n", what,
          quantile (v, 0.5), quantile (v, 0.95), quantile (v, 0.99), mx, n);
}

/* ---- Data ------------------------------------------------------------------------------- */

static gboolean
write_idx (const char *path, guint32 magic, const guint32 *dims, int n_dims, GRand *r,
           guint32 n_values, int mod, GError **error)
{
  g_autoptr (GByteArray) b = g_byte_array_new ();
  guint32 be = GUINT32_TO_BE (magic);
  g_byte_array_append (b, (guint8 *) &be, 4);
  for (int i = 0; i < n_dims; i++)
    {
      be = GUINT32_TO_BE (dims[i]);
      g_byte_array_append (b, (guint8 *) &be, 4);
    }
  gsize head = b->len;
  g_byte_array_set_size (b, head + n_values);
  for (guint32 i = 0; i < n_values; i++)
    b->data[head + i] = (guint8) g_rand_int_range (r, 0, mod);
  return g_file_set_contents (path, (const char *) b->data, b->len, error);
}

/* Fashion-MNIST's shapes: 60,000 / 10,000 images of 28x28, labels 0..9. */
static char *
make_synthetic (const char *dir, GError **error)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (7);
  g_autofree char *d = g_build_filename (dir, "synthetic-fashion", NULL);
  g_mkdir_with_parents (d, 0755);
  const struct
  {
    const char *prefix;
    guint32 n;
  } splits[] = { { "train", 60000 }, { "t10k", 10000 } };
  for (guint s = 0; s < G_N_ELEMENTS (splits); s++)
    {
      g_autofree char *img = g_strdup_printf ("%s/%s-images-idx3-ubyte", d, splits[s].prefix);
      g_autofree char *lab = g_strdup_printf ("%s/%s-labels-idx1-ubyte", d, splits[s].prefix);
      guint32 idims[] = { splits[s].n, 28, 28 };
      if (!write_idx (img, 0x803, idims, 3, r, splits[s].n * 28 * 28, 256, error) ||
          !write_idx (lab, 0x801, idims, 1, r, splits[s].n, 10, error))
        return NULL;
    }
  return g_steal_pointer (&d);
}

/* The model copied into dir (the runs are kept under its path), its
 * dataset replaced by dataset when not NULL.  Written by tw_model_save:
 * json-glib 1.6's generator writes a double such as Adam's eps 1e-08 as
 * "1e-08.0", which no parser reads back. */
static char *
copy_model (const char *src, const char *dir, const char *dataset, GError **error)
{
  g_autoptr (tw_model) copy = tw_model_load (src, error);
  if (copy == NULL)
    return NULL;
  if (dataset)
    {
      g_free (copy->recipe.dataset);
      copy->recipe.dataset = g_strdup (dataset);
    }
  g_autofree char *base = g_path_get_basename (src);
  char *dst = g_build_filename (dir, base, NULL);
  if (!tw_model_save (copy, dst, error))
    g_clear_pointer (&dst, g_free);
  return dst;
}

/* Whether a sample of the model's data input is 784 values (the 28 x 28
 * IDX set fits it); any other shape trains on the engine's synthetic set
 * of its shapes. */
static gboolean
takes_28x28 (const tw_model *m)
{
  const tw_node *n = tw_graph_find_source (m->graph, "data");
  if (n == NULL || n->n_outputs < 1)
    return FALSE;
  int64_t per = 1;
  for (int d = 0; d < n->out_info[0].ndim; d++)
    if (n->out_info[0].dims[d] != TW_DIM_N)
      per *= n->out_info[0].dims[d];
  return per == 28 * 28;
}

/* ---- 1. Headless: `twb train`'s loop ----------------------------------------------------- */

typedef struct
{
  double samples_per_s;
  double step_ms; /* the worker's median step time */
  int64_t steps;  /* measured */
  double ui_cpu;  /* window paths: the main (window) thread's CPU time over the wall time
                   * of the timed steps, in % of a core; < 0 for headless paths */
  double ui_ms_per_step;  /* the same CPU time per step timed, ms (what a loaded machine's
                           * wall time does not change) */
} Figures;

static gboolean
headless_run (const Config *cfg, gboolean grad_norms, Figures *out, GError **error)
{
  out->ui_cpu = -1;
  g_autoptr (tw_model) m = tw_model_load (cfg->model, error);
  if (m == NULL)
    return FALSE;
  tw_graph_infer (m->graph); /* the shapes a synthetic set is made for */
  tw_dataset *train = NULL, *val = NULL, *test = NULL;
  if (!tw_datasets_open_for_training (m, NULL, TRUE, &train, &val, &test, error))
    return FALSE;
  tw_session_options o;
  tw_session_options_init (&o);
  o.threads = cfg->threads;
  o.mode = TW_MODE_EAGER;
  o.max_steps = cfg->warm + cfg->steps;
  o.grad_norms = grad_norms;
  g_autoptr (tw_session) s = tw_session_new (m, train, val, test, &o, error);
  tw_session_options_clear (&o);
  if (s == NULL || !tw_session_run (s, error))
    return FALSE;
  int64_t end = cfg->warm + cfg->steps, s0 = -1;
  gint64 t0 = 0;
  g_autoptr (GArray) ms = g_array_new (FALSE, FALSE, sizeof (double));
  for (;;)
    {
      /* As app/twb-train.c: polled, a look every 10 ms. */
      g_autoptr (tw_snapshot) sn = tw_session_pop (s, 0);
      if (sn == NULL)
        {
          g_usleep (10000);
          continue;
        }
      if (sn->kind == TW_SNAP_FINISHED)
        {
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                       "the run ended at step %" G_GINT64_FORMAT " before step %" G_GINT64_FORMAT
                       ": %s",
                       sn->step, end, sn->message ? sn->message : "?");
          return FALSE;
        }
      if (sn->kind != TW_SNAP_METRICS)
        continue;
      if (sn->step > cfg->warm)
        g_array_append_val (ms, sn->step_ms);
      if (s0 < 0 && sn->step >= cfg->warm)
        {
          t0 = g_get_monotonic_time ();
          s0 = sn->step;
        }
      if (sn->step >= end)
        {
          double dt = (g_get_monotonic_time () - t0) * 1e-6;
          out->steps = sn->step - s0;
          out->samples_per_s = out->steps * (double) MAX (m->recipe.batch_size, 1) / dt;
          out->step_ms = quantile (ms, 0.5);
          break;
        }
    }
  /* The test-set evaluation after the last step is no part of the figure. */
  tw_session_stop (s, NULL);
  g_autoptr (tw_snapshot) fin = NULL;
  while ((fin = tw_session_pop (s, -1))->kind != TW_SNAP_FINISHED)
    g_clear_pointer (&fin, tw_snapshot_free);
  return TRUE;
}

/* ---- Main-loop probes ------------------------------------------------------------------- */

/* What the probes measure, ms each. */
enum
{
  P_LATENCY,    /* a posted G_PRIORITY_DEFAULT source: posted → run */
  P_BUSY_FRAME, /* a main-loop iteration that painted a frame: poll () to poll () */
  P_BUSY_OTHER, /* an iteration without a frame (the drain, input, timers) */
  P_FRAME,      /* the frame clock: before-paint → after-paint */
  P_LAYOUT,     /*   of which before-paint → the end of layout */
  P_PAINT,      /*   of which the end of layout → the end of paint (snapshot, render) */
  N_PROBES
};

static const char *probe_names[N_PROBES] = {
  "posted source → run (input wait)",
  "main-loop iteration with a frame",
  "main-loop iteration without one",
  "frame (before- to after-paint)",
  "  its update + layout",
  "  its paint (snapshot + render)",
};

typedef struct
{
  GMainContext *ctx;
  GThread *thread;
  gint stop;
  gint recording;  /* read by the probe thread */
  gint generation; /* counts record (TRUE): a probe posted in an earlier window is not counted */
  gint64 poll_returned;
  GPollFunc poll;
  gboolean painted; /* this iteration painted a frame */
  gint64 paint_start, layout_end;
  GArray *v[N_PROBES];
} Probes;

static Probes probes;

static void
probe_add (int which, double ms)
{
  g_array_append_val (probes.v[which], ms);
}

static void
probes_clear (void)
{
  for (int i = 0; i < N_PROBES; i++)
    g_array_set_size (probes.v[i], 0);
}

static gboolean
recording (void)
{
  return g_atomic_int_get (&probes.recording);
}

typedef struct
{
  gint64 posted;
  gint generation;
} Probe;

static gboolean
probe_run (gpointer data)
{
  Probe *p = data;
  if (recording () && p->generation == g_atomic_int_get (&probes.generation))
    probe_add (P_LATENCY, (g_get_monotonic_time () - p->posted) / 1000.0);
  return G_SOURCE_REMOVE;
}

static gpointer
probe_thread (gpointer data)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (11);
  while (!g_atomic_int_get (&probes.stop))
    {
      /* 2–10 ms apart, at random: no beat with the 30 ms drain. */
      g_usleep (g_rand_int_range (r, 2000, 10001));
      if (!recording ())
        continue;
      Probe *p = g_new (Probe, 1);
      p->generation = g_atomic_int_get (&probes.generation);
      p->posted = g_get_monotonic_time ();
      g_main_context_invoke_full (probes.ctx, G_PRIORITY_DEFAULT, probe_run, p, g_free);
    }
  return NULL;
}

static gint
timed_poll (GPollFD *fds, guint n, gint timeout)
{
  gint64 now = g_get_monotonic_time ();
  if (recording () && probes.poll_returned)
    probe_add (probes.painted ? P_BUSY_FRAME : P_BUSY_OTHER, (now - probes.poll_returned) / 1000.0);
  probes.painted = FALSE;
  gint r = probes.poll (fds, n, timeout);
  probes.poll_returned = g_get_monotonic_time ();
  return r;
}

static void
probes_start (void)
{
  probes.ctx = g_main_context_default ();
  for (int i = 0; i < N_PROBES; i++)
    probes.v[i] = g_array_new (FALSE, FALSE, sizeof (double));
  probes.poll = g_main_context_get_poll_func (probes.ctx);
  g_main_context_set_poll_func (probes.ctx, timed_poll);
  probes.thread = g_thread_new ("probe", probe_thread, NULL);
}

static void
probes_stop (void)
{
  g_atomic_int_set (&probes.stop, 1);
  g_thread_join (probes.thread);
  g_main_context_set_poll_func (probes.ctx, probes.poll);
  for (int i = 0; i < N_PROBES; i++)
    g_array_unref (probes.v[i]);
}

static void
record (gboolean on)
{
  if (on)
    g_atomic_int_inc (&probes.generation);
  g_atomic_int_set (&probes.recording, on);
  probes.poll_returned = 0;
}

/* Connected after GTK's own handlers (the window is realized first), so
 * "layout" and "paint" here mark the ends of those phases. */
static void
frame_before (GdkFrameClock *c, gpointer data)
{
  probes.paint_start = g_get_monotonic_time ();
  probes.layout_end = 0;
}

static void
frame_layout (GdkFrameClock *c, gpointer data)
{
  probes.layout_end = g_get_monotonic_time ();
}

static void
frame_after (GdkFrameClock *c, gpointer data)
{
  gint64 now = g_get_monotonic_time ();
  probes.painted = TRUE;
  if (recording () && probes.paint_start)
    {
      probe_add (P_FRAME, (now - probes.paint_start) / 1000.0);
      gint64 l = probes.layout_end ? probes.layout_end : probes.paint_start;
      probe_add (P_LAYOUT, (l - probes.paint_start) / 1000.0);
      probe_add (P_PAINT, (now - l) / 1000.0);
    }
  probes.paint_start = 0;
}

/* ---- The window ------------------------------------------------------------------------- */

typedef struct
{
  GMainLoop *loop;
  TwbRun *run;
  int64_t warm, end, s0, s1;
  gint64 t0, t1;
  gint64 cpu0, cpu1;   /* the main thread's CPU time (µs) at t0 and t1 */
  gboolean done, timed_out;
} Watch;

/* The calling thread's CPU time in µs (CLOCK_THREAD_CPUTIME_ID). */
static gint64
thread_cpu_us (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * G_USEC_PER_SEC + ts.tv_nsec / 1000;
}

static void
watch_check (TwbRun *run, Watch *w)
{
  TwbRunProgress p;
  twb_run_get_progress (run, &p);
  gint64 now = g_get_monotonic_time ();
  if (w->t0 == 0 && p.step >= w->warm)
    {
      w->t0 = now;
      w->cpu0 = thread_cpu_us ();
      w->s0 = p.step;
    }
  if (!w->done && (p.step >= w->end || !twb_run_is_active (run) ||
                   twb_run_get_state (run) == TW_SESSION_PAUSED))
    {
      w->done = TRUE;
      w->t1 = now;
      w->cpu1 = thread_cpu_us ();
      w->s1 = p.step;
      g_main_loop_quit (w->loop);
    }
}

static void
watch_progress (TwbRun *run, Watch *w)
{
  watch_check (run, w);
}

static gboolean
watch_timeout (gpointer data)
{
  Watch *w = data;
  w->timed_out = TRUE;
  g_main_loop_quit (w->loop);
  return G_SOURCE_REMOVE;
}

static void
wait_idle (TwbWindow *win)
{
  /* Let the window draw what changed, through the main loop. */
  g_autoptr (GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  g_timeout_add_once (200, (GSourceOnceFunc) g_main_loop_quit, loop);
  g_main_loop_run (loop);
}

/* Stop the window's run through its action and wait for the worker's end. */
static void
stop_window_run (TwbWindow *win)
{
  if (!twb_window_run_is_active (win))
    return;
  gtk_widget_activate_action (GTK_WIDGET (win), "debugger.stop", NULL);
  gint64 until = g_get_monotonic_time () + 30 * G_USEC_PER_SEC;
  while (twb_window_run_is_active (win) && g_get_monotonic_time () < until)
    g_main_context_iteration (NULL, TRUE);
}

/* Runs the main loop until run has done cfg's steps; the figures as
 * headless_run's, the worker's step times from the run's step_ms series. */
static gboolean
watch_run (TwbRun *run, const Config *cfg, TwbMetrics *m, int64_t batch, Figures *out,
           GError **error)
{
  int64_t end = cfg->warm + cfg->steps;
  g_autoptr (GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  Watch w = { .loop = loop, .run = run, .warm = cfg->warm, .end = end, .s0 = -1 };
  gulong h1 = g_signal_connect (run, "progress", G_CALLBACK (watch_progress), &w);
  gulong h2 = g_signal_connect (run, "paused", G_CALLBACK (watch_progress), &w);
  gulong h3 = g_signal_connect (run, "state-changed", G_CALLBACK (watch_progress), &w);
  guint to = g_timeout_add_seconds (RUN_TIMEOUT_S, watch_timeout, &w);
  record (TRUE);
  g_main_loop_run (loop);
  record (FALSE);
  if (!w.timed_out)
    g_source_remove (to);
  g_signal_handler_disconnect (run, h1);
  g_signal_handler_disconnect (run, h2);
  g_signal_handler_disconnect (run, h3);
  if (!w.timed_out && w.s1 >= end && w.s1 <= w.s0)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                   "the run went from step %" G_GINT64_FORMAT " past step %" G_GINT64_FORMAT
                   " between two looks: time more steps (--steps)",
                   cfg->warm, end);
      return FALSE;
    }
  if (w.timed_out || w.s1 < end)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                   "the window's run stopped at step %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT
                   "%s (%s)",
                   w.s1, end, w.timed_out ? " (timed out)" : "",
                   twb_run_get_error (run) ? twb_run_get_error (run) : "no error");
      return FALSE;
    }
  guint ms_series = twb_metrics_find_series (m, twb_run_get_id (run), "step_ms");
  g_autoptr (GArray) ms = g_array_new (FALSE, FALSE, sizeof (double));
  for (gsize i = 0; ms_series != G_MAXUINT && i < twb_metrics_series_len (m, ms_series); i++)
    {
      double x, y;
      twb_metrics_get_point (m, ms_series, i, &x, &y);
      if (x > cfg->warm)
        g_array_append_val (ms, y);
    }
  TwbRunProgress p;
  twb_run_get_progress (run, &p);
  out->steps = w.s1 - w.s0;
  out->samples_per_s = out->steps * (double) batch / ((w.t1 - w.t0) * 1e-6);
  out->step_ms = quantile (ms, 0.5);
  out->ui_cpu = 100.0 * (double) (w.cpu1 - w.cpu0) / (double) MAX (w.t1 - w.t0, 1);
  out->ui_ms_per_step = (double) (w.cpu1 - w.cpu0) / 1000.0 / (double) MAX (out->steps, 1);
  if (p.dropped)
    printf ("    (the window skipped %u metric snapshots)\n", p.dropped);
  return TRUE;
}

static int64_t
window_batch (TwbWindow *win)
{
  return MAX (twb_document_get_model (twb_window_get_document (win))->recipe.batch_size, 1);
}

/* win.train-steps(warm + steps) on a new run, timed as headless_run. */
static gboolean
window_run (TwbWindow *win, const Config *cfg, Figures *out, GError **error)
{
  stop_window_run (win);
  int64_t end = cfg->warm + cfg->steps;
  if (!gtk_widget_activate_action (GTK_WIDGET (win), "win.train-steps", "i", (gint32) end))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "win.train-steps: no such action");
      return FALSE;
    }
  TwbRun *run = twb_window_get_run (win);
  if (run == NULL || !twb_run_is_active (run))
    {
      const char *t = twb_window_get_toast (win);
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "the window did not start a run: %s",
                   t ? t : "?");
      return FALSE;
    }
  return watch_run (run, cfg, win->metrics, window_batch (win), out, error);
}

/* Charts and status line at most this often (0: at every "progress"). */
static gint64 redraw_interval_us;
static gint64 last_redraw;

/* What the window does on a run's "progress" (twb-window-run.c's
 * show_progress): the dashboard and the status line. */
static void
dashboard_progress (TwbRun *run, TwbWindow *win)
{
  gint64 now = g_get_monotonic_time ();
  if (redraw_interval_us && now - last_redraw < redraw_interval_us)
    return;
  last_redraw = now;
  twb_dashboard_update (TWB_DASHBOARD (win->dashboard));
  const char *t = twb_dashboard_get_progress_text (TWB_DASHBOARD (win->dashboard));
  gtk_label_set_text (GTK_LABEL (win->status_run), t ? t : "");
}

static const char *chart_names[] = { "loss", "accuracy", "lr", "throughput", "grad-norm" };
#define N_CHARTS G_N_ELEMENTS (chart_names)

/* The plots' own redraw at each append (their TwbMetrics "changed"
 * handlers; GLib matches handlers to block by data, not by signal alone). */
static void
block_plots (TwbWindow *win, gboolean block)
{
  guint changed = g_signal_lookup ("changed", TWB_TYPE_METRICS);
  for (guint c = 0; c < N_CHARTS; c++)
    {
      gpointer plot = twb_dashboard_get_plot (TWB_DASHBOARD (win->dashboard), chart_names[c]);
      if (block)
        g_signal_handlers_block_matched (win->metrics, G_SIGNAL_MATCH_ID | G_SIGNAL_MATCH_DATA,
                                         changed, 0, NULL, NULL, plot);
      else
        g_signal_handlers_unblock_matched (win->metrics, G_SIGNAL_MATCH_ID | G_SIGNAL_MATCH_DATA,
                                           changed, 0, NULL, NULL, plot);
    }
}

/* The window's wiring (a TwbRun drained on the main loop into the window's
 * metrics, the dashboard following it) with `threads` worker threads
 * instead of the window's fixed default: what one core kept for the UI
 * would give; with redraw_ms > 0, the charts redrawn at most that often
 * (the drain still every 30 ms). */
static gboolean
dashboard_run (TwbWindow *win, const Config *cfg, int threads, int redraw_ms, Figures *out,
               GError **error)
{
  stop_window_run (win);
  redraw_interval_us = redraw_ms * (gint64) 1000;
  last_redraw = 0;
  static int n;
  g_autofree char *id = g_strdup_printf ("bench-%d-threads-%d", threads, ++n);
  TwbRunConfig rc = { .mode = TW_MODE_EAGER, .threads = threads, .run_id = id };
  g_autoptr (TwbRun) run =
    twb_run_new (twb_document_get_model (twb_window_get_document (win)), &rc, win->metrics, error);
  if (run == NULL)
    return FALSE;
  TwbDashboard *d = TWB_DASHBOARD (win->dashboard);
  twb_dashboard_set_run (d, run);
  g_signal_connect (run, "progress", G_CALLBACK (dashboard_progress), win);
  /* Each plot also redraws on its own at every append (TwbMetrics'
   * "changed"): throttled, only dashboard_progress's redraws go through. */
  if (redraw_ms > 0)
    block_plots (win, TRUE);
  gboolean ok = twb_run_run_steps (run, cfg->warm + cfg->steps, error) &&
                watch_run (run, cfg, win->metrics, window_batch (win), out, error);
  twb_run_stop (run, NULL);
  gint64 until = g_get_monotonic_time () + 30 * G_USEC_PER_SEC;
  while (twb_run_is_active (run) && g_get_monotonic_time () < until)
    g_main_context_iteration (NULL, TRUE);
  if (redraw_ms > 0)
    block_plots (win, FALSE);
  redraw_interval_us = 0;
  twb_dashboard_set_run (d, NULL);
  twb_metrics_remove_run (win->metrics, id);
  return ok;
}

/* ---- 2. The dashboard with 100,000 points per curve ------------------------------------- */

/* Every series the current run has, and the per-epoch ones, 100,000
 * points each, saved as a run's CSV beside the window's runs and overlaid. */
static gboolean
overlay_100k (TwbWindow *win, GError **error)
{
  /* twb-run.h's series, one gradient norm per trainable parameter. */
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  for (const char *const *e =
         (const char *const[]){ "loss", "accuracy", "lr", "samples_per_s", "step_ms", "train_loss",
                                "val_loss", "test_loss", "val_accuracy", "test_accuracy", NULL };
       *e; e++)
    g_ptr_array_add (names, g_strdup (*e));
  TwbRun *run = twb_window_get_run (win);
  tw_params *params =
    run ? tw_trainer_params (tw_session_trainer (twb_run_get_session (run))) : NULL;
  for (int i = 0; params && i < tw_params_count (params); i++)
    if (tw_params_at (params, i)->trainable)
      g_ptr_array_add (names, g_strconcat ("grad_norm:", tw_params_at (params, i)->name, NULL));

  g_autoptr (TwbMetrics) m = twb_metrics_new ();
  g_autoptr (GRand) r = g_rand_new_with_seed (3);
  double *x = g_new (double, N_POINTS), *y = g_new (double, N_POINTS);
  for (guint k = 0; k < names->len; k++)
    {
      for (int i = 0; i < N_POINTS; i++)
        {
          x[i] = i + 1;
          /* Loss-like: a decay with noise, so every column has a spread. */
          y[i] = (1 + 0.1 * k) * exp (-i / 30000.0) + 0.1 * g_rand_double (r) + 0.01;
        }
      guint id = twb_metrics_add_series (m, "bench-100k", g_ptr_array_index (names, k));
      twb_metrics_append_many (m, id, x, y, N_POINTS);
    }
  g_free (x);
  g_free (y);
  tw_model *model = twb_document_get_model (twb_window_get_document (win));
  g_autofree char *dir =
    twb_run_store_dir_for (twb_document_get_path (twb_window_get_document (win)), model->name);
  g_mkdir_with_parents (dir, 0755);
  /* The window gives its dashboard the runs folder only when the document's
   * file changes (TWB_CHANGE_FILE), not for a window made on an open file:
   * set here, where twb_run_store_save keeps the window's runs. */
  twb_dashboard_set_runs_dir (TWB_DASHBOARD (win->dashboard), dir);
  g_autofree char *csv = g_build_filename (dir, "bench-100k.csv", NULL);
  if (!twb_metrics_export_csv (m, csv, error))
    return FALSE;
  gint64 t0 = g_get_monotonic_time ();
  if (!twb_dashboard_show_run (TWB_DASHBOARD (win->dashboard), "bench-100k", TRUE, error))
    return FALSE;
  printf ("  overlay: %u series x %d points (%s), loaded in %.0f ms\n", names->len, N_POINTS, csv,
          (g_get_monotonic_time () - t0) / 1000.0);
  g_unlink (csv);
  return TRUE;
}

/* All charts once, each at its on-screen size; ms. */
static double
draw_charts (TwbDashboard *d, cairo_surface_t **surf, double *per_chart)
{
  double total = 0;
  for (guint c = 0; c < N_CHARTS; c++)
    {
      TwbPlot *p = twb_dashboard_get_plot (d, chart_names[c]);
      int w = gtk_widget_get_width (GTK_WIDGET (p)), h = gtk_widget_get_height (GTK_WIDGET (p));
      if (surf[c] == NULL)
        surf[c] = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, MAX (w, 1), MAX (h, 1));
      cairo_t *cr = cairo_create (surf[c]);
      cairo_set_source_rgb (cr, 1, 1, 1);
      cairo_paint (cr);
      gint64 t0 = g_get_monotonic_time ();
      twb_plot_draw (p, cr, w, h);
      cairo_surface_flush (surf[c]);
      double ms = (g_get_monotonic_time () - t0) / 1000.0;
      cairo_destroy (cr);
      if (per_chart)
        per_chart[c] = ms;
      total += ms;
    }
  return total;
}

/* The window's snapshot as a frame takes it (the window's snapshot vfunc:
 * children whose drawing is still valid give their cached nodes), then the
 * whole picture rendered by the window's renderer into a texture. */
static void
window_frame (TwbWindow *win, double *snap_ms, double *render_ms)
{
  GtkWidget *w = GTK_WIDGET (win);
  int width = gtk_widget_get_width (w), height = gtk_widget_get_height (w);
  gint64 t0 = g_get_monotonic_time ();
  GtkSnapshot *snap = gtk_snapshot_new ();
  GTK_WIDGET_GET_CLASS (w)->snapshot (w, snap);
  GskRenderNode *node = gtk_snapshot_free_to_node (snap);
  gint64 t1 = g_get_monotonic_time ();
  *snap_ms = (t1 - t0) / 1000.0;
  *render_ms = 0;
  if (node == NULL)
    return;
  GskRenderer *renderer = gtk_native_get_renderer (GTK_NATIVE (win));
  GdkTexture *tex =
    gsk_renderer_render_texture (renderer, node, &GRAPHENE_RECT_INIT (0, 0, width, height));
  *render_ms = (g_get_monotonic_time () - t1) / 1000.0;
  g_object_unref (tex);
  gsk_render_node_unref (node);
}

/* Ask for a frame and run the main loop until the frame clock has painted
 * it; the frame's time (before- to after-paint) is recorded. */
static void
real_frame (TwbWindow *win)
{
  guint n = probes.v[P_FRAME]->len;
  gint64 until = g_get_monotonic_time () + G_USEC_PER_SEC;
  while (probes.v[P_FRAME]->len == n && g_get_monotonic_time () < until)
    g_main_context_iteration (NULL, TRUE);
}

/* The frames the window paints after a drain's dashboard_update, engine idle. */
static void
idle_frames (TwbWindow *win, const char *what)
{
  TwbDashboard *d = TWB_DASHBOARD (win->dashboard);
  probes_clear ();
  record (TRUE);
  for (int k = 0; k < FRAMES; k++)
    {
      twb_dashboard_update (d);
      real_frame (win);
    }
  record (FALSE);
  print_dist (what, probes.v[P_FRAME]);
  print_dist (probe_names[P_LAYOUT], probes.v[P_LAYOUT]);
  print_dist (probe_names[P_PAINT], probes.v[P_PAINT]);
  probes_clear ();
}

static void
dashboard_frames (TwbWindow *win)
{
  TwbDashboard *d = TWB_DASHBOARD (win->dashboard);
  cairo_surface_t *surf[N_CHARTS] = { NULL };
  double per_chart[N_CHARTS];
  double cold = draw_charts (d, surf, per_chart);
  printf ("  charts at their sizes:");
  for (guint c = 0; c < N_CHARTS; c++)
    {
      TwbPlot *p = twb_dashboard_get_plot (d, chart_names[c]);
      printf (" %s %dx%d (%u curves)%s", chart_names[c], gtk_widget_get_width (GTK_WIDGET (p)),
              gtk_widget_get_height (GTK_WIDGET (p)), twb_plot_n_curves (p),
              c + 1 < N_CHARTS ? "," : "\n");
    }
  printf ("  %-34s %7.2f ms (", "twb_plot_draw, all charts, cold", cold);
  for (guint c = 0; c < N_CHARTS; c++)
    printf ("%s%.1f", c ? " + " : "", per_chart[c]);
  printf (")\n");
  g_autoptr (GArray) warm = g_array_new (FALSE, FALSE, sizeof (double));
  for (int k = 0; k < FRAMES; k++)
    {
      double ms = draw_charts (d, surf, NULL);
      g_array_append_val (warm, ms);
    }
  print_dist ("twb_plot_draw, all charts, warm", warm);
  for (guint c = 0; c < N_CHARTS; c++)
    cairo_surface_destroy (surf[c]);

  g_autoptr (GArray) snap = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr (GArray) render = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr (GArray) total = g_array_new (FALSE, FALSE, sizeof (double));
  for (int k = 0; k < FRAMES; k++)
    {
      double s, r;
      /* The charts' drawing invalidated, as each drain does (without the
       * progress label's new text: no relayout between frames here). */
      for (guint c = 0; c < N_CHARTS; c++)
        gtk_widget_queue_draw (GTK_WIDGET (twb_dashboard_get_plot (d, chart_names[c])));
      window_frame (win, &s, &r);
      double t = s + r;
      g_array_append_val (snap, s);
      g_array_append_val (render, r);
      g_array_append_val (total, t);
    }
  print_dist ("window snapshot (charts redrawn)", snap);
  print_dist ("  its render_texture, whole window", render);
  print_dist ("  both", total);
  idle_frames (win, "window frame after dashboard_update");
}

/* ---- Main --------------------------------------------------------------------------------- */

/* What the probes saw during one kind of run, kept across rounds. */
typedef struct
{
  GArray *v[N_PROBES];
} Seen;

static void
seen_take (Seen *s)
{
  for (int i = 0; i < N_PROBES; i++)
    {
      if (s->v[i] == NULL)
        s->v[i] = g_array_new (FALSE, FALSE, sizeof (double));
      g_array_append_vals (s->v[i], probes.v[i]->data, probes.v[i]->len);
    }
  probes_clear ();
}

static void
seen_print (Seen *s, const char *what)
{
  if (s->v[0] == NULL)
    return;
  printf ("  %s\n", what);
  for (int i = 0; i < N_PROBES; i++)
    {
      print_dist (probe_names[i], s->v[i]);
      g_array_unref (s->v[i]);
      s->v[i] = NULL;
    }
}

static void
setup_dirs (const char *tmp)
{
  /* Runs and recent files in the temporary folder, not the user's. */
  const char *vars[] = { "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME" };
  for (guint i = 0; i < G_N_ELEMENTS (vars); i++)
    {
      g_autofree char *d = g_build_filename (tmp, vars[i], NULL);
      g_mkdir_with_parents (d, 0700);
      g_setenv (vars[i], d, TRUE);
    }
}

static void
print_round (int k, const char *what, const Figures *f)
{
  printf ("  round %d  %-12s %9.0f samples/s  step %6.3f ms  (%" G_GINT64_FORMAT " steps)", k + 1,
          what, f->samples_per_s, f->step_ms, f->steps);
  if (f->ui_cpu >= 0)
    printf ("  window thread %.1f %% of a core, %.2f ms CPU a step", f->ui_cpu, f->ui_ms_per_step);
  printf ("\n");
  fflush (stdout);
}

int
main (int argc, char **argv)
{
  gint64 steps = 600, warm = 20, rounds = 5, threads = 0;
  g_autofree char *model = NULL;
  GOptionEntry entries[] = {
    { "steps", 0, 0, G_OPTION_ARG_INT64, &steps, "Steps timed per run (600)", "N" },
    { "warm", 0, 0, G_OPTION_ARG_INT64, &warm, "Steps before the timing starts (20)", "K" },
    { "rounds", 0, 0, G_OPTION_ARG_INT64, &rounds, "Interleaved rounds (5)", "R" },
    { "threads", 0, 0, G_OPTION_ARG_INT64, &threads,
      "Worker threads (0: the window's default, the cores up to 4)", "T" },
    { "model", 0, 0, G_OPTION_ARG_FILENAME, &model, "Model (assets/models/mlp.json)", "FILE" },
    { NULL },
  };
  g_autoptr (GOptionContext) oc = g_option_context_new ("— the window's cost while training");
  g_option_context_add_main_entries (oc, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (oc, &argc, &argv, &error))
    {
      fprintf (stderr, "gui-train-bench: %s\n", error->message);
      return 2;
    }
  if (steps < 1 || steps > 1000000 || warm < 1 || warm > 100000 || rounds < 1 || rounds > 100 ||
      threads < 0 || threads > 256)
    {
      fprintf (stderr, "gui-train-bench: --steps 1..1000000, --warm 1..100000, --rounds 1..100, "
                       "--threads 0..256\n");
      return 2;
    }
  g_setenv ("GSK_RENDERER", "cairo", FALSE);
  g_setenv ("GTK_A11Y", "none", FALSE);
  g_setenv ("TWB_AUTOSAVE_SECONDS", "0", TRUE);
  g_setenv ("TWB_NO_RECOVERY", "1", TRUE);
  g_autofree char *tmp = g_dir_make_tmp ("twb-gui-bench-XXXXXX", &error);
  if (tmp == NULL)
    {
      fprintf (stderr, "gui-train-bench: %s\n", error->message);
      return 1;
    }
  setup_dirs (tmp);
  if (!gtk_init_check ())
    {
      fprintf (stderr, "gui-train-bench: no display (run it under xvfb-run -a)\n");
      return 1;
    }
  tw_ops_init ();

  Config cfg = { .steps = steps, .warm = warm, .rounds = (int) rounds };
  cfg.threads = threads > 0 ? (int) threads : (int) MIN (g_get_num_processors (), 4);
  g_autofree char *src =
    model ? g_strdup (model)
          : g_build_filename (TWB_SOURCE_DIR, "assets", "models", "mlp.json", NULL);
  g_autoptr (tw_model) m = tw_model_load (src, &error);
  if (m == NULL)
    {
      fprintf (stderr, "gui-train-bench: %s\n", error->message);
      return 1;
    }
  if (tw_graph_infer (m->graph) > 0)
    {
      g_autofree char *errs = tw_graph_errors_to_string (m->graph);
      fprintf (stderr, "gui-train-bench: %s: the graph has errors:\n%s\n", src, errs);
      return 1;
    }
  /* The recipe's dataset when it holds the steps (one epoch: no epoch end
   * inside the timing), else a synthetic one of its shapes. */
  int64_t batch = MAX (m->recipe.batch_size, 1);
  tw_dataset *train = NULL, *val = NULL, *test = NULL;
  g_autofree char *synthetic = NULL;
  g_autofree char *data_note = NULL;
  gboolean fits = tw_datasets_open_for_training (m, NULL, TRUE, &train, &val, &test, NULL) &&
                  tw_dataset_size (train) >= (warm + steps) * batch;
  if (train)
    data_note = g_strdup_printf ("%s, %" G_GINT64_FORMAT " training samples", m->recipe.dataset,
                                 tw_dataset_size (train));
  tw_dataset_free (train);
  tw_dataset_free (val);
  tw_dataset_free (test);
  if (!fits && !takes_28x28 (m))
    {
      synthetic = g_strdup_printf ("synthetic:%" G_GINT64_FORMAT, (warm + steps) * batch);
      g_free (data_note);
      data_note =
        g_strdup_printf ("%s, random class patterns shaped for the model's input", synthetic);
    }
  else if (!fits)
    {
      if ((warm + steps) * batch > 60000)
        {
          fprintf (stderr,
                   "gui-train-bench: %" G_GINT64_FORMAT " steps of %" G_GINT64_FORMAT
                   " are more than one epoch of the synthetic set (60,000)\n",
                   warm + steps, batch);
          return 2;
        }
      synthetic = make_synthetic (tmp, &error);
      if (synthetic == NULL)
        {
          fprintf (stderr, "gui-train-bench: %s\n", error->message);
          return 1;
        }
      g_free (data_note);
      data_note = g_strdup_printf (
        "synthetic, 60000 random 28x28 images (%s does not hold %" G_GINT64_FORMAT " batches)",
        m->recipe.dataset, warm + steps);
    }
  cfg.model = copy_model (src, tmp, synthetic, &error);
  if (cfg.model == NULL)
    {
      fprintf (stderr, "gui-train-bench: %s\n", error->message);
      return 1;
    }

  TwbApplication *app = twb_application_new (G_APPLICATION_NON_UNIQUE);
  g_application_register (G_APPLICATION (app), NULL, NULL);
  twb_application_load_style ();
  g_autoptr (TwbDocument) doc = twb_document_new_from_file (cfg.model, &error);
  if (doc == NULL)
    {
      fprintf (stderr, "gui-train-bench: %s\n", error->message);
      return 1;
    }
  TwbWindow *win = twb_window_new (GTK_APPLICATION (app), doc);
  gtk_window_set_default_size (GTK_WINDOW (win), WIN_W, WIN_H);
  gtk_window_present (GTK_WINDOW (win));
  twb_window_show_panel (win, "training");
  wait_idle (win);
  probes_start ();
  GdkFrameClock *clock = gtk_widget_get_frame_clock (GTK_WIDGET (win));
  g_signal_connect (clock, "before-paint", G_CALLBACK (frame_before), NULL);
  g_signal_connect (clock, "layout", G_CALLBACK (frame_layout), NULL);
  g_signal_connect (clock, "after-paint", G_CALLBACK (frame_after), NULL);

  printf ("gui-train-bench: %s (batch %" G_GINT64_FORMAT "), data: %s\n", src, batch, data_note);
  /* The window's run takes TwbRunConfig.threads = 0: its own default. */
  int window_threads = twb_run_default_threads ();
  printf ("  %d worker threads (the window: %d), %u cores, eager; %" G_GINT64_FORMAT
          " steps timed after %" G_GINT64_FORMAT "; window %dx%d, renderer %s\n",
          cfg.threads, window_threads, g_get_num_processors (), steps, warm,
          gtk_widget_get_width (GTK_WIDGET (win)), gtk_widget_get_height (GTK_WIDGET (win)),
          G_OBJECT_TYPE_NAME (gtk_native_get_renderer (GTK_NATIVE (win))));

  printf ("1. throughput (interleaved rounds)\n");
  enum
  {
    HEADLESS,
    HEADLESS_GN,
    WINDOW,
    HEADLESS_FEWER,
    DASHBOARD_FEWER,
    DASHBOARD_SLOW,
    N_PATHS
  };
  int fewer = cfg.threads - 1;
  int n_paths = fewer > 0 ? N_PATHS : WINDOW + 1;
  g_autofree char *fewer_a = g_strdup_printf ("headless %dt", fewer);
  g_autofree char *fewer_b = g_strdup_printf ("dashboard %dt", fewer);
  g_autofree char *fewer_c = g_strdup_printf ("dash %dt %d ms", fewer, SLOW_REDRAW_MS);
  const char *path_names[N_PATHS] = {
    "headless", "headless+gn", "window", fewer_a, fewer_b, fewer_c
  };
  double *rate[N_PATHS], *step[N_PATHS], *cpu[N_PATHS];
  for (int p = 0; p < N_PATHS; p++)
    {
      rate[p] = g_new0 (double, rounds);
      step[p] = g_new0 (double, rounds);
      cpu[p] = g_new0 (double, rounds);
    }
  Seen seen[4];
  memset (seen, 0, sizeof seen);
  int status = 0;
  for (int k = 0; k < rounds && status == 0; k++)
    {
      /* The order turns each round, so no path always follows the same one. */
      for (int j = 0; j < n_paths && status == 0; j++)
        {
          int which = (j + k) % n_paths;
          Figures f = { 0 };
          Config fewer_cfg = cfg;
          fewer_cfg.threads = fewer;
          gboolean ok = which == HEADLESS         ? headless_run (&cfg, FALSE, &f, &error)
                        : which == HEADLESS_GN    ? headless_run (&cfg, TRUE, &f, &error)
                        : which == WINDOW         ? window_run (win, &cfg, &f, &error)
                        : which == HEADLESS_FEWER ? headless_run (&fewer_cfg, FALSE, &f, &error)
                        : which == DASHBOARD_FEWER
                          ? dashboard_run (win, &cfg, fewer, 0, &f, &error)
                          : dashboard_run (win, &cfg, fewer, SLOW_REDRAW_MS, &f, &error);
          if (!ok)
            {
              fprintf (stderr, "gui-train-bench: %s\n", error->message);
              status = 1;
              break;
            }
          print_round (k, path_names[which], &f);
          if (which == WINDOW || which == DASHBOARD_FEWER || which == DASHBOARD_SLOW)
            seen_take (&seen[which == WINDOW ? 0 : which == DASHBOARD_FEWER ? 1 : 3]);
          rate[which][k] = f.samples_per_s;
          step[which][k] = f.step_ms;
          cpu[which][k] = f.ui_cpu;
        }
    }
  if (status == 0)
    {
      printf ("  median of %d rounds:\n", (int) rounds);
      double med[N_PATHS];
      for (int p = 0; p < n_paths; p++)
        {
          med[p] = median_of (rate[p], rounds);
          printf ("    %-14s %9.0f samples/s  worker step %6.3f ms", path_names[p], med[p],
                  median_of (step[p], rounds));
          double c = median_of (cpu[p], rounds);
          if (c >= 0)
            printf ("  window thread %5.1f %% of a core", c);
          printf ("\n");
        }
      printf ("  GUI cost: %.1f %% (window, %d thread%s, vs headless, %d threads; target < 5 %%); "
              "gradient norms alone %.1f %%\n",
              100 * (1 - med[WINDOW] / med[HEADLESS]), window_threads,
              window_threads == 1 ? "" : "s", cfg.threads,
              100 * (1 - med[HEADLESS_GN] / med[HEADLESS]));
      if (fewer > 0 && fewer == window_threads)
        printf ("  GUI cost at the same threads: %.1f %% (window vs headless, %d)\n",
                100 * (1 - med[WINDOW] / med[HEADLESS_FEWER]), fewer);
      if (fewer > 0)
        printf ("  with %d worker thread%s and the dashboard live: %.1f %% vs headless %d "
                "threads, %.1f %% vs headless %d\n",
                fewer, fewer == 1 ? "" : "s", 100 * (1 - med[DASHBOARD_FEWER] / med[HEADLESS]),
                cfg.threads, 100 * (1 - med[DASHBOARD_FEWER] / med[HEADLESS_FEWER]), fewer);
      if (fewer > 0)
        printf ("  the same, charts redrawn every %d ms at most: %.1f %% vs headless %d\n",
                SLOW_REDRAW_MS, 100 * (1 - med[DASHBOARD_SLOW] / med[HEADLESS_FEWER]), fewer);
      printf ("2. dashboard frames\n");
      idle_frames (win, "window frame, no overlay");
      printf ("   with %d points per curve\n", N_POINTS);
      if (!overlay_100k (win, &error))
        {
          fprintf (stderr, "gui-train-bench: %s\n", error->message);
          status = 1;
        }
      else
        {
          wait_idle (win);
          dashboard_frames (win);
          Figures f = { 0 };
          if (!window_run (win, &cfg, &f, &error))
            {
              fprintf (stderr, "gui-train-bench: %s\n", error->message);
              status = 1;
            }
          else
            {
              print_round (0, "window+100k", &f);
              seen_take (&seen[2]);
            }
        }
      printf ("3. main loop while training\n");
      seen_print (&seen[0], "window (all window rounds):");
      g_autofree char *w1 =
        g_strdup_printf ("dashboard, %d worker thread%s:", fewer, fewer == 1 ? "" : "s");
      seen_print (&seen[1], w1);
      g_autofree char *w2 =
        g_strdup_printf ("dashboard, %d worker thread%s, charts every %d ms:", fewer,
                         fewer == 1 ? "" : "s", SLOW_REDRAW_MS);
      seen_print (&seen[3], w2);
      seen_print (&seen[2], "window with the 100k overlay:");
    }
  stop_window_run (win);
  twb_window_close_now (win);
  wait_idle (NULL);
  probes_stop ();
  for (int p = 0; p < N_PATHS; p++)
    {
      g_free (rate[p]);
      g_free (step[p]);
      g_free (cpu[p]);
    }
  g_free (cfg.model);
  g_object_unref (app);
  return status;
}
