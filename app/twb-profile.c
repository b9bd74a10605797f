/* twb-profile.c — `twb profile`: train a few steps with the profiler's
 * recorder on the event bus and write a Chrome trace.
 *
 * The trace always streams to the file as the run goes (a writer thread
 * takes the records at step ends): memory stays bounded whatever --steps
 * is, one code path serves every length, and the file still appears only
 * when complete (a killed run leaves the temporary beside it, which opens
 * as an unterminated trace). */
#define G_LOG_DOMAIN "twb"

#include "app/twb-cli.h"
#include "app/twb-dist.h"
#include "engine/comm/comm.h"
#include "engine/device.h"
#include "engine/fileutil.h"
#include "engine/train.h"
#include "profiler/chrome-read.h"
#include "profiler/chrome.h"
#include "profiler/ranks.h"
#include "profiler/recorder.h"

#include <string.h>

/* Largest step count accepted: far beyond any profile worth opening. */
#define MAX_PROFILE_STEPS 10000000

static gboolean
parse_count (const char *option, const char *value, gint64 lo, gint64 hi, gint64 *out)
{
  g_autoptr (GError) error = NULL;
  int64_t v = 0;
  if (!tw_number_parse_int (value, lo, hi, option, &v, &error))
    {
      g_printerr ("twb: %s\n", error->message);
      return FALSE;
    }
  *out = v;
  return TRUE;
}

/* Publishes the loading of one batch as a DATA event pair, as a session's
 * loop does. */
static gboolean
next_batch (tw_batcher *b, tw_bus *bus, guint64 step, int64_t *epoch, tw_tensor **x, tw_tensor **y)
{
  gboolean wants = tw_bus_wants (bus, TW_EV_DATA);
  tw_event ev = { .kind = TW_EV_DATA, .step = step };
  if (wants)
    {
      ev.t_start = tw_now_ns ();
      tw_bus_publish (bus, &ev);
    }
  gboolean ok = tw_batcher_next (b, x, y);
  if (!ok)
    {
      tw_batcher_reset (b, ++*epoch);
      ok = tw_batcher_next (b, x, y);
    }
  if (wants)
    {
      ev.end = TRUE;
      ev.t_end = tw_now_ns ();
      tw_bus_publish (bus, &ev);
    }
  return ok;
}

/* Every rank's recording to rank 0 (its Chrome JSON, gzipped), merged there
 * on rank 0's clock (the ping-pong offsets, refined from the collectives'
 * ends) and written to path.  Collective: every rank calls it. */
static gboolean
gather_traces (tw_comm *comm, tw_trace *mine, const gint64 *offsets, const gint64 *rtts,
               const char *path, GError **error)
{
  int rank = tw_comm_rank (comm), n = tw_comm_size (comm);
  tw_trace_set_meta (mine, "host", tw_comm_host (comm));
  g_autoptr (GBytes) bytes = tw_chrome_trace_to_bytes (mine, error);
  if (bytes == NULL)
    return FALSE;
  int64_t len = (int64_t) g_bytes_get_size (bytes);
  g_autofree int64_t *lens = g_new0 (int64_t, n);
  tw_comm_req *r = tw_comm_allgather (comm, &len, lens, 1, TW_I64,
                                      &(tw_coll_tag) { .what = "trace sizes" });
  gboolean ok = tw_comm_wait (comm, r, error);
  tw_comm_req_free (r);
  if (!ok)
    return FALSE;
  if (rank != 0)
    {
      r = tw_comm_send (comm, g_bytes_get_data (bytes, NULL), len, TW_U8, 0,
                        &(tw_coll_tag) { .what = "trace" });
      ok = tw_comm_wait (comm, r, error);
      tw_comm_req_free (r);
      return ok;
    }
  g_autoptr (GPtrArray) traces = g_ptr_array_new_with_free_func ((GDestroyNotify) tw_trace_free);
  g_ptr_array_add (traces, NULL);   /* rank 0's own, below */
  for (int q = 1; q < n && ok; q++)
    {
      g_autofree guint8 *buf = g_malloc (MAX (lens[q], 1));
      r = tw_comm_recv (comm, buf, lens[q], TW_U8, q, &(tw_coll_tag) { .what = "trace" });
      ok = tw_comm_wait (comm, r, error);
      tw_comm_req_free (r);
      if (!ok)
        break;
      g_autoptr (GBytes) b = g_bytes_new_take (g_steal_pointer (&buf), lens[q]);
      g_autofree char *name = g_strdup_printf ("rank %d's trace", q);
      tw_trace *t = tw_trace_from_chrome_bytes (b, name, error);
      if (t == NULL)
        return FALSE;
      g_ptr_array_add (traces, t);
    }
  if (!ok)
    return FALSE;
  g_autofree tw_trace **all = g_new (tw_trace *, n);
  all[0] = mine;
  for (int q = 1; q < n; q++)
    all[q] = g_ptr_array_index (traces, q);
  g_autoptr (tw_trace) merged = tw_trace_merge_ranks (all, n, offsets, rtts, error);
  return merged && tw_chrome_trace_save (merged, path, error);
}

