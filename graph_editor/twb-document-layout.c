/* twb-document-layout.c — node box sizes and the automatic layered layout.
 *
 * Layout (Sugiyama, simplified): layers by longest path from the sources;
 * edges spanning several layers get a dummy node in each layer they cross;
 * within a layer, nodes are ordered by the barycentre of their neighbours in
 * the layer before (down sweeps) and after (up sweeps), a few times over, to
 * cut crossings; then layers are placed left to right, each one
 * (widest box + 80 px) after the previous, and nodes top to bottom at the
 * height of their predecessors where there is room, 40 px apart at least.
 * Boxes never overlap and, in a DAG, every edge runs left to right.
 */
#define G_LOG_DOMAIN "twb-document"

#include "graph_editor/twb-document-private.h"

#include <string.h>

/* Spacing from the brief that fixed the look: a gap as wide as a port label
 * between layers, room for an edge label between boxes of a layer. */
#define LAYER_GAP 80.0
#define ROW_GAP 40.0
#define DUMMY_HEIGHT 16.0
#define SWEEPS 4

static int
n_input_ports (const tw_node *n)
{
  if (n->op == NULL)
    return n->n_inputs;
  if (n->op->max_inputs >= 0)
    return MAX (n->op->max_inputs, n->n_inputs);
  return MAX (n->n_inputs + 1, n->op->min_inputs);
}

static int
n_output_ports (const tw_node *n)
{
  if (n->n_outputs > 0)
    return n->n_outputs;
  if (n->op && n->op->n_outputs > 0)
    return n->op->n_outputs;
  return 1;
}

int
twb_document_node_ports (TwbDocument *doc, const char *id, int *n_outputs)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), 0);
  tw_node *n = tw_graph_find (doc->model->graph, id);
  if (n_outputs)
    *n_outputs = n ? n_output_ports (n) : 0;
  return n ? n_input_ports (n) : 0;
}

static void
node_box (const tw_node *n, double *width, double *height)
{
  /* About 7 px a character at the canvas' 11 pt label font, plus padding. */
  double chars = (double) (g_utf8_strlen (n->id, -1) + g_utf8_strlen (n->op_name, -1));
  double w = CLAMP (40.0 + 7.0 * chars, 140.0, 240.0);
  int rows = MAX (1, MAX (n_input_ports (n), n_output_ports (n)));
  if (width)
    *width = w;
  if (height)
    *height = 56.0 + 14.0 * (rows - 1);
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
  node_box (n, width, height);
}

typedef struct
{
  int layer;
  double order;        /* position key inside the layer */
  double w, h;
  GArray *pred, *succ; /* of int: vertex indices (nodes first, then dummies) */
} vertex;

static int
cmp_by_order (gconstpointer a, gconstpointer b, gpointer user)
{
  const vertex *v = user;
  double x = v[*(const int *) a].order, y = v[*(const int *) b].order;
  return x < y ? -1 : x > y ? 1 : *(const int *) a - *(const int *) b;
}

static void
sweep (vertex *v, GPtrArray *layers, gboolean down)
{
  int n_layers = (int) layers->len;
  for (int li = down ? 1 : n_layers - 2; down ? li < n_layers : li >= 0; li += down ? 1 : -1)
    {
      GArray *layer = g_ptr_array_index (layers, li);
      for (guint k = 0; k < layer->len; k++)
        {
          vertex *x = &v[g_array_index (layer, int, k)];
          GArray *nb = down ? x->pred : x->succ;
          if (nb->len == 0)
            continue;
          double sum = 0;
          for (guint j = 0; j < nb->len; j++)
            sum += v[g_array_index (nb, int, j)].order;
          x->order = sum / nb->len;
        }
      g_array_sort_with_data (layer, cmp_by_order, v);
      for (guint k = 0; k < layer->len; k++)
        v[g_array_index (layer, int, k)].order = k;
    }
}

