/* test-dp.c — data-parallel training against one process, run by mpiexec at
 * 2 and 4 ranks: after 20 steps of the same global batches, every rank's
 * weights equal those of a trainer that takes the whole batch itself, in
 * eager and compiled mode, with SGD (momentum) and Adam, for an even and an
 * uneven split; with the optimizer sharded (ZeRO-1) likewise, its state
 * gathered into a checkpoint mid-run equal to one process's and each rank
 * holding 1/p of it; buckets start during backward.
 *
 * Only rank 0 prints TAP; a check that fails on any rank fails the case
 * there (each case ends by an all-reduce of the failures). */
#include "tests/engine/dist/dist-check.h"
#include "engine/comm/comm.h"
#include "engine/data.h"
#include "engine/train.h"

#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

tw_comm *comm;
int failures;

static tw_model *
make_model (tw_optimizer_type opt, int64_t batch)
{
  return dist_test_model ("dp-test", opt, batch, 32);
}

typedef struct
{
  tw_exec_mode mode;
  tw_optimizer_type opt;
  int64_t batch;
  double bucket_mb;
  int local_sgd;              /* H, 0: synchronous */
  gboolean shard;             /* ZeRO-1 */
} dp_case;

/* Bound on |w_dp − w_1| / max|w_1| after 20 steps.  The two runs differ only
 * in the order float32 sums are taken: a shard's mean gradient is weighted
 * by its share and the shares are summed across ranks (a sum of p terms,
 * relative rounding ≤ (p−1)·2^-24 each step), against one mean over the
 * batch.  Such differences grow with the steps through the optimizer
 * (momentum, Adam's 1/√v) but stay orders of magnitude below the weights'
 * own change; measured here: ≤ 3e-6 at 4 ranks.  1e-4 leaves room for
 * other CPUs' kernels while a wrong shard, scale or missed bucket moves
 * weights by 1e-2 or more. */
#define DP_REL_BOUND 1e-4

static double
max_abs (const float *v, int64_t n)
{
  double m = 0;
  for (int64_t i = 0; i < n; i++)
    m = fmax (m, fabs (v[i]));
  return m;
}

static int64_t
state_floats (tw_trainer *tr)
{
  int64_t n = 0;
  for (int i = 0; i < tw_params_count (tw_trainer_params (tr)); i++)
    for (int s = 0; s < 2; s++)
      {
        tw_tensor *t = tw_params_at (tw_trainer_params (tr), i)->state[s];
        n += t ? tw_tensor_numel (t) : 0;
      }
  return n;
}

/* ZeRO-1 mid-run: each rank holds about 1/p of the optimizer state and
 * none in its parameters; a checkpoint (collective, rank 0 writes) holds
 * the whole state, equal to one process's; training goes on from the
 * shards (the caller's final check covers it). */
