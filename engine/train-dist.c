/* train-dist.c — the data-parallel step (train.h, "Data parallel"): this
 * rank's shard of the global batch, gradients bucketed on grad_ready and
 * all-reduced while backward goes on, updates from the summed gradients. */
#define G_LOG_DOMAIN "twb-train"

#include "engine/comm/comm.h"
#include "engine/comm/compress.h"
#include "engine/train-private.h"

#include <math.h>
#include <sched.h>
#include <string.h>

typedef struct
{
  int *members;               /* params indices, in bucket order */
  int64_t *offsets;           /* of each member in buf (floats) */
  int n_members;
  int64_t numel;
  float *buf;
  int pending;                /* members whose gradient is not in buf yet */
  gboolean *filled;
  gboolean posted;
  tw_comm_req *req;
  tw_compress_op *zop;        /* its reduction, compressed */
  tw_compress_member *layout; /* its members' offsets and shapes, for the compressor */
  char *what;
  char **names;
  /* ZeRO-1: this rank's shard of buf is [shard_lo, shard_lo + shard);
   * buf holds shard × size floats (zero padding after numel). */
  int64_t shard, shard_lo;
  float *part;                /* the shard: its summed gradient, then its weights */
  float *state[2];            /* the optimizer's state of the shard (NULL: not yet) */
  tw_comm_req *gather;        /* the weights' all-gather */
} bucket;

struct tw_dist
{
  tw_comm *comm;
  tw_compressor *z;           /* gradient compression, or NULL */
  tw_dist_options opt;
  int rank, size;
  bucket *buckets;
  int n_buckets;
  int next_post;              /* buckets are posted in index order on every rank */
  GHashTable *where;          /* tw_param* → 1 + bucket index × 2^20 + member index */
  int n_params;               /* what the buckets were made for */
  tw_param **param_ptrs;
  gboolean ordered;           /* buckets rebuilt in grad_ready order after the first step */
  GArray *ready_order;        /* params indices, as grad_ready came this step */
  tw_bus *sub_bus;
  guint sub_id;
  double scale;               /* this shard's share of the batch */
  gboolean in_step;
  GError *cb_error;
  int64_t correct;
  float *buffers;             /* the non-trainable tensors (running statistics), packed */
  int64_t buffers_numel;
  /* Totals for tw_trainer_dist_stats. */
  int64_t steps;
  double payload, sent, last_sent;
  gint64 exposed_ns;
  double step_payload, step_sent;
  /* Asynchronous: the flat weights / gradient and the message buffers. */
  gboolean async;
  int server;                 /* its rank */
  int64_t flat_n;             /* floats of every trainable parameter */
  guint8 *msg;                /* a worker's push (header + gradient) and pull */
  guint8 **srv_in;            /* the server: one push buffer per worker */
  tw_comm_req **srv_req;      /* the server: the receive posted for each worker */
  guint8 **srv_out;           /* the server: one pull buffer per worker */
  tw_comm_req **srv_out_req;
  int64_t *srv_count;         /* gradients received from each worker */
  gboolean *srv_waiting;      /* a worker awaits its reply */
  int64_t version;            /* the server's updates so far */
  double stale_sum;
  int64_t stale_max, n_updates;
  double round_loss;          /* loss × rows of the gradients of the server's last step */
  double round_rows;
  /* What the worker last heard. */
  double heard_loss, heard_stale_mean;
  int64_t heard_stale_max, heard_updates;
};

static double state_bytes (tw_trainer *tr, tw_dist *d);

void
tw_dist_options_init (tw_dist_options *o)
{
  memset (o, 0, sizeof *o);
  o->bucket_mb = 25;
  o->async_staleness = -1;
}

static void
buckets_clear (tw_dist *d)
{
  for (int b = 0; b < d->n_buckets; b++)
    {
      bucket *k = &d->buckets[b];
      tw_comm_req_free (k->req);
      tw_comm_req_free (k->gather);
      g_free (k->part);
      g_free (k->state[0]);
      g_free (k->state[1]);
      if (k->zop)
        tw_compressor_finish (d->z, k->zop, NULL);
      g_free (k->layout);
      g_free (k->members);
      g_free (k->offsets);
      g_free (k->filled);
      g_free (k->buf);
      g_free (k->what);
      g_strfreev (k->names);
    }
  g_clear_pointer (&d->buckets, g_free);
  d->n_buckets = 0;
  if (d->where)
    g_hash_table_remove_all (d->where);
}

void
tw_dist_free (tw_dist *d)
{
  if (d == NULL)
    return;
  if (d->sub_bus)
    {
      tw_bus_unsubscribe (d->sub_bus, d->sub_id);
      tw_bus_unref (d->sub_bus);
    }
  buckets_clear (d);
  g_clear_pointer (&d->z, tw_compressor_free);
  g_clear_pointer (&d->where, g_hash_table_unref);
  g_clear_pointer (&d->ready_order, g_array_unref);
  g_clear_error (&d->cb_error);
  g_free (d->param_ptrs);
  g_free (d->buffers);
  g_free (d->msg);
  for (int w = 0; d->srv_in && w < d->size; w++)
    {
      /* The push posted ahead for a step that did not come. */
      tw_comm_cancel (d->comm, d->srv_req[w]);
      tw_comm_req_free (d->srv_req[w]);
      tw_comm_req_free (d->srv_out_req[w]);
      g_free (d->srv_in[w]);
      g_free (d->srv_out[w]);
    }
  g_free (d->srv_in);
  g_free (d->srv_req);
  g_free (d->srv_out);
  g_free (d->srv_out_req);
  g_free (d->srv_count);
  g_free (d->srv_waiting);
  g_free (d);
}

/* Buckets over the trainable parameters in `order` (params indices):
 * each takes parameters until it holds bucket_mb or more (PyTorch DDP's
 * rule, tw_dist_bucket_cut). */
static void
buckets_make (tw_dist *d, tw_params *ps, const int *order, int n)
{
  buckets_clear (d);
  /* The cut is tw_dist_bucket_cut's (the editor predicts with it too). */
  g_autofree int64_t *numel = g_new (int64_t, MAX (n, 1));
  g_autofree int *bucket_of = g_new (int, MAX (n, 1));
  for (int j = 0; j < n; j++)
    numel[j] = tw_tensor_numel (tw_params_at (ps, order[j])->value);
  int nb = tw_dist_bucket_cut (numel, n, d->opt.bucket_mb, bucket_of);
  GPtrArray *all = g_ptr_array_new ();
  for (int b = 0; b < nb; b++)
    g_ptr_array_add (all, g_array_new (FALSE, FALSE, sizeof (int)));
  for (int j = 0; j < n; j++)
    g_array_append_val ((GArray *) g_ptr_array_index (all, bucket_of[j]), order[j]);
  d->n_buckets = (int) all->len;
  d->buckets = g_new0 (bucket, MAX (d->n_buckets, 1));
  for (int b = 0; b < d->n_buckets; b++)
    {
      GArray *m = g_ptr_array_index (all, b);
      bucket *k = &d->buckets[b];
      k->n_members = (int) m->len;
      k->members = g_memdup2 (m->data, m->len * sizeof (int));
      k->offsets = g_new (int64_t, m->len);
      k->layout = g_new0 (tw_compress_member, m->len);
      k->filled = g_new0 (gboolean, m->len);
      k->names = g_new0 (char *, m->len + 1);
      for (guint i = 0; i < m->len; i++)
        {
          tw_param *p = tw_params_at (ps, k->members[i]);
          k->offsets[i] = k->numel;
          k->layout[i].offset = k->numel;
          k->layout[i].numel = tw_tensor_numel (p->value);
          k->layout[i].ndim = MIN (p->value->ndim, 6);
          for (int j = 0; j < k->layout[i].ndim; j++)
            k->layout[i].shape[j] = p->value->shape[j];
          k->numel += tw_tensor_numel (p->value);
          k->names[i] = g_strdup (p->name);
          g_hash_table_insert (d->where, p, GINT_TO_POINTER (1 + (b << 20) + (int) i));
        }
      if (d->opt.shard_optimizer)
        {
          k->shard = (k->numel + d->size - 1) / d->size;
          k->shard_lo = k->shard * d->rank;
          k->part = g_new0 (float, MAX (k->shard, 1));
          k->buf = g_new0 (float, MAX (k->shard * d->size, 1));
        }
      else
        k->buf = g_new0 (float, MAX (k->numel, 1));
      k->what = g_strdup_printf ("bucket %d", b);
      g_array_unref (m);
    }
  g_ptr_array_free (all, TRUE);
}

