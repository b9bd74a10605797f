/* test-trace-limits.c — crafted Chrome traces, generated here at run time:
 *
 * - scale: 100,000 processes and 100,000 lanes open (and summarise per
 *   rank) in linear time (linear searches took over 100 s and 48 s; the
 *   suite's timeout catches a return of them);
 * - one string of 64 MB in a gzip trace reads in time linear in its size
 *   (yajl re-read a token cut by a chunk's end with every later chunk: 17 s);
 * - memory: a gzip trace whose last member's size field says 20 bytes but
 *   whose first inflates to 200 MB, and one string of 200 MB, are refused
 *   under TWB_MEMORY_LIMIT as the text is decompressed, with a bounded
 *   peak RSS (an 8 MB bomb reached 5.26 GB, then GLib aborted);
 * - a gzip trace cut inside its CRC trailer opens with a note;
 * - nesting: 100,000 nested arrays in an event's args are refused;
 * - UTF-8: overlong forms, surrogates and "\udc00" become U+FFFD, noted;
 * - times: ts + dur of 9e15 µs each (their sum overflowed gint64 in
 *   tw_trace_sort under UBSan) is a malformed event; the model clamps times
 *   given to it and its totals saturate. */
#include "profiler/chrome-read.h"
#include "profiler/summary.h"

#include <glib/gstdio.h>
#include <string.h>
#include <sys/resource.h>
#include <zlib.h>

static char *tmp_dir;

static char *
tmp_path (const char *name)
{
  return g_build_filename (tmp_dir, name, NULL);
}

static void
write_text (const char *path, const char *text)
{
  g_assert_true (g_file_set_contents (path, text, -1, NULL));
}

/* text written to the file name and imported, which must succeed. */
static tw_trace *
load_text (const char *name, const char *text)
{
  g_autofree char *path = tmp_path (name);
  write_text (path, text);
  g_autoptr (GError) error = NULL;
  tw_trace *t = tw_trace_load_chrome (path, &error);
  g_assert_no_error (error);
  return t;
}

/* Appends one gzip member holding head, then `repeat` times `chunk`, then
 * tail (mode "wb1" starts the file, "ab1" appends a member). */
static void
gz_member (const char *path, const char *mode, const char *head, const char *chunk, guint repeat,
           const char *tail)
{
  gzFile f = gzopen (path, mode);
  g_assert_nonnull (f);
  g_assert_cmpint (gzputs (f, head), >=, 0);
  gsize n = strlen (chunk);
  for (guint i = 0; i < repeat; i++)
    g_assert_cmpint (gzwrite (f, chunk, (unsigned) n), ==, (int) n);
  g_assert_cmpint (gzputs (f, tail), >=, 0);
  g_assert_cmpint (gzclose (f), ==, Z_OK);
}

static void
test_scale (void)
{
  const guint n = 100000;
  for (int by_lane = 0; by_lane < 2; by_lane++)
    {
      GString *s = g_string_new ("{\"traceEvents\":[");
      for (guint i = 0; i < n; i++)
        g_string_append_printf (s,
                                "%s{\"ph\":\"X\",\"name\":\"op\",\"ts\":%u,\"dur\":1,\"pid\":%u,"
                                "\"tid\":%u}",
                                i ? "," : "", i, by_lane ? 1 : i, by_lane ? i : 7);
      g_string_append (s, "]}");
      g_autofree char *path = tmp_path ("scale.json");
      write_text (path, s->str);
      g_string_free (s, TRUE);
      gint64 t0 = g_get_monotonic_time ();
      g_autoptr (GError) error = NULL;
      g_autoptr (tw_trace) t = tw_trace_load_chrome (path, &error);
      g_assert_no_error (error);
      g_assert_cmpuint (tw_trace_n_lanes (t), ==, n);
      g_assert_cmpuint (tw_trace_n_processes (t), ==, by_lane ? 1 : n);
      g_autoptr (GArray) ranks = tw_summary_ranks (t);
      g_assert_cmpuint (ranks->len, ==, by_lane ? 1 : n);
      /* ts and dur are µs: 1,000 ns each. */
      g_assert_cmpint (g_array_index (ranks, tw_rank_row, 0).compute_ns, ==,
                       (by_lane ? n : 1) * 1000);
      g_test_message ("%u %s: opened and ranked in %.2f s", n, by_lane ? "lanes" : "processes",
                      (g_get_monotonic_time () - t0) / 1e6);
      g_assert_cmpint (tw_trace_find_lane (t, by_lane ? 1 : (int) n - 1, by_lane ? n - 1 : 7), ==,
                       (int) n - 1);
      g_assert_cmpint (tw_trace_find_lane (t, -5, 3), ==, -1);
    }
}

