/* canvas-bench.c — graph canvas frame time with 100, 1,000 and 5,000 nodes,
 * and incremental shape inference after one edit.
 *
 *   build/bench/canvas-bench            (under xvfb-run for the widget rows)
 *
 * Rows:
 *   cairo fit / 100%  twb_graph_render onto a 1280x800 image surface, the
 *                     whole graph in view (level of detail) and at 100 %
 *                     (culling); no display needed.
 *   cairo 35% / 50%   the same at 35 % (boxes as tiles with their op in
 *                     type of 9 px and more) and 50 % (names and ops in
 *                     the boxes, enlarged to 9-10 px).
 *   widget fit        the TwbGraphCanvas in a 1280x800 window: its snapshot() ->
 *                     render node -> gsk_renderer_render_texture (the
 *                     window's renderer: cairo with GSK_RENDERER=cairo).
 * Each figure is the mean of 30 frames after 3 warm-up frames.
 * Floors (issue 4): 5,000 nodes under 16 ms a frame; inference under 5 ms.
 */
#include "graph_editor/twb-graph-canvas.h"
#include "graph_editor/twb-graph-render.h"

#include <stdio.h>

#define FRAMES 30
#define WARMUP 3
#define W 1280
#define H 800

/* A chain x -> (linear, relu)* in rows of 40 boxes, 250 x 150 apart: what a
 * deep model looks like after auto layout wraps it. */
static TwbDocument *
make_doc (int n)
{
  tw_model *m = tw_model_new ("bench");
  tw_graph *g = m->graph;
  tw_node *x = tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]) { 64 }, "data");
  tw_graph_set_pos (g, x, 40, 40);
  char prev[32] = "x";
  for (int i = 1; i < n; i++)
    {
      char id[32];
      g_snprintf (id, sizeof id, "n%d", i);
      tw_attrs *a = NULL;
      const char *op = i % 2 ? "linear" : "relu";
      if (i % 2)
        {
          a = tw_attrs_new ();
          tw_attrs_set_int (a, "out_features", 64);
        }
      const char *inputs[] = { prev, NULL };
      tw_node *nd = tw_graph_add_node (g, id, op, a, inputs, NULL);
      tw_attrs_free (a);
      tw_graph_set_pos (g, nd, 40 + (i % 40) * 250.0, 40 + (i / 40) * 150.0);
      g_strlcpy (prev, id, sizeof prev);
    }
  return twb_document_new_for_model (m);
}

static double
time_cairo (const TwbGraphScene *s, double scale, double tx, double ty, int *drawn)
{
  cairo_surface_t *surf = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, W, H);
  TwbRenderView v;
  twb_render_view_init (&v);
  v.scale = scale;
  v.tx = tx;
  v.ty = ty;
  v.width = W;
  v.height = H;
  gint64 t0 = 0;
  for (int f = 0; f < WARMUP + FRAMES; f++)
    {
      if (f == WARMUP)
        t0 = g_get_monotonic_time ();
      cairo_t *cr = cairo_create (surf);
      twb_graph_render (cr, s, &v);
      cairo_destroy (cr);
      cairo_surface_flush (surf);
    }
  double ms = (g_get_monotonic_time () - t0) / 1000.0 / FRAMES;
  *drawn = twb_graph_render_last_drawn_nodes ();
  cairo_surface_destroy (surf);
  return ms;
}

static double
time_widget (GtkWidget *win, GtkWidget *canvas)
{
  GskRenderer *r = gtk_native_get_renderer (GTK_NATIVE (win));
  int w = gtk_widget_get_width (canvas), h = gtk_widget_get_height (canvas);
  gint64 t0 = 0;
  for (int f = 0; f < WARMUP + FRAMES; f++)
    {
      if (f == WARMUP)
        t0 = g_get_monotonic_time ();
      /* The widget's own snapshot() (a widget paintable would hand back
       * its cached node), then the renderer. */
      GtkSnapshot *snap = gtk_snapshot_new ();
      GTK_WIDGET_GET_CLASS (canvas)->snapshot (canvas, snap);
      GskRenderNode *node = gtk_snapshot_free_to_node (snap);
      GdkTexture *t = gsk_renderer_render_texture (r, node, &GRAPHENE_RECT_INIT (0, 0, w, h));
      g_object_unref (t);
      gsk_render_node_unref (node);
    }
  return (g_get_monotonic_time () - t0) / 1000.0 / FRAMES;
}

int
main (int argc, char **argv)
{
  tw_ops_init ();
  gboolean display = gtk_init_check ();
  const int sizes[] = { 100, 1000, 5000 };
  printf ("%-6s %-22s %10s %8s\n", "nodes", "path", "ms/frame", "drawn");
  for (guint k = 0; k < G_N_ELEMENTS (sizes); k++)
    {
      int n = sizes[k];
      g_autoptr (TwbDocument) doc = make_doc (n);
      TwbGraphScene *s = twb_graph_scene_new (doc);
      double bw = s->max_x - s->min_x, bh = s->max_y - s->min_y;
      double fit = MIN ((W - 80) / bw, (H - 80) / bh);
      int drawn;
      double ms = time_cairo (s, fit, 40 - s->min_x * fit, 40 - s->min_y * fit, &drawn);
      printf ("%-6d %-22s %10.2f %8d\n", n, "cairo, fit (LOD)", ms, drawn);
      ms = time_cairo (s, 1.0, 0, 0, &drawn);
      printf ("%-6d %-22s %10.2f %8d\n", n, "cairo, 100% (culled)", ms, drawn);
      ms = time_cairo (s, 0.35, 0, 0, &drawn);
      printf ("%-6d %-22s %10.2f %8d\n", n, "cairo, 35% (tiles)", ms, drawn);
      ms = time_cairo (s, 0.5, 0, 0, &drawn);
      printf ("%-6d %-22s %10.2f %8d\n", n, "cairo, 50% (labels)", ms, drawn);
      twb_graph_scene_free (s);

      if (display)
        {
          GtkWidget *win = gtk_window_new ();
          GtkWidget *canvas = twb_graph_canvas_new ();
          gtk_window_set_child (GTK_WINDOW (win), canvas);
          gtk_window_set_default_size (GTK_WINDOW (win), W, H);
          twb_graph_canvas_set_document (TWB_GRAPH_CANVAS (canvas), doc);
          gtk_window_present (GTK_WINDOW (win));
          gint64 until = g_get_monotonic_time () + 3 * G_USEC_PER_SEC;
          while (g_get_monotonic_time () < until
                 && !(gtk_widget_get_mapped (canvas) && gtk_widget_get_width (canvas) > 0))
            if (!g_main_context_iteration (NULL, FALSE))
              g_usleep (1000);
          twb_graph_canvas_zoom_to_fit (TWB_GRAPH_CANVAS (canvas));
          ms = time_widget (win, canvas);
          printf ("%-6d %-22s %10.2f %8s\n", n, "widget, fit (GSK)", ms, "");
          gtk_window_destroy (GTK_WINDOW (win));
        }

      /* One edit in the middle of the chain: incremental inference. */
      g_autofree char *mid = g_strdup_printf ("n%d", (n / 2) | 1);
      double sum = 0;
      for (int i = 0; i < 10; i++)
        {
          twb_document_set_attr_int (doc, mid, "out_features", 32 + (i % 2) * 32, NULL);
          sum += twb_document_last_infer_us (doc);
        }
      printf ("%-6d %-22s %10.3f\n", n, "infer after 1 edit", sum / 10 / 1000.0);
    }
  if (!display)
    printf ("(no display: widget rows skipped; run under xvfb-run for them)\n");
  return 0;
}
