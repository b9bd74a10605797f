/* test-document.c — the graph editor's document model, without a display:
 * building through the API, undo/redo of every kind of edit, files, refused
 * edges and attributes, live shape errors, clipboard, blocks, layout,
 * incremental inference against full inference, recovery files. */
#include "graph_editor/twb-document.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#define ASSERT_OK(expr)                                                                          \
  G_STMT_START                                                                                   \
  {                                                                                              \
    g_autoptr (GError) _e = NULL;                                                                \
    gboolean _ok = (expr);                                                                       \
    g_assert_no_error (_e);                                                                      \
    g_assert_true (_ok);                                                                         \
  }                                                                                              \
  G_STMT_END

static void
set_text (TwbDocument *doc, const char *id, const char *name, const char *text)
{
  g_autoptr (GError) error = NULL;
  gboolean ok = twb_document_set_attr_text (doc, id, name, text, &error);
  g_assert_no_error (error);
  g_assert_true (ok);
}

static void
connect (TwbDocument *doc, const char *from, const char *to, int port)
{
  g_autoptr (GError) error = NULL;
  gboolean ok = twb_document_connect (doc, from, to, port, &error);
  g_assert_no_error (error);
  g_assert_true (ok);
}

static void
add (TwbDocument *doc, const char *op, const char *id, double x)
{
  g_autoptr (GError) error = NULL;
  const char *got = twb_document_add_node (doc, op, id, x, 100, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (got, ==, id);
}

static int
n_errors (TwbDocument *doc)
{
  return (int) twb_document_get_diagnostics (doc)->len;
}

static const char *
error_of (TwbDocument *doc, const char *id)
{
  return tw_graph_find (twb_document_get_graph (doc), id)->error;
}

/* input → flatten → linear → relu → linear → cross_entropy, with labels. */
static TwbDocument *
build_mlp (GPtrArray *states)
{
  TwbDocument *doc = twb_document_new ();
#define STATE() if (states) g_ptr_array_add (states, twb_document_to_data (doc))
  STATE ();
  add (doc, "input", "x", 0);
  STATE ();
  set_text (doc, "x", "shape", "[1, 28, 28]");
  STATE ();
  set_text (doc, "x", "dtype", "f32");
  STATE ();
  set_text (doc, "x", "role", "data");
  STATE ();
  add (doc, "input", "y", 0);
  STATE ();
  set_text (doc, "y", "shape", "[]");
  STATE ();
  set_text (doc, "y", "dtype", "i64");
  STATE ();
  set_text (doc, "y", "role", "label");
  STATE ();
  add (doc, "flatten", "flat", 200);
  STATE ();
  connect (doc, "x", "flat", 0);
  STATE ();
  add (doc, "linear", "fc1", 400);
  STATE ();
  connect (doc, "flat", "fc1", 0);
  STATE ();
  ASSERT_OK (twb_document_set_attr_int (doc, "fc1", "out_features", 64, &_e));
  STATE ();
  add (doc, "relu", "act", 600);
  STATE ();
  connect (doc, "fc1", "act", 0);
  STATE ();
  add (doc, "linear", "fc2", 800);
  STATE ();
  connect (doc, "act", "fc2", 0);
  STATE ();
  set_text (doc, "fc2", "out_features", "10");
  STATE ();
  add (doc, "cross_entropy", "loss", 1000);
  STATE ();
  connect (doc, "fc2", "loss", 0);
  STATE ();
  connect (doc, "y", "loss", 1);
  STATE ();
  twb_document_set_outputs (doc, (const char *[]) { "fc2", NULL });
  STATE ();
#undef STATE
  return doc;
}

static void
test_build (void)
{
  g_autoptr (TwbDocument) doc = build_mlp (NULL);
  g_assert_cmpint (n_errors (doc), ==, 0);
  tw_node *fc1 = tw_graph_find (twb_document_get_graph (doc), "fc1");
  g_autofree char *t = tw_tinfo_to_string (&fc1->out_info[0]);
  g_assert_cmpstr (t, ==, "f32[N, 64]");
  g_assert_cmpint (twb_document_param_count (doc), ==, 784 * 64 + 64 + 64 * 10 + 10);
  g_assert_cmpfloat (twb_document_flops (doc), >, 0);
  g_assert_true (twb_document_get_dirty (doc));
  g_assert_cmpstr (twb_document_undo_label (doc), ==, "Set outputs");
  g_autofree char *title = twb_document_get_title (doc);
  g_assert_cmpstr (title, ==, "Untitled");

  /* Never saved, but named (an imported model): its name. */
  g_autoptr (TwbDocument) named = twb_document_new_for_model (tw_model_new ("resnet18"));
  g_autofree char *named_title = twb_document_get_title (named);
  g_assert_cmpstr (named_title, ==, "resnet18");
}

/* Undo every edit back to the empty model and redo them all, comparing the
 * serialised model with the one recorded after each edit. */
static void
check_undo_redo (TwbDocument *doc, GPtrArray *states)
{
  for (guint i = states->len - 1; i > 0; i--)
    {
      g_autofree char *now = twb_document_to_data (doc);
      g_assert_cmpstr (now, ==, g_ptr_array_index (states, i));
      g_assert_true (twb_document_undo (doc));
    }
  g_assert_false (twb_document_can_undo (doc));
  g_assert_false (twb_document_undo (doc));
  {
    g_autofree char *now = twb_document_to_data (doc);
    g_assert_cmpstr (now, ==, g_ptr_array_index (states, 0));
  }
  for (guint i = 1; i < states->len; i++)
    {
      g_assert_true (twb_document_redo (doc));
      g_autofree char *now = twb_document_to_data (doc);
      g_assert_cmpstr (now, ==, g_ptr_array_index (states, i));
    }
  g_assert_false (twb_document_can_redo (doc));
}

static void
test_undo_redo (void)
{
  g_autoptr (GPtrArray) states = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (TwbDocument) doc = build_mlp (states);
#define STATE() g_ptr_array_add (states, twb_document_to_data (doc))
  /* Every other kind of edit. */
  ASSERT_OK (twb_document_rename_node (doc, "fc1", "hidden", &_e));
  STATE ();
  g_assert_cmpstr (tw_graph_find (twb_document_get_graph (doc), "act")->inputs[0], ==, "hidden");
  add (doc, "linear", "fc3", 800);
  STATE ();
  connect (doc, "act", "fc3", 0);
  STATE ();
  set_text (doc, "fc3", "out_features", "10");
  STATE ();
  ASSERT_OK (twb_document_set_share (doc, "fc3", "fc2", &_e));
  STATE ();
  set_text (doc, "fc3", "bias", "false");
  STATE ();
  ASSERT_OK (twb_document_unset_attr (doc, "fc3", "bias", &_e));
  STATE ();
  twb_document_move_nodes (doc, (const char *[]) { "fc3", "act", NULL }, 10, 5, FALSE);
  twb_document_move_nodes (doc, (const char *[]) { "fc3", "act", NULL }, 10, 5, TRUE);
  twb_document_move_nodes (doc, (const char *[]) { "fc3", "act", NULL }, 10, 5, TRUE);
  STATE ();   /* one undo step for the whole drag */
  g_assert_cmpfloat (tw_graph_find (twb_document_get_graph (doc), "act")->x, ==, 630);
  ASSERT_OK (twb_document_disconnect (doc, "fc3", 0, &_e));
  STATE ();
  connect (doc, "hidden", "fc3", 0);
  STATE ();
  connect (doc, "flat", "fc3", 0);   /* replaces the edge into port 0 */
  STATE ();
  tw_recipe r;
  tw_recipe_copy (&r, &twb_document_get_model (doc)->recipe);
  r.batch_size = 32;
  r.optimizer.lr = 0.5;
  ASSERT_OK (twb_document_set_recipe (doc, &r, &_e));
  tw_recipe_clear (&r);
  STATE ();
  twb_document_begin_group (doc, "Two at once");
  add (doc, "relu", "g1", 0);
  add (doc, "relu", "g2", 0);
  twb_document_end_group (doc);
  STATE ();
  g_assert_cmpstr (twb_document_undo_label (doc), ==, "Two at once");
  twb_document_select (doc, (const char *[]) { "act", "fc3", NULL }, FALSE);
  ASSERT_OK (twb_document_collapse_selection (doc, "head", &_e));
  STATE ();
  ASSERT_OK (twb_document_expand_block (doc, "head", &_e));
  STATE ();
  ASSERT_OK (twb_document_remove_nodes (doc, (const char *[]) { "act", "g1", NULL }, &_e));
  STATE ();
  twb_document_select_all (doc);
  ASSERT_OK (twb_document_duplicate_selection (doc, &_e));
  STATE ();
  twb_document_auto_layout (doc);
  STATE ();
#undef STATE
  check_undo_redo (doc, states);
}

static void
test_save_reopen (void)
{
  g_autoptr (TwbDocument) doc = build_mlp (NULL);
  g_autofree char *dir = g_dir_make_tmp ("twb-doc-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "mlp.json", NULL);
  g_assert_true (twb_document_get_dirty (doc));
  ASSERT_OK (twb_document_save (doc, path, &_e));
  g_assert_false (twb_document_get_dirty (doc));
  g_assert_cmpstr (twb_document_get_path (doc), ==, path);
  g_autofree char *title = twb_document_get_title (doc);
  g_assert_cmpstr (title, ==, "mlp.json");

  g_autoptr (GError) error = NULL;
  g_autoptr (TwbDocument) again = twb_document_new_from_file (path, &error);
  g_assert_no_error (error);
  g_autofree char *a = twb_document_to_data (doc);
  g_autofree char *b = twb_document_to_data (again);
  g_assert_cmpstr (a, ==, b);
  g_assert_false (twb_document_get_dirty (again));
  g_assert_cmpint (n_errors (again), ==, 0);

  /* Undo back to the saved state: clean again. */
  add (doc, "relu", "extra", 0);
  g_assert_true (twb_document_get_dirty (doc));
  twb_document_undo (doc);
  g_assert_false (twb_document_get_dirty (doc));

  /* A file that cannot be read: no document, the reason. */
  g_autofree char *bad = g_build_filename (dir, "bad.json", NULL);
  g_assert_true (g_file_set_contents (bad, "{ \"format\": \"twb-model\", \"version\": 1 }", -1, NULL));
  TwbDocument *none = twb_document_new_from_file (bad, &error);
  g_assert_null (none);
  g_assert_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_IO);
  g_assert_nonnull (strstr (error->message, "bad.json"));
  g_unlink (bad);
  g_unlink (path);
  g_rmdir (dir);
}

static void
refused (TwbDocument *doc, const char *from, const char *to, int port, int code,
         const char *needle)
{
  g_autofree char *before = twb_document_to_data (doc);
  const char *label = twb_document_undo_label (doc);
  g_autoptr (GError) error = NULL;
  g_assert_false (twb_document_can_connect (doc, from, to, port, &error));
  g_assert_error (error, TWB_DOCUMENT_ERROR, code);
  g_test_message ("%s → %s:%d refused: %s", from, to, port, error->message);
  g_assert_nonnull (strstr (error->message, needle));
  g_clear_error (&error);
  g_assert_false (twb_document_connect (doc, from, to, port, &error));
  g_assert_error (error, TWB_DOCUMENT_ERROR, code);
  g_autofree char *after = twb_document_to_data (doc);
  g_assert_cmpstr (before, ==, after);
  g_assert_cmpstr (label, ==, twb_document_undo_label (doc));
}

static void
test_invalid_edges (void)
{
  g_autoptr (TwbDocument) doc = build_mlp (NULL);
  refused (doc, "fc2", "fc1", 0, TWB_DOCUMENT_ERROR_INVALID_EDGE, "cycle: fc1 → act → fc2 → fc1");
  refused (doc, "act", "act", 0, TWB_DOCUMENT_ERROR_INVALID_EDGE, "itself");
  refused (doc, "flat", "act", 1, TWB_DOCUMENT_ERROR_INVALID_EDGE, "no port 1");
  refused (doc, "flat", "act", -1, TWB_DOCUMENT_ERROR_INVALID_EDGE, "no port -1");
  refused (doc, "fc1", "x", 0, TWB_DOCUMENT_ERROR_INVALID_EDGE, "takes no inputs");
  refused (doc, "fc1:1", "act", 0, TWB_DOCUMENT_ERROR_INVALID_EDGE, "no output 1");
  refused (doc, "nothing", "act", 0, TWB_DOCUMENT_ERROR_NO_SUCH_NODE, "nothing");
  refused (doc, "fc1", "nothing", 0, TWB_DOCUMENT_ERROR_NO_SUCH_NODE, "nothing");
  refused (doc, "fc2", "loss", 1, TWB_DOCUMENT_ERROR_INVALID_EDGE, "integer labels");
  /* A port in the middle can be left empty: the node reports it, the file
   * keeps it as "", and undo reconnects it. */
  g_autoptr (GError) error = NULL;
  g_assert_true (twb_document_disconnect (doc, "loss", 0, &error));
  g_assert_no_error (error);
  g_assert_cmpint (n_errors (doc), ==, 1);
  g_assert_cmpstr (tw_graph_find (twb_document_get_graph (doc), "loss")->inputs[0], ==, "");
  g_assert_nonnull (strstr (tw_graph_find (twb_document_get_graph (doc), "loss")->error,
                            "not connected"));
  g_assert_false (twb_document_disconnect (doc, "loss", 0, &error));   /* already empty */
  g_clear_error (&error);
  g_assert_true (twb_document_undo (doc));
  g_assert_cmpint (n_errors (doc), ==, 0);
}

static void
test_shape_error (void)
{
  g_autoptr (TwbDocument) doc = build_mlp (NULL);
  add (doc, "linear", "a", 400);
  add (doc, "linear", "b", 400);
  add (doc, "add", "sum", 600);
  connect (doc, "flat", "a", 0);
  connect (doc, "flat", "b", 0);
  set_text (doc, "a", "out_features", "10");
  set_text (doc, "b", "out_features", "20");
  connect (doc, "a", "sum", 0);
  connect (doc, "b", "sum", 1);
  g_assert_cmpint (n_errors (doc), ==, 1);
  const tw_diag *d = &g_array_index (twb_document_get_diagnostics (doc), tw_diag, 0);
  g_assert_cmpstr (d->node_id, ==, "sum");
  g_assert_nonnull (error_of (doc, "sum"));
  g_assert_null (error_of (doc, "a"));
  g_assert_null (error_of (doc, "b"));
  g_test_message ("sum: %s", d->message);
  set_text (doc, "b", "out_features", "10");
  g_assert_cmpint (n_errors (doc), ==, 0);
  g_assert_null (error_of (doc, "sum"));
  g_assert_cmpfloat (twb_document_last_infer_us (doc), >=, 0);
  twb_document_undo (doc);
  g_assert_cmpint (n_errors (doc), ==, 1);
  g_assert_nonnull (error_of (doc, "sum"));
}

static void
attr_refused (TwbDocument *doc, const char *id, const char *name, const char *text,
              const char *needle)
{
  g_autofree char *before = twb_document_to_data (doc);
  g_autoptr (GError) error = NULL;
  g_assert_false (twb_document_set_attr_text (doc, id, name, text, &error));
  g_assert_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ATTR);
  g_test_message ("%s.%s = %s refused: %s", id, name, text, error->message);
  g_assert_nonnull (strstr (error->message, needle));
  g_autofree char *after = twb_document_to_data (doc);
  g_assert_cmpstr (before, ==, after);
}

