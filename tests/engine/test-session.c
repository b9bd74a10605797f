/* test-session.c — training sessions (engine/session.h) and the event bus
 * (engine/events.h): stepping, pausing, stopping, live changes, graph edits,
 * concurrent sessions; event nesting, coverage and grad_ready, in both
 * execution modes.
 *
 * Every "bit-identical" check compares raw bytes: a session that pauses,
 * steps or applies changes at a boundary must compute exactly what the same
 * trainer calls compute without it. */
#include "engine/data.h"
#include "opcheck.h"
#include "engine/device.h"
#include "engine/rng.h"
#include "engine/session.h"
#include "engine/safetensors.h"

#include <glib/gstdio.h>

#include <math.h>
#include <string.h>

/* A snapshot that does not come in this long means a hang. */
#define POP_TIMEOUT_US (30 * G_USEC_PER_SEC)

/* 2 -> 16 -> relu -> 16 -> tanh -> 2, cross-entropy; spirals, batch 32, SGD
 * with momentum (so optimizer state matters). */
static tw_model *
make_model (gboolean fc2_bias)
{
  tw_model *m = tw_model_new ("session-test");
  tw_graph *g = m->graph;
  tw_attrs *h = twt_attrs_int ("out_features", 16), *o = twt_attrs_int ("out_features", 2);
  tw_attrs *h2 = twt_attrs_int ("out_features", 16);
  tw_attrs_set_bool (h2, "bias", fc2_bias);
  tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]) { 2 }, "data");
  tw_graph_add_input (g, "y", TW_I64, 0, NULL, "label");
  tw_graph_add (g, "fc1", "linear", h, "x", NULL);
  tw_graph_add (g, "act", "relu", NULL, "fc1", NULL);
  tw_graph_add (g, "fc2", "linear", h2, "act", NULL);
  tw_graph_add (g, "act2", "tanh", NULL, "fc2", NULL);
  tw_graph_add (g, "fc3", "linear", o, "act2", NULL);
  tw_graph_add (g, "loss", "cross_entropy", NULL, "fc3", "y", NULL);
  tw_graph_set_outputs (g, (const char *[]) { "fc3", NULL });
  tw_attrs_free (h);
  tw_attrs_free (h2);
  tw_attrs_free (o);
  m->recipe.batch_size = 32;
  m->recipe.epochs = 2;
  m->recipe.seed = 7;
  m->recipe.optimizer.type = TW_OPT_SGD;
  m->recipe.optimizer.lr = 0.05;
  m->recipe.optimizer.momentum = 0.9;
  return m;
}

static tw_dataset *
train_data (void)
{
  g_autoptr (GError) error = NULL;
  tw_dataset *d = tw_dataset_synthetic ("spirals", 128, 3, -1, &error);
  g_assert_no_error (error);
  return d;
}

static tw_session *
new_session (const tw_model *m, tw_exec_mode mode, int64_t max_steps, int threads)
{
  tw_session_options o;
  tw_session_options_init (&o);
  o.mode = mode;
  o.max_steps = max_steps;
  o.threads = threads;
  g_autoptr (GError) error = NULL;
  tw_session *s = tw_session_new (m, train_data (), NULL, NULL, &o, &error);
  g_assert_no_error (error);
  return s;
}

static tw_snapshot *
pop_kind (tw_session *s, tw_snapshot_kind kind)
{
  for (;;)
    {
      tw_snapshot *sn = tw_session_pop (s, POP_TIMEOUT_US);
      if (sn == NULL)
        g_error ("no snapshot of kind %d within %d s (session %s)", kind,
                 (int) (POP_TIMEOUT_US / G_USEC_PER_SEC),
                 tw_session_state_name (tw_session_get_state (s)));
      if (sn->kind == kind)
        return sn;
      if (sn->kind == TW_SNAP_FINISHED)
        g_error ("the session finished (%s) while waiting for kind %d: %s",
                 tw_session_state_name (sn->state), kind, sn->message ? sn->message : "");
      if (sn->kind == TW_SNAP_PAUSED)
        g_test_message ("skipped a pause (%s) waiting for kind %d", sn->reason, kind);
      tw_snapshot_free (sn);
    }
}

static void
run_to_end (tw_session *s)
{
  g_autoptr (GError) error = NULL;
  if (tw_session_get_state (s) != TW_SESSION_RUNNING)
    g_assert_true (tw_session_run (s, &error));
  g_assert_no_error (error);
  g_autoptr (tw_snapshot) f = pop_kind (s, TW_SNAP_FINISHED);
  g_assert_cmpint (f->state, ==, TW_SESSION_FINISHED);
}

/* The same training without a session: the reference. */
static tw_trainer *
reference_run (tw_model *m, tw_exec_mode mode, int64_t steps)
{
  g_autoptr (GError) error = NULL;
  tw_trainer *tr = tw_trainer_new (m, &error);
  g_assert_no_error (error);
  tw_trainer_set_mode (tr, mode);
  g_autoptr (tw_dataset) d = train_data ();
  g_autoptr (tw_batcher) b = tw_batcher_new (d, m->recipe.batch_size, TRUE, m->recipe.seed, FALSE);
  int64_t per_epoch = tw_batcher_batches_per_epoch (b);
  tw_trainer_set_total_steps (tr, per_epoch * m->recipe.epochs);
  for (int64_t e = 0; tw_trainer_step_count (tr) < steps; e++)
    {
      tw_batcher_reset (b, e);
      tw_tensor *x, *y;
      while (tw_trainer_step_count (tr) < steps && tw_batcher_next (b, &x, &y))
        {
          g_assert_true (tw_trainer_step (tr, x, y, NULL, &error));
          tw_tensor_unref (x);
          tw_tensor_unref (y);
        }
    }
  return tr;
}

/* The reference goes on from its step to step `to`, batches as a session
 * takes them (epoch 0, shuffled by the recipe's seed). */
static void
reference_continue (tw_trainer *tr, const tw_model *m, int64_t to)
{
  g_autoptr (tw_dataset) d = train_data ();
  g_autoptr (tw_batcher) b = tw_batcher_new (d, m->recipe.batch_size, TRUE, m->recipe.seed, FALSE);
  g_autoptr (GError) error = NULL;
  tw_batcher_reset (b, 0);
  tw_batcher_seek (b, tw_trainer_step_count (tr));
  tw_tensor *x, *y;
  while (tw_trainer_step_count (tr) < to && tw_batcher_next (b, &x, &y))
    {
      g_assert_true (tw_trainer_step (tr, x, y, NULL, &error));
      tw_tensor_unref (x);
      tw_tensor_unref (y);
    }
}

