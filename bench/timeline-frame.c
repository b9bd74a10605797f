/* timeline-frame.c — the profiler timeline's frame time at 1,000,000
 * slices: twb_timeline_render (what the widget's snapshot draws, through
 * the same cairo code) into a 1440 × 900 image surface, 50 frames each for
 * the whole range, 1 ms, the middle 10 %, 100 µs (where the slices'
 * names show), and the whole range while a
 * search dims the misses; then the widget in a window through its own
 * snapshot () and GSK's cairo drawing of the node.  Prints median and p95
 * in ms, wall clock and this thread's CPU time.
 *
 * GTK widgets need a display: run under xvfb-run (README, "Profiler").
 *
 *   xvfb-run -a -s "-screen 0 1920x1080x24" build/bench/timeline-frame [--slices N] [--frames N]
 */
#include "profiler/twb-timeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* ~50 distinct names: 10 layers (depth 0), 20 ops (depth 1), 20 kernels (depth 2). */
static const char *layers[] = { "conv1", "relu1", "pool1", "conv2", "relu2",
                                "pool2", "fc1",   "relu3", "fc2",   "softmax" };
static const char *ops[] = { "aten::conv2d", "aten::relu",   "aten::max_pool2d", "aten::linear",
                             "aten::addmm",  "aten::matmul", "aten::softmax",    "aten::copy_",
                             "aten::empty",  "aten::add_",   "aten::mul",        "aten::t",
                             "aten::view",   "aten::reshape", "aten::contiguous", "aten::zeros",
                             "aten::fill_",  "aten::sum",    "aten::mean",       "aten::cat" };
static const char *kernels[] = { "sgemm_128x64_nn", "sgemm_64x64_nt", "im2col_kernel",  "col2im_kernel",
                                 "relu_fwd",        "maxpool_fwd",    "softmax_warp",   "reduce_sum",
                                 "elementwise_add", "elementwise_mul", "memcpy_HtoD",    "memcpy_DtoH",
                                 "fill_kernel",     "transpose_32",   "bias_add",       "winograd_4x4",
                                 "cudnn_conv_fwd",  "cat_kernel",     "mean_kernel",    "copy_kernel" };

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

/* Four lanes on two ranks; per lane repeating units of one layer slice
 * holding 4 ops holding 2 kernels each (13 slices a unit); two counters of
 * 100,000 samples.  Returns the trace's span in ns. */
static tw_trace *
make_trace (guint64 n_slices)
{
  tw_trace *t = tw_trace_new ();
  tw_trace_add_process (t, 1, "rank0");
  tw_trace_add_process (t, 2, "rank1");
  guint lanes[4] = {
    tw_trace_add_lane (t, 1, 1, "main", TW_LANE_THREAD),
    tw_trace_add_lane (t, 1, 2, "stream 7", TW_LANE_STREAM),
    tw_trace_add_lane (t, 2, 3, "main", TW_LANE_THREAD),
    tw_trace_add_lane (t, 2, 4, "stream 7", TW_LANE_STREAM),
  };
  const char *names[50], *cat[3];
  for (guint i = 0; i < 10; i++)
    names[i] = tw_trace_intern (t, layers[i]);
  for (guint i = 0; i < 20; i++)
    {
      names[10 + i] = tw_trace_intern (t, ops[i]);
      names[30 + i] = tw_trace_intern (t, kernels[i]);
    }
  cat[0] = tw_trace_intern (t, "layer");
  cat[1] = tw_trace_intern (t, "op");
  cat[2] = tw_trace_intern (t, "kernel");
  GRand *rnd = g_rand_new_with_seed (42);
  guint64 units = n_slices / 13 / 4;
  gint64 span = 0;
  for (guint l = 0; l < 4; l++)
    {
      gint64 now = 1000000;
      for (guint64 u = 0; u < units; u++)
        {
          /* Ops 2–6 µs, kernels filling most of their op, 0.5–2 µs gaps. */
          gint64 start = now;
          gint64 op_t = start + 200;
          gint64 op_durs[4];
          for (guint k = 0; k < 4; k++)
            op_durs[k] = g_rand_int_range (rnd, 2000, 6000);
          gint64 layer_dur = 200 + op_durs[0] + op_durs[1] + op_durs[2] + op_durs[3] + 4 * 100 + 200;
          tw_trace_add_slice_interned (t, lanes[l], start, layer_dur, names[u % 10], cat[0], NULL, 0);
          for (guint k = 0; k < 4; k++)
            {
              tw_trace_add_slice_interned (t, lanes[l], op_t, op_durs[k],
                                           names[10 + g_rand_int_range (rnd, 0, 20)], cat[1], NULL, 0);
              gint64 half = op_durs[k] / 2;
              for (guint j = 0; j < 2; j++)
                tw_trace_add_slice_interned (t, lanes[l], op_t + j * half + 50, half - 100,
                                             names[30 + g_rand_int_range (rnd, 0, 20)], cat[2], NULL, 0);
              op_t += op_durs[k] + 100;
            }
          now = start + layer_dur + g_rand_int_range (rnd, 500, 2000);
        }
      span = MAX (span, now - 1000000);
    }
  for (guint i = 0; i < 100000; i++)
    {
      gint64 ts = 1000000 + span * i / 100000;
      tw_trace_add_counter (t, 1, "memory", ts, 1e6 + g_rand_double_range (rnd, 0, 5e5));
      tw_trace_add_counter (t, 2, "samples/s", ts, g_rand_double_range (rnd, 900, 1100));
    }
  g_rand_free (rnd);
  tw_trace_sort (t);
  return t;
}

