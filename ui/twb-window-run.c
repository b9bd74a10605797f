/* twb-window-run.c — training and debugging in the window: the run
 * controls, the "debugger" actions, the Training / Debugger / Compiled
 * tabs, the marks on the canvas, and weights in and out.
 *
 * The window computes nothing of training: a TwbRun (twb-run.h) drives a
 * tw_session on its worker thread and hands back copies; this file turns
 * the user's commands into session commands and the snapshots into views. */
#define G_LOG_DOMAIN "twb-window-run"

#include "ui/twb-window-private.h"
#include "ui/twb-compile-view.h"
#include "ui/twb-dashboard.h"
#include "ui/twb-debugger-panel.h"
#include "ui/twb-run-store.h"
#include "ui/twb-cluster-dialog.h"

#include <math.h>
#include <string.h>

/* The bottom panel's height when a run starts, so that the curves and the
 * debugger are readable (the user may drag it anywhere afterwards). */
#define TRAINING_PANEL_H 300

static void update_marks (TwbWindow *self);
static void update_run_actions (TwbWindow *self);

static void
dbg_enable (TwbWindow *self, const char *name, gboolean on)
{
  GAction *a = g_action_map_lookup_action (G_ACTION_MAP (self->debugger_actions), name);
  if (a)
    g_simple_action_set_enabled (G_SIMPLE_ACTION (a), on);
}

static tw_exec_mode
current_mode (TwbWindow *self)
{
  GAction *a = g_action_map_lookup_action (G_ACTION_MAP (self->debugger_actions), "mode");
  g_autoptr (GVariant) st = g_action_get_state (a);
  return g_strcmp0 (g_variant_get_string (st, NULL), "compiled") == 0 ? TW_MODE_COMPILED
                                                                       : TW_MODE_EAGER;
}

gboolean
twb_window_run_is_active (TwbWindow *self)
{
  return self->run && twb_run_is_active (self->run);
}

TwbRun *
twb_window_get_run (TwbWindow *self)
{
  return self->run;
}

/* ---- Breakpoints and freezing ---------------------------------------------------------- */

/* The node a spec names ("node=fc1:forward" → "fc1"), NULL for conditions. */
static char *
spec_node (const char *spec, guint *phases)
{
  if (!g_str_has_prefix (spec, "node="))
    return NULL;
  const char *id = spec + 5;
  const char *colon = strrchr (id, ':');
  guint ph = TWB_MARK_BREAK_FORWARD | TWB_MARK_BREAK_BACKWARD;
  size_t len = strlen (id);
  if (colon && strcmp (colon, ":forward") == 0)
    ph = TWB_MARK_BREAK_FORWARD, len = colon - id;
  else if (colon && strcmp (colon, ":backward") == 0)
    ph = TWB_MARK_BREAK_BACKWARD, len = colon - id;
  if (phases)
    *phases = ph;
  return g_strndup (id, len);
}

/* What the session gets: the user's breakpoints, and always NaN and Inf, so
 * a run that diverges pauses at the op that made the value (the node
 * highlighted, the reason in the tab) instead of failing. */
static char **
session_breakpoints (TwbWindow *self)
{
  GStrvBuilder *b = g_strv_builder_new ();
  for (guint i = 0; i < self->breakpoints->len; i++)
    g_strv_builder_add (b, g_ptr_array_index (self->breakpoints, i));
  g_strv_builder_add (b, "nan");
  g_strv_builder_add (b, "inf");
  char **v = g_strv_builder_end (b);
  g_strv_builder_unref (b);
  return v;
}

static void
breakpoints_changed (TwbWindow *self)
{
  g_ptr_array_add (self->breakpoints, NULL);
  twb_debugger_panel_set_breakpoints (TWB_DEBUGGER_PANEL (self->debugger_panel),
                                      (const char *const *) self->breakpoints->pdata);
  g_ptr_array_remove_index (self->breakpoints, self->breakpoints->len - 1);
  if (twb_window_run_is_active (self))
    {
      g_auto (GStrv) specs = session_breakpoints (self);
      g_autoptr (GError) error = NULL;
      if (!twb_run_set_breakpoints (self->run, (const char *const *) specs, &error))
        twb_window_show_toast (self, error->message);
    }
  update_marks (self);
}

static int
find_breakpoint (TwbWindow *self, const char *spec)
{
  for (guint i = 0; i < self->breakpoints->len; i++)
    if (strcmp (g_ptr_array_index (self->breakpoints, i), spec) == 0)
      return (int) i;
  return -1;
}

/* Drop every breakpoint on node id; TRUE if there was one. */
static gboolean
remove_node_breakpoints (TwbWindow *self, const char *id)
{
  gboolean any = FALSE;
  for (guint i = 0; i < self->breakpoints->len;)
    {
      g_autofree char *n = spec_node (g_ptr_array_index (self->breakpoints, i), NULL);
      if (n && strcmp (n, id) == 0)
        {
          g_ptr_array_remove_index (self->breakpoints, i);
          any = TRUE;
        }
      else
        i++;
    }
  return any;
}

gboolean
twb_window_add_breakpoint (TwbWindow *self, const char *spec, GError **error)
{
  if (!tw_session_check_breakpoint (spec, error))
    return FALSE;
  g_autofree char *node = spec_node (spec, NULL);
  if (node && tw_graph_find (twb_document_get_graph (self->doc), node) == NULL)
    {
      g_set_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_GRAPH,
                   "breakpoint %s: there is no node “%s”", spec, node);
      return FALSE;
    }
  if (node)
    remove_node_breakpoints (self, node);   /* one per node: the new phases replace the old */
  if (find_breakpoint (self, spec) < 0)
    g_ptr_array_add (self->breakpoints, g_strdup (spec));
  breakpoints_changed (self);
  return TRUE;
}

/* The nodes an action names: its parameter, or the selection when empty. */
static char **
target_nodes (TwbWindow *self, GVariant *p)
{
  const char *id = p ? g_variant_get_string (p, NULL) : "";
  if (id[0])
    {
      char *v[] = { (char *) id, NULL };
      return g_strdupv (v);
    }
  return twb_document_get_selection (self->doc);
}

static void
act_toggle_breakpoint (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  g_auto (GStrv) ids = target_nodes (self, p);
  if (ids == NULL || ids[0] == NULL)
    {
      twb_window_show_toast (self, "Select a node to set a breakpoint on it (or click the left end of its header)");
      return;
    }
  for (char **id = ids; *id; id++)
    {
      if (tw_graph_find (twb_document_get_graph (self->doc), *id) == NULL)
        {
          g_autofree char *msg = g_strdup_printf ("There is no node “%s” to break at", *id);
          twb_window_show_toast (self, msg);
          continue;
        }
      if (!remove_node_breakpoints (self, *id))
        g_ptr_array_add (self->breakpoints, g_strconcat ("node=", *id, NULL));
    }
  breakpoints_changed (self);
}

static void
act_add_breakpoint (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  g_autoptr (GError) error = NULL;
  if (!twb_window_add_breakpoint (self, g_variant_get_string (p, NULL), &error))
    twb_window_show_toast (self, error->message);
}

static void
act_remove_breakpoint (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  int i = find_breakpoint (self, g_variant_get_string (p, NULL));
  if (i >= 0)
    {
      g_ptr_array_remove_index (self->breakpoints, i);
      breakpoints_changed (self);
    }
}