static void
assert_params_equal (tw_params *a, tw_params *b, const char *what)
{
  g_assert_cmpint (tw_params_count (a), ==, tw_params_count (b));
  for (int i = 0; i < tw_params_count (a); i++)
    {
      tw_param *pa = tw_params_at (a, i), *pb = tw_params_get (b, pa->name);
      g_assert_nonnull (pb);
      if (memcmp (tw_tensor_data (pa->value), tw_tensor_data (pb->value),
                  tw_tensor_nbytes (pa->value))
          != 0)
        g_error ("%s: parameter %s differs", what, pa->name);
      for (int k = 0; k < 2; k++)
        if ((pa->state[k] == NULL) != (pb->state[k] == NULL)
            || (pa->state[k]
                && memcmp (tw_tensor_data (pa->state[k]), tw_tensor_data (pb->state[k]),
                           tw_tensor_nbytes (pa->state[k]))
                     != 0))
          {
            double d = 0;
            int64_t at = -1;
            for (int64_t j = 0; pa->state[k] && pb->state[k] && j < tw_tensor_numel (pa->state[k]); j++)
              if (fabs (tw_tensor_get_flat (pa->state[k], j) - tw_tensor_get_flat (pb->state[k], j)) > d)
                {
                  d = fabs (tw_tensor_get_flat (pa->state[k], j) - tw_tensor_get_flat (pb->state[k], j));
                  at = j;
                }
            g_error ("%s: optimizer state %d of %s differs (by %g at %" G_GINT64_FORMAT ")", what,
                     k, pa->name, d, at);
          }
    }
}

static gboolean
same_bytes (const tw_tensor *a, const tw_tensor *b)
{
  return tw_tensor_nbytes (a) == tw_tensor_nbytes (b)
         && memcmp (tw_tensor_data ((tw_tensor *) a), tw_tensor_data ((tw_tensor *) b),
                    tw_tensor_nbytes (a))
              == 0;
}

static gboolean
strv_has (char **v, const char *s)
{
  return v && g_strv_contains ((const char *const *) v, s);
}

/* ---- stepping ------------------------------------------------------------------- */

static int
trace_len (const tw_snapshot *sn)
{
  return sn->trace ? (int) g_strv_length (sn->trace) : 0;
}

/* Step op: each pause is exactly one op (one instruction in compiled mode)
 * after the previous one; the first names its nodes. */
static void
check_step_op (tw_exec_mode mode)
{
  g_autoptr (tw_model) m = make_model (TRUE);
  g_autoptr (tw_session) s = new_session (m, mode, 2, 1);
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_session_step_op (s, &error));
  tw_snapshot *sn = pop_kind (s, TW_SNAP_PAUSED);
  g_assert_cmpstr (sn->reason, ==, "step op");
  g_assert_cmpint (sn->iteration, ==, 1);
  g_assert_cmpint (sn->phase, ==, TW_PHASE_FORWARD);
  g_assert_cmpint (trace_len (sn), ==, 1);
  g_assert_cmpstr (sn->nodes[0], ==, "fc1");
  if (mode == TW_MODE_COMPILED)
    {
      /* linear + relu fused: one instruction naming both. */
      g_assert_true (sn->compiled);
      g_assert_true (strv_has (sn->nodes, "act"));
    }
  else
    g_assert_cmpstr (sn->op, ==, "linear");
  /* The paused op's tensors: input, parameters, output. */
  gboolean has_w = FALSE, has_out = FALSE;
  for (guint i = 0; i < sn->tensors->len; i++)
    {
      tw_snapshot_tensor *t = g_ptr_array_index (sn->tensors, i);
      has_w |= strcmp (t->name, "fc1.weight") == 0 && strcmp (t->role, "parameter") == 0;
      has_out |= strcmp (t->role, "output") == 0 && t->tensor->shape[0] == 32;
    }
  g_assert_true (has_w && has_out);
  int prev = trace_len (sn);
  tw_snapshot_free (sn);

  /* Stepping while stepping is refused until the pause comes; then one op more each time,
   * through forward, backward and the updates. */
  gboolean saw[3] = { FALSE, FALSE, FALSE };
  for (int i = 0; i < 200; i++)
    {
      g_assert_true (tw_session_step_op (s, &error));
      sn = pop_kind (s, TW_SNAP_PAUSED);
      if (sn->phase < 0 || sn->iteration != 1)
        {
          tw_snapshot_free (sn);
          break;
        }
      g_assert_cmpint (trace_len (sn), ==, prev + 1);
      saw[sn->phase] = TRUE;
      prev = trace_len (sn);
      tw_snapshot_free (sn);
    }
  g_assert_true (saw[TW_PHASE_FORWARD] && saw[TW_PHASE_BACKWARD] && saw[TW_PHASE_UPDATE]);
  g_assert_true (tw_session_stop (s, &error));
  g_autoptr (tw_snapshot) f = pop_kind (s, TW_SNAP_FINISHED);
  g_assert_cmpint (f->state, ==, TW_SESSION_STOPPED);
}

static void
test_step_op_eager (void)
{
  check_step_op (TW_MODE_EAGER);
}

static void
test_step_op_compiled (void)
{
  check_step_op (TW_MODE_COMPILED);
}

/* Step layer: pauses at the end of each node's work (forward and backward);
 * in eager backward that is several kernels at once.  Step iteration: the
 * next pause is between iterations, one step later. */
static void
check_step_layer (tw_exec_mode mode)
{
  g_autoptr (tw_model) m = make_model (TRUE);
  g_autoptr (tw_session) s = new_session (m, mode, 4, 1);
  g_autoptr (GError) error = NULL;
  g_autoptr (GString) fwd = g_string_new (NULL), bwd = g_string_new (NULL);
  g_autoptr (GString) upd = g_string_new (NULL);
  int prev = 0, max_jump = 0;
  for (int i = 0; i < 100; i++)
    {
      g_assert_true (tw_session_step_layer (s, &error));
      g_autoptr (tw_snapshot) sn = pop_kind (s, TW_SNAP_PAUSED);
      if (sn->iteration != 1)
        break;
      g_assert_cmpstr (sn->reason, ==, "step layer");
      max_jump = MAX (max_jump, trace_len (sn) - prev);
      prev = trace_len (sn);
      /* Updates (each parameter's own op) interleave with backward in compiled mode. */
      g_string_append_printf (sn->phase == TW_PHASE_FORWARD ? fwd
                              : sn->phase == TW_PHASE_BACKWARD ? bwd : upd, "%s ", sn->nodes[0]);
    }
  if (mode == TW_MODE_EAGER)
    {
      g_assert_cmpstr (fwd->str, ==, "fc1 act fc2 act2 fc3 loss ");
      g_assert_cmpstr (bwd->str, ==, "loss fc3 act2 fc2 act fc1 ");
      g_assert_cmpint (max_jump, >, 1);      /* a linear backward is several kernels */
    }
  else
    {
      /* fused groups: every node still named, in order; fc1's weight
       * gradient is fused into its update. */
      g_assert_true (g_str_has_prefix (fwd->str, "fc1 "));
      g_assert_true (g_str_has_prefix (bwd->str, "loss "));
      g_assert_nonnull (strstr (upd->str, "fc1"));
    }

  /* Step iteration from inside an iteration: the next pause is the boundary. */
  g_assert_true (tw_session_step_iteration (s, &error));
  tw_snapshot *sn = pop_kind (s, TW_SNAP_PAUSED);
  g_assert_cmpint (sn->phase, ==, -1);
  g_assert_cmpint (sn->step, ==, 2);
  tw_snapshot_free (sn);
  g_assert_true (tw_session_step_iteration (s, &error));
  sn = pop_kind (s, TW_SNAP_PAUSED);
  g_assert_cmpint (sn->phase, ==, -1);
  g_assert_cmpint (sn->step, ==, 3);
  tw_snapshot_free (sn);
  run_to_end (s);
  g_assert_cmpint (tw_trainer_step_count (tw_session_trainer (s)), ==, 4);
}

