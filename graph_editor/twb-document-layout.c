/* twb-document-layout.c — node box sizes (the engine's, engine/layout.h)
 * and where new nodes go: free space near a wanted spot, a block of new
 * nodes, the spot after a node.  Arrange is in twb-document-arrange.c. */
#define G_LOG_DOMAIN "twb-document"

#include "graph_editor/twb-document-private.h"

#include <string.h>

/* Spacing as the layout's (engine/layout.c): a gap as wide as a port label
 * between layers, room for an edge label between boxes of a layer. */
#define LAYER_GAP 80.0
#define ROW_GAP 40.0

int
twb_document_node_ports (TwbDocument *doc, const char *id, int *n_outputs)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), 0);
  tw_node *n = tw_graph_find (doc->model->graph, id);
  if (n_outputs)
    *n_outputs = n ? tw_layout_node_outputs (n) : 0;
  return n ? tw_layout_node_inputs (n) : 0;
}

void
twb_document_node_size (TwbDocument *doc, const char *id, double *width, double *height)
{
  g_return_if_fail (TWB_IS_DOCUMENT (doc));
  tw_node *n = tw_graph_find (doc->model->graph, id);
  if (n == NULL)
    {
      if (width)
        *width = 140.0;
      if (height)
        *height = 56.0;
      return;
    }
  tw_layout_node_size (n, width, height);
}

/* ---- Placing new nodes ---------------------------------------------------- */

/* Free space keeps this far from every box: room for an edge and its label. */
#define PLACE_MARGIN 40.0
#define PLACE_STEP 20.0
#define PLACE_RANGE 60      /* steps searched right of / below the wanted spot */
#define PLACE_BACK 20       /* steps searched left of / above it */
#define BLOCK_ROW_WIDTH 1200.0

typedef struct
{
  double x, y, w, h;
} place_box;

/* The boxes that count, computed once per search. */
static GArray *
placed_boxes (TwbDocument *doc, GHashTable *ignore)
{
  tw_graph *g = doc->model->graph;
  int n = tw_graph_n_nodes (g);
  GArray *boxes = g_array_sized_new (FALSE, FALSE, sizeof (place_box), n);
  for (int i = 0; i < n; i++)
    {
      tw_node *nd = tw_graph_node (g, i);
      if (!nd->has_pos || g_hash_table_contains (ignore, nd->id))
        continue;
      place_box b = { nd->x, nd->y, 0, 0 };
      tw_layout_node_size (nd, &b.w, &b.h);
      g_array_append_val (boxes, b);
    }
  return boxes;
}

static gboolean
box_is_free (const GArray *boxes, double x, double y, double w, double h)
{
  for (guint i = 0; i < boxes->len; i++)
    {
      const place_box *b = &g_array_index (boxes, place_box, i);
      if (x < b->x + b->w + PLACE_MARGIN && b->x < x + w + PLACE_MARGIN
          && y < b->y + b->h + PLACE_MARGIN && b->y < y + h + PLACE_MARGIN)
        return FALSE;
    }
  return TRUE;
}

static GHashTable *
id_set (const char *const *ids)
{
  GHashTable *set = g_hash_table_new (g_str_hash, g_str_equal);
  for (int i = 0; ids && ids[i]; i++)
    g_hash_table_add (set, (gpointer) ids[i]);
  return set;
}

void
twb_document_free_position (TwbDocument *doc, double near_x, double near_y, double w, double h,
                            const char *const *ignore, double *x, double *y)
{
  g_return_if_fail (TWB_IS_DOCUMENT (doc));
  g_autoptr (GHashTable) skip = id_set (ignore);
  g_autoptr (GArray) boxes = placed_boxes (doc, skip);
  /* Cheapest free spot on a grid around the wanted one; going right costs
   * least, then down, going left or up three times as much. */
  double best = G_MAXDOUBLE, bx = near_x, by = near_y;
  for (int b = -PLACE_BACK; b <= PLACE_RANGE; b++)
    for (int a = -PLACE_BACK; a <= PLACE_RANGE; a++)
      {
        double cost = (a >= 0 ? a : -3.0 * a) + (b >= 0 ? 1.5 * b : -3.0 * b);
        if (cost >= best)
          continue;
        double cx = near_x + a * PLACE_STEP, cy = near_y + b * PLACE_STEP;
        if (box_is_free (boxes, cx, cy, w, h))
          {
            best = cost;
            bx = cx;
            by = cy;
          }
      }
  if (best == G_MAXDOUBLE)
    {
      /* Crowded all around: right of everything. */
      double right = near_x;
      for (guint i = 0; i < boxes->len; i++)
        {
          const place_box *pb = &g_array_index (boxes, place_box, i);
          right = MAX (right, pb->x + pb->w + PLACE_MARGIN + 1);
        }
      bx = right;
      by = near_y;
    }
  *x = bx;
  *y = by;
}

