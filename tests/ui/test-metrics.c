/* test-metrics.c — the dashboard's metric series model (ui/twb-metrics.h),
 * without a display: ids and runs, TensorBoard's debiased smoothing against
 * a direct computation, per-column min/max/first/last against brute force
 * over random data with NaNs (growing series, range edges, clears), the
 * nearest point, ranges, and the CSV round trip and its errors. */
#include "ui/twb-metrics.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

/* A random walk with NaN gaps (about 1 in 20) and repeated x (1 in 10). */
static void
fill_random (TwbMetrics *m, guint id, GRand *r, gsize n, double *x)
{
  for (gsize i = 0; i < n; i++)
    {
      if (g_rand_int_range (r, 0, 10) != 0)
        *x += g_rand_double_range (r, 0.01, 3.0);
      double y = g_rand_int_range (r, 0, 20) == 0 ? NAN : g_rand_double_range (r, -5, 5);
      twb_metrics_append (m, id, *x, y);
    }
}

/* The smoothed values of every point, computed directly: the EMA over the
 * finite points with pow() for the debiasing; NaN and inf stay as they are. */
static double *
ref_smoothed (TwbMetrics *m, guint id, double s)
{
  gsize n = twb_metrics_series_len (m, id);
  double *out = g_new (double, n + 1);
  double last = 0;
  int k = 0;
  for (gsize j = 0; j < n; j++)
    {
      double y;
      twb_metrics_get_point (m, id, j, NULL, &y);
      if (!isfinite (y) || s == 0)
        {
          out[j] = y;
          continue;
        }
      last = last * s + (1 - s) * y;
      k++;
      out[j] = last / (1 - pow (s, k));
    }
  return out;
}

static void
test_series (void)
{
  g_autoptr (TwbMetrics) m = twb_metrics_new ();
  guint a = twb_metrics_add_series (m, "run-1", "loss");
  guint b = twb_metrics_add_series (m, "run-2", "loss");
  guint c = twb_metrics_add_series (m, "run-1", "val_loss");
  g_assert_cmpuint (twb_metrics_add_series (m, "run-1", "loss"), ==, a);
  g_assert_cmpuint (a, !=, b);
  g_assert_cmpuint (twb_metrics_find_series (m, "run-1", "val_loss"), ==, c);
  g_assert_cmpuint (twb_metrics_find_series (m, "run-3", "loss"), ==, G_MAXUINT);
  g_assert_cmpuint (twb_metrics_n_series (m), ==, 3);
  g_assert_cmpstr (twb_metrics_series_run (m, b), ==, "run-2");
  g_assert_cmpstr (twb_metrics_series_name (m, c), ==, "val_loss");
  g_auto (GStrv) runs = twb_metrics_list_runs (m);
  g_assert_cmpuint (g_strv_length (runs), ==, 2);
  g_assert_cmpstr (runs[0], ==, "run-1");
  g_assert_cmpstr (runs[1], ==, "run-2");

  double xs[] = { 1, 2, 2, 5 }, ys[] = { 0.5, NAN, 0.25, 0.125 };
  twb_metrics_append_many (m, a, xs, ys, 4);
  g_assert_cmpuint (twb_metrics_series_len (m, a), ==, 4);
  double x, y;
  twb_metrics_get_point (m, a, 1, &x, &y);
  g_assert_cmpfloat (x, ==, 2);
  g_assert_true (isnan (y));
  twb_metrics_get_point (m, a, 3, &x, &y);
  g_assert_cmpfloat (y, ==, 0.125);

  /* Clearing keeps the ids; removing kills them and the run. */
  twb_metrics_append (m, c, 1, 3);
  twb_metrics_clear_run (m, "run-1");
  g_assert_cmpuint (twb_metrics_series_len (m, a), ==, 0);
  g_assert_true (twb_metrics_has_series (m, a));
  g_assert_false (twb_metrics_range (m, a, FALSE, NULL, NULL, NULL, NULL));
  twb_metrics_append (m, a, 0, 1); /* x may start again after a clear */
  g_assert_cmpuint (twb_metrics_series_len (m, a), ==, 1);
  twb_metrics_remove_run (m, "run-1");
  g_assert_false (twb_metrics_has_series (m, a));
  g_assert_false (twb_metrics_has_series (m, c));
  g_assert_true (twb_metrics_has_series (m, b));
  g_assert_null (twb_metrics_series_name (m, a));
  g_assert_cmpuint (twb_metrics_find_series (m, "run-1", "loss"), ==, G_MAXUINT);
  g_auto (GStrv) runs2 = twb_metrics_list_runs (m);
  g_assert_cmpuint (g_strv_length (runs2), ==, 1);
  g_assert_cmpstr (runs2[0], ==, "run-2");
  guint d = twb_metrics_add_series (m, "run-1", "loss");
  g_assert_cmpuint (d, ==, 3); /* ids are never reused */
}

