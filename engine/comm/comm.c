/* comm.c — the communicator's public half: handles, events, the flight
 * recorder.  The MPI half (the communication thread) is mpi.c. */
#define G_LOG_DOMAIN "twb-comm"

#include "engine/comm/comm-private.h"

#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

G_DEFINE_QUARK (tw-comm-error-quark, tw_comm_error)

static const char *const kind_names[TW_COLL_N_KINDS] = {
  "allreduce", "reduce_scatter", "allgather", "broadcast", "send", "recv", "barrier",
};

static const char *const algo_names[TW_ALGO_N] = { "mpi", "ring", "tree", "ps", "hier" };

const char *
tw_coll_kind_name (tw_coll_kind kind)
{
  return kind < TW_COLL_N_KINDS ? kind_names[kind] : "?";
}

const char *
tw_algo_name (tw_algo algo)
{
  return algo < TW_ALGO_N ? algo_names[algo] : "?";
}

gboolean
tw_algo_from_name (const char *name, tw_algo *out, GError **error)
{
  for (int i = 0; i < TW_ALGO_N; i++)
    if (name && strcmp (name, algo_names[i]) == 0)
      {
        *out = i;
        return TRUE;
      }
  g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG,
               "unknown all-reduce algorithm '%s' (known: mpi, ring, tree, ps, hier)",
               name ? name : "");
  return FALSE;
}

void
tw_comm_options_init (tw_comm_options *o)
{
  memset (o, 0, sizeof *o);
  o->algo = TW_ALGO_MPI;
  o->timeout_s = 60;
  o->ps_rank = -1;
}

gboolean
tw_comm_launched (void)
{
  static const char *const vars[] = { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE",
                                      "MPI_LOCALNRANKS", NULL };
  for (int i = 0; vars[i]; i++)
    {
      const char *v = g_getenv (vars[i]);
      if (v && atoi (v) > 1)
        return TRUE;
    }
  return FALSE;
}

tw_comm *
tw_comm_alloc_world (const tw_comm_options *options)
{
  tw_comm *c = g_new0 (tw_comm, 1);
  if (options)
    c->opt = *options;
  else
    tw_comm_options_init (&c->opt);
  if (!(c->opt.timeout_s > 0))
    c->opt.timeout_s = 60;
  c->queue = g_async_queue_new ();
  g_mutex_init (&c->lock);
  g_cond_init (&c->cond);
  g_mutex_init (&c->flight_lock);
  c->world = c->p2p = c->algo = c->ctrl = c->node = c->leaders = MPI_COMM_NULL;
  c->owner = c;
  c->name = g_strdup ("world");
  c->children = g_ptr_array_new ();
  return c;
}

void
tw_comm_set_world_size (tw_comm *c)
{
  c->msg_to = g_new0 (guint64, c->size);
  c->msg_from = g_new0 (guint64, c->size);
  c->world_ranks = g_new (int, c->size);
  for (int i = 0; i < c->size; i++)
    c->world_ranks[i] = i;
}

tw_comm *
tw_comm_new_mpi (const tw_comm_options *options, GError **error)
{
  static gint made;
  if (!g_atomic_int_compare_and_exchange (&made, 0, 1))
    {
      g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_INIT,
                   "MPI can be started once per process");
      return NULL;
    }
  tw_comm *c = tw_comm_alloc_world (options);
  c->thread = g_thread_new ("twb-comm", tw_comm_mpi_thread, c);
  g_mutex_lock (&c->lock);
  while (!c->started)
    g_cond_wait (&c->cond, &c->lock);
  g_mutex_unlock (&c->lock);
  if (c->init_error)
    {
      g_propagate_error (error, g_steal_pointer (&c->init_error));
      g_thread_join (c->thread);
      c->thread = NULL;
      tw_comm_free (c);
      return NULL;
    }
  tw_comm_set_world_size (c);
  return c;
}

static void
comm_struct_free (tw_comm *c)
{
  g_mutex_clear (&c->flight_lock);
  g_clear_pointer (&c->bus, tw_bus_unref);
  g_free (c->msg_to);
  g_free (c->msg_from);
  g_free (c->host);
  g_free (c->name);
  g_free (c->world_ranks);
  g_free (c);
}

static tw_comm_req *req_new (tw_comm *c, tw_coll_kind kind, int64_t count, tw_dtype dtype,
                             const tw_coll_tag *tag);
