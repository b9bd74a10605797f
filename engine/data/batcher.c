/* batcher.c — mini-batches copied out of a dataset, shuffled per epoch. */
#define G_LOG_DOMAIN "twb-data"

#include "engine/data/data-private.h"
#include "engine/rng.h"

/* The epoch's permutation uses Philox stream BATCH_STREAM + epoch ("batch"
 * in ASCII), apart from the streams of splits and synthetic sets. */
#define BATCH_STREAM G_GUINT64_CONSTANT (0x6261746368000000)

struct tw_batcher
{
  tw_tensor *x;             /* contiguous [n, ...] */
  tw_tensor *y;             /* contiguous [n] */
  int64_t n;
  int64_t batch_size;
  gboolean shuffle;
  gboolean drop_last;
  guint64 seed;
  int64_t epoch;
  int64_t next;             /* index of the next batch within the epoch */
  int64_t *order;           /* [n] sample indices of this epoch */
};

tw_batcher *
tw_batcher_new (const tw_dataset *d, int64_t batch_size, gboolean shuffle, guint64 seed,
                gboolean drop_last)
{
  g_return_val_if_fail (d != NULL, NULL);
  g_return_val_if_fail (batch_size > 0, NULL);

  tw_batcher *b = g_new0 (tw_batcher, 1);
  b->x = tw_tensor_contiguous (d->x);
  b->y = tw_tensor_contiguous (d->y);
  b->n = tw_dataset_size (d);
  b->batch_size = batch_size;
  b->shuffle = shuffle;
  b->drop_last = drop_last;
  b->seed = seed;
  b->order = g_new (int64_t, MAX (b->n, 1));
  tw_batcher_reset (b, 0);
  return b;
}

void
tw_batcher_free (tw_batcher *b)
{
  if (b == NULL)
    return;
  tw_tensor_unref (b->x);
  tw_tensor_unref (b->y);
  g_free (b->order);
  g_free (b);
}

void
tw_batcher_reset (tw_batcher *b, int64_t epoch)
{
  g_return_if_fail (b != NULL);
  b->epoch = epoch;
  b->next = 0;
  if (b->shuffle)
    tw_rng_permutation (b->order, b->n, b->seed, BATCH_STREAM + (guint64) epoch);
  else
    for (int64_t i = 0; i < b->n; i++)
      b->order[i] = i;
}

int64_t
tw_batcher_batches_per_epoch (const tw_batcher *b)
{
  g_return_val_if_fail (b != NULL, 0);
  if (b->drop_last)
    return b->n / b->batch_size;
  return (b->n + b->batch_size - 1) / b->batch_size;
}

void
tw_batcher_seek (tw_batcher *b, int64_t k)
{
  g_return_if_fail (b != NULL);
  g_return_if_fail (k >= 0);
  b->next = MIN (k, tw_batcher_batches_per_epoch (b));
}

gboolean
tw_batcher_next (tw_batcher *b, tw_tensor **x, tw_tensor **y)
{
  g_return_val_if_fail (b != NULL && x != NULL && y != NULL, FALSE);
  *x = NULL;
  *y = NULL;
  if (b->next >= tw_batcher_batches_per_epoch (b))
    return FALSE;
  int64_t start = b->next * b->batch_size;
  int64_t count = MIN (b->batch_size, b->n - start);
  *x = tw_data_gather_rows (b->x, b->order + start, count);
  *y = tw_data_gather_rows (b->y, b->order + start, count);
  b->next++;
  return TRUE;
}

int64_t
tw_batcher_epoch (const tw_batcher *b)
{
  g_return_val_if_fail (b != NULL, 0);
  return b->epoch;
}

int64_t
tw_batcher_position (const tw_batcher *b)
{
  g_return_val_if_fail (b != NULL, 0);
  return b->next;
}
