/* test-fuse.c — the fusion pass: for each fusion, a small graph compiled
 * with and without TW_PASS_FUSE, checking (a) the program after the pass
 * (the fused instruction, its label and sources; the covered instructions
 * gone), (b) the same loss and gradients, (c) the arena where dead
 * pre-activation buffers go away; then eager against compiled over 20
 * training steps of the example models.
 *
 * Tolerances.  The element-wise kernels, the masks and the bias sums keep
 * the generic kernels' expressions and order, so with both programs' GEMMs
 * on OpenBLAS (tw_gemm_set_backend (TW_GEMM_BACKEND_OPENBLAS)) results are
 * compared bitwise.  With the AVX-512 GEMM the products are summed in
 * another order: float32 rounding of a K-term dot product is about
 * K * 2^-24 |a||b| (K <= 64 here: ~4e-6 relative), so those runs allow a
 * relative error of 1e-4 against the largest magnitude of the tensor. */
#include "engine/compile/compiled.h"
#include "engine/cpu/gemm.h"
#include "engine/device.h"
#include "engine/train.h"

#include <math.h>
#include <string.h>

#define NO_FUSE (TW_PASS_ALL & ~TW_PASS_FUSE)

static tw_attrs *
attrs_int (const char *name, int64_t v)
{
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, name, v);
  return a;
}

static void
add_linear (tw_graph *g, const char *id, int64_t out, const char *in)
{
  tw_attrs *a = attrs_int ("out_features", out);
  tw_graph_add (g, id, "linear", a, in, NULL);
  tw_attrs_free (a);
}

static void
add_conv (tw_graph *g, const char *id, int64_t out, int64_t k, const char *in)
{
  tw_attrs *a = attrs_int ("out_channels", out);
  tw_attrs_set_int (a, "kernel_size", k);
  tw_graph_add (g, id, "conv2d", a, in, NULL);
  tw_attrs_free (a);
}

/* x [in] -> fc1 (hidden) -> act -> fc2 (hidden) -> act -> head (4) -> loss. */
static tw_model *
make_mlp (int64_t in, int64_t hidden, const char *act, double slope)
{
  tw_model *m = tw_model_new ("fuse-mlp");
  tw_graph *g = m->graph;
  tw_attrs *aa = NULL;
  if (slope != 0)
    {
      aa = tw_attrs_new ();
      tw_attrs_set_float (aa, "negative_slope", slope);
    }
  tw_graph_add_input (g, "x", TW_F32, 1, &in, "data");
  tw_graph_add_input (g, "y", TW_I64, 0, NULL, "label");
  add_linear (g, "fc1", hidden, "x");
  tw_graph_add (g, "act1", act, aa, "fc1", NULL);
  add_linear (g, "fc2", hidden, "act1");
  tw_graph_add (g, "act2", act, aa, "fc2", NULL);
  add_linear (g, "head", 4, "act2");
  tw_graph_add (g, "loss", "cross_entropy", NULL, "head", "y", NULL);
  tw_graph_set_outputs (g, (const char *[]) { "head", NULL });
  tw_attrs_free (aa);
  return m;
}

/* x [2, 10, 10] -> conv (4, k3) -> relu -> [max_pool 2 | conv (3, k3) -> relu]
 * -> flatten -> head (4) -> loss. */
static tw_model *
make_cnn (gboolean pool)
{
  tw_model *m = tw_model_new ("fuse-cnn");
  tw_graph *g = m->graph;
  tw_graph_add_input (g, "x", TW_F32, 3, (int64_t[]) { 2, 10, 10 }, "data");
  tw_graph_add_input (g, "y", TW_I64, 0, NULL, "label");
  add_conv (g, "conv1", 4, 3, "x");
  tw_graph_add (g, "relu1", "relu", NULL, "conv1", NULL);
  if (pool)
    {
      tw_attrs *a = attrs_int ("kernel_size", 2);
      tw_graph_add (g, "pool1", "max_pool2d", a, "relu1", NULL);
      tw_attrs_free (a);
    }
  else
    {
      add_conv (g, "conv2", 3, 3, "relu1");
      tw_graph_add (g, "relu2", "relu", NULL, "conv2", NULL);
    }
  tw_graph_add (g, "flat", "flatten", NULL, pool ? "pool1" : "relu2", NULL);
  add_linear (g, "head", 4, "flat");
  tw_graph_add (g, "loss", "cross_entropy", NULL, "head", "y", NULL);
  tw_graph_set_outputs (g, (const char *[]) { "head", NULL });
  return m;
}

