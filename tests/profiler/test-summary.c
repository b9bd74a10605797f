/* test-summary.c — the profiler's summaries (profiler/summary.h): by name
 * against a brute-force sum on random nested traces, per layer on real
 * recordings (eager and compiled), per rank on a hand-made trace, steps in
 * ours and PyTorch's traces, eager against compiled, the measured peak. */
#include "engine/model.h"
#include "engine/rng.h"
#include "engine/train.h"
#include "profiler/chrome-read.h"
#include "profiler/recorder.h"
#include "profiler/summary.h"

#include <math.h>
#include <string.h>

/* ---- by name against brute force -------------------------------------- */

/* Adds to lane slices nested up to depth levels inside [t0, t1): a random
 * number of children with random gaps, some zero-length, some (one in 8)
 * overlapping their previous sibling without nesting in it. */
static void
add_nested (tw_trace *t, GRand *rng, guint lane, gint64 t0, gint64 t1, int level, const char *const *names,
            guint n_names)
{
  gint64 at = t0;
  int kids = g_rand_int_range (rng, 0, level == 0 ? 40 : 5);
  for (int i = 0; i < kids && at < t1; i++)
    {
      gint64 gap = g_rand_int_range (rng, 0, 50);
      gint64 start = at + gap;
      if (start >= t1)
        break;
      gint64 len = g_rand_int_range (rng, 0, 8) == 0 ? 0 : g_rand_int_range (rng, 1, (int) MIN (t1 - start, 400) + 1);
      len = MIN (len, t1 - start);
      char flops[32];
      g_snprintf (flops, sizeof flops, "%d", g_rand_int_range (rng, 0, 100000));
      /* Some kernels say their phase in an argument (it wins over the
       * category); the others' category is "kernel" (no phase) or "forward". */
      tw_trace_arg args[] = { { "flops", flops }, { "bytes", "4096" }, { "phase", "backward" } };
      tw_trace_add_slice (t, lane, start, len, names[g_rand_int_range (rng, 0, (int) n_names)],
                          level % 2 ? "kernel" : "forward", args, g_rand_int_range (rng, 0, 4));
      if (level < 3 && len > 2)
        add_nested (t, rng, lane, start, start + len, level + 1, names, n_names);
      at = start + len;
      if (g_rand_int_range (rng, 0, 8) == 0 && len > 2)
        at -= len / 2;          /* the next sibling overlaps this one */
    }
}

typedef struct
{
  guint64 count;
  gint64 total, self;
  double flops, bytes;
  const char *category;
} brute_row;

/* The phase a row stands for, computed apart from summary.c: the "phase"
 * argument if it names one, else the category if it does, else none. */
static const char *
brute_phase (const tw_slice *s)
{
  const char *known[] = { "forward", "backward", "update" };
  const char *arg = NULL;
  for (guint i = 0; i < s->n_args; i++)
    if (strcmp (s->args[i].key, "phase") == 0)
      arg = s->args[i].value;
  for (guint i = 0; i < G_N_ELEMENTS (known); i++)
    if (arg && strcmp (arg, known[i]) == 0)
      return known[i];
  for (guint i = 0; i < G_N_ELEMENTS (known); i++)
    if (s->category && strcmp (s->category, known[i]) == 0)
      return known[i];
  return NULL;
}

static char *
brute_key (const char *name, const char *phase)
{
  return g_strdup_printf ("%s|%s", name, phase ? phase : "-");
}

static gboolean
brute_clip (const tw_slice *s, gint64 a, gint64 b, gboolean all, gint64 *in)
{
  gint64 e = s->start_ns + s->dur_ns;
  if (all)
    {
      *in = s->dur_ns;
      return TRUE;
    }
  if (s->dur_ns == 0)
    {
      *in = 0;
      return s->start_ns >= a && s->start_ns < b;
    }
  gint64 lo = MAX (s->start_ns, a), hi = MIN (e, b);
  *in = MAX (hi - lo, 0);
  return hi > lo;
}

/* O(n²): each slice's children found by scanning the whole lane (the child's
 * parent: the latest earlier slice one depth up, which must contain it). */
static GHashTable *
brute_by_name (const tw_trace *t, gint64 a, gint64 b, const guint *lanes, guint n_lanes)
{
  gboolean all = a >= b;
  GHashTable *rows = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  for (guint li = 0; li < n_lanes; li++)
    {
      guint l = lanes[li];
      guint n = tw_trace_lane_n_slices (t, l);
      for (guint i = 0; i < n; i++)
        {
          const tw_slice *s = tw_trace_lane_slice (t, l, i);
          gint64 in;
          if (!brute_clip (s, a, b, all, &in))
            continue;
          gint64 child = 0;
          for (guint j = i + 1; j < n; j++)
            {
              const tw_slice *c = tw_trace_lane_slice (t, l, j);
              if (c->depth != s->depth + 1)
                continue;
              int parent = -1;
              for (int k = (int) j - 1; k >= 0; k--)
                if (tw_trace_lane_slice (t, l, k)->depth == s->depth)
                  {
                    parent = k;
                    break;
                  }
              if (parent != (int) i)
                continue;
              g_assert_cmpint (c->start_ns, >=, s->start_ns);
              g_assert_cmpint (c->start_ns + c->dur_ns, <=, s->start_ns + s->dur_ns);
              gint64 cin;
              if (brute_clip (c, a, b, all, &cin))
                child += cin;
            }
          char *key = brute_key (s->name, brute_phase (s));
          brute_row *r = g_hash_table_lookup (rows, key);
          if (!r)
            {
              r = g_new0 (brute_row, 1);
              r->category = s->category;
              g_hash_table_insert (rows, key, r);
            }
          else
            g_free (key);
          r->count++;
          r->total += in;
          r->self += MAX (in - child, 0);
          double f = s->dur_ns ? (double) in / s->dur_ns : 1;
          const char *fl = tw_slice_arg (s, "flops"), *by = tw_slice_arg (s, "bytes");
          r->flops += (fl ? g_ascii_strtod (fl, NULL) : 0) * f;
          r->bytes += (by ? g_ascii_strtod (by, NULL) : 0) * f;
        }
    }
  return rows;
}

