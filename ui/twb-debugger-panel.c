/* twb-debugger-panel.c — the Debugger tab. */
#define G_LOG_DOMAIN "twb-debugger-panel"

#include "ui/twb-debugger-panel.h"
#include "ui/twb-focus.h"

#include <math.h>
#include <string.h>

struct _TwbDebuggerPanel
{
  GtkWidget parent_instance;

  TwbRun *run;
  GtkWidget *box;
  GtkWidget *bp_list, *cond_kind, *cond_value;
  GtkWidget *position, *reason;
  GtkWidget *lr, *momentum, *wd;
  GtkWidget *trace_list, *tensor_list;
  GtkWidget *tensor_view;
  char *position_text;
  char *selected;           /* the tensor shown */
  char *shown_at;           /* where it was taken ("iteration 3 › backward › fc2") */
  char *wanted;             /* asked for, not here yet: shown when the session sends it */
  gboolean filling;         /* fill_tensors selects a row: not the user's choice */
  guint n_trace, n_tensors, n_breakpoints;
  gboolean setting;         /* set_hyper is filling the fields: no actions */
};

G_DEFINE_FINAL_TYPE (TwbDebuggerPanel, twb_debugger_panel, GTK_TYPE_WIDGET)

static const char *const phase_names[] = { "forward", "backward", "update" };

static const char *
phase_name (int phase)
{
  return phase >= 0 && phase < (int) G_N_ELEMENTS (phase_names) ? phase_names[phase] : "between iterations";
}

/* Empties a list.  When a row has the focus (a breakpoint's phase menu, a
 * tensor picked with the keys), returns its key for twb_focus_restore once
 * the list is filled again (twb-focus.h); the caller frees it. */
static char *
clear_list (GtkWidget *list)
{
  char *key = NULL;
  GtkWidget *c;
  for (c = gtk_widget_get_first_child (list); c && key == NULL; c = gtk_widget_get_next_sibling (c))
    key = twb_focus_save (c);
  while ((c = gtk_widget_get_first_child (list)))
    gtk_list_box_remove (GTK_LIST_BOX (list), c);
  return key;
}

static GtkWidget *
dim_row (const char *text)
{
  GtkWidget *l = gtk_label_new (text);
  gtk_label_set_wrap (GTK_LABEL (l), TRUE);
  gtk_label_set_xalign (GTK_LABEL (l), 0);
  gtk_widget_add_css_class (l, "dim-label");
  GtkWidget *row = gtk_list_box_row_new ();
  gtk_list_box_row_set_child (GTK_LIST_BOX_ROW (row), l);
  gtk_list_box_row_set_activatable (GTK_LIST_BOX_ROW (row), FALSE);
  gtk_widget_set_focusable (row, FALSE);
  return row;
}

/* ---- Breakpoints ------------------------------------------------------------------------ */

/* A breakpoint in words: "fc1 · forward", "loss above 5". */
static char *
spec_words (const char *spec)
{
  if (g_str_has_prefix (spec, "node="))
    {
      const char *id = spec + 5;
      const char *colon = strrchr (id, ':');
      if (colon && (strcmp (colon, ":forward") == 0 || strcmp (colon, ":backward") == 0))
        return g_strndup (id, colon - id);
      return g_strdup (id);   /* the phase drop-down beside it says which */
    }
  if (strcmp (spec, "nan") == 0)
    return g_strdup ("a NaN appears (at the op that makes it)");
  if (strcmp (spec, "inf") == 0)
    return g_strdup ("an Inf appears (at the op that makes it)");
  if (g_str_has_prefix (spec, "loss>"))
    return g_strdup_printf ("loss above %s", spec + 5);
  if (g_str_has_prefix (spec, "grad-norm>"))
    return g_strdup_printf ("a gradient norm above %s", spec + 10);
  if (g_str_has_prefix (spec, "step="))
    return g_strdup_printf ("before iteration %s", spec + 5);
  return g_strdup (spec);
}

