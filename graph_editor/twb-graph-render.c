/* twb-graph-render.c — cairo drawing of a graph scene (canvas and exports). */
#define G_LOG_DOMAIN "twb-graph-render"

#include "graph_editor/twb-graph-render.h"
#include "graph_editor/twb-picture.h"

#include <errno.h>
#include <unistd.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <math.h>
#include <pango/pangocairo.h>
#include <string.h>

#define HEADER_H TWB_RENDER_HEADER_H
#define RADIUS 6.0
#define PORT_R 5.0

typedef struct
{
  double r, g, b;
} Rgb;

typedef struct
{
  Rgb bg, grid, body, border, text, dim_text, edge, edge_bad, label_bg, accent, error, hover;
} Palette;

static const Palette light = {
  .bg = { 0.98, 0.98, 0.98 },
  .grid = { 0.86, 0.86, 0.87 },
  .body = { 1.00, 1.00, 1.00 },
  .border = { 0.70, 0.71, 0.73 },
  .text = { 0.12, 0.12, 0.13 },
  .dim_text = { 0.36, 0.37, 0.40 },
  .edge = { 0.42, 0.45, 0.50 },
  .edge_bad = { 0.75, 0.75, 0.77 },
  .label_bg = { 0.93, 0.94, 0.96 },
  .accent = { 0.21, 0.52, 0.89 },     /* GNOME blue 3 (#3584e4) */
  .error = { 0.88, 0.11, 0.14 },      /* GNOME red 3 (#e01b24) */
  .hover = { 0.55, 0.70, 0.92 },
};

static const Palette dark = {
  .bg = { 0.12, 0.12, 0.13 },
  .grid = { 0.22, 0.22, 0.24 },
  .body = { 0.19, 0.19, 0.21 },
  .border = { 0.36, 0.37, 0.40 },
  .text = { 0.93, 0.93, 0.94 },
  .dim_text = { 0.70, 0.71, 0.74 },
  .edge = { 0.62, 0.65, 0.70 },
  .edge_bad = { 0.35, 0.35, 0.38 },
  .label_bg = { 0.22, 0.23, 0.26 },
  .accent = { 0.47, 0.68, 0.96 },
  .error = { 0.96, 0.38, 0.32 },
  .hover = { 0.35, 0.50, 0.75 },
};

/* Header colours per palette category (GNOME HIG palette, darker shades so
 * white text stays readable). */
static Rgb
category_color (const char *cat)
{
  static const struct
  {
    const char *name;
    Rgb c;
  } table[] = {
    { "Core", { 0.11, 0.44, 0.85 } },          /* blue 4 */
    { "Convolution", { 0.57, 0.25, 0.67 } },   /* purple 3 */
    { "Pooling", { 0.13, 0.55, 0.52 } },       /* teal */
    { "Normalisation", { 0.78, 0.42, 0.0 } },  /* orange 4 */
    { "Activation", { 0.18, 0.55, 0.24 } },    /* green 5 */
    { "Loss", { 0.75, 0.11, 0.16 } },          /* red 4 */
    { "Data", { 0.37, 0.36, 0.39 } },          /* dark 2 */
    { "Shape", { 0.53, 0.39, 0.25 } },         /* brown 4 */
    { "Math", { 0.30, 0.38, 0.50 } },
    { "Block", { 0.24, 0.22, 0.27 } },
  };
  for (guint i = 0; i < G_N_ELEMENTS (table); i++)
    if (cat && strcmp (cat, table[i].name) == 0)
      return table[i].c;
  return (Rgb) { 0.45, 0.45, 0.45 };
}

static inline void
set_rgb (cairo_t *cr, Rgb c)
{
  cairo_set_source_rgb (cr, c.r, c.g, c.b);
}

/* Pipeline stages: GNOME palette shades other than the headers' blue,
 * green and red, in an order that keeps neighbours apart; they repeat
 * after 8. */
static const Rgb stage_colours[] = {
  { 0.90, 0.38, 0.00 },   /* orange 5 (#e66100) */
  { 0.57, 0.25, 0.67 },   /* purple 3 (#9141ac) */
  { 0.13, 0.56, 0.64 },   /* teal */
  { 0.78, 0.53, 0.00 },   /* yellow 5 (#c88800) */
  { 0.75, 0.38, 0.80 },   /* purple 1 (#c061cb) */
  { 0.53, 0.37, 0.24 },   /* brown 3 (#865e3c) */
  { 0.36, 0.53, 0.19 },   /* olive */
  { 0.40, 0.40, 0.45 },   /* dark 1 */
};

void
twb_graph_render_stage_colour (int stage, double rgb[3])
{
  const Rgb *c = &stage_colours[(guint) MAX (stage, 0) % G_N_ELEMENTS (stage_colours)];
  rgb[0] = c->r;
  rgb[1] = c->g;
  rgb[2] = c->b;
}

/* The band along a node's bottom edge, model units. */
#define STAGE_BAND_H 5.0

static Rgb
dtype_color (const char *type)
{
  if (type == NULL)
    return (Rgb) { 0.6, 0.6, 0.6 };
  if (g_str_has_prefix (type, "f"))
    return (Rgb) { 0.21, 0.52, 0.89 };
  if (g_str_has_prefix (type, "i") || g_str_has_prefix (type, "u"))
    return (Rgb) { 0.90, 0.56, 0.13 };
  return (Rgb) { 0.5, 0.5, 0.5 };
}

void
twb_render_view_init (TwbRenderView *v)
{
  memset (v, 0, sizeof *v);
  v->scale = 1;
  v->focus = -1;
  v->hover = -1;
  v->hover_edge = -1;
  v->selected_edge = -1;
  v->hover_margin = -1;
  v->grid = 20;
}

/* Main thread only. */
static int last_drawn, last_labels, last_labelled, last_named;
static double last_min_px, last_min_title_px;
static gboolean last_hint;

/* Text of `units` model units drawn at the view's scale: the smallest so far. */
static void
note_text (const TwbRenderView *v, double units)
{
  double px = units * v->scale;
  if (last_min_px == 0 || px < last_min_px)
    last_min_px = px;
}

double
twb_graph_render_last_min_text_px (void)
{
  return last_min_px;
}

/* A box's name drawn at `units`: the smallest name so far. */
static void
note_title (const TwbRenderView *v, double units)
{
  double px = units * v->scale;
  if (last_min_title_px == 0 || px < last_min_title_px)
    last_min_title_px = px;
  last_named++;
}

double
twb_graph_render_last_min_title_px (void)
{
  return last_min_title_px;
}

int
twb_graph_render_last_labelled_boxes (void)
{
  return last_labelled;
}

int
twb_graph_render_last_named_boxes (void)
{
  return last_named;
}