static void
test_attr_validation (void)
{
  g_autoptr (TwbDocument) doc = build_mlp (NULL);
  attr_refused (doc, "fc1", "out_feature", "3", "no attribute 'out_feature'");
  attr_refused (doc, "fc1", "out_features", "many", "fc1.out_features");
  attr_refused (doc, "loss", "reduction", "average", "average");
  attr_refused (doc, "x", "role", "teacher", "teacher");
  {
    g_autoptr (GError) e = NULL;
    g_assert_false (twb_document_unset_attr (doc, "fc1", "out_features", &e));
    g_assert_error (e, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ATTR);
  }
  set_text (doc, "loss", "reduction", "sum");
  g_assert_cmpstr (tw_attrs_get_string (tw_graph_find (twb_document_get_graph (doc), "loss")->attrs,
                                        "reduction", NULL), ==, "sum");
  g_autoptr (GError) error = NULL;
  g_assert_false (twb_document_rename_node (doc, "fc1", "fc2", &error));
  g_assert_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ID);
  g_clear_error (&error);
  g_assert_false (twb_document_rename_node (doc, "fc1", "a:b", &error));
  g_assert_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ID);
  g_clear_error (&error);
  g_assert_null (twb_document_add_node (doc, "no_such_op", NULL, 0, 0, &error));
  g_assert_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_UNKNOWN_OP);
  g_clear_error (&error);
  /* Fresh ids follow the op. */
  const char *id = twb_document_add_node (doc, "linear", NULL, 0, 0, &error);
  g_assert_cmpstr (id, ==, "linear1");
}