static void
test_step_layer_eager (void)
{
  check_step_layer (TW_MODE_EAGER);
}

static void
test_step_layer_compiled (void)
{
  check_step_layer (TW_MODE_COMPILED);
}

/* Pausing anywhere and going on computes exactly the uninterrupted run. */
static void
check_pause_continue (tw_exec_mode mode)
{
  const int64_t steps = 7;
  g_autoptr (tw_model) m = make_model (TRUE);
  g_autoptr (tw_trainer) ref = reference_run (m, mode, steps);
  g_autoptr (tw_session) s = new_session (m, mode, steps, 1);
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_session_add_breakpoint (s, "node=act2:backward", &error));
  g_assert_true (tw_session_add_breakpoint (s, "step=3", &error));
  g_assert_true (tw_session_run (s, &error));
  int pauses = 0;
  for (;;)
    {
      tw_snapshot *sn = tw_session_pop (s, POP_TIMEOUT_US);
      g_assert_nonnull (sn);
      if (sn->kind == TW_SNAP_FINISHED)
        {
          g_assert_cmpint (sn->state, ==, TW_SESSION_FINISHED);
          tw_snapshot_free (sn);
          break;
        }
      if (sn->kind == TW_SNAP_PAUSED)
        {
          pauses++;
          if (pauses == 2)
            {
              /* A few single ops, then on. */
              for (int k = 0; k < 3; k++)
                {
                  g_assert_true (tw_session_step_op (s, &error));
                  tw_snapshot_free (pop_kind (s, TW_SNAP_PAUSED));
                }
            }
          g_assert_true (tw_session_run (s, &error));
        }
      tw_snapshot_free (sn);
    }
  /* act2's backward once per step, plus the step=3 pause. */
  g_assert_cmpint (pauses, ==, steps + 1);
  assert_params_equal (tw_trainer_params (tw_session_trainer (s)), tw_trainer_params (ref),
                       "pause/continue");
}

static void
test_pause_continue_eager (void)
{
  check_pause_continue (TW_MODE_EAGER);
}

static void
test_pause_continue_compiled (void)
{
  check_pause_continue (TW_MODE_COMPILED);
}

/* A stop while paused inside the update phase finishes the step's updates:
 * every parameter is as after one whole step, none half-updated. */
static void
check_stop_in_update (tw_exec_mode mode)
{
  g_autoptr (tw_model) m = make_model (TRUE);
  g_autoptr (tw_trainer) ref = reference_run (m, mode, 1);
  g_autoptr (tw_trainer) ref0 = reference_run (m, mode, 0);
  g_autoptr (tw_session) s = new_session (m, mode, 4, 1);
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_session_step_op (s, &error));
  int updates_seen = 0;
  for (int i = 0; i < 200 && updates_seen < 1; i++)
    {
      g_autoptr (tw_snapshot) sn = pop_kind (s, TW_SNAP_PAUSED);
      if (sn->phase == TW_PHASE_UPDATE)
        updates_seen++;
      else
        g_assert_true (tw_session_step_op (s, &error));
    }
  g_assert_cmpint (updates_seen, ==, 1);
  /* Paused after the first parameter's update: that one moved, another not yet. */
  g_assert_true (tw_session_stop (s, &error));
  g_autoptr (tw_snapshot) f = pop_kind (s, TW_SNAP_FINISHED);
  g_assert_cmpint (f->state, ==, TW_SESSION_STOPPED);
  g_assert_nonnull (strstr (f->message, "finishing"));
  g_assert_cmpint (tw_trainer_step_count (tw_session_trainer (s)), ==, 1);
  assert_params_equal (tw_trainer_params (tw_session_trainer (s)), tw_trainer_params (ref),
                       "stop inside an update");
  (void) ref0;

  /* Stopped in the forward: nothing was updated, the step does not count. */
  g_autoptr (tw_session) s2 = new_session (m, mode, 4, 1);
  g_assert_true (tw_session_step_op (s2, &error));
  tw_snapshot_free (pop_kind (s2, TW_SNAP_PAUSED));
  g_assert_true (tw_session_stop (s2, &error));
  g_autoptr (tw_snapshot) f2 = pop_kind (s2, TW_SNAP_FINISHED);
  g_assert_cmpint (f2->state, ==, TW_SESSION_STOPPED);
  g_assert_cmpint (tw_trainer_step_count (tw_session_trainer (s2)), ==, 0);
  tw_params *p2 = tw_trainer_params (tw_session_trainer (s2));
  for (int i = 0; i < tw_params_count (p2); i++)
    {
      tw_param *a = tw_params_at (p2, i);
      g_assert_true (same_bytes (a->value, tw_params_get (tw_trainer_params (ref0), a->name)->value));
    }
}

static void
test_stop_in_update_eager (void)
{
  check_stop_in_update (TW_MODE_EAGER);
}

static void
test_stop_in_update_compiled (void)
{
  check_stop_in_update (TW_MODE_COMPILED);
}

/* ---- live changes ----------------------------------------------------------------- */

/* set-lr while paused between iterations applies from the next step on, and
 * computes what the trainer does with the same change. */
static void
check_set_lr (tw_exec_mode mode)
{
  g_autoptr (tw_model) m = make_model (TRUE);
  g_autoptr (tw_trainer) ref = reference_run (m, mode, 2);
  /* The reference goes on with lr 0.01 for two more steps. */
  {
    tw_optimizer_config c = *tw_optimizer_get_config (tw_trainer_optimizer (ref));
    c.lr = 0.01;
    tw_trainer_set_optimizer_config (ref, &c);
    reference_continue (ref, m, 4);
  }
  /* The reference's trainer changed m's recipe: a fresh model for the session. */
  g_autoptr (tw_model) m2 = make_model (TRUE);
  g_autoptr (tw_session) s = new_session (m2, mode, 4, 1);
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_session_add_breakpoint (s, "step=3", &error));
  g_assert_true (tw_session_run (s, &error));
  tw_snapshot *sn;
  double lrs[4] = { 0 };
  int n = 0;
  while ((sn = tw_session_pop (s, POP_TIMEOUT_US)))
    {
      if (sn->kind == TW_SNAP_METRICS)
        lrs[n++] = sn->lr;
      else if (sn->kind == TW_SNAP_PAUSED)
        {
          /* Refused: bad values, and stepping is fine but running twice is not. */
          g_assert_false (tw_session_set_lr (s, -1, &error));
          g_clear_error (&error);
          g_assert_true (tw_session_set_lr (s, 0.01, &error));
          g_assert_true (tw_session_run (s, &error));
          g_assert_false (tw_session_run (s, &error));
          g_assert_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_STATE);
          g_clear_error (&error);
        }
      else if (sn->kind == TW_SNAP_FINISHED)
        {
          tw_snapshot_free (sn);
          break;
        }
      tw_snapshot_free (sn);
    }
  g_assert_cmpint (n, ==, 4);
  g_assert_cmpfloat (lrs[1], ==, 0.05);
  g_assert_cmpfloat (lrs[2], ==, 0.01);
  g_assert_cmpfloat (lrs[3], ==, 0.01);
  assert_params_equal (tw_trainer_params (tw_session_trainer (s)), tw_trainer_params (ref),
                       "set-lr");
}