static tw_comm_req *post (tw_comm *c, tw_comm_req *r);

static void
info_clear (tw_coll_info *i)
{
  g_free (i->what);
  g_strfreev (i->params);
}

static void
wait_done (tw_comm *c, tw_comm_req *r)
{
  if (c->owner->sim && r->type != REQ_QUIT)
    {
      tw_comm_sim_wait (c, r);
      return;
    }
  c = c->owner;
  g_mutex_lock (&c->lock);
  while (!r->done)
    g_cond_wait (&c->cond, &c->lock);
  g_mutex_unlock (&c->lock);
}

void
tw_comm_req_free (tw_comm_req *r)
{
  if (r == NULL)
    return;
  /* Nothing is freed under the communication thread's feet. */
  if (r->comm)
    wait_done (r->comm, r);
  info_clear (&r->info);
  g_clear_error (&r->error);
  g_free (r->offsets);
  g_free (r->rtts);
  g_free (r);
}

void
tw_comm_free (tw_comm *c)
{
  if (c == NULL)
    return;
  /* A split communicator lives (for the MPI calls its thread may still
   * make) until the owner goes. */
  if (c->owner != c)
    return;
  if (c->sim)
    tw_comm_sim_forget (c);
  if (c->thread)
    {
      tw_comm_req *q = g_new0 (tw_comm_req, 1);
      q->comm = c;
      q->type = REQ_QUIT;
      g_async_queue_push (c->queue, q);
      g_thread_join (c->thread);
      tw_comm_req_free (q);
    }
  for (guint i = 0; c->children && i < c->children->len; i++)
    comm_struct_free (g_ptr_array_index (c->children, i));
  g_clear_pointer (&c->children, g_ptr_array_unref);
  g_async_queue_unref (c->queue);
  g_mutex_clear (&c->lock);
  g_cond_clear (&c->cond);
  g_clear_error (&c->init_error);
  comm_struct_free (c);
}

tw_comm *
tw_comm_split (tw_comm *c, int color, int key, const char *name, GError **error)
{
  tw_comm *o = c->owner;
  tw_comm_req *r = req_new (c, TW_COLL_BARRIER, 0, TW_U8, &(tw_coll_tag) { .what = name });
  r->type = REQ_SPLIT;
  r->split_color = color < 0 ? -1 : color;
  r->split_key = key;
  tw_comm *child = g_new0 (tw_comm, 1);
  child->owner = o;
  child->opt = c->opt;
  child->opt.ps_rank = -1;
  child->name = g_strdup (name ? name : "split");
  child->host = g_strdup (c->host);
  child->world = child->p2p = child->algo = child->ctrl = child->node = child->leaders
    = MPI_COMM_NULL;
  g_mutex_init (&child->flight_lock);
  r->split_child = child;
  post (c, r);
  gboolean ok = tw_comm_wait (c, r, error);
  tw_comm_req_free (r);
  if (!ok || color < 0)
    {
      comm_struct_free (child);
      return NULL;
    }
  g_mutex_lock (&o->lock);
  child->id = (int) o->children->len + 1;
  g_ptr_array_add (o->children, child);
  g_mutex_unlock (&o->lock);
  child->msg_to = g_new0 (guint64, child->size);
  child->msg_from = g_new0 (guint64, child->size);
  return child;
}

const char *
tw_comm_name (const tw_comm *c)
{
  return c->name;
}

int
tw_comm_world_rank (const tw_comm *c, int rank)
{
  return rank >= 0 && rank < c->size ? c->world_ranks[rank] : -1;
}

void
tw_comm_abort (tw_comm *c, int code)
{
  /* Not MPI_Abort: when every rank fails at once (an error they all hit)
   * their aborts race in Open MPI 4.1's mpirun (help-message unpacking)
   * and a rank could print a crash report instead of its error.  A rank
   * that exits non-zero without finalising ends the job just as well:
   * mpirun stops the others at once (orte_abort_on_non_zero_status). */
  (void) c;
  fflush (stdout);
  fflush (stderr);
  _exit (code ? code : 1);
}

int
tw_comm_rank (const tw_comm *c)
{
  return c->rank;
}

int
tw_comm_size (const tw_comm *c)
{
  return c->size;
}

const tw_comm_options *
tw_comm_get_options (const tw_comm *c)
{
  return &c->opt;
}

