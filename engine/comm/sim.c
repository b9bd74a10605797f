/* sim.c — the simulator's backend of the communicator: virtual ranks that
 * are threads of one process (tw_comm_new_sim).
 *
 * There is no communication thread.  A call is numbered as MPI's are
 * (comm.c's post) and handed here on the caller's thread:
 *
 *   a collective waits in its slot (communicator group, sequence number)
 *   until every rank of the group has posted it; the last one to come
 *   does the arithmetic for all of them, in rank order (so the result
 *   never depends on which thread came last), and completes every
 *   rank's handle;
 *
 *   a send copies its payload into the mailbox of its (group, source,
 *   destination) and completes at once (MPI's buffered send: never a
 *   deadlock that real MPI would not have); a receive takes the oldest
 *   message there, or waits in the mailbox for the next one.
 *
 * Everything is under the world's one lock.  A wait that outlasts the
 * time-out (tw_comm_sim_wait), or a rank that fails on its own
 * (tw_sim_world_fail), breaks every rank's communicator: each handle in
 * flight completes with an error that names the rank and the call. */
#define G_LOG_DOMAIN "twb-comm"

#include "engine/comm/comm-private.h"

#include <string.h>

typedef struct
{
  int arrived;
  tw_comm_req **reqs;           /* [group size], by rank in the group */
} slot;

typedef struct
{
  GQueue sends;                 /* msg* not received yet */
  GQueue recvs;                 /* tw_comm_req* waiting */
} mailbox;

typedef struct
{
  void *data;
  int64_t count;
  tw_dtype dtype;
} msg;

struct tw_sim_world
{
  int size;
  GMutex lock;
  GHashTable *slots;            /* "group:seq" → slot* */
  GHashTable *boxes;            /* "group:src:dst" → mailbox* */
  GPtrArray *comms;             /* tw_comm* of every rank (the owners), by rank */
  guint64 next_group;           /* 0 is the world; splits take 1, 2, ... */
  GError *broken;               /* why, once broken */
};

static void
slot_free (gpointer p)
{
  slot *s = p;
  g_free (s->reqs);
  g_free (s);
}

static void
msg_free (gpointer p)
{
  msg *m = p;
  g_free (m->data);
  g_free (m);
}

static void
box_free (gpointer p)
{
  mailbox *b = p;
  g_queue_clear_full (&b->sends, msg_free);
  g_queue_clear (&b->recvs);
  g_free (b);
}

tw_sim_world *
tw_sim_world_new (int size)
{
  g_return_val_if_fail (size >= 1, NULL);
  tw_sim_world *w = g_new0 (tw_sim_world, 1);
  w->size = size;
  g_mutex_init (&w->lock);
  w->slots = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, slot_free);
  w->boxes = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, box_free);
  w->comms = g_ptr_array_new ();
  g_ptr_array_set_size (w->comms, size);
  w->next_group = 1;
  return w;
}

void
tw_sim_world_free (tw_sim_world *w)
{
  if (w == NULL)
    return;
  g_hash_table_unref (w->slots);
  g_hash_table_unref (w->boxes);
  g_ptr_array_unref (w->comms);
  g_clear_error (&w->broken);
  g_mutex_clear (&w->lock);
  g_free (w);
}

int
tw_sim_world_size (const tw_sim_world *w)
{
  return w->size;
}

tw_comm *
tw_comm_new_sim (tw_sim_world *w, int rank, const tw_comm_options *options)
{
  g_return_val_if_fail (w && rank >= 0 && rank < w->size, NULL);
  tw_comm *c = tw_comm_alloc_world (options);
  if (c->opt.ps_rank < 0 || c->opt.ps_rank >= w->size)
    c->opt.ps_rank = -1;
  c->sim = w;
  c->rank = rank;
  c->size = w->size;
  c->host = g_strdup_printf ("virtual rank %d", rank);
  c->started = TRUE;
  tw_comm_set_world_size (c);
  g_mutex_lock (&w->lock);
  g_ptr_array_index (w->comms, rank) = c;
  g_mutex_unlock (&w->lock);
  return c;
}

