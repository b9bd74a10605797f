/* twb-graph-scene.c — flatten a TwbDocument into boxes, ports and edges. */
#define G_LOG_DOMAIN "twb-graph-scene"

#include "graph_editor/twb-graph-scene.h"

#include <math.h>
#include <string.h>

static guint route_key_hash (gconstpointer key);
static gboolean route_key_equal (gconstpointer a, gconstpointer b);

char *
twb_format_count (double v)
{
  if (v >= 1e9)
    return g_strdup_printf ("%.2fG", v / 1e9);
  if (v >= 1e6)
    return g_strdup_printf ("%.2fM", v / 1e6);
  if (v >= 1e3)
    return g_strdup_printf ("%.1fk", v / 1e3);
  return g_strdup_printf ("%.0f", v);
}

static char *
shape_label (const tw_tinfo *t)
{
  return tw_shape_to_string (t->ndim, t->dims);
}

static int
node_n_inputs (const tw_node *n)
{
  int k = n->n_inputs;
  if (n->op)
    {
      if (n->op->max_inputs < 0)
        k = MAX (k + 1, n->op->min_inputs);   /* a free port to grow the list */
      else
        k = MAX (k, n->op->max_inputs);
    }
  return CLAMP (k, 0, TWB_SCENE_MAX_PORTS);
}

static int
node_n_outputs (const tw_node *n)
{
  int k = n->n_outputs;
  if (k <= 0 && n->op)
    k = n->op->n_outputs > 0 ? n->op->n_outputs : 1;
  if (k <= 0)
    k = 1;
  return CLAMP (k, 1, TWB_SCENE_MAX_PORTS);
}

static const tw_tinfo *
output_info (const tw_graph *g, int node, int output)
{
  if (node < 0)
    return NULL;
  const tw_node *src = tw_graph_node (g, node);
  if (src->out_info == NULL || output < 0 || output >= src->n_outputs || src->error
      || !src->valid)
    return NULL;
  return &src->out_info[output];
}

static void
node_clear (TwbSceneNode *sn)
{
  g_free (sn->id);
  g_free (sn->title);
  g_free (sn->subtitle);
  g_free (sn->shape);
  g_free (sn->stats);
  g_free (sn->error);
  g_free (sn->category);
  g_free (sn->accessible);
  for (int i = 0; i < TWB_SCENE_MAX_PORTS; i++)
    {
      g_free (sn->in_names[i]);
      g_free (sn->in_types[i]);
      g_free (sn->out_types[i]);
    }
}

void
twb_graph_scene_free (TwbGraphScene *s)
{
  if (s == NULL)
    return;
  for (int i = 0; i < s->n_nodes; i++)
    node_clear (&s->nodes[i]);
  for (int i = 0; i < s->n_edges; i++)
    {
      g_free (s->edges[i].label);
      g_free (s->edges[i].to_id);
    }
  for (int i = 0; i < s->n_frames; i++)
    {
      g_free (s->frames[i].name);
      g_free (s->frames[i].summary);
    }
  g_free (s->nodes);
  g_free (s->edges);
  g_free (s->frames);
  g_clear_pointer (&s->index, g_hash_table_unref);
  g_clear_pointer (&s->routes, g_hash_table_unref);
  g_free (s);
}

static TwbOutputKind
output_kind_of (const tw_graph *g, GHashTable *outputs, int gi)
{
  if (!g_hash_table_contains (outputs, tw_graph_node (g, gi)->id))
    return TWB_OUTPUT_NONE;
  return tw_graph_outputs_are_default (g) ? TWB_OUTPUT_DEFAULT : TWB_OUTPUT_MARKED;
}