static void
phase_selected (GtkDropDown *dd, GParamSpec *p, TwbDebuggerPanel *self)
{
  const char *node = g_object_get_data (G_OBJECT (dd), "node");
  static const char *const suffix[] = { "", ":forward", ":backward" };
  guint i = gtk_drop_down_get_selected (dd);
  if (i >= G_N_ELEMENTS (suffix))
    return;
  g_autofree char *spec = g_strconcat ("node=", node, suffix[i], NULL);
  if (g_strcmp0 (spec, g_object_get_data (G_OBJECT (dd), "spec")) == 0)
    return;
  gtk_widget_activate_action (GTK_WIDGET (self), "debugger.add-breakpoint", "s", spec);
}

void
twb_debugger_panel_set_breakpoints (TwbDebuggerPanel *self, const char *const *specs)
{
  g_autofree char *focus_key = clear_list (self->bp_list);
  self->n_breakpoints = 0;
  for (const char *const *s = specs; s && *s; s++)
    {
      GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
      GtkWidget *dot = gtk_image_new_from_icon_name ("media-record-symbolic");
      gtk_widget_add_css_class (dot, "breakpoint-dot");
      gtk_box_append (GTK_BOX (box), dot);
      g_autofree char *words = spec_words (*s);
      GtkWidget *l = gtk_label_new (words);
      gtk_label_set_xalign (GTK_LABEL (l), 0);
      gtk_label_set_ellipsize (GTK_LABEL (l), PANGO_ELLIPSIZE_END);
      gtk_widget_set_hexpand (l, TRUE);
      gtk_widget_set_tooltip_text (l, *s);
      gtk_box_append (GTK_BOX (box), l);
      if (g_str_has_prefix (*s, "node="))
        {
          /* Which phases: both, forward, backward. */
          const char *const items[] = { "Both", "Forward", "Backward", NULL };
          GtkWidget *dd = gtk_drop_down_new_from_strings (items);
          const char *colon = strrchr (*s + 5, ':');
          guint sel = colon && strcmp (colon, ":forward") == 0    ? 1
                      : colon && strcmp (colon, ":backward") == 0 ? 2
                                                                  : 0;
          gtk_drop_down_set_selected (GTK_DROP_DOWN (dd), sel);
          g_object_set_data_full (G_OBJECT (dd), "node",
                                  sel ? g_strndup (*s + 5, colon - (*s + 5)) : g_strdup (*s + 5),
                                  g_free);
          g_object_set_data_full (G_OBJECT (dd), "spec", g_strdup (*s), g_free);
          gtk_widget_set_tooltip_text (dd, "Stop in the forward pass, the backward pass, or both");
          g_signal_connect (dd, "notify::selected", G_CALLBACK (phase_selected), self);
          const char *bp_node = g_object_get_data (G_OBJECT (dd), "node");
          g_autofree char *dd_key = g_strconcat ("phase:", bp_node, NULL);
          twb_focus_set_key (dd, dd_key);
          gtk_box_append (GTK_BOX (box), dd);
        }
      GtkWidget *rm = gtk_button_new_from_icon_name ("edit-delete-symbolic");
      gtk_widget_add_css_class (rm, "flat");
      gtk_actionable_set_action_name (GTK_ACTIONABLE (rm), "debugger.remove-breakpoint");
      gtk_actionable_set_action_target (GTK_ACTIONABLE (rm), "s", *s);
      g_autofree char *acc = g_strdup_printf ("Remove the breakpoint: %s", words);
      gtk_widget_set_tooltip_text (rm, "Remove");
      gtk_accessible_update_property (GTK_ACCESSIBLE (rm), GTK_ACCESSIBLE_PROPERTY_LABEL, acc, -1);
      gtk_box_append (GTK_BOX (box), rm);
      gtk_list_box_append (GTK_LIST_BOX (self->bp_list), box);
      self->n_breakpoints++;
    }
  if (self->n_breakpoints == 0)
    gtk_list_box_append (GTK_LIST_BOX (self->bp_list),
                         dim_row ("None. F9 or a click at the left end of a node's header sets "
                                  "one; a NaN or Inf always stops the run where it appears."));
  twb_focus_restore (self->bp_list, focus_key);
}

guint
twb_debugger_panel_n_breakpoints (TwbDebuggerPanel *self)
{
  return self->n_breakpoints;
}

