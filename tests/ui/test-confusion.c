/* test-confusion.c — the confusion view under Xvfb: hover texts of a known
 * report, the exported PNG's cell colours (largest count, diagonal, empty
 * cells, contrast of the written counts), the sample grid of a real
 * tw_trainer_classify report (wrong ones first, framed and captioned in the
 * error colour; image pixels from the samples' rows), 100 classes, the dark
 * theme, SVG, hover through the motion controller.  Pictures go to
 * TWB_TEST_SHOTS (or a temporary directory) for a person to look at. */
#include "ui-test.h"
#include "engine/classes.h"
#include "engine/device.h"
#include "ui/twb-confusion.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static char *
shot_path (const char *name)
{
  static char *tmp;
  const char *dir = g_getenv ("TWB_TEST_SHOTS");
  if (dir == NULL && tmp == NULL)
    tmp = g_dir_make_tmp ("twb-confusion-XXXXXX", NULL);
  return g_build_filename (dir ? dir : tmp, name, NULL);
}

/* A report over n classes from a dense matrix (row = true). */
static void
make_report (tw_class_report *r, int n, const int64_t *m)
{
  memset (r, 0, sizeof *r);
  r->n_classes = n;
  r->confusion = g_memdup2 (m, (gsize) n * n * sizeof (int64_t));
  for (int i = 0; i < n * n; i++)
    {
      r->total += m[i];
      if (i / n == i % n)
        r->correct += m[i];
    }
  r->samples = g_array_new (FALSE, FALSE, sizeof (tw_class_sample));
}

typedef struct
{
  cairo_surface_t *s;
  int w, h;
} Picture;

static void
picture_load (Picture *p, const char *path)
{
  p->s = cairo_image_surface_create_from_png (path);
  g_assert_cmpint (cairo_surface_status (p->s), ==, CAIRO_STATUS_SUCCESS);
  p->w = cairo_image_surface_get_width (p->s);
  p->h = cairo_image_surface_get_height (p->s);
}

static void
picture_clear (Picture *p)
{
  g_clear_pointer (&p->s, cairo_surface_destroy);
}

static GdkRGBA
pixel (const Picture *p, double x, double y)
{
  int ix = (int) floor (x), iy = (int) floor (y);
  g_assert_true (ix >= 0 && iy >= 0 && ix < p->w && iy < p->h);
  const guint8 *d = cairo_image_surface_get_data (p->s);
  guint32 v = *(const guint32 *) (d + iy * cairo_image_surface_get_stride (p->s) + ix * 4);
  return (GdkRGBA) { ((v >> 16) & 255) / 255.f, ((v >> 8) & 255) / 255.f, (v & 255) / 255.f, 1 };
}

/* Within one 8-bit step (rounding of the colour to the picture). */
static gboolean
same_color (GdkRGBA a, GdkRGBA b)
{
  return fabs (a.red - b.red) <= 1.01 / 255 && fabs (a.green - b.green) <= 1.01 / 255
         && fabs (a.blue - b.blue) <= 1.01 / 255;
}

static double
luma (GdkRGBA c)
{
  return 0.2126 * c.red + 0.7152 * c.green + 0.0722 * c.blue;
}

/* Does any pixel of the rectangle have colour c? */
static gboolean
rect_has (const Picture *p, const graphene_rect_t *r, GdkRGBA c)
{
  for (double y = r->origin.y; y < r->origin.y + r->size.height; y++)
    for (double x = r->origin.x; x < r->origin.x + r->size.width; x++)
      if (same_color (pixel (p, x, y), c))
        return TRUE;
  return FALSE;
}

/* Ten classes: 90 right of each but class 3, which is 50 right and 50 taken
 * for a 5; class 7 is never predicted as anything but itself. */
static void
ten_class_report (tw_class_report *r)
{
  int64_t m[100] = { 0 };
  for (int i = 0; i < 10; i++)
    m[i * 10 + i] = 90;
  m[3 * 10 + 3] = 50;
  m[3 * 10 + 5] = 50;
  m[1 * 10 + 7] = 3;
  make_report (r, 10, m);
}

