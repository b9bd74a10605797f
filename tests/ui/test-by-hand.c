/* test-by-hand.c — the window as a new user met it, driven only with the
 * pointer and the keyboard through the X server (xdotool; ui-xdo.h), what
 * it did checked on the models behind it:
 *
 *   draw-and-train: Ctrl+N, a convolutional classifier drawn from the
 *     palette port to port, its attributes typed in the inspector, the
 *     dataset typed in the recipe, F5: over 80 % test accuracy, the
 *     accuracy curve and the confusion matrix there, the node that feeds
 *     the loss shown as the output; marked and unmarked from its context
 *     menu; saved, the file read by twb train and twb info.
 *   notice-click-through: a faded notice leaves no strip that swallows the
 *     click on the node under it.
 *   rename-enter / lr-enter-f5: Enter in a field whose edit rebuilds its
 *     panel, F5 from a field the run disables: no GTK critical or warning
 *     (any fails the test), the focus back in the same field.
 *   continue-blocked: a node deleted while paused greys Continue out and a
 *   notice names the node that blocks it.
 *
 * Each test places its window at (0, 0) at a fixed size; every click is
 * aimed at a widget the test finds, not at coordinates written here. */
#include "ui-test.h"
#include "window-test.h"
#include "ui-xdo.h"
#include "app/twb-application.h"
#include "engine/model.h"
#include "graph_editor/twb-graph-render.h"
#include "ui/twb-dashboard.h"
#include "ui/twb-debugger-panel.h"
#include "ui/twb-window-private.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static TwbApplication *app;
static char *tmp_dir;
static char *twb_path;

/* Longest a run may take here: one Fashion-MNIST epoch of a small CNN is
 * ~10 s on two busy cores, ~10x that under ASan. */
#define RUN_TIMEOUT_S 300

/* ---- Finding things ------------------------------------------------------------------ */

static const TwbSceneNode *
scene_node (TwbWindow *w, const char *id)
{
  const TwbGraphScene *s = twb_graph_canvas_get_scene (w->canvas);
  int i = s ? twb_graph_scene_find (s, id) : -1;
  g_assert_cmpint (i, >=, 0);
  return &s->nodes[i];
}

/* Model coordinates → the canvas widget's. */
static void
to_canvas (TwbWindow *w, double mx, double my, double *cx, double *cy)
{
  double vx, vy, vw, vh;
  twb_graph_canvas_get_visible (w->canvas, &vx, &vy, &vw, &vh);
  double k = gtk_widget_get_width (GTK_WIDGET (w->canvas)) / vw;
  *cx = (mx - vx) * k;
  *cy = (my - vy) * k;
}

/* The middle of a node's header (a click there selects it). */
static void
header_point (TwbWindow *w, const char *id, double *cx, double *cy)
{
  const TwbSceneNode *n = scene_node (w, id);
  to_canvas (w, n->x + n->w / 2, n->y + TWB_RENDER_HEADER_H / 2, cx, cy);
}

static void
port_point (TwbWindow *w, const char *id, TwbPortDirection dir, int port, double *cx, double *cy)
{
  const TwbGraphScene *s = twb_graph_canvas_get_scene (w->canvas);
  double mx, my;
  twb_graph_scene_port_pos (s, twb_graph_scene_find (s, id), dir, port, &mx, &my);
  to_canvas (w, mx, my, cx, cy);
}

/* A click on the canvas where no node is: its bottom left corner (the
 * minimap is at the right, the notices at the top). */
static void
click_empty (TwbWindow *w)
{
  int h = gtk_widget_get_height (GTK_WIDGET (w->canvas));
  twt_xdo_click (GTK_WIDGET (w->canvas), 30, h - 30, 1);
}

static void
click_node (TwbWindow *w, const char *id)
{
  double x, y;
  header_point (w, id, &x, &y);
  twt_xdo_click (GTK_WIDGET (w->canvas), x, y, 1);
}

/* The ids of the graph's nodes, in order; caller frees. */
static GStrv
node_ids (TwbWindow *w)
{
  tw_graph *g = twb_document_get_graph (w->doc);
  GStrvBuilder *b = g_strv_builder_new ();
  for (int i = 0; i < tw_graph_n_nodes (g); i++)
    g_strv_builder_add (b, tw_graph_node (g, i)->id);
  GStrv v = g_strv_builder_end (b);
  g_strv_builder_unref (b);
  return v;
}

