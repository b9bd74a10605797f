/* test-import.c — ONNX files imported as twb models (onnx/onnx-import.h),
 * run eagerly and compared with PyTorch's outputs. */
#include "engine/eager.h"
#include "engine/safetensors.h"
#include "onnx/onnx-import.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static char *
fixture (const char *name)
{
  return g_build_filename (TW_ONNX_TEST_DATA, name, NULL);
}

/* The twb model's eager prediction on x, with the imported weights loaded
 * strictly (every parameter named as the graph names it, none left over). */
static tw_tensor *
run_eager (tw_model *m, GHashTable *weights, tw_tensor *x)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_params) params = tw_params_new ();
  g_autoptr (tw_eager) ex = tw_eager_new (m->graph, params, 0, &error);
  g_assert_no_error (error);
  tw_state_dict_report rep = { 0 };
  g_assert_true (tw_params_load_state_dict (params, weights, NULL, "import", TRUE, &rep, &error));
  g_assert_no_error (error);
  tw_state_dict_report_clear (&rep);
  g_assert_true (tw_eager_forward (ex, x, NULL, FALSE, 0, &error));
  g_assert_no_error (error);
  return tw_tensor_clone (tw_eager_prediction (ex));
}

/* Largest |got - want| relative to the largest |want| (the measure:
 * 1e-4 of the largest logit).  Shapes must agree. */
static double
rel_error (const tw_tensor *got, const tw_tensor *want)
{
  g_assert_cmpint (got->ndim, ==, want->ndim);
  for (int d = 0; d < got->ndim; d++)
    g_assert_cmpint (got->shape[d], ==, want->shape[d]);
  double err = 0, scale = 0;
  for (int64_t i = 0, n = tw_tensor_numel (want); i < n; i++)
    {
      err = MAX (err, fabs (tw_tensor_get_flat (got, i) - tw_tensor_get_flat (want, i)));
      scale = MAX (scale, fabs (tw_tensor_get_flat (want, i)));
    }
  return err / MAX (scale, 1e-30);
}

/* Import path, run it on in_pb, compare with out_pb; returns the model. */
static tw_model *
import_and_compare (const char *path, const char *in_pb, const char *out_pb,
                    GHashTable **weights_out, double tol)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GHashTable) weights = NULL;
  tw_model *m = tw_onnx_import (path, &weights, &error);
  g_assert_no_error (error);
  g_assert_nonnull (m);
  g_autoptr (tw_tensor) x = tw_onnx_read_tensor_file (in_pb, &error);
  g_assert_no_error (error);
  g_autoptr (tw_tensor) want = tw_onnx_read_tensor_file (out_pb, &error);
  g_assert_no_error (error);
  g_autoptr (tw_tensor) got = run_eager (m, weights, x);
  double e = rel_error (got, want);
  g_test_message ("%s: largest error %.3g of the largest output", path, e);
  g_assert_cmpfloat (e, <, tol);
  if (weights_out)
    *weights_out = g_steal_pointer (&weights);
  return m;
}

static gboolean
graph_has_op (tw_graph *g, const char *op)
{
  for (int i = 0; i < tw_graph_n_nodes (g); i++)
    if (strcmp (tw_graph_node (g, i)->op_name, op) == 0)
      return TRUE;
  return FALSE;
}

/* 1e-4 of the largest output: float32 sums of a few hundred products, in
 * another order than torch's (the tolerance for real models). */
#define TOL 1e-4

