/* test-onnx-ui.c — ONNX files in the window, through its actions: an
 * imported fixture (win.import-onnx-path, and the application opening a
 * .onnx file) shows the importer's nodes with a loss added, as a new
 * unsaved document whose runs start from the file's initializers; Export
 * ONNX (win.export-onnx-to) re-imports to the same ids; Save writes the
 * weights beside the model; malformed and unsupported files are refused in
 * a toast naming the file (and the nodes), changing nothing.  Any GLib
 * warning or critical fails the test. */
#include "ui-test.h"
#include "app/twb-application.h"
#include "engine/file-kind.h"
#include "engine/safetensors.h"
#include "onnx/onnx-import.h"
#include "ui/twb-window-private.h"

#include <glib/gstdio.h>
#include <string.h>

static TwbApplication *app;

static char *
fixture (const char *name)
{
  return g_build_filename (TW_ONNX_TEST_DATA, name, NULL);
}

/* Until the window's import (or any loading) is done; 60 s at most. */
static void
wait_idle (TwbWindow *w)
{
  gint64 end = g_get_monotonic_time () + 60 * G_USEC_PER_SEC;
  twt_ui_pump ();
  while (twb_window_is_busy (w))
    {
      g_assert_cmpint (g_get_monotonic_time (), <, end);
      g_main_context_iteration (NULL, FALSE);
      g_usleep (2000);
    }
  twt_ui_pump ();
}

static guint
n_windows (void)
{
  return g_list_length (gtk_application_get_windows (GTK_APPLICATION (app)));
}

static int
cmp_ids (gconstpointer a, gconstpointer b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* The node ids of g, sorted, joined by spaces; label and loss left out
 * when skip_loss. */
static char *
ids_of (const tw_graph *g, gboolean skip_loss)
{
  GPtrArray *ids = g_ptr_array_new ();
  for (int i = 0; i < tw_graph_n_nodes (g); i++)
    {
      tw_node *n = tw_graph_node (g, i);
      if (skip_loss && (strcmp (n->id, "label") == 0 || strcmp (n->id, "loss") == 0))
        continue;
      g_ptr_array_add (ids, n->id);
    }
  g_ptr_array_sort (ids, cmp_ids);
  g_ptr_array_add (ids, NULL);
  char *s = g_strjoinv (" ", (char **) ids->pdata);
  g_ptr_array_free (ids, TRUE);
  return s;
}

/* Every initializer of the ONNX file that names a parameter in the
 * safetensors file at wpath has the same values, bit for bit; returns how
 * many did. */
static guint
check_initializers (const char *onnx_path, const char *wpath)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GHashTable) w = NULL;
  g_assert_true (tw_safetensors_load (wpath, &w, NULL, &error));
  g_assert_no_error (error);
  Onnx__ModelProto *proto = tw_onnx_read_model (onnx_path, &error);
  g_assert_no_error (error);
  guint matched = 0;
  for (gsize i = 0; i < proto->graph->n_initializer; i++)
    {
      const Onnx__TensorProto *t = proto->graph->initializer[i];
      tw_tensor *have = g_hash_table_lookup (w, t->name);
      if (have == NULL)
        continue;
      g_autoptr (tw_tensor) want = tw_onnx_tensor_to_tw (t, t->name, &error);
      g_assert_no_error (error);
      g_assert_cmpint (tw_tensor_numel (have), ==, tw_tensor_numel (want));
      for (int64_t k = 0; k < tw_tensor_numel (want); k++)
        g_assert_cmpfloat (tw_tensor_get_flat (have, k), ==, tw_tensor_get_flat (want, k));
      matched++;
    }
  onnx__model_proto__free_unpacked (proto, NULL);
  return matched;
}

/* What the window shows after importing the CNN fixture: the importer's
 * graph plus label and loss, unsaved, runs starting from its weights. */