/* x [6] -> fc (6) -> square -> scale 0.5 -> add_scalar 1 -> mul (., fc) -> head -> loss:
 * a forward chain of element-wise ops, and a chain in their backward. */
static tw_model *
make_chain (void)
{
  tw_model *m = tw_model_new ("fuse-chain");
  tw_graph *g = m->graph;
  tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]) { 6 }, "data");
  tw_graph_add_input (g, "y", TW_I64, 0, NULL, "label");
  add_linear (g, "fc", 6, "x");
  tw_graph_add (g, "sq", "square", NULL, "fc", NULL);
  tw_attrs *s = tw_attrs_new ();
  tw_attrs_set_float (s, "alpha", 0.5);
  tw_graph_add (g, "half", "scale", s, "sq", NULL);
  tw_attrs_free (s);
  s = tw_attrs_new ();
  tw_attrs_set_float (s, "value", 1.0);
  tw_graph_add (g, "plus1", "add_scalar", s, "half", NULL);
  tw_attrs_free (s);
  tw_graph_add (g, "gate", "mul", NULL, "plus1", "fc", NULL);
  add_linear (g, "head", 4, "gate");
  tw_graph_add (g, "loss", "cross_entropy", NULL, "head", "y", NULL);
  tw_graph_set_outputs (g, (const char *[]) { "head", NULL });
  return m;
}

/* A fixed batch: x [batch, dims...] uniform in [-1, 1) (seed 42), labels i % 4. */
static void
make_batch (const tw_graph *g, int64_t batch, tw_tensor **x, tw_tensor **y)
{
  const tw_node *xn = tw_graph_find (g, "x");
  /* out_info is [N, dims...] with N symbolic. */
  int64_t shape[TW_MAX_DIMS] = { batch };
  int nd = xn->out_info[0].ndim;
  for (int d = 1; d < nd; d++)
    shape[d] = xn->out_info[0].dims[d];
  *x = tw_tensor_new (TW_F32, nd, shape);
  *y = tw_tensor_new (TW_I64, 1, &batch);
  g_autoptr (GRand) rng = g_rand_new_with_seed (42);
  for (int64_t i = 0; i < tw_tensor_numel (*x); i++)
    tw_tensor_f32 (*x)[i] = (float) g_rand_double_range (rng, -1, 1);
  for (int64_t i = 0; i < batch; i++)
    tw_tensor_i64 (*y)[i] = i % 4;
}

/* One training step's loss and gradients (copies), and the program. */
typedef struct
{
  double loss;
  GHashTable *grads;       /* param name -> tw_tensor (owned) */
  size_t arena;
  char *dump, *report;
} step_result;

static void
step_result_clear (step_result *r)
{
  g_clear_pointer (&r->grads, g_hash_table_unref);
  g_clear_pointer (&r->dump, g_free);
  g_clear_pointer (&r->report, g_free);
}

static void
run_step (tw_model *m, tw_params *params, tw_pass_flags passes, int64_t batch, step_result *r)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_compiled) c = tw_compiled_new (m->graph, params, 11, &error);
  g_assert_no_error (error);
  tw_compiled_set_passes (c, passes);
  tw_compiled_set_guards (c, TRUE);
  tw_tensor *x, *y;
  make_batch (m->graph, batch, &x, &y);
  g_assert_true (tw_compiled_run (c, TW_PROGRAM_TRAIN, x, y, 0, &error));
  g_assert_no_error (error);
  g_assert_true (tw_compiled_check_guards (c, &error));
  g_assert_no_error (error);
  tw_compiled_bind_grads (c);
  r->loss = tw_compiled_loss_value (c);
  r->grads = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                    (GDestroyNotify) tw_tensor_unref);
  for (int i = 0; i < tw_params_count (params); i++)
    {
      tw_param *p = tw_params_at (params, i);
      if (p->trainable && p->grad)
        g_hash_table_insert (r->grads, g_strdup (p->name), tw_tensor_clone (p->grad));
    }
  tw_program *prog = tw_compiled_program (c, TW_PROGRAM_TRAIN, batch, &error);
  r->arena = prog->arena_bytes;
  r->dump = tw_program_dump (prog);
  r->report = tw_program_report (prog);
  tw_tensor_unref (x);
  tw_tensor_unref (y);
}

