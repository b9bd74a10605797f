/* test-tensor-view.c — the tensor inspector: the statistics it shows equal a
 * naive float64 computation here; cells and slices of a 4-D tensor; the
 * Diff page (stats, no previous, shapes that differ); which pages apply;
 * the pixels of the drawn heat map (diverging and sequential), histogram
 * and image tiles; the hover readout; a 360 × 420 side panel; light and
 * dark screenshots saved for a person to look at (TWB_TEST_SHOTS or a
 * temporary folder).  GLib warnings and criticals are fatal. */
#include "ui-test.h"
#include "ui/twb-tensor-view.h"
#include "ui/twb-tensor-draw.h"

#include <math.h>
#include <string.h>

static char *
shot_path (const char *name)
{
  static char *dir;
  if (dir == NULL)
    {
      const char *env = g_getenv ("TWB_TEST_SHOTS");
      dir = env ? g_strdup (env) : g_dir_make_tmp ("twb-tensor-view-XXXXXX", NULL);
      g_mkdir_with_parents (dir, 0755);
    }
  return g_build_filename (dir, name, NULL);
}

static TwbTensorView *
new_view (void)
{
  return TWB_TENSOR_VIEW (g_object_ref_sink (twb_tensor_view_new ()));
}

static char *
fmt (double x)
{
  return g_strdup_printf ("%.6g", x);
}

/* A 3 × 4 f32 tensor with a NaN and an Inf: every statistic against a
 * two-pass float64 computation over the finite values. */
static void
test_stats (void)
{
  const float vals[12] = { 1.5f, -2.25f, 3, 0, 4.125f, NAN, 7, -8.5f, 0, 10, INFINITY, 0.001f };
  g_autoptr (tw_tensor) t = tw_tensor_from_data (TW_F32, 2, (int64_t[]) { 3, 4 }, vals);
  TwbTensorView *v = new_view ();
  twb_tensor_view_set_tensor (v, "fc1.weight", "parameter", t, NULL);

  double sum = 0, lo = INFINITY, hi = -INFINITY;
  int n = 0, zeros = 0;
  for (int i = 0; i < 12; i++)
    if (isfinite (vals[i]))
      {
        sum += vals[i];
        lo = MIN (lo, vals[i]);
        hi = MAX (hi, vals[i]);
        zeros += vals[i] == 0;
        n++;
      }
  double mean = sum / n, ss = 0;
  for (int i = 0; i < 12; i++)
    if (isfinite (vals[i]))
      ss += (vals[i] - mean) * (vals[i] - mean);
  double std = sqrt (ss / n);

  const tw_tensor_stats *st = twb_tensor_view_get_stats (v);
  g_assert_nonnull (st);
  g_assert_cmpint (st->count, ==, 12);
  g_assert_cmpint (st->finite, ==, 10);
  g_assert_cmpfloat_with_epsilon (st->mean, mean, 1e-12 * fabs (mean));
  g_assert_cmpfloat_with_epsilon (st->std, std, 1e-12 * std);
  g_autofree char *smean = fmt (mean), *sstd = fmt (std), *smin = fmt (lo), *smax = fmt (hi);
  g_assert_cmpstr (twb_tensor_view_stat_text (v, "mean"), ==, smean);
  g_assert_cmpstr (twb_tensor_view_stat_text (v, "std"), ==, sstd);
  g_assert_cmpstr (twb_tensor_view_stat_text (v, "min"), ==, smin);
  g_assert_cmpstr (twb_tensor_view_stat_text (v, "max"), ==, smax);
  g_assert_cmpstr (twb_tensor_view_stat_text (v, "abs_max"), ==, "10");
  g_assert_cmpstr (twb_tensor_view_stat_text (v, "count"), ==, "12");
  g_autofree char *szeros = g_strdup_printf ("%d", zeros);
  g_assert_cmpstr (twb_tensor_view_stat_text (v, "zeros"), ==, szeros);
  g_assert_cmpstr (twb_tensor_view_stat_text (v, "nan"), ==, "1");
  g_assert_cmpstr (twb_tensor_view_stat_text (v, "inf"), ==, "1");
  g_assert_null (twb_tensor_view_stat_text (v, "median"));
  /* NaN / Inf counts above 0 in the error colour, and back when they go. */
  g_assert_true (gtk_widget_has_css_class (twb_tensor_view_get_stat_label (v, "nan"), "error"));
  g_assert_true (gtk_widget_has_css_class (twb_tensor_view_get_stat_label (v, "inf"), "error"));
  g_assert_false (gtk_widget_has_css_class (twb_tensor_view_get_stat_label (v, "mean"), "error"));

  /* Cells: "%.6g", row-major, NaN as "nan". */
  g_autofree char *c01 = twb_tensor_view_cell_text (v, 0, 1);
  g_autofree char *c11 = twb_tensor_view_cell_text (v, 1, 1);
  g_autofree char *c23 = twb_tensor_view_cell_text (v, 2, 3);
  g_assert_cmpstr (c01, ==, "-2.25");
  g_assert_cmpstr (c11, ==, "nan");
  g_assert_cmpstr (c23, ==, "0.001");
  g_assert_null (twb_tensor_view_cell_text (v, 3, 0));
  g_assert_null (twb_tensor_view_cell_text (v, 0, 4));
  g_assert_cmpstr (twb_tensor_view_page_note (v, "values"), ==, "");

  g_autoptr (tw_tensor) clean = tw_tensor_zeros (TW_F32, 1, (int64_t[]) { 5 });
  twb_tensor_view_set_tensor (v, "b", "output", clean, NULL);
  g_assert_false (gtk_widget_has_css_class (twb_tensor_view_get_stat_label (v, "nan"), "error"));
  g_assert_cmpstr (twb_tensor_view_stat_text (v, "zeros"), ==, "5");
  g_autofree char *c04 = twb_tensor_view_cell_text (v, 0, 4);
  g_assert_cmpstr (c04, ==, "0");   /* 1-D: one row */
  g_assert_null (twb_tensor_view_cell_text (v, 1, 0));

  /* Cleared: no stats, no cells. */
  twb_tensor_view_set_tensor (v, NULL, NULL, NULL, NULL);
  g_assert_null (twb_tensor_view_get_stats (v));
  g_assert_null (twb_tensor_view_cell_text (v, 0, 0));
  g_assert_cmpstr (twb_tensor_view_page_note (v, "values"), ==, "No tensor selected");
  g_object_unref (v);
}

