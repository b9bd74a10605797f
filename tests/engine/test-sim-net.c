/* test-sim-net.c — the simulator's network (engine/sim/net.h): each
 * algorithm's simulated all-reduce on an uncontended topology equals its
 * closed form (written in engine/comm/algo.c); flows that share a link share
 * its bandwidth and only they slow down; routes prefer the fast links;
 * malformed, disconnected or zero-bandwidth topologies are refused naming
 * the link or device. */
#include "engine/sim/net.h"

#include <glib/gstdio.h>
#include <math.h>

/* Closed forms and simulation add the same terms in another order. */
#define REL 1e-9

static void
assert_close (double got, double want, const char *what)
{
  if (!(fabs (got - want) <= REL * fabs (want)))
    g_error ("%s: simulated %.12g s, closed form %.12g s (%.3g relative)", what, got, want,
             fabs (got - want) / fabs (want));
}

/* p devices on one switch, each by a link of bandwidth bw and latency lat:
 * between any two, α = 2·lat and β = 1/bw, and no two messages of a ring
 * step share a directed link. */
static tw_topo *
star (int p, double bw, double lat)
{
  tw_topo *t = tw_topo_new ();
  int sw = tw_topo_add_switch (t, "switch");
  for (int i = 0; i < p; i++)
    {
      g_autofree char *name = g_strdup_printf ("dev%d", i);
      int v = tw_topo_add_device (t, name, 0);
      tw_topo_add_link (t, v, sw, bw, lat, TW_LINK_OTHER, NULL);
    }
  g_assert_true (tw_topo_check (t, NULL));
  return t;
}

static double
simulate (tw_topo *t, tw_algo algo, int p, double n, double gamma)
{
  g_autoptr (tw_netsim) s = tw_netsim_new (t);
  g_autofree int *last = g_new (int, p);
  for (int i = 0; i < p; i++)
    last[i] = -1;
  tw_sim_allreduce (s, algo, NULL, p, n, gamma, last);
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_netsim_run (s, &error));
  double end = 0;
  for (int i = 0; i < p; i++)
    end = fmax (end, tw_netsim_end (s, last[i]));
  g_assert_cmpfloat (fabs (end - tw_netsim_makespan (s)), <=, 1e-15 + REL * end);
  return end;
}

static void
test_point_to_point (void)
{
  g_autoptr (tw_topo) t = star (2, 10e9, 1e-6);
  g_autoptr (tw_netsim) s = tw_netsim_new (t);
  int m = tw_netsim_add (s, 0, 1, 1e6, 0, NULL, 0);
  int e = tw_netsim_add (s, 1, 1, 0, 5e-6, &m, 1);          /* compute after it */
  int z = tw_netsim_add (s, 1, 0, 0, 0, &e, 1);             /* an empty message */
  g_assert_true (tw_netsim_run (s, NULL));
  assert_close (tw_netsim_end (s, m), 2e-6 + 1e6 / 10e9, "one message");
  assert_close (tw_netsim_end (s, e), 2e-6 + 1e6 / 10e9 + 5e-6, "an event after it");
  assert_close (tw_netsim_end (s, z), 2e-6 + 1e6 / 10e9 + 5e-6 + 2e-6, "latency alone");
  /* Both links carried the megabyte (the empty message nothing). */
  g_assert_cmpfloat (fabs (tw_netsim_link_bytes (s, 0) - 1e6), <, 1);
  g_assert_cmpfloat (fabs (tw_netsim_link_bytes (s, 1) - 1e6), <, 1);
}

static void
test_ring (void)
{
  const double bw = 25e9, lat = 1.5e-6, gamma = 1.0 / 20e9;
  for (int p = 2; p <= 32; p *= 2)
    for (int odd = 0; odd < 2; odd++)
      {
        int q = p + odd;
        g_autoptr (tw_topo) t = star (q, bw, lat);
        for (double n = 4; n <= 64e6; n *= 256)
          {
            double a = 2 * lat, b = 1 / bw;
            double want = 2 * (q - 1) * a + 2.0 * (q - 1) / q * n * b + (q - 1.0) / q * n * gamma;
            g_autofree char *what = g_strdup_printf ("ring p=%d n=%g", q, n);
            assert_close (simulate (t, TW_ALGO_RING, q, n, gamma), want, what);
            /* MPI's all-reduce is taken as the ring. */
            assert_close (simulate (t, TW_ALGO_MPI, q, n, gamma), want, what);
          }
      }
}

/* Complete binary trees (p = 2^(d+1) − 1): d levels, each parent's link
 * shared by its two children: 2d·(α + 2n·β) + 2d·n·γ. */
