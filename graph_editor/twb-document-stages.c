/* twb-document-stages.c — the pipeline stages the canvas paints: each
 * node's, by the engine's own placement (tw_pipeline_assign_stages_full),
 * and the error that placement would stop a run with. */
#define G_LOG_DOMAIN "twb-document"

#include "graph_editor/twb-document-private.h"
#include "engine/train.h"

#include <string.h>

void
twb_document_stages_invalidate (TwbDocument *doc)
{
  doc->stages_valid = FALSE;
  doc->n_stages = 0;
  g_clear_pointer (&doc->stage_of, g_free);
  doc->stage_of_len = 0;
  g_clear_pointer (&doc->stage_error, g_free);
  g_clear_pointer (&doc->stage_error_node, g_free);
}

/* How many stages: those asked for, else one past the highest "stage"
 * given (every integer one counts; a negative or a non-integer one is
 * the placement's error); 0 when no node has a stage and none is asked. */
static int
stages_wanted (TwbDocument *doc, const tw_graph *g)
{
  if (doc->pipeline_stages > 0)
    return doc->pipeline_stages;
  gboolean any = FALSE;
  int64_t top = 0;
  for (int i = 0; i < tw_graph_n_nodes (g); i++)
    {
      const tw_node *n = tw_graph_node (g, i);
      const tw_attr_value *v = n->attrs ? tw_attrs_lookup (n->attrs, "stage") : NULL;
      if (v == NULL || (n->op && (n->op->flags & TW_OP_SOURCE)))
        continue;
      any = TRUE;
      if (v->type == TW_ATTR_INT && v->i >= top)
        top = v->i + 1;
    }
  /* The cap only keeps a typo (stage 100000) from asking for that many
   * stages: the placement then names the node. */
  return any ? (int) CLAMP (top, 1, MAX (tw_graph_n_nodes (g), 1)) : 0;
}

static void
compute (TwbDocument *doc)
{
  if (doc->stages_valid)
    return;
  twb_document_stages_invalidate (doc);
  doc->stages_valid = TRUE;
  const tw_graph *g = twb_document_get_graph (doc);
  int want = stages_wanted (doc, g);
  int nn = tw_graph_n_nodes (g);
  if (want == 0 || nn == 0)
    return;
  /* Automatic placement balances FLOPs: it needs the shapes. */
  const GArray *diags = tw_graph_diagnostics (g);
  if (diags && diags->len > 0)
    return;
  doc->stage_of = g_new0 (int, nn);
  doc->stage_of_len = nn;
  int bad = -1;
  g_autoptr (GError) error = NULL;
  if (!tw_pipeline_assign_stages_full (g, want, doc->stage_of, &bad, &error))
    {
      g_clear_pointer (&doc->stage_of, g_free);
      doc->stage_of_len = 0;
      doc->stage_error = g_strdup (error->message);
      if (bad >= 0)
        {
          /* "node fc3: stage -1 …": the Issues and the inspector name the node already. */
          const char *id = tw_graph_node (g, bad)->id;
          g_autofree char *prefix = g_strdup_printf ("node %s: ", id);
          if (g_str_has_prefix (doc->stage_error, prefix))
            {
              char *rest = g_strdup (doc->stage_error + strlen (prefix));
              g_free (doc->stage_error);
              doc->stage_error = rest;
            }
          doc->stage_error_node = g_strdup (id);
        }
      return;
    }
  doc->n_stages = want;
}

void
twb_document_set_pipeline_stages (TwbDocument *doc, int n_stages)
{
  g_return_if_fail (TWB_IS_DOCUMENT (doc));
  n_stages = MAX (n_stages, 0);
  if (n_stages == doc->pipeline_stages)
    return;
  doc->pipeline_stages = n_stages;
  twb_document_stages_invalidate (doc);
  twb_document_finish (doc, TWB_CHANGE_STAGES);
}

int
twb_document_get_pipeline_stages (TwbDocument *doc)
{
  return doc->pipeline_stages;
}

int
twb_document_get_n_stages (TwbDocument *doc)
{
  compute (doc);
  return doc->n_stages;
}

int
twb_document_get_node_stage (TwbDocument *doc, const char *id)
{
  compute (doc);
  if (doc->stage_of == NULL || id == NULL)
    return -1;
  return twb_document_get_node_stage_at (doc, tw_graph_index_of (twb_document_get_graph (doc), id));
}

int
twb_document_get_node_stage_at (TwbDocument *doc, int graph_index)
{
  compute (doc);
  if (doc->stage_of == NULL || graph_index < 0 || graph_index >= doc->stage_of_len)
    return -1;
  return doc->stage_of[graph_index];
}

const char *
twb_document_get_stage_error (TwbDocument *doc, const char **node_id)
{
  compute (doc);
  if (node_id)
    *node_id = doc->stage_error_node;
  return doc->stage_error;
}
