/* opcheck.c — guard-byte forward runs and finite-difference gradient checks. */
#include "opcheck.h"

#include "engine/model.h"
#include "engine/params.h"
#include "engine/rng.h"
#include "engine/train.h"

#include <math.h>
#include <string.h>

#define GUARD 64
#define GUARD_PATTERN 0x5A

tw_tensor *
twt_randn (tw_dtype dtype, int ndim, const int64_t *shape, guint64 seed)
{
  tw_tensor *t = tw_tensor_new (dtype, ndim, shape);
  for (int64_t i = 0; i < tw_tensor_numel (t); i++)
    tw_tensor_set_flat (t, i, tw_rng_normal (seed, 0x7e57, (uint64_t) i));
  return t;
}

tw_tensor *
twt_uniform (tw_dtype dtype, int ndim, const int64_t *shape, guint64 seed, double lo, double hi)
{
  tw_tensor *t = tw_tensor_new (dtype, ndim, shape);
  for (int64_t i = 0; i < tw_tensor_numel (t); i++)
    tw_tensor_set_flat (t, i, lo + (hi - lo) * tw_rng_uniform (seed, 0x7e58, (uint64_t) i));
  return t;
}

tw_tensor *
twt_randint (int ndim, const int64_t *shape, guint64 seed, int64_t hi)
{
  tw_tensor *t = tw_tensor_new (TW_I64, ndim, shape);
  for (int64_t i = 0; i < tw_tensor_numel (t); i++)
    tw_tensor_i64 (t)[i] = (int64_t) (tw_rng_uniform (seed, 0x7e59, (uint64_t) i) * hi) % hi;
  return t;
}

static tw_kctx
default_ctx (void)
{
  tw_kctx c = { .training = TRUE, .seed = 1, .step = 0, .node_key = 42, .num_threads = 1 };
  return c;
}

void
twt_run_guarded (const char *op, const tw_attrs *attrs, tw_tensor *const *in, int n_in,
                 tw_tensor **out, const tw_kctx *ctx)
{
  const tw_op_def *def = tw_op_lookup (op);
  g_autoptr (GError) error = NULL;
  tw_kctx dc = default_ctx ();
  tw_tinfo info_in[TW_MAX_INPUTS + TW_MAX_PARAMS], info_out[TW_MAX_OUTPUTS];
  tw_tensor *cin[TW_MAX_INPUTS + TW_MAX_PARAMS];

  g_assert_nonnull (def);
  tw_attrs *ra = tw_op_resolve_attrs (def, attrs, &error);
  g_assert_no_error (error);
  int n_out = tw_op_num_outputs (def, ra);
  for (int i = 0; i < n_in; i++)
    {
      tw_tinfo_from_tensor (&info_in[i], in[i]);
      cin[i] = tw_tensor_contiguous (in[i]);
    }
  memset (info_out, 0, sizeof info_out);
  g_assert_true (def->infer (ra, info_in, n_in, info_out, &error));
  g_assert_no_error (error);

  for (int k = 0; k < n_out; k++)
    {
      /* Allocate numel + 2 * GUARD elements and view the middle. */
      int64_t numel = tw_tinfo_numel (&info_out[k], NULL);
      size_t es = tw_dtype_size (info_out[k].dtype);
      tw_tensor *big = tw_tensor_new (info_out[k].dtype, 1, (int64_t[]) { numel + 2 * GUARD });
      memset (tw_tensor_data (big), GUARD_PATTERN, (numel + 2 * GUARD) * es);
      tw_tensor *v = tw_tensor_slice (big, 0, GUARD, GUARD + numel, 1);
      out[k] = tw_tensor_reshape (v, info_out[k].ndim, info_out[k].dims);
      tw_tensor_unref (v);
      tw_tensor_unref (big);
    }
  gboolean ok = tw_op_forward (def, ctx ? ctx : &dc, ra, cin, n_in, out, &error);
  g_assert_no_error (error);
  g_assert_true (ok);
  for (int k = 0; k < n_out; k++)
    {
      size_t es = tw_dtype_size (out[k]->dtype);
      const guint8 *base = out[k]->storage->data;
      size_t total = out[k]->storage->nbytes;
      for (size_t b = 0; b < GUARD * es; b++)
        {
          if (base[b] != GUARD_PATTERN || base[total - 1 - b] != GUARD_PATTERN)
            g_error ("%s: output %d written outside its bounds", op, k);
        }
    }
  for (int i = 0; i < n_in; i++)
    tw_tensor_unref (cin[i]);
  tw_attrs_free (ra);
}

static double
weighted_sum (tw_tensor *const *out, tw_tensor *const *w, int n_out)
{
  double s = 0;
  for (int k = 0; k < n_out; k++)
    {
      if (w[k] == NULL)
        continue;
      for (int64_t i = 0; i < tw_tensor_numel (out[k]); i++)
        s += tw_tensor_get_flat (out[k], i) * tw_tensor_get_flat (w[k], i);
    }
  return s;
}

