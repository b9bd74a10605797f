/* twb-window-actions.c — the window's commands: "win.*" (files, export,
 * panels) and "graph.*" (edits and the view).  Accelerators: see
 * app/twb-application-actions.c. */
#define G_LOG_DOMAIN "twb-window-actions"

#include "ui/twb-window-private.h"

#include "graph_editor/twb-graph-render.h"
#include "ui/twb-sequential-dialog.h"

#include <string.h>

/* Paste offset: one grid step times two, so a pasted copy is visibly apart
 * from its original and stays on the grid. */
#define PASTE_OFFSET 40.0

static GAction *
graph_action (TwbWindow *self, const char *name)
{
  return g_action_map_lookup_action (G_ACTION_MAP (self->graph_actions), name);
}

static void
set_enabled (TwbWindow *self, const char *name, gboolean enabled)
{
  GAction *a = graph_action (self, name);
  if (a == NULL)
    a = g_action_map_lookup_action (G_ACTION_MAP (self), name);
  if (a)
    g_simple_action_set_enabled (G_SIMPLE_ACTION (a), enabled);
}

/* Commands that text fields also understand (Ctrl+C, Ctrl+Z, Delete…) are
 * disabled while a text field has the focus, so their accelerators reach it. */
static gboolean
editable_has_focus (TwbWindow *self)
{
  GtkWidget *f = gtk_root_get_focus (GTK_ROOT (self));
  for (; f; f = gtk_widget_get_parent (f))
    if (GTK_IS_EDITABLE (f))
      return TRUE;
  return FALSE;
}

void
twb_window_update_actions (TwbWindow *self)
{
  if (self->graph_actions == NULL || self->doc == NULL)
    return;
  gboolean text = editable_has_focus (self);
  g_auto (GStrv) sel = twb_document_get_selection (self->doc);
  gboolean any = sel && sel[0];
  gboolean collapsed = FALSE;
  g_auto (GStrv) blocks = twb_document_list_blocks (self->doc);
  for (char **b = blocks; b && *b; b++)
    collapsed |= twb_document_block_is_collapsed (self->doc, *b);
  set_enabled (self, "undo", !text && twb_document_can_undo (self->doc));
  set_enabled (self, "redo", !text && twb_document_can_redo (self->doc));
  set_enabled (self, "copy", !text && any);
  set_enabled (self, "cut", !text && any);
  set_enabled (self, "delete", !text && any);
  set_enabled (self, "duplicate", !text && any);
  set_enabled (self, "select-all", !text);
  set_enabled (self, "paste", !text && self->clipboard != NULL);
  set_enabled (self, "collapse", any);
  set_enabled (self, "expand", collapsed || (blocks && blocks[0]));
  /* Model Output: a check on the one selected node (not a collapsed block). */
  const char *one = sel && sel[0] && !sel[1] && twb_document_block_of_selection (self->doc) == NULL
                      ? sel[0]
                      : NULL;
  GAction *out = graph_action (self, "output");
  gboolean is_output = one && twb_document_output_kind (self->doc, one) != TWB_OUTPUT_NONE;
  g_simple_action_set_enabled (G_SIMPLE_ACTION (out), one != NULL);
  g_simple_action_set_state (G_SIMPLE_ACTION (out), g_variant_new_boolean (is_output));
}

static void
focus_changed (GtkWindow *w, GParamSpec *p, TwbWindow *self)
{
  twb_window_update_actions (self);
}

/* ---- graph.* -------------------------------------------------------------------- */

static void
act_undo (GSimpleAction *a, GVariant *p, gpointer data)
{
  twb_document_undo (TWB_WINDOW (data)->doc);
}

static void
act_redo (GSimpleAction *a, GVariant *p, gpointer data)
{
  twb_document_redo (TWB_WINDOW (data)->doc);
}

static void
act_copy (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  g_autofree char *text = twb_document_copy_selection (self->doc);
  if (text == NULL)
    return;
  g_free (self->clipboard);
  self->clipboard = g_strdup (text);
  self->paste_count = 0;
  gdk_clipboard_set_text (gtk_widget_get_clipboard (GTK_WIDGET (self)), text);
  twb_window_update_actions (self);
}

