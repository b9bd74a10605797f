/* test-compile.c — the compiled executor: parity with eager on the example
 * models and on random graphs, each pass on small programs, the memory plan
 * (independent liveness check and guard bytes), the program cache; training
 * programs started from fed gradients (tw_grad_spec) against the eager
 * executor's backward from the same gradients. */
#include "engine/compile/compiled.h"
#include "engine/device.h"
#include "engine/rng.h"
#include "engine/train.h"

#include <math.h>
#include <string.h>

static tw_attrs *
attrs_int (const char *name, int64_t v)
{
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, name, v);
  return a;
}

static char *
model_path (const char *name)
{
  const char *dir = g_getenv ("TWB_ASSETS_DIR");
  return g_build_filename (dir ? dir : TWB_ASSETS_DIR_FALLBACK, "models", name, NULL);
}

/* A deterministic batch for a model's data and label inputs. */
static void
make_batch (const tw_model *m, int64_t b, guint64 seed, int64_t classes, tw_tensor **x,
            tw_tensor **y)
{
  tw_node *src = tw_graph_find_source (m->graph, "data");
  int64_t shape[TW_MAX_DIMS];
  const tw_attr_value *sh = tw_attrs_lookup (src->attrs, "shape");
  shape[0] = b;
  for (int d = 0; d < sh->n; d++)
    shape[d + 1] = sh->ints[d];
  *x = tw_tensor_new (TW_F32, sh->n + 1, shape);
  tw_rng_fill_uniform (tw_tensor_f32 (*x), tw_tensor_numel (*x), seed, 1, 0.0f, 1.0f);
  *y = tw_tensor_new (TW_I64, 1, (int64_t[]) { b });
  for (int64_t i = 0; i < b; i++)
    tw_tensor_i64 (*y)[i] = (int64_t) (tw_rng_uniform (seed, 2, (uint64_t) i) * classes) % classes;
}

/* Float32 rounding: the compiled program runs the same kernels in the same
 * order as eager except where fusion merges loops (a fused epilogue rounds
 * once where two kernels rounded twice).  Over 20 SGD steps such differences
 * stay within ~1e-6 relative of the loss; 1e-4 leaves room for a few ulps of
 * drift per step on the larger models while any wrong gradient (a missing
 * contribution, a wrong rule) moves the loss by far more. */
#define PARITY_RTOL 1e-4

static void
check_parity (tw_model *m, int64_t batch, int64_t classes, int steps, gboolean quiet)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *text = tw_model_to_data (m, NULL);
  g_autoptr (tw_model) m2 = tw_model_load_from_data (text, -1, "copy", &error);
  g_assert_no_error (error);
  g_autoptr (tw_trainer) te = tw_trainer_new (m, &error);
  g_assert_no_error (error);
  g_autoptr (tw_trainer) tc = tw_trainer_new (m2, &error);
  g_assert_no_error (error);
  tw_trainer_set_mode (tc, TW_MODE_COMPILED);
  double worst = 0;

  for (int s = 0; s < steps; s++)
    {
      g_autoptr (tw_tensor) x = NULL;
      g_autoptr (tw_tensor) y = NULL;
      double le, lc;
      make_batch (m, batch, 100 + s, classes, &x, &y);
      g_assert_true (tw_trainer_step (te, x, y, &le, &error));
      g_assert_no_error (error);
      g_assert_true (tw_trainer_step (tc, x, y, &lc, &error));
      g_assert_no_error (error);
      double rel = fabs (le - lc) / MAX (1e-6, fabs (le));
      worst = MAX (worst, rel);
      if (rel > PARITY_RTOL)
        g_error ("%s step %d: eager loss %.9g, compiled %.9g", m->name, s, le, lc);
    }
  /* The same weights afterwards, to the same tolerance (normalised per tensor). */
  tw_params *pe = tw_trainer_params (te), *pc = tw_trainer_params (tc);
  g_assert_cmpint (tw_params_count (pe), ==, tw_params_count (pc));
  for (int i = 0; i < tw_params_count (pe); i++)
    {
      tw_param *a = tw_params_at (pe, i), *b = tw_params_get (pc, a->name);
      double maxd = 0, maxa = 0;
      for (int64_t k = 0; k < tw_tensor_numel (a->value); k++)
        {
          double va = tw_tensor_get_flat (a->value, k), vb = tw_tensor_get_flat (b->value, k);
          maxd = MAX (maxd, fabs (va - vb));
          maxa = MAX (maxa, fabs (va));
        }
      if (maxd / MAX (maxa, 1e-3) > PARITY_RTOL)
        g_error ("%s: parameter %s differs by %g (max |w| %g)", m->name, a->name, maxd, maxa);
    }
  if (!quiet)
    g_test_message ("%s: worst relative loss difference over %d steps: %.3g", m->name, steps,
                    worst);
}

static void
test_parity_examples (void)
{
  const struct
  {
    const char *file;
    int64_t batch, classes;
  } models[] = {
    { "mlp.json", 16, 10 },
    { "lenet5.json", 8, 10 },
    { "functional.json", 16, 10 },
    { "spirals.json", 32, 2 },
    /* mlp-gemm.json is mlp.json's architecture at 70x the parameters: skipped
     * to keep the suite quick. */
  };
  for (guint i = 0; i < G_N_ELEMENTS (models); i++)
    {
      g_autofree char *path = model_path (models[i].file);
      g_autoptr (GError) error = NULL;
      g_autoptr (tw_model) m = tw_model_load (path, &error);
      g_assert_no_error (error);
      check_parity (m, models[i].batch, models[i].classes, 20, FALSE);
    }
}

/* Random graphs over the op set: values are [N, d]; each new node applies a
 * unary op, joins two values of one width (add, mul, sub), concatenates, or
 * projects with a linear layer; some layers are shared; the head projects to 3
 * classes. */
