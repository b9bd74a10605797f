/* test-timeline.c — the profiler's timeline widget in a real window under
 * Xvfb: view, coordinates, actions, pointer handlers (through the test
 * hooks the gestures call), search, highlight, collapse, rendering. */
#include "profiler/chrome-read.h"
#include "profiler/ranks.h"
#include "profiler/twb-timeline-private.h"

#include <cairo-svg.h>
#include <string.h>
#ifdef GDK_WINDOWING_X11
#include <gdk/x11/gdkx.h>
#endif

static void
pump (void)
{
  for (int round = 0; round < 5; round++)
    {
      gint64 end = g_get_monotonic_time () + 20000;
      while (g_get_monotonic_time () < end)
        if (!g_main_context_iteration (NULL, FALSE))
          g_usleep (1000);
    }
}

/* Until w is on screen with a size (a loaded machine maps windows late), at most 10 s. */
static void
wait_mapped (GtkWidget *w)
{
  gint64 end = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  while ((!gtk_widget_get_mapped (w) || gtk_widget_get_width (w) <= 0) && g_get_monotonic_time () < end)
    pump ();
  pump ();
}

/* Lanes: rank0 main (steps, ops with "nodes", a gemm inside conv1),
 * rank0 stream 7 (kernels), rank1 main; a memory counter, a flow from the
 * gemm to its kernel, an instant. */
static tw_trace *
make_trace (gint64 t0)
{
  tw_trace *t = tw_trace_new ();
  tw_trace_add_process (t, 1, "rank0");
  tw_trace_add_process (t, 2, "rank1");
  guint a = tw_trace_add_lane (t, 1, 10, "main", TW_LANE_THREAD);
  guint b = tw_trace_add_lane (t, 1, 11, "stream 7", TW_LANE_STREAM);
  guint c = tw_trace_add_lane (t, 2, 20, "main", TW_LANE_THREAD);
  tw_trace_arg conv[] = { { "nodes", "conv1" }, { "shape", "[8,1,28,28]" } };
  tw_trace_arg relu[] = { { "nodes", "relu1, conv1" } };
  tw_trace_arg fc[] = { { "nodes", "fc1" } };
  tw_trace_add_slice (t, a, t0 + 1000, 10000, "step 0", "step", NULL, 0);
  tw_trace_add_slice (t, a, t0 + 1000, 3000, "conv1", "op", conv, 2);
  tw_trace_add_slice (t, a, t0 + 1500, 1500, "gemm", "op", NULL, 0);
  tw_trace_add_slice (t, a, t0 + 5000, 1000, "relu", "op", relu, 1);
  tw_trace_add_slice (t, a, t0 + 12000, 10000, "step 1", "step", NULL, 0);
  tw_trace_add_slice (t, a, t0 + 12000, 3000, "Conv1", "op", conv, 2);
  tw_trace_add_slice (t, a, t0 + 16000, 4000, "fc", "op", fc, 1);
  tw_trace_add_slice (t, b, t0 + 2000, 800, "sgemm_kernel", "kernel", NULL, 0);
  tw_trace_add_slice (t, b, t0 + 13000, 1500, "sgemm_kernel", "kernel", NULL, 0);
  tw_trace_add_slice (t, c, t0 + 1500, 9500, "step 0", "step", NULL, 0);
  tw_trace_add_slice (t, c, t0 + 2000, 7000, "allreduce", "comm", NULL, 0);
  tw_trace_add_counter (t, 1, "memory", t0 + 1000, 10);
  tw_trace_add_counter (t, 1, "memory", t0 + 5000, 50);
  tw_trace_add_counter (t, 1, "memory", t0 + 9000, 20);
  tw_trace_add_counter (t, 1, "memory", t0 + 20000, 5);
  tw_trace_add_flow (t, 1, "launch", a, t0 + 1500, b, t0 + 2000);
  tw_trace_add_instant (t, a, t0 + 11000, "checkpoint", "io");
  tw_trace_sort (t);
  return t;
}

/* The slice of lane named name (the first). */
static TwbSliceRef
find (const tw_trace *t, guint group, guint lane, const char *name)
{
  for (guint i = 0; i < tw_trace_lane_n_slices (t, lane); i++)
    if (g_str_equal (tw_trace_lane_slice (t, lane, i)->name, name))
      return (TwbSliceRef) { group, lane, i };
  g_assert_not_reached ();
}

typedef struct
{
  GtkWidget *win;
  TwbTimeline *tl;
  tw_trace *t;
  guint n_selected, n_range, n_view;
  gboolean last_null;
  TwbSliceRef last;
} Fixture;

static void
on_selected (TwbTimeline *tl, gpointer ref, Fixture *fx)
{
  fx->n_selected++;
  fx->last_null = ref == NULL;
  if (ref)
    fx->last = *(const TwbSliceRef *) ref;
}

static void
on_range (TwbTimeline *tl, Fixture *fx)
{
  fx->n_range++;
}

static void
on_view (TwbTimeline *tl, Fixture *fx)
{
  fx->n_view++;
}

/* Base time 5 s: a recording's monotonic clock is far from 0. */
#define T0 ((gint64) 5000000000)

static void
fixture_setup (Fixture *fx, gconstpointer data)
{
  fx->t = make_trace (T0);
  fx->win = gtk_window_new ();
  gtk_window_set_default_size (GTK_WINDOW (fx->win), 1000, 500);
  fx->tl = TWB_TIMELINE (twb_timeline_new ());
  gtk_window_set_child (GTK_WINDOW (fx->win), GTK_WIDGET (fx->tl));
  g_assert_cmpuint (twb_timeline_add_trace (fx->tl, fx->t, "eager", 0), ==, 0);
  g_signal_connect (fx->tl, "slice-selected", G_CALLBACK (on_selected), fx);
  g_signal_connect (fx->tl, "range-changed", G_CALLBACK (on_range), fx);
  g_signal_connect (fx->tl, "view-changed", G_CALLBACK (on_view), fx);
  gtk_window_present (GTK_WINDOW (fx->win));
  wait_mapped (GTK_WIDGET (fx->tl));
  g_assert_cmpint (gtk_widget_get_width (GTK_WIDGET (fx->tl)), >, 500);
}

static void
fixture_teardown (Fixture *fx, gconstpointer data)
{
  gtk_window_destroy (GTK_WINDOW (fx->win));
  pump ();
  tw_trace_free (fx->t);
}

