/* twb-timeline.c — the timeline widget: groups and their indexes (built
 * once at add_trace), the view, range, selection, search and highlight,
 * actions and pointer / keyboard input.  Drawing: twb-timeline-draw.c. */
#define G_LOG_DOMAIN "twb-timeline"

#include "profiler/twb-timeline-private.h"
#include "profiler/ranks.h"

#include <math.h>
#include <string.h>

G_DEFINE_FINAL_TYPE (TwbTimeline, twb_timeline, GTK_TYPE_WIDGET)

enum
{
  SIG_SLICE_SELECTED,
  SIG_RANGE_CHANGED,
  SIG_VIEW_CHANGED,
  N_SIGNALS
};
static guint signals[N_SIGNALS];

/* ---- indexes ---------------------------------------------------------- */

guint
tl_lower_bound (const gint64 *a, guint n, gint64 t)
{
  guint lo = 0, hi = n;
  while (lo < hi)
    {
      guint mid = lo + (hi - lo) / 2;
      if (a[mid] < t)
        lo = mid + 1;
      else
        hi = mid;
    }
  return lo;
}

guint
tl_gallop (const gint64 *a, guint n, guint from, gint64 t)
{
  if (from >= n || a[from] >= t)
    return from;
  /* a[lo] < t; find hi with a[hi] >= t (or n), doubling the step. */
  guint lo = from, step = 1, hi = from + 1;
  while (hi < n && a[hi] < t)
    {
      lo = hi;
      step *= 2;
      hi = n - lo > step ? lo + step : n;
    }
  return lo + 1 + tl_lower_bound (a + lo + 1, hi - lo - 1, t);
}

guint
tl_colour_of (const char *name)
{
  return name ? g_str_hash (name) % TL_N_COLOURS : 0;
}

/* The position in d of the slice covering trace time t (the latest
 * starting), else of the nearest within slack_ns (so a narrow one can be
 * hit); FALSE when none. */
gboolean
tl_depth_slice_at (const TlDepth *d, gint64 t, double slack_ns, guint *out)
{
  guint j = tl_lower_bound (d->start, d->n, t + 1); /* the first start after t */
  guint best = G_MAXUINT;
  double best_dist = slack_ns;
  /* Slices on one depth overlap only when they do not nest: a few back at most. */
  for (guint k = j; k > 0 && j - k < 16; k--)
    {
      guint i = k - 1;
      /* maxend is a running maximum: nothing before i reaches t - slack. */
      if ((double) d->maxend[i] + slack_ns < (double) t)
        break;
      if (d->end[i] > t)
        {
          *out = i;
          return TRUE;
        }
      double dist = (double) (t - d->end[i]);
      if (dist <= best_dist)
        {
          best = i;
          best_dist = dist;
        }
    }
  if (j < d->n && (double) (d->start[j] - t) <= best_dist)
    best = j;
  *out = best;
  return best != G_MAXUINT;
}

static void
group_free (gpointer p)
{
  TlGroup *g = p;
  for (guint i = 0; i < g->n_lanes; i++)
    {
      TlLane *l = &g->lanes[i];
      for (guint d = 0; d < l->n_depths; d++)
        {
          g_free (l->depths[d].idx);
          g_free (l->depths[d].start);
          g_free (l->depths[d].end);
          g_free (l->depths[d].maxend);
          g_free (l->depths[d].colour);
          g_free (l->depths[d].match);
          g_free (l->depths[d].hl);
        }
      g_free (l->depths);
      g_free (l->instants);
    }
  g_free (g->lanes);
  for (guint i = 0; i < g->counters->len; i++)
    {
      TlCounter *c = &g_array_index (g->counters, TlCounter, i);
      g_free (c->t);
      g_free (c->v);
    }
  g_array_unref (g->counters);
  for (guint i = 0; i < g->processes->len; i++)
    {
      TlProcess *pr = &g_array_index (g->processes, TlProcess, i);
      g_array_unref (pr->lanes);
      g_array_unref (pr->counters);
    }
  g_array_unref (g->processes);
  g_free (g->flows);
  g_free (g->lane_row);
  g_free (g->title);
  g_free (g);
}

static void
index_lane (const tw_trace *t, guint lane, TlLane *l)
{
  guint n = tw_trace_lane_n_slices (t, lane);
  l->lane = lane;
  guint max_depth = 0;
  for (guint i = 0; i < n; i++)
    max_depth = MAX (max_depth, tw_trace_lane_slice (t, lane, i)->depth);
  l->n_depths = n > 0 ? max_depth + 1 : 0;
  l->depths = g_new0 (TlDepth, MAX (l->n_depths, 1));
  g_autofree guint *counts = g_new0 (guint, MAX (l->n_depths, 1));
  for (guint i = 0; i < n; i++)
    counts[tw_trace_lane_slice (t, lane, i)->depth]++;
  for (guint d = 0; d < l->n_depths; d++)
    {
      l->depths[d].idx = g_new (guint32, MAX (counts[d], 1));
      l->depths[d].start = g_new (gint64, MAX (counts[d], 1));
      l->depths[d].end = g_new (gint64, MAX (counts[d], 1));
      l->depths[d].maxend = g_new (gint64, MAX (counts[d], 1));
      l->depths[d].colour = g_new (guint8, MAX (counts[d], 1));
    }
  for (guint i = 0; i < n; i++)
    {
      const tw_slice *s = tw_trace_lane_slice (t, lane, i);
      TlDepth *d = &l->depths[s->depth];
      gint64 end = s->start_ns + MAX (s->dur_ns, 0);
      d->idx[d->n] = i;
      d->start[d->n] = s->start_ns;
      d->end[d->n] = end;
      d->colour[d->n] = tl_colour_of (s->name);
      d->maxend[d->n] = d->n > 0 ? MAX (d->maxend[d->n - 1], end) : end;
      d->n++;
    }
  l->n_instants = tw_trace_lane_n_instants (t, lane);
  l->instants = g_new (gint64, MAX (l->n_instants, 1));
  for (guint i = 0; i < l->n_instants; i++)
    l->instants[i] = tw_trace_lane_instant (t, lane, i)->t_ns;
}

