/* comm.h — the communicator: collectives and point-to-point messages
 * between the ranks of a distributed run.  GTK-free.
 *
 * One interface, several backends: MPI today (CPU processes on one or many
 * machines, started by mpirun), NCCL and the simulator later.  Every call
 * is asynchronous: it returns a completion handle at once and the
 * communicator's own thread does the work, so that a bucket's all-reduce
 * runs while the caller's backward goes on.  The caller waits (or tests)
 * before it touches the buffer again.
 *
 *   g_autoptr (tw_comm) c = tw_comm_new_mpi (&opts, &error);   // inside mpirun
 *   tw_coll_tag tag = { .what = "bucket 0", .params = names };
 *   tw_comm_req *r = tw_comm_allreduce (c, buf, n, TW_F32, TW_REDUCE_SUM, &tag);
 *   ... compute ...
 *   if (!tw_comm_wait (c, r, &error))          // names the rank that never came
 *     ...;
 *   tw_comm_req_free (r);
 *
 * Order.  Collectives start in the order they are posted, one at a time on
 * the communication thread, and every rank must post the same collectives
 * in the same order (as MPI requires).  Each one gets the communicator's
 * next sequence number (1, 2, ...), the same on every rank, which is how a
 * trace matches the same collective across ranks.  Sends and receives
 * between two ranks are matched in the order they are posted.
 *
 * Algorithms (tw_comm_options.algo) apply to all-reduce: "mpi" is MPI's own
 * MPI_Iallreduce; "ring", "tree", "ps" and "hier" are ours over MPI's
 * point-to-point (engine/comm/algo.c, each with its α–β cost beside it), so
 * that users can compare them.  The other collectives use MPI's own.
 *
 * Time-outs.  A collective or message that has not completed timeout_s
 * seconds after it started fails on every rank that waits for it; the
 * ranks still alive then tell each other how far they got, and the error
 * names the rank that never arrived, the collective's sequence number,
 * kind and size.  After such a failure the communicator is broken: every
 * later call fails at once, and tw_comm_free does not finalise MPI (the
 * process should exit; mpirun then ends the others).
 *
 * Events.  With a bus set (tw_comm_set_bus), each call publishes a
 * TW_EV_COLLECTIVE begin and end (engine/events.h) with ev->coll set, on
 * the thread that waits for it (tw_comm_wait / a test that finds it done),
 * never on the communication thread; the times in the events are those the
 * communication thread measured.
 *
 * Ownership: handles are the caller's (tw_comm_req_free, which waits for
 * a handle still in flight).  Buffers are borrowed until the handle
 * completes.  Tags are copied.
 */
#pragma once

#include "engine/events.h"
#include "engine/tensor.h"

G_BEGIN_DECLS

#define TW_COMM_ERROR (tw_comm_error_quark ())
GQuark tw_comm_error_quark (void);

typedef enum
{
  TW_COMM_ERROR_INIT,         /* MPI could not start, or is not there */
  TW_COMM_ERROR_TIMEOUT,      /* a rank never arrived (the message names it) */
  TW_COMM_ERROR_FAILED,       /* the library reported an error */
  TW_COMM_ERROR_BROKEN,       /* an earlier failure broke the communicator */
  TW_COMM_ERROR_ARG,          /* a bad option or argument */
  TW_COMM_ERROR_MISMATCH,     /* ranks disagree (model, options) */
  TW_COMM_ERROR_CANCELLED,    /* tw_comm_cancel withdrew the call */
} tw_comm_error_code;

typedef enum
{
  TW_COLL_ALLREDUCE,
  TW_COLL_REDUCE_SCATTER,
  TW_COLL_ALLGATHER,
  TW_COLL_BROADCAST,
  TW_COLL_SEND,
  TW_COLL_RECV,
  TW_COLL_BARRIER,
  TW_COLL_N_KINDS
} tw_coll_kind;

const char *tw_coll_kind_name (tw_coll_kind kind);   /* "allreduce", "send", ... */

typedef enum
{
  TW_ALGO_MPI,
  TW_ALGO_RING,
  TW_ALGO_TREE,
  TW_ALGO_PS,
  TW_ALGO_HIER,
  TW_ALGO_N
} tw_algo;

const char *tw_algo_name (tw_algo algo);             /* "mpi", "ring", ... */
/* FALSE, with an error listing the known ones, for an unknown name. */
gboolean tw_algo_from_name (const char *name, tw_algo *out, GError **error);

typedef enum
{
  TW_REDUCE_SUM,
  TW_REDUCE_MAX,
  TW_REDUCE_MIN,
} tw_reduce_op;

/* What a call carries, for events and traces.  Copied by each call. */
typedef struct
{
  const char *what;                /* "bucket 3", "activations of stage 1", or NULL */
  const char *const *params;       /* parameter names carried, NULL-terminated, or NULL */
} tw_coll_tag;

