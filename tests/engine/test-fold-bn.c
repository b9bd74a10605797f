/* test-fold-bn.c — the compiled executor's inference passes before fusion:
 * batch norm folded into the conv2d / linear before it (fold-bn.c) and
 * conv2d + residual add + relu in one kernel (fuse.c).  On ResNet-like
 * blocks (conv-bn-relu, an identity shortcut, a projection shortcut with a
 * strided 1x1 conv, a conv without bias, linear-bn-relu) with non-trivial
 * running statistics and affine parameters: inference and evaluation
 * programs against eager, with and without the passes; what the program
 * and the report show; parameters changed between runs of one cached
 * program; training programs left as they were; the cases that must not
 * fold.
 *
 * Tolerance.  The folded kernels keep batch_norm's expression and rounding
 * ((v - mean) * scale + shift with the scale rounded from a double), so
 * they differ from eager only where the GEMMs differ: the compiled conv and
 * linear kernels sum their K <= 144 products in another order than eager's
 * (float32: about K * 2^-24 ~ 1e-5 relative per element in the worst case,
 * far less on average), and five layers carry it.  1e-5 of the largest
 * output magnitude holds with a margin (the figures are printed); a wrong
 * fold (a missing shift, the variance without eps, a stale parameter) moves
 * outputs by 1e-2 or more. */
#include "engine/compile/compiled.h"
#include "engine/compile/report-data.h"
#include "engine/rng.h"
#include "engine/train.h"

#include <math.h>
#include <string.h>

#define RTOL 1e-5
#define NEW_PASSES (TW_PASS_FOLD_BN | TW_PASS_FUSE_RESIDUAL)

static void
add_conv (tw_graph *g, const char *id, int64_t out, int64_t k, int64_t stride, gboolean bias,
          const char *in)
{
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, "out_channels", out);
  tw_attrs_set_int (a, "kernel_size", k);
  tw_attrs_set_int (a, "stride", stride);
  tw_attrs_set_int (a, "padding", k / 2);
  tw_attrs_set_bool (a, "bias", bias);
  tw_graph_add (g, id, "conv2d", a, in, NULL);
  tw_attrs_free (a);
}

static void
add_bn (tw_graph *g, const char *id, gboolean affine, gboolean track, const char *in)
{
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_bool (a, "affine", affine);
  tw_attrs_set_bool (a, "track_running_stats", track);
  tw_attrs_set_float (a, "eps", 1e-3);
  tw_graph_add (g, id, "batch_norm", a, in, NULL);
  tw_attrs_free (a);
}

/* x [3, 8, 8]
 *   conv1 (8, k3, no bias) - bn1 - relu1
 *   conv2 (8, k3) - bn2 (no affine) - add1 (+ relu1: identity shortcut) - relu2
 *   conv3 (16, k3, stride 2) - bn3 - relu3 - conv4 (16, k3) - bn4
 *   convp (16, k1, stride 2, from relu2) - bnp             (projection shortcut)
 *   add2 (bn4, bnp) - relu4 - flatten - fc (12) - bnfc - relufc - head (4) - loss */
