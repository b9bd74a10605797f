/* test-data-sets.c — synthetic sets, train/validation splits, batching. */
#include "test-data.h"

#include <math.h>
#include <string.h>

/* ---- synthetic ---- */

static void
test_synthetic_shapes (void)
{
  const char *kinds[] = { "spirals", "circles", "xor", "blobs" };
  const int classes[] = { 2, 2, 2, 3 };
  for (guint k = 0; k < G_N_ELEMENTS (kinds); k++)
    {
      g_autoptr (GError) err = NULL;
      g_autoptr (tw_dataset) d = tw_dataset_synthetic (kinds[k], 600, 1, -1, &err);
      g_assert_no_error (err);
      g_assert_cmpstr (d->name, ==, kinds[k]);
      g_assert_cmpint (d->x->ndim, ==, 2);
      g_assert_cmpint (d->x->shape[0], ==, 600);
      g_assert_cmpint (d->x->shape[1], ==, 2);
      g_assert_cmpint (d->n_classes, ==, classes[k]);
      int count[3] = { 0 };
      const float *x = tw_tensor_f32 (d->x);
      for (int i = 0; i < 600; i++)
        {
          int64_t c = tw_tensor_i64 (d->y)[i];
          g_assert_cmpint (c, >=, 0);
          g_assert_cmpint (c, <, classes[k]);
          count[c]++;
          /* Radius at most ~1 plus noise; 2.5 leaves 5 sigma for blobs. */
          g_assert_cmpfloat (hypot (x[2 * i], x[2 * i + 1]), <, 2.5);
        }
      /* 600 points split evenly: class i mod k (quadrant i mod 4 for xor). */
      for (int c = 0; c < classes[k]; c++)
        g_assert_cmpint (count[c], ==, 600 / classes[k]);
    }

  /* Without noise the sets have their exact geometry. */
  g_autoptr (GError) err = NULL;
  g_autoptr (tw_dataset) c = tw_dataset_synthetic ("circles", 10, 3, 0.0, &err);
  for (int i = 0; i < 10; i++)
    {
      const float *x = tw_tensor_f32 (c->x) + 2 * i;
      double want = tw_tensor_i64 (c->y)[i] == 0 ? 1.0 : 0.5;
      g_assert_cmpfloat_with_epsilon (hypot (x[0], x[1]), want, 1e-6);
    }
  g_autoptr (tw_dataset) xr = tw_dataset_synthetic ("xor", 100, 3, 0.0, &err);
  for (int i = 0; i < 100; i++)
    {
      const float *x = tw_tensor_f32 (xr->x) + 2 * i;
      g_assert_cmpint (tw_tensor_i64 (xr->y)[i], ==, (x[0] > 0) != (x[1] > 0));
    }

  /* Defaults through tw_dataset_open: 2000 train / 1000 test. */
  g_autoptr (tw_dataset) tr = tw_dataset_open ("spirals", TW_SPLIT_TRAIN, 5, &err);
  g_autoptr (tw_dataset) te = tw_dataset_open ("spirals", TW_SPLIT_TEST, 5, &err);
  g_assert_no_error (err);
  g_assert_cmpint (tw_dataset_size (tr), ==, 2000);
  g_assert_cmpint (tw_dataset_size (te), ==, 1000);
}

static gboolean
same_tensor (const tw_tensor *a, const tw_tensor *b)
{
  return tw_tensor_same_shape (a, b) && a->dtype == b->dtype
         && memcmp (tw_tensor_data (a), tw_tensor_data (b), tw_tensor_nbytes (a)) == 0;
}

