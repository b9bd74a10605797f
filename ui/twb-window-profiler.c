/* twb-window-profiler.c — the Profiler tab in the window: recording the
 * current run (Record, F6), opening and exporting traces, the "profiler"
 * actions, and the links with the canvas (a slice selects its nodes, the
 * selection highlights its slices, a collective selects the nodes whose
 * gradients it carries, the layers' time tints the nodes).
 *
 * Actions (group "profiler"; each also reachable from `twb --screenshot
 * --do`):
 *   record (boolean state)     start / stop recording; armed without a run,
 *                              it starts with the next run
 *   open, open-file('PATH')    open a Chrome trace (ours or PyTorch's, .gz too)
 *   open-files(['A', 'B'])     open traces together: PyTorch traces of one run,
 *                              a rank each, merge into one trace of its ranks
 *   export, export-to('PATH')  .json / .json.gz: the trace; .png / .svg / .pdf:
 *                              the timeline as drawn
 *   close-trace, show-trace(i), compare(i: -1 none)
 *   heat (boolean state)       tint the canvas's nodes by their time share
 *   critical-path (boolean state)  draw the median step's critical path across
 *                              the ranks of a trace of several ranks
 *   zoom('A,B'), select-range('A,B')   view time in ms; zoom-all
 *   select-slice('NAME[#K]')   the K-th (from 0) slice called NAME, in time order
 *   search('TEXT'), page('selection'|'slice'|'top'|'layers'|'ranks'|'compare')
 */
#define G_LOG_DOMAIN "twb-window-profiler"

#include "ui/twb-window-private.h"
#include "graph_editor/twb-picture.h"
#include "profiler/chrome.h"
#include "profiler/chrome-read.h"
#include "profiler/ranks.h"
#include "profiler/recorder.h"
#include "engine/graph.h"
#include "ui/twb-profiler-panel.h"

#include <math.h>
#include <string.h>

#define STATUS_INTERVAL_MS 500

static TwbProfilerPanel *
panel (TwbWindow *self)
{
  return TWB_PROFILER_PANEL (self->profiler_panel);
}

static void
prof_enable (TwbWindow *self, const char *name, gboolean on)
{
  GAction *a = g_action_map_lookup_action (G_ACTION_MAP (self->profiler_actions), name);
  if (a)
    g_simple_action_set_enabled (G_SIMPLE_ACTION (a), on);
}

static void
update_actions (TwbWindow *self)
{
  gboolean any = twb_profiler_panel_n_traces (panel (self)) > 0;
  prof_enable (self, "export", any);
  prof_enable (self, "export-to", any);
  prof_enable (self, "close-trace", any);
}

static const char *
mode_name (TwbWindow *self)
{
  GAction *a = g_action_map_lookup_action (G_ACTION_MAP (self->debugger_actions), "mode");
  g_autoptr (GVariant) st = a ? g_action_get_state (a) : NULL;
  return st && g_strcmp0 (g_variant_get_string (st, NULL), "compiled") == 0 ? "compiled" : "eager";
}

/* ---- Recording -------------------------------------------------------------------------- */

static void
set_record_state (TwbWindow *self, gboolean on)
{
  GAction *a = g_action_map_lookup_action (G_ACTION_MAP (self->profiler_actions), "record");
  g_simple_action_set_state (G_SIMPLE_ACTION (a), g_variant_new_boolean (on));
}

static gboolean
record_status (gpointer data)
{
  TwbWindow *self = data;
  if (self->recorder && tw_recorder_is_recording (self->recorder))
    {
      g_autofree char *s = g_strdup_printf ("Recording: %" G_GUINT64_FORMAT " events",
                                            tw_recorder_n_events (self->recorder));
      twb_profiler_panel_set_status (panel (self), s);
    }
  return G_SOURCE_CONTINUE;
}

