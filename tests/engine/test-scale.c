/* test-scale.c — crafted graphs of scale, and sizes that wrap, through every
 * path that walks or sizes them.
 *
 * - Depth: a chain of 100,000 nodes and a layer shared by 20,000 nodes run
 *   a training step eagerly and compiled, the same loss both ways, on a
 *   thread of 1 MiB of stack: a walk recursing once per node (the three
 *   mark_needed did) needs several MiB at this depth and dies.
 * - Cost: 10,000 linear layers and a 100,000-op chain compile (the passes
 *   were O(n^2) to O(n^3): 48 s and over 300 s); meson's timeout catches a
 *   hang, the figures are printed (g_test_message), not asserted.
 * - Sizes: synthetic data for inputs of 2^40 and 2^60 + 1 values and for
 *   2^31 classes, a class count past int, batches and pads near 2^63: each
 *   refused before allocating with the figures, or made at once.
 *
 * The generators below make these shapes for any n, so a larger run is one
 * constant away. */
#include "engine/compile/compiled.h"
#include "engine/compile/program.h"
#include "engine/data-fit.h"
#include "engine/eager.h"
#include "engine/memory.h"
#include "engine/model.h"
#include "engine/params.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

/* Attribute sets freed with their scope. */
static void
attrs_free (tw_attrs **a)
{
  tw_attrs_free (*a);
}
#define scoped_attrs __attribute__ ((cleanup (attrs_free))) tw_attrs *

/* The stack the depth cases run on: a tenth of what a per-node recursion
 * over the chain takes at 64 bytes a frame, and a thousand times what the
 * walks with their own stack need. */
#define SMALL_STACK ((size_t) 1 << 20)

/* ---- generators ---------------------------------------------------------- */

typedef enum
{
  CHAIN,  /* n tanh nodes one after the other */
  LINEAR, /* n linear layers 2 → 2 */
  SHARED, /* one linear layer used by n nodes in a row (share) */
} shape_kind;

/* x [2] → n nodes of kind → head linear [2] → cross_entropy with y. */
static tw_model *
model_of (shape_kind kind, int n)
{
  tw_model *m = tw_model_new ("scale");
  tw_graph *g = m->graph;
  tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]){ 2 }, "data");
  tw_graph_add_input (g, "y", TW_I64, 0, NULL, "label");
  scoped_attrs lin = tw_attrs_new ();
  tw_attrs_set_int (lin, "out_features", 2);
  g_autofree char *prev = g_strdup ("x");
  for (int i = 0; i < n; i++)
    {
      g_autofree char *id = g_strdup_printf ("n%d", i);
      tw_node *node = tw_graph_add (g, id, kind == CHAIN ? "tanh" : "linear",
                                    kind == CHAIN ? (tw_attrs *) NULL : lin, prev, NULL);
      if (kind == SHARED && i > 0)
        tw_graph_set_share (g, node, "n0");
      g_free (prev);
      prev = g_steal_pointer (&id);
    }
  tw_graph_add (g, "head", "linear", lin, prev, NULL);
  tw_graph_add (g, "loss", "cross_entropy", NULL, "head", "y", NULL);
  tw_graph_set_outputs (g, (const char *[]){ "head", NULL });
  m->recipe.batch_size = 4;
  return m;
}

/* ---- on a small stack --------------------------------------------------- */

typedef struct
{
  GThreadFunc fn;
  gpointer data;
} small_call;

static gpointer
run_small (gpointer p)
{
  small_call *c = p;
  return c->fn (c->data);
}

/* fn (data) on a thread of SMALL_STACK bytes of stack. */
static gpointer
on_small_stack (GThreadFunc fn, gpointer data)
{
  pthread_attr_t attr;
  pthread_t t;
  small_call c = { fn, data };
  gpointer ret = NULL;
  g_assert_cmpint (pthread_attr_init (&attr), ==, 0);
  g_assert_cmpint (pthread_attr_setstacksize (&attr, SMALL_STACK), ==, 0);
  g_assert_cmpint (pthread_create (&t, &attr, (void *(*) (void *) ) run_small, &c), ==, 0);
  g_assert_cmpint (pthread_join (t, &ret), ==, 0);
  pthread_attr_destroy (&attr);
  return ret;
}

