/* test-tensor-stats.c — the inspector's statistics against a naive float64
 * two-pass computation in this file: NaN / Inf wherever they sit, empty,
 * constant, integer and strided tensors, huge magnitudes, the histogram's
 * bins, and the difference of two tensors (values, and the error naming
 * both shapes when they differ). */
#include "engine/tensor-stats.h"

#include <math.h>
#include <string.h>

/* The compensated sums round once per result; the naive reference sums
 * n ~1e4 terms, ~n · 1e-16 relative to the magnitude of the data, which
 * the offset of 1000 below makes about 1e3 times the std: 1e-9 on std,
 * far less on the mean. */
#define TOL_MEAN 1e-12
#define TOL_STD 1e-9

typedef struct
{
  int64_t finite, nan, inf, zeros;
  double min, max, mean, std;
} ref_stats;

/* Naive float64 two-pass over get_flat, skipping non-finite values. */
static ref_stats
reference (const tw_tensor *t)
{
  ref_stats r = { 0, 0, 0, 0, INFINITY, -INFINITY, 0, 0 };
  int64_t n = tw_tensor_numel (t);
  double sum = 0;
  for (int64_t i = 0; i < n; i++)
    {
      double x = tw_tensor_get_flat (t, i);
      if (isnan (x))
        r.nan++;
      else if (isinf (x))
        r.inf++;
      else
        {
          r.finite++;
          r.zeros += x == 0;
          r.min = MIN (r.min, x);
          r.max = MAX (r.max, x);
          sum += x;
        }
    }
  r.mean = sum / r.finite;
  double ss = 0;
  for (int64_t i = 0; i < n; i++)
    {
      double x = tw_tensor_get_flat (t, i);
      if (isfinite (x))
        ss += (x - r.mean) * (x - r.mean);
    }
  r.std = sqrt (ss / r.finite);
  return r;
}

static void
assert_rel (double got, double want, double tol)
{
  double err = fabs (got - want) / MAX (fabs (want), 1e-300);
  if (!(err <= tol))
    g_error ("got %.17g, want %.17g (relative error %.3g > %.3g)", got, want, err, tol);
}

static void
assert_matches_reference (const tw_tensor *t, const tw_tensor_stats *st)
{
  ref_stats r = reference (t);
  g_assert_cmpint (st->count, ==, tw_tensor_numel (t));
  g_assert_cmpint (st->finite, ==, r.finite);
  g_assert_cmpint (st->nan, ==, r.nan);
  g_assert_cmpint (st->inf, ==, r.inf);
  g_assert_cmpint (st->zeros, ==, r.zeros);
  g_assert_cmpfloat (st->min, ==, r.min);
  g_assert_cmpfloat (st->max, ==, r.max);
  g_assert_cmpfloat (st->abs_max, ==, MAX (fabs (r.min), fabs (r.max)));
  assert_rel (st->mean, r.mean, TOL_MEAN);
  assert_rel (st->std, r.std, TOL_STD);
  int64_t total = 0;
  for (int b = 0; b < st->n_bins; b++)
    total += st->hist[b];
  g_assert_cmpint (total, ==, r.finite);
}

/* 10007 f32 values 1000 + N(0, 1)-ish (sum of uniforms), fixed seed. */
static tw_tensor *
random_f32 (int64_t n, guint32 seed)
{
  tw_tensor *t = tw_tensor_new (TW_F32, 1, (int64_t[]) { n });
  g_autoptr (GRand) rng = g_rand_new_with_seed (seed);
  float *p = tw_tensor_f32 (t);
  for (int64_t i = 0; i < n; i++)
    p[i] = (float) (1000.0 + g_rand_double_range (rng, -1, 1) + g_rand_double_range (rng, -1, 1));
  return t;
}

static void
test_random (void)
{
  g_autoptr (tw_tensor) t = random_f32 (10007, 7);
  tw_tensor_stats st;
  tw_tensor_stats_compute (t, 64, &st);
  assert_matches_reference (t, &st);
  g_assert_cmpint (st.n_bins, ==, 64);
  g_assert_cmpfloat (st.hist_lo, ==, st.min);
  g_assert_cmpfloat (st.hist_hi, ==, st.max);
  /* The max lands in the last (closed) bin, the min in the first. */
  g_assert_cmpint (tw_tensor_stats_bin (&st, st.max), ==, 63);
  g_assert_cmpint (tw_tensor_stats_bin (&st, st.min), ==, 0);
  tw_tensor_stats_clear (&st);
  g_assert_null (st.hist);
}

