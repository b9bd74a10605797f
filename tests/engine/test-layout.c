/* test-layout.c — engine/layout.c, the one layout of import, Arrange and
 * files without positions, on the graphs torchvision's ResNet-18, ResNet-50
 * and MobileNetV2 import to (tests/engine/data/torchvision, no torch
 * needed) and on graphs built here: the modules folded from the ids, the
 * picture read at TW_LAYOUT_READ_ZOOM in the default view, no two visible
 * boxes overlapping, frames around what they hold, rows shaped by the
 * view's aspect, nested blocks that overlap in part left out, room made
 * for a block opened in a layout moved by hand, and a 2,000-node layout
 * in well under a second. */
#include "engine/layout.h"

#include <math.h>
#include <string.h>

static const tw_layout_view default_view = TW_LAYOUT_VIEW_DEFAULT;
/* The canvas of a 1600 × 1000 window (tests/ui/test-readable.c measures
 * both). */
static const tw_layout_view large_view = { 1098, 740, 884, 596, 202, 132 };

static tw_model *
load (const char *name)
{
  g_autofree char *file = g_strdup_printf ("%s.json", name);
  g_autofree char *path = g_build_filename (TW_TEST_DATA_DIR, "torchvision", file, NULL);
  g_autoptr (GError) error = NULL;
  tw_model *m = tw_model_load (path, &error);
  g_assert_no_error (error);
  for (int i = 0; i < tw_graph_n_nodes (m->graph); i++)
    g_assert_false (tw_graph_node (m->graph, i)->has_pos);
  return m;
}

static tw_layout_block *
find (GPtrArray *blocks, const char *name)
{
  for (guint k = 0; blocks && k < blocks->len; k++)
    if (strcmp (((tw_layout_block *) blocks->pdata[k])->name, name) == 0)
      return blocks->pdata[k];
  return NULL;
}

typedef struct
{
  double x, y, w, h;
  int node;      /* graph index, or -1 */
  int block;     /* block index, or -1 */
} box;

static gboolean
meet (const box *a, const box *b)
{
  return a->x < b->x + b->w && b->x < a->x + a->w && a->y < b->y + b->h && b->y < a->y + a->h;
}

/* Whether block k (or one around it) is closed. */
static gboolean
hidden_block (GPtrArray *blocks, const int *parent, int k)
{
  for (int p = parent[k]; p >= 0; p = parent[p])
    if (((tw_layout_block *) blocks->pdata[p])->collapsed)
      return TRUE;
  return FALSE;
}

/* What the canvas shows of a graph laid out at xs, ys with blocks: the
 * boxes (nodes in no closed block, outermost closed blocks) and the
 * frames (open blocks in no closed one).  Checks what must hold of any
 * such picture: no two boxes overlap; a frame holds every box inside it
 * with its padding and band, meets no box outside it, and two frames are
 * nested or apart.  Returns the number of boxes. */
