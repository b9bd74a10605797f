/* twb-graph-canvas.c — the node-graph editor widget. */
#define G_LOG_DOMAIN "twb-graph-canvas"

#include "graph_editor/twb-graph-canvas-private.h"

#include <math.h>
#include <string.h>

G_DEFINE_FINAL_TYPE (TwbGraphCanvas, twb_graph_canvas, GTK_TYPE_WIDGET)

enum
{
  SIGNAL_MESSAGE,
  SIGNAL_ACTIVATE_NODE,
  SIGNAL_VIEW_CHANGED,
  SIGNAL_MARGIN_CLICKED,
  N_SIGNALS
};
static guint signals[N_SIGNALS];

enum
{
  PROP_0,
  PROP_SHOW_MINIMAP,
  N_PROPS
};
static GParamSpec *props[N_PROPS];


void
twb_canvas_to_model (TwbGraphCanvas *self, double wx, double wy, double *mx, double *my)
{
  *mx = (wx - self->view.tx) / self->view.scale;
  *my = (wy - self->view.ty) / self->view.scale;
}

void
twb_canvas_view_changed (TwbGraphCanvas *self)
{
  gtk_widget_queue_draw (GTK_WIDGET (self));
  g_signal_emit (self, signals[SIGNAL_VIEW_CHANGED], 0);
}

void
twb_canvas_set_message (TwbGraphCanvas *self, const char *text)
{
  g_free (self->message);
  self->message = g_strdup (text);
  g_signal_emit (self, signals[SIGNAL_MESSAGE], 0, text);
}

void
twb_canvas_update_accessible (TwbGraphCanvas *self)
{
  g_autofree char *label = NULL;
  const char *desc = "No node has the focus. Tab moves between nodes.";
  int fi = self->scene ? twb_graph_scene_find (self->scene, self->focus_id) : -1;
  if (self->scene)
    label = g_strdup_printf ("Graph canvas: %d nodes, %d edges, %d errors", self->scene->n_nodes,
                             self->scene->n_edges, self->scene->n_errors);
  if (fi >= 0)
    desc = self->scene->nodes[fi].accessible;
  gtk_accessible_update_property (GTK_ACCESSIBLE (self), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  label ? label : "Graph canvas", GTK_ACCESSIBLE_PROPERTY_DESCRIPTION,
                                  desc, -1);
}

static void
rebuild_scene (TwbGraphCanvas *self)
{
  g_clear_pointer (&self->scene, twb_graph_scene_free);
  if (self->doc)
    self->scene = twb_graph_scene_new (self->doc);
  if (self->scene && self->focus_id && twb_graph_scene_find (self->scene, self->focus_id) < 0)
    g_clear_pointer (&self->focus_id, g_free);
  self->view.hover = -1;
  self->view.hover_edge = -1;
  self->view.selected_edge = twb_graph_scene_find_edge (self->scene, self->edge_to,
                                                        self->edge_port);
  if (self->view.selected_edge < 0)
    g_clear_pointer (&self->edge_to, g_free);
  twb_canvas_update_accessible (self);
  twb_canvas_view_changed (self);
}

static void
on_doc_changed (TwbDocument *doc, guint flags, TwbGraphCanvas *self)
{
  rebuild_scene (self);
}

static void
on_selection_changed (TwbDocument *doc, TwbGraphCanvas *self)
{
  /* Selecting nodes deselects the edge. */
  g_auto (GStrv) sel = twb_document_get_selection (doc);
  if (sel && sel[0])
    g_clear_pointer (&self->edge_to, g_free);
  rebuild_scene (self);
}

void
twb_graph_canvas_set_document (TwbGraphCanvas *self, TwbDocument *doc)
{
  g_return_if_fail (TWB_IS_GRAPH_CANVAS (self));
  if (self->doc == doc)
    return;
  if (self->doc)
    {
      g_clear_signal_handler (&self->changed_id, self->doc);
      g_clear_signal_handler (&self->selection_id, self->doc);
      g_clear_object (&self->doc);
    }
  g_clear_pointer (&self->focus_id, g_free);
  g_clear_pointer (&self->edge_to, g_free);
  if (doc)
    {
      self->doc = g_object_ref (doc);
      self->changed_id = g_signal_connect (doc, "changed", G_CALLBACK (on_doc_changed), self);
      self->selection_id = g_signal_connect (doc, "selection-changed",
                                             G_CALLBACK (on_selection_changed), self);
    }
  self->fit_pending = TRUE;
  twb_canvas_tell_view (self);
  rebuild_scene (self);
  if (gtk_widget_get_width (GTK_WIDGET (self)) > 0)
    twb_graph_canvas_zoom_to_fit (self);
}

TwbDocument *
twb_graph_canvas_get_document (TwbGraphCanvas *self)
{
  return self->doc;
}

const TwbGraphScene *
twb_graph_canvas_get_scene (TwbGraphCanvas *self)
{
  return self->scene;
}

const char *
twb_graph_canvas_get_last_message (TwbGraphCanvas *self)
{
  return self->message;
}

/* ---- Edits --------------------------------------------------------------- */

static double
snap_value (TwbGraphCanvas *self, double v)
{
  if (!self->snap || self->view.grid <= 0)
    return v;
  return round (v / self->view.grid) * self->view.grid;
}

const char *
twb_graph_canvas_add_node_at (TwbGraphCanvas *self, const char *op, double x, double y)
{
  g_autoptr (GError) error = NULL;
  if (self->doc == NULL)
    return NULL;
  double mx, my;
  twb_canvas_to_model (self, x, y, &mx, &my);
  /* Centre the box on the drop point, with the size of an existing node of
   * this op (the document decides sizes). */
  double w = 160, h = 64;
  if (self->scene && self->scene->n_nodes > 0)
    {
      w = self->scene->nodes[self->scene->n_nodes - 1].w;
      h = self->scene->nodes[self->scene->n_nodes - 1].h;
    }
  const char *id = twb_document_add_node (self->doc, op, NULL, snap_value (self, mx - w / 2),
                                          snap_value (self, my - h / 2), &error);
  if (id == NULL)
    {
      twb_canvas_set_message (self, error->message);
      return NULL;
    }
  const char *ids[] = { id, NULL };
  twb_document_select (self->doc, ids, FALSE);
  g_free (self->focus_id);
  self->focus_id = g_strdup (id);
  twb_canvas_update_accessible (self);
  return id;
}

