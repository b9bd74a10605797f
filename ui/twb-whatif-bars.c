/* twb-whatif-bars.c — stacked bars of a simulated step's parts. */
#define G_LOG_DOMAIN "twb-whatif"

#include "ui/twb-whatif-bars.h"
#include "ui/twb-plot.h"
#include "ui/twb-draw-util.h"

#include <math.h>

#define PAD 8.0
#define GAP 6.0
#define SWATCH 12.0

struct _TwbWhatifBars
{
  GtkWidget parent_instance;
  GArray *bars;               /* TwbWhatifBar */
  char *x_label;
};

G_DEFINE_FINAL_TYPE (TwbWhatifBars, twb_whatif_bars, GTK_TYPE_WIDGET)

static const char *const part_names[] = { "compute", "exposed communication", "rest" };

static double
part (const TwbWhatifBar *b, int k)
{
  double v = k == 0 ? b->compute_ms : k == 1 ? b->exposed_ms : b->rest_ms;
  return isfinite (v) && v > 0 ? v : 0;
}

static void
part_colour (int k, GdkRGBA *c)
{
  /* compute blue, exposed communication red, the rest grey: the
   * plot's palette (tab10) for the first two. */
  if (k == 0)
    *c = *twb_plot_palette_colour (0);
  else if (k == 1)
    *c = *twb_plot_palette_colour (3);
  else
    *c = (GdkRGBA) { 0.6, 0.6, 0.6, 1 };
}

static void
tick_text (char *buf, gsize len, double v, double step)
{
  int dec = step >= 1 ? 0 : MIN (6, (int) ceil (-log10 (step) - 1e-9));
  g_snprintf (buf, len, "%.*f", dec, v);
}

void
twb_whatif_bars_draw (TwbWhatifBars *self, cairo_t *cr, int width, int height)
{
  GtkWidget *w = GTK_WIDGET (self);
  GdkRGBA fg;
  gtk_style_context_get_color (gtk_widget_get_style_context (w), &fg);
  g_autoptr (PangoLayout) l = gtk_widget_create_pango_layout (w, NULL);
  PangoFontDescription *fd = pango_font_description_copy (
    pango_context_get_font_description (pango_layout_get_context (l)));
  pango_font_description_set_size (fd, MAX (pango_font_description_get_size (fd) * 0.85,
                                             7 * PANGO_SCALE));
  pango_layout_set_font_description (l, fd);
  pango_font_description_free (fd);
  double th;
  twb_draw_text_size (l, "Xg", NULL, &th);

  if (self->bars->len == 0)
    {
      cairo_set_source_rgba (cr, fg.red, fg.green, fg.blue, 0.5);
      twb_draw_text_at (cr, l, "No data yet", width / 2.0, height / 2.0, 0.5, 0.5);
      return;
    }

  /* Legend on top, wrapping onto more rows when narrow. */
  double lx = PAD, ly = PAD;
  for (int k = 0; k < 3; k++)
    {
      double tw;
      twb_draw_text_size (l, part_names[k], &tw, NULL);
      double item = SWATCH + GAP + tw;
      if (lx + item > width - PAD && lx > PAD)
        {
          lx = PAD;
          ly += th + 2;
        }
      GdkRGBA c;
      part_colour (k, &c);
      gdk_cairo_set_source_rgba (cr, &c);
      cairo_rectangle (cr, lx, ly + (th - SWATCH) / 2, SWATCH, SWATCH);
      cairo_fill (cr);
      cairo_set_source_rgba (cr, fg.red, fg.green, fg.blue, 0.8);
      twb_draw_text_at (cr, l, part_names[k], lx + SWATCH + GAP, ly, 0, 0);
      lx += item + 3 * GAP;
    }
  /* The unit on a line of its own under the legend, then room for the
   * top tick's label (centred on its line). */
  double unit_y = ly + th + GAP;
  double top = unit_y + th + th / 2;

  double vmax = 0;
  for (guint i = 0; i < self->bars->len; i++)
    {
      const TwbWhatifBar *b = &g_array_index (self->bars, TwbWhatifBar, i);
      vmax = MAX (vmax, part (b, 0) + part (b, 1) + part (b, 2));
    }
  if (!(vmax > 0))
    vmax = 1;
  /* Bottom: the bars' labels, then the axis title. */
  double bottom = height - PAD - 2 * th - GAP;
  double plot_h = bottom - top;
  if (plot_h < 20)
    return;
  double step = twb_draw_nice_step (vmax, MAX (2, plot_h / 40));
  double ymax = ceil (vmax / step - 1e-9) * step;
  /* Left: the widest tick label and the unit. */
  double yl_w = 0;
  char buf[64];
  for (double v = 0; v <= ymax + step * 1e-9; v += step)
    {
      double tw;
      tick_text (buf, sizeof buf, v, step);
      twb_draw_text_size (l, buf, &tw, NULL);
      yl_w = MAX (yl_w, tw);
    }
  double uw;
  twb_draw_text_size (l, "ms", &uw, NULL);
  double left = PAD + MAX (yl_w, uw) + GAP;
  double right = width - PAD;
  if (right - left < 20)
    return;
  for (double v = 0; v <= ymax + step * 1e-9; v += step)
    {
      double y = round (bottom - v / ymax * plot_h) + 0.5;
      cairo_set_source_rgba (cr, fg.red, fg.green, fg.blue, 0.12);
      cairo_move_to (cr, left, y);
      cairo_line_to (cr, right, y);
      cairo_set_line_width (cr, 1);
      cairo_stroke (cr);
      tick_text (buf, sizeof buf, v, step);
      cairo_set_source_rgba (cr, fg.red, fg.green, fg.blue, 0.75);
      twb_draw_text_at (cr, l, buf, left - GAP, y, 1, 0.5);
    }
  cairo_set_source_rgba (cr, fg.red, fg.green, fg.blue, 0.6);
  twb_draw_text_at (cr, l, "ms", PAD, unit_y, 0, 0);

  guint n = self->bars->len;
  double slot = (right - left) / n;
  double bw = MIN (slot * 0.6, 64);
  /* Labels every `every` bars when the widest would not fit its slot. */
  double lw_max = 0;
  for (guint i = 0; i < n; i++)
    {
      double tw;
      twb_draw_text_size (l, g_array_index (self->bars, TwbWhatifBar, i).label, &tw, NULL);
      lw_max = MAX (lw_max, tw);
    }
  guint every = MAX (1, (guint) ceil ((lw_max + GAP) / slot));
  for (guint i = 0; i < n; i++)
    {
      const TwbWhatifBar *b = &g_array_index (self->bars, TwbWhatifBar, i);
      double cx = left + slot * (i + 0.5);
      double y = bottom;
      for (int k = 0; k < 3; k++)
        {
          double hgt = part (b, k) / ymax * plot_h;
          GdkRGBA c;
          part_colour (k, &c);
          gdk_cairo_set_source_rgba (cr, &c);
          cairo_rectangle (cr, cx - bw / 2, y - hgt, bw, hgt);
          cairo_fill (cr);
          y -= hgt;
        }
      cairo_set_source_rgba (cr, fg.red, fg.green, fg.blue, 0.75);
      if (i % every == 0)
        twb_draw_text_at (cr, l, b->label, cx, bottom + 2, 0.5, 0);
    }
  cairo_set_source_rgba (cr, fg.red, fg.green, fg.blue, 0.6);
  if (self->x_label)
    twb_draw_text_at (cr, l, self->x_label, (left + right) / 2, height - PAD, 0.5, 1);
  cairo_set_source_rgba (cr, fg.red, fg.green, fg.blue, 0.3);
  cairo_move_to (cr, left, round (bottom) + 0.5);
  cairo_line_to (cr, right, round (bottom) + 0.5);
  cairo_stroke (cr);
}