int
twb_graph_render_last_drawn_nodes (void)
{
  return last_drawn;
}

int
twb_graph_render_last_drawn_labels (void)
{
  return last_labels;
}

gboolean
twb_graph_render_last_drew_hint (void)
{
  return last_hint;
}

static void
rounded_rect (cairo_t *cr, double x, double y, double w, double h, double r)
{
  cairo_new_sub_path (cr);
  cairo_arc (cr, x + w - r, y + r, r, -G_PI / 2, 0);
  cairo_arc (cr, x + w - r, y + h - r, r, 0, G_PI / 2);
  cairo_arc (cr, x + r, y + h - r, r, G_PI / 2, G_PI);
  cairo_arc (cr, x + r, y + r, r, G_PI, 3 * G_PI / 2);
  cairo_close_path (cr);
}

static void
edge_path (cairo_t *cr, const TwbGraphScene *s, double x0, double y0, double x3, double y3,
           gboolean straight)
{
  cairo_move_to (cr, x0, y0);
  if (straight)
    {
      cairo_line_to (cr, x3, y3);
      return;
    }
  double pts[6][2];
  int n = twb_graph_scene_edge_route (s, x0, y0, x3, y3, pts);
  if (n > 0)
    {
      /* Polyline with corners rounded by up to 10 units. */
      for (int k = 1; k < n - 1; k++)
        {
          double ax = pts[k][0] - pts[k - 1][0], ay = pts[k][1] - pts[k - 1][1];
          double bx = pts[k + 1][0] - pts[k][0], by = pts[k + 1][1] - pts[k][1];
          double la = hypot (ax, ay), lb = hypot (bx, by);
          double r = MIN (10.0, MIN (la, lb) / 2);
          if (la < 1e-9 || lb < 1e-9)
            continue;
          cairo_line_to (cr, pts[k][0] - ax / la * r, pts[k][1] - ay / la * r);
          cairo_curve_to (cr, pts[k][0], pts[k][1], pts[k][0], pts[k][1], pts[k][0] + bx / lb * r,
                          pts[k][1] + by / lb * r);
        }
      cairo_line_to (cr, x3, y3);
      return;
    }
  double dx = twb_graph_scene_edge_bend (x0, x3);
  cairo_curve_to (cr, x0 + dx, y0, x3 - dx, y3, x3, y3);
}

static void
bezier_mid (const TwbGraphScene *s, double x0, double y0, double x3, double y3, double *mx,
            double *my)
{
  double pts[6][2];
  if (twb_graph_scene_edge_route (s, x0, y0, x3, y3, pts) > 0)
    {
      *mx = (pts[2][0] + pts[3][0]) / 2;
      *my = pts[2][1];
      return;
    }
  double dx = twb_graph_scene_edge_bend (x0, x3);
  /* B(1/2) = (P0 + 3 P1 + 3 P2 + P3) / 8 */
  *mx = (x0 + 3 * (x0 + dx) + 3 * (x3 - dx) + x3) / 8;
  *my = (y0 + 3 * y0 + 3 * y3 + y3) / 8;
}

static void
layout_text (PangoLayout *l, const char *text, double max_w, gboolean bold, double size_pt)
{
  PangoFontDescription *fd = pango_font_description_from_string ("Sans");
  pango_font_description_set_absolute_size (fd, size_pt * PANGO_SCALE);
  if (bold)
    pango_font_description_set_weight (fd, PANGO_WEIGHT_BOLD);
  pango_layout_set_font_description (l, fd);
  pango_font_description_free (fd);
  pango_layout_set_text (l, text, -1);
  pango_layout_set_width (l, max_w > 0 ? (int) (max_w * PANGO_SCALE) : -1);
  pango_layout_set_ellipsize (l, max_w > 0 ? PANGO_ELLIPSIZE_END : PANGO_ELLIPSIZE_NONE);
}

static void
draw_text (cairo_t *cr, PangoLayout *l, double x, double y_center)
{
  int w, h;
  pango_layout_get_pixel_size (l, &w, &h);
  cairo_move_to (cr, x, y_center - h / 2.0);
  pango_cairo_show_layout (cr, l);
}

static void
draw_error_badge (cairo_t *cr, const Palette *p, double cx, double cy, PangoLayout *l,
                  const TwbRenderView *v)
{
  /* The "!" only where its 12 units reach the smallest size text gets. */
  gboolean text = l != NULL && 12 * v->scale >= TWB_RENDER_MIN_TEXT_PX;
  /* A fresh path: the text drawn before leaves a current point, and
   * cairo_arc would join it with a line. */
  cairo_new_path (cr);
  cairo_arc (cr, cx, cy, 8, 0, 2 * G_PI);
  cairo_set_source_rgb (cr, 1, 1, 1);
  cairo_fill_preserve (cr);
  set_rgb (cr, p->error);
  cairo_set_line_width (cr, 2);
  cairo_stroke (cr);
  if (text)
    {
      layout_text (l, "!", -1, TRUE, 12);
      int w, h;
      pango_layout_get_pixel_size (l, &w, &h);
      cairo_move_to (cr, cx - w / 2.0, cy - h / 2.0);
      pango_cairo_show_layout (cr, l);
      note_text (v, 12);
    }
}

static gboolean
visible (const TwbRenderView *v, double x0, double y0, double x1, double y1)
{
  if (v->width <= 0 || v->height <= 0)
    return TRUE;
  double sx0 = x0 * v->scale + v->tx, sx1 = x1 * v->scale + v->tx;
  double sy0 = y0 * v->scale + v->ty, sy1 = y1 * v->scale + v->ty;
  return sx1 >= 0 && sx0 <= v->width && sy1 >= 0 && sy0 <= v->height;
}

static void
draw_grid (cairo_t *cr, const TwbRenderView *v, const Palette *p)
{
  if (v->grid <= 0 || v->width <= 0 || v->scale * v->grid < 8)
    return;
  double step = v->grid * (v->scale * v->grid < 16 ? 2 : 1);
  double x0 = floor ((-v->tx / v->scale) / step) * step;
  double y0 = floor ((-v->ty / v->scale) / step) * step;
  double x1 = (v->width - v->tx) / v->scale, y1 = (v->height - v->ty) / v->scale;
  double dot = 1.2 / v->scale;
  set_rgb (cr, p->grid);
  for (double x = x0; x <= x1; x += step)
    for (double y = y0; y <= y1; y += step)
      cairo_rectangle (cr, x - dot / 2, y - dot / 2, dot, dot);
  cairo_fill (cr);
}

typedef struct
{
  int edge;
  double mx, my;     /* the label's centre, model coordinates */
  double length;     /* the edge's span */
} LabelSpot;

