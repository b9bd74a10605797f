/* test-optim.c — optimizers against torch.optim's formulas and recorded
 * torch.optim trajectories; learning-rate schedules. */
#include "engine/optim.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

/* Our optimizers compute in float32, the references in double (or in
 * float32 by PyTorch, in another order and maybe with FMA).  Each step adds a
 * few roundings of relative size 2^-24 ≈ 6e-8 to p; after 3–5 steps the
 * difference stays below ~20 of them, 1.2e-6 relative at worst, usually far
 * less.  1e-6 relative plus 1e-7 absolute (the rounding unit of the terms of
 * size ≤ 1 that are summed into values that cancel towards 0) bounds it.  A
 * wrong formula (eps inside the square root, no bias correction, decay
 * applied after the step, ...) moves values by 1e-4 or more in these cases. */
#define RTOL 1e-6
#define ATOL 1e-7

/* Largest |got − want| / (RTOL·|want| + ATOL) seen: how much of the tolerance
 * is used, reported by each test. */
static double worst_ratio;

static void
assert_close (double got, double want, const char *what, int step, int i)
{
  worst_ratio = MAX (worst_ratio, fabs (got - want) / (RTOL * fabs (want) + ATOL));
  if (fabs (got - want) > RTOL * fabs (want) + ATOL)
    g_error ("%s: step %d element %d: got %.9g, want %.9g (diff %.3g)", what, step, i, got, want,
             got - want);
}

static tw_optimizer_config
config (tw_optimizer_type type, double lr)
{
  tw_recipe r;
  tw_recipe_init_defaults (&r);
  tw_optimizer_config c = r.optimizer;
  c.type = type;
  c.lr = lr;
  c.momentum = 0.0;
  return c;
}

/* ---- a double-precision transcription of torch.optim's pseudo-code ------ */

typedef struct
{
  double p[8], b[8], m[8], v[8];
  int64_t t;
} ref_state;

static void
ref_step (const tw_optimizer_config *c, ref_state *s, const double *g, int n, double lr)
{
  s->t++;
  for (int i = 0; i < n; i++)
    {
      double gi = g[i];
      if (c->type == TW_OPT_SGD)
        {
          gi += c->weight_decay * s->p[i];
          if (c->momentum != 0.0)
            {
              s->b[i] = s->t == 1 ? gi : c->momentum * s->b[i] + gi;
              gi = c->nesterov ? gi + c->momentum * s->b[i] : s->b[i];
            }
          s->p[i] -= lr * gi;
          continue;
        }
      if (c->type == TW_OPT_ADAMW)
        s->p[i] *= 1.0 - lr * c->weight_decay;
      else
        gi += c->weight_decay * s->p[i];
      s->m[i] = c->beta1 * s->m[i] + (1.0 - c->beta1) * gi;
      s->v[i] = c->beta2 * s->v[i] + (1.0 - c->beta2) * gi * gi;
      double mhat = s->m[i] / (1.0 - pow (c->beta1, (double) s->t));
      double vhat = s->v[i] / (1.0 - pow (c->beta2, (double) s->t));
      s->p[i] -= lr * mhat / (sqrt (vhat) + c->eps);
    }
}

/* Runs 3 steps of cfg on a 5-element parameter with fixed gradients and
 * learning rates, against ref_step; returns the final values in out. */