static void
add_condition (GtkWidget *w, TwbDebuggerPanel *self)
{
  static const char *const prefix[] = { "loss>", "grad-norm>", "step=" };
  guint k = gtk_drop_down_get_selected (GTK_DROP_DOWN (self->cond_kind));
  if (k >= G_N_ELEMENTS (prefix))
    return;
  const char *v = gtk_editable_get_text (GTK_EDITABLE (self->cond_value));
  g_autofree char *value = g_strstrip (g_strdup (v));
  g_autofree char *spec = g_strconcat (prefix[k], value, NULL);
  g_autoptr (GError) error = NULL;
  if (!tw_session_check_breakpoint (spec, &error))
    {
      gtk_widget_add_css_class (self->cond_value, "error");
      gtk_widget_set_tooltip_text (self->cond_value,
                                   k == 2 ? "An iteration number: 1, 2, 3 …" : "A number, e.g. 5 or 1e3");
      return;
    }
  gtk_widget_remove_css_class (self->cond_value, "error");
  gtk_widget_set_tooltip_text (self->cond_value, NULL);
  gtk_widget_activate_action (GTK_WIDGET (self), "debugger.add-breakpoint", "s", spec);
  gtk_editable_set_text (GTK_EDITABLE (self->cond_value), "");
}

/* ---- The pause -------------------------------------------------------------------------- */

/* Show the pause's tensor `name` in `want_role` (NULL: the first so named;
 * "fc2.weight" is both an input and a parameter of fc2), else the copy a
 * request brought. */
static void
show_tensor_as (TwbDebuggerPanel *self, const char *name, const char *want_role)
{
  tw_tensor *t = self->run ? twb_run_get_tensor (self->run, name) : NULL;
  const char *role = "tensor";
  const tw_snapshot *pause = self->run ? twb_run_get_pause (self->run) : NULL;
  for (guint i = 0; pause && pause->tensors && i < pause->tensors->len; i++)
    {
      const tw_snapshot_tensor *st = g_ptr_array_index (pause->tensors, i);
      if (strcmp (st->name, name) == 0 && (want_role == NULL || g_strcmp0 (st->role, want_role) == 0))
        {
          t = st->tensor;
          role = st->role;
          break;
        }
    }
  if (t == NULL)
    return;
  if (g_strcmp0 (self->wanted, name) == 0)
    g_clear_pointer (&self->wanted, g_free);
  g_free (self->selected);
  self->selected = g_strdup (name);
  TwbTensorView *v = TWB_TENSOR_VIEW (self->tensor_view);
  twb_tensor_view_set_tensor (v, name, role, t, twb_run_get_previous_tensor (self->run, name));
  int64_t iter = pause ? pause->iteration : twb_run_get_tensor_iteration (self->run, name, FALSE);
  twb_tensor_view_set_iterations (v, iter,
                                  twb_run_get_tensor_iteration (self->run, name, TRUE));
  g_free (self->shown_at);
  self->shown_at = pause && self->position_text ? g_strdup (self->position_text)
                                                : g_strdup_printf ("iteration %" G_GINT64_FORMAT,
                                                                   iter);
}

/* The tensor shown is a copy from a pause: once the worker goes on or the
 * run ends it is not the value now, and the view says so. */
static void
mark_stale (TwbDebuggerPanel *self, tw_session_state st)
{
  TwbTensorView *v = TWB_TENSOR_VIEW (self->tensor_view);
  if (self->shown_at == NULL)
    return;
  g_autofree char *why
    = st == TW_SESSION_RUNNING
        ? g_strdup_printf ("taken at %s; the run has gone on since", self->shown_at)
        : g_strdup_printf ("taken at %s, before the run %s", self->shown_at,
                           st == TW_SESSION_FINISHED ? "finished"
                           : st == TW_SESSION_FAILED ? "failed"
                                                     : "was stopped");
  twb_tensor_view_set_stale (v, why);
}

static void
show_tensor (TwbDebuggerPanel *self, const char *name)
{
  show_tensor_as (self, name, NULL);
}

static void
tensor_row_activated (GtkListBox *box, GtkListBoxRow *row, TwbDebuggerPanel *self)
{
  const char *name = row ? g_object_get_data (G_OBJECT (row), "tensor") : NULL;
  if (name && !self->filling)
    g_clear_pointer (&self->wanted, g_free);   /* the user picked another */
  if (name)
    show_tensor_as (self, name, g_object_get_data (G_OBJECT (row), "role"));
}