static void
assert_no_issues (TwbWindow *w)
{
  if (twb_window_count_issues (w) == 0)
    return;
  g_autofree char *errs = tw_graph_errors_to_string (twb_document_get_graph (w->doc));
  g_error ("the drawn model has errors:\n%s", errs);
}

static void screenshot (TwbWindow *w, const char *name);

/* ---- Doing things by hand ------------------------------------------------------------- */

/* Search the palette for `op` (a click in its search field, the old text
 * selected by the field's own Ctrl+A and typed over), drag its row onto
 * the canvas at (cx, cy): the new node's id (caller frees). */
static char *
drop_layer (TwbWindow *w, const char *op, double cx, double cy)
{
  GtkWidget *search = twt_find_type (GTK_WIDGET (w->palette), GTK_TYPE_SEARCH_ENTRY);
  g_assert_nonnull (search);
  twt_xdo_click (search, -1, -1, 1);
  twt_xdo_key ("ctrl+a");
  twt_xdo_type (op);
  twt_xdo_wait (200);
  GtkWidget *row = twt_find_label (GTK_WIDGET (w->palette), op);
  g_assert_nonnull (row);
  g_auto (GStrv) before = node_ids (w);
  twt_xdo_drag (row, -1, -1, GTK_WIDGET (w->canvas), cx, cy);
  g_auto (GStrv) after = node_ids (w);
  g_assert_cmpuint (g_strv_length (after), ==, g_strv_length (before) + 1);
  for (char **a = after; *a; a++)
    if (!g_strv_contains ((const char *const *) before, *a))
      return g_strdup (*a);
  g_assert_not_reached ();
}

/* From output port 0 of `from` to input `port` of `to`. */
static void
connect_ports (TwbWindow *w, const char *from, const char *to, int port)
{
  double x0, y0, x1, y1;
  port_point (w, from, TWB_PORT_OUTPUT, 0, &x0, &y0);
  port_point (w, to, TWB_PORT_INPUT, port, &x1, &y1);
  twt_xdo_drag (GTK_WIDGET (w->canvas), x0, y0, GTK_WIDGET (w->canvas), x1, y1);
  g_autofree char *want = g_strdup (from);
  tw_node *n = tw_graph_find (twb_document_get_graph (w->doc), to);
  g_assert_nonnull (n);
  g_assert_cmpint (n->n_inputs, >, port);
  g_assert_cmpstr (n->inputs[port], ==, want);
}

/* The text part of a field: the entry itself, a spin button's text. */
static GtkWidget *
text_of (GtkWidget *field)
{
  if (GTK_IS_SPIN_BUTTON (field))
    {
      GtkWidget *t = twt_find_type (field, GTK_TYPE_TEXT);
      g_assert_nonnull (t);
      return t;
    }
  return field;
}

/* Select the node, click in its field, select the field's text with its
 * own Ctrl+A (not the graph's Select All), type over it, Enter. */
static void
type_attr (TwbWindow *w, const char *id, const char *attr, const char *text)
{
  if (g_strcmp0 (twb_inspector_get_node (w->inspector), id) != 0)
    click_node (w, id);
  g_assert_cmpstr (twb_inspector_get_node (w->inspector), ==, id);
  GtkWidget *f = twb_inspector_get_attr_widget (w->inspector, attr);
  g_assert_nonnull (f);
  if (g_getenv ("TWB_TEST_DEBUG"))
    {
      static int k;
      g_autofree char *n = g_strdup_printf ("debug-%02d-%s.png", k++, attr);
      screenshot (w, n);
    }
  twt_xdo_reveal (f);
  twt_xdo_click (text_of (f), -1, -1, 1);
  twt_xdo_key ("ctrl+a");
  twt_xdo_type (text);
  twt_xdo_key ("Return");
  g_assert_null (twb_inspector_get_attr_error (w->inspector, attr));
}