static void
act_delete (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  g_auto (GStrv) sel = twb_document_get_selection (self->doc);
  g_autoptr (GError) error = NULL;
  if (sel && sel[0] && !twb_document_remove_nodes (self->doc, (const char *const *) sel, &error))
    twb_window_show_toast (self, error->message);
}

static void
act_cut (GSimpleAction *a, GVariant *p, gpointer data)
{
  act_copy (a, p, data);
  act_delete (a, p, data);
}

static void
paste_text (TwbWindow *self, const char *text)
{
  g_autoptr (GError) error = NULL;
  self->paste_count++;
  double off = PASTE_OFFSET * self->paste_count;
  if (!twb_document_paste (self->doc, text, off, off, &error))
    twb_window_show_toast (self, error->message);
}

static void
paste_read_done (GObject *src, GAsyncResult *res, gpointer data)
{
  TwbWindow *self = data;
  g_autofree char *text = gdk_clipboard_read_text_finish (GDK_CLIPBOARD (src), res, NULL);
  if (text)
    paste_text (self, text);
  g_object_unref (self);
}

static void
act_paste (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  GdkClipboard *cb = gtk_widget_get_clipboard (GTK_WIDGET (self));
  /* Our own copy: use it at once (no round trip through the display). */
  if (gdk_clipboard_is_local (cb) && self->clipboard)
    {
      paste_text (self, self->clipboard);
      return;
    }
  gdk_clipboard_read_text_async (cb, NULL, paste_read_done, g_object_ref (self));
}

static void
act_duplicate (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  g_autoptr (GError) error = NULL;
  if (!twb_document_duplicate_selection (self->doc, &error))
    twb_window_show_toast (self, error->message);
}

static void
act_select_all (GSimpleAction *a, GVariant *p, gpointer data)
{
  twb_document_select_all (TWB_WINDOW (data)->doc);
}

static void
act_zoom_fit (GSimpleAction *a, GVariant *p, gpointer data)
{
  twb_graph_canvas_zoom_to_fit (TWB_WINDOW (data)->canvas);
}

static void
act_zoom_in (GSimpleAction *a, GVariant *p, gpointer data)
{
  twb_graph_canvas_zoom_by (TWB_WINDOW (data)->canvas, 1.25);
}

static void
act_zoom_out (GSimpleAction *a, GVariant *p, gpointer data)
{
  twb_graph_canvas_zoom_by (TWB_WINDOW (data)->canvas, 0.8);
}

static void
act_auto_layout (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  twb_document_auto_layout (self->doc);
  twb_graph_canvas_zoom_to_fit (self->canvas);
}

static void
act_collapse (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  g_autoptr (GError) error = NULL;
  const char *name = p ? g_variant_get_string (p, NULL) : NULL;
  g_autofree char *generated = NULL;
  /* An expanded block's nodes (its frame's band clicked): that block again. */
  const char *open = (name == NULL || name[0] == '\0')
                       ? twb_document_open_block_of_selection (self->doc) : NULL;
  if (open)
    {
      g_autofree char *again = g_strdup (open);
      if (!twb_document_collapse_block (self->doc, again, &error))
        twb_window_show_toast (self, error->message);
      return;
    }
  /* "block 1", "block 2", … as the fold names the ones it makes. */
  if (name == NULL || name[0] == '\0')
    {
      g_auto (GStrv) blocks = twb_document_list_blocks (self->doc);
      int n = blocks ? (int) g_strv_length (blocks) : 0;
      do
        {
          g_free (generated);
          generated = g_strdup_printf ("block %d", ++n);
        }
      while (blocks && g_strv_contains ((const char *const *) blocks, generated));
      name = generated;
    }
  if (!twb_document_collapse_selection (self->doc, name, &error))
    twb_window_show_toast (self, error->message);
}

