/* test-fuzz.c — crafted and mutated inputs: every one is refused with an
 * error that names the file, node or attribute, or it runs under every
 * executor.  Nothing may crash, abort or leave a CRITICAL (GLib tests make
 * criticals fatal).
 *
 * The classes, each with its cases:
 * - overflow in shape and size arithmetic (attributes, input shapes, batch
 *   sizes near and past 2^63; reshape to [5, 3689348814741910336]; linear
 *   out_features = INT64_MAX; huge padding, dilation, strides);
 * - models that load but crashed later (no data input, "outputs": [], output
 *   ports out of range, unconnected and dangling inputs, ops swapped);
 * - out of memory (layers of 2e9 and 1e12 outputs under TWB_MEMORY_LIMIT);
 * - JSON with trailing content, truncated and corrupted text;
 * - truncated and garbage safetensors and .npy headers, huge dims;
 * - output files (mode kept, links followed, non-regular targets refused,
 *   stale temporaries removed, the same file found through a link);
 * - scale (a graph of many siblings loads in linear time; mutations splice
 *   chains of thousands of nodes, layers shared thousands of times and
 *   thousands of nodes of one id into the models);
 * - sizes from the model's values: every accepted model also gets synthetic
 *   data shaped for it, which must fit or be refused naming the dataset.
 *
 * The default suite runs a bounded number of mutations; `-m slow` (meson
 * test --suite slow) runs about ten times more.  Seeds are fixed. */
#include "engine/compile/compiled.h"
#include "engine/compile/program.h"
#include "engine/data-fit.h"
#include "engine/eager.h"
#include "engine/fileutil.h"
#include "engine/memory.h"
#include "engine/model.h"
#include "engine/params.h"
#include "engine/safetensors.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

/* Memory the accepted models may use: enough for every example model at a
 * small batch, small enough that a large layer is refused quickly. */
#define MEMORY_LIMIT "256M"
/* Batch the accepted models run at. */
#define RUN_BATCH 2

static const char *base_models[] = { "spirals.json", "mlp.json", "lenet5.json", "functional.json" };

/* A model exercising the window ops and reshape: every attribute here is a
 * target for the integer mutations. */
static const char windows_model[] =
  "{ \"format\": \"twb-model\", \"version\": 1, \"name\": \"windows\",\n"
  "  \"graph\": { \"nodes\": [\n"
  "    { \"id\": \"x\", \"op\": \"input\", \"attrs\": { \"shape\": [2, 8, 8], \"role\": \"data\" } },\n"
  "    { \"id\": \"y\", \"op\": \"input\", \"attrs\": { \"shape\": [], \"dtype\": \"i64\", \"role\": \"label\" } },\n"
  "    { \"id\": \"c\", \"op\": \"conv2d\", \"inputs\": [\"x\"], \"attrs\": { \"out_channels\": 3,\n"
  "      \"kernel_size\": [3, 3], \"stride\": 1, \"padding\": 1, \"dilation\": 1, \"groups\": 1 } },\n"
  "    { \"id\": \"bn\", \"op\": \"batch_norm\", \"inputs\": [\"c\"] },\n"
  "    { \"id\": \"p\", \"op\": \"max_pool2d\", \"inputs\": [\"bn\"], \"attrs\": { \"kernel_size\": 2,\n"
  "      \"stride\": 2, \"padding\": 0 } },\n"
  "    { \"id\": \"pd\", \"op\": \"pad\", \"inputs\": [\"p\"], \"attrs\": { \"pads\": [0, 0, 0, 0] } },\n"
  "    { \"id\": \"a\", \"op\": \"avg_pool2d\", \"inputs\": [\"pd\"], \"attrs\": { \"kernel_size\": 1 } },\n"
  "    { \"id\": \"r\", \"op\": \"reshape\", \"inputs\": [\"a\"], \"attrs\": { \"shape\": [3, 16] } },\n"
  "    { \"id\": \"f\", \"op\": \"flatten\", \"inputs\": [\"r\"], \"attrs\": { \"start_dim\": 1 } },\n"
  "    { \"id\": \"ln\", \"op\": \"layer_norm\", \"inputs\": [\"f\"] },\n"
  "    { \"id\": \"fc\", \"op\": \"linear\", \"inputs\": [\"ln\"], \"attrs\": { \"out_features\": 4 } },\n"
  "    { \"id\": \"loss\", \"op\": \"cross_entropy\", \"inputs\": [\"fc\", \"y\"] }\n"
  "  ], \"outputs\": [\"fc\"] },\n"
  "  \"training\": { \"batch_size\": 4, \"epochs\": 1 } }\n";

/* Integers a user might write, or an attacker: the edges of every range. */
static const int64_t bad_ints[] = {
  0, -1, -2, 1, 2, 3, 7, 64, 1 << 20, 2000000000, (int64_t) 1 << 31, (int64_t) 1 << 32,
  (int64_t) 1 << 40, 1000000000000, (int64_t) 1 << 53, (int64_t) 1 << 62,
  3689348814741910336, G_MAXINT64, G_MININT64, G_MAXINT64 / 2 + 1, G_MAXINT32,
  ((int64_t) 1 << 60) + 1, G_MAXINT64 - 1,
};

typedef struct
{
  int cases, refused_load, refused_graph, refused_runnable, refused_run, ran, refused_memory;
} stats;

static char *
asset_path (const char *name)
{
  const char *dir = g_getenv ("TWB_ASSETS_DIR");
  return g_build_filename (dir ? dir : TWB_ASSETS_DIR_FALLBACK, "models", name, NULL);
}

static char *
read_asset (const char *name)
{
  g_autofree char *path = asset_path (name);
  char *text = NULL;
  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  return text;
}

/* ---- Running what was accepted ---------------------------------------- */

static gboolean
message_names_something (const char *msg)
{
  return msg && *msg
         && (strstr (msg, "node ") || strstr (msg, "arena") || strstr (msg, "program")
             || strstr (msg, "input") || strstr (msg, "needs") || strstr (msg, "output"));
}

/* A batch of zeros for every source (labels 0: valid for any class count). */
static tw_tensor *
feed_for (const tw_node *src, int64_t batch)
{
  if (src == NULL)
    return NULL;
  tw_tinfo t = src->out_info[0];
  t.dims[0] = batch;
  return tw_tensor_zeros (t.dtype, t.ndim, t.dims);
}

static void
check_exec_error (const GError *error, const char *name)
{
  if (g_getenv ("TWB_FUZZ_VERBOSE"))
    g_printerr ("run: %s: %s\n", name, error->message);
  if (!message_names_something (error->message))
    g_error ("%s: a run failed without naming what: %s", name, error->message);
}

/* Refused (with a named error) or run: eager forward and backward, eager
 * prediction, compiled training and inference programs. */
