/* test-session-names.c — the names the debugger shows for the tensors of
 * every op it stops at (engine/session.h tw_snapshot_tensor): stepping op
 * by op through a whole iteration, eager (each kernel of each backward
 * rule) and compiled (each instruction), no tensor is "input 0" or
 * "output 0" or a slot number; the names follow the data: a value named
 * after what made it ("matmul(grad:fc2, fc2.weight)") was made, with the
 * same bytes, by an earlier op of that name; every other name is a node's
 * output, a parameter or a gradient the graph has; and each is described
 * in words ("gradient of fc2's output"). */
#include "engine/compile/compiled.h"
#include "engine/compile/program.h"
#include "engine/data.h"
#include "engine/session.h"
#include "engine/train.h"
#include "opcheck.h"

#include <math.h>

#include <string.h>



/* x [2] → fc1 (8) → relu → fc2 (4) → tanh → ÷ exp → fc3 (2) → cross entropy. */
static tw_model *
make_model (void)
{
  tw_model *m = tw_model_new ("names");
  tw_attrs *a = twt_attrs_int ("out_features", 8), *b = twt_attrs_int ("out_features", 4),
           *c = twt_attrs_int ("out_features", 2);
  tw_graph_add_input (m->graph, "x", TW_F32, 1, (int64_t[]) { 2 }, "data");
  tw_graph_add_input (m->graph, "y", TW_I64, 0, NULL, "label");
  tw_graph_add (m->graph, "fc1", "linear", a, "x", NULL);
  tw_graph_add (m->graph, "act", "relu", NULL, "fc1", NULL);
  tw_graph_add (m->graph, "fc2", "linear", b, "act", NULL);
  tw_graph_add (m->graph, "act2", "tanh", NULL, "fc2", NULL);
  /* q = act2 / exp (act2): div's backward passes dy / b on to a mul. */
  tw_graph_add (m->graph, "e", "exp", NULL, "act2", NULL);
  tw_graph_add (m->graph, "q", "div", NULL, "act2", "e", NULL);
  tw_graph_add (m->graph, "fc3", "linear", c, "q", NULL);
  tw_graph_add (m->graph, "loss", "cross_entropy", NULL, "fc3", "y", NULL);
  tw_graph_set_outputs (m->graph, (const char *[]) { "fc3", NULL });
  tw_attrs_free (a);
  tw_attrs_free (b);
  tw_attrs_free (c);
  m->recipe.batch_size = 8;
  m->recipe.epochs = 1;
  return m;
}

static gboolean
same_bytes (const tw_tensor *a, const tw_tensor *b)
{
  if (a->ndim != b->ndim || a->dtype != b->dtype || tw_tensor_numel (a) != tw_tensor_numel (b))
    return FALSE;
  for (int64_t i = 0; i < tw_tensor_numel (a); i++)
    if (tw_tensor_get_flat (a, i) != tw_tensor_get_flat (b, i))
      return FALSE;
  return TRUE;
}

/* A name of the graph's own: a node's output, a parameter, a gradient of
 * either. */
static gboolean
graph_name (const tw_model *m, const char *name)
{
  const char *of = g_str_has_prefix (name, "grad:") ? name + 5 : name;
  g_autofree char *id = NULL;
  int k;
  if (tw_ref_parse (of, &id, &k) && tw_graph_find (m->graph, id))
    return TRUE;
  const char *dot = strrchr (of, '.');
  g_autofree char *node = dot ? g_strndup (of, dot - of) : NULL;
  return node && tw_graph_find (m->graph, node)
         && (strcmp (dot, ".weight") == 0 || strcmp (dot, ".bias") == 0);
}

