/* test-classes.c — tw_trainer_classify: the confusion matrix against an
 * independent prediction pass (a second eager executor on the trainer's
 * parameters, fed with labels as tw_trainer_evaluate feeds it), its sums
 * against tw_trainer_evaluate's accuracy, compiled mode against eager, the
 * sample order and image rows, the errors, and a classify in the middle of
 * a run leaving the run bit-identical. */
#include "engine/classes.h"
#include "engine/device.h"

#include <math.h>
#include <string.h>

static char *
model_path (const char *name)
{
  const char *dir = g_getenv ("TWB_ASSETS_DIR");
  return g_build_filename (dir ? dir : TWB_ASSETS_DIR_FALLBACK, "models", name, NULL);
}

static tw_attrs *
attrs_int (const char *name, int64_t v)
{
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, name, v);
  return a;
}

/* x [in] -> linear 16 -> relu -> dropout 0.3 -> linear classes, cross-entropy:
 * the dropout draws from the trainer's random streams in training. */
static tw_model *
make_dropout_mlp (int ndim, const int64_t *shape, int64_t classes)
{
  tw_model *m = tw_model_new ("classes-test");
  tw_graph *g = m->graph;
  tw_attrs *h = attrs_int ("out_features", 16), *o = attrs_int ("out_features", classes);
  tw_attrs *p = tw_attrs_new ();
  tw_attrs_set_float (p, "p", 0.3);
  tw_graph_add_input (g, "x", TW_F32, ndim, shape, "data");
  tw_graph_add_input (g, "y", TW_I64, 0, NULL, "label");
  tw_graph_add (g, "flat", "flatten", NULL, "x", NULL);
  tw_graph_add (g, "fc1", "linear", h, "flat", NULL);
  tw_graph_add (g, "act", "relu", NULL, "fc1", NULL);
  tw_graph_add (g, "drop", "dropout", p, "act", NULL);
  tw_graph_add (g, "fc2", "linear", o, "drop", NULL);
  tw_graph_add (g, "loss", "cross_entropy", NULL, "fc2", "y", NULL);
  tw_graph_set_outputs (g, (const char *[]) { "fc2", NULL });
  tw_attrs_free (h);
  tw_attrs_free (o);
  tw_attrs_free (p);
  m->recipe.optimizer.lr = 0.1;
  m->recipe.seed = 7;
  return m;
}

static void
train_steps (tw_trainer *tr, const tw_dataset *d, int epochs, double *losses)
{
  g_autoptr (tw_batcher) b = tw_batcher_new (d, 32, TRUE, 11, FALSE);
  g_autoptr (GError) error = NULL;
  int k = 0;
  for (int e = 0; e < epochs; e++)
    {
      tw_batcher_reset (b, e);
      tw_tensor *x, *y;
      while (tw_batcher_next (b, &x, &y))
        {
          double loss;
          g_assert_true (tw_trainer_step (tr, x, y, &loss, &error));
          g_assert_no_error (error);
          if (losses)
            losses[k++] = loss;
          tw_tensor_unref (x);
          tw_tensor_unref (y);
        }
    }
}

/* The reference: a second eager executor over the trainer's parameters, in
 * batches of 64 with labels and the loss (the evaluate path, not the
 * inference path tw_trainer_classify takes); logits [n, c] into *logits. */
