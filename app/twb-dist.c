/* twb-dist.c — `--ranks N` for twb train and twb profile: start mpirun on
 * ourselves when the user did not, and inside a rank, the communicator and
 * the rank's manners (rank 0 speaks; the others print errors only, each
 * line prefixed by their rank). */
#define G_LOG_DOMAIN "twb"

#include "app/twb-dist.h"
#include "app/twb-cli.h"
#include "engine/comm/comm.h"
#include "engine/comm/compress.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const parallel_names[] = { "data", "pipeline", "hybrid", NULL };

void
twb_dist_args_init (twb_dist_args *a)
{
  memset (a, 0, sizeof *a);
  a->comm_timeout = 60;
  a->bucket_mb = 25;
  a->async_staleness = -1;
}

void
twb_dist_args_clear (twb_dist_args *a)
{
  g_clear_pointer (&a->parallel, g_free);
  g_clear_pointer (&a->algo, g_free);
  g_clear_pointer (&a->compress, g_free);
  g_clear_pointer (&a->schedule, g_free);
}

gboolean
twb_dist_is_pipeline (const twb_dist_args *a)
{
  return g_strcmp0 (a->parallel, "pipeline") == 0 || g_strcmp0 (a->parallel, "hybrid") == 0;
}

static int
stages_of (const twb_dist_args *a, int ranks)
{
  if (g_strcmp0 (a->parallel, "pipeline") == 0)
    return a->stages > 0 ? a->stages : MAX (ranks, 1);
  return a->stages > 0 ? a->stages : 2;
}

void
twb_dist_pipeline_options (const twb_dist_args *a, int ranks, tw_pipeline_options *out)
{
  tw_pipeline_options_init (out);
  if (!twb_dist_is_pipeline (a))
    return;
  out->stages = stages_of (a, ranks);
  if (a->micro_batches > 0)
    out->micro_batches = a->micro_batches;
  if (a->schedule)
    tw_pipe_schedule_from_name (a->schedule, &out->schedule, NULL);
  out->bucket_mb = a->bucket_mb;
}

char *
twb_dist_pipeline_describe (const tw_graph *g, const tw_pipeline_options *o, int ranks)
{
  int nn = tw_graph_n_nodes (g);
  g_autofree int *st = g_new0 (int, MAX (nn, 1));
  if (o->stages < 1 || !tw_pipeline_assign_stages (g, o->stages, st, NULL))
    return NULL;
  g_autofree double *flops = g_new0 (double, o->stages);
  double total = 0;
  for (int i = 0; i < nn; i++)
    if (st[i] >= 0)
      {
        flops[st[i]] += tw_graph_node (g, i)->cost.flops;
        total += tw_graph_node (g, i)->cost.flops;
      }
  int replicas = MAX (ranks / o->stages, 1);
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "pipeline: %d stage%s × %d replica%s, %d micro-batches, %s",
                          o->stages, o->stages == 1 ? "" : "s", replicas, replicas == 1 ? "" : "s",
                          o->micro_batches, tw_pipe_schedule_name (o->schedule));
  for (int k = 0; k < o->stages; k++)
    {
      g_string_append_printf (s, "; stage %d:", k);
      int shown = 0, n = 0;
      for (int i = 0; i < nn; i++)
        if (st[i] == k && n++ < 6)
          g_string_append_printf (s, "%s %s", shown++ ? "," : "", tw_graph_node (g, i)->id);
      if (n > 6)
        g_string_append_printf (s, " … (%d nodes)", n);
      if (total > 0)
        g_string_append_printf (s, " (%.0f%% of the FLOPs)", 100 * flops[k] / total);
    }
  return g_string_free (s, FALSE);
}