gboolean
twb_debugger_panel_select_tensor (TwbDebuggerPanel *self, const char *name)
{
  for (GtkWidget *c = gtk_widget_get_first_child (self->tensor_list); c;
       c = gtk_widget_get_next_sibling (c))
    {
      const char *n = g_object_get_data (G_OBJECT (c), "tensor");
      if (n && strcmp (n, name) == 0)
        {
          gtk_list_box_select_row (GTK_LIST_BOX (self->tensor_list), GTK_LIST_BOX_ROW (c));
          show_tensor (self, name);
          return TRUE;
        }
    }
  if (self->run && twb_run_get_tensor (self->run, name))
    {
      show_tensor (self, name);
      return TRUE;
    }
  /* The window asks the session for it: show it when it comes. */
  g_free (self->wanted);
  self->wanted = g_strdup (name);
  return FALSE;
}

static gboolean
has_nonfinite (const tw_tensor *t)
{
  tw_tensor_stats st;
  tw_tensor_stats_compute (t, 0, &st);
  gboolean bad = st.nan + st.inf > 0;
  tw_tensor_stats_clear (&st);
  return bad;
}

static void fill_tensor_rows (TwbDebuggerPanel *self, const tw_snapshot *pause);

/* The rows of the pause's tensors; the focus, when it was on one, comes
 * back to the same tensor at the new position if it has it. */
static void
fill_tensors (TwbDebuggerPanel *self, const tw_snapshot *pause)
{
  g_autofree char *focus_key = clear_list (self->tensor_list);
  fill_tensor_rows (self, pause);
  twb_focus_restore (self->tensor_list, focus_key);
}

static void
fill_tensor_rows (TwbDebuggerPanel *self, const tw_snapshot *pause)
{
  self->n_tensors = 0;
  GtkListBoxRow *keep = NULL, *first = NULL, *want = NULL, *fault_row = NULL;
  gboolean fault = pause && pause->reason
                   && (strstr (pause->reason, "NaN") || strstr (pause->reason, "Inf")
                       || strstr (pause->reason, "nan") || strstr (pause->reason, "inf"));
  for (guint i = 0; pause && pause->tensors && i < pause->tensors->len; i++)
    {
      const tw_snapshot_tensor *t = g_ptr_array_index (pause->tensors, i);
      g_autofree char *shape = tw_shape_to_string (t->tensor->ndim, t->tensor->shape);
      /* Two lines: the name whole (grad:relu1 and grad:fc1 differ at the
       * end), then what it is in words ("gradient of fc1's output") and
       * its shape. */
      g_autofree char *markup = g_markup_printf_escaped (
        "%s\n<span size=\"small\" alpha=\"70%%\">%s · <tt>%s</tt></span>", t->name,
        t->what ? t->what : t->role, shape);
      GtkWidget *l = gtk_label_new (NULL);
      gtk_label_set_markup (GTK_LABEL (l), markup);
      gtk_label_set_xalign (GTK_LABEL (l), 0);
      gtk_label_set_ellipsize (GTK_LABEL (l), PANGO_ELLIPSIZE_MIDDLE);
      GtkWidget *row = gtk_list_box_row_new ();
      gtk_list_box_row_set_child (GTK_LIST_BOX_ROW (row), l);
      g_object_set_data_full (G_OBJECT (row), "tensor", g_strdup (t->name), g_free);
      g_object_set_data_full (G_OBJECT (row), "role", g_strdup (t->role), g_free);
      gtk_widget_set_tooltip_text (row, t->name);
      g_autofree char *row_key = g_strdup_printf ("%s · %s", t->role, t->name);
      twb_focus_set_key (row, row_key);
      gtk_list_box_append (GTK_LIST_BOX (self->tensor_list), row);
      if (first == NULL)
        first = GTK_LIST_BOX_ROW (row);
      if (self->selected && strcmp (self->selected, t->name) == 0)
        keep = GTK_LIST_BOX_ROW (row);
      if (self->wanted && strcmp (self->wanted, t->name) == 0)
        want = GTK_LIST_BOX_ROW (row);
      if (fault && fault_row == NULL && has_nonfinite (t->tensor))
        fault_row = GTK_LIST_BOX_ROW (row);
      self->n_tensors++;
    }
  if (self->n_tensors == 0)
    gtk_list_box_append (GTK_LIST_BOX (self->tensor_list),
                         dim_row (pause ? "This position has no tensors: step into an op (F11)"
                                        : "The paused op's inputs, outputs, gradients and "
                                          "parameters show here"));
  /* A tensor asked for (debugger.inspect) when it has come; else the same
   * tensor as before when the new position has it (or it was asked for at
   * this pause), else the first. */
  const char *other = NULL;
  if (self->run && want == NULL)
    {
      if (self->wanted && twb_run_get_tensor (self->run, self->wanted))
        other = self->wanted;
      else if (keep == NULL && self->selected && twb_run_get_tensor (self->run, self->selected))
        other = self->selected;
    }
  if (other)
    {
      g_autofree char *name = g_strdup (other);
      show_tensor (self, name);
      return;
    }
  /* At a NaN or Inf, the tensor that holds it comes first. */
  GtkListBoxRow *sel = want ? want : fault_row ? fault_row : keep ? keep : first;
  if (sel == NULL)
    return;
  self->filling = TRUE;
  gtk_list_box_select_row (GTK_LIST_BOX (self->tensor_list), sel);
  self->filling = FALSE;
  g_autofree char *name = g_strdup (g_object_get_data (G_OBJECT (sel), "tensor"));
  g_autofree char *role = g_strdup (g_object_get_data (G_OBJECT (sel), "role"));
  show_tensor_as (self, name, role);
}

