/* plot-bench.c — the dashboard plot's frame time with 4 curves of 100,000
 * points each, smoothing 0.6, into a 900 × 300 cairo image surface.
 *
 *   xvfb-run -a build/bench/plot-bench        (GTK needs a display)
 *
 * Rows (milliseconds per frame, median and worst of N frames):
 *   cold     the first draw of freshly loaded series (columns and smoothed
 *            values computed from every point); N = 5, each on a new model
 *   warm     the same frame again (cached columns: O(width) per curve)
 *   growing  100 points appended to each curve, then a frame (the columns
 *            take only the new points while the range holds)
 *   zoomed   a new visible range every frame (columns over the points in
 *            range, smoothed values cached)
 * Floor (the training dashboard): a warm frame under 16 ms.
 */
#include "ui/twb-plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define N_CURVES 4
#define N_POINTS 100000
#define W 900
#define H 300
#define FRAMES 50
#define COLD 5

static double xs[N_CURVES][N_POINTS], ys[N_CURVES][N_POINTS];

/* Loss-like curves: a decaying mean with noise, a NaN now and then. */
static void
make_data (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (1);
  for (int c = 0; c < N_CURVES; c++)
    for (int i = 0; i < N_POINTS; i++)
      {
        xs[c][i] = i;
        ys[c][i] = (c + 1) * exp (-i / 20000.0) + 0.1 * g_rand_double (r);
        if (g_rand_int_range (r, 0, 10000) == 0)
          ys[c][i] = NAN;
      }
}

static TwbPlot *
make_plot (TwbMetrics **m, guint *ids)
{
  *m = twb_metrics_new ();
  static const char *names[] = { "loss", "val_loss", "accuracy", "lr" };
  for (int c = 0; c < N_CURVES; c++)
    {
      ids[c] = twb_metrics_add_series (*m, "run-1", names[c]);
      twb_metrics_append_many (*m, ids[c], xs[c], ys[c], N_POINTS);
    }
  TwbPlot *p = TWB_PLOT (g_object_ref_sink (twb_plot_new (*m, "Loss")));
  for (int c = 0; c < N_CURVES; c++)
    twb_plot_add_curve (p, ids[c], NULL, c == 1);
  twb_plot_set_smoothing (p, 0.6);
  return p;
}

static double
frame_ms (TwbPlot *p, cairo_t *cr)
{
  cairo_save (cr);
  cairo_set_source_rgb (cr, 1, 1, 1);
  cairo_paint (cr);
  cairo_restore (cr);
  gint64 t0 = g_get_monotonic_time ();
  twb_plot_draw (p, cr, W, H);
  cairo_surface_flush (cairo_get_target (cr));
  return (g_get_monotonic_time () - t0) / 1000.0;
}

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

static void
report (const char *row, double *ms, int n)
{
  qsort (ms, n, sizeof *ms, cmp_double);
  printf ("%-8s %8.2f ms median %8.2f ms worst  (%d frames)\n", row, ms[n / 2], ms[n - 1], n);
}

int
main (int argc, char **argv)
{
  if (!gtk_init_check ())
    {
      fprintf (stderr, "plot-bench: no display (run it under xvfb-run -a)\n");
      return 1;
    }
  make_data ();
  cairo_surface_t *surf = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, W, H);
  cairo_t *cr = cairo_create (surf);
  printf ("plot-bench: %d curves x %d points, smoothing 0.6, %dx%d image surface\n", N_CURVES,
          N_POINTS, W, H);

  double cold[COLD];
  for (int k = 0; k < COLD; k++)
    {
      TwbMetrics *m;
      guint ids[N_CURVES];
      TwbPlot *p = make_plot (&m, ids);
      cold[k] = frame_ms (p, cr);
      g_object_unref (p);
      g_object_unref (m);
    }
  report ("cold", cold, COLD);

  TwbMetrics *m;
  guint ids[N_CURVES];
  TwbPlot *p = make_plot (&m, ids);
  frame_ms (p, cr);
  double ms[FRAMES];
  for (int k = 0; k < FRAMES; k++)
    ms[k] = frame_ms (p, cr);
  report ("warm", ms, FRAMES);

  double next = N_POINTS;
  for (int k = 0; k < FRAMES; k++)
    {
      for (int c = 0; c < N_CURVES; c++)
        for (int i = 0; i < 100; i++)
          twb_metrics_append (m, ids[c], next + i, 0.05 + 0.01 * (i % 7));
      next += 100;
      ms[k] = frame_ms (p, cr);
    }
  report ("growing", ms, FRAMES);

  for (int k = 0; k < FRAMES; k++)
    {
      twb_plot_set_x_range (p, 1000.0 * k, 1000.0 * k + 50000);
      ms[k] = frame_ms (p, cr);
    }
  report ("zoomed", ms, FRAMES);

  g_autofree char *png = g_build_filename (g_get_tmp_dir (), "plot-bench.png", NULL);
  twb_plot_reset_zoom (p);
  twb_plot_export (p, png, W, H, NULL);
  printf ("last frame: %s\n", png);
  g_object_unref (p);
  g_object_unref (m);
  cairo_destroy (cr);
  cairo_surface_destroy (surf);
  return 0;
}
