/* dataset.c — the dataset object, splits, opening datasets by name or path. */
#define G_LOG_DOMAIN "twb-data"

#include "engine/data/data-private.h"
#include "engine/memory.h"
#include "engine/rng.h"

#include <math.h>
#include <string.h>

/* Debian's dataset-fashion-mnist installs the original gzipped IDX files here. */
#define SYSTEM_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"
#define SUBSET_NAME "fashion-mnist-subset"

/* Philox stream of the train/validation permutation ("split" in ASCII). */
#define SPLIT_STREAM G_GUINT64_CONSTANT (0x73706c6974)

G_DEFINE_QUARK (tw-data-error-quark, tw_data_error)

/* The two Fashion-MNIST names first, then the synthetic kinds (is_synthetic
 * relies on that order). */
static const char *const known_names[] = {
  "fashion-mnist", SUBSET_NAME, "spirals", "circles", "xor", "blobs", NULL,
};

const char *const *
tw_dataset_known_names (void)
{
  return known_names;
}

tw_dataset *
tw_dataset_new (const char *name, tw_tensor *x, tw_tensor *y, int n_classes)
{
  g_return_val_if_fail (x != NULL && y != NULL, NULL);
  g_return_val_if_fail (x->dtype == TW_F32 && x->ndim >= 1, NULL);
  g_return_val_if_fail (y->dtype == TW_I64 && y->ndim == 1, NULL);
  g_return_val_if_fail (x->shape[0] == y->shape[0], NULL);

  tw_dataset *d = g_new0 (tw_dataset, 1);
  d->name = g_strdup (name ? name : "dataset");
  d->x = tw_tensor_ref (x);
  d->y = tw_tensor_ref (y);
  d->n_classes = n_classes;
  return d;
}

void
tw_dataset_free (tw_dataset *d)
{
  if (d == NULL)
    return;
  g_free (d->name);
  g_clear_pointer (&d->x, tw_tensor_unref);
  g_clear_pointer (&d->y, tw_tensor_unref);
  g_free (d);
}

int64_t
tw_dataset_size (const tw_dataset *d)
{
  g_return_val_if_fail (d != NULL, 0);
  return d->x->shape[0];
}

tw_tensor *
tw_data_gather_rows (const tw_tensor *t, const int64_t *rows, int64_t count)
{
  g_assert (tw_tensor_is_contiguous (t) && t->ndim >= 1);
  int64_t shape[TW_MAX_DIMS];
  memcpy (shape, t->shape, sizeof shape);
  shape[0] = count;
  tw_tensor *out = tw_tensor_new (t->dtype, t->ndim, shape);

  int64_t n = t->shape[0];
  size_t row_bytes = n > 0 ? tw_tensor_nbytes (t) / (size_t) n : 0;
  const guint8 *src = tw_tensor_data (t);
  guint8 *dst = tw_tensor_data (out);
  for (int64_t i = 0; i < count; i++)
    {
      g_assert (rows[i] >= 0 && rows[i] < n);
      memcpy (dst + (size_t) i * row_bytes, src + (size_t) rows[i] * row_bytes, row_bytes);
    }
  return out;
}

tw_tensor *
tw_data_labels_to_i64 (const tw_tensor *t, const char *path, int *n_classes, GError **error)
{
  if (!(t->ndim == 1 || (t->ndim == 2 && t->shape[1] == 1)))
    {
      g_autofree char *shape = tw_shape_to_string (t->ndim, t->shape);
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                   "%s: labels must have shape [n] or [n, 1], found %s", path, shape);
      return NULL;
    }
  int64_t n = t->shape[0];
  g_autoptr (tw_tensor) y = tw_tensor_new (TW_I64, 1, (int64_t[]) { n });
  int64_t *py = tw_tensor_i64 (y);
  int64_t max = -1;
  for (int64_t i = 0; i < n; i++)
    {
      double v = tw_tensor_get_flat (t, i);
      /* G_MAXINT: n_classes = max + 1 must fit an int. */
      if (!(v >= 0 && v < G_MAXINT) || v != floor (v))
        {
          g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                       "%s: label %" G_GINT64_FORMAT " is %g, not a class index "
                       "(a whole number >= 0)", path, i, v);
          return NULL;
        }
      py[i] = (int64_t) v;
      max = MAX (max, py[i]);
    }
  *n_classes = (int) (max + 1);
  return g_steal_pointer (&y);
}

