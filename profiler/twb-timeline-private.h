/* twb-timeline-private.h — what twb-timeline.c (the widget: API, input,
 * indexes built at add_trace) and twb-timeline-draw.c (layout of a frame
 * and drawing) share.  Also the test hooks the timeline test drives the
 * pointer handlers through. */
#pragma once

#include "profiler/twb-timeline.h"

G_BEGIN_DECLS

/* Sizes in pixels: the ruler, the names' gutter, a slice row (a line of
 * ~13 px text with padding), a counter track, a group title and a process
 * header row. */
#define TL_RULER_H 24.0
#define TL_GUTTER_W 180.0
#define TL_ROW_H 18.0
#define TL_COUNTER_H 36.0
#define TL_GROUP_H 24.0
#define TL_PROC_H 20.0
/* A label every ~100 px on the ruler; names inside slices at least this wide. */
#define TL_TICK_PX 100.0
#define TL_LABEL_MIN_PX 30.0
/* The narrowest view (ns) and the least drag that selects (a smaller one is a click). */
#define TL_MIN_VIEW_NS 100
#define TL_DRAG_MIN_PX 3.0
/* All visible flows are drawn below this many in view (else only the selected slice's). */
#define TL_MAX_FLOWS 500
#define TL_N_COLOURS 12

/* One depth of one lane: its slices' indexes on the lane in start order,
 * their starts, ends and the running maximum of their ends (trace time; the
 * maximum because slices that overlap without nesting share a depth), so
 * the first slice in view is a binary search.  match / hl: prefix counts
 * (n + 1) of search matches and highlighted slices, NULL when off. */
typedef struct
{
  guint n;
  guint32 *idx;
  gint64 *start;
  gint64 *end;
  gint64 *maxend;
  guint8 *colour; /* palette index from the name */
  guint32 *match;
  guint32 *hl;
} TlDepth;

typedef struct
{
  guint lane;
  guint n_depths;
  TlDepth *depths;
  guint n_instants;
  gint64 *instants;
} TlLane;

/* One counter track: the samples of (pid, name) in time order. */
typedef struct
{
  int pid;
  const char *name;
  guint n;
  gint64 *t;
  double *v;
  double vmin, vmax;
} TlCounter;

typedef struct
{
  int pid;
  const char *name;
  gboolean collapsed;
  GArray *lanes;    /* guint: lane indexes */
  GArray *counters; /* guint: TlCounter indexes */
} TlProcess;

/* A flow with the slices it joins (G_MAXUINT when none starts there). */
typedef struct
{
  guint from_lane, to_lane;
  guint from_index, to_index;
  gint64 from_ns, to_ns;
} TlFlow;

typedef struct
{
  const tw_trace *trace;
  char *title;
  gint64 offset;
  gint64 start, end; /* trace time extent */
  guint n_lanes;
  TlLane *lanes;
  GArray *counters;  /* TlCounter */
  GArray *processes; /* TlProcess */
  guint n_flows;
  TlFlow *flows;
  int *lane_row;     /* per lane: its row, or its process's summary row when collapsed */
} TlGroup;

typedef enum
{
  TL_ROW_GROUP,
  TL_ROW_PROCESS,
  TL_ROW_LANE,
  TL_ROW_SUMMARY,
  TL_ROW_COUNTER,
} TlRowKind;

/* A row of the layout, y in content coordinates (0 under the ruler). */
typedef struct
{
  TlRowKind kind;
  guint group;
  guint process;
  guint item; /* the lane (TL_ROW_LANE) or counter (TL_ROW_COUNTER) index */
  double y, h;
} TlRow;

/* A search match in view-time order. */
typedef struct
{
  gint64 t;
  guint group, lane, index;
} TlMatch;

struct _TwbTimeline
{
  GtkWidget parent_instance;
  GPtrArray *groups; /* TlGroup */
  gint64 base;       /* view time = trace time - offset - base */
  gint64 v0, v1;
  gboolean has_range;
  gint64 r0, r1;
  gboolean has_sel;
  TwbSliceRef sel;
  char *search_fold;  /* casefolded search text, NULL when none */
  GArray *matches;    /* TlMatch */
  GHashTable *hl_nodes; /* node id → itself, NULL when none */
  guint64 n_highlighted;
  GArray *peers;        /* tw_coll_peer: the selected collective on every rank, NULL when none */
  guint peers_group;
  GArray *path;         /* tw_path_segment: the critical path drawn, NULL when none */
  guint path_group;