static void
test_view (Fixture *fx, gconstpointer data)
{
  gint64 s, e;
  /* Added to an empty timeline: the whole trace, 0 at its first event. */
  twb_timeline_get_view (fx->tl, &s, &e);
  g_assert_cmpint (s, ==, 0);
  g_assert_cmpint (e, ==, tw_trace_duration_ns (fx->t));
  g_assert_cmpint (e, ==, 21000);

  guint before = fx->n_view;
  twb_timeline_set_view (fx->tl, 100, 5000);
  twb_timeline_get_view (fx->tl, &s, &e);
  g_assert_cmpint (s, ==, 100);
  g_assert_cmpint (e, ==, 5000);
  g_assert_cmpuint (fx->n_view, ==, before + 1);
  /* Narrower than 100 ns: widened around its middle; reversed: swapped. */
  twb_timeline_set_view (fx->tl, 1000, 1010);
  twb_timeline_get_view (fx->tl, &s, &e);
  g_assert_cmpint (e - s, ==, 100);
  g_assert_cmpint (s, ==, 955);
  twb_timeline_set_view (fx->tl, 9000, 3000);
  twb_timeline_get_view (fx->tl, &s, &e);
  g_assert_cmpint (s, ==, 3000);
  g_assert_cmpint (e, ==, 9000);

  /* A second group starting 1 ms earlier, offset by 1 ms + 500 ns: its
   * events sit 500 ns later than the first group's on the view axis. */
  g_autoptr (tw_trace) t2 = make_trace (T0 - 1000000);
  guint g = twb_timeline_add_trace (fx->tl, t2, "compiled", -1000000 - 500);
  g_assert_cmpuint (g, ==, 1);
  g_assert_cmpuint (twb_timeline_n_groups (fx->tl), ==, 2);
  g_assert_true (twb_timeline_get_trace (fx->tl, 1) == t2);
  g_assert_cmpint (twb_timeline_get_offset (fx->tl, 1), ==, -1000000 - 500);
  /* The view was kept (the base did not move: group 1 starts later on the axis). */
  twb_timeline_get_view (fx->tl, &s, &e);
  g_assert_cmpint (s, ==, 3000);
  twb_timeline_zoom_all (fx->tl);
  twb_timeline_get_view (fx->tl, &s, &e);
  g_assert_cmpint (s, ==, 0);
  g_assert_cmpint (e, ==, 21000 + 500);
  pump ();
  /* The same slice in both groups: 500 ns apart in x. */
  TwbSliceRef r0 = find (fx->t, 0, 0, "fc"), r1 = find (t2, 1, 0, "fc");
  graphene_rect_t a, b;
  g_assert_true (twb_timeline_slice_rect (fx->tl, &r0, &a));
  g_assert_true (twb_timeline_slice_rect (fx->tl, &r1, &b));
  g_assert_cmpfloat_with_epsilon (b.origin.x - a.origin.x,
                                  twb_timeline_time_to_x (fx->tl, 500) - twb_timeline_time_to_x (fx->tl, 0),
                                  1e-3);
  g_assert_cmpfloat (b.origin.y, >, a.origin.y);

  /* A group earlier on the axis moves the base: the view follows, what is shown stays. */
  g_autoptr (tw_trace) t3 = make_trace (T0);
  double x_before = a.origin.x;
  guint views = fx->n_view;
  twb_timeline_add_trace (fx->tl, t3, "early", 2000);
  g_assert_cmpuint (fx->n_view, ==, views + 1);
  g_assert_true (twb_timeline_slice_rect (fx->tl, &r0, &a));
  g_assert_cmpfloat_with_epsilon (a.origin.x, x_before, 1e-3);
  twb_timeline_get_view (fx->tl, &s, &e);
  g_assert_cmpint (s, ==, 2000);
  twb_timeline_clear (fx->tl);
  g_assert_cmpuint (twb_timeline_n_groups (fx->tl), ==, 0);
}

static void
test_coords (Fixture *fx, gconstpointer data)
{
  twb_timeline_set_view (fx->tl, 0, 25000);
  for (gint64 t = 0; t <= 25000; t += 1234)
    {
      double x = twb_timeline_time_to_x (fx->tl, t);
      /* About 33 ns a pixel: x back to time within half of that. */
      g_assert_cmpint (ABS (twb_timeline_x_to_time (fx->tl, x) - t), <=, 1);
      g_assert_cmpfloat_with_epsilon (twb_timeline_time_to_x (fx->tl, twb_timeline_x_to_time (fx->tl, x)), x, 0.05);
    }
  double x0 = twb_timeline_time_to_x (fx->tl, 0), x1 = twb_timeline_time_to_x (fx->tl, 25000);
  g_assert_cmpfloat_with_epsilon (x0, 180, 1e-9);
  g_assert_cmpfloat_with_epsilon (x1, gtk_widget_get_width (GTK_WIDGET (fx->tl)), 1e-6);

  /* gemm: depth 2 on lane 0, 500 ns after the first event, 1.5 µs long. */
  TwbSliceRef gemm = find (fx->t, 0, 0, "gemm");
  graphene_rect_t r;
  g_assert_true (twb_timeline_slice_rect (fx->tl, &gemm, &r));
  g_assert_cmpfloat_with_epsilon (r.origin.x, twb_timeline_time_to_x (fx->tl, 500), 1e-3);
  g_assert_cmpfloat_with_epsilon (r.origin.x + r.size.width, twb_timeline_time_to_x (fx->tl, 2000), 1e-3);
  TwbSliceRef step = find (fx->t, 0, 0, "step 0");
  graphene_rect_t rs;
  g_assert_true (twb_timeline_slice_rect (fx->tl, &step, &rs));
  g_assert_cmpfloat_with_epsilon (r.origin.y - rs.origin.y, 2 * 18, 1e-3);
  /* Out of view, and narrower than a pixel: not visible. */
  twb_timeline_set_view (fx->tl, 12000, 20000);
  g_assert_false (twb_timeline_slice_rect (fx->tl, &gemm, &r));
  twb_timeline_set_view (fx->tl, 0, 1000000000);
  g_assert_false (twb_timeline_slice_rect (fx->tl, &gemm, &r));
}

