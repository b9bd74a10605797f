/* test-trace-import.c — the streaming Chrome trace import: round trip with
 * the exporter, PyTorch's format, gzip, unterminated traces and malformed
 * input (truncations and random edits: a trace or an error with a byte
 * offset, never a crash). */
#include "profiler/chrome-read.h"
#include "profiler/chrome.h"

#include <glib/gstdio.h>
#include <string.h>
#include <zlib.h>

static char *
data_path (const char *name)
{
  return g_build_filename (TEST_DATA_DIR, name, NULL);
}

/* A trace with nesting, arguments of awkward text, instants, counters,
 * flows and metadata. */
static tw_trace *
make_trace (guint n_slices)
{
  tw_trace *t = tw_trace_new ();
  tw_trace_add_process (t, 1, "twb");
  guint main_lane = tw_trace_add_lane (t, 1, 42, "main", TW_LANE_THREAD);
  guint steps = tw_trace_add_lane (t, 1, 43, "steps", TW_LANE_THREAD);
  guint dev = tw_trace_add_lane (t, 1, 99, "lane \"quoted\" \\ é", TW_LANE_STREAM);
  for (guint i = 0; i < n_slices; i++)
    {
      gint64 t0 = 1000000 + (gint64) i * 10007;
      g_autofree char *idx = g_strdup_printf ("%u", i);
      tw_trace_add_slice (t, steps, t0, 10000, "step", "step", (tw_trace_arg[]) { { "step", idx } }, 1);
      tw_trace_add_slice (t, main_lane, t0 + 1, 6001, "linear (fc1)", "forward",
                          (tw_trace_arg[]) { { "nodes", "fc1" }, { "shape", "[64, 2]" } }, 2);
      tw_trace_add_slice (t, main_lane, t0 + 3, 2999, "matmul", "kernel", NULL, 0);
      tw_trace_add_slice (t, dev, t0 + 7, 1, "name\n\"x\"\t\x01", "cat",
                          (tw_trace_arg[]) { { "k\"", "v\\\n" }, { "µ", "→" } }, 2);
      tw_trace_add_instant (t, main_lane, t0 + 9999, "mark", "m");
      tw_trace_add_counter (t, 1, "loss", t0 + 10000, 2.5 / (i + 1));
      tw_trace_add_flow (t, i, "op→kernel", main_lane, t0 + 3, dev, t0 + 7);
    }
  tw_trace_set_meta (t, "model", "spirals \"test\"");
  tw_trace_set_meta (t, "mode", "eager");
  tw_trace_sort (t);
  return t;
}

