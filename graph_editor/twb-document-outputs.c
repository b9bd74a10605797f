/* twb-document-outputs.c — marking the model's outputs (see
 * tw_graph_outputs: the marked references, else the prediction each loss
 * scores).  Each change is one undo step of TWB_PRIM_OUTPUTS. */
#define G_LOG_DOMAIN "twb-document"

#include "graph_editor/twb-document-private.h"

#include <string.h>

/* Does reference `ref` ("fc1", "split:1") name a port of node `id`? */
static gboolean
ref_is_node (const char *ref, const char *id)
{
  g_autofree char *rid = NULL;
  int out;
  return tw_ref_parse (ref, &rid, &out) && strcmp (rid, id) == 0;
}

static gboolean
refs_name_node (const char *const *refs, const char *id)
{
  for (; refs && *refs; refs++)
    if (ref_is_node (*refs, id))
      return TRUE;
  return FALSE;
}

TwbOutputKind
twb_document_output_kind (TwbDocument *doc, const char *id)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), TWB_OUTPUT_NONE);
  const tw_graph *g = doc->model->graph;
  if (id == NULL || !refs_name_node (tw_graph_outputs (g), id))
    return TWB_OUTPUT_NONE;
  return tw_graph_outputs_are_default (g) ? TWB_OUTPUT_DEFAULT : TWB_OUTPUT_MARKED;
}

/* A copy of refs without those of node `id` (NULL: all of them); caller frees. */
static GPtrArray *
refs_without (const char *const *refs, const char *id)
{
  GPtrArray *out = g_ptr_array_new_with_free_func (g_free);
  for (; refs && *refs; refs++)
    if (id == NULL || !ref_is_node (*refs, id))
      g_ptr_array_add (out, g_strdup (*refs));
  return out;
}

gboolean
twb_document_set_output (TwbDocument *doc, const char *id, gboolean output, GError **error)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  const tw_graph *g = doc->model->graph;
  const tw_node *n = tw_graph_find (g, id);
  if (n == NULL)
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_NO_SUCH_NODE, "no node '%s'",
                   id ? id : "");
      return FALSE;
    }
  /* Marking or unmarking starts from the outputs as they are: the losses'
   * predictions stay outputs when a first node is marked beside them. */
  const char *const *now = tw_graph_outputs (g);
  gboolean is_output = refs_name_node (now, id);
  if (output == is_output && (!output || !tw_graph_outputs_are_default (g)))
    return TRUE;
  g_autoptr (GPtrArray) next = refs_without (now, output ? NULL : id);
  if (output && !is_output)
    g_ptr_array_add (next, g_strdup (id));
  else if (!output && next->len == 0 && tw_graph_outputs_are_default (g))
    {
      const tw_node *loss = tw_graph_find_loss (g);
      g_autofree char *who = loss ? g_strdup_printf ("the loss '%s'", loss->id)
                                  : g_strdup ("a loss");
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ID,
                   "%s is the model's only output: it is the prediction %s trains; mark "
                   "another node as an output first",
                   id, who);
      return FALSE;
    }
  g_ptr_array_add (next, NULL);
  g_autofree char *label = g_strdup_printf (output ? "Mark %s as output" : "Unmark output %s",
                                            id);
  twb_document_edit_begin (doc, label);
  twb_document_prim_outputs (doc, (const char *const *) next->pdata);
  twb_document_edit_end (doc);
  return TRUE;
}

gboolean
twb_document_toggle_output (TwbDocument *doc, const char *id, GError **error)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  gboolean is = twb_document_output_kind (doc, id) != TWB_OUTPUT_NONE;
  return twb_document_set_output (doc, id, !is, error);
}

void
twb_document_drop_outputs_of (TwbDocument *doc, GHashTable *gone)
{
  const char *const *marked = tw_graph_marked_outputs (doc->model->graph);
  g_autoptr (GPtrArray) keep = g_ptr_array_new_with_free_func (g_free);
  for (const char *const *r = marked; *r; r++)
    {
      g_autofree char *rid = NULL;
      int out;
      if (!tw_ref_parse (*r, &rid, &out) || !g_hash_table_contains (gone, rid))
        g_ptr_array_add (keep, g_strdup (*r));
    }
  if (keep->len == g_strv_length ((char **) marked))
    return;
  g_ptr_array_add (keep, NULL);
  twb_document_prim_outputs (doc, (const char *const *) keep->pdata);
}
