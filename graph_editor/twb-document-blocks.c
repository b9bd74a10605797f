/* twb-document-blocks.c — blocks: named groups of nodes, collapsed into one
 * box on the canvas or drawn as a frame around them.  They live in the
 * editor, not in the graph: collapsing and expanding never changes the
 * graph.  Blocks nest (a stage around its residual blocks).  Saved in the
 * model file's "editor" member as {"blocks": [{"name", "nodes",
 * "collapsed", "pos"}], "view": [w, h, map x, y, w, h]} ("pos": the box's
 * top left, written for other readers: it follows from the nodes' places;
 * "view": the canvas the positions were arranged for, see
 * twb-document-arrange.c). */
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
  twb_document_blocks_changed (doc);
  doc->arranged_valid = FALSE;
  JsonNode *ed = doc->model->editor;
  if (ed == NULL || !JSON_NODE_HOLDS_OBJECT (ed))
    return;
  JsonNode *jv = json_object_get_member (json_node_get_object (ed), "view");
  if (jv && JSON_NODE_HOLDS_ARRAY (jv) && json_array_get_length (json_node_get_array (jv)) == 6)
    {
      JsonArray *a = json_node_get_array (jv);
      double v[6];
      gboolean ok = TRUE;
      for (guint k = 0; k < 6; k++)
        {
          JsonNode *e = json_array_get_element (a, k);
          ok &= JSON_NODE_HOLDS_VALUE (e) && (json_node_get_value_type (e) == G_TYPE_DOUBLE
                                              || json_node_get_value_type (e) == G_TYPE_INT64);
          v[k] = ok ? json_node_get_double (e) : 0;
        }
      if (ok && v[0] > 0 && v[1] > 0)
        {
          doc->arranged = (tw_layout_view) { v[0], v[1], v[2], v[3], v[4], v[5] };
          doc->arranged_valid = TRUE;
        }
    }
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
      if (b->nodes[0] == NULL)
        twb_block_free (b);
      else
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
        if (strcmp (l->data, "blocks") != 0 && strcmp (l->data, "view") != 0)
          json_object_set_member (obj, l->data, json_node_copy (json_object_get_member (oo, l->data)));
    }
  if (doc->blocks->len > 0)
    {
      g_autoptr (GPtrArray) boxes = twb_document_block_boxes (doc);
      JsonArray *arr = json_array_new ();
      for (guint i = 0; i < doc->blocks->len; i++)
        {
          TwbBlock *b = g_ptr_array_index (doc->blocks, i);
          const tw_layout_block *box = g_ptr_array_index (boxes, i);
          JsonObject *o = json_object_new ();
          json_object_set_string_member (o, "name", b->name);
          JsonArray *ids = json_array_new ();
          for (int k = 0; b->nodes[k]; k++)
            json_array_add_string_element (ids, b->nodes[k]);
          json_object_set_array_member (o, "nodes", ids);
          json_object_set_boolean_member (o, "collapsed", b->collapsed);
          JsonArray *pos = json_array_new ();
          add_number (pos, box->x);
          add_number (pos, box->y);
          json_object_set_array_member (o, "pos", pos);
          json_array_add_object_element (arr, o);
        }
      json_object_set_array_member (obj, "blocks", arr);
    }
  if (doc->arranged_valid)
    {
      const tw_layout_view *v = &doc->arranged;
      const double vals[] = { v->width, v->height, v->map_x, v->map_y, v->map_w, v->map_h };
      JsonArray *va = json_array_new ();
      for (guint k = 0; k < G_N_ELEMENTS (vals); k++)
        add_number (va, vals[k]);
      json_object_set_array_member (obj, "view", va);
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

void
twb_document_blocks_changed (TwbDocument *doc)
{
  g_clear_pointer (&doc->block_of, g_hash_table_unref);
}

static gboolean
strv_has_all (const char *const *set, const char *const *items)
{
  for (int i = 0; items[i]; i++)
    if (!g_strv_contains (set, items[i]))
      return FALSE;
  return TRUE;
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
  /* A collapsed block goes inside the new one whole (a click on it selects
   * all its nodes), never in part. */
  for (int i = 0; sel[i]; i++)
    {
      const char *in = twb_document_block_of (doc, sel[i]);
      TwbBlock *ib = find_block (doc, in);
      if (ib && !strv_has_all ((const char *const *) sel, (const char *const *) ib->nodes))
        {
          g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ID,
                       "%s is already in the collapsed block '%s'", sel[i], in);
          return FALSE;
        }
    }
  /* Blocks nest or keep apart: one the selection holds whole goes inside
   * the new block, one that holds the selection stays around it; the
   * selected nodes leave any other (expanded) block they were in. */
  g_autoptr (GHashTable) moving = g_hash_table_new (g_str_hash, g_str_equal);
  GPtrArray *blocks = g_ptr_array_new_with_free_func ((GDestroyNotify) twb_block_free);
  for (guint i = 0; i < doc->blocks->len; i++)
    {
      TwbBlock *b = twb_block_copy (g_ptr_array_index (doc->blocks, i));
      if (strcmp (b->name, name) == 0)
        {
          twb_block_free (b);
          continue;
        }
      if (!strv_has_all ((const char *const *) sel, (const char *const *) b->nodes)
          && !strv_has_all ((const char *const *) b->nodes, (const char *const *) sel))
        {
          int w = 0;
          for (int k = 0; b->nodes[k]; k++)
            {
              if (g_strv_contains ((const char *const *) sel, b->nodes[k]))
                g_free (b->nodes[k]);
              else
                b->nodes[w++] = b->nodes[k];
            }
          b->nodes[w] = NULL;
        }
      if (b->nodes[0])
        g_ptr_array_add (blocks, b);
      else
        twb_block_free (b);
    }
  TwbBlock *b = g_new0 (TwbBlock, 1);
  b->name = g_strdup (name);
  b->nodes = g_strdupv (sel);
  b->collapsed = TRUE;
  g_ptr_array_add (blocks, b);
  g_autofree char *label = g_strdup_printf ("Collapse into %s", name);
  twb_document_set_blocks (doc, blocks, label, NULL);
  return TRUE;
}

