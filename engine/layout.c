/* layout.c — the compound layered layout (see layout.h).
 *
 * Each container (the graph itself, and every block) is laid out on its
 * own, innermost first: its items are its own nodes and the blocks right
 * inside it, each a box (a node's, a collapsed block's, or an expanded
 * block's frame around its finished contents).  An edge between two
 * nodes counts in the one container holding both, between the items there
 * that hold each end.  Within a container, Sugiyama simplified: layers by
 * longest path; edges spanning several layers get a dummy in each layer
 * they cross; nodes ordered by the barycentre of their neighbours in the
 * layer before (down sweeps) and after (up sweeps), a few times over; then
 * layers go left to right, each (widest box + LAYER_GAP) after the last,
 * boxes top to bottom at their predecessors' height where there is room,
 * ROW_GAP apart at least.  Layers are then cut into rows (wrap_rows).
 * Boxes never overlap and, in a DAG, every edge within a row runs left to
 * right. */
#define G_LOG_DOMAIN "tw-layout"

#include "engine/layout-private.h"

#include <math.h>
#include <string.h>

/* Spacing from the brief that fixed the editor's look: a gap as wide as a
 * port label between layers, room for an edge label between boxes of a
 * layer. */
#define LAYER_GAP 80.0
#define ROW_GAP 40.0
#define DUMMY_HEIGHT 16.0
#define SWEEPS 4
/* Between wrapped rows: the edge from one row's end to the next row's start
 * runs here, 14 below the boxes, with its label (16 high) on it. */
#define WRAP_GAP 64.0
/* Where the picture starts: the editor's grid origin plus two grid steps. */
#define ORIGIN 40.0
/* Rows tried for one container: past 64 a row holds one layer of a
 * 1,000-layer chain at 5 % zoom, the canvas's floor. */
#define MAX_ROWS 64
/* The fit margin on each side of the canvas (graph_editor's fit). */
#define FIT_MARGIN 40.0

tw_layout_block *
tw_layout_block_new (const char *name, const int *members, int n_members, gboolean collapsed)
{
  tw_layout_block *b = g_new0 (tw_layout_block, 1);
  b->name = g_strdup (name);
  b->members = g_memdup2 (members, sizeof (int) * MAX (n_members, 0));
  b->n_members = MAX (n_members, 0);
  b->collapsed = collapsed;
  return b;
}

void
tw_layout_block_free (tw_layout_block *b)
{
  if (b == NULL)
    return;
  g_free (b->name);
  g_free (b->members);
  g_free (b);
}

int
tw_layout_node_inputs (const tw_node *n)
{
  if (n->op == NULL)
    return n->n_inputs;
  if (n->op->max_inputs >= 0)
    return MAX (n->op->max_inputs, n->n_inputs);
  return MAX (n->n_inputs + 1, n->op->min_inputs);
}

int
tw_layout_node_outputs (const tw_node *n)
{
  if (n->n_outputs > 0)
    return n->n_outputs;
  if (n->op && n->op->n_outputs > 0)
    return n->op->n_outputs;
  return 1;
}

void
tw_layout_node_size (const tw_node *n, double *width, double *height)
{
  /* About 7 px a character at the canvas' 11 pt label font, plus padding. */
  double chars = (double) (g_utf8_strlen (n->id, -1) + g_utf8_strlen (n->op_name, -1));
  int rows = MAX (1, MAX (tw_layout_node_inputs (n), tw_layout_node_outputs (n)));
  if (width)
    *width = CLAMP (40.0 + 7.0 * chars, 140.0, 240.0);
  if (height)
    *height = 56.0 + 14.0 * (rows - 1);
}

void
tw_layout_block_size (const char *name, double *width, double *height)
{
  /* The header's 13-unit bold type is about 8.5 units a character, and 200
   * holds a summary of three ops at the smallest text size ("conv2d ×3 ·
   * relu ×3 · add" at 0.5); 72 tall holds the header and two lines of
   * 10.5-unit text. */
  double chars = (double) g_utf8_strlen (name ? name : "", -1);
  if (width)
    *width = CLAMP (48.0 + 8.5 * chars, 200.0, 280.0);
  if (height)
    *height = 72.0;
}

/* ---- Fit ------------------------------------------------------------------- */

static double
fit_area (double aw, double ah, double width, double height)
{
  double s = MIN ((aw - 2 * FIT_MARGIN) / MAX (width, 1), (ah - 2 * FIT_MARGIN) / MAX (height, 1));
  /* 5 %: the canvas's lowest zoom; 100 %: small graphs stay at their size. */
  return CLAMP (s, 0.05, 1.0);
}

/* Whether any of the n boxes (x, y, w, h), drawn at zoom s with the centre
 * of their extent (ex, ey) at view pixel (cx, cy), comes within FIT_MARGIN
 * of the minimap. */
static gboolean
boxes_meet_map (const tw_layout_view *v, const double *boxes, int n, double ex, double ey, double s,
                double cx, double cy)
{
  for (int k = 0; k < n; k++)
    {
      const double *b = &boxes[4 * k];
      double x0 = cx + (b[0] - ex) * s, y0 = cy + (b[1] - ey) * s;
      double x1 = x0 + b[2] * s, y1 = y0 + b[3] * s;
      if (x0 < v->map_x + v->map_w + FIT_MARGIN && x1 + FIT_MARGIN > v->map_x &&
          y0 < v->map_y + v->map_h + FIT_MARGIN && y1 + FIT_MARGIN > v->map_y)
        return TRUE;
    }
  return FALSE;
}