/* Max |a - b| over max |b|, or 0 when bitwise equal. */
static double
rel_diff (const tw_tensor *a, const tw_tensor *b)
{
  g_assert_cmpint (tw_tensor_numel (a), ==, tw_tensor_numel (b));
  double d = 0, m = 0;
  for (int64_t i = 0; i < tw_tensor_numel (a); i++)
    {
      d = MAX (d, fabs ((double) tw_tensor_f32 (a)[i] - tw_tensor_f32 (b)[i]));
      m = MAX (m, fabs ((double) tw_tensor_f32 (b)[i]));
    }
  return d / MAX (m, 1e-30);
}

static void
compare (const step_result *a, const step_result *b, gboolean bitwise)
{
  if (bitwise)
    g_assert_cmpfloat (a->loss, ==, b->loss);
  else
    g_assert_cmpfloat_with_epsilon (a->loss, b->loss, 1e-4 * MAX (1.0, fabs (b->loss)));
  g_assert_cmpint (g_hash_table_size (a->grads), ==, g_hash_table_size (b->grads));
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init (&it, a->grads);
  while (g_hash_table_iter_next (&it, &k, &v))
    {
      tw_tensor *ga = v, *gb = g_hash_table_lookup (b->grads, k);
      g_assert_nonnull (gb);
      if (bitwise)
        {
          if (memcmp (tw_tensor_data (ga), tw_tensor_data (gb), tw_tensor_nbytes (ga)) != 0)
            g_error ("gradient of %s differs (relative %g) but should be bitwise equal",
                     (char *) k, rel_diff (ga, gb));
        }
      else if (rel_diff (ga, gb) > 1e-4)
        g_error ("gradient of %s differs by %g relative", (char *) k, rel_diff (ga, gb));
    }
}

/* Both programs on the same parameters, with both GEMM backends. */
static void
check_both (tw_model *m, int64_t batch, step_result *fused, step_result *plain)
{
  g_autoptr (tw_params) params = tw_params_new ();
  tw_gemm_backend saved = tw_gemm_get_backend ();
  step_result f2 = { 0 }, p2 = { 0 };

  g_assert_true (tw_gemm_set_backend (TW_GEMM_BACKEND_OPENBLAS));
  run_step (m, params, TW_PASS_ALL, batch, fused);
  run_step (m, params, NO_FUSE, batch, plain);
  compare (fused, plain, TRUE);
  g_assert_true (tw_gemm_set_backend (saved));

  run_step (m, params, TW_PASS_ALL, batch, &f2);
  run_step (m, params, NO_FUSE, batch, &p2);
  compare (&f2, &p2, FALSE);
  if (g_test_verbose ())
    g_test_message ("%s", f2.report);
  step_result_clear (&f2);
  step_result_clear (&p2);
}

/* The dump has a line "... = LABEL(...)  [SOURCES]" (sources exactly). */
static void
assert_fused (const char *dump, const char *label, const char *sources)
{
  g_autofree char *pat = g_strdup_printf ("= %s(", label);
  g_autofree char *src = g_strdup_printf ("[%s]", sources);
  g_auto (GStrv) lines = g_strsplit (dump, "\n", -1);
  for (char **l = lines; *l; l++)
    if (strstr (*l, pat) && strstr (*l, src))
      return;
  g_error ("no '%s' covering [%s] in:\n%s", label, sources, dump);
}

static int
count_op (const char *dump, const char *op)
{
  g_autofree char *pat = g_strdup_printf ("= %s(", op);
  int n = 0;
  for (const char *s = strstr (dump, pat); s; s = strstr (s + 1, pat))
    n++;
  return n;
}

static void
test_linear_relu (void)
{
  g_autoptr (tw_model) m = make_mlp (12, 32, "relu", 0);
  step_result f = { 0 }, p = { 0 };
  check_both (m, 16, &f, &p);
  assert_fused (f.dump, "fused linear+relu", "fc1, act1");
  assert_fused (f.dump, "fused linear+relu", "fc2, act2");
  assert_fused (f.dump, "fused linear+bias", "head");
  assert_fused (f.dump, "fused linear_grad_input+relu_grad+linear_grad_bias", "head, act2, fc2");
  assert_fused (f.dump, "fused linear_grad_input+relu_grad+linear_grad_bias", "fc2, act1, fc1");
  g_assert_cmpint (count_op (f.dump, "linear"), ==, 0);
  g_assert_cmpint (count_op (f.dump, "relu"), ==, 0);
  g_assert_cmpint (count_op (f.dump, "relu_grad"), ==, 0);
  g_assert_cmpint (count_op (f.dump, "linear_grad_input"), ==, 0);
  g_assert_cmpint (count_op (p.dump, "relu_grad"), ==, 2);
  step_result_clear (&f);
  step_result_clear (&p);
}

