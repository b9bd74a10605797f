/* test-shortcuts.c — every documented shortcut (the application's table,
 * app/twb-application-actions.c) pressed with xdotool through the X
 * server, its effect checked on the window's models, from wherever the
 * focus is: the canvas, the palette's search field, an inspector field,
 * the Debugger tab's learning rate, the tensor inspector's Diff button, a
 * chart, a header bar button.  Text fields keep their own keys: typing
 * types, Delete deletes a character, Ctrl+A selects their text, Ctrl+Z is
 * theirs.
 *
 * The model is a small MLP on the synthetic spirals: a step takes well
 * under a millisecond, so what is measured is the keys. */
#include "ui-test.h"
#include "ui-xdo.h"
#include "window-test.h"
#include "app/twb-application.h"
#include "graph_editor/twb-graph-render.h"
#include "ui/twb-plot.h"
#include "ui/twb-window-private.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static TwbApplication *app;
static char *tmp_dir;

static const char model_json[] =
  "{ \"format\": \"twb-model\", \"version\": 1, \"name\": \"keys\",\n"
  "  \"graph\": { \"nodes\": [\n"
  "    { \"id\": \"x\", \"op\": \"input\", \"attrs\": { \"shape\": [2] }, \"pos\": [40, 60] },\n"
  "    { \"id\": \"y\", \"op\": \"input\", \"attrs\": { \"shape\": [], \"dtype\": \"i64\", "
  "\"role\": \"label\" }, \"pos\": [290, 260] },\n"
  "    { \"id\": \"fc1\", \"op\": \"linear\", \"inputs\": [\"x\"], "
  "\"attrs\": { \"out_features\": 16 }, \"pos\": [240, 60] },\n"
  "    { \"id\": \"relu1\", \"op\": \"relu\", \"inputs\": [\"fc1\"], \"pos\": [440, 60] },\n"
  "    { \"id\": \"fc2\", \"op\": \"linear\", \"inputs\": [\"relu1\"], "
  "\"attrs\": { \"out_features\": 2 }, \"pos\": [640, 60] },\n"
  "    { \"id\": \"loss\", \"op\": \"cross_entropy\", \"inputs\": [\"fc2\", \"y\"], "
  "\"pos\": [640, 200] } ] },\n"
  "  \"training\": { \"dataset\": \"spirals\", \"epochs\": 50, \"batch_size\": 16 } }\n";

/* ---- Helpers -------------------------------------------------------------------------- */

/* Where a paused run is: iteration, phase, nodes, op, ops so far. */
static char *
position (TwbWindow *w)
{
  TwbRun *r = twb_window_get_run (w);
  const tw_snapshot *p = r ? twb_run_get_pause (r) : NULL;
  if (p == NULL)
    return g_strdup ("not paused");
  g_autofree char *nodes = p->nodes ? g_strjoinv (",", p->nodes) : g_strdup ("");
  return g_strdup_printf ("%" G_GINT64_FORMAT ":%d:%s:%s:%u", p->iteration, p->phase, nodes,
                          p->op ? p->op : "", p->trace ? g_strv_length (p->trace) : 0);
}

static int64_t
iteration (TwbWindow *w)
{
  const tw_snapshot *p = twb_run_get_pause (twb_window_get_run (w));
  g_assert_nonnull (p);
  return p->iteration;
}

static GtkWidget *
focus_of (TwbWindow *w)
{
  return gtk_root_get_focus (GTK_ROOT (w));
}

static gboolean
focus_in (TwbWindow *w, GtkWidget *where)
{
  GtkWidget *f = focus_of (w);
  return f && (f == where || gtk_widget_is_ancestor (f, where));
}

static const TwbSceneNode *
scene_node (TwbWindow *w, const char *id)
{
  const TwbGraphScene *s = twb_graph_canvas_get_scene (w->canvas);
  int i = s ? twb_graph_scene_find (s, id) : -1;
  g_assert_cmpint (i, >=, 0);
  return &s->nodes[i];
}

static void
click_node (TwbWindow *w, const char *id)
{
  const TwbSceneNode *n = scene_node (w, id);
  double vx, vy, vw, vh;
  twb_graph_canvas_get_visible (w->canvas, &vx, &vy, &vw, &vh);
  double k = gtk_widget_get_width (GTK_WIDGET (w->canvas)) / vw;
  twt_xdo_click (GTK_WIDGET (w->canvas), (n->x + n->w / 2 - vx) * k,
                 (n->y + TWB_RENDER_HEADER_H / 2 - vy) * k, 1);
}

