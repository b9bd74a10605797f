/* team.c — whether a thread's parallel regions still pay: the tally of
 * parallel.h ("Contention"), one per thread that opens regions.
 *
 * Per region, with the caller's share taking `busy` and its wait at the
 * barrier `idle`, one thread would have needed about nt × busy, so the team
 * saved (nt − 1) × busy − idle when that is positive and lost its opposite
 * otherwise.  On a quiet machine idle is the team's imbalance plus the
 * wake-up of a thread (microseconds); with a team thread off the CPU it is
 * the rest of someone else's time slice (1.5 ms and more on Linux's EEVDF
 * scheduler with 2 CPUs: 0.75 ms × (1 + log2 CPUs)).
 *
 * Windows of WINDOW_NS (wall time, from the first region after the last
 * decision) are judged at the first region that ends after it, or at once
 * when the window is already BEHIND_NS behind one thread: a window that lost
 * more than it saved, and more than LOST_MIN_NS, sends the thread's regions
 * to one thread
 * for `hold` (HOLD_MIN_NS, doubled up to HOLD_MAX_NS each time the window
 * after a one-thread period loses again: a probe costs at most one window,
 * so under lasting contention the probes cost about WINDOW_NS / HOLD_MAX_NS
 * = 1 % of the run).  A probe window that pays resets hold. */
#define G_LOG_DOMAIN "twb-cpu"

#include "engine/cpu/parallel.h"

#include <stdlib.h>
#include <string.h>

/* 10 ms: several of the scheduler's time slices, so one window sees whether
 * a busy core keeps coming back, and short enough that a step of the small
 * models (about 1 ms) is judged within ten steps. */
#define WINDOW_NS ((gint64) 10000000)
/* Losses below 0.2 ms in a window are not evidence: a futex wake-up of a
 * sleeping team thread costs up to ~50 us in this VM, an interrupt tens of
 * microseconds. */
#define LOST_MIN_NS ((gint64) 200000)
/* 1 ms behind: two of the scheduler's time slices; no wake-up or interrupt
 * on a quiet machine costs that within one window. */
#define BEHIND_NS ((gint64) 1000000)
#define HOLD_MIN_NS ((gint64) 50000000)
#define HOLD_MAX_NS ((gint64) 1600000000)

void
tw_team_policy_init (tw_team_policy *p)
{
  memset (p, 0, sizeof *p);
  p->hold = HOLD_MIN_NS;
}

gboolean
tw_team_policy_parallel (tw_team_policy *p, gint64 now)
{
  if (p->serial_until == 0)
    return TRUE;
  if (now < p->serial_until)
    return FALSE;
  /* The one-thread period is over: the next window is a probe. */
  p->serial_until = 0;
  p->probing = TRUE;
  p->window_start = 0;
  return TRUE;
}

static void
judge (tw_team_policy *p, gint64 now)
{
  if (p->lost > p->saved && p->lost > LOST_MIN_NS)
    {
      if (p->probing)
        p->hold = MIN (p->hold * 2, HOLD_MAX_NS);
      p->serial_until = now + p->hold;
      p->stats.degradations++;
    }
  else if (p->probing)
    p->hold = HOLD_MIN_NS;
  p->probing = FALSE;
  p->window_start = 0;
}

void
tw_team_policy_region (tw_team_policy *p, gint64 now, int nt, gint64 busy, gint64 idle)
{
  gint64 gain = (gint64) (nt - 1) * MAX (busy, 0) - MAX (idle, 0);
  p->stats.regions++;
  if (p->window_start == 0)
    {
      p->window_start = now - MAX (busy, 0) - MAX (idle, 0);
      p->saved = p->lost = 0;
    }
  if (gain >= 0)
    {
      p->saved += gain;
      p->stats.saved_ns += gain;
    }
  else
    {
      p->lost -= gain;
      p->stats.lost_ns -= gain;
    }
  if (now - p->window_start >= WINDOW_NS || p->lost - p->saved >= BEHIND_NS)
    judge (p, now);
}

/* ---- per thread ---------------------------------------------------------- */

static __thread tw_team_policy team;
static __thread gboolean team_ready;
/* The process's totals (tw_team_get_stats). */
static guint64 total_regions, total_degradations;
static gint64 total_saved, total_lost;

static gboolean
adaptive (void)
{
  static gsize once = 0;
  static gboolean on = TRUE;
  if (g_once_init_enter (&once))
    {
      const char *v = g_getenv ("TWB_ADAPTIVE_THREADS");
      on = !(v && strcmp (v, "0") == 0);
      g_once_init_leave (&once, 1);
    }
  return on;
}

static tw_team_policy *
my_team (void)
{
  if (!team_ready)
    {
      tw_team_policy_init (&team);
      team_ready = TRUE;
    }
  return &team;
}

int
tw_team_threads (int nthreads)
{
  if (nthreads <= 1 || omp_in_parallel ())
    return 1;
  if (!adaptive ())
    return nthreads;
  return tw_team_policy_parallel (my_team (), tw_team_now ()) ? nthreads : 1;
}

void
tw_team_end (tw_team_region *r)
{
  gint64 now = tw_team_now ();
  if (r->nt <= 1)
    return;
  if (!adaptive ())
    {
      __atomic_add_fetch (&total_regions, 1, __ATOMIC_RELAXED);
      return;
    }
  /* t_main is 0 only if thread 0 never arrived (it always does). */
  gint64 t_main = r->t_main ? r->t_main : now;
  tw_team_policy *p = my_team ();
  tw_team_stats before = p->stats;
  tw_team_policy_region (p, now, r->nt, t_main - r->t0, now - t_main);
  __atomic_add_fetch (&total_regions, 1, __ATOMIC_RELAXED);
  if (p->stats.degradations != before.degradations)
    __atomic_add_fetch (&total_degradations, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch (&total_saved, p->stats.saved_ns - before.saved_ns, __ATOMIC_RELAXED);
  __atomic_add_fetch (&total_lost, p->stats.lost_ns - before.lost_ns, __ATOMIC_RELAXED);
}

void
tw_team_get_stats (tw_team_stats *out)
{
  out->regions = __atomic_load_n (&total_regions, __ATOMIC_RELAXED);
  out->degradations = __atomic_load_n (&total_degradations, __ATOMIC_RELAXED);
  out->saved_ns = __atomic_load_n (&total_saved, __ATOMIC_RELAXED);
  out->lost_ns = __atomic_load_n (&total_lost, __ATOMIC_RELAXED);
}