static void
count_changed (TwbMetrics *m, guint series, gpointer data)
{
  GArray *seen = data;
  g_array_append_val (seen, series);
}

static void
test_signals (void)
{
  g_autoptr (TwbMetrics) m = twb_metrics_new ();
  g_autoptr (GArray) changed = g_array_new (FALSE, FALSE, sizeof (guint));
  g_autoptr (GArray) added = g_array_new (FALSE, FALSE, sizeof (guint));
  g_autoptr (GArray) removed = g_array_new (FALSE, FALSE, sizeof (guint));
  g_signal_connect (m, "changed", G_CALLBACK (count_changed), changed);
  g_signal_connect (m, "series-added", G_CALLBACK (count_changed), added);
  g_signal_connect (m, "series-removed", G_CALLBACK (count_changed), removed);
  guint a = twb_metrics_add_series (m, "r", "a");
  guint b = twb_metrics_add_series (m, "r", "b");
  twb_metrics_add_series (m, "r", "a");
  g_assert_cmpuint (added->len, ==, 2);
  double xs[100], ys[100];
  for (int i = 0; i < 100; i++)
    xs[i] = ys[i] = i;
  twb_metrics_append_many (m, b, xs, ys, 100);
  twb_metrics_append (m, a, 1, 1);
  g_assert_cmpuint (changed->len, ==, 2); /* one per call, not per point */
  g_assert_cmpuint (g_array_index (changed, guint, 0), ==, b);
  g_assert_cmpuint (g_array_index (changed, guint, 1), ==, a);
  twb_metrics_remove_run (m, "r");
  g_assert_cmpuint (removed->len, ==, 2);
}

static void
test_smoothing (void)
{
  g_autoptr (TwbMetrics) m = twb_metrics_new ();
  guint id = twb_metrics_add_series (m, "r", "loss");
  g_autoptr (GRand) r = g_rand_new_with_seed (7);
  double x = 0;
  twb_metrics_append (m, id, 0, NAN); /* a leading NaN: k counts finite points only */
  fill_random (m, id, r, 2000, &x);
  const double ss[] = { 0, 0.6, 0.95, 0.999 };
  for (guint k = 0; k < G_N_ELEMENTS (ss); k++)
    for (int round = 0; round < 2; round++)
      {
        gsize n = twb_metrics_series_len (m, id);
        g_autofree double *ref = ref_smoothed (m, id, ss[k]);
        /* Backwards first: the cache fills to the end on the first call. */
        for (gsize i = n; i-- > 0;)
          {
            double got = twb_metrics_smoothed (m, id, ss[k], i);
            double want = ref[i];
            if (isnan (want))
              g_assert_true (isnan (got));
            else
              /* The cache keeps s^k as a running product; pow() rounds once:
               * relative error grows by at most an ulp a point (2,000 here). */
              g_assert_cmpfloat_with_epsilon (got, want, 1e-11 * MAX (1, fabs (want)));
          }
        /* Growing: the cached state continues over new points. */
        fill_random (m, id, r, 300, &x);
      }
  /* A constant series smooths to itself from the first point (debiasing). */
  guint c = twb_metrics_add_series (m, "r", "const");
  for (int i = 0; i < 10; i++)
    twb_metrics_append (m, c, i, 3.5);
  for (int i = 0; i < 10; i++)
    g_assert_cmpfloat_with_epsilon (twb_metrics_smoothed (m, c, 0.9, i), 3.5, 1e-13);
}