static void
run_accepted (tw_model *m, const char *name, stats *st)
{
  g_autoptr (GError) error = NULL;
  tw_graph *g = m->graph;
  if (!tw_graph_check_runnable (g, &error))
    {
      g_assert_true (strstr (error->message, "input") || strstr (error->message, "outputs"));
      st->refused_runnable++;
      return;
    }
  /* At the recipe's batch: estimates and a program plan, never an allocation. */
  int64_t rb = m->recipe.batch_size;
  if (!tw_graph_check_memory (g, rb, TRUE, &error))
    {
      g_assert_true (error->domain == TW_MEMORY_ERROR);
      g_assert_true (message_names_something (error->message));
      g_clear_error (&error);
    }
  {
    g_autoptr (tw_program) p = tw_program_build (g, rb, TW_PROGRAM_INFER, &error);
    if (p == NULL)
      {
        check_exec_error (error, name);
        g_clear_error (&error);
      }
    else if (!tw_program_optimize (p, TW_PASS_ALL, &error))
      {
        check_exec_error (error, name);
        g_clear_error (&error);
      }
  }

  if (!tw_graph_check_memory (g, RUN_BATCH, TRUE, &error))
    {
      g_assert_true (error->domain == TW_MEMORY_ERROR);
      g_assert_true (message_names_something (error->message));
      st->refused_memory++;
      return;
    }
  tw_node *data = tw_graph_find_source (g, "data");
  tw_node *label = tw_graph_find_source (g, "label");
  {
    /* Data sized from the model's shapes: made, or refused naming it. */
    g_autoptr (tw_dataset) d = tw_dataset_open_for_model (m, "synthetic:4", TW_SPLIT_TRAIN, &error);
    if (d == NULL)
      {
        g_assert_true (error->domain == TW_DATA_ERROR || error->domain == TW_MEMORY_ERROR);
        g_assert_true (g_str_has_prefix (error->message, "dataset synthetic:4"));
        g_clear_error (&error);
      }
    else
      g_assert_cmpint (tw_dataset_size (d), ==, 4);
  }
  g_autoptr (tw_tensor) x = feed_for (data, RUN_BATCH);
  g_autoptr (tw_tensor) y = feed_for (label, RUN_BATCH);
  gboolean has_loss = tw_graph_find_loss (g) != NULL && y != NULL;

  g_autoptr (tw_params) params = tw_params_new ();
  {
    g_autoptr (tw_eager) ex = tw_eager_new (g, params, 0, &error);
    if (ex == NULL)
      g_error ("%s: accepted but the eager executor refuses it: %s", name, error->message);
    if (has_loss)
      {
        if (!tw_eager_forward (ex, x, y, TRUE, 0, &error) || !tw_eager_backward (ex, &error))
          {
            check_exec_error (error, name);
            st->refused_run++;
            return;
          }
      }
    if (!tw_eager_forward (ex, x, NULL, FALSE, 0, &error))
      {
        check_exec_error (error, name);
        st->refused_run++;
        return;
      }
    tw_tensor *pred = tw_eager_prediction (ex);
    g_assert_nonnull (pred);
    g_assert_cmpint (pred->shape[0], ==, RUN_BATCH);
  }
  {
    g_autoptr (tw_compiled) c = tw_compiled_new (g, params, 0, &error);
    if (c == NULL)
      g_error ("%s: accepted but the compiled executor refuses it: %s", name, error->message);
    if (has_loss && !tw_compiled_run (c, TW_PROGRAM_TRAIN, x, y, 0, &error))
      {
        if (!g_error_matches (error, TW_EXEC_ERROR, TW_EXEC_ERROR_NAN))
          check_exec_error (error, name);
        g_clear_error (&error);
      }
    if (!tw_compiled_run (c, TW_PROGRAM_INFER, x, NULL, 0, &error))
      {
        check_exec_error (error, name);
        st->refused_run++;
        return;
      }
    tw_tensor *pred = tw_compiled_prediction (c);
    g_assert_nonnull (pred);
    g_assert_cmpint (pred->shape[0], ==, RUN_BATCH);
  }
  st->ran++;
}

/* One case: load, infer, run.  Refusals must name the file (load), a node
 * or an output (inference). */
static void
try_model_text (const char *text, gssize len, const char *name, stats *st)
{
  g_autoptr (GError) error = NULL;
  st->cases++;
  g_autoptr (tw_model) m = tw_model_load_from_data (text, len, name, &error);
  if (m == NULL)
    {
      g_assert_true (g_str_has_prefix (error->message, name));
      if (g_getenv ("TWB_FUZZ_VERBOSE"))
        g_printerr ("load: %s\n%.*s\n", error->message,
                    strstr (error->message, "scanner") ? (int) (len < 0 ? strlen (text) : (gsize) len) : 0,
                    text);
      st->refused_load++;
      return;
    }
  if (tw_graph_infer (m->graph) > 0)
    {
      const GArray *d = tw_graph_diagnostics (m->graph);
      g_assert_cmpuint (d->len, >, 0);
      for (guint i = 0; i < d->len; i++)
        {
          const tw_diag *dg = &g_array_index (d, tw_diag, i);
          g_assert_true (dg->message && *dg->message);
          g_assert_true (dg->node_id != NULL || strstr (dg->message, "output '"));
        }
      st->refused_graph++;
      return;
    }
  run_accepted (m, name, st);
}

/* ---- Mutations of the model's JSON tree -------------------------------- */

static JsonNode *
parse (const char *text)
{
  g_autoptr (JsonParser) p = json_parser_new ();
  g_assert_true (json_parser_load_from_data (p, text, -1, NULL));
  return json_node_copy (json_parser_get_root (p));
}

static char *
to_text (JsonNode *root)
{
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  json_generator_set_root (gen, root);
  g_autofree char *text = json_generator_to_data (gen, NULL);
  /* json-glib 1.6 writes 1e-08 as "1e-08.0", which no parser reads. */
  g_autoptr (GRegex) re = g_regex_new ("([0-9][eE][-+]?[0-9]+)\\.0", 0, 0, NULL);
  return g_regex_replace (re, text, -1, 0, "\\1", 0, NULL);
}

static JsonArray *
nodes_of (JsonNode *root)
{
  JsonObject *g = json_object_get_object_member (json_node_get_object (root), "graph");
  return json_object_get_array_member (g, "nodes");
}

static JsonObject *
random_node (JsonNode *root, GRand *r)
{
  JsonArray *nodes = nodes_of (root);
  return json_array_get_object_element (nodes, g_rand_int_range (r, 0, json_array_get_length (nodes)));
}

static int64_t
random_bad_int (GRand *r)
{
  return bad_ints[g_rand_int_range (r, 0, G_N_ELEMENTS (bad_ints))];
}

/* An integer attribute (or one entry of a list) of a random node set to a
 * bad value: one it has, or one its op's schema knows (unknown names are
 * refused at load, which would test only the loader). */
