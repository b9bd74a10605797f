/* test-file-kind.c — tw_file_kind_sniff: the kind of a file from its bytes,
 * whatever its name says.  Real files (the example models, the ONNX and
 * trace fixtures, weights and data), then crafted bytes: misleading names,
 * empty and blank files, PyTorch's trace layout, gzip (whole, truncated,
 * corrupt, empty), malformed JSON, files that are none of the kinds, and
 * paths that are no regular file. */
#include "engine/file-kind.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static char *tmpdir;

static char *
source_file (const char *rel)
{
  return g_build_filename (TW_TEST_DATA_DIR, "..", "..", "..", rel, NULL);
}

static char *
write_tmp (const char *name, const void *data, gsize len)
{
  char *path = g_build_filename (tmpdir, name, NULL);
  g_autoptr (GError) error = NULL;
  g_file_set_contents (path, data, (gssize) len, &error);
  g_assert_no_error (error);
  return path;
}

static GBytes *
read_all (const char *path)
{
  char *data = NULL;
  gsize len = 0;
  g_autoptr (GError) error = NULL;
  g_file_get_contents (path, &data, &len, &error);
  g_assert_no_error (error);
  return g_bytes_new_take (data, len);
}

/* data gzip-compressed, as gzip(1) writes it. */
static GBytes *
gzip_bytes (const void *data, gsize len)
{
  z_stream z = { 0 };
  g_assert_cmpint (deflateInit2 (&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), ==, Z_OK);
  gsize cap = deflateBound (&z, len);
  guint8 *out = g_malloc (cap);
  z.next_in = (Bytef *) data;
  z.avail_in = (uInt) len;
  z.next_out = out;
  z.avail_out = (uInt) cap;
  g_assert_cmpint (deflate (&z, Z_FINISH), ==, Z_STREAM_END);
  gsize n = cap - z.avail_out;
  deflateEnd (&z);
  return g_bytes_new_take (out, n);
}

static tw_file_kind
sniff_mem (const void *data, gsize len, gboolean *gz, GError **error)
{
  return tw_file_kind_sniff_bytes ("crafted", data, len, len, gz, error);
}

static void
assert_kind_file (const char *path, tw_file_kind want, gboolean want_gz)
{
  g_autoptr (GError) error = NULL;
  gboolean gz = !want_gz;
  tw_file_kind k = tw_file_kind_sniff (path, &gz, &error);
  if (k != want)
    g_error ("%s: %s, expected %s (%s)", path, tw_file_kind_describe (k),
             tw_file_kind_describe (want), error ? error->message : "no error");
  g_assert_no_error (error);
  g_assert_cmpint (gz, ==, want_gz);
}

static void
test_real_files (void)
{
  const char *models[] = { "mlp.json", "lenet5.json", "functional.json", "spirals.json" };
  for (gsize i = 0; i < G_N_ELEMENTS (models); i++)
    {
      g_autofree char *p = g_build_filename (TWB_ASSETS_DIR_FALLBACK, "models", models[i], NULL);
      assert_kind_file (p, TW_FILE_KIND_MODEL, FALSE);
    }
  const char *onnx[] = { "mlp.onnx", "convnet.onnx", "import-cnn.onnx", "import-unsupported.onnx" };
  for (gsize i = 0; i < G_N_ELEMENTS (onnx); i++)
    {
      g_autofree char *rel = g_build_filename ("tests", "onnx", "data", onnx[i], NULL);
      g_autofree char *p = source_file (rel);
      assert_kind_file (p, TW_FILE_KIND_ONNX, FALSE);
    }
  g_autofree char *t1 = source_file ("tests/profiler/data/torch-trace.json");
  g_autofree char *t2 = source_file ("tests/profiler/data/torch-real-trace.json");
  assert_kind_file (t1, TW_FILE_KIND_TRACE, FALSE);
  assert_kind_file (t2, TW_FILE_KIND_TRACE, FALSE);
  g_autofree char *st = source_file ("tests/cli/data/tiny-bn.safetensors");
  g_autofree char *npy = source_file ("tests/cli/data/tiny-bn-x.npy");
  assert_kind_file (st, TW_FILE_KIND_WEIGHTS, FALSE);
  assert_kind_file (npy, TW_FILE_KIND_DATA, FALSE);
  /* An ONNX pb tensor is no model the window opens. */
  g_autofree char *pb = source_file ("tests/onnx/data/mlp-input_0.pb");
  g_autoptr (GError) error = NULL;
  g_assert_cmpint (tw_file_kind_sniff (pb, NULL, &error), ==, TW_FILE_KIND_UNKNOWN);
  g_assert_error (error, TW_FILE_KIND_ERROR, TW_FILE_KIND_ERROR_UNKNOWN);
}