void
twb_document_compute_layout (TwbDocument *doc, double *xs, double *ys)
{
  tw_graph *g = doc->model->graph;
  int n = tw_graph_n_nodes (g);
  if (n <= 0)
    return;

  g_autoptr (GArray) order = NULL;
  if (!tw_graph_topo_order (g, &order, NULL))
    {
      /* A cycle: lay out in file order, edges from later nodes ignored. */
      order = g_array_sized_new (FALSE, FALSE, sizeof (int), n);
      for (int i = 0; i < n; i++)
        g_array_append_val (order, i);
    }
  g_autofree int *rank = g_new (int, n);
  for (int k = 0; k < n; k++)
    rank[g_array_index (order, int, k)] = k;

  GArray *verts = g_array_new (FALSE, TRUE, sizeof (vertex));
  g_array_set_size (verts, n);
  for (int i = 0; i < n; i++)
    {
      vertex *x = &g_array_index (verts, vertex, i);
      node_box (tw_graph_node (g, i), &x->w, &x->h);
      x->pred = g_array_new (FALSE, FALSE, sizeof (int));
      x->succ = g_array_new (FALSE, FALSE, sizeof (int));
    }
  /* Longest-path layers, in topological order. */
  for (int k = 0; k < n; k++)
    {
      int i = g_array_index (order, int, k);
      tw_node *nd = tw_graph_node (g, i);
      int layer = 0;
      for (int p = 0; p < nd->n_inputs; p++)
        {
          tw_port pt = tw_graph_resolve (g, nd->inputs[p]);
          if (pt.node >= 0 && rank[pt.node] < k)
            layer = MAX (layer, g_array_index (verts, vertex, pt.node).layer + 1);
        }
      g_array_index (verts, vertex, i).layer = layer;
    }
  /* Edges, with dummies across skipped layers. */
  for (int i = 0; i < n; i++)
    {
      tw_node *nd = tw_graph_node (g, i);
      for (int p = 0; p < nd->n_inputs; p++)
        {
          tw_port pt = tw_graph_resolve (g, nd->inputs[p]);
          if (pt.node < 0 || rank[pt.node] >= rank[i])
            continue;
          int prev = pt.node;
          int to_layer = g_array_index (verts, vertex, i).layer;
          for (int l = g_array_index (verts, vertex, pt.node).layer + 1; l < to_layer; l++)
            {
              vertex d = { l, 0, 0, DUMMY_HEIGHT, g_array_new (FALSE, FALSE, sizeof (int)),
                           g_array_new (FALSE, FALSE, sizeof (int)) };
              g_array_append_val (verts, d);
              int di = (int) verts->len - 1;
              g_array_append_val (g_array_index (verts, vertex, prev).succ, di);
              g_array_append_val (g_array_index (verts, vertex, di).pred, prev);
              prev = di;
            }
          g_array_append_val (g_array_index (verts, vertex, prev).succ, i);
          g_array_append_val (g_array_index (verts, vertex, i).pred, prev);
        }
    }
  vertex *v = (vertex *) verts->data;
  int nv = (int) verts->len;
  int n_layers = 0;
  for (int i = 0; i < nv; i++)
    n_layers = MAX (n_layers, v[i].layer + 1);
  g_autoptr (GPtrArray) layers = g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
  for (int l = 0; l < n_layers; l++)
    g_ptr_array_add (layers, g_array_new (FALSE, FALSE, sizeof (int)));
  /* Initial order: nodes in topological order, dummies after their source. */
  for (int k = 0; k < n; k++)
    {
      int i = g_array_index (order, int, k);
      g_array_append_val (g_ptr_array_index (layers, v[i].layer), i);
    }
  for (int i = n; i < nv; i++)
    g_array_append_val (g_ptr_array_index (layers, v[i].layer), i);
  for (int l = 0; l < n_layers; l++)
    {
      GArray *layer = g_ptr_array_index (layers, l);
      for (guint k = 0; k < layer->len; k++)
        v[g_array_index (layer, int, k)].order = k;
    }
  for (int s = 0; s < SWEEPS; s++)
    {
      sweep (v, layers, TRUE);
      sweep (v, layers, FALSE);
    }

  /* Coordinates. */
  g_autofree double *vx = g_new0 (double, nv);
  g_autofree double *vy = g_new0 (double, nv);
  double x = 40.0;
  for (int l = 0; l < n_layers; l++)
    {
      GArray *layer = g_ptr_array_index (layers, l);
      double maxw = 0, bottom = -G_MAXDOUBLE;
      for (guint k = 0; k < layer->len; k++)
        {
          int i = g_array_index (layer, int, k);
          maxw = MAX (maxw, v[i].w);
          /* Centre on the predecessors where there is room. */
          double want = 40.0;
          if (v[i].pred->len > 0)
            {
              double sum = 0;
              for (guint j = 0; j < v[i].pred->len; j++)
                {
                  int p = g_array_index (v[i].pred, int, j);
                  sum += vy[p] + v[p].h / 2;
                }
              want = sum / v[i].pred->len - v[i].h / 2;
            }
          double y = bottom == -G_MAXDOUBLE ? want : MAX (want, bottom + ROW_GAP);
          vx[i] = x;
          vy[i] = y;
          bottom = y + v[i].h;
        }
      x += maxw + LAYER_GAP;
    }
  double min_y = G_MAXDOUBLE;
  for (int i = 0; i < nv; i++)
    min_y = MIN (min_y, vy[i]);
  for (int i = 0; i < n; i++)
    {
      xs[i] = vx[i];
      ys[i] = vy[i] - min_y + 40.0;
    }
  for (int i = 0; i < nv; i++)
    {
      g_array_unref (v[i].pred);
      g_array_unref (v[i].succ);
    }
  g_array_unref (verts);
}

void
twb_document_auto_layout (TwbDocument *doc)
{
  g_return_if_fail (TWB_IS_DOCUMENT (doc));
  tw_graph *g = doc->model->graph;
  int n = tw_graph_n_nodes (g);
  if (n <= 0)
    return;
  g_autofree double *xs = g_new (double, n);
  g_autofree double *ys = g_new (double, n);
  twb_document_compute_layout (doc, xs, ys);
  twb_document_edit_begin (doc, "Arrange");
  for (int i = 0; i < n; i++)
    {
      tw_node *nd = tw_graph_node (g, i);
      if (!nd->has_pos || nd->x != xs[i] || nd->y != ys[i])
        twb_document_prim_pos (doc, i, xs[i], ys[i]);
    }
  twb_document_edit_end (doc);
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
      node_box (nd, &b.w, &b.h);
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
  node_box (nd, &w, NULL);
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