static void
fill_node (TwbDocument *doc, const tw_graph *g, GHashTable *outputs, int gi, TwbSceneNode *sn)
{
  const tw_node *n = tw_graph_node (g, gi);
  double w = 160, h = 64;
  twb_document_node_size (doc, n->id, &w, &h);

  sn->graph_index = gi;
  sn->id = g_strdup (n->id);
  sn->title = g_strdup (n->id);
  sn->subtitle = n->share ? g_strdup_printf ("%s (shares %s)", n->op_name, n->share)
                          : g_strdup (n->op_name);
  sn->category = g_strdup (n->op ? n->op->category : "Unknown");
  sn->x = n->x;
  sn->y = n->y;
  sn->w = w;
  sn->h = h;
  sn->n_in = node_n_inputs (n);
  sn->n_out = node_n_outputs (n);
  sn->error = n->error ? g_strdup (n->error) : NULL;
  sn->stage = twb_document_get_node_stage_at (doc, gi);
  /* The pipeline placement's error on the node it names (a run would stop there). */
  const char *stage_node = NULL;
  const char *stage_error = twb_document_get_stage_error (doc, &stage_node);
  if (sn->error == NULL && stage_error && g_strcmp0 (stage_node, n->id) == 0)
    sn->error = g_strdup (stage_error);
  sn->invalid = !n->valid;
  sn->selected = twb_document_is_selected (doc, n->id);

  const tw_tinfo *o0 = output_info (g, gi, 0);
  if (o0)
    sn->shape = shape_label (o0);
  for (int k = 0; k < sn->n_out; k++)
    {
      const tw_tinfo *o = output_info (g, gi, k);
      if (o)
        sn->out_types[k] = tw_tinfo_to_string (o);
    }
  for (int k = 0; k < sn->n_in; k++)
    {
      if (n->op && n->op->input_names)
        {
          for (int j = 0; n->op->input_names[j]; j++)
            if (j == k)
              {
                sn->in_names[k] = g_strdup (n->op->input_names[j]);
                break;
              }
        }
      if (k < n->n_inputs && n->inputs[k] && n->inputs[k][0])
        {
          sn->in_connected[k] = TRUE;
          tw_port p = tw_graph_resolve (g, n->inputs[k]);
          const tw_tinfo *t = output_info (g, p.node, p.output);
          if (t)
            sn->in_types[k] = tw_tinfo_to_string (t);
        }
    }

  int64_t np = 0;
  for (int k = 0; k < n->n_params && !n->share && n->valid; k++)
    np += tw_tinfo_numel (&n->params[k].info, NULL);
  if (np > 0 || n->cost.flops > 0)
    {
      g_autofree char *p = twb_format_count ((double) np);
      g_autofree char *f = twb_format_count (n->cost.flops);
      sn->stats = np > 0 ? g_strdup_printf ("%s params · %s FLOPs", p, f)
                         : g_strdup_printf ("%s FLOPs", f);
    }

  GString *a = g_string_new (NULL);
  g_string_append_printf (a, "Node %s, %s", n->id, n->op_name);
  if (sn->shape)
    g_string_append_printf (a, ", output %s", sn->shape);
  for (int k = 0; k < sn->n_in; k++)
    g_string_append_printf (a, ", input port %s %s", sn->in_names[k] ? sn->in_names[k] : "",
                            sn->in_connected[k] ? "connected" : "free");
  sn->output = output_kind_of (g, outputs, gi);
  if (sn->output == TWB_OUTPUT_MARKED)
    g_string_append (a, ", a model output");
  else if (sn->output == TWB_OUTPUT_DEFAULT)
    g_string_append (a, ", the model output (it feeds the loss)");
  if (sn->stage >= 0)
    g_string_append_printf (a, ", pipeline stage %d", sn->stage);
  if (sn->error)
    g_string_append_printf (a, ", error: %s", sn->error);
  sn->accessible = g_string_free (a, FALSE);
}

static int
cmp_depth (gconstpointer a, gconstpointer b, gpointer user)
{
  const int *depth = user;
  int x = *(const int *) a, y = *(const int *) b;
  return depth[x] != depth[y] ? depth[x] - depth[y] : x - y;
}

/* What a block holds, in a few words: its inner blocks and nodes (a block
 * of more than 8 nodes with blocks inside: a ResNet stage), or its three
 * most frequent ops, "conv2d ×2 · relu ×2 · add".  Caller frees. */