/* Open the node's drop-down for `attr` and click `choice` in its list. */
static void
choose_attr (TwbWindow *w, const char *id, const char *attr, const char *choice)
{
  if (g_strcmp0 (twb_inspector_get_node (w->inspector), id) != 0)
    click_node (w, id);
  GtkWidget *dd = twb_inspector_get_attr_widget (w->inspector, attr);
  g_assert_true (GTK_IS_DROP_DOWN (dd));
  twt_xdo_reveal (dd);
  twt_xdo_click (dd, -1, -1, 1);
  /* The list's item, not the button's own label (it shows the current value). */
  GtkWidget *popover = NULL;
  for (int i = 0; i < 100 && popover == NULL; i++)
    {
      twt_xdo_wait (20);
      popover = twt_find_type (dd, GTK_TYPE_POPOVER);
    }
  g_assert_nonnull (popover);
  GtkWidget *item = twt_find_label (popover, choice);
  g_assert_nonnull (item);
  twt_xdo_click (item, -1, -1, 1);
  /* Closed before the next click; the pointer moved off the list's place
   * first (GTK 4.8 on X without a window manager lost the next click on a
   * drop-down when the pointer came back from a closed popover onto it). */
  for (int i = 0; i < 100 && gtk_widget_get_mapped (popover); i++)
    twt_xdo_wait (20);
  twt_xdo_move (GTK_WIDGET (w->canvas), 20, 20);
  const tw_node *n = tw_graph_find (twb_document_get_graph (w->doc), id);
  g_assert_cmpstr (tw_attrs_get_string (n->attrs, attr, NULL), ==, choice);
}

/* Right click on the node, then a click on the menu's item `label`. */
static void
menu_item (TwbWindow *w, const char *id, const char *label)
{
  double x, y;
  header_point (w, id, &x, &y);
  twt_xdo_click (GTK_WIDGET (w->canvas), x, y, 3);
  twt_xdo_wait (300);
  GtkWidget *menu = twb_graph_canvas_get_context_menu (w->canvas);
  g_assert_nonnull (menu);
  g_assert_true (gtk_widget_get_mapped (menu));
  GtkWidget *item = twt_find_label (menu, label);
  g_assert_nonnull (item);
  twt_xdo_click (item, -1, -1, 1);
}

static void
wait_run_end (TwbWindow *w)
{
  gint64 end = g_get_monotonic_time () + RUN_TIMEOUT_S * G_USEC_PER_SEC;
  for (;;)
    {
      TwbRun *r = twb_window_get_run (w);
      g_assert_nonnull (r);
      twb_run_drain (r);
      twt_xdo_wait (50);
      if (twb_run_get_state (r) != TW_SESSION_RUNNING && twb_run_get_result (r))
        break;
      if (g_get_monotonic_time () > end)
        g_error ("the run did not end within %d s", RUN_TIMEOUT_S);
    }
  twt_ui_pump ();
}

static void
screenshot (TwbWindow *w, const char *name)
{
  const char *dir = g_getenv ("TWB_TEST_SHOTS") ? g_getenv ("TWB_TEST_SHOTS") : tmp_dir;
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autoptr (GError) error = NULL;
  g_assert_true (twb_window_save_screenshot (w, path, &error));
  g_test_message ("screenshot: %s", path);
}

static TwbWindow *
new_window (TwbDocument *doc)
{
  TwbWindow *w = twb_application_new_window (app, doc);
  twt_xdo_place (GTK_WINDOW (w), 1280, 960);
  return w;
}

static void
close_window (TwbWindow *w)
{
  twb_window_stop_run_now (w);
  twb_window_close_now (w);
  twt_ui_pump ();
}

/* `twb ARGS…` exits 0; its output, caller frees. */
static char *
run_twb (const char *const *args)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, twb_path);
  for (const char *const *a = args; *a; a++)
    g_ptr_array_add (argv, (gpointer) *a);
  g_ptr_array_add (argv, NULL);
  char *out = NULL, *err = NULL;
  int status = 0;
  g_autoptr (GError) error = NULL;
  g_assert_true (g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                               &out, &err, &status, &error));
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_error ("twb %s failed: %s%s", args[0], out, err);
  g_free (err);
  return out;
}

/* ---- The tests ----------------------------------------------------------------------- */

/* The classifier of the report: x [1, 28, 28] → conv2d (8, k3, p1) → relu →
 * max_pool2d → flatten → linear (10) → cross_entropy, with the label y
 * into the loss's second port, on Fashion-MNIST for one epoch at the
 * recipe's defaults (SGD, lr 0.01, momentum 0.9, batch 64).  This network
 * reaches 84-86 % on the 10,000 test images after that epoch (twb train,
 * seeds 0-2); chance is 10 %, so 80 % fails on a broken path, not on a
 * seed.  The Debian set when installed, else the bundled 4,000-image
 * subset, where one epoch reaches ~75 %: the test then asks for 65 %. */
