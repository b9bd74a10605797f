/* test-ops-reduce-more.c — the reductions, index ops and losses ONNX graphs
 * use: min, prod, logsumexp (engine/ops/reduce.c, reduce-more.c), argmin,
 * trilu, gather_elements, cumsum, hardmax, scatter_elements, gather_nd,
 * scatter_nd, eye_like, topk (index-more.c), nll_loss
 * (loss-more.c), and their import (onnx/onnx-import-reduce.c).
 *
 * - ONNX's own node cases (libonnx-testdata, checked in as
 *   data/onnx-node-ops-reduce.json by data/gen-onnx-node-ops-reduce.py)
 *   through the importer, every graph input fixed and fed by name, run
 *   eagerly and compared as ONNX's backend tests compare (rtol 1e-3,
 *   atol 1e-7; integers exactly); the cases twb refuses are listed with the
 *   reason the importer must give; three "twb_" cases of the generator's
 *   own check the folding of Range and Size;
 * - forward against float64 references written per output element, in f32
 *   and f64, on shapes with size-1 dims and negative axes;
 * - backward against central finite differences in float64;
 * - a network of the differentiable ones trained by the eager and the
 *   compiled executors: the same losses and weights;
 * - errors that name the index, the target or the shape.
 */
#include "opcheck.h"

#include "engine/eager.h"
#include "engine/model.h"
#include "engine/params.h"
#include "engine/train.h"
#include "onnx/onnx-import.h"

#include <math.h>
#include <string.h>

/* f32 kernels accumulate in double and round once: a few ulps of f32. */
#define TOL_F32 1e-6
/* f64 against a float64 reference summed in another order. */
#define TOL_F64 1e-12
/* Central differences in float64 of smooth functions (opcheck.c). */
#define TOL_GRAD 1e-6

/* ---- ONNX's node cases through the importer ----------------------------------------------- */

/* Cases twb refuses, with what the importer's message must contain. */
static const struct
{
  const char *prefix;
  const char *needle;
} refused[] = {
  /* Range's inputs are graph inputs: no fixed output shape. */
  { "test_range_", "computed at run time" },
  /* An empty input (a 0 x 5 matrix): twb's input nodes have positive dims. */
  { "test_tril_zero", "must be positive" },
  { "test_triu_zero", "must be positive" },
  /* float16, bfloat16 and strings are dtypes twb lacks. */
  { "test_castlike_BFLOAT16", "" },
  { "test_castlike_FLOAT16", "" },
  { "test_castlike_DOUBLE_to_FLOAT16", "" },
  { "test_castlike_FLOAT_to_FLOAT16", "" },
  { "test_castlike_FLOAT_to_BFLOAT16", "" },
  { "test_castlike_FLOAT_to_STRING", "" },
  { "test_castlike_STRING", "" },
  /* "...ii->...i": a diagonal. */
  { "test_einsum_batch_diagonal", "equation" },
};

static const char *
refusal_for (const char *name)
{
  for (guint i = 0; i < G_N_ELEMENTS (refused); i++)
    if (g_str_has_prefix (name, refused[i].prefix))
      return refused[i].needle;
  return NULL;
}

static tw_tensor *
tensor_from_b64 (const char *b64, char **name)
{
  gsize len = 0;
  g_autofree guchar *raw = g_base64_decode (b64, &len);
  Onnx__TensorProto *t = onnx__tensor_proto__unpack (NULL, len, raw);
  g_assert_nonnull (t);
  g_autoptr (GError) error = NULL;
  tw_tensor *x = tw_onnx_tensor_to_tw (t, t->name, &error);
  g_assert_no_error (error);
  if (name)
    *name = g_strdup (t->name);
  onnx__tensor_proto__free_unpacked (t, NULL);
  return x;
}

/* ONNX's assert_allclose (rtol 1e-3, atol 1e-7, NaN equal to NaN); integers
 * exactly.  NULL when close, else a description. */
static char *
compare (const tw_tensor *got, const tw_tensor *want)
{
  g_autofree char *sg = tw_shape_to_string (got->ndim, got->shape);
  g_autofree char *sw = tw_shape_to_string (want->ndim, want->shape);
  if (got->dtype != want->dtype || !tw_tensor_same_shape (got, want))
    return g_strdup_printf ("%s%s, want %s%s", tw_dtype_name (got->dtype), sg,
                            tw_dtype_name (want->dtype), sw);
  for (int64_t i = 0; i < tw_tensor_numel (want); i++)
    {
      double g = tw_tensor_get_flat (got, i), w = tw_tensor_get_flat (want, i);
      gboolean ok = tw_dtype_is_float (want->dtype)
                      ? (isnan (w) ? isnan (g) : (g == w || fabs (g - w) <= 1e-7 + 1e-3 * fabs (w)))
                      : g == w;
      if (!ok)
        return g_strdup_printf ("element %" G_GINT64_FORMAT ": %.9g, want %.9g", i, g, w);
    }
  return NULL;
}

/* Imports and runs one case: NULL when every output matches, else why not
 * (an import refusal starts with "refused: "). */
