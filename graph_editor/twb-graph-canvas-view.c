/* twb-graph-canvas-view.c — the canvas view: zoom, fit (clear of the
 * minimap), centring, snapping and the empty-canvas hint. */
#define G_LOG_DOMAIN "twb-graph-canvas"

#include "graph_editor/twb-graph-canvas-private.h"

#include <math.h>
#include <string.h>

/* ---- View ------------------------------------------------------------------ */

void
twb_canvas_zoom_about (TwbGraphCanvas *self, double new_scale, double wx, double wy)
{
  new_scale = CLAMP (new_scale, MIN_ZOOM, MAX_ZOOM);
  double mx, my;
  twb_canvas_to_model (self, wx, wy, &mx, &my);
  self->view.scale = new_scale;
  self->view.tx = wx - mx * new_scale;
  self->view.ty = wy - my * new_scale;
  twb_canvas_view_changed (self);
}

void
twb_graph_canvas_zoom_by (TwbGraphCanvas *self, double factor)
{
  int w = gtk_widget_get_width (GTK_WIDGET (self)), h = gtk_widget_get_height (GTK_WIDGET (self));
  twb_canvas_zoom_about (self, self->view.scale * factor, w / 2.0, h / 2.0);
}

double
twb_graph_canvas_get_zoom (TwbGraphCanvas *self)
{
  return self->view.scale;
}

void
twb_canvas_fit_in (TwbGraphCanvas *self, int w, int h)
{
  self->fit_pending = FALSE;
  if (self->scene == NULL || self->scene->n_nodes == 0 || w <= 0 || h <= 0)
    {
      self->view.scale = 1;
      self->view.tx = 40;
      self->view.ty = 40;
      twb_canvas_view_changed (self);
      return;
    }
  /* The layout's own fit (engine/layout.h) over the boxes and frames
   * drawn: 40 px margins, never beyond 100 %, each clear of the minimap. */
  const TwbGraphScene *sc = self->scene;
  double bw = sc->max_x - sc->min_x, bh = sc->max_y - sc->min_y;
  double cx = sc->min_x + bw / 2, cy = sc->min_y + bh / 2;
  g_autofree double *boxes = g_new (double, 4 * (sc->n_nodes + sc->n_frames));
  for (int i = 0; i < sc->n_nodes; i++)
    {
      const TwbSceneNode *nd = &sc->nodes[i];
      double *b = &boxes[4 * i];
      b[0] = nd->x, b[1] = nd->y, b[2] = nd->w, b[3] = nd->h;
    }
  for (int k = 0; k < sc->n_frames; k++)
    {
      const TwbSceneFrame *fr = &sc->frames[k];
      double *b = &boxes[4 * (sc->n_nodes + k)];
      b[0] = fr->x, b[1] = fr->y, b[2] = fr->w, b[3] = fr->h;
    }
  tw_layout_view lv;
  twb_canvas_layout_view (self, w, h, &lv);
  double acx, acy;
  double best_s = tw_layout_fit_boxes (&lv, boxes, sc->n_nodes + sc->n_frames, &acx, &acy);
  double best_tx = acx - cx * best_s, best_ty = acy - cy * best_s;
  self->view.scale = best_s;
  self->view.tx = best_tx;
  self->view.ty = best_ty;
  self->fitted = self->view;
  self->fitted_w = w;
  self->fitted_h = h;
  twb_canvas_view_changed (self);
}

void
twb_canvas_layout_view (TwbGraphCanvas *self, int w, int h, tw_layout_view *lv)
{
  const graphene_rect_t *m = &self->minimap_rect;
  gboolean map = self->show_minimap && m->size.width > 0 && m->size.height > 0;
  *lv = (tw_layout_view) { w, h, map ? m->origin.x : 0, map ? m->origin.y : 0,
                           map ? m->size.width : 0, map ? m->size.height : 0 };
}