/* [2, 3, 4, 5] with element = flat index: the slice selectors pick the
 * leading indices; rows × columns are the last two dims. */
static void
test_slices (void)
{
  g_autoptr (tw_tensor) t = tw_tensor_new (TW_I64, 4, (int64_t[]) { 2, 3, 4, 5 });
  for (int64_t i = 0; i < 120; i++)
    tw_tensor_i64 (t)[i] = i * 1000003;   /* large: integers stay integers */
  TwbTensorView *v = new_view ();
  twb_tensor_view_set_tensor (v, "act", "output", t, NULL);
  g_autofree char *a = twb_tensor_view_cell_text (v, 1, 2);
  g_autofree char *want_a = g_strdup_printf ("%d", 7 * 1000003);
  g_assert_cmpstr (a, ==, want_a);
  twb_tensor_view_set_slice (v, 0, 1);
  twb_tensor_view_set_slice (v, 1, 2);
  g_autofree char *b = twb_tensor_view_cell_text (v, 1, 2);
  g_autofree char *want_b = g_strdup_printf ("%d", (60 + 40 + 7) * 1000003);
  g_assert_cmpstr (b, ==, want_b);
  g_assert_null (twb_tensor_view_cell_text (v, 4, 0));
  /* Clamped to the dimension. */
  twb_tensor_view_set_slice (v, 1, 99);
  g_autofree char *c = twb_tensor_view_cell_text (v, 0, 0);
  g_autofree char *want_c = g_strdup_printf ("%d", (60 + 40) * 1000003);
  g_assert_cmpstr (c, ==, want_c);
  /* The heat map readout follows the slice: [1, 2, i, j]. */
  g_autofree char *ro = twb_tensor_view_readout_at (v, "heatmap", 8, 8, 240, 240);
  g_autofree char *want_ro = g_strdup_printf ("[1, 2, 0, 0] = %s", want_c);
  g_assert_cmpstr (ro, ==, want_ro);
  /* Setting the same tensor again keeps the slice (the debugger steps). */
  twb_tensor_view_set_tensor (v, "act", "output", t, NULL);
  g_autofree char *d = twb_tensor_view_cell_text (v, 0, 0);
  g_assert_cmpstr (d, ==, want_c);
  g_object_unref (v);
}