static void
test_tree (void)
{
  const double bw = 25e9, lat = 1.5e-6, gamma = 1.0 / 20e9, n = 8e6;
  for (int d = 1; d <= 5; d++)
    {
      int p = (1 << (d + 1)) - 1;
      g_autoptr (tw_topo) t = star (p, bw, lat);
      double a = 2 * lat, b = 1 / bw;
      double want = 2 * d * (a + 2 * n * b) + 2 * d * n * gamma;
      g_autofree char *what = g_strdup_printf ("tree p=%d", p);
      assert_close (simulate (t, TW_ALGO_TREE, p, n, gamma), want, what);
    }
  /* Two ranks: one child, its link its own. */
  g_autoptr (tw_topo) t2 = star (2, bw, lat);
  assert_close (simulate (t2, TW_ALGO_TREE, 2, n, gamma), 2 * (2 * lat + n / bw) + n * gamma,
                "tree p=2");
}

/* The server's link carries every worker's buffer in and the sum out:
 * 2α + 2(p−1)·n·β + (p−1)·n·γ. */
static void
test_ps (void)
{
  const double bw = 25e9, lat = 1.5e-6, gamma = 1.0 / 20e9, n = 8e6;
  for (int p = 2; p <= 16; p++)
    {
      g_autoptr (tw_topo) t = star (p, bw, lat);
      double want = 2 * 2 * lat + 2 * (p - 1) * n / bw + (p - 1) * n * gamma;
      g_autofree char *what = g_strdup_printf ("ps p=%d", p);
      assert_close (simulate (t, TW_ALGO_PS, p, n, gamma), want, what);
    }
}

/* m nodes of 3 devices (NVLink to a node switch, each its own NIC to the
 * core): a tree inside each node (one level, two children), a ring of the
 * m leaders across the core, a tree back. */
static void
test_hier (void)
{
  const double n = 64e6, gamma = 1.0 / 50e9;
  double bi, li, bo, lo;
  tw_link_kind_defaults (TW_LINK_NVLINK, &bi, &li);
  tw_link_kind_defaults (TW_LINK_INFINIBAND, &bo, &lo);
  for (int m = 2; m <= 8; m *= 2)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (tw_topo) t = tw_topo_cluster (m, 3, "nvlink+ib", &error);
      g_assert_no_error (error);
      g_assert_true (tw_topo_check (t, NULL));
      double ai = 2 * li, ao = 2 * lo;
      double intra = 2 * (ai + 2 * n / bi) + 2 * n * gamma;
      double ring = 2 * (m - 1) * ao + 2.0 * (m - 1) / m * n / bo + (m - 1.0) / m * n * gamma;
      g_autofree char *what = g_strdup_printf ("hier %d nodes × 3", m);
      assert_close (simulate (t, TW_ALGO_HIER, 3 * m, n, gamma), intra + ring, what);
      /* A flat ring over the 3m devices takes 2(3m − 1) steps, each as slow
       * as its slowest hop (a NIC): for a small buffer, where latency
       * rules, on one shared Ethernet NIC a node, hierarchical's 2(m − 1)
       * slow steps win. */
      g_autoptr (tw_topo) e = tw_topo_cluster (m, 3, "pcie+eth", &error);
      g_assert_no_error (error);
      double flat = simulate (e, TW_ALGO_RING, 3 * m, 64e3, gamma);
      double hier = simulate (e, TW_ALGO_HIER, 3 * m, 64e3, gamma);
      if (!(hier < flat / 1.5))
        g_error ("64 kB over %d nodes × 3 on pcie+eth: hier %g s, flat ring %g s", m, hier, flat);
    }
}

/* a, c on switch s1 and b, d on s2, one trunk s1–s2; e, f on s3 apart.
 * a→b and c→d share the trunk; e→f shares nothing. */
