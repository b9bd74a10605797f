/* twb-graph-render.h — draw a TwbGraphScene with cairo.
 *
 * One drawing routine serves the canvas (through gtk_snapshot_append_cairo),
 * the minimap-free exports (PNG, SVG, PDF through cairo surfaces) and the
 * benchmark, so what is exported is what is on screen.
 *
 *   TwbRenderView v = { .scale = 1, .width = 800, .height = 600 };
 *   twb_graph_render (cr, scene, &v);
 *   twb_graph_export (scene, "model.svg", FALSE, &error);   // format from the extension
 *
 * Level of detail: below TWB_RENDER_TEXT_SCALE no text is drawn, below
 * TWB_RENDER_PORT_SCALE no ports and edges become straight lines; nodes and
 * edges outside the viewport are skipped.
 */
#pragma once

#include <cairo.h>

#include "graph_editor/twb-graph-scene.h"

G_BEGIN_DECLS

/* Below 0.45 the 13 px header font is under 6 px tall: unreadable, so skip. */
#define TWB_RENDER_TEXT_SCALE 0.45
/* Below 0.25 a 5-unit port is under 1.25 px: invisible, so skip. */
#define TWB_RENDER_PORT_SCALE 0.25

/* What the debugger marks on nodes: TwbRenderView.marks maps a node id to
 * GUINT_TO_POINTER (flags). */
typedef enum
{
  TWB_MARK_BREAK_FORWARD = 1 << 0,    /* a breakpoint: a red dot in the header's margin */
  TWB_MARK_BREAK_BACKWARD = 1 << 1,   /* (half a dot for one phase, a whole one for both) */
  TWB_MARK_FROZEN = 1 << 2,           /* parameters frozen: a lock badge */
  TWB_MARK_CURRENT = 1 << 3,          /* the op a paused run is at: an amber ring */
  TWB_MARK_FAULT = 1 << 4,            /* where a run failed (NaN, divergence): a red ring */
} TwbNodeMark;

/* The left end of a node's header, model units: a click there toggles the
 * node's breakpoint (as in a code editor's gutter). */
#define TWB_RENDER_MARGIN_W 18.0
/* The header's height, model units. */
#define TWB_RENDER_HEADER_H 24.0

typedef struct
{
  double scale;                 /* device px per model unit */
  double tx, ty;                /* device = model * scale + t */
  double width, height;         /* viewport in device px (culling); 0: no culling */
  gboolean dark;
  double grid;                  /* grid spacing in model units, 0: none */
  int focus;                    /* scene index with keyboard focus, -1 */
  int hover;                    /* scene index under the pointer, -1 */
  int hover_edge;               /* edge under the pointer, -1 */
  int selected_edge;            /* selected edge (drawn thick in the accent colour), -1 */
  /* An edge being dragged: from (x0, y0) to (x1, y1), model coordinates. */
  gboolean connecting;
  gboolean connect_ok;
  double cx0, cy0, cx1, cy1;
  /* A rubber band, model coordinates. */
  gboolean banding;
  double bx0, by0, bx1, by1;
  /* Drawn centred in muted text when the scene has no nodes; NULL: none. */
  const char *hint;
  /* Debugger marks (id → TwbNodeMark flags) and tints (id →
   * GUINT_TO_POINTER (0x1000000 | 0xRRGGBB): a fused group's colour over
   * the body); both borrowed, may be NULL. */
  GHashTable *marks;
  GHashTable *tints;
  int hover_margin;             /* scene index whose margin is under the pointer, -1 */
} TwbRenderView;

void twb_render_view_init (TwbRenderView *v);

void twb_graph_render (cairo_t *cr, const TwbGraphScene *s, const TwbRenderView *v);

/* Nodes drawn by the last twb_graph_render call (benchmark; main thread). */
int twb_graph_render_last_drawn_nodes (void);
/* Edge labels drawn by the last call: a label that would overlap another
 * label or a node box is left out, the one on the shorter edge kept. */
int twb_graph_render_last_drawn_labels (void);
/* Whether the last call drew the view's empty-scene hint. */
gboolean twb_graph_render_last_drew_hint (void);

/* Whole graph at scale 1 (PNG at 2x) with a 40-unit margin.  The format
 * comes from the file name's extension: .png, .svg or .pdf.  Written to a
 * temporary file and renamed. */
gboolean twb_graph_export (const TwbGraphScene *s, const char *path, gboolean dark,
                           GError **error);

G_END_DECLS