gboolean
twb_graph_canvas_try_connect (TwbGraphCanvas *self, const char *from, const char *to, int port)
{
  g_autoptr (GError) error = NULL;
  if (self->doc == NULL)
    return FALSE;
  if (!twb_document_connect_free (self->doc, from, to, port, &error))
    {
      g_autofree char *msg = g_strdup_printf ("Cannot connect %s to %s: %s", from, to,
                                              error->message);
      twb_canvas_set_message (self, msg);
      return FALSE;
    }
  return TRUE;
}

gboolean
twb_graph_canvas_select_edge (TwbGraphCanvas *self, const char *to, int port)
{
  g_return_val_if_fail (TWB_IS_GRAPH_CANVAS (self), FALSE);
  if (to == NULL)
    {
      gboolean had = self->edge_to != NULL;
      g_clear_pointer (&self->edge_to, g_free);
      self->view.selected_edge = -1;
      if (had)
        twb_canvas_update_accessible (self);
      gtk_widget_queue_draw (GTK_WIDGET (self));
      return TRUE;
    }
  if (twb_graph_scene_find_edge (self->scene, to, port) < 0)
    return FALSE;
  g_free (self->edge_to);
  self->edge_to = g_strdup (to);
  self->edge_port = port;
  /* Clearing the node selection rebuilds the scene, which resolves the edge. */
  g_auto (GStrv) sel = twb_document_get_selection (self->doc);
  if (sel && sel[0])
    twb_document_clear_selection (self->doc);
  else
    rebuild_scene (self);
  return TRUE;
}

const char *
twb_graph_canvas_get_selected_edge (TwbGraphCanvas *self, int *port)
{
  g_return_val_if_fail (TWB_IS_GRAPH_CANVAS (self), NULL);
  if (port)
    *port = self->edge_to ? self->edge_port : -1;
  return self->edge_to;
}

gboolean
twb_graph_canvas_delete_selected_edge (TwbGraphCanvas *self)
{
  g_return_val_if_fail (TWB_IS_GRAPH_CANVAS (self), FALSE);
  if (self->doc == NULL || self->edge_to == NULL)
    return FALSE;
  g_autoptr (GError) error = NULL;
  g_autofree char *to = g_steal_pointer (&self->edge_to);
  if (!twb_document_disconnect (self->doc, to, self->edge_port, &error))
    {
      twb_canvas_set_message (self, error->message);
      return FALSE;
    }
  return TRUE;
}

char **
twb_canvas_selection_ids (TwbGraphCanvas *self)
{
  return self->doc ? twb_document_get_selection (self->doc) : NULL;
}

void
twb_graph_canvas_move_selection (TwbGraphCanvas *self, double dx, double dy)
{
  g_auto (GStrv) ids = twb_canvas_selection_ids (self);
  if (ids == NULL || ids[0] == NULL)
    return;
  twb_document_move_nodes (self->doc, (const char *const *) ids, dx, dy, FALSE);
}

const char *
twb_graph_canvas_get_focus_node (TwbGraphCanvas *self)
{
  return self->focus_id;
}

/* Tab order: left to right, then top to bottom, as a reader scans. */
static int
cmp_reading_order (gconstpointer a, gconstpointer b, gpointer data)
{
  const TwbGraphScene *s = data;
  const TwbSceneNode *na = &s->nodes[*(const int *) a], *nb = &s->nodes[*(const int *) b];
  if (na->x != nb->x)
    return na->x < nb->x ? -1 : 1;
  if (na->y != nb->y)
    return na->y < nb->y ? -1 : 1;
  return 0;
}

gboolean
twb_graph_canvas_focus_next (TwbGraphCanvas *self, int dir)
{
  if (self->scene == NULL || self->scene->n_nodes == 0)
    return FALSE;
  int n = self->scene->n_nodes;
  g_autofree int *order = g_new (int, n);
  for (int i = 0; i < n; i++)
    order[i] = i;
  g_qsort_with_data (order, n, sizeof (int), cmp_reading_order, self->scene);
  /* A focus ring left on a node that is no longer selected starts over. */
  int cur = twb_graph_scene_find (self->scene, self->focus_id), pos = -1;
  if (cur >= 0 && !self->scene->nodes[cur].selected)
    cur = -1;
  for (int i = 0; i < n; i++)
    if (order[i] == cur)
      pos = i;
  int next = pos < 0 ? (dir > 0 ? 0 : n - 1) : pos + dir;
  if (next < 0 || next >= n)
    return FALSE;
  const TwbSceneNode *sn = &self->scene->nodes[order[next]];
  g_autofree char *id = g_strdup (sn->id);
  if (sn->is_block)
    {
      g_auto (GStrv) members = twb_document_block_members (self->doc, id);
      twb_document_select (self->doc, (const char *const *) members, FALSE);
      g_free (self->focus_id);
      self->focus_id = g_strdup (id);
      twb_canvas_update_accessible (self);
      gtk_widget_queue_draw (GTK_WIDGET (self));
      return TRUE;
    }
  twb_graph_canvas_reveal_node (self, id);
  return TRUE;
}

/* ---- Pointer --------------------------------------------------------------- */

void
twb_canvas_select_scene_node (TwbGraphCanvas *self, int i, gboolean extend)
{
  const TwbSceneNode *sn = &self->scene->nodes[i];
  g_free (self->focus_id);
  self->focus_id = g_strdup (sn->id);
  if (sn->is_block)
    {
      g_auto (GStrv) members = twb_document_block_members (self->doc, sn->id);
      twb_document_select (self->doc, (const char *const *) members, extend);
    }
  else
    {
      const char *ids[] = { sn->id, NULL };
      twb_document_select (self->doc, ids, extend);
    }
  twb_canvas_update_accessible (self);
}

static char *
port_ref (const TwbSceneNode *n, int port)
{
  return port == 0 ? g_strdup (n->id) : g_strdup_printf ("%s:%d", n->id, port);
}

/* From the drag's start port and a target port, the (from, to, port) triple
 * of the connection, whichever end the drag started from. */