/* 100 × 300: the values window shows 64 × 64 and says so. */
static void
test_window (void)
{
  g_autoptr (tw_tensor) t = tw_tensor_new (TW_F32, 2, (int64_t[]) { 100, 300 });
  for (int64_t i = 0; i < 30000; i++)
    tw_tensor_f32 (t)[i] = (float) i / 7;
  TwbTensorView *v = new_view ();
  twb_tensor_view_set_tensor (v, "w", "parameter", t, NULL);
  g_assert_cmpstr (twb_tensor_view_page_note (v, "values"), ==,
                   "first 64 of 100 rows · first 64 of 300 columns");
  g_autofree char *c = twb_tensor_view_cell_text (v, 99, 299);
  g_autofree char *want = fmt ((float) 29999 / 7);
  g_assert_cmpstr (c, ==, want);
  /* Offsets move the window (the spin buttons clamp them to the slice). */
  twb_tensor_view_set_values_offset (v, 90, 64);
  g_assert_cmpstr (twb_tensor_view_page_note (v, "values"), ==,
                   "rows 90–99 of 100 · columns 64–127 of 300");
  twb_tensor_view_set_values_offset (v, 0, 1000);
  g_assert_cmpstr (twb_tensor_view_page_note (v, "values"), ==,
                   "first 64 of 100 rows · columns 299–299 of 300");
  g_object_unref (v);
}

static void
test_diff (void)
{
  g_autoptr (tw_tensor) prev = tw_tensor_from_data (TW_F32, 2, (int64_t[]) { 2, 3 },
                                                    (float[]) { 1, 2, 3, 4, 5, 6 });
  g_autoptr (tw_tensor) t = tw_tensor_from_data (TW_F32, 2, (int64_t[]) { 2, 3 },
                                                 (float[]) { 1, 2.5f, 3, 3.75f, 5, 6 });
  TwbTensorView *v = new_view ();

  twb_tensor_view_set_tensor (v, "fc1.weight", "parameter", t, NULL);
  g_assert_null (twb_tensor_view_get_diff_stats (v));
  g_assert_nonnull (strstr (twb_tensor_view_page_note (v, "diff"), "No previous"));
  g_assert_false (twb_tensor_view_draw_page (v, "diff", NULL, 10, 10));

  twb_tensor_view_set_tensor (v, "fc1.weight", "parameter", t, prev);
  const tw_tensor_stats *d = twb_tensor_view_get_diff_stats (v);
  g_assert_nonnull (d);
  /* Δ = { 0, 0.5, 0, -0.25, 0, 0 }. */
  g_assert_cmpfloat (d->abs_max, ==, 0.5);
  g_assert_cmpfloat_with_epsilon (d->mean, 0.25 / 6, 1e-15);
  /* Which two snapshots: unknown iterations say so in words … */
  g_assert_cmpstr (twb_tensor_view_page_note (v, "diff"), ==,
                   "This snapshot − the one before: max |Δ| = 0.5");
  /* … known ones by number (the earlier need not be the one just before). */
  twb_tensor_view_set_iterations (v, 12, 9);
  g_assert_cmpstr (twb_tensor_view_page_note (v, "diff"), ==,
                   "Iteration 12 − iteration 9: max |Δ| = 0.5");
  g_assert_cmpstr (twb_tensor_view_stat_text (v, "diff.abs_max"), ==, "0.5");
  g_assert_cmpstr (twb_tensor_view_stat_text (v, "diff.changed"), ==, "2");
  g_autofree char *m = fmt (0.25 / 6);
  g_assert_cmpstr (twb_tensor_view_stat_text (v, "diff.mean"), ==, m);
  g_autofree char *ro = twb_tensor_view_readout_at (v, "diff", 100, 8, 240, 240);
  g_assert_cmpstr (ro, ==, "[0, 1] = 0.5");

  /* Shapes that differ: the page names both. */
  g_autoptr (tw_tensor) other = tw_tensor_zeros (TW_F32, 2, (int64_t[]) { 3, 2 });
  twb_tensor_view_set_tensor (v, "fc1.weight", "parameter", t, other);
  g_assert_null (twb_tensor_view_get_diff_stats (v));
  const char *note = twb_tensor_view_page_note (v, "diff");
  g_assert_nonnull (strstr (note, "[2, 3]"));
  g_assert_nonnull (strstr (note, "[3, 2]"));
  g_assert_cmpstr (twb_tensor_view_stat_text (v, "diff.abs_max"), ==, "—");
  g_object_unref (v);
}