/* NaN and ±Inf at the first, a middle and the last position: counted, and
 * left out of min / max / mean / std and the histogram. */
static void
test_nan_inf (void)
{
  int64_t n = 101;
  g_autoptr (tw_tensor) t = tw_tensor_new (TW_F32, 1, (int64_t[]) { n });
  float *p = tw_tensor_f32 (t);
  for (int64_t i = 0; i < n; i++)
    p[i] = (float) i - 50;
  p[0] = NAN;
  p[50] = INFINITY;
  p[51] = -INFINITY;
  p[100] = NAN;
  tw_tensor_stats st;
  tw_tensor_stats_compute (t, 10, &st);
  assert_matches_reference (t, &st);
  g_assert_cmpint (st.nan, ==, 2);
  g_assert_cmpint (st.inf, ==, 2);
  g_assert_cmpint (st.finite, ==, 97);
  g_assert_cmpfloat (st.min, ==, -49);   /* p[1] */
  g_assert_cmpfloat (st.max, ==, 49);    /* p[99] */
  g_assert_cmpint (st.zeros, ==, 0);     /* 0 sat at p[50], now Inf */
  tw_tensor_stats_clear (&st);

  /* Only non-finite values: no min, no bins. */
  g_autoptr (tw_tensor) u = tw_tensor_from_data (TW_F64, 1, (int64_t[]) { 3 },
                                                 (double[]) { NAN, INFINITY, NAN });
  tw_tensor_stats_compute (u, 16, &st);
  g_assert_cmpint (st.finite, ==, 0);
  g_assert_cmpint (st.nan, ==, 2);
  g_assert_cmpint (st.inf, ==, 1);
  g_assert_true (isnan (st.min) && isnan (st.mean) && isnan (st.std));
  g_assert_cmpint (st.n_bins, ==, 0);
  g_assert_null (st.hist);
  tw_tensor_stats_clear (&st);
}

static void
test_empty (void)
{
  g_autoptr (tw_tensor) t = tw_tensor_new (TW_F32, 2, (int64_t[]) { 0, 3 });
  tw_tensor_stats st;
  tw_tensor_stats_compute (t, 8, &st);
  g_assert_cmpint (st.count, ==, 0);
  g_assert_cmpint (st.finite, ==, 0);
  g_assert_true (isnan (st.min) && isnan (st.max) && isnan (st.mean) && isnan (st.std));
  g_assert_cmpint (st.n_bins, ==, 0);
  g_assert_null (st.hist);
  tw_tensor_stats_clear (&st);
}

/* A constant tensor: std exactly 0, one bin with everything. */
static void
test_constant (void)
{
  g_autoptr (tw_tensor) t = tw_tensor_new (TW_F32, 2, (int64_t[]) { 7, 9 });
  tw_tensor_fill (t, 2.5);
  tw_tensor_stats st;
  tw_tensor_stats_compute (t, 32, &st);
  g_assert_cmpfloat (st.min, ==, 2.5);
  g_assert_cmpfloat (st.max, ==, 2.5);
  g_assert_cmpfloat (st.mean, ==, 2.5);
  g_assert_cmpfloat (st.std, ==, 0);
  g_assert_cmpint (st.n_bins, ==, 1);
  g_assert_cmpint (st.hist[0], ==, 63);
  g_assert_cmpfloat (st.hist_lo, ==, 2.5);
  g_assert_cmpfloat (st.hist_hi, ==, 2.5);
  tw_tensor_stats_clear (&st);

  /* A 0-d tensor is a constant of one element. */
  g_autoptr (tw_tensor) s = tw_tensor_scalar_f32 (-3);
  tw_tensor_stats_compute (s, 4, &st);
  g_assert_cmpint (st.count, ==, 1);
  g_assert_cmpfloat (st.mean, ==, -3);
  g_assert_cmpfloat (st.abs_max, ==, 3);
  g_assert_cmpint (st.n_bins, ==, 1);
  tw_tensor_stats_clear (&st);
}