/* --parallel pipeline / hybrid and their options. */
static gboolean
check_pipeline (const twb_dist_args *a, int64_t batch, GError **error)
{
  const char *given = a->stages ? "--stages" : a->micro_batches ? "--micro-batches"
                      : a->schedule ? "--schedule" : NULL;
  if (!twb_dist_is_pipeline (a))
    {
      if (given)
        {
          g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                       "%s goes with --parallel pipeline or --parallel hybrid", given);
          return FALSE;
        }
      return TRUE;
    }
  tw_pipe_schedule sch;
  if (a->schedule && !tw_pipe_schedule_from_name (a->schedule, &sch, NULL))
    {
      g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                   "--schedule %s: unknown schedule (known: 1f1b, gpipe)", a->schedule);
      return FALSE;
    }
  int ranks = a->ranks > 0 ? a->ranks : 1;
  int stages = stages_of (a, ranks);
  if (g_strcmp0 (a->parallel, "pipeline") == 0 && a->stages > 0 && a->ranks_set
      && a->stages != a->ranks)
    {
      g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                   "--stages %d: --parallel pipeline runs one stage per rank (--ranks %d); for "
                   "replicas of a shorter pipeline use --parallel hybrid", a->stages, a->ranks);
      return FALSE;
    }
  if (a->ranks_set && ranks % stages != 0)
    {
      g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                   "--ranks %d: --parallel hybrid needs a multiple of the %d stages (replicas × "
                   "stages)", ranks, stages);
      return FALSE;
    }
  int replicas = a->ranks_set ? ranks / stages : 1;
  int micro = a->micro_batches > 0 ? a->micro_batches : 4;
  if (batch > 0 && micro > batch / MAX (replicas, 1))
    {
      g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                   "--micro-batches %d: a replica's share of the batch of %" G_GINT64_FORMAT
                   " samples (%" G_GINT64_FORMAT ") cannot be cut into %d micro-batches",
                   micro, batch, batch / MAX (replicas, 1), micro);
      return FALSE;
    }
  return TRUE;
}

gboolean
twb_dist_args_check (const twb_dist_args *a, int64_t batch, GError **error)
{
  if (a->ranks_set && a->ranks < 1)
    {
      g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                   "--ranks %d: a run needs at least one rank", a->ranks);
      return FALSE;
    }
  if (a->ranks > 1 && batch > 0 && a->ranks > batch)
    {
      g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                   "--ranks %d: a batch of %" G_GINT64_FORMAT " samples cannot be split into %d "
                   "shards (--batch is the global batch: raise it, or use fewer ranks)",
                   a->ranks, batch, a->ranks);
      return FALSE;
    }
  if (a->parallel)
    {
      gboolean known = FALSE;
      for (int i = 0; parallel_names[i]; i++)
        known |= strcmp (a->parallel, parallel_names[i]) == 0;
      if (!known)
        {
          g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                       "--parallel %s: unknown parallelism (known: data, pipeline, hybrid)",
                       a->parallel);
          return FALSE;
        }
    }
  if (!check_pipeline (a, batch, error))
    return FALSE;
  tw_algo algo;
  if (a->algo && !tw_algo_from_name (a->algo, &algo, error))
    {
      g_prefix_error (error, "--algo: ");
      return FALSE;
    }
  if (!(a->comm_timeout > 0) || a->comm_timeout > 86400 * 7)
    {
      g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                   "--comm-timeout %g: seconds above 0 (and below a week) are needed",
                   a->comm_timeout);
      return FALSE;
    }
  if (!(a->bucket_mb > 0) || a->bucket_mb > 65536)
    {
      g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                   "--bucket-mb %g: a size above 0 and up to 65536 MB is needed", a->bucket_mb);
      return FALSE;
    }
  if (a->compress && strcmp (a->compress, "none") != 0)
    {
      g_autoptr (tw_compressor) z = tw_compressor_new (a->compress, error);
      if (z == NULL)
        {
          g_prefix_error (error, "--compress: ");
          return FALSE;
        }
      if (a->local_sgd > 0 || a->async_staleness >= 0)
        {
          g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                       "--compress compresses the gradients of synchronous training; --local-sgd "
                       "and --async send none to compress");
          return FALSE;
        }
    }
  if (twb_dist_is_pipeline (a)
      && (a->local_sgd > 0 || a->async_staleness >= 0
          || (a->compress && strcmp (a->compress, "none") != 0)))
    {
      g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                   "%s goes with --parallel data (a pipeline's stages exchange activations, "
                   "not whole-model gradients)",
                   a->local_sgd > 0 ? "--local-sgd" : a->async_staleness >= 0 ? "--async"
                                                                           : "--compress");
      return FALSE;
    }
  if (a->shard_optimizer
      && (twb_dist_is_pipeline (a) || a->local_sgd > 0 || a->async_staleness >= 0
          || (a->compress && strcmp (a->compress, "none") != 0)))
    {
      g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                   "--shard-optimizer shards the optimizer of synchronous data-parallel "
                   "training; it does not go with %s",
                   twb_dist_is_pipeline (a) ? "--parallel pipeline or hybrid"
                   : a->local_sgd > 0      ? "--local-sgd"
                   : a->async_staleness >= 0 ? "--async"
                                             : "--compress");
      return FALSE;
    }
  if (a->local_sgd > 0 && a->async_staleness >= 0)
    {
      g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                   "--local-sgd and --async are two update strategies: choose one");
      return FALSE;
    }
  if (a->async_staleness >= 0 && a->ranks_set && a->ranks < 2)
    {
      g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                   "--async needs --ranks 2 or more: a parameter server (the last rank) and "
                   "workers");
      return FALSE;
    }
  if (a->async_staleness >= 0 && a->ranks > 2 && batch > 0 && a->ranks - 1 > batch)
    {
      g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                   "--ranks %d --async: a batch of %" G_GINT64_FORMAT " samples cannot be split "
                   "into %d workers' shards", a->ranks, batch, a->ranks - 1);
      return FALSE;
    }
  if (a->ranks_per_node < 0)
    {
      g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                   "--ranks-per-node %d: a count of 1 or more is needed", a->ranks_per_node);
      return FALSE;
    }
  return TRUE;
}

