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
 * says nothing about a model. */
#define G_LOG_DOMAIN "tw-layout"

#include "engine/layout.h"

#include <string.h>

/* Fewer nodes than this make no block: two boxes (140 wide and a gap of
 * 80) are hardly wider than the block's one (200). */
#define MIN_MEMBERS 3

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
tw_layout_fold (const tw_graph *g, const tw_layout_view *view)
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
  if (max_depth < 0)
    return NULL;
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
      double w, h;
      tw_layout_extent (g, (tw_layout_block **) blocks->pdata, (int) blocks->len, view, &w, &h);
      if (tw_layout_fit (view, w, h, NULL, NULL) >= TW_LAYOUT_READ_ZOOM)
        break;
    }
  return blocks;
}
