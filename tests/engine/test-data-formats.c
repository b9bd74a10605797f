/* test-data-formats.c — IDX (raw and gzipped), CSV and .npy files. */
#include "test-data.h"

#include <string.h>

/* ---- IDX ---- */

static void
test_idx_types (void)
{
  /* Raw files of each element type; big-endian payloads. */
  g_autofree char *u8 = td_write_idx ("u8.idx", FALSE, 0x08, 2, (guint32[]) { 2, 2 },
                                   (guint8[]) { 0, 1, 254, 255 }, 4);
  g_autofree char *i8 = td_write_idx ("i8.idx", FALSE, 0x09, 1, (guint32[]) { 3 },
                                   (guint8[]) { 0x80, 0xff, 0x7f }, 3);
  g_autofree char *i16 = td_write_idx ("i16.idx", FALSE, 0x0B, 1, (guint32[]) { 2 },
                                    (guint8[]) { 0x80, 0x00, 0x01, 0x02 }, 4);
  g_autofree char *i32 = td_write_idx ("i32.idx", FALSE, 0x0C, 1, (guint32[]) { 1 },
                                    (guint8[]) { 0xff, 0xff, 0xff, 0xfe }, 4);
  /* 1.5f = 0x3fc00000; 0.25 (double) = 0x3fd0000000000000. */
  g_autofree char *f32 = td_write_idx ("f32.idx", FALSE, 0x0D, 1, (guint32[]) { 1 },
                                    (guint8[]) { 0x3f, 0xc0, 0, 0 }, 4);
  g_autofree char *f64 = td_write_idx ("f64.idx", FALSE, 0x0E, 1, (guint32[]) { 1 },
                                    (guint8[]) { 0x3f, 0xd0, 0, 0, 0, 0, 0, 0 }, 8);
  g_autoptr (GError) err = NULL;

  g_autoptr (tw_tensor) a = tw_idx_load (u8, &err);
  g_assert_no_error (err);
  g_assert_cmpint (a->dtype, ==, TW_U8);
  g_assert_cmpint (a->ndim, ==, 2);
  g_assert_cmpint (tw_tensor_u8 (a)[2], ==, 254);

  g_autoptr (tw_tensor) b = tw_idx_load (i8, &err);
  g_assert_no_error (err);
  g_assert_cmpint (b->dtype, ==, TW_I32);
  g_assert_cmpint (tw_tensor_i32 (b)[0], ==, -128);
  g_assert_cmpint (tw_tensor_i32 (b)[1], ==, -1);
  g_assert_cmpint (tw_tensor_i32 (b)[2], ==, 127);

  g_autoptr (tw_tensor) c = tw_idx_load (i16, &err);
  g_assert_no_error (err);
  g_assert_cmpint (tw_tensor_i32 (c)[0], ==, -32768);
  g_assert_cmpint (tw_tensor_i32 (c)[1], ==, 0x0102);

  g_autoptr (tw_tensor) d = tw_idx_load (i32, &err);
  g_assert_no_error (err);
  g_assert_cmpint (tw_tensor_i32 (d)[0], ==, -2);

  g_autoptr (tw_tensor) e = tw_idx_load (f32, &err);
  g_assert_no_error (err);
  g_assert_cmpfloat (tw_tensor_f32 (e)[0], ==, 1.5f);

  g_autoptr (tw_tensor) f = tw_idx_load (f64, &err);
  g_assert_no_error (err);
  g_assert_cmpfloat (tw_tensor_f64 (f)[0], ==, 0.25);
}