static GPtrArray *
graph_nodes_json (TwbDocument *doc)
{
  g_autofree char *text = twb_document_to_data (doc);
  g_autoptr (JsonParser) p = json_parser_new ();
  g_assert_true (json_parser_load_from_data (p, text, -1, NULL));
  JsonObject *root = json_node_get_object (json_parser_get_root (p));
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) json_node_unref);
  g_ptr_array_add (out, json_node_copy (json_object_get_member (root, "graph")));
  g_ptr_array_add (out, json_node_copy (json_object_get_member (root, "training")));
  return out;
}

static void
test_clipboard (void)
{
  g_autoptr (TwbDocument) doc = build_mlp (NULL);
  set_text (doc, "fc1", "bias", "false");
  twb_document_select (doc, (const char *[]) { "fc1", "act", NULL }, FALSE);
  g_autofree char *text = twb_document_copy_selection (doc);
  g_assert_nonnull (strstr (text, "twb-clipboard"));
  ASSERT_OK (twb_document_paste (doc, text, 30, 40, &_e));
  tw_graph *g = twb_document_get_graph (doc);
  tw_node *c1 = tw_graph_find (g, "fc1_2");
  tw_node *ca = tw_graph_find (g, "act_2");
  g_assert_nonnull (c1);
  g_assert_nonnull (ca);
  g_assert_true (tw_attrs_equal (c1->attrs, tw_graph_find (g, "fc1")->attrs));
  g_assert_cmpint (c1->n_inputs, ==, 0);      /* flat was not copied */
  g_assert_cmpstr (ca->inputs[0], ==, "fc1_2");
  g_assert_cmpfloat (c1->x, ==, tw_graph_find (g, "fc1")->x + 30);
  g_auto (GStrv) sel = twb_document_get_selection (doc);
  g_assert_cmpuint (g_strv_length (sel), ==, 2);
  g_assert_cmpstr (sel[0], ==, "fc1_2");
  /* Again: the next free suffix. */
  ASSERT_OK (twb_document_paste (doc, text, 60, 80, &_e));
  g_assert_nonnull (tw_graph_find (g, "fc1_3"));
  /* Into another document: ids kept. */
  g_autoptr (TwbDocument) other = twb_document_new ();
  ASSERT_OK (twb_document_paste (other, text, 0, 0, &_e));
  g_assert_nonnull (tw_graph_find (twb_document_get_graph (other), "fc1"));
  g_assert_nonnull (tw_graph_find (twb_document_get_graph (other), "act"));
  /* Not a clipboard. */
  g_autoptr (GError) error = NULL;
  g_assert_false (twb_document_paste (doc, "{\"format\": \"twb-model\"}", 0, 0, &error));
  g_assert_nonnull (error);
  g_clear_error (&error);
  g_assert_false (twb_document_paste (doc, "not json", 0, 0, &error));
  g_assert_nonnull (error);
  g_clear_error (&error);
  /* Text from another application nesting 100,000 levels deep overflowed
   * json-glib's recursion: refused as any text that is no clipboard. */
  g_autofree char *deep = g_strnfill (100000, '[');
  g_assert_false (twb_document_paste (doc, deep, 0, 0, &error));
  g_assert_nonnull (strstr (error->message, "not JSON"));
  /* One undo step removes a paste. */
  twb_document_undo (doc);
  g_assert_null (tw_graph_find (g, "fc1_3"));
}

