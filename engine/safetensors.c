/* safetensors.c — the safetensors file format, checked as strictly as the
 * reference implementation (huggingface/safetensors, safetensors/src/tensor.rs):
 * every tensor's byte range must match its dtype and shape, and the ranges,
 * sorted, must tile the data buffer exactly. */
#define G_LOG_DOMAIN "twb-safetensors"

#include "engine/safetensors.h"
#include "engine/fileutil.h"
#include "engine/json-text.h"
#include "engine/memory.h"

#include <json-glib/json-glib.h>
#include <string.h>

#if G_BYTE_ORDER != G_LITTLE_ENDIAN
#error "safetensors.c copies tensor bytes as they are: it needs a little-endian host"
#endif

G_DEFINE_QUARK (tw-safetensors-error-quark, tw_safetensors_error)

/* The 8-byte little-endian u64 header length. */
#define HEADER_LEN_BYTES 8
/* Headers above 100 MB are refused, as the reference implementation does
 * (MAX_HEADER_SIZE in safetensors/src/tensor.rs). */
#define MAX_HEADER_SIZE ((guint64) 100 * 1000 * 1000)
/* The header is padded with spaces so the data starts 8-byte aligned. */
#define HEADER_ALIGN 8

#define METADATA_KEY "__metadata__"

static const struct
{
  const char *name;
  tw_dtype dtype;
} dtype_names[] = {
  { "F32", TW_F32 },
  { "F64", TW_F64 },
  { "I32", TW_I32 },
  { "I64", TW_I64 },
  { "U8", TW_U8 },
};

/* Valid safetensors dtypes that this engine has no tensor type for. */
static const char *const unsupported_dtypes[] = {
  "BOOL", "F16", "BF16", "I8", "I16", "U16", "U32", "U64",
  "F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4", "C64",
};

static const char *
dtype_to_st (tw_dtype dtype)
{
  for (guint i = 0; i < G_N_ELEMENTS (dtype_names); i++)
    if (dtype_names[i].dtype == dtype)
      return dtype_names[i].name;
  return NULL;
}

GHashTable *
tw_tensor_table_new (void)
{
  return g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                (GDestroyNotify) tw_tensor_unref);
}

static GHashTable *
string_table_new (void)
{
  return g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
}

/* ---- loading ------------------------------------------------------------ */

typedef struct
{
  const char *name;      /* borrowed from the JSON tree */
  tw_dtype dtype;
  int ndim;
  int64_t shape[TW_MAX_DIMS];
  guint64 begin, end;    /* relative to the start of the data buffer */
} entry;

static int
entry_cmp (gconstpointer a, gconstpointer b)
{
  const entry *x = a, *y = b;
  if (x->begin != y->begin)
    return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end)
    return x->end < y->end ? -1 : 1;
  return strcmp (x->name, y->name);
}

static gboolean G_GNUC_PRINTF (4, 5)
fail (GError **error, const char *filename, const char *tensor, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  if (tensor != NULL)
    g_set_error (error, TW_SAFETENSORS_ERROR, TW_SAFETENSORS_ERROR_FORMAT,
                 "%s: tensor '%s': %s", filename, tensor, msg);
  else
    g_set_error (error, TW_SAFETENSORS_ERROR, TW_SAFETENSORS_ERROR_FORMAT, "%s: %s", filename,
                 msg);
  return FALSE;
}

/* A JSON integer in [0, 2^63) from node, or FALSE. */
static gboolean
json_uint (JsonNode *node, guint64 *out)
{
  if (node == NULL || !JSON_NODE_HOLDS_VALUE (node)
      || json_node_get_value_type (node) != G_TYPE_INT64)
    return FALSE;
  gint64 v = json_node_get_int (node);
  if (v < 0)
    return FALSE;
  *out = (guint64) v;
  return TRUE;
}

