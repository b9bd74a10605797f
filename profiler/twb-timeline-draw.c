/* twb-timeline-draw.c — the timeline's row layout and one frame: ruler,
 * gutter, slices with level of detail (runs of slices narrower than a
 * pixel merge into one bar per pixel column, found by binary search on
 * each lane depth's index, so a frame costs about columns × rows whatever
 * the number of slices), instants, counter area charts (min / max per
 * column), flow arrows and the selected range. */
#define G_LOG_DOMAIN "twb-timeline"

#include "profiler/twb-timeline-private.h"
#include "profiler/ranks.h"
#include "profiler/twb-widget-colour.h"

#include <math.h>
#include <string.h>

/* Slice colours: mid-light tones with dark text on them, readable on the
 * light and the dark theme alike (Google's "tonal 200" family, roughly). */
static const guint32 palette[TL_N_COLOURS] = {
  0x8ab4f8, 0x81c995, 0xfdd663, 0xf28b82, 0xc58af9, 0x78d9ec,
  0xfcad70, 0xff8bcb, 0xa8dab5, 0xaecbfa, 0xe6c9a8, 0xd7aefb,
};
/* Rounded (corner pixels cut) from this width on: on fewer pixels the
 * cut corners read as noise. */
#define ROUNDED_MIN_PX 12
/* A cut name fades out over its last pixels. */
#define FADE_PX 10.0
/* Instants closer than this draw as one mark (a mark is 5 px wide). */
#define INSTANT_GAP_PX 5
/* Search misses are drawn at this opacity. */
#define DIM_ALPHA 0.22
/* The accent of the range band, highlight outlines and selected flows (GNOME blue, orange). */
static const GdkRGBA accent = { 0.208, 0.518, 0.894, 1 };
static const GdkRGBA hl_colour = { 1.0, 0.47, 0.0, 1 };

/* ---- layout ---------------------------------------------------------- */

static void
add_row (TwbTimeline *tl, TlRowKind kind, guint group, guint process, guint item, double h)
{
  TlRow r = { kind, group, process, item, tl->content_h, h };
  g_array_append_val (tl->rows, r);
  tl->content_h += h;
}

void
tl_layout (TwbTimeline *tl)
{
  g_array_set_size (tl->rows, 0);
  tl->content_h = 0;
  for (guint gi = 0; gi < tl->groups->len; gi++)
    {
      TlGroup *g = g_ptr_array_index (tl->groups, gi);
      add_row (tl, TL_ROW_GROUP, gi, 0, 0, TL_GROUP_H);
      for (guint pi = 0; pi < g->processes->len; pi++)
        {
          TlProcess *pr = &g_array_index (g->processes, TlProcess, pi);
          /* A process named in the metadata that recorded nothing: no row. */
          if (pr->lanes->len == 0 && pr->counters->len == 0)
            continue;
          add_row (tl, TL_ROW_PROCESS, gi, pi, 0, TL_PROC_H);
          if (pr->collapsed)
            {
              for (guint k = 0; k < pr->lanes->len; k++)
                g->lane_row[g_array_index (pr->lanes, guint, k)] = (int) tl->rows->len;
              add_row (tl, TL_ROW_SUMMARY, gi, pi, 0, TL_ROW_H);
              continue;
            }
          for (guint k = 0; k < pr->lanes->len; k++)
            {
              guint lane = g_array_index (pr->lanes, guint, k);
              g->lane_row[lane] = (int) tl->rows->len;
              add_row (tl, TL_ROW_LANE, gi, pi, lane, MAX (g->lanes[lane].n_depths, 1) * TL_ROW_H);
            }
          for (guint k = 0; k < pr->counters->len; k++)
            add_row (tl, TL_ROW_COUNTER, gi, pi, g_array_index (pr->counters, guint, k),
                     TL_COUNTER_H);
        }
    }
}

int
tl_row_at (TwbTimeline *tl, double y)
{
  guint lo = 0, hi = tl->rows->len;
  while (lo < hi)
    {
      guint mid = lo + (hi - lo) / 2;
      const TlRow *r = &g_array_index (tl->rows, TlRow, mid);
      if (y < r->y)
        hi = mid;
      else if (y >= r->y + r->h)
        lo = mid + 1;
      else
        return (int) mid;
    }
  return -1;
}

char *
tl_format_ns (gint64 ns)
{
  double a = fabs ((double) ns);
  if (a < 1e3)
    return g_strdup_printf ("%" G_GINT64_FORMAT " ns", ns);
  if (a < 1e6)
    return g_strdup_printf ("%.3g µs", ns / 1e3);
  if (a < 1e9)
    return g_strdup_printf ("%.3g ms", ns / 1e6);
  return g_strdup_printf ("%.4g s", ns / 1e9);
}

/* ---- one frame ---------------------------------------------------------- */

typedef struct
{
  float x, y, w, h;
} Rect;

typedef struct
{
  float x, y, w;
  const char *name;
  gboolean dim;
  guint colour; /* the slice's palette index */
} Label;

typedef struct
{
  TwbTimeline *tl;
  cairo_t *cr;
  int w, h;
  double x0, tw, scale; /* the track area's left, width; pixels per ns */
  GdkRGBA fg;
  gboolean searching, highlighting;
  /* The track area's slices and counter areas, written as pixels (device
   * pixels: scale per widget pixel): cairo takes ~0.4 µs a box even
   * pixel-aligned, 15,000 boxes a frame at whole range; writing them is
   * ~50× faster, and the raster is painted once. */
  cairo_surface_t *raster;
  guint32 *px;
  int stride, rw, rh;
  double rscale;
  guint32 premul[TL_N_COLOURS * 2]; /* palette, normal then dimmed */
  gboolean vector; /* drawing to a vector surface: boxes as cairo rectangles, no raster */
  GArray *labels;  /* Label */
  GArray *hl;      /* Rect */
  gboolean has_sel_rect;
  Rect sel_rect;
  PangoLayout *text;
} Frame;