static tw_model *
random_model (guint64 seed)
{
  tw_model *m = tw_model_new ("random");
  tw_graph *g = m->graph;
  static const char *const unary[] = { "relu", "tanh", "sigmoid", "gelu", "leaky_relu" };
  static const char *const binary[] = { "add", "mul", "sub" };
  g_autoptr (GPtrArray) ids = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GArray) width = g_array_new (FALSE, FALSE, sizeof (int64_t));
  int counter = 0;
  tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]) { 6 }, "data");
  tw_graph_add_input (g, "y", TW_I64, 0, NULL, "label");
  g_ptr_array_add (ids, g_strdup ("x"));
  int64_t w6 = 6;
  g_array_append_val (width, w6);
  int n_nodes = 6 + (int) (tw_rng_uniform (seed, 9, 0) * 8);
  for (int i = 0; i < n_nodes; i++)
    {
      float r = tw_rng_uniform (seed, 10, i);
      int a = (int) (tw_rng_uniform (seed, 11, i) * ids->len) % ids->len;
      const char *in_a = g_ptr_array_index (ids, a);
      int64_t wa = g_array_index (width, int64_t, a);
      g_autofree char *id = g_strdup_printf ("n%d", counter++);
      int64_t wout = wa;
      if (r < 0.3)
        {
          int64_t out = 4 + (int64_t) (tw_rng_uniform (seed, 12, i) * 6);
          tw_attrs *at = attrs_int ("out_features", out);
          tw_graph_add (g, id, "linear", at, in_a, NULL);
          tw_attrs_free (at);
          wout = out;
        }
      else if (r < 0.6)
        tw_graph_add (g, id, unary[(int) (tw_rng_uniform (seed, 13, i) * 5) % 5], NULL, in_a, NULL);
      else if (r < 0.85)
        {
          /* A partner of the same width, if any. */
          int b = -1;
          for (guint k = 0; k < ids->len; k++)
            if ((int) k != a && g_array_index (width, int64_t, k) == wa)
              b = (int) k;
          if (b < 0)
            tw_graph_add (g, id, "tanh", NULL, in_a, NULL);
          else
            tw_graph_add (g, id, binary[(int) (tw_rng_uniform (seed, 14, i) * 3) % 3], NULL, in_a,
                          (const char *) g_ptr_array_index (ids, b), NULL);
        }
      else
        {
          int b = (int) (tw_rng_uniform (seed, 15, i) * ids->len) % ids->len;
          tw_attrs *at = attrs_int ("axis", 1);
          tw_graph_add (g, id, "concat", at, in_a, (const char *) g_ptr_array_index (ids, b), NULL);
          tw_attrs_free (at);
          wout = wa + g_array_index (width, int64_t, b);
        }
      g_ptr_array_add (ids, g_strdup (id));
      g_array_append_val (width, wout);
    }
  /* Head over the last value plus a shared projection of the input. */
  tw_attrs *p = attrs_int ("out_features", 5), *h = attrs_int ("out_features", 3);
  tw_attrs *cat = attrs_int ("axis", 1);
  tw_graph_add (g, "px", "linear", p, "x", NULL);
  tw_graph_add (g, "tx", "tanh", NULL, "px", NULL);
  tw_node *sh = tw_graph_add (g, "px2", "linear", p, "tx", NULL);
  (void) sh;
  tw_graph_add (g, "join", "concat", cat, (const char *) g_ptr_array_index (ids, ids->len - 1),
                "px2", NULL);
  tw_graph_add (g, "head", "linear", h, "join", NULL);
  tw_graph_add (g, "loss", "cross_entropy", NULL, "head", "y", NULL);
  tw_graph_set_outputs (g, (const char *[]) { "head", NULL });
  tw_attrs_free (p);
  tw_attrs_free (h);
  tw_attrs_free (cat);
  m->recipe.optimizer.lr = 0.05;
  return m;
}

static void
test_parity_random (void)
{
  for (guint64 seed = 1; seed <= 25; seed++)
    {
      g_autoptr (tw_model) m = random_model (seed);
      g_assert_cmpint (tw_graph_infer (m->graph), ==, 0);
      /* Half of them with a shared layer: px2 uses px's parameters. */
      if (seed % 2 == 0)
        tw_graph_set_share (m->graph, tw_graph_find (m->graph, "px2"), "px");
      if (seed % 2 == 0)
        {
          /* px2 must then take 5 inputs like px: widen px to 5 → 5? px maps 6→5, so
           * sharing needs px2's input to be 6 wide: feed it x instead. */
          tw_graph_set_input_ref (m->graph, tw_graph_find (m->graph, "px2"), 0, "x");
        }
      g_assert_cmpint (tw_graph_infer (m->graph), ==, 0);
      check_parity (m, 12, 3, 20, TRUE);
    }
}

/* ---- passes on small programs ------------------------------------------- */

static tw_model *
tiny_model (gboolean duplicate)
{
  tw_model *m = tw_model_new ("tiny");
  tw_graph *g = m->graph;
  tw_attrs *a4 = attrs_int ("out_features", 4), *a3 = attrs_int ("out_features", 3);
  tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]) { 5 }, "data");
  tw_graph_add_input (g, "y", TW_I64, 0, NULL, "label");
  tw_graph_add (g, "fc", "linear", a4, "x", NULL);
  tw_graph_add (g, "r1", "relu", NULL, "fc", NULL);
  tw_graph_add (g, "r2", "relu", NULL, duplicate ? "fc" : "r1", NULL);
  tw_graph_add (g, "sum", "add", NULL, "r1", "r2", NULL);
  tw_graph_add (g, "head", "linear", a3, "sum", NULL);
  tw_graph_add (g, "loss", "cross_entropy", NULL, "head", "y", NULL);
  tw_graph_set_outputs (g, (const char *[]) { "head", NULL });
  tw_attrs_free (a4);
  tw_attrs_free (a3);
  return m;
}