static void
act_clear_breakpoints (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  g_ptr_array_set_size (self->breakpoints, 0);
  breakpoints_changed (self);
}

static gboolean
node_has_params (TwbWindow *self, const char *id)
{
  const tw_node *n = tw_graph_find (twb_document_get_graph (self->doc), id);
  return n && n->n_params > 0;
}

static void
act_toggle_freeze (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  g_auto (GStrv) ids = target_nodes (self, p);
  for (char **id = ids; id && *id; id++)
    {
      if (!node_has_params (self, *id))
        {
          g_autofree char *msg = g_strdup_printf ("“%s” has no parameters to freeze", *id);
          twb_window_show_toast (self, msg);
          continue;
        }
      gboolean frozen = !g_hash_table_contains (self->frozen, *id);
      if (frozen)
        g_hash_table_add (self->frozen, g_strdup (*id));
      else
        g_hash_table_remove (self->frozen, *id);
      if (twb_window_run_is_active (self) && !twb_run_is_external (self->run))
        {
          g_autoptr (GError) error = NULL;
          if (!tw_session_freeze (twb_run_get_session (self->run), *id, frozen, &error))
            twb_window_show_toast (self, error->message);
        }
    }
  update_marks (self);
}

static void
canvas_margin_clicked (TwbGraphCanvas *c, const char *id, TwbWindow *self)
{
  g_autoptr (GVariant) v = g_variant_ref_sink (g_variant_new_string (id));
  g_action_group_activate_action (G_ACTION_GROUP (self->debugger_actions), "toggle-breakpoint", v);
}

/* ---- The canvas: breakpoints, frozen nodes, where the run is, fused groups ------------ */

/* The session's reasons for a non-finite value: "NaN first produced by …",
 * "Inf first produced by …". */
static gboolean
reason_is_fault (const char *reason)
{
  return reason && (g_str_has_prefix (reason, "NaN ") || g_str_has_prefix (reason, "Inf "));
}

static void
update_marks (TwbWindow *self)
{
  g_autoptr (GHashTable) marks = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; i < self->breakpoints->len; i++)
    {
      guint ph = 0;
      char *n = spec_node (g_ptr_array_index (self->breakpoints, i), &ph);
      if (n == NULL)
        continue;
      ph |= GPOINTER_TO_UINT (g_hash_table_lookup (marks, n));
      g_hash_table_replace (marks, n, GUINT_TO_POINTER (ph));
    }
  GHashTableIter it;
  gpointer k;
  g_hash_table_iter_init (&it, self->frozen);
  while (g_hash_table_iter_next (&it, &k, NULL))
    {
      guint m = GPOINTER_TO_UINT (g_hash_table_lookup (marks, k)) | TWB_MARK_FROZEN;
      g_hash_table_replace (marks, g_strdup (k), GUINT_TO_POINTER (m));
    }
  const tw_snapshot *pause = self->run ? twb_run_get_pause (self->run) : NULL;
  if (pause && pause->nodes)
    {
      gboolean fault = reason_is_fault (pause->reason);
      for (char **n = pause->nodes; *n; n++)
        {
          guint m = GPOINTER_TO_UINT (g_hash_table_lookup (marks, *n));
          m |= fault ? TWB_MARK_FAULT : TWB_MARK_CURRENT;
          g_hash_table_replace (marks, g_strdup (*n), GUINT_TO_POINTER (m));
        }
    }
  twb_graph_canvas_set_marks (self->canvas, marks);
}

/* Fused groups tint their nodes while the Compiled tab shows, or in
 * compiled mode. */
void
twb_window_update_tints (TwbWindow *self)
{
  const char *panel = twb_window_get_panel (self);
  g_autoptr (GHashTable) heat = twb_window_profiler_tints (self);
  if (heat)
    {
      twb_graph_canvas_set_tints (self->canvas, heat);
      return;
    }
  gboolean want = g_strcmp0 (panel, "compiled") == 0 || current_mode (self) == TW_MODE_COMPILED;
  if (!want || self->compile_view == NULL)
    {
      twb_graph_canvas_set_tints (self->canvas, NULL);
      return;
    }
  if (self->compile_stale)
    {
      self->compile_stale = FALSE;
      twb_compile_view_set_model (TWB_COMPILE_VIEW (self->compile_view),
                                  twb_document_get_model (self->doc), NULL);
    }
  GHashTable *groups = twb_compile_view_node_groups (TWB_COMPILE_VIEW (self->compile_view));
  g_autoptr (GHashTable) tints = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  if (groups)
    {
      GHashTableIter it;
      gpointer k, v;
      g_hash_table_iter_init (&it, groups);
      while (g_hash_table_iter_next (&it, &k, &v))
        {
          GdkRGBA c;
          twb_compile_view_group_colour (GPOINTER_TO_UINT (v) - 1, &c);
          guint rgb = 0x1000000u | ((guint) (c.red * 255) << 16) | ((guint) (c.green * 255) << 8)
                      | (guint) (c.blue * 255);
          g_hash_table_insert (tints, g_strdup (k), GUINT_TO_POINTER (rgb));
        }
    }
  twb_graph_canvas_set_tints (self->canvas, tints);
}

/* Room for the curves, the debugger or the memory plan: the bottom panel
 * grows when it is small (the user may drag it anywhere afterwards). */
void
twb_window_grow_bottom_panel (TwbWindow *self)
{
  int h = gtk_widget_get_height (self->vpaned);
  /* At least TRAINING_PANEL_H, and 45 % of a tall window (the inspector's
   * pages and the class report want the height). */
  int want = MAX (TRAINING_PANEL_H, h * 45 / 100);
  /* The profiler's timeline and its tables want more. */
  if (g_strcmp0 (twb_window_get_panel (self), "profiler") == 0)
    want = MAX (TRAINING_PANEL_H, h * 62 / 100);
  if (h > 0 && h - gtk_paned_get_position (GTK_PANED (self->vpaned)) < want)
    {
      twb_graph_canvas_refit_on_resize (self->canvas);
      gtk_paned_set_position (GTK_PANED (self->vpaned), MAX (h - want, h / 3));
    }
}

/* Before any run: a bottom panel that shows its tabs' first lines (the
 * dashboard's "Not trained yet" and chart titles), 20 % of the height up
 * to TRAINING_PANEL_H, set once when the window first has a height. */
static void
initial_split (GtkPaned *paned, GParamSpec *p, TwbWindow *self)
{
  int h = gtk_widget_get_height (GTK_WIDGET (paned));
  if (h <= 0 || self->split_done)
    return;
  self->split_done = TRUE;
  int want = MIN (TRAINING_PANEL_H, h * 20 / 100);
  if (h - gtk_paned_get_position (paned) < want)
    gtk_paned_set_position (paned, h - want);
}

/* A fused group picked in the Compiled tab: its nodes selected on the canvas. */
static void
compile_group_activated (TwbCompileView *v, guint group, TwbWindow *self)
{
  const tw_compile_report *r = twb_compile_view_get_report (v);
  if (r == NULL || group >= r->groups->len)
    return;
  const tw_compile_group *g = &g_array_index (r->groups, tw_compile_group, group);
  /* Reveal the first (it selects it alone), then select them all. */
  if (g->nodes && g->nodes[0])
    twb_graph_canvas_reveal_node (self->canvas, g->nodes[0]);
  twb_document_select (self->doc, (const char *const *) g->nodes, FALSE);
}

