/* file-kind.c — what a file is, from its first bytes (see file-kind.h). */
#define G_LOG_DOMAIN "tw-file-kind"

#include "engine/file-kind.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

G_DEFINE_QUARK (tw-file-kind-error-quark, tw_file_kind_error)

/* Bytes read before the first look: every magic number, an ONNX file's
 * first fields and most JSON files' deciding member are in them. */
#define HEAD_BYTES ((gsize) 64 << 10)

/* ---- The bytes: a file or memory, inflated when gzip-compressed ------------------ */

typedef struct
{
  const char *name;       /* for messages */
  int fd;                 /* -1: memory */
  const guint8 *mem;
  gsize mem_len, mem_pos;
  gsize file_size;        /* G_MAXSIZE: unknown */
  gboolean raw_eof;
  gboolean gzip;
  z_stream z;
  gboolean z_ready;
  guint8 in[16384];
  GByteArray *text;       /* what has been read (inflated) so far */
  gboolean eof;           /* text holds all there is */
  gboolean truncated;     /* the gzip stream stops early */
} reader;

static gssize
raw_read (reader *r, guint8 *buf, gsize n)
{
  if (r->fd < 0)
    {
      gsize k = MIN (n, r->mem_len - r->mem_pos);
      memcpy (buf, r->mem + r->mem_pos, k);
      r->mem_pos += k;
      return (gssize) k;
    }
  for (;;)
    {
      gssize k = read (r->fd, buf, n);
      if (k >= 0 || errno != EINTR)
        return k;
    }
}

/* Appends up to want more bytes of content to r->text; FALSE with an error
 * when the file cannot be read or its gzip data is corrupt. */
static gboolean
fill (reader *r, gsize want, GError **error)
{
  gsize goal = r->text->len + want;
  while (!r->eof && r->text->len < goal)
    {
      if (!r->gzip)
        {
          gsize old = r->text->len;
          g_byte_array_set_size (r->text, goal);
          gssize k = raw_read (r, r->text->data + old, goal - old);
          if (k < 0)
            {
              int e = errno;
              g_byte_array_set_size (r->text, old);
              g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "%s: %s", r->name,
                           g_strerror (e));
              return FALSE;
            }
          g_byte_array_set_size (r->text, old + (gsize) k);
          if (k == 0)
            r->eof = TRUE;
          continue;
        }
      if (r->z.avail_in == 0 && !r->raw_eof)
        {
          gssize k = raw_read (r, r->in, sizeof r->in);
          if (k < 0)
            {
              int e = errno;
              g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "%s: %s", r->name,
                           g_strerror (e));
              return FALSE;
            }
          r->z.next_in = r->in;
          r->z.avail_in = (uInt) k;
          r->raw_eof = k == 0;
        }
      gsize old = r->text->len;
      g_byte_array_set_size (r->text, goal);
      r->z.next_out = r->text->data + old;
      r->z.avail_out = (uInt) (goal - old);
      int st = inflate (&r->z, Z_NO_FLUSH);
      g_byte_array_set_size (r->text, goal - r->z.avail_out);
      if (st == Z_STREAM_END)
        {
          /* Another gzip member may follow (cat a.gz b.gz). */
          if (r->z.avail_in == 0 && !r->raw_eof)
            {
              gssize k = raw_read (r, r->in, sizeof r->in);
              r->z.next_in = r->in;
              r->z.avail_in = k > 0 ? (uInt) k : 0;
              r->raw_eof = k <= 0;
            }
          if (r->z.avail_in == 0 || r->z.next_in[0] != 0x1f)
            r->eof = TRUE;
          else
            inflateReset (&r->z);
          continue;
        }
      if (st == Z_BUF_ERROR && r->z.avail_in == 0 && r->raw_eof)
        {
          /* The input ended inside the stream: what was inflated is all. */
          r->truncated = TRUE;
          r->eof = TRUE;
          continue;
        }
      if (st != Z_OK && st != Z_BUF_ERROR)
        {
          if (r->text->len > 0)
            {
              /* Judge by what came before the damage; the reader says more. */
              r->truncated = TRUE;
              r->eof = TRUE;
              continue;
            }
          g_set_error (error, TW_FILE_KIND_ERROR, TW_FILE_KIND_ERROR_CORRUPT,
                       "%s: corrupt gzip data (%s)", r->name, r->z.msg ? r->z.msg : "zlib error");
          return FALSE;
        }
    }
  return TRUE;
}

