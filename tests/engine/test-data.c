/* test-data.c — the data module's tests: shared helpers, opening datasets by
 * name, and main.  IDX, CSV and .npy are in test-data-formats.c; synthetic
 * sets, splits and batching in test-data-sets.c. */
#include "test-data.h"

#include <glib/gstdio.h>
#include <string.h>
#include <zlib.h>

char *td_tmpdir;

/* ---- helpers ---- */

/* td_tmpdir/name with data written to it; the caller frees the path. */
char *
td_write_file (const char *name, const void *data, gsize len)
{
  char *path = g_build_filename (td_tmpdir, name, NULL);
  g_autoptr (GError) err = NULL;
  g_assert_true (g_file_set_contents (path, data, (gssize) len, &err));
  g_assert_no_error (err);
  return path;
}

char *
td_write_text (const char *name, const char *text)
{
  return td_write_file (name, text, strlen (text));
}

GBytes *
td_gzip_bytes (const void *data, gsize len)
{
  z_stream z = { 0 };
  /* 16 + MAX_WBITS: a gzip wrapper, as gzip(1) writes. */
  g_assert_cmpint (deflateInit2 (&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), ==,
                   Z_OK);
  gsize cap = deflateBound (&z, (uLong) len);
  guint8 *out = g_malloc (cap);
  z.next_in = (Bytef *) data;
  z.avail_in = (uInt) len;
  z.next_out = out;
  z.avail_out = (uInt) cap;
  g_assert_cmpint (deflate (&z, Z_FINISH), ==, Z_STREAM_END);
  gsize n = z.total_out;
  deflateEnd (&z);
  return g_bytes_new_take (out, n);
}

/* An IDX file: 00 00 type ndim, big-endian dims, then payload. */
GByteArray *
td_idx_bytes (guint8 type, int ndim, const guint32 *dims, const void *payload, gsize len)
{
  GByteArray *a = g_byte_array_new ();
  guint8 head[4] = { 0, 0, type, (guint8) ndim };
  g_byte_array_append (a, head, 4);
  for (int i = 0; i < ndim; i++)
    {
      guint32 be = GUINT32_TO_BE (dims[i]);
      g_byte_array_append (a, (guint8 *) &be, 4);
    }
  g_byte_array_append (a, payload, (guint) len);
  return a;
}

/* Writes name (raw) or name.gz (gzipped) holding an IDX file. */
char *
td_write_idx (const char *name, gboolean gz, guint8 type, int ndim, const guint32 *dims,
           const void *payload, gsize len)
{
  g_autoptr (GByteArray) a = td_idx_bytes (type, ndim, dims, payload, len);
  if (!gz)
    return td_write_file (name, a->data, a->len);
  g_autoptr (GBytes) z = td_gzip_bytes (a->data, a->len);
  g_autofree char *gzname = g_strconcat (name, ".gz", NULL);
  return td_write_file (gzname, g_bytes_get_data (z, NULL), g_bytes_get_size (z));
}

/* Images [n, 2, 3] with pixel (i, j) = (10 * i + j) * 5 (so 255 appears
 * when n > 5) and labels i % 3. */
void
td_write_tiny_idx_pair (const char *dir_name, const char *stem, guint32 n, gboolean gz,
                     char **images, char **labels)
{
  g_autofree guint8 *pix = g_malloc (n * 6);
  g_autofree guint8 *lab = g_malloc (n);
  for (guint32 i = 0; i < n; i++)
    {
      for (int j = 0; j < 6; j++)
        pix[i * 6 + j] = (guint8) MIN (255, (10 * i + j) * 5);
      lab[i] = (guint8) (i % 3);
    }
  g_autofree char *img_name = g_build_filename (dir_name, stem, NULL);
  g_autofree char *img = g_strconcat (img_name, "-images-idx3-ubyte", NULL);
  g_autofree char *lab_name = g_strconcat (img_name, "-labels-idx1-ubyte", NULL);
  char *ip = td_write_idx (img, gz, 0x08, 3, (guint32[]) { n, 2, 3 }, pix, n * 6);
  char *lp = td_write_idx (lab_name, gz, 0x08, 1, (guint32[]) { n }, lab, n);
  if (images)
    *images = ip;
  else
    g_free (ip);
  if (labels)
    *labels = lp;
  else
    g_free (lp);
}

