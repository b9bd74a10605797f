/* test-graph.c — graph IR: references, topological order, whole-graph shape
 * inference with every error reported on its own node, shared parameters,
 * renames, sequential building.  Uses two ops registered by the test so it
 * checks the graph alone. */
#include "engine/graph.h"

#include <string.h>

/* "tdense": [.., in] -> [.., units], params weight [units, in], bias [units]. */
static const tw_attr_spec tdense_attrs[] = {
  { "units", TW_ATTR_INT, NULL, TRUE, "outputs" },
  { NULL }
};

static int
tdense_params (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_param_spec *out, GError **error)
{
  int64_t units = tw_attrs_get_int (a, "units", 0);
  int64_t fan_in = in[0].dims[in[0].ndim - 1];
  if (units <= 0)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR, "units must be positive");
      return -1;
    }
  out[0] = (tw_param_spec) { "weight", { TW_F32, 2, { units, fan_in } }, TW_INIT_UNIFORM_FAN_IN, fan_in, units, TRUE };
  out[1] = (tw_param_spec) { "bias", { TW_F32, 1, { units } }, TW_INIT_ZEROS, fan_in, units, TRUE };
  return 2;
}

static gboolean
tdense_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  out[0] = in[0];
  out[0].dims[in[0].ndim - 1] = tw_attrs_get_int (a, "units", 0);
  return TRUE;
}

static void
tdense_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
             tw_cost *c)
{
  c->flops = 2.0 * in[1].dims[0] * in[1].dims[1];
}

static const tw_op_def tdense = {
  .name = "tdense", .category = "Core", .attrs = tdense_attrs, .min_inputs = 1, .max_inputs = 1,
  .n_outputs = 1, .params = tdense_params, .infer = tdense_infer, .cost = tdense_cost,
};

/* "tadd": two inputs of identical shape. */
static gboolean
tadd_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  if (!tw_tinfo_equal (&in[0], &in[1]))
    {
      g_autofree char *x = tw_tinfo_to_string (&in[0]);
      g_autofree char *y = tw_tinfo_to_string (&in[1]);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE, "tadd needs equal shapes, got %s and %s", x, y);
      return FALSE;
    }
  out[0] = in[0];
  return TRUE;
}

static const tw_attr_spec no_attrs[] = { { NULL } };
static const tw_op_def tadd = {
  .name = "tadd", .category = "Math", .attrs = no_attrs, .min_inputs = 2, .max_inputs = 2,
  .n_outputs = 1, .infer = tadd_infer,
};

static tw_attrs *
units (int64_t u)
{
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, "units", u);
  return a;
}

static tw_graph *
build_ok (void)
{
  tw_graph *g = tw_graph_new ();
  tw_attrs *a16 = units (16), *a8 = units (8);
  tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]) { 4 }, "data");
  tw_graph_add (g, "d1", "tdense", a16, "x", NULL);
  tw_graph_add (g, "d2", "tdense", a16, "d1", NULL);
  tw_graph_add (g, "sum", "tadd", NULL, "d1", "d2", NULL);
  tw_graph_add (g, "out", "tdense", a8, "sum", NULL);
  tw_graph_set_outputs (g, (const char *[]) { "out", NULL });
  tw_attrs_free (a16);
  tw_attrs_free (a8);
  return g;
}

static void
test_infer_ok (void)
{
  g_autoptr (tw_graph) g = build_ok ();
  g_assert_cmpint (tw_graph_infer (g), ==, 0);
  tw_node *out = tw_graph_find (g, "out");
  g_assert_true (out->valid);
  g_assert_cmpint (out->out_info[0].ndim, ==, 2);
  g_assert_cmpint (out->out_info[0].dims[0], ==, TW_DIM_N);
  g_assert_cmpint (out->out_info[0].dims[1], ==, 8);
  /* 4*16+16 + 16*16+16 + 16*8+8 */
  g_assert_cmpint (tw_graph_param_count (g), ==, 80 + 272 + 136);
  g_autofree char *pn = tw_node_param_name (tw_graph_find (g, "d2"), 0);
  g_assert_cmpstr (pn, ==, "d2.weight");

  g_assert_cmpint (tw_graph_infer_batch (g, 32), ==, 0);
  g_assert_cmpint (tw_graph_find (g, "out")->out_info[0].dims[0], ==, 32);
}

