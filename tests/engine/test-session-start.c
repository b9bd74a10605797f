/* test-session-start.c — sessions that prepare on their worker
 * (tw_session_new_deferred): the data, the trainer and the initial weights
 * made before the first step, told as PREPARING then READY; the same
 * training as a session made on the caller's thread; a stop or a free while
 * preparing; errors there naming the dataset, the input or the file; and
 * the synthetic set an imported model trains on, made only for the classes
 * its samples have. */
#include "engine/data-fit.h"
#include "engine/params.h"
#include "engine/rng.h"
#include "engine/session.h"
#include "engine/train.h"
#include "opcheck.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

/* x [in] -> 16 -> relu -> 2, cross-entropy, on spirals (the recipe's:
 * points of 2 coordinates). */
static tw_model *
small_model (int64_t in)
{
  tw_model *m = tw_model_new ("start-test");
  tw_graph *g = m->graph;
  tw_attrs *h = twt_attrs_int ("out_features", 16), *o = twt_attrs_int ("out_features", 2);
  tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]) { in }, "data");
  tw_graph_add_input (g, "y", TW_I64, 0, NULL, "label");
  tw_graph_add (g, "fc1", "linear", h, "x", NULL);
  tw_graph_add (g, "act", "relu", NULL, "fc1", NULL);
  tw_graph_add (g, "fc2", "linear", o, "act", NULL);
  tw_graph_add (g, "loss", "cross_entropy", NULL, "fc2", "y", NULL);
  tw_graph_set_outputs (g, (const char *[]) { "fc2", NULL });
  tw_attrs_free (h);
  tw_attrs_free (o);
  m->recipe.batch_size = 64;
  m->recipe.epochs = 1;
  m->recipe.seed = 5;
  g_free (m->recipe.dataset);
  m->recipe.dataset = g_strdup ("spirals");
  m->recipe.optimizer.type = TW_OPT_SGD;
  m->recipe.optimizer.lr = 0.05;
  tw_graph_infer (g);
  return m;
}

/* x [3, 224, 224] (an ImageNet image) -> global average pool -> 10
 * classes: cheap steps, a synthetic set of 111 images (2^24 values) whose
 * making takes a second or more. */
static tw_model *
image_model (const char *dataset)
{
  tw_model *m = tw_model_new ("image-test");
  tw_graph *g = m->graph;
  tw_attrs *o = twt_attrs_int ("out_features", 10);
  tw_graph_add_input (g, "x", TW_F32, 3, (int64_t[]) { 3, 224, 224 }, "data");
  tw_graph_add_input (g, "y", TW_I64, 0, NULL, "label");
  tw_graph_add (g, "pool", "global_avg_pool2d", NULL, "x", NULL);
  tw_graph_add (g, "flat", "flatten", NULL, "pool", NULL);
  tw_graph_add (g, "fc", "linear", o, "flat", NULL);
  tw_graph_add (g, "loss", "cross_entropy", NULL, "fc", "y", NULL);
  tw_graph_set_outputs (g, (const char *[]) { "fc", NULL });
  tw_attrs_free (o);
  m->recipe.batch_size = 16;
  m->recipe.epochs = 1;
  g_free (m->recipe.dataset);
  m->recipe.dataset = g_strdup (dataset);
  m->recipe.optimizer.type = TW_OPT_SGD;
  m->recipe.optimizer.lr = 0.01;
  tw_graph_infer (g);
  return m;
}

static tw_session *
deferred (const tw_model *m, const char *init_weights)
{
  tw_session_options o;
  tw_session_options_init (&o);
  tw_session_source src = { .want_test = TRUE, .init_weights = init_weights };
  g_autoptr (GError) error = NULL;
  tw_session *s = tw_session_new_deferred (m, &src, &o, &error);
  g_assert_no_error (error);
  g_assert_nonnull (s);
  return s;
}

/* Snapshots until FINISHED, counting PREPARING ones and where READY came
 * (the index among all, -1 never); METRICS' losses appended to losses. */