static void
test_idx_dataset (void)
{
  /* Images gzipped, labels raw: gzip is detected per file by its magic. */
  g_autofree char *raw_images = NULL, *gz_images = NULL, *labels = NULL;
  td_write_tiny_idx_pair ("", "ds-raw", 7, FALSE, &raw_images, &labels);
  td_write_tiny_idx_pair ("", "ds-gz", 7, TRUE, &gz_images, NULL);
  g_assert_true (g_str_has_suffix (gz_images, ".gz"));

  for (int k = 0; k < 2; k++)
    {
      g_autoptr (GError) err = NULL;
      g_autoptr (tw_dataset) d = tw_dataset_load_idx (k ? gz_images : raw_images, labels, &err);
      g_assert_no_error (err);
      g_assert_cmpint (tw_dataset_size (d), ==, 7);
      g_assert_cmpint (d->x->ndim, ==, 4);
      g_assert_cmpint (d->x->shape[1], ==, 1);
      g_assert_cmpint (d->x->shape[2], ==, 2);
      g_assert_cmpint (d->x->shape[3], ==, 3);
      g_assert_cmpint (d->n_classes, ==, 3);
      const float *x = tw_tensor_f32 (d->x);
      /* Image 1, pixel 2: (10 + 2) * 5 = 60 → 60 / 255. */
      g_assert_cmpfloat (x[6 + 2], ==, 60.0f / 255.0f);
      /* Image 6, pixel 0: 300 clamped to 255 → exactly 1. */
      g_assert_cmpfloat (x[36], ==, 1.0f);
      g_assert_cmpint (tw_tensor_i64 (d->y)[5], ==, 2);
    }
}

static void
test_idx_gzip_members (void)
{
  /* Two gzip members back to back (cat a.gz b.gz) form one stream. */
  g_autoptr (GByteArray) a = td_idx_bytes (0x08, 1, (guint32[]) { 6 }, (guint8[]) { 1, 2, 3 }, 3);
  g_autoptr (GBytes) z1 = td_gzip_bytes (a->data, a->len);
  g_autoptr (GBytes) z2 = td_gzip_bytes ((guint8[]) { 4, 5, 6 }, 3);
  g_autoptr (GByteArray) both = g_byte_array_new ();
  g_byte_array_append (both, g_bytes_get_data (z1, NULL), (guint) g_bytes_get_size (z1));
  g_byte_array_append (both, g_bytes_get_data (z2, NULL), (guint) g_bytes_get_size (z2));
  g_autofree char *path = td_write_file ("members.gz", both->data, both->len);
  g_autoptr (GError) err = NULL;
  g_autoptr (tw_tensor) t = tw_idx_load (path, &err);
  g_assert_no_error (err);
  g_assert_cmpint (t->shape[0], ==, 6);
  g_assert_cmpint (tw_tensor_u8 (t)[5], ==, 6);
}

static void
test_idx_wrong_magic (void)
{
  g_autofree char *path = td_write_text ("magic.idx", "PK\x03\x04 this is a zip file");
  g_autoptr (GError) err = NULL;
  g_assert_null (tw_idx_load (path, &err));
  td_assert_error (err, TW_DATA_ERROR_FORMAT, path, "magic");

  g_autofree char *empty = td_write_text ("empty.idx", "");
  g_clear_error (&err);
  g_assert_null (tw_idx_load (empty, &err));
  td_assert_error (err, TW_DATA_ERROR_FORMAT, empty, "magic");

  g_autofree char *missing = g_build_filename (td_tmpdir, "no-such-file", NULL);
  g_clear_error (&err);
  g_assert_null (tw_idx_load (missing, &err));
  td_assert_error (err, TW_DATA_ERROR_IO, "no-such-file", NULL);
}

static void
test_idx_unsupported_type (void)
{
  g_autofree char *path = td_write_idx ("type.idx", FALSE, 0x0A, 1, (guint32[]) { 1 },
                                     (guint8[]) { 0 }, 1);
  g_autoptr (GError) err = NULL;
  g_assert_null (tw_idx_load (path, &err));
  td_assert_error (err, TW_DATA_ERROR_FORMAT, path, "0x0a");
}

