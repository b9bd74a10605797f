/* twb-plot.c — the plot widget: properties, pointer (hover, zoom), curves, export. */
#define G_LOG_DOMAIN "twb-plot"

#include "ui/twb-plot-private.h"
#include "graph_editor/twb-picture.h"

#include "engine/fileutil.h"

#include <cairo.h>
#ifdef CAIRO_HAS_SVG_SURFACE
#include <cairo-svg.h>
#endif
#include <math.h>
#include <string.h>

G_DEFINE_FINAL_TYPE (TwbPlot, twb_plot, GTK_TYPE_WIDGET)

enum
{
  PROP_0,
  PROP_METRICS,
  PROP_TITLE,
  PROP_LOG_Y,
  PROP_SMOOTHING,
  PROP_X_LABEL,
  PROP_ZOOMED,
  PROP_WHEEL_NEEDS_CTRL,
  N_PROPS
};
static GParamSpec *props[N_PROPS];

/* ---- Pointer ---------------------------------------------------------------------- */

static void
widget_geom (TwbPlot *p, Geom *g)
{
  Frame f;
  twb_plot_widget_frame (p, gtk_widget_get_width (GTK_WIDGET (p)), gtk_widget_get_height (GTK_WIDGET (p)),
                &f);
  *g = f.g;
  twb_plot_frame_clear (&f);
}

static void
set_zoomed (TwbPlot *p, gboolean zoomed)
{
  if (p->zoomed == zoomed)
    return;
  p->zoomed = zoomed;
  g_object_notify_by_pspec (G_OBJECT (p), props[PROP_ZOOMED]);
}

static void
on_motion (GtkEventControllerMotion *c, double x, double y, TwbPlot *p)
{
  p->hover = TRUE;
  p->hover_x = x;
  p->hover_y = y;
  gtk_widget_queue_draw (GTK_WIDGET (p));
}

static void
on_leave (GtkEventControllerMotion *c, TwbPlot *p)
{
  p->hover = FALSE;
  gtk_widget_queue_draw (GTK_WIDGET (p));
}

static void
on_drag_begin (GtkGestureDrag *d, double x, double y, TwbPlot *p)
{
  Geom g;
  widget_geom (p, &g);
  if (!g.has_data || x < g.ax || x > g.ax + g.aw || y < g.ay || y > g.ay + g.ah)
    {
      gtk_gesture_set_state (GTK_GESTURE (d), GTK_EVENT_SEQUENCE_DENIED);
      return;
    }
  p->dragging = TRUE;
  p->drag_x0 = p->drag_x1 = x;
  p->drag_y0 = p->drag_y1 = y;
}

static void
on_drag_update (GtkGestureDrag *d, double dx, double dy, TwbPlot *p)
{
  if (!p->dragging)
    return;
  p->drag_x1 = p->drag_x0 + dx;
  p->drag_y1 = p->drag_y0 + dy;
  gtk_widget_queue_draw (GTK_WIDGET (p));
}

static void
on_drag_end (GtkGestureDrag *d, double dx, double dy, TwbPlot *p)
{
  if (!p->dragging)
    return;
  p->dragging = FALSE;
  p->drag_x1 = p->drag_x0 + dx;
  p->drag_y1 = p->drag_y0 + dy;
  gtk_widget_queue_draw (GTK_WIDGET (p));
  if (fabs (dx) < DRAG_MIN_PX)
    return;
  Geom g;
  widget_geom (p, &g);
  double x0 = twb_plot_x_of_px (&g, CLAMP (MIN (p->drag_x0, p->drag_x1), g.ax, g.ax + g.aw));
  double x1 = twb_plot_x_of_px (&g, CLAMP (MAX (p->drag_x0, p->drag_x1), g.ax, g.ax + g.aw));
  if (!(x1 > x0))
    return;
  if (fabs (dy) >= DRAG_MIN_PX)
    {
      p->y_fixed = TRUE;
      p->zy0 = twb_plot_vy_of_py (&g, CLAMP (MAX (p->drag_y0, p->drag_y1), g.ay, g.ay + g.ah));
      p->zy1 = twb_plot_vy_of_py (&g, CLAMP (MIN (p->drag_y0, p->drag_y1), g.ay, g.ay + g.ah));
    }
  p->zx0 = x0;
  p->zx1 = x1;
  set_zoomed (p, TRUE);
}