/* The trainable parameters, last first (the first step's guess at the
 * order backward finishes them, as DDP's). */
static void
buckets_initial (tw_dist *d, tw_params *ps)
{
  int n = tw_params_count (ps), k = 0;
  g_autofree int *order = g_new (int, MAX (n, 1));
  for (int i = n - 1; i >= 0; i--)
    if (tw_params_at (ps, i)->trainable)
      order[k++] = i;
  buckets_make (d, ps, order, k);
  g_free (d->param_ptrs);
  d->param_ptrs = g_new (tw_param *, MAX (n, 1));
  for (int i = 0; i < n; i++)
    d->param_ptrs[i] = tw_params_at (ps, i);
  d->n_params = n;
  d->ordered = FALSE;
}

static gboolean
params_changed (tw_dist *d, tw_params *ps)
{
  int n = tw_params_count (ps);
  if (n != d->n_params)
    return TRUE;
  for (int i = 0; i < n; i++)
    if (d->param_ptrs[i] != tw_params_at (ps, i))
      return TRUE;
  return FALSE;
}

static void
post_ready_buckets (tw_dist *d)
{
  gboolean any = FALSE;
  while (d->next_post < d->n_buckets && d->buckets[d->next_post].pending == 0)
    {
      int b = d->next_post++;
      bucket *k = &d->buckets[b];
      tw_coll_tag tag = { .what = k->what, .params = (const char *const *) k->names };
      if (d->z)
        k->zop = tw_compressor_start (d->z, d->comm, b, k->buf, k->numel, k->layout,
                                      k->n_members, &tag);
      else if (d->opt.shard_optimizer)
        k->req = tw_comm_reduce_scatter (d->comm, k->buf, k->part, k->shard, TW_F32,
                                         TW_REDUCE_SUM, &tag);
      else
        k->req = tw_comm_allreduce (d->comm, k->buf, k->numel, TW_F32, TW_REDUCE_SUM, &tag);
      k->posted = TRUE;
      any = TRUE;
    }
  /* Let the communication thread start it now if it shares our core
   * (more threads than cores): else it may wait for a scheduler tick. */
  if (any)
    sched_yield ();
}

static int
param_index (tw_dist *d, const tw_param *p)
{
  for (int i = 0; i < d->n_params; i++)
    if (d->param_ptrs[i] == p)
      return i;
  return -1;
}

static void
fill (tw_dist *d, bucket *k, int m, const tw_tensor *grad)
{
  float *dst = k->buf + k->offsets[m];
  int64_t n = (m + 1 < k->n_members ? k->offsets[m + 1] : k->numel) - k->offsets[m];
  if (grad == NULL || tw_tensor_numel (grad) != n)
    memset (dst, 0, n * sizeof (float));
  else
    {
      g_autoptr (tw_tensor) h = tw_tensor_to_host ((tw_tensor *) grad);
      g_autoptr (tw_tensor) c = tw_tensor_contiguous (h);
      const float *src = tw_tensor_f32 (c);
      float s = (float) d->scale;
      for (int64_t i = 0; i < n; i++)
        dst[i] = src[i] * s;
    }
  k->filled[m] = TRUE;
  k->pending--;
}

static gboolean
on_grad_ready (const tw_event *ev, gpointer user)
{
  tw_dist *d = user;
  if (!d->in_step || ev->param == NULL || d->opt.local_sgd > 0 || d->async)
    return TRUE;
  gpointer v = g_hash_table_lookup (d->where, ev->param);
  if (v == NULL)
    return TRUE;
  int code = GPOINTER_TO_INT (v) - 1, b = code >> 20, m = code & ((1 << 20) - 1);
  bucket *k = &d->buckets[b];
  if (k->filled[m])
    return TRUE;
  if (ev->grad == NULL && !isnan (ev->grad_norm) && d->cb_error == NULL)
    d->cb_error = g_error_new (TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH,
                               "data parallel: the gradient of %s was fused into its update",
                               ev->param->name);
  fill (d, k, m, ev->grad);
  if (!d->ordered)
    {
      int i = param_index (d, ev->param);
      g_array_append_val (d->ready_order, i);
    }
  post_ready_buckets (d);
  return TRUE;
}

static void
subscribe (tw_trainer *tr, tw_dist *d)
{
  if (d->sub_bus == tr->bus && d->sub_bus)
    return;
  if (d->sub_bus)
    {
      tw_bus_unsubscribe (d->sub_bus, d->sub_id);
      g_clear_pointer (&d->sub_bus, tw_bus_unref);
    }
  if (tr->bus == NULL)
    {
      g_autoptr (tw_bus) bus = tw_bus_new ();
      tw_trainer_set_bus (tr, bus);
    }
  d->sub_bus = tw_bus_ref (tr->bus);
  d->sub_id = tw_bus_subscribe (d->sub_bus, TW_EV_BIT (TW_EV_GRAD_READY), on_grad_ready, d, NULL);
}

/* A sha256 of what must be the same everywhere: the model (graph and
 * recipe) and every parameter's name and shape. */
char *
tw_trainer_model_hash (tw_trainer *tr)
{
  g_autoptr (GChecksum) h = g_checksum_new (G_CHECKSUM_SHA256);
  gsize len = 0;
  g_autofree char *data = tw_model_to_data (tr->model, &len);
  if (data)
    g_checksum_update (h, (const guchar *) data, len);
  for (int i = 0; i < tw_params_count (tr->params); i++)
    {
      tw_param *p = tw_params_at (tr->params, i);
      g_checksum_update (h, (const guchar *) p->name, strlen (p->name) + 1);
      g_checksum_update (h, (const guchar *) p->value->shape, p->value->ndim * sizeof (int64_t));
    }
  return g_strdup (g_checksum_get_string (h));
}