static void
check_against_brute (const tw_trace *t, gint64 a, gint64 b, const guint *lanes, guint n_lanes)
{
  g_autoptr (GArray) rows = tw_summary_by_name (t, a, b, lanes, n_lanes);
  g_autofree guint *every = NULL;
  if (!lanes)
    {
      n_lanes = tw_trace_n_lanes (t);
      every = g_new (guint, n_lanes);
      for (guint i = 0; i < n_lanes; i++)
        every[i] = i;
      lanes = every;
    }
  g_autoptr (GHashTable) ref = brute_by_name (t, a, b, lanes, n_lanes);
  g_assert_cmpuint (rows->len, ==, g_hash_table_size (ref));
  for (guint i = 0; i < rows->len; i++)
    {
      const tw_summary_row *r = &g_array_index (rows, tw_summary_row, i);
      g_autofree char *key = brute_key (r->name, r->phase);
      const brute_row *e = g_hash_table_lookup (ref, key);
      g_assert_nonnull (e);
      g_assert_cmpuint (r->count, ==, e->count);
      g_assert_cmpint (r->total_ns, ==, e->total);
      g_assert_cmpint (r->self_ns, ==, e->self);
      g_assert_cmpstr (r->category, ==, e->category);
      /* Sums of the same products in another order: float64 rounding. */
      g_assert_cmpfloat_with_epsilon (r->flops, e->flops, 1e-9 * MAX (1, e->flops));
      g_assert_cmpfloat_with_epsilon (r->bytes, e->bytes, 1e-9 * MAX (1, e->bytes));
      double gf = tw_summary_row_gflops (r);
      g_assert_cmpfloat_with_epsilon (gf, r->total_ns > 0 ? r->flops / r->total_ns : 0, 1e-12);
      if (i > 0)
        {
          const tw_summary_row *p = &g_array_index (rows, tw_summary_row, i - 1);
          int c = strcmp (p->name, r->name);
          g_assert_true (p->total_ns > r->total_ns
                         || (p->total_ns == r->total_ns
                             && (c < 0 || (c == 0 && g_strcmp0 (p->phase, r->phase) < 0))));
        }
    }
}

static void
test_by_name_brute (void)
{
  const char *names[] = { "matmul", "relu", "conv", "copy", "softmax", "add", "sum" };
  for (guint seed = 1; seed <= 6; seed++)
    {
      g_autoptr (GRand) rng = g_rand_new_with_seed (seed);
      g_autoptr (tw_trace) t = tw_trace_new ();
      for (int p = 1; p <= 2; p++)
        for (int th = 0; th < 2; th++)
          {
            guint lane = tw_trace_add_lane (t, p, 100 + th, NULL, TW_LANE_THREAD);
            add_nested (t, rng, lane, 1000 * th, 20000, 0, names, G_N_ELEMENTS (names));
          }
      tw_trace_sort (t);
      gint64 t0 = tw_trace_start_ns (t), dur = tw_trace_duration_ns (t);
      g_assert_cmpint (dur, >, 0);
      check_against_brute (t, 0, 0, NULL, 0);
      for (int i = 0; i < 25; i++)
        {
          gint64 a = t0 + g_rand_int_range (rng, -100, (int) dur + 100);
          gint64 b = a + g_rand_int_range (rng, 1, (int) dur / 2 + 2);
          check_against_brute (t, a, b, NULL, 0);
          guint some[] = { 2, 1 };
          check_against_brute (t, a, b, some, G_N_ELEMENTS (some));
        }
      /* Entirely outside: no rows. */
      g_autoptr (GArray) none = tw_summary_by_name (t, t0 + dur + 10, t0 + dur + 20, NULL, 0);
      g_assert_cmpuint (none->len, ==, 0);
    }
}

/* A hand-checked case: a parent starting before the range, a child cut by
 * its start, flops scaled by the part inside. */