static int
count_label (const tw_program *p, const char *label)
{
  int n = 0;
  for (guint i = 0; i < p->instrs->len; i++)
    n += strcmp (tw_program_instr (p, (int) i)->label, label) == 0;
  return n;
}

/* Losses of a few steps with a given set of passes. */
static void
losses_with (tw_model *m, tw_pass_flags passes, double *out, int steps)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_params) params = tw_params_new ();
  g_autoptr (tw_compiled) c = tw_compiled_new (m->graph, params, 3, &error);
  g_autoptr (tw_optimizer) opt = tw_optimizer_new (&m->recipe.optimizer);
  tw_compiled_set_passes (c, passes);
  tw_compiled_set_optimizer (c, opt);
  for (int s = 0; s < steps; s++)
    {
      g_autoptr (tw_tensor) x = NULL;
      g_autoptr (tw_tensor) y = NULL;
      make_batch (m, 6, 7 + s, 3, &x, &y);
      tw_optimizer_begin_step (opt, 0.1);
      g_assert_true (tw_compiled_run (c, TW_PROGRAM_STEP, x, y, s, &error));
      g_assert_no_error (error);
      out[s] = tw_compiled_loss_value (c);
    }
}

static void
test_pass_cse (void)
{
  g_autoptr (tw_model) m = tiny_model (TRUE);   /* r1 and r2 are both relu(fc) */
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_program) p = tw_program_build (m->graph, 6, TW_PROGRAM_INFER, &error);
  g_assert_cmpint (count_label (p, "relu"), ==, 2);
  g_assert_cmpint (tw_pass_cse (p), ==, 1);
  g_assert_cmpint (count_label (p, "relu"), ==, 1);
  /* The surviving relu covers both source nodes. */
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_instr *ins = tw_program_instr (p, (int) i);
      if (strcmp (ins->label, "relu") == 0)
        g_assert_cmpint (ins->sources->len, ==, 2);
    }
  double a[4], b[4];
  losses_with (m, 0, a, 4);
  losses_with (m, TW_PASS_CSE, b, 4);
  g_assert_cmpmem (a, sizeof a, b, sizeof b);
}

static void
test_pass_dce_constfold (void)
{
  g_autoptr (tw_model) m = tiny_model (FALSE);
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_program) p = tw_program_build (m->graph, 6, TW_PROGRAM_STEP, &error);
  g_assert_no_error (error);
  /* The backward of fc computes the gradient of its input x, which nothing
   * needs... the builder already skips it (x needs no gradient); add a dead
   * instruction and a foldable one by hand. */
  tw_tinfo info;
  tw_tinfo_set (&info, TW_F32, 1, (int64_t[]) { 3 });
  int c1 = tw_program_add_slot (p, TW_SLOT_CONST, &info, "c1");
  int c2 = tw_program_add_slot (p, TW_SLOT_CONST, &info, "c2");
  tw_program_slot (p, c1)->value = tw_tensor_from_data (TW_F32, 1, (int64_t[]) { 3 }, (float[]) { 1, 2, 3 });
  tw_program_slot (p, c2)->value = tw_tensor_from_data (TW_F32, 1, (int64_t[]) { 3 }, (float[]) { 10, 20, 30 });
  int sum = tw_program_add_slot (p, TW_SLOT_ACT, &info, "sum");
  tw_instr *ins = tw_instr_new (tw_op_lookup ("add"), NULL, NULL);
  ins->n_in = 2;
  ins->in[0] = c1;
  ins->in[1] = c2;
  ins->n_out = 1;
  ins->out[0] = sum;
  g_ptr_array_insert (p->instrs, 0, ins);
  tw_program_slot (p, sum)->keep = TRUE;   /* read by nothing, but kept: folded, not dropped */
  int dead = tw_program_add_slot (p, TW_SLOT_ACT, &info, "dead");
  tw_instr *d = tw_instr_new (tw_op_lookup ("relu"), NULL, NULL);
  d->n_in = 1;
  d->in[0] = sum;
  d->n_out = 1;
  d->out[0] = dead;
  g_ptr_array_insert (p->instrs, 1, d);
  tw_program_compact (p);
  int before = (int) p->instrs->len;

  g_assert_cmpint (tw_pass_constfold (p), ==, 2);    /* add(c1, c2), then relu of it */
  tw_slot *s = tw_program_slot (p, sum);
  g_assert_cmpint (s->kind, ==, TW_SLOT_CONST);
  g_assert_cmpfloat (tw_tensor_f32 (s->value)[2], ==, 33.0f);
  g_assert_cmpint (tw_program_slot (p, dead)->kind, ==, TW_SLOT_CONST);
  g_assert_cmpint ((int) p->instrs->len, ==, before - 2);

  /* DCE: an instruction whose output nobody reads goes. */
  int dead2 = tw_program_add_slot (p, TW_SLOT_ACT, &tw_program_slot (p, p->loss_slot)->info, "dead2");
  tw_instr *e = tw_instr_new (tw_op_lookup ("neg"), NULL, NULL);
  e->n_in = 1;
  e->in[0] = p->loss_slot;
  e->n_out = 1;
  e->out[0] = dead2;
  g_ptr_array_add (p->instrs, e);
  tw_program_compact (p);
  g_assert_cmpint (tw_pass_dce (p), ==, 1);
  g_assert_cmpint (count_label (p, "neg"), ==, 0);
  /* Updates have no outputs but stay. */
  g_assert_cmpint (count_label (p, "optimizer update"), ==, 4);
}

