/* twb-minimap.h — an overview of the whole graph with the visible part
 * outlined; click or drag to move the canvas there.  Draws the canvas's
 * scene (boxes only) and view; computes nothing of its own.  It follows
 * the canvas's "show-minimap" (hiding itself and the GtkFrame it sits in)
 * and tells the canvas where it covers it, so fit-to-window keeps clear.
 *
 *   GtkWidget *m = twb_minimap_new (TWB_GRAPH_CANVAS (canvas));
 */
#pragma once

#include "graph_editor/twb-graph-canvas.h"

G_BEGIN_DECLS

#define TWB_TYPE_MINIMAP (twb_minimap_get_type ())
G_DECLARE_FINAL_TYPE (TwbMinimap, twb_minimap, TWB, MINIMAP, GtkWidget)

GtkWidget *twb_minimap_new (TwbGraphCanvas *canvas);

G_END_DECLS
