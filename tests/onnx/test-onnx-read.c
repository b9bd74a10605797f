/* test-onnx-read.c — the ONNX reader: fixtures, ONNX's own test data, crafted
 * and mutated files, tensors both ways. */
#include "onnx/onnx-read.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <sys/resource.h>

#define TESTDATA "/usr/share/libonnx-testdata/data"

static char *
fixture (const char *name)
{
  return g_build_filename (TW_ONNX_TEST_DATA, name, NULL);
}

static GBytes *
fixture_bytes (const char *name)
{
  g_autofree char *path = fixture (name);
  g_autofree char *data = NULL;
  gsize len = 0;
  g_assert_true (g_file_get_contents (path, &data, &len, NULL));
  return g_bytes_new_take (g_steal_pointer (&data), len);
}

/* An error from read_model: the reader's domain, the file named first. */
static void
assert_named_error (const GError *e, const char *filename)
{
  g_assert_nonnull (e);
  g_assert_true (e->domain == TW_ONNX_ERROR);
  g_assert_true (g_str_has_prefix (e->message, filename));
  g_assert_cmpuint (strlen (e->message), >, strlen (filename) + 2);
}

/* ---- Fixtures (tests/onnx/data, from make-fixtures.py) --------------- */

static void
test_fixture_mlp (void)
{
  g_autofree char *path = fixture ("mlp.onnx");
  g_autoptr (GError) e = NULL;
  Onnx__ModelProto *m = tw_onnx_read_model (path, &e);
  g_assert_no_error (e);
  g_assert_cmpint (m->ir_version, ==, 7);
  g_assert_cmpstr (m->producer_name, ==, "pytorch");
  g_assert_cmpint (tw_onnx_model_opset (m), ==, 13);
  const Onnx__GraphProto *g = m->graph;
  g_assert_cmpuint (g->n_node, ==, 3);
  g_assert_cmpstr (g->node[0]->op_type, ==, "Gemm");
  g_assert_cmpstr (g->node[1]->op_type, ==, "Relu");
  g_assert_cmpuint (g->n_initializer, ==, 4);
  g_assert_cmpuint (g->n_input, ==, 1);
  g_assert_cmpstr (g->input[0]->name, ==, "input");

  /* fc1.weight: torch's Linear(8, 16) keeps [out, in]; raw_data, copied as is. */
  const Onnx__TensorProto *w = NULL;
  for (size_t i = 0; i < g->n_initializer; i++)
    if (g_strcmp0 (g->initializer[i]->name, "fc1.weight") == 0)
      w = g->initializer[i];
  g_assert_nonnull (w);
  g_autoptr (tw_tensor) x = tw_onnx_tensor_to_tw (w, "initializer fc1.weight", &e);
  g_assert_no_error (e);
  g_assert_cmpint (x->dtype, ==, TW_F32);
  g_assert_cmpint (x->ndim, ==, 2);
  g_assert_cmpint (x->shape[0], ==, 16);
  g_assert_cmpint (x->shape[1], ==, 8);
  g_assert_true (w->has_raw_data);
  g_assert_cmpmem (tw_tensor_data (x), tw_tensor_nbytes (x), w->raw_data.data, w->raw_data.len);
  /* Linear's init: uniform in ±1/sqrt(in features). */
  for (int64_t i = 0; i < 128; i++)
    g_assert_cmpfloat (fabs (tw_tensor_get_flat (x, i)), <=, 1 / sqrt (8.0) + 1e-6);

  /* Gemm's attributes through the helpers. */
  int64_t trans_b = -1;
  float alpha = 0;
  g_assert_true (tw_onnx_attr_int (g->node[0], "transB", 0, &trans_b, &e));
  g_assert_cmpint (trans_b, ==, 1);
  g_assert_true (tw_onnx_attr_float (g->node[0], "alpha", 2.5f, &alpha, &e));
  g_assert_cmpfloat (alpha, ==, 1.0f);
  g_assert_true (tw_onnx_attr_float (g->node[0], "no-such", 2.5f, &alpha, &e));
  g_assert_cmpfloat (alpha, ==, 2.5f);
  g_assert_false (tw_onnx_attr_float (g->node[0], "transB", 0, &alpha, &e));
  g_assert_error (e, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED);
  g_autofree char *want = g_strdup_printf ("node '%s' (Gemm): attribute 'transB' is INT, not FLOAT",
                                           g->node[0]->name);
  g_assert_cmpstr (e->message, ==, want);
  /* An unnamed node: by its output. */
  char *name = g->node[0]->name;
  g->node[0]->name = (char *) "";
  g_clear_error (&e);
  g_assert_false (tw_onnx_attr_int (g->node[0], "alpha", 0, &trans_b, &e));
  g_autofree char *want2 = g_strdup_printf ("the node writing '%s' (Gemm): attribute 'alpha' is "
                                            "FLOAT, not INT", g->node[0]->output[0]);
  g_assert_cmpstr (e->message, ==, want2);
  g->node[0]->name = name;
  g_clear_error (&e);
  int64_t *ints = NULL;
  gsize n_ints = 9;
  g_assert_false (tw_onnx_attr_ints (g->node[0], "transB", &ints, &n_ints, &e));
  g_assert_error (e, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED);
  g_clear_error (&e);
  g_assert_true (tw_onnx_attr_ints (g->node[0], "perm", &ints, &n_ints, &e));
  g_assert_null (ints);
  g_assert_cmpuint (n_ints, ==, 0);
  onnx__model_proto__free_unpacked (m, NULL);

  g_autofree char *in_path = fixture ("mlp-input_0.pb");
  g_autofree char *out_path = fixture ("mlp-output_0.pb");
  g_autoptr (tw_tensor) in = tw_onnx_read_tensor_file (in_path, &e);
  g_assert_no_error (e);
  g_autoptr (tw_tensor) out = tw_onnx_read_tensor_file (out_path, &e);
  g_assert_no_error (e);
  g_assert_cmpint (in->ndim, ==, 2);
  g_assert_cmpint (in->shape[0], ==, 2);
  g_assert_cmpint (in->shape[1], ==, 8);
  g_assert_cmpint (out->shape[0], ==, 2);
  g_assert_cmpint (out->shape[1], ==, 4);
}

static void
test_fixture_convnet (void)
{
  g_autofree char *path = fixture ("convnet.onnx");
  g_autoptr (GError) e = NULL;
  Onnx__ModelProto *m = tw_onnx_read_model (path, &e);
  g_assert_no_error (e);
  const char *ops[] = { "Conv", "BatchNormalization", "Relu", "MaxPool", "Flatten", "Gemm" };
  g_assert_cmpuint (m->graph->n_node, ==, G_N_ELEMENTS (ops));
  for (gsize i = 0; i < G_N_ELEMENTS (ops); i++)
    g_assert_cmpstr (m->graph->node[i]->op_type, ==, ops[i]);
  int64_t *k = NULL;
  gsize nk = 0;
  g_assert_true (tw_onnx_attr_ints (m->graph->node[0], "kernel_shape", &k, &nk, &e));
  g_assert_cmpuint (nk, ==, 2);
  g_assert_cmpint (k[0], ==, 3);
  g_assert_cmpint (k[1], ==, 3);
  g_free (k);
  gsize params = 0;
  for (size_t i = 0; i < m->graph->n_initializer; i++)
    {
      g_autoptr (tw_tensor) x = tw_onnx_tensor_to_tw (m->graph->initializer[i], "initializer",
                                                      &e);
      g_assert_no_error (e);
      params += (gsize) tw_tensor_numel (x);
    }
  /* conv 4·3·3·3 + 4, bn 4 × 4, fc 5·64 + 5. */
  g_assert_cmpuint (params, ==, 108 + 4 + 16 + 320 + 5);
  onnx__model_proto__free_unpacked (m, NULL);
}

