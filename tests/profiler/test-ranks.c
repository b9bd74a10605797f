/* test-ranks.c — distributed traces without MPI: the recorder on
 * hand-made TW_EV_COLLECTIVE events, traces to and from memory, the merge
 * of synthetic per-rank traces with known clock offsets and drifts, the
 * same collective across ranks, and the per-rank figures. */
#include "engine/comm/comm.h"
#include "profiler/chrome.h"
#include "profiler/chrome-read.h"
#include "profiler/ranks.h"
#include "profiler/recorder.h"

#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int
find_lane (const tw_trace *t, int pid, const char *name)
{
  for (guint l = 0; l < tw_trace_n_lanes (t); l++)
    if ((pid < 0 || tw_trace_lane (t, l)->pid == pid) && g_strcmp0 (tw_trace_lane (t, l)->name, name) == 0)
      return (int) l;
  return -1;
}

static void
publish_coll (tw_bus *bus, const tw_coll_info *ci)
{
  tw_event ev = { .kind = TW_EV_COLLECTIVE, .t_start = ci->t_start, .coll = ci };
  tw_bus_publish (bus, &ev);      /* begin: not recorded */
  ev.end = TRUE;
  ev.t_end = ci->t_end;
  tw_bus_publish (bus, &ev);
}

static gpointer
publish_send_thread (gpointer data)
{
  tw_bus *bus = data;
  tw_coll_info ci = { .kind = TW_COLL_SEND, .algo = TW_ALGO_MPI, .msg_seq = 7, .rank = 0, .size = 4,
                      .peer = 1, .bytes = 1000, .sent = 1000, .what = (char *) "activations",
                      .t_post = 5000, .t_start = 6000, .t_end = 8000 };
  publish_coll (bus, &ci);
  return NULL;
}

/* Records one step with an op, an all-reduce, a huge bucket's all-reduce
 * and, from another thread, a send; streaming to path when not NULL. */
static tw_trace *
record_collectives (const char *path)
{
  static const char *const nodes[] = { "fc1", NULL };
  tw_op_ident id = { .label = "linear", .nodes = nodes, .n_nodes = 1, .flops = 10, .bytes = 20 };
  g_autoptr (tw_bus) bus = tw_bus_new ();
  g_autoptr (tw_recorder) rec = tw_recorder_new (0);
  g_autoptr (GError) error = NULL;
  if (path)
    {
      tw_recorder_set_stream_handoff (rec, 1);
      g_assert_true (tw_recorder_stream_to (rec, path, &error));
    }
  tw_recorder_start (rec, bus);
  char *params[] = { "fc1.weight", "fc1.bias", NULL };
  GPtrArray *many = g_ptr_array_new_with_free_func (g_free);
  for (int i = 0; i < 1000; i++)
    g_ptr_array_add (many, g_strdup_printf ("layer%03d.weight", i));
  g_ptr_array_add (many, NULL);
  for (int step = 0; step < 2; step++)
    {
      gint64 base = 2000000 * (gint64) (step + 1);
      tw_event it = { .kind = TW_EV_ITERATION, .step = step, .t_start = base, .loss = NAN };
      tw_bus_publish (bus, &it);
      tw_event op = { .kind = TW_EV_FORWARD, .ident = &id, .step = step, .end = TRUE,
                      .t_start = base + 100, .t_end = base + 600 };
      tw_bus_publish (bus, &op);
      tw_coll_info ar = { .kind = TW_COLL_ALLREDUCE, .algo = TW_ALGO_RING, .seq = 1 + 2 * step,
                          .rank = 0, .size = 4, .peer = -1, .bytes = 4000000, .sent = 6000000,
                          .received = 6000000, .what = (char *) "bucket 3", .params = params,
                          .t_post = base + 200, .t_start = base + 1200, .t_end = base + 101200 };
      publish_coll (bus, &ar);
      tw_coll_info big = ar;
      big.seq = 2 + 2 * step;
      big.what = (char *) "bucket 0";
      big.params = (char **) many->pdata;
      big.t_post = big.t_start = base + 500000;
      big.t_end = big.t_start;              /* zero length: no bandwidth */
      publish_coll (bus, &big);
      if (step == 0)
        {
          GThread *th = g_thread_new ("waiter", publish_send_thread, bus);
          g_thread_join (th);
        }
      it.end = TRUE;
      it.t_end = base + 1200000;
      tw_bus_publish (bus, &it);
    }
  tw_recorder_stop (rec);
  g_ptr_array_unref (many);
  if (!path)
    return tw_recorder_take_trace (rec);
  g_assert_true (tw_recorder_finish_stream (rec, &error));
  g_assert_no_error (error);
  tw_trace *t = tw_trace_load_chrome (path, &error);
  g_assert_no_error (error);
  return t;
}