static gboolean
set_block (TwbDocument *doc, const char *name, const char *label, gboolean remove,
           gboolean collapsed, GError **error)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  if (find_block (doc, name) == NULL)
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_NO_SUCH_NODE, "no block '%s'",
                   name ? name : "(null)");
      return FALSE;
    }
  GPtrArray *blocks = twb_blocks_copy (doc->blocks);
  gboolean opened = FALSE;
  for (guint i = 0; i < blocks->len; i++)
    {
      TwbBlock *b = g_ptr_array_index (blocks, i);
      if (strcmp (b->name, name) != 0)
        continue;
      opened = !remove && b->collapsed && !collapsed;
      if (remove)
        g_ptr_array_remove_index (blocks, i);
      else
        b->collapsed = collapsed;
      break;
    }
  g_autofree char *opened_name = opened ? g_strdup (name) : NULL;
  twb_document_set_blocks (doc, blocks, label, opened_name);
  return TRUE;
}

gboolean
twb_document_expand_block (TwbDocument *doc, const char *name, GError **error)
{
  g_autofree char *label = g_strdup_printf ("Expand %s", name);
  return set_block (doc, name, label, FALSE, FALSE, error);
}

gboolean
twb_document_collapse_block (TwbDocument *doc, const char *name, GError **error)
{
  g_autofree char *label = g_strdup_printf ("Collapse %s", name);
  return set_block (doc, name, label, FALSE, TRUE, error);
}

gboolean
twb_document_remove_block (TwbDocument *doc, const char *name, GError **error)
{
  g_autofree char *label = g_strdup_printf ("Ungroup %s", name);
  return set_block (doc, name, label, TRUE, FALSE, error);
}

gboolean
twb_document_move_block (TwbDocument *doc, const char *name, double dx, double dy, GError **error)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  TwbBlock *b = find_block (doc, name);
  if (b == NULL)
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_NO_SUCH_NODE, "no block '%s'",
                   name ? name : "(null)");
      return FALSE;
    }
  /* Where a block is follows from its nodes. */
  g_auto (GStrv) ids = g_strdupv (b->nodes);
  twb_document_move_nodes (doc, (const char *const *) ids, dx, dy, FALSE);
  return TRUE;
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
twb_document_open_block_of_selection (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), NULL);
  g_auto (GStrv) sel = twb_document_get_selection (doc);
  guint n_sel = sel ? g_strv_length (sel) : 0;
  for (guint i = 0; n_sel > 0 && i < doc->blocks->len; i++)
    {
      TwbBlock *b = g_ptr_array_index (doc->blocks, i);
      if (!b->collapsed && g_strv_length (b->nodes) == n_sel
          && strv_has_all ((const char *const *) b->nodes, (const char *const *) sel))
        return b->name;
    }
  return NULL;
}

const char *
twb_document_block_of (TwbDocument *doc, const char *id)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), NULL);
  if (id == NULL)
    return NULL;
  if (doc->block_of == NULL)
    {
      /* Each node's largest collapsed block: the outermost, blocks nesting. */
      doc->block_of = g_hash_table_new (g_str_hash, g_str_equal);
      g_autoptr (GHashTable) size = g_hash_table_new (g_direct_hash, g_direct_equal);
      for (guint i = 0; i < doc->blocks->len; i++)
        {
          TwbBlock *b = g_ptr_array_index (doc->blocks, i);
          if (!b->collapsed)
            continue;
          guint n = g_strv_length (b->nodes);
          for (int k = 0; b->nodes[k]; k++)
            {
              TwbBlock *had = g_hash_table_lookup (doc->block_of, b->nodes[k]);
              if (had == NULL || GPOINTER_TO_UINT (g_hash_table_lookup (size, had)) < n)
                g_hash_table_insert (doc->block_of, b->nodes[k], b);
            }
          g_hash_table_insert (size, b, GUINT_TO_POINTER (n));
        }
    }
  TwbBlock *b = g_hash_table_lookup (doc->block_of, id);
  return b ? b->name : NULL;
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
  double bx = 0, by = 0;
  g_autoptr (GPtrArray) boxes = twb_document_block_boxes (doc);
  for (guint i = 0; i < boxes->len; i++)
    {
      const tw_layout_block *b = g_ptr_array_index (boxes, i);
      if (g_strcmp0 (b->name, name) == 0)
        {
          bx = b->x;
          by = b->y;
          break;
        }
    }
  if (x)
    *x = bx;
  if (y)
    *y = by;
}