static void
test_set_lr_eager (void)
{
  check_set_lr (TW_MODE_EAGER);
}

static void
test_set_lr_compiled (void)
{
  check_set_lr (TW_MODE_COMPILED);
}

/* A frozen node keeps its weights bit for bit while the others train. */
static void
check_freeze (tw_exec_mode mode)
{
  g_autoptr (tw_model) m = make_model (TRUE);
  g_autoptr (tw_trainer) init = reference_run (m, mode, 0);
  g_autoptr (tw_session) s = new_session (m, mode, 5, 1);
  g_autoptr (GError) error = NULL;
  g_assert_false (tw_session_freeze (s, "act", TRUE, &error));   /* no parameters */
  g_assert_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_GRAPH);
  g_clear_error (&error);
  g_assert_false (tw_session_freeze (s, "nope", TRUE, &error));
  g_clear_error (&error);
  g_assert_true (tw_session_freeze (s, "fc2", TRUE, &error));
  run_to_end (s);
  tw_params *p = tw_trainer_params (tw_session_trainer (s)), *p0 = tw_trainer_params (init);
  g_assert_true (same_bytes (tw_params_get (p, "fc2.weight")->value,
                             tw_params_get (p0, "fc2.weight")->value));
  g_assert_true (same_bytes (tw_params_get (p, "fc2.bias")->value,
                             tw_params_get (p0, "fc2.bias")->value));
  g_assert_false (same_bytes (tw_params_get (p, "fc1.weight")->value,
                              tw_params_get (p0, "fc1.weight")->value));
  g_assert_false (same_bytes (tw_params_get (p, "fc3.weight")->value,
                              tw_params_get (p0, "fc3.weight")->value));
}

static void
test_freeze_eager (void)
{
  check_freeze (TW_MODE_EAGER);
}

static void
test_freeze_compiled (void)
{
  check_freeze (TW_MODE_COMPILED);
}

/* A graph edit while paused: fc2 loses its bias (changed: initialised again),
 * fc1 and fc3 are unchanged (weights and momentum kept bit for bit).  The
 * session computes what the trainer computes with the same replacement. */
static void
check_graph_edit (tw_exec_mode mode)
{
  g_autoptr (tw_model) m = make_model (TRUE);
  g_autoptr (tw_model) edited = make_model (FALSE);
  g_autoptr (GError) error = NULL;

  /* The reference: 2 steps, replace, 2 steps; what was kept is checked here. */
  g_autoptr (tw_trainer) ref = reference_run (m, mode, 2);
  g_autoptr (tw_tensor) w1 = tw_tensor_clone (tw_params_get (tw_trainer_params (ref), "fc1.weight")->value);
  g_autoptr (tw_tensor) m1 = tw_tensor_clone (tw_params_get (tw_trainer_params (ref), "fc1.weight")->state[0]);
  tw_graph_change change = { 0 };
  g_assert_true (tw_trainer_replace_graph (ref, tw_graph_copy (edited->graph), &change, &error));
  g_assert_no_error (error);
  g_assert_true (strv_has (change.kept, "fc1") && strv_has (change.kept, "fc3"));
  g_assert_true (strv_has (change.reinitialised, "fc2"));
  g_assert_false (strv_has (change.kept, "fc2"));
  tw_graph_change_clear (&change);
  tw_param *pw = tw_params_get (tw_trainer_params (ref), "fc1.weight");
  g_assert_true (same_bytes (pw->value, w1));
  g_assert_true (same_bytes (pw->state[0], m1));
  g_assert_null (tw_params_get (tw_trainer_params (ref), "fc2.bias"));
  g_assert_null (tw_params_get (tw_trainer_params (ref), "fc2.weight")->state[0]);
  reference_continue (ref, m, 4);

  /* The reference's trainer replaced m's graph: a fresh model for the session. */
  g_autoptr (tw_model) m2 = make_model (TRUE);
  g_autoptr (tw_session) s = new_session (m2, mode, 4, 1);
  /* Editing while idle is allowed; while running it is refused. */
  g_assert_true (tw_session_step_iteration (s, &error));
  tw_snapshot_free (pop_kind (s, TW_SNAP_PAUSED));
  g_assert_true (tw_session_step_iteration (s, &error));
  g_autoptr (tw_snapshot) p2 = pop_kind (s, TW_SNAP_PAUSED);
  g_assert_cmpint (p2->step, ==, 2);

  /* A graph that does not fit is refused naming the node; the old one stays. */
  g_autoptr (tw_model) broken = make_model (TRUE);
  tw_node *bad = tw_graph_find (broken->graph, "fc3");
  tw_graph_set_input_ref (broken->graph, bad, 0, "x");   /* still fine: 2 features */
  tw_node *bad2 = tw_graph_find (broken->graph, "act2");
  tw_graph_set_input_ref (broken->graph, bad2, 0, "nowhere");
  g_assert_false (tw_session_replace_graph (s, broken->graph, &error));
  g_assert_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_GRAPH);
  g_assert_nonnull (strstr (error->message, "act2"));
  g_clear_error (&error);

  g_assert_true (tw_session_replace_graph (s, edited->graph, &error));
  g_assert_true (tw_session_run (s, &error));
  g_assert_false (tw_session_replace_graph (s, edited->graph, &error));
  g_assert_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_STATE);
  g_clear_error (&error);
  g_autoptr (tw_snapshot) gc = pop_kind (s, TW_SNAP_GRAPH_CHANGED);
  g_assert_true (strv_has (gc->change.kept, "fc1") && strv_has (gc->change.kept, "fc3"));
  g_assert_true (strv_has (gc->change.reinitialised, "fc2"));
  g_autoptr (tw_snapshot) f = pop_kind (s, TW_SNAP_FINISHED);
  g_assert_cmpint (f->state, ==, TW_SESSION_FINISHED);
  assert_params_equal (tw_trainer_params (tw_session_trainer (s)), tw_trainer_params (ref),
                       "graph edit");
}

static void
test_graph_edit_eager (void)
{
  check_graph_edit (TW_MODE_EAGER);
}

static void
test_graph_edit_compiled (void)
{
  check_graph_edit (TW_MODE_COMPILED);
}

/* Commands at the wrong time get an error, never a hang. */
static void
test_bad_commands (void)
{
  g_autoptr (tw_model) m = make_model (TRUE);
  /* Long enough (thousands of steps) that it is still running when the
   * commands below arrive; it is stopped long before the end. */
  m->recipe.epochs = 100000;
  g_autoptr (tw_session) s = new_session (m, TW_MODE_EAGER, 0, 1);
  g_autoptr (GError) error = NULL;
  g_assert_false (tw_session_pause (s, &error));
  g_assert_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_STATE);
  g_clear_error (&error);
  g_assert_false (tw_session_add_breakpoint (s, "loss>abc", &error));
  g_assert_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_ARG);
  g_clear_error (&error);
  g_assert_false (tw_session_add_breakpoint (s, "node=missing", &error));
  g_assert_nonnull (strstr (error->message, "missing"));
  g_clear_error (&error);
  g_assert_true (tw_session_run (s, &error));
  g_assert_false (tw_session_step_op (s, &error));
  g_assert_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_STATE);
  g_clear_error (&error);
  g_assert_true (tw_session_pause (s, &error));
  g_autoptr (tw_snapshot) p = pop_kind (s, TW_SNAP_PAUSED);
  g_assert_true (tw_session_stop (s, &error));
  g_autoptr (tw_snapshot) f = pop_kind (s, TW_SNAP_FINISHED);
  g_assert_false (tw_session_run (s, &error));
  g_assert_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_STATE);
}

