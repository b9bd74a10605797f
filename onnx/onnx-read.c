/* onnx-read.c — ONNX files read safely, and tensors both ways. */
#define G_LOG_DOMAIN "tw-onnx"

#include "onnx/onnx-read.h"
#include "engine/fileutil.h"
#include "engine/memory.h"

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

/* raw_data is little-endian; the engine's tensors are host order. */
#if G_BYTE_ORDER != G_LITTLE_ENDIAN
#error "onnx-read.c reads raw_data by memcpy: little-endian hosts only"
#endif

G_DEFINE_QUARK (tw-onnx-error-quark, tw_onnx_error)

typedef Onnx__TensorProto__DataType onnx_dtype;

/* ---- Data types ------------------------------------------------------ */

typedef enum
{
  FIELD_NONE,
  FIELD_FLOAT,
  FIELD_INT32,
  FIELD_INT64,
  FIELD_DOUBLE,
  FIELD_UINT64,
} typed_field;

typedef struct
{
  const char *name;
  size_t raw_size;      /* bytes per element in raw_data; 0: unsupported */
  typed_field field;    /* where the typed form keeps the values */
  tw_dtype tw;
} dtype_info;

/* Which typed field holds which type: onnx.proto's comments on float_data,
 * int32_data, int64_data, double_data and uint64_data. */
static gboolean
dtype_lookup (int32_t dt, dtype_info *out)
{
  switch (dt)
    {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
      *out = (dtype_info) { "FLOAT", 4, FIELD_FLOAT, TW_F32 };
      return TRUE;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
      *out = (dtype_info) { "DOUBLE", 8, FIELD_DOUBLE, TW_F64 };
      return TRUE;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
      *out = (dtype_info) { "FLOAT16", 2, FIELD_INT32, TW_F32 };
      return TRUE;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
      *out = (dtype_info) { "BFLOAT16", 2, FIELD_INT32, TW_F32 };
      return TRUE;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
      *out = (dtype_info) { "INT32", 4, FIELD_INT32, TW_I32 };
      return TRUE;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
      *out = (dtype_info) { "INT16", 2, FIELD_INT32, TW_I32 };
      return TRUE;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
      *out = (dtype_info) { "INT8", 1, FIELD_INT32, TW_I32 };
      return TRUE;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16:
      *out = (dtype_info) { "UINT16", 2, FIELD_INT32, TW_I32 };
      return TRUE;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
      *out = (dtype_info) { "UINT8", 1, FIELD_INT32, TW_U8 };
      return TRUE;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
      *out = (dtype_info) { "BOOL", 1, FIELD_INT32, TW_U8 };
      return TRUE;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
      *out = (dtype_info) { "INT64", 8, FIELD_INT64, TW_I64 };
      return TRUE;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
      *out = (dtype_info) { "UINT32", 4, FIELD_UINT64, TW_I64 };
      return TRUE;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64:
      *out = (dtype_info) { "UINT64", 0, FIELD_UINT64, TW_I64 };
      return FALSE;
    case ONNX__TENSOR_PROTO__DATA_TYPE__STRING:
      *out = (dtype_info) { "STRING", 0, FIELD_NONE, TW_F32 };
      return FALSE;
    case ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64:
      *out = (dtype_info) { "COMPLEX64", 0, FIELD_NONE, TW_F32 };
      return FALSE;
    case ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX128:
      *out = (dtype_info) { "COMPLEX128", 0, FIELD_NONE, TW_F32 };
      return FALSE;
    default:
      *out = (dtype_info) { "UNDEFINED", 0, FIELD_NONE, TW_F32 };
      return FALSE;
    }
}

static size_t
typed_count (const Onnx__TensorProto *t, typed_field f)
{
  switch (f)
    {
    case FIELD_FLOAT:
      return t->n_float_data;
    case FIELD_INT32:
      return t->n_int32_data;
    case FIELD_INT64:
      return t->n_int64_data;
    case FIELD_DOUBLE:
      return t->n_double_data;
    case FIELD_UINT64:
      return t->n_uint64_data;
    case FIELD_NONE:
    default:
      return 0;
    }
}

