/* test-feeds.c — executors fed several named inputs (tw_eager_forward_feeds,
 * tw_compiled_run_feeds), inputs of fixed shape ("batch": false, 0-d too),
 * the constant op, and the errors for a missing, unknown or misshapen feed.
 * Values are checked against float64 computations by hand. */
#include "engine/compile/compiled.h"
#include "engine/eager.h"

#include <math.h>
#include <string.h>

/* f32 sums and products of a few terms: within a few ulps of float64. */
#define TOL 1e-6

static tw_node *
fixed_input (tw_graph *g, const char *id, tw_dtype dt, int ndim, const int64_t *shape)
{
  tw_node *n = tw_graph_add_input (g, id, dt, ndim, shape, "other");
  tw_attrs_set_bool (n->attrs, "batch", FALSE);
  return n;
}

static tw_tensor *
filled (int ndim, const int64_t *shape, double base, double step)
{
  tw_tensor *t = tw_tensor_new (TW_F32, ndim, shape);
  for (int64_t i = 0, n = tw_tensor_numel (t); i < n; i++)
    tw_tensor_f32 (t)[i] = (float) (base + step * (double) i);
  return t;
}

/* The graph's first output after one inference run with feeds, eager or
 * compiled (a new reference), or NULL with error. */
static tw_tensor *
run (tw_graph *g, tw_params *params, gboolean compiled, const tw_feed *feeds, int n, GError **error)
{
  if (compiled)
    {
      g_autoptr (tw_compiled) c = tw_compiled_new (g, params, 0, error);
      if (c == NULL || !tw_compiled_run_feeds (c, TW_PROGRAM_INFER, feeds, n, 0, error))
        return NULL;
      return tw_tensor_clone (tw_compiled_prediction (c));
    }
  g_autoptr (tw_eager) ex = tw_eager_new (g, params, 0, error);
  if (ex == NULL || !tw_eager_forward_feeds (ex, feeds, n, FALSE, FALSE, 0, error))
    return NULL;
  return tw_tensor_clone (tw_eager_prediction (ex));
}

static gboolean
bits_equal (const tw_tensor *a, const tw_tensor *b)
{
  return tw_tensor_nbytes (a) == tw_tensor_nbytes (b)
         && memcmp (tw_tensor_data ((tw_tensor *) a), tw_tensor_data ((tw_tensor *) b),
                    tw_tensor_nbytes (a)) == 0;
}

static void
check_close (const tw_tensor *got, const double *want, int64_t n)
{
  g_assert_cmpint (tw_tensor_numel (got), ==, n);
  for (int64_t i = 0; i < n; i++)
    g_assert_cmpfloat_with_epsilon (tw_tensor_get_flat (got, i), want[i],
                                    TOL * (1 + fabs (want[i])));
}

/* y = (a - b) with a [N, 3] (data) and b [N, 3] (other). */
static void
test_two_inputs (gconstpointer data)
{
  gboolean compiled = GPOINTER_TO_INT (data);
  g_autoptr (tw_graph) g = tw_graph_new ();
  tw_graph_add_input (g, "a", TW_F32, 1, (int64_t[]){ 3 }, "data");
  tw_graph_add_input (g, "b", TW_F32, 1, (int64_t[]){ 3 }, "other");
  tw_graph_add (g, "y", "sub", NULL, "a", "b", NULL);
  tw_graph_set_outputs (g, (const char *const[]){ "y", NULL });
  g_assert_cmpint (tw_graph_infer (g), ==, 0);
  g_autoptr (tw_params) params = tw_params_new ();
  int64_t shape[] = { 2, 3 };
  g_autoptr (tw_tensor) a = filled (2, shape, 1.5, 0.25);
  g_autoptr (tw_tensor) b = filled (2, shape, -2.0, 0.5);
  /* Fed in the other order than the graph lists them: names decide. */
  tw_feed feeds[] = { { "b", b }, { "a", a } };
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_tensor) y = run (g, params, compiled, feeds, 2, &error);
  g_assert_no_error (error);
  g_assert_cmpint (y->ndim, ==, 2);
  g_assert_cmpint (y->shape[0], ==, 2);
  double want[6];
  for (int i = 0; i < 6; i++)
    want[i] = (1.5 + 0.25 * i) - (-2.0 + 0.5 * i);
  check_close (y, want, 6);
}