static char *
run_case (JsonObject *c)
{
  const char *name = json_object_get_string_member (c, "case");
  gsize len = 0;
  g_autofree guchar *raw = g_base64_decode (json_object_get_string_member (c, "model"), &len);
  Onnx__ModelProto *proto = onnx__model_proto__unpack (NULL, len, raw);
  g_assert_nonnull (proto);
  tw_onnx_import_options opts = { .fixed_inputs = TRUE, .any_opset = TRUE };
  g_autoptr (GError) error = NULL;
  GHashTable *weights = NULL;
  g_autofree char *fname = g_strdup_printf ("%s.onnx", name);
  g_autoptr (tw_model) m = tw_onnx_import_model_with (proto, fname, &opts, &weights, &error);
  onnx__model_proto__free_unpacked (proto, NULL);
  if (m == NULL)
    return g_strdup_printf ("refused: %s", error->message);
  g_autoptr (GHashTable) w = weights;
  g_autoptr (tw_params) params = tw_params_new ();
  g_autoptr (tw_eager) ex = tw_eager_new (m->graph, params, 0, &error);
  g_assert_no_error (error);
  tw_state_dict_report rep = { 0 };
  g_assert_true (tw_params_load_state_dict (params, w, NULL, "import", TRUE, &rep, &error));
  tw_state_dict_report_clear (&rep);

  JsonArray *ins = json_object_get_array_member (c, "inputs");
  JsonArray *outs = json_object_get_array_member (c, "outputs");
  guint n_in = json_array_get_length (ins);
  g_autoptr (GPtrArray) tensors = g_ptr_array_new_with_free_func ((GDestroyNotify) tw_tensor_unref);
  g_autofree tw_feed *feeds = g_new0 (tw_feed, MAX (n_in, 1));
  guint k = 0;
  for (int i = 0; i < tw_graph_n_nodes (m->graph) && k < n_in; i++)
    {
      tw_node *node = tw_graph_node (m->graph, i);
      if (strcmp (node->op_name, "input") != 0)
        continue;
      tw_tensor *t = tensor_from_b64 (json_array_get_string_element (ins, k), NULL);
      g_ptr_array_add (tensors, t);
      feeds[k].input = node->id;
      feeds[k++].tensor = t;
    }
  g_assert_cmpuint (k, ==, n_in);
  if (!tw_eager_forward_feeds (ex, feeds, (int) n_in, FALSE, FALSE, 0, &error))
    return g_strdup_printf ("run: %s", error->message);
  const char *const *refs = tw_graph_outputs (m->graph);
  for (guint o = 0; o < json_array_get_length (outs); o++)
    {
      g_autoptr (tw_tensor) want = tensor_from_b64 (json_array_get_string_element (outs, o), NULL);
      g_assert_nonnull (refs[o]);
      tw_tensor *got = tw_eager_value (ex, refs[o]);
      g_assert_nonnull (got);
      g_autofree char *why = compare (got, want);
      if (why)
        return g_strdup_printf ("output %u: %s", o, why);
    }
  return NULL;
}

static void
test_onnx_cases (void)
{
  g_autofree char *path = g_build_filename (TW_TEST_DATA_DIR, "onnx-node-ops-reduce.json", NULL);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  g_assert_true (json_parser_load_from_file (parser, path, &error));
  JsonArray *cases = json_object_get_array_member (json_node_get_object (json_parser_get_root (parser)),
                                                   "cases");
  g_assert_cmpuint (json_array_get_length (cases), >=, 200);
  guint passed = 0, n_refused = 0;
  g_autoptr (GString) bad = g_string_new (NULL);
  for (guint i = 0; i < json_array_get_length (cases); i++)
    {
      JsonObject *c = json_array_get_object_element (cases, i);
      const char *name = json_object_get_string_member (c, "case");
      /* A case written with its attribute-like input as a constant too
       * ("@const"): as it is, it is refused (the output's shape depends on
       * the value, unknown at import). */
      g_autofree char *const_name = g_strdup_printf ("%s@const", name);
      gboolean has_const = FALSE;
      for (guint j = i + 1; j < MIN (i + 2, json_array_get_length (cases)); j++)
        has_const |= strcmp (json_object_get_string_member (json_array_get_object_element (cases, j),
                                                            "case"), const_name) == 0;
      const char *needle = has_const ? "computed at run time" : refusal_for (name);
      g_autofree char *why = run_case (c);
      g_auto (GStrv) base = g_strsplit (name, "@", 2);
      if (needle && why && g_str_has_prefix (why, "refused: ") && strstr (why, needle)
          && strstr (why, base[0]))
        n_refused++;
      else if (needle)
        g_string_append_printf (bad, "%s: should be refused (\"%s\"), got %s\n", name, needle,
                                why ? why : "a pass");
      else if (why)
        g_string_append_printf (bad, "%s (%s): %s\n", name, json_object_get_string_member (c, "op"),
                                why);
      else
        passed++;
    }
  if (bad->len)
    g_error ("ONNX node cases:\n%s", bad->str);
  g_test_message ("%u ONNX node cases pass, %u refused as expected", passed, n_refused);
}

/* ---- float64 references ------------------------------------------------------------------ */

static tw_tensor *
run1 (const char *op, const tw_attrs *a, tw_tensor *const *in, int n_in)
{
  tw_tensor *out[1];
  twt_run_guarded (op, a, in, n_in, out, NULL);
  return out[0];
}

static tw_attrs *
axes_attrs (int n, const int64_t *axes, gboolean keep)
{
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_ints (a, "axes", n, axes);
  tw_attrs_set_bool (a, "keepdim", keep);
  return a;
}

/* Reference reduction: mode 0 min, 1 prod, 2 logsumexp (naive, in long
 * double), over the dims in mask of x [nd, shape]; y shaped without them. */
