/* test-model.c — the model file: round trips, the example models, errors
 * that name the file and the JSON path, atomic saves, truncation fuzzing. */
#include "engine/model.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

/* Only the "input" op is known to exist; "mystery_*" ops never will, so their
 * attributes are kept as written, typed from the JSON. */
static const char sample[] =
  "{\n"
  "  \"format\": \"twb-model\", \"version\": 1, \"name\": \"sample \\\"quoted\\\" \\u00e9\",\n"
  "  \"graph\": {\n"
  "    \"nodes\": [\n"
  "      { \"id\": \"x\", \"op\": \"input\", \"attrs\": { \"shape\": [3, 4], \"dtype\": \"f32\",\n"
  "        \"role\": \"data\" }, \"pos\": [40, 120.5] },\n"
  "      { \"id\": \"y\", \"op\": \"input\", \"attrs\": { \"shape\": [], \"dtype\": \"i64\",\n"
  "        \"role\": \"label\" } },\n"
  "      { \"id\": \"split\", \"op\": \"mystery_split\", \"inputs\": [\"x\"],\n"
  "        \"attrs\": { \"parts\": 2, \"scale\": 1.0, \"tiny\": 1e-300, \"on\": true,\n"
  "                   \"mode\": \"fast\\ttab\", \"sizes\": [1, 2], \"weights\": [0.5, 2.0],\n"
  "                   \"none\": [] }, \"pos\": [-220, 0.1] },\n"
  "      { \"id\": \"a\", \"op\": \"mystery_dense\", \"inputs\": [\"split:0\"] },\n"
  "      { \"id\": \"b\", \"op\": \"mystery_dense\", \"inputs\": [\"split:1\"], \"share\": \"a\",\n"
  "        \"pos\": [400, 300] },\n"
  "      { \"id\": \"c\", \"op\": \"mystery_add\", \"inputs\": [\"a\", \"b\", \"nowhere\"],\n"
  "        \"attrs\": {}, \"share\": null },\n"
  "      { \"id\": \"loss\", \"op\": \"mystery_loss\", \"inputs\": [\"c\", \"y\"] }\n"
  "    ],\n"
  "    \"outputs\": [\"c\", \"split:1\"]\n"
  "  },\n"
  "  \"training\": {\n"
  "    \"loss\": \"loss\", \"batch_size\": 17, \"epochs\": 3, \"seed\": 9007199254740993,\n"
  "    \"dataset\": \"/tmp/data set.csv\", \"validation_split\": 0.125,\n"
  "    \"optimizer\": { \"type\": \"adamw\", \"lr\": 0.003, \"momentum\": 0.5,\n"
  "                   \"weight_decay\": 0.01, \"betas\": [0.8, 0.99], \"eps\": 1e-6 },\n"
  "    \"schedule\": { \"type\": \"cosine\", \"t_max\": 1000, \"min_lr\": 1e-5,\n"
  "                  \"warmup_steps\": 50,\n"
  "                  \"gamma\": 0.5 }\n"
  "  }\n"
  "}\n";

static const char *example_models[] = {
  "mlp.json", "lenet5.json", "mlp-gemm.json", "functional.json", "spirals.json",
};

static char *
asset_path (const char *name)
{
  const char *dir = g_getenv ("TWB_ASSETS_DIR");
  return dir ? g_build_filename (dir, "models", name, NULL) : NULL;
}

static void
assert_strv_equal (const char *const *a, const char *const *b)
{
  g_assert_cmpuint (g_strv_length ((char **) a), ==, g_strv_length ((char **) b));
  for (int i = 0; a[i]; i++)
    g_assert_cmpstr (a[i], ==, b[i]);
}

static void
assert_recipe_equal (const tw_recipe *a, const tw_recipe *b)
{
  g_assert_cmpstr (a->loss, ==, b->loss);
  g_assert_cmpint (a->batch_size, ==, b->batch_size);
  g_assert_cmpint (a->epochs, ==, b->epochs);
  g_assert_cmpuint (a->seed, ==, b->seed);
  g_assert_cmpstr (a->dataset, ==, b->dataset);
  /* Exact comparisons: doubles are written with enough digits to read back. */
  g_assert_cmpfloat (a->validation_split, ==, b->validation_split);
  g_assert_cmpint (a->optimizer.type, ==, b->optimizer.type);
  g_assert_cmpfloat (a->optimizer.lr, ==, b->optimizer.lr);
  g_assert_cmpfloat (a->optimizer.momentum, ==, b->optimizer.momentum);
  g_assert_cmpint (a->optimizer.nesterov, ==, b->optimizer.nesterov);
  g_assert_cmpfloat (a->optimizer.weight_decay, ==, b->optimizer.weight_decay);
  g_assert_cmpfloat (a->optimizer.beta1, ==, b->optimizer.beta1);
  g_assert_cmpfloat (a->optimizer.beta2, ==, b->optimizer.beta2);
  g_assert_cmpfloat (a->optimizer.eps, ==, b->optimizer.eps);
  g_assert_cmpint (a->schedule.type, ==, b->schedule.type);
  g_assert_cmpint (a->schedule.step_size, ==, b->schedule.step_size);
  g_assert_cmpfloat (a->schedule.gamma, ==, b->schedule.gamma);
  g_assert_cmpint (a->schedule.t_max, ==, b->schedule.t_max);
  g_assert_cmpfloat (a->schedule.min_lr, ==, b->schedule.min_lr);
  g_assert_cmpint (a->schedule.warmup_steps, ==, b->schedule.warmup_steps);
}