gboolean
twb_dist_wanted (const twb_dist_args *a)
{
  return a->ranks > 1 || tw_comm_launched ();
}

/* mpirun's own stderr, passed on with its framed notices put in a line:
 * "rank 1 (on host) was killed by signal 9 (Killed)"; the notices that only
 * say a rank failed (which that rank's own line has said) are dropped. */
static void
flush_banner (GPtrArray *lines)
{
  g_autofree char *all = g_strjoinv ("\n", (char **) lines->pdata);
  int rank = -1, sig = -1;
  char node[256] = "", signame[64] = "";
  const char *n = strstr (all, "noticed that process rank ");
  if (n && sscanf (n, "noticed that process rank %d with PID %*d on node %255s exited on signal "
                   "%d (%63[^)])", &rank, node, &sig, signame) >= 3)
    g_printerr ("twb: rank %d (on %s) was killed by signal %d%s%s%s; the other ranks were "
                "stopped\n", rank, node, sig, signame[0] ? " (" : "", signame,
                signame[0] ? ")" : "");
  else if (strstr (all, "Primary job") || strstr (all, "exited with non-zero status")
           || strstr (all, "MPI_ABORT was invoked") || strstr (all, "exiting improperly")
           || strstr (all, "returned\na non-zero exit code"))
    ;
  else
    g_printerr ("%s\n", all);
  g_ptr_array_set_size (lines, 0);
}

static void
filter_mpirun_stderr (int fd)
{
  FILE *in = fdopen (dup (fd), "r");
  if (in == NULL)
    return;
  g_autoptr (GPtrArray) banner = g_ptr_array_new_with_free_func (g_free);
  gboolean inside = FALSE;
  char *buf = NULL;
  size_t cap = 0;
  ssize_t len;
  while ((len = getline (&buf, &cap, in)) >= 0)
    {
      if (len > 0 && buf[len - 1] == '\n')
        buf[--len] = '\0';
      gboolean rule = len >= 20 && strspn (buf, "-") == (size_t) len;
      if (rule)
        {
          if (inside)
            {
              g_ptr_array_add (banner, NULL);
              flush_banner (banner);
            }
          inside = !inside;
        }
      else if (inside)
        g_ptr_array_add (banner, g_strdup (buf));
      else
        g_printerr ("%s\n", buf);
    }
  free (buf);
  fclose (in);
  if (banner->len)
    {
      g_ptr_array_add (banner, NULL);
      flush_banner (banner);
    }
}