static gboolean
is_external (const Onnx__TensorProto *t)
{
  return (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
         || t->n_external_data > 0;
}

static const char *
external_location (const Onnx__TensorProto *t)
{
  for (size_t i = 0; i < t->n_external_data; i++)
    if (g_strcmp0 (t->external_data[i]->key, "location") == 0)
      return t->external_data[i]->value;
  return NULL;
}

/* Checks t's type, dims and data against each other without touching the
 * values; *info and *numel on success. */
static gboolean
tensor_check (const Onnx__TensorProto *t, const char *what, dtype_info *info, int64_t *numel,
              GError **error)
{
  if (!dtype_lookup (t->has_data_type ? t->data_type : 0, info))
    {
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED,
                   "%s: data type %s (%d) is not supported", what, info->name,
                   t->has_data_type ? t->data_type : 0);
      return FALSE;
    }
  if (is_external (t))
    {
      const char *loc = external_location (t);
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_EXTERNAL,
                   "%s: data is in an external file ('%s'), which is not supported", what,
                   loc != NULL ? loc : "(no location)");
      return FALSE;
    }
  if (t->segment != NULL)
    {
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED,
                   "%s: segmented tensors are not supported", what);
      return FALSE;
    }
  if (t->n_dims > TW_MAX_DIMS)
    {
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_TENSOR,
                   "%s: %zu dims, more than the %d twb tensors have", what, t->n_dims,
                   TW_MAX_DIMS);
      return FALSE;
    }
  int64_t n = 1;
  for (size_t i = 0; i < t->n_dims; i++)
    {
      if (t->dims[i] < 0)
        {
          g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_TENSOR,
                       "%s: dim %zu is negative (%" G_GINT64_FORMAT ")", what, i,
                       (gint64) t->dims[i]);
          return FALSE;
        }
      if (!tw_size_mul (n, t->dims[i], &n) || n > TW_ONNX_MAX_TENSOR_ELEMS)
        {
          g_autofree char *dims = tw_shape_to_string ((int) t->n_dims, t->dims);
          g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_TENSOR,
                       "%s: dims %s exceed %" G_GINT64_FORMAT " elements", what, dims,
                       (gint64) TW_ONNX_MAX_TENSOR_ELEMS);
          return FALSE;
        }
    }

  size_t typed = typed_count (t, info->field);
  if (t->has_raw_data)
    {
      /* n <= 2^31 and raw_size <= 8: no overflow. */
      size_t want = (size_t) n * info->raw_size;
      if (t->raw_data.len != want)
        {
          g_autofree char *dims = tw_shape_to_string ((int) t->n_dims, t->dims);
          g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_TENSOR,
                       "%s: raw_data holds %zu bytes, dims %s of %s need %zu", what,
                       t->raw_data.len, dims, info->name, want);
          return FALSE;
        }
    }
  else if (typed != (size_t) n)
    {
      g_autofree char *dims = tw_shape_to_string ((int) t->n_dims, t->dims);
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_TENSOR,
                   "%s: %zu values stored, dims %s need %" G_GINT64_FORMAT, what, typed, dims,
                   (gint64) n);
      return FALSE;
    }
  *numel = n;
  return TRUE;
}

static float
half_to_float (guint16 h)
{
  guint32 sign = (guint32) (h & 0x8000) << 16;
  guint32 exp = (h >> 10) & 0x1f;
  guint32 man = h & 0x3ff;
  guint32 bits;
  if (exp == 0x1f)
    bits = sign | 0x7f800000 | (man << 13);
  else if (exp != 0)
    bits = sign | ((exp + 112) << 23) | (man << 13);
  else if (man == 0)
    bits = sign;
  else
    {
      /* Subnormal half: normalise. */
      exp = 113;
      while ((man & 0x400) == 0)
        {
          man <<= 1;
          exp--;
        }
      bits = sign | (exp << 23) | ((man & 0x3ff) << 13);
    }
  float f;
  memcpy (&f, &bits, 4);
  return f;
}

static float
bfloat_to_float (guint16 b)
{
  guint32 bits = (guint32) b << 16;
  float f;
  memcpy (&f, &bits, 4);
  return f;
}

/* Element i of the raw little-endian bytes p, widened to the tw dtype. */
static void
convert_raw (int32_t dt, const guint8 *p, int64_t n, void *dst)
{
  switch (dt)
    {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
      {
        dtype_info info;
        dtype_lookup (dt, &info);
        memcpy (dst, p, (size_t) n * info.raw_size);
        return;
      }
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
      for (int64_t i = 0; i < n; i++)
        ((uint8_t *) dst)[i] = p[i] != 0;
      return;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
      for (int64_t i = 0; i < n; i++)
        ((int32_t *) dst)[i] = (int8_t) p[i];
      return;
    default:
      break;
    }
  for (int64_t i = 0; i < n; i++)
    {
      guint16 v16;
      guint32 v32;
      switch (dt)
        {
        case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
          memcpy (&v16, p + 2 * i, 2);
          ((int32_t *) dst)[i] = (int16_t) v16;
          break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16:
          memcpy (&v16, p + 2 * i, 2);
          ((int32_t *) dst)[i] = v16;
          break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
          memcpy (&v16, p + 2 * i, 2);
          ((float *) dst)[i] = half_to_float (v16);
          break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
          memcpy (&v16, p + 2 * i, 2);
          ((float *) dst)[i] = bfloat_to_float (v16);
          break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
          memcpy (&v32, p + 4 * i, 4);
          ((int64_t *) dst)[i] = v32;
          break;
        default:
          g_assert_not_reached ();
        }
    }
}

/* The typed fields, narrowed to the tw dtype (int32_data holds the 16-bit
 * types' bit patterns in its low bits). */
