/* mpi.c — the communication thread: MPI's start and end, and the loop that
 * starts and progresses every call (collectives one at a time, in order;
 * messages all at once), watches the time-out and, when one passes, asks
 * the other ranks how far they got so that the error names the rank that
 * never arrived. */
#define G_LOG_DOMAIN "twb-comm"

#include "engine/comm/comm-private.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <string.h>

void tw_comm_check_sigusr1 (tw_comm *c);

/* Control messages: int64 [4] = { type, rank, comm id (query) or posted, done }. */
enum
{
  CTRL_QUERY = 1,
  CTRL_STATUS = 2,
};
/* TAG_CLOCK travels on c->algo, beside our algorithms' messages (tagged
 * 0-3 by their sub_kind in algo.c): it stays clear of those. */
enum
{
  TAG_QUERY = 1,
  TAG_STATUS = 2,
  TAG_CLOCK = 100,
};

MPI_Datatype
tw_comm_mpi_dtype (tw_dtype dtype)
{
  switch (dtype)
    {
    case TW_F32:
      return MPI_FLOAT;
    case TW_F64:
      return MPI_DOUBLE;
    case TW_I32:
      return MPI_INT32_T;
    case TW_I64:
      return MPI_INT64_T;
    default:
      return MPI_BYTE;
    }
}

/* MPI's MPI_MAX and MPI_MIN keep a NaN or drop it depending on the order
 * they meet it in (a > b ? a : b is false against a NaN either way), so
 * that a NaN on one rank reached some ranks' results or none.  Ours, for
 * floating point, propagate it like our own algorithms do
 * (tw_comm_reduce_into).  Made in setup, one pair per process. */
static MPI_Op nan_max = MPI_OP_NULL, nan_min = MPI_OP_NULL;

static void
nan_reduce (void *in, void *inout, int *len, MPI_Datatype *dt, tw_reduce_op op)
{
  tw_comm_reduce_into (inout, in, *len, *dt == MPI_DOUBLE ? TW_F64 : TW_F32, op);
}

static void
nan_max_fn (void *in, void *inout, int *len, MPI_Datatype *dt)
{
  nan_reduce (in, inout, len, dt, TW_REDUCE_MAX);
}

static void
nan_min_fn (void *in, void *inout, int *len, MPI_Datatype *dt)
{
  nan_reduce (in, inout, len, dt, TW_REDUCE_MIN);
}

MPI_Op
tw_comm_mpi_op (tw_reduce_op op, tw_dtype dtype)
{
  gboolean real = dtype == TW_F32 || dtype == TW_F64;
  if (op == TW_REDUCE_MAX)
    return real && nan_max != MPI_OP_NULL ? nan_max : MPI_MAX;
  if (op == TW_REDUCE_MIN)
    return real && nan_min != MPI_OP_NULL ? nan_min : MPI_MIN;
  return MPI_SUM;
}

