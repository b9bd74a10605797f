/* twb-window-private.h — TwbWindow's instance, shared by twb-window.c and
 * twb-window-actions.c. */
#pragma once

#include "ui/twb-window.h"
#include "ui/twb-run.h"
#include "profiler/recorder.h"
#include "ui/twb-whatif-sweep.h"

G_BEGIN_DECLS

typedef struct _TwbWindowCluster TwbWindowCluster;
typedef struct _TwbWindowWhatif TwbWindowWhatif;

struct _TwbWindow
{
  GtkApplicationWindow parent_instance;

  /* Template children. */
  GtkWidget *title_label;
  GtkWidget *subtitle_label;
  GtkWidget *toast_revealer;
  GtkWidget *toast_label;
  GtkWidget *toast_close;
  TwbPalette *palette;
  TwbGraphCanvas *canvas;
  GtkWidget *minimap_frame;
  TwbInspector *inspector;
  GtkWidget *issues_list;
  GtkWidget *issues_heading;
  GtkWidget *panel_stack;
  GtkWidget *status_counts;
  GtkWidget *status_errors;
  GtkWidget *status_zoom;
  GMenu *template_menu;
  GMenu *recent_menu;
  GtkWidget *run_box;
  GtkWidget *training_page, *debugger_page, *compiled_page;
  GtkWidget *vpaned;
  GtkWidget *status_run;

  TwbDocument *doc;
  gulong changed_id, selection_id, notify_id;
  GSimpleActionGroup *graph_actions;
  GtkEventController *app_shortcuts;  /* the application's accelerators, capture phase */
  char *clipboard;
  char *toast_text;
  char *status_text;
  guint toast_timeout;
  guint autosave_timeout;
  gulong recent_changed_id;
  gboolean close_confirmed;
  int paste_count;

  /* Training and debugging (twb-window-run.c). */
  GSimpleActionGroup *debugger_actions;
  TwbMetrics *metrics;
  TwbRun *run;                  /* the current or last run, NULL before the first */
  GPtrArray *breakpoints;       /* char* specs, as tw_session_add_breakpoint reads them */
  GHashTable *frozen;           /* node ids whose parameters are frozen */
  char *init_weights;           /* Load Weights: runs start from this state_dict */
  gboolean graph_pending;       /* the document changed since the run's graph */
  gboolean compile_stale;       /* the compile view shows an older graph */
  gboolean close_after_stop;
  gboolean split_done;          /* the bottom panel's first height was set */
  char *blocked_notice;         /* why Continue is greyed out (a node's error), or NULL */
  char *last_graph_notice;
  double applied_lr, applied_momentum, applied_wd;
  guint progress_source;        /* the progress line's next showing (run_progress) */
  GtkWidget *run_button;
  GtkWidget *step_buttons;      /* the debugger's stepping buttons (a linked box) */
  GtkWidget *device_button;
  TwbWindowCluster *cluster;    /* training on several processes (twb-window-cluster.c) */
  GtkWidget *dashboard, *debugger_panel, *compile_view;

  /* The Profiler tab (twb-window-profiler.c). */
  GtkWidget *profiler_page, *profiler_panel;
  GSimpleActionGroup *profiler_actions;
  tw_recorder *recorder;        /* while recording */
  char *record_mode;            /* the mode when recording began */
  gboolean record_armed;        /* Record pressed without a run: starts with the next */
  guint record_timer;
  int loading;                  /* traces being read, ONNX files imported */
  gboolean profiler_selecting;

  /* An imported ONNX model's weights (twb-window-onnx.c) until it is saved:
   * held, and written to a cache file that init_weights names. */
  GHashTable *onnx_weights;
  char *onnx_weights_file;
  char *onnx_source;            /* the ONNX file: Save As suggests NAME.json beside it */

  /* The What if tab (twb-window-whatif.c). */
  GtkWidget *whatif_page;
  TwbWindowWhatif *whatif;
};

/* twb-window-actions.c */
void twb_window_save_as (TwbWindow *self, gboolean then_close);

/* twb-window-run.c */
void twb_window_run_init (TwbWindow *self);
void twb_window_run_dispose (TwbWindow *self);
void twb_window_run_doc_changed (TwbWindow *self, guint flags);
/* TRUE when it asked the user (training is running): the close waits. */
gboolean twb_window_run_close_request (TwbWindow *self);
/* The canvas's tints as the tab shown wants them (fused groups, the
 * profiler's heat overlay). */