static void
test_ruler (void)
{
  char buf[64];
  /* 18.5 ms every 0.5 ms in a view reaching 22 ms; 5 µs every 5 µs; 0.2 s in
   * a 3 s view; 5.001 s every ms; an offset of 200 ns. */
  tl_tick_label (buf, sizeof buf, 18500000, 500000, 22e6, FALSE);
  g_assert_cmpstr (buf, ==, "18.5 ms");
  tl_tick_label (buf, sizeof buf, 5000, 5000, 21000, FALSE);
  g_assert_cmpstr (buf, ==, "5 µs");
  tl_tick_label (buf, sizeof buf, 200000000, 200000000, 3e9, FALSE);
  g_assert_cmpstr (buf, ==, "0.2 s");
  tl_tick_label (buf, sizeof buf, 5001000000, 1000000, 5.1e9, FALSE);
  g_assert_cmpstr (buf, ==, "5.001 s");
  tl_tick_label (buf, sizeof buf, 50000, 50000, 3.5e8, FALSE);
  g_assert_cmpstr (buf, ==, "0.05 ms");
  tl_tick_label (buf, sizeof buf, 200, 100, 0, TRUE);
  g_assert_cmpstr (buf, ==, "200 ns");
  tl_tick_label (buf, sizeof buf, 0, 20, 80, FALSE);
  g_assert_cmpstr (buf, ==, "0 ns");
}

static void
test_actions (Fixture *fx, gconstpointer data)
{
  GtkWidget *w = GTK_WIDGET (fx->tl);
  gint64 s, e;
  twb_timeline_set_view (fx->tl, 4000, 12000);
  g_assert_true (gtk_widget_activate_action (w, "timeline.zoom-in", NULL));
  twb_timeline_get_view (fx->tl, &s, &e);
  g_assert_cmpint (s, ==, 6000);
  g_assert_cmpint (e, ==, 10000);
  g_assert_true (gtk_widget_activate_action (w, "timeline.zoom-out", NULL));
  twb_timeline_get_view (fx->tl, &s, &e);
  g_assert_cmpint (s, ==, 4000);
  g_assert_cmpint (e, ==, 12000);
  /* Pans move by a fifth of the view. */
  g_assert_true (gtk_widget_activate_action (w, "timeline.pan-right", NULL));
  twb_timeline_get_view (fx->tl, &s, &e);
  g_assert_cmpint (s, ==, 4000 + 1600);
  g_assert_cmpint (e, ==, 12000 + 1600);
  g_assert_true (gtk_widget_activate_action (w, "timeline.pan-left", NULL));
  g_assert_true (gtk_widget_activate_action (w, "timeline.pan-left", NULL));
  twb_timeline_get_view (fx->tl, &s, &e);
  g_assert_cmpint (s, ==, 4000 - 1600);
  g_assert_true (gtk_widget_activate_action (w, "timeline.zoom-all", NULL));
  twb_timeline_get_view (fx->tl, &s, &e);
  g_assert_cmpint (s, ==, 0);
  g_assert_cmpint (e, ==, 21000);
  twb_timeline_set_range (fx->tl, 7000, 3000);
  g_assert_true (twb_timeline_get_range (fx->tl, &s, &e));
  g_assert_cmpint (s, ==, 3000);
  g_assert_cmpint (e, ==, 7000);
  g_assert_true (gtk_widget_activate_action (w, "timeline.zoom-selection", NULL));
  twb_timeline_get_view (fx->tl, &s, &e);
  g_assert_cmpint (s, ==, 3000);
  g_assert_cmpint (e, ==, 7000);
  /* No range: zoom-selection shows the selected slice with a tenth each side. */
  twb_timeline_set_range (fx->tl, 0, 0);
  g_assert_false (twb_timeline_get_range (fx->tl, &s, &e));
  g_assert_cmpint (s, ==, 0);
  TwbSliceRef fc = find (fx->t, 0, 0, "fc");
  twb_timeline_select_slice (fx->tl, &fc);
  g_assert_true (gtk_widget_activate_action (w, "timeline.zoom-selection", NULL));
  twb_timeline_get_view (fx->tl, &s, &e);
  g_assert_cmpint (s, ==, 15000 - 400);
  g_assert_cmpint (e, ==, 19000 + 400);
}