static void
test_idx_truncated (void)
{
  /* A pattern that does not compress to nothing, so half of the gzip file
   * still holds the header and some pixels. */
  guint8 pix[2 * 28 * 28];
  for (guint i = 0; i < sizeof pix; i++)
    pix[i] = (guint8) ((i * 2654435761u) >> 24);
  /* Raw: dims say 3 images, the file holds 2. */
  g_autofree char *raw = td_write_idx ("cut.idx", FALSE, 0x08, 3, (guint32[]) { 3, 28, 28 }, pix,
                                    sizeof pix);
  g_autoptr (GError) err = NULL;
  g_assert_null (tw_idx_load (raw, &err));
  td_assert_error (err, TW_DATA_ERROR_FORMAT, raw, "truncated");

  /* Gzipped: the payload is short although the gzip stream is whole. */
  g_autofree char *gz = td_write_idx ("cut", TRUE, 0x08, 3, (guint32[]) { 3, 28, 28 }, pix,
                                   sizeof pix);
  g_clear_error (&err);
  g_assert_null (tw_idx_load (gz, &err));
  td_assert_error (err, TW_DATA_ERROR_FORMAT, gz, "truncated");

  /* Gzipped: the compressed file itself is cut in half. */
  g_autoptr (GByteArray) whole = td_idx_bytes (0x08, 3, (guint32[]) { 2, 28, 28 }, pix, sizeof pix);
  g_autoptr (GBytes) z = td_gzip_bytes (whole->data, whole->len);
  g_autofree char *half = td_write_file ("half.gz", g_bytes_get_data (z, NULL),
                                      g_bytes_get_size (z) / 2);
  g_clear_error (&err);
  g_assert_null (tw_idx_load (half, &err));
  td_assert_error (err, TW_DATA_ERROR_FORMAT, half, "truncated");

  /* Gzipped: every pixel present, but the gzip trailer (CRC, length) cut off. */
  g_autofree char *trailer = td_write_file ("trailer.gz", g_bytes_get_data (z, NULL),
                                         g_bytes_get_size (z) - 4);
  g_clear_error (&err);
  g_assert_null (tw_idx_load (trailer, &err));
  td_assert_error (err, TW_DATA_ERROR_FORMAT, trailer, "truncated gzip");

  /* Header cut inside the dimensions. */
  g_autofree char *head = td_write_file ("head.idx", (guint8[]) { 0, 0, 8, 3, 0, 0, 0, 2, 0 }, 9);
  g_clear_error (&err);
  g_assert_null (tw_idx_load (head, &err));
  td_assert_error (err, TW_DATA_ERROR_FORMAT, head, "truncated");

  /* Absurd dimensions fail cleanly instead of allocating. */
  g_autofree char *huge = td_write_idx ("huge", TRUE, 0x08, 3,
                                     (guint32[]) { 0xffffffffu, 0xffffffffu, 0xffffffffu }, pix, 8);
  g_clear_error (&err);
  g_assert_null (tw_idx_load (huge, &err));
  td_assert_error (err, TW_DATA_ERROR_FORMAT, huge, "truncated");
}

static void
test_idx_corrupt_gzip (void)
{
  guint8 pix[512];
  for (guint i = 0; i < sizeof pix; i++)
    pix[i] = (guint8) (i * 7);
  g_autoptr (GByteArray) whole = td_idx_bytes (0x08, 1, (guint32[]) { sizeof pix }, pix, sizeof pix);
  g_autoptr (GBytes) z = td_gzip_bytes (whole->data, whole->len);
  g_autofree guint8 *bad = g_memdup2 (g_bytes_get_data (z, NULL), g_bytes_get_size (z));
  /* Flip one payload byte of the stored CRC-32 (the trailer's first 4 bytes). */
  bad[g_bytes_get_size (z) - 8] ^= 0xff;
  g_autofree char *path = td_write_file ("crc.gz", bad, g_bytes_get_size (z));
  g_autoptr (GError) err = NULL;
  g_assert_null (tw_idx_load (path, &err));
  td_assert_error (err, TW_DATA_ERROR_FORMAT, path, "gzip");
}

static void
test_idx_mismatch (void)
{
  g_autofree char *images = NULL, *labels = NULL;
  td_write_tiny_idx_pair ("", "three", 3, FALSE, &images, NULL);
  td_write_tiny_idx_pair ("", "four", 4, TRUE, NULL, &labels);
  g_autoptr (GError) err = NULL;
  g_assert_null (tw_dataset_load_idx (images, labels, &err));
  td_assert_error (err, TW_DATA_ERROR_MISMATCH, images, labels);
  g_assert_nonnull (strstr (err->message, "3 images"));
  g_assert_nonnull (strstr (err->message, "4 labels"));

  /* Labels where images belong. */
  g_clear_error (&err);
  g_assert_null (tw_dataset_load_idx (labels, labels, &err));
  td_assert_error (err, TW_DATA_ERROR_FORMAT, labels, "images");
}