static void
check_three_steps (const tw_optimizer_config *cfg, const char *what, double *out)
{
  enum { N = 5 };
  static const float p0[N] = { 0.5f, -1.25f, 2.0f, 0.0f, 3e-3f };
  static const float grads[3][N] = {
    { 0.1f, -0.2f, 0.3f, 0.5f, 1e-3f },
    { -0.3f, 0.1f, 0.25f, -0.5f, 2e-3f },
    { 0.05f, 0.4f, -0.1f, 0.5f, -1e-3f },
  };
  static const double lrs[3] = { 0.1, 0.05, 0.2 };

  g_autoptr (tw_params) params = tw_params_new ();
  g_autoptr (tw_tensor) value = tw_tensor_from_data (TW_F32, 1, (int64_t[]) { N }, p0);
  tw_param *e = tw_params_set (params, "w", value, TRUE);
  g_autoptr (tw_optimizer) opt = tw_optimizer_new (cfg);
  ref_state s = { 0 };
  for (int i = 0; i < N; i++)
    s.p[i] = p0[i];

  for (int step = 0; step < 3; step++)
    {
      double g[N];
      memcpy (tw_tensor_f32 (e->grad), grads[step], sizeof grads[step]);
      for (int i = 0; i < N; i++)
        g[i] = grads[step][i];
      tw_optimizer_step (opt, params, lrs[step]);
      ref_step (cfg, &s, g, N, lrs[step]);
      for (int i = 0; i < N; i++)
        {
          assert_close (tw_tensor_f32 (e->value)[i], s.p[i], what, step, i);
          /* The gradient is read, never changed (as in PyTorch). */
          g_assert_cmpfloat (tw_tensor_f32 (e->grad)[i], ==, grads[step][i]);
        }
    }
  g_assert_cmpint (tw_optimizer_get_step (opt), ==, 3);
  for (int i = 0; i < N; i++)
    out[i] = tw_tensor_f32 (e->value)[i];
}

static void
test_sgd (void)
{
  double out[5], plain[5], nesterov[5];
  worst_ratio = 0;
  tw_optimizer_config c = config (TW_OPT_SGD, 0.1);
  check_three_steps (&c, "sgd", plain);

  c.weight_decay = 0.1;
  check_three_steps (&c, "sgd wd", out);
  g_assert_cmpfloat (fabs (out[0] - plain[0]), >, 1e-3);

  c.weight_decay = 0.0;
  c.momentum = 0.9;
  check_three_steps (&c, "sgd momentum", out);

  c.weight_decay = 0.05;
  check_three_steps (&c, "sgd momentum wd", out);

  c.nesterov = TRUE;
  check_three_steps (&c, "sgd nesterov wd", nesterov);
  g_assert_cmpfloat (fabs (nesterov[0] - out[0]), >, 1e-3);
  g_test_message ("largest difference: %.2f of the tolerance", worst_ratio);

  /* Plain SGD keeps no state; momentum keeps one buffer of the param's shape. */
  g_autoptr (tw_params) params = tw_params_new ();
  g_autoptr (tw_tensor) w = tw_tensor_zeros (TW_F32, 2, (int64_t[]) { 2, 3 });
  g_autoptr (tw_tensor) rm = tw_tensor_zeros (TW_F32, 1, (int64_t[]) { 3 });
  tw_param *e = tw_params_set (params, "w", w, TRUE);
  tw_param *buf = tw_params_set (params, "running_mean", rm, FALSE);
  tw_tensor_fill (e->grad, 1.0);
  tw_optimizer_config plain_cfg = config (TW_OPT_SGD, 0.5);
  g_autoptr (tw_optimizer) o1 = tw_optimizer_new (&plain_cfg);
  tw_optimizer_step (o1, params, 0.5);
  g_assert_null (e->state[0]);
  g_assert_cmpfloat (tw_tensor_f32 (w)[5], ==, -0.5f);
  g_assert_null (buf->state[0]);
  g_assert_cmpfloat (tw_tensor_f32 (rm)[0], ==, 0.0f);

  g_autoptr (tw_optimizer) o2 = tw_optimizer_new (&c);
  tw_optimizer_step (o2, params, 0.5);
  g_assert_nonnull (e->state[0]);
  g_assert_true (tw_tensor_same_shape (e->state[0], w));
  g_assert_null (e->state[1]);
  g_assert_null (buf->state[0]);
}

static void
test_adam (void)
{
  double adam[5], adam_l2[5], adamw[5], out[5];
  worst_ratio = 0;
  tw_optimizer_config c = config (TW_OPT_ADAM, 0.01);
  check_three_steps (&c, "adam", adam);

  c.weight_decay = 0.5;
  check_three_steps (&c, "adam l2", adam_l2);

  c.type = TW_OPT_ADAMW;
  check_three_steps (&c, "adamw", adamw);

  /* Decoupled decay is not L2: with the same weight_decay the results differ
   * by far more than rounding (here on element 2, p = 2, where decay counts). */
  g_assert_cmpfloat (fabs (adamw[2] - adam_l2[2]), >, 1e-3);
  g_assert_cmpfloat (fabs (adamw[2] - adam[2]), >, 1e-3);

  /* An eps comparable to sqrt(v) (the last element has |g| ~ 1e-3): tells eps
   * added after the square root from eps under it. */
  c = config (TW_OPT_ADAM, 0.01);
  c.eps = 1e-3;
  c.beta1 = 0.8;
  c.beta2 = 0.95;
  check_three_steps (&c, "adam eps 1e-3", out);
  g_test_message ("largest difference: %.2f of the tolerance", worst_ratio);
}