  GArray *rows; /* TlRow */
  double content_h;
  double scroll_y;
  int width, height; /* last allocation (or render when never allocated) */

  gboolean pointer_in;
  double pointer_x, pointer_y;
  double press_x, press_y; /* where the last click gesture began */
  guint drag_button;
  gboolean drag_selecting;
  double drag_x0, drag_y0;
  gint64 drag_v0, drag_v1;
  double drag_scroll0;

  GHashTable *labels; /* const char * name → TlLabel */
  cairo_surface_t *raster; /* the frame's slices as pixels (twb-timeline-draw.c) */
  double raster_scale;
  PangoFontDescription *small_font;
};

typedef struct
{
  PangoLayout *layout;
  int w, h;
} TlLabel;

/* twb-timeline.c */
gint64 tl_shift (TwbTimeline *tl, guint group);
const tw_slice *tl_slice (TwbTimeline *tl, guint group, guint lane, guint index);
gboolean tl_depth_slice_at (const TlDepth *d, gint64 t, double slack_ns, guint *out);
guint tl_lower_bound (const gint64 *a, guint n, gint64 t);
/* The same from position from on, when the answer is likely near: an
 * exponential search (the next pixel column's first slice, a few dozen
 * on; a cold binary search over the whole depth misses cache each step). */
guint tl_gallop (const gint64 *a, guint n, guint from, gint64 t);
/* A slice name's palette index (a stable hash). */
guint tl_colour_of (const char *name);
void tl_clamp_scroll (TwbTimeline *tl);
gboolean tl_is_selected (TwbTimeline *tl, guint group, guint lane, guint index);
/* The allocated (or last rendered) width, and pixels per ns in the view. */
int tl_track_width (TwbTimeline *tl);
double tl_px_per_ns (TwbTimeline *tl);
/* Scales the view by factor around view time at (kept at its x); pans by a fraction of the view. */
void tl_zoom_around (TwbTimeline *tl, double factor, gint64 at);
void tl_pan_by (TwbTimeline *tl, double fraction);
/* The pointer's time when it is over the tracks, else the view's middle. */
gint64 tl_zoom_anchor (TwbTimeline *tl);

/* twb-timeline-input.c */
void tl_input_class_init (GtkWidgetClass *wc);
void tl_input_init (TwbTimeline *tl);

/* The peer (peers' index) that the slice is, or -1. */
int tl_peer_of (TwbTimeline *tl, guint group, guint lane, guint index);

/* twb-timeline-path.c: the critical path over the lanes (inside the track clip). */
void tl_draw_path (TwbTimeline *tl, cairo_t *cr, int width);

/* twb-timeline-draw.c */
void tl_layout (TwbTimeline *tl);
void tl_draw (TwbTimeline *tl, cairo_t *cr, int width, int height);
/* The view's background (twb_timeline_render paints it; in a window CSS does). */
void tl_draw_background (TwbTimeline *tl, cairo_t *cr, int width, int height);
void tl_labels_clear (TwbTimeline *tl);
/* Formats a duration or a time with a unit (ns, µs, ms, s). */
char *tl_format_ns (gint64 ns);
/* A ruler label for tick t (step apart; span: the view's largest |time|). */
void tl_tick_label (char *buf, gsize size, gint64 t, gint64 step, double span, gboolean relative);
/* The row under content y, or -1. */
int tl_row_at (TwbTimeline *tl, double content_y);

/* Test hooks: what the click and drag gestures do at widget coordinates
 * (button 1 left, 2 middle, 3 right). */
void twb_timeline_test_click (TwbTimeline *tl, double x, double y, int n_press);
void twb_timeline_test_drag (TwbTimeline *tl, guint button, double x0, double y0, double x1,
                             double y1);
/* The tooltip's text at widget coordinates (NULL when none); free it. */
char *twb_timeline_test_tooltip (TwbTimeline *tl, double x, double y);
double twb_timeline_get_scroll (TwbTimeline *tl);

G_END_DECLS
