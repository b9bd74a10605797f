/* twb-document-undo.c — the command stack.
 *
 * Every edit is recorded as a list of primitives (insert, remove or replace
 * one node, move one node, set the outputs, the recipe or the blocks), each
 * holding what it changed before and after.  A primitive applies itself when
 * recorded; undo applies the inverses in reverse order, redo replays them.
 * Only the nodes an edit touched are stored, so undoing one edit on a
 * 5,000-node model costs as much as the edit did.
 */
#define G_LOG_DOMAIN "twb-document"

#include "graph_editor/twb-document-private.h"

#include <string.h>

/* ---- Snapshots ------------------------------------------------------------ */

TwbNodeSnap *
twb_node_snap_new (const tw_node *n)
{
  TwbNodeSnap *s = g_new0 (TwbNodeSnap, 1);
  s->id = g_strdup (n->id);
  s->op = g_strdup (n->op_name);
  s->attrs = tw_attrs_copy (n->attrs);
  s->inputs = g_strdupv (n->inputs);
  s->share = g_strdup (n->share);
  s->has_pos = n->has_pos;
  s->x = n->x;
  s->y = n->y;
  return s;
}

TwbNodeSnap *
twb_node_snap_copy (const TwbNodeSnap *o)
{
  TwbNodeSnap *s = g_new0 (TwbNodeSnap, 1);
  s->id = g_strdup (o->id);
  s->op = g_strdup (o->op);
  s->attrs = tw_attrs_copy (o->attrs);
  s->inputs = g_strdupv (o->inputs);
  s->share = g_strdup (o->share);
  s->has_pos = o->has_pos;
  s->x = o->x;
  s->y = o->y;
  return s;
}

void
twb_node_snap_free (TwbNodeSnap *s)
{
  if (s == NULL)
    return;
  g_free (s->id);
  g_free (s->op);
  tw_attrs_free (s->attrs);
  g_strfreev (s->inputs);
  g_free (s->share);
  g_free (s);
}

TwbBlock *
twb_block_copy (const TwbBlock *b)
{
  TwbBlock *c = g_new0 (TwbBlock, 1);
  c->name = g_strdup (b->name);
  c->nodes = g_strdupv (b->nodes);
  c->collapsed = b->collapsed;
  return c;
}

void
twb_block_free (TwbBlock *b)
{
  if (b == NULL)
    return;
  g_free (b->name);
  g_strfreev (b->nodes);
  g_free (b);
}

GPtrArray *
twb_blocks_copy (GPtrArray *blocks)
{
  GPtrArray *c = g_ptr_array_new_with_free_func ((GDestroyNotify) twb_block_free);
  for (guint i = 0; i < blocks->len; i++)
    g_ptr_array_add (c, twb_block_copy (g_ptr_array_index (blocks, i)));
  return c;
}

/* ---- Primitives ------------------------------------------------------------ */

static void
prim_free (TwbPrim *p)
{
  if (p == NULL)
    return;
  twb_node_snap_free (p->before);
  twb_node_snap_free (p->after);
  for (int k = 0; k < 2; k++)
    {
      g_strfreev (p->strv[k]);
      if (p->recipe[k])
        {
          tw_recipe_clear (p->recipe[k]);
          g_free (p->recipe[k]);
        }
      if (p->blocks[k])
        g_ptr_array_unref (p->blocks[k]);
    }
  g_free (p);
}

void
twb_command_free (TwbCommand *c)
{
  if (c == NULL)
    return;
  g_free (c->label);
  g_ptr_array_unref (c->prims);
  g_strfreev (c->move_ids);
  g_free (c);
}

static TwbCommand *
command_new (const char *label)
{
  TwbCommand *c = g_new0 (TwbCommand, 1);
  c->label = g_strdup (label);
  c->prims = g_ptr_array_new_with_free_func ((GDestroyNotify) prim_free);
  return c;
}

void
twb_document_mark_changed (TwbDocument *doc, const char *id)
{
  g_ptr_array_add (doc->changed_ids, g_strdup (id));
  doc->needs_infer = TRUE;
}