static void
set_fg (Frame *f, double alpha)
{
  cairo_set_source_rgba (f->cr, f->fg.red, f->fg.green, f->fg.blue, f->fg.alpha * alpha);
}

static void
set_rgba (cairo_t *cr, const GdkRGBA *c, double alpha)
{
  cairo_set_source_rgba (cr, c->red, c->green, c->blue, c->alpha * alpha);
}

static guint
colour_of (const char *name)
{
  return tl_colour_of (name);
}

static PangoFontDescription *
small_font (TwbTimeline *tl)
{
  if (!tl->small_font)
    {
      PangoContext *pc = gtk_widget_get_pango_context (GTK_WIDGET (tl));
      PangoFontDescription *fd = pango_font_description_copy (pango_context_get_font_description (pc));
      int size = pango_font_description_get_size (fd);
      /* 85 % of the widget's font: slice names fit an 18 px row. */
      if (pango_font_description_get_size_is_absolute (fd))
        pango_font_description_set_absolute_size (fd, size * 0.85);
      else
        pango_font_description_set_size (fd, (int) (size * 0.85));
      tl->small_font = fd;
    }
  return tl->small_font;
}

static void
label_free (gpointer p)
{
  TlLabel *l = p;
  g_object_unref (l->layout);
  g_free (l);
}

void
tl_labels_clear (TwbTimeline *tl)
{
  if (tl->labels)
    g_hash_table_remove_all (tl->labels);
}

/* A laid-out name, cached by its (interned) pointer. */
static TlLabel *
label_get (TwbTimeline *tl, const char *name)
{
  if (!tl->labels)
    tl->labels = g_hash_table_new_full (NULL, NULL, NULL, label_free);
  TlLabel *l = g_hash_table_lookup (tl->labels, name);
  if (l)
    return l;
  l = g_new0 (TlLabel, 1);
  l->layout = gtk_widget_create_pango_layout (GTK_WIDGET (tl), name);
  pango_layout_set_font_description (l->layout, small_font (tl));
  pango_layout_get_pixel_size (l->layout, &l->w, &l->h);
  g_hash_table_insert (tl->labels, (gpointer) name, l);
  return l;
}

/* View time to x in this frame (its own width, not the allocation's). */
static double
fx (const Frame *f, gint64 t)
{
  return f->x0 + (double) (t - f->tl->v0) * f->scale;
}

static double
clampx (const Frame *f, double x)
{
  return CLAMP (x, f->x0 - 4, f->w + 4.0);
}

static void
push_rect (GArray *a, double x, double y, double w, double h)
{
  Rect r = { (float) x, (float) y, (float) w, (float) h };
  g_array_append_val (a, r);
}

static guint32
premultiply (double r, double g, double b, double a)
{
  guint A = (guint) (a * 255 + 0.5);
  return (A << 24) | ((guint) (r * A + 0.5) << 16) | ((guint) (g * A + 0.5) << 8) | (guint) (b * A + 0.5);
}

static guint32
palette_premul (guint c, double alpha)
{
  guint32 v = palette[c];
  return premultiply (((v >> 16) & 0xff) / 255.0, ((v >> 8) & 0xff) / 255.0, (v & 0xff) / 255.0, alpha);
}

/* Fills widget-pixel box (x, y, w, h) of the track area with colour
 * (replacing what is there; slices on one row do not overlap, rows do not
 * overlap each other); round cuts the corner pixels. */
static void
raster_box (Frame *f, double x, double y, double w, double h, guint32 colour, gboolean round)
{
  if (f->vector)
    {
      /* An export to PDF, SVG or PostScript: rectangles stay shapes. */
      double a = (colour >> 24) / 255.0;
      if (a <= 0)
        return;
      cairo_set_source_rgba (f->cr, ((colour >> 16) & 0xff) / 255.0 / a, ((colour >> 8) & 0xff) / 255.0 / a,
                             (colour & 0xff) / 255.0 / a, a);
      cairo_rectangle (f->cr, x, y, MAX (w, 1), MAX (h, 1));
      cairo_fill (f->cr);
      return;
    }
  double s = f->rscale;
  int xa = (int) floor ((x - f->x0) * s + 0.5), xb = (int) floor ((x + w - f->x0) * s + 0.5);
  int ya = (int) floor ((y - TL_RULER_H) * s + 0.5), yb = (int) floor ((y + h - TL_RULER_H) * s + 0.5);
  if (xb <= xa && w > 0)
    xb = xa + 1;
  if (yb <= ya && h > 0)
    yb = ya + 1;
  round = round && xb - xa > 4 && yb - ya > 4;
  int cy0 = ya, cy1 = yb - 1;
  xa = MAX (xa, 0);
  ya = MAX (ya, 0);
  xb = MIN (xb, f->rw);
  yb = MIN (yb, f->rh);
  for (int yy = ya; yy < yb; yy++)
    {
      guint32 *row = f->px + (gsize) yy * f->stride;
      int a = xa, b = xb;
      if (round && (yy == cy0 || yy == cy1))
        {
          a++;
          b--;
        }
      for (int xx = a; xx < b; xx++)
        row[xx] = colour;
    }
}

/* One depth of a lane at screen y; labels and the selection only on real
 * lane rows (not a collapsed process's summary). */
