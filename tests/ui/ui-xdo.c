/* ui-xdo.c — see ui-xdo.h. */
#include "ui-xdo.h"
#include "ui-test.h"

#include <gdk/x11/gdkx.h>
#include <string.h>

gboolean
twt_xdo_ready (void)
{
  g_autofree char *path = g_find_program_in_path ("xdotool");
  return path != NULL && GDK_IS_X11_DISPLAY (gdk_display_get_default ());
}

void
twt_xdo_wait (int ms)
{
  gint64 end = g_get_monotonic_time () + (gint64) ms * 1000;
  while (g_get_monotonic_time () < end)
    if (!g_main_context_iteration (NULL, FALSE))
      g_usleep (1000);
}

static void
child_done (GPid pid, int status, gpointer data)
{
  *(gboolean *) data = TRUE;
  g_spawn_close_pid (pid);
}

/* xdotool with these arguments; the main loop runs until it exits. */
static void
run_argv (const char *const *args)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (gpointer) "xdotool");
  for (const char *const *a = args; *a; a++)
    g_ptr_array_add (argv, (gpointer) *a);
  g_ptr_array_add (argv, NULL);
  GPid pid;
  g_autoptr (GError) error = NULL;
  if (!g_spawn_async (NULL, (char **) argv->pdata, NULL,
                      G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid, &error))
    g_error ("xdotool: %s", error->message);
  gboolean done = FALSE;
  g_child_watch_add (pid, child_done, &done);
  /* 20 s: far beyond any of these commands on a loaded machine. */
  gint64 end = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;
  while (!done)
    {
      g_main_context_iteration (NULL, FALSE);
      g_usleep (500);
      if (g_get_monotonic_time () > end)
        g_error ("xdotool did not finish within 20 s");
    }
  /* Its last events are handled, and what they redraw is drawn. */
  twt_ui_pump ();
}

void
twt_xdo_run (const char *args)
{
  g_auto (GStrv) v = g_strsplit (args, " ", -1);
  run_argv ((const char *const *) v);
}

static gulong
xid_of (GtkNative *native)
{
  GdkSurface *s = gtk_native_get_surface (native);
  g_assert_true (GDK_IS_X11_SURFACE (s));
  return (gulong) gdk_x11_surface_get_xid (s);
}

void
twt_xdo_place (GtkWindow *w, int width, int height)
{
  /* On the screen whole: a click aimed off it lands nowhere. */
  GListModel *monitors = gdk_display_get_monitors (gdk_display_get_default ());
  g_autoptr (GdkMonitor) mon = g_list_model_get_item (monitors, 0);
  GdkRectangle geo;
  gdk_monitor_get_geometry (mon, &geo);
  if (width > geo.width || height > geo.height)
    g_error ("a %d x %d window does not fit the %d x %d screen", width, height, geo.width,
             geo.height);
  gtk_window_set_default_size (w, width, height);
  gtk_window_present (w);
  gint64 end = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  while (!gtk_widget_get_mapped (GTK_WIDGET (w)) && g_get_monotonic_time () < end)
    twt_xdo_wait (20);
  g_assert_true (gtk_widget_get_mapped (GTK_WIDGET (w)));
  g_autofree char *cmd = g_strdup_printf ("windowmove %lu 0 0 windowsize %lu %d %d",
                                          xid_of (GTK_NATIVE (w)), xid_of (GTK_NATIVE (w)), width,
                                          height);
  twt_xdo_run (cmd);
  /* The new size laid out and drawn. */
  twt_xdo_wait (300);
}

void
twt_xdo_point (GtkWidget *w, double x, double y, gulong *xid, int *sx, int *sy)
{
  g_assert_true (gtk_widget_get_mapped (w));
  GtkNative *native = gtk_widget_get_native (w);
  g_assert_nonnull (native);
  if (x < 0)
    x = gtk_widget_get_width (w) / 2.0;
  if (y < 0)
    y = gtk_widget_get_height (w) / 2.0;
  graphene_point_t p;
  g_assert_true (
    gtk_widget_compute_point (w, GTK_WIDGET (native), &GRAPHENE_POINT_INIT (x, y), &p));
  double tx, ty;
  gtk_native_get_surface_transform (native, &tx, &ty);
  *xid = xid_of (native);
  *sx = (int) (p.x + tx + 0.5);
  *sy = (int) (p.y + ty + 0.5);
}

