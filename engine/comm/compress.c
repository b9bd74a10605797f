/* compress.c — gradient compression over the communicator (compress.h). */
#define G_LOG_DOMAIN "tw-compress"

#include "engine/comm/compress.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum
{
  METHOD_TOPK,
  METHOD_INT8,
  METHOD_SIGN,
  METHOD_POWERSGD,
} method;

/* What a bucket index keeps from step to step. */
typedef struct
{
  int64_t n;
  float *residual;                 /* [n] error feedback */
  gboolean busy;                   /* an op in flight */
  /* PowerSGD: the layout it was made for, and each member's Q [c, R]
   * (NULL for the members that go dense). */
  tw_compress_member *members;
  int n_members;
  float **q;
} bucket_state;

struct tw_compressor
{
  method method;
  double fraction;                 /* topk */
  int rank;                        /* powersgd */
  char *name;
  GMutex lock;                     /* buckets, the byte counters */
  GPtrArray *buckets;              /* bucket_state *, by index (NULL: not yet) */
  gint64 sent, dense;
};

/* A PowerSGD matrix member in flight. */
typedef struct
{
  int member;                      /* index in the bucket's members */
  int64_t offset, m, c;
  int64_t p_at, q_at;              /* its P in pack1, its Q in pack2 (floats) */
} psgd_matrix;

struct tw_compress_op
{
  tw_compressor *z;
  tw_comm *c;
  bucket_state *st;
  float *buf;
  int64_t n;
  tw_comm_req *req;
  guint8 *send, *recv;             /* all-gather methods: this rank's block, every rank's */
  int64_t block;                   /* bytes per rank in recv */
  int64_t k;                       /* topk */
  /* PowerSGD */
  psgd_matrix *mats;
  int n_mats;
  int64_t *dense_at;               /* [2·n_dense]: offset, length of each dense run */
  int n_dense;
  float *pack1, *pack2;
  int64_t p_len;                   /* pack1: the P's [p_len], then the dense runs */
  int64_t len1, len2;              /* floats in pack1, pack2 (the Q's) */
  char *what;
  char **params;
};

static void
bucket_state_clear_layout (bucket_state *st)
{
  for (int j = 0; st->q != NULL && j < st->n_members; j++)
    g_free (st->q[j]);
  g_clear_pointer (&st->q, g_free);
  g_clear_pointer (&st->members, g_free);
  st->n_members = 0;
}

static void
bucket_state_free (gpointer p)
{
  bucket_state *st = p;
  if (st == NULL)
    return;
  bucket_state_clear_layout (st);
  g_free (st->residual);
  g_free (st);
}

static gboolean
parse_fail (const char *spec, const char *why, GError **error)
{
  g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG, "gradient compression '%s': %s", spec,
               why);
  return FALSE;
}

static gboolean
parse_spec (tw_compressor *z, const char *spec, GError **error)
{
  if (spec == NULL)
    spec = "(null)";
  if (g_str_has_prefix (spec, "topk:"))
    {
      const char *s = spec + 5;
      char *end = NULL;
      double f = g_ascii_strtod (s, &end);
      if (*s == '\0' || end == s || *end != '\0' || !isfinite (f))
        return parse_fail (spec, "the fraction kept must be a number in (0, 1]", error);
      if (!(f > 0 && f <= 1))
        return parse_fail (spec, "the fraction kept must be in (0, 1]", error);
      z->method = METHOD_TOPK;
      z->fraction = f;
      char num[G_ASCII_DTOSTR_BUF_SIZE];
      z->name = g_strconcat ("topk:", g_ascii_formatd (num, sizeof num, "%g", f), NULL);
      return TRUE;
    }
  if (g_str_has_prefix (spec, "powersgd:"))
    {
      guint64 r = 0;
      /* 1024: far above any rank that compresses (PowerSGD's are 1 to 32). */
      if (!g_ascii_string_to_unsigned (spec + 9, 10, 1, 1024, &r, NULL))
        return parse_fail (spec, "the rank must be a whole number from 1 to 1024", error);
      z->method = METHOD_POWERSGD;
      z->rank = (int) r;
      z->name = g_strdup_printf ("powersgd:%d", z->rank);
      return TRUE;
    }
  if (strcmp (spec, "int8") == 0 || strcmp (spec, "sign") == 0)
    {
      z->method = spec[0] == 'i' ? METHOD_INT8 : METHOD_SIGN;
      z->name = g_strdup (spec);
      return TRUE;
    }
  return parse_fail (spec, "unknown; expected topk:F (0 < F ≤ 1), int8, sign or powersgd:R "
                     "(R ≥ 1)", error);
}