static void
check_collectives (const tw_trace *t)
{
  int l = find_lane (t, -1, "communication");
  g_assert_cmpint (l, >=, 0);
  const tw_lane_info *li = tw_trace_lane (t, (guint) l);
  g_assert_cmpint (li->tid, ==, TW_RECORDER_COMM_TID);
  g_assert_cmpint (li->kind, ==, TW_LANE_STREAM);
  /* Every collective on that lane, whichever thread waited: 2 steps × 2
   * all-reduces and the send. */
  g_assert_cmpuint (tw_trace_lane_n_slices (t, (guint) l), ==, 5);
  const tw_slice *send = tw_trace_lane_slice (t, (guint) l, 0);
  g_assert_cmpstr (send->name, ==, "send to 1 (activations)");
  g_assert_cmpint (send->start_ns, ==, 6000);
  g_assert_cmpint (send->dur_ns, ==, 2000);
  g_assert_cmpstr (tw_slice_arg (send, "kind"), ==, "send");
  g_assert_cmpstr (tw_slice_arg (send, "msg_seq"), ==, "7");
  g_assert_cmpstr (tw_slice_arg (send, "seq"), ==, "0");
  g_assert_cmpstr (tw_slice_arg (send, "peer"), ==, "1");
  g_assert_cmpstr (tw_slice_arg (send, "queued_us"), ==, "1.000");
  /* 1000 bytes in 2000 ns: 0.5 GB/s. */
  g_assert_cmpstr (tw_slice_arg (send, "busbw_gbps"), ==, "0.500");
  g_assert_null (tw_slice_arg (send, "params"));

  const tw_slice *ar = tw_trace_lane_slice (t, (guint) l, 1);
  g_assert_cmpstr (ar->name, ==, "allreduce bucket 3");
  g_assert_cmpstr (ar->category, ==, "collective");
  g_assert_cmpint (ar->start_ns, ==, 2001200);
  g_assert_cmpint (ar->dur_ns, ==, 100000);
  g_assert_cmpstr (tw_slice_arg (ar, "seq"), ==, "1");
  g_assert_null (tw_slice_arg (ar, "msg_seq"));
  g_assert_cmpstr (tw_slice_arg (ar, "peer"), ==, "-1");
  g_assert_cmpstr (tw_slice_arg (ar, "bytes"), ==, "4000000");
  g_assert_cmpstr (tw_slice_arg (ar, "sent"), ==, "6000000");
  g_assert_cmpstr (tw_slice_arg (ar, "received"), ==, "6000000");
  g_assert_cmpstr (tw_slice_arg (ar, "algo"), ==, "ring");
  g_assert_cmpstr (tw_slice_arg (ar, "what"), ==, "bucket 3");
  g_assert_cmpstr (tw_slice_arg (ar, "params"), ==, "fc1.weight,fc1.bias");
  g_assert_cmpstr (tw_slice_arg (ar, "rank"), ==, "0");
  g_assert_cmpstr (tw_slice_arg (ar, "queued_us"), ==, "1.000");
  /* 4 MB × 2 (4-1)/4 in 100 µs: 60 GB/s. */
  g_assert_cmpstr (tw_slice_arg (ar, "busbw_gbps"), ==, "60.000");

  const tw_slice *big = tw_trace_lane_slice (t, (guint) l, 2);
  g_assert_cmpstr (big->name, ==, "allreduce bucket 0");
  g_assert_cmpstr (tw_slice_arg (big, "seq"), ==, "2");
  g_assert_null (tw_slice_arg (big, "busbw_gbps"));
  const char *params = tw_slice_arg (big, "params");
  g_assert_cmpuint (strlen (params), <, 600);
  g_assert_true (g_str_has_prefix (params, "layer000.weight,layer001.weight,"));
  g_assert_true (g_str_has_suffix (params, " more)"));
  g_assert_cmpstr (tw_slice_arg (tw_trace_lane_slice (t, (guint) l, 3), "seq"), ==, "3");

  /* The op stays on its thread's lane. */
  g_assert_cmpint (find_lane (t, li->pid, "steps"), >=, 0);
  gboolean op_found = FALSE;
  for (guint k = 0; k < tw_trace_n_lanes (t); k++)
    for (guint i = 0; i < tw_trace_lane_n_slices (t, k); i++)
      if (strcmp (tw_trace_lane_slice (t, k, i)->name, "linear (fc1)") == 0)
        {
          op_found = TRUE;
          g_assert_cmpint (tw_trace_lane (t, k)->kind, ==, TW_LANE_THREAD);
        }
  g_assert_true (op_found);
}

static void
test_recorder_collectives (void)
{
  g_autoptr (tw_trace) t = record_collectives (NULL);
  check_collectives (t);
}