static void
mutate_int_attr (JsonNode *root, GRand *r)
{
  JsonObject *n = random_node (root, r);
  const tw_op_def *def = tw_op_lookup (json_object_get_string_member (n, "op"));
  if (!json_object_has_member (n, "attrs"))
    json_object_set_object_member (n, "attrs", json_object_new ());
  JsonObject *a = json_object_get_object_member (n, "attrs");
  const char *name = NULL;
  gboolean list = FALSE;
  int seen = 0;
  for (const tw_attr_spec *sp = def ? def->attrs : NULL; sp && sp->name; sp++)
    if ((sp->type == TW_ATTR_INT || sp->type == TW_ATTR_INTS)
        && g_rand_int_range (r, 0, ++seen) == 0)
      {
        name = sp->name;
        list = sp->type == TW_ATTR_INTS;
      }
  if (name == NULL)
    return;
  JsonNode *v = json_object_get_member (a, name);
  if (v && JSON_NODE_HOLDS_ARRAY (v) && json_array_get_length (json_node_get_array (v)) > 0
      && g_rand_int_range (r, 0, 4) != 0)
    {
      JsonArray *arr = json_node_get_array (v);
      guint k = g_rand_int_range (r, 0, json_array_get_length (arr));
      JsonNode *e = json_array_get_element (arr, k);
      if (JSON_NODE_HOLDS_VALUE (e))
        json_node_set_int (e, random_bad_int (r));
      return;
    }
  if (list && g_rand_int_range (r, 0, 3) == 0)
    {
      JsonArray *arr = json_array_new ();
      int len = g_rand_int_range (r, 0, 8);
      for (int i = 0; i < len; i++)
        json_array_add_int_element (arr, random_bad_int (r));
      json_object_set_array_member (a, name, arr);
    }
  else
    json_object_set_int_member (a, name, random_bad_int (r));
}

static void
mutate_refs (JsonNode *root, GRand *r)
{
  static const char *suffixes[] = { ":1", ":9", ":16", ":17", ":-1", "", ":x" };
  JsonObject *g = json_object_get_object_member (json_node_get_object (root), "graph");
  JsonArray *nodes = nodes_of (root);
  int choice = g_rand_int_range (r, 0, 6);
  if (choice == 0)
    {
      json_object_set_array_member (g, "outputs", json_array_new ());
      return;
    }
  JsonObject *n = random_node (root, r);
  const char *other = json_object_get_string_member (
    json_array_get_object_element (nodes, g_rand_int_range (r, 0, json_array_get_length (nodes))), "id");
  g_autofree char *ref = g_strconcat (choice == 1 ? "nowhere" : other,
                                      suffixes[g_rand_int_range (r, 0, G_N_ELEMENTS (suffixes))],
                                      NULL);
  if (choice <= 2)
    {
      JsonArray *outs = json_array_new ();
      json_array_add_string_element (outs, ref);
      json_object_set_array_member (g, "outputs", outs);
    }
  else if (choice == 3 && json_object_has_member (n, "inputs")
           && json_array_get_length (json_object_get_array_member (n, "inputs")) > 0)
    {
      JsonArray *in = json_object_get_array_member (n, "inputs");
      json_node_set_string (json_array_get_element (in, 0), g_rand_boolean (r) ? ref : "");
    }
  else if (choice == 4)
    {
      /* Roles: the data input made a label, other, or removed. */
      JsonObject *x = json_array_get_object_element (nodes, 0);
      JsonObject *a = json_object_has_member (x, "attrs")
                        ? json_object_get_object_member (x, "attrs") : NULL;
      if (a)
        json_object_set_string_member (a, "role", g_rand_boolean (r) ? "label" : "other");
    }
  else
    {
      /* A cycle: a node fed by itself or a later node. */
      JsonArray *in = json_array_new ();
      json_array_add_string_element (in, json_object_get_string_member (n, "id"));
      json_object_set_array_member (n, "inputs", in);
    }
}

/* Another op in a node's place: each op's inference meets inputs it does
 * not expect. */
static void
mutate_op (JsonNode *root, GRand *r)
{
  int n_ops;
  const tw_op_def *const *ops = tw_op_list (&n_ops);
  JsonObject *n = random_node (root, r);
  const tw_op_def *def = ops[g_rand_int_range (r, 0, n_ops)];
  json_object_set_string_member (n, "op", def->name);
  json_object_remove_member (n, "attrs");   /* the old op's attributes would not fit */
}

/* Scale: a chain of thousands of tanh after a node (its readers read the
 * chain's end), thousands of copies of a node in a row sharing its
 * parameters, or thousands of nodes of one id. */
static void
mutate_scale (JsonNode *root, GRand *r)
{
  JsonObject *g = json_object_get_object_member (json_node_get_object (root), "graph");
  JsonArray *nodes = nodes_of (root);
  JsonObject *n = random_node (root, r);
  g_autofree char *id = g_strdup (json_object_get_string_member (n, "id"));
  int count = g_rand_int_range (r, 1000, 4000), kind = g_rand_int_range (r, 0, 3);
  g_autofree char *last = g_strdup_printf ("%s_scale%d", id, count - 1);
  if (kind < 2)
    {
      /* Readers of id (and the outputs) read the end of what comes now. */
      for (guint i = 0; i < json_array_get_length (nodes); i++)
        {
          JsonObject *o = json_array_get_object_element (nodes, i);
          JsonArray *in = json_object_has_member (o, "inputs")
                            ? json_object_get_array_member (o, "inputs") : NULL;
          for (guint k = 0; in && k < json_array_get_length (in); k++)
            if (g_strcmp0 (json_array_get_string_element (in, k), id) == 0)
              json_node_set_string (json_array_get_element (in, k), last);
        }
      JsonArray *outs = json_object_get_array_member (g, "outputs");
      for (guint k = 0; outs && k < json_array_get_length (outs); k++)
        if (g_strcmp0 (json_array_get_string_element (outs, k), id) == 0)
          json_node_set_string (json_array_get_element (outs, k), last);
    }
  for (int i = 0; i < count; i++)
    {
      JsonObject *c = kind == 1 ? json_object_ref (n) : json_object_new ();
      g_autofree char *cid = kind == 2 ? g_strdup ("dup")
                                       : g_strdup_printf ("%s_scale%d", id, i);
      g_autofree char *prev = i == 0 ? g_strdup (id) : g_strdup_printf ("%s_scale%d", id, i - 1);
      if (kind == 1)
        {
          /* A copy of n (a new object: n's members, inputs and id replaced). */
          JsonObject *copy = json_object_new ();
          g_autoptr (GList) members = json_object_get_members (c);
          for (GList *l = members; l; l = l->next)
            json_object_set_member (copy, l->data, json_node_copy (json_object_get_member (c, l->data)));
          json_object_unref (c);
          c = copy;
          json_object_set_string_member (c, "share", id);
        }
      else
        json_object_set_string_member (c, "op", "tanh");
      json_object_set_string_member (c, "id", cid);
      JsonArray *in = json_array_new ();
      json_array_add_string_element (in, prev);
      json_object_set_array_member (c, "inputs", in);
      json_array_add_object_element (nodes, c);
    }
}

