/* onnx-conformance.c — ONNX's own backend test cases through twb's importer
 * and executors.
 *
 * Every case under DATA/{node,pytorch-operator,pytorch-converted,simple}
 * (Debian's libonnx-testdata): model.onnx is imported with every graph input
 * of fixed shape and any opset (tw_onnx_import_with), each
 * test_data_set_*\/input_*.pb is fed to the graph input of its position, and
 * each output is compared with output_*.pb as ONNX's backend tests do
 * (numpy.testing.assert_allclose, rtol 1e-3, atol 1e-7, NaN equal to NaN;
 * integer and bool outputs exactly; shapes exactly).  A case the importer
 * refuses is skipped, counted under each op it names; one that imports but
 * fails to run or gives other numbers is a failure.
 *
 *   build/bench/onnx-conformance [--compiled] [--verbose] [--filter SUBSTR]
 *       [--list FILE] [--json OUT] [--data DIR] [--expect-pass]
 *
 * Prints a table per ONNX op (cases run, passed, failed), the totals and the
 * skips by op.  Exit status 0 when it ran, with --expect-pass 1 when a case
 * that ran failed (or, with --list, one was skipped); 2 on bad usage or
 * unreadable data.
 */
#include "engine/compile/compiled.h"
#include "engine/eager.h"
#include "onnx/onnx-import.h"

#include <json-glib/json-glib.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ONNX's backend tests (onnx/backend/test/runner): assert_allclose defaults. */
#define RTOL 1e-3
#define ATOL 1e-7

static const char *const suites[] = { "node", "pytorch-operator", "pytorch-converted", "simple" };

typedef enum
{
  ST_PASS,
  ST_FAIL,
  ST_SKIP,
} status;

typedef struct
{
  int run, passed, failed;
} op_count;

typedef struct
{
  int cases;
  char *example; /* the first case's reason */
  char *example_case;
} skip_count;

typedef struct
{
  gboolean compiled, verbose, expect_pass;
  const char *filter;
  GHashTable *list;  /* case names to run, or NULL */
  GHashTable *ops;   /* ONNX op → op_count */
  GHashTable *skips; /* ONNX op (or "(graph)") → skip_count */
  JsonBuilder *json;
  int run, passed, failed, skipped;
} runner;

static void
skip_count_free (gpointer p)
{
  skip_count *s = p;
  g_free (s->example);
  g_free (s->example_case);
  g_free (s);
}

/* The sorted, distinct op types of a model's main graph. */
static GPtrArray *
op_types (const Onnx__ModelProto *proto)
{
  GPtrArray *ops = g_ptr_array_new_with_free_func (g_free);
  for (gsize i = 0; i < proto->graph->n_node; i++)
    {
      const char *op = proto->graph->node[i]->op_type ? proto->graph->node[i]->op_type : "?";
      gboolean seen = FALSE;
      for (guint k = 0; k < ops->len && !seen; k++)
        seen = strcmp (g_ptr_array_index (ops, k), op) == 0;
      if (!seen)
        g_ptr_array_add (ops, g_strdup (op));
    }
  g_ptr_array_sort (ops, (GCompareFunc) g_strcmp0);
  return ops;
}

static void
note_skip (runner *r, const char *key, const char *reason, const char *name)
{
  skip_count *s = g_hash_table_lookup (r->skips, key);
  if (s == NULL)
    {
      s = g_new0 (skip_count, 1);
      s->example = g_strdup (reason);
      s->example_case = g_strdup (name);
      g_hash_table_insert (r->skips, g_strdup (key), s);
    }
  s->cases++;
}

/* The importer's refusal "FILE: N nodes cannot be imported: 'a' (Op, opset
 * 13): why; 'b' (Op2, opset 13): why" counted once per op it names; any
 * other error under "(graph)" with its message. */
