/* test-init-weights.c — starting from a state_dict: through a session, and
 * the store's checks (missing, unexpected, strict, shapes, dtypes), which
 * leave the parameters as they were when they fail.
 *
 * The fixture is tests/cli/data/tiny-bn.* (written by PyTorch, see
 * gen-tiny-bn.py there): conv (no bias), batch norm, linear. */
#include "engine/params.h"
#include "engine/safetensors.h"
#include "engine/session.h"

#include <string.h>

static char *
fixture (const char *name)
{
  return g_build_filename (TW_TEST_DATA_DIR, "..", "..", "cli", "data", name, NULL);
}

static tw_model *
load_tiny (void)
{
  g_autofree char *path = fixture ("tiny-bn.json");
  g_autoptr (GError) error = NULL;
  tw_model *m = tw_model_load (path, &error);
  g_assert_no_error (error);
  g_assert_cmpint (tw_graph_infer (m->graph), ==, 0);
  return m;
}

static void
assert_strv (char **got, const char *const *want)
{
  g_autofree char *a = g_strjoinv (",", got);
  g_autofree char *b = g_strjoinv (",", (char **) want);
  g_assert_cmpstr (a, ==, b);
}

/* Through the session API: every value is the file's, bit for bit; the
 * batch counter is ignored; once the run has started, refused. */
static void
test_session (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = load_tiny ();
  g_autofree char *x = fixture ("tiny-bn-x.npy");
  g_autofree char *st = fixture ("tiny-bn.safetensors");
  tw_dataset *train = tw_dataset_load_npy (x, NULL, &error);
  g_assert_no_error (error);
  tw_session_options o;
  tw_session_options_init (&o);
  o.max_steps = 1;
  o.evaluate_test = FALSE;
  g_autoptr (tw_session) s = tw_session_new (m, train, NULL, NULL, &o, &error);
  tw_session_options_clear (&o);
  g_assert_no_error (error);

  tw_state_dict_report rep = { 0 };
  g_assert_true (tw_session_init_weights (s, st, TRUE, &rep, &error));
  g_assert_no_error (error);
  assert_strv (rep.loaded, (const char *const[]) { "conv.weight", "bn.weight", "bn.bias",
                                                   "bn.running_mean", "bn.running_var",
                                                   "fc.weight", "fc.bias", NULL });
  assert_strv (rep.missing, (const char *const[]) { NULL });
  assert_strv (rep.unexpected, (const char *const[]) { NULL });
  assert_strv (rep.ignored, (const char *const[]) { "bn.num_batches_tracked", NULL });
  tw_state_dict_report_clear (&rep);

  g_autoptr (GHashTable) tensors = NULL;
  g_assert_true (tw_safetensors_load (st, &tensors, NULL, &error));
  tw_params *p = tw_trainer_params (tw_session_trainer (s));
  for (int i = 0; i < tw_params_count (p); i++)
    {
      tw_param *e = tw_params_at (p, i);
      tw_tensor *t = g_hash_table_lookup (tensors, e->name);
      g_assert_nonnull (t);
      g_assert_cmpmem (tw_tensor_data (e->value), tw_tensor_nbytes (e->value), tw_tensor_data (t),
                       tw_tensor_nbytes (t));
    }

  g_assert_true (tw_session_run (s, &error));
  g_autoptr (tw_snapshot) fin = NULL;
  while ((fin = tw_session_pop (s, -1))->kind != TW_SNAP_FINISHED)
    g_clear_pointer (&fin, tw_snapshot_free);
  g_assert_cmpint (fin->state, ==, TW_SESSION_FINISHED);
  g_assert_false (tw_session_init_weights (s, st, FALSE, NULL, &error));
  g_assert_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_STATE);
}

/* A store of two entries: w f32 [2, 3] (trainable) and b f32 [3]. */
static tw_params *
small_store (void)
{
  tw_params *p = tw_params_new ();
  g_autoptr (tw_tensor) w = tw_tensor_new (TW_F32, 2, (int64_t[]) { 2, 3 });
  g_autoptr (tw_tensor) b = tw_tensor_new (TW_F32, 1, (int64_t[]) { 3 });
  tw_tensor_fill (w, 1.0);
  tw_tensor_fill (b, 2.0);
  tw_params_set (p, "fc.weight", w, TRUE);
  tw_params_set (p, "fc.bias", b, TRUE);
  return p;
}

static tw_tensor *
filled (tw_dtype dtype, int ndim, const int64_t *shape, double v)
{
  tw_tensor *t = tw_tensor_new (dtype, ndim, shape);
  tw_tensor_fill (t, v);
  return t;
}

static void
assert_untouched (tw_params *p)
{
  g_assert_cmpfloat (tw_tensor_f32 (tw_params_get (p, "fc.weight")->value)[5], ==, 1.0f);
  g_assert_cmpfloat (tw_tensor_f32 (tw_params_get (p, "fc.bias")->value)[2], ==, 2.0f);
}

