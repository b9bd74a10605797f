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
 * there and a note in "import.note".  Errors (G_FILE_ERROR) name the file,
 * the byte offset and a short reason.  The returned trace is sorted. */
#pragma once

#include "profiler/trace.h"

G_BEGIN_DECLS

tw_trace *tw_trace_load_chrome (const char *path, GError **error);

/* What importing the file is expected to take in memory, in bytes: 0.8× its
 * trace text (measured: 0.52× on bench/trace-import's PyTorch-format
 * events, 0.60× on our exporter's denser ones; 0.8 leaves a margin);
 * for gzip the text's size is read from the gzip trailer (or taken as 10×
 * the file when the trailer cannot tell, past 4 GiB).  0 when the file
 * cannot be read (the import then says why). */
guint64 tw_trace_chrome_memory_estimate (const char *path);
/* FALSE, with an error naming the file and the figures, when that estimate
 * exceeds available bytes (0: unknown, always TRUE).  tw_trace_load_chrome
 * checks it against the system's available memory before reading. */
gboolean tw_trace_chrome_fits (const char *path, guint64 available, GError **error);

G_END_DECLS
