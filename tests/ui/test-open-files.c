/* test-open-files.c — every way a file enters the window decides its kind
 * by content (tw_file_kind_sniff), not by its name: twb_window_open_file
 * (the Open dialog, Open Recent, win.open-path), files dropped on the
 * window, and the application's open (twb FILE…, a second instance).  An
 * ONNX model named .json is imported, a trace named .onnx opens in the
 * Profiler tab (the empty window takes its name), a model named .onnx
 * loads, and a file that is none of them leaves a notice naming it.  Any
 * GLib warning or critical fails the test. */
#include "ui-test.h"
#include "app/twb-application.h"
#include "ui/twb-profiler-panel.h"
#include "ui/twb-window-private.h"

#include <glib/gstdio.h>
#include <string.h>

static TwbApplication *app;
static char *tmp;

static char *
copy_as (const char *src, const char *name)
{
  g_autofree char *data = NULL;
  gsize len = 0;
  g_assert_true (g_file_get_contents (src, &data, &len, NULL));
  char *path = g_build_filename (tmp, name, NULL);
  g_assert_true (g_file_set_contents (path, data, (gssize) len, NULL));
  return path;
}

static void
wait_idle (TwbWindow *w)
{
  gint64 end = g_get_monotonic_time () + 60 * G_USEC_PER_SEC;
  twt_ui_pump ();
  while (twb_window_is_busy (w))
    {
      g_assert_cmpint (g_get_monotonic_time (), <, end);
      g_main_context_iteration (NULL, FALSE);
      g_usleep (2000);
    }
  twt_ui_pump ();
}

static TwbWindow *
new_window (void)
{
  TwbWindow *w = twb_window_new (GTK_APPLICATION (app), NULL);
  gtk_window_present (GTK_WINDOW (w));
  twt_ui_pump ();
  return w;
}

static guint
n_traces (TwbWindow *w)
{
  return twb_profiler_panel_n_traces (TWB_PROFILER_PANEL (w->profiler_panel));
}

static int
n_nodes (TwbWindow *w)
{
  return tw_graph_n_nodes (twb_document_get_graph (twb_window_get_document (w)));
}

static char *onnx_src, *trace_src, *model_src;

static void
test_open_file (void)
{
  g_autofree char *onnx = copy_as (onnx_src, "convnet.json");
  g_autofree char *trace = copy_as (trace_src, "run.onnx");
  g_autofree char *model = copy_as (model_src, "mlp.onnx");
  g_autofree char *text = g_build_filename (tmp, "notes.json", NULL);
  g_assert_true (g_file_set_contents (text, "just some notes\n", -1, NULL));

  TwbWindow *w = new_window ();
  g_assert_true (twb_window_open_file (w, onnx) == w);
  wait_idle (w);
  g_assert_cmpint (n_nodes (w), >, 0);
  g_assert_nonnull (tw_graph_find (twb_document_get_graph (twb_window_get_document (w)), "conv"));
  g_assert_cmpuint (n_traces (w), ==, 0);
  twb_window_close_now (w);

  w = new_window ();
  g_assert_true (twb_window_open_file (w, trace) == w);
  wait_idle (w);
  g_assert_cmpuint (n_traces (w), ==, 1);
  g_assert_cmpint (n_nodes (w), ==, 0);
  g_assert_cmpstr (gtk_window_get_title (GTK_WINDOW (w)), ==, "run.onnx — Tensor Workbench");

  /* A model into the window that shows only a trace: loaded there, and the
   * title is the model's. */
  g_assert_true (twb_window_open_file (w, model) == w);
  twt_ui_pump ();
  g_assert_cmpstr (twb_document_get_path (twb_window_get_document (w)), ==, model);
  g_assert_cmpint (n_nodes (w), >, 0);
  g_assert_cmpstr (gtk_window_get_title (GTK_WINDOW (w)), ==, "mlp.onnx — Tensor Workbench");

  /* None of the kinds: a notice naming the file, nothing changed. */
  g_assert_null (twb_window_open_file (w, text));
  const char *toast = twb_window_get_toast (w);
  g_assert_nonnull (toast);
  g_assert_nonnull (strstr (toast, "notes.json: not a file Tensor Workbench opens"));
  g_assert_cmpstr (twb_document_get_path (twb_window_get_document (w)), ==, model);
  g_assert_cmpuint (n_traces (w), ==, 1);
  twb_window_close_now (w);
  twt_ui_pump ();
}