static tw_model *
make_resnet (void)
{
  tw_model *m = tw_model_new ("fold-bn-resnet");
  tw_graph *g = m->graph;
  tw_graph_add_input (g, "x", TW_F32, 3, (int64_t[]){ 3, 8, 8 }, "data");
  tw_graph_add_input (g, "y", TW_I64, 0, NULL, "label");
  add_conv (g, "conv1", 8, 3, 1, FALSE, "x");
  add_bn (g, "bn1", TRUE, TRUE, "conv1");
  tw_graph_add (g, "relu1", "relu", NULL, "bn1", NULL);
  add_conv (g, "conv2", 8, 3, 1, TRUE, "relu1");
  add_bn (g, "bn2", FALSE, TRUE, "conv2");
  tw_graph_add (g, "add1", "add", NULL, "bn2", "relu1", NULL);
  tw_graph_add (g, "relu2", "relu", NULL, "add1", NULL);
  add_conv (g, "conv3", 16, 3, 2, TRUE, "relu2");
  add_bn (g, "bn3", TRUE, TRUE, "conv3");
  tw_graph_add (g, "relu3", "relu", NULL, "bn3", NULL);
  add_conv (g, "conv4", 16, 3, 1, TRUE, "relu3");
  add_bn (g, "bn4", TRUE, TRUE, "conv4");
  add_conv (g, "convp", 16, 1, 2, TRUE, "relu2");
  add_bn (g, "bnp", TRUE, TRUE, "convp");
  tw_graph_add (g, "add2", "add", NULL, "bn4", "bnp", NULL);
  tw_graph_add (g, "relu4", "relu", NULL, "add2", NULL);
  tw_graph_add (g, "flat", "flatten", NULL, "relu4", NULL);
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, "out_features", 12);
  tw_graph_add (g, "fc", "linear", a, "flat", NULL);
  tw_attrs_set_int (a, "out_features", 4);
  add_bn (g, "bnfc", TRUE, TRUE, "fc");
  tw_graph_add (g, "relufc", "relu", NULL, "bnfc", NULL);
  tw_graph_add (g, "head", "linear", a, "relufc", NULL);
  tw_attrs_free (a);
  tw_graph_add (g, "loss", "cross_entropy", NULL, "head", "y", NULL);
  tw_graph_set_outputs (g, (const char *[]){ "head", NULL });
  g_assert_cmpint (tw_graph_infer (g), ==, 0);
  return m;
}

/* Running statistics and affine parameters away from their 0 / 1 start:
 * mean in [-0.5, 0.5), variance in [0.3, 1.7), weight in [0.5, 1.5), bias in
 * [-0.5, 0.5), each from its own stream. */
static void
randomise_bn (tw_params *params, guint64 seed)
{
  for (int i = 0; i < tw_params_count (params); i++)
    {
      tw_param *pp = tw_params_at (params, i);
      float lo, hi;
      if (g_str_has_suffix (pp->name, ".running_mean"))
        lo = -0.5f, hi = 0.5f;
      else if (g_str_has_suffix (pp->name, ".running_var"))
        lo = 0.3f, hi = 1.7f;
      else if (g_str_has_prefix (pp->name, "bn") && g_str_has_suffix (pp->name, ".weight"))
        lo = 0.5f, hi = 1.5f;
      else if (g_str_has_prefix (pp->name, "bn") && g_str_has_suffix (pp->name, ".bias"))
        lo = -0.5f, hi = 0.5f;
      else
        continue;
      tw_rng_fill_uniform (tw_tensor_f32 (pp->value), tw_tensor_numel (pp->value), seed,
                           (guint64) i + 1, lo, hi);
    }
}

static tw_tensor *
make_x (int64_t batch, guint64 seed)
{
  tw_tensor *x = tw_tensor_new (TW_F32, 4, (int64_t[]){ batch, 3, 8, 8 });
  tw_rng_fill_uniform (tw_tensor_f32 (x), tw_tensor_numel (x), seed, 1, -1.0f, 1.0f);
  return x;
}

static tw_tensor *
make_y (int64_t batch)
{
  tw_tensor *y = tw_tensor_new (TW_I64, 1, (int64_t[]){ batch });
  for (int64_t i = 0; i < batch; i++)
    tw_tensor_i64 (y)[i] = i % 4;
  return y;
}

/* max |a - b| / max |b| */
static double
rel_err (const tw_tensor *a, const tw_tensor *b)
{
  g_assert_cmpint (tw_tensor_numel (a), ==, tw_tensor_numel (b));
  double num = 0, den = 0;
  for (int64_t i = 0; i < tw_tensor_numel (a); i++)
    {
      num = MAX (num, fabs ((double) tw_tensor_f32 (a)[i] - tw_tensor_f32 (b)[i]));
      den = MAX (den, fabs ((double) tw_tensor_f32 (b)[i]));
    }
  g_assert_cmpfloat (den, >, 0);
  return num / den;
}