/* Under the world's lock: r is done (r->comm's owner wakes). */
static void
finish (tw_comm_req *r, GError *error)
{
  tw_comm *c = r->comm;
  tw_comm *o = c->owner;
  r->info.t_end = tw_now_ns ();
  if (r->info.t_start == 0)
    r->info.t_start = r->info.t_end;
  r->error = error;
  if (!error && (r->type == REQ_COLL))
    c->done_seq = MAX (c->done_seq, r->info.seq);
  tw_comm_flight_set (c, r, error ? 3 : 2);
  g_mutex_lock (&o->lock);
  r->done = TRUE;
  g_cond_broadcast (&o->cond);
  g_mutex_unlock (&o->lock);
}

/* Under the world's lock: every handle in flight fails with why. */
static void
break_world (tw_sim_world *w, GError *why)
{
  if (w->broken)
    {
      g_error_free (why);
      return;
    }
  w->broken = why;
  for (guint i = 0; i < w->comms->len; i++)
    {
      tw_comm *c = g_ptr_array_index (w->comms, i);
      if (c)
        g_atomic_int_set (&c->broken, 1);
    }
  GHashTableIter it;
  gpointer v;
  g_hash_table_iter_init (&it, w->slots);
  while (g_hash_table_iter_next (&it, NULL, &v))
    {
      slot *s = v;
      for (int i = 0; i < w->size; i++)
        if (s->reqs[i])
          finish (s->reqs[i], g_error_copy (why));
    }
  g_hash_table_remove_all (w->slots);
  g_hash_table_iter_init (&it, w->boxes);
  while (g_hash_table_iter_next (&it, NULL, &v))
    {
      mailbox *b = v;
      tw_comm_req *r;
      while ((r = g_queue_pop_head (&b->recvs)))
        finish (r, g_error_copy (why));
    }
}

void
tw_sim_world_fail (tw_sim_world *w, int rank, const char *message)
{
  g_mutex_lock (&w->lock);
  break_world (w, g_error_new (TW_COMM_ERROR, TW_COMM_ERROR_TIMEOUT, "rank %d failed: %s", rank,
                               message ? message : "unknown error"));
  g_mutex_unlock (&w->lock);
}

/* What rank i (in the group) of the last collective's slot put on and took
 * off the wire, by the algorithm's pattern (as the MPI backend counts). */
static void
count_bytes (tw_comm_req *r, int p)
{
  gint64 esz = (gint64) tw_dtype_size (r->dtype);
  gint64 n = r->count * esz;
  int me = r->info.rank;
  switch (r->info.kind)
    {
    case TW_COLL_ALLREDUCE:
      if (p == 1)
        break;
      if (r->info.algo == TW_ALGO_PS)
        {
          int server = r->comm->opt.ps_rank >= 0 ? r->comm->opt.ps_rank : p - 1;
          if (me == server)
            r->info.sent = r->info.received = n * (p - 1);
          else
            r->info.sent = r->info.received = n;
        }
      else if (r->info.algo == TW_ALGO_TREE)
        r->info.sent = r->info.received = 2 * n;   /* up the tree and down, at most */
      else
        r->info.sent = r->info.received = 2 * (n / p) * (p - 1);
      break;
    case TW_COLL_REDUCE_SCATTER:
    case TW_COLL_ALLGATHER:
      r->info.sent = r->info.received = r->count * esz * (p - 1);
      break;
    case TW_COLL_BROADCAST:
      if (me == r->info.peer)
        r->info.sent = n;
      else
        r->info.received = n;
      break;
    default:
      break;
    }
}

