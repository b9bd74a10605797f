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
 *
 * Ownership: functions returning tw_dataset * or tw_batcher * return a new
 * object that the caller frees with tw_dataset_free () / tw_batcher_free ();
 * tw_tensor * results are new references (tw_tensor_unref ()).
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

/* x: f32 [n, ...], y: i64 [n] (programmer errors otherwise).  The dataset
 * takes its own references to x and y (the caller keeps and releases its
 * own) and copies name. */
tw_dataset *tw_dataset_new (const char *name, tw_tensor *x, tw_tensor *y, int n_classes);
void tw_dataset_free (tw_dataset *d);        /* NULL-safe */
int64_t tw_dataset_size (const tw_dataset *d);

/* By name or path:
 *   "fashion-mnist"           /usr/share/datasets/fashion-mnist (Debian's
 *                             dataset-fashion-mnist, 60000 / 10000), or the
 *                             bundled subset when that folder is absent
 *   "fashion-mnist-subset"    the bundled subset (4000 / 1000) in
 *                             $TWB_ASSETS_DIR/data/fashion-mnist-subset; the
 *                             assets folder defaults to the source tree's.
 *                             $TWB_DATA_DIR, if set, overrides the subset
 *                             folder (it may hold the four files or a
 *                             fashion-mnist-subset folder that does)
 *   "spirals" "circles" "xor" "blobs"   synthetic, 2000 train / 1000 test points
 *                             with the kind's default noise; the test split is
 *                             drawn from another Philox stream, so its points
 *                             differ (see tw_dataset_synthetic_for_split ())
 *   DIR                       a folder holding {train,t10k}-{images-idx3,labels-idx1}-ubyte
 *                             (gzipped ".gz" or raw; "train-images.idx3-ubyte" also works)
 *   FILE.csv                  see tw_dataset_load_csv (); the last column is the label
 *   FILE.npy                  features from FILE.npy, labels from FILE_labels.npy
 *                             (see tw_dataset_load_npy ())
 * A CSV or .npy file has no split of its own: TW_SPLIT_TEST loads the same
 * file as TW_SPLIT_TRAIN (use tw_dataset_split () for a validation set).
 * seed drives synthetic sets only.  Unknown names give TW_DATA_ERROR_UNKNOWN
 * with the list of known ones. */
tw_dataset *tw_dataset_open (const char *spec, tw_split split, guint64 seed, GError **error);
/* The files tw_dataset_open (spec, ...) reads for either split (a .csv, a
 * .npy and its labels .npy, the IDX files of a folder or of the
 * Fashion-MNIST names; none for synthetic sets): NULL-terminated, g_strfreev
 * it.  What a command reads, so that no output of it replaces one. */
char **tw_dataset_files (const char *spec);
/* The names tw_dataset_open () knows besides paths: NULL-terminated, static. */
const char *const *tw_dataset_known_names (void);

/* IDX: images file (idx3, u8 [n, rows, cols]) and labels file (idx1, integer
 * [n]); gzip detected by magic (1f 8b).  x: f32 [n, 1, rows, cols] scaled by
 * 1/255; y: i64 [n]; n_classes = max label + 1. */
tw_dataset *tw_dataset_load_idx (const char *images_path, const char *labels_path, GError **error);
/* Any IDX file as a tensor of its own dtype (u8, i8→i32, i16→i32, i32, f32, f64). */
tw_tensor *tw_idx_load (const char *path, GError **error);
/* CSV: comma-separated numeric columns, one row per line; blank lines are
 * skipped; a cell may be wrapped in double quotes but may not contain commas.
 * An optional header row is detected as a first row with a non-numeric cell.
 * label_column counts from 0; negative counts from the end (-1 = last).
 * Labels must be whole numbers >= 0; n_classes = max label + 1.
 * x: f32 [n, columns - 1]; y: i64 [n]. */
tw_dataset *tw_dataset_load_csv (const char *path, int label_column, GError **error);
/* .npy (v1.0–3.0; <f4 <f8 <i4 <i8 |u1 |b1, |b1 read as u8 0/1; C order;
 * big-endian data and Fortran order are refused).  _from_data parses bytes
 * in memory (data is not kept); filename only names them in errors and may
 * be NULL. */