static void
test_pointer (Fixture *fx, gconstpointer data)
{
  twb_timeline_set_view (fx->tl, 0, 25000);
  pump ();
  TwbSliceRef relu = find (fx->t, 0, 0, "relu");
  graphene_rect_t r;
  g_assert_true (twb_timeline_slice_rect (fx->tl, &relu, &r));
  double cx = r.origin.x + r.size.width / 2, cy = r.origin.y + r.size.height / 2;
  twb_timeline_test_click (fx->tl, cx, cy, 1);
  TwbSliceRef got;
  g_assert_true (twb_timeline_get_selected_slice (fx->tl, &got));
  g_assert_cmpuint (got.group, ==, 0);
  g_assert_cmpuint (got.lane, ==, relu.lane);
  g_assert_cmpuint (got.index, ==, relu.index);
  g_assert_cmpuint (fx->n_selected, ==, 1);
  g_assert_false (fx->last_null);
  g_assert_cmpuint (fx->last.index, ==, relu.index);
  /* The parent under it, one row up. */
  TwbSliceRef step = find (fx->t, 0, 0, "step 0");
  twb_timeline_test_click (fx->tl, cx, cy - 18, 1);
  g_assert_true (twb_timeline_get_selected_slice (fx->tl, &got));
  g_assert_cmpuint (got.index, ==, step.index);
  g_assert_cmpuint (fx->n_selected, ==, 2);
  /* The tooltip names the slice, its duration and arguments. */
  g_autofree char *tip = twb_timeline_test_tooltip (fx->tl, cx, cy);
  g_assert_nonnull (strstr (tip, "relu"));
  g_assert_nonnull (strstr (tip, "1 µs"));
  g_assert_nonnull (strstr (tip, "nodes: relu1, conv1"));
  /* Empty space (between the steps, 10.5 µs after the first event): cleared. */
  twb_timeline_test_click (fx->tl, twb_timeline_time_to_x (fx->tl, 10500), cy - 18, 1);
  g_assert_false (twb_timeline_get_selected_slice (fx->tl, &got));
  g_assert_cmpuint (fx->n_selected, ==, 3);
  g_assert_true (fx->last_null);

  /* A left drag selects the range between the times of its ends. */
  double xa = 300.5, xb = 612.25;
  twb_timeline_test_drag (fx->tl, 1, xa, cy, xb, cy + 5);
  gint64 s, e;
  g_assert_true (twb_timeline_get_range (fx->tl, &s, &e));
  g_assert_cmpint (s, ==, twb_timeline_x_to_time (fx->tl, xa));
  g_assert_cmpint (e, ==, twb_timeline_x_to_time (fx->tl, xb));
  g_assert_cmpuint (fx->n_range, >=, 1);
  /* Right to left: the same range. */
  twb_timeline_test_drag (fx->tl, 1, xb, cy, xa, cy);
  gint64 s2, e2;
  g_assert_true (twb_timeline_get_range (fx->tl, &s2, &e2));
  g_assert_cmpint (s2, ==, s);
  g_assert_cmpint (e2, ==, e);
  /* A middle drag pans: 100 px right shows 100 px' worth earlier. */
  gint64 v0, v1, w0, w1;
  twb_timeline_get_view (fx->tl, &v0, &v1);
  double ns_per_px = (double) (v1 - v0) / (gtk_widget_get_width (GTK_WIDGET (fx->tl)) - 180);
  twb_timeline_test_drag (fx->tl, 2, 500, 100, 600, 100);
  twb_timeline_get_view (fx->tl, &w0, &w1);
  g_assert_cmpint (w1 - w0, ==, v1 - v0);
  g_assert_cmpint (ABS ((v0 - w0) - (gint64) (100 * ns_per_px)), <=, 1);
  /* Escape-like clearing through the API: range off. */
  twb_timeline_set_range (fx->tl, 5, 5);
  g_assert_false (twb_timeline_get_range (fx->tl, NULL, NULL));

  /* Double-click on a slice zooms to it. */
  twb_timeline_set_view (fx->tl, 0, 25000);
  g_assert_true (twb_timeline_slice_rect (fx->tl, &relu, &r));
  twb_timeline_test_click (fx->tl, r.origin.x + r.size.width / 2, r.origin.y + 5, 1);
  twb_timeline_test_click (fx->tl, r.origin.x + r.size.width / 2, r.origin.y + 5, 2);
  twb_timeline_get_view (fx->tl, &w0, &w1);
  g_assert_cmpint (w0, ==, 4000 - 100);
  g_assert_cmpint (w1, ==, 5000 + 100);

  /* A click on a process header collapses it, another expands it. */
  twb_timeline_zoom_all (fx->tl);
  g_assert_true (twb_timeline_slice_rect (fx->tl, &relu, &r));
  twb_timeline_test_click (fx->tl, 50, 24 + 24 + 10, 1); /* ruler, group title, rank0's header */
  g_assert_true (twb_timeline_get_collapsed (fx->tl, 0, 1));
  g_assert_false (twb_timeline_slice_rect (fx->tl, &relu, &r));
  twb_timeline_test_click (fx->tl, 50, 24 + 24 + 10, 1);
  g_assert_false (twb_timeline_get_collapsed (fx->tl, 0, 1));
}

static void
test_search (Fixture *fx, gconstpointer data)
{
  /* Independently: names containing "conv", any case. */
  guint64 expect = 0;
  for (guint l = 0; l < tw_trace_n_lanes (fx->t); l++)
    for (guint i = 0; i < tw_trace_lane_n_slices (fx->t, l); i++)
      {
        g_autofree char *low = g_ascii_strdown (tw_trace_lane_slice (fx->t, l, i)->name, -1);
        expect += strstr (low, "conv") != NULL;
      }
  g_assert_cmpuint (expect, ==, 2);
  g_assert_cmpuint (twb_timeline_set_search (fx->tl, "CONV"), ==, expect);
  g_assert_cmpuint (twb_timeline_set_search (fx->tl, "gemm"), ==, 3); /* gemm, 2 sgemm_kernel */
  g_assert_cmpuint (twb_timeline_set_search (fx->tl, "step"), ==, 3);
  g_assert_cmpuint (twb_timeline_set_search (fx->tl, "no such"), ==, 0);
  g_assert_false (twb_timeline_search_step (fx->tl, TRUE));
  g_assert_cmpuint (twb_timeline_set_search (fx->tl, ""), ==, 0);
  g_assert_cmpuint (twb_timeline_set_search (fx->tl, NULL), ==, 0);

  /* Walking "e" (step 0 ×2, step 1, relu, sgemm ×2, gemm, allreduce): in time order. */
  guint64 n = twb_timeline_set_search (fx->tl, "E");
  g_assert_cmpuint (n, ==, 8);
  gint64 prev = G_MININT64;
  TwbSliceRef got;
  for (guint64 k = 0; k < n; k++)
    {
      g_assert_true (twb_timeline_search_step (fx->tl, TRUE));
      g_assert_true (twb_timeline_get_selected_slice (fx->tl, &got));
      const tw_slice *s = tw_trace_lane_slice (fx->t, got.lane, got.index);
      g_assert_nonnull (strchr (s->name, 'e'));
      g_assert_cmpint (s->start_ns, >=, prev);
      prev = s->start_ns;
      /* The view shows it. */
      gint64 v0, v1;
      twb_timeline_get_view (fx->tl, &v0, &v1);
      g_assert_cmpint (s->start_ns - (T0 + 1000), >=, v0);
      g_assert_cmpint (s->start_ns - (T0 + 1000) + s->dur_ns, <=, v1);
    }
  g_assert_false (twb_timeline_search_step (fx->tl, TRUE));
  g_assert_cmpstr (tw_trace_lane_slice (fx->t, got.lane, got.index)->name, ==, "sgemm_kernel");
  for (guint64 k = 1; k < n; k++)
    {
      g_assert_true (twb_timeline_search_step (fx->tl, FALSE));
      g_assert_true (twb_timeline_get_selected_slice (fx->tl, &got));
      const tw_slice *s = tw_trace_lane_slice (fx->t, got.lane, got.index);
      g_assert_cmpint (s->start_ns, <=, prev);
      prev = s->start_ns;
    }
  g_assert_false (twb_timeline_search_step (fx->tl, FALSE));
  g_assert_cmpint (prev, ==, T0 + 1000);
}