/* Freed while running or paused mid-step: everything goes (ASan checks). */
static void
test_free_midway (void)
{
  g_autoptr (tw_model) m = make_model (TRUE);
  for (int mode = 0; mode < 2; mode++)
    {
      g_autoptr (GError) error = NULL;
      tw_session *s = new_session (m, mode, 0, 1);
      g_assert_true (tw_session_add_breakpoint (s, "node=fc2:backward", &error));
      g_assert_true (tw_session_run (s, &error));
      tw_snapshot_free (pop_kind (s, TW_SNAP_PAUSED));
      tw_session_free (s);
      s = new_session (m, mode, 0, 1);
      g_assert_true (tw_session_run (s, &error));
      tw_session_free (s);
    }
}

typedef struct
{
  tw_session *s;
  tw_params *out;
} concurrent;

/* Two sessions at once, 1 and 2 threads: each computes what it computes alone. */
static void
test_concurrent (void)
{
  g_autoptr (tw_model) m = make_model (TRUE);
  g_autoptr (GError) error = NULL;
  tw_session *a = new_session (m, TW_MODE_EAGER, 6, 1);
  tw_session *b = new_session (m, TW_MODE_COMPILED, 6, 2);
  g_assert_true (tw_session_run (a, &error));
  g_assert_true (tw_session_run (b, &error));
  g_autoptr (tw_snapshot) fa = pop_kind (a, TW_SNAP_FINISHED);
  g_autoptr (tw_snapshot) fb = pop_kind (b, TW_SNAP_FINISHED);
  tw_session *a2 = new_session (m, TW_MODE_EAGER, 6, 1);
  run_to_end (a2);
  tw_session *b2 = new_session (m, TW_MODE_COMPILED, 6, 2);
  run_to_end (b2);
  assert_params_equal (tw_trainer_params (tw_session_trainer (a)),
                       tw_trainer_params (tw_session_trainer (a2)), "concurrent, 1 thread");
  assert_params_equal (tw_trainer_params (tw_session_trainer (b)),
                       tw_trainer_params (tw_session_trainer (b2)), "concurrent, 2 threads");
  tw_session_free (a);
  tw_session_free (b);
  tw_session_free (a2);
  tw_session_free (b2);
}

/* Metrics: one per step, with the batch accuracy and a gradient norm per
 * parameter that matches the gradient itself. */
static void
check_metrics (tw_exec_mode mode)
{
  g_autoptr (tw_model) m = make_model (TRUE);
  g_autoptr (tw_session) s = new_session (m, mode, 3, 1);
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_session_run (s, &error));
  int n = 0;
  for (;;)
    {
      g_autoptr (tw_snapshot) sn = tw_session_pop (s, POP_TIMEOUT_US);
      g_assert_nonnull (sn);
      if (sn->kind == TW_SNAP_FINISHED)
        break;
      if (sn->kind != TW_SNAP_METRICS)
        continue;
      n++;
      g_assert_cmpint (sn->step, ==, n);
      g_assert_true (isfinite (sn->loss) && sn->loss > 0);
      g_assert_true (sn->accuracy >= 0 && sn->accuracy <= 1);
      g_assert_cmpuint (g_strv_length (sn->param_names), ==, 6);
      for (int i = 0; sn->param_names[i]; i++)
        g_assert_true (isfinite (sn->grad_norm[i]) && sn->grad_norm[i] > 0);
    }
  g_assert_cmpint (n, ==, 3);
}

static void
test_metrics_eager (void)
{
  check_metrics (TW_MODE_EAGER);
}

static void
test_metrics_compiled (void)
{
  check_metrics (TW_MODE_COMPILED);
}

/* A watched node's output comes out every step; in compiled mode the node
 * is left unfused so that its own value exists (the session says so). */
static void
test_watch_compiled (void)
{
  g_autoptr (tw_model) m = make_model (TRUE);
  g_autoptr (tw_session) s = new_session (m, TW_MODE_COMPILED, 2, 1);
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_session_watch (s, "fc1", &error));
  g_assert_true (tw_session_run (s, &error));
  int tensors = 0;
  gboolean noted = FALSE;
  for (;;)
    {
      g_autoptr (tw_snapshot) sn = tw_session_pop (s, POP_TIMEOUT_US);
      g_assert_nonnull (sn);
      if (sn->kind == TW_SNAP_FINISHED)
        break;
      if (sn->kind == TW_SNAP_NOTE)
        noted |= strstr (sn->message, "fc1") && strstr (sn->message, "unfused");
      if (sn->kind == TW_SNAP_TENSOR && sn->phase == TW_PHASE_FORWARD)
        {
          tensors++;
          /* fc1 alone (not fused with its relu): a pre-activation with negatives. */
          g_assert_false (strv_has (sn->nodes, "act"));
          tw_snapshot_tensor *t = g_ptr_array_index (sn->tensors, 0);
          g_assert_cmpint (t->tensor->shape[1], ==, 16);
          double mn = 0;
          for (int64_t i = 0; i < tw_tensor_numel (t->tensor); i++)
            mn = MIN (mn, tw_tensor_get_flat (t->tensor, i));
          g_assert_cmpfloat (mn, <, 0);
        }
    }
  g_assert_true (noted);
  g_assert_cmpint (tensors, ==, 2);
}

/* Copies of named values while paused: parameters, gradients, optimizer
 * state, eager node outputs; what cannot be had is said in a note. */
static tw_snapshot *
request (tw_session *s, const char *name, tw_snapshot_kind want)
{
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_session_request (s, name, &error));
  return pop_kind (s, want);
}