const char *
tw_comm_host (const tw_comm *c)
{
  return c->host;
}

void
tw_comm_set_bus (tw_comm *c, tw_bus *bus)
{
  if (bus)
    tw_bus_ref (bus);
  g_clear_pointer (&c->bus, tw_bus_unref);
  c->bus = bus;
}

void
tw_comm_set_algo (tw_comm *c, tw_algo algo)
{
  g_return_if_fail (algo < TW_ALGO_N);
  c->opt.algo = algo;       /* read by req_new, on the caller's thread */
}

gboolean
tw_comm_is_broken (const tw_comm *c)
{
  return g_atomic_int_get (&c->owner->broken) != 0;
}

const tw_coll_info *
tw_comm_req_info (const tw_comm_req *r)
{
  return &r->info;
}

static tw_comm_req *
req_new (tw_comm *c, tw_coll_kind kind, int64_t count, tw_dtype dtype, const tw_coll_tag *tag)
{
  tw_comm_req *r = g_new0 (tw_comm_req, 1);
  r->comm = c;
  r->type = kind == TW_COLL_SEND || kind == TW_COLL_RECV ? REQ_P2P : REQ_COLL;
  r->info.kind = kind;
  r->info.algo = kind == TW_COLL_ALLREDUCE ? c->opt.algo : TW_ALGO_MPI;
  r->info.rank = c->rank;
  r->info.size = c->size;
  r->info.peer = -1;
  r->info.bytes = count > 0 && dtype < TW_N_DTYPES ? count * (gint64) tw_dtype_size (dtype) : 0;
  r->info.t_post = tw_now_ns ();
  if (tag)
    {
      r->info.what = g_strdup (tag->what);
      r->info.params = tag->params ? g_strdupv ((char **) tag->params) : NULL;
    }
  r->count = count;
  r->dtype = dtype;
  r->waiting_on = -1;
  return r;
}

static void
complete_now (tw_comm *c, tw_comm_req *r, GError *error)
{
  r->error = error;
  r->info.t_start = r->info.t_end = tw_now_ns ();
  r->done = TRUE;
  (void) c;
}

static tw_comm_req *
post (tw_comm *c, tw_comm_req *r)
{
  /* The simulator says what broke its world (sim.c). */
  if (tw_comm_is_broken (c) && !c->owner->sim)
    {
      complete_now (c, r,
                    g_error_new (TW_COMM_ERROR, TW_COMM_ERROR_BROKEN,
                                 "the communicator is broken by an earlier failure"));
      return r;
    }
  if (r->count < 0 || (r->count > 0 && r->count > G_MAXINT)
      || (r->info.kind != TW_COLL_BARRIER && r->dtype >= TW_N_DTYPES))
    {
      complete_now (c, r,
                    g_error_new (TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                                 "%s of %" G_GINT64_FORMAT
                                 " elements: a count from 0 to 2^31 - 1 is needed",
                                 tw_coll_kind_name (r->info.kind), r->count));
      return r;
    }
  /* Numbered only once accepted: a call refused here is this rank's
   * alone, and must not shift the numbers every rank (collectives) or the
   * peer (messages) gives the next ones. */
  if (r->type == REQ_COLL || r->type == REQ_SPLIT)
    r->info.seq = ++c->seq;
  else if (r->type == REQ_P2P && r->info.kind == TW_COLL_SEND)
    r->info.msg_seq = ++c->msg_to[r->info.peer];
  else if (r->type == REQ_P2P)
    r->info.msg_seq = ++c->msg_from[r->info.peer];
  tw_comm_flight_set (c, r, 0);
  if (c->owner->sim)
    tw_comm_sim_post (c, r);
  else
    g_async_queue_push (c->owner->queue, r);
  return r;
}

tw_comm_req *
tw_comm_allreduce (tw_comm *c, void *buf, int64_t count, tw_dtype dtype, tw_reduce_op op,
                   const tw_coll_tag *tag)
{
  tw_comm_req *r = req_new (c, TW_COLL_ALLREDUCE, count, dtype, tag);
  r->buf = buf;
  r->op = op;
  return post (c, r);
}