static void
test_giant_string (void)
{
  g_autofree char *path = tmp_path ("string.json.gz");
  g_autofree char *chunk = g_strnfill (1 << 20, 'x');
  const guint mb = 64;
  gz_member (path, "wb1", "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"", chunk, mb,
             "\",\"ts\":1,\"dur\":2,\"pid\":1,\"tid\":1}]}");
  gint64 t0 = g_get_monotonic_time ();
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_trace) t = tw_trace_load_chrome (path, &error);
  g_assert_no_error (error);
  g_test_message ("a %u MB name read in %.2f s", mb, (g_get_monotonic_time () - t0) / 1e6);
  g_assert_cmpuint (tw_trace_n_slices (t), ==, 1);
  g_assert_cmpuint (strlen (tw_trace_lane_slice (t, 0, 0)->name), ==, (gsize) mb << 20);
}

/* The bound on the bombs' peak RSS: what the reader may hold (80 MB of
 * text at most, 16 MB of one string), with room for the test itself; under
 * AddressSanitizer its quarantine keeps up to 256 MB of freed memory
 * resident as well (ASAN_OPTIONS quarantine_size_mb's default).  Without
 * the limits an 8 MB bomb reached 5.26 GB. */
#if defined(__SANITIZE_ADDRESS__)
#define PEAK_RSS_BOUND_MB 600
#else
#define PEAK_RSS_BOUND_MB 150
#endif

/* Peak RSS of this process in MB (Linux reports kB). */
static double
peak_rss_mb (void)
{
  struct rusage ru;
  getrusage (RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;
}

/* Loaded in a child (its own peak RSS) under TWB_MEMORY_LIMIT=64M. */
static void
test_bombs (void)
{
  g_autofree char *members = tmp_path ("members.json.gz");
  g_autofree char *string = tmp_path ("string-bomb.json.gz");
  if (g_test_subprocess ())
    {
      g_setenv ("TWB_MEMORY_LIMIT", "64M", TRUE);
      const char *paths[] = { members, string };
      const char *expect[] = { "too large for memory: after",
                               "too large for memory: a single value" };
      for (guint i = 0; i < G_N_ELEMENTS (paths); i++)
        {
          g_autoptr (GError) error = NULL;
          g_autoptr (tw_trace) t = tw_trace_load_chrome (paths[i], &error);
          g_assert_null (t);
          g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_NOMEM);
          g_assert_nonnull (strstr (error->message, expect[i]));
        }
      /* The text is 200 MB; the reader stops at 80 MB of it (0.8× of that
       * is the limit) and holds 16 MB of one string at most. */
      g_print ("peak %.0f MB\n", peak_rss_mb ());
      g_assert_cmpfloat (peak_rss_mb (), <, PEAK_RSS_BOUND_MB);
      return;
    }
  /* 200 MB of events in the first member; a second, tiny one whose size
   * field is all the old estimate read. */
  g_autofree char *event = g_strnfill (1 << 20, ' ');
  gz_member (members, "wb1", "{\"traceEvents\":[", event, 200, "");
  gz_member (members, "ab1", "", "", 0, "]}");
  g_autofree char *chunk = g_strnfill (1 << 20, 'x');
  gz_member (string, "wb1", "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"", chunk, 200, "");
  gz_member (string, "ab1", "", "", 0, "\"}]}");
  g_test_trap_subprocess (NULL, 60 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_INHERIT_STDERR);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stdout ("peak * MB*");
}

/* A whole trace, gzipped, then cut inside its 8-byte trailer. */
static void
test_cut_trailer (void)
{
  g_autofree char *path = tmp_path ("cut.json.gz");
  gz_member (path, "wb9",
             "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":2,\"pid\":1,"
             "\"tid\":1}]}",
             "", 0, "");
  g_autofree char *data = NULL;
  gsize len;
  g_assert_true (g_file_get_contents (path, &data, &len, NULL));
  for (gsize cut = 1; cut <= 8; cut++)
    {
      g_assert_true (g_file_set_contents (path, data, (gssize) (len - cut), NULL));
      g_autoptr (GError) error = NULL;
      g_autoptr (tw_trace) t = tw_trace_load_chrome (path, &error);
      g_assert_no_error (error);
      g_assert_cmpuint (tw_trace_n_slices (t), ==, 1);
      const char *note = tw_trace_get_meta (t, "import.note");
      g_assert_nonnull (note);
      g_assert_nonnull (strstr (note, "before its CRC trailer"));
    }
  /* Whole: no note. */
  g_assert_true (g_file_set_contents (path, data, (gssize) len, NULL));
  g_autoptr (tw_trace) whole = tw_trace_load_chrome (path, NULL);
  g_assert_nonnull (whole);
  g_assert_null (tw_trace_get_meta (whole, "import.note"));
}

static void
test_depth (void)
{
  GString *s =
    g_string_new ("{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"args\":{\"d\":");
  for (int i = 0; i < 100000; i++)
    g_string_append_c (s, '[');
  for (int i = 0; i < 100000; i++)
    g_string_append_c (s, ']');
  g_string_append (s, "}}]}");
  g_autofree char *path = tmp_path ("deep.json");
  write_text (path, s->str);
  g_string_free (s, TRUE);
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_trace) t = tw_trace_load_chrome (path, &error);
  g_assert_null (t);
  g_assert_nonnull (strstr (error->message, "deep.json: byte "));
  g_assert_nonnull (strstr (error->message, "nested more than 64 levels deep"));
}