static void
record_skip (runner *r, const char *name, const char *path, const char *message)
{
  const char *msg = message;
  if (g_str_has_prefix (msg, path) && msg[strlen (path)] == ':')
    msg += strlen (path) + 2;
  const char *list = strstr (msg, "cannot be imported: ");
  g_autoptr (GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  if (list != NULL)
    {
      list += strlen ("cannot be imported: ");
      g_auto (GStrv) parts = g_strsplit (list, "; '", -1);
      for (int i = 0; parts[i]; i++)
        {
          const char *open = strstr (parts[i], "' (");
          const char *comma = open ? strstr (open, ", opset ") : NULL;
          const char *why = comma ? strstr (comma, "): ") : NULL;
          if (why == NULL)
            {
              if (!g_hash_table_contains (seen, "(graph)"))
                note_skip (r, "(graph)", parts[i], name);
              g_hash_table_add (seen, g_strdup ("(graph)"));
              continue;
            }
          g_autofree char *op = g_strndup (open + 3, comma - open - 3);
          if (g_hash_table_contains (seen, op))
            continue;
          note_skip (r, op, why + 3, name);
          g_hash_table_add (seen, g_steal_pointer (&op));
        }
      return;
    }
  g_autofree char *first = g_strdup (msg);
  char *nl = strchr (first, '\n');
  if (nl && nl[1])
    {
      /* "the imported graph has shape errors:\nnode x: ..." → the first error. */
      memmove (first, nl + 1, strlen (nl + 1) + 1);
      nl = strchr (first, '\n');
      if (nl)
        *nl = '\0';
    }
  /* Keyed by the message without its names and numbers ("graph input '#'
   * has ONNX data type #"), so that alike refusals count together. */
  g_autoptr (GRegex) quoted = g_regex_new ("'[^']*'|[0-9]+", 0, 0, NULL);
  g_autofree char *shape = g_regex_replace_literal (quoted, first, -1, 0, "#", 0, NULL);
  g_autofree char *key = g_strdup_printf ("(graph) %s", shape);
  note_skip (r, key, first, name);
}

/* ---- comparison ----------------------------------------------------------- */

/* NULL when got matches want; else what differs (caller frees). */
static char *
compare (const tw_tensor *got_in, const tw_tensor *want_in, double *max_err)
{
  g_autoptr (tw_tensor) gh = tw_tensor_to_host ((tw_tensor *) got_in);
  g_autoptr (tw_tensor) got = tw_tensor_contiguous (gh);
  g_autoptr (tw_tensor) want = tw_tensor_contiguous ((tw_tensor *) want_in);
  g_autofree char *sg = tw_shape_to_string (got->ndim, got->shape);
  g_autofree char *sw = tw_shape_to_string (want->ndim, want->shape);
  *max_err = 0;
  if (got->ndim != want->ndim ||
      memcmp (got->shape, want->shape, sizeof (int64_t) * got->ndim) != 0)
    return g_strdup_printf ("shape %s, expected %s", sg, sw);
  gboolean fw = tw_dtype_is_float (want->dtype), fg = tw_dtype_is_float (got->dtype);
  if (fw != fg || (fw && got->dtype != want->dtype))
    return g_strdup_printf ("dtype %s, expected %s", tw_dtype_name (got->dtype),
                            tw_dtype_name (want->dtype));
  int64_t n = tw_tensor_numel (want), bad = 0, first = -1, worst = -1;
  for (int64_t i = 0; i < n; i++)
    {
      double g = tw_tensor_get_flat (got, i), w = tw_tensor_get_flat (want, i);
      gboolean ok;
      if (!fw)
        ok = g == w;
      else if (isnan (w) || isnan (g))
        ok = isnan (w) && isnan (g);
      else if (isinf (w) || isinf (g))
        ok = g == w;
      else
        {
          double err = fabs (g - w);
          ok = err <= ATOL + RTOL * fabs (w);
          if (err > *max_err)
            *max_err = err, worst = i;
        }
      if (!ok)
        {
          bad++;
          if (first < 0)
            first = i;
        }
    }
  if (bad == 0)
    return NULL;
  GString *s = g_string_new (NULL);
  g_string_append_printf (s,
                          "%" G_GINT64_FORMAT " of %" G_GINT64_FORMAT " elements differ; first at "
                          "%" G_GINT64_FORMAT ": %.9g, expected %.9g",
                          bad, n, first, tw_tensor_get_flat (got, first),
                          tw_tensor_get_flat (want, first));
  if (fw && worst >= 0)
    g_string_append_printf (s, "; largest error %.3g at %" G_GINT64_FORMAT " (%.9g, expected %.9g)",
                            *max_err, worst, tw_tensor_get_flat (got, worst),
                            tw_tensor_get_flat (want, worst));
  return g_string_free (s, FALSE);
}

/* ---- one case --------------------------------------------------------------- */

/* input_0.pb, input_1.pb, ... (or output_*) of one data set, in order. */
static GPtrArray *
read_tensors (const char *dir, const char *prefix, GError **error)
{
  GPtrArray *ts = g_ptr_array_new_with_free_func ((GDestroyNotify) tw_tensor_unref);
  for (int i = 0;; i++)
    {
      g_autofree char *base = g_strdup_printf ("%s_%d.pb", prefix, i);
      g_autofree char *path = g_build_filename (dir, base, NULL);
      if (!g_file_test (path, G_FILE_TEST_EXISTS))
        break;
      tw_tensor *t = tw_onnx_read_tensor_file (path, error);
      if (t == NULL)
        {
          g_ptr_array_unref (ts);
          return NULL;
        }
      g_ptr_array_add (ts, t);
    }
  return ts;
}

/* The model's "input" nodes in the order the importer added them (the
 * ONNX graph inputs', initializers left out). */
static GPtrArray *
input_ids (tw_graph *g)
{
  GPtrArray *ids = g_ptr_array_new ();
  for (int i = 0; i < tw_graph_n_nodes (g); i++)
    {
      tw_node *n = tw_graph_node (g, i);
      if (strcmp (n->op->name, "input") == 0)
        g_ptr_array_add (ids, n->id);
    }
  return ids;
}

/* Runs one data set; NULL when it matches, else why not (caller frees). */
static char *
run_set (tw_model *m, tw_params *params, gboolean compiled, const char *set_dir, double *max_err)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) ins = read_tensors (set_dir, "input", &error);
  g_autoptr (GPtrArray) outs = ins ? read_tensors (set_dir, "output", &error) : NULL;
  if (outs == NULL)
    return g_strdup_printf ("test data: %s", error->message);
  g_autoptr (GPtrArray) ids = input_ids (m->graph);
  if (ins->len > ids->len)
    return g_strdup_printf ("%u input tensors for %u graph inputs", ins->len, ids->len);
  g_autofree tw_feed *feeds = g_new0 (tw_feed, MAX (ins->len, 1));
  for (guint i = 0; i < ins->len; i++)
    feeds[i] = (tw_feed){ g_ptr_array_index (ids, i), g_ptr_array_index (ins, i) };
  const char *const *refs = tw_graph_outputs (m->graph);
  guint n_refs = refs ? g_strv_length ((char **) refs) : 0;
  if (n_refs != outs->len)
    return g_strdup_printf ("%u outputs, the test data has %u", n_refs, outs->len);
  *max_err = 0;
  if (!compiled)
    {
      g_autoptr (tw_eager) ex = tw_eager_new (m->graph, params, 0, &error);
      if (ex == NULL ||
          !tw_eager_forward_feeds (ex, feeds, (int) ins->len, FALSE, FALSE, 0, &error))
        return g_strdup_printf ("eager: %s", error->message);
      for (guint k = 0; k < n_refs; k++)
        {
          double e = 0;
          tw_tensor *got = tw_eager_value (ex, refs[k]);
          char *why = got ? compare (got, g_ptr_array_index (outs, k), &e)
                          : g_strdup_printf ("no value for '%s'", refs[k]);
          *max_err = MAX (*max_err, e);
          if (why)
            {
              char *msg = g_strdup_printf ("eager output %u: %s", k, why);
              g_free (why);
              return msg;
            }
        }
      return NULL;
    }
  /* The compiled executor gives its first output: one program per output. */
  g_auto (GStrv) saved = g_strdupv ((char **) refs);
  char *result = NULL;
  for (guint k = 0; k < n_refs && result == NULL; k++)
    {
      const char *one[] = { saved[k], NULL };
      tw_graph_set_outputs (m->graph, one);
      g_autoptr (tw_compiled) c = tw_compiled_new (m->graph, params, 0, &error);
      if (c == NULL ||
          !tw_compiled_run_feeds (c, TW_PROGRAM_INFER, feeds, (int) ins->len, 0, &error))
        {
          result = g_strdup_printf ("compiled: %s", error->message);
          break;
        }
      double e = 0;
      tw_tensor *got = tw_compiled_prediction (c);
      char *why = got ? compare (got, g_ptr_array_index (outs, k), &e) : g_strdup ("no prediction");
      *max_err = MAX (*max_err, e);
      if (why)
        result = g_strdup_printf ("compiled output %u: %s", k, why);
      g_free (why);
    }
  tw_graph_set_outputs (m->graph, (const char *const *) saved);
  return result;
}