tw_compressor *
tw_compressor_new (const char *spec, GError **error)
{
  tw_compressor *z = g_new0 (tw_compressor, 1);
  if (!parse_spec (z, spec, error))
    {
      g_free (z->name);
      g_free (z);
      return NULL;
    }
  g_mutex_init (&z->lock);
  z->buckets = g_ptr_array_new_with_free_func (bucket_state_free);
  return z;
}

void
tw_compressor_free (tw_compressor *z)
{
  if (z == NULL)
    return;
  g_ptr_array_unref (z->buckets);
  g_mutex_clear (&z->lock);
  g_free (z->name);
  g_free (z);
}

const char *
tw_compressor_name (const tw_compressor *z)
{
  return z->name;
}

void
tw_compressor_take_bytes (tw_compressor *z, gint64 *sent, gint64 *dense)
{
  g_mutex_lock (&z->lock);
  if (sent != NULL)
    *sent = z->sent;
  if (dense != NULL)
    *dense = z->dense;
  z->sent = z->dense = 0;
  g_mutex_unlock (&z->lock);
}

const float *
tw_compressor_residual (tw_compressor *z, int bucket, int64_t *n)
{
  g_mutex_lock (&z->lock);
  bucket_state *st = bucket >= 0 && (guint) bucket < z->buckets->len
                   ? g_ptr_array_index (z->buckets, bucket) : NULL;
  g_mutex_unlock (&z->lock);
  if (n != NULL)
    *n = st != NULL ? st->n : 0;
  return st != NULL ? st->residual : NULL;
}

/* The pure parts. */

int64_t
tw_compress_topk_k (double f, int64_t n)
{
  if (n <= 0)
    return 0;
  double k = ceil (f * (double) n);
  return CLAMP ((int64_t) k, 1, n);
}

static inline guint32
magnitude_key (float x)
{
  guint32 u;
  memcpy (&u, &x, 4);
  /* |x|'s bits order as |x| does, NaN's above infinity's. */
  return u & 0x7fffffffu;
}

/* The bin from the top where the k-th largest falls: *above gets the count
 * in the bins above it. */
static guint32
top_bin (const int64_t *hist, int64_t k, int64_t *above)
{
  int64_t cum = 0;
  for (int b = 65535; b > 0; b--)
    {
      if (cum + hist[b] >= k)
        {
          *above = cum;
          return (guint32) b;
        }
      cum += hist[b];
    }
  *above = cum;
  return 0;
}

/* A radix select on the 31 bits of the magnitude, 16 then 15: the k-th
 * largest key T, then every key above T and the first (lowest-index) keys
 * equal to T. */
void
tw_compress_topk_select (const float *x, int64_t n, int64_t k, int32_t *idx)
{
  g_return_if_fail (k >= 0 && k <= n && n <= G_MAXINT32);
  if (k == 0)
    return;
  g_autofree int64_t *hist = g_new0 (int64_t, 65536);
  for (int64_t i = 0; i < n; i++)
    hist[magnitude_key (x[i]) >> 16]++;
  int64_t above = 0;
  guint32 hi = top_bin (hist, k, &above);
  int64_t need = k - above;
  memset (hist, 0, 65536 * sizeof *hist);
  for (int64_t i = 0; i < n; i++)
    {
      guint32 u = magnitude_key (x[i]);
      if (u >> 16 == hi)
        hist[u & 0xffff]++;
    }
  int64_t above2 = 0;
  guint32 lo = top_bin (hist, need, &above2);
  need -= above2;
  guint32 t = (hi << 16) | lo;
  int64_t got = 0;
  for (int64_t i = 0; i < n && got < k; i++)
    {
      guint32 u = magnitude_key (x[i]);
      if (u > t || (u == t && need > 0))
        {
          if (u == t)
            need--;
          idx[got++] = (int32_t) i;
        }
    }
  g_assert (got == k);
}