static tw_tensor *
eager_predict (tw_model *m, tw_params *params, tw_tensor *x)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_eager) ex = tw_eager_new (m->graph, params, 0, &error);
  g_assert_no_error (error);
  g_assert_true (tw_eager_forward (ex, x, NULL, FALSE, 0, &error));
  g_assert_no_error (error);
  return tw_tensor_clone (tw_eager_prediction (ex));
}

static tw_tensor *
compiled_predict (tw_compiled *c, tw_tensor *x)
{
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_compiled_run (c, TW_PROGRAM_INFER, x, NULL, 0, &error));
  g_assert_no_error (error);
  return tw_tensor_clone (tw_compiled_prediction (c));
}

/* Instructions of a program whose label is exactly `label`, with their
 * sources as "a, b, c". */
static int
count_label (const tw_program *p, const char *label, const char *sources)
{
  int n = 0;
  for (guint i = 0; i < p->instrs->len; i++)
    {
      const tw_instr *ins = g_ptr_array_index (p->instrs, i);
      if (strcmp (ins->label, label) != 0)
        continue;
      g_autoptr (GString) s = g_string_new (NULL);
      for (guint k = 0; k < ins->sources->len; k++)
        g_string_append_printf (s, "%s%s", k ? ", " : "",
                                (char *) g_ptr_array_index (ins->sources, k));
      n += sources == NULL || strcmp (s->str, sources) == 0;
    }
  return n;
}

static int
count_op (const tw_program *p, const char *op)
{
  int n = 0;
  for (guint i = 0; i < p->instrs->len; i++)
    {
      const tw_instr *ins = g_ptr_array_index (p->instrs, i);
      n += ins->op && strcmp (ins->op->name, op) == 0;
    }
  return n;
}

/* Inference at batches 1 and 5 and evaluation (the loss), with and without
 * the passes, against eager. */
static void
test_matches_eager (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = make_resnet ();
  g_autoptr (tw_params) params = tw_params_new ();
  g_autoptr (tw_compiled) on = tw_compiled_new (m->graph, params, 7, &error);
  g_assert_no_error (error);
  g_autoptr (tw_compiled) off = tw_compiled_new (m->graph, params, 7, &error);
  tw_compiled_set_passes (off, TW_PASS_ALL & ~NEW_PASSES);
  randomise_bn (params, 11);
  for (int64_t batch = 1; batch <= 5; batch += 4)
    {
      g_autoptr (tw_tensor) x = make_x (batch, 3 + batch);
      g_autoptr (tw_tensor) ref = eager_predict (m, params, x);
      g_autoptr (tw_tensor) yon = compiled_predict (on, x);
      g_autoptr (tw_tensor) yoff = compiled_predict (off, x);
      double e_on = rel_err (yon, ref), e_off = rel_err (yoff, ref), e_pass = rel_err (yon, yoff);
      g_test_message ("batch %" G_GINT64_FORMAT
                      ": with the passes %.2e, without %.2e, between %.2e",
                      batch, e_on, e_off, e_pass);
      g_assert_cmpfloat (e_on, <=, RTOL);
      g_assert_cmpfloat (e_off, <=, RTOL);
      g_assert_cmpfloat (e_pass, <=, RTOL);
    }
  /* The evaluation program folds too, and its loss is eager's. */
  g_autoptr (tw_tensor) x = make_x (6, 9);
  g_autoptr (tw_tensor) y = make_y (6);
  g_autoptr (tw_eager) ex = tw_eager_new (m->graph, params, 0, &error);
  g_assert_true (tw_eager_forward (ex, x, y, FALSE, 0, &error));
  g_assert_no_error (error);
  g_autoptr (tw_tensor) lt = tw_tensor_contiguous (tw_eager_loss (ex));
  double eager_loss = tw_tensor_f32 (lt)[0];
  g_assert_true (tw_compiled_run (on, TW_PROGRAM_EVAL, x, y, 0, &error));
  g_assert_no_error (error);
  double compiled_loss = tw_compiled_loss_value (on);
  g_test_message ("evaluation loss: eager %.9g, compiled %.9g", eager_loss, compiled_loss);
  g_assert_cmpfloat (fabs (compiled_loss - eager_loss), <=, RTOL * fabs (eager_loss));
  tw_program *ev = tw_compiled_program (on, TW_PROGRAM_EVAL, 6, &error);
  g_assert_cmpint (count_op (ev, "batch_norm"), ==, 0);
}