/* The group's process of pid, made when new; index maps pid → its index +
 * 1 (a linear search made 100,000 processes take minutes to open). */
static TlProcess *
group_process (TlGroup *g, GHashTable *index, int pid, const char *name)
{
  guint at = GPOINTER_TO_UINT (g_hash_table_lookup (index, GINT_TO_POINTER (pid)));
  if (at > 0)
    return &g_array_index (g->processes, TlProcess, at - 1);
  TlProcess pr = { .pid = pid, .name = name };
  pr.lanes = g_array_new (FALSE, FALSE, sizeof (guint));
  pr.counters = g_array_new (FALSE, FALSE, sizeof (guint));
  g_array_append_val (g->processes, pr);
  g_hash_table_insert (index, GINT_TO_POINTER (pid), GUINT_TO_POINTER (g->processes->len));
  return &g_array_index (g->processes, TlProcess, g->processes->len - 1);
}

/* The slice on lane starting at ns (the deepest of those starting there:
 * a flow joins the innermost, as a launch inside an op), or G_MAXUINT. */
static guint
find_flow_slice (const TlGroup *g, guint lane, gint64 ns)
{
  if (lane >= g->n_lanes)
    return G_MAXUINT;
  const TlLane *l = &g->lanes[lane];
  for (guint d = l->n_depths; d > 0; d--)
    {
      const TlDepth *dp = &l->depths[d - 1];
      guint i = tl_lower_bound (dp->start, dp->n, ns);
      if (i < dp->n && dp->start[i] == ns)
        return dp->idx[i];
    }
  return G_MAXUINT;
}

typedef struct
{
  int pid;
  const char *name;
} TrackKey;

static guint
track_hash (gconstpointer p)
{
  const TrackKey *k = p;
  return (k->name ? g_str_hash (k->name) : 0) * 31 + (guint) k->pid;
}

static gboolean
track_equal (gconstpointer pa, gconstpointer pb)
{
  const TrackKey *a = pa, *b = pb;
  return a->pid == b->pid && g_strcmp0 (a->name, b->name) == 0;
}

static TlGroup *
group_new (const tw_trace *t, const char *title, gint64 offset)
{
  TlGroup *g = g_new0 (TlGroup, 1);
  g->trace = t;
  g->title = g_strdup (title ? title : "");
  g->offset = offset;
  g->start = tw_trace_start_ns (t);
  g->end = g->start + tw_trace_duration_ns (t);
  g->n_lanes = tw_trace_n_lanes (t);
  g->lanes = g_new0 (TlLane, MAX (g->n_lanes, 1));
  g->lane_row = g_new0 (int, MAX (g->n_lanes, 1));
  g->counters = g_array_new (FALSE, TRUE, sizeof (TlCounter));
  g->processes = g_array_new (FALSE, TRUE, sizeof (TlProcess));
  g_autoptr (GHashTable) process_index = g_hash_table_new (g_direct_hash, g_direct_equal);
  for (guint i = 0; i < tw_trace_n_processes (t); i++)
    group_process (g, process_index, tw_trace_process (t, i)->pid, tw_trace_process (t, i)->name);
  for (guint i = 0; i < g->n_lanes; i++)
    {
      index_lane (t, i, &g->lanes[i]);
      TlProcess *pr = group_process (g, process_index, tw_trace_lane (t, i)->pid, NULL);
      g_array_append_val (pr->lanes, i);
    }

  /* Counter tracks per (pid, name): count, then fill (samples come sorted by time). */
  g_autoptr (GHashTable) tracks = g_hash_table_new_full (track_hash, track_equal, g_free, NULL);
  guint n_samples = tw_trace_n_counters (t);
  g_autofree guint *track_of = g_new (guint, MAX (n_samples, 1));
  for (guint i = 0; i < n_samples; i++)
    {
      const tw_counter_sample *s = tw_trace_counter (t, i);
      TrackKey key = { s->pid, s->name };
      gpointer v;
      guint k;
      if (g_hash_table_lookup_extended (tracks, &key, NULL, &v))
        k = GPOINTER_TO_UINT (v);
      else
        {
          TlCounter c = { .pid = s->pid, .name = s->name, .vmin = INFINITY, .vmax = -INFINITY };
          k = g->counters->len;
          g_array_append_val (g->counters, c);
          g_hash_table_insert (tracks, g_memdup2 (&key, sizeof key), GUINT_TO_POINTER (k));
        }
      track_of[i] = k;
      g_array_index (g->counters, TlCounter, k).n++;
    }
  for (guint k = 0; k < g->counters->len; k++)
    {
      TlCounter *c = &g_array_index (g->counters, TlCounter, k);
      c->t = g_new (gint64, c->n);
      c->v = g_new (double, c->n);
      c->n = 0;
      TlProcess *pr = group_process (g, process_index, c->pid, NULL);
      g_array_append_val (pr->counters, k);
    }
  for (guint i = 0; i < n_samples; i++)
    {
      const tw_counter_sample *s = tw_trace_counter (t, i);
      TlCounter *c = &g_array_index (g->counters, TlCounter, track_of[i]);
      c->t[c->n] = s->t_ns;
      c->v[c->n] = s->value;
      c->n++;
      if (isfinite (s->value))
        {
          c->vmin = MIN (c->vmin, s->value);
          c->vmax = MAX (c->vmax, s->value);
        }
    }

  g->n_flows = tw_trace_n_flows (t);
  g->flows = g_new0 (TlFlow, MAX (g->n_flows, 1));
  for (guint i = 0; i < g->n_flows; i++)
    {
      const tw_flow *f = tw_trace_flow (t, i);
      TlFlow *o = &g->flows[i];
      o->from_lane = f->from_lane;
      o->to_lane = f->to_lane;
      o->from_ns = f->from_ns;
      o->to_ns = f->to_ns;
      o->from_index = find_flow_slice (g, f->from_lane, f->from_ns);
      o->to_index = find_flow_slice (g, f->to_lane, f->to_ns);
    }
  return g;
}