static void
draw_depth (Frame *f, guint gi, const TlGroup *g, const TlLane *l, guint depth, double y,
            gboolean lane_row)
{
  TwbTimeline *tl = f->tl;
  const TlDepth *d = &l->depths[depth];
  gint64 t0 = tl->v0 + tl_shift (tl, gi), t1 = tl->v1 + tl_shift (tl, gi);
  double x0 = f->x0, scale = f->scale, rh = TL_ROW_H - 2;
  y += 1;
  guint i = tl_lower_bound (d->maxend, d->n, t0 + 1); /* the first ending after t0 */
  while (i < d->n && d->start[i] < t1)
    {
      double xs = x0 + (double) (d->start[i] - t0) * scale;
      double xe = x0 + (double) (d->end[i] - t0) * scale;
      if (xe - xs >= 1.0)
        {
          const tw_slice *s = tw_trace_lane_slice (g->trace, l->lane, d->idx[i]);
          gboolean dim = f->searching && d->match[i + 1] == d->match[i];
          guint c = d->colour[i] + (dim ? TL_N_COLOURS : 0);
          /* On whole pixels: cairo fills pixel-aligned boxes without
           * antialiasing, several times faster than fractional ones. */
          double a = round (clampx (f, xs)), b = MAX (round (clampx (f, xe)), a + 1);
          /* A pixel's gap between neighbours once there is room for it. */
          double w = b - a >= 3 ? b - a - 1 : b - a;
          raster_box (f, a, y, w, rh, f->premul[c], w >= ROUNDED_MIN_PX);
          if (lane_row)
            {
              if (f->highlighting && d->hl[i + 1] != d->hl[i])
                push_rect (f->hl, a, y, w, rh);
              if (tl_is_selected (tl, gi, l->lane, d->idx[i]))
                {
                  f->has_sel_rect = TRUE;
                  f->sel_rect = (Rect) { a, y, w, rh };
                }
              double va = MAX (a, x0), vb = MIN (a + w, (double) f->w);
              if (vb - va >= TL_LABEL_MIN_PX && s->name)
                {
                  Label lb = { va, y, vb - va, s->name, dim, d->colour[i] };
                  g_array_append_val (f->labels, lb);
                }
            }
          i++;
          continue;
        }
      /* Narrow: every slice starting in this pixel column becomes one bar. */
      double col = floor (xs);
      gint64 tcol = t0 + (gint64) ceil ((col + 1 - x0) / scale);
      guint j = tl_gallop (d->start, d->n, i, tcol);
      if (j <= i)
        j = i + 1;
      /* The column's last slice may be wide: it is drawn on its own next. */
      if (j - 1 > i && (double) (d->end[j - 1] - d->start[j - 1]) * scale >= 1.0)
        j--;
      gboolean dim = f->searching && d->match[j] == d->match[i];
      guint c = d->colour[i] + (dim ? TL_N_COLOURS : 0);
      raster_box (f, clampx (f, col), y, 1, rh, f->premul[c], FALSE);
      if (lane_row && f->highlighting && d->hl[j] != d->hl[i])
        push_rect (f->hl, clampx (f, col), y, 1, rh);
      if (lane_row && tl->has_sel && tl->sel.group == gi && tl->sel.lane == l->lane)
        for (guint k = i; k < j; k++)
          if (d->idx[k] == tl->sel.index)
            {
              f->has_sel_rect = TRUE;
              f->sel_rect = (Rect) { clampx (f, col), y, 1, rh };
            }
      i = j;
    }
}

/* Instants: a small mark at the top of the lane, one per few pixels holding any. */
static void
draw_instants (Frame *f, guint gi, const TlLane *l, double y)
{
  TwbTimeline *tl = f->tl;
  if (l->n_instants == 0)
    return;
  gint64 t0 = tl->v0 + tl_shift (tl, gi), t1 = tl->v1 + tl_shift (tl, gi);
  guint i = tl_lower_bound (l->instants, l->n_instants, t0);
  cairo_t *cr = f->cr;
  set_fg (f, 0.55);
  while (i < l->n_instants && l->instants[i] <= t1)
    {
      double x = f->x0 + (double) (l->instants[i] - t0) * f->scale;
      double col = floor (x);
      cairo_move_to (cr, col + 0.5 - 2.5, y);
      cairo_line_to (cr, col + 0.5 + 2.5, y);
      cairo_line_to (cr, col + 0.5, y + 4);
      cairo_close_path (cr);
      /* The next one at least a mark's width on: a run of instants is one mark. */
      gint64 tcol = t0 + (gint64) ceil ((col + INSTANT_GAP_PX - f->x0) / f->scale);
      guint j = i + tl_lower_bound (l->instants + i, l->n_instants - i, tcol);
      i = MAX (j, i + 1);
    }
  cairo_fill (cr);
}

/* A counter's area: per pixel column the maximum (the value entering the
 * column and every sample in it) filled from the baseline, and a line
 * over the column's range (its minimum to its maximum, joined to the
 * previous column's value). */
static void
draw_counter (Frame *f, guint gi, const TlGroup *g, const TlCounter *c, double y, double h)
{
  TwbTimeline *tl = f->tl;
  if (c->n == 0 || !isfinite (c->vmax))
    return;
  gint64 t0 = tl->v0 + tl_shift (tl, gi);
  double lo = MIN (c->vmin, 0.0), hi = c->vmax;
  double span = hi - lo > 0 ? hi - lo : 1.0;
  double top = y + 4, bottom = y + h - 2;
  int cols = (int) ceil (f->tw);
  /* The value holds from one sample to the next, the last one to the trace's end. */
  double end_x = f->x0 + (double) (g->end - t0) * f->scale;
  guint i = tl_lower_bound (c->t, c->n, t0);
  double carry = i > 0 ? c->v[i - 1] : NAN, prev_y = NAN;
  guint col = colour_of (c->name);
  guint32 area = palette_premul (col, 0.5), line = palette_premul (col, 1.0);
  for (int k = 0; k < cols; k++)
    {
      double xk = f->x0 + k;
      if (xk >= end_x)
        break;
      gint64 tend = t0 + (gint64) ceil ((k + 1) / f->scale);
      double mx = carry, mn = carry;
      while (i < c->n && c->t[i] < tend)
        {
          if (isfinite (c->v[i]))
            {
              mx = isnan (mx) || c->v[i] > mx ? c->v[i] : mx;
              mn = isnan (mn) || c->v[i] < mn ? c->v[i] : mn;
            }
          carry = c->v[i];
          i++;
        }
      if (isnan (mx))
        {
          prev_y = NAN;
          continue;
        }
      double ytop = round (bottom - (mx - lo) / span * (bottom - top));
      double ymin = round (bottom - (mn - lo) / span * (bottom - top));
      raster_box (f, xk, ytop, 1, bottom - ytop, area, FALSE);
      double la = ytop, lb = ymin;
      if (!isnan (prev_y))
        {
          la = MIN (la, prev_y);
          lb = MAX (lb, prev_y);
        }
      raster_box (f, xk, la, 1, MAX (lb - la, 1), line, FALSE);
      double ycarry = isnan (carry) ? NAN : round (bottom - (carry - lo) / span * (bottom - top));
      prev_y = ycarry;
    }
}

