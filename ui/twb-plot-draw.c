/* twb-plot-draw.c — the plot's layout (margins, ticks, legend) and drawing
 * (axes, curves from the metrics' columns, hover box, zoom rectangle). */
#define G_LOG_DOMAIN "twb-plot"

#include "ui/twb-plot-private.h"
#include "ui/twb-draw-util.h"
#include "profiler/twb-widget-colour.h"

#include <math.h>
#include <string.h>

/* Curve colours: matplotlib's "tab10" less its grey and olive, told apart
 * on light and dark backgrounds alike. */
const GdkRGBA twb_plot_palette[TWB_PLOT_N_COLOURS] = {
  { 0.122, 0.467, 0.706, 1 }, /* blue   #1f77b4 */
  { 1.000, 0.498, 0.055, 1 }, /* orange #ff7f0e */
  { 0.173, 0.627, 0.173, 1 }, /* green  #2ca02c */
  { 0.839, 0.153, 0.157, 1 }, /* red    #d62728 */
  { 0.580, 0.404, 0.741, 1 }, /* purple #9467bd */
  { 0.549, 0.337, 0.294, 1 }, /* brown  #8c564b */
  { 0.890, 0.467, 0.761, 1 }, /* pink   #e377c2 */
  { 0.090, 0.745, 0.812, 1 }, /* cyan   #17becf */
};

/* ---- Small helpers -------------------------------------------------------------- */

void
twb_plot_set_dash (cairo_t *cr, TwbPlotDash dash, double unit)
{
  /* On-off lengths in px at unit 1 (the curves): dashes of 6, dots of 1.5
   * with round-ish gaps, a dash and a dot. */
  static const double dashed[] = { 6, 3 }, dotted[] = { 1.5, 2.5 }, dash_dot[] = { 6, 2.5, 1.5, 2.5 };
  const double *pat = NULL;
  int n = 0;
  switch (dash)
    {
    case TWB_PLOT_DASHED: pat = dashed; n = 2; break;
    case TWB_PLOT_DOTTED: pat = dotted; n = 2; break;
    case TWB_PLOT_DASH_DOT: pat = dash_dot; n = 4; break;
    default: break;
    }
  double scaled[4];
  for (int i = 0; i < n; i++)
    scaled[i] = pat[i] * unit;
  cairo_set_dash (cr, n ? scaled : NULL, n, 0);
}

void
twb_plot_fg_colour (TwbPlot *p, GdkRGBA *c)
{
  twb_widget_fg_colour (GTK_WIDGET (p), c);
}

static void
set_source (cairo_t *cr, const GdkRGBA *c, double alpha)
{
  cairo_set_source_rgba (cr, c->red, c->green, c->blue, c->alpha * alpha);
}

