/* twb-document-identity.c — which model a document is, whatever its file is
 * called: an identity kept in the model file's "editor" member as
 * {"model_id": "…"}, so that what belongs to the model (its training runs)
 * follows it through saves, Save As, renames and edits. */
#define G_LOG_DOMAIN "twb-document"

#include "graph_editor/twb-document-private.h"

#define MODEL_ID_MEMBER "model_id"

const char *
twb_document_get_model_id (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), NULL);
  JsonNode *ed = doc->model->editor;
  if (ed == NULL || !JSON_NODE_HOLDS_OBJECT (ed))
    return NULL;
  JsonNode *id = json_object_get_member (json_node_get_object (ed), MODEL_ID_MEMBER);
  if (id == NULL || !JSON_NODE_HOLDS_VALUE (id) || json_node_get_value_type (id) != G_TYPE_STRING)
    return NULL;
  const char *s = json_node_get_string (id);
  return s && *s ? s : NULL;
}

void
twb_document_set_model_id (TwbDocument *doc, const char *id)
{
  g_return_if_fail (TWB_IS_DOCUMENT (doc));
  g_return_if_fail (id != NULL && *id != '\0');
  if (doc->model->editor == NULL || !JSON_NODE_HOLDS_OBJECT (doc->model->editor))
    {
      g_clear_pointer (&doc->model->editor, json_node_unref);
      doc->model->editor = json_node_init_object (json_node_alloc (), json_object_new ());
    }
  json_object_set_string_member (json_node_get_object (doc->model->editor), MODEL_ID_MEMBER, id);
}
