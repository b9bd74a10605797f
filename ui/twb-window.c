/* twb-window.c — the main window: layout, document binding, status, issues. */
#define G_LOG_DOMAIN "twb-window"

#include "ui/twb-window-private.h"

#include "engine/file-kind.h"
#include "engine/fileutil.h"
#include "graph_editor/twb-minimap.h"
#include "ui/twb-focus.h"

#include <glib/gstdio.h>
#include <string.h>

G_DEFINE_FINAL_TYPE (TwbWindow, twb_window, GTK_TYPE_APPLICATION_WINDOW)

/* Autosave period: 30 s loses at most half a minute of work and costs one
 * small JSON write; TWB_AUTOSAVE_SECONDS overrides it (tests). */
#define AUTOSAVE_SECONDS 30

/* ---- Toast ---------------------------------------------------------------- */

/* A notice that has faded out leaves no invisible strip over the canvas
 * to swallow clicks: the revealer itself goes once its child is hidden
 * (a crossfade keeps its size), and comes back with the next notice. */
static void
toast_revealed (GtkRevealer *r, GParamSpec *p, TwbWindow *self)
{
  if (!gtk_revealer_get_child_revealed (r) && !gtk_revealer_get_reveal_child (r))
    gtk_widget_set_visible (GTK_WIDGET (r), FALSE);
}

static gboolean
toast_expired (gpointer data)
{
  TwbWindow *self = data;
  self->toast_timeout = 0;
  gtk_revealer_set_reveal_child (GTK_REVEALER (self->toast_revealer), FALSE);
  g_clear_pointer (&self->toast_text, g_free);
  return G_SOURCE_REMOVE;
}

void
twb_window_show_toast (TwbWindow *self, const char *text)
{
  g_free (self->toast_text);
  self->toast_text = g_strdup (text);
  gtk_label_set_text (GTK_LABEL (self->toast_label), text);
  gtk_widget_set_visible (self->toast_revealer, TRUE);
  gtk_revealer_set_reveal_child (GTK_REVEALER (self->toast_revealer), TRUE);
  /* Screen readers hear it as an alert. */
  gtk_accessible_update_property (GTK_ACCESSIBLE (self->toast_label),
                                  GTK_ACCESSIBLE_PROPERTY_DESCRIPTION, text, -1);
  g_clear_handle_id (&self->toast_timeout, g_source_remove);
  /* 6 s: long enough to read a two-line refusal. */
  self->toast_timeout = g_timeout_add_seconds (6, toast_expired, self);
}

const char *
twb_window_get_toast (TwbWindow *self)
{
  return self->toast_text;
}

static void
toast_close_clicked (GtkButton *b, TwbWindow *self)
{
  g_clear_handle_id (&self->toast_timeout, g_source_remove);
  toast_expired (self);
}

static void
canvas_message (TwbGraphCanvas *c, const char *text, TwbWindow *self)
{
  twb_window_show_toast (self, text);
}

/* ---- Title, status, issues --------------------------------------------------- */

static void
update_title (TwbWindow *self)
{
  if (self->doc == NULL)
    return;
  g_autofree char *title = twb_document_get_title (self->doc);
  gboolean dirty = twb_document_get_dirty (self->doc);
  g_autofree char *t = g_strdup_printf ("%s%s", dirty ? "• " : "", title);
  gtk_label_set_text (GTK_LABEL (self->title_label), t);
  g_autofree char *wt = g_strdup_printf ("%s — Tensor Workbench", t);
  gtk_window_set_title (GTK_WINDOW (self), wt);
  const char *path = twb_document_get_path (self->doc);
  /* The folder in full: a relative path ("mlp.json") would show as ".". */
  g_autofree char *abs = path ? g_canonicalize_filename (path, NULL) : NULL;
  g_autofree char *dir = abs ? g_path_get_dirname (abs) : NULL;
  g_autofree char *home = dir ? g_strdup (g_get_home_dir ()) : NULL;
  g_autofree char *shown = dir && g_str_has_prefix (dir, home) && strlen (home) > 1
                             ? g_strconcat ("~", dir + strlen (home), NULL)
                             : g_strdup (dir ? dir : "not saved");
  gtk_label_set_text (GTK_LABEL (self->subtitle_label), shown);
}

