/* twb-graph-canvas.h — the node-graph editor widget.
 *
 * A TwbGraphCanvas is a view and controller of a TwbDocument: it draws the
 * document's TwbGraphScene (rebuilt on every "changed") with the shared
 * cairo renderer, and turns pointer and keyboard input into document edits:
 * drop a layer from the palette, drag port to port to connect (a taken
 * input port refuses), drag an edge's end off its input port to move or
 * disconnect it, click an edge and press Delete to remove it, click and
 * rubber-band to select, drag to move (snapped to the grid), middle-drag or
 * Space+drag to pan, Ctrl+wheel (about the pointer) or pinch to zoom.
 * Refused edits (an invalid connection) are reported through the "message"
 * signal and twb_graph_canvas_get_last_message ().  An empty document
 * shows a hint (twb_graph_canvas_get_hint ()).
 *
 *   GtkWidget *c = twb_graph_canvas_new ();
 *   twb_graph_canvas_set_document (TWB_GRAPH_CANVAS (c), doc);
 *   g_signal_connect (c, "message", G_CALLBACK (show_toast), win);
 *
 * Signals: "message" (const char *text), "activate-node" (const char *id:
 * Enter or double-click), "view-changed" () (zoom or pan; the minimap),
 * "margin-clicked" (const char *id: a click in a node header's left margin,
 * where the debugger's breakpoint dot sits).
 */
#pragma once

#include <gtk/gtk.h>

#include "graph_editor/twb-document.h"
#include "graph_editor/twb-graph-render.h"
#include "graph_editor/twb-graph-scene.h"

G_BEGIN_DECLS

#define TWB_TYPE_GRAPH_CANVAS (twb_graph_canvas_get_type ())
G_DECLARE_FINAL_TYPE (TwbGraphCanvas, twb_graph_canvas, TWB, GRAPH_CANVAS, GtkWidget)

GtkWidget *twb_graph_canvas_new (void);

void twb_graph_canvas_set_document (TwbGraphCanvas *self, TwbDocument *doc);
TwbDocument *twb_graph_canvas_get_document (TwbGraphCanvas *self);   /* borrowed */
const TwbGraphScene *twb_graph_canvas_get_scene (TwbGraphCanvas *self);   /* borrowed */

/* View. */
void twb_graph_canvas_zoom_to_fit (TwbGraphCanvas *self);
void twb_graph_canvas_zoom_by (TwbGraphCanvas *self, double factor);   /* about the centre */
double twb_graph_canvas_get_zoom (TwbGraphCanvas *self);
void twb_graph_canvas_center_on (TwbGraphCanvas *self, double x, double y);   /* model coords */
/* The visible part of the model, model coordinates. */
void twb_graph_canvas_get_visible (TwbGraphCanvas *self, double *x, double *y, double *w,
                                   double *h);
/* The minimap (property "show-minimap", default TRUE; the stateful action
 * "canvas.toggle-minimap" flips it).  A TwbMinimap follows it, hiding
 * itself and its GtkFrame, and reports where it sits over the canvas;
 * fit-to-window leaves that rectangle (widget coordinates) free. */
void twb_graph_canvas_set_show_minimap (TwbGraphCanvas *self, gboolean show);
/* The window is about to resize the canvas (a panel grows): a view still as
 * the last fit left it is fitted again at the new size. */
void twb_graph_canvas_refit_on_resize (TwbGraphCanvas *self);
gboolean twb_graph_canvas_get_show_minimap (TwbGraphCanvas *self);
void twb_graph_canvas_set_minimap_rect (TwbGraphCanvas *self, const graphene_rect_t *rect);
/* FALSE when no minimap is shown over the canvas. */
gboolean twb_graph_canvas_get_minimap_rect (TwbGraphCanvas *self, graphene_rect_t *rect);
/* The hint drawn on an empty canvas (a document without nodes), NULL when
 * there are nodes. */
const char *twb_graph_canvas_get_hint (TwbGraphCanvas *self);
/* The debugger's marks on nodes (id → GUINT_TO_POINTER (TwbNodeMark
 * flags)) and fused-group tints (id → GUINT_TO_POINTER (0x1000000 |
 * 0xRRGGBB)); the tables are copied, NULL clears.  get_ returns 0 when
 * none. */
void twb_graph_canvas_set_marks (TwbGraphCanvas *self, GHashTable *marks);
guint twb_graph_canvas_get_mark (TwbGraphCanvas *self, const char *id);
void twb_graph_canvas_set_tints (TwbGraphCanvas *self, GHashTable *tints);
guint twb_graph_canvas_get_tint (TwbGraphCanvas *self, const char *id);
void twb_graph_canvas_set_snap_to_grid (TwbGraphCanvas *self, gboolean snap);
gboolean twb_graph_canvas_get_snap_to_grid (TwbGraphCanvas *self);
/* The pipeline stage a node is painted with (its band's colour), FALSE
 * (stage -1) when it has none; the number of stages in the legend. */
gboolean twb_graph_canvas_get_stage_colour (TwbGraphCanvas *self, const char *id, int *stage,
                                            GdkRGBA *colour);
int twb_graph_canvas_get_n_stages (TwbGraphCanvas *self);
/* Show the node: select it, give it the keyboard focus ring and scroll to it. */
void twb_graph_canvas_reveal_node (TwbGraphCanvas *self, const char *id);

/* Edits the pointer makes, also callable directly (tests, keyboard). */
/* Adds a node of op centred at widget coordinates (x, y); returns its id. */
const char *twb_graph_canvas_add_node_at (TwbGraphCanvas *self, const char *op, double x,
                                          double y);
/* Connect, or refuse with the reason as a "message". */
gboolean twb_graph_canvas_try_connect (TwbGraphCanvas *self, const char *from, const char *to,
                                       int port);
/* Edge selection: the edge into input `port` of node `to` (NULL: none).
 * Selecting an edge clears the node selection and selecting a node clears
 * the edge.  FALSE when there is no such edge. */
gboolean twb_graph_canvas_select_edge (TwbGraphCanvas *self, const char *to, int port);
/* The selected edge's node (borrowed) and input port, NULL / -1 when none. */
const char *twb_graph_canvas_get_selected_edge (TwbGraphCanvas *self, int *port);
/* Disconnect the selected edge (Delete, BackSpace): one undo step. */
gboolean twb_graph_canvas_delete_selected_edge (TwbGraphCanvas *self);
/* Context menu (right click, Menu key, Shift+F10) for what is under (x, y),
 * widget coordinates: selects the node or edge there and pops up Delete,
 * Disconnect (an edge) and Duplicate (nodes), the canvas's actions
 * "canvas.delete", "canvas.disconnect", "canvas.duplicate".  FALSE (no
 * menu) over empty canvas. */
gboolean twb_graph_canvas_popup_menu_at (TwbGraphCanvas *self, double x, double y);
GtkWidget *twb_graph_canvas_get_context_menu (TwbGraphCanvas *self);   /* NULL until first popup */
/* Move the focus ring to the next (+1) or previous (-1) node and select it. */
gboolean twb_graph_canvas_focus_next (TwbGraphCanvas *self, int dir);
const char *twb_graph_canvas_get_focus_node (TwbGraphCanvas *self);
void twb_graph_canvas_move_selection (TwbGraphCanvas *self, double dx, double dy);

/* The last refusal or notice shown to the user, NULL if none. */
const char *twb_graph_canvas_get_last_message (TwbGraphCanvas *self);

/* Render the current view offscreen with the widget's own code path (bench). */
void twb_graph_canvas_draw (TwbGraphCanvas *self, cairo_t *cr, int width, int height);

G_END_DECLS