/* ---- CSV ---- */

static void
test_csv_header (void)
{
  g_autofree char *path = td_write_text ("iris.csv",
                                      "sepal,\"petal\",class\r\n"
                                      "1.5, 2,0\r\n"
                                      "\n"
                                      "-3e-1,4,2\r\n");
  g_autoptr (GError) err = NULL;
  g_autoptr (tw_dataset) d = tw_dataset_load_csv (path, -1, &err);
  g_assert_no_error (err);
  g_assert_cmpstr (d->name, ==, "iris");
  g_assert_cmpint (tw_dataset_size (d), ==, 2);
  g_assert_cmpint (d->x->shape[1], ==, 2);
  g_assert_cmpint (d->n_classes, ==, 3);
  g_assert_cmpfloat (tw_tensor_f32 (d->x)[0], ==, 1.5f);
  g_assert_cmpfloat (tw_tensor_f32 (d->x)[2], ==, -0.3f);
  g_assert_cmpint (tw_tensor_i64 (d->y)[1], ==, 2);
}

static void
test_csv_no_header (void)
{
  /* Label in the first column this time; no trailing newline. */
  g_autofree char *path = td_write_text ("plain.csv", "1,0.5,2\n0,7,8\n4,9,10");
  g_autoptr (GError) err = NULL;
  g_autoptr (tw_dataset) d = tw_dataset_load_csv (path, 0, &err);
  g_assert_no_error (err);
  g_assert_cmpint (tw_dataset_size (d), ==, 3);
  g_assert_cmpint (d->n_classes, ==, 5);
  g_assert_cmpint (tw_tensor_i64 (d->y)[0], ==, 1);
  g_assert_cmpfloat (tw_tensor_f32 (d->x)[1], ==, 2.0f);
  g_assert_cmpfloat (tw_tensor_f32 (d->x)[5], ==, 10.0f);

  /* tw_dataset_open: last column is the label; TEST reads the same file. */
  g_autoptr (tw_dataset) t = tw_dataset_open (path, TW_SPLIT_TEST, 0, &err);
  g_assert_no_error (err);
  g_assert_cmpint (tw_dataset_size (t), ==, 3);
  g_assert_cmpint (tw_tensor_i64 (t->y)[2], ==, 10);

  g_assert_null (tw_dataset_load_csv (path, 3, &err));
  td_assert_error (err, TW_DATA_ERROR_MISMATCH, path, "label column 3");
}

static void
test_csv_bad_cell (void)
{
  g_autofree char *path = td_write_text ("bad.csv", "a,b,label\n1,2,0\n3,oops,1\n");
  g_autoptr (GError) err = NULL;
  g_assert_null (tw_dataset_load_csv (path, -1, &err));
  td_assert_error (err, TW_DATA_ERROR_FORMAT, path, "line 3, column 2");
  g_assert_nonnull (strstr (err->message, "oops"));

  g_autofree char *label = td_write_text ("label.csv", "1,2,0\n3,4,1.5\n");
  g_clear_error (&err);
  g_assert_null (tw_dataset_load_csv (label, -1, &err));
  td_assert_error (err, TW_DATA_ERROR_FORMAT, label, "line 2, column 3");

  g_autofree char *hole = td_write_text ("hole.csv", "1,2,0\n\n3,,1\n");
  g_clear_error (&err);
  g_assert_null (tw_dataset_load_csv (hole, -1, &err));
  td_assert_error (err, TW_DATA_ERROR_FORMAT, hole, "line 3, column 2");
}

static void
test_csv_ragged (void)
{
  g_autofree char *path = td_write_text ("ragged.csv", "x,y,label\n1,2,0\n3,1\n");
  g_autoptr (GError) err = NULL;
  g_assert_null (tw_dataset_load_csv (path, -1, &err));
  td_assert_error (err, TW_DATA_ERROR_FORMAT, path, "line 3 has 2 columns, expected 3");
}

