/* test-comm-sim.c — the simulator's backend of the communicator: virtual
 * ranks as threads of this process.  Each collective against a float64
 * re-computation; messages in order, before or after their receive, and
 * a mismatched one refused; splits; cancelling; a rank that never comes
 * named after the time-out, and one that fails named at once; and data
 * parallel training over 4 virtual ranks giving one process's weights
 * (within the bound the MPI test uses, tests/engine/dist/test-dp.c). */
#include "engine/comm/comm.h"
#include "engine/data.h"
#include "engine/train.h"
#include "tests/engine/dist/dist-check.h"

#include <math.h>
#include <string.h>

typedef struct rank_ctx rank_ctx;
typedef void (*rank_fn) (rank_ctx *k);

struct rank_ctx
{
  tw_comm *c;
  int rank, size;
  gpointer data;
  rank_fn fn;
  GString *failures;            /* what this rank found wrong */
  tw_sim_world *world;
};

#define RCHECK(k, cond, ...)                                                                 \
  do                                                                                         \
    {                                                                                        \
      if (!(cond))                                                                           \
        {                                                                                    \
          g_string_append_printf ((k)->failures, "rank %d: line %d: ", (k)->rank, __LINE__); \
          g_string_append_printf ((k)->failures, __VA_ARGS__);                               \
          g_string_append_c ((k)->failures, '\n');                                           \
        }                                                                                    \
    }                                                                                        \
  while (0)

static gpointer
rank_main (gpointer data)
{
  rank_ctx *k = data;
  k->fn (k);
  return NULL;
}

/* Run fn on p virtual ranks (threads), fail with every rank's findings. */
static void
run_ranks (int p, double timeout_s, rank_fn fn, gpointer data)
{
  tw_sim_world *w = tw_sim_world_new (p);
  g_assert_cmpint (tw_sim_world_size (w), ==, p);
  tw_comm_options o;
  tw_comm_options_init (&o);
  o.timeout_s = timeout_s;
  rank_ctx *ks = g_new0 (rank_ctx, p);
  GThread **th = g_new0 (GThread *, p);
  for (int r = 0; r < p; r++)
    {
      ks[r] = (rank_ctx) { .c = tw_comm_new_sim (w, r, &o), .rank = r, .size = p, .data = data,
                           .fn = fn, .failures = g_string_new (NULL), .world = w };
      g_assert_cmpint (tw_comm_rank (ks[r].c), ==, r);
      g_assert_cmpint (tw_comm_size (ks[r].c), ==, p);
    }
  for (int r = 0; r < p; r++)
    th[r] = g_thread_new ("rank", rank_main, &ks[r]);
  GString *all = g_string_new (NULL);
  for (int r = 0; r < p; r++)
    {
      g_thread_join (th[r]);
      g_string_append (all, ks[r].failures->str);
      g_string_free (ks[r].failures, TRUE);
      tw_comm_free (ks[r].c);
    }
  tw_sim_world_free (w);
  g_free (ks);
  g_free (th);
  if (all->len)
    g_test_fail_printf ("%s", all->str);
  g_string_free (all, TRUE);
}

/* Rank r's value i: distinct, not exactly representable sums. */
static double
value (int r, int64_t i)
{
  return sin (0.37 * i + 1.3 * r) * (1 + r) + 0.1 * i;
}