static int
cmp_strp (gconstpointer a, gconstpointer b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* Every slice of t as one line (lane, times, name, category, args), sorted. */
static GPtrArray *
slice_lines (const tw_trace *t)
{
  GPtrArray *lines = g_ptr_array_new_with_free_func (g_free);
  for (guint l = 0; l < tw_trace_n_lanes (t); l++)
    {
      const tw_lane_info *li = tw_trace_lane (t, l);
      for (guint k = 0; k < tw_trace_lane_n_slices (t, l); k++)
        {
          const tw_slice *s = tw_trace_lane_slice (t, l, k);
          GString *line = g_string_new (NULL);
          g_string_append_printf (line, "%d/%" G_GINT64_FORMAT "/%s %" G_GINT64_FORMAT " %" G_GINT64_FORMAT
                                  " %s|%s", li->pid, li->tid, li->name, s->start_ns, s->dur_ns, s->name,
                                  s->category ? s->category : "(none)");
          for (guint a = 0; a < s->n_args; a++)
            g_string_append_printf (line, "|%s=%s", s->args[a].key, s->args[a].value);
          g_ptr_array_add (lines, g_string_free (line, FALSE));
        }
      for (guint k = 0; k < tw_trace_lane_n_instants (t, l); k++)
        {
          const tw_instant *in = tw_trace_lane_instant (t, l, k);
          g_ptr_array_add (lines, g_strdup_printf ("%d/%s instant %" G_GINT64_FORMAT " %s|%s", li->pid,
                                                   li->name, in->t_ns, in->name, in->category));
        }
    }
  for (guint k = 0; k < tw_trace_n_counters (t); k++)
    {
      const tw_counter_sample *c = tw_trace_counter (t, k);
      g_ptr_array_add (lines, g_strdup_printf ("counter %d %s %" G_GINT64_FORMAT " %.17g", c->pid, c->name,
                                               c->t_ns, c->value));
    }
  for (guint k = 0; k < tw_trace_n_flows (t); k++)
    {
      const tw_flow *f = tw_trace_flow (t, k);
      g_ptr_array_add (lines, g_strdup_printf ("flow %" G_GUINT64_FORMAT " %s %s@%" G_GINT64_FORMAT
                                               " %s@%" G_GINT64_FORMAT, f->id, f->name,
                                               tw_trace_lane (t, f->from_lane)->name, f->from_ns,
                                               tw_trace_lane (t, f->to_lane)->name, f->to_ns));
    }
  g_ptr_array_sort (lines, cmp_strp);
  return lines;
}

static void
assert_same_events (const tw_trace *a, const tw_trace *b)
{
  g_autoptr (GPtrArray) la = slice_lines (a);
  g_autoptr (GPtrArray) lb = slice_lines (b);
  g_assert_cmpuint (la->len, ==, lb->len);
  for (guint i = 0; i < la->len; i++)
    g_assert_cmpstr (la->pdata[i], ==, lb->pdata[i]);
  g_assert_cmpuint (tw_trace_n_slices (a), ==, tw_trace_n_slices (b));
  g_assert_cmpuint (tw_trace_n_instants (a), ==, tw_trace_n_instants (b));
  g_assert_cmpuint (tw_trace_n_counters (a), ==, tw_trace_n_counters (b));
  g_assert_cmpuint (tw_trace_n_flows (a), ==, tw_trace_n_flows (b));
  g_assert_cmpuint (tw_trace_n_lanes (a), ==, tw_trace_n_lanes (b));
  const char *const *keys = tw_trace_meta_keys (a);
  for (int i = 0; keys[i]; i++)
    g_assert_cmpstr (tw_trace_get_meta (b, keys[i]), ==, tw_trace_get_meta (a, keys[i]));
}

static void
test_round_trip (void)
{
  g_autoptr (tw_trace) t = make_trace (50);
  g_autofree char *dir = g_dir_make_tmp ("twb-import-XXXXXX", NULL);
  g_autoptr (GError) error = NULL;
  const char *names[] = { "t.json", "t.json.gz" };
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autofree char *path = g_build_filename (dir, names[i], NULL);
      g_assert_true (tw_chrome_trace_save (t, path, &error));
      g_assert_no_error (error);
      g_autoptr (tw_trace) back = tw_trace_load_chrome (path, &error);
      g_assert_no_error (error);
      g_assert_nonnull (back);
      assert_same_events (t, back);
      g_assert_null (tw_trace_get_meta (back, "import.note"));
      g_assert_null (tw_trace_get_meta (back, "import.skipped"));
      g_assert_cmpstr (tw_trace_process (back, 0)->name, ==, "twb");
      g_remove (path);
    }
  g_rmdir (dir);
}