static void
test_csv_empty (void)
{
  g_autofree char *empty = td_write_text ("empty.csv", " \n\n");
  g_autoptr (GError) err = NULL;
  g_assert_null (tw_dataset_load_csv (empty, -1, &err));
  td_assert_error (err, TW_DATA_ERROR_FORMAT, empty, "empty");

  g_autofree char *only_header = td_write_text ("header.csv", "a,b\n");
  g_clear_error (&err);
  g_assert_null (tw_dataset_load_csv (only_header, -1, &err));
  td_assert_error (err, TW_DATA_ERROR_FORMAT, only_header, "no data rows");

  g_autofree char *missing = g_build_filename (td_tmpdir, "missing.csv", NULL);
  g_clear_error (&err);
  g_assert_null (tw_dataset_load_csv (missing, -1, &err));
  td_assert_error (err, TW_DATA_ERROR_IO, "missing.csv", NULL);
}

/* ---- .npy ---- */

static void
test_npy_round_trip (void)
{
  const tw_dtype dtypes[] = { TW_F32, TW_F64, TW_I32, TW_I64, TW_U8 };
  for (guint k = 0; k < G_N_ELEMENTS (dtypes); k++)
    {
      g_autoptr (tw_tensor) t = tw_tensor_new (dtypes[k], 3, (int64_t[]) { 2, 3, 4 });
      for (int i = 0; i < 24; i++)
        tw_tensor_set_flat (t, i, tw_dtype_is_float (dtypes[k]) ? i * 0.5 - 3 : (i * 37) % 200);
      g_autofree char *name = g_strdup_printf ("rt-%s.npy", tw_dtype_name (dtypes[k]));
      g_autofree char *path = g_build_filename (td_tmpdir, name, NULL);
      g_autoptr (GError) err = NULL;
      g_assert_true (tw_npy_save (path, t, &err));
      g_assert_no_error (err);

      /* The header is v1.0, padded so the data starts on a 64-byte boundary. */
      g_autofree char *bytes = NULL;
      gsize len;
      g_assert_true (g_file_get_contents (path, &bytes, &len, NULL));
      g_assert_cmpmem (bytes, 8, "\x93NUMPY\x01\x00", 8);
      gsize hlen = (guint8) bytes[8] | ((guint8) bytes[9] << 8);
      g_assert_cmpint ((10 + hlen) % 64, ==, 0);
      g_assert_cmpint (bytes[10 + hlen - 1], ==, '\n');
      g_assert_cmpint (len, ==, 10 + hlen + tw_tensor_nbytes (t));

      g_autoptr (tw_tensor) back = tw_npy_load (path, &err);
      g_assert_no_error (err);
      g_assert_cmpint (back->dtype, ==, dtypes[k]);
      g_assert_true (tw_tensor_same_shape (back, t));
      g_assert_cmpmem (tw_tensor_data (back), tw_tensor_nbytes (back), tw_tensor_data (t),
                       tw_tensor_nbytes (t));
    }

  /* A strided view is saved in logical order; 1-d and 0-d shapes. */
  g_autoptr (tw_tensor) m = tw_tensor_from_data (TW_F32, 2, (int64_t[]) { 2, 2 },
                                                 (float[]) { 1, 2, 3, 4 });
  g_autoptr (tw_tensor) mt = tw_tensor_transpose (m, 0, 1);
  g_autoptr (tw_tensor) v = tw_tensor_from_data (TW_I64, 1, (int64_t[]) { 3 },
                                                 (int64_t[]) { 7, 8, 9 });
  g_autoptr (tw_tensor) s = tw_tensor_scalar_f32 (2.5f);
  tw_tensor *cases[] = { mt, v, s };
  for (guint k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      g_autofree char *path = g_build_filename (td_tmpdir, "view.npy", NULL);
      g_autoptr (GError) err = NULL;
      g_assert_true (tw_npy_save (path, cases[k], &err));
      g_autoptr (tw_tensor) back = tw_npy_load (path, &err);
      g_assert_no_error (err);
      g_assert_true (tw_tensor_same_shape (back, cases[k]));
      for (int64_t i = 0; i < tw_tensor_numel (back); i++)
        g_assert_cmpfloat (tw_tensor_get_flat (back, i), ==, tw_tensor_get_flat (cases[k], i));
    }
}

