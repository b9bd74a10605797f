/* twb-compile-view.h — what compiling did to a model, for the Compiled
 * panel: each pass with what it did (ops before → after, what it fused or
 * removed), the fused groups (each with a colour and the nodes it covers,
 * for the canvas to tint), and the memory plan drawn as buffer lifetimes:
 * one bar per arena buffer, x = schedule position (first to last use), y =
 * its byte offset in the arena, height = its size; arena size against the
 * eager peak.
 *
 *   TwbCompileView *v = TWB_COMPILE_VIEW (twb_compile_view_new ());
 *   twb_compile_view_set_model (v, model, &error);   // compiles a copy
 *   GHashTable *groups = twb_compile_view_node_groups (v);  // id → group
 *
 * Compiles a copy of the graph at the recipe's batch size as `twb compile`
 * does (no parameter values needed, nothing of a running session touched);
 * errors show in the view.
 * The program is the training step compiled training runs (TW_PROGRAM_STEP:
 * forward, backward and each parameter's update).  Fused groups are the
 * forward fused kernels covering two or more nodes (backward fusions are
 * listed under the fusion pass).  Side by side in a wide panel, stacked in a
 * tall one.
 *
 * Signal "group-activated" (guint group): a row of the groups list was
 * clicked or activated; group indexes node_groups' values less one.
 */
#pragma once

#include <gtk/gtk.h>

#include "engine/model.h"
#include "engine/compile/report-data.h"

G_BEGIN_DECLS

#define TWB_TYPE_COMPILE_VIEW (twb_compile_view_get_type ())
G_DECLARE_FINAL_TYPE (TwbCompileView, twb_compile_view, TWB, COMPILE_VIEW, GtkWidget)

GtkWidget *twb_compile_view_new (void);
/* FALSE with the compiler's error (also shown in the view); nothing of a
 * previous model is kept either way.  model NULL: cleared, TRUE. */
gboolean twb_compile_view_set_model (TwbCompileView *v, const tw_model *model, GError **error);
/* node id → GINT_TO_POINTER (group + 1) for nodes in a fused group of two or
 * more nodes. Borrowed; valid until the next set_model. */
GHashTable *twb_compile_view_node_groups (TwbCompileView *v);
guint twb_compile_view_n_groups (TwbCompileView *v);
/* The colour of group g (distinct for neighbours; light and dark themes),
 * opaque: the swatch's.  Over a canvas node use it at about
 * TWB_COMPILE_VIEW_TINT_ALPHA. */
void twb_compile_view_group_colour (guint group, GdkRGBA *out);
#define TWB_COMPILE_VIEW_TINT_ALPHA 0.30
/* For tests: arena bytes, eager peak bytes, and the number of buffers drawn. */
void twb_compile_view_get_memory (TwbCompileView *v, gsize *arena, gsize *eager_peak,
                                  guint *n_buffers);
/* The memory plan (legend, phase strip, buffers) as a picture of width ×
 * height, with the view's theme: .png or .svg by extension; atomic. */
gboolean twb_compile_view_export (TwbCompileView *v, const char *path, int width, int height,
                                  GError **error);

/* Added beside the declared API (the lead's window and the tests use them): */
/* The report shown, NULL without a model or after an error.  Borrowed,
 * valid until the next set_model. */
const tw_compile_report *twb_compile_view_get_report (TwbCompileView *v);
/* The compiler's message after a failed set_model, else NULL.  Borrowed. */
const char *twb_compile_view_get_error (TwbCompileView *v);
/* The buffers the memory plan draws (one rectangle each: instructions
 * first..last × [offset, offset + bytes)); *n of them.  Borrowed, valid
 * until the next set_model. */
const tw_compile_buffer *twb_compile_view_get_buffers (TwbCompileView *v, guint *n);
/* Where buffer k is drawn, in the memory plan area's coordinates (its
 * current size); FALSE when not drawn. */
gboolean twb_compile_view_buffer_rect (TwbCompileView *v, guint k, graphene_rect_t *out);
/* The hover read-out at (x, y) of the memory plan area, "fc1 · 16.4 kB
 * (16384 bytes) · instructions 0–5"; NULL over no buffer.  Caller frees. */
char *twb_compile_view_memory_readout_at (TwbCompileView *v, double x, double y);
/* Line i of the passes list, "fusion — 24 → 18 ops: linear+relu (fc1,
 * relu1), …"; NULL past the end.  Caller frees. */
char *twb_compile_view_pass_line (TwbCompileView *v, guint i);

G_END_DECLS
