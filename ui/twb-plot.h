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
 * Properties: "title", "log-y", "smoothing", "x-label" (default "step"),
 * "metrics" (construct-only; NULL makes an empty model), "zoomed"
 * (read-only: TRUE while the x range is fixed by a zoom or set_x_range;
 * FALSE: all points shown, following new ones), "wheel-needs-ctrl"
 * (default FALSE: the plain wheel zooms; TRUE: only Ctrl+wheel does, and
 * the plain wheel scrolls whatever holds the plot, e.g. a scrolled
 * dashboard).
 *
 * The view: not zoomed, x runs from the data's first x to its last, both
 * rounded out to a whole tick-sized step (so a growing curve keeps its
 * range, and the metrics' column cache, until it passes the next step); y
 * fits the raw points in view with 5 % headroom.  A drag zooms to its
 * rectangle (x only when it is flatter than 4 px), the wheel zooms x by
 * 1.25 a step about the pointer (zooming out past the data resets),
 * double-click resets.
 *
 * Legend: series names, "run · name" once the curves come from more than
 * one run; one row on plots under 220 px high, else two, then "+N".
 */
#pragma once

#include <gtk/gtk.h>

#include "ui/twb-metrics.h"

G_BEGIN_DECLS

#define TWB_TYPE_PLOT (twb_plot_get_type ())
G_DECLARE_FINAL_TYPE (TwbPlot, twb_plot, TWB, PLOT, GtkWidget)

/* metrics: the model drawn (the plot keeps a reference); NULL: a new empty one. */
GtkWidget *twb_plot_new (TwbMetrics *metrics, const char *title);
/* The model drawn (lives in the plot). */
TwbMetrics *twb_plot_get_metrics (TwbPlot *p);
/* colour NULL: the next colour of the plot's palette; dashed for
 * per-epoch / validation curves.  A curve already shown stays as it is.
 * A series removed from the model (twb_metrics_remove_run) leaves the plot. */
void twb_plot_add_curve (TwbPlot *p, guint series, const GdkRGBA *colour, gboolean dashed);
/* Line styles: the curves of one run share its colour and differ by these. */
typedef enum
{
  TWB_PLOT_SOLID,
  TWB_PLOT_DASHED,
  TWB_PLOT_DOTTED,
  TWB_PLOT_DASH_DOT,
} TwbPlotDash;
/* As twb_plot_add_curve, with a line style. */
void twb_plot_add_curve_styled (TwbPlot *p, guint series, const GdkRGBA *colour, TwbPlotDash dash);
/* The colour a curve is drawn in; FALSE when series is not on the plot. */
gboolean twb_plot_get_curve_colour (TwbPlot *p, guint series, GdkRGBA *colour);
/* Colour i of the palette (i taken modulo its size, 8): matplotlib's
 * "tab10" less its grey and olive.  Static. */
const GdkRGBA *twb_plot_palette_colour (guint i);
void twb_plot_remove_curve (TwbPlot *p, guint series);
void twb_plot_clear_curves (TwbPlot *p);
guint twb_plot_n_curves (TwbPlot *p);
void twb_plot_set_log_y (TwbPlot *p, gboolean log_y);
void twb_plot_set_smoothing (TwbPlot *p, double smoothing);
/* A log x axis: the series' x values are log2 of the quantity (ranks
 * 8, 64, 512 appended as x 3, 6, 9); ticks fall on whole powers of two
 * and read, as the hover read-out does, the quantity itself. */
void twb_plot_set_x_log2 (TwbPlot *p, gboolean x_log2);
/* Visible x range; reset shows everything (the default, following new points). */
void twb_plot_set_x_range (TwbPlot *p, double x0, double x1);
void twb_plot_get_x_range (TwbPlot *p, double *x0, double *x1);
void twb_plot_reset_zoom (TwbPlot *p);
/* New points redraw the plot at most every ms milliseconds (0, the
 * default: at once); zoom, hover and resizes always redraw at once. */
void twb_plot_set_redraw_interval (TwbPlot *p, guint ms);
/* The hover read-out at widget coordinate x, as shown ("step 120  loss 0.412
 * val_loss 0.455"), NULL where there is no data. Caller frees. (Tests.)
 * x is that of the point nearest the pointer over all curves; each curve
 * gives its point nearest that x; values with 4 significant digits, "nan"
 * for a gap; with smoothing the smoothed value, then the raw one in
 * parentheses ("loss 0.4301 (0.412)"). */
char *twb_plot_readout_at (TwbPlot *p, double widget_x);
/* The data area (inside the axes) at width × height, in widget
 * coordinates; FALSE when there is nothing to draw ("No data yet"). */
gboolean twb_plot_get_area (TwbPlot *p, int width, int height, graphene_rect_t *area);
/* The x and y ranges shown at width × height (data units, also on a log
 * axis; not zoomed, x is rounded out to a tick step, which depends on the
 * width).  FALSE as twb_plot_get_area.  Any pointer may be NULL. */
gboolean twb_plot_get_view (TwbPlot *p, int width, int height, double *x0, double *x1,
                            double *y0, double *y1);
/* Draw into cr at width × height (what snapshot draws too). */
void twb_plot_draw (TwbPlot *p, cairo_t *cr, int width, int height);
/* By extension: .png, .svg (vector), .csv (the curves' points, the format
 * of twb_metrics_export_csv). Atomic (engine/fileutil.h). Pictures get a
 * background (white under dark text, near-black under light); width and
 * height 1 to 16,384 (ignored for .csv). Errors name the file. */
gboolean twb_plot_export (TwbPlot *p, const char *path, int width, int height, GError **error);

G_END_DECLS