double
twb_draw_nice_step (double span, double target)
{
  double raw = span / MAX (target, 1);
  if (!(raw > 0) || !isfinite (raw))
    return 1;
  double mag = pow (10, floor (log10 (raw)));
  double f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

/* A tick label: as many decimals as the step needs, thousands as "k". */
static void
format_tick (char *buf, gsize len, double v, double step)
{
  double a = fabs (v);
  if (v == 0)
    g_strlcpy (buf, "0", len);
  else if (a >= 1e7 || a < 1e-3)
    g_snprintf (buf, len, "%g", v);
  else if (a >= 1e4 && step >= 100)
    {
      int dec = step >= 1000 ? 0 : (int) ceil (-log10 (step / 1000) - 1e-9);
      g_snprintf (buf, len, "%.*fk", dec, v / 1000);
    }
  else
    {
      int dec = step >= 1 ? 0 : (int) ceil (-log10 (step) - 1e-9);
      g_snprintf (buf, len, "%.*f", MIN (dec, 6), v);
    }
}

static char *
format_value (double v)
{
  if (isnan (v))
    return g_strdup ("nan");
  return g_strdup_printf ("%.4g", v);
}

static PangoFontDescription *
font_scaled (TwbPlot *p, double scale, gboolean bold)
{
  PangoContext *pc = gtk_widget_get_pango_context (GTK_WIDGET (p));
  PangoFontDescription *fd = pango_font_description_copy (pango_context_get_font_description (pc));
  int size = pango_font_description_get_size (fd);
  if (size <= 0)
    size = 10 * PANGO_SCALE;
  if (pango_font_description_get_size_is_absolute (fd))
    pango_font_description_set_absolute_size (fd, size * scale);
  else
    pango_font_description_set_size (fd, (int) (size * scale));
  if (bold)
    pango_font_description_set_weight (fd, PANGO_WEIGHT_BOLD);
  return fd;
}

void
twb_draw_text_size (PangoLayout *l, const char *s, double *w, double *h)
{
  pango_layout_set_text (l, s, -1);
  int iw, ih;
  pango_layout_get_pixel_size (l, &iw, &ih);
  if (w)
    *w = iw;
  if (h)
    *h = ih;
}

void
twb_draw_text_at (cairo_t *cr, PangoLayout *l, const char *s, double x, double y, double fx,
                  double fy)
{
  double w, h;
  twb_draw_text_size (l, s, &w, &h);
  cairo_move_to (cr, round (x - fx * w), round (y - fy * h));
  pango_cairo_show_layout (cr, l);
}

gboolean
twb_plot_curve_alive (TwbPlot *p, const Curve *c)
{
  return twb_metrics_has_series (p->metrics, c->series);
}

char *
twb_plot_curve_label (TwbPlot *p, const Curve *c, gboolean multi_run)
{
  const char *name = twb_metrics_series_name (p->metrics, c->series);
  if (!multi_run)
    return g_strdup (name);
  return g_strdup_printf ("%s · %s", twb_metrics_series_run (p->metrics, c->series), name);
}

static gboolean
curves_multi_run (TwbPlot *p)
{
  const char *run = NULL;
  for (guint i = 0; i < p->curves->len; i++)
    {
      const Curve *c = &g_array_index (p->curves, Curve, i);
      if (!twb_plot_curve_alive (p, c))
        continue;
      const char *r = twb_metrics_series_run (p->metrics, c->series);
      if (run != NULL && !g_str_equal (run, r))
        return TRUE;
      run = r;
    }
  return FALSE;
}

static TwbMetricsBucket *
bucket_buf (TwbPlot *p, guint n)
{
  if (p->buf_len < n)
    {
      g_free (p->buf);
      p->buf = g_new (TwbMetricsBucket, n);
      p->buf_len = n;
    }
  return p->buf;
}

/* y in view units (log10 on a log axis; NaN where it cannot be drawn). */
static double
to_view_y (TwbPlot *p, double y)
{
  if (!isfinite (y))
    return NAN;
  if (p->log_y)
    return y > 0 ? log10 (y) : NAN;
  return y;
}

double
twb_plot_px_of_x (const Geom *g, double x)
{
  return g->ax + (x - g->x0) / (g->x1 - g->x0) * g->aw;
}

double
twb_plot_x_of_px (const Geom *g, double px)
{
  return g->x0 + (px - g->ax) / g->aw * (g->x1 - g->x0);
}

/* View y to pixels, kept within a few areas of the plot (cairo dislikes
 * coordinates near 1e300). */
static double
py_of_vy (const Geom *g, double vy)
{
  double py = g->ay + g->ah - (vy - g->y0) / (g->y1 - g->y0) * g->ah;
  return CLAMP (py, g->ay - 4 * g->ah, g->ay + 5 * g->ah);
}

double
twb_plot_vy_of_py (const Geom *g, double py)
{
  return g->y0 + (g->ay + g->ah - py) / g->ah * (g->y1 - g->y0);
}

/* ---- Layout ----------------------------------------------------------------------- */

/* The data's x extent over the curves. */
gboolean
twb_plot_data_x_extent (TwbPlot *p, double *x0, double *x1)
{
  gboolean any = FALSE;
  for (guint i = 0; i < p->curves->len; i++)
    {
      const Curve *c = &g_array_index (p->curves, Curve, i);
      gsize n = twb_metrics_series_len (p->metrics, c->series);
      if (n == 0)
        continue;
      double a, b;
      twb_metrics_get_point (p->metrics, c->series, 0, &a, NULL);
      twb_metrics_get_point (p->metrics, c->series, n - 1, &b, NULL);
      *x0 = any ? MIN (*x0, a) : a;
      *x1 = any ? MAX (*x1, b) : b;
      any = TRUE;
    }
  return any;
}

/* The y extent (view units) of the raw curves over [x0, x1]: exact from
 * the series' ranges when everything is in view, else from the columns. */
static gboolean
data_y_extent (TwbPlot *p, double x0, double x1, gboolean all, double *y0, double *y1)
{
  gboolean any = FALSE;
  double lo = INFINITY, hi = -INFINITY;
  /* Columns for the extent only: 256 is finer than any tick spacing. */
  const guint n = 256;
  for (guint i = 0; i < p->curves->len; i++)
    {
      const Curve *c = &g_array_index (p->curves, Curve, i);
      if (all)
        {
          double a, b;
          if (!twb_metrics_range (p->metrics, c->series, p->log_y, NULL, NULL, &a, &b))
            continue;
          lo = MIN (lo, a);
          hi = MAX (hi, b);
          any = TRUE;
          continue;
        }
      if (twb_metrics_series_len (p->metrics, c->series) == 0)
        continue;
      TwbMetricsBucket *b = bucket_buf (p, n);
      twb_metrics_buckets (p->metrics, c->series, 0, x0, x1, b, n);
      for (guint k = 0; k < n; k++)
        {
          double cand[] = { b[k].min, b[k].max };
          for (guint j = 0; j < 2; j++)
            if (isfinite (cand[j]) && (!p->log_y || cand[j] > 0))
              {
                lo = MIN (lo, cand[j]);
                hi = MAX (hi, cand[j]);
                any = TRUE;
              }
        }
    }
  if (!any)
    return FALSE;
  *y0 = to_view_y (p, lo);
  *y1 = to_view_y (p, hi);
  return TRUE;
}

typedef struct
{
  double v;    /* view units */
  char text[32];
} Tick;

/* Ticks over [y0, y1] (view units): 1-2-5 steps; on a log axis decades,
 * or 1, 2, 5 per decade over less than two decades, or plain steps
 * within one decade. */
static guint
y_ticks (TwbPlot *p, const Geom *g, Tick *t, guint max)
{
  guint n = 0;
  double target = MAX (2, g->ah / Y_TICK_PX);
  if (p->log_y && g->y1 - g->y0 >= 2)
    {
      double step = MAX (1, round (twb_draw_nice_step (g->y1 - g->y0, target)));
      for (double e = ceil (g->y0 / step) * step; e <= g->y1 + 1e-9 && n < max; e += step)
        {
          t[n].v = e;
          format_tick (t[n].text, sizeof t[n].text, pow (10, e), pow (10, e));
          n++;
        }
      return n;
    }
  if (p->log_y && g->y1 - g->y0 >= 0.5)
    {
      for (double e = floor (g->y0); e <= ceil (g->y1) && n < max; e++)
        for (int k = 0; k < 3 && n < max; k++)
          {
            double v = (k == 0 ? 1 : k == 1 ? 2 : 5) * pow (10, e);
            double lv = log10 (v);
            if (lv < g->y0 - 1e-9 || lv > g->y1 + 1e-9)
              continue;
            t[n].v = lv;
            format_tick (t[n].text, sizeof t[n].text, v, v);
            n++;
          }
      return n;
    }
  double lo = p->log_y ? pow (10, g->y0) : g->y0;
  double hi = p->log_y ? pow (10, g->y1) : g->y1;
  double step = twb_draw_nice_step (hi - lo, target);
  for (double v = ceil (lo / step) * step; v <= hi + step * 1e-9 && n < max; v += step)
    {
      double vv = fabs (v) < step * 1e-9 ? 0 : v;
      if (p->log_y && vv <= 0)
        continue;
      t[n].v = p->log_y ? log10 (vv) : vv;
      format_tick (t[n].text, sizeof t[n].text, vv, step);
      n++;
    }
  return n;
}

static guint
x_ticks (TwbPlot *p, const Geom *g, Tick *t, guint max, double *step_out)
{
  double step = twb_draw_nice_step (g->x1 - g->x0, MAX (1, g->aw / X_TICK_PX));
  /* log2 x: whole powers of two, labelled with the power's value; every
   * one where 48 px apart leaves room for "1024" and its neighbours. */
  if (p->x_log2)
    step = g->aw / MAX (g->x1 - g->x0, 1e-9) >= 48 ? 1 : MAX (1, round (step));
  guint n = 0;
  for (double v = ceil (g->x0 / step) * step; v <= g->x1 + step * 1e-9 && n < max; v += step)
    {
      t[n].v = fabs (v) < step * 1e-9 ? 0 : v;
      if (p->x_log2)
        format_tick (t[n].text, sizeof t[n].text, pow (2, t[n].v), 1);
      else
        format_tick (t[n].text, sizeof t[n].text, t[n].v, step);
      n++;
    }
  *step_out = step;
  return n;
}

#define MAX_TICKS 64


static double
legend_layout (TwbPlot *p, PangoLayout *title_l, PangoLayout *small, double width,
               double height, gboolean multi_run, LegendItem *items, guint *n_items,
               guint *left_out, double *row_h)
{
  double tw = 0, th = 0, sh = 0;
  if (p->title && *p->title)
    twb_draw_text_size (title_l, p->title, &tw, &th);
  twb_draw_text_size (small, "Xg", NULL, &sh);
  *row_h = MAX (th, sh);
  /* Rows: one on a small plot, two where there is room. */
  guint max_rows = height < 220 ? 1 : 2;
  double x = tw > 0 ? PAD + tw + 3 * GAP : PAD;
  guint row = 0, n = 0, alive = 0, seen = 0;
  for (guint i = 0; i < p->curves->len; i++)
    alive += twb_plot_curve_alive (p, &g_array_index (p->curves, Curve, i));
  /* Room kept at the end of the last row for "+N". */
  double reserve;
  twb_draw_text_size (small, "+999", &reserve, NULL);
  reserve += 2 * GAP;
  gboolean full = FALSE;
  *left_out = 0;
  for (guint i = 0; i < p->curves->len; i++)
    {
      const Curve *c = &g_array_index (p->curves, Curve, i);
      if (!twb_plot_curve_alive (p, c))
        continue;
      seen++;
      if (full)
        {
          (*left_out)++;
          continue;
        }
      g_autofree char *label = twb_plot_curve_label (p, c, multi_run);
      double lw;
      twb_draw_text_size (small, label, &lw, NULL);
      double w = 16 + GAP + lw; /* swatch, gap, text */
      if (x + w > width - PAD && x > PAD)
        {
          row++;
          x = PAD;
        }
      double room = width - PAD - (row + 1 == max_rows && seen < alive ? reserve : 0);
      if (row >= max_rows || n >= TWB_PLOT_MAX_LEGEND || (row + 1 == max_rows && x + w > room))
        {
          full = TRUE;
          (*left_out)++;
          continue;
        }
      items[n++] = (LegendItem) { i, x, row, w };
      x += w + 3 * GAP;
    }
  *n_items = n;
  guint rows = n == 0 ? 1 : (guint) items[n - 1].row + 1;
  return PAD + rows * *row_h + GAP;
}

static void
compute_geom (TwbPlot *p, PangoLayout *small, double header_h, int width, int height, Geom *g)
{
  memset (g, 0, sizeof *g);
  g->width = width;
  g->height = height;
  g->multi_run = curves_multi_run (p);
  double th;
  twb_draw_text_size (small, "0123456789", NULL, &th);
  g->tick_h = th;
  g->header_h = header_h;
  g->ay = header_h;
  g->ah = MAX (10, height - header_h - th - GAP - PAD);

  double dx0 = 0, dx1 = 1;
  g->has_points = twb_plot_data_x_extent (p, &dx0, &dx1);
  if (p->zoomed)
    {
      g->x0 = p->zx0;
      g->x1 = p->zx1;
    }
  else if (g->has_points)
    {
      /* Ends on whole steps of about the tick spacing: a growing series
       * keeps the range (and the columns' cache) until it passes one. */
      if (dx1 <= dx0)
        {
          dx0 -= 1;
          dx1 += 1;
        }
      double step = twb_draw_nice_step (dx1 - dx0, MAX (1, (width - 60) / X_TICK_PX));
      if (p->x_log2)
        step = MAX (1, round (step));
      g->x0 = floor (dx0 / step) * step;
      g->x1 = ceil (dx1 / step) * step;
      if (g->x1 <= g->x0)
        g->x1 = g->x0 + step;
    }
  else
    {
      g->x0 = 0;
      g->x1 = 1;
    }

  double y0 = 0, y1 = 1;
  g->has_data = g->has_points && data_y_extent (p, g->x0, g->x1, !p->zoomed, &y0, &y1);
  if (p->y_fixed)
    {
      y0 = p->zy0;
      y1 = p->zy1;
    }
  else if (g->has_data)
    {
      if (y1 <= y0)
        {
          double d = p->log_y ? 0.5 : (fabs (y0) > 0 ? fabs (y0) * 0.1 : 1);
          y0 -= d;
          y1 += d;
        }
      /* 5 % headroom above and below: the extremes clear the frame. */
      double pad = (y1 - y0) * 0.05;
      y0 -= pad;
      y1 += pad;
    }
  g->y0 = y0;
  g->y1 = y1;

  /* The left margin fits the widest y tick label. */
  Tick t[MAX_TICKS];
  guint n = g->has_data ? y_ticks (p, g, t, MAX_TICKS) : 0;
  for (guint i = 0; i < n; i++)
    {
      double w;
      twb_draw_text_size (small, t[i].text, &w, NULL);
      g->yl_w = MAX (g->yl_w, w);
    }
  g->ax = PAD + MAX (g->yl_w, 12) + GAP;
  g->aw = MAX (10, width - g->ax - PAD - 4);
}


void
twb_plot_frame_init (TwbPlot *p, cairo_t *cr, int width, int height, Frame *f)
{
  f->title = pango_cairo_create_layout (cr);
  f->small = pango_cairo_create_layout (cr);
  g_autoptr (PangoFontDescription) bold = font_scaled (p, 1.0, TRUE);
  g_autoptr (PangoFontDescription) small = font_scaled (p, 0.85, FALSE);
  pango_layout_set_font_description (f->title, bold);
  pango_layout_set_font_description (f->small, small);
  gboolean multi = curves_multi_run (p);
  double header = legend_layout (p, f->title, f->small, width, height, multi, f->items,
                                 &f->n_items, &f->left_out, &f->row_h);
  compute_geom (p, f->small, header, width, height, &f->g);
}

void
twb_plot_frame_clear (Frame *f)
{
  g_clear_object (&f->title);
  g_clear_object (&f->small);
}

/* A frame for widget coordinates, measured on a scratch surface. */
void
twb_plot_widget_frame (TwbPlot *p, int width, int height, Frame *f)
{
  cairo_surface_t *s = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, 1, 1);
  cairo_t *cr = cairo_create (s);
  twb_plot_frame_init (p, cr, width, height, f);
  cairo_destroy (cr);
  cairo_surface_destroy (s);
}

