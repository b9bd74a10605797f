/* twb-timeline-input.c — the timeline's pointer and keyboard: hit
 * testing, click (select, collapse, double-click zoom), drags (left: the
 * range; middle / right: pan both axes), wheel, W/A/S/D and Escape,
 * tooltips, and the "timeline.*" actions. */
#define G_LOG_DOMAIN "twb-timeline"

#include "profiler/twb-timeline-private.h"
#include "profiler/ranks.h"

#include <math.h>

/* Action zoom factors and the pan step (a fifth of the view); the keys
 * zoom and pan in smaller steps since they repeat while held. */
#define ACTION_ZOOM 2.0
#define ACTION_PAN 0.2
#define KEY_ZOOM 1.35
#define KEY_PAN 0.1
/* Ctrl+wheel: the view scales by this per wheel step. */
#define WHEEL_ZOOM 1.25

typedef enum
{
  HIT_NONE,
  HIT_PROCESS,
  HIT_SLICE,
  HIT_COUNTER,
} HitKind;

typedef struct
{
  HitKind kind;
  guint group, process;
  TwbSliceRef ref;
  guint counter;
} Hit;

static Hit
hit_test (TwbTimeline *tl, double x, double y)
{
  Hit hit = { HIT_NONE };
  if (y < TL_RULER_H)
    return hit;
  int r = tl_row_at (tl, y - TL_RULER_H + tl->scroll_y);
  if (r < 0)
    return hit;
  const TlRow *row = &g_array_index (tl->rows, TlRow, r);
  hit.group = row->group;
  hit.process = row->process;
  if (row->kind == TL_ROW_PROCESS)
    {
      hit.kind = HIT_PROCESS;
      return hit;
    }
  if (x < TL_GUTTER_W)
    return hit;
  if (row->kind == TL_ROW_COUNTER)
    {
      hit.kind = HIT_COUNTER;
      hit.counter = row->item;
      return hit;
    }
  if (row->kind != TL_ROW_LANE)
    return hit;
  TlGroup *g = g_ptr_array_index (tl->groups, row->group);
  TlLane *l = &g->lanes[row->item];
  guint depth = (guint) ((y - TL_RULER_H + tl->scroll_y - row->y) / TL_ROW_H);
  if (depth >= l->n_depths)
    return hit;
  const TlDepth *d = &l->depths[depth];
  gint64 t = twb_timeline_x_to_time (tl, x) + tl_shift (tl, row->group);
  guint pos;
  /* Two pixels either side: a slice narrower than a pixel can be clicked. */
  if (!tl_depth_slice_at (d, t, 2.0 / tl_px_per_ns (tl), &pos))
    return hit;
  hit.kind = HIT_SLICE;
  hit.ref = (TwbSliceRef) { row->group, row->item, d->idx[pos] };
  return hit;
}


static void
toggle_process (TwbTimeline *tl, guint group, guint process)
{
  TlGroup *g = g_ptr_array_index (tl->groups, group);
  TlProcess *pr = &g_array_index (g->processes, TlProcess, process);
  twb_timeline_set_collapsed (tl, group, pr->pid, !pr->collapsed);
}

static void
tl_zoom_to_slice (TwbTimeline *tl, const TwbSliceRef *ref)
{
  const tw_slice *s = tl_slice (tl, ref->group, ref->lane, ref->index);
  gint64 st = s->start_ns - tl_shift (tl, ref->group);
  gint64 m = MAX (s->dur_ns / 10, 1);
  twb_timeline_set_view (tl, st - m, st + MAX (s->dur_ns, 0) + m);
}

void
twb_timeline_test_click (TwbTimeline *tl, double x, double y, int n_press)
{
  Hit hit = hit_test (tl, x, y);
  if (hit.kind == HIT_PROCESS)
    {
      if (n_press == 1)
        toggle_process (tl, hit.group, hit.process);
      return;
    }
  if (hit.kind == HIT_SLICE)
    {
      twb_timeline_select_slice (tl, &hit.ref);
      if (n_press == 2)
        tl_zoom_to_slice (tl, &hit.ref);
      return;
    }
  if (y >= TL_RULER_H && x >= TL_GUTTER_W)
    twb_timeline_select_slice (tl, NULL);
}