/* ---- ONNX's own test data -------------------------------------------- */

static const char *const testdata_sets[] = { "node", "simple", "pytorch-converted",
                                             "pytorch-operator" };

static void
test_testdata_models (void)
{
  if (!g_file_test (TESTDATA, G_FILE_TEST_IS_DIR))
    {
      g_test_skip ("no " TESTDATA " (Debian's libonnx-testdata)");
      return;
    }
  guint loaded = 0, refused = 0;
  guint by_code[TW_ONNX_ERROR_UNSUPPORTED + 1] = { 0 };
  for (gsize s = 0; s < G_N_ELEMENTS (testdata_sets); s++)
    {
      g_autofree char *dir_path = g_build_filename (TESTDATA, testdata_sets[s], NULL);
      g_autoptr (GDir) dir = g_dir_open (dir_path, 0, NULL);
      if (dir == NULL)
        continue;
      const char *name;
      while ((name = g_dir_read_name (dir)) != NULL)
        {
          g_autofree char *path = g_build_filename (dir_path, name, "model.onnx", NULL);
          if (!g_file_test (path, G_FILE_TEST_EXISTS))
            continue;
          g_autoptr (GError) e = NULL;
          Onnx__ModelProto *m = tw_onnx_read_model (path, &e);
          if (m != NULL)
            {
              g_assert_no_error (e);
              loaded++;
              onnx__model_proto__free_unpacked (m, NULL);
              continue;
            }
          assert_named_error (e, path);
          g_assert_cmpint (e->code, <=, TW_ONNX_ERROR_UNSUPPORTED);
          by_code[e->code]++;
          refused++;
        }
    }
  g_test_message ("libonnx-testdata models: %u loaded, %u refused (opset %u, parse %u, "
                  "tensor %u, external %u)",
                  loaded, refused, by_code[TW_ONNX_ERROR_OPSET], by_code[TW_ONNX_ERROR_PARSE],
                  by_code[TW_ONNX_ERROR_TENSOR], by_code[TW_ONNX_ERROR_EXTERNAL]);
  /* ONNX 1.12's data holds 1,072 cases and nothing in it is malformed:
   * only the opset range refuses (pytorch-* are opset 6, 246 cases in all
   * are below 11 or have no default-domain opset; 826 are in 11–17). */
  g_assert_cmpuint (loaded + refused, >=, 1000);
  g_assert_cmpuint (refused, ==, by_code[TW_ONNX_ERROR_OPSET]);
  g_assert_cmpuint (loaded, >=, 800);
}

static void
test_testdata_tensors (void)
{
  if (!g_file_test (TESTDATA, G_FILE_TEST_IS_DIR))
    {
      g_test_skip ("no " TESTDATA " (Debian's libonnx-testdata)");
      return;
    }
  guint read = 0, refused = 0, elements = 0;
  guint per_dtype[TW_N_DTYPES] = { 0 };
  g_autoptr (GHashTable) reasons = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (gsize s = 0; s < G_N_ELEMENTS (testdata_sets); s++)
    {
      g_autofree char *dir_path = g_build_filename (TESTDATA, testdata_sets[s], NULL);
      g_autoptr (GDir) dir = g_dir_open (dir_path, 0, NULL);
      if (dir == NULL)
        continue;
      const char *name;
      while ((name = g_dir_read_name (dir)) != NULL)
        {
          g_autofree char *case_path = g_build_filename (dir_path, name, NULL);
          g_autoptr (GDir) cdir = g_dir_open (case_path, 0, NULL);
          if (cdir == NULL)
            continue;
          const char *set;
          while ((set = g_dir_read_name (cdir)) != NULL)
            {
              if (!g_str_has_prefix (set, "test_data_set_"))
                continue;
              g_autofree char *set_path = g_build_filename (case_path, set, NULL);
              g_autoptr (GDir) sdir = g_dir_open (set_path, 0, NULL);
              const char *pb;
              while (sdir != NULL && (pb = g_dir_read_name (sdir)) != NULL)
                {
                  if (!g_str_has_suffix (pb, ".pb"))
                    continue;
                  g_autofree char *path = g_build_filename (set_path, pb, NULL);
                  g_autoptr (GError) e = NULL;
                  g_autoptr (tw_tensor) x = tw_onnx_read_tensor_file (path, &e);
                  if (x != NULL)
                    {
                      g_assert_no_error (e);
                      read++;
                      per_dtype[x->dtype]++;
                      elements += (guint) tw_tensor_numel (x);
                      continue;
                    }
                  assert_named_error (e, path);
                  refused++;
                  /* "…: data type STRING (8) is not supported": the reason
                   * after the last ": ". */
                  const char *why = g_strrstr (e->message, ": ");
                  g_hash_table_add (reasons, g_strdup (why != NULL ? why + 2 : e->message));
                }
            }
        }
    }
  g_autoptr (GString) why = g_string_new (NULL);
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init (&it, reasons);
  while (g_hash_table_iter_next (&it, &key, NULL))
    g_string_append_printf (why, "%s%s", why->len > 0 ? "; " : "", (const char *) key);
  g_test_message ("libonnx-testdata tensors: %u read (f32 %u, f64 %u, i32 %u, i64 %u, u8 %u; "
                  "%u elements), %u refused (%s)",
                  read, per_dtype[TW_F32], per_dtype[TW_F64], per_dtype[TW_I32],
                  per_dtype[TW_I64], per_dtype[TW_U8], elements, refused, why->str);
  /* Sequences, optionals and maps (test_sequence_*, test_optional_*) are
   * other protos in .pb files and fail to parse as a TensorProto or read
   * as an empty one; strings are refused: a few dozen of ~2,800. */
  g_assert_cmpuint (read, >=, 2500);
  g_assert_cmpuint (refused, <=, read / 20);
}

/* ---- Malformed files -------------------------------------------------- */

/* Each mutated model either loads, or is refused naming the file; every
 * initializer of one that loads converts or is refused naming itself. */
static gboolean
read_mutated (const guint8 *data, gsize len, const char *filename)
{
  g_autoptr (GError) e = NULL;
  Onnx__ModelProto *m = tw_onnx_read_model_from_data (data, len, filename, &e);
  if (m == NULL)
    {
      assert_named_error (e, filename);
      return FALSE;
    }
  g_assert_no_error (e);
  for (size_t i = 0; i < m->graph->n_initializer; i++)
    {
      g_autoptr (tw_tensor) x = tw_onnx_tensor_to_tw (m->graph->initializer[i], "initializer", &e);
      if (x == NULL)
        {
          /* read_model lets types twb lacks through for the importer. */
          g_assert_error (e, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED);
          g_assert_true (g_str_has_prefix (e->message, "initializer"));
          g_clear_error (&e);
        }
    }
  for (size_t i = 0; i < m->graph->n_node; i++)
    g_free (tw_onnx_node_label (m->graph->node[i], i));
  onnx__model_proto__free_unpacked (m, NULL);
  return TRUE;
}

static void
test_truncated (void)
{
  g_autoptr (GBytes) b = fixture_bytes ("mlp.onnx");
  gsize len;
  const guint8 *data = g_bytes_get_data (b, &len);
  guint loaded = 0, refused = 0;
  for (gsize cut = 0; cut < len; cut += 7)
    {
      /* A copy of exactly cut bytes, so ASan sees any read past the end. */
      g_autofree guint8 *copy = g_memdup2 (data, MAX (cut, 1));
      if (read_mutated (copy, cut, "mlp-truncated.onnx"))
        loaded++;
      else
        refused++;
    }
  g_test_message ("mlp.onnx (%zu bytes) truncated at every 7th byte: %u loaded, %u refused",
                  len, loaded, refused);
  /* The graph is the last field torch writes before opset_import: a cut
   * anywhere before the end loses the opset or breaks the protobuf. */
  g_assert_cmpuint (loaded, ==, 0);
  g_assert_cmpuint (refused, ==, (len + 6) / 7);
}