float
tw_compress_int8_quantize (const float *x, int64_t n, int8_t *q)
{
  if (n <= 0)
    return 0.0f;
  float amax = 0;
  gboolean bad = FALSE;
  for (int64_t i = 0; i < n; i++)
    {
      float a = fabsf (x[i]);
      if (!(a <= FLT_MAX))
        bad = TRUE;
      else if (a > amax)
        amax = a;
    }
  if (bad || amax == 0)
    {
      memset (q, 0, n);
      return bad ? NAN : 0.0f;
    }
  float scale = amax / 127.0f;
  for (int64_t i = 0; i < n; i++)
    {
      float v = roundf (x[i] / scale);
      q[i] = (int8_t) CLAMP (v, -127.0f, 127.0f);
    }
  return scale;
}

float
tw_compress_sign_pack (const float *x, int64_t n, guint8 *bits)
{
  double sum = 0;
  memset (bits, 0, (n + 7) / 8);
  for (int64_t i = 0; i < n; i++)
    {
      sum += fabs ((double) x[i]);
      if (x[i] < 0)
        bits[i >> 3] |= (guint8) (1u << (i & 7));
    }
  return n > 0 ? (float) (sum / (double) n) : 0.0f;
}

void
tw_compress_sign_add (const guint8 *bits, float scale, int64_t n, float *out)
{
  /* Branch-free, 8 entries per byte, so that it vectorises. */
  int64_t whole = n / 8;
  for (int64_t j = 0; j < whole; j++)
    for (int b = 0; b < 8; b++)
      out[8 * j + b] += scale - 2.0f * scale * (float) ((bits[j] >> b) & 1);
  for (int64_t i = 8 * whole; i < n; i++)
    out[i] += (bits[i >> 3] >> (i & 7)) & 1 ? -scale : scale;
}

void
tw_compress_orthonormalize (float *p, int64_t m, int r)
{
  g_autofree double *v = g_new (double, m * r);
  for (int64_t i = 0; i < m * r; i++)
    v[i] = p[i];
  for (int j = 0; j < r; j++)
    {
      double before = 0;
      for (int64_t i = 0; i < m; i++)
        before += v[i * r + j] * v[i * r + j];
      for (int l = 0; l < j; l++)
        {
          double d = 0;
          for (int64_t i = 0; i < m; i++)
            d += v[i * r + l] * v[i * r + j];
          for (int64_t i = 0; i < m; i++)
            v[i * r + j] -= d * v[i * r + l];
        }
      double after = 0;
      for (int64_t i = 0; i < m; i++)
        after += v[i * r + j] * v[i * r + j];
      /* Less than 1e-6 of its norm left (float's precision is 6e-8): it
       * was in the span of the columns before, up to rounding. */
      double inv = after > 0 && after > 1e-12 * before ? 1.0 / sqrt (after) : 0.0;
      for (int64_t i = 0; i < m; i++)
        v[i * r + j] *= inv;
    }
  for (int64_t i = 0; i < m * r; i++)
    p[i] = (float) v[i];
}