static void
begin_recording (TwbWindow *self, TwbRun *run)
{
  if (twb_run_is_external (run))
    return;   /* its ranks trace themselves: twb profile --ranks */
  self->recorder = tw_recorder_new (0);
  tw_recorder_start_session (self->recorder, twb_run_get_session (run));
  g_free (self->record_mode);
  self->record_mode = g_strdup (mode_name (self));
  self->record_armed = FALSE;
  twb_profiler_panel_set_status (panel (self), "Recording…");
  if (self->record_timer == 0)
    self->record_timer = g_timeout_add (STATUS_INTERVAL_MS, record_status, self);
}

/* Stops the recorder and shows what it holds as a new trace. */
static void
end_recording (TwbWindow *self)
{
  g_clear_handle_id (&self->record_timer, g_source_remove);
  self->record_armed = FALSE;
  if (self->recorder == NULL)
    {
      twb_profiler_panel_set_status (panel (self), NULL);
      return;
    }
  tw_recorder_stop (self->recorder);
  /* Before the take: it empties the recorder. */
  guint64 dropped = tw_recorder_n_dropped (self->recorder);
  tw_trace *t = tw_recorder_take_trace (self->recorder);
  g_clear_pointer (&self->recorder, tw_recorder_free);
  const char *mode = self->record_mode ? self->record_mode : mode_name (self);
  if (g_strcmp0 (mode, mode_name (self)) != 0)
    mode = "eager and compiled";
  tw_model *m = twb_document_get_model (self->doc);
  const char *model = m && m->name && *m->name ? m->name : "model";
  tw_trace_set_meta (t, "model", model);
  tw_trace_set_meta (t, "mode", mode);
  guint64 n = tw_trace_n_slices (t);
  g_autofree char *title = g_strdup_printf ("%s, %s", model, mode);
  g_autofree char *status = NULL;
  if (n == 0)
    {
      tw_trace_free (t);
      status = g_strdup ("Nothing was recorded: the run did not execute an op while recording");
    }
  else
    {
      twb_profiler_panel_add_trace (panel (self), t, title, NULL);
      status = dropped ? g_strdup_printf ("Recorded %" G_GUINT64_FORMAT " slices; %" G_GUINT64_FORMAT
                                          " events beyond the recorder's cap were dropped",
                                          n, dropped)
                       : g_strdup_printf ("Recorded %" G_GUINT64_FORMAT " slices", n);
      twb_window_show_panel (self, "profiler");
      twb_window_grow_bottom_panel (self);
    }
  twb_profiler_panel_set_status (panel (self), status);
  g_clear_pointer (&self->record_mode, g_free);
  update_actions (self);
}

static void
act_record (GSimpleAction *a, GVariant *v, gpointer data)
{
  TwbWindow *self = data;
  gboolean on = g_variant_get_boolean (v);
  g_autoptr (GVariant) st = g_action_get_state (G_ACTION (a));
  if (on == g_variant_get_boolean (st))
    return;
  g_simple_action_set_state (a, v);
  if (!on)
    {
      end_recording (self);
      return;
    }
  if (twb_window_run_is_active (self))
    begin_recording (self, self->run);
  else
    {
      self->record_armed = TRUE;
      twb_profiler_panel_set_status (panel (self), "Recording starts with the next run (F5)");
    }
}

void
twb_window_profiler_run_created (TwbWindow *self, TwbRun *run)
{
  if (self->record_armed && self->recorder == NULL)
    begin_recording (self, run);
}

void
twb_window_profiler_run_finished (TwbWindow *self)
{
  if (self->recorder)
    {
      set_record_state (self, FALSE);
      end_recording (self);
    }
}

/* ---- Opening and exporting -------------------------------------------------------------- */

typedef struct
{
  TwbWindow *self;              /* a reference */
  char **paths;
  /* Read on the worker: */
  GPtrArray *traces;            /* tw_trace, one per path, or the one merged */
  gboolean merged;              /* several PyTorch traces of one run, a rank each */
} load_job;

static void
load_job_free (gpointer p)
{
  load_job *j = p;
  g_object_unref (j->self);
  g_strfreev (j->paths);
  g_clear_pointer (&j->traces, g_ptr_array_unref);
  g_free (j);
}

