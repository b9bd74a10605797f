/* ui-xdo.h — real pointer and key events for this process's windows, as a
 * person makes them: xdotool sends them through the X server (XTEST), the
 * main loop runs meanwhile, and GTK receives them as from a mouse and a
 * keyboard.  Where to click is read from the widgets themselves (their
 * allocation in their native surface), so no coordinate is hard-coded.
 *
 *   if (!twt_xdo_ready ()) { g_test_skip ("no xdotool or no X11"); return; }
 *   twt_xdo_place (GTK_WINDOW (w), 1400, 900);
 *   twt_xdo_click (button, -1, -1, 1);                // its centre
 *   twt_xdo_type ("fashion-mnist");
 *   twt_xdo_key ("Return");
 *   twt_xdo_drag (palette_row, -1, -1, canvas, 300, 200);
 *
 * Every call returns once xdotool has exited and the main loop has handled
 * what it sent (a few frames more).
 */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

/* xdotool on PATH and GDK on X11. */
gboolean twt_xdo_ready (void);

/* Presents the window at (0, 0) of the screen, width × height, mapped and
 * laid out, with the keyboard focus of the X server. */
void twt_xdo_place (GtkWindow *w, int width, int height);

/* Runs `xdotool ARGS` (split on spaces, nothing quoted), the main loop
 * running until it exits, then a few frames. */
void twt_xdo_run (const char *args);

/* The point (x, y) of widget w (its own coordinates; -1 for the centre)
 * in its native surface's X window: the XID and the offset. */
void twt_xdo_point (GtkWidget *w, double x, double y, gulong *xid, int *sx, int *sy);

void twt_xdo_move (GtkWidget *w, double x, double y);
void twt_xdo_click (GtkWidget *w, double x, double y, int button);
/* Press at a point of `from`, move there in steps as a hand does, release
 * at a point of `to` (a drag and drop between widgets of the same window). */
void twt_xdo_drag (GtkWidget *from, double fx, double fy, GtkWidget *to, double tx, double ty);
/* Turns the mouse wheel over w's scrolled window until w is in view. */
void twt_xdo_reveal (GtkWidget *w);
/* Keys as xdotool names them: "ctrl+n", "F10", "shift+F5", "Return". */
void twt_xdo_key (const char *keys);
void twt_xdo_type (const char *text);

/* Pumps the main loop for ms milliseconds. */
void twt_xdo_wait (int ms);

/* The first mapped widget under root that is a GtkLabel (or a button's or
 * model button's text) reading `text`; NULL when none. */
GtkWidget *twt_find_label (GtkWidget *root, const char *text);
/* The first mapped widget of type `type` under root. */
GtkWidget *twt_find_type (GtkWidget *root, GType type);

G_END_DECLS