/* Pages that do not apply say why. */
static void
test_pages_apply (void)
{
  TwbTensorView *v = new_view ();
  g_autoptr (tw_tensor) m = tw_tensor_zeros (TW_F32, 2, (int64_t[]) { 4, 4 });
  twb_tensor_view_set_tensor (v, "m", "output", m, NULL);
  g_assert_true (g_str_has_prefix (twb_tensor_view_page_note (v, "images"),
                                   "Images need a 4-D tensor [N, C, H, W]"));
  g_assert_nonnull (strstr (twb_tensor_view_page_note (v, "images"), "[4, 4]"));
  g_assert_false (twb_tensor_view_draw_page (v, "images", NULL, 10, 10));
  g_assert_cmpstr (twb_tensor_view_page_note (v, "heatmap"), ==, "");

  g_autoptr (tw_tensor) s = tw_tensor_scalar_f32 (2.5f);
  twb_tensor_view_set_tensor (v, "loss", "output", s, NULL);
  g_autofree char *c = twb_tensor_view_cell_text (v, 0, 0);
  g_assert_cmpstr (c, ==, "2.5");
  g_assert_null (twb_tensor_view_cell_text (v, 0, 1));
  g_assert_nonnull (strstr (twb_tensor_view_page_note (v, "heatmap"), "scalar"));
  g_assert_false (twb_tensor_view_draw_page (v, "heatmap", NULL, 10, 10));

  g_autoptr (tw_tensor) e = tw_tensor_new (TW_F32, 2, (int64_t[]) { 0, 5 });
  twb_tensor_view_set_tensor (v, "e", "output", e, NULL);
  g_assert_nonnull (strstr (twb_tensor_view_page_note (v, "values"), "Empty"));
  g_assert_null (twb_tensor_view_cell_text (v, 0, 0));

  g_autoptr (tw_tensor) big = tw_tensor_zeros (TW_F32, 4, (int64_t[]) { 10, 10, 2, 2 });
  twb_tensor_view_set_tensor (v, "x", "output", big, NULL);
  g_assert_true (g_str_has_prefix (twb_tensor_view_page_note (v, "images"), "first 64 of 100 tiles"));
  g_autoptr (tw_tensor) few = tw_tensor_zeros (TW_F32, 4, (int64_t[]) { 2, 3, 8, 8 });
  twb_tensor_view_set_tensor (v, "x", "output", few, NULL);
  g_assert_true (g_str_has_prefix (twb_tensor_view_page_note (v, "images"), "6 tiles"));
  g_object_unref (v);
}

/* ---- Pixels -------------------------------------------------------------------- */

typedef struct
{
  cairo_surface_t *s;
  int w, h;
} picture;

static picture
draw (TwbTensorView *v, const char *page, int w, int h)
{
  picture p = { cairo_image_surface_create (CAIRO_FORMAT_ARGB32, w, h), w, h };
  cairo_t *cr = cairo_create (p.s);
  g_assert_true (twb_tensor_view_draw_page (v, page, cr, w, h));
  cairo_destroy (cr);
  cairo_surface_flush (p.s);
  return p;
}

/* r, g, b, a in [0, 1] (un-premultiplied). */
static void
pixel (const picture *p, int x, int y, double rgba[4])
{
  const guint32 *row = (const guint32 *) (cairo_image_surface_get_data (p->s)
                                          + (size_t) y * cairo_image_surface_get_stride (p->s));
  guint32 v = row[x];
  double a = (v >> 24) / 255.0;
  rgba[3] = a;
  for (int k = 0; k < 3; k++)
    rgba[k] = a > 0 ? ((v >> (16 - 8 * k)) & 0xff) / 255.0 / a : 0;
}

static void
save (picture *p, const char *name)
{
  g_autofree char *path = shot_path (name);
  g_assert_cmpint (cairo_surface_write_to_png (p->s, path), ==, CAIRO_STATUS_SUCCESS);
  cairo_surface_destroy (p->s);
}

static void
test_draw_heatmap (void)
{
  TwbTensorView *v = new_view ();
  /* Both signs: diverging around 0 — blue, grey, red. */
  g_autoptr (tw_tensor) t = tw_tensor_from_data (TW_F32, 2, (int64_t[]) { 2, 2 },
                                                 (float[]) { -1, 0, 0, 1 });
  twb_tensor_view_set_tensor (v, "t", "output", t, NULL);
  picture p = draw (v, "heatmap", 240, 240);
  double c[4];
  pixel (&p, 60, 50, c);   /* [0, 0] = -1 */
  g_assert_cmpfloat (c[3], ==, 1);
  g_assert_cmpfloat (c[2], >, c[0] + 0.3);
  pixel (&p, 180, 150, c); /* [1, 1] = 1 */
  g_assert_cmpfloat (c[0], >, c[2] + 0.3);
  pixel (&p, 180, 50, c);  /* [0, 1] = 0: grey */
  g_assert_cmpfloat (fabs (c[0] - c[2]), <, 0.05);
  g_assert_cmpfloat (c[1], >, 0.7);
  save (&p, "heatmap-diverging.png");
  g_autofree char *ro = twb_tensor_view_readout_at (v, "heatmap", 60, 50, 240, 240);
  g_assert_cmpstr (ro, ==, "[0, 0] = -1");
  g_autofree char *ro2 = twb_tensor_view_readout_at (v, "heatmap", 180, 150, 240, 240);
  g_assert_cmpstr (ro2, ==, "[1, 1] = 1");
  g_assert_null (twb_tensor_view_readout_at (v, "heatmap", 1, 1, 240, 240));

  /* One sign: sequential (viridis) — dark purple at the min, yellow at the max. */
  g_autoptr (tw_tensor) u = tw_tensor_from_data (TW_F32, 2, (int64_t[]) { 2, 2 },
                                                 (float[]) { 0, 1, 2, 3 });
  twb_tensor_view_set_tensor (v, "u", "output", u, NULL);
  p = draw (v, "heatmap", 240, 240);
  pixel (&p, 60, 50, c);
  g_assert_cmpfloat (c[0] + c[1] + c[2], <, 0.8);
  g_assert_cmpfloat (c[2], >, c[1]);
  pixel (&p, 180, 150, c);
  g_assert_cmpfloat (c[0], >, 0.9);
  g_assert_cmpfloat (c[1], >, 0.8);
  g_assert_cmpfloat (c[2], <, 0.3);
  save (&p, "heatmap-sequential.png");
  g_object_unref (v);
}

