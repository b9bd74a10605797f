/* test-canvas-edges.c — edges on the graph canvas under Xvfb, driven through
 * the canvas's own gesture and key controllers (their signals emitted with
 * widget coordinates taken from the scene): click an edge to select it,
 * Delete it, Escape, drag its end off an input port onto empty canvas or
 * into another port, and a new connection dropped on a taken port.  Each
 * step asserts the document and its undo.  Also the view: Ctrl+wheel
 * zooms about the pointer, the minimap hides and fit-to-window keeps clear
 * of it, the empty canvas's hint, edge labels that would collide left out.
 * Screenshots go to TWB_TEST_SHOTS (or a temporary directory). */
#include "ui-test.h"
#include "graph_editor/twb-graph-canvas.h"
#include "graph_editor/twb-minimap.h"

#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static GtkWidget *window;
static TwbGraphCanvas *canvas;
static TwbDocument *doc;

static GtkEventController *
controller (GType type, guint button)
{
  g_autoptr (GListModel) list = gtk_widget_observe_controllers (GTK_WIDGET (canvas));
  for (guint i = 0; i < g_list_model_get_n_items (list); i++)
    {
      g_autoptr (GtkEventController) c = g_list_model_get_item (list, i);
      if (G_OBJECT_TYPE (c) == type
          && (button == 0 || gtk_gesture_single_get_button (GTK_GESTURE_SINGLE (c)) == button))
        return c;   /* the widget keeps its reference */
    }
  g_assert_not_reached ();
}

/* Model coordinates to widget coordinates. */
static void
to_widget (double mx, double my, double *wx, double *wy)
{
  double vx, vy, vw, vh;
  twb_graph_canvas_get_visible (canvas, &vx, &vy, &vw, &vh);
  double scale = gtk_widget_get_width (GTK_WIDGET (canvas)) / vw;
  *wx = (mx - vx) * scale;
  *wy = (my - vy) * scale;
}

static void
port_at (const char *id, TwbPortDirection dir, int port, double *wx, double *wy)
{
  const TwbGraphScene *s = twb_graph_canvas_get_scene (canvas);
  int i = twb_graph_scene_find (s, id);
  g_assert_cmpint (i, >=, 0);
  double mx, my;
  twb_graph_scene_port_pos (s, i, dir, port, &mx, &my);
  to_widget (mx, my, wx, wy);
}

/* The primary button pressed at (x0, y0), moved to (x1, y1) in steps and
 * released, as GtkGestureDrag reports it. */
static void
drag (double x0, double y0, double x1, double y1)
{
  GtkEventController *d = controller (GTK_TYPE_GESTURE_DRAG, GDK_BUTTON_PRIMARY);
  g_signal_emit_by_name (d, "drag-begin", x0, y0);
  for (int k = 1; k <= 4; k++)
    g_signal_emit_by_name (d, "drag-update", (x1 - x0) * k / 4, (y1 - y0) * k / 4);
  g_signal_emit_by_name (d, "drag-end", x1 - x0, y1 - y0);
  twt_ui_pump ();
}

static gboolean
key (guint keyval)
{
  gboolean handled = FALSE;
  g_signal_emit_by_name (controller (GTK_TYPE_EVENT_CONTROLLER_KEY, 0), "key-pressed", keyval, 0,
                         (GdkModifierType) 0, &handled);
  twt_ui_pump ();
  return handled;
}

/* The middle of the edge fc → act: a forward edge's Bezier midpoint is the
 * midpoint of its ends. */
static void
edge_middle (double *wx, double *wy)
{
  double ax, ay, bx, by;
  port_at ("fc", TWB_PORT_OUTPUT, 0, &ax, &ay);
  port_at ("act", TWB_PORT_INPUT, 0, &bx, &by);
  *wx = (ax + bx) / 2;
  *wy = (ay + by) / 2;
}

static void
add (const char *op, const char *id, double x, double y)
{
  g_autoptr (GError) error = NULL;
  g_assert_cmpstr (twb_document_add_node (doc, op, id, x, y, &error), ==, id);
  g_assert_no_error (error);
}

static GtkWidget *minimap_frame;

/* The canvas in a window, in a GtkOverlay with the minimap in a frame at
 * its bottom-right corner when `with_minimap`, as the main window has it. */