static void
check_imported_cnn (TwbWindow *w, const char *cnn)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) ref = tw_onnx_import (cnn, NULL, &error);
  g_assert_no_error (error);
  TwbDocument *doc = twb_window_get_document (w);
  tw_graph *g = twb_document_get_graph (doc);
  g_assert_cmpint (tw_graph_n_nodes (g), ==, tw_graph_n_nodes (ref->graph) + 2);
  g_autofree char *want = ids_of (ref->graph, FALSE);
  g_autofree char *got = ids_of (g, TRUE);
  g_assert_cmpstr (got, ==, want);
  g_assert_nonnull (tw_graph_find (g, "layer1.0.conv1"));
  g_assert_cmpstr (tw_graph_find_loss (g)->op_name, ==, "cross_entropy");
  g_assert_null (twb_document_get_path (doc));
  g_assert_true (twb_document_get_dirty (doc));
  g_assert_cmpint (twb_window_count_issues (w), ==, 0);
  g_assert_nonnull (w->init_weights);
  g_assert_true (g_file_test (w->init_weights, G_FILE_TEST_IS_REGULAR));
  /* stem, bn (4), layer1.0's conv1, bn1 (4) and conv2 (2), fc (2) */
  g_assert_cmpuint (check_initializers (cnn, w->init_weights), >=, 10);
  const char *toast = twb_window_get_toast (w);
  g_assert_nonnull (toast);
  g_assert_nonnull (strstr (toast, "Imported import-cnn.onnx"));
}

static void
test_import_action (void)
{
  g_autofree char *cnn = fixture ("import-cnn.onnx");
  TwbWindow *w = twb_window_new (GTK_APPLICATION (app), NULL);
  gtk_window_present (GTK_WINDOW (w));
  guint n0 = n_windows ();
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (w), "win.import-onnx-path", "s", cnn));
  g_assert_true (twb_window_is_busy (w) || twb_window_get_toast (w) != NULL);
  wait_idle (w);
  g_assert_cmpuint (n_windows (), ==, n0); /* into the empty window */
  check_imported_cnn (w, cnn);
  g_autofree char *cache = g_strdup (w->init_weights);
  /* Its recipe's data, synthetic, is what the inspector's dataset field takes. */
  const tw_recipe *r = &twb_document_get_model (twb_window_get_document (w))->recipe;
  g_assert_cmpstr (r->dataset, ==, "synthetic");
  g_assert_true (twb_inspector_check_dataset (r->dataset, NULL));
  g_assert_true (twb_inspector_check_dataset ("synthetic:64", NULL));
  g_assert_false (twb_inspector_check_dataset ("synthetic:", NULL));
  g_assert_false (twb_inspector_check_dataset ("synthetic:6x", NULL));

  /* Export ONNX and import that: the same ids; the file checks out. */
  g_autofree char *dir = g_dir_make_tmp ("twb-onnx-ui-XXXXXX", NULL);
  g_autofree char *out = g_build_filename (dir, "cnn-out.onnx", NULL);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (w), "win.export-onnx-to", "s", out));
  g_assert_nonnull (strstr (twb_window_get_toast (w), "Exported cnn-out.onnx"));
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) back = tw_onnx_import (out, NULL, &error);
  g_assert_no_error (error);
  g_autofree char *ids_back = ids_of (back->graph, FALSE);
  g_autofree char *ids_doc = ids_of (twb_document_get_graph (twb_window_get_document (w)), TRUE);
  g_assert_cmpstr (ids_back, ==, ids_doc);
  g_assert_cmpuint (check_initializers (out, w->init_weights), >=, 10);

  /* Save: the weights beside the model, runs start from there, the cache
   * file is gone. */
  g_autofree char *json = g_build_filename (dir, "cnn.json", NULL);
  g_autofree char *wpath = g_build_filename (dir, "cnn.safetensors", NULL);
  g_assert_true (twb_window_save_to (w, json, &error));
  g_assert_no_error (error);
  g_assert_true (g_file_test (wpath, G_FILE_TEST_IS_REGULAR));
  g_assert_cmpstr (w->init_weights, ==, wpath);
  g_assert_false (g_file_test (cache, G_FILE_TEST_EXISTS));
  g_assert_false (twb_document_get_dirty (twb_window_get_document (w)));
  g_assert_cmpuint (check_initializers (cnn, wpath), >=, 10);
  g_autoptr (tw_model) saved = tw_model_load (json, &error);
  g_assert_no_error (error);
  g_assert_cmpint (tw_graph_n_nodes (saved->graph), ==,
                   tw_graph_n_nodes (twb_document_get_graph (twb_window_get_document (w))));

  twb_window_close_now (w);
  twt_ui_pump ();
  const char *files[] = { out, json, wpath };
  for (guint i = 0; i < G_N_ELEMENTS (files); i++)
    g_unlink (files[i]);
  g_rmdir (dir);
}

/* `twb FILE.onnx`: the application's open, into the window in front when
 * it is empty. */