static void
test_draw_and_train (void)
{
  if (!twt_xdo_ready ())
    {
      g_test_skip ("no xdotool or no X11 display");
      return;
    }
  TwbWindow *first = new_window (NULL);
  guint before = g_list_length (gtk_application_get_windows (GTK_APPLICATION (app)));
  twt_xdo_click (GTK_WIDGET (first->canvas), 200, 200, 1);
  twt_xdo_key ("ctrl+n");
  GList *wins = gtk_application_get_windows (GTK_APPLICATION (app));
  g_assert_cmpuint (g_list_length (wins), ==, before + 1);
  TwbWindow *w = TWB_WINDOW (wins->data);   /* the newest first */
  g_assert_true (w != first);
  twt_xdo_place (GTK_WINDOW (w), 1280, 960);
  g_assert_cmpint (tw_graph_n_nodes (twb_document_get_graph (w->doc)), ==, 0);

  /* Two rows of boxes, 180 px apart, below the top (the notices) and left
   * of the minimap. */
  const char *ops[] = { "input",   "conv2d", "relu",          "max_pool2d",
                        "flatten", "linear", "cross_entropy", "input" };
  const double at[][2] = { { 110, 110 }, { 290, 110 }, { 470, 110 }, { 650, 110 },
                           { 110, 290 }, { 290, 290 }, { 470, 290 }, { 290, 420 } };
  char *id[G_N_ELEMENTS (ops)];
  for (guint i = 0; i < G_N_ELEMENTS (ops); i++)
    id[i] = drop_layer (w, ops[i], at[i][0], at[i][1]);
  const char *x = id[0], *conv = id[1], *relu = id[2], *pool = id[3], *fc = id[5],
             *loss = id[6], *y = id[7];
  for (int i = 1; i <= 5; i++)
    connect_ports (w, id[i - 1], id[i], 0);
  connect_ports (w, fc, loss, 0);
  connect_ports (w, y, loss, 1);

  /* The shape typed as a person writes it, not as JSON. */
  type_attr (w, x, "shape", "1, 28, 28");
  type_attr (w, conv, "out_channels", "8");
  type_attr (w, conv, "kernel_size", "3");
  type_attr (w, conv, "padding", "1");
  type_attr (w, pool, "kernel_size", "2");
  type_attr (w, fc, "out_features", "10");
  type_attr (w, y, "shape", "[]");
  choose_attr (w, y, "dtype", "i64");
  choose_attr (w, y, "role", "label");
  assert_no_issues (w);

  /* Nothing marked: the node feeding the loss is the output, tagged so. */
  g_assert_cmpint (scene_node (w, fc)->output, ==, TWB_OUTPUT_DEFAULT);
  g_assert_cmpint (scene_node (w, relu)->output, ==, TWB_OUTPUT_NONE);
  /* Marked and unmarked from the context menu; undone and redone. */
  menu_item (w, relu, "Model Output");
  g_assert_cmpint (scene_node (w, relu)->output, ==, TWB_OUTPUT_MARKED);
  g_assert_cmpint (scene_node (w, fc)->output, ==, TWB_OUTPUT_MARKED);   /* kept beside it */
  click_empty (w);
  twt_xdo_key ("ctrl+z");
  g_assert_cmpint (scene_node (w, relu)->output, ==, TWB_OUTPUT_NONE);
  g_assert_true (tw_graph_outputs_are_default (twb_document_get_graph (w->doc)));
  twt_xdo_key ("ctrl+shift+z");
  g_assert_cmpint (scene_node (w, relu)->output, ==, TWB_OUTPUT_MARKED);
  menu_item (w, relu, "Model Output");
  g_assert_cmpint (scene_node (w, relu)->output, ==, TWB_OUTPUT_NONE);
  g_assert_cmpint (scene_node (w, fc)->output, ==, TWB_OUTPUT_MARKED);
  /* The last marked one unmarked: the default again, said in a notice. */
  menu_item (w, fc, "Model Output");
  g_assert_true (tw_graph_outputs_are_default (twb_document_get_graph (w->doc)));
  g_assert_cmpint (scene_node (w, fc)->output, ==, TWB_OUTPUT_DEFAULT);
  g_assert_nonnull (strstr (twb_window_get_toast (w), "stays the model's output"));
  /* Unmarking the only prediction the loss trains is refused, saying why. */
  menu_item (w, fc, "Model Output");
  g_assert_cmpint (scene_node (w, fc)->output, ==, TWB_OUTPUT_DEFAULT);
  g_assert_nonnull (strstr (twb_window_get_toast (w), "only output"));

  /* The dataset, typed in the recipe. */
  GtkWidget *tab = twt_find_label (GTK_WIDGET (w->inspector), "Training recipe");
  g_assert_nonnull (tab);
  twt_xdo_click (tab, -1, -1, 1);
  const char *data = g_file_test ("/usr/share/datasets/fashion-mnist", G_FILE_TEST_IS_DIR)
                       ? "fashion-mnist"
                       : "fashion-mnist-subset";
  /* The page's one entry (its numbers are spin buttons). */
  GtkWidget *ds = twt_find_type (GTK_WIDGET (w->inspector), GTK_TYPE_ENTRY);
  g_assert_nonnull (ds);
  g_assert_cmpstr (gtk_entry_get_placeholder_text (GTK_ENTRY (ds)), ==, "none: twb train --data");
  twt_xdo_click (ds, -1, -1, 1);
  twt_xdo_key ("ctrl+a");
  twt_xdo_type (data);
  twt_xdo_key ("Return");
  g_assert_cmpstr (twb_document_get_model (w->doc)->recipe.dataset, ==, data);
  screenshot (w, "by-hand-drawn.png");

  /* F5 from the canvas. */
  click_empty (w);
  twt_xdo_key ("F5");
  TwbRun *r = twb_window_get_run (w);
  g_assert_nonnull (r);
  wait_run_end (w);
  const tw_snapshot *res = twb_run_get_result (r);
  g_assert_null (twb_run_get_error (r));
  g_test_message ("%s: test accuracy %.4f after %" G_GINT64_FORMAT " steps", data,
                  res->test_accuracy, res->step);
  g_assert_cmpfloat (res->test_accuracy, >, strcmp (data, "fashion-mnist") == 0 ? 0.80 : 0.65);
  /* The accuracy chart has its points, the class report its matrix. */
  guint acc = twb_metrics_find_series (w->metrics, twb_run_get_id (r), "accuracy");
  g_assert_cmpuint (acc, !=, G_MAXUINT);
  g_assert_cmpuint (twb_metrics_series_len (w->metrics, acc), >, 0);
  int64_t epoch = -1;
  const tw_class_report *rep = twb_run_get_class_report (r, &epoch);
  g_assert_nonnull (rep);
  g_assert_cmpint (rep->n_classes, ==, 10);
  twb_window_show_panel (w, "training");
  twt_ui_pump ();
  screenshot (w, "by-hand-trained.png");

  /* Saved, the file is what twb train and twb info take, its output the
   * linear layer. */
  g_autofree char *path = g_build_filename (tmp_dir, "drawn.json", NULL);
  g_autoptr (GError) error = NULL;
  g_assert_true (twb_window_save_to (w, path, &error));
  g_autofree char *info = run_twb ((const char *const[]) { "info", path, "--json", NULL });
  g_autofree char *want = g_strdup_printf ("\"outputs\" : [\n    \"%s\"\n  ]", fc);
  g_assert_nonnull (strstr (info, want));
  g_autofree char *trained = run_twb ((const char *const[]) {
    "train", path, "--data", "fashion-mnist-subset", "--max-steps", "2", "--no-eval", "-q", NULL });
  g_autoptr (tw_model) back = tw_model_load (path, &error);
  g_assert_no_error (error);
  g_assert_true (tw_graph_outputs_are_default (back->graph));

  for (guint i = 0; i < G_N_ELEMENTS (ops); i++)
    g_free (id[i]);
  close_window (w);
  close_window (first);
}