/* The ops of this iteration as a call stack: the newest, where the run
 * is, on top and selected. */
static void
fill_trace (TwbDebuggerPanel *self, const tw_snapshot *pause)
{
  g_free (clear_list (self->trace_list));
  self->n_trace = pause && pause->trace ? g_strv_length (pause->trace) : 0;
  for (guint i = self->n_trace; i > 0; i--)
    {
      GtkWidget *l = gtk_label_new (pause->trace[i - 1]);
      gtk_label_set_xalign (GTK_LABEL (l), 0);
      gtk_label_set_ellipsize (GTK_LABEL (l), PANGO_ELLIPSIZE_END);
      gtk_widget_add_css_class (l, "monospace");
      gtk_list_box_append (GTK_LIST_BOX (self->trace_list), l);
    }
  if (self->n_trace)
    gtk_list_box_select_row (GTK_LIST_BOX (self->trace_list),
                             gtk_list_box_get_row_at_index (GTK_LIST_BOX (self->trace_list), 0));
  else
    gtk_list_box_append (GTK_LIST_BOX (self->trace_list),
                         dim_row (pause ? "No op of this iteration has run yet"
                                        : "The ops of the paused iteration, newest first"));
}

void
twb_debugger_panel_update (TwbDebuggerPanel *self)
{
  const tw_snapshot *pause = self->run ? twb_run_get_pause (self->run) : NULL;
  g_clear_pointer (&self->position_text, g_free);
  if (pause)
    {
      GString *p = g_string_new (NULL);
      g_string_append_printf (p, "iteration %" G_GINT64_FORMAT " › %s", pause->iteration,
                              phase_name (pause->phase));
      if (pause->nodes && pause->nodes[0])
        {
          g_autofree char *nodes = g_strjoinv (", ", pause->nodes);
          g_string_append_printf (p, " › %s", nodes);
        }
      if (pause->op)
        g_string_append_printf (p, " (%s%s)", pause->compiled ? "instruction " : "", pause->op);
      self->position_text = g_string_free (p, FALSE);
      gtk_label_set_text (GTK_LABEL (self->position), self->position_text);
      g_autofree char *why = g_strdup_printf ("Paused: %s%s%s", pause->reason ? pause->reason : "",
                                              pause->message ? " — " : "",
                                              pause->message ? pause->message : "");
      gtk_label_set_text (GTK_LABEL (self->reason), why);
      /* The session's reasons for a non-finite value: "NaN first produced
       * by …", "Inf first produced by …" (a node id holding "nan" or "inf"
       * is no fault). */
      gboolean fault = pause->reason && (g_str_has_prefix (pause->reason, "NaN ")
                                         || g_str_has_prefix (pause->reason, "Inf "));
      if (fault)
        gtk_widget_add_css_class (self->reason, "error");
      else
        gtk_widget_remove_css_class (self->reason, "error");
    }
  else
    {
      tw_session_state st = self->run ? twb_run_get_state (self->run) : TW_SESSION_IDLE;
      const char *text = st == TW_SESSION_RUNNING ? "Running"
                         : self->run && st != TW_SESSION_IDLE
                           ? "The run has ended"
                           : "Not started: F11 steps one op, F10 a layer, Ctrl+F10 an iteration";
      gtk_label_set_text (GTK_LABEL (self->position), text);
      gtk_label_set_text (GTK_LABEL (self->reason),
                          st == TW_SESSION_RUNNING ? "Pause, or a breakpoint, stops it between two ops"
                                                   : "");
      gtk_widget_remove_css_class (self->reason, "error");
    }
  gboolean paused = pause != NULL;
  /* Editable while paused; a field being typed in lets the focus go first
   * (F5 pressed from it). */
  twb_widget_set_sensitive (self->lr, paused);
  twb_widget_set_sensitive (self->momentum, paused);
  twb_widget_set_sensitive (self->wd, paused);
  fill_trace (self, pause);
  fill_tensors (self, pause);
  if (!paused && self->run)
    mark_stale (self, twb_run_get_state (self->run));
}