static guint32
pixel (cairo_surface_t *s, double x, double y)
{
  cairo_surface_flush (s);
  const guint8 *d = cairo_image_surface_get_data (s);
  int stride = cairo_image_surface_get_stride (s);
  return *(const guint32 *) (d + (int) y * stride + (int) x * 4) & 0xffffff;
}

/* The highlight outline's #ff7800 (no palette colour comes near it). */
static gboolean
is_orange (guint32 p)
{
  guint r = p >> 16, g = (p >> 8) & 0xff, b = p & 0xff;
  return r >= 0xf0 && g >= 0x60 && g <= 0x90 && b <= 0x20;
}

static void
test_highlight (Fixture *fx, gconstpointer data)
{
  const char *unknown[] = { "nope", NULL };
  const char *empty[] = { NULL };
  const char *blank[] = { "", NULL };
  const char *conv[] = { "conv1", NULL };
  twb_timeline_set_highlight_nodes (fx->tl, unknown);
  g_assert_cmpuint (twb_timeline_n_highlighted (fx->tl), ==, 0);
  pump ();
  twb_timeline_set_highlight_nodes (fx->tl, NULL);
  twb_timeline_set_highlight_nodes (fx->tl, empty);
  twb_timeline_set_highlight_nodes (fx->tl, blank);
  pump ();
  g_assert_false (twb_timeline_get_selected_slice (fx->tl, NULL));

  /* conv1's rect gets an orange outline (2 px inside its edge): the pixel
   * after its left edge is covered whole. */
  twb_timeline_set_view (fx->tl, 0, 25000);
  TwbSliceRef c1 = find (fx->t, 0, 0, "conv1"), fc = find (fx->t, 0, 0, "fc");
  graphene_rect_t r, rf;
  g_assert_true (twb_timeline_slice_rect (fx->tl, &c1, &r));
  g_assert_true (twb_timeline_slice_rect (fx->tl, &fc, &rf));
  int w = gtk_widget_get_width (GTK_WIDGET (fx->tl)), h = gtk_widget_get_height (GTK_WIDGET (fx->tl));
  cairo_surface_t *s = cairo_image_surface_create (CAIRO_FORMAT_RGB24, w, h);
  cairo_t *cr = cairo_create (s);
  twb_timeline_render (fx->tl, cr, w, h);
  guint32 plain = pixel (s, r.origin.x + 1, r.origin.y + r.size.height / 2);
  g_assert_false (is_orange (plain));
  twb_timeline_set_highlight_nodes (fx->tl, conv);
  g_assert_cmpuint (twb_timeline_n_highlighted (fx->tl), ==, 3); /* conv1, relu, Conv1 */
  twb_timeline_render (fx->tl, cr, w, h);
  g_assert_true (is_orange (pixel (s, r.origin.x + 1, r.origin.y + r.size.height / 2)));
  /* fc names fc1 only: not outlined. */
  g_assert_false (is_orange (pixel (s, rf.origin.x + 1, rf.origin.y + rf.size.height / 2)));
  cairo_destroy (cr);
  cairo_surface_destroy (s);
}

static void
test_collapse (Fixture *fx, gconstpointer data)
{
  TwbSliceRef kern = find (fx->t, 0, 1, "sgemm_kernel"), all = find (fx->t, 0, 2, "allreduce");
  graphene_rect_t r, before;
  g_assert_true (twb_timeline_slice_rect (fx->tl, &all, &before));
  g_assert_true (twb_timeline_slice_rect (fx->tl, &kern, &r));
  twb_timeline_set_collapsed (fx->tl, 0, 1, TRUE);
  g_assert_true (twb_timeline_get_collapsed (fx->tl, 0, 1));
  g_assert_false (twb_timeline_get_collapsed (fx->tl, 0, 2));
  g_assert_false (twb_timeline_slice_rect (fx->tl, &kern, &r));
  g_assert_false (twb_timeline_slice_rect (fx->tl, &(TwbSliceRef) { 0, 0, 0 }, &r));
  /* rank1's lane moved up: rank0 is now a header and one summary row. */
  g_assert_true (twb_timeline_slice_rect (fx->tl, &all, &r));
  g_assert_cmpfloat (r.origin.y, <, before.origin.y);
  /* rank0's summary row (under the title and its header) draws its lanes' top slices. */
  int w = gtk_widget_get_width (GTK_WIDGET (fx->tl)), h = gtk_widget_get_height (GTK_WIDGET (fx->tl));
  cairo_surface_t *s = cairo_image_surface_create (CAIRO_FORMAT_RGB24, w, h);
  cairo_t *cr = cairo_create (s);
  twb_timeline_render (fx->tl, cr, w, h);
  double summary_y = 24 + 24 + 20 + 9;
  g_assert_cmphex (pixel (s, twb_timeline_time_to_x (fx->tl, 5000), summary_y), !=, 0xffffff);
  /* Between step 0 and step 1 (10.5 µs), and sgemm_kernel's end and step 1: nothing. */
  g_assert_cmphex (pixel (s, twb_timeline_time_to_x (fx->tl, 10500), summary_y), ==, 0xffffff);
  cairo_destroy (cr);
  cairo_surface_destroy (s);
  pump ();
  twb_timeline_set_collapsed (fx->tl, 0, 1, FALSE);
  g_assert_true (twb_timeline_slice_rect (fx->tl, &kern, &r));
  g_assert_true (twb_timeline_slice_rect (fx->tl, &all, &r));
  g_assert_cmpfloat_with_epsilon (r.origin.y, before.origin.y, 1e-9);
  /* Unknown group or pid: nothing. */
  twb_timeline_set_collapsed (fx->tl, 7, 1, TRUE);
  twb_timeline_set_collapsed (fx->tl, 0, 99, TRUE);
  g_assert_false (twb_timeline_get_collapsed (fx->tl, 0, 99));
}

static void
save_png (cairo_surface_t *s, const char *name)
{
  g_autofree char *path = g_build_filename (TEST_OUT_DIR, name, NULL);
  g_assert_cmpint (cairo_surface_write_to_png (s, path), ==, CAIRO_STATUS_SUCCESS);
  g_test_message ("saved %s", path);
}

