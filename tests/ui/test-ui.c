/* test-ui.c — the application under Xvfb, driven through its actions and the
 * document API; state asserted on the models, screenshots saved for a
 * person to look at (in the test's temporary directory; TWB_TEST_SHOTS=DIR
 * keeps them). */
#include "ui-test.h"
#include "app/twb-application.h"
#include "graph_editor/twb-graph-canvas.h"
#include "ui/twb-sequential-dialog.h"
#include "ui/twb-window-private.h"

#include <glib/gstdio.h>
#include <string.h>

static TwbApplication *app;

static TwbWindow *
new_window (TwbDocument *doc)
{
  TwbWindow *w = twb_window_new (GTK_APPLICATION (app), doc);
  gtk_window_set_default_size (GTK_WINDOW (w), 1200, 800);
  gtk_window_present (GTK_WINDOW (w));
  twt_ui_pump ();
  return w;
}

static void
close_window (TwbWindow *w)
{
  twb_window_close_now (w);
  twt_ui_pump ();
}

static void
act (TwbWindow *w, const char *action)
{
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (w), action, NULL));
  twt_ui_pump ();
}

static const char *
shots_dir (void)
{
  static char *dir;
  if (dir == NULL)
    {
      const char *env = g_getenv ("TWB_TEST_SHOTS");
      dir = env ? g_strdup (env) : g_dir_make_tmp ("twb-ui-XXXXXX", NULL);
      g_mkdir_with_parents (dir, 0755);
    }
  return dir;
}

/* x [1, 28, 28] → flatten → fc (linear) → act (relu), through the canvas and
 * the inspector as a user would. */
static TwbWindow *
build_small_model (void)
{
  TwbWindow *w = new_window (NULL);
  TwbDocument *doc = twb_window_get_document (w);
  TwbGraphCanvas *c = twb_window_get_canvas (w);
  g_autoptr (GError) error = NULL;

  const char *x = twb_document_add_node (doc, "input", "x", 40, 40, &error);
  g_assert_no_error (error);
  g_assert_true (twb_document_set_attr_text (doc, x, "shape", "[1, 28, 28]", &error));
  g_assert_true (twb_document_set_attr_text (doc, x, "role", "data", &error));
  g_assert_no_error (error);
  g_autofree char *flat = g_strdup (twb_graph_canvas_add_node_at (c, "flatten", 400, 100));
  g_autofree char *fc = g_strdup (twb_graph_canvas_add_node_at (c, "linear", 700, 100));
  g_autofree char *relu = g_strdup (twb_graph_canvas_add_node_at (c, "relu", 1000, 100));
  g_assert_nonnull (flat);
  g_assert_nonnull (fc);
  g_assert_nonnull (relu);
  g_assert_true (twb_graph_canvas_try_connect (c, "x", flat, 0));
  g_assert_true (twb_graph_canvas_try_connect (c, flat, fc, 0));
  g_assert_true (twb_graph_canvas_try_connect (c, fc, relu, 0));
  /* Set out_features in the inspector, as typed. */
  const char *ids[] = { fc, NULL };
  twb_document_select (doc, ids, FALSE);
  twt_ui_pump ();
  g_assert_cmpstr (twb_inspector_get_node (twb_window_get_inspector (w)), ==, fc);
  g_assert_true (twb_inspector_edit_attr (twb_window_get_inspector (w), "out_features", "10"));
  twt_ui_pump ();
  return w;
}

static int
find_edge (const TwbGraphScene *s, const char *from, const char *to)
{
  int a = twb_graph_scene_find (s, from), b = twb_graph_scene_find (s, to);
  for (int i = 0; i < s->n_edges; i++)
    if (s->edges[i].from == a && s->edges[i].to == b)
      return i;
  return -1;
}