static void
test_blocks (void)
{
  g_autoptr (TwbDocument) doc = build_mlp (NULL);
  g_autoptr (GPtrArray) before = graph_nodes_json (doc);
  twb_document_select (doc, (const char *[]) { "fc1", "act", "fc2", NULL }, FALSE);
  ASSERT_OK (twb_document_collapse_selection (doc, "classifier", &_e));
  g_assert_cmpstr (twb_document_block_of (doc, "act"), ==, "classifier");
  g_assert_null (twb_document_block_of (doc, "flat"));
  g_assert_true (twb_document_block_is_collapsed (doc, "classifier"));
  g_auto (GStrv) members = twb_document_block_members (doc, "classifier");
  g_assert_cmpuint (g_strv_length (members), ==, 3);
  /* The box at the corner of the frame around its nodes (the first of
   * which is at x 400): it moves with them. */
  double bx, by;
  twb_document_block_position (doc, "classifier", &bx, &by);
  g_assert_cmpfloat (bx, ==, 400 - TW_LAYOUT_FRAME_PAD);
  ASSERT_OK (twb_document_move_block (doc, "classifier", 40, 20, &_e));
  double mx, my;
  twb_document_block_position (doc, "classifier", &mx, &my);
  g_assert_cmpfloat (mx, ==, bx + 40);
  g_assert_cmpfloat (my, ==, by + 20);
  twb_document_undo (doc);
  g_autoptr (GPtrArray) collapsed = graph_nodes_json (doc);
  for (guint i = 0; i < before->len; i++)
    g_assert_true (json_node_equal (before->pdata[i], collapsed->pdata[i]));

  /* Saved in the file, read back. */
  g_autofree char *text = twb_document_to_data (doc);
  g_assert_nonnull (strstr (text, "\"editor\""));
  g_autoptr (GError) error = NULL;
  tw_model *m = tw_model_load_from_data (text, -1, "blocks.json", &error);
  g_assert_no_error (error);
  g_autoptr (TwbDocument) again = twb_document_new_for_model (m);
  g_assert_cmpstr (twb_document_block_of (again, "fc2"), ==, "classifier");
  g_auto (GStrv) names = twb_document_list_blocks (again);
  g_assert_cmpuint (g_strv_length (names), ==, 1);

  ASSERT_OK (twb_document_expand_block (doc, "classifier", &_e));
  g_assert_null (twb_document_block_of (doc, "act"));
  g_autoptr (GPtrArray) expanded = graph_nodes_json (doc);
  for (guint i = 0; i < before->len; i++)
    g_assert_true (json_node_equal (before->pdata[i], expanded->pdata[i]));
  twb_document_undo (doc);
  g_assert_true (twb_document_block_is_collapsed (doc, "classifier"));
  /* Nodes in a collapsed block cannot go into another one. */
  twb_document_select (doc, (const char *[]) { "act", NULL }, FALSE);
  g_assert_false (twb_document_collapse_selection (doc, "other", &error));
  g_assert_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ID);
  /* Removing a member drops it from the block. */
  ASSERT_OK (twb_document_remove_nodes (doc, (const char *[]) { "act", NULL }, &_e));
  g_auto (GStrv) left = twb_document_block_members (doc, "classifier");
  g_assert_cmpuint (g_strv_length (left), ==, 2);
}

/* A random DAG of shape-sensitive ops on one [N, 8] input. */
static TwbDocument *
random_dag (GRand *r, int n)
{
  g_autoptr (tw_model) m = tw_model_new ("random");
  tw_graph *g = m->graph;
  tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]) { 8 }, "data");
  static const char *ops[] = { "relu", "linear", "add", "tanh", "mul" };
  for (int i = 1; i < n; i++)
    {
      const char *op = ops[g_rand_int_range (r, 0, G_N_ELEMENTS (ops))];
      g_autofree char *id = g_strdup_printf ("n%d", i);
      g_autofree char *a = g_strdup_printf ("n%d", g_rand_int_range (r, 0, i));
      g_autofree char *b = g_strdup_printf ("n%d", g_rand_int_range (r, 0, i));
      if (strcmp (a, "n0") == 0)
        strcpy (a, "x");
      if (strcmp (b, "n0") == 0)
        strcpy (b, "x");
      tw_attrs *attrs = tw_attrs_new ();
      if (strcmp (op, "linear") == 0)
        tw_attrs_set_int (attrs, "out_features", g_rand_boolean (r) ? 8 : 4);
      gboolean binary = strcmp (op, "add") == 0 || strcmp (op, "mul") == 0;
      tw_graph_add (g, id, op, attrs, a, binary ? b : NULL, NULL);
      tw_attrs_free (attrs);
    }
  return twb_document_new_for_model (g_steal_pointer (&m));
}