static void
convert_typed (const Onnx__TensorProto *t, int64_t n, void *dst)
{
  switch (t->data_type)
    {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
      memcpy (dst, t->float_data, (size_t) n * sizeof (float));
      return;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
      memcpy (dst, t->double_data, (size_t) n * sizeof (double));
      return;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
      memcpy (dst, t->int64_data, (size_t) n * sizeof (int64_t));
      return;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
      for (int64_t i = 0; i < n; i++)
        ((int64_t *) dst)[i] = (uint32_t) t->uint64_data[i];
      return;
    default:
      break;
    }
  for (int64_t i = 0; i < n; i++)
    {
      int32_t v = t->int32_data[i];
      switch (t->data_type)
        {
        case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
          ((int32_t *) dst)[i] = v;
          break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
          ((int32_t *) dst)[i] = (int16_t) v;
          break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
          ((int32_t *) dst)[i] = (int8_t) v;
          break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16:
          ((int32_t *) dst)[i] = (uint16_t) v;
          break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
          ((uint8_t *) dst)[i] = (uint8_t) v;
          break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
          ((uint8_t *) dst)[i] = v != 0;
          break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
          ((float *) dst)[i] = half_to_float ((guint16) v);
          break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
          ((float *) dst)[i] = bfloat_to_float ((guint16) v);
          break;
        default:
          g_assert_not_reached ();
        }
    }
}

tw_tensor *
tw_onnx_tensor_to_tw (const Onnx__TensorProto *t, const char *what, GError **error)
{
  dtype_info info;
  int64_t n;
  if (!tensor_check (t, what, &info, &n, error))
    return NULL;
  tw_tensor *x = tw_tensor_try_new (info.tw, (int) t->n_dims, t->dims);
  if (x == NULL)
    {
      g_autofree char *dims = tw_shape_to_string ((int) t->n_dims, t->dims);
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_TENSOR,
                   "%s: not enough memory for a %s tensor of dims %s", what,
                   tw_dtype_name (info.tw), dims);
      return NULL;
    }
  if (n > 0)
    {
      if (t->has_raw_data)
        convert_raw (t->data_type, t->raw_data.data, n, tw_tensor_data (x));
      else
        convert_typed (t, n, tw_tensor_data (x));
    }
  return x;
}

/* ---- Files ----------------------------------------------------------- */

/* ---- Unpacking within a budget ---------------------------------------- */

/* protobuf-c unpacks a message whole, each sub-message a struct of a few
 * hundred bytes: a 28 MB file of one node with 14 million empty attributes
 * (2 bytes each on the wire) took 4.09 GB, one of empty initializers 4.17
 * GB.  So unpacking allocates through a budget: 64 MiB plus 8 times the
 * file (a real model unpacks to about its size: raw_data is copied once;
 * int64_data packed as one-byte varints is the widest legitimate growth,
 * 8x), never more than the memory available (engine/memory.h).  Past it
 * every allocation fails and protobuf-c gives up (it checks each one). */
#define UNPACK_BASE_BYTES ((guint64) 64 << 20)
#define UNPACK_PER_FILE_BYTE 8

typedef struct
{
  guint64 used, budget;
  gboolean over;
} unpack_budget;

/* What glibc's malloc takes for size bytes: size plus 8, rounded up to 16,
 * at least 32 (malloc/malloc.c's chunk sizes on 64-bit). */
static guint64
malloc_chunk (guint64 size)
{
  return MAX ((guint64) 32, (size + 8 + 15) & ~(guint64) 15);
}

static void *
budget_alloc (void *data, size_t size)
{
  unpack_budget *b = data;
  guint64 chunk = malloc_chunk (size);
  if (b->over || chunk > b->budget - b->used)
    {
      b->over = TRUE;
      return NULL;
    }
  void *p = malloc (size);
  if (p != NULL)
    b->used += chunk;
  return p;
}

/* malloc's memory: free_unpacked (m, NULL), protobuf-c's default
 * allocator, frees it as well. */
static void
budget_free (void *data, void *p)
{
  (void) data;
  free (p);
}

static void
budget_init (unpack_budget *b, ProtobufCAllocator *a, gsize len)
{
  guint64 avail = tw_memory_available ();
  b->used = 0;
  b->over = FALSE;
  b->budget = UNPACK_BASE_BYTES + (guint64) len * UNPACK_PER_FILE_BYTE;
  if (avail > 0)
    b->budget = MIN (b->budget, avail);
  *a = (ProtobufCAllocator) { budget_alloc, budget_free, b };
}

static void
set_budget_error (GError **error, const char *filename, gsize len, const unpack_budget *b)
{
  g_autofree char *size = tw_format_bytes (len);
  g_autofree char *limit = tw_format_bytes (b->budget);
  g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_PARSE,
               "%s: its %s unpack into more than %s of protobuf messages (the limit: 64 MiB "
               "plus 8 times the file, within the memory available): far more messages than "
               "its data can fill", filename, size, limit);
}

static gboolean wire_check (const guint8 *p, gsize len, const ProtobufCMessageDescriptor *desc,
                            const char *filename, GError **error);

static GMappedFile *
map_file (const char *path, GError **error)
{
  GStatBuf st;
  if (g_stat (path, &st) != 0)
    {
      int e = errno;
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_READ, "%s: %s", path, g_strerror (e));
      return NULL;
    }
  if (!S_ISREG (st.st_mode))
    {
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_READ, "%s: not a regular file", path);
      return NULL;
    }
  if ((guint64) st.st_size > TW_ONNX_MAX_FILE_BYTES)
    {
      g_autofree char *size = tw_format_bytes ((guint64) st.st_size);
      g_autofree char *max = tw_format_bytes (TW_ONNX_MAX_FILE_BYTES);
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_READ,
                   "%s: %s, larger than protobuf's limit of %s", path, size, max);
      return NULL;
    }
  GError *e = NULL;
  GMappedFile *f = g_mapped_file_new (path, FALSE, &e);
  if (f == NULL)
    {
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_READ, "%s", e->message);
      g_error_free (e);
    }
  return f;
}

