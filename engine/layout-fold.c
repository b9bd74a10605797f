/* layout-fold.c — which modules of a graph are blocks, and which of them
 * are folded (see layout.h, tw_layout_fold).
 *
 * The modules come from the node ids, which the ONNX importer and PyTorch's
 * state_dict names write as dotted module paths: "layer1.0.downsample.0"
 * is in "layer1.0.downsample", in "layer1.0", in "layer1".  Every proper
 * prefix at a dot that two nodes or more share is a module; a module
 * holding exactly what its only submodule holds ("features.2" and
 * "features.2.conv") is kept once, by its outer name, and so is one whose
 * only submodule holds all but one of its nodes; a module of fewer than
 * MIN_MEMBERS nodes is no block (a closed box would save no room).  Levels: the
 * top-level modules are depth 0, their submodules depth 1, …  With L
 * levels open, modules of depth < L are expanded frames and those of
 * depth L are closed boxes (deeper ones are inside those).  The largest L
 * whose picture fits the view at TW_LAYOUT_READ_ZOOM wins, each candidate
 * laid out for real (a few layouts: module paths are rarely more than five
 * deep).  A level is opened whatever the zoom while one closed box would
 * hold more than half the graph ("features" of a MobileNetV2): one box
 * says nothing about a model.  Ids that name no modules: the graph's own
 * branching regions (structural_scopes), where it does not read without. */
#define G_LOG_DOMAIN "tw-layout"

#include "engine/layout-private.h"

#include <string.h>

/* Fewer nodes than this make no block: two boxes (140 wide and a gap of
 * 80) are hardly wider than the block's one (200). */
#define MIN_MEMBERS 3
/* A branching region of more nodes than this is no block: a residual or
 * Inception block is tens of nodes; one region of hundreds (skips over
 * every block) says no more than the graph. */
#define MAX_REGION 64

typedef struct
{
  char *name;
  GArray *members;   /* of int */
  int parts;         /* dotted components in the name */
  int index;         /* in the sorted list */
  int parent;        /* index in the kept list, or -1 */
  int depth;
  gboolean kept;
} scope;

static int
cmp_int (gconstpointer a, gconstpointer b)
{
  return *(const int *) a - *(const int *) b;
}

static void
scope_free (scope *s)
{
  g_free (s->name);
  g_array_unref (s->members);
  g_free (s);
}

static int
cmp_scope (gconstpointer a, gconstpointer b)
{
  const scope *x = *(scope *const *) a, *y = *(scope *const *) b;
  if (x->parts != y->parts)
    return x->parts - y->parts;
  /* In graph order ("features.2" before "features.10"). */
  return g_array_index (x->members, int, 0) - g_array_index (y->members, int, 0);
}

/* The modules the ids name, sorted by depth of name then name; those kept
 * have parent and depth set.  Caller frees. */
