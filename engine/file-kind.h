/* file-kind.h — what a file is, decided by its content, never by its name.
 *
 * The command line (`twb FILE…`), the window's Open dialog, Open Recent and
 * drag and drop all ask this one function which kind of file they were
 * given, and open it accordingly:
 *
 *   g_autoptr (GError) error = NULL;
 *   switch (tw_file_kind_sniff_openable (path, &error))
 *     {
 *     case TW_FILE_KIND_MODEL: ... load the model ...; break;
 *     case TW_FILE_KIND_ONNX:  ... import it ...; break;
 *     case TW_FILE_KIND_TRACE: ... open it in the Profiler tab ...; break;
 *     default: show (error->message);     // names the file and says why
 *     }
 *
 * The sniff reads the first bytes only (at most TW_FILE_KIND_SNIFF_MAX of
 * text, inflated when the file is gzip-compressed):
 *
 * - a twb model: a JSON object with "format": "twb-model" (or, without a
 *   "format" member, with "graph": the loader then says what is missing);
 * - a Chrome trace: a JSON object with "traceEvents" (after any other
 *   members: PyTorch writes "schemaVersion" and "deviceProperties" first),
 *   or a JSON array of event objects; plain or gzip-compressed;
 * - an ONNX model: a protobuf ModelProto (its first fields are ModelProto
 *   fields with their wire types, ir_version a small number);
 * - safetensors weights (an 8-byte header length, then a JSON header);
 * - data: a NumPy .npy array, an IDX file (plain or gzip-compressed).
 *
 * Weights and data are recognised so that the message can say where they
 * go (Load Weights, the recipe's dataset); the window opens only models,
 * ONNX files and traces.  A leading UTF-8 byte-order mark is skipped.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum
{
  TW_FILE_KIND_UNKNOWN,   /* unreadable, empty, or none of these */
  TW_FILE_KIND_MODEL,     /* twb model JSON */
  TW_FILE_KIND_ONNX,      /* ONNX ModelProto */
  TW_FILE_KIND_TRACE,     /* Chrome trace JSON, plain or gzip */
  TW_FILE_KIND_WEIGHTS,   /* safetensors */
  TW_FILE_KIND_DATA,      /* NumPy .npy, IDX (plain or gzip) */
} tw_file_kind;

#define TW_FILE_KIND_ERROR (tw_file_kind_error_quark ())
GQuark tw_file_kind_error_quark (void);

typedef enum
{
  TW_FILE_KIND_ERROR_EMPTY,        /* no bytes, or only white space */
  TW_FILE_KIND_ERROR_CORRUPT,      /* a truncated or corrupt gzip stream, malformed JSON */
  TW_FILE_KIND_ERROR_UNKNOWN,      /* none of the kinds above */
  TW_FILE_KIND_ERROR_NOT_OPENABLE, /* a kind the window does not open (weights, data, a
                                    * compressed model) */
} tw_file_kind_error;

/* How much text is read at most to find "format" or "traceEvents" among
 * the top-level members of a JSON object. */
#define TW_FILE_KIND_SNIFF_MAX ((gsize) 4 << 20)

/* The kind of the file at path.  TW_FILE_KIND_UNKNOWN with an error naming
 * the file when it cannot be read (G_FILE_ERROR: missing, a folder, not a
 * regular file, no permission) or is none of the kinds (TW_FILE_KIND_ERROR).
 * *compressed (may be NULL) tells whether the content is gzip-compressed. */
tw_file_kind tw_file_kind_sniff (const char *path, gboolean *compressed, GError **error);

/* The same for bytes in memory: the whole file when len == file_size, else
 * its first len bytes of file_size (G_MAXSIZE: unknown).  name is used in
 * the messages. */
tw_file_kind tw_file_kind_sniff_bytes (const char *name, const guint8 *data, gsize len,
                                       gsize file_size, gboolean *compressed, GError **error);

/* tw_file_kind_sniff, for the window and `twb FILE…`: MODEL, ONNX or TRACE
 * (uncompressed models and ONNX files; traces either way), else
 * TW_FILE_KIND_UNKNOWN with an error naming the file and saying what it is
 * and where it goes (weights: Load Weights… or --init-weights). */
tw_file_kind tw_file_kind_sniff_openable (const char *path, GError **error);

/* "a twb model", "an ONNX model", "a Chrome trace", …: static text. */
const char *tw_file_kind_describe (tw_file_kind kind);

G_END_DECLS