static void
collectives (rank_ctx *k)
{
  g_autoptr (GError) error = NULL;
  int p = k->size, me = k->rank;
  const int64_t n = 1000;
  /* All-reduce: sum, max and min of float32; sum of int64. */
  g_autofree float *a = g_new (float, n);
  g_autofree float *mx = g_new (float, n);
  g_autofree gint64 *ii = g_new (gint64, n);
  for (int64_t i = 0; i < n; i++)
    {
      a[i] = mx[i] = (float) value (me, i);
      ii[i] = i * (me + 1);
    }
  tw_coll_tag tag = { .what = "test" };
  tw_comm_req *r1 = tw_comm_allreduce (k->c, a, n, TW_F32, TW_REDUCE_SUM, &tag);
  tw_comm_req *r2 = tw_comm_allreduce (k->c, mx, n, TW_F32, TW_REDUCE_MAX, &tag);
  tw_comm_req *r3 = tw_comm_allreduce (k->c, ii, n, TW_I64, TW_REDUCE_SUM, &tag);
  /* Waited for in another order than posted. */
  RCHECK (k, tw_comm_wait (k->c, r3, &error), "i64 sum");
  RCHECK (k, tw_comm_wait (k->c, r1, &error), "f32 sum");
  RCHECK (k, tw_comm_wait (k->c, r2, &error), "f32 max");
  RCHECK (k, tw_comm_req_info (r1)->seq == 1 && tw_comm_req_info (r3)->seq == 3,
          "sequence numbers %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT,
          tw_comm_req_info (r1)->seq, tw_comm_req_info (r3)->seq);
  RCHECK (k, tw_comm_req_info (r1)->sent == 2 * (n * 4 / p) * (p - 1),
          "a ring's bytes: %" G_GINT64_FORMAT, tw_comm_req_info (r1)->sent);
  tw_comm_req_free (r1);
  tw_comm_req_free (r2);
  tw_comm_req_free (r3);
  double worst = 0;
  for (int64_t i = 0; i < n; i++)
    {
      double s = 0, m = -INFINITY;
      for (int r = 0; r < p; r++)
        {
          s += (float) value (r, i);
          m = fmax (m, (float) value (r, i));
        }
      worst = fmax (worst, fabs (a[i] - s) / fmax (fabs (s), 1));
      RCHECK (k, mx[i] == (float) m, "max [%" G_GINT64_FORMAT "]", i);
      RCHECK (k, ii[i] == i * p * (p + 1) / 2, "i64 sum [%" G_GINT64_FORMAT "]", i);
    }
  RCHECK (k, worst < 1e-6, "f32 sum off by %g relative", worst);

  /* Reduce-scatter: block `me` of the sum of every rank's [n × p]. */
  g_autofree float *send = g_new (float, n * p);
  g_autofree float *recv = g_new (float, n);
  for (int64_t i = 0; i < n * p; i++)
    send[i] = (float) value (me, i);
  tw_comm_req *rs = tw_comm_reduce_scatter (k->c, send, recv, n, TW_F32, TW_REDUCE_SUM, NULL);
  RCHECK (k, tw_comm_wait (k->c, rs, &error), "reduce-scatter");
  tw_comm_req_free (rs);
  worst = 0;
  for (int64_t i = 0; i < n; i++)
    {
      double s = 0;
      for (int r = 0; r < p; r++)
        s += (float) value (r, me * n + i);
      worst = fmax (worst, fabs (recv[i] - s) / fmax (fabs (s), 1));
    }
  RCHECK (k, worst < 1e-6, "reduce-scatter off by %g", worst);

  /* All-gather and broadcast: exact copies. */
  g_autofree float *mine = g_new (float, n);
  g_autofree float *gathered = g_new0 (float, n * p);
  for (int64_t i = 0; i < n; i++)
    mine[i] = (float) value (me, i);
  tw_comm_req *g = tw_comm_allgather (k->c, mine, gathered, n, TW_F32, NULL);
  RCHECK (k, tw_comm_wait (k->c, g, &error), "all-gather");
  tw_comm_req_free (g);
  for (int r = 0; r < p; r++)
    for (int64_t i = 0; i < n; i++)
      if (gathered[r * n + i] != (float) value (r, i))
        {
          RCHECK (k, FALSE, "all-gather block %d [%" G_GINT64_FORMAT "]", r, i);
          r = p;
          break;
        }
  gint64 root_val[3] = { me, me * 10, me * 100 };
  RCHECK (k, tw_comm_broadcast_sync (k->c, root_val, 3, TW_I64, p - 1, NULL, &error),
          "broadcast");
  RCHECK (k, root_val[0] == p - 1 && root_val[2] == (p - 1) * 100, "broadcast from the last");
  RCHECK (k, tw_comm_barrier_sync (k->c, &error), "barrier");
  g_auto (GStrv) names = tw_comm_allgather_strings (k->c, me % 2 ? "odd" : "even rank", &error);
  RCHECK (k, names && g_strv_length (names) == (guint) p && (p == 1 || strcmp (names[1], "odd") == 0)
          && strcmp (names[0], "even rank") == 0, "strings");
  gint64 *off = NULL, *rtt = NULL;
  RCHECK (k, tw_comm_clock_offsets (k->c, 3, &off, &rtt, &error), "clock");
  RCHECK (k, off && off[p - 1] == 0, "one clock");
  g_free (off);
  g_free (rtt);
}