static gboolean
broadcast_buffers (tw_dist *d, tw_params *ps, GError **error)
{
  int n = tw_params_count (ps);
  int64_t total = 0;
  for (int i = 0; i < n; i++)
    if (!tw_params_at (ps, i)->trainable)
      total += tw_tensor_numel (tw_params_at (ps, i)->value);
  if (total == 0)
    return TRUE;
  if (total != d->buffers_numel)
    {
      g_free (d->buffers);
      d->buffers = g_new (float, total);
      d->buffers_numel = total;
    }
  int64_t off = 0;
  for (int i = 0; i < n; i++)
    {
      tw_param *p = tw_params_at (ps, i);
      if (p->trainable)
        continue;
      int64_t k = tw_tensor_numel (p->value);
      memcpy (d->buffers + off, tw_tensor_f32 (p->value), k * sizeof (float));
      off += k;
    }
  if (!tw_comm_broadcast_sync (d->comm, d->buffers, total, TW_F32, 0,
                               &(tw_coll_tag) { .what = "buffers" }, error))
    return FALSE;
  off = 0;
  for (int i = 0; i < n; i++)
    {
      tw_param *p = tw_params_at (ps, i);
      if (p->trainable)
        continue;
      int64_t k = tw_tensor_numel (p->value);
      memcpy (tw_tensor_f32 (p->value), d->buffers + off, k * sizeof (float));
      off += k;
    }
  return TRUE;
}

gboolean
tw_trainer_set_dist (tw_trainer *tr, tw_comm *comm, const tw_dist_options *o, GError **error)
{
  g_return_val_if_fail (tr->dist == NULL, FALSE);
  int rank = tw_comm_rank (comm), size = tw_comm_size (comm);
  g_autofree char *mine = tw_trainer_model_hash (tr);
  g_auto (GStrv) all = tw_comm_allgather_strings (comm, mine, error);
  if (all == NULL)
    return FALSE;
  GString *differ = g_string_new (NULL);
  for (int r = 1; r < size; r++)
    if (g_strcmp0 (all[r], all[0]) != 0)
      g_string_append_printf (differ, "%s%d", differ->len ? ", " : "", r);
  if (differ->len)
    {
      g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_MISMATCH,
                   "rank%s %s %s a different model from rank 0's (graph, recipe or parameter "
                   "shapes: sha256 %.12s… against %.12s…); every rank must load the same file "
                   "with the same options",
                   strchr (differ->str, ',') ? "s" : "", differ->str,
                   strchr (differ->str, ',') ? "have" : "has", all[rank == 0 ? 1 : rank], all[0]);
      g_string_free (differ, TRUE);
      return FALSE;
    }
  g_string_free (differ, TRUE);
  /* Rank 0's weights everywhere, then its buffers. */
  for (int i = 0; i < tw_params_count (tr->params); i++)
    {
      tw_param *p = tw_params_at (tr->params, i);
      if (p->trainable
          && !tw_comm_broadcast_sync (comm, tw_tensor_f32 (p->value), tw_tensor_numel (p->value),
                                      TW_F32, 0, &(tw_coll_tag) { .what = p->name }, error))
        return FALSE;
    }
  tw_dist *d = g_new0 (tw_dist, 1);
  d->comm = comm;
  if (o)
    d->opt = *o;
  else
    tw_dist_options_init (&d->opt);
  if (!(d->opt.bucket_mb > 0))
    d->opt.bucket_mb = 25;
  d->rank = rank;
  d->size = size;
  d->where = g_hash_table_new (NULL, NULL);
  d->async = d->opt.async_staleness >= 0;
  if (o && o->compress && strcmp (o->compress, "none") != 0)
    {
      d->z = tw_compressor_new (o->compress, error);
      if (d->z == NULL)
        {
          tw_dist_free (d);
          return FALSE;
        }
    }
  d->opt.compress = NULL;     /* (borrowed from the caller: not kept) */
  if (d->opt.shard_optimizer && (d->z || d->async || d->opt.local_sgd > 0))
    {
      g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                   "a sharded optimizer (ZeRO-1) goes with synchronous, uncompressed updates: "
                   "not with %s",
                   d->z ? "compression" : d->async ? "asynchronous updates" : "local SGD");
      tw_dist_free (d);
      return FALSE;
    }
  d->server = size - 1;
  if (d->async && size < 2)
    {
      g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                   "asynchronous updates need a parameter server and a worker: 2 ranks or more");
      tw_dist_free (d);
      return FALSE;
    }
  d->ready_order = g_array_new (FALSE, FALSE, sizeof (int));
  if (!broadcast_buffers (d, tr->params, error))
    {
      tw_dist_free (d);
      return FALSE;
    }
  tr->dist = d;
  return TRUE;
}

int
tw_dist_rank (tw_trainer *tr)
{
  return tr->dist ? tr->dist->rank : 0;
}

int
tw_dist_size (tw_trainer *tr)
{
  return tr->dist ? tr->dist->size : 1;
}

int
tw_trainer_rank (tw_trainer *tr)
{
  return tw_dist_rank (tr);
}

int
tw_trainer_ranks (tw_trainer *tr)
{
  return tw_dist_size (tr);
}

void
tw_trainer_dist_stats (tw_trainer *tr, tw_dist_stats *out)
{
  memset (out, 0, sizeof *out);
  tw_dist *d = tr->dist;
  if (d == NULL)
    return;
  out->ranks = d->size;
  out->buckets = d->n_buckets;
  out->steps = d->steps;
  double n = (double) MAX (d->steps, 1);
  out->payload_bytes = d->payload / n;
  out->sent_bytes = d->sent / n;
  out->exposed_ms = d->exposed_ns / 1e6 / n;
  out->last_sent_bytes = d->last_sent;
  out->sharded = d->opt.shard_optimizer;
  out->optimizer_state_bytes = state_bytes (tr, d);
  if (d->async)
    {
      gboolean srv = d->rank == d->server;
      out->async_updates = srv ? d->n_updates : d->heard_updates;
      out->staleness_mean = srv ? d->stale_sum / MAX (d->n_updates, 1) : d->heard_stale_mean;
      out->staleness_max = srv ? d->stale_max : d->heard_stale_max;
    }
}

/* What a finished request moved: its own count, or for MPI's all-reduce
 * (which does not say) a ring's. */
static void
count_bytes (tw_dist *d, const tw_comm_req *r, double *payload, double *sent)
{
  const tw_coll_info *i = tw_comm_req_info (r);
  /* (ZeRO-1's all-gather brings back weights: the gradient's bytes were
   * its reduce-scatter's.) */
  if (i->kind != TW_COLL_ALLGATHER)
    *payload += (double) i->bytes;
  if (i->sent > 0 || i->algo != TW_ALGO_MPI)
    *sent += (double) i->sent;
  else
    *sent += 2.0 * (d->size - 1) / d->size * (double) i->bytes;
}

int64_t
tw_trainer_dist_correct (tw_trainer *tr)
{
  return tr->dist ? tr->dist->correct : -1;
}

gboolean
tw_dist_sum (tw_trainer *tr, double *v, int n, GError **error)
{
  return tw_comm_allreduce_sync (tr->dist->comm, v, n, TW_F64, TW_REDUCE_SUM,
                                 &(tw_coll_tag) { .what = "totals" }, error);
}