static void
update_status (TwbWindow *self)
{
  const TwbGraphScene *s = twb_graph_canvas_get_scene (self->canvas);
  if (s == NULL || self->doc == NULL)
    return;
  tw_graph *g = twb_document_get_graph (self->doc);
  g_autofree char *p = twb_format_count ((double) twb_document_param_count (self->doc));
  g_autofree char *f = twb_format_count (twb_document_flops (self->doc));
  g_free (self->status_text);
  self->status_text = g_strdup_printf (
    "%d nodes · %" G_GINT64_FORMAT " parameters (%s) · %s FLOPs per sample · shapes checked in %.2f ms",
    tw_graph_n_nodes (g), twb_document_param_count (self->doc), p, f,
    twb_document_last_infer_us (self->doc) / 1000.0);
  gtk_label_set_text (GTK_LABEL (self->status_counts), self->status_text);
  int ne = twb_window_count_issues (self);
  g_autofree char *e = ne ? g_strdup_printf ("%d error%s", ne, ne == 1 ? "" : "s")
                          : g_strdup ("no errors");
  gtk_label_set_text (GTK_LABEL (self->status_errors), e);
  if (ne)
    gtk_widget_add_css_class (self->status_errors, "error");
  else
    gtk_widget_remove_css_class (self->status_errors, "error");
}

static void
update_zoom_label (TwbGraphCanvas *c, TwbWindow *self)
{
  g_autofree char *z = g_strdup_printf ("%.0f %%", twb_graph_canvas_get_zoom (self->canvas) * 100);
  gtk_label_set_text (GTK_LABEL (self->status_zoom), z);
}

static void
rebuild_issues (TwbWindow *self)
{
  GtkWidget *child;
  /* Delete with an issue focused removes nodes inside the key event: the
   * focused row is let go safely and the same issue focused again. */
  g_autofree char *focus_key = NULL;
  for (child = gtk_widget_get_first_child (self->issues_list); child && focus_key == NULL;
       child = gtk_widget_get_next_sibling (child))
    focus_key = twb_focus_save (child);
  while ((child = gtk_widget_get_first_child (self->issues_list)))
    gtk_list_box_remove (GTK_LIST_BOX (self->issues_list), child);
  const GArray *d = self->doc ? twb_document_get_diagnostics (self->doc) : NULL;
  int n = d ? (int) d->len : 0;
  /* The pipeline placement's error after the shapes' (a run on stages would stop with it). */
  tw_diag stage_diag = { 0 };
  if (self->doc)
    stage_diag.message = (char *) twb_document_get_stage_error (self->doc, &stage_diag.node_id);
  int total = n + (stage_diag.message != NULL);
  for (int i = 0; i < total; i++)
    {
      const tw_diag *dg = i < n ? &g_array_index (d, tw_diag, i) : &stage_diag;
      GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 8);
      GtkWidget *icon = gtk_image_new_from_icon_name ("dialog-error-symbolic");
      gtk_widget_add_css_class (icon, "error");
      gtk_widget_set_valign (icon, GTK_ALIGN_START);
      /* A graph-wide problem (an output naming no node) has no node to show. */
      g_autofree char *markup =
        dg->node_id ? g_markup_printf_escaped ("<b>%s</b>: %s", dg->node_id, dg->message)
                    : g_markup_escape_text (dg->message, -1);
      GtkWidget *label = gtk_label_new (NULL);
      gtk_label_set_markup (GTK_LABEL (label), markup);
      gtk_label_set_wrap (GTK_LABEL (label), TRUE);
      gtk_label_set_wrap_mode (GTK_LABEL (label), PANGO_WRAP_WORD_CHAR);
      gtk_label_set_xalign (GTK_LABEL (label), 0);
      gtk_widget_set_hexpand (label, TRUE);
      gtk_box_append (GTK_BOX (box), icon);
      gtk_box_append (GTK_BOX (box), label);
      GtkWidget *row = gtk_list_box_row_new ();
      gtk_list_box_row_set_child (GTK_LIST_BOX_ROW (row), box);
      g_object_set_data_full (G_OBJECT (row), "node", g_strdup (dg->node_id), g_free);
      g_autofree char *key = g_strdup_printf ("%s: %s", dg->node_id ? dg->node_id : "",
                                              dg->message);
      twb_focus_set_key (row, key);
      g_autofree char *acc =
        dg->node_id ? g_strdup_printf ("Error in node %s: %s. Activate to select the node",
                                       dg->node_id, dg->message)
                    : g_strdup_printf ("Error in the graph: %s", dg->message);
      gtk_accessible_update_property (GTK_ACCESSIBLE (row), GTK_ACCESSIBLE_PROPERTY_LABEL, acc, -1);
      gtk_list_box_append (GTK_LIST_BOX (self->issues_list), row);
    }
  n = total;
  if (n == 0)
    {
      GtkWidget *l = gtk_label_new ("No issues: every shape fits.");
      gtk_widget_add_css_class (l, "dim-label");
      GtkWidget *row = gtk_list_box_row_new ();
      gtk_list_box_row_set_child (GTK_LIST_BOX_ROW (row), l);
      gtk_list_box_row_set_activatable (GTK_LIST_BOX_ROW (row), FALSE);
      gtk_widget_set_focusable (row, FALSE);
      gtk_list_box_append (GTK_LIST_BOX (self->issues_list), row);
    }
  g_autofree char *h = n ? g_strdup_printf ("Issues (%d)", n) : g_strdup ("Issues");
  gtk_label_set_text (GTK_LABEL (self->issues_heading), h);
  twb_focus_restore (self->issues_list, focus_key);
}

