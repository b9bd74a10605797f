/* twb-timeline.h — the Profiler tab's timeline: one or more traces as lanes
 * of slices over time, with a time ruler, counter tracks, flow arrows, a
 * selected range and a selected slice.  GTK 4.
 *
 * Layout, top to bottom: the time ruler, then per trace added (a "group",
 * titled) its processes (ranks), each collapsible, each holding its lanes
 * (threads, devices, streams; slices stacked by depth) and its counters (one
 * area chart per counter name).  Traces are borrowed: keep each alive until
 * twb_timeline_clear () or the widget's dispose.
 *
 * Input, as in Perfetto: W / S zoom in / out around the pointer (or the
 * centre), A / D pan; Ctrl+wheel zooms around the pointer, Shift+wheel and
 * a horizontal wheel pan, the plain wheel scrolls the lanes vertically;
 * left-drag selects a time range, middle- or right-drag pans (both axes);
 * a click on a slice selects it ("slice-selected"), a click on a process
 * header collapses or expands it; double-click on a slice zooms to it;
 * selecting a collective of a trace of several ranks (profiler/ranks.h)
 * outlines the same collective on every rank, each labelled with its
 * arrival skew against the last rank to arrive and its wait (also in the
 * slices' tooltips), and marks the last arrival with a dashed line;
 * Escape clears the range and the slice.  A critical path given
 * (twb_timeline_set_critical_path) is drawn over the lanes.
 *
 * Actions (gtk_widget_class_install_action, group "timeline"):
 *   timeline.zoom-in, timeline.zoom-out, timeline.pan-left,
 *   timeline.pan-right, timeline.zoom-all, timeline.zoom-selection
 *
 * Times given to and returned by the API are a group's trace times minus
 * its offset: "view time", the axis the ruler shows (0 = the earliest
 * event of all groups after their offsets, unless a range says otherwise).
 *
 *   TwbTimeline *tl = TWB_TIMELINE (twb_timeline_new ());
 *   twb_timeline_add_trace (tl, trace, "eager", 0);
 *   twb_timeline_zoom_all (tl);
 *   g_signal_connect (tl, "slice-selected", G_CALLBACK (on_slice), self);
 */
#pragma once

#include "profiler/trace.h"

#include <gtk/gtk.h>

G_BEGIN_DECLS

#define TWB_TYPE_TIMELINE (twb_timeline_get_type ())
G_DECLARE_FINAL_TYPE (TwbTimeline, twb_timeline, TWB, TIMELINE, GtkWidget)

/* A slice as the timeline names it: the group (trace) index, the lane in
 * that trace, the slice's index on the lane (tw_trace_lane_slice). */
typedef struct
{
  guint group;
  guint lane;
  guint index;
} TwbSliceRef;

GtkWidget *twb_timeline_new (void);

/* Removes every trace (and the selection, search and highlight). */
void twb_timeline_clear (TwbTimeline *tl);
/* Adds t (sorted; borrowed) as a group of lanes under title, its times
 * shown shifted by -offset_ns (to align two traces at a step's start).
 * Returns the group index (0, 1, ...).  Keeps the view unless it was empty. */
guint twb_timeline_add_trace (TwbTimeline *tl, const tw_trace *t, const char *title, gint64 offset_ns);
guint twb_timeline_n_groups (TwbTimeline *tl);
const tw_trace *twb_timeline_get_trace (TwbTimeline *tl, guint group);
gint64 twb_timeline_get_offset (TwbTimeline *tl, guint group);

/* The visible time range (view time, ns).  set_view keeps it at least
 * 100 ns wide and emits "view-changed". */
void twb_timeline_set_view (TwbTimeline *tl, gint64 start_ns, gint64 end_ns);
void twb_timeline_get_view (TwbTimeline *tl, gint64 *start_ns, gint64 *end_ns);
/* The whole extent of every group. */
void twb_timeline_zoom_all (TwbTimeline *tl);