/* The window through GTK's own drawing (the widget's snapshot ()). */
static void
save_window (GtkWidget *win, const char *name)
{
  GdkPaintable *p = gtk_widget_paintable_new (win);
  int ww = gtk_widget_get_width (win), wh = gtk_widget_get_height (win);
  GskRenderNode *node = NULL;
  /* Empty until the window has drawn once: a few tries. */
  for (guint k = 0; k < 20 && !node; k++)
    {
      GtkSnapshot *snap = gtk_snapshot_new ();
      gdk_paintable_snapshot (p, snap, ww, wh);
      node = gtk_snapshot_free_to_node (snap);
      if (!node)
        pump ();
    }
  g_assert_nonnull (node);
  cairo_surface_t *s = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, ww, wh);
  cairo_t *cr = cairo_create (s);
  gsk_render_node_draw (node, cr);
  save_png (s, name);
  cairo_destroy (cr);
  cairo_surface_destroy (s);
  gsk_render_node_unref (node);
  g_object_unref (p);
}

static void
test_render (Fixture *fx, gconstpointer data)
{
  int w = 1000, h = 400;
  twb_timeline_set_view (fx->tl, 0, 25000);
  TwbSliceRef gemm = find (fx->t, 0, 0, "gemm");
  twb_timeline_select_slice (fx->tl, &gemm);
  twb_timeline_set_range (fx->tl, 3000, 8000);
  pump ();
  cairo_surface_t *s = cairo_image_surface_create (CAIRO_FORMAT_RGB24, w, h);
  cairo_t *cr = cairo_create (s);
  twb_timeline_render (fx->tl, cr, w, h);
  save_png (s, "timeline.png");
  /* The background (light theme: white) far right below everything, a
   * slice's middle in a palette colour. */
  guint32 bg = pixel (s, 5, h - 5);
  g_assert_cmphex (bg, ==, 0xffffff);
  TwbSliceRef fc = find (fx->t, 0, 0, "fc");
  graphene_rect_t r;
  g_assert_true (twb_timeline_slice_rect (fx->tl, &fc, &r));
  guint32 in = pixel (s, r.origin.x + 3, r.origin.y + 3);
  g_assert_cmphex (in, !=, bg);
  /* The counter's area (memory at its maximum, 50, from 4 µs to 8 µs) near
   * the bottom of its track (ruler, title, header, lanes of 3 and 1 rows). */
  double counter_bottom = 24 + 24 + 20 + 4 * 18 + 36;
  g_assert_cmphex (pixel (s, twb_timeline_time_to_x (fx->tl, 6000), counter_bottom - 5), !=, bg);
  g_assert_cmphex (pixel (s, twb_timeline_time_to_x (fx->tl, 6000), counter_bottom - 30), !=, bg);
  /* The flow from the selected gemm to its kernel (stream 7, 1 µs on):
   * its head, left of the kernel's start at the row's middle (ruler,
   * title, header, 3 rows of main, half a row), in the accent blue. */
  guint32 head = pixel (s, twb_timeline_time_to_x (fx->tl, 1000) - 3, 24 + 24 + 20 + 3 * 18 + 9);
  g_assert_cmpuint (head & 0xff, >, ((head >> 16) & 0xff) + 60);
  /* Before its first sample (view time 0): nothing. */
  g_assert_cmphex (pixel (s, twb_timeline_time_to_x (fx->tl, 0) - 3, counter_bottom - 5), ==, bg);
  cairo_destroy (cr);
  cairo_surface_destroy (s);

  save_window (fx->win, "timeline-window.png");

  /* To SVG (an export): the slices stay shapes, no embedded picture. */
  g_autofree char *svg = g_build_filename (TEST_OUT_DIR, "timeline.svg", NULL);
  s = cairo_svg_surface_create (svg, w, h);
  cr = cairo_create (s);
  twb_timeline_render (fx->tl, cr, w, h);
  cairo_destroy (cr);
  cairo_surface_destroy (s);
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (svg, &text, NULL, NULL));
  g_assert_null (strstr (text, "<image"));
  guint fills = 0;
  for (const char *q = text; (q = strstr (q, "fill-rule")); q++)
    fills++;
  /* 11 slices, the counter's columns, rows, ruler: well over a hundred shapes. */
  g_assert_cmpuint (fills, >, 100);
}

#ifdef GDK_WINDOWING_X11
/* Runs xdotool with args (a string vector's worth, split at spaces), then
 * lets GTK take the events. */
static void
xdo (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *args = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  /* timeout: a focus request that never completes fails the test, not the run. */
  g_autofree char *cmd = g_strdup_printf ("timeout 10 xdotool %s", args);
  g_autoptr (GError) error = NULL;
  int status = 0;
  g_assert_true (g_spawn_command_line_sync (cmd, NULL, NULL, &status, &error));
  g_assert_no_error (error);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  pump ();
}

/* Real X pointer and key events through xdotool, at the window's own
 * coordinates (mousemove --window): the controllers, not the test hooks. */