void
twb_canvas_tell_view (TwbGraphCanvas *self)
{
  int w = gtk_widget_get_width (GTK_WIDGET (self)), h = gtk_widget_get_height (GTK_WIDGET (self));
  if (self->doc == NULL || w <= 0 || h <= 0)
    return;
  tw_layout_view lv;
  twb_canvas_layout_view (self, w, h, &lv);
  twb_document_set_view (self->doc, &lv);
}

void
twb_graph_canvas_zoom_to_fit (TwbGraphCanvas *self)
{
  twb_canvas_fit_in (self, gtk_widget_get_width (GTK_WIDGET (self)), gtk_widget_get_height (GTK_WIDGET (self)));
}

/* A view still as the last fit left it, at the same canvas size, follows
 * the minimap (a resized canvas keeps its view, as it always has). */
void
twb_canvas_refit_if_fitted (TwbGraphCanvas *self)
{
  int w = gtk_widget_get_width (GTK_WIDGET (self)), h = gtk_widget_get_height (GTK_WIDGET (self));
  gboolean still = self->fitted.scale > 0 && self->view.scale == self->fitted.scale
                   && self->view.tx == self->fitted.tx && self->view.ty == self->fitted.ty
                   && w == self->fitted_w && h == self->fitted_h;
  if (still && !self->fit_pending && w > 0)
    twb_graph_canvas_zoom_to_fit (self);
}

void
twb_graph_canvas_refit_on_resize (TwbGraphCanvas *self)
{
  g_return_if_fail (TWB_IS_GRAPH_CANVAS (self));
  gboolean still = self->fitted.scale > 0 && self->view.scale == self->fitted.scale
                   && self->view.tx == self->fitted.tx && self->view.ty == self->fitted.ty;
  if (still)
    {
      self->fit_pending = TRUE;
      gtk_widget_queue_allocate (GTK_WIDGET (self));
    }
}

void
twb_graph_canvas_set_show_minimap (TwbGraphCanvas *self, gboolean show)
{
  g_return_if_fail (TWB_IS_GRAPH_CANVAS (self));
  show = !!show;
  if (self->show_minimap == show)
    return;
  self->show_minimap = show;
  g_object_notify (G_OBJECT (self), "show-minimap");
  twb_canvas_tell_view (self);
  twb_canvas_refit_if_fitted (self);
}

gboolean
twb_graph_canvas_get_show_minimap (TwbGraphCanvas *self)
{
  g_return_val_if_fail (TWB_IS_GRAPH_CANVAS (self), FALSE);
  return self->show_minimap;
}

void
twb_graph_canvas_set_minimap_rect (TwbGraphCanvas *self, const graphene_rect_t *rect)
{
  g_return_if_fail (TWB_IS_GRAPH_CANVAS (self));
  graphene_rect_t r = rect ? *rect : GRAPHENE_RECT_INIT (0, 0, 0, 0);
  if (graphene_rect_equal (&r, &self->minimap_rect))
    return;
  self->minimap_rect = r;
  twb_canvas_tell_view (self);
  if (rect == NULL)
    return;   /* the minimap going away */
  /* The minimap is allocated after the canvas: a view still as the last
   * fit left it is fitted again around the minimap's new place. */
  twb_canvas_refit_if_fitted (self);
}

gboolean
twb_graph_canvas_get_minimap_rect (TwbGraphCanvas *self, graphene_rect_t *rect)
{
  g_return_val_if_fail (TWB_IS_GRAPH_CANVAS (self), FALSE);
  if (rect)
    *rect = self->minimap_rect;
  return self->show_minimap && self->minimap_rect.size.width > 0
         && self->minimap_rect.size.height > 0;
}

const char *
twb_graph_canvas_get_hint (TwbGraphCanvas *self)
{
  g_return_val_if_fail (TWB_IS_GRAPH_CANVAS (self), NULL);
  if (self->doc == NULL || (self->scene && self->scene->n_nodes > 0))
    return NULL;
  return EMPTY_HINT;
}