static void
test_collectives (void)
{
  run_ranks (1, 10, collectives, NULL);
  run_ranks (3, 10, collectives, NULL);
  run_ranks (4, 10, collectives, NULL);
}

/* Messages: rank r sends 3 to r+1 (ring), the receive posted before or
 * after the send; they arrive in order; a receive of the wrong size fails
 * naming the message; a receive nobody sends to is withdrawn. */
static void
messages (rank_ctx *k)
{
  g_autoptr (GError) error = NULL;
  int p = k->size, me = k->rank, next = (me + 1) % p, prev = (me + p - 1) % p;
  float in[3][4], out[3][4];
  tw_comm_req *rr[3] = { NULL };
  /* Odd ranks receive first, even ranks send first. */
  if (me % 2)
    for (int m = 0; m < 3; m++)
      rr[m] = tw_comm_recv (k->c, in[m], 4, TW_F32, prev, NULL);
  for (int m = 0; m < 3; m++)
    {
      for (int i = 0; i < 4; i++)
        out[m][i] = me * 100 + m * 10 + i;
      tw_comm_req *s = tw_comm_send (k->c, out[m], 4, TW_F32, next, NULL);
      RCHECK (k, tw_comm_wait (k->c, s, &error), "send %d", m);
      RCHECK (k, tw_comm_req_info (s)->msg_seq == (guint64) m + 1, "message number");
      tw_comm_req_free (s);
    }
  if (me % 2 == 0)
    for (int m = 0; m < 3; m++)
      rr[m] = tw_comm_recv (k->c, in[m], 4, TW_F32, prev, NULL);
  for (int m = 0; m < 3; m++)
    {
      RCHECK (k, tw_comm_wait (k->c, rr[m], &error), "receive %d", m);
      tw_comm_req_free (rr[m]);
      RCHECK (k, in[m][0] == prev * 100 + m * 10 && in[m][3] == prev * 100 + m * 10 + 3,
              "message %d in order: %g", m, in[m][0]);
    }
  /* The wrong size. */
  float big[8] = { 0 };
  tw_comm_req *s = tw_comm_send (k->c, big, 8, TW_F32, next, NULL);
  tw_comm_req_free (s);
  tw_comm_req *bad = tw_comm_recv (k->c, big, 5, TW_F32, prev, NULL);
  RCHECK (k, !tw_comm_wait (k->c, bad, &error)
          && g_error_matches (error, TW_COMM_ERROR, TW_COMM_ERROR_MISMATCH)
          && strstr (error->message, "8 elements"), "mismatch: %s",
          error ? error->message : "none");
  g_clear_error (&error);
  tw_comm_req_free (bad);
  /* Withdrawn. */
  tw_comm_req *never = tw_comm_recv (k->c, big, 1, TW_F32, prev, NULL);
  tw_comm_cancel (k->c, never);
  RCHECK (k, !tw_comm_wait (k->c, never, &error)
          && g_error_matches (error, TW_COMM_ERROR, TW_COMM_ERROR_CANCELLED), "cancelled");
  g_clear_error (&error);
  tw_comm_req_free (never);
  RCHECK (k, tw_comm_barrier_sync (k->c, &error), "barrier after");
}

static void
test_messages (void)
{
  run_ranks (2, 10, messages, NULL);
  run_ranks (5, 10, messages, NULL);
}

/* Splits: even and odd ranks, keyed backwards; a rank with no color. */
static void
splits (rank_ctx *k)
{
  g_autoptr (GError) error = NULL;
  int me = k->rank, p = k->size;
  int color = me == p - 1 ? -1 : me % 2;
  tw_comm *s = tw_comm_split (k->c, color, -me, "parity", &error);
  RCHECK (k, (s != NULL) == (color >= 0), "split: %s", error ? error->message : "");
  if (s)
    {
      int members = 0;
      for (int r = 0; r < p - 1; r++)
        members += r % 2 == color;
      RCHECK (k, tw_comm_size (s) == members, "size %d, not %d", tw_comm_size (s), members);
      /* Keys backwards: the highest world rank is rank 0. */
      RCHECK (k, tw_comm_world_rank (s, tw_comm_rank (s)) == me, "world rank");
      RCHECK (k, tw_comm_world_rank (s, 0) > tw_comm_world_rank (s, members - 1) || members == 1,
              "ordered by key");
      double v = me;
      RCHECK (k, tw_comm_allreduce_sync (s, &v, 1, TW_F64, TW_REDUCE_SUM, NULL, &error), "sum");
      double want = 0;
      for (int r = 0; r < p - 1; r++)
        if (r % 2 == color)
          want += r;
      RCHECK (k, v == want, "the split's sum %g, not %g", v, want);
      RCHECK (k, strcmp (tw_comm_name (s), "parity") == 0, "name");
    }
  /* The world goes on, numbered apart. */
  double v = 1;
  RCHECK (k, tw_comm_allreduce_sync (k->c, &v, 1, TW_F64, TW_REDUCE_SUM, NULL, &error), "world");
  RCHECK (k, v == p, "world sum %g", v);
}