/* ---- Drawing -------------------------------------------------------------------- */

static void
draw_axes (TwbPlot *p, cairo_t *cr, Frame *f, const GdkRGBA *fg)
{
  Geom *g = &f->g;
  Tick t[MAX_TICKS];
  cairo_set_line_width (cr, 1);
  /* Grid and y labels. */
  guint n = y_ticks (p, g, t, MAX_TICKS);
  for (guint i = 0; i < n; i++)
    {
      double y = round (py_of_vy (g, t[i].v)) + 0.5;
      set_source (cr, fg, 0.12);
      cairo_move_to (cr, g->ax, y);
      cairo_line_to (cr, g->ax + g->aw, y);
      cairo_stroke (cr);
      set_source (cr, fg, 0.75);
      twb_draw_text_at (cr, f->small, t[i].text, g->ax - GAP, y, 1, 0.5);
    }
  /* The x label at the right end of the tick row, "log" at the left. */
  double ty = g->ay + g->ah + GAP / 2;
  double left_limit = 0, right_limit = g->width;
  set_source (cr, fg, 0.6);
  if (p->log_y)
    {
      twb_draw_text_at (cr, f->small, "log", g->ax - GAP, ty, 1, 0);
      left_limit = g->ax - GAP;
    }
  if (p->x_label && *p->x_label)
    {
      double w;
      twb_draw_text_size (f->small, p->x_label, &w, NULL);
      twb_draw_text_at (cr, f->small, p->x_label, g->width - PAD, ty, 1, 0);
      right_limit = g->width - PAD - w - 2 * GAP;
    }
  double step;
  n = x_ticks (p, g, t, MAX_TICKS, &step);
  double last_right = left_limit;
  for (guint i = 0; i < n; i++)
    {
      double x = round (twb_plot_px_of_x (g, t[i].v)) + 0.5;
      set_source (cr, fg, 0.12);
      cairo_move_to (cr, x, g->ay);
      cairo_line_to (cr, x, g->ay + g->ah);
      cairo_stroke (cr);
      double w;
      twb_draw_text_size (f->small, t[i].text, &w, NULL);
      double l = MAX (x - w / 2, PAD), r = l + w;
      if (l < last_right + GAP || r > right_limit)
        continue; /* would collide with its neighbour or the labels */
      set_source (cr, fg, 0.75);
      twb_draw_text_at (cr, f->small, t[i].text, l, ty, 0, 0);
      last_right = r;
    }
  /* The frame's left and bottom sides. */
  set_source (cr, fg, 0.5);
  cairo_move_to (cr, g->ax + 0.5, g->ay);
  cairo_line_to (cr, g->ax + 0.5, g->ay + g->ah + 0.5);
  cairo_line_to (cr, g->ax + g->aw, g->ay + g->ah + 0.5);
  cairo_stroke (cr);
}