static int64_t *
reference_confusion (tw_trainer *tr, const tw_dataset *d, int64_t *c_out, float **logits)
{
  g_autoptr (GError) error = NULL;
  tw_model *m = tw_trainer_model (tr);
  g_autoptr (tw_eager) ex = tw_eager_new (m->graph, tw_trainer_params (tr), 0, &error);
  g_assert_no_error (error);
  int64_t n = tw_dataset_size (d), c = 0;
  int64_t *conf = NULL;
  for (int64_t start = 0; start < n; start += 64)
    {
      int64_t stop = MIN (n, start + 64);
      g_autoptr (tw_tensor) xs = tw_tensor_slice (d->x, 0, start, stop, 1);
      g_autoptr (tw_tensor) ys = tw_tensor_slice (d->y, 0, start, stop, 1);
      g_autoptr (tw_tensor) x = tw_tensor_clone (xs);
      g_autoptr (tw_tensor) y = tw_tensor_clone (ys);
      g_assert_true (tw_eager_forward (ex, x, y, FALSE, 0, &error));
      g_assert_no_error (error);
      tw_tensor *pred = tw_eager_prediction (ex);
      g_assert_cmpint (pred->ndim, ==, 2);
      if (c == 0)
        {
          c = pred->shape[1];
          conf = g_new0 (int64_t, c * c);
          *logits = g_new (float, n * c);
        }
      for (int64_t i = 0; i < stop - start; i++)
        {
          int64_t best = 0;
          for (int64_t j = 0; j < c; j++)
            {
              float v = (float) tw_tensor_get_flat (pred, i * c + j);
              (*logits)[(start + i) * c + j] = v;
              if (v > (*logits)[(start + i) * c + best])
                best = j;
            }
          conf[(int64_t) tw_tensor_get_flat (y, i) * c + best]++;
        }
      tw_eager_release (ex);
    }
  *c_out = c;
  return conf;
}

/* Everything a report must satisfy against the reference pass. */
static void
check_report (tw_trainer *tr, const tw_dataset *d, const tw_class_report *r, int max_samples)
{
  g_autoptr (GError) error = NULL;
  int64_t n = tw_dataset_size (d), c;
  g_autofree float *logits = NULL;
  g_autofree int64_t *ref = reference_confusion (tr, d, &c, &logits);

  g_assert_cmpint (r->n_classes, ==, c);
  g_assert_cmpint (r->total, ==, n);
  g_assert_cmpmem (r->confusion, c * c * sizeof (int64_t), ref, c * c * sizeof (int64_t));
  int64_t sum = 0, diag = 0;
  for (int64_t i = 0; i < c; i++)
    {
      int64_t row = 0, in_class = 0;
      for (int64_t j = 0; j < c; j++)
        row += r->confusion[i * c + j];
      for (int64_t k = 0; k < n; k++)
        in_class += tw_tensor_get_flat (d->y, k) == i;
      g_assert_cmpint (row, ==, in_class);
      sum += row;
      diag += r->confusion[i * c + i];
    }
  g_assert_cmpint (sum, ==, n);
  g_assert_cmpint (diag, ==, r->correct);
  double acc, loss;
  g_assert_true (tw_trainer_evaluate (tr, d, 64, &loss, &acc, &error));
  g_assert_no_error (error);
  g_assert_cmpfloat (acc, ==, (double) r->correct / r->total);

  /* Samples: wrong ones first, most confident first; then right ones, least
   * confident first; confidences are the reference logits' softmax. */
  guint want = (guint) MIN (max_samples, n);
  g_assert_cmpuint (r->samples->len, ==, want);
  int64_t wrong_total = n - r->correct;
  for (guint k = 0; k < r->samples->len; k++)
    {
      const tw_class_sample *s = &g_array_index (r->samples, tw_class_sample, k);
      g_assert_cmpint (s->label, ==, (int) tw_tensor_get_flat (d->y, s->index));
      gboolean wrong = s->predicted != s->label;
      g_assert_true (wrong == ((int64_t) k < wrong_total));
      const float *row = logits + s->index * c;
      double m = row[s->predicted], z = 0;
      for (int64_t j = 0; j < c; j++)
        {
          g_assert_cmpfloat (row[j], <=, m);
          z += exp (row[j] - m);
        }
      /* float32 logits, softmax in double: 1e-6 is a few float ulps at 1. */
      g_assert_cmpfloat_with_epsilon (s->confidence, 1 / z, 1e-6);
      if (k > 0)
        {
          const tw_class_sample *p = &g_array_index (r->samples, tw_class_sample, k - 1);
          if ((p->predicted != p->label) == wrong)
            g_assert_true (wrong ? p->confidence >= s->confidence
                                 : p->confidence <= s->confidence);
        }
    }
  /* Images: the samples' rows of x, in the samples' order. */
  g_assert_nonnull (r->images);
  g_assert_cmpint (r->images->ndim, ==, d->x->ndim);
  g_assert_cmpint (r->images->shape[0], ==, want);
  int64_t row = tw_tensor_numel (d->x) / n;
  for (int i = 1; i < d->x->ndim; i++)
    g_assert_cmpint (r->images->shape[i], ==, d->x->shape[i]);
  for (guint k = 0; k < r->samples->len; k++)
    {
      const tw_class_sample *s = &g_array_index (r->samples, tw_class_sample, k);
      for (int64_t e = 0; e < row; e++)
        g_assert_cmpfloat (tw_tensor_get_flat (r->images, k * row + e), ==,
                           tw_tensor_get_flat (d->x, s->index * row + e));
    }
}