static GPtrArray *
find_scopes (const tw_graph *g)
{
  GHashTable *by_name = g_hash_table_new (g_str_hash, g_str_equal);
  GPtrArray *all = g_ptr_array_new_with_free_func ((GDestroyNotify) scope_free);
  for (int i = 0; i < tw_graph_n_nodes (g); i++)
    {
      const char *id = tw_graph_node (g, i)->id;
      int parts = 0;
      for (const char *p = strchr (id, '.'); p; p = strchr (p + 1, '.'))
        {
          parts++;
          if (p == id || p[1] == '\0')
            continue;
          g_autofree char *prefix = g_strndup (id, p - id);
          scope *s = g_hash_table_lookup (by_name, prefix);
          if (s == NULL)
            {
              s = g_new0 (scope, 1);
              s->name = g_steal_pointer (&prefix);
              s->members = g_array_new (FALSE, FALSE, sizeof (int));
              s->parts = parts;
              g_ptr_array_add (all, s);
              g_hash_table_insert (by_name, s->name, s);
            }
          g_array_append_val (s->members, i);
        }
    }
  g_ptr_array_sort (all, cmp_scope);
  for (guint k = 0; k < all->len; k++)
    ((scope *) all->pdata[k])->index = (int) k;
  /* Outer modules first: a module's parent is its longest kept prefix. */
  for (guint k = 0; k < all->len; k++)
    {
      scope *s = all->pdata[k];
      s->parent = -1;
      if (s->members->len < MIN_MEMBERS)
        continue;
      for (const char *p = s->name + strlen (s->name); p > s->name; p--)
        {
          if (*p != '.')
            continue;
          g_autofree char *prefix = g_strndup (s->name, p - s->name);
          scope *up = g_hash_table_lookup (by_name, prefix);
          if (up && up->kept)
            {
              s->parent = up->index;
              break;
            }
        }
      /* The same nodes as its parent: the parent says it. */
      if (s->parent >= 0 && ((scope *) all->pdata[s->parent])->members->len == s->members->len)
        continue;
      s->kept = TRUE;
    }
  /* A module whose only submodule holds all its nodes but one (PyTorch's
   * InvertedResidual: "features.3.conv" and the add) is one level too: the
   * submodule would be a frame that says nothing its parent does not. */
  g_autofree int *children = g_new0 (int, MAX (all->len, 1));
  for (guint k = 0; k < all->len; k++)
    {
      const scope *s = all->pdata[k];
      if (s->kept && s->parent >= 0)
        children[s->parent]++;
    }
  for (guint k = 0; k < all->len; k++)
    {
      scope *s = all->pdata[k];
      const scope *up = s->parent >= 0 ? all->pdata[s->parent] : NULL;
      if (s->kept && up && children[up->index] == 1 && up->members->len - s->members->len <= 1)
        s->kept = FALSE;
    }
  /* Parents are the nearest kept ones (outer first: theirs are final). */
  for (guint k = 0; k < all->len; k++)
    {
      scope *s = all->pdata[k];
      if (s->parent >= 0 && !((scope *) all->pdata[s->parent])->kept)
        s->parent = ((scope *) all->pdata[s->parent])->parent;
      s->depth = s->parent < 0 ? 0 : ((scope *) all->pdata[s->parent])->depth + 1;
    }
  g_hash_table_unref (by_name);
  return all;
}

/* Blocks from the graph's shape, for ids that name no modules (an
 * exporter's "Conv_12", tf2onnx's paths joined by "_"): the regions
 * between cut nodes (a node every path from the inputs to the outputs
 * passes through, found in one pass over a topological order: the edges
 * that cross the gap before it all end at it, those after it all start
 * there) that branch and merge, such as residual blocks, with the
 * activation that follows their merge; "block 1", "block 2", … in graph
 * order.  Edges from inputs (a label into the loss) do not count. */