static void
test_mlp (void)
{
  g_autofree char *p = fixture ("import-mlp.onnx");
  g_autofree char *in = fixture ("import-mlp-input.pb");
  g_autofree char *out = fixture ("import-mlp-output.pb");
  g_autoptr (GHashTable) w = NULL;
  g_autoptr (tw_model) m = import_and_compare (p, in, out, &w, TOL);
  g_assert_cmpstr (m->name, ==, "import-mlp");

  /* The Shape / Gather / Unsqueeze / Concat chain before Reshape is folded
   * into one reshape to the per-sample [12]. */
  tw_node *data = tw_graph_find_source (m->graph, "data");
  g_assert_cmpstr (data->id, ==, "x");
  int64_t shape[4];
  g_assert_cmpint (tw_attrs_get_ints (data->attrs, "shape", shape, 4), ==, 2);
  g_assert_cmpint (shape[0], ==, 3);
  g_assert_cmpint (shape[1], ==, 4);
  g_assert_cmpint (tw_graph_n_nodes (m->graph), ==, 8);
  tw_node *r = NULL;
  for (int i = 0; i < tw_graph_n_nodes (m->graph); i++)
    if (strcmp (tw_graph_node (m->graph, i)->op_name, "reshape") == 0)
      r = tw_graph_node (m->graph, i);
  g_assert_nonnull (r);
  g_assert_cmpint (tw_attrs_get_ints (r->attrs, "shape", shape, 4), ==, 1);
  g_assert_cmpint (shape[0], ==, 12);

  /* Gemm's PyTorch names kept; MatMul + Add became one linear with a bias. */
  g_assert_cmpstr (tw_graph_find (m->graph, "fc1")->op_name, ==, "linear");
  g_assert_cmpstr (tw_graph_find (m->graph, "head")->op_name, ==, "linear");
  g_assert_true (g_hash_table_contains (w, "fc1.weight"));
  g_assert_true (g_hash_table_contains (w, "head.bias"));
  tw_tensor *fw = g_hash_table_lookup (w, "fc1.weight");
  g_assert_cmpint (fw->shape[0], ==, 16);      /* [out, in] as PyTorch lays it */
  g_assert_cmpint (fw->shape[1], ==, 12);
  g_assert_false (graph_has_op (m->graph, "add"));
  g_assert_cmpint (g_hash_table_size (w), ==, 6);
  g_assert_true (graph_has_op (m->graph, "softmax"));
}

