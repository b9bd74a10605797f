/* test-sim-pipe.c — the simulator's pipeline and hybrid step
 * (engine/sim/pipe.h) against the schedules' closed forms: equal stages
 * on a free network idle (S − 1)/(M + S − 1) of the pipeline's span, for
 * GPipe and 1F1B alike, which take the same time while 1F1B holds at most
 * S micro-batches' activations and GPipe all M; a pipeline of one stage
 * has no bubble; replicas add their gradients' all-reduce; bad requests
 * are refused. */
#include "engine/sim/pipe.h"

#include <math.h>

/* L equal layers h → h (then a small head): the engine's cut by FLOPs
 * puts L / S of them in each stage. */
static tw_graph *
chain (int64_t h, int layers)
{
  tw_graph *g = tw_graph_new ();
  tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]) { h }, "data");
  tw_graph_add_input (g, "y", TW_I64, 0, NULL, "label");
  tw_attrs *a = tw_attrs_new (), *o = tw_attrs_new ();
  tw_attrs_set_int (a, "out_features", h);
  tw_attrs_set_int (o, "out_features", 10);
  const char *prev = "x";
  char id[32];
  for (int i = 0; i < layers; i++)
    {
      g_snprintf (id, sizeof id, "fc%d", i);
      tw_graph_add (g, id, "linear", a, prev, NULL);
      prev = g_intern_string (id);
    }
  tw_graph_add (g, "out", "linear", o, prev, NULL);
  tw_graph_add (g, "loss", "cross_entropy", NULL, "out", "y", NULL);
  tw_attrs_free (a);
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

static tw_sim_pipe_result
run (tw_graph *g, int64_t batch, tw_topo *t, int ranks, int S, int M, tw_pipe_schedule sch)
{
  tw_device_profile d;
  g_assert_true (tw_device_profile_named ("h100", &d, NULL));
  d.launch_s = 0;   /* the head's two extra ops would unbalance the last stage */
  tw_sim_pipe_options o;
  tw_sim_pipe_options_init (&o);
  o.ranks = ranks;
  o.stages = S;
  o.micro_batches = M;
  o.schedule = sch;
  o.gamma = 0;
  tw_sim_pipe_result r;
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_sim_pipe_step (g, batch, &d, t, &o, &r, &error));
  g_assert_no_error (error);
  return r;
}

static void
test_bubble (void)
{
  /* 4096 wide: the head (a linear to 10 classes and the loss, in the last
   * stage) takes about 1 % of that stage's time. */
  g_autoptr (tw_graph) g = chain (4096, 8);
  /* A petabyte a second, no latency: the activations' transfers vanish. */
  g_autoptr (tw_topo) t = star (8, 1e15, 0);
  const int S = 4;
  for (int M = 4; M <= 16; M *= 2)
    {
      tw_sim_pipe_result a = run (g, 4096, t, S, S, M, TW_SCHEDULE_1F1B);
      tw_sim_pipe_result b = run (g, 4096, t, S, S, M, TW_SCHEDULE_GPIPE);
      double want = (S - 1.0) / (M + S - 1.0);
      g_test_message ("M %d: bubble 1f1b %.4f gpipe %.4f, closed form %.4f; step %.6g / %.6g s, pipeline %.6g; stage flops %g..%g", M, a.bubble, b.bubble, want, a.step_s, b.step_s, a.pipeline_s, a.stage_flops_min, a.stage_flops_max);
      /* 3 %: the head's share of the last stage (the busiest). */
      g_assert_cmpfloat (fabs (a.bubble - want), <=, 0.03 * want);
      g_assert_cmpfloat (fabs (b.bubble - want), <=, 0.03 * want);
      g_assert_cmpfloat (fabs (a.step_s - b.step_s), <=, 1e-3 * b.step_s);
      /* 1F1B holds at most S micro-batches at once, GPipe all M. */
      g_assert_cmpint (a.peak_in_flight, ==, MIN (S, M));
      g_assert_cmpint (b.peak_in_flight, ==, M);
      if (M > S)
        g_assert_cmpfloat (a.activation_bytes, <, b.activation_bytes);
    }
}

static void
test_one_stage (void)
{
  g_autoptr (tw_graph) g = chain (1024, 4);
  g_autoptr (tw_topo) t = star (1, 1e15, 0);
  tw_sim_pipe_result r = run (g, 256, t, 1, 1, 4, TW_SCHEDULE_1F1B);
  g_assert_cmpfloat (fabs (r.bubble), <=, 1e-9);
}

/* Two replicas: the same pipeline plus each stage's all-reduce. */
static void
test_hybrid (void)
{
  g_autoptr (tw_graph) g = chain (2048, 8);
  g_autoptr (tw_topo) t = star (8, 25e9, 5e-6);
  tw_sim_pipe_result p = run (g, 2048, t, 4, 4, 8, TW_SCHEDULE_1F1B);
  tw_sim_pipe_result h = run (g, 4096, t, 8, 4, 8, TW_SCHEDULE_1F1B);
  g_assert_cmpfloat (fabs (h.pipeline_s - p.pipeline_s), <=, 1e-9 * p.pipeline_s);
  g_assert_cmpfloat (h.step_s, >, p.step_s);
  g_assert_cmpint (h.buckets, >=, 1);
  g_assert_cmpfloat (h.grad_bytes, >, 0);
}

static void
test_bad (void)
{
  g_autoptr (tw_graph) g = chain (64, 2);
  g_autoptr (tw_topo) t = star (8, 1e9, 0);
  tw_device_profile d;
  g_assert_true (tw_device_profile_named ("h100", &d, NULL));
  tw_sim_pipe_options o;
  tw_sim_pipe_options_init (&o);
  tw_sim_pipe_result r;
  g_autoptr (GError) error = NULL;
  o.ranks = 6;
  o.stages = 4;
  g_assert_false (tw_sim_pipe_step (g, 64, &d, t, &o, &r, &error));
  g_assert_nonnull (strstr (error->message, "multiple of the stages"));
  g_clear_error (&error);
  o.ranks = 8;
  o.stages = 8;   /* more stages than the graph's 3 nodes */
  g_assert_false (tw_sim_pipe_step (g, 64, &d, t, &o, &r, &error));
  g_assert_nonnull (error);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/sim/pipe/bubble", test_bubble);
  g_test_add_func ("/sim/pipe/one-stage", test_one_stage);
  g_test_add_func ("/sim/pipe/hybrid", test_hybrid);
  g_test_add_func ("/sim/pipe/bad", test_bad);
  return g_test_run ();
}
