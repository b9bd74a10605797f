/* twb-confusion.c — the confusion matrix and sample grid (see twb-confusion.h).
 *
 * One layout function places everything for a width × height; drawing,
 * hover and the tests' geometry queries all go through it. */
#define G_LOG_DOMAIN "twb-confusion"

#include "ui/twb-confusion.h"
#include "graph_editor/twb-picture.h"
#include "engine/fileutil.h"

#include <cairo-svg.h>
#include <math.h>
#include <string.h>

typedef struct
{
  double r, g, b;
} Rgb;

typedef struct
{
  Rgb bg, text, dim_text, frame, zero, high, error, hover;
} Palette;

/* The graph canvas's palettes (graph_editor/twb-graph-render.c), with the
 * matrix ramp from an empty cell (zero) to the largest (high): GNOME blue 5
 * (#1c71d8) on light, blue 2 (#62a0ea) on dark, so that the largest count
 * stands out from the background in both. */
static const Palette light = {
  .bg = { 0.98, 0.98, 0.98 },
  .text = { 0.12, 0.12, 0.13 },
  .dim_text = { 0.36, 0.37, 0.40 },
  .frame = { 0.70, 0.71, 0.73 },
  .zero = { 0.93, 0.94, 0.96 },
  .high = { 0.11, 0.44, 0.85 },
  .error = { 0.88, 0.11, 0.14 },      /* GNOME red 3 (#e01b24) */
  .hover = { 0.96, 0.47, 0.00 },      /* GNOME orange 4 (#f57900): not in the ramp */
};

static const Palette dark = {
  .bg = { 0.12, 0.12, 0.13 },
  .text = { 0.93, 0.93, 0.94 },
  .dim_text = { 0.70, 0.71, 0.74 },
  .frame = { 0.36, 0.37, 0.40 },
  .zero = { 0.19, 0.19, 0.21 },
  .high = { 0.38, 0.63, 0.92 },
  .error = { 0.96, 0.38, 0.32 },
  .hover = { 1.00, 0.64, 0.28 },
};

/* Sizes in pixels. */
#define PAD 8.0
#define TITLE_H 34.0      /* title line and hover read-out line */
#define AXIS_LABEL 14.0   /* "predicted" above, "true" beside */
#define INDEX_FONT 9.0    /* class indices on the axes */
#define CAPTION_H 15.0    /* "5 → 3" under a tile: 2 px clear of the frame, 13 of text */
#define MIN_CELL_FONT 7.0 /* smaller cell text is unreadable: hover only */
/* Past 30 classes the whole matrix has cells under ~5 px at panel sizes
 * (150 px for the matrix): it then shows the most confused classes
 * (tw_class_report_most_confused), as many as give cells of 22 px or more
 * (counts in 9 px type, and every class's index on both axes), 5 to 20,
 * until "all classes" is asked for. */
#define TOPK_AUTO 30
#define TOPK_CELL_PX 22.0
#define TOPK_MIN 5
#define TOPK_MAX 20

typedef struct
{
  int n;                   /* classes shown; 0: nothing to draw */
  const int *cls;          /* the class at row / column i (the most confused first), or
                            * NULL: every class, in order */
  double mx, my, cell;     /* matrix: top-left of cell (0, 0), cell size */
  double index_w;          /* width of the row index column */
  int label_step;          /* class index written every label_step */
  double gx, gy, gw, gh;   /* sample grid area (below its heading) */
  double tile_w, tile_h, img; /* a tile, its image side (0: no images) */
  int cols, shown;         /* tiles per row, tiles drawn */
} Layout;

struct _TwbConfusionView
{
  GtkWidget parent_instance;

  gboolean has_report;
  tw_class_report report;
  int64_t epoch;
  gboolean normalised;
  int64_t max_count;          /* largest cell */
  int img_c, img_h, img_w;    /* sample image geometry; img_c = 0: none */
  gboolean show_all;          /* every class even past TOPK_AUTO */
  int *order;                 /* every class, most confused first */
  GPtrArray *tiles;           /* cairo_surface_t per sample (images only) */
  int hover_t, hover_p;       /* hovered cell (class indices), or -1 */
  int hover_tile;             /* hovered sample tile, or -1 */
};

G_DEFINE_FINAL_TYPE (TwbConfusionView, twb_confusion_view, GTK_TYPE_WIDGET)

static void
set_rgb (cairo_t *cr, Rgb c)
{
  cairo_set_source_rgb (cr, c.r, c.g, c.b);
}