static void
check_sharded_state (const dp_case *k, tw_trainer *ref, tw_trainer *dp)
{
  g_autoptr (GError) error = NULL;
  int p = tw_comm_size (comm);
  tw_dist_stats st;
  tw_trainer_dist_stats (dp, &st);
  int64_t whole = state_floats (ref);
  CHECK (st.sharded && state_floats (dp) == 0, "the parameters hold no whole state (%" G_GINT64_FORMAT
         " floats)", state_floats (dp));
  double all = st.optimizer_state_bytes;
  CHECK (tw_comm_allreduce_sync (comm, &all, 1, TW_F64, TW_REDUCE_SUM, NULL, &error), "sum");
  /* Each bucket is padded to a multiple of p floats, per state tensor. */
  double pad = (double) st.buckets * p * 2 * sizeof (float);
  CHECK (all >= whole * 4.0 && all <= whole * 4.0 + pad,
         "the shards add up to the whole state: %g bytes against %" G_GINT64_FORMAT " floats", all,
         whole);
  CHECK (st.optimizer_state_bytes <= whole * 4.0 / p + pad,
         "rank %d holds %g bytes of %" G_GINT64_FORMAT " floats' state", tw_comm_rank (comm),
         st.optimizer_state_bytes, whole);
  /* One file for every rank: rank 0's name. */
  int64_t id = (int64_t) getpid ();
  CHECK (tw_comm_broadcast_sync (comm, &id, 1, TW_I64, 0, NULL, &error), "broadcast");
  g_autofree char *path = g_strdup_printf ("%s/twb-dp-zero-%" G_GINT64_FORMAT ".safetensors",
                                           g_get_tmp_dir (), id);
  CHECK (tw_trainer_checkpoint_is_collective (dp), "a sharded checkpoint is collective");
  CHECK (tw_trainer_save_checkpoint (dp, path, 0, 10, &error), "checkpoint: %s",
         error ? error->message : "");
  g_clear_error (&error);
  CHECK (state_floats (dp) == 0, "the gathered state is dropped again");
  if (tw_comm_rank (comm) == 0)
    {
      g_autoptr (tw_model) m = make_model (k->opt, k->batch);
      g_autoptr (tw_trainer) back = tw_trainer_new (m, &error);
      g_assert_no_error (error);
      int64_t epoch = 0, batch = 0;
      CHECK (tw_trainer_load_checkpoint (back, path, &epoch, &batch, &error), "load: %s",
             error ? error->message : "");
      g_clear_error (&error);
      double worst = 0;
      for (int i = 0; i < tw_params_count (tw_trainer_params (ref)); i++)
        for (int s = 0; s < 2; s++)
          {
            tw_tensor *a = tw_params_at (tw_trainer_params (ref), i)->state[s];
            tw_tensor *b = tw_params_at (tw_trainer_params (back), i)->state[s];
            if (a == NULL)
              continue;
            CHECK (b != NULL && tw_tensor_numel (b) == tw_tensor_numel (a),
                   "the checkpoint has state %d of %s", s,
                   tw_params_at (tw_trainer_params (ref), i)->name);
            if (b == NULL || tw_tensor_numel (b) != tw_tensor_numel (a))
              continue;
            int64_t n = tw_tensor_numel (a);
            double scale = fmax (max_abs (tw_tensor_f32 (a), n), 1e-6), diff = 0;
            for (int64_t j = 0; j < n; j++)
              diff = fmax (diff, fabs (tw_tensor_f32 (a)[j] - tw_tensor_f32 (b)[j]));
            worst = fmax (worst, diff / scale);
          }
      CHECK (worst < DP_REL_BOUND, "the checkpoint's optimizer state is one process's (%g)", worst);
      g_unlink (path);
    }
}

