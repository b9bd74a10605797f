/* layout.h — where a graph's nodes go on the editor's canvas, and which
 * of its modules are folded into blocks, so that a model reads on a laptop
 * screen as soon as it is opened.  GTK-free: the ONNX importer, the model
 * file loader and the editor's Arrange (Ctrl+L) all call it, so there is
 * one layout.
 *
 *   tw_layout_view view = TW_LAYOUT_VIEW_DEFAULT;       // or the canvas's own
 *   g_autoptr (GPtrArray) blocks = tw_layout_fold (g, &view);   // of tw_layout_block
 *   double *xs = g_new (double, n), *ys = g_new (double, n);
 *   tw_layout_compute (g, (tw_layout_block **) blocks->pdata, blocks->len, &view, xs, ys);
 *
 * The picture.  Nodes are boxes (tw_layout_node_size) with inputs on the
 * left and outputs on the right.  Layers by longest path run left to right
 * (Sugiyama: dummies on long edges, barycentre sweeps against crossings),
 * cut into rows, one below the other, as many as make the whole graph fit
 * the view at the largest zoom (the canvas's aspect decides the shape).
 *
 * Blocks are named groups of nodes that nest (a ResNet's "layer1" holds
 * "layer1.0" and "layer1.1"; a node is in a block and in every block
 * around it).  A collapsed block is one box of tw_layout_block_size; an
 * expanded one is a frame around its contents, which are laid out inside
 * it first (a compound layout, bottom up), so opening a block moves its
 * neighbours aside instead of under it.  A block's contents wrap into rows
 * at the width (of a few tried) that lets the whole fit the view best; a
 * block of nodes only (a residual block) keeps up to 8 layers on one line.
 * A collapsed block's members get
 * the places they will have when it is expanded.  The sets must nest or be
 * disjoint; a block that overlaps another partly is left out of the
 * layout.
 *
 * Readable means at a zoom of TW_LAYOUT_READ_ZOOM or more in the view:
 * there the canvas draws every box's name (10 px) and op (9 px; see
 * graph_editor/twb-graph-render.h).  tw_layout_fold finds the modules in
 * the node ids ("layer1.0.conv1" is in "layer1.0", in "layer1"), or where
 * the ids name none, the graph's branching regions, and opens as many
 * levels of them as still fit the view at that zoom.
 */
#pragma once

#include <json-glib/json-glib.h>

#include "engine/graph.h"
#include "engine/model.h"

G_BEGIN_DECLS

/* The canvas a layout is made for, in device pixels, with the corner the
 * minimap covers (x, y from the canvas's top left; 0 x 0: no minimap). */
typedef struct
{
  double width, height;
  double map_x, map_y, map_w, map_h;
} tw_layout_view;

/* The editor's canvas in a 1280 × 800 window with its default panels
 * (palette, inspector, bottom panel), and the minimap in its corner:
 * measured by tests/ui/test-readable.c, which checks these figures. */
#define TW_LAYOUT_VIEW_DEFAULT { 778, 580, 564, 436, 202, 132 }

/* The zoom at which the canvas draws a box's name and its op in text of
 * 9 px or more (graph_editor/twb-graph-render.h, TWB_RENDER_LABEL_SCALE):
 * what fold aims for. */
#define TW_LAYOUT_READ_ZOOM 0.5

/* An expanded block's frame around its contents: this much on the left,
 * right and below, and a title band this tall above (model units). */
#define TW_LAYOUT_FRAME_PAD 16.0
#define TW_LAYOUT_FRAME_HEADER 34.0

typedef struct
{
  char *name;
  int *members;     /* graph node indices, every node inside (nested blocks' too) */
  int n_members;
  gboolean collapsed;
  /* Set by tw_layout_compute: the box (collapsed) or the frame (expanded). */
  double x, y, w, h;
} tw_layout_block;

/* members: copied.  Free with tw_layout_block_free. */
tw_layout_block *tw_layout_block_new (const char *name, const int *members, int n_members,
                                      gboolean collapsed);
void tw_layout_block_free (tw_layout_block *b);

/* The box the canvas draws for node n (model units): 40 + 7 per character
 * of its id and op name, clamped to [140, 240] wide; 56 tall, and 14 more
 * per port row beyond the first. */
void tw_layout_node_size (const tw_node *n, double *width, double *height);
int tw_layout_node_inputs (const tw_node *n);     /* input ports the canvas draws */
int tw_layout_node_outputs (const tw_node *n);
/* A collapsed block's box: room for its name in the header's bold type. */
void tw_layout_block_size (const char *name, double *width, double *height);

/* The zoom a fit of a width × height picture gets in the view (40 px
 * margins, never above 100 %, clear of the minimap: the whole canvas when
 * the centred picture misses it, else the larger of the strips left of and
 * above it, or the whole canvas at the largest zoom between where it
 * misses it), and the centre of the area used, in view pixels:
 * tw_layout_fit_boxes of one box. */