static TwbWindow *
open_asset (const char *name)
{
  g_autofree char *path = g_build_filename (g_getenv ("TWB_ASSETS_DIR"), "models", name, NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (TwbDocument) doc = twb_document_new_from_file (path, &error);
  g_assert_no_error (error);
  return new_window (doc);
}

/* The notice's strip at the top of the canvas, once faded, takes no click:
 * a node's header moved under it is selected by a click there. */
static void
test_notice_click_through (void)
{
  if (!twt_xdo_ready ())
    {
      g_test_skip ("no xdotool or no X11 display");
      return;
    }
  TwbWindow *w = open_asset ("mlp.json");
  twb_window_show_toast (w, "A notice as wide as the ones that name several nodes and say what to "
                            "do about them");
  twt_ui_pump ();
  g_assert_true (gtk_widget_get_visible (w->toast_revealer));
  graphene_rect_t strip;
  g_assert_true (gtk_widget_compute_bounds (w->toast_revealer, GTK_WIDGET (w->canvas), &strip));
  /* Dismissed with its button: it fades out as it does after 6 s. */
  twt_xdo_click (w->toast_close, -1, -1, 1);
  twt_xdo_wait (600);
  g_assert_null (twb_window_get_toast (w));
  g_assert_false (gtk_widget_get_visible (w->toast_revealer));

  /* fc2's header to the middle of where the strip was. */
  double sx = strip.origin.x + strip.size.width / 2, sy = strip.origin.y + strip.size.height / 2;
  double hx, hy;
  header_point (w, "fc2", &hx, &hy);
  double vx, vy, vw, vh;
  twb_graph_canvas_get_visible (w->canvas, &vx, &vy, &vw, &vh);
  double k = vw / gtk_widget_get_width (GTK_WIDGET (w->canvas));
  twb_document_move_nodes (w->doc, (const char *const[]) { "fc2", NULL }, (sx - hx) * k,
                           (sy - hy) * k, FALSE);
  twt_ui_pump ();
  header_point (w, "fc2", &hx, &hy);
  g_assert_cmpfloat (fabs (hx - sx), <, 2);
  g_assert_cmpfloat (fabs (hy - sy), <, 2);
  twt_xdo_click (GTK_WIDGET (w->canvas), sx, sy, 1);
  g_auto (GStrv) sel = twb_document_get_selection (w->doc);
  g_assert_nonnull (sel);
  g_assert_cmpstr (sel[0], ==, "fc2");
  g_assert_null (sel[1]);
  close_window (w);
}

/* Enter in the inspector's id field renames the node and rebuilds the
 * page under the field: no critical (the test would abort), the new
 * page's id field has the focus, and it works again. */
static void
test_rename_enter (void)
{
  if (!twt_xdo_ready ())
    {
      g_test_skip ("no xdotool or no X11 display");
      return;
    }
  TwbWindow *w = open_asset ("mlp.json");
  click_node (w, "fc1");
  const char *names[] = { "dense1", "fc1" };
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      /* A click in the field, its text selected with the field's own
       * Ctrl+A (not the graph's Select All), typed over. */
      GtkWidget *id = twb_inspector_get_attr_widget (w->inspector, "$id");
      twt_xdo_click (id, -1, -1, 1);
      twt_xdo_key ("ctrl+a");
      twt_xdo_type (names[i]);
      g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (id)), ==, names[i]);
      g_auto (GStrv) sel = twb_document_get_selection (w->doc);
      g_assert_cmpuint (g_strv_length (sel), ==, 1);
      twt_xdo_key ("Return");
      twt_xdo_wait (300);
      g_assert_nonnull (tw_graph_find (twb_document_get_graph (w->doc), names[i]));
      g_assert_cmpstr (twb_inspector_get_node (w->inspector), ==, names[i]);
      GtkWidget *now = twb_inspector_get_attr_widget (w->inspector, "$id");
      g_assert_true (now != id);   /* a new page */
      GtkWidget *f = gtk_root_get_focus (GTK_ROOT (w));
      g_assert_nonnull (f);
      g_assert_true (f == now || gtk_widget_is_ancestor (f, now));
      g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (now)), ==, names[i]);
    }
  close_window (w);
}