static void
run_case (const dp_case *k)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m_ref = make_model (k->opt, k->batch);
  g_autoptr (tw_model) m_dp = make_model (k->opt, k->batch);
  g_autoptr (tw_dataset) d = tw_dataset_synthetic ("blobs", 600, 3, -1, &error);
  g_assert_no_error (error);
  g_autoptr (tw_trainer) ref = tw_trainer_new (m_ref, &error);
  g_assert_no_error (error);
  g_autoptr (tw_trainer) dp = tw_trainer_new (m_dp, &error);
  g_assert_no_error (error);
  tw_trainer_set_mode (ref, k->mode);
  tw_trainer_set_mode (dp, k->mode);
  /* Different starting weights on every rank but 0: the broadcast must fix them. */
  if (tw_comm_rank (comm) != 0)
    for (int i = 0; i < tw_params_count (tw_trainer_params (dp)); i++)
      {
        tw_param *p = tw_params_at (tw_trainer_params (dp), i);
        float *v = tw_tensor_f32 (p->value);
        for (int64_t j = 0; j < tw_tensor_numel (p->value); j++)
          v[j] += 0.5f * tw_comm_rank (comm);
      }
  tw_dist_options o;
  tw_dist_options_init (&o);
  o.bucket_mb = k->bucket_mb;
  o.local_sgd = k->local_sgd;
  o.shard_optimizer = k->shard;
  CHECK (tw_trainer_set_dist (dp, comm, &o, &error), "set_dist: %s", error->message);
  g_clear_error (&error);
  CHECK (tw_trainer_rank (dp) == tw_comm_rank (comm) && tw_trainer_ranks (dp) == tw_comm_size (comm),
         "rank/ranks");

  g_autoptr (tw_batcher) b = tw_batcher_new (d, k->batch, TRUE, 11, FALSE);
  tw_batcher_reset (b, 0);
  double worst_loss = 0, first_dp = NAN, last_dp = NAN;
  for (int step = 0; step < 20; step++)
    {
      tw_tensor *x, *y;
      if (!tw_batcher_next (b, &x, &y))
        {
          tw_batcher_reset (b, step);
          g_assert_true (tw_batcher_next (b, &x, &y));
        }
      double l_ref = NAN, l_dp = NAN;
      int64_t c1 = -1;
      if (step == 0)
        {
          /* The whole batch's correct predictions before the step (no
           * dropout or batch norm here: evaluation's forward is training's). */
          tw_eager *ex = tw_trainer_executor (ref);
          g_assert_true (tw_eager_forward (ex, x, y, FALSE, 0, &error));
          c1 = tw_count_correct (tw_eager_prediction (ex), y);
          tw_eager_release (ex);
        }
      gboolean ok_ref = tw_trainer_step (ref, x, y, &l_ref, &error);
      CHECK (ok_ref, "reference step %d: %s", step, error ? error->message : "");
      g_clear_error (&error);
      gboolean ok_dp = tw_trainer_step (dp, x, y, &l_dp, &error);
      CHECK (ok_dp, "data-parallel step %d: %s", step, error ? error->message : "");
      g_clear_error (&error);
      worst_loss = fmax (worst_loss, fabs (l_ref - l_dp) / fmax (fabs (l_ref), 1e-6));
      if (step == 0)
        first_dp = l_dp;
      last_dp = l_dp;
      if (step == 0)
        {
          int64_t c = tw_trainer_dist_correct (dp);
          CHECK (c == c1, "correct over the global batch: %" G_GINT64_FORMAT " vs %" G_GINT64_FORMAT, c, c1);
        }
      tw_tensor_unref (x);
      tw_tensor_unref (y);
      if (k->shard && step == 9)
        check_sharded_state (k, ref, dp);
    }
  /* Every rank's compute time of the last step (on the loss's all-reduce). */
  double ms[16];
  int nr = tw_trainer_rank_step_ms (dp, ms, G_N_ELEMENTS (ms));
  CHECK (nr == tw_comm_size (comm), "rank_step_ms: %d entries for %d ranks", nr,
         tw_comm_size (comm));
  for (int r = 0; r < MIN (nr, 16); r++)
    CHECK (ms[r] > 0, "rank %d's step time %g ms", r, ms[r]);
  /* The loss is the global batch's: the same rounding argument as the weights. */
  if (k->local_sgd <= 1)
    CHECK (worst_loss < DP_REL_BOUND, "loss differs by %g relative", worst_loss);
  else
    CHECK (last_dp < 0.8 * first_dp, "local SGD H=%d learns: loss %g → %g", k->local_sgd,
           first_dp, last_dp);
  double worst = 0;
  for (int i = 0; i < tw_params_count (tw_trainer_params (ref)); i++)
    {
      tw_param *pr = tw_params_at (tw_trainer_params (ref), i);
      tw_param *pd = tw_params_at (tw_trainer_params (dp), i);
      int64_t n = tw_tensor_numel (pr->value);
      const float *a = tw_tensor_f32 (pr->value), *c = tw_tensor_f32 (pd->value);
      double scale = fmax (max_abs (a, n), 1e-6), diff = 0;
      for (int64_t j = 0; j < n; j++)
        diff = fmax (diff, fabs (a[j] - c[j]));
      worst = fmax (worst, diff / scale);
    }
  /* Local SGD with H > 1 is another algorithm: it must change the weights
   * (by far more than rounding), and still learn (below). */
  if (k->local_sgd > 1)
    CHECK (worst > 100 * DP_REL_BOUND, "local SGD H=%d left the weights of synchronous SGD "
           "(%g relative)", k->local_sgd, worst);
  else
    CHECK (worst < DP_REL_BOUND, "weights differ by %g relative (bound %g)", worst, DP_REL_BOUND);
  /* Every rank holds exactly the same weights (they all apply the same sums). */
  g_autoptr (GChecksum) h = g_checksum_new (G_CHECKSUM_SHA256);
  for (int i = 0; i < tw_params_count (tw_trainer_params (dp)); i++)
    {
      tw_param *p = tw_params_at (tw_trainer_params (dp), i);
      g_checksum_update (h, (const guchar *) tw_tensor_f32 (p->value),
                         tw_tensor_numel (p->value) * sizeof (float));
    }
  g_auto (GStrv) all = tw_comm_allgather_strings (comm, g_checksum_get_string (h), &error);
  g_assert_no_error (error);
  for (int r = 1; r < tw_comm_size (comm); r++)
    CHECK (strcmp (all[r], all[0]) == 0, "rank %d's weights differ from rank 0's", r);
  if (tw_comm_rank (comm) == 0)
    g_test_message ("%s %s batch %" G_GINT64_FORMAT ": weights within %.2g, losses within %.2g",
                    k->mode == TW_MODE_EAGER ? "eager" : "compiled",
                    k->opt == TW_OPT_SGD ? "sgd" : "adam", k->batch, worst, worst_loss);
  case_end ();
}