static gboolean
is_dark (GtkWidget *w)
{
  if (gtk_widget_get_root (w) == NULL)
    {
      /* Not in a window (an export from a view never shown): no theme is
       * applied to it, so ask the settings the theme follows. */
      GtkSettings *s = gtk_widget_get_settings (w);
      gboolean prefer = FALSE;
      g_autofree char *theme = NULL;
      g_object_get (s, "gtk-application-prefer-dark-theme", &prefer, "gtk-theme-name", &theme,
                    NULL);
      return prefer || (theme && g_str_has_suffix (theme, "-dark"));
    }
  GdkRGBA fg;
  G_GNUC_BEGIN_IGNORE_DEPRECATIONS
  gtk_style_context_get_color (gtk_widget_get_style_context (w), &fg);
  G_GNUC_END_IGNORE_DEPRECATIONS
  /* Light text means a dark theme (as the graph canvas decides). */
  return 0.299 * fg.red + 0.587 * fg.green + 0.114 * fg.blue > 0.5;
}

static const Palette *
palette (TwbConfusionView *v)
{
  return is_dark (GTK_WIDGET (v)) ? &dark : &light;
}

static int64_t
row_total (const tw_class_report *r, int t)
{
  int64_t s = 0;
  for (int p = 0; p < r->n_classes; p++)
    s += r->confusion[(int64_t) t * r->n_classes + p];
  return s;
}

/* The cell's share of the ramp, 0..1: its count over the largest count, or
 * its row share when normalised; a square root, so that the few mistakes of
 * a good classifier still show beside its diagonal. */
static double
cell_level (TwbConfusionView *v, int t, int p)
{
  const tw_class_report *r = &v->report;
  int64_t k = r->confusion[(int64_t) t * r->n_classes + p];
  double f;
  if (v->normalised)
    {
      int64_t row = row_total (r, t);
      f = row ? (double) k / row : 0;
    }
  else
    f = v->max_count ? (double) k / v->max_count : 0;
  return sqrt (f);
}

static Rgb
ramp (const Palette *pal, double level)
{
  return (Rgb) { pal->zero.r + (pal->high.r - pal->zero.r) * level,
                 pal->zero.g + (pal->high.g - pal->zero.g) * level,
                 pal->zero.b + (pal->high.b - pal->zero.b) * level };
}

/* Text on a fill: dark on light fills, white on dark ones (relative
 * luminance, Rec. 709 weights, threshold halfway). */
static Rgb
text_on (Rgb fill)
{
  double y = 0.2126 * fill.r + 0.7152 * fill.g + 0.0722 * fill.b;
  return y > 0.5 ? (Rgb) { 0.10, 0.10, 0.11 } : (Rgb) { 1, 1, 1 };
}

static int
cls_at (const Layout *L, int i)
{
  return L->cls ? L->cls[i] : i;
}

/* Where class c is shown (row and column), or -1. */
static int
shown_at (const Layout *L, int c)
{
  if (L->cls == NULL)
    return c >= 0 && c < L->n ? c : -1;
  for (int i = 0; i < L->n; i++)
    if (L->cls[i] == c)
      return i;
  return -1;
}

static gboolean
most_confused_only (TwbConfusionView *v)
{
  return v->has_report && v->report.n_classes > TOPK_AUTO && !v->show_all;
}

