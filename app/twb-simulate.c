/* twb-simulate.c — `twb simulate MODEL.json`: what data-parallel training
 * would take on a cluster this machine is not, from the simulator's time
 * mode (engine/sim/step.h): step time, throughput, scaling efficiency,
 * communication and its exposed part, the busiest link, memory per device;
 * one configuration or a sweep of rank counts. */
#define G_LOG_DOMAIN "twb"

#include "app/twb-cli.h"
#include "app/twb-dist.h"
#include "app/twb-simulate-train.h"
#include "engine/comm/compress.h"
#include "app/twb-simulate-pipe.h"
#include "app/twb-simulate-trace.h"
#include "engine/fileutil.h"
#include "engine/data-fit.h"
#include "engine/sim/calibrate.h"
#include "engine/sim/step.h"
#include "profiler/device-trace.h"
#include "chakra/et.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

typedef struct
{
  int ranks;
  tw_sim_dp_result r;
  double efficiency;
  double memory;              /* per device */
  gboolean fits;
  char *link;                 /* the busiest link's name, or NULL */
  double measured_ms;         /* --check: the real runs' median step, or NaN */
  double measured_lo, measured_hi;  /* the lowest and highest of the runs' medians */
} sim_row;

#define CHECK_RUNS 3

/* Ranks into nodes: --nodes × --devices-per-node, or ranks / devices per
 * node (one partial node when fewer ranks than a node holds). */
static gboolean
shape_for (int ranks, int nodes_opt, int per_opt, int *nodes, int *per, GError **error)
{
  int per_node = per_opt > 0 ? per_opt : 8;
  if (nodes_opt > 0)
    {
      if (ranks > 0 && ranks != nodes_opt * per_node)
        {
          g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                       "--ranks %d is not --nodes %d × --devices-per-node %d (%d)", ranks,
                       nodes_opt, per_node, nodes_opt * per_node);
          return FALSE;
        }
      *nodes = nodes_opt;
      *per = per_node;
      return TRUE;
    }
  if (ranks <= per_node && per_opt <= 0)
    {
      *nodes = 1;
      *per = ranks;
      return TRUE;
    }
  if (ranks % per_node != 0)
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                   "--ranks %d is not a multiple of --devices-per-node %d (whole nodes: %d or %d "
                   "ranks)", ranks, per_node, ranks / per_node * per_node,
                   (ranks / per_node + 1) * per_node);
      return FALSE;
    }
  *nodes = ranks / per_node;
  *per = per_node;
  return TRUE;
}

static void
row_json (JsonBuilder *b, const sim_row *w)
{
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "ranks");
  json_builder_add_int_value (b, w->ranks);
  twb_json_member_double (b, "step_ms", w->r.step_s * 1e3);
  twb_json_member_double (b, "samples_per_s", w->r.samples_per_s);
  twb_json_member_double (b, "scaling_efficiency", w->efficiency);
  twb_json_member_double (b, "compute_ms", w->r.compute_s * 1e3);
  twb_json_member_double (b, "comm_ms", w->r.comm_s * 1e3);
  twb_json_member_double (b, "comm_share", w->r.step_s > 0 ? w->r.comm_s / w->r.step_s : 0);
  twb_json_member_double (b, "exposed_comm_ms", w->r.exposed_s * 1e3);
  json_builder_set_member_name (b, "buckets");
  json_builder_add_int_value (b, w->r.buckets);
  twb_json_member_double (b, "grad_bytes_per_rank", w->r.grad_bytes);
  json_builder_set_member_name (b, "busiest_link");
  if (w->link)
    json_builder_add_string_value (b, w->link);
  else
    json_builder_add_null_value (b);
  twb_json_member_double (b, "busiest_link_bytes", w->r.busiest_link_bytes);
  if (!isnan (w->measured_ms))
    {
      twb_json_member_double (b, "measured_step_ms", w->measured_ms);
      json_builder_set_member_name (b, "measured_runs");
      json_builder_add_int_value (b, CHECK_RUNS);
      twb_json_member_double (b, "measured_lowest_ms", w->measured_lo);
      twb_json_member_double (b, "measured_highest_ms", w->measured_hi);
      twb_json_member_double (b, "error", w->r.step_s * 1e3 / w->measured_ms - 1);
    }
  json_builder_set_member_name (b, "memory_per_device");
  json_builder_begin_object (b);
  twb_json_member_double (b, "parameters", w->r.param_bytes);
  twb_json_member_double (b, "gradients", w->r.grad_mem_bytes);
  twb_json_member_double (b, "optimizer", w->r.optimizer_bytes);
  twb_json_member_double (b, "activations", w->r.activation_bytes);
  twb_json_member_double (b, "total", w->memory);
  json_builder_end_object (b);
  json_builder_end_object (b);
}

static gboolean
parse_ranks_list (const char *spec, GArray *out, GError **error)
{
  const char *v = g_str_has_prefix (spec, "ranks=") ? spec + 6 : NULL;
  if (v == NULL || !*v)
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                   "--sweep %s: expected ranks=N,N,... (e.g. ranks=8,64,512)", spec);
      return FALSE;
    }
  g_auto (GStrv) parts = g_strsplit (v, ",", -1);
  for (char **p = parts; *p; p++)
    {
      gint64 n = 0;
      g_autoptr (GError) e = NULL;
      if (!g_ascii_string_to_signed (g_strstrip (*p), 10, 1, 1 << 20, &n, &e))
        {
          g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                       "--sweep: \"%s\" is not a rank count from 1 to 1048576", *p);
          return FALSE;
        }
      int r = (int) n;
      g_array_append_val (out, r);
    }
  return TRUE;
}

/* Inside mpirun (--calibrate-links FILE): every rank measures the links,
 * then the model's steps taken by all at once against the step alone
 * that the profile FILE holds; rank 0 writes the profile back. */
static int
calibrate_links_rank (const char *model_path, const char *file)
{
  twb_dist_args dist;
  twb_dist_args_init (&dist);
  tw_comm *comm = twb_dist_start (&dist);
  if (comm == NULL)
    return 1;
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_sim_profile) p = tw_sim_profile_load (file, &error);
  g_autoptr (tw_model) m = p ? tw_model_load (model_path, &error) : NULL;
  g_autoptr (tw_dataset) train
    = m ? tw_dataset_open_for_model (m, NULL, TW_SPLIT_TRAIN, &error) : NULL;
  gboolean ok = train && tw_sim_calibrate_links (p, comm, &error)
                && tw_sim_calibrate_contention (p, m, train, 40, comm, &error);
  if (ok && tw_comm_rank (comm) == 0)
    ok = tw_sim_profile_save (p, file, &error);
  if (!ok)
    twb_print_error (model_path, error);
  int status = ok ? 0 : 1;
  twb_dist_finish (comm, status);
  return status;
}

