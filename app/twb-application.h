/* twb-application.h — the GTK application: single instance, one window per
 * document, the primary menu's app actions, light/dark from the system, the
 * recovery offer at startup, and the headless screenshot mode.
 *
 * `twb` starts it through twb_gui_main () when built with the gui option:
 *
 *   twb [MODEL.json…]                         open windows (an existing instance gets them)
 *   twb --screenshot OUT.png [--open MODEL.json] [--size WxH] [--panel training|debugger|profiler]
 */
#pragma once

#include <gtk/gtk.h>

#include "ui/twb-window.h"

G_BEGIN_DECLS

#define TWB_APPLICATION_ID "org.tensorworkbench.Twb"

#define TWB_TYPE_APPLICATION (twb_application_get_type ())
G_DECLARE_FINAL_TYPE (TwbApplication, twb_application, TWB, APPLICATION, GtkApplication)

TwbApplication *twb_application_new (GApplicationFlags flags);
/* A window for doc (NULL: an empty model), presented. */
TwbWindow *twb_application_new_window (TwbApplication *self, TwbDocument *doc);
/* Load the application's resources and CSS without running it (tests). */
void twb_application_load_style (void);

/* The GUI entry point of the `twb` binary; returns the exit status. */
int twb_gui_main (int argc, char **argv);
/* Whether a display is configured ($DISPLAY or $WAYLAND_DISPLAY). */
gboolean twb_gui_have_display (void);

/* twb-application-actions.c */
void twb_application_install_actions (TwbApplication *self);

G_END_DECLS