/* Gzip is recognised by its magic bytes, not by the name. */
static void
test_gzip_by_magic (void)
{
  g_autoptr (tw_trace) t = make_trace (20);
  g_autofree char *dir = g_dir_make_tmp ("twb-import-XXXXXX", NULL);
  g_autofree char *gz = g_build_filename (dir, "t.json.gz", NULL);
  g_autofree char *plain_named = g_build_filename (dir, "compressed.json", NULL);
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_chrome_trace_save (t, gz, &error));
  g_autofree char *raw = NULL;
  gsize len = 0;
  g_assert_true (g_file_get_contents (gz, &raw, &len, NULL));
  g_assert_cmpint ((guchar) raw[0], ==, 0x1f);
  g_assert_true (g_file_set_contents (plain_named, raw, (gssize) len, NULL));
  g_autoptr (tw_trace) back = tw_trace_load_chrome (plain_named, &error);
  g_assert_no_error (error);
  assert_same_events (t, back);

  /* Corrupt gzip: bytes changed in the middle of the deflate stream, or the
   * gzip header itself: errors naming the file and a byte offset. */
  g_autofree char *bad = g_build_filename (dir, "bad.json.gz", NULL);
  for (int k = 0; k < 2; k++)
    {
      g_autofree char *copy = g_memdup2 (raw, len);
      if (k == 0)
        for (gsize i = len / 3; i < len / 3 + 16; i++)
          copy[i] ^= 0x5a;
      else
        copy[3] = (char) 0xe0;          /* reserved flag bits */
      g_assert_true (g_file_set_contents (bad, copy, (gssize) len, NULL));
      g_autoptr (tw_trace) none = tw_trace_load_chrome (bad, &error);
      g_assert_null (none);
      g_assert_nonnull (error);
      g_assert_true (g_str_has_prefix (error->message, bad));      /* named once */
      g_assert_null (strstr (error->message + strlen (bad), "bad.json.gz"));
      g_assert_nonnull (strstr (error->message, "corrupt gzip data near byte "));
      g_clear_error (&error);
    }
  /* A gzip file cut short (a crashed run's) opens with what is there. */
  g_assert_true (g_file_set_contents (bad, raw, (gssize) (len / 2), NULL));
  g_autoptr (tw_trace) part = tw_trace_load_chrome (bad, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (tw_trace_n_slices (part), >, 0);
  g_assert_cmpuint (tw_trace_n_slices (part), <, tw_trace_n_slices (t));
  g_assert_nonnull (strstr (tw_trace_get_meta (part, "import.note"), "the gzip data stops at byte"));
  /* Cut inside the gzip header: no trace text at all. */
  g_assert_true (g_file_set_contents (bad, raw, 5, NULL));
  g_assert_null (tw_trace_load_chrome (bad, &error));
  g_assert_nonnull (strstr (error->message, "byte "));
  g_clear_error (&error);
  g_remove (bad);
  g_remove (gz);
  g_remove (plain_named);
  g_rmdir (dir);
}

static guint
lane_named (const tw_trace *t, const char *name)
{
  for (guint l = 0; l < tw_trace_n_lanes (t); l++)
    if (strcmp (tw_trace_lane (t, l)->name, name) == 0)
      return l;
  g_error ("no lane named \"%s\"", name);
}