static char *
block_summary (const tw_graph *g, const tw_layout_block *b, int n_inner)
{
  if (n_inner > 0 && b->n_members > 8)
    return g_strdup_printf ("%d block%s · %d node%s", n_inner, n_inner == 1 ? "" : "s",
                            b->n_members, b->n_members == 1 ? "" : "s");
  /* Ops in order of first use, with their counts. */
  g_autoptr (GPtrArray) ops = g_ptr_array_new ();
  g_autoptr (GArray) counts = g_array_new (FALSE, TRUE, sizeof (int));
  for (int m = 0; m < b->n_members; m++)
    {
      const char *op = tw_graph_node (g, b->members[m])->op_name;
      guint k = 0;
      while (k < ops->len && strcmp (ops->pdata[k], op) != 0)
        k++;
      if (k == ops->len)
        {
          g_ptr_array_add (ops, (gpointer) op);
          g_array_set_size (counts, ops->len);
        }
      g_array_index (counts, int, k)++;
    }
  GString *t = g_string_new (NULL);
  for (int shown = 0; shown < 3 && shown < (int) ops->len; shown++)
    {
      /* The most frequent not shown yet (the first of equals). */
      int best = -1;
      for (guint k = 0; k < ops->len; k++)
        if (g_array_index (counts, int, k) > 0
            && (best < 0 || g_array_index (counts, int, k) > g_array_index (counts, int, best)))
          best = (int) k;
      int c = g_array_index (counts, int, best);
      g_string_append_printf (t, "%s%s", t->len ? " · " : "", (char *) ops->pdata[best]);
      if (c > 1)
        g_string_append_printf (t, " ×%d", c);
      g_array_index (counts, int, best) = 0;
    }
  if (ops->len > 3)
    g_string_append (t, " …");
  return g_string_free (t, FALSE);
}