static void
test_open_file (void)
{
  g_autofree char *cnn = fixture ("import-cnn.onnx");
  TwbWindow *front = twb_window_new (GTK_APPLICATION (app), NULL);
  gtk_window_present (GTK_WINDOW (front));
  twt_ui_pump ();
  guint n0 = n_windows ();
  g_autoptr (GFile) f = g_file_new_for_path (cnn);
  GFile *files[] = { f };
  g_application_open (G_APPLICATION (app), files, 1, "");
  TwbWindow *w = TWB_WINDOW (gtk_application_get_active_window (GTK_APPLICATION (app)));
  wait_idle (w);
  g_assert_cmpuint (n_windows (), ==, n0);
  check_imported_cnn (w, cnn);

  /* Importing again into a window with a model: a new window. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (w), "win.open-path", "s", cnn));
  wait_idle (w);
  g_assert_cmpuint (n_windows (), ==, n0 + 1);
  GList *all = gtk_application_get_windows (GTK_APPLICATION (app));
  for (GList *l = all; l; l = l->next)
    if (l->data != w && TWB_IS_WINDOW (l->data) &&
        tw_graph_n_nodes (twb_document_get_graph (twb_window_get_document (l->data))) > 0)
      {
        check_imported_cnn (l->data, cnn);
        twb_window_close_now (l->data);
        break;
      }
  twb_window_close_now (w);
  twt_ui_pump ();
}

/* A truncated file, garbage with the .onnx name, and a file with nodes twb
 * lacks: a toast naming the file (and the nodes); the document, its
 * weights and the window list stay as they were; export refusals write
 * nothing. */
static void
test_refusals (void)
{
  g_autofree char *mlp = g_build_filename (g_getenv ("TWB_ASSETS_DIR"), "models", "mlp.json", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (TwbDocument) doc = twb_document_new_from_file (mlp, &error);
  g_assert_no_error (error);
  TwbWindow *w = twb_window_new (GTK_APPLICATION (app), doc);
  gtk_window_present (GTK_WINDOW (w));
  twt_ui_pump ();
  guint n0 = n_windows ();
  g_autofree char *before = twb_document_to_data (doc);

  g_autofree char *dir = g_dir_make_tmp ("twb-onnx-bad-XXXXXX", NULL);
  g_autofree char *cnn = fixture ("import-cnn.onnx");
  g_autofree char *data = NULL;
  gsize len = 0;
  g_assert_true (g_file_get_contents (cnn, &data, &len, NULL));
  g_autofree char *truncated = g_build_filename (dir, "truncated.onnx", NULL);
  g_assert_true (g_file_set_contents (truncated, data, len / 2, NULL));
  g_autofree char *garbage = g_build_filename (dir, "garbage.onnx", NULL);
  g_assert_true (g_file_set_contents (garbage, "{ not a protobuf at all }", -1, NULL));
  g_autofree char *unsupported = fixture ("import-unsupported.onnx");
  struct
  {
    const char *path, *name, *also;
  } cases[] = {
    { truncated, "truncated.onnx", NULL },
    { garbage, "garbage.onnx", NULL },
    { unsupported, "import-unsupported.onnx", "cannot be imported" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_assert_true (
        gtk_widget_activate_action (GTK_WIDGET (w), "win.import-onnx-path", "s", cases[i].path));
      wait_idle (w);
      const char *toast = twb_window_get_toast (w);
      g_test_message ("%s: %s", cases[i].name, toast);
      g_assert_nonnull (toast);
      g_assert_nonnull (strstr (toast, cases[i].name));
      if (cases[i].also)
        g_assert_nonnull (strstr (toast, cases[i].also));
      g_assert_cmpuint (n_windows (), ==, n0);
      g_assert_true (twb_window_get_document (w) == doc);
      g_autofree char *after = twb_document_to_data (doc);
      g_assert_cmpstr (after, ==, before);
      g_assert_null (w->init_weights);
      g_assert_null (w->onnx_weights);
    }
  /* The unsupported file's toast names its nodes (control flow stays
   * unsupported; its other nodes may gain a translation). */
  g_assert_nonnull (strstr (twb_window_get_toast (w), "Loop"));

  /* Export into a folder that does not exist: refused, nothing written. */
  g_autofree char *nowhere = g_build_filename (dir, "no", "such", "out.onnx", NULL);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (w), "win.export-onnx-to", "s", nowhere));
  g_assert_nonnull (strstr (twb_window_get_toast (w), "Nothing written to"));
  g_assert_false (g_file_test (nowhere, G_FILE_TEST_EXISTS));

  twb_window_close_now (w);
  twt_ui_pump ();
  g_unlink (truncated);
  g_unlink (garbage);
  g_rmdir (dir);
}

/* What counts as ONNX: a ModelProto's bytes, whatever the name. */
static void
test_sniff (void)
{
  g_autofree char *cnn = fixture ("import-cnn.onnx");
  g_autofree char *mlp = g_build_filename (g_getenv ("TWB_ASSETS_DIR"), "models", "mlp.json", NULL);
  g_autofree char *dir = g_dir_make_tmp ("twb-onnx-sniff-XXXXXX", NULL);
  g_autofree char *bare = g_build_filename (dir, "model.pb", NULL);
  g_autofree char *upper = g_build_filename (dir, "MISSING.ONNX", NULL);
  g_autofree char *named = g_build_filename (dir, "model.onnx", NULL);
  g_autofree char *data = NULL, *text = NULL;
  gsize len = 0, tlen = 0;
  g_assert_true (g_file_get_contents (cnn, &data, &len, NULL));
  g_assert_true (g_file_set_contents (bare, data, len, NULL));
  g_assert_true (g_file_get_contents (mlp, &text, &tlen, NULL));
  g_assert_true (g_file_set_contents (named, text, tlen, NULL));
  g_assert_cmpint (tw_file_kind_sniff (cnn, NULL, NULL), ==, TW_FILE_KIND_ONNX);
  g_assert_cmpint (tw_file_kind_sniff (bare, NULL, NULL), ==, TW_FILE_KIND_ONNX);
  g_assert_cmpint (tw_file_kind_sniff (upper, NULL, NULL), ==, TW_FILE_KIND_UNKNOWN);
  g_assert_cmpint (tw_file_kind_sniff (mlp, NULL, NULL), ==, TW_FILE_KIND_MODEL);
  g_assert_cmpint (tw_file_kind_sniff (named, NULL, NULL), ==, TW_FILE_KIND_MODEL);
  g_assert_cmpint (tw_file_kind_sniff (dir, NULL, NULL), ==, TW_FILE_KIND_UNKNOWN);
  g_unlink (bare);
  g_unlink (named);
  g_rmdir (dir);
}

/* A window closed while its import runs: the result is dropped, no
 * window appears, nothing is left in the cache. */
static void
test_close_while_importing (void)
{
  g_autofree char *cnn = fixture ("import-cnn.onnx");
  guint n0 = n_windows ();
  TwbWindow *w = twb_window_new (GTK_APPLICATION (app), NULL);
  gtk_window_present (GTK_WINDOW (w));
  g_object_ref (w);
  twb_window_import_onnx (w, cnn);
  twb_window_close_now (w);
  gint64 end = g_get_monotonic_time () + 60 * G_USEC_PER_SEC;
  while (w->loading > 0)
    {
      g_assert_cmpint (g_get_monotonic_time (), <, end);
      g_main_context_iteration (NULL, FALSE);
      g_usleep (2000);
    }
  twt_ui_pump ();
  g_assert_cmpuint (n_windows (), ==, n0);
  g_assert_null (w->onnx_weights_file);
  g_autofree char *dir = g_build_filename (g_get_user_cache_dir (), "twb", "imported", NULL);
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  g_assert_null (d ? g_dir_read_name (d) : NULL);
  g_object_unref (w);
}

int
main (int argc, char **argv)
{
  g_autofree char *home = twt_ui_private_home ("onnx-ui");
  g_test_init (&argc, &argv, NULL);
  g_log_set_always_fatal (G_LOG_FATAL_MASK | G_LOG_LEVEL_WARNING | G_LOG_LEVEL_CRITICAL);
  tw_ops_init ();
  if (!gtk_init_check ())
    {
      g_print ("1..0 # SKIP no display\n");
      return 0;
    }
  app = twb_application_new (G_APPLICATION_NON_UNIQUE | G_APPLICATION_HANDLES_OPEN);
  g_application_register (G_APPLICATION (app), NULL, NULL);
  twb_application_load_style ();
  g_test_add_func ("/ui/onnx/import-export-save", test_import_action);
  g_test_add_func ("/ui/onnx/open-file", test_open_file);
  g_test_add_func ("/ui/onnx/refusals", test_refusals);
  g_test_add_func ("/ui/onnx/close-while-importing", test_close_while_importing);
  g_test_add_func ("/ui/onnx/sniff", test_sniff);
  int st = g_test_run ();
  g_object_unref (app);
  return st;
}
