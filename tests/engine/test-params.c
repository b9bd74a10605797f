/* test-params.c — the parameter store and parameter initialisation. */
#include "engine/params.h"

#include <math.h>
#include <string.h>

static tw_tensor *
filled (int ndim, const int64_t *shape, float v)
{
  tw_tensor *t = tw_tensor_new (TW_F32, ndim, shape);
  tw_tensor_fill (t, v);
  return t;
}

static void
test_store (void)
{
  g_autoptr (tw_params) p = tw_params_new ();
  g_autoptr (tw_tensor) w = filled (2, (int64_t[]) { 3, 4 }, 1.0f);
  g_autoptr (tw_tensor) b = filled (1, (int64_t[]) { 3 }, 2.0f);
  g_autoptr (tw_tensor) rm = filled (1, (int64_t[]) { 3 }, 0.0f);

  tw_param *ew = tw_params_set (p, "fc1.weight", w, TRUE);
  tw_param *eb = tw_params_set (p, "fc1.bias", b, TRUE);
  tw_param *er = tw_params_set (p, "bn.running_mean", rm, FALSE);
  g_assert_cmpint (tw_params_count (p), ==, 3);
  g_assert_true (tw_params_at (p, 0) == ew);
  g_assert_true (tw_params_at (p, 1) == eb);
  g_assert_true (tw_params_at (p, 2) == er);
  g_assert_true (tw_params_get (p, "fc1.bias") == eb);
  g_assert_null (tw_params_get (p, "fc2.bias"));
  g_assert_cmpstr (ew->name, ==, "fc1.weight");

  /* The value is referenced, not copied; trainable entries get a zero gradient. */
  g_assert_true (ew->value == w);
  g_assert_cmpint (w->refcount, ==, 2);
  g_assert_nonnull (ew->grad);
  g_assert_true (tw_tensor_same_shape (ew->grad, w));
  g_assert_cmpfloat (tw_tensor_f32 (ew->grad)[11], ==, 0.0f);
  g_assert_null (er->grad);
  g_assert_null (ew->state[0]);

  g_assert_cmpint (tw_params_numel (p, FALSE), ==, 12 + 3 + 3);
  g_assert_cmpint (tw_params_numel (p, TRUE), ==, 12 + 3);

  /* Same name and shape: the existing entry, its value, gradient and state stay. */
  tw_tensor_f32 (ew->grad)[0] = 5.0f;
  ew->state[0] = tw_tensor_zeros_like (w);
  g_autoptr (tw_tensor) w_same = filled (2, (int64_t[]) { 3, 4 }, 9.0f);
  g_assert_true (tw_params_set (p, "fc1.weight", w_same, TRUE) == ew);
  g_assert_true (ew->value == w);
  g_assert_cmpint (w_same->refcount, ==, 1);
  g_assert_cmpfloat (tw_tensor_f32 (ew->grad)[0], ==, 5.0f);
  g_assert_nonnull (ew->state[0]);

  /* A changed shape replaces the entry in place: new value, new zero
   * gradient, no optimizer state; the order is kept. */
  g_autoptr (tw_tensor) w2 = filled (2, (int64_t[]) { 5, 4 }, 3.0f);
  tw_param *ew2 = tw_params_set (p, "fc1.weight", w2, TRUE);
  g_assert_true (tw_params_at (p, 0) == ew2);
  g_assert_true (ew2->value == w2);
  g_assert_cmpint (w->refcount, ==, 1);
  g_assert_cmpint (ew2->grad->shape[0], ==, 5);
  g_assert_cmpfloat (tw_tensor_f32 (ew2->grad)[0], ==, 0.0f);
  g_assert_null (ew2->state[0]);
  g_assert_cmpint (tw_params_numel (p, TRUE), ==, 20 + 3);

  /* A buffer that becomes trainable gains a gradient, and loses it again. */
  tw_params_set (p, "bn.running_mean", rm, TRUE);
  g_assert_nonnull (er->grad);
  tw_params_set (p, "bn.running_mean", rm, FALSE);
  g_assert_null (er->grad);

  /* zero_grad clears every gradient. */
  tw_tensor_fill (ew2->grad, 7.0);
  tw_tensor_fill (eb->grad, -1.0);
  tw_params_zero_grad (p);
  for (int i = 0; i < 20; i++)
    g_assert_cmpfloat (tw_tensor_f32 (ew2->grad)[i], ==, 0.0f);
  for (int i = 0; i < 3; i++)
    g_assert_cmpfloat (tw_tensor_f32 (eb->grad)[i], ==, 0.0f);

  /* Removal keeps the order of the others and drops the store's reference. */
  g_assert_true (tw_params_remove (p, "fc1.bias"));
  g_assert_false (tw_params_remove (p, "fc1.bias"));
  g_assert_cmpint (b->refcount, ==, 1);
  g_assert_cmpint (tw_params_count (p), ==, 2);
  g_assert_null (tw_params_get (p, "fc1.bias"));
  g_assert_cmpstr (tw_params_at (p, 0)->name, ==, "fc1.weight");
  g_assert_cmpstr (tw_params_at (p, 1)->name, ==, "bn.running_mean");
  g_assert_true (tw_params_get (p, "bn.running_mean") == er);

  /* Re-adding puts it at the end. */
  tw_params_set (p, "fc1.bias", b, TRUE);
  g_assert_cmpstr (tw_params_at (p, 2)->name, ==, "fc1.bias");
}