static int
cmp_label_spot (gconstpointer a, gconstpointer b)
{
  const LabelSpot *x = a, *y = b;
  if (x->length != y->length)
    return x->length < y->length ? -1 : 1;
  return x->edge - y->edge;
}

typedef struct
{
  double x0, y0, x1, y1;
} Box;

static gboolean
boxes_overlap (const Box *a, const Box *b)
{
  return a->x0 < b->x1 && b->x0 < a->x1 && a->y0 < b->y1 && b->y0 < a->y1;
}

/* Whether box (model coordinates) overlaps a node box, a frame's band or a
 * placed label. */
static gboolean
label_collides (const TwbGraphScene *s, GArray *placed, const Box *box)
{
  for (int n = 0; n < s->n_nodes; n++)
    {
      const TwbSceneNode *nd = &s->nodes[n];
      Box r = { nd->x, nd->y, nd->x + nd->w, nd->y + nd->h };
      if (boxes_overlap (&r, box))
        return TRUE;
    }
  /* A frame's band, where its name is. */
  for (int f = 0; f < s->n_frames; f++)
    {
      const TwbSceneFrame *fr = &s->frames[f];
      Box band = { fr->x, fr->y, fr->x + fr->w, fr->y + TW_LAYOUT_FRAME_HEADER };
      if (boxes_overlap (&band, box))
        return TRUE;
    }
  for (guint k = 0; k < placed->len; k++)
    if (boxes_overlap (&g_array_index (placed, Box, k), box))
      return TRUE;
  return FALSE;
}

static void
draw_edges (cairo_t *cr, const TwbGraphScene *s, const TwbRenderView *v, const Palette *p,
            PangoLayout *l)
{
  gboolean straight = v->scale < TWB_RENDER_PORT_SCALE;
  double lw = MAX (1.5, 1.0 / v->scale);

  /* Valid and invalid edges in two batched strokes; the hovered one on top. */
  for (int pass = 0; pass < 2; pass++)
    {
      for (int i = 0; i < s->n_edges; i++)
        {
          const TwbSceneEdge *e = &s->edges[i];
          if (e->invalid != (pass == 1))
            continue;
          double x0, y0, x3, y3;
          twb_graph_scene_port_pos (s, e->from, TWB_PORT_OUTPUT, e->from_port, &x0, &y0);
          twb_graph_scene_port_pos (s, e->to, TWB_PORT_INPUT, e->to_port, &x3, &y3);
          /* A route's run may pass above or below both ports. */
          double pad = twb_graph_scene_edge_bend (x0, x3) + 20, lo = MIN (y0, y3), hi = MAX (y0, y3);
          double pts[6][2];
          for (int k = twb_graph_scene_edge_route (s, x0, y0, x3, y3, pts) - 1; k >= 0; k--)
            {
              lo = MIN (lo, pts[k][1]);
              hi = MAX (hi, pts[k][1]);
            }
          if (!visible (v, MIN (x0, x3) - pad, lo, MAX (x0, x3) + pad, hi))
            continue;
          edge_path (cr, s, x0, y0, x3, y3, straight);
        }
      set_rgb (cr, pass == 0 ? p->edge : p->edge_bad);
      cairo_set_line_width (cr, lw);
      if (pass == 1)
        cairo_set_dash (cr, (double[]) { 6, 4 }, 2, 0);
      cairo_stroke (cr);
      cairo_set_dash (cr, NULL, 0, 0);
    }
  for (int pass = 0; pass < 2; pass++)
    {
      int ei = pass == 0 ? v->hover_edge : v->selected_edge;
      if (ei < 0 || ei >= s->n_edges)
        continue;
      const TwbSceneEdge *e = &s->edges[ei];
      double x0, y0, x3, y3;
      twb_graph_scene_port_pos (s, e->from, TWB_PORT_OUTPUT, e->from_port, &x0, &y0);
      twb_graph_scene_port_pos (s, e->to, TWB_PORT_INPUT, e->to_port, &x3, &y3);
      /* Selected: a wide pale halo under a thick accent line, so it reads as
       * picked (not merely hovered) in both themes. */
      if (pass == 1)
        {
          edge_path (cr, s, x0, y0, x3, y3, straight);
          cairo_set_source_rgba (cr, p->accent.r, p->accent.g, p->accent.b, 0.3);
          cairo_set_line_width (cr, lw * 7);
          cairo_stroke (cr);
        }
      edge_path (cr, s, x0, y0, x3, y3, straight);
      set_rgb (cr, p->accent);
      cairo_set_line_width (cr, lw * (pass == 1 ? 3 : 2));
      cairo_stroke (cr);
    }

  if (v->scale < TWB_RENDER_TEXT_SCALE || l == NULL)
    return;
  /* Labels on visible edges, shortest edge first: a label overlapping a
   * node box or a label already placed is left out.  10 units, or what
   * makes TWB_RENDER_MIN_TEXT_PX on screen. */
  double size = MAX (10.0, TWB_RENDER_MIN_TEXT_PX / v->scale);
  g_autoptr (GArray) cand = g_array_new (FALSE, FALSE, sizeof (LabelSpot));
  for (int i = 0; i < s->n_edges; i++)
    {
      const TwbSceneEdge *e = &s->edges[i];
      if (e->label == NULL)
        continue;
      double x0, y0, x3, y3;
      LabelSpot c = { .edge = i };
      twb_graph_scene_port_pos (s, e->from, TWB_PORT_OUTPUT, e->from_port, &x0, &y0);
      twb_graph_scene_port_pos (s, e->to, TWB_PORT_INPUT, e->to_port, &x3, &y3);
      bezier_mid (s, x0, y0, x3, y3, &c.mx, &c.my);
      if (!visible (v, c.mx - 6 * size, c.my - size, c.mx + 6 * size, c.my + size))
        continue;
      c.length = hypot (x3 - x0, y3 - y0);
      g_array_append_val (cand, c);
    }
  g_array_sort (cand, cmp_label_spot);
  g_autoptr (GArray) placed = g_array_new (FALSE, FALSE, sizeof (Box));
  for (guint k = 0; k < cand->len; k++)
    {
      const LabelSpot *c = &g_array_index (cand, LabelSpot, k);
      int i = c->edge;
      const TwbSceneEdge *e = &s->edges[i];
      double mx = c->mx, my = c->my;
      layout_text (l, e->label, -1, FALSE, size);
      int w, h;
      pango_layout_get_pixel_size (l, &w, &h);
      Box box = { mx - w / 2.0 - 4, my - h / 2.0 - 1, mx + w / 2.0 + 4, my + h / 2.0 + 1 };
      if (label_collides (s, placed, &box))
        continue;
      g_array_append_val (placed, box);
      last_labels++;
      /* The pill sits on the curve; the curve passes behind it. */
      rounded_rect (cr, mx - w / 2.0 - 4, my - h / 2.0 - 1, w + 8, h + 2, (h + 2) / 2.0);
      set_rgb (cr, p->label_bg);
      cairo_fill_preserve (cr);
      set_rgb (cr, i == v->hover_edge || i == v->selected_edge ? p->accent : p->border);
      cairo_set_line_width (cr, 1);
      cairo_stroke (cr);
      set_rgb (cr, p->text);
      cairo_move_to (cr, mx - w / 2.0, my - h / 2.0);
      pango_cairo_show_layout (cr, l);
      note_text (v, size);
    }
}