void
twb_document_place_block (TwbDocument *doc, const char *const *ids, double near_x, double near_y)
{
  g_return_if_fail (TWB_IS_DOCUMENT (doc));
  tw_graph *g = doc->model->graph;
  int n = 0;
  while (ids && ids[n])
    n++;
  if (n == 0)
    return;
  /* Left to right, LAYER_GAP apart, a new row when one gets too wide. */
  g_autofree double *rx = g_new (double, n);
  g_autofree double *ry = g_new (double, n);
  double cx = 0, cy = 0, row_h = 0, block_w = 0;
  for (int i = 0; i < n; i++)
    {
      double w, h;
      twb_document_node_size (doc, ids[i], &w, &h);
      if (cx > 0 && cx + w > BLOCK_ROW_WIDTH)
        {
          cx = 0;
          cy += row_h + ROW_GAP + PLACE_MARGIN;
          row_h = 0;
        }
      rx[i] = cx;
      ry[i] = cy;
      block_w = MAX (block_w, cx + w);
      row_h = MAX (row_h, h);
      cx += w + LAYER_GAP;
    }
  double x, y;
  twb_document_free_position (doc, near_x, near_y, block_w, cy + row_h, ids, &x, &y);
  twb_document_edit_begin (doc, "Place");
  for (int i = 0; i < n; i++)
    {
      int k = tw_graph_index_of (g, ids[i]);
      tw_node *nd = k >= 0 ? tw_graph_node (g, k) : NULL;
      if (nd && (!nd->has_pos || nd->x != x + rx[i] || nd->y != y + ry[i]))
        twb_document_prim_pos (doc, k, x + rx[i], y + ry[i]);
    }
  twb_document_edit_end (doc);
}

void
twb_document_after_node (TwbDocument *doc, const char *id, double *x, double *y)
{
  g_return_if_fail (TWB_IS_DOCUMENT (doc));
  tw_node *nd = tw_graph_find (doc->model->graph, id);
  if (nd == NULL)
    return;
  double w;
  tw_layout_node_size (nd, &w, NULL);
  *x = nd->x + w + LAYER_GAP;
  *y = nd->y;
}

const char *
twb_document_insert_node (TwbDocument *doc, const char *op, double near_x, double near_y,
                          GError **error)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), NULL);
  tw_graph *g = doc->model->graph;
  g_auto (GStrv) sel = twb_document_get_selection (doc);
  g_autofree char *after = sel && sel[0] && !sel[1] ? g_strdup (sel[0]) : NULL;
  if (after)
    twb_document_after_node (doc, after, &near_x, &near_y);
  g_autofree char *label = g_strdup_printf ("Add %s", op ? op : "node");
  twb_document_begin_group (doc, label);
  const char *added = twb_document_add_node (doc, op, NULL, near_x, near_y, error);
  if (added == NULL)
    {
      twb_document_end_group (doc);
      return NULL;
    }
  g_autofree char *id = g_strdup (added);
  /* Fed by the selected node where the op takes an input and the edge is
   * valid; otherwise the node is only placed next to it. */
  if (after && twb_document_node_ports (doc, id, NULL) > 0
      && twb_document_can_connect (doc, after, id, 0, NULL))
    twb_document_connect (doc, after, id, 0, NULL);
  const char *ids[] = { id, NULL };
  twb_document_place_block (doc, ids, near_x, near_y);
  twb_document_end_group (doc);
  twb_document_select (doc, ids, FALSE);
  return tw_graph_find (g, id)->id;
}
