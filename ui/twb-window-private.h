/* twb-window-private.h — TwbWindow's instance, shared by twb-window.c and
 * twb-window-actions.c. */
#pragma once

#include "ui/twb-window.h"

G_BEGIN_DECLS

struct _TwbWindow
{
  GtkApplicationWindow parent_instance;

  /* Template children. */
  GtkWidget *title_label;
  GtkWidget *subtitle_label;
  GtkWidget *toast_revealer;
  GtkWidget *toast_label;
  GtkWidget *toast_close;
  TwbPalette *palette;
  TwbGraphCanvas *canvas;
  GtkWidget *minimap_frame;
  TwbInspector *inspector;
  GtkWidget *issues_list;
  GtkWidget *issues_heading;
  GtkWidget *panel_stack;
  GtkWidget *status_counts;
  GtkWidget *status_errors;
  GtkWidget *status_zoom;
  GMenu *template_menu;
  GMenu *recent_menu;

  TwbDocument *doc;
  gulong changed_id, selection_id, notify_id;
  GSimpleActionGroup *graph_actions;
  char *clipboard;
  char *toast_text;
  char *status_text;
  guint toast_timeout;
  guint autosave_timeout;
  gulong recent_changed_id;
  gboolean close_confirmed;
  int paste_count;
};

/* twb-window-actions.c */
void twb_window_save_as (TwbWindow *self, gboolean then_close);

G_END_DECLS
