/* npy.c — NumPy .npy files (format versions 1.0, 2.0 and 3.0).
 *
 * Layout (numpy/lib/format.py): the magic "\x93NUMPY", major and minor
 * version bytes, the header length (u16 little-endian in 1.0, u32 in 2.0 and
 * 3.0), then the header — a Python dict literal such as
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and a newline — then the raw elements. */
#define G_LOG_DOMAIN "twb-data"

#include "engine/data/data-private.h"
#include "engine/fileutil.h"
#include "engine/memory.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
/* numpy pads the header so the data starts on a 64-byte boundary
 * (ARRAY_ALIGN in numpy/lib/format.py). */
#define NPY_ALIGN 64

typedef struct
{
  const char *p, *end;
} cursor;

static void
skip_space (cursor *c)
{
  while (c->p < c->end && g_ascii_isspace (*c->p))
    c->p++;
}

static gboolean
accept (cursor *c, char ch)
{
  skip_space (c);
  if (c->p < c->end && *c->p == ch)
    {
      c->p++;
      return TRUE;
    }
  return FALSE;
}

/* A Python string literal in single or double quotes (no escapes: numpy's
 * keys and dtype strings have none); newly allocated, or NULL. */
static char *
parse_string (cursor *c)
{
  skip_space (c);
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
    return NULL;
  char quote = *c->p++;
  const char *start = c->p;
  while (c->p < c->end && *c->p != quote)
    c->p++;
  if (c->p >= c->end)
    return NULL;
  return g_strndup (start, c->p++ - start);
}

static gboolean
parse_bool (cursor *c, gboolean *out)
{
  skip_space (c);
  gsize left = c->end - c->p;
  if (left >= 4 && strncmp (c->p, "True", 4) == 0)
    {
      c->p += 4;
      *out = TRUE;
      return TRUE;
    }
  if (left >= 5 && strncmp (c->p, "False", 5) == 0)
    {
      c->p += 5;
      *out = FALSE;
      return TRUE;
    }
  return FALSE;
}

/* A tuple of non-negative integers: (), (5,), (2, 3). */
static gboolean
parse_shape (cursor *c, int *ndim, int64_t *shape)
{
  if (!accept (c, '('))
    return FALSE;
  *ndim = 0;
  while (!accept (c, ')'))
    {
      skip_space (c);
      if (*ndim == TW_MAX_DIMS || c->p >= c->end || !g_ascii_isdigit (*c->p))
        return FALSE;
      g_autofree char *digits = NULL;
      const char *start = c->p;
      while (c->p < c->end && g_ascii_isdigit (*c->p))
        c->p++;
      digits = g_strndup (start, c->p - start);
      guint64 v;
      if (!g_ascii_string_to_unsigned (digits, 10, 0, G_MAXINT64, &v, NULL))
        return FALSE;
      shape[(*ndim)++] = (int64_t) v;
      if (!accept (c, ',') && !(skip_space (c), c->p < c->end && *c->p == ')'))
        return FALSE;
    }
  return TRUE;
}

typedef struct
{
  char *descr;
  gboolean fortran_order;
  int ndim;
  int64_t shape[TW_MAX_DIMS];
  gboolean has_fortran, has_shape;
} npy_header;