/* What the program and the reports show. */
static void
test_report (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = make_resnet ();
  g_autoptr (tw_program) p = tw_program_build (m->graph, 2, TW_PROGRAM_INFER, &error);
  g_assert_no_error (error);
  g_assert_true (tw_program_optimize (p, TW_PASS_ALL, &error));
  g_autofree char *dump = tw_program_dump (p);
  g_test_message ("%s", dump);
  g_assert_cmpint (count_op (p, "batch_norm"), ==, 0);
  g_assert_cmpint (count_op (p, "add"), ==, 0);
  g_assert_cmpint (count_op (p, "relu"), ==, 0);
  g_assert_cmpint (count_label (p, "fused conv2d+batch_norm+relu", "conv1, bn1, relu1"), ==, 1);
  g_assert_cmpint (count_label (p, "fused conv2d+batch_norm+add+relu", "conv2, bn2, add1, relu2"),
                   ==, 1);
  g_assert_cmpint (count_label (p, "fused conv2d+batch_norm+relu", "conv3, bn3, relu3"), ==, 1);
  /* One of the two branches takes the add; the other is folded alone. */
  int a4 = count_label (p, "fused conv2d+batch_norm+add+relu", "conv4, bn4, add2, relu4");
  int ap = count_label (p, "fused conv2d+batch_norm+add+relu", "convp, bnp, add2, relu4");
  g_assert_cmpint (a4 + ap, ==, 1);
  g_assert_cmpint (count_label (p, "fused conv2d+batch_norm", a4 ? "convp, bnp" : "conv4, bn4"), ==,
                   1);
  g_assert_cmpint (count_label (p, "fused linear+batch_norm+relu", "fc, bnfc, relufc"), ==, 1);

  g_autofree char *text = tw_program_report (p);
  g_test_message ("%s", text);
  g_assert_nonnull (strstr (text, "fold batch norm"));
  g_assert_nonnull (strstr (text, "bn1 into conv1\n"));
  g_assert_nonnull (strstr (text, "bnfc into fc\n"));
  g_assert_nonnull (strstr (text, "conv2d+batch_norm+add+relu: conv2, bn2, add1, relu2\n"));

  g_autoptr (tw_compile_report) r = tw_compile_report_new (p);
  gboolean fold_seen = FALSE, res_seen = FALSE;
  for (guint i = 0; i < r->passes->len; i++)
    {
      const tw_compile_pass *ps = &g_array_index (r->passes, tw_compile_pass, i);
      if (strcmp (ps->pass, "fold batch norm") == 0)
        {
          fold_seen = TRUE;
          /* six batch norms, and the relu after the linear one */
          g_assert_cmpint (ps->before - ps->after, ==, 7);
          g_assert_true (g_str_has_prefix (ps->summary, "6 batch norms folded: bn1 into conv1; "));
        }
      if (strcmp (ps->pass, "conv + residual add") == 0)
        {
          res_seen = TRUE;
          g_assert_true (g_str_has_prefix (ps->summary, "2 residual block tails fused: "));
        }
    }
  g_assert_true (fold_seen && res_seen);
  /* Fused groups for the canvas: bn1 is in conv1's. */
  g_assert_true (g_hash_table_contains (r->node_group, "bn1"));
  g_assert_true (g_hash_table_lookup (r->node_group, "bn1") ==
                 g_hash_table_lookup (r->node_group, "conv1"));

  /* Without the passes (or without fusion) the batch norms stay. */
  g_autoptr (tw_program) q = tw_program_build (m->graph, 2, TW_PROGRAM_INFER, &error);
  g_assert_true (tw_program_optimize (q, TW_PASS_ALL & ~NEW_PASSES, &error));
  g_assert_cmpint (count_op (q, "batch_norm"), ==, 6);
  g_autofree char *qtext = tw_program_report (q);
  g_assert_null (strstr (qtext, "fold batch norm"));
  g_assert_null (strstr (qtext, "+batch_norm"));
  g_assert_null (strstr (qtext, "conv2d+add")); /* add + relu is an element-wise chain */
  g_autoptr (tw_program) u = tw_program_build (m->graph, 2, TW_PROGRAM_INFER, &error);
  g_assert_true (tw_program_optimize (u, TW_PASS_ALL & ~TW_PASS_FUSE, &error));
  g_assert_cmpint (count_op (u, "batch_norm"), ==, 6);
}