static void
twb_whatif_bars_snapshot (GtkWidget *w, GtkSnapshot *s)
{
  int width = gtk_widget_get_width (w), height = gtk_widget_get_height (w);
  cairo_t *cr = gtk_snapshot_append_cairo (s, &GRAPHENE_RECT_INIT (0, 0, width, height));
  twb_whatif_bars_draw (TWB_WHATIF_BARS (w), cr, width, height);
  cairo_destroy (cr);
}

static void
twb_whatif_bars_measure (GtkWidget *w, GtkOrientation o, int for_size, int *min, int *nat,
                         int *min_base, int *nat_base)
{
  *min = o == GTK_ORIENTATION_HORIZONTAL ? 160 : 140;
  *nat = o == GTK_ORIENTATION_HORIZONTAL ? 320 : 200;
}

static void
twb_whatif_bars_finalize (GObject *o)
{
  TwbWhatifBars *self = TWB_WHATIF_BARS (o);
  g_array_unref (self->bars);
  g_free (self->x_label);
  G_OBJECT_CLASS (twb_whatif_bars_parent_class)->finalize (o);
}

static void
twb_whatif_bars_class_init (TwbWhatifBarsClass *klass)
{
  GtkWidgetClass *wc = GTK_WIDGET_CLASS (klass);
  G_OBJECT_CLASS (klass)->finalize = twb_whatif_bars_finalize;
  wc->snapshot = twb_whatif_bars_snapshot;
  wc->measure = twb_whatif_bars_measure;
  gtk_widget_class_set_accessible_role (wc, GTK_ACCESSIBLE_ROLE_IMG);
}

static void
twb_whatif_bars_init (TwbWhatifBars *self)
{
  self->bars = g_array_new (FALSE, TRUE, sizeof (TwbWhatifBar));
  gtk_accessible_update_property (GTK_ACCESSIBLE (self), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  "Step time per configuration: compute, exposed communication, "
                                  "rest", -1);
}

GtkWidget *
twb_whatif_bars_new (void)
{
  return g_object_new (TWB_TYPE_WHATIF_BARS, NULL);
}

void
twb_whatif_bars_set (TwbWhatifBars *self, const TwbWhatifBar *bars, guint n, const char *x_label)
{
  g_return_if_fail (TWB_IS_WHATIF_BARS (self));
  g_array_set_size (self->bars, 0);
  if (n)
    g_array_append_vals (self->bars, bars, n);
  g_free (self->x_label);
  self->x_label = g_strdup (x_label);
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

guint
twb_whatif_bars_get_n (TwbWhatifBars *self)
{
  return self->bars->len;
}