static guint
node_marks (const TwbRenderView *v, const char *id)
{
  return v->marks ? GPOINTER_TO_UINT (g_hash_table_lookup (v->marks, id)) : 0;
}

/* The breakpoint dot in the header's margin: whole for both phases, the
 * left half for forward only, the right half for backward only; faint
 * where the pointer offers one. */
static void
draw_breakpoint (cairo_t *cr, const Palette *p, double cx, double cy, guint marks, gboolean faint)
{
  const double r = 5.5;
  cairo_new_path (cr);
  cairo_arc (cr, cx, cy, r, 0, 2 * G_PI);
  cairo_set_source_rgba (cr, 1, 1, 1, faint ? 0.35 : 0.95);
  cairo_set_line_width (cr, 1.5);
  cairo_stroke_preserve (cr);
  if (faint)
    {
      cairo_set_source_rgba (cr, 1, 1, 1, 0.25);
      cairo_fill (cr);
      return;
    }
  gboolean fwd = (marks & TWB_MARK_BREAK_FORWARD) != 0, bwd = (marks & TWB_MARK_BREAK_BACKWARD) != 0;
  cairo_new_path (cr);
  if (fwd && bwd)
    cairo_arc (cr, cx, cy, r, 0, 2 * G_PI);
  else
    {
      /* Forward: the left half (what comes in); backward: the right half. */
      double a0 = fwd ? G_PI / 2 : -G_PI / 2;
      cairo_move_to (cr, cx, cy);
      cairo_arc (cr, cx, cy, r, a0, a0 + G_PI);
      cairo_close_path (cr);
    }
  set_rgb (cr, p->error);
  cairo_fill (cr);
}

/* A padlock: the node's parameters are frozen. */
static void
draw_lock (cairo_t *cr, double cx, double cy)
{
  cairo_new_path (cr);
  cairo_set_source_rgb (cr, 1, 1, 1);
  cairo_set_line_width (cr, 1.6);
  cairo_arc (cr, cx, cy - 2, 3.2, G_PI, 2 * G_PI);
  cairo_line_to (cr, cx + 3.2, cy);
  cairo_move_to (cr, cx - 3.2, cy);
  cairo_line_to (cr, cx - 3.2, cy - 2);
  cairo_stroke (cr);
  cairo_rectangle (cr, cx - 5, cy, 10, 7);
  cairo_fill (cr);
}

/* The output tag's size in model units: room for "out" in 9 px bold. */
#define OUTPUT_TAG_W 26.0
#define OUTPUT_TAG_H 14.0

/* "out" in the header's right end: a model output.  Filled when marked;
 * an outline when it is the output by default (it feeds a loss and no
 * node is marked).  Without text (l NULL: far out, on a tile) a pill
 * would be empty: an arrowhead pointing out of the box instead, as tall
 * as the tag or 8 px, whichever is more, within half the box, at the
 * tile's middle. */
static void
draw_output_tag (cairo_t *cr, const TwbSceneNode *n, double right, const TwbRenderView *v, Rgb head,
                 gboolean marked, PangoLayout *l)
{
  cairo_new_path (cr);
  cairo_set_source_rgb (cr, 1, 1, 1);
  if (l == NULL)
    {
      double h = MIN (MAX (OUTPUT_TAG_H, 8 / v->scale), n->h / 2), cy = n->y + n->h / 2;
      cairo_move_to (cr, right - 0.8 * h, cy - h / 2);
      cairo_line_to (cr, right, cy);
      cairo_line_to (cr, right - 0.8 * h, cy + h / 2);
      cairo_close_path (cr);
      if (marked)
        cairo_fill (cr);
      else
        {
          cairo_set_line_width (cr, 1.5 / v->scale);
          cairo_set_line_join (cr, CAIRO_LINE_JOIN_ROUND);
          cairo_stroke (cr);
        }
      return;
    }
  double x = right - OUTPUT_TAG_W, cy = n->y + HEADER_H / 2, y = cy - OUTPUT_TAG_H / 2;
  rounded_rect (cr, x, y, OUTPUT_TAG_W, OUTPUT_TAG_H, OUTPUT_TAG_H / 2);
  if (marked)
    cairo_fill (cr);
  else
    {
      cairo_set_line_width (cr, 1.2);
      cairo_stroke (cr);
    }
  layout_text (l, "out", -1, TRUE, 9);
  int tw, th;
  pango_layout_get_pixel_size (l, &tw, &th);
  if (marked)
    set_rgb (cr, head);
  else
    cairo_set_source_rgb (cr, 1, 1, 1);
  cairo_move_to (cr, x + (OUTPUT_TAG_W - tw) / 2.0, cy - th / 2.0);
  pango_cairo_show_layout (cr, l);
}

/* Type of `nominal` units, or bigger to make `min_px` on screen; 0 when
 * that would pass `max` units (no room). */
static double
text_size (const TwbRenderView *v, double nominal, double min_px, double max)
{
  double size = MAX (nominal, min_px / v->scale);
  return size <= max ? size : 0;
}

/* A box's name in its header (13 units bold, up to 20), its op or what a
 * block holds below, and a second body line where there is room at the
 * nominal 10.5 units: the output shape, the error, a block's hint. */