/* One cached program, parameters changed in place between runs (as an
 * optimizer step or a state_dict load does): the output follows. */
static void
test_follows_params (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = make_resnet ();
  g_autoptr (tw_params) params = tw_params_new ();
  g_autoptr (tw_compiled) c = tw_compiled_new (m->graph, params, 7, &error);
  g_assert_no_error (error);
  randomise_bn (params, 5);
  g_autoptr (tw_tensor) x = make_x (3, 21);
  g_autoptr (tw_tensor) y1 = compiled_predict (c, x);
  guint notes = tw_compiled_notes (c)->len;

  static const char *const changed[] = { "bn1.weight", "bn2.running_mean", "bn4.running_var",
                                         "bnp.bias",   "bnfc.running_var", "conv4.weight" };
  for (guint k = 0; k < G_N_ELEMENTS (changed); k++)
    {
      tw_param *pp = tw_params_get (params, changed[k]);
      g_assert_nonnull (pp);
      float *v = tw_tensor_f32 (pp->value);
      /* Multiply by 1.3 (variances stay positive). */
      for (int64_t i = 0; i < tw_tensor_numel (pp->value); i++)
        v[i] *= 1.3f;
      g_autoptr (tw_tensor) yk = compiled_predict (c, x);
      g_autoptr (tw_tensor) ref = eager_predict (m, params, x);
      double moved = rel_err (yk, y1), err = rel_err (yk, ref);
      g_test_message ("%s x 1.3: output moved by %.2e, against eager %.2e", changed[k], moved, err);
      g_assert_cmpfloat (moved, >, 1e-3);
      g_assert_cmpfloat (err, <=, RTOL);
      tw_tensor_copy_into (y1, yk);
    }
  /* The same program throughout: nothing was recompiled. */
  g_assert_cmpuint (tw_compiled_notes (c)->len, ==, notes);
}

/* Training programs do not change: the same instructions with and without
 * the passes, and the same losses bit for bit over a few steps (batch norm
 * in training mode, running statistics updated). */
static void
test_training_unchanged (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = make_resnet ();
  char *dumps[2] = { NULL, NULL };
  double losses[2][3];
  for (int v = 0; v < 2; v++)
    {
      g_autoptr (tw_program) p = tw_program_build (m->graph, 4, TW_PROGRAM_STEP, &error);
      g_assert_no_error (error);
      g_assert_true (tw_program_optimize (p, v ? TW_PASS_ALL : TW_PASS_ALL & ~NEW_PASSES, &error));
      dumps[v] = tw_program_dump (p);
      g_assert_null (strstr (dumps[v], "+batch_norm"));
      g_assert_null (strstr (dumps[v], "+add"));

      g_autoptr (tw_trainer) tr = tw_trainer_new (m, &error);
      g_assert_no_error (error);
      tw_trainer_set_mode (tr, TW_MODE_COMPILED);
      tw_compiled_set_passes (tw_trainer_compiled (tr),
                              v ? TW_PASS_ALL : TW_PASS_ALL & ~NEW_PASSES);
      randomise_bn (tw_trainer_params (tr), 3);
      for (int s = 0; s < 3; s++)
        {
          g_autoptr (tw_tensor) x = make_x (4, 40 + s);
          g_autoptr (tw_tensor) y = make_y (4);
          g_assert_true (tw_trainer_step (tr, x, y, &losses[v][s], &error));
          g_assert_no_error (error);
        }
    }
  g_assert_cmpstr (dumps[0], ==, dumps[1]);
  g_free (dumps[0]);
  g_free (dumps[1]);
  for (int s = 0; s < 3; s++)
    g_assert_cmpfloat (losses[0][s], ==, losses[1][s]);
}