static void
on_pressed (GtkGestureClick *c, int n_press, double x, double y, TwbPlot *p)
{
  if (n_press == 2)
    twb_plot_reset_zoom (p);
}

static gboolean
on_scroll (GtkEventControllerScroll *c, double dx, double dy, TwbPlot *p)
{
  if (dy == 0)
    return FALSE;
  if (p->wheel_needs_ctrl
      && !(gtk_event_controller_get_current_event_state (GTK_EVENT_CONTROLLER (c))
           & GDK_CONTROL_MASK))
    return FALSE; /* the wheel scrolls what holds the plot */
  Geom g;
  widget_geom (p, &g);
  if (!g.has_points)
    return FALSE;
  double px = p->hover ? CLAMP (p->hover_x, g.ax, g.ax + g.aw) : g.ax + g.aw / 2;
  double xp = twb_plot_x_of_px (&g, px);
  /* Each wheel step zooms by 1.25 (out when scrolling down). */
  double factor = pow (1.25, dy);
  double x0 = xp - (xp - g.x0) * factor, x1 = xp + (g.x1 - xp) * factor;
  double dx0, dx1;
  twb_plot_data_x_extent (p, &dx0, &dx1);
  if (x0 <= dx0 && x1 >= dx1)
    {
      twb_plot_reset_zoom (p);
      return TRUE;
    }
  /* No narrower than a millionth of the data (doubles keep that well). */
  double least = MAX (dx1 - dx0, 1) * 1e-6;
  if (x1 - x0 < least)
    return TRUE;
  p->zx0 = x0;
  p->zx1 = x1;
  set_zoomed (p, TRUE);
  gtk_widget_queue_draw (GTK_WIDGET (p));
  return TRUE;
}

/* ---- GObject ------------------------------------------------------------------ */

static gboolean
redraw_due (gpointer data)
{
  TwbPlot *p = data;
  p->redraw_source = 0;
  p->last_redraw = g_get_monotonic_time ();
  gtk_widget_queue_draw (GTK_WIDGET (p));
  return G_SOURCE_REMOVE;
}

static void
on_metrics_changed (TwbMetrics *m, guint series, TwbPlot *p)
{
  for (guint i = 0; i < p->curves->len; i++)
    if (g_array_index (p->curves, Curve, i).series == series)
      {
        if (p->redraw_ms == 0)
          {
            gtk_widget_queue_draw (GTK_WIDGET (p));
            return;
          }
        /* At the next multiple of the interval on the monotonic clock:
         * every plot with new points redraws at the same instant, so they
         * share one frame (each on its own timer, five charts made up to
         * five frames an interval), and none more than once an interval. */
        if (p->redraw_source == 0)
          {
            gint64 period = (gint64) p->redraw_ms * 1000, now = g_get_monotonic_time ();
            gint64 wait_us = period - now % period;
            p->redraw_source = g_timeout_add ((guint) ((wait_us + 999) / 1000), redraw_due, p);
          }
        return;
      }
}

void
twb_plot_set_redraw_interval (TwbPlot *p, guint ms)
{
  g_return_if_fail (TWB_IS_PLOT (p));
  p->redraw_ms = ms;
}

static void
on_series_removed (TwbMetrics *m, guint series, TwbPlot *p)
{
  twb_plot_remove_curve (p, series);
}

static void
twb_plot_set_metrics (TwbPlot *p, TwbMetrics *m)
{
  g_return_if_fail (p->metrics == NULL);
  p->metrics = m ? g_object_ref (m) : twb_metrics_new ();
  p->changed_id = g_signal_connect (p->metrics, "changed", G_CALLBACK (on_metrics_changed), p);
  p->removed_id = g_signal_connect (p->metrics, "series-removed", G_CALLBACK (on_series_removed),
                                    p);
}

