/* twb-application-actions.c — app actions and every accelerator.
 *
 * One table: what a user presses, which action it triggers.  Window and
 * graph actions are defined in ui/twb-window-actions.c.  "Enter edits",
 * Tab and the arrow keys belong to the canvas itself (ui: key controller),
 * so buttons and text fields keep their own meaning of those keys. */
#define G_LOG_DOMAIN "twb-application-actions"

#include "app/twb-application.h"

static void
act_new (GSimpleAction *a, GVariant *p, gpointer data)
{
  twb_application_new_window (TWB_APPLICATION (data), NULL);
}

static void
act_new_from_template (GSimpleAction *a, GVariant *p, gpointer data)
{
  g_autoptr (GError) error = NULL;
  const char *path = g_variant_get_string (p, NULL);
  /* A template opens as a new, untitled model: saving never overwrites it. */
  tw_model *m = tw_model_load (path, &error);
  if (m == NULL)
    {
      GtkWindow *w = gtk_application_get_active_window (GTK_APPLICATION (data));
      if (TWB_IS_WINDOW (w))
        twb_window_show_toast (TWB_WINDOW (w), error->message);
      else
        g_warning ("%s", error->message);
      return;
    }
  g_autoptr (TwbDocument) doc = twb_document_new_for_model (m);
  GtkWindow *active = gtk_application_get_active_window (GTK_APPLICATION (data));
  TwbDocument *cur = TWB_IS_WINDOW (active) ? twb_window_get_document (TWB_WINDOW (active)) : NULL;
  if (cur && twb_document_get_path (cur) == NULL && !twb_document_get_dirty (cur)
      && tw_graph_n_nodes (twb_document_get_graph (cur)) == 0)
    twb_window_set_document (TWB_WINDOW (active), doc);
  else
    twb_application_new_window (TWB_APPLICATION (data), doc);
}

static void
act_quit (GSimpleAction *a, GVariant *p, gpointer data)
{
  /* Close each window: those with unsaved changes ask first. */
  GList *windows = g_list_copy (gtk_application_get_windows (GTK_APPLICATION (data)));
  for (GList *l = windows; l; l = l->next)
    gtk_window_close (GTK_WINDOW (l->data));
  g_list_free (windows);
}

static void
act_about (GSimpleAction *a, GVariant *p, gpointer data)
{
  static const char *const authors[] = { "The Tensor Workbench authors", NULL };
  GtkWindow *parent = gtk_application_get_active_window (GTK_APPLICATION (data));
  gtk_show_about_dialog (parent, "program-name", "Tensor Workbench", "version", TWB_VERSION,
                         "comments",
                         "Draw neural networks, check their shapes as you go, train and profile "
                         "them — in C, without Python.",
                         "logo-icon-name", TWB_APPLICATION_ID, "license-type", GTK_LICENSE_MIT_X11,
                         "authors", authors, "modal", TRUE, NULL);
}

static const GActionEntry app_entries[] = {
  { "new", act_new },
  { "new-from-template", act_new_from_template, "s" },
  { "quit", act_quit },
  { "about", act_about },
};

static const struct
{
  const char *action;
  const char *accels[3];
} accels[] = {
  { "app.new", { "<Control>n", NULL } },
  { "app.quit", { "<Control>q", NULL } },
  { "win.open", { "<Control>o", NULL } },
  { "win.save", { "<Control>s", NULL } },
  { "win.save-as", { "<Control><Shift>s", NULL } },
  { "win.close", { "<Control>w", NULL } },
  { "win.sequential", { "<Control><Shift>a", NULL } },
  { "win.focus-search", { "<Control>f", NULL } },
  { "win.export::png", { "<Control><Shift>e", NULL } },
  { "debugger.run", { "F5", NULL } },
  { "debugger.stop", { "<Shift>F5", NULL } },
  { "debugger.step-op", { "F11", NULL } },
  { "debugger.step-layer", { "F10", NULL } },
  { "debugger.step-iteration", { "<Control>F10", NULL } },
  { "debugger.toggle-breakpoint('')", { "F9", NULL } },
  { "profiler.record", { "F6", NULL } },
  { "graph.undo", { "<Control>z", NULL } },
  { "graph.redo", { "<Control><Shift>z", "<Control>y", NULL } },
  { "graph.copy", { "<Control>c", NULL } },
  { "graph.cut", { "<Control>x", NULL } },
  { "graph.paste", { "<Control>v", NULL } },
  { "graph.duplicate", { "<Control>d", NULL } },
  { "graph.delete", { "Delete", "KP_Delete", NULL } },
  { "graph.select-all", { "<Control>a", NULL } },
  { "graph.zoom-fit", { "<Control>0", NULL } },
  { "graph.zoom-in", { "<Control>plus", "<Control>equal", NULL } },
  { "graph.zoom-out", { "<Control>minus", NULL } },
  { "graph.auto-layout", { "<Control>l", NULL } },
  { "graph.collapse", { "<Control>g", NULL } },
  { "graph.expand", { "<Control><Shift>g", NULL } },
  { "win.show-help-overlay", { "<Control>question", NULL } },
};

void
twb_application_install_actions (TwbApplication *self)
{
  g_action_map_add_action_entries (G_ACTION_MAP (self), app_entries, G_N_ELEMENTS (app_entries),
                                   self);
  for (guint i = 0; i < G_N_ELEMENTS (accels); i++)
    gtk_application_set_accels_for_action (GTK_APPLICATION (self), accels[i].action,
                                           accels[i].accels);
}