static void
test_linear_leaky (void)
{
  g_autoptr (tw_model) m = make_mlp (12, 32, "leaky_relu", 0.1);
  step_result f = { 0 }, p = { 0 };
  check_both (m, 16, &f, &p);
  assert_fused (f.dump, "fused linear+leaky_relu", "fc1, act1");
  assert_fused (f.dump, "fused linear_grad_input+leaky_relu_grad+linear_grad_bias",
                "fc2, act1, fc1");
  g_assert_cmpint (count_op (f.dump, "leaky_relu_grad"), ==, 0);
  step_result_clear (&f);
  step_result_clear (&p);
}

/* A negative slope breaks sign (y) = sign (x): the gradient keeps reading
 * the pre-activation, so the activation must not be fused. */
static void
test_linear_leaky_negative (void)
{
  g_autoptr (tw_model) m = make_mlp (12, 32, "leaky_relu", -0.5);
  step_result f = { 0 }, p = { 0 };
  check_both (m, 16, &f, &p);
  g_assert_cmpint (count_op (f.dump, "leaky_relu"), ==, 2);
  g_assert_cmpint (count_op (f.dump, "leaky_relu_grad"), ==, 2);
  assert_fused (f.dump, "fused linear+bias", "fc1");
  step_result_clear (&f);
  step_result_clear (&p);
}

/* Dead pre-activation buffers: with wide layers the forward's pre-activations
 * dominate the arena without fusion. */
static void
test_linear_memory (void)
{
  g_autoptr (tw_model) m = make_mlp (8, 512, "relu", 0);
  g_autoptr (tw_params) params = tw_params_new ();
  step_result f = { 0 }, p = { 0 };
  run_step (m, params, TW_PASS_ALL, 64, &f);
  run_step (m, params, NO_FUSE, 64, &p);
  g_test_message ("arena: %zu bytes fused, %zu without fusion", f.arena, p.arena);
  /* A pre-activation [64, 512] f32 (128 KiB) is no longer live at the peak
   * (the backward of fc2); the plan's guard bytes (64 per slot, on in these
   * runs) and the 64-byte alignment move the figure by a few KiB. */
  g_assert_cmpuint (f.arena + 120 * 1024, <=, p.arena);
  step_result_clear (&f);
  step_result_clear (&p);
}

static void
test_conv_relu_pool (void)
{
  g_autoptr (tw_model) m = make_cnn (TRUE);
  step_result f = { 0 }, p = { 0 };
  check_both (m, 5, &f, &p);
  assert_fused (f.dump, "fused conv2d+relu", "conv1, relu1");
  assert_fused (f.dump, "fused max_pool2d_grad+relu_grad+conv2d_grad_bias", "pool1, relu1, conv1");
  assert_fused (f.dump, "conv2d_grad_weight (gemm)", "conv1");
  g_assert_cmpint (count_op (f.dump, "conv2d"), ==, 0);
  g_assert_cmpint (count_op (f.dump, "relu"), ==, 0);
  g_assert_cmpint (count_op (f.dump, "max_pool2d_grad"), ==, 0);
  g_assert_cmpint (count_op (f.dump, "conv2d_grad_bias"), ==, 0);
  /* No conv pre-activation and no pool-gradient buffer any more. */
  g_test_message ("arena: %zu bytes fused, %zu without fusion", f.arena, p.arena);
  g_assert_cmpuint (f.arena, <, p.arena);
  step_result_clear (&f);
  step_result_clear (&p);
}

