/* chrome.h — a trace as Chrome Trace Event JSON, the format chrome://tracing
 * and Perfetto open:
 *
 *   {"traceEvents":[
 *     {"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"twb"}},
 *     {"ph":"M","name":"thread_name","pid":1,"tid":42,"args":{"name":"main"}},
 *     {"ph":"X","name":"linear (fc1)","cat":"forward","pid":1,"tid":42,
 *      "ts":1000.250,"dur":12.003,"args":{"nodes":"fc1",...}},
 *     {"ph":"i","s":"t",...}, {"ph":"C","name":"loss","args":{"loss":2.3}},
 *     {"ph":"s"/"f","id":7,"bp":"e",...}],
 *    "displayTimeUnit":"ns","metadata":{"model":"mlp",...}}
 *
 * ts and dur are microseconds with three decimals: the nanoseconds exactly.
 * An argument whose value is a plain JSON number ("flops": 1048576) is
 * written as a number, any other as a string; the importer keeps the
 * number's text, so export → import → export gives the same bytes.  A path
 * ending in ".gz" is written gzip-compressed.  The file is written in
 * chunks as it is generated and saved atomically (engine/fileutil.h): a
 * failed export leaves any old file.
 *
 * The incremental writer under tw_chrome_trace_save streams events of any
 * number of traces into one file (the recorder's tw_recorder_stream_to):
 *
 *   tw_chrome_writer *w = tw_chrome_writer_begin ("run.json.gz", &error);
 *   tw_chrome_writer_add_trace (w, part);        // again and again
 *   tw_chrome_writer_sync (w, &error);           // all so far readable in the temporary
 *   tw_chrome_writer_end (w, meta, &error);      // renamed over run.json.gz; w freed
 *
 * Until the end the events go to the save's temporary (NAME.tmp-PID-XXXXXX
 * beside the target); what a crashed run leaves there after a sync is an
 * unterminated trace that tw_trace_load_chrome opens. */
#pragma once

#include "profiler/trace.h"

G_BEGIN_DECLS

/* The trace must be sorted (tw_trace_sort).  Errors are G_FILE_ERROR and
 * name the file. */
gboolean tw_chrome_trace_save (const tw_trace *t, const char *path, GError **error);

/* The same text in memory, gzip-compressed (a rank's trace on its way to
 * rank 0, some ten times smaller than the JSON): the bytes that saving it
 * to a ".gz" path writes.  tw_trace_from_chrome_bytes (chrome-read.h)
 * reads it back.  The trace must be sorted.  NULL with an error only when
 * compression cannot start.  Free with g_bytes_unref. */
GBytes *tw_chrome_trace_to_bytes (const tw_trace *t, GError **error);

typedef struct tw_chrome_writer tw_chrome_writer;

/* Creates the temporary and writes the file's head.  NULL with an error
 * naming the file. */
tw_chrome_writer *tw_chrome_writer_begin (const char *path, GError **error);
/* The temporary's path (lives in w). */
const char *tw_chrome_writer_temp_path (const tw_chrome_writer *w);
/* Events.  A failure to write is kept and reported by the next sync or by
 * the end; calls after one do nothing.  A process or lane is named (ph M)
 * once, again only when its name changes. */
void tw_chrome_writer_process (tw_chrome_writer *w, int pid, const char *name);
void tw_chrome_writer_lane (tw_chrome_writer *w, int pid, gint64 tid, const char *name,
                            guint sort_index);
void tw_chrome_writer_slice (tw_chrome_writer *w, int pid, gint64 tid, gint64 start_ns,
                             gint64 dur_ns, const char *name, const char *category,
                             const tw_trace_arg *args, guint n_args);
void tw_chrome_writer_instant (tw_chrome_writer *w, int pid, gint64 tid, gint64 t_ns,
                               const char *name, const char *category);
void tw_chrome_writer_counter (tw_chrome_writer *w, int pid, const char *name, gint64 t_ns,
                               double value);
void tw_chrome_writer_flow (tw_chrome_writer *w, guint64 id, const char *name, int from_pid,
                            gint64 from_tid, gint64 from_ns, int to_pid, gint64 to_tid,
                            gint64 to_ns);
/* Every process, lane, slice, instant, counter and flow of t (sorted). */
void tw_chrome_writer_add_trace (tw_chrome_writer *w, const tw_trace *t);
/* Everything so far into the temporary, decodable (gzip: a sync flush). */
gboolean tw_chrome_writer_sync (tw_chrome_writer *w, GError **error);
/* Writes meta's metadata (may be NULL), closes the array and renames the
 * temporary over the target.  Frees w, whatever happens. */
gboolean tw_chrome_writer_end (tw_chrome_writer *w, const tw_trace *meta, GError **error);
/* Removes the temporary and frees w (NULL-safe). */
void tw_chrome_writer_abort (tw_chrome_writer *w);

/* Is s a JSON number as the grammar has it ("-0.5e3": yes; "007", "1.",
 * "nan", "": no)? */
gboolean tw_json_is_number (const char *s);

/* Appends s as a JSON string literal (quotes included) to out: quotes,
 * backslashes and control characters escaped, invalid UTF-8 replaced by
 * U+FFFD. */
void tw_json_append_string (GString *out, const char *s);

G_END_DECLS
