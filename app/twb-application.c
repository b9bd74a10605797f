/* twb-application.c — GtkApplication subclass and the GUI entry point. */
#define G_LOG_DOMAIN "twb-application"

#include "app/twb-application.h"
#include "engine/file-kind.h"
#include "engine/fileutil.h"
#include "engine/number.h"
#include "ui/twb-run.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>

struct _TwbApplication
{
  GtkApplication parent_instance;
  GDBusProxy *portal;
  /* Screenshot mode (--screenshot). */
  char *shot_path;
  char *shot_model;
  char **shot_traces;           /* the traces given after it, read together with it */
  char *shot_panel;
  char *shot_select;
  int shot_w, shot_h;
  int shot_status;
  TwbWindow *shot_window;
  int shot_ticks;
  char **shot_do;            /* --do: detailed action names, in order */
  int shot_do_next;
  int shot_settle_frame;     /* the frame count when the last action finished */
  gint64 shot_settle_time;
  guint shot_timer;
  gboolean shot_ready;       /* the actions are done: the picture in a few frames */
  int shot_ready_frames;
  gboolean shot_done;
  gint64 shot_deadline;      /* monotonic µs: an action that takes longer fails */
  gboolean shot_waited;      /* for a file being read (an ONNX import) */
  char *shot_theme;
};

/* How long one --do action may take (a training run to its end). */
#define SHOT_ACTION_TIMEOUT_US (600 * G_USEC_PER_SEC)

G_DEFINE_FINAL_TYPE (TwbApplication, twb_application, GTK_TYPE_APPLICATION)

gboolean
twb_gui_have_display (void)
{
  const char *x = g_getenv ("DISPLAY"), *w = g_getenv ("WAYLAND_DISPLAY");
  return (x && *x) || (w && *w);
}

void
twb_application_load_style (void)
{
  static gboolean done;
  GdkDisplay *display = gdk_display_get_default ();
  if (done || display == NULL)
    return;
  done = TRUE;
  GtkCssProvider *css = gtk_css_provider_new ();
  gtk_css_provider_load_from_resource (css, "/org/tensorworkbench/Twb/style.css");
  gtk_style_context_add_provider_for_display (display, GTK_STYLE_PROVIDER (css),
                                              GTK_STYLE_PROVIDER_PRIORITY_APPLICATION);
  g_object_unref (css);
  gtk_icon_theme_add_resource_path (gtk_icon_theme_get_for_display (display),
                                    "/org/tensorworkbench/Twb/icons");
}

/* ---- Light / dark from the system ------------------------------------------- */

static void
apply_color_scheme (guint32 scheme)
{
  /* freedesktop appearance: 0 no preference, 1 prefer dark, 2 prefer light. */
  g_object_set (gtk_settings_get_default (), "gtk-application-prefer-dark-theme", scheme == 1,
                NULL);
}

static void
portal_signal (GDBusProxy *proxy, const char *sender, const char *signal, GVariant *params,
               gpointer data)
{
  const char *ns, *key;
  g_autoptr (GVariant) value = NULL;
  if (g_strcmp0 (signal, "SettingChanged") != 0)
    return;
  g_variant_get (params, "(&s&sv)", &ns, &key, &value);
  if (g_strcmp0 (ns, "org.freedesktop.appearance") == 0 && g_strcmp0 (key, "color-scheme") == 0
      && g_variant_is_of_type (value, G_VARIANT_TYPE_UINT32))
    apply_color_scheme (g_variant_get_uint32 (value));
}

static void
portal_read_done (GObject *src, GAsyncResult *res, gpointer data)
{
  g_autoptr (GVariant) ret = g_dbus_proxy_call_finish (G_DBUS_PROXY (src), res, NULL);
  if (ret == NULL)
    return;
  g_autoptr (GVariant) outer = NULL;
  g_variant_get (ret, "(v)", &outer);
  /* Read returns the value wrapped once more (v of v) on older portals. */
  while (outer && g_variant_is_of_type (outer, G_VARIANT_TYPE_VARIANT))
    {
      GVariant *inner = g_variant_get_variant (outer);
      g_variant_unref (outer);
      outer = inner;
    }
  if (outer && g_variant_is_of_type (outer, G_VARIANT_TYPE_UINT32))
    apply_color_scheme (g_variant_get_uint32 (outer));
}