static void
twb_plot_dispose (GObject *object)
{
  TwbPlot *p = TWB_PLOT (object);
  g_clear_handle_id (&p->redraw_source, g_source_remove);
  if (p->metrics)
    {
      g_clear_signal_handler (&p->changed_id, p->metrics);
      g_clear_signal_handler (&p->removed_id, p->metrics);
      g_clear_object (&p->metrics);
    }
  G_OBJECT_CLASS (twb_plot_parent_class)->dispose (object);
}

static void
twb_plot_finalize (GObject *object)
{
  TwbPlot *p = TWB_PLOT (object);
  g_free (p->title);
  g_free (p->x_label);
  g_array_unref (p->curves);
  g_free (p->buf);
  G_OBJECT_CLASS (twb_plot_parent_class)->finalize (object);
}

static void
twb_plot_get_property (GObject *object, guint id, GValue *value, GParamSpec *pspec)
{
  TwbPlot *p = TWB_PLOT (object);
  switch (id)
    {
    case PROP_METRICS:
      g_value_set_object (value, p->metrics);
      break;
    case PROP_TITLE:
      g_value_set_string (value, p->title);
      break;
    case PROP_LOG_Y:
      g_value_set_boolean (value, p->log_y);
      break;
    case PROP_SMOOTHING:
      g_value_set_double (value, p->smoothing);
      break;
    case PROP_X_LABEL:
      g_value_set_string (value, p->x_label);
      break;
    case PROP_ZOOMED:
      g_value_set_boolean (value, p->zoomed);
      break;
    case PROP_WHEEL_NEEDS_CTRL:
      g_value_set_boolean (value, p->wheel_needs_ctrl);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, id, pspec);
    }
}

static void
twb_plot_set_property (GObject *object, guint id, const GValue *value, GParamSpec *pspec)
{
  TwbPlot *p = TWB_PLOT (object);
  switch (id)
    {
    case PROP_METRICS:
      twb_plot_set_metrics (p, g_value_get_object (value));
      break;
    case PROP_TITLE:
      g_free (p->title);
      p->title = g_value_dup_string (value);
      gtk_accessible_update_property (GTK_ACCESSIBLE (p), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                      p->title ? p->title : "", -1);
      gtk_widget_queue_draw (GTK_WIDGET (p));
      break;
    case PROP_LOG_Y:
      twb_plot_set_log_y (p, g_value_get_boolean (value));
      break;
    case PROP_SMOOTHING:
      twb_plot_set_smoothing (p, g_value_get_double (value));
      break;
    case PROP_X_LABEL:
      g_free (p->x_label);
      p->x_label = g_value_dup_string (value);
      gtk_widget_queue_draw (GTK_WIDGET (p));
      break;
    case PROP_WHEEL_NEEDS_CTRL:
      p->wheel_needs_ctrl = g_value_get_boolean (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, id, pspec);
    }
}