/* ---- JSON: the top-level members that decide ----------------------------------- */

typedef enum
{
  J_MODEL,
  J_TRACE,
  J_MORE,      /* the text so far does not decide */
  J_NEITHER,   /* valid as far as read, and neither a model nor a trace */
  J_BAD,       /* malformed at *pos */
} json_verdict;

typedef struct
{
  const guint8 *s;
  gsize len, pos;
} json_scan;

static void
skip_ws (json_scan *j)
{
  while (j->pos < j->len
         && (j->s[j->pos] == ' ' || j->s[j->pos] == '\t' || j->s[j->pos] == '\n'
             || j->s[j->pos] == '\r'))
    j->pos++;
}

/* A string at pos ('"'): 1 past it, 0 the text ends first, -1 malformed.
 * Its first bytes go to out (escapes as written), NUL-terminated. */
static int
scan_string (json_scan *j, char *out, gsize out_len)
{
  gsize k = 0;
  for (gsize p = j->pos + 1; p < j->len; p++)
    {
      guint8 c = j->s[p];
      if (c == '"')
        {
          if (out)
            out[MIN (k, out_len - 1)] = '\0';
          j->pos = p + 1;
          return 1;
        }
      if (c < 0x20)
        return -1;
      if (c == '\\')
        {
          if (++p >= j->len)
            return 0;
        }
      if (out && k + 1 < out_len)
        out[k] = (char) c;
      k++;
    }
  return 0;
}

/* Any value at pos: 1 past it, 0 the text ends first, -1 malformed.  Nested
 * objects and arrays are skipped by their brackets (strings respected), not
 * checked member by member: the loader checks what it reads. */
static int
skip_value (json_scan *j)
{
  guint8 c = j->s[j->pos];
  if (c == '"')
    return scan_string (j, NULL, 0);
  if (c == '{' || c == '[')
    {
      gsize depth = 0;
      while (j->pos < j->len)
        {
          c = j->s[j->pos];
          if (c == '"')
            {
              int st = scan_string (j, NULL, 0);
              if (st <= 0)
                return st;
              continue;
            }
          if (c == '{' || c == '[')
            depth++;
          else if (c == '}' || c == ']')
            {
              if (--depth == 0)
                {
                  j->pos++;
                  return 1;
                }
            }
          j->pos++;
        }
      return 0;
    }
  if (!strchr ("-0123456789tfn", c) || c == '\0')
    return -1;
  while (j->pos < j->len && !strchr (",}] \t\r\n", j->s[j->pos]))
    j->pos++;
  return j->pos < j->len ? 1 : 0;
}

/* s[pos] is '{' or '['.  *what (static or allocated into *what_owned)
 * describes a J_NEITHER. */