static void
act_expand (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  g_autoptr (GError) error = NULL;
  const char *name = p ? g_variant_get_string (p, NULL) : NULL;
  if (name && name[0])
    {
      if (!twb_document_expand_block (self->doc, name, &error))
        twb_window_show_toast (self, error->message);
      return;
    }
  /* Without a name: the collapsed blocks in the selection, else all. */
  g_auto (GStrv) blocks = twb_document_list_blocks (self->doc);
  g_auto (GStrv) sel = twb_document_get_selection (self->doc);
  gboolean any_in_sel = FALSE;
  for (char **s = sel; s && *s; s++)
    any_in_sel |= twb_document_block_of (self->doc, *s) != NULL;
  for (char **b = blocks; b && *b; b++)
    {
      if (!twb_document_block_is_collapsed (self->doc, *b))
        continue;
      gboolean hit = !any_in_sel;
      for (char **s = sel; !hit && s && *s; s++)
        hit = g_strcmp0 (twb_document_block_of (self->doc, *s), *b) == 0;
      if (hit && !twb_document_expand_block (self->doc, *b, &error))
        {
          twb_window_show_toast (self, error->message);
          return;
        }
    }
}

static void
act_snap (GSimpleAction *a, GVariant *state, gpointer data)
{
  TwbWindow *self = data;
  g_simple_action_set_state (a, state);
  twb_graph_canvas_set_snap_to_grid (self->canvas, g_variant_get_boolean (state));
}

/* Marks or unmarks the selected node as a model output; a node that must
 * stay one (the only prediction a loss trains) says why. */
static void
act_output (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  g_auto (GStrv) sel = twb_document_get_selection (self->doc);
  if (sel == NULL || sel[0] == NULL || sel[1] != NULL)
    return;
  g_autoptr (GError) error = NULL;
  if (!twb_document_toggle_output (self->doc, sel[0], &error))
    twb_window_show_toast (self, error->message);
  else if (twb_document_output_kind (self->doc, sel[0]) == TWB_OUTPUT_DEFAULT)
    {
      g_autofree char *msg = g_strdup_printf (
        "%s stays the model's output: with no node marked, the prediction each loss scores is "
        "the output",
        sel[0]);
      twb_window_show_toast (self, msg);
    }
  twb_window_update_actions (self);
}

static void
act_edit_node (GSimpleAction *a, GVariant *p, gpointer data)
{
  twb_inspector_focus_node (TWB_WINDOW (data)->inspector);
}

static void
act_next_node (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  twb_graph_canvas_focus_next (self->canvas, 1);
  gtk_widget_grab_focus (GTK_WIDGET (self->canvas));
}

/* ---- win.* ------------------------------------------------------------------------ */

static GtkFileFilter *
json_filter (void)
{
  GtkFileFilter *f = gtk_file_filter_new ();
  gtk_file_filter_set_name (f, "Models (*.json)");
  gtk_file_filter_add_pattern (f, "*.json");
  return f;
}

/* What the Open dialog offers: the files the window opens, by their usual
 * names (the content decides: tw_file_kind_sniff), and every file. */
static void
add_open_filters (GtkFileChooser *chooser)
{
  GtkFileFilter *f = gtk_file_filter_new ();
  gtk_file_filter_set_name (f, "Models, ONNX models and traces (*.json, *.onnx, *.json.gz)");
  const char *patterns[] = { "*.json", "*.onnx", "*.ONNX", "*.json.gz", "*.gz" };
  for (gsize i = 0; i < G_N_ELEMENTS (patterns); i++)
    gtk_file_filter_add_pattern (f, patterns[i]);
  gtk_file_chooser_add_filter (chooser, f);
  g_object_unref (f);
  GtkFileFilter *all = gtk_file_filter_new ();
  gtk_file_filter_set_name (all, "All files");
  gtk_file_filter_add_pattern (all, "*");
  gtk_file_chooser_add_filter (chooser, all);
  g_object_unref (all);
}