static void
test_by_name_cut (void)
{
  g_autoptr (tw_trace) t = tw_trace_new ();
  guint lane = tw_trace_add_lane (t, 1, 1, "main", TW_LANE_THREAD);
  tw_trace_add_slice (t, lane, 0, 1000, "outer", "forward", (tw_trace_arg[]) { { "flops", "1000" } }, 1);
  tw_trace_add_slice (t, lane, 100, 300, "inner", "kernel", (tw_trace_arg[]) { { "flops", "600" } }, 1);
  tw_trace_add_slice (t, lane, 600, 100, "inner", "kernel", (tw_trace_arg[]) { { "flops", "600" } }, 1);
  tw_trace_add_slice (t, lane, 2000, 50, "later", "forward", NULL, 0);
  tw_trace_sort (t);
  g_autoptr (GArray) rows = tw_summary_by_name (t, 300, 800, NULL, 0);
  g_assert_cmpuint (rows->len, ==, 2);
  const tw_summary_row *outer = &g_array_index (rows, tw_summary_row, 0);
  const tw_summary_row *inner = &g_array_index (rows, tw_summary_row, 1);
  g_assert_cmpstr (outer->name, ==, "outer");
  g_assert_cmpint (outer->total_ns, ==, 500);
  g_assert_cmpint (outer->self_ns, ==, 500 - 100 - 100);
  g_assert_cmpfloat_with_epsilon (outer->flops, 500, 1e-9);
  g_assert_cmpstr (inner->name, ==, "inner");
  g_assert_cmpuint (inner->count, ==, 2);
  g_assert_cmpint (inner->total_ns, ==, 200);
  g_assert_cmpint (inner->self_ns, ==, 200);
  g_assert_cmpfloat_with_epsilon (inner->flops, 600.0 / 3 + 600, 1e-9);
  g_assert_cmpfloat_with_epsilon (tw_summary_row_gflops (inner), 800.0 / 200, 1e-12);
}

/* 1,000,000 slices (4 lanes, three levels): the whole range and a zoomed
 * one, timed for the log (no timed assertion: the machine is shared). */
static void
test_by_name_million (void)
{
  g_autoptr (tw_trace) t = tw_trace_new ();
  const char *names[16];
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      char name[32];
      g_snprintf (name, sizeof name, "op %u", i);
      names[i] = tw_trace_intern (t, name);
    }
  const char *cat = tw_trace_intern (t, "forward");
  guint64 n = 0;
  for (int l = 0; l < 4; l++)
    {
      guint lane = tw_trace_add_lane (t, 1, l + 1, NULL, TW_LANE_THREAD);
      for (gint64 i = 0; n < 1000000 && i < 250000 / 5; i++)
        {
          gint64 t0 = i * 1000;
          tw_trace_add_slice_interned (t, lane, t0, 900, names[i % 16], cat, NULL, 0);
          for (int k = 0; k < 2; k++)
            {
              gint64 c0 = t0 + 10 + k * 440;
              tw_trace_add_slice_interned (t, lane, c0, 400, names[(i + k + 1) % 16], cat, NULL, 0);
              tw_trace_add_slice_interned (t, lane, c0 + 5, 100, names[(i + k + 2) % 16], cat, NULL, 0);
            }
          n += 5;
        }
    }
  tw_trace_sort (t);
  g_assert_cmpuint (tw_trace_n_slices (t), ==, 1000000);
  gint64 t0 = g_get_monotonic_time ();
  g_autoptr (GArray) rows = tw_summary_by_name (t, 0, 0, NULL, 0);
  gint64 t1 = g_get_monotonic_time ();
  g_autoptr (GArray) zoom = tw_summary_by_name (t, 20000000, 20100000, NULL, 0);
  gint64 t2 = g_get_monotonic_time ();
  g_test_message ("by name, 1,000,000 slices: whole range %.1f ms, 0.2 %% of it %.1f ms",
                  (t1 - t0) / 1e3, (t2 - t1) / 1e3);
  g_assert_cmpuint (rows->len, ==, 16);
  guint64 count = 0;
  gint64 self = 0, total = 0;
  for (guint i = 0; i < rows->len; i++)
    {
      const tw_summary_row *r = &g_array_index (rows, tw_summary_row, i);
      count += r->count;
      self += r->self_ns;
      total += r->total_ns;
    }
  g_assert_cmpuint (count, ==, 1000000);
  /* Per group: 900 + 2 × (400 + 100); self: the top level's 900. */
  g_assert_cmpint (total, ==, 200000 * (gint64) 1900);
  g_assert_cmpint (self, ==, 200000 * (gint64) 900);
  /* 100 groups in the zoomed range on each lane. */
  guint64 zc = 0;
  for (guint i = 0; i < zoom->len; i++)
    zc += g_array_index (zoom, tw_summary_row, i).count;
  g_assert_cmpuint (zc, ==, 4 * 100 * 5);
}

/* ---- recordings -------------------------------------------------------- */

static tw_model *
load_model (const char *file)
{
  g_autofree char *path = g_build_filename (TEST_ASSETS_DIR, "models", file, NULL);
  g_autoptr (GError) error = NULL;
  tw_model *m = tw_model_load (path, &error);
  g_assert_no_error (error);
  g_assert_cmpint (tw_graph_infer (m->graph), ==, 0);
  return m;
}

/* The MNIST MLP (784-128-64-10 with ReLUs: compiled mode fuses linear and
 * relu, so slices name several nodes): 3 recorded steps at batch 64 after
 * one warm-up step. */
#define MODEL "mlp.json"
#define BATCH 64

