/* ui-scene.c — see ui-scene.h. */
#include "ui-scene.h"

void
twt_assert_edges_clear (const TwbGraphScene *s, const char *what)
{
  g_assert_cmpint (s->n_edges, >, 0);
  double pts[96][2];
  for (int e = 0; e < s->n_edges; e++)
    {
      g_assert_cmpint (twb_graph_scene_edge_sample (s, e, G_N_ELEMENTS (pts), pts), ==,
                       G_N_ELEMENTS (pts));
      for (guint k = 0; k < G_N_ELEMENTS (pts); k++)
        for (int i = 0; i < s->n_nodes; i++)
          {
            const TwbSceneNode *n = &s->nodes[i];
            if (i == s->edges[e].from || i == s->edges[e].to)
              continue;
            if (pts[k][0] > n->x && pts[k][0] < n->x + n->w && pts[k][1] > n->y
                && pts[k][1] < n->y + n->h)
              g_error ("%s: edge %s → %s passes through %s at (%.1f, %.1f)", what,
                       s->nodes[s->edges[e].from].id, s->nodes[s->edges[e].to].id, n->id,
                       pts[k][0], pts[k][1]);
          }
    }
}