static void
open_response (GtkNativeDialog *d, int response, TwbWindow *self)
{
  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr (GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (d));
      g_autofree char *path = g_file_get_path (file);
      if (path)
        twb_window_open_file (self, path);
    }
  g_object_unref (d);
}

static void
act_open (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  GtkFileChooserNative *d = gtk_file_chooser_native_new ("Open Model", GTK_WINDOW (self),
                                                         GTK_FILE_CHOOSER_ACTION_OPEN, "_Open",
                                                         "_Cancel");
  add_open_filters (GTK_FILE_CHOOSER (d));
  g_signal_connect (d, "response", G_CALLBACK (open_response), self);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (d));
}

static void
act_open_path (GSimpleAction *a, GVariant *p, gpointer data)
{
  twb_window_open_file (TWB_WINDOW (data), g_variant_get_string (p, NULL));
}

static void
save_as_response (GtkNativeDialog *d, int response, TwbWindow *self)
{
  gboolean then_close = GPOINTER_TO_INT (g_object_get_data (G_OBJECT (d), "then-close"));
  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr (GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (d));
      g_autofree char *path = g_file_get_path (file);
      g_autoptr (GError) error = NULL;
      if (path && !g_str_has_suffix (path, ".json"))
        {
          char *with = g_strconcat (path, ".json", NULL);
          g_free (path);
          path = with;
        }
      if (path && twb_window_save_to (self, path, &error))
        {
          if (then_close)
            twb_window_close_now (self);
        }
      else if (error)
        twb_window_show_toast (self, error->message);
    }
  g_object_unref (d);
}

void
twb_window_save_as (TwbWindow *self, gboolean then_close)
{
  GtkFileChooserNative *d = gtk_file_chooser_native_new ("Save Model", GTK_WINDOW (self),
                                                         GTK_FILE_CHOOSER_ACTION_SAVE, "_Save",
                                                         "_Cancel");
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (d), json_filter ());
  g_autofree char *title = twb_document_get_title (self->doc);
  g_autofree char *name = g_str_has_suffix (title, ".json") ? g_strdup (title)
                                                             : g_strconcat (title, ".json", NULL);
  if (self->onnx_source)
    {
      /* An imported model: NAME.json beside NAME.onnx. */
      const tw_model *m = twb_document_get_model (self->doc);
      g_autofree char *dir = g_path_get_dirname (self->onnx_source);
      g_autoptr (GFile) f = g_file_new_for_path (dir);
      gtk_file_chooser_set_current_folder (GTK_FILE_CHOOSER (d), f, NULL);
      if (m->name)
        {
          g_free (name);
          name = g_strconcat (m->name, ".json", NULL);
        }
    }
  gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (d), name);
  g_object_set_data (G_OBJECT (d), "then-close", GINT_TO_POINTER (then_close));
  g_signal_connect (d, "response", G_CALLBACK (save_as_response), self);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (d));
}

static void
act_save (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  const char *path = twb_document_get_path (self->doc);
  if (path == NULL)
    {
      twb_window_save_as (self, FALSE);
      return;
    }
  g_autoptr (GError) error = NULL;
  if (!twb_window_save_to (self, path, &error))
    twb_window_show_toast (self, error->message);
}

static void
act_save_as (GSimpleAction *a, GVariant *p, gpointer data)
{
  twb_window_save_as (TWB_WINDOW (data), FALSE);
}

static void
act_close (GSimpleAction *a, GVariant *p, gpointer data)
{
  gtk_window_close (GTK_WINDOW (data));
}

static void
export_response (GtkNativeDialog *d, int response, TwbWindow *self)
{
  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr (GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (d));
      g_autofree char *path = g_file_get_path (file);
      g_autoptr (GError) error = NULL;
      const TwbGraphScene *s = twb_graph_canvas_get_scene (self->canvas);
      if (path && s && twb_graph_export (s, path, FALSE, &error))
        {
          g_autofree char *msg = g_strdup_printf ("Exported the drawing to %s", path);
          twb_window_show_toast (self, msg);
        }
      else if (error)
        twb_window_show_toast (self, error->message);
    }
  g_object_unref (d);
}