void
tw_compress_powersgd_init_q (float *q, int64_t c, int r, int member)
{
  /* splitmix64 of a seed made of the arguments: the same on every rank. */
  guint64 s = 0x5eed0f9a3c4b2d1ull ^ ((guint64) member << 40) ^ ((guint64) c << 8) ^ (guint64) r;
  for (int64_t i = 0; i < c * r; i++)
    {
      guint64 z = (s += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      z ^= z >> 31;
      q[i] = (float) ((double) (z >> 40) / (double) (1ull << 24) * 2.0 - 1.0);
    }
}

/* Start. */

static bucket_state *
bucket_get (tw_compressor *z, int bucket, int64_t n)
{
  g_mutex_lock (&z->lock);
  if ((guint) bucket >= z->buckets->len)
    g_ptr_array_set_size (z->buckets, bucket + 1);
  bucket_state *st = g_ptr_array_index (z->buckets, bucket);
  if (st == NULL)
    {
      st = g_new0 (bucket_state, 1);
      g_ptr_array_index (z->buckets, bucket) = st;
    }
  g_assert (!st->busy);        /* one op per bucket index in flight */
  st->busy = TRUE;
  g_mutex_unlock (&z->lock);
  if (st->n != n || st->residual == NULL)
    {
      bucket_state_clear_layout (st);
      g_free (st->residual);
      st->residual = g_new0 (float, MAX (n, 1));
      st->n = n;
    }
  return st;
}

static void
count_bytes (tw_compressor *z, gint64 sent, gint64 dense)
{
  g_mutex_lock (&z->lock);
  z->sent += sent;
  z->dense += dense;
  g_mutex_unlock (&z->lock);
}

static void
op_set_tag (tw_compress_op *op, const tw_coll_tag *tag)
{
  if (tag == NULL)
    return;
  op->what = g_strdup (tag->what);
  op->params = tag->params != NULL ? g_strdupv ((char **) tag->params) : NULL;
}

static tw_coll_tag
op_tag (const tw_compress_op *op)
{
  return (tw_coll_tag) { .what = op->what, .params = (const char *const *) op->params };
}

/* x ← buf + residual, in the residual. */
static float *
add_residual (bucket_state *st, const float *buf, int64_t n)
{
  float *x = st->residual;
  for (int64_t i = 0; i < n; i++)
    x[i] += buf[i];
  return x;
}

static void
start_gather (tw_compress_op *op, int64_t block)
{
  int p = tw_comm_size (op->c);
  op->block = block;
  op->recv = g_malloc ((gsize) block * p);
  tw_coll_tag tag = op_tag (op);
  op->req = tw_comm_allgather (op->c, op->send, op->recv, block, TW_U8, &tag);
  count_bytes (op->z, block, 4 * op->n);
}

static void
start_topk (tw_compress_op *op)
{
  int64_t n = op->n, k = tw_compress_topk_k (op->z->fraction, n);
  float *x = add_residual (op->st, op->buf, n);
  op->k = k;
  op->send = g_malloc (8 * k);
  int32_t *idx = (int32_t *) op->send;
  float *val = (float *) (op->send + 4 * k);
  tw_compress_topk_select (x, n, k, idx);
  for (int64_t j = 0; j < k; j++)
    {
      val[j] = x[idx[j]];
      x[idx[j]] = 0;           /* the residual keeps the rest */
    }
  start_gather (op, 8 * k);
}

static void
start_int8 (tw_compress_op *op)
{
  int64_t n = op->n;
  float *x = add_residual (op->st, op->buf, n);
  op->send = g_malloc (4 + n);
  int8_t *q = (int8_t *) (op->send + 4);
  float scale = tw_compress_int8_quantize (x, n, q);
  memcpy (op->send, &scale, 4);
  if (!isfinite (scale))
    memset (x, 0, n * sizeof *x);   /* a NaN shows in the result; it is not kept */
  else
    for (int64_t i = 0; i < n; i++)
      x[i] -= (float) q[i] * scale;
  start_gather (op, 4 + n);
}

static void
start_sign (tw_compress_op *op)
{
  int64_t n = op->n, nb = (n + 7) / 8;
  float *x = add_residual (op->st, op->buf, n);
  op->send = g_malloc (4 + nb);
  guint8 *bits = op->send + 4;
  float scale = tw_compress_sign_pack (x, n, bits);
  memcpy (op->send, &scale, 4);
  if (!isfinite (scale))
    memset (x, 0, n * sizeof *x);
  else
    tw_compress_sign_add (bits, -scale, n, x);   /* x − sign·scale */
  start_gather (op, 4 + nb);
}

static int
cmp_offset (const void *a, const void *b)
{
  const psgd_matrix *x = a, *y = b;
  return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* The bucket's layout for PowerSGD: which members go as P and Q (and
 * their Q state, reset when the layout changes), and the dense runs. */
static void
psgd_layout (tw_compress_op *op, const tw_compress_member *members, int n_members)
{
  bucket_state *st = op->st;
  int r = op->z->rank;
  if (st->n_members != n_members || st->q == NULL
      || (n_members > 0 && memcmp (st->members, members, n_members * sizeof *members) != 0))
    {
      bucket_state_clear_layout (st);
      st->n_members = n_members;
      st->members = g_memdup2 (members, MAX (n_members, 1) * sizeof *members);
      st->q = g_new0 (float *, MAX (n_members, 1));
    }
  op->mats = g_new (psgd_matrix, MAX (n_members, 1));
  for (int j = 0; j < n_members; j++)
    {
      const tw_compress_member *mb = &members[j];
      g_return_if_fail (mb->offset >= 0 && mb->numel >= 0 && mb->offset + mb->numel <= op->n);
      if (mb->ndim < 2 || mb->shape[0] <= 0 || mb->numel == 0 || mb->numel % mb->shape[0] != 0)
        continue;
      int64_t m = mb->shape[0], c = mb->numel / m;
      /* R < min (m, c), and P and Q smaller than the matrix. */
      if (!(r < m && r < c && r * (m + c) < m * c))
        continue;
      if (st->q[j] == NULL)
        {
          st->q[j] = g_new (float, c * r);
          tw_compress_powersgd_init_q (st->q[j], c, r, j);
        }
      op->mats[op->n_mats++] = (psgd_matrix) { .member = j, .offset = mb->offset, .m = m, .c = c };
    }
  qsort (op->mats, op->n_mats, sizeof *op->mats, cmp_offset);
  op->dense_at = g_new (int64_t, 2 * (op->n_mats + 1));
  int64_t at = 0, p_at = 0, q_at = 0, dense = 0;
  for (int i = 0; i <= op->n_mats; i++)
    {
      int64_t end = i < op->n_mats ? op->mats[i].offset : op->n;
      g_return_if_fail (end >= at);    /* members overlap */
      if (end > at)
        {
          op->dense_at[2 * op->n_dense] = at;
          op->dense_at[2 * op->n_dense + 1] = end - at;
          op->n_dense++;
          dense += end - at;
        }
      if (i < op->n_mats)
        {
          psgd_matrix *mt = &op->mats[i];
          mt->p_at = p_at;
          mt->q_at = q_at;
          p_at += mt->m * r;
          q_at += mt->c * r;
          at = mt->offset + mt->m * mt->c;
        }
    }
  op->p_len = p_at;
  op->len1 = p_at + dense;
  op->len2 = q_at;
}

static void
start_powersgd (tw_compress_op *op, const tw_compress_member *members, int n_members)
{
  int r = op->z->rank;
  float *x = add_residual (op->st, op->buf, op->n);
  psgd_layout (op, members, n_members);
  op->pack1 = g_new (float, MAX (op->len1, 1));
  op->pack2 = g_new (float, MAX (op->len2, 1));
  for (int i = 0; i < op->n_mats; i++)
    {
      psgd_matrix *mt = &op->mats[i];
      /* P [m, R] = M [m, c] · Q [c, R] */
      cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasNoTrans, mt->m, r, mt->c, 1.0f,
                   x + mt->offset, mt->c, op->st->q[mt->member], r, 0.0f, op->pack1 + mt->p_at,
                   r);
    }
  int64_t at = op->p_len;
  for (int d = 0; d < op->n_dense; d++)
    {
      int64_t off = op->dense_at[2 * d], len = op->dense_at[2 * d + 1];
      memcpy (op->pack1 + at, x + off, len * sizeof *x);
      memset (x + off, 0, len * sizeof *x);   /* sent whole: no residual */
      at += len;
    }
  tw_coll_tag tag = op_tag (op);
  op->req = tw_comm_allreduce (op->c, op->pack1, op->len1, TW_F32, TW_REDUCE_SUM, &tag);
  count_bytes (op->z, 4 * (op->len1 + op->len2), 4 * op->n);
}