static void
draw_node_text (cairo_t *cr, const TwbSceneNode *n, const TwbRenderView *v, const Palette *p,
                PangoLayout *l, guint marks, gboolean margin_dot)
{
  double badge = (n->error ? 22 : 0) + ((marks & TWB_MARK_FROZEN) ? 18 : 0)
                 + (n->output != TWB_OUTPUT_NONE ? OUTPUT_TAG_W + 4 : 0);
  double indent = margin_dot ? TWB_RENDER_MARGIN_W : 8;
  /* 20 of the header's 24 units: Pango's line is about 1.17 em. */
  double title = text_size (v, 13, TWB_RENDER_TITLE_PX, 20);
  if (title == 0)
    title = text_size (v, 13, TWB_RENDER_MIN_TEXT_PX, 20);
  if (title > 0)
    {
      layout_text (l, n->title, n->w - 8 - indent - badge, TRUE, title);
      cairo_set_source_rgb (cr, 1, 1, 1);
      draw_text (cr, l, n->x + indent, n->y + HEADER_H / 2);
      note_text (v, title);
      note_title (v, title);
    }
  /* Body lines 1.15 em + 0.9 apart (13 units at the nominal 10.5), the
   * first 2.5 units below the header; a second line where it ends 1 unit
   * above the box's bottom (at 56 units tall: type up to 11.9, zoom 0.76). */
  double body = n->h - HEADER_H;
  double sub = text_size (v, 10.5, TWB_RENDER_MIN_TEXT_PX, (body - 3.5) / 1.2);
  if (sub == 0)
    return;
  double step = 1.15 * sub + 0.9;
  double line1 = n->y + HEADER_H + 2.5 + 0.6 * sub;
  layout_text (l, n->subtitle, n->w - 20, FALSE, sub);
  set_rgb (cr, p->dim_text);
  draw_text (cr, l, n->x + 10, line1);
  note_text (v, sub);
  if (title > 0)
    last_labelled++;
  if (line1 + step + 0.6 * sub > n->y + n->h - 1)
    return;
  const char *line2 = n->error ? "error (hover for details)" : n->shape;
  if (n->is_block && !n->error)
    line2 = "double-click to expand";
  if (line2 == NULL)
    return;
  layout_text (l, line2, n->w - 20, !n->error && !n->is_block, sub);
  if (n->error)
    set_rgb (cr, p->error);
  else
    set_rgb (cr, p->text);
  draw_text (cr, l, n->x + 10, line1 + step);
  note_text (v, sub);
}

/* Lays out a tile's line in room: at size, or smaller down to min where
 * it does not fit; a dotted name that does not fit even at min loses its
 * leading parts at a dot (".3" of "features.3" inside the frame that names
 * "features": the part that tells blocks apart), and only then is
 * ellipsized in the middle (other text at its end: an op's start says its
 * family).  Returns the size. */
static double
layout_tile_text (PangoLayout *l, const char *text, gboolean bold, double size, double min,
                  double room)
{
  int tw, th;
  layout_text (l, text, -1, bold, size);
  pango_layout_get_pixel_size (l, &tw, &th);
  if (tw <= room)
    return size;
  /* Text is about as wide as it is big: the size that fits, a hair under. */
  double fit = 0.98 * size * room / MAX (tw, 1);
  if (fit >= min)
    {
      layout_text (l, text, room, bold, fit);
      return fit;
    }
  for (const char *d = strchr (text, '.'); d && d[1]; d = strchr (d + 1, '.'))
    {
      layout_text (l, d, -1, bold, min);
      pango_layout_get_pixel_size (l, &tw, &th);
      if (tw <= room)
        return min;
    }
  layout_text (l, text, room, bold, min);
  if (strchr (text, '.'))
    pango_layout_set_ellipsize (l, PANGO_ELLIPSIZE_MIDDLE);
  return min;
}

/* Far out (TWB_RENDER_PORT_SCALE to TWB_RENDER_TEXT_SCALE), on the tile
 * of the box's colour: one line in type as big as the box takes, the op
 * (it says what a node does; the colour says its family), a block's name;
 * clear of the output mark. */
static void
draw_tile_text (cairo_t *cr, const TwbSceneNode *n, const TwbRenderView *v, PangoLayout *l)
{
  /* 60 % of the box's height at most; 1.6 times the smallest size where
   * the box takes it (45 % of its height). */
  double size = text_size (v, 0, TWB_RENDER_MIN_TEXT_PX, n->h * 0.6);
  if (size == 0)
    return;
  double min = size;
  size = MAX (size, MIN (n->h * 0.45, 1.6 * TWB_RENDER_MIN_TEXT_PX / v->scale));
  double room = n->w - 16;
  if (n->output != TWB_OUTPUT_NONE)
    room -= MIN (MAX (OUTPUT_TAG_H, 8 / v->scale), n->h / 2) + 4;
  size = layout_tile_text (l, n->is_block ? n->title : n->subtitle, n->is_block, size, min, room);
  cairo_set_source_rgb (cr, 1, 1, 1);
  draw_text (cr, l, n->x + 8, n->y + n->h / 2);
  note_text (v, size);
  note_title (v, size);
}

static void
draw_ports (cairo_t *cr, const TwbGraphScene *s, int i, const TwbRenderView *v, const Palette *p)
{
  const TwbSceneNode *n = &s->nodes[i];
  if (v->scale < TWB_RENDER_PORT_SCALE)
    return;
  for (int d = 0; d < 2; d++)
    {
      int count = d == 0 ? n->n_in : n->n_out;
      for (int k = 0; k < count; k++)
        {
          double px, py;
          twb_graph_scene_port_pos (s, i, d == 0 ? TWB_PORT_INPUT : TWB_PORT_OUTPUT, k, &px,
                                    &py);
          const char *type = d == 0 ? n->in_types[k] : n->out_types[k];
          gboolean filled = d == 1 || n->in_connected[k];
          cairo_new_path (cr);
          cairo_arc (cr, px, py, PORT_R, 0, 2 * G_PI);
          if (filled)
            set_rgb (cr, dtype_color (type));
          else
            set_rgb (cr, p->body);
          cairo_fill_preserve (cr);
          set_rgb (cr, filled ? p->body : p->border);
          cairo_set_line_width (cr, 1.5);
          cairo_stroke (cr);
        }
    }
}

