/* test-import-crafted.c — ONNX graphs built here, crafted to make import
 * work hard or size things from their values: many nodes of one name,
 * folded constants of too many dims or too many values, slices with steps
 * near ±2^63, shapes that wrap, a padded input, a deep chain exported.
 * Each imports as it should, or is refused naming the node and the reason;
 * nothing allocates what the values ask before checking it. */
#include "engine/eager.h"
#include "engine/memory.h"
#include "onnx/onnx-export.h"
#include "onnx/onnx-import.h"

#include <pthread.h>
#include <string.h>
#include <sys/resource.h>

/* ---- a small builder: everything lives in the builder's list ---------- */

typedef struct
{
  Onnx__ModelProto model;
  Onnx__OperatorSetIdProto opset;
  Onnx__OperatorSetIdProto *opsets[1];
  Onnx__GraphProto graph;
  GPtrArray *nodes, *inits, *inputs, *outputs;
  GPtrArray *owned; /* g_free'd with the builder */
} builder;

static gpointer
own (builder *b, gpointer p)
{
  g_ptr_array_add (b->owned, p);
  return p;
}

static char *
own_str (builder *b, const char *s)
{
  return own (b, g_strdup (s));
}

static void
builder_init (builder *b)
{
  memset (b, 0, sizeof *b);
  onnx__model_proto__init (&b->model);
  onnx__operator_set_id_proto__init (&b->opset);
  onnx__graph_proto__init (&b->graph);
  b->model.has_ir_version = TRUE;
  b->model.ir_version = 8;
  b->opset.domain = (char *) "";
  b->opset.has_version = TRUE;
  b->opset.version = 13;
  b->opsets[0] = &b->opset;
  b->model.n_opset_import = 1;
  b->model.opset_import = b->opsets;
  b->model.graph = &b->graph;
  b->graph.name = (char *) "crafted";
  b->nodes = g_ptr_array_new ();
  b->inits = g_ptr_array_new ();
  b->inputs = g_ptr_array_new ();
  b->outputs = g_ptr_array_new ();
  b->owned = g_ptr_array_new_with_free_func (g_free);
}

static void
builder_clear (builder *b)
{
  g_ptr_array_unref (b->nodes);
  g_ptr_array_unref (b->inits);
  g_ptr_array_unref (b->inputs);
  g_ptr_array_unref (b->outputs);
  g_ptr_array_unref (b->owned);
}