static void
test_synthetic_determinism (void)
{
  g_autoptr (GError) err = NULL;
  g_autoptr (tw_dataset) a = tw_dataset_synthetic ("blobs", 300, 42, 0.2, &err);
  g_autoptr (tw_dataset) b = tw_dataset_synthetic ("blobs", 300, 42, 0.2, &err);
  g_autoptr (tw_dataset) c = tw_dataset_synthetic ("blobs", 300, 43, 0.2, &err);
  g_assert_true (same_tensor (a->x, b->x));
  g_assert_true (same_tensor (a->y, b->y));
  g_assert_false (same_tensor (a->x, c->x));

  /* The test split comes from another stream: same seed, other points. */
  g_autoptr (tw_dataset) tr = tw_dataset_synthetic_for_split ("spirals", TW_SPLIT_TRAIN, 300,
                                                              7, -1, &err);
  g_autoptr (tw_dataset) te = tw_dataset_synthetic_for_split ("spirals", TW_SPLIT_TEST, 300, 7,
                                                              -1, &err);
  g_autoptr (tw_dataset) plain = tw_dataset_synthetic ("spirals", 300, 7, -1, &err);
  g_assert_no_error (err);
  g_assert_true (same_tensor (tr->x, plain->x));
  g_assert_false (same_tensor (tr->x, te->x));

  g_assert_null (tw_dataset_synthetic ("moons", 10, 1, -1, &err));
  td_assert_error (err, TW_DATA_ERROR_UNKNOWN, "moons", "spirals");
}

/* ---- splits and batching ---- */

/* n samples whose features are [i, -i] and labels i % 5. */
static tw_dataset *
counting_dataset (int64_t n)
{
  g_autoptr (tw_tensor) x = tw_tensor_new (TW_F32, 2, (int64_t[]) { n, 2 });
  g_autoptr (tw_tensor) y = tw_tensor_new (TW_I64, 1, (int64_t[]) { n });
  for (int64_t i = 0; i < n; i++)
    {
      tw_tensor_f32 (x)[2 * i] = (float) i;
      tw_tensor_f32 (x)[2 * i + 1] = (float) -i;
      tw_tensor_i64 (y)[i] = i % 5;
    }
  return tw_dataset_new ("count", x, y, 5);
}

static void
test_split (void)
{
  g_autoptr (tw_dataset) d = counting_dataset (100);
  tw_dataset *train = NULL, *val = NULL;
  tw_dataset_split (d, 0.2, 9, &train, &val);
  g_assert_cmpint (tw_dataset_size (train), ==, 80);
  g_assert_cmpint (tw_dataset_size (val), ==, 20);
  g_assert_cmpstr (val->name, ==, "count/val");
  gboolean seen[100] = { 0 };
  tw_dataset *parts[] = { train, val };
  for (int p = 0; p < 2; p++)
    for (int64_t i = 0; i < tw_dataset_size (parts[p]); i++)
      {
        int64_t s = (int64_t) tw_tensor_f32 (parts[p]->x)[2 * i];
        g_assert_false (seen[s]);
        seen[s] = TRUE;
        g_assert_cmpfloat (tw_tensor_f32 (parts[p]->x)[2 * i + 1], ==, (float) -s);
        g_assert_cmpint (tw_tensor_i64 (parts[p]->y)[i], ==, s % 5);
      }

  /* Same seed, same split; another seed, another one. */
  tw_dataset *val2 = NULL, *val3 = NULL;
  tw_dataset_split (d, 0.2, 9, NULL, &val2);
  tw_dataset_split (d, 0.2, 10, NULL, &val3);
  g_assert_true (same_tensor (val->x, val2->x));
  g_assert_false (same_tensor (val->x, val3->x));
  tw_dataset_free (train);
  tw_dataset_free (val);
  tw_dataset_free (val2);
  tw_dataset_free (val3);
}

/* The sample indices of one epoch, in batch order. */
static GArray *
epoch_order (tw_batcher *b, int64_t *n_batches)
{
  GArray *order = g_array_new (FALSE, FALSE, sizeof (int64_t));
  tw_tensor *x, *y;
  *n_batches = 0;
  while (tw_batcher_next (b, &x, &y))
    {
      g_assert_cmpint (x->shape[0], ==, y->shape[0]);
      for (int64_t i = 0; i < x->shape[0]; i++)
        {
          int64_t s = (int64_t) tw_tensor_f32 (x)[2 * i];
          g_assert_cmpint (tw_tensor_i64 (y)[i], ==, s % 5);
          g_array_append_val (order, s);
        }
      (*n_batches)++;
      tw_tensor_unref (x);
      tw_tensor_unref (y);
    }
  g_assert_null (x);
  g_assert_null (y);
  return order;
}