int
twb_window_count_issues (TwbWindow *self)
{
  const GArray *d = self->doc ? twb_document_get_diagnostics (self->doc) : NULL;
  gboolean stage = self->doc && twb_document_get_stage_error (self->doc, NULL) != NULL;
  return (d ? (int) d->len : 0) + stage;
}

static void
issue_activated (GtkListBox *box, GtkListBoxRow *row, TwbWindow *self)
{
  const char *id = g_object_get_data (G_OBJECT (row), "node");
  if (id == NULL)
    return;
  g_autofree char *copy = g_strdup (id);
  twb_graph_canvas_reveal_node (self->canvas, copy);
  gtk_widget_grab_focus (GTK_WIDGET (self->canvas));
}

void
twb_window_activate_issue (TwbWindow *self, int i)
{
  GtkListBoxRow *row = gtk_list_box_get_row_at_index (GTK_LIST_BOX (self->issues_list), i);
  if (row)
    issue_activated (GTK_LIST_BOX (self->issues_list), row, self);
}

const char *
twb_window_get_status_text (TwbWindow *self)
{
  return self->status_text;
}

static void
doc_changed (TwbDocument *doc, guint flags, TwbWindow *self)
{
  if (flags & (TWB_CHANGE_SHAPES | TWB_CHANGE_STRUCTURE | TWB_CHANGE_ATTRS | TWB_CHANGE_FILE
               | TWB_CHANGE_STAGES))
    {
      update_status (self);
      rebuild_issues (self);
    }
  if (flags & (TWB_CHANGE_SHAPES | TWB_CHANGE_STRUCTURE | TWB_CHANGE_ATTRS | TWB_CHANGE_FILE))
    twb_window_cluster_update_buckets (self);
  update_title (self);
  twb_window_update_actions (self);
  twb_window_run_doc_changed (self, flags);
  if (flags & TWB_CHANGE_FILE)
    twb_window_whatif_doc_changed (self);
}

static void
doc_selection_changed (TwbDocument *doc, TwbWindow *self)
{
  twb_window_update_actions (self);
  twb_window_profiler_selection_changed (self);
}

static void
doc_notify (TwbDocument *doc, GParamSpec *p, TwbWindow *self)
{
  update_title (self);
  twb_window_update_actions (self);
  twb_window_whatif_doc_changed (self);
}

void
twb_window_set_document (TwbWindow *self, TwbDocument *doc)
{
  if (self->doc)
    {
      g_clear_signal_handler (&self->changed_id, self->doc);
      g_clear_signal_handler (&self->selection_id, self->doc);
      g_clear_signal_handler (&self->notify_id, self->doc);
      g_clear_object (&self->doc);
    }
  self->doc = doc ? g_object_ref (doc) : twb_document_new ();
  self->changed_id = g_signal_connect (self->doc, "changed", G_CALLBACK (doc_changed), self);
  self->selection_id = g_signal_connect (self->doc, "selection-changed",
                                         G_CALLBACK (doc_selection_changed), self);
  self->notify_id = g_signal_connect (self->doc, "notify", G_CALLBACK (doc_notify), self);
  twb_window_cluster_doc_set (self);
  twb_graph_canvas_set_document (self->canvas, self->doc);
  twb_inspector_set_document (self->inspector, self->doc);
  update_title (self);
  update_status (self);
  rebuild_issues (self);
  twb_window_cluster_update_buckets (self);
  twb_window_update_actions (self);
  twb_window_run_doc_changed (self, TWB_CHANGE_FILE | TWB_CHANGE_STRUCTURE);
  twb_window_whatif_doc_changed (self);
}

TwbDocument *
twb_window_get_document (TwbWindow *self)
{
  return self->doc;
}

TwbGraphCanvas *
twb_window_get_canvas (TwbWindow *self)
{
  return self->canvas;
}

TwbInspector *
twb_window_get_inspector (TwbWindow *self)
{
  return self->inspector;
}

TwbPalette *
twb_window_get_palette (TwbWindow *self)
{
  return self->palette;
}

const char *
twb_window_get_clipboard_text (TwbWindow *self)
{
  return self->clipboard;
}

/* ---- Panels ------------------------------------------------------------------- */

void
twb_window_show_panel (TwbWindow *self, const char *name)
{
  if (gtk_stack_get_child_by_name (GTK_STACK (self->panel_stack), name))
    gtk_stack_set_visible_child_name (GTK_STACK (self->panel_stack), name);
}

