/* twb-window-onnx.c — ONNX files in the window: File ▸ Import ONNX… (and
 * `twb MODEL.onnx`) opens an imported model as a new, unsaved document
 * whose runs start from the file's weights; File ▸ Export ONNX… writes the
 * inference graph with the weights runs would use.
 *
 * Actions: win.import-onnx (a file chooser), win.import-onnx-path (s),
 * win.export-onnx (a save dialog with the opset), win.export-onnx-to (s:
 * the path, opset 17, the batch dimension symbolic). */
#define G_LOG_DOMAIN "twb-window"

#include "engine/safetensors.h"
#include "graph_editor/twb-document-private.h"
#include "onnx/onnx-export.h"
#include "onnx/onnx-import.h"
#include "ui/twb-window-private.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- Import -------------------------------------------------------------------- */

typedef struct
{
  char *path;
  tw_model *model;
  GHashTable *weights;
  char *weights_file; /* the weights, written on the worker for runs to start from */
  tw_layout_view view; /* the canvas the imported graph is laid out for */
} ImportJob;

static void
import_job_free (ImportJob *j)
{
  g_free (j->path);
  g_clear_pointer (&j->model, tw_model_free);
  g_clear_pointer (&j->weights, g_hash_table_unref);
  if (j->weights_file)
    g_unlink (j->weights_file);
  g_free (j->weights_file);
  g_free (j);
}

/* The imported weights in the user's cache, until the model is saved
 * (then they go beside it). */
static char *
cache_weights_file (const char *model_name, GError **error)
{
  g_autofree char *dir = g_build_filename (g_get_user_cache_dir (), "twb", "imported", NULL);
  if (g_mkdir_with_parents (dir, 0700) != 0)
    {
      int e = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "%s: %s", dir, g_strerror (e));
      return NULL;
    }
  g_autofree char *tmpl = g_strdup_printf ("%s-XXXXXX.safetensors", model_name);
  g_autofree char *path = g_build_filename (dir, tmpl, NULL);
  int fd = g_mkstemp_full (path, O_RDWR, 0600);
  if (fd < 0)
    {
      int e = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "%s: %s", path,
                   g_strerror (e));
      return NULL;
    }
  close (fd);
  return g_steal_pointer (&path);
}

static void
import_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancel)
{
  ImportJob *j = data;
  GError *error = NULL;
  GHashTable *weights = NULL;
  /* A loss where the output is [N, C], so that Train works as it is. */
  tw_onnx_import_options opts = { .loss = TW_ONNX_LOSS_AUTO, .view = &j->view };
  tw_model *m = tw_onnx_import_with (j->path, &opts, &weights, &error);
  if (m)
    {
      j->weights_file = cache_weights_file (m->name ? m->name : "imported", &error);
      g_autoptr (GHashTable) meta = g_hash_table_new (g_str_hash, g_str_equal);
      g_hash_table_insert (meta, "source", j->path);
      if (j->weights_file == NULL || !tw_safetensors_save (j->weights_file, weights, meta, &error))
        g_clear_pointer (&m, tw_model_free);
    }
  if (m == NULL)
    {
      g_clear_pointer (&weights, g_hash_table_unref);
      g_task_return_error (task, error);
      return;
    }
  j->model = m;
  j->weights = weights;
  g_task_return_boolean (task, TRUE);
}

/* The window's imported weights: dropped (and their cache file removed). */
static void
clear_imported (TwbWindow *self)
{
  g_clear_pointer (&self->onnx_weights, g_hash_table_unref);
  g_clear_pointer (&self->onnx_source, g_free);
  if (self->onnx_weights_file)
    {
      if (g_strcmp0 (self->init_weights, self->onnx_weights_file) == 0)
        g_clear_pointer (&self->init_weights, g_free);
      g_unlink (self->onnx_weights_file);
      g_clear_pointer (&self->onnx_weights_file, g_free);
    }
}

