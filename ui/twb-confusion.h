/* twb-confusion.h — the dashboard's epoch-end view of a classifier: the
 * confusion matrix (counts, or rows normalised to percentages; hover shows
 * "true 3 → predicted 5: 12 (4.1 %)") and a grid of test samples drawn as
 * images with their predicted and true labels, wrong ones first and marked.
 *
 *   twb_confusion_view_set_report (TWB_CONFUSION_VIEW (v), &report, epoch);
 *
 * Images: a sample of [C, H, W] (C = 1 or 3) or a flat one whose size is a
 * square (784 → 28 × 28) is drawn; other inputs show only the labels.
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

G_END_DECLS
