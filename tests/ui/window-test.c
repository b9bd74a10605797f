/* window-test.c — see window-test.h. */
#include "window-test.h"
#include "ui-test.h"

#include <string.h>


/* Pump the main loop (draining the run's snapshots at once rather than
 * waiting for its 30 ms timer) until the run is no longer running: paused,
 * finished, stopped or failed.  Then a few frames so the views catch up. */
void
settle (TwbWindow *w)
{
  gint64 end = g_get_monotonic_time () + SETTLE_TIMEOUT_S * G_USEC_PER_SEC;
  for (;;)
    {
      TwbRun *r = twb_window_get_run (w);
      if (r)
        twb_run_drain (r);
      while (g_main_context_iteration (NULL, FALSE))
        ;
      r = twb_window_get_run (w);
      if (r == NULL || twb_run_get_state (r) != TW_SESSION_RUNNING)
        break;
      if (g_get_monotonic_time () > end)
        g_error ("the run did not pause or end within %d s", SETTLE_TIMEOUT_S);
      g_usleep (500);
    }
  twt_ui_pump ();
}

/* Activate a detailed action name ("win.train-steps(5)") on the window, as
 * `twb --do` does, and settle. */
void
act (TwbWindow *w, const char *detailed)
{
  g_autofree char *name = NULL;
  g_autoptr (GVariant) target = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_true (g_action_parse_detailed_name (detailed, &name, &target, &error));
  g_assert_no_error (error);
  /* Enabled now (activating a disabled action does nothing, silently). */
  GActionGroup *group = g_str_has_prefix (name, "debugger.") ? G_ACTION_GROUP (w->debugger_actions)
                        : g_str_has_prefix (name, "graph.")  ? G_ACTION_GROUP (w->graph_actions)
                                                             : G_ACTION_GROUP (w);
  const char *dot = strchr (name, '.');
  g_assert_nonnull (dot);
  if (!g_action_group_get_action_enabled (group, dot + 1))
    g_error ("%s: no such action, or disabled now", detailed);
  g_assert_true (gtk_widget_activate_action_variant (GTK_WIDGET (w), name, target));
  settle (w);
}

void
act_s (TwbWindow *w, const char *name, const char *arg)
{
  g_autofree char *quoted = g_variant_print (g_variant_new_string (arg), FALSE);
  g_autofree char *detailed = g_strdup_printf ("%s(%s)", name, quoted);
  act (w, detailed);
}

TwbRun *
run_of (TwbWindow *w)
{
  TwbRun *r = twb_window_get_run (w);
  g_assert_nonnull (r);
  return r;
}

const tw_snapshot *
pause_of (TwbWindow *w)
{
  const tw_snapshot *p = twb_run_get_pause (run_of (w));
  g_assert_nonnull (p);
  g_assert_cmpint (twb_run_get_state (run_of (w)), ==, TW_SESSION_PAUSED);
  return p;
}

/* debugger.inspect(name), then the copy the session sends: a new one, not
 * `older` (the copy of an earlier request or pause).  A new reference. */
tw_tensor *
inspect_fresh (TwbWindow *w, const char *name, tw_tensor *older)
{
  act_s (w, "debugger.inspect", name);
  gint64 end = g_get_monotonic_time () + SETTLE_TIMEOUT_S * G_USEC_PER_SEC;
  for (;;)
    {
      twb_run_drain (run_of (w));
      while (g_main_context_iteration (NULL, FALSE))
        ;
      tw_tensor *t = twb_run_get_tensor (run_of (w), name);
      if (t && t != older)
        return tw_tensor_ref (t);
      if (g_get_monotonic_time () > end)
        g_error ("debugger.inspect('%s') brought no new copy of it within %d s", name,
                 SETTLE_TIMEOUT_S);
      g_usleep (500);
    }
}

/* The label under root whose text starts with prefix, or NULL. */
GtkWidget *
find_label (GtkWidget *root, const char *prefix)
{
  if (GTK_IS_LABEL (root) && g_str_has_prefix (gtk_label_get_text (GTK_LABEL (root)), prefix))
    return root;
  for (GtkWidget *c = gtk_widget_get_first_child (root); c; c = gtk_widget_get_next_sibling (c))
    {
      GtkWidget *l = find_label (c, prefix);
      if (l)
        return l;
    }
  return NULL;
}

void
twt_window_screenshot (GtkWidget *window, const char *path)
{
  twt_ui_pump ();
  g_autoptr (GdkPaintable) p = gtk_widget_paintable_new (window);
  GtkSnapshot *snap = gtk_snapshot_new ();
  gdk_paintable_snapshot (p, snap, gtk_widget_get_width (window), gtk_widget_get_height (window));
  g_autoptr (GskRenderNode) node = gtk_snapshot_free_to_node (snap);
  g_assert_nonnull (node);
  g_autoptr (GdkTexture) tex =
    gsk_renderer_render_texture (gtk_native_get_renderer (GTK_NATIVE (window)), node, NULL);
  g_assert_true (gdk_texture_save_to_png (tex, path));
  g_test_message ("screenshot: %s", path);
}

TwbApplication *
twt_window_test_init (int *argc, char ***argv, GApplicationFlags flags)
{
  g_test_init (argc, argv, NULL);
  g_log_set_always_fatal (G_LOG_FATAL_MASK | G_LOG_LEVEL_WARNING | G_LOG_LEVEL_CRITICAL);
  tw_ops_init ();
  if (!gtk_init_check ())
    {
      g_print ("1..0 # SKIP no display\n");
      return NULL;
    }
  TwbApplication *app = twb_application_new (flags | G_APPLICATION_NON_UNIQUE);
  g_application_register (G_APPLICATION (app), NULL, NULL);
  twb_application_load_style ();
  return app;
}