/* y = (a + b) * c * s: a, b [N, 2, 3], c [2, 3] fixed, s 0-d fixed. */
static void
test_three_inputs_fixed (gconstpointer data)
{
  gboolean compiled = GPOINTER_TO_INT (data);
  g_autoptr (tw_graph) g = tw_graph_new ();
  int64_t per[] = { 2, 3 };
  tw_graph_add_input (g, "a", TW_F32, 2, per, "data");
  tw_graph_add_input (g, "b", TW_F32, 2, per, "other");
  fixed_input (g, "c", TW_F32, 2, per);
  fixed_input (g, "s", TW_F32, 0, NULL);
  tw_graph_add (g, "ab", "add", NULL, "a", "b", NULL);
  tw_graph_add (g, "abc", "mul", NULL, "ab", "c", NULL);
  tw_graph_add (g, "y", "mul", NULL, "abc", "s", NULL);
  tw_graph_set_outputs (g, (const char *const[]){ "y", NULL });
  g_assert_cmpint (tw_graph_infer (g), ==, 0);
  /* The fixed inputs' shapes are exactly theirs: no batch dimension. */
  g_assert_cmpint (tw_graph_find (g, "c")->out_info[0].ndim, ==, 2);
  g_assert_cmpint (tw_graph_find (g, "s")->out_info[0].ndim, ==, 0);
  g_autoptr (tw_params) params = tw_params_new ();
  int64_t shape[] = { 4, 2, 3 };
  g_autoptr (tw_tensor) a = filled (3, shape, 0.5, 0.125);
  g_autoptr (tw_tensor) b = filled (3, shape, 1.0, -0.0625);
  g_autoptr (tw_tensor) c = filled (2, per, -1.0, 0.375);
  g_autoptr (tw_tensor) s = filled (0, NULL, 2.5, 0);
  tw_feed feeds[] = { { "a", a }, { "b", b }, { "c", c }, { "s", s } };
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_tensor) y = run (g, params, compiled, feeds, 4, &error);
  g_assert_no_error (error);
  g_assert_cmpint (y->ndim, ==, 3);
  g_assert_cmpint (y->shape[0], ==, 4);
  double want[24];
  for (int i = 0; i < 24; i++)
    want[i] = ((0.5 + 0.125 * i) + (1.0 - 0.0625 * i)) * (-1.0 + 0.375 * (i % 6)) * 2.5;
  check_close (y, want, 24);
}

/* A graph of fixed inputs only, and a constant: y = x + k, k = [10, 20, 30]
 * (i64 through the constant's f32 store, then cast to f32 for the add). */
static void
test_constant (gconstpointer data)
{
  gboolean compiled = GPOINTER_TO_INT (data);
  g_autoptr (tw_graph) g = tw_graph_new ();
  int64_t shape[] = { 2, 3 }, kshape[] = { 3 };
  fixed_input (g, "x", TW_F32, 2, shape);
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_ints (a, "shape", 1, kshape);
  tw_attrs_set_string (a, "dtype", "i64");
  tw_graph_add (g, "k", "constant", a, NULL);
  tw_attrs_free (a);
  a = tw_attrs_new ();
  tw_attrs_set_string (a, "to", "f32");
  tw_graph_add (g, "kf", "cast", a, "k", NULL);
  tw_attrs_free (a);
  tw_graph_add (g, "y", "add", NULL, "x", "kf", NULL);
  tw_graph_set_outputs (g, (const char *const[]){ "y", NULL });
  g_assert_cmpint (tw_graph_infer (g), ==, 0);
  g_assert_cmpint (tw_graph_find (g, "k")->out_info[0].dtype, ==, TW_I64);
  g_autoptr (tw_params) params = tw_params_new ();
  g_autoptr (GError) error = NULL;
  {
    /* The executor creates the buffer (zeros); the values are set after. */
    g_autoptr (tw_eager) ex = tw_eager_new (g, params, 0, &error);
    g_assert_no_error (error);
  }
  tw_param *p = tw_params_get (params, "k.value");
  g_assert_nonnull (p);
  g_assert_false (p->trainable);
  for (int i = 0; i < 3; i++)
    tw_tensor_f32 (p->value)[i] = 10.0f * (float) (i + 1);
  g_autoptr (tw_tensor) x = filled (2, shape, 0.25, 0.5);
  tw_feed feeds[] = { { "x", x } };
  g_autoptr (tw_tensor) y = run (g, params, compiled, feeds, 1, &error);
  g_assert_no_error (error);
  double want[6];
  for (int i = 0; i < 6; i++)
    want[i] = 0.25 + 0.5 * i + 10.0 * (i % 3 + 1);
  check_close (y, want, 6);
}