static void
test_cnn (void)
{
  g_autofree char *p = fixture ("import-cnn.onnx");
  g_autofree char *in = fixture ("import-cnn-input.pb");
  g_autofree char *out = fixture ("import-cnn-output.pb");
  g_autoptr (GHashTable) w = NULL;
  g_autoptr (tw_model) m = import_and_compare (p, in, out, &w, TOL);

  /* Batch norm kept, with PyTorch's state_dict names. */
  tw_node *bn = tw_graph_find (m->graph, "layer1.0.bn1");
  g_assert_nonnull (bn);
  g_assert_cmpstr (bn->op_name, ==, "batch_norm");
  g_assert_cmpfloat_with_epsilon (tw_attrs_get_float (bn->attrs, "momentum", 0), 0.1, 1e-12);
  g_assert_cmpfloat_with_epsilon (tw_attrs_get_float (bn->attrs, "eps", 0), 1e-5, 1e-15);
  g_assert_true (g_hash_table_contains (w, "layer1.0.bn1.running_var"));
  g_assert_true (g_hash_table_contains (w, "layer1.0.conv2.bias"));
  g_assert_false (g_hash_table_contains (w, "layer1.0.conv1.bias"));   /* bias=False */
  tw_node *c2 = tw_graph_find (m->graph, "layer1.0.conv2");
  g_assert_cmpint (tw_attrs_get_int (c2->attrs, "groups", 0), ==, 2);
  int64_t d[2];
  tw_attrs_get_ints2 (c2->attrs, "dilation", d, 0);
  g_assert_cmpint (d[0], ==, 2);
  tw_node *avg = NULL;
  for (int i = 0; i < tw_graph_n_nodes (m->graph); i++)
    if (strcmp (tw_graph_node (m->graph, i)->op_name, "avg_pool2d") == 0)
      avg = tw_graph_node (m->graph, i);
  g_assert_false (tw_attrs_get_bool (avg->attrs, "count_include_pad", TRUE));
  g_assert_true (tw_graph_find (m->graph, "layer1.0.add") != NULL);

  /* Laid out in rows of layers: every node placed, the input at the top
   * left, no two nodes at one place. */
  tw_node *x = tw_graph_find (m->graph, "x");
  for (int i = 0; i < tw_graph_n_nodes (m->graph); i++)
    {
      tw_node *n = tw_graph_node (m->graph, i);
      g_assert_true (n->has_pos);
      g_assert_cmpfloat (n->x, >=, x->x);
      g_assert_cmpfloat (n->y, >=, x->y);
      for (int j = 0; j < i; j++)
        g_assert_false (tw_graph_node (m->graph, j)->x == n->x
                        && tw_graph_node (m->graph, j)->y == n->y);
    }
  /* The module "layer1" (holding only "layer1.0": one block, by the outer
   * name) is an editor block, closed where the graph would not read with
   * it open at TW_LAYOUT_READ_ZOOM in the default view. */
  g_assert_nonnull (m->editor);
  JsonArray *blocks = json_object_get_array_member (json_node_get_object (m->editor), "blocks");
  g_assert_cmpuint (json_array_get_length (blocks), ==, 1);
  JsonObject *b0 = json_array_get_object_element (blocks, 0);
  g_assert_cmpstr (json_object_get_string_member (b0, "name"), ==, "layer1");
  JsonArray *members = json_object_get_array_member (b0, "nodes");
  g_assert_cmpuint (json_array_get_length (members), ==, 6);
  g_autofree int *idx = g_new (int, 6);
  for (int k = 0; k < 6; k++)
    idx[k] = tw_graph_index_of (m->graph, json_array_get_string_element (members, k));
  g_autoptr (tw_layout_block) open = tw_layout_block_new ("layer1", idx, 6, FALSE);
  const tw_layout_view view = TW_LAYOUT_VIEW_DEFAULT;
  double ow, oh;
  tw_layout_extent (m->graph, &open, 1, &view, &ow, &oh);
  gboolean reads_open = tw_layout_fit (&view, ow, oh, NULL, NULL) >= TW_LAYOUT_READ_ZOOM;
  g_assert_cmpint (json_object_get_boolean_member (b0, "collapsed"), ==, !reads_open);

  /* The model file reads back with the same graph, and its weights file
   * as a state_dict. */
  g_autofree char *dir = g_dir_make_tmp ("twb-import-XXXXXX", NULL);
  g_autofree char *mp = g_build_filename (dir, "cnn.json", NULL);
  g_autofree char *wp = tw_onnx_weights_path_for (mp);
  g_assert_true (g_str_has_suffix (wp, "/cnn.safetensors"));
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_model_save (m, mp, &error));
  g_assert_true (tw_safetensors_save (wp, w, NULL, &error));
  g_autoptr (tw_model) back = tw_model_load (mp, &error);
  g_assert_no_error (error);
  g_assert_cmpint (tw_graph_infer (back->graph), ==, 0);
  g_assert_cmpint (tw_graph_n_nodes (back->graph), ==, tw_graph_n_nodes (m->graph));
  g_autoptr (GHashTable) wback = NULL;
  g_assert_true (tw_safetensors_load (wp, &wback, NULL, &error));
  g_autoptr (tw_tensor) xin = tw_onnx_read_tensor_file (in, &error);
  g_autoptr (tw_tensor) want = tw_onnx_read_tensor_file (out, &error);
  g_autoptr (tw_tensor) got = run_eager (back, wback, xin);
  g_assert_cmpfloat (rel_error (got, want), <, TOL);
  g_unlink (wp);
  g_unlink (mp);
  g_rmdir (dir);
}

/* Clip (relu6 and a clamp), HardSigmoid, Pad (constant and reflect, from
 * the chain of constants torch emits for its pads), Resize (nearest). */