tw_tensor *
tw_onnx_read_tensor_file (const char *path, GError **error)
{
  g_autoptr (GMappedFile) f = map_file (path, error);
  if (f == NULL)
    return NULL;
  const guint8 *data = (const guint8 *) g_mapped_file_get_contents (f);
  gsize len = g_mapped_file_get_length (f);
  if (len == 0)
    {
      /* Zero bytes parse as a TensorProto with nothing set. */
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_PARSE, "%s: empty file", path);
      return NULL;
    }
  unpack_budget budget;
  ProtobufCAllocator alloc;
  budget_init (&budget, &alloc, len);
  if (!wire_check (data, len, &onnx__tensor_proto__descriptor, path, error))
    return NULL;
  Onnx__TensorProto *t = onnx__tensor_proto__unpack (&alloc, len, data);
  if (t == NULL && budget.over)
    {
      set_budget_error (error, path, len, &budget);
      return NULL;
    }
  if (t == NULL)
    {
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_PARSE,
                   "%s: not a serialized ONNX TensorProto (%zu bytes)", path, len);
      return NULL;
    }
  g_autofree char *what = t->name != NULL && t->name[0] != '\0'
                            ? g_strdup_printf ("%s: tensor '%s'", path, t->name)
                            : g_strdup_printf ("%s: tensor", path);
  tw_tensor *x = tw_onnx_tensor_to_tw (t, what, error);
  onnx__tensor_proto__free_unpacked (t, NULL);
  return x;
}

/* ---- Models ---------------------------------------------------------- */

/* protobuf-c unpacks nested messages by recursion, without a limit: a file
 * of a few MB nesting 100,000 subgraphs overflows the stack.  So the wire
 * format is walked first, against the descriptors, counting how deep
 * messages nest.  Real models stay far below: each subgraph level is three
 * (attribute, graph, node), TypeProtos a few more. */
#define WIRE_MAX_DEPTH TW_FILE_MAX_NESTING

static gboolean
wire_varint (const guint8 *p, gsize len, gsize *pos, guint64 *out)
{
  guint64 v = 0;
  for (int shift = 0; shift < 64 && *pos < len; shift += 7)
    {
      guint8 b = p[(*pos)++];
      v |= (guint64) (b & 0x7f) << shift;
      if ((b & 0x80) == 0)
        {
          *out = v;
          return TRUE;
        }
    }
  return FALSE;
}

/* What the wire walk found wrong (NULL descriptor: nothing). */
typedef struct
{
  const ProtobufCMessageDescriptor *desc;
  const ProtobufCFieldDescriptor *field;   /* the string field, or NULL: too deep */
} wire_problem;

/* FALSE when messages nest deeper than WIRE_MAX_DEPTH or a string field is
 * not valid UTF-8 (NUL bytes included: protobuf-c would cut the string
 * there), with *bad saying which; malformed input is left to protobuf-c to
 * refuse (TRUE). */
static gboolean
wire_walk (const guint8 *p, gsize len, const ProtobufCMessageDescriptor *desc, int depth,
           wire_problem *bad, guint64 *cost)
{
  gsize pos = 0;
  while (pos < len)
    {
      guint64 tag, n;
      if (!wire_varint (p, len, &pos, &tag))
        return TRUE;
      switch (tag & 7)
        {
        case 0:
          if (!wire_varint (p, len, &pos, &n))
            return TRUE;
          break;
        case 1:
          pos += 8;
          break;
        case 5:
          pos += 4;
          break;
        case 2:
          {
            if (!wire_varint (p, len, &pos, &n) || n > len - pos)
              return TRUE;
            const ProtobufCFieldDescriptor *f
              = tag >> 3 <= G_MAXUINT32
                  ? protobuf_c_message_descriptor_get_field (desc, (unsigned) (tag >> 3))
                  : NULL;
            if (f != NULL && f->type == PROTOBUF_C_TYPE_MESSAGE)
              {
                if (depth + 1 > WIRE_MAX_DEPTH)
                  {
                    *bad = (wire_problem) { desc, NULL };
                    return FALSE;
                  }
                /* The struct and its pointer in the parent's array. */
                *cost += malloc_chunk (((const ProtobufCMessageDescriptor *) f->descriptor)
                                         ->sizeof_message)
                         + sizeof (void *);
                if (!wire_walk (p + pos, (gsize) n, f->descriptor, depth + 1, bad, cost))
                  return FALSE;
              }
            else if (f != NULL && f->type == PROTOBUF_C_TYPE_STRING && n > 0
                     && !g_utf8_validate_len ((const char *) p + pos, (gsize) n, NULL))
              {
                *bad = (wire_problem) { desc, f };
                return FALSE;
              }
            else if (f != NULL && (f->type == PROTOBUF_C_TYPE_STRING
                                   || f->type == PROTOBUF_C_TYPE_BYTES))
              *cost += malloc_chunk (n + 1) + sizeof (void *);
            pos += (gsize) n;
            break;
          }
        default:
          return TRUE;
        }
    }
  return TRUE;
}