tw_compress_op *
tw_compressor_start (tw_compressor *z, tw_comm *c, int bucket, float *buf, int64_t n,
                     const tw_compress_member *members, int n_members, const tw_coll_tag *tag)
{
  g_return_val_if_fail (z != NULL && c != NULL && bucket >= 0 && n >= 0 && n <= G_MAXINT32, NULL);
  tw_compress_op *op = g_new0 (tw_compress_op, 1);
  op->z = z;
  op->c = c;
  op->buf = buf;
  op->n = n;
  op->st = bucket_get (z, bucket, n);
  op_set_tag (op, tag);
  if (n == 0)
    return op;                 /* every rank has the same n: nothing to post */
  switch (z->method)
    {
    case METHOD_TOPK:
      start_topk (op);
      break;
    case METHOD_INT8:
      start_int8 (op);
      break;
    case METHOD_SIGN:
      start_sign (op);
      break;
    case METHOD_POWERSGD:
      start_powersgd (op, members, members != NULL ? n_members : 0);
      break;
    }
  return op;
}

/* Finish. */

static gboolean
finish_topk (tw_compress_op *op, GError **error)
{
  int p = tw_comm_size (op->c);
  int64_t k = op->k, n = op->n;
  memset (op->buf, 0, n * sizeof *op->buf);
  for (int q = 0; q < p; q++)
    {
      const guint8 *blk = op->recv + q * op->block;
      const int32_t *idx = (const int32_t *) blk;
      const float *val = (const float *) (blk + 4 * k);
      for (int64_t j = 0; j < k; j++)
        {
          if (idx[j] < 0 || idx[j] >= n)
            {
              g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_MISMATCH,
                           "top-k: rank %d sent index %d for a bucket of %" G_GINT64_FORMAT,
                           q, idx[j], n);
              return FALSE;
            }
          op->buf[idx[j]] += val[j];
        }
    }
  return TRUE;
}