static void
panel_changed (GObject *stack, GParamSpec *p, TwbWindow *self)
{
  twb_window_update_tints (self);
  twb_window_grow_bottom_panel (self);
}

/* ---- Runs ------------------------------------------------------------------------------ */

/* The runs follow the model, not its file: they are filed under the
 * document's identity, given on first need (a file from before identities
 * gets the key its runs were kept under, so they are still listed) and
 * written with the model on its next save. */
static char *
runs_dir (TwbWindow *self)
{
  if (twb_document_get_model_id (self->doc) == NULL)
    {
      g_autofree char *id = twb_run_store_new_model_id (twb_document_get_path (self->doc));
      twb_document_set_model_id (self->doc, id);
    }
  return twb_run_store_dir_for_id (twb_document_get_model_id (self->doc));
}

char *
twb_window_runs_dir_next_id (TwbWindow *self)
{
  g_autofree char *dir = runs_dir (self);
  return twb_run_store_next_id (dir);
}

static void
show_progress (TwbWindow *self)
{
  twb_dashboard_update (TWB_DASHBOARD (self->dashboard));
  const char *t = twb_dashboard_get_progress_text (TWB_DASHBOARD (self->dashboard));
  gtk_label_set_text (GTK_LABEL (self->status_run), t ? t : "");
}

/* The progress line at most 4 times a second while training runs (its text
 * changes relayout the window), at the next multiple of the interval on the
 * monotonic clock: the dashboard's charts redraw on the same instants
 * (twb_plot_set_redraw_interval), so a step's new points and its progress
 * share one frame instead of two.  Every state change shows it at once. */
#define PROGRESS_INTERVAL_MS 250

static gboolean
progress_due (gpointer data)
{
  TwbWindow *self = data;
  self->progress_source = 0;
  show_progress (self);
  return G_SOURCE_REMOVE;
}

static void
run_progress (TwbRun *run, TwbWindow *self)
{
  if (self->progress_source)
    return;
  gint64 period = PROGRESS_INTERVAL_MS * 1000, now = g_get_monotonic_time ();
  gint64 wait_us = period - now % period;
  self->progress_source = g_timeout_add ((guint) ((wait_us + 999) / 1000), progress_due, self);
}

static void
run_paused (TwbRun *run, TwbWindow *self)
{
  const tw_snapshot *pause = twb_run_get_pause (run);
  twb_debugger_panel_update (TWB_DEBUGGER_PANEL (self->debugger_panel));
  update_marks (self);
  update_run_actions (self);
  show_progress (self);
  if (pause == NULL)
    return;
  /* A breakpoint or a fault takes the user to where it happened; a plain
   * pause or a counted run (train-steps) stays where the user is. */
  gboolean stop_here = reason_is_fault (pause->reason)
                       || (pause->reason && g_str_has_prefix (pause->reason, "breakpoint")
                           && !g_str_has_prefix (pause->reason, "breakpoint step="));
  if (stop_here)
    twb_window_show_panel (self, "debugger");
  if (pause->nodes && pause->nodes[0])
    {
      int i = twb_graph_scene_find (twb_graph_canvas_get_scene (self->canvas), pause->nodes[0]);
      const TwbGraphScene *s = twb_graph_canvas_get_scene (self->canvas);
      if (i >= 0 && stop_here)
        {
          double x, y, w, h;
          const TwbSceneNode *n = &s->nodes[i];
          twb_graph_canvas_get_visible (self->canvas, &x, &y, &w, &h);
          if (n->x < x || n->y < y || n->x + n->w > x + w || n->y + n->h > y + h)
            twb_graph_canvas_center_on (self->canvas, n->x + n->w / 2, n->y + n->h / 2);
        }
    }
  if (reason_is_fault (pause->reason))
    {
      g_autofree char *msg = g_strdup_printf ("Training paused: %s", pause->message ? pause->message
                                                                                      : pause->reason);
      twb_window_show_toast (self, msg);
    }
}

static void
run_epoch (TwbRun *run, gint64 epoch, TwbWindow *self)
{
  twb_dashboard_update_classes (TWB_DASHBOARD (self->dashboard));
}

static void
run_notice (TwbRun *run, const char *text, TwbWindow *self)
{
  /* A compiled program's note follows the notice of what made it (a graph
   * edit): both stay, the note on a second line. */
  const char *showing = twb_window_get_toast (self);
  if (showing && strstr (text, " program, batch ") && !strstr (showing, text))
    {
      g_autofree char *both = g_strdup_printf ("%s\n%s", showing, text);
      twb_window_show_toast (self, both);
    }
  else
    twb_window_show_toast (self, text);
  if (strstr (text, "breakpoint") && strstr (text, "removed"))
    {
      /* The session dropped a breakpoint on a node the edit removed. */
      for (guint i = 0; i < self->breakpoints->len;)
        {
          g_autofree char *n = spec_node (g_ptr_array_index (self->breakpoints, i), NULL);
          if (n && tw_graph_find (twb_document_get_graph (self->doc), n) == NULL)
            g_ptr_array_remove_index (self->breakpoints, i);
          else
            i++;
        }
      breakpoints_changed (self);
    }
}

static void
run_graph_changed (TwbRun *run, gpointer change, TwbWindow *self)
{
  const tw_graph_change *c = change;
  guint kept = c->kept ? g_strv_length (c->kept) : 0;
  GString *s = g_string_new ("Applied the graph edit: ");
  if (c->reinitialised && c->reinitialised[0])
    {
      g_autofree char *list = g_strjoinv (", ", c->reinitialised);
      g_string_append_printf (s, "%s initialised again; ", list);
    }
  if (c->added && c->added[0])
    {
      g_autofree char *list = g_strjoinv (", ", c->added);
      g_string_append_printf (s, "%s added; ", list);
    }
  if (c->removed && c->removed[0])
    {
      g_autofree char *list = g_strjoinv (", ", c->removed);
      g_string_append_printf (s, "%s removed; ", list);
    }
  g_string_append_printf (s, "%u node%s kept %s weights", kept, kept == 1 ? "" : "s",
                          kept == 1 ? "its" : "their");
  twb_window_show_toast (self, s->str);
  g_string_free (s, TRUE);
  g_free (self->last_graph_notice);
  self->last_graph_notice = NULL;
}

static void
run_state_changed (TwbRun *run, TwbWindow *self)
{
  update_run_actions (self);
  update_marks (self);
  twb_debugger_panel_update (TWB_DEBUGGER_PANEL (self->debugger_panel));
  /* What the run prepares, or that it has begun. */
  show_progress (self);
}

