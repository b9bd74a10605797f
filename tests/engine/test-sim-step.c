/* test-sim-step.c — the simulator's time mode for a data-parallel step
 * (engine/sim/step.h): one rank is its ops' roofline times; on a free
 * network many ranks cost nothing more; one bucket's all-reduce is its
 * algorithm's closed form and, posted after backward, all exposed; small
 * buckets hide part of it under backward; step time grows with ranks by
 * the ring's latency term; the fast path (one rank's chain) equals the
 * simulation of every rank's every message; 1,024 ranks take well under a
 * second; bad requests are refused naming what is wrong. */
#include "engine/sim/calibrate.h"
#include "engine/sim/step.h"

#include <glib/gstdio.h>

#include <math.h>
#include <string.h>

static tw_graph *
mlp (int64_t hidden, int layers)
{
  tw_graph *g = tw_graph_new ();
  tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]) { 512 }, "data");
  tw_graph_add_input (g, "y", TW_I64, 0, NULL, "label");
  tw_attrs *h = tw_attrs_new (), *o = tw_attrs_new ();
  tw_attrs_set_int (h, "out_features", hidden);
  tw_attrs_set_int (o, "out_features", 10);
  const char *prev = "x";
  char id[32], act[32];
  for (int i = 0; i < layers; i++)
    {
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
  g_assert_cmpint (tw_graph_infer (g), ==, 0);
  return g;
}

static tw_topo *
star (int p, double bw, double lat)
{
  tw_topo *t = tw_topo_new ();
  int sw = tw_topo_add_switch (t, "switch");
  for (int i = 0; i < p; i++)
    {
      g_autofree char *name = g_strdup_printf ("dev%d", i);
      tw_topo_add_link (t, tw_topo_add_device (t, name, 0), sw, bw, lat, TW_LINK_OTHER, NULL);
    }
  return t;
}

static double
ring (int p, double n, double a, double b)
{
  return p < 2 ? 0 : 2 * (p - 1) * a + 2.0 * (p - 1) / p * n * b;
}

static tw_sim_dp_result
run (tw_graph *g, int64_t batch, tw_topo *t, int p, double bucket_mb)
{
  tw_device_profile d;
  g_assert_true (tw_device_profile_named ("h100", &d, NULL));
  tw_sim_dp_options o;
  tw_sim_dp_options_init (&o);
  o.ranks = p;
  o.bucket_mb = bucket_mb;
  o.gamma = 0;
  tw_sim_dp_result r, x;
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_sim_dp_step (g, batch, &d, t, &o, &r, &error));
  g_assert_no_error (error);
  /* Every rank's every message simulated gives the same step. */
  o.exact = TRUE;
  g_assert_true (tw_sim_dp_step (g, batch, &d, t, &o, &x, &error));
  double tol = 1e-9 * x.step_s;
  if (fabs (r.step_s - x.step_s) > tol || fabs (r.exposed_s - x.exposed_s) > tol
      || fabs (r.comm_s - x.comm_s) > tol || fabs (r.compute_s - x.compute_s) > tol
      || fabs (r.busiest_link_bytes - x.busiest_link_bytes) > 1e-9 * x.busiest_link_bytes + 1e-6)
    g_error ("%d ranks: fast step %g s (exposed %g, comm %g, link %g B), exact %g s (exposed %g, "
             "comm %g, link %g B)", p, r.step_s, r.exposed_s, r.comm_s, r.busiest_link_bytes,
             x.step_s, x.exposed_s, x.comm_s, x.busiest_link_bytes);
  return r;
}

static void
test_one_rank (void)
{
  g_autoptr (tw_graph) g = mlp (1024, 3);
  g_autoptr (tw_topo) t = star (1, 1e9, 1e-6);
  tw_sim_dp_result r = run (g, 256, t, 1, 25);
  /* The ops' times summed, by hand: forward, backward, the updates. */
  tw_device_profile d;
  tw_device_profile_named ("h100", &d, NULL);
  g_autoptr (tw_graph) c = tw_graph_copy (g);
  tw_graph_infer_batch (c, 256);
  double want = 0, params = 0;
  for (int i = 0; i < tw_graph_n_nodes (c); i++)
    {
      const tw_node *n = tw_graph_node (c, i);
      want += tw_device_op_time (&d, n, FALSE) + tw_device_op_time (&d, n, TRUE);
      for (int k = 0; k < n->n_params; k++)
        params += 4.0 * tw_tinfo_numel (&n->params[k].info, NULL);
    }
  want += r.buckets * d.launch_s + 7 * params / (d.mem_bw * d.mem_eff);
  g_assert_cmpfloat (fabs (r.step_s - want), <=, 1e-12 * want);
  g_assert_cmpfloat (fabs (r.compute_s - want), <=, 1e-12 * want);
  g_assert_cmpfloat (r.exposed_s, ==, 0);
  g_assert_cmpfloat (r.param_bytes, ==, params);
  g_assert_cmpfloat (r.optimizer_bytes, ==, 2 * params);
  /* A linear layer's backward is twice its forward's work. */
  const tw_node *fc = tw_graph_find (c, "fc1");
  double fwd = tw_device_op_time (&d, fc, FALSE) - d.launch_s;
  double bwd = tw_device_op_time (&d, fc, TRUE) - d.launch_s;
  g_assert_cmpfloat (fabs (bwd - 2 * fwd), <=, 1e-9 * fwd);
}

