/* net.c — topologies, routes and the flow simulation (net.h).
 *
 * Link defaults (one direction of a full-duplex link; latency of a
 * message's first byte, software included).  They are starting points, to
 * be replaced by a calibration (this machine) or a topology file:
 *   NVLink 4 (H100/H200 SXM through NVSwitch): 450 GB/s each way is the
 *     line rate (of the 900 GB/s a GPU has in all: NVIDIA H100 datasheet);
 *     "with the protocol overhead (~20%) NCCL can get an effective NVLink
 *     bandwidth of 370GB/s" (NCCL's maintainer, NVIDIA/nccl-tests#212):
 *     370 GB/s, and 0.5 µs a hop (a GPU → NVSwitch → GPU message 1 µs, of
 *     the order of NCCL's LL protocol latency on NVLink, src/graph/tuning.cc).
 *   PCIe Gen5 x16: 64 GB/s raw each way (32 GT/s × 16 lanes, 128b/130b),
 *     about 50 GB/s achieved; 2 µs.
 *   InfiniBand NDR: 400 Gb/s = 50 GB/s a port (ConnectX-7); 2 µs with a
 *     switch hop (port-to-port switch latency is about 0.1–0.6 µs, the
 *     rest is the NIC and software).
 *   RoCE v2 at 400 GbE: 50 GB/s; 4 µs.
 *   Ethernet 100 GbE with TCP: 12.5 GB/s; 25 µs (the kernel's stack).
 *   Shared memory between processes: 10 GB/s, 1 µs (of the order Open
 *     MPI's vader/sm transport reaches for large messages on one socket;
 *     the calibration measures it).
 *
 * Flows share links max-min fairly (progressive filling: the most loaded
 * link's fair share is given to its flows, which are then fixed, and so on),
 * recomputed whenever a flow starts or ends: TCP-like and NCCL-like
 * channels both come close to it on a shared bottleneck. */
#define G_LOG_DOMAIN "twb-sim"

#include "engine/sim/net.h"

#include <math.h>
#include <string.h>

G_DEFINE_QUARK (tw-sim-error-quark, tw_sim_error)

static const struct
{
  const char *name;
  double bandwidth, latency;
} link_kinds[TW_LINK_N_KINDS] = {
  [TW_LINK_NVLINK] = { "nvlink", 370e9, 0.5e-6 },
  [TW_LINK_PCIE] = { "pcie", 50e9, 2e-6 },
  [TW_LINK_INFINIBAND] = { "ib", 50e9, 2e-6 },
  [TW_LINK_ROCE] = { "roce", 50e9, 4e-6 },
  [TW_LINK_ETHERNET] = { "eth", 12.5e9, 25e-6 },
  [TW_LINK_SHM] = { "shm", 10e9, 1e-6 },
  [TW_LINK_OTHER] = { "other", 10e9, 10e-6 },
};

const char *
tw_link_kind_name (tw_link_kind k)
{
  return k < TW_LINK_N_KINDS ? link_kinds[k].name : "?";
}

gboolean
tw_link_kind_from_name (const char *name, tw_link_kind *out)
{
  for (int k = 0; k < TW_LINK_N_KINDS; k++)
    if (g_strcmp0 (name, link_kinds[k].name) == 0
        || (k == TW_LINK_INFINIBAND && g_strcmp0 (name, "infiniband") == 0)
        || (k == TW_LINK_ETHERNET && g_strcmp0 (name, "ethernet") == 0))
      {
        *out = k;
        return TRUE;
      }
  return FALSE;
}

void
tw_link_kind_defaults (tw_link_kind k, double *bandwidth, double *latency)
{
  if (k >= TW_LINK_N_KINDS)
    k = TW_LINK_OTHER;
  if (bandwidth)
    *bandwidth = link_kinds[k].bandwidth;
  if (latency)
    *latency = link_kinds[k].latency;
}

/* ---- topology ----------------------------------------------------------- */

typedef struct
{
  char *name;
  int node;                   /* devices: their node; switches −1 */
  int device;                 /* the rank, or −1 */
} vertex;

typedef struct
{
  int a, b;
  double bandwidth, latency;
  tw_link_kind kind;
  char *name;
} edge;

struct tw_topo
{
  GArray *vertices;           /* vertex */
  GArray *links;              /* link */
  GArray *device_vertex;      /* int: the vertex of each rank */
  GArray **adj;               /* per vertex: directed link ids leaving it (rebuilt lazily) */
  int adj_n;
  int **routes;               /* [a·n + b]: directed links, -1 ended; NULL not yet */
  int *route_len;
  int routes_n;
};

tw_topo *
tw_topo_new (void)
{
  tw_topo *t = g_new0 (tw_topo, 1);
  t->vertices = g_array_new (FALSE, TRUE, sizeof (vertex));
  t->links = g_array_new (FALSE, TRUE, sizeof (edge));
  t->device_vertex = g_array_new (FALSE, TRUE, sizeof (int));
  return t;
}

static void
routes_clear (tw_topo *t)
{
  for (int i = 0; i < t->adj_n; i++)
    g_array_unref (t->adj[i]);
  g_clear_pointer (&t->adj, g_free);
  t->adj_n = 0;
  for (int i = 0; t->routes && i < t->routes_n * t->routes_n; i++)
    g_free (t->routes[i]);
  g_clear_pointer (&t->routes, g_free);
  g_clear_pointer (&t->route_len, g_free);
  t->routes_n = 0;
}

void
tw_topo_free (tw_topo *t)
{
  if (t == NULL)
    return;
  routes_clear (t);
  for (guint i = 0; i < t->vertices->len; i++)
    g_free (g_array_index (t->vertices, vertex, i).name);
  for (guint i = 0; i < t->links->len; i++)
    g_free (g_array_index (t->links, edge, i).name);
  g_array_unref (t->vertices);
  g_array_unref (t->links);
  g_array_unref (t->device_vertex);
  g_free (t);
}

int
tw_topo_add_device (tw_topo *t, const char *name, int node)
{
  routes_clear (t);
  vertex v = { g_strdup (name), node, (int) t->device_vertex->len };
  int id = (int) t->vertices->len;
  g_array_append_val (t->vertices, v);
  g_array_append_val (t->device_vertex, id);
  return id;
}

