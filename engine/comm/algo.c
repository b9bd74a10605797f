/* algo.c — our all-reduce algorithms over MPI's point-to-point messages,
 * as state machines that the communication thread advances (mpi.c), so
 * that messages of other calls keep moving while one runs.
 *
 * Costs in the α–β model (α: a message's latency, β: seconds per byte on a
 * link, γ: seconds per byte reduced; n bytes, p ranks; each rank on one
 * full-duplex link of a switch).  The simulator (engine/sim/net.c) sends
 * the same messages, and its tests check that it gives these times on such
 * a topology:
 *
 *   ring  2(p−1)·α + 2·(p−1)/p·n·β + (p−1)/p·n·γ
 *         reduce-scatter then all-gather, each p−1 steps moving one block of
 *         n/p to the right-hand neighbour: bandwidth-optimal, latency ∝ p.
 *   tree  2d·(α + 2n·β) + 2d·n·γ,  d = ⌊log2 p⌋ levels (a complete tree)
 *         binary tree (parent (r−1)/2): reduce to rank 0 (each rank
 *         receives its two children's buffers at once, on its one link, and
 *         adds them), then broadcast down (each rank sends to its two
 *         children at once); latency ∝ log p, each level moves the whole
 *         buffer twice over a rank's link.  (With a link per pair of ranks
 *         the children do not share: 2d·(α + n·β).)
 *   ps    2α + 2(p−1)·n·β + (p−1)·n·γ   (the server's link)
 *         every rank sends its buffer to the parameter-server rank at once,
 *         which sums in rank order and sends the sum back to all: the
 *         server's link carries 2(p−1)·n and is the bottleneck.
 *   hier  2⌈log2 k⌉·(α_l + n·β_l)                       inside a node (k ranks)
 *         + 2(m−1)·α + 2·(m−1)/m·n·β                   ring across m nodes
 *         tree-reduce inside each node to its first rank (shared memory,
 *         MPI_COMM_TYPE_SHARED, or ranks_per_node pretend nodes), ring
 *         all-reduce among the nodes' first ranks, tree-broadcast inside
 *         each node: only 1/k of the ranks use the slow links.
 *
 * Every rank reduces in the same order whatever the arrival times, so a
 * run is reproducible bit for bit (given the same p and algorithm).
 */
#define G_LOG_DOMAIN "twb-comm"

#include "engine/comm/comm-private.h"

#include <string.h>

typedef enum
{
  SUB_RING,
  SUB_TREE_REDUCE,
  SUB_TREE_BCAST,
  SUB_PS,
} sub_kind;

/* One algorithm over one communicator. */
typedef struct
{
  sub_kind kind;
  MPI_Comm comm;
  int rank, size;
  int *world;                 /* world rank of each member (to name them) */
  int root;                   /* tree, ps: the root / server (in comm's ranks) */
  int step;                   /* the state machine's position */
  int n_req;
  MPI_Request req[4];
  int req_peer[4];            /* member whose message req[i] is */
  char *tmp;                  /* received blocks */
  char **bufs;                /* ps server: one buffer per rank */
  MPI_Request *reqs;          /* ps server: one per rank */
} sub;

struct tw_algo_run
{
  tw_comm *c;
  char *buf;
  int64_t n;
  size_t esz;
  tw_dtype dtype;
  tw_reduce_op op;
  MPI_Datatype dt;
  sub subs[3];
  int n_subs, cur;
  gint64 sent, received;
};