static void
show_canvas (gboolean with_minimap)
{
  window = gtk_window_new ();
  gtk_window_set_default_size (GTK_WINDOW (window), 1100, 600);
  canvas = TWB_GRAPH_CANVAS (twb_graph_canvas_new ());
  if (with_minimap)
    {
      GtkWidget *overlay = gtk_overlay_new ();
      gtk_overlay_set_child (GTK_OVERLAY (overlay), GTK_WIDGET (canvas));
      minimap_frame = gtk_frame_new (NULL);
      gtk_widget_set_halign (minimap_frame, GTK_ALIGN_END);
      gtk_widget_set_valign (minimap_frame, GTK_ALIGN_END);
      gtk_widget_set_margin_end (minimap_frame, 12);
      gtk_widget_set_margin_bottom (minimap_frame, 12);
      GtkWidget *minimap = twb_minimap_new (canvas);
      gtk_widget_set_size_request (minimap, 200, 120);
      gtk_frame_set_child (GTK_FRAME (minimap_frame), minimap);
      gtk_overlay_add_overlay (GTK_OVERLAY (overlay), minimap_frame);
      gtk_window_set_child (GTK_WINDOW (window), overlay);
    }
  else
    gtk_window_set_child (GTK_WINDOW (window), GTK_WIDGET (canvas));
  twb_graph_canvas_set_document (canvas, doc);
  gtk_window_present (GTK_WINDOW (window));
  twt_ui_pump ();
  twb_graph_canvas_zoom_to_fit (canvas);
  twt_ui_pump ();
  g_assert_cmpint (gtk_widget_get_width (GTK_WIDGET (canvas)), >, 0);
}

static void
make_doc (void)
{
  g_autoptr (GError) error = NULL;
  doc = twb_document_new ();
  add ("input", "x", 0, 100);
  g_assert_true (twb_document_set_attr_text (doc, "x", "shape", "[8]", &error));
  add ("linear", "fc", 300, 100);
  g_assert_true (twb_document_set_attr_int (doc, "fc", "out_features", 4, &error));
  add ("relu", "act", 650, 100);
  add ("relu", "act2", 650, 320);
  g_assert_true (twb_document_connect (doc, "x", "fc", 0, &error));
  g_assert_true (twb_document_connect (doc, "fc", "act", 0, &error));
  g_assert_no_error (error);
}

static void
setup (void)
{
  make_doc ();
  show_canvas (FALSE);
}

static void
teardown (void)
{
  gtk_window_destroy (GTK_WINDOW (window));
  twt_ui_pump ();
  minimap_frame = NULL;
  g_clear_object (&doc);
}

