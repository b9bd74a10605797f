/* idx.c — IDX files (the MNIST family's format), gzipped or raw.
 *
 * An IDX file is: 00 00 TYPE NDIM, then NDIM big-endian u32 dimensions, then
 * the elements in row-major order, big-endian.  The file is mapped and, when
 * it starts with the gzip magic 1f 8b, inflated straight into the tensor's
 * storage. */
#define G_LOG_DOMAIN "twb-data"

#include "engine/data/data-private.h"
#include "engine/fileutil.h"

#include <string.h>
#include <zlib.h>

/* Deflate cannot expand data by more than 1032:1 (zlib FAQ, "What's the
 * maximum compression ratio?"); a header promising more than that is
 * truncated or corrupt, and we refuse it before allocating. */
#define DEFLATE_MAX_RATIO 1032

/* zlib counts in uInt; feed and drain it in chunks of at most 1 GiB. */
#define ZCHUNK ((gsize) 1 << 30)

typedef struct
{
  const char *path;
  const guint8 *data;       /* the mapped file */
  gsize len;
  gsize pos;                /* next unread byte of data */
  gboolean gz;
  gboolean z_ready;         /* inflateInit2 done */
  gboolean z_end;           /* last gzip member finished */
  z_stream z;
} idx_source;

static gboolean
source_open (idx_source *src, GError **error)
{
  src->gz = src->len >= 2 && src->data[0] == 0x1f && src->data[1] == 0x8b;
  if (!src->gz)
    return TRUE;
  memset (&src->z, 0, sizeof src->z);
  /* 16 + MAX_WBITS: expect a gzip wrapper and check its CRC. */
  if (inflateInit2 (&src->z, 16 + MAX_WBITS) != Z_OK)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_IO, "%s: cannot start zlib: %s",
                   src->path, src->z.msg ? src->z.msg : "out of memory");
      return FALSE;
    }
  src->z_ready = TRUE;
  return TRUE;
}

static void
source_close (idx_source *src)
{
  if (src->z_ready)
    inflateEnd (&src->z);
  src->z_ready = FALSE;
}

static void
source_refill (idx_source *src)
{
  src->z.next_in = (Bytef *) (src->data + src->pos);
  src->z.avail_in = (uInt) MIN (ZCHUNK, src->len - src->pos);
  src->pos += src->z.avail_in;
}

/* Reads up to want bytes into buf; *got says how many arrived (fewer only at
 * the end of the data).  FALSE with an error for corrupt gzip data; a gzip
 * stream that stops before its end sets *cut. */
static gboolean
source_read (idx_source *src, guint8 *buf, gsize want, gsize *got, gboolean *cut,
             GError **error)
{
  *got = 0;
  *cut = FALSE;
  if (!src->gz)
    {
      *got = MIN (want, src->len - src->pos);
      if (*got > 0)             /* an empty file maps to NULL */
        memcpy (buf, src->data + src->pos, *got);
      src->pos += *got;
      return TRUE;
    }
  while (*got < want && !src->z_end)
    {
      if (src->z.avail_in == 0)
        {
          if (src->pos == src->len)
            {
              *cut = TRUE;
              return TRUE;
            }
          source_refill (src);
        }
      gsize chunk = MIN (ZCHUNK, want - *got);
      src->z.next_out = buf + *got;
      src->z.avail_out = (uInt) chunk;
      int ret = inflate (&src->z, Z_NO_FLUSH);
      *got += chunk - src->z.avail_out;
      if (ret == Z_STREAM_END)
        {
          /* Another gzip member may follow (as `cat a.gz b.gz` makes). */
          if (src->z.avail_in == 0)
            source_refill (src);
          gboolean more = src->z.avail_in >= 2 && src->z.next_in[0] == 0x1f
                          && src->z.next_in[1] == 0x8b;
          if (more)
            inflateReset (&src->z);
          else
            src->z_end = TRUE;
        }
      else if (ret != Z_OK && ret != Z_BUF_ERROR)
        {
          g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT, "%s: corrupt gzip data (%s)",
                       src->path, src->z.msg ? src->z.msg : zError (ret));
          return FALSE;
        }
    }
  return TRUE;
}

/* After the payload: inflate what is left so that zlib checks the gzip CRC
 * and length, and a stream cut short is noticed. */