/* ---- helpers ---------------------------------------------------------- */

gint64
tl_shift (TwbTimeline *tl, guint group)
{
  TlGroup *g = g_ptr_array_index (tl->groups, group);
  return g->offset + tl->base;
}

const tw_slice *
tl_slice (TwbTimeline *tl, guint group, guint lane, guint index)
{
  if (group >= tl->groups->len)
    return NULL;
  TlGroup *g = g_ptr_array_index (tl->groups, group);
  if (lane >= g->n_lanes || index >= tw_trace_lane_n_slices (g->trace, lane))
    return NULL;
  return tw_trace_lane_slice (g->trace, lane, index);
}

gboolean
tl_is_selected (TwbTimeline *tl, guint group, guint lane, guint index)
{
  return tl->has_sel && tl->sel.group == group && tl->sel.lane == lane && tl->sel.index == index;
}

int
tl_track_width (TwbTimeline *tl)
{
  return tl->width > 0 ? tl->width : 800;
}

double
tl_px_per_ns (TwbTimeline *tl)
{
  double tw = MAX (tl_track_width (tl) - TL_GUTTER_W, 1.0);
  return tw / (double) MAX (tl->v1 - tl->v0, 1);
}

gint64
twb_timeline_x_to_time (TwbTimeline *tl, double x)
{
  g_return_val_if_fail (TWB_IS_TIMELINE (tl), 0);
  return tl->v0 + (gint64) llround ((x - TL_GUTTER_W) / tl_px_per_ns (tl));
}

double
twb_timeline_time_to_x (TwbTimeline *tl, gint64 t_ns)
{
  g_return_val_if_fail (TWB_IS_TIMELINE (tl), 0);
  return TL_GUTTER_W + (double) (t_ns - tl->v0) * tl_px_per_ns (tl);
}

void
tl_clamp_scroll (TwbTimeline *tl)
{
  int h = tl->height > 0 ? tl->height : 600;
  double max = MAX (0.0, tl->content_h - (h - TL_RULER_H));
  /* Whole pixels: rows stay pixel-aligned (see the drawing). */
  tl->scroll_y = round (CLAMP (tl->scroll_y, 0.0, max));
}

double
twb_timeline_get_scroll (TwbTimeline *tl)
{
  return tl->scroll_y;
}

static void
relayout (TwbTimeline *tl)
{
  tl_layout (tl);
  tl_clamp_scroll (tl);
  gtk_widget_queue_resize (GTK_WIDGET (tl));
}

/* ---- groups ----------------------------------------------------------- */

void
twb_timeline_clear (TwbTimeline *tl)
{
  g_return_if_fail (TWB_IS_TIMELINE (tl));
  gboolean had_sel = tl->has_sel, had_range = tl->has_range;
  g_ptr_array_set_size (tl->groups, 0);
  tl->base = 0;
  tl->has_sel = FALSE;
  g_clear_pointer (&tl->peers, g_array_unref);
  g_clear_pointer (&tl->path, g_array_unref);
  tl->has_range = FALSE;
  tl->r0 = tl->r1 = 0;
  g_clear_pointer (&tl->search_fold, g_free);
  g_array_set_size (tl->matches, 0);
  g_clear_pointer (&tl->hl_nodes, g_hash_table_unref);
  tl_labels_clear (tl);
  tl->scroll_y = 0;
  relayout (tl);
  gtk_widget_queue_draw (GTK_WIDGET (tl));
  if (had_sel)
    g_signal_emit (tl, signals[SIG_SLICE_SELECTED], 0, NULL);
  if (had_range)
    g_signal_emit (tl, signals[SIG_RANGE_CHANGED], 0);
}

static gboolean
extent (TwbTimeline *tl, gint64 *start, gint64 *end)
{
  gboolean any = FALSE;
  gint64 s = 0, e = 0;
  for (guint i = 0; i < tl->groups->len; i++)
    {
      TlGroup *g = g_ptr_array_index (tl->groups, i);
      gint64 gs = g->start - g->offset, ge = g->end - g->offset;
      s = any ? MIN (s, gs) : gs;
      e = any ? MAX (e, ge) : ge;
      any = TRUE;
    }
  *start = s;
  *end = e;
  return any;
}

static void apply_search (TwbTimeline *tl);
static void apply_highlight (TwbTimeline *tl);