static void
draw_header (TwbPlot *p, cairo_t *cr, Frame *f, const GdkRGBA *fg)
{
  if (p->title && *p->title)
    {
      set_source (cr, fg, 0.9);
      twb_draw_text_at (cr, f->title, p->title, PAD, PAD, 0, 0);
    }
  for (guint i = 0; i < f->n_items; i++)
    {
      const LegendItem *it = &f->items[i];
      const Curve *c = &g_array_index (p->curves, Curve, it->curve);
      double y = PAD + it->row * f->row_h + f->row_h / 2;
      cairo_set_line_width (cr, 2);
      twb_plot_set_dash (cr, c->dash, 0.67);
      set_source (cr, &c->colour, 1);
      cairo_move_to (cr, it->x, round (y) + 0.5);
      cairo_line_to (cr, it->x + 16, round (y) + 0.5);
      cairo_stroke (cr);
      cairo_set_dash (cr, NULL, 0, 0);
      g_autofree char *label = twb_plot_curve_label (p, c, f->g.multi_run);
      set_source (cr, fg, 0.85);
      twb_draw_text_at (cr, f->small, label, it->x + 16 + GAP, y, 0, 0.5);
    }
  if (f->left_out > 0)
    {
      g_autofree char *more = g_strdup_printf ("+%u", f->left_out);
      set_source (cr, fg, 0.6);
      twb_draw_text_at (cr, f->small, more, f->g.width - PAD, PAD + f->row_h / 2, 1, 0.5);
    }
}