const char *
twb_window_get_panel (TwbWindow *self)
{
  return gtk_stack_get_visible_child_name (GTK_STACK (self->panel_stack));
}

/* ---- Files -------------------------------------------------------------------- */

static gboolean
doc_is_pristine (TwbDocument *doc)
{
  return doc && twb_document_get_path (doc) == NULL && !twb_document_get_dirty (doc)
         && tw_graph_n_nodes (twb_document_get_graph (doc)) == 0;
}

void
twb_window_show_trace_title (TwbWindow *self, const char *path)
{
  /* A window holding no model is named after the trace it shows. */
  if (!doc_is_pristine (self->doc))
    return;
  g_autofree char *base = g_path_get_basename (path);
  g_autofree char *name = g_filename_display_name (base);
  g_autofree char *abs = g_canonicalize_filename (path, NULL);
  g_autofree char *dir = g_path_get_dirname (abs);
  g_autofree char *wt = g_strdup_printf ("%s — Tensor Workbench", name);
  gtk_label_set_text (GTK_LABEL (self->title_label), name);
  gtk_label_set_text (GTK_LABEL (self->subtitle_label), dir);
  gtk_window_set_title (GTK_WINDOW (self), wt);
}


void
twb_window_open_paths (TwbWindow *self, const char *const *paths)
{
  g_autoptr (GPtrArray) traces = g_ptr_array_new ();
  for (const char *const *p = paths; p && *p; p++)
    {
      if (tw_file_kind_sniff_openable (*p, NULL) == TW_FILE_KIND_TRACE)
        g_ptr_array_add (traces, (gpointer) *p);
      else
        twb_window_open_file (self, *p);
    }
  if (traces->len == 0)
    return;
  g_ptr_array_add (traces, NULL);
  twb_window_open_traces (self, (const char *const *) traces->pdata);
}

/* Same file: equal GFiles, else the same file id (device and inode: a
 * symlink or another spelling of the path). */
static gboolean
same_file (GFile *a, GFile *b)
{
  if (g_file_equal (a, b))
    return TRUE;
  g_autoptr (GFileInfo) ia = g_file_query_info (a, G_FILE_ATTRIBUTE_ID_FILE, 0, NULL, NULL);
  g_autoptr (GFileInfo) ib = g_file_query_info (b, G_FILE_ATTRIBUTE_ID_FILE, 0, NULL, NULL);
  const char *x = ia ? g_file_info_get_attribute_string (ia, G_FILE_ATTRIBUTE_ID_FILE) : NULL;
  const char *y = ib ? g_file_info_get_attribute_string (ib, G_FILE_ATTRIBUTE_ID_FILE) : NULL;
  return x && y && strcmp (x, y) == 0;
}

TwbWindow *
twb_window_find_for_file (GtkApplication *app, GFile *file)
{
  g_return_val_if_fail (GTK_IS_APPLICATION (app), NULL);
  for (GList *l = gtk_application_get_windows (app); l; l = l->next)
    {
      if (!TWB_IS_WINDOW (l->data))
        continue;
      TwbDocument *doc = TWB_WINDOW (l->data)->doc;
      const char *p = doc ? twb_document_get_path (doc) : NULL;
      if (p == NULL)
        continue;
      g_autoptr (GFile) f = g_file_new_for_path (p);
      if (same_file (f, file))
        return TWB_WINDOW (l->data);
    }
  return NULL;
}

TwbWindow *
twb_window_open_file (TwbWindow *self, const char *path)
{
  g_autoptr (GError) error = NULL;
  switch (tw_file_kind_sniff_openable (path, &error))
    {
    case TW_FILE_KIND_ONNX:
      /* Imported (on a worker): into this window or a new one. */
      twb_window_import_onnx (self, path);
      return self;
    case TW_FILE_KIND_TRACE:
      twb_window_open_trace (self, path);
      return self;
    case TW_FILE_KIND_MODEL:
      break;
    default:
      twb_window_show_toast (self, error->message);
      return NULL;
    }
  GtkApplication *app = gtk_window_get_application (GTK_WINDOW (self));
  g_autoptr (GFile) wanted = g_file_new_for_path (path);
  TwbWindow *open = app ? twb_window_find_for_file (app, wanted) : NULL;
  if (open)
    {
      /* Already open: show that window rather than a second copy. */
      gtk_window_present (GTK_WINDOW (open));
      return open;
    }
  /* A file without positions is laid out for this window's canvas. */
  tw_layout_view view = TW_LAYOUT_VIEW_DEFAULT;
  gboolean known = self->doc && twb_document_view_is_known (self->doc);
  if (known)
    twb_document_get_view (self->doc, &view);
  g_autoptr (TwbDocument) doc =
    twb_document_new_from_file_in_view (path, known ? &view : NULL, &error);
  if (doc == NULL)
    {
      twb_window_show_toast (self, error->message);
      return NULL;
    }
  g_autoptr (GFile) file = g_file_new_for_path (path);
  g_autofree char *uri = g_file_get_uri (file);
  GtkRecentData rd = { .display_name = NULL, .mime_type = (char *) "application/json",
                       .app_name = (char *) "twb", .app_exec = (char *) "twb %f" };
  gtk_recent_manager_add_full (gtk_recent_manager_get_default (), uri, &rd);
  if (doc_is_pristine (self->doc))
    {
      twb_window_set_document (self, doc);
      return self;
    }
  TwbWindow *w = twb_window_new (gtk_window_get_application (GTK_WINDOW (self)), doc);
  gtk_window_present (GTK_WINDOW (w));
  return w;
}

