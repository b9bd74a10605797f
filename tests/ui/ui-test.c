/* ui-test.c — see ui-test.h. */
#include "ui-test.h"

#include <glib/gstdio.h>

void
twt_ui_pump (void)
{
  for (int round = 0; round < 5; round++)
    {
      gint64 end = g_get_monotonic_time () + 20000;
      while (g_get_monotonic_time () < end)
        if (!g_main_context_iteration (NULL, FALSE))
          g_usleep (1000);
    }
}

char *
twt_ui_private_home (const char *name)
{
  g_setenv ("GTK_A11Y", "none", FALSE);
  g_setenv ("TWB_AUTOSAVE_SECONDS", "0", TRUE);
  g_autofree char *tmpl = g_strdup_printf ("twb-%s-home-XXXXXX", name);
  char *home = g_dir_make_tmp (tmpl, NULL);
  const char *vars[] = { "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME" };
  for (guint i = 0; i < G_N_ELEMENTS (vars); i++)
    {
      g_autofree char *d = g_build_filename (home, vars[i], NULL);
      g_mkdir_with_parents (d, 0700);
      g_setenv (vars[i], d, TRUE);
    }
  return home;
}