/* ev->coll of a TW_EV_COLLECTIVE event.  Lives as long as the handle. */
typedef struct tw_coll_info
{
  tw_coll_kind kind;
  tw_algo algo;                    /* all-reduce's algorithm; TW_ALGO_MPI for the rest */
  guint64 seq;                     /* per-communicator sequence number of collectives (1, 2,
                                    * ...; the same on every rank); 0 for send and recv */
  guint64 msg_seq;                 /* send/recv: the n-th message (1-based) between this pair of
                                    * ranks in this direction: a send and its receive share it */
  int rank, size;                  /* this rank, the communicator's size */
  int peer;                        /* send: destination; recv: source; broadcast: root; else -1 */
  gint64 bytes;                    /* the payload: this rank's buffer (all-reduce, broadcast,
                                    * send, recv), its input (reduce-scatter, all-gather) */
  gint64 sent, received;           /* bytes this rank actually put on and took off the wire */
  char *what;                      /* from the tag (may be NULL) */
  char **params;                   /* from the tag (may be NULL) */
  gint64 t_post, t_start, t_end;   /* posted by the caller; started and ended on the comm thread */
} tw_coll_info;

typedef struct tw_comm tw_comm;
typedef struct tw_comm_req tw_comm_req;

typedef struct
{
  tw_algo algo;                    /* all-reduce's algorithm (default TW_ALGO_MPI) */
  double timeout_s;                /* default 60; > 0 */
  int ranks_per_node;              /* "hier": ranks per (pretend) node; 0: the real nodes
                                    * (MPI_COMM_TYPE_SHARED) */
  int ps_rank;                     /* "ps": the rank that serves (default: the last) */
} tw_comm_options;

void tw_comm_options_init (tw_comm_options *o);

/* Whether this process was started by mpirun (or a compatible launcher)
 * with more than one rank: its environment says so. */
gboolean tw_comm_launched (void);

/* A communicator over every rank of the job (MPI_COMM_WORLD), started on
 * its own thread (MPI_Init_thread happens there).  Only one per process.
 * NULL with TW_COMM_ERROR_INIT when MPI cannot start. */
tw_comm *tw_comm_new_mpi (const tw_comm_options *options, GError **error);
/* The simulator's virtual ranks (engine/comm/sim.c): size ranks that are
 * threads of this process, each with its communicator from
 * tw_comm_new_sim (its rank's, made once, used from that rank's thread).
 * The calls behave as MPI's do (the same numbering, splits, events,
 * flight recorder, time-outs naming the rank that never came); a
 * collective's arithmetic is done in rank order by the last rank to post
 * it, so results do not depend on the threads' timing; a send completes
 * at once (its payload copied).  The world outlives its communicators:
 * free them first (tw_comm_free), then the world. */
typedef struct tw_sim_world tw_sim_world;
tw_sim_world *tw_sim_world_new (int size);
void tw_sim_world_free (tw_sim_world *w);
int tw_sim_world_size (const tw_sim_world *w);
/* Rank rank's communicator (options as tw_comm_new_mpi's; ranks_per_node
 * only names pretend nodes).  Never fails. */
tw_comm *tw_comm_new_sim (tw_sim_world *w, int rank, const tw_comm_options *options);
/* Rank rank failed on its own (message says why): every call in flight
 * on every rank, and every later one, fails naming it, so that the other
 * ranks' threads end at once instead of at the time-out. */
void tw_sim_world_fail (tw_sim_world *w, int rank, const char *message);
/* Waits for what is in flight, finalises (unless broken) and frees.  A
 * communicator from tw_comm_split: nothing (it goes with its owner). */
void tw_comm_free (tw_comm *c);
/* A communicator over the ranks of c that pass the same color (key orders
 * them; a negative color: none, NULL is returned without an error), as
 * MPI_Comm_split: for hybrid parallelism, the ranks of one pipeline stage
 * across replicas.  Collective over c (every rank calls it, in the same
 * order as c's other collectives).  Its calls run on c's communication
 * thread, its collectives have their own sequence numbers, its time-outs
 * name ranks of the whole job.  Borrowed from the first communicator
 * (tw_comm_new_mpi), which frees it. */
tw_comm *tw_comm_split (tw_comm *c, int color, int key, const char *name, GError **error);
const char *tw_comm_name (const tw_comm *c);           /* "world", or the split's name */
/* The rank in the whole job of this communicator's rank, or -1. */
int tw_comm_world_rank (const tw_comm *c, int rank);

/* This rank failed on its own (an error the others cannot see): end every
 * rank of the job now rather than let them wait for the time-out: the
 * process exits with code without finalising MPI, and mpirun ends the
 * others.  Does not return. */
G_NORETURN void tw_comm_abort (tw_comm *c, int code);

int tw_comm_rank (const tw_comm *c);
int tw_comm_size (const tw_comm *c);
const tw_comm_options *tw_comm_get_options (const tw_comm *c);
/* The host this rank runs on (MPI's processor name).  Owned by c. */
const char *tw_comm_host (const tw_comm *c);
/* Publish TW_EV_COLLECTIVE events on bus (a reference is taken; NULL: none).
 * Only while nothing is in flight. */