static gboolean
connection_for (TwbGraphCanvas *self, int node, TwbPortDirection dir, int port, char **from,
                char **to, int *to_port)
{
  const TwbSceneNode *a = &self->scene->nodes[self->connect_node];
  const TwbSceneNode *b = &self->scene->nodes[node];
  if (dir == self->connect_dir)
    return FALSE;
  if (self->connect_dir == TWB_PORT_OUTPUT)
    {
      *from = port_ref (a, self->connect_port);
      *to = g_strdup (b->id);
      *to_port = port;
    }
  else
    {
      *from = port_ref (b, port);
      *to = g_strdup (a->id);
      *to_port = self->connect_port;
    }
  return TRUE;
}

static void
drag_begin (GtkGestureDrag *g, double x, double y, TwbGraphCanvas *self)
{
  self->mode = DRAG_NONE;
  self->drag_x = x;
  self->drag_y = y;
  if (self->scene == NULL)
    return;
  gtk_widget_grab_focus (GTK_WIDGET (self));
  if (self->space_down)
    {
      self->mode = DRAG_PAN;
      self->pan_tx = self->view.tx;
      self->pan_ty = self->view.ty;
      return;
    }
  double mx, my;
  twb_canvas_to_model (self, x, y, &mx, &my);
  TwbPortDirection dir;
  int port;
  int pn = twb_graph_scene_hit_port (self->scene, mx, my, PORT_SLOP_PX / self->view.scale, &dir,
                                     &port);
  int held = -1;
  if (pn >= 0 && dir == TWB_PORT_INPUT && !self->scene->nodes[pn].is_block)
    held = twb_graph_scene_find_edge (self->scene, self->scene->nodes[pn].id, port);
  if (held >= 0 && self->view.scale >= TWB_RENDER_PORT_SCALE)
    {
      /* A connected input: its edge's end comes off the port with the pointer. */
      const TwbSceneEdge *e = &self->scene->edges[held];
      self->mode = DRAG_DETACH;
      g_free (self->detach_to);
      self->detach_to = g_strdup (e->to_id);
      self->detach_port = e->to_input;
      twb_graph_scene_port_pos (self->scene, e->from, TWB_PORT_OUTPUT, e->from_port,
                                &self->view.cx0, &self->view.cy0);
      self->view.cx1 = mx;
      self->view.cy1 = my;
      self->view.connecting = TRUE;
      self->view.connect_ok = FALSE;
      return;
    }
  if (pn >= 0 && self->view.scale >= TWB_RENDER_PORT_SCALE)
    {
      self->mode = DRAG_CONNECT;
      self->connect_node = pn;
      self->connect_dir = dir;
      self->connect_port = port;
      twb_graph_scene_port_pos (self->scene, pn, dir, port, &self->view.cx0, &self->view.cy0);
      self->view.cx1 = mx;
      self->view.cy1 = my;
      self->view.connecting = TRUE;
      self->view.connect_ok = FALSE;
      return;
    }
  GdkModifierType mods = gtk_event_controller_get_current_event_state (GTK_EVENT_CONTROLLER (g));
  gboolean extend = (mods & (GDK_SHIFT_MASK | GDK_CONTROL_MASK)) != 0;
  int hit = twb_graph_scene_hit_node (self->scene, mx, my);
  if (hit >= 0 && !extend && twb_canvas_in_margin (self, hit, mx, my))
    {
      g_autofree char *id = g_strdup (self->scene->nodes[hit].id);
      g_signal_emit (self, signals[SIGNAL_MARGIN_CLICKED], 0, id);
      return;
    }
  if (hit >= 0)
    twb_graph_canvas_select_edge (self, NULL, 0);
  int edge = hit < 0 ? twb_graph_scene_hit_edge (self->scene, mx, my,
                                                  EDGE_SLOP_PX / self->view.scale)
                     : -1;
  if (edge >= 0)
    {
      g_autofree char *to = g_strdup (self->scene->edges[edge].to_id);
      twb_graph_canvas_select_edge (self, to, self->scene->edges[edge].to_input);
      return;
    }
  if (hit >= 0)
    {
      if (!self->scene->nodes[hit].selected || extend)
        twb_canvas_select_scene_node (self, hit, extend);
      hit = twb_graph_scene_find (self->scene, self->focus_id);
      if (hit < 0)
        return;
      /* A collapsed block sits at its members' top-left: dragging it moves
       * its members (one undo step for the whole drag). */
      g_clear_pointer (&self->drag_block, g_free);
      if (self->scene->nodes[hit].is_block)
        self->drag_block = g_strdup (self->scene->nodes[hit].id);
      self->mode = DRAG_MOVE;
      self->anchor = hit;
      self->anchor_x = self->scene->nodes[hit].x;
      self->anchor_y = self->scene->nodes[hit].y;
      self->moved_x = self->moved_y = 0;
      self->first_move = TRUE;
      return;
    }
  gboolean in_band = FALSE;
  int frame = twb_graph_scene_hit_frame (self->scene, mx, my, &in_band);
  if (frame >= 0 && in_band)
    {
      /* The band: its button closes the block (a click: click_pressed);
       * elsewhere the block's nodes are picked, and dragging moves them. */
      double bcx, bcy, br;
      twb_graph_scene_frame_button (self->scene, frame, &bcx, &bcy, &br);
      if (hypot (mx - bcx, my - bcy) <= br)
        return;
      const TwbSceneFrame *f = &self->scene->frames[frame];
      g_autofree char *name = g_strdup (f->name);
      double fx = f->x, fy = f->y;
      twb_graph_canvas_select_edge (self, NULL, 0);
      g_auto (GStrv) members = twb_document_block_members (self->doc, name);
      twb_document_select (self->doc, (const char *const *) members, extend);
      g_clear_pointer (&self->focus_id, g_free);
      g_clear_pointer (&self->drag_block, g_free);
      self->drag_block = g_steal_pointer (&name);
      self->mode = DRAG_MOVE;
      self->anchor = -1;
      self->anchor_x = fx;
      self->anchor_y = fy;
      self->moved_x = self->moved_y = 0;
      self->first_move = TRUE;
      return;
    }
  if (!extend)
    {
      twb_graph_canvas_select_edge (self, NULL, 0);
      twb_document_clear_selection (self->doc);
    }
  self->mode = DRAG_BAND;
  self->view.banding = TRUE;
  self->view.bx0 = self->view.bx1 = mx;
  self->view.by0 = self->view.by1 = my;
}