/* 900 zeros and 100 ones: a bar at each end, the left one 9 times the
 * height of the right one, nothing between. */
static void
test_draw_histogram (void)
{
  g_autoptr (tw_tensor) t = tw_tensor_zeros (TW_F32, 1, (int64_t[]) { 1000 });
  for (int i = 900; i < 1000; i++)
    tw_tensor_f32 (t)[i] = 1;
  TwbTensorView *v = new_view ();
  twb_tensor_view_set_tensor (v, "t", "output", t, NULL);
  picture p = draw (v, "histogram", 320, 120);
  int bar[320] = { 0 };
  for (int x = 0; x < p.w; x++)
    for (int y = 0; y < p.h; y++)
      {
        double c[4];
        pixel (&p, x, y, c);
        bar[x] += c[3] > 0.9 && c[2] > c[0] + 0.4;   /* the accent blue */
      }
  int first = -1, last = -1;
  for (int x = 0; x < p.w; x++)
    if (bar[x])
      {
        if (first < 0)
          first = x;
        last = x;
      }
  g_assert_cmpint (first, >=, 0);
  g_assert_cmpint (first, <, 10);
  g_assert_cmpint (last, >, p.w - 10);
  /* A bar is (320 - 8) / 64 ≈ 4.9 px wide: nothing between the two. */
  int h_first = 0, h_last = 0;
  for (int x = 0; x < p.w; x++)
    {
      if (x < first + 6)
        h_first = MAX (h_first, bar[x]);
      else if (x > last - 6)
        h_last = MAX (h_last, bar[x]);
      else
        g_assert_cmpint (bar[x], ==, 0);
    }
  /* Heights 900 : 100, to a pixel of rounding (of the short bar). */
  g_assert_cmpint (h_last, >, 5);
  g_assert_cmpfloat (fabs (h_first / 9.0 - h_last), <=, 1);
  save (&p, "histogram.png");
  g_object_unref (v);
}

/* A [1, 2, 2, 2] tensor: tile 0 is [[0, 1], [2, 3]], black to white; tile 1
 * is constant (mid grey); tiles scaled to 32 px. */
static void
test_draw_images (void)
{
  g_autoptr (tw_tensor) t = tw_tensor_from_data (TW_F32, 4, (int64_t[]) { 1, 2, 2, 2 },
                                                 (float[]) { 0, 1, 2, 3, 5, 5, 5, 5 });
  TwbTensorView *v = new_view ();
  twb_tensor_view_set_tensor (v, "x", "output", t, NULL);
  picture p = draw (v, "images", 200, 80);
  double c[4];
  pixel (&p, 4 + 8, 4 + 8, c);     /* tile 0 at (4, 4), 32 × 32: value 0 */
  g_assert_cmpfloat (c[3], ==, 1);
  g_assert_cmpfloat (c[0], <, 0.05);
  pixel (&p, 4 + 24, 4 + 24, c);   /* value 3 */
  g_assert_cmpfloat (c[0], >, 0.95);
  pixel (&p, 4 + 24, 4 + 8, c);    /* value 1: a third */
  g_assert_cmpfloat (fabs (c[0] - 1.0 / 3), <, 0.02);
  pixel (&p, 4 + 32 + 8 + 16, 4 + 16, c);  /* tile 1, after an 8 px gap */
  g_assert_cmpfloat (fabs (c[0] - 0.5), <, 0.02);
  save (&p, "images.png");
  g_object_unref (v);
}

/* ---- In a window --------------------------------------------------------------- */