static void
assert_model_equal (const tw_model *a, const tw_model *b)
{
  g_assert_cmpstr (a->name, ==, b->name);
  g_assert_cmpint (tw_graph_n_nodes (a->graph), ==, tw_graph_n_nodes (b->graph));
  for (int i = 0; i < tw_graph_n_nodes (a->graph); i++)
    {
      const tw_node *p = tw_graph_node (a->graph, i), *q = tw_graph_node (b->graph, i);
      g_assert_cmpstr (p->id, ==, q->id);
      g_assert_cmpstr (p->op_name, ==, q->op_name);
      g_assert_true (p->op == q->op);
      g_assert_true (tw_attrs_equal (p->attrs, q->attrs));
      g_assert_cmpint (p->n_inputs, ==, q->n_inputs);
      for (int k = 0; k < p->n_inputs; k++)
        g_assert_cmpstr (p->inputs[k], ==, q->inputs[k]);
      g_assert_cmpstr (p->share, ==, q->share);
      g_assert_cmpint (p->has_pos, ==, q->has_pos);
      if (p->has_pos)
        {
          g_assert_cmpfloat (p->x, ==, q->x);
          g_assert_cmpfloat (p->y, ==, q->y);
        }
    }
  assert_strv_equal (tw_graph_outputs (a->graph), tw_graph_outputs (b->graph));
  assert_recipe_equal (&a->recipe, &b->recipe);
}

/* Serialise and read back: equal, and the text is stable. */
static void
assert_round_trip (const tw_model *m)
{
  gsize len;
  g_autofree char *text = tw_model_to_data (m, &len);
  g_assert_cmpuint (strlen (text), ==, len);
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) back =
    tw_model_load_from_data (text, (gssize) len, "round-trip.json", &error);
  if (back == NULL)
    g_error ("%s\n%s", error->message, text);
  assert_model_equal (m, back);
  g_autofree char *again = tw_model_to_data (back, NULL);
  g_assert_cmpstr (text, ==, again);
}

static void
test_new (void)
{
  g_autoptr (tw_model) m = tw_model_new ("empty");
  g_assert_cmpstr (m->name, ==, "empty");
  g_assert_cmpint (tw_graph_n_nodes (m->graph), ==, 0);
  g_assert_cmpint (m->recipe.optimizer.type, ==, TW_OPT_SGD);
  g_assert_cmpfloat (m->recipe.optimizer.lr, ==, 0.01);
  g_assert_cmpfloat (m->recipe.optimizer.momentum, ==, 0.9);
  g_assert_cmpint (m->recipe.batch_size, ==, 64);
  g_assert_cmpint (m->recipe.epochs, ==, 1);
  g_assert_cmpint (m->recipe.schedule.type, ==, TW_SCHED_CONSTANT);
  assert_round_trip (m);

  g_autoptr (tw_model) unnamed = tw_model_new (NULL);
  assert_round_trip (unnamed);
}

static void
test_round_trip (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = tw_model_load_from_data (sample, -1, "sample.json", &error);
  g_assert_no_error (error);

  g_assert_cmpstr (m->name, ==, "sample \"quoted\" \xc3\xa9");
  g_assert_cmpint (tw_graph_n_nodes (m->graph), ==, 7);
  const tw_node *x = tw_graph_find (m->graph, "x");
  g_assert_nonnull (x->op);
  g_assert_true (x->has_pos);
  g_assert_cmpfloat (x->y, ==, 120.5);
  g_assert_false (tw_graph_find (m->graph, "y")->has_pos);

  const tw_node *split = tw_graph_find (m->graph, "split");
  g_assert_null (split->op);
  g_assert_cmpint (tw_attrs_lookup (split->attrs, "parts")->type, ==, TW_ATTR_INT);
  g_assert_cmpint (tw_attrs_lookup (split->attrs, "scale")->type, ==, TW_ATTR_FLOAT);
  g_assert_cmpint (tw_attrs_lookup (split->attrs, "weights")->type, ==, TW_ATTR_FLOATS);
  g_assert_cmpstr (tw_attrs_get_string (split->attrs, "mode", NULL), ==, "fast\ttab");
  g_assert_cmpfloat (tw_attrs_get_float (split->attrs, "tiny", 0), ==, 1e-300);

  const tw_node *b = tw_graph_find (m->graph, "b");
  g_assert_cmpstr (b->share, ==, "a");
  g_assert_cmpstr (b->inputs[0], ==, "split:1");
  g_assert_null (tw_graph_find (m->graph, "c")->share);
  g_assert_cmpint (tw_graph_find (m->graph, "c")->n_inputs, ==, 3);
  assert_strv_equal (tw_graph_outputs (m->graph), (const char *const[]) { "c", "split:1", NULL });

  g_assert_cmpstr (m->recipe.loss, ==, "loss");
  g_assert_cmpuint (m->recipe.seed, ==, G_GUINT64_CONSTANT (9007199254740993));
  g_assert_cmpint (m->recipe.optimizer.type, ==, TW_OPT_ADAMW);
  g_assert_cmpfloat (m->recipe.optimizer.beta1, ==, 0.8);
  g_assert_cmpfloat (m->recipe.optimizer.eps, ==, 1e-6);
  g_assert_cmpint (m->recipe.schedule.type, ==, TW_SCHED_COSINE);
  g_assert_cmpint (m->recipe.schedule.warmup_steps, ==, 50);
  g_assert_cmpfloat (m->recipe.schedule.gamma, ==, 0.5);

  assert_round_trip (m);

  /* Through a file as well. */
  g_autofree char *dir = g_dir_make_tmp ("test-model-XXXXXX", &error);
  g_assert_no_error (error);
  g_autofree char *path = g_build_filename (dir, "sample.json", NULL);
  g_assert_true (tw_model_save (m, path, &error));
  g_assert_no_error (error);
  g_autoptr (tw_model) back = tw_model_load (path, &error);
  g_assert_no_error (error);
  assert_model_equal (m, back);
  g_assert_cmpint (g_unlink (path), ==, 0);
  g_assert_cmpint (g_rmdir (dir), ==, 0);
}

