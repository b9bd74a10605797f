/* window-test.h — what the UI tests that drive a whole window share:
 * settling a run, activating actions as `twb --do` does, the run and its
 * pause, a fresh copy of an inspected tensor, a label by its text. */
#pragma once

#include "app/twb-application.h"
#include "ui/twb-window-private.h"

/* Longest a run may take to reach its next pause here: the models train
 * thousands of steps a second, an ASan build ~20x slower; 30 s is far
 * beyond either and only ends a test that hangs. */
#define SETTLE_TIMEOUT_S 30

/* Pump the main loop (draining the run at once) until the run is not
 * running, then a few frames. */
void settle (TwbWindow *w);
/* A detailed action ("win.train-steps(5)"), enabled now, then settle. */
void act (TwbWindow *w, const char *detailed);
void act_s (TwbWindow *w, const char *name, const char *arg);
TwbRun *run_of (TwbWindow *w);                  /* borrowed; asserts there is one */
const tw_snapshot *pause_of (TwbWindow *w);     /* borrowed; asserts paused */
/* debugger.inspect(name), then its copy newer than older.  A new reference. */
tw_tensor *inspect_fresh (TwbWindow *w, const char *name, tw_tensor *older);
/* The label under root whose text starts with prefix, or NULL. */
GtkWidget *find_label (GtkWidget *root, const char *prefix);
/* The window as drawn (its renderer), saved as PNG at path. */
void twt_window_screenshot (GtkWidget *window, const char *path);
/* What main does first, after twt_ui_private_home: g_test_init, any
 * warning or critical (ours or GTK's) fatal, the engine's ops, GTK, and the
 * application (flags | G_APPLICATION_NON_UNIQUE) registered with the
 * house style.  NULL without a display, TAP's skip line printed: main
 * returns 0.  The caller unrefs the application. */
TwbApplication *twt_window_test_init (int *argc, char ***argv, GApplicationFlags flags);