void
twb_debugger_panel_set_run (TwbDebuggerPanel *self, TwbRun *run)
{
  if (run)
    g_object_ref (run);
  g_clear_object (&self->run);
  self->run = run;
  g_clear_pointer (&self->selected, g_free);
  g_clear_pointer (&self->wanted, g_free);
  g_clear_pointer (&self->shown_at, g_free);
  twb_tensor_view_set_tensor (TWB_TENSOR_VIEW (self->tensor_view), NULL, NULL, NULL, NULL);
  twb_debugger_panel_update (self);
}

void
twb_debugger_panel_set_hyper (TwbDebuggerPanel *self, double lr, double momentum, double wd)
{
  self->setting = TRUE;
  gtk_spin_button_set_value (GTK_SPIN_BUTTON (self->lr), lr);
  gtk_spin_button_set_value (GTK_SPIN_BUTTON (self->momentum), momentum);
  gtk_spin_button_set_value (GTK_SPIN_BUTTON (self->wd), wd);
  self->setting = FALSE;
}

static void
hyper_activated (GtkSpinButton *sb, TwbDebuggerPanel *self)
{
  const char *action = g_object_get_data (G_OBJECT (sb), "action");
  if (self->setting)
    return;
  gtk_widget_activate_action (GTK_WIDGET (self), action, "d", gtk_spin_button_get_value (sb));
}

TwbTensorView *
twb_debugger_panel_get_tensor_view (TwbDebuggerPanel *self)
{
  return TWB_TENSOR_VIEW (self->tensor_view);
}

const char *
twb_debugger_panel_get_position (TwbDebuggerPanel *self)
{
  return self->position_text;
}

guint
twb_debugger_panel_n_trace (TwbDebuggerPanel *self)
{
  return self->n_trace;
}

guint
twb_debugger_panel_n_tensors (TwbDebuggerPanel *self)
{
  return self->n_tensors;
}

/* ---- The widget ------------------------------------------------------------------------- */

static void
twb_debugger_panel_dispose (GObject *o)
{
  TwbDebuggerPanel *self = TWB_DEBUGGER_PANEL (o);
  g_clear_object (&self->run);
  g_clear_pointer (&self->box, gtk_widget_unparent);
  G_OBJECT_CLASS (twb_debugger_panel_parent_class)->dispose (o);
}

static void
twb_debugger_panel_finalize (GObject *o)
{
  TwbDebuggerPanel *self = TWB_DEBUGGER_PANEL (o);
  g_free (self->position_text);
  g_free (self->selected);
  g_free (self->shown_at);
  g_free (self->wanted);
  G_OBJECT_CLASS (twb_debugger_panel_parent_class)->finalize (o);
}