static void
finish_int8 (tw_compress_op *op)
{
  int p = tw_comm_size (op->c);
  float *out = op->buf;
  memset (out, 0, op->n * sizeof *out);
  for (int q = 0; q < p; q++)
    {
      const guint8 *blk = op->recv + q * op->block;
      float scale;
      memcpy (&scale, blk, 4);
      const int8_t *codes = (const int8_t *) (blk + 4);
      for (int64_t i = 0; i < op->n; i++)
        out[i] += (float) codes[i] * scale;
    }
}

static void
finish_sign (tw_compress_op *op)
{
  int p = tw_comm_size (op->c);
  memset (op->buf, 0, op->n * sizeof *op->buf);
  for (int q = 0; q < p; q++)
    {
      const guint8 *blk = op->recv + q * op->block;
      float scale;
      memcpy (&scale, blk, 4);
      tw_compress_sign_add (blk + 4, scale, op->n, op->buf);
    }
}

/* Error feedback (Vogels et al. 2019, Algorithm 2).  Each rank's own
 * contribution is its decompressed local approximation P̂·Q_localᵀ, with
 * P̂ the orthonormalised SUM of the P's and Q_local = M_localᵀ·P̂ (this
 * rank's, before the sum): that is P̂P̂ᵀ·M_local, and the result P̂·Q_sumᵀ is
 * exactly the sum of those over ranks.  So the residual is
 * M_local − P̂·Q_localᵀ = (I − P̂P̂ᵀ)·M_local, and Σ_ranks residual = Σ M −
 * result, as the paper's average-based e_w = M_w − P̂·Q_avgᵀ gives summed
 * over workers (it spreads the same total differently over them). */