static tw_trace *
record_mlp (tw_exec_mode mode)
{
  g_autoptr (tw_model) m = load_model (MODEL);
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_trainer) tr = tw_trainer_new (m, &error);
  g_assert_no_error (error);
  tw_trainer_set_mode (tr, mode);
  g_autoptr (tw_bus) bus = tw_bus_new ();
  tw_trainer_set_bus (tr, bus);
  g_autoptr (tw_tensor) x = tw_tensor_new (TW_F32, 4, (int64_t[]) { BATCH, 1, 28, 28 });
  tw_rng_fill_uniform (tw_tensor_f32 (x), tw_tensor_numel (x), 3, 1, 0.0f, 1.0f);
  g_autoptr (tw_tensor) y = tw_tensor_new (TW_I64, 1, (int64_t[]) { BATCH });
  for (int64_t i = 0; i < BATCH; i++)
    tw_tensor_i64 (y)[i] = i % 10;
  tw_trainer_step (tr, x, y, NULL, &error);
  g_assert_no_error (error);
  g_autoptr (tw_recorder) rec = tw_recorder_new (0);
  tw_recorder_start (rec, bus);
  for (int i = 0; i < 3; i++)
    {
      tw_trainer_step (tr, x, y, NULL, &error);
      g_assert_no_error (error);
    }
  tw_recorder_stop (rec);
  return tw_recorder_take_trace (rec);
}

/* The graph's nodes that run an op (every one but the inputs). */
static GPtrArray *
op_nodes (void)
{
  g_autoptr (tw_model) m = load_model (MODEL);
  GPtrArray *ids = g_ptr_array_new_with_free_func (g_free);
  for (int i = 0; i < tw_graph_n_nodes (m->graph); i++)
    if (strcmp (tw_graph_node (m->graph, i)->op_name, "input") != 0)
      g_ptr_array_add (ids, g_strdup (tw_graph_node (m->graph, i)->id));
  return ids;
}

/* Each node's expected time: every slice with nodes and no ancestor with
 * them (found by containment, scanning back), split evenly in float64. */
static GHashTable *
brute_layers (const tw_trace *t)
{
  GHashTable *ref = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  for (guint l = 0; l < tw_trace_n_lanes (t); l++)
    for (guint i = 0; i < tw_trace_lane_n_slices (t, l); i++)
      {
        const tw_slice *s = tw_trace_lane_slice (t, l, i);
        const char *nodes = tw_slice_arg (s, "nodes");
        if (!nodes || !*nodes)
          continue;
        gboolean nested = FALSE;
        for (guint k = 0; k < i && !nested; k++)
          {
            const tw_slice *p = tw_trace_lane_slice (t, l, k);
            const char *pn = tw_slice_arg (p, "nodes");
            nested = pn && *pn && p->depth < s->depth && p->start_ns <= s->start_ns
                     && p->start_ns + p->dur_ns >= s->start_ns + s->dur_ns;
          }
        if (nested)
          continue;
        g_auto (GStrv) parts = g_strsplit (nodes, ",", -1);
        guint n = g_strv_length (parts);
        for (guint k = 0; k < n; k++)
          {
            double *v = g_hash_table_lookup (ref, parts[k]);
            if (!v)
              {
                v = g_new0 (double, 1);
                g_hash_table_insert (ref, g_strdup (parts[k]), v);
              }
            *v += (double) s->dur_ns / n;
          }
      }
  return ref;
}

static void
check_layers (tw_exec_mode mode)
{
  g_autoptr (tw_trace) t = record_mlp (mode);
  g_autoptr (GArray) rows = tw_summary_layers (t, 0, 0);
  g_autoptr (GHashTable) ref = brute_layers (t);
  g_autoptr (GPtrArray) ids = op_nodes ();
  double share = 0;
  gboolean any_fused = FALSE;
  guint n_missing = 0;
  for (guint i = 0; i < ids->len; i++)
    {
      const tw_layer_row *found = NULL;
      for (guint k = 0; k < rows->len; k++)
        if (strcmp (g_array_index (rows, tw_layer_row, k).node, ids->pdata[i]) == 0)
          found = &g_array_index (rows, tw_layer_row, k);
      /* Compiled mode runs nothing for the flatten (a reshape): no slice
       * names it (the reference agrees), only that one node. */
      if (!found && mode == TW_MODE_COMPILED && !g_hash_table_contains (ref, ids->pdata[i])
          && n_missing++ == 0)
        continue;
      if (!found)
        g_error ("node %s has no layer row", (char *) ids->pdata[i]);
      g_assert_cmpint (found->forward_ns, >, 0);
    }
  guint64 n_steps = tw_summary_n_steps (t, NULL);
  g_assert_cmpuint (n_steps, ==, 3);
  g_assert_cmpuint (rows->len, ==, g_hash_table_size (ref));
  for (guint k = 0; k < rows->len; k++)
    {
      const tw_layer_row *r = &g_array_index (rows, tw_layer_row, k);
      double *e = g_hash_table_lookup (ref, r->node);
      g_assert_nonnull (e);
      /* The integer split rounds each slice's part by under 1 ns. */
      g_assert_cmpfloat (fabs ((double) r->total_ns - *e), <=, (double) r->count);
      g_assert_cmpint (r->total_ns, ==, r->forward_ns + r->backward_ns + r->update_ns + r->other_ns);
      g_assert_cmpuint (r->n_steps, ==, 3);
      share += r->share;
      if (k > 0)
        g_assert_cmpint (g_array_index (rows, tw_layer_row, k - 1).total_ns, >=, r->total_ns);
    }
  g_assert_cmpfloat_with_epsilon (share, 1.0, 1e-9);
  /* A fused slice's time is split: its nodes' parts add up to it. */
  for (guint l = 0; l < tw_trace_n_lanes (t); l++)
    for (guint i = 0; i < tw_trace_lane_n_slices (t, l); i++)
      {
        const tw_slice *s = tw_trace_lane_slice (t, l, i);
        const char *nodes = tw_slice_arg (s, "nodes");
        if (s->depth == 0 && nodes && strchr (nodes, ','))
          any_fused = TRUE;
      }
  if (mode == TW_MODE_COMPILED)
    g_assert_true (any_fused);
  /* One step: each node once. */
  gint64 s0, s1;
  guint64 first;
  tw_summary_n_steps (t, &first);
  g_assert_true (tw_summary_find_step (t, first + 1, &s0, &s1));
  g_autoptr (GArray) one = tw_summary_layers (t, s0, s1);
  for (guint k = 0; k < one->len; k++)
    g_assert_cmpuint (g_array_index (one, tw_layer_row, k).n_steps, ==, 1);
}