static void
click_pressed (GtkGestureClick *g, int n_press, double x, double y, TwbTimeline *tl)
{
  gtk_widget_grab_focus (GTK_WIDGET (tl));
  tl->press_x = x;
  tl->press_y = y;
}

/* On release: a press that became a drag selects a range (or pans) and
 * leaves the slice alone (GTK 4.8's click gesture still reports it). */
static void
click_released (GtkGestureClick *g, int n_press, double x, double y, TwbTimeline *tl)
{
  if (gtk_gesture_single_get_current_button (GTK_GESTURE_SINGLE (g)) != GDK_BUTTON_PRIMARY)
    return;
  if (hypot (x - tl->press_x, y - tl->press_y) >= TL_DRAG_MIN_PX)
    return;
  twb_timeline_test_click (tl, x, y, n_press);
}

static void
drag_begin_at (TwbTimeline *tl, guint button, double x, double y)
{
  tl->drag_button = button;
  tl->drag_selecting = FALSE;
  tl->drag_x0 = x;
  tl->drag_y0 = y;
  tl->drag_v0 = tl->v0;
  tl->drag_v1 = tl->v1;
  tl->drag_scroll0 = tl->scroll_y;
}

static void
drag_update_to (TwbTimeline *tl, double dx, double dy)
{
  if (tl->drag_button == GDK_BUTTON_PRIMARY)
    {
      if (tl->drag_x0 < TL_GUTTER_W || tl->drag_y0 < TL_RULER_H)
        return;
      if (!tl->drag_selecting && fabs (dx) < TL_DRAG_MIN_PX)
        return;
      tl->drag_selecting = TRUE;
      double w = tl_track_width (tl);
      double xa = CLAMP (tl->drag_x0, TL_GUTTER_W, w), xb = CLAMP (tl->drag_x0 + dx, TL_GUTTER_W, w);
      twb_timeline_set_range (tl, twb_timeline_x_to_time (tl, xa), twb_timeline_x_to_time (tl, xb));
    }
  else if (tl->drag_button == GDK_BUTTON_MIDDLE || tl->drag_button == GDK_BUTTON_SECONDARY)
    {
      double scale = MAX (tl_track_width (tl) - TL_GUTTER_W, 1.0) / (double) MAX (tl->drag_v1 - tl->drag_v0, 1);
      gint64 d = (gint64) llround (dx / scale);
      twb_timeline_set_view (tl, tl->drag_v0 - d, tl->drag_v1 - d);
      tl->scroll_y = tl->drag_scroll0 - dy;
      tl_clamp_scroll (tl);
      gtk_widget_queue_draw (GTK_WIDGET (tl));
    }
}

void
twb_timeline_test_drag (TwbTimeline *tl, guint button, double x0, double y0, double x1, double y1)
{
  drag_begin_at (tl, button, x0, y0);
  drag_update_to (tl, (x1 - x0) / 2, (y1 - y0) / 2);
  drag_update_to (tl, x1 - x0, y1 - y0);
  tl->drag_button = 0;
}

static void
drag_begin (GtkGestureDrag *g, double x, double y, TwbTimeline *tl)
{
  drag_begin_at (tl, gtk_gesture_single_get_current_button (GTK_GESTURE_SINGLE (g)), x, y);
}

static void
drag_update (GtkGestureDrag *g, double dx, double dy, TwbTimeline *tl)
{
  drag_update_to (tl, dx, dy);
}

static void
drag_end (GtkGestureDrag *g, double dx, double dy, TwbTimeline *tl)
{
  drag_update_to (tl, dx, dy);
  tl->drag_button = 0;
}

static gboolean
scroll (GtkEventControllerScroll *c, double dx, double dy, TwbTimeline *tl)
{
  GdkModifierType mods = gtk_event_controller_get_current_event_state (GTK_EVENT_CONTROLLER (c));
  if (mods & GDK_CONTROL_MASK)
    {
      if (dy != 0)
        tl_zoom_around (tl, pow (WHEEL_ZOOM, dy), tl_zoom_anchor (tl));
      return TRUE;
    }
  if ((mods & GDK_SHIFT_MASK) && dx == 0)
    {
      dx = dy;
      dy = 0;
    }
  if (dx != 0)
    tl_pan_by (tl, dx * KEY_PAN);
  if (dy != 0)
    {
      tl->scroll_y += dy * 3 * TL_ROW_H;
      tl_clamp_scroll (tl);
      gtk_widget_queue_draw (GTK_WIDGET (tl));
    }
  return TRUE;
}