static void
check_names (tw_exec_mode mode)
{
  g_autoptr (tw_model) m = make_model ();
  g_autoptr (GError) error = NULL;
  tw_dataset *d = tw_dataset_synthetic ("spirals", 64, 3, -1, &error);
  g_assert_no_error (error);
  tw_session_options o;
  tw_session_options_init (&o);
  o.mode = mode;
  o.max_steps = 2;
  tw_session *s = tw_session_new (m, d, NULL, NULL, &o, &error);
  tw_session_options_clear (&o);
  g_assert_no_error (error);
  /* Values made so far in this iteration, by name. */
  g_autoptr (GHashTable) made = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                                       (GDestroyNotify) tw_tensor_unref);
  guint n_pauses = 0, n_made = 0, n_used = 0;
  gboolean saw_grad_words = FALSE;
  for (;;)
    {
      g_assert_true (tw_session_step_op (s, &error));
      g_autoptr (tw_snapshot) sn = twt_pop_kind (s, TW_SNAP_PAUSED);
      if (sn->iteration != 1 || sn->phase < 0)
        break;
      n_pauses++;
      for (guint i = 0; sn->tensors && i < sn->tensors->len; i++)
        {
          const tw_snapshot_tensor *t = g_ptr_array_index (sn->tensors, i);
          g_test_message ("%s %s: %s (%s) — %s", sn->op, sn->nodes[0], t->name, t->role, t->what);
          g_assert_false (g_regex_match_simple ("^(input|output) [0-9]+$", t->name, 0, 0));
          g_assert_null (strstr (t->name, "'s input"));
          g_assert_null (strstr (t->name, "'s output"));
          g_assert_false (t->name[0] == '%');
          g_assert_nonnull (t->what);
          g_assert_cmpstr (t->what, !=, "");
          if (strcmp (t->name, "grad:fc2") == 0 || strcmp (t->name, "grad:loss") == 0)
            {
              g_autofree char *words = g_strdup_printf ("gradient of %s's output", t->name + 5);
              g_assert_cmpstr (t->what, ==, words);
              g_assert_cmpstr (t->role, ==, "gradient");
              /* Eager names every node's output gradient; compiled, the seed. */
              saw_grad_words |= mode == TW_MODE_COMPILED || strcmp (t->name, "grad:fc2") == 0;
            }
          if (strcmp (t->name, "grad:fc2.weight") == 0)
            g_assert_cmpstr (t->what, ==, "gradient of parameter fc2.weight");
          if (strcmp (t->name, "fc1.weight") == 0)
            g_assert_cmpstr (t->role, ==, "parameter");
          gboolean output = strcmp (t->role, "output") == 0
                            || (strcmp (t->role, "gradient") == 0 && strchr (t->name, '('));
          if (strchr (t->name, '('))
            {
              g_assert_true (g_str_has_prefix (t->what, "made by "));
              tw_tensor *before = g_hash_table_lookup (made, t->name);
              if (before && !output)
                {
                  /* An input named after what made it: that value, also
                   * where a compiled instruction writes over it in place. */
                  g_assert_true (same_bytes (before, t->tensor));
                  n_used++;
                }
              else if (before == NULL)
                {
                  g_hash_table_insert (made, g_strdup (t->name), tw_tensor_ref (t->tensor));
                  n_made++;
                }
            }
          else if (mode == TW_MODE_EAGER)
            g_assert_true (graph_name (m, t->name));
        }
    }
  g_test_message ("%u pauses, %u values named after what made them, %u of them read again",
                  n_pauses, n_made, n_used);
  g_assert_cmpuint (n_pauses, >, 12);
  g_assert_true (saw_grad_words);
  if (mode == TW_MODE_EAGER)
    {
      /* A linear's backward is several kernels passing intermediates on. */
      g_assert_cmpuint (n_made, >, 3);
      g_assert_cmpuint (n_used, >, 0);
    }
  g_assert_true (tw_session_stop (s, &error));
  tw_session_free (s);
}

static void
test_eager (void)
{
  check_names (TW_MODE_EAGER);
}

static void
test_compiled (void)
{
  check_names (TW_MODE_COMPILED);
}

