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
 * Signals: "changed" (guint series) after appends, emitted at most once per
 * main-loop iteration per series is NOT promised: callers that append in
 * bulk use twb_metrics_append_many.
 * Ownership: strings returned are borrowed from the model and live as long
 * as the series.
 */
#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

#define TWB_TYPE_METRICS (twb_metrics_get_type ())
G_DECLARE_FINAL_TYPE (TwbMetrics, twb_metrics, TWB, METRICS, GObject)

TwbMetrics *twb_metrics_new (void);

/* Returns the id of the series (run, name); the same id if it exists. */
guint twb_metrics_add_series (TwbMetrics *m, const char *run, const char *name);
/* G_MAXUINT when there is no such series. */
guint twb_metrics_find_series (TwbMetrics *m, const char *run, const char *name);
guint twb_metrics_n_series (TwbMetrics *m);
const char *twb_metrics_series_run (TwbMetrics *m, guint series);
const char *twb_metrics_series_name (TwbMetrics *m, guint series);
gsize twb_metrics_series_len (TwbMetrics *m, guint series);
/* Point i of a series (i < len). */
void twb_metrics_get_point (TwbMetrics *m, guint series, gsize i, double *x, double *y);
void twb_metrics_append (TwbMetrics *m, guint series, double x, double y);
void twb_metrics_append_many (TwbMetrics *m, guint series, const double *x, const double *y,
                              gsize n);
void twb_metrics_clear_run (TwbMetrics *m, const char *run);   /* drops its series */
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
 * only walk new points where possible. */
typedef struct
{
  double min, max, first, last;
  gboolean any;
} TwbMetricsBucket;

void twb_metrics_buckets (TwbMetrics *m, guint series, double smoothing, double x0, double x1,
                          TwbMetricsBucket *buckets, guint n_buckets);

/* Index of the point with x nearest to x (-1 if empty). */
gssize twb_metrics_nearest (TwbMetrics *m, guint series, double x);

/* CSV: header "run,series,x,y", one line per point, numbers with %.17g (NaN
 * as "nan").  Export is atomic; import adds the series it reads (a bad line
 * fails with the file name and line number, adding nothing). */
gboolean twb_metrics_export_csv (TwbMetrics *m, const char *path, GError **error);
gboolean twb_metrics_import_csv (TwbMetrics *m, const char *path, const char *run_override,
                                 GError **error);

G_END_DECLS