void tw_comm_set_bus (tw_comm *c, tw_bus *bus);
/* Whether an earlier failure broke the communicator. */
gboolean tw_comm_is_broken (const tw_comm *c);
/* The all-reduce algorithm of the all-reduces posted from now on (those
 * in flight keep theirs): to compare them in one run (bench/
 * allreduce-bench).  Every rank must set the same before the same call. */
void tw_comm_set_algo (tw_comm *c, tw_algo algo);

/* The calls.  count is in elements of dtype (floating point or i64 for
 * reductions).  They never fail at once: a bad argument or a broken
 * communicator completes the handle with an error. */
/* buf [count] ← the reduction of every rank's buf. */
tw_comm_req *tw_comm_allreduce (tw_comm *c, void *buf, int64_t count, tw_dtype dtype,
                                tw_reduce_op op, const tw_coll_tag *tag);
/* recv [count] ← block `rank` of the reduction of every rank's send [count × size]. */
tw_comm_req *tw_comm_reduce_scatter (tw_comm *c, const void *send, void *recv, int64_t count,
                                     tw_dtype dtype, tw_reduce_op op, const tw_coll_tag *tag);
/* recv [count × size] ← every rank's send [count], in rank order. */
tw_comm_req *tw_comm_allgather (tw_comm *c, const void *send, void *recv, int64_t count,
                                tw_dtype dtype, const tw_coll_tag *tag);
/* buf [count] ← root's buf. */
tw_comm_req *tw_comm_broadcast (tw_comm *c, void *buf, int64_t count, tw_dtype dtype, int root,
                                const tw_coll_tag *tag);
tw_comm_req *tw_comm_send (tw_comm *c, const void *buf, int64_t count, tw_dtype dtype, int dest,
                           const tw_coll_tag *tag);
tw_comm_req *tw_comm_recv (tw_comm *c, void *buf, int64_t count, tw_dtype dtype, int source,
                           const tw_coll_tag *tag);
tw_comm_req *tw_comm_barrier (tw_comm *c, const tw_coll_tag *tag);

/* Withdraw a receive that no message has matched yet (one posted ahead
 * for a message that will not come): it completes with
 * TW_COMM_ERROR_CANCELLED; one already matched completes as usual.  Then
 * tw_comm_req_free as always. */
void tw_comm_cancel (tw_comm *c, tw_comm_req *r);
/* Blocks until the handle completes (publishing its events).  FALSE with
 * the error of the call (TW_COMM_ERROR_TIMEOUT naming the rank, ...). */
gboolean tw_comm_wait (tw_comm *c, tw_comm_req *r, GError **error);
/* Whether the handle completed (then as tw_comm_wait, which returns at once). */
gboolean tw_comm_test (tw_comm *c, tw_comm_req *r);
/* What the call was.  Borrowed from r. */
const tw_coll_info *tw_comm_req_info (const tw_comm_req *r);
/* NULL-safe; waits for a handle still in flight (its error is dropped). */
void tw_comm_req_free (tw_comm_req *r);

/* Blocking conveniences: post, wait, free. */
gboolean tw_comm_allreduce_sync (tw_comm *c, void *buf, int64_t count, tw_dtype dtype,
                                 tw_reduce_op op, const tw_coll_tag *tag, GError **error);
gboolean tw_comm_broadcast_sync (tw_comm *c, void *buf, int64_t count, tw_dtype dtype, int root,
                                 const tw_coll_tag *tag, GError **error);
gboolean tw_comm_barrier_sync (tw_comm *c, GError **error);
/* Every rank's string, gathered on every rank (rank order; NULL-terminated;
 * g_strfreev).  For checks that ranks agree (model hashes, options). */
char **tw_comm_allgather_strings (tw_comm *c, const char *mine, GError **error);

/* Clock offsets, estimated by ping-pong between rank 0 and each rank (the
 * exchange with the smallest round trip of `rounds`): offsets_ns[r] is what
 * to add to rank r's CLOCK_MONOTONIC to get rank 0's; rtt_ns[r] the round
 * trip it came from (the error bound is half of it).  Every rank gets both
 * arrays (size() entries, caller frees).  Collective: every rank calls it. */
gboolean tw_comm_clock_offsets (tw_comm *c, int rounds, gint64 **offsets_ns, gint64 **rtt_ns,
                                GError **error);

/* The flight recorder: the last collectives and messages of this rank
 * (the last `last` of up to 64 kept; 0: all), oldest first, one line each:
 * "#57 allreduce mpi 4.0 MiB bucket 3: done in 1.2 ms" / "...: waiting for
 * 61.0 s".  Any thread.  Caller frees. */
char *tw_comm_flight_dump (tw_comm *c, int last);
/* Print the flight recorder to stderr (with the rank) on SIGUSR1. */
void tw_comm_dump_on_sigusr1 (tw_comm *c);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_comm, tw_comm_free)

G_END_DECLS