static json_verdict
sniff_json (json_scan *j, char **what)
{
  if (j->s[j->pos] == '[')
    {
      /* Chrome's array form: a list of event objects (or none). */
      j->pos++;
      skip_ws (j);
      if (j->pos >= j->len)
        return J_MORE;
      if (j->s[j->pos] == '{' || j->s[j->pos] == ']')
        return J_TRACE;
      *what = g_strdup ("a JSON array, but not of trace events");
      return J_NEITHER;
    }
  gboolean graph = FALSE;
  char format[64] = "";
  gboolean have_format = FALSE;
  j->pos++;
  for (gboolean first = TRUE;; first = FALSE)
    {
      skip_ws (j);
      if (j->pos >= j->len)
        return graph ? J_MODEL : J_MORE;
      if (j->s[j->pos] == '}' && first)
        break;
      if (j->s[j->pos] != '"')
        return J_BAD;
      char key[32];
      int st = scan_string (j, key, sizeof key);
      if (st <= 0)
        return st < 0 ? J_BAD : graph ? J_MODEL : J_MORE;
      skip_ws (j);
      if (j->pos >= j->len)
        return graph ? J_MODEL : J_MORE;
      if (j->s[j->pos] != ':')
        return J_BAD;
      j->pos++;
      skip_ws (j);
      if (j->pos >= j->len)
        return graph ? J_MODEL : J_MORE;
      if (strcmp (key, "traceEvents") == 0)
        return J_TRACE;
      if (strcmp (key, "format") == 0 && j->s[j->pos] == '"')
        {
          st = scan_string (j, format, sizeof format);
          if (st <= 0)
            return st < 0 ? J_BAD : J_MORE;
          if (strcmp (format, "twb-model") == 0)
            return J_MODEL;
          have_format = TRUE;
        }
      else
        {
          graph |= strcmp (key, "graph") == 0;
          st = skip_value (j);
          if (st <= 0)
            return st < 0 ? J_BAD : graph ? J_MODEL : J_MORE;
        }
      skip_ws (j);
      if (j->pos >= j->len)
        return graph ? J_MODEL : J_MORE;
      if (j->s[j->pos] == '}')
        break;
      if (j->s[j->pos] != ',')
        return J_BAD;
      j->pos++;
    }
  if (have_format)
    *what = g_strdup_printf ("a JSON object with \"format\": \"%s\"", format);
  else if (graph)
    return J_MODEL;
  else
    *what = g_strdup ("a JSON object without \"format\" or \"traceEvents\"");
  return J_NEITHER;
}

/* ---- ONNX: a protobuf ModelProto --------------------------------------------- */

static gboolean
read_varint (const guint8 *s, gsize len, gsize *pos, guint64 *v)
{
  *v = 0;
  for (int shift = 0; shift < 64 && *pos < len; shift += 7)
    {
      guint8 b = s[(*pos)++];
      *v |= (guint64) (b & 0x7f) << shift;
      if (!(b & 0x80))
        return TRUE;
    }
  return FALSE;
}

/* The wire type of each ModelProto field (onnx.proto), -1 for none. */
static int
model_proto_wire_type (guint64 field)
{
  switch (field)
    {
    case 1:   /* ir_version */
    case 5:   /* model_version */
      return 0;
    case 2: case 3: case 4: case 6:   /* producer name and version, domain, doc */
    case 7:                           /* graph */
    case 8:                           /* opset_import */
    case 14: case 20: case 25:        /* metadata, training_info, functions */
      return 2;
    default:
      return -1;
    }
}

/* Whether s (len bytes of a file of file_size) reads as ModelProto fields:
 * every field walked a ModelProto field with its wire type, ir_version (if
 * seen) a small number, and either ir_version or the graph among them. */
static gboolean
looks_like_onnx (const guint8 *s, gsize len, gsize file_size)
{
  gsize pos = 0;
  int fields = 0;
  gboolean ir = FALSE, graph = FALSE, ended = FALSE;
  while (fields < 16)
    {
      if (pos == len)
        {
          ended = len == file_size;
          break;
        }
      guint64 tag, v;
      if (!read_varint (s, len, &pos, &tag))
        break;
      if (model_proto_wire_type (tag >> 3) != (int) (tag & 7))
        return FALSE;
      if (!read_varint (s, len, &pos, &v))
        break;
      fields++;
      if ((tag >> 3) == 1)
        {
          if (v < 1 || v > 100)
            return FALSE;
          ir = TRUE;
        }
      if ((tag & 7) == 2)
        {
          graph |= (tag >> 3) == 7;
          if (file_size != G_MAXSIZE && v > file_size - pos)
            break;                     /* a truncated file: the importer says so */
          if (v > len - pos)
            break;                     /* past what was read */
          pos += v;
        }
    }
  return (ir || graph) && (fields >= 2 || ended);
}

