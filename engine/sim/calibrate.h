/* calibrate.h — the simulator calibrated on this machine: a profile (JSON,
 * under the user's data folder) of what this machine's ranks take —
 * each node of a model measured at the batches a run gives its ranks, the
 * update, a step's fixed cost — and of its MPI links: a message's latency
 * and bandwidth from a ping-pong, each collective's fixed cost (the
 * communication thread's hand-off) from small all-reduces, and, ranks
 * stepping in lockstep, how much slower each computes and what the step's
 * closing all-reduce costs, at each rank count measured.  tw_sim_profile_apply turns it into the simulator's
 * options, so that `twb simulate MODEL --ranks 2 --device local` predicts
 * `twb train MODEL --ranks 2` here.
 *
 *   g_autoptr (tw_sim_profile) p = tw_sim_profile_new ("local");
 *   tw_sim_calibrate_compute (p, model, data, 16, 20, &error);     // one process
 *   tw_sim_calibrate_links (p, comm, &error);                      // collective, every rank
 *   tw_sim_calibrate_contention (p, model, data, 20, comm, &error); // the same ranks
 *   tw_sim_profile_save (p, tw_sim_profile_path ("local"), &error);
 *
 * GTK-free. */
#pragma once

#include "engine/comm/comm.h"
#include "engine/data.h"
#include "engine/model.h"
#include "engine/sim/step.h"

G_BEGIN_DECLS

typedef struct tw_sim_profile tw_sim_profile;

tw_sim_profile *tw_sim_profile_new (const char *name);
void tw_sim_profile_free (tw_sim_profile *p);
/* NAME.json in the user's data folder (twb/sim/); caller frees. */
char *tw_sim_profile_path (const char *name);
/* A name without a slash is looked up there, else read as a path.  Errors
 * name the file and the member. */
tw_sim_profile *tw_sim_profile_load (const char *name_or_path, GError **error);
gboolean tw_sim_profile_save (const tw_sim_profile *p, const char *path, GError **error);

/* Each node's forward and backward and the update of the model at batch
 * rows (median over `steps` steps after two of warm-up, eager, one
 * thread), the step's fixed cost, and the roofline fitted to them for
 * other models. */
gboolean tw_sim_calibrate_compute (tw_sim_profile *p, const tw_model *m, const tw_dataset *train,
                                   int64_t batch, int steps, GError **error);
/* Collective (every rank of comm): a ping-pong between ranks 0 and 1
 * (8 B to 4 MB) fits the message latency and bandwidth; small all-reduces
 * (the communicator's algorithm) give the fixed cost of a collective at
 * this rank count.  Rank 0's profile gets them. */
gboolean tw_sim_calibrate_links (tw_sim_profile *p, tw_comm *comm, GError **error);

/* Collective, after tw_sim_calibrate_links on the same profile and comm
 * (the batch: that of tw_sim_calibrate_compute's latest entry for m): rank
 * 0 takes m's steps alone, then every rank takes 2·steps of them at once
 * in lockstep (an 8-byte all-reduce after each, as data parallel's ranks
 * are).  Rank 0's compute in lockstep over its compute alone is how much
 * slower a rank computes when this many share the machine (its cores, its
 * memory, the others' polling); the first all-reduce's time beyond its
 * ring is what ending a step in lockstep costs (ranks arrive apart: the
 * first waits for the last, and wakes late), and the second's, right after
 * with the ranks aligned, replaces the collective's fixed cost.  Both are
 * the model's (at that batch), kept in its entry; rank 0's figures. */
gboolean tw_sim_calibrate_contention (tw_sim_profile *p, const tw_model *m,
                                      const tw_dataset *train, int steps, tw_comm *comm,
                                      GError **error);

int tw_sim_profile_cores (const tw_sim_profile *p);
/* from's collective costs into p, and its models' lockstep figures into
 * p's same models (replacing those of the same rank counts), and its link
 * too when take_link. */
void tw_sim_profile_merge_links (tw_sim_profile *p, const tw_sim_profile *from, gboolean take_link);
/* The collective cost measured at the rank count nearest `ranks` (0: none). */
double tw_sim_profile_collective_overhead (const tw_sim_profile *p, int ranks);
/* A rank's compute at `ranks` ranks over one alone's: measured at that
 * count, else the nearest count's factor over its share of the cores (ranks
 * / cores when they outnumber them) at this count's share; 1 at one rank. */
double tw_sim_profile_compute_scale (const tw_sim_profile *p, const char *model, int64_t batch,
                                     int ranks);
/* What ending a step in lockstep costs at `ranks` ranks (measured at the
 * nearest count; 0 at one rank or when never measured).  Both are the
 * model's at that batch (ranks wait as long as their steps vary). */
double tw_sim_profile_lockstep (const tw_sim_profile *p, const char *model, int64_t batch,
                                int ranks);
/* The one-way message latency (s) and bandwidth (B/s) measured; FALSE when
 * no link was. */
gboolean tw_sim_profile_link (const tw_sim_profile *p, double *latency, double *bandwidth);
/* The simulator's options and device for a run of `ranks` ranks of model
 * `model` (its name) whose ranks each take `batch` rows: the nodes measured
 * at that batch when the profile has them (else the fitted roofline), the
 * collective cost measured at the nearest rank count, the cores shared
 * when ranks exceed them.  *topo: one node of `ranks` devices on a switch
 * with the measured link (caller frees).  FALSE (error) when the profile
 * has no link but ranks > 1. */
gboolean tw_sim_profile_apply (const tw_sim_profile *p, const char *model, int64_t batch,
                               int ranks, tw_sim_dp_options *o, tw_device_profile *d,
                               tw_topo **topo, GError **error);
/* Whether the profile measured `model`'s nodes at `batch`. */
gboolean tw_sim_profile_has_model (const tw_sim_profile *p, const char *model, int64_t batch);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_sim_profile, tw_sim_profile_free)

G_END_DECLS
