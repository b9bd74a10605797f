/* twb-document-blocks.c — blocks: named groups of nodes, collapsed into one
 * box on the canvas.  They live in the editor, not in the graph: collapsing
 * and expanding never changes the graph.  Saved in the model file's
 * "editor" member as {"blocks": [{"name", "nodes", "collapsed", "pos"}]}. */
#define G_LOG_DOMAIN "twb-document"

#include "graph_editor/twb-document-private.h"

#include <math.h>
#include <string.h>

/* Blocks from the model's editor member; malformed entries are skipped (the
 * member is view state: a damaged one costs a grouping, not the model). */
void
twb_document_blocks_load (TwbDocument *doc)
{
  g_ptr_array_set_size (doc->blocks, 0);
  JsonNode *ed = doc->model->editor;
  if (ed == NULL || !JSON_NODE_HOLDS_OBJECT (ed))
    return;
  JsonNode *jb = json_object_get_member (json_node_get_object (ed), "blocks");
  if (jb == NULL || !JSON_NODE_HOLDS_ARRAY (jb))
    return;
  JsonArray *arr = json_node_get_array (jb);
  for (guint i = 0; i < json_array_get_length (arr); i++)
    {
      JsonNode *e = json_array_get_element (arr, i);
      if (!JSON_NODE_HOLDS_OBJECT (e))
        continue;
      JsonObject *o = json_node_get_object (e);
      JsonNode *name = json_object_get_member (o, "name");
      JsonNode *nodes = json_object_get_member (o, "nodes");
      if (name == NULL || json_node_get_value_type (name) != G_TYPE_STRING || nodes == NULL
          || !JSON_NODE_HOLDS_ARRAY (nodes))
        continue;
      TwbBlock *b = g_new0 (TwbBlock, 1);
      b->name = g_strdup (json_node_get_string (name));
      GPtrArray *ids = g_ptr_array_new ();
      JsonArray *na = json_node_get_array (nodes);
      for (guint k = 0; k < json_array_get_length (na); k++)
        {
          JsonNode *id = json_array_get_element (na, k);
          if (JSON_NODE_HOLDS_VALUE (id) && json_node_get_value_type (id) == G_TYPE_STRING
              && tw_graph_find (doc->model->graph, json_node_get_string (id)))
            g_ptr_array_add (ids, g_strdup (json_node_get_string (id)));
        }
      g_ptr_array_add (ids, NULL);
      b->nodes = (char **) g_ptr_array_free (ids, FALSE);
      JsonNode *c = json_object_get_member (o, "collapsed");
      b->collapsed = c && JSON_NODE_HOLDS_VALUE (c) && json_node_get_value_type (c) == G_TYPE_BOOLEAN
                     && json_node_get_boolean (c);
      JsonNode *pos = json_object_get_member (o, "pos");
      if (pos && JSON_NODE_HOLDS_ARRAY (pos) && json_array_get_length (json_node_get_array (pos)) == 2)
        {
          b->x = json_array_get_double_element (json_node_get_array (pos), 0);
          b->y = json_array_get_double_element (json_node_get_array (pos), 1);
        }
      g_ptr_array_add (doc->blocks, b);
    }
}

static void
add_number (JsonArray *a, double v)
{
  if (v == (double) (int64_t) v && fabs (v) < 1e15)
    json_array_add_int_element (a, (int64_t) v);
  else
    json_array_add_double_element (a, v);
}

/* Write the blocks into the model's editor member, keeping its other members. */
void
twb_document_blocks_store (TwbDocument *doc)
{
  JsonObject *obj = json_object_new ();
  JsonNode *old = doc->model->editor;
  if (old && JSON_NODE_HOLDS_OBJECT (old))
    {
      JsonObject *oo = json_node_get_object (old);
      g_autoptr (GList) members = json_object_get_members (oo);
      for (GList *l = members; l; l = l->next)
        if (strcmp (l->data, "blocks") != 0)
          json_object_set_member (obj, l->data, json_node_copy (json_object_get_member (oo, l->data)));
    }
  if (doc->blocks->len > 0)
    {
      JsonArray *arr = json_array_new ();
      for (guint i = 0; i < doc->blocks->len; i++)
        {
          TwbBlock *b = g_ptr_array_index (doc->blocks, i);
          JsonObject *o = json_object_new ();
          json_object_set_string_member (o, "name", b->name);
          JsonArray *ids = json_array_new ();
          for (int k = 0; b->nodes[k]; k++)
            json_array_add_string_element (ids, b->nodes[k]);
          json_object_set_array_member (o, "nodes", ids);
          json_object_set_boolean_member (o, "collapsed", b->collapsed);
          JsonArray *pos = json_array_new ();
          add_number (pos, b->x);
          add_number (pos, b->y);
          json_object_set_array_member (o, "pos", pos);
          json_array_add_object_element (arr, o);
        }
      json_object_set_array_member (obj, "blocks", arr);
    }
  g_clear_pointer (&doc->model->editor, json_node_unref);
  if (json_object_get_size (obj) > 0)
    doc->model->editor = json_node_init_object (json_node_alloc (), obj);
  json_object_unref (obj);
}