double tw_layout_fit (const tw_layout_view *view, double width, double height, double *cx,
                      double *cy);
/* The same fit for the picture of n boxes (boxes[4 k …]: x, y, w, h in
 * model units; the picture is their extent), where only the boxes must
 * keep clear of the minimap: a picture whose corner by the minimap is
 * empty may use the whole canvas at a larger zoom than a strip gives.
 * *cx, *cy: where the centre of the extent goes, in view pixels.  The
 * canvas's Ctrl+0 is this function over what it draws. */
double tw_layout_fit_boxes (const tw_layout_view *view, const double *boxes, int n, double *cx,
                            double *cy);

/* Positions (top-left corners) for all nodes into xs, ys (by index), and
 * each block's box or frame (blocks[i]->x, y, w, h); returns the zoom the
 * picture fits the view at (tw_layout_fit).  blocks may be NULL when
 * n_blocks is 0.  Deterministic: the same input gives the same picture.
 * O((V + E) log V) over nodes and edges, with a few sweeps (and, where
 * blocks are open, a few tries of the width their contents wrap at). */
double tw_layout_compute (const tw_graph *g, tw_layout_block *const *blocks, int n_blocks,
                          const tw_layout_view *view, double *xs, double *ys);

/* Each block's box (collapsed) or frame (expanded) around its members
 * where they are now, as tw_layout_compute places it: a frame's top left
 * TW_LAYOUT_FRAME_PAD left of and TW_LAYOUT_FRAME_HEADER above what is
 * inside (nodes, and the boxes and frames of the blocks inside), a
 * collapsed box at the frame's corner.  So a block moves with its members;
 * a block with no placed member is at 0, 0, 0 × 0. */
void tw_layout_place_blocks (const tw_graph *g, tw_layout_block *const *blocks, int n_blocks);

/* How the blocks nest: parent[k] is the index of the block right around
 * blocks[k], -1 for none, -2 for a block left out (it overlaps another in
 * part); owner[i] the innermost block holding node i, or -1.  Either may
 * be NULL. */
void tw_layout_nesting (const tw_graph *g, tw_layout_block *const *blocks, int n_blocks,
                        int *parent, int *owner);

/* A block just opened where nodes were moved by hand (so laying it all out
 * again would undo the user's work): the items beside its frame that it
 * meets move right or down, whichever is the shorter move, with all the
 * items past them, so nothing overlaps; a frame around it that grows does
 * the same one level up.  opened indexes blocks; xs, ys hold every node's
 * position and are updated. */
void tw_layout_make_room (const tw_graph *g, tw_layout_block *const *blocks, int n_blocks,
                          int opened, double *xs, double *ys);

/* The extent of that picture, for a caller deciding between foldings. */
void tw_layout_extent (const tw_graph *g, tw_layout_block *const *blocks, int n_blocks,
                       const tw_layout_view *view, double *width, double *height);

/* The modules the node ids name, as blocks (three members or more; a
 * module that holds what its only submodule holds, or all but one node of
 * it, counted once), outer before inner; collapsed so that the graph fits
 * the view at TW_LAYOUT_READ_ZOOM with as many levels open as can be (all
 * of them when it fits so; the outermost closed when even that does not
 * fit, but never one box holding more than half the graph).  Ids that
 * name no modules ("Conv_12"): where the graph does not read without
 * blocks, its branching regions between nodes every path passes through
 * (residual blocks), "block 1", "block 2", …  NULL for no blocks.  Caller
 * frees (g_ptr_array_unref). */
GPtrArray *tw_layout_fold (const tw_graph *g, const tw_layout_view *view);
/* The same, with the places of the picture it settled on in xs, ys (of the
 * graph without blocks when it returns NULL), as tw_layout_compute gives
 * them: one layout fewer than folding and then laying out. */
GPtrArray *tw_layout_fold_places (const tw_graph *g, const tw_layout_view *view, double *xs,
                                  double *ys);

/* The editor member of a model file holding these blocks and the view the
 * positions were laid out for ({"blocks": [{"name", "nodes", "collapsed",
 * "pos"}], "view": [w, h, map x, y, w, h]}, see
 * graph_editor/twb-document-blocks.c); NULL for no blocks and no view.
 * Caller frees. */
JsonNode *tw_layout_blocks_to_editor (const tw_graph *g, tw_layout_block *const *blocks,
                                      int n_blocks, const tw_layout_view *view);

/* A model as it opens (imported, or a file without positions): the
 * blocks its ids name, folded for view (NULL: TW_LAYOUT_VIEW_DEFAULT),
 * every node's position, and both in its editor member (its other entries
 * kept). */
void tw_layout_model (tw_model *m, const tw_layout_view *view);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_layout_block, tw_layout_block_free)

G_END_DECLS