static void
draw_labels (Frame *f)
{
  cairo_t *cr = f->cr;
  for (guint i = 0; i < f->labels->len; i++)
    {
      const Label *lb = &g_array_index (f->labels, Label, i);
      TlLabel *l = label_get (f->tl, lb->name);
      double ty = lb->y + (TL_ROW_H - 2 - l->h) / 2.0;
      /* Text on the light palette: near black, fainter on a search miss. */
      cairo_set_source_rgba (cr, 0.08, 0.08, 0.1, lb->dim ? 0.4 : 0.9);
      if (l->w + 6 <= lb->w)
        {
          cairo_move_to (cr, lb->x + (lb->w - l->w) / 2.0, ty);
          pango_cairo_show_layout (cr, l->layout);
        }
      else
        {
          cairo_save (cr);
          cairo_rectangle (cr, lb->x + 2, lb->y, lb->w - 4, TL_ROW_H - 2);
          cairo_clip (cr);
          cairo_move_to (cr, lb->x + 3, ty);
          pango_cairo_show_layout (cr, l->layout);
          cairo_restore (cr);
          /* The cut end fades into the slice's colour (an opaque one: a
           * dimmed slice's faint text is left cut). */
          if (!lb->dim)
            {
              double x1 = lb->x + lb->w - 2, x0 = x1 - FADE_PX;
              cairo_pattern_t *fade = cairo_pattern_create_linear (x0, 0, x1, 0);
              guint32 v = palette[lb->colour];
              double r = ((v >> 16) & 0xff) / 255.0, g = ((v >> 8) & 0xff) / 255.0, b = (v & 0xff) / 255.0;
              cairo_pattern_add_color_stop_rgba (fade, 0, r, g, b, 0);
              cairo_pattern_add_color_stop_rgba (fade, 1, r, g, b, 1);
              cairo_set_source (cr, fade);
              cairo_rectangle (cr, x0, lb->y, FADE_PX, TL_ROW_H - 2);
              cairo_fill (cr);
              cairo_pattern_destroy (fade);
            }
        }
    }
}

static double
screen_y (TwbTimeline *tl, const TlRow *r)
{
  return TL_RULER_H + r->y - tl->scroll_y;
}

/* The centre of a flow's end slice on screen; FALSE when unknown. */
static gboolean
flow_point (Frame *f, guint gi, const TlGroup *g, guint lane, guint index, double *x, double *y)
{
  if (index == G_MAXUINT || lane >= g->n_lanes)
    return FALSE;
  int r = g->lane_row[lane];
  if (r < 0)
    return FALSE;
  const TlRow *row = &g_array_index (f->tl->rows, TlRow, r);
  const tw_slice *s = tw_trace_lane_slice (g->trace, lane, index);
  *y = screen_y (f->tl, row) + (row->kind == TL_ROW_LANE ? s->depth * TL_ROW_H : 0) + TL_ROW_H / 2;
  gint64 t0 = f->tl->v0 + tl_shift (f->tl, gi);
  *x = clampx (f, f->x0 + (double) (s->start_ns - t0) * f->scale);
  return TRUE;
}

static void
draw_flow (Frame *f, double xa, double ya, double xb, double yb, gboolean selected)
{
  cairo_t *cr = f->cr;
  /* Level at both ends, bending over half the distance (a little at least, at most 80 px). */
  double dx = CLAMP (fabs (xb - xa) / 2, 6, 80);
  cairo_move_to (cr, xa, ya);
  cairo_curve_to (cr, xa + dx, ya, xb - dx, yb, xb, yb);
  if (selected)
    set_rgba (cr, &accent, 1.0);
  else
    set_fg (f, 0.4);
  cairo_set_line_width (cr, selected ? 2 : 1);
  cairo_stroke (cr);
  /* The curve ends level (its last control point is beside the end): the head points right. */
  cairo_move_to (cr, xb, yb);
  cairo_line_to (cr, xb - 7, yb - 3);
  cairo_line_to (cr, xb - 7, yb + 3);
  cairo_close_path (cr);
  cairo_fill (cr);
}

static void
draw_flows (Frame *f)
{
  TwbTimeline *tl = f->tl;
  guint in_view = 0;
  for (guint gi = 0; gi < tl->groups->len; gi++)
    {
      TlGroup *g = g_ptr_array_index (tl->groups, gi);
      gint64 shift = tl_shift (tl, gi);
      for (guint k = 0; k < g->n_flows && in_view < TL_MAX_FLOWS; k++)
        {
          gint64 a = g->flows[k].from_ns - shift, b = g->flows[k].to_ns - shift;
          if (MAX (a, b) >= tl->v0 && MIN (a, b) <= tl->v1)
            in_view++;
        }
    }
  gboolean all = in_view < TL_MAX_FLOWS;
  for (guint gi = 0; gi < tl->groups->len; gi++)
    {
      TlGroup *g = g_ptr_array_index (tl->groups, gi);
      gint64 shift = tl_shift (tl, gi);
      for (guint k = 0; k < g->n_flows; k++)
        {
          const TlFlow *fl = &g->flows[k];
          gboolean sel = tl_is_selected (tl, gi, fl->from_lane, fl->from_index)
                         || tl_is_selected (tl, gi, fl->to_lane, fl->to_index);
          gint64 a = fl->from_ns - shift, b = fl->to_ns - shift;
          if (!sel && (!all || MAX (a, b) < tl->v0 || MIN (a, b) > tl->v1))
            continue;
          double xa, ya, xb, yb;
          if (!flow_point (f, gi, g, fl->from_lane, fl->from_index, &xa, &ya)
              || !flow_point (f, gi, g, fl->to_lane, fl->to_index, &xb, &yb))
            continue;
          /* Unless it is the selection's: within one lane the nesting
           * already shows an op and its kernels (dozens of short arrows
           * there blot the rows), and one shorter than its head is a blot. */
          if (!sel && (fl->from_lane == fl->to_lane || hypot (xb - xa, yb - ya) < 14))
            continue;
          draw_flow (f, xa, ya, xb, yb, sel);
        }
    }
}

