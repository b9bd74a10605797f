/* twb-confusion.h — the dashboard's epoch-end view of a classifier: the
 * confusion matrix (counts, or rows normalised to percentages; hover shows
 * "true 3 → predicted 5: 12 (4.1 %)") and a grid of test samples drawn as
 * images with their predicted and true labels, wrong ones first and marked.
 *
 *   twb_confusion_view_set_report (TWB_CONFUSION_VIEW (v), &report, epoch);
 *
 * Images: a sample of [C, H, W] (C = 1 or 3), [H, W], or a flat one whose
 * size is a square (784 → 28 × 28) is drawn; other inputs show only the
 * labels.  Values in [0, 1] are drawn as they are, other ranges stretched
 * over the samples' smallest to largest value.  Cells are coloured by the
 * square root of count / largest count (or of the row share when
 * normalised) so that a good classifier's few mistakes still show; counts
 * are written in cells when they fit (not at 100 classes: hover then).
 * Many classes (over 30): the most confused of them (see set_show_all).
 * Wrong samples have their caption "5 → 3" (predicted → true) and frame in
 * the error colour.  Light or dark follows the widget's theme, exports too.
 */
#pragma once

#include <gtk/gtk.h>

#include "engine/classes.h"

G_BEGIN_DECLS

#define TWB_TYPE_CONFUSION_VIEW (twb_confusion_view_get_type ())
G_DECLARE_FINAL_TYPE (TwbConfusionView, twb_confusion_view, TWB, CONFUSION_VIEW, GtkWidget)

GtkWidget *twb_confusion_view_new (void);
/* The report is copied; NULL clears. */
void twb_confusion_view_set_report (TwbConfusionView *v, const tw_class_report *r, int64_t epoch);
void twb_confusion_view_set_normalised (TwbConfusionView *v, gboolean normalised);
/* For tests: the text hover shows over cell (true, predicted). Caller frees. */
char *twb_confusion_view_cell_text (TwbConfusionView *v, int true_label, int predicted);
/* Draw into cr at width × height; export by extension .png / .svg. */
void twb_confusion_view_draw (TwbConfusionView *v, cairo_t *cr, int width, int height);
gboolean twb_confusion_view_export (TwbConfusionView *v, const char *path, int width, int height,
                                    GError **error);
gboolean twb_confusion_view_get_normalised (TwbConfusionView *v);
/* Past 30 classes the view shows the most confused ones (ranked by
 * tw_class_report_most_confused: errors in their row and column), 5 to 20
 * of them as the size allows (cells of 16 px), their class indices on the
 * axes and "the 20 most confused of 1000 classes" in the title; show_all
 * draws every class instead. */
void twb_confusion_view_set_show_all (TwbConfusionView *v, gboolean all);
gboolean twb_confusion_view_get_show_all (TwbConfusionView *v);
/* The classes drawn at width × height, rows (and columns) in order, into
 * classes (room for n_classes; may be NULL); returns how many. */
int twb_confusion_view_shown_classes (TwbConfusionView *v, int width, int height, int *classes);

/* Geometry and colours of a drawing at width × height, for tests and the
 * dashboard's screenshots.  The cell's rectangle (FALSE outside the matrix
 * or without a report); the colour a cell is filled with (the background's
 * without one) and the colour of wrong samples' captions and frames, both
 * in the widget's current theme.  tile_rect returns how many sample tiles
 * the drawing shows (samples' order: wrong ones first) and, for k below
 * that, tile k's image square (empty when the inputs are not images) and
 * its caption strip; image and caption may be NULL. */
gboolean twb_confusion_view_cell_rect (TwbConfusionView *v, int width, int height, int true_label,
                                       int predicted, graphene_rect_t *out);
int twb_confusion_view_tile_rect (TwbConfusionView *v, int width, int height, int k,
                                  graphene_rect_t *image, graphene_rect_t *caption);
void twb_confusion_view_cell_color (TwbConfusionView *v, int true_label, int predicted,
                                    GdkRGBA *out);
void twb_confusion_view_error_color (TwbConfusionView *v, GdkRGBA *out);

G_END_DECLS