static void
test_ops (void)
{
  g_autofree char *p = fixture ("import-ops.onnx");
  g_autofree char *in = fixture ("import-ops-input.pb");
  g_autofree char *out = fixture ("import-ops-output.pb");
  g_autoptr (tw_model) m = import_and_compare (p, in, out, NULL, TOL);
  static const char *const ops[] = { "pad", "relu6", "clip", "hard_sigmoid", "resize", "scale",
                                     "add_scalar" };
  for (guint i = 0; i < G_N_ELEMENTS (ops); i++)
    g_assert_true (graph_has_op (m->graph, ops[i]));
  gboolean reflect = FALSE;
  for (int i = 0; i < tw_graph_n_nodes (m->graph); i++)
    {
      tw_node *n = tw_graph_node (m->graph, i);
      if (strcmp (n->op_name, "pad") == 0)
        reflect |= strcmp (tw_attrs_get_string (n->attrs, "mode", ""), "reflect") == 0;
    }
  g_assert_true (reflect);
}

/* The reader's fixtures (another exporter run: Gemm, Conv, BN folded or not). */
static void
test_reader_fixtures (void)
{
  static const char *const names[] = { "mlp", "convnet" };
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autofree char *base = g_strdup_printf ("%s.onnx", names[i]);
      g_autofree char *bin = g_strdup_printf ("%s-input_0.pb", names[i]);
      g_autofree char *bout = g_strdup_printf ("%s-output_0.pb", names[i]);
      g_autofree char *p = fixture (base), *in = fixture (bin), *out = fixture (bout);
      if (!g_file_test (p, G_FILE_TEST_EXISTS))
        {
          g_test_message ("no %s", p);
          continue;
        }
      g_autoptr (tw_model) m = import_and_compare (p, in, out, NULL, TOL);
    }
}

static void
test_unsupported (void)
{
  g_autofree char *p = fixture ("import-unsupported.onnx");
  g_autoptr (GError) error = NULL;
  GHashTable *w = (GHashTable *) 0x1;          /* untouched on failure */
  g_assert_null (tw_onnx_import (p, &w, &error));
  g_assert_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED);
  g_assert_true (w == (GHashTable *) 0x1);
  g_test_message ("%s", error->message);
  /* Both at once, with name, op and opset; the supported ones (TopK has a
   * translation now) not. */
  g_assert_nonnull (strstr (error->message, "import-unsupported.onnx: 2 nodes cannot be imported"));
  g_assert_nonnull (strstr (error->message, "'conv' (Conv, opset 13): auto_pad SAME_UPPER"));
  g_assert_null (strstr (error->message, "'topk'"));
  g_assert_nonnull (strstr (error->message, "'Loop_12' (Loop, opset 13): control flow"));
  g_assert_null (strstr (error->message, "relu1"));
  g_assert_null (strstr (error->message, "'sig'"));
}

/* Random byte edits of the fixtures: each file either does not read (the
 * reader's error), or imports, or is refused with an error naming the file;
 * never a crash (run under ASan).  Fixed seed. */