gboolean
twb_window_save_to (TwbWindow *self, const char *path, GError **error)
{
  /* An imported model's weights first: a model file never names weights
   * that are not there. */
  if (!twb_window_save_imported_weights (self, path, error)
      || !twb_document_save (self->doc, path, error))
    return FALSE;
  g_autoptr (GFile) file = g_file_new_for_path (path);
  g_autofree char *uri = g_file_get_uri (file);
  GtkRecentData rd = { .mime_type = (char *) "application/json", .app_name = (char *) "twb",
                       .app_exec = (char *) "twb %f" };
  gtk_recent_manager_add_full (gtk_recent_manager_get_default (), uri, &rd);
  g_autofree char *base = g_path_get_basename (path);
  g_autofree char *msg = g_strdup_printf ("Saved %s", base);
  twb_window_show_toast (self, msg);
  return TRUE;
}

void
twb_window_rebuild_recent_menu (TwbWindow *self)
{
  g_menu_remove_all (self->recent_menu);
  GList *items = gtk_recent_manager_get_items (gtk_recent_manager_get_default ());
  int n = 0;
  for (GList *l = items; l && n < 10; l = l->next)
    {
      GtkRecentInfo *info = l->data;
      if (!gtk_recent_info_has_application (info, "twb") || !gtk_recent_info_is_local (info))
        continue;
      g_autofree char *path = g_filename_from_uri (gtk_recent_info_get_uri (info), NULL, NULL);
      if (path == NULL || !g_file_test (path, G_FILE_TEST_EXISTS))
        continue;
      g_autofree char *base = g_path_get_basename (path);
      g_autofree char *action = g_strdup_printf ("win.open-path");
      GMenuItem *item = g_menu_item_new (base, NULL);
      g_menu_item_set_action_and_target_value (item, action, g_variant_new_string (path));
      g_menu_append_item (self->recent_menu, item);
      g_object_unref (item);
      n++;
    }
  g_list_free_full (items, (GDestroyNotify) gtk_recent_info_unref);
  if (n == 0)
    {
      GMenuItem *item = g_menu_item_new ("No recent models", "win.none");
      g_menu_append_item (self->recent_menu, item);
      g_object_unref (item);
    }
}

static void
recent_changed (GtkRecentManager *m, TwbWindow *self)
{
  twb_window_rebuild_recent_menu (self);
}

static void
build_template_menu (TwbWindow *self)
{
  const char *assets = g_getenv ("TWB_ASSETS_DIR");
  g_autofree char *dir = g_build_filename (assets ? assets : TWB_ASSETS_DIR, "models", NULL);
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  const char *name;
  while (d && (name = g_dir_read_name (d)))
    if (g_str_has_suffix (name, ".json"))
      g_ptr_array_add (names, g_strdup (name));
  g_ptr_array_sort (names, (GCompareFunc) g_strcmp0);
  for (guint i = 0; i < names->len; i++)
    {
      const char *n = g_ptr_array_index (names, i);
      g_autofree char *label = g_strndup (n, strlen (n) - 5);
      g_autofree char *path = g_build_filename (dir, n, NULL);
      GMenuItem *item = g_menu_item_new (label, NULL);
      g_menu_item_set_action_and_target_value (item, "app.new-from-template",
                                               g_variant_new_string (path));
      g_menu_append_item (self->template_menu, item);
      g_object_unref (item);
    }
}

/* ---- Autosave and close ------------------------------------------------------- */

static gboolean
autosave_tick (gpointer data)
{
  TwbWindow *self = data;
  g_autoptr (GError) error = NULL;
  if (self->doc && twb_document_get_dirty (self->doc)
      && !twb_document_autosave (self->doc, &error))
    g_warning ("autosave failed: %s", error->message);
  return G_SOURCE_CONTINUE;
}

