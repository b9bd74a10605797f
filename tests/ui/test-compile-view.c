/* test-compile-view.c — the compile report view under Xvfb.  For the MLP and
 * LeNet-5: the fused groups and the node → group map against the report
 * JSON of a program compiled here independently (tw_program_report_json),
 * the passes list against its passes, the memory plan's rectangles never
 * overlapping in (instructions × arena offset) and inside the arena, arena
 * and eager peak against the report's figures (the eager peak as `twb
 * compile` estimates it), the hover read-out, the layout in a bottom panel
 * (side by side) and in a side panel (stacked), and the "group-activated"
 * signal.  A model with a shape error shows the error naming the node and
 * keeps nothing.  Export PNG read back, light and dark.  Any GLib warning
 * or critical fails the test.  Screenshots go to TWB_TEST_SHOTS (or a
 * temporary directory). */
#include "ui-test.h"
#include "app/twb-application.h"
#include "engine/memory.h"
#include "ui/twb-compile-view.h"

#include <glib/gstdio.h>
#include <string.h>

static char *shots_dir;

static tw_model *
load_model (const char *name)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *path = g_build_filename (g_getenv ("TWB_ASSETS_DIR"), "models", name, NULL);
  tw_model *m = tw_model_load (path, &error);
  g_assert_no_error (error);
  return m;
}

/* The report JSON of the training step at the recipe's batch, compiled
 * here, and the eager peak `twb compile` prints beside it. */
static JsonNode *
reference_report (const tw_model *m, gsize *eager_peak)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_program) p =
    tw_program_build (m->graph, m->recipe.batch_size, TW_PROGRAM_STEP, &error);
  g_assert_no_error (error);
  g_assert_true (tw_program_optimize (p, TW_PASS_ALL, &error));
  tw_memory_estimate est;
  g_assert_true (tw_graph_estimate_memory (p->graph, p->batch, &est, &error));
  *eager_peak = (gsize) tw_memory_estimate_eager_peak (&est, TRUE);
  return tw_program_report_json (p);
}

static GtkWidget *
show_view (int width, int height, GtkWidget **window_out)
{
  GtkWidget *window = gtk_window_new ();
  gtk_window_set_default_size (GTK_WINDOW (window), width, height);
  GtkWidget *view = twb_compile_view_new ();
  gtk_window_set_child (GTK_WINDOW (window), view);
  gtk_window_present (GTK_WINDOW (window));
  twt_ui_pump ();
  *window_out = window;
  return view;
}

static void
screenshot (GtkWidget *window, const char *name)
{
  g_autofree char *path = g_build_filename (shots_dir, name, NULL);
  g_autoptr (GdkPaintable) p = gtk_widget_paintable_new (window);
  GtkSnapshot *snap = gtk_snapshot_new ();
  gdk_paintable_snapshot (p, snap, gtk_widget_get_width (window), gtk_widget_get_height (window));
  g_autoptr (GskRenderNode) node = gtk_snapshot_free_to_node (snap);
  g_assert_nonnull (node);
  g_autoptr (GdkTexture) tex =
    gsk_renderer_render_texture (gtk_native_get_renderer (GTK_NATIVE (window)), node, NULL);
  g_assert_true (gdk_texture_save_to_png (tex, path));
  g_test_message ("screenshot: %s", path);
}

/* Groups: the forward fused kernels of two or more nodes, in order; a node
 * maps to the first that covers it. */
static void
check_groups (TwbCompileView *v, JsonObject *ref)
{
  JsonArray *fused = json_object_get_array_member (ref, "fused");
  g_autoptr (GHashTable) want = g_hash_table_new (g_str_hash, g_str_equal);
  guint n_groups = 0;
  for (guint i = 0; i < json_array_get_length (fused); i++)
    {
      JsonObject *f = json_array_get_object_element (fused, i);
      JsonArray *src = json_object_get_array_member (f, "sources");
      if (strcmp (json_object_get_string_member (f, "phase"), "forward") != 0 ||
          json_array_get_length (src) < 2)
        continue;
      n_groups++;
      for (guint k = 0; k < json_array_get_length (src); k++)
        {
          const char *id = json_array_get_string_element (src, k);
          if (!g_hash_table_contains (want, id))
            g_hash_table_insert (want, (gpointer) id, GUINT_TO_POINTER (n_groups));
        }
    }
  g_assert_cmpuint (n_groups, >, 0);
  g_assert_cmpuint (twb_compile_view_n_groups (v), ==, n_groups);
  GHashTable *got = twb_compile_view_node_groups (v);
  g_assert_cmpuint (g_hash_table_size (got), ==, g_hash_table_size (want));
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init (&it, want);
  while (g_hash_table_iter_next (&it, &key, &value))
    {
      g_assert_true (g_hash_table_contains (got, key));
      g_assert_cmpuint (GPOINTER_TO_UINT (g_hash_table_lookup (got, key)), ==,
                        GPOINTER_TO_UINT (value));
    }
  /* Neighbouring groups get different colours. */
  for (guint g = 0; g + 1 < n_groups; g++)
    {
      GdkRGBA a, b;
      twb_compile_view_group_colour (g, &a);
      twb_compile_view_group_colour (g + 1, &b);
      g_assert_false (gdk_rgba_equal (&a, &b));
    }
}