static double
eval_loss (const tw_op_def *def, const tw_kctx *ctx, const tw_attrs *ra, tw_tensor *const *in,
           int n_in, tw_tensor *const *w, int n_out)
{
  tw_tensor *out[TW_MAX_OUTPUTS] = { 0 };
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_op_run (def, ctx, ra, in, n_in, out, &error));
  double s = weighted_sum (out, w, n_out);
  for (int k = 0; k < n_out; k++)
    tw_tensor_unref (out[k]);
  return s;
}

double
twt_grad_check (const char *op, const tw_attrs *attrs, tw_tensor *const *in, int n_in,
                const gboolean *wrt, int max_elems, const tw_kctx *ctx)
{
  const tw_op_def *def = tw_op_lookup (op);
  g_autoptr (GError) error = NULL;
  tw_kctx dc = default_ctx ();
  tw_tensor *in64[TW_MAX_INPUTS + TW_MAX_PARAMS];
  tw_tensor *out[TW_MAX_OUTPUTS] = { 0 };
  tw_tensor *w[TW_MAX_OUTPUTS] = { 0 };
  double worst = 0;

  g_assert_nonnull (def);
  g_assert_nonnull (def->backward);
  if (ctx == NULL)
    ctx = &dc;
  tw_attrs *ra = tw_op_resolve_attrs (def, attrs, &error);
  g_assert_no_error (error);
  int n_out = tw_op_num_outputs (def, ra);

  for (int i = 0; i < n_in; i++)
    in64[i] = tw_dtype_is_float (in[i]->dtype) ? tw_tensor_cast (in[i], TW_F64)
                                               : tw_tensor_ref (in[i]);
  g_assert_true (tw_op_run (def, ctx, ra, in64, n_in, out, &error));
  g_assert_no_error (error);
  for (int k = 0; k < n_out; k++)
    if (tw_dtype_is_float (out[k]->dtype))
      w[k] = twt_randn (TW_F64, out[k]->ndim, out[k]->shape, 1000 + k);

  /* Analytic gradients through the op's backward rule. */
  tw_emit *e = tw_eager_emit_new (ctx);
  tw_val *vin[TW_MAX_INPUTS + TW_MAX_PARAMS], *vout[TW_MAX_OUTPUTS], *vg[TW_MAX_OUTPUTS];
  tw_val *gin[TW_MAX_INPUTS + TW_MAX_PARAMS] = { 0 };
  for (int i = 0; i < n_in; i++)
    vin[i] = tw_eager_emit_wrap (e, in64[i]);
  for (int k = 0; k < n_out; k++)
    {
      vout[k] = tw_eager_emit_wrap (e, out[k]);
      vg[k] = w[k] ? tw_eager_emit_wrap (e, w[k]) : NULL;
    }
  gboolean ok = def->backward (e, ra, vin, n_in, vout, vg, wrt, gin);
  g_autoptr (GError) eerr = tw_emit_take_error (e);
  if (eerr)
    g_error ("%s backward: %s", op, eerr->message);
  g_assert_true (ok);

  for (int i = 0; i < n_in; i++)
    {
      if (!wrt[i])
        continue;
      if (gin[i] == NULL)
        g_error ("%s: backward gave no gradient for input %d", op, i);
      tw_tensor *g = tw_eager_emit_tensor (gin[i]);
      if (!tw_tensor_same_shape (g, in64[i]))
        g_error ("%s: gradient of input %d has the wrong shape", op, i);
      int64_t n = tw_tensor_numel (in64[i]);
      int64_t stride = (max_elems > 0 && n > max_elems) ? n / max_elems : 1;
      for (int64_t j = 0; j < n; j += stride)
        {
          /* eps 1e-6 in float64: truncation error O(eps^2) and rounding
           * O(1e-16 / eps) both stay near 1e-10 relative for smooth ops. */
          const double eps = 1e-6;
          double x0 = tw_tensor_get_flat (in64[i], j);
          tw_tensor_set_flat (in64[i], j, x0 + eps);
          double lp = eval_loss (def, ctx, ra, in64, n_in, w, n_out);
          tw_tensor_set_flat (in64[i], j, x0 - eps);
          double lm = eval_loss (def, ctx, ra, in64, n_in, w, n_out);
          tw_tensor_set_flat (in64[i], j, x0);
          double num = (lp - lm) / (2 * eps);
          double ana = tw_tensor_get_flat (g, j);
          double err = fabs (ana - num) / MAX (1.0, fabs (num));
          if (err > worst)
            worst = err;
          if (err > 1e-4 && g_test_verbose ())
            g_test_message ("%s: input %d element %" G_GINT64_FORMAT ": analytic %g numeric %g",
                            op, i, j, ana, num);
        }
    }

  tw_eager_emit_free (e);
  for (int i = 0; i < n_in; i++)
    tw_tensor_unref (in64[i]);
  for (int k = 0; k < n_out; k++)
    {
      tw_tensor_unref (out[k]);
      tw_tensor_unref (w[k]);
    }
  tw_attrs_free (ra);
  return worst;
}

