/* net.h — the simulator's network: a topology of devices, switches and
 * links, and a flow-level simulation of messages over it (each message a
 * flow along its route; flows that share a link share its bandwidth,
 * max-min fairly), with the collectives decomposed into their algorithms'
 * point-to-point messages so that ring, tree, parameter server and
 * hierarchical differ for the reasons they do on a real network.
 *
 *   g_autoptr (tw_topo) t = tw_topo_cluster (2, 8, "nvlink+ib", &error);
 *   g_autoptr (tw_netsim) s = tw_netsim_new (t);
 *   int last[16]; for (int r = 0; r < 16; r++) last[r] = -1;   // -1: time 0
 *   tw_sim_allreduce (s, TW_ALGO_RING, NULL, 16, 64e6, 0, last);
 *   tw_netsim_run (s, &error);
 *   double t_end = tw_netsim_end (s, last[0]);
 *
 * Times are seconds, sizes bytes, bandwidths bytes per second (each
 * direction of a full-duplex link on its own).  GTK-free. */
#pragma once

#include "engine/comm/comm.h"

#include <glib.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

#define TW_SIM_ERROR (tw_sim_error_quark ())
GQuark tw_sim_error_quark (void);

typedef enum
{
  TW_SIM_ERROR_TOPOLOGY,      /* malformed, disconnected, a link without bandwidth */
  TW_SIM_ERROR_ARG,
} tw_sim_error_code;

typedef enum
{
  TW_LINK_NVLINK,
  TW_LINK_PCIE,
  TW_LINK_INFINIBAND,
  TW_LINK_ROCE,
  TW_LINK_ETHERNET,
  TW_LINK_SHM,                /* processes of one machine (shared memory) */
  TW_LINK_OTHER,
  TW_LINK_N_KINDS
} tw_link_kind;

const char *tw_link_kind_name (tw_link_kind k);         /* "nvlink", ... */
gboolean tw_link_kind_from_name (const char *name, tw_link_kind *out);
/* A link class's default bandwidth (bytes/s, one direction) and latency (s);
 * the sources are cited in net.c. */
void tw_link_kind_defaults (tw_link_kind k, double *bandwidth, double *latency);

typedef struct tw_topo tw_topo;

tw_topo *tw_topo_new (void);
void tw_topo_free (tw_topo *t);
/* A vertex: a device (a rank runs on it: devices are ranks 0, 1, ... in the
 * order they are added) with the node it belongs to, or a switch (node
 * −1).  Returns its index. */
int tw_topo_add_device (tw_topo *t, const char *name, int node);
int tw_topo_add_switch (tw_topo *t, const char *name);
/* A full-duplex link between vertices a and b: bandwidth each way.
 * Returns its index. */
int tw_topo_add_link (tw_topo *t, int a, int b, double bandwidth, double latency,
                      tw_link_kind kind, const char *name);
/* Every device reaches every other, every link has a bandwidth above 0
 * and a latency of 0 or more; the error names the link or devices. */
gboolean tw_topo_check (tw_topo *t, GError **error);

/* nodes × devices_per_node devices, by a preset:
 *   nvlink+ib    each node's devices on an NVSwitch (NVLink), each device
 *                its own InfiniBand NIC to one core switch (rails, as HGX)
 *   nvlink+roce  the same over RoCE
 *   pcie+eth     each node's devices on a PCIe switch, one Ethernet NIC a
 *                node (shared by its devices) to the core switch
 *   shm+eth      CPU processes: shared memory inside a node, Ethernet
 *                between nodes (one NIC a node) */
tw_topo *tw_topo_cluster (int nodes, int devices_per_node, const char *preset, GError **error);
/* A topology from JSON:
 *   {"vertices": [{"name": "gpu0", "device": true, "node": 0},
 *                 {"name": "sw0"}, ...],
 *    "links": [{"a": "gpu0", "b": "sw0", "kind": "nvlink",
 *               "gbytes_per_s": 450, "latency_us": 0.7}, ...]}
 * A link's bandwidth and latency default to its kind's.  `what` (a file
 * name) prefixes errors, which name the vertex or link. */
tw_topo *tw_topo_from_json (JsonNode *root, const char *what, GError **error);
tw_topo *tw_topo_load (const char *path, GError **error);