TwbGraphScene *
twb_graph_scene_new (TwbDocument *doc)
{
  TwbGraphScene *s = g_new0 (TwbGraphScene, 1);
  tw_graph *g = twb_document_get_graph (doc);
  int nn = tw_graph_n_nodes (g);
  s->index = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  s->routes = g_hash_table_new_full (route_key_hash, route_key_equal, g_free, NULL);

  /* Blocks: their boxes and frames where their nodes are, how they nest. */
  g_autoptr (GPtrArray) boxes = twb_document_block_boxes (doc);
  int n_blocks = (int) boxes->len;
  s->nodes = g_new0 (TwbSceneNode, nn + n_blocks);
  s->frames = g_new0 (TwbSceneFrame, MAX (n_blocks, 1));
  g_autofree int *parent = g_new (int, MAX (n_blocks, 1));
  g_autofree int *owner = g_new (int, MAX (nn, 1));
  tw_layout_nesting (g, (tw_layout_block **) boxes->pdata, n_blocks, parent, owner);
  g_autofree int *depth = g_new0 (int, MAX (n_blocks, 1));
  g_autofree int *shown_in = g_new (int, MAX (n_blocks, 1));   /* outermost closed block, or -1 */
  g_autofree int *n_inner = g_new0 (int, MAX (n_blocks, 1));
  g_autofree int *order = g_new (int, MAX (n_blocks, 1));
  for (int b = 0; b < n_blocks; b++)
    {
      shown_in[b] = -1;
      order[b] = b;
      for (int p = parent[b]; p >= 0; p = parent[p])
        {
          depth[b]++;
          if (((tw_layout_block *) boxes->pdata[p])->collapsed)
            shown_in[b] = p;
        }
      if (parent[b] >= 0)
        n_inner[parent[b]]++;
    }
  /* Outer first: frames are drawn in this order. */
  g_qsort_with_data (order, n_blocks, sizeof (int), cmp_depth, depth);

  /* Collapsed blocks first: their members map to the block's box. */
  g_autofree int *scene_of = g_new (int, MAX (nn, 1));
  g_autofree int *block_scene = g_new (int, MAX (n_blocks, 1));
  for (int i = 0; i < nn; i++)
    scene_of[i] = -1;
  for (int k = 0; k < n_blocks; k++)
    {
      int b = order[k];
      const tw_layout_block *lb = boxes->pdata[b];
      block_scene[b] = -1;
      if (parent[b] == -2 || shown_in[b] >= 0)
        continue;   /* overlapping another, or inside a closed one */
      g_autofree char *summary = block_summary (g, lb, n_inner[b]);
      gboolean all_selected = lb->n_members > 0;
      for (int m = 0; m < lb->n_members; m++)
        all_selected &= twb_document_is_selected (doc, tw_graph_node (g, lb->members[m])->id);
      if (!lb->collapsed)
        {
          TwbSceneFrame *f = &s->frames[s->n_frames++];
          f->name = g_strdup (lb->name);
          f->summary = g_steal_pointer (&summary);
          f->x = lb->x;
          f->y = lb->y;
          f->w = lb->w;
          f->h = lb->h;
          f->depth = depth[b];
          f->selected = all_selected;
          continue;
        }
      int si = s->n_nodes++;
      block_scene[b] = si;
      TwbSceneNode *sn = &s->nodes[si];
      sn->graph_index = -1;
      sn->stage = -1;
      sn->is_block = TRUE;
      sn->id = g_strdup (lb->name);
      sn->title = g_strdup (lb->name);
      sn->subtitle = g_steal_pointer (&summary);
      sn->category = g_strdup ("Block");
      sn->x = lb->x;
      sn->y = lb->y;
      sn->w = lb->w;
      sn->h = lb->h;
      sn->n_in = 1;
      sn->n_out = 1;
      gboolean any_selected = FALSE;
      GString *errs = NULL;
      for (int m = 0; m < lb->n_members; m++)
        {
          int gi = lb->members[m];
          scene_of[gi] = si;
          tw_node *mn = tw_graph_node (g, gi);
          any_selected |= twb_document_is_selected (doc, mn->id);
          if (mn->error)
            {
              if (errs == NULL)
                errs = g_string_new (NULL);
              else
                g_string_append_c (errs, '\n');
              g_string_append_printf (errs, "%s: %s", mn->id, mn->error);
            }
          if (!mn->valid)
            sn->invalid = TRUE;
        }
      sn->selected = any_selected;
      sn->error = errs ? g_string_free (errs, FALSE) : NULL;
      sn->accessible = g_strdup_printf ("Block %s, %d nodes, collapsed%s%s", lb->name,
                                        lb->n_members, sn->error ? ", error: " : "",
                                        sn->error ? sn->error : "");
      g_hash_table_insert (s->index, g_strdup (sn->id), GINT_TO_POINTER (si + 1));
    }

  /* The nodes that are model outputs (once: the default rule scans the graph). */
  g_autoptr (GHashTable) outputs = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (const char *const *o = tw_graph_outputs (g); *o; o++)
    {
      char *oid = NULL;
      int k;
      if (tw_ref_parse (*o, &oid, &k))
        g_hash_table_add (outputs, oid);
    }
  for (int i = 0; i < nn; i++)
    {
      if (scene_of[i] >= 0)
        {
          g_hash_table_insert (s->index, g_strdup (tw_graph_node (g, i)->id),
                               GINT_TO_POINTER (scene_of[i] + 1));
          continue;
        }
      int si = s->n_nodes++;
      fill_node (doc, g, outputs, i, &s->nodes[si]);
      scene_of[i] = si;
      g_hash_table_insert (s->index, g_strdup (s->nodes[si].id), GINT_TO_POINTER (si + 1));
    }

  /* Edges: one per connected input; those inside a block vanish, those
   * crossing its border attach to the block's single port. */
  GArray *edges = g_array_new (FALSE, TRUE, sizeof (TwbSceneEdge));
  for (int i = 0; i < nn; i++)
    {
      const tw_node *n = tw_graph_node (g, i);
      for (int k = 0; k < n->n_inputs; k++)
        {
          if (n->inputs[k] == NULL || n->inputs[k][0] == '\0')
            continue;
          tw_port p = tw_graph_resolve (g, n->inputs[k]);
          if (p.node < 0)
            continue;
          int a = scene_of[p.node], b = scene_of[i];
          if (a == b)
            continue;
          TwbSceneEdge e = { 0 };
          e.from = a;
          e.to = b;
          e.from_port = s->nodes[a].is_block ? 0 : MIN (p.output, s->nodes[a].n_out - 1);
          e.to_port = s->nodes[b].is_block ? 0 : MIN (k, s->nodes[b].n_in - 1);
          const tw_tinfo *t = output_info (g, p.node, p.output);
          e.label = t ? shape_label (t) : NULL;
          e.invalid = t == NULL;
          e.to_id = g_strdup (n->id);
          e.to_input = k;
          g_array_append_val (edges, e);
        }
    }
  s->n_edges = edges->len;
  s->edges = (TwbSceneEdge *) g_array_free (edges, FALSE);

  for (int i = 0; i < s->n_nodes + s->n_frames; i++)
    {
      gboolean node = i < s->n_nodes;
      const TwbSceneNode *sn = node ? &s->nodes[i] : NULL;
      const TwbSceneFrame *f = node ? NULL : &s->frames[i - s->n_nodes];
      double x = node ? sn->x : f->x, y = node ? sn->y : f->y;
      double x1 = x + (node ? sn->w : f->w), y1 = y + (node ? sn->h : f->h);
      if (i == 0 || x < s->min_x)
        s->min_x = x;
      if (i == 0 || y < s->min_y)
        s->min_y = y;
      if (i == 0 || x1 > s->max_x)
        s->max_x = x1;
      if (i == 0 || y1 > s->max_y)
        s->max_y = y1;
    }
  const GArray *diags = twb_document_get_diagnostics (doc);
  s->n_errors = diags ? (int) diags->len : 0;
  s->n_stages = twb_document_get_n_stages (doc);
  s->params = twb_document_param_count (doc);
  s->flops = twb_document_flops (doc);
  return s;
}