/* Columns by brute force over every point, as the header defines them. */
static void
ref_buckets (TwbMetrics *m, guint id, double s, double x0, double x1, TwbMetricsBucket *b,
             guint n)
{
  for (guint c = 0; c < n; c++)
    b[c] = (TwbMetricsBucket) { NAN, NAN, NAN, NAN, FALSE };
  g_autofree double *sm = ref_smoothed (m, id, s);
  for (gsize i = 0; i < twb_metrics_series_len (m, id); i++)
    {
      double x, y;
      twb_metrics_get_point (m, id, i, &x, &y);
      if (x < x0 || x > x1)
        continue;
      y = sm[i];
      guint c = x1 > x0 ? (guint) MIN (floor ((x - x0) * n / (x1 - x0)), n - 1) : 0;
      if (!b[c].any)
        b[c].first = y;
      b[c].any = TRUE;
      b[c].last = y;
      if (isfinite (y))
        {
          b[c].min = isnan (b[c].min) ? y : MIN (b[c].min, y);
          b[c].max = isnan (b[c].max) ? y : MAX (b[c].max, y);
        }
    }
}

static void
assert_same_value (double got, double want)
{
  if (isnan (want))
    g_assert_true (isnan (got));
  else
    g_assert_cmpfloat_with_epsilon (got, want, 1e-11 * MAX (1, fabs (want)));
}

static void
check_buckets (TwbMetrics *m, guint id, double s, double x0, double x1, guint n)
{
  g_autofree TwbMetricsBucket *got = g_new (TwbMetricsBucket, n);
  g_autofree TwbMetricsBucket *want = g_new (TwbMetricsBucket, n);
  twb_metrics_buckets (m, id, s, x0, x1, got, n);
  ref_buckets (m, id, s, x0, x1, want, n);
  for (guint c = 0; c < n; c++)
    {
      g_assert_cmpint (got[c].any, ==, want[c].any);
      assert_same_value (got[c].min, want[c].min);
      assert_same_value (got[c].max, want[c].max);
      assert_same_value (got[c].first, want[c].first);
      assert_same_value (got[c].last, want[c].last);
    }
}

