/* twb-simulate-train.c — `twb simulate --mode train`: every virtual rank
 * trains for real (engine/sim/cluster.h) while the clock is the time
 * mode's prediction of the cluster's step. */
#include "app/twb-simulate-train.h"

#include "engine/sim/cluster.h"
#include "engine/device.h"
#include "engine/fileutil.h"

#include <math.h>

static double
now_s (void)
{
  return g_get_monotonic_time () / 1e6;
}

int
twb_simulate_train (const char *model_path, tw_model *m, const twb_sim_train_args *a)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_file_roles) io = twb_model_inputs (model_path, m, a->data);
  tw_file_roles_output (io, a->save_weights, "--save-weights");
  if (!twb_check_files (io))
    return 1;
  if (a->ranks > 256)
    {
      g_printerr ("twb: --mode train: %d virtual ranks; up to 256 train in one process (time "
                  "mode predicts any number)\n", a->ranks);
      return 2;
    }
  if (a->epochs > 0)
    m->recipe.epochs = a->epochs;
  if (a->batch > 0)
    m->recipe.batch_size = a->batch;
  tw_sim_cluster_options o;
  tw_sim_cluster_options_init (&o);
  o.ranks = a->ranks;
  o.comm.algo = a->algo;
  o.virtual_step_s = a->virtual_step_s;
  o.virtual_compute_s = a->virtual_compute_s;
  o.global_batch = m->recipe.batch_size;
  o.session.threads = 1;
  o.session.max_steps = a->max_steps;
  o.session.grad_norms = a->progress_json;   /* the window charts them */
  o.session.dist.bucket_mb = a->bucket_mb;
  o.session.dist.async_staleness = a->async_staleness;
  o.session.dist.local_sgd = a->local_sgd;
  o.session.dist.compress = a->compress;
  o.session.dist.shard_optimizer = a->shard_optimizer;
  /* Every rank's own CPU thread: the ranks share this machine's cores. */
  tw_set_num_threads (1);
  tw_session_source src = { .data = a->data, .want_test = TRUE };
  g_autoptr (tw_sim_cluster) c = tw_sim_cluster_new (m, &src, &o, &error);
  if (c == NULL)
    {
      twb_print_error (model_path, error);
      return 2;
    }
  double t0 = now_s ();
  if (!tw_sim_cluster_run (c, &error))
    {
      twb_print_error (model_path, error);
      return 1;
    }
  gboolean quiet = a->json || a->progress_json;
  int64_t total = 0;
  if (!quiet)
    g_print ("training %s on %d virtual ranks (each step %.3f ms of virtual time%s)\n",
             m->name ? m->name : model_path, a->ranks, a->virtual_step_s * 1e3,
             a->async_staleness >= 0 ? ", a parameter server and workers"
             : a->local_sgd > 0 ? ", local SGD" : "");
  double last_loss = NAN, test_loss = NAN, test_acc = NAN, val_acc = NAN, train_loss = NAN;
  int64_t steps = 0;
  tw_session_state state = TW_SESSION_FAILED;
  g_autofree char *message = NULL;
  for (;;)
    {
      g_autoptr (tw_snapshot) s = tw_sim_cluster_pop (c, -1);
      if (s == NULL)
        continue;
      if (s->kind == TW_SNAP_READY)
        total = s->total_steps;
      if (a->progress_json && s->kind == TW_SNAP_FINISHED && tw_session_trainer (tw_sim_cluster_session (c, 0)))
        twb_progress_json_buckets (tw_session_trainer (tw_sim_cluster_session (c, 0)), a->bucket_mb);
      if (a->progress_json)
        twb_progress_json_line (s, total);
      if (s->kind == TW_SNAP_METRICS)
        {
          last_loss = s->loss;
          steps = s->step;
        }
      else if (s->kind == TW_SNAP_EPOCH)
        {
          val_acc = s->val_accuracy;
          char acc[32] = "-";
          if (!isnan (s->val_accuracy))
            g_snprintf (acc, sizeof acc, "%.4f", s->val_accuracy);
          if (!quiet)
            g_print ("epoch %" G_GINT64_FORMAT ": loss %.4f, validation accuracy %s, virtual "
                     "time %.3f s\n", s->epoch + 1, s->train_loss, acc,
                     tw_sim_cluster_virtual_s (c));
        }
      else if (s->kind == TW_SNAP_FINISHED)
        {
          state = s->state;
          message = g_strdup (s->message);
          test_loss = s->test_loss;
          test_acc = s->test_accuracy;
          train_loss = s->train_loss;
          break;
        }
    }
  double wall = now_s () - t0;
  if (state == TW_SESSION_FAILED)
    {
      g_printerr ("twb: %s: %s\n", model_path, message ? message : "the run failed");
      return 1;
    }
  tw_session *s0 = tw_sim_cluster_session (c, 0);
  tw_trainer *tr = tw_session_trainer (s0);
  tw_dist_stats ds = { 0 };
  if (tr)
    tw_trainer_dist_stats (tr, &ds);
  if (a->save_weights && !tw_session_save_weights (s0, a->save_weights, &error))
    {
      twb_print_error (a->save_weights, error);
      return 1;
    }
  double vs = tw_sim_cluster_virtual_s (c);
  if (a->json || a->progress_json)
    {
      g_autoptr (JsonBuilder) b = json_builder_new ();
      json_builder_begin_object (b);
      if (a->progress_json)
        {
          json_builder_set_member_name (b, "event");
          json_builder_add_string_value (b, "results");
        }
      json_builder_set_member_name (b, "mode");
      json_builder_add_string_value (b, "train");
      json_builder_set_member_name (b, "ranks");
      json_builder_add_int_value (b, a->ranks);
      json_builder_set_member_name (b, "steps");
      json_builder_add_int_value (b, steps);
      twb_json_member_double (b, "final_loss", last_loss);
      twb_json_member_double (b, "train_loss", train_loss);
      twb_json_member_double (b, "val_accuracy", val_acc);
      twb_json_member_double (b, "test_loss", test_loss);
      twb_json_member_double (b, "test_accuracy", test_acc);
      twb_json_member_double (b, "virtual_step_ms", a->virtual_step_s * 1e3);
      twb_json_member_double (b, "virtual_s", vs);
      twb_json_member_double (b, "wall_s", wall);
      if (ds.async_updates > 0)
        {
          json_builder_set_member_name (b, "async_updates");
          json_builder_add_int_value (b, ds.async_updates);
          twb_json_member_double (b, "staleness_mean", ds.staleness_mean);
          json_builder_set_member_name (b, "staleness_max");
          json_builder_add_int_value (b, ds.staleness_max);
        }
      twb_json_member_double (b, "sent_bytes_per_step", ds.sent_bytes);
      json_builder_end_object (b);
      twb_print_json (b);
    }
  else
    {
      g_print ("%s after %" G_GINT64_FORMAT " steps: loss %.4f", state == TW_SESSION_STOPPED
               ? "stopped" : "done", steps, last_loss);
      if (!isnan (test_acc))
        g_print (", test accuracy %.4f", test_acc);
      g_print ("\nvirtual time %.3f s (%d ranks); it took %.1f s here\n", vs, a->ranks, wall);
      if (ds.async_updates > 0)
        g_print ("the server applied %" G_GINT64_FORMAT " gradients, staleness %.2f on average "
                 "(at most %" G_GINT64_FORMAT ")\n", ds.async_updates, ds.staleness_mean,
                 ds.staleness_max);
      if (a->save_weights)
        g_print ("weights written to %s\n", a->save_weights);
    }
  return 0;
}