static int
n_nodes (TwbWindow *w)
{
  return tw_graph_n_nodes (twb_document_get_graph (w->doc));
}

static guint
n_selected (TwbWindow *w)
{
  g_auto (GStrv) sel = twb_document_get_selection (w->doc);
  return sel ? g_strv_length (sel) : 0;
}

static GtkWidget *
text_of (GtkWidget *field)
{
  GtkWidget *t = GTK_IS_SPIN_BUTTON (field) ? twt_find_type (field, GTK_TYPE_TEXT) : field;
  g_assert_nonnull (t);
  return t;
}

/* The toplevel windows besides the application's own (a dialog, the
 * shortcuts window), listed. */
static GList *
other_toplevels (void)
{
  GList *out = NULL;
  GListModel *all = gtk_window_get_toplevels ();
  for (guint i = 0; i < g_list_model_get_n_items (all); i++)
    {
      g_autoptr (GtkWindow) t = g_list_model_get_item (all, i);
      if (!TWB_IS_WINDOW (t) && gtk_widget_get_visible (GTK_WIDGET (t)))
        out = g_list_prepend (out, t);
    }
  return out;
}

/* A key that opens a window of its own: it appeared, of the type wanted
 * (0: any); then it is closed. */
static void
key_opens_window (TwbWindow *w, const char *keys, GType want)
{
  g_assert_null (other_toplevels ());
  g_test_message ("%s", keys);
  twt_xdo_key (keys);
  GList *l = NULL;
  for (int i = 0; i < 100 && (l = other_toplevels ()) == NULL; i++)
    twt_xdo_wait (30);
  if (l == NULL)
    g_error ("%s opened no window", keys);
  GtkWindow *d = l->data;
  g_list_free (l);
  if (want)
    g_assert_true (G_TYPE_CHECK_INSTANCE_TYPE (d, want));
  /* Closed as its close button does (the shortcuts window hides, to come
   * back on the next Ctrl+?). */
  gtk_window_close (d);
  twt_ui_pump ();
  g_assert_null (other_toplevels ());
}

