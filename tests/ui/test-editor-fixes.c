/* test-editor-fixes.c — the editor as a new user found it: auto layout
 * wraps a long chain into rows that fit the window at a zoom where labels
 * are drawn, and no edge runs through a box; the inspector's fields stay
 * put when an error line appears, and a default that depends on another
 * attribute is a placeholder, not a value; a block made by Ctrl+G is what
 * the inspector shows, and it renames it (undoably); the recipe's dataset
 * offers the known sets and refuses an unknown name or a missing file.
 * Through the window's actions and the inspector's API; state asserted on
 * the document, the canvas's zoom and the scene's geometry. */
#include "ui-test.h"
#include "ui-scene.h"
#include "app/twb-application.h"
#include "graph_editor/twb-graph-canvas.h"
#include "graph_editor/twb-graph-render.h"
#include "engine/data.h"
#include "graph_editor/twb-graph-scene.h"
#include "ui/twb-inspector.h"
#include "ui/twb-window-private.h"

#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

static TwbApplication *app;

static TwbDocument *
load_model (const char *name)
{
  g_autofree char *file = g_strdup_printf ("%s.json", name);
  g_autofree char *path = g_build_filename (g_getenv ("TWB_ASSETS_DIR"), "models", file, NULL);
  g_autoptr (GError) error = NULL;
  TwbDocument *doc = twb_document_new_from_file (path, &error);
  g_assert_no_error (error);
  return doc;
}

/* With TWB_TEST_SHOTS set: the window saved there as name, for a person
 * to look at. */
static void
shot (TwbWindow *w, const char *name)
{
  const char *dir = g_getenv ("TWB_TEST_SHOTS");
  if (dir == NULL)
    return;
  g_mkdir_with_parents (dir, 0755);
  twt_ui_pump ();
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autoptr (GError) error = NULL;
  gboolean ok = twb_window_save_screenshot (w, path, &error);
  g_assert_no_error (error);
  g_assert_true (ok);
}

/* A window at the size of the brief's screenshots, default panels. */
static TwbWindow *
window_for (TwbDocument *doc)
{
  TwbWindow *w = twb_application_new_window (app, doc);
  gtk_window_set_default_size (GTK_WINDOW (w), 1280, 800);
  twt_ui_pump ();
  return w;
}

static void
assert_edges_clear (TwbDocument *doc, const char *what)
{
  g_autoptr (TwbGraphScene) s = twb_graph_scene_new (doc);
  twt_assert_edges_clear (s, what);
}

/* Ctrl+L on the example MLP (9 nodes), LeNet-5 (15) and the functional
 * model (12, a residual add and a concat): at fit zoom in a
 * 1280 × 800 window the labels are drawn (zoom >= 0.5, above
 * TWB_RENDER_TEXT_SCALE), the layout has more than one row, and no edge
 * crosses a box. */
static void
test_auto_layout_fits (void)
{
  const char *models[] = { "mlp", "lenet5", "functional" };
  for (guint m = 0; m < G_N_ELEMENTS (models); m++)
    {
      g_autoptr (TwbDocument) loaded = load_model (models[m]);
      TwbWindow *w = window_for (loaded);
      TwbDocument *doc = twb_window_get_document (w);
      g_assert_true (gtk_widget_activate_action (GTK_WIDGET (w), "graph.auto-layout", NULL));
      twt_ui_pump ();
      double zoom = twb_graph_canvas_get_zoom (w->canvas);
      g_test_message ("%s: fitted zoom %.3f after auto layout", models[m], zoom);
      g_assert_cmpfloat (zoom, >=, 0.5);
      g_assert_cmpfloat (zoom, >, TWB_RENDER_TEXT_SCALE);
      tw_graph *g = twb_document_get_graph (doc);
      GHashTable *ys = g_hash_table_new (g_double_hash, g_double_equal);
      for (int i = 0; i < tw_graph_n_nodes (g); i++)
        g_hash_table_add (ys, &tw_graph_node (g, i)->y);
      g_assert_cmpuint (g_hash_table_size (ys), >=, 3);
      g_hash_table_unref (ys);
      assert_edges_clear (doc, models[m]);
      g_autofree char *name = g_strdup_printf ("auto-layout-%s.png", models[m]);
      shot (w, name);
      twb_window_close_now (w);
      twt_ui_pump ();
    }
}

/* A 12-layer chain with a skip connection from its second node to an add
 * near the end: after auto layout the skip edge (forward, over boxes of its
 * row or across rows) and the wrap edges go around every box. */