static gboolean
finish_powersgd (tw_compress_op *op, GError **error)
{
  int r = op->z->rank;
  float *x = op->st->residual;     /* M_local, for the matrices */
  for (int i = 0; i < op->n_mats; i++)
    {
      psgd_matrix *mt = &op->mats[i];
      float *ph = op->pack1 + mt->p_at;
      tw_compress_orthonormalize (ph, mt->m, r);
      /* Q_local [c, R] = Mᵀ [c, m] · P̂ [m, R] */
      cblas_sgemm (CblasRowMajor, CblasTrans, CblasNoTrans, mt->c, r, mt->m, 1.0f,
                   x + mt->offset, mt->c, ph, r, 0.0f, op->pack2 + mt->q_at, r);
    }
  g_autofree float *q_local = g_memdup2 (op->pack2, MAX (op->len2, 1) * sizeof (float));
  tw_comm_req *req2 = NULL;
  if (op->len2 > 0)
    {
      tw_coll_tag tag = op_tag (op);
      req2 = tw_comm_allreduce (op->c, op->pack2, op->len2, TW_F32, TW_REDUCE_SUM, &tag);
    }
  /* While Q moves: the residuals, and the dense runs' sums. */
  for (int i = 0; i < op->n_mats; i++)
    {
      psgd_matrix *mt = &op->mats[i];
      cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasTrans, mt->m, mt->c, r, -1.0f,
                   op->pack1 + mt->p_at, r, q_local + mt->q_at, r, 1.0f, x + mt->offset, mt->c);
    }
  int64_t at = op->p_len;
  for (int d = 0; d < op->n_dense; d++)
    {
      int64_t off = op->dense_at[2 * d], len = op->dense_at[2 * d + 1];
      memcpy (op->buf + off, op->pack1 + at, len * sizeof (float));
      at += len;
    }
  if (req2 != NULL)
    {
      gboolean ok = tw_comm_wait (op->c, req2, error);
      tw_comm_req_free (req2);
      if (!ok)
        return FALSE;
    }
  for (int i = 0; i < op->n_mats; i++)
    {
      psgd_matrix *mt = &op->mats[i];
      const float *ph = op->pack1 + mt->p_at, *qs = op->pack2 + mt->q_at;
      float *out = op->buf + mt->offset;
      /* M̂ = P̂·Q_sumᵀ, by plain loops over R: the same bits on every rank
       * whatever BLAS's threads do. */
      for (int64_t a = 0; a < mt->m; a++)
        for (int64_t b = 0; b < mt->c; b++)
          {
            float s = 0;
            for (int t = 0; t < r; t++)
              s += ph[a * r + t] * qs[b * r + t];
            out[a * mt->c + b] = s;
          }
      /* Warm start: the next step's Q is this one's sum.  A column that
       * came out zero (a zero gradient) would stay zero for ever: it
       * restarts from the seed. */
      float *qst = op->st->q[mt->member];
      g_autofree float *q0 = NULL;
      memcpy (qst, qs, mt->c * r * sizeof (float));
      for (int t = 0; t < r; t++)
        {
          gboolean zero = TRUE;
          for (int64_t b = 0; b < mt->c && zero; b++)
            zero = qst[b * r + t] == 0;
          if (!zero)
            continue;
          if (q0 == NULL)
            {
              q0 = g_new (float, mt->c * r);
              tw_compress_powersgd_init_q (q0, mt->c, r, mt->member);
            }
          for (int64_t b = 0; b < mt->c; b++)
            qst[b * r + t] = q0[b * r + t];
        }
    }
  return TRUE;
}

gboolean
tw_compressor_finish (tw_compressor *z, tw_compress_op *op, GError **error)
{
  g_return_val_if_fail (z != NULL && op != NULL && op->z == z, FALSE);
  gboolean ok = TRUE;
  if (op->req != NULL)
    ok = tw_comm_wait (op->c, op->req, error);
  if (ok && op->n > 0)
    switch (z->method)
      {
      case METHOD_TOPK:
        ok = finish_topk (op, error);
        break;
      case METHOD_INT8:
        finish_int8 (op);
        break;
      case METHOD_SIGN:
        finish_sign (op);
        break;
      case METHOD_POWERSGD:
        ok = finish_powersgd (op, error);
        break;
      }
  tw_comm_req_free (op->req);
  g_mutex_lock (&z->lock);
  op->st->busy = FALSE;
  g_mutex_unlock (&z->lock);
  g_free (op->send);
  g_free (op->recv);
  g_free (op->mats);
  g_free (op->dense_at);
  g_free (op->pack1);
  g_free (op->pack2);
  g_free (op->what);
  g_strfreev (op->params);
  g_free (op);
  return ok;
}
