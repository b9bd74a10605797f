/* twb-document-clipboard.c — copy, paste, duplicate.
 *
 * Clipboard text: {"format": "twb-clipboard", "version": 1, "nodes": [...]}
 * with nodes written as in the model file.  Only edges among the copied
 * nodes are kept; an input from a node left behind is dropped (with every
 * input after it: a model file cannot leave a port in the middle empty). */
#define G_LOG_DOMAIN "twb-document"

#include "graph_editor/twb-document-private.h"
#include "engine/json-text.h"

#include <string.h>

/* Inputs of n kept where keep(id) holds, rewritten through map (may be NULL),
 * cut at the first one that is not kept. */
static char **
kept_inputs (char **inputs, GHashTable *keep, GHashTable *map)
{
  GPtrArray *v = g_ptr_array_new ();
  for (int k = 0; inputs && inputs[k]; k++)
    {
      g_autofree char *id = NULL;
      int out;
      if (!tw_ref_parse (inputs[k], &id, &out) || !g_hash_table_contains (keep, id))
        break;
      const char *to = map ? g_hash_table_lookup (map, id) : NULL;
      if (to == NULL)
        g_ptr_array_add (v, g_strdup (inputs[k]));
      else if (strchr (inputs[k], ':'))
        g_ptr_array_add (v, g_strdup_printf ("%s:%d", to, out));
      else
        g_ptr_array_add (v, g_strdup (to));
    }
  g_ptr_array_add (v, NULL);
  return (char **) g_ptr_array_free (v, FALSE);
}

char *
twb_document_copy_selection (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), NULL);
  g_auto (GStrv) sel = twb_document_get_selection (doc);
  g_autoptr (GHashTable) keep = g_hash_table_new (g_str_hash, g_str_equal);
  for (int i = 0; sel[i]; i++)
    g_hash_table_add (keep, sel[i]);
  g_autoptr (tw_model) m = tw_model_new (NULL);
  for (int i = 0; sel[i]; i++)
    {
      tw_node *n = tw_graph_find (doc->model->graph, sel[i]);
      g_auto (GStrv) inputs = kept_inputs (n->inputs, keep, NULL);
      tw_node *c = tw_graph_add_node (m->graph, n->id, n->op_name, n->attrs,
                                      (const char *const *) inputs, NULL);
      tw_graph_set_share (m->graph, c, n->share);
      c->has_pos = n->has_pos;
      c->x = n->x;
      c->y = n->y;
    }
  g_autofree char *data = tw_model_to_data (m, NULL);
  g_autoptr (JsonParser) parser = json_parser_new ();
  if (!json_parser_load_from_data (parser, data, -1, NULL))
    g_assert_not_reached ();
  JsonObject *graph = json_object_get_object_member (json_node_get_object (json_parser_get_root (parser)),
                                                     "graph");
  JsonNode *nodes = json_object_get_member (graph, "nodes");
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "format");
  json_builder_add_string_value (b, "twb-clipboard");
  json_builder_set_member_name (b, "version");
  json_builder_add_int_value (b, 1);
  json_builder_set_member_name (b, "nodes");
  json_builder_add_value (b, json_node_copy (nodes));
  json_builder_end_object (b);
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  json_generator_set_pretty (gen, TRUE);
  json_generator_set_root (gen, root);
  return json_generator_to_data (gen, NULL);
}

static gboolean
not_clipboard (GError **error, const char *why)
{
  g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_IO,
               "the clipboard does not hold copied nodes (%s)", why);
  return FALSE;
}