static void
test_routes_around_boxes (void)
{
  g_autoptr (TwbDocument) doc = twb_document_new ();
  g_autoptr (GError) error = NULL;
  const char *x = twb_document_add_node (doc, "input", "x", 0, 0, &error);
  g_assert_no_error (error);
  g_assert_true (twb_document_set_attr_text (doc, x, "shape", "[16]", &error));
  char prev[16] = "x";
  for (int i = 1; i <= 10; i++)
    {
      char id[16];
      g_snprintf (id, sizeof id, "r%d", i);
      g_assert_nonnull (twb_document_add_node (doc, "relu", id, 0, 0, &error));
      g_assert_true (twb_document_connect (doc, prev, id, 0, &error));
      g_strlcpy (prev, id, sizeof prev);
    }
  g_assert_nonnull (twb_document_add_node (doc, "add", "sum", 0, 0, &error));
  g_assert_true (twb_document_connect (doc, "r10", "sum", 0, &error));
  g_assert_true (twb_document_connect (doc, "r2", "sum", 1, &error));
  g_assert_no_error (error);
  twb_document_auto_layout (doc);
  assert_edges_clear (doc, "chain with a skip");
  /* All on one line as a user might drag them: the skip edge's curve would
   * run through r3 … r10. */
  tw_graph *g = twb_document_get_graph (doc);
  for (int i = 0; i < tw_graph_n_nodes (g); i++)
    {
      tw_node *nd = tw_graph_node (g, i);
      int k = strcmp (nd->id, "x") == 0 ? 0 : strcmp (nd->id, "sum") == 0 ? 11 : atoi (nd->id + 1);
      const char *one[] = { nd->id, NULL };
      twb_document_move_nodes (doc, one, 40 + 220 * k - nd->x, 40 - nd->y, FALSE);
    }
  assert_edges_clear (doc, "skip over a row");
}

static void
select_ids (TwbDocument *doc, const char *const *ids)
{
  twb_document_select (doc, ids, FALSE);
  twt_ui_pump ();
}

/* Where a widget is, in the inspector's coordinates. */
static graphene_rect_t
bounds_in (GtkWidget *w, GtkWidget *ref)
{
  graphene_rect_t r;
  g_assert_true (gtk_widget_compute_bounds (w, ref, &r));
  return r;
}

/* LeNet-5's pool1 (max_pool2d): a bad kernel_size shows an error line and
 * the fields below stay where they were (and after the error goes); the
 * stride, whose default is the kernel size, is an empty entry whose dim
 * placeholder says so (it showed "[5, 5]" as if set). */
static void
test_inspector_steady_fields (void)
{
  g_autoptr (TwbDocument) loaded = load_model ("lenet5");
  TwbWindow *w = window_for (loaded);
  TwbDocument *doc = twb_window_get_document (w);
  TwbInspector *insp = w->inspector;
  GtkWidget *ref = GTK_WIDGET (insp);
  select_ids (doc, (const char *[]) { "pool1", NULL });
  g_assert_cmpstr (twb_inspector_get_node (insp), ==, "pool1");

  GtkWidget *stride = twb_inspector_get_attr_widget (insp, "stride");
  g_assert_true (GTK_IS_ENTRY (stride));
  g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (stride)), ==, "");
  const char *ph = gtk_entry_get_placeholder_text (GTK_ENTRY (stride));
  g_assert_nonnull (ph);
  g_assert_nonnull (strstr (ph, "kernel size"));
  g_assert_null (strstr (ph, "["));
  GtkWidget *padding = twb_inspector_get_attr_widget (insp, "padding");
  g_assert_nonnull (padding);
  g_assert_null (strstr (gtk_entry_get_placeholder_text (GTK_ENTRY (padding)), "["));

  graphene_rect_t s0 = bounds_in (stride, ref), p0 = bounds_in (padding, ref);
  g_autofree char *before = twb_document_to_data (doc);
  g_assert_false (twb_inspector_edit_attr (insp, "kernel_size", "[2, two]"));
  twt_ui_pump ();
  const char *err = twb_inspector_get_attr_error (insp, "kernel_size");
  g_assert_nonnull (err);
  g_assert_nonnull (strstr (err, "kernel_size"));
  g_autofree char *after = twb_document_to_data (doc);
  g_assert_cmpstr (before, ==, after);
  graphene_rect_t s1 = bounds_in (stride, ref), p1 = bounds_in (padding, ref);
  shot (w, "inspector-error.png");
  g_assert_true (graphene_rect_equal (&s0, &s1));
  g_assert_true (graphene_rect_equal (&p0, &p1));
  /* The line under the field holds the message. */
  g_assert_true (twb_inspector_edit_attr (insp, "kernel_size", "[3, 3]"));
  twt_ui_pump ();
  GtkWidget *stride2 = twb_inspector_get_attr_widget (insp, "stride");
  GtkWidget *padding2 = twb_inspector_get_attr_widget (insp, "padding");
  graphene_rect_t s2 = bounds_in (stride2, ref), p2 = bounds_in (padding2, ref);
  g_assert_true (graphene_rect_equal (&s0, &s2));
  g_assert_true (graphene_rect_equal (&p0, &p2));
  g_assert_null (twb_inspector_get_attr_error (insp, "kernel_size"));
  twb_window_close_now (w);
  twt_ui_pump ();
}