/* Each file read; several PyTorch traces of distinct ranks merged as the
 * ranks of one trace, as `twb trace-info` merges them
 * (tw_trace_merge_pytorch_ranks); any other set opens as it is, a trace
 * per file. */
static void
load_thread (GTask *task, gpointer src, gpointer data, GCancellable *c)
{
  load_job *j = data;
  j->traces = g_ptr_array_new_with_free_func ((GDestroyNotify) tw_trace_free);
  gboolean by_rank = g_strv_length (j->paths) > 1;
  for (char **p = j->paths; *p; p++)
    {
      GError *error = NULL;
      tw_trace *t = tw_trace_load_chrome (*p, &error);
      if (t == NULL)
        {
          g_task_return_error (task, error);
          return;
        }
      by_rank = by_rank && tw_trace_is_pytorch_rank (t);
      g_ptr_array_add (j->traces, t);
    }
  if (by_rank)
    {
      g_autoptr (GError) error = NULL;
      tw_trace *m = tw_trace_merge_pytorch_ranks ((tw_trace *const *) j->traces->pdata,
                                                  j->traces->len, &error);
      if (m)
        {
          g_ptr_array_set_size (j->traces, 0);
          g_ptr_array_add (j->traces, m);
          j->merged = TRUE;
        }
      else
        g_debug ("traces left apart: %s", error->message);
    }
  g_task_return_boolean (task, TRUE);
}

static void
load_done (GObject *src, GAsyncResult *res, gpointer data)
{
  load_job *j = g_task_get_task_data (G_TASK (res));
  TwbWindow *self = j->self;
  g_autoptr (GError) error = NULL;
  gboolean ok = g_task_propagate_boolean (G_TASK (res), &error);
  self->loading--;
  if (self->profiler_panel == NULL)
    return;
  if (!ok)
    {
      twb_profiler_panel_set_status (panel (self), error->message);
      twb_window_show_toast (self, error->message);
      return;
    }
  g_autofree char *status = NULL;
  const char *note = NULL;
  for (guint i = 0; i < j->traces->len; i++)
    {
      tw_trace *t = j->traces->pdata[i];
      /* The panel takes the trace. */
      j->traces->pdata[i] = NULL;
      g_autofree char *base = g_path_get_basename (j->paths[i]);
      g_autofree char *title = NULL;
      note = tw_trace_get_meta (t, "import.note");
      g_clear_pointer (&status, g_free);
      if (j->merged)
        {
          int n_ranks = 1;
          tw_trace_is_multi_rank (t, &n_ranks);
          guint n = g_strv_length (j->paths);
          title = g_strdup_printf ("%s + %u more (%d ranks)", base, n - 1, n_ranks);
          status = g_strdup_printf ("%u PyTorch traces merged as the ranks of one run: %"
                                    G_GUINT64_FORMAT " slices on %d ranks", n,
                                    tw_trace_n_slices (t), n_ranks);
        }
      else
        status = g_strdup_printf ("%s: %" G_GUINT64_FORMAT " slices%s%s", base,
                                  tw_trace_n_slices (t), note ? "; " : "", note ? note : "");
      twb_profiler_panel_add_trace (panel (self), t, title ? title : base,
                                    j->merged ? NULL : j->paths[i]);
    }
  g_ptr_array_set_size (j->traces, 0);
  twb_window_show_trace_title (self, j->paths[0]);
  twb_profiler_panel_set_status (panel (self), status);
  if (note && !j->merged)
    twb_window_show_toast (self, status);
  twb_window_show_panel (self, "profiler");
  twb_window_grow_bottom_panel (self);
  update_actions (self);
}