/* The path of this program, to start it again (mpirun, twb train). */
static char *
self_path (const char *argv0)
{
  g_autofree char *exe = g_file_read_link ("/proc/self/exe", NULL);
  return exe ? g_steal_pointer (&exe) : g_strdup (argv0);
}

/* --calibrate: the model's nodes measured at the batch a rank takes, then
 * the links at 2 and 4 ranks (mpirun on ourselves), into the "local"
 * profile. */
static int
calibrate (const char *model_path, tw_model *m, int64_t rank_batch, const char *argv0)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *path = tw_sim_profile_path ("local");
  g_autoptr (tw_sim_profile) p = g_file_test (path, G_FILE_TEST_EXISTS)
                                   ? tw_sim_profile_load (path, NULL) : NULL;
  if (p == NULL)
    p = tw_sim_profile_new ("local");
  g_autoptr (tw_dataset) train = tw_dataset_open_for_model (m, NULL, TW_SPLIT_TRAIN, &error);
  if (train == NULL)
    {
      twb_print_error (model_path, error);
      return 1;
    }
  g_printerr ("measuring %s's nodes at %" G_GINT64_FORMAT " rows…\n",
              m->name ? m->name : model_path, rank_batch);
  if (!tw_sim_calibrate_compute (p, m, train, rank_batch, 20, &error))
    {
      twb_print_error (model_path, error);
      return 1;
    }
  g_autofree char *self = self_path (argv0);
  for (int ranks = 2; ranks <= 4; ranks += 2)
    {
      g_autofree char *tmp = NULL;
      int fd = g_file_open_tmp ("twb-links-XXXXXX.json", &tmp, &error);
      if (fd < 0)
        {
          twb_print_error (NULL, error);
          return 1;
        }
      close (fd);
      if (!tw_sim_profile_save (p, tmp, &error))
        {
          twb_print_error (NULL, error);
          g_unlink (tmp);
          return 1;
        }
      g_printerr ("measuring the links between %d ranks, and %d ranks stepping in lockstep…\n",
                  ranks, ranks);
      twb_dist_args dist;
      twb_dist_args_init (&dist);
      dist.ranks = ranks;
      dist.ranks_set = TRUE;
      char *cmd[] = { (char *) "simulate", (char *) model_path, (char *) "--calibrate-links", tmp,
                      NULL };
      int status = twb_dist_launch (&dist, cmd);
      twb_dist_args_clear (&dist);
      g_autoptr (tw_sim_profile) l = status == 0 ? tw_sim_profile_load (tmp, &error) : NULL;
      g_unlink (tmp);
      if (l == NULL)
        {
          if (error)
            twb_print_error (NULL, error);
          g_printerr ("twb: the links could not be measured at %d ranks\n", ranks);
          return 1;
        }
      tw_sim_profile_merge_links (p, l, ranks == 2);
    }
  if (!tw_sim_profile_save (p, path, &error))
    {
      twb_print_error (NULL, error);
      return 1;
    }
  double lat = 0, bw = 0;
  tw_sim_profile_link (p, &lat, &bw);
  const char *name = m->name ? m->name : "model";
  g_print ("profile local written to %s: %d cores, a message %.1f us + %.2f GB/s; each "
           "collective %.0f us at 2 ranks, %.0f us at 4; in lockstep a rank computes %.2fx slower "
           "and waits %.0f us a step at 2 ranks, %.2fx and %.0f us at 4\n",
           path, tw_sim_profile_cores (p), lat * 1e6, bw / 1e9,
           tw_sim_profile_collective_overhead (p, 2) * 1e6,
           tw_sim_profile_collective_overhead (p, 4) * 1e6, tw_sim_profile_compute_scale (p, name, rank_batch, 2),
           tw_sim_profile_lockstep (p, name, rank_batch, 2) * 1e6,
           tw_sim_profile_compute_scale (p, name, rank_batch, 4),
           tw_sim_profile_lockstep (p, name, rank_batch, 4) * 1e6);
  return 0;
}

/* --check: the same run for real (twb train --ranks N), its median step. */
static double
measure_once (const char *argv0, const char *model_path, int ranks, int64_t batch,
         const tw_sim_dp_options *o, GError **error)
{
  g_autofree char *self = self_path (argv0);
  g_autofree char *r = g_strdup_printf ("%d", ranks);
  g_autofree char *b = g_strdup_printf ("%" G_GINT64_FORMAT, batch);
  g_autofree char *mb = g_strdup_printf ("%g", o->bucket_mb);
  const char *args[] = { self, "train", model_path, "--max-steps", "40", "--no-eval", "--json",
                         "--batch", b, "--bucket-mb", mb, "--algo",
                         o->algo == TW_ALGO_RING ? "mpi" : tw_algo_name (o->algo),
                         ranks > 1 ? "--ranks" : NULL, r, NULL };
  g_autofree char *out = NULL, *err = NULL;
  int wait = 0;
  if (!g_spawn_sync (NULL, (char **) args, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &wait,
                     error))
    return NAN;
  if (!g_spawn_check_wait_status (wait, NULL))
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG, "the real run failed: %s",
                   err ? g_strstrip (err) : "");
      return NAN;
    }
  g_autoptr (JsonParser) jp = json_parser_new ();
  if (!json_parser_load_from_data (jp, out, -1, error))
    return NAN;
  JsonNode *root = json_parser_get_root (jp);
  JsonObject *obj = root && JSON_NODE_HOLDS_OBJECT (root) ? json_node_get_object (root) : NULL;
  if (obj == NULL || !json_object_has_member (obj, "median_step_ms"))
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG, "the real run printed no median step");
      return NAN;
    }
  return json_object_get_double_member (obj, "median_step_ms");
}

/* --check: CHECK_RUNS real runs (a shared machine's runs differ from one
 * to the next by tens of percent): the median of their medians, and the
 * lowest and highest. */