/* The Debugger tab's learning rate typed while paused, Enter, then F5: the
 * field the run disables gives up the focus first (GtkText warned from
 * its cursor blink, 1.2 s on, that it never lost it); the rate applies. */
static void
test_lr_enter_f5 (void)
{
  if (!twt_xdo_ready ())
    {
      g_test_skip ("no xdotool or no X11 display");
      return;
    }
  TwbWindow *w = open_asset ("mlp.json");
  g_autoptr (GError) error = NULL;
  g_assert_true (twb_window_add_breakpoint (w, "step=2", &error));
  click_empty (w);
  twt_xdo_key ("F5");
  TwbRun *r = twb_window_get_run (w);
  g_assert_nonnull (r);
  for (int i = 0; i < 400 && twb_run_get_state (r) != TW_SESSION_PAUSED; i++)
    {
      twb_run_drain (r);
      twt_xdo_wait (50);
    }
  g_assert_cmpint (twb_run_get_state (r), ==, TW_SESSION_PAUSED);
  twb_window_show_panel (w, "debugger");
  twt_ui_pump ();
  GtkWidget *lr = twt_find_type (w->debugger_panel, GTK_TYPE_SPIN_BUTTON);
  g_assert_nonnull (lr);
  g_assert_true (gtk_widget_is_sensitive (lr));
  twt_xdo_click (text_of (lr), -1, -1, 1);
  twt_xdo_key ("ctrl+a");
  twt_xdo_type ("0.05");
  twt_xdo_key ("Return");
  g_assert_cmpfloat (fabs (w->applied_lr - 0.05), <, 1e-9);
  twt_xdo_key ("F5");
  twb_run_drain (r);
  twt_ui_pump ();
  g_assert_cmpint (twb_run_get_state (r), ==, TW_SESSION_RUNNING);
  g_assert_false (gtk_widget_is_sensitive (lr));
  GtkWidget *f = gtk_root_get_focus (GTK_ROOT (w));
  g_assert_true (f == NULL || !gtk_widget_is_ancestor (f, lr));
  /* Two cursor blinks' time: a GtkText left believing it has the focus
   * would warn now. */
  twt_xdo_wait (2500);
  twt_xdo_key ("shift+F5");
  for (int i = 0; i < 400 && twb_window_run_is_active (w); i++)
    {
      twb_run_drain (r);
      twt_xdo_wait (50);
    }
  g_assert_false (twb_window_run_is_active (w));
  close_window (w);
}