static gboolean
has_block (TwbDocument *doc, const char *name)
{
  g_auto (GStrv) blocks = twb_document_list_blocks (doc);
  return g_strv_contains ((const char *const *) blocks, name);
}

/* Ctrl+G on three nodes: the inspector shows the new block (not "3 nodes
 * selected"), renames it through its name field (one undo step), refuses
 * a node's id and an empty name, and Expand brings the nodes back. */
static void
test_block_rename (void)
{
  g_autoptr (TwbDocument) loaded = load_model ("mlp");
  TwbWindow *w = window_for (loaded);
  TwbDocument *doc = twb_window_get_document (w);
  TwbInspector *insp = w->inspector;
  select_ids (doc, (const char *[]) { "fc2", "relu2", "fc3", NULL });
  g_assert_null (twb_inspector_get_block (insp));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (w), "graph.collapse", NULL));
  twt_ui_pump ();
  g_assert_true (twb_document_block_is_collapsed (doc, "block 1"));
  g_assert_cmpstr (twb_inspector_get_block (insp), ==, "block 1");
  g_assert_null (twb_inspector_get_node (insp));
  GtkWidget *name = twb_inspector_get_attr_widget (insp, "$id");
  g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (name)), ==, "block 1");

  g_assert_true (twb_inspector_edit_attr (insp, "$id", "head"));
  twt_ui_pump ();
  g_assert_true (has_block (doc, "head"));
  g_assert_false (has_block (doc, "block 1"));
  g_assert_true (twb_document_block_is_collapsed (doc, "head"));
  g_assert_cmpstr (twb_document_block_of (doc, "relu2"), ==, "head");
  g_assert_cmpstr (twb_inspector_get_block (insp), ==, "head");
  g_assert_cmpstr (twb_document_undo_label (doc), ==, "Rename block block 1");
  shot (w, "block-renamed.png");

  /* A node's id or nothing: refused, said under the field. */
  g_assert_false (twb_inspector_edit_attr (insp, "$id", "fc1"));
  g_assert_nonnull (strstr (twb_inspector_get_attr_error (insp, "$id"), "fc1"));
  g_assert_false (twb_inspector_edit_attr (insp, "$id", "  "));
  g_assert_true (has_block (doc, "head"));

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (w), "graph.undo", NULL));
  twt_ui_pump ();
  g_assert_true (has_block (doc, "block 1"));
  g_assert_cmpstr (twb_inspector_get_block (insp), ==, "block 1");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (w), "graph.redo", NULL));
  twt_ui_pump ();
  g_assert_cmpstr (twb_inspector_get_block (insp), ==, "head");

  /* Expanded: three nodes selected again, no block page. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (w), "graph.expand-named", "s", "head"));
  twt_ui_pump ();
  g_assert_false (twb_document_block_is_collapsed (doc, "head"));
  g_assert_null (twb_inspector_get_block (insp));
  twb_window_close_now (w);
  twt_ui_pump ();
}

/* The recipe's dataset: a typo, a missing file and a path that is no
 * dataset are refused with a line naming the value (the recipe keeps its
 * set); every known set, an existing CSV and the menu's choice are taken. */