static void
test_buckets (void)
{
  g_autoptr (TwbMetrics) m = twb_metrics_new ();
  guint id = twb_metrics_add_series (m, "r", "loss");
  g_autoptr (GRand) r = g_rand_new_with_seed (42);
  double x = 0;
  /* Empty series: no column holds anything. */
  check_buckets (m, id, 0, 0, 10, 5);
  fill_random (m, id, r, 3000, &x);
  double x0 = 0, x1 = 0;
  twb_metrics_get_point (m, id, 0, &x0, NULL);
  twb_metrics_get_point (m, id, twb_metrics_series_len (m, id) - 1, &x1, NULL);
  const double ss[] = { 0, 0.6 };
  const guint ns[] = { 1, 7, 300, 5000 };
  for (guint k = 0; k < G_N_ELEMENTS (ss); k++)
    for (guint j = 0; j < G_N_ELEMENTS (ns); j++)
      {
        /* The whole series (its first and last x exactly on the edges), a
         * window inside it, one beyond both ends, and one past its end. */
        check_buckets (m, id, ss[k], x0, x1, ns[j]);
        check_buckets (m, id, ss[k], x0 + 100, x1 - 100, ns[j]);
        check_buckets (m, id, ss[k], x0 - 50, x1 + 50, ns[j]);
        check_buckets (m, id, ss[k], x1 + 1, x1 + 100, ns[j]);
        /* Cached: the same answer again. */
        check_buckets (m, id, ss[k], x0, x1, ns[j]);
      }
  /* Growing: the cached columns take the new points (some inside the
   * range, the rest past its end). */
  double end = x + 400;
  for (int round = 0; round < 6; round++)
    {
      check_buckets (m, id, 0.6, x0, end, 300);
      check_buckets (m, id, 0, x0, end, 300);
      fill_random (m, id, r, 100, &x);
    }
  /* Edges: x exactly on column boundaries (0, 10, ..., 100 for 10 columns). */
  guint e = twb_metrics_add_series (m, "r", "edges");
  for (int i = 0; i <= 100; i += 5)
    twb_metrics_append (m, e, i, i);
  check_buckets (m, e, 0, 0, 100, 10);
  TwbMetricsBucket b[10];
  twb_metrics_buckets (m, e, 0, 0, 100, b, 10);
  g_assert_cmpfloat (b[0].first, ==, 0);
  g_assert_cmpfloat (b[0].last, ==, 5);
  g_assert_cmpfloat (b[1].first, ==, 10);
  g_assert_cmpfloat (b[9].first, ==, 90);
  g_assert_cmpfloat (b[9].last, ==, 100); /* x1 is in the last column */
  /* A clear drops the cached columns. */
  twb_metrics_clear_run (m, "r");
  check_buckets (m, e, 0, 0, 100, 10);
  for (int i = 0; i <= 100; i += 10)
    twb_metrics_append (m, e, i, -i);
  check_buckets (m, e, 0, 0, 100, 10);
  twb_metrics_buckets (m, e, 0, 0, 100, b, 10);
  g_assert_cmpfloat (b[9].min, ==, -100);
  g_assert_cmpfloat (b[9].max, ==, -90);
}

static void
test_nearest_range (void)
{
  g_autoptr (TwbMetrics) m = twb_metrics_new ();
  guint id = twb_metrics_add_series (m, "r", "loss");
  g_assert_cmpint (twb_metrics_nearest (m, id, 3), ==, -1);
  g_assert_false (twb_metrics_range (m, id, FALSE, NULL, NULL, NULL, NULL));
  g_autoptr (GRand) r = g_rand_new_with_seed (3);
  double x = 0;
  fill_random (m, id, r, 1000, &x);
  gsize n = twb_metrics_series_len (m, id);
  for (int k = 0; k < 500; k++)
    {
      double q = g_rand_double_range (r, -10, x + 10);
      if (k < 50) /* exactly on points */
        twb_metrics_get_point (m, id, g_rand_int_range (r, 0, n), &q, NULL);
      gssize best = -1;
      double bd = INFINITY;
      for (gsize i = 0; i < n; i++)
        {
          double px;
          twb_metrics_get_point (m, id, i, &px, NULL);
          if (fabs (px - q) < bd)
            {
              bd = fabs (px - q);
              best = i;
            }
        }
      gssize got = twb_metrics_nearest (m, id, q);
      double gx;
      twb_metrics_get_point (m, id, got, &gx, NULL);
      g_assert_cmpfloat (fabs (gx - q), ==, bd);
      g_assert_cmpint (got, <=, best); /* the earlier of equals */
    }
  /* Ranges by brute force, all and positive. */
  for (int pos = 0; pos < 2; pos++)
    {
      double w[4] = { INFINITY, -INFINITY, INFINITY, -INFINITY };
      for (gsize i = 0; i < n; i++)
        {
          double px, py;
          twb_metrics_get_point (m, id, i, &px, &py);
          if (!isfinite (py) || (pos && py <= 0))
            continue;
          w[0] = MIN (w[0], px);
          w[1] = MAX (w[1], px);
          w[2] = MIN (w[2], py);
          w[3] = MAX (w[3], py);
        }
      double g[4];
      g_assert_true (twb_metrics_range (m, id, pos, &g[0], &g[1], &g[2], &g[3]));
      for (int k = 0; k < 4; k++)
        g_assert_cmpfloat (g[k], ==, w[k]);
    }
  guint neg = twb_metrics_add_series (m, "r", "neg");
  twb_metrics_append (m, neg, 1, -1);
  twb_metrics_append (m, neg, 2, NAN);
  g_assert_true (twb_metrics_range (m, neg, FALSE, NULL, NULL, NULL, NULL));
  g_assert_false (twb_metrics_range (m, neg, TRUE, NULL, NULL, NULL, NULL));
}

