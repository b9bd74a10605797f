/* chrome-read.h — Chrome Trace Event JSON import, streaming (yajl's
 * callback parser on 64 KiB chunks; no whole-file tree).
 *
 *   g_autoptr (GError) error = NULL;
 *   g_autoptr (tw_trace) t = tw_trace_load_chrome ("run.json.gz", &error);
 *
 * Reads the object form {"traceEvents":[...], "metadata":{...}, ...} and the
 * bare array form [...], plain or gzip (detected by the magic bytes).
 * Phases X, B/E (matched per pid/tid), i/I, C, M (process_name,
 * thread_name), s/f; others are skipped and counted in the metadata key
 * "import.skipped".  ts/dur (µs) become ns; argument values of any JSON type
 * are kept as text.  pid/tid given as strings ("stream 7", as PyTorch's
 * profiler writes) get numbers of their own and the string as the name.
 * A trace ending inside its event array (a crashed run) opens with what is
 * there and a note in "import.note"; so does a gzip stream cut inside or
 * before its CRC trailer (the text then could not be checked).  Errors
 * (G_FILE_ERROR) name the file, the byte offset and a short reason.  The
 * returned trace is sorted.
 *
 * Crafted input is held to limits checked as the stream is decompressed
 * and parsed, whatever its gzip trailer claims:
 * - the trace text read may not exceed what the memory available
 *   (engine/memory.h, $TWB_MEMORY_LIMIT) allows at 0.8x, nor one value
 *   (a string, a number) a quarter of it: G_FILE_ERROR_NOMEM "too large for
 *   memory";
 * - arrays and objects nest at most TW_JSON_MAX_DEPTH (64) deep, the rule
 *   of every JSON text read (engine/json-text.h);
 * - strings holding a NUL stop the import; invalid UTF-8 in a string
 *   (overlong forms, surrogates, what "\udc00" decodes to) becomes U+FFFD,
 *   counted in "import.note", so the trace holds valid UTF-8 only;
 * - ts and dur beyond ±TW_TRACE_MAX_NS, or whose sum is, count as
 *   malformed ("import.skipped"), as do counter values beyond a double.
 * Costs stay linear in the bytes (no token is lexed twice) and in the
 * number of processes, lanes and names. */
#pragma once

#include "profiler/trace.h"

G_BEGIN_DECLS

tw_trace *tw_trace_load_chrome (const char *path, GError **error);
/* The same from memory (tw_chrome_trace_to_bytes's, or a file's bytes:
 * plain or gzip), with the same limits; name_for_errors (NULL: "trace in
 * memory") stands for the file in messages: "rank 3's trace".  The bytes
 * are borrowed.  The caller frees the trace. */
tw_trace *tw_trace_from_chrome_bytes (GBytes *b, const char *name_for_errors, GError **error);

/* What importing the file is expected to take in memory, in bytes: 0.8× its
 * trace text (measured: 0.52× on bench/trace-import's PyTorch-format
 * events, 0.60× on our exporter's denser ones; 0.8 leaves a margin);
 * for gzip the text's size is read from the gzip trailer (or taken as 10×
 * the file when the trailer cannot tell, past 4 GiB).  0 when the file
 * cannot be read (the import then says why).  Only a first, quick
 * estimate: the trailer gives the last member's size alone, so the import
 * checks the same bound again as it decompresses. */
guint64 tw_trace_chrome_memory_estimate (const char *path);
/* FALSE, with an error naming the file and the figures, when that estimate
 * exceeds available bytes (0: unknown, always TRUE).  tw_trace_load_chrome
 * checks it against the system's available memory before reading. */
gboolean tw_trace_chrome_fits (const char *path, guint64 available, GError **error);

G_END_DECLS