static gboolean
source_finish (idx_source *src, GError **error)
{
  guint8 scratch[4096];
  gsize got;
  gboolean cut = FALSE;
  while (src->gz && !src->z_end && !cut)
    if (!source_read (src, scratch, sizeof scratch, &got, &cut, error))
      return FALSE;
  if (cut)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                   "%s: truncated gzip stream (the file ends before the gzip trailer)",
                   src->path);
      return FALSE;
    }
  return TRUE;
}

static gboolean
type_info (guint8 code, tw_dtype *dtype, gsize *in_size)
{
  switch (code)
    {
    case 0x08: *dtype = TW_U8; *in_size = 1; return TRUE;
    case 0x09: *dtype = TW_I32; *in_size = 1; return TRUE;   /* i8, widened */
    case 0x0B: *dtype = TW_I32; *in_size = 2; return TRUE;   /* i16, widened */
    case 0x0C: *dtype = TW_I32; *in_size = 4; return TRUE;
    case 0x0D: *dtype = TW_F32; *in_size = 4; return TRUE;
    case 0x0E: *dtype = TW_F64; *in_size = 8; return TRUE;
    default: return FALSE;
    }
}

/* In place: n big-endian elements of in_size bytes at the start of buf
 * become native elements of dtype.  Widening runs from the end backwards so
 * no element is overwritten before it is read. */
static void
convert_payload (guint8 *buf, int64_t n, guint8 code)
{
  switch (code)
    {
    case 0x09:
      for (int64_t i = n - 1; i >= 0; i--)
        ((int32_t *) buf)[i] = (int8_t) buf[i];
      break;
    case 0x0B:
      for (int64_t i = n - 1; i >= 0; i--)
        ((int32_t *) buf)[i] = (int16_t) ((buf[2 * i] << 8) | buf[2 * i + 1]);
      break;
    case 0x0C:
    case 0x0D:
      for (int64_t i = 0; i < n; i++)
        ((guint32 *) buf)[i] = GUINT32_FROM_BE (((guint32 *) buf)[i]);
      break;
    case 0x0E:
      for (int64_t i = 0; i < n; i++)
        ((guint64 *) buf)[i] = GUINT64_FROM_BE (((guint64 *) buf)[i]);
      break;
    default:
      break;
    }
}

static tw_tensor *
idx_read (idx_source *src, GError **error)
{
  guint8 head[4];
  gsize got;
  gboolean cut;
  if (!source_read (src, head, 4, &got, &cut, error))
    return NULL;
  if (got < 4)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                   "%s: not an IDX file (wrong magic: the file holds only %zu bytes)",
                   src->path, got);
      return NULL;
    }
  if (head[0] != 0 || head[1] != 0)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                   "%s: not an IDX file (wrong magic: expected 00 00 TYPE NDIM, found "
                   "%02x %02x %02x %02x)", src->path, head[0], head[1], head[2], head[3]);
      return NULL;
    }
  tw_dtype dtype;
  gsize in_size;
  if (!type_info (head[2], &dtype, &in_size))
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                   "%s: unsupported IDX element type 0x%02x (expected 08 u8, 09 i8, 0B i16, "
                   "0C i32, 0D f32 or 0E f64)", src->path, head[2]);
      return NULL;
    }
  int ndim = head[3];
  if (ndim < 1 || ndim > TW_MAX_DIMS)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                   "%s: IDX file with %d dimensions (1 to %d supported)", src->path, ndim,
                   TW_MAX_DIMS);
      return NULL;
    }

  guint8 dims_be[4 * TW_MAX_DIMS];
  if (!source_read (src, dims_be, 4 * (gsize) ndim, &got, &cut, error))
    return NULL;
  if (got < 4 * (gsize) ndim)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                   "%s: truncated IDX header (%d dimensions announced, file ends after %zu "
                   "bytes of them)", src->path, ndim, got);
      return NULL;
    }
  int64_t shape[TW_MAX_DIMS];
  guint64 numel = 1, need;
  for (int i = 0; i < ndim; i++)
    {
      guint32 v;
      memcpy (&v, dims_be + 4 * i, 4);
      shape[i] = GUINT32_FROM_BE (v);
      if (!g_uint64_checked_mul (&numel, numel, (guint64) shape[i]))
        numel = G_MAXUINT64;
    }
  g_autofree char *shape_str = tw_shape_to_string (ndim, shape);
  gsize header = 4 + 4 * (gsize) ndim;
  if (!g_uint64_checked_mul (&need, numel, in_size))
    need = G_MAXUINT64;
  gboolean fits = need <= G_MAXSIZE / 8
                  && (src->gz ? need / DEFLATE_MAX_RATIO <= src->len
                              : need <= src->len - header);
  if (!fits)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                   "%s: truncated: dimensions %s need %" G_GUINT64_FORMAT " bytes of data but "
                   "the file holds only %zu%s bytes", src->path, shape_str, need,
                   src->gz ? src->len : src->len - header, src->gz ? " compressed" : "");
      return NULL;
    }

  size_t tbytes;
  if (!tw_shape_nbytes_checked (dtype, ndim, shape, &tbytes))
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                   "%s: dimensions %s are larger than 2^63 bytes", src->path, shape_str);
      return NULL;
    }
  g_autoptr (tw_tensor) t = tw_data_try_alloc (dtype, ndim, shape, src->path, error);
  if (t == NULL)
    return NULL;
  guint8 *buf = tw_tensor_data (t);
  if (!source_read (src, buf, need, &got, &cut, error))
    return NULL;
  if (got < need)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                   "%s: truncated: dimensions %s need %" G_GUINT64_FORMAT " bytes of data, "
                   "found %zu", src->path, shape_str, need, got);
      return NULL;
    }
  if (!source_finish (src, error))
    return NULL;
  convert_payload (buf, (int64_t) numel, head[2]);
  return g_steal_pointer (&t);
}