static void
test_torch (void)
{
  g_autofree char *path = data_path ("torch-trace.json");
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_trace) t = tw_trace_load_chrome (path, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (tw_trace_n_lanes (t), ==, 6);
  g_assert_cmpuint (tw_trace_n_slices (t), ==, 11);
  g_assert_cmpuint (tw_trace_n_instants (t), ==, 3);
  g_assert_cmpuint (tw_trace_n_flows (t), ==, 2);
  g_assert_null (tw_trace_get_meta (t, "import.skipped"));

  guint cpu = lane_named (t, "thread 2417 (python3)");
  const tw_lane_info *cpu_info = tw_trace_lane (t, cpu);
  g_assert_cmpint (cpu_info->pid, ==, 2417);
  g_assert_cmpint (cpu_info->tid, ==, 2417);
  g_assert_cmpint (cpu_info->kind, ==, TW_LANE_THREAD);
  g_assert_cmpuint (tw_trace_lane_n_slices (t, cpu), ==, 7);
  g_assert_cmpuint (tw_trace_lane_n_instants (t, cpu), ==, 1);
  const tw_slice *step = tw_trace_lane_slice (t, cpu, 0);
  g_assert_cmpstr (step->name, ==, "ProfilerStep#2");
  g_assert_cmpstr (step->category, ==, "user_annotation");
  g_assert_cmpint (step->start_ns, ==, 1700000000100000);
  g_assert_cmpint (step->dur_ns, ==, 500250);
  g_assert_cmpuint (step->depth, ==, 0);
  const tw_slice *linear = tw_trace_lane_slice (t, cpu, 1);
  g_assert_cmpstr (linear->name, ==, "aten::linear");
  g_assert_cmpint (linear->dur_ns, ==, 60125);
  g_assert_cmpuint (linear->depth, ==, 1);
  g_assert_cmpstr (tw_slice_arg (linear, "Input Dims"), ==, "[[64,784],[128,784],[128]]");
  g_assert_cmpstr (tw_slice_arg (linear, "Input type"), ==, "[\"float\",\"float\",\"float\"]");
  g_assert_cmpstr (tw_slice_arg (linear, "External id"), ==, "2");
  const tw_slice *addmm = tw_trace_lane_slice (t, cpu, 2);
  g_assert_cmpstr (addmm->name, ==, "aten::addmm");
  g_assert_cmpuint (addmm->depth, ==, 2);
  g_assert_cmpstr (tw_trace_lane_slice (t, cpu, 3)->name, ==, "cudaLaunchKernel");
  g_assert_cmpuint (tw_trace_lane_slice (t, cpu, 3)->depth, ==, 3);

  guint s7 = lane_named (t, "stream 7 ");
  g_assert_cmpint (tw_trace_lane (t, s7)->pid, ==, 0);
  g_assert_cmpint (tw_trace_lane (t, s7)->tid, ==, 7);
  g_assert_cmpint (tw_trace_lane (t, s7)->kind, ==, TW_LANE_STREAM);
  g_assert_cmpuint (tw_trace_lane_n_slices (t, s7), ==, 2);
  const tw_slice *gemm = tw_trace_lane_slice (t, s7, 0);
  g_assert_cmpstr (gemm->name, ==, "ampere_sgemm_32x32_sliced1x4_tn");
  g_assert_cmpstr (gemm->category, ==, "kernel");
  g_assert_cmpint (gemm->dur_ns, ==, 15375);
  g_assert_cmpstr (tw_slice_arg (gemm, "grid"), ==, "[4,16,1]");
  g_assert_cmpstr (tw_slice_arg (gemm, "blocks per SM"), ==, "0.59259");

  /* A tid given as a string is a lane of its own, named by it. */
  guint s8 = lane_named (t, "stream 8");
  g_assert_cmpint (tw_trace_lane (t, s8)->pid, ==, 0);
  g_assert_cmpint (tw_trace_lane (t, s8)->kind, ==, TW_LANE_STREAM);
  g_assert_cmpstr (tw_trace_lane_slice (t, s8, 0)->name, ==, "Memcpy DtoH (Device -> Pageable)");
  guint spans = lane_named (t, "PyTorch Profiler");
  g_assert_cmpuint (tw_trace_lane_n_slices (t, spans), ==, 1);

  /* The flows join the launches to their kernels. */
  for (guint i = 0; i < tw_trace_n_flows (t); i++)
    {
      const tw_flow *f = tw_trace_flow (t, i);
      g_assert_cmpuint (f->from_lane, ==, cpu);
      g_assert_cmpuint (f->to_lane, ==, s7);
    }
  g_assert_cmpuint (tw_trace_flow (t, 0)->id + tw_trace_flow (t, 1)->id, ==, 85);

  /* Processes: the CPU and GPU ones by name, the string pids by theirs. */
  guint n_python = 0, n_spans = 0;
  for (guint i = 0; i < tw_trace_n_processes (t); i++)
    {
      n_python += strcmp (tw_trace_process (t, i)->name, "python3") == 0;
      n_spans += strcmp (tw_trace_process (t, i)->name, "Spans") == 0;
    }
  g_assert_cmpuint (n_python, ==, 2);
  g_assert_cmpuint (n_spans, ==, 1);

  /* The top-level fields besides the events are kept as metadata. */
  g_assert_cmpstr (tw_trace_get_meta (t, "schemaVersion"), ==, "1");
  g_assert_cmpstr (tw_trace_get_meta (t, "distributedInfo"), ==,
                   "{\"backend\":\"nccl\",\"rank\":0,\"world_size\":2}");
  g_assert_nonnull (strstr (tw_trace_get_meta (t, "deviceProperties"), "\"NVIDIA A100-SXM4-40GB\""));
}

/* A real trace from Debian's python3-torch (1.13, built without Kineto:
 * the legacy profiler's bare array, pid "CPU functions", tid 1, whole
 * microseconds), made by data/make-torch-trace.py: a 784-128-10 MLP,
 * three profiled steps.  The figures were counted from the file with
 * Python (slices sorted by start, longer first; depth = open enclosing
 * slices). */
