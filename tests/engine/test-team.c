/* test-team.c — parallel regions under contention (engine/cpu/parallel.h,
 * team.c): the tally's decisions on a synthetic clock, and TW_PARALLEL_FOR
 * itself (every iteration once, on the team or alone).
 *
 * The clock is the test's: regions are fed with the caller's share (busy)
 * and its wait at the barrier (idle) as a quiet machine, a loaded one and a
 * noisy one would give them, so the decisions do not depend on how busy the
 * machine running the test is. */
#include "engine/cpu/parallel.h"

#include <glib.h>
#include <string.h>

#define US ((gint64) 1000)
#define MS ((gint64) 1000000)

/* Feeds regions of nt threads from `now` for `span` ns (each busy + idle
 * long, back to back); returns the time after the last.  Regions the policy
 * would not open in parallel are skipped (the caller runs them alone: busy
 * × nt). */
static gint64
feed (tw_team_policy *p, gint64 now, gint64 span, int nt, gint64 busy, gint64 idle,
      int *serial)
{
  gint64 end = now + span;
  while (now < end)
    {
      if (!tw_team_policy_parallel (p, now))
        {
          now += busy * nt;
          if (serial)
            (*serial)++;
          continue;
        }
      now += busy + idle;
      tw_team_policy_region (p, now, nt, busy, idle);
    }
  return now;
}

/* A quiet machine: the partner arrives within microseconds; nothing ever
 * goes to one thread, over many windows. */
static void
test_quiet (void)
{
  tw_team_policy p;
  tw_team_policy_init (&p);
  int serial = 0;
  gint64 t = feed (&p, 1 * MS, 500 * MS, 2, 40 * US, 3 * US, &serial);
  g_assert_cmpint (serial, ==, 0);
  g_assert_cmpuint (p.stats.degradations, ==, 0);
  g_assert_true (tw_team_policy_parallel (&p, t));
  g_assert_cmpint (p.stats.saved_ns, >, 0);
}

/* Noise: one region in a window waits 150 us (an interrupt, a wake-up from
 * sleep): below the evidence needed, the team keeps its threads. */
static void
test_noise (void)
{
  tw_team_policy p;
  tw_team_policy_init (&p);
  gint64 t = feed (&p, 1 * MS, 5 * MS, 2, 20 * US, 2 * US, NULL);
  t += 170 * US;
  tw_team_policy_region (&p, t, 2, 20 * US, 150 * US);
  t = feed (&p, t, 50 * MS, 2, 20 * US, 2 * US, NULL);
  g_assert_cmpuint (p.stats.degradations, ==, 0);
  g_assert_true (tw_team_policy_parallel (&p, t));
}

/* Small regions whose partner keeps missing a time slice: the regions go to
 * one thread within the first window, for HOLD_MIN (50 ms); the probe
 * after it loses again and the hold doubles; a probe on a quiet machine
 * gets the team back and the hold returns to its minimum. */
static void
test_contended_then_quiet (void)
{
  tw_team_policy p;
  tw_team_policy_init (&p);
  gint64 t = 1 * MS;
  /* 20 us of work each, the partner 1.5 ms late. */
  for (int i = 0; i < 10 && p.stats.degradations == 0; i++)
    {
      t += 20 * US + 1500 * US;
      tw_team_policy_region (&p, t, 2, 20 * US, 1500 * US);
    }
  g_assert_cmpuint (p.stats.degradations, ==, 1);
  g_assert_false (tw_team_policy_parallel (&p, t + 1 * MS));
  g_assert_false (tw_team_policy_parallel (&p, t + 49 * MS));
  gint64 hold1 = p.hold;
  g_assert_cmpint (hold1, ==, 50 * MS);

  /* The probe: still contended. */
  t += 50 * MS;
  g_assert_true (tw_team_policy_parallel (&p, t));
  for (int i = 0; i < 10 && p.stats.degradations == 1; i++)
    {
      t += 20 * US + 1500 * US;
      tw_team_policy_region (&p, t, 2, 20 * US, 1500 * US);
    }
  g_assert_cmpuint (p.stats.degradations, ==, 2);
  g_assert_cmpint (p.hold, ==, 2 * hold1);
  g_assert_false (tw_team_policy_parallel (&p, t + 99 * MS));

  /* The next probe: the machine is quiet again. */
  t += 100 * MS;
  int serial = 0;
  t = feed (&p, t, 30 * MS, 2, 40 * US, 3 * US, &serial);
  g_assert_cmpint (serial, ==, 0);
  g_assert_cmpuint (p.stats.degradations, ==, 2);
  g_assert_cmpint (p.hold, ==, hold1);
  g_assert_true (tw_team_policy_parallel (&p, t));
}