static void
portal_ready (GObject *src, GAsyncResult *res, gpointer data)
{
  TwbApplication *self = data;
  GDBusProxy *proxy = g_dbus_proxy_new_for_bus_finish (res, NULL);
  if (proxy == NULL)
    {
      g_object_unref (self);
      return;
    }
  self->portal = proxy;
  g_signal_connect (proxy, "g-signal", G_CALLBACK (portal_signal), self);
  g_dbus_proxy_call (proxy, "Read", g_variant_new ("(ss)", "org.freedesktop.appearance", "color-scheme"),
                     G_DBUS_CALL_FLAGS_NONE, 2000, NULL, portal_read_done, self);
  g_object_unref (self);
}

static void
follow_system_style (TwbApplication *self)
{
  const char *force = g_getenv ("TWB_COLOR_SCHEME");
  if (force)
    {
      apply_color_scheme (strcmp (force, "dark") == 0 ? 1 : 2);
      return;
    }
  g_dbus_proxy_new_for_bus (G_BUS_TYPE_SESSION, G_DBUS_PROXY_FLAGS_DO_NOT_AUTO_START, NULL,
                            "org.freedesktop.portal.Desktop", "/org/freedesktop/portal/desktop",
                            "org.freedesktop.portal.Settings", NULL, portal_ready,
                            g_object_ref (self));
}

/* ---- Windows ------------------------------------------------------------------ */

TwbWindow *
twb_application_new_window (TwbApplication *self, TwbDocument *doc)
{
  TwbWindow *w = twb_window_new (GTK_APPLICATION (self), doc);
  gtk_window_present (GTK_WINDOW (w));
  return w;
}

static void
recovery_response (GtkDialog *dialog, int response, TwbApplication *self)
{
  char **files = g_object_get_data (G_OBJECT (dialog), "files");
  for (char **f = files; f && *f; f++)
    {
      if (response == GTK_RESPONSE_ACCEPT)
        {
          /* Recovered documents keep their original path and are dirty; the
           * recovery file goes once they are saved or closed. */
          g_autoptr (GError) error = NULL;
          g_autoptr (TwbDocument) doc = twb_document_new_from_recovery (*f, &error);
          if (doc == NULL)
            {
              g_warning ("cannot recover %s: %s", *f, error->message);
              continue;
            }
          twb_application_new_window (self, doc);
          continue;
        }
      g_unlink (*f);
    }
  gtk_window_destroy (GTK_WINDOW (dialog));
}

static void
offer_recovery (TwbApplication *self, GtkWindow *parent)
{
  if (g_getenv ("TWB_NO_RECOVERY"))
    return;
  g_auto (GStrv) files = twb_document_list_recovery_files ();
  int n = files ? (int) g_strv_length (files) : 0;
  if (n == 0)
    return;
  G_GNUC_BEGIN_IGNORE_DEPRECATIONS
  GtkWidget *d = gtk_message_dialog_new (parent, GTK_DIALOG_MODAL | GTK_DIALOG_DESTROY_WITH_PARENT,
                                         GTK_MESSAGE_QUESTION, GTK_BUTTONS_NONE,
                                         "Recover %d unsaved model%s?", n, n == 1 ? "" : "s");
  gtk_message_dialog_format_secondary_text (
    GTK_MESSAGE_DIALOG (d),
    "Tensor Workbench did not close cleanly last time. Autosaved copies of your unsaved work "
    "can be opened now; discarding deletes them.");
  gtk_dialog_add_buttons (GTK_DIALOG (d), "_Discard", GTK_RESPONSE_REJECT, "_Recover",
                          GTK_RESPONSE_ACCEPT, NULL);
  gtk_dialog_set_default_response (GTK_DIALOG (d), GTK_RESPONSE_ACCEPT);
  G_GNUC_END_IGNORE_DEPRECATIONS
  g_object_set_data_full (G_OBJECT (d), "files", g_steal_pointer (&files), (GDestroyNotify) g_strfreev);
  g_signal_connect (d, "response", G_CALLBACK (recovery_response), self);
  gtk_window_present (GTK_WINDOW (d));
}