int tw_topo_n_devices (const tw_topo *t);
int tw_topo_n_links (const tw_topo *t);
int tw_topo_node_of (const tw_topo *t, int rank);
const char *tw_topo_link_name (const tw_topo *t, int link);
tw_link_kind tw_topo_link_kind (const tw_topo *t, int link);
double tw_topo_link_bandwidth (const tw_topo *t, int link);
/* The route from rank a to rank b: directed links (2·link for a → b in the
 * link's own direction, 2·link + 1 against it), fewest seconds for a
 * megabyte (latency + 1 MB / bandwidth, summed).  Borrowed; NULL (n 0)
 * when a == b. */
const int *tw_topo_route (tw_topo *t, int a, int b, int *n);
/* The route's latency (summed) and bandwidth (its slowest link). */
void tw_topo_route_cost (tw_topo *t, int a, int b, double *latency, double *bandwidth);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_topo, tw_topo_free)

/* ---- the flow simulation ------------------------------------------------ */

typedef struct tw_netsim tw_netsim;

/* On t (borrowed: it must outlive the simulation). */
tw_netsim *tw_netsim_new (tw_topo *t);
void tw_netsim_free (tw_netsim *s);
/* A message of `bytes` from rank src to rank dst.  It is ready `delay`
 * seconds after the last of deps (message ids; none: at time 0) ends,
 * starts moving its bytes after its route's latency, and ends when they
 * are all across, at the rate max-min fair sharing gives it on its links.
 * src == dst: an event on that rank taking `delay` (compute, a reduction,
 * a join of several deps).  Returns its id. */
int tw_netsim_add (tw_netsim *s, int src, int dst, double bytes, double delay, const int *deps,
                   int n_deps);
/* Simulate every message added.  FALSE when a dependency names a message
 * not added before it (it cannot be), or on bad sizes. */
gboolean tw_netsim_run (tw_netsim *s, GError **error);
double tw_netsim_start (const tw_netsim *s, int msg);   /* when it was ready */
double tw_netsim_end (const tw_netsim *s, int msg);
double tw_netsim_makespan (const tw_netsim *s);
int tw_netsim_count (const tw_netsim *s);
/* Bytes that crossed link (both directions). */
double tw_netsim_link_bytes (const tw_netsim *s, int link);
/* The time the link carried at least one flow, its busiest direction. */
double tw_netsim_link_busy (const tw_netsim *s, int link);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_netsim, tw_netsim_free)

/* ---- collectives as messages ---------------------------------------------
 *
 * Over p members (members[i] is a rank; NULL: ranks 0 … p−1).  last[i] is,
 * on entry, the event after which member i takes part (−1: time 0) and, on
 * return, the event at which it is done (its result there and its sends
 * gone).  gamma: seconds per byte reduced (the reduction's compute).  The
 * messages are those of engine/comm/algo.c's algorithms, whose α–β costs
 * are written there; TW_ALGO_MPI is taken as the ring (MPI's choice for
 * large buffers). */
void tw_sim_allreduce (tw_netsim *s, tw_algo algo, const int *members, int p, double bytes,
                       double gamma, int *last);
/* Ring reduce-scatter (bytes: the whole buffer, each member keeping
 * bytes/p) and all-gather (bytes: the result). */
void tw_sim_reduce_scatter (tw_netsim *s, const int *members, int p, double bytes, double gamma,
                            int *last);
void tw_sim_allgather (tw_netsim *s, const int *members, int p, double bytes, int *last);
/* Binary-tree broadcast from members[root]. */
void tw_sim_broadcast (tw_netsim *s, const int *members, int p, int root, double bytes, int *last);

/* The time of one all-reduce over p members (NULL: ranks 0 … p−1) that
 * all start together, without a message per step of a ring: a ring's
 * steps all have the same pattern (member i to i + 1, bytes/p each), so
 * one step is simulated (contention included) and counted 2(p−1) times;
 * trees and the parameter server (O(p) messages) are simulated whole;
 * hierarchical is its three phases so.  Equal to tw_sim_allreduce's
 * simulation when every member starts at once; fast enough for thousands
 * of members.  The bytes each link carried are added to link_bytes
 * [tw_topo_n_links] (NULL: not wanted).  NaN (error set) on a bad
 * topology or member. */
double tw_sim_allreduce_time (tw_topo *t, tw_algo algo, const int *members, int p, double bytes,
                              double gamma, double *link_bytes, GError **error);

G_END_DECLS