static void
run_finished (TwbRun *run, TwbWindow *self)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *dir = runs_dir (self);
  if (!twb_run_store_save (dir, run, self->metrics, twb_document_get_model (self->doc), &error))
    g_message ("%s", error->message);
  twb_dashboard_reload_runs (TWB_DASHBOARD (self->dashboard));
  show_progress (self);
  const tw_snapshot *res = twb_run_get_result (run);
  g_autofree char *msg = NULL;
  if (twb_run_get_error (run))
    msg = g_strdup_printf ("Training failed: %s", twb_run_get_error (run));
  else if (res && res->state == TW_SESSION_STOPPED && res->step == 0)
    msg = g_strdup ("Training stopped before its first step");
  else if (res && res->state == TW_SESSION_STOPPED && twb_run_is_external (run))
    msg = g_strdup_printf ("Training stopped after %" G_GINT64_FORMAT " steps; its ranks have "
                           "ended", res->step);
  else if (res && res->state == TW_SESSION_STOPPED)
    msg = g_strdup_printf ("Training stopped after %" G_GINT64_FORMAT " steps; the weights are "
                           "those of the last finished step", res->step);
  else if (res && !isnan (res->test_accuracy))
    msg = g_strdup_printf ("Training finished: test accuracy %.2f %% (loss %.4f)",
                           res->test_accuracy * 100, res->test_loss);
  else if (res)
    msg = g_strdup_printf ("Training finished after %" G_GINT64_FORMAT " steps", res->step);
  if (msg)
    twb_window_show_toast (self, msg);
  update_run_actions (self);
  update_marks (self);
  twb_window_profiler_run_finished (self);
  if (self->close_after_stop)
    gtk_window_close (GTK_WINDOW (self));
}

/* The first of the model's errors in words, "node fc3: …" (more: "and 2
 * more"), or NULL when it has none.  Caller frees. */
static char *
first_issue (TwbWindow *self)
{
  const GArray *d = self->doc ? twb_document_get_diagnostics (self->doc) : NULL;
  if (d == NULL || d->len == 0)
    return NULL;
  const tw_diag *dg = &g_array_index (d, tw_diag, 0);
  g_autofree char *more = d->len > 1 ? g_strdup_printf (" (and %u more in Issues)", d->len - 1)
                                     : g_strdup ("");
  return dg->node_id ? g_strdup_printf ("node %s: %s%s", dg->node_id, dg->message, more)
                     : g_strdup_printf ("%s%s", dg->message, more);
}

/* The current run, or a new one from the document as it is now. */
static TwbRun *
ensure_run (TwbWindow *self, GError **error)
{
  if (twb_window_run_is_active (self))
    return self->run;
  g_autofree char *issue = first_issue (self);
  if (issue)
    {
      g_set_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_GRAPH,
                   "The model has errors: fix them before training. %s", issue);
      return NULL;
    }
  g_autofree char *dir = runs_dir (self);
  g_autofree char *id = twb_run_store_next_id (dir);
  g_auto (GStrv) bps = session_breakpoints (self);
  g_autofree const char **frozen = (const char **) g_hash_table_get_keys_as_array (self->frozen, NULL);
  TwbRunConfig cfg = {
    .mode = current_mode (self),
    .init_weights = self->init_weights,
    .run_id = id,
    .breakpoints = (const char *const *) bps,
    .frozen = frozen,
  };
  TwbRun *run = twb_run_new (twb_document_get_model (self->doc), &cfg, self->metrics, error);
  if (run == NULL)
    return NULL;
  twb_window_run_adopt (self, run);
  g_object_unref (run);
  return self->run;
}

void
twb_window_run_adopt (TwbWindow *self, TwbRun *run)
{
  g_object_ref (run);
  if (self->run)
    {
      g_signal_handlers_disconnect_by_data (self->run, self);
      g_clear_object (&self->run);
    }
  self->run = run;
  self->graph_pending = FALSE;
  const tw_recipe *r = &twb_document_get_model (self->doc)->recipe;
  self->applied_lr = r->optimizer.lr;
  self->applied_momentum = r->optimizer.momentum;
  self->applied_wd = r->optimizer.weight_decay;
  g_signal_connect (run, "progress", G_CALLBACK (run_progress), self);
  g_signal_connect (run, "paused", G_CALLBACK (run_paused), self);
  g_signal_connect (run, "epoch", G_CALLBACK (run_epoch), self);
  g_signal_connect (run, "notice", G_CALLBACK (run_notice), self);
  g_signal_connect (run, "graph-changed", G_CALLBACK (run_graph_changed), self);
  g_signal_connect (run, "state-changed", G_CALLBACK (run_state_changed), self);
  g_signal_connect (run, "finished", G_CALLBACK (run_finished), self);
  twb_dashboard_set_run (TWB_DASHBOARD (self->dashboard), run);
  twb_debugger_panel_set_run (TWB_DEBUGGER_PANEL (self->debugger_panel), run);
  twb_debugger_panel_set_hyper (TWB_DEBUGGER_PANEL (self->debugger_panel), r->optimizer.lr,
                                r->optimizer.momentum, r->optimizer.weight_decay);
  twb_window_grow_bottom_panel (self);
  if (!twb_run_is_external (run))
    twb_window_profiler_run_created (self, run);
}

/* Before the worker goes on: apply the edits made while it was paused. */
static gboolean
apply_pending (TwbWindow *self, GError **error)
{
  if (!self->graph_pending || twb_run_get_state (self->run) != TW_SESSION_PAUSED)
    return TRUE;
  g_autofree char *issue = first_issue (self);
  if (issue)
    {
      g_set_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_GRAPH,
                   "Continue is blocked by %s: fix it, or undo (Ctrl+Z), to continue", issue);
      return FALSE;
    }
  if (!tw_session_replace_graph (twb_run_get_session (self->run),
                                 twb_document_get_graph (self->doc), error))
    return FALSE;
  self->graph_pending = FALSE;
  return TRUE;
}

/* Why the stepping commands are greyed out with the cluster device. */
#define CLUSTER_NO_DEBUGGER \
  "The debugger steps one process's training: a run on several processes (Devices: Cluster) " \
  "has no debugger; choose CPU in Devices to step"

typedef gboolean (*RunCommand) (TwbRun *r, GError **error);

static void
go_with (TwbWindow *self, RunCommand cmd)
{
  g_autoptr (GError) error = NULL;
  if (cmd == twb_run_run && twb_window_cluster_selected (self) && !twb_window_run_is_active (self))
    {
      if (!twb_window_cluster_start (self, &error))
        twb_window_show_toast (self, error->message);
      return;
    }
  if (twb_window_cluster_selected (self) || twb_window_cluster_running (self))
    {
      twb_window_show_toast (self, CLUSTER_NO_DEBUGGER);
      return;
    }
  TwbRun *run = ensure_run (self, &error);
  if (run && apply_pending (self, &error) && cmd (run, &error))
    {
      update_run_actions (self);
      return;
    }
  if (error)
    twb_window_show_toast (self, error->message);
}

static void
act_run (GSimpleAction *a, GVariant *p, gpointer data)
{
  go_with (data, twb_run_run);
}

static void
act_pause (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  g_autoptr (GError) error = NULL;
  if (twb_window_cluster_running (self))
    return;
  if (self->run && !twb_run_pause (self->run, &error))
    twb_window_show_toast (self, error->message);
}

static void
act_stop (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  g_autoptr (GError) error = NULL;
  if (twb_window_cluster_running (self))
    {
      twb_window_cluster_stop (self);
      return;
    }
  if (twb_window_run_is_active (self) && !twb_run_stop (self->run, &error))
    twb_window_show_toast (self, error->message);
}

static void
act_step_op (GSimpleAction *a, GVariant *p, gpointer data)
{
  go_with (data, twb_run_step_op);
}