static void
test_free_network (void)
{
  g_autoptr (tw_graph) g = mlp (1024, 3);
  g_autoptr (tw_topo) one = star (1, 1e30, 0);
  g_autoptr (tw_topo) t = star (8, 1e30, 0);
  tw_sim_dp_result a = run (g, 256, one, 1, 25);
  /* 8 ranks of 32 rows: each computes a shard, nothing costs to send. */
  tw_sim_dp_result b = run (g, 256, t, 8, 25);
  g_autoptr (tw_topo) t1 = star (1, 1e30, 0);
  tw_sim_dp_result c = run (g, 32, t1, 1, 25);
  g_assert_cmpfloat (fabs (b.step_s - c.step_s), <=, 1e-9 * c.step_s);
  g_assert_cmpfloat (b.step_s, <, a.step_s);
  g_assert_cmpfloat (b.samples_per_s, >, a.samples_per_s);
}

/* One bucket: posted when backward has produced the first layer's
 * gradient (only the input's trivial ops after it), its all-reduce a ring's
 * closed form, all of it exposed. */
static void
test_one_bucket_exposed (void)
{
  const double bw = 10e9, lat = 5e-6;
  g_autoptr (tw_graph) g = mlp (2048, 3);
  for (int p = 2; p <= 16; p *= 2)
    {
      g_autoptr (tw_topo) t = star (p, bw, lat);
      tw_sim_dp_result r = run (g, 512, t, p, 1e6);
      g_assert_cmpint (r.buckets, ==, 1);
      double want = ring (p, r.grad_bytes, 2 * lat, 1 / bw);
      /* The bucket's ring and the loss's, all exposed (the backward of the
       * input nodes after the first layer's is free). */
      double loss = ring (p, 32, 2 * lat, 1 / bw);
      g_assert_cmpfloat (fabs (r.comm_s - (want + loss)), <=, 1e-9 * want);
      g_assert_cmpfloat (fabs (r.exposed_s - (want + loss)), <=, 1e-9 * want);
    }
}

/* Smaller buckets start during backward: less is exposed than with one,
 * the same bytes go (a backward about as long as the communication: 4096
 * rows a rank through 2048-wide layers, against 17 MB a layer at 50 GB/s;
 * with a backward much shorter, more buckets only add latency). */
static void
test_buckets_overlap (void)
{
  g_autoptr (tw_graph) g = mlp (2048, 6);
  g_autoptr (tw_topo) t = star (4, 50e9, 5e-6);
  tw_sim_dp_result one = run (g, 16384, t, 4, 1e6);
  tw_sim_dp_result small = run (g, 16384, t, 4, 4);
  g_assert_cmpint (small.buckets, >, 3);
  g_assert_cmpfloat (small.grad_bytes, ==, one.grad_bytes);
  g_assert_cmpfloat (small.exposed_s, <, 0.7 * one.exposed_s);
  g_assert_cmpfloat (small.step_s, <, one.step_s);
}

/* The ring's bandwidth term is flat in p and its latency term linear: with
 * tiny gradients (latency-bound) comm grows about linearly with p; with
 * large ones (bandwidth-bound) it stays within 2(p−1)/p of 1 of n·β. */
static void
test_scaling (void)
{
  g_autoptr (tw_graph) small = mlp (16, 1);
  g_autoptr (tw_graph) big = mlp (4096, 4);
  const double bw = 25e9, lat = 10e-6;
  double prev_small = 0;
  for (int p = 4; p <= 64; p *= 2)
    {
      g_autoptr (tw_topo) t = star (p, bw, lat);
      tw_sim_dp_result s = run (small, 4096, t, p, 1e6);
      tw_sim_dp_result b = run (big, 4096, t, p, 1e6);
      if (prev_small > 0)
        g_assert_cmpfloat (s.comm_s / prev_small, >, 1.8);
      prev_small = s.comm_s;
      double nb = b.grad_bytes / bw;
      /* (Plus the loss's all-reduce: latency alone, 2(p − 1)·α.) */
      g_assert_cmpfloat (b.comm_s, >=, nb);
      g_assert_cmpfloat (b.comm_s, <=, 2 * nb + 2 * 2 * (p - 1) * 2 * lat + 1e-12);
    }
}