static void
test_pass_inplace (void)
{
  g_autoptr (tw_model) m = tiny_model (FALSE);
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_program) p = tw_program_build (m->graph, 6, TW_PROGRAM_INFER, &error);
  int shared = tw_pass_inplace (p);
  /* r2 = relu(r1): r1 is still read by sum, so it cannot be overwritten;
   * sum = add(r1, r2) is the last reader of both: it reuses one of them. */
  g_assert_cmpint (shared, >=, 1);
  gboolean sum_aliased = FALSE;
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_instr *ins = tw_program_instr (p, (int) i);
      if (strcmp (ins->label, "add") == 0)
        sum_aliased = tw_program_slot (p, ins->out[0])->alias_of >= 0;
      if (strcmp (ins->label, "relu") == 0 && g_strcmp0 (g_ptr_array_index (ins->sources, 0), "r2") == 0)
        g_assert_cmpint (tw_program_slot (p, ins->out[0])->alias_of, <, 0);
    }
  g_assert_true (sum_aliased);
  double a[4], b[4];
  losses_with (m, 0, a, 4);
  losses_with (m, TW_PASS_INPLACE, b, 4);
  g_assert_cmpmem (a, sizeof a, b, sizeof b);
}

static int
root (const tw_program *p, int s)
{
  while (tw_program_slot (p, s)->alias_of >= 0)
    s = tw_program_slot (p, s)->alias_of;
  return s;
}

/* Independent check of a memory plan: any two arena buffers live at the same
 * time (from the first write to the last read of any slot sharing them;
 * kept slots to the end) occupy disjoint bytes. */
static void
check_plan (const tw_program *p)
{
  int ns = (int) p->slots->len, ni = (int) p->instrs->len;
  g_autofree int *first = g_new (int, ns), *last = g_new (int, ns);
  for (int s = 0; s < ns; s++)
    {
      first[s] = G_MAXINT;
      last[s] = -1;
    }
  for (int i = 0; i < ni; i++)
    {
      tw_instr *ins = tw_program_instr (p, i);
      for (int k = 0; k < ins->n_out; k++)
        {
          int r = root (p, ins->out[k]);
          first[r] = MIN (first[r], i);
          last[r] = MAX (last[r], i);
        }
      for (int k = 0; k < ins->n_in; k++)
        last[root (p, ins->in[k])] = MAX (last[root (p, ins->in[k])], i);
    }
  for (int s = 0; s < ns; s++)
    if (tw_program_slot (p, s)->keep)
      last[root (p, s)] = ni;
  for (int a = 0; a < ns; a++)
    for (int b = a + 1; b < ns; b++)
      {
        tw_slot *sa = tw_program_slot (p, a), *sb = tw_program_slot (p, b);
        if (sa->kind != TW_SLOT_ACT || sb->kind != TW_SLOT_ACT || sa->offset < 0 || sb->offset < 0)
          continue;
        int ra = root (p, a), rb = root (p, b);
        if (ra == rb || a != ra || b != rb)
          continue;
        gboolean live = !(last[ra] < first[rb] || last[rb] < first[ra]);
        size_t la = tw_tinfo_numel (&sa->info, NULL) * tw_dtype_size (sa->info.dtype);
        size_t lb = tw_tinfo_numel (&sb->info, NULL) * tw_dtype_size (sb->info.dtype);
        gboolean mem = sa->offset < sb->offset + (int64_t) lb && sb->offset < sa->offset + (int64_t) la;
        if (live && mem)
          g_error ("slots %d and %d are live together but overlap in the arena", a, b);
      }
  g_assert_cmpuint (p->arena_bytes, <=, p->unplanned_bytes + 64 * (p->slots->len + 2));
}

static void
test_memory_plan (void)
{
  const char *files[] = { "mlp.json", "lenet5.json", "functional.json" };
  for (guint i = 0; i < G_N_ELEMENTS (files); i++)
    {
      g_autofree char *path = model_path (files[i]);
      g_autoptr (GError) error = NULL;
      g_autoptr (tw_model) m = tw_model_load (path, &error);
      g_autoptr (tw_params) params = tw_params_new ();
      g_autoptr (tw_compiled) c = tw_compiled_new (m->graph, params, 1, &error);
      g_autoptr (tw_optimizer) opt = tw_optimizer_new (&m->recipe.optimizer);
      tw_compiled_set_guards (c, TRUE);
      tw_compiled_set_optimizer (c, opt);
      for (int s = 0; s < 3; s++)
        {
          g_autoptr (tw_tensor) x = NULL;
          g_autoptr (tw_tensor) y = NULL;
          make_batch (m, 8, s, 10, &x, &y);
          tw_optimizer_begin_step (opt, 0.01);
          g_assert_true (tw_compiled_run (c, TW_PROGRAM_STEP, x, y, s, &error));
          g_assert_no_error (error);
        }
      g_assert_true (tw_compiled_check_guards (c, &error));
      g_assert_no_error (error);
      check_plan (tw_compiled_program (c, TW_PROGRAM_STEP, 8, &error));
      /* Planning reuses memory: the arena is well below the sum of the slots. */
      tw_program *p = tw_compiled_program (c, TW_PROGRAM_STEP, 8, &error);
      g_assert_cmpuint (p->arena_bytes, <, p->unplanned_bytes);
    }
}

/* The weight gradient of each linear layer is applied in row blocks by one
 * fused instruction: the full gradient never takes arena space. */
static void
test_fuse_updates (void)
{
  g_autofree char *path = model_path ("mlp.json");
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = tw_model_load (path, &error);
  g_autoptr (tw_program) plain = tw_program_build (m->graph, 64, TW_PROGRAM_STEP, &error);
  g_autoptr (tw_program) fused = tw_program_build (m->graph, 64, TW_PROGRAM_STEP, &error);
  g_assert_true (tw_program_optimize (plain, TW_PASS_ALL & ~TW_PASS_FUSE, &error));
  g_assert_true (tw_program_optimize (fused, TW_PASS_ALL, &error));
  g_assert_cmpint (count_label (plain, "fused linear_grad_weight+update"), ==, 0);
  g_assert_cmpint (count_label (fused, "fused linear_grad_weight+update"), ==, 3);
  /* fc1's weight gradient alone is 784 x 256 x 4 = 802816 bytes. */
  g_assert_cmpuint (plain->arena_bytes, >, 802816);
  g_assert_cmpuint (fused->arena_bytes, <, 802816 / 2);
  check_plan (fused);
}