void
tw_comm_reduce_into (void *dst, const void *src, int64_t n, tw_dtype dtype, tw_reduce_op op)
{
#define REDUCE(T)                                                                            \
  do                                                                                         \
    {                                                                                        \
      T *d = dst;                                                                            \
      const T *s = src;                                                                      \
      if (op == TW_REDUCE_SUM)                                                               \
        for (int64_t i = 0; i < n; i++)                                                      \
          d[i] += s[i];                                                                      \
      else if (op == TW_REDUCE_MAX)                                                          \
        for (int64_t i = 0; i < n; i++)                                                      \
          d[i] = s[i] > d[i] || s[i] != s[i] ? s[i] : d[i];                                  \
      else                                                                                   \
        for (int64_t i = 0; i < n; i++)                                                      \
          d[i] = s[i] < d[i] || s[i] != s[i] ? s[i] : d[i];                                  \
    }                                                                                        \
  while (0)
  switch (dtype)
    {
    case TW_F32:
      REDUCE (float);
      break;
    case TW_F64:
      REDUCE (double);
      break;
    case TW_I32:
      REDUCE (gint32);
      break;
    case TW_I64:
      REDUCE (gint64);
      break;
    default:
      REDUCE (guint8);
    }
#undef REDUCE
}

static void
sub_init (tw_algo_run *run, sub *s, sub_kind kind, MPI_Comm comm, int root)
{
  memset (s, 0, sizeof *s);
  s->kind = kind;
  s->comm = comm;
  s->root = root;
  MPI_Comm_rank (comm, &s->rank);
  MPI_Comm_size (comm, &s->size);
  s->world = g_new (int, s->size);
  MPI_Group g, w;
  MPI_Comm_group (comm, &g);
  MPI_Comm_group (run->c->world, &w);
  int *mine = g_new (int, s->size);
  for (int i = 0; i < s->size; i++)
    mine[i] = i;
  MPI_Group_translate_ranks (g, s->size, mine, w, s->world);
  g_free (mine);
  /* Named by their rank in the whole job. */
  for (int i = 0; i < s->size; i++)
    if (s->world[i] >= 0 && run->c->world_ranks)
      s->world[i] = run->c->world_ranks[s->world[i]];
  MPI_Group_free (&g);
  MPI_Group_free (&w);
}

static void
sub_clear (sub *s)
{
  for (int i = 0; i < s->n_req; i++)
    if (s->req[i] != MPI_REQUEST_NULL)
      {
        MPI_Cancel (&s->req[i]);
        MPI_Request_free (&s->req[i]);
      }
  if (s->reqs)
    for (int i = 0; i < s->size; i++)
      if (s->reqs[i] != MPI_REQUEST_NULL)
        {
          MPI_Cancel (&s->reqs[i]);
          MPI_Request_free (&s->reqs[i]);
        }
  if (s->bufs)
    for (int i = 0; i < s->size; i++)
      g_free (s->bufs[i]);
  g_free (s->bufs);
  g_free (s->reqs);
  g_free (s->tmp);
  g_free (s->world);
}

/* Block b of p: [off, off + len) elements of n, the first n % p blocks one longer. */
static void
block (int64_t n, int p, int b, int64_t *off, int64_t *len)
{
  int64_t q = n / p, r = n % p;
  *off = b * q + MIN (b, r);
  *len = q + (b < r);
}

static int
isend (tw_algo_run *run, sub *s, const void *p, int64_t count, int to)
{
  int i = s->n_req++;
  s->req_peer[i] = to;
  run->sent += count * (gint64) run->esz;
  return MPI_Isend (p, (int) count, run->dt, to, s->kind, s->comm, &s->req[i]);
}

static int
irecv (tw_algo_run *run, sub *s, void *p, int64_t count, int from)
{
  int i = s->n_req++;
  s->req_peer[i] = from;
  run->received += count * (gint64) run->esz;
  return MPI_Irecv (p, (int) count, run->dt, from, s->kind, s->comm, &s->req[i]);
}

/* 1 when every posted request completed (then none are posted), 0 if not;
 * *waiting names the first member still awaited. */
static int
test_all (sub *s, int *waiting, int *rc)
{
  int all = 1;
  for (int i = 0; i < s->n_req; i++)
    {
      if (s->req[i] == MPI_REQUEST_NULL)
        continue;
      int flag = 0;
      *rc = MPI_Test (&s->req[i], &flag, MPI_STATUS_IGNORE);
      if (*rc != MPI_SUCCESS)
        return 0;
      if (!flag)
        {
          if (all)
            *waiting = s->world[s->req_peer[i]];
          all = 0;
        }
    }
  if (all)
    s->n_req = 0;
  return all;
}