/* The selected range (view time); start == end clears it.  Emits
 * "range-changed" when it changes (from the API or the pointer). */
void twb_timeline_set_range (TwbTimeline *tl, gint64 start_ns, gint64 end_ns);
/* FALSE (and 0, 0) when there is no range. */
gboolean twb_timeline_get_range (TwbTimeline *tl, gint64 *start_ns, gint64 *end_ns);

/* The selected slice.  ref NULL clears.  Emits "slice-selected" and
 * scrolls the lane into view when the slice is off screen. */
void twb_timeline_select_slice (TwbTimeline *tl, const TwbSliceRef *ref);
gboolean twb_timeline_get_selected_slice (TwbTimeline *tl, TwbSliceRef *out);
/* The selected slice's collective on every rank (tw_coll_peer, ranks.h:
 * rank, lane, slice index, skew, wait) when it is one and at least two
 * ranks hold it, else NULL; *group (may be NULL) gets their group.
 * Borrowed: valid until the selection changes. */
const GArray *twb_timeline_get_collective_peers (TwbTimeline *tl, guint *group);

/* A critical path to draw over group's lanes (tw_path_segment, ranks.h:
 * tw_trace_critical_path_median of the group's trace): its ops and
 * collectives outlined, its waits and gaps dashed along their rank's step
 * lane, a line where it goes from one rank (or lane) to the next.
 * Copied; NULL or empty clears it (as does twb_timeline_clear). */
void twb_timeline_set_critical_path (TwbTimeline *tl, guint group, const GArray *segments);
/* The path drawn (borrowed, until the next set or clear), NULL when none;
 * *group (may be NULL) gets its group. */
const GArray *twb_timeline_get_critical_path (TwbTimeline *tl, guint *group);

/* Slices whose "nodes" argument (a comma list) names any of node_ids are
 * drawn highlighted (NULL or empty: none).  Used for the canvas → timeline
 * link; does not change the selected slice. */
void twb_timeline_set_highlight_nodes (TwbTimeline *tl, const char *const *node_ids);
/* How many slices the highlight covers now (every group). */
guint64 twb_timeline_n_highlighted (TwbTimeline *tl);
/* Slices whose name contains text (case-insensitive) are drawn emphasised
 * and the rest dimmed (NULL or "": no search).  Returns how many match. */
guint64 twb_timeline_set_search (TwbTimeline *tl, const char *text);
/* Selects the next (forward) or previous match after the selected slice
 * (in view time order, any lane) and moves the view to show it.  FALSE
 * when there is none. */
gboolean twb_timeline_search_step (TwbTimeline *tl, gboolean forward);

/* Collapsed processes show one summary row instead of their lanes. */
void twb_timeline_set_collapsed (TwbTimeline *tl, guint group, int pid, gboolean collapsed);
gboolean twb_timeline_get_collapsed (TwbTimeline *tl, guint group, int pid);

/* Where a slice is drawn, in widget coordinates (for tests driving the
 * pointer).  FALSE when it is not visible (outside the view, collapsed,
 * scrolled away, or narrower than a pixel). */
gboolean twb_timeline_slice_rect (TwbTimeline *tl, const TwbSliceRef *ref, graphene_rect_t *out);
/* View time at widget x, and back. */
gint64 twb_timeline_x_to_time (TwbTimeline *tl, double x);
double twb_timeline_time_to_x (TwbTimeline *tl, gint64 t_ns);

/* Draws what snapshot () draws for a width × height widget into cr: the
 * frame-time benchmark and image exports call it. */
void twb_timeline_render (TwbTimeline *tl, cairo_t *cr, int width, int height);

/* Signals:
 *   "slice-selected" (TwbTimeline *, gpointer ref_or_null)  a const TwbSliceRef *, NULL when cleared
 *   "range-changed"  (TwbTimeline *)
 *   "view-changed"   (TwbTimeline *)
 */

G_END_DECLS
