/* test-placement.c — where new nodes go and what the editor says about
 * them: the Sequential dialog's layers as one block in free space and its
 * plain-words errors, the palette's Enter and Ctrl+D in free space (after
 * and fed by the selected node), and opening a file that is already open
 * presenting its window instead of a second one.  State is asserted on the
 * document and the application's window list. */
#include "ui-test.h"
#include "app/twb-application.h"
#include "graph_editor/twb-graph-canvas.h"
#include "ui/twb-sequential-dialog.h"
#include "ui/twb-window-private.h"

#include <glib/gstdio.h>
#include <string.h>

static TwbApplication *app;

static char *
mlp_path (void)
{
  return g_build_filename (g_getenv ("TWB_ASSETS_DIR"), "models", "mlp.json", NULL);
}

static TwbDocument *
load_mlp (void)
{
  g_autofree char *path = mlp_path ();
  g_autoptr (GError) error = NULL;
  TwbDocument *doc = twb_document_new_from_file (path, &error);
  g_assert_no_error (error);
  return doc;
}

/* The first pair of node boxes that overlap, as "a/b"; NULL when none. */
static char *
find_overlap (TwbDocument *doc)
{
  tw_graph *g = twb_document_get_graph (doc);
  int n = tw_graph_n_nodes (g);
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      {
        tw_node *a = tw_graph_node (g, i), *b = tw_graph_node (g, j);
        double aw, ah, bw, bh;
        twb_document_node_size (doc, a->id, &aw, &ah);
        twb_document_node_size (doc, b->id, &bw, &bh);
        if (a->x < b->x + bw && b->x < a->x + aw && a->y < b->y + bh && b->y < a->y + ah)
          return g_strdup_printf ("%s/%s", a->id, b->id);
      }
  return NULL;
}

/* Ten layers into the example MLP (after the data input, the default):
 * nothing overlaps, the chain is fed in order, the block wraps into rows,
 * and it is one undo step. */
static void
test_sequential_free_space (void)
{
  g_autoptr (TwbDocument) doc = load_mlp ();
  tw_graph *g = twb_document_get_graph (doc);
  int n0 = tw_graph_n_nodes (g);
  g_autofree char *before = twb_document_to_data (doc);
  g_autoptr (GError) error = NULL;
  const char *text = "linear out_features=64\nrelu\nlinear out_features=64\nrelu\ndropout p=0.1\n"
                     "linear out_features=32\nrelu\nlinear out_features=32\nrelu\n"
                     "linear out_features=10\n";
  g_assert_cmpint (twb_sequential_apply (doc, NULL, text, &error), ==, 10);
  g_assert_no_error (error);
  g_assert_cmpint (tw_graph_n_nodes (g), ==, n0 + 10);
  g_autofree char *overlap = find_overlap (doc);
  if (overlap)
    g_error ("Sequential layers overlap: %s", overlap);
  /* Each new layer is fed by the one before; rows: more than one y. */
  GHashTable *ys = g_hash_table_new (g_double_hash, g_double_equal);
  for (int i = n0 + 1; i < n0 + 10; i++)
    {
      tw_node *nd = tw_graph_node (g, i);
      g_assert_cmpstr (twb_document_get_input (doc, nd->id, 0), ==, tw_graph_node (g, i - 1)->id);
      g_hash_table_add (ys, &nd->y);
    }
  g_assert_cmpuint (g_hash_table_size (ys), >=, 2);
  g_hash_table_unref (ys);
  /* Within a row, left to right. */
  tw_node *a = tw_graph_node (g, n0), *b = tw_graph_node (g, n0 + 1);
  if (a->y == b->y)
    g_assert_cmpfloat (b->x, >, a->x);
  g_assert_cmpstr (twb_document_undo_label (doc), ==, "Add layers");
  g_assert_true (twb_document_undo (doc));
  g_autofree char *after = twb_document_to_data (doc);
  g_assert_cmpstr (before, ==, after);

  /* After a selected node: the block starts right of it. */
  const char *sel[] = { tw_graph_node (g, n0 - 1)->id, NULL };
  twb_document_select (doc, sel, FALSE);
  g_assert_cmpint (twb_sequential_apply (doc, NULL, "relu\nrelu\n", &error), ==, 2);
  g_assert_no_error (error);
  g_autofree char *overlap2 = find_overlap (doc);
  g_assert_null (overlap2);
  g_assert_cmpstr (twb_document_get_input (doc, tw_graph_node (g, n0)->id, 0), ==, sel[0]);
}

