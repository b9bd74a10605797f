/* twb-timeline-path.c — a critical path (profiler/ranks.h) drawn over the
 * timeline's lanes: each op and collective on it outlined, a wait or a gap
 * as a dashed line along its rank's step lane, and a line from each
 * segment's end to the next one's start where the path changes row (from
 * one rank to another, or between a rank's lanes).  The path is computed
 * by the caller (tw_trace_critical_path_median); the timeline keeps a copy
 * and only draws it. */
#define G_LOG_DOMAIN "twb-profiler"

#include "profiler/twb-timeline-private.h"
#include "profiler/ranks.h"

#include <math.h>

/* Not the selection's blue nor the highlight's orange: a magenta that
 * stands apart from the palette's slice colours. */
static const GdkRGBA path_colour = { 0.78, 0.0, 0.55, 1 };

void
twb_timeline_set_critical_path (TwbTimeline *tl, guint group, const GArray *segments)
{
  g_return_if_fail (TWB_IS_TIMELINE (tl));
  g_clear_pointer (&tl->path, g_array_unref);
  if (segments && segments->len && group < tl->groups->len)
    {
      tl->path = g_array_sized_new (FALSE, FALSE, sizeof (tw_path_segment), segments->len);
      g_array_append_vals (tl->path, segments->data, segments->len);
      tl->path_group = group;
    }
  gtk_widget_queue_draw (GTK_WIDGET (tl));
}

const GArray *
twb_timeline_get_critical_path (TwbTimeline *tl, guint *group)
{
  g_return_val_if_fail (TWB_IS_TIMELINE (tl), NULL);
  if (group && tl->path)
    *group = tl->path_group;
  return tl->path;
}

/* Where segment s lies on screen: its times on its row (the slice's depth
 * for an op or a collective, the lane's top row for a wait or a gap).
 * FALSE when its lane is not laid out as a row of lanes (collapsed) or
 * the segment lies wholly outside the view. */
static gboolean
segment_box (TwbTimeline *tl, const tw_path_segment *s, graphene_rect_t *out)
{
  if (tl->path_group >= tl->groups->len)
    return FALSE;
  TlGroup *g = g_ptr_array_index (tl->groups, tl->path_group);
  if (s->lane >= g->n_lanes)
    return FALSE;
  int r = g->lane_row[s->lane];
  if (r < 0)
    return FALSE;
  const TlRow *row = &g_array_index (tl->rows, TlRow, r);
  guint depth = 0;
  gint64 a = s->start_ns, b = s->start_ns + s->dur_ns;
  if (s->slice_index != G_MAXUINT && s->slice_index < tw_trace_lane_n_slices (g->trace, s->lane))
    {
      /* A collective's part runs to its end on the rank that waited,
       * which the last rank's clock may put a little past its own slice:
       * the outline stays on the slice. */
      const tw_slice *sl = tw_trace_lane_slice (g->trace, s->lane, s->slice_index);
      if (row->kind == TL_ROW_LANE)
        depth = sl->depth;
      a = CLAMP (a, sl->start_ns, sl->start_ns + sl->dur_ns);
      b = CLAMP (b, a, sl->start_ns + sl->dur_ns);
    }
  gint64 shift = tl_shift (tl, tl->path_group);
  double x0 = twb_timeline_time_to_x (tl, a - shift);
  double x1 = twb_timeline_time_to_x (tl, b - shift);
  double y = TL_RULER_H + row->y - tl->scroll_y + depth * TL_ROW_H + 1;
  graphene_rect_init (out, x0, y, MAX (x1 - x0, 1.0), TL_ROW_H - 2);
  return TRUE;
}

void
tl_draw_path (TwbTimeline *tl, cairo_t *cr, int width)
{
  if (tl->path == NULL)
    return;
  static const double dash[] = { 3, 3 };
  gboolean have_prev = FALSE;
  double px = 0, py = 0, prow = 0;
  cairo_save (cr);
  cairo_set_source_rgba (cr, path_colour.red, path_colour.green, path_colour.blue, 1.0);
  for (guint i = 0; i < tl->path->len; i++)
    {
      const tw_path_segment *s = &g_array_index (tl->path, tw_path_segment, i);
      graphene_rect_t b;
      if (!segment_box (tl, s, &b))
        {
          have_prev = FALSE;
          continue;
        }
      double x0 = b.origin.x, x1 = b.origin.x + b.size.width;
      double y0 = b.origin.y, y1 = b.origin.y + b.size.height, ym = (y0 + y1) / 2;
      /* The joint from the last segment: only where the row changes (on
       * one row the segments touch end to start). */
      if (have_prev && fabs (prow - y0) > 0.5 && MAX (px, x0) >= TL_GUTTER_W &&
          MIN (px, x0) <= width)
        {
          cairo_set_line_width (cr, 1.5);
          cairo_set_dash (cr, NULL, 0, 0);
          cairo_move_to (cr, px, py);
          cairo_line_to (cr, x0, ym);
          cairo_stroke (cr);
          cairo_arc (cr, px, py, 2.5, 0, 2 * G_PI);
          cairo_fill (cr);
          cairo_arc (cr, x0, ym, 2.5, 0, 2 * G_PI);
          cairo_fill (cr);
        }
      have_prev = TRUE;
      px = x1;
      py = ym;
      prow = y0;
      if (x1 < TL_GUTTER_W || x0 > width)
        continue;
      if (s->slice_index == G_MAXUINT)
        {
          /* A wait or a gap: no slice; a dashed line through its row. */
          cairo_set_line_width (cr, 2);
          cairo_set_dash (cr, dash, G_N_ELEMENTS (dash), 0);
          cairo_move_to (cr, x0, ym);
          cairo_line_to (cr, x1, ym);
          cairo_stroke (cr);
          cairo_set_dash (cr, NULL, 0, 0);
          continue;
        }
      cairo_set_dash (cr, NULL, 0, 0);
      cairo_set_line_width (cr, 2.5);
      cairo_rectangle (cr, x0 + 1.25, y0 + 1.25, MAX (x1 - x0 - 2.5, 0.5), y1 - y0 - 2.5);
      cairo_stroke (cr);
    }
  cairo_restore (cr);
}