/* Batch norms that must stay: batch statistics in evaluation too
 * (track_running_stats false), a conv output read by another node too, a
 * residual add that broadcasts. */
static void
test_not_folded (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = tw_model_new ("fold-bn-not");
  tw_graph *g = m->graph;
  tw_graph_add_input (g, "x", TW_F32, 3, (int64_t[]){ 3, 8, 8 }, "data");
  add_conv (g, "conv1", 4, 3, 1, TRUE, "x");
  add_bn (g, "bn1", TRUE, FALSE, "conv1"); /* batch statistics */
  add_conv (g, "conv2", 4, 3, 1, TRUE, "bn1");
  add_bn (g, "bn2", TRUE, TRUE, "conv2");
  tw_graph_add (g, "tap", "add", NULL, "conv2", "bn2", NULL); /* conv2 read twice */
  add_conv (g, "conv3", 1, 3, 1, TRUE, "tap");
  tw_graph_add (g, "bcast", "add", NULL, "conv3", "tap", NULL); /* [N,1,8,8] + [N,4,8,8] */
  tw_graph_add (g, "relu", "relu", NULL, "bcast", NULL);
  tw_graph_set_outputs (g, (const char *[]){ "relu", NULL });
  g_assert_cmpint (tw_graph_infer (g), ==, 0);
  g_autoptr (tw_program) p = tw_program_build (g, 2, TW_PROGRAM_INFER, &error);
  g_assert_no_error (error);
  g_assert_true (tw_program_optimize (p, TW_PASS_ALL, &error));
  g_autofree char *dump = tw_program_dump (p);
  g_test_message ("%s", dump);
  g_assert_cmpint (count_op (p, "batch_norm"), ==, 2);
  g_assert_null (strstr (dump, "+batch_norm"));
  g_assert_null (strstr (dump, "+add"));

  /* And the program still computes what eager does. */
  g_autoptr (tw_params) params = tw_params_new ();
  g_autoptr (tw_compiled) c = tw_compiled_new (g, params, 1, &error);
  g_assert_no_error (error);
  randomise_bn (params, 8);
  g_autoptr (tw_tensor) x = make_x (2, 4);
  g_autoptr (tw_tensor) ref = eager_predict (m, params, x);
  g_autoptr (tw_tensor) out = compiled_predict (c, x);
  g_assert_cmpfloat (rel_err (out, ref), <=, RTOL);
}

/* conv + add + relu without batch norm (an imported model whose exporter
 * folded its batch norms already): the residual fusion alone. */
static void
test_residual_plain (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = tw_model_new ("fold-bn-plain");
  tw_graph *g = m->graph;
  tw_graph_add_input (g, "x", TW_F32, 3, (int64_t[]){ 3, 8, 8 }, "data");
  add_conv (g, "conv1", 6, 3, 1, TRUE, "x");
  tw_graph_add (g, "relu1", "relu", NULL, "conv1", NULL);
  add_conv (g, "conv2", 6, 3, 1, TRUE, "relu1");
  tw_graph_add (g, "add", "add", NULL, "relu1", "conv2", NULL);
  tw_graph_add (g, "relu2", "relu", NULL, "add", NULL);
  add_conv (g, "conv3", 6, 3, 1, FALSE, "relu2");
  tw_graph_add (g, "add2", "add", NULL, "conv3", "relu2", NULL); /* no relu after */
  tw_graph_set_outputs (g, (const char *[]){ "add2", NULL });
  g_assert_cmpint (tw_graph_infer (g), ==, 0);
  g_autoptr (tw_params) params = tw_params_new ();
  g_autoptr (tw_compiled) c = tw_compiled_new (g, params, 1, &error);
  g_assert_no_error (error);
  g_autoptr (tw_tensor) x = make_x (3, 5);
  g_autoptr (tw_tensor) out = compiled_predict (c, x);
  tw_program *p = tw_compiled_program (c, TW_PROGRAM_INFER, 3, &error);
  g_assert_cmpint (count_label (p, "fused conv2d+add+relu", "conv2, add, relu2"), ==, 1);
  g_assert_cmpint (count_label (p, "fused conv2d+add", "conv3, add2"), ==, 1);
  g_assert_cmpint (count_op (p, "add"), ==, 0);
  g_autoptr (tw_tensor) ref = eager_predict (m, params, x);
  g_assert_cmpfloat (rel_err (out, ref), <=, RTOL);
}