void
twb_window_close_now (TwbWindow *self)
{
  self->close_confirmed = TRUE;
  gtk_window_close (GTK_WINDOW (self));
}

static void
unsaved_response (GtkDialog *dialog, int response, TwbWindow *self)
{
  /* The dialog outlives this handler (its "response" emission holds a
   * reference) while Discard and Save destroy and finalize the window in it.
   * GTK 4.8 keeps a destroyed dialog's transient parent and disconnects from
   * it only in finalize: untie the dialog from the window first, or that
   * finalize runs on the freed window. */
  gtk_window_set_transient_for (GTK_WINDOW (dialog), NULL);
  gtk_window_destroy (GTK_WINDOW (dialog));
  if (response == GTK_RESPONSE_REJECT)
    twb_window_close_now (self);
  else if (response == GTK_RESPONSE_ACCEPT)
    {
      const char *path = twb_document_get_path (self->doc);
      if (path == NULL)
        {
          twb_window_save_as (self, TRUE);
          return;
        }
      g_autoptr (GError) error = NULL;
      if (twb_window_save_to (self, path, &error))
        twb_window_close_now (self);
      else
        twb_window_show_toast (self, error->message);
    }
}

static gboolean
close_request (GtkWindow *window)
{
  TwbWindow *self = TWB_WINDOW (window);
  if (twb_window_run_close_request (self))
    return TRUE;
  if (!self->close_confirmed && self->doc && twb_document_get_dirty (self->doc))
    {
      g_autofree char *title = twb_document_get_title (self->doc);
      G_GNUC_BEGIN_IGNORE_DEPRECATIONS
      GtkWidget *d = gtk_message_dialog_new (window, GTK_DIALOG_MODAL | GTK_DIALOG_DESTROY_WITH_PARENT,
                                             GTK_MESSAGE_QUESTION, GTK_BUTTONS_NONE,
                                             "Save changes to “%s” before closing?", title);
      gtk_message_dialog_format_secondary_text (GTK_MESSAGE_DIALOG (d),
                                                "If you don't save, your changes will be lost.");
      gtk_dialog_add_buttons (GTK_DIALOG (d), "_Cancel", GTK_RESPONSE_CANCEL, "_Discard",
                              GTK_RESPONSE_REJECT, "_Save", GTK_RESPONSE_ACCEPT, NULL);
      gtk_dialog_set_default_response (GTK_DIALOG (d), GTK_RESPONSE_ACCEPT);
      G_GNUC_END_IGNORE_DEPRECATIONS
      g_signal_connect (d, "response", G_CALLBACK (unsaved_response), self);
      gtk_window_present (GTK_WINDOW (d));
      return TRUE;
    }
  if (self->doc)
    twb_document_discard_recovery (self->doc);
  return GTK_WINDOW_CLASS (twb_window_parent_class)->close_request (window);
}

/* ---- Screenshot ------------------------------------------------------------------ */

/* The window's picture at width x height.  When the window could not get
 * that size (a screen smaller than the picture asked for), its header bar
 * and content are laid out at the asked size for this one snapshot: the
 * picture shows what a window of that size shows. */
static GskRenderNode *
snapshot_at (TwbWindow *self, int width, int height)
{
  GtkWidget *w = GTK_WIDGET (self);
  if (width == gtk_widget_get_width (w) && height == gtk_widget_get_height (w))
    {
      GdkPaintable *paintable = gtk_widget_paintable_new (w);
      GtkSnapshot *snap = gtk_snapshot_new ();
      gdk_paintable_snapshot (paintable, snap, width, height);
      g_object_unref (paintable);
      GskRenderNode *node = gtk_snapshot_free_to_node (snap);
      /* A window between a queued resize and its layout has no picture of
       * its own yet: draw its parts as below. */
      if (node)
        return node;
    }
  GtkWidget *bar = gtk_window_get_titlebar (GTK_WINDOW (self));
  GtkWidget *child = gtk_window_get_child (GTK_WINDOW (self));
  int bar_h = 0;
  if (bar)
    gtk_widget_measure (bar, GTK_ORIENTATION_VERTICAL, width, NULL, &bar_h, NULL, NULL);
  GtkSnapshot *snap = gtk_snapshot_new ();
  /* The theme's window background (light or dark) under what has none. */
  GdkRGBA bg = { 0.98f, 0.98f, 0.98f, 1.0f };
  G_GNUC_BEGIN_IGNORE_DEPRECATIONS
  GtkStyleContext *sc = gtk_widget_get_style_context (w);
  if (!gtk_style_context_lookup_color (sc, "window_bg_color", &bg))
    gtk_style_context_lookup_color (sc, "theme_bg_color", &bg);
  G_GNUC_END_IGNORE_DEPRECATIONS
  gtk_snapshot_append_color (snap, &bg, &GRAPHENE_RECT_INIT (0, 0, width, height));
  if (bar)
    {
      gtk_widget_size_allocate (bar, &(GtkAllocation) { 0, 0, width, bar_h }, -1);
      gtk_widget_snapshot_child (w, bar, snap);
    }
  if (child)
    {
      /* Allocate, fit the graph to the canvas's new size (which queues a new
       * allocation), and allocate again so the snapshot sees a clean layout. */
      GtkAllocation a = { 0, bar_h, width, height - bar_h };
      gtk_widget_size_allocate (child, &a, -1);
      twb_graph_canvas_zoom_to_fit (self->canvas);
      gtk_widget_size_allocate (child, &a, -1);
      gtk_widget_snapshot_child (w, child, snap);   /* at its allocation's offset */
    }
  gtk_widget_queue_resize (w);   /* back to the real size on the next frame */
  return gtk_snapshot_free_to_node (snap);
}

