/* test-rate.c — samples/s and the time left from finished steps
 * (engine/rate.h), fed synthetic step timings: 10 ms and 10 s steps, a mix,
 * a pause inside a step and between steps, more steps than the meter keeps;
 * then a real session, whose METRICS snapshots carry the meter's figures,
 * paused for longer than its window.
 *
 * The synthetic clocks are exact integers of nanoseconds, so every figure
 * is compared exactly (to float64 rounding: 1e-12 relative). */
#include "engine/data.h"
#include "engine/events.h"
#include "engine/rate.h"
#include "engine/session.h"
#include "opcheck.h"

#include <math.h>
#include <string.h>

#define MS ((gint64) 1000000)
#define S ((gint64) 1000000000)
/* float64 rounding of a few hundred exact sums and one division. */
#define REL 1e-12

static void
assert_close (double got, double want)
{
  g_assert_cmpfloat (fabs (got - want), <=, REL * MAX (fabs (want), 1e-300));
}

/* n steps of step_ns each from t, batch samples: returns the time after. */
static gint64
feed (tw_rate *r, gint64 t, int n, gint64 step_ns, int64_t batch)
{
  for (int i = 0; i < n; i++)
    {
      t += step_ns;
      tw_rate_step (r, t, batch);
    }
  return t;
}

static void
test_nothing_yet (void)
{
  g_autoptr (tw_rate) r = tw_rate_new (TW_RATE_WINDOW_NS);
  g_assert_cmpfloat (tw_rate_samples_per_s (r), ==, 0);
  g_assert_cmpfloat (tw_rate_eta_s (r, 10, 5 * S), ==, -1);
  g_assert_cmpfloat (tw_rate_eta_s (r, 0, 5 * S), ==, 0);
  g_assert_true (isnan (tw_rate_step_s (r)));
  g_assert_true (isnan (tw_rate_last_step_s (r)));
  tw_rate_start (r, 0);
  /* A step still running is no rate. */
  g_assert_cmpfloat (tw_rate_samples_per_s (r), ==, 0);
  g_assert_cmpfloat (tw_rate_eta_s (r, 10, 30 * S), ==, -1);
}

/* 10 ms steps of 64: 6,400 samples/s; 100 steps left = 1 s. */
static void
test_fast_steps (void)
{
  g_autoptr (tw_rate) r = tw_rate_new (TW_RATE_WINDOW_NS);
  tw_rate_start (r, 0);
  gint64 t = feed (r, 0, 500, 10 * MS, 64);
  g_assert_cmpint (tw_rate_n_steps (r), ==, 500);
  assert_close (tw_rate_samples_per_s (r), 6400);
  assert_close (tw_rate_step_s (r), 0.010);
  assert_close (tw_rate_last_step_s (r), 0.010);
  assert_close (tw_rate_eta_s (r, 100, t), 1.0);
  /* 4 ms into the next step: 4 ms less. */
  assert_close (tw_rate_eta_s (r, 100, t + 4 * MS), 0.996);
  /* The window holds the latest 2 s: 200 steps.  A step twice as long moves
   * the figure by under 1 %. */
  tw_rate_step (r, t + 20 * MS, 64);
  double after = tw_rate_samples_per_s (r);
  g_assert_cmpfloat (after, <, 6400);
  g_assert_cmpfloat (after, >, 6400 * 0.99);
  /* The same steps through a 1 s window give the same rate. */
  g_autoptr (tw_rate) one = tw_rate_new (1 * S);
  tw_rate_start (one, 0);
  feed (one, 0, 500, 10 * MS, 64);
  assert_close (tw_rate_samples_per_s (one), 6400);
}

/* 8 s steps of 16 (ResNet-18 at 224 × 224 on two cores): 2 samples/s,
 * whenever it is asked — the window never restarts from a step that has
 * not finished — and 5 steps left are 40 s. */
static void
test_slow_steps (void)
{
  g_autoptr (tw_rate) r = tw_rate_new (TW_RATE_WINDOW_NS);
  tw_rate_start (r, 0);
  gint64 t = feed (r, 0, 3, 8 * S, 16);
  /* The window asked every 30 ms through the next step, as the window's
   * drain does: the figure stays that of the finished steps. */
  for (gint64 u = t; u < t + 8 * S; u += 30 * MS)
    {
      assert_close (tw_rate_samples_per_s (r), 2.0);
      double eta = tw_rate_eta_s (r, 5, u);
      /* 40 s at the step's start, counting down as it runs. */
      assert_close (eta, 40.0 - (double) (u - t) / S);
    }
  t = feed (r, t, 1, 8 * S, 16);
  assert_close (tw_rate_samples_per_s (r), 2.0);
  assert_close (tw_rate_eta_s (r, 4, t), 32.0);
  /* A step running long: the time left never goes below the other steps'. */
  assert_close (tw_rate_eta_s (r, 4, t + 20 * S), 24.0);
  assert_close (tw_rate_eta_s (r, 1, t + 20 * S), 0.0);
  /* 10 s steps of 16: 1.6 samples/s. */
  g_autoptr (tw_rate) ten = tw_rate_new (TW_RATE_WINDOW_NS);
  tw_rate_start (ten, 0);
  t = feed (ten, 0, 4, 10 * S, 16);
  assert_close (tw_rate_samples_per_s (ten), 1.6);
  assert_close (tw_rate_eta_s (ten, 6, t), 60.0);
}