static void
test_xdotool (Fixture *fx, gconstpointer data)
{
  g_autofree char *xdotool = g_find_program_in_path ("xdotool");
  GdkDisplay *display = gdk_display_get_default ();
  if (!xdotool || !GDK_IS_X11_DISPLAY (display))
    {
      g_test_skip ("no xdotool or not on X11");
      return;
    }
  GtkNative *native = GTK_NATIVE (fx->win);
  gulong xid = gdk_x11_surface_get_xid (gtk_native_get_surface (native));
  double sx, sy;
  gtk_native_get_surface_transform (native, &sx, &sy);
  double ox, oy;
  g_assert_true (gtk_widget_translate_coordinates (GTK_WIDGET (fx->tl), fx->win, 0, 0, &ox, &oy));
  ox += sx;
  oy += sy;
  /* X coordinates are device pixels. */
  int k = gtk_widget_get_scale_factor (fx->win);
#define DX(x) ((int) ((ox + (x)) * k))
#define DY(y) ((int) ((oy + (y)) * k))
  /* X delivers the events when it can: wait for their effect (5 s at most, then the assertion fails). */
#define WAIT_UNTIL(cond)                                                                            \
  for (gint64 end_ = g_get_monotonic_time () + 5 * G_USEC_PER_SEC;                                 \
       !(cond) && g_get_monotonic_time () < end_;)                                                  \
    pump ()

  twb_timeline_set_view (fx->tl, 0, 25000);
  pump ();
  TwbSliceRef relu = find (fx->t, 0, 0, "relu");
  graphene_rect_t r;
  g_assert_true (twb_timeline_slice_rect (fx->tl, &relu, &r));
  int cx = (int) (r.origin.x + r.size.width / 2), cy = (int) (r.origin.y + r.size.height / 2);
  xdo ("mousemove --window %lu %d %d click 1", xid, DX (cx), DY (cy));
  WAIT_UNTIL (twb_timeline_get_selected_slice (fx->tl, NULL));
  TwbSliceRef got;
  g_assert_true (twb_timeline_get_selected_slice (fx->tl, &got));
  g_assert_cmpuint (got.index, ==, relu.index);
  g_assert_cmpuint (got.lane, ==, relu.lane);
  g_assert_cmpuint (fx->n_selected, ==, 1);

  /* A left drag over whole pixels: the range is the times of its ends. */
  int xa = 400, xb = 650;
  xdo ("mousemove --window %lu %d %d mousedown 1", xid, DX (xa), DY (cy));
  xdo ("mousemove --window %lu %d %d", xid, DX ((xa + xb) / 2), DY (cy));
  xdo ("mousemove --window %lu %d %d mouseup 1", xid, DX (xb), DY (cy));
  gint64 s, e;
  WAIT_UNTIL (twb_timeline_get_range (fx->tl, &s, &e) && e == twb_timeline_x_to_time (fx->tl, xb));
  g_assert_true (twb_timeline_get_range (fx->tl, &s, &e));
  g_assert_cmpint (s, ==, twb_timeline_x_to_time (fx->tl, xa));
  g_assert_cmpint (e, ==, twb_timeline_x_to_time (fx->tl, xb));
  /* The drag started on empty space: it was no click, the slice stays selected. */
  g_assert_true (twb_timeline_get_selected_slice (fx->tl, &got));
  g_assert_cmpuint (got.index, ==, relu.index);

  /* Ctrl+wheel up at x: zoomed in, the time under x kept. */
  gint64 at = twb_timeline_x_to_time (fx->tl, 500);
  xdo ("mousemove --window %lu %d %d keydown ctrl click 4 keyup ctrl", xid, DX (500), DY (cy));
  gint64 v0, v1;
  WAIT_UNTIL ((twb_timeline_get_view (fx->tl, &v0, &v1), v1 - v0 < 25000));
  twb_timeline_get_view (fx->tl, &v0, &v1);
  g_assert_cmpint (v1 - v0, <, 25000);
  g_assert_cmpint (ABS (twb_timeline_x_to_time (fx->tl, 500) - at), <=, 2);

  /* Keys, once the widget has the focus (the click gave it): W zooms in
   * around the pointer, Escape clears the range and the slice. */
  gtk_window_present (GTK_WINDOW (fx->win));
  xdo ("windowfocus --sync %lu", xid);
  WAIT_UNTIL (gtk_widget_has_focus (GTK_WIDGET (fx->tl)));
  g_assert_true (gtk_widget_has_focus (GTK_WIDGET (fx->tl)));
  gint64 w0 = v1 - v0;
  xdo ("key w");
  WAIT_UNTIL ((twb_timeline_get_view (fx->tl, &v0, &v1), v1 - v0 < w0));
  g_assert_cmpint (v1 - v0, <, w0);
  xdo ("key Escape");
  WAIT_UNTIL (!twb_timeline_get_range (fx->tl, NULL, NULL));
  g_assert_false (twb_timeline_get_range (fx->tl, NULL, NULL));
  g_assert_false (twb_timeline_get_selected_slice (fx->tl, NULL));
#undef DX
#undef DY
#undef WAIT_UNTIL
}
#endif

/* A real trace (TWB_TIMELINE_TRACE, else the PyTorch fixture) in the window, for a person to look at. */
static void
test_real_trace (void)
{
  const char *path = g_getenv ("TWB_TIMELINE_TRACE");
  g_autofree char *fixture = g_build_filename (TEST_DATA_DIR, "torch-real-trace.json", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_trace) t = tw_trace_load_chrome (path ? path : fixture, &error);
  g_assert_no_error (error);
  GtkWidget *win = gtk_window_new ();
  gtk_window_set_default_size (GTK_WINDOW (win), 1280, 720);
  TwbTimeline *tl = TWB_TIMELINE (twb_timeline_new ());
  gtk_window_set_child (GTK_WINDOW (win), GTK_WIDGET (tl));
  twb_timeline_add_trace (tl, t, path ? "recording" : "torch-real-trace.json", 0);
  gtk_window_present (GTK_WINDOW (win));
  wait_mapped (GTK_WIDGET (tl));
  cairo_surface_t *s = cairo_image_surface_create (CAIRO_FORMAT_RGB24, 1280, 720);
  cairo_t *cr = cairo_create (s);
  twb_timeline_render (tl, cr, 1280, 720);
  save_png (s, "timeline-real.png");
  /* Zoomed to the middle tenth. */
  gint64 v0, v1;
  twb_timeline_get_view (tl, &v0, &v1);
  twb_timeline_set_view (tl, v0 + (v1 - v0) * 45 / 100, v0 + (v1 - v0) * 55 / 100);
  twb_timeline_render (tl, cr, 1280, 720);
  save_png (s, "timeline-real-zoom.png");
  /* The window: the slice under the middle selected, a range over a fifth. */
  twb_timeline_set_view (tl, v0, v1);
  twb_timeline_set_range (tl, v0 + (v1 - v0) * 4 / 10, v0 + (v1 - v0) * 6 / 10);
  pump ();
  twb_timeline_test_click (tl, 1280 / 2 + 90, 24 + 24 + 20 + 9, 1);
  pump ();
  save_window (win, "timeline-real-window.png");
  cairo_destroy (cr);
  cairo_surface_destroy (s);
  g_assert_cmpuint (twb_timeline_n_groups (tl), ==, 1);
  gtk_window_destroy (GTK_WINDOW (win));
  pump ();
}

/* A merged trace of 3 ranks: a compute op, then all-reduce seq 5 arriving
 * at 100, 130 and 250 µs and ending at 400 on each.  Clicking rank 1's
 * outlines it on every rank with its skew and wait. */