static gboolean
key_pressed (GtkEventControllerKey *c, guint keyval, guint keycode, GdkModifierType state,
             TwbTimeline *tl)
{
  if (state & (GDK_CONTROL_MASK | GDK_ALT_MASK))
    return FALSE;
  switch (gdk_keyval_to_lower (keyval))
    {
    case GDK_KEY_w:
      tl_zoom_around (tl, 1.0 / KEY_ZOOM, tl_zoom_anchor (tl));
      return TRUE;
    case GDK_KEY_s:
      tl_zoom_around (tl, KEY_ZOOM, tl_zoom_anchor (tl));
      return TRUE;
    case GDK_KEY_a:
      tl_pan_by (tl, -KEY_PAN);
      return TRUE;
    case GDK_KEY_d:
      tl_pan_by (tl, KEY_PAN);
      return TRUE;
    case GDK_KEY_Escape:
      twb_timeline_set_range (tl, 0, 0);
      twb_timeline_select_slice (tl, NULL);
      return TRUE;
    default:
      return FALSE;
    }
}

static void
motion (GtkEventControllerMotion *c, double x, double y, TwbTimeline *tl)
{
  tl->pointer_in = TRUE;
  tl->pointer_x = x;
  tl->pointer_y = y;
}

static void
leave (GtkEventControllerMotion *c, TwbTimeline *tl)
{
  tl->pointer_in = FALSE;
}

static void
append_arg_lines (GString *s, const tw_slice *sl)
{
  for (guint i = 0; i < sl->n_args && i < 12; i++)
    {
      g_autofree char *k = g_markup_escape_text (sl->args[i].key ? sl->args[i].key : "", -1);
      g_autofree char *v = g_markup_escape_text (sl->args[i].value ? sl->args[i].value : "", -1);
      g_string_append_printf (s, "\n%s: %s", k, v);
    }
  if (sl->n_args > 12)
    g_string_append_printf (s, "\n… %u more", sl->n_args - 12);
}

char *
twb_timeline_test_tooltip (TwbTimeline *tl, double x, double y)
{
  Hit hit = hit_test (tl, x, y);
  if (hit.kind == HIT_SLICE)
    {
      const tw_slice *s = tl_slice (tl, hit.ref.group, hit.ref.lane, hit.ref.index);
      GString *str = g_string_new (NULL);
      g_autofree char *name = g_markup_escape_text (s->name ? s->name : "", -1);
      g_autofree char *dur = tl_format_ns (s->dur_ns);
      g_string_append_printf (str, "<b>%s</b>\n%s", name, dur);
      if (s->category)
        {
          g_autofree char *cat = g_markup_escape_text (s->category, -1);
          g_string_append_printf (str, " · %s", cat);
        }
      int peer = tl_peer_of (tl, hit.ref.group, hit.ref.lane, hit.ref.index);
      if (peer >= 0)
        {
          const tw_coll_peer *p = &g_array_index (tl->peers, tw_coll_peer, peer);
          g_autofree char *skew = tl_format_ns (-p->skew_ns), *wait = tl_format_ns (p->wait_ns);
          if (p->skew_ns == 0)
            g_string_append_printf (str, "\n<b>rank %d</b>: the last of %u ranks to arrive", p->rank,
                                    tl->peers->len);
          else
            g_string_append_printf (str, "\n<b>rank %d</b>: arrived %s before the last of %u ranks, "
                                    "waited %s", p->rank, skew, tl->peers->len, wait);
        }
      append_arg_lines (str, s);
      return g_string_free (str, FALSE);
    }
  if (hit.kind == HIT_COUNTER)
    {
      TlGroup *g = g_ptr_array_index (tl->groups, hit.group);
      const TlCounter *c = &g_array_index (g->counters, TlCounter, hit.counter);
      gint64 t = twb_timeline_x_to_time (tl, x) + tl_shift (tl, hit.group);
      guint i = tl_lower_bound (c->t, c->n, t + 1);
      if (i == 0)
        return NULL;
      g_autofree char *name = g_markup_escape_text (c->name ? c->name : "", -1);
      return g_strdup_printf ("<b>%s</b>\n%g", name, c->v[i - 1]);
    }
  return NULL;
}