/* Ring: steps 0 .. p−2 reduce-scatter, p−1 .. 2p−3 all-gather.  At
 * reduce-scatter step k a rank sends block (r − k) and receives block
 * (r − k − 1), which it adds to its own; after p−1 steps it holds the sum
 * of block r + 1; the all-gather passes the sums on. */
static int
ring_post (tw_algo_run *run, sub *s)
{
  int p = s->size, r = s->rank, k = s->step;
  int right = (r + 1) % p, left = (r + p - 1) % p;
  int64_t so, sl, ro, rl;
  int rc;
  if (k < p - 1)
    {
      block (run->n, p, ((r - k) % p + p) % p, &so, &sl);
      block (run->n, p, ((r - k - 1) % p + p) % p, &ro, &rl);
      if ((rc = irecv (run, s, s->tmp, rl, left)) != MPI_SUCCESS)
        return rc;
    }
  else
    {
      int j = k - (p - 1);
      block (run->n, p, ((r + 1 - j) % p + p) % p, &so, &sl);
      block (run->n, p, ((r - j) % p + p) % p, &ro, &rl);
      if ((rc = irecv (run, s, run->buf + ro * run->esz, rl, left)) != MPI_SUCCESS)
        return rc;
    }
  return isend (run, s, run->buf + so * run->esz, sl, right);
}

static int
ring_done_step (tw_algo_run *run, sub *s)
{
  int p = s->size, r = s->rank, k = s->step;
  if (k < p - 1)
    {
      int64_t ro, rl;
      block (run->n, p, ((r - k - 1) % p + p) % p, &ro, &rl);
      tw_comm_reduce_into (run->buf + ro * run->esz, s->tmp, rl, run->dtype, run->op);
    }
  return ++s->step < 2 * (p - 1);
}

/* Tree over members: parent (r−1)/2, children 2r+1, 2r+2, relative to the root. */
static int
rel (sub *s, int r)
{
  return (r - s->root + s->size) % s->size;
}

static int
absr (sub *s, int r)
{
  return (r + s->root) % s->size;
}

/* Step 0: receive the children's buffers; 1: add them (in order) and send
 * to the parent; 2: done. */
static int
tree_reduce_post (tw_algo_run *run, sub *s)
{
  int me = rel (s, s->rank), rc = MPI_SUCCESS;
  if (s->step == 0)
    {
      for (int c = 0; c < 2; c++)
        if (2 * me + 1 + c < s->size)
          if ((rc = irecv (run, s, s->tmp + c * run->n * run->esz, run->n,
                           absr (s, 2 * me + 1 + c))) != MPI_SUCCESS)
            return rc;
    }
  else if (s->step == 1 && me != 0)
    rc = isend (run, s, run->buf, run->n, absr (s, (me - 1) / 2));
  return rc;
}

static int
tree_reduce_done_step (tw_algo_run *run, sub *s)
{
  int me = rel (s, s->rank);
  if (s->step == 0)
    for (int c = 0; c < 2; c++)
      if (2 * me + 1 + c < s->size)
        tw_comm_reduce_into (run->buf, s->tmp + c * run->n * run->esz, run->n, run->dtype, run->op);
  return ++s->step < 2;
}

/* Step 0: receive from the parent; 1: send to the children. */
static int
tree_bcast_post (tw_algo_run *run, sub *s)
{
  int me = rel (s, s->rank), rc = MPI_SUCCESS;
  if (s->step == 0 && me != 0)
    rc = irecv (run, s, run->buf, run->n, absr (s, (me - 1) / 2));
  else if (s->step == 1)
    for (int c = 0; c < 2; c++)
      if (2 * me + 1 + c < s->size)
        if ((rc = isend (run, s, run->buf, run->n, absr (s, 2 * me + 1 + c))) != MPI_SUCCESS)
          return rc;
  return rc;
}