static void
test_build_undo_save (void)
{
  TwbWindow *w = build_small_model ();
  TwbDocument *doc = twb_window_get_document (w);
  const TwbGraphScene *s = twb_graph_canvas_get_scene (twb_window_get_canvas (w));
  g_assert_cmpint (s->n_nodes, ==, 4);
  g_assert_cmpint (s->n_errors, ==, 0);
  int e = find_edge (s, "flatten1", "linear1");
  g_assert_cmpint (e, >=, 0);
  g_assert_cmpstr (s->edges[e].label, ==, "[N, 784]");
  e = find_edge (s, "linear1", "relu1");
  g_assert_cmpstr (s->edges[e].label, ==, "[N, 10]");
  g_assert_nonnull (strstr (twb_window_get_status_text (w), "7850 parameters"));

  /* Undo the attribute: linear without out_features is an error; redo fixes it. */
  g_autofree char *before = twb_document_to_data (doc);
  act (w, "graph.undo");
  tw_node *fc = tw_graph_find (twb_document_get_graph (doc), "linear1");
  g_assert_false (tw_attrs_has (fc->attrs, "out_features"));
  g_assert_cmpint (twb_window_count_issues (w), ==, 1);
  act (w, "graph.redo");
  g_autofree char *after = twb_document_to_data (doc);
  g_assert_cmpstr (before, ==, after);
  g_assert_cmpint (twb_window_count_issues (w), ==, 0);

  /* Save, reopen, compare. */
  g_autofree char *path = g_build_filename (shots_dir (), "built.json", NULL);
  g_autoptr (GError) error = NULL;
  g_assert_true (twb_window_save_to (w, path, &error));
  g_assert_no_error (error);
  g_assert_false (twb_document_get_dirty (doc));
  g_autoptr (TwbDocument) again = twb_document_new_from_file (path, &error);
  g_assert_no_error (error);
  g_autofree char *a = twb_document_to_data (doc);
  g_autofree char *b = twb_document_to_data (again);
  g_assert_cmpstr (a, ==, b);
  close_window (w);
}

static void
test_invalid_edge (void)
{
  TwbWindow *w = build_small_model ();
  TwbDocument *doc = twb_window_get_document (w);
  g_autofree char *before = twb_document_to_data (doc);
  /* A cycle: relu back into flatten. */
  g_assert_false (twb_graph_canvas_try_connect (twb_window_get_canvas (w), "relu1", "flatten1", 0));
  twt_ui_pump ();
  const char *toast = twb_window_get_toast (w);
  g_assert_nonnull (toast);
  g_assert_nonnull (strstr (toast, "Cannot connect relu1 to flatten1"));
  g_assert_cmpstr (toast, ==, twb_graph_canvas_get_last_message (twb_window_get_canvas (w)));
  /* An input has no input port. */
  g_assert_false (twb_graph_canvas_try_connect (twb_window_get_canvas (w), "relu1", "x", 0));
  g_autofree char *after = twb_document_to_data (doc);
  g_assert_cmpstr (before, ==, after);
  close_window (w);
}

static void
test_shape_error (void)
{
  TwbWindow *w = build_small_model ();
  TwbDocument *doc = twb_window_get_document (w);
  g_autoptr (GError) error = NULL;
  /* A conv on flattened data: conv2d needs [N, C, H, W]. */
  const char *conv = twb_graph_canvas_add_node_at (twb_window_get_canvas (w), "conv2d", 700, 400);
  g_autofree char *cid = g_strdup (conv);
  g_assert_true (twb_document_set_attr_int (doc, cid, "out_channels", 4, &error));
  g_assert_true (twb_document_set_attr_text (doc, cid, "kernel_size", "3", &error));
  g_assert_true (twb_document_connect (doc, "flatten1", cid, 0, &error));
  g_assert_no_error (error);
  twt_ui_pump ();
  const TwbGraphScene *s = twb_graph_canvas_get_scene (twb_window_get_canvas (w));
  int i = twb_graph_scene_find (s, cid);
  g_assert_nonnull (s->nodes[i].error);
  g_assert_null (s->nodes[twb_graph_scene_find (s, "linear1")].error);
  g_assert_cmpint (twb_window_count_issues (w), ==, 1);

  g_autofree char *png = g_build_filename (shots_dir (), "shape-error.png", NULL);
  g_assert_true (twb_window_save_screenshot (w, png, &error));

  /* Clicking the issue selects the node. */
  twb_document_clear_selection (doc);
  twb_window_activate_issue (w, 0);
  twt_ui_pump ();
  g_auto (GStrv) sel = twb_document_get_selection (doc);
  g_assert_cmpint (g_strv_length (sel), ==, 1);
  g_assert_cmpstr (sel[0], ==, cid);
  g_assert_cmpstr (twb_graph_canvas_get_focus_node (twb_window_get_canvas (w)), ==, cid);

  /* Fix it: feed the conv from the image input instead. */
  g_assert_true (twb_document_connect (doc, "x", cid, 0, &error));
  twt_ui_pump ();
  s = twb_graph_canvas_get_scene (twb_window_get_canvas (w));
  g_assert_null (s->nodes[twb_graph_scene_find (s, cid)].error);
  g_assert_cmpint (twb_window_count_issues (w), ==, 0);
  close_window (w);
}