static void
mutate_recipe (JsonNode *root, GRand *r)
{
  JsonObject *o = json_node_get_object (root);
  if (!json_object_has_member (o, "training"))
    json_object_set_object_member (o, "training", json_object_new ());
  JsonObject *t = json_object_get_object_member (o, "training");
  int64_t v = random_bad_int (r);
  json_object_set_int_member (t, g_rand_boolean (r) ? "batch_size" : "epochs", v);
}

static char *
mutated_text (const char *base, GRand *r, gsize *len)
{
  g_autoptr (JsonNode) root = parse (base);
  int rounds = g_rand_int_range (r, 1, 4);
  for (int i = 0; i < rounds; i++)
    switch (g_rand_int_range (r, 0, 8))
      {
      case 0: case 1: case 2: mutate_int_attr (root, r); break;
      case 3: case 4: mutate_refs (root, r); break;
      case 5: mutate_op (root, r); break;
      case 6: mutate_scale (root, r); break;
      default: mutate_recipe (root, r); break;
      }
  char *text = to_text (root);
  *len = strlen (text);
  /* Text-level damage on a few: trailing values, cuts, flipped bytes. */
  switch (g_rand_int_range (r, 0, 16))
    {
    case 0:
      {
        char *t = g_strconcat (text, g_rand_boolean (r) ? "{\"format\": 1}" : " [1] ", NULL);
        g_free (text);
        text = t;
        *len = strlen (text);
        break;
      }
    case 1:
      *len = g_rand_int_range (r, 0, (gint32) *len);
      break;
    case 2:
      text[g_rand_int_range (r, 0, (gint32) *len)] = (char) g_rand_int_range (r, 1, 256);
      break;
    default:
      break;
    }
  return text;
}

static void
fuzz_models (int per_base)
{
  g_setenv ("TWB_MEMORY_LIMIT", MEMORY_LIMIT, TRUE);
  stats st = { 0 };
  g_autoptr (GRand) r = g_rand_new_with_seed (20240607);
  for (guint b = 0; b <= G_N_ELEMENTS (base_models); b++)
    {
      g_autofree char *base = b < G_N_ELEMENTS (base_models) ? read_asset (base_models[b])
                                                              : g_strdup (windows_model);
      /* The base itself runs. */
      stats before = st;
      try_model_text (base, -1, "base.json", &st);
      g_assert_cmpint (st.ran, ==, before.ran + 1);
      for (int i = 0; i < per_base; i++)
        {
          gsize len;
          g_autofree char *text = mutated_text (base, r, &len);
          g_autofree char *name = g_strdup_printf ("fuzz-%u-%d.json", b, i);
          try_model_text (text, (gssize) len, name, &st);
        }
    }
  g_test_message ("%d model cases: %d refused at load, %d by inference, %d as not runnable, %d "
                  "by the memory estimate, %d at run time, %d ran under eager and compiled",
                  st.cases, st.refused_load, st.refused_graph, st.refused_runnable,
                  st.refused_memory, st.refused_run, st.ran);
  /* Every class showed up: refusals of each kind and runs. */
  g_assert_cmpint (st.refused_load, >, 0);
  g_assert_cmpint (st.refused_graph, >, 0);
  g_assert_cmpint (st.ran, >, (int) G_N_ELEMENTS (base_models));
  g_unsetenv ("TWB_MEMORY_LIMIT");
}

static void
test_fuzz_models (void)
{
  fuzz_models (g_test_slow () ? 400 : 50);
}

/* ---- Crafted models: one per reported crash -------------------------- */

/* spirals.json with one edit made by replacing text. */
static char *
spirals_with (const char *from, const char *to)
{
  g_autofree char *base = read_asset ("spirals.json");
  g_assert_nonnull (strstr (base, from));
  g_auto (GStrv) parts = g_strsplit (base, from, 2);
  return g_strconcat (parts[0], to, parts[1], NULL);
}

typedef enum { AT_LOAD, AT_INFER, AT_RUNNABLE, AT_MEMORY, RUNS } stage;

/* Where the model is refused, and the words its error must hold. */
static void
expect_stage (const char *text, stage want, const char *words)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = tw_model_load_from_data (text, -1, "crafted.json", &error);
  if (want == AT_LOAD)
    {
      g_assert_null (m);
      g_assert_true (g_str_has_prefix (error->message, "crafted.json"));
      if (!strstr (error->message, words))
        g_error ("expected \"%s\" in: %s", words, error->message);
      return;
    }
  g_assert_no_error (error);
  int n_err = tw_graph_infer (m->graph);
  g_autofree char *errs = tw_graph_errors_to_string (m->graph);
  if (want == AT_INFER)
    {
      g_assert_cmpint (n_err, >, 0);
      if (!strstr (errs, words))
        g_error ("expected \"%s\" in: %s", words, errs);
      return;
    }
  if (n_err > 0)
    g_error ("unexpected inference errors: %s", errs);
  gboolean runnable = tw_graph_check_runnable (m->graph, &error);
  if (want == AT_RUNNABLE)
    {
      g_assert_false (runnable);
      if (!strstr (error->message, words))
        g_error ("expected \"%s\" in: %s", words, error->message);
      return;
    }
  g_assert_no_error (error);
  gboolean fits = tw_graph_check_memory (m->graph, RUN_BATCH, TRUE, &error);
  if (want == AT_MEMORY)
    {
      g_assert_false (fits);
      if (!strstr (error->message, words))
        g_error ("expected \"%s\" in: %s", words, error->message);
      /* The executors refuse it too, before allocating. */
      g_clear_error (&error);
      g_autoptr (tw_params) params = tw_params_new ();
      g_autoptr (tw_eager) ex = tw_eager_new (m->graph, params, 0, &error);
      if (ex)
        {
          g_autoptr (tw_tensor) x = feed_for (tw_graph_find_source (m->graph, "data"), RUN_BATCH);
          g_assert_false (tw_eager_forward (ex, x, NULL, FALSE, 0, &error));
        }
      g_assert_nonnull (error);
      g_assert_true (message_names_something (error->message));
      return;
    }
  g_assert_no_error (error);
  stats st = { 0 };
  run_accepted (m, "crafted.json", &st);
  g_assert_cmpint (st.ran, ==, 1);
}