/* One line per pass (after "build"), with the report's counts. */
static void
check_passes (TwbCompileView *v, JsonObject *ref)
{
  JsonArray *passes = json_object_get_array_member (ref, "passes");
  g_autofree char *build = twb_compile_view_pass_line (v, 0);
  g_autofree char *want_build = g_strdup_printf (
    "build — %" G_GINT64_FORMAT " nodes → %" G_GINT64_FORMAT " ops",
    json_object_get_int_member (ref, "graph_nodes"),
    json_object_get_int_member (json_array_get_object_element (passes, 0), "before"));
  g_assert_cmpstr (build, ==, want_build);
  gboolean saw_fusion = FALSE;
  for (guint i = 0; i < json_array_get_length (passes); i++)
    {
      JsonObject *ps = json_array_get_object_element (passes, i);
      g_autofree char *line = twb_compile_view_pass_line (v, i + 1);
      g_assert_nonnull (line);
      gint64 before = json_object_get_int_member (ps, "before");
      gint64 after = json_object_get_int_member (ps, "after");
      g_autofree char *head =
        before != after
          ? g_strdup_printf ("%s — %" G_GINT64_FORMAT " → %" G_GINT64_FORMAT " ops: ",
                             json_object_get_string_member (ps, "pass"), before, after)
          : g_strdup_printf ("%s — %" G_GINT64_FORMAT " ops: ",
                             json_object_get_string_member (ps, "pass"), before);
      g_assert_true (g_str_has_prefix (line, head));
      if (strcmp (json_object_get_string_member (ps, "pass"), "fusion") == 0)
        {
          /* Every forward fused kernel is named with its nodes. */
          JsonArray *fused = json_object_get_array_member (ref, "fused");
          for (guint k = 0; k < json_array_get_length (fused); k++)
            {
              JsonObject *f = json_array_get_object_element (fused, k);
              if (strcmp (json_object_get_string_member (f, "phase"), "forward") != 0)
                continue;
              JsonArray *src = json_object_get_array_member (f, "sources");
              GString *want =
                g_string_new (json_object_get_string_member (f, "kernel") + strlen ("fused "));
              g_string_append (want, " (");
              for (guint s = 0; s < json_array_get_length (src); s++)
                g_string_append_printf (want, "%s%s", s ? ", " : "",
                                        json_array_get_string_element (src, s));
              g_string_append_c (want, ')');
              g_assert_nonnull (strstr (line, want->str));
              g_string_free (want, TRUE);
            }
          saw_fusion = TRUE;
        }
    }
  g_assert_true (saw_fusion);
  g_assert_null (twb_compile_view_pass_line (v, json_array_get_length (passes) + 1));
}

