/* twb-tensor-view.h — the tensor inspector: everything about one tensor
 * snapshot (a copy the debugger received; never live engine memory).
 *
 * Shows the name, role, shape and dtype; min / max / mean / std, NaN and Inf
 * counts (engine/tensor-stats.h computes them); a histogram; and pages:
 *   Values   a table of any rank: the last two dimensions as rows × columns,
 *            a slice selector (spin button) for each leading dimension
 *   Heat map a 2-D tensor (or the selected 2-D slice) as colours, with a scale
 *   Images   NCHW activations ([N, C, H, W]: one tile per (n, c)) and conv
 *            filters ([O, I, kh, kw]), each tile normalised, labelled
 *   Diff     against the same tensor at the previous iteration (when given):
 *            statistics and heat map of the difference
 *
 *   GtkWidget *v = twb_tensor_view_new ();
 *   twb_tensor_view_set_tensor (TWB_TENSOR_VIEW (v), "fc1.weight", "parameter", t, prev);
 *
 * The view takes references on the tensors (host tensors; device ones are
 * copied to the host first).
 */
#pragma once

#include <gtk/gtk.h>

#include "engine/tensor-stats.h"

G_BEGIN_DECLS

#define TWB_TYPE_TENSOR_VIEW (twb_tensor_view_get_type ())
G_DECLARE_FINAL_TYPE (TwbTensorView, twb_tensor_view, TWB, TENSOR_VIEW, GtkWidget)

GtkWidget *twb_tensor_view_new (void);
/* previous may be NULL (Diff page then says there is none yet); t NULL
 * clears the view. */
void twb_tensor_view_set_tensor (TwbTensorView *v, const char *name, const char *role,
                                 tw_tensor *t, tw_tensor *previous);
/* "values", "heatmap", "images", "diff". */
void twb_tensor_view_show_page (TwbTensorView *v, const char *page);
/* Index of a leading dimension shown by the values / heat map pages. */
void twb_tensor_view_set_slice (TwbTensorView *v, int dim, int64_t index);
/* For tests: the statistics shown, the text of a values cell (row, col of
 * the current slice), and the text of the stats labels ("mean" → "0.0123"). */
const tw_tensor_stats *twb_tensor_view_get_stats (TwbTensorView *v);
/* Row and column count from 0 within the current slice (not the 64 × 64
 * window shown); "%.6g" for floats, integers as integers, NULL outside the
 * slice or without a tensor.  The caller frees the string. */
char *twb_tensor_view_cell_text (TwbTensorView *v, int64_t row, int64_t col);
/* stat: "count", "finite", "min", "max", "mean", "std", "abs_max", "zeros",
 * "nan", "inf"; the Diff page's "diff.abs_max", "diff.mean", "diff.std",
 * "diff.changed", "diff.nan", "diff.inf".  Owned by the view (valid until
 * the next set_tensor); NULL for an unknown name. */
const char *twb_tensor_view_stat_text (TwbTensorView *v, const char *stat);

/* The iterations t and previous come from (1-based; 0: unknown): the Diff
 * page says which two it compares.  Set after set_tensor. */
void twb_tensor_view_set_iterations (TwbTensorView *v, int64_t iteration, int64_t previous);
/* why non-NULL: the tensor shown is no longer the value now (the run went
 * on or ended); a line under the header says "Stale: why" and the figures
 * fade.  NULL: live.  A new set_tensor is live.  get_stale: why, or NULL. */
void twb_tensor_view_set_stale (TwbTensorView *v, const char *why);
const char *twb_tensor_view_get_stale (TwbTensorView *v);

/* ---- Added beyond the first header (tests, screenshots) ---- */

/* The label that shows a statistic (names as for stat_text; it carries the
 * "error" style class when a NaN / Inf count is above 0).  Owned by the view. */
GtkWidget *twb_tensor_view_get_stat_label (TwbTensorView *v, const char *stat);
/* The first row and column of the values page's 64 × 64 window (clamped to
 * the slice; the row / column spin buttons show them). */
void twb_tensor_view_set_values_offset (TwbTensorView *v, int64_t row0, int64_t col0);
/* The statistics of t - previous; NULL without a previous tensor of t's shape. */
const tw_tensor_stats *twb_tensor_view_get_diff_stats (TwbTensorView *v);
/* A page's note or explanation ("values": "first 64 of 300 columns";
 * "images": "Images need a 4-D tensor [N, C, H, W]…" or "first 64 of 100
 * tiles"; "heatmap": why there is none; "diff": "max |Δ| = 0.5" or why there
 * is none); "" when there is nothing to say.  Owned by the view. */
const char *twb_tensor_view_page_note (TwbTensorView *v, const char *page);
/* Draws "histogram", "heatmap", "images" or "diff" (the difference heat
 * map) into cr exactly as the view's drawing area of width × height shows
 * it (no background).  FALSE, drawing nothing, when the page does not apply. */
gboolean twb_tensor_view_draw_page (TwbTensorView *v, const char *page, cairo_t *cr, int width,
                                    int height);
/* The hover readout of the "heatmap" or "diff" map drawn at width × height
 * at the point (x, y): "[i, j] = v" (leading slice indices first for rank > 2);
 * NULL outside the map.  The caller frees the string. */
char *twb_tensor_view_readout_at (TwbTensorView *v, const char *page, double x, double y,
                                  int width, int height);

G_END_DECLS
