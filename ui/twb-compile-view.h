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
 * Compiles a copy of the graph with fresh parameters at the recipe's batch
 * size (nothing of a running session is touched); errors show in the view.
 */
#pragma once

#include <gtk/gtk.h>

#include "engine/model.h"

G_BEGIN_DECLS

#define TWB_TYPE_COMPILE_VIEW (twb_compile_view_get_type ())
G_DECLARE_FINAL_TYPE (TwbCompileView, twb_compile_view, TWB, COMPILE_VIEW, GtkWidget)

GtkWidget *twb_compile_view_new (void);
/* FALSE with the compiler's error (also shown in the view). */
gboolean twb_compile_view_set_model (TwbCompileView *v, const tw_model *model, GError **error);
/* node id → GINT_TO_POINTER (group + 1) for nodes in a fused group of two or
 * more nodes. Borrowed; valid until the next set_model. */
GHashTable *twb_compile_view_node_groups (TwbCompileView *v);
guint twb_compile_view_n_groups (TwbCompileView *v);
/* The colour of group g (distinct for neighbours; light and dark themes). */
void twb_compile_view_group_colour (guint group, GdkRGBA *out);
/* For tests: arena bytes, eager peak bytes, and the number of buffers drawn. */
void twb_compile_view_get_memory (TwbCompileView *v, gsize *arena, gsize *eager_peak,
                                  guint *n_buffers);
gboolean twb_compile_view_export (TwbCompileView *v, const char *path, int width, int height,
                                  GError **error);

G_END_DECLS