static tw_tensor *
ref_reduce (int mode, const tw_tensor *x, const gboolean *mask, gboolean keep)
{
  int64_t oshape[TW_MAX_DIMS];
  int on = 0;
  for (int d = 0; d < x->ndim; d++)
    if (!mask[d])
      oshape[on++] = x->shape[d];
    else if (keep)
      oshape[on++] = 1;
  tw_tensor *y = tw_tensor_new (TW_F64, on, oshape);
  int64_t nout = tw_tensor_numel (y);
  for (int64_t o = 0; o < nout; o++)
    {
      /* the multi-index of o over the kept dims */
      int64_t kidx[TW_MAX_DIMS], r = o;
      for (int d = x->ndim - 1; d >= 0; d--)
        if (!mask[d])
          {
            kidx[d] = r % x->shape[d];
            r /= x->shape[d];
          }
      long double acc = mode == 0 ? INFINITY : mode == 1 ? 1.0L : 0.0L;
      for (int64_t i = 0; i < tw_tensor_numel (x); i++)
        {
          int64_t q = i;
          gboolean mine = TRUE;
          for (int d = x->ndim - 1; d >= 0; d--)
            {
              if (!mask[d] && q % x->shape[d] != kidx[d])
                mine = FALSE;
              q /= x->shape[d];
            }
          if (!mine)
            continue;
          long double v = tw_tensor_get_flat (x, i);
          if (mode == 0)
            acc = v < acc ? v : acc;
          else if (mode == 1)
            acc *= v;
          else
            acc += expl (v);
        }
      tw_tensor_f64 (y)[o] = (double) (mode == 2 ? logl (acc) : acc);
    }
  return y;
}

static void
test_reductions (void)
{
  static const struct
  {
    int nd;
    int64_t shape[4];
    int na;
    int64_t axes[3];
  } cases[] = {
    { 3, { 3, 1, 5 }, 1, { -1 } },  { 3, { 2, 3, 4 }, 2, { 0, 2 } }, { 2, { 4, 7 }, 0, { 0 } },
    { 4, { 2, 3, 1, 5 }, 2, { 1, -1 } }, { 1, { 9 }, 1, { 0 } },   { 3, { 2, 3, 4 }, 1, { 1 } },
  };
  static const char *const ops[] = { "min", "prod", "logsumexp" };
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    for (int mode = 0; mode < 3; mode++)
      for (int keep = 0; keep < 2; keep++)
        {
          g_autoptr (tw_tensor) x = twt_uniform (TW_F64, cases[c].nd, cases[c].shape, 100 + c,
                                                 mode == 1 ? 0.5 : -3, mode == 1 ? 1.5 : 3);
          if (mode == 2 && c == 0)
            tw_tensor_f64 (x)[2] = 700;       /* exp (700) overflows a double's naive sum in f32 */
          g_autoptr (tw_tensor) x32 = tw_tensor_cast (x, TW_F32);
          g_autoptr (tw_tensor) x64 = tw_tensor_cast (x32, TW_F64);
          gboolean mask[TW_MAX_DIMS] = { FALSE };
          for (int d = 0; d < cases[c].nd; d++)
            mask[d] = cases[c].na == 0;
          for (int i = 0; i < cases[c].na; i++)
            mask[(cases[c].axes[i] + cases[c].nd) % cases[c].nd] = TRUE;
          tw_attrs *a = axes_attrs (cases[c].na, cases[c].axes, keep);
          g_autoptr (tw_tensor) ref = ref_reduce (mode, x64, mask, keep);
          g_autoptr (tw_tensor) y64 = run1 (ops[mode], a, &x64, 1);
          g_autoptr (tw_tensor) y32 = run1 (ops[mode], a, &x32, 1);
          g_assert_true (tw_tensor_same_shape (y64, ref));
          g_assert_cmpint (y32->dtype, ==, TW_F32);
          double e64 = twt_max_error (y64, ref), e32 = twt_max_error (y32, ref);
          if (!(e64 <= TOL_F64) || !(e32 <= TOL_F32))
            g_error ("%s case %u keep %d: error %.3g (f64), %.3g (f32)", ops[mode], c, keep, e64,
                     e32);
          /* distinct values away from ties for min's gradient; the 700 is not differentiable
           * by finite differences at h = 1e-6 relative */
          if (!(mode == 2 && c == 0))
            {
              double ge = twt_grad_check (ops[mode], a, &x, 1, (gboolean[]) { TRUE }, 0, NULL);
              if (!(ge < TOL_GRAD))
                g_error ("%s case %u: gradient error %.3g", ops[mode], c, ge);
            }
          tw_attrs_free (a);
        }
  /* prod's gradient with zeros in a group: one zero (the product of the
   * others there, 0 elsewhere), two zeros (0 everywhere). */
  int64_t shape[2] = { 3, 4 };
  g_autoptr (tw_tensor) x = twt_uniform (TW_F64, 2, shape, 7, 0.5, 2);
  tw_tensor_f64 (x)[1] = 0;
  tw_tensor_f64 (x)[8] = 0, tw_tensor_f64 (x)[10] = 0;
  tw_attrs *a = axes_attrs (1, (int64_t[]) { 1 }, FALSE);
  double ge = twt_grad_check ("prod", a, &x, 1, (gboolean[]) { TRUE }, 0, NULL);
  g_assert_cmpfloat (ge, <, TOL_GRAD);
  tw_attrs_free (a);
}

/* ---- index ops ----------------------------------------------------------------------------- */