static void
test_layers_eager (void)
{
  check_layers (TW_MODE_EAGER);
}

static void
test_layers_compiled (void)
{
  check_layers (TW_MODE_COMPILED);
}

/* ---- ranks ------------------------------------------------------------ */

static void
test_ranks (void)
{
  g_autoptr (tw_trace) t = tw_trace_new ();
  /* Rank 20 first: rows come in pid order all the same. */
  tw_trace_add_process (t, 20, "rank 1");
  tw_trace_add_process (t, 10, "rank 0");
  guint a = tw_trace_add_lane (t, 10, 1, "main", TW_LANE_THREAD);
  guint b = tw_trace_add_lane (t, 10, 7, "stream 7", TW_LANE_STREAM);
  guint st = tw_trace_add_lane (t, 10, 0, "steps", TW_LANE_THREAD);
  tw_trace_add_slice (t, a, 0, 100, "matmul", "forward", NULL, 0);
  tw_trace_add_slice (t, a, 150, 100, "matmul", "backward", NULL, 0);
  tw_trace_add_slice (t, b, 80, 120, "ncclKernel_AllReduce_RING_LL_Sum_float", "kernel", NULL, 0);
  tw_trace_add_slice (t, st, 0, 300, "step 0", "step", NULL, 0);
  tw_trace_add_slice (t, st, 0, 300, "epoch 0", "epoch", NULL, 0);
  guint c = tw_trace_add_lane (t, 20, 2, "main", TW_LANE_THREAD);
  tw_trace_add_slice (t, c, 1000, 100, "conv", "forward", NULL, 0);
  tw_trace_add_slice (t, c, 1010, 40, "im2col", "kernel", NULL, 0);
  tw_trace_add_slice (t, c, 1100, 100, "batch", "data", NULL, 0);
  tw_trace_add_slice (t, c, 1200, 100, "send", "copy", NULL, 0);
  tw_trace_add_instant (t, c, 1400, "grad ready w", "grad_ready");
  tw_trace_sort (t);
  g_autoptr (GArray) rows = tw_summary_ranks (t);
  g_assert_cmpuint (rows->len, ==, 2);
  const tw_rank_row *r0 = &g_array_index (rows, tw_rank_row, 0);
  const tw_rank_row *r1 = &g_array_index (rows, tw_rank_row, 1);
  g_assert_cmpint (r0->pid, ==, 10);
  g_assert_cmpstr (r0->name, ==, "rank 0");
  g_assert_cmpint (r0->span_ns, ==, 300);
  g_assert_cmpint (r0->compute_ns, ==, 200);
  g_assert_cmpint (r0->comm_ns, ==, 120);
  g_assert_cmpint (r0->overlap_ns, ==, 20 + 50);
  g_assert_cmpint (r0->idle_ns, ==, 300 - (200 + 120 - 70));
  g_assert_cmpfloat_with_epsilon (r0->overlap_pct, 100.0 * 70 / 120, 1e-9);
  g_assert_cmpint (r1->pid, ==, 20);
  g_assert_cmpint (r1->span_ns, ==, 400);
  g_assert_cmpint (r1->compute_ns, ==, 100);
  g_assert_cmpint (r1->comm_ns, ==, 100);
  g_assert_cmpint (r1->overlap_ns, ==, 0);
  g_assert_cmpint (r1->idle_ns, ==, 200);
  g_assert_cmpfloat (r1->overlap_pct, ==, 0);
}

/* ---- steps ------------------------------------------------------------ */

static void
test_steps_ours (void)
{
  g_autoptr (tw_trace) t = record_mlp (TW_MODE_EAGER);
  guint64 first = 99;
  g_assert_cmpuint (tw_summary_n_steps (t, &first), ==, 3);
  /* The steps lane's slices, independently. */
  int lane = tw_trace_find_lane (t, tw_trace_process (t, 0)->pid, 0);
  g_assert_cmpint (lane, >=, 0);
  g_assert_cmpuint (tw_trace_lane_n_slices (t, lane), ==, 3);
  for (guint i = 0; i < 3; i++)
    {
      const tw_slice *s = tw_trace_lane_slice (t, lane, i);
      g_autofree char *name = g_strdup_printf ("step %" G_GUINT64_FORMAT, first + i);
      g_assert_cmpstr (s->name, ==, name);
      gint64 a = 0, b = 0;
      g_assert_true (tw_summary_find_step (t, first + i, &a, &b));
      g_assert_cmpint (a, ==, s->start_ns);
      g_assert_cmpint (b, ==, s->start_ns + s->dur_ns);
    }
  g_assert_false (tw_summary_find_step (t, first + 3, NULL, NULL));
  g_autoptr (GArray) all = tw_summary_steps (t);
  g_assert_cmpuint (all->len, ==, 3);
  for (guint i = 0; i < 3; i++)
    {
      const tw_step_span *sp = &g_array_index (all, tw_step_span, i);
      const tw_slice *s = tw_trace_lane_slice (t, lane, i);
      g_assert_cmpuint (sp->n, ==, first + i);
      g_assert_cmpint (sp->start_ns, ==, s->start_ns);
      g_assert_cmpint (sp->end_ns, ==, s->start_ns + s->dur_ns);
    }
  if (first > 0)
    g_assert_false (tw_summary_find_step (t, first - 1, NULL, NULL));
}

