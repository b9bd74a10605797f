/* test-data.h — helpers shared by the data module's tests. */
#pragma once

#include "engine/data.h"

/* The test run's temporary folder (g_dir_make_tmp), removed at the end. */
extern char *td_tmpdir;

/* td_tmpdir/name holding data or text; the caller frees the path. */
char *td_write_file (const char *name, const void *data, gsize len);
char *td_write_text (const char *name, const char *text);
/* data wrapped in gzip, as gzip(1) writes it. */
GBytes *td_gzip_bytes (const void *data, gsize len);
/* An IDX file: 00 00 type ndim, big-endian dims, then payload. */
GByteArray *td_idx_bytes (guint8 type, int ndim, const guint32 *dims, const void *payload,
                          gsize len);
/* Writes name (raw) or name.gz (gzipped) holding an IDX file; caller frees the path. */
char *td_write_idx (const char *name, gboolean gz, guint8 type, int ndim, const guint32 *dims,
                    const void *payload, gsize len);
/* dir_name/stem-{images-idx3,labels-idx1}-ubyte[.gz] under td_tmpdir: n images
 * [2, 3] with pixel j of image i = min (255, (10 i + j) * 5), labels i % 3.
 * The paths go to *images and *labels where those are not NULL. */
void td_write_tiny_idx_pair (const char *dir_name, const char *stem, guint32 n, gboolean gz,
                             char **images, char **labels);
/* err is TW_DATA_ERROR/code and its message holds a and b (where not NULL). */
void td_assert_error (const GError *err, int code, const char *a, const char *b);

void td_register_formats (void);    /* test-data-formats.c: IDX, CSV, .npy */
void td_register_sets (void);       /* test-data-sets.c: synthetic sets, splits, batching */