static int
tree_bcast_done_step (tw_algo_run *run, sub *s)
{
  (void) run;
  return ++s->step < 2;
}

/* Parameter server.  Workers: step 0 send, step 1 receive the sum.  The
 * server: step 0 receive every worker's buffer (each into its own, so
 * that the sum is taken in rank order whatever the arrival order), step 1
 * add them and send the sum to each. */
static int
ps_post (tw_algo_run *run, sub *s)
{
  int rc = MPI_SUCCESS;
  if (s->rank != s->root)
    {
      if (s->step == 0)
        rc = isend (run, s, run->buf, run->n, s->root);
      else
        rc = irecv (run, s, run->buf, run->n, s->root);
      return rc;
    }
  if (s->step == 0)
    {
      if (!s->bufs)
        {
          s->bufs = g_new0 (char *, s->size);
          s->reqs = g_new (MPI_Request, s->size);
          for (int q = 0; q < s->size; q++)
            s->reqs[q] = MPI_REQUEST_NULL;
        }
      for (int q = 0; q < s->size; q++)
        if (q != s->root)
          {
            s->bufs[q] = g_malloc (MAX (run->n, 1) * run->esz);
            run->received += run->n * (gint64) run->esz;
            if ((rc = MPI_Irecv (s->bufs[q], (int) run->n, run->dt, q, s->kind, s->comm,
                                 &s->reqs[q])) != MPI_SUCCESS)
              return rc;
          }
    }
  else
    for (int q = 0; q < s->size; q++)
      if (q != s->root)
        {
          run->sent += run->n * (gint64) run->esz;
          if ((rc = MPI_Isend (run->buf, (int) run->n, run->dt, q, s->kind, s->comm,
                               &s->reqs[q])) != MPI_SUCCESS)
            return rc;
        }
  return rc;
}

static int
ps_test (sub *s, int *waiting, int *rc)
{
  if (s->rank != s->root)
    return test_all (s, waiting, rc);
  int all = 1;
  for (int q = 0; q < s->size; q++)
    {
      if (s->reqs[q] == MPI_REQUEST_NULL)
        continue;
      int flag = 0;
      *rc = MPI_Test (&s->reqs[q], &flag, MPI_STATUS_IGNORE);
      if (*rc != MPI_SUCCESS)
        return 0;
      if (!flag)
        {
          if (all)
            *waiting = s->world[q];
          all = 0;
        }
    }
  return all;
}

static int
ps_done_step (tw_algo_run *run, sub *s)
{
  if (s->rank == s->root && s->step == 0)
    {
      /* Sum in rank order: the server's own buffer takes its place. */
      g_autofree char *acc = g_malloc (MAX (run->n, 1) * run->esz);
      memcpy (acc, s->root == 0 ? run->buf : s->bufs[0], run->n * run->esz);
      for (int q = 1; q < s->size; q++)
        tw_comm_reduce_into (acc, q == s->root ? run->buf : s->bufs[q], run->n, run->dtype,
                             run->op);
      memcpy (run->buf, acc, run->n * run->esz);
    }
  return ++s->step < 2;
}

static int
sub_post (tw_algo_run *run, sub *s)
{
  switch (s->kind)
    {
    case SUB_RING:
      return ring_post (run, s);
    case SUB_TREE_REDUCE:
      return tree_reduce_post (run, s);
    case SUB_TREE_BCAST:
      return tree_bcast_post (run, s);
    default:
      return ps_post (run, s);
    }
}

static int
sub_done_step (tw_algo_run *run, sub *s)
{
  switch (s->kind)
    {
    case SUB_RING:
      return ring_done_step (run, s);
    case SUB_TREE_REDUCE:
      return tree_reduce_done_step (run, s);
    case SUB_TREE_BCAST:
      return tree_bcast_done_step (run, s);
    default:
      return ps_done_step (run, s);
    }
}