static void
random_edits (const char *name, guint32 seed)
{
  g_autoptr (GBytes) b = fixture_bytes (name);
  gsize len;
  const guint8 *data = g_bytes_get_data (b, &len);
  g_autoptr (GRand) r = g_rand_new_with_seed (seed);
  g_autofree char *edited = g_strdup_printf ("%s-edited", name);
  guint loaded = 0, refused = 0;
  for (int i = 0; i < 2000; i++)
    {
      g_autofree guint8 *copy = g_memdup2 (data, len);
      /* 1–4 bytes set to random values, a quarter of them to 0xff (large
       * varints: lengths and dims). */
      int edits = g_rand_int_range (r, 1, 5);
      for (int j = 0; j < edits; j++)
        {
          gsize at = (gsize) g_rand_int_range (r, 0, (gint32) len);
          copy[at] = g_rand_int_range (r, 0, 4) == 0 ? 0xff : (guint8) g_rand_int_range (r, 0, 256);
        }
      if (read_mutated (copy, len, edited))
        loaded++;
      else
        refused++;
    }
  g_test_message ("%s with 2000 random edits of 1-4 bytes: %u loaded, %u refused", name, loaded,
                  refused);
  /* Most edits land in raw_data (weights) and leave a valid model. */
  g_assert_cmpuint (loaded, >, 0);
  g_assert_cmpuint (refused, >, 0);
}

static void
test_random_edits (void)
{
  random_edits ("mlp.onnx", 11);
  /* More nodes and attributes (ints, floats) per byte. */
  random_edits ("convnet.onnx", 12);
}

/* ---- Crafted models --------------------------------------------------- */

typedef struct
{
  Onnx__ModelProto model;
  Onnx__OperatorSetIdProto opset;
  Onnx__OperatorSetIdProto *opsets[1];
  Onnx__GraphProto graph;
  Onnx__TensorProto init;
  Onnx__TensorProto *inits[1];
  int64_t dims[3];
  float values[4];
} crafted;

/* A model with one initializer 'w' (a FLOAT [2, 2] in raw_data) and no nodes. */
static void
crafted_init (crafted *c, int64_t opset)
{
  memset (c, 0, sizeof *c);
  onnx__model_proto__init (&c->model);
  onnx__operator_set_id_proto__init (&c->opset);
  onnx__graph_proto__init (&c->graph);
  onnx__tensor_proto__init (&c->init);
  c->model.has_ir_version = TRUE;
  c->model.ir_version = 8;
  c->opset.domain = (char *) "";
  c->opset.has_version = TRUE;
  c->opset.version = opset;
  c->opsets[0] = &c->opset;
  c->model.n_opset_import = 1;
  c->model.opset_import = c->opsets;
  c->model.graph = &c->graph;
  c->graph.name = (char *) "g";
  c->init.name = (char *) "w";
  c->init.has_data_type = TRUE;
  c->init.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  c->dims[0] = c->dims[1] = 2;
  c->init.n_dims = 2;
  c->init.dims = c->dims;
  c->init.has_raw_data = TRUE;
  c->init.raw_data.data = (guint8 *) c->values;
  c->init.raw_data.len = sizeof c->values;
  c->inits[0] = &c->init;
  c->graph.n_initializer = 1;
  c->graph.initializer = c->inits;
}

static GBytes *
pack_model (const Onnx__ModelProto *m)
{
  gsize len = onnx__model_proto__get_packed_size (m);
  guint8 *buf = g_malloc (MAX (len, 1));
  g_assert_cmpuint (onnx__model_proto__pack (m, buf), ==, len);
  return g_bytes_new_take (buf, len);
}

/* The error read_model_from_data gives for m, called filename. */
static GError *
crafted_error (const Onnx__ModelProto *m, const char *filename)
{
  g_autoptr (GBytes) b = pack_model (m);
  gsize len;
  const guint8 *data = g_bytes_get_data (b, &len);
  GError *e = NULL;
  Onnx__ModelProto *back = tw_onnx_read_model_from_data (data, len, filename, &e);
  if (back != NULL)
    onnx__model_proto__free_unpacked (back, NULL);
  return e;
}

static void
test_crafted_tensors (void)
{
  crafted c;
  crafted_init (&c, 13);
  g_autoptr (GError) ok = crafted_error (&c.model, "ok.onnx");
  g_assert_no_error (ok);

  /* Dims whose product is far past the element cap, with 16 bytes of data. */
  crafted_init (&c, 13);
  c.dims[0] = c.dims[1] = c.dims[2] = (int64_t) 1 << 21;
  c.init.n_dims = 3;
  g_autoptr (GError) e1 = crafted_error (&c.model, "huge.onnx");
  g_assert_error (e1, TW_ONNX_ERROR, TW_ONNX_ERROR_TENSOR);
  g_assert_cmpstr (e1->message, ==,
                   "huge.onnx: initializer 'w': dims [2097152, 2097152, 2097152] exceed "
                   "2147483648 elements");

  /* Dims that overflow int64 when multiplied. */
  crafted_init (&c, 13);
  c.dims[0] = c.dims[1] = c.dims[2] = G_MAXINT64 / 2;
  c.init.n_dims = 3;
  g_autoptr (GError) e2 = crafted_error (&c.model, "overflow.onnx");
  g_assert_error (e2, TW_ONNX_ERROR, TW_ONNX_ERROR_TENSOR);
  g_assert_nonnull (strstr (e2->message, "overflow.onnx: initializer 'w': dims ["));

  /* raw_data shorter than the dims. */
  crafted_init (&c, 13);
  c.init.raw_data.len = 12;
  g_autoptr (GError) e3 = crafted_error (&c.model, "short.onnx");
  g_assert_error (e3, TW_ONNX_ERROR, TW_ONNX_ERROR_TENSOR);
  g_assert_cmpstr (e3->message, ==,
                   "short.onnx: initializer 'w': raw_data holds 12 bytes, dims [2, 2] of FLOAT "
                   "need 16");

  /* Negative dims. */
  crafted_init (&c, 13);
  c.dims[1] = -4;
  g_autoptr (GError) e4 = crafted_error (&c.model, "negative.onnx");
  g_assert_error (e4, TW_ONNX_ERROR, TW_ONNX_ERROR_TENSOR);
  g_assert_cmpstr (e4->message, ==, "negative.onnx: initializer 'w': dim 1 is negative (-4)");

  /* Typed data of the wrong length. */
  crafted_init (&c, 13);
  c.init.has_raw_data = FALSE;
  c.init.n_float_data = 3;
  c.init.float_data = c.values;
  g_autoptr (GError) e5 = crafted_error (&c.model, "typed.onnx");
  g_assert_error (e5, TW_ONNX_ERROR, TW_ONNX_ERROR_TENSOR);
  g_assert_cmpstr (e5->message, ==,
                   "typed.onnx: initializer 'w': 3 values stored, dims [2, 2] need 4");

  /* Too many dims for a tw tensor. */
  crafted_init (&c, 13);
  int64_t seven[7] = { 1, 1, 1, 1, 1, 2, 2 };
  c.init.dims = seven;
  c.init.n_dims = 7;
  g_autoptr (GError) e6 = crafted_error (&c.model, "rank.onnx");
  g_assert_error (e6, TW_ONNX_ERROR, TW_ONNX_ERROR_TENSOR);
  g_assert_nonnull (strstr (e6->message, "rank.onnx: initializer 'w': 7 dims"));
}