static void
test_thousand_ranks (void)
{
  g_autoptr (tw_graph) g = mlp (4096, 4);
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_topo) t = tw_topo_cluster (128, 8, "nvlink+ib", &error);
  g_assert_no_error (error);
  tw_device_profile d;
  tw_device_profile_named ("h100", &d, NULL);
  tw_sim_dp_options o;
  tw_sim_dp_options_init (&o);
  o.ranks = 1024;
  tw_sim_dp_result r;
  gint64 t0 = g_get_monotonic_time ();
  for (int a = 0; a < 3; a++)
    {
      o.algo = (tw_algo[]) { TW_ALGO_RING, TW_ALGO_TREE, TW_ALGO_HIER }[a];
      g_assert_true (tw_sim_dp_step (g, 65536, &d, t, &o, &r, &error));
      g_assert_cmpfloat (r.step_s, >, r.compute_s);
      g_test_message ("1024 ranks, %s: step %.3f ms, exposed %.3f ms", tw_algo_name (o.algo),
                      r.step_s * 1e3, r.exposed_s * 1e3);
    }
  /* (A figure, not a timed assertion: bench/ measures it.) */
  g_test_message ("three 1024-rank steps simulated in %.0f ms",
                  (g_get_monotonic_time () - t0) / 1e3);
}

/* A calibration's figures in the step: measured node times replace the
 * roofline, a per-step and per-collective cost and the cores' sharing
 * add as they say; the fast path still equals the exact one. */
static void
test_calibrated_options (void)
{
  g_autoptr (tw_graph) g = mlp (256, 2);
  g_autoptr (tw_topo) t = star (4, 10e9, 5e-6);
  tw_device_profile d;
  tw_device_profile_named ("h100", &d, NULL);
  g_autoptr (GHashTable) times = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, g_free);
  for (int i = 0; i < tw_graph_n_nodes (g); i++)
    {
      double *v = g_new (double, 2);
      v[0] = 1e-4;
      v[1] = 2e-4;
      g_hash_table_insert (times, tw_graph_node (g, i)->id, v);
    }
  tw_sim_dp_options o;
  tw_sim_dp_options_init (&o);
  o.node_times = times;
  o.update_s_per_byte = 1e-9;
  o.step_overhead_s = 5e-5;
  o.gamma = 0;
  tw_sim_dp_result one, fast, exact;
  g_autoptr (tw_topo) t1 = star (1, 1, 0);
  g_assert_true (tw_sim_dp_step (g, 64, &d, t1, &o, &one, NULL));
  double params = 0;
  g_autoptr (tw_graph) c = tw_graph_copy (g);
  tw_graph_infer_batch (c, 64);
  for (int i = 0; i < tw_graph_n_nodes (c); i++)
    for (int k = 0; k < tw_graph_node (c, i)->n_params; k++)
      params += 4.0 * tw_tinfo_numel (&tw_graph_node (c, i)->params[k].info, NULL);
  double want = 5e-5 + tw_graph_n_nodes (g) * 3e-4 + 1e-9 * params;
  g_assert_cmpfloat (fabs (one.step_s - want), <=, 1e-12);
  o.ranks = 4;
  o.collective_overhead_s = 1e-4;
  o.collective_s_per_byte = 1e-10;
  o.compute_scale = 2;
  g_assert_true (tw_sim_dp_step (g, 256, &d, t, &o, &fast, NULL));
  o.exact = TRUE;
  g_assert_true (tw_sim_dp_step (g, 256, &d, t, &o, &exact, NULL));
  g_assert_cmpfloat (fabs (fast.step_s - exact.step_s), <=, 1e-9 * exact.step_s);
  g_assert_cmpfloat (fabs (fast.compute_s - 2 * want), <=, 1e-12);
  /* The bucket's and the loss's collectives each took their extra cost. */
  double ring = 2 * 3 * (1e-5 + fast.grad_bytes / 4 / 10e9) + 2 * 3 * (1e-5 + 8 / 10e9);
  double extra = 2 * 1e-4 + 1e-10 * (fast.grad_bytes + 32);
  g_assert_cmpfloat (fabs (fast.comm_s - (ring + extra)), <=, 1e-9 * fast.comm_s);
}

/* A profile saved and loaded gives the same options; members that are
 * wrong are refused naming the file and the member. */