static gboolean
parse_header (const char *text, gsize len, npy_header *h, const char *filename, GError **error)
{
  cursor c = { text, text + len };
  const char *what = "a dict";
  if (!accept (&c, '{'))
    goto bad;
  while (!accept (&c, '}'))
    {
      what = "a quoted key";
      g_autofree char *key = parse_string (&c);
      if (key == NULL || !accept (&c, ':'))
        goto bad;
      if (strcmp (key, "descr") == 0)
        {
          skip_space (&c);
          if (c.p < c.end && *c.p == '[')
            {
              g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                           "%s: structured arrays (a list as descr) are not supported",
                           filename);
              return FALSE;
            }
          what = "a dtype string for 'descr'";
          g_free (h->descr);
          if ((h->descr = parse_string (&c)) == NULL)
            goto bad;
        }
      else if (strcmp (key, "fortran_order") == 0)
        {
          what = "True or False for 'fortran_order'";
          if (!(h->has_fortran = parse_bool (&c, &h->fortran_order)))
            goto bad;
        }
      else if (strcmp (key, "shape") == 0)
        {
          what = "a tuple of at most 6 sizes for 'shape'";
          if (!(h->has_shape = parse_shape (&c, &h->ndim, h->shape)))
            goto bad;
        }
      else
        {
          g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                       "%s: unexpected key '%s' in the .npy header", filename, key);
          return FALSE;
        }
      what = "',' or '}'";
      if (!accept (&c, ',') && !(skip_space (&c), c.p < c.end && *c.p == '}'))
        goto bad;
    }
  if (h->descr == NULL || !h->has_fortran || !h->has_shape)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                   "%s: the .npy header lacks '%s'", filename,
                   h->descr == NULL ? "descr" : !h->has_fortran ? "fortran_order" : "shape");
      return FALSE;
    }
  return TRUE;

bad:
  {
    /* The header as it reads, without its padding; 200 bytes at most. */
    g_autofree char *shown = g_strstrip (g_strndup (text, MIN (len, 200)));
    g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                 "%s: malformed .npy header at offset %d: expected %s in %s", filename,
                 (int) (c.p - text), what, shown);
  }
  return FALSE;
}

/* '<f4' → TW_F32 and so on.  *is_bool for '|b1'. */
static gboolean
dtype_from_descr (const char *descr, tw_dtype *dtype, const char *filename, GError **error)
{
  static const struct
  {
    const char *code;
    tw_dtype dtype;
  } table[] = {
    { "f4", TW_F32 }, { "f8", TW_F64 }, { "i4", TW_I32 },
    { "i8", TW_I64 }, { "u1", TW_U8 }, { "b1", TW_U8 },
  };
  char order = descr[0];
  const char *code = descr + (order == '<' || order == '>' || order == '|' || order == '=');
  for (guint i = 0; i < G_N_ELEMENTS (table); i++)
    if (strcmp (code, table[i].code) == 0)
      {
        /* One-byte types have no byte order; '=' is native, little-endian
         * on every machine we build for. */
        gboolean one_byte = tw_dtype_size (table[i].dtype) == 1;
        if (order == '>' && !one_byte)
          {
            g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                         "%s: big-endian data ('%s') is not supported; save it with "
                         "arr.astype('<%s')", filename, descr, code);
            return FALSE;
          }
        *dtype = table[i].dtype;
        return TRUE;
      }
  g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
               "%s: unsupported dtype '%s' (supported: <f4 <f8 <i4 <i8 |u1 |b1)", filename,
               descr);
  return FALSE;
}