static void
drag_update (GtkGestureDrag *g, double ox, double oy, TwbGraphCanvas *self)
{
  double x = self->drag_x + ox, y = self->drag_y + oy, mx, my;
  twb_canvas_to_model (self, x, y, &mx, &my);
  switch (self->mode)
    {
    case DRAG_PAN:
      self->view.tx = self->pan_tx + ox;
      self->view.ty = self->pan_ty + oy;
      twb_canvas_view_changed (self);
      break;
    case DRAG_MOVE:
      {
        double want_x = snap_value (self, self->anchor_x + ox / self->view.scale);
        double want_y = snap_value (self, self->anchor_y + oy / self->view.scale);
        double dx = want_x - self->anchor_x - self->moved_x;
        double dy = want_y - self->anchor_y - self->moved_y;
        if (dx == 0 && dy == 0)
          break;
        g_auto (GStrv) ids = self->drag_block ? twb_document_block_members (self->doc, self->drag_block)
                                              : twb_canvas_selection_ids (self);
        if (ids == NULL || ids[0] == NULL)
          break;
        twb_document_move_nodes (self->doc, (const char *const *) ids, dx, dy, !self->first_move);
        self->first_move = FALSE;
        self->moved_x += dx;
        self->moved_y += dy;
        break;
      }
    case DRAG_BAND:
      self->view.bx1 = mx;
      self->view.by1 = my;
      gtk_widget_queue_draw (GTK_WIDGET (self));
      break;
    case DRAG_CONNECT:
      {
        self->view.cx1 = mx;
        self->view.cy1 = my;
        self->view.connect_ok = FALSE;
        TwbPortDirection dir;
        int port;
        int pn = twb_graph_scene_hit_port (self->scene, mx, my, PORT_SLOP_PX / self->view.scale,
                                           &dir, &port);
        g_autofree char *from = NULL, *to = NULL;
        int to_port;
        if (pn >= 0 && connection_for (self, pn, dir, port, &from, &to, &to_port))
          self->view.connect_ok = twb_document_get_input (self->doc, to, to_port) == NULL
                                  && twb_document_can_connect (self->doc, from, to, to_port, NULL);
        gtk_widget_queue_draw (GTK_WIDGET (self));
        break;
      }
    case DRAG_DETACH:
      {
        self->view.cx1 = mx;
        self->view.cy1 = my;
        TwbPortDirection dir;
        int port;
        int pn = twb_graph_scene_hit_port (self->scene, mx, my, PORT_SLOP_PX / self->view.scale,
                                           &dir, &port);
        const char *from = twb_document_get_input (self->doc, self->detach_to, self->detach_port);
        self->view.connect_ok = pn >= 0 && dir == TWB_PORT_INPUT && from
                                && !self->scene->nodes[pn].is_block
                                && twb_document_get_input (self->doc, self->scene->nodes[pn].id,
                                                           port) == NULL
                                && twb_document_can_connect (self->doc, from,
                                                             self->scene->nodes[pn].id, port, NULL);
        gtk_widget_queue_draw (GTK_WIDGET (self));
        break;
      }
    case DRAG_NONE:
    default:
      break;
    }
}

static void
drag_end (GtkGestureDrag *g, double ox, double oy, TwbGraphCanvas *self)
{
  double x = self->drag_x + ox, y = self->drag_y + oy, mx, my;
  twb_canvas_to_model (self, x, y, &mx, &my);
  if (self->mode == DRAG_BAND)
    {
      self->view.banding = FALSE;
      if (fabs (ox) > 3 || fabs (oy) > 3)
        {
          g_autoptr (GArray) hits = twb_graph_scene_nodes_in_rect (
            self->scene, self->view.bx0, self->view.by0, self->view.bx1, self->view.by1);
          g_autoptr (GPtrArray) ids = g_ptr_array_new_with_free_func (g_free);
          for (guint i = 0; i < hits->len; i++)
            {
              const TwbSceneNode *sn = &self->scene->nodes[g_array_index (hits, int, i)];
              if (sn->is_block)
                {
                  g_auto (GStrv) members = twb_document_block_members (self->doc, sn->id);
                  for (char **m = members; m && *m; m++)
                    g_ptr_array_add (ids, g_strdup (*m));
                }
              else
                g_ptr_array_add (ids, g_strdup (sn->id));
            }
          g_ptr_array_add (ids, NULL);
          GdkModifierType mods
            = gtk_event_controller_get_current_event_state (GTK_EVENT_CONTROLLER (g));
          twb_document_select (self->doc, (const char *const *) ids->pdata,
                               (mods & (GDK_SHIFT_MASK | GDK_CONTROL_MASK)) != 0);
        }
      gtk_widget_queue_draw (GTK_WIDGET (self));
    }
  else if (self->mode == DRAG_DETACH)
    {
      self->view.connecting = FALSE;
      g_autofree char *to = g_steal_pointer (&self->detach_to);
      g_autoptr (GError) error = NULL;
      TwbPortDirection dir;
      int port;
      int pn = twb_graph_scene_hit_port (self->scene, mx, my, PORT_SLOP_PX / self->view.scale,
                                         &dir, &port);
      if (fabs (ox) <= 3 && fabs (oy) <= 3)
        /* A click on a connected input picks its edge. */
        twb_graph_canvas_select_edge (self, to, self->detach_port);
      else if (pn >= 0 && dir == TWB_PORT_INPUT && !self->scene->nodes[pn].is_block)
        {
          g_autofree char *new_to = g_strdup (self->scene->nodes[pn].id);
          if (!twb_document_move_edge (self->doc, to, self->detach_port, new_to, port, &error))
            {
              g_autofree char *msg = g_strdup_printf ("Cannot move the edge into %s: %s", new_to,
                                                      error->message);
              twb_canvas_set_message (self, msg);
            }
        }
      else if (pn >= 0 || twb_graph_scene_hit_node (self->scene, mx, my) >= 0)
        twb_canvas_set_message (self, "Drop the edge on a free input port to move it, or on empty canvas "
                           "to disconnect it");
      else if (!twb_document_disconnect (self->doc, to, self->detach_port, &error))
        twb_canvas_set_message (self, error->message);
      gtk_widget_queue_draw (GTK_WIDGET (self));
    }
  else if (self->mode == DRAG_CONNECT)
    {
      self->view.connecting = FALSE;
      TwbPortDirection dir;
      int port;
      int pn = twb_graph_scene_hit_port (self->scene, mx, my, PORT_SLOP_PX / self->view.scale,
                                         &dir, &port);
      g_autofree char *from = NULL, *to = NULL;
      int to_port;
      if (pn >= 0 && (self->scene->nodes[pn].is_block
                      || self->scene->nodes[self->connect_node].is_block))
        twb_canvas_set_message (self, "Cannot connect to a collapsed block: expand it first");
      else if (pn >= 0 && connection_for (self, pn, dir, port, &from, &to, &to_port))
        twb_graph_canvas_try_connect (self, from, to, to_port);
      else if (pn >= 0 && pn != self->connect_node)
        twb_canvas_set_message (self, dir == TWB_PORT_INPUT
                             ? "Cannot connect an input to an input: drag to an output port"
                             : "Cannot connect an output to an output: drag to an input port");
      gtk_widget_queue_draw (GTK_WIDGET (self));
    }
  self->mode = DRAG_NONE;
}