static void
test_inspector_validation (void)
{
  TwbWindow *w = build_small_model ();
  TwbDocument *doc = twb_window_get_document (w);
  TwbInspector *insp = twb_window_get_inspector (w);
  const char *ids[] = { "x", NULL };
  twb_document_select (doc, ids, FALSE);
  twt_ui_pump ();
  g_autofree char *before = twb_document_to_data (doc);
  g_assert_false (twb_inspector_edit_attr (insp, "shape", "[1, twenty]"));
  g_assert_nonnull (twb_inspector_get_attr_error (insp, "shape"));
  g_autofree char *after = twb_document_to_data (doc);
  g_assert_cmpstr (before, ==, after);
  g_assert_true (twb_inspector_edit_attr (insp, "shape", "[784]"));
  g_assert_null (twb_inspector_get_attr_error (insp, "shape"));
  close_window (w);
}

static void
test_copy_paste (void)
{
  TwbWindow *w = build_small_model ();
  TwbDocument *doc = twb_window_get_document (w);
  const char *ids[] = { "linear1", NULL };
  twb_document_select (doc, ids, FALSE);
  gtk_widget_grab_focus (GTK_WIDGET (twb_window_get_canvas (w)));
  twt_ui_pump ();
  int n = tw_graph_n_nodes (twb_document_get_graph (doc));
  act (w, "graph.copy");
  g_assert_nonnull (twb_window_get_clipboard_text (w));
  act (w, "graph.paste");
  tw_graph *g = twb_document_get_graph (doc);
  g_assert_cmpint (tw_graph_n_nodes (g), ==, n + 1);
  g_auto (GStrv) sel = twb_document_get_selection (doc);
  g_assert_cmpint (g_strv_length (sel), ==, 1);
  tw_node *orig = tw_graph_find (g, "linear1"), *copy = tw_graph_find (g, sel[0]);
  g_assert_cmpstr (copy->op_name, ==, "linear");
  g_assert_true (tw_attrs_equal (orig->attrs, copy->attrs));
  act (w, "graph.duplicate");
  g_assert_cmpint (tw_graph_n_nodes (g), ==, n + 2);
  act (w, "graph.delete");
  g_assert_cmpint (tw_graph_n_nodes (g), ==, n + 1);
  act (w, "graph.undo");
  act (w, "graph.undo");
  act (w, "graph.undo");
  g_assert_cmpint (tw_graph_n_nodes (g), ==, n);
  close_window (w);
}

static gboolean
graphs_equal (const tw_graph *a, const tw_graph *b)
{
  if (tw_graph_n_nodes (a) != tw_graph_n_nodes (b))
    return FALSE;
  for (int i = 0; i < tw_graph_n_nodes (a); i++)
    {
      const tw_node *x = tw_graph_node (a, i), *y = tw_graph_node (b, i);
      if (strcmp (x->id, y->id) || strcmp (x->op_name, y->op_name) || x->n_inputs != y->n_inputs
          || !tw_attrs_equal (x->attrs, y->attrs) || x->x != y->x || x->y != y->y)
        return FALSE;
      for (int k = 0; k < x->n_inputs; k++)
        if (g_strcmp0 (x->inputs[k], y->inputs[k]))
          return FALSE;
    }
  return TRUE;
}