static void
count_ops (runner *r, GPtrArray *ops, status st)
{
  for (guint i = 0; i < ops->len; i++)
    {
      const char *op = g_ptr_array_index (ops, i);
      op_count *c = g_hash_table_lookup (r->ops, op);
      if (c == NULL)
        {
          c = g_new0 (op_count, 1);
          g_hash_table_insert (r->ops, g_strdup (op), c);
        }
      c->run++;
      if (st == ST_PASS)
        c->passed++;
      else
        c->failed++;
    }
}

static void
run_case (runner *r, const char *suite, const char *case_dir, const char *name)
{
  g_autofree char *path = g_build_filename (case_dir, "model.onnx", NULL);
  g_autoptr (GError) error = NULL;
  status st = ST_SKIP;
  g_autofree char *why = NULL;
  double max_err = 0;
  Onnx__ModelProto *proto = tw_onnx_read_model_any_opset (path, &error);
  g_autoptr (GPtrArray) ops = proto ? op_types (proto) : g_ptr_array_new ();
  g_autoptr (tw_model) m = NULL;
  GHashTable *weights = NULL;
  if (proto != NULL)
    {
      tw_onnx_import_options opts = { .fixed_inputs = TRUE, .any_opset = TRUE };
      m = tw_onnx_import_model_with (proto, path, &opts, &weights, &error);
      onnx__model_proto__free_unpacked (proto, NULL);
    }
  if (m == NULL)
    {
      why = g_strdup (error->message);
      record_skip (r, name, path, why);
    }
  else
    {
      g_autoptr (tw_params) params = tw_params_new ();
      tw_state_dict_report rep = { 0 };
      g_autoptr (tw_eager) ex = tw_eager_new (m->graph, params, 0, &error);
      if (ex == NULL ||
          !tw_params_load_state_dict (params, weights, NULL, "import", TRUE, &rep, &error))
        why = g_strdup_printf ("weights: %s", error->message);
      tw_state_dict_report_clear (&rep);
      g_autoptr (GDir) d = why ? NULL : g_dir_open (case_dir, 0, NULL);
      g_autoptr (GPtrArray) sets = g_ptr_array_new_with_free_func (g_free);
      for (const char *e; d && (e = g_dir_read_name (d));)
        if (g_str_has_prefix (e, "test_data_set_"))
          g_ptr_array_add (sets, g_build_filename (case_dir, e, NULL));
      g_ptr_array_sort (sets, (GCompareFunc) g_strcmp0);
      if (why == NULL && sets->len == 0)
        why = g_strdup ("no test_data_set_*");
      for (guint k = 0; k < sets->len && why == NULL; k++)
        {
          double e = 0;
          why = run_set (m, params, FALSE, g_ptr_array_index (sets, k), &e);
          max_err = MAX (max_err, e);
          if (why == NULL && r->compiled)
            {
              why = run_set (m, params, TRUE, g_ptr_array_index (sets, k), &e);
              max_err = MAX (max_err, e);
            }
        }
      st = why ? ST_FAIL : ST_PASS;
      count_ops (r, ops, st);
      r->run++;
      if (st == ST_PASS)
        r->passed++;
      else
        r->failed++;
      if (st == ST_FAIL && r->verbose)
        printf ("FAIL %s: %s\n", name, why);
    }
  if (weights)
    g_hash_table_unref (weights);
  if (st == ST_SKIP)
    r->skipped++;

  if (r->json)
    {
      static const char *const names[] = { "pass", "fail", "skip" };
      json_builder_begin_object (r->json);
      json_builder_set_member_name (r->json, "case");
      json_builder_add_string_value (r->json, name);
      json_builder_set_member_name (r->json, "suite");
      json_builder_add_string_value (r->json, suite);
      json_builder_set_member_name (r->json, "status");
      json_builder_add_string_value (r->json, names[st]);
      json_builder_set_member_name (r->json, "ops");
      json_builder_begin_array (r->json);
      for (guint i = 0; i < ops->len; i++)
        json_builder_add_string_value (r->json, g_ptr_array_index (ops, i));
      json_builder_end_array (r->json);
      if (why)
        {
          json_builder_set_member_name (r->json, "reason");
          json_builder_add_string_value (r->json, why);
        }
      if (st != ST_SKIP)
        {
          json_builder_set_member_name (r->json, "max_error");
          json_builder_add_double_value (r->json, max_err);
        }
      json_builder_end_object (r->json);
    }
}