static gboolean
parse_entry (const char *filename, const char *name, JsonNode *node, entry *e, GError **error)
{
  if (!JSON_NODE_HOLDS_OBJECT (node))
    return fail (error, filename, name, "not a JSON object");
  JsonObject *o = json_node_get_object (node);
  e->name = name;

  JsonNode *dn = json_object_get_member (o, "dtype");
  if (dn == NULL)
    return fail (error, filename, name, "missing \"dtype\"");
  if (!JSON_NODE_HOLDS_VALUE (dn) || json_node_get_value_type (dn) != G_TYPE_STRING)
    return fail (error, filename, name, "\"dtype\" is not a string");
  const char *dtype = json_node_get_string (dn);
  gboolean known = FALSE;
  for (guint i = 0; i < G_N_ELEMENTS (dtype_names); i++)
    if (strcmp (dtype, dtype_names[i].name) == 0)
      {
        e->dtype = dtype_names[i].dtype;
        known = TRUE;
      }
  if (!known)
    {
      for (guint i = 0; i < G_N_ELEMENTS (unsupported_dtypes); i++)
        if (strcmp (dtype, unsupported_dtypes[i]) == 0)
          return fail (error, filename, name,
                       "unsupported dtype '%s' (supported: F32, F64, I32, I64, U8)", dtype);
      return fail (error, filename, name, "unknown dtype '%s'", dtype);
    }

  JsonNode *sn = json_object_get_member (o, "shape");
  if (sn == NULL)
    return fail (error, filename, name, "missing \"shape\"");
  if (!JSON_NODE_HOLDS_ARRAY (sn))
    return fail (error, filename, name, "\"shape\" is not an array");
  JsonArray *sa = json_node_get_array (sn);
  guint ndim = json_array_get_length (sa);
  if (ndim > TW_MAX_DIMS)
    return fail (error, filename, name, "%u dimensions; at most %d are supported", ndim,
                 TW_MAX_DIMS);
  e->ndim = (int) ndim;
  guint64 numel = 1;
  for (guint i = 0; i < ndim; i++)
    {
      guint64 d;
      if (!json_uint (json_array_get_element (sa, i), &d))
        return fail (error, filename, name, "shape[%u] is not a non-negative integer", i);
      e->shape[i] = (int64_t) d;
      if (!g_uint64_checked_mul (&numel, numel, d))
        return fail (error, filename, name, "shape overflows");
    }
  guint64 nbytes;
  if (!g_uint64_checked_mul (&nbytes, numel, tw_dtype_size (e->dtype)))
    return fail (error, filename, name, "shape overflows");

  JsonNode *on = json_object_get_member (o, "data_offsets");
  if (on == NULL)
    return fail (error, filename, name, "missing \"data_offsets\"");
  if (!JSON_NODE_HOLDS_ARRAY (on) || json_array_get_length (json_node_get_array (on)) != 2)
    return fail (error, filename, name, "\"data_offsets\" is not an array of two integers");
  JsonArray *oa = json_node_get_array (on);
  if (!json_uint (json_array_get_element (oa, 0), &e->begin)
      || !json_uint (json_array_get_element (oa, 1), &e->end))
    return fail (error, filename, name, "\"data_offsets\" are not non-negative integers");
  if (e->end < e->begin)
    return fail (error, filename, name, "data_offsets [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
                 "] end before they begin", e->begin, e->end);
  if (e->end - e->begin != nbytes)
    {
      g_autofree char *shape = tw_shape_to_string (e->ndim, e->shape);
      return fail (error, filename, name,
                   "data_offsets [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "] hold %"
                   G_GUINT64_FORMAT " bytes but %s %s needs %" G_GUINT64_FORMAT,
                   e->begin, e->end, e->end - e->begin, dtype, shape, nbytes);
    }
  return TRUE;
}