static void
draw_node_detailed (cairo_t *cr, const TwbGraphScene *s, int i, const TwbRenderView *v,
                    const Palette *p, PangoLayout *l)
{
  const TwbSceneNode *n = &s->nodes[i];
  gboolean text = v->scale >= TWB_RENDER_TEXT_SCALE && l != NULL;
  Rgb head = category_color (n->category);

  /* Block: a second box behind, like a stack of cards. */
  if (n->is_block)
    {
      rounded_rect (cr, n->x + 5, n->y + 5, n->w, n->h, RADIUS);
      set_rgb (cr, p->body);
      cairo_fill_preserve (cr);
      set_rgb (cr, p->border);
      cairo_set_line_width (cr, 1);
      cairo_stroke (cr);
    }

  rounded_rect (cr, n->x, n->y, n->w, n->h, RADIUS);
  set_rgb (cr, p->body);
  cairo_fill (cr);
  guint tint = v->tints ? GPOINTER_TO_UINT (g_hash_table_lookup (v->tints, n->id)) : 0;
  if (tint)
    {
      /* A fused group's colour over the body, light enough for the text. */
      rounded_rect (cr, n->x, n->y, n->w, n->h, RADIUS);
      cairo_set_source_rgba (cr, ((tint >> 16) & 0xff) / 255.0, ((tint >> 8) & 0xff) / 255.0,
                             (tint & 0xff) / 255.0, v->dark ? 0.45 : 0.35);
      cairo_fill (cr);
    }
  if (n->stage >= 0)
    {
      /* Its pipeline stage: a faint wash of the stage's colour and a band
       * along the bottom, under the text's last line. */
      const Rgb *c = &stage_colours[n->stage % G_N_ELEMENTS (stage_colours)];
      cairo_save (cr);
      rounded_rect (cr, n->x, n->y, n->w, n->h, RADIUS);
      cairo_clip (cr);
      cairo_set_source_rgba (cr, c->r, c->g, c->b, v->dark ? 0.22 : 0.12);
      cairo_paint (cr);
      cairo_rectangle (cr, n->x, n->y + n->h - STAGE_BAND_H, n->w, STAGE_BAND_H);
      set_rgb (cr, *c);
      cairo_fill (cr);
      cairo_restore (cr);
    }
  guint marks = node_marks (v, n->id);

  /* Header band (far out: the whole box, a tile of its colour). */
  cairo_save (cr);
  rounded_rect (cr, n->x, n->y, n->w, n->h, RADIUS);
  cairo_clip (cr);
  cairo_rectangle (cr, n->x, n->y, n->w, text ? HEADER_H : n->h);
  set_rgb (cr, head);
  cairo_fill (cr);
  cairo_restore (cr);

  /* Border: error beats selection beats hover. */
  rounded_rect (cr, n->x, n->y, n->w, n->h, RADIUS);
  if (n->error)
    {
      set_rgb (cr, p->error);
      cairo_set_line_width (cr, 2.5);
    }
  else if (n->selected)
    {
      set_rgb (cr, p->accent);
      cairo_set_line_width (cr, 2.5);
    }
  else if (i == v->hover)
    {
      set_rgb (cr, p->hover);
      cairo_set_line_width (cr, 1.5);
    }
  else
    {
      set_rgb (cr, p->border);
      cairo_set_line_width (cr, 1);
    }
  cairo_stroke (cr);
  if (n->error && n->selected)
    {
      /* Selected and in error: the accent ring outside the red border. */
      rounded_rect (cr, n->x - 4, n->y - 4, n->w + 8, n->h + 8, RADIUS + 3);
      set_rgb (cr, p->accent);
      cairo_set_line_width (cr, 2);
      cairo_stroke (cr);
    }
  if (marks & (TWB_MARK_CURRENT | TWB_MARK_FAULT))
    {
      /* Where a paused run is (amber), or where it failed (red). */
      rounded_rect (cr, n->x - 4, n->y - 4, n->w + 8, n->h + 8, RADIUS + 3);
      if (marks & TWB_MARK_FAULT)
        set_rgb (cr, p->error);
      else
        cairo_set_source_rgb (cr, 0.96, 0.66, 0.0);      /* GNOME yellow 5 (#e5a50a), both themes */
      cairo_set_line_width (cr, 3.5);
      cairo_stroke (cr);
    }
  if (i == v->focus)
    {
      rounded_rect (cr, n->x - 7, n->y - 7, n->w + 14, n->h + 14, RADIUS + 5);
      set_rgb (cr, p->accent);
      cairo_set_line_width (cr, 1);
      cairo_set_dash (cr, (double[]) { 3, 3 }, 2, 0);
      cairo_stroke (cr);
      cairo_set_dash (cr, NULL, 0, 0);
    }

  gboolean dot = (marks & (TWB_MARK_BREAK_FORWARD | TWB_MARK_BREAK_BACKWARD)) != 0;
  gboolean faint_dot = !dot && v->hover_margin == i && !n->is_block;
  if (dot || faint_dot)
    draw_breakpoint (cr, p, n->x + TWB_RENDER_MARGIN_W / 2, n->y + HEADER_H / 2, marks, faint_dot);
  if (marks & TWB_MARK_FROZEN)
    draw_lock (cr, n->x + n->w - (n->error ? 36 : 14), n->y + HEADER_H / 2 - 2);
  /* Left of the error badge and the lock. */
  double tag_right = n->x + n->w - 6 - (n->error ? 22 : 0) - ((marks & TWB_MARK_FROZEN) ? 18 : 0);
  if (n->output != TWB_OUTPUT_NONE)
    draw_output_tag (cr, n, tag_right, v, head, n->output == TWB_OUTPUT_MARKED, text ? l : NULL);
  if (text)
    draw_node_text (cr, n, v, p, l, marks, dot || faint_dot);
  else if (l)
    draw_tile_text (cr, n, v, l);
  if (n->error)
    draw_error_badge (cr, p, n->x + n->w - 14, n->y + HEADER_H / 2, l, v);

  draw_ports (cr, s, i, v, p);
}

/* Frames: a tint of the accent's colour over the canvas and a stronger one
 * on the band, a little stronger for each frame a frame is in (three
 * levels told apart); at the strongest (0.21) the text on it keeps a
 * contrast of about 14:1 in the light theme and 9:1 in the dark one. */
static double
frame_alpha (const TwbSceneFrame *f, gboolean band)
{
  return (band ? 0.12 : 0.04) + 0.03 * MIN (f->depth, 3);
}

/* The band's close button: a disc with a minus. */
static void
draw_frame_button (cairo_t *cr, const TwbGraphScene *s, int i, const Palette *p)
{
  double cx, cy, r;
  twb_graph_scene_frame_button (s, i, &cx, &cy, &r);
  cairo_new_path (cr);
  cairo_arc (cr, cx, cy, r, 0, 2 * G_PI);
  set_rgb (cr, p->body);
  cairo_fill_preserve (cr);
  set_rgb (cr, p->border);
  cairo_set_line_width (cr, 1);
  cairo_stroke (cr);
  cairo_move_to (cr, cx - r / 2, cy);
  cairo_line_to (cr, cx + r / 2, cy);
  set_rgb (cr, p->text);
  cairo_set_line_width (cr, 2);
  cairo_stroke (cr);
}

/* One expanded block's frame with its name (and what it holds) in its
 * band; TRUE when the band is too thin for the type at this zoom, so the
 * name goes on a label over the picture (draw_frame_label). */