static char *
move_cmd (GtkWidget *w, double x, double y)
{
  gulong xid;
  int sx, sy;
  twt_xdo_point (w, x, y, &xid, &sx, &sy);
  return g_strdup_printf ("mousemove --window %lu %d %d", xid, sx, sy);
}

void
twt_xdo_move (GtkWidget *w, double x, double y)
{
  g_autofree char *m = move_cmd (w, x, y);
  twt_xdo_run (m);
}

/* The pointer there first, its motion handled, then the press: after a
 * popover closed, a press that came with the motion that brought the
 * pointer back into the window was lost (a hand is never that fast). */
void
twt_xdo_click (GtkWidget *w, double x, double y, int button)
{
  twt_xdo_move (w, x, y);
  g_autofree char *cmd = g_strdup_printf ("click %d", button);
  twt_xdo_run (cmd);
}

void
twt_xdo_drag (GtkWidget *from, double fx, double fy, GtkWidget *to, double tx, double ty)
{
  gulong a, b;
  int x0, y0, x1, y1;
  twt_xdo_point (from, fx, fy, &a, &x0, &y0);
  twt_xdo_point (to, tx, ty, &b, &x1, &y1);
  g_assert_cmpuint (a, ==, b);
  /* Pressed, then ten moves 60 ms apart (past GTK's drag threshold at the
   * first), held still, released: what a hand does. */
  GString *cmd = g_string_new (NULL);
  g_string_append_printf (cmd, "mousemove --window %lu %d %d sleep 0.2 mousedown 1 sleep 0.2", a,
                          x0, y0);
  for (int i = 1; i <= 10; i++)
    g_string_append_printf (cmd, " mousemove --window %lu %d %d sleep 0.06", a,
                            x0 + (x1 - x0) * i / 10, y0 + (y1 - y0) * i / 10);
  g_string_append (cmd, " sleep 0.25 mouseup 1 sleep 0.2");
  twt_xdo_run (cmd->str);
  g_string_free (cmd, TRUE);
}

void
twt_xdo_reveal (GtkWidget *w)
{
  GtkWidget *sw = gtk_widget_get_ancestor (w, GTK_TYPE_SCROLLED_WINDOW);
  /* As a hand does: the wheel over the list until the widget is in view
   * (a bound on the turns ends a test whose widget never comes). */
  for (int turn = 0; sw && turn < 40; turn++)
    {
      graphene_rect_t b;
      g_assert_true (gtk_widget_compute_bounds (w, sw, &b));
      int h = gtk_widget_get_height (sw);
      int button = b.origin.y < 0 ? 4 : b.origin.y + b.size.height > h ? 5 : 0;
      if (button == 0)
        return;
      g_autofree char *m = move_cmd (sw, -1, -1);
      g_autofree char *cmd = g_strdup_printf ("%s click %d", m, button);
      twt_xdo_run (cmd);
    }
  if (sw)
    g_error ("the wheel did not bring the widget into view");
}

void
twt_xdo_key (const char *keys)
{
  run_argv ((const char *const[]) { "key", "--delay", "60", keys, NULL });
}

void
twt_xdo_type (const char *text)
{
  run_argv ((const char *const[]) { "type", "--delay", "40", text, NULL });
}

static const char *
widget_text (GtkWidget *w)
{
  if (GTK_IS_LABEL (w))
    return gtk_label_get_text (GTK_LABEL (w));
  return NULL;
}

GtkWidget *
twt_find_label (GtkWidget *root, const char *text)
{
  if (!gtk_widget_get_mapped (root))
    return NULL;
  if (g_strcmp0 (widget_text (root), text) == 0)
    return root;
  for (GtkWidget *c = gtk_widget_get_first_child (root); c; c = gtk_widget_get_next_sibling (c))
    {
      GtkWidget *hit = twt_find_label (c, text);
      if (hit)
        return hit;
    }
  return NULL;
}

GtkWidget *
twt_find_type (GtkWidget *root, GType type)
{
  if (!gtk_widget_get_mapped (root))
    return NULL;
  if (G_TYPE_CHECK_INSTANCE_TYPE (root, type))
    return root;
  for (GtkWidget *c = gtk_widget_get_first_child (root); c; c = gtk_widget_get_next_sibling (c))
    {
      GtkWidget *hit = twt_find_type (c, type);
      if (hit)
        return hit;
    }
  return NULL;
}