static void
save_window (GtkWidget *win, const char *name)
{
  int w = gtk_widget_get_width (win), h = gtk_widget_get_height (win);
  GdkPaintable *paintable = gtk_widget_paintable_new (win);
  GtkSnapshot *snap = gtk_snapshot_new ();
  gdk_paintable_snapshot (paintable, snap, w, h);
  g_object_unref (paintable);
  GskRenderNode *node = gtk_snapshot_free_to_node (snap);
  g_assert_nonnull (node);
  GdkTexture *tex = gsk_renderer_render_texture (gtk_native_get_renderer (GTK_NATIVE (win)), node,
                                                 &GRAPHENE_RECT_INIT (0, 0, w, h));
  gsk_render_node_unref (node);
  g_autofree char *path = shot_path (name);
  g_assert_true (gdk_texture_save_to_png (tex, path));
  g_object_unref (tex);
}

/* A 4-D activation with a long name in a 360 × 420 side panel: the view
 * asks for no more than that, the header ellipsizes, every page draws
 * without a warning; screenshots of each page in light and dark. */
static void
test_side_panel (void)
{
  g_autoptr (tw_tensor) t = tw_tensor_new (TW_F32, 4, (int64_t[]) { 4, 8, 12, 12 });
  g_autoptr (tw_tensor) prev = tw_tensor_new (TW_F32, 4, (int64_t[]) { 4, 8, 12, 12 });
  int64_t n = tw_tensor_numel (t);
  for (int64_t i = 0; i < n; i++)
    {
      tw_tensor_f32 (t)[i] = (float) sin (i * 0.37) * (float) (1 + i % 5);
      tw_tensor_f32 (prev)[i] = tw_tensor_f32 (t)[i] + (float) cos (i * 0.11) * 0.01f;
    }
  tw_tensor_f32 (t)[5] = NAN;
  GtkWidget *v = twb_tensor_view_new ();
  twb_tensor_view_set_tensor (TWB_TENSOR_VIEW (v),
                              "encoder.block3.conv2.activation_after_batchnorm_and_relu",
                              "output", t, prev);
  int min_w, min_h;
  gtk_widget_measure (v, GTK_ORIENTATION_HORIZONTAL, -1, &min_w, NULL, NULL, NULL);
  gtk_widget_measure (v, GTK_ORIENTATION_VERTICAL, 360, &min_h, NULL, NULL, NULL);
  g_assert_cmpint (min_w, <=, 360);
  g_assert_cmpint (min_h, <=, 420);

  GtkWidget *win = gtk_window_new ();
  gtk_window_set_default_size (GTK_WINDOW (win), 360, 420);
  gtk_window_set_decorated (GTK_WINDOW (win), FALSE);
  gtk_widget_set_margin_start (v, 6);
  gtk_widget_set_margin_end (v, 6);
  gtk_widget_set_margin_top (v, 6);
  gtk_widget_set_margin_bottom (v, 6);
  gtk_window_set_child (GTK_WINDOW (win), v);
  gtk_window_present (GTK_WINDOW (win));
  GtkSettings *settings = gtk_settings_get_default ();
  const char *pages[] = { "values", "heatmap", "images", "diff" };
  for (int dark = 0; dark < 2; dark++)
    {
      g_object_set (settings, "gtk-application-prefer-dark-theme", dark, NULL);
      for (guint i = 0; i < G_N_ELEMENTS (pages); i++)
        {
          twb_tensor_view_show_page (TWB_TENSOR_VIEW (v), pages[i]);
          twt_ui_pump ();
          g_assert_cmpint (gtk_widget_get_width (win), <=, 360);
          g_assert_cmpint (gtk_widget_get_height (win), <=, 420);
          /* The error labels switch to a lighter red on dark backgrounds. */
          g_assert_cmpint (gtk_widget_has_css_class (v, "on-dark"), ==, dark);
          g_autofree char *name = g_strdup_printf ("tensor-view-%s-%s.png", pages[i],
                                                   dark ? "dark" : "light");
          save_window (win, name);
        }
    }
  g_object_set (settings, "gtk-application-prefer-dark-theme", FALSE, NULL);
  twb_tensor_view_set_slice (TWB_TENSOR_VIEW (v), 0, 3);
  twb_tensor_view_set_slice (TWB_TENSOR_VIEW (v), 1, 7);
  twb_tensor_view_show_page (TWB_TENSOR_VIEW (v), "values");
  twt_ui_pump ();
  g_autofree char *c = twb_tensor_view_cell_text (TWB_TENSOR_VIEW (v), 11, 11);
  g_autofree char *want = fmt (tw_tensor_f32 (t)[n - 1]);
  g_assert_cmpstr (c, ==, want);
  gtk_window_destroy (GTK_WINDOW (win));
  twt_ui_pump ();
}