static void
twb_debugger_panel_class_init (TwbDebuggerPanelClass *klass)
{
  GObjectClass *oc = G_OBJECT_CLASS (klass);
  oc->dispose = twb_debugger_panel_dispose;
  oc->finalize = twb_debugger_panel_finalize;
  gtk_widget_class_set_layout_manager_type (GTK_WIDGET_CLASS (klass), GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name (GTK_WIDGET_CLASS (klass), "debuggerpanel");
}

static void
twb_debugger_panel_init (TwbDebuggerPanel *self)
{
}

static GtkWidget *
heading (const char *text)
{
  GtkWidget *l = gtk_label_new (text);
  gtk_label_set_xalign (GTK_LABEL (l), 0);
  gtk_widget_add_css_class (l, "heading");
  return l;
}

static GtkWidget *
scrolled_list (GtkWidget **list, const char *label)
{
  GtkWidget *sw = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (sw), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
  gtk_widget_set_vexpand (sw, TRUE);
  *list = gtk_list_box_new ();
  gtk_widget_add_css_class (*list, "navigation-sidebar");
  gtk_accessible_update_property (GTK_ACCESSIBLE (*list), GTK_ACCESSIBLE_PROPERTY_LABEL, label, -1);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (sw), *list);
  return sw;
}

static GtkWidget *
hyper_spin (TwbDebuggerPanel *self, const char *label, const char *action, double max, double step,
            int digits, GtkWidget *grid, int row)
{
  GtkWidget *l = gtk_label_new (label);
  gtk_label_set_xalign (GTK_LABEL (l), 0);
  gtk_widget_add_css_class (l, "dim-label");
  GtkWidget *sb = gtk_spin_button_new_with_range (0, max, step);
  gtk_spin_button_set_digits (GTK_SPIN_BUTTON (sb), digits);
  gtk_widget_set_hexpand (sb, TRUE);
  g_object_set_data (G_OBJECT (sb), "action", (gpointer) action);
  g_signal_connect (sb, "value-changed", G_CALLBACK (hyper_activated), self);
  gtk_widget_set_tooltip_text (sb, "Applies from the next step when you continue");
  gtk_accessible_update_property (GTK_ACCESSIBLE (sb), GTK_ACCESSIBLE_PROPERTY_LABEL, label, -1);
  gtk_grid_attach (GTK_GRID (grid), l, 0, row, 1, 1);
  gtk_grid_attach (GTK_GRID (grid), sb, 1, row, 1, 1);
  return sb;
}