static void
pan_begin (GtkGestureDrag *g, double x, double y, TwbGraphCanvas *self)
{
  self->pan_tx = self->view.tx;
  self->pan_ty = self->view.ty;
}

static void
pan_update (GtkGestureDrag *g, double ox, double oy, TwbGraphCanvas *self)
{
  self->view.tx = self->pan_tx + ox;
  self->view.ty = self->pan_ty + oy;
  twb_canvas_view_changed (self);
}

static void
click_pressed (GtkGestureClick *g, int n_press, double x, double y, TwbGraphCanvas *self)
{
  if (self->scene == NULL)
    return;
  double mx, my;
  twb_canvas_to_model (self, x, y, &mx, &my);
  int hit = twb_graph_scene_hit_node (self->scene, mx, my);
  gboolean in_band = FALSE;
  int frame = hit < 0 ? twb_graph_scene_hit_frame (self->scene, mx, my, &in_band) : -1;
  if (frame >= 0 && in_band)
    {
      /* The button closes the block at once; a double-click anywhere on
       * the band does too. */
      double bcx, bcy, br;
      twb_graph_scene_frame_button (self->scene, frame, &bcx, &bcy, &br);
      if (n_press == 2 || (n_press == 1 && hypot (mx - bcx, my - bcy) <= br))
        {
          g_autofree char *name = g_strdup (self->scene->frames[frame].name);
          twb_canvas_toggle_block (self, name, FALSE);
        }
      return;
    }
  if (n_press != 2 || hit < 0)
    return;
  g_autofree char *id = g_strdup (self->scene->nodes[hit].id);
  if (self->scene->nodes[hit].is_block)
    {
      twb_canvas_toggle_block (self, id, TRUE);
      return;
    }
  g_signal_emit (self, signals[SIGNAL_ACTIVATE_NODE], 0, id);
}

static gboolean
on_scroll (GtkEventControllerScroll *c, double dx, double dy, TwbGraphCanvas *self)
{
  GdkModifierType mods = gtk_event_controller_get_current_event_state (GTK_EVENT_CONTROLLER (c));
  GdkEvent *ev = gtk_event_controller_get_current_event (GTK_EVENT_CONTROLLER (c));
  /* Without an event (a synthesised scroll), the Control key as the key
   * controller last saw it. */
  if ((mods & GDK_CONTROL_MASK) || (ev == NULL && self->ctrl_down))
    {
      /* About the pointer: where the motion controller last saw it, else
       * the event's position, else the centre. */
      double px = gtk_widget_get_width (GTK_WIDGET (self)) / 2.0;
      double py = gtk_widget_get_height (GTK_WIDGET (self)) / 2.0;
      double ex, ey;
      if (self->pointer_in)
        {
          px = self->pointer_x;
          py = self->pointer_y;
        }
      else if (ev && gdk_event_get_position (ev, &ex, &ey))
        {
          graphene_point_t p;
          GtkNative *native = gtk_widget_get_native (GTK_WIDGET (self));
          double nx = 0, ny = 0;
          if (native)
            gtk_native_get_surface_transform (native, &nx, &ny);
          if (native
              && gtk_widget_compute_point (GTK_WIDGET (native), GTK_WIDGET (self),
                                           &GRAPHENE_POINT_INIT (ex - nx, ey - ny), &p))
            {
              px = p.x;
              py = p.y;
            }
        }
      /* One wheel notch: 10 % zoom. */
      twb_canvas_zoom_about (self, self->view.scale * pow (1.1, -dy), px, py);
      return TRUE;
    }
  /* Without Ctrl the wheel pans; 40 px per notch as GtkScrolledWindow does. */
  self->view.tx -= dx * 40;
  self->view.ty -= dy * 40;
  twb_canvas_view_changed (self);
  return TRUE;
}

static void
zoom_begin (GtkGesture *g, GdkEventSequence *seq, TwbGraphCanvas *self)
{
  self->zoom_start = self->view.scale;
}

static void
zoom_scale_changed (GtkGestureZoom *g, double scale, TwbGraphCanvas *self)
{
  double cx, cy;
  if (!gtk_gesture_get_bounding_box_center (GTK_GESTURE (g), &cx, &cy))
    {
      cx = gtk_widget_get_width (GTK_WIDGET (self)) / 2.0;
      cy = gtk_widget_get_height (GTK_WIDGET (self)) / 2.0;
    }
  twb_canvas_zoom_about (self, self->zoom_start * scale, cx, cy);
}

static void
pointer_leave (GtkEventControllerMotion *c, TwbGraphCanvas *self)
{
  self->pointer_in = FALSE;
}