static void
test_collective_peers (void)
{
  tw_trace *ranks[3];
  const gint64 starts[3] = { 100000, 130000, 250000 };
  for (int r = 0; r < 3; r++)
    {
      tw_trace *t = ranks[r] = tw_trace_new ();
      guint main = tw_trace_add_lane (t, 1, 10, "main", TW_LANE_THREAD);
      guint comm = tw_trace_add_lane (t, 1, 0x7ffffff0, "communication", TW_LANE_STREAM);
      tw_trace_add_slice (t, main, 0, starts[r] + 20000, "linear (fc1)", "forward", NULL, 0);
      tw_trace_add_slice (t, comm, starts[r], 400000 - starts[r], "allreduce bucket 0", "collective",
                          (tw_trace_arg[]) { { "kind", "allreduce" }, { "seq", "5" } }, 2);
      tw_trace_sort (t);
    }
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_trace) m = tw_trace_merge_ranks (ranks, 3, NULL, NULL, &error);
  g_assert_no_error (error);
  for (int r = 0; r < 3; r++)
    tw_trace_free (ranks[r]);
  int w = 1000, h = 300;
  GtkWidget *win = gtk_window_new ();
  gtk_window_set_default_size (GTK_WINDOW (win), w, h);
  TwbTimeline *tl = TWB_TIMELINE (twb_timeline_new ());
  gtk_window_set_child (GTK_WINDOW (win), GTK_WIDGET (tl));
  twb_timeline_add_trace (tl, m, "3 ranks", 0);
  gtk_window_present (GTK_WINDOW (win));
  wait_mapped (GTK_WIDGET (tl));
  twb_timeline_zoom_all (tl);
  int comm1 = -1;
  for (guint l = 0; l < tw_trace_n_lanes (m); l++)
    if (tw_trace_lane (m, l)->pid == 1 && !g_strcmp0 (tw_trace_lane (m, l)->name, "communication"))
      comm1 = (int) l;
  g_assert_cmpint (comm1, >=, 0);
  TwbSliceRef ref = { 0, (guint) comm1, 0 };
  /* Through the pointer, as a person clicks it. */
  graphene_rect_t r;
  pump ();
  g_assert_true (twb_timeline_slice_rect (tl, &ref, &r));
  twb_timeline_test_click (tl, r.origin.x + r.size.width / 2, r.origin.y + r.size.height / 2, 1);
  TwbSliceRef got;
  g_assert_true (twb_timeline_get_selected_slice (tl, &got));
  g_assert_cmpuint (got.lane, ==, ref.lane);
  guint group = 99;
  const GArray *peers = twb_timeline_get_collective_peers (tl, &group);
  g_assert_nonnull (peers);
  g_assert_cmpuint (group, ==, 0);
  g_assert_cmpuint (peers->len, ==, 3);
  const tw_coll_peer *p0 = &g_array_index (peers, tw_coll_peer, 0);
  g_assert_cmpint (p0->skew_ns, ==, -150000);
  g_assert_cmpint (p0->wait_ns, ==, 150000);
  /* Rank 0's slice: its tooltip says how early it came and how long it waited. */
  TwbSliceRef r0 = { 0, p0->lane, p0->slice_index };
  g_assert_true (twb_timeline_slice_rect (tl, &r0, &r));
  g_autofree char *tip = twb_timeline_test_tooltip (tl, r.origin.x + r.size.width - 5, r.origin.y + 5);
  g_assert_nonnull (tip);
  g_assert_nonnull (strstr (tip, "<b>rank 0</b>: arrived 150 µs before the last of 3 ranks, waited 150 µs"));
  const tw_coll_peer *p2 = &g_array_index (peers, tw_coll_peer, 2);
  TwbSliceRef r2 = { 0, p2->lane, p2->slice_index };
  g_assert_true (twb_timeline_slice_rect (tl, &r2, &r));
  g_autofree char *tip2 = twb_timeline_test_tooltip (tl, r.origin.x + r.size.width - 5, r.origin.y + 5);
  g_assert_nonnull (strstr (tip2, "<b>rank 2</b>: the last of 3 ranks to arrive"));

  cairo_surface_t *s = cairo_image_surface_create (CAIRO_FORMAT_RGB24, w, h);
  cairo_t *cr = cairo_create (s);
  twb_timeline_render (tl, cr, w, h);
  save_png (s, "timeline-peers.png");
  /* Rank 2's outline, at its right edge's middle, in the accent blue. */
  guint32 edge = pixel (s, r.origin.x + r.size.width - 2, r.origin.y + r.size.height / 2);
  g_assert_cmpuint (edge & 0xff, >, ((edge >> 16) & 0xff) + 60);
  cairo_destroy (cr);
  cairo_surface_destroy (s);
  pump ();
  save_window (win, "timeline-peers-window.png");

  /* An op selected: no peers. */
  int main0 = -1;
  for (guint l = 0; l < tw_trace_n_lanes (m); l++)
    if (tw_trace_lane (m, l)->pid == 0 && !g_strcmp0 (tw_trace_lane (m, l)->name, "main"))
      main0 = (int) l;
  TwbSliceRef op = { 0, (guint) main0, 0 };
  twb_timeline_select_slice (tl, &op);
  g_assert_null (twb_timeline_get_collective_peers (tl, NULL));
  twb_timeline_select_slice (tl, &ref);
  g_assert_nonnull (twb_timeline_get_collective_peers (tl, NULL));
  twb_timeline_select_slice (tl, NULL);
  g_assert_null (twb_timeline_get_collective_peers (tl, NULL));
  gtk_window_destroy (GTK_WINDOW (win));
  pump ();
}

int
main (int argc, char **argv)
{
  g_setenv ("GTK_A11Y", "none", FALSE);
  g_test_init (&argc, &argv, NULL);
  if (!gtk_init_check ())
    {
      g_print ("1..0 # SKIP no display\n");
      return 0;
    }
#define ADD(name, fn) g_test_add ("/timeline/" name, Fixture, NULL, fixture_setup, fn, fixture_teardown)
  ADD ("view", test_view);
  ADD ("coords", test_coords);
  ADD ("actions", test_actions);
  ADD ("pointer", test_pointer);
  ADD ("search", test_search);
  ADD ("highlight", test_highlight);
  ADD ("collapse", test_collapse);
  ADD ("render", test_render);
#ifdef GDK_WINDOWING_X11
  ADD ("xdotool", test_xdotool);
#endif
  g_test_add_func ("/timeline/ruler", test_ruler);
  g_test_add_func ("/timeline/real-trace", test_real_trace);
  g_test_add_func ("/timeline/collective-peers", test_collective_peers);
  return g_test_run ();
}