/* A gutter name, ellipsized to the gutter. */
static void
gutter_text (Frame *f, const char *text, double x, double y, double h, gboolean bold, double alpha)
{
  PangoLayout *l = f->text;
  pango_layout_set_font_description (l, NULL);
  pango_layout_set_width (l, (int) ((TL_GUTTER_W - x - 6) * PANGO_SCALE));
  pango_layout_set_ellipsize (l, PANGO_ELLIPSIZE_END);
  if (bold)
    {
      g_autofree char *m = g_markup_printf_escaped ("<b>%s</b>", text);
      pango_layout_set_markup (l, m, -1);
    }
  else
    pango_layout_set_text (l, text, -1);
  int tw, th;
  pango_layout_get_pixel_size (l, &tw, &th);
  set_fg (f, alpha);
  cairo_move_to (f->cr, x, y + (h - th) / 2.0);
  pango_cairo_show_layout (f->cr, l);
  pango_layout_set_attributes (l, NULL);
}

static void
draw_triangle (Frame *f, double x, double y, gboolean collapsed)
{
  cairo_t *cr = f->cr;
  if (collapsed)
    {
      cairo_move_to (cr, x, y - 5);
      cairo_line_to (cr, x + 6, y);
      cairo_line_to (cr, x, y + 5);
    }
  else
    {
      cairo_move_to (cr, x - 1, y - 3);
      cairo_line_to (cr, x + 9, y - 3);
      cairo_line_to (cr, x + 4, y + 3);
    }
  cairo_close_path (cr);
  set_fg (f, 0.7);
  cairo_fill (cr);
}

static void
draw_gutter (Frame *f)
{
  TwbTimeline *tl = f->tl;
  cairo_t *cr = f->cr;
  for (guint ri = 0; ri < tl->rows->len; ri++)
    {
      const TlRow *r = &g_array_index (tl->rows, TlRow, ri);
      double y = screen_y (tl, r);
      if (y + r->h < TL_RULER_H || y > f->h)
        continue;
      TlGroup *g = g_ptr_array_index (tl->groups, r->group);
      TlProcess *pr = &g_array_index (g->processes, TlProcess, r->process);
      char buf[64];
      switch (r->kind)
        {
        case TL_ROW_GROUP:
          gutter_text (f, g->title, 6, y, r->h, TRUE, 1.0);
          break;
        case TL_ROW_PROCESS:
          {
            draw_triangle (f, 8, y + r->h / 2, pr->collapsed);
            g_autofree char *s = pr->name && pr->name[0] ? g_strdup_printf ("%s (%d)", pr->name, pr->pid)
                                                         : g_strdup_printf ("pid %d", pr->pid);
            gutter_text (f, s, 22, y, r->h, FALSE, 1.0);
            break;
          }
        case TL_ROW_SUMMARY:
          g_snprintf (buf, sizeof buf, "%u lane%s", pr->lanes->len, pr->lanes->len == 1 ? "" : "s");
          gutter_text (f, buf, 22, y, TL_ROW_H, FALSE, 0.6);
          break;
        case TL_ROW_LANE:
          {
            const tw_lane_info *li = tw_trace_lane (g->trace, r->item);
            if (li->name && li->name[0])
              gutter_text (f, li->name, 22, y, TL_ROW_H, FALSE, 0.85);
            else
              {
                const char *kind = li->kind == TW_LANE_THREAD   ? "thread"
                                   : li->kind == TW_LANE_DEVICE ? "device"
                                                                : "stream";
                g_snprintf (buf, sizeof buf, "%s %" G_GINT64_FORMAT, kind, li->tid);
                gutter_text (f, buf, 22, y, TL_ROW_H, FALSE, 0.85);
              }
            break;
          }
        case TL_ROW_COUNTER:
          {
            /* The name, and under it the maximum the chart's top stands for. */
            const TlCounter *c = &g_array_index (g->counters, TlCounter, r->item);
            gutter_text (f, c->name ? c->name : "counter", 22, y, TL_ROW_H, FALSE, 0.85);
            if (c->n > 0 && isfinite (c->vmax))
              {
                g_snprintf (buf, sizeof buf, "max %.4g", c->vmax);
                pango_layout_set_font_description (f->text, small_font (tl));
                pango_layout_set_width (f->text, (int) ((TL_GUTTER_W - 28) * PANGO_SCALE));
                pango_layout_set_text (f->text, buf, -1);
                set_fg (f, 0.6);
                cairo_move_to (cr, 22, y + TL_ROW_H - 1);
                pango_cairo_show_layout (cr, f->text);
              }
            break;
          }
        }
      /* A faint line under each lane and counter. */
      set_fg (f, 0.08);
      cairo_rectangle (cr, 0, floor (y + r->h) - 1, f->w, 1);
      cairo_fill (cr);
    }
  set_fg (f, 0.15);
  cairo_rectangle (cr, TL_GUTTER_W - 1, TL_RULER_H, 1, f->h - TL_RULER_H);
  cairo_fill (cr);
}

