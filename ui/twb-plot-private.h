/* twb-plot-private.h — what twb-plot.c (the widget: controllers,
 * properties, export) and twb-plot-draw.c (layout and drawing) share. */
#pragma once

#include "ui/twb-plot.h"

G_BEGIN_DECLS

#define TWB_PLOT_N_COLOURS 8
/* Legend entries shown at most (the rest count in "+N"). */
#define TWB_PLOT_MAX_LEGEND 64

/* Spacing in pixels: padding around the chart, between a label and its
 * axis, pixels per x tick label and per y tick (a label is ~50 px wide,
 * a line of text ~14 px high: half again as much keeps them apart). */
#define PAD 6.0
#define GAP 4.0
#define X_TICK_PX 90.0
#define Y_TICK_PX 36.0
/* The least drag that zooms (a smaller one is a click). */
#define DRAG_MIN_PX 4.0

typedef struct
{
  guint series;
  GdkRGBA colour;
  TwbPlotDash dash;
} Curve;

struct _TwbPlot
{
  GtkWidget parent_instance;
  TwbMetrics *metrics;
  gulong changed_id, removed_id;
  /* New points redraw at most every redraw_ms (0: at once): a live run
   * appends 30 times a second, the eye needs far fewer frames. */
  guint redraw_ms;
  guint redraw_source;
  gint64 last_redraw;
  char *title, *x_label;
  gboolean log_y;
  gboolean x_log2; /* x is log2 of what the ticks and read-out show */
  double smoothing;
  GArray *curves; /* Curve */
  guint next_colour;

  gboolean zoomed; /* x range fixed at zx0..zx1; else all, following */
  double zx0, zx1;
  gboolean y_fixed; /* y range fixed by a rectangle (log10 units on a log axis) */
  double zy0, zy1;

  gboolean wheel_needs_ctrl;
  gboolean hover;
  double hover_x, hover_y;
  gboolean dragging;
  double drag_x0, drag_y0, drag_x1, drag_y1;

  TwbMetricsBucket *buf;
  guint buf_len;
};

/* Where things go for one size: the data area in pixels and the view in
 * data units (y as log10 on a log axis). */
typedef struct
{
  int width, height;
  double ax, ay, aw, ah;
  double x0, x1, y0, y1;
  gboolean has_data; /* some curve has a point to draw */
  gboolean has_points; /* some curve has a point at all (maybe NaN or <= 0 on log) */
  gboolean multi_run;
  double header_h, tick_h;
  double yl_w;       /* widest y tick label */
} Geom;

/* Legend entries laid out in rows after the title; rows beyond max_rows
 * are left out ("+N"). */
typedef struct
{
  guint curve;
  double x, row;
  double w;
} LegendItem;

/* Everything for one size; the layouts are made for cr. */
typedef struct
{
  Geom g;
  PangoLayout *title, *small;
  LegendItem items[TWB_PLOT_MAX_LEGEND];
  guint n_items, left_out;
  double row_h;
} Frame;

/* The read-out at pixel px: the snapped x and, per live curve, its point. */
typedef struct
{
  guint curve;
  gboolean have;
  double x, y, raw;
} Reading;

extern const GdkRGBA twb_plot_palette[TWB_PLOT_N_COLOURS];

/* The cairo dash pattern of a style (NULL, 0: solid), scaled to widths
 * near `unit` px. */
void twb_plot_set_dash (cairo_t *cr, TwbPlotDash dash, double unit);

/* Layout and drawing (twb-plot-draw.c). */
void twb_plot_frame_init (TwbPlot *p, cairo_t *cr, int width, int height, Frame *f);
/* A frame for widget coordinates, measured on a scratch surface. */
void twb_plot_widget_frame (TwbPlot *p, int width, int height, Frame *f);
void twb_plot_frame_clear (Frame *f);
/* interactive: with the hover read-out and the zoom rectangle. */
void twb_plot_draw_frame (TwbPlot *p, cairo_t *cr, Frame *f, gboolean interactive);
void twb_plot_snapshot (GtkWidget *widget, GtkSnapshot *snapshot);
void twb_plot_measure (GtkWidget *widget, GtkOrientation orientation, int for_size, int *minimum,
                       int *natural, int *minimum_baseline, int *natural_baseline);
void twb_plot_fg_colour (TwbPlot *p, GdkRGBA *c);
gboolean twb_plot_curve_alive (TwbPlot *p, const Curve *c);
/* "name", or "run · name" when multi_run; free it. */
char *twb_plot_curve_label (TwbPlot *p, const Curve *c, gboolean multi_run);
gboolean twb_plot_data_x_extent (TwbPlot *p, double *x0, double *x1);
double twb_plot_px_of_x (const Geom *g, double x);
double twb_plot_x_of_px (const Geom *g, double px);
double twb_plot_vy_of_py (const Geom *g, double py);
/* r: one per curve.  FALSE where px has no data. */
gboolean twb_plot_read_at (TwbPlot *p, const Geom *g, double px, double *snap_x, Reading *r);
/* "step 120"; "0.412" or "0.4301 (0.412)" with smoothing.  Free them. */
char *twb_plot_reading_x (TwbPlot *p, double x);
char *twb_plot_reading_value (TwbPlot *p, const Reading *r);

G_END_DECLS