static gboolean
draw_frame (cairo_t *cr, const TwbGraphScene *s, int i, const TwbRenderView *v, const Palette *p,
            PangoLayout *l)
{
  const TwbSceneFrame *f = &s->frames[i];
  if (!visible (v, f->x, f->y, f->x + f->w, f->y + f->h))
    return FALSE;
  const double band = TW_LAYOUT_FRAME_HEADER;
  rounded_rect (cr, f->x, f->y, f->w, f->h, RADIUS + 2);
  cairo_set_source_rgba (cr, p->accent.r, p->accent.g, p->accent.b, frame_alpha (f, FALSE));
  cairo_fill (cr);
  cairo_save (cr);
  rounded_rect (cr, f->x, f->y, f->w, f->h, RADIUS + 2);
  cairo_clip (cr);
  cairo_rectangle (cr, f->x, f->y, f->w, band);
  cairo_set_source_rgba (cr, p->accent.r, p->accent.g, p->accent.b, frame_alpha (f, TRUE));
  cairo_fill (cr);
  cairo_restore (cr);
  rounded_rect (cr, f->x, f->y, f->w, f->h, RADIUS + 2);
  if (f->selected)
    {
      set_rgb (cr, p->accent);
      cairo_set_line_width (cr, MAX (2.5, 1.5 / v->scale));
    }
  else
    {
      cairo_set_source_rgba (cr, p->accent.r, p->accent.g, p->accent.b, 0.45);
      cairo_set_line_width (cr, MAX (1.0, 1.0 / v->scale));
    }
  cairo_stroke (cr);
  /* The button where it is at least 8 px across. */
  double bcx, bcy, br;
  twb_graph_scene_frame_button (s, i, &bcx, &bcy, &br);
  gboolean button = 2 * br * v->scale >= 8;
  if (button)
    draw_frame_button (cr, s, i, p);
  if (l == NULL)
    return FALSE;
  /* 14 units bold, or bigger up to 24 (the band's 34 less a margin). */
  double size = text_size (v, 14, TWB_RENDER_TITLE_PX, 24);
  if (size == 0)
    return TRUE;
  g_autofree char *text = g_strdup_printf ("%s  ·  %s", f->name, f->summary);
  double right = button ? 2 * br + 14 : 8;
  layout_text (l, text, f->w - 10 - right, FALSE, size);
  PangoAttrList *attrs = pango_attr_list_new ();
  PangoAttribute *bold = pango_attr_weight_new (PANGO_WEIGHT_BOLD);
  bold->start_index = 0;
  bold->end_index = strlen (f->name);
  pango_attr_list_insert (attrs, bold);
  pango_layout_set_attributes (l, attrs);
  pango_attr_list_unref (attrs);
  set_rgb (cr, p->text);
  draw_text (cr, l, f->x + 10, f->y + band / 2);
  pango_layout_set_attributes (l, NULL);
  note_text (v, size);
  return FALSE;
}

/* Far out, a frame's name on a label at its top left, at the size names
 * get (TWB_RENDER_TITLE_PX), over whatever is there. */
static void
draw_frame_label (cairo_t *cr, const TwbGraphScene *s, int i, const TwbRenderView *v,
                  const Palette *p, PangoLayout *l)
{
  const TwbSceneFrame *f = &s->frames[i];
  if (l == NULL || !visible (v, f->x, f->y, f->x + f->w, f->y + f->h)
      || text_size (v, 14, TWB_RENDER_TITLE_PX, 24) > 0)
    return;
  double size = TWB_RENDER_TITLE_PX / v->scale;
  /* Not wider than the frame: a name that does not fit is left out. */
  layout_text (l, f->name, -1, TRUE, size);
  int w, h;
  pango_layout_get_pixel_size (l, &w, &h);
  double pad = 3 / v->scale;
  if (w + 2 * pad > f->w)
    return;
  rounded_rect (cr, f->x, f->y, w + 2 * pad, h + 2 * pad, 3 / v->scale);
  set_rgb (cr, p->body);
  cairo_fill_preserve (cr);
  cairo_set_source_rgba (cr, p->accent.r, p->accent.g, p->accent.b, 0.8);
  cairo_set_line_width (cr, 1 / v->scale);
  cairo_stroke (cr);
  set_rgb (cr, p->text);
  cairo_move_to (cr, f->x + pad, f->y + pad);
  pango_cairo_show_layout (cr, l);
  note_text (v, size);
}

/* The empty canvas's hint: centred in the viewport at screen size, muted. */
static void
draw_hint (cairo_t *cr, const TwbRenderView *v, const Palette *p)
{
  PangoLayout *l = pango_cairo_create_layout (cr);
  layout_text (l, v->hint, MAX (v->width - 40, 100), FALSE, 15);
  pango_layout_set_alignment (l, PANGO_ALIGN_CENTER);
  pango_layout_set_ellipsize (l, PANGO_ELLIPSIZE_NONE);
  pango_layout_set_wrap (l, PANGO_WRAP_WORD);
  int w, h;
  pango_layout_get_pixel_size (l, &w, &h);
  set_rgb (cr, p->dim_text);
  cairo_move_to (cr, (v->width - MAX (v->width - 40, 100)) / 2.0, (v->height - h) / 2.0);
  pango_cairo_show_layout (cr, l);
  g_object_unref (l);
  last_hint = TRUE;
}

/* The stages' legend in the viewport's bottom left corner (the minimap
 * takes the right): "stage 0", "stage 1", … each after its swatch, on one
 * row while they fit, then wrapping. */
#define LEGEND_PAD 8.0
#define LEGEND_SWATCH 12.0

static void
draw_stage_legend (cairo_t *cr, const TwbGraphScene *s, const TwbRenderView *v, const Palette *p)
{
  PangoLayout *l = pango_cairo_create_layout (cr);
  double max_w = MIN (v->width * 0.5, 420), row_h = 0, x = 0, w_used = 0;
  int rows = 1;
  g_autofree double *xs = g_new (double, s->n_stages);
  g_autofree int *row_of = g_new (int, s->n_stages);
  for (int k = 0; k < s->n_stages; k++)
    {
      g_autofree char *t = g_strdup_printf ("stage %d", k);
      layout_text (l, t, -1, FALSE, 12);
      int tw, th;
      pango_layout_get_pixel_size (l, &tw, &th);
      double item = LEGEND_SWATCH + 4 + tw;
      if (x > 0 && x + item > max_w)
        {
          rows++;
          x = 0;
        }
      xs[k] = x;
      row_of[k] = rows - 1;
      x += item + 10;
      w_used = MAX (w_used, x - 10);
      row_h = MAX (row_h, MAX (th, LEGEND_SWATCH));
    }
  double bw = w_used + 2 * LEGEND_PAD, bh = rows * row_h + (rows - 1) * 4 + 2 * LEGEND_PAD;
  double bx = 12, by = v->height - 12 - bh;
  rounded_rect (cr, bx, by, bw, bh, 6);
  cairo_set_source_rgba (cr, p->body.r, p->body.g, p->body.b, 0.92);
  cairo_fill_preserve (cr);
  set_rgb (cr, p->border);
  cairo_set_line_width (cr, 1);
  cairo_stroke (cr);
  for (int k = 0; k < s->n_stages; k++)
    {
      double ix = bx + LEGEND_PAD + xs[k];
      double iy = by + LEGEND_PAD + row_of[k] * (row_h + 4);
      const Rgb *c = &stage_colours[k % G_N_ELEMENTS (stage_colours)];
      rounded_rect (cr, ix, iy + (row_h - LEGEND_SWATCH) / 2, LEGEND_SWATCH, LEGEND_SWATCH, 3);
      set_rgb (cr, *c);
      cairo_fill (cr);
      g_autofree char *t = g_strdup_printf ("stage %d", k);
      layout_text (l, t, -1, FALSE, 12);
      set_rgb (cr, p->text);
      draw_text (cr, l, ix + LEGEND_SWATCH + 4, iy + row_h / 2);
    }
  g_object_unref (l);
}

