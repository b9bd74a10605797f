/* test-safetensors.c — safetensors round trips, files written by the
 * reference implementation, malformed files, atomic saves. */
#include "engine/safetensors.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

/* A file image: 8-byte little-endian length of json, json, then buf. */
static guint8 *
build_file (const char *json, const void *buf, gsize buf_len, gsize *len)
{
  gsize n = strlen (json);
  *len = 8 + n + buf_len;
  guint8 *out = g_malloc (*len);
  guint64 n_le = GUINT64_TO_LE ((guint64) n);
  memcpy (out, &n_le, 8);
  memcpy (out + 8, json, n);
  if (buf_len > 0)
    memcpy (out + 8 + n, buf, buf_len);
  return out;
}

static char *
make_tmpdir (void)
{
  g_autoptr (GError) error = NULL;
  char *dir = g_dir_make_tmp ("tw-safetensors-XXXXXX", &error);
  g_assert_no_error (error);
  return dir;
}

/* Removes dir and the plain files and empty folders in it. */
static void
remove_tree (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;
  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *p = g_build_filename (dir, name, NULL);
      if (g_file_test (p, G_FILE_TEST_IS_DIR))
        remove_tree (p);
      else
        g_unlink (p);
    }
  g_rmdir (dir);
}

static guint
count_entries (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  guint n = 0;
  while (d != NULL && g_dir_read_name (d) != NULL)
    n++;
  return n;
}

static void
assert_same_tensor (const tw_tensor *a, const tw_tensor *b)
{
  g_assert_cmpint (a->dtype, ==, b->dtype);
  g_assert_cmpint (a->ndim, ==, b->ndim);
  for (int d = 0; d < a->ndim; d++)
    g_assert_cmpint (a->shape[d], ==, b->shape[d]);
  g_autoptr (tw_tensor) ca = tw_tensor_clone (a);
  g_autoptr (tw_tensor) cb = tw_tensor_clone (b);
  g_assert_cmpmem (tw_tensor_data (ca), tw_tensor_nbytes (ca), tw_tensor_data (cb),
                   tw_tensor_nbytes (cb));
}