tw_comm_req *
tw_comm_reduce_scatter (tw_comm *c, const void *send, void *recv, int64_t count, tw_dtype dtype,
                        tw_reduce_op op, const tw_coll_tag *tag)
{
  tw_comm_req *r = req_new (c, TW_COLL_REDUCE_SCATTER, count, dtype, tag);
  r->info.bytes *= c->size;
  r->send = send;
  r->recv = recv;
  r->op = op;
  return post (c, r);
}

tw_comm_req *
tw_comm_allgather (tw_comm *c, const void *send, void *recv, int64_t count, tw_dtype dtype,
                   const tw_coll_tag *tag)
{
  tw_comm_req *r = req_new (c, TW_COLL_ALLGATHER, count, dtype, tag);
  r->send = send;
  r->recv = recv;
  return post (c, r);
}

tw_comm_req *
tw_comm_broadcast (tw_comm *c, void *buf, int64_t count, tw_dtype dtype, int root,
                   const tw_coll_tag *tag)
{
  tw_comm_req *r = req_new (c, TW_COLL_BROADCAST, count, dtype, tag);
  r->buf = buf;
  r->info.peer = root;
  if (root < 0 || root >= c->size)
    {
      complete_now (c, r,
                    g_error_new (TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                                 "broadcast from rank %d: the ranks are 0 to %d", root,
                                 c->size - 1));
      return r;
    }
  return post (c, r);
}

static tw_comm_req *
p2p (tw_comm *c, tw_coll_kind kind, void *buf, int64_t count, tw_dtype dtype, int peer,
     const tw_coll_tag *tag)
{
  tw_comm_req *r = req_new (c, kind, count, dtype, tag);
  r->buf = buf;
  r->info.peer = peer;
  if (peer < 0 || peer >= c->size || peer == c->rank)
    {
      complete_now (c, r,
                    g_error_new (TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                                 "%s with rank %d: this is rank %d, the others are 0 to %d",
                                 tw_coll_kind_name (kind), peer, c->rank, c->size - 1));
      return r;
    }
  return post (c, r);
}

tw_comm_req *
tw_comm_send (tw_comm *c, const void *buf, int64_t count, tw_dtype dtype, int dest,
              const tw_coll_tag *tag)
{
  return p2p (c, TW_COLL_SEND, (void *) buf, count, dtype, dest, tag);
}

tw_comm_req *
tw_comm_recv (tw_comm *c, void *buf, int64_t count, tw_dtype dtype, int source,
              const tw_coll_tag *tag)
{
  return p2p (c, TW_COLL_RECV, buf, count, dtype, source, tag);
}

tw_comm_req *
tw_comm_barrier (tw_comm *c, const tw_coll_tag *tag)
{
  tw_comm_req *r = req_new (c, TW_COLL_BARRIER, 0, TW_U8, tag);
  return post (c, r);
}

static void
publish (tw_comm *c, tw_comm_req *r)
{
  if (r->type != REQ_COLL && r->type != REQ_P2P)
    return;
  if (!tw_bus_wants (c->bus, TW_EV_COLLECTIVE))
    return;
  tw_event ev = { .kind = TW_EV_COLLECTIVE, .t_start = r->info.t_start, .coll = &r->info };
  if (!r->published_begin)
    {
      r->published_begin = TRUE;
      tw_bus_publish (c->bus, &ev);
    }
  if (!r->published_end)
    {
      r->published_end = TRUE;
      ev.end = TRUE;
      ev.t_end = r->info.t_end;
      tw_bus_publish (c->bus, &ev);
    }
}

void
tw_comm_cancel (tw_comm *c, tw_comm_req *r)
{
  if (r == NULL || r->type != REQ_P2P || r->info.kind != TW_COLL_RECV || tw_comm_test (c, r))
    return;
  if (c->owner->sim)
    {
      tw_comm_sim_cancel (c, r);
      return;
    }
  tw_comm_req *q = g_new0 (tw_comm_req, 1);
  q->comm = c;
  q->type = REQ_CANCEL;
  q->cancel_target = r;
  g_async_queue_push (c->owner->queue, q);
  wait_done (c, q);
  tw_comm_req_free (q);
}

gboolean
tw_comm_wait (tw_comm *c, tw_comm_req *r, GError **error)
{
  wait_done (c, r);
  publish (c, r);
  if (r->error)
    {
      if (error)
        *error = g_error_copy (r->error);
      return FALSE;
    }
  return TRUE;
}