static GError *
rc_error (int rc)
{
  char msg[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string (rc, msg, &len);
  return g_error_new (TW_COMM_ERROR, TW_COMM_ERROR_FAILED, "all-reduce: MPI: %s", msg);
}

tw_algo_run *
tw_algo_run_start (tw_comm *c, tw_algo algo, void *buf, int64_t count, tw_dtype dtype,
                   tw_reduce_op op, GError **error)
{
  tw_algo_run *run = g_new0 (tw_algo_run, 1);
  run->c = c;
  run->buf = buf;
  run->n = count;
  run->dtype = dtype;
  run->esz = tw_dtype_size (dtype);
  run->op = op;
  run->dt = tw_comm_mpi_dtype (dtype);
  switch (algo)
    {
    case TW_ALGO_RING:
      sub_init (run, &run->subs[run->n_subs++], SUB_RING, c->algo, 0);
      break;
    case TW_ALGO_TREE:
      sub_init (run, &run->subs[run->n_subs++], SUB_TREE_REDUCE, c->algo, 0);
      sub_init (run, &run->subs[run->n_subs++], SUB_TREE_BCAST, c->algo, 0);
      break;
    case TW_ALGO_PS:
      sub_init (run, &run->subs[run->n_subs++], SUB_PS, c->algo, c->opt.ps_rank);
      break;
    case TW_ALGO_HIER:
      if (c->node_size > 1)
        sub_init (run, &run->subs[run->n_subs++], SUB_TREE_REDUCE, c->node, 0);
      if (c->leaders != MPI_COMM_NULL && c->n_nodes > 1)
        sub_init (run, &run->subs[run->n_subs++], SUB_RING, c->leaders, 0);
      if (c->node_size > 1)
        sub_init (run, &run->subs[run->n_subs++], SUB_TREE_BCAST, c->node, 0);
      break;
    default:
      g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG, "no such algorithm");
      g_free (run);
      return NULL;
    }
  for (int i = 0; i < run->n_subs; i++)
    {
      sub *s = &run->subs[i];
      if (s->kind == SUB_RING)
        s->tmp = g_malloc ((run->n / MAX (s->size, 1) + 1) * run->esz);
      else if (s->kind == SUB_TREE_REDUCE)
        s->tmp = g_malloc ((2 * run->n + 1) * run->esz);
    }
  /* Nothing to do: no elements, or a communicator of one. */
  while (run->cur < run->n_subs
         && (run->n == 0 || run->subs[run->cur].size < 2))
    run->cur++;
  if (run->cur < run->n_subs)
    {
      int rc = sub_post (run, &run->subs[run->cur]);
      if (rc != MPI_SUCCESS)
        {
          g_propagate_error (error, rc_error (rc));
          tw_algo_run_free (run);
          return NULL;
        }
    }
  return run;
}

int
tw_algo_run_progress (tw_algo_run *run, int *waiting_on, gint64 *sent, gint64 *received,
                      GError **error)
{
  for (;;)
    {
      *sent = run->sent;
      *received = run->received;
      if (run->cur >= run->n_subs)
        return 1;
      sub *s = &run->subs[run->cur];
      int rc = MPI_SUCCESS;
      int ready = s->kind == SUB_PS ? ps_test (s, waiting_on, &rc) : test_all (s, waiting_on, &rc);
      if (rc != MPI_SUCCESS)
        {
          g_propagate_error (error, rc_error (rc));
          return -1;
        }
      if (!ready)
        return 0;
      if (!sub_done_step (run, s))
        {
          run->cur++;
          while (run->cur < run->n_subs && run->subs[run->cur].size < 2)
            run->cur++;
          if (run->cur >= run->n_subs)
            continue;
          s = &run->subs[run->cur];
        }
      rc = sub_post (run, s);
      if (rc != MPI_SUCCESS)
        {
          g_propagate_error (error, rc_error (rc));
          return -1;
        }
    }
}

void
tw_algo_run_free (tw_algo_run *run)
{
  if (run == NULL)
    return;
  for (int i = 0; i < run->n_subs; i++)
    sub_clear (&run->subs[i]);
  g_free (run);
}