/* A run resumed from a checkpoint (state tensors kept, step restored)
 * continues exactly as the uninterrupted run. */
static void
test_resume (void)
{
  tw_optimizer_config c = config (TW_OPT_ADAM, 0.01);
  g_autoptr (tw_params) a = tw_params_new ();
  g_autoptr (tw_params) b = tw_params_new ();
  g_autoptr (tw_tensor) wa = tw_tensor_from_data (TW_F32, 1, (int64_t[]) { 3 },
                                                  (float[]) { 1, 2, 3 });
  g_autoptr (tw_tensor) wb = tw_tensor_clone (wa);
  tw_param *ea = tw_params_set (a, "w", wa, TRUE);
  tw_param *eb = tw_params_set (b, "w", wb, TRUE);
  g_autoptr (tw_optimizer) oa = tw_optimizer_new (&c);
  g_autoptr (tw_optimizer) ob = tw_optimizer_new (&c);

  for (int step = 0; step < 6; step++)
    {
      if (step == 3)
        {
          /* "Restart" b: a fresh optimizer with the saved step count. */
          int64_t saved = tw_optimizer_get_step (ob);
          g_clear_pointer (&ob, tw_optimizer_free);
          ob = tw_optimizer_new (&c);
          tw_optimizer_set_step (ob, saved);
        }
      for (int i = 0; i < 3; i++)
        {
          tw_tensor_f32 (ea->grad)[i] = (float) (i - step) * 0.3f;
          tw_tensor_f32 (eb->grad)[i] = (float) (i - step) * 0.3f;
        }
      tw_optimizer_step (oa, a, 0.01);
      tw_optimizer_step (ob, b, 0.01);
    }
  g_assert_cmpmem (tw_tensor_f32 (wa), 12, tw_tensor_f32 (wb), 12);
  g_assert_cmpint (tw_optimizer_get_step (ob), ==, 6);
  g_assert_nonnull (ea->state[0]);
  g_assert_nonnull (ea->state[1]);
}

/* ---- the torch.optim reference file -------------------------------------- */

static void
read_floats (JsonArray *a, float *out, guint n)
{
  g_assert_cmpuint (json_array_get_length (a), ==, n);
  for (guint i = 0; i < n; i++)
    out[i] = (float) json_array_get_double_element (a, i);
}