/* Lasting contention: the hold doubles up to its cap (1.6 s), so probes
 * cost about one window in 1.6 s; the regions are parallel only in the
 * probe windows. */
static void
test_lasting_contention_caps_hold (void)
{
  tw_team_policy p;
  tw_team_policy_init (&p);
  int serial = 0;
  gint64 t = feed (&p, 1 * MS, 20000 * MS, 2, 20 * US, 1500 * US, &serial);
  g_assert_cmpint (p.hold, ==, 1600 * MS);
  g_assert_cmpuint (p.stats.degradations, >=, 6);
  g_assert_cmpuint (p.stats.degradations, <=, 20);
  /* Nearly everything ran alone. */
  g_assert_cmpint (serial, >, 50 * (int) p.stats.regions);
  g_assert_cmpint (t, >, 0);
}

/* Large regions gain more than a late start costs: a 5 ms share with the
 * partner 1.5 ms late still saves 3.5 ms per region against one thread, so
 * the team keeps both threads. */
static void
test_large_regions_keep_team (void)
{
  tw_team_policy p;
  tw_team_policy_init (&p);
  int serial = 0;
  feed (&p, 1 * MS, 200 * MS, 2, 5 * MS, 1500 * US, &serial);
  g_assert_cmpint (serial, ==, 0);
  g_assert_cmpuint (p.stats.degradations, ==, 0);
}

/* TW_PARALLEL_FOR: each iteration exactly once, whether the region opens
 * (2 threads over enough work) or not (1 thread, or a false condition);
 * timed regions are counted. */
static void
test_parallel_for (void)
{
  enum { N = 100000 };
  static int hits[N];
  for (int pass = 0; pass < 3; pass++)
    {
      memset (hits, 0, sizeof hits);
      int nt = pass == 0 ? 1 : 2;
      gboolean cond = pass != 2;
      tw_team_stats before;
      tw_team_get_stats (&before);
      TW_PARALLEL_FOR (cond, nt, i, N, { hits[i]++; });
      for (int i = 0; i < N; i++)
        g_assert_cmpint (hits[i], ==, 1);
      tw_team_stats after;
      tw_team_get_stats (&after);
      /* A region is timed only when it opened on a team (this thread's
       * tally is fresh: the team is not held back). */
      g_assert_cmpuint (after.regions - before.regions, ==, pass == 1 ? 1 : 0);
    }
  g_assert_cmpint (tw_team_threads (1), ==, 1);
  g_assert_cmpint (tw_team_threads (0), ==, 1);
  int inner = 0;
#pragma omp parallel num_threads (2)
  {
#pragma omp master
    inner = tw_team_threads (4);
  }
  /* No nested teams. */
  g_assert_cmpint (inner, ==, 1);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/team/quiet", test_quiet);
  g_test_add_func ("/engine/team/noise", test_noise);
  g_test_add_func ("/engine/team/contended-then-quiet", test_contended_then_quiet);
  g_test_add_func ("/engine/team/lasting-contention", test_lasting_contention_caps_hold);
  g_test_add_func ("/engine/team/large-regions", test_large_regions_keep_team);
  g_test_add_func ("/engine/team/parallel-for", test_parallel_for);
  return g_test_run ();
}