static void
assert_same_inference (tw_graph *a, tw_graph *b)
{
  g_assert_cmpint (tw_graph_n_nodes (a), ==, tw_graph_n_nodes (b));
  for (int i = 0; i < tw_graph_n_nodes (a); i++)
    {
      tw_node *x = tw_graph_node (a, i), *y = tw_graph_node (b, i);
      g_assert_cmpstr (x->id, ==, y->id);
      g_assert_cmpint (x->valid, ==, y->valid);
      g_assert_cmpstr (x->error, ==, y->error);
      g_assert_cmpint (x->n_outputs, ==, y->n_outputs);
      g_assert_cmpint (x->out_info != NULL, ==, y->out_info != NULL);
      for (int k = 0; x->out_info && k < x->n_outputs; k++)
        g_assert_true (tw_tinfo_equal (&x->out_info[k], &y->out_info[k]));
      g_assert_cmpint (x->n_params, ==, y->n_params);
      for (int k = 0; k < x->n_params; k++)
        g_assert_true (tw_tinfo_equal (&x->params[k].info, &y->params[k].info));
      g_assert_cmpfloat (x->cost.flops, ==, y->cost.flops);
      g_assert_cmpint (x->in_ports != NULL, ==, y->in_ports != NULL);
      for (int k = 0; x->in_ports && k < x->n_inputs; k++)
        {
          g_assert_cmpint (x->in_ports[k].node, ==, y->in_ports[k].node);
          g_assert_cmpint (x->in_ports[k].output, ==, y->in_ports[k].output);
        }
    }
  const GArray *da = tw_graph_diagnostics (a), *db = tw_graph_diagnostics (b);
  g_assert_cmpuint (da->len, ==, db->len);
  for (guint i = 0; i < da->len; i++)
    {
      g_assert_cmpstr (g_array_index (da, tw_diag, i).node_id, ==,
                       g_array_index (db, tw_diag, i).node_id);
      g_assert_cmpstr (g_array_index (da, tw_diag, i).message, ==,
                       g_array_index (db, tw_diag, i).message);
    }
}

static char *
random_id (GRand *r, tw_graph *g)
{
  return g_strdup (tw_graph_node (g, g_rand_int_range (r, 0, tw_graph_n_nodes (g)))->id);
}

static void
test_incremental (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (42);
  g_autoptr (TwbDocument) doc = random_dag (r, 60);
  tw_graph *g = twb_document_get_graph (doc);
  int applied = 0;
  for (int step = 0; step < 200; step++)
    {
      g_autofree char *a = random_id (r, g);
      g_autofree char *b = random_id (r, g);
      g_autoptr (GError) error = NULL;
      switch (g_rand_int_range (r, 0, 9))
        {
        case 0:
          applied += twb_document_set_attr_int (doc, a, "out_features",
                                                g_rand_boolean (r) ? 8 : 4, &error);
          break;
        case 1:
          applied += twb_document_connect (doc, a, b, g_rand_int_range (r, 0, 2), &error);
          break;
        case 2:
          if (strcmp (a, "x") != 0)
            applied += twb_document_remove_nodes (doc, (const char *[]) { a, NULL }, &error);
          break;
        case 3:
          {
            const char *id = twb_document_add_node (doc, g_rand_boolean (r) ? "relu" : "add",
                                                    NULL, 0, 0, &error);
            applied += id && twb_document_connect (doc, a, id, 0, NULL);
            break;
          }
        case 4:
          {
            g_autofree char *to = g_strdup_printf ("r%d", step);
            applied += twb_document_rename_node (doc, a, to, &error);
            break;
          }
        case 5:
          applied += twb_document_undo (doc);
          break;
        case 6:
          applied += twb_document_redo (doc);
          break;
        case 7:
          applied += twb_document_set_share (doc, a, g_rand_boolean (r) ? b : NULL, &error);
          break;
        case 8:
          applied += twb_document_disconnect (doc, a, 1, &error);
          break;
        }
      g_autoptr (tw_graph) full = tw_graph_copy (g);
      tw_graph_infer (full);
      assert_same_inference (g, full);
    }
  g_test_message ("%d of 200 random edits applied", applied);
  g_assert_cmpint (applied, >, 100);
}

static void
test_layout (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (7);
  g_autoptr (TwbDocument) doc = random_dag (r, 80);
  twb_document_move_nodes (doc, (const char *[]) { "n5", NULL }, 300, 300, FALSE);
  twb_document_auto_layout (doc);
  tw_graph *g = twb_document_get_graph (doc);
  int n = tw_graph_n_nodes (g);
  for (int i = 0; i < n; i++)
    {
      tw_node *a = tw_graph_node (g, i);
      double aw, ah;
      twb_document_node_size (doc, a->id, &aw, &ah);
      g_assert_cmpfloat (aw, >=, 140);
      g_assert_cmpfloat (aw, <=, 240);
      for (int j = i + 1; j < n; j++)
        {
          tw_node *b = tw_graph_node (g, j);
          double bw, bh;
          twb_document_node_size (doc, b->id, &bw, &bh);
          gboolean apart = a->x + aw <= b->x || b->x + bw <= a->x || a->y + ah <= b->y
                           || b->y + bh <= a->y;
          g_assert_true (apart);
        }
      for (int k = 0; k < a->n_inputs; k++)
        {
          tw_node *src = tw_graph_node (g, tw_graph_resolve (g, a->inputs[k]).node);
          double sw;
          twb_document_node_size (doc, src->id, &sw, NULL);
          g_assert_cmpfloat (src->x + sw, <, a->x);
        }
    }
  /* One undo step. */
  g_assert_cmpstr (twb_document_undo_label (doc), ==, "Arrange");

  /* A file without positions is laid out on load. */
  g_autofree char *text = twb_document_to_data (doc);
  g_autoptr (tw_model) m = tw_model_new (NULL);
  tw_graph_add_input (m->graph, "x", TW_F32, 1, (int64_t[]) { 4 }, "data");
  tw_graph_add (m->graph, "r", "relu", NULL, "x", NULL);
  g_autoptr (TwbDocument) fresh = twb_document_new_for_model (g_steal_pointer (&m));
  tw_node *x = tw_graph_find (twb_document_get_graph (fresh), "x");
  tw_node *rl = tw_graph_find (twb_document_get_graph (fresh), "r");
  g_assert_true (x->has_pos && rl->has_pos);
  g_assert_cmpfloat (x->x, <, rl->x);
  g_assert_false (twb_document_get_dirty (fresh));
}