/* A model built in code, with every recipe field away from its default. */
static void
test_round_trip_built (void)
{
  g_autoptr (tw_model) m = tw_model_new ("built");
  tw_graph_add_input (m->graph, "x", TW_F32, 2, (int64_t[]) { 28, 28 }, "data");
  tw_attrs *attrs = tw_attrs_new ();
  tw_attrs_set_float (attrs, "alpha", 3.0);
  tw_attrs_set_floats (attrs, "w", 3, (double[]) { 0.1, 1.0 / 3.0, -2.0 });
  tw_attrs_set_bool (attrs, "flag", FALSE);
  tw_node *n = tw_graph_add (m->graph, "weird \"id\"\n", "mystery", attrs, "x", NULL);
  tw_attrs_free (attrs);
  tw_graph_set_pos (m->graph, n, 1.0 / 3.0, -1e20);
  tw_graph_set_share (m->graph, n, "x");
  tw_graph_set_outputs (m->graph, (const char *const[]) { "weird \"id\"\n", NULL });

  tw_recipe *r = &m->recipe;
  r->loss = g_strdup ("weird \"id\"\n");
  r->batch_size = 1;
  r->epochs = 1000;
  r->seed = G_MAXINT64;
  r->dataset = g_strdup ("spirals");
  r->validation_split = 0.1;
  r->optimizer.type = TW_OPT_SGD;
  r->optimizer.lr = 0.1;
  r->optimizer.momentum = 0;
  r->optimizer.nesterov = TRUE;
  r->optimizer.weight_decay = 5e-4;
  r->optimizer.beta1 = 0.5;
  r->optimizer.beta2 = 0.6;
  r->optimizer.eps = 1e-3;
  r->schedule.type = TW_SCHED_STEP;
  r->schedule.step_size = 30;
  r->schedule.gamma = 0.25;
  r->schedule.t_max = 7;
  r->schedule.min_lr = 0.001;
  r->schedule.warmup_steps = 5;
  assert_round_trip (m);

  r->optimizer.type = TW_OPT_ADAM;
  r->schedule.type = TW_SCHED_CONSTANT;
  assert_round_trip (m);
  g_clear_pointer (&r->loss, g_free);
  g_clear_pointer (&r->dataset, g_free);
  assert_round_trip (m);
}

/* With a registered op's schema, attributes keep the schema's types. */
static void
test_round_trip_linear (void)
{
  if (tw_op_lookup ("linear") == NULL)
    {
      g_test_skip ("op 'linear' is not registered in this build");
      return;
    }
  static const char text[] =
    "{ \"format\": \"twb-model\", \"version\": 1, \"graph\": { \"nodes\": [\n"
    "  { \"id\": \"x\", \"op\": \"input\", \"attrs\": { \"shape\": [4] } },\n"
    "  { \"id\": \"fc\", \"op\": \"linear\", \"inputs\": [\"x\"],\n"
    "    \"attrs\": { \"out_features\": 3, \"bias\": false } } ] } }";
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = tw_model_load_from_data (text, -1, "linear.json", &error);
  g_assert_no_error (error);
  g_assert_nonnull (tw_graph_find (m->graph, "fc")->op);
  assert_round_trip (m);
}

static void
test_examples (void)
{
  g_autofree char *probe = asset_path ("mlp.json");
  if (probe == NULL)
    {
      g_test_skip ("TWB_ASSETS_DIR is not set");
      return;
    }
  for (guint i = 0; i < G_N_ELEMENTS (example_models); i++)
    {
      g_autofree char *path = asset_path (example_models[i]);
      g_autoptr (GError) error = NULL;
      g_autoptr (tw_model) m = tw_model_load (path, &error);
      if (m == NULL)
        g_error ("%s", error->message);

      /* Name as the file, every node placed, one data and one label source,
       * the loss named, outputs naming nodes. */
      g_autofree char *stem = g_strndup (example_models[i], strlen (example_models[i]) - 5);
      g_assert_cmpstr (m->name, ==, stem);
      g_assert_cmpint (tw_graph_n_nodes (m->graph), >, 3);
      for (int k = 0; k < tw_graph_n_nodes (m->graph); k++)
        {
          const tw_node *n = tw_graph_node (m->graph, k);
          g_assert_true (n->has_pos);
          for (int j = 0; j < n->n_inputs; j++)
            g_assert_cmpint (tw_graph_resolve (m->graph, n->inputs[j]).node, >=, 0);
        }
      g_assert_nonnull (tw_graph_find_source (m->graph, "data"));
      g_assert_nonnull (tw_graph_find_source (m->graph, "label"));
      g_assert_nonnull (tw_graph_find (m->graph, m->recipe.loss));
      for (const char *const *o = tw_graph_outputs (m->graph); *o; o++)
        g_assert_cmpint (tw_graph_resolve (m->graph, *o).node, >=, 0);
      assert_round_trip (m);

      /* Once every op it uses is registered, shapes must fit too. */
      gboolean all_known = TRUE;
      for (int k = 0; k < tw_graph_n_nodes (m->graph); k++)
        all_known = all_known && tw_graph_node (m->graph, k)->op != NULL;
      if (all_known && tw_graph_infer (m->graph) != 0)
        {
          g_autofree char *errors = tw_graph_errors_to_string (m->graph);
          g_error ("%s:\n%s", example_models[i], errors);
        }
    }

  g_autofree char *mlp_path = asset_path ("mlp.json");
  g_autoptr (tw_model) mlp = tw_model_load (mlp_path, NULL);
  g_assert_cmpint (mlp->recipe.optimizer.type, ==, TW_OPT_SGD);
  g_assert_cmpfloat (mlp->recipe.optimizer.lr, ==, 0.01);
  g_assert_cmpfloat (mlp->recipe.optimizer.momentum, ==, 0.9);
  g_assert_cmpint (mlp->recipe.batch_size, ==, 64);
  g_assert_cmpstr (mlp->recipe.dataset, ==, "fashion-mnist");

  g_autofree char *gemm_path = asset_path ("mlp-gemm.json");
  g_autoptr (tw_model) gemm = tw_model_load (gemm_path, NULL);
  g_assert_cmpint (gemm->recipe.batch_size, ==, 256);
  g_assert_cmpint (tw_attrs_get_int (tw_graph_find (gemm->graph, "fc2")->attrs, "out_features", 0),
                   ==, 4096);

  g_autofree char *func_path = asset_path ("functional.json");
  g_autoptr (tw_model) func = tw_model_load (func_path, NULL);
  g_assert_cmpstr (tw_graph_find (func->graph, "enc_b")->share, ==, "enc_a");

  g_autofree char *spirals_path = asset_path ("spirals.json");
  g_autoptr (tw_model) spirals = tw_model_load (spirals_path, NULL);
  g_assert_cmpint (spirals->recipe.optimizer.type, ==, TW_OPT_ADAM);
  g_assert_cmpint (spirals->recipe.batch_size, ==, 32);
  g_assert_cmpint (spirals->recipe.epochs, ==, 20);
  g_assert_cmpstr (spirals->recipe.dataset, ==, "spirals");
}