/* Paused, a node deleted so that the next one has no input: Continue greys
 * out and a notice says which node holds it; undo lets it go on. */
static void
test_continue_blocked (void)
{
  if (!twt_xdo_ready ())
    {
      g_test_skip ("no xdotool or no X11 display");
      return;
    }
  TwbWindow *w = open_asset ("mlp.json");
  click_node (w, "fc2");
  twt_xdo_key ("F9");
  twt_xdo_key ("F5");
  TwbRun *r = twb_window_get_run (w);
  g_assert_nonnull (r);
  for (int i = 0; i < 400 && twb_run_get_state (r) != TW_SESSION_PAUSED; i++)
    {
      twb_run_drain (r);
      twt_xdo_wait (50);
    }
  g_assert_cmpint (twb_run_get_state (r), ==, TW_SESSION_PAUSED);
  GAction *run = g_action_map_lookup_action (G_ACTION_MAP (w->debugger_actions), "run");
  g_assert_true (g_action_get_enabled (run));

  click_node (w, "relu1");
  twt_xdo_key ("Delete");
  g_assert_null (tw_graph_find (twb_document_get_graph (w->doc), "relu1"));
  g_assert_false (g_action_get_enabled (run));
  const char *notice = twb_window_get_toast (w);
  g_assert_nonnull (notice);
  g_assert_nonnull (strstr (notice, "Continue is blocked by node fc2"));
  const char *tip = gtk_widget_get_tooltip_text (w->run_button);
  g_assert_nonnull (strstr (tip, "node fc2"));
  screenshot (w, "by-hand-blocked.png");

  twt_xdo_key ("ctrl+z");
  g_assert_nonnull (tw_graph_find (twb_document_get_graph (w->doc), "relu1"));
  g_assert_true (g_action_get_enabled (run));
  g_assert_cmpstr (gtk_widget_get_tooltip_text (w->run_button), ==, "Continue (F5)");
  close_window (w);
}

/* At 1280 x 800 before any run the bottom panel shows its first lines; at
 * the smallest height the canvas stays (and the minimap steps aside); a
 * shape typed as "1 28 28" is taken, a bad one explained in a line that
 * shows all of what it says. */