/* A feed missing, one for no input, one of the wrong shape: refused, named. */
static void
test_errors (gconstpointer data)
{
  gboolean compiled = GPOINTER_TO_INT (data);
  g_autoptr (tw_graph) g = tw_graph_new ();
  int64_t per[] = { 3 };
  tw_graph_add_input (g, "a", TW_F32, 1, per, "data");
  fixed_input (g, "w", TW_F32, 1, per);
  tw_graph_add (g, "y", "mul", NULL, "a", "w", NULL);
  tw_graph_set_outputs (g, (const char *const[]){ "y", NULL });
  g_assert_cmpint (tw_graph_infer (g), ==, 0);
  g_autoptr (tw_params) params = tw_params_new ();
  int64_t shape[] = { 2, 3 }, bad[] = { 4 };
  g_autoptr (tw_tensor) a = filled (2, shape, 1, 1);
  g_autoptr (tw_tensor) w = filled (1, per, 1, 1);
  g_autoptr (tw_tensor) wbad = filled (1, bad, 1, 1);

  g_autoptr (GError) e1 = NULL;
  tw_feed missing[] = { { "a", a } };
  g_assert_null (run (g, params, compiled, missing, 1, &e1));
  g_assert_error (e1, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT);
  g_assert_nonnull (strstr (e1->message, "'w'"));

  g_autoptr (GError) e2 = NULL;
  tw_feed unknown[] = { { "a", a }, { "w", w }, { "nope", w } };
  g_assert_null (run (g, params, compiled, unknown, 3, &e2));
  g_assert_error (e2, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT);
  g_assert_nonnull (strstr (e2->message, "'nope'"));

  g_autoptr (GError) e3 = NULL;
  tw_feed misshapen[] = { { "a", a }, { "w", wbad } };
  g_assert_null (run (g, params, compiled, misshapen, 2, &e3));
  g_assert_error (e3, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT);
  g_assert_nonnull (strstr (e3->message, "'w'"));
}

/* An inference nobody watches frees inner values as it goes: a chain
 * x -> a = x + x -> b = a * a -> c = b - x (x read twice, a diamond through
 * it) gives the same output as with every value kept, the inner values are
 * gone afterwards and the peak is lower; kept on request, and always for a
 * training forward. */
static void
test_free_early (void)
{
  g_autoptr (tw_graph) g = tw_graph_new ();
  tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]){ 4096 }, "data");
  tw_graph_add (g, "a", "add", NULL, "x", "x", NULL);
  tw_graph_add (g, "b", "mul", NULL, "a", "a", NULL);
  tw_graph_add (g, "c", "sub", NULL, "b", "x", NULL);
  tw_graph_set_outputs (g, (const char *const[]){ "c", NULL });
  g_assert_cmpint (tw_graph_infer (g), ==, 0);
  g_autoptr (tw_params) params = tw_params_new ();
  g_autoptr (tw_tensor) x = filled (2, (int64_t[]){ 8, 4096 }, -1.0, 1.0 / 4096);
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_eager) ex = tw_eager_new (g, params, 0, &error);
  g_assert_no_error (error);
  tw_feed feed = { "x", x };

  tw_eager_set_keep_values (ex, TRUE);
  g_assert_true (tw_eager_forward_feeds (ex, &feed, 1, FALSE, FALSE, 0, &error));
  g_autoptr (tw_tensor) kept = tw_tensor_clone (tw_eager_prediction (ex));
  g_assert_nonnull (tw_eager_value (ex, "a"));
  g_assert_nonnull (tw_eager_value (ex, "b"));
  size_t peak_kept = tw_eager_peak_bytes (ex);
  tw_eager_release (ex);

  tw_eager_set_keep_values (ex, FALSE);
  tw_eager_reset_peak (ex);
  g_assert_true (tw_eager_forward_feeds (ex, &feed, 1, FALSE, FALSE, 0, &error));
  g_assert_null (tw_eager_value (ex, "a"));
  g_assert_null (tw_eager_value (ex, "b"));
  g_assert_null (tw_eager_value (ex, "x"));
  g_assert_true (bits_equal (tw_eager_prediction (ex), kept));
  /* x, a and b at once at most (b and x while c runs), against all four. */
  g_assert_cmpuint (tw_eager_peak_bytes (ex), <, peak_kept);
  tw_eager_release (ex);

  g_assert_true (tw_eager_forward_feeds (ex, &feed, 1, FALSE, TRUE, 0, &error));
  g_assert_nonnull (tw_eager_value (ex, "a"));
  g_assert_nonnull (tw_eager_value (ex, "b"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  static const char *const modes[] = { "eager", "compiled" };
  for (int c = 0; c < 2; c++)
    {
      g_autofree char *p1 = g_strdup_printf ("/engine/feeds/%s/two-inputs", modes[c]);
      g_autofree char *p2 = g_strdup_printf ("/engine/feeds/%s/three-inputs-fixed", modes[c]);
      g_autofree char *p3 = g_strdup_printf ("/engine/feeds/%s/constant", modes[c]);
      g_autofree char *p4 = g_strdup_printf ("/engine/feeds/%s/errors", modes[c]);
      g_test_add_data_func (p1, GINT_TO_POINTER (c), test_two_inputs);
      g_test_add_data_func (p2, GINT_TO_POINTER (c), test_three_inputs_fixed);
      g_test_add_data_func (p3, GINT_TO_POINTER (c), test_constant);
      g_test_add_data_func (p4, GINT_TO_POINTER (c), test_errors);
    }
  g_test_add_func ("/engine/feeds/eager/free-early", test_free_early);
  return g_test_run ();
}