static void
test_recorder_collectives_stream (void)
{
  g_autofree char *dir = g_dir_make_tmp ("twb-ranks-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "coll.json.gz", NULL);
  g_autoptr (tw_trace) t = record_collectives (path);
  check_collectives (t);
  g_unlink (path);
  g_rmdir (dir);
}

/* ---- memory ---- */

static GBytes *
plain_of (GBytes *gz)
{
  g_autoptr (GConverter) dec = G_CONVERTER (g_zlib_decompressor_new (G_ZLIB_COMPRESSOR_FORMAT_GZIP));
  g_autoptr (GInputStream) mem = g_memory_input_stream_new_from_bytes (gz);
  g_autoptr (GInputStream) in = g_converter_input_stream_new (mem, dec);
  g_autoptr (GOutputStream) out = g_memory_output_stream_new_resizable ();
  g_autoptr (GError) error = NULL;
  g_output_stream_splice (out, in, G_OUTPUT_STREAM_SPLICE_CLOSE_TARGET, NULL, &error);
  g_assert_no_error (error);
  return g_memory_output_stream_steal_as_bytes (G_MEMORY_OUTPUT_STREAM (out));
}

static void
test_bytes_roundtrip (void)
{
  g_autoptr (tw_trace) t = record_collectives (NULL);
  tw_trace_set_meta (t, "host", "node-a");
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) b = tw_chrome_trace_to_bytes (t, &error);
  g_assert_no_error (error);
  gsize len;
  const guint8 *data = g_bytes_get_data (b, &len);
  g_assert_cmpuint (len, >, 18);
  g_assert_cmpuint (data[0], ==, 0x1f);           /* gzip */
  g_assert_cmpuint (data[1], ==, 0x8b);
  g_autoptr (tw_trace) back = tw_trace_from_chrome_bytes (b, "rank 0's trace", &error);
  g_assert_no_error (error);
  check_collectives (back);
  g_assert_cmpstr (tw_trace_get_meta (back, "host"), ==, "node-a");
  g_assert_cmpuint (tw_trace_n_slices (back), ==, tw_trace_n_slices (t));
  g_assert_cmpuint (tw_trace_n_flows (back), ==, tw_trace_n_flows (t));
  g_assert_cmpuint (tw_trace_n_counters (back), ==, tw_trace_n_counters (t));
  /* Export → import → export gives the same events (chrome.h); the
   * import adds "displayTimeUnit" to the metadata once. */
  g_autoptr (GBytes) again = tw_chrome_trace_to_bytes (back, &error);
  g_autoptr (tw_trace) back2 = tw_trace_from_chrome_bytes (again, NULL, &error);
  g_autoptr (GBytes) third = tw_chrome_trace_to_bytes (back2, &error);
  g_autoptr (GBytes) p1 = plain_of (b), p2 = plain_of (again), p3 = plain_of (third);
  const char *m1 = strstr (g_bytes_get_data (p1, NULL), "\"metadata\"");
  const char *m2 = strstr (g_bytes_get_data (p2, NULL), "\"metadata\"");
  g_assert_cmpmem (g_bytes_get_data (p1, NULL), m1 - (const char *) g_bytes_get_data (p1, NULL),
                   g_bytes_get_data (p2, NULL), m2 - (const char *) g_bytes_get_data (p2, NULL));
  g_assert_true (g_bytes_equal (p2, p3));

  /* The same as a file's bytes: saving to a .gz path writes this text. */
  g_autofree char *dir = g_dir_make_tmp ("twb-ranks-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "t.json", NULL);
  g_assert_true (tw_chrome_trace_save (t, path, &error));
  g_autofree char *text = NULL;
  gsize text_len;
  g_assert_true (g_file_get_contents (path, &text, &text_len, NULL));
  g_assert_cmpmem (text, text_len, g_bytes_get_data (p1, NULL), g_bytes_get_size (p1));
  g_unlink (path);
  g_rmdir (dir);

  /* Plain text reads too. */
  g_autoptr (tw_trace) plain = tw_trace_from_chrome_bytes (p1, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (tw_trace_n_slices (plain), ==, tw_trace_n_slices (t));

  /* Cut gzip: what is there, with a note. */
  g_autoptr (GBytes) cut = g_bytes_new_from_bytes (b, 0, len - 6);
  g_autoptr (tw_trace) part = tw_trace_from_chrome_bytes (cut, "rank 2's trace", &error);
  g_assert_no_error (error);
  g_assert_nonnull (tw_trace_get_meta (part, "import.note"));

  /* Garbage: an error naming the input. */
  g_autoptr (GBytes) junk = g_bytes_new_static ("{\"traceEvents\": [ {,", 20);
  g_assert_null (tw_trace_from_chrome_bytes (junk, "rank 3's trace", &error));
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL);
  g_assert_true (g_str_has_prefix (error->message, "rank 3's trace: byte "));
  g_clear_error (&error);
  guint8 bad[32] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xff, 0xff, 0xff, 0xff };
  g_autoptr (GBytes) badgz = g_bytes_new (bad, sizeof bad);
  g_assert_null (tw_trace_from_chrome_bytes (badgz, "rank 4's trace", &error));
  g_assert_nonnull (error);
  g_assert_true (g_str_has_prefix (error->message, "rank 4's trace"));
  g_clear_error (&error);
  g_autoptr (GBytes) empty = g_bytes_new_static ("", 0);
  g_assert_null (tw_trace_from_chrome_bytes (empty, "rank 5's trace", &error));
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL);
}

/* ---- synthetic ranks ---- */

#define N_STEPS 40
#define STEP_NS ((gint64) 100000000)   /* 100 ms: the run spans 4 s */
#define T0 ((gint64) 1000000000000)    /* rank 0's clock at the first step: 1000 s */

typedef struct
{
  gint64 theta;                 /* rank 0's clock − rank r's at T0 */
  double drift_ppm;             /* rank r's clock runs this much fast */
  double slow;                  /* its compute takes this much longer (1: as the others) */
} rank_truth;

/* Rank r's clock at true time T (rank 0's clock). */
static gint64
local_time (const rank_truth *tr, gint64 T)
{
  return T - tr->theta + (gint64) llround (tr->drift_ppm * 1e-6 * (double) (T - T0));
}

/* A trace as the recorder makes one: a step per 100 ms, a forward op, an
 * all-reduce per step from 1 ms before compute ends to T + 8.5 ms, ending
 * at the same true instant on every rank (±2
 * µs of jitter), and a ring of messages r → r+1.  skip_seq: seqs left out
 * (< 0: none), with_colls FALSE: no collective at all. */