/* Names say one thing, bytes another: the bytes win. */
static void
test_misleading_names (void)
{
  g_autofree char *mlp = g_build_filename (TWB_ASSETS_DIR_FALLBACK, "models", "mlp.json", NULL);
  g_autofree char *onnx = source_file ("tests/onnx/data/mlp.onnx");
  g_autofree char *trace = source_file ("tests/profiler/data/torch-real-trace.json");
  g_autoptr (GBytes) m = read_all (mlp), o = read_all (onnx), t = read_all (trace);
  gsize ml, ol, tl;
  const guint8 *md = g_bytes_get_data (m, &ml), *od = g_bytes_get_data (o, &ol),
               *td = g_bytes_get_data (t, &tl);
  g_autofree char *p1 = write_tmp ("model.onnx", md, ml);
  g_autofree char *p2 = write_tmp ("onnx.json", od, ol);
  g_autofree char *p3 = write_tmp ("trace.onnx", td, tl);
  g_autoptr (GBytes) tgz = gzip_bytes (td, tl);
  g_autofree char *p4 = write_tmp ("trace-gz.json", g_bytes_get_data (tgz, NULL),
                                   g_bytes_get_size (tgz));
  g_autofree char *p5 = write_tmp ("noextension", od, ol);
  assert_kind_file (p1, TW_FILE_KIND_MODEL, FALSE);
  assert_kind_file (p2, TW_FILE_KIND_ONNX, FALSE);
  assert_kind_file (p3, TW_FILE_KIND_TRACE, FALSE);
  assert_kind_file (p4, TW_FILE_KIND_TRACE, TRUE);
  assert_kind_file (p5, TW_FILE_KIND_ONNX, FALSE);
  /* A .gz that holds a model: recognised, and refused for the window
   * (models are read uncompressed), naming the file. */
  g_autoptr (GBytes) mgz = gzip_bytes (md, ml);
  g_autofree char *p6 = write_tmp ("model.json.gz", g_bytes_get_data (mgz, NULL),
                                   g_bytes_get_size (mgz));
  assert_kind_file (p6, TW_FILE_KIND_MODEL, TRUE);
  g_autoptr (GError) error = NULL;
  g_assert_cmpint (tw_file_kind_sniff_openable (p6, &error), ==, TW_FILE_KIND_UNKNOWN);
  g_assert_error (error, TW_FILE_KIND_ERROR, TW_FILE_KIND_ERROR_NOT_OPENABLE);
  g_assert_nonnull (strstr (error->message, "model.json.gz"));
  g_assert_nonnull (strstr (error->message, "gunzip"));
  g_clear_error (&error);
  /* The openable kinds pass through. */
  g_assert_cmpint (tw_file_kind_sniff_openable (p1, &error), ==, TW_FILE_KIND_MODEL);
  g_assert_cmpint (tw_file_kind_sniff_openable (p2, &error), ==, TW_FILE_KIND_ONNX);
  g_assert_cmpint (tw_file_kind_sniff_openable (p4, &error), ==, TW_FILE_KIND_TRACE);
  g_assert_no_error (error);
}

typedef struct
{
  const char *text;
  tw_file_kind kind;
  int error_code;          /* TW_FILE_KIND_ERROR_*, -1: none */
  const char *message;     /* in the error's message */
} json_case;