int
twb_graph_scene_find (const TwbGraphScene *s, const char *id)
{
  if (id == NULL)
    return -1;
  return GPOINTER_TO_INT (g_hash_table_lookup (s->index, id)) - 1;
}

/* Ports sit on the left (inputs) and right (outputs) edges, spread evenly
 * over the body below the 24-unit header. */
#define HEADER_H 24.0

void
twb_graph_scene_port_pos (const TwbGraphScene *s, int node, TwbPortDirection dir, int port,
                          double *x, double *y)
{
  const TwbSceneNode *n = &s->nodes[node];
  int count = dir == TWB_PORT_INPUT ? n->n_in : n->n_out;
  double body = n->h - HEADER_H;
  *x = dir == TWB_PORT_INPUT ? n->x : n->x + n->w;
  *y = n->y + HEADER_H + body * (port + 1) / (double) (MAX (count, 1) + 1);
}

int
twb_graph_scene_hit_node (const TwbGraphScene *s, double x, double y)
{
  for (int i = s->n_nodes - 1; i >= 0; i--)
    {
      const TwbSceneNode *n = &s->nodes[i];
      if (x >= n->x && x <= n->x + n->w && y >= n->y && y <= n->y + n->h)
        return i;
    }
  return -1;
}

int
twb_graph_scene_hit_port (const TwbGraphScene *s, double x, double y, double slop,
                          TwbPortDirection *dir, int *port)
{
  double best = slop * slop;
  int hit = -1;
  for (int i = s->n_nodes - 1; i >= 0; i--)
    {
      const TwbSceneNode *n = &s->nodes[i];
      if (x < n->x - slop || x > n->x + n->w + slop || y < n->y - slop || y > n->y + n->h + slop)
        continue;
      for (int d = 0; d < 2; d++)
        {
          int count = d == 0 ? n->n_in : n->n_out;
          for (int k = 0; k < count; k++)
            {
              double px, py;
              twb_graph_scene_port_pos (s, i, d == 0 ? TWB_PORT_INPUT : TWB_PORT_OUTPUT, k, &px,
                                        &py);
              double dd = (px - x) * (px - x) + (py - y) * (py - y);
              if (dd <= best)
                {
                  best = dd;
                  hit = i;
                  *dir = d == 0 ? TWB_PORT_INPUT : TWB_PORT_OUTPUT;
                  *port = k;
                }
            }
        }
    }
  return hit;
}

double
twb_graph_scene_edge_bend (double x0, double x3)
{
  return x3 >= x0 ? MAX (40.0, (x3 - x0) / 2) : 80.0;
}

/* Routed edges keep this far from every box: the line's width and the
 * curve of a rounded corner (10 units, cutting at most 3 into the corner). */
#define ROUTE_MARGIN 6.0
/* Points sampled along a Bezier edge to see whether it crosses a box. */
#define BEZIER_SAMPLES 24

/* Does the axis-aligned segment a–b pass through the box of node i, grown
 * by margin m? */
static gboolean
seg_hits_box (const TwbSceneNode *n, double ax, double ay, double bx, double by, double m)
{
  return n->x - m < MAX (ax, bx) && MIN (ax, bx) < n->x + n->w + m && n->y - m < MAX (ay, by)
         && MIN (ay, by) < n->y + n->h + m;
}

/* The box a segment runs into first (any but skip0/skip1), or -1. */
static int
seg_blocker (const TwbGraphScene *s, double ax, double ay, double bx, double by, int skip0,
             int skip1)
{
  for (int i = 0; s && i < s->n_nodes; i++)
    if (i != skip0 && i != skip1 && seg_hits_box (&s->nodes[i], ax, ay, bx, by, ROUTE_MARGIN))
      return i;
  return -1;
}

/* Whether a horizontal run from xa to xb at y meets a frame's band (where
 * its name is: a run along it would read as the frame's border). */
static gboolean
run_hits_band (const TwbGraphScene *s, double xa, double xb, double y)
{
  for (int f = 0; s && f < s->n_frames; f++)
    {
      const TwbSceneFrame *fr = &s->frames[f];
      if (fr->x - ROUTE_MARGIN < MAX (xa, xb) && MIN (xa, xb) < fr->x + fr->w + ROUTE_MARGIN
          && fr->y - ROUTE_MARGIN < y && y < fr->y + TW_LAYOUT_FRAME_HEADER + ROUTE_MARGIN)
        return TRUE;
    }
  return FALSE;
}