static char *
tmp_path (const char *name)
{
  static char *dir;
  if (dir == NULL)
    dir = g_dir_make_tmp ("twb-metrics-XXXXXX", NULL);
  g_assert_nonnull (dir);
  return g_build_filename (dir, name, NULL);
}

static gboolean
same_bits (double a, double b)
{
  if (isnan (a) && isnan (b))
    return TRUE;
  return memcmp (&a, &b, sizeof a) == 0;
}

static void
test_csv_round_trip (void)
{
  g_autoptr (TwbMetrics) m = twb_metrics_new ();
  guint a = twb_metrics_add_series (m, "run-1", "loss");
  guint b = twb_metrics_add_series (m, "run 2, \"tuned\"", "grad_norm:fc1.weight");
  g_autoptr (GRand) r = g_rand_new_with_seed (11);
  double x = 0;
  fill_random (m, a, r, 500, &x);
  const double odd[] = { -0.0, 5e-324, 1.7976931348623157e308, INFINITY, -INFINITY, NAN,
                         0.1, 1.0 / 3 };
  for (guint i = 0; i < G_N_ELEMENTS (odd); i++)
    twb_metrics_append (m, b, i * 0.1, odd[i]);
  g_autofree char *path = tmp_path ("curves.csv");
  g_autoptr (GError) error = NULL;
  g_assert_true (twb_metrics_export_csv (m, path, &error));
  g_assert_no_error (error);

  g_autoptr (TwbMetrics) back = twb_metrics_new ();
  g_assert_true (twb_metrics_import_csv (back, path, NULL, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (twb_metrics_n_series (back), ==, 2);
  for (guint id = 0; id < 2; id++)
    {
      guint bid = twb_metrics_find_series (back, twb_metrics_series_run (m, id),
                                           twb_metrics_series_name (m, id));
      g_assert_cmpuint (bid, !=, G_MAXUINT);
      gsize n = twb_metrics_series_len (m, id);
      g_assert_cmpuint (twb_metrics_series_len (back, bid), ==, n);
      for (gsize i = 0; i < n; i++)
        {
          double x1, y1, x2, y2;
          twb_metrics_get_point (m, id, i, &x1, &y1);
          twb_metrics_get_point (back, bid, i, &x2, &y2);
          g_assert_true (same_bits (x1, x2));
          g_assert_true (same_bits (y1, y2));
          g_assert_cmpint (isnan (y1), ==, isnan (y2));
        }
    }
  double y;
  twb_metrics_get_point (back, twb_metrics_find_series (back, "run 2, \"tuned\"",
                                                        "grad_norm:fc1.weight"),
                         0, NULL, &y);
  g_assert_true (signbit (y)); /* -0 stays -0 */

  /* Into another run; importing again appends only if x goes on. */
  g_autoptr (TwbMetrics) other = twb_metrics_new ();
  g_assert_true (twb_metrics_import_csv (other, path, "run-9", &error));
  g_auto (GStrv) runs = twb_metrics_list_runs (other);
  g_assert_cmpuint (g_strv_length (runs), ==, 1);
  g_assert_cmpstr (runs[0], ==, "run-9");
  g_assert_cmpuint (twb_metrics_series_len (other, twb_metrics_find_series (other, "run-9", "loss")),
                    ==, 500);
  g_assert_false (twb_metrics_import_csv (other, path, "run-9", &error));
  g_assert_error (error, TWB_METRICS_ERROR, TWB_METRICS_ERROR_PARSE);
  g_assert_nonnull (strstr (error->message, "curves.csv:2:"));
  g_assert_cmpuint (twb_metrics_series_len (other, twb_metrics_find_series (other, "run-9", "loss")),
                    ==, 500);

  /* Only some series. */
  g_autofree char *one = tmp_path ("one.csv");
  guint ids[] = { b, 999 };
  g_assert_true (twb_metrics_export_csv_series (m, one, ids, 2, NULL));
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (one, &text, NULL, NULL));
  g_assert_true (g_str_has_prefix (text, "run,series,x,y\n\"run 2, \"\"tuned\"\"\",grad_norm:fc1.weight,0,-0\n"));
  g_assert_null (strstr (text, "loss"));
  g_assert_nonnull (strstr (text, ",nan\n"));
  g_assert_nonnull (strstr (text, ",-inf\n"));
  g_unlink (one);
  g_unlink (path);
}

static void
expect_bad (const char *name, const char *contents, const char *where, const char *what)
{
  g_autofree char *path = tmp_path (name);
  g_assert_true (g_file_set_contents (path, contents, -1, NULL));
  g_autoptr (TwbMetrics) m = twb_metrics_new ();
  g_autoptr (GError) error = NULL;
  g_assert_false (twb_metrics_import_csv (m, path, NULL, &error));
  g_assert_error (error, TWB_METRICS_ERROR, TWB_METRICS_ERROR_PARSE);
  g_autofree char *prefix = g_strdup_printf ("%s:%s: ", path, where);
  if (!g_str_has_prefix (error->message, prefix) || strstr (error->message, what) == NULL)
    g_error ("%s: got “%s”, want “%s…%s”", name, error->message, prefix, what);
  g_assert_cmpuint (twb_metrics_n_series (m), ==, 0); /* nothing added */
  g_unlink (path);
}

static void
test_csv_errors (void)
{
  expect_bad ("fields.csv", "run,series,x,y\nr,loss,1,0.5\nr,loss,2,0.4\nr,loss,3\n", "4",
              "expected 4 fields");
  expect_bad ("header.csv", "step,loss\n1,2\n", "1", "header");
  expect_bad ("x.csv", "run,series,x,y\r\nr,loss,1,0.5\r\nr,loss,abc,0.4\r\n", "3", "“abc”");
  expect_bad ("xnan.csv", "run,series,x,y\nr,loss,nan,0.4\n", "2", "finite");
  expect_bad ("y.csv", "run,series,x,y\nr,loss,1,0.5x\n", "2", "“0.5x”");
  expect_bad ("back.csv", "run,series,x,y\nr,loss,5,1\nr,acc,1,1\n\nr,loss,4,1\n", "5",
              "increasing x");
  expect_bad ("quote.csv", "run,series,x,y\n\"r,loss,1,1\n", "2", "not closed");
  expect_bad ("empty.csv", "", "1", "empty");
  /* A file that cannot be read names itself (G_FILE_ERROR). */
  g_autofree char *missing = tmp_path ("missing.csv");
  g_autoptr (TwbMetrics) m = twb_metrics_new ();
  g_autoptr (GError) error = NULL;
  g_assert_false (twb_metrics_import_csv (m, missing, NULL, &error));
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_NOENT);
  g_assert_nonnull (strstr (error->message, "missing.csv"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/metrics/series", test_series);
  g_test_add_func ("/metrics/signals", test_signals);
  g_test_add_func ("/metrics/smoothing", test_smoothing);
  g_test_add_func ("/metrics/buckets", test_buckets);
  g_test_add_func ("/metrics/nearest-range", test_nearest_range);
  g_test_add_func ("/metrics/csv/round-trip", test_csv_round_trip);
  g_test_add_func ("/metrics/csv/errors", test_csv_errors);
  return g_test_run ();
}