static void
test_crafted_overflow (void)
{
  g_setenv ("TWB_MEMORY_LIMIT", MEMORY_LIMIT, TRUE);
  /* The product 5 x 3689348814741910336 wraps to 64 in 64 bits: it once
   * passed the element-count check of a 64-element input. */
  g_autofree char *reshape = spirals_with (
    "{ \"id\": \"tanh1\", \"op\": \"tanh\", \"inputs\": [\"fc1\"], \"pos\": [540, 40] },",
    "{ \"id\": \"tanh1\", \"op\": \"reshape\", \"inputs\": [\"fc1\"], "
    "\"attrs\": { \"shape\": [5, 3689348814741910336] } },");
  expect_stage (reshape, AT_INFER, "'shape'");
  g_autofree char *lin = spirals_with ("\"out_features\": 64 },\n        \"pos\": [290, 40]",
                                       "\"out_features\": 9223372036854775807 }");
  expect_stage (lin, AT_INFER, "out_features");
  g_autofree char *in = spirals_with ("\"shape\": [2]", "\"shape\": [4294967296, 4294967296]");
  expect_stage (in, AT_INFER, "'shape'");
  /* A recipe batch past TW_MAX_BATCH is refused at load, naming it; the
   * largest one loads, and the memory check and the compiler refuse a batch
   * of 2^63 - 1 (as a caller may pass) without overflowing. */
  g_autofree char *batch = spirals_with ("\"batch_size\": 32", "\"batch_size\": 9223372036854775807");
  expect_stage (batch, AT_LOAD, "$.training.batch_size: must be at most 2147483647");
  g_autofree char *widest = spirals_with ("\"batch_size\": 32", "\"batch_size\": 2147483647");
  {
    g_autoptr (GError) error = NULL;
    g_autoptr (tw_model) m = tw_model_load_from_data (widest, -1, "batch.json", &error);
    g_assert_no_error (error);
    g_assert_cmpint (m->recipe.batch_size, ==, G_MAXINT32);
    g_assert_cmpint (tw_graph_infer (m->graph), ==, 0);
    g_assert_false (tw_graph_check_memory (m->graph, G_MAXINT64, TRUE, &error));
    g_assert_true (strstr (error->message, "node "));
    g_clear_error (&error);
    g_autoptr (tw_program) p = tw_program_build (m->graph, G_MAXINT64, TW_PROGRAM_STEP, &error);
    g_assert_null (p);
    g_assert_true (strstr (error->message, "at batch 9223372036854775807"));
  }
  /* Window attributes near 2^63: padding, dilation, stride, kernel. */
  static const char *windows[][2] = {
    { "\"padding\": 1,", "\"padding\": 4611686018427387904," },
    { "\"padding\": 1,", "\"padding\": [1, 9223372036854775807]," },
    { "\"dilation\": 1,", "\"dilation\": 4611686018427387904," },
    { "\"kernel_size\": [3, 3]", "\"kernel_size\": [3, 9223372036854775807]" },
    { "\"out_channels\": 3", "\"out_channels\": 9223372036854775807" },
    { "\"groups\": 1", "\"groups\": 9223372036854775807" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (windows); i++)
    {
      g_assert_nonnull (strstr (windows_model, windows[i][0]));
      g_auto (GStrv) parts = g_strsplit (windows_model, windows[i][0], 2);
      g_autofree char *t = g_strconcat (parts[0], windows[i][1], parts[1], NULL);
      g_autoptr (GError) error = NULL;
      g_autoptr (tw_model) m = tw_model_load_from_data (t, -1, "w.json", &error);
      g_assert_no_error (error);
      g_assert_cmpint (tw_graph_infer (m->graph), >, 0);
      g_autofree char *errs = tw_graph_errors_to_string (m->graph);
      if (!g_str_has_prefix (errs, "node c:"))
        g_error ("%s: expected an error on node c, got: %s", windows[i][1], errs);
    }
  /* A stride of 2^63 - 1 is no overflow: the output is 1x1, too small for
   * the pool that follows, which says so. */
  g_auto (GStrv) parts = g_strsplit (windows_model, "\"stride\": 1,", 2);
  g_autofree char *ok = g_strconcat (parts[0], "\"stride\": 9223372036854775807,", parts[1], NULL);
  g_auto (GStrv) parts2 = g_strsplit (ok, "\"kernel_size\": [3, 3]", 2);
  g_autofree char *ok2 = g_strconcat (parts2[0], "\"kernel_size\": [1, 1]", parts2[1], NULL);
  expect_stage (ok2, AT_INFER, "node p: max_pool2d: input f32[N, 3, 1, 1] is too small");
  g_unsetenv ("TWB_MEMORY_LIMIT");
}

static void
test_crafted_structure (void)
{
  g_setenv ("TWB_MEMORY_LIMIT", MEMORY_LIMIT, TRUE);
  g_autofree char *no_out = spirals_with ("\"outputs\": [\"fc3\"]", "\"outputs\": []");
  expect_stage (no_out, RUNS, NULL);   /* none marked: the loss's prediction (fc3) is the output */
  g_autofree char *port = spirals_with ("\"outputs\": [\"fc3\"]", "\"outputs\": [\"fc2:9\"]");
  expect_stage (port, AT_INFER, "output 'fc2:9' refers to output 9 of 'fc2', which has 1 output");
  g_autofree char *in_port = spirals_with ("\"inputs\": [\"fc1\"]", "\"inputs\": [\"fc1:3\"]");
  expect_stage (in_port, AT_INFER, "node tanh1");
  g_autofree char *no_data = spirals_with ("\"role\": \"data\"", "\"role\": \"other\"");
  expect_stage (no_data, AT_RUNNABLE, "role \"data\"");
  g_autofree char *two_outs = spirals_with ("\"outputs\": [\"fc3\"]", "\"outputs\": [\"fc3\", \"tanh2\"]");
  expect_stage (two_outs, RUNS, NULL);
  g_autofree char *base = read_asset ("spirals.json");
  g_autofree char *trailing = g_strconcat (base, "{\"format\": \"twb-model\"}", NULL);
  expect_stage (trailing, AT_LOAD, "content after the end of the top-level value");
  g_autofree char *trailing2 = g_strconcat (base, "\n\n  x", NULL);
  expect_stage (trailing2, AT_LOAD, "content after the end");
  g_autofree char *spaces = g_strconcat (base, " \n\t\r\n", NULL);
  expect_stage (spaces, RUNS, NULL);
  g_unsetenv ("TWB_MEMORY_LIMIT");
}

static void
test_crafted_memory (void)
{
  g_setenv ("TWB_MEMORY_LIMIT", MEMORY_LIMIT, TRUE);
  /* 2e9 outputs of a 2-feature input: 16 GB of weight, 8 GB per sample, and
   * the next layer's weight [64, 2e9] takes 512 GB. */
  g_autofree char *wide = spirals_with ("\"out_features\": 64 },\n        \"pos\": [290, 40]",
                                        "\"out_features\": 2000000000 }");
  expect_stage (wide, AT_MEMORY, "node fc2: its parameters take 512 GB");
  g_autofree char *wider = spirals_with ("\"out_features\": 64 },\n        \"pos\": [290, 40]",
                                         "\"out_features\": 1000000000000 }");
  expect_stage (wider, AT_MEMORY, "available (TWB_MEMORY_LIMIT)");
  /* Activations alone: a 1e8-feature input at batch 2. */
  g_autofree char *act = spirals_with ("\"shape\": [2]", "\"shape\": [100000000]");
  expect_stage (act, AT_MEMORY, "needs");
  /* The same model fits a larger limit: the estimate, not the model, refused. */
  g_setenv ("TWB_MEMORY_LIMIT", "1T", TRUE);
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = tw_model_load_from_data (wide, -1, "wide.json", &error);
  g_assert_cmpint (tw_graph_infer (m->graph), ==, 0);
  g_assert_true (tw_graph_check_memory (m->graph, RUN_BATCH, FALSE, &error));
  g_setenv ("TWB_MEMORY_LIMIT", "4k", TRUE);
  g_assert_cmpuint (tw_memory_available (), ==, 4096);
  /* Tensors and kernel scratch refuse large blocks past the limit. */
  g_setenv ("TWB_MEMORY_LIMIT", "100M", TRUE);
  g_assert_null (tw_tensor_try_new (TW_F32, 1, (int64_t[]) { 200 << 20 }));
  g_assert_null (tw_tensor_try_new (TW_F32, 2, (int64_t[]) { G_MAXINT64, 2 }));
  g_assert_null (tw_tensor_try_new (TW_F32, 3, (int64_t[]) { 0, G_MAXINT64, G_MAXINT64 }));
  g_assert_null (tw_scratch_try (NULL, (size_t) 200 << 20));
  g_assert_null (tw_scratch_try (NULL, SIZE_MAX));
  g_assert_nonnull (tw_scratch_try (NULL, 1024));
  g_unsetenv ("TWB_MEMORY_LIMIT");
}

/* ---- Checked arithmetic ------------------------------------------------ */

static void
test_checked_sizes (void)
{
  int64_t v;
  g_assert_true (tw_size_mul (3, 5, &v) && v == 15);
  g_assert_false (tw_size_mul (5, 3689348814741910336, &v));
  g_assert_false (tw_size_mul (-1, 2, &v));
  g_assert_false (tw_size_add (G_MAXINT64, 1, &v));
  g_assert_true (tw_size_add (G_MAXINT64 - 1, 1, &v) && v == G_MAXINT64);
  int64_t n;
  g_assert_true (tw_shape_numel_checked (2, (int64_t[]) { 0, G_MAXINT64 }, &n) && n == 0);
  g_assert_false (tw_shape_numel_checked (3, (int64_t[]) { 0, G_MAXINT64, 2 }, &n));
  g_assert_false (tw_shape_numel_checked (2, (int64_t[]) { 5, 3689348814741910336 }, &n));
  g_assert_false (tw_shape_numel_checked (1, (int64_t[]) { -1 }, &n));
  size_t b;
  g_assert_true (tw_shape_nbytes_checked (TW_F64, 1, (int64_t[]) { G_MAXINT64 / 8 }, &b));
  g_assert_false (tw_shape_nbytes_checked (TW_F64, 1, (int64_t[]) { G_MAXINT64 / 8 + 1 }, &b));
  /* Zero-size tensors with large other dims: strides fit, nothing allocated. */
  g_autoptr (tw_tensor) z = tw_tensor_new (TW_F32, 3, (int64_t[]) { 0, 1 << 30, 1 << 30 });
  g_assert_cmpint (tw_tensor_numel (z), ==, 0);
  g_assert_true (tw_tensor_is_contiguous (z));
  g_autofree char *s = tw_format_bytes (1500000000);
  g_assert_cmpstr (s, ==, "1.50 GB");
}

/* ---- Weights and arrays: safetensors and .npy -------------------------- */

static GBytes *
valid_safetensors (const char *dir)
{
  g_autoptr (GHashTable) t = tw_tensor_table_new ();
  tw_tensor *w = tw_tensor_zeros (TW_F32, 2, (int64_t[]) { 3, 4 });
  g_hash_table_insert (t, g_strdup ("fc.weight"), w);
  g_hash_table_insert (t, g_strdup ("fc.bias"), tw_tensor_zeros (TW_I64, 1, (int64_t[]) { 3 }));
  g_autoptr (GHashTable) meta = g_hash_table_new (g_str_hash, g_str_equal);
  g_hash_table_insert (meta, "format", "twb-checkpoint");
  g_autofree char *path = g_build_filename (dir, "v.safetensors", NULL);
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_safetensors_save (path, t, meta, &error));
  char *data;
  gsize len;
  g_assert_true (g_file_get_contents (path, &data, &len, NULL));
  return g_bytes_new_take (data, len);
}