/* ---- the report ------------------------------------------------------------- */

static int
by_name (gconstpointer a, gconstpointer b)
{
  return g_strcmp0 (*(const char *const *) a, *(const char *const *) b);
}

static GHashTable *skips_for_sort;

static int
by_cases (gconstpointer a, gconstpointer b)
{
  const skip_count *x = g_hash_table_lookup (skips_for_sort, *(const char *const *) a);
  const skip_count *y = g_hash_table_lookup (skips_for_sort, *(const char *const *) b);
  if (x->cases != y->cases)
    return y->cases - x->cases;
  return by_name (a, b);
}

static void
print_report (runner *r)
{
  guint n = 0;
  g_autofree const char **ops = (const char **) g_hash_table_get_keys_as_array (r->ops, &n);
  qsort (ops, n, sizeof *ops, by_name);
  printf ("%-28s %5s %6s %6s\n", "op", "run", "passed", "failed");
  for (guint i = 0; i < n; i++)
    {
      const op_count *c = g_hash_table_lookup (r->ops, ops[i]);
      printf ("%-28s %5d %6d %6d\n", ops[i], c->run, c->passed, c->failed);
    }
  int total = r->run + r->skipped;
  printf ("\ncases: %d; run %d, passed %d, failed %d, skipped %d (%.1f %% of run cases pass)\n",
          total, r->run, r->passed, r->failed, r->skipped,
          r->run ? 100.0 * r->passed / r->run : 0.0);
  guint ns = 0;
  g_autofree const char **sk = (const char **) g_hash_table_get_keys_as_array (r->skips, &ns);
  skips_for_sort = r->skips;
  qsort (sk, ns, sizeof *sk, by_cases);
  if (ns > 0)
    printf ("\nskipped, by op refused (a case refusing several ops counts under each):\n");
  for (guint i = 0; i < ns; i++)
    {
      const skip_count *s = g_hash_table_lookup (r->skips, sk[i]);
      printf ("  %s: %d case%s (e.g. %s: %s)\n", sk[i], s->cases, s->cases == 1 ? "" : "s",
              s->example_case, s->example);
    }
}