/* A dense curve (points in most columns) as filled bands: per column the
 * pixels from its min to its max, widened to the midpoints of the joins to
 * its neighbours (so a steep stretch stays connected) and by the line
 * width; a gap (NaN, or <= 0 on a log axis) ends a band.  One simple
 * polygon per band: cairo fills it in O(columns), where stroking the
 * per-column zigzag of a noisy curve costs it ~10 ms a curve. */
static void
draw_bands (TwbPlot *p, cairo_t *cr, const Geom *g, const TwbMetricsBucket *b, guint n,
            const Curve *c, double alpha, double width)
{
  g_autofree double *top = g_new (double, 2 * n + 1);
  double *bot = top + n;
  g_autofree guint *band = g_new (guint, n + 1);
  g_autofree gboolean *joined = g_new0 (gboolean, n + 1);
  double bottom = g->ay + g->ah + 2;
  /* The columns' extents, widened to the joins' midpoints. */
  guint prev = G_MAXUINT;
  for (guint j = 0; j < n; j++)
    {
      top[j] = bot[j] = NAN;
      if (!b[j].any)
        continue;
      double vmax = to_view_y (p, b[j].max), vmin = to_view_y (p, b[j].min);
      if (isfinite (vmax))
        {
          if (p->log_y && b[j].min <= 0)
            vmin = NAN; /* part of the column is at or below zero */
          top[j] = py_of_vy (g, vmax);
          bot[j] = isfinite (vmin) ? py_of_vy (g, vmin) : bottom;
        }
      if (prev != G_MAXUINT)
        {
          double vl = to_view_y (p, b[prev].last), vf = to_view_y (p, b[j].first);
          if (isfinite (vl) && isfinite (vf))
            {
              double mid = (py_of_vy (g, vl) + py_of_vy (g, vf)) / 2;
              top[j] = MIN (top[j], mid);
              bot[j] = MAX (bot[j], mid);
              top[prev] = MIN (top[prev], mid);
              bot[prev] = MAX (bot[prev], mid);
              joined[j] = TRUE;
            }
        }
      prev = j;
    }
  /* Bands: drawable columns each joined to the one before. */
  set_source (cr, &c->colour, alpha);
  double half = width / 2, colw = g->aw / n;
  guint len = 0;
  for (guint j = 0; j <= n; j++)
    {
      gboolean drawable = j < n && b[j].any && !isnan (top[j]);
      if (j < n && !b[j].any)
        continue;
      if (drawable && (len == 0 || joined[j]))
        {
          band[len++] = j;
          continue;
        }
      if (len > 0)
        {
          /* Upper edge left to right, lower edge back. */
          double xl = g->ax + (band[0] + 0.5) * colw - 0.5;
          double xr = g->ax + (band[len - 1] + 0.5) * colw + 0.5;
          cairo_move_to (cr, xl, top[band[0]] - half);
          for (guint i = 0; i < len; i++)
            cairo_line_to (cr, g->ax + (band[i] + 0.5) * colw, top[band[i]] - half);
          cairo_line_to (cr, xr, top[band[len - 1]] - half);
          cairo_line_to (cr, xr, bot[band[len - 1]] + half);
          for (guint i = len; i-- > 0;)
            cairo_line_to (cr, g->ax + (band[i] + 0.5) * colw, bot[band[i]] + half);
          cairo_line_to (cr, xl, bot[band[0]] + half);
          cairo_close_path (cr);
        }
      len = 0;
      if (drawable)
        band[len++] = j;
    }
  cairo_fill (cr);
}