static void
try_safetensors (const guint8 *data, gsize len, stats *st)
{
  g_autoptr (GHashTable) t = NULL;
  g_autoptr (GHashTable) meta = NULL;
  g_autoptr (GError) error = NULL;
  st->cases++;
  if (tw_safetensors_load_from_data (data, len, "w.safetensors", &t, &meta, &error))
    {
      st->ran++;
      return;
    }
  g_assert_true (g_str_has_prefix (error->message, "w.safetensors"));
  st->refused_load++;
}

/* A safetensors file with this header (padded) and len bytes of data. */
static GByteArray *
safetensors_with_header (const char *header, gsize data_len)
{
  GByteArray *b = g_byte_array_new ();
  guint64 n = GUINT64_TO_LE ((guint64) strlen (header));
  g_byte_array_append (b, (const guint8 *) &n, 8);
  g_byte_array_append (b, (const guint8 *) header, strlen (header));
  for (gsize i = 0; i < data_len; i++)
    g_byte_array_append (b, (const guint8 *) "", 1);
  return b;
}

static void
test_fuzz_safetensors (void)
{
  g_setenv ("TWB_MEMORY_LIMIT", MEMORY_LIMIT, TRUE);
  g_autofree char *dir = g_dir_make_tmp ("twb-fuzz-XXXXXX", NULL);
  g_autoptr (GBytes) valid = valid_safetensors (dir);
  gsize len;
  const guint8 *data = g_bytes_get_data (valid, &len);
  stats st = { 0 };
  try_safetensors (data, len, &st);
  g_assert_cmpint (st.ran, ==, 1);

  static const char *headers[] = {
    "{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4],\"data_offsets\":[0,16]}}",
    "{\"a\":{\"dtype\":\"F32\",\"shape\":[0,9223372036854775807,9223372036854775807],\"data_offsets\":[0,0]}}",
    "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,16]}}",
    "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,18446744073709551615]}}",
    "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[16,0]}}",
    "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
    "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}",
    "{\"a\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]}}",
    "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}{\"b\":1}",
    "{\"__metadata__\":{\"step\":5}}",
    "{\"a\":[]}",
    "[]",
    "{",
    "",
  };
  for (guint i = 0; i < G_N_ELEMENTS (headers); i++)
    {
      g_autoptr (GByteArray) b = safetensors_with_header (headers[i], 16);
      stats before = st;
      try_safetensors (b->data, b->len, &st);
      /* The shapes overflowing, offsets out of range, overlaps: all refused.
       * ([0, MAX, MAX] with zero bytes is refused as unrepresentable.) */
      g_assert_cmpint (st.refused_load, ==, before.refused_load + 1);
    }
  /* A header length past the end, and beyond the 100 MB limit. */
  guint8 big[16] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, '{', '}' };
  try_safetensors (big, sizeof big, &st);
  /* Truncations and flipped bytes of the valid file. */
  g_autoptr (GRand) r = g_rand_new_with_seed (7);
  int n = g_test_slow () ? 2000 : 300;
  g_autofree guint8 *copy = g_memdup2 (data, len);
  for (int i = 0; i < n; i++)
    {
      memcpy (copy, data, len);
      gsize cut = len;
      if (i % 3 == 0)
        cut = g_rand_int_range (r, 0, (gint32) len);
      else
        for (int k = g_rand_int_range (r, 1, 4); k > 0; k--)
          copy[g_rand_int_range (r, 0, (gint32) MIN (len, 200))] = (guint8) g_rand_int_range (r, 0, 256);
      try_safetensors (copy, cut, &st);
    }
  g_test_message ("%d safetensors cases: %d refused, %d loaded", st.cases, st.refused_load, st.ran);
  g_assert_cmpint (st.refused_load, >, n / 2);
  g_autofree char *v = g_build_filename (dir, "v.safetensors", NULL);
  g_unlink (v);
  g_rmdir (dir);
  g_unsetenv ("TWB_MEMORY_LIMIT");
}

