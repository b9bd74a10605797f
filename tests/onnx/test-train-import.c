/* test-train-import.c — an imported ONNX model made trainable
 * (tw_onnx_add_loss): the label input and loss node it adds, its refusals,
 * and training from the imported weights on the "synthetic" data fitted to
 * the model (engine/data-fit.h) with a falling loss: the checked-in
 * torch-exported CNN in the default suite, torchvision's ResNet-18 in the
 * slow one. */
#include "engine/data-fit.h"
#include "engine/train.h"
#include "onnx/onnx-import.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static char *
fixture (const char *name)
{
  return g_build_filename (TW_ONNX_TEST_DATA, name, NULL);
}

static tw_model *
import (const char *path, GHashTable **weights)
{
  g_autoptr (GError) error = NULL;
  tw_model *m = tw_onnx_import (path, weights, &error);
  g_assert_no_error (error);
  g_assert_nonnull (m);
  return m;
}

static void
test_names (void)
{
  static const struct
  {
    const char *name;
    tw_onnx_loss loss;
  } known[] = {
    { "none", TW_ONNX_LOSS_NONE },
    { "auto", TW_ONNX_LOSS_AUTO },
    { "cross-entropy", TW_ONNX_LOSS_CROSS_ENTROPY },
    { "mse", TW_ONNX_LOSS_MSE },
  };
  for (guint i = 0; i < G_N_ELEMENTS (known); i++)
    {
      tw_onnx_loss l = 99;
      g_assert_true (tw_onnx_loss_from_name (known[i].name, &l));
      g_assert_cmpint (l, ==, known[i].loss);
    }
  tw_onnx_loss l = TW_ONNX_LOSS_MSE;
  g_assert_false (tw_onnx_loss_from_name ("cross_entropy", &l));
  g_assert_false (tw_onnx_loss_from_name ("", &l));
  g_assert_false (tw_onnx_loss_from_name (NULL, &l));
  g_assert_cmpint (l, ==, TW_ONNX_LOSS_MSE);
}

/* The nodes added: a label input (i64 [] for cross-entropy, the output's
 * shape for mse), the loss on the first output, the recipe naming it. */
