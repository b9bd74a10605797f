/* safetensors.h — read and write the safetensors format
 * (https://huggingface.co/docs/safetensors: 8-byte little-endian header
 * length, a JSON header of name → {dtype, shape, data_offsets}, optional
 * "__metadata__" of string → string, then the raw little-endian data).
 *
 * Checkpoints store parameters and buffers under their state_dict names, the
 * optimizer state under "optimizer.<param>.<k>" and training progress in the
 * metadata ("step", "epoch", "format": "twb-checkpoint").
 */
#pragma once

#include "engine/tensor.h"

G_BEGIN_DECLS

#define TW_SAFETENSORS_ERROR (tw_safetensors_error_quark ())
GQuark tw_safetensors_error_quark (void);

typedef enum
{
  TW_SAFETENSORS_ERROR_IO,
  TW_SAFETENSORS_ERROR_FORMAT,   /* malformed header, offsets out of range, bad dtype */
} tw_safetensors_error;

/* Tensors: GHashTable name → tw_tensor* (owned refs);
 * metadata: GHashTable string → string (may be NULL).
 * Save is atomic (temporary file + rename); names are written sorted.
 * Tensors may have any layout; "__metadata__" is refused as a tensor name
 * (TW_SAFETENSORS_ERROR_FORMAT); write failures give TW_SAFETENSORS_ERROR_IO
 * and leave any previous file at path as it was. */
gboolean tw_safetensors_save (const char *path, GHashTable *tensors, GHashTable *metadata,
                              GError **error);
/* Returns FALSE with an error naming the file and the problem.  *tensors and
 * *metadata receive new tables (free with g_hash_table_unref); metadata may be NULL.
 * On success *metadata (when asked for) is always a table, empty when the file
 * has none; on failure neither output is touched.  Loaded tensors are
 * contiguous CPU copies, independent of the file.  Errors:
 * TW_SAFETENSORS_ERROR_IO (cannot read) or _FORMAT (anything malformed,
 * including dtypes the engine lacks: BOOL, F16, BF16, ...). */
gboolean tw_safetensors_load (const char *path, GHashTable **tensors, GHashTable **metadata,
                              GError **error);
gboolean tw_safetensors_load_from_data (const guint8 *data, gsize len, const char *filename,
                                        GHashTable **tensors, GHashTable **metadata,
                                        GError **error);
/* New table types with the right free functions. */
GHashTable *tw_tensor_table_new (void);

G_END_DECLS