/* One curve from its columns.  Sparse ones: a stroke per column over
 * min..max, joined first to last across columns, NaN (or <= 0 on a log
 * axis) lifting the pen, dots on lone points and on every point of very
 * sparse curves; dashes for dashed curves.  Dense ones: draw_bands. */
static void
draw_series (TwbPlot *p, cairo_t *cr, const Geom *g, const Curve *c, double smoothing,
             double alpha, double width)
{
  guint n = MAX (1, (guint) floor (g->aw));
  TwbMetricsBucket *b = bucket_buf (p, n);
  twb_metrics_buckets (p->metrics, c->series, smoothing, g->x0, g->x1, b, n);
  guint filled = 0;
  for (guint k = 0; k < n; k++)
    filled += b[k].any;
  /* Dense: points in over half the columns (dashes would not show there). */
  if (filled * 2 > n)
    {
      draw_bands (p, cr, g, b, n, c, alpha, width);
      return;
    }
  gboolean markers = filled * 6 <= n;
  g_autoptr (GArray) dots = g_array_new (FALSE, FALSE, sizeof (double) * 2);

  set_source (cr, &c->colour, alpha);
  cairo_set_line_width (cr, width);
  cairo_set_line_join (cr, CAIRO_LINE_JOIN_ROUND);
  twb_plot_set_dash (cr, c->dash, 1);
  gboolean pen = FALSE, lone = FALSE;
  double lone_x = 0, lone_y = 0;
  double bottom = g->ay + g->ah + 2;
#define END_SEGMENT()                                                                            \
  do                                                                                             \
    {                                                                                            \
      if (pen && lone)                                                                           \
        g_array_append_vals (dots, (double[]) { lone_x, lone_y }, 1);                            \
      pen = FALSE;                                                                               \
    }                                                                                            \
  while (0)
  for (guint k = 0; k < n; k++)
    {
      const TwbMetricsBucket *bk = &b[k];
      if (!bk->any)
        continue;
      double px = g->ax + (k + 0.5) * g->aw / n;
      double vf = to_view_y (p, bk->first), vl = to_view_y (p, bk->last);
      double vmin = to_view_y (p, bk->min), vmax = to_view_y (p, bk->max);
      if (p->log_y && isfinite (bk->min) && bk->min <= 0 && isfinite (vmax))
        vmin = NAN; /* part of the column is at or below zero */
      if (isfinite (vf))
        {
          double y = py_of_vy (g, vf);
          if (pen)
            {
              cairo_line_to (cr, px, y);
              lone = FALSE;
            }
          else
            {
              cairo_move_to (cr, px, y);
              pen = lone = TRUE;
              lone_x = px;
              lone_y = y;
            }
        }
      else
        END_SEGMENT ();
      if (isfinite (vmax))
        {
          double ymax = py_of_vy (g, vmax);
          double ymin = isfinite (vmin) ? py_of_vy (g, vmin) : bottom;
          if (ymin - ymax >= 0.5)
            {
              if (pen)
                cairo_line_to (cr, px, ymin);
              else
                cairo_move_to (cr, px, ymin);
              cairo_line_to (cr, px, ymax);
              pen = TRUE;
              lone = FALSE;
            }
        }
      if (isfinite (vl))
        {
          double y = py_of_vy (g, vl);
          if (pen)
            cairo_line_to (cr, px, y);
          else
            {
              cairo_move_to (cr, px, y);
              pen = lone = TRUE;
              lone_x = px;
              lone_y = y;
            }
          if (markers)
            g_array_append_vals (dots, (double[]) { px, y }, 1);
        }
      else
        END_SEGMENT ();
    }
  END_SEGMENT ();
#undef END_SEGMENT
  cairo_stroke (cr);
  cairo_set_dash (cr, NULL, 0, 0);
  for (guint i = 0; i < dots->len; i++)
    {
      const double *d = (const double *) (const void *) dots->data + 2 * i;
      cairo_new_sub_path (cr);
      cairo_arc (cr, d[0], d[1], width + 1, 0, 2 * G_PI);
    }
  cairo_fill (cr);
}


