/* twb-plot.h — a chart of one or more TwbMetrics series.
 *
 * The plot draws; the metrics model holds the data (twb-metrics.h).  Each
 * curve is a (series, colour) pair; curves of other runs overlay.  Axes
 * linear or log (y), smoothing 0–0.99 with the raw curve faint behind,
 * hover read-out (a vertical line and the value of each curve at the
 * nearest x), zoom by dragging a rectangle or the wheel (x about the
 * pointer), double-click to reset.  Draws in O(width) per curve whatever
 * the number of points (twb_metrics_buckets).  Colours follow the theme's
 * foreground (light and dark).
 *
 *   GtkWidget *plot = twb_plot_new (metrics, "Loss");
 *   twb_plot_add_curve (TWB_PLOT (plot), loss_id, NULL);   // colour by palette
 *   twb_plot_export (TWB_PLOT (plot), "loss.svg", 800, 400, &error);
 *
 * Properties: "title", "log-y", "smoothing", "x-label".
 */
#pragma once

#include <gtk/gtk.h>

#include "ui/twb-metrics.h"

G_BEGIN_DECLS

#define TWB_TYPE_PLOT (twb_plot_get_type ())
G_DECLARE_FINAL_TYPE (TwbPlot, twb_plot, TWB, PLOT, GtkWidget)

GtkWidget *twb_plot_new (TwbMetrics *metrics, const char *title);
/* colour NULL: the next colour of the plot's palette; dashed for
 * per-epoch / validation curves. */
void twb_plot_add_curve (TwbPlot *p, guint series, const GdkRGBA *colour, gboolean dashed);
void twb_plot_remove_curve (TwbPlot *p, guint series);
void twb_plot_clear_curves (TwbPlot *p);
guint twb_plot_n_curves (TwbPlot *p);
void twb_plot_set_log_y (TwbPlot *p, gboolean log_y);
void twb_plot_set_smoothing (TwbPlot *p, double smoothing);
/* Visible x range; reset shows everything (the default, following new points). */
void twb_plot_set_x_range (TwbPlot *p, double x0, double x1);
void twb_plot_get_x_range (TwbPlot *p, double *x0, double *x1);
void twb_plot_reset_zoom (TwbPlot *p);
/* The hover read-out at widget coordinate x, as shown ("step 120  loss 0.412
 * val_loss 0.455"), NULL where there is no data. Caller frees. (Tests.) */
char *twb_plot_readout_at (TwbPlot *p, double widget_x);
/* Draw into cr at width × height (what snapshot draws too). */
void twb_plot_draw (TwbPlot *p, cairo_t *cr, int width, int height);
/* By extension: .png, .svg (vector), .csv (the curves' points). Atomic. */
gboolean twb_plot_export (TwbPlot *p, const char *path, int width, int height, GError **error);

G_END_DECLS