/* Bad values: the message names the line, the layer and the setting and
 * says what fits, never the JSON parser's words; nothing changes. */
static void
test_sequential_errors (void)
{
  g_autoptr (TwbDocument) doc = load_mlp ();
  g_autofree char *before = twb_document_to_data (doc);
  static const struct
  {
    const char *text, *want;
  } cases[] = {
    { "relu\nlinear out_features=abc\n",
      "line 2 (linear): out_features: expected a whole number like 128, not 'abc'" },
    { "dropout p=lots\n", "line 1 (dropout): p: expected a number like 0.1, not 'lots'" },
    { "linear units=128\n", "line 1 (linear): linear has no setting 'units' (it has " },
    { "relu inplace=true\n", "line 1 (relu): relu takes no settings, not 'inplace'" },
    { "linear 128\n", "line 1 (linear): '128' is not name=value, like out_features=128" },
    { "linaer out_features=10\n", "line 1: unknown layer 'linaer'" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr (GError) error = NULL;
      g_assert_cmpint (twb_sequential_apply (doc, NULL, cases[i].text, &error), ==, -1);
      g_assert_nonnull (error);
      if (!g_str_has_prefix (error->message, cases[i].want))
        g_error ("'%s': got \"%s\", want \"%s…\"", cases[i].text, error->message, cases[i].want);
      g_assert_null (strstr (error->message, "Parse error"));
      g_assert_null (strstr (error->message, "<data>"));
      g_autofree char *same = twb_document_to_data (doc);
      g_assert_cmpstr (before, ==, same);
    }
  /* A list value with spaces is one value, not three words. */
  g_autoptr (TwbDocument) cnn = twb_document_new ();
  g_autoptr (GError) error = NULL;
  g_assert_cmpint (twb_sequential_apply (cnn, NULL, "conv2d out_channels=8 kernel_size=[3, 3]\n", &error),
                   ==, 1);
  g_assert_no_error (error);
  const tw_attr_value *k = tw_attrs_lookup (tw_graph_node (twb_document_get_graph (cnn), 0)->attrs,
                                            "kernel_size");
  g_assert_nonnull (k);
  g_assert_cmpint (k->n, ==, 2);
  g_assert_cmpint (k->ints[1], ==, 3);
}

static TwbWindow *
window_for (TwbDocument *doc)
{
  TwbWindow *w = twb_application_new_window (app, doc);
  gtk_window_set_default_size (GTK_WINDOW (w), 1200, 800);
  twt_ui_pump ();
  return w;
}

/* The palette's Enter (its "op-activated") and Ctrl+D in a window: in free
 * space; with a node selected, after it and fed by it. */
static void
test_palette_and_duplicate (void)
{
  g_autoptr (TwbDocument) loaded = load_mlp ();
  TwbWindow *w = window_for (loaded);
  TwbDocument *doc = twb_window_get_document (w);
  tw_graph *g = twb_document_get_graph (doc);
  int n0 = tw_graph_n_nodes (g);
  TwbPalette *p = twb_window_get_palette (w);

  twb_document_clear_selection (doc);
  g_signal_emit_by_name (p, "op-activated", "relu");
  twt_ui_pump ();
  g_assert_cmpint (tw_graph_n_nodes (g), ==, n0 + 1);
  g_autofree char *o1 = find_overlap (doc);
  g_assert_null (o1);

  const char *sel[] = { tw_graph_node (g, 0)->id, NULL };
  g_autofree char *anchor = g_strdup (sel[0]);
  twb_document_select (doc, sel, FALSE);
  g_signal_emit_by_name (p, "op-activated", "linear");
  twt_ui_pump ();
  g_assert_cmpint (tw_graph_n_nodes (g), ==, n0 + 2);
  tw_node *nd = tw_graph_node (g, n0 + 1);
  g_assert_cmpstr (nd->op_name, ==, "linear");
  g_assert_cmpstr (twb_document_get_input (doc, nd->id, 0), ==, anchor);
  g_assert_true (twb_document_is_selected (doc, nd->id));
  g_autofree char *o2 = find_overlap (doc);
  g_assert_null (o2);
  /* One undo step takes node and edge. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (w), "graph.undo", NULL));
  twt_ui_pump ();
  g_assert_cmpint (tw_graph_n_nodes (g), ==, n0 + 1);

  twb_document_select (doc, sel, FALSE);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (w), "graph.duplicate", NULL));
  twt_ui_pump ();
  g_assert_cmpint (tw_graph_n_nodes (g), ==, n0 + 2);
  g_autofree char *o3 = find_overlap (doc);
  g_assert_null (o3);
  twb_window_close_now (w);
  twt_ui_pump ();
}

static guint
n_windows (void)
{
  return g_list_length (gtk_application_get_windows (GTK_APPLICATION (app)));
}

/* Opening a file that is open (by the same path, another spelling of it or
 * a symlink; from the command line or from a window) presents the window
 * that shows it; no second window. */
static void
test_open_twice (void)
{
  g_autofree char *dir = g_dir_make_tmp ("twb-placement-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "model.json", NULL);
  g_autofree char *link = g_build_filename (dir, "link.json", NULL);
  g_autofree char *other = g_build_filename (dir, "other.json", NULL);
  g_autofree char *src = mlp_path ();
  g_autofree char *data = NULL;
  gsize len = 0;
  g_assert_true (g_file_get_contents (src, &data, &len, NULL));
  g_assert_true (g_file_set_contents (path, data, len, NULL));
  g_assert_true (g_file_set_contents (other, data, len, NULL));
  g_assert_cmpint (symlink (path, link), ==, 0);

  guint n0 = n_windows ();
  g_autoptr (GFile) f = g_file_new_for_path (path);
  GFile *files[] = { f };
  g_application_open (G_APPLICATION (app), files, 1, "");
  twt_ui_pump ();
  g_assert_cmpuint (n_windows (), ==, n0 + 1);
  TwbWindow *w = twb_window_find_for_file (GTK_APPLICATION (app), f);
  g_assert_nonnull (w);
  g_assert_cmpstr (twb_document_get_path (twb_window_get_document (w)), ==, path);

  /* Again, by the same path, with "dir/./model.json", and through the link. */
  g_autofree char *dotted = g_build_filename (dir, ".", "model.json", NULL);
  const char *again[] = { path, dotted, link };
  for (guint i = 0; i < G_N_ELEMENTS (again); i++)
    {
      g_autoptr (GFile) g = g_file_new_for_path (again[i]);
      g_assert_true (twb_window_find_for_file (GTK_APPLICATION (app), g) == w);
      GFile *more[] = { g };
      g_application_open (G_APPLICATION (app), more, 1, "");
      twt_ui_pump ();
      g_assert_cmpuint (n_windows (), ==, n0 + 1);
    }
  /* From a window (Ctrl+O, recent files): the same window comes back. */
  g_assert_true (twb_window_open_file (w, link) == w);
  g_assert_cmpuint (n_windows (), ==, n0 + 1);

  /* A different file with the same contents is a different document. */
  g_autoptr (GFile) fo = g_file_new_for_path (other);
  g_assert_null (twb_window_find_for_file (GTK_APPLICATION (app), fo));
  TwbWindow *w2 = twb_window_open_file (w, other);
  twt_ui_pump ();
  g_assert_nonnull (w2);
  g_assert_true (w2 != w);
  g_assert_cmpuint (n_windows (), ==, n0 + 2);

  twb_window_close_now (w2);
  twb_window_close_now (w);
  twt_ui_pump ();
  g_unlink (link);
  g_unlink (path);
  g_unlink (other);
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  g_autofree char *home = twt_ui_private_home ("placement");
  g_test_init (&argc, &argv, NULL);
  g_log_set_always_fatal (G_LOG_FATAL_MASK | G_LOG_LEVEL_WARNING | G_LOG_LEVEL_CRITICAL);
  tw_ops_init ();
  g_test_add_func ("/ui/placement/sequential-free-space", test_sequential_free_space);
  g_test_add_func ("/ui/placement/sequential-errors", test_sequential_errors);
  if (!gtk_init_check ())
    return g_test_run ();   /* the document-only tests still run */
  app = twb_application_new (G_APPLICATION_NON_UNIQUE | G_APPLICATION_HANDLES_OPEN);
  g_application_register (G_APPLICATION (app), NULL, NULL);
  twb_application_load_style ();
  g_test_add_func ("/ui/placement/palette-and-duplicate", test_palette_and_duplicate);
  g_test_add_func ("/ui/placement/open-twice", test_open_twice);
  int st = g_test_run ();
  g_object_unref (app);
  return st;
}