static void
test_contention (void)
{
  const double bw = 10e9, lat = 1e-6;
  g_autoptr (tw_topo) t = tw_topo_new ();
  int a = tw_topo_add_device (t, "a", 0), b = tw_topo_add_device (t, "b", 1);
  int c = tw_topo_add_device (t, "c", 0), d = tw_topo_add_device (t, "d", 1);
  int e = tw_topo_add_device (t, "e", 2), f = tw_topo_add_device (t, "f", 2);
  int s1 = tw_topo_add_switch (t, "s1"), s2 = tw_topo_add_switch (t, "s2");
  int s3 = tw_topo_add_switch (t, "s3");
  tw_topo_add_link (t, a, s1, bw, lat, TW_LINK_OTHER, NULL);
  tw_topo_add_link (t, c, s1, bw, lat, TW_LINK_OTHER, NULL);
  tw_topo_add_link (t, b, s2, bw, lat, TW_LINK_OTHER, NULL);
  tw_topo_add_link (t, d, s2, bw, lat, TW_LINK_OTHER, NULL);
  int trunk = tw_topo_add_link (t, s1, s2, bw, lat, TW_LINK_OTHER, "trunk");
  tw_topo_add_link (t, e, s3, bw, lat, TW_LINK_OTHER, NULL);
  tw_topo_add_link (t, f, s3, bw, lat, TW_LINK_OTHER, NULL);
  tw_topo_add_link (t, s3, s1, bw, lat, TW_LINK_OTHER, NULL);
  g_assert_true (tw_topo_check (t, NULL));
  g_autoptr (tw_netsim) s = tw_netsim_new (t);
  /* Ranks are devices in the order added: a 0, b 1, c 2, d 3, e 4, f 5. */
  int ab = tw_netsim_add (s, 0, 1, 1e6, 0, NULL, 0);
  int cd = tw_netsim_add (s, 2, 3, 2e6, 0, NULL, 0);
  int ef = tw_netsim_add (s, 4, 5, 2e6, 0, NULL, 0);
  g_assert_true (tw_netsim_run (s, NULL));
  double a3 = 3 * lat, a2 = 2 * lat;
  /* Half the trunk each until a→b's megabyte is across (2 MB of trunk
   * time), then c→d alone for its last megabyte. */
  assert_close (tw_netsim_end (s, ab), a3 + 2e6 / bw, "a→b shares the trunk");
  assert_close (tw_netsim_end (s, cd), a3 + 3e6 / bw, "c→d speeds up once a→b ends");
  assert_close (tw_netsim_end (s, ef), a2 + 2e6 / bw, "e→f shares nothing: full rate");
  g_assert_cmpfloat (fabs (tw_netsim_link_bytes (s, trunk) - 3e6), <, 1);
  assert_close (tw_netsim_link_busy (s, trunk), 3e6 / bw, "the trunk's busy time");
}

/* In a cluster preset a message inside a node goes by NVLink, not through
 * the core; between nodes by the NICs. */
static void
test_routes (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_topo) t = tw_topo_cluster (2, 4, "nvlink+ib", &error);
  g_assert_no_error (error);
  g_assert_cmpint (tw_topo_n_devices (t), ==, 8);
  g_assert_cmpint (tw_topo_node_of (t, 5), ==, 1);
  int n;
  const int *r = tw_topo_route (t, 0, 3, &n);
  g_assert_cmpint (n, ==, 2);
  for (int i = 0; i < n; i++)
    g_assert_cmpint (tw_topo_link_kind (t, r[i] / 2), ==, TW_LINK_NVLINK);
  r = tw_topo_route (t, 1, 6, &n);
  g_assert_cmpint (n, ==, 2);
  for (int i = 0; i < n; i++)
    g_assert_cmpint (tw_topo_link_kind (t, r[i] / 2), ==, TW_LINK_INFINIBAND);
  /* pcie+eth: one NIC a node, shared: device → PCIe switch → NIC → core → ... */
  g_autoptr (tw_topo) e = tw_topo_cluster (2, 4, "pcie+eth", &error);
  g_assert_no_error (error);
  r = tw_topo_route (e, 1, 6, &n);
  g_assert_cmpint (n, ==, 4);
  g_assert_null (tw_topo_cluster (2, 4, "carrier-pigeon", &error));
  g_assert_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG);
  g_assert_nonnull (strstr (error->message, "carrier-pigeon"));
}

static void
bad_json (const char *text, const char *want)
{
  g_autoptr (JsonParser) p = json_parser_new ();
  g_autoptr (GError) error = NULL;
  g_assert_true (json_parser_load_from_data (p, text, -1, NULL));
  g_autoptr (tw_topo) t = tw_topo_from_json (json_parser_get_root (p), "t.json", &error);
  g_assert_null (t);
  g_assert_error (error, TW_SIM_ERROR, TW_SIM_ERROR_TOPOLOGY);
  if (strstr (error->message, want) == NULL || !g_str_has_prefix (error->message, "t.json: "))
    g_error ("%s: expected the message to name \"%s\": %s", text, want, error->message);
}

