/* twb-graph-scene.h — what the graph canvas draws, computed from a document.
 *
 * A TwbGraphScene is a flat, pre-computed picture of a TwbDocument: one box
 * per visible node (a collapsed block is one box, the outermost one where
 * blocks nest), a frame per expanded block (around its members, where
 * tw_layout_place_blocks puts it), one segment per visible edge with its
 * shape label, port positions and the state to show (selected, error,
 * message).  It is rebuilt when the document changes; the canvas, the
 * minimap and the exporters only read it (Sysprof's rule: widgets draw
 * pre-computed model data).  GTK-free, so it is tested without a display.
 *
 *   TwbGraphScene *s = twb_graph_scene_new (doc);      // caller frees
 *   int i = twb_graph_scene_hit_node (s, x, y);        // model coordinates
 *   twb_graph_scene_free (s);
 *
 * Coordinates are model coordinates (the "pos" of the model file).
 */
#pragma once

#include "graph_editor/twb-document.h"

G_BEGIN_DECLS

#define TWB_SCENE_MAX_PORTS 16

typedef enum
{
  TWB_PORT_INPUT,
  TWB_PORT_OUTPUT,
} TwbPortDirection;

typedef struct
{
  char *id;                 /* node id, or block name */
  char *title;              /* drawn in the header: the id */
  char *subtitle;           /* the op, or "block · 5 nodes" */
  char *shape;              /* output shape ("[N, 120]"), NULL when unknown */
  char *stats;              /* "94.1k params" or NULL */
  char *error;              /* the node's own error, NULL if none */
  char *category;           /* op category (colour), "Block" for blocks */
  char *accessible;         /* one sentence for assistive technology */
  double x, y, w, h;
  int n_in, n_out;
  char *in_names[TWB_SCENE_MAX_PORTS];    /* port labels, may be NULL */
  char *in_types[TWB_SCENE_MAX_PORTS];    /* "f32[N, 784]" of what is connected, or NULL */
  char *out_types[TWB_SCENE_MAX_PORTS];
  gboolean in_connected[TWB_SCENE_MAX_PORTS];
  gboolean selected;
  gboolean invalid;          /* downstream of an error (greyed edges) */
  gboolean is_block;
  TwbOutputKind output;      /* a model output: marked, or by default (feeds a loss) */
  int graph_index;           /* index in the tw_graph, -1 for blocks */
  int stage;                 /* pipeline stage (twb_document_get_node_stage), -1: none */
} TwbSceneNode;

/* An expanded block: a frame around its members (and the blocks inside
 * it), its name in a band along the top. */
typedef struct
{
  char *name;
  char *summary;             /* "2 blocks · 10 nodes", "conv2d ×2 · relu ×2 · add" */
  double x, y, w, h;         /* the band is the top TW_LAYOUT_FRAME_HEADER */
  int depth;                 /* 0 for a block in no other */
  gboolean selected;         /* every node in it is selected */
} TwbSceneFrame;

typedef struct
{
  int from, from_port;       /* scene node indices */
  int to, to_port;
  char *label;               /* "[N, 784]" or NULL when unknown */
  gboolean invalid;
  char *to_id;               /* the document's edge: input to_input of node to_id */
  int to_input;
} TwbSceneEdge;

typedef struct
{
  TwbSceneNode *nodes;
  int n_nodes;
  TwbSceneEdge *edges;
  int n_edges;
  TwbSceneFrame *frames;                 /* outer frames before the ones inside them */
  int n_frames;
  double min_x, min_y, max_x, max_y;    /* bounds of all boxes and frames; 0 when empty */
  GHashTable *index;                     /* id (node or block) → scene index + 1 */
  GHashTable *routes;                    /* edge routes computed so far (private cache) */
  int n_errors;
  int n_stages;                          /* pipeline stages painted (0: none) */
  int64_t params;
  double flops;
} TwbGraphScene;

TwbGraphScene *twb_graph_scene_new (TwbDocument *doc);
void twb_graph_scene_free (TwbGraphScene *s);

/* Scene index of a node id or block name (a node inside a collapsed block
 * maps to the block); -1 if absent. */
int twb_graph_scene_find (const TwbGraphScene *s, const char *id);

/* Port centre in model coordinates. */
void twb_graph_scene_port_pos (const TwbGraphScene *s, int node, TwbPortDirection dir, int port,
                               double *x, double *y);

/* Horizontal offset of an edge's Bezier control points from its ends: half
 * the span (at least 40) when it runs forwards, a fixed 80 when it runs
 * backwards (a wrapped row), so it does not swing wide across the graph. */
double twb_graph_scene_edge_bend (double x0, double x3);

/* Orthogonal route of an edge that cannot be drawn as a curve: one that
 * runs backwards (into a node left of its source, as in a wrapped row), or
 * a forward one whose curve would cross another node's box.  Out to the
 * right, along a horizontal run clear of the boxes, into the input from the
 * left; vertical runs step aside from boxes.  Fills pts (x, y pairs) and
 * returns the number of points (6); 0 for an edge drawn as a Bezier curve.
 * s may be NULL (no avoidance: backward edges only). */
int twb_graph_scene_edge_route (const TwbGraphScene *s, double x0, double y0, double x3, double y3,
                                double pts[6][2]);
/* n points (n >= 2) evenly along edge `edge` as the canvas draws it (route
 * or curve, without the rounding of corners), into pts; returns n. */
int twb_graph_scene_edge_sample (const TwbGraphScene *s, int edge, int n, double (*pts)[2]);

/* The innermost frame at the point, or -1; *in_band tells whether the
 * point is on its title band (where a click picks the block, a drag moves
 * it, a double-click closes it). */
int twb_graph_scene_hit_frame (const TwbGraphScene *s, double x, double y, gboolean *in_band);
/* The frame's close button in its band: centre and radius, model units. */
void twb_graph_scene_frame_button (const TwbGraphScene *s, int frame, double *cx, double *cy,
                                   double *r);

/* Hit tests in model coordinates; `slop` is the hit radius for ports.
 * Return the topmost node / the port under the point, or -1. */
int twb_graph_scene_hit_node (const TwbGraphScene *s, double x, double y);
int twb_graph_scene_hit_port (const TwbGraphScene *s, double x, double y, double slop,
                              TwbPortDirection *dir, int *port);
/* The edge whose label box or curve is near the point, or -1. */
int twb_graph_scene_hit_edge (const TwbGraphScene *s, double x, double y, double slop);

/* The edge into input `port` of node `id` (document ids), or -1. */
int twb_graph_scene_find_edge (const TwbGraphScene *s, const char *id, int port);

/* Node indices whose boxes intersect the rectangle; caller frees. */
GArray *twb_graph_scene_nodes_in_rect (const TwbGraphScene *s, double x0, double y0, double x1,
                                       double y1);

/* "94.1k", "1.2M" — compact counts for labels; caller frees. */
char *twb_format_count (double v);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (TwbGraphScene, twb_graph_scene_free)

G_END_DECLS