gboolean
twb_window_save_screenshot_sized (TwbWindow *self, const char *path, int width, int height,
                                  GError **error)
{
  GskRenderNode *node = snapshot_at (self, width, height);
  if (node == NULL)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s: the window drew nothing", path);
      return FALSE;
    }
  GskRenderer *renderer = gtk_native_get_renderer (GTK_NATIVE (self));
  GdkTexture *tex = gsk_renderer_render_texture (renderer, node,
                                                 &GRAPHENE_RECT_INIT (0, 0, width, height));
  gsk_render_node_unref (node);
  /* Through the engine's atomic save: GDK writes the temporary by name. */
  g_autoptr (tw_save) save = tw_save_begin (path, error);
  gboolean ok = save != NULL && gdk_texture_save_to_png (tex, tw_save_temp_path (save));
  g_object_unref (tex);
  if (save == NULL)
    return FALSE;
  if (!ok)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s: cannot write the screenshot", path);
      return FALSE;
    }
  return tw_save_commit (g_steal_pointer (&save), error);
}

gboolean
twb_window_save_screenshot (TwbWindow *self, const char *path, GError **error)
{
  GtkWidget *w = GTK_WIDGET (self);
  return twb_window_save_screenshot_sized (self, path, gtk_widget_get_width (w),
                                           gtk_widget_get_height (w), error);
}

/* ---- Misc --------------------------------------------------------------------- */

static void
palette_op_activated (TwbPalette *p, const char *op, TwbWindow *self)
{
  /* Keyboard path for the palette: after the selected node, fed by it, or
   * in free space near the centre of the view. */
  double x, y, w, h;
  twb_graph_canvas_get_visible (self->canvas, &x, &y, &w, &h);
  g_autoptr (GError) error = NULL;
  const char *id = twb_document_insert_node (self->doc, op, x + w / 2 - 80, y + h / 2 - 32, &error);
  if (id == NULL)
    {
      twb_window_show_toast (self, error->message);
      return;
    }
  twb_graph_canvas_reveal_node (self->canvas, id);
  gtk_widget_grab_focus (GTK_WIDGET (self->canvas));
}

static void
canvas_activate_node (TwbGraphCanvas *c, const char *id, TwbWindow *self)
{
  twb_inspector_focus_node (self->inspector);
}

static void
twb_window_dispose (GObject *object)
{
  TwbWindow *self = TWB_WINDOW (object);
  g_clear_handle_id (&self->toast_timeout, g_source_remove);
  g_clear_handle_id (&self->autosave_timeout, g_source_remove);
  g_clear_signal_handler (&self->recent_changed_id, gtk_recent_manager_get_default ());
  twb_window_run_dispose (self);
  twb_window_profiler_dispose (self);
  twb_window_onnx_dispose (self);
  twb_window_whatif_dispose (self);
  if (self->doc)
    {
      g_clear_signal_handler (&self->changed_id, self->doc);
      g_clear_signal_handler (&self->selection_id, self->doc);
      g_clear_signal_handler (&self->notify_id, self->doc);
      g_clear_object (&self->doc);
    }
  g_clear_object (&self->graph_actions);
  gtk_widget_dispose_template (GTK_WIDGET (self), TWB_TYPE_WINDOW);
  G_OBJECT_CLASS (twb_window_parent_class)->dispose (object);
}

static void
twb_window_finalize (GObject *object)
{
  TwbWindow *self = TWB_WINDOW (object);
  g_free (self->clipboard);
  g_free (self->toast_text);
  g_free (self->status_text);
  G_OBJECT_CLASS (twb_window_parent_class)->finalize (object);
}

