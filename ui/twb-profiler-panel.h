/* twb-profiler-panel.h — the Profiler tab: open traces, their timeline and
 * what they add up to.
 *
 * Top: a tool bar (Record, Open, Export, the trace shown, "compare with",
 * "Critical path" for traces of several ranks, search), the critical
 * path's summary when it is drawn, then the timeline (profiler/twb-timeline.h) above a notebook of
 * tables: Selection (the selected range aggregated by name: count, total,
 * self, average, % of range, GFLOP/s, % of the measured peak), Slice (the
 * selected slice's arguments and nodes), Top (ops and kernels by self and
 * total time), Layers (per graph node), Ranks (compute, communication,
 * idle, overlap) and Compare (two traces per layer, aligned by step).
 *
 * The panel owns the traces it is given.  Its tool bar's buttons name
 * actions of the group "profiler" (record, open, export, close-trace) that
 * the window provides (ui/twb-window-profiler.c); everything the canvas
 * needs goes out by signals:
 *   "nodes-activated" (TwbProfilerPanel *, GStrv ids)  a slice or layer row picked
 *   "heat-changed"    (TwbProfilerPanel *)            the layer shares changed
 */
#pragma once

#include "profiler/twb-timeline.h"
#include "profiler/summary.h"

#include <gtk/gtk.h>

G_BEGIN_DECLS

#define TWB_TYPE_PROFILER_PANEL (twb_profiler_panel_get_type ())
G_DECLARE_FINAL_TYPE (TwbProfilerPanel, twb_profiler_panel, TWB, PROFILER_PANEL, GtkWidget)

GtkWidget *twb_profiler_panel_new (void);

/* Takes t (sorted) and shows it; title names it in the trace menus, path
 * (may be NULL) is where it came from.  Returns its index. */
guint twb_profiler_panel_add_trace (TwbProfilerPanel *p, tw_trace *t, const char *title,
                                    const char *path);
guint twb_profiler_panel_n_traces (TwbProfilerPanel *p);
const tw_trace *twb_profiler_panel_get_trace (TwbProfilerPanel *p, guint i);
const char *twb_profiler_panel_get_title (TwbProfilerPanel *p, guint i);
/* The trace shown, -1 when none. */
int twb_profiler_panel_get_current (TwbProfilerPanel *p);
void twb_profiler_panel_show_trace (TwbProfilerPanel *p, guint i);
/* Shows trace i beside the current one, both aligned at the first step they
 * share (-1: none); the Compare page then lists them per layer. */
void twb_profiler_panel_set_compare (TwbProfilerPanel *p, int i);
int twb_profiler_panel_get_compare (TwbProfilerPanel *p);
/* Drops the current trace; the next one (or the last) shows, beside the
 * compared one unless that is the one shown now. */
void twb_profiler_panel_close_current (TwbProfilerPanel *p);

TwbTimeline *twb_profiler_panel_get_timeline (TwbProfilerPanel *p);
/* The notebook's page: "selection", "slice", "top", "layers", "ranks", "compare". */
void twb_profiler_panel_set_page (TwbProfilerPanel *p, const char *name);
const char *twb_profiler_panel_get_page (TwbProfilerPanel *p);
/* The page's table (NULL for "slice"), for tests and exports. */
GtkWidget *twb_profiler_panel_get_table (TwbProfilerPanel *p, const char *page);
/* The tool bar's line on what is going on ("Recording… 1,234 events"). */
void twb_profiler_panel_set_status (TwbProfilerPanel *p, const char *text);
const char *twb_profiler_panel_get_status (TwbProfilerPanel *p);   /* borrowed */
/* A line above the selected slice's arguments on the Slice page (what
 * the window made of it: "bucket 1: 3 parameters of fc1, fc2 (1.2 MB)");
 * cleared when another slice is shown.  NULL or "": none. */
void twb_profiler_panel_set_slice_note (TwbProfilerPanel *p, const char *text);
const char *twb_profiler_panel_get_slice_note (TwbProfilerPanel *p);  /* NULL when none */
/* Filters the timeline (twb_timeline_set_search) and shows the count. */
void twb_profiler_panel_set_search (TwbProfilerPanel *p, const char *text);

/* Whether the critical path of a trace of several ranks is drawn (the
 * median step's, tw_trace_critical_path_median) with its summary above the
 * timeline; the toolbar's "Critical path" check (action
 * "profiler.critical-path") shows for such traces. */
void twb_profiler_panel_set_critical_path (TwbProfilerPanel *p, gboolean on);
gboolean twb_profiler_panel_get_critical_path (TwbProfilerPanel *p);
/* The summary shown ("Critical path of step 2 (the median step): 2.4 ms —
 * compute 35 %, …"), NULL when none shows. */
const char *twb_profiler_panel_get_path_text (TwbProfilerPanel *p);

/* Node id → its share of the current trace's time (double in a pointer:
 * use twb_profiler_panel_layer_share).  NULL without a trace. */
gboolean twb_profiler_panel_layer_share (TwbProfilerPanel *p, const char *node, double *share);
/* Every node id the current trace times (NULL-terminated; free with g_strfreev). */
char **twb_profiler_panel_layer_nodes (TwbProfilerPanel *p);

G_END_DECLS