static void
compute_layout (TwbConfusionView *v, int width, int height, Layout *L)
{
  memset (L, 0, sizeof *L);
  L->label_step = 1;
  if (!v->has_report || v->report.n_classes <= 0)
    return;
  int n = L->n = v->report.n_classes;
  int digits = n > 1000 ? 4 : n > 100 ? 3 : n > 10 ? 2 : 1;
  L->index_w = digits * INDEX_FONT * 0.62 + 4;   /* a digit of Sans is about 0.6 em */
  double left = PAD + AXIS_LABEL + L->index_w;
  double top = TITLE_H + AXIS_LABEL + INDEX_FONT + 4;
  gboolean have_samples = v->report.samples && v->report.samples->len > 0;
  /* Side by side when wide, stacked otherwise; the matrix takes up to 56 %
   * of the free length when there are samples (at 420 × 300: cells of 21 px,
   * and four columns of 28 px tiles). */
  gboolean wide = width >= 1.2 * height;
  double side;
  if (wide)
    side = MIN (height - top - PAD, (width - left - PAD) * (have_samples ? 0.56 : 1.0));
  else
    side = MIN (width - left - PAD, (height - top - PAD) * (have_samples ? 0.56 : 1.0));
  if (most_confused_only (v))
    {
      /* Every index written: a cell at least as wide as an index. */
      double cell_min = MAX (TOPK_CELL_PX, L->index_w + 2);
      n = L->n = CLAMP ((int) floor (side / cell_min), TOPK_MIN, MIN (TOPK_MAX, n));
      L->cls = v->order;
    }
  side = MAX (side, n);   /* at least a pixel a cell */
  L->cell = floor (side / n * 4) / 4;
  side = L->cell * n;
  L->mx = round (left);   /* whole pixels: crisp frames, exact fills */
  L->my = round (top);
  /* Index every step classes so that the labels do not touch. */
  static const int steps[] = { 1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000 };
  for (guint i = 0; i < G_N_ELEMENTS (steps); i++)
    {
      L->label_step = steps[i];
      if (steps[i] * L->cell >= MAX (INDEX_FONT + 2, L->index_w))
        break;
    }

  if (!have_samples)
    return;
  if (wide)
    {
      L->gx = round (L->mx + side + 2 * PAD);
      L->gy = TITLE_H + AXIS_LABEL + 4;
      L->gw = width - L->gx - PAD;
      L->gh = height - L->gy - PAD;
    }
  else
    {
      L->gx = PAD;
      L->gy = round (L->my + side + PAD + AXIS_LABEL + 4);
      L->gw = width - 2 * PAD;
      L->gh = height - L->gy - PAD;
    }
  if (L->gw < 40 || L->gh < CAPTION_H + 4)
    return;
  /* The largest image side (56 px down to 28, or to the images' own size
   * when smaller, but not below 16) that shows every sample; else the
   * smallest, which shows the most. */
  int k = v->report.samples->len;
  double gap = 4, best_img = 0;   /* between tiles; frames take 2 px of a tile's 6 spare */
  double cap_w = n <= 10 ? 34 : n <= 100 ? 48 : 62;   /* "5 → 3" in 10 px bold */
  double min_img = v->img_c ? MIN (28, MAX (16, 4 * floor (MAX (v->img_h, v->img_w) / 4.0))) : 0;
  int best_shown = 0;
  for (double img = v->img_c ? 56 : 0; img >= min_img; img -= 4)
    {
      double tw = MAX (img + 6, cap_w) + gap, th = img + 2 + CAPTION_H + gap;
      int cols = (int) ((L->gw + gap) / tw), rows = (int) ((L->gh + gap) / th);
      best_shown = MIN (k, cols * rows);
      best_img = img;
      if (best_shown == k || img == 0)
        break;
    }
  L->img = best_img;
  L->tile_w = MAX (L->img + 6, cap_w);
  L->tile_h = L->img + 2 + CAPTION_H;
  L->cols = MAX (1, (int) ((L->gw + gap) / (L->tile_w + gap)));
  L->shown = best_shown;
}

static void
tile_origin (const Layout *L, int k, double *x, double *y)
{
  *x = L->gx + (k % L->cols) * (L->tile_w + 4);
  *y = L->gy + (k / L->cols) * (L->tile_h + 4);
}

/* Cell edges on whole pixels (no seams between cells). */
static void
cell_box (const Layout *L, int t, int p, double *x, double *y, double *w, double *h)
{
  double x0 = round (L->mx + p * L->cell), x1 = round (L->mx + (p + 1) * L->cell);
  double y0 = round (L->my + t * L->cell), y1 = round (L->my + (t + 1) * L->cell);
  *x = x0;
  *y = y0;
  *w = x1 - x0;
  *h = y1 - y0;
}

/* ---- Images ------------------------------------------------------------------- */

/* [k, C, H, W] with C = 1 or 3, [k, H, W], or [k, S] with S a square. */
static void
image_geometry (const tw_tensor *t, int *c, int *h, int *w)
{
  *c = *h = *w = 0;
  if (t == NULL)
    return;
  if (t->ndim == 4 && (t->shape[1] == 1 || t->shape[1] == 3))
    *c = (int) t->shape[1], *h = (int) t->shape[2], *w = (int) t->shape[3];
  else if (t->ndim == 3)
    *c = 1, *h = (int) t->shape[1], *w = (int) t->shape[2];
  else if (t->ndim == 2)
    {
      int64_t s = (int64_t) llround (sqrt ((double) t->shape[1]));
      if (s * s == t->shape[1])
        *c = 1, *h = *w = (int) s;
    }
  if (*h <= 0 || *w <= 0 || *h > 1024 || *w > 1024)   /* tiles are at most 56 px */
    *c = *h = *w = 0;
}

/* One surface per sample; values in [0, 1] drawn as they are, other ranges
 * (standardised inputs) stretched from the smallest to the largest value
 * over all the samples. */