static tw_param_spec
spec_of (tw_init init, int64_t rows, int64_t cols)
{
  tw_param_spec s = { 0 };
  s.suffix = "weight";
  tw_tinfo_set (&s.info, TW_F32, 2, (int64_t[]) { rows, cols });
  s.init = init;
  s.fan_in = cols;
  s.fan_out = rows;
  s.trainable = TRUE;
  return s;
}

static void
test_init_determinism (void)
{
  int64_t shape[] = { 16, 32 };
  tw_param_spec s = spec_of (TW_INIT_HE_NORMAL, 16, 32);
  g_autoptr (tw_tensor) a = tw_tensor_new (TW_F32, 2, shape);
  g_autoptr (tw_tensor) b = tw_tensor_new (TW_F32, 2, shape);
  g_autoptr (tw_tensor) c = tw_tensor_new (TW_F32, 2, shape);
  g_autoptr (tw_tensor) d = tw_tensor_new (TW_F32, 2, shape);

  /* Same (seed, name): the same bits, whatever else was initialised between. */
  tw_param_init (a, &s, 42, "fc1.weight");
  tw_param_init (c, &s, 42, "fc2.weight");
  tw_param_init (b, &s, 42, "fc1.weight");
  g_assert_cmpmem (tw_tensor_f32 (a), tw_tensor_nbytes (a), tw_tensor_f32 (b),
                   tw_tensor_nbytes (b));

  /* Another name or another seed: other values (every element differs: equal
   * floats from independent draws are vanishingly rare). */
  tw_param_init (d, &s, 43, "fc1.weight");
  int same_name = 0, same_seed = 0;
  for (int i = 0; i < 16 * 32; i++)
    {
      same_name += tw_tensor_f32 (a)[i] == tw_tensor_f32 (c)[i];
      same_seed += tw_tensor_f32 (a)[i] == tw_tensor_f32 (d)[i];
    }
  g_assert_cmpint (same_name, ==, 0);
  g_assert_cmpint (same_seed, ==, 0);

  /* Element i comes from counter i: a larger tensor under the same name starts
   * with the same values, and an f64 tensor gets the same numbers. */
  g_autoptr (tw_tensor) big = tw_tensor_new (TW_F32, 2, (int64_t[]) { 20, 32 });
  tw_param_init (big, &s, 42, "fc1.weight");
  g_assert_cmpmem (tw_tensor_f32 (a), tw_tensor_nbytes (a), tw_tensor_f32 (big),
                   tw_tensor_nbytes (a));
  g_autoptr (tw_tensor) a64 = tw_tensor_new (TW_F64, 2, shape);
  tw_param_init (a64, &s, 42, "fc1.weight");
  for (int i = 0; i < 16 * 32; i++)
    g_assert_cmpfloat (tw_tensor_f64 (a64)[i], ==, (double) tw_tensor_f32 (a)[i]);
}

typedef struct
{
  tw_init init;
  const char *label;
  gboolean normal;
  double scale;   /* uniform: bound; normal: std */
} init_case;