/* One training step eagerly and one compiled (forward, backward, update
 * program built, optimised, run) of m at batch 4; the two losses. */
typedef struct
{
  tw_model *m;
  double eager_loss, compiled_loss;
  int instructions;
} step_case;

static gpointer
train_both (gpointer data)
{
  step_case *c = data;
  tw_graph *g = c->m->graph;
  g_autoptr (GError) error = NULL;
  g_assert_cmpint (tw_graph_infer (g), ==, 0);
  g_assert_true (tw_graph_check_memory (g, 4, TRUE, &error));
  g_autoptr (tw_tensor) x = tw_tensor_zeros (TW_F32, 2, (int64_t[]){ 4, 2 });
  g_autoptr (tw_tensor) y = tw_tensor_zeros (TW_I64, 1, (int64_t[]){ 4 });
  for (int i = 0; i < 8; i++)
    tw_tensor_f32 (x)[i] = 0.25f * (float) (i % 3) - 0.2f;
  tw_tensor_i64 (y)[1] = tw_tensor_i64 (y)[3] = 1;
  g_autoptr (tw_params) params = tw_params_new ();
  {
    g_autoptr (tw_eager) ex = tw_eager_new (g, params, 0, &error);
    g_assert_no_error (error);
    g_assert_true (tw_eager_forward (ex, x, y, TRUE, 0, &error));
    g_assert_no_error (error);
    g_assert_true (tw_eager_backward (ex, &error));
    g_assert_no_error (error);
    c->eager_loss = tw_eager_loss_value (ex);
  }
  {
    g_autoptr (tw_compiled) cp = tw_compiled_new (g, params, 0, &error);
    g_assert_no_error (error);
    g_assert_true (tw_compiled_run (cp, TW_PROGRAM_TRAIN, x, y, 0, &error));
    g_assert_no_error (error);
    c->compiled_loss = tw_compiled_loss_value (cp);
    tw_program *p = tw_compiled_program (cp, TW_PROGRAM_TRAIN, 4, &error);
    g_assert_no_error (error);
    c->instructions = (int) p->instrs->len;
  }
  return NULL;
}

static void
check_depth (shape_kind kind, int n)
{
  g_autoptr (tw_model) m = model_of (kind, n);
  step_case c = { m, 0, 0, 0 };
  gint64 t0 = g_get_monotonic_time ();
  on_small_stack (train_both, &c);
  g_test_message ("%s of %d: a step eager and compiled in %.2f s on %zu KiB of stack; loss %.6f "
                  "both ways, %d instructions",
                  kind == CHAIN ? "chain" : "shared layer", n, (g_get_monotonic_time () - t0) / 1e6,
                  SMALL_STACK >> 10, c.eager_loss, c.instructions);
  g_assert_true (isfinite (c.eager_loss));
  /* The same arithmetic in the same order (the parity the executors keep). */
  g_assert_cmpfloat (c.compiled_loss, ==, c.eager_loss);
  if (kind == SHARED)
    {
      /* One parameter set: n0's and the head's. */
      g_assert_cmpint (tw_graph_param_count (m->graph), ==, 2 * (2 * 2 + 2));
    }
}

static void
test_deep_chain (void)
{
  check_depth (CHAIN, 100000);
}

static void
test_shared_uses (void)
{
  check_depth (SHARED, 20000);
}

/* ---- cost ---------------------------------------------------------------- */