/* ---- Screenshot mode ------------------------------------------------------------ */

/* Whether the last --do action is still at work: a run training. */
static gboolean
shot_busy (TwbApplication *self)
{
  return twb_window_is_busy (self->shot_window);
}

/* Run the next --do action once the previous one has finished; FALSE while
 * actions remain or one is at work. */
static gboolean
shot_do_step (TwbApplication *self)
{
  if (self->shot_do == NULL)
    return TRUE;
  if (shot_busy (self))
    {
      if (g_get_monotonic_time () > self->shot_deadline)
        {
          g_printerr ("twb: --do: %s did not finish within %d s\n",
                      self->shot_do[self->shot_do_next - 1],
                      (int) (SHOT_ACTION_TIMEOUT_US / G_USEC_PER_SEC));
          self->shot_status = 2;
          return TRUE;
        }
      self->shot_settle_frame = -1;
      return FALSE;
    }
  /* A few frames between actions (or 0.3 s if frames do not come):
   * snapshots drained, views laid out and redrawn. */
  gint64 now = g_get_monotonic_time ();
  if (self->shot_settle_frame < 0)
    {
      self->shot_settle_frame = self->shot_ticks;
      self->shot_settle_time = now;
    }
  if (self->shot_ticks - self->shot_settle_frame < 3 && now - self->shot_settle_time < 300000)
    return FALSE;
  const char *item = self->shot_do[self->shot_do_next];
  if (item == NULL)
    return TRUE;
  self->shot_do_next++;
  self->shot_settle_frame = -1;
  g_autofree char *name = NULL;
  g_autoptr (GVariant) target = NULL;
  g_autoptr (GError) error = NULL;
  if (!g_action_parse_detailed_name (item, &name, &target, &error))
    {
      g_printerr ("twb: --do: %s: %s\n", item, error->message);
      self->shot_status = 2;
      self->shot_do_next = g_strv_length (self->shot_do);
      return TRUE;
    }
  if (!gtk_widget_activate_action_variant (GTK_WIDGET (self->shot_window), name, target))
    {
      /* app.* actions live on the application. */
      const char *dot = strchr (name, '.');
      GAction *a = dot && g_str_has_prefix (name, "app.")
                     ? g_action_map_lookup_action (G_ACTION_MAP (self), dot + 1) : NULL;
      if (a == NULL || !g_action_get_enabled (a))
        {
          g_printerr ("twb: --do: %s: no such action here, or it is disabled now (actions: "
                      "win.*, graph.*, debugger.*, app.*)\n", item);
          self->shot_status = 2;
          self->shot_do_next = g_strv_length (self->shot_do);
          return TRUE;
        }
      g_action_activate (a, target);
    }
  self->shot_deadline = g_get_monotonic_time () + SHOT_ACTION_TIMEOUT_US;
  return FALSE;
}

static void
shot_finish (TwbApplication *self)
{
  self->shot_done = TRUE;
  if (self->shot_status == 2)
    {
      twb_window_stop_run_now (self->shot_window);
      twb_window_close_now (self->shot_window);
      return;
    }
  g_autoptr (GError) error = NULL;
  if (!twb_window_save_screenshot_sized (self->shot_window, self->shot_path, self->shot_w,
                                         self->shot_h, &error))
    {
      g_printerr ("twb: %s\n", error->message);
      self->shot_status = 1;
    }
  else
    {
      self->shot_status = 0;
      g_print ("%s: %dx%d\n", self->shot_path, self->shot_w, self->shot_h);
    }
  twb_window_stop_run_now (self->shot_window);
  twb_window_close_now (self->shot_window);
}