static void
test_utf8 (void)
{
  g_autoptr (tw_trace) t =
    load_text ("utf8.json",
               "{\"traceEvents\":["
               "{\"ph\":\"X\",\"name\":\"c\xc0\x80\",\"ts\":1,\"dur\":2,\"pid\":1,\"tid\":1},"
               "{\"ph\":\"X\",\"name\":\"d\xed\xa0\x80\",\"ts\":2,\"dur\":2,\"pid\":1,\"tid\":1},"
               "{\"ph\":\"X\",\"name\":\"b\\udc00\",\"ts\":3,\"dur\":2,\"pid\":1,\"tid\":1,"
               "\"args\":{\"k\xc0\x80\":\"v\",\"o\":{\"x\":\"\xe0\x80\xaf\"}}},"
               "{\"ph\":\"X\",\"name\":\"caf\xc3\xa9\",\"ts\":4,\"dur\":2,\"pid\":1,\"tid\":1}]}");
  g_assert_cmpuint (tw_trace_lane_n_slices (t, 0), ==, 4);
  for (guint i = 0; i < 4; i++)
    {
      const tw_slice *s = tw_trace_lane_slice (t, 0, i);
      g_assert_true (g_utf8_validate (s->name, -1, NULL));
      for (guint a = 0; a < s->n_args; a++)
        g_assert_true (g_utf8_validate (s->args[a].key, -1, NULL) &&
                       g_utf8_validate (s->args[a].value, -1, NULL));
    }
  g_assert_cmpstr (tw_trace_lane_slice (t, 0, 3)->name, ==, "caf\xc3\xa9");
  g_assert_true (g_str_has_suffix (tw_trace_lane_slice (t, 0, 0)->name, "\xef\xbf\xbd"));
  const char *note = tw_trace_get_meta (t, "import.note");
  g_assert_nonnull (note);
  g_assert_nonnull (strstr (note, "5 strings held invalid UTF-8"));
}