/* The wire walk's verdict as an error naming the file: nesting, UTF-8, and
 * what unpacking would allocate for the messages and strings (the unpack
 * budget below still bounds what it misses: scalars, unknown fields). */
static gboolean
wire_check (const guint8 *p, gsize len, const ProtobufCMessageDescriptor *desc,
            const char *filename, GError **error)
{
  wire_problem bad = { NULL, NULL };
  guint64 cost = malloc_chunk (desc->sizeof_message);
  if (wire_walk (p, len, desc, 0, &bad, &cost))
    {
      unpack_budget budget;
      ProtobufCAllocator alloc;
      budget_init (&budget, &alloc, len);
      if (cost <= budget.budget)
        return TRUE;
      set_budget_error (error, filename, len, &budget);
      return FALSE;
    }
  if (bad.field == NULL)
    g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_PARSE,
                 "%s: protobuf messages nested deeper than %d (subgraphs inside subgraphs?)",
                 filename, WIRE_MAX_DEPTH);
  else
    g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_PARSE,
                 "%s: a string (%s.%s) is not valid UTF-8 text", filename, bad.desc->short_name,
                 bad.field->name);
  return FALSE;
}

typedef struct
{
  const char *filename;
  char *dir;            /* the file's folder: where external data would be */
  GString *external;    /* "initializer 'w' ('w.bin', missing)", one a line */
  guint n_external;
} check_ctx;

/* Does loc name a file of the model's folder itself (no folder part, not
 * "." or "..")?  Decided by the text alone. */
static gboolean
location_in_folder (const char *loc)
{
  return loc[0] != '\0' && strchr (loc, G_DIR_SEPARATOR) == NULL && strchr (loc, '/') == NULL
         && strcmp (loc, ".") != 0 && strcmp (loc, "..") != 0;
}

static void
note_external (check_ctx *c, const char *where, const Onnx__TensorProto *t)
{
  const char *loc = external_location (t);
  const char *state = "";
  /* Whether the file is there is said only for a file of the model's own
   * folder, and without following a link: a location outside it (absolute,
   * with "..", or through a subfolder, which may be a link) is refused by
   * its text alone, so a model cannot learn what exists elsewhere. */
  if (loc != NULL && !location_in_folder (loc))
    state = ", outside the model's folder";
  else if (loc != NULL)
    {
      g_autofree char *p = g_build_filename (c->dir, loc, NULL);
      GStatBuf st;
      state = g_lstat (p, &st) == 0 ? "" : ", missing";
    }
  g_string_append_printf (c->external, "\n  %s ('%s'%s)", where,
                          loc != NULL ? loc : "no location", state);
  c->n_external++;
}

static gboolean
check_tensor (check_ctx *c, const char *where, const Onnx__TensorProto *t, GError **error)
{
  if (is_external (t))
    {
      note_external (c, where, t);
      return TRUE;
    }
  dtype_info info;
  int64_t n;
  g_autoptr (GError) e = NULL;
  if (tensor_check (t, where, &info, &n, &e))
    return TRUE;
  /* Types twb lacks are the importer's to report with the rest. */
  if (g_error_matches (e, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED))
    return TRUE;
  g_set_error (error, TW_ONNX_ERROR, e->code, "%s: %s", c->filename, e->message);
  return FALSE;
}

static char *
tensor_where (const char *prefix, const char *kind, const Onnx__TensorProto *t, gsize i)
{
  if (t->name != NULL && t->name[0] != '\0')
    return g_strdup_printf ("%s%s '%s'", prefix, kind, t->name);
  return g_strdup_printf ("%s%s #%zu", prefix, kind, i);
}

static gboolean check_graph (check_ctx *c, const Onnx__GraphProto *g, const char *prefix,
                             int depth, GError **error);