static void
test_roundtrip (void)
{
  g_autoptr (GHashTable) t = tw_tensor_table_new ();
  float f32[] = { 1.5f, -0.0f, 3.4e38f, 1e-45f, NAN, INFINITY };
  g_hash_table_insert (t, g_strdup ("fc1.weight"),
                       tw_tensor_from_data (TW_F32, 2, (int64_t[]) { 2, 3 }, f32));
  double f64[] = { G_PI, -1e-300, 1e300 };
  g_hash_table_insert (t, g_strdup ("f64"),
                       tw_tensor_from_data (TW_F64, 1, (int64_t[]) { 3 }, f64));
  int32_t i32[] = { G_MININT32, -1, 0, G_MAXINT32 };
  g_hash_table_insert (t, g_strdup ("i32"),
                       tw_tensor_from_data (TW_I32, 3, (int64_t[]) { 1, 2, 2 }, i32));
  int64_t i64[] = { G_MININT64, G_MAXINT64 };
  g_hash_table_insert (t, g_strdup ("bn.num_batches_tracked"),
                       tw_tensor_from_data (TW_I64, 1, (int64_t[]) { 2 }, i64));
  uint8_t u8[] = { 0, 7, 255 };
  g_hash_table_insert (t, g_strdup ("u8"), tw_tensor_from_data (TW_U8, 1, (int64_t[]) { 3 }, u8));
  g_hash_table_insert (t, g_strdup ("scalar"), tw_tensor_scalar_f32 (2.5f));
  int64_t scalar64 = 42;
  g_hash_table_insert (t, g_strdup ("scalar64"), tw_tensor_from_data (TW_I64, 0, NULL, &scalar64));
  g_hash_table_insert (t, g_strdup ("empty"), tw_tensor_new (TW_F32, 1, (int64_t[]) { 0 }));
  g_hash_table_insert (t, g_strdup ("empty2d"), tw_tensor_new (TW_I32, 2, (int64_t[]) { 3, 0 }));
  /* A non-contiguous view is written in logical order. */
  g_autoptr (tw_tensor) base = tw_tensor_from_data (TW_F32, 2, (int64_t[]) { 2, 3 },
                                                    (float[]) { 0, 1, 2, 3, 4, 5 });
  g_hash_table_insert (t, g_strdup ("transposed"), tw_tensor_transpose (base, 0, 1));

  g_autoptr (GHashTable) meta = g_hash_table_new (g_str_hash, g_str_equal);
  g_hash_table_insert (meta, "format", "twb-checkpoint");
  g_hash_table_insert (meta, "step", "1200");
  g_hash_table_insert (meta, "note", "ünïcødé \"quoted\" \\ back");

  g_autofree char *dir = make_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "ckpt.safetensors", NULL);
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_safetensors_save (path, t, meta, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (count_entries (dir), ==, 1);   /* no temporary left */

  g_autoptr (GHashTable) t2 = NULL;
  g_autoptr (GHashTable) meta2 = NULL;
  g_assert_true (tw_safetensors_load (path, &t2, &meta2, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (g_hash_table_size (t2), ==, g_hash_table_size (t));
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init (&it, t);
  while (g_hash_table_iter_next (&it, &k, &v))
    {
      tw_tensor *got = g_hash_table_lookup (t2, k);
      g_assert_nonnull (got);
      assert_same_tensor (got, v);
      g_assert_true (tw_tensor_is_contiguous (got));
    }
  g_assert_cmpfloat (tw_tensor_get_flat (g_hash_table_lookup (t2, "transposed"), 1), ==, 3.0);
  g_assert_cmpuint (g_hash_table_size (meta2), ==, 3);
  g_assert_cmpstr (g_hash_table_lookup (meta2, "step"), ==, "1200");
  g_assert_cmpstr (g_hash_table_lookup (meta2, "note"), ==, "ünïcødé \"quoted\" \\ back");

  /* Layout: header length a multiple of 8, space padded; tensors named in
   * sorted order and stored in that order. */
  g_autofree char *bytes = NULL;
  gsize len;
  g_assert_true (g_file_get_contents (path, &bytes, &len, NULL));
  guint64 n;
  memcpy (&n, bytes, 8);
  n = GUINT64_FROM_LE (n);
  g_assert_cmpuint (n % 8, ==, 0);
  g_autofree char *header = g_strndup (bytes + 8, n);
  g_assert_true (g_str_has_prefix (header, "{\"__metadata__\":"));
  g_assert_true (header[n - 1] == '}' || header[n - 1] == ' ');
  const char *order[] = { "\"bn.num_batches_tracked\"", "\"empty\"", "\"empty2d\"", "\"f64\"",
                          "\"fc1.weight\"", "\"i32\"", "\"scalar\"", "\"scalar64\"",
                          "\"transposed\"", "\"u8\"" };
  const char *prev = header;
  for (guint i = 0; i < G_N_ELEMENTS (order); i++)
    {
      const char *at = strstr (header, order[i]);
      g_assert_nonnull (at);
      g_assert_true (at > prev);
      prev = at;
    }
  /* The first tensor's 16 bytes open the buffer. */
  g_assert_cmpmem (bytes + 8 + n, 16, i64, 16);

  /* No metadata and no tensors: still a valid file. */
  g_autoptr (GHashTable) none = tw_tensor_table_new ();
  g_assert_true (tw_safetensors_save (path, none, NULL, &error));
  g_autoptr (GHashTable) t3 = NULL;
  g_autoptr (GHashTable) meta3 = NULL;
  g_assert_true (tw_safetensors_load (path, &t3, &meta3, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (g_hash_table_size (t3), ==, 0);
  g_assert_cmpuint (g_hash_table_size (meta3), ==, 0);
  /* metadata may be NULL when the caller does not want it. */
  g_autoptr (GHashTable) t4 = NULL;
  g_assert_true (tw_safetensors_load (path, &t4, NULL, &error));

  remove_tree (dir);
}

/* Byte strings as the reference implementation writes them. */
static void
test_reference_files (void)
{
  g_autoptr (GError) error = NULL;

  /* The deserialisation test of huggingface/safetensors (safetensors/src/tensor.rs):
   * one I32 [2, 2] tensor of zeros, header of 60 (0x3c) bytes, unpadded. */
  static const char upstream[] =
    "<\x00\x00\x00\x00\x00\x00\x00{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],"
    "\"data_offsets\":[0,16]}}"
    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00";
  g_autoptr (GHashTable) t = NULL;
  g_autoptr (GHashTable) meta = NULL;
  g_assert_true (tw_safetensors_load_from_data ((const guint8 *) upstream, sizeof upstream - 1,
                                                "upstream", &t, &meta, &error));
  g_assert_no_error (error);
  tw_tensor *x = g_hash_table_lookup (t, "test");
  g_assert_nonnull (x);
  g_assert_cmpint (x->dtype, ==, TW_I32);
  g_assert_cmpint (x->ndim, ==, 2);
  g_assert_cmpint (x->shape[0], ==, 2);
  g_assert_cmpint (x->shape[1], ==, 2);
  for (int i = 0; i < 4; i++)
    g_assert_cmpint (tw_tensor_i32 (x)[i], ==, 0);

  /* What safetensors.torch.save_file ({"a": torch.tensor([1., -2.]),
   * "b": torch.tensor([[3]], dtype=torch.int64)}) writes: metadata
   * {"format": "pt"} first, the header padded with spaces to 8 bytes, data
   * ordered by dtype alignment then name (b before a). */
  const char *json = "{\"__metadata__\":{\"format\":\"pt\"},"
                     "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},"
                     "\"b\":{\"dtype\":\"I64\",\"shape\":[1,1],\"data_offsets\":[0,8]}}";
  gsize jl = strlen (json);
  g_autofree char *padded = g_strnfill ((jl + 7) / 8 * 8, ' ');
  memcpy (padded, json, jl);
  g_assert_cmpuint (strlen (padded) % 8, ==, 0);
  g_assert_cmpuint (strlen (padded), >, jl);   /* really padded */
  guint8 buf[16];
  int64_t b_val = 3;
  float a_val[] = { 1.0f, -2.0f };
  memcpy (buf, &b_val, 8);
  memcpy (buf + 8, a_val, 8);
  gsize len;
  g_autofree guint8 *file = build_file (padded, buf, sizeof buf, &len);
  g_autoptr (GHashTable) t2 = NULL;
  g_autoptr (GHashTable) meta2 = NULL;
  g_assert_true (tw_safetensors_load_from_data (file, len, "pt.safetensors", &t2, &meta2, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (g_hash_table_lookup (meta2, "format"), ==, "pt");
  tw_tensor *a = g_hash_table_lookup (t2, "a");
  tw_tensor *b = g_hash_table_lookup (t2, "b");
  g_assert_cmpfloat (tw_tensor_f32 (a)[1], ==, -2.0f);
  g_assert_cmpint (b->ndim, ==, 2);
  g_assert_cmpint (tw_tensor_i64 (b)[0], ==, 3);
}

typedef struct
{
  const char *what;
  const char *json;         /* NULL: raw bytes below */
  gsize buf_len;            /* bytes of zeros after the header */
  const char *raw;
  gsize raw_len;
  const char *expect;       /* part of the message */
} bad_case;

static void
test_malformed (void)
{
  static const char huge[] = "\xff\xff\xff\xff\xff\xff\xff\x7f{}";
  static const char beyond[] = "\x20\x00\x00\x00\x00\x00\x00\x00{}";
  static const char bad_utf8[] = "\x08\x00\x00\x00\x00\x00\x00\x00{\"\xff\":1} ";
  const bad_case cases[] = {
    { "empty file", NULL, 0, "", 0, "too short" },
    { "truncated header length", NULL, 0, "\x02\x00\x00", 3, "too short" },
    { "header beyond EOF", NULL, 0, beyond, sizeof beyond - 1, "beyond the end" },
    { "huge header size", NULL, 0, huge, sizeof huge - 1, "beyond the end" },
    { "invalid UTF-8", NULL, 0, bad_utf8, sizeof bad_utf8 - 1, "UTF-8" },
    { "bad JSON", "{\"a\":{\"dtype\":\"F32\",", 0, NULL, 0, "header: line 1, column" },
    { "not an object", "[1, 2]", 0, NULL, 0, "start with '{'" },
    { "entry not an object", "{\"w\":3}", 0, NULL, 0, "'w': not a JSON object" },
    { "missing dtype", "{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, NULL, 0,
      "'w': missing \"dtype\"" },
    { "missing shape", "{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, NULL, 0,
      "'w': missing \"shape\"" },
    { "missing offsets", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, NULL, 0,
      "'w': missing \"data_offsets\"" },
    { "F16", "{\"h\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, NULL, 0,
      "'h': unsupported dtype 'F16'" },
    { "BF16", "{\"h\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, NULL, 0,
      "unsupported dtype 'BF16'" },
    { "BOOL", "{\"h\":{\"dtype\":\"BOOL\",\"shape\":[4],\"data_offsets\":[0,4]}}", 4, NULL, 0,
      "unsupported dtype 'BOOL'" },
    { "unknown dtype", "{\"h\":{\"dtype\":\"Q4\",\"shape\":[4],\"data_offsets\":[0,4]}}", 4,
      NULL, 0, "unknown dtype 'Q4'" },
    { "dtype not a string", "{\"h\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
      NULL, 0, "not a string" },
    { "negative dim", "{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4,
      NULL, 0, "shape[0]" },
    { "fractional dim", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4,
      NULL, 0, "shape[0]" },
    { "too many dims", "{\"w\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1],"
      "\"data_offsets\":[0,1]}}", 1, NULL, 0, "7 dimensions" },
    { "overflowing shape", "{\"w\":{\"dtype\":\"F64\",\"shape\":[4294967296,4294967296],"
      "\"data_offsets\":[0,8]}}", 8, NULL, 0, "overflows" },
    { "offsets not two", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4,
      NULL, 0, "two integers" },
    { "end before begin", "{\"w\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[4,0]}}", 4,
      NULL, 0, "end before" },
    { "wrong byte count", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,12]}}",
      12, NULL, 0, "'w': data_offsets [0, 12] hold 12 bytes but F32 [2, 3] needs 24" },
    { "out of range", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4,
      NULL, 0, "'w': data_offsets [0, 8] go beyond the 4-byte data buffer" },
    { "overlap", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, NULL, 0,
      "'b': data_offsets [4, 8] overlap" },
    { "gap", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12, NULL, 0,
      "'b': data_offsets [8, 12] leave bytes 4..8 unused" },
    { "not starting at 0", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
      NULL, 0, "'a': data_offsets [4, 8] leave bytes 0..4 unused" },
    { "trailing bytes", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 6,
      NULL, 0, "cover 4 bytes of a 6-byte data buffer" },
    { "metadata not an object", "{\"__metadata__\":[]}", 0, NULL, 0, "is not an object" },
    { "metadata value not a string", "{\"__metadata__\":{\"step\":3}}", 0, NULL, 0,
      "\"__metadata__\".step is not a string" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      const bad_case *c = &cases[i];
      g_autofree guint8 *owned = NULL;
      const guint8 *data;
      gsize len;
      if (c->json != NULL)
        {
          g_autofree guint8 *zeros = g_malloc0 (MAX (c->buf_len, 1));
          owned = build_file (c->json, zeros, c->buf_len, &len);
          data = owned;
        }
      else
        {
          data = (const guint8 *) c->raw;
          len = c->raw_len;
        }
      g_autoptr (GHashTable) t = NULL;
      g_autoptr (GHashTable) meta = NULL;
      g_autoptr (GError) error = NULL;
      gboolean ok = tw_safetensors_load_from_data (data, len, "bad.safetensors", &t, &meta, &error);
      g_test_message ("%s: %s", c->what, error ? error->message : "(no error)");
      g_assert_false (ok);
      g_assert_error (error, TW_SAFETENSORS_ERROR, TW_SAFETENSORS_ERROR_FORMAT);
      g_assert_true (g_str_has_prefix (error->message, "bad.safetensors: "));
      if (strstr (error->message, c->expect) == NULL)
        g_error ("%s: message '%s' lacks '%s'", c->what, error->message, c->expect);
      g_assert_null (t);
      g_assert_null (meta);
    }
}

/* Every proper prefix of a valid file is refused, none crashes. */
static void
test_truncated (void)
{
  g_autoptr (GHashTable) t = tw_tensor_table_new ();
  g_hash_table_insert (t, g_strdup ("a"), tw_tensor_zeros (TW_F64, 1, (int64_t[]) { 3 }));
  g_hash_table_insert (t, g_strdup ("b"), tw_tensor_zeros (TW_U8, 1, (int64_t[]) { 5 }));
  g_autofree char *dir = make_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "x.safetensors", NULL);
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_safetensors_save (path, t, NULL, &error));
  g_autofree char *bytes = NULL;
  gsize len;
  g_assert_true (g_file_get_contents (path, &bytes, &len, NULL));
  for (gsize cut = 0; cut < len; cut++)
    {
      g_autoptr (GHashTable) t2 = NULL;
      g_autoptr (GError) e2 = NULL;
      /* An exact-size copy, so the sanitizers see any read past the end. */
      g_autofree guint8 *copy = g_memdup2 (bytes, MAX (cut, 1));
      g_assert_false (tw_safetensors_load_from_data (copy, cut, "x", &t2, NULL, &e2));
      g_assert_error (e2, TW_SAFETENSORS_ERROR, TW_SAFETENSORS_ERROR_FORMAT);
    }
  remove_tree (dir);
}

static void
test_io_errors (void)
{
  g_autoptr (GHashTable) t = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_false (tw_safetensors_load ("/nonexistent/dir/x.safetensors", &t, NULL, &error));
  g_assert_error (error, TW_SAFETENSORS_ERROR, TW_SAFETENSORS_ERROR_IO);
  g_assert_nonnull (strstr (error->message, "/nonexistent/dir/x.safetensors"));
  g_clear_error (&error);

  /* An empty file maps to no data at all: a format error, not a crash. */
  g_autofree char *dir = make_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "empty.safetensors", NULL);
  g_assert_true (g_file_set_contents (path, "", 0, NULL));
  g_assert_false (tw_safetensors_load (path, &t, NULL, &error));
  g_assert_error (error, TW_SAFETENSORS_ERROR, TW_SAFETENSORS_ERROR_FORMAT);
  g_clear_error (&error);

  /* A folder is not a file. */
  g_assert_false (tw_safetensors_load (dir, &t, NULL, &error));
  g_assert_error (error, TW_SAFETENSORS_ERROR, TW_SAFETENSORS_ERROR_IO);
  g_assert_null (t);
  remove_tree (dir);
}

static GHashTable *
one_tensor (float v)
{
  GHashTable *t = tw_tensor_table_new ();
  tw_tensor *x = tw_tensor_new (TW_F32, 1, (int64_t[]) { 4 });
  tw_tensor_fill (x, v);
  g_hash_table_insert (t, g_strdup ("w"), x);
  return t;
}

static void
assert_file_holds (const char *path, float v)
{
  g_autoptr (GHashTable) t = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_safetensors_load (path, &t, NULL, &error));
  g_assert_no_error (error);
  g_assert_cmpfloat (tw_tensor_f32 (g_hash_table_lookup (t, "w"))[3], ==, v);
}