static void
test_crafted_model (void)
{
  crafted c;
  crafted_init (&c, 9);
  g_autoptr (GError) e1 = crafted_error (&c.model, "old.onnx");
  g_assert_error (e1, TW_ONNX_ERROR, TW_ONNX_ERROR_OPSET);
  g_assert_cmpstr (e1->message, ==, "old.onnx: opset 9 is outside 11–17");
  crafted_init (&c, 18);
  g_autoptr (GError) e2 = crafted_error (&c.model, "new.onnx");
  g_assert_error (e2, TW_ONNX_ERROR, TW_ONNX_ERROR_OPSET);
  crafted_init (&c, 13);
  c.opset.domain = (char *) "com.microsoft";
  g_autoptr (GError) e3 = crafted_error (&c.model, "nodefault.onnx");
  g_assert_error (e3, TW_ONNX_ERROR, TW_ONNX_ERROR_OPSET);
  g_assert_nonnull (strstr (e3->message, "nodefault.onnx: no opset for the default"));
  crafted_init (&c, 13);
  c.opset.domain = (char *) "ai.onnx";
  g_autoptr (GError) ok = crafted_error (&c.model, "aionnx.onnx");
  g_assert_no_error (ok);

  crafted_init (&c, 13);
  c.model.graph = NULL;
  g_autoptr (GError) e4 = crafted_error (&c.model, "nograph.onnx");
  g_assert_error (e4, TW_ONNX_ERROR, TW_ONNX_ERROR_PARSE);
  g_assert_cmpstr (e4->message, ==, "nograph.onnx: the model has no graph");

  g_autoptr (GError) e5 = NULL;
  g_assert_null (tw_onnx_read_model_from_data ((const guint8 *) "", 0, "empty.onnx", &e5));
  g_assert_error (e5, TW_ONNX_ERROR, TW_ONNX_ERROR_PARSE);
  g_assert_cmpstr (e5->message, ==, "empty.onnx: empty file");
  const char junk[] = "{\"nodes\": []} this is JSON, not a protobuf";
  g_autoptr (GError) e6 = NULL;
  g_assert_null (tw_onnx_read_model_from_data ((const guint8 *) junk, sizeof junk, "junk.onnx",
                                               &e6));
  g_assert_error (e6, TW_ONNX_ERROR, TW_ONNX_ERROR_PARSE);
  g_assert_true (g_str_has_prefix (e6->message, "junk.onnx: not an ONNX model"));

  g_autoptr (GError) e7 = NULL;
  g_assert_null (tw_onnx_read_model ("/nonexistent/model.onnx", &e7));
  g_assert_error (e7, TW_ONNX_ERROR, TW_ONNX_ERROR_READ);
  g_assert_true (g_str_has_prefix (e7->message, "/nonexistent/model.onnx: "));
  g_autoptr (GError) e8 = NULL;
  g_assert_null (tw_onnx_read_model (TW_ONNX_TEST_DATA, &e8));
  g_assert_error (e8, TW_ONNX_ERROR, TW_ONNX_ERROR_READ);
  g_assert_null (tw_onnx_read_tensor_file ("/nonexistent/input_0.pb", NULL));

  /* Empty files, as files. */
  g_autofree char *dir = g_dir_make_tmp ("twb-onnx-XXXXXX", NULL);
  g_autofree char *empty = g_build_filename (dir, "empty.onnx", NULL);
  g_assert_true (g_file_set_contents (empty, "", 0, NULL));
  g_autoptr (GError) e9 = NULL;
  g_assert_null (tw_onnx_read_model (empty, &e9));
  g_autofree char *want9 = g_strdup_printf ("%s: empty file", empty);
  g_assert_error (e9, TW_ONNX_ERROR, TW_ONNX_ERROR_PARSE);
  g_assert_cmpstr (e9->message, ==, want9);
  g_autoptr (GError) e10 = NULL;
  g_assert_null (tw_onnx_read_tensor_file (empty, &e10));
  g_assert_error (e10, TW_ONNX_ERROR, TW_ONNX_ERROR_PARSE);
  g_assert_cmpstr (e10->message, ==, want9);
  g_assert_cmpint (g_remove (empty), ==, 0);
  g_assert_cmpint (g_rmdir (dir), ==, 0);
}

static void
test_crafted_external (void)
{
  g_autofree char *dir = g_dir_make_tmp ("twb-onnx-XXXXXX", NULL);
  g_assert_nonnull (dir);
  g_autofree char *path = g_build_filename (dir, "ext.onnx", NULL);
  g_autofree char *present = g_build_filename (dir, "present.bin", NULL);
  g_assert_true (g_file_set_contents (present, "0123456789abcdef", 16, NULL));

  crafted c;
  crafted_init (&c, 13);
  /* Two external tensors: 'w' → a missing file, and a Constant's value →
   * a file that is there (still refused: twb reads no external data). */
  Onnx__StringStringEntryProto loc = ONNX__STRING_STRING_ENTRY_PROTO__INIT;
  loc.key = (char *) "location";
  loc.value = (char *) "missing-weights.bin";
  Onnx__StringStringEntryProto *locs[] = { &loc };
  c.init.has_raw_data = FALSE;
  c.init.has_data_location = TRUE;
  c.init.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  c.init.n_external_data = 1;
  c.init.external_data = locs;

  Onnx__TensorProto value = ONNX__TENSOR_PROTO__INIT;
  Onnx__StringStringEntryProto loc2 = ONNX__STRING_STRING_ENTRY_PROTO__INIT;
  loc2.key = (char *) "location";
  loc2.value = (char *) "present.bin";
  Onnx__StringStringEntryProto *locs2[] = { &loc2 };
  value.has_data_type = TRUE;
  value.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  value.n_external_data = 1;
  value.external_data = locs2;
  Onnx__AttributeProto attr = ONNX__ATTRIBUTE_PROTO__INIT;
  attr.name = (char *) "value";
  attr.has_type = TRUE;
  attr.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
  attr.t = &value;
  Onnx__AttributeProto *attrs[] = { &attr };
  Onnx__NodeProto node = ONNX__NODE_PROTO__INIT;
  node.name = (char *) "const0";
  node.op_type = (char *) "Constant";
  node.n_attribute = 1;
  node.attribute = attrs;
  Onnx__NodeProto *nodes[] = { &node };
  c.graph.n_node = 1;
  c.graph.node = nodes;

  /* Locations outside the model's folder are named by their text alone:
   * whether they exist is never looked at (an existing file outside, and
   * one through a subfolder, read the same as a missing one). */
  g_autofree char *outside_abs = g_strdup (present);
  const char *outside[] = { outside_abs, "../present.bin", "sub/present.bin", "..", "" };
  for (guint i = 0; i < G_N_ELEMENTS (outside); i++)
    {
      loc.value = (char *) outside[i];
      g_autoptr (GBytes) ob = pack_model (&c.model);
      g_autoptr (GError) oe = NULL;
      g_assert_null (tw_onnx_read_model_from_data (g_bytes_get_data (ob, NULL),
                                                   g_bytes_get_size (ob), path, &oe));
      g_autofree char *line = g_strdup_printf ("initializer 'w' ('%s', outside the model's folder)",
                                               outside[i]);
      g_assert_nonnull (strstr (oe->message, line));
    }
  loc.value = (char *) "missing-weights.bin";

  g_autoptr (GBytes) b = pack_model (&c.model);
  g_assert_true (g_file_set_contents (path, g_bytes_get_data (b, NULL),
                                      (gssize) g_bytes_get_size (b), NULL));
  g_autoptr (GError) e = NULL;
  g_assert_null (tw_onnx_read_model (path, &e));
  g_assert_error (e, TW_ONNX_ERROR, TW_ONNX_ERROR_EXTERNAL);
  g_autofree char *want = g_strdup_printf (
    "%s: 2 tensors keep their data in external files, which twb does not read (save the "
    "model with its weights inside the .onnx file):\n"
    "  initializer 'w' ('missing-weights.bin', missing)\n"
    "  node 'const0' (Constant): attribute 'value' ('present.bin')",
    path);
  g_assert_cmpstr (e->message, ==, want);

  /* The tensor alone is refused too. */
  g_autoptr (GError) e2 = NULL;
  g_assert_null (tw_onnx_tensor_to_tw (&c.init, "initializer w", &e2));
  g_assert_error (e2, TW_ONNX_ERROR, TW_ONNX_ERROR_EXTERNAL);
  g_assert_nonnull (strstr (e2->message, "initializer w: data is in an external file "
                                         "('missing-weights.bin')"));
  g_assert_cmpint (g_remove (path), ==, 0);
  g_assert_cmpint (g_remove (present), ==, 0);
  g_assert_cmpint (g_rmdir (dir), ==, 0);
}