static void
test_split (void)
{
  run_ranks (5, 10, splits, NULL);
}

/* The last rank never joins the second all-reduce: after the time-out
 * every other rank's wait fails naming it, and later calls fail at once. */
static void
late (rank_ctx *k)
{
  g_autoptr (GError) error = NULL;
  double v = 1;
  RCHECK (k, tw_comm_allreduce_sync (k->c, &v, 1, TW_F64, TW_REDUCE_SUM, NULL, &error), "first");
  if (k->rank == k->size - 1)
    {
      /* Until the others have given up. */
      while (!tw_comm_is_broken (k->c))
        g_usleep (10000);
      RCHECK (k, !tw_comm_barrier_sync (k->c, &error)
              && g_error_matches (error, TW_COMM_ERROR, TW_COMM_ERROR_BROKEN), "broken");
      return;
    }
  tw_comm_req *r = tw_comm_allreduce (k->c, &v, 1, TW_F64, TW_REDUCE_SUM,
                                      &(tw_coll_tag) { .what = "bucket 2" });
  RCHECK (k, !tw_comm_wait (k->c, r, &error), "the second must fail");
  g_autofree char *want = g_strdup_printf ("rank %d never arrived", k->size - 1);
  RCHECK (k, error && strstr (error->message, want) && strstr (error->message, "#2")
          && strstr (error->message, "bucket 2"), "names the rank: %s",
          error ? error->message : "");
  tw_comm_req_free (r);
  g_autofree char *d = tw_comm_flight_dump (k->c, 2);
  RCHECK (k, strstr (d, "failed"), "the flight recorder says so: %s", d);
}

static void
test_timeout (void)
{
  run_ranks (3, 0.3, late, NULL);
}

/* A rank that fails on its own: the others' waits end at once, naming it. */
static void
failing (rank_ctx *k)
{
  g_autoptr (GError) error = NULL;
  if (k->rank == 1)
    {
      tw_sim_world_fail (k->world, 1, "out of memory in fc1");
      return;
    }
  gint64 t0 = g_get_monotonic_time ();
  double v = 1;
  RCHECK (k, !tw_comm_allreduce_sync (k->c, &v, 1, TW_F64, TW_REDUCE_SUM, NULL, &error),
          "must fail");
  RCHECK (k, error && strstr (error->message, "rank 1 failed: out of memory in fc1"),
          "names it: %s", error ? error->message : "");
  /* Well before the 30 s time-out. */
  RCHECK (k, g_get_monotonic_time () - t0 < 20 * G_TIME_SPAN_SECOND, "at once");
}

static void
test_fail (void)
{
  run_ranks (3, 30, failing, NULL);
}

/* Data parallel over virtual ranks: the MPI test's model and bound. */
#define DP_REL_BOUND 1e-4

/* The MPI tests' model (2 -> 32 -> 32 -> 3), at a batch of 30. */
static tw_model *
dp_model (tw_optimizer_type opt)
{
  return dist_test_model ("sim-dp", opt, 30, 32);
}

typedef struct
{
  tw_optimizer_type opt;
  gboolean shard;
  float **weights;              /* [rank] → every parameter's values, concatenated */
  int64_t n_weights;
} dp_run;

static void
train_steps (tw_trainer *tr, int steps)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_dataset) d = tw_dataset_synthetic ("blobs", 600, 3, -1, &error);
  g_assert_no_error (error);
  g_autoptr (tw_batcher) b = tw_batcher_new (d, 30, TRUE, 11, FALSE);
  tw_batcher_reset (b, 0);
  for (int step = 0; step < steps; step++)
    {
      tw_tensor *x, *y;
      g_assert_true (tw_batcher_next (b, &x, &y));
      double loss;
      if (!tw_trainer_step (tr, x, y, &loss, &error))
        g_error ("step %d: %s", step, error->message);
      tw_tensor_unref (x);
      tw_tensor_unref (y);
    }
}