static void
write_json (runner *r, const char *path)
{
  json_builder_end_array (r->json);
  json_builder_set_member_name (r->json, "totals");
  json_builder_begin_object (r->json);
  const char *const keys[] = { "run", "passed", "failed", "skipped" };
  const int vals[] = { r->run, r->passed, r->failed, r->skipped };
  for (int i = 0; i < 4; i++)
    {
      json_builder_set_member_name (r->json, keys[i]);
      json_builder_add_int_value (r->json, vals[i]);
    }
  json_builder_end_object (r->json);
  json_builder_end_object (r->json);
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autoptr (JsonNode) root = json_builder_get_root (r->json);
  json_generator_set_root (gen, root);
  json_generator_set_pretty (gen, TRUE);
  g_autoptr (GError) error = NULL;
  if (!json_generator_to_file (gen, path, &error))
    fprintf (stderr, "onnx-conformance: %s\n", error->message);
}

static GHashTable *
read_list (const char *path, GError **error)
{
  g_autofree char *text = NULL;
  if (!g_file_get_contents (path, &text, NULL, error))
    return NULL;
  GHashTable *set = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  for (int i = 0; lines[i]; i++)
    {
      char *l = g_strstrip (lines[i]);
      if (l[0] != '\0' && l[0] != '#')
        g_hash_table_add (set, g_strdup (l));
    }
  return set;
}

