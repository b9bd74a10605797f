/* twb-dist.h — the distributed options of twb train and twb profile
 * (--ranks, --parallel, --algo, --comm-timeout, --bucket-mb,
 * --ranks-per-node; twb train's --stages, --micro-batches, --schedule), the launcher that starts mpirun when the user did
 * not, and what a rank does before training. */
#pragma once

#include "engine/train.h"

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

struct tw_comm;

typedef struct
{
  int ranks;                  /* --ranks N (0: not given) */
  gboolean ranks_set;
  char *parallel;             /* --parallel (NULL: data) */
  char *algo;                 /* --algo (NULL: mpi) */
  double comm_timeout;        /* --comm-timeout seconds (default 60) */
  double bucket_mb;           /* --bucket-mb (default 25) */
  int ranks_per_node;         /* --ranks-per-node (0: the real nodes) */
  int local_sgd;              /* --local-sgd H (0: off) */
  int async_staleness;        /* --async K (-1: off) */
  char *compress;             /* --compress SPEC (NULL: none) */
  gboolean shard_optimizer;   /* --shard-optimizer (ZeRO-1) */
  int stages;                 /* --stages S (0: not given; hybrid's default 2) */
  int micro_batches;          /* --micro-batches M (0: not given; default 4) */
  char *schedule;             /* --schedule (NULL: 1f1b) */
} twb_dist_args;

void twb_dist_args_init (twb_dist_args *a);
void twb_dist_args_clear (twb_dist_args *a);
/* Every option checked (batch: the global batch, 0 unknown); the error
 * names the option. */
gboolean twb_dist_args_check (const twb_dist_args *a, int64_t batch, GError **error);
/* --parallel pipeline or hybrid. */
gboolean twb_dist_is_pipeline (const twb_dist_args *a);
/* The pipeline options for a job of `ranks` ranks (checked by
 * twb_dist_args_check): stages = ranks for pipeline, --stages (default 2)
 * for hybrid. */
void twb_dist_pipeline_options (const twb_dist_args *a, int ranks, tw_pipeline_options *out);
/* One line saying how the graph (inferred) is cut: "pipeline: 2 stages ×
 * 1 replica, 4 micro-batches, 1f1b; stage 0: fc1, relu1 (51% of the
 * FLOPs); stage 1: ...".  NULL when it cannot be (the run reports why).
 * Caller frees. */
char *twb_dist_pipeline_describe (const tw_graph *g, const tw_pipeline_options *o, int ranks);
/* Whether this run is distributed: --ranks above 1, or started by mpirun. */
gboolean twb_dist_wanted (const twb_dist_args *a);
/* Run `mpirun -np N` on this program with the same subcommand and
 * arguments (command_argv: "train", "MODEL.json", ...; adding what running
 * as root or oversubscribing needs) and wait: the exit status for the
 * command (0, 1, or 2 for usage). */
int twb_dist_launch (const twb_dist_args *a, char **command_argv);
/* Inside a rank: the communicator over the job (NULL, error printed).
 * A non-zero rank's every g_printerr line is prefixed "rank R: " from
 * here on; SIGUSR1 prints the rank's last collectives. */
struct tw_comm *twb_dist_start (const twb_dist_args *a);
/* The end of a rank's run with its exit status: a clean end finalises MPI;
 * a failure of this rank alone ends the whole job at once (the others
 * would otherwise wait for the time-out); after a communication failure
 * the process just exits.  NULL-safe. */
void twb_dist_finish (struct tw_comm *c, int status);
/* After a communication failure: the rank's last collectives on stderr. */
void twb_dist_print_failure (struct tw_comm *c);

G_END_DECLS
