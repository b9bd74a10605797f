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
 * Argument values are strings.  A path ending in ".gz" is written gzip-
 * compressed.  The file is written in chunks as it is generated and saved
 * atomically (engine/fileutil.h): a failed export leaves any old file. */
#pragma once

#include "profiler/trace.h"

G_BEGIN_DECLS

/* The trace must be sorted (tw_trace_sort).  Errors are G_FILE_ERROR and
 * name the file. */
gboolean tw_chrome_trace_save (const tw_trace *t, const char *path, GError **error);

/* Appends s as a JSON string literal (quotes included) to out: quotes,
 * backslashes and control characters escaped, invalid UTF-8 replaced by
 * U+FFFD. */
void tw_json_append_string (GString *out, const char *s);

G_END_DECLS