GPtrArray *
twb_document_blocks_without (TwbDocument *doc, GHashTable *removed)
{
  gboolean changed = FALSE;
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) twb_block_free);
  for (guint i = 0; i < doc->blocks->len; i++)
    {
      TwbBlock *b = twb_block_copy (g_ptr_array_index (doc->blocks, i));
      int w = 0;
      for (int k = 0; b->nodes[k]; k++)
        {
          if (g_hash_table_contains (removed, b->nodes[k]))
            {
              g_free (b->nodes[k]);
              changed = TRUE;
            }
          else
            b->nodes[w++] = b->nodes[k];
        }
      b->nodes[w] = NULL;
      if (w == 0)
        twb_block_free (b);
      else
        g_ptr_array_add (out, b);
    }
  if (!changed)
    g_clear_pointer (&out, g_ptr_array_unref);
  return out;
}

static TwbBlock *
find_block (TwbDocument *doc, const char *name)
{
  for (guint i = 0; name && i < doc->blocks->len; i++)
    {
      TwbBlock *b = g_ptr_array_index (doc->blocks, i);
      if (strcmp (b->name, name) == 0)
        return b;
    }
  return NULL;
}

gboolean
twb_document_collapse_selection (TwbDocument *doc, const char *name, GError **error)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  g_auto (GStrv) sel = twb_document_get_selection (doc);
  if (sel[0] == NULL)
    {
      g_set_error_literal (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_NO_SUCH_NODE,
                           "select the nodes to collapse first");
      return FALSE;
    }
  if (name == NULL || *name == '\0' || !g_utf8_validate (name, -1, NULL))
    {
      g_set_error_literal (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ID,
                           "a block needs a name");
      return FALSE;
    }
  TwbBlock *existing = find_block (doc, name);
  if (existing && existing->collapsed)
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ID,
                   "there is already a block '%s'", name);
      return FALSE;
    }
  for (int i = 0; sel[i]; i++)
    {
      const char *in = twb_document_block_of (doc, sel[i]);
      if (in)
        {
          g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ID,
                       "%s is already in the collapsed block '%s'", sel[i], in);
          return FALSE;
        }
    }
  /* The selected nodes leave any expanded block they were in. */
  g_autoptr (GHashTable) moving = g_hash_table_new (g_str_hash, g_str_equal);
  for (int i = 0; sel[i]; i++)
    g_hash_table_add (moving, sel[i]);
  GPtrArray *blocks = twb_document_blocks_without (doc, moving);
  if (blocks == NULL)
    blocks = twb_blocks_copy (doc->blocks);
  for (guint i = 0; i < blocks->len; i++)
    if (strcmp (((TwbBlock *) g_ptr_array_index (blocks, i))->name, name) == 0)
      g_ptr_array_remove_index (blocks, i--);
  TwbBlock *b = g_new0 (TwbBlock, 1);
  b->name = g_strdup (name);
  b->nodes = g_strdupv (sel);
  b->collapsed = TRUE;
  b->x = G_MAXDOUBLE;
  b->y = G_MAXDOUBLE;
  for (int i = 0; sel[i]; i++)
    {
      tw_node *n = tw_graph_find (doc->model->graph, sel[i]);
      b->x = MIN (b->x, n->x);
      b->y = MIN (b->y, n->y);
    }
  g_ptr_array_add (blocks, b);
  g_autofree char *label = g_strdup_printf ("Collapse into %s", name);
  twb_document_edit_begin (doc, label);
  twb_document_prim_blocks (doc, blocks);
  twb_document_edit_end (doc);
  return TRUE;
}

static gboolean
set_block (TwbDocument *doc, const char *name, const char *label, gboolean remove,
           gboolean collapsed, double dx, double dy, GError **error)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  if (find_block (doc, name) == NULL)
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_NO_SUCH_NODE, "no block '%s'",
                   name ? name : "(null)");
      return FALSE;
    }
  GPtrArray *blocks = twb_blocks_copy (doc->blocks);
  for (guint i = 0; i < blocks->len; i++)
    {
      TwbBlock *b = g_ptr_array_index (blocks, i);
      if (strcmp (b->name, name) != 0)
        continue;
      if (remove)
        g_ptr_array_remove_index (blocks, i);
      else
        {
          b->collapsed = collapsed;
          b->x += dx;
          b->y += dy;
        }
      break;
    }
  twb_document_edit_begin (doc, label);
  twb_document_prim_blocks (doc, blocks);
  twb_document_edit_end (doc);
  return TRUE;
}