/* Fast steps, then slow ones, then fast again: the figure follows within
 * one slow step, and within a window of fast ones. */
static void
test_mix (void)
{
  g_autoptr (tw_rate) r = tw_rate_new (TW_RATE_WINDOW_NS);
  tw_rate_start (r, 0);
  gint64 t = feed (r, 0, 300, 10 * MS, 32);
  assert_close (tw_rate_samples_per_s (r), 3200);
  t = feed (r, t, 1, 10 * S, 32);
  /* One step of 10 s covers the window alone. */
  assert_close (tw_rate_samples_per_s (r), 3.2);
  assert_close (tw_rate_step_s (r), 10.0);
  /* 100 fast steps (1 s): the window is those and the slow one. */
  t = feed (r, t, 100, 10 * MS, 32);
  assert_close (tw_rate_samples_per_s (r), 101.0 * 32 / 11.0);
  /* 200 (2 s): the fast ones alone. */
  t = feed (r, t, 100, 10 * MS, 32);
  assert_close (tw_rate_samples_per_s (r), 3200);
  /* Batches of different sizes (an epoch's last, smaller one) count their
   * samples: 3 steps of 10 ms with 32, 32 and 8. */
  g_autoptr (tw_rate) b = tw_rate_new (30 * MS);
  tw_rate_start (b, 0);
  tw_rate_step (b, 10 * MS, 32);
  tw_rate_step (b, 20 * MS, 32);
  tw_rate_step (b, 30 * MS, 8);
  assert_close (tw_rate_samples_per_s (b), 72 / 0.030);
}

/* A pause in the middle of a step (a breakpoint, a minute long) and one
 * between steps: paused time is no step's, and the time left stands still
 * while paused. */
static void
test_pause_resume (void)
{
  g_autoptr (tw_rate) r = tw_rate_new (TW_RATE_WINDOW_NS);
  tw_rate_start (r, 0);
  gint64 t = feed (r, 0, 50, 100 * MS, 10);
  assert_close (tw_rate_samples_per_s (r), 100);
  /* 40 ms into a step, paused for 60 s. */
  tw_rate_stop (r, t + 40 * MS);
  g_assert_false (tw_rate_running (r));
  double eta0 = tw_rate_eta_s (r, 10, t + 40 * MS);
  assert_close (eta0, 0.96);
  assert_close (tw_rate_eta_s (r, 10, t + 30 * S), eta0);
  /* A second stop changes nothing. */
  tw_rate_stop (r, t + 50 * S);
  t += 60 * S;
  tw_rate_start (r, t);
  g_assert_true (tw_rate_running (r));
  tw_rate_start (r, t + 1 * MS);   /* already running: no effect */
  /* The step ends 60 ms after the resume: it took 100 ms. */
  tw_rate_step (r, t + 60 * MS, 10);
  assert_close (tw_rate_last_step_s (r), 0.100);
  assert_close (tw_rate_samples_per_s (r), 100);
  t += 60 * MS;
  /* Paused between steps (an evaluation), then on. */
  tw_rate_stop (r, t);
  tw_rate_start (r, t + 5 * S);
  tw_rate_step (r, t + 5 * S + 100 * MS, 10);
  assert_close (tw_rate_last_step_s (r), 0.100);
  assert_close (tw_rate_samples_per_s (r), 100);
  /* Reset: a new run. */
  tw_rate_reset (r);
  g_assert_cmpint (tw_rate_n_steps (r), ==, 0);
  g_assert_false (tw_rate_running (r));
  g_assert_cmpfloat (tw_rate_samples_per_s (r), ==, 0);
}

/* Steps of 1 µs, more than the meter keeps (4,096): the figure stays exact. */
static void
test_many_tiny_steps (void)
{
  g_autoptr (tw_rate) r = tw_rate_new (TW_RATE_WINDOW_NS);
  tw_rate_start (r, 0);
  feed (r, 0, 10000, 1000, 4);
  g_assert_cmpint (tw_rate_n_steps (r), ==, 10000);
  assert_close (tw_rate_samples_per_s (r), 4e6);
  assert_close (tw_rate_step_s (r), 1e-6);
}

