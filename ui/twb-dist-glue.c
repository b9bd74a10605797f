/* twb-dist-glue.c — what app/twb-dist.c takes from the twb program's
 * twb.c, for programs that link the UI without it (tests, benches). */
#include "app/twb-cli.h"

void
twb_print_error (const char *what, const GError *error)
{
  if (what)
    g_printerr ("twb: %s: %s\n", what, error ? error->message : "failed");
  else
    g_printerr ("twb: %s\n", error ? error->message : "failed");
}