static void
test_profile_roundtrip (void)
{
  const char *text =
    "{\"name\": \"lab\", \"host\": \"h\", \"cores\": 4,"
    " \"roofline\": {\"matmul_gflops\": 50, \"vector_gflops\": 10, \"mem_gbytes_per_s\": 8,"
    " \"launch_us\": 3},"
    " \"link\": {\"latency_us\": 10, \"gbytes_per_s\": 5},"
    " \"collectives\": [{\"ranks\": 2, \"overhead_us\": 60, \"ns_per_byte\": 0.5},"
    " {\"ranks\": 4, \"overhead_us\": 90}],"
    " \"models\": [{\"model\": \"m\", \"batch\": 32, \"update_ns_per_byte\": 0.4,"
    " \"step_overhead_us\": 40, \"nodes\": {\"fc0\": [12.5, 20]}}]}";
  g_autofree char *a = g_build_filename (g_get_tmp_dir (), "twb-profile-a.json", NULL);
  g_autofree char *b = g_build_filename (g_get_tmp_dir (), "twb-profile-b.json", NULL);
  g_assert_true (g_file_set_contents (a, text, -1, NULL));
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_sim_profile) p = tw_sim_profile_load (a, &error);
  g_assert_no_error (error);
  g_assert_true (tw_sim_profile_save (p, b, &error));
  g_autoptr (tw_sim_profile) q = tw_sim_profile_load (b, &error);
  g_assert_no_error (error);
  g_autofree char *ta = NULL, *tb = NULL;
  g_assert_true (tw_sim_profile_save (q, a, NULL));
  g_assert_true (g_file_get_contents (a, &ta, NULL, NULL));
  g_assert_true (g_file_get_contents (b, &tb, NULL, NULL));
  g_assert_cmpstr (ta, ==, tb);
  tw_sim_dp_options o;
  tw_sim_dp_options_init (&o);
  tw_device_profile d;
  g_autoptr (tw_topo) t = NULL;
  g_assert_true (tw_sim_profile_apply (q, "m", 32, 8, &o, &d, &t, &error));
  g_assert_cmpfloat (fabs (o.collective_overhead_s - 90e-6), <, 1e-12);  /* nearest: 4 ranks */
  g_assert_cmpfloat (o.compute_scale, ==, 2);                             /* 8 ranks, 4 cores */
  g_assert_cmpfloat (fabs (o.step_overhead_s - 40e-6), <, 1e-12);
  g_assert_cmpfloat (fabs (o.update_s_per_byte - 0.4e-9), <, 1e-18);
  const double *fc0 = g_hash_table_lookup (o.node_times, "fc0");
  g_assert_nonnull (fc0);
  g_assert_cmpfloat (fabs (fc0[1] - 20e-6), <, 1e-12);
  g_assert_cmpfloat (fabs (d.matmul_flops * d.matmul_eff - 50e9), <, 1);
  g_assert_cmpint (tw_topo_n_devices (t), ==, 8);
  double lat, bw;
  tw_topo_route_cost (t, 0, 1, &lat, &bw);
  g_assert_cmpfloat (fabs (lat - 10e-6), <, 1e-12);
  g_assert_cmpfloat (fabs (bw - 5e9), <, 1);
  g_assert_false (tw_sim_profile_has_model (q, "m", 64));
  struct
  {
    const char *text, *want;
  } bad[] = {
    { "[]", "a JSON object" },
    { "{\"cores\": 0}", "\"cores\" must be a number of 1" },
    { "{\"cores\": 2, \"link\": {\"latency_us\": 1, \"gbytes_per_s\": \"fast\"}}",
      "link: \"gbytes_per_s\"" },
    { "{\"cores\": 2, \"collectives\": [{\"ranks\": 1, \"overhead_us\": 3}]}",
      "collectives: \"ranks\"" },
    { "{\"cores\": 2, \"models\": [{\"model\": \"m\", \"batch\": 4, \"update_ns_per_byte\": 1,"
      " \"step_overhead_us\": 1, \"nodes\": {\"fc\": [1]}}]}", "node fc must be" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_assert_true (g_file_set_contents (a, bad[i].text, -1, NULL));
      g_clear_error (&error);
      g_assert_null (tw_sim_profile_load (a, &error));
      if (strstr (error->message, bad[i].want) == NULL || strstr (error->message, a) == NULL)
        g_error ("%s: expected the error to name %s and the file: %s", bad[i].text, bad[i].want,
                 error->message);
    }
  g_clear_error (&error);
  /* A profile without a link cannot drive several ranks. */
  g_assert_true (g_file_set_contents (a, "{\"cores\": 2}", -1, NULL));
  g_autoptr (tw_sim_profile) nolink = tw_sim_profile_load (a, &error);
  g_assert_no_error (error);
  g_autoptr (tw_topo) t2 = NULL;
  g_assert_false (tw_sim_profile_apply (nolink, "m", 32, 2, &o, &d, &t2, &error));
  g_assert_nonnull (strstr (error->message, "no link"));
  g_unlink (a);
  g_unlink (b);
}