/* A difference of exactly zero is drawn as "no difference" (a hatched
 * field and the words), not as one solid colour; a difference of one sign
 * still puts its zeros at the scale's neutral grey. */
static void
test_diff_zero (void)
{
  g_autoptr (tw_tensor) a = tw_tensor_from_data (TW_F32, 2, (int64_t[]) { 8, 8 },
                                                 (float[64]) { 1, 2, 3, 4, 5, 6, 7, 8 });
  TwbTensorView *v = new_view ();
  twb_tensor_view_set_tensor (v, "fc1.weight", "parameter", a, a);
  twb_tensor_view_set_iterations (v, 5, 4);
  g_assert_cmpstr (twb_tensor_view_page_note (v, "diff"), ==,
                   "Iteration 5 − iteration 4: no difference, every element is equal");
  picture p = draw (v, "diff", 200, 200);
  /* The map's area (inside PAD 4, above the 30 px scale): at least two
   * colours (field and hatch), none of them the colour scale's, and the
   * scale bar itself is not drawn. */
  GHashTable *colours = g_hash_table_new (g_direct_hash, g_direct_equal);
  gboolean any_scale_colour = FALSE;
  for (int y = 10; y < 160; y++)
    for (int x = 10; x < 190; x++)
      {
        double c[4];
        pixel (&p, x, y, c);
        guint key = (guint) (c[0] * 255) << 16 | (guint) (c[1] * 255) << 8 | (guint) (c[2] * 255);
        key ^= (guint) (c[3] * 255) << 24;
        g_hash_table_add (colours, GUINT_TO_POINTER (key + 1));
        /* coolwarm's or viridis's middle, opaque. */
        any_scale_colour |= c[3] > 0.9 && fabs (c[0] - 0.865) < 0.02 && fabs (c[1] - 0.865) < 0.02;
        any_scale_colour |= c[3] > 0.9 && fabs (c[0] - 0.128) < 0.02 && fabs (c[1] - 0.567) < 0.02;
      }
  g_assert_cmpuint (g_hash_table_size (colours), >=, 2);
  g_assert_false (any_scale_colour);
  g_hash_table_unref (colours);
  /* Nothing opaque where the scale would be (y 170..180). */
  for (int x = 10; x < 190; x++)
    {
      double c[4];
      pixel (&p, x, 175, c);
      g_assert_cmpfloat (c[3], <, 0.5);
    }
  save (&p, "diff-zero.png");

  /* Δ = {0, 0.5}: all of one sign, yet 0 is the neutral grey of the
   * diverging scale (a difference always diverges around 0). */
  g_autoptr (tw_tensor) b = tw_tensor_from_data (TW_F32, 2, (int64_t[]) { 1, 2 },
                                                 (float[]) { 1, 2.5f });
  g_autoptr (tw_tensor) c0 = tw_tensor_from_data (TW_F32, 2, (int64_t[]) { 1, 2 },
                                                  (float[]) { 1, 2 });
  twb_tensor_view_set_tensor (v, "fc1.weight", "parameter", b, c0);
  picture q = draw (v, "diff", 200, 200);
  double g[4], r[4];
  pixel (&q, 50, 80, g);
  pixel (&q, 150, 80, r);
  g_assert_cmpfloat (fabs (g[0] - 0.865), <, 0.01);
  g_assert_cmpfloat (fabs (g[1] - 0.865), <, 0.01);
  g_assert_cmpfloat (fabs (g[2] - 0.865), <, 0.01);
  g_assert_cmpfloat (r[0], >, r[2] + 0.3);    /* +0.5 is warm: red */
  save (&q, "diff-one-sign.png");
  g_object_unref (v);
}

/* The peak's label never overlaps a bar: with the tallest bar at the right
 * (where the label goes), in its own line above the bars — checked on the
 * layout and on the drawn pixels, at panel sizes from 120 × 48 up. */