gboolean
tw_comm_test (tw_comm *c, tw_comm_req *r)
{
  g_mutex_lock (&c->owner->lock);
  gboolean done = r->done;
  g_mutex_unlock (&c->owner->lock);
  if (done)
    publish (c, r);
  return done;
}

gboolean
tw_comm_allreduce_sync (tw_comm *c, void *buf, int64_t count, tw_dtype dtype, tw_reduce_op op,
                        const tw_coll_tag *tag, GError **error)
{
  tw_comm_req *r = tw_comm_allreduce (c, buf, count, dtype, op, tag);
  gboolean ok = tw_comm_wait (c, r, error);
  tw_comm_req_free (r);
  return ok;
}

gboolean
tw_comm_broadcast_sync (tw_comm *c, void *buf, int64_t count, tw_dtype dtype, int root,
                        const tw_coll_tag *tag, GError **error)
{
  tw_comm_req *r = tw_comm_broadcast (c, buf, count, dtype, root, tag);
  gboolean ok = tw_comm_wait (c, r, error);
  tw_comm_req_free (r);
  return ok;
}

gboolean
tw_comm_barrier_sync (tw_comm *c, GError **error)
{
  tw_comm_req *r = tw_comm_barrier (c, &(tw_coll_tag) { .what = "barrier" });
  gboolean ok = tw_comm_wait (c, r, error);
  tw_comm_req_free (r);
  return ok;
}

char **
tw_comm_allgather_strings (tw_comm *c, const char *mine, GError **error)
{
  int p = c->size;
  int64_t len = mine ? (int64_t) strlen (mine) : 0;
  g_autofree int64_t *lens = g_new0 (int64_t, p);
  tw_comm_req *r = tw_comm_allgather (c, &len, lens, 1, TW_I64, &(tw_coll_tag) { .what = "check" });
  gboolean ok = tw_comm_wait (c, r, error);
  tw_comm_req_free (r);
  if (!ok)
    return NULL;
  int64_t max = 1;
  for (int i = 0; i < p; i++)
    max = MAX (max, lens[i]);
  g_autofree char *pad = g_malloc0 (max);
  if (len)
    memcpy (pad, mine, len);
  g_autofree char *all = g_malloc0 (max * p);
  r = tw_comm_allgather (c, pad, all, max, TW_U8, &(tw_coll_tag) { .what = "check" });
  ok = tw_comm_wait (c, r, error);
  tw_comm_req_free (r);
  if (!ok)
    return NULL;
  char **out = g_new0 (char *, p + 1);
  for (int i = 0; i < p; i++)
    out[i] = g_strndup (all + i * max, CLAMP (lens[i], 0, max));
  return out;
}

gboolean
tw_comm_clock_offsets (tw_comm *c, int rounds, gint64 **offsets_ns, gint64 **rtt_ns,
                       GError **error)
{
  tw_comm_req *r = g_new0 (tw_comm_req, 1);
  r->comm = c;
  r->type = REQ_CLOCK;
  r->waiting_on = -1;
  r->clock_rounds = MAX (rounds, 1);
  r->info.kind = TW_COLL_BARRIER;
  r->info.peer = -1;
  if (tw_comm_is_broken (c))
    complete_now (c, r,
                  g_error_new (TW_COMM_ERROR, TW_COMM_ERROR_BROKEN,
                               "the communicator is broken by an earlier failure"));
  else if (c->owner->sim)
    tw_comm_sim_clock (c, r);
  else
    g_async_queue_push (c->owner->queue, r);
  gboolean ok = tw_comm_wait (c, r, error);
  if (ok)
    {
      *offsets_ns = g_steal_pointer (&r->offsets);
      if (rtt_ns)
        *rtt_ns = g_steal_pointer (&r->rtts);
    }
  tw_comm_req_free (r);
  return ok;
}

/* The flight recorder. */