static void
test_checks (void)
{
  g_autoptr (tw_params) p = small_store ();
  g_autoptr (GHashTable) t = tw_tensor_table_new ();
  g_autoptr (GError) error = NULL;
  tw_state_dict_report rep = { 0 };

  /* Missing and unexpected: reported; strict refuses and changes nothing. */
  g_hash_table_insert (t, g_strdup ("fc.weight"), filled (TW_F64, 2, (int64_t[]) { 2, 3 }, 0.1));
  g_hash_table_insert (t, g_strdup ("head.weight"), filled (TW_F32, 1, (int64_t[]) { 4 }, 0));
  g_hash_table_insert (t, g_strdup ("bn.num_batches_tracked"), filled (TW_I64, 0, NULL, 3));
  g_assert_false (tw_params_load_state_dict (p, t, NULL, "sd", TRUE, &rep, &error));
  g_assert_error (error, TW_STATE_DICT_ERROR, TW_STATE_DICT_ERROR_STRICT);
  g_assert_nonnull (strstr (error->message, "missing keys: fc.bias"));
  /* No batch norm here: its counter is a key like any other. */
  g_assert_nonnull (strstr (error->message, "unexpected keys: bn.num_batches_tracked, head.weight"));
  g_assert_null (rep.loaded);
  assert_untouched (p);
  g_clear_error (&error);

  g_assert_true (tw_params_load_state_dict (p, t, NULL, "sd", FALSE, &rep, &error));
  g_assert_no_error (error);
  assert_strv (rep.loaded, (const char *const[]) { "fc.weight", NULL });
  assert_strv (rep.missing, (const char *const[]) { "fc.bias", NULL });
  assert_strv (rep.unexpected, (const char *const[]) { "bn.num_batches_tracked", "head.weight", NULL });
  /* F64 converted to the entry's f32; the missing one keeps its value. */
  g_assert_cmpfloat (tw_tensor_f32 (tw_params_get (p, "fc.weight")->value)[4], ==, (float) 0.1);
  g_assert_cmpfloat (tw_tensor_f32 (tw_params_get (p, "fc.bias")->value)[0], ==, 2.0f);
  tw_state_dict_report_clear (&rep);

  /* A shape mismatch names the key and both shapes; nothing changes. */
  g_autoptr (tw_params) q = small_store ();
  g_hash_table_insert (t, g_strdup ("fc.bias"), filled (TW_F32, 1, (int64_t[]) { 4 }, 5));
  g_assert_false (tw_params_load_state_dict (q, t, NULL, "sd", FALSE, &rep, &error));
  g_assert_error (error, TW_STATE_DICT_ERROR, TW_STATE_DICT_ERROR_SHAPE);
  g_assert_cmpstr (error->message, ==, "sd: tensor 'fc.bias' has shape [4]; the model's parameter is [3]");
  assert_untouched (q);
  g_clear_error (&error);

  /* Integers for a float parameter. */
  g_hash_table_insert (t, g_strdup ("fc.bias"), filled (TW_I64, 1, (int64_t[]) { 3 }, 5));
  g_assert_false (tw_params_load_state_dict (q, t, NULL, "sd", FALSE, &rep, &error));
  g_assert_error (error, TW_STATE_DICT_ERROR, TW_STATE_DICT_ERROR_DTYPE);
  g_assert_nonnull (strstr (error->message, "'fc.bias' is i64; the model's parameter is f32"));
  assert_untouched (q);
  g_clear_error (&error);

  /* A twb checkpoint's optimizer state is ignored, not unexpected. */
  g_hash_table_insert (t, g_strdup ("fc.bias"), filled (TW_F32, 1, (int64_t[]) { 3 }, 5));
  g_hash_table_remove (t, "head.weight");
  g_hash_table_remove (t, "bn.num_batches_tracked");
  g_hash_table_insert (t, g_strdup ("optimizer.fc.bias.0"), filled (TW_F32, 1, (int64_t[]) { 3 }, 0));
  g_autoptr (GHashTable) meta = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_hash_table_insert (meta, g_strdup ("format"), g_strdup ("twb-checkpoint"));
  g_assert_true (tw_params_load_state_dict (q, t, meta, "sd", TRUE, &rep, &error));
  g_assert_no_error (error);
  assert_strv (rep.ignored, (const char *const[]) { "optimizer.fc.bias.0", NULL });
  g_assert_cmpfloat (tw_tensor_f32 (tw_params_get (q, "fc.bias")->value)[1], ==, 5.0f);
  tw_state_dict_report_clear (&rep);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/init-weights/session", test_session);
  g_test_add_func ("/engine/init-weights/checks", test_checks);
  return g_test_run ();
}