void
td_assert_error (const GError *err, int code, const char *a, const char *b)
{
  g_assert_error (err, TW_DATA_ERROR, code);
  g_test_message ("%s", err->message);
  if (a)
    g_assert_nonnull (strstr (err->message, a));
  if (b)
    g_assert_nonnull (strstr (err->message, b));
}

static void
remove_tree (const char *path)
{
  if (g_file_test (path, G_FILE_TEST_IS_DIR))
    {
      g_autoptr (GDir) dir = g_dir_open (path, 0, NULL);
      const char *name;
      while (dir && (name = g_dir_read_name (dir)) != NULL)
        {
          g_autofree char *child = g_build_filename (path, name, NULL);
          remove_tree (child);
        }
      g_rmdir (path);
    }
  else
    g_unlink (path);
}

/* ---- opening by name ---- */

static void
test_open_unknown (void)
{
  g_autoptr (GError) err = NULL;
  g_assert_null (tw_dataset_open ("imagenet", TW_SPLIT_TRAIN, 0, &err));
  td_assert_error (err, TW_DATA_ERROR_UNKNOWN, "imagenet", "fashion-mnist");
  for (const char *const *n = tw_dataset_known_names (); *n; n++)
    g_assert_nonnull (strstr (err->message, *n));
}

static void
test_open_idx_dir (void)
{
  g_autofree char *dir = g_build_filename (td_tmpdir, "idxdir", NULL);
  g_assert_cmpint (g_mkdir (dir, 0755), ==, 0);
  td_write_tiny_idx_pair ("idxdir", "train", 9, TRUE, NULL, NULL);
  td_write_tiny_idx_pair ("idxdir", "t10k", 4, FALSE, NULL, NULL);
  g_autoptr (GError) err = NULL;
  g_autoptr (tw_dataset) tr = tw_dataset_open (dir, TW_SPLIT_TRAIN, 0, &err);
  g_assert_no_error (err);
  g_autoptr (tw_dataset) te = tw_dataset_open (dir, TW_SPLIT_TEST, 0, &err);
  g_assert_no_error (err);
  g_assert_cmpstr (tr->name, ==, "idxdir");
  g_assert_cmpint (tw_dataset_size (tr), ==, 9);
  g_assert_cmpint (tw_dataset_size (te), ==, 4);

  /* TWB_DATA_DIR stands in for the bundled subset. */
  g_setenv ("TWB_DATA_DIR", dir, TRUE);
  g_autoptr (tw_dataset) sub = tw_dataset_open ("fashion-mnist-subset", TW_SPLIT_TEST, 0, &err);
  g_unsetenv ("TWB_DATA_DIR");
  g_assert_no_error (err);
  g_assert_cmpint (tw_dataset_size (sub), ==, 4);

  g_assert_null (tw_dataset_open (td_tmpdir, TW_SPLIT_TRAIN, 0, &err));
  td_assert_error (err, TW_DATA_ERROR_IO, td_tmpdir, "train-images-idx3-ubyte");
  g_assert_nonnull (strstr (err->message, "train-images.idx3-ubyte"));

  /* The dotted names some mirrors use, raw. */
  g_autofree char *dotted = g_build_filename (td_tmpdir, "dotted", NULL);
  g_assert_cmpint (g_mkdir (dotted, 0755), ==, 0);
  g_autofree char *img = NULL, *lab = NULL;
  td_write_tiny_idx_pair ("dotted", "t10k", 2, FALSE, &img, &lab);
  g_autofree char *img2 = g_build_filename (dotted, "t10k-images.idx3-ubyte", NULL);
  g_autofree char *lab2 = g_build_filename (dotted, "t10k-labels.idx1-ubyte", NULL);
  g_assert_cmpint (g_rename (img, img2), ==, 0);
  g_assert_cmpint (g_rename (lab, lab2), ==, 0);
  g_clear_error (&err);
  g_autoptr (tw_dataset) dd = tw_dataset_open (dotted, TW_SPLIT_TEST, 0, &err);
  g_assert_no_error (err);
  g_assert_cmpint (tw_dataset_size (dd), ==, 2);
}