/* The --do actions run from a timer, not from frames: the frame clock may
 * idle while nothing changes on screen, a timer does not.  Each pass asks
 * for a frame, so what the actions changed is laid out and drawn. */
static gboolean
shot_timer (gpointer data)
{
  TwbApplication *self = data;
  gtk_widget_queue_draw (GTK_WIDGET (self->shot_window));
  if (self->shot_ready)
    {
      /* No frame came within the wait: take the picture from here. */
      if (g_get_monotonic_time () < self->shot_deadline)
        return G_SOURCE_CONTINUE;
      self->shot_timer = 0;
      shot_finish (self);
      return G_SOURCE_REMOVE;
    }
  if (!shot_do_step (self))
    return G_SOURCE_CONTINUE;
  /* The picture is taken in the next frame, when the window has drawn what
   * the actions changed (outside a frame its render nodes may not exist). */
  self->shot_ready = TRUE;
  self->shot_deadline = g_get_monotonic_time () + 2 * G_USEC_PER_SEC;
  return G_SOURCE_CONTINUE;
}

static gboolean
shot_tick (GtkWidget *widget, GdkFrameClock *clock, gpointer data)
{
  TwbApplication *self = data;
  if (self->shot_done)
    return G_SOURCE_REMOVE;
  if (self->shot_ready && ++self->shot_ready_frames >= 3)
    {
      /* Three frames after the last action: a resize it queued (a panel
       * that grew) has been laid out (ticks run before layout). */
      g_clear_handle_id (&self->shot_timer, g_source_remove);
      shot_finish (self);
      return G_SOURCE_REMOVE;
    }
  /* A few frames: the first lays out and zooms to fit, the next draw it.
   * Window decorations may take part of the default size: grow it by the
   * difference once so the picture has the size asked for. */
  ++self->shot_ticks;
  int w = gtk_widget_get_width (widget), h = gtk_widget_get_height (widget);
  if (self->shot_ticks == 3 && (w != self->shot_w || h != self->shot_h))
    {
      gtk_window_set_default_size (GTK_WINDOW (widget), 2 * self->shot_w - w, 2 * self->shot_h - h);
      twb_graph_canvas_zoom_to_fit (twb_window_get_canvas (self->shot_window));
      return G_SOURCE_CONTINUE;
    }
  if (self->shot_ticks == 5)
    twb_graph_canvas_zoom_to_fit (twb_window_get_canvas (self->shot_window));
  if (self->shot_ticks < 8)
    return G_SOURCE_CONTINUE;
  if (self->shot_do == NULL && shot_busy (self))
    {
      /* A file still being read (an ONNX import, a trace): when it is
       * there, select --select's node in it, zoom to fit again and draw. */
      self->shot_ticks = 4;
      self->shot_waited = TRUE;
      return G_SOURCE_CONTINUE;
    }
  if (self->shot_waited)
    {
      self->shot_waited = FALSE;
      if (self->shot_select)
        twb_graph_canvas_reveal_node (twb_window_get_canvas (self->shot_window), self->shot_select);
      self->shot_ticks = 4;
      return G_SOURCE_CONTINUE;
    }
  if (self->shot_do == NULL)
    {
      shot_finish (self);
      return G_SOURCE_REMOVE;
    }
  /* Frames go on being counted: settle waits for a few after each action. */
  if (self->shot_timer == 0 && self->shot_ticks == 8)
    self->shot_timer = g_timeout_add (20, shot_timer, self);
  return G_SOURCE_CONTINUE;
}