static GPtrArray *
structural_scopes (const tw_graph *g)
{
  GPtrArray *all = g_ptr_array_new_with_free_func ((GDestroyNotify) scope_free);
  int n = tw_graph_n_nodes (g);
  g_autoptr (GArray) order = NULL;
  if (n == 0 || !tw_graph_topo_order (g, &order, NULL))
    return all;
  g_autofree int *pos = g_new (int, n);
  for (int k = 0; k < n; k++)
    pos[g_array_index (order, int, k)] = k;
  g_autofree gboolean *source = g_new (gboolean, n);
  for (int i = 0; i < n; i++)
    {
      const tw_node *nd = tw_graph_node (g, i);
      source[i] = TRUE;
      for (int p = 0; p < nd->n_inputs && source[i]; p++)
        source[i] = tw_graph_resolve (g, nd->inputs[p]).node < 0;
    }
  /* cross[b]: the edges over the gap before position b. */
  g_autofree int *cross = g_new0 (int, n + 2);
  g_autofree int *in = g_new0 (int, n), *out = g_new0 (int, n);
  for (int i = 0; i < n; i++)
    {
      const tw_node *nd = tw_graph_node (g, i);
      for (int p = 0; p < nd->n_inputs; p++)
        {
          int u = tw_graph_resolve (g, nd->inputs[p]).node;
          if (u < 0 || source[u] || pos[u] >= pos[i])
            continue;
          cross[pos[u] + 1]++;
          cross[pos[i] + 1]--;
          in[i]++;
          out[u]++;
        }
    }
  for (int b = 1; b <= n; b++)
    cross[b] += cross[b - 1];
  g_autoptr (GArray) seg = g_array_new (FALSE, FALSE, sizeof (int));
  gboolean branches = FALSE;
  scope *last = NULL;
  for (int k = 0; k < n; k++)
    {
      int i = g_array_index (order, int, k);
      if (source[i])
        continue;
      g_array_append_val (seg, i);
      branches |= in[i] > 1 || out[i] > 1;
      if (cross[k] != in[i] || cross[k + 1] != out[i])
        continue;   /* not a cut: the region goes on */
      const tw_node *nd = tw_graph_node (g, i);
      gboolean activation = seg->len == 1 && in[i] == 1 && nd->op
                            && g_strcmp0 (nd->op->category, "Activation") == 0;
      if (last && activation
          && g_array_index (last->members, int, last->members->len - 1)
               == tw_graph_resolve (g, nd->inputs[0]).node)
        g_array_append_val (last->members, i);
      else if (branches && seg->len >= MIN_MEMBERS && seg->len <= MAX_REGION)
        {
          last = g_new0 (scope, 1);
          last->name = g_strdup_printf ("block %u", all->len + 1);
          last->members = g_array_copy (seg);
          last->parent = -1;
          last->kept = TRUE;
          g_ptr_array_add (all, last);
        }
      else
        last = NULL;
      g_array_set_size (seg, 0);
      branches = FALSE;
    }
  /* Members in graph order, as the ids' modules have them. */
  for (guint k = 0; k < all->len; k++)
    g_array_sort (((scope *) all->pdata[k])->members, cmp_int);
  return all;
}

/* The kept scopes as blocks, open down to `levels`, into out (emptied). */
static void
fill_blocks (GPtrArray *scopes, int levels, GPtrArray *out)
{
  g_ptr_array_set_size (out, 0);
  for (guint k = 0; k < scopes->len; k++)
    {
      const scope *s = scopes->pdata[k];
      if (s->kept)
        g_ptr_array_add (out, tw_layout_block_new (s->name, (const int *) s->members->data,
                                                   (int) s->members->len, s->depth >= levels));
    }
}

GPtrArray *
tw_layout_fold_places (const tw_graph *g, const tw_layout_view *view, double *xs, double *ys)
{
  g_return_val_if_fail (g != NULL && view != NULL, NULL);
  g_autoptr (GPtrArray) scopes = find_scopes (g);
  int max_depth = -1;
  for (guint k = 0; k < scopes->len; k++)
    {
      const scope *s = scopes->pdata[k];
      if (s->kept)
        max_depth = MAX (max_depth, s->depth);
    }
  double w, h;
  if (max_depth < 0)
    {
      /* No modules in the ids: the graph's shape, where it does not read
       * without blocks. */
      if (tw_layout_best (g, NULL, 0, view, xs, ys, &w, &h) >= TW_LAYOUT_READ_ZOOM)
        return NULL;
      g_ptr_array_unref (scopes);
      scopes = structural_scopes (g);
      if (scopes->len == 0)
        return NULL;
      max_depth = 0;
    }
  GPtrArray *blocks = g_ptr_array_new_with_free_func ((GDestroyNotify) tw_layout_block_free);
  /* The fewest levels open without a closed box of more than half the
   * graph; from all open down to those, the first that reads. */
  int n = tw_graph_n_nodes (g), least = 0;
  for (guint k = 0; k < scopes->len; k++)
    {
      const scope *s = scopes->pdata[k];
      if (s->kept && 2 * (int) s->members->len > n)
        least = MAX (least, s->depth + 1);
    }
  for (int levels = max_depth + 1; levels >= least; levels--)
    {
      fill_blocks (scopes, levels, blocks);
      if (tw_layout_best (g, (tw_layout_block **) blocks->pdata, (int) blocks->len, view, xs, ys,
                          &w, &h)
          >= TW_LAYOUT_READ_ZOOM)
        break;
    }
  return blocks;
}

GPtrArray *
tw_layout_fold (const tw_graph *g, const tw_layout_view *view)
{
  return tw_layout_fold_places (g, view, NULL, NULL);
}