static void
test_bad (void)
{
  g_autoptr (tw_graph) g = mlp (64, 1);
  g_autoptr (tw_topo) t = star (4, 1e9, 1e-6);
  tw_device_profile d;
  g_autoptr (GError) error = NULL;
  g_assert_false (tw_device_profile_named ("tpu9", &d, &error));
  g_assert_nonnull (strstr (error->message, "tpu9"));
  g_clear_error (&error);
  tw_device_profile_named ("a100", &d, NULL);
  tw_sim_dp_options o;
  tw_sim_dp_options_init (&o);
  o.ranks = 8;
  tw_sim_dp_result r;
  g_assert_false (tw_sim_dp_step (g, 64, &d, t, &o, &r, &error));
  g_assert_nonnull (strstr (error->message, "8 ranks on a topology of 4 devices"));
  g_clear_error (&error);
  o.ranks = 4;
  g_assert_false (tw_sim_dp_step (g, 3, &d, t, &o, &r, &error));
  g_assert_nonnull (strstr (error->message, "cannot be split into 4"));
}

/* The spans the step records for a trace: their compute sums to
 * compute_s, their collectives to comm_s (rank 0's), one chain per rank
 * with exact and rank 0's alone otherwise; every rank's collectives in the
 * same order (seq 1, 2, ...), spans on a lane never overlapping. */
static void
check_spans (gboolean exact)
{
  g_autoptr (tw_graph) g = mlp (2048, 4);
  g_autoptr (tw_topo) t = star (4, 25e9, 5e-6);
  tw_device_profile d;
  g_assert_true (tw_device_profile_named ("h100", &d, NULL));
  tw_sim_dp_options o;
  tw_sim_dp_options_init (&o);
  o.ranks = 4;
  o.bucket_mb = 4;
  o.exact = exact;
  o.step_overhead_s = 1e-4;
  g_autoptr (GArray) spans = g_array_new (FALSE, FALSE, sizeof (tw_sim_span));
  o.spans = spans;
  tw_sim_dp_result r;
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_sim_dp_step (g, 256, &d, t, &o, &r, &error));
  g_assert_no_error (error);
  g_assert_cmpint (r.buckets, >, 1);
  for (int rank = 0; rank < (exact ? 4 : 1); rank++)
    {
      double compute = 0, comm = 0, main_end = 0, comm_end = 0;
      int seq = 0, fwd = 0, bwd = 0;
      for (guint i = 0; i < spans->len; i++)
        {
          const tw_sim_span *sp = &g_array_index (spans, tw_sim_span, i);
          g_assert_cmpint (sp->rank, <, exact ? 4 : 1);
          if (sp->rank != rank)
            continue;
          g_assert_cmpfloat (sp->dur_s, >=, 0);
          if (sp->kind == TW_EV_COLLECTIVE)
            {
              g_assert_cmpint (sp->seq, ==, ++seq);
              g_assert_cmpfloat (sp->start_s, >=, comm_end - 1e-12);
              comm_end = sp->start_s + sp->dur_s;
              comm += sp->dur_s;
              g_assert_cmpfloat (sp->bytes, >, 0);
            }
          else
            {
              g_assert_cmpfloat (sp->start_s, >=, main_end - 1e-12);
              main_end = sp->start_s + sp->dur_s;
              compute += sp->dur_s;
              fwd += sp->kind == TW_EV_FORWARD;
              bwd += sp->kind == TW_EV_BACKWARD;
            }
        }
      /* The buckets' and the loss's. */
      g_assert_cmpint (seq, ==, r.buckets + 1);
      /* Every node but the two inputs. */
      g_assert_cmpint (fwd, ==, tw_graph_n_nodes (g) - 2);
      g_assert_cmpint (bwd, ==, tw_graph_n_nodes (g) - 2);
      g_assert_cmpfloat (fabs (compute - r.compute_s), <=, 1e-9 * r.compute_s);
      g_assert_cmpfloat (fabs (comm - r.comm_s), <=, 1e-9 * r.comm_s);
      g_assert_cmpfloat (fabs (main_end - r.step_s), <=, 1e-9 * r.step_s);
    }
}

static void
test_spans (void)
{
  check_spans (FALSE);
  check_spans (TRUE);
}

static tw_sim_dp_result
run_opts (tw_graph *g, tw_topo *t, int p, const tw_sim_dp_options *extra)
{
  tw_device_profile d;
  g_assert_true (tw_device_profile_named ("h100", &d, NULL));
  tw_sim_dp_options o = *extra;
  o.ranks = p;
  o.bucket_mb = 4;
  o.gamma = 0;
  tw_sim_dp_result r;
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_sim_dp_step (g, 64 * p, &d, t, &o, &r, &error));
  g_assert_no_error (error);
  return r;
}

/* ZeRO-1: a shard of the optimizer state each; reduce-scatter and
 * all-gather move what the ring all-reduce moves in the same time (the
 * ring all-reduce is the two). */