tw_tensor *
tw_idx_load (const char *path, GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  g_autoptr (GError) local = NULL;
  g_autoptr (GMappedFile) file = tw_file_map_regular (path, &local);
  if (file == NULL)
    {
      g_set_error_literal (error, TW_DATA_ERROR, TW_DATA_ERROR_IO, local->message);
      return NULL;
    }
  idx_source src = {
    .path = path,
    .data = (const guint8 *) g_mapped_file_get_contents (file),
    .len = g_mapped_file_get_length (file),
  };
  if (!source_open (&src, error))
    return NULL;
  tw_tensor *t = idx_read (&src, error);
  source_close (&src);
  return t;
}

tw_dataset *
tw_dataset_load_idx (const char *images_path, const char *labels_path, GError **error)
{
  g_return_val_if_fail (images_path != NULL && labels_path != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  g_autoptr (tw_tensor) images = tw_idx_load (images_path, error);
  if (images == NULL)
    return NULL;
  if (images->dtype != TW_U8 || images->ndim != 3)
    {
      g_autofree char *shape = tw_shape_to_string (images->ndim, images->shape);
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                   "%s: expected images as unsigned bytes [n, rows, cols] (idx3-ubyte), "
                   "found %s %s", images_path, tw_dtype_name (images->dtype), shape);
      return NULL;
    }
  g_autoptr (tw_tensor) labels = tw_idx_load (labels_path, error);
  if (labels == NULL)
    return NULL;
  if (labels->dtype == TW_F32 || labels->dtype == TW_F64 || labels->ndim != 1)
    {
      g_autofree char *shape = tw_shape_to_string (labels->ndim, labels->shape);
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                   "%s: expected integer labels [n] (idx1), found %s %s", labels_path,
                   tw_dtype_name (labels->dtype), shape);
      return NULL;
    }
  if (labels->shape[0] != images->shape[0])
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_MISMATCH,
                   "%s holds %" G_GINT64_FORMAT " images but %s holds %" G_GINT64_FORMAT
                   " labels", images_path, images->shape[0], labels_path, labels->shape[0]);
      return NULL;
    }
  int n_classes;
  g_autoptr (tw_tensor) y = tw_data_labels_to_i64 (labels, labels_path, &n_classes, error);
  if (y == NULL)
    return NULL;

  /* A table, not a division per pixel: v / 255.0f rounded once, so 255 maps
   * to exactly 1. */
  float scale[256];
  for (int v = 0; v < 256; v++)
    scale[v] = (float) v / 255.0f;
  int64_t shape[4] = { images->shape[0], 1, images->shape[1], images->shape[2] };
  g_autoptr (tw_tensor) x = tw_data_try_alloc (TW_F32, 4, shape, images_path, error);
  if (x == NULL)
    return NULL;
  const guint8 *src = tw_tensor_u8 (images);
  float *dst = tw_tensor_f32 (x);
  int64_t numel = tw_tensor_numel (x);
  for (int64_t i = 0; i < numel; i++)
    dst[i] = scale[src[i]];

  g_autofree char *name = g_path_get_basename (images_path);
  return tw_dataset_new (name, x, y, n_classes);
}