/* ---- Malformed files ---------------------------------------------------- */

#define HEAD "{\"format\": \"twb-model\", \"version\": 1, "
#define NODES(...) HEAD "\"graph\": {\"nodes\": [" __VA_ARGS__ "]}}"
#define X_NODE "{\"id\": \"x\", \"op\": \"input\", \"attrs\": {\"shape\": [2]}}"
#define TRAINING(...) HEAD "\"graph\": {\"nodes\": []}, \"training\": {" __VA_ARGS__ "}}"
#define OPTIMIZER(...) TRAINING ("\"optimizer\": {" __VA_ARGS__ "}")
#define SCHEDULE(...) TRAINING ("\"schedule\": {" __VA_ARGS__ "}")

typedef struct
{
  const char *data;
  const char *where;        /* "$.graph.nodes[3].op", or "line 3" for syntax errors */
  tw_model_error code;
} bad_case;

static const bad_case bad_cases[] = {
  /* Not JSON. */
  { "", "empty", TW_MODEL_ERROR_PARSE },
  { "  \n\t ", "empty", TW_MODEL_ERROR_PARSE },
  { "{\"format\": \"twb-model\", \"vers", "line 1", TW_MODEL_ERROR_PARSE },
  { "{\n\"format\": \"twb-model\",\n\"version\": 1,,\n}", "line 3", TW_MODEL_ERROR_PARSE },
  { "{\"format\": nan}", "line 1", TW_MODEL_ERROR_PARSE },
  { "{\n\n\"a\": 99999999999999999999}", "line 3", TW_MODEL_ERROR_PARSE },
  { "{\"a\": \"\xff\xfe\"}", "line 1", TW_MODEL_ERROR_PARSE },
  /* Not a model. */
  { "[1, 2, 3]", "$: expected an object", TW_MODEL_ERROR_FORMAT },
  { "\"twb-model\"", "$: expected an object", TW_MODEL_ERROR_FORMAT },
  { "null", "$: expected an object", TW_MODEL_ERROR_FORMAT },
  { "{}", "$: missing member \"format\"", TW_MODEL_ERROR_FORMAT },
  { "{\"format\": \"onnx\", \"version\": 1}", "$.format: expected \"twb-model\"",
    TW_MODEL_ERROR_FORMAT },
  { "{\"format\": 1}", "$.format: expected a string", TW_MODEL_ERROR_FORMAT },
  { "{\"format\": \"twb-model\"}", "$: missing member \"version\"", TW_MODEL_ERROR_FORMAT },
  { "{\"format\": \"twb-model\", \"version\": \"1\"}", "$.version: expected an integer",
    TW_MODEL_ERROR_FORMAT },
  { "{\"format\": \"twb-model\", \"version\": 1.5}", "$.version", TW_MODEL_ERROR_FORMAT },
  { "{\"format\": \"twb-model\", \"version\": 0}", "$.version", TW_MODEL_ERROR_FORMAT },
  { "{\"format\": \"twb-model\", \"version\": -9223372036854775808}", "$.version",
    TW_MODEL_ERROR_FORMAT },
  { "{\"format\": \"twb-model\", \"version\": 2}",
    "$.version: version 2 is newer than this build reads (1)", TW_MODEL_ERROR_VERSION },
  { HEAD "\"graph\": {\"nodes\": []}, \"grpah\": {}}", "$.grpah: unknown member",
    TW_MODEL_ERROR_FORMAT },
  { HEAD "\"name\": 5, \"graph\": {\"nodes\": []}}", "$.name", TW_MODEL_ERROR_FORMAT },
  /* The graph. */
  { HEAD "\"name\": \"m\"}", "$: missing member \"graph\"", TW_MODEL_ERROR_FORMAT },
  { HEAD "\"graph\": []}", "$.graph: expected an object", TW_MODEL_ERROR_FORMAT },
  { HEAD "\"graph\": {}}", "$.graph: missing member \"nodes\"", TW_MODEL_ERROR_FORMAT },
  { HEAD "\"graph\": {\"nodes\": {}}}", "$.graph.nodes: expected an array",
    TW_MODEL_ERROR_FORMAT },
  { HEAD "\"graph\": {\"nodes\": [], \"edges\": []}}", "$.graph.edges: unknown member",
    TW_MODEL_ERROR_FORMAT },
  { HEAD "\"graph\": {\"nodes\": [], \"outputs\": \"x\"}}", "$.graph.outputs: expected an array",
    TW_MODEL_ERROR_FORMAT },
  { HEAD "\"graph\": {\"nodes\": [], \"outputs\": [\"x\", 3]}}", "$.graph.outputs[1]",
    TW_MODEL_ERROR_FORMAT },
  { HEAD "\"graph\": {\"nodes\": [], \"outputs\": [\"x:y\"]}}", "$.graph.outputs[0]",
    TW_MODEL_ERROR_FORMAT },
  /* Nodes. */
  { NODES (X_NODE ", 7"), "$.graph.nodes[1]: expected an object", TW_MODEL_ERROR_FORMAT },
  { NODES ("{\"op\": \"input\"}"), "$.graph.nodes[0]: missing member \"id\"",
    TW_MODEL_ERROR_FORMAT },
  { NODES ("{\"id\": \"a\"}"), "$.graph.nodes[0]: missing member \"op\"", TW_MODEL_ERROR_FORMAT },
  { NODES ("{\"id\": 1, \"op\": \"relu\"}"), "$.graph.nodes[0].id: expected a string",
    TW_MODEL_ERROR_FORMAT },
  { NODES ("{\"id\": \"\", \"op\": \"relu\"}"), "$.graph.nodes[0].id: empty id",
    TW_MODEL_ERROR_FORMAT },
  { NODES ("{\"id\": \"a:1\", \"op\": \"relu\"}"), "$.graph.nodes[0].id", TW_MODEL_ERROR_FORMAT },
  { NODES (X_NODE ", {\"id\": \"a\", \"op\": \"m\"}, {\"id\": \"b\", \"op\": \"m\"},"
           "{\"id\": \"c\", \"op\": [\"linear\"]}"),
    "$.graph.nodes[3].op: expected a string", TW_MODEL_ERROR_FORMAT },
  { NODES ("{\"id\": \"a\", \"op\": \"\"}"), "$.graph.nodes[0].op", TW_MODEL_ERROR_FORMAT },
  { NODES (X_NODE ", {\"id\": \"fc1\", \"op\": \"m\"}, {\"id\": \"b\", \"op\": \"m\"},"
           "{\"id\": \"c\", \"op\": \"m\"}, {\"id\": \"d\", \"op\": \"m\"},"
           "{\"id\": \"fc1\", \"op\": \"m\"}"),
    "$.graph.nodes[5].id: duplicate id 'fc1'", TW_MODEL_ERROR_FORMAT },
  { NODES ("{\"id\": \"a\", \"op\": \"m\", \"input\": [\"x\"]}"), "$.graph.nodes[0].input: unknown",
    TW_MODEL_ERROR_FORMAT },
  { NODES (X_NODE ", {\"id\": \"a\", \"op\": \"m\", \"inputs\": \"x\"}"),
    "$.graph.nodes[1].inputs: expected an array", TW_MODEL_ERROR_FORMAT },
  { NODES (X_NODE ", {\"id\": \"a\", \"op\": \"m\", \"inputs\": {\"x\": 1}}"),
    "$.graph.nodes[1].inputs: expected an array", TW_MODEL_ERROR_FORMAT },
  { NODES (X_NODE ", {\"id\": \"a\", \"op\": \"m\", \"inputs\": [\"x\", null]}"),
    "$.graph.nodes[1].inputs[1]: expected a string", TW_MODEL_ERROR_FORMAT },
  { NODES (X_NODE ", {\"id\": \"a\", \"op\": \"m\", \"inputs\": [\"x:one\"]}"),
    "$.graph.nodes[1].inputs[0]: malformed reference", TW_MODEL_ERROR_FORMAT },
  { NODES (X_NODE ", {\"id\": \"a\", \"op\": \"m\", \"inputs\": [\"\"]}"),
    "$.graph.nodes[1].inputs[0]: malformed reference", TW_MODEL_ERROR_FORMAT },
  { NODES (X_NODE ", {\"id\": \"a\", \"op\": \"m\", \"inputs\": [\"x:99999999999\"]}"),
    "$.graph.nodes[1].inputs[0]: malformed reference", TW_MODEL_ERROR_FORMAT },
  /* Attributes: against the schema of a known op, generic for unknown ones. */
  { NODES ("{\"id\": \"x\", \"op\": \"input\", \"attrs\": [2]}"),
    "$.graph.nodes[0].attrs: expected an object", TW_MODEL_ERROR_FORMAT },
  { NODES ("{\"id\": \"x\", \"op\": \"input\", \"attrs\": {\"shape\": [2], \"shap\": 1}}"),
    "$.graph.nodes[0].attrs.shap: unknown attribute", TW_MODEL_ERROR_FORMAT },
  { NODES ("{\"id\": \"x\", \"op\": \"input\", \"attrs\": {\"shape\": \"2x2\"}}"),
    "$.graph.nodes[0].attrs.shape: expected", TW_MODEL_ERROR_FORMAT },
  { NODES ("{\"id\": \"x\", \"op\": \"input\", \"attrs\": {\"shape\": [2.5]}}"),
    "$.graph.nodes[0].attrs.shape: expected", TW_MODEL_ERROR_FORMAT },
  { NODES ("{\"id\": \"x\", \"op\": \"input\", \"attrs\": {\"role\": 1}}"),
    "$.graph.nodes[0].attrs.role: expected", TW_MODEL_ERROR_FORMAT },
  { NODES (X_NODE ", {\"id\": \"a\", \"op\": \"m\", \"attrs\": {\"deep\": {\"k\": 1}}}"),
    "$.graph.nodes[1].attrs.deep", TW_MODEL_ERROR_FORMAT },
  { NODES (X_NODE ", {\"id\": \"a\", \"op\": \"m\", \"attrs\": {\"mixed\": [1, \"a\"]}}"),
    "$.graph.nodes[1].attrs.mixed", TW_MODEL_ERROR_FORMAT },
  { NODES (X_NODE ", {\"id\": \"a\", \"op\": \"m\", \"attrs\": {\"n\": null}}"),
    "$.graph.nodes[1].attrs.n", TW_MODEL_ERROR_FORMAT },
  { NODES (X_NODE ", {\"id\": \"a\", \"op\": \"m\", \"attrs\": {\"big\": 1e999}}"),
    "$.graph.nodes[1].attrs.big: number out of range", TW_MODEL_ERROR_FORMAT },
  { NODES (X_NODE ", {\"id\": \"a\", \"op\": \"m\", \"attrs\": {\"l\": [1, 2, 3, 4, 5, 6, 7, 8,"
           "9, 10, 11, 12, 13, 14, 15, 16, 17]}}"),
    "$.graph.nodes[1].attrs.l", TW_MODEL_ERROR_FORMAT },
  /* share and pos. */
  { NODES (X_NODE ", {\"id\": \"a\", \"op\": \"m\", \"share\": 1}"),
    "$.graph.nodes[1].share: expected a string", TW_MODEL_ERROR_FORMAT },
  { NODES (X_NODE ", {\"id\": \"a\", \"op\": \"m\", \"share\": \"\"}"),
    "$.graph.nodes[1].share", TW_MODEL_ERROR_FORMAT },
  { NODES ("{\"id\": \"a\", \"op\": \"m\", \"pos\": \"40,120\"}"),
    "$.graph.nodes[0].pos: expected an array", TW_MODEL_ERROR_FORMAT },
  { NODES ("{\"id\": \"a\", \"op\": \"m\", \"pos\": [40]}"),
    "$.graph.nodes[0].pos: expected [x, y]", TW_MODEL_ERROR_FORMAT },
  { NODES ("{\"id\": \"a\", \"op\": \"m\", \"pos\": [1, 2, 3]}"), "$.graph.nodes[0].pos",
    TW_MODEL_ERROR_FORMAT },
  { NODES ("{\"id\": \"a\", \"op\": \"m\", \"pos\": [1, \"2\"]}"),
    "$.graph.nodes[0].pos[1]: expected a number", TW_MODEL_ERROR_FORMAT },
  { NODES ("{\"id\": \"a\", \"op\": \"m\", \"pos\": [-1e999, 0]}"),
    "$.graph.nodes[0].pos[0]: number out of range", TW_MODEL_ERROR_FORMAT },
  /* The training recipe. */
  { HEAD "\"graph\": {\"nodes\": []}, \"training\": [1]}", "$.training: expected an object",
    TW_MODEL_ERROR_FORMAT },
  { TRAINING ("\"learning_rate\": 0.1"), "$.training.learning_rate: unknown member",
    TW_MODEL_ERROR_FORMAT },
  { TRAINING ("\"loss\": 3"), "$.training.loss", TW_MODEL_ERROR_FORMAT },
  { TRAINING ("\"batch_size\": -64"), "$.training.batch_size: must be at least 1",
    TW_MODEL_ERROR_FORMAT },
  { TRAINING ("\"batch_size\": 0"), "$.training.batch_size", TW_MODEL_ERROR_FORMAT },
  { TRAINING ("\"batch_size\": 64.0"), "$.training.batch_size: expected an integer",
    TW_MODEL_ERROR_FORMAT },
  { TRAINING ("\"batch_size\": \"64\""), "$.training.batch_size", TW_MODEL_ERROR_FORMAT },
  { TRAINING ("\"batch_size\": 1e300"), "$.training.batch_size", TW_MODEL_ERROR_FORMAT },
  { TRAINING ("\"epochs\": 0"), "$.training.epochs", TW_MODEL_ERROR_FORMAT },
  { TRAINING ("\"seed\": -1"), "$.training.seed", TW_MODEL_ERROR_FORMAT },
  { TRAINING ("\"dataset\": [\"a\"]"), "$.training.dataset", TW_MODEL_ERROR_FORMAT },
  { TRAINING ("\"validation_split\": 1.5"), "$.training.validation_split", TW_MODEL_ERROR_FORMAT },
  { TRAINING ("\"validation_split\": -0.1"), "$.training.validation_split",
    TW_MODEL_ERROR_FORMAT },
  { TRAINING ("\"optimizer\": \"sgd\""), "$.training.optimizer: expected an object",
    TW_MODEL_ERROR_FORMAT },
  { OPTIMIZER ("\"type\": \"rmsprop\""), "$.training.optimizer.type: unknown optimizer 'rmsprop'",
    TW_MODEL_ERROR_FORMAT },
  { OPTIMIZER ("\"type\": 1"), "$.training.optimizer.type", TW_MODEL_ERROR_FORMAT },
  { OPTIMIZER ("\"beta1\": 0.9"), "$.training.optimizer.beta1: unknown member",
    TW_MODEL_ERROR_FORMAT },
  { OPTIMIZER ("\"lr\": -0.1"), "$.training.optimizer.lr", TW_MODEL_ERROR_FORMAT },
  { OPTIMIZER ("\"lr\": \"fast\""), "$.training.optimizer.lr: expected a number",
    TW_MODEL_ERROR_FORMAT },
  { OPTIMIZER ("\"lr\": 1e400"), "$.training.optimizer.lr: number out of range",
    TW_MODEL_ERROR_FORMAT },
  { OPTIMIZER ("\"momentum\": -1"), "$.training.optimizer.momentum", TW_MODEL_ERROR_FORMAT },
  { OPTIMIZER ("\"nesterov\": \"yes\""), "$.training.optimizer.nesterov", TW_MODEL_ERROR_FORMAT },
  { OPTIMIZER ("\"weight_decay\": -1"), "$.training.optimizer.weight_decay",
    TW_MODEL_ERROR_FORMAT },
  { OPTIMIZER ("\"betas\": [0.9]"), "$.training.optimizer.betas", TW_MODEL_ERROR_FORMAT },
  { OPTIMIZER ("\"betas\": 0.9"), "$.training.optimizer.betas", TW_MODEL_ERROR_FORMAT },
  { OPTIMIZER ("\"betas\": [0.9, 1.0]"), "$.training.optimizer.betas[1]", TW_MODEL_ERROR_FORMAT },
  { OPTIMIZER ("\"eps\": 0"), "$.training.optimizer.eps", TW_MODEL_ERROR_FORMAT },
  { SCHEDULE ("\"type\": \"linear\""), "$.training.schedule.type: unknown schedule 'linear'",
    TW_MODEL_ERROR_FORMAT },
  { SCHEDULE ("\"type\": \"step\""), "$.training.schedule: a step schedule needs",
    TW_MODEL_ERROR_FORMAT },
  { SCHEDULE ("\"step_size\": 0"), "$.training.schedule.step_size", TW_MODEL_ERROR_FORMAT },
  { SCHEDULE ("\"gamma\": 0"), "$.training.schedule.gamma", TW_MODEL_ERROR_FORMAT },
  { SCHEDULE ("\"t_max\": -5"), "$.training.schedule.t_max", TW_MODEL_ERROR_FORMAT },
  { SCHEDULE ("\"min_lr\": -1"), "$.training.schedule.min_lr", TW_MODEL_ERROR_FORMAT },
  { SCHEDULE ("\"warmup_steps\": 1.5"), "$.training.schedule.warmup_steps",
    TW_MODEL_ERROR_FORMAT },
  { SCHEDULE ("\"period\": 5"), "$.training.schedule.period: unknown member",
    TW_MODEL_ERROR_FORMAT },
};

