/* onnx-import-layout.c — an imported graph laid out for the canvas: layers
 * left to right wrapped into rows, and editor blocks for the repeated
 * stages its ids name. */
#define G_LOG_DOMAIN "tw-onnx"

#include "onnx/onnx-import-private.h"

#include <math.h>
#include <string.h>

/* The canvas' node box is about 180 × 64 at 100 %, its ports on the left
 * and right: layers run left to right, a layer's nodes one below the other
 * (with room for an edge label between them), as in the editor's own
 * auto layout (graph_editor/twb-document-layout.c), whose gaps these are. */
#define STEP_X 260.0  /* box + 80 */
#define STEP_Y 104.0  /* box + 40 */
#define WRAP_GAP 72.0 /* below a row: the edge to the next row's start */
#define ORIGIN 40.0
/* The picture a fit of the whole graph aims at: a canvas of 16:10. */
#define ASPECT 1.6

/* Layers by longest path from the inputs, left to right; a long chain (a
 * ResNet is 50 layers deep) wraps into rows of k layers, k chosen so the
 * whole graph is about as wide as the canvas is, relative to its height. */
void
tw_imp_layout_rows (tw_graph *g)
{
  g_autoptr (GArray) order = NULL;
  if (!tw_graph_topo_order (g, &order, NULL))
    return;
  int n = tw_graph_n_nodes (g);
  if (n == 0)
    return;
  /* A loss and its label go beside the output afterwards. */
  tw_node *loss = NULL, *label = NULL;
  tw_imp_loss_nodes (g, &loss, &label);
  g_autofree int *depth = g_new0 (int, n);
  g_autofree int *slot = g_new0 (int, n);
  int n_layers = 0;
  for (guint k = 0; k < order->len; k++)
    {
      int i = g_array_index (order, int, k);
      tw_node *node = tw_graph_node (g, i);
      if (node == loss || node == label)
        continue;
      for (int j = 0; j < node->n_inputs; j++)
        {
          tw_port p = tw_graph_resolve (g, node->inputs[j]);
          if (p.node >= 0)
            depth[i] = MAX (depth[i], depth[p.node] + 1);
        }
      n_layers = MAX (n_layers, depth[i] + 1);
    }
  g_autofree int *width = g_new0 (int, n_layers); /* nodes per layer */
  for (guint k = 0; k < order->len; k++)
    {
      int i = g_array_index (order, int, k);
      if (tw_graph_node (g, i) != loss && tw_graph_node (g, i) != label)
        slot[i] = width[depth[i]]++;
    }
  /* Rows of k layers: a row is as tall as its widest layer. */
  int best_k = n_layers;
  double best = G_MAXDOUBLE;
  g_autofree double *row_h = g_new0 (double, n_layers);
  for (int k = MIN (3, n_layers); k <= n_layers; k++)
    {
      double h = 0;
      for (int r = 0; r * k < n_layers; r++)
        {
          int widest = 1;
          for (int d = r * k; d < MIN ((r + 1) * k, n_layers); d++)
            widest = MAX (widest, width[d]);
          h += widest * STEP_Y + WRAP_GAP;
        }
      double ratio = (k * STEP_X) / h;
      double off = fabs (log (ratio / ASPECT));
      if (off < best)
        best = off, best_k = k;
    }
  double y = ORIGIN;
  for (int r = 0; r * best_k < n_layers; r++)
    {
      int widest = 1;
      for (int d = r * best_k; d < MIN ((r + 1) * best_k, n_layers); d++)
        widest = MAX (widest, width[d]);
      row_h[r] = y;
      y += widest * STEP_Y + WRAP_GAP;
    }
  for (int i = 0; i < n; i++)
    {
      int r = depth[i] / best_k, c = depth[i] % best_k;
      tw_graph_set_pos (g, tw_graph_node (g, i), ORIGIN + STEP_X * c, row_h[r] + STEP_Y * slot[i]);
    }
  tw_imp_place_loss (g);
}

/* "layer1.0.conv1" → "layer1.0": a repeated stage's prefix (a name, then a
 * number), or NULL. */
static char *
stage_of (const char *id)
{
  const char *dot = strchr (id, '.');
  if (dot == NULL || dot == id || !g_ascii_isdigit (dot[1]))
    return NULL;
  const char *p = dot + 1;
  while (g_ascii_isdigit (*p))
    p++;
  if (*p != '.')
    return NULL;
  return g_strndup (id, p - id);
}

/* Editor blocks (the model's "editor" member, see engine/model.h), one per
 * stage with at least two nodes, expanded. */
JsonNode *
tw_imp_stage_blocks (tw_graph *g)
{
  GHashTable *members =
    g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) g_ptr_array_unref);
  GPtrArray *names = g_ptr_array_new ();
  for (int i = 0; i < tw_graph_n_nodes (g); i++)
    {
      tw_node *node = tw_graph_node (g, i);
      char *stage = stage_of (node->id);
      if (stage == NULL)
        continue;
      GPtrArray *m = g_hash_table_lookup (members, stage);
      if (m == NULL)
        {
          m = g_ptr_array_new ();
          g_ptr_array_add (names, stage);
          g_hash_table_insert (members, stage, m);
        }
      else
        g_free (stage);
      g_ptr_array_add (m, node);
    }
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "blocks");
  json_builder_begin_array (b);
  guint n_blocks = 0;
  for (guint k = 0; k < names->len; k++)
    {
      GPtrArray *m = g_hash_table_lookup (members, names->pdata[k]);
      if (m->len < 2)
        continue;
      n_blocks++;
      double x = G_MAXDOUBLE, y = G_MAXDOUBLE;
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "name");
      json_builder_add_string_value (b, names->pdata[k]);
      json_builder_set_member_name (b, "nodes");
      json_builder_begin_array (b);
      for (guint j = 0; j < m->len; j++)
        {
          tw_node *node = m->pdata[j];
          json_builder_add_string_value (b, node->id);
          x = MIN (x, node->x), y = MIN (y, node->y);
        }
      json_builder_end_array (b);
      json_builder_set_member_name (b, "collapsed");
      json_builder_add_boolean_value (b, FALSE);
      json_builder_set_member_name (b, "pos");
      json_builder_begin_array (b);
      json_builder_add_double_value (b, x);
      json_builder_add_double_value (b, y);
      json_builder_end_array (b);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_end_object (b);
  g_ptr_array_free (names, TRUE);
  g_hash_table_unref (members);
  return n_blocks > 0 ? json_builder_get_root (b) : NULL;
}