static void
act_step_layer (GSimpleAction *a, GVariant *p, gpointer data)
{
  go_with (data, twb_run_step_layer);
}

static void
act_step_iteration (GSimpleAction *a, GVariant *p, gpointer data)
{
  go_with (data, twb_run_step_iteration);
}

static void
act_train_steps (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  g_autoptr (GError) error = NULL;
  if (twb_window_cluster_selected (self) || twb_window_cluster_running (self))
    {
      twb_window_show_toast (self, CLUSTER_NO_DEBUGGER);
      return;
    }
  TwbRun *run = ensure_run (self, &error);
  if (run && apply_pending (self, &error)
      && twb_run_run_steps (run, (int64_t) g_variant_get_int32 (p), &error))
    {
      update_run_actions (self);
      return;
    }
  if (error)
    twb_window_show_toast (self, error->message);
}

static void
act_mode (GSimpleAction *a, GVariant *v, gpointer data)
{
  TwbWindow *self = data;
  const char *m = g_variant_get_string (v, NULL);
  if (strcmp (m, "eager") != 0 && strcmp (m, "compiled") != 0)
    return;
  g_simple_action_set_state (a, v);
  if (twb_window_run_is_active (self) && !twb_run_is_external (self->run))
    {
      g_autoptr (GError) error = NULL;
      /* From the next step on, mid-run included: the parameters and the
       * optimizer state carry over, so the curves go on unbroken. */
      if (!tw_session_set_mode (twb_run_get_session (self->run),
                                strcmp (m, "compiled") == 0 ? TW_MODE_COMPILED : TW_MODE_EAGER,
                                &error))
        twb_window_show_toast (self, error->message);
      else
        {
          g_autofree char *msg = g_strdup_printf ("%s execution from the next step on",
                                                  strcmp (m, "compiled") == 0 ? "Compiled"
                                                                              : "Eager");
          twb_window_show_toast (self, msg);
        }
    }
  twb_window_update_tints (self);
}

static void
act_device (GSimpleAction *a, GVariant *v, gpointer data)
{
  TwbWindow *self = data;
  const char *dev = g_variant_get_string (v, NULL);
  if (strcmp (dev, "cpu") == 0)
    {
      g_simple_action_set_state (a, v);
      twb_window_cluster_use_cpu (self);
    }
  else if (strcmp (dev, "cluster") == 0 || strcmp (dev, "simulated") == 0)
    /* The state follows the dialog's Use. */
    twb_window_cluster_choose (self, strcmp (dev, "simulated") == 0);
}

typedef gboolean (*SetHyper) (tw_session *s, double v, GError **error);

static void
set_hyper (TwbWindow *self, SetHyper fn, double v, double *applied, const char *what)
{
  if (!twb_window_run_is_active (self))
    {
      g_autofree char *msg = g_strdup_printf ("No run to change the %s of: set it in the recipe "
                                              "(Recipe in the inspector) for the next run", what);
      twb_window_show_toast (self, msg);
      return;
    }
  if (twb_run_is_external (self->run))
    {
      g_autofree char *msg = g_strdup_printf ("The %s of a run on several processes is set "
                                              "when it starts: it applies to the next run", what);
      twb_window_show_toast (self, msg);
      return;
    }
  g_autoptr (GError) error = NULL;
  if (!fn (twb_run_get_session (self->run), v, &error))
    twb_window_show_toast (self, error->message);
  else
    *applied = v;
}

static void
act_set_lr (GSimpleAction *a, GVariant *v, gpointer data)
{
  TwbWindow *self = data;
  set_hyper (self, tw_session_set_lr, g_variant_get_double (v), &self->applied_lr,
             "learning rate");
}

static void
act_set_momentum (GSimpleAction *a, GVariant *v, gpointer data)
{
  TwbWindow *self = data;
  set_hyper (self, tw_session_set_momentum, g_variant_get_double (v), &self->applied_momentum,
             "momentum");
}

static void
act_set_weight_decay (GSimpleAction *a, GVariant *v, gpointer data)
{
  TwbWindow *self = data;
  set_hyper (self, tw_session_set_weight_decay, g_variant_get_double (v), &self->applied_wd,
             "weight decay");
}

static void
act_inspect (GSimpleAction *a, GVariant *v, gpointer data)
{
  TwbWindow *self = data;
  const char *name = g_variant_get_string (v, NULL);
  twb_window_show_panel (self, "debugger");
  if (twb_debugger_panel_select_tensor (TWB_DEBUGGER_PANEL (self->debugger_panel), name))
    return;
  /* Not among the pause's tensors: ask the session for it (a parameter,
   * its gradient or optimizer state, an eager node's output). */
  g_autoptr (GError) error = NULL;
  if (self->run && twb_run_is_external (self->run))
    {
      twb_window_show_toast (self, "A run on several processes keeps its tensors in its ranks: "
                                   "train on the CPU to inspect them");
      return;
    }
  if (self->run == NULL || !tw_session_request (twb_run_get_session (self->run), name, &error))
    twb_window_show_toast (self, error ? error->message : "Start a run to inspect its tensors");
}

static void
act_inspector_page (GSimpleAction *a, GVariant *v, gpointer data)
{
  TwbWindow *self = data;
  twb_tensor_view_show_page (
    twb_debugger_panel_get_tensor_view (TWB_DEBUGGER_PANEL (self->debugger_panel)),
    g_variant_get_string (v, NULL));
}

/* ---- Weights --------------------------------------------------------------------------- */

gboolean
twb_window_save_weights_to (TwbWindow *self, const char *path, GError **error)
{
  if (self->run == NULL)
    {
      g_set_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_STATE,
                   "No trained weights yet: run training first (F5)");
      return FALSE;
    }
  if (twb_run_is_external (self->run))
    {
      g_set_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_STATE,
                   "The weights of a run on several processes stay in its ranks: train on the "
                   "CPU to save them");
      return FALSE;
    }
  if (twb_run_get_state (self->run) == TW_SESSION_RUNNING)
    {
      g_set_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_STATE,
                   "Training is running: pause it (or let it finish) to save its weights");
      return FALSE;
    }
  return tw_session_save_weights (twb_run_get_session (self->run), path, error);
}

gboolean
twb_window_load_weights_from (TwbWindow *self, const char *path, GError **error)
{
  /* Checked now against the model as drawn: a file that does not fit is
   * refused here, not when the run starts. */
  g_autoptr (tw_trainer) tr = tw_trainer_new (twb_document_get_model (self->doc), error);
  if (tr == NULL)
    return FALSE;
  tw_state_dict_report rep = { 0 };
  gboolean ok = tw_params_load_state_dict_file (tw_trainer_params (tr), path, FALSE, &rep, error);
  guint missing = rep.missing ? g_strv_length (rep.missing) : 0;
  tw_state_dict_report_clear (&rep);
  if (!ok)
    return FALSE;
  g_free (self->init_weights);
  self->init_weights = g_strdup (path);
  g_autofree char *base = g_path_get_basename (path);
  g_autofree char *msg = missing
    ? g_strdup_printf ("Runs start from %s (%u parameters not in the file keep their "
                       "initialisation)", base, missing)
    : g_strdup_printf ("Runs start from the weights in %s", base);
  twb_window_show_toast (self, msg);
  return TRUE;
}