static void
test_fuzz (void)
{
  static const char *const names[] = { "import-mlp.onnx", "import-cnn.onnx", "import-ops.onnx" };
  GRand *r = g_rand_new_with_seed (11);
  int n_read = 0, n_imported = 0, n_refused = 0;
  for (guint f = 0; f < G_N_ELEMENTS (names); f++)
    {
      g_autofree char *p = fixture (names[f]);
      g_autofree guint8 *orig = NULL;
      gsize len = 0;
      g_assert_true (g_file_get_contents (p, (char **) &orig, &len, NULL));
      for (int k = 0; k < 300; k++)
        {
          g_autofree guint8 *d = g_memdup2 (orig, len);
          int edits = g_rand_int_range (r, 1, 5);
          for (int e = 0; e < edits; e++)
            d[g_rand_int_range (r, 0, (gint32) len)] = (guint8) g_rand_int_range (r, 0, 256);
          g_autoptr (GError) error = NULL;
          Onnx__ModelProto *mp = tw_onnx_read_model_from_data (d, len, names[f], &error);
          if (mp == NULL)
            {
              g_assert_nonnull (strstr (error->message, names[f]));
              continue;
            }
          n_read++;
          g_autoptr (GHashTable) w = NULL;
          g_autoptr (tw_model) m = tw_onnx_import_model (mp, names[f], &w, &error);
          onnx__model_proto__free_unpacked (mp, NULL);
          if (m != NULL)
            n_imported++;
          else
            {
              n_refused++;
              if (strstr (error->message, names[f]) == NULL)
                g_error ("%s", error->message);
            }
        }
    }
  g_test_message ("900 edited files: %d read, %d imported, %d refused", n_read, n_imported,
                  n_refused);
  g_assert_cmpint (n_read, >, 0);
  g_rand_free (r);
}

/* A torchvision model exported by Debian's torch at opset 13 into dir,
 * imported and compared (skipped without torch and torchvision). */
static void
export_and_compare (const char *name, const char *dir)
{
  g_autofree char *script = g_build_filename (TW_ONNX_TEST_SCRIPTS, "export-torchvision.py", NULL);
  const char *argv[] = { "/usr/bin/python3", script, name, "13", "64", dir, NULL };
  int status = 0;
  g_autofree char *out = NULL, *err = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out,
                               &err, &status, &error));
  if (WIFEXITED (status) && WEXITSTATUS (status) == 77)
    {
      g_test_skip ("no torch / torchvision for /usr/bin/python3");
      return;
    }
  if (!g_spawn_check_wait_status (status, &error))
    g_error ("export-torchvision.py %s: %s\n%s", name, error->message, err);
  g_autofree char *onnx = g_strdup_printf ("%s/%s.onnx", dir, name);
  g_autofree char *in = g_build_filename (dir, "input.pb", NULL);
  g_autofree char *outp = g_build_filename (dir, "output.pb", NULL);
  g_autoptr (GHashTable) w = NULL;
  g_autoptr (tw_model) m = import_and_compare (onnx, in, outp, &w, TOL);
  /* torch folds batch norm into the convolutions; ids still follow the
   * module paths, so the weights keep the convolutions' names. */
  const char *conv = strcmp (name, "resnet18") == 0 ? "layer1.0.conv1" : "features.0.0";
  g_assert_nonnull (tw_graph_find (m->graph, conv));
  g_autofree char *wname = g_strdup_printf ("%s.weight", conv);
  g_assert_true (g_hash_table_contains (w, wname));
}

static void
test_torchvision (gconstpointer data)
{
  if (!g_file_test ("/usr/bin/python3", G_FILE_TEST_IS_EXECUTABLE))
    {
      g_test_skip ("no /usr/bin/python3");
      return;
    }
  g_autofree char *dir = g_dir_make_tmp ("twb-import-tv-XXXXXX", NULL);
  export_and_compare (data, dir);
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *f;
  while (d && (f = g_dir_read_name (d)))
    {
      g_autofree char *fp = g_build_filename (dir, f, NULL);
      g_unlink (fp);
    }
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  g_test_add_func ("/onnx/import/mlp", test_mlp);
  g_test_add_func ("/onnx/import/cnn", test_cnn);
  g_test_add_func ("/onnx/import/ops", test_ops);
  g_test_add_func ("/onnx/import/reader-fixtures", test_reader_fixtures);
  g_test_add_func ("/onnx/import/unsupported", test_unsupported);
  g_test_add_func ("/onnx/import/fuzz", test_fuzz);
  g_test_add_data_func ("/onnx/import/torchvision/resnet18", "resnet18", test_torchvision);
  g_test_add_data_func ("/onnx/import/torchvision/mobilenet_v2", "mobilenet_v2", test_torchvision);
  return g_test_run ();
}