gboolean
twb_plot_read_at (TwbPlot *p, const Geom *g, double px, double *snap_x, Reading *r)
{
  if (!g->has_points || px < g->ax - 1 || px > g->ax + g->aw + 1)
    return FALSE;
  double xd = twb_plot_x_of_px (g, px);
  /* Snap to the point nearest the pointer over all curves. */
  gboolean any = FALSE;
  double best = INFINITY;
  for (guint i = 0; i < p->curves->len; i++)
    {
      const Curve *c = &g_array_index (p->curves, Curve, i);
      gssize k = twb_metrics_nearest (p->metrics, c->series, xd);
      if (k < 0)
        continue;
      double x;
      twb_metrics_get_point (p->metrics, c->series, k, &x, NULL);
      if (fabs (x - xd) < fabs (best - xd))
        best = x;
      any = TRUE;
    }
  if (!any)
    return FALSE;
  *snap_x = best;
  for (guint i = 0; i < p->curves->len; i++)
    {
      const Curve *c = &g_array_index (p->curves, Curve, i);
      gssize k = twb_metrics_nearest (p->metrics, c->series, best);
      r[i] = (Reading) { i, k >= 0, NAN, NAN, NAN };
      if (k < 0)
        continue;
      twb_metrics_get_point (p->metrics, c->series, k, &r[i].x, &r[i].raw);
      r[i].y = p->smoothing > 0 ? twb_metrics_smoothed (p->metrics, c->series, p->smoothing, k)
                                : r[i].raw;
    }
  return TRUE;
}

char *
twb_plot_reading_value (TwbPlot *p, const Reading *r)
{
  g_autofree char *v = format_value (r->y);
  if (p->smoothing <= 0)
    return g_steal_pointer (&v);
  g_autofree char *raw = format_value (r->raw);
  return g_strdup_printf ("%s (%s)", v, raw);
}

char *
twb_plot_reading_x (TwbPlot *p, double x)
{
  return g_strdup_printf ("%s %.6g", p->x_label && *p->x_label ? p->x_label : "x",
                          p->x_log2 ? pow (2, x) : x);
}

static void
draw_hover (TwbPlot *p, cairo_t *cr, Frame *f, const GdkRGBA *fg)
{
  Geom *g = &f->g;
  g_autofree Reading *r = g_new0 (Reading, p->curves->len + 1);
  double sx;
  if (!twb_plot_read_at (p, g, p->hover_x, &sx, r))
    return;
  double lx = round (twb_plot_px_of_x (g, sx)) + 0.5;
  set_source (cr, fg, 0.45);
  cairo_set_line_width (cr, 1);
  cairo_move_to (cr, lx, g->ay);
  cairo_line_to (cr, lx, g->ay + g->ah);
  cairo_stroke (cr);

  /* The box: the x, then a line per curve with its colour. */
  g_autofree char *head = twb_plot_reading_x (p, sx);
  double bw, lh;
  twb_draw_text_size (f->small, head, &bw, &lh);
  guint lines = 1;
  for (guint i = 0; i < p->curves->len; i++)
    {
      const Curve *c = &g_array_index (p->curves, Curve, i);
      if (!r[i].have || !twb_plot_curve_alive (p, c))
        continue;
      double vy = to_view_y (p, r[i].y);
      if (isfinite (vy))
        {
          cairo_new_sub_path (cr);
          cairo_arc (cr, twb_plot_px_of_x (g, r[i].x), py_of_vy (g, vy), 3, 0, 2 * G_PI);
          set_source (cr, &c->colour, 1);
          cairo_fill (cr);
        }
      g_autofree char *label = twb_plot_curve_label (p, c, g->multi_run);
      g_autofree char *value = twb_plot_reading_value (p, &r[i]);
      g_autofree char *line = g_strdup_printf ("%s %s", label, value);
      double w;
      twb_draw_text_size (f->small, line, &w, NULL);
      bw = MAX (bw, 10 + GAP + w);
      lines++;
    }
  bw += 2 * GAP;
  double bh = lines * lh + 2 * GAP;
  double bx = p->hover_x + 12;
  if (bx + bw > g->width - 2)
    bx = p->hover_x - 12 - bw;
  bx = CLAMP (bx, 2, MAX (2, g->width - bw - 2));
  double by = CLAMP (p->hover_y - bh / 2, 2, MAX (2, g->height - bh - 2));
  /* A background that contrasts with the text colour, whatever the theme. */
  double lum = 0.2126 * fg->red + 0.7152 * fg->green + 0.0722 * fg->blue;
  cairo_set_source_rgba (cr, lum > 0.5 ? 0.12 : 1, lum > 0.5 ? 0.12 : 1, lum > 0.5 ? 0.12 : 1,
                         0.92);
  cairo_rectangle (cr, bx, by, bw, bh);
  cairo_fill_preserve (cr);
  set_source (cr, fg, 0.3);
  cairo_set_line_width (cr, 1);
  cairo_stroke (cr);
  double y = by + GAP;
  set_source (cr, fg, 1);
  twb_draw_text_at (cr, f->small, head, bx + GAP, y, 0, 0);
  for (guint i = 0; i < p->curves->len; i++)
    {
      const Curve *c = &g_array_index (p->curves, Curve, i);
      if (!r[i].have || !twb_plot_curve_alive (p, c))
        continue;
      y += lh;
      set_source (cr, &c->colour, 1);
      cairo_rectangle (cr, bx + GAP, y + lh / 2 - 3, 10, 6);
      cairo_fill (cr);
      g_autofree char *label = twb_plot_curve_label (p, c, g->multi_run);
      g_autofree char *value = twb_plot_reading_value (p, &r[i]);
      g_autofree char *line = g_strdup_printf ("%s %s", label, value);
      set_source (cr, fg, 1);
      twb_draw_text_at (cr, f->small, line, bx + 2 * GAP + 10, y, 0, 0);
    }
}