static tw_trace *
make_rank (int r, int n, const rank_truth *tr, guint32 seed, int skip_from, gboolean with_colls)
{
  GRand *rng = g_rand_new_with_seed (seed);
  tw_trace *t = tw_trace_new ();
  int pid = 4000 + r;
  tw_trace_add_process (t, pid, "twb");
  g_autofree char *host = g_strdup_printf ("node-%d", r);
  tw_trace_set_meta (t, "host", host);
  tw_trace_set_meta (t, "model", "mlp");
  guint steps = tw_trace_add_lane (t, pid, 0, "steps", TW_LANE_THREAD);
  guint main = tw_trace_add_lane (t, pid, 100 + r, "main", TW_LANE_THREAD);
  guint comm = tw_trace_add_lane (t, pid, TW_RECORDER_COMM_TID, "communication", TW_LANE_STREAM);
  for (int k = 0; k < N_STEPS; k++)
    {
      gint64 T = T0 + k * STEP_NS;
      gint64 compute = (gint64) (6000000 * tr->slow);
      g_autofree char *sname = g_strdup_printf ("step %d", k);
      tw_trace_add_slice (t, steps, local_time (tr, T), local_time (tr, T + compute + 2000000) - local_time (tr, T),
                          sname, "step", NULL, 0);
      tw_trace_add_slice (t, main, local_time (tr, T), local_time (tr, T + compute) - local_time (tr, T),
                          "linear (fc1)", "forward", (tw_trace_arg[]) { { "nodes", "fc1" } }, 1);
      char seq[16], msg[16], peer[16];
      g_snprintf (seq, sizeof seq, "%d", k + 1);
      gint64 end = T + 8500000 + g_rand_int_range (rng, -2000, 2001);
      gint64 start = T + compute - 1000000;    /* starts during compute: 1 ms overlapped */
      if (with_colls && (skip_from < 0 || k + 1 < skip_from))
        tw_trace_add_slice (t, comm, local_time (tr, start), local_time (tr, end) - local_time (tr, start),
                            "allreduce bucket 0", "collective",
                            (tw_trace_arg[]) { { "kind", "allreduce" }, { "seq", seq } }, 2);
      if (!with_colls || n < 2)
        continue;
      /* Rank r sends message k+1 to r+1 at T+9 ms; it arrives 50 µs later. */
      g_snprintf (msg, sizeof msg, "%d", k + 1);
      g_snprintf (peer, sizeof peer, "%d", (r + 1) % n);
      gint64 ts = T + 9000000;
      tw_trace_add_slice (t, comm, local_time (tr, ts), 30000, "send to", "collective",
                          (tw_trace_arg[]) { { "kind", "send" }, { "seq", "0" }, { "peer", peer },
                                             { "msg_seq", msg } }, 4);
      g_snprintf (peer, sizeof peer, "%d", (r + n - 1) % n);
      tw_trace_add_slice (t, comm, local_time (tr, ts + 50000), 30000, "recv from", "collective",
                          (tw_trace_arg[]) { { "kind", "recv" }, { "seq", "0" }, { "peer", peer },
                                             { "msg_seq", msg } }, 4);
    }
  tw_trace_add_counter (t, pid, "loss", local_time (tr, T0), 1.5);
  tw_trace_add_instant (t, main, local_time (tr, T0 + 10), "grad ready fc1.weight", "grad_ready");
  tw_trace_sort (t);
  g_rand_free (rng);
  return t;
}

static const rank_truth truths[4] = {
  { 0, 0, 1 },
  { 123456789, 20, 1 },         /* 123 ms behind, 20 ppm fast */
  { -987654321, -35, 1 },
  { 5000000000, 5, 1.25 },      /* its compute 25 % slower */
};