/* Wait for every bucket posted (whatever happened), keeping the first error. */
static gboolean
drain (tw_dist *d, GError **error)
{
  gboolean ok = TRUE;
  for (int b = 0; b < d->n_buckets; b++)
    {
      bucket *k = &d->buckets[b];
      if (k->req)
        {
          ok = tw_comm_wait (d->comm, k->req, ok ? error : NULL) && ok;
          g_clear_pointer (&k->req, tw_comm_req_free);
        }
      if (k->gather)
        {
          ok = tw_comm_wait (d->comm, k->gather, ok ? error : NULL) && ok;
          g_clear_pointer (&k->gather, tw_comm_req_free);
        }
      if (k->zop)
        ok = tw_compressor_finish (d->z, g_steal_pointer (&k->zop), ok ? error : NULL) && ok;
    }
  return ok;
}

static void
update_bucket (tw_trainer *tr, tw_dist *d, bucket *k)
{
  gboolean listen = tw_bus_wants (tr->bus, TW_EV_UPDATE);
  for (int m = 0; m < k->n_members; m++)
    {
      int i = k->members[m];
      tw_param *p = tw_params_at (tr->params, i);
      const float *g = k->buf + k->offsets[m];
      int64_t n = tw_tensor_numel (p->value);
      /* The gradient a debugger shows is the summed one, as one process's. */
      if (p->grad && tw_tensor_numel (p->grad) == n && p->grad->storage
          && p->grad->storage->device == p->value->storage->device)
        {
          g_autoptr (tw_tensor) gc = tw_tensor_contiguous (p->grad);
          if (gc == p->grad)
            memcpy (tw_tensor_f32 (p->grad), g, n * sizeof (float));
        }
      tw_trainer_update_param (tr, i, g, listen);
    }
}

static void
step_done (tw_dist *d)
{
  d->steps++;
  d->payload += d->step_payload;
  d->sent += d->step_sent;
  d->last_sent = d->step_sent;
}

/* The weights' share-weighted average over the ranks, through the
 * gradient buckets (which hold weights for the occasion). */
static gboolean
average_weights (tw_trainer *tr, tw_dist *d, GError **error)
{
  for (int b = 0; b < d->n_buckets; b++)
    {
      bucket *k = &d->buckets[b];
      for (int m = 0; m < k->n_members; m++)
        {
          tw_param *p = tw_params_at (tr->params, k->members[m]);
          const float *w = tw_tensor_f32 (p->value);
          float *dst = k->buf + k->offsets[m], s = (float) d->scale;
          for (int64_t i = 0, n = tw_tensor_numel (p->value); i < n; i++)
            dst[i] = w[i] * s;
        }
      g_autofree char *what = g_strdup_printf ("weights %d", b);
      tw_coll_tag tag = { .what = what, .params = (const char *const *) k->names };
      k->req = tw_comm_allreduce (d->comm, k->buf, k->numel, TW_F32, TW_REDUCE_SUM, &tag);
    }
  gboolean ok = TRUE;
  for (int b = 0; b < d->n_buckets; b++)
    {
      bucket *k = &d->buckets[b];
      ok = tw_comm_wait (d->comm, k->req, ok ? error : NULL) && ok;
      count_bytes (d, k->req, &d->step_payload, &d->step_sent);
      g_clear_pointer (&k->req, tw_comm_req_free);
      for (int m = 0; ok && m < k->n_members; m++)
        {
          tw_param *p = tw_params_at (tr->params, k->members[m]);
          memcpy (tw_tensor_f32 (p->value), k->buf + k->offsets[m],
                  tw_tensor_numel (p->value) * sizeof (float));
        }
    }
  return ok;
}

/* Local SGD: this rank's update from its own gradient; every H steps the
 * weights averaged. */
static gboolean
local_step (tw_trainer *tr, tw_dist *d, double lr, double *loss, int64_t n_all, int64_t n_mine,
            const double *stats, gboolean scored, GError *local, GError **error)
{
  /* The totals, then one slot per rank: its compute time (stats[3]). */
  double *tot = g_newa (double, 4 + d->size);
  memset (tot, 0, (4 + d->size) * sizeof (double));
  tot[0] = local ? NAN : stats[0];
  tot[1] = stats[1];
  tot[2] = stats[2];
  tot[3] = scored ? 0 : 1;
  tot[4 + d->rank] = stats[3];
  if (!tw_comm_allreduce_sync (d->comm, tot, 4 + d->size, TW_F64, TW_REDUCE_SUM,
                               &(tw_coll_tag) { .what = "loss" }, error))
    {
      g_clear_error (&local);
      return FALSE;
    }
  tw_trainer_set_rank_ms (tr, tot + 4, d->size);
  double l = n_all > 0 ? tot[0] / (double) n_all : NAN;
  d->correct = tot[3] == 0 ? (int64_t) tot[1] : -1;
  if (loss)
    *loss = l;
  if (local)
    {
      g_propagate_error (error, local);
      return FALSE;
    }
  if (!isfinite (l) && !tr->allow_nan)
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_NAN,
                   "the loss became %s at step %" G_GINT64_FORMAT " (lower the learning rate, or "
                   "pass --allow-nan to go on)", isnan (l) ? "NaN" : "infinite", tr->step + 1);
      return FALSE;
    }
  tr->lr = lr;
  tw_optimizer_begin_step (tr->opt, lr);
  gboolean listen = tw_bus_wants (tr->bus, TW_EV_UPDATE);
  for (int i = 0; n_mine > 0 && i < tw_params_count (tr->params); i++)
    {
      tw_param *p = tw_params_at (tr->params, i);
      if (!p->trainable || p->grad == NULL)
        continue;
      g_autoptr (tw_tensor) g = tw_tensor_contiguous (p->grad);
      tw_trainer_update_param (tr, i, tw_tensor_f32 (g), listen);
    }
  return (tr->step + 1) % d->opt.local_sgd != 0 || average_weights (tr, d, error);
}

/* ---- ZeRO-1: the optimizer's state sharded ------------------------------
 *
 * Bucket k's flat gradient (padded to shard × size floats) is
 * reduce-scattered: rank r receives the sum of elements [r·shard,
 * (r + 1)·shard), updates the weights there with the state it alone
 * keeps, and all-gathers the bucket's weights back. */

/* Elements [lo, hi) of the bucket that member m covers, clipped to this
 * rank's shard: FALSE when they do not meet. */
static gboolean
member_in_shard (const bucket *k, int m, int64_t *lo, int64_t *hi)
{
  int64_t a = k->offsets[m];
  int64_t b = m + 1 < k->n_members ? k->offsets[m + 1] : k->numel;
  *lo = MAX (a, k->shard_lo);
  *hi = MIN (b, MIN (k->shard_lo + k->shard, k->numel));
  return *lo < *hi;
}

/* The shard's update from its summed gradient (in part), then its
 * weights into part and their all-gather posted. */