/* No two buffers share memory while both are live; all lie in the arena. */
static void
check_memory (TwbCompileView *v, JsonObject *ref, gsize ref_eager)
{
  gsize arena, eager;
  guint n;
  twb_compile_view_get_memory (v, &arena, &eager, &n);
  g_assert_cmpuint (arena, ==, (gsize) json_object_get_int_member (ref, "arena_bytes"));
  g_assert_cmpuint (eager, ==, ref_eager);
  g_assert_cmpuint (arena, <, eager); /* the planner reuses memory on these models */
  guint nb;
  const tw_compile_buffer *b = twb_compile_view_get_buffers (v, &nb);
  g_assert_cmpuint (nb, ==, n);
  g_assert_cmpuint (n, >, 3);
  gint64 n_instrs = json_object_get_int_member (ref, "instructions");
  gsize total = 0;
  for (guint i = 0; i < n; i++)
    {
      g_test_message ("buffer %s: %zu bytes at %" G_GINT64_FORMAT ", instructions %d-%d", b[i].name,
                      b[i].bytes, b[i].offset, b[i].first, b[i].last);
      g_assert_cmpint (b[i].first, >=, 0);
      g_assert_cmpint (b[i].first, <=, b[i].last);
      g_assert_cmpint (b[i].last, <=, n_instrs);
      g_assert_cmpint (b[i].offset, >=, 0);
      g_assert_cmpuint (b[i].offset + b[i].bytes, <=, arena);
      g_assert_cmpuint (b[i].bytes, >, 0);
      total += b[i].bytes;
      for (guint j = i + 1; j < n; j++)
        {
          gboolean live = !(b[i].last < b[j].first || b[j].last < b[i].first);
          gboolean mem = b[i].offset < b[j].offset + (gint64) b[j].bytes &&
                         b[j].offset < b[i].offset + (gint64) b[i].bytes;
          if (live && mem)
            g_error ("buffers %s [%d, %d] and %s [%d, %d] overlap in the arena", b[i].name,
                     b[i].first, b[i].last, b[j].name, b[j].first, b[j].last);
        }
    }
  /* Reuse: the buffers add up to more than the arena holds at once. */
  g_assert_cmpuint (total, >, arena);
  g_assert_cmpuint (total, <=, (gsize) json_object_get_int_member (ref, "unplanned_bytes"));

  /* The read-out over the largest buffer's rectangle names it. */
  guint big = 0;
  for (guint i = 1; i < n; i++)
    if (b[i].bytes > b[big].bytes)
      big = i;
  graphene_rect_t rc;
  g_assert_true (twb_compile_view_buffer_rect (v, big, &rc));
  g_assert_cmpfloat (rc.size.width, >, 0);
  g_assert_cmpfloat (rc.size.height, >, 1);
  g_autofree char *readout = twb_compile_view_memory_readout_at (v, rc.origin.x + rc.size.width / 2,
                                                                 rc.origin.y + rc.size.height / 2);
  g_autofree char *want = g_strdup_printf ("%s · ", b[big].name);
  g_autofree char *bytes =
    g_strdup_printf ("(%zu bytes) · instructions %d–", b[big].bytes, b[big].first);
  g_assert_nonnull (readout);
  g_assert_true (g_str_has_prefix (readout, want));
  g_assert_nonnull (strstr (readout, bytes));
  g_assert_null (twb_compile_view_memory_readout_at (v, 1, 1)); /* the axis margin */
}

/* The nth (from 0) descendant of type t, depth first. */
static GtkWidget *
nth_descendant (GtkWidget *w, GType t, guint n)
{
  guint seen = 0;
  GPtrArray *stack = g_ptr_array_new ();
  GtkWidget *found = NULL;
  g_ptr_array_add (stack, w);
  while (stack->len && found == NULL)
    {
      GtkWidget *x = g_ptr_array_steal_index (stack, stack->len - 1);
      if (x != w && G_TYPE_CHECK_INSTANCE_TYPE (x, t) && seen++ == n)
        found = x;
      for (GtkWidget *c = gtk_widget_get_last_child (x); c; c = gtk_widget_get_prev_sibling (c))
        g_ptr_array_add (stack, c);
    }
  g_ptr_array_unref (stack);
  return found;
}

static void
on_group (TwbCompileView *v, guint group, gpointer data)
{
  *(int *) data = (int) group;
}

static void
check_model (const char *file, const char *shot)
{
  g_autoptr (tw_model) m = load_model (file);
  gsize ref_eager;
  g_autoptr (JsonNode) root = reference_report (m, &ref_eager);
  JsonObject *ref = json_node_get_object (root);
  g_assert_cmpstr (json_object_get_string_member (ref, "kind"), ==, "step");

  GtkWidget *window;
  TwbCompileView *v = TWB_COMPILE_VIEW (show_view (1280, 260, &window));
  g_autoptr (GError) error = NULL;
  g_assert_true (twb_compile_view_set_model (v, m, &error));
  g_assert_no_error (error);
  twt_ui_pump ();
  g_assert_null (twb_compile_view_get_error (v));
  check_groups (v, ref);
  check_passes (v, ref);
  check_memory (v, ref, ref_eager);
  screenshot (window, shot);

  /* Activating a group's row says which group. */
  int activated = -1;
  g_signal_connect (v, "group-activated", G_CALLBACK (on_group), &activated);
  GtkWidget *groups = nth_descendant (GTK_WIDGET (v), GTK_TYPE_LIST_BOX, 1); /* after passes */
  g_assert_nonnull (groups);
  g_signal_emit_by_name (groups, "row-activated",
                         gtk_list_box_get_row_at_index (GTK_LIST_BOX (groups), 1));
  g_assert_cmpint (activated, ==, 1);
  gtk_window_destroy (GTK_WINDOW (window));
  twt_ui_pump ();
}

static void
test_mlp (void)
{
  check_model ("mlp.json", "compile-view-mlp.png");
}

