/* ui-test.h — what the UI test programs share. */
#pragma once

#include <glib.h>

/* Lets layout, drawing and idle handlers run: a few frames' worth (five
 * rounds of 20 ms of main-loop iterations). */
void twt_ui_pump (void);