int
tw_topo_add_switch (tw_topo *t, const char *name)
{
  routes_clear (t);
  vertex v = { g_strdup (name), -1, -1 };
  g_array_append_val (t->vertices, v);
  return (int) t->vertices->len - 1;
}

int
tw_topo_add_link (tw_topo *t, int a, int b, double bandwidth, double latency, tw_link_kind kind,
                  const char *name)
{
  g_return_val_if_fail (a >= 0 && a < (int) t->vertices->len && b >= 0
                        && b < (int) t->vertices->len, -1);
  routes_clear (t);
  edge l = { a, b, bandwidth, latency, kind, NULL };
  l.name = name ? g_strdup (name)
                : g_strdup_printf ("%s–%s", g_array_index (t->vertices, vertex, a).name,
                                   g_array_index (t->vertices, vertex, b).name);
  g_array_append_val (t->links, l);
  return (int) t->links->len - 1;
}

int
tw_topo_n_devices (const tw_topo *t)
{
  return (int) t->device_vertex->len;
}

int
tw_topo_n_links (const tw_topo *t)
{
  return (int) t->links->len;
}

int
tw_topo_node_of (const tw_topo *t, int rank)
{
  g_return_val_if_fail (rank >= 0 && rank < tw_topo_n_devices (t), -1);
  int v = g_array_index (t->device_vertex, int, rank);
  return g_array_index (t->vertices, vertex, v).node;
}

static const edge *
link_at (const tw_topo *t, int l)
{
  return &g_array_index (t->links, edge, l);
}

const char *
tw_topo_link_name (const tw_topo *t, int l)
{
  return link_at (t, l)->name;
}

tw_link_kind
tw_topo_link_kind (const tw_topo *t, int l)
{
  return link_at (t, l)->kind;
}

double
tw_topo_link_bandwidth (const tw_topo *t, int l)
{
  return link_at (t, l)->bandwidth;
}

static void
adj_build (tw_topo *t)
{
  if (t->adj)
    return;
  t->adj_n = (int) t->vertices->len;
  t->adj = g_new0 (GArray *, MAX (t->adj_n, 1));
  for (int v = 0; v < t->adj_n; v++)
    t->adj[v] = g_array_new (FALSE, FALSE, sizeof (int));
  for (guint l = 0; l < t->links->len; l++)
    {
      const edge *k = link_at (t, (int) l);
      int fwd = 2 * (int) l, back = 2 * (int) l + 1;
      g_array_append_val (t->adj[k->a], fwd);
      g_array_append_val (t->adj[k->b], back);
    }
}

static int
dlink_to (const tw_topo *t, int d)
{
  const edge *k = link_at (t, d / 2);
  return d % 2 == 0 ? k->b : k->a;
}

/* The cost that routes minimise: a megabyte's time. */
static double
dlink_cost (const tw_topo *t, int d)
{
  const edge *k = link_at (t, d / 2);
  return k->latency + 1e6 / k->bandwidth;
}

/* A binary min-heap of (cost, vertex) for Dijkstra. */
typedef struct
{
  double d;
  int v;
} hent;

static void
heap_push (GArray *h, double d, int v)
{
  hent e = { d, v };
  g_array_append_val (h, e);
  hent *a = (hent *) h->data;
  for (guint i = h->len - 1; i > 0;)
    {
      guint up = (i - 1) / 2;
      if (a[up].d <= a[i].d)
        break;
      hent tmp = a[up];
      a[up] = a[i];
      a[i] = tmp;
      i = up;
    }
}

static hent
heap_pop (GArray *h)
{
  hent *a = (hent *) h->data, top = a[0];
  a[0] = a[h->len - 1];
  g_array_set_size (h, h->len - 1);
  a = (hent *) h->data;
  for (guint i = 0;;)
    {
      guint l = 2 * i + 1, r = l + 1, m = i;
      if (l < h->len && a[l].d < a[m].d)
        m = l;
      if (r < h->len && a[r].d < a[m].d)
        m = r;
      if (m == i)
        break;
      hent tmp = a[m];
      a[m] = a[i];
      a[i] = tmp;
      i = m;
    }
  return top;
}

/* Dijkstra from device a's vertex over every vertex: the routes from a to
 * every other device, stored.  Ties go to the link added first (the scan
 * order is fixed), so routes are the same on every run. */
static void
routes_from (tw_topo *t, int a)
{
  adj_build (t);
  int nv = t->adj_n, nd = tw_topo_n_devices (t);
  g_autofree double *dist = g_new (double, nv);
  g_autofree int *via = g_new (int, nv);     /* directed link into the vertex */
  g_autofree gboolean *done = g_new0 (gboolean, nv);
  for (int v = 0; v < nv; v++)
    {
      dist[v] = INFINITY;
      via[v] = -1;
    }
  int src = g_array_index (t->device_vertex, int, a);
  dist[src] = 0;
  g_autoptr (GArray) heap = g_array_new (FALSE, FALSE, sizeof (hent));
  heap_push (heap, 0, src);
  while (heap->len > 0)
    {
      hent e = heap_pop (heap);
      int u = e.v;
      if (done[u] || e.d > dist[u])
        continue;
      done[u] = TRUE;
      /* Routes only pass through switches (and end at devices): a device
       * is not a router. */
      if (u != src && g_array_index (t->vertices, vertex, u).device >= 0)
        continue;
      for (guint i = 0; i < t->adj[u]->len; i++)
        {
          int d = g_array_index (t->adj[u], int, i);
          int w = dlink_to (t, d);
          double c = dist[u] + dlink_cost (t, d);
          if (c < dist[w])
            {
              dist[w] = c;
              via[w] = d;
              heap_push (heap, c, w);
            }
        }
    }
  for (int b = 0; b < nd; b++)
    {
      int idx = a * nd + b;
      int dst = g_array_index (t->device_vertex, int, b);
      GArray *path = g_array_new (FALSE, FALSE, sizeof (int));
      if (b != a && via[dst] >= 0)
        {
          for (int v = dst; v != src;)
            {
              int d = via[v];
              g_array_prepend_val (path, d);
              const edge *k = link_at (t, d / 2);
              v = d % 2 == 0 ? k->a : k->b;
            }
        }
      t->route_len[idx] = b == a ? 0 : via[dst] >= 0 ? (int) path->len : -1;
      t->routes[idx] = (int *) g_array_free (path, FALSE);
    }
}