static int
check_picture (const tw_graph *g, GPtrArray *blocks, const double *xs, const double *ys,
               const char *what)
{
  int n = tw_graph_n_nodes (g), nb = blocks ? (int) blocks->len : 0;
  tw_layout_block **b = blocks ? (tw_layout_block **) blocks->pdata : NULL;
  for (int i = 0; i < n; i++)
    tw_graph_set_pos ((tw_graph *) g, tw_graph_node (g, i), xs[i], ys[i]);
  tw_layout_place_blocks (g, b, nb);
  g_autofree int *parent = g_new (int, MAX (nb, 1));
  g_autofree int *owner = g_new (int, MAX (n, 1));
  tw_layout_nesting (g, b, nb, parent, owner);
  g_autoptr (GArray) boxes = g_array_new (FALSE, FALSE, sizeof (box));
  g_autoptr (GArray) frames = g_array_new (FALSE, FALSE, sizeof (box));
  for (int i = 0; i < n; i++)
    {
      int o = owner[i];
      if (o >= 0 && (b[o]->collapsed || hidden_block (blocks, parent, o)))
        continue;
      box x = { xs[i], ys[i], 0, 0, i, -1 };
      tw_layout_node_size (tw_graph_node (g, i), &x.w, &x.h);
      g_array_append_val (boxes, x);
    }
  for (int k = 0; k < nb; k++)
    {
      g_assert_cmpint (parent[k], >=, -1);
      if (hidden_block (blocks, parent, k))
        continue;
      box x = { b[k]->x, b[k]->y, b[k]->w, b[k]->h, -1, k };
      g_array_append_val (b[k]->collapsed ? boxes : frames, x);
    }
  for (guint i = 0; i < boxes->len; i++)
    for (guint j = 0; j < i; j++)
      if (meet (&g_array_index (boxes, box, i), &g_array_index (boxes, box, j)))
        g_error ("%s: boxes %u and %u overlap", what, i, j);
  for (guint f = 0; f < frames->len; f++)
    {
      const box *fr = &g_array_index (frames, box, f);
      const tw_layout_block *fb = b[fr->block];
      for (guint i = 0; i < boxes->len; i++)
        {
          const box *x = &g_array_index (boxes, box, i);
          /* Inside: a member node, or a closed block inside this one. */
          int in = x->node >= 0 ? owner[x->node] : parent[x->block];
          while (in >= 0 && in != fr->block)
            in = parent[in];
          if (in == fr->block)
            {
              g_assert_cmpfloat (x->x, >=, fr->x + TW_LAYOUT_FRAME_PAD - 1e-6);
              g_assert_cmpfloat (x->y, >=, fr->y + TW_LAYOUT_FRAME_HEADER - 1e-6);
              g_assert_cmpfloat (x->x + x->w, <=, fr->x + fr->w - TW_LAYOUT_FRAME_PAD + 1e-6);
              g_assert_cmpfloat (x->y + x->h, <=, fr->y + fr->h - TW_LAYOUT_FRAME_PAD + 1e-6);
            }
          else if (meet (x, fr))
            g_error ("%s: a box outside frame %s meets it", what, fb->name);
        }
      for (guint e = 0; e < f; e++)
        {
          const box *other = &g_array_index (frames, box, e);
          gboolean nested = FALSE;
          for (int p = parent[fr->block]; p >= 0; p = parent[p])
            nested |= p == other->block;
          for (int p = parent[other->block]; p >= 0; p = parent[p])
            nested |= p == fr->block;
          if (!nested && meet (fr, other))
            g_error ("%s: frames %s and %s overlap", what, fb->name, b[other->block]->name);
        }
    }
  return (int) boxes->len;
}

/* The zoom the picture fits the view at (its boxes clear of the minimap). */
static double
fit_of (const tw_graph *g, GPtrArray *blocks, const tw_layout_view *view)
{
  return tw_layout_compute (g, blocks ? (tw_layout_block **) blocks->pdata : NULL,
                            blocks ? (int) blocks->len : 0, view, NULL, NULL);
}

/* Lays out the graph for view with blocks (into the nodes' places) and
 * checks the picture; returns the number of boxes. */
static int
lay_out (tw_graph *g, GPtrArray *blocks, const tw_layout_view *view, const char *what)
{
  int n = tw_graph_n_nodes (g);
  g_autofree double *xs = g_new (double, n);
  g_autofree double *ys = g_new (double, n);
  tw_layout_compute (g, blocks ? (tw_layout_block **) blocks->pdata : NULL,
                     blocks ? (int) blocks->len : 0, view, xs, ys);
  return check_picture (g, blocks, xs, ys, what);
}

/* ResNet-18 in the default and the large view: the stages and their
 * residual blocks are blocks (layer1 … layer4 holding layerN.0 and
 * layerN.1); the fold opens as many levels as read at TW_LAYOUT_READ_ZOOM
 * and no more: the stages open (four frames read better than four boxes
 * of four blocks' worth), the residual blocks closed because opening them
 * too would not read.  ResNet-50: the stages closed in the default view
 * (its 16 bottlenecks do not fit at 0.5), open in the large one. */