/* A failed save leaves the previous file as it was. */
static void
test_atomic_save (void)
{
  g_autofree char *dir = make_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "model.safetensors", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (GHashTable) old = one_tensor (1.0f);
  g_assert_true (tw_safetensors_save (path, old, NULL, &error));

  /* Refused before writing: a tensor under the metadata's name. */
  g_autoptr (GHashTable) bad = one_tensor (2.0f);
  g_hash_table_insert (bad, g_strdup ("__metadata__"), tw_tensor_scalar_f32 (0));
  g_assert_false (tw_safetensors_save (path, bad, NULL, &error));
  g_assert_error (error, TW_SAFETENSORS_ERROR, TW_SAFETENSORS_ERROR_FORMAT);
  g_clear_error (&error);
  assert_file_holds (path, 1.0f);

  /* The target is a directory: the rename fails, the directory and its
   * contents stay, and no temporary file is left beside it. */
  g_autofree char *sub = g_build_filename (dir, "sub", NULL);
  g_assert_cmpint (g_mkdir (sub, 0755), ==, 0);
  g_autofree char *inner = g_build_filename (sub, "model.safetensors", NULL);
  g_assert_true (tw_safetensors_save (inner, old, NULL, &error));
  g_autoptr (GHashTable) newer = one_tensor (3.0f);
  g_assert_false (tw_safetensors_save (sub, newer, NULL, &error));
  g_assert_error (error, TW_SAFETENSORS_ERROR, TW_SAFETENSORS_ERROR_IO);
  g_test_message ("%s", error->message);
  g_clear_error (&error);
  g_assert_true (g_file_test (sub, G_FILE_TEST_IS_DIR));
  assert_file_holds (inner, 1.0f);
  g_assert_cmpuint (count_entries (dir), ==, 2);   /* model.safetensors, sub */
  assert_file_holds (path, 1.0f);

  /* The folder is not writable: no temporary file can be made.  Root (or
   * CAP_DAC_OVERRIDE) writes anyway, so that part only runs where the
   * permission holds. */
  g_assert_cmpint (g_chmod (dir, 0555), ==, 0);
  if (access (dir, W_OK) != 0 && errno == EACCES)
    {
      g_assert_false (tw_safetensors_save (path, newer, NULL, &error));
      g_assert_error (error, TW_SAFETENSORS_ERROR, TW_SAFETENSORS_ERROR_IO);
      g_clear_error (&error);
      assert_file_holds (path, 1.0f);
      g_assert_cmpuint (count_entries (dir), ==, 2);
    }
  else
    g_test_message ("running with write permission everywhere: read-only folder case skipped");
  g_chmod (dir, 0755);

  /* And a good save replaces the file. */
  g_assert_true (tw_safetensors_save (path, newer, NULL, &error));
  assert_file_holds (path, 3.0f);
  remove_tree (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/safetensors/roundtrip", test_roundtrip);
  g_test_add_func ("/engine/safetensors/reference-files", test_reference_files);
  g_test_add_func ("/engine/safetensors/malformed", test_malformed);
  g_test_add_func ("/engine/safetensors/truncated", test_truncated);
  g_test_add_func ("/engine/safetensors/io-errors", test_io_errors);
  g_test_add_func ("/engine/safetensors/atomic-save", test_atomic_save);
  return g_test_run ();
}