static void
set_node_from_snap (TwbDocument *doc, int index, const TwbNodeSnap *s)
{
  tw_graph *g = doc->model->graph;
  tw_node *n = tw_graph_node (g, index);
  if (strcmp (n->id, s->id) != 0)
    {
      twb_document_mark_changed (doc, n->id);
      tw_graph_remove_node_at (g, index);
      n = tw_graph_insert_node (g, index, s->id, s->op, s->attrs,
                                (const char *const *) s->inputs, NULL);
      g_assert (n != NULL);
    }
  else
    {
      if (g_strcmp0 (n->op_name, s->op) != 0)
        {
          g_free (n->op_name);
          n->op_name = g_strdup (s->op);
          n->op = tw_op_lookup (s->op);
        }
      tw_attrs_free (n->attrs);
      n->attrs = tw_attrs_copy (s->attrs);
      g_strfreev (n->inputs);
      n->inputs = g_strdupv (s->inputs);
      n->n_inputs = (int) g_strv_length (n->inputs);
    }
  tw_graph_set_share (g, n, s->share);
  n->has_pos = s->has_pos;
  n->x = s->x;
  n->y = s->y;
  twb_document_mark_changed (doc, s->id);
}

static void
insert_snap (TwbDocument *doc, int index, const TwbNodeSnap *s)
{
  tw_graph *g = doc->model->graph;
  tw_node *n = tw_graph_insert_node (g, index, s->id, s->op, s->attrs,
                                     (const char *const *) s->inputs, NULL);
  g_assert (n != NULL);
  tw_graph_set_share (g, n, s->share);
  n->has_pos = s->has_pos;
  n->x = s->x;
  n->y = s->y;
  twb_document_mark_changed (doc, s->id);
}

static void
remove_at (TwbDocument *doc, int index)
{
  tw_node *n = tw_graph_node (doc->model->graph, index);
  twb_document_mark_changed (doc, n->id);
  g_hash_table_remove (doc->selection, n->id);
  tw_graph_remove_node_at (doc->model->graph, index);
}

static void
set_recipe (TwbDocument *doc, const tw_recipe *r)
{
  tw_recipe_clear (&doc->model->recipe);
  tw_recipe_copy (&doc->model->recipe, r);
  /* The loss training minimises is the recipe's, kept on the graph. */
  tw_graph_set_loss (doc->model->graph, r->loss);
}

static tw_recipe *
recipe_dup (const tw_recipe *r)
{
  tw_recipe *c = g_new0 (tw_recipe, 1);
  tw_recipe_copy (c, r);
  return c;
}

/* Apply p forward (redo) or backward (undo). */
static guint
prim_apply (TwbDocument *doc, TwbPrim *p, gboolean forward)
{
  int k = forward ? 1 : 0;
  switch (p->kind)
    {
    case TWB_PRIM_INSERT:
    case TWB_PRIM_REMOVE:
      if ((p->kind == TWB_PRIM_INSERT) == forward)
        insert_snap (doc, p->index, p->after ? p->after : p->before);
      else
        remove_at (doc, p->index);
      return TWB_CHANGE_STRUCTURE;
    case TWB_PRIM_REPLACE:
      set_node_from_snap (doc, p->index, forward ? p->after : p->before);
      return TWB_CHANGE_STRUCTURE | TWB_CHANGE_ATTRS | TWB_CHANGE_LAYOUT;
    case TWB_PRIM_POS:
      {
        tw_node *n = tw_graph_node (doc->model->graph, p->index);
        n->has_pos = p->had_pos[k];
        n->x = p->pos[k][0];
        n->y = p->pos[k][1];
        return TWB_CHANGE_LAYOUT;
      }
    case TWB_PRIM_OUTPUTS:
      tw_graph_set_outputs (doc->model->graph, (const char *const *) p->strv[k]);
      doc->needs_infer = TRUE;
      return TWB_CHANGE_STRUCTURE;
    case TWB_PRIM_RECIPE:
      set_recipe (doc, p->recipe[k]);
      return TWB_CHANGE_RECIPE;
    case TWB_PRIM_BLOCKS:
      g_ptr_array_unref (doc->blocks);
      doc->blocks = twb_blocks_copy (p->blocks[k]);
      twb_document_blocks_changed (doc);
      return TWB_CHANGE_LAYOUT;
    case TWB_PRIM_ARRANGED:
      doc->arranged_valid = p->had_pos[k];
      doc->arranged = p->view[k];
      return TWB_CHANGE_LAYOUT;
    }
  g_assert_not_reached ();
}