/* ---- The sniff ------------------------------------------------------------------- */

static gboolean
is_idx (const guint8 *s, gsize len)
{
  /* IDX: two zero bytes, the element type, the number of dimensions. */
  return len >= 4 && s[0] == 0 && s[1] == 0 && strchr ("\x08\x09\x0b\x0c\x0d\x0e", s[2])
         && s[2] != 0 && s[3] >= 1 && s[3] <= 8;
}

static gboolean
is_safetensors (const guint8 *s, gsize len, gsize file_size)
{
  if (len < 10)
    return FALSE;
  guint64 n = 0;
  for (int i = 7; i >= 0; i--)
    n = n << 8 | s[i];
  /* The format caps the header at 100 MB; text read as a length is far
   * larger (its high bytes are printable characters). */
  return s[8] == '{' && n >= 2 && n <= ((guint64) 100 << 20)
         && (file_size == G_MAXSIZE || n <= file_size - 8);
}

static tw_file_kind
sniff (reader *r, gboolean *compressed, GError **error)
{
  /* The first two bytes decide whether the rest is read through zlib. */
  guint8 magic[2];
  gsize got = 0;
  while (got < 2)
    {
      gssize k = raw_read (r, magic + got, 2 - got);
      if (k < 0)
        {
          int e = errno;
          g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "%s: %s", r->name,
                       g_strerror (e));
          return TW_FILE_KIND_UNKNOWN;
        }
      if (k == 0)
        break;
      got += (gsize) k;
    }
  if (got == 0)
    {
      g_set_error (error, TW_FILE_KIND_ERROR, TW_FILE_KIND_ERROR_EMPTY, "%s is empty", r->name);
      return TW_FILE_KIND_UNKNOWN;
    }
  if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b)
    {
      /* gzip: look at what it holds instead. */
      r->gzip = TRUE;
      if (compressed)
        *compressed = TRUE;
      if (inflateInit2 (&r->z, 15 + 16) != Z_OK)
        {
          g_set_error (error, TW_FILE_KIND_ERROR, TW_FILE_KIND_ERROR_CORRUPT, "%s: zlib: %s",
                       r->name, r->z.msg ? r->z.msg : "cannot start");
          return TW_FILE_KIND_UNKNOWN;
        }
      r->z_ready = TRUE;
      memcpy (r->in, magic, 2);
      r->z.next_in = r->in;
      r->z.avail_in = 2;
    }
  else
    g_byte_array_append (r->text, magic, (guint) got);
  if (!fill (r, HEAD_BYTES, error))
    return TW_FILE_KIND_UNKNOWN;
  if (r->gzip && r->text->len == 0)
    {
      g_set_error (error, TW_FILE_KIND_ERROR, TW_FILE_KIND_ERROR_CORRUPT,
                   r->truncated ? "%s: the gzip data stops early, before any content (a "
                                  "truncated file?)"
                                : "%s: gzip-compressed, but holds nothing",
                   r->name);
      return TW_FILE_KIND_UNKNOWN;
    }

  const guint8 *s = r->text->data;
  gsize len = r->text->len;
  gsize inner_size = r->gzip ? (r->eof ? len : G_MAXSIZE) : r->file_size;
  gsize start = len >= 3 && s[0] == 0xef && s[1] == 0xbb && s[2] == 0xbf ? 3 : 0;
  if (len >= 6 && memcmp (s, "\x93NUMPY", 6) == 0)
    return TW_FILE_KIND_DATA;
  if (is_safetensors (s, len, inner_size))
    return TW_FILE_KIND_WEIGHTS;
  if (is_idx (s, len))
    return TW_FILE_KIND_DATA;
  json_scan j = { s, len, start };
  skip_ws (&j);
  if (j.pos == len && r->eof)
    {
      g_set_error (error, TW_FILE_KIND_ERROR, TW_FILE_KIND_ERROR_EMPTY,
                   "%s holds only white space", r->name);
      return TW_FILE_KIND_UNKNOWN;
    }
  if (j.pos < len && (s[j.pos] == '{' || s[j.pos] == '['))
    {
      for (;;)
        {
          g_autofree char *what = NULL;
          gsize at = j.pos;
          json_verdict v = sniff_json (&j, &what);
          if (v == J_MODEL)
            return TW_FILE_KIND_MODEL;
          if (v == J_TRACE)
            return TW_FILE_KIND_TRACE;
          if (v == J_MORE && !r->eof && r->text->len < TW_FILE_KIND_SNIFF_MAX)
            {
              /* Read as much again, and look from the start. */
              if (!fill (r, MIN (r->text->len, TW_FILE_KIND_SNIFF_MAX - r->text->len), error))
                return TW_FILE_KIND_UNKNOWN;
              j.s = r->text->data;
              j.len = r->text->len;
              j.pos = at;
              continue;
            }
          if (v == J_MORE && !r->eof)
            g_set_error (error, TW_FILE_KIND_ERROR, TW_FILE_KIND_ERROR_UNKNOWN,
                         "%s: a JSON object with no \"format\" or \"traceEvents\" member in its "
                         "first %" G_GSIZE_FORMAT " MiB: neither a twb model nor a Chrome trace",
                         r->name, TW_FILE_KIND_SNIFF_MAX >> 20);
          else if (v == J_MORE || v == J_BAD)
            g_set_error (error, TW_FILE_KIND_ERROR, TW_FILE_KIND_ERROR_CORRUPT,
                         v == J_MORE ? "%s: the JSON text ends early, at byte %" G_GSIZE_FORMAT
                                       "%s, before it says whether it is a model or a trace"
                                     : "%s: malformed JSON at byte %" G_GSIZE_FORMAT
                                       "%s: neither a twb model nor a Chrome trace",
                         r->name, v == J_MORE ? len : j.pos,
                         r->gzip ? " of its uncompressed text" : "");
          else
            g_set_error (error, TW_FILE_KIND_ERROR, TW_FILE_KIND_ERROR_UNKNOWN,
                         "%s: %s: neither a twb model (\"format\": \"twb-model\") nor a Chrome "
                         "trace (\"traceEvents\")",
                         r->name, what);
          return TW_FILE_KIND_UNKNOWN;
        }
    }
  if (looks_like_onnx (s, len, inner_size))
    return TW_FILE_KIND_ONNX;
  GString *head = g_string_new (NULL);
  for (gsize i = 0; i < MIN (len, 8); i++)
    g_string_append_printf (head, "%s%02x", i ? " " : "", s[i]);
  g_set_error (error, TW_FILE_KIND_ERROR, TW_FILE_KIND_ERROR_UNKNOWN,
               "%s: not a file Tensor Workbench opens: its content is neither a twb model, an "
               "ONNX model nor a Chrome trace (%s bytes: %s)",
               r->name, r->gzip ? "uncompressed, its first" : "its first", head->str);
  g_string_free (head, TRUE);
  return TW_FILE_KIND_UNKNOWN;
}