/* This thread's CPU time: on a shared machine the wall clock also counts
 * the time other processes held the core. */
static double
cpu_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void
report (const char *what, double *wall, double *cpu, guint frames, const char *extra)
{
  qsort (wall, frames, sizeof *wall, cmp_double);
  qsort (cpu, frames, sizeof *cpu, cmp_double);
  guint p95 = MIN ((frames * 95) / 100, frames - 1);
  printf ("%-24s wall median %6.2f ms  p95 %6.2f ms   CPU median %6.2f ms  p95 %6.2f ms  (%u frames%s)\n",
          what, wall[frames / 2], wall[p95], cpu[frames / 2], cpu[p95], frames, extra);
}

static void
run (TwbTimeline *tl, cairo_t *cr, const char *what, guint frames)
{
  g_autofree double *wall = g_new (double, frames);
  g_autofree double *cpu = g_new (double, frames);
  for (guint i = 0; i < frames; i++)
    {
      gint64 a = g_get_monotonic_time ();
      double c = cpu_ms ();
      twb_timeline_render (tl, cr, 1440, 900);
      cairo_surface_flush (cairo_get_target (cr));
      wall[i] = (g_get_monotonic_time () - a) / 1000.0;
      cpu[i] = cpu_ms () - c;
    }
  report (what, wall, cpu, frames, "");
}