/* tw_value_name: the expression, and past 64 bytes the op with a serial. */
static void
test_value_name (void)
{
  const char *in[] = { "grad:fc1", "fc1.weight" };
  g_autofree char *a = tw_value_name ("matmul", in, 2, 0, 1, 3);
  g_assert_cmpstr (a, ==, "matmul(grad:fc1, fc1.weight)");
  g_autofree char *b = tw_value_name ("split", in, 1, 1, 2, 4);
  g_assert_cmpstr (b, ==, "split(grad:fc1):1");
  const char *unnamed[] = { NULL };
  g_autofree char *c = tw_value_name ("relu", unnamed, 1, 0, 1, 0);
  g_assert_cmpstr (c, ==, "relu(?)");
  const char *longer[] = { "transpose(matmul(grad:layer4_1_conv2_with_a_long_name, x))", "w" };
  g_autofree char *e = tw_value_name ("matmul", longer, 2, 0, 1, 7);
  g_assert_cmpstr (e, ==, "matmul(…)#7");
  /* A compiled instruction's label loses its note. */
  g_autofree char *f = tw_value_name ("linear_grad_input (gemm)", in, 1, 0, 1, 9);
  g_assert_cmpstr (f, ==, "linear_grad_input(grad:fc1)");
  g_assert_cmpuint (strlen (e), <=, TW_VALUE_NAME_MAX);
}

/* x [2] → fc1 (8), fc2 (8) → s = fc1 + fc2 → relu → fc3 (2) → cross entropy:
 * add's backward needs neither input, so compiled mode writes s over one of
 * them in place. */
static tw_model *
make_add_model (void)
{
  tw_model *m = tw_model_new ("in-place");
  tw_attrs *a = twt_attrs_int ("out_features", 8), *c = twt_attrs_int ("out_features", 2);
  tw_graph_add_input (m->graph, "x", TW_F32, 1, (int64_t[]){ 2 }, "data");
  tw_graph_add_input (m->graph, "y", TW_I64, 0, NULL, "label");
  tw_graph_add (m->graph, "fc1", "linear", a, "x", NULL);
  tw_graph_add (m->graph, "fc2", "linear", a, "x", NULL);
  tw_graph_add (m->graph, "s", "add", NULL, "fc1", "fc2", NULL);
  tw_graph_add (m->graph, "act", "relu", NULL, "s", NULL);
  tw_graph_add (m->graph, "fc3", "linear", c, "act", NULL);
  tw_graph_add (m->graph, "loss", "cross_entropy", NULL, "fc3", "y", NULL);
  tw_graph_set_outputs (m->graph, (const char *[]){ "fc3", NULL });
  tw_attrs_free (a);
  tw_attrs_free (c);
  m->recipe.batch_size = 8;
  m->recipe.epochs = 1;
  return m;
}

/* Every tensor of the pause at node's forward end in the first iteration,
 * by name (new references); the session is left paused there. */
static GHashTable *
values_at (tw_session *s, const char *node)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *spec = g_strdup_printf ("node=%s:forward", node);
  g_assert_true (tw_session_add_breakpoint (s, spec, &error));
  g_assert_true (tw_session_run (s, &error));
  g_autoptr (tw_snapshot) sn = twt_pop_kind (s, TW_SNAP_PAUSED);
  g_assert_cmpint (sn->iteration, ==, 1);
  g_assert_true (g_strv_contains ((const char *const *) sn->nodes, node));
  GHashTable *v =
    g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) tw_tensor_unref);
  for (guint i = 0; i < sn->tensors->len; i++)
    {
      const tw_snapshot_tensor *t = g_ptr_array_index (sn->tensors, i);
      g_test_message ("%s at %s: %s (%s)", sn->compiled ? "compiled" : "eager", node, t->name,
                      t->role);
      g_hash_table_insert (v, g_strdup (t->name), tw_tensor_ref (t->tensor));
    }
  return v;
}

static double
max_rel_diff (const tw_tensor *a, const tw_tensor *b)
{
  g_assert_cmpint (tw_tensor_numel (a), ==, tw_tensor_numel (b));
  double d = 0;
  for (int64_t i = 0; i < tw_tensor_numel (a); i++)
    {
      double x = tw_tensor_get_flat (a, i), y = tw_tensor_get_flat (b, i);
      d = MAX (d, fabs (x - y) / MAX (fabs (x), 1e-3));
    }
  return d;
}

