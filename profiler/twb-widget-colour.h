/* twb-widget-colour.h — the text colour a widget drawn with cairo uses,
 * also when it is drawn outside any window (an export, a benchmark): no
 * theme applies there, so the light or dark theme's text colour as the
 * settings ask.  Shared by the timeline and the dashboard's plots.  GTK 4. */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

void twb_widget_fg_colour (GtkWidget *w, GdkRGBA *c);

G_END_DECLS