static void
test_cache (void)
{
  g_autoptr (tw_model) m = tiny_model (FALSE);
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_params) params = tw_params_new ();
  g_autoptr (tw_compiled) c = tw_compiled_new (m->graph, params, 3, &error);
  g_autoptr (tw_optimizer) opt = tw_optimizer_new (&m->recipe.optimizer);
  tw_compiled_set_optimizer (c, opt);
  int64_t sizes[] = { 6, 6, 4, 6, 4 };
  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++)
    {
      g_autoptr (tw_tensor) x = NULL;
      g_autoptr (tw_tensor) y = NULL;
      make_batch (m, sizes[i], i, 3, &x, &y);
      tw_optimizer_begin_step (opt, 0.1);
      g_assert_true (tw_compiled_run (c, TW_PROGRAM_STEP, x, y, i, &error));
      g_assert_no_error (error);
      g_assert_cmpint (tw_compiled_prediction (c)->shape[0], ==, sizes[i]);
    }
  /* Two programs: batch 6 on first use, batch 4 as a new shape; repeats hit. */
  const GPtrArray *notes = tw_compiled_notes (c);
  g_assert_cmpuint (notes->len, ==, 2);
  g_assert_nonnull (strstr (g_ptr_array_index (notes, 0), "batch 6"));
  g_assert_nonnull (strstr (g_ptr_array_index (notes, 0), "first use"));
  g_assert_nonnull (strstr (g_ptr_array_index (notes, 1), "batch 4"));
  g_assert_nonnull (strstr (g_ptr_array_index (notes, 1), "new input shape"));
  /* After the cache is emptied the next program's note says why, not "first use". */
  tw_compiled_invalidate (c);
  {
    g_autoptr (tw_tensor) x = NULL;
    g_autoptr (tw_tensor) y = NULL;
    make_batch (m, 6, 0, 3, &x, &y);
    tw_optimizer_begin_step (opt, 0.1);
    g_assert_true (tw_compiled_run (c, TW_PROGRAM_STEP, x, y, 7, &error));
  }
  g_assert_cmpuint (notes->len, ==, 3);
  g_assert_nonnull (strstr (g_ptr_array_index (notes, 2), "recompiled on request"));

  /* A wrong sample shape is refused with the input named. */
  g_autoptr (tw_tensor) bad = tw_tensor_zeros (TW_F32, 2, (int64_t[]) { 6, 7 });
  g_autoptr (tw_tensor) y = tw_tensor_zeros (TW_I64, 1, (int64_t[]) { 6 });
  g_assert_false (tw_compiled_run (c, TW_PROGRAM_STEP, bad, y, 9, &error));
  g_assert_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT);
  g_assert_nonnull (strstr (error->message, "'x'"));
}

/* The loss is checked before any update: a NaN step leaves the weights alone. */
static void
test_nan_before_update (void)
{
  g_autoptr (tw_model) m = tiny_model (FALSE);
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_params) params = tw_params_new ();
  g_autoptr (tw_compiled) c = tw_compiled_new (m->graph, params, 3, &error);
  g_autoptr (tw_optimizer) opt = tw_optimizer_new (&m->recipe.optimizer);
  tw_compiled_set_optimizer (c, opt);
  g_autoptr (tw_tensor) x = NULL;
  g_autoptr (tw_tensor) y = NULL;
  make_batch (m, 6, 1, 3, &x, &y);
  /* relu would turn a NaN input into 0; a NaN in the head's bias reaches the loss. */
  tw_tensor_f32 (tw_params_get (params, "head.bias")->value)[1] = NAN;
  g_autoptr (tw_tensor) before = tw_tensor_clone (tw_params_get (params, "fc.weight")->value);
  tw_optimizer_begin_step (opt, 0.1);
  g_assert_false (tw_compiled_run (c, TW_PROGRAM_STEP, x, y, 0, &error));
  g_assert_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_NAN);
  tw_tensor *after = tw_params_get (params, "fc.weight")->value;
  g_assert_cmpmem (tw_tensor_data (before), tw_tensor_nbytes (before), tw_tensor_data (after),
                   tw_tensor_nbytes (after));
}

typedef struct
{
  int before[3], after[3];
  int stop_after;
  GString *fwd;
} hook_log;

static gboolean
on_event (const tw_event *ev, gpointer user)
{
  hook_log *l = user;
  int ph = ev->ident->phase;
  g_assert_true (ev->compiled);
  g_assert_cmpint (ev->ident->n_nodes, >, 0);
  if (ev->end)
    {
      l->after[ph]++;
      return TRUE;
    }
  l->before[ph]++;
  if (ph == TW_PHASE_FORWARD)
    {
      for (int k = 0; k < ev->ident->n_nodes; k++)
        g_string_append_printf (l->fwd, "%s%s", k ? "+" : "", ev->ident->nodes[k]);
      g_string_append_c (l->fwd, ' ');
    }
  return l->stop_after < 0 || l->before[TW_PHASE_FORWARD] <= l->stop_after;
}

/* The compiled executor publishes the same events as eager, once per
 * instruction, naming every graph node the instruction covers; a client can
 * stop it. */