tw_tensor *
tw_npy_load_from_data (const guint8 *data, gsize len, const char *filename, GError **error)
{
  g_return_val_if_fail (data != NULL || len == 0, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);
  if (filename == NULL)
    filename = "(memory)";

  if (len < NPY_MAGIC_LEN + 2 || memcmp (data, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                   "%s: not a .npy file (it does not start with \\x93NUMPY)", filename);
      return NULL;
    }
  guint8 major = data[6], minor = data[7];
  gsize len_size = major == 1 ? 2 : 4;
  if (major < 1 || major > 3 || minor != 0)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                   "%s: unsupported .npy format version %u.%u (1.0, 2.0 and 3.0 are known)",
                   filename, major, minor);
      return NULL;
    }
  gsize start = NPY_MAGIC_LEN + 2 + len_size;
  if (len < start)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                   "%s: truncated .npy header", filename);
      return NULL;
    }
  gsize header_len = data[8] | (data[9] << 8);
  if (len_size == 4)
    header_len |= ((gsize) data[10] << 16) | ((gsize) data[11] << 24);
  if (header_len > len - start)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                   "%s: truncated .npy header (%zu bytes announced, %zu present)", filename,
                   header_len, len - start);
      return NULL;
    }

  npy_header h = { 0 };
  gboolean ok = parse_header ((const char *) data + start, header_len, &h, filename, error);
  g_autofree char *descr = h.descr;
  tw_dtype dtype;
  if (!ok || !dtype_from_descr (descr, &dtype, filename, error))
    return NULL;
  if (h.fortran_order)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                   "%s: Fortran-order (column-major) arrays are not supported; save it with "
                   "np.save(path, np.ascontiguousarray(arr))", filename);
      return NULL;
    }

  size_t need;
  if (!tw_shape_nbytes_checked (dtype, h.ndim, h.shape, &need))
    {
      g_autofree char *shape = tw_shape_to_string (h.ndim, h.shape);
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                   "%s: shape %s of '%s' is larger than 2^63 bytes", filename, shape, descr);
      return NULL;
    }
  gsize data_start = start + header_len;
  if (need > len - data_start)
    {
      g_autofree char *shape = tw_shape_to_string (h.ndim, h.shape);
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                   "%s: truncated: shape %s of '%s' needs %zu bytes of data, "
                   "found %zu", filename, shape, descr, need, len - data_start);
      return NULL;
    }
  g_autoptr (GError) oom = NULL;
  tw_tensor *t = tw_memory_check (need, "its array", &oom)
                   ? tw_tensor_try_new (dtype, h.ndim, h.shape) : NULL;
  if (t == NULL)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_IO, "%s: %s", filename,
                   oom ? oom->message : "out of memory for its array");
      return NULL;
    }
  if (need > 0)
    memcpy (tw_tensor_data (t), data + data_start, need);
#if G_BYTE_ORDER == G_BIG_ENDIAN
  if (tw_dtype_size (dtype) == 4)
    for (int64_t i = 0, n = tw_tensor_numel (t); i < n; i++)
      ((guint32 *) tw_tensor_data (t))[i] = GUINT32_FROM_LE (((guint32 *) tw_tensor_data (t))[i]);
  else if (tw_dtype_size (dtype) == 8)
    for (int64_t i = 0, n = tw_tensor_numel (t); i < n; i++)
      ((guint64 *) tw_tensor_data (t))[i] = GUINT64_FROM_LE (((guint64 *) tw_tensor_data (t))[i]);
#endif
  return t;
}

tw_tensor *
tw_npy_load (const char *path, GError **error)
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
  static const guint8 empty[1] = { 0 };
  const guint8 *data = (const guint8 *) g_mapped_file_get_contents (file);
  return tw_npy_load_from_data (data ? data : empty, data ? g_mapped_file_get_length (file) : 0,
                                path, error);
}