tw_tensor *
tw_data_try_alloc (tw_dtype dtype, int ndim, const int64_t *shape, const char *path,
                   GError **error)
{
  size_t nbytes;
  g_autofree char *s = tw_shape_to_string (ndim, shape);
  if (!tw_shape_nbytes_checked (dtype, ndim, shape, &nbytes))
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                   "%s: an array of shape %s is larger than 2^63 bytes", path, s);
      return NULL;
    }
  g_autoptr (GError) local = NULL;
  g_autofree char *what = g_strdup_printf ("%s: an array %s%s", path, tw_dtype_name (dtype), s);
  if (!tw_memory_check (nbytes, what, &local))
    {
      g_set_error_literal (error, TW_DATA_ERROR, TW_DATA_ERROR_IO, local->message);
      return NULL;
    }
  tw_tensor *t = tw_tensor_try_new (dtype, ndim, shape);
  if (t == NULL)
    g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_IO, "%s: out of memory for an array %s%s "
                 "(%zu bytes)", path, tw_dtype_name (dtype), s, nbytes);
  return t;
}

char *
tw_data_stem (const char *path, const char *ext)
{
  char *base = g_path_get_basename (path);
  if (ext != NULL && g_str_has_suffix (base, ext) && strlen (base) > strlen (ext))
    base[strlen (base) - strlen (ext)] = '\0';
  return base;
}

void
tw_dataset_split (const tw_dataset *d, double fraction, guint64 seed, tw_dataset **train,
                  tw_dataset **val)
{
  g_return_if_fail (d != NULL);
  g_return_if_fail (fraction >= 0.0 && fraction <= 1.0);

  int64_t n = tw_dataset_size (d);
  int64_t n_val = CLAMP ((int64_t) llround ((double) n * fraction), 0, n);
  g_autofree int64_t *perm = g_new (int64_t, MAX (n, 1));
  tw_rng_permutation (perm, n, seed, SPLIT_STREAM);

  g_autoptr (tw_tensor) x = tw_tensor_contiguous (d->x);
  g_autoptr (tw_tensor) y = tw_tensor_contiguous (d->y);
  struct
  {
    tw_dataset **out;
    const char *suffix;
    const int64_t *rows;
    int64_t count;
  } parts[2] = {
    { train, "train", perm, n - n_val },
    { val, "val", perm + (n - n_val), n_val },
  };
  for (int p = 0; p < 2; p++)
    {
      if (parts[p].out == NULL)
        continue;
      g_autoptr (tw_tensor) px = tw_data_gather_rows (x, parts[p].rows, parts[p].count);
      g_autoptr (tw_tensor) py = tw_data_gather_rows (y, parts[p].rows, parts[p].count);
      g_autofree char *name = g_strdup_printf ("%s/%s", d->name, parts[p].suffix);
      *parts[p].out = tw_dataset_new (name, px, py, d->n_classes);
    }
}

/* ---- opening by name or path ---- */

static const char *
assets_dir (void)
{
  const char *env = g_getenv ("TWB_ASSETS_DIR");
  if (env != NULL && *env != '\0')
    return env;
  return TWB_ASSETS_DIR;
}

/* The folder holding the subset's IDX files; newly allocated. */
static char *
subset_dir (void)
{
  const char *env = g_getenv ("TWB_DATA_DIR");
  if (env != NULL && *env != '\0')
    {
      char *nested = g_build_filename (env, SUBSET_NAME, NULL);
      if (g_file_test (nested, G_FILE_TEST_IS_DIR))
        return nested;
      g_free (nested);
      return g_strdup (env);
    }
  return g_build_filename (assets_dir (), "data", SUBSET_NAME, NULL);
}

/* dir/train-images-idx3-ubyte[.gz], or dir/train-images.idx3-ubyte[.gz] as
 * some mirrors name it; newly allocated, or NULL with an error. */
static char *
find_idx_file (const char *dir, const char *stem, const char *what, const char *idx,
               GError **error)
{
  g_autofree char *dashed = g_strdup_printf ("%s-%s-%s-ubyte", stem, what, idx);
  g_autofree char *dotted = g_strdup_printf ("%s-%s.%s-ubyte", stem, what, idx);
  const char *suffixes[] = { ".gz", "" };
  const char *names[] = { dashed, dotted };
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    for (guint j = 0; j < G_N_ELEMENTS (suffixes); j++)
      {
        g_autofree char *file = g_strconcat (names[i], suffixes[j], NULL);
        char *path = g_build_filename (dir, file, NULL);
        if (g_file_test (path, G_FILE_TEST_IS_REGULAR))
          return path;
        g_free (path);
      }
  g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_IO,
               "%s: no %s[.gz] (nor %s[.gz]) in this folder", dir, dashed, dotted);
  return NULL;
}