/* Integer dtypes; the histogram against the bin formula of the header
 * (bin i covers [lo + i·w, lo + (i+1)·w), the last one closed). */
static void
test_int (void)
{
  const tw_dtype dts[] = { TW_I32, TW_I64, TW_U8 };
  for (guint k = 0; k < G_N_ELEMENTS (dts); k++)
    {
      g_autoptr (tw_tensor) t = tw_tensor_new (dts[k], 2, (int64_t[]) { 10, 25 });
      for (int64_t i = 0; i < 250; i++)
        tw_tensor_set_flat (t, i, (double) ((i * 37) % 101));
      tw_tensor_stats st;
      tw_tensor_stats_compute (t, 10, &st);
      assert_matches_reference (t, &st);
      g_assert_cmpint (st.nan + st.inf, ==, 0);
      g_assert_cmpfloat (st.min, ==, 0);
      g_assert_cmpfloat (st.max, ==, 100);
      int64_t want[10] = { 0 };
      for (int64_t i = 0; i < 250; i++)
        {
          double x = (double) ((i * 37) % 101);
          int b = (int) floor (x / 10);   /* w = 100 / 10 */
          want[MIN (b, 9)]++;
        }
      for (int b = 0; b < 10; b++)
        g_assert_cmpint (st.hist[b], ==, want[b]);
      tw_tensor_stats_clear (&st);
    }
}

/* Values near 1e30 (f32) and 1e300 (f64): the squares of the deviations
 * overflow double without the scaling. */
static void
test_huge (void)
{
  g_autoptr (tw_tensor) t = tw_tensor_new (TW_F32, 1, (int64_t[]) { 1000 });
  for (int i = 0; i < 1000; i++)
    tw_tensor_f32 (t)[i] = i % 2 ? 1e30f : -1e30f;
  tw_tensor_stats st;
  tw_tensor_stats_compute (t, 4, &st);
  g_assert_true (isfinite (st.std));
  assert_rel (st.std, (double) 1e30f, 1e-15);
  g_assert_cmpfloat (fabs (st.mean), <=, 1e30 * 1e-15);
  tw_tensor_stats_clear (&st);

  g_autoptr (tw_tensor) u = tw_tensor_new (TW_F64, 1, (int64_t[]) { 1000 });
  for (int i = 0; i < 1000; i++)
    tw_tensor_f64 (u)[i] = i % 2 ? 1.5e300 : 0.5e300;
  tw_tensor_stats_compute (u, 4, &st);
  assert_rel (st.mean, 1e300, 1e-15);
  assert_rel (st.std, 0.5e300, 1e-15);
  /* max - min = 1e300 < DBL_MAX here; the bins still split 50/50. */
  g_assert_cmpint (st.hist[0], ==, 500);
  g_assert_cmpint (st.hist[3], ==, 500);
  tw_tensor_stats_clear (&st);

  /* min - max beyond DBL_MAX: the bin formula works in halves. */
  g_autoptr (tw_tensor) w = tw_tensor_from_data (TW_F64, 1, (int64_t[]) { 3 },
                                                 (double[]) { -1.5e308, 0, 1.5e308 });
  tw_tensor_stats_compute (w, 2, &st);
  g_assert_cmpint (st.hist[0], ==, 1);
  g_assert_cmpint (st.hist[1], ==, 2);
  g_assert_true (isfinite (st.std));
  tw_tensor_stats_clear (&st);

  /* A sum beyond DBL_MAX: mean (3 · 1e308 + 1.7e308) / 4 = 1.175e308,
   * deviations -0.175e308 (three) and 0.525e308, variance 0.091875e616. */
  g_autoptr (tw_tensor) o = tw_tensor_from_data (TW_F64, 1, (int64_t[]) { 4 },
                                                 (double[]) { 1e308, 1e308, 1e308, 1.7e308 });
  tw_tensor_stats_compute (o, 2, &st);
  assert_rel (st.mean, 1.175e308, 1e-15);
  assert_rel (st.std, sqrt (0.091875) * 1e308, 1e-15);
  tw_tensor_stats_clear (&st);
}

/* Views: a transpose and a stepped slice give the stats of their
 * elements, not of the storage. */