static void
build_tiles (TwbConfusionView *v)
{
  g_clear_pointer (&v->tiles, g_ptr_array_unref);
  image_geometry (v->report.images, &v->img_c, &v->img_h, &v->img_w);
  if (v->img_c == 0)
    return;
  g_autoptr (tw_tensor) host = tw_tensor_to_host (v->report.images);
  g_autoptr (tw_tensor) f = tw_tensor_cast (host, TW_F32);
  g_autoptr (tw_tensor) fc = tw_tensor_contiguous (f);
  const float *px = tw_tensor_f32 (fc);
  int64_t numel = tw_tensor_numel (fc);
  float lo = 0, hi = 1;
  for (int64_t i = 0; i < numel; i++)
    if (isfinite (px[i]))
      lo = MIN (lo, px[i]), hi = MAX (hi, px[i]);
  double scale = hi > lo ? 1.0 / (hi - lo) : 1;
  int c = v->img_c, h = v->img_h, w = v->img_w;
  int64_t plane = (int64_t) h * w;
  v->tiles = g_ptr_array_new_with_free_func ((GDestroyNotify) cairo_surface_destroy);
  for (int64_t k = 0; k < fc->shape[0]; k++)
    {
      cairo_surface_t *s = cairo_image_surface_create (CAIRO_FORMAT_RGB24, w, h);
      cairo_surface_flush (s);
      guint8 *data = cairo_image_surface_get_data (s);
      int stride = cairo_image_surface_get_stride (s);
      const float *img = px + k * c * plane;
      for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
          {
            guint8 rgb[3];
            for (int ch = 0; ch < 3; ch++)
              {
                float val = img[(c == 3 ? ch : 0) * plane + (int64_t) y * w + x];
                double u = isfinite (val) ? (val - lo) * scale : 0;
                rgb[ch] = (guint8) lround (CLAMP (u, 0, 1) * 255);
              }
            guint32 *dst = (guint32 *) (data + y * stride) + x;
            *dst = (guint32) rgb[0] << 16 | (guint32) rgb[1] << 8 | rgb[2];
          }
      cairo_surface_mark_dirty (s);
      g_ptr_array_add (v->tiles, s);
    }
}

/* ---- Text ------------------------------------------------------------------------ */

static PangoLayout *
text_layout (cairo_t *cr, const char *text, double size, gboolean bold)
{
  PangoLayout *l = pango_cairo_create_layout (cr);
  PangoFontDescription *fd = pango_font_description_from_string ("Sans");
  pango_font_description_set_absolute_size (fd, size * PANGO_SCALE);
  if (bold)
    pango_font_description_set_weight (fd, PANGO_WEIGHT_BOLD);
  pango_layout_set_font_description (l, fd);
  pango_font_description_free (fd);
  pango_layout_set_text (l, text, -1);
  return l;
}

/* Draws text with its top-left, centre (align 0.5) or right end (1) at x. */
static double
draw_text (cairo_t *cr, const char *text, double x, double y, double size, gboolean bold,
           double align)
{
  g_autoptr (PangoLayout) l = text_layout (cr, text, size, bold);
  int w, h;
  pango_layout_get_pixel_size (l, &w, &h);
  cairo_move_to (cr, x - align * w, y);
  pango_cairo_show_layout (cr, l);
  return w;
}

static char *
sample_caption (const tw_class_sample *s)
{
  return g_strdup_printf ("%d \u2192 %d", s->predicted, s->label);
}

static char *
title_text (TwbConfusionView *v)
{
  const tw_class_report *r = &v->report;
  return g_strdup_printf ("Epoch %" G_GINT64_FORMAT " \u00b7 accuracy %.1f %% (%" G_GINT64_FORMAT
                          " of %" G_GINT64_FORMAT ")",
                          v->epoch, r->total ? 100.0 * r->correct / r->total : 0.0, r->correct,
                          r->total);
}

static char *
tile_text (TwbConfusionView *v, int k)
{
  const tw_class_sample *s = &g_array_index (v->report.samples, tw_class_sample, k);
  return g_strdup_printf ("sample %" G_GINT64_FORMAT ": predicted %d (%.1f %%), true %d",
                          s->index, s->predicted, 100.0 * s->confidence, s->label);
}

char *
twb_confusion_view_cell_text (TwbConfusionView *v, int true_label, int predicted)
{
  g_return_val_if_fail (TWB_IS_CONFUSION_VIEW (v), NULL);
  const tw_class_report *r = &v->report;
  if (!v->has_report || true_label < 0 || predicted < 0 || true_label >= r->n_classes
      || predicted >= r->n_classes)
    return NULL;
  int64_t k = r->confusion[(int64_t) true_label * r->n_classes + predicted];
  int64_t row = row_total (r, true_label);
  return g_strdup_printf ("true %d \u2192 predicted %d: %" G_GINT64_FORMAT " (%.1f %%)",
                          true_label, predicted, k, row ? 100.0 * k / row : 0.0);
}