static void
motion (GtkEventControllerMotion *c, double x, double y, TwbGraphCanvas *self)
{
  self->pointer_in = TRUE;
  self->pointer_x = x;
  self->pointer_y = y;
  if (self->scene == NULL || self->mode != DRAG_NONE)
    return;
  double mx, my;
  twb_canvas_to_model (self, x, y, &mx, &my);
  int hover = twb_graph_scene_hit_node (self->scene, mx, my);
  int edge = hover < 0 ? twb_graph_scene_hit_edge (self->scene, mx, my, EDGE_SLOP_PX / self->view.scale) : -1;
  int margin = hover >= 0 && twb_canvas_in_margin (self, hover, mx, my) ? hover : -1;
  if (hover != self->view.hover || edge != self->view.hover_edge || margin != self->view.hover_margin)
    {
      self->view.hover = hover;
      self->view.hover_margin = margin;
      self->view.hover_edge = edge;
      gtk_widget_queue_draw (GTK_WIDGET (self));
    }
}

static gboolean
query_tooltip (GtkWidget *widget, int x, int y, gboolean keyboard, GtkTooltip *tooltip)
{
  TwbGraphCanvas *self = TWB_GRAPH_CANVAS (widget);
  if (self->scene == NULL)
    return FALSE;
  int i = -1;
  double mx, my;
  if (keyboard)
    {
      i = twb_graph_scene_find (self->scene, self->focus_id);
      if (i < 0)
        return FALSE;
      mx = self->scene->nodes[i].x + 1;
      my = self->scene->nodes[i].y + 1;
    }
  else
    twb_canvas_to_model (self, x, y, &mx, &my);

  TwbPortDirection dir;
  int port;
  int pn = keyboard ? -1
                    : twb_graph_scene_hit_port (self->scene, mx, my,
                                                PORT_SLOP_PX / self->view.scale, &dir, &port);
  if (pn >= 0)
    {
      const TwbSceneNode *n = &self->scene->nodes[pn];
      const char *type = dir == TWB_PORT_INPUT ? n->in_types[port] : n->out_types[port];
      const char *name = dir == TWB_PORT_INPUT ? n->in_names[port] : NULL;
      g_autofree char *t = g_strdup_printf (
        "%s %s port %d%s%s%s: %s", n->id, dir == TWB_PORT_INPUT ? "input" : "output", port,
        name ? " (" : "", name ? name : "", name ? ")" : "",
        type ? type : (dir == TWB_PORT_INPUT ? "not connected" : "shape unknown"));
      gtk_tooltip_set_text (tooltip, t);
      return TRUE;
    }
  if (i < 0)
    i = twb_graph_scene_hit_node (self->scene, mx, my);
  if (i >= 0 && !keyboard && twb_canvas_in_margin (self, i, mx, my))
    {
      guint m = twb_graph_canvas_get_mark (self, self->scene->nodes[i].id);
      gtk_tooltip_set_text (tooltip, (m & (TWB_MARK_BREAK_FORWARD | TWB_MARK_BREAK_BACKWARD))
                                       ? "Breakpoint: click to remove it (F9)"
                                       : "Click to stop training here (F9 sets a breakpoint on the selected node)");
      return TRUE;
    }
  if (i >= 0)
    {
      const TwbSceneNode *n = &self->scene->nodes[i];
      GString *t = g_string_new (NULL);
      g_autofree char *title = g_markup_escape_text (n->title, -1);
      g_autofree char *sub = g_markup_escape_text (n->subtitle, -1);
      g_string_append_printf (t, "<b>%s</b> — %s", title, sub);
      if (n->shape)
        g_string_append_printf (t, "\noutput %s", n->shape);
      if (n->stats)
        g_string_append_printf (t, "\n%s", n->stats);
      if (n->error)
        {
          g_autofree char *e = g_markup_escape_text (n->error, -1);
          g_string_append_printf (t, "\n<span foreground=\"#e01b24\">%s</span>", e);
        }
      gtk_tooltip_set_markup (tooltip, t->str);
      g_string_free (t, TRUE);
      return TRUE;
    }
  gboolean in_band = FALSE;
  int frame = keyboard ? -1 : twb_graph_scene_hit_frame (self->scene, mx, my, &in_band);
  if (frame >= 0 && in_band)
    {
      const TwbSceneFrame *f = &self->scene->frames[frame];
      g_autofree char *t = g_strdup_printf ("%s: %s\nClick − or double-click the band to collapse "
                                            "it; drag the band to move it",
                                            f->name, f->summary);
      gtk_tooltip_set_text (tooltip, t);
      return TRUE;
    }
  int e = twb_graph_scene_hit_edge (self->scene, mx, my, EDGE_SLOP_PX / self->view.scale);
  if (e >= 0)
    {
      const TwbSceneEdge *ed = &self->scene->edges[e];
      g_autofree char *t = g_strdup_printf ("%s → %s: %s", self->scene->nodes[ed->from].id,
                                            self->scene->nodes[ed->to].id,
                                            ed->label ? ed->label : "shape unknown (error upstream)");
      gtk_tooltip_set_text (tooltip, t);
      return TRUE;
    }
  return FALSE;
}

/* ---- Keyboard --------------------------------------------------------------- */

static gboolean
key_pressed (GtkEventControllerKey *c, guint keyval, guint keycode, GdkModifierType state,
             TwbGraphCanvas *self)
{
  double step = self->view.grid * ((state & GDK_SHIFT_MASK) ? 5 : 1);
  switch (keyval)
    {
    case GDK_KEY_Control_L:
    case GDK_KEY_Control_R:
      self->ctrl_down = TRUE;
      return FALSE;
    case GDK_KEY_space:
      self->space_down = TRUE;
      gtk_widget_set_cursor_from_name (GTK_WIDGET (self), "grab");
      return TRUE;
    case GDK_KEY_Tab:
    case GDK_KEY_KP_Tab:
      return twb_graph_canvas_focus_next (self, 1);
    case GDK_KEY_ISO_Left_Tab:
      return twb_graph_canvas_focus_next (self, -1);
    case GDK_KEY_Left:
      twb_graph_canvas_move_selection (self, -step, 0);
      return TRUE;
    case GDK_KEY_Right:
      twb_graph_canvas_move_selection (self, step, 0);
      return TRUE;
    case GDK_KEY_Up:
      twb_graph_canvas_move_selection (self, 0, -step);
      return TRUE;
    case GDK_KEY_Down:
      twb_graph_canvas_move_selection (self, 0, step);
      return TRUE;
    case GDK_KEY_Return:
    case GDK_KEY_KP_Enter:
      if (self->focus_id)
        {
          g_autofree char *id = g_strdup (self->focus_id);
          g_signal_emit (self, signals[SIGNAL_ACTIVATE_NODE], 0, id);
          return TRUE;
        }
      return FALSE;
    case GDK_KEY_Menu:
      return twb_canvas_popup_menu_key (self);
    case GDK_KEY_F10:
      return (state & GDK_SHIFT_MASK) ? twb_canvas_popup_menu_key (self) : FALSE;
    case GDK_KEY_Delete:
    case GDK_KEY_KP_Delete:
    case GDK_KEY_BackSpace:
      /* Nodes are deleted by the window's graph.delete; an edge here. */
      return twb_graph_canvas_delete_selected_edge (self);
    case GDK_KEY_Escape:
      twb_graph_canvas_select_edge (self, NULL, 0);
      if (self->doc)
        twb_document_clear_selection (self->doc);
      self->view.connecting = FALSE;
      self->view.banding = FALSE;
      return TRUE;
    default:
      return FALSE;
    }
}