static GtkDropTarget *
file_drop_target (GtkWidget *widget)
{
  g_autoptr (GListModel) controllers = gtk_widget_observe_controllers (widget);
  for (guint i = 0; i < g_list_model_get_n_items (controllers); i++)
    {
      g_autoptr (GObject) c = g_list_model_get_item (controllers, i);
      if (GTK_IS_DROP_TARGET (c)
          && gdk_content_formats_contain_gtype (gtk_drop_target_get_formats (GTK_DROP_TARGET (c)),
                                                GDK_TYPE_FILE_LIST))
        return GTK_DROP_TARGET (c);
    }
  return NULL;
}

/* Files dropped on the window: each by its content, as the Open dialog. */
static void
test_drop (void)
{
  g_autofree char *trace = copy_as (trace_src, "dropped-trace.bin");
  g_autofree char *onnx = copy_as (onnx_src, "dropped.model");
  TwbWindow *w = new_window ();
  GtkDropTarget *target = file_drop_target (GTK_WIDGET (w));
  g_assert_nonnull (target);
  g_autoptr (GFile) f1 = g_file_new_for_path (trace);
  g_autoptr (GFile) f2 = g_file_new_for_path (onnx);
  GSList *list = g_slist_append (g_slist_append (NULL, f1), f2);
  GdkFileList *files = gdk_file_list_new_from_list (list);
  g_slist_free (list);
  GValue v = G_VALUE_INIT;
  g_value_init (&v, GDK_TYPE_FILE_LIST);
  g_value_take_boxed (&v, files);
  gboolean handled = FALSE;
  g_signal_emit_by_name (target, "drop", &v, 10.0, 10.0, &handled);
  g_value_unset (&v);
  g_assert_true (handled);
  wait_idle (w);
  g_assert_cmpuint (n_traces (w), ==, 1);
  g_assert_cmpint (n_nodes (w), >, 0);
  twb_window_close_now (w);
  twt_ui_pump ();
}

/* The application's open (what `twb FILE…` and a second instance send). */
static void
test_application_open (void)
{
  g_autofree char *model = copy_as (model_src, "model.trace.json.gz");
  g_autofree char *text = g_build_filename (tmp, "empty.onnx", NULL);
  g_assert_true (g_file_set_contents (text, "", 0, NULL));
  guint n0 = g_list_length (gtk_application_get_windows (GTK_APPLICATION (app)));
  g_autoptr (GFile) f1 = g_file_new_for_path (model);
  g_autoptr (GFile) f2 = g_file_new_for_path (text);
  GFile *files[] = { f1, f2 };
  g_application_open (G_APPLICATION (app), files, 2, "");
  twt_ui_pump ();
  GList *all = gtk_application_get_windows (GTK_APPLICATION (app));
  g_assert_cmpuint (g_list_length (all), ==, n0 + 1);
  TwbWindow *w = TWB_WINDOW (gtk_application_get_active_window (GTK_APPLICATION (app)));
  g_assert_cmpstr (twb_document_get_path (twb_window_get_document (w)), ==, model);
  const char *toast = twb_window_get_toast (w);
  g_assert_nonnull (toast);
  g_assert_nonnull (strstr (toast, "empty.onnx is empty"));
  twb_window_close_now (w);
  twt_ui_pump ();
}

int
main (int argc, char **argv)
{
  g_autofree char *home = twt_ui_private_home ("open-files");
  g_test_init (&argc, &argv, NULL);
  g_log_set_always_fatal (G_LOG_FATAL_MASK | G_LOG_LEVEL_WARNING | G_LOG_LEVEL_CRITICAL);
  tw_ops_init ();
  if (!gtk_init_check ())
    {
      g_print ("1..0 # SKIP no display\n");
      return 0;
    }
  tmp = g_build_filename (home, "files", NULL);
  g_mkdir_with_parents (tmp, 0700);
  onnx_src = g_build_filename (TW_SOURCE_ROOT, "tests", "onnx", "data", "convnet.onnx", NULL);
  trace_src = g_build_filename (TW_SOURCE_ROOT, "tests", "profiler", "data", "torch-real-trace.json",
                                NULL);
  model_src = g_build_filename (TW_SOURCE_ROOT, "assets", "models", "mlp.json", NULL);
  app = twb_application_new (G_APPLICATION_NON_UNIQUE | G_APPLICATION_HANDLES_OPEN);
  g_application_register (G_APPLICATION (app), NULL, NULL);
  twb_application_load_style ();
  g_test_add_func ("/ui/open-files/open-file", test_open_file);
  g_test_add_func ("/ui/open-files/drop", test_drop);
  g_test_add_func ("/ui/open-files/application-open", test_application_open);
  int st = g_test_run ();
  g_object_unref (app);
  g_free (onnx_src);
  g_free (trace_src);
  g_free (model_src);
  g_free (tmp);
  return st;
}