/* A depthwise block (MobileNet's: conv - bn - relu, depthwise conv (groups
 * = channels) - bn - relu, pointwise conv - bn, + the block's input): each
 * group's channels take their own batch norm's scale and shift; batches of
 * 1 (the GEMM straight into the output) and 7 (im2col over several
 * samples). */
static void
test_grouped (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = tw_model_new ("fold-bn-grouped");
  tw_graph *g = m->graph;
  tw_graph_add_input (g, "x", TW_F32, 3, (int64_t[]){ 3, 8, 8 }, "data");
  add_conv (g, "conv1", 6, 3, 1, FALSE, "x");
  add_bn (g, "bn1", TRUE, TRUE, "conv1");
  tw_graph_add (g, "relu1", "relu", NULL, "bn1", NULL);
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, "out_channels", 6);
  tw_attrs_set_int (a, "kernel_size", 3);
  tw_attrs_set_int (a, "padding", 1);
  tw_attrs_set_int (a, "groups", 6);
  tw_graph_add (g, "dw", "conv2d", a, "relu1", NULL);
  tw_attrs_free (a);
  add_bn (g, "bndw", TRUE, TRUE, "dw");
  tw_graph_add (g, "reludw", "relu", NULL, "bndw", NULL);
  add_conv (g, "pw", 6, 1, 1, FALSE, "reludw");
  add_bn (g, "bnpw", TRUE, TRUE, "pw");
  tw_graph_add (g, "res", "add", NULL, "relu1", "bnpw", NULL);
  tw_graph_set_outputs (g, (const char *[]){ "res", NULL });
  g_assert_cmpint (tw_graph_infer (g), ==, 0);
  g_autoptr (tw_params) params = tw_params_new ();
  g_autoptr (tw_compiled) c = tw_compiled_new (g, params, 2, &error);
  g_assert_no_error (error);
  randomise_bn (params, 13);
  for (int64_t batch = 1; batch <= 7; batch += 6)
    {
      g_autoptr (tw_tensor) x = make_x (batch, 30 + batch);
      g_autoptr (tw_tensor) out = compiled_predict (c, x);
      g_autoptr (tw_tensor) ref = eager_predict (m, params, x);
      double e = rel_err (out, ref);
      g_test_message ("batch %" G_GINT64_FORMAT ": %.2e", batch, e);
      g_assert_cmpfloat (e, <=, RTOL);
      tw_program *p = tw_compiled_program (c, TW_PROGRAM_INFER, batch, &error);
      g_assert_cmpint (count_label (p, "fused conv2d+batch_norm+relu", "dw, bndw, reludw"), ==, 1);
      g_assert_cmpint (count_label (p, "fused conv2d+batch_norm+add", "pw, bnpw, res"), ==, 1);
      g_assert_cmpint (count_op (p, "batch_norm"), ==, 0);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  g_test_add_func ("/compile/fold-bn/matches-eager", test_matches_eager);
  g_test_add_func ("/compile/fold-bn/report", test_report);
  g_test_add_func ("/compile/fold-bn/follows-params", test_follows_params);
  g_test_add_func ("/compile/fold-bn/training-unchanged", test_training_unchanged);
  g_test_add_func ("/compile/fold-bn/not-folded", test_not_folded);
  g_test_add_func ("/compile/fold-bn/residual-plain", test_residual_plain);
  g_test_add_func ("/compile/fold-bn/grouped", test_grouped);
  return g_test_run ();
}