static void
test_request (void)
{
  g_autoptr (tw_model) m = make_model (TRUE);
  g_autoptr (tw_trainer) init = reference_run (m, TW_MODE_EAGER, 0);
  g_autoptr (tw_session) s = new_session (m, TW_MODE_EAGER, 3, 1);
  g_autoptr (GError) error = NULL;
  /* Before the first command: parameters are there already. */
  g_autoptr (tw_snapshot) w0 = request (s, "fc1.weight", TW_SNAP_TENSOR);
  tw_snapshot_tensor *t = g_ptr_array_index (w0->tensors, 0);
  g_assert_true (same_bytes (t->tensor, tw_params_get (tw_trainer_params (init), "fc1.weight")->value));
  g_assert_true (tw_session_add_breakpoint (s, "node=act2:forward", &error));
  g_assert_true (tw_session_add_breakpoint (s, "step=2", &error));
  g_assert_true (tw_session_run (s, &error));
  tw_snapshot_free (pop_kind (s, TW_SNAP_PAUSED));   /* act2 of iteration 1 */
  g_autoptr (tw_snapshot) out = request (s, "fc1", TW_SNAP_TENSOR);
  t = g_ptr_array_index (out->tensors, 0);
  g_assert_cmpstr (t->role, ==, "output");
  g_assert_cmpint (t->tensor->shape[0], ==, 32);
  g_assert_cmpint (t->tensor->shape[1], ==, 16);
  g_autoptr (tw_snapshot) none = request (s, "nope", TW_SNAP_NOTE);
  g_assert_nonnull (strstr (none->message, "nope"));
  g_assert_true (tw_session_run (s, &error));
  /* Between iterations 1 and 2: the momentum buffer exists, and is the
   * first step's gradient (SGD momentum starts its buffer at the gradient). */
  tw_snapshot_free (pop_kind (s, TW_SNAP_PAUSED));
  g_autoptr (tw_snapshot) st = request (s, "state:fc3.bias:0", TW_SNAP_TENSOR);
  g_autoptr (tw_snapshot) gr = request (s, "grad:fc3.bias", TW_SNAP_TENSOR);
  g_assert_true (same_bytes (((tw_snapshot_tensor *) g_ptr_array_index (st->tensors, 0))->tensor,
                             ((tw_snapshot_tensor *) g_ptr_array_index (gr->tensors, 0))->tensor));
  tw_session_clear_breakpoints (s);
  g_assert_true (tw_session_run (s, &error));
  g_autoptr (tw_snapshot) f = pop_kind (s, TW_SNAP_FINISHED);
  /* After the end the trainer is the caller's: still there to read. */
  g_autoptr (tw_snapshot) w1 = request (s, "fc1.weight", TW_SNAP_TENSOR);

  /* Compiled mode keeps node values only for watched nodes, and says so. */
  g_autoptr (tw_session) c = new_session (m, TW_MODE_COMPILED, 2, 1);
  g_assert_true (tw_session_step_op (c, &error));
  tw_snapshot_free (pop_kind (c, TW_SNAP_PAUSED));
  g_autoptr (tw_snapshot) cn = request (c, "fc1", TW_SNAP_NOTE);
  g_assert_nonnull (strstr (cn->message, "watch"));
}

/* Compiled mode says when it compiled a program and why. */
static void
test_compile_notes (void)
{
  g_autoptr (tw_model) m = make_model (TRUE);
  g_autoptr (tw_session) s = new_session (m, TW_MODE_COMPILED, 2, 1);
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_session_run (s, &error));
  gboolean saw = FALSE;
  for (;;)
    {
      g_autoptr (tw_snapshot) sn = tw_session_pop (s, POP_TIMEOUT_US);
      g_assert_nonnull (sn);
      if (sn->kind == TW_SNAP_NOTE && strstr (sn->message, "training program, batch 32: compiled")
          && strstr (sn->message, "first use"))
        saw = TRUE;
      if (sn->kind == TW_SNAP_FINISHED)
        break;
    }
  g_assert_true (saw);
}

/* Save Weights: between iterations the file holds the weights of the
 * steps done, bit for bit; inside the updates it is refused; after the end
 * it holds the final weights. */
static void
check_weights_file (const char *path, tw_trainer *ref)
{
  g_autoptr (GHashTable) tensors = NULL;
  g_autoptr (GHashTable) meta = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_safetensors_load (path, &tensors, &meta, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (g_hash_table_lookup (meta, "format"), ==, "twb-weights");
  tw_params *p = tw_trainer_params (ref);
  g_assert_cmpuint (g_hash_table_size (tensors), ==, tw_params_count (p));
  for (int i = 0; i < tw_params_count (p); i++)
    {
      tw_param *pa = tw_params_at (p, i);
      tw_tensor *t = g_hash_table_lookup (tensors, pa->name);
      g_assert_nonnull (t);
      g_assert_true (same_bytes (t, pa->value));
    }
}

static void
test_save_weights (void)
{
  g_autoptr (tw_model) m = make_model (TRUE);
  g_autoptr (tw_trainer) after2 = reference_run (m, TW_MODE_EAGER, 2);
  g_autoptr (tw_trainer) after3 = reference_run (m, TW_MODE_EAGER, 3);
  g_autoptr (tw_session) s = new_session (m, TW_MODE_EAGER, 3, 1);
  g_autoptr (GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("twb-weights-XXXXXX", &error);
  g_autofree char *path = g_build_filename (dir, "w.safetensors", NULL);
  g_assert_true (tw_session_add_breakpoint (s, "step=3", &error));
  g_assert_true (tw_session_run (s, &error));
  tw_snapshot_free (pop_kind (s, TW_SNAP_PAUSED));
  g_assert_true (tw_session_save_weights (s, path, &error));
  g_assert_no_error (error);
  check_weights_file (path, after2);
  /* Running: refused, nothing written. */
  tw_session_clear_breakpoints (s);
  g_assert_true (tw_session_step_op (s, &error));
  g_autoptr (tw_snapshot) op = pop_kind (s, TW_SNAP_PAUSED);
  /* Step into the updates of iteration 3. */
  int guard = 0;
  while (tw_session_get_state (s) == TW_SESSION_PAUSED && guard++ < 200)
    {
      g_autoptr (tw_snapshot) sn = NULL;
      g_assert_true (tw_session_step_op (s, &error));
      sn = pop_kind (s, TW_SNAP_PAUSED);
      if (sn->phase == TW_PHASE_UPDATE)
        break;
    }
  g_assert_false (tw_session_save_weights (s, path, &error));
  g_assert_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_STATE);
  g_assert_nonnull (strstr (error->message, "updates"));
  g_clear_error (&error);
  check_weights_file (path, after2);
  g_assert_true (tw_session_run (s, &error));
  tw_snapshot_free (pop_kind (s, TW_SNAP_FINISHED));
  g_assert_true (tw_session_save_weights (s, path, &error));
  check_weights_file (path, after3);
  g_unlink (path);
  g_rmdir (dir);
}

/* Eager to compiled at an iteration boundary: the same as a trainer that
 * switches at the same step. */
static void
test_mode_switch (void)
{
  g_autoptr (tw_model) m = make_model (TRUE);
  g_autoptr (tw_trainer) ref = reference_run (m, TW_MODE_EAGER, 2);
  tw_trainer_set_mode (ref, TW_MODE_COMPILED);
  reference_continue (ref, m, 4);
  g_autoptr (tw_model) m2 = make_model (TRUE);
  g_autoptr (tw_session) s = new_session (m2, TW_MODE_EAGER, 4, 1);
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_session_add_breakpoint (s, "step=3", &error));
  g_assert_true (tw_session_run (s, &error));
  g_autoptr (tw_snapshot) p = pop_kind (s, TW_SNAP_PAUSED);
  g_assert_false (p->compiled);
  g_assert_true (tw_session_set_mode (s, TW_MODE_COMPILED, &error));
  run_to_end (s);
  g_assert_cmpint (tw_trainer_get_mode (tw_session_trainer (s)), ==, TW_MODE_COMPILED);
  assert_params_equal (tw_trainer_params (tw_session_trainer (s)), tw_trainer_params (ref),
                       "eager to compiled");
}

static gboolean
count_iteration_ends (const tw_event *ev, gpointer user)
{
  if (ev->kind == TW_EV_ITERATION && ev->end)
    g_atomic_int_inc ((gint *) user);
  return TRUE;
}

