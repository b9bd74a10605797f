/* et.h — MLCommons Chakra execution traces (the workload format ASTRA-sim
 * reads) in and out of the simulator.
 *
 *   // out: rank 0's simulated step (the ranks are identical), one file a rank
 *   tw_chakra_write (spans, rank, ranks, "lenet5", "out/lenet5.0.et", &error);
 *   // in: any Chakra trace of one rank, simulated on a topology
 *   tw_chakra_result r;
 *   tw_chakra_simulate ("out/lenet5.0.et", topo, 64, TW_ALGO_RING, gamma, &r, &error);
 *
 * A file is a GlobalMetadata message and then Node messages, each preceded
 * by its length as a varint (protobuf's delimited form).  We write one
 * COMP_NODE per forward, backward and update and one COMM_COLL_NODE
 * (ALL_REDUCE, comm_size in bytes) per gradient bucket and for the loss:
 * each node's ctrl_deps is the previous node on its resource (the device,
 * or the communication channel), its data_deps what else it waits for (a
 * bucket's all-reduce the backward that finished the bucket); compute
 * nodes carry duration_micros, "num_ops" (FLOPs), "is_cpu_op" false and,
 * for a lossless round trip, "twb_duration_s" (seconds, a double).
 *
 * Reading, the step is simulated as a DAG on two resources, the device
 * and the communication channel, each running one node at a time (the
 * ready one of lowest id first): compute nodes take their duration,
 * collectives the network model's time for their size and kind
 * (tw_sim_allreduce_time; all-gather, reduce-scatter, broadcast and reduce
 * are taken as half an all-reduce of the size, all-to-all as one); what is
 * neither (memory, send/receive nodes) takes its duration_micros, named in
 * a note.  GTK-free. */
#pragma once

#include "engine/sim/net.h"
#include "engine/sim/step.h"

G_BEGIN_DECLS

/* Rank `rank`'s file of a ranks-rank step (spans: tw_sim_span from
 * tw_sim_dp_options.spans; rank 0's stand for every rank's when the fast
 * simulation kept only those), written atomically.  The dependencies are
 * read off the times: each span follows the previous one on its resource
 * (the device, the communication channel) and, when it started later than
 * that one ended, the latest span of the other resource that had ended by
 * then. */
gboolean tw_chakra_write (const GArray *spans, int rank, int ranks, const char *model,
                          const char *path, GError **error);

typedef struct
{
  double step_s;              /* the last node's end */
  double compute_s;           /* compute nodes' durations summed */
  double comm_s;              /* collectives' durations summed */
  int n_compute, n_collective, n_other;
  char *model;                /* from the metadata (ours), or NULL */
  char **notes;               /* NULL-terminated: what was approximated, by name */
} tw_chakra_result;

gboolean tw_chakra_simulate (const char *path, tw_topo *t, int ranks, tw_algo algo, double gamma,
                             tw_chakra_result *out, GError **error);
void tw_chakra_result_clear (tw_chakra_result *r);

G_END_DECLS
