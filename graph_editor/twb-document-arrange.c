/* twb-document-arrange.c — Arrange (Ctrl+L), the layout of a model opened
 * without positions, and what happens to the layout when a block opens or
 * closes.  The layout itself is the engine's (engine/layout.h), the one the
 * ONNX importer uses.
 *
 * A document is "arranged" while its positions are exactly what the layout
 * gives for its blocks and the view it was arranged for (that view is
 * saved in the model file's editor member as "view").  Opening or closing
 * a block of an arranged document lays it out again, so the neighbours of
 * an opened block move aside and a closed one leaves no hole; where the
 * user has moved nodes by hand, opening a block only pushes aside what its
 * frame would cover (tw_layout_make_room) and closing moves nothing. */
#define G_LOG_DOMAIN "twb-document"

#include "graph_editor/twb-document-private.h"

#include <string.h>

void
twb_document_set_view (TwbDocument *doc, const tw_layout_view *view)
{
  g_return_if_fail (TWB_IS_DOCUMENT (doc));
  static const tw_layout_view fallback = TW_LAYOUT_VIEW_DEFAULT;
  gboolean real = view && view->width > 0 && view->height > 0;
  /* The first view a canvas tells, and the first with its minimap (the
   * canvas is allocated before the minimap in its corner). */
  gboolean news = real && (!doc->view_known || (doc->view.map_w <= 0 && view->map_w > 0));
  gboolean differs = real && memcmp (&doc->view, view, sizeof *view) != 0;
  doc->view = real ? *view : fallback;
  doc->view_known = real;
  /* Laid out for the stand-in view as it opened, and untouched since: as
   * it would have opened in this canvas (the fold may open more). */
  if (news && differs && doc->opened_laid_out && doc->undo_stack->len == 0 &&
      doc->redo_stack->len == 0)
    {
      tw_layout_model (doc->model, &doc->view);
      twb_document_blocks_load (doc);
      twb_document_finish (doc, TWB_CHANGE_LAYOUT);
    }
}

gboolean
twb_document_view_is_known (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  return doc->view_known;
}

void
twb_document_get_view (TwbDocument *doc, tw_layout_view *view)
{
  g_return_if_fail (TWB_IS_DOCUMENT (doc));
  *view = doc->view;
}

GPtrArray *
twb_document_layout_blocks (TwbDocument *doc, GPtrArray *blocks)
{
  tw_graph *g = doc->model->graph;
  if (blocks == NULL)
    blocks = doc->blocks;
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) tw_layout_block_free);
  g_autoptr (GArray) idx = g_array_new (FALSE, FALSE, sizeof (int));
  for (guint k = 0; k < blocks->len; k++)
    {
      const TwbBlock *b = g_ptr_array_index (blocks, k);
      g_array_set_size (idx, 0);
      for (int m = 0; b->nodes[m]; m++)
        {
          int i = tw_graph_index_of (g, b->nodes[m]);
          if (i >= 0)
            g_array_append_val (idx, i);
        }
      g_ptr_array_add (
        out, tw_layout_block_new (b->name, (const int *) idx->data, (int) idx->len, b->collapsed));
    }
  return out;
}

GPtrArray *
twb_document_block_boxes (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), NULL);
  GPtrArray *lb = twb_document_layout_blocks (doc, NULL);
  tw_layout_place_blocks (doc->model->graph, (tw_layout_block **) lb->pdata, (int) lb->len);
  return lb;
}

/* Blocks of the document's kind from the layout's. */
static GPtrArray *
blocks_from_layout (TwbDocument *doc, GPtrArray *lb)
{
  tw_graph *g = doc->model->graph;
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) twb_block_free);
  for (guint k = 0; lb && k < lb->len; k++)
    {
      const tw_layout_block *l = g_ptr_array_index (lb, k);
      TwbBlock *b = g_new0 (TwbBlock, 1);
      b->name = g_strdup (l->name);
      b->nodes = g_new0 (char *, l->n_members + 1);
      for (int m = 0; m < l->n_members; m++)
        b->nodes[m] = g_strdup (tw_graph_node (g, l->members[m])->id);
      b->collapsed = l->collapsed;
      g_ptr_array_add (out, b);
    }
  return out;
}

/* The layout for view with the document's blocks, by node index. */
static void
compute (TwbDocument *doc, const tw_layout_view *view, double *xs, double *ys)
{
  g_autoptr (GPtrArray) lb = twb_document_layout_blocks (doc, NULL);
  tw_layout_compute (doc->model->graph, (tw_layout_block **) lb->pdata, (int) lb->len, view, xs,
                     ys);
}

gboolean
twb_document_is_arranged (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  tw_graph *g = doc->model->graph;
  int n = tw_graph_n_nodes (g);
  if (!doc->arranged_valid || n == 0)
    return FALSE;
  g_autofree double *xs = g_new (double, n);
  g_autofree double *ys = g_new (double, n);
  compute (doc, &doc->arranged, xs, ys);
  /* Half a unit: the file's numbers are whole units. */
  for (int i = 0; i < n; i++)
    {
      const tw_node *nd = tw_graph_node (g, i);
      if (!nd->has_pos || ABS (nd->x - xs[i]) > 0.5 || ABS (nd->y - ys[i]) > 0.5)
        return FALSE;
    }
  return TRUE;
}