static void
test_collapse_expand (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *path = g_build_filename (g_getenv ("TWB_ASSETS_DIR"), "models", "lenet5.json", NULL);
  g_autoptr (TwbDocument) doc = twb_document_new_from_file (path, &error);
  g_assert_no_error (error);
  TwbWindow *w = new_window (doc);
  g_autoptr (tw_graph) orig = tw_graph_copy (twb_document_get_graph (doc));
  const TwbGraphScene *s = twb_graph_canvas_get_scene (twb_window_get_canvas (w));
  int n0 = s->n_nodes;
  const char *ids[] = { "conv1", "relu1", "pool1", NULL };
  twb_document_select (doc, ids, FALSE);
  twt_ui_pump ();
  /* The menu's Show Minimap toggles the canvas's minimap, and back. */
  TwbGraphCanvas *canvas = twb_window_get_canvas (w);
  g_assert_true (twb_graph_canvas_get_show_minimap (canvas));
  act (w, "graph.show-minimap");
  g_assert_false (twb_graph_canvas_get_show_minimap (canvas));
  act (w, "graph.show-minimap");
  g_assert_true (twb_graph_canvas_get_show_minimap (canvas));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (w), "graph.collapse-named", "s", "features"));
  twt_ui_pump ();
  s = twb_graph_canvas_get_scene (twb_window_get_canvas (w));
  g_assert_cmpint (s->n_nodes, ==, n0 - 2);
  int b = twb_graph_scene_find (s, "features");
  g_assert_cmpint (b, >=, 0);
  g_assert_true (s->nodes[b].is_block);
  g_assert_cmpint (twb_graph_scene_find (s, "relu1"), ==, b);
  g_assert_nonnull (s->edges[find_edge (s, "x", "features")].label);
  g_assert_true (graphs_equal (orig, twb_document_get_graph (doc)));
  g_autofree char *png = g_build_filename (shots_dir (), "collapsed.png", NULL);
  g_assert_true (twb_window_save_screenshot (w, png, &error));
  act (w, "graph.expand");
  s = twb_graph_canvas_get_scene (twb_window_get_canvas (w));
  g_assert_cmpint (s->n_nodes, ==, n0);
  g_assert_true (graphs_equal (orig, twb_document_get_graph (doc)));
  close_window (w);
}

static void
check_png (const char *path, int want_w, int want_h)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GdkTexture) t = gdk_texture_new_from_filename (path, &error);
  g_assert_no_error (error);
  int w = gdk_texture_get_width (t), h = gdk_texture_get_height (t);
  if (want_w > 0)
    {
      g_assert_cmpint (w, ==, want_w);
      g_assert_cmpint (h, ==, want_h);
    }
  g_autofree guint32 *px = g_new (guint32, (gsize) w * h);
  gdk_texture_download (t, (guchar *) px, w * 4);
  gsize distinct = 0;
  for (gsize i = 1; i < (gsize) w * h; i++)
    distinct += px[i] != px[0];
  g_assert_cmpuint (distinct, >, (gsize) w * h / 100);
}

/* No label under w shows an internal issue number ("issue #5", "#6"). */
static void
assert_no_issue_numbers (GtkWidget *w)
{
  if (GTK_IS_LABEL (w))
    {
      const char *t = gtk_label_get_text (GTK_LABEL (w));
      if (g_regex_match_simple ("issue\\s*#|#[0-9]", t, G_REGEX_CASELESS, 0))
        g_error ("a label shows an issue number: %s", t);
    }
  for (GtkWidget *c = gtk_widget_get_first_child (w); c; c = gtk_widget_get_next_sibling (c))
    assert_no_issue_numbers (c);
}