static void
test_case (gconstpointer data)
{
  run_case (data);
}

/* Small buckets (one per parameter): the first all-reduce is posted, and
 * begins, before backward's last op ends.  The layers are wide enough
 * (384) that backward takes milliseconds: far longer than the
 * communication thread takes to wake up, even on oversubscribed cores. */
typedef struct
{
  gint64 first_bucket_post;
  gint64 first_bucket_start;
  gint64 last_backward_end;
  guint64 step;
} overlap;

static gboolean
on_event (const tw_event *ev, gpointer user)
{
  overlap *o = user;
  if (ev->step != o->step && ev->kind == TW_EV_BACKWARD)
    return TRUE;
  if (ev->kind == TW_EV_BACKWARD && ev->end && ev->step == o->step)
    o->last_backward_end = MAX (o->last_backward_end, ev->t_end);
  if (ev->kind == TW_EV_COLLECTIVE && !ev->end && ev->coll->what
      && g_str_has_prefix (ev->coll->what, "bucket ")
      && (o->first_bucket_start == 0 || ev->t_start < o->first_bucket_start))
    {
      o->first_bucket_start = ev->t_start;
      o->first_bucket_post = ev->coll->t_post;
    }
  return TRUE;
}

static void
test_overlap (gconstpointer data)
{
  tw_exec_mode mode = GPOINTER_TO_INT (data);
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = dist_test_model ("dp-test", TW_OPT_SGD, 256, 384);
  g_autoptr (tw_dataset) d = tw_dataset_synthetic ("blobs", 1536, 3, -1, &error);
  g_autoptr (tw_trainer) tr = tw_trainer_new (m, &error);
  g_assert_no_error (error);
  tw_trainer_set_mode (tr, mode);
  g_autoptr (tw_bus) bus = tw_bus_new ();
  tw_trainer_set_bus (tr, bus);
  tw_comm_set_bus (comm, bus);
  tw_dist_options o;
  tw_dist_options_init (&o);
  o.bucket_mb = 1e-6;          /* every parameter its own bucket */
  g_assert_true (tw_trainer_set_dist (tr, comm, &o, &error));
  overlap ov = { 0 };
  guint id = tw_bus_subscribe (bus, TW_EV_BIT (TW_EV_BACKWARD) | TW_EV_BIT (TW_EV_COLLECTIVE),
                               on_event, &ov, NULL);
  g_autoptr (tw_batcher) b = tw_batcher_new (d, 256, TRUE, 1, FALSE);
  tw_batcher_reset (b, 0);
  /* Posting during backward is the engine's doing: checked on every step
   * of every rank.  Beginning during backward needs the communication
   * thread to get a core in time, which an oversubscribed, loaded machine
   * may deny for a step or a rank: it must happen at least once in the
   * steps after the first on some rank (each rank's count is reported). */
  const int steps = 6;
  double began = 0;
  double late_ms = 0;
  for (int step = 0; step < steps; step++)
    {
      tw_tensor *x, *y;
      g_assert_true (tw_batcher_next (b, &x, &y));
      ov = (overlap) { .step = (guint64) step };
      double l;
      CHECK (tw_trainer_step (tr, x, y, &l, &error), "step: %s", error ? error->message : "");
      g_clear_error (&error);
      tw_tensor_unref (x);
      tw_tensor_unref (y);
      CHECK (ov.first_bucket_start > 0 && ov.last_backward_end > 0, "events seen");
      CHECK (ov.first_bucket_post < ov.last_backward_end,
             "step %d: the first bucket's all-reduce was posted %.3f ms after backward's last op "
             "ended", step, (ov.first_bucket_post - ov.last_backward_end) / 1e6);
      if (step == 0)
        continue;
      if (ov.first_bucket_start < ov.last_backward_end)
        began++;
      else
        late_ms = fmax (late_ms, (ov.first_bucket_start - ov.last_backward_end) / 1e6);
    }
  double mine = began;
  CHECK (tw_comm_allreduce_sync (comm, &began, 1, TW_F64, TW_REDUCE_SUM, NULL, &error), "sum");
  if (tw_comm_rank (comm) == 0)
    g_test_message ("%s: a bucket began during backward in %g of %d rank-steps (rank 0: %g; "
                    "latest start %.3f ms after backward)", mode == TW_MODE_EAGER ? "eager"
                    : "compiled", began, (steps - 1) * tw_comm_size (comm), mine, late_ms);
  CHECK (began > 0, "no bucket's all-reduce began before backward's last op ended in %d steps "
         "on %d ranks (at worst %.3f ms after)", steps - 1, tw_comm_size (comm), late_ms);
  tw_bus_unsubscribe (bus, id);
  tw_comm_set_bus (comm, NULL);
  case_end ();
}