static void
test_argmin (void)
{
  /* ties: the first or the last; a NaN counts as the minimum */
  double v[] = { 3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, NAN };
  int64_t shape[2] = { 3, 4 };
  g_autoptr (tw_tensor) x = tw_tensor_from_data (TW_F64, 2, shape, v);
  static const struct
  {
    int64_t axis;
    gboolean last, keep;
    int64_t want[4];
    int n;
  } cases[] = {
    { 1, FALSE, TRUE, { 1, 2, 3 }, 3 },
    { -1, TRUE, FALSE, { 3, 2, 3 }, 3 },
    { 0, FALSE, TRUE, { 0, 0, 1, 2 }, 4 },
    { 0, TRUE, FALSE, { 0, 0, 1, 2 }, 4 },
  };
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    for (int f32 = 0; f32 < 2; f32++)
      {
        tw_attrs *a = tw_attrs_new ();
        tw_attrs_set_int (a, "axis", cases[c].axis);
        tw_attrs_set_bool (a, "select_last_index", cases[c].last);
        tw_attrs_set_bool (a, "keepdims", cases[c].keep);
        g_autoptr (tw_tensor) xin = tw_tensor_cast (x, f32 ? TW_F32 : TW_F64);
        g_autoptr (tw_tensor) y = run1 ("argmin", a, &xin, 1);
        g_assert_cmpint (y->dtype, ==, TW_I64);
        g_assert_cmpint (y->ndim, ==, cases[c].keep ? 2 : 1);
        g_assert_cmpint (tw_tensor_numel (y), ==, cases[c].n);
        for (int i = 0; i < cases[c].n; i++)
          g_assert_cmpint (tw_tensor_i64 (y)[i], ==, cases[c].want[i]);
        tw_attrs_free (a);
      }
}

static void
test_trilu_cumsum_hardmax (void)
{
  int64_t shape[3] = { 2, 3, 5 };
  g_autoptr (tw_tensor) x = twt_randn (TW_F64, 3, shape, 21);
  for (int upper = 0; upper < 2; upper++)
    for (int64_t k = -3; k <= 5; k += 2)
      {
        tw_attrs *a = tw_attrs_new ();
        tw_attrs_set_bool (a, "upper", upper);
        tw_attrs_set_int (a, "k", k);
        g_autoptr (tw_tensor) y = run1 ("trilu", a, &x, 1);
        for (int64_t i = 0; i < tw_tensor_numel (x); i++)
          {
            int64_t r = (i / 5) % 3, col = i % 5;
            gboolean keep = upper ? col - r >= k : col - r <= k;
            g_assert_cmpfloat (tw_tensor_f64 (y)[i], ==, keep ? tw_tensor_f64 (x)[i] : 0.0);
          }
        twt_assert_grad ("trilu", a, &x, 1, (gboolean[]) { TRUE }, TOL_GRAD);
        tw_attrs_free (a);
      }
  for (int axis = -3; axis < 3; axis++)
    for (int mode = 0; mode < 4; mode++)
      {
        gboolean excl = mode & 1, rev = mode & 2;
        tw_attrs *a = tw_attrs_new ();
        tw_attrs_set_int (a, "axis", axis);
        tw_attrs_set_bool (a, "exclusive", excl);
        tw_attrs_set_bool (a, "reverse", rev);
        int ax = (axis + 3) % 3;
        int64_t st = ax == 2 ? 1 : ax == 1 ? 5 : 15, L = shape[ax];
        g_autoptr (tw_tensor) x32 = tw_tensor_cast (x, TW_F32);
        g_autoptr (tw_tensor) y = run1 ("cumsum", a, &x, 1);
        g_autoptr (tw_tensor) y32 = run1 ("cumsum", a, &x32, 1);
        g_autoptr (tw_tensor) ref = tw_tensor_new_like (x);
        for (int64_t i = 0; i < tw_tensor_numel (x); i++)
          {
            int64_t pos = (i / st) % L;
            double s = 0;
            for (int64_t t = 0; t < L; t++)
              {
                gboolean in = rev ? (excl ? t > pos : t >= pos) : (excl ? t < pos : t <= pos);
                if (in)
                  s += tw_tensor_f64 (x)[i + (t - pos) * st];
              }
            tw_tensor_f64 (ref)[i] = s;
          }
        g_assert_cmpfloat (twt_max_error (y, ref), <=, TOL_F64);
        g_assert_cmpfloat (twt_max_error (y32, ref), <=, TOL_F32);
        twt_assert_grad ("cumsum", a, &x, 1, (gboolean[]) { TRUE }, TOL_GRAD);
        tw_attrs_free (a);
      }
  /* k and the axis fed as an integer scalar input, as ONNX graphs do: the
   * same as the attribute, gradients included */
  for (int64_t k = -2; k <= 2; k += 2)
    {
      int64_t one = 1;
      g_autoptr (tw_tensor) kt = tw_tensor_from_data (TW_I64, 0, &one, &k);
      tw_attrs *a = twt_attrs_int (k == 0 ? "k" : "axis", 0);
      tw_attrs *b = twt_attrs_int (k == 0 ? "k" : "axis", k);
      const char *op = k == 0 ? "trilu" : "cumsum";
      tw_tensor *in2[2] = { x, kt };
      g_autoptr (tw_tensor) y2 = run1 (op, a, in2, 2);
      g_autoptr (tw_tensor) y1 = run1 (op, b, &x, 1);
      g_assert_cmpfloat (twt_max_error (y2, y1), ==, 0.0);
      twt_assert_grad (op, a, in2, 2, ((gboolean[]) { TRUE, FALSE }), TOL_GRAD);
      tw_attrs_free (a);
      tw_attrs_free (b);
    }
  /* cumsum of integers stays integer */
  int64_t iv[4] = { 1, -2, 3, 40 }, n4 = 4;
  g_autoptr (tw_tensor) xi = tw_tensor_from_data (TW_I64, 1, &n4, iv);
  g_autoptr (tw_tensor) yi = run1 ("cumsum", NULL, &xi, 1);
  g_assert_cmpint (yi->dtype, ==, TW_I64);
  g_assert_cmpint (tw_tensor_i64 (yi)[3], ==, 42);
  /* hardmax: one 1 per row at the first maximum */
  double hv[6] = { 1, 3, 3, -1, -2, -1 };
  int64_t hs[2] = { 2, 3 };
  g_autoptr (tw_tensor) h = tw_tensor_from_data (TW_F64, 2, hs, hv);
  g_autoptr (tw_tensor) hy = run1 ("hardmax", NULL, &h, 1);
  double hw[6] = { 0, 1, 0, 1, 0, 0 };
  for (int i = 0; i < 6; i++)
    g_assert_cmpfloat (tw_tensor_f64 (hy)[i], ==, hw[i]);
}