/* Every rank's handle of one collective is here: do it. */
static GError *
perform (tw_sim_world *w, slot *s, int p)
{
  tw_comm_req *r0 = s->reqs[0];
  for (int i = 1; i < p; i++)
    {
      tw_comm_req *r = s->reqs[i];
      if (r->type != r0->type || r->info.kind != r0->info.kind || r->count != r0->count
          || r->dtype != r0->dtype || r->op != r0->op || r->info.peer != r0->info.peer)
        return g_error_new (TW_COMM_ERROR, TW_COMM_ERROR_MISMATCH,
                            "collective #%" G_GUINT64_FORMAT ": rank %d posted %s of %"
                            G_GINT64_FORMAT " elements, rank 0 %s of %" G_GINT64_FORMAT,
                            r0->info.seq, i, tw_coll_kind_name (r->info.kind), r->count,
                            tw_coll_kind_name (r0->info.kind), r0->count);
    }
  size_t esz = r0->info.kind == TW_COLL_BARRIER || r0->type == REQ_SPLIT
                 ? 0 : tw_dtype_size (r0->dtype);
  int64_t n = r0->count;
  if (r0->type == REQ_SPLIT)
    {
      /* Ranks of each color, ordered by key then rank, as MPI_Comm_split. */
      GHashTable *groups = g_hash_table_new (g_direct_hash, g_direct_equal);
      for (int i = 0; i < p; i++)
        {
          tw_comm_req *r = s->reqs[i];
          if (r->split_color < 0)
            continue;
          int members = 0;
          for (int j = 0; j < p; j++)
            if (s->reqs[j]->split_color == r->split_color)
              members++;
          int my = 0;
          for (int j = 0; j < p; j++)
            {
              tw_comm_req *q = s->reqs[j];
              if (q->split_color == r->split_color
                  && (q->split_key < r->split_key || (q->split_key == r->split_key && j < i)))
                my++;
            }
          gpointer key = GINT_TO_POINTER (r->split_color + 1);
          if (!g_hash_table_contains (groups, key))
            g_hash_table_insert (groups, key, GSIZE_TO_POINTER ((gsize) w->next_group++));
          tw_comm *child = r->split_child;
          child->sim = w;
          child->sim_group = GPOINTER_TO_SIZE (g_hash_table_lookup (groups, key));
          child->rank = my;
          child->size = members;
          child->world_ranks = g_new (int, members);
          for (int j = 0; j < p; j++)
            {
              tw_comm_req *q = s->reqs[j];
              if (q->split_color != r->split_color)
                continue;
              int pos = 0;
              for (int k = 0; k < p; k++)
                {
                  tw_comm_req *u = s->reqs[k];
                  if (u->split_color == q->split_color
                      && (u->split_key < q->split_key || (u->split_key == q->split_key && k < j)))
                    pos++;
                }
              child->world_ranks[pos] = tw_comm_world_rank (r->comm, j);
            }
        }
      g_hash_table_unref (groups);
      return NULL;
    }
  switch (r0->info.kind)
    {
    case TW_COLL_ALLREDUCE:
      {
        g_autofree char *acc = g_malloc (MAX (n * esz, 1));
        memcpy (acc, s->reqs[0]->buf, n * esz);
        for (int i = 1; i < p; i++)
          tw_comm_reduce_into (acc, s->reqs[i]->buf, n, r0->dtype, r0->op);
        for (int i = 0; i < p; i++)
          memcpy (s->reqs[i]->buf, acc, n * esz);
        break;
      }
    case TW_COLL_REDUCE_SCATTER:
      {
        g_autofree char *acc = g_malloc (MAX (n * esz, 1));
        for (int b = 0; b < p; b++)
          {
            memcpy (acc, (const char *) s->reqs[0]->send + b * n * esz, n * esz);
            for (int i = 1; i < p; i++)
              tw_comm_reduce_into (acc, (const char *) s->reqs[i]->send + b * n * esz, n,
                                   r0->dtype, r0->op);
            memcpy (s->reqs[b]->recv, acc, n * esz);
          }
        break;
      }
    case TW_COLL_ALLGATHER:
      for (int i = 0; i < p; i++)
        for (int b = 0; b < p; b++)
          memcpy ((char *) s->reqs[i]->recv + b * n * esz, s->reqs[b]->send, n * esz);
      break;
    case TW_COLL_BROADCAST:
      for (int i = 0; i < p; i++)
        if (i != r0->info.peer)
          memcpy (s->reqs[i]->buf, s->reqs[r0->info.peer]->buf, n * esz);
      break;
    default:
      break;
    }
  for (int i = 0; i < p; i++)
    count_bytes (s->reqs[i], p);
  return NULL;
}