static void
check_fashion (const tw_dataset *d, int64_t n)
{
  g_assert_cmpint (tw_dataset_size (d), ==, n);
  g_assert_cmpint (d->x->ndim, ==, 4);
  g_assert_cmpint (d->x->shape[1], ==, 1);
  g_assert_cmpint (d->x->shape[2], ==, 28);
  g_assert_cmpint (d->x->shape[3], ==, 28);
  g_assert_cmpint (d->n_classes, ==, 10);
  int64_t count[10] = { 0 };
  for (int64_t i = 0; i < n; i++)
    {
      int64_t c = tw_tensor_i64 (d->y)[i];
      g_assert_cmpint (c, >=, 0);
      g_assert_cmpint (c, <=, 9);
      count[c]++;
    }
  /* Every class is present (the subset's rarest, sandals in t10k, has 87). */
  for (int c = 0; c < 10; c++)
    g_assert_cmpint (count[c], >, n / 20);
  float lo = 1, hi = 0;
  const float *x = tw_tensor_f32 (d->x);
  for (int64_t i = 0; i < 28 * 28 * 10; i++)
    {
      lo = MIN (lo, x[i]);
      hi = MAX (hi, x[i]);
    }
  g_assert_cmpfloat (lo, ==, 0.0f);
  g_assert_cmpfloat (hi, ==, 1.0f);
}

static void
test_open_subset (void)
{
  g_autoptr (GError) err = NULL;
  g_autoptr (tw_dataset) tr = tw_dataset_open ("fashion-mnist-subset", TW_SPLIT_TRAIN, 0, &err);
  g_assert_no_error (err);
  g_assert_cmpstr (tr->name, ==, "fashion-mnist-subset");
  check_fashion (tr, 4000);
  g_autoptr (tw_dataset) te = tw_dataset_open ("fashion-mnist-subset", TW_SPLIT_TEST, 0, &err);
  g_assert_no_error (err);
  check_fashion (te, 1000);

  /* A batch of 64 images, as a training step gathers it. */
  g_autoptr (tw_batcher) b = tw_batcher_new (tr, 64, TRUE, 1, FALSE);
  g_assert_cmpint (tw_batcher_batches_per_epoch (b), ==, 63);
  g_autoptr (tw_tensor) x = NULL;
  g_autoptr (tw_tensor) y = NULL;
  g_assert_true (tw_batcher_next (b, &x, &y));
  g_assert_cmpint (x->ndim, ==, 4);
  g_assert_cmpint (x->shape[0], ==, 64);
  g_assert_cmpint (x->shape[3], ==, 28);
  g_assert_cmpint (y->shape[0], ==, 64);
}

static void
test_open_fashion_mnist (void)
{
  if (!g_file_test ("/usr/share/datasets/fashion-mnist", G_FILE_TEST_IS_DIR))
    {
      g_test_skip ("/usr/share/datasets/fashion-mnist is not installed "
                   "(Debian package dataset-fashion-mnist)");
      return;
    }
  g_autoptr (GError) err = NULL;
  g_autoptr (tw_dataset) te = tw_dataset_open ("fashion-mnist", TW_SPLIT_TEST, 0, &err);
  g_assert_no_error (err);
  g_assert_cmpstr (te->name, ==, "fashion-mnist");
  check_fashion (te, 10000);
  g_autoptr (tw_dataset) tr = tw_dataset_open ("fashion-mnist", TW_SPLIT_TRAIN, 0, &err);
  g_assert_no_error (err);
  check_fashion (tr, 60000);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_autoptr (GError) err = NULL;
  td_tmpdir = g_dir_make_tmp ("twb-data-XXXXXX", &err);
  g_assert_no_error (err);

  td_register_formats ();
  td_register_sets ();
  g_test_add_func ("/engine/data/open/unknown", test_open_unknown);
  g_test_add_func ("/engine/data/open/idx-dir", test_open_idx_dir);
  g_test_add_func ("/engine/data/open/subset", test_open_subset);
  g_test_add_func ("/engine/data/open/fashion-mnist", test_open_fashion_mnist);

  int ret = g_test_run ();
  remove_tree (td_tmpdir);
  g_free (td_tmpdir);
  return ret;
}