static void
test_format_eta (void)
{
  char buf[32];
  g_assert_cmpstr (tw_rate_format_eta (0, buf, sizeof buf), ==, "0:00");
  g_assert_cmpstr (tw_rate_format_eta (40, buf, sizeof buf), ==, "0:40");
  g_assert_cmpstr (tw_rate_format_eta (59.6, buf, sizeof buf), ==, "1:00");
  g_assert_cmpstr (tw_rate_format_eta (3599.4, buf, sizeof buf), ==, "59:59");
  g_assert_cmpstr (tw_rate_format_eta (3600, buf, sizeof buf), ==, "1:00:00");
  g_assert_cmpstr (tw_rate_format_eta (90061, buf, sizeof buf), ==, "25:01:01");
  g_assert_cmpstr (tw_rate_format_eta (-1, buf, sizeof buf), ==, "—");
  g_assert_cmpstr (tw_rate_format_eta (NAN, buf, sizeof buf), ==, "—");
  g_assert_cmpstr (tw_rate_format_eta (INFINITY, buf, sizeof buf), ==, "—");
}

/* ---- A session ------------------------------------------------------------------------- */



/* Spirals through 2 → 16 → 2, batch 16: each METRICS snapshot carries the
 * session's rate (positive) and time left (falling to 0 at the last step);
 * a pause of 2.5 s — longer than the window — between steps 20 and 21
 * leaves the rate after it within a factor of three of the rate before it
 * (counting the pause, it would fall by over a hundred times: 20 steps of
 * well under a millisecond against 2.5 s). */
static void
test_session (void)
{
  tw_model *m = tw_model_new ("rate-test");
  tw_attrs *h = twt_attrs_int ("out_features", 16), *o = twt_attrs_int ("out_features", 2);
  tw_graph_add_input (m->graph, "x", TW_F32, 1, (int64_t[]) { 2 }, "data");
  tw_graph_add_input (m->graph, "y", TW_I64, 0, NULL, "label");
  tw_graph_add (m->graph, "fc1", "linear", h, "x", NULL);
  tw_graph_add (m->graph, "act", "relu", NULL, "fc1", NULL);
  tw_graph_add (m->graph, "fc2", "linear", o, "act", NULL);
  tw_graph_add (m->graph, "loss", "cross_entropy", NULL, "fc2", "y", NULL);
  tw_graph_set_outputs (m->graph, (const char *[]) { "fc2", NULL });
  tw_attrs_free (h);
  tw_attrs_free (o);
  m->recipe.batch_size = 16;
  m->recipe.epochs = 1;
  g_autoptr (GError) error = NULL;
  tw_dataset *d = tw_dataset_synthetic ("spirals", 16 * 40, 3, -1, &error);
  g_assert_no_error (error);
  tw_session_options opt;
  tw_session_options_init (&opt);
  tw_session *s = tw_session_new (m, d, NULL, NULL, &opt, &error);
  tw_session_options_clear (&opt);
  tw_model_free (m);
  g_assert_no_error (error);
  g_assert_cmpint (tw_session_total_steps (s), ==, 40);
  g_assert_true (tw_session_add_breakpoint (s, "step=21", &error));
  g_assert_true (tw_session_run (s, &error));
  double before = 0;
  for (int i = 1; i <= 20; i++)
    {
      g_autoptr (tw_snapshot) sn = twt_pop_kind (s, TW_SNAP_METRICS);
      g_assert_cmpint (sn->step, ==, i);
      g_assert_cmpfloat (sn->samples_per_s, >, 0);
      g_assert_cmpfloat (sn->eta_s, >=, 0);
      /* 40 - i steps of at most a second each on any machine. */
      g_assert_cmpfloat (sn->eta_s, <=, 40.0 - i);
      before = sn->samples_per_s;
    }
  g_autoptr (tw_snapshot) p = twt_pop_kind (s, TW_SNAP_PAUSED);
  g_usleep (2500 * 1000);
  g_assert_true (tw_session_run (s, &error));
  double after = 0, last_eta = -1;
  for (int i = 21; i <= 40; i++)
    {
      g_autoptr (tw_snapshot) sn = twt_pop_kind (s, TW_SNAP_METRICS);
      g_assert_cmpint (sn->step, ==, i);
      if (i == 21)
        after = sn->samples_per_s;
      last_eta = sn->eta_s;
    }
  g_test_message ("samples/s before the pause %.0f, after %.0f", before, after);
  g_assert_cmpfloat (after, >, before / 3);
  g_assert_cmpfloat (last_eta, ==, 0);
  g_autoptr (tw_snapshot) f = twt_pop_kind (s, TW_SNAP_FINISHED);
  tw_session_free (s);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/rate/nothing-yet", test_nothing_yet);
  g_test_add_func ("/engine/rate/10ms-steps", test_fast_steps);
  g_test_add_func ("/engine/rate/10s-steps", test_slow_steps);
  g_test_add_func ("/engine/rate/mix", test_mix);
  g_test_add_func ("/engine/rate/pause-resume", test_pause_resume);
  g_test_add_func ("/engine/rate/many-tiny-steps", test_many_tiny_steps);
  g_test_add_func ("/engine/rate/format-eta", test_format_eta);
  g_test_add_func ("/engine/rate/session", test_session);
  return g_test_run ();
}
