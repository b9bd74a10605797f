/* ui-test.h — what the UI test programs share. */
#pragma once

#include <glib.h>

/* Lets layout, drawing and idle handlers run: a few frames' worth (five
 * rounds of 20 ms of main-loop iterations). */
void twt_ui_pump (void);
/* Before g_test_init: no accessibility bus, no autosave, and private state,
 * data, config and cache dirs in a new temporary folder (recovery, recent
 * files, runs) but the system's XDG_DATA_DIRS (GTK needs the MIME database
 * from there to load SVG icons, so not G_TEST_OPTION_ISOLATE_DIRS).
 * Returns the folder; the caller frees the string. */
char *twt_ui_private_home (const char *name);