/* ---- Drawing -------------------------------------------------------------------- */

static void
draw_matrix (TwbConfusionView *v, cairo_t *cr, const Layout *L, const Palette *pal)
{
  const tw_class_report *r = &v->report;
  int n = L->n;
  double side = L->cell * n;

  /* Axes: "predicted" over the columns, "true" beside the rows, indices. */
  set_rgb (cr, pal->dim_text);
  draw_text (cr, "predicted", L->mx + side / 2, TITLE_H, 10, FALSE, 0.5);
  cairo_save (cr);
  cairo_translate (cr, PAD, L->my + side / 2);
  cairo_rotate (cr, -G_PI / 2);
  draw_text (cr, "true", 0, -1, 10, FALSE, 0.5);
  cairo_restore (cr);
  for (int i = 0; i < n; i += L->label_step)
    {
      char num[16];
      g_snprintf (num, sizeof num, "%d", cls_at (L, i));
      draw_text (cr, num, L->mx + (i + 0.5) * L->cell, L->my - INDEX_FONT - 5, INDEX_FONT, FALSE,
                 0.5);
      draw_text (cr, num, L->mx - 3, L->my + (i + 0.5) * L->cell - INDEX_FONT * 0.65, INDEX_FONT,
                 FALSE, 1);
    }

  /* Cells, with their count (or row percentage) where it fits. */
  double font = MIN (12, floor (L->cell * 0.42));
  gboolean text = font >= MIN_CELL_FONT;
  for (int t = 0; t < n; t++)
    for (int p = 0; p < n; p++)
      {
        double x, y, w, h;
        cell_box (L, t, p, &x, &y, &w, &h);
        int tc = cls_at (L, t), pc = cls_at (L, p);
        Rgb fill = ramp (pal, cell_level (v, tc, pc));
        set_rgb (cr, fill);
        cairo_rectangle (cr, x, y, w, h);
        cairo_fill (cr);
        if (!text)
          continue;
        int64_t k = r->confusion[(int64_t) tc * r->n_classes + pc];
        char s[32];
        if (v->normalised)
          {
            int64_t row = row_total (r, tc);
            g_snprintf (s, sizeof s, "%.0f", row ? 100.0 * k / row : 0.0);
          }
        else
          g_snprintf (s, sizeof s, "%" G_GINT64_FORMAT, k);
        g_autoptr (PangoLayout) l = text_layout (cr, s, font, tc == pc);
        int tw, th;
        pango_layout_get_pixel_size (l, &tw, &th);
        if (tw > w - 2)
          continue;   /* hover tells */
        set_rgb (cr, text_on (fill));
        cairo_move_to (cr, x + (w - tw) / 2, y + (h - th) / 2);
        pango_cairo_show_layout (cr, l);
      }
  set_rgb (cr, pal->frame);
  cairo_set_line_width (cr, 1);
  cairo_rectangle (cr, L->mx - 0.5, L->my - 0.5, round (side) + 1, round (side) + 1);
  cairo_stroke (cr);
  if (v->hover_t >= 0 && shown_at (L, v->hover_t) >= 0 && shown_at (L, v->hover_p) >= 0)
    {
      double x, y, w, h;
      cell_box (L, shown_at (L, v->hover_t), shown_at (L, v->hover_p), &x, &y, &w, &h);
      set_rgb (cr, pal->hover);
      cairo_set_line_width (cr, 2);
      cairo_rectangle (cr, x - 1, y - 1, w + 2, h + 2);
      cairo_stroke (cr);
    }
}

