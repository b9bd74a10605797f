/* data.h — datasets: IDX (MNIST family, gzip or raw), CSV, NumPy .npy,
 * synthetic 2-D sets, the bundled Fashion-MNIST subset; shuffling, batching
 * and train/validation splits.
 *
 * A dataset is two tensors: x (f32, [n, ...features]; images scaled to [0, 1]
 * and shaped [n, 1, 28, 28]) and y (i64 class labels [n]).
 *
 *   g_autoptr (tw_dataset) train = tw_dataset_open ("fashion-mnist", TW_SPLIT_TRAIN, 0, &err);
 *   tw_batcher *b = tw_batcher_new (train, 64, TRUE, seed, FALSE);
 *   tw_tensor *x, *y;
 *   while (tw_batcher_next (b, &x, &y)) { ...; tw_tensor_unref (x); tw_tensor_unref (y); }
 *
 * Errors name the file and what is wrong (wrong magic, truncated, counts that
 * do not match, a bad CSV cell with its line and column).
 */
#pragma once

#include "engine/tensor.h"

G_BEGIN_DECLS

#define TW_DATA_ERROR (tw_data_error_quark ())
GQuark tw_data_error_quark (void);

typedef enum
{
  TW_DATA_ERROR_IO,
  TW_DATA_ERROR_FORMAT,      /* malformed or truncated file */
  TW_DATA_ERROR_MISMATCH,    /* images and labels disagree, shapes do not fit */
  TW_DATA_ERROR_UNKNOWN,     /* unknown dataset name */
} tw_data_error;

typedef enum
{
  TW_SPLIT_TRAIN,
  TW_SPLIT_TEST,
} tw_split;

typedef struct
{
  char *name;
  tw_tensor *x;              /* f32 [n, ...] */
  tw_tensor *y;              /* i64 [n] */
  int n_classes;
} tw_dataset;

tw_dataset *tw_dataset_new (const char *name, tw_tensor *x, tw_tensor *y, int n_classes);  /* takes refs */
void tw_dataset_free (tw_dataset *d);
int64_t tw_dataset_size (const tw_dataset *d);

/* By name or path:
 *   "fashion-mnist"           /usr/share/datasets/fashion-mnist, else the bundled subset
 *   "fashion-mnist-subset"    the subset in assets/data (TWB_DATA_DIR overrides the folder)
 *   "spirals" "circles" "xor" "blobs"   synthetic (n_synthetic points; 0 = 2000 train / 1000 test),
 *                                       with test set drawn from another seed stream
 *   DIR                       a folder holding {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]
 *   FILE.csv                  numeric columns; the last column is the label
 *   FILE.npy                  features; labels in the same name with _labels.npy ... see README
 * seed drives synthetic sets only. */
tw_dataset *tw_dataset_open (const char *spec, tw_split split, guint64 seed, GError **error);

/* IDX: images file (idx3, u8) and labels file (idx1, u8); gzip detected by magic. */
tw_dataset *tw_dataset_load_idx (const char *images_path, const char *labels_path, GError **error);
/* Any IDX file as a tensor of its own dtype (u8, i8→i32, i16→i32, i32, f32, f64). */
tw_tensor *tw_idx_load (const char *path, GError **error);
/* CSV: optional header row (detected: non-numeric first row); label_column -1 = last. */
tw_dataset *tw_dataset_load_csv (const char *path, int label_column, GError **error);
/* .npy (v1.0–3.0; <f4 <f8 <i4 <i8 |u1 |b1; C order; Fortran order refused). */
tw_tensor *tw_npy_load (const char *path, GError **error);
tw_tensor *tw_npy_load_from_data (const guint8 *data, gsize len, const char *filename, GError **error);
gboolean tw_npy_save (const char *path, const tw_tensor *t, GError **error);   /* atomic */

/* Synthetic 2-D classification sets: x [n, 2], y [n] in {0..k-1}.
 * kind: "spirals" (2 arms), "circles" (2 rings), "xor" (4 quadrants, 2 classes),
 * "blobs" (3 Gaussian blobs).  noise: standard deviation of added noise. */
tw_dataset *tw_dataset_synthetic (const char *kind, int64_t n, guint64 seed, double noise,
                                  GError **error);

/* Split off the last `fraction` of a seeded permutation as validation. */
void tw_dataset_split (const tw_dataset *d, double fraction, guint64 seed, tw_dataset **train,
                       tw_dataset **val);

/* Batching.  shuffle: a new seeded permutation every epoch (seed, epoch). */
typedef struct tw_batcher tw_batcher;
tw_batcher *tw_batcher_new (const tw_dataset *d, int64_t batch_size, gboolean shuffle,
                            guint64 seed, gboolean drop_last);
void tw_batcher_free (tw_batcher *b);
/* Start epoch `epoch` (permutation depends on seed and epoch only). */
void tw_batcher_reset (tw_batcher *b, int64_t epoch);
/* Skip to batch index k of the current epoch (resume). */
void tw_batcher_seek (tw_batcher *b, int64_t k);
/* Next batch: new references to x [b, ...] and y [b].  FALSE at epoch end. */
gboolean tw_batcher_next (tw_batcher *b, tw_tensor **x, tw_tensor **y);
int64_t tw_batcher_batches_per_epoch (const tw_batcher *b);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_dataset, tw_dataset_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_batcher, tw_batcher_free)

G_END_DECLS