static void
test_gather_elements (void)
{
  int64_t ds[3] = { 2, 3, 4 };
  g_autoptr (tw_tensor) data = twt_randn (TW_F64, 3, ds, 31);
  for (int axis = -3; axis < 3; axis++)
    {
      int ax = (axis + 3) % 3;
      int64_t is[3] = { 2, 2, 3 };
      is[ax] = 5;                              /* more picks than the axis has: repeats */
      g_autoptr (tw_tensor) idx = twt_randint (3, is, 40 + ax, ds[ax]);
      tw_tensor_i64 (idx)[1] -= ds[ax];        /* a negative index counts from the end */
      tw_attrs *a = twt_attrs_int ("axis", axis);
      tw_tensor *in[2] = { data, idx };
      g_autoptr (tw_tensor) y = run1 ("gather_elements", a, in, 2);
      g_assert_cmpint (y->ndim, ==, 3);
      for (int64_t e = 0; e < tw_tensor_numel (idx); e++)
        {
          int64_t p[3] = { e / (is[1] * is[2]), (e / is[2]) % is[1], e % is[2] };
          int64_t j = tw_tensor_i64 (idx)[e];
          p[ax] = j < 0 ? j + ds[ax] : j;
          g_assert_cmpfloat (tw_tensor_f64 (y)[e], ==,
                             tw_tensor_f64 (data)[(p[0] * ds[1] + p[1]) * ds[2] + p[2]]);
        }
      twt_assert_grad ("gather_elements", a, in, 2, ((gboolean[]) { TRUE, FALSE }), TOL_GRAD);
      tw_attrs_free (a);
    }
}

/* scatter_elements (distinct indices per row, so that "none" has one
 * writer per position), gather_nd (batch dims, negative indices), eye_like. */