const int *
tw_topo_route (tw_topo *t, int a, int b, int *n)
{
  int nd = tw_topo_n_devices (t);
  g_return_val_if_fail (a >= 0 && a < nd && b >= 0 && b < nd, NULL);
  if (t->routes == NULL)
    {
      t->routes_n = nd;
      t->routes = g_new0 (int *, (gsize) nd * nd);
      t->route_len = g_new (int, (gsize) nd * nd);
      for (int i = 0; i < nd * nd; i++)
        t->route_len[i] = -2;   /* not computed */
    }
  if (t->route_len[a * nd + b] == -2)
    routes_from (t, a);
  int len = t->route_len[a * nd + b];
  *n = MAX (len, 0);
  return len > 0 ? t->routes[a * nd + b] : NULL;
}

void
tw_topo_route_cost (tw_topo *t, int a, int b, double *latency, double *bandwidth)
{
  int n = 0;
  const int *r = tw_topo_route (t, a, b, &n);
  double lat = 0, bw = INFINITY;
  for (int i = 0; i < n; i++)
    {
      const edge *k = link_at (t, r[i] / 2);
      lat += k->latency;
      bw = fmin (bw, k->bandwidth);
    }
  if (latency)
    *latency = lat;
  if (bandwidth)
    *bandwidth = bw;
}

gboolean
tw_topo_check (tw_topo *t, GError **error)
{
  for (guint l = 0; l < t->links->len; l++)
    {
      const edge *k = link_at (t, (int) l);
      if (!(k->bandwidth > 0) || !isfinite (k->bandwidth))
        {
          g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_TOPOLOGY,
                       "link %s: a bandwidth above 0 is needed (it has %g bytes/s)", k->name,
                       k->bandwidth);
          return FALSE;
        }
      if (!(k->latency >= 0) || !isfinite (k->latency))
        {
          g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_TOPOLOGY,
                       "link %s: a latency of 0 s or more is needed (it has %g s)", k->name,
                       k->latency);
          return FALSE;
        }
      if (k->a == k->b)
        {
          g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_TOPOLOGY,
                       "link %s joins %s to itself", k->name,
                       g_array_index (t->vertices, vertex, k->a).name);
          return FALSE;
        }
    }
  int nd = tw_topo_n_devices (t);
  if (nd == 0)
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_TOPOLOGY, "the topology has no device");
      return FALSE;
    }
  /* Connected: every device reaches device 0 and device 0 every device
   * (links are full duplex, so that is all of them). */
  for (int b = 1; b < nd; b++)
    {
      int n;
      tw_topo_route (t, 0, b, &n);
      if (t->route_len[b] < 0)
        {
          int v0 = g_array_index (t->device_vertex, int, 0);
          int vb = g_array_index (t->device_vertex, int, b);
          g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_TOPOLOGY,
                       "the topology is disconnected: device %s (rank %d) cannot reach %s "
                       "(rank 0) through switches",
                       g_array_index (t->vertices, vertex, vb).name, b,
                       g_array_index (t->vertices, vertex, v0).name);
          return FALSE;
        }
    }
  return TRUE;
}

tw_topo *
tw_topo_cluster (int nodes, int per_node, const char *preset, GError **error)
{
  if (nodes < 1 || per_node < 1 || (gint64) nodes * per_node > 1 << 20)
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                   "%d nodes × %d devices: 1 or more of each (and at most 2^20 devices) are "
                   "needed", nodes, per_node);
      return NULL;
    }
  tw_link_kind intra, inter;
  gboolean rails;
  if (g_strcmp0 (preset, "nvlink+ib") == 0)
    intra = TW_LINK_NVLINK, inter = TW_LINK_INFINIBAND, rails = TRUE;
  else if (g_strcmp0 (preset, "nvlink+roce") == 0)
    intra = TW_LINK_NVLINK, inter = TW_LINK_ROCE, rails = TRUE;
  else if (g_strcmp0 (preset, "pcie+eth") == 0)
    intra = TW_LINK_PCIE, inter = TW_LINK_ETHERNET, rails = FALSE;
  else if (g_strcmp0 (preset, "shm+eth") == 0)
    intra = TW_LINK_SHM, inter = TW_LINK_ETHERNET, rails = FALSE;
  else
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                   "topology %s: unknown (known: nvlink+ib, nvlink+roce, pcie+eth, shm+eth, or a "
                   "topology file)", preset ? preset : "(none)");
      return NULL;
    }
  double bi, li, bo, lo;
  tw_link_kind_defaults (intra, &bi, &li);
  tw_link_kind_defaults (inter, &bo, &lo);
  tw_topo *t = tw_topo_new ();
  g_autofree int *dev = g_new (int, (gsize) nodes * per_node);
  for (int n = 0; n < nodes; n++)
    for (int d = 0; d < per_node; d++)
      {
        g_autofree char *name = g_strdup_printf ("node%d/dev%d", n, d);
        dev[n * per_node + d] = tw_topo_add_device (t, name, n);
      }
  int core = nodes > 1 ? tw_topo_add_switch (t, "core") : -1;
  for (int n = 0; n < nodes; n++)
    {
      g_autofree char *sname = g_strdup_printf ("node%d/switch", n);
      int sw = per_node > 1 || !rails ? tw_topo_add_switch (t, sname) : -1;
      for (int d = 0; d < per_node; d++)
        {
          int v = dev[n * per_node + d];
          if (sw >= 0)
            tw_topo_add_link (t, v, sw, bi, li, intra, NULL);
          if (core >= 0 && rails)
            tw_topo_add_link (t, v, core, bo, lo, inter, NULL);
        }
      if (core >= 0 && !rails)
        tw_topo_add_link (t, sw, core, bo, lo, inter, NULL);
    }
  return t;
}

static gboolean
json_number (JsonObject *o, const char *member, double *out)
{
  JsonNode *n = json_object_get_member (o, member);
  if (n == NULL || JSON_NODE_TYPE (n) != JSON_NODE_VALUE
      || (json_node_get_value_type (n) != G_TYPE_DOUBLE
          && json_node_get_value_type (n) != G_TYPE_INT64))
    return FALSE;
  *out = json_node_get_double (n);
  return TRUE;
}