static void
test_times (void)
{
  g_autoptr (tw_trace) t = load_text (
    "times.json", "{\"traceEvents\":["
                  "{\"ph\":\"X\",\"name\":\"sum\",\"ts\":9e15,\"dur\":9e15,\"pid\":1,\"tid\":1},"
                  "{\"ph\":\"X\",\"name\":\"ts\",\"ts\":9e18,\"dur\":1,\"pid\":1,\"tid\":1},"
                  "{\"ph\":\"X\",\"name\":\"big\",\"ts\":-2e15,\"dur\":4e15,\"pid\":1,\"tid\":1},"
                  "{\"ph\":\"X\",\"name\":\"big\",\"ts\":-2e15,\"dur\":4e15,\"pid\":1,\"tid\":2},"
                  "{\"ph\":\"X\",\"name\":\"big\",\"ts\":-2e15,\"dur\":4e15,\"pid\":1,\"tid\":3},"
                  "{\"ph\":\"C\",\"name\":\"c\",\"ts\":1,\"pid\":1,\"args\":{\"v\":1e999}},"
                  "{\"ph\":\"X\",\"name\":\"ok\",\"ts\":1,\"dur\":2,\"pid\":1,\"tid\":1}]}");
  g_assert_cmpuint (tw_trace_n_slices (t), ==, 4);
  g_assert_cmpuint (tw_trace_n_counters (t), ==, 0);
  g_assert_nonnull (strstr (tw_trace_get_meta (t, "import.skipped"), "2 malformed"));
  /* Three overlapping slices of 4e18 ns: the total saturates. */
  g_autoptr (GArray) rows = tw_summary_by_name (t, 0, 0, NULL, 0);
  g_assert_cmpstr (g_array_index (rows, tw_summary_row, 0).name, ==, "big");
  g_assert_cmpint (g_array_index (rows, tw_summary_row, 0).total_ns, ==, G_MAXINT64);
  g_assert_cmpint (tw_trace_duration_ns (t), >, 0);

  /* Given straight to the model, times are clamped to ±TW_TRACE_MAX_NS
   * and every slice ends by TW_TRACE_MAX_NS. */
  g_autoptr (tw_trace) m = tw_trace_new ();
  guint lane = tw_trace_add_lane (m, 1, 1, "l", TW_LANE_THREAD);
  tw_trace_add_slice (m, lane, G_MAXINT64, G_MAXINT64, "a", NULL, NULL, 0);
  tw_trace_add_slice (m, lane, G_MININT64, G_MAXINT64, "b", NULL, NULL, 0);
  tw_trace_add_instant (m, lane, G_MININT64, "i", NULL);
  tw_trace_sort (m);
  const tw_slice *b = tw_trace_lane_slice (m, lane, 0), *a = tw_trace_lane_slice (m, lane, 1);
  g_assert_cmpint (b->start_ns, ==, -TW_TRACE_MAX_NS);
  g_assert_cmpint (b->start_ns + b->dur_ns, ==, TW_TRACE_MAX_NS);
  g_assert_cmpint (a->start_ns, ==, TW_TRACE_MAX_NS);
  g_assert_cmpint (a->dur_ns, ==, 0);
  g_assert_cmpint (tw_trace_duration_ns (m), ==, 2 * TW_TRACE_MAX_NS);
  g_assert_cmpint (tw_trace_ns_sum (G_MAXINT64 - 1, 5), ==, G_MAXINT64);
  g_assert_cmpint (tw_trace_ns_sum (G_MININT64 + 1, -5), ==, G_MININT64);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmp_dir = g_strdup (g_getenv ("TWB_TEST_TRACE_DIR"));
  if (tmp_dir == NULL)
    {
      tmp_dir = g_dir_make_tmp ("twb-trace-limits-XXXXXX", NULL);
      g_setenv ("TWB_TEST_TRACE_DIR", tmp_dir, TRUE);
    }
  g_test_add_func ("/profiler/limits/scale", test_scale);
  g_test_add_func ("/profiler/limits/giant-string", test_giant_string);
  g_test_add_func ("/profiler/limits/bombs", test_bombs);
  g_test_add_func ("/profiler/limits/cut-trailer", test_cut_trailer);
  g_test_add_func ("/profiler/limits/depth", test_depth);
  g_test_add_func ("/profiler/limits/utf8", test_utf8);
  g_test_add_func ("/profiler/limits/times", test_times);
  int rc = g_test_run ();
  if (!g_test_subprocess ())
    {
      g_autoptr (GDir) d = g_dir_open (tmp_dir, 0, NULL);
      const char *name;
      while (d && (name = g_dir_read_name (d)))
        {
          g_autofree char *f = tmp_path (name);
          g_unlink (f);
        }
      g_rmdir (tmp_dir);
    }
  g_free (tmp_dir);
  return rc;
}
