/* rate.c — samples/s and the time left, from completed steps (rate.h). */
#include "engine/rate.h"

#include <math.h>
#include <string.h>

/* Finished steps kept at most: the window then covers the latest 4,096
 * steps when they are shorter than window / 4,096 (0.5 ms for the
 * session's 2 s), still far more steps than the figure needs. */
#define RATE_MAX_STEPS 4096

typedef struct
{
  gint64 ns;
  int64_t samples;
} finished;

struct tw_rate
{
  gint64 window_ns;
  finished ring[RATE_MAX_STEPS];
  guint head, len;              /* the window: ring[head], … ring[head + len - 1] (mod) */
  gint64 sum_ns;                /* over the window */
  int64_t sum_samples;
  int64_t n_steps;
  gint64 last_ns;
  gboolean running;
  gint64 run_start;             /* when the clock last started, or the last step finished */
  gint64 carried;               /* running time of the unfinished step before the last stop */
};

tw_rate *
tw_rate_new (gint64 window_ns)
{
  g_return_val_if_fail (window_ns > 0, NULL);
  tw_rate *r = g_new0 (tw_rate, 1);
  r->window_ns = window_ns;
  return r;
}

void
tw_rate_free (tw_rate *r)
{
  g_free (r);
}

void
tw_rate_reset (tw_rate *r)
{
  gint64 w = r->window_ns;
  memset (r, 0, sizeof *r);
  r->window_ns = w;
}

void
tw_rate_start (tw_rate *r, gint64 t_ns)
{
  if (r->running)
    return;
  r->running = TRUE;
  r->run_start = t_ns;
}

void
tw_rate_stop (tw_rate *r, gint64 t_ns)
{
  if (!r->running)
    return;
  r->carried += MAX (t_ns - r->run_start, 0);
  r->running = FALSE;
}

gboolean
tw_rate_running (const tw_rate *r)
{
  return r->running;
}

static gint64
unfinished_ns (const tw_rate *r, gint64 t_ns)
{
  return r->carried + (r->running ? MAX (t_ns - r->run_start, 0) : 0);
}

void
tw_rate_step (tw_rate *r, gint64 t_ns, int64_t samples)
{
  gint64 ns = unfinished_ns (r, t_ns);
  r->carried = 0;
  if (r->running)
    r->run_start = t_ns;
  if (r->len == RATE_MAX_STEPS)
    {
      r->sum_ns -= r->ring[r->head].ns;
      r->sum_samples -= r->ring[r->head].samples;
      r->head = (r->head + 1) % RATE_MAX_STEPS;
      r->len--;
    }
  r->ring[(r->head + r->len) % RATE_MAX_STEPS] = (finished) { ns, MAX (samples, 0) };
  r->len++;
  r->sum_ns += ns;
  r->sum_samples += MAX (samples, 0);
  r->n_steps++;
  r->last_ns = ns;
  /* The fewest latest steps that still cover the window. */
  while (r->len > 1 && r->sum_ns - r->ring[r->head].ns >= r->window_ns)
    {
      r->sum_ns -= r->ring[r->head].ns;
      r->sum_samples -= r->ring[r->head].samples;
      r->head = (r->head + 1) % RATE_MAX_STEPS;
      r->len--;
    }
}

int64_t
tw_rate_n_steps (const tw_rate *r)
{
  return r->n_steps;
}

double
tw_rate_last_step_s (const tw_rate *r)
{
  return r->n_steps > 0 ? (double) r->last_ns * 1e-9 : NAN;
}

double
tw_rate_samples_per_s (const tw_rate *r)
{
  if (r->len == 0 || r->sum_ns <= 0)
    return 0;
  return (double) r->sum_samples / ((double) r->sum_ns * 1e-9);
}

double
tw_rate_step_s (const tw_rate *r)
{
  if (r->len == 0)
    return NAN;
  return (double) r->sum_ns * 1e-9 / r->len;
}

double
tw_rate_eta_s (const tw_rate *r, int64_t steps_left, gint64 t_ns)
{
  if (steps_left <= 0)
    return 0;
  if (r->len == 0)
    return -1;
  double per = tw_rate_step_s (r);
  double eta = per * (double) steps_left - (double) unfinished_ns (r, t_ns) * 1e-9;
  return MAX (eta, per * (double) (steps_left - 1));
}

char *
tw_rate_format_eta (double s, char *buf, gsize len)
{
  if (!isfinite (s) || s < 0)
    {
      g_strlcpy (buf, "—", len);
      return buf;
    }
  /* Beyond ~31,700 years a run's ETA is no number worth printing. */
  int64_t t = (int64_t) MIN (s + 0.5, 1e12);
  if (t >= 3600)
    g_snprintf (buf, len, "%" G_GINT64_FORMAT ":%02d:%02d", t / 3600, (int) (t / 60 % 60),
                (int) (t % 60));
  else
    g_snprintf (buf, len, "%d:%02d", (int) (t / 60), (int) (t % 60));
  return buf;
}