static void
record (TwbDocument *doc, TwbPrim *p)
{
  g_assert (doc->current != NULL);
  doc->pending_flags |= prim_apply (doc, p, TRUE);
  g_ptr_array_add (doc->current->prims, p);
}

void
twb_document_prim_insert (TwbDocument *doc, int index, const TwbNodeSnap *snap)
{
  TwbPrim *p = g_new0 (TwbPrim, 1);
  p->kind = TWB_PRIM_INSERT;
  p->index = index;
  p->after = twb_node_snap_copy (snap);
  record (doc, p);
}

void
twb_document_prim_remove (TwbDocument *doc, int index)
{
  TwbPrim *p = g_new0 (TwbPrim, 1);
  p->kind = TWB_PRIM_REMOVE;
  p->index = index;
  p->before = twb_node_snap_new (tw_graph_node (doc->model->graph, index));
  record (doc, p);
}

void
twb_document_prim_replace (TwbDocument *doc, int index, const TwbNodeSnap *snap)
{
  TwbPrim *p = g_new0 (TwbPrim, 1);
  p->kind = TWB_PRIM_REPLACE;
  p->index = index;
  p->before = twb_node_snap_new (tw_graph_node (doc->model->graph, index));
  p->after = twb_node_snap_copy (snap);
  record (doc, p);
}

void
twb_document_prim_pos (TwbDocument *doc, int index, double x, double y)
{
  tw_node *n = tw_graph_node (doc->model->graph, index);
  TwbPrim *p = g_new0 (TwbPrim, 1);
  p->kind = TWB_PRIM_POS;
  p->index = index;
  p->had_pos[0] = n->has_pos;
  p->pos[0][0] = n->x;
  p->pos[0][1] = n->y;
  p->had_pos[1] = TRUE;
  p->pos[1][0] = x;
  p->pos[1][1] = y;
  record (doc, p);
}

void
twb_document_prim_outputs (TwbDocument *doc, const char *const *refs)
{
  TwbPrim *p = g_new0 (TwbPrim, 1);
  p->kind = TWB_PRIM_OUTPUTS;
  p->strv[0] = g_strdupv ((char **) tw_graph_marked_outputs (doc->model->graph));
  p->strv[1] = g_strdupv ((char **) (refs ? refs : (const char *const[]) { NULL }));
  record (doc, p);
}

void
twb_document_prim_recipe (TwbDocument *doc, const tw_recipe *recipe)
{
  TwbPrim *p = g_new0 (TwbPrim, 1);
  p->kind = TWB_PRIM_RECIPE;
  p->recipe[0] = recipe_dup (&doc->model->recipe);
  p->recipe[1] = recipe_dup (recipe);
  record (doc, p);
}

void
twb_document_prim_blocks (TwbDocument *doc, GPtrArray *blocks)
{
  TwbPrim *p = g_new0 (TwbPrim, 1);
  p->kind = TWB_PRIM_BLOCKS;
  p->blocks[0] = twb_blocks_copy (doc->blocks);
  p->blocks[1] = blocks;
  record (doc, p);
}

void
twb_document_prim_arranged (TwbDocument *doc, const tw_layout_view *view)
{
  TwbPrim *p = g_new0 (TwbPrim, 1);
  p->kind = TWB_PRIM_ARRANGED;
  p->had_pos[0] = doc->arranged_valid;
  p->view[0] = doc->arranged;
  p->had_pos[1] = view != NULL;
  if (view)
    p->view[1] = *view;
  record (doc, p);
}

/* ---- Commands ---------------------------------------------------------- */

void
twb_document_edit_begin (TwbDocument *doc, const char *label)
{
  g_assert (doc->current == NULL);
  doc->current = command_new (label);
}

static void
clear_redo (TwbDocument *doc)
{
  g_ptr_array_set_size (doc->redo_stack, 0);
  /* A saved state that was only reachable by redo is gone for good. */
}