guint
twb_timeline_add_trace (TwbTimeline *tl, const tw_trace *t, const char *title, gint64 offset_ns)
{
  g_return_val_if_fail (TWB_IS_TIMELINE (tl), 0);
  g_return_val_if_fail (t != NULL, 0);
  gboolean was_empty = tl->groups->len == 0;
  g_ptr_array_add (tl->groups, group_new (t, title, offset_ns));
  /* The base moves to the earliest event: shift the view and range with it
   * so what is shown stays put. */
  gint64 s, e;
  extent (tl, &s, &e);
  gint64 delta = s - tl->base;
  tl->base = s;
  if (!was_empty)
    {
      tl->v0 -= delta;
      tl->v1 -= delta;
      if (tl->has_range)
        {
          tl->r0 -= delta;
          tl->r1 -= delta;
        }
    }
  if (tl->search_fold)
    apply_search (tl);
  if (tl->hl_nodes)
    apply_highlight (tl);
  relayout (tl);
  if (was_empty)
    twb_timeline_zoom_all (tl);
  else if (delta != 0)
    {
      /* The same times under new numbers. */
      g_signal_emit (tl, signals[SIG_VIEW_CHANGED], 0);
      if (tl->has_range)
        g_signal_emit (tl, signals[SIG_RANGE_CHANGED], 0);
    }
  gtk_widget_queue_draw (GTK_WIDGET (tl));
  return tl->groups->len - 1;
}

guint
twb_timeline_n_groups (TwbTimeline *tl)
{
  g_return_val_if_fail (TWB_IS_TIMELINE (tl), 0);
  return tl->groups->len;
}

const tw_trace *
twb_timeline_get_trace (TwbTimeline *tl, guint group)
{
  g_return_val_if_fail (TWB_IS_TIMELINE (tl), NULL);
  g_return_val_if_fail (group < tl->groups->len, NULL);
  return ((TlGroup *) g_ptr_array_index (tl->groups, group))->trace;
}

gint64
twb_timeline_get_offset (TwbTimeline *tl, guint group)
{
  g_return_val_if_fail (TWB_IS_TIMELINE (tl), 0);
  g_return_val_if_fail (group < tl->groups->len, 0);
  return ((TlGroup *) g_ptr_array_index (tl->groups, group))->offset;
}

/* ---- view and range ---------------------------------------------------- */

/* Views wider than this (a few hundred years) are refused: the pixel
 * arithmetic stays far from gint64 overflow. */
#define MAX_VIEW_NS ((gint64) 1 << 62)

void
twb_timeline_set_view (TwbTimeline *tl, gint64 start_ns, gint64 end_ns)
{
  g_return_if_fail (TWB_IS_TIMELINE (tl));
  if (end_ns < start_ns)
    {
      gint64 tmp = start_ns;
      start_ns = end_ns;
      end_ns = tmp;
    }
  start_ns = CLAMP (start_ns, -MAX_VIEW_NS / 2, MAX_VIEW_NS / 2);
  end_ns = CLAMP (end_ns, -MAX_VIEW_NS / 2, MAX_VIEW_NS / 2);
  if (end_ns - start_ns < TL_MIN_VIEW_NS)
    {
      gint64 mid = start_ns + (end_ns - start_ns) / 2;
      start_ns = mid - TL_MIN_VIEW_NS / 2;
      end_ns = start_ns + TL_MIN_VIEW_NS;
    }
  if (start_ns == tl->v0 && end_ns == tl->v1)
    return;
  tl->v0 = start_ns;
  tl->v1 = end_ns;
  gtk_widget_queue_draw (GTK_WIDGET (tl));
  g_signal_emit (tl, signals[SIG_VIEW_CHANGED], 0);
}

void
twb_timeline_get_view (TwbTimeline *tl, gint64 *start_ns, gint64 *end_ns)
{
  g_return_if_fail (TWB_IS_TIMELINE (tl));
  if (start_ns)
    *start_ns = tl->v0;
  if (end_ns)
    *end_ns = tl->v1;
}

void
twb_timeline_zoom_all (TwbTimeline *tl)
{
  g_return_if_fail (TWB_IS_TIMELINE (tl));
  gint64 s, e;
  if (!extent (tl, &s, &e))
    {
      twb_timeline_set_view (tl, 0, 1000);
      return;
    }
  twb_timeline_set_view (tl, s - tl->base, e - tl->base);
}

/* Scales the view by factor around view time at (kept at its x). */
void
tl_zoom_around (TwbTimeline *tl, double factor, gint64 at)
{
  double w = (double) (tl->v1 - tl->v0) * factor;
  w = CLAMP (w, (double) TL_MIN_VIEW_NS, (double) MAX_VIEW_NS / 2);
  double frac = (double) (at - tl->v0) / (double) MAX (tl->v1 - tl->v0, 1);
  gint64 s = at - (gint64) llround (w * frac);
  twb_timeline_set_view (tl, s, s + (gint64) llround (w));
}

void
tl_pan_by (TwbTimeline *tl, double fraction)
{
  gint64 d = (gint64) llround ((double) (tl->v1 - tl->v0) * fraction);
  twb_timeline_set_view (tl, tl->v0 + d, tl->v1 + d);
}

gint64
tl_zoom_anchor (TwbTimeline *tl)
{
  if (tl->pointer_in && tl->pointer_x >= TL_GUTTER_W)
    return twb_timeline_x_to_time (tl, tl->pointer_x);
  return tl->v0 + (tl->v1 - tl->v0) / 2;
}

void
twb_timeline_set_range (TwbTimeline *tl, gint64 start_ns, gint64 end_ns)
{
  g_return_if_fail (TWB_IS_TIMELINE (tl));
  if (end_ns < start_ns)
    {
      gint64 tmp = start_ns;
      start_ns = end_ns;
      end_ns = tmp;
    }
  gboolean has = start_ns != end_ns;
  if (has == tl->has_range && (!has || (start_ns == tl->r0 && end_ns == tl->r1)))
    return;
  tl->has_range = has;
  tl->r0 = has ? start_ns : 0;
  tl->r1 = has ? end_ns : 0;
  gtk_widget_queue_draw (GTK_WIDGET (tl));
  g_signal_emit (tl, signals[SIG_RANGE_CHANGED], 0);
}

