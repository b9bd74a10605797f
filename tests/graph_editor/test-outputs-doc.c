/* test-outputs-doc.c — marking a model's outputs in the editor's document
 * (twb_document_set_output): the default rule shown, marks kept beside
 * the losses' predictions, the last unmarked, the only prediction refused,
 * marks of deleted and renamed nodes, undo and redo, the file. */
#include "graph_editor/twb-document.h"

#include <glib/gstdio.h>
#include <string.h>

/* x [2] → fc1 → relu1 → fc2 → loss (with y); nothing marked. */
static const char model[] =
  "{ \"format\": \"twb-model\", \"version\": 1, \"name\": \"outs\",\n"
  "  \"graph\": { \"nodes\": [\n"
  "    { \"id\": \"x\", \"op\": \"input\", \"attrs\": { \"shape\": [2] } },\n"
  "    { \"id\": \"y\", \"op\": \"input\", \"attrs\": { \"shape\": [], \"dtype\": \"i64\", "
  "\"role\": \"label\" } },\n"
  "    { \"id\": \"fc1\", \"op\": \"linear\", \"inputs\": [\"x\"], "
  "\"attrs\": { \"out_features\": 8 } },\n"
  "    { \"id\": \"relu1\", \"op\": \"relu\", \"inputs\": [\"fc1\"] },\n"
  "    { \"id\": \"fc2\", \"op\": \"linear\", \"inputs\": [\"relu1\"], "
  "\"attrs\": { \"out_features\": 3 } },\n"
  "    { \"id\": \"loss\", \"op\": \"cross_entropy\", \"inputs\": [\"fc2\", \"y\"] } ] } }\n";

static char *dir;

static TwbDocument *
load (const char *text)
{
  g_autofree char *path = g_build_filename (dir, "in.json", NULL);
  g_autoptr (GError) error = NULL;
  g_assert_true (g_file_set_contents (path, text, -1, &error));
  TwbDocument *doc = twb_document_new_from_file (path, &error);
  g_assert_no_error (error);
  return doc;
}

static char *
marked (TwbDocument *doc)
{
  return g_strjoinv (",", (char **) tw_graph_marked_outputs (twb_document_get_graph (doc)));
}

#define ASSERT_MARKED(doc, want)                                                                   \
  do                                                                                               \
    {                                                                                              \
      g_autofree char *m_ = marked (doc);                                                          \
      g_assert_cmpstr (m_, ==, want);                                                              \
    }                                                                                              \
  while (0)

static void
test_mark_unmark (void)
{
  g_autoptr (TwbDocument) doc = load (model);
  g_assert_cmpint (twb_document_output_kind (doc, "fc2"), ==, TWB_OUTPUT_DEFAULT);
  g_assert_cmpint (twb_document_output_kind (doc, "relu1"), ==, TWB_OUTPUT_NONE);
  g_autoptr (GError) error = NULL;

  /* A first mark keeps the loss's prediction beside it. */
  g_assert_true (twb_document_set_output (doc, "relu1", TRUE, &error));
  ASSERT_MARKED (doc, "fc2,relu1");
  g_assert_cmpint (twb_document_output_kind (doc, "fc2"), ==, TWB_OUTPUT_MARKED);
  g_assert_cmpint (twb_document_output_kind (doc, "relu1"), ==, TWB_OUTPUT_MARKED);
  g_assert_cmpstr (twb_document_undo_label (doc), ==, "Mark relu1 as output");
  g_assert_true (twb_document_undo (doc));
  ASSERT_MARKED (doc, "");
  g_assert_cmpint (twb_document_output_kind (doc, "fc2"), ==, TWB_OUTPUT_DEFAULT);
  g_assert_true (twb_document_redo (doc));
  ASSERT_MARKED (doc, "fc2,relu1");
  /* Marking again changes nothing, in one undo step or none. */
  g_assert_true (twb_document_set_output (doc, "relu1", TRUE, &error));
  ASSERT_MARKED (doc, "fc2,relu1");
  g_assert_cmpstr (twb_document_undo_label (doc), ==, "Mark relu1 as output");

  /* Unmarked: the loss's prediction is no output while another is marked. */
  g_assert_true (twb_document_toggle_output (doc, "fc2", &error));
  ASSERT_MARKED (doc, "relu1");
  g_assert_cmpint (twb_document_output_kind (doc, "fc2"), ==, TWB_OUTPUT_NONE);
  /* The last one unmarked: the default again. */
  g_assert_true (twb_document_set_output (doc, "relu1", FALSE, &error));
  ASSERT_MARKED (doc, "");
  g_assert_cmpint (twb_document_output_kind (doc, "fc2"), ==, TWB_OUTPUT_DEFAULT);

  /* The only prediction a loss trains cannot be unmarked: said, nothing done. */
  const char *label = twb_document_undo_label (doc);
  g_assert_false (twb_document_set_output (doc, "fc2", FALSE, &error));
  g_assert_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ID);
  g_assert_nonnull (strstr (error->message, "fc2 is the model's only output"));
  g_assert_nonnull (strstr (error->message, "'loss'"));
  g_assert_cmpstr (twb_document_undo_label (doc), ==, label);
  g_clear_error (&error);
  g_assert_false (twb_document_set_output (doc, "nope", TRUE, &error));
  g_assert_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_NO_SUCH_NODE);
}