GtkWidget *
twb_debugger_panel_new (void)
{
  TwbDebuggerPanel *self = g_object_new (TWB_TYPE_DEBUGGER_PANEL, NULL);
  self->box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 12);
  gtk_widget_set_margin_start (self->box, 8);
  gtk_widget_set_margin_end (self->box, 8);
  gtk_widget_set_margin_bottom (self->box, 6);
  gtk_widget_set_parent (self->box, GTK_WIDGET (self));

  /* Breakpoints. */
  GtkWidget *col1 = gtk_box_new (GTK_ORIENTATION_VERTICAL, 4);
  gtk_widget_set_size_request (col1, 250, -1);
  gtk_box_append (GTK_BOX (col1), heading ("Breakpoints"));
  gtk_box_append (GTK_BOX (col1), scrolled_list (&self->bp_list, "Breakpoints"));
  gtk_list_box_set_selection_mode (GTK_LIST_BOX (self->bp_list), GTK_SELECTION_NONE);
  GtkWidget *add = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 4);
  const char *const kinds[] = { "Loss >", "Grad norm >", "At iteration", NULL };
  self->cond_kind = gtk_drop_down_new_from_strings (kinds);
  gtk_widget_set_tooltip_text (self->cond_kind, "Stop when this holds");
  self->cond_value = gtk_entry_new ();
  gtk_editable_set_width_chars (GTK_EDITABLE (self->cond_value), 5);
  gtk_widget_set_hexpand (self->cond_value, TRUE);
  gtk_entry_set_placeholder_text (GTK_ENTRY (self->cond_value), "value");
  gtk_accessible_update_property (GTK_ACCESSIBLE (self->cond_value), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  "Condition value", -1);
  g_signal_connect (self->cond_value, "activate", G_CALLBACK (add_condition), self);
  GtkWidget *add_b = gtk_button_new_from_icon_name ("list-add-symbolic");
  gtk_widget_set_tooltip_text (add_b, "Add the condition (twb train --break-on loss>X from the command line)");
  gtk_accessible_update_property (GTK_ACCESSIBLE (add_b), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  "Add condition", -1);
  g_signal_connect (add_b, "clicked", G_CALLBACK (add_condition), self);
  gtk_box_append (GTK_BOX (add), self->cond_kind);
  gtk_box_append (GTK_BOX (add), self->cond_value);
  gtk_box_append (GTK_BOX (add), add_b);
  gtk_box_append (GTK_BOX (col1), add);
  gtk_box_append (GTK_BOX (self->box), col1);

  /* Where the run is, and the iteration so far. */
  GtkWidget *col2 = gtk_box_new (GTK_ORIENTATION_VERTICAL, 4);
  gtk_widget_set_size_request (col2, 280, -1);
  self->position = gtk_label_new (NULL);
  gtk_label_set_xalign (GTK_LABEL (self->position), 0);
  gtk_label_set_wrap (GTK_LABEL (self->position), TRUE);
  gtk_label_set_wrap_mode (GTK_LABEL (self->position), PANGO_WRAP_WORD_CHAR);
  gtk_label_set_selectable (GTK_LABEL (self->position), TRUE);
  gtk_widget_add_css_class (self->position, "heading");
  self->reason = gtk_label_new (NULL);
  gtk_label_set_xalign (GTK_LABEL (self->reason), 0);
  gtk_label_set_wrap (GTK_LABEL (self->reason), TRUE);
  gtk_label_set_wrap_mode (GTK_LABEL (self->reason), PANGO_WRAP_WORD_CHAR);
  gtk_label_set_lines (GTK_LABEL (self->reason), 2);
  gtk_label_set_ellipsize (GTK_LABEL (self->reason), PANGO_ELLIPSIZE_END);
  gtk_box_append (GTK_BOX (col2), self->position);
  gtk_box_append (GTK_BOX (col2), self->reason);
  GtkWidget *grid = gtk_grid_new ();
  gtk_grid_set_column_spacing (GTK_GRID (grid), 6);
  gtk_grid_set_row_spacing (GTK_GRID (grid), 2);
  self->lr = hyper_spin (self, "Learning rate", "debugger.set-lr", 10, 1e-4, 5, grid, 0);
  self->momentum = hyper_spin (self, "Momentum", "debugger.set-momentum", 1, 0.01, 3, grid, 1);
  self->wd = hyper_spin (self, "Weight decay", "debugger.set-weight-decay", 1, 1e-5, 5, grid, 2);
  gtk_box_append (GTK_BOX (col2), grid);
  gtk_box_append (GTK_BOX (col2), heading ("This iteration, newest first"));
  gtk_box_append (GTK_BOX (col2), scrolled_list (&self->trace_list, "Ops of this iteration"));
  gtk_box_append (GTK_BOX (self->box), col2);

  /* The op's tensors, and the inspector. */
  GtkWidget *col3 = gtk_box_new (GTK_ORIENTATION_VERTICAL, 4);
  gtk_widget_set_size_request (col3, 220, -1);
  gtk_box_append (GTK_BOX (col3), heading ("Tensors"));
  gtk_box_append (GTK_BOX (col3), scrolled_list (&self->tensor_list, "Tensors of the paused op"));
  g_signal_connect (self->tensor_list, "row-activated", G_CALLBACK (tensor_row_activated), self);
  g_signal_connect (self->tensor_list, "row-selected", G_CALLBACK (tensor_row_activated), self);
  gtk_box_append (GTK_BOX (self->box), col3);

  self->tensor_view = twb_tensor_view_new ();
  gtk_widget_set_hexpand (self->tensor_view, TRUE);
  gtk_box_append (GTK_BOX (self->box), self->tensor_view);

  twb_debugger_panel_set_breakpoints (self, NULL);
  twb_debugger_panel_update (self);
  return GTK_WIDGET (self);
}