/* The node whose output (right = TRUE) or input port sits at (x, y). */
static int
port_owner (const TwbGraphScene *s, double x, double y, gboolean right)
{
  for (int i = 0; s && i < s->n_nodes; i++)
    {
      const TwbSceneNode *n = &s->nodes[i];
      double ex = right ? n->x + n->w : n->x;
      if (fabs (ex - x) < 0.5 && y >= n->y && y <= n->y + n->h)
        return i;
    }
  return -1;
}

static void
bezier_point (double x0, double y0, double x3, double y3, double t, double *x, double *y)
{
  double dx = twb_graph_scene_edge_bend (x0, x3), u = 1 - t;
  *x = u * u * u * x0 + 3 * u * u * t * (x0 + dx) + 3 * u * t * t * (x3 - dx) + t * t * t * x3;
  *y = u * u * u * y0 + 3 * u * u * t * y0 + 3 * u * t * t * y3 + t * t * t * y3;
}

/* Whether the forward Bezier from (x0, y0) to (x3, y3) passes through a box
 * other than its ends'. */
static gboolean
bezier_blocked (const TwbGraphScene *s, double x0, double y0, double x3, double y3, int from,
                int to)
{
  for (int k = 1; k < BEZIER_SAMPLES; k++)
    {
      double x, y;
      bezier_point (x0, y0, x3, y3, k / (double) BEZIER_SAMPLES, &x, &y);
      for (int i = 0; i < s->n_nodes; i++)
        if (i != from && i != to && seg_hits_box (&s->nodes[i], x, y, x, y, 2))
          return TRUE;
    }
  return FALSE;
}

/* Moves a vertical run at x (from ya to yb) sideways, by `dir`, past the
 * boxes it would cross; the moved x. */
static double
clear_column (const TwbGraphScene *s, double x, double ya, double yb, int dir, int from, int to)
{
  for (int tries = 0; tries < 8; tries++)
    {
      int b = seg_blocker (s, x, ya, x, yb, from, to);
      if (b < 0)
        break;
      const TwbSceneNode *n = &s->nodes[b];
      x = dir > 0 ? n->x + n->w + 20 : n->x - 20;
    }
  return x;
}

/* The scene does not change once built, so a route is computed once per
 * pair of ends (the canvas asks for each edge several times a frame, and
 * on every pointer motion). */
typedef struct
{
  double ends[4];
  int n;
  double pts[6][2];
} RouteEntry;

static guint
route_key_hash (gconstpointer key)
{
  const double *e = key;
  guint h = 5381;
  for (int i = 0; i < 4; i++)
    h = h * 33 + g_double_hash (&e[i]);
  return h;
}

static gboolean
route_key_equal (gconstpointer a, gconstpointer b)
{
  return memcmp (a, b, 4 * sizeof (double)) == 0;
}

static int compute_route (const TwbGraphScene *s, double x0, double y0, double x3, double y3,
                          double pts[6][2]);

int
twb_graph_scene_edge_route (const TwbGraphScene *s, double x0, double y0, double x3, double y3,
                            double pts[6][2])
{
  if (s == NULL || s->routes == NULL)
    return compute_route (s, x0, y0, x3, y3, pts);
  double key[4] = { x0, y0, x3, y3 };
  RouteEntry *r = g_hash_table_lookup (s->routes, key);
  if (r == NULL)
    {
      /* Ends that are no ports (an edge being dragged follows the pointer)
       * would grow the cache without end: it is kept to a few per edge. */
      if (g_hash_table_size (s->routes) > 4 * (guint) s->n_edges + 64)
        g_hash_table_remove_all (s->routes);
      r = g_new0 (RouteEntry, 1);
      memcpy (r->ends, key, sizeof key);
      r->n = compute_route (s, x0, y0, x3, y3, r->pts);
      g_hash_table_add (s->routes, r);
    }
  if (r->n > 0)
    memcpy (pts, r->pts, sizeof r->pts);
  return r->n;
}