tw_topo *
tw_topo_from_json (JsonNode *root, const char *what, GError **error)
{
  what = what ? what : "topology";
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_TOPOLOGY,
                   "%s: a topology is a JSON object with \"vertices\" and \"links\"", what);
      return NULL;
    }
  JsonObject *o = json_node_get_object (root);
  JsonNode *vn = json_object_get_member (o, "vertices");
  JsonNode *ln = json_object_get_member (o, "links");
  if (vn == NULL || !JSON_NODE_HOLDS_ARRAY (vn) || ln == NULL || !JSON_NODE_HOLDS_ARRAY (ln))
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_TOPOLOGY,
                   "%s: \"vertices\" and \"links\" must both be arrays", what);
      return NULL;
    }
  g_autoptr (tw_topo) t = tw_topo_new ();
  g_autoptr (GHashTable) names = g_hash_table_new (g_str_hash, g_str_equal);
  JsonArray *va = json_node_get_array (vn);
  for (guint i = 0; i < json_array_get_length (va); i++)
    {
      JsonNode *e = json_array_get_element (va, i);
      JsonObject *v = JSON_NODE_HOLDS_OBJECT (e) ? json_node_get_object (e) : NULL;
      JsonNode *nm = v ? json_object_get_member (v, "name") : NULL;
      const char *name = nm && JSON_NODE_HOLDS_VALUE (nm)
                             && json_node_get_value_type (nm) == G_TYPE_STRING
                           ? json_node_get_string (nm) : NULL;
      if (name == NULL || !*name)
        {
          g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_TOPOLOGY,
                       "%s: vertex %u: an object with a \"name\" string is needed", what, i);
          return NULL;
        }
      if (g_hash_table_contains (names, name))
        {
          g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_TOPOLOGY,
                       "%s: vertex %u: the name %s is taken by another vertex", what, i, name);
          return NULL;
        }
      JsonNode *dn = json_object_get_member (v, "device");
      gboolean device = dn && JSON_NODE_HOLDS_VALUE (dn)
                        && json_node_get_value_type (dn) == G_TYPE_BOOLEAN
                        && json_node_get_boolean (dn);
      double node = -1;
      if (device && json_object_has_member (v, "node")
          && (!json_number (v, "node", &node) || node < 0 || node != floor (node) || node > 1e7))
        {
          g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_TOPOLOGY,
                       "%s: vertex %s: \"node\" must be a whole number of 0 or more", what, name);
          return NULL;
        }
      int id = device ? tw_topo_add_device (t, name, node < 0 ? 0 : (int) node)
                      : tw_topo_add_switch (t, name);
      g_hash_table_insert (names, (gpointer) name, GINT_TO_POINTER (id + 1));
    }
  JsonArray *la = json_node_get_array (ln);
  for (guint i = 0; i < json_array_get_length (la); i++)
    {
      JsonNode *e = json_array_get_element (la, i);
      JsonObject *l = JSON_NODE_HOLDS_OBJECT (e) ? json_node_get_object (e) : NULL;
      const char *ends[2] = { NULL, NULL };
      for (int k = 0; l && k < 2; k++)
        {
          JsonNode *n = json_object_get_member (l, k ? "b" : "a");
          if (n && JSON_NODE_HOLDS_VALUE (n) && json_node_get_value_type (n) == G_TYPE_STRING)
            ends[k] = json_node_get_string (n);
        }
      g_autofree char *lname = ends[0] && ends[1] ? g_strdup_printf ("%s–%s", ends[0], ends[1])
                                                  : g_strdup_printf ("%u", i);
      if (ends[0] == NULL || ends[1] == NULL)
        {
          g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_TOPOLOGY,
                       "%s: link %s: an object with \"a\" and \"b\" vertex names is needed", what,
                       lname);
          return NULL;
        }
      int v[2];
      for (int k = 0; k < 2; k++)
        {
          gpointer p = g_hash_table_lookup (names, ends[k]);
          if (p == NULL)
            {
              g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_TOPOLOGY,
                           "%s: link %s: no vertex is named %s", what, lname, ends[k]);
              return NULL;
            }
          v[k] = GPOINTER_TO_INT (p) - 1;
        }
      tw_link_kind kind = TW_LINK_OTHER;
      JsonNode *kn = json_object_get_member (l, "kind");
      if (kn && (!JSON_NODE_HOLDS_VALUE (kn) || json_node_get_value_type (kn) != G_TYPE_STRING
                 || !tw_link_kind_from_name (json_node_get_string (kn), &kind)))
        {
          g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_TOPOLOGY,
                       "%s: link %s: \"kind\" must be one of nvlink, pcie, ib, roce, eth, shm, "
                       "other", what, lname);
          return NULL;
        }
      double bw, lat;
      tw_link_kind_defaults (kind, &bw, &lat);
      double gbs = bw / 1e9, us = lat * 1e6;
      if ((json_object_has_member (l, "gbytes_per_s") && !json_number (l, "gbytes_per_s", &gbs))
          || (json_object_has_member (l, "latency_us") && !json_number (l, "latency_us", &us)))
        {
          g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_TOPOLOGY,
                       "%s: link %s: \"gbytes_per_s\" and \"latency_us\" must be numbers", what,
                       lname);
          return NULL;
        }
      tw_topo_add_link (t, v[0], v[1], gbs * 1e9, us * 1e-6, kind, lname);
    }
  g_autoptr (GError) e = NULL;
  if (!tw_topo_check (t, &e))
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_TOPOLOGY, "%s: %s", what, e->message);
      return NULL;
    }
  return g_steal_pointer (&t);
}

tw_topo *
tw_topo_load (const char *path, GError **error)
{
  g_autoptr (JsonParser) p = json_parser_new ();
  g_autoptr (GError) e = NULL;
  if (!json_parser_load_from_file (p, path, &e))
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_TOPOLOGY, "%s: %s", path, e->message);
      return NULL;
    }
  return tw_topo_from_json (json_parser_get_root (p), path, error);
}

/* ---- the flow simulation ------------------------------------------------ */

typedef struct
{
  int src, dst;
  double bytes, delay;
  int dep0, n_deps;           /* into deps */
  /* simulation */
  int waiting;                /* deps not ended yet */
  double ready, active_at, end;
  double left, rate;
  const int *route;
  int route_n;
  double latency;
  gboolean active, ended;
} msg;

struct tw_netsim
{
  tw_topo *topo;
  GArray *msgs;               /* msg */
  GArray *deps;               /* int */
  double makespan;
  double *link_bytes;         /* per link */
  double *dlink_busy;         /* per directed link */
};