void
twb_graph_canvas_center_on (TwbGraphCanvas *self, double x, double y)
{
  int w = gtk_widget_get_width (GTK_WIDGET (self)), h = gtk_widget_get_height (GTK_WIDGET (self));
  self->view.tx = w / 2.0 - x * self->view.scale;
  self->view.ty = h / 2.0 - y * self->view.scale;
  twb_canvas_view_changed (self);
}

void
twb_graph_canvas_get_visible (TwbGraphCanvas *self, double *x, double *y, double *w, double *h)
{
  int ww = gtk_widget_get_width (GTK_WIDGET (self)), wh = gtk_widget_get_height (GTK_WIDGET (self));
  twb_canvas_to_model (self, 0, 0, x, y);
  *w = ww / self->view.scale;
  *h = wh / self->view.scale;
}

void
twb_graph_canvas_set_snap_to_grid (TwbGraphCanvas *self, gboolean snap)
{
  self->snap = snap;
}

gboolean
twb_graph_canvas_get_snap_to_grid (TwbGraphCanvas *self)
{
  return self->snap;
}

void
twb_graph_canvas_reveal_node (TwbGraphCanvas *self, const char *id)
{
  if (self->doc == NULL || id == NULL)
    return;
  const char *ids[] = { id, NULL };
  g_free (self->focus_id);
  self->focus_id = g_strdup (id);
  twb_document_select (self->doc, ids, FALSE);
  int i = self->scene ? twb_graph_scene_find (self->scene, id) : -1;
  if (i < 0)
    return;
  const TwbSceneNode *n = &self->scene->nodes[i];
  double vx, vy, vw, vh;
  twb_graph_canvas_get_visible (self, &vx, &vy, &vw, &vh);
  if (n->x < vx || n->y < vy || n->x + n->w > vx + vw || n->y + n->h > vy + vh)
    twb_graph_canvas_center_on (self, n->x + n->w / 2, n->y + n->h / 2);
  twb_canvas_update_accessible (self);
  gtk_widget_queue_draw (GTK_WIDGET (self));
}


/* ---- Debugger marks and fused-group tints ------------------------------------------- */

gboolean
twb_canvas_in_margin (TwbGraphCanvas *self, int i, double mx, double my)
{
  const TwbSceneNode *n = &self->scene->nodes[i];
  return !n->is_block && self->view.scale >= TWB_RENDER_TEXT_SCALE && mx >= n->x
         && mx < n->x + TWB_RENDER_MARGIN_W && my >= n->y && my < n->y + TWB_RENDER_HEADER_H;
}

static GHashTable *
copy_table (GHashTable *t)
{
  if (t == NULL || g_hash_table_size (t) == 0)
    return NULL;
  GHashTable *c = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init (&it, t);
  while (g_hash_table_iter_next (&it, &k, &v))
    g_hash_table_insert (c, g_strdup (k), v);
  return c;
}