static void
key_released (GtkEventControllerKey *c, guint keyval, guint keycode, GdkModifierType state,
              TwbGraphCanvas *self)
{
  if (keyval == GDK_KEY_Control_L || keyval == GDK_KEY_Control_R)
    self->ctrl_down = FALSE;
  if (keyval == GDK_KEY_space)
    {
      self->space_down = FALSE;
      gtk_widget_set_cursor (GTK_WIDGET (self), NULL);
    }
}

/* ---- Drop from the palette --------------------------------------------------- */

static gboolean
on_drop (GtkDropTarget *t, const GValue *value, double x, double y, TwbGraphCanvas *self)
{
  if (!G_VALUE_HOLDS_STRING (value))
    return FALSE;
  const char *op = g_value_get_string (value);
  gtk_widget_grab_focus (GTK_WIDGET (self));
  return twb_graph_canvas_add_node_at (self, op, x, y) != NULL;
}

/* ---- Drawing ------------------------------------------------------------------ */

static gboolean
is_dark (GtkWidget *w)
{
  GdkRGBA fg;
  G_GNUC_BEGIN_IGNORE_DEPRECATIONS
  gtk_style_context_get_color (gtk_widget_get_style_context (w), &fg);
  G_GNUC_END_IGNORE_DEPRECATIONS
  /* Light text means a dark theme. */
  return 0.299 * fg.red + 0.587 * fg.green + 0.114 * fg.blue > 0.5;
}

void
twb_graph_canvas_draw (TwbGraphCanvas *self, cairo_t *cr, int width, int height)
{
  TwbRenderView v = self->view;
  v.width = width;
  v.height = height;
  v.dark = is_dark (GTK_WIDGET (self));
  v.focus = self->scene ? twb_graph_scene_find (self->scene, self->focus_id) : -1;
  if (!gtk_widget_has_focus (GTK_WIDGET (self)))
    v.focus = -1;
  v.hint = twb_graph_canvas_get_hint (self);
  if (self->scene)
    twb_graph_render (cr, self->scene, &v);
}

static void
snapshot (GtkWidget *widget, GtkSnapshot *snap)
{
  TwbGraphCanvas *self = TWB_GRAPH_CANVAS (widget);
  int w = gtk_widget_get_width (widget), h = gtk_widget_get_height (widget);
  cairo_t *cr = gtk_snapshot_append_cairo (snap, &GRAPHENE_RECT_INIT (0, 0, w, h));
  twb_graph_canvas_draw (self, cr, w, h);
  cairo_destroy (cr);
}

static void
size_allocate (GtkWidget *widget, int width, int height, int baseline)
{
  TwbGraphCanvas *self = TWB_GRAPH_CANVAS (widget);
  gboolean resized = width != self->alloc_w || height != self->alloc_h;
  self->alloc_w = width;
  self->alloc_h = height;
  twb_canvas_tell_view (self);
  if (self->fit_pending && width > 0 && height > 0)
    twb_canvas_fit_in (self, width, height);
  else if (resized)
    g_signal_emit (self, signals[SIGNAL_VIEW_CHANGED], 0);   /* more or less of it is visible */
  if (self->menu)
    gtk_popover_present (GTK_POPOVER (self->menu));
}

static void
measure (GtkWidget *widget, GtkOrientation o, int for_size, int *min, int *nat, int *min_b,
         int *nat_b)
{
  *min = 100;
  *nat = 600;
}

static void
state_flags_changed (GtkWidget *widget, GtkStateFlags prev)
{
  gtk_widget_queue_draw (widget);
}

static void
twb_graph_canvas_dispose (GObject *object)
{
  TwbGraphCanvas *self = TWB_GRAPH_CANVAS (object);
  if (self->doc)
    {
      g_clear_signal_handler (&self->changed_id, self->doc);
      g_clear_signal_handler (&self->selection_id, self->doc);
      g_clear_object (&self->doc);
    }
  g_clear_pointer (&self->scene, twb_graph_scene_free);
  g_clear_pointer (&self->focus_id, g_free);
  g_clear_pointer (&self->message, g_free);
  g_clear_pointer (&self->drag_block, g_free);
  g_clear_pointer (&self->edge_to, g_free);
  g_clear_pointer (&self->detach_to, g_free);
  g_clear_pointer (&self->view.marks, g_hash_table_unref);
  g_clear_pointer (&self->view.tints, g_hash_table_unref);
  g_clear_pointer (&self->menu, gtk_widget_unparent);
  G_OBJECT_CLASS (twb_graph_canvas_parent_class)->dispose (object);
}

static void
twb_graph_canvas_set_property (GObject *object, guint id, const GValue *value, GParamSpec *pspec)
{
  TwbGraphCanvas *self = TWB_GRAPH_CANVAS (object);
  switch (id)
    {
    case PROP_SHOW_MINIMAP:
      twb_graph_canvas_set_show_minimap (self, g_value_get_boolean (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, id, pspec);
    }
}

static void
twb_graph_canvas_get_property (GObject *object, guint id, GValue *value, GParamSpec *pspec)
{
  TwbGraphCanvas *self = TWB_GRAPH_CANVAS (object);
  switch (id)
    {
    case PROP_SHOW_MINIMAP:
      g_value_set_boolean (value, self->show_minimap);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, id, pspec);
    }
}