static double
measure (const char *argv0, const char *model_path, int ranks, int64_t batch,
         const tw_sim_dp_options *o, double *lo, double *hi, GError **error)
{
  double v[CHECK_RUNS];
  for (int i = 0; i < CHECK_RUNS; i++)
    if (isnan (v[i] = measure_once (argv0, model_path, ranks, batch, o, error)))
      return NAN;
  for (int i = 1; i < CHECK_RUNS; i++)
    for (int j = i; j > 0 && v[j] < v[j - 1]; j--)
      {
        double t = v[j];
        v[j] = v[j - 1];
        v[j - 1] = t;
      }
  *lo = v[0];
  *hi = v[CHECK_RUNS - 1];
  return v[CHECK_RUNS / 2];
}

int
twb_cmd_simulate (int argc, char **argv)
{
  char *ranks_s = NULL, *nodes_s = NULL, *per_s = NULL, *topology = NULL, *device = NULL;
  char *algo_s = NULL, *bucket_s = NULL, *batch_s = NULL, *sweep = NULL;
  gboolean json = FALSE, exact = FALSE, do_calibrate = FALSE, check = FALSE;
  char *links_out = NULL;
  char *mode_s = NULL, *epochs_s = NULL, *max_steps_s = NULL, *data = NULL, *save_weights = NULL;
  gboolean progress_json = FALSE;
  char *chakra_in = NULL, *chakra_out = NULL;
  char *trace_out = NULL;
  char *parallel = NULL, *stages_s = NULL, *micro_s = NULL, *schedule = NULL;
  char *local_sgd_s = NULL, *compress = NULL, *async_s = NULL;
  char *straggler_s = NULL, *jitter_s = NULL, *seed_s = NULL;
  gboolean shard_opt = FALSE;
  GOptionEntry entries[] = {
    { "ranks", 0, 0, G_OPTION_ARG_STRING, &ranks_s,
      "Data-parallel ranks (default: every device of the topology, or one node)", "N" },
    { "nodes", 0, 0, G_OPTION_ARG_STRING, &nodes_s, "Nodes of the cluster", "A" },
    { "devices-per-node", 0, 0, G_OPTION_ARG_STRING, &per_s, "Devices in each node (default 8)",
      "B" },
    { "topology", 0, 0, G_OPTION_ARG_FILENAME, &topology,
      "nvlink+ib (default), nvlink+roce, pcie+eth, shm+eth, or a topology FILE.json",
      "NAME|FILE" },
    { "device", 0, 0, G_OPTION_ARG_STRING, &device,
      "Device profile: h100 (default), h200, a100, mi300x, or local (this machine, from "
      "--calibrate) or a profile FILE.json, or a trace of the model (twb profile's or PyTorch "
      "profiler's) whose op times stand for each rank's", "NAME" },
    { "algo", 0, 0, G_OPTION_ARG_STRING, &algo_s,
      "All-reduce algorithm: ring (default; mpi is taken as ring), tree, ps or hier", "NAME" },
    { "bucket-mb", 0, 0, G_OPTION_ARG_STRING, &bucket_s, "Gradient bucket size in MB (default 25)",
      "MB" },
    { "batch", 'b', 0, G_OPTION_ARG_STRING, &batch_s,
      "Global batch, split among the ranks (default: the recipe's × the ranks)", "N" },
    { "sweep", 0, 0, G_OPTION_ARG_STRING, &sweep,
      "Simulate each rank count: ranks=8,64,512,1024 (nodes of --devices-per-node)", "SPEC" },
    { "exact", 0, 0, G_OPTION_ARG_NONE, &exact,
      "Simulate every rank's every message (slow; the default gives the same figures for "
      "identical ranks)", NULL },
    { "calibrate", 0, 0, G_OPTION_ARG_NONE, &do_calibrate,
      "Measure this machine for --device local: the model's ops at the batch a rank takes, and "
      "the MPI links at 2 and 4 ranks", NULL },
    { "check", 0, 0, G_OPTION_ARG_NONE, &check,
      "Run the same training for real here (twb train --ranks N) and print the prediction's "
      "error", NULL },
    { "mode", 0, 0, G_OPTION_ARG_STRING, &mode_s,
      "time (default): predict the step; train: every virtual rank trains for real, on "
      "virtual time", "time|train" },
    { "epochs", 'e', 0, G_OPTION_ARG_STRING, &epochs_s, "Train mode: epochs (default: recipe)",
      "N" },
    { "max-steps", 0, 0, G_OPTION_ARG_STRING, &max_steps_s, "Train mode: stop after N steps",
      "N" },
    { "data", 0, 0, G_OPTION_ARG_STRING, &data,
      "Train mode: the dataset (as twb train --data; default: the recipe's)", "SPEC" },
    { "save-weights", 0, 0, G_OPTION_ARG_FILENAME, &save_weights,
      "Train mode: write rank 0's final weights (safetensors)", "FILE" },
    { "progress-json", 0, 0, G_OPTION_ARG_NONE, &progress_json,
      "Train mode: one JSON object per line as training goes (as twb train --progress-json)",
      NULL },
    { "chakra-out", 0, 0, G_OPTION_ARG_FILENAME, &chakra_out,
      "Write the simulated step as MLCommons Chakra execution traces, PREFIX.R.et for each "
      "rank R (the workload format ASTRA-sim reads)", "PREFIX" },
    { "chakra", 0, 0, G_OPTION_ARG_FILENAME, &chakra_in,
      "Simulate a Chakra execution trace (one rank's, FILE.et) instead of a model", "FILE.et" },
    { "trace", 0, 0, G_OPTION_ARG_FILENAME, &trace_out,
      "Write the simulated step as a Chrome trace the profiler opens (a few ranks; with "
      "--exact every rank)", "OUT.json" },
    { "parallel", 0, 0, G_OPTION_ARG_STRING, &parallel,
      "data (default), pipeline (one stage a rank) or hybrid (replicas of --stages stages)",
      "KIND" },
    { "stages", 0, 0, G_OPTION_ARG_STRING, &stages_s,
      "Pipeline stages (pipeline: the ranks; hybrid: default 2)", "S" },
    { "micro-batches", 0, 0, G_OPTION_ARG_STRING, &micro_s,
      "Micro-batches a replica's shard is cut into (default 4)", "M" },
    { "schedule", 0, 0, G_OPTION_ARG_STRING, &schedule,
      "Pipeline schedule: 1f1b (default) or gpipe", "NAME" },
    { "local-sgd", 0, 0, G_OPTION_ARG_STRING, &local_sgd_s,
      "Local SGD: no gradient all-reduce, the weights averaged every H steps (time mode: its "
      "time amortised over them; train mode: trained so)", "H" },
    { "compress", 0, 0, G_OPTION_ARG_STRING, &compress,
      "Gradient compression: topk:F, int8 or sign (each bucket's payload all-gathered); train "
      "mode also powersgd:R, with error feedback", "SPEC" },
    { "async", 0, 0, G_OPTION_ARG_STRING, &async_s,
      "Asynchronous updates through a parameter server (the last rank), workers at most K "
      "steps apart (in train mode too)", "K" },
    { "shard-optimizer", 0, 0, G_OPTION_ARG_NONE, &shard_opt,
      "ZeRO-1: a rank's optimizer state is its 1/N (reduce-scatter, update, all-gather; in "
      "train mode too)", NULL },
    { "straggler", 0, 0, G_OPTION_ARG_STRING, &straggler_s,
      "The last rank (the last worker with --async) computes F times slower (time mode)",
      "F" },
    { "jitter", 0, 0, G_OPTION_ARG_STRING, &jitter_s,
      "Each rank's each step computes a random factor slower or faster: log-normal, mean 1, "
      "coefficient of variation CV (time mode)", "CV" },
    { "seed", 0, 0, G_OPTION_ARG_STRING, &seed_s, "Seed of --jitter's draws (default 0)", "N" },
    { "calibrate-links", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &links_out, NULL, NULL },
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print one JSON object", NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new (
    "MODEL.json — predict a training step on a simulated cluster, or train on one "
    "(--mode train)");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  int status = 2;
  g_autoptr (tw_model) m = NULL;
  g_autoptr (tw_topo) file_topo = NULL;
  g_autoptr (tw_sim_profile) local = NULL;
  g_autoptr (GArray) sweep_ranks = g_array_new (FALSE, FALSE, sizeof (int));
  g_autoptr (GArray) rows = g_array_new (FALSE, TRUE, sizeof (sim_row));
  g_autoptr (GArray) spans = g_array_new (FALSE, FALSE, sizeof (tw_sim_span));
  tw_device_profile dev;
  tw_sim_dp_options o;
  tw_sim_dp_options_init (&o);
  tw_device_trace dtrace = { 0 };
  g_autoptr (GString) chakra_json = g_string_new (NULL);
  gboolean have_dtrace = FALSE;
  twb_dist_args pipe;
  twb_dist_args_init (&pipe);

  if (!g_option_context_parse (ctx, &argc, &argv, &error) || argc != (chakra_in ? 1 : 2))
    {
      g_printerr ("usage: twb simulate MODEL.json [--ranks N] [--topology NAME|FILE] "
                  "[--device NAME] [--sweep ranks=...], or twb simulate --chakra FILE.et "
                  "[--ranks N] ...   (twb simulate --help)\n");
      if (error)
        g_printerr ("twb: %s\n", error->message);
      goto out;
    }
  if (links_out)
    {
      status = calibrate_links_rank (argv[1], links_out);
      goto out;
    }
  if (chakra_in && (chakra_out || mode_s || do_calibrate || check || exact || device))
    {
      g_printerr ("twb: --chakra simulates a trace's own step: without --chakra-out, --mode, "
                  "--calibrate, --check, --exact or --device\n");
      goto out;
    }
  if (chakra_out && (sweep || exact || (mode_s && strcmp (mode_s, "train") == 0)))
    {
      g_printerr ("twb: --chakra-out writes one configuration's step: without --sweep, --exact "
                  "or --mode train\n");
      goto out;
    }
  gint64 ranks = 0, nodes = 0, per = 0, batch = 0;
  double mb = 25;
  if ((ranks_s && !g_ascii_string_to_signed (ranks_s, 10, 1, 1 << 20, &ranks, NULL))
      || (nodes_s && !g_ascii_string_to_signed (nodes_s, 10, 1, 1 << 20, &nodes, NULL))
      || (per_s && !g_ascii_string_to_signed (per_s, 10, 1, 1 << 16, &per, NULL))
      || (batch_s && !g_ascii_string_to_signed (batch_s, 10, 1, G_GINT64_CONSTANT (1) << 40,
                                                &batch, NULL)))
    {
      g_printerr ("twb: %s: a whole number above 0 is needed\n",
                  ranks_s && !g_ascii_string_to_signed (ranks_s, 10, 1, 1 << 20, NULL, NULL)
                    ? "--ranks"
                  : nodes_s && !g_ascii_string_to_signed (nodes_s, 10, 1, 1 << 20, NULL, NULL)
                    ? "--nodes"
                  : per_s && !g_ascii_string_to_signed (per_s, 10, 1, 1 << 16, NULL, NULL)
                    ? "--devices-per-node"
                    : "--batch");
      goto out;
    }
  tw_real_range mbr = { 0, 65536, TRUE, FALSE };
  if (bucket_s && !tw_number_parse_real (bucket_s, &mbr, "--bucket-mb", &mb, &error))
    {
      g_printerr ("twb: %s\n", error->message);
      goto out;
    }
  o.bucket_mb = mb;
  o.exact = exact;
  gboolean train_mode = FALSE;
  gint64 epochs = 0, max_steps = 0;
  if (mode_s && strcmp (mode_s, "train") == 0)
    train_mode = TRUE;
  else if (mode_s && strcmp (mode_s, "time") != 0)
    {
      g_printerr ("twb: --mode %s: time or train\n", mode_s);
      goto out;
    }
  if ((epochs_s && !g_ascii_string_to_signed (epochs_s, 10, 1, G_MAXINT32, &epochs, NULL))
      || (max_steps_s && !g_ascii_string_to_signed (max_steps_s, 10, 1, G_MAXINT64, &max_steps,
                                                    NULL)))
    {
      g_printerr ("twb: %s: a whole number above 0 is needed\n",
                  epochs_s && !g_ascii_string_to_signed (epochs_s, 10, 1, G_MAXINT32, NULL, NULL)
                    ? "--epochs" : "--max-steps");
      goto out;
    }
  if (!train_mode && (epochs_s || max_steps_s || data || save_weights || progress_json))
    {
      g_printerr ("twb: --epochs, --max-steps, --data, --save-weights and --progress-json go "
                  "with --mode train\n");
      goto out;
    }
  if (train_mode && (sweep || do_calibrate || check || exact || parallel))
    {
      g_printerr ("twb: --mode train runs one data-parallel configuration: without --sweep, "
                  "--calibrate, --check, --exact or --parallel\n");
      goto out;
    }
  if (train_mode && compress && strcmp (compress, "none") != 0)
    {
      /* Train mode runs the engine's compressors: PowerSGD too. */
      tw_compressor *z = tw_compressor_new (compress, &error);
      if (z == NULL)
        {
          g_printerr ("twb: --compress: %s\n", error->message);
          goto out;
        }
      tw_compressor_free (z);
    }
  if (algo_s && !tw_algo_from_name (algo_s, &o.algo, &error))
    {
      g_printerr ("twb: --algo: %s\n", error->message);
      goto out;
    }
  gboolean device_trace = device && g_file_test (device, G_FILE_TEST_IS_REGULAR)
                          && tw_device_trace_sniff (device);
  if (device_trace)
    {
      /* Ops the trace has no time for take the H100's roofline (said below). */
      tw_device_profile_named ("h100", &dev, NULL);
      if (do_calibrate)
        {
          g_printerr ("twb: --calibrate measures this machine into the \"local\" profile, not "
                      "a trace\n");
          goto out;
        }
    }
  else if (device && (g_strcmp0 (device, "local") == 0 || g_str_has_suffix (device, ".json")))
    {
      if (!do_calibrate)
        {
          local = tw_sim_profile_load (device, &error);
          if (local == NULL)
            {
              g_printerr ("twb: --device: %s\n", error->message);
              status = 1;
              goto out;
            }
        }
    }
  else if (!tw_device_profile_named (device ? device : "h100", &dev, &error))
    {
      g_printerr ("twb: --device: %s\n", error->message);
      goto out;
    }
  if (do_calibrate && device && g_strcmp0 (device, "local") != 0)
    {
      g_printerr ("twb: --calibrate measures this machine into the \"local\" profile "
                  "(--device local, or no --device)\n");
      goto out;
    }
  if (sweep && !parse_ranks_list (sweep, sweep_ranks, &error))
    {
      g_printerr ("twb: %s\n", error->message);
      goto out;
    }
  if (sweep && ranks_s)
    {
      g_printerr ("twb: --sweep and --ranks exclude each other (the sweep gives the ranks)\n");
      goto out;
    }
  /* Pipeline and hybrid: the options checked as twb train checks them. */
  gint64 stages = 0, micro = 0;
  if ((stages_s && !g_ascii_string_to_signed (stages_s, 10, 1, 65536, &stages, NULL))
      || (micro_s && !g_ascii_string_to_signed (micro_s, 10, 1, 1 << 30, &micro, NULL)))
    {
      g_printerr ("twb: %s: a whole number above 0 is needed\n",
                  stages_s && !stages ? "--stages" : "--micro-batches");
      goto out;
    }
  pipe.parallel = g_strdup (parallel);
  pipe.stages = (int) stages;
  pipe.micro_batches = (int) micro;
  pipe.schedule = g_strdup (schedule);
  pipe.bucket_mb = mb;
  pipe.ranks = ranks ? (int) ranks
               : g_strcmp0 (parallel, "pipeline") == 0 && stages ? (int) stages : 0;
  pipe.ranks_set = pipe.ranks > 0;
  /* The update strategies, refused in the combinations twb train refuses. */
  gint64 local_sgd = 0;
  if (local_sgd_s && !g_ascii_string_to_signed (local_sgd_s, 10, 1, G_MAXINT32, &local_sgd, NULL))
    {
      g_printerr ("twb: --local-sgd: a whole number above 0 is needed\n");
      goto out;
    }
  gint64 async_k = -1;
  if (async_s && !g_ascii_string_to_signed (async_s, 10, 0, G_MAXINT32, &async_k, NULL))
    {
      g_printerr ("twb: --async: a whole number of steps, 0 or more, is needed\n");
      goto out;
    }
  pipe.async_staleness = (int) async_k;
  o.staleness = (int) async_k;
  gint64 seed = 0;
  tw_real_range sr = { 1, 1e6, FALSE, FALSE }, jr = { 0, 10, FALSE, FALSE };
  if ((straggler_s && !tw_number_parse_real (straggler_s, &sr, "--straggler", &o.straggler,
                                             &error))
      || (jitter_s && !tw_number_parse_real (jitter_s, &jr, "--jitter", &o.jitter, &error)))
    {
      g_printerr ("twb: %s\n", error->message);
      goto out;
    }
  if (seed_s && !g_ascii_string_to_signed (seed_s, 10, 0, G_MAXINT64, &seed, NULL))
    {
      g_printerr ("twb: --seed: a whole number, 0 or more, is needed\n");
      goto out;
    }
  o.seed = (guint64) seed;
  gboolean uneven = o.straggler > 1 || o.jitter > 0;
  if (uneven && (train_mode || check || g_strcmp0 (parallel, "pipeline") == 0 || g_strcmp0 (parallel, "hybrid") == 0 || chakra_in))
    {
      g_printerr ("twb: --straggler and --jitter model ranks that are not alike in the time "
                  "mode's data-parallel step: not with %s\n",
                  train_mode ? "--mode train" : check ? "--check (the real ranks are as they are)"
                  : chakra_in ? "--chakra" : "--parallel pipeline or hybrid");
      goto out;
    }
  pipe.local_sgd = local_sgd > 1 ? (int) local_sgd : 0;
  pipe.compress = g_strdup (compress);
  pipe.shard_optimizer = shard_opt;
  o.local_sgd = (int) local_sgd;
  o.shard_optimizer = shard_opt;
  gboolean pipelined = twb_dist_is_pipeline (&pipe);
  if (!twb_dist_args_check (&pipe, batch, &error))
    {
      g_printerr ("twb: %s\n", error->message);
      goto out;
    }
  if (compress && !(train_mode && g_str_has_prefix (compress, "powersgd:"))
      && !tw_sim_compress_parse (compress, &o, &error))
    {
      g_printerr ("twb: --compress: %s\n", error->message);
      goto out;
    }
  if ((o.local_sgd > 1 || o.shard_optimizer || o.compress || async_k >= 0)
      && (exact || check || (async_k >= 0 && trace_out)))
    {
      g_printerr ("twb: %s is modelled in the fast simulation only: not with %s\n",
                  async_k >= 0 ? "--async" : o.shard_optimizer ? "--shard-optimizer"
                  : o.local_sgd > 1 ? "--local-sgd" : "--compress",
                  exact ? "--exact" : check ? "--check" : "--trace");
      goto out;
    }
  if (pipelined && (sweep || check || exact || local))
    {
      g_printerr ("twb: --parallel %s simulates one configuration from the roofline: not with "
                  "%s\n", parallel, sweep ? "--sweep" : check ? "--check" : exact ? "--exact"
                                                              : "--device local or a profile");
      goto out;
    }
  if (trace_out && sweep)
    {
      g_printerr ("twb: --trace writes one configuration's step; --sweep gives several\n");
      goto out;
    }
  const char *preset = topology ? topology : "nvlink+ib";
  gboolean is_file = topology && (g_str_has_suffix (topology, ".json")
                                  || g_file_test (topology, G_FILE_TEST_EXISTS));
  status = 1;
  if (is_file)
    {
      if (nodes_s || per_s)
        {
          g_printerr ("twb: --nodes and --devices-per-node shape a preset topology; %s gives "
                      "its own\n", topology);
          status = 2;
          goto out;
        }
      file_topo = tw_topo_load (topology, &error);
      if (file_topo == NULL)
        {
          g_printerr ("twb: %s\n", error->message);
          goto out;
        }
    }
  if (trace_out)
    {
      g_autoptr (tw_file_roles) io = tw_file_roles_new ();
      tw_file_roles_input (io, argv[1], "the model");
      if (is_file)
        tw_file_roles_input (io, topology, "--topology");
      if (local)
        {
          g_autofree char *dp = g_strcmp0 (device, "local") == 0 ? tw_sim_profile_path ("local")
                                                                 : g_strdup (device);
          tw_file_roles_input (io, dp, "--device");
        }
      tw_file_roles_output (io, trace_out, "--trace");
      if (!tw_file_roles_check (io, &error))
        {
          g_printerr ("twb: %s\n", error->message);
          status = 2;
          goto out;
        }
    }
  if (chakra_in)
    goto loop;
  m = twb_load_model_checked (argv[1]);
  if (m == NULL)
    goto out;
  if (chakra_out)
    {
      g_autoptr (tw_file_roles) io = twb_model_inputs (argv[1], m, NULL);
      tw_file_roles_input (io, topology && g_file_test (topology, G_FILE_TEST_EXISTS) ? topology
                                                                                       : NULL,
                           "--topology");
      tw_file_roles_input (io, device && g_file_test (device, G_FILE_TEST_EXISTS) ? device : NULL,
                           "--device");
      g_autofree char *first = g_strdup_printf ("%s.0.et", chakra_out);
      tw_file_roles_output (io, first, "--chakra-out");
      if (!twb_check_files (io))
        goto out;
    }
  if (device_trace)
    {
      if (!tw_device_trace_load (device, m->graph, &dtrace, &error))
        {
          g_printerr ("twb: --device: %s\n", error->message);
          goto out;
        }
      have_dtrace = TRUE;
      g_strlcpy (dev.name, "traced", sizeof dev.name);
      for (char **w = dtrace.warnings; w && *w; w++)
        g_printerr ("twb: note: %s: %s\n", device, *w);
      if (dtrace.batch == 0)
        g_printerr ("twb: note: %s does not say its batch: its times are taken at a rank's\n",
                    device);
    }
  if (do_calibrate)
    {
      /* The rows a rank takes: --batch split among --ranks (default: the
       * recipe's batch, a rank's share of --batch in twb simulate). */
      int64_t rb = batch ? (batch + MAX (ranks, 1) - 1) / MAX (ranks, 1) : m->recipe.batch_size;
      status = calibrate (argv[1], m, rb, argv[0]);
      goto out;
    }
loop:
  if (sweep_ranks->len == 0)
    {
      int r = (int) ranks;
      if (r == 0 && pipelined && pipe.ranks > 0)
        r = pipe.ranks;
      if (r == 0)
        r = file_topo ? tw_topo_n_devices (file_topo)
            : nodes ? (int) (nodes * (per ? per : 8)) : (int) (per ? per : 8);
      g_array_append_val (sweep_ranks, r);
    }
  double sps1 = NAN;
  for (guint i = 0; i < sweep_ranks->len; i++)
    {
      int r = g_array_index (sweep_ranks, int, i);
      g_autoptr (tw_topo) own = NULL;
      tw_topo *t = file_topo;
      if (t == NULL)
        {
          int nn = 0, pp = 0;
          if (!shape_for (r, (int) nodes, (int) per, &nn, &pp, &error))
            {
              g_printerr ("twb: %s\n", error->message);
              status = 2;
              goto out;
            }
          own = tw_topo_cluster (nn, pp, preset, &error);
          if (own == NULL)
            {
              g_printerr ("twb: --topology: %s\n", error->message);
              status = 2;
              goto out;
            }
          t = own;
        }
      if (chakra_in)
        {
          tw_chakra_result cr;
          if (!tw_chakra_simulate (chakra_in, t, r, o.algo, 3.0 / (dev.mem_bw * dev.mem_eff), &cr,
                                   &error))
            {
              g_printerr ("twb: %s\n", error->message);
              goto out;
            }
          for (char **nt = cr.notes; i == 0 && nt && *nt; nt++)
            g_printerr ("twb: note: %s: %s\n", chakra_in, *nt);
          if (json)
            g_string_append_printf (chakra_json, "%s{\"ranks\":%d,\"step_ms\":%.17g,"
                                    "\"compute_ms\":%.17g,\"comm_ms\":%.17g,\"compute_nodes\":%d,"
                                    "\"collective_nodes\":%d,\"other_nodes\":%d}",
                                    i ? "," : "", r, cr.step_s * 1e3, cr.compute_s * 1e3,
                                    cr.comm_s * 1e3, cr.n_compute, cr.n_collective, cr.n_other);
          else
            {
              if (i == 0)
                g_print ("%s%s%s on %s, %s all-reduce\n%7s %12s %12s %12s\n", chakra_in,
                         cr.model ? " (" : "", cr.model ? cr.model : "",
                         file_topo ? topology : preset, tw_algo_name (o.algo), "ranks", "step ms",
                         "compute ms", "comm ms");
              g_print ("%7d %12.3f %12.3f %12.3f\n", r, cr.step_s * 1e3, cr.compute_s * 1e3,
                       cr.comm_s * 1e3);
            }
          tw_chakra_result_clear (&cr);
          continue;
        }
      /* Train mode takes twb train's global batch: the recipe's, split. */
      int64_t gb = batch ? batch : m->recipe.batch_size * (train_mode ? 1 : r);
      g_autoptr (GHashTable) traced = have_dtrace ? tw_device_trace_times_at (&dtrace, (gb + r - 1) / r)
                                                  : NULL;
      if (traced)
        o.node_times = traced;
      g_autoptr (tw_topo) local_topo = NULL;
      if (local)
        {
          int64_t rb = (gb + r - 1) / r;
          if (!tw_sim_profile_apply (local, m->name ? m->name : "", rb, r, &o, &dev, &local_topo,
                                     &error))
            {
              g_printerr ("twb: --device %s: %s\n", device, error->message);
              goto out;
            }
          if (!tw_sim_profile_has_model (local, m->name ? m->name : "", rb) && i == 0)
            g_printerr ("twb: note: profile %s has not measured %s at %" G_GINT64_FORMAT
                        " rows a rank: its fitted roofline stands in (twb simulate %s "
                        "--calibrate%s%s)\n", device, argv[1], rb, argv[1],
                        batch ? " --batch " : "", batch ? batch_s : "");
          else if (o.node_times && i == 0)
            {
              /* A profile of this model that lacks some of its nodes (the
               * graph changed since): those take the fitted roofline. */
              GString *missing = g_string_new (NULL);
              for (int k = 0; k < tw_graph_n_nodes (m->graph); k++)
                {
                  tw_node *n = tw_graph_node (m->graph, k);
                  if (n->op_name && strcmp (n->op_name, "input") != 0
                      && !g_hash_table_contains (o.node_times, n->id))
                    g_string_append_printf (missing, "%s%s", missing->len ? ", " : "", n->id);
                }
              if (missing->len)
                g_printerr ("twb: note: profile %s has no time for %s: its fitted roofline "
                            "stands in\n", device, missing->str);
              g_string_free (missing, TRUE);
            }
          if (topology == NULL)
            t = local_topo;
        }
      if (pipelined)
        {
          if (pipe.ranks == 0)
            pipe.ranks = r;
          twb_simulate_pipe_args pa = { .model_path = argv[1],
                                        .model_name = m->name ? m->name : argv[1],
                                        .topology = file_topo ? topology : preset,
                                        .trace_out = trace_out, .json = json, .algo = o.algo,
                                        .bucket_mb = o.bucket_mb };
          status = twb_simulate_pipe (&pa, &pipe, r, m->graph, gb, &dev, t);
          goto out;
        }
      /* One rank with its own share of the batch: the baseline of the
       * scaling efficiency (the same per-rank batch as a weak-scaling run). */
      if (isnan (sps1) || batch)
        {
          g_autoptr (tw_topo) one = tw_topo_cluster (1, 1, "nvlink+ib", NULL);
          tw_sim_dp_options o1 = o;
          o1.ranks = 1;
          o1.compute_scale = 1;
          o1.straggler = o1.jitter = 0;   /* the baseline: one ordinary rank */
          o1.spans = NULL;
          tw_sim_dp_result r1;
          if (!tw_sim_dp_step (m->graph, MAX (gb / r, 1), &dev, one, &o1, &r1, &error))
            {
              twb_print_error (argv[1], error);
              goto out;
            }
          sps1 = r1.samples_per_s;
        }
      sim_row w = { .ranks = r };
      o.ranks = r;
      o.spans = trace_out || chakra_out ? spans : NULL;
      /* --async: six steps of the workers and their server (step.h). */
      if (async_k >= 0 ? !tw_sim_async_step (m->graph, gb, &dev, t, &o, 6, &w.r, NULL, &error)
                       : !tw_sim_dp_step (m->graph, gb, &dev, t, &o, &w.r, &error))
        {
          twb_print_error (argv[1], error);
          goto out;
        }
      if (trace_out)
        {
          const char *meta[] = { "model", m->name ? m->name : argv[1], "device", dev.name,
                                 "topology", file_topo ? topology : preset,
                                 "algo", tw_algo_name (o.algo), NULL };
          if (!twb_simulate_trace_save (trace_out, spans, r, exact, meta, &error))
            {
              g_printerr ("twb: --trace: %s\n", error->message);
              goto out;
            }
          g_printerr ("trace of the simulated step written to %s (%d of %d ranks)\n", trace_out,
                      exact ? r : MIN (r, TWB_SIMULATE_TRACE_RANKS), r);
        }
      for (int k = 0; chakra_out && k < r; k++)
        {
          g_autofree char *et = g_strdup_printf ("%s.%d.et", chakra_out, k);
          if (!tw_chakra_write (spans, k, r, m->name ? m->name : "", et, &error))
            {
              g_printerr ("twb: --chakra-out: %s\n", error->message);
              goto out;
            }
        }
      if (chakra_out && !json)
        g_printerr ("wrote %s.0.et … %s.%d.et (Chakra execution traces, %u nodes each)\n",
                    chakra_out, chakra_out, r - 1, spans->len);
      w.efficiency = sps1 > 0 ? w.r.samples_per_s / r / sps1 : NAN;
      w.measured_ms = NAN;
      if (check)
        {
          w.measured_ms = measure (argv[0], argv[1], r, gb, &o, &w.measured_lo, &w.measured_hi,
                                   &error);
          if (isnan (w.measured_ms))
            {
              g_printerr ("twb: --check: %s\n", error ? error->message : "no figure");
              goto out;
            }
        }
      w.memory = w.r.param_bytes + w.r.grad_mem_bytes + w.r.optimizer_bytes
                 + w.r.activation_bytes;
      w.fits = w.memory <= dev.memory_bytes;
      w.link = w.r.busiest_link >= 0 ? g_strdup (tw_topo_link_name (t, w.r.busiest_link)) : NULL;
      if (!w.fits)
        {
          g_autofree char *need = g_format_size ((guint64) w.memory);
          g_autofree char *have = g_format_size ((guint64) dev.memory_bytes);
          g_autofree char *act = g_format_size ((guint64) w.r.activation_bytes);
          g_autofree char *st = g_format_size ((guint64) (w.r.param_bytes + w.r.grad_mem_bytes
                                                          + w.r.optimizer_bytes));
          g_printerr ("twb: %s: does not fit at %d ranks: each %s needs %s (parameters, "
                      "gradients and optimizer state %s, activations %s) of its %s; raise "
                      "--ranks or lower --batch\n", argv[1], r, dev.name, need, st, act, have);
          g_free (w.link);
          goto out;
        }
      g_array_append_val (rows, w);
      if (train_mode)
        {
          twb_sim_train_args ta = { .ranks = r, .algo = o.algo, .bucket_mb = o.bucket_mb,
                                    .virtual_step_s = w.r.step_s,
                                    .virtual_compute_s = w.r.compute_s, .epochs = epochs,
                                    .batch = gb, .max_steps = max_steps,
                                    .async_staleness = (int) async_k,
                                    .local_sgd = (int) local_sgd, .compress = compress,
                                    .shard_optimizer = shard_opt, .data = data,
                                    .save_weights = save_weights, .json = json,
                                    .progress_json = progress_json };
          status = twb_simulate_train (argv[1], m, &ta);
          goto out;
        }
      if (!json)
        {
          if (i == 0)
            {
              g_autoptr (GString) uneven_s = g_string_new (NULL);
              if (o.straggler > 1)
                g_string_append_printf (uneven_s, ", the last %s %g× slower",
                                        async_k >= 0 ? "worker" : "rank", o.straggler);
              if (o.jitter > 0)
                g_string_append_printf (uneven_s, ", steps jittered (cv %g, seed %" G_GUINT64_FORMAT
                                        ")", o.jitter, o.seed);
              g_print ("%s on %s, %s%s, %s all-reduce, buckets of %g MB%s%s%s%s\n",
                       m->name ? m->name : argv[1], dev.name, file_topo ? topology : preset,
                       file_topo ? "" : " topology", tw_algo_name (o.algo), o.bucket_mb,
                       o.shard_optimizer ? ", ZeRO-1" : "",
                       o.local_sgd > 1 ? ", local SGD"
                       : async_k >= 0 ? ", asynchronous (a parameter server)" : "",
                       o.compress ? ", compressed" : "", uneven_s->str);
              g_print ("%7s %10s %12s %10s %10s %11s %11s %9s  %s\n", "ranks", "batch",
                       "step ms", "samples/s", "efficiency", "comm share", "exposed ms",
                       "memory", "busiest link");
            }
          g_autofree char *mem = g_format_size ((guint64) w.memory);
          g_autofree char *lb = g_format_size ((guint64) w.r.busiest_link_bytes);
          g_print ("%7d %10" G_GINT64_FORMAT " %12.3f %10.0f %10.2f %10.0f%% %11.3f %9s  %s%s%s%s\n",
                   r, gb, w.r.step_s * 1e3, w.r.samples_per_s, w.efficiency,
                   w.r.step_s > 0 ? 100 * w.r.comm_s / w.r.step_s : 0, w.r.exposed_s * 1e3, mem,
                   w.r.busiest_link >= 0 ? tw_topo_link_name (t, w.r.busiest_link) : "none",
                   w.r.busiest_link >= 0 ? " (" : "", w.r.busiest_link >= 0 ? lb : "",
                   w.r.busiest_link >= 0 ? ")" : "");
          if (!isnan (w.measured_ms))
            g_print ("        measured here (%d runs of twb train --ranks %d): %.3f ms a step "
                     "(runs %.3f to %.3f); the prediction is %+.0f%% off\n", CHECK_RUNS, r,
                     w.measured_ms, w.measured_lo, w.measured_hi,
                     100 * (w.r.step_s * 1e3 / w.measured_ms - 1));
        }
      else if (i + 1 == sweep_ranks->len)
        {
          g_autoptr (JsonBuilder) b = json_builder_new ();
          json_builder_begin_object (b);
          json_builder_set_member_name (b, "model");
          json_builder_add_string_value (b, m->name ? m->name : "");
          json_builder_set_member_name (b, "device");
          json_builder_add_string_value (b, dev.name);
          json_builder_set_member_name (b, "topology");
          json_builder_add_string_value (b, file_topo ? topology : preset);
          json_builder_set_member_name (b, "algo");
          json_builder_add_string_value (b, tw_algo_name (o.algo));
          json_builder_set_member_name (b, "shard_optimizer");
          json_builder_add_boolean_value (b, o.shard_optimizer);
          json_builder_set_member_name (b, "local_sgd");
          json_builder_add_int_value (b, MAX (o.local_sgd, 1));
          json_builder_set_member_name (b, "async");
          if (async_k >= 0)
            json_builder_add_int_value (b, async_k);
          else
            json_builder_add_null_value (b);
          json_builder_set_member_name (b, "compress");
          json_builder_add_string_value (b, compress ? compress : "none");
          json_builder_set_member_name (b, "straggler");
          json_builder_add_double_value (b, MAX (o.straggler, 1));
          json_builder_set_member_name (b, "jitter");
          json_builder_add_double_value (b, o.jitter);
          json_builder_set_member_name (b, "seed");
          json_builder_add_int_value (b, (gint64) o.seed);
          json_builder_set_member_name (b, "configs");
          json_builder_begin_array (b);
          for (guint k = 0; k < rows->len; k++)
            row_json (b, &g_array_index (rows, sim_row, k));
          json_builder_end_array (b);
          json_builder_end_object (b);
          twb_print_json (b);
        }
    }
  if (chakra_in && json)
    {
      g_autoptr (JsonNode) wn = json_node_init_string (json_node_alloc (), chakra_in);
      g_autoptr (JsonNode) tn = json_node_init_string (json_node_alloc (),
                                                       file_topo ? topology : preset);
      g_autofree char *ws = json_to_string (wn, FALSE), *ts = json_to_string (tn, FALSE);
      g_print ("{\"workload\":%s,\"topology\":%s,\"algo\":\"%s\",\"configs\":[%s]}\n", ws, ts,
               tw_algo_name (o.algo), chakra_json->str);
    }
  status = 0;
out:
  for (guint k = 0; k < rows->len; k++)
    g_free (g_array_index (rows, sim_row, k).link);
  tw_device_trace_clear (&dtrace);
  g_free (ranks_s);
  g_free (nodes_s);
  g_free (per_s);
  g_free (topology);
  g_free (device);
  g_free (algo_s);
  g_free (bucket_s);
  g_free (batch_s);
  g_free (sweep);
  g_free (links_out);
  g_free (mode_s);
  g_free (epochs_s);
  g_free (max_steps_s);
  g_free (data);
  g_free (save_weights);
  g_free (chakra_in);
  g_free (chakra_out);
  g_free (trace_out);
  g_free (parallel);
  g_free (stages_s);
  g_free (micro_s);
  g_free (schedule);
  g_free (local_sgd_s);
  g_free (async_s);
  g_free (straggler_s);
  g_free (jitter_s);
  g_free (seed_s);
  g_free (compress);
  twb_dist_args_clear (&pipe);
  return status;
}
