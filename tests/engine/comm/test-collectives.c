/* test-collectives.c — every call of the communicator (engine/comm/comm.h)
 * against a float64 recomputation, run by mpiexec at several sizes.
 *
 *   mpiexec -np 4 test-collectives --tap --algo=ring [--ranks-per-node=2] [--ps-rank=0]
 *
 * The all-reduce algorithm is an option of the communicator, and MPI starts
 * once per process, so one run tests one algorithm (meson registers one
 * test per size and algorithm); the other collectives are MPI's own and run
 * in every one.
 *
 * Every rank runs every test case; only rank 0 prints TAP (the others write
 * their stdout to /dev/null).  A check that fails prints the rank and what
 * it saw on stderr and counts; at the end of each case the ranks all-reduce
 * their counts (max) and every rank fails the case if any rank did, so the
 * ranks stay in step and rank 0's TAP says "not ok".
 *
 * Inputs are a hash of (rank, index, salt), so that any rank can recompute
 * every rank's input and the exact reduction in float64 without another
 * message. */
#include "engine/comm/comm.h"

#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static tw_comm *comm;
static int rank, size;
static tw_algo algo;
static int failures;          /* this rank's failed checks in the current case */

#define CHECK(cond, ...)                                                                     \
  G_STMT_START                                                                               \
  {                                                                                          \
    if (!(cond))                                                                             \
      check_failed (__LINE__, #cond, __VA_ARGS__);                                           \
  }                                                                                          \
  G_STMT_END

static void G_GNUC_PRINTF (3, 4)
check_failed (int line, const char *cond, const char *fmt, ...)
{
  /* Only the first few of a case: a wrong buffer fails at every element. */
  if (failures++ >= 8)
    return;
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  fprintf (stderr, "rank %d (%s): line %d: %s failed: %s\n", rank, tw_algo_name (algo), line,
           cond, msg);
}

/* error by reference: it is read after ok was computed. */
static gboolean
ok_or_report (gboolean ok, GError **error, const char *what)
{
  CHECK (ok, "%s: %s", what, *error ? (*error)->message : "?");
  g_clear_error (error);
  return ok;
}

/* The end of a case: every rank learns whether any rank failed. */
static void
case_end (void)
{
  gint64 worst = failures;
  GError *error = NULL;
  if (!tw_comm_allreduce_sync (comm, &worst, 1, TW_I64, TW_REDUCE_MAX, NULL, &error))
    {
      fprintf (stderr, "rank %d: the failure count's all-reduce failed: %s\n", rank,
               error->message);
      g_clear_error (&error);
      worst = MAX (worst, 1);
    }
  if (worst > 0)
    {
      if (rank == 0)
        g_test_message ("a check failed on some rank (its stderr says which)");
      g_test_fail ();
    }
  failures = 0;
}

/* Inputs. */

static guint64
mix (guint64 x)
{
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

static guint64
h3 (int r, int64_t i, int salt)
{
  return mix (((guint64) r << 48) ^ ((guint64) salt << 40) ^ (guint64) i ^ 0x9e3779b97f4a7c15ull);
}

/* Of both signs, not exactly representable sums: [-10, 10). */
static double
gen_real (int r, int64_t i, int salt)
{
  return ((double) (h3 (r, i, salt) >> 11) / (double) (1ull << 53)) * 20.0 - 10.0;
}

/* Large enough that a detour through float or double would round them. */
static gint64
gen_i64 (int r, int64_t i, int salt)
{
  return (gint64) (h3 (r, i, salt) >> 8) - (gint64) (1ull << 55);
}

static void
fill (void *buf, int64_t n, tw_dtype dt, int r, int salt)
{
  for (int64_t i = 0; i < n; i++)
    switch (dt)
      {
      case TW_F32:
        ((float *) buf)[i] = (float) gen_real (r, i, salt);
        break;
      case TW_F64:
        ((double *) buf)[i] = gen_real (r, i, salt);
        break;
      default:
        ((gint64 *) buf)[i] = gen_i64 (r, i, salt);
      }
}

static guint64
hash_bytes (const void *p, size_t n)
{
  const guint8 *b = p;
  guint64 h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

/* Every rank must hold the same bytes: all-gather a hash of them. */
static void
check_same_everywhere (const void *buf, size_t bytes, const char *what)
{
  gint64 mine = (gint64) hash_bytes (buf, bytes);
  g_autofree gint64 *all = g_new0 (gint64, size);
  tw_comm_req *r = tw_comm_allgather (comm, &mine, all, 1, TW_I64, NULL);
  GError *error = NULL;
  if (!ok_or_report (tw_comm_wait (comm, r, &error), &error, "hash all-gather"))
    {
      tw_comm_req_free (r);
      return;
    }
  tw_comm_req_free (r);
  for (int q = 0; q < size; q++)
    CHECK (all[q] == mine, "%s: rank %d holds other bytes than rank %d", what, q, rank);
}

static int64_t *
test_sizes (int *n)
{
  static int64_t s[5];
  s[0] = 0;
  s[1] = 1;
  s[2] = size - 1;
  s[3] = size + 1;
  s[4] = 1001;              /* odd, and not a multiple of any p tested */
  *n = G_N_ELEMENTS (s);
  return s;
}

static const char *
dtype_name (tw_dtype dt)
{
  return dt == TW_F32 ? "f32" : dt == TW_F64 ? "f64" : "i64";
}

static const char *
op_name (tw_reduce_op op)
{
  return op == TW_REDUCE_SUM ? "sum" : op == TW_REDUCE_MAX ? "max" : "min";
}

/* Checks element i of a reduction of every rank's input (salt) against
 * its float64 recomputation.
 *
 * Tolerance.  A sum of p values computed in float in any order (ring,
 * tree, server, MPI's own: each takes its own order) rounds p − 1 times,
 * each time by at most half an ulp of a partial sum, which is at most
 * Σ|x|: so |computed − exact| ≤ (p − 1)·eps/2·Σ|x|; we allow
 * (p − 1)·eps·Σ|x| with eps the type's machine epsilon, which is twice
 * that, and the float64 recomputation itself is exact to 1e-16 relative,
 * far inside it.  Integers and max/min must be exact (max and min pick an
 * input; they do no arithmetic). */
static void
check_element (const void *buf, int64_t i, int64_t at, tw_dtype dt, tw_reduce_op op, int salt,
               const char *what)
{
  if (dt == TW_I64)
    {
      gint64 want = gen_i64 (0, i, salt);
      for (int q = 1; q < size; q++)
        {
          gint64 x = gen_i64 (q, i, salt);
          want = op == TW_REDUCE_SUM ? (gint64) ((guint64) want + (guint64) x)
               : op == TW_REDUCE_MAX ? MAX (want, x) : MIN (want, x);
        }
      gint64 got = ((const gint64 *) buf)[at];
      CHECK (got == want, "%s [%" G_GINT64_FORMAT "] = %" G_GINT64_FORMAT ", want %"
             G_GINT64_FORMAT, what, i, got, want);
      return;
    }
  double want = 0, abs_sum = 0;
  for (int q = 0; q < size; q++)
    {
      double x = dt == TW_F32 ? (double) (float) gen_real (q, i, salt) : gen_real (q, i, salt);
      if (op == TW_REDUCE_SUM)
        want += x;
      else if (q == 0)
        want = x;
      else
        want = op == TW_REDUCE_MAX ? MAX (want, x) : MIN (want, x);
      abs_sum += fabs (x);
    }
  double got = dt == TW_F32 ? ((const float *) buf)[at] : ((const double *) buf)[at];
  double eps = dt == TW_F32 ? FLT_EPSILON : DBL_EPSILON;
  double tol = op == TW_REDUCE_SUM ? (size - 1) * eps * abs_sum : 0;
  CHECK (fabs (got - want) <= tol, "%s [%" G_GINT64_FORMAT "] = %.17g, want %.17g (± %.3g)", what,
         i, got, want, tol);
}

/* All-reduce. */

static void
allreduce_case (tw_dtype dt, tw_reduce_op op, int64_t n, int salt)
{
  size_t esz = tw_dtype_size (dt);
  g_autofree void *buf = g_malloc (MAX (n, 1) * esz);
  fill (buf, n, dt, rank, salt);
  g_autofree char *what = g_strdup_printf ("allreduce %s %s %s of %" G_GINT64_FORMAT,
                                           tw_algo_name (algo), dtype_name (dt), op_name (op), n);
  GError *error = NULL;
  if (!ok_or_report (tw_comm_allreduce_sync (comm, buf, n, dt, op,
                                             &(tw_coll_tag) { .what = what }, &error),
                     &error, what))
    return;
  for (int64_t i = 0; i < n; i++)
    check_element (buf, i, i, dt, op, salt, what);
  check_same_everywhere (buf, n * esz, what);
}

static void
test_allreduce (void)
{
  static const tw_dtype dts[] = { TW_F32, TW_F64, TW_I64 };
  static const tw_reduce_op ops[] = { TW_REDUCE_SUM, TW_REDUCE_MAX, TW_REDUCE_MIN };
  int n_sizes, salt = 1;
  int64_t *sizes = test_sizes (&n_sizes);
  for (guint d = 0; d < G_N_ELEMENTS (dts); d++)
    for (guint o = 0; o < G_N_ELEMENTS (ops); o++)
      for (int s = 0; s < n_sizes; s++)
        allreduce_case (dts[d], ops[o], sizes[s], salt++);
  case_end ();
}

/* Above PyTorch's 25 MiB bucket: 6.6 M floats, 26.4 MB. */
static void
test_allreduce_large (void)
{
  allreduce_case (TW_F32, TW_REDUCE_SUM, 6600000, 100);
  case_end ();
}

/* A NaN in one rank's input reaches every rank's result, whatever the
 * operation, the algorithm and the rank that holds it. */
static void
test_allreduce_nan (void)
{
  static const tw_reduce_op ops[] = { TW_REDUCE_SUM, TW_REDUCE_MAX, TW_REDUCE_MIN };
  const int64_t n = 2 * size + 3;
  for (guint o = 0; o < G_N_ELEMENTS (ops); o++)
    for (int holder = 0; holder < size; holder++)
      {
        g_autofree float *buf = g_new (float, n);
        fill (buf, n, TW_F32, rank, 200);
        /* Element holder, and element n − 1 − holder, NaN on that rank. */
        if (rank == holder)
          buf[holder] = buf[n - 1 - holder] = NAN;
        g_autofree char *what = g_strdup_printf ("allreduce %s %s with a NaN on rank %d",
                                                 tw_algo_name (algo), op_name (ops[o]), holder);
        GError *error = NULL;
        if (!ok_or_report (tw_comm_allreduce_sync (comm, buf, n, TW_F32, ops[o], NULL, &error),
                           &error, what))
          continue;
        CHECK (isnan (buf[holder]) && isnan (buf[n - 1 - holder]),
               "%s: [%d] = %g, [%" G_GINT64_FORMAT "] = %g", what, holder, buf[holder],
               n - 1 - holder, buf[n - 1 - holder]);
        for (int64_t i = 0; i < n; i++)
          if (i != holder && i != n - 1 - holder)
            CHECK (!isnan (buf[i]), "%s: [%" G_GINT64_FORMAT "] is NaN", what, i);
        check_same_everywhere (buf, n * sizeof (float), what);
      }
  case_end ();
}

/* The ring algorithm moves 2(p−1)/p of the buffer each way (n a multiple
 * of p: exactly); our algorithms' bytes on the wire balance over the
 * ranks (every byte sent is received). */
static void
test_allreduce_bytes (void)
{
  const int64_t n = 1200;   /* a multiple of 2, 3 and 4 */
  g_autofree float *buf = g_new (float, n);
  fill (buf, n, TW_F32, rank, 300);
  tw_comm_req *r = tw_comm_allreduce (comm, buf, n, TW_F32, TW_REDUCE_SUM, NULL);
  GError *error = NULL;
  if (ok_or_report (tw_comm_wait (comm, r, &error), &error, "allreduce"))
    {
      const tw_coll_info *info = tw_comm_req_info (r);
      CHECK (info->bytes == n * 4, "bytes %" G_GINT64_FORMAT, info->bytes);
      CHECK (info->algo == algo, "algo %s", tw_algo_name (info->algo));
      if (algo == TW_ALGO_RING)
        {
          gint64 want = 2 * (size - 1) * (n / size) * 4;
          CHECK (info->sent == want && info->received == want, "ring moved %" G_GINT64_FORMAT
                 " out, %" G_GINT64_FORMAT " in, want %" G_GINT64_FORMAT, info->sent,
                 info->received, want);
        }
      gint64 wire[2] = { info->sent, info->received };
      if (ok_or_report (tw_comm_allreduce_sync (comm, wire, 2, TW_I64, TW_REDUCE_SUM, NULL, &error),
                        &error, "wire sums"))
        {
          CHECK (wire[0] == wire[1], "sent %" G_GINT64_FORMAT " in all, received %"
                 G_GINT64_FORMAT, wire[0], wire[1]);
          if (algo != TW_ALGO_MPI && size > 1)
            CHECK (wire[0] > 0, "nothing on the wire");
        }
    }
  tw_comm_req_free (r);
  case_end ();
}

/* Asynchrony: eight all-reduces of different sizes posted at once beside
 * a message to each neighbour, waited for in reverse order (the messages
 * move while the collectives run one after another). */
static void
test_pipelined (void)
{
  enum { N = 8 };
  float *bufs[N];
  int64_t ns[N];
  tw_comm_req *rs[N];
  gint64 out = 7000 + rank, in = -1;
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  tw_comm_req *snd = NULL, *rcv = NULL;
  if (size > 1)
    rcv = tw_comm_recv (comm, &in, 1, TW_I64, left, NULL);
  for (int k = 0; k < N; k++)
    {
      ns[k] = 1 + k * 3001;
      bufs[k] = g_new (float, ns[k]);
      fill (bufs[k], ns[k], TW_F32, rank, 700 + k);
      rs[k] = tw_comm_allreduce (comm, bufs[k], ns[k], TW_F32, TW_REDUCE_SUM, NULL);
      if (k == N / 2 && size > 1)
        snd = tw_comm_send (comm, &out, 1, TW_I64, right, NULL);
    }
  GError *error = NULL;
  for (int k = N - 1; k >= 0; k--)
    {
      if (ok_or_report (tw_comm_wait (comm, rs[k], &error), &error, "pipelined allreduce"))
        {
          for (int64_t i = 0; i < ns[k]; i++)
            check_element (bufs[k], i, i, TW_F32, TW_REDUCE_SUM, 700 + k, "pipelined allreduce");
          CHECK (k == 0 || tw_comm_req_info (rs[k])->seq == tw_comm_req_info (rs[k - 1])->seq + 1,
                 "seq %" G_GUINT64_FORMAT " after %" G_GUINT64_FORMAT,
                 tw_comm_req_info (rs[k])->seq, tw_comm_req_info (rs[k - 1])->seq);
          /* Collectives complete in the order they were posted. */
          CHECK (k == 0 || tw_comm_test (comm, rs[k - 1]), "#%d done before #%d", k, k - 1);
        }
    }
  if (size > 1)
    {
      ok_or_report (tw_comm_wait (comm, snd, &error), &error, "send");
      ok_or_report (tw_comm_wait (comm, rcv, &error), &error, "recv");
      CHECK (in == 7000 + left, "received %" G_GINT64_FORMAT, in);
    }
  for (int k = 0; k < N; k++)
    {
      tw_comm_req_free (rs[k]);
      g_free (bufs[k]);
    }
  tw_comm_req_free (snd);
  tw_comm_req_free (rcv);
  case_end ();
}

/* Every algorithm in turn on one communicator (tw_comm_set_algo), posted
 * four at a time: 60 all-reduces of sizes, types and operations drawn
 * from a seed every rank shares.  Back-to-back runs of different
 * algorithms must not take each other's messages. */
static void
test_mixed_algorithms (void)
{
  enum { N = 60, BATCH = 4 };
  static const tw_dtype dts[] = { TW_F32, TW_F64, TW_I64 };
  GRand *rng = g_rand_new_with_seed (4242);
  GError *error = NULL;
  for (int k0 = 0; k0 < N; k0 += BATCH)
    {
      void *bufs[BATCH];
      tw_comm_req *rs[BATCH];
      int64_t ns[BATCH];
      tw_dtype dt[BATCH];
      tw_reduce_op op[BATCH];
      tw_algo al[BATCH];
      for (int b = 0; b < BATCH; b++)
        {
          al[b] = g_rand_int_range (rng, 0, TW_ALGO_N);
          dt[b] = dts[g_rand_int_range (rng, 0, G_N_ELEMENTS (dts))];
          op[b] = g_rand_int_range (rng, 0, 3);
          ns[b] = g_rand_boolean (rng) ? g_rand_int_range (rng, 0, 2 * size + 2)
                                       : g_rand_int_range (rng, 0, 40000);
          bufs[b] = g_malloc (MAX (ns[b], 1) * tw_dtype_size (dt[b]));
          fill (bufs[b], ns[b], dt[b], rank, 800 + k0 + b);
          tw_comm_set_algo (comm, al[b]);
          rs[b] = tw_comm_allreduce (comm, bufs[b], ns[b], dt[b], op[b], NULL);
        }
      for (int b = 0; b < BATCH; b++)
        {
          g_autofree char *what = g_strdup_printf ("allreduce #%d, %s %s %s of %" G_GINT64_FORMAT,
                                                   k0 + b, tw_algo_name (al[b]),
                                                   dtype_name (dt[b]), op_name (op[b]), ns[b]);
          if (ok_or_report (tw_comm_wait (comm, rs[b], &error), &error, what))
            {
              CHECK (tw_comm_req_info (rs[b])->algo == al[b], "%s ran as %s", what,
                     tw_algo_name (tw_comm_req_info (rs[b])->algo));
              for (int64_t i = 0; i < ns[b]; i++)
                check_element (bufs[b], i, i, dt[b], op[b], 800 + k0 + b, what);
            }
          tw_comm_req_free (rs[b]);
          g_free (bufs[b]);
        }
    }
  tw_comm_set_algo (comm, algo);
  g_rand_free (rng);
  case_end ();
}

/* Reduce-scatter, all-gather, broadcast. */

static void
test_reduce_scatter (void)
{
  static const tw_reduce_op ops[] = { TW_REDUCE_SUM, TW_REDUCE_MAX };
  static const tw_dtype dts[] = { TW_F32, TW_F64, TW_I64 };
  int n_sizes, salt = 400;
  int64_t *sizes = test_sizes (&n_sizes);
  for (guint d = 0; d < G_N_ELEMENTS (dts); d++)
    for (guint o = 0; o < G_N_ELEMENTS (ops); o++)
      for (int s = 0; s < n_sizes; s++, salt++)
        {
          int64_t n = sizes[s];
          size_t esz = tw_dtype_size (dts[d]);
          g_autofree void *send = g_malloc (MAX (n * size, 1) * esz);
          g_autofree void *recv = g_malloc (MAX (n, 1) * esz);
          fill (send, n * size, dts[d], rank, salt);
          g_autofree char *what = g_strdup_printf ("reduce_scatter %s %s of %" G_GINT64_FORMAT,
                                                   dtype_name (dts[d]), op_name (ops[o]), n);
          tw_comm_req *r = tw_comm_reduce_scatter (comm, send, recv, n, dts[d], ops[o], NULL);
          GError *error = NULL;
          gboolean ok = ok_or_report (tw_comm_wait (comm, r, &error), &error, what);
          if (ok)
            CHECK (tw_comm_req_info (r)->bytes == n * size * (gint64) esz, "%s: bytes %"
                   G_GINT64_FORMAT, what, tw_comm_req_info (r)->bytes);
          tw_comm_req_free (r);
          if (!ok)
            continue;
          for (int64_t i = 0; i < n; i++)
            check_element (recv, rank * n + i, i, dts[d], ops[o], salt, what);
        }
  case_end ();
}

static void
test_allgather (void)
{
  static const tw_dtype dts[] = { TW_F32, TW_I64 };
  int n_sizes, salt = 500;
  int64_t *sizes = test_sizes (&n_sizes);
  for (guint d = 0; d < G_N_ELEMENTS (dts); d++)
    for (int s = 0; s < n_sizes; s++, salt++)
      {
        int64_t n = sizes[s];
        size_t esz = tw_dtype_size (dts[d]);
        g_autofree void *send = g_malloc (MAX (n, 1) * esz);
        g_autofree void *recv = g_malloc (MAX (n * size, 1) * esz);
        g_autofree void *want = g_malloc (MAX (n, 1) * esz);
        fill (send, n, dts[d], rank, salt);
        g_autofree char *what = g_strdup_printf ("allgather %s of %" G_GINT64_FORMAT,
                                                 dtype_name (dts[d]), n);
        tw_comm_req *r = tw_comm_allgather (comm, send, recv, n, dts[d], NULL);
        GError *error = NULL;
        gboolean ok = ok_or_report (tw_comm_wait (comm, r, &error), &error, what);
        tw_comm_req_free (r);
        if (!ok)
          continue;
        for (int q = 0; q < size; q++)
          {
            fill (want, n, dts[d], q, salt);
            CHECK (n == 0 || memcmp ((char *) recv + q * n * esz, want, n * esz) == 0,
                   "%s: rank %d's block differs", what, q);
          }
      }
  case_end ();
}

static void
test_broadcast (void)
{
  int n_sizes, salt = 600;
  int64_t *sizes = test_sizes (&n_sizes);
  for (int root = 0; root < size; root++)
    for (int s = 0; s < n_sizes; s++, salt++)
      {
        int64_t n = sizes[s];
        g_autofree double *buf = g_new0 (double, MAX (n, 1));
        g_autofree double *want = g_new (double, MAX (n, 1));
        fill (want, n, TW_F64, root, salt);
        if (rank == root)
          memcpy (buf, want, n * sizeof (double));
        g_autofree char *what = g_strdup_printf ("broadcast of %" G_GINT64_FORMAT " from %d", n,
                                                 root);
        tw_comm_req *r = tw_comm_broadcast (comm, buf, n, TW_F64, root, NULL);
        GError *error = NULL;
        gboolean ok = ok_or_report (tw_comm_wait (comm, r, &error), &error, what);
        if (ok)
          CHECK (tw_comm_req_info (r)->peer == root, "%s: peer %d", what,
                 tw_comm_req_info (r)->peer);
        tw_comm_req_free (r);
        if (ok)
          CHECK (n == 0 || memcmp (buf, want, n * sizeof (double)) == 0, "%s: differs", what);
      }
  case_end ();
}

/* Send and receive: each rank sends three messages of different sizes to
 * its right-hand neighbour and receives three from its left, all posted at
 * once (receives first on even ranks, sends first on odd ones).  Each
 * message carries its sender, its msg_seq and its length; the receive with
 * the same msg_seq must hold it. */
static void
test_sendrecv (void)
{
  if (size < 2)
    {
      g_test_skip ("one rank");
      return;
    }
  enum { N_MSG = 3 };
  static const int64_t lens[N_MSG] = { 3, 1001, 70000 };
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  gint64 *out[N_MSG], *in[N_MSG];
  tw_comm_req *sr[N_MSG] = { NULL }, *rr[N_MSG] = { NULL };
  for (int k = 0; k < N_MSG; k++)
    {
      out[k] = g_new (gint64, lens[k]);
      in[k] = g_new0 (gint64, lens[k]);
      for (int64_t i = 0; i < lens[k]; i++)
        out[k][i] = ((gint64) rank << 40) | ((gint64) (k + 1) << 32) | i;
    }
  for (int pass = 0; pass < 2; pass++)
    for (int k = 0; k < N_MSG; k++)
      if ((pass == 0) == (rank % 2 == 0))
        rr[k] = tw_comm_recv (comm, in[k], lens[k], TW_I64, left, NULL);
      else
        sr[k] = tw_comm_send (comm, out[k], lens[k], TW_I64, right, NULL);
  for (int k = 0; k < N_MSG; k++)
    {
      GError *error = NULL;
      ok_or_report (tw_comm_wait (comm, sr[k], &error), &error, "send");
      if (ok_or_report (tw_comm_wait (comm, rr[k], &error), &error, "recv"))
        {
          const tw_coll_info *si = tw_comm_req_info (sr[k]), *ri = tw_comm_req_info (rr[k]);
          CHECK (si->kind == TW_COLL_SEND && ri->kind == TW_COLL_RECV, "kinds");
          CHECK (si->peer == right && ri->peer == left, "peers %d %d", si->peer, ri->peer);
          CHECK (si->seq == 0 && ri->seq == 0, "messages have no collective seq");
          CHECK (si->bytes == lens[k] * 8 && ri->received == lens[k] * 8, "bytes");
          for (int64_t i = 0; i < lens[k]; i++)
            {
              gint64 v = in[k][i];
              gint64 want = ((gint64) left << 40) | ((gint64) ri->msg_seq << 32) | i;
              CHECK (v == want, "message with msg_seq %" G_GUINT64_FORMAT " from %d: [%"
                     G_GINT64_FORMAT "] = %#" G_GINT64_MODIFIER "x, want %#" G_GINT64_MODIFIER
                     "x", ri->msg_seq, left, i, v, want);
              if (v != want)
                break;
            }
        }
      tw_comm_req_free (sr[k]);
      tw_comm_req_free (rr[k]);
      g_free (out[k]);
      g_free (in[k]);
    }
  case_end ();
}

/* A message of another length than its receive expects fails that
 * receive (shorter: TW_COMM_ERROR_MISMATCH; longer: MPI truncates it,
 * TW_COMM_ERROR_FAILED), not the send nor the communicator. */
static void
test_sendrecv_mismatch (void)
{
  if (size < 2)
    {
      g_test_skip ("one rank");
      return;
    }
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  static const int64_t sent[2] = { 1, 3 }, expected[2] = { 2, 2 };
  static const int codes[2] = { TW_COMM_ERROR_MISMATCH, TW_COMM_ERROR_FAILED };
  for (int k = 0; k < 2; k++)
    {
      gint64 out[3] = { 1, 2, 3 }, in[3] = { 0 };
      tw_comm_req *r = tw_comm_recv (comm, in, expected[k], TW_I64, left, NULL);
      tw_comm_req *sd = tw_comm_send (comm, out, sent[k], TW_I64, right, NULL);
      GError *error = NULL;
      ok_or_report (tw_comm_wait (comm, sd, &error), &error, "send");
      CHECK (!tw_comm_wait (comm, r, &error), "a receive of %" G_GINT64_FORMAT " took %"
             G_GINT64_FORMAT, expected[k], sent[k]);
      CHECK (g_error_matches (error, TW_COMM_ERROR, codes[k]), "receive of %" G_GINT64_FORMAT
             " elements, %" G_GINT64_FORMAT " sent: %s", expected[k], sent[k],
             error ? error->message : "no error");
      g_clear_error (&error);
      tw_comm_req_free (r);
      tw_comm_req_free (sd);
    }
  CHECK (!tw_comm_is_broken (comm), "broken");
  gint64 v = 1;
  GError *error = NULL;
  if (ok_or_report (tw_comm_allreduce_sync (comm, &v, 1, TW_I64, TW_REDUCE_SUM, NULL, &error),
                    &error, "allreduce after"))
    CHECK (v == size, "sum %" G_GINT64_FORMAT, v);
  case_end ();
}

/* The barrier holds everyone until the last rank arrives (100 ms late). */
static void
test_barrier (void)
{
  GError *error = NULL;
  ok_or_report (tw_comm_barrier_sync (comm, &error), &error, "barrier");
  if (rank == size - 1)
    g_usleep (100000);
  gint64 t0 = tw_now_ns ();
  ok_or_report (tw_comm_barrier_sync (comm, &error), &error, "barrier");
  gint64 dt = tw_now_ns () - t0;
  /* The others left the first barrier at about the time the late rank
   * did; 50 ms of the 100 leave room for an oversubscribed scheduler. */
  if (rank != size - 1)
    CHECK (dt >= 50000000, "left the barrier after %.1f ms", dt / 1e6);
  case_end ();
}

static void
test_allgather_strings (void)
{
  /* Rank 0's string is empty; the others grow with the rank. */
  GString *mine = g_string_new (NULL);
  if (rank > 0)
    {
      g_string_append_printf (mine, "rank %d ", rank);
      for (int i = 0; i < 37 * rank; i++)
        g_string_append_c (mine, 'a' + i % 26);
    }
  GError *error = NULL;
  g_auto (GStrv) all = tw_comm_allgather_strings (comm, mine->str, &error);
  if (ok_or_report (all != NULL, &error, "allgather_strings"))
    {
      CHECK (g_strv_length (all) == (guint) size, "%u strings", g_strv_length (all));
      for (int q = 0; q < size && all[q]; q++)
        {
          GString *w = g_string_new (NULL);
          if (q > 0)
            {
              g_string_append_printf (w, "rank %d ", q);
              for (int i = 0; i < 37 * q; i++)
                g_string_append_c (w, 'a' + i % 26);
            }
          CHECK (strcmp (all[q], w->str) == 0, "rank %d's string '%s'", q, all[q]);
          g_string_free (w, TRUE);
        }
    }
  g_string_free (mine, TRUE);
  case_end ();
}

/* Events: each call publishes a begin and its end, at wait time, with
 * times in order and the same seq on every rank. */
typedef struct
{
  int begins, ends;
  const tw_coll_info *open;   /* the begin awaiting its end */
  gboolean bad_order, bad_times;
  guint64 seq_hash;           /* collectives' (seq, kind, bytes), in order */
  int n_coll;
  gint64 bytes_sum;
} ev_count;

static gboolean
on_event (const tw_event *ev, gpointer data)
{
  ev_count *e = data;
  if (ev->kind != TW_EV_COLLECTIVE || ev->coll == NULL)
    return TRUE;
  if (!ev->end)
    {
      e->begins++;
      if (e->open)
        e->bad_order = TRUE;
      e->open = ev->coll;
      return TRUE;
    }
  e->ends++;
  if (e->open != ev->coll)
    e->bad_order = TRUE;
  e->open = NULL;
  const tw_coll_info *c = ev->coll;
  if (!(c->t_post <= c->t_start && c->t_start <= c->t_end && ev->t_start == c->t_start
        && ev->t_end == c->t_end))
    e->bad_times = TRUE;
  if (c->kind != TW_COLL_SEND && c->kind != TW_COLL_RECV)
    {
      guint64 t[3] = { c->seq, c->kind, (guint64) c->bytes };
      e->seq_hash = mix (e->seq_hash ^ hash_bytes (t, sizeof t));
      e->n_coll++;
    }
  e->bytes_sum += c->bytes;
  return TRUE;
}

static void
test_events (void)
{
  g_autoptr (tw_bus) bus = tw_bus_new ();
  ev_count e = { 0 };
  guint id = tw_bus_subscribe (bus, TW_EV_BIT (TW_EV_COLLECTIVE), on_event, &e, NULL);
  tw_comm_set_bus (comm, bus);
  GError *error = NULL;
  float x[10] = { 0 }, y[5] = { 0 };
  gint64 want_bytes = 0;
  int calls = 0;
  /* Posted together, waited for out of order: still one pair each. */
  tw_comm_req *a = tw_comm_allreduce (comm, x, 10, TW_F32, TW_REDUCE_SUM, NULL);
  tw_comm_req *b = tw_comm_broadcast (comm, y, 5, TW_F32, size - 1, NULL);
  tw_comm_req *c = tw_comm_barrier (comm, NULL);
  ok_or_report (tw_comm_wait (comm, c, &error), &error, "barrier");
  CHECK (tw_comm_test (comm, a), "the all-reduce is not done after a later barrier");
  ok_or_report (tw_comm_wait (comm, b, &error), &error, "broadcast");
  ok_or_report (tw_comm_wait (comm, a, &error), &error, "allreduce");
  /* A second wait publishes nothing more. */
  ok_or_report (tw_comm_wait (comm, a, &error), &error, "allreduce");
  guint64 seq_a = tw_comm_req_info (a)->seq;
  CHECK (tw_comm_req_info (b)->seq == seq_a + 1 && tw_comm_req_info (c)->seq == seq_a + 2,
         "seqs %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, seq_a,
         tw_comm_req_info (b)->seq, tw_comm_req_info (c)->seq);
  tw_comm_req_free (a);
  tw_comm_req_free (b);
  tw_comm_req_free (c);
  want_bytes += 40 + 20;
  calls += 3;
  if (size > 1)
    {
      gint64 m = rank;
      tw_comm_req *s = tw_comm_send (comm, &m, 1, TW_I64, (rank + 1) % size, NULL);
      tw_comm_req *r = tw_comm_recv (comm, &m, 1, TW_I64, (rank + size - 1) % size, NULL);
      ok_or_report (tw_comm_wait (comm, r, &error), &error, "recv");
      /* tw_comm_test publishes too, once. */
      while (!tw_comm_test (comm, s))
        g_usleep (100);
      CHECK (tw_comm_test (comm, s), "test after done");
      tw_comm_req_free (s);
      tw_comm_req_free (r);
      want_bytes += 16;
      calls += 2;
    }
  tw_comm_set_bus (comm, NULL);
  tw_bus_unsubscribe (bus, id);
  CHECK (e.begins == calls && e.ends == calls, "%d begins, %d ends for %d calls", e.begins, e.ends,
         calls);
  CHECK (!e.bad_order, "a begin without its end next");
  CHECK (!e.bad_times, "times out of order");
  CHECK (e.bytes_sum == want_bytes, "bytes %" G_GINT64_FORMAT ", want %" G_GINT64_FORMAT,
         e.bytes_sum, want_bytes);
  CHECK (e.n_coll == 3, "%d collectives", e.n_coll);
  check_same_everywhere (&e.seq_hash, sizeof e.seq_hash, "the collectives' (seq, kind, bytes)");
  case_end ();
}

/* Bad arguments complete with TW_COMM_ERROR_ARG and leave the
 * communicator working: neither the collectives' seq nor the messages'
 * msg_seq move (else the ranks would disagree from then on). */
static void
expect_arg_error (tw_comm_req *r, const char *what)
{
  GError *error = NULL;
  CHECK (!tw_comm_wait (comm, r, &error), "%s succeeded", what);
  CHECK (g_error_matches (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG), "%s: %s", what,
         error ? error->message : "no error");
  g_clear_error (&error);
  tw_comm_req_free (r);
}

static void
test_bad_args (void)
{
  gint64 v[4] = { 0 };
  expect_arg_error (tw_comm_send (comm, v, 1, TW_I64, rank, NULL), "send to itself");
  expect_arg_error (tw_comm_recv (comm, v, 1, TW_I64, rank, NULL), "recv from itself");
  expect_arg_error (tw_comm_send (comm, v, 1, TW_I64, size, NULL), "send to rank size");
  expect_arg_error (tw_comm_send (comm, v, 1, TW_I64, -1, NULL), "send to rank -1");
  expect_arg_error (tw_comm_recv (comm, v, 1, TW_I64, size + 7, NULL), "recv from size + 7");
  expect_arg_error (tw_comm_broadcast (comm, v, 1, TW_I64, size, NULL), "broadcast from size");
  expect_arg_error (tw_comm_broadcast (comm, v, 1, TW_I64, -1, NULL), "broadcast from -1");
  /* On this rank alone: a negative count is refused before it is posted. */
  if (rank == 0)
    expect_arg_error (tw_comm_allreduce (comm, v, -1, TW_I64, TW_REDUCE_SUM, NULL),
                      "allreduce of -1");
  expect_arg_error (tw_comm_reduce_scatter (comm, v, v, -4, TW_I64, TW_REDUCE_SUM, NULL),
                    "reduce_scatter of -4");
  expect_arg_error (tw_comm_allgather (comm, v, v, -1, TW_I64, NULL), "allgather of -1");
  if (size > 1)
    {
      int right = (rank + 1) % size, left = (rank + size - 1) % size;
      /* Refused sends on every rank, a refused receive on rank 0 only: if
       * either took a msg_seq, sender and receiver would number the next
       * message differently. */
      expect_arg_error (tw_comm_send (comm, v, -1, TW_I64, right, NULL), "send of -1");
      if (rank == 0)
        expect_arg_error (tw_comm_recv (comm, v, -2, TW_I64, left, NULL), "recv of -2");
      gint64 out = 1000 + rank, in = -1;
      tw_comm_req *r = tw_comm_recv (comm, &in, 1, TW_I64, left, NULL);
      tw_comm_req *s = tw_comm_send (comm, &out, 1, TW_I64, right, NULL);
      GError *error = NULL;
      ok_or_report (tw_comm_wait (comm, s, &error), &error, "send after bad ones");
      ok_or_report (tw_comm_wait (comm, r, &error), &error, "recv after bad ones");
      CHECK (in == 1000 + left, "received %" G_GINT64_FORMAT, in);
      /* Pair them across ranks: my send's msg_seq is my right-hand
       * neighbour's receive's. */
      gint64 seqs[2] = { (gint64) tw_comm_req_info (s)->msg_seq,
                         (gint64) tw_comm_req_info (r)->msg_seq };
      g_autofree gint64 *all = g_new0 (gint64, 2 * size);
      tw_comm_req *g = tw_comm_allgather (comm, seqs, all, 2, TW_I64, NULL);
      if (ok_or_report (tw_comm_wait (comm, g, &error), &error, "allgather"))
        CHECK (all[2 * left] == seqs[1], "rank %d's send is message %" G_GINT64_FORMAT
               ", my receive of it message %" G_GINT64_FORMAT, left, all[2 * left], seqs[1]);
      tw_comm_req_free (g);
      tw_comm_req_free (s);
      tw_comm_req_free (r);
    }
  CHECK (!tw_comm_is_broken (comm), "broken by bad arguments");
  /* The next collective has the same seq everywhere. */
  v[0] = rank;
  tw_comm_req *r = tw_comm_allreduce (comm, v, 1, TW_I64, TW_REDUCE_SUM, NULL);
  GError *error = NULL;
  if (ok_or_report (tw_comm_wait (comm, r, &error), &error, "allreduce after bad ones"))
    CHECK (v[0] == (gint64) size * (size - 1) / 2, "sum %" G_GINT64_FORMAT, v[0]);
  gint64 seq = (gint64) tw_comm_req_info (r)->seq;
  tw_comm_req_free (r);
  check_same_everywhere (&seq, sizeof seq, "the seq after bad arguments");
  case_end ();
}

static void
test_clock_offsets (void)
{
  g_autofree gint64 *off = NULL, *rtt = NULL;
  GError *error = NULL;
  if (ok_or_report (tw_comm_clock_offsets (comm, 20, &off, &rtt, &error), &error, "clock offsets"))
    {
      CHECK (off[0] == 0 && rtt[0] == 0, "rank 0 against itself: %" G_GINT64_FORMAT " %"
             G_GINT64_FORMAT, off[0], rtt[0]);
      for (int q = 1; q < size; q++)
        {
          /* One machine, one CLOCK_MONOTONIC: the offsets are the
           * measurement's error, well under a second (and rtt/2 bounds it). */
          CHECK (rtt[q] > 0 && rtt[q] < G_MAXINT64, "rank %d: rtt %" G_GINT64_FORMAT, q, rtt[q]);
          CHECK (llabs (off[q]) < 1000000000, "rank %d: offset %" G_GINT64_FORMAT " ns", q, off[q]);
          CHECK (llabs (off[q]) <= rtt[q] / 2 + 1, "rank %d: offset %" G_GINT64_FORMAT
                 " ns beyond half the round trip %" G_GINT64_FORMAT, q, off[q], rtt[q]);
        }
      check_same_everywhere (off, size * sizeof *off, "offsets");
      check_same_everywhere (rtt, size * sizeof *rtt, "round trips");
    }
  case_end ();
}

static void
test_flight_dump (void)
{
  GError *error = NULL;
  guint64 first = 0;
  for (int k = 0; k < 3; k++)
    {
      float x = 1;
      g_autofree char *what = g_strdup_printf ("flight %d", k);
      tw_comm_req *r = tw_comm_allreduce (comm, &x, 1, TW_F32, TW_REDUCE_SUM,
                                          &(tw_coll_tag) { .what = what });
      ok_or_report (tw_comm_wait (comm, r, &error), &error, what);
      if (k == 0)
        first = tw_comm_req_info (r)->seq;
      tw_comm_req_free (r);
    }
  g_autofree char *d = tw_comm_flight_dump (comm, 0);
  for (int k = 0; k < 3; k++)
    {
      g_autofree char *want = g_strdup_printf ("#%" G_GUINT64_FORMAT " allreduce %s 4 bytes "
                                               "flight %d: done in ", first + k,
                                               tw_algo_name (algo), k);
      CHECK (strstr (d, want) != NULL, "'%s' not in the dump:\n%s", want, d);
    }
  /* Oldest first, at most 64 lines, and the last line is the last call. */
  g_auto (GStrv) lines = g_strsplit (g_strchomp (d), "\n", -1);
  guint n = g_strv_length (lines);
  CHECK (n > 3 && n <= 64, "%u lines", n);
  CHECK (n > 0 && strstr (lines[n - 1], "flight 2") != NULL, "last line '%s'",
         n ? lines[n - 1] : "");
  case_end ();
}

int
main (int argc, char **argv)
{
  tw_comm_options opt;
  tw_comm_options_init (&opt);
  opt.timeout_s = 30;       /* a hang fails within the meson test's time-out */
  int out = 1;
  for (int i = 1; i < argc; i++)
    {
      const char *a = argv[i];
      gboolean mine = TRUE;
      if (g_str_has_prefix (a, "--algo="))
        {
          GError *error = NULL;
          if (!tw_algo_from_name (a + 7, &opt.algo, &error))
            {
              fprintf (stderr, "%s\n", error->message);
              return 2;
            }
        }
      else if (g_str_has_prefix (a, "--ranks-per-node="))
        opt.ranks_per_node = atoi (a + 17);
      else if (g_str_has_prefix (a, "--ps-rank="))
        opt.ps_rank = atoi (a + 10);
      else
        mine = FALSE;
      if (!mine)
        argv[out++] = argv[i];
    }
  argc = out;
  argv[argc] = NULL;
  algo = opt.algo;

  GError *error = NULL;
  comm = tw_comm_new_mpi (&opt, &error);
  if (comm == NULL)
    {
      printf ("1..0 # SKIP %s\n", error->message);
      return 0;
    }
  rank = tw_comm_rank (comm);
  size = tw_comm_size (comm);
  if (rank != 0)
    {
      int null = open ("/dev/null", O_WRONLY);
      if (null >= 0)
        {
          dup2 (null, STDOUT_FILENO);
          close (null);
        }
    }
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/comm/allreduce", test_allreduce);
  g_test_add_func ("/comm/allreduce/large", test_allreduce_large);
  g_test_add_func ("/comm/allreduce/nan", test_allreduce_nan);
  g_test_add_func ("/comm/allreduce/bytes", test_allreduce_bytes);
  g_test_add_func ("/comm/allreduce/pipelined", test_pipelined);
  g_test_add_func ("/comm/allreduce/mixed-algorithms", test_mixed_algorithms);
  g_test_add_func ("/comm/reduce-scatter", test_reduce_scatter);
  g_test_add_func ("/comm/allgather", test_allgather);
  g_test_add_func ("/comm/broadcast", test_broadcast);
  g_test_add_func ("/comm/sendrecv", test_sendrecv);
  g_test_add_func ("/comm/sendrecv/mismatch", test_sendrecv_mismatch);
  g_test_add_func ("/comm/barrier", test_barrier);
  g_test_add_func ("/comm/allgather-strings", test_allgather_strings);
  g_test_add_func ("/comm/events", test_events);
  g_test_add_func ("/comm/bad-args", test_bad_args);
  g_test_add_func ("/comm/clock-offsets", test_clock_offsets);
  g_test_add_func ("/comm/flight-dump", test_flight_dump);
  int ret = g_test_run ();
  tw_comm_free (comm);
  return ret;
}