static void
test_init_stats (void)
{
  /* 400 × 500: fan_in 500, fan_out 400, n = 200000 samples per init. */
  const int64_t rows = 400, cols = 500, n = rows * cols;
  const double fi = (double) cols, fo = (double) rows;
  const init_case cases[] = {
    { TW_INIT_UNIFORM_FAN_IN, "uniform_fan_in", FALSE, 1.0 / sqrt (fi) },
    { TW_INIT_HE_UNIFORM, "he_uniform", FALSE, sqrt (6.0 / fi) },
    { TW_INIT_XAVIER_UNIFORM, "xavier_uniform", FALSE, sqrt (6.0 / (fi + fo)) },
    { TW_INIT_HE_NORMAL, "he_normal", TRUE, sqrt (2.0 / fi) },
    { TW_INIT_XAVIER_NORMAL, "xavier_normal", TRUE, sqrt (2.0 / (fi + fo)) },
    { TW_INIT_NORMAL, "normal", TRUE, 1.0 },
  };

  g_autoptr (tw_tensor) t = tw_tensor_new (TW_F32, 2, (int64_t[]) { rows, cols });
  for (guint k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      const init_case *c = &cases[k];
      tw_param_spec s = spec_of (c->init, rows, cols);
      tw_param_init (t, &s, 7, c->label);
      const float *x = tw_tensor_f32 (t);
      double sum = 0, sum2 = 0, maxabs = 0;
      for (int64_t i = 0; i < n; i++)
        {
          sum += x[i];
          sum2 += (double) x[i] * x[i];
          maxabs = MAX (maxabs, fabs (x[i]));
        }
      double mean = sum / n;
      double std = sqrt (sum2 / n - mean * mean);
      double want_std = c->normal ? c->scale : c->scale / sqrt (3.0);
      g_test_message ("%s: mean %.3g std %.5g (want %.5g) max |x| %.4g", c->label, mean, std,
                      want_std, maxabs);

      /* The sample mean has standard error std/sqrt(n); allow 5 of them
       * (a false failure has probability below 1e-6, and the seed is fixed). */
      g_assert_cmpfloat (fabs (mean), <, 5.0 * want_std / sqrt ((double) n));
      /* The sample std has relative standard error sqrt((kurtosis − 1)/(4n)):
       * 0.0016 for a normal (kurtosis 3), 0.001 for a uniform (1.8) at this n;
       * 2 % is over 10 of them. */
      g_assert_cmpfloat (fabs (std / want_std - 1.0), <, 0.02);
      if (c->normal)
        {
          /* P(|z| > 6) ≈ 2e-9 per sample: none of 200000 should be there, and
           * some of them beyond 3 sigma (0.27 % of them) must be. */
          g_assert_cmpfloat (maxabs, <, 6.0 * c->scale);
          g_assert_cmpfloat (maxabs, >, 3.0 * c->scale);
        }
      else
        {
          /* Inside the bound (float rounding of lo + (hi − lo)·u can reach it,
           * never pass it), and reaching its last 1 %: P(miss) = 0.99^200000. */
          g_assert_cmpfloat (maxabs, <=, (float) c->scale);
          g_assert_cmpfloat (maxabs, >, 0.99 * c->scale);
        }
    }

  tw_param_spec zeros = spec_of (TW_INIT_ZEROS, rows, cols);
  tw_param_init (t, &zeros, 7, "z");
  for (int64_t i = 0; i < n; i++)
    g_assert_cmpfloat (tw_tensor_f32 (t)[i], ==, 0.0f);
  tw_param_spec ones = spec_of (TW_INIT_ONES, rows, cols);
  tw_param_init (t, &ones, 7, "o");
  for (int64_t i = 0; i < n; i++)
    g_assert_cmpfloat (tw_tensor_f32 (t)[i], ==, 1.0f);

  /* nn.Linear with no inputs: bound 0, as PyTorch does for its bias. */
  g_autoptr (tw_tensor) bias = tw_tensor_new (TW_F32, 1, (int64_t[]) { 8 });
  tw_param_spec s0 = spec_of (TW_INIT_UNIFORM_FAN_IN, 8, 0);
  tw_param_init (bias, &s0, 7, "fc0.bias");
  for (int i = 0; i < 8; i++)
    g_assert_cmpfloat (tw_tensor_f32 (bias)[i], ==, 0.0f);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/params/store", test_store);
  g_test_add_func ("/engine/params/init/determinism", test_init_determinism);
  g_test_add_func ("/engine/params/init/stats", test_init_stats);
  return g_test_run ();
}