static void
activate_screenshot (TwbApplication *self)
{
  g_autoptr (TwbDocument) doc = NULL;
  g_autoptr (GError) error = NULL;
  tw_file_kind kind = self->shot_model ? tw_file_kind_sniff_openable (self->shot_model, &error)
                                       : TW_FILE_KIND_UNKNOWN;
  if (self->shot_model && kind == TW_FILE_KIND_MODEL)
    doc = twb_document_new_from_file (self->shot_model, &error);
  if (self->shot_model && error)
    {
      g_printerr ("twb: %s\n", error->message);
      self->shot_status = 1;
      return;
    }
  if (self->shot_theme)
    g_object_set (gtk_settings_get_default (), "gtk-application-prefer-dark-theme",
                  strcmp (self->shot_theme, "dark") == 0, NULL);
  self->shot_window = twb_window_new (GTK_APPLICATION (self), doc);
  gtk_window_set_default_size (GTK_WINDOW (self->shot_window), self->shot_w, self->shot_h);
  g_autoptr (GPtrArray) traces = g_ptr_array_new ();
  if (kind == TW_FILE_KIND_TRACE)
    g_ptr_array_add (traces, self->shot_model);
  for (char **t = self->shot_traces; t && *t; t++)
    g_ptr_array_add (traces, *t);
  if (traces->len)
    {
      g_ptr_array_add (traces, NULL);
      twb_window_open_traces (self->shot_window, (const char *const *) traces->pdata);
    }
  if (kind == TW_FILE_KIND_ONNX)
    twb_window_import_onnx (self->shot_window, self->shot_model);
  if (self->shot_panel)
    twb_window_show_panel (self->shot_window, self->shot_panel);
  if (self->shot_select)
    twb_graph_canvas_reveal_node (twb_window_get_canvas (self->shot_window), self->shot_select);
  gtk_widget_add_tick_callback (GTK_WIDGET (self->shot_window), shot_tick, self, NULL);
  gtk_window_present (GTK_WINDOW (self->shot_window));
}

/* ---- GApplication ---------------------------------------------------------------- */

static void
twb_application_startup (GApplication *app)
{
  G_APPLICATION_CLASS (twb_application_parent_class)->startup (app);
  twb_application_load_style ();
  gtk_window_set_default_icon_name (TWB_APPLICATION_ID);
  follow_system_style (TWB_APPLICATION (app));
}

static void
twb_application_activate (GApplication *app)
{
  TwbApplication *self = TWB_APPLICATION (app);
  if (self->shot_path)
    {
      activate_screenshot (self);
      return;
    }
  GtkWindow *w = gtk_application_get_active_window (GTK_APPLICATION (app));
  if (w == NULL)
    w = GTK_WINDOW (twb_application_new_window (self, NULL));
  gtk_window_present (w);
  offer_recovery (self, w);
}

/* The window in front, else a new empty one: where a trace or an ONNX
 * import goes, and where a file that cannot be opened is explained. */
static TwbWindow *
front_window (TwbApplication *self)
{
  GtkWindow *front = gtk_application_get_active_window (GTK_APPLICATION (self));
  return TWB_IS_WINDOW (front) ? TWB_WINDOW (front) : twb_application_new_window (self, NULL);
}