/* A bad Constant inside the then-branch of depth nested Ifs. */
static void
test_crafted_subgraphs (void)
{
  enum { N = TW_ONNX_MAX_DEPTH + 3 };
  Onnx__GraphProto graphs[N];
  Onnx__NodeProto ifs[N];
  Onnx__NodeProto *if_ptrs[N];
  Onnx__AttributeProto then_attrs[N];
  Onnx__AttributeProto *then_ptrs[N];
  char names[N][16];

  for (int depth = 1; depth <= TW_ONNX_MAX_DEPTH + 1; depth++)
    {
      crafted c;
      crafted_init (&c, 13);
      /* graphs[0] is the main graph's If; graphs[i] is the body at depth i. */
      for (int i = 0; i < depth; i++)
        {
          onnx__node_proto__init (&ifs[i]);
          onnx__attribute_proto__init (&then_attrs[i]);
          onnx__graph_proto__init (&graphs[i]);
          g_snprintf (names[i], sizeof names[i], "if%d", i);
          ifs[i].name = names[i];
          ifs[i].op_type = (char *) "If";
          then_attrs[i].name = (char *) "then_branch";
          then_attrs[i].has_type = TRUE;
          then_attrs[i].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
          then_attrs[i].g = &graphs[i];
          then_ptrs[i] = &then_attrs[i];
          ifs[i].n_attribute = 1;
          ifs[i].attribute = &then_ptrs[i];
          if_ptrs[i] = &ifs[i];
        }
      c.graph.n_node = 1;
      c.graph.node = &if_ptrs[0];
      for (int i = 0; i + 1 < depth; i++)
        {
          graphs[i].n_node = 1;
          graphs[i].node = &if_ptrs[i + 1];
        }
      /* The innermost body: a Constant whose value lacks data. */
      Onnx__TensorProto bad = ONNX__TENSOR_PROTO__INIT;
      int64_t dims[] = { 3 };
      bad.has_data_type = TRUE;
      bad.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
      bad.n_dims = 1;
      bad.dims = dims;
      Onnx__AttributeProto value = ONNX__ATTRIBUTE_PROTO__INIT;
      value.name = (char *) "value";
      value.has_type = TRUE;
      value.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
      value.t = &bad;
      Onnx__AttributeProto *vp[] = { &value };
      Onnx__NodeProto konst = ONNX__NODE_PROTO__INIT;
      konst.op_type = (char *) "Constant";
      konst.n_attribute = 1;
      konst.attribute = vp;
      Onnx__NodeProto *kp[] = { &konst };
      graphs[depth - 1].n_node = 1;
      graphs[depth - 1].node = kp;

      g_autoptr (GError) e = crafted_error (&c.model, "nested.onnx");
      g_assert_nonnull (e);
      g_assert_true (g_str_has_prefix (e->message, "nested.onnx: node 'if0' (If): attribute "
                                                   "'then_branch': "));
      if (depth <= TW_ONNX_MAX_DEPTH)
        {
          /* Found inside: named by its path. */
          g_assert_error (e, TW_ONNX_ERROR, TW_ONNX_ERROR_TENSOR);
          g_autofree char *inner = g_strdup_printf (
            "node 'if%d' (If): attribute 'then_branch': node 'Constant #0' (Constant): attribute "
            "'value': 0 values stored, dims [3] need 3",
            depth - 1);
          g_assert_true (g_str_has_suffix (e->message, inner));
        }
      else
        {
          g_assert_error (e, TW_ONNX_ERROR, TW_ONNX_ERROR_PARSE);
          g_autofree char *inner = g_strdup_printf ("node 'if%d' (If): attribute 'then_branch': "
                                                    "subgraphs nested deeper than %d",
                                                    TW_ONNX_MAX_DEPTH, TW_ONNX_MAX_DEPTH);
          g_assert_true (g_str_has_suffix (e->message, inner));
        }
    }
}

static int
varint_size (guint64 v)
{
  int n = 1;
  while (v >= 0x80)
    {
      v >>= 7;
      n++;
    }
  return n;
}

static void
append_tag_len (GByteArray *b, guint8 tag, guint64 len)
{
  g_byte_array_append (b, &tag, 1);
  do
    {
      guint8 byte = (guint8) (len & 0x7f);
      len >>= 7;
      if (len != 0)
        byte |= 0x80;
      g_byte_array_append (b, &byte, 1);
    }
  while (len != 0);
}
/* A model whose graph nests levels subgraphs (node → attribute g → graph),
 * written straight as protobuf wire bytes: protobuf-c itself would recurse
 * to build it. */
static GByteArray *
deep_model (int levels)
{
  /* Each level's three lengths, innermost first. */
  g_autofree guint64 *lens = g_new (guint64, 3 * (gsize) levels + 1);
  guint64 g_len = 0;
  for (int i = 0; i < levels; i++)
    {
      guint64 attr_len = 1 + (guint64) varint_size (g_len) + g_len;
      guint64 node_len = 1 + (guint64) varint_size (attr_len) + attr_len;
      lens[3 * i] = g_len;
      lens[3 * i + 1] = attr_len;
      lens[3 * i + 2] = node_len;
      g_len = 1 + (guint64) varint_size (node_len) + node_len;
    }
  GByteArray *b = g_byte_array_new ();
  const guint8 ir[] = { 0x08, 0x08 };          /* ir_version 8 */
  g_byte_array_append (b, ir, 2);
  append_tag_len (b, 0x3a, g_len);              /* graph (7) */
  for (int i = levels - 1; i >= 0; i--)
    {
      append_tag_len (b, 0x0a, lens[3 * i + 2]); /* GraphProto.node (1) */
      append_tag_len (b, 0x2a, lens[3 * i + 1]); /* NodeProto.attribute (5) */
      append_tag_len (b, 0x32, lens[3 * i]);     /* AttributeProto.g (6) */
    }
  const guint8 opset[] = { 0x42, 0x02, 0x10, 0x0d };  /* opset_import (8): version 13 */
  g_byte_array_append (b, opset, sizeof opset);
  return b;
}

static void
test_crafted_deep (void)
{
  /* 20 levels (61 messages deep, within the wire limit of 64): protobuf-c
   * builds it, the reader's walk stops at 8. */
  g_autoptr (GByteArray) b30 = deep_model (20);
  g_autoptr (GError) e = NULL;
  g_assert_null (tw_onnx_read_model_from_data (b30->data, b30->len, "deep30.onnx", &e));
  g_assert_error (e, TW_ONNX_ERROR, TW_ONNX_ERROR_PARSE);
  g_assert_true (g_str_has_prefix (e->message, "deep30.onnx: node 'node #0' (?): attribute '?': "));
  g_autofree char *want = g_strdup_printf ("subgraphs nested deeper than %d", TW_ONNX_MAX_DEPTH);
  g_assert_true (g_str_has_suffix (e->message, want));
  g_clear_error (&e);

  /* 100,000 levels (1.2 MB): protobuf-c's recursive unpack would overflow
   * the stack; refused before it runs. */
  g_autoptr (GByteArray) big = deep_model (100000);
  g_assert_null (tw_onnx_read_model_from_data (big->data, big->len, "deep.onnx", &e));
  g_assert_error (e, TW_ONNX_ERROR, TW_ONNX_ERROR_PARSE);
  g_assert_cmpstr (e->message, ==,
                   "deep.onnx: protobuf messages nested deeper than 64 (subgraphs inside "
                   "subgraphs?)");
}