static void
test_every_error (void)
{
  g_autoptr (tw_graph) g = build_ok ();
  tw_attrs *a5 = units (5);
  /* Error 1: unknown op.  Error 2: tadd of [N,16] and [N,5].  Error 3: a dangling
   * reference.  Nodes downstream of errors are invalid without messages. */
  tw_graph_add (g, "bad_op", "no_such_op", NULL, "x", NULL);
  tw_graph_add (g, "d5", "tdense", a5, "d1", NULL);
  tw_graph_add (g, "mismatch", "tadd", NULL, "d1", "d5", NULL);
  tw_graph_add (g, "after", "tdense", a5, "mismatch", NULL);
  tw_graph_add (g, "dangling", "tdense", a5, "nowhere", NULL);
  tw_attrs_free (a5);

  int n = tw_graph_infer (g);
  g_assert_cmpint (n, ==, 3);
  const GArray *d = tw_graph_diagnostics (g);
  g_assert_cmpstr (g_array_index (d, tw_diag, 0).node_id, ==, "bad_op");
  g_assert_nonnull (strstr (g_array_index (d, tw_diag, 0).message, "no_such_op"));
  g_assert_cmpstr (g_array_index (d, tw_diag, 1).node_id, ==, "mismatch");
  g_assert_nonnull (strstr (g_array_index (d, tw_diag, 1).message, "f32[N, 5]"));
  g_assert_cmpstr (g_array_index (d, tw_diag, 2).node_id, ==, "dangling");
  g_assert_nonnull (strstr (g_array_index (d, tw_diag, 2).message, "nowhere"));
  g_assert_false (tw_graph_find (g, "after")->valid);
  g_assert_null (tw_graph_find (g, "after")->error);
  /* The rest of the graph is still inferred. */
  g_assert_true (tw_graph_find (g, "out")->valid);

  g_autofree char *all = tw_graph_errors_to_string (g);
  g_assert_nonnull (strstr (all, "node mismatch:"));

  /* Fixing the cause clears the errors. */
  tw_graph_remove_node (g, "bad_op");
  tw_graph_remove_node (g, "dangling");
  tw_attrs *a16 = units (16);
  tw_attrs_free (tw_graph_find (g, "d5")->attrs);
  tw_graph_find (g, "d5")->attrs = a16;
  g_assert_cmpint (tw_graph_infer (g), ==, 0);
  g_assert_true (tw_graph_find (g, "after")->valid);
}

static void
test_arity_and_attrs (void)
{
  g_autoptr (tw_graph) g = tw_graph_new ();
  tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]) { 4 }, "data");
  tw_graph_add (g, "one", "tadd", NULL, "x", NULL);
  tw_graph_add (g, "noattr", "tdense", NULL, "x", NULL);
  tw_attrs *bad = tw_attrs_new ();
  tw_attrs_set_int (bad, "units", 3);
  tw_attrs_set_int (bad, "colour", 3);
  tw_graph_add (g, "unknown_attr", "tdense", bad, "x", NULL);
  tw_attrs_free (bad);
  g_assert_cmpint (tw_graph_infer (g), ==, 3);
  g_assert_nonnull (strstr (tw_graph_find (g, "one")->error, "takes 2 inputs, got 1"));
  g_assert_nonnull (strstr (tw_graph_find (g, "noattr")->error, "needs attribute 'units'"));
  g_assert_nonnull (strstr (tw_graph_find (g, "unknown_attr")->error, "colour"));
}

static void
test_cycle (void)
{
  g_autoptr (tw_graph) g = tw_graph_new ();
  tw_attrs *a = units (4);
  tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]) { 4 }, "data");
  tw_graph_add (g, "a", "tadd", NULL, "x", "b", NULL);
  tw_graph_add (g, "b", "tdense", a, "a", NULL);
  tw_attrs_free (a);
  g_autoptr (GArray) order = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_false (tw_graph_topo_order (g, &order, &error));
  g_assert_error (error, TW_GRAPH_ERROR, TW_GRAPH_ERROR_CYCLE);
  g_assert_cmpint (tw_graph_infer (g), ==, 2);
  g_assert_nonnull (tw_graph_find (g, "a")->error);
  g_assert_nonnull (tw_graph_find (g, "b")->error);
  g_assert_null (tw_graph_find (g, "x")->error);
}

