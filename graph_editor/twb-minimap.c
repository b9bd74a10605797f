/* twb-minimap.c — overview of the graph canvas. */
#define G_LOG_DOMAIN "twb-minimap"

#include "graph_editor/twb-minimap.h"

struct _TwbMinimap
{
  GtkWidget parent_instance;
  TwbGraphCanvas *canvas;   /* weak */
  gulong view_id, show_id;
  double scale, ox, oy;     /* minimap px = (model - min) * scale + o */
  int outer_w, outer_h;     /* its frame's last size on the canvas */
  guint update_id;          /* the pending visibility update */
};



G_DEFINE_FINAL_TYPE (TwbMinimap, twb_minimap, GTK_TYPE_WIDGET)

static void
compute_transform (TwbMinimap *self, const TwbGraphScene *s, int w, int h)
{
  /* The map covers the graph and the visible rectangle, with 6 px margins. */
  double vx, vy, vw, vh;
  twb_graph_canvas_get_visible (self->canvas, &vx, &vy, &vw, &vh);
  double x0 = s->n_nodes ? MIN (s->min_x, vx) : vx, y0 = s->n_nodes ? MIN (s->min_y, vy) : vy;
  double x1 = s->n_nodes ? MAX (s->max_x, vx + vw) : vx + vw;
  double y1 = s->n_nodes ? MAX (s->max_y, vy + vh) : vy + vh;
  self->scale = MIN ((w - 12) / MAX (x1 - x0, 1), (h - 12) / MAX (y1 - y0, 1));
  self->ox = (w - (x1 - x0) * self->scale) / 2 - x0 * self->scale;
  self->oy = (h - (y1 - y0) * self->scale) / 2 - y0 * self->scale;
}

static void
snapshot (GtkWidget *widget, GtkSnapshot *snap)
{
  TwbMinimap *self = TWB_MINIMAP (widget);
  if (self->canvas == NULL)
    return;
  const TwbGraphScene *s = twb_graph_canvas_get_scene (self->canvas);
  int w = gtk_widget_get_width (widget), h = gtk_widget_get_height (widget);
  if (s == NULL || w <= 12 || h <= 12)
    return;
  compute_transform (self, s, w, h);
  GdkRGBA fg;
  G_GNUC_BEGIN_IGNORE_DEPRECATIONS
  gtk_style_context_get_color (gtk_widget_get_style_context (widget), &fg);
  G_GNUC_END_IGNORE_DEPRECATIONS
  GdkRGBA node = fg, err = { 0.88, 0.11, 0.14, 1 }, sel = { 0.21, 0.52, 0.89, 1 };
  node.alpha = 0.45;
  for (int i = 0; i < s->n_nodes; i++)
    {
      const TwbSceneNode *n = &s->nodes[i];
      graphene_rect_t r = GRAPHENE_RECT_INIT (n->x * self->scale + self->ox,
                                              n->y * self->scale + self->oy,
                                              MAX (n->w * self->scale, 1.5),
                                              MAX (n->h * self->scale, 1.5));
      gtk_snapshot_append_color (snap, n->error ? &err : n->selected ? &sel : &node, &r);
    }
  double vx, vy, vw, vh;
  twb_graph_canvas_get_visible (self->canvas, &vx, &vy, &vw, &vh);
  GskRoundedRect rr;
  gsk_rounded_rect_init_from_rect (&rr,
                                   &GRAPHENE_RECT_INIT (vx * self->scale + self->ox,
                                                        vy * self->scale + self->oy,
                                                        vw * self->scale, vh * self->scale),
                                   0);
  GdkRGBA fill = sel;
  fill.alpha = 0.12;
  gtk_snapshot_append_color (snap, &fill, &rr.bounds);
  gtk_snapshot_append_border (snap, &rr, (float[]) { 1.5, 1.5, 1.5, 1.5 },
                              (GdkRGBA[]) { sel, sel, sel, sel });
}

static void
move_to (TwbMinimap *self, double x, double y)
{
  if (self->canvas == NULL || self->scale <= 0)
    return;
  twb_graph_canvas_center_on (self->canvas, (x - self->ox) / self->scale,
                              (y - self->oy) / self->scale);
}

static void
drag_begin (GtkGestureDrag *g, double x, double y, TwbMinimap *self)
{
  move_to (self, x, y);
}

static void
drag_update (GtkGestureDrag *g, double ox, double oy, TwbMinimap *self)
{
  double sx, sy;
  gtk_gesture_drag_get_start_point (g, &sx, &sy);
  move_to (self, sx + ox, sy + oy);
}

/* What shows or hides with the canvas's "show-minimap": the minimap, or
 * the GtkFrame around it when it is the frame's child. */
static GtkWidget *
outer (TwbMinimap *self)
{
  GtkWidget *parent = gtk_widget_get_parent (GTK_WIDGET (self));
  return GTK_IS_FRAME (parent) ? parent : GTK_WIDGET (self);
}

/* Shown when the canvas asks for it, except on a canvas less than three
 * times its size each way: there it would cover the graph (a fit clear of
 * it keeps at least two thirds of the canvas each way, from that size on). */
static gboolean
wanted (TwbMinimap *self)
{
  if (self->canvas == NULL || !twb_graph_canvas_get_show_minimap (self->canvas))
    return FALSE;
  int cw = gtk_widget_get_width (GTK_WIDGET (self->canvas));
  int ch = gtk_widget_get_height (GTK_WIDGET (self->canvas));
  if (cw <= 0 || ch <= 0)
    return TRUE;   /* not laid out yet */
  return cw >= 3 * self->outer_w && ch >= 3 * self->outer_h;
}