/* A client can join and leave a session that is running or paused. */
static void
test_subscribe_live (void)
{
  g_autoptr (tw_model) m = make_model (TRUE);
  g_autoptr (tw_session) s = new_session (m, TW_MODE_EAGER, 6, 1);
  g_autoptr (GError) error = NULL;
  gint seen = 0;
  g_assert_true (tw_session_add_breakpoint (s, "step=3", &error));
  g_assert_true (tw_session_run (s, &error));
  tw_snapshot_free (pop_kind (s, TW_SNAP_PAUSED));       /* before iteration 3 */
  guint id = tw_session_subscribe (s, TW_EV_BIT (TW_EV_ITERATION), count_iteration_ends, &seen,
                                   NULL);
  g_assert_cmpuint (id, >, 0);
  g_assert_true (tw_session_add_breakpoint (s, "step=5", &error));
  g_assert_true (tw_session_run (s, &error));
  tw_snapshot_free (pop_kind (s, TW_SNAP_PAUSED));       /* before iteration 5 */
  g_assert_cmpint (g_atomic_int_get (&seen), ==, 2);    /* iterations 3 and 4 */
  tw_session_unsubscribe (s, id);
  run_to_end (s);
  g_assert_cmpint (g_atomic_int_get (&seen), ==, 2);
}

/* A client that poisons fc1's weight gradient as fc1's backward ends (after
 * the session's own client has seen that event): the NaN first exists in a
 * parameter gradient, which the NaN watch leaves to the optimizer's pass. */
static gboolean
poison_grad (const tw_event *ev, gpointer user)
{
  if (ev->kind != TW_EV_BACKWARD || !ev->end || strcmp (ev->ident->nodes[0], "fc1") != 0)
    return TRUE;
  /* fc1's outputs: the gradient of its input x (none), then weight, bias. */
  tw_tensor *gw = ev->outputs[ev->n_outputs - 2];
  g_assert_nonnull (gw);
  tw_tensor_f32 (gw)[3] = NAN;
  return TRUE;
}

static void
test_nan_in_param_grad (void)
{
  g_autoptr (tw_model) m = make_model (TRUE);
  for (int brk = 0; brk < 2; brk++)
    {
      g_autoptr (tw_session) s = new_session (m, TW_MODE_EAGER, 3, 1);
      g_autoptr (GError) error = NULL;
      tw_bus_subscribe (tw_session_bus (s), TW_EV_BIT (TW_EV_BACKWARD), poison_grad, NULL, NULL);
      if (brk)
        g_assert_true (tw_session_add_breakpoint (s, "nan", &error));
      g_assert_true (tw_session_run (s, &error));
      const char *want = "NaN first produced by node fc1 (linear_grad_weight kernel, backward) "
                         "in the gradient of fc1.weight";
      if (brk)
        {
          g_autoptr (tw_snapshot) p = pop_kind (s, TW_SNAP_PAUSED);
          g_assert_nonnull (strstr (p->reason, want));
          g_assert_cmpint (p->phase, ==, TW_PHASE_UPDATE);
          g_assert_cmpint (p->iteration, ==, 1);
          g_assert_true (tw_session_stop (s, &error));
          g_autoptr (tw_snapshot) f = pop_kind (s, TW_SNAP_FINISHED);
        }
      else
        {
          g_autoptr (tw_snapshot) f = pop_kind (s, TW_SNAP_FINISHED);
          g_assert_cmpint (f->state, ==, TW_SESSION_FAILED);
          g_assert_nonnull (strstr (f->message, want));
          g_assert_nonnull (strstr (f->message, "step 1:"));
        }
    }
}

/* ---- the event bus -------------------------------------------------------------------- */

typedef struct
{
  GArray *log;          /* event copies without tensors */
  GHashTable *fwd, *bwd; /* node ids seen */
  int depth, max_depth;
  gboolean bad_nesting;
} ev_log;

typedef struct
{
  tw_event_kind kind;
  gboolean end;
  gint64 t0, t1;
  const tw_param *param;
  guint64 step;
} ev_rec;

static gboolean
log_event (const tw_event *ev, gpointer user)
{
  ev_log *l = user;
  ev_rec r = { ev->kind, ev->end, ev->t_start, ev->t_end, ev->param, ev->step };
  g_array_append_val (l->log, r);
  if (ev->kind == TW_EV_GRAD_READY)
    return TRUE;
  if (!ev->end)
    {
      l->depth++;
      l->max_depth = MAX (l->max_depth, l->depth);
    }
  else if (--l->depth < 0)
    l->bad_nesting = TRUE;
  if ((ev->kind == TW_EV_FORWARD || ev->kind == TW_EV_BACKWARD) && ev->end)
    for (int k = 0; k < ev->ident->n_nodes; k++)
      g_hash_table_add (ev->kind == TW_EV_FORWARD ? l->fwd : l->bwd, (gpointer) g_intern_string (ev->ident->nodes[k]));
  return TRUE;
}

static gboolean
count_iterations (const tw_event *ev, gpointer user)
{
  g_assert_cmpint (ev->kind, ==, TW_EV_ITERATION);
  *(int *) user += ev->end;
  return TRUE;
}

/* Events nest (begin/end pairs, kernels inside their op, ops inside the
 * iteration); the op events of a step cover the step's time (within 5%);
 * every node appears in forward and backward; grad_ready comes once per
 * parameter per step, before that parameter's update. */