static void
test_scatter_gather_nd_eye (void)
{
  int64_t ds[2] = { 3, 5 }, is[2] = { 3, 2 };
  g_autoptr (tw_tensor) data = twt_randn (TW_F64, 2, ds, 71);
  g_autoptr (tw_tensor) up = twt_randn (TW_F64, 2, is, 72);
  int64_t iv[6] = { 4, 0, 1, -2, 2, 2 };         /* row 2 repeats 2: add and mul only */
  g_autoptr (tw_tensor) idx = tw_tensor_from_data (TW_I64, 2, is, iv);
  static const char *const reds[] = { "none", "add", "mul" };
  for (int r = 0; r < 3; r++)
    {
      tw_attrs *a = twt_attrs_int ("axis", -1);
      tw_attrs_set_string (a, "reduction", reds[r]);
      tw_tensor *in[3] = { data, idx, up };
      g_autoptr (tw_tensor) y = run1 ("scatter_elements", a, in, 3);
      g_autoptr (tw_tensor) ref = tw_tensor_clone (data);
      for (int e = 0; e < 6; e++)
        {
          int64_t o = (e / 2) * 5 + (iv[e] + 5) % 5;
          double u = tw_tensor_f64 (up)[e], *v = &tw_tensor_f64 (ref)[o];
          if (r == 0 && e >= 4)
            continue;                               /* row 2 checked below */
          *v = r == 0 ? u : r == 1 ? *v + u : *v * u;
        }
      if (r == 0)
        tw_tensor_f64 (ref)[12] = tw_tensor_f64 (y)[12];  /* one of the two writes */
      g_assert_cmpfloat (twt_max_error (y, ref), <=, TOL_F64);
      if (r == 0)
        g_assert_true (tw_tensor_f64 (y)[12] == tw_tensor_f64 (up)[4]
                       || tw_tensor_f64 (y)[12] == tw_tensor_f64 (up)[5]);
      if (r == 1)
        {
          twt_assert_grad ("scatter_elements", a, in, 3, ((gboolean[]) { TRUE, FALSE, TRUE }),
                           TOL_GRAD);
          /* none: distinct indices */
          int64_t jv[6] = { 4, 0, 1, -2, 2, 3 };
          g_autoptr (tw_tensor) jdx = tw_tensor_from_data (TW_I64, 2, is, jv);
          tw_attrs_set_string (a, "reduction", "none");
          tw_tensor *jn[3] = { data, jdx, up };
          twt_assert_grad ("scatter_elements", a, jn, 3, ((gboolean[]) { TRUE, FALSE, TRUE }),
                           TOL_GRAD);
        }
      tw_attrs_free (a);
    }

  /* gather_nd: data [2, 3, 4], one batch dim, tuples of 1 (rows) and of 2 */
  int64_t gs[3] = { 2, 3, 4 };
  g_autoptr (tw_tensor) g = twt_randn (TW_F64, 3, gs, 73);
  for (int b = 0; b < 2; b++)
    for (int64_t k = 1; k <= 2; k++)
      {
        int64_t ish[3] = { 2, 2, k };
        int64_t ivals[8] = { 1, -1, 0, 2, 2, 3, 1, 0 };
        g_autoptr (tw_tensor) gi = tw_tensor_from_data (TW_I64, 3, ish, ivals);
        if (b == 0)
          for (int i = 0; i < 4 * k; i++)
            tw_tensor_i64 (gi)[i] = ivals[i] % 2;    /* dim 0 has 2 */
        tw_attrs *a = twt_attrs_int ("batch_dims", b);
        tw_tensor *in[2] = { g, gi };
        g_autoptr (tw_tensor) y = run1 ("gather_nd", a, in, 2);
        int64_t slice = 1;
        for (int d = b + (int) k; d < 3; d++)
          slice *= gs[d];
        g_assert_cmpint (tw_tensor_numel (y), ==, 4 * slice);
        for (int t = 0; t < 4; t++)
          {
            int64_t pos[3] = { 0, 0, 0 };
            if (b == 1)
              pos[0] = t / 2;
            for (int j = 0; j < k; j++)
              {
                int64_t v = tw_tensor_i64 (gi)[t * k + j];
                pos[b + j] = v < 0 ? v + gs[b + j] : v;
              }
            int64_t o = (pos[0] * 3 + pos[1]) * 4 + pos[2];
            for (int64_t j = 0; j < slice; j++)
              g_assert_cmpfloat (tw_tensor_f64 (y)[t * slice + j], ==, tw_tensor_f64 (g)[o + j]);
          }
        twt_assert_grad ("gather_nd", a, in, 2, ((gboolean[]) { TRUE, FALSE }), TOL_GRAD);
        tw_attrs_free (a);
      }

  /* scatter_nd: rows of a [4, 3] (tuples of 1, one negative) and single
   * elements (tuples of 2), written, added and multiplied */
  int64_t sds[2] = { 4, 3 };
  g_autoptr (tw_tensor) sd = twt_randn (TW_F64, 2, sds, 75);
  for (int64_t k = 1; k <= 2; k++)
    for (int r = 0; r < 3; r++)
      {
        int64_t ish[2] = { 2, k }, ush[2] = { 2, 3 };
        int64_t rows[2] = { 1, -1 }, elems[4] = { 0, 2, 3, -3 };
        g_autoptr (tw_tensor) si = tw_tensor_from_data (TW_I64, 2, ish, k == 1 ? rows : elems);
        g_autoptr (tw_tensor) su = twt_randn (TW_F64, k == 1 ? 2 : 1, ush, 76 + k);
        tw_attrs *a = tw_attrs_new ();
        tw_attrs_set_string (a, "reduction", reds[r]);
        tw_tensor *in[3] = { sd, si, su };
        g_autoptr (tw_tensor) y = run1 ("scatter_nd", a, in, 3);
        g_autoptr (tw_tensor) ref = tw_tensor_clone (sd);
        for (int t = 0; t < 2; t++)
          for (int j = 0; j < (k == 1 ? 3 : 1); j++)
            {
              int64_t o = k == 1 ? ((rows[t] + 4) % 4) * 3 + j
                                 : elems[2 * t] * 3 + (elems[2 * t + 1] + 3) % 3;
              double u = tw_tensor_f64 (su)[t * (k == 1 ? 3 : 1) + j], *v = &tw_tensor_f64 (ref)[o];
              *v = r == 0 ? u : r == 1 ? *v + u : *v * u;
            }
        g_assert_cmpfloat (twt_max_error (y, ref), <=, TOL_F64);
        if (r < 2)
          twt_assert_grad ("scatter_nd", a, in, 3, ((gboolean[]) { TRUE, FALSE, TRUE }), TOL_GRAD);
        tw_attrs_free (a);
      }

  /* eye_like: a 3 x 5 of ones on diagonal k, in x's dtype or "to" */
  g_autoptr (tw_tensor) e = twt_randn (TW_F32, 2, ds, 74);
  for (int64_t k = -3; k <= 5; k++)
    {
      tw_attrs *a = twt_attrs_int ("k", k);
      if (k == 1)
        tw_attrs_set_string (a, "to", "i64");
      g_autoptr (tw_tensor) y = run1 ("eye_like", a, &e, 1);
      g_assert_cmpint (y->dtype, ==, k == 1 ? TW_I64 : TW_F32);
      for (int64_t i = 0; i < 15; i++)
        g_assert_cmpfloat (tw_tensor_get_flat (y, i), ==, (i % 5) - (i / 5) == k ? 1.0 : 0.0);
      tw_attrs_free (a);
    }
}

static void assert_run_error (const char *op, const tw_attrs *a, tw_tensor *const *in, int n_in,
                              const char *needle);

/* topk: values and indices along either axis, largest and smallest, ties
 * to the lower index; the values' gradient back to where they came from. */