static void
test_merge (void)
{
  const int n = 4;
  tw_trace *ranks[4];
  gint64 offsets[4], rtts[4];
  for (int r = 0; r < n; r++)
    {
      ranks[r] = make_rank (r, n, &truths[r], 11 + r, -1, TRUE);
      /* The ping-pong's estimate: off by up to 40 µs, from a 200 µs round trip. */
      offsets[r] = truths[r].theta + (r ? 40000 - 25000 * r : 0);
      rtts[r] = r ? 200000 : 0;
    }
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_trace) m = tw_trace_merge_ranks (ranks, n, offsets, rtts, &error);
  g_assert_no_error (error);
  int nr;
  g_assert_true (tw_trace_is_multi_rank (m, &nr));
  g_assert_cmpint (nr, ==, n);
  g_assert_cmpstr (tw_trace_get_meta (m, "ranks"), ==, "4");
  g_assert_cmpstr (tw_trace_get_meta (m, "model"), ==, "mlp");
  g_assert_cmpstr (tw_trace_get_meta (m, "clock_used.0"), ==, "reference");
  g_assert_cmpstr (tw_trace_get_meta (m, "clock_offset_ns.1"), ==, "123471789");
  g_assert_cmpstr (tw_trace_get_meta (m, "clock_rtt_ns.1"), ==, "200000");
  g_assert_null (tw_trace_get_meta (m, "merge.note"));
  g_assert_cmpuint (tw_trace_n_processes (m), ==, n);
  guint64 total = 0;
  for (int r = 0; r < n; r++)
    total += tw_trace_n_slices (ranks[r]);
  g_assert_cmpuint (tw_trace_n_slices (m), ==, total);
  g_assert_cmpuint (tw_trace_n_counters (m), ==, n);
  g_assert_cmpuint (tw_trace_n_instants (m), ==, n);
  for (int r = 0; r < n; r++)
    {
      const tw_process *p = tw_trace_process (m, r);
      g_autofree char *want = g_strdup_printf ("rank %d (node-%d)", r, r);
      g_assert_cmpint (p->pid, ==, r);
      g_assert_cmpstr (p->name, ==, want);
      if (r == 0)
        continue;
      g_autofree char *key = g_strdup_printf ("clock_used.%d", r);
      g_assert_cmpstr (tw_trace_get_meta (m, key), ==, "refined");
      g_free (key);
      key = g_strdup_printf ("clock_refined.%d", r);
      g_auto (GStrv) f = g_strsplit (tw_trace_get_meta (m, key), " ", -1);
      g_assert_cmpuint (g_strv_length (f), ==, 4);
      g_assert_cmpstr (f[3], ==, "40");
      /* The drift recovered within 1 ppm: the slope's standard error is
       * the residual (1.6 µs RMS: ±2 µs uniform on both ends) over the
       * pairs' spread (1.15 s) and √40, 0.22 ppm.  Rank r's clock runs
       * fast: the correction falls behind, the opposite sign. */
      g_assert_cmpfloat (fabs (g_ascii_strtod (f[1], NULL) + truths[r].drift_ppm), <, 1);
      /* The residual: the jitter of two ranks, within 4 µs. */
      g_assert_cmpfloat (g_ascii_strtod (f[2], NULL), <, 4000);
    }
  /* Each rank's op of step k starts at true T0 + k × 10 ms within 5 µs:
   * ±2 µs jitter each side of the pairs, averaged over 40 of them. */
  for (int r = 0; r < n; r++)
    {
      int l = find_lane (m, r, "main");
      g_assert_cmpint (l, >=, 0);
      g_assert_cmpuint (tw_trace_lane_n_slices (m, (guint) l), ==, N_STEPS);
      for (guint k = 0; k < N_STEPS; k++)
        {
          const tw_slice *s = tw_trace_lane_slice (m, (guint) l, k);
          g_assert_cmpint (llabs (s->start_ns - (T0 + (gint64) k * STEP_NS)), <, 5000);
          g_assert_cmpint (llabs (s->dur_ns - (gint64) (6000000 * truths[r].slow)), <, 1000);
        }
      g_assert_cmpint (find_lane (m, r, "communication"), >=, 0);
      g_assert_cmpint (tw_trace_lane (m, (guint) find_lane (m, r, "communication"))->kind, ==,
                       TW_LANE_STREAM);
    }
  /* A flow per message, from the sender's send to the receiver's receive,
   * 50 µs later within the clocks' error. */
  guint messages = 0;
  for (guint i = 0; i < tw_trace_n_flows (m); i++)
    {
      const tw_flow *f = tw_trace_flow (m, i);
      if (strcmp (f->name, "message") != 0)
        continue;
      messages++;
      int from = tw_trace_lane (m, f->from_lane)->pid, to = tw_trace_lane (m, f->to_lane)->pid;
      g_assert_cmpint (to, ==, (from + 1) % n);
      g_assert_cmpint (llabs (f->to_ns - f->from_ns - 50000), <, 10000);
    }
  g_assert_cmpuint (messages, ==, n * N_STEPS);

  /* Through the file format and back, the merged trace stays one. */
  g_autoptr (GBytes) b = tw_chrome_trace_to_bytes (m, &error);
  g_autoptr (tw_trace) back = tw_trace_from_chrome_bytes (b, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (tw_trace_is_multi_rank (back, &nr));
  g_assert_cmpint (nr, ==, n);

  /* A merged trace is no rank's. */
  tw_trace *twice[2] = { m, ranks[0] };
  g_assert_null (tw_trace_merge_ranks (twice, 2, NULL, NULL, &error));
  g_assert_error (error, TW_RANKS_ERROR, TW_RANKS_ERROR_ARG);
  g_assert_nonnull (strstr (error->message, "rank 0"));
  g_clear_error (&error);

  /* A round trip too short to trust the fit against: the ping-pong stays. */
  gint64 tight[4] = { 0, 2, 2, 2 };
  g_autoptr (tw_trace) pp = tw_trace_merge_ranks (ranks, n, offsets, tight, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (tw_trace_get_meta (pp, "clock_used.1"), ==, "ping-pong");
  g_assert_nonnull (tw_trace_get_meta (pp, "clock_refined.1"));
  int l = find_lane (pp, 1, "main");
  /* Unrefined: the offset's 15 µs error and 20 ppm of drift over the 3.9 s. */
  const tw_slice *s = tw_trace_lane_slice (pp, (guint) l, N_STEPS - 1);
  gint64 want = T0 + (N_STEPS - 1) * STEP_NS;
  g_assert_cmpint (llabs (s->start_ns - want), >, 5000);

  /* Without offsets the fit alone finds the clocks. */
  g_autoptr (tw_trace) fit = tw_trace_merge_ranks (ranks, n, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (tw_trace_get_meta (fit, "clock_used.3"), ==, "refined");
  g_assert_cmpstr (tw_trace_get_meta (fit, "clock_offset_ns.3"), ==, "0");
  g_assert_null (tw_trace_get_meta (fit, "clock_rtt_ns.3"));
  l = find_lane (fit, 3, "main");
  s = tw_trace_lane_slice (fit, (guint) l, 0);
  g_assert_cmpint (llabs (s->start_ns - T0), <, 5000);
  for (int r = 0; r < n; r++)
    tw_trace_free (ranks[r]);
}

static void
test_merge_malformed (void)
{
  g_autoptr (GError) error = NULL;
  g_assert_null (tw_trace_merge_ranks (NULL, 0, NULL, NULL, &error));
  g_assert_error (error, TW_RANKS_ERROR, TW_RANKS_ERROR_ARG);
  g_clear_error (&error);
  tw_trace *none[2] = { NULL, NULL };
  g_assert_null (tw_trace_merge_ranks (none, 2, NULL, NULL, &error));
  g_assert_error (error, TW_RANKS_ERROR, TW_RANKS_ERROR_ARG);
  g_clear_error (&error);

  /* One rank: a merged trace of one. */
  tw_trace *one[1] = { make_rank (0, 1, &truths[0], 1, -1, TRUE) };
  g_autoptr (tw_trace) m1 = tw_trace_merge_ranks (one, 1, NULL, NULL, &error);
  g_assert_no_error (error);
  int nr;
  g_assert_false (tw_trace_is_multi_rank (m1, &nr));
  g_assert_cmpint (nr, ==, 1);
  g_assert_cmpuint (tw_trace_n_slices (m1), ==, tw_trace_n_slices (one[0]));
  tw_trace_free (one[0]);

  /* Rank 1 lost seqs 38 on; rank 2 holds no collective at all; rank 3's
   * trace is empty. */
  gint64 offsets[4];
  tw_trace *ranks[4];
  for (int r = 0; r < 3; r++)
    {
      offsets[r] = truths[r].theta;
      ranks[r] = make_rank (r, 3, &truths[r], 7 + r, r == 1 ? 38 : -1, r != 2);
    }
  ranks[3] = tw_trace_new ();
  offsets[3] = 0;
  /* And a "collective" whose seq is no number: not one. */
  guint lane = tw_trace_add_lane (ranks[0], 4000, TW_RECORDER_COMM_TID, NULL, TW_LANE_STREAM);
  tw_trace_add_slice (ranks[0], lane, T0 + 5, 10, "odd", "collective",
                      (tw_trace_arg[]) { { "seq", "x" }, { "kind", "send" }, { "peer", "9" } }, 3);
  g_autoptr (tw_trace) m = tw_trace_merge_ranks (ranks, 4, offsets, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (tw_trace_get_meta (m, "clock_used.1"), ==, "refined");
  g_assert_cmpstr (tw_trace_get_meta (m, "clock_used.2"), ==, "ping-pong");
  g_assert_null (tw_trace_get_meta (m, "clock_refined.2"));
  g_assert_null (tw_trace_get_meta (m, "clock_refined.3"));
  g_assert_nonnull (tw_trace_get_meta (m, "clock_refined.1"));
  const char *note = tw_trace_get_meta (m, "merge.note");
  g_assert_nonnull (note);
  /* Rank 2 sends nothing, so rank 0's receives from it go unmatched, and
   * rank 1's sends to it; seqs 38-40 are on ranks 0 only. */
  g_assert_nonnull (strstr (note, "message ends without the other end"));
  g_assert_nonnull (strstr (note, "40 collectives are not on every rank (seq 1, 2, 3, 4, 5, ...)"));
  g_assert_true (tw_trace_is_multi_rank (m, &nr));
  g_assert_cmpint (nr, ==, 4);
  g_assert_cmpstr (tw_trace_process (m, 3)->name, ==, "rank 3");
  for (int r = 0; r < 4; r++)
    tw_trace_free (ranks[r]);
}

/* ---- the same collective on every rank ---- */

static void
test_peers (void)
{
  /* Three ranks on one clock: seq 5 starts at 100, 130 and 250 µs and ends
   * at 400 on each. */
  tw_trace *ranks[3];
  const gint64 starts[3] = { 100000, 130000, 250000 };
  for (int r = 0; r < 3; r++)
    {
      tw_trace *t = ranks[r] = tw_trace_new ();
      guint main = tw_trace_add_lane (t, 1, 10, "main", TW_LANE_THREAD);
      guint comm = tw_trace_add_lane (t, 1, TW_RECORDER_COMM_TID, "communication", TW_LANE_STREAM);
      tw_trace_add_slice (t, main, 0, 90000, "linear (fc1)", "forward", NULL, 0);
      tw_trace_add_slice (t, comm, 10000, 1000, "allreduce bucket 1", "collective",
                          (tw_trace_arg[]) { { "kind", "allreduce" }, { "seq", "4" } }, 2);
      tw_trace_add_slice (t, comm, starts[r], 400000 - starts[r], "allreduce bucket 0", "collective",
                          (tw_trace_arg[]) { { "kind", "allreduce" }, { "seq", "5" } }, 2);
      tw_trace_add_slice (t, comm, 500000, 1000, "send to 1", "collective",
                          (tw_trace_arg[]) { { "kind", "send" }, { "seq", "0" }, { "peer", "1" },
                                             { "msg_seq", "1" } }, 4);
      tw_trace_sort (t);
    }
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_trace) m = tw_trace_merge_ranks (ranks, 3, NULL, NULL, &error);
  g_assert_no_error (error);
  int comm1 = find_lane (m, 1, "communication");
  g_autoptr (GArray) peers = tw_trace_collective_peers (m, (guint) comm1, 1);
  g_assert_nonnull (peers);
  g_assert_cmpuint (peers->len, ==, 3);
  const gint64 skew[3] = { -150000, -120000, 0 };
  for (guint i = 0; i < 3; i++)
    {
      const tw_coll_peer *p = &g_array_index (peers, tw_coll_peer, i);
      g_assert_cmpint (p->rank, ==, (int) i);
      g_assert_cmpint (tw_trace_lane (m, p->lane)->pid, ==, (int) i);
      g_assert_cmpstr (tw_trace_lane_slice (m, p->lane, p->slice_index)->name, ==, "allreduce bucket 0");
      g_assert_cmpint (p->start_ns, ==, starts[i]);
      g_assert_cmpint (p->end_ns, ==, 400000);
      g_assert_cmpint (p->skew_ns, ==, skew[i]);
      g_assert_cmpint (p->wait_ns, ==, -skew[i]);
    }
  /* Not collectives: an op, a message, indices out of range. */
  int main0 = find_lane (m, 0, "main");
  g_assert_null (tw_trace_collective_peers (m, (guint) main0, 0));
  g_assert_null (tw_trace_collective_peers (m, (guint) comm1, 2));
  g_assert_null (tw_trace_collective_peers (m, (guint) comm1, 99));
  g_assert_null (tw_trace_collective_peers (m, 999, 0));
  for (int r = 0; r < 3; r++)
    tw_trace_free (ranks[r]);
}

/* ---- per-rank figures ---- */

static void
test_rank_stats (void)
{
  const int n = 4;
  tw_trace *ranks[4];
  for (int r = 0; r < n; r++)
    ranks[r] = make_rank (r, n, &truths[r], 3 + r, -1, TRUE);
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_trace) m = tw_trace_merge_ranks (ranks, n, NULL, NULL, &error);
  g_assert_no_error (error);
  g_autoptr (GArray) rows = tw_trace_rank_stats (m, TW_STRAGGLER_DEFAULT_PCT);
  g_assert_cmpuint (rows->len, ==, n);
  for (int r = 0; r < n; r++)
    {
      const tw_rank_stats *s = &g_array_index (rows, tw_rank_stats, r);
      g_assert_cmpint (s->rank, ==, r);
      g_assert_cmpuint (s->n_steps, ==, N_STEPS);
      /* A step: compute (6 ms, 7.5 on rank 3) then 2 ms. */
      gint64 step = (gint64) (6000000 * truths[r].slow) + 2000000;
      g_assert_cmpint (llabs (s->step_median_ns - step), <, 2000);
      /* Per step: the all-reduce from compute's end - 1 ms to T + 8.5 ms,
       * overlapped 1 ms by compute; the messages 2 × 30 µs, exposed. */
      gint64 ar = 8500000 - ((gint64) (6000000 * truths[r].slow) - 1000000);
      gint64 comm = N_STEPS * (ar + 60000);
      g_assert_cmpint (llabs (s->comm_ns - comm), <, N_STEPS * 5000);
      g_assert_cmpint (llabs (s->exposed_ns - (comm - N_STEPS * 1000000)), <, N_STEPS * 5000);
      g_assert_cmpfloat (fabs (s->overlap_pct - 100.0 * N_STEPS * 1000000 / comm), <, 1);
      g_assert_cmpint (s->compute_ns, >, 0);
      g_assert_cmpint (s->idle_ns, >=, 0);
      /* Rank 3 takes 9.5 ms a step against 8: 18.75 % slower. */
      g_assert_cmpint (s->straggler, ==, r == 3);
      if (r == 3)
        g_assert_cmpfloat (fabs (s->slower_pct - 18.75), <, 0.1);
    }
  g_autoptr (GArray) lax = tw_trace_rank_stats (m, 20);
  g_assert_false (g_array_index (lax, tw_rank_stats, 3).straggler);
  g_autoptr (tw_trace) empty = tw_trace_new ();
  g_autoptr (GArray) none = tw_trace_rank_stats (empty, 10);
  g_assert_cmpuint (none->len, ==, 0);
  for (int r = 0; r < n; r++)
    tw_trace_free (ranks[r]);
}

/* Writes a merged trace of 4 synthetic ranks (rank 3 slow) for the CLI
 * test: test-ranks --write-merged PATH. */
static int
write_merged (const char *path)
{
  tw_trace *ranks[4];
  for (int r = 0; r < 4; r++)
    ranks[r] = make_rank (r, 4, &truths[r], 3 + r, -1, TRUE);
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_trace) m = tw_trace_merge_ranks (ranks, 4, NULL, NULL, &error);
  for (int r = 0; r < 4; r++)
    tw_trace_free (ranks[r]);
  if (!m || !tw_chrome_trace_save (m, path, &error))
    {
      g_printerr ("%s\n", error->message);
      return 1;
    }
  return 0;
}