static void
reader_clear (reader *r)
{
  if (r->z_ready)
    inflateEnd (&r->z);
  g_byte_array_unref (r->text);
}

tw_file_kind
tw_file_kind_sniff_bytes (const char *name, const guint8 *data, gsize len, gsize file_size,
                          gboolean *compressed, GError **error)
{
  reader r = { .name = name, .fd = -1, .mem = data, .mem_len = len,
               .file_size = file_size == G_MAXSIZE ? G_MAXSIZE : MAX (file_size, len),
               .text = g_byte_array_new () };
  if (compressed)
    *compressed = FALSE;
  tw_file_kind k = sniff (&r, compressed, error);
  reader_clear (&r);
  return k;
}

tw_file_kind
tw_file_kind_sniff (const char *path, gboolean *compressed, GError **error)
{
  g_return_val_if_fail (path != NULL, TW_FILE_KIND_UNKNOWN);
  g_autofree char *name = g_filename_display_name (path);
  if (compressed)
    *compressed = FALSE;
  /* O_NONBLOCK: opening a fifo must not wait for a writer. */
  int fd = open (path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    {
      int e = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "%s: %s", name,
                   g_strerror (e));
      return TW_FILE_KIND_UNKNOWN;
    }
  struct stat st;
  if (fstat (fd, &st) != 0 || !S_ISREG (st.st_mode))
    {
      gboolean dir = S_ISDIR (st.st_mode);
      close (fd);
      g_set_error (error, G_FILE_ERROR, dir ? G_FILE_ERROR_ISDIR : G_FILE_ERROR_INVAL,
                   dir ? "%s is a folder, not a file" : "%s is not a regular file", name);
      return TW_FILE_KIND_UNKNOWN;
    }
  fcntl (fd, F_SETFL, fcntl (fd, F_GETFL) & ~O_NONBLOCK);
  reader r = { .name = name, .fd = fd, .file_size = (gsize) st.st_size,
               .text = g_byte_array_new () };
  tw_file_kind k = sniff (&r, compressed, error);
  reader_clear (&r);
  close (fd);
  return k;
}