static void
zero_update_bucket (tw_trainer *tr, tw_dist *d, bucket *k)
{
  gboolean listen = tw_bus_wants (tr->bus, TW_EV_UPDATE);
  int ns = tw_optimizer_state_count (tr->opt);
  for (int s = 0; s < ns; s++)
    if (k->state[s] == NULL)
      k->state[s] = g_new0 (float, MAX (k->shard, 1));
  for (int m = 0; m < k->n_members; m++)
    {
      int64_t lo, hi;
      if (!member_in_shard (k, m, &lo, &hi))
        continue;
      int64_t at = lo - k->shard_lo;
      float *st[2] = { k->state[0] ? k->state[0] + at : NULL, k->state[1] ? k->state[1] + at : NULL };
      tw_trainer_update_range (tr, k->members[m], k->part + at, lo - k->offsets[m], hi - lo, st,
                               listen);
    }
  /* The shard's weights (zeros in the padding) go back to everyone. */
  memset (k->part, 0, k->shard * sizeof (float));
  for (int m = 0; m < k->n_members; m++)
    {
      int64_t lo, hi;
      if (!member_in_shard (k, m, &lo, &hi))
        continue;
      tw_param *p = tw_params_at (tr->params, k->members[m]);
      memcpy (k->part + (lo - k->shard_lo), tw_tensor_f32 (p->value) + (lo - k->offsets[m]),
              (hi - lo) * sizeof (float));
    }
  g_autofree char *what = g_strdup_printf ("weights %s", k->what);
  tw_coll_tag tag = { .what = what, .params = (const char *const *) k->names };
  k->gather = tw_comm_allgather (d->comm, k->part, k->buf, k->shard, TW_F32, &tag);
}

/* Every bucket's gathered weights into the parameters. */
static gboolean
zero_finish_gathers (tw_trainer *tr, tw_dist *d, GError **error)
{
  gboolean ok = TRUE;
  for (int b = 0; b < d->n_buckets; b++)
    {
      bucket *k = &d->buckets[b];
      if (k->gather == NULL)
        continue;
      gint64 t0 = tw_now_ns ();
      ok = tw_comm_wait (d->comm, k->gather, ok ? error : NULL) && ok;
      d->exposed_ns += tw_now_ns () - t0;
      count_bytes (d, k->gather, &d->step_payload, &d->step_sent);
      g_clear_pointer (&k->gather, tw_comm_req_free);
      for (int m = 0; ok && m < k->n_members; m++)
        {
          tw_param *p = tw_params_at (tr->params, k->members[m]);
          memcpy (tw_tensor_f32 (p->value), k->buf + k->offsets[m],
                  tw_tensor_numel (p->value) * sizeof (float));
        }
      /* The padding is zero again for the next step's gradients. */
      memset (k->buf + k->numel, 0, (k->shard * d->size - k->numel) * sizeof (float));
    }
  return ok;
}

/* Every rank's shards of the optimizer state into whole tensors in each
 * parameter's state[] (collective): before a checkpoint, or before the
 * buckets are cut again. */
static gboolean
zero_gather_state (tw_trainer *tr, tw_dist *d, GError **error)
{
  int ns = tw_optimizer_state_count (tr->opt);
  for (int b = 0; b < d->n_buckets; b++)
    {
      bucket *k = &d->buckets[b];
      for (int s = 0; s < ns; s++)
        {
          /* A rank that never updated (no state yet) sends zeros, as
           * fresh state is. */
          if (k->state[s])
            memcpy (k->part, k->state[s], k->shard * sizeof (float));
          else
            memset (k->part, 0, k->shard * sizeof (float));
          tw_comm_req *r = tw_comm_allgather (d->comm, k->part, k->buf, k->shard, TW_F32,
                                              &(tw_coll_tag) { .what = "optimizer state" });
          gboolean ok = tw_comm_wait (d->comm, r, error);
          tw_comm_req_free (r);
          if (!ok)
            return FALSE;
          for (int m = 0; m < k->n_members; m++)
            {
              tw_param *p = tw_params_at (tr->params, k->members[m]);
              g_clear_pointer (&p->state[s], tw_tensor_unref);
              p->state[s] = tw_tensor_zeros (TW_F32, p->value->ndim, p->value->shape);
              memcpy (tw_tensor_f32 (p->state[s]), k->buf + k->offsets[m],
                      tw_tensor_numel (p->value) * sizeof (float));
            }
          memset (k->buf + k->numel, 0, (k->shard * d->size - k->numel) * sizeof (float));
        }
    }
  return TRUE;
}

/* This rank's shard of each bucket's state from its parameters' whole
 * state (a checkpoint's, or zero_gather_state's), which is then dropped:
 * only the shard stays. */
static void
zero_take_state (tw_trainer *tr, tw_dist *d)
{
  for (int b = 0; b < d->n_buckets; b++)
    {
      bucket *k = &d->buckets[b];
      for (int s = 0; s < 2; s++)
        {
          for (int m = 0; m < k->n_members; m++)
            {
              tw_param *p = tw_params_at (tr->params, k->members[m]);
              tw_tensor *t = p->state[s];
              int64_t lo, hi;
              if (t && t->dtype == TW_F32 && tw_tensor_is_contiguous (t)
                  && tw_tensor_same_shape (t, p->value) && member_in_shard (k, m, &lo, &hi))
                {
                  if (k->state[s] == NULL)
                    k->state[s] = g_new0 (float, MAX (k->shard, 1));
                  memcpy (k->state[s] + (lo - k->shard_lo),
                          tw_tensor_f32 (t) + (lo - k->offsets[m]), (hi - lo) * sizeof (float));
                }
            }
          for (int m = 0; m < k->n_members; m++)
            g_clear_pointer (&tw_params_at (tr->params, k->members[m])->state[s],
                             tw_tensor_unref);
        }
    }
}

gboolean
tw_dist_state_gather (tw_trainer *tr, GError **error)
{
  tw_dist *d = tr->dist;
  if (d == NULL || !d->opt.shard_optimizer || d->buckets == NULL)
    return TRUE;
  return zero_gather_state (tr, d, error);
}

void
tw_dist_state_release (tw_trainer *tr)
{
  tw_dist *d = tr->dist;
  if (d && d->opt.shard_optimizer && d->buckets)
    zero_take_state (tr, d);
}

gboolean
tw_trainer_checkpoint_is_collective (tw_trainer *tr)
{
  return tr->pipe != NULL || (tr->dist && tr->dist->opt.shard_optimizer);
}

static double
state_bytes (tw_trainer *tr, tw_dist *d)
{
  double n = 0;
  if (d->opt.shard_optimizer)
    {
      for (int b = 0; b < d->n_buckets; b++)
        for (int s = 0; s < 2; s++)
          n += d->buckets[b].state[s] ? (double) d->buckets[b].shard * sizeof (float) : 0;
      return n;
    }
  for (int i = 0; i < tw_params_count (tr->params); i++)
    for (int s = 0; s < 2; s++)
      {
        tw_tensor *t = tw_params_at (tr->params, i)->state[s];
        n += t ? (double) tw_tensor_numel (t) * tw_dtype_size (t->dtype) : 0;
      }
  return n;
}

/* ---- Asynchronous: the parameter server --------------------------------
 *
 * A push (worker → server): doubles { version the gradient was computed
 * on, loss × rows, rows, the shard's share of the batch } then the
 * gradient of the shard's mean loss (every trainable parameter in index
 * order).  A
 * pull (server → worker): doubles { the server's version, the loss of its
 * last step, staleness mean, staleness max, updates } then the weights. */
#define PUSH_HEAD 4
#define PULL_HEAD 5

static int64_t
flat_size (tw_trainer *tr)
{
  int64_t n = 0;
  for (int i = 0; i < tw_params_count (tr->params); i++)
    if (tw_params_at (tr->params, i)->trainable)
      n += tw_tensor_numel (tw_params_at (tr->params, i)->value);
  return n;
}