static void
draw_samples (TwbConfusionView *v, cairo_t *cr, const Layout *L, const Palette *pal)
{
  const GArray *samples = v->report.samples;
  int wrong = 0;
  for (guint k = 0; k < samples->len; k++)
    {
      const tw_class_sample *s = &g_array_index (samples, tw_class_sample, k);
      wrong += s->predicted != s->label;
    }
  /* With what the captions mean where it fits. */
  g_autofree char *head = g_strdup_printf ("Samples: %d wrong, %u right (predicted \u2192 true)",
                                           wrong, samples->len - wrong);
  g_autoptr (PangoLayout) hl = text_layout (cr, head, 10, FALSE);
  int hw, hh;
  pango_layout_get_pixel_size (hl, &hw, &hh);
  if (hw > L->gw)
    {
      g_free (head);
      head = g_strdup_printf ("%d wrong, %u right", wrong, samples->len - wrong);
    }
  set_rgb (cr, pal->dim_text);
  draw_text (cr, head, L->gx, L->gy - AXIS_LABEL - 2, 10, FALSE, 0);

  for (int k = 0; k < L->shown; k++)
    {
      const tw_class_sample *s = &g_array_index (samples, tw_class_sample, k);
      gboolean bad = s->predicted != s->label;
      double x, y;
      tile_origin (L, k, &x, &y);
      double ix = x + (L->tile_w - L->img) / 2, iy = y + 2;   /* 2 px for the frame */
      if (L->img > 0 && v->tiles && (guint) k < v->tiles->len)
        {
          cairo_surface_t *img = g_ptr_array_index (v->tiles, k);
          cairo_save (cr);
          cairo_rectangle (cr, ix, iy, L->img, L->img);
          cairo_clip (cr);
          cairo_translate (cr, ix, iy);
          cairo_scale (cr, L->img / v->img_w, L->img / v->img_h);
          cairo_set_source_surface (cr, img, 0, 0);
          cairo_pattern_set_filter (cairo_get_source (cr), CAIRO_FILTER_NEAREST);
          cairo_paint (cr);
          cairo_restore (cr);
          /* Wrong ones framed in the error colour, 2 px outside the image. */
          set_rgb (cr, k == v->hover_tile ? pal->hover : bad ? pal->error : pal->frame);
          cairo_set_line_width (cr, bad || k == v->hover_tile ? 2 : 1);
          double o = bad || k == v->hover_tile ? 1 : 0.5;
          cairo_rectangle (cr, ix - o, iy - o, L->img + 2 * o, L->img + 2 * o);
          cairo_stroke (cr);
        }
      g_autofree char *cap = sample_caption (s);
      set_rgb (cr, bad ? pal->error : pal->text);
      draw_text (cr, cap, x + L->tile_w / 2, y + L->img + 4, 10, bad, 0.5);
    }
}

void
twb_confusion_view_draw (TwbConfusionView *v, cairo_t *cr, int width, int height)
{
  g_return_if_fail (TWB_IS_CONFUSION_VIEW (v));
  const Palette *pal = palette (v);
  set_rgb (cr, pal->bg);
  cairo_paint (cr);
  Layout L;
  compute_layout (v, width, height, &L);
  if (L.n == 0)
    {
      set_rgb (cr, pal->dim_text);
      draw_text (cr, "The confusion matrix and test samples appear at the end of each epoch.",
                 width / 2.0, height / 2.0 - 8, 11, FALSE, 0.5);
      return;
    }
  g_autofree char *title = title_text (v);
  set_rgb (cr, pal->text);
  draw_text (cr, title, PAD, 2, 12, TRUE, 0);
  g_autofree char *readout = NULL;
  if (v->hover_t >= 0)
    readout = twb_confusion_view_cell_text (v, v->hover_t, v->hover_p);
  else if (v->hover_tile >= 0)
    readout = tile_text (v, v->hover_tile);
  set_rgb (cr, readout ? pal->text : pal->dim_text);
  gboolean tiles = L.shown > 0;
  const char *legend = v->normalised ? tiles ? "rows in % of each true class \u00b7 tiles: predicted \u2192 true"
                                             : "rows in % of each true class"
                                     : tiles ? "counts \u00b7 tiles: predicted \u2192 true" : "counts";
  /* Which classes these are, in words, on the legend's line. */
  g_autofree char *which = L.cls ? g_strdup_printf ("the %d most confused of %d classes \u00b7 %s",
                                                    L.n, v->report.n_classes, legend)
                                 : NULL;
  draw_text (cr, readout ? readout : which ? which : legend, PAD, 17, 10, FALSE, 0);
  draw_matrix (v, cr, &L, pal);
  if (L.shown > 0 || (L.gw > 0 && v->report.samples && v->report.samples->len))
    draw_samples (v, cr, &L, pal);
}

static void
snapshot (GtkWidget *widget, GtkSnapshot *snap)
{
  int w = gtk_widget_get_width (widget), h = gtk_widget_get_height (widget);
  cairo_t *cr = gtk_snapshot_append_cairo (snap, &GRAPHENE_RECT_INIT (0, 0, w, h));
  twb_confusion_view_draw (TWB_CONFUSION_VIEW (widget), cr, w, h);
  cairo_destroy (cr);
}

static void
draw_picture (cairo_t *cr, double width, double height, gpointer data)
{
  twb_confusion_view_draw (data, cr, (int) width, (int) height);
}

gboolean
twb_confusion_view_export (TwbConfusionView *v, const char *path, int width, int height,
                           GError **error)
{
  g_return_val_if_fail (TWB_IS_CONFUSION_VIEW (v), FALSE);
  g_return_val_if_fail (width > 0 && height > 0, FALSE);
  return twb_picture_save (path, width, height, 1, TWB_PICTURE_PNG | TWB_PICTURE_SVG,
                           draw_picture, v, error);
}