static void
test_hooks (void)
{
  g_autoptr (tw_model) m = tiny_model (FALSE);
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_params) params = tw_params_new ();
  g_autoptr (tw_compiled) c = tw_compiled_new (m->graph, params, 3, &error);
  g_autoptr (tw_optimizer) opt = tw_optimizer_new (&m->recipe.optimizer);
  hook_log log = { { 0 }, { 0 }, -1, g_string_new (NULL) };
  g_autoptr (tw_bus) bus = tw_bus_new ();
  tw_bus_subscribe (bus, TW_EV_MASK_OPS, on_event, &log, NULL);
  tw_compiled_set_optimizer (c, opt);
  tw_compiled_set_bus (c, bus);
  g_autoptr (tw_tensor) x = NULL;
  g_autoptr (tw_tensor) y = NULL;
  make_batch (m, 6, 1, 3, &x, &y);
  tw_optimizer_begin_step (opt, 0.1);
  g_assert_true (tw_compiled_run (c, TW_PROGRAM_STEP, x, y, 0, &error));
  tw_program *p = tw_compiled_program (c, TW_PROGRAM_STEP, 6, &error);
  int n_fwd = 0, n_bwd = 0, n_upd = 0;
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_instr *ins = tw_program_instr (p, (int) i);
      n_fwd += ins->phase == TW_PHASE_FORWARD;
      n_bwd += ins->phase == TW_PHASE_BACKWARD;
      n_upd += ins->phase == TW_PHASE_UPDATE;
    }
  g_assert_cmpint (log.before[TW_PHASE_FORWARD], ==, n_fwd);
  g_assert_cmpint (log.after[TW_PHASE_BACKWARD], ==, n_bwd);
  g_assert_cmpint (log.after[TW_PHASE_UPDATE], ==, n_upd);
  g_assert_cmpint (n_upd, ==, 4);
  /* fc and relu r1 are one fused instruction naming both nodes. */
  g_assert_true (g_str_has_prefix (log.fwd->str, "fc+r1 "));

  /* Stopping in the forward leaves the parameters as they were. */
  g_autoptr (tw_tensor) before = tw_tensor_clone (tw_params_get (params, "fc.weight")->value);
  log.stop_after = 1;
  memset (log.before, 0, sizeof log.before);
  tw_optimizer_begin_step (opt, 0.1);
  g_assert_false (tw_compiled_run (c, TW_PROGRAM_STEP, x, y, 1, &error));
  g_assert_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_STOPPED);
  tw_tensor *after = tw_params_get (params, "fc.weight")->value;
  g_assert_cmpmem (tw_tensor_data (before), tw_tensor_nbytes (before), tw_tensor_data (after),
                   tw_tensor_nbytes (after));
  g_string_free (log.fwd, TRUE);
}

/* ---- seeded backward, input gradients, accumulation ------------------------------------- */

/* A first pipeline stage's shape: two received values in, two out (t is
 * also read inside, so its gradient is the seed plus what fc2 sends
 * back), dropout between. */
static tw_graph *
stage_graph_first (void)
{
  tw_graph *g = tw_graph_new ();
  tw_attrs *a4 = attrs_int ("out_features", 4), *a3 = attrs_int ("out_features", 3);
  tw_attrs *drop = tw_attrs_new ();
  tw_attrs_set_float (drop, "p", 0.3);
  tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]) { 5 }, "other");
  tw_graph_add_input (g, "h", TW_F32, 1, (int64_t[]) { 4 }, "other");
  tw_graph_add (g, "fc1", "linear", a4, "x", NULL);
  tw_graph_add (g, "t", "tanh", NULL, "fc1", NULL);
  tw_graph_add (g, "sum", "add", NULL, "t", "h", NULL);
  tw_graph_add (g, "drop", "dropout", drop, "sum", NULL);
  tw_graph_add (g, "fc2", "linear", a3, "drop", NULL);
  tw_graph_set_outputs (g, (const char *[]) { "fc2", "t", NULL });
  tw_attrs_free (a4);
  tw_attrs_free (a3);
  tw_attrs_free (drop);
  return g;
}

/* A last stage's: a received value in, the loss at the end. */
static tw_graph *
stage_graph_last (void)
{
  tw_graph *g = tw_graph_new ();
  tw_attrs *a3 = attrs_int ("out_features", 3);
  tw_graph_add_input (g, "h", TW_F32, 1, (int64_t[]) { 4 }, "other");
  tw_graph_add_input (g, "y", TW_I64, 0, NULL, "label");
  tw_graph_add (g, "fc", "linear", a3, "h", NULL);
  tw_graph_add (g, "r", "relu", NULL, "fc", NULL);
  tw_graph_add (g, "loss", "cross_entropy", NULL, "r", "y", NULL);
  tw_attrs_free (a3);
  return g;
}

static tw_tensor *
random_tensor (int64_t rows, int64_t cols, guint64 seed)
{
  tw_tensor *t = tw_tensor_new (TW_F32, 2, (int64_t[]) { rows, cols });
  tw_rng_fill_uniform (tw_tensor_f32 (t), tw_tensor_numel (t), seed, 1, -1.0f, 1.0f);
  return t;
}

/* Float32: both executors run the same kernels on the same values except
 * where fusion merges loops (an epilogue rounds once where two kernels
 * rounded twice) and where contributions to one gradient add in another
 * order: a few ulps (~1e-7) of the largest value.  1e-5 of it leaves room
 * for that; a missing, doubled or unweighted contribution is O(1). */
#define SEEDED_TOL 1e-5

static void
assert_close (const char *what, tw_tensor *a, tw_tensor *b)
{
  g_assert_nonnull (a);
  g_assert_nonnull (b);
  g_assert_cmpint (tw_tensor_numel (a), ==, tw_tensor_numel (b));
  double scale = 1, worst = 0;
  for (int64_t i = 0; i < tw_tensor_numel (b); i++)
    scale = MAX (scale, fabs (tw_tensor_get_flat (b, i)));
  for (int64_t i = 0; i < tw_tensor_numel (b); i++)
    worst = MAX (worst, fabs (tw_tensor_get_flat (a, i) - tw_tensor_get_flat (b, i)));
  if (worst > SEEDED_TOL * scale)
    g_error ("%s: %g apart (scale %g; compiled first, reference second)", what, worst, scale);
}

/* grad_ready of an accumulating program: what the store holds then (it
 * must be final: a data-parallel all-reduce reads it there). */
static gboolean
on_grad_ready_copy (const tw_event *ev, gpointer user)
{
  GHashTable *seen = user;
  if (ev->param && ev->param->grad)
    g_hash_table_insert (seen, g_strdup (ev->param->name), tw_tensor_clone (ev->param->grad));
  return TRUE;
}

