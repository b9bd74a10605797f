/* twb-document-recovery.c — autosave to a recovery file.
 *
 * One file per document in $XDG_STATE_HOME/twb/recovery/: named after a
 * hash of the document's path, or a random id while it has none; written
 * atomically (engine/fileutil.h: a temporary file renamed over it);
 * removed on a clean save or close.  The original path is kept in the
 * file's "editor" member as "recovery_of". */
#define G_LOG_DOMAIN "twb-document"

#include "graph_editor/twb-document-private.h"
#include "engine/fileutil.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>

static char *
recovery_dir (void)
{
  return g_build_filename (g_get_user_state_dir (), "twb", "recovery", NULL);
}

static char *
recovery_file_for (TwbDocument *doc)
{
  g_autofree char *dir = recovery_dir ();
  if (doc->path == NULL)
    return g_build_filename (dir, doc->recovery_name, NULL);
  g_autofree char *hash = g_compute_checksum_for_string (G_CHECKSUM_SHA1, doc->path, -1);
  g_autofree char *name = g_strdup_printf ("file-%.16s.json", hash);
  return g_build_filename (dir, name, NULL);
}

gboolean
twb_document_autosave (TwbDocument *doc, GError **error)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  g_autofree char *dir = recovery_dir ();
  g_autofree char *file = recovery_file_for (doc);
  if (g_mkdir_with_parents (dir, 0700) != 0)
    {
      int e = errno;
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_IO, "%s: %s", dir,
                   g_strerror (e));
      return FALSE;
    }
  /* The saved text, with the original path in the editor member. */
  twb_document_blocks_store (doc);
  JsonNode *saved = doc->model->editor;
  JsonObject *ed = json_object_new ();
  if (saved && JSON_NODE_HOLDS_OBJECT (saved))
    {
      JsonObject *o = json_node_get_object (saved);
      g_autoptr (GList) members = json_object_get_members (o);
      for (GList *l = members; l; l = l->next)
        json_object_set_member (ed, l->data, json_node_copy (json_object_get_member (o, l->data)));
    }
  if (doc->path)
    json_object_set_string_member (ed, "recovery_of", doc->path);
  else
    json_object_set_null_member (ed, "recovery_of");
  doc->model->editor = json_node_init_object (json_node_alloc (), ed);
  json_object_unref (ed);
  g_autofree char *data = tw_model_to_data (doc->model, NULL);
  json_node_unref (doc->model->editor);
  doc->model->editor = saved;

  g_autoptr (GError) local = NULL;
  /* Recovery files hold the user's work: 0600 when new. */
  if (!tw_file_save_mode (file, data, strlen (data), 0600, &local))
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_IO, "%s", local->message);
      return FALSE;
    }
  if (doc->recovery_file && strcmp (doc->recovery_file, file) != 0)
    g_unlink (doc->recovery_file);
  g_free (doc->recovery_file);
  doc->recovery_file = g_steal_pointer (&file);
  return TRUE;
}

void
twb_document_discard_recovery (TwbDocument *doc)
{
  g_return_if_fail (TWB_IS_DOCUMENT (doc));
  if (doc->recovery_file)
    g_unlink (doc->recovery_file);
  g_clear_pointer (&doc->recovery_file, g_free);
}

const char *
twb_document_get_recovery_file (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), NULL);
  return doc->recovery_file;
}

typedef struct
{
  char *path;
  gint64 mtime;
} entry;

static int
cmp_newest (gconstpointer a, gconstpointer b)
{
  const entry *x = a, *y = b;
  return x->mtime < y->mtime ? 1 : x->mtime > y->mtime ? -1 : strcmp (x->path, y->path);
}

char **
twb_document_list_recovery_files (void)
{
  g_autofree char *dir = recovery_dir ();
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  g_autoptr (GArray) found = g_array_new (FALSE, FALSE, sizeof (entry));
  for (const char *name; d && (name = g_dir_read_name (d));)
    {
      if (!g_str_has_suffix (name, ".json"))
        continue;
      entry e = { g_build_filename (dir, name, NULL), 0 };
      GStatBuf st;
      if (g_stat (e.path, &st) == 0)
        e.mtime = (gint64) st.st_mtime;
      g_array_append_val (found, e);
    }
  g_array_sort (found, cmp_newest);
  char **v = g_new0 (char *, found->len + 1);
  for (guint i = 0; i < found->len; i++)
    v[i] = g_array_index (found, entry, i).path;
  return v;
}

TwbDocument *
twb_document_new_from_recovery (const char *file, GError **error)
{
  g_return_val_if_fail (file != NULL, NULL);
  g_autoptr (GError) local = NULL;
  tw_model *m = tw_model_load (file, &local);
  if (m == NULL)
    {
      g_set_error_literal (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_IO, local->message);
      return NULL;
    }
  char *original = NULL;
  if (m->editor && JSON_NODE_HOLDS_OBJECT (m->editor))
    {
      JsonObject *o = json_node_get_object (m->editor);
      JsonObject *copy = json_object_new ();
      g_autoptr (GList) members = json_object_get_members (o);
      for (GList *l = members; l; l = l->next)
        if (strcmp (l->data, "recovery_of") != 0)
          json_object_set_member (copy, l->data, json_node_copy (json_object_get_member (o, l->data)));
      JsonNode *ro = json_object_get_member (o, "recovery_of");
      if (ro && JSON_NODE_HOLDS_VALUE (ro) && json_node_get_value_type (ro) == G_TYPE_STRING)
        original = g_strdup (json_node_get_string (ro));
      json_node_unref (m->editor);
      m->editor = json_object_get_size (copy) ? json_node_init_object (json_node_alloc (), copy) : NULL;
      json_object_unref (copy);
    }
  TwbDocument *doc = twb_document_new_for_model (m);
  doc->path = original;
  doc->recovery_file = g_strdup (file);
  doc->saved_serial = G_MAXUINT64;    /* unsaved until saved */
  doc->n_dirty = TRUE;
  return doc;
}