static void
test_shard_optimizer (void)
{
  g_autoptr (tw_graph) g = mlp (2048, 4);
  g_autoptr (tw_topo) t = star (8, 25e9, 5e-6);
  tw_sim_dp_options o;
  tw_sim_dp_options_init (&o);
  tw_sim_dp_result a = run_opts (g, t, 8, &o);
  o.shard_optimizer = TRUE;
  tw_sim_dp_result z = run_opts (g, t, 8, &o);
  g_assert_cmpfloat (z.optimizer_bytes, ==, a.optimizer_bytes / 8);
  g_assert_cmpfloat (z.param_bytes, ==, a.param_bytes);
  g_assert_cmpfloat (fabs (z.comm_s - a.comm_s), <=, 1e-9 * a.comm_s);
  g_assert_cmpfloat (fabs (z.busiest_link_bytes - a.busiest_link_bytes), <=,
                     1e-9 * a.busiest_link_bytes);
  /* The exact simulation does not model it: refused, not wrong. */
  tw_device_profile d;
  g_assert_true (tw_device_profile_named ("h100", &d, NULL));
  o.ranks = 8;
  o.exact = TRUE;
  tw_sim_dp_result x;
  g_autoptr (GError) error = NULL;
  g_assert_false (tw_sim_dp_step (g, 512, &d, t, &o, &x, &error));
  g_assert_nonnull (strstr (error->message, "sharded optimizer"));
}

/* Local SGD: one all-reduce of the parameters every H steps, 1/H of it in
 * each (the loss's all-reduce aside). */
static void
test_local_sgd (void)
{
  g_autoptr (tw_graph) g = mlp (2048, 4);
  g_autoptr (tw_topo) t = star (8, 25e9, 5e-6);
  tw_sim_dp_options o;
  tw_sim_dp_options_init (&o);
  double loss = tw_sim_allreduce_time (t, TW_ALGO_RING, NULL, 8, 32, 0, NULL, NULL);
  o.local_sgd = 2;
  tw_sim_dp_result h2 = run_opts (g, t, 8, &o);
  o.local_sgd = 8;
  tw_sim_dp_result h8 = run_opts (g, t, 8, &o);
  double avg = tw_sim_allreduce_time (t, TW_ALGO_RING, NULL, 8, h2.grad_bytes, 0, NULL, NULL);
  g_assert_cmpfloat (fabs ((h2.comm_s - loss) - avg / 2), <=, 1e-9 * avg);
  g_assert_cmpfloat (fabs ((h8.comm_s - loss) - avg / 8), <=, 1e-9 * avg);
  g_assert_cmpfloat (h8.step_s, <, h2.step_s);
}

/* Compression: compress.h's payloads; an all-gather of them saves wire
 * bytes only while the ratio is below 2/p (int8, 25 %: at p = 4, not at
 * p = 16; sign, 3.1 %: at both). */
static void
test_compress (void)
{
  tw_sim_dp_options o;
  tw_sim_dp_options_init (&o);
  g_assert_true (tw_sim_compress_parse ("topk:0.01", &o, NULL));
  g_assert_cmpfloat (tw_sim_compress_payload (&o, 1000), ==, 80);
  g_assert_true (tw_sim_compress_parse ("int8", &o, NULL));
  g_assert_cmpfloat (tw_sim_compress_payload (&o, 1000), ==, 1004);
  g_assert_true (tw_sim_compress_parse ("sign", &o, NULL));
  g_assert_cmpfloat (tw_sim_compress_payload (&o, 1000), ==, 129);
  g_autoptr (GError) error = NULL;
  g_assert_false (tw_sim_compress_parse ("powersgd:4", &o, &error));
  g_assert_nonnull (strstr (error->message, "not modelled"));
  g_clear_error (&error);
  g_assert_false (tw_sim_compress_parse ("topk:2", &o, &error));
  g_clear_error (&error);

  g_autoptr (tw_graph) g = mlp (2048, 4);
  for (int p = 4; p <= 16; p *= 4)
    {
      g_autoptr (tw_topo) t = star (p, 25e9, 5e-6);
      tw_sim_dp_options_init (&o);
      tw_sim_dp_result plain = run_opts (g, t, p, &o);
      g_assert_true (tw_sim_compress_parse ("int8", &o, NULL));
      tw_sim_dp_result q = run_opts (g, t, p, &o);
      g_assert_true (tw_sim_compress_parse ("sign", &o, NULL));
      tw_sim_dp_result sg = run_opts (g, t, p, &o);
      g_test_message ("p %d: busiest link %.0f bytes dense, %.0f int8, %.0f sign", p,
                      plain.busiest_link_bytes, q.busiest_link_bytes, sg.busiest_link_bytes);
      g_assert_cmpfloat (sg.busiest_link_bytes, <, plain.busiest_link_bytes);
      if (p == 4)
        g_assert_cmpfloat (q.busiest_link_bytes, <, plain.busiest_link_bytes);
      else
        g_assert_cmpfloat (q.busiest_link_bytes, >, plain.busiest_link_bytes);
    }
}