static void
test_small_window (void)
{
  if (!twt_xdo_ready ())
    {
      g_test_skip ("no xdotool or no X11 display");
      return;
    }
  g_autofree char *path = g_build_filename (g_getenv ("TWB_ASSETS_DIR"), "models", "lenet5.json",
                                            NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (TwbDocument) doc = twb_document_new_from_file (path, &error);
  g_assert_no_error (error);
  TwbWindow *w = twb_application_new_window (app, doc);
  twt_xdo_place (GTK_WINDOW (w), 1280, 800);
  GtkWidget *bottom = gtk_paned_get_end_child (GTK_PANED (w->vpaned));
  g_test_message ("bottom panel %d px of %d", gtk_widget_get_height (bottom),
                  gtk_widget_get_height (w->vpaned));
  /* 20 % of the paned (ui/twb-window-run.c): the dashboard's hint and
   * its charts' titles. */
  g_assert_cmpint (gtk_widget_get_height (bottom), >=, gtk_widget_get_height (w->vpaned) / 5 - 2);
  g_assert_cmpint (gtk_widget_get_height (GTK_WIDGET (w->canvas)), >=, 400);
  g_assert_true (gtk_widget_get_visible (w->minimap_frame));
  screenshot (w, "by-hand-1280x800.png");

  /* Smaller than the window can be: it stops at its smallest size. */
  gulong xid;
  int sx, sy;
  twt_xdo_point (GTK_WIDGET (w), 0, 0, &xid, &sx, &sy);
  g_autofree char *cmd = g_strdup_printf ("windowsize %lu 1000 300", xid);
  twt_xdo_run (cmd);
  twt_xdo_wait (500);
  g_test_message ("smallest: canvas %d px high, window %d",
                  gtk_widget_get_height (GTK_WIDGET (w->canvas)),
                  gtk_widget_get_height (GTK_WIDGET (w)));
  g_assert_cmpint (gtk_widget_get_height (GTK_WIDGET (w->canvas)), >=, 180);
  g_assert_cmpint (gtk_widget_get_height (GTK_WIDGET (w->inspector)), >=, 90);
  g_assert_false (gtk_widget_get_visible (w->minimap_frame));
  screenshot (w, "by-hand-smallest.png");
  g_autofree char *back = g_strdup_printf ("windowsize %lu 1280 800", xid);
  twt_xdo_run (back);
  twt_xdo_wait (500);

  /* The shape, typed. */
  click_node (w, "x");
  GtkWidget *shape = twb_inspector_get_attr_widget (w->inspector, "shape");
  twt_xdo_reveal (shape);
  twt_xdo_click (shape, -1, -1, 1);
  twt_xdo_key ("ctrl+a");
  twt_xdo_type ("1 28 28");
  twt_xdo_key ("Return");
  g_assert_null (twb_inspector_get_attr_error (w->inspector, "shape"));
  int64_t dims[4];
  const tw_node *x = tw_graph_find (twb_document_get_graph (w->doc), "x");
  g_assert_cmpint (tw_attrs_get_ints (x->attrs, "shape", dims, 4), ==, 3);
  g_assert_cmpint (dims[0] * 1000000 + dims[1] * 1000 + dims[2], ==, 1028028);
  twt_xdo_key ("ctrl+a");
  twt_xdo_type ("1, twenty-eight, 28");
  twt_xdo_key ("Return");
  const char *err = twb_inspector_get_attr_error (w->inspector, "shape");
  g_assert_nonnull (err);
  g_assert_nonnull (strstr (err, "1, 28, 28"));
  /* Its line shows all of it: as tall as its text needs at its width. */
  GtkWidget *line = NULL;
  for (GtkWidget *c = gtk_widget_get_first_child (gtk_widget_get_parent (shape)); c && line == NULL;
       c = gtk_widget_get_next_sibling (c))
    if (GTK_IS_LABEL (c) && g_strcmp0 (gtk_widget_get_tooltip_text (c), err) == 0)
      line = c;
  g_assert_nonnull (line);
  /* Its one line shows all it says (it was cut to "…a list lik…"). */
  g_assert_cmpstr (gtk_label_get_text (GTK_LABEL (line)), ==,
                   "expected whole numbers like 1, 28, 28");
  g_assert_false (pango_layout_is_ellipsized (gtk_label_get_layout (GTK_LABEL (line))));
  screenshot (w, "by-hand-shape-error.png");
  close_window (w);
}

int
main (int argc, char **argv)
{
  g_setenv ("TWB_COLOR_SCHEME", "light", FALSE);
  g_autofree char *home = twt_ui_private_home ("by-hand");
  tmp_dir = g_build_filename (home, "models", NULL);
  g_mkdir_with_parents (tmp_dir, 0700);
  app = twt_window_test_init (&argc, &argv, 0);
  if (app == NULL)
    return 0;
  twb_path = argc > 1 ? argv[1] : NULL;
  if (twb_path == NULL)
    {
      g_print ("1..0 # SKIP no twb path given\n");
      g_object_unref (app);
      return 0;
    }

  g_test_add_func ("/ui/by-hand/draw-and-train", test_draw_and_train);
  g_test_add_func ("/ui/by-hand/notice-click-through", test_notice_click_through);
  g_test_add_func ("/ui/by-hand/rename-enter", test_rename_enter);
  g_test_add_func ("/ui/by-hand/lr-enter-f5", test_lr_enter_f5);
  g_test_add_func ("/ui/by-hand/continue-blocked", test_continue_blocked);
  g_test_add_func ("/ui/by-hand/small-window", test_small_window);
  int st = g_test_run ();
  g_object_unref (app);
  return st;
}