static void
twb_application_open (GApplication *app, GFile **files, int n_files, const char *hint)
{
  TwbApplication *self = TWB_APPLICATION (app);
  /* The traces given are read together (several PyTorch traces of one
   * run, a rank each, open as one trace of its ranks), after the models. */
  g_autoptr (GPtrArray) traces = g_ptr_array_new_with_free_func (g_free);
  for (int i = 0; i < n_files; i++)
    {
      TwbWindow *open = twb_window_find_for_file (GTK_APPLICATION (app), files[i]);
      if (open)
        {
          /* Already open: show that window rather than a second copy. */
          gtk_window_present (GTK_WINDOW (open));
          continue;
        }
      g_autofree char *path = g_file_get_path (files[i]);
      g_autoptr (GError) error = NULL;
      /* The content decides, whatever the name says. */
      tw_file_kind kind = path ? tw_file_kind_sniff_openable (path, &error) : TW_FILE_KIND_UNKNOWN;
      if (kind == TW_FILE_KIND_TRACE)
        {
          g_ptr_array_add (traces, g_steal_pointer (&path));
          continue;
        }
      if (kind == TW_FILE_KIND_ONNX)
        {
          /* An ONNX model is imported on a worker, into the window in
           * front when it is empty. */
          TwbWindow *tw = front_window (self);
          twb_window_import_onnx (tw, path);
          gtk_window_present (GTK_WINDOW (tw));
          continue;
        }
      g_autoptr (TwbDocument) doc = kind == TW_FILE_KIND_MODEL
                                      ? twb_document_new_from_file (path, &error) : NULL;
      if (doc == NULL)
        {
          /* Say why in a window: the file cannot be opened. */
          TwbWindow *w = front_window (self);
          twb_window_show_toast (w, error ? error->message : "not a local file");
          gtk_window_present (GTK_WINDOW (w));
          continue;
        }
      twb_application_new_window (self, doc);
      GtkRecentData rd = { .mime_type = (char *) "application/json", .app_name = (char *) "twb",
                           .app_exec = (char *) "twb %f" };
      g_autofree char *uri = g_file_get_uri (files[i]);
      gtk_recent_manager_add_full (gtk_recent_manager_get_default (), uri, &rd);
    }
  if (traces->len)
    {
      /* In the Profiler tab of the window in front. */
      TwbWindow *tw = front_window (self);
      g_ptr_array_add (traces, NULL);
      twb_window_open_traces (tw, (const char *const *) traces->pdata);
      gtk_window_present (GTK_WINDOW (tw));
    }
}

static void
twb_application_dispose (GObject *object)
{
  TwbApplication *self = TWB_APPLICATION (object);
  g_clear_object (&self->portal);
  g_clear_pointer (&self->shot_path, g_free);
  g_clear_pointer (&self->shot_model, g_free);
  g_clear_pointer (&self->shot_traces, g_strfreev);
  g_clear_pointer (&self->shot_panel, g_free);
  g_clear_handle_id (&self->shot_timer, g_source_remove);
  g_clear_pointer (&self->shot_do, g_strfreev);
  g_clear_pointer (&self->shot_theme, g_free);
  g_clear_pointer (&self->shot_select, g_free);
  G_OBJECT_CLASS (twb_application_parent_class)->dispose (object);
}

static void
twb_application_class_init (TwbApplicationClass *klass)
{
  G_OBJECT_CLASS (klass)->dispose = twb_application_dispose;
  G_APPLICATION_CLASS (klass)->startup = twb_application_startup;
  G_APPLICATION_CLASS (klass)->activate = twb_application_activate;
  G_APPLICATION_CLASS (klass)->open = twb_application_open;
}

static void
twb_application_init (TwbApplication *self)
{
  self->shot_status = 0;
  twb_application_install_actions (self);
}

TwbApplication *
twb_application_new (GApplicationFlags flags)
{
  g_set_application_name ("Tensor Workbench");
  return g_object_new (TWB_TYPE_APPLICATION, "application-id", TWB_APPLICATION_ID, "flags",
                       flags, "resource-base-path", "/org/tensorworkbench/Twb", NULL);
}

/* ---- Entry point ----------------------------------------------------------------- */

/* GTK's default renderer is GL; without a GPU's render node (Xvfb, a VM,
 * a container) that GL is Mesa's software rasterizer, whose frames took
 * 200-250 ms while training competed for the cores (cairo: ~13 ms).  There
 * the window draws with cairo unless GSK_RENDERER says otherwise. */
static void
choose_renderer (void)
{
  if (g_getenv ("GSK_RENDERER"))
    return;
  g_autoptr (GDir) dri = g_dir_open ("/dev/dri", 0, NULL);
  const char *name;
  while (dri && (name = g_dir_read_name (dri)))
    if (g_str_has_prefix (name, "renderD"))
      return;
  g_setenv ("GSK_RENDERER", "cairo", TRUE);
  g_debug ("no GPU render node in /dev/dri: drawing with cairo (GSK_RENDERER=cairo)");
}