static void
test_histogram_peak_label (void)
{
  g_autoptr (tw_tensor) t = tw_tensor_zeros (TW_F32, 1, (int64_t[]) { 1000 });
  for (int i = 0; i < 1000; i++)
    tw_tensor_f32 (t)[i] = i < 100 ? (float) i / 100 : 1;   /* 901 values in the last bin */
  TwbTensorView *v = new_view ();
  twb_tensor_view_set_tensor (v, "t", "output", t, NULL);
  const tw_tensor_stats *st = twb_tensor_view_get_stats (v);
  const int sizes[][2] = { { 120, 48 }, { 240, 64 }, { 320, 120 }, { 600, 90 } };
  for (guint k = 0; k < G_N_ELEMENTS (sizes); k++)
    {
      int w = sizes[k][0], h = sizes[k][1];
      TwbHistogramLayout lo;
      g_assert_true (twb_histogram_layout (st, w, h, 12, 50, &lo));
      g_assert_cmpint (lo.peak, ==, 901);
      /* The label's box ends above the bars' box. */
      g_assert_cmpfloat (lo.peak_label.origin.y + lo.peak_label.size.height, <=,
                         lo.bars.origin.y);
      picture p = draw (v, "histogram", w, h);
      /* On the pixels: the highest bar pixel (accent blue), the axis (the
       * first row below it that is mostly grey ink), and the label's ink
       * (grey, above the bars, right half).  Between the bars' top and the
       * axis there is no ink but the bars': text over a bar would show. */
      int top_bar = p.h, axis = -1, label_ink = 0;
      for (int y = 0; y < p.h; y++)
        for (int x = 0; x < p.w; x++)
          {
            double c[4];
            pixel (&p, x, y, c);
            if (c[3] > 0.9 && c[2] > c[0] + 0.4)
              top_bar = MIN (top_bar, y);
          }
      for (int y = top_bar; y < p.h && axis < 0; y++)
        {
          int grey = 0;
          for (int x = 0; x < p.w; x++)
            {
              double c[4];
              pixel (&p, x, y, c);
              grey += c[3] > 0.2 && !(c[2] > c[0] + 0.4);
            }
          if (grey > p.w / 2)
            axis = y;
        }
      g_assert_cmpint (axis, >, top_bar);
      for (int y = 0; y < p.h; y++)
        for (int x = 0; x < p.w; x++)
          {
            double c[4];
            pixel (&p, x, y, c);
            gboolean ink = c[3] > 0.2 && !(c[2] > c[0] + 0.4);
            if (ink && y < top_bar && x > p.w / 2)
              label_ink++;
            if (y >= top_bar && y < axis)
              g_assert_false (ink);
          }
      g_test_message ("%d × %d: bars from y %d, axis at %d, label ink %d px above", w, h, top_bar,
                      axis, label_ink);
      g_assert_cmpint (label_ink, >, 10);
      g_autofree char *name = g_strdup_printf ("histogram-peak-%dx%d.png", w, h);
      save (&p, name);
    }
  g_object_unref (v);
}

/* A tensor from an earlier pause is marked stale: a line says so, the
 * figures fade; a new tensor is live again. */
static void
test_stale (void)
{
  g_autoptr (tw_tensor) t = tw_tensor_zeros (TW_F32, 2, (int64_t[]) { 2, 2 });
  TwbTensorView *v = new_view ();
  twb_tensor_view_set_stale (v, "nothing shown");
  g_assert_null (twb_tensor_view_get_stale (v));     /* no tensor: nothing to be stale */
  twb_tensor_view_set_tensor (v, "fc1", "output", t, NULL);
  g_assert_null (twb_tensor_view_get_stale (v));
  twb_tensor_view_set_stale (v, "taken at iteration 3, before the run finished");
  g_assert_cmpstr (twb_tensor_view_get_stale (v), ==,
                   "taken at iteration 3, before the run finished");
  twb_tensor_view_set_tensor (v, "fc1", "output", t, NULL);
  g_assert_null (twb_tensor_view_get_stale (v));
  g_object_unref (v);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_log_set_always_fatal (G_LOG_FATAL_MASK | G_LOG_LEVEL_WARNING | G_LOG_LEVEL_CRITICAL);
  if (!gtk_init_check ())
    {
      g_print ("1..0 # SKIP no display\n");
      return 0;
    }
  g_test_add_func ("/tensor-view/stats", test_stats);
  g_test_add_func ("/tensor-view/slices", test_slices);
  g_test_add_func ("/tensor-view/window", test_window);
  g_test_add_func ("/tensor-view/diff", test_diff);
  g_test_add_func ("/tensor-view/diff/zero", test_diff_zero);
  g_test_add_func ("/tensor-view/draw/histogram-peak-label", test_histogram_peak_label);
  g_test_add_func ("/tensor-view/stale", test_stale);
  g_test_add_func ("/tensor-view/pages-apply", test_pages_apply);
  g_test_add_func ("/tensor-view/draw/heatmap", test_draw_heatmap);
  g_test_add_func ("/tensor-view/draw/histogram", test_draw_histogram);
  g_test_add_func ("/tensor-view/draw/images", test_draw_images);
  g_test_add_func ("/tensor-view/side-panel", test_side_panel);
  return g_test_run ();
}