double
tw_layout_fit_boxes (const tw_layout_view *v, const double *boxes, int n, double *cx, double *cy)
{
  double bx0 = G_MAXDOUBLE, by0 = G_MAXDOUBLE, bx1 = -G_MAXDOUBLE, by1 = -G_MAXDOUBLE;
  for (int k = 0; k < n; k++)
    {
      const double *b = &boxes[4 * k];
      bx0 = MIN (bx0, b[0]);
      by0 = MIN (by0, b[1]);
      bx1 = MAX (bx1, b[0] + b[2]);
      by1 = MAX (by1, b[1] + b[3]);
    }
  if (n <= 0)
    bx0 = by0 = bx1 = by1 = 0;
  double width = bx1 - bx0, height = by1 - by0, ex = bx0 + width / 2, ey = by0 + height / 2;
  double s = fit_area (v->width, v->height, width, height);
  double x = v->width / 2, y = v->height / 2;
  if (v->map_w > 0 && v->map_h > 0 && boxes_meet_map (v, boxes, n, ex, ey, s, x, y))
    {
      /* The better of the strip left of the minimap and the one above it;
       * or the whole canvas at a zoom between that and the full one where
       * the boxes still miss the minimap (a picture of rows is often empty
       * in its bottom right corner).  Boxes move away from the centre as
       * the zoom grows: the largest such zoom by bisection. */
      double sl = fit_area (MAX (v->map_x, 1), v->height, width, height);
      double sa = fit_area (v->width, MAX (v->map_y, 1), width, height);
      double lo = MAX (sl, sa), hi = s;
      gboolean whole = FALSE;
      for (int it = 0; it < 30 && hi - lo > 1e-4; it++)
        {
          double mid = (lo + hi) / 2;
          if (boxes_meet_map (v, boxes, n, ex, ey, mid, x, y))
            hi = mid;
          else
            lo = mid, whole = TRUE;
        }
      s = lo;
      if (!whole && sl >= sa)
        x = MAX (v->map_x, 1) / 2;
      else if (!whole)
        y = MAX (v->map_y, 1) / 2;
    }
  if (cx)
    *cx = x;
  if (cy)
    *cy = y;
  return s;
}

double
tw_layout_fit (const tw_layout_view *v, double width, double height, double *cx, double *cy)
{
  const double box[4] = { 0, 0, width, height };
  return tw_layout_fit_boxes (v, box, 1, cx, cy);
}

/* ---- One container --------------------------------------------------------- */