/* A marked node deleted takes its mark along (in the same undo step); a
 * rename follows; both through the file. */
static void
test_delete_rename_file (void)
{
  g_autoptr (TwbDocument) doc = load (model);
  g_autoptr (GError) error = NULL;
  g_assert_true (twb_document_set_output (doc, "relu1", TRUE, &error));
  g_assert_true (twb_document_remove_nodes (doc, (const char *const[]) { "relu1", NULL }, &error));
  ASSERT_MARKED (doc, "fc2");
  g_assert_cmpuint (twb_document_get_diagnostics (doc)->len, >, 0);   /* fc2 lost its input */
  g_assert_true (twb_document_undo (doc));
  ASSERT_MARKED (doc, "fc2,relu1");
  g_assert_true (twb_document_rename_node (doc, "relu1", "act", &error));
  ASSERT_MARKED (doc, "fc2,act");
  g_assert_true (twb_document_undo (doc));
  ASSERT_MARKED (doc, "fc2,relu1");

  g_autofree char *path = g_build_filename (dir, "out.json", NULL);
  g_assert_true (twb_document_save (doc, path, &error));
  g_autoptr (TwbDocument) back = twb_document_new_from_file (path, &error);
  g_assert_no_error (error);
  ASSERT_MARKED (back, "fc2,relu1");
  /* Unmarked and saved: read back, the outputs follow the loss again. */
  g_assert_true (twb_document_set_output (back, "relu1", FALSE, &error));
  g_assert_true (twb_document_set_output (back, "fc2", FALSE, &error));
  ASSERT_MARKED (back, "");
  g_assert_true (twb_document_save (back, path, &error));
  g_autoptr (TwbDocument) again = twb_document_new_from_file (path, &error);
  g_assert_no_error (error);
  g_assert_cmpint (twb_document_output_kind (again, "fc2"), ==, TWB_OUTPUT_DEFAULT);
  /* A rename of the default output keeps it the output. */
  g_assert_true (twb_document_rename_node (again, "fc2", "logits", &error));
  g_assert_cmpint (twb_document_output_kind (again, "logits"), ==, TWB_OUTPUT_DEFAULT);
  g_unlink (path);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  dir = g_dir_make_tmp ("twb-outputs-doc-XXXXXX", NULL);
  g_test_add_func ("/editor/outputs/mark-unmark", test_mark_unmark);
  g_test_add_func ("/editor/outputs/delete-rename-file", test_delete_rename_file);
  int st = g_test_run ();
  g_autofree char *in = g_build_filename (dir, "in.json", NULL);
  g_unlink (in);
  g_rmdir (dir);
  g_free (dir);
  return st;
}
