/* twb-dashboard.h — the Training tab: progress, live curves, the runs of
 * this model, and the epoch-end class report.
 *
 * Curves (TwbPlot over the window's TwbMetrics): loss (per step, and the
 * epoch's train and validation loss dashed), accuracy, learning rate,
 * samples/s, step time (and for a cluster run each rank's, dotted, the
 * straggler red: twb_run_get_straggler) and the gradient norm of each
 * layer.  The runs list holds every
 * run of this model saved under the runs folder (twb-run-store.h); ticking
 * one overlays its curves.  Controls: smoothing, log scale, export (CSV,
 * PNG, SVG of every curve).
 *
 *   GtkWidget *d = twb_dashboard_new (metrics);
 *   twb_dashboard_set_run (TWB_DASHBOARD (d), run);      // follows it
 *   twb_dashboard_export (TWB_DASHBOARD (d), "curves.svg", &error);
 */
#pragma once

#include <gtk/gtk.h>

#include "ui/twb-plot.h"
#include "ui/twb-run.h"

G_BEGIN_DECLS

#define TWB_TYPE_DASHBOARD (twb_dashboard_get_type ())
G_DECLARE_FINAL_TYPE (TwbDashboard, twb_dashboard, TWB, DASHBOARD, GtkWidget)

GtkWidget *twb_dashboard_new (TwbMetrics *metrics);
/* The run whose curves and progress are shown (a reference is taken; NULL
 * keeps the curves and clears the progress). */
void twb_dashboard_set_run (TwbDashboard *d, TwbRun *run);
/* Redraw the progress line and curves (the window calls it on "progress"). */
void twb_dashboard_update (TwbDashboard *d);
/* The epoch-end class report of the run, when it has one. */
void twb_dashboard_update_classes (TwbDashboard *d);
/* Where this model's runs are kept: the list is read from there. */
void twb_dashboard_set_runs_dir (TwbDashboard *d, const char *dir);
void twb_dashboard_reload_runs (TwbDashboard *d);
/* Overlay (or hide) a saved run's curves. */
gboolean twb_dashboard_show_run (TwbDashboard *d, const char *run_id, gboolean shown,
                                 GError **error);
/* .csv: every point of every curve; .png / .svg: the charts side by side. */
gboolean twb_dashboard_export (TwbDashboard *d, const char *path, GError **error);
/* For tests: a chart by name ("loss", "accuracy", "lr", "throughput",
 * "grad-norm"), the progress text, and the runs listed. */
TwbPlot *twb_dashboard_get_plot (TwbDashboard *d, const char *name);
const char *twb_dashboard_get_progress_text (TwbDashboard *d);
guint twb_dashboard_n_runs_listed (TwbDashboard *d);
/* Row i of the Runs list (0: the top): its run id, the colour of its swatch
 * and its text (borrowed, valid until the list is rebuilt); FALSE past the
 * end.  The run being trained is listed, first, while it trains. */
gboolean twb_dashboard_get_run_row (TwbDashboard *d, guint i, const char **run_id,
                                    GdkRGBA *colour, const char **text);
/* The colour of a run's curves on every chart and of its swatch in the
 * Runs list: "run-N" takes palette colour N - 1. */
void twb_dashboard_run_colour (const char *run_id, GdkRGBA *out);

G_END_DECLS