static tw_snapshot *
drain_to_end (tw_session *s, int *n_preparing, int *ready_at, int *first_metrics_at,
              GArray *losses)
{
  *n_preparing = 0;
  *ready_at = *first_metrics_at = -1;
  for (int i = 0;; i++)
    {
      tw_snapshot *sn = tw_session_pop (s, 30 * G_USEC_PER_SEC);
      if (sn == NULL)
        g_error ("no snapshot within 30 s (session %s)",
                 tw_session_state_name (tw_session_get_state (s)));
      if (sn->kind == TW_SNAP_FINISHED)
        return sn;
      if (sn->kind == TW_SNAP_PREPARING)
        {
          g_test_message ("preparing: %s", sn->message);
          g_assert_cmpint (*ready_at, <, 0);
          (*n_preparing)++;
        }
      if (sn->kind == TW_SNAP_READY)
        *ready_at = i;
      if (sn->kind == TW_SNAP_METRICS && *first_metrics_at < 0)
        *first_metrics_at = i;
      if (sn->kind == TW_SNAP_METRICS && losses)
        g_array_append_val (losses, sn->loss);
      tw_snapshot_free (sn);
    }
}

/* Prepared on the worker, the run is the one a session made on the caller's
 * thread over the same datasets runs, loss for loss; until it is ready it
 * has no trainer and refuses what needs one. */
static void
test_deferred_parity (void)
{
  g_autoptr (tw_model) m = small_model (2);
  g_autoptr (GError) error = NULL;
  tw_dataset *train, *val, *test;
  g_assert_true (tw_datasets_open_for_training (m, NULL, TRUE, &train, &val, &test, &error));
  tw_session_options o;
  tw_session_options_init (&o);
  g_autoptr (tw_session) ref = tw_session_new (m, train, val, test, &o, &error);
  g_assert_no_error (error);
  g_autoptr (GArray) ref_losses = g_array_new (FALSE, FALSE, sizeof (double));
  g_assert_true (tw_session_run (ref, &error));
  int n_prep, ready_at, metrics_at;
  g_autoptr (tw_snapshot) ref_end = drain_to_end (ref, &n_prep, &ready_at, &metrics_at,
                                                  ref_losses);
  /* The caller's thread prepared it: nothing to tell. */
  g_assert_cmpint (n_prep, ==, 0);
  g_assert_cmpint (ready_at, ==, -1);

  g_autoptr (tw_session) s = deferred (m, NULL);
  g_assert_null (tw_session_trainer (s));
  g_assert_cmpint (tw_session_total_steps (s), ==, 0);
  g_assert_false (tw_session_request (s, "fc1.weight", &error));
  g_assert_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_STATE);
  g_clear_error (&error);
  g_autofree char *dir = g_dir_make_tmp ("twb-start-XXXXXX", &error);
  g_autofree char *w = g_build_filename (dir, "w.safetensors", NULL);
  g_assert_false (tw_session_save_weights (s, w, &error));
  g_assert_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_STATE);
  g_clear_error (&error);
  g_assert_false (tw_session_init_weights (s, w, FALSE, NULL, &error));
  g_assert_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_STATE);
  g_clear_error (&error);
  /* Checked against the graph at once, taken when ready. */
  g_assert_true (tw_session_add_breakpoint (s, "step=3", &error));
  g_assert_false (tw_session_add_breakpoint (s, "node=nope", &error));
  g_clear_error (&error);

  g_assert_true (tw_session_run (s, &error));
  g_autoptr (tw_snapshot) ready = NULL;
  g_autoptr (GArray) losses = g_array_new (FALSE, FALSE, sizeof (double));
  int n = 0;
  for (;;)
    {
      tw_snapshot *sn = tw_session_pop (s, 30 * G_USEC_PER_SEC);
      g_assert_nonnull (sn);
      g_assert_cmpint (sn->kind, !=, TW_SNAP_FINISHED);
      g_assert_cmpint (sn->kind, !=, TW_SNAP_METRICS);
      if (sn->kind == TW_SNAP_PREPARING)
        {
          g_assert_nonnull (sn->message);
          n++;
        }
      if (sn->kind == TW_SNAP_READY)
        {
          ready = sn;
          break;
        }
      tw_snapshot_free (sn);
    }
  /* The data, then the model. */
  g_assert_cmpint (n, ==, 2);
  g_assert_cmpint (ready->total_steps, ==, tw_session_total_steps (ref));
  g_assert_cmpint (ready->per_epoch, ==, ready->total_steps);
  /* The step=3 breakpoint sent before it was ready holds. */
  g_autoptr (tw_snapshot) p = twt_pop_kind (s, TW_SNAP_PAUSED);
  g_assert_cmpint (p->step, ==, 2);
  g_assert_true (tw_session_run (s, &error));
  g_autoptr (tw_snapshot) end = drain_to_end (s, &n_prep, &ready_at, &metrics_at, NULL);
  g_assert_cmpint (end->state, ==, TW_SESSION_FINISHED);
  g_assert_nonnull (tw_session_trainer (s));
  g_assert_cmpfloat (end->test_loss, ==, ref_end->test_loss);
  g_assert_cmpfloat (end->train_loss, ==, ref_end->train_loss);
  g_assert_cmpint (end->step, ==, ref_end->step);
  g_rmdir (dir);
}