gboolean
twb_document_paste (TwbDocument *doc, const char *text, double dx, double dy, GError **error)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  /* Text from any application: held to the rule of every JSON text read
   * (engine/json-text.h; 100,000 nested '[' overflowed json-glib). */
  g_autoptr (JsonParser) parser = text ? tw_json_parse (text, strlen (text), "clipboard", NULL)
                                       : NULL;
  if (parser == NULL)
    return not_clipboard (error, "not JSON");
  JsonNode *root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    return not_clipboard (error, "not a JSON object");
  JsonObject *obj = json_node_get_object (root);
  if (g_strcmp0 (json_object_get_string_member_with_default (obj, "format", ""), "twb-clipboard")
      != 0)
    return not_clipboard (error, "no \"format\": \"twb-clipboard\"");
  if (json_object_get_int_member_with_default (obj, "version", 0) != 1)
    return not_clipboard (error, "a version this build does not read");
  JsonNode *nodes = json_object_get_member (obj, "nodes");
  if (nodes == NULL || !JSON_NODE_HOLDS_ARRAY (nodes))
    return not_clipboard (error, "no \"nodes\" array");

  /* Let the model loader check the nodes. */
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "format");
  json_builder_add_string_value (b, "twb-model");
  json_builder_set_member_name (b, "version");
  json_builder_add_int_value (b, 1);
  json_builder_set_member_name (b, "graph");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "nodes");
  json_builder_add_value (b, json_node_copy (nodes));
  json_builder_end_object (b);
  json_builder_end_object (b);
  g_autoptr (JsonNode) mroot = json_builder_get_root (b);
  g_autofree char *mtext = json_to_string (mroot, FALSE);
  g_autoptr (GError) local = NULL;
  g_autoptr (tw_model) m = tw_model_load_from_data (mtext, -1, "clipboard", &local);
  if (m == NULL)
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_IO, "cannot paste: %s",
                   local->message);
      return FALSE;
    }
  tw_graph *pg = m->graph;
  int np = tw_graph_n_nodes (pg);
  if (np == 0)
    return TRUE;

  /* New ids where the old ones are taken. */
  g_autoptr (GHashTable) keep = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr (GHashTable) map = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, g_free);
  g_autoptr (GHashTable) taken = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr (GHashTable) refs = twb_document_referenced_ids (doc);
  for (int i = 0; i < np; i++)
    {
      tw_node *n = tw_graph_node (pg, i);
      g_hash_table_add (keep, n->id);
      char *id = twb_document_fresh_id (doc, n->id, FALSE, taken, refs);
      g_hash_table_insert (map, n->id, id);
      g_hash_table_add (taken, id);
    }

  tw_graph *g = doc->model->graph;
  int base = tw_graph_n_nodes (g);
  twb_document_edit_begin (doc, np == 1 ? "Paste node" : "Paste nodes");
  g_autoptr (GPtrArray) pasted = g_ptr_array_new ();
  for (int i = 0; i < np; i++)
    {
      tw_node *n = tw_graph_node (pg, i);
      TwbNodeSnap *s = twb_node_snap_new (n);
      g_free (s->id);
      s->id = g_strdup (g_hash_table_lookup (map, n->id));
      g_strfreev (s->inputs);
      s->inputs = kept_inputs (n->inputs, keep, map);
      if (s->share && g_hash_table_contains (map, s->share))
        {
          char *to = g_strdup (g_hash_table_lookup (map, s->share));
          g_free (s->share);
          s->share = to;
        }
      s->has_pos = TRUE;
      s->x = (n->has_pos ? n->x : 0) + dx;
      s->y = (n->has_pos ? n->y : 0) + dy;
      twb_document_prim_insert (doc, base + i, s);
      g_ptr_array_add (pasted, tw_graph_node (g, base + i)->id);
      twb_node_snap_free (s);
    }
  twb_document_edit_end (doc);
  g_ptr_array_add (pasted, NULL);
  twb_document_select (doc, (const char *const *) pasted->pdata, FALSE);
  return TRUE;
}

gboolean
twb_document_duplicate_selection (TwbDocument *doc, GError **error)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  g_autofree char *text = twb_document_copy_selection (doc);
  /* The copy goes into free space beside the original, not on top of it. */
  g_auto (GStrv) sel = twb_document_get_selection (doc);
  double x0 = G_MAXDOUBLE, y0 = G_MAXDOUBLE, x1 = -G_MAXDOUBLE, y1 = -G_MAXDOUBLE;
  for (int i = 0; sel && sel[i]; i++)
    {
      tw_node *n = tw_graph_find (doc->model->graph, sel[i]);
      double w, h;
      twb_document_node_size (doc, sel[i], &w, &h);
      x0 = MIN (x0, n->x);
      y0 = MIN (y0, n->y);
      x1 = MAX (x1, n->x + w);
      y1 = MAX (y1, n->y + h);
    }
  double x = x0 + 40, y = y0 + 40;
  if (x0 != G_MAXDOUBLE)
    twb_document_free_position (doc, x0 + 40, y0 + 40, x1 - x0, y1 - y0, NULL, &x, &y);
  return twb_document_paste (doc, text, x - x0, y - y0, error);
}