static GtkFileFilter *
safetensors_filter (void)
{
  GtkFileFilter *f = gtk_file_filter_new ();
  gtk_file_filter_set_name (f, "Weights (*.safetensors)");
  gtk_file_filter_add_pattern (f, "*.safetensors");
  return f;
}

static void
weights_response (GtkNativeDialog *d, int response, TwbWindow *self)
{
  gboolean save = GPOINTER_TO_INT (g_object_get_data (G_OBJECT (d), "save"));
  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr (GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (d));
      g_autofree char *path = g_file_get_path (file);
      g_autoptr (GError) error = NULL;
      gboolean ok = save ? twb_window_save_weights_to (self, path, &error)
                         : twb_window_load_weights_from (self, path, &error);
      if (!ok)
        twb_window_show_toast (self, error->message);
      else if (save)
        {
          g_autofree char *msg = g_strdup_printf ("Saved the weights to %s", path);
          twb_window_show_toast (self, msg);
        }
    }
  g_object_unref (d);
}

static void
weights_dialog (TwbWindow *self, gboolean save)
{
  GtkFileChooserNative *d = gtk_file_chooser_native_new (
    save ? "Save Weights" : "Load Weights", GTK_WINDOW (self),
    save ? GTK_FILE_CHOOSER_ACTION_SAVE : GTK_FILE_CHOOSER_ACTION_OPEN, save ? "_Save" : "_Open",
    "_Cancel");
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (d), safetensors_filter ());
  if (save)
    {
      /* Beside the model, named after it. */
      g_autofree char *title = twb_document_get_title (self->doc);
      char *dot = strrchr (title, '.');
      if (dot)
        *dot = '\0';
      g_autofree char *name = g_strconcat (title, ".safetensors", NULL);
      gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (d), name);
    }
  const char *path = twb_document_get_path (self->doc);
  if (path)
    {
      g_autofree char *dir = g_path_get_dirname (path);
      g_autoptr (GFile) f = g_file_new_for_path (dir);
      gtk_file_chooser_set_current_folder (GTK_FILE_CHOOSER (d), f, NULL);
    }
  g_object_set_data (G_OBJECT (d), "save", GINT_TO_POINTER (save));
  g_signal_connect (d, "response", G_CALLBACK (weights_response), self);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (d));
}

static void
act_save_weights (GSimpleAction *a, GVariant *p, gpointer data)
{
  weights_dialog (data, TRUE);
}

static void
act_load_weights (GSimpleAction *a, GVariant *p, gpointer data)
{
  weights_dialog (data, FALSE);
}

static void
act_weights_to (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  gboolean save = strcmp (g_action_get_name (G_ACTION (a)), "save-weights-to") == 0;
  g_autoptr (GError) error = NULL;
  const char *path = g_variant_get_string (p, NULL);
  if (!(save ? twb_window_save_weights_to (self, path, &error)
             : twb_window_load_weights_from (self, path, &error)))
    twb_window_show_toast (self, error->message);
}

static void
act_export_curves (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  g_autoptr (GError) error = NULL;
  const char *path = g_variant_get_string (p, NULL);
  if (!twb_dashboard_export (TWB_DASHBOARD (self->dashboard), path, &error))
    twb_window_show_toast (self, error->message);
}

/* ---- Actions and their state ----------------------------------------------------------- */

static void
update_run_actions (TwbWindow *self)
{
  if (self->debugger_actions == NULL)
    return;
  tw_session_state st = self->run ? twb_run_get_state (self->run) : TW_SESSION_IDLE;
  gboolean active = twb_window_run_is_active (self);
  gboolean running = active && st == TW_SESSION_RUNNING;
  gboolean paused = active && st == TW_SESSION_PAUSED;
  g_autofree char *issue = first_issue (self);
  gboolean can_go = !running && issue == NULL;
  /* Paused with an edit that does not infer: Continue greys out, and says
   * which node holds it, once when that happens and in its tooltip. */
  gboolean blocked = paused && issue != NULL;
  g_autofree char *why = blocked ? g_strdup_printf ("Continue is blocked by %s: fix it, or undo "
                                                    "(Ctrl+Z), to continue",
                                                    issue)
                                 : NULL;
  if (blocked && g_strcmp0 (why, self->blocked_notice) != 0)
    {
      /* After what the same edit said (a breakpoint on a deleted node), on
       * a second line. */
      const char *showing = twb_window_get_toast (self);
      g_autofree char *both = showing && !strstr (showing, why)
                                ? g_strdup_printf ("%s\n%s", showing, why)
                                : NULL;
      twb_window_show_toast (self, both ? both : why);
    }
  g_free (self->blocked_notice);
  self->blocked_notice = g_steal_pointer (&why);
  /* Several processes: Run and Stop only; the debugger is one process's. */
  gboolean cluster = twb_window_cluster_selected (self) || twb_window_cluster_running (self);
  gboolean external = self->run && twb_run_is_external (self->run);
  dbg_enable (self, "run", can_go);
  dbg_enable (self, "pause", running && !external);
  dbg_enable (self, "stop", active);
  dbg_enable (self, "step-op", can_go && !cluster);
  dbg_enable (self, "step-layer", can_go && !cluster);
  dbg_enable (self, "step-iteration", can_go && !cluster);
  GAction *tsa = g_action_map_lookup_action (G_ACTION_MAP (self), "train-steps");
  if (tsa)
    g_simple_action_set_enabled (G_SIMPLE_ACTION (tsa), !cluster);
  static const char *const step_tips[] = { "Step one op (F11)", "Step over a layer (F10)",
                                           "Step one iteration (Ctrl+F10)" };
  int k = 0;
  for (GtkWidget *b = self->step_buttons ? gtk_widget_get_first_child (self->step_buttons) : NULL;
       b && k < 3; b = gtk_widget_get_next_sibling (b), k++)
    gtk_widget_set_tooltip_text (b, cluster ? CLUSTER_NO_DEBUGGER : step_tips[k]);
  GAction *sw = g_action_map_lookup_action (G_ACTION_MAP (self), "save-weights");
  if (sw)
    g_simple_action_set_enabled (G_SIMPLE_ACTION (sw),
                                 self->run != NULL && !running && !external);
  gtk_widget_set_tooltip_text (self->run_button, self->blocked_notice ? self->blocked_notice
                                                 : paused             ? "Continue (F5)"
                                                                      : "Run (F5)");
  gtk_button_set_icon_name (GTK_BUTTON (self->run_button), "media-playback-start-symbolic");
  gtk_accessible_update_property (GTK_ACCESSIBLE (self->run_button), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  paused ? "Continue" : "Run", -1);
}

void
twb_window_run_update_actions (TwbWindow *self)
{
  update_run_actions (self);
}

/* Breakpoints and freezes on nodes the edit removed (or renamed) go, with
 * a notice naming them. */