static gboolean
check_nodes (check_ctx *c, Onnx__NodeProto *const *nodes, size_t n_nodes, const char *prefix,
             int depth, GError **error)
{
  for (size_t i = 0; i < n_nodes; i++)
    {
      const Onnx__NodeProto *n = nodes[i];
      g_autofree char *label = tw_onnx_node_label (n, i);
      g_autofree char *node_where = g_strdup_printf ("%snode '%s' (%s)", prefix, label,
                                                     n->op_type != NULL ? n->op_type : "?");
      for (size_t j = 0; j < n->n_attribute; j++)
        {
          const Onnx__AttributeProto *a = n->attribute[j];
          const char *aname = a->name != NULL ? a->name : "?";
          if (a->t != NULL)
            {
              g_autofree char *w = g_strdup_printf ("%s: attribute '%s'", node_where, aname);
              if (!check_tensor (c, w, a->t, error))
                return FALSE;
            }
          for (size_t k = 0; k < a->n_tensors; k++)
            {
              g_autofree char *w = g_strdup_printf ("%s: attribute '%s' tensor %zu", node_where,
                                                    aname, k);
              if (!check_tensor (c, w, a->tensors[k], error))
                return FALSE;
            }
          if (a->sparse_tensor != NULL)
            {
              g_autofree char *w = g_strdup_printf ("%s: attribute '%s'", node_where, aname);
              if ((a->sparse_tensor->values != NULL
                   && !check_tensor (c, w, a->sparse_tensor->values, error))
                  || (a->sparse_tensor->indices != NULL
                      && !check_tensor (c, w, a->sparse_tensor->indices, error)))
                return FALSE;
            }
          if (a->g == NULL && a->n_graphs == 0)
            continue;
          if (depth + 1 > TW_ONNX_MAX_DEPTH)
            {
              g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_PARSE,
                           "%s: %s: attribute '%s': subgraphs nested deeper than %d",
                           c->filename, node_where, aname, TW_ONNX_MAX_DEPTH);
              return FALSE;
            }
          g_autofree char *sub = g_strdup_printf ("%s: attribute '%s': ", node_where, aname);
          if (a->g != NULL && !check_graph (c, a->g, sub, depth + 1, error))
            return FALSE;
          for (size_t k = 0; k < a->n_graphs; k++)
            if (!check_graph (c, a->graphs[k], sub, depth + 1, error))
              return FALSE;
        }
    }
  return TRUE;
}

static gboolean
check_graph (check_ctx *c, const Onnx__GraphProto *g, const char *prefix, int depth,
             GError **error)
{
  for (size_t i = 0; i < g->n_initializer; i++)
    {
      g_autofree char *w = tensor_where (prefix, "initializer", g->initializer[i], i);
      if (!check_tensor (c, w, g->initializer[i], error))
        return FALSE;
    }
  for (size_t i = 0; i < g->n_sparse_initializer; i++)
    {
      const Onnx__SparseTensorProto *s = g->sparse_initializer[i];
      g_autofree char *w = g_strdup_printf ("%ssparse initializer #%zu", prefix, i);
      if ((s->values != NULL && !check_tensor (c, w, s->values, error))
          || (s->indices != NULL && !check_tensor (c, w, s->indices, error)))
        return FALSE;
    }
  return check_nodes (c, g->node, g->n_node, prefix, depth, error);
}

/* ---- One definition per value ----------------------------------------- */

/* Who defines a value, for messages: "graph input #2", "initializer",
 * "node 'relu1' (Relu)". */
static char *
node_who (const Onnx__NodeProto *n, gsize i)
{
  g_autofree char *label = tw_onnx_node_label (n, i);
  return g_strdup_printf ("node '%s' (%s)", label, n->op_type != NULL ? n->op_type : "?");
}

/* TRUE when a and b are the same TypeProto (both absent counts). */
static gboolean
same_type (const Onnx__TypeProto *a, const Onnx__TypeProto *b)
{
  if (a == NULL || b == NULL)
    return a == b;
  gsize na = protobuf_c_message_get_packed_size (&a->base);
  gsize nb = protobuf_c_message_get_packed_size (&b->base);
  if (na != nb)
    return FALSE;
  g_autofree guint8 *pa = g_malloc (MAX (na, 1)), *pb = g_malloc (MAX (nb, 1));
  protobuf_c_message_pack (&a->base, pa);
  protobuf_c_message_pack (&b->base, pb);
  return memcmp (pa, pb, na) == 0;
}

/* ONNX graphs are in static single assignment form (onnx.proto's
 * GraphProto; onnx.checker refuses the rest): each value is defined once,
 * by a graph input, an initializer (which may also be listed as an input:
 * its default value) or one node's output.  A second definition made the
 * importer take whichever it met last.  Refused naming both definitions. */
static gboolean
check_single_definitions (const char *filename, const Onnx__GraphProto *g, GError **error)
{
  /* name (borrowed from g) → who defines it (owned) */
  g_autoptr (GHashTable) who = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, g_free);
  g_autoptr (GHashTable) input_of = g_hash_table_new (g_str_hash, g_str_equal);
  for (gsize i = 0; i < g->n_input; i++)
    {
      const Onnx__ValueInfoProto *vi = g->input[i];
      if (vi->name == NULL || vi->name[0] == '\0')
        continue;
      const Onnx__ValueInfoProto *was = g_hash_table_lookup (input_of, vi->name);
      if (was != NULL)
        {
          g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_PARSE,
                       "%s: graph input '%s' is declared twice (%s types): an ONNX graph "
                       "defines each value once", filename, vi->name,
                       same_type (was->type, vi->type) ? "with the same" : "with different");
          return FALSE;
        }
      g_hash_table_insert (input_of, vi->name, (gpointer) vi);
      g_hash_table_insert (who, vi->name, g_strdup ("a graph input"));
    }
  g_autoptr (GHashTable) inits = g_hash_table_new (g_str_hash, g_str_equal);
  for (gsize i = 0; i < g->n_initializer; i++)
    {
      const char *name = g->initializer[i]->name;
      if (name == NULL || name[0] == '\0')
        continue;
      if (g_hash_table_contains (inits, name))
        {
          g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_PARSE,
                       "%s: initializer '%s' is given twice: an ONNX graph defines each value "
                       "once", filename, name);
          return FALSE;
        }
      g_hash_table_add (inits, (gpointer) name);
      if (!g_hash_table_contains (who, name))
        g_hash_table_insert (who, (gpointer) name, g_strdup ("an initializer"));
    }
  for (gsize i = 0; i < g->n_node; i++)
    {
      const Onnx__NodeProto *n = g->node[i];
      for (gsize k = 0; k < n->n_output; k++)
        {
          const char *out = n->output[k];
          if (out == NULL || out[0] == '\0')
            continue;
          const char *first = g_hash_table_lookup (who, out);
          if (first != NULL)
            {
              g_autofree char *second = node_who (n, i);
              g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_PARSE,
                           "%s: value '%s' is defined twice, by %s and by %s: an ONNX graph "
                           "defines each value once", filename, out, first, second);
              return FALSE;
            }
          g_hash_table_insert (who, (gpointer) out, node_who (n, i));
        }
    }
  return TRUE;
}