tw_netsim *
tw_netsim_new (tw_topo *t)
{
  tw_netsim *s = g_new0 (tw_netsim, 1);
  s->topo = t;
  s->msgs = g_array_new (FALSE, TRUE, sizeof (msg));
  s->deps = g_array_new (FALSE, FALSE, sizeof (int));
  return s;
}

void
tw_netsim_free (tw_netsim *s)
{
  if (s == NULL)
    return;
  g_array_unref (s->msgs);
  g_array_unref (s->deps);
  g_free (s->link_bytes);
  g_free (s->dlink_busy);
  g_free (s);
}

int
tw_netsim_add (tw_netsim *s, int src, int dst, double bytes, double delay, const int *deps,
               int n_deps)
{
  msg m = { .src = src, .dst = dst, .bytes = bytes, .delay = delay,
            .dep0 = (int) s->deps->len, .n_deps = 0 };
  for (int i = 0; i < n_deps; i++)
    if (deps[i] >= 0)
      {
        g_array_append_val (s->deps, deps[i]);
        m.n_deps++;
      }
  g_array_append_val (s->msgs, m);
  return (int) s->msgs->len - 1;
}

int
tw_netsim_count (const tw_netsim *s)
{
  return (int) s->msgs->len;
}

static msg *
msg_at (const tw_netsim *s, int i)
{
  return &g_array_index (s->msgs, msg, i);
}

double
tw_netsim_start (const tw_netsim *s, int i)
{
  return i >= 0 && i < (int) s->msgs->len ? msg_at (s, i)->ready : 0;
}

double
tw_netsim_end (const tw_netsim *s, int i)
{
  return i >= 0 && i < (int) s->msgs->len ? msg_at (s, i)->end : 0;
}

double
tw_netsim_makespan (const tw_netsim *s)
{
  return s->makespan;
}

double
tw_netsim_link_bytes (const tw_netsim *s, int l)
{
  return s->link_bytes && l >= 0 && l < tw_topo_n_links (s->topo) ? s->link_bytes[l] : 0;
}

double
tw_netsim_link_busy (const tw_netsim *s, int l)
{
  if (s->dlink_busy == NULL || l < 0 || l >= tw_topo_n_links (s->topo))
    return 0;
  return fmax (s->dlink_busy[2 * l], s->dlink_busy[2 * l + 1]);
}

/* Max-min fair rates of the active flows (progressive filling). */
static void
fair_rates (tw_netsim *s, GPtrArray *active, double *cap, int *count, gboolean *fixed)
{
  int nd = 2 * tw_topo_n_links (s->topo);
  for (int d = 0; d < nd; d++)
    {
      cap[d] = tw_topo_link_bandwidth (s->topo, d / 2);
      count[d] = 0;
    }
  for (guint i = 0; i < active->len; i++)
    {
      msg *m = g_ptr_array_index (active, i);
      fixed[i] = FALSE;
      for (int k = 0; k < m->route_n; k++)
        count[m->route[k]]++;
    }
  guint left = active->len;
  while (left > 0)
    {
      int best = -1;
      double share = INFINITY;
      for (int d = 0; d < nd; d++)
        if (count[d] > 0 && cap[d] / count[d] < share)
          {
            share = cap[d] / count[d];
            best = d;
          }
      if (best < 0)
        break;
      for (guint i = 0; i < active->len; i++)
        {
          msg *m = g_ptr_array_index (active, i);
          if (fixed[i])
            continue;
          gboolean uses = FALSE;
          for (int k = 0; k < m->route_n && !uses; k++)
            uses = m->route[k] == best;
          if (!uses)
            continue;
          m->rate = share;
          fixed[i] = TRUE;
          left--;
          for (int k = 0; k < m->route_n; k++)
            {
              cap[m->route[k]] = fmax (cap[m->route[k]] - share, 0);
              count[m->route[k]]--;
            }
        }
    }
}

/* A min-heap of (time, message) for messages waiting to become active. */
typedef struct
{
  double t;
  int m;
} pending;

static int
pending_cmp (gconstpointer a, gconstpointer b, gpointer unused)
{
  const pending *x = a, *y = b;
  return x->t < y->t ? -1 : x->t > y->t ? 1 : x->m - y->m;
}

gboolean
tw_netsim_run (tw_netsim *s, GError **error)
{
  int n = (int) s->msgs->len, nl = tw_topo_n_links (s->topo), nd = tw_topo_n_devices (s->topo);
  /* The dependents of each message (reverse edges). */
  g_autofree int *n_out = g_new0 (int, n + 1);
  for (int i = 0; i < n; i++)
    {
      msg *m = msg_at (s, i);
      if (m->src < 0 || m->src >= nd || m->dst < 0 || m->dst >= nd || !(m->bytes >= 0)
          || !isfinite (m->bytes) || !(m->delay >= 0) || !isfinite (m->delay))
        {
          g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                       "message %d: ranks %d → %d of %d, %g bytes, delay %g s: out of range", i,
                       m->src, m->dst, nd, m->bytes, m->delay);
          return FALSE;
        }
      for (int k = 0; k < m->n_deps; k++)
        {
          int d = g_array_index (s->deps, int, m->dep0 + k);
          if (d < 0 || d >= i)
            {
              g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                           "message %d depends on message %d, which is not before it", i, d);
              return FALSE;
            }
          n_out[d]++;
        }
      m->waiting = m->n_deps;
      m->ended = m->active = FALSE;
      m->ready = m->end = 0;
      m->route = tw_topo_route (s->topo, m->src, m->dst, &m->route_n);
      tw_topo_route_cost (s->topo, m->src, m->dst, &m->latency, NULL);
    }
  g_autofree int *out0 = g_new0 (int, n + 1);
  for (int i = 0; i < n; i++)
    out0[i + 1] = out0[i] + n_out[i];
  g_autofree int *out = g_new (int, MAX (out0[n], 1));
  g_autofree int *fill = g_new0 (int, n + 1);
  for (int i = 0; i < n; i++)
    {
      msg *m = msg_at (s, i);
      for (int k = 0; k < m->n_deps; k++)
        {
          int d = g_array_index (s->deps, int, m->dep0 + k);
          out[out0[d] + fill[d]++] = i;
        }
    }
  g_free (s->link_bytes);
  g_free (s->dlink_busy);
  s->link_bytes = g_new0 (double, MAX (nl, 1));
  s->dlink_busy = g_new0 (double, MAX (2 * nl, 1));
  g_autofree double *cap = g_new (double, MAX (2 * nl, 1));
  g_autofree int *count = g_new (int, MAX (2 * nl, 1));
  g_autoptr (GSequence) queue = g_sequence_new (g_free);
  g_autoptr (GPtrArray) active = g_ptr_array_new ();
  g_autofree gboolean *fixed = NULL;
  guint fixed_n = 0;
  double now = 0;
  s->makespan = 0;
  int ended = 0;

  /* A message ready at t: active after its latency (an event on one rank:
   * after its delay, moving nothing). */