/* A .npy file with the given version and header text, then payload. */
static GByteArray *
npy_bytes (int major, const char *header, const void *payload, gsize len)
{
  GByteArray *a = g_byte_array_new ();
  guint8 magic[8] = { 0x93, 'N', 'U', 'M', 'P', 'Y', (guint8) major, 0 };
  g_byte_array_append (a, magic, 8);
  guint32 hlen = (guint32) strlen (header);
  guint8 le[4] = { hlen & 0xff, (hlen >> 8) & 0xff, (hlen >> 16) & 0xff, hlen >> 24 };
  g_byte_array_append (a, le, major == 1 ? 2 : 4);
  g_byte_array_append (a, (const guint8 *) header, hlen);
  g_byte_array_append (a, payload, (guint) len);
  return a;
}

static void
test_npy_headers (void)
{
  g_autoptr (GError) err = NULL;
  const double d[3] = { 1.25, -2, 1e300 };
  /* v2.0 with a u32 header length, double quotes, no trailing comma, and
   * the extra spaces numpy >= 1.24 leaves for the shape to grow. */
  g_autoptr (GByteArray) v2 = npy_bytes (2, "{\"descr\": \"<f8\", \"shape\": (3,), "
                                            "\"fortran_order\": False}                  \n",
                                         d, sizeof d);
  g_autoptr (tw_tensor) a = tw_npy_load_from_data (v2->data, v2->len, "v2.npy", &err);
  g_assert_no_error (err);
  g_assert_cmpint (a->dtype, ==, TW_F64);
  g_assert_cmpint (a->ndim, ==, 1);
  g_assert_cmpfloat (tw_tensor_f64 (a)[2], ==, 1e300);

  /* v3.0 (utf-8 header), booleans as u8. */
  g_autoptr (GByteArray) v3 = npy_bytes (3, "{'descr': '|b1', 'fortran_order': False, "
                                            "'shape': (2, 2), }\n",
                                         (guint8[]) { 1, 0, 0, 1 }, 4);
  g_autoptr (tw_tensor) b = tw_npy_load_from_data (v3->data, v3->len, "v3.npy", &err);
  g_assert_no_error (err);
  g_assert_cmpint (b->dtype, ==, TW_U8);
  g_assert_cmpint (tw_tensor_u8 (b)[3], ==, 1);

  /* i4 on disk, written by hand as numpy 1.x would. */
  g_autoptr (GByteArray) v1 = npy_bytes (1, "{'descr': '<i4', 'fortran_order': False, "
                                            "'shape': (2,), }\n",
                                         (gint32[]) { GINT32_TO_LE (-5), GINT32_TO_LE (6) }, 8);
  g_autofree char *path = td_write_file ("i4.npy", v1->data, v1->len);
  g_autoptr (tw_tensor) c = tw_npy_load (path, &err);
  g_assert_no_error (err);
  g_assert_cmpint (tw_tensor_i32 (c)[0], ==, -5);
}

static void
test_npy_refused (void)
{
  float f[4] = { 0 };
  struct
  {
    const char *header;
    gsize payload;
    const char *expect;
  } cases[] = {
    { "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }\n", 16, "Fortran" },
    { "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }\n", 16, "big-endian" },
    { "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }\n", 16, "unsupported dtype" },
    { "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }\n", 8, "structured" },
    { "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }\n", 12, "truncated" },
    { "{'descr': '<f4', 'shape': (2, 2), }\n", 16, "fortran_order" },
    { "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -2), }\n", 16, "malformed" },
    { "['not', 'a', 'dict']\n", 16, "malformed" },
  };
  for (guint k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      g_autoptr (GByteArray) a = npy_bytes (1, cases[k].header, f, cases[k].payload);
      g_autoptr (GError) err = NULL;
      g_assert_null (tw_npy_load_from_data (a->data, a->len, "case.npy", &err));
      td_assert_error (err, TW_DATA_ERROR_FORMAT, "case.npy", cases[k].expect);
    }

  g_autoptr (GError) err = NULL;
  g_assert_null (tw_npy_load_from_data ((const guint8 *) "\x93NUMP", 5, "short.npy", &err));
  td_assert_error (err, TW_DATA_ERROR_FORMAT, "short.npy", "not a .npy file");

  /* Header length beyond the end of the file. */
  g_autoptr (GByteArray) cut = npy_bytes (1, "{'descr': '<f4', 'fortran_order': False, }", f, 0);
  g_clear_error (&err);
  g_assert_null (tw_npy_load_from_data (cut->data, cut->len - 10, "cut.npy", &err));
  td_assert_error (err, TW_DATA_ERROR_FORMAT, "cut.npy", "truncated");

  /* Saving into a folder that does not exist fails with IO. */
  g_autoptr (tw_tensor) t = tw_tensor_scalar_f32 (1);
  g_autofree char *bad = g_build_filename (td_tmpdir, "no-dir", "t.npy", NULL);
  g_clear_error (&err);
  g_assert_false (tw_npy_save (bad, t, &err));
  td_assert_error (err, TW_DATA_ERROR_IO, bad, NULL);
}