/* Paused at the end of an instruction that wrote its output over an input
 * (compiled mode's in-place reuse), the debugger shows that input as the
 * op read it: the eager run's input of the same op, not the output. */
static void
test_in_place_inputs (void)
{
  g_autoptr (tw_model) m = make_add_model ();
  g_autoptr (GError) error = NULL;
  GHashTable *seen[2];
  tw_session *ss[2];
  for (int mode = 0; mode < 2; mode++)
    {
      tw_dataset *d = tw_dataset_synthetic ("spirals", 64, 3, -1, &error);
      g_assert_no_error (error);
      tw_session_options o;
      tw_session_options_init (&o);
      o.mode = mode == 0 ? TW_MODE_EAGER : TW_MODE_COMPILED;
      o.max_steps = 1;
      ss[mode] = tw_session_new (m, d, NULL, NULL, &o, &error);
      g_assert_no_error (error);
      seen[mode] = values_at (ss[mode], "s");
    }
  /* The compiled program does write s over fc1 or fc2. */
  tw_compiled *c = tw_trainer_compiled (tw_session_trainer (ss[1]));
  tw_program *p = tw_compiled_program (c, TW_PROGRAM_STEP, 8, &error);
  g_assert_no_error (error);
  gboolean in_place = FALSE;
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_instr *ins = tw_program_instr (p, (int) i);
      if (ins->phase != TW_PHASE_FORWARD || ins->n_out != 1 ||
          !g_ptr_array_find_with_equal_func (ins->sources, "s", g_str_equal, NULL))
        continue;
      for (int k = 0; k < ins->n_in; k++)
        in_place |= tw_program_alias_root (p, ins->in[k]) == tw_program_alias_root (p, ins->out[0]);
    }
  g_assert_true (in_place);
  /* Same seed, same batch: the same values within float32 rounding of the
   * two executors' GEMMs (~1e-7 relative; 1e-5 leaves room). */
  for (const char *const *name = (const char *const[]){ "fc1", "fc2", "s", NULL }; *name; name++)
    {
      tw_tensor *e = g_hash_table_lookup (seen[0], *name);
      tw_tensor *k = g_hash_table_lookup (seen[1], *name);
      g_assert_nonnull (e);
      g_assert_nonnull (k);
      double diff = max_rel_diff (e, k);
      g_test_message ("%s: eager vs compiled %.3g", *name, diff);
      g_assert_cmpfloat (diff, <=, 1e-5);
    }
  /* In float64 the shown inputs add up to the shown output, within the
   * rounding of one float32 addition (half an ulp, 2^-24 relative; 2^-23
   * leaves room); an input overwritten by s would be off by the other. */
  tw_tensor *a = g_hash_table_lookup (seen[1], "fc1"), *b = g_hash_table_lookup (seen[1], "fc2"),
            *sum = g_hash_table_lookup (seen[1], "s");
  for (int64_t i = 0; i < tw_tensor_numel (sum); i++)
    {
      double ref = tw_tensor_get_flat (a, i) + tw_tensor_get_flat (b, i);
      g_assert_cmpfloat (fabs (ref - tw_tensor_get_flat (sum, i)), <=,
                         ldexp (fabs (ref), -23) + 1e-30);
    }
  /* And an input is not its output (which the bug showed twice). */
  g_assert_false (
    same_bytes (g_hash_table_lookup (seen[1], "fc1"), g_hash_table_lookup (seen[1], "s")));
  g_assert_false (
    same_bytes (g_hash_table_lookup (seen[1], "fc2"), g_hash_table_lookup (seen[1], "s")));
  for (int mode = 0; mode < 2; mode++)
    {
      g_assert_true (tw_session_stop (ss[mode], &error));
      tw_session_free (ss[mode]);
      g_hash_table_unref (seen[mode]);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/session/names/value-name", test_value_name);
  g_test_add_func ("/engine/session/names/eager", test_eager);
  g_test_add_func ("/engine/session/names/compiled", test_compiled);
  g_test_add_func ("/engine/session/names/in-place-inputs", test_in_place_inputs);
  return g_test_run ();
}