static void
test_lenet5 (void)
{
  check_model ("lenet5.json", "compile-view-lenet5.png");
}

/* Where the memory plan lies inside the view. */
static void
memory_origin (TwbCompileView *v, GtkWidget **area_out, graphene_rect_t *out)
{
  /* The memory section is the view's last child, the plan its last. */
  GtkWidget *area = gtk_widget_get_last_child (gtk_widget_get_last_child (GTK_WIDGET (v)));
  g_assert_true (GTK_IS_DRAWING_AREA (area));
  g_assert_true (gtk_widget_compute_bounds (area, GTK_WIDGET (v), out));
  *area_out = area;
}

static void
test_layouts (void)
{
  g_autoptr (tw_model) m = load_model ("lenet5.json");
  g_autoptr (GError) error = NULL;
  GtkWidget *window, *area;
  graphene_rect_t r;

  /* A bottom panel: the plan takes the right part at full height. */
  TwbCompileView *v = TWB_COMPILE_VIEW (show_view (1280, 260, &window));
  g_assert_true (twb_compile_view_set_model (v, m, &error));
  twt_ui_pump ();
  g_assert_cmpint (gtk_widget_get_height (GTK_WIDGET (v)), <=, 260);
  memory_origin (v, &area, &r);
  g_assert_cmpfloat (r.origin.x, >, 1280 / 2);
  g_assert_cmpfloat (r.size.height, >, 120);
  g_assert_cmpfloat (r.origin.y + r.size.height, <=, 260 + 0.5);
  gtk_window_destroy (GTK_WINDOW (window));

  /* A side panel: stacked, the plan at the bottom with the full width. */
  v = TWB_COMPILE_VIEW (show_view (360, 600, &window));
  g_assert_true (twb_compile_view_set_model (v, m, &error));
  twt_ui_pump ();
  g_assert_cmpint (gtk_widget_get_width (GTK_WIDGET (v)), <=, 360);
  memory_origin (v, &area, &r);
  g_assert_cmpfloat (r.origin.x, <, 1);
  g_assert_cmpfloat (r.size.width, >, 340);
  g_assert_cmpfloat (r.origin.y, >, 600 / 3);
  g_assert_cmpfloat (r.origin.y + r.size.height, <=, 600 + 0.5);
  graphene_rect_t rc;
  g_assert_true (twb_compile_view_buffer_rect (v, 0, &rc));
  g_assert_cmpfloat (rc.origin.x + rc.size.width, <=, r.size.width);
  screenshot (window, "compile-view-side.png");
  gtk_window_destroy (GTK_WINDOW (window));
  twt_ui_pump ();
}

static void
test_shape_error (void)
{
  g_autofree char *path =
    g_build_filename (g_getenv ("TWB_ASSETS_DIR"), "models", "lenet5.json", NULL);
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  /* conv1's 50 × 50 kernel does not fit the 28 × 28 (+ 2 padding) image. */
  const char *good = "\"kernel_size\": 5, \"padding\": 2";
  char *at = strstr (text, good);
  g_assert_nonnull (at);
  GString *bad = g_string_new_len (text, at - text);
  g_string_append (bad, "\"kernel_size\": 50, \"padding\": 2");
  g_string_append (bad, at + strlen (good));
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) broken =
    tw_model_load_from_data (bad->str, (gssize) bad->len, "lenet5-bad.json", &error);
  g_string_free (bad, TRUE);
  g_assert_no_error (error);
  g_autoptr (tw_model) m = load_model ("lenet5.json");

  GtkWidget *window;
  TwbCompileView *v = TWB_COMPILE_VIEW (show_view (1280, 260, &window));
  /* A good model first: nothing of it may stay. */
  g_assert_true (twb_compile_view_set_model (v, m, &error));
  g_assert_cmpuint (twb_compile_view_n_groups (v), >, 0);
  g_assert_false (twb_compile_view_set_model (v, broken, &error));
  g_assert_nonnull (error);
  g_assert_nonnull (strstr (error->message, "conv1"));
  twt_ui_pump ();
  g_assert_cmpuint (twb_compile_view_n_groups (v), ==, 0);
  g_assert_cmpuint (g_hash_table_size (twb_compile_view_node_groups (v)), ==, 0);
  g_assert_null (twb_compile_view_get_report (v));
  g_assert_nonnull (strstr (twb_compile_view_get_error (v), "conv1"));
  guint n;
  gsize arena, eager;
  g_assert_null (twb_compile_view_get_buffers (v, &n));
  g_assert_cmpuint (n, ==, 0);
  twb_compile_view_get_memory (v, &arena, &eager, &n);
  g_assert_cmpuint (arena + eager + n, ==, 0);
  g_assert_null (twb_compile_view_pass_line (v, 0));
  /* The summary line shows the message. */
  GtkWidget *summary = gtk_widget_get_first_child (GTK_WIDGET (v));
  g_assert_true (GTK_IS_LABEL (summary));
  g_assert_nonnull (strstr (gtk_label_get_text (GTK_LABEL (summary)), "conv1"));
  screenshot (window, "compile-view-error.png");
  gtk_window_destroy (GTK_WINDOW (window));
  twt_ui_pump ();
}