/* ---- Geometry for tests and hover ------------------------------------------------ */

gboolean
twb_confusion_view_cell_rect (TwbConfusionView *v, int width, int height, int true_label,
                              int predicted, graphene_rect_t *out)
{
  g_return_val_if_fail (TWB_IS_CONFUSION_VIEW (v), FALSE);
  Layout L;
  compute_layout (v, width, height, &L);
  int t = shown_at (&L, true_label), p = shown_at (&L, predicted);
  if (t < 0 || p < 0)
    return FALSE;
  double x, y, w, h;
  cell_box (&L, t, p, &x, &y, &w, &h);
  graphene_rect_init (out, x, y, w, h);
  return TRUE;
}

int
twb_confusion_view_tile_rect (TwbConfusionView *v, int width, int height, int k,
                              graphene_rect_t *image, graphene_rect_t *caption)
{
  g_return_val_if_fail (TWB_IS_CONFUSION_VIEW (v), 0);
  Layout L;
  compute_layout (v, width, height, &L);
  if (k >= 0 && k < L.shown)
    {
      double x, y;
      tile_origin (&L, k, &x, &y);
      if (image)
        graphene_rect_init (image, x + (L.tile_w - L.img) / 2, y + 2, L.img, L.img);
      if (caption)
        graphene_rect_init (caption, x, y + L.img + 4, L.tile_w, CAPTION_H - 2);
    }
  return L.shown;
}

static void
hit (TwbConfusionView *v, double px, double py, int *t, int *p, int *tile)
{
  Layout L;
  compute_layout (v, gtk_widget_get_width (GTK_WIDGET (v)), gtk_widget_get_height (GTK_WIDGET (v)),
                  &L);
  *t = *p = *tile = -1;
  if (L.n == 0)
    return;
  int c = (int) floor ((px - L.mx) / L.cell), r = (int) floor ((py - L.my) / L.cell);
  if (px >= L.mx && py >= L.my && c < L.n && r < L.n)
    {
      *t = cls_at (&L, r);
      *p = cls_at (&L, c);
      return;
    }
  for (int k = 0; k < L.shown; k++)
    {
      double x, y;
      tile_origin (&L, k, &x, &y);
      if (px >= x && px < x + L.tile_w && py >= y && py < y + L.tile_h)
        *tile = k;
    }
}

static void
on_motion (GtkEventControllerMotion *m, double x, double y, TwbConfusionView *v)
{
  int t, p, tile;
  hit (v, x, y, &t, &p, &tile);
  if (t != v->hover_t || p != v->hover_p || tile != v->hover_tile)
    {
      v->hover_t = t;
      v->hover_p = p;
      v->hover_tile = tile;
      gtk_widget_queue_draw (GTK_WIDGET (v));
    }
}

static void
on_leave (GtkEventControllerMotion *m, TwbConfusionView *v)
{
  if (v->hover_t >= 0 || v->hover_tile >= 0)
    gtk_widget_queue_draw (GTK_WIDGET (v));
  v->hover_t = v->hover_p = v->hover_tile = -1;
}

/* ---- Model ----------------------------------------------------------------------- */

void
twb_confusion_view_set_report (TwbConfusionView *v, const tw_class_report *r, int64_t epoch)
{
  g_return_if_fail (TWB_IS_CONFUSION_VIEW (v));
  tw_class_report_clear (&v->report);
  v->has_report = r != NULL && r->n_classes > 0 && r->confusion != NULL;
  v->epoch = epoch;
  v->max_count = 0;
  v->hover_t = v->hover_p = v->hover_tile = -1;
  if (v->has_report)
    {
      tw_class_report_copy (&v->report, r);
      int64_t cells = (int64_t) r->n_classes * r->n_classes;
      for (int64_t i = 0; i < cells; i++)
        v->max_count = MAX (v->max_count, r->confusion[i]);
    }
  g_clear_pointer (&v->order, g_free);
  if (v->has_report)
    {
      v->order = g_new (int, r->n_classes);
      tw_class_report_most_confused (r, r->n_classes, v->order);
    }
  build_tiles (v);
  g_autofree char *label = v->has_report ? title_text (v) : g_strdup ("Confusion matrix: no results yet");
  gtk_accessible_update_property (GTK_ACCESSIBLE (v), GTK_ACCESSIBLE_PROPERTY_LABEL, label, -1);
  gtk_widget_queue_draw (GTK_WIDGET (v));
}

