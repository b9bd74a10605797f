/* rate.h — samples/s and the time left, from completed training steps.
 *
 * A tw_rate is told when each step finishes and how many samples it took,
 * and when its clock stops and starts again (a pause, an evaluation at the
 * end of an epoch).  Each finished step's wall time is the clock's running
 * time since the previous step finished (or since the clock first started):
 * data loading and everything else between two steps count, paused time
 * does not.  The rate is the samples of the latest finished steps over
 * their wall time, taken over the fewest latest steps that ran at least the
 * window (at least one step), so it is right for 10 ms steps (about a
 * hundred averaged in a second's window) and for 10 s steps (the last one
 * alone) alike, and it changes only when a step finishes: a step that takes
 * longer than the window never makes the rate restart from nothing.
 *
 *   tw_rate *r = tw_rate_new (TW_RATE_WINDOW_NS);
 *   tw_rate_start (r, tw_now_ns ());
 *   for (each step)
 *     {
 *       train_one_step ();
 *       tw_rate_step (r, tw_now_ns (), batch);
 *       printf ("%.0f samples/s, %.0f s left\n", tw_rate_samples_per_s (r),
 *               tw_rate_eta_s (r, total - done, tw_now_ns ()));
 *     }
 *   tw_rate_free (r);
 *
 * Times are nanoseconds on one monotonic clock (engine/events.h's
 * tw_now_ns; the tests pass synthetic ones).  The session keeps one for its
 * run and puts its figures in every METRICS snapshot, so the window's
 * progress line and `twb train`'s share this one implementation.  No
 * allocation after tw_rate_new (the training loop calls it every step).
 */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

/* The window the session uses: two seconds of finished steps (about 200 at
 * 10 ms, so the figure moves by well under 1 % a step; the last step alone
 * once steps take 2 s or more). */
#define TW_RATE_WINDOW_NS (2 * (gint64) 1000000000)

typedef struct tw_rate tw_rate;

/* window_ns > 0.  Free with tw_rate_free. */
tw_rate *tw_rate_new (gint64 window_ns);
void tw_rate_free (tw_rate *r);
/* Forget every step (a new run); the clock is stopped. */
void tw_rate_reset (tw_rate *r);

/* The clock runs from t (the run starts or goes on after a pause). */
void tw_rate_start (tw_rate *r, gint64 t_ns);
/* The clock stops at t (a pause, an evaluation); the unfinished step keeps
 * the time it has run so far. */
void tw_rate_stop (tw_rate *r, gint64 t_ns);
gboolean tw_rate_running (const tw_rate *r);
/* A step of `samples` samples finished at t. */
void tw_rate_step (tw_rate *r, gint64 t_ns, int64_t samples);

/* Steps finished since the start (or the last reset). */
int64_t tw_rate_n_steps (const tw_rate *r);
/* The latest finished step's wall time in seconds; NaN before the first. */
double tw_rate_last_step_s (const tw_rate *r);
/* Samples per second over the window; 0 before the first step. */
double tw_rate_samples_per_s (const tw_rate *r);
/* Mean seconds per step over the window; NaN before the first step. */
double tw_rate_step_s (const tw_rate *r);
/* Seconds until steps_left more steps finish, at t: steps_left × the mean
 * step time, less what the unfinished step has run (but never below the
 * time of steps_left − 1 steps: a step slower than the mean is taken as
 * about to end, not as overdue).  0 when steps_left <= 0; -1 (unknown)
 * before the first step. */
double tw_rate_eta_s (const tw_rate *r, int64_t steps_left, gint64 t_ns);

/* Seconds as "m:ss" or "h:mm:ss", rounded to the second; "—" when s is
 * negative or not finite (unknown).  Writes at most len bytes to buf (32 is
 * enough) and returns buf. */
char *tw_rate_format_eta (double s, char *buf, gsize len);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_rate, tw_rate_free)

G_END_DECLS