static int
compute_route (const TwbGraphScene *s, double x0, double y0, double x3, double y3,
               double pts[6][2])
{
  int from = port_owner (s, x0, y0, TRUE), to = port_owner (s, x3, y3, FALSE);
  /* 20 units: room for the port circle and a rounded corner.  A forward
   * edge is a curve unless the curve would cross a box. */
  gboolean forward = x3 >= x0 + 20;
  if (forward && (s == NULL || !bezier_blocked (s, x0, y0, x3, y3, from, to)))
    return 0;
  /* Out to the right, along a horizontal run, in from the left.  The run
   * goes halfway between the ports' heights, or along the free line nearest
   * to it: the ports' own heights (forward edges) or just above or below a
   * box it would cross, or above a frame's band (a run never goes along a
   * band); the vertical runs step aside from boxes in their way.  The
   * cheapest route that crosses no box wins. */
  double xb0 = x0 + 20, xa0 = x3 - 20, mid = (y0 + y3) / 2;
  double best_cost = G_MAXDOUBLE, best[3] = { xb0, mid, xa0 };
  int n_box = 3 + 2 * (s ? s->n_nodes : 0), n_cand = n_box + (s ? s->n_frames : 0);
  for (int c = 0; c < n_cand; c++)
    {
      double ym;
      if (c < 3)
        ym = c == 0 ? mid : c == 1 ? y0 : y3;
      else if (c < n_box)
        {
          const TwbSceneNode *n = &s->nodes[(c - 3) / 2];
          ym = (c - 3) % 2 == 0 ? n->y - 14 : n->y + n->h + 14;
        }
      else
        ym = s->frames[c - n_box].y - 14;   /* above a frame's band */
      if (c > 0 && c < 3 && !forward)
        continue;
      double cost = fabs (ym - mid);
      if (cost >= best_cost)
        continue;
      double xb = clear_column (s, xb0, y0, ym, +1, from, to);
      double xa = clear_column (s, xa0, ym, y3, -1, from, to);
      cost += (xb - xb0) + (xa0 - xa);
      if (cost >= best_cost)
        continue;
      if (seg_blocker (s, x0, y0, xb, y0, from, to) >= 0
          || seg_blocker (s, xb, y0, xb, ym, from, to) >= 0
          || seg_blocker (s, xb, ym, xa, ym, -1, -1) >= 0 || run_hits_band (s, xb, xa, ym)
          || seg_blocker (s, xa, ym, xa, y3, from, to) >= 0
          || seg_blocker (s, xa, y3, x3, y3, from, to) >= 0)
        continue;
      best_cost = cost;
      best[0] = xb;
      best[1] = ym;
      best[2] = xa;
    }
  if (best_cost == G_MAXDOUBLE && forward)
    return 0;   /* boxed in: the curve is the lesser evil */
  double r[6][2] = { { x0, y0 },           { best[0], y0 }, { best[0], best[1] },
                     { best[2], best[1] }, { best[2], y3 }, { x3, y3 } };
  memcpy (pts, r, sizeof r);
  return 6;
}

int
twb_graph_scene_edge_sample (const TwbGraphScene *s, int edge, int n, double (*pts)[2])
{
  g_return_val_if_fail (s && edge >= 0 && edge < s->n_edges && n >= 2, 0);
  const TwbSceneEdge *e = &s->edges[edge];
  double x0, y0, x3, y3;
  twb_graph_scene_port_pos (s, e->from, TWB_PORT_OUTPUT, e->from_port, &x0, &y0);
  twb_graph_scene_port_pos (s, e->to, TWB_PORT_INPUT, e->to_port, &x3, &y3);
  double route[6][2];
  int nr = twb_graph_scene_edge_route (s, x0, y0, x3, y3, route);
  if (nr == 0)
    {
      for (int k = 0; k < n; k++)
        bezier_point (x0, y0, x3, y3, k / (double) (n - 1), &pts[k][0], &pts[k][1]);
      return n;
    }
  double len = 0;
  for (int k = 1; k < nr; k++)
    len += hypot (route[k][0] - route[k - 1][0], route[k][1] - route[k - 1][1]);
  int seg = 1;
  double done = 0;
  for (int k = 0; k < n; k++)
    {
      double at = len * k / (n - 1);
      while (seg < nr - 1
             && done + hypot (route[seg][0] - route[seg - 1][0], route[seg][1] - route[seg - 1][1])
                    < at)
        {
          done += hypot (route[seg][0] - route[seg - 1][0], route[seg][1] - route[seg - 1][1]);
          seg++;
        }
      double sl = hypot (route[seg][0] - route[seg - 1][0], route[seg][1] - route[seg - 1][1]);
      double t = sl > 0 ? CLAMP ((at - done) / sl, 0, 1) : 0;
      pts[k][0] = route[seg - 1][0] + t * (route[seg][0] - route[seg - 1][0]);
      pts[k][1] = route[seg - 1][1] + t * (route[seg][1] - route[seg - 1][1]);
    }
  return n;
}