/* A parameter server: its link carries every worker's push and pull,
 * 2 (p − 1) times the gradients a step, growing with the workers, where a
 * ring's busiest link carries under 4 times, so the server's link
 * bounds the step: at least (p − 1) gradients' time through it. */
static void
test_async_ps (void)
{
  g_autoptr (tw_graph) g = mlp (2048, 4);
  tw_device_profile d;
  g_assert_true (tw_device_profile_named ("h100", &d, NULL));
  double prev_step = 0;
  for (int p = 4; p <= 16; p *= 2)
    {
      g_autoptr (tw_topo) t = star (p, 25e9, 5e-6);
      tw_sim_dp_options o;
      tw_sim_dp_options_init (&o);
      o.ranks = p;
      o.gamma = 0;
      tw_sim_dp_result a, r;
      double busy = 0;
      g_autoptr (GError) error = NULL;
      g_assert_true (tw_sim_async_step (g, 64 * (p - 1), &d, t, &o, 6, &a, &busy, &error));
      g_assert_no_error (error);
      g_assert_true (tw_sim_dp_step (g, 64 * p, &d, t, &o, &r, &error));
      double G = a.grad_bytes;
      g_test_message ("p %d: server link %.3g bytes a step (busy %.2f), ring's busiest %.3g; "
                      "step %.3f ms", p, a.busiest_link_bytes, busy, r.busiest_link_bytes,
                      a.step_s * 1e3);
      g_assert_cmpfloat (fabs (a.busiest_link_bytes - 2 * (p - 1) * G), <=, 1e-9 * G * p);
      g_assert_cmpfloat (r.busiest_link_bytes, <, 4.01 * G);
      g_assert_cmpfloat (a.busiest_link_bytes, >, r.busiest_link_bytes);
      /* The server's link bounds a step from below: (p − 1) gradients
       * each way through 25 GB/s; the ring's all-reduces take less.
       * (Measured: 10.1, 23.5, 33.8 ms at 4, 8, 16 ranks against bounds
       * of 6.6, 15.3, 32.8: the pushes arrive in bursts, so each
       * direction of the link idles part of the time, less and less as
       * the workers grow: at 16 the link is saturated.) */
      double bound = (p - 1) * G / 25e9;
      g_assert_cmpfloat (a.step_s, >=, bound * (1 - 1e-9));
      g_assert_cmpfloat (a.step_s, >, r.comm_s);
      g_assert_cmpfloat (a.step_s, >, 1.3 * prev_step);
      if (p == 16)
        g_assert_cmpfloat (a.step_s, <, 1.1 * bound);
      prev_step = a.step_s;
    }
}

/* Ranks not alike.  The factors: the same draw for the same (seed, rank,
 * step), mean 1 and the coefficient of variation asked for (over 20,000
 * draws: within 3%), the straggler's on the last rank.  A synchronous
 * step's compute is taken at the slowest: a straggler of 3 makes a
 * free network's step 3 times longer, and jitter's expected maximum grows
 * with the ranks.  Through a parameter server, alike workers give
 * the same step with K = 4 as without a bound, and about the same with
 * K = 0 (each round waits for its last push to be applied); a lasting straggler sets the pace whatever K (in
 * the steady state the others are K steps ahead and wait), and without
 * a bound (K < 0) the fast workers run on, so the step falls well below
 * the straggler's; jitter makes a bound of 0 wait for the slowest draw
 * of every round, which K = 4 absorbs. */
