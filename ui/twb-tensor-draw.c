/* twb-tensor-draw.c — the tensor inspector's drawings (twb-tensor-draw.h). */
#define G_LOG_DOMAIN "twb-tensor-view"

#include "ui/twb-tensor-draw.h"

#include <math.h>
#include <string.h>

/* The hatch of "no difference": a line every 6 px, finer than any map's
 * cell at panel sizes and unlike a flat colour. */
#define NO_DIFF_HATCH_PX 6

void
twb_tensor_fg (GtkWidget *w, GdkRGBA *c)
{
#if GTK_CHECK_VERSION(4, 10, 0)
  gtk_widget_get_color (w, c);
#else
  gtk_style_context_get_color (gtk_widget_get_style_context (w), c);
#endif
}

/* Accent (bars) and NaN colours: mid-tone, so they read on light and dark
 * backgrounds alike. */
const GdkRGBA twb_tensor_accent = { 0.21f, 0.52f, 0.89f, 1.0f };
const double twb_tensor_nan_rgb[3] = { 0.95, 0.25, 0.85 };


void
twb_tensor_set_source (cairo_t *cr, const GdkRGBA *c, double alpha)
{
  cairo_set_source_rgba (cr, c->red, c->green, c->blue, c->alpha * alpha);
}

/* A small-print layout in the widget's font. */
PangoLayout *
twb_tensor_small_layout (GtkWidget *w, const char *text)
{
  PangoLayout *l = gtk_widget_create_pango_layout (w, text);
  PangoAttrList *attrs = pango_attr_list_new ();
  pango_attr_list_insert (attrs, pango_attr_scale_new (0.85));
  pango_layout_set_attributes (l, attrs);
  pango_attr_list_unref (attrs);
  return l;
}

int
twb_tensor_small_line_height (GtkWidget *w)
{
  g_autoptr (PangoLayout) l = twb_tensor_small_layout (w, "0");
  int h;
  pango_layout_get_pixel_size (l, NULL, &h);
  return h;
}

/* Text at (x, y) (top), aligned 0 left, 0.5 centre, 1 right of x. */
void
twb_tensor_draw_text (cairo_t *cr, GtkWidget *w, const char *text, double x, double y, double align,
           const GdkRGBA *c, double alpha)
{
  g_autoptr (PangoLayout) l = twb_tensor_small_layout (w, text);
  int tw;
  pango_layout_get_pixel_size (l, &tw, NULL);
  cairo_move_to (cr, x - align * tw, y);
  twb_tensor_set_source (cr, c, alpha);
  pango_cairo_show_layout (cr, l);
}

char *
twb_tensor_format_double (double x)
{
  return g_strdup_printf ("%.6g", x);
}

char *
twb_tensor_format_value (tw_dtype dt, double x)
{
  if (tw_dtype_is_float (dt))
    return twb_tensor_format_double (x);
  return g_strdup_printf ("%" G_GINT64_FORMAT, (gint64) x);
}

/* Piecewise-linear colour maps, five stops each: Moreland's cool–warm
 * (diverging, grey at 0) and viridis (sequential); both stay visible on
 * light and dark backgrounds. */
static const double coolwarm[5][3] = {
  { 0.230, 0.299, 0.754 }, { 0.552, 0.690, 0.996 }, { 0.865, 0.865, 0.865 },
  { 0.958, 0.603, 0.482 }, { 0.706, 0.016, 0.150 },
};
static const double viridis[5][3] = {
  { 0.267, 0.005, 0.329 }, { 0.229, 0.322, 0.546 }, { 0.128, 0.567, 0.551 },
  { 0.369, 0.789, 0.383 }, { 0.993, 0.906, 0.144 },
};

/* Diverging around 0 (cool–warm, 0 the neutral grey) for a difference and
 * when both signs occur; else sequential (viridis). */
static gboolean
diverging (const TwbHeatModel *hm)
{
  return hm->centred || (hm->st.min < 0 && hm->st.max > 0);
}

static void
ramp (const double map[5][3], double f, double rgb[3])
{
  f = CLAMP (f, 0.0, 1.0) * 4;
  int i = MIN ((int) f, 3);
  double u = f - i;
  for (int k = 0; k < 3; k++)
    rgb[k] = map[i][k] * (1 - u) + map[i + 1][k] * u;
}