typedef struct
{
  int layer;
  double order;          /* position key inside the layer */
  int pos;               /* place in the layer before this sweep: breaks ties */
  double w, h;
  GArray *pred, *succ;   /* of int: vertex indices (items first, then dummies) */
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

/* How the layers of a container are cut into rows. */
typedef struct
{
  const tw_layout_view *fit; /* the graph itself: the rows that fit this view best */
  double max_width;          /* a block: the fewest rows no wider than this */
} wrap_policy;

/* One way of cutting: a new row when a layer's middle would pass target;
 * fills rows (layer → row), each row's box (x, y, w, h) into boxes (room
 * for r; may be NULL) and the extent; returns the number of rows. */
static int
cut_rows (int n_layers, const double *w, const double *top, const double *bottom, int r,
          double total, int *rows, double *boxes, double *width_out, double *height_out)
{
  double target = total / r, x = 0, width = 0, height = 0;
  double row_top = G_MAXDOUBLE, row_bottom = -G_MAXDOUBLE, row_width = 0;
  int row = 0;
  for (int l = 0; l <= n_layers; l++)
    {
      gboolean end = l == n_layers || (x > 0 && x + w[l] / 2 > target && row + 1 < r);
      if (end && boxes)
        {
          double *b = &boxes[4 * row];
          b[0] = 0;
          b[1] = height;
          b[2] = row_width;
          b[3] = MAX (row_bottom - row_top, 0);
        }
      if (l == n_layers)
        break;
      if (end)
        {
          height += MAX (row_bottom - row_top, 0) + WRAP_GAP;
          row_top = G_MAXDOUBLE;
          row_bottom = -G_MAXDOUBLE;
          row++;
          x = 0;
        }
      x += w[l];
      row_width = x;
      width = MAX (width, x);
      x += LAYER_GAP;
      if (top[l] <= bottom[l])
        {
          row_top = MIN (row_top, top[l]);
          row_bottom = MAX (row_bottom, bottom[l]);
        }
      rows[l] = row;
    }
  *width_out = width;
  *height_out = height + MAX (row_bottom - row_top, 0);
  return row + 1;
}

/* Which row each layer goes on.  For the graph: a long chain on one row
 * fits the window at a zoom where the canvas draws no labels, so the layers
 * are cut into rows of about equal width, as many as give the largest zoom
 * at which the graph fits the view; the fewest rows that come within 10 %
 * of that zoom win (rows are harder to follow than one line).  For a block:
 * the fewest rows no wider than the policy's width.  Caller frees. */
static int *
wrap_rows (int n_layers, const double *w, const double *top, const double *bottom,
           const wrap_policy *policy)
{
  int *best = g_new0 (int, MAX (n_layers, 1));
  int *rows = g_new0 (int, MAX (n_layers, 1));
  double total = 0;
  for (int l = 0; l < n_layers; l++)
    total += w[l] + (l > 0 ? LAYER_GAP : 0);
  int max_rows = MIN (n_layers, MAX_ROWS);
  double scales[MAX_ROWS + 1] = { 0 };
  double best_scale = 0, boxes[4 * MAX_ROWS];
  for (int pass = 0; pass < 2; pass++)
    for (int r = 1; r <= max_rows; r++)
      {
        double width, height;
        int made = cut_rows (n_layers, w, top, bottom, r, total, rows, boxes, &width, &height);
        if (policy->fit == NULL)
          {
            /* Within the width, or as narrow as it gets. */
            if (width <= policy->max_width || r == max_rows)
              {
                memcpy (best, rows, sizeof (int) * n_layers);
                break;
              }
            continue;
          }
        if (pass == 0)
          {
            /* The rows' boxes: a short last row leaves the corner by the
             * minimap free. */
            scales[r] = tw_layout_fit_boxes (policy->fit, boxes, made, NULL, NULL);
            best_scale = MAX (best_scale, scales[r]);
          }
        else if (scales[r] >= 0.9 * best_scale)
          {
            memcpy (best, rows, sizeof (int) * n_layers);
            break;
          }
      }
  g_free (rows);
  return best;
}

/* Min-heap of (key, item) by key, for Kahn's algorithm in key order. */
typedef struct
{
  double key;
  int item;
} heap_entry;

static void
heap_push (GArray *h, double key, int item)
{
  heap_entry e = { key, item };
  g_array_append_val (h, e);
  heap_entry *a = (heap_entry *) h->data;
  for (guint i = h->len - 1; i > 0;)
    {
      guint p = (i - 1) / 2;
      if (a[p].key <= a[i].key)
        break;
      heap_entry t = a[p];
      a[p] = a[i];
      a[i] = t;
      i = p;
    }
}

static int
heap_pop (GArray *h)
{
  heap_entry *a = (heap_entry *) h->data;
  int top = a[0].item;
  a[0] = a[h->len - 1];
  g_array_set_size (h, h->len - 1);
  a = (heap_entry *) h->data;
  for (guint i = 0;;)
    {
      guint l = 2 * i + 1, r = l + 1, m = i;
      if (l < h->len && a[l].key < a[m].key)
        m = l;
      if (r < h->len && a[r].key < a[m].key)
        m = r;
      if (m == i)
        break;
      heap_entry t = a[m];
      a[m] = a[i];
      a[i] = t;
      i = m;
    }
  return top;
}

static int
cmp_edge (gconstpointer a, gconstpointer b)
{
  const int *x = a, *y = b;
  return x[0] != y[0] ? x[0] - y[0] : x[1] - y[1];
}

static int
cmp_by_key (gconstpointer a, gconstpointer b, gpointer user)
{
  const double *key = user;
  double x = key[*(const int *) a], y = key[*(const int *) b];
  return x < y ? -1 : x > y ? 1 : *(const int *) a - *(const int *) b;
}

/* The items' order: topological over the edges (sorted by source), ties
 * (and, in a cycle, the way out) by key, so that it follows the graph's
 * own order.  Fills rank. */
static void
item_order (int n, const double *key, GArray *edges, int *rank)
{
  g_autofree int *indeg = g_new0 (int, MAX (n, 1));
  g_autofree int *start = g_new0 (int, n + 1);
  for (guint e = 0; e < edges->len; e++)
    {
      const int *ft = &g_array_index (edges, int, 2 * e);
      start[ft[0] + 1]++;
      indeg[ft[1]]++;
    }
  for (int i = 0; i < n; i++)
    start[i + 1] += start[i];
  g_autoptr (GArray) heap = g_array_new (FALSE, FALSE, sizeof (heap_entry));
  g_autofree gboolean *done = g_new0 (gboolean, MAX (n, 1));
  for (int i = 0; i < n; i++)
    if (indeg[i] == 0)
      heap_push (heap, key[i], i);
  int next = 0, scan = 0;
  g_autofree int *by_key = NULL;
  while (next < n)
    {
      if (heap->len == 0)
        {
          /* A cycle: the remaining item first in key order goes next. */
          if (by_key == NULL)
            {
              by_key = g_new (int, n);
              for (int i = 0; i < n; i++)
                by_key[i] = i;
              g_qsort_with_data (by_key, n, sizeof (int), cmp_by_key, (gpointer) key);
            }
          while (done[by_key[scan]])
            scan++;
          heap_push (heap, key[by_key[scan]], by_key[scan]);
        }
      int i = heap_pop (heap);
      if (done[i])
        continue;
      done[i] = TRUE;
      rank[i] = next++;
      for (int k = start[i]; k < start[i + 1]; k++)
        {
          int t = g_array_index (edges, int, 2 * k + 1);
          if (!done[t] && --indeg[t] == 0)
            heap_push (heap, key[t], t);
        }
    }
}

/* Lays out n items of sizes w × h with edges (int[2]: item indices) into
 * x, y (top-left corners, the extent's top left at 0, 0); the extent in
 * *width, *height, the width the layers would take in one row in *line. */
static void
layout_items (int n, const double *w, const double *h, const double *key, GArray *edges,
              const wrap_policy *policy, double *x, double *y, double *width, double *height,
              double *line)
{
  *width = *height = *line = 0;
  if (n == 0)
    return;
  /* One edge per pair of items; sorted by source for item_order. */
  g_array_sort (edges, cmp_edge);
  guint kept = 0;
  for (guint e = 0; e < edges->len; e++)
    {
      int *ft = &g_array_index (edges, int, 2 * e);
      if (ft[0] == ft[1])
        continue;
      const int *last = kept > 0 ? &g_array_index (edges, int, 2 * (kept - 1)) : NULL;
      if (last && last[0] == ft[0] && last[1] == ft[1])
        continue;
      memmove (&g_array_index (edges, int, 2 * kept), ft, 2 * sizeof (int));
      kept++;
    }
  g_array_set_size (edges, kept);
  g_autofree int *rank = g_new (int, n);
  item_order (n, key, edges, rank);
  g_autofree int *order = g_new (int, n);
  for (int i = 0; i < n; i++)
    order[rank[i]] = i;

  GArray *verts = g_array_new (FALSE, TRUE, sizeof (vertex));
  g_array_set_size (verts, n);
  for (int i = 0; i < n; i++)
    {
      vertex *v = &g_array_index (verts, vertex, i);
      v->w = w[i];
      v->h = h[i];
      v->pred = g_array_new (FALSE, FALSE, sizeof (int));
      v->succ = g_array_new (FALSE, FALSE, sizeof (int));
    }
  /* Forward edges only (a cycle's closing edge is left out). */
  for (guint e = 0; e < edges->len; e++)
    {
      int a = g_array_index (edges, int, 2 * e), b = g_array_index (edges, int, 2 * e + 1);
      if (rank[a] >= rank[b])
        continue;
      g_array_append_val (g_array_index (verts, vertex, a).succ, b);
      g_array_append_val (g_array_index (verts, vertex, b).pred, a);
    }
  /* Longest-path layers, in order. */
  for (int k = 0; k < n; k++)
    {
      vertex *v = &g_array_index (verts, vertex, order[k]);
      for (guint j = 0; j < v->pred->len; j++)
        {
          const vertex *p = &g_array_index (verts, vertex, g_array_index (v->pred, int, j));
          v->layer = MAX (v->layer, p->layer + 1);
        }
    }
  /* An item nothing inside feeds (an input) goes in the layer just before
   * its first consumer, not in layer 0: the label input sits beside the
   * logits it meets at the loss, a ResNet's downsample beside the conv it
   * is added to. */
  for (int i = 0; i < n; i++)
    {
      vertex *v = &g_array_index (verts, vertex, i);
      if (v->pred->len > 0 || v->succ->len == 0)
        continue;
      int first = G_MAXINT;
      for (guint j = 0; j < v->succ->len; j++)
        first = MIN (first, g_array_index (verts, vertex, g_array_index (v->succ, int, j)).layer);
      if (first > 1)
        v->layer = first - 1;
    }
  /* Dummies across skipped layers: the edges are rebuilt through them. */
  for (int i = 0; i < n; i++)
    g_array_set_size (g_array_index (verts, vertex, i).pred, 0);
  for (int i = 0; i < n; i++)
    {
      g_autoptr (GArray) succ = g_array_copy (g_array_index (verts, vertex, i).succ);
      g_array_set_size (g_array_index (verts, vertex, i).succ, 0);
      for (guint j = 0; j < succ->len; j++)
        {
          int t = g_array_index (succ, int, j), prev = i;
          int to_layer = g_array_index (verts, vertex, t).layer;
          for (int l = g_array_index (verts, vertex, i).layer + 1; l < to_layer; l++)
            {
              vertex d = { l, 0, 0, 0, DUMMY_HEIGHT, g_array_new (FALSE, FALSE, sizeof (int)),
                           g_array_new (FALSE, FALSE, sizeof (int)) };
              g_array_append_val (verts, d);
              int di = (int) verts->len - 1;
              g_array_append_val (g_array_index (verts, vertex, prev).succ, di);
              g_array_append_val (g_array_index (verts, vertex, di).pred, prev);
              prev = di;
            }
          g_array_append_val (g_array_index (verts, vertex, prev).succ, t);
          g_array_append_val (g_array_index (verts, vertex, t).pred, prev);
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
  /* Initial order: items in order, inputs moved beside their consumer after
   * the layer's own items, dummies after their source. */
  for (int pass = 0; pass < 2; pass++)
    for (int k = 0; k < n; k++)
      {
        int i = order[k];
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
          double want = 0;
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
  /* Each layer's extent over the items (dummies are not drawn). */
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
  for (int l = 0; l < n_layers; l++)
    *line += layer_w[l] + (l > 0 ? LAYER_GAP : 0);
  g_autofree int *row_of = wrap_rows (n_layers, layer_w, layer_top, layer_bottom, policy);
  double row_y = 0;
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
      double lx = 0;
      for (int k = l; k < end; k++)
        {
          GArray *layer = g_ptr_array_index (layers, k);
          for (guint j = 0; j < layer->len; j++)
            {
              int i = g_array_index (layer, int, j);
              vx[i] = lx;
              vy[i] = vy[i] - top + row_y;
            }
          lx += layer_w[k] + LAYER_GAP;
        }
      row_y += bottom - top + WRAP_GAP;
      l = end;
    }
  /* Whole units: the file says 300, not 299.99999999999994 (the gaps are
   * 40 and more, so rounding never makes boxes touch). */
  double min_x = G_MAXDOUBLE, min_y = G_MAXDOUBLE, max_x = -G_MAXDOUBLE, max_y = -G_MAXDOUBLE;
  for (int i = 0; i < n; i++)
    {
      vx[i] = round (vx[i]);
      vy[i] = round (vy[i]);
      min_x = MIN (min_x, vx[i]);
      min_y = MIN (min_y, vy[i]);
      max_x = MAX (max_x, vx[i] + v[i].w);
      max_y = MAX (max_y, vy[i] + v[i].h);
    }
  for (int i = 0; i < n; i++)
    {
      x[i] = vx[i] - min_x;
      y[i] = vy[i] - min_y;
    }
  *width = max_x - min_x;
  *height = max_y - min_y;
  for (int i = 0; i < nv; i++)
    {
      g_array_unref (v[i].pred);
      g_array_unref (v[i].succ);
    }
  g_array_unref (verts);
}

/* ---- Blocks inside blocks -------------------------------------------------- */

/* The nesting of the blocks that nest: blocks sorted outer first (by size,
 * then as given), each one's parent (-1: the graph), each node's innermost
 * block (-1: none). */
typedef struct
{
  int nb;
  int *block;     /* [nb]: index into the caller's array, outer first */
  int *parent;    /* [nb]: position in block[], or -1 */
  int *depth;     /* [nb] */
  int *owner;     /* [n nodes]: position in block[], or -1 */
} nest;

static int
cmp_block_size (gconstpointer a, gconstpointer b, gpointer user)
{
  tw_layout_block *const *blocks = user;
  int x = *(const int *) a, y = *(const int *) b;
  if (blocks[x]->n_members != blocks[y]->n_members)
    return blocks[y]->n_members - blocks[x]->n_members;
  return x - y;
}

static void
nest_init (nest *t, int n, tw_layout_block *const *blocks, int n_blocks)
{
  g_autofree int *sorted = g_new (int, MAX (n_blocks, 1));
  for (int i = 0; i < n_blocks; i++)
    sorted[i] = i;
  g_qsort_with_data (sorted, n_blocks, sizeof (int), cmp_block_size, (gpointer) blocks);
  t->block = g_new (int, MAX (n_blocks, 1));
  t->parent = g_new (int, MAX (n_blocks, 1));
  t->depth = g_new (int, MAX (n_blocks, 1));
  t->owner = g_new (int, MAX (n, 1));
  for (int i = 0; i < n; i++)
    t->owner[i] = -1;
  t->nb = 0;
  for (int k = 0; k < n_blocks; k++)
    {
      const tw_layout_block *b = blocks[sorted[k]];
      if (b->n_members == 0)
        continue;
      /* Inside one block (or none) of those placed so far, or left out. */
      gboolean ok = TRUE;
      int p = -2;
      for (int m = 0; m < b->n_members && ok; m++)
        {
          int i = b->members[m];
          ok = i >= 0 && i < n && (p == -2 || t->owner[i] == p);
          if (ok)
            p = t->owner[i];
        }
      if (!ok)
        continue;
      int me = t->nb++;
      t->block[me] = sorted[k];
      t->parent[me] = p;
      t->depth[me] = p < 0 ? 0 : t->depth[p] + 1;
      for (int m = 0; m < b->n_members; m++)
        t->owner[b->members[m]] = me;
    }
}

static void
nest_clear (nest *t)
{
  g_free (t->block);
  g_free (t->parent);
  g_free (t->depth);
  g_free (t->owner);
}

void
tw_layout_nesting (const tw_graph *g, tw_layout_block *const *blocks, int n_blocks, int *parent,
                   int *owner)
{
  g_return_if_fail (g != NULL);
  int n = tw_graph_n_nodes (g);
  nest t;
  nest_init (&t, n, blocks, blocks ? n_blocks : 0);
  for (int k = 0; parent && k < n_blocks; k++)
    parent[k] = -2;
  for (int b = 0; parent && b < t.nb; b++)
    parent[t.block[b]] = t.parent[b] < 0 ? -1 : t.block[t.parent[b]];
  for (int i = 0; owner && i < n; i++)
    owner[i] = t.owner[i] < 0 ? -1 : t.block[t.owner[i]];
  nest_clear (&t);
}

/* Items are nodes (0 … n-1) and nested blocks (n + position in block[]). */
typedef struct
{
  GArray *items;    /* of int: item ids */
  GArray *edges;    /* of int[2]: local indices, from and to */
  double width, height;
} container;

/* The compound layout with blocks' contents wrapping at inner_width (see
 * tw_layout_best); *need: the width under which some block's contents wrap
 * (0: none ever would); tops (of double, x y w h each; may be NULL): the
 * boxes and frames of the graph's own items. */
static void
compound_layout (const tw_graph *g, tw_layout_block *const *blocks, int n_blocks,
                 const tw_layout_view *view, double inner_width, double *xs, double *ys,
                 double *width, double *height, double *need, GArray *tops)
{
  *need = 0;
  int n = tw_graph_n_nodes (g);
  nest t;
  nest_init (&t, n, blocks, n_blocks);
  int n_items = n + t.nb;
  /* Containers: 0 is the graph, 1 + k the block at position k. */
  container *c = g_new0 (container, t.nb + 1);
  for (int k = 0; k <= t.nb; k++)
    {
      c[k].items = g_array_new (FALSE, FALSE, sizeof (int));
      c[k].edges = g_array_new (FALSE, FALSE, 2 * sizeof (int));
    }
  g_autofree int *local = g_new (int, MAX (n_items, 1));
  for (int i = 0; i < n; i++)
    {
      int k = t.owner[i] + 1;
      local[i] = (int) c[k].items->len;
      g_array_append_val (c[k].items, i);
    }
  for (int b = 0; b < t.nb; b++)
    {
      int k = t.parent[b] + 1, item = n + b;
      local[item] = (int) c[k].items->len;
      g_array_append_val (c[k].items, item);
    }
  /* Order keys: the graph's topological order (file order in a cycle),
   * each block at its first member. */
  g_autofree double *key = g_new (double, MAX (n_items, 1));
  g_autoptr (GArray) order = NULL;
  if (!tw_graph_topo_order (g, &order, NULL))
    {
      g_clear_pointer (&order, g_array_unref);
      order = g_array_sized_new (FALSE, FALSE, sizeof (int), n);
      for (int i = 0; i < n; i++)
        g_array_append_val (order, i);
    }
  for (int k = 0; k < n; k++)
    key[g_array_index (order, int, k)] = k;
  for (int b = 0; b < t.nb; b++)
    {
      const tw_layout_block *blk = blocks[t.block[b]];
      key[n + b] = G_MAXDOUBLE;
      for (int m = 0; m < blk->n_members; m++)
        key[n + b] = MIN (key[n + b], key[blk->members[m]]);
    }
  /* Each edge in the container holding both ends, between the items there
   * that hold them: up from both ends to the common container. */
  for (int i = 0; i < n; i++)
    {
      const tw_node *nd = tw_graph_node (g, i);
      for (int p = 0; p < nd->n_inputs; p++)
        {
          tw_port pt = tw_graph_resolve (g, nd->inputs[p]);
          if (pt.node < 0 || pt.node == i)
            continue;
          int ia = pt.node, ib = i, ca = t.owner[pt.node], cb = t.owner[i];
          while (ca != cb)
            {
              int da = ca < 0 ? -1 : t.depth[ca], db = cb < 0 ? -1 : t.depth[cb];
              if (da >= db)
                {
                  ia = n + ca;
                  ca = t.parent[ca];
                }
              if (db >= da)
                {
                  ib = n + cb;
                  cb = t.parent[cb];
                }
            }
          if (ia == ib)
            continue;
          int e[2] = { local[ia], local[ib] };
          g_array_append_vals (c[ca + 1].edges, e, 1);
        }
    }
  /* Innermost first (blocks sorted outer first: backwards), the graph last. */
  g_autofree double *iw = g_new (double, MAX (n_items, 1));
  g_autofree double *ih = g_new (double, MAX (n_items, 1));
  g_autofree double *rx = g_new0 (double, MAX (n_items, 1));   /* place in its container */
  g_autofree double *ry = g_new0 (double, MAX (n_items, 1));
  for (int i = 0; i < n; i++)
    tw_layout_node_size (tw_graph_node (g, i), &iw[i], &ih[i]);
  wrap_policy outer = { view, 0 };
  for (int k = t.nb; k >= 0; k--)
    {
      container *ct = &c[k];
      int m = (int) ct->items->len;
      /* A block of nodes only (a residual block) keeps up to 8 layers of
       * 180-wide boxes on one line (2,000 units): it reads as a line. */
      gboolean leaf = TRUE;
      for (int j = 0; j < m && leaf; j++)
        leaf = g_array_index (ct->items, int, j) < n;
      double line = 8 * 180.0 + 7 * LAYER_GAP;
      wrap_policy inner = { NULL, leaf ? MAX (inner_width, line) : inner_width };
      g_autofree double *w = g_new (double, MAX (m, 1));
      g_autofree double *h = g_new (double, MAX (m, 1));
      g_autofree double *kk = g_new (double, MAX (m, 1));
      g_autofree double *x = g_new (double, MAX (m, 1));
      g_autofree double *y = g_new (double, MAX (m, 1));
      for (int j = 0; j < m; j++)
        {
          int item = g_array_index (ct->items, int, j);
          w[j] = iw[item];
          h[j] = ih[item];
          kk[j] = key[item];
        }
      double one_row;
      layout_items (m, w, h, kk, ct->edges, k == 0 ? &outer : &inner, x, y, &ct->width,
                    &ct->height, &one_row);
      if (k > 0 && !blocks[t.block[k - 1]]->collapsed && (!leaf || one_row > line))
        *need = MAX (*need, one_row);
      for (int j = 0; j < m; j++)
        {
          int item = g_array_index (ct->items, int, j);
          rx[item] = x[j];
          ry[item] = y[j];
        }
      if (k == 0 && tops)
        {
          g_array_set_size (tops, 0);
          for (int j = 0; j < m; j++)
            {
              double b[4] = { x[j], y[j], w[j], h[j] };
              g_array_append_vals (tops, b, 4);
            }
        }
      if (k > 0)
        {
          tw_layout_block *blk = blocks[t.block[k - 1]];
          if (blk->collapsed)
            tw_layout_block_size (blk->name, &iw[n + k - 1], &ih[n + k - 1]);
          else
            {
              iw[n + k - 1] = ct->width + 2 * TW_LAYOUT_FRAME_PAD;
              ih[n + k - 1] = ct->height + TW_LAYOUT_FRAME_HEADER + TW_LAYOUT_FRAME_PAD;
            }
        }
    }
  *width = c[0].width;
  *height = c[0].height;
  /* Places, outer first: an item's container (a block's box or frame, or
   * the graph at ORIGIN) plus its place there; a collapsed block's members
   * where they will be when it opens. */
  g_autofree double *ax = g_new (double, MAX (n_items, 1));
  g_autofree double *ay = g_new (double, MAX (n_items, 1));
  for (int b = 0; b < t.nb; b++)
    {
      int p = t.parent[b], item = n + b;
      double ox = p < 0 ? ORIGIN : ax[n + p] + TW_LAYOUT_FRAME_PAD;
      double oy = p < 0 ? ORIGIN : ay[n + p] + TW_LAYOUT_FRAME_HEADER;
      ax[item] = ox + rx[item];
      ay[item] = oy + ry[item];
      tw_layout_block *blk = blocks[t.block[b]];
      blk->x = ax[item];
      blk->y = ay[item];
      blk->w = iw[item];
      blk->h = ih[item];
    }
  for (int i = 0; xs && i < n; i++)
    {
      int p = t.owner[i];
      xs[i] = (p < 0 ? ORIGIN : ax[n + p] + TW_LAYOUT_FRAME_PAD) + rx[i];
      ys[i] = (p < 0 ? ORIGIN : ay[n + p] + TW_LAYOUT_FRAME_HEADER) + ry[i];
    }
  for (int k = 0; k <= t.nb; k++)
    {
      g_array_unref (c[k].items);
      g_array_unref (c[k].edges);
    }
  g_free (c);
  nest_clear (&t);
}

/* Each block's box or frame around its members at xs, ys (placed:
 * has_pos of each node, or all when placed is NULL). */
static void
place_blocks_at (const tw_graph *g, const nest *t, tw_layout_block *const *blocks,
                 int n_blocks, const double *xs, const double *ys, const gboolean *placed)
{
  int n = tw_graph_n_nodes (g);
  for (int k = 0; k < n_blocks; k++)
    blocks[k]->x = blocks[k]->y = blocks[k]->w = blocks[k]->h = 0;
  /* The extent of each block's items, innermost first (sorted outer first:
   * backwards), then the box or frame around it. */
  g_autofree double *x0 = g_new (double, MAX (t->nb, 1));
  g_autofree double *y0 = g_new (double, MAX (t->nb, 1));
  g_autofree double *x1 = g_new (double, MAX (t->nb, 1));
  g_autofree double *y1 = g_new (double, MAX (t->nb, 1));
  for (int b = 0; b < t->nb; b++)
    {
      x0[b] = y0[b] = G_MAXDOUBLE;
      x1[b] = y1[b] = -G_MAXDOUBLE;
    }
  for (int i = 0; i < n; i++)
    {
      int b = t->owner[i];
      if (b < 0 || (placed && !placed[i]))
        continue;
      double w, h;
      tw_layout_node_size (tw_graph_node (g, i), &w, &h);
      x0[b] = MIN (x0[b], xs[i]);
      y0[b] = MIN (y0[b], ys[i]);
      x1[b] = MAX (x1[b], xs[i] + w);
      y1[b] = MAX (y1[b], ys[i] + h);
    }
  for (int b = t->nb - 1; b >= 0; b--)
    {
      tw_layout_block *blk = blocks[t->block[b]];
      if (x0[b] > x1[b])
        continue;   /* nothing placed inside */
      blk->x = x0[b] - TW_LAYOUT_FRAME_PAD;
      blk->y = y0[b] - TW_LAYOUT_FRAME_HEADER;
      if (blk->collapsed)
        tw_layout_block_size (blk->name, &blk->w, &blk->h);
      else
        {
          blk->w = x1[b] - x0[b] + 2 * TW_LAYOUT_FRAME_PAD;
          blk->h = y1[b] - y0[b] + TW_LAYOUT_FRAME_HEADER + TW_LAYOUT_FRAME_PAD;
        }
      int p = t->parent[b];
      if (p >= 0)
        {
          x0[p] = MIN (x0[p], blk->x);
          y0[p] = MIN (y0[p], blk->y);
          x1[p] = MAX (x1[p], blk->x + blk->w);
          y1[p] = MAX (y1[p], blk->y + blk->h);
        }
    }
}

void
tw_layout_place_blocks (const tw_graph *g, tw_layout_block *const *blocks, int n_blocks)
{
  g_return_if_fail (g != NULL);
  int n = tw_graph_n_nodes (g);
  n_blocks = blocks ? n_blocks : 0;
  nest t;
  nest_init (&t, n, blocks, n_blocks);
  g_autofree double *xs = g_new (double, MAX (n, 1));
  g_autofree double *ys = g_new (double, MAX (n, 1));
  g_autofree gboolean *placed = g_new (gboolean, MAX (n, 1));
  for (int i = 0; i < n; i++)
    {
      const tw_node *nd = tw_graph_node (g, i);
      xs[i] = nd->x;
      ys[i] = nd->y;
      placed[i] = nd->has_pos;
    }
  place_blocks_at (g, &t, blocks, n_blocks, xs, ys, placed);
  nest_clear (&t);
}

/* Free space around an opened frame: room for an edge and its label. */
#define ROOM_MARGIN 40.0

typedef struct
{
  double x0, y0, x1, y1;
} rect;

static gboolean
rects_meet (const rect *a, const rect *b, double m)
{
  return a->x0 < b->x1 + m && b->x0 < a->x1 + m && a->y0 < b->y1 + m && b->y0 < a->y1 + m;
}

void
tw_layout_make_room (const tw_graph *g, tw_layout_block *const *blocks, int n_blocks,
                     int opened, double *xs, double *ys)
{
  g_return_if_fail (g != NULL && opened >= 0 && opened < n_blocks);
  int n = tw_graph_n_nodes (g);
  nest t;
  nest_init (&t, n, blocks, n_blocks);
  int cur = -1;
  for (int b = 0; b < t.nb; b++)
    if (t.block[b] == opened)
      cur = b;
  /* Level by level: the items beside the frame (in the same container)
   * that it now meets move right, or down, whichever is less, together
   * with everything right of (below) them; then the container's frame has
   * grown, and the same happens one level up. */
  while (cur >= 0)
    {
      place_blocks_at (g, &t, blocks, n_blocks, xs, ys, NULL);
      const tw_layout_block *fb = blocks[t.block[cur]];
      rect f = { fb->x, fb->y, fb->x + fb->w, fb->y + fb->h };
      int p = t.parent[cur];
      /* The container's items: its nodes, then its blocks. */
      g_autoptr (GArray) items = g_array_new (FALSE, FALSE, sizeof (int));
      g_autoptr (GArray) boxes = g_array_new (FALSE, FALSE, sizeof (rect));
      for (int i = 0; i < n; i++)
        if (t.owner[i] == p)
          {
            double w, h;
            tw_layout_node_size (tw_graph_node (g, i), &w, &h);
            rect r = { xs[i], ys[i], xs[i] + w, ys[i] + h };
            g_array_append_val (items, i);
            g_array_append_val (boxes, r);
          }
      for (int b = 0; b < t.nb; b++)
        if (t.parent[b] == p && b != cur)
          {
            const tw_layout_block *blk = blocks[t.block[b]];
            rect r = { blk->x, blk->y, blk->x + blk->w, blk->y + blk->h };
            int item = n + b;
            g_array_append_val (items, item);
            g_array_append_val (boxes, r);
          }
      double min_x = G_MAXDOUBLE, min_y = G_MAXDOUBLE;
      for (guint k = 0; k < items->len; k++)
        {
          const rect *r = &g_array_index (boxes, rect, k);
          if (rects_meet (r, &f, ROOM_MARGIN))
            {
              min_x = MIN (min_x, r->x0);
              min_y = MIN (min_y, r->y0);
            }
        }
      if (min_x != G_MAXDOUBLE)
        {
          double dx = f.x1 + ROOM_MARGIN - min_x, dy = f.y1 + ROOM_MARGIN - min_y;
          gboolean right = dx <= dy;
          for (guint k = 0; k < items->len; k++)
            {
              const rect *r = &g_array_index (boxes, rect, k);
              if (right ? r->x0 < min_x : r->y0 < min_y)
                continue;
              int item = g_array_index (items, int, k);
              if (item < n)
                {
                  xs[item] += right ? dx : 0;
                  ys[item] += right ? 0 : dy;
                  continue;
                }
              const tw_layout_block *blk = blocks[t.block[item - n]];
              for (int m = 0; m < blk->n_members; m++)
                {
                  xs[blk->members[m]] += right ? dx : 0;
                  ys[blk->members[m]] += right ? 0 : dy;
                }
            }
        }
      cur = p;
    }
  nest_clear (&t);
}

/* The widths a block's contents may wrap at, as fractions of the view's
 * width at the reading zoom: the widest first (one long row is easiest to
 * follow), narrower ones where the frames they make fit the view better
 * (a frame is one item of the rows around it: it cannot be cut); and
 * where the best of those is bound by the view's height (the canvas is
 * wider than the picture's shape), wider ones: more columns, fewer rows. */
static const double inner_widths[] = { 1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4 };
static const double wider_widths[] = { 1.15, 1.3, 1.5, 1.75, 2.0 };

/* Whether a w × h picture's fit is bound by the view's height. */
static gboolean
height_bound (const tw_layout_view *view, double w, double h)
{
  return tw_layout_fit (view, w, h * 0.9, NULL, NULL) > tw_layout_fit (view, w, h, NULL, NULL);
}

/* The picture for the width of those that fits the view at the largest
 * zoom (the widest of equals). */
double
tw_layout_best (const tw_graph *g, tw_layout_block *const *blocks, int n_blocks,
                const tw_layout_view *view, double *xs, double *ys, double *width, double *height)
{
  double base = MAX (view->width - 2 * FIT_MARGIN, 400) / TW_LAYOUT_READ_ZOOM;
  double best = 0, need = 0, best_w = 0, best_h = 0, best_frac = 1.0, last_frac = 1.0;
  g_autoptr (GArray) tops = g_array_new (FALSE, FALSE, sizeof (double));
  /* Widths no block's contents would wrap at give the widest's picture:
   * only those under `need` are tried. */
  for (guint k = 0; k < G_N_ELEMENTS (inner_widths) + G_N_ELEMENTS (wider_widths); k++)
    {
      gboolean wider = k >= G_N_ELEMENTS (inner_widths);
      double frac = wider ? wider_widths[k - G_N_ELEMENTS (inner_widths)] : inner_widths[k];
      if (k > 0 && !wider && base * frac >= need)
        continue;
      if (wider)
        {
          /* Past the widest one-row block every width gives the same
           * picture; a picture bound by the width gets no better wider. */
          double prev = k == G_N_ELEMENTS (inner_widths)
                          ? 1.0
                          : wider_widths[k - G_N_ELEMENTS (inner_widths) - 1];
          if (need == 0 || base * prev >= need || !height_bound (view, best_w, best_h))
            break;
        }
      double w, h, nd;
      /* The widest's places kept: most often it is the one. */
      compound_layout (g, blocks, n_blocks, view, base * frac, k == 0 ? xs : NULL,
                       k == 0 ? ys : NULL, &w, &h, &nd, tops);
      if (k == 0)
        {
          need = nd;
          *width = w;
          *height = h;
        }
      double sc =
        tw_layout_fit_boxes (view, (const double *) tops->data, (int) tops->len / 4, NULL, NULL);
      last_frac = frac;
      /* Narrower ones must do better; wider ones win ties. */
      if (k == 0 || sc > best || (wider && sc == best))
        {
          best = sc;
          best_frac = frac;
          best_w = w;
          best_h = h;
        }
      else if (wider)
        break; /* wider got worse: it will not get better */
      if (need == 0)
        break;
    }
  /* Unless the widest was the only one laid out (places and blocks set by
   * it), the one picked again, for its places and the blocks' boxes. */
  if (last_frac != 1.0)
    {
      double nd;
      compound_layout (g, blocks, n_blocks, view, base * best_frac, xs, ys, width, height, &nd,
                       NULL);
    }
  return best;
}

double
tw_layout_compute (const tw_graph *g, tw_layout_block *const *blocks, int n_blocks,
                   const tw_layout_view *view, double *xs, double *ys)
{
  g_return_val_if_fail (g != NULL && view != NULL, 0);
  double w, h;
  return tw_layout_best (g, blocks, blocks ? n_blocks : 0, view, xs, ys, &w, &h);
}

void
tw_layout_extent (const tw_graph *g, tw_layout_block *const *blocks, int n_blocks,
                  const tw_layout_view *view, double *width, double *height)
{
  g_return_if_fail (g != NULL && view != NULL);
  double w, h;
  tw_layout_best (g, blocks, blocks ? n_blocks : 0, view, NULL, NULL, &w, &h);
  if (width)
    *width = w;
  if (height)
    *height = h;
}

JsonNode *
tw_layout_blocks_to_editor (const tw_graph *g, tw_layout_block *const *blocks, int n_blocks,
                            const tw_layout_view *view)
{
  if (n_blocks <= 0 && view == NULL)
    return NULL;
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  if (n_blocks > 0)
    {
      json_builder_set_member_name (b, "blocks");
      json_builder_begin_array (b);
    }
  for (int k = 0; k < n_blocks; k++)
    {
      const tw_layout_block *blk = blocks[k];
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "name");
      json_builder_add_string_value (b, blk->name);
      json_builder_set_member_name (b, "nodes");
      json_builder_begin_array (b);
      for (int m = 0; m < blk->n_members; m++)
        json_builder_add_string_value (b, tw_graph_node (g, blk->members[m])->id);
      json_builder_end_array (b);
      json_builder_set_member_name (b, "collapsed");
      json_builder_add_boolean_value (b, blk->collapsed);
      json_builder_set_member_name (b, "pos");
      json_builder_begin_array (b);
      json_builder_add_double_value (b, blk->x);
      json_builder_add_double_value (b, blk->y);
      json_builder_end_array (b);
      json_builder_end_object (b);
    }
  if (n_blocks > 0)
    json_builder_end_array (b);
  if (view)
    {
      const double v[] = { view->width, view->height, view->map_x,
                           view->map_y, view->map_w, view->map_h };
      json_builder_set_member_name (b, "view");
      json_builder_begin_array (b);
      for (guint k = 0; k < G_N_ELEMENTS (v); k++)
        json_builder_add_double_value (b, v[k]);
      json_builder_end_array (b);
    }
  json_builder_end_object (b);
  return json_builder_get_root (b);
}

void
tw_layout_model (tw_model *m, const tw_layout_view *view)
{
  g_return_if_fail (m != NULL);
  static const tw_layout_view fallback = TW_LAYOUT_VIEW_DEFAULT;
  if (view == NULL)
    view = &fallback;
  tw_graph *g = m->graph;
  int n = tw_graph_n_nodes (g);
  if (n == 0)
    return;
  g_autofree double *xs = g_new (double, n);
  g_autofree double *ys = g_new (double, n);
  g_autoptr (GPtrArray) blocks = tw_layout_fold_places (g, view, xs, ys);
  tw_layout_block **b = blocks ? (tw_layout_block **) blocks->pdata : NULL;
  int nb = blocks ? (int) blocks->len : 0;
  for (int i = 0; i < n; i++)
    tw_graph_set_pos (g, tw_graph_node (g, i), xs[i], ys[i]);
  tw_layout_place_blocks (g, b, nb);
  /* The editor member's other entries are kept. */
  JsonNode *ed = tw_layout_blocks_to_editor (g, b, nb, view);
  if (m->editor && JSON_NODE_HOLDS_OBJECT (m->editor))
    {
      JsonObject *old = json_node_get_object (m->editor), *now = json_node_get_object (ed);
      g_autoptr (GList) names = json_object_get_members (old);
      for (GList *l = names; l; l = l->next)
        if (!json_object_has_member (now, l->data) && strcmp (l->data, "blocks") != 0)
          json_object_set_member (now, l->data,
                                  json_node_copy (json_object_get_member (old, l->data)));
    }
  g_clear_pointer (&m->editor, json_node_unref);
  m->editor = ed;
}