void
twb_graph_canvas_set_marks (TwbGraphCanvas *self, GHashTable *marks)
{
  g_clear_pointer (&self->view.marks, g_hash_table_unref);
  self->view.marks = copy_table (marks);
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

guint
twb_graph_canvas_get_mark (TwbGraphCanvas *self, const char *id)
{
  if (self->view.marks == NULL || id == NULL)
    return 0;
  return GPOINTER_TO_UINT (g_hash_table_lookup (self->view.marks, id));
}

void
twb_graph_canvas_set_tints (TwbGraphCanvas *self, GHashTable *tints)
{
  g_clear_pointer (&self->view.tints, g_hash_table_unref);
  self->view.tints = copy_table (tints);
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

guint
twb_graph_canvas_get_tint (TwbGraphCanvas *self, const char *id)
{
  if (self->view.tints == NULL || id == NULL)
    return 0;
  return GPOINTER_TO_UINT (g_hash_table_lookup (self->view.tints, id));
}

gboolean
twb_graph_canvas_get_stage_colour (TwbGraphCanvas *self, const char *id, int *stage,
                                   GdkRGBA *colour)
{
  int i = self->scene ? twb_graph_scene_find (self->scene, id) : -1;
  int st = i >= 0 ? self->scene->nodes[i].stage : -1;
  if (stage)
    *stage = st;
  if (st < 0)
    return FALSE;
  double rgb[3];
  twb_graph_render_stage_colour (st, rgb);
  if (colour)
    *colour = (GdkRGBA) { (float) rgb[0], (float) rgb[1], (float) rgb[2], 1 };
  return TRUE;
}

int
twb_graph_canvas_get_n_stages (TwbGraphCanvas *self)
{
  return self->scene ? self->scene->n_stages : 0;
}

/* ---- Blocks opening and closing ------------------------------------------------ */

/* Margin kept around a block brought into view, device px: the width of a
 * port and its hit area. */
#define SHOW_MARGIN 24.0

/* The model rectangle x, y, w × h in view: panned the least that does it,
 * zoomed out first where it is bigger than the canvas (not below
 * TWB_RENDER_TEXT_SCALE, where names would go; then its top left shows). */
static void
show_rect (TwbGraphCanvas *self, double x, double y, double w, double h)
{
  int cw = gtk_widget_get_width (GTK_WIDGET (self)), ch = gtk_widget_get_height (GTK_WIDGET (self));
  if (cw <= 0 || ch <= 0)
    return;
  double fit = MIN ((cw - 2 * SHOW_MARGIN) / MAX (w, 1), (ch - 2 * SHOW_MARGIN) / MAX (h, 1));
  if (fit < self->view.scale)
    {
      double s = MAX (fit, MIN (self->view.scale, TWB_RENDER_TEXT_SCALE));
      twb_canvas_zoom_about (self, s, x * self->view.scale + self->view.tx,
                             y * self->view.scale + self->view.ty);
    }
  double s = self->view.scale;
  double sx0 = x * s + self->view.tx, sy0 = y * s + self->view.ty;
  double sx1 = sx0 + w * s, sy1 = sy0 + h * s;
  double dx = 0, dy = 0;
  if (sx1 > cw - SHOW_MARGIN)
    dx = cw - SHOW_MARGIN - sx1;
  if (sx0 + dx < SHOW_MARGIN)
    dx = SHOW_MARGIN - sx0;
  if (sy1 > ch - SHOW_MARGIN)
    dy = ch - SHOW_MARGIN - sy1;
  if (sy0 + dy < SHOW_MARGIN)
    dy = SHOW_MARGIN - sy0;
  self->view.tx += dx;
  self->view.ty += dy;
}

void
twb_canvas_toggle_block (TwbGraphCanvas *self, const char *name, gboolean open)
{
  if (self->doc == NULL || name == NULL)
    return;
  g_autofree char *id = g_strdup (name);
  double bx, by;
  twb_document_block_position (self->doc, id, &bx, &by);
  double sx = bx * self->view.scale + self->view.tx, sy = by * self->view.scale + self->view.ty;
  g_autoptr (GError) error = NULL;
  gboolean ok = open ? twb_document_expand_block (self->doc, id, &error)
                     : twb_document_collapse_block (self->doc, id, &error);
  if (!ok)
    {
      twb_canvas_set_message (self, error->message);
      return;
    }
  /* The block's corner stays where it was on screen, the rest moved; an
   * opened block's frame is brought into view whole. */
  g_autoptr (GPtrArray) boxes = twb_document_block_boxes (self->doc);
  for (guint k = 0; k < boxes->len; k++)
    {
      const tw_layout_block *b = g_ptr_array_index (boxes, k);
      if (strcmp (b->name, id) != 0)
        continue;
      self->view.tx = sx - b->x * self->view.scale;
      self->view.ty = sy - b->y * self->view.scale;
      show_rect (self, b->x, b->y, b->w, b->h);
      break;
    }
  twb_canvas_view_changed (self);
}