#define SCHEDULE(I, T)                                                           \
  do                                                                             \
    {                                                                            \
      msg *m_ = msg_at (s, (I));                                                 \
      m_->ready = (T);                                                           \
      pending *p_ = g_new (pending, 1);                                          \
      p_->m = (I);                                                               \
      p_->t = m_->ready + m_->delay + (m_->src == m_->dst ? 0 : m_->latency);    \
      g_sequence_insert_sorted (queue, p_, pending_cmp, NULL); \
    }                                                                            \
  while (0)

  for (int i = 0; i < n; i++)
    if (msg_at (s, i)->waiting == 0)
      SCHEDULE (i, 0.0);
  GArray *done_now = g_array_new (FALSE, FALSE, sizeof (int));
  while (ended < n)
    {
      double t_act = INFINITY, t_end = INFINITY;
      if (g_sequence_get_length (queue) > 0)
        t_act = ((pending *) g_sequence_get (g_sequence_get_begin_iter (queue)))->t;
      for (guint i = 0; i < active->len; i++)
        {
          msg *m = g_ptr_array_index (active, i);
          t_end = fmin (t_end, now + m->left / m->rate);
        }
      double t = fmin (t_act, t_end);
      if (!isfinite (t))
        break;   /* (cannot happen: every message's deps come before it) */
      /* Move every active flow's bytes to t. */
      double dt = t - now;
      for (guint i = 0; i < active->len; i++)
        {
          msg *m = g_ptr_array_index (active, i);
          double moved = fmin (m->rate * dt, m->left);
          m->left -= moved;
          for (int k = 0; k < m->route_n; k++)
            s->link_bytes[m->route[k] / 2] += moved;
        }
      if (dt > 0)
        {
          /* Busy time: a directed link carrying any flow. */
          g_autofree gboolean *on = g_new0 (gboolean, MAX (2 * nl, 1));
          for (guint i = 0; i < active->len; i++)
            {
              msg *m = g_ptr_array_index (active, i);
              for (int k = 0; k < m->route_n; k++)
                on[m->route[k]] = TRUE;
            }
          for (int d = 0; d < 2 * nl; d++)
            if (on[d])
              s->dlink_busy[d] += dt;
        }
      now = t;
      g_array_set_size (done_now, 0);
      /* Flows done (to rounding: a flow meant to end now). */
      for (guint i = 0; i < active->len;)
        {
          msg *m = g_ptr_array_index (active, i);
          if (m->left <= 1e-9 * fmax (m->bytes, 1) || now + m->left / m->rate <= now * (1 + 1e-15))
            {
              /* What is left is below the clock's resolution: it is across. */
              for (int k = 0; k < m->route_n; k++)
                s->link_bytes[m->route[k] / 2] += m->left;
              m->left = 0;
              int id = (int) (m - msg_at (s, 0));
              g_array_append_val (done_now, id);
              g_ptr_array_remove_index_fast (active, i);
            }
          else
            i++;
        }
      /* Activations due now: flows join; zero-byte messages and events end. */
      while (g_sequence_get_length (queue) > 0)
        {
          GSequenceIter *it = g_sequence_get_begin_iter (queue);
          pending *p = g_sequence_get (it);
          if (p->t > now)
            break;
          msg *m = msg_at (s, p->m);
          int id = p->m;
          g_sequence_remove (it);
          m->active_at = now;
          if (m->src == m->dst || m->bytes == 0 || m->route_n == 0)
            g_array_append_val (done_now, id);
          else
            {
              m->left = m->bytes;
              m->active = TRUE;
              g_ptr_array_add (active, m);
            }
        }
      for (guint j = 0; j < done_now->len; j++)
        {
          int id = g_array_index (done_now, int, j);
          msg *m = msg_at (s, id);
          m->ended = TRUE;
          m->active = FALSE;
          m->end = now;
          s->makespan = fmax (s->makespan, now);
          ended++;
          for (int k = out0[id]; k < out0[id + 1]; k++)
            if (--msg_at (s, out[k])->waiting == 0)
              SCHEDULE (out[k], now);
        }
      if (active->len > fixed_n)
        {
          fixed_n = active->len * 2;
          g_free (fixed);
          fixed = g_new (gboolean, fixed_n);
        }
      fair_rates (s, active, cap, count, fixed);
    }
#undef SCHEDULE
  g_array_unref (done_now);
  return TRUE;
}

/* ---- collectives -------------------------------------------------------- */

static int
member (const int *members, int i)
{
  return members ? members[i] : i;
}

/* Rank i's event joining deps (a zero-time event on its device). */
static int
join (tw_netsim *s, int rank, const int *deps, int n, double delay)
{
  return tw_netsim_add (s, rank, rank, 0, delay, deps, n);
}

/* The ring's 2(p−1) steps (reduce-scatter then all-gather: first_step 0,
 * steps 2(p−1)) or one half of it, each moving a block of bytes/p to the
 * right-hand neighbour; in the reduce-scatter half a block received is
 * reduced (gamma) before it goes on. */