/* The median step's path: the step tw_trace_critical_path walks, each
 * segment on a lane of its rank, an op's or a collective's naming the
 * slice it lies on. */
static void
test_critical_path_median (void)
{
  const int n = 4;
  tw_trace *ranks[4];
  for (int r = 0; r < n; r++)
    ranks[r] = make_rank (r, n, &truths[r], 3 + r, -1, TRUE);
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_trace) m = tw_trace_merge_ranks (ranks, n, NULL, NULL, &error);
  g_assert_no_error (error);
  tw_path_summary sum, again;
  g_autoptr (GArray) p = tw_trace_critical_path_median (m, &sum);
  g_assert_nonnull (p);
  g_assert_cmpuint (p->len, >, 0);
  g_autoptr (GArray) q = tw_trace_critical_path (m, sum.step, &again);
  g_assert_cmpuint (q->len, ==, p->len);
  g_assert_cmpint (again.span_ns, ==, sum.span_ns);
  guint n_comm = 0;
  for (guint i = 0; i < p->len; i++)
    {
      const tw_path_segment *g = &g_array_index (p, tw_path_segment, i);
      g_assert_cmpuint (g->lane, <, tw_trace_n_lanes (m));
      g_assert_cmpint (tw_trace_lane (m, g->lane)->pid, ==, g->rank);
      if (g->kind == TW_PATH_WAIT || g->kind == TW_PATH_IDLE)
        g_assert_cmpuint (g->slice_index, ==, G_MAXUINT);
      else
        {
          const tw_slice *s = tw_trace_lane_slice (m, g->lane, g->slice_index);
          g_assert_cmpstr (s->name, ==, g->name);
          g_assert_cmpint (g->start_ns, >=, s->start_ns);
        }
      n_comm += g->kind == TW_PATH_COMM;
    }
  g_assert_cmpuint (n_comm, >, 0);
  /* One rank: no path. */
  g_assert_null (tw_trace_critical_path_median (ranks[0], &sum));
  for (int r = 0; r < n; r++)
    tw_trace_free (ranks[r]);
}