/* The bucket layout: none before the first step; then the one the step
 * made (the parameters in the order their gradients came), which the pure
 * cut reproduces from that order; the prediction names every trainable
 * parameter once, last first. */
static void
test_buckets (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = make_model (TW_OPT_SGD, 30);
  g_autoptr (tw_dataset) d = tw_dataset_synthetic ("blobs", 120, 3, -1, &error);
  g_autoptr (tw_trainer) tr = tw_trainer_new (m, &error);
  g_assert_no_error (error);
  tw_dist_options o;
  tw_dist_options_init (&o);
  o.bucket_mb = 0.004;         /* 1000 floats: a bucket closes at fc2.weight (32 × 32) */
  g_assert_true (tw_trainer_set_dist (tr, comm, &o, &error));
  tw_bucket_layout l = { 0 }, p = { 0 };
  CHECK (!tw_trainer_dist_buckets (tr, &l) && tw_trainer_rank_step_ms (tr, NULL, 0) == 0,
         "a layout or step times before the first step");
  CHECK (tw_dist_bucket_predict (m->graph, o.bucket_mb, &p), "a prediction");
  g_autoptr (tw_batcher) b = tw_batcher_new (d, 30, TRUE, 1, FALSE);
  tw_batcher_reset (b, 0);
  tw_tensor *x, *y;
  g_assert_true (tw_batcher_next (b, &x, &y));
  double loss;
  CHECK (tw_trainer_step (tr, x, y, &loss, &error), "step: %s", error ? error->message : "");
  tw_tensor_unref (x);
  tw_tensor_unref (y);
  CHECK (tw_trainer_dist_buckets (tr, &l), "a layout after the first step");
  tw_params *ps = tw_trainer_params (tr);
  int64_t numel[16];
  int bucket_of[16], n = 0;
  for (int k = 0; k < l.n; k++)
    for (int i = 0; l.names[k][i] && n < 16; i++)
      numel[n++] = tw_tensor_numel (tw_params_get (ps, l.names[k][i])->value);
  CHECK (n == 6, "%d parameters in the buckets", n);
  int nb = tw_dist_bucket_cut (numel, n, o.bucket_mb, bucket_of);
  CHECK (nb == l.n, "the cut makes %d buckets, the trainer %d", nb, l.n);
  for (int k = 0, j = 0; k < l.n; k++)
    for (int i = 0; l.names[k][i] && j < n; i++, j++)
      CHECK (bucket_of[j] == k, "%s: bucket %d by the cut, %d by the trainer", l.names[k][i],
             bucket_of[j], k);
  CHECK (tw_bucket_layout_find (&l, "fc2.weight", NULL) >= 0, "fc2.weight bucketed");
  int pos = -1;
  CHECK (tw_bucket_layout_find (&p, "fc3.bias", &pos) == 0 && pos == 0,
         "predicted: fc3.bias first (bucket 0, position %d)", pos);
  CHECK (tw_bucket_layout_find (&p, "fc1.weight", NULL) == p.n - 1, "predicted: fc1.weight last");
  CHECK (tw_bucket_layout_find (&p, "nothing", NULL) == -1, "an unknown name");
  int64_t total = 0;
  for (int k = 0; k < p.n; k++)
    total += p.bytes[k];
  CHECK (total == tw_params_numel (ps, TRUE) * 4, "predicted bytes %" G_GINT64_FORMAT, total);
  tw_bucket_layout_clear (&l);
  tw_bucket_layout_clear (&p);
  case_end ();
}

