/* twb-tensor-draw.h — the tensor inspector's drawings, shared by
 * twb-tensor-view.c and its tests: text and colours in the widget's theme,
 * heat maps of a 2-D slice (with their colour scale), the histogram.  Not
 * for other modules.
 *
 *   TwbHeatModel hm = { .centred = TRUE };        // a difference
 *   twb_heat_model_set (&hm, diff, slice_index);
 *   twb_heat_draw (widget, &hm, cr, width, height);
 *   twb_heat_model_clear (&hm);
 */
#pragma once

#include <gtk/gtk.h>

#include "engine/tensor-stats.h"

G_BEGIN_DECLS

/* Heat maps are coloured at most this many samples per side (a 4096-wide
 * weight would otherwise make a 64 MB surface for a 300 px area). */
#define HEAT_MAX_SAMPLES 1024
/* Margins of the drawings and the colour scale under a heat map: a 10 px
 * bar, 4 px gap, one line of labels. */
#define PAD 4
#define SCALE_BAR 10
#define SCALE_H 30

/* What a difference map shows when every element is unchanged. */
#define TWB_NO_DIFFERENCE_TEXT "No difference"

/* A 2-D slice shown as a heat map: the view, its statistics (no bins) and
 * its colours, made on first draw. */
typedef struct
{
  tw_tensor *slice;          /* leading dims of size 1; NULL when none */
  tw_tensor_stats st;
  int64_t rows, cols;
  cairo_surface_t *surface;
  gboolean centred;          /* a difference: colours diverge around 0 whatever the signs */
} TwbHeatModel;

/* Accent (bars) and NaN colours: mid-tone, so they read on light and dark
 * backgrounds alike. */
extern const GdkRGBA twb_tensor_accent;
extern const double twb_tensor_nan_rgb[3];

void twb_tensor_fg (GtkWidget *w, GdkRGBA *c);
void twb_tensor_set_source (cairo_t *cr, const GdkRGBA *c, double alpha);
/* A small-print layout in the widget's font (caller unrefs), its line height. */
PangoLayout *twb_tensor_small_layout (GtkWidget *w, const char *text);
int twb_tensor_small_line_height (GtkWidget *w);
/* Text at (x, y) (top), aligned 0 left, 0.5 centre, 1 right of x. */
void twb_tensor_draw_text (cairo_t *cr, GtkWidget *w, const char *text, double x, double y,
                           double align, const GdkRGBA *c, double alpha);
/* "%.6g"; integers of integer dtypes as integers.  Caller frees. */
char *twb_tensor_format_double (double x);
char *twb_tensor_format_value (tw_dtype dt, double x);
guint32 twb_tensor_pack_rgb (const double rgb[3]);
/* Rows and columns of t's 2-D slices (a vector: one row; a scalar: 1 × 1). */
void twb_tensor_slice_dims (const tw_tensor *t, int64_t *rows, int64_t *cols);
/* t[idx[0], …, :, :] keeping the leading dims (size 1); NULL when t is
 * empty.  Caller unrefs. */
tw_tensor *twb_tensor_slice_view (tw_tensor *t, const int64_t *idx);

void twb_heat_model_clear (TwbHeatModel *hm);
/* t NULL or a scalar: no map.  Keeps hm->centred. */
void twb_heat_model_set (TwbHeatModel *hm, tw_tensor *t, const int64_t *idx);
/* A difference whose every element is 0: drawn as "no difference" (a
 * hatched field and the words), never as a solid colour. */
gboolean twb_heat_model_all_zero (const TwbHeatModel *hm);
/* The map's rectangle in a drawing of width × height (the scale below). */
gboolean twb_heat_rect (int width, int height, graphene_rect_t *r);
void twb_heat_draw (GtkWidget *w, TwbHeatModel *hm, cairo_t *cr, int width, int height);

/* Where the histogram's parts go at width × height for text lines line_h
 * high and a peak label label_w wide: the bars' box (none reaches above its
 * top), the peak's label (above the bars, at the right), the baseline.
 * FALSE when too small to draw. */
typedef struct
{
  graphene_rect_t bars, peak_label;
  double baseline;
  int64_t peak;
} TwbHistogramLayout;
gboolean twb_histogram_layout (const tw_tensor_stats *st, int width, int height, int line_h,
                               int label_w, TwbHistogramLayout *out);
void twb_histogram_draw (GtkWidget *w, const tw_tensor_stats *st, cairo_t *cr, int width,
                         int height);

G_END_DECLS