gboolean
tw_npy_save (const char *path, const tw_tensor *t, GError **error)
{
  g_return_val_if_fail (path != NULL && t != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  static const char *const descrs[TW_N_DTYPES] = {
    [TW_F32] = "<f4", [TW_F64] = "<f8", [TW_I32] = "<i4", [TW_I64] = "<i8", [TW_U8] = "|u1",
  };
  g_autoptr (GString) header = g_string_new (NULL);
  g_string_append_printf (header, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                          descrs[t->dtype]);
  for (int i = 0; i < t->ndim; i++)
    g_string_append_printf (header, "%s%" G_GINT64_FORMAT, i ? ", " : "", t->shape[i]);
  g_string_append (header, t->ndim == 1 ? ",), }" : "), }");
  /* Spaces and a final newline up to the alignment, as numpy writes it. */
  gsize total = NPY_MAGIC_LEN + 4 + header->len + 1;
  gsize padded = (total + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
  for (gsize i = total; i < padded; i++)
    g_string_append_c (header, ' ');
  g_string_append_c (header, '\n');
  guint8 prefix[NPY_MAGIC_LEN + 4] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                                       (guint8) (header->len & 0xff),
                                       (guint8) (header->len >> 8) };

#if G_BYTE_ORDER == G_BIG_ENDIAN
  g_autoptr (tw_tensor) c = tw_tensor_clone (t);
  if (tw_dtype_size (c->dtype) == 4)
    for (int64_t i = 0, n = tw_tensor_numel (c); i < n; i++)
      ((guint32 *) tw_tensor_data (c))[i] = GUINT32_TO_LE (((guint32 *) tw_tensor_data (c))[i]);
  else if (tw_dtype_size (c->dtype) == 8)
    for (int64_t i = 0, n = tw_tensor_numel (c); i < n; i++)
      ((guint64 *) tw_tensor_data (c))[i] = GUINT64_TO_LE (((guint64 *) tw_tensor_data (c))[i]);
#else
  /* Our storage is already little-endian; copy only strided views. */
  g_autoptr (tw_tensor) c = tw_tensor_is_contiguous (t) ? tw_tensor_ref ((tw_tensor *) t)
                                                        : tw_tensor_clone (t);
#endif

  /* Written next to the target and renamed over it, so a crash never leaves
   * a half-written file under the real name (engine/fileutil.h). */
  g_autoptr (GError) local = NULL;
  g_autoptr (tw_save) save = tw_save_begin (path, &local);
  if (save == NULL || !tw_save_write (save, prefix, sizeof prefix, &local)
      || !tw_save_write (save, header->str, header->len, &local)
      || !tw_save_write (save, tw_tensor_data (c), tw_tensor_nbytes (c), &local)
      || !tw_save_commit (g_steal_pointer (&save), &local))
    {
      g_set_error_literal (error, TW_DATA_ERROR, TW_DATA_ERROR_IO, local->message);
      return FALSE;
    }
  return TRUE;
}

char *
tw_data_npy_labels_path (const char *features_path)
{
  gsize n = strlen (features_path);
  gboolean ext = n >= 4 && g_ascii_strcasecmp (features_path + n - 4, ".npy") == 0;
  return g_strdup_printf ("%.*s_labels.npy", (int) (ext ? n - 4 : n), features_path);
}

tw_dataset *
tw_dataset_load_npy (const char *features_path, const char *labels_path, GError **error)
{
  g_return_val_if_fail (features_path != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  g_autofree char *derived = NULL;
  if (labels_path == NULL)
    labels_path = derived = tw_data_npy_labels_path (features_path);

  g_autoptr (tw_tensor) features = tw_npy_load (features_path, error);
  if (features == NULL)
    return NULL;
  if (features->ndim == 0)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                   "%s: features must have a sample dimension, found a scalar", features_path);
      return NULL;
    }
  g_autoptr (tw_tensor) labels = tw_npy_load (labels_path, error);
  if (labels == NULL)
    return NULL;
  if (labels->ndim >= 1 && labels->shape[0] != features->shape[0])
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_MISMATCH,
                   "%s holds %" G_GINT64_FORMAT " samples but %s holds %" G_GINT64_FORMAT
                   " labels", features_path, features->shape[0], labels_path,
                   labels->shape[0]);
      return NULL;
    }
  int n_classes;
  g_autoptr (tw_tensor) y = tw_data_labels_to_i64 (labels, labels_path, &n_classes, error);
  if (y == NULL)
    return NULL;

  g_autoptr (tw_tensor) x = tw_tensor_cast (features, TW_F32);
  if (x->ndim == 1)
    {
      tw_tensor *r = tw_tensor_reshape (x, 2, (int64_t[]) { x->shape[0], 1 });
      tw_tensor_unref (x);
      x = r;
    }
  g_autofree char *name = tw_data_stem (features_path, ".npy");
  return tw_dataset_new (name, x, y, n_classes);
}