static void
test_cell_text (void)
{
  GtkWidget *w = g_object_ref_sink (twb_confusion_view_new ());
  TwbConfusionView *v = TWB_CONFUSION_VIEW (w);
  g_assert_null (twb_confusion_view_cell_text (v, 0, 0));

  tw_class_report r;
  make_report (&r, 3, (int64_t[]) { 5, 1, 0, 2, 7, 1, 0, 0, 4 });
  twb_confusion_view_set_report (v, &r, 4);
  tw_class_report_clear (&r);   /* the view keeps its own copy */
  g_autofree char *a = twb_confusion_view_cell_text (v, 1, 0);
  g_assert_cmpstr (a, ==, "true 1 \u2192 predicted 0: 2 (20.0 %)");
  g_autofree char *b = twb_confusion_view_cell_text (v, 2, 2);
  g_assert_cmpstr (b, ==, "true 2 \u2192 predicted 2: 4 (100.0 %)");
  g_autofree char *c = twb_confusion_view_cell_text (v, 0, 1);
  g_assert_cmpstr (c, ==, "true 0 \u2192 predicted 1: 1 (16.7 %)");
  g_assert_null (twb_confusion_view_cell_text (v, 3, 0));
  g_assert_null (twb_confusion_view_cell_text (v, 0, -1));

  /* An empty row: 0 %, not a division by zero. */
  make_report (&r, 2, (int64_t[]) { 3, 1, 0, 0 });
  twb_confusion_view_set_report (v, &r, 5);
  tw_class_report_clear (&r);
  g_autofree char *d = twb_confusion_view_cell_text (v, 1, 1);
  g_assert_cmpstr (d, ==, "true 1 \u2192 predicted 1: 0 (0.0 %)");

  twb_confusion_view_set_report (v, NULL, 0);
  g_assert_null (twb_confusion_view_cell_text (v, 0, 0));
  g_object_unref (w);
}

/* Cell fills against cell_color, at a corner inside the cell (the count is
 * written in the middle). */
static void
check_cell (TwbConfusionView *v, const Picture *p, int t, int q)
{
  graphene_rect_t rc;
  g_assert_true (twb_confusion_view_cell_rect (v, p->w, p->h, t, q, &rc));
  GdkRGBA want;
  twb_confusion_view_cell_color (v, t, q, &want);
  GdkRGBA got = pixel (p, rc.origin.x + 1, rc.origin.y + 1);
  if (!same_color (got, want))
    g_error ("cell (%d, %d): drawn %.3f %.3f %.3f, want %.3f %.3f %.3f", t, q, got.red, got.green,
             got.blue, want.red, want.green, want.blue);
}