static double
seg_dist2 (double px, double py, double ax, double ay, double bx, double by)
{
  double dx = bx - ax, dy = by - ay;
  double len2 = dx * dx + dy * dy;
  double t = len2 > 0 ? ((px - ax) * dx + (py - ay) * dy) / len2 : 0;
  t = CLAMP (t, 0, 1);
  double cx = ax + t * dx - px, cy = ay + t * dy - py;
  return cx * cx + cy * cy;
}

int
twb_graph_scene_hit_edge (const TwbGraphScene *s, double x, double y, double slop)
{
  for (int i = 0; i < s->n_edges; i++)
    {
      const TwbSceneEdge *e = &s->edges[i];
      double x0, y0, x3, y3;
      twb_graph_scene_port_pos (s, e->from, TWB_PORT_OUTPUT, e->from_port, &x0, &y0);
      twb_graph_scene_port_pos (s, e->to, TWB_PORT_INPUT, e->to_port, &x3, &y3);
      /* Routes leave the ports' span (a run above or below the boxes): the
       * route is tested before the bounding box of a curve is. */
      double route[6][2];
      int nr = twb_graph_scene_edge_route (s, x0, y0, x3, y3, route);
      if (nr > 0)
        {
          for (int k = 1; k < nr; k++)
            if (seg_dist2 (x, y, route[k - 1][0], route[k - 1][1], route[k][0], route[k][1])
                <= slop * slop)
              return i;
          continue;
        }
      if (x < MIN (x0, x3) - slop - 200 || x > MAX (x0, x3) + slop + 200
          || y < MIN (y0, y3) - slop || y > MAX (y0, y3) + slop)
        continue;
      double dx = twb_graph_scene_edge_bend (x0, x3);
      double px = x0, py = y0;
      for (int k = 1; k <= 16; k++)
        {
          double t = k / 16.0, u = 1 - t;
          double bx = u * u * u * x0 + 3 * u * u * t * (x0 + dx) + 3 * u * t * t * (x3 - dx)
                      + t * t * t * x3;
          double by = u * u * u * y0 + 3 * u * u * t * y0 + 3 * u * t * t * y3 + t * t * t * y3;
          if (seg_dist2 (x, y, px, py, bx, by) <= slop * slop)
            return i;
          px = bx;
          py = by;
        }
    }
  return -1;
}

GArray *
twb_graph_scene_nodes_in_rect (const TwbGraphScene *s, double x0, double y0, double x1,
                               double y1)
{
  GArray *out = g_array_new (FALSE, FALSE, sizeof (int));
  double lx = MIN (x0, x1), hx = MAX (x0, x1), ly = MIN (y0, y1), hy = MAX (y0, y1);
  for (int i = 0; i < s->n_nodes; i++)
    {
      const TwbSceneNode *n = &s->nodes[i];
      if (n->x + n->w >= lx && n->x <= hx && n->y + n->h >= ly && n->y <= hy)
        g_array_append_val (out, i);
    }
  return out;
}

int
twb_graph_scene_find_edge (const TwbGraphScene *s, const char *id, int port)
{
  if (s == NULL || id == NULL)
    return -1;
  for (int i = 0; i < s->n_edges; i++)
    if (s->edges[i].to_input == port && g_strcmp0 (s->edges[i].to_id, id) == 0)
      return i;
  return -1;
}

int
twb_graph_scene_hit_frame (const TwbGraphScene *s, double x, double y, gboolean *in_band)
{
  /* Inner frames come after outer ones. */
  for (int i = s->n_frames - 1; i >= 0; i--)
    {
      const TwbSceneFrame *f = &s->frames[i];
      if (x >= f->x && x <= f->x + f->w && y >= f->y && y <= f->y + f->h)
        {
          if (in_band)
            *in_band = y <= f->y + TW_LAYOUT_FRAME_HEADER;
          return i;
        }
    }
  return -1;
}

void
twb_graph_scene_frame_button (const TwbGraphScene *s, int frame, double *cx, double *cy,
                              double *r)
{
  const TwbSceneFrame *f = &s->frames[frame];
  /* A 20-unit disc at the band's right end, 7 in from the edges. */
  *r = 10;
  *cx = f->x + f->w - 7 - *r;
  *cy = f->y + TW_LAYOUT_FRAME_HEADER / 2;
}