static void
test_fold_resnet (void)
{
  g_autoptr (tw_model) m = load ("resnet18");
  tw_graph *g = m->graph;
  const tw_layout_view *views[] = { &default_view, &large_view };
  for (guint v = 0; v < G_N_ELEMENTS (views); v++)
    {
      g_autoptr (GPtrArray) blocks = tw_layout_fold (g, views[v]);
      g_assert_nonnull (blocks);
      g_assert_cmpuint (blocks->len, ==, 12);
      for (int s = 1; s <= 4; s++)
        {
          g_autofree char *stage = g_strdup_printf ("layer%d", s);
          tw_layout_block *b = find (blocks, stage);
          g_assert_nonnull (b);
          g_assert_false (b->collapsed);
          for (int r = 0; r < 2; r++)
            {
              g_autofree char *res = g_strdup_printf ("layer%d.%d", s, r);
              tw_layout_block *rb = find (blocks, res);
              g_assert_nonnull (rb);
              g_assert_true (rb->collapsed);
              /* conv1, relu, conv2, (downsample,) add, relu_1 */
              g_assert_cmpint (rb->n_members, ==, r == 0 && s > 1 ? 6 : 5);
            }
        }
      double fit = fit_of (g, blocks, views[v]);
      g_test_message ("resnet18: fit %.3f in the %s view", fit, v == 0 ? "default" : "large");
      g_assert_cmpfloat (fit, >=, TW_LAYOUT_READ_ZOOM);
      /* x conv1 relu maxpool, 8 residual blocks, avgpool flatten fc, label loss */
      g_assert_cmpint (lay_out (g, blocks, views[v], "resnet18"), ==, 17);
      /* One level more open would not read: that is why the residual
       * blocks are closed; nor would the graph without blocks. */
      for (guint k = 0; k < blocks->len; k++)
        ((tw_layout_block *) blocks->pdata[k])->collapsed = FALSE;
      g_assert_cmpfloat (fit_of (g, blocks, views[v]), <, TW_LAYOUT_READ_ZOOM);
      g_assert_cmpfloat (fit_of (g, NULL, views[v]), <, TW_LAYOUT_READ_ZOOM);
    }

  g_autoptr (tw_model) m50 = load ("resnet50");
  g_autoptr (GPtrArray) b50 = tw_layout_fold (m50->graph, &default_view);
  g_assert_cmpuint (b50->len, ==, 20);
  g_assert_true (find (b50, "layer3")->collapsed);
  g_assert_cmpint (find (b50, "layer3")->n_members, ==, 43);
  double fit = fit_of (m50->graph, b50, &default_view);
  g_test_message ("resnet50: fit %.3f in the default view", fit);
  g_assert_cmpfloat (fit, >=, TW_LAYOUT_READ_ZOOM);
  g_assert_cmpint (lay_out (m50->graph, b50, &default_view, "resnet50"), ==, 13);
  g_autoptr (GPtrArray) l50 = tw_layout_fold (m50->graph, &large_view);
  g_assert_false (find (l50, "layer3")->collapsed);
  g_assert_true (find (l50, "layer3.5")->collapsed);
  fit = fit_of (m50->graph, l50, &large_view);
  g_test_message ("resnet50: fit %.3f in the large view", fit);
  g_assert_cmpfloat (fit, >=, TW_LAYOUT_READ_ZOOM);
  g_assert_cmpint (lay_out (m50->graph, l50, &large_view, "resnet50 large"), ==, 25);
}

/* MobileNetV2: "features" holds 97 of its 103 nodes, so it is open even
 * where the picture then reads only at 0.45 (one closed box would say
 * nothing); its inverted residual blocks are closed, named features.1 …
 * features.17 (the "conv" inside each, all of a block's nodes but the add,
 * is no level of its own; features.0 and features.18, two nodes each, are
 * no blocks). */