static gboolean
parse_metadata (const char *filename, JsonNode *node, GHashTable *out, GError **error)
{
  if (!JSON_NODE_HOLDS_OBJECT (node))
    return fail (error, filename, NULL, "\"" METADATA_KEY "\" is not an object");
  JsonObject *o = json_node_get_object (node);
  g_autoptr (GList) members = json_object_get_members (o);
  for (GList *l = members; l != NULL; l = l->next)
    {
      const char *key = l->data;
      JsonNode *v = json_object_get_member (o, key);
      if (!JSON_NODE_HOLDS_VALUE (v) || json_node_get_value_type (v) != G_TYPE_STRING)
        return fail (error, filename, NULL, "\"" METADATA_KEY "\".%s is not a string", key);
      g_hash_table_replace (out, g_strdup (key), g_strdup (json_node_get_string (v)));
    }
  return TRUE;
}

/* Parses the whole file image.  On failure the outputs are left untouched. */
gboolean
tw_safetensors_load_from_data (const guint8 *data, gsize len, const char *filename,
                               GHashTable **tensors, GHashTable **metadata, GError **error)
{
  g_return_val_if_fail (data != NULL || len == 0, FALSE);
  g_return_val_if_fail (tensors != NULL, FALSE);
  if (filename == NULL)
    filename = "<memory>";

  if (len < HEADER_LEN_BYTES)
    return fail (error, filename, NULL, "%" G_GSIZE_FORMAT " bytes: too short for the %d-byte "
                 "header length", len, HEADER_LEN_BYTES);
  guint64 n;
  memcpy (&n, data, sizeof n);
  n = GUINT64_FROM_LE (n);
  if (n > len - HEADER_LEN_BYTES)
    return fail (error, filename, NULL, "header of %" G_GUINT64_FORMAT " bytes goes beyond the "
                 "end of the file (%" G_GSIZE_FORMAT " bytes)", n, len);
  if (n > MAX_HEADER_SIZE)
    return fail (error, filename, NULL, "header of %" G_GUINT64_FORMAT " bytes is larger than "
                 "the %" G_GUINT64_FORMAT " allowed", n, MAX_HEADER_SIZE);

  const char *header = (const char *) data + HEADER_LEN_BYTES;
  if (n == 0 || header[0] != '{')
    return fail (error, filename, NULL, "header does not start with '{'");
  /* The rule of every JSON text read (engine/json-text.h): valid UTF-8,
   * nesting within TW_JSON_MAX_DEPTH (a downloaded state_dict nesting
   * 100,000 levels would overflow json-glib's recursion), nothing but the
   * padding spaces after the object. */
  g_autoptr (GError) jerr = NULL;
  g_autoptr (JsonParser) parser = tw_json_parse (header, (gsize) n, "header", &jerr);
  if (parser == NULL)
    return fail (error, filename, NULL, "%s", jerr->message);
  JsonNode *root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    return fail (error, filename, NULL, "header is not a JSON object");
  JsonObject *obj = json_node_get_object (root);

  g_autoptr (GHashTable) meta = string_table_new ();
  g_autoptr (GArray) entries = g_array_new (FALSE, TRUE, sizeof (entry));
  g_autoptr (GList) members = json_object_get_members (obj);
  for (GList *l = members; l != NULL; l = l->next)
    {
      const char *name = l->data;
      JsonNode *node = json_object_get_member (obj, name);
      if (strcmp (name, METADATA_KEY) == 0)
        {
          if (!parse_metadata (filename, node, meta, error))
            return FALSE;
          continue;
        }
      entry e = { 0 };
      if (!parse_entry (filename, name, node, &e, error))
        return FALSE;
      g_array_append_val (entries, e);
    }

  /* Sorted by offset, the byte ranges must follow one another from 0 to the
   * end of the buffer with no gap and no overlap. */
  const guint8 *buffer = data + HEADER_LEN_BYTES + n;
  guint64 buffer_len = len - HEADER_LEN_BYTES - n;
  g_array_sort (entries, entry_cmp);
  guint64 expect = 0;
  for (guint i = 0; i < entries->len; i++)
    {
      const entry *e = &g_array_index (entries, entry, i);
      if (e->end > buffer_len)
        return fail (error, filename, e->name,
                     "data_offsets [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "] go beyond "
                     "the %" G_GUINT64_FORMAT "-byte data buffer", e->begin, e->end, buffer_len);
      if (e->begin < expect)
        return fail (error, filename, e->name,
                     "data_offsets [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "] overlap "
                     "the previous tensor, which ends at %" G_GUINT64_FORMAT,
                     e->begin, e->end, expect);
      if (e->begin > expect)
        return fail (error, filename, e->name,
                     "data_offsets [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "] leave bytes "
                     "%" G_GUINT64_FORMAT "..%" G_GUINT64_FORMAT " unused",
                     e->begin, e->end, expect, e->begin);
      expect = e->end;
    }
  if (expect != buffer_len)
    return fail (error, filename, NULL, "tensors cover %" G_GUINT64_FORMAT " bytes of a %"
                 G_GUINT64_FORMAT "-byte data buffer", expect, buffer_len);

  /* The copies take as much as the data buffer. */
  g_autoptr (GError) oom = NULL;
  if (!tw_memory_check (buffer_len, "its tensors", &oom))
    return fail (error, filename, NULL, "%s", oom->message);
  g_autoptr (GHashTable) out = tw_tensor_table_new ();
  for (guint i = 0; i < entries->len; i++)
    {
      const entry *e = &g_array_index (entries, entry, i);
      tw_tensor *t = tw_tensor_try_new (e->dtype, e->ndim, e->shape);
      if (t == NULL)
        return fail (error, filename, e->name, "out of memory for %" G_GUINT64_FORMAT " bytes",
                     e->end - e->begin);
      if (e->end > e->begin)
        memcpy (tw_tensor_data (t), buffer + e->begin, (size_t) (e->end - e->begin));
      g_hash_table_replace (out, g_strdup (e->name), t);
    }

  *tensors = g_steal_pointer (&out);
  if (metadata != NULL)
    *metadata = g_steal_pointer (&meta);
  return TRUE;
}