static void
test_recovery (void)
{
  g_autoptr (TwbDocument) doc = build_mlp (NULL);
  ASSERT_OK (twb_document_autosave (doc, &_e));
  const char *file = twb_document_get_recovery_file (doc);
  g_assert_nonnull (file);
  g_assert_true (g_file_test (file, G_FILE_TEST_IS_REGULAR));
  g_assert_true (g_str_has_prefix (file, g_get_user_state_dir ()));
  g_auto (GStrv) list = twb_document_list_recovery_files ();
  g_assert_cmpuint (g_strv_length (list), ==, 1);
  g_assert_cmpstr (list[0], ==, file);

  /* Recover it: same model, dirty, untitled. */
  g_autoptr (GError) error = NULL;
  g_autoptr (TwbDocument) rec = twb_document_new_from_recovery (list[0], &error);
  g_assert_no_error (error);
  g_autofree char *a = twb_document_to_data (doc);
  g_autofree char *b = twb_document_to_data (rec);
  g_assert_cmpstr (a, ==, b);
  g_assert_true (twb_document_get_dirty (rec));
  g_assert_null (twb_document_get_path (rec));

  /* A clean save discards it. */
  g_autofree char *dir = g_dir_make_tmp ("twb-rec-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "m.json", NULL);
  ASSERT_OK (twb_document_save (doc, path, &_e));
  g_assert_false (g_file_test (list[0], G_FILE_TEST_EXISTS));
  g_assert_null (twb_document_get_recovery_file (doc));
  g_auto (GStrv) none = twb_document_list_recovery_files ();
  g_assert_cmpuint (g_strv_length (none), ==, 0);
  g_unlink (path);
  g_rmdir (dir);
}

static void
count_changed (TwbDocument *doc, guint flags, gpointer data)
{
  ((guint *) data)[0]++;
  ((guint *) data)[1] |= flags;
}

static void
test_signals (void)
{
  g_autoptr (TwbDocument) doc = twb_document_new ();
  guint seen[2] = { 0, 0 };
  g_signal_connect (doc, "changed", G_CALLBACK (count_changed), seen);
  add (doc, "relu", "r", 0);
  g_assert_cmpuint (seen[0], ==, 1);
  g_assert_true (seen[1] & TWB_CHANGE_STRUCTURE);
  g_assert_true (seen[1] & TWB_CHANGE_SHAPES);
  gboolean can_undo = FALSE;
  g_object_get (doc, "can-undo", &can_undo, NULL);
  g_assert_true (can_undo);
  seen[1] = 0;
  twb_document_move_nodes (doc, (const char *[]) { "r", NULL }, 5, 5, FALSE);
  g_assert_cmpuint (seen[1], ==, TWB_CHANGE_LAYOUT);
}

/* Renaming the loss node renames the recipe's loss with it (the loss that
 * training minimises), undoably, and the saved file names the new id. */
static void
test_rename_loss (void)
{
  g_autofree char *path = g_build_filename (g_getenv ("TWB_ASSETS_DIR"), "models", "mlp.json", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (TwbDocument) doc = twb_document_new_from_file (path, &error);
  g_assert_no_error (error);
  tw_model *m = twb_document_get_model (doc);
  g_assert_cmpstr (m->recipe.loss, ==, "loss");
  ASSERT_OK (twb_document_rename_node (doc, "loss", "xent", &_e));
  g_assert_cmpstr (m->recipe.loss, ==, "xent");
  g_assert_cmpstr (tw_graph_get_loss (m->graph), ==, "xent");
  g_autofree char *data = twb_document_to_data (doc);
  g_assert_nonnull (strstr (data, "\"loss\": \"xent\""));
  twb_document_undo (doc);
  g_assert_cmpstr (m->recipe.loss, ==, "loss");
  g_assert_cmpstr (tw_graph_get_loss (m->graph), ==, "loss");
  g_assert_nonnull (tw_graph_find (m->graph, "loss"));
}

/* The editor's pointer edits of edges: a taken input port refuses a new
 * edge (nothing changes), an edge moves into a free port in one undo step,
 * and a move into a taken port or a cycle changes nothing. */
static void
test_edge_edits (void)
{
  g_autoptr (TwbDocument) doc = build_mlp (NULL);
  add (doc, "relu", "act2", 600);
  g_autofree char *before = twb_document_to_data (doc);
  g_autoptr (GError) error = NULL;

  g_assert_cmpstr (twb_document_get_input (doc, "act", 0), ==, "fc1");
  g_assert_null (twb_document_get_input (doc, "act2", 0));
  g_assert_null (twb_document_get_input (doc, "act", 1));
  g_assert_null (twb_document_get_input (doc, "nosuch", 0));

  /* act's input is taken by fc1: flat → act is refused, naming the edge. */
  g_assert_false (twb_document_connect_free (doc, "flat", "act", 0, &error));
  g_assert_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_EDGE);
  g_assert_nonnull (strstr (error->message, "taken by fc1"));
  g_clear_error (&error);
  g_autofree char *after_refusal = twb_document_to_data (doc);
  g_assert_cmpstr (after_refusal, ==, before);
  /* Into a free port it connects. */
  ASSERT_OK (twb_document_connect_free (doc, "fc1", "act2", 0, &_e));
  g_assert_cmpstr (twb_document_get_input (doc, "act2", 0), ==, "fc1");
  g_assert_true (twb_document_undo (doc));
  g_assert_null (twb_document_get_input (doc, "act2", 0));

  /* Move fc1 → act to fc1 → act2: one undo step. */
  ASSERT_OK (twb_document_move_edge (doc, "act", 0, "act2", 0, &_e));
  g_assert_null (twb_document_get_input (doc, "act", 0));
  g_assert_cmpstr (twb_document_get_input (doc, "act2", 0), ==, "fc1");
  g_assert_true (twb_document_undo (doc));
  g_autofree char *undone = twb_document_to_data (doc);
  g_assert_cmpstr (undone, ==, before);
  g_assert_true (twb_document_redo (doc));
  g_assert_cmpstr (twb_document_get_input (doc, "act2", 0), ==, "fc1");
  g_assert_true (twb_document_undo (doc));

  /* Into a taken port (fc2's input has act): refused, nothing changes. */
  g_assert_false (twb_document_move_edge (doc, "act", 0, "fc2", 0, &error));
  g_assert_nonnull (strstr (error->message, "taken by act"));
  g_clear_error (&error);
  /* act → fc2 moved into fc1 would close a cycle fc1 → act → fc1. */
  g_assert_false (twb_document_move_edge (doc, "fc2", 0, "fc1", 0, &error));
  g_assert_nonnull (strstr (error->message, "cycle"));
  g_clear_error (&error);
  /* A free port has no edge to move. */
  g_assert_false (twb_document_move_edge (doc, "act2", 0, "fc2", 0, &error));
  g_assert_nonnull (strstr (error->message, "not connected"));
  g_clear_error (&error);
  g_autofree char *after = twb_document_to_data (doc);
  g_assert_cmpstr (after, ==, before);
  /* The refusals pushed no undo step: undo takes away act2 itself. */
  g_assert_cmpstr (twb_document_undo_label (doc), ==, "Add relu");
}


/* ---- Placing new nodes ---------------------------------------------------- */

/* The first pair of node boxes that overlap (or come closer than `margin`),
 * as "a/b", NULL when none do. */
static char *
find_overlap (TwbDocument *doc, double margin)
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
        if (a->x < b->x + bw + margin && b->x < a->x + aw + margin && a->y < b->y + bh + margin
            && b->y < a->y + ah + margin)
          return g_strdup_printf ("%s/%s", a->id, b->id);
      }
  return NULL;
}