static void
test_json (void)
{
  const json_case cases[] = {
    { "{\"format\": \"twb-model\", \"version\": 1}", TW_FILE_KIND_MODEL, -1, NULL },
    { "\xef\xbb\xbf  {\"format\":\"twb-model\"}", TW_FILE_KIND_MODEL, -1, NULL },
    /* "format" after other members, whatever they hold. */
    { "{\"name\": \"a \\\"quoted\\\" }\", \"graph\": {\"nodes\": [[1], {\"x\": \"]\"}]}, "
      "\"format\": \"twb-model\"}",
      TW_FILE_KIND_MODEL, -1, NULL },
    /* No "format" but a graph: a model, whose loader says what is missing. */
    { "{\"graph\": {\"nodes\": []}}", TW_FILE_KIND_MODEL, -1, NULL },
    { "{\"traceEvents\": [{\"ph\": \"X\"}]}", TW_FILE_KIND_TRACE, -1, NULL },
    { "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"a\": [1, 2]}, \"traceEvents\": []}",
      TW_FILE_KIND_TRACE, -1, NULL },
    /* A crashed run's stream: unterminated after its first events. */
    { "{\"traceEvents\":[\n{\"ph\":\"X\",\"name\":\"fc1\"", TW_FILE_KIND_TRACE, -1, NULL },
    { "[{\"name\": \"aten::mm\", \"ph\": \"X\"}]", TW_FILE_KIND_TRACE, -1, NULL },
    { " [ ]", TW_FILE_KIND_TRACE, -1, NULL },
    { "[1, 2, 3]", TW_FILE_KIND_UNKNOWN, TW_FILE_KIND_ERROR_UNKNOWN, "not of trace events" },
    { "{\"format\": \"other\", \"graph\": {}}", TW_FILE_KIND_UNKNOWN, TW_FILE_KIND_ERROR_UNKNOWN,
      "\"format\": \"other\"" },
    { "{\"a\": 1, \"b\": [true, null, -2.5e3]}", TW_FILE_KIND_UNKNOWN,
      TW_FILE_KIND_ERROR_UNKNOWN, "without \"format\" or \"traceEvents\"" },
    { "{}", TW_FILE_KIND_UNKNOWN, TW_FILE_KIND_ERROR_UNKNOWN, "neither" },
    { "{\"a\" 1}", TW_FILE_KIND_UNKNOWN, TW_FILE_KIND_ERROR_CORRUPT, "malformed JSON at byte 5" },
    { "{\"a\": 1,, }", TW_FILE_KIND_UNKNOWN, TW_FILE_KIND_ERROR_CORRUPT, "malformed JSON" },
    { "{\"a\": @}", TW_FILE_KIND_UNKNOWN, TW_FILE_KIND_ERROR_CORRUPT, "malformed JSON" },
    { "{\"form", TW_FILE_KIND_UNKNOWN, TW_FILE_KIND_ERROR_CORRUPT, "ends early" },
    { "", TW_FILE_KIND_UNKNOWN, TW_FILE_KIND_ERROR_EMPTY, "crafted is empty" },
    { " \n\t\r\n", TW_FILE_KIND_UNKNOWN, TW_FILE_KIND_ERROR_EMPTY, "white space" },
    { "hello, world\n", TW_FILE_KIND_UNKNOWN, TW_FILE_KIND_ERROR_UNKNOWN, "68 65 6c 6c" },
    { "\"a string\"", TW_FILE_KIND_UNKNOWN, TW_FILE_KIND_ERROR_UNKNOWN, "not a file" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      const json_case *c = &cases[i];
      g_autoptr (GError) error = NULL;
      tw_file_kind k = sniff_mem (c->text, strlen (c->text), NULL, &error);
      if (k != c->kind)
        g_error ("case %zu (%s): %s, expected %s (%s)", i, c->text, tw_file_kind_describe (k),
                 tw_file_kind_describe (c->kind), error ? error->message : "");
      if (c->error_code < 0)
        {
          g_assert_no_error (error);
          continue;
        }
      g_assert_error (error, TW_FILE_KIND_ERROR, c->error_code);
      if (strstr (error->message, c->message) == NULL || strstr (error->message, "crafted") == NULL)
        g_error ("case %zu (%s): message \"%s\" lacks \"%s\" or the name", i, c->text,
                 error->message, c->message);
    }
}

/* PyTorch writes "schemaVersion" and "deviceProperties" (large on machines
 * with many GPUs) before "traceEvents": found past the first read. */
static void
test_trace_members_late (void)
{
  GString *s = g_string_new ("{\"schemaVersion\": 1, \"deviceProperties\": [");
  for (int i = 0; i < 3000; i++)
    g_string_append_printf (s, "%s{\"id\": %d, \"name\": \"GPU {%d}\", \"props\": [1, 2]}",
                            i ? ", " : "", i, i);
  g_string_append (s, "], \"traceEvents\": [{\"ph\": \"X\"}]}");
  g_assert_cmpuint (s->len, >, 100000);
  g_autoptr (GError) error = NULL;
  gboolean gz = TRUE;
  g_assert_cmpint (sniff_mem (s->str, s->len, &gz, &error), ==, TW_FILE_KIND_TRACE);
  g_assert_no_error (error);
  g_assert_false (gz);
  g_autoptr (GBytes) z = gzip_bytes (s->str, s->len);
  g_autofree char *p = write_tmp ("late.pt.trace.json.gz", g_bytes_get_data (z, NULL),
                                  g_bytes_get_size (z));
  assert_kind_file (p, TW_FILE_KIND_TRACE, TRUE);
  g_string_free (s, TRUE);

  /* Beyond the sniff's limit: said so, not read to the end. */
  gsize big = TW_FILE_KIND_SNIFF_MAX + 1000;
  GString *b = g_string_new ("{\"padding\": \"");
  while (b->len < big)
    g_string_append (b, "xxxxxxxxxxxxxxxx");
  g_string_append (b, "\", \"traceEvents\": []}");
  g_assert_cmpint (sniff_mem (b->str, b->len, NULL, &error), ==, TW_FILE_KIND_UNKNOWN);
  g_assert_error (error, TW_FILE_KIND_ERROR, TW_FILE_KIND_ERROR_UNKNOWN);
  g_assert_nonnull (strstr (error->message, "first 4 MiB"));
  g_string_free (b, TRUE);
}

static void
test_gzip (void)
{
  g_autofree char *trace = source_file ("tests/profiler/data/torch-real-trace.json");
  g_autoptr (GBytes) t = read_all (trace);
  g_autoptr (GBytes) z = gzip_bytes (g_bytes_get_data (t, NULL), g_bytes_get_size (t));
  gsize zl;
  const guint8 *zd = g_bytes_get_data (z, &zl);
  g_autoptr (GError) error = NULL;
  gboolean gz = FALSE;
  g_assert_cmpint (sniff_mem (zd, zl, &gz, &error), ==, TW_FILE_KIND_TRACE);
  g_assert_true (gz);
  g_assert_no_error (error);

  /* Truncated after its first deflate block: what inflates decides (the
   * trace reader then reports the truncation). */
  g_assert_cmpuint (zl, >, 200);
  g_assert_cmpint (sniff_mem (zd, zl / 2, &gz, &error), ==, TW_FILE_KIND_TRACE);
  g_assert_no_error (error);
  g_autofree char *half = write_tmp ("half.json.gz", zd, zl / 2);
  assert_kind_file (half, TW_FILE_KIND_TRACE, TRUE);

  /* Truncated inside the gzip header, or right after it: nothing to judge. */
  const gsize cuts[] = { 2, 5, 10, 12 };
  for (gsize i = 0; i < G_N_ELEMENTS (cuts); i++)
    {
      g_assert_cmpint (sniff_mem (zd, cuts[i], &gz, &error), ==, TW_FILE_KIND_UNKNOWN);
      g_assert_error (error, TW_FILE_KIND_ERROR, TW_FILE_KIND_ERROR_CORRUPT);
      g_assert_nonnull (strstr (error->message, "stops early"));
      g_clear_error (&error);
    }

  /* Corrupt right after the header. */
  guint8 *bad = g_memdup2 (zd, zl);
  memset (bad + 10, 0xff, 16);
  g_assert_cmpint (sniff_mem (bad, zl, &gz, &error), ==, TW_FILE_KIND_UNKNOWN);
  g_assert_error (error, TW_FILE_KIND_ERROR, TW_FILE_KIND_ERROR_CORRUPT);
  g_assert_nonnull (strstr (error->message, "corrupt gzip data"));
  g_clear_error (&error);
  g_free (bad);

  /* A gzip file of nothing. */
  g_autoptr (GBytes) empty = gzip_bytes ("", 0);
  g_assert_cmpint (sniff_mem (g_bytes_get_data (empty, NULL), g_bytes_get_size (empty), &gz,
                              &error),
                   ==, TW_FILE_KIND_UNKNOWN);
  g_assert_error (error, TW_FILE_KIND_ERROR, TW_FILE_KIND_ERROR_CORRUPT);
  g_assert_nonnull (strstr (error->message, "holds nothing"));
  g_clear_error (&error);

  /* JSON whose ninth byte is '{', compressed (its size unknown until
   * inflated): not mistaken for a safetensors header. */
  const char *nine = "{\"abcd\":{\"x\": 1}, \"traceEvents\": []}";
  g_assert_cmpint (nine[8], ==, '{');
  g_autoptr (GBytes) z9 = gzip_bytes (nine, strlen (nine));
  g_assert_cmpint (sniff_mem (g_bytes_get_data (z9, NULL), g_bytes_get_size (z9), &gz, &error),
                   ==, TW_FILE_KIND_TRACE);
  g_assert_no_error (error);

  /* Compressed IDX (Fashion-MNIST's files): data. */
  const guint8 idx[] = { 0, 0, 0x08, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3, 4 };
  g_autoptr (GBytes) zi = gzip_bytes (idx, sizeof idx);
  g_assert_cmpint (sniff_mem (g_bytes_get_data (zi, NULL), g_bytes_get_size (zi), &gz, &error),
                   ==, TW_FILE_KIND_DATA);
  g_assert_true (gz);

  /* Random bytes inside a gzip: unknown, said as uncompressed bytes. */
  guint8 noise[64];
  for (gsize i = 0; i < sizeof noise; i++)
    noise[i] = (guint8) (i * 37 + 101);
  g_autoptr (GBytes) zn = gzip_bytes (noise, sizeof noise);
  g_assert_cmpint (sniff_mem (g_bytes_get_data (zn, NULL), g_bytes_get_size (zn), &gz, &error),
                   ==, TW_FILE_KIND_UNKNOWN);
  g_assert_error (error, TW_FILE_KIND_ERROR, TW_FILE_KIND_ERROR_UNKNOWN);
  g_assert_nonnull (strstr (error->message, "uncompressed"));
}

static void
test_onnx_bytes (void)
{
  g_autofree char *onnx = source_file ("tests/onnx/data/convnet.onnx");
  g_autoptr (GBytes) o = read_all (onnx);
  gsize ol;
  const guint8 *od = g_bytes_get_data (o, &ol);
  g_autoptr (GError) error = NULL;
  /* A truncated file is still ONNX (the importer says it is truncated). */
  g_assert_cmpint (tw_file_kind_sniff_bytes ("cut.onnx", od, 40, 40, NULL, &error), ==,
                   TW_FILE_KIND_ONNX);
  g_assert_no_error (error);
  /* Only an ir_version and nothing else: too little to call it ONNX when
   * the file goes on with bytes that are no ModelProto field. */
  const guint8 fake[] = { 0x08, 0x07, 0xff, 0xff, 0xff, 0x00 };
  g_assert_cmpint (sniff_mem (fake, sizeof fake, NULL, &error), ==, TW_FILE_KIND_UNKNOWN);
  g_assert_error (error, TW_FILE_KIND_ERROR, TW_FILE_KIND_ERROR_UNKNOWN);
  g_clear_error (&error);
  /* ir_version out of range. */
  const guint8 big_ir[] = { 0x08, 0xff, 0x01, 0x12, 0x01, 'x' };
  g_assert_cmpint (sniff_mem (big_ir, sizeof big_ir, NULL, &error), ==, TW_FILE_KIND_UNKNOWN);
  g_clear_error (&error);
  /* Fields in another order, no ir_version, a graph: ONNX. */
  const guint8 graph_first[] = { 0x12, 0x01, 'p', 0x3a, 0x02, 0x0a, 0x00 };
  g_assert_cmpint (sniff_mem (graph_first, sizeof graph_first, NULL, &error), ==,
                   TW_FILE_KIND_ONNX);
  g_assert_no_error (error);
  /* A byte that is no ModelProto tag. */
  const guint8 one[] = { 0x08 };
  g_assert_cmpint (sniff_mem (one, sizeof one, NULL, &error), ==, TW_FILE_KIND_UNKNOWN);
  g_clear_error (&error);
}

static void
test_weights_and_data (void)
{
  /* safetensors: header length, then the JSON header. */
  const char st[] = "\x20\0\0\0\0\0\0\0{\"__metadata__\"";
  g_autoptr (GError) error = NULL;
  g_assert_cmpint (tw_file_kind_sniff_bytes ("w.json", (const guint8 *) st, sizeof st - 1, 100,
                                             NULL, &error),
                   ==, TW_FILE_KIND_WEIGHTS);
  /* A header longer than the file: not safetensors (a damaged file, or
   * something else that starts alike). */
  g_assert_cmpint (tw_file_kind_sniff_bytes ("w", (const guint8 *) st, sizeof st - 1,
                                             sizeof st - 1, NULL, &error),
                   ==, TW_FILE_KIND_UNKNOWN);
  g_clear_error (&error);
  char padded[100];
  memset (padded, ' ', sizeof padded);
  memcpy (padded, st, sizeof st - 1);
  g_autofree char *p = write_tmp ("weights.onnx", padded, sizeof padded);
  g_assert_cmpint (tw_file_kind_sniff_openable (p, &error), ==, TW_FILE_KIND_UNKNOWN);
  g_assert_error (error, TW_FILE_KIND_ERROR, TW_FILE_KIND_ERROR_NOT_OPENABLE);
  g_assert_nonnull (strstr (error->message, "weights.onnx: safetensors weights"));
  g_assert_nonnull (strstr (error->message, "Load Weights"));
  g_clear_error (&error);
  const char npy[] = "\x93NUMPY\x01\x00v\x00{'descr': '<f4'";
  g_autofree char *q = write_tmp ("x.json", npy, sizeof npy - 1);
  g_assert_cmpint (tw_file_kind_sniff_openable (q, &error), ==, TW_FILE_KIND_UNKNOWN);
  g_assert_error (error, TW_FILE_KIND_ERROR, TW_FILE_KIND_ERROR_NOT_OPENABLE);
  g_assert_nonnull (strstr (error->message, "x.json: a dataset"));
}

static void
test_not_files (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *missing = g_build_filename (tmpdir, "missing.onnx", NULL);
  g_assert_cmpint (tw_file_kind_sniff (missing, NULL, &error), ==, TW_FILE_KIND_UNKNOWN);
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_NOENT);
  g_assert_nonnull (strstr (error->message, "missing.onnx: No such file"));
  g_clear_error (&error);

  g_assert_cmpint (tw_file_kind_sniff (tmpdir, NULL, &error), ==, TW_FILE_KIND_UNKNOWN);
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_ISDIR);
  g_assert_nonnull (strstr (error->message, "is a folder"));
  g_clear_error (&error);

  /* A fifo with no writer: refused at once, not waited on. */
  g_autofree char *fifo = g_build_filename (tmpdir, "fifo.json", NULL);
  g_assert_cmpint (mkfifo (fifo, 0600), ==, 0);
  g_assert_cmpint (tw_file_kind_sniff (fifo, NULL, &error), ==, TW_FILE_KIND_UNKNOWN);
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL);
  g_assert_nonnull (strstr (error->message, "not a regular file"));
  g_clear_error (&error);
  g_unlink (fifo);

  g_autofree char *empty = write_tmp ("empty.onnx", "", 0);
  g_assert_cmpint (tw_file_kind_sniff (empty, NULL, &error), ==, TW_FILE_KIND_UNKNOWN);
  g_assert_error (error, TW_FILE_KIND_ERROR, TW_FILE_KIND_ERROR_EMPTY);
  g_assert_nonnull (strstr (error->message, "empty.onnx is empty"));
  g_clear_error (&error);

  if (geteuid () != 0)
    {
      g_autofree char *locked = write_tmp ("locked.json", "{}", 2);
      g_chmod (locked, 0);
      g_assert_cmpint (tw_file_kind_sniff (locked, NULL, &error), ==, TW_FILE_KIND_UNKNOWN);
      g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_ACCES);
      g_assert_nonnull (strstr (error->message, "locked.json"));
    }
}

static void
remove_tree (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *n;
  while (d && (n = g_dir_read_name (d)))
    {
      g_autofree char *p = g_build_filename (dir, n, NULL);
      g_unlink (p);
    }
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("twb-file-kind-XXXXXX", NULL);
  g_test_add_func ("/engine/file-kind/real-files", test_real_files);
  g_test_add_func ("/engine/file-kind/misleading-names", test_misleading_names);
  g_test_add_func ("/engine/file-kind/json", test_json);
  g_test_add_func ("/engine/file-kind/trace-members-late", test_trace_members_late);
  g_test_add_func ("/engine/file-kind/gzip", test_gzip);
  g_test_add_func ("/engine/file-kind/onnx-bytes", test_onnx_bytes);
  g_test_add_func ("/engine/file-kind/weights-and-data", test_weights_and_data);
  g_test_add_func ("/engine/file-kind/not-files", test_not_files);
  int status = g_test_run ();
  remove_tree (tmpdir);
  g_free (tmpdir);
  return status;
}