void
twb_confusion_view_set_normalised (TwbConfusionView *v, gboolean normalised)
{
  g_return_if_fail (TWB_IS_CONFUSION_VIEW (v));
  if (v->normalised == !!normalised)
    return;
  v->normalised = !!normalised;
  gtk_widget_queue_draw (GTK_WIDGET (v));
}

gboolean
twb_confusion_view_get_normalised (TwbConfusionView *v)
{
  g_return_val_if_fail (TWB_IS_CONFUSION_VIEW (v), FALSE);
  return v->normalised;
}

void
twb_confusion_view_cell_color (TwbConfusionView *v, int true_label, int predicted, GdkRGBA *out)
{
  g_return_if_fail (TWB_IS_CONFUSION_VIEW (v));
  const Palette *pal = palette (v);
  Rgb c = pal->bg;
  if (v->has_report && true_label >= 0 && predicted >= 0 && true_label < v->report.n_classes
      && predicted < v->report.n_classes)
    c = ramp (pal, cell_level (v, true_label, predicted));
  *out = (GdkRGBA) { (float) c.r, (float) c.g, (float) c.b, 1 };
}

void
twb_confusion_view_error_color (TwbConfusionView *v, GdkRGBA *out)
{
  g_return_if_fail (TWB_IS_CONFUSION_VIEW (v));
  const Palette *pal = palette (v);
  *out = (GdkRGBA) { (float) pal->error.r, (float) pal->error.g, (float) pal->error.b, 1 };
}

static void
measure (GtkWidget *widget, GtkOrientation o, int for_size, int *min, int *nat, int *min_b,
         int *nat_b)
{
  /* 10 classes and a row of tiles stay legible at 420 × 300. */
  *min = o == GTK_ORIENTATION_HORIZONTAL ? 240 : 180;
  *nat = o == GTK_ORIENTATION_HORIZONTAL ? 420 : 300;
}

static void
css_changed (GtkWidget *widget, GtkCssStyleChange *change)
{
  GTK_WIDGET_CLASS (twb_confusion_view_parent_class)->css_changed (widget, change);
  gtk_widget_queue_draw (widget);   /* light / dark switch */
}

static void
twb_confusion_view_finalize (GObject *object)
{
  TwbConfusionView *v = TWB_CONFUSION_VIEW (object);
  tw_class_report_clear (&v->report);
  g_clear_pointer (&v->tiles, g_ptr_array_unref);
  g_free (v->order);
  G_OBJECT_CLASS (twb_confusion_view_parent_class)->finalize (object);
}

static void
twb_confusion_view_class_init (TwbConfusionViewClass *klass)
{
  GObjectClass *oc = G_OBJECT_CLASS (klass);
  GtkWidgetClass *wc = GTK_WIDGET_CLASS (klass);
  oc->finalize = twb_confusion_view_finalize;
  wc->snapshot = snapshot;
  wc->measure = measure;
  wc->css_changed = css_changed;
  gtk_widget_class_set_css_name (wc, "confusionview");
  gtk_widget_class_set_accessible_role (wc, GTK_ACCESSIBLE_ROLE_IMG);
}

static void
twb_confusion_view_init (TwbConfusionView *v)
{
  v->hover_t = v->hover_p = v->hover_tile = -1;
  GtkEventController *motion = gtk_event_controller_motion_new ();
  g_signal_connect (motion, "motion", G_CALLBACK (on_motion), v);
  g_signal_connect (motion, "leave", G_CALLBACK (on_leave), v);
  gtk_widget_add_controller (GTK_WIDGET (v), motion);
  gtk_accessible_update_property (GTK_ACCESSIBLE (v), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  "Confusion matrix: no results yet", -1);
}

GtkWidget *
twb_confusion_view_new (void)
{
  return g_object_new (TWB_TYPE_CONFUSION_VIEW, NULL);
}

void
twb_confusion_view_set_show_all (TwbConfusionView *v, gboolean all)
{
  g_return_if_fail (TWB_IS_CONFUSION_VIEW (v));
  if (v->show_all == !!all)
    return;
  v->show_all = !!all;
  v->hover_t = v->hover_p = v->hover_tile = -1;
  gtk_widget_queue_draw (GTK_WIDGET (v));
}

gboolean
twb_confusion_view_get_show_all (TwbConfusionView *v)
{
  g_return_val_if_fail (TWB_IS_CONFUSION_VIEW (v), FALSE);
  return v->show_all;
}

int
twb_confusion_view_shown_classes (TwbConfusionView *v, int width, int height, int *classes)
{
  g_return_val_if_fail (TWB_IS_CONFUSION_VIEW (v), 0);
  Layout L;
  compute_layout (v, width, height, &L);
  for (int i = 0; classes && i < L.n; i++)
    classes[i] = cls_at (&L, i);
  return L.n;
}