static void
test_screenshot_and_export (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *model = g_build_filename (g_getenv ("TWB_ASSETS_DIR"), "models", "mlp.json", NULL);
  g_autoptr (TwbDocument) doc = twb_document_new_from_file (model, &error);
  TwbWindow *w = new_window (doc);
  g_autofree char *png = g_build_filename (shots_dir (), "mlp-window.png", NULL);
  g_assert_true (twb_window_save_screenshot (w, png, &error));
  g_assert_no_error (error);
  check_png (png, gtk_widget_get_width (GTK_WIDGET (w)), gtk_widget_get_height (GTK_WIDGET (w)));

  /* Larger than the test's X screen (1280x1024): still the size asked for,
   * and a real picture (check_png counts distinct pixels). */
  g_autofree char *big = g_build_filename (shots_dir (), "mlp-window-1600x1100.png", NULL);
  g_assert_true (twb_window_save_screenshot_sized (w, big, 1600, 1100, &error));
  g_assert_no_error (error);
  check_png (big, 1600, 1100);

  const char *exts[] = { "png", "svg", "pdf" };
  for (int i = 0; i < 3; i++)
    {
      g_autofree char *name = g_strdup_printf ("mlp-drawing.%s", exts[i]);
      g_autofree char *out = g_build_filename (shots_dir (), name, NULL);
      g_assert_true (gtk_widget_activate_action (GTK_WIDGET (w), "win.export-to", "s", out));
      twt_ui_pump ();
      GStatBuf st;
      g_assert_cmpint (g_stat (out, &st), ==, 0);
      g_assert_cmpint (st.st_size, >, 1000);
      if (i == 0)
        check_png (out, -1, -1);
    }
  for (const char *const *p = (const char *const[]) { "debugger", "profiler", "training", NULL }; *p; p++)
    {
      g_assert_true (gtk_widget_activate_action (GTK_WIDGET (w), "win.show-panel", "s", *p));
      g_assert_cmpstr (twb_window_get_panel (w), ==, *p);
      GtkWidget *panel = gtk_stack_get_visible_child (GTK_STACK (w->panel_stack));
      g_assert_nonnull (panel);
      assert_no_issue_numbers (panel);
    }
  assert_no_issue_numbers (GTK_WIDGET (w));
  close_window (w);
}

static void
test_keyboard (void)
{
  TwbWindow *w = build_small_model ();
  TwbDocument *doc = twb_window_get_document (w);
  TwbGraphCanvas *c = twb_window_get_canvas (w);
  twb_document_clear_selection (doc);
  gtk_widget_grab_focus (GTK_WIDGET (c));
  g_assert_true (twb_graph_canvas_focus_next (c, 1));
  g_assert_cmpstr (twb_graph_canvas_get_focus_node (c), ==, "x");
  g_assert_true (twb_graph_canvas_focus_next (c, 1));
  g_auto (GStrv) sel = twb_document_get_selection (doc);
  g_assert_cmpstr (sel[0], ==, twb_graph_canvas_get_focus_node (c));
  tw_node *n = tw_graph_find (twb_document_get_graph (doc), sel[0]);
  double x0 = n->x;
  twb_graph_canvas_move_selection (c, 20, 0);
  g_assert_cmpfloat (tw_graph_find (twb_document_get_graph (doc), sel[0])->x, ==, x0 + 20);
  act (w, "graph.undo");
  g_assert_cmpfloat (tw_graph_find (twb_document_get_graph (doc), sel[0])->x, ==, x0);
  act (w, "graph.edit-node");
  GtkWidget *focus = gtk_root_get_focus (GTK_ROOT (w));
  g_assert_true (focus && gtk_widget_is_ancestor (focus, GTK_WIDGET (twb_window_get_inspector (w))));
  /* With a text field focused, graph.copy/delete step aside for it. */
  if (GTK_IS_EDITABLE (focus) || GTK_IS_EDITABLE (gtk_widget_get_parent (focus)))
    {
      g_assert_false (g_action_group_get_action_enabled (G_ACTION_GROUP (w->graph_actions), "delete"));
      g_assert_false (g_action_group_get_action_enabled (G_ACTION_GROUP (w->graph_actions), "copy"));
    }
  gtk_widget_grab_focus (GTK_WIDGET (c));
  twt_ui_pump ();
  g_assert_true (g_action_group_get_action_enabled (G_ACTION_GROUP (w->graph_actions), "delete"));
  close_window (w);
}