static void
compile_timed (shape_kind kind, int n)
{
  g_autoptr (tw_model) m = model_of (kind, n);
  g_autoptr (GError) error = NULL;
  g_assert_cmpint (tw_graph_infer (m->graph), ==, 0);
  gint64 t0 = g_get_monotonic_time ();
  g_autoptr (tw_program) p = tw_program_build (m->graph, 4, TW_PROGRAM_STEP, &error);
  g_assert_no_error (error);
  g_assert_true (tw_program_optimize (p, TW_PASS_ALL, &error));
  g_assert_no_error (error);
  g_test_message ("%s of %d: %u instructions compiled in %.2f s (build %.0f ms)",
                  kind == CHAIN    ? "chain"
                  : kind == LINEAR ? "linear chain"
                                   : "shared layer",
                  n, p->instrs->len, (g_get_monotonic_time () - t0) / 1e6, p->build_ms);
  for (guint i = 0; i < p->records->len; i++)
    {
      const tw_pass_record *r = &g_array_index (p->records, tw_pass_record, i);
      g_test_message ("  %-36s %8.1f ms", r->pass, r->ms);
    }
  /* A plan within its own bounds: every buffer placed. */
  g_assert_cmpuint (p->arena_bytes, <=, p->unplanned_bytes + 64 * (p->slots->len + 2));
  g_assert_cmpuint (p->arena_bytes, >, 0);
}

static void
test_compile_linear_chain (void)
{
  compile_timed (LINEAR, 10000);
}

static void
test_compile_chain (void)
{
  compile_timed (CHAIN, 100000);
}

/* ---- sizes ------------------------------------------------------------ */

/* x [features] (a slice keeps the layers small) → linear [classes] (padded
 * from 2 by a pad node when classes > 2) → cross_entropy. */
static tw_model *
classifier (int64_t features, int64_t classes)
{
  tw_model *m = tw_model_new ("scale");
  tw_graph *g = m->graph;
  tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]){ features }, "data");
  tw_graph_add_input (g, "y", TW_I64, 0, NULL, "label");
  scoped_attrs sl = tw_attrs_new ();
  tw_attrs_set_int (sl, "axis", 1);
  tw_attrs_set_int (sl, "end", 2);
  tw_graph_add (g, "first", "slice", sl, "x", NULL);
  scoped_attrs lin = tw_attrs_new ();
  tw_attrs_set_int (lin, "out_features", 2);
  tw_graph_add (g, "fc", "linear", lin, "first", NULL);
  const char *logits = "fc";
  if (classes > 2)
    {
      scoped_attrs pad = tw_attrs_new ();
      tw_attrs_set_ints (pad, "pads", 2, (int64_t[]){ 0, classes - 2 });
      tw_graph_add (g, "wide", "pad", pad, "fc", NULL);
      logits = "wide";
    }
  tw_graph_add (g, "loss", "cross_entropy", NULL, logits, "y", NULL);
  tw_graph_set_outputs (g, (const char *[]){ logits, NULL });
  g_assert_cmpint (tw_graph_infer (g), ==, 0);
  return m;
}

static void
expect_refused (int64_t features, int64_t classes, const char *spec, const char *words)
{
  g_autoptr (tw_model) m = classifier (features, classes);
  g_autoptr (GError) error = NULL;
  gint64 t0 = g_get_monotonic_time ();
  guint64 before = tw_tensor_storage_bytes ();
  g_autoptr (tw_dataset) d = tw_dataset_open_for_model (m, spec, TW_SPLIT_TRAIN, &error);
  g_assert_null (d);
  g_test_message ("x [%" G_GINT64_FORMAT "], %" G_GINT64_FORMAT " classes, %s: %s (%.3f s)",
                  features, classes, spec, error->message, (g_get_monotonic_time () - t0) / 1e6);
  if (!strstr (error->message, words))
    g_error ("expected \"%s\" in: %s", words, error->message);
  g_assert_cmpuint (tw_tensor_storage_bytes (), ==, before);
}