static void
test_add_loss (void)
{
  g_autofree char *cnn = fixture ("import-cnn.onnx");
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = import (cnn, NULL);
  int n0 = tw_graph_n_nodes (m->graph);
  const char *out = tw_graph_outputs (m->graph)[0];
  g_assert_null (tw_graph_find_loss (m->graph));
  g_assert_true (tw_onnx_add_loss (m, TW_ONNX_LOSS_NONE, &error));
  g_assert_cmpint (tw_graph_n_nodes (m->graph), ==, n0);

  g_assert_true (tw_onnx_add_loss (m, TW_ONNX_LOSS_AUTO, &error));
  g_assert_no_error (error);
  g_assert_cmpint (tw_graph_n_nodes (m->graph), ==, n0 + 2);
  tw_node *label = tw_graph_find_source (m->graph, "label");
  g_assert_nonnull (label);
  g_assert_cmpstr (label->id, ==, "label");
  g_assert_cmpint (label->out_info[0].dtype, ==, TW_I64);
  g_assert_cmpint (label->out_info[0].ndim, ==, 1); /* [N] */
  tw_node *loss = tw_graph_find_loss (m->graph);
  g_assert_nonnull (loss);
  g_assert_cmpstr (loss->id, ==, "loss");
  g_assert_cmpstr (loss->op_name, ==, "cross_entropy");
  g_assert_cmpstr (loss->inputs[0], ==, out);
  g_assert_cmpstr (loss->inputs[1], ==, "label");
  g_assert_true (loss->valid);
  g_assert_cmpstr (m->recipe.loss, ==, "loss");
  g_assert_cmpstr (m->recipe.dataset, ==, "synthetic");
  /* The outputs stay the prediction. */
  g_assert_cmpstr (tw_graph_outputs (m->graph)[0], ==, out);
  /* Auto again: there is a loss, nothing changes; an explicit one is refused. */
  g_assert_true (tw_onnx_add_loss (m, TW_ONNX_LOSS_AUTO, &error));
  g_assert_cmpint (tw_graph_n_nodes (m->graph), ==, n0 + 2);
  g_assert_false (tw_onnx_add_loss (m, TW_ONNX_LOSS_MSE, &error));
  g_assert_error (error, TW_GRAPH_ERROR, TW_GRAPH_ERROR_INVALID);
  g_assert_nonnull (strstr (error->message, "already has a loss, node 'loss'"));
  g_clear_error (&error);
  g_assert_cmpint (tw_graph_n_nodes (m->graph), ==, n0 + 2);

  /* Saved and loaded back: the same model file a user trains. */
  g_autofree char *dir = g_dir_make_tmp ("twb-train-import-XXXXXX", NULL);
  g_autofree char *json = g_build_filename (dir, "cnn.json", NULL);
  g_assert_true (tw_model_save (m, json, &error));
  g_assert_no_error (error);
  g_autoptr (tw_model) back = tw_model_load (json, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (tw_graph_find_loss (back->graph)->id, ==, "loss");
  g_assert_cmpstr (back->recipe.dataset, ==, "synthetic");
  g_unlink (json);
  g_rmdir (dir);

  /* Through the import options: the same nodes, the loss laid out right
   * of the output and the label below it (the loss between the two, as
   * the layout centres a node on what feeds it), no two nodes at one
   * place. */
  tw_onnx_import_options opts = { .loss = TW_ONNX_LOSS_CROSS_ENTROPY };
  g_autoptr (tw_model) m3 = tw_onnx_import_with (cnn, &opts, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (tw_graph_n_nodes (m3->graph), ==, n0 + 2);
  tw_node *o3 = tw_graph_find (m3->graph, tw_graph_outputs (m3->graph)[0]);
  tw_node *l3 = tw_graph_find_loss (m3->graph), *y3 = tw_graph_find_source (m3->graph, "label");
  g_assert_cmpfloat (l3->x, >, o3->x);
  g_assert_cmpfloat (l3->y, >=, o3->y);
  g_assert_cmpfloat (l3->y, <=, y3->y);
  g_assert_cmpfloat (y3->x, ==, o3->x);
  g_assert_cmpfloat (y3->y, >, o3->y);
  for (int i = 0; i < tw_graph_n_nodes (m3->graph); i++)
    for (int j = 0; j < i; j++)
      {
        tw_node *a = tw_graph_node (m3->graph, i), *b = tw_graph_node (m3->graph, j);
        g_assert_true (a->has_pos);
        g_assert_false (a->x == b->x && a->y == b->y);
      }

  /* mse: a float label shaped like the output ([3] for [N, 3]). */
  g_autoptr (tw_model) m2 = import (cnn, NULL);
  g_assert_true (tw_onnx_add_loss (m2, TW_ONNX_LOSS_MSE, &error));
  g_assert_no_error (error);
  tw_node *l2 = tw_graph_find_source (m2->graph, "label");
  g_assert_cmpint (l2->out_info[0].dtype, ==, TW_F32);
  g_assert_cmpint (l2->out_info[0].ndim, ==, 2);
  g_assert_cmpint (l2->out_info[0].dims[1], ==, 3);
  g_assert_cmpstr (tw_graph_find_loss (m2->graph)->op_name, ==, "mse_loss");
}

/* An output that is not [N, C]: auto adds nothing, cross-entropy is
 * refused naming the output and its shape, and the graph is as it was;
 * mse takes any float output. */
static void
test_refusals (void)
{
  g_autofree char *ops = fixture ("import-ops.onnx");
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = import (ops, NULL);
  int n0 = tw_graph_n_nodes (m->graph);
  const char *out = tw_graph_outputs (m->graph)[0];
  g_assert_true (tw_onnx_add_loss (m, TW_ONNX_LOSS_AUTO, &error));
  g_assert_cmpint (tw_graph_n_nodes (m->graph), ==, n0);
  g_assert_null (tw_graph_find_loss (m->graph));
  g_assert_false (tw_onnx_add_loss (m, TW_ONNX_LOSS_CROSS_ENTROPY, &error));
  g_assert_error (error, TW_GRAPH_ERROR, TW_GRAPH_ERROR_INVALID);
  g_autofree char *named = g_strdup_printf ("output '%s' is ", out);
  g_assert_nonnull (strstr (error->message, named));
  g_assert_nonnull (strstr (error->message, "cross-entropy needs logits [N, C]"));
  g_clear_error (&error);
  g_assert_cmpint (tw_graph_n_nodes (m->graph), ==, n0);
  g_assert_null (m->recipe.loss);
  g_assert_true (tw_onnx_add_loss (m, TW_ONNX_LOSS_MSE, &error));
  g_assert_no_error (error);
  g_assert_cmpint (tw_graph_find_source (m->graph, "label")->out_info[0].ndim, ==, 4);
}

/* Train m from weights for steps steps of batch on its recipe's dataset;
 * returns the losses (caller frees).  The imported weights are loaded
 * strictly and checked to be what the trainer starts from. */
static double *
train_steps (tw_model *m, GHashTable *weights, int steps, int64_t batch)
{
  g_autoptr (GError) error = NULL;
  tw_dataset *train = NULL, *val = NULL, *test = NULL;
  g_assert_true (tw_datasets_open_for_training (m, NULL, FALSE, &train, &val, &test, &error));
  g_assert_no_error (error);
  g_assert_null (val);
  g_autoptr (tw_dataset) train_set = train;
  g_autoptr (tw_trainer) tr = tw_trainer_new (m, &error);
  g_assert_no_error (error);
  tw_state_dict_report rep = { 0 };
  g_assert_true (tw_params_load_state_dict (tw_trainer_params (tr), weights, NULL, "import", TRUE,
                                            &rep, &error));
  g_assert_no_error (error);
  tw_state_dict_report_clear (&rep);
  /* Every imported tensor is what the run starts from. */
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init (&it, weights);
  while (g_hash_table_iter_next (&it, &k, &v))
    {
      tw_param *p = tw_params_get (tw_trainer_params (tr), k);
      g_assert_nonnull (p);
      g_assert_cmpint (tw_tensor_numel (p->value), ==, tw_tensor_numel (v));
      for (int64_t i = 0; i < tw_tensor_numel (v); i++)
        g_assert_cmpfloat (tw_tensor_get_flat (p->value, i), ==, tw_tensor_get_flat (v, i));
    }
  g_autoptr (tw_batcher) b = tw_batcher_new (train, batch, TRUE, 0, TRUE);
  double *losses = g_new0 (double, steps);
  for (int s = 0; s < steps; s++)
    {
      tw_tensor *x = NULL, *y = NULL;
      if (!tw_batcher_next (b, &x, &y))
        {
          tw_batcher_reset (b, s);
          g_assert_true (tw_batcher_next (b, &x, &y));
        }
      g_assert_true (tw_trainer_step (tr, x, y, &losses[s], &error));
      g_assert_no_error (error);
      g_assert_true (isfinite (losses[s]));
      g_test_message ("step %d: loss %.4f", s, losses[s]);
      tw_tensor_unref (x);
      tw_tensor_unref (y);
    }
  return losses;
}

/* Each step's loss below the one before, the last below (1 - frac) of the
 * first.  The batch is the whole (synthetic) training set, so each step
 * sees the same samples: the loss of a working training step falls. */
static void
assert_falling (const double *l, int n, double frac)
{
  for (int s = 1; s < n; s++)
    g_assert_cmpfloat (l[s], <, l[s - 1]);
  g_test_message ("loss %.4f -> %.4f", l[0], l[n - 1]);
  g_assert_cmpfloat (l[n - 1], <, l[0] * (1 - frac));
}

/* The torch-exported CNN (tests/onnx/data/import-cnn.onnx: conv, batch norm,
 * pools, a residual block, sigmoid, Gemm; 379 parameters, 3 classes): 10
 * full-batch steps of 32 synthetic samples from its imported weights.  The
 * recipe's Adam at 1e-4 moves this small net slowly; at 0.05 the loss
 * measured 1.154 → 0.834, falling at every step; asserted: at every step and
 * by a fifth in all. */
static void
test_train_cnn (void)
{
  g_autofree char *cnn = fixture ("import-cnn.onnx");
  g_autoptr (GError) error = NULL;
  g_autoptr (GHashTable) weights = NULL;
  g_autoptr (tw_model) m = import (cnn, &weights);
  g_assert_true (tw_onnx_add_loss (m, TW_ONNX_LOSS_CROSS_ENTROPY, &error));
  g_assert_no_error (error);
  g_assert_cmpint (m->recipe.optimizer.type, ==, TW_OPT_ADAM);
  m->recipe.optimizer.lr = 0.05;
  g_free (m->recipe.dataset);
  m->recipe.dataset = g_strdup ("synthetic:32");
  g_autofree double *losses = train_steps (m, weights, 10, 32);
  assert_falling (losses, 10, 0.2);
}

/* The synthetic data: shaped as the input wants, labels in [0, C), the
 * same for the same seed, another draw for the test split; a count of
 * one's own; refusals for a model without [N, C] logits and bad counts. */
static void
test_synthetic_data (void)
{
  g_autofree char *cnn = fixture ("import-cnn.onnx");
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = import (cnn, NULL);
  g_assert_true (tw_onnx_add_loss (m, TW_ONNX_LOSS_CROSS_ENTROPY, &error));
  g_autoptr (tw_dataset) a = tw_dataset_open_for_model (m, "synthetic:40", TW_SPLIT_TRAIN, &error);
  g_assert_no_error (error);
  g_autoptr (tw_dataset) b = tw_dataset_open_for_model (m, "synthetic:40", TW_SPLIT_TRAIN, &error);
  g_autoptr (tw_dataset) t = tw_dataset_open_for_model (m, "synthetic:40", TW_SPLIT_TEST, &error);
  g_assert_no_error (error);
  g_assert_cmpint (tw_dataset_size (a), ==, 40);
  g_assert_cmpint (tw_dataset_size (t), ==, 10);
  g_assert_cmpint (a->x->ndim, ==, 4);
  g_assert_cmpint (a->x->shape[1], ==, 3);
  g_assert_cmpint (a->x->shape[2], ==, 16);
  g_assert_cmpint (a->x->shape[3], ==, 16);
  g_assert_cmpint (a->n_classes, ==, 3);
  for (int64_t i = 0; i < 40; i++)
    g_assert_cmpint (tw_tensor_i64 (a->y)[i], ==, i % 3);
  g_assert_cmpmem (tw_tensor_f32 (a->x), 40 * 768 * 4, tw_tensor_f32 (b->x), 40 * 768 * 4);
  g_assert_true (memcmp (tw_tensor_f32 (a->x), tw_tensor_f32 (t->x), 10 * 768 * 4) != 0);
  g_autoptr (tw_dataset) d = tw_dataset_open_for_model (m, "synthetic", TW_SPLIT_TRAIN, &error);
  g_assert_cmpint (tw_dataset_size (d), ==, 1024); /* 2^24 / 768 values, capped */

  g_assert_null (tw_dataset_open_for_model (m, "synthetic:0", TW_SPLIT_TRAIN, &error));
  g_assert_error (error, TW_DATA_ERROR, TW_DATA_ERROR_UNKNOWN);
  g_assert_nonnull (strstr (error->message, "dataset synthetic:0: the sample count: '0' is not "
                                            "valid (expected a whole number in [1, 1048576])"));
  g_clear_error (&error);
  g_autofree char *ops = fixture ("import-ops.onnx");
  g_autoptr (tw_model) img = import (ops, NULL);
  g_assert_null (tw_dataset_open_for_model (img, "synthetic", TW_SPLIT_TRAIN, &error));
  g_assert_error (error, TW_DATA_ERROR, TW_DATA_ERROR_MISMATCH);
  g_assert_nonnull (strstr (error->message, "logits [N, C]"));
  g_clear_error (&error);
  /* Token ids are not what random patterns give. */
  g_autofree char *emb = fixture ("export-embedding.json");
  g_autoptr (tw_model) tokens = tw_model_load (emb, &error);
  g_assert_no_error (error);
  tw_graph_infer (tokens->graph);
  g_assert_null (tw_dataset_open_for_model (tokens, "synthetic", TW_SPLIT_TRAIN, &error));
  g_assert_error (error, TW_DATA_ERROR, TW_DATA_ERROR_MISMATCH);
  g_assert_nonnull (strstr (error->message, "takes i64 values; synthetic samples are floats"));
}

/* torchvision's ResNet-18 (random weights, 64 × 64 inputs) exported by
 * Debian's torch: 6 full-batch steps of 16 synthetic samples from the
 * imported weights with the recipe tw_onnx_add_loss sets (Adam, 1e-4;
 * skipped without torchvision). */
static void
test_train_resnet18 (void)
{
  if (!g_file_test ("/usr/bin/python3", G_FILE_TEST_IS_EXECUTABLE))
    {
      g_test_skip ("no /usr/bin/python3");
      return;
    }
  g_autofree char *dir = g_dir_make_tmp ("twb-train-r18-XXXXXX", NULL);
  g_autofree char *script = g_build_filename (TW_ONNX_TEST_SCRIPTS, "export-torchvision.py", NULL);
  const char *argv[] = { "/usr/bin/python3", script, "resnet18", "13", "64", dir, NULL };
  int status = 0;
  g_autofree char *out = NULL, *err = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
                               &status, &error));
  g_autofree char *onnx = g_build_filename (dir, "resnet18.onnx", NULL);
  if (WIFEXITED (status) && WEXITSTATUS (status) == 77)
    g_test_skip ("no torch / torchvision for /usr/bin/python3");
  else
    {
      if (!g_spawn_check_wait_status (status, &error))
        g_error ("export-torchvision.py resnet18: %s\n%s", error->message, err);
      g_autoptr (GHashTable) weights = NULL;
      g_autoptr (tw_model) m = import (onnx, &weights);
      g_assert_true (tw_onnx_add_loss (m, TW_ONNX_LOSS_AUTO, &error));
      g_assert_no_error (error);
      g_assert_cmpstr (tw_graph_find_loss (m->graph)->op_name, ==, "cross_entropy");
      g_free (m->recipe.dataset);
      m->recipe.dataset = g_strdup ("synthetic:16");
      g_autofree double *losses = train_steps (m, weights, 6, 16);
      assert_falling (losses, 6, 0.2);
    }
  const char *files[] = { "resnet18.onnx", "input.pb", "output.pb" };
  for (guint i = 0; i < G_N_ELEMENTS (files); i++)
    {
      g_autofree char *f = g_build_filename (dir, files[i], NULL);
      g_unlink (f);
    }
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  g_test_add_func ("/onnx/train/names", test_names);
  g_test_add_func ("/onnx/train/add-loss", test_add_loss);
  g_test_add_func ("/onnx/train/refusals", test_refusals);
  g_test_add_func ("/onnx/train/synthetic-data", test_synthetic_data);
  g_test_add_func ("/onnx/train/cnn", test_train_cnn);
  g_test_add_func ("/onnx/train/torchvision/resnet18", test_train_resnet18);
  return g_test_run ();
}