static void
ring_steps (tw_netsim *s, const int *members, int p, double bytes, double gamma, int first,
            int count, int *last)
{
  if (p < 2)
    return;
  double blk = bytes / p;
  g_autofree int *recv = g_new (int, p);   /* the message each member last received */
  g_autofree int *sent = g_new (int, p);
  for (int i = 0; i < p; i++)
    recv[i] = sent[i] = -1;
  for (int k = first; k < first + count; k++)
    {
      g_autofree int *nrecv = g_new (int, p);
      for (int i = 0; i < p; i++)
        {
          int to = (i + 1) % p;
          /* What member i sends at step k: its own block (k = 0 or the
           * all-gather's first step), else the block it received at step
           * k − 1, reduced first in the reduce-scatter. */
          int deps[3] = { last[i], recv[i], sent[i] };
          double delay = k > 0 && k <= p - 1 && recv[i] >= 0 ? gamma * blk : 0;
          int m = tw_netsim_add (s, member (members, i), member (members, to), blk, delay, deps, 3);
          sent[i] = m;
          nrecv[to] = m;
        }
      memcpy (recv, nrecv, p * sizeof (int));
    }
  for (int i = 0; i < p; i++)
    {
      int deps[3] = { last[i], recv[i], sent[i] };
      /* The reduce-scatter's last block is reduced on arrival. */
      double delay = first + count == p - 1 ? gamma * blk : 0;
      last[i] = join (s, member (members, i), deps, 3, delay);
    }
}

void
tw_sim_reduce_scatter (tw_netsim *s, const int *members, int p, double bytes, double gamma,
                       int *last)
{
  ring_steps (s, members, p, bytes, gamma, 0, p - 1, last);
}

void
tw_sim_allgather (tw_netsim *s, const int *members, int p, double bytes, int *last)
{
  ring_steps (s, members, p, bytes, 0, p - 1, p - 1, last);
}

/* Binary tree over members relative to root: parent (r − 1)/2, children
 * 2r + 1, 2r + 2 (algo.c's).  Reduce: each member receives its children's
 * buffers at once, adds them (gamma each) and sends to its parent. */
static void
tree_reduce (tw_netsim *s, const int *members, int p, int root, double bytes, double gamma,
             int *last)
{
  g_autofree int *up = g_new (int, p);     /* relative member → its send to the parent */
  for (int r = p - 1; r >= 0; r--)
    {
      int i = (r + root) % p;
      int deps[3] = { last[i], -1, -1 };
      int kids = 0;
      for (int c = 0; c < 2; c++)
        if (2 * r + 1 + c < p)
          deps[1 + kids++] = up[2 * r + 1 + c];
      int done = join (s, member (members, i), deps, 3, gamma * bytes * kids);
      if (r > 0)
        up[r] = tw_netsim_add (s, member (members, i), member (members, ((r - 1) / 2 + root) % p),
                               bytes, 0, &done, 1);
      last[i] = r > 0 ? up[r] : done;
    }
}

static void
tree_bcast (tw_netsim *s, const int *members, int p, int root, double bytes, int *last)
{
  g_autofree int *down = g_new (int, p);   /* relative member → the message it received */
  g_autofree int *got = g_new (int, p);
  for (int r = 0; r < p; r++)
    {
      int i = (r + root) % p;
      int deps[2] = { last[i], r > 0 ? down[r] : -1 };
      got[r] = join (s, member (members, i), deps, 2, 0);
      int sends[2] = { -1, -1 };
      for (int c = 0; c < 2; c++)
        if (2 * r + 1 + c < p)
          {
            int child = 2 * r + 1 + c;
            sends[c] = tw_netsim_add (s, member (members, i), member (members, (child + root) % p),
                                      bytes, 0, &got[r], 1);
            down[child] = sends[c];
          }
      int fin[3] = { got[r], sends[0], sends[1] };
      last[i] = join (s, member (members, i), fin, 3, 0);
    }
}

void
tw_sim_broadcast (tw_netsim *s, const int *members, int p, int root, double bytes, int *last)
{
  if (p >= 2)
    tree_bcast (s, members, p, root, bytes, last);
}

/* Parameter server on the last member: every worker sends its buffer, the
 * server adds them ((p − 1)·gamma·bytes) and sends the sum to each. */
static void
ps_allreduce (tw_netsim *s, const int *members, int p, double bytes, double gamma, int *last)
{
  int srv = p - 1;
  g_autofree int *in = g_new (int, p + 1);
  for (int i = 0; i < srv; i++)
    in[i] = tw_netsim_add (s, member (members, i), member (members, srv), bytes, 0, &last[i], 1);
  in[srv] = last[srv];
  int sum = join (s, member (members, srv), in, p, gamma * bytes * (p - 1));
  g_autofree int *outs = g_new (int, p);
  for (int i = 0; i < srv; i++)
    {
      outs[i] = tw_netsim_add (s, member (members, srv), member (members, i), bytes, 0, &sum, 1);
      int deps[2] = { in[i], outs[i] };
      last[i] = join (s, member (members, i), deps, 2, 0);
    }
  outs[srv] = sum;
  last[srv] = join (s, member (members, srv), outs, p, 0);
}

/* Hierarchical: a tree reduce inside each node to its first member, a
 * ring among those leaders, a tree broadcast inside each node. */
static void
hier_allreduce (tw_netsim *s, const int *members, int p, double bytes, double gamma, int *last)
{
  g_autoptr (GHashTable) by_node = g_hash_table_new_full (NULL, NULL, NULL,
                                                          (GDestroyNotify) g_array_unref);
  GArray *order = g_array_new (FALSE, FALSE, sizeof (int));   /* nodes, first seen first */
  for (int i = 0; i < p; i++)
    {
      int node = tw_topo_node_of (s->topo, member (members, i));
      GArray *g = g_hash_table_lookup (by_node, GINT_TO_POINTER (node));
      if (g == NULL)
        {
          g = g_array_new (FALSE, FALSE, sizeof (int));
          g_hash_table_insert (by_node, GINT_TO_POINTER (node), g);
          g_array_append_val (order, node);
        }
      g_array_append_val (g, i);
    }
  int m = (int) order->len;
  g_autofree int *leaders = g_new (int, m);
  g_autofree int *leader_last = g_new (int, m);
  for (int k = 0; k < m; k++)
    {
      GArray *g = g_hash_table_lookup (by_node, GINT_TO_POINTER (g_array_index (order, int, k)));
      int q = (int) g->len;
      g_autofree int *mem = g_new (int, q);
      g_autofree int *l = g_new (int, q);
      for (int j = 0; j < q; j++)
        {
          mem[j] = member (members, g_array_index (g, int, j));
          l[j] = last[g_array_index (g, int, j)];
        }
      tree_reduce (s, mem, q, 0, bytes, gamma, l);
      for (int j = 0; j < q; j++)
        last[g_array_index (g, int, j)] = l[j];
      leaders[k] = mem[0];
      leader_last[k] = l[0];
    }
  ring_steps (s, leaders, m, bytes, gamma, 0, 2 * (m - 1), leader_last);
  for (int k = 0; k < m; k++)
    {
      GArray *g = g_hash_table_lookup (by_node, GINT_TO_POINTER (g_array_index (order, int, k)));
      int q = (int) g->len;
      g_autofree int *mem = g_new (int, q);
      g_autofree int *l = g_new (int, q);
      for (int j = 0; j < q; j++)
        {
          mem[j] = member (members, g_array_index (g, int, j));
          l[j] = j == 0 ? leader_last[k] : last[g_array_index (g, int, j)];
        }
      tree_bcast (s, mem, q, 0, bytes, l);
      for (int j = 0; j < q; j++)
        last[g_array_index (g, int, j)] = l[j];
    }
  g_array_unref (order);
}

