/* data-private.h — helpers shared by the files of the data module. */
#pragma once

#include "engine/data.h"

G_BEGIN_DECLS

/* Rows rows[0..count) of t (contiguous, [n, ...]) copied into a new
 * contiguous tensor [count, ...], one memcpy per row.  Caller unrefs. */
tw_tensor *tw_data_gather_rows (const tw_tensor *t, const int64_t *rows, int64_t count);

/* Class labels as i64 [n] from an integer tensor (or a float tensor holding
 * whole numbers) of shape [n] or [n, 1].  Labels must be >= 0; *n_classes is
 * set to max + 1 (0 for no labels).  Errors (TW_DATA_ERROR_FORMAT) name
 * path.  Caller unrefs the result. */
tw_tensor *tw_data_labels_to_i64 (const tw_tensor *t, const char *path, int *n_classes,
                                  GError **error);

/* A tensor for data read from path, refused (NULL, TW_DATA_ERROR_IO naming
 * path and the bytes) when its shape is not representable or it cannot fit
 * in the memory available (engine/memory.h). */
tw_tensor *tw_data_try_alloc (tw_dtype dtype, int ndim, const int64_t *shape, const char *path,
                              GError **error);

/* The name of a file without folder and, if it has one, the extension
 * ext (".csv"); newly allocated. */
char *tw_data_stem (const char *path, const char *ext);

/* x.npy → x_labels.npy (x → x_labels.npy): where tw_dataset_load_npy finds
 * the labels of features_path by default; newly allocated. */
char *tw_data_npy_labels_path (const char *features_path);

G_END_DECLS