gboolean
twb_document_expand_block (TwbDocument *doc, const char *name, GError **error)
{
  g_autofree char *label = g_strdup_printf ("Expand %s", name);
  return set_block (doc, name, label, FALSE, FALSE, 0, 0, error);
}

gboolean
twb_document_remove_block (TwbDocument *doc, const char *name, GError **error)
{
  g_autofree char *label = g_strdup_printf ("Ungroup %s", name);
  return set_block (doc, name, label, TRUE, FALSE, 0, 0, error);
}

gboolean
twb_document_move_block (TwbDocument *doc, const char *name, double dx, double dy, GError **error)
{
  TwbBlock *b = find_block (doc, name);
  return set_block (doc, name, "Move block", FALSE, b ? b->collapsed : FALSE, dx, dy, error);
}

gboolean
twb_document_rename_block (TwbDocument *doc, const char *name, const char *new_name,
                           GError **error)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  if (find_block (doc, name) == NULL)
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_NO_SUCH_NODE, "no block '%s'",
                   name ? name : "(null)");
      return FALSE;
    }
  if (new_name == NULL || !g_utf8_validate (new_name, -1, NULL))
    new_name = "";
  g_autofree char *clean = g_strstrip (g_strdup (new_name));
  if (clean[0] == '\0')
    {
      g_set_error_literal (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ID,
                           "a block needs a name");
      return FALSE;
    }
  if (strcmp (clean, name) == 0)
    return TRUE;
  /* Blocks and nodes share one namespace on the canvas (a collapsed block
   * is found by its name like a node by its id). */
  if (find_block (doc, clean))
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ID,
                   "there is already a block '%s'", clean);
      return FALSE;
    }
  if (tw_graph_find (doc->model->graph, clean))
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ID,
                   "'%s' is the id of a node; a block needs a name of its own", clean);
      return FALSE;
    }
  GPtrArray *blocks = twb_blocks_copy (doc->blocks);
  for (guint i = 0; i < blocks->len; i++)
    {
      TwbBlock *b = g_ptr_array_index (blocks, i);
      if (strcmp (b->name, name) == 0)
        {
          g_free (b->name);
          b->name = g_strdup (clean);
          break;
        }
    }
  g_autofree char *label = g_strdup_printf ("Rename block %s", name);
  twb_document_edit_begin (doc, label);
  twb_document_prim_blocks (doc, blocks);
  twb_document_edit_end (doc);
  return TRUE;
}

const char *
twb_document_block_of_selection (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), NULL);
  g_auto (GStrv) sel = twb_document_get_selection (doc);
  if (sel == NULL || sel[0] == NULL)
    return NULL;
  const char *block = twb_document_block_of (doc, sel[0]);
  if (block == NULL)
    return NULL;
  TwbBlock *b = find_block (doc, block);
  guint n_sel = g_strv_length (sel);
  if (n_sel != g_strv_length (b->nodes))
    return NULL;
  for (guint i = 0; i < n_sel; i++)
    if (!g_strv_contains ((const char *const *) b->nodes, sel[i]))
      return NULL;
  return b->name;
}

const char *
twb_document_block_of (TwbDocument *doc, const char *id)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), NULL);
  for (guint i = 0; id && i < doc->blocks->len; i++)
    {
      TwbBlock *b = g_ptr_array_index (doc->blocks, i);
      if (b->collapsed && g_strv_contains ((const char *const *) b->nodes, id))
        return b->name;
    }
  return NULL;
}

char **
twb_document_list_blocks (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), NULL);
  char **v = g_new0 (char *, doc->blocks->len + 1);
  for (guint i = 0; i < doc->blocks->len; i++)
    v[i] = g_strdup (((TwbBlock *) g_ptr_array_index (doc->blocks, i))->name);
  return v;
}

gboolean
twb_document_block_is_collapsed (TwbDocument *doc, const char *name)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  TwbBlock *b = find_block (doc, name);
  return b && b->collapsed;
}

char **
twb_document_block_members (TwbDocument *doc, const char *name)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), NULL);
  TwbBlock *b = find_block (doc, name);
  return b ? g_strdupv (b->nodes) : g_new0 (char *, 1);
}

void
twb_document_block_position (TwbDocument *doc, const char *name, double *x, double *y)
{
  g_return_if_fail (TWB_IS_DOCUMENT (doc));
  TwbBlock *b = find_block (doc, name);
  if (x)
    *x = b ? b->x : 0;
  if (y)
    *y = b ? b->y : 0;
}
