/* test-plot.c — the dashboard's plot widget (ui/twb-plot.h) under Xvfb:
 * the hover read-out at a coordinate for known data; exported PNGs read
 * back (curve-coloured pixels where the curve is and not elsewhere, a log
 * axis placing 1, 10 and 100 at equal steps); SVG parsed as XML with path
 * elements; CSV re-imported; zoom by drag, wheel about the pointer and
 * double-click through the widget's own controllers; following new points;
 * the empty plot; small and dark.  Screenshots go to TWB_TEST_SHOTS (or a
 * temporary directory). */
#include "ui-test.h"
#include "ui/twb-plot.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

/* The plot's first two palette colours (twb-plot.c), 0-255. */
static const int BLUE[3] = { 31, 119, 180 };
static const int ORANGE[3] = { 255, 127, 14 };

static char *dir;

static char *
out_path (const char *name)
{
  const char *shots = g_getenv ("TWB_TEST_SHOTS");
  if (shots == NULL && dir == NULL)
    dir = g_dir_make_tmp ("twb-plot-XXXXXX", NULL);
  return g_build_filename (shots ? shots : dir, name, NULL);
}

typedef struct
{
  GtkWidget *window;
  TwbPlot *plot;
  TwbMetrics *m;
  guint loss, val;
} Fixture;

/* loss = 1 / (1 + x) at every step 0..100, val_loss = 2 / (1 + x) every 10. */
static void
fixture_setup (Fixture *f, gconstpointer data)
{
  f->m = twb_metrics_new ();
  f->loss = twb_metrics_add_series (f->m, "run-1", "loss");
  f->val = twb_metrics_add_series (f->m, "run-1", "val_loss");
  for (int x = 0; x <= 100; x++)
    {
      twb_metrics_append (f->m, f->loss, x, 1.0 / (1 + x));
      if (x % 10 == 0)
        twb_metrics_append (f->m, f->val, x, 2.0 / (1 + x));
    }
  f->plot = TWB_PLOT (twb_plot_new (f->m, "Loss"));
  twb_plot_add_curve (f->plot, f->loss, NULL, FALSE);
  twb_plot_add_curve (f->plot, f->val, NULL, TRUE);
  f->window = gtk_window_new ();
  gtk_window_set_default_size (GTK_WINDOW (f->window), 640, 320);
  gtk_window_set_child (GTK_WINDOW (f->window), GTK_WIDGET (f->plot));
  gtk_window_present (GTK_WINDOW (f->window));
  twt_ui_pump ();
  g_assert_cmpint (gtk_widget_get_width (GTK_WIDGET (f->plot)), >, 240);
}

static void
fixture_teardown (Fixture *f, gconstpointer data)
{
  gtk_window_destroy (GTK_WINDOW (f->window));
  twt_ui_pump ();
  g_clear_object (&f->m);
}

static void
area (TwbPlot *p, int w, int h, graphene_rect_t *a)
{
  g_assert_true (twb_plot_get_area (p, w, h, a));
  g_assert_cmpfloat (a->size.width, >, 50);
  g_assert_cmpfloat (a->size.height, >, 30);
}

/* Data x to widget x at the widget's size. */
static double
widget_x (TwbPlot *p, double x)
{
  graphene_rect_t a;
  area (p, gtk_widget_get_width (GTK_WIDGET (p)), gtk_widget_get_height (GTK_WIDGET (p)), &a);
  double x0, x1;
  twb_plot_get_x_range (p, &x0, &x1);
  return a.origin.x + (x - x0) / (x1 - x0) * a.size.width;
}

static GtkEventController *
controller (TwbPlot *p, GType type)
{
  g_autoptr (GListModel) list = gtk_widget_observe_controllers (GTK_WIDGET (p));
  for (guint i = 0; i < g_list_model_get_n_items (list); i++)
    {
      g_autoptr (GtkEventController) c = g_list_model_get_item (list, i);
      if (G_OBJECT_TYPE (c) == type)
        return c; /* the widget keeps its reference */
    }
  g_assert_not_reached ();
}