static void
test_fold_mobilenet (void)
{
  g_autoptr (tw_model) m = load ("mobilenet_v2");
  tw_graph *g = m->graph;
  g_autoptr (GPtrArray) blocks = tw_layout_fold (g, &default_view);
  g_assert_false (find (blocks, "features")->collapsed);
  g_assert_null (find (blocks, "features.0"));
  g_assert_null (find (blocks, "features.18"));
  g_assert_null (find (blocks, "features.3.conv"));
  for (int k = 1; k <= 17; k++)
    {
      g_autofree char *name = g_strdup_printf ("features.%d", k);
      g_assert_nonnull (find (blocks, name));
      g_assert_true (find (blocks, name)->collapsed);
    }
  double fit = fit_of (g, blocks, &default_view);
  g_test_message ("mobilenet_v2: fit %.3f in the default view", fit);
  /* TWB_RENDER_TEXT_SCALE: names and ops still drawn, at 9 px. */
  g_assert_cmpfloat (fit, >=, 0.45);
  /* x, 17 blocks, features.0's and .18's two nodes each, pool flatten
   * classifier, label loss */
  g_assert_cmpint (lay_out (g, blocks, &default_view, "mobilenet_v2"), ==, 27);
  g_autoptr (GPtrArray) large = tw_layout_fold (g, &large_view);
  fit = fit_of (g, large, &large_view);
  g_test_message ("mobilenet_v2: fit %.3f in the large view", fit);
  g_assert_cmpfloat (fit, >=, TW_LAYOUT_READ_ZOOM);
}

/* Module rules on ids made up here: "a.b" holding what "a" holds is one
 * block ("a"); a module of two nodes is none; ids without dots: no blocks. */
static void
test_fold_names (void)
{
  g_autoptr (tw_graph) g = tw_graph_new ();
  tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]) { 8 }, "data");
  const char *ids[] = { "a.b.r1", "a.b.r2", "a.b.r3", "c.r1", "c.r2", "d.e.r1", "d.e.r2",
                        "d.e.r3", "d.f.r1", "d.f.r2", "d.f.r3" };
  const char *prev = "x";
  for (guint k = 0; k < G_N_ELEMENTS (ids); k++)
    {
      g_assert_nonnull (tw_graph_add (g, ids[k], "relu", NULL, prev, NULL));
      prev = ids[k];
    }
  g_autoptr (GPtrArray) blocks = tw_layout_fold (g, &default_view);
  g_assert_nonnull (blocks);
  g_assert_nonnull (find (blocks, "a"));
  g_assert_null (find (blocks, "a.b"));
  g_assert_null (find (blocks, "c"));
  g_assert_cmpint (find (blocks, "d")->n_members, ==, 6);
  g_assert_nonnull (find (blocks, "d.e"));
  g_assert_nonnull (find (blocks, "d.f"));
  /* 12 nodes read at 0.5: all open. */
  for (guint k = 0; k < blocks->len; k++)
    g_assert_false (((tw_layout_block *) blocks->pdata[k])->collapsed);
  lay_out (g, blocks, &default_view, "made-up modules");

  g_autoptr (tw_graph) flat = tw_graph_new ();
  tw_graph_add_input (flat, "x", TW_F32, 1, (int64_t[]) { 8 }, "data");
  tw_graph_add (flat, "fc1", "linear", NULL, "x", NULL);
  g_assert_null (tw_layout_fold (flat, &default_view));
}

/* ResNet-50 and MobileNetV2 with the ids an exporter without module names
 * gives ("Conv_12"): their residual blocks (with the relu after the add)
 * are the blocks, found from the graph's shape; the graph reads at 0.5
 * (ResNet-50) or where names are drawn (MobileNetV2: its blocks without a
 * skip are chains, not folded); a small graph gets none. */