void
twb_window_open_traces (TwbWindow *self, const char *const *paths)
{
  g_return_if_fail (paths && paths[0]);
  load_job *j = g_new0 (load_job, 1);
  j->self = g_object_ref (self);
  j->paths = g_strdupv ((char **) paths);
  self->loading++;
  g_autofree char *base = g_path_get_basename (paths[0]);
  guint n = g_strv_length ((char **) paths);
  g_autofree char *s = n > 1 ? g_strdup_printf ("Opening %s and %u more…", base, n - 1)
                             : g_strdup_printf ("Opening %s…", base);
  twb_profiler_panel_set_status (panel (self), s);
  twb_window_show_panel (self, "profiler");
  GTask *task = g_task_new (NULL, NULL, load_done, NULL);
  g_task_set_task_data (task, j, load_job_free);
  g_task_run_in_thread (task, load_thread);
  g_object_unref (task);
}

void
twb_window_open_trace (TwbWindow *self, const char *path)
{
  const char *paths[] = { path, NULL };
  twb_window_open_traces (self, paths);
}

gboolean
twb_window_is_busy (TwbWindow *self)
{
  return self->loading > 0 || (self->run && twb_run_get_state (self->run) == TW_SESSION_RUNNING)
         || twb_window_whatif_busy (self);
}

static void
render_timeline (cairo_t *cr, double w, double h, gpointer data)
{
  twb_timeline_render (TWB_TIMELINE (data), cr, (int) w, (int) h);
}

gboolean
twb_window_export_trace (TwbWindow *self, const char *path, GError **error)
{
  int cur = twb_profiler_panel_get_current (panel (self));
  if (cur < 0)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "%s: no trace to export", path);
      return FALSE;
    }
  if (g_str_has_suffix (path, ".json") || g_str_has_suffix (path, ".json.gz"))
    return tw_chrome_trace_save (twb_profiler_panel_get_trace (panel (self), cur), path, error);
  GtkWidget *tl = GTK_WIDGET (twb_profiler_panel_get_timeline (panel (self)));
  int w = gtk_widget_get_width (tl), h = gtk_widget_get_height (tl);
  return twb_picture_save (path, w > 0 ? w : 1400, h > 0 ? h : 500, 2,
                           TWB_PICTURE_PNG | TWB_PICTURE_SVG | TWB_PICTURE_PDF, render_timeline,
                           tl, error);
}

static void
open_response (GtkNativeDialog *d, int response, TwbWindow *self)
{
  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr (GListModel) files = gtk_file_chooser_get_files (GTK_FILE_CHOOSER (d));
      g_autoptr (GPtrArray) paths = g_ptr_array_new_with_free_func (g_free);
      for (guint i = 0; i < g_list_model_get_n_items (files); i++)
        {
          g_autoptr (GFile) f = g_list_model_get_item (files, i);
          char *path = g_file_get_path (f);
          if (path)
            g_ptr_array_add (paths, path);
        }
      g_ptr_array_add (paths, NULL);
      twb_window_open_paths (self, (const char *const *) paths->pdata);
    }
  g_object_unref (d);
}

static void
export_response (GtkNativeDialog *d, int response, TwbWindow *self)
{
  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr (GFile) f = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (d));
      g_autofree char *path = f ? g_file_get_path (f) : NULL;
      g_autoptr (GError) error = NULL;
      if (path && !twb_window_export_trace (self, path, &error))
        twb_window_show_toast (self, error->message);
      else if (path)
        {
          g_autofree char *base = g_path_get_basename (path);
          g_autofree char *s = g_strdup_printf ("Saved %s", base);
          twb_window_show_toast (self, s);
        }
    }
  g_object_unref (d);
}

static GtkFileFilter *
filter (const char *name, const char *const *patterns)
{
  GtkFileFilter *f = gtk_file_filter_new ();
  gtk_file_filter_set_name (f, name);
  for (const char *const *p = patterns; *p; p++)
    gtk_file_filter_add_pattern (f, *p);
  return f;
}