static void
test_strided (void)
{
  g_autoptr (tw_tensor) base = random_f32 (600, 11);
  g_autoptr (tw_tensor) x = tw_tensor_reshape (base, 2, (int64_t[]) { 20, 30 });
  g_autoptr (tw_tensor) tr = tw_tensor_transpose (x, 0, 1);
  g_autoptr (tw_tensor) sl = tw_tensor_slice (x, 1, 3, 30, 4);
  g_assert_false (tw_tensor_is_contiguous (tr));
  g_assert_false (tw_tensor_is_contiguous (sl));
  tw_tensor_stats a, b;
  tw_tensor_stats_compute (tr, 16, &a);
  tw_tensor_stats_compute (x, 16, &b);
  assert_matches_reference (tr, &a);
  g_assert_cmpfloat (a.min, ==, b.min);
  assert_rel (a.mean, b.mean, TOL_MEAN);
  for (int i = 0; i < 16; i++)
    g_assert_cmpint (a.hist[i], ==, b.hist[i]);
  tw_tensor_stats_clear (&a);
  tw_tensor_stats_clear (&b);

  tw_tensor_stats_compute (sl, 8, &a);
  g_assert_cmpint (a.count, ==, 20 * 7);
  assert_matches_reference (sl, &a);
  tw_tensor_stats_clear (&a);
}

static void
test_diff (void)
{
  g_autoptr (tw_tensor) a = tw_tensor_from_data (TW_F32, 2, (int64_t[]) { 2, 3 },
                                                 (float[]) { 1, 2, 3, 4, 5, NAN });
  g_autoptr (tw_tensor) b = tw_tensor_from_data (TW_I32, 2, (int64_t[]) { 2, 3 },
                                                 (int32_t[]) { 1, 0, 5, 4, -5, 0 });
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_tensor) d = tw_tensor_diff (a, b, &error);
  g_assert_no_error (error);
  g_assert_cmpint (d->dtype, ==, TW_F64);
  g_assert_true (tw_tensor_same_shape (d, a));
  const double want[] = { 0, 2, -2, 0, 10 };
  for (int i = 0; i < 5; i++)
    g_assert_cmpfloat (tw_tensor_f64 (d)[i], ==, want[i]);
  g_assert_true (isnan (tw_tensor_f64 (d)[5]));

  tw_tensor_stats st;
  g_assert_true (tw_tensor_stats_diff (a, b, 8, &st, &error));
  g_assert_no_error (error);
  g_assert_cmpint (st.nan, ==, 1);
  g_assert_cmpint (st.zeros, ==, 2);
  g_assert_cmpfloat (st.abs_max, ==, 10);
  assert_rel (st.mean, 2.0, 1e-15);   /* (0 + 2 - 2 + 0 + 10) / 5 */
  tw_tensor_stats_clear (&st);

  /* Shapes differ (same element count): the error names both. */
  g_autoptr (tw_tensor) c = tw_tensor_new (TW_F32, 2, (int64_t[]) { 3, 2 });
  g_assert_false (tw_tensor_stats_diff (a, c, 8, &st, &error));
  g_assert_error (error, TW_TENSOR_STATS_ERROR, TW_TENSOR_STATS_ERROR_SHAPE);
  g_assert_nonnull (strstr (error->message, "[2, 3]"));
  g_assert_nonnull (strstr (error->message, "[3, 2]"));
  g_assert_null (st.hist);
  tw_tensor_stats_clear (&st);
  g_clear_error (&error);
  g_assert_null (tw_tensor_diff (c, a, &error));
  g_assert_error (error, TW_TENSOR_STATS_ERROR, TW_TENSOR_STATS_ERROR_SHAPE);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/tensor-stats/random", test_random);
  g_test_add_func ("/engine/tensor-stats/nan-inf", test_nan_inf);
  g_test_add_func ("/engine/tensor-stats/empty", test_empty);
  g_test_add_func ("/engine/tensor-stats/constant", test_constant);
  g_test_add_func ("/engine/tensor-stats/int", test_int);
  g_test_add_func ("/engine/tensor-stats/huge", test_huge);
  g_test_add_func ("/engine/tensor-stats/strided", test_strided);
  g_test_add_func ("/engine/tensor-stats/diff", test_diff);
  return g_test_run ();
}