static void
drop_missing_nodes (TwbWindow *self)
{
  tw_graph *g = twb_document_get_graph (self->doc);
  g_autoptr (GString) gone = g_string_new (NULL);
  for (guint i = 0; i < self->breakpoints->len;)
    {
      const char *spec = g_ptr_array_index (self->breakpoints, i);
      g_autofree char *n = spec_node (spec, NULL);
      if (n && tw_graph_find (g, n) == NULL)
        {
          g_string_append_printf (gone, "%s%s", gone->len ? ", " : "", spec);
          g_ptr_array_remove_index (self->breakpoints, i);
        }
      else
        i++;
    }
  g_autofree const char **frozen = (const char **) g_hash_table_get_keys_as_array (self->frozen, NULL);
  g_autoptr (GString) thawed = g_string_new (NULL);
  for (const char **f = frozen; f && *f; f++)
    if (tw_graph_find (g, *f) == NULL)
      {
        g_string_append_printf (thawed, "%s%s", thawed->len ? ", " : "", *f);
        g_hash_table_remove (self->frozen, *f);
      }
  if (gone->len == 0 && thawed->len == 0)
    return;
  g_autofree char *msg = g_strdup_printf ("%s%s%s%s%s: the node is gone", gone->len ? "Breakpoint " : "",
                                          gone->str, gone->len && thawed->len ? "; " : "",
                                          thawed->len ? "no longer frozen: " : "", thawed->str);
  twb_window_show_toast (self, msg);
  breakpoints_changed (self);
}

void
twb_window_run_doc_changed (TwbWindow *self, guint flags)
{
  if (flags & (TWB_CHANGE_STRUCTURE | TWB_CHANGE_ATTRS))
    drop_missing_nodes (self);
  if (flags & (TWB_CHANGE_STRUCTURE | TWB_CHANGE_ATTRS))
    {
      self->compile_stale = TRUE;
      if (twb_window_run_is_active (self))
        {
          self->graph_pending = TRUE;
          if (twb_run_get_state (self->run) == TW_SESSION_RUNNING && self->last_graph_notice == NULL)
            {
              self->last_graph_notice = g_strdup ("Graph edits apply when you pause and continue");
              twb_window_show_toast (self, self->last_graph_notice);
            }
        }
      twb_window_update_tints (self);
    }
  if ((flags & TWB_CHANGE_RECIPE) && twb_window_run_is_active (self))
    {
      /* The recipe's hyper-parameters apply to the live run from the next step. */
      const tw_optimizer_config *o = &twb_document_get_model (self->doc)->recipe.optimizer;
      if (o->lr != self->applied_lr)
        set_hyper (self, tw_session_set_lr, o->lr, &self->applied_lr, "learning rate");
      if (o->momentum != self->applied_momentum)
        set_hyper (self, tw_session_set_momentum, o->momentum, &self->applied_momentum,
                   "momentum");
      if (o->weight_decay != self->applied_wd)
        set_hyper (self, tw_session_set_weight_decay, o->weight_decay, &self->applied_wd,
                   "weight decay");
    }
  if (flags & (TWB_CHANGE_STRUCTURE | TWB_CHANGE_SHAPES | TWB_CHANGE_ATTRS))
    update_run_actions (self);
  if (flags & TWB_CHANGE_FILE)
    {
      g_autofree char *dir = runs_dir (self);
      twb_dashboard_set_runs_dir (TWB_DASHBOARD (self->dashboard), dir);
    }
}

static const GActionEntry debugger_entries[] = {
  { "run", act_run },
  { "pause", act_pause },
  { "stop", act_stop },
  { "step-op", act_step_op },
  { "step-layer", act_step_layer },
  { "step-iteration", act_step_iteration },
  { "toggle-breakpoint", act_toggle_breakpoint, "s" },
  { "add-breakpoint", act_add_breakpoint, "s" },
  { "remove-breakpoint", act_remove_breakpoint, "s" },
  { "clear-breakpoints", act_clear_breakpoints },
  { "toggle-freeze", act_toggle_freeze, "s" },
  { "mode", NULL, "s", "'eager'", act_mode },
  { "device", NULL, "s", "'cpu'", act_device },
  { "set-lr", act_set_lr, "d" },
  { "set-momentum", act_set_momentum, "d" },
  { "set-weight-decay", act_set_weight_decay, "d" },
  { "inspect", act_inspect, "s" },
  { "inspector-page", act_inspector_page, "s" },
  { "device-unavailable", NULL },
};

static const GActionEntry win_run_entries[] = {
  { "train-steps", act_train_steps, "i" },
  { "save-weights", act_save_weights },
  { "load-weights", act_load_weights },
  { "save-weights-to", act_weights_to, "s" },
  { "load-weights-to", act_weights_to, "s" },
  { "export-curves", act_export_curves, "s" },
};

static GtkWidget *
tool_button (const char *icon, const char *action, const char *tip, const char *label)
{
  GtkWidget *b = gtk_button_new_from_icon_name (icon);
  gtk_actionable_set_detailed_action_name (GTK_ACTIONABLE (b), action);
  gtk_widget_set_tooltip_text (b, tip);
  gtk_accessible_update_property (GTK_ACCESSIBLE (b), GTK_ACCESSIBLE_PROPERTY_LABEL, label, -1);
  return b;
}

static GtkWidget *
mode_toggle (const char *label, const char *target, const char *tip, GtkWidget *group)
{
  GtkWidget *t = gtk_toggle_button_new_with_label (label);
  gtk_actionable_set_detailed_action_name (GTK_ACTIONABLE (t), target);
  gtk_widget_set_tooltip_text (t, tip);
  if (group)
    gtk_toggle_button_set_group (GTK_TOGGLE_BUTTON (t), GTK_TOGGLE_BUTTON (group));
  return t;
}

static void
build_controls (TwbWindow *self)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 0);
  gtk_widget_add_css_class (box, "linked");
  self->run_button = tool_button ("media-playback-start-symbolic", "debugger.run", "Run (F5)", "Run");
  gtk_box_append (GTK_BOX (box), self->run_button);
  gtk_box_append (GTK_BOX (box), tool_button ("media-playback-pause-symbolic", "debugger.pause",
                                              "Pause", "Pause"));
  gtk_box_append (GTK_BOX (box), tool_button ("media-playback-stop-symbolic", "debugger.stop",
                                              "Stop (Shift+F5)", "Stop"));
  gtk_box_append (GTK_BOX (self->run_box), box);

  GtkWidget *steps = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 0);
  gtk_widget_add_css_class (steps, "linked");
  self->step_buttons = steps;
  gtk_box_append (GTK_BOX (steps), tool_button ("go-next-symbolic", "debugger.step-op",
                                                "Step one op (F11)", "Step op"));
  gtk_box_append (GTK_BOX (steps), tool_button ("go-last-symbolic", "debugger.step-layer",
                                                "Step over a layer (F10)", "Step layer"));
  gtk_box_append (GTK_BOX (steps), tool_button ("media-skip-forward-symbolic",
                                                "debugger.step-iteration",
                                                "Step one iteration (Ctrl+F10)", "Step iteration"));
  gtk_box_append (GTK_BOX (self->run_box), steps);

  GtkWidget *modes = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 0);
  gtk_widget_add_css_class (modes, "linked");
  GtkWidget *eager = mode_toggle ("Eager", "debugger.mode::eager",
                                  "Eager: op by op, any graph change at once", NULL);
  gtk_box_append (GTK_BOX (modes), eager);
  gtk_box_append (GTK_BOX (modes),
                  mode_toggle ("Compiled", "debugger.mode::compiled",
                               "Compiled: one fused, planned program (from the next step)", eager));
  gtk_box_append (GTK_BOX (self->run_box), modes);

  /* Devices: the CPU, and MPI ranks on this machine (twb-window-cluster.c);
   * CUDA GPUs when the engine has them, listed disabled with the reason
   * until then. */
  g_autoptr (GMenu) devices = g_menu_new ();
  int nt = twb_run_default_threads ();
  g_autofree char *cpu = g_strdup_printf ("CPU (%d thread%s)", nt, nt == 1 ? "" : "s");
  g_autoptr (GMenuItem) c = g_menu_item_new (cpu, "debugger.device::cpu");
  g_menu_append_item (devices, c);
  g_menu_append (devices, "CUDA GPU — not available in this build", "debugger.device-unavailable");
  if (twb_window_cluster_unavailable (self))
    g_menu_append (devices, "Cluster (MPI ranks) — mpirun not found (install Open MPI)",
                   "debugger.device-unavailable");
  else
    g_menu_append (devices, "Cluster (MPI ranks)…", "debugger.device::cluster");
  g_menu_append (devices, "Simulated cluster…", "debugger.device::simulated");
  GtkWidget *dev = gtk_menu_button_new ();
  self->device_button = dev;
  gtk_menu_button_set_label (GTK_MENU_BUTTON (dev), "CPU");
  gtk_menu_button_set_menu_model (GTK_MENU_BUTTON (dev), G_MENU_MODEL (devices));
  gtk_widget_set_tooltip_text (dev, "Device to train on");
  gtk_box_append (GTK_BOX (self->run_box), dev);
}