static void
act_open (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  GtkFileChooserNative *d = gtk_file_chooser_native_new ("Open Trace", GTK_WINDOW (self),
                                                         GTK_FILE_CHOOSER_ACTION_OPEN, "_Open",
                                                         "_Cancel");
  g_autoptr (GtkFileFilter) f = filter ("Chrome traces (*.json, *.json.gz)",
                                        (const char *[]) { "*.json", "*.json.gz", "*.gz", NULL });
  g_autoptr (GtkFileFilter) all = filter ("All files", (const char *[]) { "*", NULL });
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (d), f);
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (d), all);
  /* Several PyTorch traces of one run, a rank each, open as one. */
  gtk_file_chooser_set_select_multiple (GTK_FILE_CHOOSER (d), TRUE);
  g_signal_connect (d, "response", G_CALLBACK (open_response), self);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (d));
}

static void
act_open_file (GSimpleAction *a, GVariant *p, gpointer data)
{
  twb_window_open_trace (data, g_variant_get_string (p, NULL));
}

static void
act_open_files (GSimpleAction *a, GVariant *p, gpointer data)
{
  g_autofree const char **paths = g_variant_get_strv (p, NULL);
  if (paths && paths[0])
    twb_window_open_traces (data, paths);
}

static void
act_export (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  GtkFileChooserNative *d = gtk_file_chooser_native_new ("Export Trace", GTK_WINDOW (self),
                                                         GTK_FILE_CHOOSER_ACTION_SAVE, "_Save",
                                                         "_Cancel");
  gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (d), "trace.json.gz");
  g_autoptr (GtkFileFilter) f1 = filter ("Chrome trace (*.json.gz, *.json)",
                                         (const char *[]) { "*.json.gz", "*.json", NULL });
  g_autoptr (GtkFileFilter) f2 = filter ("Timeline image (*.png, *.svg, *.pdf)",
                                         (const char *[]) { "*.png", "*.svg", "*.pdf", NULL });
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (d), f1);
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (d), f2);
  g_signal_connect (d, "response", G_CALLBACK (export_response), self);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (d));
}

static void
act_export_to (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  g_autoptr (GError) error = NULL;
  if (!twb_window_export_trace (self, g_variant_get_string (p, NULL), &error))
    twb_window_show_toast (self, error->message);
}

static void
act_close_trace (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  twb_profiler_panel_close_current (panel (self));
  update_actions (self);
}

static void
act_show_trace (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  gint32 i = g_variant_get_int32 (p);
  if (i >= 0)
    twb_profiler_panel_show_trace (panel (self), (guint) i);
}

static void
act_compare (GSimpleAction *a, GVariant *p, gpointer data)
{
  twb_profiler_panel_set_compare (panel (data), g_variant_get_int32 (p));
}

/* "A,B" in ms → view-time ns. */
static gboolean
parse_span (TwbWindow *self, const char *s, gint64 *a, gint64 *b)
{
  g_auto (GStrv) parts = g_strsplit (s, ",", 2);
  char *end1 = NULL, *end2 = NULL;
  double x = parts[0] ? g_ascii_strtod (parts[0], &end1) : NAN;
  double y = parts[0] && parts[1] ? g_ascii_strtod (parts[1], &end2) : NAN;
  if (!isfinite (x) || !isfinite (y) || end1 == parts[0] || end2 == parts[1] || y <= x)
    {
      g_autofree char *msg = g_strdup_printf ("'%s': expected two times in ms, A,B with A < B", s);
      twb_window_show_toast (self, msg);
      return FALSE;
    }
  *a = (gint64) llround (x * 1e6);
  *b = (gint64) llround (y * 1e6);
  return TRUE;
}

static void
act_zoom (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  gint64 x, y;
  if (parse_span (self, g_variant_get_string (p, NULL), &x, &y))
    twb_timeline_set_view (twb_profiler_panel_get_timeline (panel (self)), x, y);
}

static void
act_zoom_all (GSimpleAction *a, GVariant *p, gpointer data)
{
  twb_timeline_zoom_all (twb_profiler_panel_get_timeline (panel (data)));
}

