/* twb-debugger-panel.h — the Debugger tab: breakpoints, where a paused run
 * is, the ops of this iteration so far, and the paused op's tensors in the
 * tensor inspector.
 *
 * It draws what the window hands it: the breakpoint specs (as
 * tw_session_add_breakpoint writes them) and the run's last pause.  Every
 * change goes through the window's "debugger" actions (add-breakpoint,
 * remove-breakpoint, set-breakpoint, set-lr …), so the keyboard, the
 * canvas and scripts do the same.
 */
#pragma once

#include <gtk/gtk.h>

#include "ui/twb-run.h"
#include "ui/twb-tensor-view.h"

G_BEGIN_DECLS

#define TWB_TYPE_DEBUGGER_PANEL (twb_debugger_panel_get_type ())
G_DECLARE_FINAL_TYPE (TwbDebuggerPanel, twb_debugger_panel, TWB, DEBUGGER_PANEL, GtkWidget)

GtkWidget *twb_debugger_panel_new (void);
void twb_debugger_panel_set_breakpoints (TwbDebuggerPanel *p, const char *const *specs);
/* The run whose pauses are shown (a reference is taken), NULL: none. */
void twb_debugger_panel_set_run (TwbDebuggerPanel *p, TwbRun *run);
/* Show the run's current pause (or that it runs / has finished). */
void twb_debugger_panel_update (TwbDebuggerPanel *p);
/* Show a tensor of the pause in the inspector; FALSE if there is none so named. */
gboolean twb_debugger_panel_select_tensor (TwbDebuggerPanel *p, const char *name);
/* The learning rate, momentum and weight decay the fields start from. */
void twb_debugger_panel_set_hyper (TwbDebuggerPanel *p, double lr, double momentum, double wd);
TwbTensorView *twb_debugger_panel_get_tensor_view (TwbDebuggerPanel *p);
/* For tests: "iteration 3 › backward › fc2", the trace rows, the tensors listed. */
const char *twb_debugger_panel_get_position (TwbDebuggerPanel *p);
guint twb_debugger_panel_n_trace (TwbDebuggerPanel *p);
guint twb_debugger_panel_n_tensors (TwbDebuggerPanel *p);
guint twb_debugger_panel_n_breakpoints (TwbDebuggerPanel *p);

G_END_DECLS