static void
import_done (GObject *source, GAsyncResult *res, gpointer data)
{
  TwbWindow *self = TWB_WINDOW (source);
  ImportJob *j = g_task_get_task_data (G_TASK (res));
  g_autoptr (GError) error = NULL;
  self->loading--;
  if (gtk_window_get_application (GTK_WINDOW (self)) == NULL)
    return; /* closed meanwhile: nothing to show it in */
  if (!g_task_propagate_boolean (G_TASK (res), &error))
    {
      twb_window_show_toast (self, error->message);
      return;
    }
  int n_nodes = tw_graph_n_nodes (j->model->graph);
  /* The canvas got its size while the file was read (`twb FILE.onnx`
   * imports as the window opens): laid out again for that. */
  tw_layout_view now = j->view;
  if (self->doc)
    twb_document_get_view (self->doc, &now);
  if (memcmp (&now, &j->view, sizeof now) != 0)
    tw_layout_model (j->model, &now);
  g_autoptr (TwbDocument) doc = twb_document_new_for_model (g_steal_pointer (&j->model));
  /* New and unsaved: Save asks for a model file name. */
  doc->saved_serial = G_MAXUINT64;
  twb_document_finish (doc, 0);

  TwbWindow *w = self;
  if (!(self->doc && twb_document_get_path (self->doc) == NULL &&
        !twb_document_get_dirty (self->doc) &&
        tw_graph_n_nodes (twb_document_get_graph (self->doc)) == 0))
    {
      w = TWB_WINDOW (twb_window_new (gtk_window_get_application (GTK_WINDOW (self)), NULL));
      gtk_window_present (GTK_WINDOW (w));
    }
  clear_imported (w);
  twb_window_set_document (w, doc);
  w->onnx_weights = g_steal_pointer (&j->weights);
  w->onnx_weights_file = g_steal_pointer (&j->weights_file);
  w->onnx_source = g_strdup (j->path);
  g_free (w->init_weights);
  w->init_weights = g_strdup (w->onnx_weights_file);
  g_autofree char *base = g_path_get_basename (j->path);
  g_autofree char *msg = g_strdup_printf ("Imported %s: %d nodes, %u weight tensors; runs "
                                          "start from its weights (Save keeps them beside "
                                          "the model)",
                                          base, n_nodes, g_hash_table_size (w->onnx_weights));
  twb_window_show_toast (w, msg);
}

void
twb_window_import_onnx (TwbWindow *self, const char *path)
{
  ImportJob *j = g_new0 (ImportJob, 1);
  j->path = g_strdup (path);
  /* The window's canvas, as its document knows it. */
  static const tw_layout_view fallback = TW_LAYOUT_VIEW_DEFAULT;
  j->view = fallback;
  if (self->doc)
    twb_document_get_view (self->doc, &j->view);
  g_autoptr (GTask) task = g_task_new (self, NULL, import_done, NULL);
  g_task_set_task_data (task, j, (GDestroyNotify) import_job_free);
  self->loading++;
  twb_window_show_toast (self, "Importing…");
  g_task_run_in_thread (task, import_thread);
}

gboolean
twb_window_save_imported_weights (TwbWindow *self, const char *model_path, GError **error)
{
  if (self->onnx_weights == NULL)
    return TRUE;
  g_autofree char *wpath = tw_onnx_weights_path_for (model_path);
  g_autoptr (GHashTable) meta = g_hash_table_new (g_str_hash, g_str_equal);
  if (!tw_safetensors_save (wpath, self->onnx_weights, meta, error))
    return FALSE;
  clear_imported (self);
  g_free (self->init_weights);
  self->init_weights = g_steal_pointer (&wpath);
  return TRUE;
}

void
twb_window_onnx_dispose (TwbWindow *self)
{
  clear_imported (self);
}

/* ---- Export -------------------------------------------------------------------- */

gboolean
twb_window_export_onnx_to (TwbWindow *self, const char *path, int opset, GError **error)
{
  const tw_model *m = twb_document_get_model (self->doc);
  /* The weights a run would use now: the last run's (when it is not
   * training), else those runs start from, else a fresh initialisation. */
  g_autofree char *tmp = NULL;
  const char *weights = self->init_weights;
  if (self->run && twb_run_get_state (self->run) != TW_SESSION_RUNNING)
    {
      g_autofree char *tmpl =
        g_build_filename (g_get_tmp_dir (), "twb-export-XXXXXX.safetensors", NULL);
      int fd = g_mkstemp (tmpl);
      if (fd >= 0)
        {
          close (fd);
          tmp = g_steal_pointer (&tmpl);
          if (twb_window_save_weights_to (self, tmp, NULL))
            weights = tmp;
        }
    }
  g_autoptr (tw_params) params = tw_onnx_export_params (m, weights, error);
  tw_onnx_export_options opt = { .opset = opset, .dynamic_batch = TRUE };
  gboolean ok = params && tw_onnx_export (m, params, &opt, path, error);
  if (tmp)
    g_unlink (tmp);
  if (!ok)
    {
      g_autofree char *display = g_filename_display_name (path);
      g_prefix_error (error, "Nothing written to %s: ", display);
    }
  return ok;
}