int64_t
tw_onnx_model_opset (const Onnx__ModelProto *m)
{
  for (size_t i = 0; i < m->n_opset_import; i++)
    {
      const Onnx__OperatorSetIdProto *o = m->opset_import[i];
      if (o->domain == NULL || o->domain[0] == '\0' || strcmp (o->domain, "ai.onnx") == 0)
        return o->has_version ? o->version : -1;
    }
  return -1;
}

static Onnx__ModelProto *
read_model_from_data (const guint8 *data, gsize len, const char *filename, gboolean any_opset,
                      GError **error)
{
  if (len == 0)
    {
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_PARSE, "%s: empty file", filename);
      return NULL;
    }
  if (len > TW_ONNX_MAX_FILE_BYTES)
    {
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_READ,
                   "%s: %zu bytes, larger than protobuf's limit of %zu", filename, len,
                   TW_ONNX_MAX_FILE_BYTES);
      return NULL;
    }
  if (!wire_check (data, len, &onnx__model_proto__descriptor, filename, error))
    return NULL;
  unpack_budget budget;
  ProtobufCAllocator alloc;
  budget_init (&budget, &alloc, len);
  Onnx__ModelProto *m = onnx__model_proto__unpack (&alloc, len, data);
  if (m == NULL && budget.over)
    {
      set_budget_error (error, filename, len, &budget);
      return NULL;
    }
  if (m == NULL)
    {
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_PARSE,
                   "%s: not an ONNX model (the protobuf does not parse as a ModelProto, "
                   "%zu bytes)", filename, len);
      return NULL;
    }
  if (m->graph == NULL)
    {
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_PARSE, "%s: the model has no graph",
                   filename);
      onnx__model_proto__free_unpacked (m, NULL);
      return NULL;
    }
  int64_t opset = tw_onnx_model_opset (m);
  if ((opset < TW_ONNX_MIN_OPSET && !(any_opset && opset >= 1)) || opset > TW_ONNX_MAX_OPSET)
    {
      if (opset < 0)
        g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_OPSET,
                     "%s: no opset for the default ONNX domain (twb reads opsets %d–%d)",
                     filename, TW_ONNX_MIN_OPSET, TW_ONNX_MAX_OPSET);
      else
        g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_OPSET,
                     "%s: opset %" G_GINT64_FORMAT " is outside %d–%d", filename,
                     (gint64) opset, TW_ONNX_MIN_OPSET, TW_ONNX_MAX_OPSET);
      onnx__model_proto__free_unpacked (m, NULL);
      return NULL;
    }

  g_autofree char *dir = g_path_get_dirname (filename);
  check_ctx c = { filename, dir, g_string_new (NULL), 0 };
  gboolean ok = check_graph (&c, m->graph, "", 0, error)
                && check_single_definitions (filename, m->graph, error);
  for (size_t i = 0; ok && i < m->n_functions; i++)
    {
      const Onnx__FunctionProto *f = m->functions[i];
      g_autofree char *prefix = g_strdup_printf ("function '%s': ",
                                                 f->name != NULL ? f->name : "?");
      ok = check_nodes (&c, f->node, f->n_node, prefix, 0, error);
    }
  if (ok && c.n_external > 0)
    {
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_EXTERNAL,
                   "%s: %u tensor%s keep their data in external files, which twb does not "
                   "read (save the model with its weights inside the .onnx file):%s",
                   filename, c.n_external, c.n_external == 1 ? "" : "s", c.external->str);
      ok = FALSE;
    }
  g_string_free (c.external, TRUE);
  if (!ok)
    {
      onnx__model_proto__free_unpacked (m, NULL);
      return NULL;
    }
  return m;
}

Onnx__ModelProto *
tw_onnx_read_model_from_data (const guint8 *data, gsize len, const char *filename,
                              GError **error)
{
  return read_model_from_data (data, len, filename, FALSE, error);
}

static Onnx__ModelProto *
read_model (const char *path, gboolean any_opset, GError **error)
{
  g_autoptr (GMappedFile) f = map_file (path, error);
  if (f == NULL)
    return NULL;
  return read_model_from_data ((const guint8 *) g_mapped_file_get_contents (f),
                               g_mapped_file_get_length (f), path, any_opset, error);
}

Onnx__ModelProto *
tw_onnx_read_model (const char *path, GError **error)
{
  return read_model (path, FALSE, error);
}