static void
test_torch_reference (void)
{
  g_autofree char *path = g_build_filename (TW_TEST_DATA_DIR, "optim-ref.json", NULL);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  json_parser_load_from_file (parser, path, &error);
  g_assert_no_error (error);
  JsonObject *root = json_node_get_object (json_parser_get_root (parser));
  int steps = (int) json_object_get_int_member (root, "steps");
  JsonObject *params0 = json_object_get_object_member (root, "params");
  JsonArray *grads = json_object_get_array_member (root, "grads");
  JsonArray *cases = json_object_get_array_member (root, "cases");
  g_assert_cmpuint (json_array_get_length (cases), >=, 8);
  g_test_message ("reference from PyTorch %s",
                  json_object_get_string_member (root, "torch_version"));
  worst_ratio = 0;

  for (guint k = 0; k < json_array_get_length (cases); k++)
    {
      JsonObject *cs = json_array_get_object_element (cases, k);
      const char *name = json_object_get_string_member (cs, "name");
      JsonObject *oc = json_object_get_object_member (cs, "optimizer");
      tw_optimizer_config c = { 0 };
      g_assert_true (tw_optimizer_type_from_name (json_object_get_string_member (oc, "type"),
                                                  &c.type));
      c.lr = json_object_get_double_member (oc, "lr");
      c.momentum = json_object_get_double_member (oc, "momentum");
      c.nesterov = json_object_get_boolean_member (oc, "nesterov");
      c.weight_decay = json_object_get_double_member (oc, "weight_decay");
      c.beta1 = json_object_get_double_member (oc, "beta1");
      c.beta2 = json_object_get_double_member (oc, "beta2");
      c.eps = json_object_get_double_member (oc, "eps");

      g_autoptr (tw_params) params = tw_params_new ();
      g_autoptr (GList) names = json_object_get_members (params0);
      for (GList *l = names; l != NULL; l = l->next)
        {
          JsonObject *po = json_object_get_object_member (params0, l->data);
          JsonArray *shape = json_object_get_array_member (po, "shape");
          int64_t dims[TW_MAX_DIMS];
          int ndim = (int) json_array_get_length (shape);
          for (int d = 0; d < ndim; d++)
            dims[d] = json_array_get_int_element (shape, d);
          g_autoptr (tw_tensor) t = tw_tensor_new (TW_F32, ndim, dims);
          read_floats (json_object_get_array_member (po, "value"), tw_tensor_f32 (t),
                       (guint) tw_tensor_numel (t));
          tw_params_set (params, l->data, t, TRUE);
        }

      g_autoptr (tw_optimizer) opt = tw_optimizer_new (&c);
      JsonArray *after = json_object_get_array_member (cs, "after");
      for (int step = 0; step < steps; step++)
        {
          JsonObject *gs = json_array_get_object_element (grads, step);
          JsonObject *want = json_array_get_object_element (after, step);
          for (int i = 0; i < tw_params_count (params); i++)
            {
              tw_param *e = tw_params_at (params, i);
              read_floats (json_object_get_array_member (gs, e->name), tw_tensor_f32 (e->grad),
                           (guint) tw_tensor_numel (e->value));
            }
          tw_optimizer_step (opt, params, c.lr);
          for (int i = 0; i < tw_params_count (params); i++)
            {
              tw_param *e = tw_params_at (params, i);
              JsonArray *w = json_object_get_array_member (want, e->name);
              g_autofree char *what = g_strdup_printf ("torch %s %s", name, e->name);
              for (int j = 0; j < tw_tensor_numel (e->value); j++)
                assert_close (tw_tensor_f32 (e->value)[j],
                              json_array_get_double_element (w, (guint) j), what, step, j);
            }
        }
    }
  g_test_message ("largest difference: %.2f of the tolerance", worst_ratio);
}

/* ---- schedules ---------------------------------------------------------- */

static void
assert_lr (double got, double want)
{
  /* Closed forms in double on both sides: only a few rounding units apart. */
  g_assert_cmpfloat_with_epsilon (got, want, 1e-12);
}