static gboolean
query_tooltip (GtkWidget *w, int x, int y, gboolean keyboard, GtkTooltip *tooltip)
{
  if (keyboard)
    return FALSE;
  g_autofree char *markup = twb_timeline_test_tooltip (TWB_TIMELINE (w), x, y);
  if (!markup)
    return FALSE;
  gtk_tooltip_set_markup (tooltip, markup);
  return TRUE;
}

/* ---- actions ---------------------------------------------------------------- */

static void
action_zoom (GtkWidget *w, const char *name, GVariant *param)
{
  TwbTimeline *tl = TWB_TIMELINE (w);
  gint64 mid = tl->v0 + (tl->v1 - tl->v0) / 2;
  tl_zoom_around (tl, g_str_equal (name, "timeline.zoom-in") ? 1.0 / ACTION_ZOOM : ACTION_ZOOM, mid);
}

static void
action_pan (GtkWidget *w, const char *name, GVariant *param)
{
  tl_pan_by (TWB_TIMELINE (w), g_str_equal (name, "timeline.pan-left") ? -ACTION_PAN : ACTION_PAN);
}

static void
action_zoom_all (GtkWidget *w, const char *name, GVariant *param)
{
  twb_timeline_zoom_all (TWB_TIMELINE (w));
}

static void
action_zoom_selection (GtkWidget *w, const char *name, GVariant *param)
{
  TwbTimeline *tl = TWB_TIMELINE (w);
  if (tl->has_range)
    twb_timeline_set_view (tl, tl->r0, tl->r1);
  else if (tl->has_sel)
    tl_zoom_to_slice (tl, &tl->sel);
}

void
tl_input_class_init (GtkWidgetClass *wc)
{
  wc->query_tooltip = query_tooltip;
  gtk_widget_class_install_action (wc, "timeline.zoom-in", NULL, action_zoom);
  gtk_widget_class_install_action (wc, "timeline.zoom-out", NULL, action_zoom);
  gtk_widget_class_install_action (wc, "timeline.pan-left", NULL, action_pan);
  gtk_widget_class_install_action (wc, "timeline.pan-right", NULL, action_pan);
  gtk_widget_class_install_action (wc, "timeline.zoom-all", NULL, action_zoom_all);
  gtk_widget_class_install_action (wc, "timeline.zoom-selection", NULL, action_zoom_selection);
}

void
tl_input_init (TwbTimeline *tl)
{
  GtkWidget *w = GTK_WIDGET (tl);
  GtkGesture *click = gtk_gesture_click_new ();
  gtk_gesture_single_set_button (GTK_GESTURE_SINGLE (click), 0);
  g_signal_connect (click, "pressed", G_CALLBACK (click_pressed), tl);
  g_signal_connect (click, "released", G_CALLBACK (click_released), tl);
  gtk_widget_add_controller (w, GTK_EVENT_CONTROLLER (click));

  GtkGesture *drag = gtk_gesture_drag_new ();
  gtk_gesture_single_set_button (GTK_GESTURE_SINGLE (drag), 0);
  g_signal_connect (drag, "drag-begin", G_CALLBACK (drag_begin), tl);
  g_signal_connect (drag, "drag-update", G_CALLBACK (drag_update), tl);
  g_signal_connect (drag, "drag-end", G_CALLBACK (drag_end), tl);
  gtk_widget_add_controller (w, GTK_EVENT_CONTROLLER (drag));

  GtkEventController *sc = gtk_event_controller_scroll_new (GTK_EVENT_CONTROLLER_SCROLL_BOTH_AXES);
  g_signal_connect (sc, "scroll", G_CALLBACK (scroll), tl);
  gtk_widget_add_controller (w, sc);

  GtkEventController *key = gtk_event_controller_key_new ();
  g_signal_connect (key, "key-pressed", G_CALLBACK (key_pressed), tl);
  gtk_widget_add_controller (w, key);

  GtkEventController *mc = gtk_event_controller_motion_new ();
  g_signal_connect (mc, "enter", G_CALLBACK (motion), tl);
  g_signal_connect (mc, "motion", G_CALLBACK (motion), tl);
  g_signal_connect (mc, "leave", G_CALLBACK (leave), tl);
  gtk_widget_add_controller (w, mc);

}