/* The bundled spirals model, trained a little (so that some are right and
 * some wrong), on a test split of 250 points (batches of 64: the last is
 * smaller). */
static void
test_matrix (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *path = model_path ("spirals.json");
  g_autoptr (tw_model) m = tw_model_load (path, &error);
  g_assert_no_error (error);
  g_autoptr (tw_trainer) tr = tw_trainer_new (m, &error);
  g_assert_no_error (error);
  g_autoptr (tw_dataset) train = tw_dataset_synthetic_for_split ("spirals", TW_SPLIT_TRAIN, 320,
                                                                 3, -1, &error);
  g_autoptr (tw_dataset) test = tw_dataset_synthetic_for_split ("spirals", TW_SPLIT_TEST, 250,
                                                                3, -1, &error);
  g_assert_no_error (error);
  train_steps (tr, train, 2, NULL);

  tw_class_report r;
  g_assert_true (tw_trainer_classify (tr, test, 64, 40, &r, &error));
  g_assert_no_error (error);
  g_assert_cmpint (r.correct, >, 0);
  g_assert_cmpint (r.correct, <, r.total);   /* both kinds of sample present */
  check_report (tr, test, &r, 40);

  /* Compiled mode: the same matrix and the same samples. */
  tw_trainer_set_mode (tr, TW_MODE_COMPILED);
  tw_class_report rc;
  g_assert_true (tw_trainer_classify (tr, test, 64, 40, &rc, &error));
  g_assert_no_error (error);
  g_assert_cmpint (rc.n_classes, ==, r.n_classes);
  g_assert_cmpint (rc.correct, ==, r.correct);
  g_assert_cmpmem (rc.confusion, 4 * sizeof (int64_t), r.confusion, 4 * sizeof (int64_t));
  g_assert_cmpuint (rc.samples->len, ==, r.samples->len);
  for (guint k = 0; k < r.samples->len; k++)
    {
      const tw_class_sample *a = &g_array_index (r.samples, tw_class_sample, k);
      const tw_class_sample *b = &g_array_index (rc.samples, tw_class_sample, k);
      g_assert_cmpint (a->index, ==, b->index);
      g_assert_cmpint (a->predicted, ==, b->predicted);
      g_assert_cmpfloat_with_epsilon (a->confidence, b->confidence, 1e-5);
    }
  check_report (tr, test, &rc, 40);

  /* More samples asked for than there are: all of them. */
  tw_class_report all;
  g_assert_true (tw_trainer_classify (tr, test, 100, 1000, &all, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (all.samples->len, ==, 250);
  check_report (tr, test, &all, 1000);
  g_assert_cmpmem (all.confusion, 4 * sizeof (int64_t), r.confusion, 4 * sizeof (int64_t));

  tw_class_report_clear (&r);
  tw_class_report_clear (&rc);
  tw_class_report_clear (&all);
  g_assert_null (r.confusion);
  g_assert_null (r.samples);
}

/* Images [n, 1, 5, 5] over 4 classes; copy and clear. */
static void
test_images (void)
{
  g_autoptr (GError) error = NULL;
  const int64_t n = 90, shape[] = { 1, 5, 5 };
  g_autoptr (tw_tensor) x = tw_tensor_new (TW_F32, 4, (int64_t[]) { n, 1, 5, 5 });
  g_autoptr (tw_tensor) y = tw_tensor_new (TW_I64, 1, &n);
  float *xp = tw_tensor_f32 (x);
  for (int64_t i = 0; i < n; i++)
    {
      tw_tensor_i64 (y)[i] = i % 4;
      for (int e = 0; e < 25; e++)   /* class k: a brighter k-th quarter, and noise */
        xp[i * 25 + e] = (e / 7 == i % 4 ? 0.8f : 0.1f) + 0.05f * (float) ((i * 31 + e * 17) % 7);
    }
  g_autoptr (tw_dataset) d = tw_dataset_new ("squares", x, y, 4);
  g_autoptr (tw_model) m = make_dropout_mlp (3, shape, 4);
  g_autoptr (tw_trainer) tr = tw_trainer_new (m, &error);
  g_assert_no_error (error);
  train_steps (tr, d, 3, NULL);

  tw_class_report r;
  g_assert_true (tw_trainer_classify (tr, d, 32, 12, &r, &error));
  g_assert_no_error (error);
  check_report (tr, d, &r, 12);
  g_assert_cmpint (r.images->ndim, ==, 4);

  tw_class_report c;
  tw_class_report_copy (&c, &r);
  tw_class_report_clear (&r);
  g_assert_cmpint (c.n_classes, ==, 4);
  check_report (tr, d, &c, 12);

  /* No samples asked for: a matrix, no images. */
  tw_class_report none;
  g_assert_true (tw_trainer_classify (tr, d, 32, 0, &none, &error));
  g_assert_cmpuint (none.samples->len, ==, 0);
  g_assert_null (none.images);
  g_assert_cmpmem (none.confusion, 16 * sizeof (int64_t), c.confusion, 16 * sizeof (int64_t));
  tw_class_report_clear (&none);
  tw_class_report_clear (&c);
}

/* A classify between steps leaves the run as it was: the losses of the
 * following steps and the final parameters are bit-identical to a run
 * without it (dropout draws from the trainer's streams), in both modes. */
static void
check_run_unchanged (tw_exec_mode mode)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_dataset) d = tw_dataset_synthetic ("blobs", 160, 5, -1, &error);
  g_assert_no_error (error);
  const int64_t in = 2;
  g_autoptr (tw_model) ma = make_dropout_mlp (1, &in, 3);
  g_autoptr (tw_model) mb = make_dropout_mlp (1, &in, 3);
  g_autoptr (tw_trainer) a = tw_trainer_new (ma, &error);
  g_autoptr (tw_trainer) b = tw_trainer_new (mb, &error);
  g_assert_no_error (error);
  tw_trainer_set_mode (a, mode);
  tw_trainer_set_mode (b, mode);
  double la[2][5], lb[2][5];   /* 160 / 32 = 5 steps an epoch */

  train_steps (a, d, 1, la[0]);
  train_steps (b, d, 1, lb[0]);
  tw_class_report r;
  g_assert_true (tw_trainer_classify (a, d, 48, 8, &r, &error));
  g_assert_no_error (error);
  g_assert_cmpint (r.total, ==, 160);
  tw_class_report_clear (&r);
  g_assert_cmpint (tw_trainer_step_count (a), ==, 5);

  /* The second epoch with its own shuffle (train_steps resets to epoch 0:
   * the same batches again, which is fine for the comparison). */
  train_steps (a, d, 1, la[1]);
  train_steps (b, d, 1, lb[1]);
  g_assert_cmpmem (la, sizeof la, lb, sizeof lb);
  tw_params *pa = tw_trainer_params (a), *pb = tw_trainer_params (b);
  g_assert_cmpint (tw_params_count (pa), ==, tw_params_count (pb));
  for (int i = 0; i < tw_params_count (pa); i++)
    {
      tw_tensor *va = tw_params_at (pa, i)->value, *vb = tw_params_at (pb, i)->value;
      g_assert_cmpmem (tw_tensor_data (va), tw_tensor_nbytes (va), tw_tensor_data (vb),
                       tw_tensor_nbytes (vb));
    }
}