double
twt_max_error (const tw_tensor *a, const tw_tensor *b)
{
  g_assert_true (tw_tensor_same_shape (a, b));
  double maxd = 0, maxb = 0;
  for (int64_t i = 0; i < tw_tensor_numel (a); i++)
    {
      double x = tw_tensor_get_flat (a, i), y = tw_tensor_get_flat (b, i);
      if (isnan (x) != isnan (y))
        return INFINITY;
      maxd = MAX (maxd, fabs (x - y));
      maxb = MAX (maxb, fabs (y));
    }
  return maxd / MAX (1.0, maxb);
}

gboolean
twt_infer (const char *op, const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
           GError **error)
{
  const tw_op_def *def = tw_op_lookup (op);
  g_assert_nonnull (def);
  tw_attrs *ra = tw_op_resolve_attrs (def, a, error);
  if (ra == NULL)
    return FALSE;
  memset (out, 0, sizeof *out);
  gboolean ok = def->infer (ra, in, n_in, out, error);
  tw_attrs_free (ra);
  return ok;
}

void
twt_assert_infer_error (const char *op, const tw_attrs *a, const tw_tinfo *in, int n_in,
                        const char *needle1, const char *needle2)
{
  g_autoptr (GError) error = NULL;
  tw_tinfo out;
  g_assert_false (twt_infer (op, a, in, n_in, &out, &error));
  g_assert_nonnull (error);
  g_test_message ("%s: %s", op, error->message);
  g_assert_nonnull (strstr (error->message, needle1));
  if (needle2)
    g_assert_nonnull (strstr (error->message, needle2));
}

tw_attrs *
twt_attrs_int (const char *name, int64_t v)
{
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, name, v);
  return a;
}

#define PARITY_RTOL 1e-4

void
twt_check_train_parity (const char *model_json, const char *name, int steps, int x_ndim,
                        const int64_t *x_shape, guint64 seed, int64_t n_classes)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) me = tw_model_load_from_data (model_json, -1, name, &error);
  g_assert_no_error (error);
  g_autoptr (tw_model) mc = tw_model_load_from_data (model_json, -1, name, &error);
  g_assert_no_error (error);
  g_autoptr (tw_trainer) te = tw_trainer_new (me, &error);
  g_assert_no_error (error);
  g_autoptr (tw_trainer) tc = tw_trainer_new (mc, &error);
  g_assert_no_error (error);
  tw_trainer_set_mode (tc, TW_MODE_COMPILED);
  double first = 0, last = 0;
  for (int s = 0; s < steps; s++)
    {
      /* the same batch every step: the loss must fall */
      g_autoptr (tw_tensor) x = twt_randn (TW_F32, x_ndim, x_shape, seed);
      g_autoptr (tw_tensor) y = twt_randint (1, x_shape, seed + 1, n_classes);
      double le, lc;
      g_assert_true (tw_trainer_step (te, x, y, &le, &error));
      g_assert_no_error (error);
      g_assert_true (tw_trainer_step (tc, x, y, &lc, &error));
      g_assert_no_error (error);
      if (fabs (le - lc) > PARITY_RTOL * MAX (1e-6, fabs (le)))
        g_error ("%s, step %d: eager loss %.9g, compiled %.9g", name, s, le, lc);
      if (s == 0)
        first = le;
      last = le;
    }
  g_test_message ("%s: loss %.6f -> %.6f over %d steps", name, first, last, steps);
  g_assert_cmpfloat (last, <, first);
  tw_params *pe = tw_trainer_params (te), *pc = tw_trainer_params (tc);
  g_assert_cmpint (tw_params_count (pe), ==, tw_params_count (pc));
  for (int i = 0; i < tw_params_count (pe); i++)
    {
      tw_param *a = tw_params_at (pe, i), *b = tw_params_get (pc, a->name);
      g_assert_nonnull (b);
      double err = twt_max_error (a->value, b->value);
      if (err > PARITY_RTOL)
        g_error ("%s: parameter %s differs by %.3g between eager and compiled", name, a->name,
                 err);
    }
}

tw_snapshot *
twt_pop_kind (tw_session *s, tw_snapshot_kind kind)
{
  for (;;)
    {
      /* 30 s: far beyond any step of the tests' models, even under ASan. */
      tw_snapshot *sn = tw_session_pop (s, 30 * G_USEC_PER_SEC);
      if (sn == NULL)
        g_error ("no snapshot of kind %d within 30 s", kind);
      if (sn->kind == kind)
        return sn;
      g_assert_cmpint (sn->kind, !=, TW_SNAP_FINISHED);
      tw_snapshot_free (sn);
    }
}
