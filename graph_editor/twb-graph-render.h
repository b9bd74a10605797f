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
 * Level of detail.  No text is ever drawn smaller than
 * TWB_RENDER_MIN_TEXT_PX on screen: where a label would come out smaller
 * at its nominal size it is drawn bigger, as long as it fits its box, and
 * left out when it does not.  From TWB_RENDER_TEXT_SCALE up a box shows
 * its name in its header and its op (a block: what it holds) below; from
 * TWB_RENDER_PORT_SCALE up to there, a box is a tile of its colour with
 * its op (a block: its name) in type filling it; below that, boxes only,
 * and edges are straight lines.  An expanded block's frame has its name in
 * its band, or, when the band is too thin for the type, on a label at its
 * corner.  Edge shape labels come where they fit and clear each other.
 * Nodes and edges outside the viewport are skipped.
 */
#pragma once

#include <cairo.h>

#include "graph_editor/twb-graph-scene.h"

G_BEGIN_DECLS

/* 9 px: the smallest text that stays legible on a laptop screen at 96 dpi
 * (GNOME's smallest caption style is 9 pt, 12 px; graph views commonly go
 * to 9 px); names get at least TWB_RENDER_TITLE_PX where they fit. */
#define TWB_RENDER_MIN_TEXT_PX 9.0
#define TWB_RENDER_TITLE_PX 10.0
/* A box's 24-unit header holds bold type of 20 units at most: at 0.45 that
 * is 9 px, at 0.5 (TW_LAYOUT_READ_ZOOM) 10 px.  Below 0.45 there is no room
 * for a name and an op, so one line fills the box. */
#define TWB_RENDER_TEXT_SCALE 0.45
/* Below 0.25 a 5-unit port is under 1.25 px: invisible, so skip; a 56-unit
 * box is 14 px tall, too little for a line of 9 px type and its margins. */
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
/* Pipeline stage k's colour (the band and the legend), RGB in 0–1. */
void twb_graph_render_stage_colour (int stage, double rgb[3]);

void twb_graph_render (cairo_t *cr, const TwbGraphScene *s, const TwbRenderView *v);

/* Nodes drawn by the last twb_graph_render call (benchmark; main thread). */
int twb_graph_render_last_drawn_nodes (void);
/* Edge labels drawn by the last call: a label that would overlap another
 * label or a node box is left out, the one on the shorter edge kept. */
int twb_graph_render_last_drawn_labels (void);
/* Text drawn by the last call: the smallest size on screen (px; 0 when no
 * text was drawn), and how many boxes showed their name and their op (a
 * block: its name and what it holds) in text of TWB_RENDER_MIN_TEXT_PX or
 * more, and how many showed one of them. */
double twb_graph_render_last_min_text_px (void);
/* The smallest box name the last call drew, px (0: none). */
double twb_graph_render_last_min_title_px (void);
int twb_graph_render_last_labelled_boxes (void);
int twb_graph_render_last_named_boxes (void);
/* Whether the last call drew the view's empty-scene hint. */
gboolean twb_graph_render_last_drew_hint (void);

/* Whole graph at scale 1 (PNG at 2x) with a 40-unit margin.  The format
 * comes from the file name's extension: .png, .svg or .pdf.  Written to a
 * temporary file and renamed. */
gboolean twb_graph_export (const TwbGraphScene *s, const char *path, gboolean dark,
                           GError **error);

G_END_DECLS