static void
test_torch_real (void)
{
  g_autofree char *path = data_path ("torch-real-trace.json");
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_trace) t = tw_trace_load_chrome (path, &error);
  g_assert_no_error (error);
  g_assert_null (tw_trace_get_meta (t, "import.note"));
  g_assert_null (tw_trace_get_meta (t, "import.skipped"));
  g_assert_cmpuint (tw_trace_n_slices (t), ==, 372);
  /* One lane: the Python thread, in a process named by the string pid. */
  g_assert_cmpuint (tw_trace_n_lanes (t), ==, 1);
  g_assert_cmpuint (tw_trace_n_processes (t), ==, 1);
  g_assert_cmpstr (tw_trace_process (t, 0)->name, ==, "CPU functions");
  const tw_lane_info *li = tw_trace_lane (t, 0);
  g_assert_cmpint (li->tid, ==, 1);
  g_assert_cmpint (li->kind, ==, TW_LANE_THREAD);

  guint n_linear = 0, n_addmm = 0, n_mm = 0, max_depth = 0, n_steps = 0;
  const tw_slice *open[16] = { NULL };
  for (guint k = 0; k < tw_trace_lane_n_slices (t, 0); k++)
    {
      const tw_slice *sl = tw_trace_lane_slice (t, 0, k);
      g_assert_cmpuint (sl->depth, <, G_N_ELEMENTS (open));
      if (sl->depth > 0)
        {
          const tw_slice *parent = open[sl->depth - 1];
          g_assert_nonnull (parent);
          g_assert_cmpint (sl->start_ns, >=, parent->start_ns);
          g_assert_cmpint (sl->start_ns + sl->dur_ns, <=, parent->start_ns + parent->dur_ns);
        }
      open[sl->depth] = sl;
      max_depth = MAX (max_depth, sl->depth);
      if (g_str_has_prefix (sl->name, "ProfilerStep#"))
        {
          n_steps++;
          g_autofree char *name = g_strdup_printf ("ProfilerStep#%u", n_steps);
          g_assert_cmpstr (sl->name, ==, name);
          g_assert_cmpuint (sl->depth, ==, 0);
          guint inside = 0;
          for (guint j = k + 1; j < tw_trace_lane_n_slices (t, 0)
                                && tw_trace_lane_slice (t, 0, j)->start_ns < sl->start_ns + sl->dur_ns; j++)
            inside++;
          g_assert_cmpuint (inside, ==, 120);
        }
      else if (strcmp (sl->name, "aten::linear") == 0)
        {
          n_linear++;
          g_assert_cmpuint (sl->depth, ==, 1);
          g_assert_true (g_str_has_prefix (open[0]->name, "ProfilerStep#"));
        }
      else if (strcmp (sl->name, "aten::addmm") == 0)
        {
          n_addmm++;
          g_assert_cmpuint (sl->depth, ==, 2);
          g_assert_cmpstr (open[1]->name, ==, "aten::linear");
        }
      else if (strcmp (sl->name, "aten::mm") == 0)
        {
          n_mm++;
          g_assert_cmpuint (sl->depth, ==, 3);
        }
    }
  g_assert_cmpuint (n_steps, ==, 3);
  g_assert_cmpuint (n_linear, ==, 6);
  g_assert_cmpuint (n_addmm, ==, 6);
  g_assert_cmpuint (n_mm, ==, 9);
  g_assert_cmpuint (max_depth, ==, 5);
}

static void
write_text (const char *path, const char *text, gssize len)
{
  g_autoptr (GError) error = NULL;
  g_assert_true (g_file_set_contents (path, text, len, &error));
  g_assert_no_error (error);
}

/* A crashed run's trace: the event array never closed.  B/E pairs, an
 * unknown phase and the bare array form on the way. */