int
main (int argc, char **argv)
{
  guint64 n_slices = 1000000;
  guint frames = 50;
  const char *png = NULL;
  for (int i = 1; i < argc; i++)
    {
      if (g_str_equal (argv[i], "--slices") && i + 1 < argc)
        n_slices = g_ascii_strtoull (argv[++i], NULL, 10);
      else if (g_str_equal (argv[i], "--frames") && i + 1 < argc)
        {
          int n = atoi (argv[++i]);
          frames = n > 0 ? (guint) n : 1;
        }
      else if (g_str_equal (argv[i], "--png") && i + 1 < argc)
        png = argv[++i];
      else
        {
          fprintf (stderr, "usage: %s [--slices N] [--frames N] [--png PREFIX]\n", argv[0]);
          return 2;
        }
    }
  if (!gtk_init_check ())
    {
      fprintf (stderr, "timeline-frame: no display (run it under xvfb-run)\n");
      return 1;
    }
  gint64 a = g_get_monotonic_time ();
  tw_trace *t = make_trace (n_slices);
  gint64 b = g_get_monotonic_time ();
  TwbTimeline *tl = TWB_TIMELINE (g_object_ref_sink (twb_timeline_new ()));
  twb_timeline_add_trace (tl, t, "generated", 0);
  gint64 c = g_get_monotonic_time ();
  printf ("%" G_GUINT64_FORMAT " slices, %u counter samples, %.3f s of trace; generated in %.0f ms, "
          "indexed (add_trace) in %.0f ms\n",
          tw_trace_n_slices (t), tw_trace_n_counters (t), tw_trace_duration_ns (t) / 1e9,
          (b - a) / 1000.0, (c - b) / 1000.0);

  cairo_surface_t *s = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, 1440, 900);
  cairo_t *cr = cairo_create (s);
  gint64 v0, v1;
  twb_timeline_get_view (tl, &v0, &v1);
  struct
  {
    const char *what;
    gint64 s, e;
    const char *search;
  } cases[] = {
    { "whole range", v0, v1, NULL },
    { "zoomed to 1 ms", v0 + (v1 - v0) / 2, v0 + (v1 - v0) / 2 + 1000000, NULL },
    { "middle 10 %", v0 + (v1 - v0) * 45 / 100, v0 + (v1 - v0) * 55 / 100, NULL },
    { "0.1 ms (names shown)", v0 + (v1 - v0) / 2, v0 + (v1 - v0) / 2 + 100000, NULL },
    { "whole range, searching", v0, v1, "sgemm" },
    { "1 ms, searching", v0 + (v1 - v0) / 2, v0 + (v1 - v0) / 2 + 1000000, "sgemm" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      twb_timeline_set_view (tl, cases[i].s, cases[i].e);
      gint64 sa = g_get_monotonic_time ();
      guint64 n = twb_timeline_set_search (tl, cases[i].search);
      if (cases[i].search)
        printf ("  search \"%s\": %" G_GUINT64_FORMAT " matches in %.0f ms\n", cases[i].search, n,
                (g_get_monotonic_time () - sa) / 1000.0);
      run (tl, cr, cases[i].what, frames);
      if (png)
        {
          g_autofree char *path = g_strdup_printf ("%s-%u.png", png, i);
          cairo_surface_write_to_png (s, path);
        }
    }
  twb_timeline_set_search (tl, NULL);

  /* The widget's own path in a window: its snapshot () (a cairo node) and
   * GSK's cairo drawing of that node, as GSK_RENDERER=cairo does. */
  GtkWidget *win = gtk_window_new ();
  gtk_window_set_default_size (GTK_WINDOW (win), 1440, 900);
  gtk_window_set_child (GTK_WINDOW (win), GTK_WIDGET (tl));
  gtk_window_present (GTK_WINDOW (win));
  for (gint64 end = g_get_monotonic_time () + 500000; g_get_monotonic_time () < end;)
    g_main_context_iteration (NULL, FALSE);
  int ww = gtk_widget_get_width (GTK_WIDGET (tl)), wh = gtk_widget_get_height (GTK_WIDGET (tl));
  for (guint k = 0; k < 2; k++)
    {
      if (k == 0)
        twb_timeline_set_view (tl, v0, v1);
      else
        twb_timeline_set_view (tl, v0 + (v1 - v0) * 45 / 100, v0 + (v1 - v0) * 55 / 100);
      g_autofree double *wall = g_new (double, frames);
      g_autofree double *cpu = g_new (double, frames);
      for (guint i = 0; i < frames; i++)
        {
          gint64 t0 = g_get_monotonic_time ();
          double c0 = cpu_ms ();
          GtkSnapshot *snap = gtk_snapshot_new ();
          GTK_WIDGET_GET_CLASS (tl)->snapshot (GTK_WIDGET (tl), snap);
          GskRenderNode *node = gtk_snapshot_free_to_node (snap);
          if (node)
            {
              gsk_render_node_draw (node, cr);
              gsk_render_node_unref (node);
            }
          cairo_surface_flush (s);
          wall[i] = (g_get_monotonic_time () - t0) / 1000.0;
          cpu[i] = cpu_ms () - c0;
        }
      g_autofree char *extra = g_strdup_printf (", %d x %d in a window", ww, wh);
      report (k == 0 ? "snapshot, whole range" : "snapshot, middle 10 %", wall, cpu, frames, extra);
    }
  gtk_window_destroy (GTK_WINDOW (win));

  cairo_destroy (cr);
  cairo_surface_destroy (s);
  g_object_unref (tl);
  tw_trace_free (t);
  return 0;
}