static void
assert_load_fails (const char *data, gssize len, const char *where, tw_model_error code)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = tw_model_load_from_data (data, len, "bad.json", &error);
  if (m != NULL)
    g_error ("loaded, but should fail at %s: %s", where, data);
  g_assert_error (error, TW_MODEL_ERROR, (int) code);
  if (!g_str_has_prefix (error->message, "bad.json: ")
      || !g_strstr_len (error->message, -1, where))
    g_error ("message '%s' should name bad.json and '%s'", error->message, where);
}

static void
test_errors (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (bad_cases); i++)
    {
      const bad_case *c = &bad_cases[i];
      g_autofree char *escaped = g_strescape (c->data, NULL);
      g_test_message ("case %u: %s", i, escaped);
      assert_load_fails (c->data, -1, c->where, c->code);
    }

  /* A NUL byte inside the given length. */
  assert_load_fails ("{\"format\"\0: 1}", 14, "line 1", TW_MODEL_ERROR_PARSE);

  /* Nesting far deeper than a model needs (json-glib would overflow its stack). */
  GString *deep = g_string_new (HEAD "\"graph\": {\"nodes\": [], \"x\": ");
  for (int i = 0; i < 200000; i++)
    g_string_append_c (deep, i % 2 ? '{' : '[');
  assert_load_fails (deep->str, -1, "line 1: nested more than", TW_MODEL_ERROR_PARSE);
  g_string_free (deep, TRUE);

  /* A hundred thousand nodes load (no quadratic work, no recursion). */
  GString *many = g_string_new (HEAD "\"graph\": {\"nodes\": [");
  for (int i = 0; i < 100000; i++)
    g_string_append_printf (many, "%s{\"id\": \"n%d\", \"op\": \"m\", \"inputs\": [\"n%d\"]}",
                            i ? "," : "", i, i ? i - 1 : 0);
  g_string_append (many, "]}}");
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = tw_model_load_from_data (many->str, -1, "many.json", &error);
  g_assert_no_error (error);
  g_assert_cmpint (tw_graph_n_nodes (m->graph), ==, 100000);
  g_string_free (many, TRUE);
}

