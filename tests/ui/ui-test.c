/* ui-test.c — see ui-test.h. */
#include "ui-test.h"

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