/* The ruler's tick step: 1, 2 or 5 × 10^k ns, about TL_TICK_PX apart. */
static gint64
tick_step (double scale)
{
  double raw = TL_TICK_PX / scale;
  double p = pow (10, floor (log10 (MAX (raw, 1))));
  double step = p;
  if (step < raw)
    step = 2 * p;
  if (step < raw)
    step = 5 * p;
  if (step < raw)
    step = 10 * p;
  return MAX ((gint64) step, 1);
}

/* A tick's label.  Absolute: in the largest unit the view's far end
 * reaches (span: its magnitude in ns), with the decimals the step needs
 * ("18.5 ms" every 0.5 ms); relative (an offset from the first tick): in
 * the step's own unit ("+200 ns"). */
void
tl_tick_label (char *buf, gsize size, gint64 t, gint64 step, double span, gboolean relative)
{
  static const struct
  {
    double ns;
    const char *name;
  } units[] = { { 1e9, "s" }, { 1e6, "ms" }, { 1e3, "µs" }, { 1, "ns" } };
  guint u = 0;
  while (u + 1 < G_N_ELEMENTS (units) && units[u].ns > (relative ? (double) step : span))
    u++;
  int decimals = relative ? 0 : MAX (0, (int) ceil (log10 (units[u].ns / step) - 1e-9));
  g_snprintf (buf, size, "%.*f %s", decimals, (double) t / units[u].ns, units[u].name);
}

/* Lays out the range's duration in f->text; returns its x (centred over
 * the band, kept inside the tracks). */
static double
range_label (Frame *f, const char *text, int *tw, int *th)
{
  TwbTimeline *tl = f->tl;
  double a = MAX (clampx (f, fx (f, tl->r0)), f->x0), b = MIN (clampx (f, fx (f, tl->r1)), (double) f->w);
  pango_layout_set_width (f->text, -1);
  pango_layout_set_font_description (f->text, small_font (tl));
  pango_layout_set_text (f->text, text, -1);
  pango_layout_get_pixel_size (f->text, tw, th);
  return CLAMP ((a + b) / 2 - *tw / 2.0, f->x0 + 2, f->w - *tw - 6.0);
}

static void
draw_ruler (Frame *f)
{
  TwbTimeline *tl = f->tl;
  cairo_t *cr = f->cr;
  set_fg (f, 0.06);
  cairo_rectangle (cr, 0, 0, f->w, TL_RULER_H);
  cairo_fill (cr);
  set_fg (f, 0.25);
  cairo_rectangle (cr, 0, TL_RULER_H - 1, f->w, 1);
  cairo_fill (cr);

  /* Tick labels under the range's duration box are left out. */
  double box0 = G_MAXDOUBLE, box1 = -G_MAXDOUBLE;
  if (tl->has_range)
    {
      g_autofree char *d = tl_format_ns (tl->r1 - tl->r0);
      int tw, th;
      box0 = range_label (f, d, &tw, &th) - 4;
      box1 = box0 + tw + 8;
    }
  gint64 step = tick_step (f->scale);
  gint64 first = (gint64) floor ((double) tl->v0 / step) * step;
  /* Deep in a long trace the labels would be long: the first label is
   * absolute, the rest relative to it ("+200 ns"). */
  gboolean relative = fabs ((double) tl->v1) / step > 1e4;
  pango_layout_set_width (f->text, -1);
  pango_layout_set_font_description (f->text, small_font (tl));
  gint64 origin = G_MININT64;
  double span = MAX (fabs ((double) tl->v0), fabs ((double) tl->v1));
  for (gint64 t = first; t <= tl->v1; t += step)
    {
      double x = fx (f, t);
      if (x < f->x0 - 0.5)
        continue;
      set_fg (f, 0.35);
      cairo_rectangle (cr, floor (x), TL_RULER_H - 8, 1, 8);
      cairo_fill (cr);
      set_fg (f, 0.05);
      cairo_rectangle (cr, floor (x), TL_RULER_H, 1, f->h - TL_RULER_H);
      cairo_fill (cr);
      char buf[64];
      if (relative && origin != G_MININT64)
        {
          char rel[48];
          tl_tick_label (rel, sizeof rel, t - origin, step, 0, TRUE);
          g_snprintf (buf, sizeof buf, "+%s", rel);
        }
      else if (relative)
        {
          origin = t;
          g_autofree char *abs = tl_format_ns (t);
          g_strlcpy (buf, abs, sizeof buf);
        }
      else
        tl_tick_label (buf, sizeof buf, t, step, span, FALSE);
      pango_layout_set_text (f->text, buf, -1);
      int lw, lh;
      pango_layout_get_pixel_size (f->text, &lw, &lh);
      if (floor (x) + 3 + lw >= box0 && floor (x) + 3 <= box1)
        continue;
      set_fg (f, 0.8);
      cairo_move_to (cr, floor (x) + 3, 3);
      pango_cairo_show_layout (cr, f->text);
    }
}

static void
draw_range (Frame *f)
{
  TwbTimeline *tl = f->tl;
  if (!tl->has_range)
    return;
  cairo_t *cr = f->cr;
  double a = clampx (f, fx (f, tl->r0));
  double b = clampx (f, fx (f, tl->r1));
  a = MAX (a, f->x0);
  b = MIN (b, (double) f->w);
  if (b > a)
    {
      set_rgba (cr, &accent, 0.15);
      cairo_rectangle (cr, a, 0, b - a, f->h);
      cairo_fill (cr);
    }
  set_rgba (cr, &accent, 0.9);
  cairo_rectangle (cr, floor (a), 0, 1, f->h);
  cairo_rectangle (cr, floor (b), 0, 1, f->h);
  cairo_fill (cr);
  /* The duration in the ruler, over the band (its own box so ticks do not show through). */
  g_autofree char *d = tl_format_ns (tl->r1 - tl->r0);
  int tw, th;
  double cx = range_label (f, d, &tw, &th);
  set_rgba (cr, &accent, 1.0);
  cairo_rectangle (cr, cx - 4, 2, tw + 8, TL_RULER_H - 5);
  cairo_fill (cr);
  cairo_set_source_rgb (cr, 1, 1, 1);
  cairo_move_to (cr, cx, 2 + (TL_RULER_H - 5 - th) / 2.0);
  pango_cairo_show_layout (cr, f->text);
}

