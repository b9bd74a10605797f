/* test-input-limits.c — the limits every reader holds crafted input to,
 * each checked through the readers that share it:
 *
 * - JSON text (engine/json-text.h): nesting deeper than 64 levels (100,000
 *   nested '[' overflowed json-glib's recursion in safetensors headers and
 *   attribute values), invalid UTF-8 (overlong forms, surrogates, NUL),
 *   content after the value, integers beyond int64 — refused with the line,
 *   the file named by the reader; the accepted forms still read.
 *
 * Inputs are generated here, at run time. */
#include "engine/attrs.h"
#include "engine/json-text.h"
#include "engine/model.h"
#include "engine/safetensors.h"

#include <glib/gstdio.h>
#include <string.h>

/* Nesting of the crafted inputs: far beyond what a recursive parser
 * survives on an 8 MiB stack. */
#define DEEP 100000

static char *
nested (const char *open, const char *close, int depth, const char *inside)
{
  GString *s = g_string_sized_new ((gsize) depth * (strlen (open) + strlen (close)) + 16);
  for (int i = 0; i < depth; i++)
    g_string_append (s, open);
  g_string_append (s, inside);
  for (int i = 0; i < depth; i++)
    g_string_append (s, close);
  return g_string_free (s, FALSE);
}

static void
test_json_rule (void)
{
  static const struct
  {
    const char *text;
    gsize len;          /* 0: strlen */
    const char *expect; /* NULL: accepted */
  } cases[] = {
    { "{\"a\": [1, 2, {\"b\": null}]}", 0, NULL },
    { "  [1]  \n", 0, NULL },
    { "\"just a string\"", 0, NULL },
    { "-9223372036854775808", 0, NULL },
    { "{\"k\": \"caf\xc3\xa9 \\ud83d\\ude00\"}", 0, NULL },
    { "{\"a\": 1} {\"b\": 2}", 0,
      "line 1, column 10: content after the end of the top-level value" },
    { "\"a\" \"b\"", 0, "content after the end" },
    { "[9223372036854775808]", 0, "integer 9223372036854775808 is out of range" },
    { "[-9223372036854775809]", 0, "out of range" },
    /* Overlong NUL (C0 80), a UTF-16 surrogate (ED A0 80), a bare
     * continuation byte, an overlong '/' (E0 80 AF), a NUL byte. */
    { "[\"\xc0\x80\"]", 0, "line 1: not valid UTF-8 text" },
    { "[\"\xed\xa0\x80\"]", 0, "not valid UTF-8" },
    { "[\"\x80\"]", 0, "not valid UTF-8" },
    { "[\"\xe0\x80\xaf\"]", 0, "not valid UTF-8" },
    { "[\"a\0b\"]", 7, "not valid UTF-8" },
    { "\n\n[\"\xc0\x80\"]", 0, "line 3: not valid UTF-8" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr (GError) error = NULL;
      gsize len = cases[i].len ? cases[i].len : strlen (cases[i].text);
      gboolean ok = tw_json_text_check (cases[i].text, len, &error);
      if (cases[i].expect == NULL)
        {
          g_assert_no_error (error);
          g_assert_true (ok);
          g_autoptr (JsonParser) p = tw_json_parse (cases[i].text, len, "t.json", &error);
          g_assert_no_error (error);
          g_assert_nonnull (p);
        }
      else
        {
          g_assert_false (ok);
          g_assert_error (error, TW_JSON_ERROR, TW_JSON_ERROR_INVALID);
          g_assert_nonnull (strstr (error->message, cases[i].expect));
        }
    }

  /* The depth limit: 64 levels read, 65 refused, 100,000 refused at once. */
  g_autofree char *ok64 = nested ("[", "]", TW_JSON_MAX_DEPTH, "1");
  g_autofree char *bad65 = nested ("[", "]", TW_JSON_MAX_DEPTH + 1, "1");
  g_autofree char *deep = nested ("{\"a\":", "}", DEEP, "1");
  g_autoptr (GError) error = NULL;
  g_autoptr (JsonParser) p = tw_json_parse (ok64, strlen (ok64), "ok.json", &error);
  g_assert_no_error (error);
  g_assert_null (tw_json_parse (bad65, strlen (bad65), "bad.json", &error));
  g_assert_nonnull (strstr (error->message, "bad.json: line 1: nested more than 64 levels deep"));
  g_clear_error (&error);
  g_assert_null (tw_json_parse (deep, strlen (deep), "deep.json", &error));
  g_assert_nonnull (strstr (error->message, "deep.json: line 1: nested more than 64 levels deep"));
  g_clear_error (&error);
  /* Brackets inside strings do not count. */
  g_autofree char *in_string = g_strdup_printf ("[\"%s\"]", bad65);
  g_assert_true (tw_json_text_check (in_string, strlen (in_string), &error));
  g_assert_no_error (error);
}

/* A safetensors file of one header (padded to 8 bytes) and data bytes. */
static GBytes *
safetensors_bytes (const char *header, gsize data_len)
{
  gsize n = strlen (header), padded = (n + 7) / 8 * 8;
  GByteArray *b = g_byte_array_new ();
  guint64 le = GUINT64_TO_LE ((guint64) padded);
  g_byte_array_append (b, (const guint8 *) &le, 8);
  g_byte_array_append (b, (const guint8 *) header, (guint) n);
  for (gsize i = n; i < padded; i++)
    g_byte_array_append (b, (const guint8 *) " ", 1);
  for (gsize i = 0; i < data_len; i++)
    g_byte_array_append (b, (const guint8 *) "\0", 1);
  return g_byte_array_free_to_bytes (b);
}

/* A 200 KB header nesting 100,000 levels (any downloaded state_dict can):
 * it crashed every command reading weights.  Refused naming the file; the
 * file itself is left alone. */
static void
test_safetensors_deep (void)
{
  g_autofree char *dir = g_dir_make_tmp ("twb-limits-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "deep.safetensors", NULL);
  g_autofree char *inner = nested ("[", "]", DEEP, "");
  g_autofree char *header =
    g_strdup_printf ("{\"__metadata__\": {\"x\": \"1\"}, \"w\": %s}", inner);
  g_autoptr (GBytes) bytes = safetensors_bytes (header, 0);
  gsize len;
  const guint8 *data = g_bytes_get_data (bytes, &len);
  g_assert_true (g_file_set_contents (path, (const char *) data, (gssize) len, NULL));

  g_autoptr (GHashTable) tensors = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_false (tw_safetensors_load (path, &tensors, NULL, &error));
  g_assert_error (error, TW_SAFETENSORS_ERROR, TW_SAFETENSORS_ERROR_FORMAT);
  g_assert_nonnull (
    strstr (error->message, "deep.safetensors: header: line 1: nested more than 64"));
  g_assert_null (tensors);
  g_clear_error (&error);

  /* In memory too, and a shallow header still loads. */
  g_assert_false (tw_safetensors_load_from_data (data, len, "mem", &tensors, NULL, &error));
  g_assert_nonnull (strstr (error->message, "nested more than 64 levels deep"));
  g_clear_error (&error);
  g_autoptr (GBytes) good = safetensors_bytes (
    "{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}", 8);
  data = g_bytes_get_data (good, &len);
  g_assert_true (tw_safetensors_load_from_data (data, len, "good", &tensors, NULL, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (g_hash_table_size (tensors), ==, 1);

  g_unlink (path);
  g_rmdir (dir);
}

/* A model file nesting 100,000 levels inside a node's attributes. */
static void
test_model_deep (void)
{
  g_autofree char *inner = nested ("[", "]", DEEP, "1");
  g_autofree char *text = g_strdup_printf (
    "{\"format\": \"twb-model\", \"version\": 1, \"graph\": {\"nodes\": [{\"id\": \"x\", "
    "\"op\": \"input\", \"attrs\": {\"shape\": %s}}]}}",
    inner);
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = tw_model_load_from_data (text, -1, "deep.json", &error);
  g_assert_null (m);
  g_assert_error (error, TW_MODEL_ERROR, TW_MODEL_ERROR_PARSE);
  g_assert_nonnull (strstr (error->message, "deep.json: line 1: nested more than 64 levels deep"));
}

/* An attribute value typed in the editor's inspector. */
static void
test_attr_value_deep (void)
{
  g_autofree char *deep = nested ("[", "]", DEEP, "1");
  tw_attr_value v = { 0 };
  g_autoptr (GError) error = NULL;
  g_assert_false (tw_attr_value_parse (TW_ATTR_INTS, deep, &v, &error));
  g_assert_nonnull (strstr (error->message, "nested more than 64 levels deep"));
  g_clear_error (&error);
  /* "1], [2" made "[1], [2]": json-glib read the first value only. */
  g_assert_false (tw_attr_value_parse (TW_ATTR_INTS, "1], [2", &v, &error));
  g_assert_nonnull (strstr (error->message, "content after the end"));
  g_clear_error (&error);
  g_assert_true (tw_attr_value_parse (TW_ATTR_INTS, "[3, 4]", &v, &error));
  g_assert_no_error (error);
  g_assert_cmpint (v.n, ==, 2);
  g_assert_cmpint (v.ints[1], ==, 4);
  tw_attr_value_clear (&v);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/limits/json/rule", test_json_rule);
  g_test_add_func ("/engine/limits/json/safetensors", test_safetensors_deep);
  g_test_add_func ("/engine/limits/json/model", test_model_deep);
  g_test_add_func ("/engine/limits/json/attr-value", test_attr_value_deep);
  return g_test_run ();
}
