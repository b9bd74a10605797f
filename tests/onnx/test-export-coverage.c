/* test-export-coverage.c — every public op (one a user can put on the
 * canvas: not TW_OP_INTERNAL) is either exported by one of the exporter's op
 * fixtures (tests/onnx/data/export-*.json, which test-export.sh exports at
 * opsets 13 and 17, checks with onnx.checker and runs against twb predict)
 * or on the exporter's refusal list (tw_onnx_export_refusal) with a reason;
 * so an op added without an export fails here. */
#include "engine/op.h"
#include "onnx/onnx-export.h"

#include <json-glib/json-glib.h>
#include <string.h>

/* Op names of the exported nodes of the export-*.json fixtures. */
static GHashTable *
fixture_ops (void)
{
  GHashTable *ops = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr (GDir) dir = g_dir_open (TW_ONNX_TEST_DATA, 0, NULL);
  g_assert_nonnull (dir);
  const char *name;
  int files = 0;
  while ((name = g_dir_read_name (dir)) != NULL)
    {
      if (!g_str_has_prefix (name, "export-") || !g_str_has_suffix (name, ".json"))
        continue;
      g_autofree char *path = g_build_filename (TW_ONNX_TEST_DATA, name, NULL);
      g_autoptr (JsonParser) p = json_parser_new ();
      g_autoptr (GError) error = NULL;
      g_assert_true (json_parser_load_from_file (p, path, &error));
      g_assert_no_error (error);
      JsonObject *graph =
        json_object_get_object_member (json_node_get_object (json_parser_get_root (p)), "graph");
      JsonArray *nodes = json_object_get_array_member (graph, "nodes");
      /* Only the nodes the outputs need are exported (a loss beside them is
       * not): walk back from the outputs. */
      g_autoptr (GHashTable) by_id = g_hash_table_new (g_str_hash, g_str_equal);
      for (guint i = 0; i < json_array_get_length (nodes); i++)
        {
          JsonObject *n = json_array_get_object_element (nodes, i);
          g_hash_table_insert (by_id, (char *) json_object_get_string_member (n, "id"), n);
        }
      g_autoptr (GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
      g_autoptr (GPtrArray) stack = g_ptr_array_new_with_free_func (g_free);
      JsonArray *outs = json_object_get_array_member (graph, "outputs");
      for (guint i = 0; i < json_array_get_length (outs); i++)
        g_ptr_array_add (stack, g_strdup (json_array_get_string_element (outs, i)));
      while (stack->len > 0)
        {
          g_autofree char *ref = g_ptr_array_steal_index (stack, stack->len - 1);
          char *colon = strchr (ref, ':');
          if (colon)
            *colon = '\0';
          if (g_hash_table_contains (seen, ref))
            continue;
          JsonObject *n = g_hash_table_lookup (by_id, ref);
          g_assert_nonnull (n);
          g_hash_table_add (seen, g_strdup (ref));
          g_hash_table_add (ops, g_strdup (json_object_get_string_member (n, "op")));
          JsonArray *ins = json_object_has_member (n, "inputs")
                             ? json_object_get_array_member (n, "inputs")
                             : NULL;
          for (guint k = 0; ins && k < json_array_get_length (ins); k++)
            g_ptr_array_add (stack, g_strdup (json_array_get_string_element (ins, k)));
        }
      files++;
    }
  g_assert_cmpint (files, >=, 3);
  return ops;
}

static void
test_every_public_op (void)
{
  g_autoptr (GHashTable) exported = fixture_ops ();
  int n;
  const tw_op_def *const *ops = tw_op_list (&n);
  g_autoptr (GString) missing = g_string_new (NULL);
  int n_public = 0, n_refused = 0;
  for (int i = 0; i < n; i++)
    {
      if (ops[i]->flags & TW_OP_INTERNAL)
        continue;
      n_public++;
      const char *why = tw_onnx_export_refusal (ops[i]->name);
      if (why != NULL)
        {
          n_refused++;
          g_assert_cmpuint (strlen (why), >, 10);
        }
      else if (!g_hash_table_contains (exported, ops[i]->name))
        g_string_append_printf (
          missing,
          "%s: no node of it that the outputs of tests/onnx/data/export-*.json need, "
          "and not on the exporter's refusal list (onnx/onnx-export-ops.c)\n",
          ops[i]->name);
    }
  if (missing->len > 0)
    g_test_message ("%s", missing->str);
  g_assert_cmpstr (missing->str, ==, "");
  g_test_message ("%d public ops: %d exported by the fixtures, %d refused", n_public,
                  n_public - n_refused, n_refused);
  g_assert_cmpint (n_public, >, 50);
  /* The list names real, public ops only. */
  g_assert_nonnull (tw_onnx_export_refusal ("cross_entropy"));
  g_assert_null (tw_onnx_export_refusal ("relu"));
  g_assert_null (tw_onnx_export_refusal ("no-such-op"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  g_test_add_func ("/onnx/export/coverage", test_every_public_op);
  return g_test_run ();
}