void
tw_comm_flight_set (tw_comm *c, tw_comm_req *r, int state)
{
  if (r->type != REQ_COLL && r->type != REQ_P2P)
    return;
  g_mutex_lock (&c->flight_lock);
  if (state == 0)
    r->flight = ++c->flight_n;
  else if (r->flight == 0 || c->flight_n - r->flight >= TW_FLIGHT_SLOTS)
    {
      g_mutex_unlock (&c->flight_lock);     /* overwritten since */
      return;
    }
  tw_flight_entry *e = &c->flight[(r->flight - 1) % TW_FLIGHT_SLOTS];
  e->seq = r->info.seq;
  e->msg_seq = r->info.msg_seq;
  e->kind = r->info.kind;
  e->algo = r->info.algo;
  e->peer = r->info.peer;
  e->bytes = r->info.bytes;
  g_strlcpy (e->what, r->info.what ? r->info.what : "", sizeof e->what);
  e->t_post = r->info.t_post;
  e->t_start = r->info.t_start;
  e->t_end = r->info.t_end;
  e->state = state;
  g_mutex_unlock (&c->flight_lock);
}

char *
tw_comm_flight_dump (tw_comm *c, int last)
{
  GString *s = g_string_new (NULL);
  gint64 now = tw_now_ns ();
  g_mutex_lock (&c->flight_lock);
  guint64 keep = last > 0 ? MIN ((guint64) last, TW_FLIGHT_SLOTS) : TW_FLIGHT_SLOTS;
  guint64 first = c->flight_n > keep ? c->flight_n - keep : 0;
  for (guint64 i = first; i < c->flight_n; i++)
    {
      const tw_flight_entry *e = &c->flight[i % TW_FLIGHT_SLOTS];
      g_autofree char *size = g_format_size_full ((guint64) e->bytes, G_FORMAT_SIZE_IEC_UNITS);
      if (e->kind == TW_COLL_SEND || e->kind == TW_COLL_RECV)
        g_string_append_printf (s, "%s %s rank %d (message %" G_GUINT64_FORMAT ") %s",
                                tw_coll_kind_name (e->kind), e->kind == TW_COLL_SEND ? "to" : "from",
                                e->peer, e->msg_seq, size);
      else
        g_string_append_printf (s, "#%" G_GUINT64_FORMAT " %s%s%s %s", e->seq,
                                tw_coll_kind_name (e->kind),
                                e->kind == TW_COLL_ALLREDUCE ? " " : "",
                                e->kind == TW_COLL_ALLREDUCE ? tw_algo_name (e->algo) : "", size);
      if (e->what[0])
        g_string_append_printf (s, " %s", e->what);
      switch (e->state)
        {
        case 0:
          g_string_append_printf (s, ": posted %.1f s ago, not started\n",
                                  (now - e->t_post) / 1e9);
          break;
        case 1:
          g_string_append_printf (s, ": waiting for %.1f s\n", (now - e->t_start) / 1e9);
          break;
        case 2:
          g_string_append_printf (s, ": done in %.3f ms\n", (e->t_end - e->t_start) / 1e6);
          break;
        default:
          g_string_append_printf (s, ": failed after %.1f s\n", (e->t_end - e->t_start) / 1e9);
        }
    }
  g_mutex_unlock (&c->flight_lock);
  if (s->len == 0)
    g_string_append (s, "no collectives or messages yet\n");
  return g_string_free (s, FALSE);
}

static tw_comm *sigusr1_comm;
static volatile sig_atomic_t sigusr1_pending;

static void
on_sigusr1 (int sig)
{
  (void) sig;
  sigusr1_pending = 1;
}

/* Called by the communication thread's loop. */
void tw_comm_check_sigusr1 (tw_comm *c);

void
tw_comm_check_sigusr1 (tw_comm *c)
{
  if (!sigusr1_pending || sigusr1_comm != c)
    return;
  sigusr1_pending = 0;
  g_autofree char *d = tw_comm_flight_dump (c, 0);
  g_autofree char *pre = g_strdup_printf ("rank %d: ", c->rank);
  g_auto (GStrv) lines = g_strsplit (d, "\n", -1);
  GString *out = g_string_new (NULL);
  g_string_append_printf (out, "%slast collectives and messages (oldest first):\n", pre);
  for (int i = 0; lines[i]; i++)
    if (lines[i][0])
      g_string_append_printf (out, "%s  %s\n", pre, lines[i]);
  fputs (out->str, stderr);
  fflush (stderr);
  g_string_free (out, TRUE);
}

void
tw_comm_dump_on_sigusr1 (tw_comm *c)
{
  sigusr1_comm = c;
  struct sigaction sa;
  memset (&sa, 0, sizeof sa);
  sa.sa_handler = on_sigusr1;
  sigemptyset (&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction (SIGUSR1, &sa, NULL);
}