void
tl_draw_background (TwbTimeline *tl, cairo_t *cr, int width, int height)
{
  GdkRGBA fg;
  twb_widget_fg_colour (GTK_WIDGET (tl), &fg);
  /* Light text: the dark theme's view background, else the light one's (Adwaita). */
  gboolean dark = fg.red + fg.green + fg.blue > 1.5;
  if (dark)
    cairo_set_source_rgb (cr, 0.118, 0.118, 0.118);
  else
    cairo_set_source_rgb (cr, 1, 1, 1);
  cairo_rectangle (cr, 0, 0, width, height);
  cairo_fill (cr);
}

/* A peer's label: "rank 2 · last", "rank 0 · −150 µs · waited 150 µs". */
static char *
peer_label (const tw_coll_peer *p)
{
  if (p->skew_ns == 0)
    return g_strdup_printf ("rank %d · last to arrive", p->rank);
  g_autofree char *skew = tl_format_ns (p->skew_ns), *wait = tl_format_ns (p->wait_ns);
  return g_strdup_printf ("rank %d · %s · waited %s", p->rank, skew, wait);
}

/* The selected collective on every rank: outlined in the accent, each
 * labelled with its skew and wait on a pale box at its start, and a dashed
 * line at the last arrival across their rows. */
static void
draw_peers (Frame *f)
{
  TwbTimeline *tl = f->tl;
  if (!tl->peers)
    return;
  cairo_t *cr = f->cr;
  double ymin = G_MAXDOUBLE, ymax = -G_MAXDOUBLE;
  gint64 latest = G_MININT64;
  PangoLayout *text = pango_layout_copy (f->text);
  pango_layout_set_font_description (text, small_font (tl));
  for (guint i = 0; i < tl->peers->len; i++)
    {
      const tw_coll_peer *p = &g_array_index (tl->peers, tw_coll_peer, i);
      latest = MAX (latest, p->start_ns);
      TwbSliceRef ref = { tl->peers_group, p->lane, p->slice_index };
      graphene_rect_t r;
      if (!twb_timeline_slice_rect (tl, &ref, &r))
        continue;
      ymin = MIN (ymin, r.origin.y);
      ymax = MAX (ymax, r.origin.y + r.size.height);
      set_rgba (cr, &accent, 1.0);
      cairo_set_line_width (cr, 2);
      cairo_rectangle (cr, r.origin.x + 1, r.origin.y + 1, MAX (r.size.width - 2, 0.5), r.size.height - 2);
      cairo_stroke (cr);
      g_autofree char *label = peer_label (p);
      pango_layout_set_text (text, label, -1);
      int lw, lh;
      pango_layout_get_pixel_size (text, &lw, &lh);
      double lx = r.origin.x + 3, ly = r.origin.y + (r.size.height - lh) / 2.0;
      cairo_set_source_rgba (cr, 1, 1, 1, 0.85);
      cairo_rectangle (cr, lx - 2, ly, lw + 4, lh);
      cairo_fill (cr);
      cairo_set_source_rgba (cr, 0.08, 0.08, 0.1, 0.95);
      cairo_move_to (cr, lx, ly);
      pango_cairo_show_layout (cr, text);
    }
  g_object_unref (text);
  if (ymin > ymax)
    return;
  double x = twb_timeline_time_to_x (tl, latest - tl_shift (tl, tl->peers_group));
  if (x < f->x0 || x > f->w)
    return;
  static const double dash[] = { 4, 3 };
  cairo_save (cr);
  set_rgba (cr, &accent, 0.9);
  cairo_set_line_width (cr, 1.5);
  cairo_set_dash (cr, dash, G_N_ELEMENTS (dash), 0);
  cairo_move_to (cr, round (x) + 0.5, ymin - 4);
  cairo_line_to (cr, round (x) + 0.5, ymax + 4);
  cairo_stroke (cr);
  cairo_restore (cr);
}