static void
twb_plot_class_init (TwbPlotClass *klass)
{
  GObjectClass *oc = G_OBJECT_CLASS (klass);
  GtkWidgetClass *wc = GTK_WIDGET_CLASS (klass);
  oc->dispose = twb_plot_dispose;
  oc->finalize = twb_plot_finalize;
  oc->get_property = twb_plot_get_property;
  oc->set_property = twb_plot_set_property;
  wc->snapshot = twb_plot_snapshot;
  wc->measure = twb_plot_measure;

  props[PROP_METRICS] = g_param_spec_object ("metrics", NULL, NULL, TWB_TYPE_METRICS,
                                             G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY
                                               | G_PARAM_STATIC_STRINGS);
  props[PROP_TITLE] = g_param_spec_string ("title", NULL, NULL, NULL,
                                           G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS);
  props[PROP_LOG_Y] = g_param_spec_boolean ("log-y", NULL, NULL, FALSE,
                                            G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY
                                              | G_PARAM_STATIC_STRINGS);
  props[PROP_SMOOTHING] = g_param_spec_double ("smoothing", NULL, NULL, 0, 0.99, 0,
                                               G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY
                                                 | G_PARAM_STATIC_STRINGS);
  props[PROP_X_LABEL] = g_param_spec_string ("x-label", NULL, NULL, "step",
                                             G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS);
  props[PROP_ZOOMED] = g_param_spec_boolean ("zoomed", NULL, NULL, FALSE,
                                             G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  props[PROP_WHEEL_NEEDS_CTRL] = g_param_spec_boolean ("wheel-needs-ctrl", NULL, NULL, FALSE,
                                                       G_PARAM_READWRITE
                                                         | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (oc, N_PROPS, props);
  gtk_widget_class_set_accessible_role (wc, GTK_ACCESSIBLE_ROLE_IMG);
  gtk_widget_class_set_css_name (wc, "twb-plot");
}

static void
twb_plot_init (TwbPlot *p)
{
  p->curves = g_array_new (FALSE, FALSE, sizeof (Curve));
  p->x_label = g_strdup ("step");
  GtkEventController *motion = gtk_event_controller_motion_new ();
  g_signal_connect (motion, "enter", G_CALLBACK (on_motion), p);
  g_signal_connect (motion, "motion", G_CALLBACK (on_motion), p);
  g_signal_connect (motion, "leave", G_CALLBACK (on_leave), p);
  gtk_widget_add_controller (GTK_WIDGET (p), motion);
  GtkGesture *drag = gtk_gesture_drag_new ();
  gtk_gesture_single_set_button (GTK_GESTURE_SINGLE (drag), GDK_BUTTON_PRIMARY);
  g_signal_connect (drag, "drag-begin", G_CALLBACK (on_drag_begin), p);
  g_signal_connect (drag, "drag-update", G_CALLBACK (on_drag_update), p);
  g_signal_connect (drag, "drag-end", G_CALLBACK (on_drag_end), p);
  gtk_widget_add_controller (GTK_WIDGET (p), GTK_EVENT_CONTROLLER (drag));
  GtkGesture *click = gtk_gesture_click_new ();
  gtk_gesture_single_set_button (GTK_GESTURE_SINGLE (click), GDK_BUTTON_PRIMARY);
  g_signal_connect (click, "pressed", G_CALLBACK (on_pressed), p);
  gtk_widget_add_controller (GTK_WIDGET (p), GTK_EVENT_CONTROLLER (click));
  GtkEventController *scroll = gtk_event_controller_scroll_new (
    GTK_EVENT_CONTROLLER_SCROLL_VERTICAL | GTK_EVENT_CONTROLLER_SCROLL_DISCRETE);
  g_signal_connect (scroll, "scroll", G_CALLBACK (on_scroll), p);
  gtk_widget_add_controller (GTK_WIDGET (p), scroll);
}

/* ---- Public ------------------------------------------------------------------------ */

GtkWidget *
twb_plot_new (TwbMetrics *metrics, const char *title)
{
  return g_object_new (TWB_TYPE_PLOT, "metrics", metrics, "title", title, NULL);
}

TwbMetrics *
twb_plot_get_metrics (TwbPlot *p)
{
  g_return_val_if_fail (TWB_IS_PLOT (p), NULL);
  return p->metrics;
}

void
twb_plot_add_curve_styled (TwbPlot *p, guint series, const GdkRGBA *colour, TwbPlotDash dash)
{
  g_return_if_fail (TWB_IS_PLOT (p));
  g_return_if_fail (twb_metrics_has_series (p->metrics, series));
  for (guint i = 0; i < p->curves->len; i++)
    if (g_array_index (p->curves, Curve, i).series == series)
      return;
  Curve c = { series, colour ? *colour : twb_plot_palette[p->next_colour++ % G_N_ELEMENTS (twb_plot_palette)],
              dash };
  g_array_append_val (p->curves, c);
  gtk_widget_queue_draw (GTK_WIDGET (p));
}

void
twb_plot_add_curve (TwbPlot *p, guint series, const GdkRGBA *colour, gboolean dashed)
{
  twb_plot_add_curve_styled (p, series, colour, dashed ? TWB_PLOT_DASHED : TWB_PLOT_SOLID);
}

gboolean
twb_plot_get_curve_colour (TwbPlot *p, guint series, GdkRGBA *colour)
{
  g_return_val_if_fail (TWB_IS_PLOT (p), FALSE);
  for (guint i = 0; i < p->curves->len; i++)
    if (g_array_index (p->curves, Curve, i).series == series)
      {
        *colour = g_array_index (p->curves, Curve, i).colour;
        return TRUE;
      }
  return FALSE;
}

const GdkRGBA *
twb_plot_palette_colour (guint i)
{
  return &twb_plot_palette[i % TWB_PLOT_N_COLOURS];
}

void
twb_plot_remove_curve (TwbPlot *p, guint series)
{
  g_return_if_fail (TWB_IS_PLOT (p));
  for (guint i = 0; i < p->curves->len; i++)
    if (g_array_index (p->curves, Curve, i).series == series)
      {
        g_array_remove_index (p->curves, i);
        gtk_widget_queue_draw (GTK_WIDGET (p));
        return;
      }
}

void
twb_plot_clear_curves (TwbPlot *p)
{
  g_return_if_fail (TWB_IS_PLOT (p));
  g_array_set_size (p->curves, 0);
  p->next_colour = 0;
  gtk_widget_queue_draw (GTK_WIDGET (p));
}

guint
twb_plot_n_curves (TwbPlot *p)
{
  g_return_val_if_fail (TWB_IS_PLOT (p), 0);
  return p->curves->len;
}

void
twb_plot_set_x_log2 (TwbPlot *p, gboolean x_log2)
{
  g_return_if_fail (TWB_IS_PLOT (p));
  p->x_log2 = !!x_log2;
  gtk_widget_queue_draw (GTK_WIDGET (p));
}

void
twb_plot_set_log_y (TwbPlot *p, gboolean log_y)
{
  g_return_if_fail (TWB_IS_PLOT (p));
  log_y = !!log_y;
  if (p->log_y == log_y)
    return;
  p->log_y = log_y;
  p->y_fixed = FALSE; /* its units changed */
  g_object_notify_by_pspec (G_OBJECT (p), props[PROP_LOG_Y]);
  gtk_widget_queue_draw (GTK_WIDGET (p));
}

void
twb_plot_set_smoothing (TwbPlot *p, double smoothing)
{
  g_return_if_fail (TWB_IS_PLOT (p));
  smoothing = CLAMP (smoothing, 0, 0.99);
  if (p->smoothing == smoothing)
    return;
  p->smoothing = smoothing;
  g_object_notify_by_pspec (G_OBJECT (p), props[PROP_SMOOTHING]);
  gtk_widget_queue_draw (GTK_WIDGET (p));
}

void
twb_plot_set_x_range (TwbPlot *p, double x0, double x1)
{
  g_return_if_fail (TWB_IS_PLOT (p));
  g_return_if_fail (isfinite (x0) && isfinite (x1) && x1 > x0);
  p->zx0 = x0;
  p->zx1 = x1;
  p->y_fixed = FALSE;
  set_zoomed (p, TRUE);
  gtk_widget_queue_draw (GTK_WIDGET (p));
}

void
twb_plot_get_x_range (TwbPlot *p, double *x0, double *x1)
{
  g_return_if_fail (TWB_IS_PLOT (p));
  Geom g;
  widget_geom (p, &g);
  if (x0)
    *x0 = g.x0;
  if (x1)
    *x1 = g.x1;
}

void
twb_plot_reset_zoom (TwbPlot *p)
{
  g_return_if_fail (TWB_IS_PLOT (p));
  p->y_fixed = FALSE;
  set_zoomed (p, FALSE);
  gtk_widget_queue_draw (GTK_WIDGET (p));
}

gboolean
twb_plot_get_area (TwbPlot *p, int width, int height, graphene_rect_t *area)
{
  g_return_val_if_fail (TWB_IS_PLOT (p), FALSE);
  Frame f;
  twb_plot_widget_frame (p, width, height, &f);
  graphene_rect_init (area, f.g.ax, f.g.ay, f.g.aw, f.g.ah);
  gboolean has = f.g.has_data;
  twb_plot_frame_clear (&f);
  return has;
}

gboolean
twb_plot_get_view (TwbPlot *p, int width, int height, double *x0, double *x1, double *y0,
                   double *y1)
{
  g_return_val_if_fail (TWB_IS_PLOT (p), FALSE);
  Frame f;
  twb_plot_widget_frame (p, width, height, &f);
  gboolean log_y = p->log_y;
  if (x0)
    *x0 = f.g.x0;
  if (x1)
    *x1 = f.g.x1;
  if (y0)
    *y0 = log_y ? pow (10, f.g.y0) : f.g.y0;
  if (y1)
    *y1 = log_y ? pow (10, f.g.y1) : f.g.y1;
  gboolean has = f.g.has_data;
  twb_plot_frame_clear (&f);
  return has;
}

char *
twb_plot_readout_at (TwbPlot *p, double widget_x)
{
  g_return_val_if_fail (TWB_IS_PLOT (p), NULL);
  Geom g;
  widget_geom (p, &g);
  g_autofree Reading *r = g_new0 (Reading, p->curves->len + 1);
  double sx;
  if (!twb_plot_read_at (p, &g, widget_x, &sx, r))
    return NULL;
  g_autoptr (GString) s = g_string_new (NULL);
  g_autofree char *head = twb_plot_reading_x (p, sx);
  g_string_append (s, head);
  for (guint i = 0; i < p->curves->len; i++)
    {
      const Curve *c = &g_array_index (p->curves, Curve, i);
      if (!r[i].have || !twb_plot_curve_alive (p, c))
        continue;
      g_autofree char *label = twb_plot_curve_label (p, c, g.multi_run);
      g_autofree char *value = twb_plot_reading_value (p, &r[i]);
      g_string_append_printf (s, "  %s %s", label, value);
    }
  return g_string_free (g_steal_pointer (&s), FALSE);
}

/* Exports paint a background (widgets are drawn over the window's): white
 * under dark text, near-black under light text. */
static void
paint_background (TwbPlot *p, cairo_t *cr)
{
  GdkRGBA fg;
  twb_plot_fg_colour (p, &fg);
  double lum = 0.2126 * fg.red + 0.7152 * fg.green + 0.0722 * fg.blue;
  double v = lum > 0.5 ? 0.14 : 1;
  cairo_set_source_rgb (cr, v, v, v);
  cairo_paint (cr);
}

static void
draw_picture (cairo_t *cr, double width, double height, gpointer data)
{
  TwbPlot *p = data;
  paint_background (p, cr);
  twb_plot_draw (p, cr, (int) width, (int) height);
}

gboolean
twb_plot_export (TwbPlot *p, const char *path, int width, int height, GError **error)
{
  g_return_val_if_fail (TWB_IS_PLOT (p), FALSE);
  g_return_val_if_fail (path != NULL, FALSE);
  g_autofree char *base = g_path_get_basename (path);
  const char *dot = strrchr (base, '.');
  g_autofree char *ext = g_ascii_strdown (dot ? dot + 1 : "", -1);
  if (g_str_equal (ext, "csv"))
    {
      g_autofree guint *ids = g_new (guint, p->curves->len + 1);
      for (guint i = 0; i < p->curves->len; i++)
        ids[i] = g_array_index (p->curves, Curve, i).series;
      return twb_metrics_export_csv_series (p->metrics, path, ids, p->curves->len, error);
    }
  gboolean png = g_str_equal (ext, "png"), svg = g_str_equal (ext, "svg");
  if (!png && !svg)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "%s: unknown format “%s” (export as .png, .svg or .csv)", path, ext);
      return FALSE;
    }
  return twb_picture_save (path, width, height, 1, TWB_PICTURE_PNG | TWB_PICTURE_SVG,
                           draw_picture, p, error);
}