static void
test_fold_structure (void)
{
  const char *names[] = { "resnet50", "mobilenet_v2" };
  const int want[] = { 16, 10 };
  for (guint k = 0; k < G_N_ELEMENTS (names); k++)
    {
      g_autoptr (tw_model) m = load (names[k]);
      tw_graph *g = m->graph;
      for (int i = 0; i < tw_graph_n_nodes (g); i++)
        {
          tw_node *nd = tw_graph_node (g, i);
          if (strcmp (nd->op_name, "input") == 0)
            continue;
          g_autofree char *old = g_strdup (nd->id);
          g_autofree char *id = g_strdup_printf ("%s_%d", nd->op_name, i);
          g_assert_true (tw_graph_rename_node (g, old, id, NULL));
        }
      g_autoptr (GPtrArray) blocks = tw_layout_fold (g, &default_view);
      g_assert_nonnull (blocks);
      g_assert_cmpuint (blocks->len, ==, want[k]);
      for (guint b = 0; b < blocks->len; b++)
        {
          const tw_layout_block *blk = blocks->pdata[b];
          g_autofree char *name = g_strdup_printf ("block %u", b + 1);
          g_assert_cmpstr (blk->name, ==, name);
          g_assert_true (blk->collapsed);
          /* One add, and the ops of a residual block around it. */
          int adds = 0;
          for (int i = 0; i < blk->n_members; i++)
            adds += strcmp (tw_graph_node (g, blk->members[i])->op_name, "add") == 0;
          g_assert_cmpint (adds, ==, 1);
          if (k == 0)
            g_assert_cmpstr (tw_graph_node (g, blk->members[blk->n_members - 1])->op_name, ==,
                             "relu");
        }
      double fit = fit_of (g, blocks, &default_view);
      g_test_message ("%s without module names: %u blocks, fit %.3f", names[k], blocks->len, fit);
      g_assert_cmpfloat (fit, >=, k == 0 ? TW_LAYOUT_READ_ZOOM : 0.3);
      lay_out (g, blocks, &default_view, names[k]);
    }
  /* Eight nodes with a skip: they read as they are. */
  g_autoptr (tw_graph) small = tw_graph_new ();
  tw_graph_add_input (small, "x", TW_F32, 1, (int64_t[]) { 8 }, "data");
  tw_graph_add (small, "a", "relu", NULL, "x", NULL);
  tw_graph_add (small, "b", "relu", NULL, "a", NULL);
  tw_graph_add (small, "c", "relu", NULL, "b", NULL);
  tw_graph_add (small, "d", "add", NULL, "c", "a", NULL);
  tw_graph_add (small, "e", "relu", NULL, "d", NULL);
  g_assert_null (tw_layout_fold (small, &default_view));
}

/* A chain of n linear/relu nodes, ids as given by fmt ("n%d"). */
static tw_graph *
chain (int n, const char *fmt)
{
  tw_graph *g = tw_graph_new ();
  tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]) { 8 }, "data");
  char prev[64] = "x";
  for (int i = 1; i < n; i++)
    {
      char id[64];
      g_snprintf (id, sizeof id, fmt, i / 10, i);
      tw_graph_add (g, id, i % 2 ? "linear" : "relu", NULL, prev, NULL);
      g_strlcpy (prev, id, sizeof prev);
    }
  return g;
}

/* The rows follow the view's shape: a 60-node chain is wider than tall for
 * a wide canvas and taller than wide for a tall one, and fits either
 * better than in one row; the same input gives the same picture. */
static void
test_aspect (void)
{
  g_autoptr (tw_graph) g = chain (60, "b%d_n%d");
  const tw_layout_view wide = { 1600, 500, 0, 0, 0, 0 }, tall = { 500, 1200, 0, 0, 0, 0 };
  double ww, wh, tw, th;
  tw_layout_extent (g, NULL, 0, &wide, &ww, &wh);
  tw_layout_extent (g, NULL, 0, &tall, &tw, &th);
  g_test_message ("wide view: %.0f x %.0f; tall view: %.0f x %.0f", ww, wh, tw, th);
  g_assert_cmpfloat (ww / wh, >, 1.5);
  g_assert_cmpfloat (tw / th, <, 1.0);
  /* One row: 59 layers of at least 140 and 80 gaps. */
  double one_row = tw_layout_fit (&wide, 59 * 140 + 58 * 80, 56, NULL, NULL);
  g_assert_cmpfloat (tw_layout_fit (&wide, ww, wh, NULL, NULL), >, 2 * one_row);
  lay_out (g, NULL, &wide, "chain, wide");
  lay_out (g, NULL, &tall, "chain, tall");
  int n = tw_graph_n_nodes (g);
  g_autofree double *x1 = g_new (double, n), *y1 = g_new (double, n);
  g_autofree double *x2 = g_new (double, n), *y2 = g_new (double, n);
  tw_layout_compute (g, NULL, 0, &default_view, x1, y1);
  tw_layout_compute (g, NULL, 0, &default_view, x2, y2);
  g_assert_cmpmem (x1, n * sizeof (double), x2, n * sizeof (double));
  g_assert_cmpmem (y1, n * sizeof (double), y2, n * sizeof (double));
}