void
tl_draw (TwbTimeline *tl, cairo_t *cr, int width, int height)
{
  Frame f = { .tl = tl, .cr = cr, .w = width, .h = height };
  f.x0 = TL_GUTTER_W;
  f.tw = MAX (width - TL_GUTTER_W, 1.0);
  f.scale = f.tw / (double) MAX (tl->v1 - tl->v0, 1);
  f.searching = tl->search_fold != NULL;
  f.highlighting = tl->hl_nodes != NULL;
  twb_widget_fg_colour (GTK_WIDGET (tl), &f.fg);
  for (guint b = 0; b < TL_N_COLOURS * 2; b++)
    f.premul[b] = palette_premul (b % TL_N_COLOURS, b >= TL_N_COLOURS ? DIM_ALPHA : 1.0);
  double sx = 1, sy = 1;
  cairo_surface_get_device_scale (cairo_get_target (cr), &sx, &sy);
  f.rscale = MAX (MAX (sx, sy), 1.0);
  if (GTK_IS_WIDGET (tl) && gtk_widget_get_native (GTK_WIDGET (tl)))
    f.rscale = MAX (f.rscale, gtk_widget_get_scale_factor (GTK_WIDGET (tl)));
  f.rw = MAX ((int) ceil (f.tw * f.rscale), 1);
  /* Only as tall as the rows reach: what lies below them stays empty. */
  double rows_bottom = MIN ((double) height, TL_RULER_H + tl->content_h - tl->scroll_y);
  f.rh = MAX ((int) ceil ((rows_bottom - TL_RULER_H) * f.rscale), 1);
  /* Kept from frame to frame (a new one costs a page fault per 4 KiB
   * written); the flush first copies it for a snapshot's recording that
   * still holds the last frame. */
  if (!tl->raster || cairo_image_surface_get_width (tl->raster) != f.rw
      || cairo_image_surface_get_height (tl->raster) < f.rh || tl->raster_scale != f.rscale)
    {
      g_clear_pointer (&tl->raster, cairo_surface_destroy);
      tl->raster = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, f.rw,
                                               MAX (f.rh, (int) ceil ((height - TL_RULER_H) * f.rscale)));
      cairo_surface_set_device_scale (tl->raster, f.rscale, f.rscale);
      tl->raster_scale = f.rscale;
    }
  f.raster = tl->raster;
  cairo_surface_type_t target = cairo_surface_get_type (cairo_get_target (cr));
  f.vector = target == CAIRO_SURFACE_TYPE_PDF || target == CAIRO_SURFACE_TYPE_SVG
             || target == CAIRO_SURFACE_TYPE_PS;
  cairo_surface_flush (f.raster);
  f.px = (guint32 *) cairo_image_surface_get_data (f.raster);
  f.stride = cairo_image_surface_get_stride (f.raster) / 4;
  memset (f.px, 0, (gsize) cairo_image_surface_get_stride (f.raster) * f.rh);
  f.labels = g_array_new (FALSE, FALSE, sizeof (Label));
  f.hl = g_array_new (FALSE, FALSE, sizeof (Rect));
  f.text = gtk_widget_create_pango_layout (GTK_WIDGET (tl), NULL);
  /* Names seen in a long session are many: start the cache afresh past a few thousand. */
  if (tl->labels && g_hash_table_size (tl->labels) > 4096)
    tl_labels_clear (tl);

  /* Rows: backgrounds, then the track area clipped under the ruler. */
  cairo_save (cr);
  cairo_rectangle (cr, 0, TL_RULER_H, width, height - TL_RULER_H);
  cairo_clip (cr);
  for (guint ri = 0; ri < tl->rows->len; ri++)
    {
      const TlRow *r = &g_array_index (tl->rows, TlRow, ri);
      double y = screen_y (tl, r);
      if (r->kind == TL_ROW_GROUP || r->kind == TL_ROW_PROCESS)
        {
          if (y + r->h < TL_RULER_H || y > height)
            continue;
          set_fg (&f, r->kind == TL_ROW_GROUP ? 0.09 : 0.04);
          cairo_rectangle (cr, 0, y, width, r->h);
          cairo_fill (cr);
        }
    }
  cairo_rectangle (cr, f.x0, TL_RULER_H, f.tw, height - TL_RULER_H);
  cairo_clip (cr);
  for (guint ri = 0; ri < tl->rows->len; ri++)
    {
      const TlRow *r = &g_array_index (tl->rows, TlRow, ri);
      double y = screen_y (tl, r);
      if (y + r->h < TL_RULER_H || y > height)
        continue;
      TlGroup *g = g_ptr_array_index (tl->groups, r->group);
      if (r->kind == TL_ROW_LANE)
        {
          const TlLane *l = &g->lanes[r->item];
          for (guint d = 0; d < l->n_depths; d++)
            {
              double yd = y + d * TL_ROW_H;
              if (yd + TL_ROW_H >= TL_RULER_H && yd <= height)
                draw_depth (&f, r->group, g, l, d, yd, TRUE);
            }
        }
      else if (r->kind == TL_ROW_COUNTER)
        draw_counter (&f, r->group, g, &g_array_index (g->counters, TlCounter, r->item), y, r->h);
      else if (r->kind == TL_ROW_SUMMARY)
        {
          TlProcess *pr = &g_array_index (g->processes, TlProcess, r->process);
          for (guint k = 0; k < pr->lanes->len; k++)
            {
              const TlLane *l = &g->lanes[g_array_index (pr->lanes, guint, k)];
              if (l->n_depths > 0)
                draw_depth (&f, r->group, g, l, 0, y, FALSE);
            }
        }
    }
  cairo_surface_mark_dirty (f.raster);
  if (!f.vector)
    {
      cairo_set_source_surface (cr, f.raster, f.x0, TL_RULER_H);
      cairo_rectangle (cr, f.x0, TL_RULER_H, f.tw, f.rh / f.rscale);
      cairo_fill (cr);
    }
  draw_labels (&f);
  for (guint ri = 0; ri < tl->rows->len; ri++)
    {
      const TlRow *r = &g_array_index (tl->rows, TlRow, ri);
      double y = screen_y (tl, r);
      if (y + r->h < TL_RULER_H || y > height)
        continue;
      TlGroup *g = g_ptr_array_index (tl->groups, r->group);
      if (r->kind == TL_ROW_LANE)
        draw_instants (&f, r->group, &g->lanes[r->item], y);
    }
  if (f.hl->len > 0)
    {
      set_rgba (cr, &hl_colour, 1.0);
      cairo_set_line_width (cr, 2);
      for (guint i = 0; i < f.hl->len; i++)
        {
          const Rect *r = &g_array_index (f.hl, Rect, i);
          cairo_rectangle (cr, r->x + 1, r->y + 1, MAX (r->w - 2, 0.5), r->h - 2);
        }
      cairo_stroke (cr);
    }
  if (f.has_sel_rect)
    {
      const Rect *r = &f.sel_rect;
      set_fg (&f, 1.0);
      cairo_set_line_width (cr, 2.5);
      cairo_rectangle (cr, r->x - 0.25, r->y - 0.25, r->w + 0.5, r->h + 0.5);
      cairo_stroke (cr);
    }
  tl_draw_path (tl, cr, width);
  draw_peers (&f);
  draw_flows (&f);
  cairo_restore (cr);

  draw_gutter (&f);
  draw_ruler (&f);
  draw_range (&f);

  g_array_unref (f.labels);
  g_array_unref (f.hl);
  g_object_unref (f.text);
}