static GByteArray *
npy_with_header (const char *dict, gsize data_len)
{
  GByteArray *b = g_byte_array_new ();
  g_byte_array_append (b, (const guint8 *) "\x93NUMPY\x01\x00", 8);
  guint16 hl = GUINT16_TO_LE ((guint16) strlen (dict));
  g_byte_array_append (b, (const guint8 *) &hl, 2);
  g_byte_array_append (b, (const guint8 *) dict, strlen (dict));
  for (gsize i = 0; i < data_len; i++)
    g_byte_array_append (b, (const guint8 *) "", 1);
  return b;
}

static void
try_npy (const guint8 *data, gsize len, stats *st)
{
  g_autoptr (GError) error = NULL;
  st->cases++;
  g_autoptr (tw_tensor) t = tw_npy_load_from_data (data, len, "x.npy", &error);
  if (t)
    {
      st->ran++;
      return;
    }
  g_assert_true (g_str_has_prefix (error->message, "x.npy"));
  st->refused_load++;
}

static void
test_fuzz_npy (void)
{
  g_setenv ("TWB_MEMORY_LIMIT", MEMORY_LIMIT, TRUE);
  stats st = { 0 };
  static const char *dicts[] = {
    "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 9223372036854775807, 9223372036854775807), }",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775808,), }",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1), }",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (100000000,), }",
    "{'descr': '<f4', 'fortran_order': True, 'shape': (4,), }",
    "{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }",
    "{'descr': '<c8', 'fortran_order': False, 'shape': (4,), }",
    "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }",
    "{'descr': '<f4', 'fortran_order': False }",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'extra': 1}",
    "{'descr': '<f4'",
    "",
  };
  for (guint i = 0; i < G_N_ELEMENTS (dicts); i++)
    {
      g_autoptr (GByteArray) b = npy_with_header (dicts[i], 16);
      stats before = st;
      try_npy (b->data, b->len, &st);
      g_assert_cmpint (st.refused_load, ==, before.refused_load + 1);
    }
  /* Zero samples load (an empty array is an array); commands refuse them. */
  g_autoptr (GByteArray) empty = npy_with_header ("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 2), }", 0);
  try_npy (empty->data, empty->len, &st);
  g_assert_cmpint (st.ran, ==, 1);
  g_autoptr (GByteArray) good = npy_with_header ("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", 16);
  g_autoptr (GRand) r = g_rand_new_with_seed (11);
  int n = g_test_slow () ? 2000 : 300;
  for (int i = 0; i < n; i++)
    {
      g_autofree guint8 *copy = g_memdup2 (good->data, good->len);
      gsize cut = good->len;
      if (i % 3 == 0)
        cut = g_rand_int_range (r, 0, (gint32) good->len);
      else
        for (int k = g_rand_int_range (r, 1, 4); k > 0; k--)
          copy[g_rand_int_range (r, 0, (gint32) good->len)] = (guint8) g_rand_int_range (r, 0, 256);
      try_npy (copy, cut, &st);
    }
  g_test_message ("%d .npy cases: %d refused, %d loaded", st.cases, st.refused_load, st.ran);
  g_assert_cmpint (st.refused_load, >, 0);
  g_unsetenv ("TWB_MEMORY_LIMIT");
}

/* ---- Output files ------------------------------------------------------- */

static void
assert_contents (const char *path, const char *want)
{
  g_autofree char *got = NULL;
  g_assert_true (g_file_get_contents (path, &got, NULL, NULL));
  g_assert_cmpstr (got, ==, want);
}