static void
test_unterminated (void)
{
  g_autofree char *dir = g_dir_make_tmp ("twb-import-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "crashed.json", NULL);
  g_autoptr (GError) error = NULL;
  const char *events =
      "{\"ph\":\"B\",\"name\":\"outer\",\"pid\":1,\"tid\":2,\"ts\":10,\"args\":{\"n\":1}},\n"
      "{\"ph\":\"B\",\"name\":\"inner\",\"pid\":1,\"tid\":2,\"ts\":11.5},\n"
      "{\"ph\":\"E\",\"pid\":1,\"tid\":2,\"ts\":12.25},\n"
      "{\"ph\":\"E\",\"pid\":1,\"tid\":2,\"ts\":20},\n"
      "{\"ph\":\"P\",\"name\":\"sample\",\"pid\":1,\"tid\":2,\"ts\":21},\n"
      "{\"ph\":\"X\",\"name\":\"last\",\"pid\":1,\"tid\":2,\"ts\":30,\"dur\":1e0},\n";
  const char *forms[] = { "[", "{\"traceEvents\":[" };
  for (guint f = 0; f < G_N_ELEMENTS (forms); f++)
    for (int cut = 0; cut < 2; cut++)
      {
        /* Cut after the last event's comma, or in the middle of one more. */
        g_autofree char *text = g_strconcat (forms[f], events, cut ? "{\"ph\":\"X\",\"na" : "", NULL);
        write_text (path, text, -1);
        g_autoptr (tw_trace) t = tw_trace_load_chrome (path, &error);
        g_assert_no_error (error);
        g_assert_cmpuint (tw_trace_n_slices (t), ==, 3);
        g_assert_nonnull (strstr (tw_trace_get_meta (t, "import.note"), "crashed run"));
        g_assert_cmpstr (tw_trace_get_meta (t, "import.skipped"), ==, "1 of phase \"P\"");
        guint lane = (guint) tw_trace_find_lane (t, 1, 2);
        const tw_slice *outer = tw_trace_lane_slice (t, lane, 0);
        const tw_slice *inner = tw_trace_lane_slice (t, lane, 1);
        g_assert_cmpstr (outer->name, ==, "outer");
        g_assert_cmpint (outer->start_ns, ==, 10000);
        g_assert_cmpint (outer->dur_ns, ==, 10000);
        g_assert_cmpstr (tw_slice_arg (outer, "n"), ==, "1");
        g_assert_cmpstr (inner->name, ==, "inner");
        g_assert_cmpint (inner->start_ns, ==, 11500);
        g_assert_cmpint (inner->dur_ns, ==, 750);
        g_assert_cmpuint (inner->depth, ==, 1);
        g_assert_cmpint (tw_trace_lane_slice (t, lane, 2)->dur_ns, ==, 1000);
      }
  /* A lane named "stream …" before its first event is a stream. */
  write_text (path, "[{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":0,\"tid\":9,\"args\":{\"name\":\"stream 9\"}},"
                    "{\"ph\":\"X\",\"name\":\"k\",\"pid\":0,\"tid\":9,\"ts\":1,\"dur\":2}]", -1);
  g_autoptr (tw_trace) early = tw_trace_load_chrome (path, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (tw_trace_n_lanes (early), ==, 1);
  g_assert_cmpint (tw_trace_lane (early, 0)->kind, ==, TW_LANE_STREAM);
  g_assert_cmpstr (tw_trace_lane (early, 0)->name, ==, "stream 9");
  g_assert_cmpuint (tw_trace_lane_n_slices (early, 0), ==, 1);

  /* The complete bare array form has no note. */
  g_autofree char *whole = g_strconcat ("[", events, "{}]", NULL);
  write_text (path, whole, -1);
  g_autoptr (tw_trace) t = tw_trace_load_chrome (path, &error);
  g_assert_no_error (error);
  g_assert_null (tw_trace_get_meta (t, "import.note"));
  g_assert_cmpstr (tw_trace_get_meta (t, "import.skipped"), ==, "1 of phase \"P\", 1 malformed");
  g_remove (path);
  g_rmdir (dir);
}

static void
expect_error (const char *path, const char *text, const char *needle)
{
  write_text (path, text, -1);
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_trace) t = tw_trace_load_chrome (path, &error);
  g_assert_null (t);
  g_assert_nonnull (error);
  g_autofree char *base = g_path_get_basename (path);
  g_assert_nonnull (strstr (error->message, base));
  if (!strstr (error->message, needle))
    g_error ("\"%s\" lacks \"%s\"", error->message, needle);
}

static void
test_errors (void)
{
  g_autofree char *dir = g_dir_make_tmp ("twb-import-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "bad.json", NULL);
  expect_error (path, "", "byte 0: the file is empty");
  expect_error (path, "42", "not a Chrome trace");
  expect_error (path, "{\"a\":1}", "no \"traceEvents\" array");
  expect_error (path, "{\"traceEvents\":5}", "\"traceEvents\" is not an array");
  expect_error (path, "[{\"ph\":\"X\",\"ts\":1} ?]", "byte 20:");
  expect_error (path, "{\"traceEvents\":[]} trailing", "byte ");
  g_autofree char *missing = g_build_filename (dir, "missing.json", NULL);
  g_autoptr (GError) error = NULL;
  g_assert_null (tw_trace_load_chrome (missing, &error));
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_NOENT);
  g_assert_nonnull (strstr (error->message, "missing.json"));
  g_remove (path);
  g_rmdir (dir);
}

/* A trace too large for memory is refused before loading, with the figures. */
static void
test_memory_check (void)
{
  g_autoptr (tw_trace) t = make_trace (200);
  g_autofree char *dir = g_dir_make_tmp ("twb-import-XXXXXX", NULL);
  g_autofree char *plain = g_build_filename (dir, "t.json", NULL);
  g_autofree char *gz = g_build_filename (dir, "t.json.gz", NULL);
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_chrome_trace_save (t, plain, &error));
  g_assert_true (tw_chrome_trace_save (t, gz, &error));
  GStatBuf st;
  g_assert_cmpint (g_stat (plain, &st), ==, 0);
  guint64 text = (guint64) st.st_size;
  /* 0.8× the text, plain or (through the gzip trailer) compressed. */
  g_assert_cmpuint (tw_trace_chrome_memory_estimate (plain), ==, text / 10 * 8);
  g_assert_cmpuint (tw_trace_chrome_memory_estimate (gz), ==, text / 10 * 8);
  g_assert_cmpuint (tw_trace_chrome_memory_estimate (dir), ==, 0);
  g_assert_true (tw_trace_chrome_fits (plain, text, &error));
  g_assert_true (tw_trace_chrome_fits (plain, 0, &error));
  g_assert_no_error (error);
  g_assert_false (tw_trace_chrome_fits (gz, 1000, &error));
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_NOMEM);
  g_assert_nonnull (strstr (error->message, "t.json.gz: too large for memory: opening it needs about "));
  g_assert_nonnull (strstr (error->message, ", 0.0 MB are available"));
  g_remove (plain);
  g_remove (gz);
  g_rmdir (dir);
}