static void
test_version (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *text = g_strdup (sample);
  char *v = strstr (text, "\"version\": 1");
  v[strlen ("\"version\": ")] = '2';
  g_autoptr (tw_model) m = tw_model_load_from_data (text, -1, "mlp.json", &error);
  g_assert_null (m);
  g_assert_error (error, TW_MODEL_ERROR, TW_MODEL_ERROR_VERSION);
  g_assert_cmpstr (error->message, ==,
                   "mlp.json: $.version: version 2 is newer than this build reads (1)");
}

static void
test_load_file_errors (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("test-model-XXXXXX", &error);
  g_assert_no_error (error);

  g_autofree char *missing = g_build_filename (dir, "missing.json", NULL);
  g_assert_null (tw_model_load (missing, &error));
  g_assert_error (error, TW_MODEL_ERROR, TW_MODEL_ERROR_IO);
  g_assert_true (g_str_has_prefix (error->message, missing));
  g_clear_error (&error);

  g_autofree char *broken = g_build_filename (dir, "broken.json", NULL);
  static const char broken_text[] = "{\n  \"format\": \"twb-model\",\n  \"version\": 1,,\n}";
  g_assert_true (g_file_set_contents (broken, broken_text, -1, NULL));
  g_assert_null (tw_model_load (broken, &error));
  g_assert_error (error, TW_MODEL_ERROR, TW_MODEL_ERROR_PARSE);
  g_autofree char *want = g_strdup_printf ("%s: line 3", broken);
  if (!g_str_has_prefix (error->message, want))
    g_error ("'%s' should start with '%s'", error->message, want);
  g_clear_error (&error);

  g_assert_null (tw_model_load (dir, &error));
  g_assert_error (error, TW_MODEL_ERROR, TW_MODEL_ERROR_IO);
  g_clear_error (&error);

  g_unlink (broken);
  g_rmdir (dir);
}