static void
test_readout (Fixture *f, gconstpointer data)
{
  double x0, x1;
  twb_plot_get_x_range (f->plot, &x0, &x1);
  g_assert_cmpfloat (x0, ==, 0);
  g_assert_cmpfloat (x1, ==, 100);

  g_autofree char *at50 = twb_plot_readout_at (f->plot, widget_x (f->plot, 50));
  g_assert_cmpstr (at50, ==, "step 50  loss 0.01961  val_loss 0.03922");
  /* Between val_loss's points: it gives its nearest (50), loss its own. */
  g_autofree char *at53 = twb_plot_readout_at (f->plot, widget_x (f->plot, 53.2));
  g_assert_cmpstr (at53, ==, "step 53  loss 0.01852  val_loss 0.03922");
  g_assert_null (twb_plot_readout_at (f->plot, 1));

  /* Smoothed, then raw: the EMA computed here directly. */
  twb_plot_set_smoothing (f->plot, 0.6);
  double last = 0, s = 0.6, want = 0;
  for (int x = 0; x <= 50; x++)
    {
      last = last * s + (1 - s) / (1 + x);
      want = last / (1 - pow (s, x + 1));
    }
  double vlast = 0, vwant = 0;
  for (int k = 0; k <= 5; k++)
    {
      vlast = vlast * s + (1 - s) * 2.0 / (1 + 10 * k);
      vwant = vlast / (1 - pow (s, k + 1));
    }
  g_autofree char *expect = g_strdup_printf ("step 50  loss %.4g (0.01961)  val_loss %.4g (0.03922)",
                                             want, vwant);
  g_autofree char *smooth = twb_plot_readout_at (f->plot, widget_x (f->plot, 50));
  g_assert_cmpstr (smooth, ==, expect);
  twb_plot_set_smoothing (f->plot, 0);

  /* A second run: names carry the run; a gap reads "nan". */
  guint other = twb_metrics_add_series (f->m, "run-2", "loss");
  twb_metrics_append (f->m, other, 50, NAN);
  twb_plot_add_curve (f->plot, other, NULL, FALSE);
  g_autofree char *two = twb_plot_readout_at (f->plot, widget_x (f->plot, 50));
  g_assert_cmpstr (two, ==,
                   "step 50  run-1 · loss 0.01961  run-1 · val_loss 0.03922  run-2 · loss nan");
  g_assert_cmpuint (twb_plot_n_curves (f->plot), ==, 3);
  twb_metrics_remove_run (f->m, "run-2");
  g_assert_cmpuint (twb_plot_n_curves (f->plot), ==, 2);

  /* The hover line and box drawn in the window. */
  g_signal_emit_by_name (controller (f->plot, GTK_TYPE_EVENT_CONTROLLER_MOTION), "motion",
                         widget_x (f->plot, 50), 120.0);
  twt_ui_pump ();
  g_autofree char *shot = out_path ("plot-hover.png");
  g_autoptr (GdkPaintable) paint = gtk_widget_paintable_new (f->window);
  GtkSnapshot *snap = gtk_snapshot_new ();
  gdk_paintable_snapshot (paint, snap, gtk_widget_get_width (f->window),
                          gtk_widget_get_height (f->window));
  g_autoptr (GskRenderNode) node = gtk_snapshot_free_to_node (snap);
  g_assert_nonnull (node);
  g_autoptr (GdkTexture) tex
    = gsk_renderer_render_texture (gtk_native_get_renderer (GTK_NATIVE (f->window)), node, NULL);
  g_assert_true (gdk_texture_save_to_png (tex, shot));
  g_test_message ("screenshot: %s", shot);
}

/* ---- Pictures read back -------------------------------------------------------- */

typedef struct
{
  cairo_surface_t *s;
  int w, h, stride;
  const guint8 *data;
  int bg[3];
} Png;