static void
test_sequential_and_palette (void)
{
  TwbWindow *w = build_small_model ();
  TwbDocument *doc = twb_window_get_document (w);
  g_autoptr (GError) error = NULL;
  int n = tw_graph_n_nodes (twb_document_get_graph (doc));
  g_autofree char *before = twb_document_to_data (doc);
  g_assert_cmpint (twb_sequential_apply (doc, "relu1", "linear out_features=32\nrelu\nno_such_op\n", &error), ==, -1);
  g_assert_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_UNKNOWN_OP);
  g_clear_error (&error);
  g_autofree char *same = twb_document_to_data (doc);
  g_assert_cmpstr (before, ==, same);
  g_assert_cmpint (twb_sequential_apply (doc, "relu1", "linear out_features=32\nrelu\ndropout p=0.25\n", &error), ==, 3);
  g_assert_no_error (error);
  g_assert_cmpint (tw_graph_n_nodes (twb_document_get_graph (doc)), ==, n + 3);
  g_assert_cmpint (twb_window_count_issues (w), ==, 0);
  act (w, "graph.undo");
  g_assert_cmpint (tw_graph_n_nodes (twb_document_get_graph (doc)), ==, n);

  TwbPalette *p = twb_window_get_palette (w);
  int all = twb_palette_count_visible (p);
  twb_palette_set_search (p, "pool");
  int some = twb_palette_count_visible (p);
  g_assert_cmpint (some, >=, 3);
  g_assert_cmpint (some, <, all);
  /* The op named exactly comes first (Enter adds it), before names that
   * merely contain the text. */
  twb_palette_set_search (p, "sigmoid");
  g_assert_cmpstr (twb_palette_first_match (p), ==, "sigmoid");
  twb_palette_set_search (p, "relu");
  g_assert_cmpstr (twb_palette_first_match (p), ==, "relu");
  twb_palette_set_search (p, "SWISH");
  g_assert_cmpstr (twb_palette_first_match (p), ==, "hard_swish");
  twb_palette_set_search (p, "");
  close_window (w);
}

static void
test_bad_file_and_close_prompt (void)
{
  TwbWindow *w = build_small_model ();
  TwbDocument *doc = twb_window_get_document (w);
  g_autofree char *before = twb_document_to_data (doc);
  g_autofree char *bad = g_build_filename (shots_dir (), "broken.json", NULL);
  g_file_set_contents (bad, "{ \"format\": \"twb-model\", \"version\": 1, \"graph\": { \"nodes\": [ }", -1, NULL);
  g_assert_null (twb_window_open_file (w, bad));
  g_assert_nonnull (strstr (twb_window_get_toast (w), "broken.json"));
  g_autofree char *after = twb_document_to_data (doc);
  g_assert_cmpstr (before, ==, after);

  /* Unsaved changes: closing asks instead of closing. */
  g_assert_true (twb_document_get_dirty (doc));
  gtk_window_close (GTK_WINDOW (w));
  twt_ui_pump ();
  g_assert_true (gtk_widget_get_visible (GTK_WIDGET (w)));
  GList *tops = gtk_window_list_toplevels ();
  gboolean asked = FALSE;
  for (GList *l = tops; l; l = l->next)
    if (GTK_IS_MESSAGE_DIALOG (l->data) && gtk_widget_get_visible (l->data))
      {
        asked = TRUE;
        gtk_window_destroy (l->data);
      }
  g_list_free (tops);
  g_assert_true (asked);

  /* Autosave writes a recovery file; a clean close removes it. */
  g_autoptr (GError) error = NULL;
  g_assert_true (twb_document_autosave (doc, &error));
  g_auto (GStrv) rec = twb_document_list_recovery_files ();
  g_assert_cmpint (g_strv_length (rec), >=, 1);
  close_window (w);
  g_auto (GStrv) rec2 = twb_document_list_recovery_files ();
  g_assert_cmpint (g_strv_length (rec2), ==, g_strv_length (rec) - 1);
}

/* The unsaved-changes prompt, visible now: NULL when there is none. */
static GtkDialog *
find_prompt (void)
{
  GtkDialog *found = NULL;
  GList *tops = gtk_window_list_toplevels ();
  for (GList *l = tops; l; l = l->next)
    if (GTK_IS_MESSAGE_DIALOG (l->data) && gtk_widget_get_visible (l->data))
      found = l->data;
  g_list_free (tops);
  return found;
}

/* Close a modified window and answer the prompt with each of its
 * buttons: Cancel keeps the window, Discard closes it and leaves the file
 * as it was, Save writes the file and closes.  Nothing may be logged on the
 * way (main() makes every warning and critical fatal): answering used to
 * finalize the window under the dialog, which then disconnected from it. */