static void
test_dataset_checked (void)
{
  g_autoptr (TwbDocument) loaded = load_model ("mlp");
  TwbWindow *w = window_for (loaded);
  TwbDocument *doc = twb_window_get_document (w);
  TwbInspector *insp = w->inspector;
  twb_inspector_show_page (insp, "recipe");
  twt_ui_pump ();
  const tw_recipe *r = &twb_document_get_model (doc)->recipe;
  g_assert_cmpstr (r->dataset, ==, "fashion-mnist");

  g_assert_false (twb_inspector_set_dataset_text (insp, "fashoin-mnist"));
  const char *err = twb_inspector_get_dataset_error (insp);
  g_assert_nonnull (err);
  g_assert_nonnull (strstr (err, "'fashoin-mnist'"));
  g_assert_nonnull (strstr (err, "spirals"));
  g_assert_cmpstr (r->dataset, ==, "fashion-mnist");
  g_assert_false (twb_document_can_undo (doc));
  shot (w, "dataset-refused.png");

  g_autofree char *dir = g_dir_make_tmp ("twb-dataset-XXXXXX", NULL);
  g_autofree char *missing = g_build_filename (dir, "gone.csv", NULL);
  g_assert_false (twb_inspector_set_dataset_text (insp, missing));
  g_autofree char *want = g_strdup_printf ("no file %s", missing);
  g_assert_cmpstr (twb_inspector_get_dataset_error (insp), ==, want);
  g_autofree char *nodir = g_build_filename (dir, "nothing", NULL);
  g_assert_false (twb_inspector_set_dataset_text (insp, nodir));
  g_assert_nonnull (strstr (twb_inspector_get_dataset_error (insp), nodir));
  g_assert_cmpstr (r->dataset, ==, "fashion-mnist");

  g_autofree char *csv = g_build_filename (dir, "points.csv", NULL);
  g_assert_true (g_file_set_contents (csv, "0.5,1.5,0\n1.0,2.0,1\n", -1, NULL));
  g_assert_true (twb_inspector_set_dataset_text (insp, csv));
  g_assert_null (twb_inspector_get_dataset_error (insp));
  g_assert_cmpstr (twb_document_get_model (doc)->recipe.dataset, ==, csv);
  g_assert_true (twb_inspector_set_dataset_text (insp, dir));   /* a folder: IDX files */

  for (const char *const *n = tw_dataset_known_names (); *n; n++)
    {
      g_autoptr (GError) e = NULL;
      g_assert_true (twb_inspector_check_dataset (*n, &e));
      g_assert_no_error (e);
    }
  /* The menu of known sets. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (insp), "inspector.set-dataset", "s",
                                             "spirals"));
  twt_ui_pump ();
  g_assert_cmpstr (twb_document_get_model (doc)->recipe.dataset, ==, "spirals");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (w), "graph.undo", NULL));
  twt_ui_pump ();
  g_assert_cmpstr (twb_document_get_model (doc)->recipe.dataset, ==, dir);
  twb_window_close_now (w);
  twt_ui_pump ();
  g_unlink (csv);
  g_rmdir (dir);
}

/* At 1280 × 800 with LeNet-5's conv1 selected, "Live checks" (the shape,
 * parameters and FLOPs) is in the inspector's visible part, above the
 * Issues pane. */
static void
test_live_checks_visible (void)
{
  g_autoptr (TwbDocument) loaded = load_model ("lenet5");
  TwbWindow *w = window_for (loaded);
  TwbDocument *doc = twb_window_get_document (w);
  TwbInspector *insp = w->inspector;
  /* The window's default size; its frame (client-side decorations) takes a few pixels. */
  g_assert_cmpint (gtk_widget_get_height (GTK_WIDGET (w)), <=, 800);
  g_assert_cmpint (gtk_widget_get_height (GTK_WIDGET (w)), >=, 780);
  select_ids (doc, (const char *[]) { "conv1", NULL });
  GtkWidget *live = twb_inspector_get_live_checks (insp);
  g_assert_nonnull (live);
  g_assert_nonnull (strstr (gtk_label_get_text (GTK_LABEL (live)), "f32[N, 6, 28, 28]"));
  graphene_rect_t b = bounds_in (live, GTK_WIDGET (insp));
  g_test_message ("live checks at y %.0f..%.0f of %d", b.origin.y, b.origin.y + b.size.height,
                  gtk_widget_get_height (GTK_WIDGET (insp)));
  g_assert_cmpfloat (b.origin.y, >=, 0);
  g_assert_cmpfloat (b.size.height, >, 20);
  g_assert_cmpfloat (b.origin.y + b.size.height, <=, gtk_widget_get_height (GTK_WIDGET (insp)));
  twb_window_close_now (w);
  twt_ui_pump ();
}

int
main (int argc, char **argv)
{
  g_autofree char *home = twt_ui_private_home ("editor-fixes");
  g_test_init (&argc, &argv, NULL);
  g_log_set_always_fatal (G_LOG_FATAL_MASK | G_LOG_LEVEL_WARNING | G_LOG_LEVEL_CRITICAL);
  tw_ops_init ();
  g_test_add_func ("/ui/editor-fixes/routes-around-boxes", test_routes_around_boxes);
  if (!gtk_init_check ())
    return g_test_run ();   /* the document-only tests still run */
  app = twb_application_new (G_APPLICATION_NON_UNIQUE | G_APPLICATION_HANDLES_OPEN);
  g_application_register (G_APPLICATION (app), NULL, NULL);
  twb_application_load_style ();
  g_test_add_func ("/ui/editor-fixes/auto-layout-fits", test_auto_layout_fits);
  g_test_add_func ("/ui/editor-fixes/inspector-steady-fields", test_inspector_steady_fields);
  g_test_add_func ("/ui/editor-fixes/block-rename", test_block_rename);
  g_test_add_func ("/ui/editor-fixes/dataset-checked", test_dataset_checked);
  g_test_add_func ("/ui/editor-fixes/live-checks-visible", test_live_checks_visible);
  int st = g_test_run ();
  g_object_unref (app);
  return st;
}