void
twb_document_edit_end (TwbDocument *doc)
{
  TwbCommand *c = g_steal_pointer (&doc->current);
  guint flags = doc->pending_flags;
  if (c->prims->len == 0)
    {
      twb_command_free (c);
      twb_document_finish (doc, flags);
      return;
    }
  clear_redo (doc);
  if (doc->group)
    {
      for (guint i = 0; i < c->prims->len; i++)
        g_ptr_array_add (doc->group->prims, g_steal_pointer (&c->prims->pdata[i]));
      g_ptr_array_set_size (c->prims, 0);
      twb_command_free (c);
      doc->merge_target = NULL;
    }
  else
    {
      c->serial = ++doc->next_serial;
      g_ptr_array_add (doc->undo_stack, c);
      doc->merge_target = c->move_ids ? c : NULL;
    }
  twb_document_finish (doc, flags);
}

void
twb_document_begin_group (TwbDocument *doc, const char *label)
{
  g_return_if_fail (TWB_IS_DOCUMENT (doc));
  if (doc->group_depth++ == 0)
    doc->group = command_new (label);
}

void
twb_document_end_group (TwbDocument *doc)
{
  g_return_if_fail (TWB_IS_DOCUMENT (doc));
  g_return_if_fail (doc->group_depth > 0);
  if (--doc->group_depth > 0)
    return;
  TwbCommand *c = g_steal_pointer (&doc->group);
  if (c->prims->len == 0)
    {
      twb_command_free (c);
      return;
    }
  c->serial = ++doc->next_serial;
  g_ptr_array_add (doc->undo_stack, c);
  doc->merge_target = NULL;
  twb_document_finish (doc, 0);
}

/* Moves of the same nodes join the last move while a drag goes on. */
gboolean
twb_document_merge_move (TwbDocument *doc, const char *const *ids, double dx, double dy)
{
  TwbCommand *c = doc->merge_target;
  if (c == NULL || doc->group || doc->undo_stack->len == 0
      || g_ptr_array_index (doc->undo_stack, doc->undo_stack->len - 1) != c
      || !g_strv_equal ((const char *const *) c->move_ids, ids))
    return FALSE;
  for (guint i = 0; i < c->prims->len; i++)
    {
      TwbPrim *p = g_ptr_array_index (c->prims, i);
      p->pos[1][0] += dx;
      p->pos[1][1] += dy;
      prim_apply (doc, p, TRUE);
    }
  twb_document_finish (doc, TWB_CHANGE_LAYOUT);
  return TRUE;
}

gboolean
twb_document_undo (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  g_return_val_if_fail (doc->group_depth == 0 && doc->current == NULL, FALSE);
  if (doc->undo_stack->len == 0)
    return FALSE;
  TwbCommand *c = g_ptr_array_steal_index (doc->undo_stack, doc->undo_stack->len - 1);
  guint flags = 0;
  for (guint i = c->prims->len; i-- > 0;)
    flags |= prim_apply (doc, g_ptr_array_index (c->prims, i), FALSE);
  g_ptr_array_add (doc->redo_stack, c);
  doc->merge_target = NULL;
  twb_document_finish (doc, flags);
  return TRUE;
}

gboolean
twb_document_redo (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  g_return_val_if_fail (doc->group_depth == 0 && doc->current == NULL, FALSE);
  if (doc->redo_stack->len == 0)
    return FALSE;
  TwbCommand *c = g_ptr_array_steal_index (doc->redo_stack, doc->redo_stack->len - 1);
  guint flags = 0;
  for (guint i = 0; i < c->prims->len; i++)
    flags |= prim_apply (doc, g_ptr_array_index (c->prims, i), TRUE);
  g_ptr_array_add (doc->undo_stack, c);
  doc->merge_target = NULL;
  twb_document_finish (doc, flags);
  return TRUE;
}

gboolean
twb_document_can_undo (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  return doc->undo_stack->len > 0;
}

gboolean
twb_document_can_redo (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  return doc->redo_stack->len > 0;
}

const char *
twb_document_undo_label (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), NULL);
  if (doc->undo_stack->len == 0)
    return NULL;
  return ((TwbCommand *) g_ptr_array_index (doc->undo_stack, doc->undo_stack->len - 1))->label;
}

const char *
twb_document_redo_label (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), NULL);
  if (doc->redo_stack->len == 0)
    return NULL;
  return ((TwbCommand *) g_ptr_array_index (doc->redo_stack, doc->redo_stack->len - 1))->label;
}