void
twb_graph_render (cairo_t *cr, const TwbGraphScene *s, const TwbRenderView *v)
{
  const Palette *p = v->dark ? &dark : &light;
  last_drawn = 0;
  last_labels = 0;
  last_labelled = 0;
  last_named = 0;
  last_min_px = 0;
  last_min_title_px = 0;
  last_hint = FALSE;

  cairo_save (cr);
  if (v->width > 0 && v->height > 0)
    {
      set_rgb (cr, p->bg);
      cairo_rectangle (cr, 0, 0, v->width, v->height);
      cairo_fill (cr);
    }
  cairo_translate (cr, v->tx, v->ty);
  cairo_scale (cr, v->scale, v->scale);
  draw_grid (cr, v, p);

  PangoLayout *l = NULL;
  if (v->scale >= TWB_RENDER_PORT_SCALE || s->n_frames > 0)
    {
      l = pango_cairo_create_layout (cr);
      cairo_font_options_t *fo = cairo_font_options_create ();
      /* Hinting metrics off: text scales smoothly with the zoom. */
      cairo_font_options_set_hint_metrics (fo, CAIRO_HINT_METRICS_OFF);
      pango_cairo_context_set_font_options (pango_layout_get_context (l), fo);
      pango_layout_context_changed (l);
      cairo_font_options_destroy (fo);
    }

  gboolean labels_on_top = FALSE;
  for (int f = 0; f < s->n_frames; f++)
    labels_on_top |= draw_frame (cr, s, f, v, p, l);
  draw_edges (cr, s, v, p, v->scale >= TWB_RENDER_TEXT_SCALE ? l : NULL);

  if (v->scale < TWB_RENDER_PORT_SCALE)
    {
      /* Far out: boxes only, batched per colour (error, selected, rest). */
      for (int pass = 0; pass < 3; pass++)
        {
          for (int i = 0; i < s->n_nodes; i++)
            {
              const TwbSceneNode *n = &s->nodes[i];
              int kind = n->error ? 0 : n->selected ? 1 : 2;
              if (kind != pass || !visible (v, n->x, n->y, n->x + n->w, n->y + n->h))
                continue;
              cairo_rectangle (cr, n->x, n->y, n->w, n->h);
              last_drawn++;
            }
          if (pass == 2 && v->scale * 140 >= 8)
            {
              set_rgb (cr, p->body);
              cairo_fill_preserve (cr);
              set_rgb (cr, p->border);
              cairo_set_line_width (cr, 1.0 / v->scale);
              cairo_stroke (cr);
            }
          else if (pass == 2)
            {
              /* Boxes under 8 px: a border would cover them; fill only. */
              set_rgb (cr, p->border);
              cairo_fill (cr);
            }
          else
            {
              set_rgb (cr, pass == 0 ? p->error : p->accent);
              cairo_fill (cr);
            }
        }
    }
  else
    {
      for (int i = 0; i < s->n_nodes; i++)
        {
          const TwbSceneNode *n = &s->nodes[i];
          if (!visible (v, n->x - 10, n->y - 10, n->x + n->w + 10, n->y + n->h + 10))
            continue;
          draw_node_detailed (cr, s, i, v, p, l);
          last_drawn++;
        }
    }

  if (labels_on_top)
    for (int f = 0; f < s->n_frames; f++)
      draw_frame_label (cr, s, f, v, p, l);
  if (v->connecting)
    {
      double x0 = v->cx0, y0 = v->cy0, x3 = v->cx1, y3 = v->cy1;
      edge_path (cr, s, x0, y0, x3, y3, FALSE);
      set_rgb (cr, v->connect_ok ? p->accent : p->error);
      cairo_set_line_width (cr, MAX (2.0, 1.5 / v->scale));
      cairo_set_dash (cr, (double[]) { 6, 4 }, 2, 0);
      cairo_stroke (cr);
      cairo_set_dash (cr, NULL, 0, 0);
    }
  if (v->banding)
    {
      cairo_rectangle (cr, MIN (v->bx0, v->bx1), MIN (v->by0, v->by1), fabs (v->bx1 - v->bx0),
                       fabs (v->by1 - v->by0));
      cairo_set_source_rgba (cr, p->accent.r, p->accent.g, p->accent.b, 0.15);
      cairo_fill_preserve (cr);
      set_rgb (cr, p->accent);
      cairo_set_line_width (cr, 1.0 / v->scale);
      cairo_stroke (cr);
    }
  g_clear_object (&l);
  cairo_restore (cr);
  if (v->hint && s->n_nodes == 0 && v->width > 0 && v->height > 0)
    draw_hint (cr, v, p);
  if (s->n_stages > 0 && v->width > 0 && v->height > 0)
    draw_stage_legend (cr, s, v, p);
}

typedef struct
{
  const TwbGraphScene *s;
  gboolean dark;
  double tx, ty;
} ExportJob;

static void
draw_export (cairo_t *cr, double w, double h, gpointer data)
{
  const ExportJob *j = data;
  TwbRenderView v;
  twb_render_view_init (&v);
  v.dark = j->dark;
  v.grid = 0;
  v.width = w;
  v.height = h;
  v.tx = j->tx;
  v.ty = j->ty;
  twb_graph_render (cr, j->s, &v);
}

gboolean
twb_graph_export (const TwbGraphScene *s, const char *path, gboolean dark_theme, GError **error)
{
  const double margin = 40;
  double w = (s->max_x - s->min_x) + 2 * margin, h = (s->max_y - s->min_y) + 2 * margin;
  if (s->n_nodes == 0)
    w = h = 2 * margin;
  ExportJob j = { s, dark_theme, margin - s->min_x, margin - s->min_y };
  /* PNG at 2 device pixels per unit: crisp text when zoomed in a viewer. */
  return twb_picture_save (path, w, h, 2, TWB_PICTURE_PNG | TWB_PICTURE_SVG | TWB_PICTURE_PDF,
                           draw_export, &j, error);
}