/* The fit: 40 px margins, 100 % at most, the whole canvas when the picture
 * (its boxes) misses the minimap, else the better strip. */
static void
test_fit (void)
{
  const tw_layout_view *v = &default_view;
  double cx, cy;
  /* Small: 100 %, centred on the whole canvas. */
  g_assert_cmpfloat (tw_layout_fit (v, 200, 100, &cx, &cy), ==, 1.0);
  g_assert_cmpfloat (cx, ==, v->width / 2);
  g_assert_cmpfloat (cy, ==, v->height / 2);
  /* Wide and low: width-bound; 200 tall in the middle it misses the
   * minimap (the whole canvas), 400 tall it does not (the strip above). */
  double s = tw_layout_fit (v, 1406, 400, &cx, &cy);
  g_assert_cmpfloat (fabs (s - (v->width - 80) / 1406), <, 1e-9);
  g_assert_cmpfloat (cy, ==, v->height / 2);
  s = tw_layout_fit (v, 1406, 800, &cx, &cy);
  g_assert_cmpfloat (fabs (s - MIN ((v->width - 80) / 1406, (v->map_y - 80) / 800)), <, 1e-9);
  g_assert_cmpfloat (cy, ==, v->map_y / 2);
  /* Tall: the strip left of it. */
  s = tw_layout_fit (v, 900, 1100, &cx, &cy);
  g_assert_cmpfloat (fabs (s - MIN ((v->map_x - 80) / 900, (v->height - 80) / 1100)), <, 1e-9);
  g_assert_cmpfloat (cx, ==, v->map_x / 2);
  g_assert_cmpfloat (cy, ==, v->height / 2);
  /* Boxes: a wide row over a short one leaves the corner by the minimap
   * empty, so the picture takes the whole canvas (width-bound), where its
   * extent alone would get a strip; a box in that corner gets the strip. */
  const double rows[] = { 0, 0, 1406, 600, 0, 664, 500, 136 };
  s = tw_layout_fit_boxes (v, rows, 2, &cx, &cy);
  g_assert_cmpfloat (fabs (s - (v->width - 80) / 1406), <, 1e-9);
  g_assert_cmpfloat (s, >, tw_layout_fit (v, 1406, 800, NULL, NULL));
  g_assert_cmpfloat (cx, ==, v->width / 2);
  g_assert_cmpfloat (cy, ==, v->height / 2);
  const double corner[] = { 0, 0, 1406, 600, 906, 664, 500, 136 };
  s = tw_layout_fit_boxes (v, corner, 2, NULL, NULL);
  g_assert_cmpfloat (s, <, (v->width - 80) / 1406);
  g_assert_cmpfloat (s, >=, tw_layout_fit (v, 1406, 800, NULL, NULL) - 1e-9);
}

/* Blocks that overlap in part are left out of the nesting (and of the
 * layout, which still places every node); nested ones are kept. */
static void
test_nesting (void)
{
  g_autoptr (tw_graph) g = chain (12, "b%d_n%d");
  int a[] = { 1, 2, 3, 4 }, inner[] = { 2, 3 }, cross[] = { 4, 5, 6 };
  g_autoptr (GPtrArray) blocks
    = g_ptr_array_new_with_free_func ((GDestroyNotify) tw_layout_block_free);
  g_ptr_array_add (blocks, tw_layout_block_new ("a", a, 4, FALSE));
  g_ptr_array_add (blocks, tw_layout_block_new ("inner", inner, 2, TRUE));
  g_ptr_array_add (blocks, tw_layout_block_new ("cross", cross, 3, TRUE));
  int parent[3], owner[12];
  tw_layout_nesting (g, (tw_layout_block **) blocks->pdata, 3, parent, owner);
  g_assert_cmpint (parent[0], ==, -1);
  g_assert_cmpint (parent[1], ==, 0);
  g_assert_cmpint (parent[2], ==, -2);
  g_assert_cmpint (owner[2], ==, 1);
  g_assert_cmpint (owner[5], ==, -1);
  g_ptr_array_remove_index (blocks, 2);
  lay_out (g, blocks, &default_view, "nested");
}