/* Reads path through a read-only mapping.  *metadata (when asked for) is
 * always a table, empty when the file has no "__metadata__". */
gboolean
tw_safetensors_load (const char *path, GHashTable **tensors, GHashTable **metadata,
                     GError **error)
{
  g_autoptr (GError) ioerr = NULL;
  g_autoptr (GMappedFile) map = tw_file_map_regular (path, &ioerr);
  if (map == NULL)
    {
      g_set_error_literal (error, TW_SAFETENSORS_ERROR, TW_SAFETENSORS_ERROR_IO, ioerr->message);
      return FALSE;
    }
  /* An empty file maps to NULL contents; the parser reports it as too short. */
  static const guint8 empty[1] = { 0 };
  const guint8 *data = (const guint8 *) g_mapped_file_get_contents (map);
  gsize len = g_mapped_file_get_length (map);
  return tw_safetensors_load_from_data (data != NULL ? data : empty, data != NULL ? len : 0,
                                        path, tensors, metadata, error);
}

/* ---- saving ------------------------------------------------------------- */

static int
str_ptr_cmp (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

/* Keys of table, sorted; the array borrows them. */
static GPtrArray *
sorted_keys (GHashTable *table)
{
  GPtrArray *keys = g_ptr_array_new ();
  if (table == NULL)
    return keys;
  GHashTableIter it;
  gpointer k;
  g_hash_table_iter_init (&it, table);
  while (g_hash_table_iter_next (&it, &k, NULL))
    g_ptr_array_add (keys, k);
  g_ptr_array_sort (keys, str_ptr_cmp);
  return keys;
}

/* Tensors may have any layout (non-contiguous ones are copied one at a
 * time as they are written); the header is built in memory and the file is
 * written through tw_save (engine/fileutil.h): on any failure path keeps its
 * old contents. */
gboolean
tw_safetensors_save (const char *path, GHashTable *tensors, GHashTable *metadata,
                     GError **error)
{
  g_return_val_if_fail (path != NULL && tensors != NULL, FALSE);

  g_autoptr (GPtrArray) names = sorted_keys (tensors);
  g_autoptr (JsonBuilder) b = json_builder_new_immutable ();
  json_builder_begin_object (b);

  g_autoptr (GPtrArray) meta_keys = sorted_keys (metadata);
  if (meta_keys->len > 0)
    {
      json_builder_set_member_name (b, METADATA_KEY);
      json_builder_begin_object (b);
      for (guint i = 0; i < meta_keys->len; i++)
        {
          const char *key = meta_keys->pdata[i];
          const char *value = g_hash_table_lookup (metadata, key);
          if (value == NULL)
            return fail (error, path, NULL, "metadata '%s' has no value", key);
          json_builder_set_member_name (b, key);
          json_builder_add_string_value (b, value);
        }
      json_builder_end_object (b);
    }

  guint64 offset = 0;
  for (guint i = 0; i < names->len; i++)
    {
      const char *name = names->pdata[i];
      tw_tensor *t = g_hash_table_lookup (tensors, name);
      if (strcmp (name, METADATA_KEY) == 0)
        return fail (error, path, name, "the name is reserved for the metadata");
      if (t == NULL)
        return fail (error, path, name, "no tensor");
      const char *dtype = dtype_to_st (t->dtype);
      if (dtype == NULL)
        return fail (error, path, name, "dtype %s has no safetensors name",
                     tw_dtype_name (t->dtype));
      guint64 nbytes = tw_tensor_nbytes (t);

      json_builder_set_member_name (b, name);
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "dtype");
      json_builder_add_string_value (b, dtype);
      json_builder_set_member_name (b, "shape");
      json_builder_begin_array (b);
      for (int d = 0; d < t->ndim; d++)
        json_builder_add_int_value (b, t->shape[d]);
      json_builder_end_array (b);
      json_builder_set_member_name (b, "data_offsets");
      json_builder_begin_array (b);
      json_builder_add_int_value (b, (gint64) offset);
      json_builder_add_int_value (b, (gint64) (offset + nbytes));
      json_builder_end_array (b);
      json_builder_end_object (b);
      offset += nbytes;
    }
  json_builder_end_object (b);

  g_autoptr (JsonNode) root = json_builder_get_root (b);
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  json_generator_set_root (gen, root);
  gsize json_len;
  g_autofree char *json = json_generator_to_data (gen, &json_len);

  gsize header_len = (json_len + HEADER_ALIGN - 1) / HEADER_ALIGN * HEADER_ALIGN;
  g_autofree char *header = g_malloc (header_len);
  memcpy (header, json, json_len);
  memset (header + json_len, ' ', header_len - json_len);
  guint64 n_le = GUINT64_TO_LE ((guint64) header_len);

  g_autoptr (GError) ioerr = NULL;
  g_autoptr (tw_save) save = tw_save_begin (path, &ioerr);
  gboolean ok = save != NULL && tw_save_write (save, &n_le, sizeof n_le, &ioerr)
                && tw_save_write (save, header, header_len, &ioerr);
  for (guint i = 0; ok && i < names->len; i++)
    {
      g_autoptr (tw_tensor) c = tw_tensor_contiguous (g_hash_table_lookup (tensors, names->pdata[i]));
      ok = tw_save_write (save, tw_tensor_data (c), tw_tensor_nbytes (c), &ioerr);
    }
  if (!ok || !tw_save_commit (g_steal_pointer (&save), &ioerr))
    {
      g_set_error_literal (error, TW_SAFETENSORS_ERROR, TW_SAFETENSORS_ERROR_IO, ioerr->message);
      return FALSE;
    }
  return TRUE;
}