static void
test_steps_torch (void)
{
  g_autofree char *path = g_build_filename (TEST_DATA_DIR, "torch-trace.json", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_trace) t = tw_trace_load_chrome (path, &error);
  g_assert_no_error (error);
  guint64 first = 0;
  g_assert_cmpuint (tw_summary_n_steps (t, &first), ==, 1);
  g_assert_cmpuint (first, ==, 2);
  gint64 a, b;
  g_assert_true (tw_summary_find_step (t, 2, &a, &b));
  g_assert_false (tw_summary_find_step (t, 1, NULL, NULL));
  /* "ts": 1700000000100.000, "dur": 500.250 (µs) in the file. */
  g_assert_cmpint (b - a, ==, 500250);
  const tw_slice *s = NULL;
  for (guint l = 0; l < tw_trace_n_lanes (t) && !s; l++)
    for (guint i = 0; i < tw_trace_lane_n_slices (t, l); i++)
      if (strcmp (tw_trace_lane_slice (t, l, i)->name, "ProfilerStep#2") == 0)
        s = tw_trace_lane_slice (t, l, i);
  g_assert_nonnull (s);
  g_assert_cmpint (a, ==, s->start_ns);
  /* Inside the step on the CPU lane: aten::linear, aten::addmm, two
   * cudaLaunchKernel, aten::relu, cudaMemcpyAsync; the step itself. */
  g_autoptr (GArray) rows = tw_summary_by_name (t, a, b, NULL, 0);
  guint64 launches = 0;
  for (guint i = 0; i < rows->len; i++)
    if (strcmp (g_array_index (rows, tw_summary_row, i).name, "cudaLaunchKernel") == 0)
      launches = g_array_index (rows, tw_summary_row, i).count;
  g_assert_cmpuint (launches, ==, 2);
}

/* The real PyTorch trace (tests/profiler/data/make-torch-trace.py): three
 * profiled steps, each step's range holding exactly the slices inside it. */
static void
test_steps_torch_real (void)
{
  g_autofree char *path = g_build_filename (TEST_DATA_DIR, "torch-real-trace.json", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_trace) t = tw_trace_load_chrome (path, &error);
  g_assert_no_error (error);
  guint64 first = 0;
  g_assert_cmpuint (tw_summary_n_steps (t, &first), ==, 3);
  g_assert_cmpuint (first, ==, 1);
  for (guint64 n = 1; n <= 3; n++)
    {
      gint64 a, b;
      g_assert_true (tw_summary_find_step (t, n, &a, &b));
      guint64 inside = 0;
      for (guint l = 0; l < tw_trace_n_lanes (t); l++)
        for (guint i = 0; i < tw_trace_lane_n_slices (t, l); i++)
          {
            const tw_slice *s = tw_trace_lane_slice (t, l, i);
            inside += s->start_ns < b && s->start_ns + s->dur_ns > a;
          }
      g_autoptr (GArray) rows = tw_summary_by_name (t, a, b, NULL, 0);
      guint64 counted = 0;
      for (guint i = 0; i < rows->len; i++)
        counted += g_array_index (rows, tw_summary_row, i).count;
      g_assert_cmpuint (counted, ==, inside);
      g_assert_cmpuint (counted, >, 100);
    }
}

/* ---- compare ---------------------------------------------------------- */