static void
test_json (void)
{
  const char *good =
    "{\"vertices\": [{\"name\": \"g0\", \"device\": true, \"node\": 0},"
    " {\"name\": \"g1\", \"device\": true, \"node\": 1}, {\"name\": \"sw\"}],"
    " \"links\": [{\"a\": \"g0\", \"b\": \"sw\", \"kind\": \"ib\", \"gbytes_per_s\": 20,"
    " \"latency_us\": 3}, {\"a\": \"g1\", \"b\": \"sw\", \"kind\": \"ib\"}]}";
  g_autoptr (JsonParser) p = json_parser_new ();
  g_assert_true (json_parser_load_from_data (p, good, -1, NULL));
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_topo) t = tw_topo_from_json (json_parser_get_root (p), "t.json", &error);
  g_assert_no_error (error);
  double lat, bw, dbw, dlat;
  tw_link_kind_defaults (TW_LINK_INFINIBAND, &dbw, &dlat);
  tw_topo_route_cost (t, 0, 1, &lat, &bw);
  assert_close (lat, 3e-6 + dlat, "latency given and defaulted");
  assert_close (bw, 20e9, "the slower link");
  g_assert_cmpint (tw_topo_node_of (t, 1), ==, 1);
  /* From a file too. */
  g_autofree char *path = g_build_filename (g_get_tmp_dir (), "twb-topo-test.json", NULL);
  g_assert_true (g_file_set_contents (path, good, -1, NULL));
  g_autoptr (tw_topo) tf = tw_topo_load (path, &error);
  g_assert_no_error (error);
  g_assert_cmpint (tw_topo_n_links (tf), ==, 2);
  g_assert_true (g_file_set_contents (path, "{\"vertices\": [", -1, NULL));
  g_assert_null (tw_topo_load (path, &error));
  g_assert_nonnull (strstr (error->message, path));
  g_clear_error (&error);
  g_unlink (path);

  bad_json ("[1, 2]", "JSON object");
  bad_json ("{\"vertices\": [], \"links\": {}}", "must both be arrays");
  bad_json ("{\"vertices\": [{\"device\": true}], \"links\": []}", "vertex 0");
  bad_json ("{\"vertices\": [{\"name\": \"a\"}, {\"name\": \"a\"}], \"links\": []}",
            "the name a is taken");
  bad_json ("{\"vertices\": [{\"name\": \"a\", \"device\": true}], \"links\": [{\"a\": \"a\", "
            "\"b\": \"z\"}]}", "link a–z: no vertex is named z");
  bad_json ("{\"vertices\": [{\"name\": \"a\", \"device\": true}, {\"name\": \"s\"}], \"links\": "
            "[{\"a\": \"a\", \"b\": \"s\", \"kind\": \"smoke\"}]}", "link a–s: \"kind\"");
  bad_json ("{\"vertices\": [{\"name\": \"a\", \"device\": true}, {\"name\": \"b\", \"device\": "
            "true}, {\"name\": \"s\"}], \"links\": [{\"a\": \"a\", \"b\": \"s\", \"gbytes_per_s\": "
            "0}, {\"a\": \"b\", \"b\": \"s\"}]}", "link a–s: a bandwidth above 0");
  bad_json ("{\"vertices\": [{\"name\": \"a\", \"device\": true}, {\"name\": \"s\"}], \"links\": "
            "[{\"a\": \"a\", \"b\": \"s\", \"latency_us\": \"fast\"}]}", "link a–s");
  bad_json ("{\"vertices\": [{\"name\": \"a\", \"device\": true}, {\"name\": \"b\", \"device\": "
            "true}, {\"name\": \"s\"}, {\"name\": \"t\"}], \"links\": [{\"a\": \"a\", \"b\": "
            "\"s\"}, {\"a\": \"b\", \"b\": \"t\"}]}", "disconnected: device b (rank 1)");
  /* A device is not a router: b reaches a only through a third device. */
  bad_json ("{\"vertices\": [{\"name\": \"a\", \"device\": true}, {\"name\": \"b\", \"device\": "
            "true}, {\"name\": \"c\", \"device\": true}], \"links\": [{\"a\": \"a\", \"b\": "
            "\"c\"}, {\"a\": \"c\", \"b\": \"b\"}]}", "device b (rank 1) cannot reach a");
  bad_json ("{\"vertices\": [], \"links\": []}", "no device");
}

/* The fast time of a collective that starts together equals the full
 * simulation of its every message, on uncontended and contended
 * topologies (pcie+eth: a node's devices share one NIC). */