static void
test_schedules (void)
{
  tw_schedule_config s = { 0 };
  s.type = TW_SCHED_CONSTANT;
  assert_lr (tw_schedule_lr (&s, 0.1, 0, 100), 0.1);
  assert_lr (tw_schedule_lr (&s, 0.1, 99, 100), 0.1);

  s.type = TW_SCHED_STEP;
  s.step_size = 10;
  s.gamma = 0.5;
  assert_lr (tw_schedule_lr (&s, 0.1, 0, 100), 0.1);
  assert_lr (tw_schedule_lr (&s, 0.1, 9, 100), 0.1);
  assert_lr (tw_schedule_lr (&s, 0.1, 10, 100), 0.05);
  assert_lr (tw_schedule_lr (&s, 0.1, 25, 100), 0.025);
  s.step_size = 0;   /* no decay period: constant */
  assert_lr (tw_schedule_lr (&s, 0.1, 50, 100), 0.1);

  /* Warm-up: (step + 1)/warmup of lr, then the schedule from t = 0. */
  s.step_size = 10;
  s.warmup_steps = 5;
  assert_lr (tw_schedule_lr (&s, 0.1, 0, 100), 0.02);
  assert_lr (tw_schedule_lr (&s, 0.1, 3, 100), 0.08);
  assert_lr (tw_schedule_lr (&s, 0.1, 4, 100), 0.1);
  assert_lr (tw_schedule_lr (&s, 0.1, 5, 100), 0.1);
  assert_lr (tw_schedule_lr (&s, 0.1, 14, 100), 0.1);
  assert_lr (tw_schedule_lr (&s, 0.1, 15, 100), 0.05);

  s.type = TW_SCHED_COSINE;
  s.warmup_steps = 0;
  s.t_max = 0;       /* the whole run */
  s.min_lr = 0.001;
  assert_lr (tw_schedule_lr (&s, 0.1, 0, 100), 0.1);
  assert_lr (tw_schedule_lr (&s, 0.1, 50, 100), (0.1 + 0.001) / 2);
  assert_lr (tw_schedule_lr (&s, 0.1, 25, 100), 0.001 + 0.099 * (1 + cos (G_PI / 4)) / 2);
  assert_lr (tw_schedule_lr (&s, 0.1, 100, 100), 0.001);
  assert_lr (tw_schedule_lr (&s, 0.1, 150, 100), 0.001);   /* clamped */

  s.t_max = 20;
  assert_lr (tw_schedule_lr (&s, 0.1, 10, 100), (0.1 + 0.001) / 2);
  assert_lr (tw_schedule_lr (&s, 0.1, 20, 100), 0.001);
  assert_lr (tw_schedule_lr (&s, 0.1, 60, 100), 0.001);

  /* Cosine after warm-up: T is what is left of the run. */
  s.t_max = 0;
  s.warmup_steps = 10;
  assert_lr (tw_schedule_lr (&s, 0.1, 0, 100), 0.01);
  assert_lr (tw_schedule_lr (&s, 0.1, 9, 100), 0.1);
  assert_lr (tw_schedule_lr (&s, 0.1, 10, 100), 0.1);
  assert_lr (tw_schedule_lr (&s, 0.1, 55, 100), (0.1 + 0.001) / 2);
  assert_lr (tw_schedule_lr (&s, 0.1, 100, 100), 0.001);

  /* No run length known and no t_max: nothing to anneal over. */
  assert_lr (tw_schedule_lr (&s, 0.1, 50, 0), 0.1);
}

static void
test_recipe (void)
{
  tw_recipe r;
  tw_recipe_init_defaults (&r);
  g_assert_cmpint (r.optimizer.type, ==, TW_OPT_SGD);
  g_assert_cmpfloat (r.optimizer.lr, ==, 0.01);
  g_assert_cmpfloat (r.optimizer.momentum, ==, 0.9);
  g_assert_cmpfloat (r.optimizer.beta2, ==, 0.999);
  g_assert_cmpint (r.batch_size, ==, 64);
  g_assert_cmpint (r.schedule.type, ==, TW_SCHED_CONSTANT);
  r.loss = g_strdup ("loss");
  r.dataset = g_strdup ("spirals");

  tw_recipe copy;
  tw_recipe_copy (&copy, &r);
  g_assert_cmpstr (copy.loss, ==, "loss");
  g_assert_true (copy.loss != r.loss);
  g_assert_cmpstr (copy.dataset, ==, "spirals");
  tw_recipe_clear (&r);
  g_assert_null (r.loss);
  tw_recipe_clear (&r);
  g_assert_cmpstr (copy.dataset, ==, "spirals");
  tw_recipe_clear (&copy);

  static const tw_optimizer_type types[] = { TW_OPT_SGD, TW_OPT_ADAM, TW_OPT_ADAMW };
  for (guint i = 0; i < G_N_ELEMENTS (types); i++)
    {
      tw_optimizer_type back;
      g_assert_true (tw_optimizer_type_from_name (tw_optimizer_type_name (types[i]), &back));
      g_assert_cmpint (back, ==, types[i]);
    }
  tw_optimizer_type t;
  g_assert_true (tw_optimizer_type_from_name ("AdamW", &t));
  g_assert_cmpint (t, ==, TW_OPT_ADAMW);
  g_assert_false (tw_optimizer_type_from_name ("rmsprop", &t));
  g_assert_false (tw_optimizer_type_from_name (NULL, &t));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/optim/sgd", test_sgd);
  g_test_add_func ("/engine/optim/adam", test_adam);
  g_test_add_func ("/engine/optim/resume", test_resume);
  g_test_add_func ("/engine/optim/torch-reference", test_torch_reference);
  g_test_add_func ("/engine/optim/schedules", test_schedules);
  g_test_add_func ("/engine/optim/recipe", test_recipe);
  return g_test_run ();
}