static void
test_files (void)
{
  g_autofree char *dir = g_dir_make_tmp ("twb-files-XXXXXX", NULL);
  g_autofree char *f = g_build_filename (dir, "model.json", NULL);
  g_autoptr (GError) error = NULL;

  /* A new file; then a 0600 one stays 0600. */
  g_assert_true (tw_file_save (f, "one", 3, &error));
  assert_contents (f, "one");
  g_assert_cmpint (g_chmod (f, 0600), ==, 0);
  g_assert_true (tw_file_save (f, "two", 3, &error));
  GStatBuf st;
  g_assert_cmpint (g_stat (f, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 07777, ==, 0600);
  assert_contents (f, "two");

  /* Through a symbolic link: the link stays, its target changes. */
  g_autofree char *link = g_build_filename (dir, "link.json", NULL);
  g_assert_cmpint (symlink ("model.json", link), ==, 0);
  g_assert_true (tw_file_save (link, "three", 5, &error));
  g_assert_cmpint (g_lstat (link, &st), ==, 0);
  g_assert_true (S_ISLNK (st.st_mode));
  assert_contents (f, "three");
  g_autoptr (tw_file_roles) io = tw_file_roles_new ();
  tw_file_roles_input (io, f, "the model");
  tw_file_roles_output (io, link, "--checkpoint");
  g_assert_false (tw_file_roles_check (io, &error));
  g_assert_true (strstr (error->message, "--checkpoint") && strstr (error->message, "the model"));
  g_clear_error (&error);
  g_autofree char *other = g_build_filename (dir, "other.json", NULL);
  g_autoptr (tw_file_roles) io2 = tw_file_roles_new ();
  tw_file_roles_input (io2, f, "--input");
  tw_file_roles_output (io2, other, "--output");
  g_assert_true (tw_file_roles_check (io2, &error));

  /* Non-regular targets: a directory, a fifo, a device; nothing replaced. */
  g_autofree char *sub = g_build_filename (dir, "sub", NULL);
  g_assert_cmpint (g_mkdir (sub, 0700), ==, 0);
  g_assert_false (tw_file_save (sub, "x", 1, &error));
  g_assert_true (strstr (error->message, "a directory, not a regular file"));
  g_clear_error (&error);
  g_autofree char *fifo = g_build_filename (dir, "fifo", NULL);
  g_assert_cmpint (mkfifo (fifo, 0600), ==, 0);
  g_assert_false (tw_file_save (fifo, "x", 1, &error));
  g_assert_true (strstr (error->message, "a fifo"));
  g_clear_error (&error);
  g_assert_false (tw_file_save ("/dev/null", "x", 1, &error));
  g_assert_true (strstr (error->message, "character device"));
  g_clear_error (&error);
  g_assert_cmpint (g_lstat (fifo, &st), ==, 0);
  g_assert_true (S_ISFIFO (st.st_mode));

  /* Reading: a fifo (which would block) and /dev/zero (which never ends). */
  char *text = NULL;
  g_assert_false (tw_file_read_regular (fifo, 100, &text, NULL, &error));
  g_clear_error (&error);
  g_assert_false (tw_file_read_regular ("/dev/zero", TW_FILE_MAX_TEXT, &text, NULL, &error));
  g_assert_true (strstr (error->message, "/dev/zero"));
  g_clear_error (&error);
  g_assert_false (tw_file_read_regular (f, 2, &text, NULL, &error));
  g_clear_error (&error);
  g_autoptr (tw_model) m = tw_model_load ("/dev/zero", &error);
  g_assert_null (m);
  g_assert_true (g_str_has_prefix (error->message, "/dev/zero"));
  g_clear_error (&error);

  /* Stale temporaries: of a dead writer (pid 0x7ffffffe never runs: above
   * pid_max), of an old build more than a minute old; a fresh one of ours
   * and other files stay. */
  g_autofree char *dead = g_build_filename (dir, "model.json.tmp-2147483646-AbC123", NULL);
  g_autofree char *old = g_build_filename (dir, "model.json.tmp-Xy12Zq", NULL);
  g_autofree char *fresh = g_strdup_printf ("%s/model.json.tmp-%d-QwErTy", dir, (int) getpid ());
  g_autofree char *keep = g_build_filename (dir, "model.json.backup", NULL);
  g_autofree char *keep2 = g_build_filename (dir, "other.json.tmp-Xy12Zq", NULL);
  const char *all[] = { dead, old, fresh, keep, keep2 };
  for (guint i = 0; i < G_N_ELEMENTS (all); i++)
    g_assert_true (g_file_set_contents (all[i], "t", 1, NULL));
  GStatBuf now;
  g_stat (old, &now);
  struct timeval tv[2] = { { now.st_mtime - 120, 0 }, { now.st_mtime - 120, 0 } };
  g_assert_cmpint (utimes (old, tv), ==, 0);
  g_assert_true (tw_file_save (f, "four", 4, &error));
  g_assert_false (g_file_test (dead, G_FILE_TEST_EXISTS));
  g_assert_false (g_file_test (old, G_FILE_TEST_EXISTS));
  g_assert_true (g_file_test (fresh, G_FILE_TEST_EXISTS));
  g_assert_true (g_file_test (keep, G_FILE_TEST_EXISTS));
  g_assert_true (g_file_test (keep2, G_FILE_TEST_EXISTS));
  assert_contents (f, "four");

  /* A save into a folder that does not exist: an error, nothing left. */
  g_autofree char *nowhere = g_build_filename (dir, "none", "x.json", NULL);
  g_assert_false (tw_file_save (nowhere, "x", 1, &error));
  g_assert_true (strstr (error->message, "none"));
  g_clear_error (&error);

  /* Aborted save: the target keeps its contents, no temporary remains. */
  {
    g_autoptr (tw_save) s = tw_save_begin (f, &error);
    g_assert_nonnull (s);
    g_assert_true (tw_save_write (s, "half", 4, &error));
  }
  assert_contents (f, "four");
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  int temps = 0;
  for (const char *name; (name = g_dir_read_name (d));)
    temps += g_str_has_prefix (name, "model.json.tmp-") && !strstr (name, "QwErTy");
  g_assert_cmpint (temps, ==, 0);

  const char *rm[] = { f, link, sub, fifo, fresh, keep, keep2, other };
  for (guint i = 0; i < G_N_ELEMENTS (rm); i++)
    g_remove (rm[i]);
  g_rmdir (dir);
}

/* ---- Scale -------------------------------------------------------------- */

/* Seconds to load and infer a graph of n siblings of one input. */
static double
wide_graph_seconds (int n)
{
  GString *s = g_string_new ("{ \"format\": \"twb-model\", \"version\": 1, \"graph\": { \"nodes\": [\n"
                             "{ \"id\": \"x\", \"op\": \"input\", \"attrs\": { \"shape\": [2] } }");
  for (int i = 0; i < n; i++)
    g_string_append_printf (s, ",\n{ \"id\": \"r%d\", \"op\": \"relu\", \"inputs\": [\"x\"] }", i);
  g_string_append (s, "], \"outputs\": [\"r0\"] } }\n");
  gint64 t0 = g_get_monotonic_time ();
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = tw_model_load_from_data (s->str, (gssize) s->len, "wide.json", &error);
  g_assert_no_error (error);
  g_assert_cmpint (tw_graph_infer (m->graph), ==, 0);
  double sec = (g_get_monotonic_time () - t0) / 1e6;
  g_string_free (s, TRUE);
  return sec;
}

static void
test_wide_graph (void)
{
  int n = g_test_slow () ? 200000 : 20000;
  double small = wide_graph_seconds (n / 4), big = wide_graph_seconds (n);
  g_test_message ("%d siblings: loaded and inferred in %.2f s (%d in %.2f s)", n, big, n / 4,
                  small);
  /* The quadratic sort took 20 s for 200,000 siblings and grew 16-fold for
   * 4 times the nodes; linear work grows about 4-fold (10 leaves room for
   * allocator and cache effects and a loaded machine). */
  g_assert_cmpfloat (big, <, 10 * MAX (small, 0.01));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  g_test_add_func ("/engine/fuzz/checked-sizes", test_checked_sizes);
  g_test_add_func ("/engine/fuzz/crafted/overflow", test_crafted_overflow);
  g_test_add_func ("/engine/fuzz/crafted/structure", test_crafted_structure);
  g_test_add_func ("/engine/fuzz/crafted/memory", test_crafted_memory);
  g_test_add_func ("/engine/fuzz/models", test_fuzz_models);
  g_test_add_func ("/engine/fuzz/safetensors", test_fuzz_safetensors);
  g_test_add_func ("/engine/fuzz/npy", test_fuzz_npy);
  g_test_add_func ("/engine/fuzz/files", test_files);
  g_test_add_func ("/engine/fuzz/wide-graph", test_wide_graph);
  return g_test_run ();
}