/* The colour of x in the heat map hm: diverging around 0 over ±abs_max
 * (diverging ()), else sequential over [min, max]; ±Inf at the ends, NaN in
 * twb_tensor_nan_rgb. */
static void
heat_colour (const TwbHeatModel *hm, double x, double rgb[3])
{
  const tw_tensor_stats *st = &hm->st;
  if (isnan (x))
    {
      memcpy (rgb, twb_tensor_nan_rgb, sizeof twb_tensor_nan_rgb);
      return;
    }
  gboolean div = diverging (hm);
  double f;
  if (isinf (x))
    f = x > 0 ? 1 : 0;
  else if (div)
    f = st->abs_max > 0 ? 0.5 + 0.5 * x / st->abs_max : 0.5;
  else if (st->max > st->min)
    f = (x * 0.5 - st->min * 0.5) / (st->max * 0.5 - st->min * 0.5);  /* halves: no overflow */
  else
    f = 0.5;
  ramp (div ? coolwarm : viridis, f, rgb);
}

guint32
twb_tensor_pack_rgb (const double rgb[3])
{
  return 0xff000000u | (guint32) lround (rgb[0] * 255) << 16 | (guint32) lround (rgb[1] * 255) << 8
         | (guint32) lround (rgb[2] * 255);
}

/* ---- Slices -------------------------------------------------------------------- */

void
twb_tensor_slice_dims (const tw_tensor *t, int64_t *rows, int64_t *cols)
{
  if (t->ndim == 0)
    *rows = *cols = 1;
  else if (t->ndim == 1)
    {
      *rows = 1;
      *cols = t->shape[0];
    }
  else
    {
      *rows = t->shape[t->ndim - 2];
      *cols = t->shape[t->ndim - 1];
    }
}

/* t[idx[0], idx[1], …, :, :] keeping the leading dims (size 1), so flat
 * index r · cols + c is element (r, c).  NULL when t is empty. */
tw_tensor *
twb_tensor_slice_view (tw_tensor *t, const int64_t *idx)
{
  if (tw_tensor_numel (t) == 0)
    return NULL;
  tw_tensor *v = tw_tensor_ref (t);
  for (int d = 0; d < t->ndim - 2; d++)
    {
      tw_tensor *s = tw_tensor_slice (v, d, idx[d], idx[d] + 1, 1);
      tw_tensor_unref (v);
      v = s;
    }
  return v;
}

void
twb_heat_model_clear (TwbHeatModel *hm)
{
  g_clear_pointer (&hm->slice, tw_tensor_unref);
  g_clear_pointer (&hm->surface, cairo_surface_destroy);
  tw_tensor_stats_clear (&hm->st);
  hm->rows = hm->cols = 0;
}

void
twb_heat_model_set (TwbHeatModel *hm, tw_tensor *t, const int64_t *idx)
{
  twb_heat_model_clear (hm);
  if (t == NULL || t->ndim == 0)
    return;
  hm->slice = twb_tensor_slice_view (t, idx);
  if (hm->slice == NULL)
    return;
  twb_tensor_slice_dims (t, &hm->rows, &hm->cols);
  tw_tensor_stats_compute (hm->slice, 0, &hm->st);
}

static cairo_surface_t *
heat_surface (TwbHeatModel *hm)
{
  if (hm->surface)
    return hm->surface;
  int sw = (int) MIN (hm->cols, HEAT_MAX_SAMPLES), sh = (int) MIN (hm->rows, HEAT_MAX_SAMPLES);
  hm->surface = cairo_image_surface_create (CAIRO_FORMAT_RGB24, sw, sh);
  cairo_surface_flush (hm->surface);
  guint8 *data = cairo_image_surface_get_data (hm->surface);
  int stride = cairo_image_surface_get_stride (hm->surface);
  for (int py = 0; py < sh; py++)
    {
      guint32 *row = (guint32 *) (data + (size_t) py * stride);
      int64_t r = py * hm->rows / sh;
      for (int px = 0; px < sw; px++)
        {
          double rgb[3];
          int64_t c = px * hm->cols / sw;
          heat_colour (hm, tw_tensor_get_flat (hm->slice, r * hm->cols + c), rgb);
          row[px] = twb_tensor_pack_rgb (rgb);
        }
    }
  cairo_surface_mark_dirty (hm->surface);
  return hm->surface;
}