void twb_window_update_tints (TwbWindow *self);
/* Room for the tab shown: the bottom panel grows when it is small. */
void twb_window_grow_bottom_panel (TwbWindow *self);

/* twb-window-run.c, for twb-window-cluster.c: the run's id in the model's
 * runs folder (caller frees); a run made elsewhere becomes the window's
 * (its signals connected, the dashboard following it); the run actions'
 * enabled state and tooltips brought up to date. */
char *twb_window_runs_dir_next_id (TwbWindow *self);
void twb_window_run_adopt (TwbWindow *self, TwbRun *run);
void twb_window_run_update_actions (TwbWindow *self);

/* twb-window-cluster.c */
void twb_window_cluster_init (TwbWindow *self);
void twb_window_cluster_dispose (TwbWindow *self);
/* The device is the cluster: Run starts ranks (twb_window_cluster_start). */
gboolean twb_window_cluster_selected (TwbWindow *self);
gboolean twb_window_cluster_running (TwbWindow *self);
/* Why the cluster cannot be chosen (no mpirun), NULL when it can. */
const char *twb_window_cluster_unavailable (TwbWindow *self);
/* The settings dialog; on Use the device becomes the cluster. */
void twb_window_cluster_choose (TwbWindow *self, gboolean simulated);
void twb_window_cluster_use_cpu (TwbWindow *self);
/* A document was set: it paints the stages the chosen device runs. */
void twb_window_cluster_doc_set (TwbWindow *self);
/* The inspector's gradient buckets (measured or predicted), or none. */
void twb_window_cluster_update_buckets (TwbWindow *self);
gboolean twb_window_cluster_start (TwbWindow *self, GError **error);
/* SIGTERM to the run's processes; the run ends (stopped) when they have gone. */
void twb_window_cluster_stop (TwbWindow *self);

/* twb-window-whatif.c: the What if tab (win.whatif-run, win.whatif-ranks). */
void twb_window_whatif_init (TwbWindow *self);
void twb_window_whatif_dispose (TwbWindow *self);
/* The document or its path changed: the command line follows. */
void twb_window_whatif_doc_changed (TwbWindow *self);
/* A sweep is running on its worker. */
gboolean twb_window_whatif_busy (TwbWindow *self);
/* The last sweep's figures (borrowed, replaced by the next), NULL before one. */
/* The file of the last row opened as a trace (win.whatif-open-trace), or NULL. */
const char *twb_window_whatif_last_trace (TwbWindow *self);
const TwbWhatifResult *twb_window_whatif_result (TwbWindow *self);
/* The text of the table's cell (row, column 0 ranks … 7 busiest link), as
 * shown; NULL outside the table.  Caller frees. */
char *twb_window_whatif_cell_text (TwbWindow *self, guint row, int col);
/* A control by name (tests): "ranks", "topology", "devices-per-node",
 * "device", "algo", "bucket-mb", "batch", "simulate", "message",
 * "command", "plot", "bars", "table".  Borrowed; NULL for another name. */
GtkWidget *twb_window_whatif_widget (TwbWindow *self, const char *name);

/* twb-window-onnx.c */
void twb_window_onnx_init (TwbWindow *self);
void twb_window_onnx_dispose (TwbWindow *self);
/* After the model was saved at model_path: the imported weights beside it
 * (MODEL.safetensors), and runs start from there.  TRUE when there are
 * none. */
gboolean twb_window_save_imported_weights (TwbWindow *self, const char *model_path,
                                           GError **error);

/* twb-window.c: the title of a window that holds no model, after the
 * trace its Profiler tab shows (kept until a model is opened or drawn). */
void twb_window_show_trace_title (TwbWindow *self, const char *path);

/* twb-window-profiler.c */
void twb_window_profiler_init (TwbWindow *self);
void twb_window_profiler_dispose (TwbWindow *self);
void twb_window_profiler_run_created (TwbWindow *self, TwbRun *run);
void twb_window_profiler_run_finished (TwbWindow *self);
void twb_window_profiler_selection_changed (TwbWindow *self);
/* The heat overlay's tints (node → 0x1RRGGBB), NULL when off. */
GHashTable *twb_window_profiler_tints (TwbWindow *self);

G_END_DECLS