static void
twb_window_class_init (TwbWindowClass *klass)
{
  GObjectClass *oc = G_OBJECT_CLASS (klass);
  GtkWidgetClass *wc = GTK_WIDGET_CLASS (klass);
  oc->dispose = twb_window_dispose;
  oc->finalize = twb_window_finalize;
  GTK_WINDOW_CLASS (klass)->close_request = close_request;

  g_type_ensure (TWB_TYPE_PALETTE);
  g_type_ensure (TWB_TYPE_GRAPH_CANVAS);
  g_type_ensure (TWB_TYPE_INSPECTOR);
  gtk_widget_class_set_template_from_resource (wc, "/org/tensorworkbench/Twb/ui/twb-window.ui");
  gtk_widget_class_bind_template_child (wc, TwbWindow, title_label);
  gtk_widget_class_bind_template_child (wc, TwbWindow, subtitle_label);
  gtk_widget_class_bind_template_child (wc, TwbWindow, toast_revealer);
  gtk_widget_class_bind_template_child (wc, TwbWindow, toast_label);
  gtk_widget_class_bind_template_child (wc, TwbWindow, toast_close);
  gtk_widget_class_bind_template_child (wc, TwbWindow, palette);
  gtk_widget_class_bind_template_child (wc, TwbWindow, canvas);
  gtk_widget_class_bind_template_child (wc, TwbWindow, minimap_frame);
  gtk_widget_class_bind_template_child (wc, TwbWindow, inspector);
  gtk_widget_class_bind_template_child (wc, TwbWindow, issues_list);
  gtk_widget_class_bind_template_child (wc, TwbWindow, issues_heading);
  gtk_widget_class_bind_template_child (wc, TwbWindow, panel_stack);
  gtk_widget_class_bind_template_child (wc, TwbWindow, status_counts);
  gtk_widget_class_bind_template_child (wc, TwbWindow, status_errors);
  gtk_widget_class_bind_template_child (wc, TwbWindow, status_zoom);
  gtk_widget_class_bind_template_child (wc, TwbWindow, template_menu);
  gtk_widget_class_bind_template_child (wc, TwbWindow, recent_menu);
  gtk_widget_class_bind_template_child (wc, TwbWindow, run_box);
  gtk_widget_class_bind_template_child (wc, TwbWindow, training_page);
  gtk_widget_class_bind_template_child (wc, TwbWindow, debugger_page);
  gtk_widget_class_bind_template_child (wc, TwbWindow, compiled_page);
  gtk_widget_class_bind_template_child (wc, TwbWindow, profiler_page);
  gtk_widget_class_bind_template_child (wc, TwbWindow, whatif_page);
  gtk_widget_class_bind_template_child (wc, TwbWindow, vpaned);
  gtk_widget_class_bind_template_child (wc, TwbWindow, status_run);
}

static void
twb_window_init (TwbWindow *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
  gtk_accessible_update_property (GTK_ACCESSIBLE (self->canvas), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  "Graph canvas", -1);
  GtkWidget *minimap = twb_minimap_new (self->canvas);
  gtk_widget_set_size_request (minimap, 200, 120);
  gtk_frame_set_child (GTK_FRAME (self->minimap_frame), minimap);

  g_signal_connect (self->toast_close, "clicked", G_CALLBACK (toast_close_clicked), self);
  g_signal_connect (self->toast_revealer, "notify::child-revealed", G_CALLBACK (toast_revealed),
                    self);
  g_signal_connect (self->canvas, "message", G_CALLBACK (canvas_message), self);
  g_signal_connect (self->canvas, "activate-node", G_CALLBACK (canvas_activate_node), self);
  g_signal_connect (self->canvas, "view-changed", G_CALLBACK (update_zoom_label), self);
  g_signal_connect (self->palette, "op-activated", G_CALLBACK (palette_op_activated), self);
  g_signal_connect (self->issues_list, "row-activated", G_CALLBACK (issue_activated), self);

  build_template_menu (self);
  twb_window_rebuild_recent_menu (self);
  self->recent_changed_id = g_signal_connect (gtk_recent_manager_get_default (), "changed",
                                              G_CALLBACK (recent_changed), self);
  twb_window_install_actions (self);
  twb_window_run_init (self);
  twb_window_profiler_init (self);
  twb_window_onnx_init (self);
  twb_window_whatif_init (self);

  const char *env = g_getenv ("TWB_AUTOSAVE_SECONDS");
  int period = env ? atoi (env) : AUTOSAVE_SECONDS;
  if (period > 0)
    self->autosave_timeout = g_timeout_add_seconds (period, autosave_tick, self);
}

TwbWindow *
twb_window_new (GtkApplication *app, TwbDocument *doc)
{
  TwbWindow *self = g_object_new (TWB_TYPE_WINDOW, "application", app, NULL);
  twb_window_set_document (self, doc);
  return self;
}