gboolean
twb_heat_model_all_zero (const TwbHeatModel *hm)
{
  return hm->centred && hm->slice && hm->st.finite > 0 && hm->st.finite == hm->st.count
         && hm->st.abs_max == 0;
}

/* "No difference" over the map's rectangle: a faint hatched field, unlike
 * any colour of the maps (their middle is a solid grey), and the words. */
static void
draw_no_difference (GtkWidget *w, cairo_t *cr, const graphene_rect_t *r, const GdkRGBA *fg)
{
  cairo_save (cr);
  cairo_rectangle (cr, r->origin.x, r->origin.y, r->size.width, r->size.height);
  cairo_clip_preserve (cr);
  twb_tensor_set_source (cr, fg, 0.04);
  cairo_fill (cr);
  twb_tensor_set_source (cr, fg, 0.12);
  cairo_set_line_width (cr, 1);
  for (double d = -r->size.height; d < r->size.width; d += NO_DIFF_HATCH_PX)
    {
      cairo_move_to (cr, r->origin.x + d, r->origin.y + r->size.height);
      cairo_line_to (cr, r->origin.x + d + r->size.height, r->origin.y);
    }
  cairo_stroke (cr);
  cairo_restore (cr);
  twb_tensor_set_source (cr, fg, 0.35);
  cairo_set_line_width (cr, 1);
  cairo_rectangle (cr, r->origin.x - 0.5, r->origin.y - 0.5, r->size.width + 1, r->size.height + 1);
  cairo_stroke (cr);
  int lh = twb_tensor_small_line_height (w);
  double cx = r->origin.x + r->size.width / 2, cy = r->origin.y + r->size.height / 2;
  twb_tensor_draw_text (cr, w, TWB_NO_DIFFERENCE_TEXT, cx, cy - lh, 0.5, fg, 0.9);
  twb_tensor_draw_text (cr, w, "every value is as it was", cx, cy, 0.5, fg, 0.6);
}

/* The map's rectangle in a drawing of width × height (the scale below). */
gboolean
twb_heat_rect (int width, int height, graphene_rect_t *r)
{
  *r = GRAPHENE_RECT_INIT (PAD, PAD, width - 2 * PAD, height - 2 * PAD - SCALE_H);
  return r->size.width >= 1 && r->size.height >= 1;
}

void
twb_heat_draw (GtkWidget *w, TwbHeatModel *hm, cairo_t *cr, int width, int height)
{
  graphene_rect_t r;
  if (hm->slice == NULL || !twb_heat_rect (width, height, &r))
    return;
  GdkRGBA fg;
  twb_tensor_fg (w, &fg);
  if (twb_heat_model_all_zero (hm))
    {
      draw_no_difference (w, cr, &r, &fg);
      return;
    }
  cairo_surface_t *s = heat_surface (hm);
  int sw = cairo_image_surface_get_width (s), sh = cairo_image_surface_get_height (s);
  cairo_save (cr);
  cairo_rectangle (cr, r.origin.x, r.origin.y, r.size.width, r.size.height);
  cairo_clip (cr);
  cairo_translate (cr, r.origin.x, r.origin.y);
  cairo_scale (cr, r.size.width / sw, r.size.height / sh);
  cairo_set_source_surface (cr, s, 0, 0);
  cairo_pattern_set_filter (cairo_get_source (cr), CAIRO_FILTER_NEAREST);
  cairo_paint (cr);
  cairo_restore (cr);
  cairo_set_line_width (cr, 1);
  twb_tensor_set_source (cr, &fg, 0.35);
  cairo_rectangle (cr, r.origin.x - 0.5, r.origin.y - 0.5, r.size.width + 1, r.size.height + 1);
  cairo_stroke (cr);

  /* The colour scale: the same map over the slice's range, labelled. */
  const tw_tensor_stats *st = &hm->st;
  if (st->finite == 0)
    return;
  double y = r.origin.y + r.size.height + 4;
  gboolean div = diverging (hm);
  double lo = div ? -st->abs_max : st->min, hi = div ? st->abs_max : st->max;
  const int steps = 64;
  for (int i = 0; i < steps; i++)
    {
      double rgb[3];
      ramp (div ? coolwarm : viridis, (i + 0.5) / steps, rgb);
      cairo_set_source_rgb (cr, rgb[0], rgb[1], rgb[2]);
      double x0 = r.origin.x + r.size.width * i / steps;
      cairo_rectangle (cr, x0, y, r.size.width / steps + 0.5, SCALE_BAR);
      cairo_fill (cr);
    }
  g_autofree char *slo = twb_tensor_format_double (lo), *shi = twb_tensor_format_double (hi);
  double ty = y + SCALE_BAR + 2;
  twb_tensor_draw_text (cr, w, slo, r.origin.x, ty, 0, &fg, 0.8);
  twb_tensor_draw_text (cr, w, shi, r.origin.x + r.size.width, ty, 1, &fg, 0.8);
  if (div)
    twb_tensor_draw_text (cr, w, "0", r.origin.x + r.size.width / 2, ty, 0.5, &fg, 0.8);
}