static char *
box_key (guint64 group, int src, int dst)
{
  return g_strdup_printf ("%" G_GUINT64_FORMAT ":%d:%d", group, src, dst);
}

static mailbox *
box_get (tw_sim_world *w, guint64 group, int src, int dst)
{
  char *k = box_key (group, src, dst);
  mailbox *b = g_hash_table_lookup (w->boxes, k);
  if (b == NULL)
    {
      b = g_new0 (mailbox, 1);
      g_queue_init (&b->sends);
      g_queue_init (&b->recvs);
      g_hash_table_insert (w->boxes, k, b);
    }
  else
    g_free (k);
  return b;
}

/* Under the lock: message m into receive r. */
static void
deliver (msg *m, tw_comm_req *r)
{
  GError *e = NULL;
  if (m->count != r->count || m->dtype != r->dtype)
    e = g_error_new (TW_COMM_ERROR, TW_COMM_ERROR_MISMATCH,
                     "message %" G_GUINT64_FORMAT " from rank %d holds %" G_GINT64_FORMAT
                     " elements, %" G_GINT64_FORMAT " were expected",
                     r->info.msg_seq, r->info.peer, m->count, r->count);
  else
    {
      memcpy (r->buf, m->data, m->count * tw_dtype_size (m->dtype));
      r->info.received = r->info.bytes;
    }
  finish (r, e);
  msg_free (m);
}

void
tw_comm_sim_post (tw_comm *c, tw_comm_req *r)
{
  tw_sim_world *w = c->owner->sim;
  g_mutex_lock (&w->lock);
  r->info.t_start = tw_now_ns ();
  tw_comm_flight_set (c, r, 1);
  if (w->broken)
    {
      finish (r, g_error_new (TW_COMM_ERROR, TW_COMM_ERROR_BROKEN,
                              "the communicator is broken by an earlier failure: %s",
                              w->broken->message));
      g_mutex_unlock (&w->lock);
      return;
    }
  if (r->type == REQ_P2P)
    {
      r->waiting_on = r->info.peer;
      if (r->info.kind == TW_COLL_SEND)
        {
          mailbox *b = box_get (w, c->sim_group, c->rank, r->info.peer);
          msg *m = g_new0 (msg, 1);
          size_t bytes = r->count * tw_dtype_size (r->dtype);
          m->data = g_memdup2 (r->buf, bytes);
          m->count = r->count;
          m->dtype = r->dtype;
          r->info.sent = r->info.bytes;
          tw_comm_req *waiting = g_queue_pop_head (&b->recvs);
          if (waiting)
            deliver (m, waiting);
          else
            g_queue_push_tail (&b->sends, m);
          finish (r, NULL);
        }
      else
        {
          mailbox *b = box_get (w, c->sim_group, r->info.peer, c->rank);
          msg *m = g_queue_pop_head (&b->sends);
          if (m)
            deliver (m, r);
          else
            g_queue_push_tail (&b->recvs, r);
        }
      g_mutex_unlock (&w->lock);
      return;
    }
  /* A collective, or a split. */
  g_autofree char *k = g_strdup_printf ("%" G_GUINT64_FORMAT ":%" G_GUINT64_FORMAT, c->sim_group,
                                        r->info.seq);
  slot *s = g_hash_table_lookup (w->slots, k);
  if (s == NULL)
    {
      s = g_new0 (slot, 1);
      s->reqs = g_new0 (tw_comm_req *, c->size);
      g_hash_table_insert (w->slots, g_strdup (k), s);
    }
  s->reqs[c->rank] = r;
  if (++s->arrived == c->size)
    {
      GError *e = perform (w, s, c->size);
      for (int i = 0; i < c->size; i++)
        finish (s->reqs[i], e ? g_error_copy (e) : NULL);
      g_clear_error (&e);
      g_hash_table_remove (w->slots, k);
    }
  g_mutex_unlock (&w->lock);
}