tw_tensor *tw_npy_load (const char *path, GError **error);
tw_tensor *tw_npy_load_from_data (const guint8 *data, gsize len, const char *filename, GError **error);
/* Writes format v1.0 to a temporary file in the same folder and renames it. */
gboolean tw_npy_save (const char *path, const tw_tensor *t, GError **error);
/* Features (any dtype, cast to f32; [n] becomes [n, 1]) and labels (whole
 * numbers >= 0 of any dtype, [n] or [n, 1]; n_classes = max label + 1).  labels_path NULL: the features path with ".npy" replaced by
 * "_labels.npy" (x.npy → x_labels.npy). */
tw_dataset *tw_dataset_load_npy (const char *features_path, const char *labels_path,
                                 GError **error);

/* Synthetic 2-D classification sets: x [n, 2], y [n] in {0..k-1}, points
 * within about [-1, 1]², classes balanced (point i belongs to class i mod k;
 * for xor, to quadrant i mod 4).  The same seed gives the same points.
 * kind: "spirals" (2 arms of 1.75 turns, radius 1), "circles" (2 rings, radii
 * 1 and 0.5), "xor" (4 quadrants kept 0.1 off the axes, 2 classes), "blobs"
 * (3 Gaussian blobs centred on the unit circle).
 * n: number of points, 0 for 2000.  noise: standard deviation of the Gaussian
 * noise added to both coordinates (for blobs, the blobs' spread); negative for
 * the kind's default (spirals 0.05, circles 0.1, xor 0.05, blobs 0.3).
 * Unknown kinds give TW_DATA_ERROR_UNKNOWN. */
tw_dataset *tw_dataset_synthetic (const char *kind, int64_t n, guint64 seed, double noise,
                                  GError **error);
/* The same for one split: TW_SPLIT_TRAIN gives tw_dataset_synthetic ()'s
 * points, TW_SPLIT_TEST points from another Philox stream.  n = 0: 2000 for
 * train, 1000 for test. */
tw_dataset *tw_dataset_synthetic_for_split (const char *kind, tw_split split, int64_t n,
                                            guint64 seed, double noise, GError **error);

/* Split off the last `fraction` (0..1) of a seeded permutation as
 * validation: round (n * fraction) samples go to *val, the rest to *train,
 * both copies (rows in permutation order) named "NAME/train" and "NAME/val".
 * Either out pointer may be NULL. */
void tw_dataset_split (const tw_dataset *d, double fraction, guint64 seed, tw_dataset **train,
                       tw_dataset **val);

/* Batching.  shuffle: a new seeded permutation every epoch (seed, epoch);
 * otherwise the dataset's order.  The batcher holds its own references to
 * the dataset's tensors, so d may be freed first.  A new batcher is at batch
 * 0 of epoch 0. */
typedef struct tw_batcher tw_batcher;
tw_batcher *tw_batcher_new (const tw_dataset *d, int64_t batch_size, gboolean shuffle,
                            guint64 seed, gboolean drop_last);
void tw_batcher_free (tw_batcher *b);        /* NULL-safe */
/* Start epoch `epoch` (permutation depends on seed and epoch only). */
void tw_batcher_reset (tw_batcher *b, int64_t epoch);
/* Skip to batch index k of the current epoch (resume); k is clamped to
 * batches_per_epoch, where next () returns FALSE. */
void tw_batcher_seek (tw_batcher *b, int64_t k);
/* Next batch: new references to x [b, ...] and y [b] (fresh copies; the last
 * batch is smaller unless drop_last).  FALSE at epoch end, with *x and *y set
 * to NULL; call reset () for the next epoch. */
gboolean tw_batcher_next (tw_batcher *b, tw_tensor **x, tw_tensor **y);
int64_t tw_batcher_batches_per_epoch (const tw_batcher *b);
/* Where the batcher stands, for checkpoints: the epoch and the index of the
 * batch next () returns next. */
int64_t tw_batcher_epoch (const tw_batcher *b);
int64_t tw_batcher_position (const tw_batcher *b);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_dataset, tw_dataset_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_batcher, tw_batcher_free)

G_END_DECLS