static void
load_any (const char *path, const char *what)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_trace) t = tw_trace_load_chrome (path, &error);
  if (t == NULL)
    {
      g_assert_nonnull (error);
      if (!strstr (error->message, "byte "))
        g_error ("%s: error without an offset: %s", what, error->message);
    }
  else
    g_assert_no_error (error);
}

/* Truncations at every 7th byte and random edits of a small valid trace:
 * each gives a trace or an error with an offset. */
static void
test_fuzz (void)
{
  g_autoptr (tw_trace) t = make_trace (3);
  g_autofree char *dir = g_dir_make_tmp ("twb-import-XXXXXX", NULL);
  g_autofree char *good = g_build_filename (dir, "good.json", NULL);
  g_autofree char *path = g_build_filename (dir, "fuzz.json", NULL);
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_chrome_trace_save (t, good, &error));
  g_autofree char *text = NULL;
  gsize len = 0;
  g_assert_true (g_file_get_contents (good, &text, &len, NULL));
  g_assert_cmpuint (len, >, 1000);
  guint cases = 0;
  for (gsize cut = 0; cut < len; cut += 7, cases++)
    {
      write_text (path, text, (gssize) cut);
      g_autofree char *what = g_strdup_printf ("cut at %zu", cut);
      load_any (path, what);
    }
  g_autoptr (GRand) rand = g_rand_new_with_seed (20261201);
  const char specials[] = "{}[]\",:\\0123456789.eE-tfn \x01\xff\xc3";
  for (int i = 0; i < 300; i++, cases++)
    {
      g_autofree char *copy = g_memdup2 (text, len);
      int n_edits = g_rand_int_range (rand, 1, 4);
      for (int e = 0; e < n_edits; e++)
        {
          gsize at = (gsize) g_rand_int_range (rand, 0, (gint32) len);
          copy[at] = g_rand_boolean (rand) ? specials[g_rand_int_range (rand, 0, sizeof specials - 1)]
                                           : (char) g_rand_int_range (rand, 0, 256);
        }
      write_text (path, copy, (gssize) len);
      g_autofree char *what = g_strdup_printf ("edit %d", i);
      load_any (path, what);
    }
  g_test_message ("%u malformed inputs", cases);
  g_remove (path);
  g_remove (good);
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/profiler/import/round-trip", test_round_trip);
  g_test_add_func ("/profiler/import/gzip", test_gzip_by_magic);
  g_test_add_func ("/profiler/import/torch", test_torch);
  g_test_add_func ("/profiler/import/torch-real", test_torch_real);
  g_test_add_func ("/profiler/import/unterminated", test_unterminated);
  g_test_add_func ("/profiler/import/errors", test_errors);
  g_test_add_func ("/profiler/import/memory", test_memory_check);
  g_test_add_func ("/profiler/import/fuzz", test_fuzz);
  return g_test_run ();
}