/* Two micro-batches as a pipeline stage runs them: both forwards (two
 * executors in flight), then both backwards from given gradients, the
 * first setting the parameters' gradients and the second adding to them;
 * the compiled programs against the eager executor on the same graph. */
static void
check_seeded (tw_graph *(*make) (void), const char *const *seeds, const char *const *inputs)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_graph) ge = make ();
  g_autoptr (tw_graph) gc = make ();
  g_autoptr (tw_params) pe = tw_params_new ();
  g_autoptr (tw_params) pc = tw_params_new ();
  tw_eager *e[2] = { NULL, NULL };
  tw_compiled *c[2] = { NULL, NULL };
  gboolean has_loss = tw_graph_find_loss (ge) != NULL;
  tw_grad_spec spec = { .seeds = seeds, .grad_inputs = inputs, .accumulate = TRUE };
  g_autoptr (GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                                       (GDestroyNotify) tw_tensor_unref);
  g_autoptr (tw_bus) bus = tw_bus_new ();
  tw_bus_subscribe (bus, TW_EV_BIT (TW_EV_GRAD_READY), on_grad_ready_copy, seen, NULL);
  for (int k = 0; k < 2; k++)
    {
      e[k] = tw_eager_new (ge, pe, 3, &error);
      g_assert_no_error (error);
      tw_eager_set_grad_inputs (e[k], inputs);
      c[k] = tw_compiled_new (gc, pc, 3, &error);
      g_assert_no_error (error);
      tw_compiled_set_grads (c[k], &spec);
      tw_compiled_set_bus (c[k], bus);
    }
  int64_t rows[2] = { 6, 4 };   /* two batch sizes: two programs */
  tw_tensor *held[2][8] = { { 0 } };
  for (int k = 0; k < 2; k++)
    {
      tw_feed feeds[4];
      int n = 0;
      for (const char *const *id = inputs; *id; id++)
        {
          const tw_node *in = tw_graph_find (ge, *id);
          held[k][n] = random_tensor (rows[k], in->out_info[0].dims[1], 40 + 10 * k + n);
          feeds[n] = (tw_feed) { *id, held[k][n] };
          n++;
        }
      if (has_loss)
        {
          tw_tensor *y = tw_tensor_new (TW_I64, 1, (int64_t[]) { rows[k] });
          for (int64_t i = 0; i < rows[k]; i++)
            tw_tensor_i64 (y)[i] = (i * 7 + k) % 3;
          held[k][n] = y;
          feeds[n++] = (tw_feed) { "y", y };
        }
      g_assert_true (tw_eager_forward_feeds (e[k], feeds, n, has_loss, TRUE, 5, &error));
      g_assert_no_error (error);
      g_assert_true (tw_compiled_forward_feeds (c[k], feeds, n, 5, &error));
      g_assert_no_error (error);
      if (has_loss)
        g_assert_cmpfloat (fabs (tw_eager_loss_value (e[k]) - tw_compiled_loss_value (c[k])), <=,
                           SEEDED_TOL * MAX (1, fabs (tw_eager_loss_value (e[k]))));
      for (const char *const *r = seeds; *r; r++)
        if (strcmp (*r, "loss") != 0)
          {
            g_autofree char *what = g_strdup_printf ("micro-batch %d value %s", k, *r);
            assert_close (what, tw_compiled_output (c[k], *r), tw_eager_value (e[k], *r));
          }
    }
  for (int k = 0; k < 2; k++)
    {
      tw_feed g[4];
      int n = 0;
      g_autoptr (GPtrArray) gs = g_ptr_array_new_with_free_func ((GDestroyNotify) tw_tensor_unref);
      for (const char *const *r = seeds; *r; r++)
        {
          tw_tensor *t;
          if (strcmp (*r, "loss") == 0)
            {
              /* The micro-batch's share of the batch's mean loss. */
              t = tw_tensor_new_like (tw_eager_loss (e[k]));
              tw_tensor_fill (t, (double) rows[k] / (rows[0] + rows[1]));
            }
          else
            {
              tw_tensor *v = tw_eager_value (e[k], *r);
              t = random_tensor (rows[k], tw_tensor_numel (v) / rows[k], 70 + 10 * k + n);
            }
          g_ptr_array_add (gs, t);
          g[n++] = (tw_feed) { *r, t };
        }
      g_assert_true (tw_eager_backward_from (e[k], g, n, k == 0, &error));
      g_assert_no_error (error);
      g_assert_true (tw_compiled_backward_from (c[k], g, n, k == 0, &error));
      g_assert_no_error (error);
      for (const char *const *id = inputs; *id; id++)
        {
          g_autofree char *what = g_strdup_printf ("micro-batch %d d/d%s", k, *id);
          assert_close (what, tw_compiled_input_grad (c[k], *id), tw_eager_input_grad (e[k], *id));
        }
    }
  /* Both micro-batches' parameter gradients, summed. */
  for (int i = 0; i < tw_params_count (pe); i++)
    {
      tw_param *a = tw_params_at (pe, i);
      if (!a->trainable)
        continue;
      tw_param *b = tw_params_get (pc, a->name);
      g_assert_nonnull (b);
      assert_close (a->name, b->value, a->value);
      assert_close (a->name, b->grad, a->grad);
      g_autofree char *what = g_strdup_printf ("%s at grad_ready", a->name);
      assert_close (what, g_hash_table_lookup (seen, a->name), b->grad);
    }
  for (int k = 0; k < 2; k++)
    {
      for (int n = 0; n < 8; n++)
        g_clear_pointer (&held[k][n], tw_tensor_unref);
      tw_eager_free (e[k]);
      tw_compiled_free (c[k]);
    }
}