static int
count_entries (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  int n = 0;
  while (g_dir_read_name (d))
    n++;
  return n;
}

static void
test_save_atomic (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("test-model-XXXXXX", &error);
  g_assert_no_error (error);
  g_autofree char *path = g_build_filename (dir, "m.json", NULL);

  g_autoptr (tw_model) m = tw_model_load_from_data (sample, -1, "sample.json", &error);
  g_assert_no_error (error);
  g_assert_true (tw_model_save (m, path, &error));
  g_assert_no_error (error);

  /* Saving over an existing file replaces it whole. */
  g_free (m->name);
  m->name = g_strdup ("second");
  g_assert_true (tw_model_save (m, path, &error));
  g_assert_no_error (error);
  g_autoptr (tw_model) back = tw_model_load (path, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (back->name, ==, "second");
  g_assert_cmpint (count_entries (dir), ==, 1);

  /* A failed save leaves the original as it was and no temporary file: the
   * temporary name (path + ".tmp-XXXXXX") is longer than a file name may be
   * (NAME_MAX 255 on Linux), while the original's name is not; this fails for
   * root as well, unlike a read-only directory. */
  g_autofree char *long_name = g_strdup_printf ("%0250d.json", 0);
  g_autofree char *long_path = g_build_filename (dir, long_name, NULL);
  g_autofree char *before = NULL;
  gsize before_len;
  before = tw_model_to_data (back, &before_len);
  g_assert_true (g_file_set_contents_full (long_path, before, (gssize) before_len,
                                           G_FILE_SET_CONTENTS_NONE, 0644, NULL));
  g_assert_false (tw_model_save (m, long_path, &error));
  g_assert_error (error, TW_MODEL_ERROR, TW_MODEL_ERROR_IO);
  g_assert_true (g_str_has_prefix (error->message, long_path));
  g_clear_error (&error);
  g_autofree char *after = NULL;
  gsize after_len;
  g_assert_true (g_file_get_contents (long_path, &after, &after_len, NULL));
  g_assert_cmpmem (before, before_len, after, after_len);
  g_assert_cmpint (count_entries (dir), ==, 2);

  /* Saving over a directory fails at the rename; the temporary file goes. */
  g_autofree char *sub = g_build_filename (dir, "sub.json", NULL);
  g_assert_cmpint (g_mkdir (sub, 0755), ==, 0);
  g_assert_false (tw_model_save (m, sub, &error));
  g_assert_error (error, TW_MODEL_ERROR, TW_MODEL_ERROR_IO);
  g_clear_error (&error);
  g_assert_cmpint (count_entries (dir), ==, 3);

  /* Into a directory that does not exist. */
  g_autofree char *nowhere = g_build_filename (dir, "no", "such", "m.json", NULL);
  g_assert_false (tw_model_save (m, nowhere, &error));
  g_assert_error (error, TW_MODEL_ERROR, TW_MODEL_ERROR_IO);
  g_clear_error (&error);

  /* A read-only directory (not for root, who may write anyway). */
  if (geteuid () != 0)
    {
      g_assert_cmpint (g_chmod (dir, 0555), ==, 0);
      g_assert_false (tw_model_save (m, long_path, &error));
      g_assert_error (error, TW_MODEL_ERROR, TW_MODEL_ERROR_IO);
      g_clear_error (&error);
      g_assert_true (tw_model_save (m, path, &error) == FALSE);
      g_clear_error (&error);
      g_assert_cmpint (g_chmod (dir, 0755), ==, 0);
      g_autoptr (tw_model) still = tw_model_load (path, &error);
      g_assert_no_error (error);
      g_assert_cmpstr (still->name, ==, "second");
      g_assert_cmpint (count_entries (dir), ==, 3);
    }

  g_rmdir (sub);
  g_unlink (long_path);
  g_unlink (path);
  g_assert_cmpint (g_rmdir (dir), ==, 0);
}

/* Load every prefix of a valid file, and files with bytes replaced: each
 * gives a model or an error naming the file, never a crash (run under ASan).
 * What loads must also save and load back unchanged. */
static void
fuzz_one (const char *data, gsize len)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = tw_model_load_from_data (data, (gssize) len, "fuzz.json", &error);
  if (m == NULL)
    {
      g_assert_nonnull (error);
      g_assert_true (g_str_has_prefix (error->message, "fuzz.json: "));
    }
  else
    {
      g_assert_no_error (error);
      assert_round_trip (m);
    }
}