static float *
flat_weights (tw_trainer *tr, int64_t *n)
{
  tw_params *ps = tw_trainer_params (tr);
  *n = 0;
  for (int i = 0; i < tw_params_count (ps); i++)
    *n += tw_tensor_numel (tw_params_at (ps, i)->value);
  float *out = g_new (float, *n), *o = out;
  for (int i = 0; i < tw_params_count (ps); i++)
    {
      tw_tensor *v = tw_params_at (ps, i)->value;
      memcpy (o, tw_tensor_f32 (v), tw_tensor_numel (v) * sizeof (float));
      o += tw_tensor_numel (v);
    }
  return out;
}

static void
dp_rank (rank_ctx *k)
{
  dp_run *run = k->data;
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = dp_model (run->opt);
  g_autoptr (tw_trainer) tr = tw_trainer_new (m, &error);
  g_assert_no_error (error);
  tw_dist_options o;
  tw_dist_options_init (&o);
  o.bucket_mb = 0.002;          /* several buckets */
  o.shard_optimizer = run->shard;
  RCHECK (k, tw_trainer_set_dist (tr, k->c, &o, &error), "set_dist: %s",
          error ? error->message : "");
  train_steps (tr, 15);
  int64_t n = 0;               /* (run->n_weights is every rank's: written once all agree) */
  run->weights[k->rank] = flat_weights (tr, &n);
  if (k->rank == 0)
    run->n_weights = n;
}

static void
test_dp (gconstpointer data)
{
  const dp_run *want = data;
  int p = 4;
  dp_run run = *want;
  run.weights = g_new0 (float *, p);
  run_ranks (p, 60, dp_rank, &run);
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = dp_model (run.opt);
  g_autoptr (tw_trainer) ref = tw_trainer_new (m, &error);
  g_assert_no_error (error);
  train_steps (ref, 15);
  int64_t n;
  g_autofree float *w1 = flat_weights (ref, &n);
  g_assert_cmpint (n, ==, run.n_weights);
  double scale = 0, worst = 0;
  for (int64_t i = 0; i < n; i++)
    scale = fmax (scale, fabs (w1[i]));
  for (int r = 0; r < p; r++)
    {
      for (int64_t i = 0; i < n; i++)
        worst = fmax (worst, fabs (run.weights[r][i] - w1[i]) / scale);
      /* Every rank applied the same sums. */
      g_assert_cmpmem (run.weights[r], n * sizeof (float), run.weights[0], n * sizeof (float));
    }
  for (int r = 0; r < p; r++)
    g_free (run.weights[r]);
  g_free (run.weights);
  g_test_message ("4 virtual ranks vs one process: weights within %.2g relative", worst);
  g_assert_cmpfloat (worst, <, DP_REL_BOUND);
  /* And the run trained: the weights moved from their start. */
  g_autoptr (tw_model) m0 = dp_model (run.opt);
  g_autoptr (tw_trainer) start = tw_trainer_new (m0, &error);
  g_autofree float *w0 = flat_weights (start, &n);
  double moved = 0;
  for (int64_t i = 0; i < n; i++)
    moved = fmax (moved, fabs (w0[i] - w1[i]) / scale);
  g_assert_cmpfloat (moved, >, 100 * DP_REL_BOUND);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/comm-sim/collectives", test_collectives);
  g_test_add_func ("/comm-sim/messages", test_messages);
  g_test_add_func ("/comm-sim/split", test_split);
  g_test_add_func ("/comm-sim/timeout", test_timeout);
  g_test_add_func ("/comm-sim/fail", test_fail);
  static const dp_run sgd = { .opt = TW_OPT_SGD }, adam = { .opt = TW_OPT_ADAM },
                      zero = { .opt = TW_OPT_ADAM, .shard = TRUE };
  g_test_add_data_func ("/comm-sim/dp/sgd", &sgd, test_dp);
  g_test_add_data_func ("/comm-sim/dp/adam", &adam, test_dp);
  g_test_add_data_func ("/comm-sim/dp/zero", &zero, test_dp);
  return g_test_run ();
}