static gboolean
update_visibility (gpointer data)
{
  TwbMinimap *self = data;
  self->update_id = 0;
  gboolean show = wanted (self);
  gboolean was = gtk_widget_get_visible (outer (self));
  gtk_widget_set_visible (GTK_WIDGET (self), show);
  gtk_widget_set_visible (outer (self), show);
  if (!show && was && self->canvas)
    {
      /* A fitted graph may use the corner it leaves. */
      twb_graph_canvas_set_minimap_rect (self->canvas, NULL);
      twb_graph_canvas_refit_on_resize (self->canvas);
    }
  return G_SOURCE_REMOVE;
}

/* After the canvas's layout, not inside it: showing or hiding queues one. */
static void
queue_update (TwbMinimap *self)
{
  if (self->update_id == 0)
    self->update_id = g_idle_add (update_visibility, self);
}

static void
view_changed (TwbGraphCanvas *canvas, TwbMinimap *self)
{
  gtk_widget_queue_draw (GTK_WIDGET (self));
  queue_update (self);
}

static void
show_changed (TwbGraphCanvas *canvas, GParamSpec *pspec, TwbMinimap *self)
{
  update_visibility (self);
}

static void
size_allocate (GtkWidget *widget, int width, int height, int baseline)
{
  TwbMinimap *self = TWB_MINIMAP (widget);
  graphene_rect_t r;
  /* Tell the canvas where the minimap covers it (its fit avoids that). */
  if (self->canvas && gtk_widget_compute_bounds (outer (self), GTK_WIDGET (self->canvas), &r))
    {
      self->outer_w = (int) r.size.width;
      self->outer_h = (int) r.size.height;
      twb_graph_canvas_set_minimap_rect (self->canvas, &r);
    }
}

static void
root (GtkWidget *widget)
{
  GTK_WIDGET_CLASS (twb_minimap_parent_class)->root (widget);
  TwbMinimap *self = TWB_MINIMAP (widget);
  if (self->canvas)
    show_changed (self->canvas, NULL, self);
}

static void
measure (GtkWidget *widget, GtkOrientation o, int for_size, int *min, int *nat, int *min_b,
         int *nat_b)
{
  *min = o == GTK_ORIENTATION_HORIZONTAL ? 120 : 80;
  *nat = o == GTK_ORIENTATION_HORIZONTAL ? 200 : 130;
}

static void
twb_minimap_dispose (GObject *object)
{
  TwbMinimap *self = TWB_MINIMAP (object);
  g_clear_handle_id (&self->update_id, g_source_remove);
  if (self->canvas)
    {
      g_clear_signal_handler (&self->view_id, self->canvas);
      g_clear_signal_handler (&self->show_id, self->canvas);
      twb_graph_canvas_set_minimap_rect (self->canvas, NULL);
      g_object_remove_weak_pointer (G_OBJECT (self->canvas), (gpointer *) &self->canvas);
      self->canvas = NULL;
    }
  G_OBJECT_CLASS (twb_minimap_parent_class)->dispose (object);
}

static void
twb_minimap_class_init (TwbMinimapClass *klass)
{
  G_OBJECT_CLASS (klass)->dispose = twb_minimap_dispose;
  GTK_WIDGET_CLASS (klass)->snapshot = snapshot;
  GTK_WIDGET_CLASS (klass)->measure = measure;
  GTK_WIDGET_CLASS (klass)->size_allocate = size_allocate;
  GTK_WIDGET_CLASS (klass)->root = root;
  gtk_widget_class_set_css_name (GTK_WIDGET_CLASS (klass), "minimap");
  gtk_widget_class_set_accessible_role (GTK_WIDGET_CLASS (klass), GTK_ACCESSIBLE_ROLE_IMG);
}

static void
twb_minimap_init (TwbMinimap *self)
{
  GtkGesture *drag = gtk_gesture_drag_new ();
  g_signal_connect (drag, "drag-begin", G_CALLBACK (drag_begin), self);
  g_signal_connect (drag, "drag-update", G_CALLBACK (drag_update), self);
  gtk_widget_add_controller (GTK_WIDGET (self), GTK_EVENT_CONTROLLER (drag));
  gtk_widget_set_overflow (GTK_WIDGET (self), GTK_OVERFLOW_HIDDEN);
  /* Until it has been allocated: its natural size (measure) in a 1 px frame. */
  self->outer_w = 202;
  self->outer_h = 132;
  gtk_accessible_update_property (GTK_ACCESSIBLE (self), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  "Minimap: the whole graph; click to move the view there", -1);
}

GtkWidget *
twb_minimap_new (TwbGraphCanvas *canvas)
{
  TwbMinimap *self = g_object_new (TWB_TYPE_MINIMAP, NULL);
  self->canvas = canvas;
  g_object_add_weak_pointer (G_OBJECT (canvas), (gpointer *) &self->canvas);
  self->view_id = g_signal_connect (canvas, "view-changed", G_CALLBACK (view_changed), self);
  self->show_id = g_signal_connect (canvas, "notify::show-minimap", G_CALLBACK (show_changed),
                                    self);
  return GTK_WIDGET (self);
}
