/* sim-bench.c — the simulator's network and step against published and
 * closed-form figures, and its own speed.
 *
 *   build/bench/sim-bench
 *
 * 1. An HGX H100 (8 GPUs on NVSwitch), ring all-reduce from 8 kB to 8 GB:
 *    time, algorithm bandwidth (n / t) and bus bandwidth (2(p−1)/p · n / t,
 *    nccl-tests' busbw), beside NCCL's published ring figure: ~370 GB/s
 *    busbw at large sizes ("450GB/s is the line rate. With the protocol
 *    overhead (~20%) NCCL can get an effective NVLink bandwidth of 370GB/s
 *    ... with NCCL_ALGO=RING", NCCL's maintainer in NVIDIA/nccl-tests#212).
 * 2. The α–β closed forms of ring, tree and ps on a uniform switch, against
 *    the simulation (they must agree: tests/engine/test-sim-net.c).
 * 3. The wall time of one simulated data-parallel step at 8 … 1,024 ranks
 *    (8 GPUs a node, nvlink+ib; the 4096-wide MLP of 4 layers). */
#include "engine/sim/step.h"

#include <math.h>
#include <stdio.h>

static tw_graph *
mlp (int64_t hidden, int layers)
{
  tw_graph *g = tw_graph_new ();
  tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]) { hidden }, "data");
  tw_graph_add_input (g, "y", TW_I64, 0, NULL, "label");
  tw_attrs *h = tw_attrs_new (), *o = tw_attrs_new ();
  tw_attrs_set_int (h, "out_features", hidden);
  tw_attrs_set_int (o, "out_features", 10);
  const char *prev = "x";
  for (int i = 0; i < layers; i++)
    {
      char id[16], act[16];
      g_snprintf (id, sizeof id, "fc%d", i);
      g_snprintf (act, sizeof act, "relu%d", i);
      tw_graph_add (g, id, "linear", h, prev, NULL);
      tw_graph_add (g, act, "relu", NULL, id, NULL);
      prev = g_intern_string (act);
    }
  tw_graph_add (g, "out", "linear", o, prev, NULL);
  tw_graph_add (g, "loss", "cross_entropy", NULL, "out", "y", NULL);
  tw_attrs_free (h);
  tw_attrs_free (o);
  tw_graph_infer (g);
  return g;
}

int
main (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_topo) hgx = tw_topo_cluster (1, 8, "nvlink+ib", &error);
  double nv_bw, nv_lat;
  tw_link_kind_defaults (TW_LINK_NVLINK, &nv_bw, &nv_lat);
  printf ("HGX H100, 8 GPUs on NVSwitch (NVLink %.0f GB/s each way, %.1f us), ring all-reduce\n",
          nv_bw / 1e9, nv_lat * 1e6);
  printf ("%12s %12s %12s %12s %14s\n", "bytes", "time us", "algbw GB/s", "busbw GB/s",
          "NCCL ring busbw");
  for (double n = 8e3; n <= 8.1e9; n *= 8)
    {
      double t = tw_sim_allreduce_time (hgx, TW_ALGO_RING, NULL, 8, n, 0, NULL, &error);
      printf ("%12.0f %12.2f %12.1f %12.1f %14s\n", n, t * 1e6, n / t / 1e9,
              2.0 * 7 / 8 * n / t / 1e9, n >= 1e9 ? "~370" : "");
    }

  printf ("\nclosed forms on 16 devices of one switch (25 GB/s, 2 us a hop), 64 MB\n");
  {
    g_autoptr (tw_topo) t = tw_topo_new ();
    int sw = tw_topo_add_switch (t, "sw");
    for (int i = 0; i < 15; i++)
      {
        char name[16];
        g_snprintf (name, sizeof name, "d%d", i);
        tw_topo_add_link (t, tw_topo_add_device (t, name, 0), sw, 25e9, 2e-6, TW_LINK_OTHER, NULL);
      }
    int p = 15;
    double n = 64e6, a = 4e-6, b = 1 / 25e9;
    double ring = 2 * (p - 1) * a + 2.0 * (p - 1) / p * n * b;
    double tree = 2 * 3 * (a + 2 * n * b);
    double ps = 2 * a + 2 * (p - 1) * n * b;
    printf ("%6s %14s %14s\n", "algo", "simulated ms", "closed form ms");
    printf ("%6s %14.4f %14.4f\n", "ring",
            1e3 * tw_sim_allreduce_time (t, TW_ALGO_RING, NULL, p, n, 0, NULL, NULL), 1e3 * ring);
    printf ("%6s %14.4f %14.4f\n", "tree",
            1e3 * tw_sim_allreduce_time (t, TW_ALGO_TREE, NULL, p, n, 0, NULL, NULL), 1e3 * tree);
    printf ("%6s %14.4f %14.4f\n", "ps",
            1e3 * tw_sim_allreduce_time (t, TW_ALGO_PS, NULL, p, n, 0, NULL, NULL), 1e3 * ps);
  }

  printf ("\none simulated data-parallel step (4096-wide MLP, 4 layers, 64 rows a rank, h100, "
          "nvlink+ib)\n");
  printf ("%7s %6s %12s %12s %12s\n", "ranks", "algo", "step ms", "exposed ms", "wall ms");
  g_autoptr (tw_graph) g = mlp (4096, 4);
  tw_device_profile d;
  tw_device_profile_named ("h100", &d, NULL);
  for (int p = 8; p <= 1024; p *= 4)
    for (int k = 0; k < 3; k++)
      {
        int ranks = p == 512 ? 1024 : p;
        g_autoptr (tw_topo) t = tw_topo_cluster (MAX (ranks / 8, 1), MIN (ranks, 8), "nvlink+ib",
                                                 NULL);
        tw_sim_dp_options o;
        tw_sim_dp_options_init (&o);
        o.ranks = ranks;
        o.algo = (tw_algo[]) { TW_ALGO_RING, TW_ALGO_TREE, TW_ALGO_HIER }[k];
        tw_sim_dp_result r;
        gint64 t0 = g_get_monotonic_time ();
        if (!tw_sim_dp_step (g, 64 * ranks, &d, t, &o, &r, &error))
          {
            fprintf (stderr, "sim-bench: %s\n", error->message);
            return 1;
          }
        printf ("%7d %6s %12.3f %12.3f %12.1f\n", ranks, tw_algo_name (o.algo), r.step_s * 1e3,
                r.exposed_s * 1e3, (g_get_monotonic_time () - t0) / 1e3);
      }
  return 0;
}