static void
act_export (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  const char *fmt = g_variant_get_string (p, NULL);
  GtkFileChooserNative *d = gtk_file_chooser_native_new ("Export Drawing", GTK_WINDOW (self),
                                                         GTK_FILE_CHOOSER_ACTION_SAVE, "_Export",
                                                         "_Cancel");
  g_autofree char *title = twb_document_get_title (self->doc);
  g_autofree char *stem = g_str_has_suffix (title, ".json") ? g_strndup (title, strlen (title) - 5)
                                                             : g_strdup (title);
  g_autofree char *name = g_strdup_printf ("%s.%s", stem, fmt);
  gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (d), name);
  g_signal_connect (d, "response", G_CALLBACK (export_response), self);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (d));
}

static void
act_export_to (GSimpleAction *a, GVariant *p, gpointer data)
{
  /* Non-interactive export (scripts, tests): the path picks the format. */
  TwbWindow *self = data;
  g_autoptr (GError) error = NULL;
  const TwbGraphScene *s = twb_graph_canvas_get_scene (self->canvas);
  if (s && !twb_graph_export (s, g_variant_get_string (p, NULL), FALSE, &error))
    twb_window_show_toast (self, error->message);
}

static void
act_sequential (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  GtkWidget *d = twb_sequential_dialog_new (GTK_WINDOW (self), self->doc);
  gtk_window_present (GTK_WINDOW (d));
}

static void
act_show_panel (GSimpleAction *a, GVariant *p, gpointer data)
{
  twb_window_show_panel (TWB_WINDOW (data), g_variant_get_string (p, NULL));
}

static void
act_focus_search (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbWindow *self = data;
  gtk_widget_child_focus (GTK_WIDGET (self->palette), GTK_DIR_TAB_FORWARD);
}

static const GActionEntry win_entries[] = {
  { "open", act_open },
  { "open-path", act_open_path, "s" },
  { "save", act_save },
  { "save-as", act_save_as },
  { "close", act_close },
  { "export", act_export, "s" },
  { "export-to", act_export_to, "s" },
  { "sequential", act_sequential },
  { "show-panel", act_show_panel, "s" },
  { "focus-search", act_focus_search },
};

static const GActionEntry graph_entries[] = {
  { "undo", act_undo },
  { "redo", act_redo },
  { "copy", act_copy },
  { "cut", act_cut },
  { "paste", act_paste },
  { "duplicate", act_duplicate },
  { "delete", act_delete },
  { "select-all", act_select_all },
  { "zoom-fit", act_zoom_fit },
  { "zoom-in", act_zoom_in },
  { "zoom-out", act_zoom_out },
  { "auto-layout", act_auto_layout },
  { "collapse", act_collapse },
  { "collapse-named", act_collapse, "s" },
  { "expand", act_expand },
  { "expand-named", act_expand, "s" },
  { "snap-to-grid", NULL, NULL, "true", act_snap },
  { "output", act_output, NULL, "false" },
  { "edit-node", act_edit_node },
  { "next-node", act_next_node },
};

/* Files dropped on the window open as the Open dialog's do. */
static gboolean
files_dropped (GtkDropTarget *target, const GValue *value, double x, double y, TwbWindow *self)
{
  GSList *files = gdk_file_list_get_files (g_value_get_boxed (value));
  for (GSList *l = files; l; l = l->next)
    {
      g_autofree char *path = g_file_get_path (l->data);
      if (path)
        twb_window_open_file (self, path);
      else
        {
          g_autofree char *uri = g_file_get_uri (l->data);
          g_autofree char *msg = g_strdup_printf ("%s: not a local file", uri);
          twb_window_show_toast (self, msg);
        }
    }
  g_slist_free (files);
  return files != NULL;
}

/* ---- Shortcuts from anywhere in the window ------------------------------------------ */