int
twb_dist_launch (const twb_dist_args *a, char **command_argv)
{
  g_autofree char *mpirun = g_find_program_in_path ("mpirun");
  if (mpirun == NULL)
    mpirun = g_find_program_in_path ("mpiexec");
  if (mpirun == NULL)
    {
      g_printerr ("twb: --ranks %d needs Open MPI's mpirun, which is not on PATH (Debian: "
                  "apt-get install openmpi-bin)\n", a->ranks);
      return 2;
    }
  g_autofree char *self = g_file_read_link ("/proc/self/exe", NULL);
  if (self == NULL)
    self = g_strdup (command_argv[0]);
  g_autoptr (GPtrArray) args = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (args, g_strdup (mpirun));
  g_ptr_array_add (args, g_strdup ("-np"));
  g_ptr_array_add (args, g_strdup_printf ("%d", a->ranks));
  /* More ranks than cores is what a laptop or CI does to try a run: MPI
   * refuses it unless told, and its binding would pin every rank (and its
   * communication thread) to one core. */
  if (a->ranks > (int) g_get_num_processors ())
    g_ptr_array_add (args, g_strdup ("--oversubscribe"));
  g_ptr_array_add (args, g_strdup ("--bind-to"));
  g_ptr_array_add (args, g_strdup ("none"));
  if (geteuid () == 0)
    g_ptr_array_add (args, g_strdup ("--allow-run-as-root"));
  g_ptr_array_add (args, g_strdup (self));
  for (int i = 0; command_argv[i]; i++)
    g_ptr_array_add (args, g_strdup (command_argv[i]));
  g_ptr_array_add (args, NULL);

  g_auto (GStrv) env = g_get_environ ();
  env = g_environ_setenv (env, "OMPI_ALLOW_RUN_AS_ROOT", "1", FALSE);
  env = g_environ_setenv (env, "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", FALSE);
  /* Open MPI's help messages unaggregated: when every rank aborts at once
   * (an error they all hit), aggregating them races in mpirun (seen:
   * "Data unpack would read past end of buffer" and a rank's crash
   * report); the launcher drops those banners anyway. */
  env = g_environ_setenv (env, "OMPI_MCA_orte_base_help_aggregate", "0", FALSE);
  env = g_environ_setenv (env, "TWB_LAUNCHED_RANKS", "1", TRUE);
  g_autoptr (GError) error = NULL;
  GPid pid;
  int err_fd = -1;
  if (!g_spawn_async_with_pipes (NULL, (char **) args->pdata, env, G_SPAWN_DO_NOT_REAP_CHILD,
                                 NULL, NULL, &pid, NULL, NULL, &err_fd, &error))
    {
      g_printerr ("twb: starting %s: %s\n", mpirun, error->message);
      return 1;
    }
  filter_mpirun_stderr (err_fd);
  close (err_fd);
  int status = 0;
  while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
    ;
  g_spawn_close_pid (pid);
  if (WIFEXITED (status))
    return WEXITSTATUS (status) == 0 ? 0 : WEXITSTATUS (status) == 2 ? 2 : 1;
  g_printerr ("twb: mpirun ended by signal %d\n", WIFSIGNALED (status) ? WTERMSIG (status) : 0);
  return 1;
}

static int printerr_rank;

static void
rank_printerr (const char *msg)
{
  /* Every line of a non-zero rank says whose it is. */
  g_auto (GStrv) lines = g_strsplit (msg, "\n", -1);
  GString *out = g_string_new (NULL);
  for (int i = 0; lines[i]; i++)
    {
      if (lines[i][0] == '\0' && lines[i + 1] == NULL)
        break;
      g_string_append_printf (out, "rank %d: %s\n", printerr_rank, lines[i]);
    }
  fputs (out->str, stderr);
  fflush (stderr);
  g_string_free (out, TRUE);
}

tw_comm *
twb_dist_start (const twb_dist_args *a)
{
  tw_comm_options o;
  tw_comm_options_init (&o);
  if (a->algo)
    tw_algo_from_name (a->algo, &o.algo, NULL);
  o.timeout_s = a->comm_timeout;
  o.ranks_per_node = a->ranks_per_node;
  g_autoptr (GError) error = NULL;
  tw_comm *c = tw_comm_new_mpi (&o, &error);
  if (c == NULL)
    {
      twb_print_error (NULL, error);
      return NULL;
    }
  if (tw_comm_rank (c) != 0)
    {
      printerr_rank = tw_comm_rank (c);
      g_set_printerr_handler (rank_printerr);
    }
  tw_comm_dump_on_sigusr1 (c);
  if (a->ranks_set && a->ranks != tw_comm_size (c))
    {
      if (tw_comm_rank (c) == 0)
        g_printerr ("twb: --ranks %d, but mpirun started %d ranks\n", a->ranks,
                    tw_comm_size (c));
      tw_comm_free (c);
      return NULL;
    }
  return c;
}

void
twb_dist_finish (tw_comm *c, int status)
{
  if (c == NULL)
    return;
  if (status != 0 && !tw_comm_is_broken (c) && tw_comm_size (c) > 1)
    tw_comm_abort (c, status);
  tw_comm_free (c);
}

void
twb_dist_print_failure (tw_comm *c)
{
  if (c == NULL || !tw_comm_is_broken (c))
    return;
  g_autofree char *d = tw_comm_flight_dump (c, 6);
  g_printerr ("its last collectives and messages, oldest first:\n%s", d);
}