static void
act_select_range (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  gint64 x, y;
  if (parse_span (self, g_variant_get_string (p, NULL), &x, &y))
    twb_timeline_set_range (twb_profiler_panel_get_timeline (panel (self)), x, y);
}

gboolean
twb_window_select_slice_named (TwbWindow *self, const char *spec)
{
  TwbTimeline *tl = twb_profiler_panel_get_timeline (panel (self));
  if (twb_timeline_n_groups (tl) == 0)
    return FALSE;
  g_autofree char *name = g_strdup (spec);
  char *hash = strrchr (name, '#');
  guint64 k = 0;
  if (hash && g_ascii_string_to_unsigned (hash + 1, 10, 0, G_MAXUINT32, &k, NULL))
    *hash = '\0';
  else
    k = 0;
  /* The k-th in start order over every lane of the first group. */
  const tw_trace *t = twb_timeline_get_trace (tl, 0);
  g_autoptr (GArray) hits = g_array_new (FALSE, FALSE, sizeof (TwbSliceRef));
  g_autoptr (GArray) starts = g_array_new (FALSE, FALSE, sizeof (gint64));
  for (guint l = 0; l < tw_trace_n_lanes (t); l++)
    for (guint i = 0; i < tw_trace_lane_n_slices (t, l); i++)
      {
        const tw_slice *s = tw_trace_lane_slice (t, l, i);
        if (strcmp (s->name, name) != 0)
          continue;
        /* Insertion keeps hits in start order (few per name). */
        guint at = starts->len;
        while (at > 0 && g_array_index (starts, gint64, at - 1) > s->start_ns)
          at--;
        TwbSliceRef r = { 0, l, i };
        g_array_insert_val (hits, at, r);
        g_array_insert_val (starts, at, s->start_ns);
      }
  if (k >= hits->len)
    return FALSE;
  twb_timeline_select_slice (tl, &g_array_index (hits, TwbSliceRef, k));
  return TRUE;
}

static void
act_select_slice (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  const char *spec = g_variant_get_string (p, NULL);
  if (!twb_window_select_slice_named (self, spec))
    {
      g_autofree char *msg = g_strdup_printf ("No slice '%s' in the trace shown", spec);
      twb_window_show_toast (self, msg);
    }
}

static void
act_search (GSimpleAction *a, GVariant *p, gpointer data)
{
  twb_profiler_panel_set_search (panel (data), g_variant_get_string (p, NULL));
}

static void
act_page (GSimpleAction *a, GVariant *p, gpointer data)
{
  twb_profiler_panel_set_page (panel (data), g_variant_get_string (p, NULL));
}

static void
act_critical_path (GSimpleAction *a, GVariant *v, gpointer data)
{
  g_simple_action_set_state (a, v);
  twb_profiler_panel_set_critical_path (panel (data), g_variant_get_boolean (v));
}

static void
act_heat (GSimpleAction *a, GVariant *v, gpointer data)
{
  g_simple_action_set_state (a, v);
  twb_window_update_tints (data);
}

/* ---- The canvas ------------------------------------------------------------------------- */

/* Node id → tint for the heat overlay while the Profiler tab shows: from
 * pale yellow (little time) to red (the most), relative to the largest
 * share.  NULL when there is nothing to show. */
GHashTable *
twb_window_profiler_tints (TwbWindow *self)
{
  GAction *a = g_action_map_lookup_action (G_ACTION_MAP (self->profiler_actions), "heat");
  g_autoptr (GVariant) st = g_action_get_state (a);
  if (!g_variant_get_boolean (st) || g_strcmp0 (twb_window_get_panel (self), "profiler") != 0)
    return NULL;
  g_auto (GStrv) nodes = twb_profiler_panel_layer_nodes (panel (self));
  double max = 0;
  for (char **n = nodes; *n; n++)
    {
      double s = 0;
      twb_profiler_panel_layer_share (panel (self), *n, &s);
      max = MAX (max, s);
    }
  if (max <= 0)
    return NULL;
  GHashTable *tints = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (char **n = nodes; *n; n++)
    {
      double s = 0;
      twb_profiler_panel_layer_share (panel (self), *n, &s);
      double x = sqrt (CLAMP (s / max, 0, 1)); /* small shares stay visible */
      guint r = 255, g = (guint) lround (230 - 190 * x), b = (guint) lround (150 - 130 * x);
      g_hash_table_insert (tints, g_strdup (*n), GUINT_TO_POINTER (0x1000000u | (r << 16) | (g << 8) | b));
    }
  return tints;
}