static tw_trace *
torch_rank (const char *info)
{
  tw_trace *t = tw_trace_new ();
  if (info)
    tw_trace_set_meta (t, "distributedInfo", info);
  guint lane = tw_trace_add_lane (t, 4000, 4000, "python", TW_LANE_THREAD);
  tw_trace_add_slice (t, lane, 1000, 500, "ProfilerStep#1", "user_annotation", NULL, 0);
  tw_trace_sort (t);
  return t;
}

/* PyTorch traces merged by their distributedInfo.rank; refused when one
 * has none or two share a rank. */
static void
test_merge_pytorch (void)
{
  g_autoptr (tw_trace) a = torch_rank ("{\"backend\": \"nccl\", \"rank\": 1}");
  g_autoptr (tw_trace) b = torch_rank ("{\"rank\": 0, \"world_size\": 2}");
  g_autoptr (tw_trace) c = torch_rank (NULL);
  g_assert_true (tw_trace_is_pytorch_rank (a));
  g_assert_false (tw_trace_is_pytorch_rank (c));
  g_autoptr (GError) error = NULL;
  tw_trace *ab[] = { a, b };
  g_autoptr (tw_trace) m = tw_trace_merge_pytorch_ranks (ab, 2, &error);
  g_assert_no_error (error);
  int n_ranks = 0;
  g_assert_true (tw_trace_is_multi_rank (m, &n_ranks));
  g_assert_cmpint (n_ranks, ==, 2);
  g_assert_false (tw_trace_is_pytorch_rank (m));
  tw_trace *aa[] = { a, a };
  g_assert_null (tw_trace_merge_pytorch_ranks (aa, 2, &error));
  g_assert_error (error, TW_RANKS_ERROR, TW_RANKS_ERROR_ARG);
  g_clear_error (&error);
  tw_trace *ac[] = { a, c };
  g_assert_null (tw_trace_merge_pytorch_ranks (ac, 2, &error));
  g_assert_error (error, TW_RANKS_ERROR, TW_RANKS_ERROR_ARG);
}