/* Weights (grads FALSE) or gradients into flat, or (to_params) back. */
static void
flat_copy (tw_trainer *tr, float *flat, gboolean grads, gboolean to_params, float scale)
{
  int64_t off = 0;
  for (int i = 0; i < tw_params_count (tr->params); i++)
    {
      tw_param *p = tw_params_at (tr->params, i);
      if (!p->trainable)
        continue;
      int64_t n = tw_tensor_numel (p->value);
      if (to_params)
        memcpy (tw_tensor_f32 (p->value), flat + off, n * sizeof (float));
      else if (!grads)
        memcpy (flat + off, tw_tensor_f32 (p->value), n * sizeof (float));
      else if (p->grad == NULL || tw_tensor_numel (p->grad) != n)
        memset (flat + off, 0, n * sizeof (float));
      else
        {
          g_autoptr (tw_tensor) g = tw_tensor_contiguous (p->grad);
          const float *src = tw_tensor_f32 (g);
          for (int64_t j = 0; j < n; j++)
            flat[off + j] = src[j] * scale;
        }
      off += n;
    }
}

static void
async_setup (tw_trainer *tr, tw_dist *d)
{
  if (d->flat_n)
    return;
  d->flat_n = flat_size (tr);
  gsize bytes = PUSH_HEAD * sizeof (double) + d->flat_n * sizeof (float);
  gsize pull = PULL_HEAD * sizeof (double) + d->flat_n * sizeof (float);
  d->msg = g_malloc0 (MAX (bytes, pull));
  if (d->rank != d->server)
    return;
  d->srv_in = g_new0 (guint8 *, d->size);
  d->srv_out = g_new0 (guint8 *, d->size);
  d->srv_req = g_new0 (tw_comm_req *, d->size);
  d->srv_out_req = g_new0 (tw_comm_req *, d->size);
  d->srv_count = g_new0 (int64_t, d->size);
  d->srv_waiting = g_new0 (gboolean, d->size);
  for (int w = 0; w < d->size; w++)
    if (w != d->server)
      {
        d->srv_in[w] = g_malloc0 (bytes);
        d->srv_out[w] = g_malloc0 (pull);
        d->srv_req[w] = tw_comm_recv (d->comm, d->srv_in[w], (int64_t) bytes, TW_U8, w,
                                      &(tw_coll_tag) { .what = "gradient push" });
      }
}

static gboolean
server_reply (tw_trainer *tr, tw_dist *d, int w, GError **error)
{
  if (d->srv_out_req[w])
    {
      gboolean ok = tw_comm_wait (d->comm, d->srv_out_req[w], error);
      g_clear_pointer (&d->srv_out_req[w], tw_comm_req_free);
      if (!ok)
        return FALSE;
    }
  double *h = (double *) d->srv_out[w];
  h[0] = (double) d->version;
  h[1] = d->round_rows > 0 ? d->round_loss / d->round_rows : NAN;
  h[2] = d->stale_sum / MAX (d->n_updates, 1);
  h[3] = (double) d->stale_max;
  h[4] = (double) d->n_updates;
  flat_copy (tr, (float *) (h + PULL_HEAD), FALSE, FALSE, 1);
  gsize pull = PULL_HEAD * sizeof (double) + d->flat_n * sizeof (float);
  d->srv_out_req[w] = tw_comm_send (d->comm, d->srv_out[w], (int64_t) pull, TW_U8, w,
                                    &(tw_coll_tag) { .what = "weights pull" });
  d->srv_waiting[w] = FALSE;
  return TRUE;
}

/* One step of the server: apply one gradient per worker's worth (W of
 * them, from whichever workers they come), answering each worker as soon
 * as the staleness bound lets it go on. */
static gboolean
server_step (tw_trainer *tr, tw_dist *d, double lr, double *loss, GError **error)
{
  int W = d->size - 1;
  gsize bytes = PUSH_HEAD * sizeof (double) + d->flat_n * sizeof (float);
  d->round_loss = d->round_rows = 0;
  tr->lr = lr;
  for (int applied = 0; applied < W;)
    {
      gboolean any = FALSE;
      for (int w = 0; w < d->size; w++)
        {
          /* Exactly W a step: the server's steps match the workers'. */
          if (applied == W)
            break;
          if (w == d->server || d->srv_req[w] == NULL || !tw_comm_test (d->comm, d->srv_req[w]))
            continue;
          gboolean ok = tw_comm_wait (d->comm, d->srv_req[w], error);
          g_clear_pointer (&d->srv_req[w], tw_comm_req_free);
          if (!ok)
            return FALSE;
          any = TRUE;
          const double *h = (const double *) d->srv_in[w];
          int64_t stale = d->version - (int64_t) h[0];
          d->stale_sum += (double) stale;
          d->stale_max = MAX (d->stale_max, stale);
          d->n_updates++;
          d->round_loss += h[1];
          d->round_rows += h[2];
          /* Its share of a step: an optimizer step of its own at the
           * learning rate times the share of the batch its gradient
           * covers.  (For SGD that is the share-weighted gradient of
           * synchronous training; for Adam, whose step does not scale with
           * the gradient, it keeps a round of pushes one step long.) */
          const float *g = (const float *) (h + PUSH_HEAD);
          double share = h[3];
          tw_optimizer_begin_step (tr->opt, lr * share);
          int64_t off = 0;
          for (int i = 0; i < tw_params_count (tr->params); i++)
            {
              tw_param *p = tw_params_at (tr->params, i);
              if (!p->trainable)
                continue;
              int64_t n = tw_tensor_numel (p->value);
              tw_optimizer_update (tr->opt, p, g + off, 0, n);
              off += n;
            }
          d->version++;
          d->srv_count[w]++;
          d->srv_waiting[w] = TRUE;
          d->step_payload += (double) bytes;
          applied++;
          d->srv_req[w] = tw_comm_recv (d->comm, d->srv_in[w], (int64_t) bytes, TW_U8, w,
                                        &(tw_coll_tag) { .what = "gradient push" });
        }
      /* Who may go on: at most K steps ahead of the slowest. */
      int64_t slowest = G_MAXINT64;
      for (int w = 0; w < d->size; w++)
        if (w != d->server)
          slowest = MIN (slowest, d->srv_count[w]);
      for (int w = 0; w < d->size; w++)
        if (w != d->server && d->srv_waiting[w]
            && d->srv_count[w] - slowest <= d->opt.async_staleness)
          {
            if (!server_reply (tr, d, w, error))
              return FALSE;
            any = TRUE;
          }
      if (!any)
        g_usleep (50);
    }
  if (loss)
    *loss = d->round_rows > 0 ? d->round_loss / d->round_rows : NAN;
  d->step_sent += (double) W * (PULL_HEAD * sizeof (double) + d->flat_n * sizeof (float));
  return TRUE;
}

