/* parallel.h — loops split over the OpenMP team only when that pays.
 *
 *   TW_PARALLEL_FOR (n * m > 32768, nthreads, i, n, {
 *     y[i] = f (x[i]);
 *   });
 *
 * runs `for (int64_t i = 0; i < n; i++) { … }` with a static schedule over
 * nthreads threads when the condition holds and nthreads > 1, and as a plain
 * loop on the calling thread otherwise.  Why not `#pragma omp parallel for
 * if (…)`: a region whose if clause is false still enters libgomp, which
 * allocates and frees a team structure for it every time (it caches teams
 * of two threads or more only) — an allocation per small kernel in a step
 * that must allocate nothing, and a microsecond or so each.
 *
 * The body is a macro argument: no preprocessor directives inside it (use
 * _Pragma), and iterations must be independent, as in any parallel for.
 *
 * Contention.  A parallel region ends at a barrier: the calling thread waits
 * until every thread of the team has done its share.  When another process
 * holds one of the cores, a team thread can be off the CPU for a whole time
 * slice (1.5 ms or more), and libgomp's waiting threads spin (about 300,000
 * pauses, milliseconds, unless OMP_WAIT_POLICY or GOMP_SPINCOUNT say
 * otherwise), taking the very CPU the late thread needs.  Measured on the
 * 2-core machine with one core busy: the MLP's compiled step at 2 threads had
 * a median of 0.8 ms and a mean of 25 ms; at 1 thread 1.0 and 1.8.  libgomp
 * reads its wait policy once, when it is loaded, so the engine cannot change
 * it; and it should not: it is the user's setting for all their OpenMP code.
 * Instead every region here is timed (three clock reads), and each thread
 * that opens regions keeps a tally (team.c): the time its regions saved
 * against one thread — (nthreads − 1) × the caller's own share — and the
 * time they lost, the caller waiting at the barrier beyond that.  When a
 * window of WINDOW_NS of regions lost more than it saved, the caller's
 * regions run on one thread for a while (50 ms, doubling to 1.6 s while
 * each probe window after it loses again), then try the team again.  So
 * under contention a run degrades to about its one-thread speed instead of
 * waiting a time slice per region, and on a quiet machine nothing changes.
 * TWB_ADAPTIVE_THREADS=0 in the environment turns this off (to measure
 * what it does).
 *
 * Code that opens a region by hand brackets it the same way:
 *
 *   int nt = tw_team_threads (want);
 *   tw_team_region r;
 *   tw_team_begin (&r, nt);
 *   #pragma omp parallel num_threads (nt)
 *   {
 *     … this thread's share …
 *     tw_team_arrive (&r);
 *   }
 *   tw_team_end (&r);
 */
#pragma once

#include <glib.h>
#include <omp.h>
#include <stdint.h>
#include <time.h>

G_BEGIN_DECLS

/* The threads a region that wants nthreads may use now on the calling
 * thread: nthreads, or 1 while its recent regions lost more to waiting than
 * they saved, or inside a parallel region (no nesting).  At least 1. */
int tw_team_threads (int nthreads);

/* One timed region (on the caller's stack, shared with the team). */
typedef struct
{
  gint64 t0;     /* ns, when the caller opened the region */
  gint64 t_main; /* ns, when the caller finished its own share */
  int nt;
} tw_team_region;

static inline gint64
tw_team_now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (gint64) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void
tw_team_begin (tw_team_region *r, int nt)
{
  r->nt = nt;
  r->t_main = 0;
  r->t0 = tw_team_now ();
}

/* Inside the region, by every thread after its share: the caller (thread
 * 0) notes the time. */
static inline void
tw_team_arrive (tw_team_region *r)
{
  if (omp_get_thread_num () == 0)
    r->t_main = tw_team_now ();
}

/* After the region, on the caller: adds it to the caller's tally. */
void tw_team_end (tw_team_region *r);

/* What the regions did: a policy's own (below), or the process's totals
 * over all threads (tw_team_get_stats: `twb train --json`, benchmarks). */
typedef struct
{
  guint64 regions;      /* timed parallel regions */
  guint64 degradations; /* windows that sent the regions to one thread */
  gint64 saved_ns, lost_ns;
} tw_team_stats;
void tw_team_get_stats (tw_team_stats *out);