int
main (int argc, char **argv)
{
  setlocale (LC_ALL, "");
  setlocale (LC_NUMERIC, "C");
  gboolean compiled = FALSE, verbose = FALSE, expect_pass = FALSE;
  g_autofree char *filter = NULL, *list = NULL, *json = NULL, *data = NULL;
  GOptionEntry entries[] = {
    { "compiled", 0, 0, G_OPTION_ARG_NONE, &compiled, "Also run each case compiled", NULL },
    { "verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose, "Print each failed case", NULL },
    { "filter", 0, 0, G_OPTION_ARG_STRING, &filter, "Only cases whose suite/name contains S", "S" },
    { "list", 0, 0, G_OPTION_ARG_FILENAME, &list,
      "Only the cases named in FILE (one a line, suite/case or case; # comments)", "FILE" },
    { "json", 0, 0, G_OPTION_ARG_FILENAME, &json, "Write every case's result to OUT", "OUT" },
    { "data", 0, 0, G_OPTION_ARG_FILENAME, &data,
      "The test data (default /usr/share/libonnx-testdata/data)", "DIR" },
    { "expect-pass", 0, 0, G_OPTION_ARG_NONE, &expect_pass,
      "Exit with status 1 when a case that ran failed", NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- ONNX's backend test cases in twb");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &error) || argc > 1)
    {
      fprintf (stderr, "onnx-conformance: %s\n", error ? error->message : "unexpected arguments");
      return 2;
    }
  const char *root = data ? data : "/usr/share/libonnx-testdata/data";
  runner r = {
    .compiled = compiled,
    .verbose = verbose,
    .expect_pass = expect_pass,
    .filter = filter,
    .ops = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free),
    .skips = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, skip_count_free),
  };
  if (list && (r.list = read_list (list, &error)) == NULL)
    {
      fprintf (stderr, "onnx-conformance: %s\n", error->message);
      return 2;
    }
  if (json)
    {
      r.json = json_builder_new ();
      json_builder_begin_object (r.json);
      json_builder_set_member_name (r.json, "cases");
      json_builder_begin_array (r.json);
    }
  tw_ops_init ();
  int found = 0;
  for (guint s = 0; s < G_N_ELEMENTS (suites); s++)
    {
      g_autofree char *dir = g_build_filename (root, suites[s], NULL);
      g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
      if (d == NULL)
        continue;
      g_autoptr (GPtrArray) cases = g_ptr_array_new_with_free_func (g_free);
      for (const char *e; (e = g_dir_read_name (d));)
        g_ptr_array_add (cases, g_strdup (e));
      g_ptr_array_sort (cases, by_name);
      for (guint i = 0; i < cases->len; i++)
        {
          const char *c = g_ptr_array_index (cases, i);
          g_autofree char *name = g_strdup_printf ("%s/%s", suites[s], c);
          g_autofree char *case_dir = g_build_filename (dir, c, NULL);
          if (!g_file_test (case_dir, G_FILE_TEST_IS_DIR))
            continue;
          found++;
          if (filter && !strstr (name, filter))
            continue;
          /* Listed as "suite/case", or as the case alone (then in any suite). */
          if (r.list && !g_hash_table_contains (r.list, name) && !g_hash_table_contains (r.list, c))
            continue;
          if (r.list)
            {
              g_hash_table_remove (r.list, name);
              g_hash_table_remove (r.list, c);
            }
          run_case (&r, suites[s], case_dir, name);
        }
    }
  if (found == 0)
    {
      fprintf (stderr, "onnx-conformance: no test cases under %s\n", root);
      return 2;
    }
  print_report (&r);
  if (r.json)
    {
      write_json (&r, json);
      g_object_unref (r.json);
    }
  /* A listed case that no longer imports, or is not there, is a regression too. */
  int missing = 0;
  if (r.list)
    {
      GHashTableIter it;
      gpointer key;
      g_hash_table_iter_init (&it, r.list);
      while (g_hash_table_iter_next (&it, &key, NULL))
        {
          printf ("listed but not found: %s\n", (const char *) key);
          missing++;
        }
    }
  int failed = r.failed + (r.list ? r.skipped + missing : 0);
  g_hash_table_unref (r.ops);
  g_hash_table_unref (r.skips);
  if (r.list)
    g_hash_table_unref (r.list);
  return expect_pass && failed > 0 ? 1 : 0;
}