static TwbDocument *
load_example_mlp (void)
{
  g_autofree char *path = g_build_filename (g_getenv ("TWB_ASSETS_DIR"), "models", "mlp.json", NULL);
  g_autoptr (GError) error = NULL;
  TwbDocument *doc = twb_document_new_from_file (path, &error);
  g_assert_no_error (error);
  g_autofree char *overlap = find_overlap (doc, 0);
  g_assert_null (overlap);
  return doc;
}

/* Inserting into the example MLP, with nothing selected, aimed right at an
 * existing node each time (where the view centre would put it): no new box
 * overlaps any other, and each insert is one undo step. */
static void
test_insert_free_space (void)
{
  g_autoptr (TwbDocument) doc = load_example_mlp ();
  tw_graph *g = twb_document_get_graph (doc);
  int n0 = tw_graph_n_nodes (g);
  tw_node *first = tw_graph_node (g, 0);
  double aim_x = first->x, aim_y = first->y;
  const char *ops[] = { "relu", "linear", "dropout", "batch_norm", "sigmoid", "linear" };
  for (guint k = 0; k < G_N_ELEMENTS (ops); k++)
    {
      twb_document_clear_selection (doc);
      g_autoptr (GError) error = NULL;
      const char *id = twb_document_insert_node (doc, ops[k], aim_x, aim_y, &error);
      g_assert_no_error (error);
      g_assert_nonnull (id);
      g_autofree char *overlap = find_overlap (doc, 0);
      if (overlap)
        g_error ("insert %s overlaps %s", ops[k], overlap);
      g_autofree char *label = g_strdup_printf ("Add %s", ops[k]);
      g_assert_cmpstr (twb_document_undo_label (doc), ==, label);
      /* Near the wanted spot, not flung across the canvas. */
      tw_node *nd = tw_graph_find (g, id);
      g_assert_cmpfloat (fabs (nd->x - aim_x) + fabs (nd->y - aim_y), <, 1200);
    }
  g_assert_cmpint (tw_graph_n_nodes (g), ==, n0 + (int) G_N_ELEMENTS (ops));
  /* free_position itself keeps the 40 px margin. */
  double x, y;
  twb_document_free_position (doc, aim_x, aim_y, 160, 64, NULL, &x, &y);
  twb_document_add_node (doc, "relu", "probe", x, y, NULL);
  g_autofree char *tight = find_overlap (doc, 39);
  g_assert_null (tight);
}

/* With one node selected, an insert goes right of it, fed by its output, in
 * one undo step; undo removes node and edge together. */
static void
test_insert_after_selection (void)
{
  g_autoptr (TwbDocument) doc = load_example_mlp ();
  tw_graph *g = twb_document_get_graph (doc);
  int n0 = tw_graph_n_nodes (g);
  /* The last node before the loss: its output already feeds the loss, and
   * that edge stays. */
  const char *sel[] = { tw_graph_node (g, 1)->id, NULL };
  g_autofree char *anchor = g_strdup (sel[0]);
  twb_document_select (doc, sel, FALSE);
  g_autoptr (GError) error = NULL;
  const char *id = twb_document_insert_node (doc, "relu", 0, 0, &error);
  g_assert_no_error (error);
  g_autofree char *nid = g_strdup (id);
  g_assert_cmpstr (twb_document_get_input (doc, nid, 0), ==, anchor);
  tw_node *a = tw_graph_find (g, anchor), *nd = tw_graph_find (g, nid);
  double aw;
  twb_document_node_size (doc, anchor, &aw, NULL);
  g_assert_cmpfloat (nd->x, >=, a->x + aw);
  g_autofree char *overlap = find_overlap (doc, 0);
  g_assert_null (overlap);
  g_auto (GStrv) now = twb_document_get_selection (doc);
  g_assert_cmpstr (now[0], ==, nid);
  g_assert_null (now[1]);
  g_assert_cmpstr (twb_document_undo_label (doc), ==, "Add relu");
  g_assert_true (twb_document_undo (doc));
  g_assert_cmpint (tw_graph_n_nodes (g), ==, n0);
  g_assert_null (tw_graph_find (g, nid));
  /* An op without inputs is placed after the selection but not connected. */
  twb_document_select (doc, sel, FALSE);
  const char *in = twb_document_insert_node (doc, "input", 0, 0, &error);
  g_assert_no_error (error);
  g_assert_nonnull (tw_graph_find (g, in));
  g_assert_cmpfloat (tw_graph_find (g, in)->x, >=, a->x + aw);
}