/* A PyTorch GPU rank: a step, its matmul kernel (slow on rank 1) and the
 * NCCL all-reduce after it, on a stream lane. */
static tw_trace *
torch_gpu_rank (int rank, gint64 gemm_us)
{
  tw_trace *t = tw_trace_new ();
  g_autofree char *info = g_strdup_printf ("{\"rank\": %d, \"world_size\": 2}", rank);
  tw_trace_set_meta (t, "distributedInfo", info);
  guint cpu = tw_trace_add_lane (t, 4000 + rank, 4000, "python", TW_LANE_THREAD);
  guint gpu = tw_trace_add_lane (t, 0, 7, "stream 7", TW_LANE_STREAM);
  tw_trace_add_slice (t, cpu, 0, 1000000, "ProfilerStep#3", "user_annotation", NULL, 0);
  tw_trace_add_slice (t, cpu, 10000, 50000, "aten::mm", "cpu_op", NULL, 0);
  tw_trace_add_slice (t, gpu, 100000, gemm_us * 1000, "sm90_gemm", "kernel", NULL, 0);
  tw_trace_arg nccl[] = { { "Collective name", "allreduce" }, { "Seq", "1" },
                          { "In msg nelems", "1000" } };
  gint64 start = 100000 + gemm_us * 1000;
  tw_trace_add_slice (t, gpu, start, 900000 - start, "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                      "kernel", nccl, G_N_ELEMENTS (nccl));
  tw_trace_sort (t);
  return t;
}

/* The critical path of merged PyTorch ranks, from ProfilerStep#N and the
 * NCCL kernels' Seq: rank 0 waits in its all-reduce for rank 1, whose
 * slow kernel is on the path. */
static void
test_critical_path_pytorch (void)
{
  g_autoptr (tw_trace) a = torch_gpu_rank (0, 200);
  g_autoptr (tw_trace) b = torch_gpu_rank (1, 700);
  tw_trace *ab[] = { a, b };
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_trace) m = tw_trace_merge_pytorch_ranks (ab, 2, &error);
  g_assert_no_error (error);
  tw_path_summary sum;
  g_autoptr (GArray) p = tw_trace_critical_path_median (m, &sum);
  g_assert_nonnull (p);
  g_assert_cmpuint (sum.step, ==, 3);
  gboolean slow_kernel = FALSE, comm = FALSE;
  for (guint i = 0; i < p->len; i++)
    {
      const tw_path_segment *g = &g_array_index (p, tw_path_segment, i);
      if (g->kind == TW_PATH_COMPUTE && g->rank == 1 && strcmp (g->name, "sm90_gemm") == 0)
        slow_kernel = g->dur_ns == 700000;
      comm |= g->kind == TW_PATH_COMM;
    }
  g_assert_true (comm);
  g_assert_true (slow_kernel);
  g_assert_cmpint (sum.compute_ns, >=, 700000);
}

int
main (int argc, char **argv)
{
  if (argc == 3 && strcmp (argv[1], "--write-merged") == 0)
    return write_merged (argv[2]);
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/profiler/ranks/recorder-collectives", test_recorder_collectives);
  g_test_add_func ("/profiler/ranks/recorder-collectives-stream", test_recorder_collectives_stream);
  g_test_add_func ("/profiler/ranks/bytes", test_bytes_roundtrip);
  g_test_add_func ("/profiler/ranks/merge", test_merge);
  g_test_add_func ("/profiler/ranks/merge-malformed", test_merge_malformed);
  g_test_add_func ("/profiler/ranks/peers", test_peers);
  g_test_add_func ("/profiler/ranks/stats", test_rank_stats);
  g_test_add_func ("/profiler/ranks/critical-path-median", test_critical_path_median);
  g_test_add_func ("/profiler/ranks/merge-pytorch", test_merge_pytorch);
  g_test_add_func ("/profiler/ranks/critical-path-pytorch", test_critical_path_pytorch);
  return g_test_run ();
}