/* Exported PNG: the requested size, drawn (not a blank background), on a
 * background of the theme's lightness. */
static void
check_export (TwbCompileView *v, const char *name, gboolean dark)
{
  g_autofree char *path = g_build_filename (shots_dir, name, NULL);
  g_autoptr (GError) error = NULL;
  g_assert_true (twb_compile_view_export (v, path, 900, 300, &error));
  g_assert_no_error (error);
  g_autoptr (GdkTexture) tex = gdk_texture_new_from_filename (path, &error);
  g_assert_no_error (error);
  g_assert_cmpint (gdk_texture_get_width (tex), ==, 900);
  g_assert_cmpint (gdk_texture_get_height (tex), ==, 300);
  g_autofree guint32 *px = g_new (guint32, 900 * 300);
  gdk_texture_download (tex, (guchar *) px, 900 * 4);
  guint32 bg = px[0];
  double lum =
    (0.299 * ((bg >> 16) & 0xff) + 0.587 * ((bg >> 8) & 0xff) + 0.114 * (bg & 0xff)) / 255.0;
  if (dark)
    g_assert_cmpfloat (lum, <, 0.3);
  else
    g_assert_cmpfloat (lum, >, 0.8);
  guint drawn = 0;
  for (guint i = 0; i < 900 * 300; i++)
    drawn += px[i] != bg;
  /* Buffers fill a good part of the plot (LeNet-5's arena is mostly in use). */
  g_assert_cmpuint (drawn, >, 900 * 300 / 10);
  g_test_message ("export: %s (%u of %u pixels drawn)", path, drawn, 900 * 300);
}

static void
test_export (void)
{
  g_autoptr (tw_model) m = load_model ("lenet5.json");
  g_autoptr (GError) error = NULL;
  GtkWidget *window;
  TwbCompileView *v = TWB_COMPILE_VIEW (show_view (1280, 260, &window));
  g_assert_true (twb_compile_view_set_model (v, m, &error));
  twt_ui_pump ();
  check_export (v, "compile-view-export-light.png", FALSE);
  g_assert_false (twb_compile_view_export (v, "/nonexistent-dir/plan.png", 100, 100, &error));
  g_assert_nonnull (strstr (error->message, "/nonexistent-dir/plan.png"));
  g_clear_error (&error);
  g_assert_false (twb_compile_view_export (v, "plan.bmp", 100, 100, &error));
  g_assert_nonnull (strstr (error->message, "plan.bmp"));
  g_clear_error (&error);

  GtkSettings *settings = gtk_settings_get_default ();
  g_object_set (settings, "gtk-application-prefer-dark-theme", TRUE, NULL);
  twt_ui_pump ();
  check_export (v, "compile-view-export-dark.png", TRUE);
  screenshot (window, "compile-view-dark.png");
  g_object_set (settings, "gtk-application-prefer-dark-theme", FALSE, NULL);
  gtk_window_destroy (GTK_WINDOW (window));
  twt_ui_pump ();
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  /* Any warning or critical, ours or GTK's, fails the test. */
  g_log_set_always_fatal (G_LOG_FATAL_MASK | G_LOG_LEVEL_WARNING | G_LOG_LEVEL_CRITICAL);
  if (!gtk_init_check ())
    {
      g_print ("1..0 # SKIP no display\n");
      return 0;
    }
  tw_ops_init ();
  twb_application_load_style ();
  const char *dir = g_getenv ("TWB_TEST_SHOTS");
  shots_dir = dir ? g_strdup (dir) : g_dir_make_tmp ("twb-compile-view-XXXXXX", NULL);

  g_test_add_func ("/compile-view/mlp", test_mlp);
  g_test_add_func ("/compile-view/lenet5", test_lenet5);
  g_test_add_func ("/compile-view/layouts", test_layouts);
  g_test_add_func ("/compile-view/shape-error", test_shape_error);
  g_test_add_func ("/compile-view/export", test_export);
  int rc = g_test_run ();
  g_free (shots_dir);
  return rc;
}