/* GtkApplication's accelerators are matched at the window after the event
 * has bubbled up from the focused widget, and after the window's own key
 * bindings: GtkWindow takes F10 to focus its title bar (the menu bar key),
 * so "Step layer" never ran.  This controller runs them first, in the
 * capture phase, from the application's own table (app/twb-application-
 * actions.c): wherever the focus is, a documented shortcut does what it
 * says.  A disabled action lets the key through, so the commands a text
 * field also understands (Ctrl+Z, Delete …), disabled while one has the
 * focus (twb_window_update_actions), reach the field. */
static gboolean
swallow_key (GtkWidget *w, GVariant *args, gpointer data)
{
  return TRUE;
}

static void
build_app_shortcuts (TwbWindow *self)
{
  GtkApplication *app = gtk_window_get_application (GTK_WINDOW (self));
  if (app == NULL || self->app_shortcuts)
    return;
  GtkEventController *c = gtk_shortcut_controller_new ();
  gtk_event_controller_set_name (c, "twb-app-shortcuts");
  gtk_event_controller_set_propagation_phase (c, GTK_PHASE_CAPTURE);
  g_auto (GStrv) actions = gtk_application_list_action_descriptions (app);
  for (char **a = actions; a && *a; a++)
    {
      g_autofree char *name = NULL;
      g_autoptr (GVariant) target = NULL;
      if (!g_action_parse_detailed_name (*a, &name, &target, NULL))
        continue;
      g_auto (GStrv) accels = gtk_application_get_accels_for_action (app, *a);
      for (char **k = accels; k && *k; k++)
        {
          GtkShortcutTrigger *t = gtk_shortcut_trigger_parse_string (*k);
          if (t == NULL)
            continue;
          GtkShortcut *sc = gtk_shortcut_new (t, gtk_named_action_new (name));
          if (target)
            gtk_shortcut_set_arguments (sc, target);
          gtk_shortcut_controller_add_shortcut (GTK_SHORTCUT_CONTROLLER (c), sc);
        }
    }
  /* F10 is ours (Step layer) even while stepping is not possible: GTK's
   * meaning (focus the title bar) would take it otherwise. */
  gtk_shortcut_controller_add_shortcut (
    GTK_SHORTCUT_CONTROLLER (c),
    gtk_shortcut_new (gtk_keyval_trigger_new (GDK_KEY_F10, 0),
                      gtk_callback_action_new (swallow_key, NULL, NULL)));
  gtk_widget_add_controller (GTK_WIDGET (self), c);
  self->app_shortcuts = c;
}

static void
application_set (GObject *w, GParamSpec *p, TwbWindow *self)
{
  build_app_shortcuts (self);
}

void
twb_window_install_actions (TwbWindow *self)
{
  GtkDropTarget *drop = gtk_drop_target_new (GDK_TYPE_FILE_LIST, GDK_ACTION_COPY);
  g_signal_connect (drop, "drop", G_CALLBACK (files_dropped), self);
  gtk_widget_add_controller (GTK_WIDGET (self), GTK_EVENT_CONTROLLER (drop));
  g_action_map_add_action_entries (G_ACTION_MAP (self), win_entries, G_N_ELEMENTS (win_entries),
                                   self);
  self->graph_actions = g_simple_action_group_new ();
  g_action_map_add_action_entries (G_ACTION_MAP (self->graph_actions), graph_entries,
                                   G_N_ELEMENTS (graph_entries), self);
  /* View ▸ Show Minimap: the canvas's own property, toggled from the menu. */
  g_autoptr (GPropertyAction) minimap = g_property_action_new ("show-minimap", self->canvas, "show-minimap");
  g_action_map_add_action (G_ACTION_MAP (self->graph_actions), G_ACTION (minimap));
  gtk_widget_insert_action_group (GTK_WIDGET (self), "graph", G_ACTION_GROUP (self->graph_actions));
  g_signal_connect (self, "notify::focus-widget", G_CALLBACK (focus_changed), self);
  g_signal_connect (self, "notify::application", G_CALLBACK (application_set), self);
  build_app_shortcuts (self);
}