gboolean
twb_timeline_get_range (TwbTimeline *tl, gint64 *start_ns, gint64 *end_ns)
{
  g_return_val_if_fail (TWB_IS_TIMELINE (tl), FALSE);
  if (start_ns)
    *start_ns = tl->has_range ? tl->r0 : 0;
  if (end_ns)
    *end_ns = tl->has_range ? tl->r1 : 0;
  return tl->has_range;
}

/* ---- selection -------------------------------------------------------- */

static int
lane_row (TwbTimeline *tl, guint group, guint lane)
{
  TlGroup *g = g_ptr_array_index (tl->groups, group);
  return g->lane_row[lane];
}

/* Scrolls vertically so the slice's row shows. */
static void
scroll_to_slice (TwbTimeline *tl, const TwbSliceRef *ref)
{
  int r = lane_row (tl, ref->group, ref->lane);
  if (r < 0)
    return;
  const TlRow *row = &g_array_index (tl->rows, TlRow, r);
  const tw_slice *s = tl_slice (tl, ref->group, ref->lane, ref->index);
  double y = row->y + (row->kind == TL_ROW_LANE ? s->depth * TL_ROW_H : 0);
  int h = tl->height > 0 ? tl->height : 600;
  double visible = h - TL_RULER_H;
  if (y < tl->scroll_y || y + TL_ROW_H > tl->scroll_y + visible)
    tl->scroll_y = y - visible / 3;
  tl_clamp_scroll (tl);
}

/* The selected collective on every rank (ranks.h), for the drawing and
 * the tooltips; only where two ranks or more hold it. */
static void
update_peers (TwbTimeline *tl)
{
  g_clear_pointer (&tl->peers, g_array_unref);
  if (!tl->has_sel)
    return;
  TlGroup *g = g_ptr_array_index (tl->groups, tl->sel.group);
  tl->peers = tw_trace_collective_peers (g->trace, tl->sel.lane, tl->sel.index);
  tl->peers_group = tl->sel.group;
  if (tl->peers && tl->peers->len < 2)
    g_clear_pointer (&tl->peers, g_array_unref);
}

int
tl_peer_of (TwbTimeline *tl, guint group, guint lane, guint index)
{
  for (guint i = 0; tl->peers && group == tl->peers_group && i < tl->peers->len; i++)
    {
      const tw_coll_peer *p = &g_array_index (tl->peers, tw_coll_peer, i);
      if (p->lane == lane && p->slice_index == index)
        return (int) i;
    }
  return -1;
}

const GArray *
twb_timeline_get_collective_peers (TwbTimeline *tl, guint *group)
{
  g_return_val_if_fail (TWB_IS_TIMELINE (tl), NULL);
  if (group && tl->peers)
    *group = tl->peers_group;
  return tl->peers;
}

void
twb_timeline_select_slice (TwbTimeline *tl, const TwbSliceRef *ref)
{
  g_return_if_fail (TWB_IS_TIMELINE (tl));
  if (ref && !tl_slice (tl, ref->group, ref->lane, ref->index))
    {
      g_warning ("twb_timeline_select_slice: no slice %u on lane %u of group %u", ref->index,
                 ref->lane, ref->group);
      return;
    }
  if (!ref)
    {
      if (!tl->has_sel)
        return;
      tl->has_sel = FALSE;
      update_peers (tl);
      gtk_widget_queue_draw (GTK_WIDGET (tl));
      g_signal_emit (tl, signals[SIG_SLICE_SELECTED], 0, NULL);
      return;
    }
  if (tl_is_selected (tl, ref->group, ref->lane, ref->index))
    return;
  tl->has_sel = TRUE;
  tl->sel = *ref;
  update_peers (tl);
  scroll_to_slice (tl, ref);
  gtk_widget_queue_draw (GTK_WIDGET (tl));
  TwbSliceRef copy = *ref;
  g_signal_emit (tl, signals[SIG_SLICE_SELECTED], 0, &copy);
}

gboolean
twb_timeline_get_selected_slice (TwbTimeline *tl, TwbSliceRef *out)
{
  g_return_val_if_fail (TWB_IS_TIMELINE (tl), FALSE);
  if (tl->has_sel && out)
    *out = tl->sel;
  return tl->has_sel;
}

/* ---- highlight and search --------------------------------------------- */

/* Whether the comma list names one of the highlighted nodes. */
static gboolean
nodes_highlighted (GHashTable *hl, const char *list)
{
  if (!list)
    return FALSE;
  g_auto (GStrv) ids = g_strsplit (list, ",", -1);
  for (guint i = 0; ids[i]; i++)
    if (g_hash_table_contains (hl, g_strstrip (ids[i])))
      return TRUE;
  return FALSE;
}

typedef gboolean (*SliceTest) (TwbTimeline *tl, const tw_slice *s, GHashTable *cache);

/* Fills each depth's prefix counts of slices passing test (field: the
 * match or hl member); returns how many passed. */
