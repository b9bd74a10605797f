/* twb-metrics.h — the numbers the training dashboard draws: named series of
 * (x, y) points, GTK-free (GObject + GLib), tested without a display.
 *
 * A series belongs to a run ("run-3") and has a name ("loss", "val_loss",
 * "accuracy", "lr", "samples_per_s", "grad_norm:fc1.weight").  Points are
 * appended in increasing x (the step, or the epoch for per-epoch series);
 * y may be NaN (a gap).  The model answers what a plot needs at any size
 * without walking every point: min/max per pixel column over an x range
 * (so 100,000 points draw as ~2 × width segments), smoothed values (the
 * exponential moving average TensorBoard uses, with its debiasing), the
 * nearest point for hover read-outs, and data ranges for axes.
 *
 *   g_autoptr (TwbMetrics) m = twb_metrics_new ();
 *   guint loss = twb_metrics_add_series (m, "run-1", "loss");
 *   twb_metrics_append (m, loss, step, value);
 *   twb_metrics_export_csv (m, "curves.csv", &error);   // atomic
 *
 * Signals: "changed" (guint series) after appends and when a series is
 * emptied (twb_metrics_clear_run), once per call: emitted at most once per
 * main-loop iteration per series is NOT promised, so callers that append in
 * bulk use twb_metrics_append_many.  "series-added" (guint series) when a
 * series is created (add_series, import); "series-removed" (guint series)
 * when twb_metrics_remove_run drops it.
 * Ids are stable: 0 .. n_series - 1, never reused; a removed series' id
 * answers NULL names and length 0 (twb_metrics_has_series tells).
 * Ownership: strings returned are borrowed from the model and live as long
 * as the series.
 * Threads: one thread (the main loop's); the training worker's numbers
 * come through the session's queue and are appended there.
 */
#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

#define TWB_TYPE_METRICS (twb_metrics_get_type ())
G_DECLARE_FINAL_TYPE (TwbMetrics, twb_metrics, TWB, METRICS, GObject)

/* Errors of twb_metrics_import_csv's parsing (reading: G_FILE_ERROR). */
#define TWB_METRICS_ERROR (twb_metrics_error_quark ())
GQuark twb_metrics_error_quark (void);
typedef enum
{
  TWB_METRICS_ERROR_PARSE, /* "FILE:LINE: what is wrong" */
} TwbMetricsError;

TwbMetrics *twb_metrics_new (void);

/* Returns the id of the series (run, name); the same id if it exists. */
guint twb_metrics_add_series (TwbMetrics *m, const char *run, const char *name);
/* G_MAXUINT when there is no such series. */
guint twb_metrics_find_series (TwbMetrics *m, const char *run, const char *name);
/* Ids handed out so far (removed ones included). */
guint twb_metrics_n_series (TwbMetrics *m);
/* FALSE for an id never handed out or removed with its run. */
gboolean twb_metrics_has_series (TwbMetrics *m, guint series);
const char *twb_metrics_series_run (TwbMetrics *m, guint series);
const char *twb_metrics_series_name (TwbMetrics *m, guint series);
gsize twb_metrics_series_len (TwbMetrics *m, guint series);
/* Point i of a series (i < len). */
void twb_metrics_get_point (TwbMetrics *m, guint series, gsize i, double *x, double *y);
/* x finite and not below the series' last x (a programmer error
 * otherwise: g_return_if_fail, nothing appended); y may be NaN or ±inf
 * (both drawn as gaps). */
void twb_metrics_append (TwbMetrics *m, guint series, double x, double y);
void twb_metrics_append_many (TwbMetrics *m, guint series, const double *x, const double *y,
                              gsize n);
/* Drops the points of the run's series; the series and their ids stay (a
 * restarted run draws into the same plots). */
void twb_metrics_clear_run (TwbMetrics *m, const char *run);
/* Drops the run and its series (their ids are dead, "series-removed"). */
void twb_metrics_remove_run (TwbMetrics *m, const char *run);
/* Runs in the order first added. NULL-terminated, free with g_strfreev. */
char **twb_metrics_list_runs (TwbMetrics *m);

/* Range of finite x and y (y > 0 only when positive_only, for log axes).
 * FALSE when the series has no such point. */
gboolean twb_metrics_range (TwbMetrics *m, guint series, gboolean positive_only,
                            double *xmin, double *xmax, double *ymin, double *ymax);

/* Exponential moving average with TensorBoard's debiasing:
 *   last = last * s + (1 - s) * y; debiased = last / (1 - s^k)
 * over finite points (k counts them); s in [0, 1). NaN points stay NaN. */
double twb_metrics_smoothed (TwbMetrics *m, guint series, double smoothing, gsize i);

/* Decimation for drawing: split [x0, x1] into n_buckets equal columns and
 * give, per column, the min and max y (NaN where it has no finite point),
 * the first and last y in it, and whether it holds a point.  With smoothing
 * > 0 the smoothed values are used.  Cost: O(points in range) the first
 * time, and cached per (series, smoothing) so redraws of a growing series
 * only walk new points where possible.
 * Column c holds the points with floor ((x - x0) * n_buckets / (x1 - x0)) = c,
 * x = x1 in the last one; points outside [x0, x1] are in none.  first and
 * last are the y (raw or smoothed) of the column's first and last point,
 * NaN or inf included (a gap starts or ends there); all four are NaN where
 * any is FALSE.  The cache is keyed by (smoothing, x0, x1, n_buckets),
 * exactly; a few keys are kept per series, the least recently used goes. */
typedef struct
{
  double min, max, first, last;
  gboolean any;
} TwbMetricsBucket;

void twb_metrics_buckets (TwbMetrics *m, guint series, double smoothing, double x0, double x1,
                          TwbMetricsBucket *buckets, guint n_buckets);

/* Index of the point with x nearest to x (-1 if empty); of two as near,
 * the earlier.  O(log n). */
gssize twb_metrics_nearest (TwbMetrics *m, guint series, double x);

/* CSV: header "run,series,x,y", one line per point, numbers with %.17g (NaN
 * as "nan", infinities "inf"/"-inf"), names quoted as RFC 4180 says where they
 * hold a comma, quote or line break.  Export is atomic; import adds the series
 * it reads, appending to series that exist (a bad line — wrong field count,
 * x not finite, x going back — fails with TWB_METRICS_ERROR_PARSE naming the
 * file and line number, adding nothing). run_override: NULL, or the run all
 * points go to. */
gboolean twb_metrics_export_csv (TwbMetrics *m, const char *path, GError **error);
gboolean twb_metrics_import_csv (TwbMetrics *m, const char *path, const char *run_override,
                                 GError **error);
/* The same CSV with only the given series (ids that are dead are left out). */
gboolean twb_metrics_export_csv_series (TwbMetrics *m, const char *path, const guint *series,
                                        guint n, GError **error);

G_END_DECLS