static GError *
mpi_error (int rc, const char *what)
{
  char msg[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string (rc, msg, &len);
  return g_error_new (TW_COMM_ERROR, TW_COMM_ERROR_FAILED, "%s: MPI: %s", what, msg);
}

/* What the loop knows, on the communication thread. */
typedef struct
{
  tw_comm *c;
  GQueue pending;             /* collectives (and the clock exchange) not started yet */
  tw_comm_req *active;        /* the collective in progress */
  GPtrArray *p2p;             /* messages in progress */
  gint64 ctrl_buf[4];
  MPI_Request ctrl_req;       /* the receive of the next query */
  MPI_Request reply_req[64];  /* status replies sent */
  gint64 reply_buf[64][4];
  int n_reply;
} loop;

static void
complete (tw_comm *c, tw_comm_req *r, GError *error)
{
  r->info.t_end = tw_now_ns ();
  if (r->info.t_start == 0)
    r->info.t_start = r->info.t_end;    /* never started */
  r->error = error;
  tw_comm_flight_set (r->comm ? r->comm : c, r, error ? 3 : 2);
  g_mutex_lock (&c->lock);
  r->done = TRUE;             /* from here on r is the caller's */
  g_cond_broadcast (&c->cond);
  g_mutex_unlock (&c->lock);
}

static GError *
start_coll (loop *L, tw_comm_req *r)
{
  tw_comm *c = r->comm;
  MPI_Datatype dt = tw_comm_mpi_dtype (r->dtype);
  int n = (int) r->count, rc = MPI_SUCCESS;
  r->n_mreq = 1;
  r->mreq[0] = MPI_REQUEST_NULL;
  switch (r->info.kind)
    {
    case TW_COLL_ALLREDUCE:
      if (r->info.algo != TW_ALGO_MPI && c->size > 1)
        {
          GError *error = NULL;
          r->n_mreq = 0;
          r->algo_run = tw_algo_run_start (c, r->info.algo, r->buf, r->count, r->dtype, r->op,
                                           &error);
          return error;
        }
      rc = MPI_Iallreduce (MPI_IN_PLACE, r->buf, n, dt, tw_comm_mpi_op (r->op, r->dtype), c->world,
                           &r->mreq[0]);
      break;
    case TW_COLL_REDUCE_SCATTER:
      rc = MPI_Ireduce_scatter_block (r->send, r->recv, n, dt, tw_comm_mpi_op (r->op, r->dtype),
                                      c->world, &r->mreq[0]);
      break;
    case TW_COLL_ALLGATHER:
      rc = MPI_Iallgather (r->send, n, dt, r->recv, n, dt, c->world, &r->mreq[0]);
      break;
    case TW_COLL_BROADCAST:
      rc = MPI_Ibcast (r->buf, n, dt, r->info.peer, c->world, &r->mreq[0]);
      break;
    case TW_COLL_BARRIER:
      rc = MPI_Ibarrier (c->world, &r->mreq[0]);
      break;
    case TW_COLL_SEND:
      rc = MPI_Isend (r->buf, n, dt, r->info.peer, 0, c->p2p, &r->mreq[0]);
      r->waiting_on = r->info.peer;
      break;
    case TW_COLL_RECV:
      rc = MPI_Irecv (r->buf, n, dt, r->info.peer, 0, c->p2p, &r->mreq[0]);
      r->waiting_on = r->info.peer;
      break;
    default:
      break;
    }
  if (rc != MPI_SUCCESS)
    return mpi_error (rc, tw_coll_kind_name (r->info.kind));
  return NULL;
}

/* 1 done, 0 not yet, -1 failed (*error set). */
static int
progress (loop *L, tw_comm_req *r, GError **error)
{
  if (r->algo_run)
    {
      int st = tw_algo_run_progress (r->algo_run, &r->waiting_on, &r->info.sent,
                                     &r->info.received, error);
      if (st != 0)
        g_clear_pointer (&r->algo_run, tw_algo_run_free);
      return st;
    }
  if (r->n_mreq == 0)
    return 1;
  int flag = 0;
  /* MPI_Test leaves MPI_ERROR as it was (it is set only by the calls that
   * return MPI_ERR_IN_STATUS): without this, a large receive read garbage. */
  MPI_Status st = { .MPI_ERROR = MPI_SUCCESS };
  int rc = MPI_Test (&r->mreq[0], &flag, &st);
  if (rc != MPI_SUCCESS)
    {
      *error = mpi_error (rc, tw_coll_kind_name (r->info.kind));
      return -1;
    }
  if (!flag)
    return 0;
  gint64 esz = (gint64) tw_dtype_size (r->dtype);
  if (r->info.kind == TW_COLL_RECV)
    {
      /* MPI_Test reports a single request's error in its return value:
       * st.MPI_ERROR is set only by the calls that complete several
       * (MPI_ERR_IN_STATUS), and holds whatever was there before. */
      int got = 0;
      /* (st.MPI_ERROR is not set by MPI_Test: an error is its return value.) */
      MPI_Get_count (&st, tw_comm_mpi_dtype (r->dtype), &got);
      if (got != r->count)
        {
          *error = g_error_new (TW_COMM_ERROR, TW_COMM_ERROR_MISMATCH,
                                "message %" G_GUINT64_FORMAT " from rank %d holds %d elements, "
                                "%" G_GINT64_FORMAT " were expected",
                                r->info.msg_seq, r->info.peer, got, r->count);
          return -1;
        }
      r->info.received = r->info.bytes;
    }
  else if (r->info.kind == TW_COLL_SEND)
    r->info.sent = r->info.bytes;
  else if (r->info.kind == TW_COLL_BROADCAST)
    {
      if (r->info.rank == r->info.peer)
        r->info.sent = r->info.bytes;
      else
        r->info.received = r->info.bytes;
    }
  else if (r->info.kind == TW_COLL_ALLGATHER || r->info.kind == TW_COLL_REDUCE_SCATTER)
    {
      /* What a ring moves; MPI's choice is its own. */
      gint64 blk = r->count * esz;
      r->info.sent = r->info.received = blk * (r->info.size - 1);
    }
  (void) L;
  return 1;
}

/* Blocking wait with the time-out, for the clock exchange. */
static GError *
wait_one (tw_comm *c, MPI_Request *req, int peer, gint64 deadline)
{
  for (int spin = 0;; spin++)
    {
      int flag = 0;
      int rc = MPI_Test (req, &flag, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS)
        return mpi_error (rc, "clock exchange");
      if (flag)
        return NULL;
      if (tw_now_ns () > deadline)
        {
          MPI_Cancel (req);
          return g_error_new (TW_COMM_ERROR, TW_COMM_ERROR_TIMEOUT,
                              "rank %d did not answer the clock exchange within the %.0f s "
                              "time-out", peer, c->opt.timeout_s);
        }
      if (spin > 100)
        g_usleep (20);
      else
        sched_yield ();
    }
}

/* Rank 0 measures each rank's clock against its own: it sends its time,
 * the rank answers with its own, and the round trip with the smallest
 * duration gives offset = (t_send + t_back)/2 − t_rank. */
static GError *
clock_exchange (tw_comm *c, tw_comm_req *r)
{
  int p = c->size;
  gint64 *off = g_new0 (gint64, p), *rtt = g_new0 (gint64, p);
  gint64 deadline = tw_now_ns () + (gint64) (c->opt.timeout_s * 1e9);
  GError *e = NULL;
  if (c->rank == 0)
    for (int q = 1; q < p && !e; q++)
      {
        rtt[q] = G_MAXINT64;
        for (int k = 0; k < r->clock_rounds && !e; k++)
          {
            gint64 t0 = tw_now_ns (), tq = 0;
            MPI_Request a, b;
            MPI_Irecv (&tq, 1, MPI_INT64_T, q, TAG_CLOCK, c->algo, &b);
            MPI_Isend (&t0, 1, MPI_INT64_T, q, TAG_CLOCK, c->algo, &a);
            if ((e = wait_one (c, &a, q, deadline)) || (e = wait_one (c, &b, q, deadline)))
              break;
            gint64 t2 = tw_now_ns ();
            if (t2 - t0 < rtt[q])
              {
                rtt[q] = t2 - t0;
                off[q] = t0 + (t2 - t0) / 2 - tq;
              }
          }
      }
  else
    for (int k = 0; k < r->clock_rounds && !e; k++)
      {
        gint64 t0 = 0, now;
        MPI_Request a, b;
        MPI_Irecv (&t0, 1, MPI_INT64_T, 0, TAG_CLOCK, c->algo, &b);
        if ((e = wait_one (c, &b, 0, deadline)))
          break;
        now = tw_now_ns ();
        MPI_Isend (&now, 1, MPI_INT64_T, 0, TAG_CLOCK, c->algo, &a);
        e = wait_one (c, &a, 0, deadline);
      }
  for (int pass = 0; pass < 2 && !e; pass++)
    {
      MPI_Request b;
      MPI_Ibcast (pass ? rtt : off, p, MPI_INT64_T, 0, c->algo, &b);
      e = wait_one (c, &b, 0, deadline);
    }
  r->offsets = off;
  r->rtts = rtt;
  return e;
}

static void
post_ctrl_recv (loop *L)
{
  MPI_Irecv (L->ctrl_buf, 4, MPI_INT64_T, MPI_ANY_SOURCE, TAG_QUERY, L->c->ctrl, &L->ctrl_req);
}

static tw_comm *
comm_by_id (tw_comm *o, gint64 id)
{
  if (id <= 0)
    return o;
  tw_comm *found = NULL;
  g_mutex_lock (&o->lock);
  if (id <= (gint64) o->children->len)
    found = g_ptr_array_index (o->children, id - 1);
  g_mutex_unlock (&o->lock);
  return found;
}

static void
send_status (loop *L, int dest, gint64 comm_id)
{
  tw_comm *c = comm_by_id (L->c, comm_id);
  if (L->n_reply >= 64)
    {
      MPI_Waitall (L->n_reply, L->reply_req, MPI_STATUSES_IGNORE);
      L->n_reply = 0;
    }
  gint64 *b = L->reply_buf[L->n_reply];
  b[0] = CTRL_STATUS;
  b[1] = L->c->rank;
  /* A communicator this rank has not made yet: it posted nothing there. */
  b[2] = c ? (gint64) __atomic_load_n (&c->seq, __ATOMIC_RELAXED) : 0;
  b[3] = c ? (gint64) c->done_seq : 0;
  MPI_Isend (b, 4, MPI_INT64_T, dest, TAG_STATUS, L->c->ctrl, &L->reply_req[L->n_reply]);
  L->n_reply++;
}

/* Answer other ranks' queries (a rank that timed out asks how far we got). */
static void
serve_ctrl (loop *L)
{
  for (;;)
    {
      int flag = 0;
      MPI_Status st;
      if (MPI_Test (&L->ctrl_req, &flag, &st) != MPI_SUCCESS || !flag)
        return;
      send_status (L, st.MPI_SOURCE, L->ctrl_buf[2]);
      post_ctrl_recv (L);
    }
}

static char *
describe (const tw_comm_req *r)
{
  g_autofree char *size = g_format_size_full ((guint64) r->info.bytes, G_FORMAT_SIZE_IEC_UNITS);
  /* A message's peer is the subject of the sentence it goes into. */
  if (r->info.kind == TW_COLL_SEND || r->info.kind == TW_COLL_RECV)
    return g_strdup_printf ("message %" G_GUINT64_FORMAT " (%s%s%s)", r->info.msg_seq, size,
                            r->info.what ? ", " : "", r->info.what ? r->info.what : "");
  if (r->comm && r->comm->id > 0)
    return g_strdup_printf ("collective #%" G_GUINT64_FORMAT " of %s (%s%s%s, %s%s%s)",
                            r->info.seq, r->comm->name, tw_coll_kind_name (r->info.kind),
                            r->info.kind == TW_COLL_ALLREDUCE ? " " : "",
                            r->info.kind == TW_COLL_ALLREDUCE ? tw_algo_name (r->info.algo) : "",
                            size, r->info.what ? ", " : "", r->info.what ? r->info.what : "");
  return g_strdup_printf ("collective #%" G_GUINT64_FORMAT " (%s%s%s, %s%s%s)", r->info.seq,
                          tw_coll_kind_name (r->info.kind),
                          r->info.kind == TW_COLL_ALLREDUCE ? " " : "",
                          r->info.kind == TW_COLL_ALLREDUCE ? tw_algo_name (r->info.algo) : "",
                          size, r->info.what ? ", " : "", r->info.what ? r->info.what : "");
}

/* r timed out: ask every other rank how far it got, wait a little for the
 * answers, and say who never arrived. */
static GError *
diagnose (loop *L, tw_comm_req *r)
{
  tw_comm *c = L->c, *rc = r->comm;
  int p = rc->size;
  g_autofree gint64 *posted = g_new (gint64, p), *done = g_new (gint64, p);
  g_autofree gboolean *answered = g_new0 (gboolean, p);
  g_autofree gint64 *qbuf = g_new0 (gint64, 4 * p), *sbuf = g_new0 (gint64, 4 * p);
  g_autofree MPI_Request *qreq = g_new (MPI_Request, p), *sreq = g_new (MPI_Request, p);
  for (int q = 0; q < p; q++)
    {
      qreq[q] = sreq[q] = MPI_REQUEST_NULL;
      if (q == rc->rank)
        continue;
      int wq = rc->world_ranks[q];
      qbuf[4 * q] = CTRL_QUERY;
      qbuf[4 * q + 1] = c->rank;
      qbuf[4 * q + 2] = rc->id;
      MPI_Isend (&qbuf[4 * q], 4, MPI_INT64_T, wq, TAG_QUERY, c->ctrl, &qreq[q]);
      MPI_Irecv (&sbuf[4 * q], 4, MPI_INT64_T, wq, TAG_STATUS, c->ctrl, &sreq[q]);
    }
  /* Long enough for a live rank's loop to notice (it polls at least every
   * 100 ms), short against the time-out itself. */
  gint64 grace = (gint64) (CLAMP (c->opt.timeout_s / 10, 1.0, 5.0) * 1e9);
  gint64 until = tw_now_ns () + grace;
  int n_answered = 0;
  while (tw_now_ns () < until && n_answered < p - 1)
    {
      serve_ctrl (L);
      for (int q = 0; q < p; q++)
        {
          int flag = 0;
          if (q == rc->rank || answered[q])
            continue;
          MPI_Test (&sreq[q], &flag, MPI_STATUS_IGNORE);
          if (flag)
            {
              answered[q] = TRUE;
              n_answered++;
              posted[q] = sbuf[4 * q + 2];
              done[q] = sbuf[4 * q + 3];
            }
        }
      g_usleep (1000);
    }
  g_autofree char *what = describe (r);
  GString *who = g_string_new (NULL);
  int n_culprits = 0;
  if (r->type == REQ_P2P)
    {
      int q = r->info.peer;
      g_string_append_printf (who, "rank %d never %s %s within the %.0f s time-out",
                              rc->world_ranks[q],
                              r->info.kind == TW_COLL_RECV ? "sent" : "received", what,
                              c->opt.timeout_s);
      if (!answered[q])
        g_string_append (who, ": it does not answer (hung or dead)");
      else
        g_string_append_printf (who, ": it is alive, at collective #%" G_GINT64_FORMAT,
                                posted[q]);
      n_culprits = 1;
    }
  else
    {
      GString *dead = g_string_new (NULL), *late = g_string_new (NULL), *why = g_string_new (NULL);
      int n_dead = 0, n_late = 0;
      for (int q = 0; q < p; q++)
        {
          if (q == rc->rank)
            continue;
          int wq = rc->world_ranks[q];
          if (!answered[q])
            g_string_append_printf (dead, "%s%d", n_dead++ ? ", " : "", wq);
          else if ((guint64) posted[q] < r->info.seq)
            {
              g_string_append_printf (late, "%s%d", n_late++ ? ", " : "", wq);
              g_string_append_printf (why, "; rank %d is alive: it finished #%" G_GINT64_FORMAT
                                      " and has posted nothing since", wq, done[q]);
            }
        }
      n_culprits = n_dead + n_late;
      if (n_culprits == 0)
        g_string_append_printf (who, "%s did not complete within the %.0f s time-out, though "
                                "every rank reached it", what, c->opt.timeout_s);
      else
        {
          g_string_append_printf (who, "%s %s%s%s never arrived at %s within the %.0f s time-out",
                                  n_culprits > 1 ? "ranks" : "rank", dead->str,
                                  n_dead && n_late ? ", " : "", late->str, what, c->opt.timeout_s);
          if (n_dead)
            g_string_append_printf (who, "; rank%s %s do%s not answer (hung or dead)",
                                    n_dead > 1 ? "s" : "", dead->str, n_dead > 1 ? "" : "es");
          g_string_append (who, why->str);
        }
      g_string_free (why, TRUE);
      g_string_free (dead, TRUE);
      g_string_free (late, TRUE);
    }
  for (int q = 0; q < p; q++)
    {
      if (qreq[q] != MPI_REQUEST_NULL)
        {
          int flag = 0;
          MPI_Test (&qreq[q], &flag, MPI_STATUS_IGNORE);
          if (!flag)
            MPI_Cancel (&qreq[q]);
        }
      if (!answered[q] && sreq[q] != MPI_REQUEST_NULL)
        MPI_Cancel (&sreq[q]);
    }
  g_autofree char *msg = g_string_free (who, FALSE);
  return g_error_new_literal (TW_COMM_ERROR, TW_COMM_ERROR_TIMEOUT, msg);
}

static void
fail_everything (loop *L, const GError *why)
{
  tw_comm *c = L->c;
  g_atomic_int_set (&c->broken, 1);
  c->finalize = FALSE;
  if (L->active)
    complete (c, g_steal_pointer (&L->active), g_error_copy (why));
  for (guint i = 0; i < L->p2p->len; i++)
    complete (c, g_ptr_array_index (L->p2p, i), g_error_copy (why));
  g_ptr_array_set_size (L->p2p, 0);
  tw_comm_req *r;
  while ((r = g_queue_pop_head (&L->pending)))
    complete (c, r, g_error_copy (why));
}

/* The MPI side of a communicator made from comm (the owner's world, or a
 * split): its duplicates, its nodes for "hier", its ranks in the job. */
static void
comm_init (tw_comm *o, tw_comm *c, MPI_Comm comm)
{
  MPI_Comm_rank (comm, &c->rank);
  MPI_Comm_size (comm, &c->size);
  c->world = comm;
  MPI_Comm_dup (comm, &c->p2p);
  MPI_Comm_dup (comm, &c->algo);
  MPI_Comm_dup (comm, &c->ctrl);
  if (c->opt.ranks_per_node > 0 && c == o)
    MPI_Comm_split (c->world, c->rank / c->opt.ranks_per_node, c->rank, &c->node);
  else if (c == o)
    MPI_Comm_split_type (c->world, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &c->node);
  else
    {
      /* A split's nodes are those of the job: ranks on one owner node together. */
      int leader_world = 0;
      MPI_Group og, ng;
      MPI_Comm_group (o->node, &ng);
      MPI_Comm_group (o->world, &og);
      int zero = 0;
      MPI_Group_translate_ranks (ng, 1, &zero, og, &leader_world);
      MPI_Group_free (&ng);
      MPI_Group_free (&og);
      MPI_Comm_split (c->world, leader_world, c->rank, &c->node);
    }
  MPI_Comm_rank (c->node, &c->node_rank);
  MPI_Comm_size (c->node, &c->node_size);
  MPI_Comm_split (c->world, c->node_rank == 0 ? 0 : MPI_UNDEFINED, c->rank, &c->leaders);
  int leader = c->node_rank == 0;
  MPI_Allreduce (&leader, &c->n_nodes, 1, MPI_INT, MPI_SUM, c->world);
  MPI_Comm *mine[] = { &c->world, &c->p2p, &c->algo, &c->ctrl };
  for (guint i = 0; i < G_N_ELEMENTS (mine); i++)
    MPI_Comm_set_errhandler (*mine[i], MPI_ERRORS_RETURN);
  if (c->opt.ps_rank < 0 || c->opt.ps_rank >= c->size)
    c->opt.ps_rank = c->size - 1;
  if (c != o)
    {
      c->world_ranks = g_new (int, c->size);
      MPI_Group g, w;
      MPI_Comm_group (comm, &g);
      MPI_Comm_group (o->world, &w);
      int *mine_r = g_new (int, c->size);
      for (int i = 0; i < c->size; i++)
        mine_r[i] = i;
      MPI_Group_translate_ranks (g, c->size, mine_r, w, c->world_ranks);
      g_free (mine_r);
      MPI_Group_free (&g);
      MPI_Group_free (&w);
    }
}

static GError *
split (tw_comm *o, tw_comm_req *r)
{
  MPI_Comm nc = MPI_COMM_NULL;
  int rc = MPI_Comm_split (r->comm->world, r->split_color < 0 ? MPI_UNDEFINED : r->split_color,
                           r->split_key, &nc);
  if (rc != MPI_SUCCESS)
    return mpi_error (rc, "splitting the communicator");
  if (nc != MPI_COMM_NULL)
    comm_init (o, r->split_child, nc);
  return NULL;
}

static gboolean
setup (tw_comm *c, GError **error)
{
  int inited = 0, provided = 0, rc;
  MPI_Initialized (&inited);
  if (!inited)
    {
      rc = MPI_Init_thread (NULL, NULL, MPI_THREAD_FUNNELED, &provided);
      if (rc != MPI_SUCCESS)
        {
          GError *e = mpi_error (rc, "starting MPI");
          e->code = TW_COMM_ERROR_INIT;
          g_propagate_error (error, e);
          return FALSE;
        }
      c->finalize = TRUE;
    }
  MPI_Comm_set_errhandler (MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank (MPI_COMM_WORLD, &c->rank);
  MPI_Comm_size (MPI_COMM_WORLD, &c->size);
  char host[MPI_MAX_PROCESSOR_NAME + 1] = "";
  int len = 0;
  MPI_Get_processor_name (host, &len);
  c->host = g_strndup (host, len);
  MPI_Comm world;
  MPI_Comm_dup (MPI_COMM_WORLD, &world);
  comm_init (c, c, world);
  if (nan_max == MPI_OP_NULL)
    {
      MPI_Op_create (nan_max_fn, 1, &nan_max);
      MPI_Op_create (nan_min_fn, 1, &nan_min);
    }
  return TRUE;
}

static void
teardown (tw_comm *c, loop *L)
{
  if (L->ctrl_req != MPI_REQUEST_NULL)
    {
      MPI_Cancel (&L->ctrl_req);
      if (c->finalize)
        MPI_Wait (&L->ctrl_req, MPI_STATUS_IGNORE);
    }
  if (!c->finalize)
    return;                   /* broken: the process exits, mpirun ends the others */
  if (L->n_reply)
    MPI_Waitall (L->n_reply, L->reply_req, MPI_STATUSES_IGNORE);
  /* Nobody leaves while another rank may still query it. */
  MPI_Barrier (c->ctrl);
  for (guint k = 0; k <= c->children->len; k++)
    {
      tw_comm *x = k < c->children->len ? g_ptr_array_index (c->children, k) : c;
      MPI_Comm *comms[] = { &x->world, &x->p2p, &x->algo, &x->ctrl, &x->node, &x->leaders };
      for (guint i = 0; i < G_N_ELEMENTS (comms); i++)
        if (*comms[i] != MPI_COMM_NULL)
          MPI_Comm_free (comms[i]);
    }
  MPI_Op_free (&nan_max);
  MPI_Op_free (&nan_min);
  MPI_Finalize ();
}

gpointer
tw_comm_mpi_thread (gpointer data)
{
  tw_comm *c = data;
  GError *error = NULL;
  /* Ahead of the compute threads where the system lets us (root or
   * CAP_SYS_NICE; elsewhere this fails and nothing changes): when every
   * core computes, a woken communication thread otherwise waits a
   * scheduler tick or more (measured: 1–3 ms) before it starts a bucket's
   * all-reduce, which then overlaps nothing. */
  setpriority (PRIO_PROCESS, (id_t) syscall (SYS_gettid), -10);
  gboolean ok = setup (c, &error);
  g_mutex_lock (&c->lock);
  c->init_error = error;
  c->started = TRUE;
  g_cond_broadcast (&c->cond);
  g_mutex_unlock (&c->lock);
  if (!ok)
    return NULL;

  loop L = { .c = c, .p2p = g_ptr_array_new () };
  g_queue_init (&L.pending);
  post_ctrl_recv (&L);
  gboolean quitting = FALSE;
  tw_comm_req *quit = NULL;
  guint idle = 0;
  gint64 timeout_ns = (gint64) (c->opt.timeout_s * 1e9);
  for (;;)
    {
      tw_comm_check_sigusr1 (c);
      gboolean busy = L.active || L.p2p->len || L.pending.length;
      /* Idle: wake on a new call, or every 100 ms to answer queries.  Busy:
       * spin a little (a small message's answer comes within microseconds),
       * then sleep in growing steps up to 0.5 ms so that waiting ranks
       * leave the cores to compute (CI oversubscribes them). */
      guint64 sleep_us = !busy ? 100000 : idle < 64 ? 0 : MIN (500, 8u << MIN ((idle - 64) / 16, 6));
      tw_comm_req *r = sleep_us ? g_async_queue_timeout_pop (c->queue, sleep_us)
                                : g_async_queue_try_pop (c->queue);
      gboolean progressed = FALSE;
      for (; r; r = g_async_queue_try_pop (c->queue))
        {
          progressed = TRUE;
          if (r->type == REQ_CANCEL)
            {
              /* A receive still in progress (not yet matched) is withdrawn. */
              tw_comm_req *t = r->cancel_target;
              if (g_ptr_array_remove_fast (L.p2p, t))
                {
                  MPI_Cancel (&t->mreq[0]);
                  MPI_Status st;
                  MPI_Wait (&t->mreq[0], &st);
                  int cancelled = 0;
                  MPI_Test_cancelled (&st, &cancelled);
                  complete (c, t, cancelled ? g_error_new (TW_COMM_ERROR, TW_COMM_ERROR_CANCELLED,
                                                           "receive from rank %d withdrawn",
                                                           t->info.peer)
                                            : NULL);
                }
              else if (g_queue_remove (&L.pending, t))
                complete (c, t, g_error_new (TW_COMM_ERROR, TW_COMM_ERROR_CANCELLED,
                                             "withdrawn"));
              complete (c, r, NULL);
              continue;
            }
          if (r->type == REQ_QUIT)
            {
              quitting = TRUE;
              quit = r;
              continue;
            }
          if (tw_comm_is_broken (c))
            {
              complete (c, r, g_error_new (TW_COMM_ERROR, TW_COMM_ERROR_BROKEN,
                                           "the communicator is broken by an earlier failure"));
              continue;
            }
          if (r->type == REQ_P2P)
            {
              r->info.t_start = tw_now_ns ();
              tw_comm_flight_set (c, r, 1);
              GError *e = start_coll (&L, r);
              if (e)
                complete (c, r, e);
              else
                g_ptr_array_add (L.p2p, r);
            }
          else
            g_queue_push_tail (&L.pending, r);
        }
      if (!L.active && L.pending.length)
        {
          tw_comm_req *n = g_queue_pop_head (&L.pending);
          n->info.t_start = tw_now_ns ();
          progressed = TRUE;
          if (n->type == REQ_SPLIT)
            complete (c, n, split (c, n));
          else if (n->type == REQ_CLOCK)
            {
              GError *e = clock_exchange (c, n);
              complete (c, n, e);
              if (e)
                fail_everything (&L, e);
            }
          else
            {
              tw_comm_flight_set (c, n, 1);
              GError *e = start_coll (&L, n);
              if (e)
                complete (c, n, e);
              else
                L.active = n;
            }
        }
      if (L.active)
        {
          GError *e = NULL;
          int st = progress (&L, L.active, &e);
          if (st != 0)
            {
              progressed = TRUE;
              if (st > 0)
                L.active->comm->done_seq = L.active->info.seq;
              complete (c, g_steal_pointer (&L.active), e);
            }
        }
      for (guint i = 0; i < L.p2p->len;)
        {
          tw_comm_req *m = g_ptr_array_index (L.p2p, i);
          GError *e = NULL;
          int st = progress (&L, m, &e);
          if (st != 0)
            {
              progressed = TRUE;
              g_ptr_array_remove_index_fast (L.p2p, i);
              complete (c, m, e);
            }
          else
            i++;
        }
      serve_ctrl (&L);
      gint64 now = tw_now_ns ();
      tw_comm_req *late = L.active && now - L.active->info.t_start > timeout_ns ? L.active : NULL;
      for (guint i = 0; !late && i < L.p2p->len; i++)
        {
          tw_comm_req *m = g_ptr_array_index (L.p2p, i);
          if (now - m->info.t_start > timeout_ns)
            late = m;
        }
      if (late)
        {
          GError *why = diagnose (&L, late);
          fail_everything (&L, why);
          g_error_free (why);
        }
      idle = progressed ? 0 : idle + 1;
      if (quitting && !L.active && !L.p2p->len && !L.pending.length)
        break;
    }
  teardown (c, &L);
  g_ptr_array_free (L.p2p, TRUE);
  if (quit)
    {
      g_mutex_lock (&c->lock);
      quit->done = TRUE;
      g_mutex_unlock (&c->lock);
    }
  return NULL;
}