/* Stop while the worker makes 1,000 ImageNet-sized samples (150 million
 * normal values: many seconds): the run ends STOPPED, told so, before it
 * got to its model; a free while preparing joins the worker (and the test
 * would time out if the free waited for the whole set). */
static void
test_stop_while_preparing (void)
{
  g_autoptr (tw_model) m = image_model ("synthetic:1000");
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_session) s = deferred (m, NULL);
  g_assert_true (tw_session_run (s, &error));
  g_autoptr (tw_snapshot) prep = twt_pop_kind (s, TW_SNAP_PREPARING);
  g_assert_nonnull (strstr (prep->message, "synthetic:1000"));
  /* A second run while preparing is refused, harmlessly. */
  g_assert_false (tw_session_run (s, &error));
  g_assert_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_STATE);
  g_clear_error (&error);
  g_assert_true (tw_session_stop (s, &error));
  int n_prep, ready_at, metrics_at;
  g_autoptr (tw_snapshot) end = drain_to_end (s, &n_prep, &ready_at, &metrics_at, NULL);
  g_assert_cmpint (end->state, ==, TW_SESSION_STOPPED);
  g_assert_cmpstr (end->message, ==, "stopped while preparing the run");
  g_assert_cmpint (ready_at, ==, -1);
  g_assert_cmpint (n_prep, ==, 0);     /* still at the data */
  g_assert_null (tw_session_trainer (s));

  tw_session *t = deferred (m, NULL);
  g_assert_true (tw_session_run (t, &error));
  tw_snapshot_free (twt_pop_kind (t, TW_SNAP_PREPARING));
  tw_session_free (t);
}

static tw_snapshot *
end_of (tw_session *s)
{
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_session_run (s, &error));
  int n_prep, ready_at, metrics_at;
  return drain_to_end (s, &n_prep, &ready_at, &metrics_at, NULL);
}

/* What goes wrong while preparing ends the run FAILED, the message naming
 * the dataset and the model's input, or the weights file. */