static void
screenshot (const char *name)
{
  const char *dir = g_getenv ("TWB_TEST_SHOTS");
  g_autofree char *tmp = dir ? NULL : g_dir_make_tmp ("twb-canvas-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir ? dir : tmp, name, NULL);
  g_autoptr (GdkPaintable) p = gtk_widget_paintable_new (window);
  GtkSnapshot *snap = gtk_snapshot_new ();
  gdk_paintable_snapshot (p, snap, gtk_widget_get_width (window), gtk_widget_get_height (window));
  g_autoptr (GskRenderNode) node = gtk_snapshot_free_to_node (snap);
  g_assert_nonnull (node);
  g_autoptr (GdkTexture) tex
    = gsk_renderer_render_texture (gtk_native_get_renderer (GTK_NATIVE (window)), node, NULL);
  g_assert_true (gdk_texture_save_to_png (tex, path));
  g_test_message ("screenshot: %s", path);
}

static const char *
input_of (const char *id)
{
  return twb_document_get_input (doc, id, 0);
}

static void
test_select_delete (void)
{
  setup ();
  double ex, ey;
  edge_middle (&ex, &ey);
  const char *ids[] = { "fc", NULL };
  twb_document_select (doc, ids, FALSE);

  /* A click on the curve selects the edge and clears the node selection. */
  drag (ex, ey + 3, ex, ey + 3);
  int port = -1;
  g_assert_cmpstr (twb_graph_canvas_get_selected_edge (canvas, &port), ==, "act");
  g_assert_cmpint (port, ==, 0);
  g_auto (GStrv) sel = twb_document_get_selection (doc);
  g_assert_null (sel[0]);
  screenshot ("canvas-edge-selected.png");

  /* Selecting a node clears it; clicking the node's box. */
  double nx, ny;
  port_at ("fc", TWB_PORT_INPUT, 0, &nx, &ny);
  drag (nx + 40, ny, nx + 40, ny);
  g_assert_null (twb_graph_canvas_get_selected_edge (canvas, &port));
  g_assert_true (twb_document_is_selected (doc, "fc"));

  /* Escape deselects the edge; a click on empty canvas does too. */
  drag (ex, ey, ex, ey);
  g_assert_nonnull (twb_graph_canvas_get_selected_edge (canvas, NULL));
  g_assert_true (key (GDK_KEY_Escape));
  g_assert_null (twb_graph_canvas_get_selected_edge (canvas, NULL));
  drag (ex, ey, ex, ey);
  drag (ex, ey + 150, ex, ey + 150);
  g_assert_null (twb_graph_canvas_get_selected_edge (canvas, NULL));
  /* 20 px off the curve is a miss. */
  drag (ex, ey - 20, ex, ey - 20);
  g_assert_null (twb_graph_canvas_get_selected_edge (canvas, NULL));

  /* Delete with nothing selected is not the canvas's. */
  g_assert_false (key (GDK_KEY_Delete));
  g_assert_cmpstr (input_of ("act"), ==, "fc");

  /* Delete removes the selected edge: one undo step brings it back. */
  drag (ex, ey, ex, ey);
  g_assert_true (key (GDK_KEY_Delete));
  g_assert_null (input_of ("act"));
  g_assert_null (twb_graph_canvas_get_selected_edge (canvas, NULL));
  g_assert_cmpstr (twb_document_undo_label (doc), ==, "Disconnect act");
  g_assert_true (twb_document_undo (doc));
  twt_ui_pump ();
  g_assert_cmpstr (input_of ("act"), ==, "fc");
  /* BackSpace too. */
  drag (ex, ey, ex, ey);
  g_assert_true (key (GDK_KEY_BackSpace));
  g_assert_null (input_of ("act"));
  g_assert_true (twb_document_undo (doc));
  g_assert_cmpstr (input_of ("act"), ==, "fc");
  teardown ();
}

static void
test_detach (void)
{
  setup ();
  g_autofree char *before = twb_document_to_data (doc);
  double ix, iy;
  port_at ("act", TWB_PORT_INPUT, 0, &ix, &iy);

  /* Off the port onto empty canvas: disconnected, one undo step. */
  drag (ix, iy, ix - 60, iy + 150);
  g_assert_null (input_of ("act"));
  g_assert_true (twb_document_undo (doc));
  twt_ui_pump ();
  g_assert_cmpstr (input_of ("act"), ==, "fc");

  /* Into act2's free input: moved, one undo step. */
  double jx, jy;
  port_at ("act2", TWB_PORT_INPUT, 0, &jx, &jy);
  drag (ix, iy, jx, jy);
  g_assert_null (input_of ("act"));
  g_assert_cmpstr (input_of ("act2"), ==, "fc");
  g_assert_true (twb_document_undo (doc));
  twt_ui_pump ();
  g_autofree char *undone = twb_document_to_data (doc);
  g_assert_cmpstr (undone, ==, before);

  /* Dropped on a node's body: refused with a message, nothing changes. */
  double nx, ny;
  port_at ("fc", TWB_PORT_INPUT, 0, &nx, &ny);
  drag (ix, iy, nx + 40, ny);
  g_autofree char *after = twb_document_to_data (doc);
  g_assert_cmpstr (after, ==, before);
  g_assert_nonnull (strstr (twb_graph_canvas_get_last_message (canvas), "free input port"));

  /* A click on a connected input selects its edge. */
  drag (ix, iy, ix, iy);
  g_assert_cmpstr (twb_graph_canvas_get_selected_edge (canvas, NULL), ==, "act");
  g_assert_cmpstr (input_of ("act"), ==, "fc");
  teardown ();
}

static void
test_taken_port (void)
{
  setup ();
  g_autofree char *before = twb_document_to_data (doc);
  gboolean can_undo = twb_document_can_undo (doc);
  const char *label = twb_document_undo_label (doc);
  g_autofree char *label0 = g_strdup (label);

  /* x's output dropped on act's input, which fc holds: refused. */
  double ox, oy, ix, iy;
  port_at ("x", TWB_PORT_OUTPUT, 0, &ox, &oy);
  port_at ("act", TWB_PORT_INPUT, 0, &ix, &iy);
  drag (ox, oy, ix, iy);
  g_autofree char *after = twb_document_to_data (doc);
  g_assert_cmpstr (after, ==, before);
  g_assert_cmpstr (input_of ("act"), ==, "fc");
  g_assert_nonnull (strstr (twb_graph_canvas_get_last_message (canvas), "taken by fc"));
  g_assert_cmpint (twb_document_can_undo (doc), ==, can_undo);
  g_assert_cmpstr (twb_document_undo_label (doc), ==, label0);
  g_assert_false (twb_graph_canvas_try_connect (canvas, "x", "act", 0));

  /* Into act2's free input the same drag connects. */
  double jx, jy;
  port_at ("act2", TWB_PORT_INPUT, 0, &jx, &jy);
  drag (ox, oy, jx, jy);
  g_assert_cmpstr (input_of ("act2"), ==, "x");
  g_assert_true (twb_document_undo (doc));
  g_assert_null (input_of ("act2"));
  teardown ();
}

static void
right_click (double x, double y)
{
  g_signal_emit_by_name (controller (GTK_TYPE_GESTURE_CLICK, GDK_BUTTON_SECONDARY), "pressed", 1,
                         x, y);
  twt_ui_pump ();
}

static void
activate (const char *name)
{
  gtk_widget_activate_action (GTK_WIDGET (canvas), name, NULL);
  twt_ui_pump ();
}

static void
test_context_menu (void)
{
  setup ();
  g_autofree char *before = twb_document_to_data (doc);
  /* Over empty canvas: no menu. */
  double ex, ey;
  edge_middle (&ex, &ey);
  right_click (ex, ey + 150);
  g_assert_null (twb_graph_canvas_get_context_menu (canvas));

  /* On an edge: it is selected, the menu is up, Duplicate is off. */
  right_click (ex, ey);
  GtkWidget *menu = twb_graph_canvas_get_context_menu (canvas);
  g_assert_true (GTK_IS_POPOVER_MENU (menu));
  g_assert_true (gtk_widget_get_visible (menu));
  g_assert_cmpstr (twb_graph_canvas_get_selected_edge (canvas, NULL), ==, "act");
  activate ("canvas.duplicate");     /* off for an edge: nothing changes */
  g_autofree char *same = twb_document_to_data (doc);
  g_assert_cmpstr (same, ==, before);
  gtk_popover_popdown (GTK_POPOVER (menu));
  twt_ui_pump ();
  /* Disconnect: the edge goes, one undo step. */
  activate ("canvas.disconnect");
  g_assert_null (input_of ("act"));
  g_assert_true (twb_document_undo (doc));
  twt_ui_pump ();
  g_assert_cmpstr (input_of ("act"), ==, "fc");

  /* On a node: the node is selected (the edge no longer), Disconnect is off,
   * Duplicate adds one node, Delete removes the node. */
  double nx, ny;
  port_at ("act", TWB_PORT_INPUT, 0, &nx, &ny);
  right_click (ex, ey);
  right_click (nx + 40, ny);
  g_assert_null (twb_graph_canvas_get_selected_edge (canvas, NULL));
  g_assert_true (twb_document_is_selected (doc, "act"));
  g_assert_true (gtk_widget_get_visible (menu));
  gtk_popover_popdown (GTK_POPOVER (menu));
  activate ("canvas.disconnect");    /* off for a node */
  g_assert_cmpstr (input_of ("act"), ==, "fc");
  int n = tw_graph_n_nodes (twb_document_get_graph (doc));
  activate ("canvas.duplicate");
  g_assert_cmpint (tw_graph_n_nodes (twb_document_get_graph (doc)), ==, n + 1);
  g_assert_true (twb_document_undo (doc));
  twt_ui_pump ();
  g_assert_cmpint (tw_graph_n_nodes (twb_document_get_graph (doc)), ==, n);
  right_click (nx + 40, ny);
  gtk_popover_popdown (GTK_POPOVER (menu));
  activate ("canvas.delete");
  g_assert_null (tw_graph_find (twb_document_get_graph (doc), "act"));
  g_assert_true (twb_document_undo (doc));
  twt_ui_pump ();
  g_autofree char *undone = twb_document_to_data (doc);
  g_assert_cmpstr (undone, ==, before);

  /* The Menu key opens it on the selected edge. */
  drag (ex, ey, ex, ey);
  g_assert_true (key (GDK_KEY_Menu));
  g_assert_true (gtk_widget_get_visible (menu));
  g_assert_cmpstr (twb_graph_canvas_get_selected_edge (canvas, NULL), ==, "act");
  gtk_popover_popdown (GTK_POPOVER (menu));
  teardown ();
}

/* The model point under widget point (wx, wy). */
static void
to_model_pt (double wx, double wy, double *mx, double *my)
{
  double vx, vy, vw, vh;
  twb_graph_canvas_get_visible (canvas, &vx, &vy, &vw, &vh);
  double scale = gtk_widget_get_width (GTK_WIDGET (canvas)) / vw;
  *mx = vx + wx / scale;
  *my = vy + wy / scale;
}

static gboolean
scroll (double dy)
{
  gboolean handled = FALSE;
  g_signal_emit_by_name (controller (GTK_TYPE_EVENT_CONTROLLER_SCROLL, 0), "scroll", 0.0, dy,
                         &handled);
  twt_ui_pump ();
  return handled;
}

static void
test_zoom_pointer (void)
{
  setup ();
  GtkEventController *keys = controller (GTK_TYPE_EVENT_CONTROLLER_KEY, 0);
  GtkEventController *mot = controller (GTK_TYPE_EVENT_CONTROLLER_MOTION, 0);
  int w = gtk_widget_get_width (GTK_WIDGET (canvas)), h = gtk_widget_get_height (GTK_WIDGET (canvas));
  /* Two pointer places away from the centre; in then out. */
  const double places[][3] = { { 180, 140, -1 }, { 900, 470, -1 }, { 300, 420, 2 } };
  for (guint k = 0; k < G_N_ELEMENTS (places); k++)
    {
      double px = places[k][0], py = places[k][1];
      g_signal_emit_by_name (mot, "motion", px, py);
      gboolean handled = FALSE;
      g_signal_emit_by_name (keys, "key-pressed", GDK_KEY_Control_L, 0, GDK_CONTROL_MASK, &handled);
      double zoom0 = twb_graph_canvas_get_zoom (canvas);
      double ax, ay, cx0, cy0;
      to_model_pt (px, py, &ax, &ay);
      to_model_pt (w / 2.0, h / 2.0, &cx0, &cy0);
      g_assert_true (scroll (places[k][2]));
      g_signal_emit_by_name (keys, "key-released", GDK_KEY_Control_L, 0, GDK_CONTROL_MASK);
      double zoom1 = twb_graph_canvas_get_zoom (canvas);
      g_assert_cmpfloat_with_epsilon (zoom1 / zoom0, pow (1.1, -places[k][2]), 1e-9);
      /* The point under the pointer stays there (in device px)... */
      double bx, by, cx1, cy1;
      to_model_pt (px, py, &bx, &by);
      g_assert_cmpfloat (fabs (bx - ax) * zoom1, <, 0.5);
      g_assert_cmpfloat (fabs (by - ay) * zoom1, <, 0.5);
      /* ...while the centre's does not: not a zoom about the centre. */
      to_model_pt (w / 2.0, h / 2.0, &cx1, &cy1);
      g_assert_cmpfloat (hypot (cx1 - cx0, cy1 - cy0) * zoom1, >, 10);
    }
  /* Without Ctrl the wheel pans and the zoom stays. */
  double zoom = twb_graph_canvas_get_zoom (canvas), vx0, vy0, vx1, vy1, vw, vh;
  twb_graph_canvas_get_visible (canvas, &vx0, &vy0, &vw, &vh);
  g_assert_true (scroll (1));
  twb_graph_canvas_get_visible (canvas, &vx1, &vy1, &vw, &vh);
  g_assert_cmpfloat (twb_graph_canvas_get_zoom (canvas), ==, zoom);
  g_assert_cmpfloat_with_epsilon ((vy1 - vy0) * zoom, 40, 1e-6);
  teardown ();
}

/* The graph's bounding box in widget coordinates. */
static graphene_rect_t
graph_box (void)
{
  const TwbGraphScene *s = twb_graph_canvas_get_scene (canvas);
  double x0, y0, x1, y1;
  to_widget (s->min_x, s->min_y, &x0, &y0);
  to_widget (s->max_x, s->max_y, &x1, &y1);
  return GRAPHENE_RECT_INIT (x0, y0, x1 - x0, y1 - y0);
}

static void
test_minimap (void)
{
  make_doc ();
  /* A node far to the bottom right: a centred fit would run under the minimap. */
  add ("relu", "far", 1500, 700);
  show_canvas (TRUE);
  g_assert_true (twb_graph_canvas_get_show_minimap (canvas));
  g_assert_true (gtk_widget_get_visible (minimap_frame));
  graphene_rect_t m, frame;
  g_assert_true (twb_graph_canvas_get_minimap_rect (canvas, &m));
  g_assert_true (gtk_widget_compute_bounds (minimap_frame, GTK_WIDGET (canvas), &frame));
  g_assert_true (graphene_rect_equal (&m, &frame));
  int w = gtk_widget_get_width (GTK_WIDGET (canvas)), h = gtk_widget_get_height (GTK_WIDGET (canvas));
  g_assert_cmpfloat (m.origin.x + m.size.width, ==, w - 12);
  g_assert_cmpfloat (m.origin.y + m.size.height, ==, h - 12);

  /* Fit to window: the graph is clear of the minimap and inside the canvas. */
  twb_graph_canvas_zoom_to_fit (canvas);
  twt_ui_pump ();
  graphene_rect_t g = graph_box ();
  g_assert_false (graphene_rect_intersection (&g, &m, NULL));
  g_assert_cmpfloat (g.origin.x, >=, 0);
  g_assert_cmpfloat (g.origin.y, >=, 0);
  g_assert_cmpfloat (g.origin.x + g.size.width, <=, w);
  g_assert_cmpfloat (g.origin.y + g.size.height, <=, h);
  double zoom_with = twb_graph_canvas_get_zoom (canvas);
  screenshot ("canvas-minimap-fit.png");

  /* canvas.toggle-minimap hides it (and its frame); the fitted view takes
   * the whole canvas back, at a larger zoom. */
  activate ("canvas.toggle-minimap");
  g_assert_false (twb_graph_canvas_get_show_minimap (canvas));
  g_assert_false (gtk_widget_get_visible (minimap_frame));
  g_assert_false (twb_graph_canvas_get_minimap_rect (canvas, NULL));
  g_assert_cmpfloat (twb_graph_canvas_get_zoom (canvas), >, zoom_with * 1.02);
  g = graph_box ();
  g_assert_true (graphene_rect_intersection (&g, &m, NULL));

  /* And back: shown, and the fit keeps clear again. */
  activate ("canvas.toggle-minimap");
  g_assert_true (twb_graph_canvas_get_show_minimap (canvas));
  g_assert_true (gtk_widget_get_visible (minimap_frame));
  g_assert_cmpfloat_with_epsilon (twb_graph_canvas_get_zoom (canvas), zoom_with, 1e-9);
  g = graph_box ();
  g_assert_false (graphene_rect_intersection (&g, &m, NULL));

  /* A graph that fits at 100 % away from the corner keeps the whole canvas. */
  g_assert_true (twb_document_undo (doc));   /* the far node */
  twt_ui_pump ();
  g_assert_null (tw_graph_find (twb_document_get_graph (doc), "far"));
  twb_graph_canvas_zoom_to_fit (canvas);
  twt_ui_pump ();
  g = graph_box ();
  g_assert_false (graphene_rect_intersection (&g, &m, NULL));
  teardown ();
}

/* Pixels clearly off the background in the middle band of a rendering. */
static int
hint_pixels (cairo_surface_t *surf)
{
  cairo_surface_flush (surf);
  const guint8 *data = cairo_image_surface_get_data (surf);
  int stride = cairo_image_surface_get_stride (surf);
  int w = cairo_image_surface_get_width (surf), h = cairo_image_surface_get_height (surf);
  const guint32 bg = *(const guint32 *) (data + stride * 3 + 4 * 3);
  int n = 0;
  for (int y = h / 2 - 30; y < h / 2 + 30; y++)
    for (int x = w / 6; x < w * 5 / 6; x++)
      {
        guint32 px = *(const guint32 *) (data + stride * y + 4 * x);
        int d = 0;
        for (int c = 0; c < 3; c++)
          d += abs ((int) ((px >> (8 * c)) & 0xff) - (int) ((bg >> (8 * c)) & 0xff));
        n += d > 120;
      }
  return n;
}

static void
test_empty_hint (void)
{
  doc = twb_document_new ();
  show_canvas (FALSE);
  const char *hint = twb_graph_canvas_get_hint (canvas);
  g_assert_nonnull (hint);
  g_assert_nonnull (strstr (hint, "palette"));
  g_assert_nonnull (strstr (hint, "Ctrl+Shift+A"));
  cairo_surface_t *surf = cairo_image_surface_create (CAIRO_FORMAT_RGB24, 900, 500);
  cairo_t *cr = cairo_create (surf);
  twb_graph_canvas_draw (canvas, cr, 900, 500);
  g_assert_true (twb_graph_render_last_drew_hint ());
  g_assert_cmpint (hint_pixels (surf), >, 300);
  screenshot ("canvas-empty-hint.png");

  /* One node: no hint, even with the node out of view. */
  add ("relu", "r", 0, 0);
  twt_ui_pump ();
  g_assert_null (twb_graph_canvas_get_hint (canvas));
  twb_graph_canvas_center_on (canvas, -3000, -3000);
  twb_graph_canvas_draw (canvas, cr, 900, 500);
  g_assert_false (twb_graph_render_last_drew_hint ());
  g_assert_cmpint (hint_pixels (surf), <, 20);
  /* Undone to empty: the hint is back. */
  g_assert_true (twb_document_undo (doc));
  twt_ui_pump ();
  g_assert_nonnull (twb_graph_canvas_get_hint (canvas));
  twb_graph_canvas_draw (canvas, cr, 900, 500);
  g_assert_true (twb_graph_render_last_drew_hint ());
  cairo_destroy (cr);
  cairo_surface_destroy (surf);
  teardown ();
}

static int
labels_drawn (void)
{
  cairo_surface_t *surf = cairo_image_surface_create (CAIRO_FORMAT_RGB24, 1100, 600);
  cairo_t *cr = cairo_create (surf);
  twb_graph_canvas_draw (canvas, cr, 1100, 600);
  cairo_destroy (cr);
  cairo_surface_destroy (surf);
  return twb_graph_render_last_drawn_labels ();
}

static void
test_edge_labels (void)
{
  /* Apart, both edges x → fc and fc → act carry their shape label. */
  setup ();
  g_assert_cmpfloat (twb_graph_canvas_get_zoom (canvas), >=, TWB_RENDER_TEXT_SCALE);
  g_assert_cmpint (labels_drawn (), ==, 2);
  teardown ();

  /* Close: x feeds a and b stacked 20 units apart, whose labels would sit
   * on each other: one is left out. */
  g_autoptr (GError) error = NULL;
  doc = twb_document_new ();
  add ("input", "x", 0, 100);
  g_assert_true (twb_document_set_attr_text (doc, "x", "shape", "[8]", &error));
  add ("relu", "a", 300, 100);
  add ("relu", "b", 320, 120);
  g_assert_true (twb_document_connect (doc, "x", "a", 0, &error));
  g_assert_true (twb_document_connect (doc, "x", "b", 0, &error));
  g_assert_no_error (error);
  show_canvas (FALSE);
  g_assert_cmpint (labels_drawn (), ==, 1);
  screenshot ("canvas-close-labels.png");
  /* Moved apart, both come back. */
  const char *ids[] = { "b", NULL };
  twb_document_select (doc, ids, FALSE);
  twb_graph_canvas_move_selection (canvas, 0, 200);
  twt_ui_pump ();
  g_assert_cmpint (labels_drawn (), ==, 2);
  /* A node box under an edge's label hides it. */
  add ("relu", "over", 150, 80);
  twt_ui_pump ();
  g_assert_cmpint (labels_drawn (), <, 2);
  teardown ();
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
  g_test_add_func ("/canvas/edges/select-delete", test_select_delete);
  g_test_add_func ("/canvas/edges/detach", test_detach);
  g_test_add_func ("/canvas/edges/taken-port", test_taken_port);
  g_test_add_func ("/canvas/edges/context-menu", test_context_menu);
  g_test_add_func ("/canvas/view/zoom-about-pointer", test_zoom_pointer);
  g_test_add_func ("/canvas/view/minimap", test_minimap);
  g_test_add_func ("/canvas/view/empty-hint", test_empty_hint);
  g_test_add_func ("/canvas/view/edge-labels", test_edge_labels);
  return g_test_run ();
}