static void
test_shared_params (void)
{
  g_autoptr (tw_graph) g = build_ok ();
  tw_attrs *a16 = units (16);
  tw_node *n = tw_graph_add (g, "d1b", "tdense", a16, "d1", NULL);
  tw_graph_set_share (g, n, "d2");
  g_assert_cmpint (tw_graph_infer (g), ==, 0);
  g_autofree char *pn = tw_node_param_name (n, 1);
  g_assert_cmpstr (pn, ==, "d2.bias");
  /* Shared parameters are counted once. */
  g_assert_cmpint (tw_graph_param_count (g), ==, 80 + 272 + 136);

  /* A share whose shapes do not fit is an error on the sharing node. */
  tw_node *m = tw_graph_add (g, "wrong", "tdense", a16, "x", NULL);
  tw_graph_set_share (g, m, "d2");
  g_assert_cmpint (tw_graph_infer (g), ==, 1);
  g_assert_nonnull (strstr (m->error, "d2"));
  tw_attrs_free (a16);
}

static void
test_rename_and_refs (void)
{
  g_autoptr (tw_graph) g = build_ok ();
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_graph_rename_node (g, "d1", "dense1", &error));
  g_assert_cmpstr (tw_graph_find (g, "d2")->inputs[0], ==, "dense1");
  g_assert_cmpstr (tw_graph_find (g, "sum")->inputs[0], ==, "dense1");
  g_assert_false (tw_graph_rename_node (g, "d2", "dense1", &error));
  g_assert_error (error, TW_GRAPH_ERROR, TW_GRAPH_ERROR_DUPLICATE_ID);
  g_assert_cmpint (tw_graph_infer (g), ==, 0);

  char *id = NULL;
  int k = -1;
  g_assert_true (tw_ref_parse ("split:2", &id, &k));
  g_assert_cmpstr (id, ==, "split");
  g_assert_cmpint (k, ==, 2);
  g_free (id);
  g_assert_false (tw_ref_parse ("split:x", &id, &k));
  g_assert_false (tw_ref_parse ("", &id, &k));
  /* Output index beyond the node's outputs. */
  tw_graph_add (g, "bad_port", "tadd", NULL, "sum:1", "sum", NULL);
  g_assert_cmpint (tw_graph_infer (g), ==, 1);
  g_assert_nonnull (strstr (tw_graph_find (g, "bad_port")->error, "output 1"));

  g_autoptr (tw_graph) c = tw_graph_copy (g);
  g_assert_cmpint (tw_graph_n_nodes (c), ==, tw_graph_n_nodes (g));
  g_assert_cmpint (tw_graph_infer (c), ==, 1);
}

static void
test_sequential (void)
{
  g_autoptr (tw_graph) g = tw_graph_new ();
  g_autoptr (GError) error = NULL;
  tw_attrs *a = units (7), *b = units (3);
  tw_layer layers[] = { { "l1", "tdense", a }, { "l2", "tdense", b } };
  tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]) { 4 }, "data");
  g_assert_true (tw_graph_add_sequential (g, "x", layers, 2, &error));
  g_assert_false (tw_graph_add_sequential (g, "x", layers, 1, &error));   /* duplicate id */
  tw_attrs_free (a);
  tw_attrs_free (b);
  g_assert_cmpint (tw_graph_infer (g), ==, 0);
  g_assert_cmpint (tw_graph_find (g, "l2")->out_info[0].dims[1], ==, 3);
  g_assert_cmpstr (tw_graph_find (g, "l2")->inputs[0], ==, "l1");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  tw_op_register (&tdense);
  tw_op_register (&tadd);
  g_test_add_func ("/engine/graph/infer", test_infer_ok);
  g_test_add_func ("/engine/graph/every-error", test_every_error);
  g_test_add_func ("/engine/graph/arity-attrs", test_arity_and_attrs);
  g_test_add_func ("/engine/graph/cycle", test_cycle);
  g_test_add_func ("/engine/graph/shared-params", test_shared_params);
  g_test_add_func ("/engine/graph/rename-refs", test_rename_and_refs);
  g_test_add_func ("/engine/graph/sequential", test_sequential);
  return g_test_run ();
}