static void
twb_graph_canvas_class_init (TwbGraphCanvasClass *klass)
{
  GObjectClass *oc = G_OBJECT_CLASS (klass);
  GtkWidgetClass *wc = GTK_WIDGET_CLASS (klass);
  oc->dispose = twb_graph_canvas_dispose;
  oc->set_property = twb_graph_canvas_set_property;
  oc->get_property = twb_graph_canvas_get_property;
  props[PROP_SHOW_MINIMAP]
    = g_param_spec_boolean ("show-minimap", NULL, NULL, TRUE,
                            G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (oc, N_PROPS, props);
  wc->snapshot = snapshot;
  wc->size_allocate = size_allocate;
  wc->measure = measure;
  wc->query_tooltip = query_tooltip;
  wc->state_flags_changed = state_flags_changed;

  signals[SIGNAL_MESSAGE] = g_signal_new ("message", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                          0, NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
  signals[SIGNAL_ACTIVATE_NODE]
    = g_signal_new ("activate-node", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                    NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
  signals[SIGNAL_VIEW_CHANGED] = g_signal_new ("view-changed", G_TYPE_FROM_CLASS (klass),
                                               G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                               G_TYPE_NONE, 0);
  signals[SIGNAL_MARGIN_CLICKED]
    = g_signal_new ("margin-clicked", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                    NULL, G_TYPE_NONE, 1, G_TYPE_STRING);

  gtk_widget_class_install_action (wc, "canvas.delete", NULL, twb_canvas_act_delete);
  gtk_widget_class_install_action (wc, "canvas.disconnect", NULL, twb_canvas_act_disconnect);
  gtk_widget_class_install_action (wc, "canvas.duplicate", NULL, twb_canvas_act_duplicate);
  gtk_widget_class_install_property_action (wc, "canvas.toggle-minimap", "show-minimap");

  gtk_widget_class_set_css_name (wc, "graphcanvas");
  gtk_widget_class_set_accessible_role (wc, GTK_ACCESSIBLE_ROLE_GROUP);
}

static void
twb_graph_canvas_init (TwbGraphCanvas *self)
{
  GtkWidget *w = GTK_WIDGET (self);
  twb_render_view_init (&self->view);
  self->snap = TRUE;
  self->show_minimap = TRUE;
  gtk_widget_set_focusable (w, TRUE);
  gtk_widget_set_has_tooltip (w, TRUE);
  gtk_widget_set_overflow (w, GTK_OVERFLOW_HIDDEN);
  gtk_widget_set_hexpand (w, TRUE);
  gtk_widget_set_vexpand (w, TRUE);

  GtkGesture *drag = gtk_gesture_drag_new ();
  gtk_gesture_single_set_button (GTK_GESTURE_SINGLE (drag), GDK_BUTTON_PRIMARY);
  g_signal_connect (drag, "drag-begin", G_CALLBACK (drag_begin), self);
  g_signal_connect (drag, "drag-update", G_CALLBACK (drag_update), self);
  g_signal_connect (drag, "drag-end", G_CALLBACK (drag_end), self);
  gtk_widget_add_controller (w, GTK_EVENT_CONTROLLER (drag));

  GtkGesture *pan = gtk_gesture_drag_new ();
  gtk_gesture_single_set_button (GTK_GESTURE_SINGLE (pan), GDK_BUTTON_MIDDLE);
  g_signal_connect (pan, "drag-begin", G_CALLBACK (pan_begin), self);
  g_signal_connect (pan, "drag-update", G_CALLBACK (pan_update), self);
  gtk_widget_add_controller (w, GTK_EVENT_CONTROLLER (pan));

  GtkGesture *click = gtk_gesture_click_new ();
  gtk_gesture_single_set_button (GTK_GESTURE_SINGLE (click), GDK_BUTTON_PRIMARY);
  g_signal_connect (click, "pressed", G_CALLBACK (click_pressed), self);
  gtk_widget_add_controller (w, GTK_EVENT_CONTROLLER (click));
  gtk_gesture_group (click, drag);

  GtkGesture *menu_click = gtk_gesture_click_new ();
  gtk_gesture_single_set_button (GTK_GESTURE_SINGLE (menu_click), GDK_BUTTON_SECONDARY);
  g_signal_connect (menu_click, "pressed", G_CALLBACK (twb_canvas_secondary_pressed), self);
  gtk_widget_add_controller (w, GTK_EVENT_CONTROLLER (menu_click));

  GtkGesture *zoom = gtk_gesture_zoom_new ();
  g_signal_connect (zoom, "begin", G_CALLBACK (zoom_begin), self);
  g_signal_connect (zoom, "scale-changed", G_CALLBACK (zoom_scale_changed), self);
  gtk_widget_add_controller (w, GTK_EVENT_CONTROLLER (zoom));

  GtkEventController *scroll = gtk_event_controller_scroll_new (
    GTK_EVENT_CONTROLLER_SCROLL_BOTH_AXES | GTK_EVENT_CONTROLLER_SCROLL_DISCRETE);
  g_signal_connect (scroll, "scroll", G_CALLBACK (on_scroll), self);
  gtk_widget_add_controller (w, scroll);

  GtkEventController *mot = gtk_event_controller_motion_new ();
  g_signal_connect (mot, "enter", G_CALLBACK (motion), self);
  g_signal_connect (mot, "motion", G_CALLBACK (motion), self);
  g_signal_connect (mot, "leave", G_CALLBACK (pointer_leave), self);
  gtk_widget_add_controller (w, mot);

  GtkEventController *keys = gtk_event_controller_key_new ();
  g_signal_connect (keys, "key-pressed", G_CALLBACK (key_pressed), self);
  g_signal_connect (keys, "key-released", G_CALLBACK (key_released), self);
  gtk_widget_add_controller (w, keys);

  GtkDropTarget *drop = gtk_drop_target_new (G_TYPE_STRING, GDK_ACTION_COPY);
  g_signal_connect (drop, "drop", G_CALLBACK (on_drop), self);
  gtk_widget_add_controller (w, GTK_EVENT_CONTROLLER (drop));

  twb_canvas_update_accessible (self);
}

GtkWidget *
twb_graph_canvas_new (void)
{
  return g_object_new (TWB_TYPE_GRAPH_CANVAS, NULL);
}