static void
png_load (Png *p, const char *path)
{
  p->s = cairo_image_surface_create_from_png (path);
  g_assert_cmpint (cairo_surface_status (p->s), ==, CAIRO_STATUS_SUCCESS);
  p->w = cairo_image_surface_get_width (p->s);
  p->h = cairo_image_surface_get_height (p->s);
  p->stride = cairo_image_surface_get_stride (p->s);
  p->data = cairo_image_surface_get_data (p->s);
  guint32 c = *(const guint32 *) (const void *) p->data;
  p->bg[0] = (c >> 16) & 0xff;
  p->bg[1] = (c >> 8) & 0xff;
  p->bg[2] = c & 0xff;
}

/* Is the pixel the colour, or at least half the colour blended with the
 * background (the picture's corner) as antialiasing does?  It must lie
 * near the line from the background to the colour: grey text, axes and
 * other curves are far from it. */
static gboolean
px_is (const Png *p, int x, int y, const int rgb[3])
{
  if (x < 0 || y < 0 || x >= p->w || y >= p->h)
    return FALSE;
  guint32 v = *(const guint32 *) (const void *) (p->data + y * p->stride + 4 * x);
  double px[3] = { (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff };
  double d[3], e[3], dd = 0, de = 0;
  for (int k = 0; k < 3; k++)
    {
      d[k] = rgb[k] - p->bg[k];
      e[k] = px[k] - p->bg[k];
      dd += d[k] * d[k];
      de += d[k] * e[k];
    }
  double t = de / dd, res = 0;
  for (int k = 0; k < 3; k++)
    res += (e[k] - t * d[k]) * (e[k] - t * d[k]);
  /* 30 of 255 off the blend line: rounding in the blend. */
  return t >= 0.5 && t <= 1.2 && sqrt (res) < 30;
}

static gboolean
near_is (const Png *p, double x, double y, int r, const int rgb[3])
{
  for (int dy = -r; dy <= r; dy++)
    for (int dx = -r; dx <= r; dx++)
      if (px_is (p, (int) floor (x) + dx, (int) floor (y) + dy, rgb))
        return TRUE;
  return FALSE;
}

/* The mean row of the colour's pixels in column x, -1 if none. */
static double
curve_row (const Png *p, int x, const int rgb[3])
{
  double sum = 0;
  int n = 0;
  for (int y = 0; y < p->h; y++)
    if (px_is (p, x, y, rgb))
      {
        sum += y;
        n++;
      }
  return n ? sum / n : -1;
}

static void
test_png (Fixture *f, gconstpointer data)
{
  /* y = x: a diagonal. */
  twb_plot_clear_curves (f->plot);
  guint lin = twb_metrics_add_series (f->m, "run-1", "linear");
  for (int x = 0; x <= 100; x++)
    twb_metrics_append (f->m, lin, x, x);
  twb_plot_add_curve (f->plot, lin, NULL, FALSE);
  const int W = 400, H = 200;
  g_autofree char *path = out_path ("plot-linear.png");
  g_autoptr (GError) error = NULL;
  g_assert_true (twb_plot_export (f->plot, path, W, H, &error));
  g_assert_no_error (error);
  graphene_rect_t a;
  area (f->plot, W, H, &a);
  double x0, x1, y0, y1;
  g_assert_true (twb_plot_get_view (f->plot, W, H, &x0, &x1, &y0, &y1));
  g_assert_cmpfloat (x0, ==, 0);
  g_assert_cmpfloat (x1, ==, 100);
  g_assert_cmpfloat (y0, <, 0); /* 5 % headroom */
  g_assert_cmpfloat (y1, >, 100);
  Png png;
  png_load (&png, path);
  g_assert_cmpint (png.w, ==, W);
  g_assert_cmpint (png.h, ==, H);
  for (int x = 10; x <= 90; x += 20)
    {
      double px = a.origin.x + x / 100.0 * a.size.width;
      double py = a.origin.y + a.size.height - (x - y0) / (y1 - y0) * a.size.height;
      if (!near_is (&png, px, py, 2, BLUE))
        g_error ("no curve pixel near (%.1f, %.1f) for x = y = %d", px, py, x);
      /* Well off the diagonal: no curve. */
      g_assert_false (near_is (&png, px, py + 40, 2, BLUE));
      g_assert_false (near_is (&png, px, py - 40, 2, BLUE));
    }
  /* A dense curve (points in every column: drawn as bands) y = 100 - x,
   * with a gap of NaN over 40 < x < 60. */
  guint dense = twb_metrics_add_series (f->m, "run-1", "dense");
  for (int i = 0; i <= 20000; i++)
    {
      double x = i * 0.005;
      twb_metrics_append (f->m, dense, x, x > 40 && x < 60 ? NAN : 100 - x);
    }
  twb_plot_add_curve (f->plot, dense, NULL, FALSE);
  g_autofree char *path2 = out_path ("plot-dense.png");
  g_assert_true (twb_plot_export (f->plot, path2, W, H, &error));
  g_assert_true (twb_plot_get_view (f->plot, W, H, &x0, &x1, &y0, &y1));
  g_assert_cmpfloat (x1, ==, 100);
  Png png2;
  png_load (&png2, path2);
  for (int x = 5; x <= 95; x += 10)
    {
      double px = a.origin.x + x / 100.0 * a.size.width;
      double py = a.origin.y + a.size.height - (100 - x - y0) / (y1 - y0) * a.size.height;
      gboolean in_gap = x > 42 && x < 58;
      if (near_is (&png2, px, py, 2, ORANGE) == in_gap)
        g_error ("dense curve at x = %d (%.1f, %.1f): %s", x, px, py,
                 in_gap ? "drawn in the gap" : "not drawn");
      g_assert_false (near_is (&png2, px, py + 30, 2, ORANGE));
      g_assert_false (near_is (&png2, px, py - 30, 2, ORANGE));
    }
  cairo_surface_destroy (png2.s);
  /* The background: white under the default (dark) text. */
  guint32 corner = *(const guint32 *) (const void *) png.data;
  g_assert_cmphex (corner & 0xffffff, ==, 0xffffff);
  cairo_surface_destroy (png.s);
}

static void
test_log_axis (Fixture *f, gconstpointer data)
{
  /* y = 10^(x/50): 1, 10 and 100 at x = 0, 50, 100, the data a bit wider. */
  twb_plot_clear_curves (f->plot);
  guint e = twb_metrics_add_series (f->m, "run-1", "exp");
  for (int x = -10; x <= 110; x++)
    twb_metrics_append (f->m, e, x, pow (10, x / 50.0));
  twb_plot_add_curve (f->plot, e, NULL, FALSE);
  const int W = 400, H = 240;
  double rows[2][3];
  for (int log_y = 0; log_y < 2; log_y++)
    {
      twb_plot_set_log_y (f->plot, log_y);
      g_autofree char *path = out_path (log_y ? "plot-log.png" : "plot-exp-linear.png");
      g_assert_true (twb_plot_export (f->plot, path, W, H, NULL));
      graphene_rect_t a;
      area (f->plot, W, H, &a);
      double x0, x1;
      g_assert_true (twb_plot_get_view (f->plot, W, H, &x0, &x1, NULL, NULL));
      Png png;
      png_load (&png, path);
      for (int k = 0; k < 3; k++)
        {
          int px = (int) floor (a.origin.x + (50.0 * k - x0) / (x1 - x0) * a.size.width);
          rows[log_y][k] = curve_row (&png, px, BLUE);
          g_assert_cmpfloat (rows[log_y][k], >=, 0);
        }
      cairo_surface_destroy (png.s);
    }
  /* Log: equal steps (the curve is 1.5 px wide: 1.5 px of slack); linear:
   * 1 → 10 is a tenth of 10 → 100. */
  double d1 = rows[1][0] - rows[1][1], d2 = rows[1][1] - rows[1][2];
  g_assert_cmpfloat (d1, >, 30);
  g_assert_cmpfloat (fabs (d1 - d2), <=, 1.5);
  double l1 = rows[0][0] - rows[0][1], l2 = rows[0][1] - rows[0][2];
  g_assert_cmpfloat (l2, >, 5 * l1);
  /* Log y range: positive, around 10^-0.2 .. 10^2.2. */
  double y0, y1;
  g_assert_true (twb_plot_get_view (f->plot, W, H, NULL, NULL, &y0, &y1));
  g_assert_cmpfloat (y0, >, 0);
  g_assert_cmpfloat (y0, <, 10e-1 * pow (10, -0.2));
  g_assert_cmpfloat (y1, >, 100 * pow (10, 0.2));
  /* Non-positive points on a log axis are left out, not drawn at -inf. */
  guint neg = twb_metrics_add_series (f->m, "run-1", "neg");
  twb_metrics_append (f->m, neg, 0, -1);
  twb_plot_clear_curves (f->plot);
  twb_plot_add_curve (f->plot, neg, NULL, FALSE);
  graphene_rect_t a;
  g_assert_false (twb_plot_get_area (f->plot, W, H, &a));
  g_autofree char *path = out_path ("plot-log-none.png");
  g_assert_true (twb_plot_export (f->plot, path, W, H, NULL));
}

typedef struct
{
  guint paths, svg;
} SvgCount;

static void
svg_start (GMarkupParseContext *ctx, const char *name, const char **an, const char **av,
           gpointer data, GError **error)
{
  SvgCount *c = data;
  c->paths += g_str_equal (name, "path");
  c->svg += g_str_equal (name, "svg");
}

static void
test_svg_csv (Fixture *f, gconstpointer data)
{
  g_autofree char *svg = out_path ("plot.svg");
  g_autoptr (GError) error = NULL;
  g_assert_true (twb_plot_export (f->plot, svg, 640, 320, &error));
  g_assert_no_error (error);
  g_autofree char *text = NULL;
  gsize len;
  g_assert_true (g_file_get_contents (svg, &text, &len, NULL));
  const GMarkupParser parser = { .start_element = svg_start };
  SvgCount count = { 0 };
  g_autoptr (GMarkupParseContext) ctx = g_markup_parse_context_new (&parser, 0, &count, NULL);
  /* GMarkup has no DOCTYPE: skip the XML prologue cairo writes. */
  const char *root = strstr (text, "<svg");
  g_assert_nonnull (root);
  g_assert_true (g_markup_parse_context_parse (ctx, root, -1, &error));
  g_assert_true (g_markup_parse_context_end_parse (ctx, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (count.svg, ==, 1);
  g_assert_cmpuint (count.paths, >=, 2); /* two curves at least */

  g_autofree char *csv = out_path ("plot.csv");
  g_assert_true (twb_plot_export (f->plot, csv, 0, 0, &error));
  g_autoptr (TwbMetrics) back = twb_metrics_new ();
  g_assert_true (twb_metrics_import_csv (back, csv, NULL, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (twb_metrics_n_series (back), ==, 2);
  g_assert_cmpuint (twb_metrics_series_len (back, twb_metrics_find_series (back, "run-1", "loss")),
                    ==, 101);
  g_assert_cmpuint (
    twb_metrics_series_len (back, twb_metrics_find_series (back, "run-1", "val_loss")), ==, 11);

  g_autofree char *bad = out_path ("plot.bmp");
  g_assert_false (twb_plot_export (f->plot, bad, 100, 100, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
  g_assert_nonnull (strstr (error->message, "plot.bmp"));
  g_clear_error (&error);
  g_autofree char *huge = out_path ("huge.png");
  g_assert_false (twb_plot_export (f->plot, huge, 100000, 100, &error));
  g_assert_nonnull (strstr (error->message, "huge.png"));
  g_assert_false (g_file_test (huge, G_FILE_TEST_EXISTS));
}

static gboolean
zoomed (TwbPlot *p)
{
  gboolean z;
  g_object_get (p, "zoomed", &z, NULL);
  return z;
}

static void
test_zoom (Fixture *f, gconstpointer data)
{
  double x0, x1;
  g_assert_false (zoomed (f->plot));
  /* A flat drag from x = 20 to x = 60 zooms x only. */
  double a = widget_x (f->plot, 20), b = widget_x (f->plot, 60);
  GtkEventController *drag = controller (f->plot, GTK_TYPE_GESTURE_DRAG);
  g_signal_emit_by_name (drag, "drag-begin", a, 150.0);
  g_signal_emit_by_name (drag, "drag-update", (b - a) / 2, 1.0);
  g_signal_emit_by_name (drag, "drag-end", b - a, 1.0);
  twt_ui_pump ();
  g_assert_true (zoomed (f->plot));
  twb_plot_get_x_range (f->plot, &x0, &x1);
  g_assert_cmpfloat_with_epsilon (x0, 20, 1e-9);
  g_assert_cmpfloat_with_epsilon (x1, 60, 1e-9);
  /* y fits what is in view: loss 1/61 .. 1/21 and val_loss 2/61 .. 2/21. */
  int w = gtk_widget_get_width (GTK_WIDGET (f->plot)), h = gtk_widget_get_height (GTK_WIDGET (f->plot));
  double y0, y1;
  g_assert_true (twb_plot_get_view (f->plot, w, h, NULL, NULL, &y0, &y1));
  g_assert_cmpfloat (y0, <, 1.0 / 61);
  g_assert_cmpfloat (y0, >, 1.0 / 61 - 0.01);
  g_assert_cmpfloat (y1, >, 2.0 / 21);
  g_assert_cmpfloat (y1, <, 2.0 / 21 + 0.01);

  /* Double-click resets. */
  GtkEventController *click = controller (f->plot, GTK_TYPE_GESTURE_CLICK);
  g_signal_emit_by_name (click, "pressed", 2, 200.0, 150.0);
  g_assert_false (zoomed (f->plot));
  twb_plot_get_x_range (f->plot, &x0, &x1);
  g_assert_cmpfloat (x1, ==, 100);

  /* The wheel about the pointer: x = 50 stays under it. */
  g_signal_emit_by_name (controller (f->plot, GTK_TYPE_EVENT_CONTROLLER_MOTION), "motion",
                         widget_x (f->plot, 50), 150.0);
  gboolean handled = FALSE;
  GtkEventController *scroll = controller (f->plot, GTK_TYPE_EVENT_CONTROLLER_SCROLL);
  g_signal_emit_by_name (scroll, "scroll", 0.0, -1.0, &handled);
  g_assert_true (handled);
  g_assert_true (zoomed (f->plot));
  twb_plot_get_x_range (f->plot, &x0, &x1);
  g_assert_cmpfloat_with_epsilon (x0, 50 - 50 / 1.25, 1e-9);
  g_assert_cmpfloat_with_epsilon (x1, 50 + 50 / 1.25, 1e-9);
  /* Zooming out past the data goes back to following it. */
  g_signal_emit_by_name (scroll, "scroll", 0.0, 1.0, &handled);
  g_signal_emit_by_name (scroll, "scroll", 0.0, 1.0, &handled);
  g_assert_false (zoomed (f->plot));
  /* With wheel-needs-ctrl the plain wheel passes (no Ctrl held here). */
  g_object_set (f->plot, "wheel-needs-ctrl", TRUE, NULL);
  handled = TRUE;
  g_signal_emit_by_name (scroll, "scroll", 0.0, -1.0, &handled);
  g_assert_false (handled);
  g_assert_false (zoomed (f->plot));
  g_object_set (f->plot, "wheel-needs-ctrl", FALSE, NULL);

  /* A rectangle fixes y too. */
  double top = 60, bottom = 160;
  graphene_rect_t ar;
  area (f->plot, w, h, &ar);
  g_assert_cmpfloat (ar.origin.y, <, top);
  g_assert_cmpfloat (ar.origin.y + ar.size.height, >, bottom);
  double full0, full1;
  g_assert_true (twb_plot_get_view (f->plot, w, h, NULL, NULL, &full0, &full1));
  a = widget_x (f->plot, 10);
  b = widget_x (f->plot, 30);
  g_signal_emit_by_name (drag, "drag-begin", a, top);
  g_signal_emit_by_name (drag, "drag-end", b - a, bottom - top);
  g_assert_true (twb_plot_get_view (f->plot, w, h, NULL, NULL, &y0, &y1));
  double frac0 = (ar.origin.y + ar.size.height - bottom) / ar.size.height;
  double frac1 = (ar.origin.y + ar.size.height - top) / ar.size.height;
  g_assert_cmpfloat_with_epsilon (y0, full0 + frac0 * (full1 - full0), 1e-9);
  g_assert_cmpfloat_with_epsilon (y1, full0 + frac1 * (full1 - full0), 1e-9);
  /* A drag that starts outside the data area is refused (no zoom). */
  twb_plot_reset_zoom (f->plot);
  g_signal_emit_by_name (drag, "drag-begin", 2.0, 2.0);
  g_signal_emit_by_name (drag, "drag-end", 200.0, 0.0);
  g_assert_false (zoomed (f->plot));
}

static void
test_follow (Fixture *f, gconstpointer data)
{
  double x0, x1;
  for (int x = 101; x <= 250; x++)
    twb_metrics_append (f->m, f->loss, x, 1.0 / (1 + x));
  twt_ui_pump ();
  twb_plot_get_x_range (f->plot, &x0, &x1);
  g_assert_cmpfloat (x0, ==, 0);
  g_assert_cmpfloat (x1, >=, 250);
  g_assert_cmpfloat (x1, <=, 300); /* rounded out to at most one step */
  twb_plot_set_x_range (f->plot, 10, 20);
  twb_metrics_append (f->m, f->loss, 400, 0.1);
  twb_plot_get_x_range (f->plot, &x0, &x1);
  g_assert_cmpfloat (x0, ==, 10);
  g_assert_cmpfloat (x1, ==, 20);
  twb_plot_reset_zoom (f->plot);
  twb_plot_get_x_range (f->plot, &x0, &x1);
  g_assert_cmpfloat (x1, >=, 400);
  /* Clearing the run empties the plot; new points come back in it. */
  twb_metrics_clear_run (f->m, "run-1");
  graphene_rect_t a;
  g_assert_false (twb_plot_get_area (f->plot, 400, 200, &a));
  twb_metrics_append (f->m, f->loss, 0, 1);
  twb_metrics_append (f->m, f->loss, 5, 0.5);
  g_assert_true (twb_plot_get_area (f->plot, 400, 200, &a));
  twb_plot_get_x_range (f->plot, &x0, &x1);
  g_assert_cmpfloat (x1, >=, 5);
  g_assert_cmpfloat (x1, <=, 10);
}

/* Pixels of curve colours anywhere; pixels unlike the background in a box. */
static guint
count_colour (const Png *p, const int rgb[3])
{
  guint n = 0;
  for (int y = 0; y < p->h; y++)
    for (int x = 0; x < p->w; x++)
      n += px_is (p, x, y, rgb);
  return n;
}

static void
test_empty_small_dark (Fixture *f, gconstpointer data)
{
  g_autoptr (TwbMetrics) m = twb_metrics_new ();
  GtkWidget *empty = g_object_ref_sink (twb_plot_new (m, "Accuracy"));
  graphene_rect_t a;
  g_assert_false (twb_plot_get_area (TWB_PLOT (empty), 400, 200, &a));
  g_autofree char *path = out_path ("plot-empty.png");
  g_assert_true (twb_plot_export (TWB_PLOT (empty), path, 400, 200, NULL));
  Png png;
  png_load (&png, path);
  g_assert_cmpuint (count_colour (&png, BLUE), ==, 0);
  /* Not in a window: the light theme's colours still (white background). */
  g_assert_cmphex (*(const guint32 *) (const void *) png.data & 0xffffff, ==, 0xffffff);
  /* "No data yet" in the middle: some pixels not white there. */
  guint ink = 0;
  for (int y = 80; y < 160; y++)
    for (int x = 100; x < 300; x++)
      ink += (*(const guint32 *) (const void *) (png.data + y * png.stride + 4 * x) & 0xffffff)
             != 0xffffff;
  g_assert_cmpuint (ink, >, 20);
  cairo_surface_destroy (png.s);
  /* A series of NaN only is no data either. */
  guint nan = twb_metrics_add_series (m, "r", "acc");
  twb_metrics_append (m, nan, 1, NAN);
  twb_plot_add_curve (TWB_PLOT (empty), nan, NULL, FALSE);
  g_assert_false (twb_plot_get_area (TWB_PLOT (empty), 400, 200, &a));
  g_object_unref (empty);

  /* Small: the data area keeps most of 240 × 160. */
  g_autofree char *small = out_path ("plot-small.png");
  g_assert_true (twb_plot_export (f->plot, small, 240, 160, NULL));
  area (f->plot, 240, 160, &a);
  g_assert_cmpfloat (a.size.width, >, 150);
  g_assert_cmpfloat (a.size.height, >, 90);
  png_load (&png, small);
  g_assert_cmpuint (count_colour (&png, BLUE), >, 50);
  g_assert_cmpuint (count_colour (&png, ORANGE), >, 10);
  cairo_surface_destroy (png.s);

  /* More curves than the legend holds (100 at 16,000 px, 12 at 240 px):
   * the rest count as "+N", the curves are all drawn. */
  g_autoptr (TwbMetrics) many = twb_metrics_new ();
  GtkWidget *crowd = g_object_ref_sink (twb_plot_new (many, NULL));
  for (int i = 0; i < 100; i++)
    {
      g_autofree char *name = g_strdup_printf ("g%d", i);
      guint id = twb_metrics_add_series (many, "r", name);
      twb_metrics_append (many, id, 0, i);
      twb_metrics_append (many, id, 1, i + 1);
      twb_plot_add_curve (TWB_PLOT (crowd), id, NULL, FALSE);
    }
  g_autofree char *wide = out_path ("plot-crowd-wide.png");
  g_assert_true (twb_plot_export (TWB_PLOT (crowd), wide, 16000, 300, NULL));
  g_autofree char *narrow = out_path ("plot-crowd-small.png");
  g_assert_true (twb_plot_export (TWB_PLOT (crowd), narrow, 240, 160, NULL));
  png_load (&png, narrow);
  g_assert_cmpuint (count_colour (&png, BLUE), >, 10);
  cairo_surface_destroy (png.s);
  g_object_unref (crowd);

  /* Dark: light text, a dark background in exports. */
  GtkSettings *settings = gtk_settings_get_default ();
  g_object_set (settings, "gtk-application-prefer-dark-theme", TRUE, NULL);
  twt_ui_pump ();
  g_autofree char *dark = out_path ("plot-dark.png");
  g_assert_true (twb_plot_export (f->plot, dark, 640, 320, NULL));
  g_object_set (settings, "gtk-application-prefer-dark-theme", FALSE, NULL);
  twt_ui_pump ();
  png_load (&png, dark);
  guint32 corner = *(const guint32 *) (const void *) png.data;
  g_assert_cmpuint ((corner >> 8) & 0xff, <, 64);
  g_assert_cmpuint (count_colour (&png, BLUE), >, 50);
  cairo_surface_destroy (png.s);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (!gtk_init_check ())
    {
      g_print ("1..0 # SKIP no display\n");
      return 0;
    }
#define ADD(path, fn) g_test_add (path, Fixture, NULL, fixture_setup, fn, fixture_teardown)
  ADD ("/plot/readout", test_readout);
  ADD ("/plot/png", test_png);
  ADD ("/plot/log-axis", test_log_axis);
  ADD ("/plot/svg-csv", test_svg_csv);
  ADD ("/plot/zoom", test_zoom);
  ADD ("/plot/follow", test_follow);
  ADD ("/plot/empty-small-dark", test_empty_small_dark);
  return g_test_run ();
}
