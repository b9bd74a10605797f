/* train-buckets.c — data parallel's bucket layout, without a communicator:
 * the cut (the rule buckets_make in train-dist.c follows) and the first
 * step's layout of a graph, for the editor to show before a run. */
#define G_LOG_DOMAIN "tw-train"

#include "engine/train.h"

#include <string.h>

void
tw_bucket_layout_clear (tw_bucket_layout *l)
{
  for (int b = 0; b < l->n; b++)
    g_strfreev (l->names[b]);
  g_clear_pointer (&l->names, g_free);
  g_clear_pointer (&l->bytes, g_free);
  l->n = 0;
}

int
tw_bucket_layout_find (const tw_bucket_layout *l, const char *param, int *pos)
{
  for (int b = 0; b < l->n; b++)
    for (int i = 0; l->names[b][i]; i++)
      if (strcmp (l->names[b][i], param) == 0)
        {
          if (pos)
            *pos = i;
          return b;
        }
  return -1;
}

int
tw_dist_bucket_cut (const int64_t *numel, int n, double bucket_mb, int *bucket_of)
{
  /* PyTorch DDP's rule (compute_bucket_assignment_by_size): parameters go
   * into the bucket until it holds bucket_mb or more, then the next one
   * begins.  A layer's bias, ready with its weight, so shares its bucket. */
  int64_t cap = (int64_t) MAX (bucket_mb * 1e6 / sizeof (float), 1);
  int64_t cur_n = 0;
  int b = 0;
  for (int j = 0; j < n; j++)
    {
      bucket_of[j] = b;
      cur_n += numel[j];
      if (cur_n >= cap && j + 1 < n)
        {
          b++;
          cur_n = 0;
        }
    }
  return n > 0 ? b + 1 : 0;
}

gboolean
tw_dist_bucket_predict (const tw_graph *g, double bucket_mb, tw_bucket_layout *out)
{
  memset (out, 0, sizeof *out);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GArray) numel = g_array_new (FALSE, FALSE, sizeof (int64_t));
  for (int i = 0; i < tw_graph_n_nodes (g); i++)
    {
      const tw_node *n = tw_graph_node (g, i);
      if (n->share)
        continue;
      for (int k = 0; k < n->n_params; k++)
        if (n->params[k].trainable)
          {
            int64_t e = tw_tinfo_numel (&n->params[k].info, NULL);
            g_ptr_array_add (names, tw_node_param_name (n, k));
            g_array_append_val (numel, e);
          }
    }
  int np = (int) names->len;
  if (np == 0)
    return FALSE;
  /* Reversed: the first step's order. */
  g_autofree int64_t *rev = g_new (int64_t, np);
  for (int j = 0; j < np; j++)
    rev[j] = g_array_index (numel, int64_t, np - 1 - j);
  g_autofree int *bucket_of = g_new (int, np);
  out->n = tw_dist_bucket_cut (rev, np, bucket_mb, bucket_of);
  out->names = g_new0 (char **, out->n);
  out->bytes = g_new0 (int64_t, out->n);
  g_autofree int *count = g_new0 (int, out->n);
  for (int j = 0; j < np; j++)
    count[bucket_of[j]]++;
  for (int b = 0; b < out->n; b++)
    out->names[b] = g_new0 (char *, count[b] + 1);
  memset (count, 0, out->n * sizeof (int));
  for (int j = 0; j < np; j++)
    {
      int b = bucket_of[j];
      out->names[b][count[b]++] = g_strdup (g_ptr_array_index (names, np - 1 - j));
      out->bytes[b] += rev[j] * (int64_t) sizeof (float);
    }
  return TRUE;
}