static void
fuzz_text (const char *text, gsize len, GRand *rand)
{
  /* Every 7th prefix: a few hundred loads per file. */
  for (gsize n = 0; n <= len; n += 7)
    fuzz_one (text, n);
  fuzz_one (text, len);

  static const char swaps[] = "\"{}[],:0-9.e\\ x\n\xff";
  g_autofree char *copy = g_memdup2 (text, len);
  for (int round = 0; round < 1500; round++)
    {
      memcpy (copy, text, len);
      int edits = g_rand_int_range (rand, 1, 4);
      for (int e = 0; e < edits; e++)
        copy[g_rand_int_range (rand, 0, (int) len)] =
          swaps[g_rand_int_range (rand, 0, (int) sizeof swaps - 1)];
      fuzz_one (copy, len);
    }
}

static void
test_fuzz (void)
{
  g_autoptr (GRand) rand = g_rand_new_with_seed (20240611);
  fuzz_text (sample, strlen (sample), rand);

  for (guint i = 0; i < G_N_ELEMENTS (example_models); i++)
    {
      g_autofree char *path = asset_path (example_models[i]);
      g_autofree char *text = NULL;
      gsize len;
      if (path == NULL || !g_file_get_contents (path, &text, &len, NULL))
        continue;
      fuzz_text (text, len, rand);
    }
}

/* The "editor" member is kept verbatim: loaded, saved, loaded again. */
static void
test_editor_member (void)
{
  static const char data[] =
    "{ \"format\": \"twb-model\", \"version\": 1,\n"
    "  \"graph\": { \"nodes\": [ { \"id\": \"x\", \"op\": \"input\" },\n"
    "                            { \"id\": \"r\", \"op\": \"relu\", \"inputs\": [\"x\"] } ] },\n"
    "  \"editor\": { \"blocks\": [ { \"name\": \"body\", \"nodes\": [\"r\"], \"collapsed\": true,\n"
    "                              \"pos\": [10, 20.5] } ], \"zoom\": 1.5 } }\n";
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = tw_model_load_from_data (data, -1, "editor.json", &error);
  g_assert_no_error (error);
  g_assert_nonnull (m->editor);
  g_assert_true (JSON_NODE_HOLDS_OBJECT (m->editor));
  g_autofree char *text = tw_model_to_data (m, NULL);
  g_assert_nonnull (strstr (text, "\"editor\""));
  g_autoptr (tw_model) m2 = tw_model_load_from_data (text, -1, "editor2.json", &error);
  g_assert_no_error (error);
  g_assert_true (json_node_equal (m->editor, m2->editor));
  g_autofree char *text2 = tw_model_to_data (m2, NULL);
  g_assert_cmpstr (text, ==, text2);

  /* Absent: NULL, and not written. */
  g_autoptr (tw_model) plain = tw_model_new ("plain");
  g_assert_null (plain->editor);
  g_autofree char *ptext = tw_model_to_data (plain, NULL);
  g_assert_null (strstr (ptext, "\"editor\""));

  /* Not an object: refused with its path. */
  g_autoptr (tw_model) bad = tw_model_load_from_data (
    "{ \"format\": \"twb-model\", \"version\": 1, \"graph\": { \"nodes\": [] }, \"editor\": 3 }",
    -1, "bad.json", &error);
  g_assert_null (bad);
  g_assert_error (error, TW_MODEL_ERROR, TW_MODEL_ERROR_FORMAT);
  g_assert_nonnull (strstr (error->message, "$.editor"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/model/new", test_new);
  g_test_add_func ("/engine/model/round-trip", test_round_trip);
  g_test_add_func ("/engine/model/round-trip-built", test_round_trip_built);
  g_test_add_func ("/engine/model/round-trip-linear", test_round_trip_linear);
  g_test_add_func ("/engine/model/examples", test_examples);
  g_test_add_func ("/engine/model/errors", test_errors);
  g_test_add_func ("/engine/model/version", test_version);
  g_test_add_func ("/engine/model/load-file-errors", test_load_file_errors);
  g_test_add_func ("/engine/model/save-atomic", test_save_atomic);
  g_test_add_func ("/engine/model/fuzz", test_fuzz);
  g_test_add_func ("/engine/model/editor-member", test_editor_member);
  return g_test_run ();
}