/* ---- Histogram ----------------------------------------------------------------- */

gboolean
twb_histogram_layout (const tw_tensor_stats *st, int width, int height, int line_h,
                      int label_w, TwbHistogramLayout *out)
{
  /* The peak's label on a line of its own above the bars, the range's
   * labels on one below: no bar ever reaches either. */
  double x0 = PAD, x1 = width - PAD;
  double top = PAD + line_h + 2, base = height - PAD - line_h - 2;
  *out = (TwbHistogramLayout) { 0 };
  out->bars = GRAPHENE_RECT_INIT (x0, top, x1 - x0, base - top);
  out->peak_label = GRAPHENE_RECT_INIT (x1 - label_w, PAD, label_w, line_h);
  out->baseline = base;
  out->peak = 1;
  for (int i = 0; i < st->n_bins; i++)
    out->peak = MAX (out->peak, st->hist[i]);
  return x1 - x0 >= 4 && base - top >= 4;
}

void
twb_histogram_draw (GtkWidget *w, const tw_tensor_stats *st, cairo_t *cr, int width, int height)
{
  GdkRGBA fg;
  twb_tensor_fg (w, &fg);
  int lh = twb_tensor_small_line_height (w);
  int64_t peak = 1;
  for (int i = 0; i < st->n_bins; i++)
    peak = MAX (peak, st->hist[i]);
  g_autofree char *speak = g_strdup_printf ("peak %" G_GINT64_FORMAT, peak);
  g_autoptr (PangoLayout) pl = twb_tensor_small_layout (w, speak);
  int label_w;
  pango_layout_get_pixel_size (pl, &label_w, NULL);
  TwbHistogramLayout lo;
  if (!twb_histogram_layout (st, width, height, lh, label_w, &lo))
    return;
  double x0 = lo.bars.origin.x, x1 = x0 + lo.bars.size.width;
  double y0 = lo.bars.origin.y, y1 = lo.baseline;
  if (st->n_bins == 0)
    {
      twb_tensor_draw_text (cr, w, st->count == 0 ? "Empty tensor" : "No finite values",
                            width / 2.0, (y0 + y1 - lh) / 2, 0.5, &fg, 0.6);
      return;
    }
  double bw = (x1 - x0) / st->n_bins;
  twb_tensor_set_source (cr, &twb_tensor_accent, 1);
  for (int i = 0; i < st->n_bins; i++)
    {
      if (st->hist[i] == 0)
        continue;
      double bh = MAX ((y1 - y0) * st->hist[i] / peak, 1.0);   /* a lone value stays visible */
      cairo_rectangle (cr, x0 + i * bw, y1 - bh, bw >= 3 ? bw - 1 : bw, bh);
    }
  cairo_fill (cr);
  twb_tensor_set_source (cr, &fg, 0.4);
  cairo_rectangle (cr, x0, y1, x1 - x0, 1);
  cairo_fill (cr);
  g_autofree char *slo = twb_tensor_format_double (st->hist_lo);
  g_autofree char *shi = twb_tensor_format_double (st->hist_hi);
  twb_tensor_draw_text (cr, w, slo, x0, y1 + 2, 0, &fg, 0.8);
  if (st->n_bins > 1)
    twb_tensor_draw_text (cr, w, shi, x1, y1 + 2, 1, &fg, 0.8);
  twb_tensor_draw_text (cr, w, speak, lo.peak_label.origin.x, lo.peak_label.origin.y, 0, &fg, 0.6);
}