static guint64
build_prefix (TwbTimeline *tl, gsize field, SliceTest test)
{
  guint64 total = 0;
  for (guint gi = 0; gi < tl->groups->len; gi++)
    {
      TlGroup *g = g_ptr_array_index (tl->groups, gi);
      /* Names and argument lists are interned in the trace: one answer per pointer. */
      g_autoptr (GHashTable) cache = g_hash_table_new (NULL, NULL);
      for (guint li = 0; li < g->n_lanes; li++)
        {
          TlLane *l = &g->lanes[li];
          for (guint d = 0; d < l->n_depths; d++)
            {
              TlDepth *dp = &l->depths[d];
              guint32 **slot = G_STRUCT_MEMBER_P (dp, field);
              g_free (*slot);
              guint32 *p = *slot = g_new (guint32, dp->n + 1);
              p[0] = 0;
              for (guint i = 0; i < dp->n; i++)
                {
                  const tw_slice *s = tw_trace_lane_slice (g->trace, li, dp->idx[i]);
                  gboolean pass = test (tl, s, cache);
                  p[i + 1] = p[i] + (pass ? 1 : 0);
                  if (pass && field == G_STRUCT_OFFSET (TlDepth, match))
                    {
                      TlMatch m = { s->start_ns - g->offset - tl->base, gi, li, dp->idx[i] };
                      g_array_append_val (tl->matches, m);
                    }
                }
              total += p[dp->n];
            }
        }
    }
  return total;
}

static void
free_prefix (TwbTimeline *tl, gsize field)
{
  for (guint gi = 0; gi < tl->groups->len; gi++)
    {
      TlGroup *g = g_ptr_array_index (tl->groups, gi);
      for (guint li = 0; li < g->n_lanes; li++)
        for (guint d = 0; d < g->lanes[li].n_depths; d++)
          g_clear_pointer ((guint32 **) G_STRUCT_MEMBER_P (&g->lanes[li].depths[d], field), g_free);
    }
}

/* Cache values: 1 no, 2 yes (NULL means not yet asked). */
static gboolean
test_highlight (TwbTimeline *tl, const tw_slice *s, GHashTable *cache)
{
  if (s->n_args == 0)
    return FALSE;
  gpointer v = g_hash_table_lookup (cache, s->args);
  if (!v)
    {
      v = GINT_TO_POINTER (nodes_highlighted (tl->hl_nodes, tw_slice_arg (s, "nodes")) ? 2 : 1);
      g_hash_table_insert (cache, (gpointer) s->args, v);
    }
  return GPOINTER_TO_INT (v) == 2;
}

static gboolean
test_search (TwbTimeline *tl, const tw_slice *s, GHashTable *cache)
{
  if (!s->name)
    return FALSE;
  gpointer v = g_hash_table_lookup (cache, s->name);
  if (!v)
    {
      g_autofree char *fold = g_utf8_casefold (s->name, -1);
      v = GINT_TO_POINTER (strstr (fold, tl->search_fold) ? 2 : 1);
      g_hash_table_insert (cache, (gpointer) s->name, v);
    }
  return GPOINTER_TO_INT (v) == 2;
}

static void
apply_highlight (TwbTimeline *tl)
{
  tl->n_highlighted = build_prefix (tl, G_STRUCT_OFFSET (TlDepth, hl), test_highlight);
}

guint64
twb_timeline_n_highlighted (TwbTimeline *tl)
{
  g_return_val_if_fail (TWB_IS_TIMELINE (tl), 0);
  return tl->hl_nodes ? tl->n_highlighted : 0;
}

void
twb_timeline_set_highlight_nodes (TwbTimeline *tl, const char *const *node_ids)
{
  g_return_if_fail (TWB_IS_TIMELINE (tl));
  g_clear_pointer (&tl->hl_nodes, g_hash_table_unref);
  if (node_ids && node_ids[0])
    {
      tl->hl_nodes = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
      for (guint i = 0; node_ids[i]; i++)
        if (node_ids[i][0])
          g_hash_table_add (tl->hl_nodes, g_strdup (node_ids[i]));
      if (g_hash_table_size (tl->hl_nodes) == 0)
        g_clear_pointer (&tl->hl_nodes, g_hash_table_unref);
    }
  if (tl->hl_nodes)
    apply_highlight (tl);
  else
    free_prefix (tl, G_STRUCT_OFFSET (TlDepth, hl));
  gtk_widget_queue_draw (GTK_WIDGET (tl));
}