int
twb_gui_main (int argc, char **argv)
{
  g_autofree char *shot = NULL, *model = NULL, *size = NULL, *panel = NULL, *select = NULL;
  g_autofree char *do_actions = NULL, *theme = NULL;
  g_auto (GStrv) rest = NULL;
  GOptionEntry entries[] = {
    { "screenshot", 0, 0, G_OPTION_ARG_FILENAME, &shot,
      "Render the main window to a PNG and exit", "FILE.png" },
    { "open", 0, 0, G_OPTION_ARG_FILENAME, &model,
      "File to open: a twb model, an ONNX model or a Chrome trace", "FILE" },
    { "size", 0, 0, G_OPTION_ARG_STRING, &size, "Window size for --screenshot (1280x800)", "WxH" },
    { "panel", 0, 0, G_OPTION_ARG_STRING, &panel,
      "Bottom panel tab to show: training, debugger, compiled or profiler", "NAME" },
    { "select", 0, 0, G_OPTION_ARG_STRING, &select,
      "Select this node (its attributes show in the inspector)", "NODE" },
    { "do", 0, 0, G_OPTION_ARG_STRING, &do_actions,
      "With --screenshot: run these actions first, in order, each to its end "
      "(\"win.train-steps(300);debugger.toggle-breakpoint('fc2');debugger.run\")", "ACTIONS" },
    { "theme", 0, 0, G_OPTION_ARG_STRING, &theme, "With --screenshot: light or dark", "THEME" },
    { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &rest, NULL, "[FILE…]" },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("— the Tensor Workbench window");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_set_summary (
    ctx, "Without a command twb opens the graph editor, with each FILE in it: a twb model,\n"
         "an ONNX model (imported) or a Chrome trace, ours or PyTorch's, plain or gzip (in\n"
         "the Profiler tab), whatever the file's name; \"--\" before files named like a\n"
         "command.  The commands (twb --help) need no display.");
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    {
      g_printerr ("twb: %s\n", error->message);
      return 2;
    }
  int64_t w = 1280, h = 800;
  if (size)
    {
      /* WxH: two whole numbers by engine/number.h's rule. */
      g_auto (GStrv) wh = g_strsplit (size, "x", 3);
      if (g_strv_length (wh) != 2 || !tw_number_parse_int (wh[0], 200, 8192, "--size W", &w, NULL)
          || !tw_number_parse_int (wh[1], 150, 8192, "--size H", &h, NULL))
        {
          g_autofree char *shown = tw_number_head (size);
          g_printerr ("twb: --size %s: expected WxH, for example 1280x800 (200x150 to "
                      "8192x8192)\n", shown);
          return 2;
        }
    }
  if (panel && strcmp (panel, "training") && strcmp (panel, "debugger") && strcmp (panel, "compiled")
      && strcmp (panel, "profiler"))
    {
      g_printerr ("twb: --panel %s: expected training, debugger, compiled or profiler\n", panel);
      return 2;
    }
  if (theme && strcmp (theme, "light") && strcmp (theme, "dark"))
    {
      g_printerr ("twb: --theme %s: expected light or dark\n", theme);
      return 2;
    }
  if ((do_actions || theme) && !shot)
    {
      g_printerr ("twb: --do and --theme go with --screenshot\n");
      return 2;
    }
  /* Every file is read before the window opens: one that cannot be
   * opened is named here, on the terminal, and nothing opens. */
  g_autoptr (GPtrArray) given = g_ptr_array_new ();
  if (model)
    g_ptr_array_add (given, model);
  for (char **r = rest; r && *r; r++)
    g_ptr_array_add (given, *r);
  g_autoptr (GPtrArray) files = g_ptr_array_new_with_free_func (g_free);
  int bad = 0;
  for (guint i = 0; i < given->len; i++)
    {
      g_autoptr (GError) ferr = NULL;
      if (tw_file_kind_sniff_openable (given->pdata[i], &ferr) == TW_FILE_KIND_UNKNOWN)
        {
          g_printerr ("twb: %s\n", ferr->message);
          bad++;
        }
      g_ptr_array_add (files, g_canonicalize_filename (given->pdata[i], NULL));
    }
  if (bad)
    return 1;
  if (shot)
    {
      /* The picture may not replace the file it shows (nor be a folder or
       * a device): checked before the window opens. */
      g_autoptr (tw_file_roles) io = tw_file_roles_new ();
      for (guint i = 0; i < given->len; i++)
        tw_file_roles_input (io, given->pdata[i], "the file opened");
      tw_file_roles_output (io, shot, "--screenshot");
      if (!tw_file_roles_check (io, &error))
        {
          g_printerr ("twb: %s\n", error->message);
          return 1;
        }
    }
  choose_renderer ();
  if (!gtk_init_check ())
    {
      g_printerr ("twb: cannot open a display (set DISPLAY, or run under xvfb-run); "
                  "the commands (twb --help) work without one\n");
      return 1;
    }

  if (shot)
    {
      gboolean model_given = model != NULL;
      g_autoptr (TwbApplication) app = twb_application_new (G_APPLICATION_NON_UNIQUE);
      app->shot_path = g_steal_pointer (&shot);
      app->shot_model = model ? g_steal_pointer (&model) : (rest && rest[0] ? g_strdup (rest[0]) : NULL);
      /* The traces among the other files: shown with it (several PyTorch
       * traces of one run merged). */
      GPtrArray *more = g_ptr_array_new ();
      for (char **r = rest ? rest + (app->shot_model && !model_given ? 1 : 0) : NULL; r && *r; r++)
        if (tw_file_kind_sniff_openable (*r, NULL) == TW_FILE_KIND_TRACE)
          g_ptr_array_add (more, g_strdup (*r));
      g_ptr_array_add (more, NULL);
      app->shot_traces = (char **) g_ptr_array_free (more, FALSE);
      app->shot_panel = g_steal_pointer (&panel);
      app->shot_select = g_steal_pointer (&select);
      app->shot_theme = g_steal_pointer (&theme);
      if (do_actions)
        {
          /* ';' separates actions; inside a quoted target it is text. */
          GPtrArray *items = g_ptr_array_new ();
          GString *cur = g_string_new (NULL);
          char quote = 0;
          for (const char *c = do_actions;; c++)
            {
              if (*c == '\0' || (*c == ';' && !quote))
                {
                  g_strstrip (cur->str);
                  if (cur->str[0])
                    g_ptr_array_add (items, g_strdup (cur->str));
                  g_string_truncate (cur, 0);
                  if (*c == '\0')
                    break;
                  continue;
                }
              if ((*c == '\'' || *c == '"') && (!quote || quote == *c))
                quote = quote ? 0 : *c;
              g_string_append_c (cur, *c);
            }
          g_string_free (cur, TRUE);
          g_ptr_array_add (items, NULL);
          app->shot_do = (char **) g_ptr_array_free (items, FALSE);
        }
      app->shot_w = (int) w;
      app->shot_h = (int) h;
      app->shot_status = 1;
      app->shot_settle_frame = -1;
      char *args[] = { argv[0], NULL };
      int st = g_application_run (G_APPLICATION (app), 1, args);
      return st ? st : app->shot_status;
    }

  g_autoptr (TwbApplication) app = twb_application_new (G_APPLICATION_HANDLES_OPEN);
  if (!g_application_register (G_APPLICATION (app), NULL, &error))
    {
      /* No session bus: run as a separate instance rather than not at all. */
      g_debug ("single instance unavailable: %s", error->message);
      g_clear_error (&error);
      g_clear_object (&app);
      app = twb_application_new (G_APPLICATION_HANDLES_OPEN | G_APPLICATION_NON_UNIQUE);
    }
  /* Absolute paths: the running instance may have another working folder,
   * and no path starts with '-' to be read as an option. */
  g_autoptr (GPtrArray) args = g_ptr_array_new ();
  g_ptr_array_add (args, argv[0]);
  for (guint i = 0; i < files->len; i++)
    g_ptr_array_add (args, files->pdata[i]);
  g_ptr_array_add (args, NULL);
  return g_application_run (G_APPLICATION (app), (int) args->len - 1, (char **) args->pdata);
}
