/* twb-window.h — a main window: one document, its canvas, palette,
 * inspector, issues list, bottom panel and status bar.
 *
 * Commands are GActions: "win.*" for files, export and panels, "graph.*"
 * (an action group inserted on the window) for edits and the view.  Their
 * accelerators live in app/twb-application-actions.c.  Tests drive a window
 * through the same actions:
 *
 *   gtk_widget_activate_action (GTK_WIDGET (win), "graph.undo", NULL);
 */
#pragma once

#include <gtk/gtk.h>

#include "graph_editor/twb-document.h"
#include "graph_editor/twb-graph-canvas.h"
#include "ui/twb-inspector.h"
#include "ui/twb-palette.h"

G_BEGIN_DECLS

#define TWB_TYPE_WINDOW (twb_window_get_type ())
G_DECLARE_FINAL_TYPE (TwbWindow, twb_window, TWB, WINDOW, GtkApplicationWindow)

/* doc may be NULL (an empty, untitled model). */
TwbWindow *twb_window_new (GtkApplication *app, TwbDocument *doc);
TwbDocument *twb_window_get_document (TwbWindow *self);        /* borrowed */
void twb_window_set_document (TwbWindow *self, TwbDocument *doc);
TwbGraphCanvas *twb_window_get_canvas (TwbWindow *self);
TwbInspector *twb_window_get_inspector (TwbWindow *self);
TwbPalette *twb_window_get_palette (TwbWindow *self);

/* Open any file the window opens, by its content (tw_file_kind_sniff, not
 * its name): the Open dialog, Open Recent, drag and drop.  A model: when a
 * window already shows that file, present it; otherwise into this window
 * when its document is empty and unmodified, else into a new window.  An
 * ONNX model: imported (twb_window_import_onnx).  A Chrome trace: the
 * Profiler tab (twb_window_open_trace).  Anything else, or an error: a
 * notice naming the file says why and nothing changes.  Returns the window
 * showing it (this one for an import or a trace), or NULL. */
TwbWindow *twb_window_open_file (TwbWindow *self, const char *path);
/* The window of app showing file (the same file under another path or
 * through a symlink counts), or NULL. */
TwbWindow *twb_window_find_for_file (GtkApplication *app, GFile *file);
gboolean twb_window_save_to (TwbWindow *self, const char *path, GError **error);

/* "training", "debugger" or "profiler". */
void twb_window_show_panel (TwbWindow *self, const char *name);
const char *twb_window_get_panel (TwbWindow *self);

/* Transient notice at the top of the canvas (refusals, errors, saves). */
void twb_window_show_toast (TwbWindow *self, const char *text);
const char *twb_window_get_toast (TwbWindow *self);             /* NULL if hidden */

/* Issues list (tests): count, and the effect of clicking row i. */
int twb_window_count_issues (TwbWindow *self);
void twb_window_activate_issue (TwbWindow *self, int i);
const char *twb_window_get_status_text (TwbWindow *self);

/* Copy/paste through an internal clipboard as well as the display's (tests). */
const char *twb_window_get_clipboard_text (TwbWindow *self);

/* Render the window as it is on screen to a PNG (the --screenshot recipe). */
gboolean twb_window_save_screenshot (TwbWindow *self, const char *path, GError **error);
/* The same at a given size, whatever size the window got (a screen smaller
 * than the picture: the content is laid out at width x height for it). */
gboolean twb_window_save_screenshot_sized (TwbWindow *self, const char *path, int width,
                                           int height, GError **error);

/* Training (twb-window-run.c; the "debugger" action group and
 * win.train-steps, win.save-weights …).  The run is borrowed, NULL before
 * the first. */
typedef struct _TwbRun TwbRun;
TwbRun *twb_window_get_run (TwbWindow *self);
gboolean twb_window_run_is_active (TwbWindow *self);
gboolean twb_window_add_breakpoint (TwbWindow *self, const char *spec, GError **error);
gboolean twb_window_save_weights_to (TwbWindow *self, const char *path, GError **error);
gboolean twb_window_load_weights_from (TwbWindow *self, const char *path, GError **error);
/* Training on several processes (twb-window-cluster.c): the settings
 * dialog while open (debugger.device::cluster opens it), and the process
 * group of the run's processes (0 when none runs). */
GtkWidget *twb_window_get_cluster_dialog (TwbWindow *self);
int twb_window_cluster_get_pgid (TwbWindow *self);
/* Drop the run at once (its worker stopped and joined), without asking. */
void twb_window_stop_run_now (TwbWindow *self);

/* The Profiler tab (twb-window-profiler.c): open a Chrome trace (read on a
 * worker thread; the tab says when it is there or why not), export the
 * trace shown (.json / .json.gz) or the timeline (.png / .svg / .pdf), and
 * select the k-th slice called NAME ("NAME#k"). */
void twb_window_open_trace (TwbWindow *self, const char *path);
/* Several traces read together (NULL-terminated paths): PyTorch traces of
 * one run, a rank each (distributedInfo.rank), open as one trace of its
 * ranks (tw_trace_merge_pytorch_ranks, profiler/ranks.h); any other set,
 * a trace per file. */
void twb_window_open_traces (TwbWindow *self, const char *const *paths);
/* Files as the Open dialog gives them: the traces among them together
 * (twb_window_open_traces), each other one by twb_window_open_file. */
void twb_window_open_paths (TwbWindow *self, const char *const *paths);
gboolean twb_window_export_trace (TwbWindow *self, const char *path, GError **error);
gboolean twb_window_select_slice_named (TwbWindow *self, const char *spec);
/* A trace is being read, a run trains or a What if sweep runs. */
gboolean twb_window_is_busy (TwbWindow *self);

/* ONNX (twb-window-onnx.c; win.import-onnx, win.import-onnx-path,
 * win.export-onnx, win.export-onnx-to).  Import reads and translates path on
 * a worker thread (the window is busy meanwhile, see twb_window_is_busy),
 * then shows the model as a new, unsaved document in this window when its
 * document is empty and unmodified, else in a new window; runs start from
 * the file's weights, and Save writes them beside the model file.  On
 * error a toast names the file and the nodes, and nothing changes.
 * Export writes the inference graph with the last run's weights (or those
 * runs start from) at opset (0: the latest), atomically; on error nothing
 * is written and the message says so. */
void twb_window_import_onnx (TwbWindow *self, const char *path);
gboolean twb_window_export_onnx_to (TwbWindow *self, const char *path, int opset,
                                    GError **error);

/* Close without the unsaved-changes prompt (after it was answered). */
void twb_window_close_now (TwbWindow *self);

/* Private to twb-window*.c. */
void twb_window_install_actions (TwbWindow *self);
void twb_window_update_actions (TwbWindow *self);
void twb_window_rebuild_recent_menu (TwbWindow *self);

G_END_DECLS