int
twb_cmd_profile (int argc, char **argv)
{
  char *trace = NULL, *mode = NULL, *data = NULL, *steps_s = NULL, *warmup_s = NULL,
       *threads_s = NULL, *ranks_s = NULL, *timeout_s = NULL, *bucket_s = NULL, *rpn_s = NULL;
  g_auto (GStrv) command_argv = g_strdupv (argv);
  twb_dist_args dist;
  twb_dist_args_init (&dist);
  tw_comm *comm = NULL;
  GOptionEntry entries[] = {
    { "steps", 'n', 0, G_OPTION_ARG_STRING, &steps_s, "Steps to record", "N" },
    { "trace", 'o', 0, G_OPTION_ARG_FILENAME, &trace, "Chrome trace to write (.json or .json.gz)", "FILE" },
    { "mode", 0, 0, G_OPTION_ARG_STRING, &mode, "eager or compiled (default eager)", "MODE" },
    { "warmup", 0, 0, G_OPTION_ARG_STRING, &warmup_s, "Steps run first, not recorded (default 2)", "N" },
    { "threads", 't', 0, G_OPTION_ARG_STRING, &threads_s, "CPU threads (default 1; 0 = all)", "N" },
    { "data", 'd', 0, G_OPTION_ARG_STRING, &data, "Dataset (default: the model's recipe)", "DATA" },
    { "ranks", 0, 0, G_OPTION_ARG_STRING, &ranks_s,
      "Profile data-parallel training on N processes (MPI ranks): one trace, a process per rank",
      "N" },
    { "parallel", 0, 0, G_OPTION_ARG_STRING, &dist.parallel, "With --ranks: data", "KIND" },
    { "algo", 0, 0, G_OPTION_ARG_STRING, &dist.algo,
      "All-reduce algorithm: mpi (default), ring, tree, ps or hier", "NAME" },
    { "comm-timeout", 0, 0, G_OPTION_ARG_STRING, &timeout_s,
      "Seconds a rank waits for the others (default 60)", "S" },
    { "bucket-mb", 0, 0, G_OPTION_ARG_STRING, &bucket_s, "Gradient bucket size in MB (default 25)",
      "MB" },
    { "ranks-per-node", 0, 0, G_OPTION_ARG_STRING, &rpn_s,
      "Treat each N consecutive ranks as one node (hier)", "N" },
    { "shard-optimizer", 0, 0, G_OPTION_ARG_NONE, &dist.shard_optimizer,
      "ZeRO-1: reduce-scatter the gradients, update each rank's shard, all-gather the weights",
      NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("MODEL.json --steps N --trace FILE.json[.gz] — record a trace");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  int status = 2;
  gint64 steps = 0, warmup = 2, threads = 1;

  if (!g_option_context_parse (ctx, &argc, &argv, &error) || argc != 2 || steps_s == NULL
      || trace == NULL)
    {
      g_printerr ("usage: twb profile MODEL.json --steps N --trace FILE.json[.gz] [--mode eager|compiled]\n"
                  "       [--warmup N] [--threads T] [--data SPEC]\n");
      if (error)
        g_printerr ("twb: %s\n", error->message);
      goto out;
    }
  if (!parse_count ("--steps", steps_s, 1, MAX_PROFILE_STEPS, &steps)
      || (warmup_s && !parse_count ("--warmup", warmup_s, 0, MAX_PROFILE_STEPS, &warmup))
      || (threads_s && !parse_count ("--threads", threads_s, 0, TWB_MAX_THREADS, &threads)))
    goto out;
  {
    gint64 v = 0;
    g_autoptr (GError) e = NULL;
    if (ranks_s && !parse_count ("--ranks", ranks_s, 1, 65536, &v))
      goto out;
    dist.ranks = (int) v;
    dist.ranks_set = ranks_s != NULL;
    if (rpn_s && !parse_count ("--ranks-per-node", rpn_s, 1, 65536, &v))
      goto out;
    dist.ranks_per_node = rpn_s ? (int) v : 0;
    tw_real_range pos = { 0, 604800, TRUE, FALSE };
    if (timeout_s && !tw_number_parse_real (timeout_s, &pos, "--comm-timeout", &dist.comm_timeout, &e))
      {
        g_printerr ("twb: %s\n", e->message);
        goto out;
      }
    tw_real_range mb = { 0, 65536, TRUE, FALSE };
    if (bucket_s && !tw_number_parse_real (bucket_s, &mb, "--bucket-mb", &dist.bucket_mb, &e))
      {
        g_printerr ("twb: %s\n", e->message);
        goto out;
      }
  }
  if (mode && strcmp (mode, "eager") != 0 && strcmp (mode, "compiled") != 0)
    {
      g_printerr ("twb: --mode %s: expected eager or compiled\n", mode);
      goto out;
    }
  status = 1;
  {
    g_autoptr (tw_model) m = twb_load_model_checked (argv[1]);
    if (m == NULL)
      goto out;
    if (!twb_dist_args_check (&dist, m->recipe.batch_size, &error))
      {
        twb_print_error (NULL, error);
        status = 2;
        goto out;
      }
    gboolean launched = tw_comm_launched ();
    if (launched && twb_dist_wanted (&dist) && (comm = twb_dist_start (&dist)) == NULL)
      goto out;
    int rank = comm ? tw_comm_rank (comm) : 0;
    /* The trace is rank 0's to write; every rank reads the model and data. */
    g_autoptr (tw_file_roles) io = twb_model_inputs (argv[1], m, data);
    if (rank == 0)
      tw_file_roles_output (io, trace, "--trace");
    if (!twb_check_files (io))
      goto out;
    /* Can the trace be written?  Found out now, not after the run. */
    tw_save *probe = rank == 0 ? tw_save_begin (trace, &error) : NULL;
    if (rank == 0 && probe == NULL)
      {
        twb_print_error ("--trace", error);
        goto out;
      }
    tw_save_abort (probe);
    if (dist.ranks > 1 && !launched)
      {
        status = twb_dist_launch (&dist, command_argv);
        goto out;
      }
    tw_set_num_threads ((int) threads);
    g_autoptr (tw_dataset) train = tw_dataset_open_for_model (m, data, TW_SPLIT_TRAIN, &error);
    if (train == NULL)
      {
        twb_print_error (argv[1], error);
        goto out;
      }
    g_autoptr (tw_trainer) tr = tw_trainer_new (m, &error);
    if (tr == NULL)
      {
        twb_print_error (argv[1], error);
        goto out;
      }
    gboolean compiled = g_strcmp0 (mode, "compiled") == 0;
    tw_trainer_set_mode (tr, compiled ? TW_MODE_COMPILED : TW_MODE_EAGER);
    tw_trainer_set_num_threads (tr, tw_get_num_threads ());
    tw_trainer_set_total_steps (tr, warmup + steps);
    g_autoptr (tw_bus) bus = tw_bus_new ();
    tw_trainer_set_bus (tr, bus);
    if (comm)
      {
        tw_dist_options dopt;
        tw_dist_options_init (&dopt);
        dopt.bucket_mb = dist.bucket_mb;
        dopt.shard_optimizer = dist.shard_optimizer;
        tw_comm_set_bus (comm, bus);
        if (!tw_trainer_set_dist (tr, comm, &dopt, &error))
          {
            twb_print_error (argv[1], error);
            goto out;
          }
      }
    tw_batcher *batcher = tw_batcher_new (train, m->recipe.batch_size, TRUE, m->recipe.seed, FALSE);
    g_autoptr (tw_recorder) rec = tw_recorder_new (0);
    g_autofree char *process = comm ? g_strdup_printf ("rank %d", rank)
                                    : g_strdup_printf ("twb profile %s", m->name ? m->name : argv[1]);
    tw_recorder_set_process_name (rec, process);
    tw_recorder_set_meta (rec, "model", m->name ? m->name : argv[1]);
    tw_recorder_set_meta (rec, "model_file", argv[1]);
    tw_recorder_set_meta (rec, "mode", compiled ? "compiled" : "eager");
    char num[32];
    g_snprintf (num, sizeof num, "%" G_GINT64_FORMAT, steps);
    tw_recorder_set_meta (rec, "steps", num);
    g_snprintf (num, sizeof num, "%" G_GINT64_FORMAT, warmup);
    tw_recorder_set_meta (rec, "warmup_steps", num);
    g_snprintf (num, sizeof num, "%d", tw_get_num_threads ());
    tw_recorder_set_meta (rec, "threads", num);
    g_snprintf (num, sizeof num, "%" G_GINT64_FORMAT, (gint64) m->recipe.batch_size);
    tw_recorder_set_meta (rec, "batch", num);
    if (comm)
      {
        g_snprintf (num, sizeof num, "%d", rank);
        tw_recorder_set_meta (rec, "rank", num);
        tw_recorder_set_meta (rec, "algo", tw_algo_name (tw_comm_get_options (comm)->algo));
      }
    /* One process streams to the file; ranks keep their recording for
     * rank 0 to gather. */
    if (!comm && !tw_recorder_stream_to (rec, trace, &error))
      {
        twb_print_error ("--trace", error);
        tw_batcher_free (batcher);
        goto out;
      }
    g_autofree gint64 *offsets = NULL, *rtts = NULL;
    int64_t epoch = 0, rec_epoch = 0;
    gint64 t_rec = 0, t_epoch = 0;
    gboolean ok = TRUE;
    for (gint64 i = 0; i < warmup + steps && ok; i++)
      {
        if (i == warmup)
          {
            /* The clocks, measured once the ranks are in step (after the warm-up). */
            if (comm && !tw_comm_clock_offsets (comm, 20, &offsets, &rtts, &error))
              {
                twb_print_error (NULL, error);
                ok = FALSE;
                break;
              }
            tw_recorder_start (rec, bus);
            t_rec = t_epoch = tw_now_ns ();
            rec_epoch = epoch;
          }
        g_autoptr (tw_tensor) x = NULL;
        g_autoptr (tw_tensor) y = NULL;
        int64_t before = epoch;
        ok = next_batch (batcher, bus, (guint64) i, &epoch, &x, &y);
        if (!ok)
          {
            g_printerr ("twb: %s: the training set gives no batch\n", argv[1]);
            break;
          }
        if (epoch != before && i >= warmup)
          {
            /* Epoch boundaries as slices on the trace's steps lane. */
            g_autofree char *name = g_strdup_printf ("epoch %" G_GINT64_FORMAT, before + 1);
            gint64 now = tw_now_ns ();
            tw_recorder_mark (rec, name, "epoch", t_epoch, now);
            t_epoch = now;
          }
        /* (samples/s and the loss: the recorder's own counters at each step end) */
        ok = tw_trainer_step (tr, x, y, NULL, &error);
        if (!ok)
          twb_print_error (argv[1], error);
      }
    gint64 t_end = tw_now_ns ();
    tw_batcher_free (batcher);
    tw_recorder_stop (rec);
    if (!ok)
      goto out;             /* the recorder's free removes the unfinished file */
    g_autofree char *last = g_strdup_printf ("epoch %" G_GINT64_FORMAT "%s", epoch + 1,
                                             epoch == rec_epoch ? "" : " (part)");
    tw_recorder_mark (rec, last, "epoch", t_epoch, t_end);
    guint64 events = tw_recorder_n_events (rec), dropped = tw_recorder_n_dropped (rec);
    if (comm)
      {
        g_autoptr (tw_trace) mine = tw_recorder_take_trace (rec);
        if (!gather_traces (comm, mine, offsets, rtts, trace, &error))
          {
            twb_print_error ("--trace", error);
            twb_dist_print_failure (comm);
            goto out;
          }
        gint64 total = (gint64) events;
        tw_comm_allreduce_sync (comm, &total, 1, TW_I64, TW_REDUCE_SUM, NULL, NULL);
        events = (guint64) total;
        if (rank != 0)
          {
            status = 0;
            goto out;
          }
      }
    else if (!tw_recorder_finish_stream (rec, &error))
      {
        twb_print_error (NULL, error);
        goto out;
      }
    g_autofree char *dropped_s = dropped ? g_strdup_printf (", %" G_GUINT64_FORMAT " events dropped "
                                                            "(over the recorder's cap)", dropped)
                                         : g_strdup ("");
    g_autofree char *ranks_note = comm ? g_strdup_printf (" on %d ranks", tw_comm_size (comm))
                                       : g_strdup ("");
    g_print ("%s: %" G_GUINT64_FORMAT " events, %" G_GINT64_FORMAT " steps%s, %.3f ms recorded%s\n",
             trace, events, steps, ranks_note, (t_end - t_rec) / 1e6, dropped_s);
    status = 0;
  }
out:
  twb_dist_args_clear (&dist);
  g_free (ranks_s);
  g_free (timeout_s);
  g_free (bucket_s);
  g_free (rpn_s);
  twb_dist_finish (comm, status);
  g_free (trace);
  g_free (mode);
  g_free (data);
  g_free (steps_s);
  g_free (warmup_s);
  g_free (threads_s);
  return status;
}