static void
test_compare (void)
{
  g_autoptr (tw_trace) a = record_mlp (TW_MODE_EAGER);
  g_autoptr (tw_trace) b = record_mlp (TW_MODE_COMPILED);
  g_autoptr (GArray) rows = tw_summary_compare (a, b);
  g_autoptr (GPtrArray) ids = op_nodes ();
  g_autoptr (GHashTable) in_b = brute_layers (b);
  /* Every op node (eager runs each), then the step row.  Compiled mode
   * runs no instruction for a node that only reshapes (the MLP's flatten):
   * 0 there, and the compiled trace indeed names it nowhere. */
  g_assert_cmpuint (rows->len, ==, ids->len + 1);
  guint n_both = 0;
  for (guint i = 0; i + 1 < rows->len; i++)
    {
      const tw_compare_row *r = &g_array_index (rows, tw_compare_row, i);
      g_assert_true (g_ptr_array_find_with_equal_func (ids, r->node, g_str_equal, NULL));
      g_assert_cmpfloat (r->a_ns, >, 0);
      if (g_hash_table_contains (in_b, r->node))
        {
          g_assert_cmpfloat (r->b_ns, >, 0);
          n_both++;
        }
      else
        g_assert_cmpfloat (r->b_ns, ==, 0);
      /* relu1 runs only inside fc1's fused slice. */
      if (strcmp (r->node, "relu1") == 0)
        g_assert_true (r->fused_b);
      g_assert_cmpfloat_with_epsilon (r->diff_ns, r->b_ns - r->a_ns, 1e-6);
      if (i > 0)
        g_assert_cmpfloat (fabs (g_array_index (rows, tw_compare_row, i - 1).diff_ns), >=, fabs (r->diff_ns));
    }
  g_assert_cmpuint (n_both, >=, ids->len - 1);
  const tw_compare_row *step = &g_array_index (rows, tw_compare_row, rows->len - 1);
  g_assert_cmpstr (step->node, ==, "(step)");
  /* Both recorded steps 1-3 (after warm-up step 0): the mean of each. */
  guint64 fa, fb;
  g_assert_cmpuint (tw_summary_n_steps (a, &fa), ==, 3);
  g_assert_cmpuint (tw_summary_n_steps (b, &fb), ==, 3);
  g_assert_cmpuint (fa, ==, fb);
  double ma = 0, mb = 0;
  for (guint64 n = fa; n < fa + 3; n++)
    {
      gint64 s0, s1;
      g_assert_true (tw_summary_find_step (a, n, &s0, &s1));
      ma += (s1 - s0) / 3.0;
      g_assert_true (tw_summary_find_step (b, n, &s0, &s1));
      mb += (s1 - s0) / 3.0;
    }
  g_assert_cmpfloat (step->a_ns, >, 0);
  g_assert_cmpfloat_with_epsilon (step->a_ns, ma, 1e-6 * ma);
  g_assert_cmpfloat_with_epsilon (step->b_ns, mb, 1e-6 * mb);
  /* The layers fit in their steps. */
  double sum_a = 0;
  for (guint i = 0; i + 1 < rows->len; i++)
    sum_a += g_array_index (rows, tw_compare_row, i).a_ns;
  g_assert_cmpfloat (sum_a, <=, step->a_ns);
  g_assert_cmpfloat (sum_a, >, 0.5 * step->a_ns);
}

/* ---- peak ------------------------------------------------------------- */

static void
test_peak (void)
{
  gint64 t0 = g_get_monotonic_time ();
  double p = tw_machine_peak_gflops (1);
  gint64 t1 = g_get_monotonic_time ();
  double q = tw_machine_peak_gflops (1);
  gint64 t2 = g_get_monotonic_time ();
  double all = tw_machine_peak_gflops (0);
  g_test_message ("peak: 1 thread %.1f GFLOP/s (measured in %.0f ms), default threads %.1f GFLOP/s", p,
                  (t1 - t0) / 1e3, all);
  g_assert_true (isfinite (p) && p > 0);
  g_assert_true (isfinite (all) && all > 0);
  g_assert_cmpfloat (q, ==, p);
  /* Cached: a hash lookup, not another product. */
  g_assert_cmpint (t2 - t1, <, 5000);
}

/* One node's forward and backward slices share a name ("linear (fc1)"):
 * 572 of each (an epoch of 572 steps), the backward's two kernels nested
 * in it with their phase as an argument, an update per step.  Each phase is
 * its own row: 572, not 1,144, over the whole trace and over a range. */