static void
export_onnx_path (TwbWindow *self, const char *path, int opset)
{
  g_autoptr (GError) error = NULL;
  if (!twb_window_export_onnx_to (self, path, opset, &error))
    {
      twb_window_show_toast (self, error->message);
      return;
    }
  g_autofree char *base = g_path_get_basename (path);
  g_autofree char *msg = g_strdup_printf ("Exported %s (ONNX, opset %d)", base,
                                          opset ? opset : TW_ONNX_EXPORT_MAX_OPSET);
  twb_window_show_toast (self, msg);
}

static GtkFileFilter *
onnx_filter (void)
{
  GtkFileFilter *f = gtk_file_filter_new ();
  gtk_file_filter_set_name (f, "ONNX models (*.onnx)");
  gtk_file_filter_add_pattern (f, "*.onnx");
  gtk_file_filter_add_pattern (f, "*.ONNX");
  return f;
}

static void
import_response (GtkNativeDialog *d, int response, TwbWindow *self)
{
  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr (GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (d));
      g_autofree char *path = g_file_get_path (file);
      if (path)
        twb_window_import_onnx (self, path);
    }
  g_object_unref (d);
}

static void
act_import_onnx (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  GtkFileChooserNative *d = gtk_file_chooser_native_new (
    "Import ONNX Model", GTK_WINDOW (self), GTK_FILE_CHOOSER_ACTION_OPEN, "_Import", "_Cancel");
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (d), onnx_filter ());
  g_signal_connect (d, "response", G_CALLBACK (import_response), self);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (d));
}

static void
act_import_onnx_path (GSimpleAction *a, GVariant *p, gpointer data)
{
  twb_window_import_onnx (TWB_WINDOW (data), g_variant_get_string (p, NULL));
}

static void
export_response (GtkNativeDialog *d, int response, TwbWindow *self)
{
  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr (GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (d));
      g_autofree char *path = g_file_get_path (file);
      const char *choice = gtk_file_chooser_get_choice (GTK_FILE_CHOOSER (d), "opset");
      int opset = choice ? atoi (choice) : 0;
      if (path && !g_str_has_suffix (path, ".onnx"))
        {
          char *with = g_strconcat (path, ".onnx", NULL);
          g_free (path);
          path = with;
        }
      if (path)
        export_onnx_path (self, path, opset);
    }
  g_object_unref (d);
}

static void
act_export_onnx (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  GtkFileChooserNative *d = gtk_file_chooser_native_new (
    "Export ONNX Model", GTK_WINDOW (self), GTK_FILE_CHOOSER_ACTION_SAVE, "_Export", "_Cancel");
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (d), onnx_filter ());
  static const char *opsets[] = { "17", "16", "15", "14", "13", NULL };
  static const char *labels[] = { "17", "16", "15", "14", "13", NULL };
  gtk_file_chooser_add_choice (GTK_FILE_CHOOSER (d), "opset", "Opset", opsets, labels);
  gtk_file_chooser_set_choice (GTK_FILE_CHOOSER (d), "opset", "17");
  g_autofree char *title = twb_document_get_title (self->doc);
  g_autofree char *stem =
    g_str_has_suffix (title, ".json") ? g_strndup (title, strlen (title) - 5) : g_strdup (title);
  g_autofree char *name = g_strconcat (stem, ".onnx", NULL);
  gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (d), name);
  const char *path = twb_document_get_path (self->doc);
  if (path)
    {
      g_autofree char *dir = g_path_get_dirname (path);
      g_autoptr (GFile) f = g_file_new_for_path (dir);
      gtk_file_chooser_set_current_folder (GTK_FILE_CHOOSER (d), f, NULL);
    }
  g_signal_connect (d, "response", G_CALLBACK (export_response), self);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (d));
}

static void
act_export_onnx_to (GSimpleAction *a, GVariant *p, gpointer data)
{
  export_onnx_path (TWB_WINDOW (data), g_variant_get_string (p, NULL), 0);
}

static const GActionEntry onnx_entries[] = {
  { "import-onnx", act_import_onnx },
  { "import-onnx-path", act_import_onnx_path, "s" },
  { "export-onnx", act_export_onnx },
  { "export-onnx-to", act_export_onnx_to, "s" },
};

void
twb_window_onnx_init (TwbWindow *self)
{
  g_action_map_add_action_entries (G_ACTION_MAP (self), onnx_entries, G_N_ELEMENTS (onnx_entries),
                                   self);
}