static void
test_errors_while_preparing (void)
{
  g_autoptr (GError) error = NULL;
  /* spirals' points have 2 coordinates; x wants 3. */
  g_autoptr (tw_model) m = small_model (3);
  g_autoptr (tw_session) a = deferred (m, NULL);
  g_autoptr (tw_snapshot) ea = end_of (a);
  g_test_message ("%s", ea->message);
  g_assert_cmpint (ea->state, ==, TW_SESSION_FAILED);
  g_assert_nonnull (strstr (ea->message, "spirals"));
  g_assert_nonnull (strstr (ea->message, "'x'"));
  g_assert_null (tw_session_trainer (a));

  /* Initial weights that are not there (any more). */
  g_autoptr (tw_model) ok = small_model (2);
  g_autofree char *dir = g_dir_make_tmp ("twb-start-XXXXXX", &error);
  g_autofree char *gone = g_build_filename (dir, "gone.safetensors", NULL);
  g_autoptr (tw_session) b = deferred (ok, gone);
  g_autoptr (tw_snapshot) eb = end_of (b);
  g_test_message ("%s", eb->message);
  g_assert_cmpint (eb->state, ==, TW_SESSION_FAILED);
  g_assert_nonnull (strstr (eb->message, "gone.safetensors"));

  /* Weights saved from a prepared run load into the next one. */
  g_autoptr (tw_session) c = deferred (ok, NULL);
  g_autoptr (tw_snapshot) ec = end_of (c);
  g_assert_cmpint (ec->state, ==, TW_SESSION_FINISHED);
  g_autofree char *saved = g_build_filename (dir, "saved.safetensors", NULL);
  g_assert_true (tw_session_save_weights (c, saved, &error));
  g_assert_no_error (error);
  g_autoptr (tw_session) d = deferred (ok, saved);
  g_autoptr (tw_snapshot) ed = end_of (d);
  g_assert_cmpint (ed->state, ==, TW_SESSION_FINISHED);
  g_unlink (saved);
  g_rmdir (dir);
}

/* The synthetic set of an image model with more classes than samples:
 * sample i of class i mod C is 0.5 N(0, 1) noise (element j of the split's
 * stream) plus its class's pattern, 0.5 N(0, 1) per element and N(0, 1) per
 * channel: recomputed here from that definition, value for value. */
static void
test_synthetic_definition (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = image_model ("synthetic:4");
  /* 10 classes, 4 samples: classes 4 to 9 have none. */
  g_autoptr (tw_dataset) d = tw_dataset_open_for_model (m, "synthetic:4", TW_SPLIT_TRAIN, &error);
  g_assert_no_error (error);
  g_assert_cmpint (tw_dataset_size (d), ==, 4);
  g_assert_cmpint (d->n_classes, ==, 10);
  const int64_t per = 3 * 224 * 224, inner = 224 * 224;
  const float *x = tw_tensor_f32 (d->x);
  guint64 seed = m->recipe.seed;
  for (int64_t i = 0; i < 4; i++)
    {
      g_assert_cmpint (tw_tensor_i64 (d->y)[i], ==, i);
      /* Every 97th value: all channels, rows and columns meet. */
      for (int64_t k = 0; k < per; k += 97)
        {
          float mu = 0.5f * tw_rng_normal (seed, 0x5e7000 + 2 * i, (guint64) k)
                     + tw_rng_normal (seed, 0x5e7000 + 2 * i + 1, (guint64) (k / inner));
          float want = 0.5f * tw_rng_normal (seed, 0x5e6001, (guint64) (i * per + k)) + mu;
          g_assert_cmpfloat (x[i * per + k], ==, want);
        }
    }
  /* Cancelled before it starts: nothing made. */
  g_autoptr (GCancellable) c = g_cancellable_new ();
  g_cancellable_cancel (c);
  tw_dataset *tr = NULL, *va = NULL, *te = NULL;
  g_assert_false (tw_datasets_open_for_training_cancellable (m, NULL, TRUE, &tr, &va, &te, c,
                                                             &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_null (tr);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/session-start/parity", test_deferred_parity);
  g_test_add_func ("/engine/session-start/stop-while-preparing", test_stop_while_preparing);
  g_test_add_func ("/engine/session-start/errors", test_errors_while_preparing);
  g_test_add_func ("/engine/session-start/synthetic-definition", test_synthetic_definition);
  return g_test_run ();
}