static void
test_uneven_ranks (void)
{
  tw_sim_dp_options o;
  tw_sim_dp_options_init (&o);
  o.jitter = 0.3;
  o.seed = 7;
  double sum = 0, sq = 0;
  for (int k = 0; k < 20000; k++)
    {
      double f = tw_sim_rank_factor (&o, k % 16, 16, k / 16);
      g_assert_cmpfloat (f, ==, tw_sim_rank_factor (&o, k % 16, 16, k / 16));
      sum += f;
      sq += f * f;
    }
  double mean = sum / 20000, cv = sqrt (sq / 20000 - mean * mean) / mean;
  g_test_message ("jitter 0.3: mean %.4f, cv %.4f", mean, cv);
  g_assert_cmpfloat (fabs (mean - 1), <, 0.03);
  g_assert_cmpfloat (fabs (cv - 0.3), <, 0.02);
  g_assert_cmpfloat (tw_sim_slowest_factor (&o, 64), >, tw_sim_slowest_factor (&o, 4));
  g_assert_cmpfloat (tw_sim_slowest_factor (&o, 4), >, 1.1);
  tw_sim_dp_options one;
  tw_sim_dp_options_init (&one);
  g_assert_cmpfloat (tw_sim_slowest_factor (&one, 64), ==, 1);
  one.straggler = 2.5;
  g_assert_cmpfloat (tw_sim_rank_factor (&one, 3, 4, 0), ==, 2.5);
  g_assert_cmpfloat (tw_sim_rank_factor (&one, 2, 4, 0), ==, 1);

  g_autoptr (tw_graph) g = mlp (2048, 4);
  tw_device_profile d;
  g_assert_true (tw_device_profile_named ("h100", &d, NULL));
  g_autoptr (GError) error = NULL;
  {
    g_autoptr (tw_topo) t = star (8, 1e18, 0);
    tw_sim_dp_options s;
    tw_sim_dp_options_init (&s);
    s.ranks = 8;
    s.gamma = 0;
    tw_sim_dp_result a, b;
    g_assert_true (tw_sim_dp_step (g, 512, &d, t, &s, &a, &error));
    s.straggler = 3;
    g_assert_true (tw_sim_dp_step (g, 512, &d, t, &s, &b, &error));
    g_assert_no_error (error);
    g_test_message ("sync, free network: %.4f ms alike, %.4f ms with a straggler of 3",
                    a.step_s * 1e3, b.step_s * 1e3);
    g_assert_cmpfloat (fabs (b.step_s / a.step_s - 3), <, 0.01);
  }

  /* A network fast enough that compute dominates the server's step. */
  g_autoptr (tw_topo) t = star (9, 1e14, 1e-6);
  double step[3][3];   /* [alike, straggler, jitter][K = −1, 0, 4] */
  for (int c = 0; c < 3; c++)
    for (int ki = 0; ki < 3; ki++)
      {
        tw_sim_dp_options s;
        tw_sim_dp_options_init (&s);
        s.ranks = 9;
        s.gamma = 0;
        s.staleness = ki == 0 ? -1 : ki == 1 ? 0 : 4;
        s.straggler = c == 1 ? 3 : 0;
        s.jitter = c == 2 ? 0.5 : 0;
        s.seed = 3;
        s.update_s_per_byte = 1e-16;   /* the server's updates all but free */
        tw_sim_dp_result r;
        g_assert_true (tw_sim_async_step (g, 8192, &d, t, &s, 6, &r, NULL, &error));
        g_assert_no_error (error);
        step[c][ki] = r.step_s;
        g_test_message ("async, %s, K %d: step %.4f ms (compute %.4f ms)",
                        c == 0 ? "alike" : c == 1 ? "straggler 3" : "jitter 0.5", s.staleness,
                        r.step_s * 1e3, r.compute_s * 1e3);
        if (c == 0)
          g_assert_cmpfloat (r.step_s, >=, r.compute_s);
        if (c == 2 && ki == 1)
          g_test_message ("jitter 0.5: the slowest of 8 workers' factors %.3f",
                          tw_sim_slowest_factor (&s, 8));
      }
  g_assert_cmpfloat (fabs (step[0][2] / step[0][0] - 1), <, 1e-6);
  g_assert_cmpfloat (step[0][1], >=, step[0][0] * (1 - 1e-9));
  g_assert_cmpfloat (step[0][1], <, step[0][0] * 1.05);
  /* A straggler of 3 among 8 workers: bounded, a round of updates takes
   * the straggler's step; unbounded, the 7 others update at their own
   * pace (8 updates in 8/(7 + 1/3) of an alike step): well under. */
  g_assert_cmpfloat (fabs (step[1][1] / (3 * step[0][0]) - 1), <, 0.05);
  g_assert_cmpfloat (fabs (step[1][2] / (3 * step[0][0]) - 1), <, 0.05);
  g_assert_cmpfloat (step[1][0], <, 0.5 * step[1][1]);
  g_assert_cmpfloat (step[2][1], >, 1.2 * step[0][0]);
  g_assert_cmpfloat (step[2][2], <, step[2][1]);
  g_assert_cmpfloat (step[2][0], <=, step[2][2] * (1 + 1e-9));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/sim/step/one-rank", test_one_rank);
  g_test_add_func ("/sim/step/free-network", test_free_network);
  g_test_add_func ("/sim/step/one-bucket-exposed", test_one_bucket_exposed);
  g_test_add_func ("/sim/step/buckets-overlap", test_buckets_overlap);
  g_test_add_func ("/sim/step/scaling", test_scaling);
  g_test_add_func ("/sim/step/thousand-ranks", test_thousand_ranks);
  g_test_add_func ("/sim/step/calibrated-options", test_calibrated_options);
  g_test_add_func ("/sim/step/profile-roundtrip", test_profile_roundtrip);
  g_test_add_func ("/sim/step/bad", test_bad);
  g_test_add_func ("/sim/step/spans", test_spans);
  g_test_add_func ("/sim/step/shard-optimizer", test_shard_optimizer);
  g_test_add_func ("/sim/step/local-sgd", test_local_sgd);
  g_test_add_func ("/sim/step/compress", test_compress);
  g_test_add_func ("/sim/step/async-ps", test_async_ps);
  g_test_add_func ("/sim/step/uneven-ranks", test_uneven_ranks);
  return g_test_run ();
}