void
tw_sim_allreduce (tw_netsim *s, tw_algo algo, const int *members, int p, double bytes,
                  double gamma, int *last)
{
  if (p < 2)
    return;
  switch (algo)
    {
    case TW_ALGO_TREE:
      tree_reduce (s, members, p, 0, bytes, gamma, last);
      tree_bcast (s, members, p, 0, bytes, last);
      break;
    case TW_ALGO_PS:
      ps_allreduce (s, members, p, bytes, gamma, last);
      break;
    case TW_ALGO_HIER:
      hier_allreduce (s, members, p, bytes, gamma, last);
      break;
    case TW_ALGO_MPI:
    case TW_ALGO_RING:
    default:
      ring_steps (s, members, p, bytes, gamma, 0, 2 * (p - 1), last);
      break;
    }
}

/* ---- collectives that start together: their time ----------------------- */

/* A simulation's time, its link bytes (times `times`) added to link_bytes. */
static double
run_time (tw_netsim *s, double times, double *link_bytes, GError **error)
{
  if (!tw_netsim_run (s, error))
    return NAN;
  for (int l = 0; link_bytes && l < tw_topo_n_links (s->topo); l++)
    link_bytes[l] += times * tw_netsim_link_bytes (s, l);
  return tw_netsim_makespan (s);
}

/* One ring step (member i sends bytes/p to member i + 1, all at once)
 * counted 2(p − 1) times, and the reduce-scatter's p − 1 reductions. */
static double
ring_time (tw_topo *t, const int *members, int p, double bytes, double gamma, double *link_bytes,
           GError **error)
{
  if (p < 2)
    return 0;
  g_autoptr (tw_netsim) s = tw_netsim_new (t);
  for (int i = 0; i < p; i++)
    tw_netsim_add (s, member (members, i), member (members, (i + 1) % p), bytes / p, 0, NULL, 0);
  double step = run_time (s, 2 * (p - 1), link_bytes, error);
  return 2 * (p - 1) * step + (p - 1) * gamma * bytes / p;
}

/* Every node's tree (reduce or broadcast) at once, in one simulation. */
static double
node_trees_time (tw_topo *t, GArray *const *groups, int m, double bytes, double gamma,
                 gboolean reduce, double *link_bytes, GError **error)
{
  g_autoptr (tw_netsim) s = tw_netsim_new (t);
  for (int k = 0; k < m; k++)
    {
      int q = (int) groups[k]->len;
      g_autofree int *l = g_new (int, q);
      for (int j = 0; j < q; j++)
        l[j] = -1;
      if (q < 2)
        continue;
      if (reduce)
        tree_reduce (s, (const int *) groups[k]->data, q, 0, bytes, gamma, l);
      else
        tree_bcast (s, (const int *) groups[k]->data, q, 0, bytes, l);
    }
  return run_time (s, 1, link_bytes, error);
}

double
tw_sim_allreduce_time (tw_topo *t, tw_algo algo, const int *members, int p, double bytes,
                       double gamma, double *link_bytes, GError **error)
{
  for (int i = 0; i < p; i++)
    if (member (members, i) < 0 || member (members, i) >= tw_topo_n_devices (t))
      {
        g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                     "member %d is rank %d, not a device of the topology (%d)", i,
                     member (members, i), tw_topo_n_devices (t));
        return NAN;
      }
  if (p < 2)
    return 0;
  switch (algo)
    {
    case TW_ALGO_TREE:
    case TW_ALGO_PS:
      {
        g_autoptr (tw_netsim) s = tw_netsim_new (t);
        g_autofree int *last = g_new (int, p);
        for (int i = 0; i < p; i++)
          last[i] = -1;
        tw_sim_allreduce (s, algo, members, p, bytes, gamma, last);
        return run_time (s, 1, link_bytes, error);
      }
    case TW_ALGO_HIER:
      {
        /* Nodes in the order their first member comes (hier_allreduce's). */
        g_autoptr (GHashTable) index = g_hash_table_new (NULL, NULL);
        g_autoptr (GPtrArray) groups = g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
        for (int i = 0; i < p; i++)
          {
            int node = tw_topo_node_of (t, member (members, i));
            gpointer k = g_hash_table_lookup (index, GINT_TO_POINTER (node + 1));
            if (k == NULL)
              {
                g_ptr_array_add (groups, g_array_new (FALSE, FALSE, sizeof (int)));
                k = GINT_TO_POINTER (groups->len);
                g_hash_table_insert (index, GINT_TO_POINTER (node + 1), k);
              }
            int r = member (members, i);
            g_array_append_val ((GArray *) g_ptr_array_index (groups, GPOINTER_TO_INT (k) - 1), r);
          }
        int m = (int) groups->len;
        g_autofree int *leaders = g_new (int, m);
        for (int k = 0; k < m; k++)
          leaders[k] = g_array_index ((GArray *) g_ptr_array_index (groups, k), int, 0);
        double up = node_trees_time (t, (GArray *const *) groups->pdata, m, bytes, gamma, TRUE,
                                     link_bytes, error);
        double across = isnan (up) ? NAN
                                   : ring_time (t, leaders, m, bytes, gamma, link_bytes, error);
        double down = isnan (across) ? NAN
                                     : node_trees_time (t, (GArray *const *) groups->pdata, m,
                                                        bytes, 0, FALSE, link_bytes, error);
        return up + across + down;
      }
    case TW_ALGO_MPI:
    case TW_ALGO_RING:
    default:
      return ring_time (t, members, p, bytes, gamma, link_bytes, error);
    }
}