static void
test_synthetic_sizes (void)
{
  g_setenv ("TWB_MEMORY_LIMIT", "1G", TRUE);
  /* 8 samples of 2^60 + 1 values: past 2^63 bytes (the products wrapped). */
  expect_refused (((int64_t) 1 << 60) + 1, 2, "synthetic:8", "needs more than 2^63 bytes");
  /* 2^40 values a sample: 35 TB, refused with the figures. */
  expect_refused ((int64_t) 1 << 40, 2, "synthetic:8", "(TWB_MEMORY_LIMIT)");
  expect_refused ((int64_t) 1 << 40, 2, "synthetic:8", "8 samples of 1099511627776 values");
  /* Labels are ints. */
  expect_refused (4, (int64_t) 1 << 31, "synthetic:8", "2147483648 classes; labels take at most");
  expect_refused (4, ((int64_t) 1 << 60) + 1, "synthetic:8", "1152921504606846977 classes");
  /* The count: all of its token, in range. */
  expect_refused (4, 3, "synthetic:99999999999999999999", "the sample count");
  expect_refused (4, 3, "synthetic:8x", "the sample count: '8x' is not valid");
  expect_refused (4, 3, "synthetic:-1", "expected a whole number in [1, 1048576]");

  /* 2^31 - 1 classes: 8 samples draw 8 patterns, not 2^31 (537 s and
   * 16.8 GB before), and the labels are what they should be. */
  g_autoptr (tw_model) m = classifier (4, G_MAXINT32);
  g_autoptr (GError) error = NULL;
  gint64 t0 = g_get_monotonic_time ();
  g_autoptr (tw_dataset) d = tw_dataset_open_for_model (m, "synthetic:8", TW_SPLIT_TRAIN, &error);
  g_assert_no_error (error);
  g_test_message ("2^31 - 1 classes: 8 samples made in %.3f s",
                  (g_get_monotonic_time () - t0) / 1e6);
  g_assert_cmpint (tw_dataset_size (d), ==, 8);
  g_assert_cmpint (d->n_classes, ==, G_MAXINT32);
  for (int i = 0; i < 8; i++)
    g_assert_cmpint (tw_tensor_i64 (d->y)[i], ==, i);
  /* Training it is refused before any data, with the figures. */
  tw_dataset *train = NULL, *val = NULL, *test = NULL;
  g_assert_false (
    tw_datasets_open_for_training (m, "synthetic:8", TRUE, &train, &val, &test, &error));
  g_assert_error (error, TW_MEMORY_ERROR, TW_MEMORY_ERROR_EXHAUSTED);
  g_assert_nonnull (strstr (error->message, "node wide"));
  g_assert_null (train);
  g_unsetenv ("TWB_MEMORY_LIMIT");
}

/* Pads near 2^63 and past it: refused at inference, naming the node; one
 * that fits int64 (2^40) is refused by the memory check before any step. */
static void
test_pads (void)
{
  static const int64_t pads[] = { G_MAXINT64, G_MAXINT64 - 2,    G_MAXINT64 / 2 + 1, -1,
                                  G_MININT64, (int64_t) 1 << 62, (int64_t) 1 << 40 };
  for (guint i = 0; i < G_N_ELEMENTS (pads); i++)
    {
      g_autoptr (tw_model) m = tw_model_new ("pads");
      tw_graph *g = m->graph;
      tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]){ 4 }, "data");
      scoped_attrs a = tw_attrs_new ();
      tw_attrs_set_ints (a, "pads", 2, (int64_t[]){ pads[i], 1 });
      tw_graph_add (g, "p", "pad", a, "x", NULL);
      tw_graph_set_outputs (g, (const char *[]){ "p", NULL });
      int n_err = tw_graph_infer (g);
      g_autofree char *errs = tw_graph_errors_to_string (g);
      g_test_message ("pads [%" G_GINT64_FORMAT ", 1]: %s", pads[i], n_err ? errs : "accepted");
      if (n_err == 0)
        {
          /* Accepted (a dim of 2^62 + 5): no step may be taken at any batch. */
          g_autoptr (GError) error = NULL;
          g_assert_false (tw_graph_check_memory (g, 1, FALSE, &error));
          g_assert_nonnull (strstr (error->message, "node p"));
          continue;
        }
      g_assert_true (g_str_has_prefix (errs, "node p: pad:"));
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  g_test_add_func ("/engine/scale/deep-chain", test_deep_chain);
  g_test_add_func ("/engine/scale/shared-uses", test_shared_uses);
  g_test_add_func ("/engine/scale/compile-linear-chain", test_compile_linear_chain);
  g_test_add_func ("/engine/scale/compile-chain", test_compile_chain);
  g_test_add_func ("/engine/scale/synthetic-sizes", test_synthetic_sizes);
  g_test_add_func ("/engine/scale/pads", test_pads);
  return g_test_run ();
}
