/* json-text.h — the one rule for JSON text twb reads, before a parser sees it.
 *
 * json-glib parses recursively, without a depth limit (100,000 nested '['
 * overflow the stack), stops after the first value ("{...}{...}" reads as
 * the first object) and wraps integers beyond int64 silently.  yajl keeps
 * its own stack but grows it without a bound.  So every JSON text twb reads
 * — model files, safetensors headers, the GEMM choice cache, attribute
 * values typed in the editor, the clipboard, run records, Chrome traces —
 * is held to the same rule:
 *
 * - valid UTF-8 (no overlong forms, no surrogates, no NUL bytes);
 * - nested at most TW_JSON_MAX_DEPTH arrays and objects deep;
 * - one top-level value, only white space after it;
 * - integers (no '.', no exponent) within int64.
 *
 *   if (!tw_json_text_check (text, len, &error))
 *     // error->message: "line 3: nested more than 64 levels deep"
 *
 * Messages give the line (and column where it helps) but not the file:
 * the caller prefixes its name.  Errors are TW_JSON_ERROR_INVALID.
 */
#pragma once

#include "engine/fileutil.h"

#include <glib.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* Deepest nesting of arrays and objects accepted in any JSON text: the one
 * limit of every file read (TW_FILE_MAX_NESTING, 64).  A model file needs 6
 * levels ($.graph.nodes[i].attrs.shape), a safetensors header 3, a Chrome
 * trace 4 plus its arguments' own nesting (PyTorch's stay within 3). */
#define TW_JSON_MAX_DEPTH TW_FILE_MAX_NESTING

#define TW_JSON_ERROR (tw_json_error_quark ())
GQuark tw_json_error_quark (void);

typedef enum
{
  TW_JSON_ERROR_INVALID,
} tw_json_error;

/* TRUE when text (len bytes; NUL bytes inside are refused) keeps the rule
 * above; FALSE with an error saying where it breaks it. */
gboolean tw_json_text_check (const char *text, gsize len, GError **error);

/* tw_json_text_check, then json-glib: the parser holding the document (new;
 * g_object_unref it), or NULL with an error "DISPLAY: line L, column C:
 * WHAT" (display names the source in messages). */
JsonParser *tw_json_parse (const char *text, gsize len, const char *display, GError **error);

/* The line (from 1) holding byte offset of text. */
int tw_json_line_at (const char *text, gsize offset);

G_END_DECLS