Onnx__ModelProto *
tw_onnx_read_model_any_opset (const char *path, GError **error)
{
  return read_model (path, TRUE, error);
}

/* ---- Tensors out ----------------------------------------------------- */

Onnx__TensorProto *
tw_onnx_tensor_from_tw (const tw_tensor *x, const char *name)
{
  static const int32_t types[TW_N_DTYPES] = {
    [TW_F32] = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT,
    [TW_F64] = ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE,
    [TW_I32] = ONNX__TENSOR_PROTO__DATA_TYPE__INT32,
    [TW_I64] = ONNX__TENSOR_PROTO__DATA_TYPE__INT64,
    [TW_U8] = ONNX__TENSOR_PROTO__DATA_TYPE__UINT8,
  };
  g_autoptr (tw_tensor) host = tw_tensor_to_host ((tw_tensor *) x);
  g_autoptr (tw_tensor) c = tw_tensor_contiguous (host);

  Onnx__TensorProto *t = g_new (Onnx__TensorProto, 1);
  onnx__tensor_proto__init (t);
  t->name = g_strdup (name);
  t->n_dims = (size_t) x->ndim;
  t->dims = g_new (int64_t, MAX (x->ndim, 1));
  memcpy (t->dims, x->shape, sizeof (int64_t) * (size_t) x->ndim);
  t->has_data_type = TRUE;
  t->data_type = types[x->dtype];
  t->has_raw_data = TRUE;
  t->raw_data.len = tw_tensor_nbytes (c);
  t->raw_data.data = t->raw_data.len > 0 ? g_memdup2 (tw_tensor_data (c), t->raw_data.len) : NULL;
  return t;
}

void
tw_onnx_tensor_proto_free (Onnx__TensorProto *t)
{
  if (t == NULL)
    return;
  g_free (t->name);
  g_free (t->dims);
  g_free (t->raw_data.data);
  g_free (t);
}

/* ---- Attributes ------------------------------------------------------ */

const Onnx__AttributeProto *
tw_onnx_attr (const Onnx__NodeProto *n, const char *name)
{
  for (size_t i = 0; i < n->n_attribute; i++)
    if (g_strcmp0 (n->attribute[i]->name, name) == 0)
      return n->attribute[i];
  return NULL;
}

static const char *
attr_type_name (const Onnx__AttributeProto *a)
{
  if (!a->has_type)
    return "UNDEFINED";
  const ProtobufCEnumValue *v
    = protobuf_c_enum_descriptor_get_value (&onnx__attribute_proto__attribute_type__descriptor,
                                            a->type);
  return v != NULL ? v->name : "UNDEFINED";
}

static gboolean
attr_has_type (const Onnx__NodeProto *n, const Onnx__AttributeProto *a, const char *name,
               Onnx__AttributeProto__AttributeType want, const char *want_name, GError **error)
{
  if (a->has_type && a->type == want)
    return TRUE;
  /* Without the node's index, an unnamed node is named by its output. */
  g_autofree char *label = n->name != NULL && n->name[0] != '\0'
                             ? g_strdup_printf ("node '%s'", n->name)
                             : g_strdup_printf ("the node writing '%s'",
                                                n->n_output > 0 ? n->output[0] : "?");
  g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED,
               "%s (%s): attribute '%s' is %s, not %s", label,
               n->op_type != NULL ? n->op_type : "?", name, attr_type_name (a), want_name);
  return FALSE;
}

gboolean
tw_onnx_attr_int (const Onnx__NodeProto *n, const char *name, int64_t def, int64_t *out,
                  GError **error)
{
  const Onnx__AttributeProto *a = tw_onnx_attr (n, name);
  if (a == NULL)
    {
      *out = def;
      return TRUE;
    }
  if (!attr_has_type (n, a, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, "INT", error))
    return FALSE;
  *out = a->i;
  return TRUE;
}

gboolean
tw_onnx_attr_float (const Onnx__NodeProto *n, const char *name, float def, float *out,
                    GError **error)
{
  const Onnx__AttributeProto *a = tw_onnx_attr (n, name);
  if (a == NULL)
    {
      *out = def;
      return TRUE;
    }
  if (!attr_has_type (n, a, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, "FLOAT", error))
    return FALSE;
  *out = a->f;
  return TRUE;
}

gboolean
tw_onnx_attr_ints (const Onnx__NodeProto *n, const char *name, int64_t **out, gsize *len,
                   GError **error)
{
  *out = NULL;
  *len = 0;
  const Onnx__AttributeProto *a = tw_onnx_attr (n, name);
  if (a == NULL)
    return TRUE;
  if (!attr_has_type (n, a, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, "INTS", error))
    return FALSE;
  *out = g_memdup2 (a->ints, sizeof (int64_t) * MAX (a->n_ints, 1));
  *len = a->n_ints;
  return TRUE;
}

char *
tw_onnx_node_label (const Onnx__NodeProto *n, gsize index)
{
  if (n->name != NULL && n->name[0] != '\0')
    return g_strdup (n->name);
  return g_strdup_printf ("%s #%zu", n->op_type != NULL ? n->op_type : "node", index);
}