static void
test_conv_relu (void)
{
  g_autoptr (tw_model) m = make_cnn (FALSE);
  step_result f = { 0 }, p = { 0 };
  check_both (m, 5, &f, &p);
  assert_fused (f.dump, "fused conv2d+relu", "conv2, relu2");
  assert_fused (f.dump, "fused relu_grad+conv2d_grad_bias", "relu2, conv2");
  assert_fused (f.dump, "fused relu_grad+conv2d_grad_bias", "relu1, conv1");
  assert_fused (f.dump, "conv2d_grad_input (gemm)", "conv2");
  step_result_clear (&f);
  step_result_clear (&p);
}

static void
test_elementwise_chain (void)
{
  g_autoptr (tw_model) m = make_chain ();
  step_result f = { 0 }, p = { 0 };
  check_both (m, 7, &f, &p);
  /* plus1's output is read by gate and by gate's backward: the chain stops there. */
  assert_fused (f.dump, "fused square+scale+add_scalar", "sq, half, plus1");
  /* Backward: the gradients through mul, scale, square and the sum with
   * gate's other branch. */
  assert_fused (f.dump, "fused mul+scale+mul+scale+add", "gate, half, sq");
  g_assert_cmpint (count_op (f.dump, "square"), ==, 0);
  g_assert_cmpint (count_op (f.dump, "add_scalar"), ==, 0);
  step_result_clear (&f);
  step_result_clear (&p);
}

/* Eager and compiled (all passes) over 20 SGD steps of the example models
 * on one fixed batch.  The GEMMs differ (OpenBLAS against the AVX-512
 * kernel), so losses agree to float32 rounding grown over 20 steps: 1e-4
 * relative (measured: 1.0e-7 for both models). */
static void
check_model_parity (const char *file)
{
  g_autofree char *path = g_build_filename (TW_TEST_DATA_DIR, "..", "..", "..", "assets", "models",
                                            file, NULL);
  g_autoptr (GError) error = NULL;
  double loss[2][20];
  tw_tensor *x = NULL, *y = NULL;
  for (int mode = 0; mode < 2; mode++)
    {
      g_autoptr (tw_model) m = tw_model_load (path, &error);
      g_assert_no_error (error);
      g_autoptr (tw_trainer) tr = tw_trainer_new (m, &error);
      g_assert_no_error (error);
      tw_trainer_set_mode (tr, mode ? TW_MODE_COMPILED : TW_MODE_EAGER);
      if (x == NULL)
        {
          make_batch (m->graph, 32, &x, &y);
          for (int64_t i = 0; i < 32; i++)
            tw_tensor_i64 (y)[i] = i % 10;
        }
      for (int s = 0; s < 20; s++)
        {
          g_assert_true (tw_trainer_step (tr, x, y, &loss[mode][s], &error));
          g_assert_no_error (error);
        }
    }
  double worst = 0;
  for (int s = 0; s < 20; s++)
    worst = MAX (worst, fabs (loss[0][s] - loss[1][s]) / MAX (1.0, fabs (loss[0][s])));
  g_test_message ("%s: worst relative loss difference over 20 steps %g (loss %.9g -> %.9g, "
                  "compiled %.9g -> %.9g; gemm %s)",
                  file, worst, loss[0][0], loss[0][19], loss[1][0], loss[1][19],
                  tw_gemm_kernel_name ());
  g_assert_cmpfloat (worst, <=, 1e-4);
  g_assert_cmpfloat (loss[0][19], <, loss[0][0]);
  tw_tensor_unref (x);
  tw_tensor_unref (y);
}

static void
test_parity_mlp (void)
{
  check_model_parity ("mlp.json");
}

static void
test_parity_lenet (void)
{
  check_model_parity ("lenet5.json");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  tw_set_num_threads (1);
  g_test_add_func ("/engine/fuse/linear-relu", test_linear_relu);
  g_test_add_func ("/engine/fuse/linear-leaky-relu", test_linear_leaky);
  g_test_add_func ("/engine/fuse/linear-leaky-relu-negative-slope", test_linear_leaky_negative);
  g_test_add_func ("/engine/fuse/linear-memory", test_linear_memory);
  g_test_add_func ("/engine/fuse/conv-relu-pool", test_conv_relu_pool);
  g_test_add_func ("/engine/fuse/conv-relu", test_conv_relu);
  g_test_add_func ("/engine/fuse/elementwise-chain", test_elementwise_chain);
  g_test_add_func ("/engine/fuse/parity-mlp", test_parity_mlp);
  g_test_add_func ("/engine/fuse/parity-lenet5", test_parity_lenet);
  return g_test_run ();
}