static void
test_topk (void)
{
  double v[12] = { 3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8 };
  int64_t shape[2] = { 2, 6 };
  g_autoptr (tw_tensor) x = tw_tensor_from_data (TW_F64, 2, shape, v);
  static const struct
  {
    int64_t k, axis;
    gboolean largest;
    double want[6];
    int64_t idx[6];
    int n;
  } cases[] = {
    { 3, 1, TRUE, { 9, 5, 4, 8, 6, 5 }, { 5, 4, 2, 5, 1, 2 }, 6 },
    { 2, -1, FALSE, { 1, 1, 2, 3 }, { 1, 3, 0, 3 }, 4 },
    { 1, 0, TRUE, { 3, 6, 5, 3, 5, 9 }, { 0, 1, 1, 1, 0, 0 }, 6 },
  };
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    for (int f32 = 0; f32 < 2; f32++)
      {
        tw_attrs *a = twt_attrs_int ("k", cases[c].k);
        tw_attrs_set_int (a, "axis", cases[c].axis);
        tw_attrs_set_bool (a, "largest", cases[c].largest);
        g_autoptr (tw_tensor) xin = tw_tensor_cast (x, f32 ? TW_F32 : TW_F64);
        tw_tensor *out[2];
        twt_run_guarded ("topk", a, &xin, 1, out, NULL);
        g_assert_cmpint (tw_tensor_numel (out[0]), ==, cases[c].n);
        g_assert_cmpint (out[1]->dtype, ==, TW_I64);
        for (int i = 0; i < cases[c].n; i++)
          {
            g_assert_cmpfloat (tw_tensor_get_flat (out[0], i), ==, cases[c].want[i]);
            g_assert_cmpint (tw_tensor_i64 (out[1])[i], ==, cases[c].idx[i]);
          }
        tw_tensor_unref (out[0]);
        tw_tensor_unref (out[1]);
        tw_attrs_free (a);
      }
  int64_t rs[3] = { 2, 7, 3 };
  g_autoptr (tw_tensor) r = twt_randn (TW_F64, 3, rs, 81);
  tw_attrs *a = twt_attrs_int ("k", 4);
  tw_attrs_set_int (a, "axis", 1);
  twt_assert_grad ("topk", a, &r, 1, (gboolean[]) { TRUE }, TOL_GRAD);
  tw_attrs_set_bool (a, "largest", FALSE);
  twt_assert_grad ("topk", a, &r, 1, (gboolean[]) { TRUE }, TOL_GRAD);
  tw_attrs_free (a);
  /* k beyond a symbolic dim: inferred, then refused on the concrete shape */
  tw_tinfo xi;
  tw_tinfo_set (&xi, TW_F32, 2, (int64_t[]) { TW_DIM_N, 4 });
  tw_tinfo yo[2];
  g_autoptr (GError) error = NULL;
  tw_attrs *b = twt_attrs_int ("k", 3);
  tw_attrs_set_int (b, "axis", 0);
  g_assert_true (twt_infer ("topk", b, &xi, 1, yo, &error));
  g_assert_cmpint (yo[0].dims[0], ==, 3);
  int64_t s2[2] = { 2, 4 };
  g_autoptr (tw_tensor) two = twt_randn (TW_F32, 2, s2, 82);
  assert_run_error ("topk", b, &two, 1, "k = 3 for axis 0 of f32[2, 4]");
  tw_attrs_free (b);
}

/* ---- nll_loss ------------------------------------------------------------------------------ */

static void
test_nll_loss (void)
{
  static const char *const reds[] = { "none", "sum", "mean" };
  int64_t xs[3] = { 3, 5, 4 }, ts[2] = { 3, 4 }, ws = 5;
  g_autoptr (tw_tensor) x = twt_randn (TW_F64, 3, xs, 51);
  g_autoptr (tw_tensor) t = twt_randint (2, ts, 52, 5);
  g_autoptr (tw_tensor) w = twt_uniform (TW_F64, 1, &ws, 53, 0.2, 2);
  tw_tensor_i64 (t)[2] = 2, tw_tensor_i64 (t)[7] = 2;     /* ignored below */
  for (int r = 0; r < 3; r++)
    for (int wi = 0; wi < 2; wi++)
      for (int ii = 0; ii < 2; ii++)
        {
          tw_attrs *a = tw_attrs_new ();
          tw_attrs_set_string (a, "reduction", reds[r]);
          if (ii)
            tw_attrs_set_int (a, "ignore_index", 2);
          tw_tensor *in[3] = { x, t, w };
          int n_in = wi ? 3 : 2;
          g_autoptr (tw_tensor) y = run1 ("nll_loss", a, in, n_in);
          g_autoptr (tw_tensor) x32 = tw_tensor_cast (x, TW_F32);
          g_autoptr (tw_tensor) w32 = tw_tensor_cast (w, TW_F32);
          tw_tensor *in32[3] = { x32, t, w32 };
          g_autoptr (tw_tensor) y32 = run1 ("nll_loss", a, in32, n_in);
          double s = 0, wsum = 0;
          g_autoptr (tw_tensor) ref = r == 0 ? tw_tensor_new (TW_F64, 2, ts) : tw_tensor_new (TW_F64, 0, NULL);
          for (int64_t p = 0; p < 12; p++)
            {
              int64_t c = tw_tensor_i64 (t)[p], n = p / 4, d = p % 4;
              double wc = ii && c == 2 ? 0 : wi ? tw_tensor_f64 (w)[c] : 1;
              double l = -wc * tw_tensor_f64 (x)[(n * 5 + c) * 4 + d];
              if (r == 0)
                tw_tensor_f64 (ref)[p] = l;
              s += l, wsum += wc;
            }
          if (r > 0)
            tw_tensor_f64 (ref)[0] = r == 1 ? s : s / wsum;
          g_assert_true (tw_tensor_same_shape (y, ref));
          g_assert_cmpfloat (twt_max_error (y, ref), <=, TOL_F64);
          g_assert_cmpfloat (twt_max_error (y32, ref), <=, TOL_F32);
          gboolean wrt[3] = { TRUE, FALSE, FALSE };
          twt_assert_grad ("nll_loss", a, in, n_in, wrt, TOL_GRAD);
          tw_attrs_free (a);
        }
}

/* ---- eager and compiled training ------------------------------------------------------------ */

/* The differentiable ops in one network: the same losses and weights from
 * both executors over a few SGD steps, and the loss falls. */
