/* twb-widget-colour.c — a widget's text colour, in a window or not
 * (twb-widget-colour.h). */
#include "profiler/twb-widget-colour.h"

void
twb_widget_fg_colour (GtkWidget *w, GdkRGBA *c)
{
  if (gtk_widget_get_root (w) == NULL)
    {
      /* Adwaita's text colours: #2e3436 and white. */
      gboolean dark = FALSE;
      GtkSettings *settings = gtk_settings_get_default ();
      if (settings)
        g_object_get (settings, "gtk-application-prefer-dark-theme", &dark, NULL);
      *c = dark ? (GdkRGBA) { 1, 1, 1, 1 } : (GdkRGBA) { 0.18, 0.204, 0.212, 1 };
      return;
    }
#if GTK_CHECK_VERSION(4, 10, 0)
  gtk_widget_get_color (w, c);
#else
  G_GNUC_BEGIN_IGNORE_DEPRECATIONS
  gtk_style_context_get_color (gtk_widget_get_style_context (w), c);
  G_GNUC_END_IGNORE_DEPRECATIONS
#endif
}