void
twb_plot_draw_frame (TwbPlot *p, cairo_t *cr, Frame *f, gboolean interactive)
{
  GdkRGBA fg;
  twb_plot_fg_colour (p, &fg);
  Geom *g = &f->g;
  draw_header (p, cr, f, &fg);
  if (!g->has_data)
    {
      const char *what = !g->has_points ? "No data yet"
                         : p->zoomed     ? "No points here (double-click to see all)"
                         : p->log_y      ? "No positive values for a log axis"
                                         : "No data yet";
      set_source (cr, &fg, 0.45);
      twb_draw_text_at (cr, f->small, what, g->ax + g->aw / 2, g->ay + g->ah / 2, 0.5, 0.5);
      return;
    }
  draw_axes (p, cr, f, &fg);
  cairo_save (cr);
  cairo_rectangle (cr, g->ax, g->ay - 2, g->aw + 4, g->ah + 4);
  cairo_clip (cr);
  for (guint i = 0; i < p->curves->len; i++)
    {
      const Curve *c = &g_array_index (p->curves, Curve, i);
      if (!twb_plot_curve_alive (p, c) || twb_metrics_series_len (p->metrics, c->series) == 0)
        continue;
      /* The raw curve faint behind its smoothed one, as TensorBoard draws. */
      if (p->smoothing > 0)
        draw_series (p, cr, g, c, 0, 0.25, 1);
      draw_series (p, cr, g, c, p->smoothing, 1, 1.5);
    }
  cairo_restore (cr);
  if (interactive && p->dragging)
    {
      double x0 = CLAMP (MIN (p->drag_x0, p->drag_x1), g->ax, g->ax + g->aw);
      double x1 = CLAMP (MAX (p->drag_x0, p->drag_x1), g->ax, g->ax + g->aw);
      double y0 = CLAMP (MIN (p->drag_y0, p->drag_y1), g->ay, g->ay + g->ah);
      double y1 = CLAMP (MAX (p->drag_y0, p->drag_y1), g->ay, g->ay + g->ah);
      if (fabs (p->drag_y1 - p->drag_y0) < DRAG_MIN_PX)
        {
          y0 = g->ay;
          y1 = g->ay + g->ah;
        }
      set_source (cr, &fg, 0.12);
      cairo_rectangle (cr, x0, y0, x1 - x0, y1 - y0);
      cairo_fill_preserve (cr);
      set_source (cr, &fg, 0.5);
      cairo_set_line_width (cr, 1);
      cairo_stroke (cr);
    }
  else if (interactive && p->hover)
    draw_hover (p, cr, f, &fg);
}

void
twb_plot_draw (TwbPlot *p, cairo_t *cr, int width, int height)
{
  g_return_if_fail (TWB_IS_PLOT (p));
  if (width <= 0 || height <= 0)
    return;
  Frame f;
  twb_plot_frame_init (p, cr, width, height, &f);
  twb_plot_draw_frame (p, cr, &f, FALSE);
  twb_plot_frame_clear (&f);
}

void
twb_plot_snapshot (GtkWidget *widget, GtkSnapshot *snapshot)
{
  TwbPlot *p = TWB_PLOT (widget);
  int w = gtk_widget_get_width (widget), h = gtk_widget_get_height (widget);
  if (w <= 0 || h <= 0)
    return;
  cairo_t *cr = gtk_snapshot_append_cairo (snapshot, &GRAPHENE_RECT_INIT (0, 0, w, h));
  Frame f;
  twb_plot_frame_init (p, cr, w, h, &f);
  twb_plot_draw_frame (p, cr, &f, TRUE);
  twb_plot_frame_clear (&f);
  cairo_destroy (cr);
}

void
twb_plot_measure (GtkWidget *widget, GtkOrientation orientation, int for_size, int *minimum,
                  int *natural, int *minimum_baseline, int *natural_baseline)
{
  /* Legible down to 240 × 160 (three y ticks, two x ticks, a legend row). */
  gboolean h = orientation == GTK_ORIENTATION_HORIZONTAL;
  *minimum = h ? 240 : 160;
  *natural = h ? 480 : 240;
}