static void
test_batcher_epochs (void)
{
  g_autoptr (tw_dataset) d = counting_dataset (103);
  g_autoptr (tw_batcher) b = tw_batcher_new (d, 10, TRUE, 4, FALSE);
  g_assert_cmpint (tw_batcher_batches_per_epoch (b), ==, 11);

  int64_t nb;
  g_autoptr (GArray) e0 = epoch_order (b, &nb);
  g_assert_cmpint (nb, ==, 11);
  g_assert_cmpint (e0->len, ==, 103);
  gboolean seen[103] = { 0 };
  for (guint i = 0; i < e0->len; i++)
    {
      int64_t s = g_array_index (e0, int64_t, i);
      g_assert_false (seen[s]);
      seen[s] = TRUE;
    }

  tw_batcher_reset (b, 1);
  g_assert_cmpint (tw_batcher_epoch (b), ==, 1);
  g_autoptr (GArray) e1 = epoch_order (b, &nb);
  g_assert_cmpint (e1->len, ==, 103);
  g_assert_false (memcmp (e0->data, e1->data, 103 * sizeof (int64_t)) == 0);

  /* Same seed and epoch, same order, even from a new batcher. */
  g_autoptr (tw_batcher) b2 = tw_batcher_new (d, 10, TRUE, 4, FALSE);
  tw_batcher_reset (b2, 1);
  g_autoptr (GArray) e1b = epoch_order (b2, &nb);
  g_assert_cmpmem (e1->data, 103 * sizeof (int64_t), e1b->data, 103 * sizeof (int64_t));

  /* Without shuffling, the dataset's order. */
  g_autoptr (tw_batcher) plain = tw_batcher_new (d, 64, FALSE, 4, FALSE);
  g_autoptr (GArray) p = epoch_order (plain, &nb);
  g_assert_cmpint (nb, ==, 2);
  for (guint i = 0; i < p->len; i++)
    g_assert_cmpint (g_array_index (p, int64_t, i), ==, i);
}

static void
test_batcher_drop_last (void)
{
  g_autoptr (tw_dataset) d = counting_dataset (103);
  g_autoptr (tw_batcher) b = tw_batcher_new (d, 10, TRUE, 4, TRUE);
  g_assert_cmpint (tw_batcher_batches_per_epoch (b), ==, 10);
  int64_t nb;
  g_autoptr (GArray) e = epoch_order (b, &nb);
  g_assert_cmpint (nb, ==, 10);
  g_assert_cmpint (e->len, ==, 100);

  /* The batcher keeps its own references: the dataset may go first. */
  tw_dataset *tmp = counting_dataset (5);
  g_autoptr (tw_batcher) c = tw_batcher_new (tmp, 8, FALSE, 0, FALSE);
  tw_dataset_free (tmp);
  g_autoptr (GArray) all = epoch_order (c, &nb);
  g_assert_cmpint (all->len, ==, 5);
}

static void
test_batcher_seek (void)
{
  g_autoptr (tw_dataset) d = counting_dataset (50);
  g_autoptr (tw_batcher) b = tw_batcher_new (d, 8, TRUE, 11, FALSE);
  tw_batcher_reset (b, 3);
  int64_t nb;
  g_autoptr (GArray) whole = epoch_order (b, &nb);

  tw_batcher_reset (b, 3);
  tw_batcher_seek (b, 4);
  g_assert_cmpint (tw_batcher_position (b), ==, 4);
  g_autoptr (GArray) rest = epoch_order (b, &nb);
  g_assert_cmpint (nb, ==, 7 - 4);
  g_assert_cmpint (rest->len, ==, 50 - 32);
  g_assert_cmpmem (rest->data, rest->len * sizeof (int64_t),
                   whole->data + 32 * sizeof (int64_t), rest->len * sizeof (int64_t));

  tw_batcher_seek (b, 100);
  tw_tensor *x, *y;
  g_assert_false (tw_batcher_next (b, &x, &y));
}

void
td_register_sets (void)
{
  g_test_add_func ("/engine/data/synthetic/shapes", test_synthetic_shapes);
  g_test_add_func ("/engine/data/synthetic/determinism", test_synthetic_determinism);
  g_test_add_func ("/engine/data/split", test_split);
  g_test_add_func ("/engine/data/batcher/epochs", test_batcher_epochs);
  g_test_add_func ("/engine/data/batcher/drop-last", test_batcher_drop_last);
  g_test_add_func ("/engine/data/batcher/seek", test_batcher_seek);
}
