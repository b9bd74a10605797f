/* twb-focus.h — the keyboard focus across panels that rebuild or disable
 * their widgets.
 *
 * A panel that replaces its widgets while one of them has the focus (Enter
 * in a field whose edit rebuilds the page) destroys that widget inside its
 * own key event, and GTK goes on with the event on freed widgets
 * (Gtk-CRITICAL … gtk_widget_is_ancestor).  A field made insensitive while
 * it has the focus never hears that it lost it (an insensitive widget's
 * controllers take no events), and GtkText warns from its cursor blink
 * ("did not receive a focus-out event").  So a panel does:
 *
 *   twb_focus_set_key (entry, "lr");                // when building a field
 *
 *   g_autofree char *key = twb_focus_save (old);    // before dropping `old`
 *   ... replace old with new ...
 *   twb_focus_restore (new, key);                   // the same field has it again
 *
 *   twb_widget_set_sensitive (entry, FALSE);        // the focus leaves first
 *
 * GTK-only helpers; they keep no state of their own beyond `old` kept
 * alive until the main loop is next idle.
 */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

/* Names the field for twb_focus_restore (copied; NULL removes the name). */
void twb_focus_set_key (GtkWidget *w, const char *key);

/* Whether the root's focus widget is w or inside it. */
gboolean twb_focus_is_within (GtkWidget *w);

/* Before `old` is removed: when the focus is inside it, moves the focus off
 * (the field sees its focus-out while it still can), keeps `old` alive
 * until the main loop is idle (the event being handled finishes on live
 * widgets) and returns the key of the focused field or of its nearest
 * keyed ancestor inside `old` ("" when none is keyed).  NULL when the
 * focus is elsewhere.  The caller frees the string. */
char *twb_focus_save (GtkWidget *old);

/* After the rebuild: gives the focus to the widget under `root` whose key
 * is `key` (a text field gets its cursor at the end).  FALSE when key is
 * NULL or empty or no such widget can take the focus. */
gboolean twb_focus_restore (GtkWidget *root, const char *key);

/* gtk_widget_set_sensitive, the focus moved off w first when it is inside
 * and w is made insensitive; w gets it back when made sensitive again if
 * nothing has taken it meanwhile. */
void twb_widget_set_sensitive (GtkWidget *w, gboolean sensitive);

G_END_DECLS