/* A float tensor value [N, dims...] (N symbolic) or of fixed dims. */
static Onnx__ValueInfoProto *
value_info (builder *b, const char *name, int elem, gboolean batch, int nd, const int64_t *dims)
{
  Onnx__ValueInfoProto *v = own (b, g_new (Onnx__ValueInfoProto, 1));
  Onnx__TypeProto *t = own (b, g_new (Onnx__TypeProto, 1));
  Onnx__TypeProto__Tensor *tt = own (b, g_new (Onnx__TypeProto__Tensor, 1));
  Onnx__TensorShapeProto *sh = own (b, g_new (Onnx__TensorShapeProto, 1));
  onnx__value_info_proto__init (v);
  onnx__type_proto__init (t);
  onnx__type_proto__tensor__init (tt);
  onnx__tensor_shape_proto__init (sh);
  int n = nd + batch;
  Onnx__TensorShapeProto__Dimension **d =
    own (b, g_new (Onnx__TensorShapeProto__Dimension *, MAX (n, 1)));
  for (int i = 0; i < n; i++)
    {
      d[i] = own (b, g_new (Onnx__TensorShapeProto__Dimension, 1));
      onnx__tensor_shape_proto__dimension__init (d[i]);
      if (batch && i == 0)
        {
          d[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
          d[i]->dim_param = (char *) "N";
        }
      else
        {
          d[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
          d[i]->dim_value = dims[i - batch];
        }
    }
  sh->n_dim = n;
  sh->dim = d;
  tt->has_elem_type = TRUE;
  tt->elem_type = elem;
  tt->shape = sh;
  t->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  t->tensor_type = tt;
  v->name = own_str (b, name);
  v->type = t;
  return v;
}

static void
add_input_of (builder *b, const char *name, int elem, int nd, const int64_t *dims)
{
  g_ptr_array_add (b->inputs, value_info (b, name, elem, TRUE, nd, dims));
}

static void
add_input (builder *b, const char *name, int nd, const int64_t *dims)
{
  add_input_of (b, name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, nd, dims);
}

static void
add_output (builder *b, const char *name)
{
  Onnx__ValueInfoProto *v = own (b, g_new (Onnx__ValueInfoProto, 1));
  onnx__value_info_proto__init (v);
  v->name = own_str (b, name);
  g_ptr_array_add (b->outputs, v);
}

/* An int64 initializer of shape dims holding values (numel of them). */
static void
add_ints (builder *b, const char *name, int nd, const int64_t *dims, const int64_t *values)
{
  Onnx__TensorProto *t = own (b, g_new (Onnx__TensorProto, 1));
  onnx__tensor_proto__init (t);
  int64_t n = 1;
  for (int i = 0; i < nd; i++)
    n *= dims[i];
  t->name = own_str (b, name);
  t->has_data_type = TRUE;
  t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
  t->n_dims = nd;
  t->dims = own (b, g_memdup2 (dims, MAX (nd, 1) * sizeof (int64_t)));
  t->n_int64_data = n;
  t->int64_data = own (b, g_memdup2 (values, MAX (n, 1) * sizeof (int64_t)));
  g_ptr_array_add (b->inits, t);
}

static Onnx__NodeProto *
add_node (builder *b, const char *op, const char *name, const char *const *in, const char *out)
{
  Onnx__NodeProto *n = own (b, g_new (Onnx__NodeProto, 1));
  onnx__node_proto__init (n);
  n->op_type = (char *) op;
  n->name = own_str (b, name);
  n->n_input = g_strv_length ((char **) in);
  n->input = own (b, g_new (char *, MAX (n->n_input, 1)));
  for (gsize i = 0; i < n->n_input; i++)
    n->input[i] = own_str (b, in[i]);
  n->n_output = 1;
  n->output = own (b, g_new (char *, 1));
  n->output[0] = own_str (b, out);
  g_ptr_array_add (b->nodes, n);
  return n;
}

static Onnx__ModelProto *
finish (builder *b)
{
  b->graph.n_node = b->nodes->len;
  b->graph.node = (Onnx__NodeProto **) b->nodes->pdata;
  b->graph.n_initializer = b->inits->len;
  b->graph.initializer = (Onnx__TensorProto **) b->inits->pdata;
  b->graph.n_input = b->inputs->len;
  b->graph.input = (Onnx__ValueInfoProto **) b->inputs->pdata;
  b->graph.n_output = b->outputs->len;
  b->graph.output = (Onnx__ValueInfoProto **) b->outputs->pdata;
  return &b->model;
}

/* Import b's model; NULL with the error's message in *msg. */
static tw_model *
import (builder *b, GHashTable **weights, char **msg)
{
  g_autoptr (GError) error = NULL;
  tw_model *m = tw_onnx_import_model (finish (b), "crafted.onnx", weights, &error);
  if (m == NULL)
    {
      g_assert_true (g_str_has_prefix (error->message, "crafted.onnx"));
      *msg = g_strdup (error->message);
    }
  return m;
}

static void
expect_refused (builder *b, const char *words)
{
  g_autofree char *msg = NULL;
  g_autoptr (tw_model) m = import (b, NULL, &msg);
  g_assert_null (m);
  g_test_message ("%s", msg);
  if (!strstr (msg, words))
    g_error ("expected \"%s\" in: %s", words, msg);
}

/* ---- many nodes of one name ------------------------------------------------ */

/* 40,000 Relu nodes all named "relu" (and one named "relu_3" first): ids
 * relu_2, relu_4, ... in order, each once.  Each node took a probe per
 * earlier one before (40,000: over 100 s). */
static void
test_same_names (void)
{
  const int n = 40000;
  builder b;
  builder_init (&b);
  add_input (&b, "x", 1, (int64_t[]){ 4 });
  add_node (&b, "Relu", "relu_3", (const char *[]){ "x", NULL }, "v_first");
  char prev[32] = "v_first";
  for (int i = 0; i < n; i++)
    {
      char out[32];
      g_snprintf (out, sizeof out, "v%d", i);
      add_node (&b, "Relu", "relu", (const char *[]){ prev, NULL }, out);
      g_strlcpy (prev, out, sizeof prev);
    }
  add_output (&b, prev);
  gint64 t0 = g_get_monotonic_time ();
  g_autofree char *msg = NULL;
  g_autoptr (tw_model) m = import (&b, NULL, &msg);
  g_assert_nonnull (m);
  g_test_message ("%d nodes named alike imported in %.2f s", n,
                  (g_get_monotonic_time () - t0) / 1e6);
  g_assert_cmpint (tw_graph_n_nodes (m->graph), ==, n + 2);
  g_assert_nonnull (tw_graph_find (m->graph, "relu_3"));
  g_assert_nonnull (tw_graph_find (m->graph, "relu"));
  g_assert_nonnull (tw_graph_find (m->graph, "relu_2"));
  g_assert_nonnull (tw_graph_find (m->graph, "relu_4"));
  g_autofree char *last = g_strdup_printf ("relu_%d", n + 1); /* 2..n+1 but 3 */
  g_assert_nonnull (tw_graph_find (m->graph, last));
  g_assert_cmpint (tw_graph_infer (m->graph), ==, 0);
  builder_clear (&b);
}

/* ---- folded constants ------------------------------------------------------ */

/* x [4] (int64) + Op (constants...) → y: the folded value feeds an Add
 * with x, as a constant node. */
static void
fold_case (builder *b, const char *op, const char *const *in)
{
  builder_init (b);
  add_input_of (b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, (int64_t[]){ 1 });
  add_node (b, op, "folded", in, "c");
  add_node (b, "Add", "add", (const char *[]){ "x", "c", NULL }, "y");
  add_output (b, "y");
}

static void
test_fold_gather (void)
{
  builder b;
  /* Indices of rank 6 on a rank-2 table: 7 dims (it wrote past its buffer). */
  fold_case (&b, "Gather", (const char *[]){ "D", "I", NULL });
  int64_t table[12] = { 0 }, idx[2] = { 0, 1 };
  add_ints (&b, "D", 2, (int64_t[]){ 3, 4 }, table);
  add_ints (&b, "I", 6, (int64_t[]){ 1, 1, 1, 1, 1, 2 }, idx);
  expect_refused (
    &b, "'folded' (Gather, opset 13): the folded Gather would have more dims than twb's tensors");
  builder_clear (&b);
  /* 65,536 indices into rows of 65,536: 2^32 values asked of a 1 MB file. */
  fold_case (&b, "Gather", (const char *[]){ "D", "I", NULL });
  g_autofree int64_t *rows = g_new0 (int64_t, 2 * 65536);
  g_autofree int64_t *many = g_new0 (int64_t, 65536);
  add_ints (&b, "D", 2, (int64_t[]){ 2, 65536 }, rows);
  add_ints (&b, "I", 1, (int64_t[]){ 65536 }, many);
  guint64 before = tw_tensor_storage_bytes ();
  expect_refused (&b,
                  "the folded Gather of shape [65536, 65536] holds more than the 16777216 values");
  g_assert_cmpuint (tw_tensor_storage_bytes (), ==, before);
  builder_clear (&b);
}

static int64_t
peak_rss_kb (void)
{
  struct rusage ru;
  getrusage (RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

/* Constants of 2^16 values each whose sum broadcasts to 2^32: evaluated in
 * full (16 GB) and then dropped; now left to the graph, whose inference
 * refuses the shapes. */
static void
test_fold_broadcast (void)
{
  builder b;
  builder_init (&b);
  add_input (&b, "x", 1, (int64_t[]){ 4 });
  g_autofree float *zeros = g_new0 (float, 65536);
  for (int k = 0; k < 2; k++)
    {
      Onnx__TensorProto *t = own (&b, g_new (Onnx__TensorProto, 1));
      onnx__tensor_proto__init (t);
      t->name = own_str (&b, k ? "B" : "A");
      t->has_data_type = TRUE;
      t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
      t->n_dims = 2;
      t->dims = own (&b, g_memdup2 (k ? (int64_t[]){ 1, 65536 } : (int64_t[]){ 65536, 1 },
                                    2 * sizeof (int64_t)));
      t->has_raw_data = TRUE;
      t->raw_data.data = (guint8 *) zeros;
      t->raw_data.len = 65536 * sizeof (float);
      g_ptr_array_add (b.inits, t);
    }
  add_node (&b, "Add", "bc", (const char *[]){ "A", "B", NULL }, "c");
  add_node (&b, "Add", "add", (const char *[]){ "x", "c", NULL }, "y");
  add_output (&b, "y");
  int64_t before = peak_rss_kb ();
  expect_refused (&b, "do not broadcast");
  g_test_message ("peak RSS %" G_GINT64_FORMAT " kB before, %" G_GINT64_FORMAT " kB after", before,
                  peak_rss_kb ());
  g_assert_cmpint (peak_rss_kb () - before, <, 1 << 20); /* under 1 GB more */
  builder_clear (&b);
}

/* Slice of [0..7] from 1 with a step of 2^63 - 1: one element (the index
 * wrapped and took 3); from -1 with a step of -2^63: one, 7. */
static void
test_fold_slice_steps (void)
{
  static const struct
  {
    int64_t start, end, step, want;
  } cases[] = {
    { 1, 8, G_MAXINT64, 1 },
    { -1, G_MININT64, G_MININT64, 7 },
    { 0, G_MAXINT64, G_MAXINT64 / 2, 0 },
    { G_MININT64, G_MAXINT64, 8, 0 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      builder b;
      fold_case (&b, "Slice", (const char *[]){ "D", "s", "e", "a", "st", NULL });
      int64_t d[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
      add_ints (&b, "D", 1, (int64_t[]){ 8 }, d);
      add_ints (&b, "s", 1, (int64_t[]){ 1 }, &cases[i].start);
      add_ints (&b, "e", 1, (int64_t[]){ 1 }, &cases[i].end);
      add_ints (&b, "a", 1, (int64_t[]){ 1 }, (int64_t[]){ 0 });
      add_ints (&b, "st", 1, (int64_t[]){ 1 }, &cases[i].step);
      g_autoptr (GHashTable) w = NULL;
      g_autofree char *msg = NULL;
      g_autoptr (tw_model) m = import (&b, &w, &msg);
      tw_tensor *c = NULL;
      if (m)
        {
          GHashTableIter it;
          gpointer key, val;
          g_hash_table_iter_init (&it, w);
          while (g_hash_table_iter_next (&it, &key, &val))
            if (g_str_has_suffix (key, ".value"))
              c = val;
        }
      g_test_message ("Slice [%" G_GINT64_FORMAT ":%" G_GINT64_FORMAT ":%" G_GINT64_FORMAT "]: %s",
                      cases[i].start, cases[i].end, cases[i].step, m ? "imported" : msg);
      g_assert_nonnull (c);
      g_assert_cmpint (tw_tensor_numel (c), ==, 1);
      g_assert_cmpfloat (tw_tensor_get_flat (c, 0), ==, (double) cases[i].want);
      builder_clear (&b);
    }
}

static void
test_fold_shapes (void)
{
  builder b;
  /* ConstantOfShape [2^40]: refused before 4 TB is asked for. */
  fold_case (&b, "ConstantOfShape", (const char *[]){ "shape", NULL });
  add_ints (&b, "shape", 1, (int64_t[]){ 1 }, (int64_t[]){ (int64_t) 1 << 40 });
  expect_refused (
    &b, "the ConstantOfShape of shape [1099511627776] holds more than the 16777216 values");
  builder_clear (&b);
  /* Of a negative dim, and of one with the batch in it (Shape of x). */
  fold_case (&b, "ConstantOfShape", (const char *[]){ "shape", NULL });
  add_ints (&b, "shape", 1, (int64_t[]){ 2 }, (int64_t[]){ -5, 2 });
  expect_refused (&b, "the ConstantOfShape would have a dim of -5");
  builder_clear (&b);
  builder_init (&b);
  add_input_of (&b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, (int64_t[]){ 1 });
  add_node (&b, "Shape", "shape_of_x", (const char *[]){ "x", NULL }, "s");
  add_node (&b, "ConstantOfShape", "folded", (const char *[]){ "s", NULL }, "c");
  add_node (&b, "Add", "add", (const char *[]){ "x", "c", NULL }, "y");
  add_output (&b, "y");
  expect_refused (&b, "the ConstantOfShape would have a dim that depends on the batch size");
  builder_clear (&b);
  /* Reshape of 2,048 values to six dims of 2,048: each within the count,
   * the product 2^66 (signed overflow: UBSan stopped it). */
  fold_case (&b, "Reshape", (const char *[]){ "D", "shape", NULL });
  g_autofree int64_t *d = g_new0 (int64_t, 2048);
  add_ints (&b, "D", 1, (int64_t[]){ 2048 }, d);
  add_ints (&b, "shape", 1, (int64_t[]){ 6 }, (int64_t[]){ 2048, 2048, 2048, 2048, 2048, 2048 });
  expect_refused (&b, "a constant of 2048 elements cannot take that shape");
  builder_clear (&b);
  fold_case (&b, "Reshape", (const char *[]){ "D", "shape", NULL });
  add_ints (&b, "D", 1, (int64_t[]){ 2048 }, d);
  add_ints (&b, "shape", 1, (int64_t[]){ 6 }, (int64_t[]){ 2048, 2048, 2048, 2048, 2048, -1 });
  expect_refused (&b, "a constant of 2048 elements cannot take that shape");
  builder_clear (&b);
}

/* ---- a padded input, trained on synthetic data --------------------------- */

/* x [N, 4] padded to [N, 2^60 + 4], then ReduceMean and a Gemm: imports
 * (the size is the model's), and every command that would run it is
 * refused before allocating (memory estimates, not a crash in the data). */
static void
test_padded_input (void)
{
  builder b;
  builder_init (&b);
  add_input (&b, "x", 1, (int64_t[]){ 4 });
  add_ints (&b, "pads", 1, (int64_t[]){ 4 }, (int64_t[]){ 0, 0, 0, (int64_t) 1 << 60 });
  add_node (&b, "Pad", "pad1", (const char *[]){ "x", "pads", NULL }, "p");
  Onnx__NodeProto *mean = add_node (&b, "ReduceMean", "mean", (const char *[]){ "p", NULL }, "r");
  Onnx__AttributeProto axes, keep, *attrs[2] = { &axes, &keep };
  onnx__attribute_proto__init (&axes);
  onnx__attribute_proto__init (&keep);
  int64_t one = 1;
  axes.name = (char *) "axes";
  axes.has_type = TRUE;
  axes.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
  axes.n_ints = 1;
  axes.ints = &one;
  keep.name = (char *) "keepdims";
  keep.has_type = TRUE;
  keep.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
  keep.has_i = TRUE;
  keep.i = 1;
  mean->n_attribute = 2;
  mean->attribute = attrs;
  add_output (&b, "r");
  g_autofree char *msg = NULL;
  g_autoptr (tw_model) m = import (&b, NULL, &msg);
  if (m == NULL)
    g_error ("%s", msg);
  g_assert_cmpint (tw_graph_infer (m->graph), ==, 0);
  g_autoptr (GError) error = NULL;
  g_assert_false (tw_graph_check_memory (m->graph, 1, FALSE, &error));
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "node pad1"));
  builder_clear (&b);
}

/* ---- a deep chain exported, on a small stack ----------------------------- */

static gpointer
export_chain (gpointer data)
{
  tw_model *m = data;
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_params) params = tw_onnx_export_params (m, NULL, &error);
  g_assert_no_error (error);
  g_autoptr (GBytes) bytes = tw_onnx_export_to_bytes (m, params, NULL, &error);
  g_assert_no_error (error);
  return GSIZE_TO_POINTER (g_bytes_get_size (bytes));
}

/* 100,000 tanh in a row exported on 1 MiB of stack (the export's walk
 * recursed per node). */
static void
test_export_deep (void)
{
  const int n = 100000;
  g_autoptr (tw_model) m = tw_model_new ("deep");
  tw_graph_add_input (m->graph, "x", TW_F32, 1, (int64_t[]){ 2 }, "data");
  g_autofree char *prev = g_strdup ("x");
  for (int i = 0; i < n; i++)
    {
      g_autofree char *id = g_strdup_printf ("t%d", i);
      tw_graph_add (m->graph, id, "tanh", NULL, prev, NULL);
      g_free (prev);
      prev = g_steal_pointer (&id);
    }
  tw_graph_set_outputs (m->graph, (const char *[]){ prev, NULL });
  g_assert_cmpint (tw_graph_infer (m->graph), ==, 0);
  pthread_attr_t attr;
  pthread_t t;
  gpointer size = NULL;
  g_assert_cmpint (pthread_attr_init (&attr), ==, 0);
  g_assert_cmpint (pthread_attr_setstacksize (&attr, (size_t) 1 << 20), ==, 0);
  g_assert_cmpint (pthread_create (&t, &attr, (void *(*) (void *) ) export_chain, m), ==, 0);
  g_assert_cmpint (pthread_join (t, &size), ==, 0);
  pthread_attr_destroy (&attr);
  g_test_message ("a chain of %d exported: %" G_GSIZE_FORMAT " bytes", n, GPOINTER_TO_SIZE (size));
  g_assert_cmpuint (GPOINTER_TO_SIZE (size), >, (gsize) n * 10);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  g_test_add_func ("/onnx/crafted/same-names", test_same_names);
  g_test_add_func ("/onnx/crafted/fold-gather", test_fold_gather);
  g_test_add_func ("/onnx/crafted/fold-broadcast", test_fold_broadcast);
  g_test_add_func ("/onnx/crafted/fold-slice-steps", test_fold_slice_steps);
  g_test_add_func ("/onnx/crafted/fold-shapes", test_fold_shapes);
  g_test_add_func ("/onnx/crafted/padded-input", test_padded_input);
  g_test_add_func ("/onnx/crafted/export-deep", test_export_deep);
  return g_test_run ();
}
