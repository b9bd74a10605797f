/* comm-private.h — what the communicator's parts share: the request, the
 * communicator's state, and the interface between the MPI progress loop
 * (mpi.c) and our all-reduce algorithms (algo.c).  Not installed. */
#pragma once

#include "engine/comm/comm.h"

#include <mpi.h>

G_BEGIN_DECLS

typedef enum
{
  REQ_COLL,                   /* a collective (kind in info) */
  REQ_P2P,                    /* send or recv */
  REQ_CLOCK,                  /* the clock offsets' ping-pong */
  REQ_SPLIT,                  /* MPI_Comm_split into split_child */
  REQ_CANCEL,                 /* cancel cancel_target, a receive not matched yet */
  REQ_QUIT,                   /* end the thread */
} req_type;

struct tw_comm_req
{
  tw_comm *comm;
  req_type type;
  tw_coll_info info;
  void *buf;                  /* all-reduce, broadcast, recv */
  const void *send;           /* reduce-scatter, all-gather, send */
  void *recv;                 /* reduce-scatter, all-gather */
  int64_t count;
  tw_dtype dtype;
  tw_reduce_op op;
  int clock_rounds;
  int split_color, split_key;
  tw_comm *split_child;
  tw_comm_req *cancel_target;
  gint64 *offsets, *rtts;     /* REQ_CLOCK results (size entries) */
  /* Set by the communication thread, read after `done` under the lock. */
  gboolean done;
  GError *error;
  guint64 flight;             /* 1 + its number in the flight recorder; 0: none */
  gboolean published_begin, published_end;
  /* The comm thread's progress state. */
  MPI_Request mreq[2];
  int n_mreq;
  struct tw_algo_run *algo_run;
  int waiting_on;             /* the rank it waits for (for time-outs), -1 unknown */
};

#define TW_FLIGHT_SLOTS 64

typedef struct
{
  guint64 seq, msg_seq;
  tw_coll_kind kind;
  tw_algo algo;
  int peer;
  gint64 bytes;
  char what[48];
  gint64 t_post, t_start, t_end;
  int state;                  /* 0 posted, 1 running, 2 done, 3 failed */
} tw_flight_entry;

struct tw_comm
{
  tw_comm *owner;             /* the communicator over every rank, whose thread runs this
                               * one's calls (itself for that one) */
  int id;                     /* 0: the owner; 1, 2, ...: tw_comm_split's, in order */
  char *name;                 /* "world", or tw_comm_split's */
  int *world_ranks;           /* the owner's rank of each rank of this one */
  GPtrArray *children;        /* the owner's: communicators split from it (and theirs) */
  guint64 done_seq;           /* the last collective completed (comm thread) */
  tw_comm_options opt;
  int rank, size;
  char *host;
  GThread *thread;
  GAsyncQueue *queue;         /* tw_comm_req* posted, for the comm thread */
  GMutex lock;
  GCond cond;                 /* a request completed, or the thread started */
  gboolean started;
  GError *init_error;
  gint broken;                /* atomic */
  tw_bus *bus;
  guint64 seq;                /* collectives posted (caller's thread) */
  guint64 *msg_to, *msg_from; /* messages posted to / from each peer */
  /* Flight recorder, under flight_lock. */
  GMutex flight_lock;
  tw_flight_entry flight[TW_FLIGHT_SLOTS];
  guint64 flight_n;
  /* MPI state: the communication thread's only. */
  MPI_Comm world;             /* duplicate of MPI_COMM_WORLD: collectives */
  MPI_Comm p2p;               /* user sends and receives */
  MPI_Comm algo;              /* our algorithms' messages */
  MPI_Comm ctrl;              /* status queries on time-outs */
  MPI_Comm node;              /* ranks of this (pretend) node */
  MPI_Comm leaders;           /* rank 0 of each node (MPI_COMM_NULL elsewhere) */
  int node_rank, node_size, n_nodes;
  gboolean finalize;          /* MPI was initialised by us and is not broken */
  /* The simulator's backend (sim.c): the world of virtual ranks, or NULL
   * for MPI; the group (0: the world, else a split's) that keys its
   * collectives and messages. */
  struct tw_sim_world *sim;
  guint64 sim_group;
};

/* Reductions of n elements: dst[i] = dst[i] op src[i]. */
void tw_comm_reduce_into (void *dst, const void *src, int64_t n, tw_dtype dtype, tw_reduce_op op);

/* The MPI datatype and op of ours (max and min of floating point: ours,
 * which propagate NaN as MPI's own do not). */
MPI_Datatype tw_comm_mpi_dtype (tw_dtype dtype);
MPI_Op tw_comm_mpi_op (tw_reduce_op op, tw_dtype dtype);

/* One of our all-reduce algorithms on buf, as a state machine that the
 * progress loop advances: start posts the first messages, progress tests
 * them and posts the next ones (1: done, 0: not yet, -1: error).
 * waiting_on is the rank whose message it waits for now (time-outs name
 * it); sent and received count the bytes on the wire. */
typedef struct tw_algo_run tw_algo_run;
tw_algo_run *tw_algo_run_start (tw_comm *c, tw_algo algo, void *buf, int64_t count,
                                tw_dtype dtype, tw_reduce_op op, GError **error);
int tw_algo_run_progress (tw_algo_run *run, int *waiting_on, gint64 *sent, gint64 *received,
                          GError **error);
void tw_algo_run_free (tw_algo_run *run);

/* The communication thread (mpi.c). */
gpointer tw_comm_mpi_thread (gpointer data);

/* The simulator's backend (sim.c), on the caller's thread: post a call
 * numbered by comm.c; withdraw a receive; wait for a handle (breaking the
 * world, with the late ranks named, after the time-out); the clock. */
void tw_comm_sim_post (tw_comm *c, tw_comm_req *r);
void tw_comm_sim_cancel (tw_comm *c, tw_comm_req *r);
void tw_comm_sim_wait (tw_comm *c, tw_comm_req *r);
void tw_comm_sim_clock (tw_comm *c, tw_comm_req *r);
void tw_comm_sim_forget (tw_comm *c);     /* c is being freed */

/* comm.c: a world communicator's common state (options, locks, queue,
 * name), before its backend knows its rank and size; and, once it does,
 * its message counters and identity rank map. */
tw_comm *tw_comm_alloc_world (const tw_comm_options *options);
void tw_comm_set_world_size (tw_comm *c);

/* comm.c: the flight recorder. */
void tw_comm_flight_set (tw_comm *c, tw_comm_req *r, int state);

G_END_DECLS
