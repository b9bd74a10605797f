/* onnx-import-layout.c — an imported graph laid out for the canvas: rows by
 * depth, and editor blocks for the repeated stages its ids name. */
#define G_LOG_DOMAIN "tw-onnx"

#include "onnx/onnx-import-private.h"

#include <string.h>

/* Rows by depth from the input: row r at y = 40 + 90 r, nodes of a row
 * side by side 200 apart (the canvas' node is about 160 wide, 60 high). */
void
tw_imp_layout_rows (tw_graph *g)
{
  g_autoptr (GArray) order = NULL;
  if (!tw_graph_topo_order (g, &order, NULL))
    return;
  int n = tw_graph_n_nodes (g);
  g_autofree int *depth = g_new0 (int, n);
  GHashTable *slots = g_hash_table_new (g_direct_hash, g_direct_equal);
  for (guint k = 0; k < order->len; k++)
    {
      int i = g_array_index (order, int, k);
      tw_node *node = tw_graph_node (g, i);
      for (int j = 0; j < node->n_inputs; j++)
        {
          tw_port p = tw_graph_resolve (g, node->inputs[j]);
          if (p.node >= 0)
            depth[i] = MAX (depth[i], depth[p.node] + 1);
        }
      int slot = GPOINTER_TO_INT (g_hash_table_lookup (slots, GINT_TO_POINTER (depth[i])));
      g_hash_table_insert (slots, GINT_TO_POINTER (depth[i]), GINT_TO_POINTER (slot + 1));
      tw_graph_set_pos (g, node, 40 + 200.0 * slot, 40 + 90.0 * depth[i]);
    }
  g_hash_table_unref (slots);
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
  GHashTable *members = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                               (GDestroyNotify) g_ptr_array_unref);
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