void
tw_comm_sim_cancel (tw_comm *c, tw_comm_req *r)
{
  tw_sim_world *w = c->owner->sim;
  g_mutex_lock (&w->lock);
  mailbox *b = box_get (w, c->sim_group, r->info.peer, c->rank);
  if (g_queue_remove (&b->recvs, r))
    finish (r, g_error_new (TW_COMM_ERROR, TW_COMM_ERROR_CANCELLED,
                            "receive from rank %d withdrawn", r->info.peer));
  g_mutex_unlock (&w->lock);
}

/* Under the world's lock: why r is late, naming the ranks that never came. */
static GError *
diagnose (tw_sim_world *w, tw_comm *c, tw_comm_req *r)
{
  g_autofree char *size = g_format_size_full ((guint64) r->info.bytes, G_FORMAT_SIZE_IEC_UNITS);
  double t = c->opt.timeout_s;
  if (r->type == REQ_P2P)
    return g_error_new (TW_COMM_ERROR, TW_COMM_ERROR_TIMEOUT,
                        "%s %s rank %d (message %" G_GUINT64_FORMAT ", %s) not done after %.0f s: "
                        "rank %d never %s it",
                        tw_coll_kind_name (r->info.kind),
                        r->info.kind == TW_COLL_SEND ? "to" : "from",
                        tw_comm_world_rank (c, r->info.peer), r->info.msg_seq, size, t,
                        tw_comm_world_rank (c, r->info.peer),
                        r->info.kind == TW_COLL_SEND ? "received" : "sent");
  g_autofree char *k = g_strdup_printf ("%" G_GUINT64_FORMAT ":%" G_GUINT64_FORMAT, c->sim_group,
                                        r->info.seq);
  slot *s = g_hash_table_lookup (w->slots, k);
  GString *missing = g_string_new (NULL);
  for (int i = 0; s && i < c->size; i++)
    if (s->reqs[i] == NULL)
      g_string_append_printf (missing, "%s%d", missing->len ? ", " : "",
                              tw_comm_world_rank (c, i));
  GError *e = g_error_new (TW_COMM_ERROR, TW_COMM_ERROR_TIMEOUT,
                           "collective #%" G_GUINT64_FORMAT " (%s, %s%s%s) not done after %.0f s: "
                           "rank%s %s never arrived",
                           r->info.seq, tw_coll_kind_name (r->info.kind), size,
                           r->info.what ? ", " : "", r->info.what ? r->info.what : "", t,
                           strchr (missing->str, ',') ? "s" : "",
                           missing->len ? missing->str : "?");
  g_string_free (missing, TRUE);
  return e;
}

void
tw_comm_sim_wait (tw_comm *c, tw_comm_req *r)
{
  tw_comm *o = c->owner;
  gint64 deadline = g_get_monotonic_time () + (gint64) (o->opt.timeout_s * G_TIME_SPAN_SECOND);
  g_mutex_lock (&o->lock);
  while (!r->done)
    if (!g_cond_wait_until (&o->cond, &o->lock, deadline) && !r->done)
      {
        g_mutex_unlock (&o->lock);
        tw_sim_world *w = o->sim;
        g_mutex_lock (&w->lock);
        if (!r->done)
          break_world (w, diagnose (w, c, r));
        g_mutex_unlock (&w->lock);
        g_mutex_lock (&o->lock);
        deadline = G_MAXINT64;
      }
  g_mutex_unlock (&o->lock);
}

void
tw_comm_sim_clock (tw_comm *c, tw_comm_req *r)
{
  /* One clock: every offset is zero, every round trip too. */
  r->offsets = g_new0 (gint64, c->size);
  r->rtts = g_new0 (gint64, c->size);
  tw_sim_world *w = c->owner->sim;
  g_mutex_lock (&w->lock);
  finish (r, w->broken ? g_error_copy (w->broken) : NULL);
  g_mutex_unlock (&w->lock);
}

void
tw_comm_sim_forget (tw_comm *c)
{
  tw_sim_world *w = c->sim;
  g_mutex_lock (&w->lock);
  if (c->rank < (int) w->comms->len && g_ptr_array_index (w->comms, c->rank) == c)
    g_ptr_array_index (w->comms, c->rank) = NULL;
  g_mutex_unlock (&w->lock);
}