/* Moves every node to xs, ys (inside an open edit), and remembers the
 * document's view as the arrangement's. */
static void
move_to (TwbDocument *doc, const double *xs, const double *ys)
{
  tw_graph *g = doc->model->graph;
  for (int i = 0; i < tw_graph_n_nodes (g); i++)
    {
      tw_node *nd = tw_graph_node (g, i);
      if (!nd->has_pos || nd->x != xs[i] || nd->y != ys[i])
        twb_document_prim_pos (doc, i, xs[i], ys[i]);
    }
  if (!doc->arranged_valid || memcmp (&doc->arranged, &doc->view, sizeof doc->view) != 0)
    twb_document_prim_arranged (doc, &doc->view);
}

/* The layout for the document's view and blocks (inside an open edit). */
static void
relayout (TwbDocument *doc)
{
  int n = tw_graph_n_nodes (doc->model->graph);
  if (n == 0)
    return;
  g_autofree double *xs = g_new (double, n);
  g_autofree double *ys = g_new (double, n);
  compute (doc, &doc->view, xs, ys);
  move_to (doc, xs, ys);
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
  /* Blocks as they are; none: the graph as it is, or (when that would not
   * read at TW_LAYOUT_READ_ZOOM) the blocks its ids or its shape give. */
  GPtrArray *folded = NULL;
  if (doc->blocks->len > 0)
    compute (doc, &doc->view, xs, ys);
  else if (tw_layout_compute (g, NULL, 0, &doc->view, xs, ys) < TW_LAYOUT_READ_ZOOM)
    {
      g_autoptr (GPtrArray) lb = tw_layout_fold_places (g, &doc->view, xs, ys);
      folded = lb ? blocks_from_layout (doc, lb) : NULL;
    }
  twb_document_edit_begin (doc, "Arrange");
  if (folded)
    twb_document_prim_blocks (doc, folded);
  move_to (doc, xs, ys);
  twb_document_edit_end (doc);
}

void
twb_document_set_blocks (TwbDocument *doc, GPtrArray *blocks, const char *label, const char *opened)
{
  gboolean arranged = twb_document_is_arranged (doc);
  tw_graph *g = doc->model->graph;
  twb_document_edit_begin (doc, label);
  twb_document_prim_blocks (doc, blocks);
  if (arranged)
    relayout (doc);
  else if (opened)
    {
      g_autoptr (GPtrArray) lb = twb_document_layout_blocks (doc, NULL);
      int at = -1;
      for (guint k = 0; k < lb->len; k++)
        if (strcmp (((tw_layout_block *) lb->pdata[k])->name, opened) == 0)
          at = (int) k;
      int n = tw_graph_n_nodes (g);
      g_autofree double *xs = g_new (double, MAX (n, 1));
      g_autofree double *ys = g_new (double, MAX (n, 1));
      for (int i = 0; i < n; i++)
        {
          xs[i] = tw_graph_node (g, i)->x;
          ys[i] = tw_graph_node (g, i)->y;
        }
      if (at >= 0)
        tw_layout_make_room (g, (tw_layout_block **) lb->pdata, (int) lb->len, at, xs, ys);
      for (int i = 0; i < n; i++)
        {
          tw_node *nd = tw_graph_node (g, i);
          if (nd->has_pos && (nd->x != xs[i] || nd->y != ys[i]))
            twb_document_prim_pos (doc, i, xs[i], ys[i]);
        }
    }
  twb_document_edit_end (doc);
}

static gboolean
has_blocks (const tw_model *m)
{
  return m->editor && JSON_NODE_HOLDS_OBJECT (m->editor) &&
         json_object_has_member (json_node_get_object (m->editor), "blocks");
}

/* Files without positions (or blocks) open as an import does
 * (tw_layout_model: the blocks their ids name, folded to read); with
 * blocks, they get the layout for those; nodes without a position in a
 * file that has some go below the others, in layout order. */
void
twb_document_place_unpositioned (TwbDocument *doc)
{
  tw_graph *g = doc->model->graph;
  int n = tw_graph_n_nodes (g);
  if (n <= 0)
    return;
  gboolean some = FALSE, missing = FALSE;
  double max_y = -G_MAXDOUBLE;
  for (int i = 0; i < n; i++)
    {
      tw_node *nd = tw_graph_node (g, i);
      if (!nd->has_pos)
        missing = TRUE;
      else
        {
          double h;
          tw_layout_node_size (nd, NULL, &h);
          max_y = MAX (max_y, nd->y + h);
          some = TRUE;
        }
    }
  if (!missing)
    return;
  if (!some && !has_blocks (doc->model))
    {
      /* Not an edit: the file as it opens. */
      tw_layout_model (doc->model, &doc->view);
      twb_document_blocks_load (doc);
      doc->opened_laid_out = TRUE;
      return;
    }
  g_autofree double *xs = g_new (double, n);
  g_autofree double *ys = g_new (double, n);
  compute (doc, &doc->view, xs, ys);
  for (int i = 0; i < n; i++)
    {
      tw_node *nd = tw_graph_node (g, i);
      if (!nd->has_pos)
        tw_graph_set_pos (g, nd, xs[i], some ? ys[i] + max_y + 80 : ys[i]);
    }
  if (!some)
    {
      doc->arranged = doc->view;
      doc->arranged_valid = TRUE;
    }
}
