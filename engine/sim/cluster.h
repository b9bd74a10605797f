/* cluster.h — the simulator's train mode: a run of N virtual ranks in this
 * process, each a training session (engine/session.h) on its own thread
 * over the simulator's communicator (tw_comm_new_sim), so that every
 * rank does the real arithmetic on its shard and accuracy under
 * asynchronous updates, compression or local SGD is what it would be;
 * time is virtual: each step takes what the time mode (step.h) predicts
 * for the cluster, so a 64-rank run on 2 cores still reports a 64-rank
 * step time.
 *
 *   tw_sim_cluster_options o;
 *   tw_sim_cluster_options_init (&o);
 *   o.ranks = 8;
 *   o.session.dist.async_staleness = 2;
 *   o.virtual_step_s = predicted.step_s;
 *   g_autoptr (tw_sim_cluster) c = tw_sim_cluster_new (model, &source, &o, &error);
 *   tw_sim_cluster_run (c, &error);
 *   for (;;) { g_autoptr (tw_snapshot) s = tw_sim_cluster_pop (c, -1); ... FINISHED: break; }
 *
 * Rank 0's snapshots are the run's (its metrics are the global batch's,
 * as a real run's rank 0 reports them), with step_ms and samples_per_s in
 * virtual time; the other ranks' are read and dropped.  A rank that fails
 * fails the others at once (the error names it).  The ranks run as
 * threads of one process: up to tens of them (each holds its own copy of
 * the data and the model); they take the cores in turn while they wait
 * for each other.  GTK-free. */
#pragma once

#include "engine/comm/comm.h"
#include "engine/session.h"

G_BEGIN_DECLS

typedef struct
{
  int ranks;                  /* ≥ 1 */
  tw_comm_options comm;       /* algorithm, time-out (the per-rank communicators) */
  tw_session_options session; /* every rank's (its comm is set per rank); dist and
                               * pipeline as for a real run; not owned (borrowed strings) */
  double virtual_step_s;      /* each step's virtual time (> 0), or 0: the real one */
  double virtual_compute_s;   /* of which each rank's compute (its rank_step_ms), or 0 */
  int64_t global_batch;       /* rows a step takes, for samples/s in virtual time */
} tw_sim_cluster_options;

void tw_sim_cluster_options_init (tw_sim_cluster_options *o);

typedef struct tw_sim_cluster tw_sim_cluster;

/* Every rank's session over source (tw_session_new_deferred: nothing slow
 * here).  NULL with an error for bad options. */
tw_sim_cluster *tw_sim_cluster_new (const tw_model *model, const tw_session_source *source,
                                    const tw_sim_cluster_options *o, GError **error);
void tw_sim_cluster_free (tw_sim_cluster *c);
gboolean tw_sim_cluster_run (tw_sim_cluster *c, GError **error);
/* Stops every rank (those waiting for a stopped one are released); the
 * run then ends STOPPED. */
void tw_sim_cluster_stop (tw_sim_cluster *c);
/* Rank 0's next snapshot (as tw_session_pop).  The FINISHED one carries
 * the first error of any rank. */
tw_snapshot *tw_sim_cluster_pop (tw_sim_cluster *c, gint64 timeout_us);
/* Rank r's session, for its trainer after FINISHED.  Borrowed. */
tw_session *tw_sim_cluster_session (tw_sim_cluster *c, int r);
int tw_sim_cluster_ranks (const tw_sim_cluster *c);
/* Virtual seconds the run has taken so far (steps × virtual_step_s, or
 * the real step times when none was given). */
double tw_sim_cluster_virtual_s (tw_sim_cluster *c);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_sim_cluster, tw_sim_cluster_free)

G_END_DECLS