static int
cmp_match (gconstpointer pa, gconstpointer pb)
{
  const TlMatch *a = pa, *b = pb;
  if (a->t != b->t)
    return a->t < b->t ? -1 : 1;
  if (a->group != b->group)
    return a->group < b->group ? -1 : 1;
  if (a->lane != b->lane)
    return a->lane < b->lane ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

static guint64
apply_search_count (TwbTimeline *tl)
{
  g_array_set_size (tl->matches, 0);
  guint64 n = build_prefix (tl, G_STRUCT_OFFSET (TlDepth, match), test_search);
  g_array_sort (tl->matches, cmp_match);
  return n;
}

static void
apply_search (TwbTimeline *tl)
{
  apply_search_count (tl);
}

guint64
twb_timeline_set_search (TwbTimeline *tl, const char *text)
{
  g_return_val_if_fail (TWB_IS_TIMELINE (tl), 0);
  g_clear_pointer (&tl->search_fold, g_free);
  g_array_set_size (tl->matches, 0);
  guint64 n = 0;
  if (text && text[0])
    {
      tl->search_fold = g_utf8_casefold (text, -1);
      n = apply_search_count (tl);
    }
  else
    free_prefix (tl, G_STRUCT_OFFSET (TlDepth, match));
  gtk_widget_queue_draw (GTK_WIDGET (tl));
  return n;
}

/* Moves the view to show [s, e] (view time): centred at the same width
 * when it fits, else the slice with a margin of a tenth each side. */
static void
show_time (TwbTimeline *tl, gint64 s, gint64 e)
{
  gint64 w = tl->v1 - tl->v0;
  if (s >= tl->v0 && e <= tl->v1)
    return;
  if (e - s <= w * 8 / 10)
    {
      gint64 mid = s + (e - s) / 2;
      twb_timeline_set_view (tl, mid - w / 2, mid - w / 2 + w);
    }
  else
    {
      gint64 m = MAX ((e - s) / 10, 1);
      twb_timeline_set_view (tl, s - m, e + m);
    }
}

gboolean
twb_timeline_search_step (TwbTimeline *tl, gboolean forward)
{
  g_return_val_if_fail (TWB_IS_TIMELINE (tl), FALSE);
  if (!tl->search_fold || tl->matches->len == 0)
    return FALSE;
  guint n = tl->matches->len;
  guint pick;
  if (!tl->has_sel)
    pick = forward ? 0 : n - 1;
  else
    {
      const tw_slice *s = tl_slice (tl, tl->sel.group, tl->sel.lane, tl->sel.index);
      TlMatch key = { s->start_ns - tl_shift (tl, tl->sel.group), tl->sel.group, tl->sel.lane,
                      tl->sel.index };
      /* The first match after key (lo), by binary search on the order. */
      guint lo = 0, hi = n;
      while (lo < hi)
        {
          guint mid = lo + (hi - lo) / 2;
          if (cmp_match (&g_array_index (tl->matches, TlMatch, mid), &key) <= 0)
            lo = mid + 1;
          else
            hi = mid;
        }
      if (forward)
        {
          if (lo >= n)
            return FALSE;
          pick = lo;
        }
      else
        {
          /* lo - 1 is key itself when it is a match: step over it. */
          guint before = lo;
          if (before > 0 && cmp_match (&g_array_index (tl->matches, TlMatch, before - 1), &key) == 0)
            before--;
          if (before == 0)
            return FALSE;
          pick = before - 1;
        }
    }
  const TlMatch *m = &g_array_index (tl->matches, TlMatch, pick);
  TwbSliceRef ref = { m->group, m->lane, m->index };
  const tw_slice *s = tl_slice (tl, m->group, m->lane, m->index);
  TlGroup *g = g_ptr_array_index (tl->groups, m->group);
  for (guint i = 0; i < g->processes->len; i++)
    {
      TlProcess *pr = &g_array_index (g->processes, TlProcess, i);
      if (pr->collapsed && pr->pid == tw_trace_lane (g->trace, m->lane)->pid)
        twb_timeline_set_collapsed (tl, m->group, pr->pid, FALSE);
    }
  show_time (tl, m->t, m->t + MAX (s->dur_ns, 0));
  twb_timeline_select_slice (tl, &ref);
  return TRUE;
}

/* ---- collapse ----------------------------------------------------------- */

static TlProcess *
find_process (TwbTimeline *tl, guint group, int pid)
{
  if (group >= tl->groups->len)
    return NULL;
  TlGroup *g = g_ptr_array_index (tl->groups, group);
  for (guint i = 0; i < g->processes->len; i++)
    {
      TlProcess *pr = &g_array_index (g->processes, TlProcess, i);
      if (pr->pid == pid)
        return pr;
    }
  return NULL;
}

void
twb_timeline_set_collapsed (TwbTimeline *tl, guint group, int pid, gboolean collapsed)
{
  g_return_if_fail (TWB_IS_TIMELINE (tl));
  TlProcess *pr = find_process (tl, group, pid);
  if (!pr || pr->collapsed == !!collapsed)
    return;
  pr->collapsed = !!collapsed;
  relayout (tl);
  gtk_widget_queue_draw (GTK_WIDGET (tl));
}

gboolean
twb_timeline_get_collapsed (TwbTimeline *tl, guint group, int pid)
{
  g_return_val_if_fail (TWB_IS_TIMELINE (tl), FALSE);
  TlProcess *pr = find_process (tl, group, pid);
  return pr && pr->collapsed;
}

/* ---- geometry ----------------------------------------------------------- */

gboolean
twb_timeline_slice_rect (TwbTimeline *tl, const TwbSliceRef *ref, graphene_rect_t *out)
{
  g_return_val_if_fail (TWB_IS_TIMELINE (tl), FALSE);
  g_return_val_if_fail (ref != NULL, FALSE);
  const tw_slice *s = tl_slice (tl, ref->group, ref->lane, ref->index);
  if (!s)
    return FALSE;
  int r = lane_row (tl, ref->group, ref->lane);
  if (r < 0)
    return FALSE;
  const TlRow *row = &g_array_index (tl->rows, TlRow, r);
  if (row->kind != TL_ROW_LANE)
    return FALSE;
  int h = tl->height > 0 ? tl->height : 600;
  double y = TL_RULER_H + row->y - tl->scroll_y + s->depth * TL_ROW_H + 1;
  double yh = TL_ROW_H - 2;
  if (y + yh <= TL_RULER_H || y >= h)
    return FALSE;
  gint64 shift = tl_shift (tl, ref->group);
  double x0 = twb_timeline_time_to_x (tl, s->start_ns - shift);
  double x1 = twb_timeline_time_to_x (tl, s->start_ns + MAX (s->dur_ns, 0) - shift);
  x0 = MAX (x0, TL_GUTTER_W);
  x1 = MIN (x1, (double) tl_track_width (tl));
  if (x1 - x0 < 1.0)
    return FALSE;
  if (y < TL_RULER_H)
    {
      yh -= TL_RULER_H - y;
      y = TL_RULER_H;
    }
  yh = MIN (yh, h - y);
  graphene_rect_init (out, x0, y, x1 - x0, yh);
  return TRUE;
}

/* ---- GtkWidget ---------------------------------------------------------------- */

static void
twb_timeline_measure (GtkWidget *w, GtkOrientation o, int for_size, int *min, int *nat,
                      int *min_base, int *nat_base)
{
  TwbTimeline *tl = TWB_TIMELINE (w);
  if (o == GTK_ORIENTATION_HORIZONTAL)
    {
      *min = (int) TL_GUTTER_W + 100;
      *nat = 400;
    }
  else
    {
      *min = (int) (TL_RULER_H + 2 * TL_ROW_H);
      *nat = (int) MIN (ceil (TL_RULER_H + tl->content_h), 600.0);
      *nat = MAX (*nat, *min);
    }
}

static void
twb_timeline_size_allocate (GtkWidget *w, int width, int height, int baseline)
{
  TwbTimeline *tl = TWB_TIMELINE (w);
  tl->width = width;
  tl->height = height;
  tl_clamp_scroll (tl);
}

static void
twb_timeline_snapshot (GtkWidget *w, GtkSnapshot *snapshot)
{
  int width = gtk_widget_get_width (w), height = gtk_widget_get_height (w);
  if (width <= 0 || height <= 0)
    return;
  cairo_t *cr = gtk_snapshot_append_cairo (snapshot, &GRAPHENE_RECT_INIT (0, 0, width, height));
  tl_draw (TWB_TIMELINE (w), cr, width, height);
  cairo_destroy (cr);
}

void
twb_timeline_render (TwbTimeline *tl, cairo_t *cr, int width, int height)
{
  g_return_if_fail (TWB_IS_TIMELINE (tl));
  /* Never allocated (an export or the benchmark): the size drawn is the
   * widget's, for x_to_time and slice_rect to agree with the picture. */
  if (gtk_widget_get_width (GTK_WIDGET (tl)) <= 0)
    {
      tl->width = width;
      tl->height = height;
      tl_clamp_scroll (tl);
    }
  tl_draw_background (tl, cr, width, height);
  tl_draw (tl, cr, width, height);
}

static void
twb_timeline_dispose (GObject *o)
{
  TwbTimeline *tl = TWB_TIMELINE (o);
  if (tl->groups)
    g_ptr_array_set_size (tl->groups, 0);
  g_clear_pointer (&tl->labels, g_hash_table_unref);
  g_clear_pointer (&tl->raster, cairo_surface_destroy);
  G_OBJECT_CLASS (twb_timeline_parent_class)->dispose (o);
}

static void
twb_timeline_finalize (GObject *o)
{
  TwbTimeline *tl = TWB_TIMELINE (o);
  g_ptr_array_unref (tl->groups);
  g_array_unref (tl->rows);
  g_array_unref (tl->matches);
  g_free (tl->search_fold);
  g_clear_pointer (&tl->hl_nodes, g_hash_table_unref);
  g_clear_pointer (&tl->peers, g_array_unref);
  g_clear_pointer (&tl->path, g_array_unref);
  g_clear_pointer (&tl->small_font, pango_font_description_free);
  G_OBJECT_CLASS (twb_timeline_parent_class)->finalize (o);
}

static void
twb_timeline_class_init (TwbTimelineClass *klass)
{
  GObjectClass *oc = G_OBJECT_CLASS (klass);
  GtkWidgetClass *wc = GTK_WIDGET_CLASS (klass);
  oc->dispose = twb_timeline_dispose;
  oc->finalize = twb_timeline_finalize;
  wc->measure = twb_timeline_measure;
  wc->size_allocate = twb_timeline_size_allocate;
  wc->snapshot = twb_timeline_snapshot;

  signals[SIG_SLICE_SELECTED] = g_signal_new ("slice-selected", G_TYPE_FROM_CLASS (klass),
                                              G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE,
                                              1, G_TYPE_POINTER);
  signals[SIG_RANGE_CHANGED] = g_signal_new ("range-changed", G_TYPE_FROM_CLASS (klass),
                                             G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE, 0);
  signals[SIG_VIEW_CHANGED] = g_signal_new ("view-changed", G_TYPE_FROM_CLASS (klass),
                                            G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE, 0);

  tl_input_class_init (wc);
  gtk_widget_class_set_css_name (wc, "timeline");
  gtk_widget_class_set_accessible_role (wc, GTK_ACCESSIBLE_ROLE_GROUP);
}

static void
twb_timeline_init (TwbTimeline *tl)
{
  GtkWidget *w = GTK_WIDGET (tl);
  tl->groups = g_ptr_array_new_with_free_func (group_free);
  tl->rows = g_array_new (FALSE, FALSE, sizeof (TlRow));
  tl->matches = g_array_new (FALSE, FALSE, sizeof (TlMatch));
  tl->v0 = 0;
  tl->v1 = 1000;
  gtk_widget_set_focusable (w, TRUE);
  gtk_widget_set_has_tooltip (w, TRUE);
  gtk_widget_set_overflow (w, GTK_OVERFLOW_HIDDEN);
  gtk_accessible_update_property (GTK_ACCESSIBLE (tl), GTK_ACCESSIBLE_PROPERTY_LABEL, "Profiler timeline",
                                  GTK_ACCESSIBLE_PROPERTY_DESCRIPTION,
                                  "W and S zoom, A and D pan, Escape clears the selection", -1);

  tl_input_init (tl);
  tl_layout (tl);
}

GtkWidget *
twb_timeline_new (void)
{
  return g_object_new (TWB_TYPE_TIMELINE, NULL);
}