int
main (int argc, char **argv)
{
  g_autoptr (GError) error = NULL;
  tw_comm_options o;
  tw_comm_options_init (&o);
  o.timeout_s = 30;
  comm = tw_comm_new_mpi (&o, &error);
  if (comm == NULL)
    {
      printf ("1..0 # SKIP %s\n", error->message);
      return 0;
    }
  if (tw_comm_rank (comm) != 0)
    {
      FILE *devnull = fopen ("/dev/null", "w");
      dup2 (fileno (devnull), STDOUT_FILENO);
      fclose (devnull);
    }
  g_test_init (&argc, &argv, NULL);
  static const dp_case cases[] = {
    { TW_MODE_EAGER, TW_OPT_SGD, 64, 25 },
    { TW_MODE_EAGER, TW_OPT_ADAM, 64, 25 },
    { TW_MODE_COMPILED, TW_OPT_SGD, 64, 25 },
    { TW_MODE_COMPILED, TW_OPT_ADAM, 64, 25 },
    /* 30 rows: shards of 15 at 2 ranks, 7, 8, 7, 8 at 4; buckets of about one layer. */
    { TW_MODE_EAGER, TW_OPT_SGD, 30, 0.004 },
    { TW_MODE_COMPILED, TW_OPT_ADAM, 30, 0.004 },
    /* Local SGD: H = 1 is synchronous SGD (the update is linear in the
     * gradient, momentum included); H = 4 averages every 4th step. */
    { TW_MODE_EAGER, TW_OPT_SGD, 64, 25, 1 },
    { TW_MODE_COMPILED, TW_OPT_SGD, 30, 25, 1 },
    { TW_MODE_EAGER, TW_OPT_SGD, 64, 25, 4 },
    /* ZeRO-1: one bucket, and small buckets (shards cut across parameters). */
    { TW_MODE_EAGER, TW_OPT_ADAM, 64, 25, 0, TRUE },
    { TW_MODE_EAGER, TW_OPT_SGD, 30, 0.004, 0, TRUE },
    { TW_MODE_COMPILED, TW_OPT_ADAM, 30, 0.004, 0, TRUE },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      const dp_case *k = &cases[i];
      g_autofree char *local = k->local_sgd ? g_strdup_printf ("/local-sgd-%d", k->local_sgd)
                                             : g_strdup ("");
      g_autofree char *path = g_strdup_printf ("/dp/%s/%s/batch-%" G_GINT64_FORMAT "%s%s%s",
                                               k->mode == TW_MODE_EAGER ? "eager" : "compiled",
                                               k->opt == TW_OPT_SGD ? "sgd" : "adam", k->batch,
                                               k->bucket_mb < 1 ? "-small-buckets" : "", local,
                                               k->shard ? "/shard-optimizer" : "");
      g_test_add_data_func (path, k, test_case);
    }
  g_test_add_func ("/dp/buckets", test_buckets);
  g_test_add_data_func ("/dp/overlap/eager", GINT_TO_POINTER (TW_MODE_EAGER), test_overlap);
  g_test_add_data_func ("/dp/overlap/compiled", GINT_TO_POINTER (TW_MODE_COMPILED), test_overlap);
  int rc = g_test_run ();
  tw_comm_free (comm);
  return rc;
}
