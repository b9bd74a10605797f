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
/* Between wrapped rows: the edge from one row's end to the next row's start
 * runs here, 14 below the boxes, with its label (16 high) on it. */
#define WRAP_GAP 64.0
#define MAX_ROWS 12
/* The canvas a fitted layout aims at, see wrap_rows. */
#define FIT_W 700.0
#define FIT_H 470.0

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
  int pos;             /* place in the layer before this sweep: breaks ties */
  double w, h;
  GArray *pred, *succ; /* of int: vertex indices (nodes first, then dummies) */
} vertex;

static int
cmp_by_order (gconstpointer a, gconstpointer b, gpointer user)
{
  const vertex *v = user;
  const vertex *p = &v[*(const int *) a], *q = &v[*(const int *) b];
  if (p->order != q->order)
    return p->order < q->order ? -1 : 1;
  return p->pos != q->pos ? p->pos - q->pos : *(const int *) a - *(const int *) b;
}

static void
sweep (vertex *v, GPtrArray *layers, gboolean down)
{
  int n_layers = (int) layers->len;
  for (int li = down ? 1 : n_layers - 2; down ? li < n_layers : li >= 0; li += down ? 1 : -1)
    {
      GArray *layer = g_ptr_array_index (layers, li);
      for (guint k = 0; k < layer->len; k++)
        v[g_array_index (layer, int, k)].pos = (int) k;
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

/* Which row each layer goes on.  A long chain on one row fits the window
 * at a zoom where the canvas draws no labels (TWB_RENDER_TEXT_SCALE); so
 * the layers are cut into rows of about equal width, as many as give the
 * largest zoom at which the graph fits a FIT_W × FIT_H canvas (the canvas
 * left of the minimap in a 1280 × 800 window with the default panels; the
 * fit keeps a 40-unit margin on each side and never zooms beyond 100 %).
 * The fewest rows that come within 10 % of that zoom win: rows are harder
 * to follow than one line.  Caller frees the result. */
static int *
wrap_rows (int n_layers, const double *w, const double *top, const double *bottom)
{
  int *best = g_new0 (int, MAX (n_layers, 1));
  int *rows = g_new0 (int, MAX (n_layers, 1));
  double total = 0;
  for (int l = 0; l < n_layers; l++)
    total += w[l] + (l > 0 ? LAYER_GAP : 0);
  double scales[MAX_ROWS + 1] = { 0 };
  int max_rows = MIN (n_layers, MAX_ROWS);
  for (int pass = 0; pass < 2; pass++)
    {
      double best_scale = 0;
      for (int r = 1; r <= max_rows; r++)
        if (scales[r] > best_scale)
          best_scale = scales[r];
      for (int r = 1; r <= max_rows; r++)
        {
          /* Greedy cut: a new row when the layer's middle would pass the
           * target width. */
          double target = total / r, x = 0, width = 0, height = 0;
          double row_top = G_MAXDOUBLE, row_bottom = -G_MAXDOUBLE;
          int row = 0;
          for (int l = 0; l < n_layers; l++)
            {
              if (x > 0 && x + w[l] / 2 > target && row + 1 < r)
                {
                  height += MAX (row_bottom - row_top, 0) + WRAP_GAP;
                  row_top = G_MAXDOUBLE;
                  row_bottom = -G_MAXDOUBLE;
                  row++;
                  x = 0;
                }
              x += w[l];
              width = MAX (width, x);
              x += LAYER_GAP;
              if (top[l] <= bottom[l])
                {
                  row_top = MIN (row_top, top[l]);
                  row_bottom = MAX (row_bottom, bottom[l]);
                }
              rows[l] = row;
            }
          height += MAX (row_bottom - row_top, 0);
          double scale = MIN ((FIT_W - 80) / MAX (width, 1), (FIT_H - 80) / MAX (height, 1));
          scales[r] = MIN (scale, 1.0);
          if (pass == 1 && scales[r] >= 0.9 * best_scale)
            {
              memcpy (best, rows, sizeof (int) * n_layers);
              break;
            }
        }
    }
  g_free (rows);
  return best;
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
  /* A source (an input) goes in the layer just before its first consumer,
   * not in layer 0: the label input sits beside the logits it meets at the
   * loss, not at the far start of the graph (or another row). */
  g_autofree int *first_use = g_new (int, n);
  for (int i = 0; i < n; i++)
    first_use[i] = G_MAXINT;
  for (int i = 0; i < n; i++)
    {
      tw_node *nd = tw_graph_node (g, i);
      for (int p = 0; p < nd->n_inputs; p++)
        {
          tw_port pt = tw_graph_resolve (g, nd->inputs[p]);
          if (pt.node >= 0 && rank[pt.node] < rank[i])
            first_use[pt.node] = MIN (first_use[pt.node], g_array_index (verts, vertex, i).layer);
        }
    }
  for (int i = 0; i < n; i++)
    {
      tw_node *nd = tw_graph_node (g, i);
      gboolean source = TRUE;
      for (int p = 0; p < nd->n_inputs && source; p++)
        source = tw_graph_resolve (g, nd->inputs[p]).node < 0;
      if (source && first_use[i] != G_MAXINT && first_use[i] > 1)
        g_array_index (verts, vertex, i).layer = first_use[i] - 1;
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
              vertex d = { l, 0, 0, 0, DUMMY_HEIGHT, g_array_new (FALSE, FALSE, sizeof (int)),
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
  /* Initial order: nodes in topological order, inputs moved beside their
   * consumer after the layer's own nodes, dummies after their source. */
  for (int pass = 0; pass < 2; pass++)
    for (int k = 0; k < n; k++)
      {
        int i = g_array_index (order, int, k);
        gboolean moved = v[i].layer > 0 && v[i].pred->len == 0;
        if (moved == (pass == 1))
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

  /* Coordinates: y within the layers as if on one row; then the layers are
   * cut into rows (see wrap_rows) and each row is placed below the last. */
  g_autofree double *vx = g_new0 (double, nv);
  g_autofree double *vy = g_new0 (double, nv);
  g_autofree double *layer_w = g_new0 (double, n_layers);
  for (int l = 0; l < n_layers; l++)
    {
      GArray *layer = g_ptr_array_index (layers, l);
      double bottom = -G_MAXDOUBLE;
      for (guint k = 0; k < layer->len; k++)
        {
          int i = g_array_index (layer, int, k);
          layer_w[l] = MAX (layer_w[l], v[i].w);
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
          vy[i] = bottom == -G_MAXDOUBLE ? want : MAX (want, bottom + ROW_GAP);
          bottom = vy[i] + v[i].h;
        }
    }
  /* Each layer's extent over the real nodes (dummies are not drawn). */
  g_autofree double *layer_top = g_new (double, n_layers);
  g_autofree double *layer_bottom = g_new (double, n_layers);
  for (int l = 0; l < n_layers; l++)
    {
      layer_top[l] = G_MAXDOUBLE;
      layer_bottom[l] = -G_MAXDOUBLE;
    }
  for (int i = 0; i < n; i++)
    {
      layer_top[v[i].layer] = MIN (layer_top[v[i].layer], vy[i]);
      layer_bottom[v[i].layer] = MAX (layer_bottom[v[i].layer], vy[i] + v[i].h);
    }
  g_autofree int *row_of = wrap_rows (n_layers, layer_w, layer_top, layer_bottom);
  double row_y = 40.0;
  for (int l = 0; l < n_layers;)
    {
      int end = l;
      double top = G_MAXDOUBLE, bottom = -G_MAXDOUBLE;
      while (end < n_layers && row_of[end] == row_of[l])
        {
          top = MIN (top, layer_top[end]);
          bottom = MAX (bottom, layer_bottom[end]);
          end++;
        }
      if (top == G_MAXDOUBLE)
        top = bottom = 0;
      double x = 40.0;
      for (int k = l; k < end; k++)
        {
          GArray *layer = g_ptr_array_index (layers, k);
          for (guint j = 0; j < layer->len; j++)
            {
              int i = g_array_index (layer, int, j);
              vx[i] = x;
              vy[i] = vy[i] - top + row_y;
            }
          x += layer_w[k] + LAYER_GAP;
        }
      row_y += bottom - top + WRAP_GAP;
      l = end;
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