/* Ctrl+D: the copy lands in free space beside the original (it used to sit
 * 40 px off, on top of it), edges among the copied nodes kept. */
static void
test_duplicate_free_space (void)
{
  g_autoptr (TwbDocument) doc = load_example_mlp ();
  tw_graph *g = twb_document_get_graph (doc);
  int n0 = tw_graph_n_nodes (g);
  twb_document_select_all (doc);
  ASSERT_OK (twb_document_duplicate_selection (doc, &_e));
  g_assert_cmpint (tw_graph_n_nodes (g), ==, 2 * n0);
  g_autofree char *overlap = find_overlap (doc, 0);
  g_assert_null (overlap);
  /* Once more, with the copy selected: still nothing on top of anything. */
  ASSERT_OK (twb_document_duplicate_selection (doc, &_e));
  g_autofree char *overlap2 = find_overlap (doc, 0);
  g_assert_null (overlap2);
}

/* Pipeline stages as the canvas paints them: by the engine's rules, from
 * "stage" attributes (one stage past the highest) or a count asked for;
 * a stage naming none is the placement's error, on its node; undo and a
 * saved file keep the attribute. */
static void
test_stages (void)
{
  g_autoptr (TwbDocument) doc = build_mlp (NULL);
  g_assert_cmpint (twb_document_get_n_stages (doc), ==, 0);
  g_assert_cmpint (twb_document_get_node_stage (doc, "fc1"), ==, -1);
  set_text (doc, "fc2", "stage", "1");
  g_assert_cmpint (twb_document_get_n_stages (doc), ==, 2);
  g_assert_cmpint (twb_document_get_node_stage (doc, "flat"), ==, 0);
  g_assert_cmpint (twb_document_get_node_stage (doc, "fc1"), ==, 0);
  g_assert_cmpint (twb_document_get_node_stage (doc, "fc2"), ==, 1);
  g_assert_cmpint (twb_document_get_node_stage (doc, "x"), ==, -1);
  g_assert_null (twb_document_get_stage_error (doc, NULL));
  g_autofree char *data = twb_document_to_data (doc);
  g_assert_nonnull (strstr (data, "\"stage\": 1"));
  /* Asked for 3: the loss (following fc2) is not in the last one. */
  twb_document_set_pipeline_stages (doc, 3);
  const char *node = NULL;
  const char *e = twb_document_get_stage_error (doc, &node);
  g_assert_cmpstr (e, ==, "the loss is in stage 1; it must be in the last stage (2)");
  g_assert_cmpstr (node, ==, "loss");
  g_assert_cmpint (twb_document_get_n_stages (doc), ==, 0);
  /* More stages than nodes: a graph-wide error, no node. */
  twb_document_set_pipeline_stages (doc, 50);
  node = "unset";
  e = twb_document_get_stage_error (doc, &node);
  g_assert_nonnull (strstr (e, "50 pipeline stages need at least 50 nodes"));
  g_assert_null (node);
  /* A stage past the pipeline's: the node's error. */
  twb_document_set_pipeline_stages (doc, 2);
  set_text (doc, "act", "stage", "7");
  e = twb_document_get_stage_error (doc, &node);
  g_assert_cmpstr (node, ==, "act");
  g_assert_cmpstr (e, ==, "stage 7 names no stage (the pipeline has 2: 0 to 1)");
  g_assert_true (twb_document_undo (doc));
  g_assert_null (twb_document_get_stage_error (doc, NULL));
  /* No attribute at all: automatic placement into the stages asked for. */
  ASSERT_OK (twb_document_unset_attr (doc, "fc2", "stage", &_e));
  g_assert_cmpint (twb_document_get_n_stages (doc), ==, 2);
  g_assert_cmpint (twb_document_get_node_stage (doc, "loss"), ==, 1);
  twb_document_set_pipeline_stages (doc, 0);
  g_assert_cmpint (twb_document_get_n_stages (doc), ==, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, G_TEST_OPTION_ISOLATE_DIRS, NULL);
  tw_ops_init ();
  g_test_add_func ("/editor/document/build", test_build);
  g_test_add_func ("/editor/document/stages", test_stages);
  g_test_add_func ("/editor/document/undo-redo", test_undo_redo);
  g_test_add_func ("/editor/document/save-reopen", test_save_reopen);
  g_test_add_func ("/editor/document/invalid-edges", test_invalid_edges);
  g_test_add_func ("/editor/document/shape-error", test_shape_error);
  g_test_add_func ("/editor/document/attr-validation", test_attr_validation);
  g_test_add_func ("/editor/document/clipboard", test_clipboard);
  g_test_add_func ("/editor/document/blocks", test_blocks);
  g_test_add_func ("/editor/document/incremental-inference", test_incremental);
  g_test_add_func ("/editor/document/layout", test_layout);
  g_test_add_func ("/editor/document/recovery", test_recovery);
  g_test_add_func ("/editor/document/signals", test_signals);
  g_test_add_func ("/editor/document/rename-loss", test_rename_loss);
  g_test_add_func ("/editor/document/edge-edits", test_edge_edits);
  g_test_add_func ("/editor/document/insert-free-space", test_insert_free_space);
  g_test_add_func ("/editor/document/insert-after-selection", test_insert_after_selection);
  g_test_add_func ("/editor/document/duplicate-free-space", test_duplicate_free_space);
  return g_test_run ();
}