static const char model_json[] =
  "{ \"format\": \"twb-model\", \"version\": 1, \"name\": \"reduce-more\","
  "  \"graph\": { \"nodes\": ["
  "    { \"id\": \"x\", \"op\": \"input\", \"attrs\": { \"shape\": [4, 6], \"role\": \"data\" } },"
  "    { \"id\": \"y\", \"op\": \"input\", \"attrs\": { \"shape\": [], \"dtype\": \"i64\", \"role\": \"label\" } },"
  "    { \"id\": \"l1\", \"op\": \"linear\", \"inputs\": [\"x\"], \"attrs\": { \"out_features\": 6 } },"
  "    { \"id\": \"cs\", \"op\": \"cumsum\", \"inputs\": [\"l1\"], \"attrs\": { \"axis\": 2, \"exclusive\": true } },"
  "    { \"id\": \"tr\", \"op\": \"trilu\", \"inputs\": [\"cs\"], \"attrs\": { \"upper\": false, \"k\": 1 } },"
  "    { \"id\": \"mn\", \"op\": \"min\", \"inputs\": [\"l1\"], \"attrs\": { \"axes\": [1] } },"
  "    { \"id\": \"ls\", \"op\": \"logsumexp\", \"inputs\": [\"tr\"], \"attrs\": { \"axes\": [-2] } },"
  "    { \"id\": \"sg\", \"op\": \"sigmoid\", \"inputs\": [\"l1\"] },"
  "    { \"id\": \"pr\", \"op\": \"prod\", \"inputs\": [\"sg\"], \"attrs\": { \"axes\": [1] } },"
  "    { \"id\": \"a1\", \"op\": \"add\", \"inputs\": [\"mn\", \"ls\"] },"
  "    { \"id\": \"a2\", \"op\": \"add\", \"inputs\": [\"a1\", \"pr\"] },"
  "    { \"id\": \"fc\", \"op\": \"linear\", \"inputs\": [\"a2\"], \"attrs\": { \"out_features\": 5 } },"
  "    { \"id\": \"loss\", \"op\": \"cross_entropy\", \"inputs\": [\"fc\", \"y\"] }"
  "  ], \"outputs\": [\"fc\"] },"
  "  \"training\": { \"loss\": \"loss\", \"batch_size\": 6, \"seed\": 3,"
  "                \"optimizer\": { \"type\": \"sgd\", \"lr\": 0.1 } } }";

static void
test_eager_compiled (void)
{
  twt_check_train_parity (model_json, "reduce-more", 8, 3, (int64_t[]) { 6, 4, 6 }, 900, 5);
}

/* ---- errors ---------------------------------------------------------------------------------- */

static void
assert_run_error (const char *op, const tw_attrs *a, tw_tensor *const *in, int n_in,
                  const char *needle)
{
  g_autoptr (GError) error = NULL;
  tw_tensor *out[1] = { NULL };
  const tw_op_def *def = tw_op_lookup (op);
  tw_attrs *ra = tw_op_resolve_attrs (def, a, &error);
  g_assert_no_error (error);
  g_assert_false (tw_op_run (def, NULL, ra, in, n_in, out, &error));
  tw_attrs_free (ra);
  g_assert_nonnull (error);
  if (!strstr (error->message, needle))
    g_error ("%s: '%s' lacks '%s'", op, error->message, needle);
}

static void
test_errors (void)
{
  int64_t ds[2] = { 2, 3 };
  g_autoptr (tw_tensor) data = twt_randn (TW_F32, 2, ds, 61);
  g_autoptr (tw_tensor) idx = twt_randint (2, ds, 62, 3);
  tw_tensor_i64 (idx)[4] = 7;
  tw_attrs *a = twt_attrs_int ("axis", 1);
  tw_tensor *in[2] = { data, idx };
  assert_run_error ("gather_elements", a, in, 2, "index 7 at [1, 1] is outside axis 1 of size 3");
  tw_attrs_free (a);

  int64_t ts = 2;
  g_autoptr (tw_tensor) t = twt_randint (1, &ts, 63, 3);
  tw_tensor_i64 (t)[1] = -1;
  tw_tensor *nin[2] = { data, t };
  assert_run_error ("nll_loss", NULL, nin, 2, "target -1 at [1] is outside the 3 classes");

  tw_tinfo x1, tt, w;
  tw_tinfo_set (&x1, TW_F32, 1, (int64_t[]) { 4 });
  twt_assert_infer_error ("trilu", NULL, &x1, 1, "rank 2 or more", "f32[4]");
  tw_tinfo x3;
  tw_tinfo_set (&x3, TW_F32, 3, (int64_t[]) { 2, 5, 4 });
  tw_tinfo_set (&tt, TW_I64, 2, (int64_t[]) { 2, 3 });
  twt_assert_infer_error ("nll_loss", NULL, (tw_tinfo[]) { x3, tt }, 2, "target shaped as x",
                          "i64[2, 3]");
  tw_tinfo_set (&tt, TW_I64, 2, (int64_t[]) { 2, 4 });
  tw_tinfo_set (&w, TW_F32, 1, (int64_t[]) { 4 });
  twt_assert_infer_error ("nll_loss", NULL, (tw_tinfo[]) { x3, tt, w }, 3, "weight f32[5]",
                          "f32[4]");
  tw_attrs *b = axes_attrs (2, (int64_t[]) { 1, -2 }, FALSE);
  twt_assert_infer_error ("prod", b, &x3, 1, "listed twice", NULL);
  tw_attrs_free (b);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  g_test_add_func ("/engine/ops/reduce-more/onnx-cases", test_onnx_cases);
  g_test_add_func ("/engine/ops/reduce-more/reductions", test_reductions);
  g_test_add_func ("/engine/ops/reduce-more/argmin", test_argmin);
  g_test_add_func ("/engine/ops/reduce-more/trilu-cumsum-hardmax", test_trilu_cumsum_hardmax);
  g_test_add_func ("/engine/ops/reduce-more/gather-elements", test_gather_elements);
  g_test_add_func ("/engine/ops/reduce-more/scatter-gather-nd-eye", test_scatter_gather_nd_eye);
  g_test_add_func ("/engine/ops/reduce-more/topk", test_topk);
  g_test_add_func ("/engine/ops/reduce-more/nll-loss", test_nll_loss);
  g_test_add_func ("/engine/ops/reduce-more/eager-compiled", test_eager_compiled);
  g_test_add_func ("/engine/ops/reduce-more/errors", test_errors);
  return g_test_run ();
}