/* The tally as a state machine on a given clock, for tests: team.c runs one
 * per thread on CLOCK_MONOTONIC. */
typedef struct
{
  gint64 window_start; /* ns; 0: no window open */
  gint64 saved, lost;  /* ns, this window */
  gint64 serial_until; /* ns: one thread until then */
  gint64 hold;         /* ns: the next one-thread period */
  gboolean probing;    /* this window follows a one-thread period */
  tw_team_stats stats; /* this policy's */
} tw_team_policy;

void tw_team_policy_init (tw_team_policy *p);
/* May a region opened at `now` use the team? */
gboolean tw_team_policy_parallel (tw_team_policy *p, gint64 now);
/* A region of nt threads ended at `now`; the caller's share took busy ns
 * and it then waited idle ns at the barrier. */
void tw_team_policy_region (tw_team_policy *p, gint64 now, int nt, gint64 busy, gint64 idle);

#define TW_PARALLEL_FOR(cond, nthreads, i, n, ...)                                          \
  do                                                                                        \
    {                                                                                       \
      const int64_t tw_pf_n_ = (n);                                                         \
      int tw_pf_nt_ = (nthreads);                                                           \
      if (tw_pf_nt_ > 1 && (cond) && (tw_pf_nt_ = tw_team_threads (tw_pf_nt_)) > 1)         \
        {                                                                                   \
          tw_team_region tw_pf_r_;                                                          \
          tw_team_begin (&tw_pf_r_, tw_pf_nt_);                                             \
          _Pragma ("omp parallel num_threads (tw_pf_nt_)")                                  \
          {                                                                                 \
            _Pragma ("omp for schedule (static) nowait")                                    \
            for (int64_t i = 0; i < tw_pf_n_; i++)                                          \
              __VA_ARGS__                                                                   \
            tw_team_arrive (&tw_pf_r_);                                                     \
          }                                                                                 \
          tw_team_end (&tw_pf_r_);                                                          \
        }                                                                                   \
      else                                                                                  \
        for (int64_t i = 0; i < tw_pf_n_; i++)                                              \
          __VA_ARGS__                                                                       \
    }                                                                                       \
  while (0)

/* The same with a dynamic schedule, one iteration at a time, and tid the
 * number of the thread running the body (0 when serial): for loops over a
 * few large pieces of work, each with its own scratch (ws + tid * size).
 * Which thread runs which iteration varies; the results must not depend on
 * it.  A thread that is late (contention) leaves its iterations to the
 * others instead of holding the region up for all of them. */
#define TW_PARALLEL_FOR_DYNAMIC(cond, nthreads, tid, i, n, ...)                             \
  do                                                                                        \
    {                                                                                       \
      const int64_t tw_pd_n_ = (n);                                                         \
      int tw_pd_nt_ = (nthreads);                                                           \
      if (tw_pd_nt_ > 1 && (cond) && (tw_pd_nt_ = tw_team_threads (tw_pd_nt_)) > 1)         \
        {                                                                                   \
          tw_team_region tw_pd_r_;                                                          \
          tw_team_begin (&tw_pd_r_, tw_pd_nt_);                                             \
          _Pragma ("omp parallel num_threads (tw_pd_nt_)")                                  \
          {                                                                                 \
            const int tid = omp_get_thread_num ();                                          \
            (void) tid;                                                                     \
            _Pragma ("omp for schedule (dynamic, 1) nowait")                                \
            for (int64_t i = 0; i < tw_pd_n_; i++)                                          \
              __VA_ARGS__                                                                   \
            tw_team_arrive (&tw_pd_r_);                                                     \
          }                                                                                 \
          tw_team_end (&tw_pd_r_);                                                          \
        }                                                                                   \
      else                                                                                  \
        {                                                                                   \
          const int tid = 0;                                                                \
          (void) tid;                                                                       \
          for (int64_t i = 0; i < tw_pd_n_; i++)                                            \
            __VA_ARGS__                                                                     \
        }                                                                                   \
    }                                                                                       \
  while (0)

G_END_DECLS