static void
test_run_unchanged_eager (void)
{
  check_run_unchanged (TW_MODE_EAGER);
}

static void
test_run_unchanged_compiled (void)
{
  check_run_unchanged (TW_MODE_COMPILED);
}

static void
test_errors (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *path = model_path ("spirals.json");
  g_autoptr (tw_model) m = tw_model_load (path, &error);
  g_assert_no_error (error);
  g_autoptr (tw_trainer) tr = tw_trainer_new (m, &error);
  g_assert_no_error (error);
  tw_class_report r;

  /* Empty. */
  g_autoptr (tw_tensor) x0 = tw_tensor_new (TW_F32, 2, (int64_t[]) { 0, 2 });
  g_autoptr (tw_tensor) y0 = tw_tensor_new (TW_I64, 1, (int64_t[]) { 0 });
  g_autoptr (tw_dataset) empty = tw_dataset_new ("nothing", x0, y0, 2);
  g_assert_false (tw_trainer_classify (tr, empty, 16, 4, &r, &error));
  g_assert_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT);
  g_assert_nonnull (strstr (error->message, "'nothing' is empty"));
  g_assert_null (r.confusion);
  g_clear_error (&error);

  /* A label out of range, named with its sample (in the second batch, so
   * after the first batch told the classes); then a negative one. */
  g_autoptr (tw_dataset) d = tw_dataset_synthetic ("spirals", 40, 1, -1, &error);
  tw_tensor_i64 (d->y)[23] = 5;
  g_assert_false (tw_trainer_classify (tr, d, 16, 4, &r, &error));
  g_assert_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT);
  g_assert_nonnull (strstr (error->message, "sample 23 has label 5"));
  g_assert_nonnull (strstr (error->message, "2 outputs (0 to 1)"));
  g_clear_error (&error);
  tw_tensor_i64 (d->y)[23] = 1;
  tw_tensor_i64 (d->y)[3] = -1;
  g_assert_false (tw_trainer_classify (tr, d, 16, 4, &r, &error));
  g_assert_nonnull (strstr (error->message, "sample 3 has label -1"));
  g_clear_error (&error);

  /* More classes in the dataset than the model outputs. */
  g_autoptr (tw_dataset) blobs = tw_dataset_synthetic ("blobs", 30, 1, -1, &error);
  g_assert_cmpint (blobs->n_classes, ==, 3);
  g_assert_false (tw_trainer_classify (tr, blobs, 16, 4, &r, &error));
  g_assert_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH);
  g_assert_nonnull (strstr (error->message, "output [16, 2] is not a classifier"));
  g_assert_nonnull (strstr (error->message, "3 to 4096 classes"));
  g_clear_error (&error);

  /* A one-column output is no classifier. */
  const int64_t in = 2;
  g_autoptr (tw_model) one = make_dropout_mlp (1, &in, 1);
  g_autoptr (tw_trainer) t1 = tw_trainer_new (one, &error);
  g_assert_no_error (error);
  tw_tensor_i64 (d->y)[3] = 0;
  g_autoptr (tw_tensor) zeros = tw_tensor_zeros (TW_I64, 1, (int64_t[]) { 40 });
  g_autoptr (tw_dataset) d1 = tw_dataset_new ("zeros", d->x, zeros, 1);
  g_assert_false (tw_trainer_classify (t1, d1, 64, 4, &r, &error));
  g_assert_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH);
  g_assert_nonnull (strstr (error->message, "output [40, 1] is not a classifier"));
  g_clear_error (&error);

  /* Inputs that do not fit the model: the executor's error, passed on. */
  g_autoptr (tw_tensor) x3 = tw_tensor_zeros (TW_F32, 2, (int64_t[]) { 8, 3 });
  g_autoptr (tw_tensor) y3 = tw_tensor_zeros (TW_I64, 1, (int64_t[]) { 8 });
  g_autoptr (tw_dataset) d3 = tw_dataset_new ("wide", x3, y3, 2);
  g_assert_false (tw_trainer_classify (tr, d3, 4, 4, &r, &error));
  g_assert_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT);
  g_clear_error (&error);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  tw_set_num_threads (1);
  g_test_add_func ("/engine/classes/matrix", test_matrix);
  g_test_add_func ("/engine/classes/images", test_images);
  g_test_add_func ("/engine/classes/run-unchanged/eager", test_run_unchanged_eager);
  g_test_add_func ("/engine/classes/run-unchanged/compiled", test_run_unchanged_compiled);
  g_test_add_func ("/engine/classes/errors", test_errors);
  return g_test_run ();
}