static void
test_npy_dataset (void)
{
  g_autofree char *xp = g_build_filename (td_tmpdir, "pts.npy", NULL);
  g_autofree char *yp = g_build_filename (td_tmpdir, "pts_labels.npy", NULL);
  g_autoptr (tw_tensor) x = tw_tensor_from_data (TW_F64, 2, (int64_t[]) { 3, 2 },
                                                 (double[]) { 0, 1, 2, 3, 4, 5 });
  g_autoptr (tw_tensor) y = tw_tensor_from_data (TW_U8, 1, (int64_t[]) { 3 },
                                                 (guint8[]) { 0, 3, 1 });
  g_autoptr (GError) err = NULL;
  g_assert_true (tw_npy_save (xp, x, &err));
  g_assert_true (tw_npy_save (yp, y, &err));

  g_autoptr (tw_dataset) d = tw_dataset_open (xp, TW_SPLIT_TRAIN, 0, &err);
  g_assert_no_error (err);
  g_assert_cmpstr (d->name, ==, "pts");
  g_assert_cmpint (d->x->dtype, ==, TW_F32);
  g_assert_cmpfloat (tw_tensor_f32 (d->x)[5], ==, 5.0f);
  g_assert_cmpint (tw_tensor_i64 (d->y)[1], ==, 3);
  g_assert_cmpint (d->n_classes, ==, 4);

  g_autoptr (tw_tensor) y4 = tw_tensor_zeros (TW_I64, 1, (int64_t[]) { 4 });
  g_autofree char *y4p = g_build_filename (td_tmpdir, "four.npy", NULL);
  g_assert_true (tw_npy_save (y4p, y4, &err));
  g_assert_null (tw_dataset_load_npy (xp, y4p, &err));
  td_assert_error (err, TW_DATA_ERROR_MISMATCH, xp, y4p);
}

void
td_register_formats (void)
{
  g_test_add_func ("/engine/data/idx/types", test_idx_types);
  g_test_add_func ("/engine/data/idx/dataset", test_idx_dataset);
  g_test_add_func ("/engine/data/idx/gzip-members", test_idx_gzip_members);
  g_test_add_func ("/engine/data/idx/wrong-magic", test_idx_wrong_magic);
  g_test_add_func ("/engine/data/idx/unsupported-type", test_idx_unsupported_type);
  g_test_add_func ("/engine/data/idx/truncated", test_idx_truncated);
  g_test_add_func ("/engine/data/idx/corrupt-gzip", test_idx_corrupt_gzip);
  g_test_add_func ("/engine/data/idx/mismatch", test_idx_mismatch);
  g_test_add_func ("/engine/data/csv/header", test_csv_header);
  g_test_add_func ("/engine/data/csv/no-header", test_csv_no_header);
  g_test_add_func ("/engine/data/csv/bad-cell", test_csv_bad_cell);
  g_test_add_func ("/engine/data/csv/ragged", test_csv_ragged);
  g_test_add_func ("/engine/data/csv/empty", test_csv_empty);
  g_test_add_func ("/engine/data/npy/round-trip", test_npy_round_trip);
  g_test_add_func ("/engine/data/npy/headers", test_npy_headers);
  g_test_add_func ("/engine/data/npy/refused", test_npy_refused);
  g_test_add_func ("/engine/data/npy/dataset", test_npy_dataset);
}
