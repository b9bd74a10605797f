/* trace-import.c — import speed and peak memory of the streaming Chrome
 * trace import on a generated trace in PyTorch's format (CPU ops with
 * shapes, runtime calls, kernels on a stream, flows):
 *
 *   build/bench/trace-import [MB (default 100)] [DIR (default /tmp)]
 *
 * Prints the file's size, the import time and MB/s, the trace's counts and
 * the process's peak RSS before and after the import. */
#include "profiler/chrome-read.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

static double
peak_rss_mb (void)
{
  struct rusage ru;
  getrusage (RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;         /* kilobytes on Linux */
}

/* Writes about mb megabytes of events; returns the number of events. */
static guint64
generate (const char *path, double mb)
{
  FILE *f = fopen (path, "w");
  if (!f)
    g_error ("%s: cannot write", path);
  fputs ("{\"schemaVersion\":1,\"traceEvents\":[\n", f);
  guint64 n = 0;
  double ts = 1700000000000.0;
  for (guint64 i = 0; ftell (f) < (long) (mb * 1e6); i++)
    {
      fprintf (f, "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::linear\",\"pid\":2417,\"tid\":2417,"
                  "\"ts\":%.3f,\"dur\":20.125,\"args\":{\"External id\":%" G_GUINT64_FORMAT
                  ",\"Input Dims\":[[64,784],[128,784],[128]],\"Input type\":[\"float\",\"float\",\"float\"]}},\n",
               ts, i);
      fprintf (f, "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":2417,\"tid\":2417,"
                  "\"ts\":%.3f,\"dur\":5.500,\"args\":{\"External id\":%" G_GUINT64_FORMAT ",\"correlation\":%"
                  G_GUINT64_FORMAT "}},\n", ts + 2, i, i);
      fprintf (f, "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ampere_sgemm_32x32_sliced1x4_tn\",\"pid\":0,\"tid\":7,"
                  "\"ts\":%.3f,\"dur\":15.375,\"args\":{\"External id\":%" G_GUINT64_FORMAT
                  ",\"stream\":7,\"correlation\":%" G_GUINT64_FORMAT ",\"grid\":[4,16,1],\"block\":[128,1,1]}},\n",
               ts + 10, i, i);
      fprintf (f, "{\"ph\":\"s\",\"id\":%" G_GUINT64_FORMAT ",\"pid\":2417,\"tid\":2417,\"ts\":%.3f,\"cat\":\"ac2g\",\"name\":\"ac2g\"},\n"
                  "{\"ph\":\"f\",\"id\":%" G_GUINT64_FORMAT ",\"pid\":0,\"tid\":7,\"ts\":%.3f,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"},\n",
               i, ts + 2, i, ts + 10);
      n += 5;
      ts += 25.0;
    }
  fputs ("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":7,\"args\":{\"name\":\"stream 7 \"}}\n]}\n", f);
  fclose (f);
  return n + 1;
}

int
main (int argc, char **argv)
{
  double mb = argc > 1 ? g_ascii_strtod (argv[1], NULL) : 100;
  const char *dir = argc > 2 ? argv[2] : g_get_tmp_dir ();
  g_autofree char *path = g_build_filename (dir, "twb-trace-import-bench.json", NULL);
  guint64 n = generate (path, mb);
  GStatBuf st;
  g_stat (path, &st);
  double before = peak_rss_mb ();
  gint64 t0 = g_get_monotonic_time ();
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_trace) t = tw_trace_load_chrome (path, &error);
  double secs = (g_get_monotonic_time () - t0) / 1e6;
  double after = peak_rss_mb ();
  g_remove (path);
  if (!t)
    {
      g_printerr ("%s\n", error->message);
      return 1;
    }
  double size_mb = st.st_size / 1e6;
  g_print ("file %.1f MB, %" G_GUINT64_FORMAT " events: imported in %.2f s, %.1f MB/s; "
           "%" G_GUINT64_FORMAT " slices, %u flows; peak RSS %.1f MB before, %.1f MB after (%.2f x the file)\n",
           size_mb, n, secs, size_mb / secs, tw_trace_n_slices (t), tw_trace_n_flows (t), before, after,
           after / size_mb);
  return 0;
}