/* A model of one graph holding `count` copies of the two wire bytes
 * `field` 00 (an empty message) inside a node (attributes) or the graph
 * itself (initializers): 2 bytes each on the wire, a few hundred unpacked. */
static GByteArray *
empty_messages_model (guint8 field_tag, gboolean in_node, guint count)
{
  guint64 inner = 2 * (guint64) count;
  GByteArray *b = g_byte_array_new ();
  const guint8 ir[] = { 0x08, 0x08 };
  g_byte_array_append (b, ir, 2);
  guint64 graph_len = in_node ? 1 + varint_size (inner) + inner : inner;
  append_tag_len (b, 0x3a, graph_len);            /* ModelProto.graph (7) */
  if (in_node)
    append_tag_len (b, 0x0a, inner);              /* GraphProto.node (1) */
  for (guint i = 0; i < count; i++)
    append_tag_len (b, field_tag, 0);
  const guint8 opset[] = { 0x42, 0x02, 0x10, 0x0d };
  g_byte_array_append (b, opset, sizeof opset);
  return b;
}

/* The bound on the amplification cases' peak RSS: the budget (80 MiB) and
 * the test's own files; under AddressSanitizer its quarantine keeps up to
 * 256 MiB of freed memory resident too.  Without the budget: 4 GB. */
#if defined(__SANITIZE_ADDRESS__)
#define PEAK_RSS_BOUND_MIB 600
#else
#define PEAK_RSS_BOUND_MIB 200
#endif

/* Peak RSS of this process in MiB (Linux reports KiB). */
static double
peak_rss_mib (void)
{
  struct rusage ru;
  getrusage (RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;
}

/* 1,000,000 empty attributes of one node (2 MB) and as many empty
 * initializers: protobuf-c would build some 300 MB of structs (150x; the
 * 28 MB file of the report peaked at 4.09 GB).  Refused within the budget
 * (64 MiB + 8x the file), in a child whose peak RSS is checked; 100,000
 * of them (within it) still read. */
static void
test_crafted_amplification (void)
{
  const struct { guint8 tag; gboolean in_node; const char *what; } cases[] = {
    { 0x2a, TRUE, "attributes" },     /* NodeProto.attribute (5) */
    { 0x2a, FALSE, "initializers" },  /* GraphProto.initializer (5) */
  };
  if (g_test_subprocess ())
    {
      for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
        {
          g_autoptr (GByteArray) b = empty_messages_model (cases[i].tag, cases[i].in_node, 1000000);
          g_autoptr (GError) e = NULL;
          g_assert_null (tw_onnx_read_model_from_data (b->data, b->len, "amp.onnx", &e));
          g_assert_error (e, TW_ONNX_ERROR, TW_ONNX_ERROR_PARSE);
          g_assert_true (g_str_has_prefix (e->message, "amp.onnx: its 2.00 MB unpack into more "
                                                      "than 83.1 MB of protobuf messages"));
        }
      /* 3,000,000 empty unknown fields (99) of the model: 3 bytes each on
       * the wire, kept by protobuf-c in a list the wire walk does not
       * count: refused by the unpack's own budget. */
      g_autoptr (GByteArray) unk = g_byte_array_new ();
      const guint8 head[] = { 0x08, 0x08, 0x3a, 0x00, 0x42, 0x02, 0x10, 0x0d };
      g_byte_array_append (unk, head, sizeof head);
      const guint8 field99[] = { 0x9a, 0x06, 0x00 };
      for (int i = 0; i < 3000000; i++)
        g_byte_array_append (unk, field99, sizeof field99);
      g_autoptr (GError) e = NULL;
      g_assert_null (tw_onnx_read_model_from_data (unk->data, unk->len, "unknown.onnx", &e));
      g_assert_nonnull (strstr (e->message, "unknown.onnx: its 9.00 MB unpack into more than"));
      g_print ("peak %.0f MiB\n", peak_rss_mib ());
      g_assert_cmpfloat (peak_rss_mib (), <, PEAK_RSS_BOUND_MIB);
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDERR);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stdout ("peak * MiB*");

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr (GByteArray) b = empty_messages_model (cases[i].tag, cases[i].in_node, 100000);
      g_autoptr (GError) e = NULL;
      Onnx__ModelProto *m = tw_onnx_read_model_from_data (b->data, b->len, "fits.onnx", &e);
      g_assert_no_error (e);
      /* (Initializers of no type are the importer's to refuse.) */
      g_assert_cmpuint (cases[i].in_node ? m->graph->node[0]->n_attribute
                                         : m->graph->n_initializer, ==, 100000);
      onnx__model_proto__free_unpacked (m, NULL);
    }
}

/* A string field that is not UTF-8 (an overlong NUL): the name would go
 * into the imported model file and onnx-info --json as it is. */
static void
test_crafted_utf8 (void)
{
  crafted c;
  crafted_init (&c, 13);
  c.init.name = (char *) "w\xc0\x80";
  g_autoptr (GError) e = crafted_error (&c.model, "utf8.onnx");
  g_assert_error (e, TW_ONNX_ERROR, TW_ONNX_ERROR_PARSE);
  g_assert_cmpstr (e->message, ==, "utf8.onnx: a string (TensorProto.name) is not valid UTF-8 text");
  crafted_init (&c, 13);
  c.graph.name = (char *) "caf\xc3\xa9";
  g_autoptr (GError) ok = crafted_error (&c.model, "ok.onnx");
  g_assert_no_error (ok);
}

/* Values defined twice (onnx.checker: not SSA): two nodes writing one
 * output, an output named as a graph input or an initializer, two graph
 * inputs of one name (with different types or the same), two initializers
 * of one name.  An initializer listed as an input too (its default) is
 * fine. */