/* ResNet-18 laid out, then a node moved by hand onto the empty space right
 * of layer2.0's box: opening layer2.0 there pushes what its frame would
 * cover aside (tw_layout_make_room), and nothing overlaps. */
static void
test_make_room (void)
{
  g_autoptr (tw_model) m = load ("resnet18");
  tw_graph *g = m->graph;
  int n = tw_graph_n_nodes (g);
  g_autoptr (GPtrArray) blocks = tw_layout_fold (g, &default_view);
  tw_layout_block **b = (tw_layout_block **) blocks->pdata;
  g_autofree double *xs = g_new (double, n), *ys = g_new (double, n);
  tw_layout_compute (g, b, (int) blocks->len, &default_view, xs, ys);
  check_picture (g, blocks, xs, ys, "resnet18 before");
  tw_layout_block *blk = find (blocks, "layer2.0");
  int at = -1;
  for (guint k = 0; k < blocks->len; k++)
    if (b[k] == blk)
      at = (int) k;
  /* avgpool just right of and below the box, where the frame will be. */
  int avg = tw_graph_index_of (g, "avgpool");
  xs[avg] = blk->x + blk->w + 20;
  ys[avg] = blk->y + 30;
  blk->collapsed = FALSE;
  tw_layout_make_room (g, b, (int) blocks->len, at, xs, ys);
  check_picture (g, blocks, xs, ys, "resnet18, layer2.0 opened by hand");
  /* Its members kept their places relative to each other. */
  int c1 = tw_graph_index_of (g, "layer2.0.conv1"), c2 = tw_graph_index_of (g, "layer2.0.conv2");
  g_assert_cmpfloat (xs[c2], >, xs[c1]);
}

/* 2,000 nodes in blocks of ten ("b12.n125"): the fold's layouts and the
 * layout itself well under a second each, and about linear (four times the
 * nodes in under eight times the time: a quadratic pass would take 16). */
static void
test_speed (void)
{
  double ms[2];
  const int sizes[2] = { 500, 2000 };
  for (int k = 0; k < 2; k++)
    {
      g_autoptr (tw_graph) g = chain (sizes[k], "s%d.n%d");
      int n = tw_graph_n_nodes (g);
      g_autofree double *xs = g_new (double, n), *ys = g_new (double, n);
      gint64 t0 = g_get_monotonic_time ();
      g_autoptr (GPtrArray) blocks = tw_layout_fold (g, &default_view);
      tw_layout_compute (g, (tw_layout_block **) blocks->pdata, (int) blocks->len, &default_view,
                         xs, ys);
      ms[k] = (g_get_monotonic_time () - t0) / 1000.0;
      g_test_message ("%d nodes, %u blocks: fold and layout %.1f ms", n, blocks->len, ms[k]);
      if (k == 1)
        check_picture (g, blocks, xs, ys, "2,000 nodes");
    }
  /* A second under ASan on a loaded machine; tens of ms in a plain build. */
  g_assert_cmpfloat (ms[1], <, 1000);
  g_assert_cmpfloat (ms[1], <, 8 * ms[0] + 20);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  g_test_add_func ("/engine/layout/fold-resnet", test_fold_resnet);
  g_test_add_func ("/engine/layout/fold-mobilenet", test_fold_mobilenet);
  g_test_add_func ("/engine/layout/fold-names", test_fold_names);
  g_test_add_func ("/engine/layout/fold-structure", test_fold_structure);
  g_test_add_func ("/engine/layout/aspect", test_aspect);
  g_test_add_func ("/engine/layout/fit", test_fit);
  g_test_add_func ("/engine/layout/nesting", test_nesting);
  g_test_add_func ("/engine/layout/make-room", test_make_room);
  g_test_add_func ("/engine/layout/speed", test_speed);
  return g_test_run ();
}