/* A tab's content scrolls rather than forcing its height on the window:
 * the editor keeps its room until a run asks for more (ensure_run). */
static void
add_page (GtkWidget *page, GtkWidget *child)
{
  GtkWidget *sw = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (sw), GTK_POLICY_AUTOMATIC,
                                  GTK_POLICY_AUTOMATIC);
  gtk_widget_set_vexpand (sw, TRUE);
  gtk_widget_set_vexpand (child, TRUE);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (sw), child);
  gtk_box_append (GTK_BOX (page), sw);
}

static void
build_panels (TwbWindow *self)
{
  self->dashboard = twb_dashboard_new (self->metrics);
  add_page (self->training_page, self->dashboard);
  self->debugger_panel = twb_debugger_panel_new ();
  add_page (self->debugger_page, self->debugger_panel);
  self->compile_view = twb_compile_view_new ();
  add_page (self->compiled_page, self->compile_view);
  g_signal_connect (self->compile_view, "group-activated", G_CALLBACK (compile_group_activated),
                    self);
  self->compile_stale = TRUE;
  g_signal_connect (self->panel_stack, "notify::visible-child-name", G_CALLBACK (panel_changed),
                    self);
  g_signal_connect (self->vpaned, "notify::max-position", G_CALLBACK (initial_split), self);
}

void
twb_window_run_init (TwbWindow *self)
{
  self->metrics = twb_metrics_new ();
  self->breakpoints = g_ptr_array_new_with_free_func (g_free);
  self->frozen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  self->debugger_actions = g_simple_action_group_new ();
  g_action_map_add_action_entries (G_ACTION_MAP (self->debugger_actions), debugger_entries,
                                   G_N_ELEMENTS (debugger_entries), self);
  dbg_enable (self, "device-unavailable", FALSE);
  gtk_widget_insert_action_group (GTK_WIDGET (self), "debugger",
                                  G_ACTION_GROUP (self->debugger_actions));
  g_action_map_add_action_entries (G_ACTION_MAP (self), win_run_entries,
                                   G_N_ELEMENTS (win_run_entries), self);
  twb_window_cluster_init (self);
  build_controls (self);
  build_panels (self);
  g_signal_connect (self->canvas, "margin-clicked", G_CALLBACK (canvas_margin_clicked), self);
  update_run_actions (self);
}

void
twb_window_run_dispose (TwbWindow *self)
{
  g_clear_handle_id (&self->progress_source, g_source_remove);
  twb_window_cluster_dispose (self);
  if (self->run)
    {
      g_signal_handlers_disconnect_by_data (self->run, self);
      /* The run's dispose stops the worker and joins its thread. */
      g_clear_object (&self->run);
    }
  g_clear_object (&self->debugger_actions);
  g_clear_object (&self->metrics);
  g_clear_pointer (&self->breakpoints, g_ptr_array_unref);
  g_clear_pointer (&self->frozen, g_hash_table_unref);
  g_clear_pointer (&self->init_weights, g_free);
  g_clear_pointer (&self->last_graph_notice, g_free);
  g_clear_pointer (&self->blocked_notice, g_free);
}

/* ---- Closing while training ------------------------------------------------------------ */

static void
stop_response (GtkDialog *d, int response, TwbWindow *self)
{
  gtk_window_set_transient_for (GTK_WINDOW (d), NULL);
  gtk_window_destroy (GTK_WINDOW (d));
  if (response != GTK_RESPONSE_ACCEPT || !twb_window_run_is_active (self))
    return;
  g_autoptr (GError) error = NULL;
  self->close_after_stop = TRUE;
  if (twb_window_cluster_running (self))
    {
      twb_window_cluster_stop (self);
      return;
    }
  /* The worker stops at its next op (finishing a step's updates first);
   * "finished" then closes the window. */
  if (!twb_run_stop (self->run, &error))
    {
      self->close_after_stop = FALSE;
      twb_window_show_toast (self, error->message);
    }
}

gboolean
twb_window_run_close_request (TwbWindow *self)
{
  if (!twb_window_run_is_active (self) || self->close_after_stop)
    return FALSE;
  G_GNUC_BEGIN_IGNORE_DEPRECATIONS
  GtkWidget *d = gtk_message_dialog_new (GTK_WINDOW (self),
                                         GTK_DIALOG_MODAL | GTK_DIALOG_DESTROY_WITH_PARENT,
                                         GTK_MESSAGE_QUESTION, GTK_BUTTONS_NONE,
                                         "Stop training and close?");
  gtk_message_dialog_format_secondary_text (
    GTK_MESSAGE_DIALOG (d), "The run stops after its current step; its curves are kept with "
                            "the model's runs. Weights not saved with Save Weights are lost.");
  gtk_dialog_add_buttons (GTK_DIALOG (d), "_Cancel", GTK_RESPONSE_CANCEL, "_Stop and Close",
                          GTK_RESPONSE_ACCEPT, NULL);
  gtk_dialog_set_default_response (GTK_DIALOG (d), GTK_RESPONSE_CANCEL);
  G_GNUC_END_IGNORE_DEPRECATIONS
  g_signal_connect (d, "response", G_CALLBACK (stop_response), self);
  gtk_window_present (GTK_WINDOW (d));
  return TRUE;
}

void
twb_window_stop_run_now (TwbWindow *self)
{
  /* The views let go of the run too, so this is its last reference: its
   * dispose stops the worker and joins it now. */
  twb_dashboard_set_run (TWB_DASHBOARD (self->dashboard), NULL);
  twb_debugger_panel_set_run (TWB_DEBUGGER_PANEL (self->debugger_panel), NULL);
  if (self->run)
    {
      g_signal_handlers_disconnect_by_data (self->run, self);
      g_clear_object (&self->run);
    }
}