static void
test_crafted_ssa (void)
{
  Onnx__TypeProto__Tensor tt[2];
  Onnx__TypeProto types[2];
  Onnx__ValueInfoProto in[3];
  Onnx__ValueInfoProto *ins[3] = { &in[0], &in[1], &in[2] };
  for (int i = 0; i < 2; i++)
    {
      onnx__type_proto__tensor__init (&tt[i]);
      tt[i].has_elem_type = TRUE;
      tt[i].elem_type = i == 0 ? ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
                               : ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
      onnx__type_proto__init (&types[i]);
      types[i].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
      types[i].tensor_type = &tt[i];
    }
  for (int i = 0; i < 3; i++)
    {
      onnx__value_info_proto__init (&in[i]);
      in[i].name = (char *) "x";
      in[i].type = &types[0];
    }
  Onnx__NodeProto nodes[2];
  Onnx__NodeProto *node_ptrs[2] = { &nodes[0], &nodes[1] };
  char *x_in[] = { (char *) "x" };
  char *y_out[] = { (char *) "y" };
  char *w_out[] = { (char *) "w" };
  for (int i = 0; i < 2; i++)
    {
      onnx__node_proto__init (&nodes[i]);
      nodes[i].name = (char *) (i == 0 ? "relu_a" : "relu_b");
      nodes[i].op_type = (char *) "Relu";
      nodes[i].n_input = 1;
      nodes[i].input = x_in;
      nodes[i].n_output = 1;
      nodes[i].output = y_out;
    }
  crafted c;
  const struct { int n_in; gboolean second_type; int n_nodes; gboolean node_writes_w;
                 gboolean two_inits; const char *want; } cases[] = {
    { 1, FALSE, 2, FALSE, FALSE, "ssa.onnx: value 'y' is defined twice, by node 'relu_a' (Relu) "
      "and by node 'relu_b' (Relu): an ONNX graph defines each value once" },
    { 1, FALSE, 1, TRUE, FALSE, "ssa.onnx: value 'w' is defined twice, by an initializer and by "
      "node 'relu_a' (Relu)" },
    { 2, TRUE, 1, FALSE, FALSE, "ssa.onnx: graph input 'x' is declared twice (with different "
      "types): an ONNX graph defines each value once" },
    { 2, FALSE, 1, FALSE, FALSE, "ssa.onnx: graph input 'x' is declared twice (with the same types)" },
    { 1, FALSE, 1, FALSE, TRUE, "ssa.onnx: initializer 'w' is given twice" },
    { 1, FALSE, 1, FALSE, FALSE, NULL },
  };
  for (guint k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      crafted_init (&c, 13);
      in[1].type = cases[k].second_type ? &types[1] : &types[0];
      c.graph.n_input = cases[k].n_in;
      c.graph.input = ins;
      c.graph.n_node = cases[k].n_nodes;
      c.graph.node = node_ptrs;
      nodes[0].output = cases[k].node_writes_w ? w_out : y_out;
      Onnx__TensorProto *two[] = { &c.init, &c.init };
      if (cases[k].two_inits)
        {
          c.graph.n_initializer = 2;
          c.graph.initializer = two;
        }
      g_autoptr (GError) e = crafted_error (&c.model, "ssa.onnx");
      if (cases[k].want == NULL)
        g_assert_no_error (e);
      else
        {
          g_assert_error (e, TW_ONNX_ERROR, TW_ONNX_ERROR_PARSE);
          g_assert_true (g_str_has_prefix (e->message, cases[k].want));
        }
    }
  /* The initializer 'w' listed as a graph input too: its default value. */
  crafted_init (&c, 13);
  in[2].name = (char *) "w";
  in[2].type = &types[0];
  Onnx__ValueInfoProto *w_in[] = { &in[2] };
  c.graph.n_input = 1;
  c.graph.input = w_in;
  g_autoptr (GError) e = crafted_error (&c.model, "default.onnx");
  g_assert_no_error (e);
}

/* ---- Tensors both ways ------------------------------------------------ */

static void
test_round_trip (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (7);
  const int64_t shapes[][3] = { { 3, 5, 2 }, { 0, 4, 1 }, { 7, 1, 1 } };
  const int ndims[] = { 3, 2, 1 };
  for (int dt = 0; dt < TW_N_DTYPES; dt++)
    for (gsize s = 0; s <= G_N_ELEMENTS (shapes); s++)
      {
        /* s == G_N_ELEMENTS (shapes): a 0-d tensor. */
        int nd = s < G_N_ELEMENTS (shapes) ? ndims[s] : 0;
        g_autoptr (tw_tensor) x = tw_tensor_new ((tw_dtype) dt, nd, nd > 0 ? shapes[s] : NULL);
        guint8 *p = tw_tensor_data (x);
        /* Random bytes: every bit pattern (NaNs of every payload too). */
        for (size_t i = 0; i < tw_tensor_nbytes (x); i++)
          p[i] = (guint8) g_rand_int_range (r, 0, 256);
        Onnx__TensorProto *t = tw_onnx_tensor_from_tw (x, "x");
        gsize len = onnx__tensor_proto__get_packed_size (t);
        g_autofree guint8 *buf = g_malloc (MAX (len, 1));
        g_assert_cmpuint (onnx__tensor_proto__pack (t, buf), ==, len);
        tw_onnx_tensor_proto_free (t);
        Onnx__TensorProto *back = onnx__tensor_proto__unpack (NULL, len, buf);
        g_assert_nonnull (back);
        g_assert_cmpstr (back->name, ==, "x");
        g_autoptr (GError) e = NULL;
        g_autoptr (tw_tensor) y = tw_onnx_tensor_to_tw (back, "x", &e);
        g_assert_no_error (e);
        onnx__tensor_proto__free_unpacked (back, NULL);
        g_assert_cmpint (y->dtype, ==, dt);
        g_assert_cmpint (y->ndim, ==, nd);
        for (int d = 0; d < nd; d++)
          g_assert_cmpint (y->shape[d], ==, x->shape[d]);
        g_assert_cmpmem (tw_tensor_data (y), tw_tensor_nbytes (y), p, tw_tensor_nbytes (x));
      }

  /* A non-contiguous view goes out in logical order. */
  g_autoptr (tw_tensor) m = tw_tensor_new (TW_F32, 2, (int64_t[]) { 2, 3 });
  for (int i = 0; i < 6; i++)
    tw_tensor_f32 (m)[i] = (float) i;
  g_autoptr (tw_tensor) mt = tw_tensor_transpose (m, 0, 1);
  Onnx__TensorProto *t = tw_onnx_tensor_from_tw (mt, "mt");
  g_autoptr (tw_tensor) back = tw_onnx_tensor_to_tw (t, "mt", NULL);
  tw_onnx_tensor_proto_free (t);
  const float want[] = { 0, 3, 1, 4, 2, 5 };
  g_assert_cmpint (back->shape[0], ==, 3);
  g_assert_cmpmem (tw_tensor_data (back), 24, want, 24);
}