static void
test_by_name_phases (void)
{
  g_autoptr (tw_trace) t = tw_trace_new ();
  guint lane = tw_trace_add_lane (t, 1, 1, "train", TW_LANE_THREAD);
  const int steps = 572;
  const gint64 fwd = 300, bwd = 700, upd = 50, kern = 200, step_len = 2000;
  tw_trace_arg fa[] = { { "nodes", "fc1" }, { "phase", "forward" } };
  tw_trace_arg ba[] = { { "nodes", "fc1" }, { "phase", "backward" } };
  tw_trace_arg ka[] = { { "phase", "backward" } };
  tw_trace_arg ua[] = { { "nodes", "fc1" } };
  for (int i = 0; i < steps; i++)
    {
      gint64 t0 = i * step_len;
      g_autofree char *step = g_strdup_printf ("step %d", i + 1);
      tw_trace_add_slice (t, lane, t0, step_len - 10, step, "step", NULL, 0);
      tw_trace_add_slice (t, lane, t0 + 10, fwd, "linear (fc1)", "forward", fa, 2);
      tw_trace_add_slice (t, lane, t0 + 400, bwd, "linear (fc1)", "backward", ba, 2);
      tw_trace_add_slice (t, lane, t0 + 450, kern, "matmul", "kernel", ka, 1);
      tw_trace_add_slice (t, lane, t0 + 700, kern, "matmul", "kernel", ka, 1);
      /* The update: its phase from its category alone. */
      tw_trace_add_slice (t, lane, t0 + 1200, upd, "linear (fc1)", "update", ua, 1);
    }
  tw_trace_sort (t);
  g_autoptr (GArray) rows = tw_summary_by_name (t, 0, 0, NULL, 0);
  const tw_summary_row *f = NULL, *b = NULL, *u = NULL, *k = NULL;
  for (guint i = 0; i < rows->len; i++)
    {
      const tw_summary_row *r = &g_array_index (rows, tw_summary_row, i);
      if (strcmp (r->name, "linear (fc1)") == 0 && g_strcmp0 (r->phase, "forward") == 0)
        f = r;
      else if (strcmp (r->name, "linear (fc1)") == 0 && g_strcmp0 (r->phase, "backward") == 0)
        b = r;
      else if (strcmp (r->name, "linear (fc1)") == 0 && g_strcmp0 (r->phase, "update") == 0)
        u = r;
      else if (strcmp (r->name, "matmul") == 0)
        k = r;
      else
        g_assert_true (g_str_has_prefix (r->name, "step ") && r->phase == NULL);
    }
  g_assert_nonnull (f);
  g_assert_nonnull (b);
  g_assert_nonnull (u);
  g_assert_nonnull (k);
  g_assert_cmpuint (rows->len, ==, 4 + steps);
  g_assert_cmpuint (f->count, ==, steps);
  g_assert_cmpuint (b->count, ==, steps);
  g_assert_cmpuint (u->count, ==, steps);
  g_assert_cmpint (f->total_ns, ==, steps * fwd);
  g_assert_cmpint (b->total_ns, ==, steps * bwd);
  g_assert_cmpint (u->total_ns, ==, steps * upd);
  /* The backward's self time leaves out its two kernels; the forward's is whole. */
  g_assert_cmpint (b->self_ns, ==, steps * (bwd - 2 * kern));
  g_assert_cmpint (f->self_ns, ==, steps * fwd);
  g_assert_cmpstr (k->phase, ==, "backward");
  g_assert_cmpuint (k->count, ==, 2 * steps);
  g_assert_cmpstr (f->category, ==, "forward");
  g_assert_cmpstr (b->category, ==, "backward");
  /* A range over steps 11 to 20: ten of each. */
  g_autoptr (GArray) some = tw_summary_by_name (t, 10 * step_len, 20 * step_len, NULL, 0);
  guint64 nf = 0, nb = 0;
  for (guint i = 0; i < some->len; i++)
    {
      const tw_summary_row *r = &g_array_index (some, tw_summary_row, i);
      if (strcmp (r->name, "linear (fc1)") == 0)
        {
          nf += g_strcmp0 (r->phase, "forward") == 0 ? r->count : 0;
          nb += g_strcmp0 (r->phase, "backward") == 0 ? r->count : 0;
        }
    }
  g_assert_cmpuint (nf, ==, 10);
  g_assert_cmpuint (nb, ==, 10);
}

/* Two traces whose steps do not meet (1–3 against 10–12): no step in
 * common, said by tw_summary_steps_in_common; with steps 2–4 against 1–3,
 * two. */
static void
test_compare_no_common_step (void)
{
  tw_trace *tr[3];
  const int first[3] = { 1, 10, 2 };
  for (int j = 0; j < 3; j++)
    {
      tr[j] = tw_trace_new ();
      guint lane = tw_trace_add_lane (tr[j], 1, 1, "train", TW_LANE_THREAD);
      tw_trace_arg fa[] = { { "nodes", "fc1" } };
      for (int i = 0; i < 3; i++)
        {
          g_autofree char *step = g_strdup_printf ("step %d", first[j] + i);
          tw_trace_add_slice (tr[j], lane, i * 1000, 900, step, "step", NULL, 0);
          tw_trace_add_slice (tr[j], lane, i * 1000 + 100, 400 + 100 * j, "linear (fc1)",
                              "forward", fa, 1);
        }
      tw_trace_sort (tr[j]);
    }
  g_assert_cmpuint (tw_summary_steps_in_common (tr[0], tr[1]), ==, 0);
  g_assert_cmpuint (tw_summary_steps_in_common (tr[0], tr[2]), ==, 2);
  g_assert_cmpuint (tw_summary_steps_in_common (tr[0], tr[0]), ==, 3);
  /* Compared whole: fc1's total over each trace, not a mean per step. */
  g_autoptr (GArray) rows = tw_summary_compare (tr[0], tr[1]);
  const tw_compare_row *r = &g_array_index (rows, tw_compare_row, 0);
  g_assert_cmpstr (r->node, ==, "fc1");
  g_assert_cmpfloat (r->a_ns, ==, 3 * 400);
  g_assert_cmpfloat (r->b_ns, ==, 3 * 500);
  for (int j = 0; j < 3; j++)
    tw_trace_free (tr[j]);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/profiler/summary/by-name/brute", test_by_name_brute);
  g_test_add_func ("/profiler/summary/by-name/cut", test_by_name_cut);
  g_test_add_func ("/profiler/summary/by-name/million", test_by_name_million);
  g_test_add_func ("/profiler/summary/by-name/phases", test_by_name_phases);
  g_test_add_func ("/profiler/summary/layers/eager", test_layers_eager);
  g_test_add_func ("/profiler/summary/layers/compiled", test_layers_compiled);
  g_test_add_func ("/profiler/summary/ranks", test_ranks);
  g_test_add_func ("/profiler/summary/steps/ours", test_steps_ours);
  g_test_add_func ("/profiler/summary/steps/torch", test_steps_torch);
  g_test_add_func ("/profiler/summary/steps/torch-real", test_steps_torch_real);
  g_test_add_func ("/profiler/summary/compare", test_compare);
  g_test_add_func ("/profiler/summary/compare/no-common-step", test_compare_no_common_step);
  g_test_add_func ("/profiler/summary/peak", test_peak);
  return g_test_run ();
}