static TwbWindow *
open_model (void)
{
  g_autofree char *path = g_build_filename (tmp_dir, "keys.json", NULL);
  g_autoptr (GError) error = NULL;
  g_assert_true (g_file_set_contents (path, model_json, -1, &error));
  g_autoptr (TwbDocument) doc = twb_document_new_from_file (path, &error);
  g_assert_no_error (error);
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

/* ---- Places the focus goes to, by pointer -------------------------------------------- */

typedef struct
{
  const char *name;
  GtkWidget *(*put) (TwbWindow *w);   /* clicks there; returns the widget holding the focus */
  gboolean text;                      /* a text field */
  gboolean needs_pause;               /* only there while paused */
} Place;

/* A click on fc2 (the node the breakpoint keys act on): the canvas has
 * the focus. */
static GtkWidget *
put_canvas (TwbWindow *w)
{
  click_node (w, "fc2");
  return GTK_WIDGET (w->canvas);
}

static GtkWidget *
put_search (TwbWindow *w)
{
  GtkWidget *s = twt_find_type (GTK_WIDGET (w->palette), GTK_TYPE_SEARCH_ENTRY);
  twt_xdo_click (s, -1, -1, 1);
  return s;
}

static GtkWidget *
put_inspector (TwbWindow *w)
{
  /* fc2: the node the breakpoint keys act on. */
  if (g_strcmp0 (twb_inspector_get_node (w->inspector), "fc2") != 0)
    click_node (w, "fc2");
  GtkWidget *f = twb_inspector_get_attr_widget (w->inspector, "out_features");
  twt_xdo_reveal (f);
  twt_xdo_click (text_of (f), -1, -1, 1);
  g_assert_true (focus_in (w, f));
  return f;
}

static GtkWidget *
put_lr (TwbWindow *w)
{
  twb_window_show_panel (w, "debugger");
  twt_ui_pump ();
  GtkWidget *lr = twt_find_type (w->debugger_panel, GTK_TYPE_SPIN_BUTTON);
  twt_xdo_click (text_of (lr), -1, -1, 1);
  return lr;
}

static GtkWidget *
put_diff (TwbWindow *w)
{
  twb_window_show_panel (w, "debugger");
  twt_ui_pump ();
  GtkWidget *l = twt_find_label (w->debugger_panel, "Diff");
  g_assert_nonnull (l);
  GtkWidget *b = gtk_widget_get_ancestor (l, GTK_TYPE_TOGGLE_BUTTON);
  twt_xdo_click (l, -1, -1, 1);
  g_assert_true (gtk_toggle_button_get_active (GTK_TOGGLE_BUTTON (b)));   /* the Diff page */
  /* The page's button does not keep the focus a click gives it: where a
   * keyboard user Tabs to it, it has it. */
  gtk_widget_grab_focus (b);
  return b;
}

static GtkWidget *
put_chart (TwbWindow *w)
{
  twb_window_show_panel (w, "training");
  twt_ui_pump ();
  GtkWidget *chart = twt_find_type (w->dashboard, TWB_TYPE_PLOT);
  g_assert_nonnull (chart);
  twt_xdo_click (chart, -1, -1, 1);
  return chart;
}

static GtkWidget *
put_header (TwbWindow *w)
{
  GtkWidget *l = twt_find_label (GTK_WIDGET (w), "Eager");
  g_assert_nonnull (l);
  GtkWidget *b = gtk_widget_get_ancestor (l, GTK_TYPE_TOGGLE_BUTTON);
  twt_xdo_click (l, -1, -1, 1);
  gtk_widget_grab_focus (b);   /* a button a click leaves unfocused is reached with Tab */
  return b;
}

static const Place places[] = {
  { "the canvas", put_canvas, FALSE, FALSE },
  { "the palette's search field", put_search, TRUE, FALSE },
  { "an inspector field", put_inspector, TRUE, FALSE },
  { "a header bar button", put_header, FALSE, FALSE },
  { "a chart", put_chart, FALSE, FALSE },
  { "the Debugger tab's learning rate", put_lr, TRUE, TRUE },
  { "the tensor inspector's Diff button", put_diff, FALSE, TRUE },
};

/* ---- The tests ----------------------------------------------------------------------- */

/* Training and debugging keys (F5, F9, F10, F11, Ctrl+F10, Shift+F5, F6)
 * from each place: each does what it says and the focus stays put. */
static void
test_debugger_keys (void)
{
  if (!twt_xdo_ready ())
    {
      g_test_skip ("no xdotool or no X11 display");
      return;
    }
  TwbWindow *w = open_model ();
  for (guint i = 0; i < G_N_ELEMENTS (places); i++)
    {
      const Place *pl = &places[i];
      g_test_message ("from %s", pl->name);
      /* A run paused at fc2's breakpoint, started from the canvas when the
       * place is only there while paused. */
      click_node (w, "fc2");
      GtkWidget *at = pl->needs_pause ? put_canvas (w) : pl->put (w);
      g_assert_cmpuint (w->breakpoints->len, ==, 0);
      twt_xdo_key ("F9");
      g_assert_cmpuint (w->breakpoints->len, ==, 1);
      g_assert_cmpstr (g_ptr_array_index (w->breakpoints, 0), ==, "node=fc2");
      twt_xdo_key ("F5");
      settle (w);
      g_assert_cmpint (twb_run_get_state (twb_window_get_run (w)), ==, TW_SESSION_PAUSED);
      g_assert_nonnull (strstr (twb_run_get_pause (twb_window_get_run (w))->reason, "fc2"));
      if (pl->needs_pause)
        at = pl->put (w);
      /* Where the click left the focus (a button keeps it on the widget
       * before): the keys must not move it. */
      GtkWidget *kept = focus_of (w);
      g_test_message ("focus on %s", kept ? G_OBJECT_TYPE_NAME (kept) : "nothing");
      g_assert_true (kept == NULL || kept == at || gtk_widget_is_ancestor (kept, at)
                     || !gtk_widget_get_focusable (at));

      g_autofree char *p0 = position (w);
      twt_xdo_key ("F11");
      settle (w);
      g_autofree char *p1 = position (w);
      g_assert_cmpstr (p1, !=, p0);
      g_assert_cmpstr (p1, !=, "not paused");
      twt_xdo_key ("F10");
      settle (w);
      g_autofree char *p2 = position (w);
      g_assert_cmpstr (p2, !=, p1);
      g_assert_cmpstr (p2, !=, "not paused");
      /* Step iteration: to the iteration's end, or to fc2's breakpoint in
       * the backward pass on the way (a breakpoint on both phases). */
      twt_xdo_key ("ctrl+F10");
      settle (w);
      g_autofree char *p3 = position (w);
      g_test_message ("F11: %s, F10: %s, Ctrl+F10: %s", p1, p2, p3);
      g_assert_cmpstr (p3, !=, p2);
      g_assert_cmpstr (p3, !=, "not paused");
      int64_t it = iteration (w);
      twt_xdo_key ("ctrl+F10");
      settle (w);
      twt_xdo_key ("ctrl+F10");
      settle (w);
      g_assert_cmpint (iteration (w), >, it);
      /* F10 went nowhere else: the focus is where the person left it (or
       * off a field the run disabled on the way). */
      g_assert_true (focus_of (w) == kept || (focus_of (w) == NULL && kept
                                              && !gtk_widget_is_sensitive (kept)));

      /* Record (F6) on and off. */
      GAction *rec = g_action_map_lookup_action (G_ACTION_MAP (w->profiler_actions), "record");
      twt_xdo_key ("F6");
      g_autoptr (GVariant) on = g_action_get_state (rec);
      g_assert_true (g_variant_get_boolean (on));
      twt_xdo_key ("F6");
      g_autoptr (GVariant) off = g_action_get_state (rec);
      g_assert_false (g_variant_get_boolean (off));

      /* Continue (F5) runs to the breakpoint again. */
      g_autofree char *p4 = position (w);
      twt_xdo_key ("F5");
      settle (w);
      g_autofree char *p5 = position (w);
      g_assert_cmpstr (p5, !=, p4);
      g_assert_nonnull (strstr (twb_run_get_pause (twb_window_get_run (w))->reason, "fc2"));
      twt_xdo_key ("shift+F5");
      settle (w);
      g_assert_false (twb_window_run_is_active (w));
      /* The breakpoint off again, from the same place. */
      if (pl->needs_pause)
        at = put_canvas (w);
      click_node (w, "fc2");
      if (!pl->needs_pause)
        at = pl->put (w);
      twt_xdo_key ("F9");
      g_assert_cmpuint (w->breakpoints->len, ==, 0);
    }
  close_window (w);
}

/* The editing, view and file keys from the canvas and from a button; and
 * from a text field, the keys it shares with the graph are its own. */
static void
test_editing_keys (void)
{
  if (!twt_xdo_ready ())
    {
      g_test_skip ("no xdotool or no X11 display");
      return;
    }
  TwbWindow *w = open_model ();
  const Place *from[] = { &places[0], &places[3] };
  for (guint i = 0; i < G_N_ELEMENTS (from); i++)
    {
      g_test_message ("from %s", from[i]->name);
      /* A click on the node (the canvas has the focus), then the place. */
#define AT(node)                                                                                   \
  do                                                                                               \
    {                                                                                              \
      click_node (w, node);                                                                        \
      if (from[i] != &places[0])                                                                   \
        from[i]->put (w);                                                                          \
    }                                                                                              \
  while (0)
      int n0 = n_nodes (w);
      AT ("relu1");
      twt_xdo_key ("ctrl+a");
      g_assert_cmpuint (n_selected (w), ==, (guint) n0);
      /* Escape (the canvas's) clears it. */
      click_node (w, "relu1");
      twt_xdo_key ("Escape");
      g_assert_cmpuint (n_selected (w), ==, 0);
      AT ("relu1");
      twt_xdo_key ("ctrl+d");
      g_assert_cmpint (n_nodes (w), ==, n0 + 1);
      twt_xdo_key ("Delete");
      g_assert_cmpint (n_nodes (w), ==, n0);
      twt_xdo_key ("ctrl+z");
      g_assert_cmpint (n_nodes (w), ==, n0 + 1);
      twt_xdo_key ("ctrl+shift+z");
      g_assert_cmpint (n_nodes (w), ==, n0);
      twt_xdo_key ("ctrl+z");
      twt_xdo_key ("ctrl+y");
      g_assert_cmpint (n_nodes (w), ==, n0);
      AT ("relu1");
      twt_xdo_key ("ctrl+c");
      twt_xdo_key ("ctrl+v");
      g_assert_cmpint (n_nodes (w), ==, n0 + 1);
      twt_xdo_key ("ctrl+x");
      g_assert_cmpint (n_nodes (w), ==, n0);

      /* Blocks. */
      AT ("relu1");
      twt_xdo_key ("ctrl+g");
      g_auto (GStrv) blocks = twb_document_list_blocks (w->doc);
      g_assert_cmpuint (g_strv_length (blocks), ==, 1);
      g_assert_true (twb_document_block_is_collapsed (w->doc, blocks[0]));
      twt_xdo_key ("ctrl+shift+g");
      g_assert_false (twb_document_block_is_collapsed (w->doc, blocks[0]));
      twt_xdo_key ("ctrl+z");
      twt_xdo_key ("ctrl+z");

      /* The view. */
      twt_xdo_key ("ctrl+0");
      double fit = twb_graph_canvas_get_zoom (w->canvas);
      twt_xdo_key ("ctrl+minus");
      g_assert_cmpfloat (twb_graph_canvas_get_zoom (w->canvas), <, fit);
      twt_xdo_key ("ctrl+plus");
      twt_xdo_key ("ctrl+equal");
      g_assert_cmpfloat (twb_graph_canvas_get_zoom (w->canvas), >, fit);
      twt_xdo_key ("ctrl+l");
      g_assert_cmpstr (twb_document_undo_label (w->doc), ==, "Arrange");
      twt_xdo_key ("ctrl+z");

      /* Search. */
      twt_xdo_key ("ctrl+f");
      g_assert_true (focus_in (w, GTK_WIDGET (w->palette)));
      AT ("relu1");

      /* Windows of their own. */
      key_opens_window (w, "ctrl+shift+a", 0);   /* the Sequential dialog */
      key_opens_window (w, "ctrl+question", GTK_TYPE_SHORTCUTS_WINDOW);
      key_opens_window (w, "ctrl+o", GTK_TYPE_FILE_CHOOSER_DIALOG);
      key_opens_window (w, "ctrl+shift+s", GTK_TYPE_FILE_CHOOSER_DIALOG);
      key_opens_window (w, "ctrl+shift+e", GTK_TYPE_FILE_CHOOSER_DIALOG);

      /* Save writes the file. */
      g_autofree char *path = g_build_filename (tmp_dir, "keys.json", NULL);
      g_unlink (path);
      twt_xdo_key ("ctrl+s");
      g_assert_true (g_file_test (path, G_FILE_TEST_IS_REGULAR));
      g_assert_false (twb_document_get_dirty (w->doc));

      /* A new window, and Ctrl+W closing it. */
      guint nw = g_list_length (gtk_application_get_windows (GTK_APPLICATION (app)));
      twt_xdo_key ("ctrl+n");
      g_assert_cmpuint (g_list_length (gtk_application_get_windows (GTK_APPLICATION (app))), ==,
                        nw + 1);
      TwbWindow *other = TWB_WINDOW (gtk_application_get_windows (GTK_APPLICATION (app))->data);
      twt_xdo_place (GTK_WINDOW (other), 800, 600);
      twt_xdo_click (GTK_WIDGET (other->canvas), 100, 100, 1);
      twt_xdo_key ("ctrl+w");
      g_assert_cmpuint (g_list_length (gtk_application_get_windows (GTK_APPLICATION (app))), ==,
                        nw);
#undef AT
    }

  /* In a text field its own keys win. */
  int n0 = n_nodes (w);
  click_node (w, "relu1");
  GtkWidget *s = put_search (w);
  twt_xdo_type ("lin");
  g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (s)), ==, "lin");
  twt_xdo_key ("Home");
  twt_xdo_key ("Delete");
  g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (s)), ==, "in");
  g_assert_cmpint (n_nodes (w), ==, n0);
  twt_xdo_key ("ctrl+a");
  int a, b;
  g_assert_true (gtk_editable_get_selection_bounds (GTK_EDITABLE (s), &a, &b));
  g_assert_cmpint (b - a, ==, 2);
  g_assert_cmpuint (n_selected (w), ==, 1);   /* the graph's selection as it was */
  twt_xdo_key ("BackSpace");
  g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (s)), ==, "");
  g_assert_cmpint (n_nodes (w), ==, n0);
  twt_xdo_key ("ctrl+z");
  g_assert_cmpint (n_nodes (w), ==, n0);
  g_assert_true (twb_document_get_dirty (w->doc) == FALSE);

  /* Quit (Ctrl+Q) closes every window: the last check. */
  twt_xdo_key ("ctrl+q");
  g_assert_null (gtk_application_get_windows (GTK_APPLICATION (app)));
}

int
main (int argc, char **argv)
{
  g_setenv ("TWB_COLOR_SCHEME", "light", FALSE);
  /* The file choosers Ctrl+O opens store their settings: in memory here
   * (the test has no session bus for dconf). */
  g_setenv ("GSETTINGS_BACKEND", "memory", TRUE);
  g_autofree char *home = twt_ui_private_home ("shortcuts");
  tmp_dir = g_build_filename (home, "models", NULL);
  g_mkdir_with_parents (tmp_dir, 0700);
  app = twt_window_test_init (&argc, &argv, 0);
  if (app == NULL)
    return 0;
  /* Keep the application (and the process's loop) when the windows go. */
  g_application_hold (G_APPLICATION (app));

  g_test_add_func ("/ui/shortcuts/debugger-keys", test_debugger_keys);
  g_test_add_func ("/ui/shortcuts/editing-keys", test_editing_keys);
  int st = g_test_run ();
  g_application_release (G_APPLICATION (app));
  g_object_unref (app);
  return st;
}