/* Every type the header lists, from the typed fields and from raw_data. */
static void
test_dtypes (void)
{
  struct
  {
    int32_t onnx;
    tw_dtype tw;
    int32_t typed[3];     /* int32_data */
    guint8 raw[12];
    gsize raw_len;
    double want[3];
  } cases[] = {
    { ONNX__TENSOR_PROTO__DATA_TYPE__INT8, TW_I32, { -128, 5, 127 }, { 0x80, 5, 0x7f }, 3,
      { -128, 5, 127 } },
    { ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, TW_U8, { 0, 200, 255 }, { 0, 200, 255 }, 3,
      { 0, 200, 255 } },
    { ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, TW_U8, { 0, 1, 1 }, { 0, 1, 1 }, 3, { 0, 1, 1 } },
    { ONNX__TENSOR_PROTO__DATA_TYPE__INT16, TW_I32, { -32768, -2, 300 },
      { 0x00, 0x80, 0xfe, 0xff, 0x2c, 0x01 }, 6, { -32768, -2, 300 } },
    { ONNX__TENSOR_PROTO__DATA_TYPE__UINT16, TW_I32, { 65535, 2, 300 },
      { 0xff, 0xff, 2, 0, 0x2c, 0x01 }, 6, { 65535, 2, 300 } },
    { ONNX__TENSOR_PROTO__DATA_TYPE__INT32, TW_I32, { G_MININT32, -1, G_MAXINT32 },
      { 0, 0, 0, 0x80, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f }, 12,
      { G_MININT32, -1, G_MAXINT32 } },
    /* 1.0, -2.0 and the smallest subnormal (2^-24). */
    { ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16, TW_F32, { 0x3c00, 0xc000, 0x0001 },
      { 0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00 }, 6, { 1.0, -2.0, 5.9604644775390625e-8 } },
    /* 1.0, -2.0, 0.15625. */
    { ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16, TW_F32, { 0x3f80, 0xc000, 0x3e20 },
      { 0x80, 0x3f, 0x00, 0xc0, 0x20, 0x3e }, 6, { 1.0, -2.0, 0.15625 } },
  };
  int64_t dims[] = { 3 };
  for (gsize c = 0; c < G_N_ELEMENTS (cases); c++)
    for (int raw = 0; raw < 2; raw++)
      {
        Onnx__TensorProto t = ONNX__TENSOR_PROTO__INIT;
        t.has_data_type = TRUE;
        t.data_type = cases[c].onnx;
        t.n_dims = 1;
        t.dims = dims;
        if (raw)
          {
            t.has_raw_data = TRUE;
            t.raw_data.data = cases[c].raw;
            t.raw_data.len = cases[c].raw_len;
          }
        else
          {
            t.n_int32_data = 3;
            t.int32_data = cases[c].typed;
          }
        g_autoptr (GError) e = NULL;
        g_autoptr (tw_tensor) x = tw_onnx_tensor_to_tw (&t, "t", &e);
        g_assert_no_error (e);
        g_assert_cmpint (x->dtype, ==, cases[c].tw);
        for (int i = 0; i < 3; i++)
          g_assert_cmpfloat (tw_tensor_get_flat (x, i), ==, cases[c].want[i]);

        /* One byte short of raw_data, one value short of the typed field. */
        if (raw)
          t.raw_data.len--;
        else
          t.n_int32_data--;
        g_autoptr (tw_tensor) bad = tw_onnx_tensor_to_tw (&t, "input 'x'", &e);
        g_assert_null (bad);
        g_assert_error (e, TW_ONNX_ERROR, TW_ONNX_ERROR_TENSOR);
        g_assert_true (g_str_has_prefix (e->message, "input 'x': "));
        g_assert_nonnull (strstr (e->message, raw ? " bytes, dims [3] of " : " need 3"));
      }

  /* The other typed fields. */
  int64_t dims2[] = { 2 };
  Onnx__TensorProto t = ONNX__TENSOR_PROTO__INIT;
  t.has_data_type = TRUE;
  t.n_dims = 1;
  t.dims = dims2;
  float f[] = { 1.5f, -0.25f };
  double d[] = { 1e300, -3.0 };
  int64_t i64[] = { G_MININT64, 42 };
  uint64_t u64[] = { G_MAXUINT32, 7 };
  t.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  t.n_float_data = 2;
  t.float_data = f;
  g_autoptr (tw_tensor) xf = tw_onnx_tensor_to_tw (&t, "f", NULL);
  g_assert_cmpmem (tw_tensor_data (xf), 8, f, 8);
  t.n_float_data = 0;
  t.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE;
  t.n_double_data = 2;
  t.double_data = d;
  g_autoptr (tw_tensor) xd = tw_onnx_tensor_to_tw (&t, "d", NULL);
  g_assert_cmpint (xd->dtype, ==, TW_F64);
  g_assert_cmpmem (tw_tensor_data (xd), 16, d, 16);
  t.n_double_data = 0;
  t.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
  t.n_int64_data = 2;
  t.int64_data = i64;
  g_autoptr (tw_tensor) xi = tw_onnx_tensor_to_tw (&t, "i", NULL);
  g_assert_cmpint (xi->dtype, ==, TW_I64);
  g_assert_cmpmem (tw_tensor_data (xi), 16, i64, 16);
  t.n_int64_data = 0;
  t.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__UINT32;
  t.n_uint64_data = 2;
  t.uint64_data = u64;
  g_autoptr (tw_tensor) xu = tw_onnx_tensor_to_tw (&t, "u", NULL);
  g_assert_cmpint (xu->dtype, ==, TW_I64);
  g_assert_cmpint (tw_tensor_i64 (xu)[0], ==, G_MAXUINT32);
  g_assert_cmpint (tw_tensor_i64 (xu)[1], ==, 7);

  /* A 0-d tensor (no dims) holds one value; an empty one none. */
  Onnx__TensorProto s = ONNX__TENSOR_PROTO__INIT;
  s.has_data_type = TRUE;
  s.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  s.n_float_data = 1;
  s.float_data = f;
  g_autoptr (tw_tensor) x0 = tw_onnx_tensor_to_tw (&s, "scalar", NULL);
  g_assert_cmpint (x0->ndim, ==, 0);
  g_assert_cmpfloat (tw_tensor_f32 (x0)[0], ==, 1.5f);
  int64_t zero[] = { 4, 0 };
  s.n_dims = 2;
  s.dims = zero;
  s.n_float_data = 0;
  g_autoptr (tw_tensor) xe = tw_onnx_tensor_to_tw (&s, "empty", NULL);
  g_assert_cmpint (xe->ndim, ==, 2);
  g_assert_cmpint (tw_tensor_numel (xe), ==, 0);

  /* Types twb lacks, named. */
  int32_t unsupported[] = { ONNX__TENSOR_PROTO__DATA_TYPE__STRING,
                            ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64,
                            ONNX__TENSOR_PROTO__DATA_TYPE__UINT64, 0, 99 };
  const char *names[] = { "STRING (8)", "COMPLEX64 (14)", "UINT64 (13)", "UNDEFINED (0)",
                          "UNDEFINED (99)" };
  for (gsize i = 0; i < G_N_ELEMENTS (unsupported); i++)
    {
      s.data_type = unsupported[i];
      g_autoptr (GError) e = NULL;
      g_assert_null (tw_onnx_tensor_to_tw (&s, "output 'y'", &e));
      g_assert_error (e, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED);
      g_autofree char *want = g_strdup_printf ("output 'y': data type %s is not supported",
                                               names[i]);
      g_assert_cmpstr (e->message, ==, want);
    }
}

static void
test_tensor_files (void)
{
  /* A file that is not a TensorProto, and one that is, from ONNX's data. */
  g_autofree char *path = fixture ("mlp.onnx");
  g_autoptr (GError) e = NULL;
  g_autoptr (tw_tensor) x = tw_onnx_read_tensor_file (path, &e);
  /* A ModelProto parses as a TensorProto only by luck of field numbers;
   * either way, no crash and an error naming the file. */
  if (x == NULL)
    assert_named_error (e, path);
  const char *abs = TESTDATA "/node/test_abs/test_data_set_0/input_0.pb";
  if (!g_file_test (abs, G_FILE_TEST_EXISTS))
    {
      g_test_skip ("no " TESTDATA " (Debian's libonnx-testdata)");
      return;
    }
  g_clear_error (&e);
  g_autoptr (tw_tensor) in = tw_onnx_read_tensor_file (abs, &e);
  g_assert_no_error (e);
  g_autoptr (tw_tensor) out
    = tw_onnx_read_tensor_file (TESTDATA "/node/test_abs/test_data_set_0/output_0.pb", &e);
  g_assert_no_error (e);
  g_assert_true (tw_tensor_same_shape (in, out));
  g_assert_cmpint (in->ndim, ==, 3);
  for (int64_t i = 0; i < tw_tensor_numel (in); i++)
    g_assert_cmpfloat (fabs (tw_tensor_get_flat (in, i)), ==, tw_tensor_get_flat (out, i));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/onnx/read/fixture/mlp", test_fixture_mlp);
  g_test_add_func ("/onnx/read/fixture/convnet", test_fixture_convnet);
  g_test_add_func ("/onnx/read/testdata/models", test_testdata_models);
  g_test_add_func ("/onnx/read/testdata/tensors", test_testdata_tensors);
  g_test_add_func ("/onnx/read/tensor-files", test_tensor_files);
  g_test_add_func ("/onnx/read/malformed/truncated", test_truncated);
  g_test_add_func ("/onnx/read/malformed/random-edits", test_random_edits);
  g_test_add_func ("/onnx/read/crafted/tensors", test_crafted_tensors);
  g_test_add_func ("/onnx/read/crafted/model", test_crafted_model);
  g_test_add_func ("/onnx/read/crafted/external", test_crafted_external);
  g_test_add_func ("/onnx/read/crafted/amplification", test_crafted_amplification);
  g_test_add_func ("/onnx/read/crafted/utf8", test_crafted_utf8);
  g_test_add_func ("/onnx/read/crafted/ssa", test_crafted_ssa);
  g_test_add_func ("/onnx/read/crafted/subgraphs", test_crafted_subgraphs);
  g_test_add_func ("/onnx/read/crafted/deep", test_crafted_deep);
  g_test_add_func ("/onnx/read/tensor/round-trip", test_round_trip);
  g_test_add_func ("/onnx/read/tensor/dtypes", test_dtypes);
  return g_test_run ();
}