/* A worker after its backward: push the gradient, pull the weights. */
static gboolean
worker_step (tw_trainer *tr, tw_dist *d, double lr, double *loss, int64_t n_mine,
             const double *stats, GError *local, GError **error)
{
  double *h = (double *) d->msg;
  h[0] = (double) d->version;
  h[1] = local ? NAN : stats[0];
  h[2] = (double) n_mine;
  h[3] = d->scale;
  if (n_mine > 0 && !local)
    flat_copy (tr, (float *) (h + PUSH_HEAD), TRUE, FALSE, 1);
  else
    memset (h + PUSH_HEAD, 0, d->flat_n * sizeof (float));
  gsize bytes = PUSH_HEAD * sizeof (double) + d->flat_n * sizeof (float);
  tw_comm_req *r = tw_comm_send (d->comm, d->msg, (int64_t) bytes, TW_U8, d->server,
                                 &(tw_coll_tag) { .what = "gradient push" });
  gboolean ok = tw_comm_wait (d->comm, r, error);
  tw_comm_req_free (r);
  if (!ok)
    {
      g_clear_error (&local);
      return FALSE;
    }
  d->step_payload += (double) bytes;
  d->step_sent += (double) bytes;
  if (local)
    {
      g_propagate_error (error, local);
      return FALSE;
    }
  gsize pull = PULL_HEAD * sizeof (double) + d->flat_n * sizeof (float);
  gint64 t0 = tw_now_ns ();
  r = tw_comm_recv (d->comm, d->msg, (int64_t) pull, TW_U8, d->server,
                    &(tw_coll_tag) { .what = "weights pull" });
  ok = tw_comm_wait (d->comm, r, error);
  tw_comm_req_free (r);
  d->exposed_ns += tw_now_ns () - t0;
  if (!ok)
    return FALSE;
  d->version = (int64_t) h[0];
  d->heard_loss = h[1];
  d->heard_stale_mean = h[2];
  d->heard_stale_max = (int64_t) h[3];
  d->heard_updates = (int64_t) h[4];
  flat_copy (tr, (float *) (h + PULL_HEAD), FALSE, TRUE, 1);
  tr->lr = lr;
  if (loss)
    *loss = isnan (d->heard_loss) ? stats[0] / MAX (n_mine, 1) : d->heard_loss;
  return TRUE;
}

/* Before an evaluation: every rank takes the server's weights. */
gboolean
tw_dist_sync_weights (tw_trainer *tr, GError **error)
{
  tw_dist *d = tr->dist;
  if (d == NULL || !d->async)
    return TRUE;
  async_setup (tr, d);
  float *flat = g_new (float, MAX (d->flat_n, 1));
  flat_copy (tr, flat, FALSE, FALSE, 1);
  gboolean ok = tw_comm_broadcast_sync (d->comm, flat, d->flat_n, TW_F32, d->server,
                                        &(tw_coll_tag) { .what = "server weights" }, error);
  if (ok)
    flat_copy (tr, flat, FALSE, TRUE, 1);
  g_free (flat);
  return ok;
}