static void
test_seeded_backward (void)
{
  check_seeded (stage_graph_first, (const char *[]) { "fc2", "t", NULL },
                (const char *[]) { "x", "h", NULL });
  check_seeded (stage_graph_last, (const char *[]) { "loss", NULL },
                (const char *[]) { "h", NULL });

  /* The program: seed slots instead of the constant 1, the inputs'
   * gradients kept, accumulate instructions instead of kept gradients, and
   * the forward part ends before the first seed is read. */
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_graph) g = stage_graph_first ();
  tw_grad_spec spec = { .seeds = (const char *[]) { "fc2", "t", NULL },
                        .grad_inputs = (const char *[]) { "x", NULL },
                        .accumulate = TRUE };
  g_autoptr (tw_program) p = tw_program_build_grads (g, 4, TW_PROGRAM_TRAIN, &spec, &error);
  g_assert_no_error (error);
  g_assert_true (tw_program_optimize (p, TW_PASS_ALL, &error));
  g_assert_cmpint (g_hash_table_size (p->seed_slot), ==, 2);
  g_assert_true (g_hash_table_contains (p->input_grad_slot, "x"));
  g_assert_false (g_hash_table_contains (p->input_grad_slot, "h"));
  g_assert_cmpint (p->n_accumulates, ==, 4);   /* fc1 and fc2: weight and bias */
  g_assert_cmpint (count_label (p, TW_GRAD_ACCUMULATE_LABEL), ==, 4);
  int start = tw_program_backward_start (p);
  g_assert_cmpint (start, >, 0);
  for (int i = 0; i < (int) p->instrs->len; i++)
    for (int k = 0; k < tw_program_instr (p, i)->n_in; k++)
      if (tw_program_slot (p, tw_program_instr (p, i)->in[k])->kind == TW_SLOT_SEED)
        g_assert_cmpint (i, >=, start);
  /* Errors name what is wrong. */
  tw_grad_spec bad = { .seeds = (const char *[]) { "nope", NULL } };
  g_assert_null (tw_program_build_grads (g, 4, TW_PROGRAM_TRAIN, &bad, &error));
  g_assert_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT);
  g_assert_nonnull (strstr (error->message, "nope"));
  g_clear_error (&error);
  tw_grad_spec bad_in = { .seeds = spec.seeds, .grad_inputs = (const char *[]) { "fc1", NULL } };
  g_assert_null (tw_program_build_grads (g, 4, TW_PROGRAM_TRAIN, &bad_in, &error));
  g_assert_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT);
  g_clear_error (&error);
  /* A seeded program does not run whole, and backward needs its seeds. */
  g_autoptr (tw_params) params = tw_params_new ();
  g_autoptr (tw_compiled) c = tw_compiled_new (g, params, 3, &error);
  tw_compiled_set_grads (c, &spec);
  g_autoptr (tw_tensor) x = random_tensor (4, 5, 1);
  g_autoptr (tw_tensor) h = random_tensor (4, 4, 2);
  tw_feed feeds[] = { { "x", x }, { "h", h } };
  g_assert_false (tw_compiled_run_feeds (c, TW_PROGRAM_TRAIN, feeds, 2, 0, &error));
  g_assert_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT);
  g_clear_error (&error);
  g_assert_false (tw_compiled_backward_from (c, NULL, 0, TRUE, &error));
  g_assert_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT);
  g_clear_error (&error);
  g_assert_true (tw_compiled_forward_feeds (c, feeds, 2, 0, &error));
  g_assert_no_error (error);
  g_autoptr (tw_tensor) gfc2 = random_tensor (4, 3, 3);
  g_assert_false (tw_compiled_backward_from (c, &(tw_feed) { "fc2", gfc2 }, 1, TRUE, &error));
  g_assert_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT);
  g_assert_nonnull (strstr (error->message, "'t'"));
  g_clear_error (&error);
  /* A value named twice (sent to two later stages): its gradients add. */
  g_autoptr (tw_tensor) gt = random_tensor (4, 4, 4);
  g_autoptr (tw_tensor) twice = tw_tensor_clone (gfc2);
  for (int64_t i = 0; i < tw_tensor_numel (twice); i++)
    tw_tensor_f32 (twice)[i] *= 2;
  tw_feed once[] = { { "fc2", twice }, { "t", gt } };
  tw_feed split[] = { { "fc2", gfc2 }, { "t", gt }, { "fc2", gfc2 } };
  g_assert_true (tw_compiled_forward_feeds (c, feeds, 2, 0, &error));
  g_assert_true (tw_compiled_backward_from (c, once, 2, TRUE, &error));
  g_assert_no_error (error);
  g_autoptr (tw_tensor) gx_once = tw_tensor_clone (tw_compiled_input_grad (c, "x"));
  g_assert_true (tw_compiled_forward_feeds (c, feeds, 2, 0, &error));
  g_assert_true (tw_compiled_backward_from (c, split, 3, TRUE, &error));
  g_assert_no_error (error);
  assert_close ("d/dx, fc2 named twice", tw_compiled_input_grad (c, "x"), gx_once);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  tw_set_num_threads (1);
  g_test_add_func ("/engine/compile/parity/examples", test_parity_examples);
  g_test_add_func ("/engine/compile/parity/random", test_parity_random);
  g_test_add_func ("/engine/compile/pass/cse", test_pass_cse);
  g_test_add_func ("/engine/compile/pass/dce-constfold", test_pass_dce_constfold);
  g_test_add_func ("/engine/compile/pass/inplace", test_pass_inplace);
  g_test_add_func ("/engine/compile/memory-plan", test_memory_plan);
  g_test_add_func ("/engine/compile/cache", test_cache);
  g_test_add_func ("/engine/compile/hooks", test_hooks);
  g_test_add_func ("/engine/compile/fuse-updates", test_fuse_updates);
  g_test_add_func ("/engine/compile/nan-before-update", test_nan_before_update);
  g_test_add_func ("/engine/compile/seeded-backward", test_seeded_backward);
  return g_test_run ();
}