static void
test_fast_time (void)
{
  const double gamma = 1.0 / 30e9;
  const tw_algo algos[] = { TW_ALGO_RING, TW_ALGO_TREE, TW_ALGO_PS, TW_ALGO_HIER, TW_ALGO_MPI };
  struct
  {
    int nodes, per;
    const char *preset;
  } tops[] = { { 1, 5, "nvlink+ib" }, { 2, 3, "nvlink+ib" }, { 4, 3, "nvlink+roce" },
               { 4, 2, "pcie+eth" }, { 3, 4, "shm+eth" }, { 9, 1, "pcie+eth" } };
  for (guint k = 0; k < G_N_ELEMENTS (tops); k++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (tw_topo) t = tw_topo_cluster (tops[k].nodes, tops[k].per, tops[k].preset, &error);
      g_assert_no_error (error);
      int p = tops[k].nodes * tops[k].per;
      for (guint a = 0; a < G_N_ELEMENTS (algos); a++)
        for (double n = 1e3; n <= 1e8; n *= 100)
          {
            double fast = tw_sim_allreduce_time (t, algos[a], NULL, p, n, gamma, NULL, &error);
            g_assert_no_error (error);
            double full = simulate (t, algos[a], p, n, gamma);
            g_autofree char *what = g_strdup_printf ("%s on %d × %d %s, %g bytes",
                                                     tw_algo_name (algos[a]), tops[k].nodes,
                                                     tops[k].per, tops[k].preset, n);
            assert_close (fast, full, what);
            /* And the bytes on every link. */
            g_autofree double *lb = g_new0 (double, tw_topo_n_links (t));
            tw_sim_allreduce_time (t, algos[a], NULL, p, n, gamma, lb, NULL);
            g_autoptr (tw_netsim) s = tw_netsim_new (t);
            g_autofree int *last = g_new (int, p);
            for (int i = 0; i < p; i++)
              last[i] = -1;
            tw_sim_allreduce (s, algos[a], NULL, p, n, gamma, last);
            g_assert_true (tw_netsim_run (s, NULL));
            for (int l = 0; l < tw_topo_n_links (t); l++)
              if (fabs (lb[l] - tw_netsim_link_bytes (s, l)) > 1e-9 * n * p)
                g_error ("%s: link %s carried %g bytes, the full simulation %g", what,
                         tw_topo_link_name (t, l), lb[l], tw_netsim_link_bytes (s, l));
          }
    }
  /* 1024 ranks: the ring's 2(p − 1) steps are one step's simulation. */
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_topo) big = tw_topo_cluster (128, 8, "nvlink+ib", &error);
  g_assert_no_error (error);
  gint64 t0 = g_get_monotonic_time ();
  double ring = tw_sim_allreduce_time (big, TW_ALGO_RING, NULL, 1024, 64e6, 0, NULL, &error);
  double hier = tw_sim_allreduce_time (big, TW_ALGO_HIER, NULL, 1024, 64e6, 0, NULL, &error);
  g_assert_no_error (error);
  g_test_message ("1024 ranks, 64 MB: ring %.3f ms, hier %.3f ms (computed in %.0f ms)",
                  ring * 1e3, hier * 1e3, (g_get_monotonic_time () - t0) / 1e3);
  g_assert_cmpfloat (ring, >, 0);
  g_assert_cmpfloat (hier, >, 0);
}

static void
test_bad_messages (void)
{
  g_autoptr (tw_topo) t = star (2, 1e9, 1e-6);
  g_autoptr (tw_netsim) s = tw_netsim_new (t);
  tw_netsim_add (s, 0, 5, 10, 0, NULL, 0);
  g_autoptr (GError) error = NULL;
  g_assert_false (tw_netsim_run (s, &error));
  g_assert_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG);
  g_autoptr (tw_netsim) s2 = tw_netsim_new (t);
  int later = 3;
  tw_netsim_add (s2, 0, 1, 10, 0, &later, 1);
  g_clear_error (&error);
  g_assert_false (tw_netsim_run (s2, &error));
  g_assert_nonnull (strstr (error->message, "not before it"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/sim/net/point-to-point", test_point_to_point);
  g_test_add_func ("/sim/net/ring-closed-form", test_ring);
  g_test_add_func ("/sim/net/tree-closed-form", test_tree);
  g_test_add_func ("/sim/net/ps-closed-form", test_ps);
  g_test_add_func ("/sim/net/hier-closed-form", test_hier);
  g_test_add_func ("/sim/net/contention", test_contention);
  g_test_add_func ("/sim/net/routes", test_routes);
  g_test_add_func ("/sim/net/topology-json", test_json);
  g_test_add_func ("/sim/net/fast-time", test_fast_time);
  g_test_add_func ("/sim/net/bad-messages", test_bad_messages);
  return g_test_run ();
}