static void
check_bus (tw_exec_mode mode)
{
  /* Big enough that kernels, not bookkeeping, take the time. */
  g_autoptr (tw_model) m = tw_model_new ("bus-test");
  {
    tw_graph *g = m->graph;
    tw_attrs *h = twt_attrs_int ("out_features", 512), *o = twt_attrs_int ("out_features", 10);
    tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]) { 256 }, "data");
    tw_graph_add_input (g, "y", TW_I64, 0, NULL, "label");
    tw_graph_add (g, "fc1", "linear", h, "x", NULL);
    tw_graph_add (g, "act", "relu", NULL, "fc1", NULL);
    tw_graph_add (g, "fc2", "linear", h, "act", NULL);
    tw_graph_add (g, "act2", "gelu", NULL, "fc2", NULL);
    tw_graph_add (g, "fc3", "linear", o, "act2", NULL);
    tw_graph_add (g, "loss", "cross_entropy", NULL, "fc3", "y", NULL);
    tw_graph_set_outputs (g, (const char *[]) { "fc3", NULL });
    tw_attrs_free (h);
    tw_attrs_free (o);
  }
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_trainer) tr = tw_trainer_new (m, &error);
  g_assert_no_error (error);
  tw_trainer_set_mode (tr, mode);
  ev_log l = { g_array_new (FALSE, FALSE, sizeof (ev_rec)),
               g_hash_table_new (g_direct_hash, g_direct_equal),
               g_hash_table_new (g_direct_hash, g_direct_equal), 0, 0, FALSE };
  g_autoptr (tw_bus) bus = tw_bus_new ();
  tw_bus_subscribe (bus, TW_EV_MASK_ALL, log_event, &l, NULL);
  /* A second client sees the same events. */
  int iterations = 0;
  tw_bus_subscribe (bus, TW_EV_BIT (TW_EV_ITERATION), count_iterations, &iterations, NULL);
  tw_trainer_set_bus (tr, bus);
  g_autoptr (tw_tensor) x = tw_tensor_new (TW_F32, 2, (int64_t[]) { 128, 256 });
  tw_rng_fill_uniform (tw_tensor_f32 (x), tw_tensor_numel (x), 5, 1, -1.0f, 1.0f);
  g_autoptr (tw_tensor) y = tw_tensor_zeros (TW_I64, 1, (int64_t[]) { 128 });
  const int steps = 6;
  for (int i = 0; i < steps; i++)
    g_assert_true (tw_trainer_step (tr, x, y, NULL, &error));
  g_assert_cmpint (iterations, ==, steps);
  if (l.depth != 0)
    {
      int begins[TW_EV_N_KINDS] = { 0 }, ends[TW_EV_N_KINDS] = { 0 };
      for (guint i = 0; i < l.log->len; i++)
        {
          ev_rec *r = &g_array_index (l.log, ev_rec, i);
          (r->end ? ends : begins)[r->kind]++;
        }
      for (int k = 0; k < TW_EV_N_KINDS; k++)
        g_test_message ("%s: %d begin, %d end", tw_event_kind_name (k), begins[k], ends[k]);
    }
  g_assert_false (l.bad_nesting);
  g_assert_cmpint (l.depth, ==, 0);
  g_assert_cmpint (l.max_depth, >=, 2);

  /* Coverage of the nodes. */
  const char *nodes[] = { "fc1", "act", "fc2", "act2", "fc3", "loss" };
  for (guint i = 0; i < G_N_ELEMENTS (nodes); i++)
    {
      if (!g_hash_table_contains (l.fwd, g_intern_string (nodes[i])))
        g_error ("%s: node %s has no forward event", mode ? "compiled" : "eager", nodes[i]);
      if (!g_hash_table_contains (l.bwd, g_intern_string (nodes[i])))
        g_error ("%s: node %s has no backward event", mode ? "compiled" : "eager", nodes[i]);
    }

  /* Per step: op time vs step time; grad_ready order and counts. */
  g_autoptr (GArray) ratios = g_array_new (FALSE, FALSE, sizeof (double));
  gint64 iter0 = 0, covered = 0;
  int depth = 0;
  g_autoptr (GHashTable) ready = g_hash_table_new (g_direct_hash, g_direct_equal);
  int n_params = 0;
  for (int i = 0; i < tw_params_count (tw_trainer_params (tr)); i++)
    n_params += tw_params_at (tw_trainer_params (tr), i)->trainable;
  for (guint i = 0; i < l.log->len; i++)
    {
      ev_rec *r = &g_array_index (l.log, ev_rec, i);
      if (r->kind == TW_EV_ITERATION && !r->end)
        {
          iter0 = r->t0;
          covered = 0;
          depth = 0;
          g_hash_table_remove_all (ready);
          continue;
        }
      if (r->kind == TW_EV_ITERATION && r->end)
        {
          double ratio = (double) covered / (double) (r->t1 - iter0);
          g_array_append_val (ratios, ratio);
          g_assert_cmpint (g_hash_table_size (ready), ==, n_params);
          continue;
        }
      if (r->kind == TW_EV_GRAD_READY)
        {
          g_assert_false (g_hash_table_contains (ready, r->param));
          g_hash_table_add (ready, (gpointer) r->param);
          continue;
        }
      if (r->kind == TW_EV_UPDATE && !r->end)
        {
          /* Unfused: the gradient is ready before the update starts; a fused
           * gradient+update publishes grad_ready before it ends. */
          gboolean found = g_hash_table_contains (ready, r->param);
          for (guint j = i + 1; !found && j < l.log->len; j++)
            {
              ev_rec *q = &g_array_index (l.log, ev_rec, j);
              if (q->kind == TW_EV_UPDATE && q->end)
                break;
              found = q->kind == TW_EV_GRAD_READY && q->param == r->param;
            }
          if (!found)
            g_error ("%s: an update came before its parameter's grad_ready",
                     mode ? "compiled" : "eager");
        }
      if (r->kind == TW_EV_KERNEL)
        continue;
      if (!r->end)
        depth++;
      else if (--depth == 0)
        covered += r->t1 - r->t0;
    }
  g_assert_cmpint (ratios->len, ==, steps);
  double best = 0;
  for (guint i = 0; i < ratios->len; i++)
    best = MAX (best, g_array_index (ratios, double, i));
  g_test_message ("%s: op events cover %.1f%% of the step (best of %d)", mode ? "compiled" : "eager",
                  best * 100, steps);
  g_assert_cmpfloat (best, >=, 0.95);
  g_assert_cmpfloat (best, <=, 1.0);
  g_array_unref (l.log);
  g_hash_table_unref (l.fwd);
  g_hash_table_unref (l.bwd);
}

static void
test_bus_eager (void)
{
  check_bus (TW_MODE_EAGER);
}

static void
test_bus_compiled (void)
{
  check_bus (TW_MODE_COMPILED);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  tw_set_num_threads (1);
  g_test_add_func ("/engine/session/step-op/eager", test_step_op_eager);
  g_test_add_func ("/engine/session/step-op/compiled", test_step_op_compiled);
  g_test_add_func ("/engine/session/step-layer/eager", test_step_layer_eager);
  g_test_add_func ("/engine/session/step-layer/compiled", test_step_layer_compiled);
  g_test_add_func ("/engine/session/pause-continue/eager", test_pause_continue_eager);
  g_test_add_func ("/engine/session/pause-continue/compiled", test_pause_continue_compiled);
  g_test_add_func ("/engine/session/stop-in-update/eager", test_stop_in_update_eager);
  g_test_add_func ("/engine/session/stop-in-update/compiled", test_stop_in_update_compiled);
  g_test_add_func ("/engine/session/set-lr/eager", test_set_lr_eager);
  g_test_add_func ("/engine/session/set-lr/compiled", test_set_lr_compiled);
  g_test_add_func ("/engine/session/freeze/eager", test_freeze_eager);
  g_test_add_func ("/engine/session/freeze/compiled", test_freeze_compiled);
  g_test_add_func ("/engine/session/graph-edit/eager", test_graph_edit_eager);
  g_test_add_func ("/engine/session/graph-edit/compiled", test_graph_edit_compiled);
  g_test_add_func ("/engine/session/bad-commands", test_bad_commands);
  g_test_add_func ("/engine/session/free-midway", test_free_midway);
  g_test_add_func ("/engine/session/concurrent", test_concurrent);
  g_test_add_func ("/engine/session/metrics/eager", test_metrics_eager);
  g_test_add_func ("/engine/session/metrics/compiled", test_metrics_compiled);
  g_test_add_func ("/engine/session/watch/compiled", test_watch_compiled);
  g_test_add_func ("/engine/session/nan-in-parameter-gradient", test_nan_in_param_grad);
  g_test_add_func ("/engine/session/request", test_request);
  g_test_add_func ("/engine/session/subscribe-live", test_subscribe_live);
  g_test_add_func ("/engine/session/mode-switch", test_mode_switch);
  g_test_add_func ("/engine/session/save-weights", test_save_weights);
  g_test_add_func ("/engine/session/compile-notes", test_compile_notes);
  g_test_add_func ("/engine/bus/eager", test_bus_eager);
  g_test_add_func ("/engine/bus/compiled", test_bus_compiled);
  return g_test_run ();
}