static void
nodes_activated (TwbProfilerPanel *p, char **ids, TwbWindow *self)
{
  tw_model *m = twb_document_get_model (self->doc);
  g_autoptr (GPtrArray) found = g_ptr_array_new ();
  for (char **id = ids; id && *id; id++)
    if (m && m->graph && tw_graph_find (m->graph, *id))
      g_ptr_array_add (found, *id);
  if (found->len == 0)
    {
      g_autofree char *list = g_strjoinv (", ", ids);
      g_autofree char *msg = g_strdup_printf ("Not in this model: %s (the trace is of another "
                                              "graph)", list);
      twb_profiler_panel_set_status (p, msg);
      return;
    }
  twb_graph_canvas_reveal_node (self->canvas, found->pdata[0]);
  g_ptr_array_add (found, NULL);
  self->profiler_selecting = TRUE;
  twb_document_select (self->doc, (const char *const *) found->pdata, FALSE);
  self->profiler_selecting = FALSE;
}

/* A collective picked on the timeline: the nodes whose gradients it
 * carries (its "params" argument, ranks.h) selected on the canvas, when
 * they are this model's; another model's trace selects nothing. */
static void
slice_selected (TwbTimeline *tl, gpointer ref, TwbWindow *self)
{
  const TwbSliceRef *r = ref;
  const tw_trace *t = r ? twb_timeline_get_trace (tl, r->group) : NULL;
  if (t == NULL || r->lane >= tw_trace_n_lanes (t)
      || r->index >= tw_trace_lane_n_slices (t, r->lane))
    return;
  const tw_slice *s = tw_trace_lane_slice (t, r->lane, r->index);
  const char *params = tw_slice_arg (s, "params");
  tw_model *m = twb_document_get_model (self->doc);
  if (params == NULL || *params == '\0' || m == NULL || m->graph == NULL)
    return;
  /* The recorder cuts a long list with ",… (N more)" (profiler/recorder.c). */
  g_auto (GStrv) names = g_strsplit (params, ",", -1);
  guint n_params = 0, w = 0;
  for (guint i = 0; names[i]; i++)
    {
      guint64 more = 0;
      g_strstrip (names[i]);
      if (g_str_has_prefix (names[i], "\u2026"))
        {
          const char *open = strchr (names[i], '(');
          if (open)
            more = g_ascii_strtoull (open + 1, NULL, 10);
          n_params += (guint) more;
          g_free (names[i]);
          continue;
        }
      if (*names[i] == '\0')
        {
          g_free (names[i]);
          continue;
        }
      names[w++] = names[i];
      n_params++;
    }
  names[w] = NULL;
  g_autoptr (GPtrArray) ids = tw_graph_param_nodes (m->graph, (const char *const *) names, NULL);
  if (ids->len == 0)
    return;
  twb_graph_canvas_reveal_node (self->canvas, ids->pdata[0]);
  g_ptr_array_add (ids, NULL);
  self->profiler_selecting = TRUE;
  twb_document_select (self->doc, (const char *const *) ids->pdata, FALSE);
  self->profiler_selecting = FALSE;
  const char *what = tw_slice_arg (s, "what");
  const char *bytes = tw_slice_arg (s, "bytes");
  guint64 nb = bytes ? g_ascii_strtoull (bytes, NULL, 10) : 0;
  g_autofree char *size = nb ? g_format_size (nb) : NULL;
  g_autofree char *nodes = g_strjoinv (", ", (char **) ids->pdata);
  g_autofree char *msg = g_strdup_printf ("%s: %u parameter%s of %s%s%s%s", what ? what : s->name,
                                          n_params, n_params == 1 ? "" : "s", nodes,
                                          size ? " (" : "", size ? size : "", size ? ")" : "");
  twb_profiler_panel_set_status (panel (self), msg);
  g_autofree char *note = g_strdup_printf ("Selected on the canvas — %s", msg);
  twb_profiler_panel_set_slice_note (panel (self), note);
}