static void
test_close_prompt_answers (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *model = g_build_filename (g_getenv ("TWB_ASSETS_DIR"), "models", "mlp.json", NULL);
  g_autofree char *path = g_build_filename (shots_dir (), "prompt.json", NULL);
  g_autofree char *orig = NULL;
  g_assert_true (g_file_get_contents (model, &orig, NULL, &error));
  const int answers[] = { GTK_RESPONSE_REJECT, GTK_RESPONSE_ACCEPT };
  for (guint k = 0; k < G_N_ELEMENTS (answers); k++)
    {
      g_assert_true (g_file_set_contents (path, orig, -1, &error));
      g_autoptr (TwbDocument) doc = twb_document_new_from_file (path, &error);
      g_assert_no_error (error);
      TwbWindow *w = new_window (doc);
      g_object_add_weak_pointer (G_OBJECT (w), (gpointer *) &w);
      const char *id = twb_graph_canvas_add_node_at (twb_window_get_canvas (w), "relu", 600, 600);
      g_assert_nonnull (id);
      g_autofree char *added = g_strdup (id);
      twt_ui_pump ();
      g_assert_true (twb_document_get_dirty (doc));

      /* Cancel: the window stays, still modified. */
      act (w, "win.close");
      GtkDialog *d = find_prompt ();
      g_assert_nonnull (d);
      gtk_dialog_response (d, GTK_RESPONSE_CANCEL);
      twt_ui_pump ();
      g_assert_nonnull (w);
      g_assert_null (find_prompt ());
      g_assert_true (twb_document_get_dirty (doc));

      act (w, "win.close");
      d = find_prompt ();
      g_assert_nonnull (d);
      gtk_dialog_response (d, answers[k]);
      twt_ui_pump ();
      g_assert_null (w);
      g_assert_null (find_prompt ());
      g_autoptr (TwbDocument) back = twb_document_new_from_file (path, &error);
      g_assert_no_error (error);
      gboolean has = tw_graph_find (twb_document_get_graph (back), added) != NULL;
      if (answers[k] == GTK_RESPONSE_REJECT)
        {
          g_autofree char *now = NULL;
          g_assert_true (g_file_get_contents (path, &now, NULL, &error));
          g_assert_cmpstr (now, ==, orig);
          g_assert_false (has);
        }
      else
        g_assert_true (has);
    }
}

int
main (int argc, char **argv)
{
  g_setenv ("TWB_COLOR_SCHEME", "light", FALSE);
  g_autofree char *home = twt_ui_private_home ("ui");
  g_test_init (&argc, &argv, NULL);
  /* Any warning or critical, ours or GTK's, ends the test as a failure
   * (g_test_init's default, stated here because the tests rely on it: a
   * use after free in GObject shows only as such a warning). */
  g_log_set_always_fatal (G_LOG_FATAL_MASK | G_LOG_LEVEL_WARNING | G_LOG_LEVEL_CRITICAL);
  if (!gtk_init_check ())
    {
      g_print ("1..0 # SKIP no display\n");
      return 0;
    }
  tw_ops_init ();
  app = twb_application_new (G_APPLICATION_NON_UNIQUE);
  g_application_register (G_APPLICATION (app), NULL, NULL);
  twb_application_load_style ();

  g_test_add_func ("/ui/build-undo-save-reopen", test_build_undo_save);
  g_test_add_func ("/ui/invalid-edge-refused", test_invalid_edge);
  g_test_add_func ("/ui/shape-error-shown-and-cleared", test_shape_error);
  g_test_add_func ("/ui/inspector-validation", test_inspector_validation);
  g_test_add_func ("/ui/copy-paste-keeps-attrs", test_copy_paste);
  g_test_add_func ("/ui/collapse-expand", test_collapse_expand);
  g_test_add_func ("/ui/screenshot-and-export", test_screenshot_and_export);
  g_test_add_func ("/ui/keyboard", test_keyboard);
  g_test_add_func ("/ui/sequential-and-palette", test_sequential_and_palette);
  g_test_add_func ("/ui/bad-file-and-close-prompt", test_bad_file_and_close_prompt);
  g_test_add_func ("/ui/close-prompt-cancel-discard-save", test_close_prompt_answers);
  int st = g_test_run ();
  g_object_unref (app);
  return st;
}
