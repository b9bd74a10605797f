/* twb-simulate-pipe.c — a pipeline or hybrid configuration of twb
 * simulate (twb-simulate-pipe.h). */
#define G_LOG_DOMAIN "twb"

#include "app/twb-simulate-pipe.h"
#include "app/twb-cli.h"
#include "app/twb-simulate-trace.h"

#include <json-glib/json-glib.h>

int
twb_simulate_pipe (const twb_simulate_pipe_args *a, const twb_dist_args *dist, int ranks,
                   const tw_graph *g, int64_t global_batch, const tw_device_profile *d,
                   tw_topo *t)
{
  g_autoptr (GError) error = NULL;
  tw_pipeline_options po;
  twb_dist_pipeline_options (dist, ranks, &po);
  tw_sim_pipe_options o;
  tw_sim_pipe_options_init (&o);
  o.ranks = ranks;
  o.stages = po.stages;
  o.micro_batches = po.micro_batches;
  o.schedule = po.schedule;
  o.algo = a->algo;
  o.bucket_mb = a->bucket_mb;
  g_autoptr (GArray) spans = g_array_new (FALSE, FALSE, sizeof (tw_sim_span));
  o.spans = a->trace_out ? spans : NULL;
  tw_sim_pipe_result r;
  if (!tw_sim_pipe_step (g, global_batch, d, t, &o, &r, &error))
    {
      twb_print_error (a->model_path, error);
      return 1;
    }
  double memory = r.param_bytes + r.grad_mem_bytes + r.optimizer_bytes + r.activation_bytes;
  if (memory > d->memory_bytes)
    {
      g_autofree char *need = g_format_size ((guint64) memory);
      g_autofree char *have = g_format_size ((guint64) d->memory_bytes);
      g_autofree char *act = g_format_size ((guint64) r.activation_bytes);
      g_printerr ("twb: %s: does not fit in %d stages: the largest stage needs %s a %s "
                  "(activations of %d micro-batches %s) of its %s; raise --stages or "
                  "--micro-batches, or lower --batch\n", a->model_path, o.stages, need, d->name,
                  r.peak_in_flight, act, have);
      return 1;
    }
  if (a->trace_out)
    {
      const char *meta[] = { "model", a->model_name, "device", d->name, "topology", a->topology,
                             "schedule", tw_pipe_schedule_name (o.schedule), NULL };
      /* Replica 0's ranks, every one (its stages differ). */
      if (!twb_simulate_trace_save (a->trace_out, spans, o.stages, TRUE, meta, &error))
        {
          g_printerr ("twb: --trace: %s\n", error->message);
          return 1;
        }
    }
  int replicas = ranks / o.stages;
  if (a->json)
    {
      g_autoptr (JsonBuilder) b = json_builder_new ();
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "model");
      json_builder_add_string_value (b, a->model_name);
      json_builder_set_member_name (b, "device");
      json_builder_add_string_value (b, d->name);
      json_builder_set_member_name (b, "topology");
      json_builder_add_string_value (b, a->topology);
      json_builder_set_member_name (b, "parallel");
      json_builder_add_string_value (b, dist->parallel);
      json_builder_set_member_name (b, "ranks");
      json_builder_add_int_value (b, ranks);
      json_builder_set_member_name (b, "stages");
      json_builder_add_int_value (b, o.stages);
      json_builder_set_member_name (b, "replicas");
      json_builder_add_int_value (b, replicas);
      json_builder_set_member_name (b, "micro_batches");
      json_builder_add_int_value (b, r.micro_batches);
      json_builder_set_member_name (b, "schedule");
      json_builder_add_string_value (b, tw_pipe_schedule_name (o.schedule));
      twb_json_member_double (b, "step_ms", r.step_s * 1e3);
      twb_json_member_double (b, "samples_per_s", r.samples_per_s);
      twb_json_member_double (b, "pipeline_ms", r.pipeline_s * 1e3);
      twb_json_member_double (b, "bubble", r.bubble);
      twb_json_member_double (b, "bubble_closed_form",
                              (o.stages - 1.0) / (r.micro_batches + o.stages - 1.0));
      twb_json_member_double (b, "compute_ms", r.compute_s * 1e3);
      twb_json_member_double (b, "comm_ms", r.comm_s * 1e3);
      json_builder_set_member_name (b, "peak_micro_batches_held");
      json_builder_add_int_value (b, r.peak_in_flight);
      json_builder_set_member_name (b, "memory_per_device");
      json_builder_begin_object (b);
      twb_json_member_double (b, "parameters", r.param_bytes);
      twb_json_member_double (b, "gradients", r.grad_mem_bytes);
      twb_json_member_double (b, "optimizer", r.optimizer_bytes);
      twb_json_member_double (b, "activations", r.activation_bytes);
      twb_json_member_double (b, "total", memory);
      json_builder_end_object (b);
      json_builder_end_object (b);
      twb_print_json (b);
      return 0;
    }
  g_autofree char *cut = twb_dist_pipeline_describe (g, &po, ranks);
  g_autofree char *mem = g_format_size ((guint64) memory);
  g_autofree char *act = g_format_size ((guint64) r.activation_bytes);
  g_print ("%s on %s, %s, %s parallel: %d stages × %d replica%s, %d micro-batches, %s\n",
           a->model_name, d->name, a->topology, dist->parallel, o.stages, replicas,
           replicas == 1 ? "" : "s", r.micro_batches, tw_pipe_schedule_name (o.schedule));
  if (cut)
    g_print ("%s\n", cut);
  g_print ("step %.3f ms (%.0f samples/s), pipeline %.3f ms, bubble %.1f%% ((S−1)/(M+S−1) = "
           "%.1f%%), communication %.3f ms; memory %s a device (activations of %d "
           "micro-batches %s)\n", r.step_s * 1e3, r.samples_per_s, r.pipeline_s * 1e3,
           100 * r.bubble, 100 * (o.stages - 1.0) / (r.micro_batches + o.stages - 1.0),
           r.comm_s * 1e3, mem, r.peak_in_flight, act);
  return 0;
}