void
twb_window_profiler_selection_changed (TwbWindow *self)
{
  if (self->profiler_panel == NULL)
    return;
  g_auto (GStrv) sel = twb_document_get_selection (self->doc);
  twb_timeline_set_highlight_nodes (twb_profiler_panel_get_timeline (panel (self)),
                                    (const char *const *) sel);
}

static void
heat_changed (TwbProfilerPanel *p, TwbWindow *self)
{
  twb_window_update_tints (self);
}

/* ---- Setup ------------------------------------------------------------------------------ */

static const GActionEntry profiler_entries[] = {
  { "record", NULL, NULL, "false", act_record },
  { "open", act_open },
  { "open-file", act_open_file, "s" },
  { "open-files", act_open_files, "as" },
  { "export", act_export },
  { "export-to", act_export_to, "s" },
  { "close-trace", act_close_trace },
  { "show-trace", act_show_trace, "i" },
  { "compare", act_compare, "i" },
  { "zoom", act_zoom, "s" },
  { "zoom-all", act_zoom_all },
  { "select-range", act_select_range, "s" },
  { "select-slice", act_select_slice, "s" },
  { "search", act_search, "s" },
  { "page", act_page, "s" },
  { "heat", NULL, NULL, "true", act_heat },
  { "critical-path", NULL, NULL, "false", act_critical_path },
};

void
twb_window_profiler_init (TwbWindow *self)
{
  self->profiler_actions = g_simple_action_group_new ();
  g_action_map_add_action_entries (G_ACTION_MAP (self->profiler_actions), profiler_entries,
                                   G_N_ELEMENTS (profiler_entries), self);
  gtk_widget_insert_action_group (GTK_WIDGET (self), "profiler",
                                  G_ACTION_GROUP (self->profiler_actions));
  self->profiler_panel = twb_profiler_panel_new ();
  /* In a scrolled window, as the other tabs: the panel's natural height
   * (the timeline's lanes) must not take the editor's room. */
  GtkWidget *sw = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (sw), GTK_POLICY_AUTOMATIC,
                                  GTK_POLICY_AUTOMATIC);
  gtk_widget_set_vexpand (sw, TRUE);
  gtk_widget_set_vexpand (self->profiler_panel, TRUE);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (sw), self->profiler_panel);
  gtk_box_append (GTK_BOX (self->profiler_page), sw);
  g_signal_connect (self->profiler_panel, "nodes-activated", G_CALLBACK (nodes_activated), self);
  g_signal_connect (self->profiler_panel, "heat-changed", G_CALLBACK (heat_changed), self);
  /* After the panel's own handler (which shows the slice). */
  g_signal_connect (twb_profiler_panel_get_timeline (panel (self)), "slice-selected",
                    G_CALLBACK (slice_selected), self);
  update_actions (self);
}

void
twb_window_profiler_dispose (TwbWindow *self)
{
  g_clear_handle_id (&self->record_timer, g_source_remove);
  if (self->recorder)
    {
      tw_recorder_stop (self->recorder);
      g_clear_pointer (&self->recorder, tw_recorder_free);
    }
  if (self->profiler_panel)
    {
      g_signal_handlers_disconnect_by_data (self->profiler_panel, self);
      g_signal_handlers_disconnect_by_data (twb_profiler_panel_get_timeline (panel (self)), self);
    }
  self->profiler_panel = NULL;
  g_clear_object (&self->profiler_actions);
  g_clear_pointer (&self->record_mode, g_free);
}