static void
test_png (void)
{
  GtkWidget *w = g_object_ref_sink (twb_confusion_view_new ());
  TwbConfusionView *v = TWB_CONFUSION_VIEW (w);
  tw_class_report r;
  ten_class_report (&r);
  twb_confusion_view_set_report (v, &r, 3);
  tw_class_report_clear (&r);
  g_autoptr (GError) error = NULL;
  g_autofree char *path = shot_path ("confusion-10.png");
  g_assert_true (twb_confusion_view_export (v, path, 420, 300, &error));
  g_assert_no_error (error);
  Picture p;
  picture_load (&p, path);
  g_assert_cmpint (p.w, ==, 420);
  g_assert_cmpint (p.h, ==, 300);

  /* The largest count has the ramp's top colour; every diagonal cell but
   * class 3's has it too; an empty cell the ramp's bottom, a lighter one
   * in the light theme. */
  GdkRGBA top, empty, half;
  twb_confusion_view_cell_color (v, 0, 0, &top);
  twb_confusion_view_cell_color (v, 0, 1, &empty);
  twb_confusion_view_cell_color (v, 3, 5, &half);
  g_assert_cmpfloat (luma (top), <, luma (half));
  g_assert_cmpfloat (luma (half), <, luma (empty));
  for (int i = 0; i < 10; i++)
    {
      check_cell (v, &p, i, i);
      GdkRGBA c;
      twb_confusion_view_cell_color (v, i, i, &c);
      g_assert_true (i == 3 ? !same_color (c, top) : same_color (c, top));
    }
  check_cell (v, &p, 3, 5);
  check_cell (v, &p, 0, 1);
  check_cell (v, &p, 9, 0);
  check_cell (v, &p, 1, 7);

  /* 10 classes at 420 × 300: cells of at least 16 px, and the counts written
   * in them in a contrasting colour: light text on the dark top fill, dark
   * text on the empty cells. */
  graphene_rect_t rc;
  twb_confusion_view_cell_rect (v, 420, 300, 0, 0, &rc);
  g_assert_cmpfloat (rc.size.width, >=, 16);
  gboolean light_text = FALSE, dark_text = FALSE;
  for (double y = rc.origin.y; y < rc.origin.y + rc.size.height; y++)
    for (double x = rc.origin.x; x < rc.origin.x + rc.size.width; x++)
      light_text |= luma (pixel (&p, x, y)) > 0.7;   /* fill's luma 0.40 */
  twb_confusion_view_cell_rect (v, 420, 300, 0, 1, &rc);
  for (double y = rc.origin.y; y < rc.origin.y + rc.size.height; y++)
    for (double x = rc.origin.x; x < rc.origin.x + rc.size.width; x++)
      dark_text |= luma (pixel (&p, x, y)) < 0.6;    /* fill's luma 0.94 */
  g_assert_true (light_text);
  g_assert_true (dark_text);
  picture_clear (&p);

  /* Rows normalised: class 3's cells are half of their row. */
  twb_confusion_view_set_normalised (v, TRUE);
  g_assert_true (twb_confusion_view_get_normalised (v));
  GdkRGBA n35, n33;
  twb_confusion_view_cell_color (v, 3, 5, &n35);
  twb_confusion_view_cell_color (v, 3, 3, &n33);
  g_assert_true (same_color (n35, n33));
  g_assert_false (same_color (n35, half));   /* 50 / 100 of the row, not 50 / 90 of the largest */
  g_autofree char *npath = shot_path ("confusion-10-normalised.png");
  g_assert_true (twb_confusion_view_export (v, npath, 420, 300, &error));
  picture_load (&p, npath);
  check_cell (v, &p, 3, 5);
  check_cell (v, &p, 3, 3);
  check_cell (v, &p, 0, 0);
  picture_clear (&p);

  /* SVG; an unknown extension is refused, naming the file. */
  g_autofree char *svg = shot_path ("confusion-10.svg");
  g_assert_true (twb_confusion_view_export (v, svg, 420, 300, &error));
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (svg, &text, NULL, NULL));
  g_assert_nonnull (strstr (text, "<svg"));
  g_assert_false (twb_confusion_view_export (v, "/tmp/confusion.bmp", 420, 300, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
  g_assert_nonnull (strstr (error->message, "/tmp/confusion.bmp"));
  g_object_unref (w);
}

/* 100 classes, all of them asked for (the view shows the most confused
 * past 30), fit at 420 × 300 (every cell inside the picture, at least a
 * pixel), without text: each cell is one colour throughout. */
static void
test_hundred (void)
{
  GtkWidget *w = g_object_ref_sink (twb_confusion_view_new ());
  TwbConfusionView *v = TWB_CONFUSION_VIEW (w);
  twb_confusion_view_set_show_all (v, TRUE);
  g_autofree int64_t *m = g_new0 (int64_t, 100 * 100);
  for (int i = 0; i < 100; i++)
    {
      m[i * 100 + i] = 80 + i % 7;
      m[i * 100 + (i * 37 + 11) % 100] += 5 + i % 3;
    }
  tw_class_report r;
  make_report (&r, 100, m);
  twb_confusion_view_set_report (v, &r, 1);
  tw_class_report_clear (&r);
  g_autoptr (GError) error = NULL;
  g_autofree char *path = shot_path ("confusion-100.png");
  g_assert_true (twb_confusion_view_export (v, path, 420, 300, &error));
  g_assert_no_error (error);
  Picture p;
  picture_load (&p, path);
  graphene_rect_t last;
  g_assert_true (twb_confusion_view_cell_rect (v, 420, 300, 99, 99, &last));
  g_assert_cmpfloat (last.origin.x + last.size.width, <=, 420);
  g_assert_cmpfloat (last.origin.y + last.size.height, <=, 300);
  for (int t = 0; t < 100; t += 9)
    for (int q = 0; q < 100; q += 7)
      {
        graphene_rect_t rc;
        twb_confusion_view_cell_rect (v, 420, 300, t, q, &rc);
        g_assert_cmpfloat (rc.size.width, >=, 1);
        GdkRGBA want;
        twb_confusion_view_cell_color (v, t, q, &want);
        for (double y = rc.origin.y; y < rc.origin.y + rc.size.height; y++)
          for (double x = rc.origin.x; x < rc.origin.x + rc.size.width; x++)
            g_assert_true (same_color (pixel (&p, x, y), want));
      }
  check_cell (v, &p, 5, 5);
  check_cell (v, &p, 5, (5 * 37 + 11) % 100);
  /* Row 5: 85 right, 7 taken for a 96. */
  g_autofree char *text = twb_confusion_view_cell_text (v, 5, 5);
  g_assert_cmpstr (text, ==, "true 5 \u2192 predicted 5: 85 (92.4 %)");
  picture_clear (&p);
  g_object_unref (w);
}

/* 1,000 classes (an ImageNet classifier): the view shows the most confused
 * ones, ranked by the errors in their row and column, with their own
 * indices, cells large enough to read at panel sizes, and the matrix's
 * figures for them; "all" shows every class again. */
static void
test_most_confused (void)
{
  const int n = 1000;
  g_autofree int64_t *m = g_new0 (int64_t, (gsize) n * n);
  for (int i = 0; i < n; i++)
    m[(int64_t) i * n + i] = 50;
  /* Planted confusions, most first: 500 ↔ 999 (40 + 30), 3 → 7 (25),
   * 7 → 3 (5), 12 → 640 (9), then one error each for 20 classes. */
  m[(int64_t) 500 * n + 999] = 40;
  m[(int64_t) 999 * n + 500] = 30;
  m[(int64_t) 3 * n + 7] = 25;
  m[(int64_t) 7 * n + 3] = 5;
  m[(int64_t) 12 * n + 640] = 9;
  for (int i = 0; i < 20; i++)
    m[(int64_t) (100 + i) * n + (200 + i)] = 1;
  tw_class_report r;
  make_report (&r, n, m);
  /* The ranking, from the engine: errors of 500 and 999 are 70 each (their
   * row and column), 3 and 7 30 each, 12 and 640 9 each, then the ones. */
  int top[8];
  g_assert_cmpint (tw_class_report_most_confused (&r, 8, top), ==, 8);
  const int want_top[8] = { 500, 999, 3, 7, 12, 640, 100, 101 };
  for (int i = 0; i < 8; i++)
    g_assert_cmpint (top[i], ==, want_top[i]);

  GtkWidget *w = g_object_ref_sink (twb_confusion_view_new ());
  TwbConfusionView *v = TWB_CONFUSION_VIEW (w);
  twb_confusion_view_set_report (v, &r, 1);
  tw_class_report_clear (&r);
  const int sizes[][2] = { { 280, 240 }, { 420, 300 }, { 800, 600 } };
  for (guint k = 0; k < G_N_ELEMENTS (sizes); k++)
    {
      int W = sizes[k][0], H = sizes[k][1];
      int shown[1000];
      memset (shown, 0, sizeof shown);
      int ns = twb_confusion_view_shown_classes (v, W, H, shown);
      g_test_message ("%d × %d: %d classes shown", W, H, ns);
      g_assert_cmpint (ns, >=, 5);
      g_assert_cmpint (ns, <=, 20);
      for (int i = 0; i < MIN (ns, 8); i++)
        g_assert_cmpint (shown[i], ==, want_top[i]);
      /* Cells of 22 px or more (counts and every index legible), all inside. */
      graphene_rect_t rc;
      g_assert_true (twb_confusion_view_cell_rect (v, W, H, 500, 999, &rc));
      g_assert_cmpfloat (rc.size.width, >=, 21.5);
      g_assert_true (twb_confusion_view_cell_rect (v, W, H, shown[ns - 1], shown[ns - 1], &rc));
      g_assert_cmpfloat (rc.origin.x + rc.size.width, <=, W);
      g_assert_cmpfloat (rc.origin.y + rc.size.height, <=, H);
      /* A class not shown has no cell. */
      g_assert_false (twb_confusion_view_cell_rect (v, W, H, 900, 900, &rc));
    }
  g_autofree char *text = twb_confusion_view_cell_text (v, 500, 999);
  g_assert_cmpstr (text, ==, "true 500 \u2192 predicted 999: 40 (44.4 %)");
  g_autoptr (GError) error = NULL;
  g_autofree char *path = shot_path ("confusion-1000-most-confused.png");
  g_assert_true (twb_confusion_view_export (v, path, 420, 300, &error));
  g_assert_no_error (error);
  Picture p;
  picture_load (&p, path);
  check_cell (v, &p, 500, 999);
  check_cell (v, &p, 3, 7);
  picture_clear (&p);
  /* Every class again. */
  twb_confusion_view_set_show_all (v, TRUE);
  g_assert_cmpint (twb_confusion_view_shown_classes (v, 420, 300, NULL), ==, n);
  g_assert_true (twb_confusion_view_get_show_all (v));
  g_object_unref (w);
}

/* A real report: an untrained classifier of 5 × 5 images over 4 classes
 * (some right, some wrong), every one of the 40 samples. */
static void
classify_images (tw_class_report *r, int channels)
{
  g_autoptr (GError) error = NULL;
  const int64_t n = 40, px = channels * 25;
  g_autoptr (tw_tensor) x = tw_tensor_new (TW_F32, 4, (int64_t[]) { n, channels, 5, 5 });
  g_autoptr (tw_tensor) y = tw_tensor_new (TW_I64, 1, &n);
  for (int64_t i = 0; i < n; i++)
    {
      tw_tensor_i64 (y)[i] = i % 4;
      for (int64_t e = 0; e < px; e++)   /* a value per sample and pixel, in [0, 1] */
        tw_tensor_f32 (x)[i * px + e] = (float) ((i * 7 + e * 3) % 11) / 10;
    }
  g_autoptr (tw_dataset) d = tw_dataset_new ("tiles", x, y, 4);
  g_autoptr (tw_model) m = tw_model_new ("tiles");
  tw_attrs *o = tw_attrs_new ();
  tw_attrs_set_int (o, "out_features", 4);
  tw_graph_add_input (m->graph, "x", TW_F32, 3, (int64_t[]) { channels, 5, 5 }, "data");
  tw_graph_add_input (m->graph, "y", TW_I64, 0, NULL, "label");
  tw_graph_add (m->graph, "flat", "flatten", NULL, "x", NULL);
  tw_graph_add (m->graph, "fc", "linear", o, "flat", NULL);
  tw_graph_add (m->graph, "loss", "cross_entropy", NULL, "fc", "y", NULL);
  tw_graph_set_outputs (m->graph, (const char *[]) { "fc", NULL });
  tw_attrs_free (o);
  g_autoptr (tw_trainer) tr = tw_trainer_new (m, &error);
  g_assert_no_error (error);
  g_assert_true (tw_trainer_classify (tr, d, 16, 40, r, &error));
  g_assert_no_error (error);
}

static void
test_samples (void)
{
  GtkWidget *w = g_object_ref_sink (twb_confusion_view_new ());
  TwbConfusionView *v = TWB_CONFUSION_VIEW (w);
  g_autoptr (GError) error = NULL;

  for (int channels = 1; channels <= 3; channels += 2)
    {
      tw_class_report r;
      classify_images (&r, channels);
      int wrong = 0;
      for (guint k = 0; k < r.samples->len; k++)
        {
          const tw_class_sample *s = &g_array_index (r.samples, tw_class_sample, k);
          wrong += s->predicted != s->label;
        }
      g_assert_cmpint (wrong, >, 0);
      g_assert_cmpint (wrong, <, 40);
      twb_confusion_view_set_report (v, &r, 2);
      g_autofree char *name = g_strdup_printf ("confusion-samples-c%d.png", channels);
      g_autofree char *path = shot_path (name);
      /* 800 × 600: room for all 40 tiles. */
      g_assert_true (twb_confusion_view_export (v, path, 800, 600, &error));
      g_assert_no_error (error);
      Picture p;
      picture_load (&p, path);
      GdkRGBA err;
      twb_confusion_view_error_color (v, &err);
      g_assert_cmpint (twb_confusion_view_tile_rect (v, 800, 600, 0, NULL, NULL), ==, 40);
      g_assert_cmpint (twb_confusion_view_tile_rect (v, 420, 300, 0, NULL, NULL), >=, 12);
      for (int k = 0; k < 40; k++)
        {
          graphene_rect_t img, cap;
          twb_confusion_view_tile_rect (v, 800, 600, k, &img, &cap);
          g_assert_cmpfloat (img.size.width, >=, 16);
          /* The frame, a pixel outside the image's left edge, and the caption. */
          gboolean bad = k < wrong;
          GdkRGBA f = pixel (&p, img.origin.x - 1, img.origin.y + img.size.height / 2);
          g_assert_true (same_color (f, err) == bad);
          g_assert_true (rect_has (&p, &cap, err) == bad);
          /* Pixel (2, 1) of the sample's image (any channel: grey or RGB). */
          const tw_class_sample *s = &g_array_index (r.samples, tw_class_sample, k);
          GdkRGBA got = pixel (&p, img.origin.x + (2.5 / 5) * img.size.width,
                               img.origin.y + (1.5 / 5) * img.size.height);
          float want[3];
          for (int ch = 0; ch < 3; ch++)
            want[ch] = tw_tensor_f32 (r.images)[(k * channels + (channels == 3 ? ch : 0)) * 25 + 1 * 5 + 2];
          g_assert_cmpfloat (tw_tensor_f32 (r.images)[k * channels * 25],
                             ==, (float) ((s->index * 7) % 11) / 10);
          g_assert_cmpfloat_with_epsilon (got.red, want[0], 1.01 / 255);
          g_assert_cmpfloat_with_epsilon (got.green, want[1], 1.01 / 255);
          g_assert_cmpfloat_with_epsilon (got.blue, want[2], 1.01 / 255);
        }
      picture_clear (&p);
      tw_class_report_clear (&r);
    }
  g_object_unref (w);
}

/* The dashboard's case: 10 classes at 420 × 300 with 32 flat 784-value
 * samples, drawn as 28 × 28 images; the 12 wrong ones first. */
static void
test_flat (void)
{
  GtkWidget *w = g_object_ref_sink (twb_confusion_view_new ());
  TwbConfusionView *v = TWB_CONFUSION_VIEW (w);
  tw_class_report r;
  ten_class_report (&r);
  g_autoptr (tw_tensor) img = tw_tensor_new (TW_F32, 2, (int64_t[]) { 32, 784 });
  for (int k = 0; k < 32; k++)
    {
      tw_class_sample s = { .index = 100 + k, .label = k % 10, .confidence = 0.9f - k * 0.01f };
      s.predicted = k < 12 ? (k + 3) % 10 : s.label;
      g_array_append_val (r.samples, s);
      for (int e = 0; e < 784; e++)   /* a diagonal ramp moved by k */
        tw_tensor_f32 (img)[k * 784 + e] = (float) ((e / 28 + e % 28 + k) % 28) / 27;
    }
  r.images = tw_tensor_ref (img);
  twb_confusion_view_set_report (v, &r, 9);
  tw_class_report_clear (&r);
  g_autoptr (GError) error = NULL;
  g_autofree char *path = shot_path ("confusion-10-samples.png");
  g_assert_true (twb_confusion_view_export (v, path, 420, 300, &error));
  g_assert_no_error (error);
  Picture p;
  picture_load (&p, path);
  GdkRGBA err;
  twb_confusion_view_error_color (v, &err);
  int shown = twb_confusion_view_tile_rect (v, 420, 300, 0, NULL, NULL);
  g_assert_cmpint (shown, >=, 16);   /* every wrong one and a few right ones */
  for (int k = 0; k < shown; k++)
    {
      graphene_rect_t im, cap;
      twb_confusion_view_tile_rect (v, 420, 300, k, &im, &cap);
      g_assert_cmpfloat (im.size.width, >=, 28);   /* a pixel a pixel at least */
      g_assert_cmpfloat (im.origin.x + im.size.width, <=, 420);
      g_assert_cmpfloat (cap.origin.y + cap.size.height, <=, 300);
      g_assert_true (same_color (pixel (&p, im.origin.x - 1, im.origin.y + 5), err) == (k < 12));
      g_assert_true (rect_has (&p, &cap, err) == (k < 12));
      /* Image pixel (x 3, y 20). */
      GdkRGBA got = pixel (&p, im.origin.x + 3.5 / 28 * im.size.width,
                           im.origin.y + 20.5 / 28 * im.size.height);
      g_assert_cmpfloat_with_epsilon (got.red, (float) ((23 + k) % 28) / 27, 1.01 / 255);
    }
  picture_clear (&p);

  /* Inputs that are no images ([k, 2] points): captions only. */
  ten_class_report (&r);
  g_autoptr (tw_tensor) pts = tw_tensor_zeros (TW_F32, 2, (int64_t[]) { 3, 2 });
  for (int k = 0; k < 3; k++)
    {
      tw_class_sample s = { .index = k, .label = 1, .predicted = k == 0 ? 4 : 1 };
      g_array_append_val (r.samples, s);
    }
  r.images = tw_tensor_ref (pts);
  twb_confusion_view_set_report (v, &r, 9);
  tw_class_report_clear (&r);
  g_autofree char *ppath = shot_path ("confusion-10-points.png");
  g_assert_true (twb_confusion_view_export (v, ppath, 420, 300, &error));
  picture_load (&p, ppath);
  g_assert_cmpint (twb_confusion_view_tile_rect (v, 420, 300, 0, NULL, NULL), ==, 3);
  for (int k = 0; k < 3; k++)
    {
      graphene_rect_t im, cap;
      twb_confusion_view_tile_rect (v, 420, 300, k, &im, &cap);
      g_assert_cmpfloat (im.size.width, ==, 0);
      g_assert_true (rect_has (&p, &cap, err) == (k == 0));
    }
  picture_clear (&p);
  g_object_unref (w);
}

/* In a window, under the pointer: hovering a cell outlines it; the dark
 * theme draws dark. */
static void
test_window (void)
{
  GtkWidget *win = gtk_window_new ();
  gtk_window_set_default_size (GTK_WINDOW (win), 420, 300);
  GtkWidget *w = twb_confusion_view_new ();
  TwbConfusionView *v = TWB_CONFUSION_VIEW (w);
  gtk_window_set_child (GTK_WINDOW (win), w);
  tw_class_report r;
  classify_images (&r, 1);
  twb_confusion_view_set_report (v, &r, 6);
  tw_class_report_clear (&r);
  ten_class_report (&r);
  twb_confusion_view_set_report (v, &r, 6);   /* replaces the first */
  tw_class_report_clear (&r);
  gtk_window_present (GTK_WINDOW (win));
  twt_ui_pump ();
  int ww = gtk_widget_get_width (w), wh = gtk_widget_get_height (w);
  g_assert_cmpint (ww, >, 200);

  g_autoptr (GListModel) list = gtk_widget_observe_controllers (w);
  g_autoptr (GtkEventController) motion = g_list_model_get_item (list, 0);
  g_assert_true (GTK_IS_EVENT_CONTROLLER_MOTION (motion));
  graphene_rect_t rc;
  g_assert_true (twb_confusion_view_cell_rect (v, ww, wh, 3, 5, &rc));
  g_signal_emit_by_name (motion, "motion", rc.origin.x + rc.size.width / 2,
                         rc.origin.y + rc.size.height / 2);
  g_autoptr (GError) error = NULL;
  g_autofree char *path = shot_path ("confusion-hover.png");
  g_assert_true (twb_confusion_view_export (v, path, ww, wh, &error));
  Picture p;
  picture_load (&p, path);
  /* The outline, 1 px outside the cell, in GNOME orange. */
  GdkRGBA o = pixel (&p, rc.origin.x - 1, rc.origin.y + rc.size.height / 2);
  g_assert_true (same_color (o, (GdkRGBA) { 0.96f, 0.47f, 0.f, 1 }));
  picture_clear (&p);
  g_signal_emit_by_name (motion, "leave");
  g_autofree char *left = shot_path ("confusion-left.png");
  g_assert_true (twb_confusion_view_export (v, left, ww, wh, &error));
  picture_load (&p, left);
  o = pixel (&p, rc.origin.x - 1, rc.origin.y + rc.size.height / 2);
  g_assert_false (same_color (o, (GdkRGBA) { 0.96f, 0.47f, 0.f, 1 }));
  picture_clear (&p);

  /* Dark: a dark background and the dark ramp (a light top). */
  GtkSettings *settings = gtk_settings_get_default ();
  g_object_set (settings, "gtk-application-prefer-dark-theme", TRUE, NULL);
  twt_ui_pump ();
  g_autofree char *dpath = shot_path ("confusion-10-dark.png");
  g_assert_true (twb_confusion_view_export (v, dpath, 420, 300, &error));
  picture_load (&p, dpath);
  g_assert_cmpfloat (luma (pixel (&p, 2, 2)), <, 0.2);
  GdkRGBA top, empty;
  twb_confusion_view_cell_color (v, 0, 0, &top);
  twb_confusion_view_cell_color (v, 0, 1, &empty);
  g_assert_cmpfloat (luma (top), >, luma (empty));
  check_cell (v, &p, 0, 0);
  check_cell (v, &p, 0, 1);
  check_cell (v, &p, 3, 5);
  picture_clear (&p);
  g_object_set (settings, "gtk-application-prefer-dark-theme", FALSE, NULL);
  twt_ui_pump ();
  g_autofree char *lpath = shot_path ("confusion-10-light.png");
  g_assert_true (twb_confusion_view_export (v, lpath, 420, 300, &error));
  picture_load (&p, lpath);
  g_assert_cmpfloat (luma (pixel (&p, 2, 2)), >, 0.9);
  picture_clear (&p);
  gtk_window_destroy (GTK_WINDOW (win));
  twt_ui_pump ();
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
  tw_ops_init ();
  tw_set_num_threads (1);
  g_test_add_func ("/confusion/cell-text", test_cell_text);
  g_test_add_func ("/confusion/png", test_png);
  g_test_add_func ("/confusion/hundred-classes", test_hundred);
  g_test_add_func ("/confusion/most-confused", test_most_confused);
  g_test_add_func ("/confusion/samples", test_samples);
  g_test_add_func ("/confusion/flat-images", test_flat);
  g_test_add_func ("/confusion/window", test_window);
  return g_test_run ();
}