gboolean
tw_dist_step (tw_trainer *tr, tw_tensor *x, tw_tensor *y, double lr, double *loss,
              GError **error)
{
  tw_dist *d = tr->dist;
  gboolean iter_events = tw_bus_wants (tr->bus, TW_EV_ITERATION);
  gint64 t0 = iter_events ? tw_now_ns () : 0;
  if (iter_events && !tw_trainer_publish_iteration (tr, FALSE, t0, NAN, error))
    return FALSE;
  subscribe (tr, d);
  if (params_changed (d, tr->params))
    {
      buckets_initial (d, tr->params);
      if (d->opt.shard_optimizer)
        zero_take_state (tr, d);
    }
  if (!broadcast_buffers (d, tr->params, error))
    return FALSE;

  int64_t n_all = x->shape[0];
  /* Asynchronous: the server (last rank) takes no rows. */
  int shards = d->async ? d->size - 1 : d->size;
  int64_t lo = d->rank < shards ? n_all * d->rank / shards : n_all;
  int64_t hi = d->rank < shards ? n_all * (d->rank + 1) / shards : n_all;
  int64_t n_mine = hi - lo;
  if (d->async)
    {
      async_setup (tr, d);
      d->step_payload = d->step_sent = 0;
      if (d->rank == d->server)
        {
          double l = NAN;
          if (!server_step (tr, d, lr, &l, error))
            return FALSE;
          if (loss)
            *loss = l;
          step_done (d);
          if (iter_events)
            tw_trainer_publish_iteration (tr, TRUE, t0, l, NULL);
          tr->step++;
          return TRUE;
        }
    }
  d->scale = n_all > 0 ? (double) n_mine / (double) n_all : 0;
  for (int b = 0; b < d->n_buckets; b++)
    {
      bucket *k = &d->buckets[b];
      k->pending = k->n_members;
      k->posted = FALSE;
      memset (k->filled, 0, k->n_members * sizeof (gboolean));
    }
  d->next_post = 0;
  d->step_payload = d->step_sent = 0;
  g_array_set_size (d->ready_order, 0);
  g_clear_error (&d->cb_error);

  double stats[4] = { 0, 0, (double) n_mine, 0 };   /* loss × n, correct, n, compute ms */
  gboolean computed = FALSE, scored = TRUE;
  GError *local = NULL;
  gint64 tc0 = tw_now_ns ();
  if (n_mine > 0)
    {
      g_autoptr (tw_tensor) xs0 = tw_tensor_slice (x, 0, lo, hi, 1);
      g_autoptr (tw_tensor) ys0 = tw_tensor_slice (y, 0, lo, hi, 1);
      g_autoptr (tw_tensor) xs = tw_tensor_contiguous (xs0);
      g_autoptr (tw_tensor) ys = tw_tensor_contiguous (ys0);
      d->in_step = TRUE;
      gboolean ok;
      double l;
      tw_tensor *pred;
      if (tr->mode == TW_MODE_COMPILED)
        {
          tw_compiled *c = tw_trainer_compiled (tr);
          /* A NaN is judged on the global loss, after the all-reduce, so
           * that every rank fails the same step or none does. */
          tw_compiled_set_allow_nan (c, TRUE);
          ok = tw_compiled_run (c, TW_PROGRAM_TRAIN, xs, ys, (guint64) tr->step, &local);
          tw_compiled_set_allow_nan (c, tr->allow_nan);
          if (ok)
            tw_compiled_bind_grads (c);
          l = ok ? tw_compiled_loss_value (c) : NAN;
          pred = ok ? tw_compiled_prediction (c) : NULL;
        }
      else
        {
          ok = tw_eager_forward (tr->ex, xs, ys, TRUE, (guint64) tr->step, &local)
               && tw_eager_backward_set (tr->ex, &local);
          l = ok ? tw_eager_loss_value (tr->ex) : NAN;
          pred = ok ? tw_eager_prediction (tr->ex) : NULL;
        }
      d->in_step = FALSE;
      computed = ok;
      if (ok)
        {
          stats[0] = l * (double) n_mine;
          int64_t k = tw_count_correct (pred, ys);
          scored = k >= 0;
          stats[1] = (double) MAX (k, 0);
        }
      if (tr->mode == TW_MODE_EAGER)
        tw_eager_release (tr->ex);
    }
  (void) computed;
  stats[3] = (tw_now_ns () - tc0) * 1e-6;
  if (d->async)
    {
      double l = NAN;
      if (!worker_step (tr, d, lr, &l, n_mine, stats, local, error))
        return FALSE;
      d->correct = -1;
      if (loss)
        *loss = l;
      step_done (d);
      if (iter_events)
        tw_trainer_publish_iteration (tr, TRUE, t0, l, NULL);
      tr->step++;
      return TRUE;
    }
  if (d->opt.local_sgd > 0)
    {
      double l = NAN;
      if (!local_step (tr, d, lr, &l, n_all, n_mine, stats, scored, local, error))
        return FALSE;
      if (loss)
        *loss = l;
      step_done (d);
      if (iter_events)
        tw_trainer_publish_iteration (tr, TRUE, t0, l, NULL);
      tr->step++;
      return TRUE;
    }
  /* What backward did not finish (a rank with no rows, a parameter the
   * loss does not reach, a failure): zeros, and every bucket posted, in
   * order, so that no rank waits for a collective the others skip. */
  for (int b = 0; b < d->n_buckets; b++)
    {
      bucket *k = &d->buckets[b];
      for (int m = 0; m < k->n_members; m++)
        if (!k->filled[m])
          fill (d, k, m, NULL);
    }
  post_ready_buckets (d);
  /* The totals: a failed rank sends NaN, which fails every rank's step. */
  /* Then one slot per rank: its compute time, for tw_trainer_rank_step_ms. */
  double *tot = g_newa (double, 4 + d->size);
  memset (tot, 0, (4 + d->size) * sizeof (double));
  tot[0] = local || d->cb_error ? NAN : stats[0];
  tot[1] = stats[1];
  tot[2] = stats[2];
  tot[3] = scored ? 0 : 1;
  tot[4 + d->rank] = stats[3];
  /* (It comes after the buckets: its wait is theirs too.) */
  gint64 tw0 = tw_now_ns ();
  gboolean ok = tw_comm_allreduce_sync (d->comm, tot, 4 + d->size, TW_F64, TW_REDUCE_SUM,
                                        &(tw_coll_tag) { .what = "loss" }, error);
  d->exposed_ns += tw_now_ns () - tw0;
  if (!ok)
    {
      g_clear_error (&local);
      drain (d, NULL);
      return FALSE;
    }
  tw_trainer_set_rank_ms (tr, tot + 4, d->size);
  double l = n_all > 0 ? tot[0] / (double) n_all : NAN;
  d->correct = tot[3] == 0 ? (int64_t) tot[1] : -1;
  if (loss)
    *loss = l;
  if (local || d->cb_error)
    {
      drain (d, NULL);
      g_propagate_error (error, local ? local : g_steal_pointer (&d->cb_error));
      return FALSE;
    }
  if (!isfinite (l) && !tr->allow_nan)
    {
      drain (d, NULL);
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_NAN,
                   "the loss became %s at step %" G_GINT64_FORMAT " (on %s; lower the learning "
                   "rate, or pass --allow-nan to go on)",
                   isnan (l) ? "NaN" : "infinite", tr->step + 1,
                   isfinite (stats[0]) ? "another rank" : "this rank");
      return FALSE;
    }
  tr->lr = lr;
  tw_optimizer_begin_step (tr->opt, lr);
  ok = TRUE;
  for (int b = 0; b < d->n_buckets && ok; b++)
    {
      bucket *k = &d->buckets[b];
      gint64 tw1 = tw_now_ns ();
      if (k->zop)
        ok = tw_compressor_finish (d->z, g_steal_pointer (&k->zop), error);
      else
        ok = tw_comm_wait (d->comm, k->req, error);
      d->exposed_ns += tw_now_ns () - tw1;
      if (k->req)
        count_bytes (d, k->req, &d->step_payload, &d->step_sent);
      g_clear_pointer (&k->req, tw_comm_req_free);
      if (ok && d->opt.shard_optimizer)
        zero_update_bucket (tr, d, k);
      else if (ok)
        update_bucket (tr, d, k);
    }
  if (ok && d->opt.shard_optimizer)
    ok = zero_finish_gathers (tr, d, error);
  if (!ok)
    {
      drain (d, NULL);
      return FALSE;
    }
  if (d->z)
    {
      /* The payload goes by all-gather (each rank's to every other: p − 1
       * times on the wire) or, for PowerSGD, by all-reduce (a ring's
       * 2(p − 1)/p). */
      gint64 sent = 0, dense = 0;
      tw_compressor_take_bytes (d->z, &sent, &dense);
      gboolean reduce = g_str_has_prefix (tw_compressor_name (d->z), "powersgd");
      d->step_payload += (double) dense;
      d->step_sent += reduce ? 2.0 * (d->size - 1) / d->size * (double) sent
                             : (double) (d->size - 1) * (double) sent;
    }
  /* From the second step on the buckets follow backward's order (the
   * same on every rank: rank 0's is taken, so that they cannot differ). */
  if (!d->ordered)
    {
      int n = (int) d->ready_order->len;
      int *ord = g_new0 (int, MAX (n, 1) + 1);
      ord[0] = n;
      memcpy (ord + 1, d->ready_order->data, n * sizeof (int));
      int64_t cnt = n;
      ok = tw_comm_broadcast_sync (d->comm, &cnt, 1, TW_I64, 0, &(tw_coll_tag) { .what = "order" },
                                   error);
      if (ok && cnt > 0)
        {
          int *o2 = g_new0 (int, cnt);
          if (d->rank == 0)
            memcpy (o2, ord + 1, cnt * sizeof (int));
          ok = tw_comm_broadcast_sync (d->comm, o2, cnt, TW_I32, 0,
                                       &(tw_coll_tag) { .what = "order" }, error);
          int trainable = 0;
          for (int b = 0; b < d->n_buckets; b++)
            trainable += d->buckets[b].n_members;
          /* Only an order that names every bucketed parameter once (the
           * same decision on every rank: it is rank 0's). */
          gboolean whole = cnt == trainable;
          for (int64_t i = 0; whole && i < cnt; i++)
            whole = o2[i] >= 0 && o2[i] < d->n_params
                    && g_hash_table_contains (d->where, d->param_ptrs[o2[i]]);
          /* ZeRO-1: the state follows the elements to their new shards. */
          if (ok && whole && d->opt.shard_optimizer)
            ok = zero_gather_state (tr, d, error);
          if (ok && whole)
            buckets_make (d, tr->params, o2, (int) cnt);
          if (ok && whole && d->opt.shard_optimizer)
            zero_take_state (tr, d);
          g_free (o2);
        }
      g_free (ord);
      d->ordered = TRUE;
      if (!ok)
        return FALSE;
    }
  step_done (d);
  if (iter_events)
    tw_trainer_publish_iteration (tr, TRUE, t0, l, NULL);
  tr->step++;
  return TRUE;
}

gboolean
tw_trainer_dist_buckets (tw_trainer *tr, tw_bucket_layout *out)
{
  memset (out, 0, sizeof *out);
  tw_dist *d = tr->dist;
  if (d == NULL || d->async || d->opt.local_sgd > 0 || d->n_buckets == 0)
    return FALSE;
  out->n = d->n_buckets;
  out->names = g_new0 (char **, out->n);
  out->bytes = g_new0 (int64_t, out->n);
  for (int b = 0; b < out->n; b++)
    {
      out->names[b] = g_strdupv (d->buckets[b].names);
      out->bytes[b] = d->buckets[b].numel * (int64_t) sizeof (float);
    }
  return TRUE;
}