static tw_dataset *
open_idx_dir (const char *dir, tw_split split, const char *name, GError **error)
{
  const char *stem = split == TW_SPLIT_TEST ? "t10k" : "train";
  g_autofree char *images = find_idx_file (dir, stem, "images", "idx3", error);
  if (images == NULL)
    return NULL;
  g_autofree char *labels = find_idx_file (dir, stem, "labels", "idx1", error);
  if (labels == NULL)
    return NULL;
  tw_dataset *d = tw_dataset_load_idx (images, labels, error);
  if (d != NULL)
    {
      g_free (d->name);
      d->name = g_strdup (name);
    }
  return d;
}

static gboolean
is_synthetic (const char *spec)
{
  for (guint i = 2; known_names[i] != NULL; i++)
    if (strcmp (spec, known_names[i]) == 0)
      return TRUE;
  return FALSE;
}

/* The IDX files of dir that open_idx_dir reads for either split. */
static void
idx_dir_files (const char *dir, GPtrArray *out)
{
  const char *stems[] = { "train", "t10k" };
  for (guint i = 0; i < G_N_ELEMENTS (stems); i++)
    {
      char *images = find_idx_file (dir, stems[i], "images", "idx3", NULL);
      char *labels = find_idx_file (dir, stems[i], "labels", "idx1", NULL);
      if (images)
        g_ptr_array_add (out, images);
      if (labels)
        g_ptr_array_add (out, labels);
    }
}

char **
tw_dataset_files (const char *spec)
{
  GPtrArray *out = g_ptr_array_new ();
  if (spec == NULL || *spec == '\0' || is_synthetic (spec))
    ;
  else if (strcmp (spec, "fashion-mnist") == 0
           && g_file_test (SYSTEM_FASHION_MNIST_DIR, G_FILE_TEST_IS_DIR))
    idx_dir_files (SYSTEM_FASHION_MNIST_DIR, out);
  else if (strcmp (spec, "fashion-mnist") == 0 || strcmp (spec, SUBSET_NAME) == 0)
    {
      g_autofree char *dir = subset_dir ();
      idx_dir_files (dir, out);
    }
  else
    {
      g_autofree char *lower = g_ascii_strdown (spec, -1);
      if (g_str_has_suffix (lower, ".csv"))
        g_ptr_array_add (out, g_strdup (spec));
      else if (g_str_has_suffix (lower, ".npy"))
        {
          g_ptr_array_add (out, g_strdup (spec));
          g_ptr_array_add (out, tw_data_npy_labels_path (spec));
        }
      else if (g_file_test (spec, G_FILE_TEST_IS_DIR))
        idx_dir_files (spec, out);
    }
  g_ptr_array_add (out, NULL);
  return (char **) g_ptr_array_free (out, FALSE);
}

tw_dataset *
tw_dataset_open (const char *spec, tw_split split, guint64 seed, GError **error)
{
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (spec == NULL || *spec == '\0')
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_UNKNOWN, "no dataset given");
      return NULL;
    }
  if (strcmp (spec, "fashion-mnist") == 0
      && g_file_test (SYSTEM_FASHION_MNIST_DIR, G_FILE_TEST_IS_DIR))
    return open_idx_dir (SYSTEM_FASHION_MNIST_DIR, split, spec, error);
  if (strcmp (spec, "fashion-mnist") == 0 || strcmp (spec, SUBSET_NAME) == 0)
    {
      g_autofree char *dir = subset_dir ();
      return open_idx_dir (dir, split, SUBSET_NAME, error);
    }
  if (is_synthetic (spec))
    return tw_dataset_synthetic_for_split (spec, split, 0, seed, -1.0, error);

  g_autofree char *lower = g_ascii_strdown (spec, -1);
  if (g_str_has_suffix (lower, ".csv"))
    return tw_dataset_load_csv (spec, -1, error);
  if (g_str_has_suffix (lower, ".npy"))
    return tw_dataset_load_npy (spec, NULL, error);
  if (g_file_test (spec, G_FILE_TEST_IS_DIR))
    {
      g_autofree char *name = g_path_get_basename (spec);
      return open_idx_dir (spec, split, name, error);
    }

  g_autofree char *list = g_strjoinv (", ", (char **) known_names);
  g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_UNKNOWN,
               "unknown dataset “%s”: expected one of %s, a folder of IDX files, "
               "a .csv file or a .npy file", spec, list);
  return NULL;
}