tw_file_kind
tw_file_kind_sniff_openable (const char *path, GError **error)
{
  gboolean gz = FALSE;
  tw_file_kind k = tw_file_kind_sniff (path, &gz, error);
  g_autofree char *name = g_filename_display_name (path);
  switch (k)
    {
    case TW_FILE_KIND_TRACE:
      return k;
    case TW_FILE_KIND_MODEL:
    case TW_FILE_KIND_ONNX:
      if (!gz)
        return k;
      g_set_error (error, TW_FILE_KIND_ERROR, TW_FILE_KIND_ERROR_NOT_OPENABLE,
                   "%s: %s, gzip-compressed: twb reads %s uncompressed (gunzip it first)", name,
                   tw_file_kind_describe (k), k == TW_FILE_KIND_MODEL ? "models" : "ONNX files");
      return TW_FILE_KIND_UNKNOWN;
    case TW_FILE_KIND_WEIGHTS:
      g_set_error (error, TW_FILE_KIND_ERROR, TW_FILE_KIND_ERROR_NOT_OPENABLE,
                   "%s: safetensors weights, not a model: open the model, then Load Weights… "
                   "(twb train MODEL.json --init-weights FILE)", name);
      return TW_FILE_KIND_UNKNOWN;
    case TW_FILE_KIND_DATA:
      g_set_error (error, TW_FILE_KIND_ERROR, TW_FILE_KIND_ERROR_NOT_OPENABLE,
                   "%s: a dataset (NumPy or IDX), not a model: choose it as the dataset in the "
                   "Training recipe tab (twb train MODEL.json --data FILE)", name);
      return TW_FILE_KIND_UNKNOWN;
    case TW_FILE_KIND_UNKNOWN:
    default:
      return TW_FILE_KIND_UNKNOWN;
    }
}

const char *
tw_file_kind_describe (tw_file_kind kind)
{
  switch (kind)
    {
    case TW_FILE_KIND_MODEL:
      return "a twb model";
    case TW_FILE_KIND_ONNX:
      return "an ONNX model";
    case TW_FILE_KIND_TRACE:
      return "a Chrome trace";
    case TW_FILE_KIND_WEIGHTS:
      return "safetensors weights";
    case TW_FILE_KIND_DATA:
      return "a dataset";
    case TW_FILE_KIND_UNKNOWN:
    default:
      return "an unknown file";
    }
}
