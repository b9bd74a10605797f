/* test-whatif-sweep.c — the What if page's model (ui/twb-whatif-sweep.c),
 * GTK-free, no display: the ranks list, the command line it shows, and a
 * sweep figure for figure against tw_sim_dp_step called as twb simulate
 * calls it (the nodes a rank count takes, a fixed global batch, the
 * one-rank baseline of the efficiency), and the problems it names. */
#include "ui/twb-whatif-sweep.h"

#include "engine/model.h"

#include <math.h>
#include <string.h>

/* Both sides run the same code on the same inputs: equal to rounding. */
#define RTOL 1e-12

static tw_model *
load_mlp (void)
{
  g_autoptr (GError) error = NULL;
  tw_model *m = tw_model_load (TWB_ASSETS_DIR "/models/mlp.json", &error);
  g_assert_no_error (error);
  return m;
}

static void
test_ranks_and_command (void)
{
  TwbWhatifConfig c;
  twb_whatif_config_init (&c);
  g_autoptr (GError) error = NULL;
  g_assert_true (twb_whatif_parse_ranks (" 8, 64 512;1024 ", &c, &error));
  g_assert_cmpint (c.n_ranks, ==, 4);
  g_autofree char *text = twb_whatif_ranks_text (&c);
  g_assert_cmpstr (text, ==, "8,64,512,1024");
  g_assert_false (twb_whatif_parse_ranks ("8, 0", &c, &error));
  g_assert_nonnull (strstr (error->message, "\"0\""));
  g_clear_error (&error);
  g_assert_false (twb_whatif_parse_ranks (" , ", &c, &error));
  g_clear_error (&error);
  g_assert_cmpint (c.n_ranks, ==, 4);   /* a refused list leaves the last */

  g_autofree char *cmd = twb_whatif_command_line (&c, "assets/models/mlp.json");
  g_assert_cmpstr (cmd, ==, "twb simulate assets/models/mlp.json --sweep ranks=8,64,512,1024 "
                            "--topology nvlink+ib --device h100 --algo ring --bucket-mb 25");
  c.devices_per_node = 4;
  c.batch = 4096;
  c.bucket_mb = 2.5;
  c.algo = TW_ALGO_HIER;
  g_strlcpy (c.topology, "pcie+eth", sizeof c.topology);
  g_autofree char *cmd2 = twb_whatif_command_line (&c, "my models/a.json");
  g_assert_cmpstr (cmd2, ==, "twb simulate 'my models/a.json' --sweep ranks=8,64,512,1024 "
                             "--topology pcie+eth --devices-per-node 4 --device h100 --algo hier "
                             "--bucket-mb 2.5 --batch 4096");
  g_strlcpy (c.device, "local", sizeof c.device);
  g_autofree char *cmd3 = twb_whatif_command_line (&c, NULL);
  g_assert_null (strstr (cmd3, "--topology"));
  g_assert_true (g_str_has_prefix (cmd3, "twb simulate MODEL.json "));
}

static void
test_sweep_matches_step (void)
{
  g_autoptr (tw_model) m = load_mlp ();
  TwbWhatifConfig c;
  twb_whatif_config_init (&c);
  g_autoptr (GError) error = NULL;
  g_assert_true (twb_whatif_parse_ranks ("4, 16", &c, &error));
  c.devices_per_node = 4;
  c.batch = 1024;
  c.algo = TW_ALGO_TREE;
  g_strlcpy (c.topology, "nvlink+roce", sizeof c.topology);
  g_strlcpy (c.device, "a100", sizeof c.device);
  g_autoptr (TwbWhatifResult) r = twb_whatif_run (m->graph, m->name, m->recipe.batch_size, &c);
  g_assert_null (r->error);
  g_assert_cmpuint (r->rows->len, ==, 2);
  tw_device_profile d;
  g_assert_true (tw_device_profile_named ("a100", &d, &error));
  const int ranks[] = { 4, 16 };
  for (guint i = 0; i < 2; i++)
    {
      const TwbWhatifRow *row = &g_array_index (r->rows, TwbWhatifRow, i);
      g_autoptr (tw_topo) t = tw_topo_cluster (ranks[i] / 4, 4, "nvlink+roce", &error);
      g_assert_no_error (error);
      tw_sim_dp_options o;
      tw_sim_dp_options_init (&o);
      o.ranks = ranks[i];
      o.algo = TW_ALGO_TREE;
      o.bucket_mb = 25;
      tw_sim_dp_result want;
      g_assert_true (tw_sim_dp_step (m->graph, 1024, &d, t, &o, &want, &error));
      g_assert_cmpint (row->ranks, ==, ranks[i]);
      g_assert_cmpint (row->batch, ==, 1024);
      g_assert_cmpfloat (fabs (row->r.step_s - want.step_s), <=, RTOL * want.step_s);
      g_assert_cmpfloat (fabs (row->r.exposed_s - want.exposed_s), <=, RTOL * want.step_s);
      /* The baseline: one rank with this configuration's shard (a fixed
       * global batch: 1024 / ranks rows). */
      g_autoptr (tw_topo) one = tw_topo_cluster (1, 1, "nvlink+ib", NULL);
      tw_sim_dp_options o1 = o;
      o1.ranks = 1;
      o1.compute_scale = 1;
      tw_sim_dp_result base;
      g_assert_true (tw_sim_dp_step (m->graph, 1024 / ranks[i], &d, one, &o1, &base, &error));
      double eff = want.samples_per_s / ranks[i] / base.samples_per_s;
      g_assert_cmpfloat (fabs (row->efficiency - eff), <=, RTOL * eff);
      g_assert_cmpfloat (fabs (row->comm_share - want.comm_s / want.step_s), <=, RTOL);
      g_assert_nonnull (row->link);
    }
}

static void
test_problems (void)
{
  g_autoptr (tw_model) m = load_mlp ();
  TwbWhatifConfig c;
  twb_whatif_config_init (&c);
  g_autoptr (GError) error = NULL;
  /* Fewer ranks than the default node: one node of them; 12 are not
   * whole nodes of 8, and the sweep stops there, keeping what came before. */
  g_assert_true (twb_whatif_parse_ranks ("2, 12, 16", &c, &error));
  g_autoptr (TwbWhatifResult) r = twb_whatif_run (m->graph, m->name, m->recipe.batch_size, &c);
  g_assert_cmpuint (r->rows->len, ==, 1);
  g_assert_nonnull (strstr (r->error, "12 ranks are not whole nodes of 8 devices"));
  /* With devices per node named, 2 ranks are not a node of 4 either (as
   * `twb simulate --devices-per-node 4 --ranks 2` refuses). */
  c.devices_per_node = 4;
  g_assert_true (twb_whatif_parse_ranks ("2", &c, &error));
  g_autoptr (TwbWhatifResult) r2 = twb_whatif_run (m->graph, m->name, 64, &c);
  g_assert_cmpuint (r2->rows->len, ==, 0);
  g_assert_nonnull (r2->error);
  /* A device that is not one. */
  twb_whatif_config_init (&c);
  g_strlcpy (c.device, "z80", sizeof c.device);
  g_autoptr (TwbWhatifResult) r3 = twb_whatif_run (m->graph, m->name, 64, &c);
  g_assert_nonnull (strstr (r3->error, "z80"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/ui/whatif-sweep/ranks-and-command", test_ranks_and_command);
  g_test_add_func ("/ui/whatif-sweep/matches-step", test_sweep_matches_step);
  g_test_add_func ("/ui/whatif-sweep/problems", test_problems);
  return g_test_run ();
}
