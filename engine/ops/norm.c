/* norm.c — batch and layer normalisation and their internal gradient ops.
 *
 *   batch_norm      (x [N, C, ...], weight [C], bias [C], running_mean [C], running_var [C])
 *                   -> [N, C, ...]                        (PyTorch nn.BatchNorm1d/2d/3d)
 *   batch_norm_grad (x, [weight], dy, [running_mean, running_var]) -> dx, dweight, dbias
 *   layer_norm      (x [..., D1..Dk], weight [D1..Dk], bias [D1..Dk]) -> same shape as x
 *   layer_norm_grad (x, [weight], dy) -> dx, dweight, dbias
 *
 * Typed kernels in norm_tmpl.h.
 */
#include "engine/cpu/parallel.h"
#include "engine/op.h"

#include <math.h>
#include <string.h>

#define TW_CAT_(a, b) a##_##b
#define TW_CAT(a, b) TW_CAT_ (a, b)

#define T float
#define TW_FN(name) TW_CAT (name, f32)
#include "engine/ops/norm_tmpl.h"
#undef T
#undef TW_FN

#define T double
#define TW_FN(name) TW_CAT (name, f64)
#include "engine/ops/norm_tmpl.h"
#undef T
#undef TW_FN

static int
threads_of (const tw_kctx *ctx)
{
  return ctx && ctx->num_threads > 0 ? ctx->num_threads : 1;
}

static void
io_bytes (const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out, tw_cost *cost)
{
  cost->bytes_read = cost->bytes_written = 0;
  for (int i = 0; i < n_in; i++)
    cost->bytes_read += (double) tw_tinfo_numel (&in[i], NULL) * tw_dtype_size (in[i].dtype);
  for (int k = 0; k < n_out; k++)
    cost->bytes_written += (double) tw_tinfo_numel (&out[k], NULL) * tw_dtype_size (out[k].dtype);
}

static gboolean
check_float (const char *op, const char *what, const tw_tinfo *t, GError **error)
{
  if (t->dtype == TW_F32 || t->dtype == TW_F64)
    return TRUE;
  g_autofree char *s = tw_tinfo_to_string (t);
  g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_DTYPE, "%s expects %s of type f32 or f64, got %s",
               op, what, s);
  return FALSE;
}

/* in[i] must be dtype [dims]; what names it in the message. */
static gboolean
expect_shape (const char *op, const char *what, const tw_tinfo *got, tw_dtype dtype, int ndim,
              const int64_t *dims, GError **error)
{
  tw_tinfo want;
  tw_tinfo_set (&want, dtype, ndim, dims);
  if (tw_tinfo_equal (&want, got))
    return TRUE;
  g_autofree char *ws = tw_tinfo_to_string (&want);
  g_autofree char *gs = tw_tinfo_to_string (got);
  g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE, "%s expects %s %s, got %s", op, what, ws,
               gs);
  return FALSE;
}

static gboolean
expect_inputs (const char *op, int want, int got, const char *list, GError **error)
{
  if (got == 1 || got == want)
    return TRUE;
  g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ARITY, "%s expects %d inputs (%s), got %d", op,
               want, list, got);
  return FALSE;
}

/* ---- batch_norm ------------------------------------------------------- */

static const tw_attr_spec batch_norm_attrs[] = {
  { "eps", TW_ATTR_FLOAT, "1e-5", FALSE, "added to the variance before the square root" },
  { "momentum", TW_ATTR_FLOAT, "0.1", FALSE,
    "running = (1 - momentum) running + momentum batch statistic" },
  { "affine", TW_ATTR_BOOL, "true", FALSE, "learnt weight (scale) and bias (shift) per channel" },
  { "track_running_stats", TW_ATTR_BOOL, "true", FALSE,
    "keep running mean / variance for evaluation (else batch statistics always)" },
  { NULL }
};

/* Channels of x [N, C, ...]: at least rank 2, C known. */
static gboolean
bn_channels (const char *op, const tw_tinfo *x, int64_t *C, GError **error)
{
  if (!check_float (op, "input", x, error))
    return FALSE;
  if (x->ndim < 2 || x->dims[1] == TW_DIM_N)
    {
      g_autofree char *s = tw_tinfo_to_string (x);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "%s expects input [N, C] or [N, C, ...] with a known channel count C, got %s",
                   op, s);
      return FALSE;
    }
  *C = x->dims[1];
  return TRUE;
}

static int
bn_params (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_param_spec *out, GError **error)
{
  int64_t C;
  int n = 0;
  if (!bn_channels ("batch_norm", &in[0], &C, error))
    return -1;
  static const char *const names[] = { "weight", "bias", "running_mean", "running_var" };
  static const tw_init inits[] = { TW_INIT_ONES, TW_INIT_ZEROS, TW_INIT_ZEROS, TW_INIT_ONES };
  gboolean affine = tw_attrs_get_bool (a, "affine", TRUE);
  gboolean track = tw_attrs_get_bool (a, "track_running_stats", TRUE);
  for (int i = 0; i < 4; i++)
    {
      if ((i < 2 && !affine) || (i >= 2 && !track))
        continue;
      memset (&out[n], 0, sizeof out[n]);
      out[n].suffix = names[i];
      tw_tinfo_set (&out[n].info, in[0].dtype, 1, &C);
      out[n].init = inits[i];
      out[n].fan_in = out[n].fan_out = C;
      out[n].trainable = i < 2;         /* running statistics are buffers */
      n++;
    }
  return n;
}

static gboolean
bn_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  static const char *const what[] = { "weight", "bias", "running_mean", "running_var" };
  int64_t C;
  gboolean affine = tw_attrs_get_bool (a, "affine", TRUE);
  gboolean track = tw_attrs_get_bool (a, "track_running_stats", TRUE);
  int n_params = (affine ? 2 : 0) + (track ? 2 : 0);
  if (!bn_channels ("batch_norm", &in[0], &C, error)
      || !expect_inputs ("batch_norm", 1 + n_params, n_in,
                         affine && track ? "x, weight, bias, running_mean, running_var"
                         : affine        ? "x, weight, bias"
                         : track         ? "x, running_mean, running_var"
                                         : "x",
                         error))
    return FALSE;
  g_autofree char *xs = tw_tinfo_to_string (&in[0]);
  for (int i = 1; i < n_in; i++)
    {
      const char *w = what[affine ? i - 1 : i + 1];
      g_autofree char *label = g_strdup_printf ("%s (one per channel of input %s)", w, xs);
      if (!expect_shape ("batch_norm", label, &in[i], in[0].dtype, 1, &C, error))
        return FALSE;
    }
  out[0] = in[0];
  return TRUE;
}

static gboolean
bn_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
            tw_tensor *const *out, GError **error)
{
  const tw_tensor *x = in[0];
  gboolean affine = tw_attrs_get_bool (a, "affine", TRUE);
  gboolean track = tw_attrs_get_bool (a, "track_running_stats", TRUE) && n_in > 1 + 2 * affine;
  double eps = tw_attrs_get_float (a, "eps", 1e-5), mom = tw_attrs_get_float (a, "momentum", 0.1);
  int64_t N = x->shape[0], C = x->shape[1], S = tw_tensor_numel (x) / MAX (1, N * C);
  int nt = threads_of (ctx);
  gboolean batch_stats = ctx->training || !track;
  tw_tensor *w = affine && n_in > 2 ? in[1] : NULL, *b = affine && n_in > 2 ? in[2] : NULL;
  tw_tensor *rm = track ? in[1 + 2 * affine] : NULL, *rv = track ? in[2 + 2 * affine] : NULL;
  gboolean f32 = x->dtype == TW_F32;

  if (ctx->training && N * S <= 1)
    {
      g_autofree char *s = tw_shape_to_string (x->ndim, x->shape);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "batch_norm expects more than 1 value per channel when training, got input %s",
                   s);
      return FALSE;
    }
  double *mean = tw_scratch (ctx, 3 * C * sizeof (double)), *var = mean + C, *invstd = var + C;
  if (batch_stats)
    {
      if (f32)
        bn_stats_f32 (N, C, S, nt, tw_tensor_f32 (x), mean, var);
      else
        bn_stats_f64 (N, C, S, nt, tw_tensor_f64 (x), mean, var);
    }
  else
    for (int64_t c = 0; c < C; c++)
      {
        mean[c] = f32 ? tw_tensor_f32 (rm)[c] : tw_tensor_f64 (rm)[c];
        var[c] = f32 ? tw_tensor_f32 (rv)[c] : tw_tensor_f64 (rv)[c];
      }
  for (int64_t c = 0; c < C; c++)
    invstd[c] = 1.0 / sqrt (var[c] + eps);
  if (f32)
    bn_apply_f32 (N, C, S, nt, tw_tensor_f32 (x), mean, invstd, w ? tw_tensor_f32 (w) : NULL,
                  b ? tw_tensor_f32 (b) : NULL, tw_tensor_f32 (out[0]));
  else
    bn_apply_f64 (N, C, S, nt, tw_tensor_f64 (x), mean, invstd, w ? tw_tensor_f64 (w) : NULL,
                  b ? tw_tensor_f64 (b) : NULL, tw_tensor_f64 (out[0]));

  if (ctx->training && track)
    {
      /* PyTorch: running_var tracks the unbiased variance (M / (M - 1)). */
      const double M = (double) (N * S), unbias = M / (M - 1);
      for (int64_t c = 0; c < C; c++)
        {
          double nm = (1 - mom) * (f32 ? tw_tensor_f32 (rm)[c] : tw_tensor_f64 (rm)[c])
                      + mom * mean[c];
          double nv = (1 - mom) * (f32 ? tw_tensor_f32 (rv)[c] : tw_tensor_f64 (rv)[c])
                      + mom * var[c] * unbias;
          if (f32)
            tw_tensor_f32 (rm)[c] = (float) nm, tw_tensor_f32 (rv)[c] = (float) nv;
          else
            tw_tensor_f64 (rm)[c] = nm, tw_tensor_f64 (rv)[c] = nv;
        }
    }
  return TRUE;
}

static gboolean
bn_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
             tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  gboolean affine = tw_attrs_get_bool (a, "affine", TRUE);
  gboolean track = tw_attrs_get_bool (a, "track_running_stats", TRUE);
  gboolean training = tw_emit_kctx (e)->training || !track;
  tw_val *gi[5], *go[3] = { 0 };
  int n = 0;
  if (gout[0] == NULL)
    return TRUE;                /* the output does not reach the loss: zero gradients */
  gi[n++] = in[0];
  if (affine)
    gi[n++] = in[1];
  gi[n++] = gout[0];
  if (!training)
    {
      gi[n++] = in[1 + 2 * affine];
      gi[n++] = in[2 + 2 * affine];
    }
  tw_attrs *ga = tw_attrs_new ();
  tw_attrs_set_float (ga, "eps", tw_attrs_get_float (a, "eps", 1e-5));
  tw_attrs_set_bool (ga, "training", training);
  tw_attrs_set_bool (ga, "affine", affine);
  gboolean ok = tw_emit_op_multi (e, "batch_norm_grad", ga, n, gi, 3, go);
  tw_attrs_free (ga);
  if (!ok)
    return FALSE;
  if (needs[0])
    gin[0] = go[0];
  if (affine && needs[1])
    gin[1] = go[1];
  if (affine && needs[2])
    gin[2] = go[2];
  return TRUE;
}

/* Training: mean, variance, normalise and scale: about 7 flops per element. */
static void
bn_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
         tw_cost *cost)
{
  io_bytes (in, n_in, out, n_out, cost);
  cost->flops = 7.0 * (double) tw_tinfo_numel (&in[0], NULL);
}

static const char *const bn_inputs[] = { "x", NULL };

static const tw_op_def batch_norm_def = {
  .name = "batch_norm",
  .category = "Normalisation",
  .doc = "Batch normalisation over N and the spatial dims, per channel (PyTorch nn.BatchNorm2d)",
  .attrs = batch_norm_attrs,
  .min_inputs = 1,
  .max_inputs = 1,
  .input_names = bn_inputs,
  .n_outputs = 1,
  .params = bn_params,
  .infer = bn_infer,
  .forward = bn_forward,
  .backward = bn_backward,
  .cost = bn_cost,
  .onnx_name = "BatchNormalization",
  .flags = TW_OP_STATEFUL,
};

/* ---- batch_norm_grad (x, [weight], dy, [running_mean, running_var]) ---- */

static const tw_attr_spec batch_norm_grad_attrs[] = {
  { "eps", TW_ATTR_FLOAT, "1e-5", FALSE, "eps of the forward" },
  { "training", TW_ATTR_BOOL, "true", FALSE,
    "batch statistics (true) or the running statistics given as inputs (false)" },
  { "affine", TW_ATTR_BOOL, "true", FALSE, "a weight input follows x" },
  { NULL }
};

static gboolean
bn_grad_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  const char *op = "batch_norm_grad";
  gboolean affine = tw_attrs_get_bool (a, "affine", TRUE);
  gboolean training = tw_attrs_get_bool (a, "training", TRUE);
  int want = 2 + affine + 2 * !training;
  int64_t C;
  if (n_in != want)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ARITY,
                   "%s expects %d inputs (x, %sdy%s), got %d", op, want, affine ? "weight, " : "",
                   training ? "" : ", running_mean, running_var", n_in);
      return FALSE;
    }
  if (!bn_channels (op, &in[0], &C, error)
      || !expect_shape (op, "dy", &in[1 + affine], in[0].dtype, in[0].ndim, in[0].dims, error))
    return FALSE;
  for (int i = 1; i < n_in; i++)
    if (i != 1 + affine && !expect_shape (op, "a per-channel input", &in[i], in[0].dtype, 1, &C,
                                          error))
      return FALSE;
  out[0] = in[0];
  tw_tinfo_set (&out[1], in[0].dtype, 1, &C);
  out[2] = out[1];
  return TRUE;
}

static gboolean
bn_grad_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                 tw_tensor *const *out, GError **error)
{
  gboolean affine = tw_attrs_get_bool (a, "affine", TRUE);
  gboolean training = tw_attrs_get_bool (a, "training", TRUE);
  double eps = tw_attrs_get_float (a, "eps", 1e-5);
  const tw_tensor *x = in[0], *w = affine ? in[1] : NULL, *dy = in[1 + affine];
  const tw_tensor *rm = training ? NULL : in[2 + affine], *rv = training ? NULL : in[3 + affine];
  int64_t N = x->shape[0], C = x->shape[1], S = tw_tensor_numel (x) / MAX (1, N * C);
  if (x->dtype == TW_F32)
    bn_backward_f32 (N, C, S, threads_of (ctx), eps, tw_tensor_f32 (x),
                     w ? tw_tensor_f32 (w) : NULL, tw_tensor_f32 (dy),
                     rm ? tw_tensor_f32 (rm) : NULL, rv ? tw_tensor_f32 (rv) : NULL,
                     tw_tensor_f32 (out[0]), tw_tensor_f32 (out[1]), tw_tensor_f32 (out[2]));
  else
    bn_backward_f64 (N, C, S, threads_of (ctx), eps, tw_tensor_f64 (x),
                     w ? tw_tensor_f64 (w) : NULL, tw_tensor_f64 (dy),
                     rm ? tw_tensor_f64 (rm) : NULL, rv ? tw_tensor_f64 (rv) : NULL,
                     tw_tensor_f64 (out[0]), tw_tensor_f64 (out[1]), tw_tensor_f64 (out[2]));
  return TRUE;
}

/* Statistics, two reductions and the combination: about 10 flops per element. */
static void
norm_grad_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
                tw_cost *cost)
{
  io_bytes (in, n_in, out, n_out, cost);
  cost->flops = 10.0 * (double) tw_tinfo_numel (&in[0], NULL);
}

static const char *const bn_grad_inputs[] = { "x", "weight", "dy", "running_mean", "running_var",
                                              NULL };

static const tw_op_def batch_norm_grad_def = {
  .name = "batch_norm_grad",
  .category = "Normalisation",
  .doc = "Gradients of batch_norm: dx, dweight, dbias",
  .attrs = batch_norm_grad_attrs,
  .min_inputs = 2,
  .max_inputs = 5,
  .input_names = bn_grad_inputs,
  .n_outputs = 3,
  .infer = bn_grad_infer,
  .forward = bn_grad_forward,
  .cost = norm_grad_cost,
  .flags = TW_OP_INTERNAL,
};

/* ---- layer_norm ------------------------------------------------------- */

static const tw_attr_spec layer_norm_attrs[] = {
  { "normalized_ndim", TW_ATTR_INT, "1", FALSE,
    "normalise over the last k dims (PyTorch's normalized_shape = x.shape[-k:])" },
  { "eps", TW_ATTR_FLOAT, "1e-5", FALSE, "added to the variance before the square root" },
  { "elementwise_affine", TW_ATTR_BOOL, "true", FALSE, "learnt weight and bias per element" },
  { NULL }
};

/* The normalised shape of x: its last k dims, all known. */
static gboolean
ln_shape (const char *op, const tw_attrs *a, const tw_tinfo *x, int *k, int64_t *D,
          GError **error)
{
  int64_t kk = tw_attrs_get_int (a, "normalized_ndim", 1);
  g_autofree char *s = tw_tinfo_to_string (x);
  if (!check_float (op, "input", x, error))
    return FALSE;
  if (kk < 1 || kk > x->ndim)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "%s: normalized_ndim=%" G_GINT64_FORMAT
                   " expects an input of rank at least %" G_GINT64_FORMAT " (and k >= 1), got %s",
                   op, kk, MAX (kk, 1), s);
      return FALSE;
    }
  *k = (int) kk;
  *D = 1;
  for (int i = x->ndim - *k; i < x->ndim; i++)
    {
      if (x->dims[i] == TW_DIM_N)
        {
          g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                       "%s expects the last %d dims of the input to be known, got %s", op, *k, s);
          return FALSE;
        }
      *D *= x->dims[i];
    }
  return TRUE;
}

static int
ln_params (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_param_spec *out, GError **error)
{
  int k;
  int64_t D;
  if (!ln_shape ("layer_norm", a, &in[0], &k, &D, error))
    return -1;
  if (!tw_attrs_get_bool (a, "elementwise_affine", TRUE))
    return 0;
  for (int i = 0; i < 2; i++)
    {
      memset (&out[i], 0, sizeof out[i]);
      out[i].suffix = i == 0 ? "weight" : "bias";
      tw_tinfo_set (&out[i].info, in[0].dtype, k, in[0].dims + in[0].ndim - k);
      out[i].init = i == 0 ? TW_INIT_ONES : TW_INIT_ZEROS;
      out[i].fan_in = out[i].fan_out = D;
      out[i].trainable = TRUE;
    }
  return 2;
}

static gboolean
ln_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  int k;
  int64_t D;
  gboolean affine = tw_attrs_get_bool (a, "elementwise_affine", TRUE);
  if (!ln_shape ("layer_norm", a, &in[0], &k, &D, error)
      || !expect_inputs ("layer_norm", affine ? 3 : 1, n_in, affine ? "x, weight, bias" : "x",
                         error))
    return FALSE;
  for (int i = 1; i < n_in; i++)
    if (!expect_shape ("layer_norm", i == 1 ? "weight (the normalised shape)"
                                            : "bias (the normalised shape)",
                       &in[i], in[0].dtype, k, in[0].dims + in[0].ndim - k, error))
      return FALSE;
  out[0] = in[0];
  return TRUE;
}

static gboolean
ln_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
            tw_tensor *const *out, GError **error)
{
  int k = (int) tw_attrs_get_int (a, "normalized_ndim", 1);
  double eps = tw_attrs_get_float (a, "eps", 1e-5);
  const tw_tensor *x = in[0];
  int64_t D = 1;
  for (int i = x->ndim - k; i < x->ndim; i++)
    D *= x->shape[i];
  int64_t R = D > 0 ? tw_tensor_numel (x) / D : 0;
  gboolean aff = n_in > 2;
  if (x->dtype == TW_F32)
    ln_forward_f32 (R, D, threads_of (ctx), eps, tw_tensor_f32 (x),
                    aff ? tw_tensor_f32 (in[1]) : NULL, aff ? tw_tensor_f32 (in[2]) : NULL,
                    tw_tensor_f32 (out[0]), NULL, NULL);
  else
    ln_forward_f64 (R, D, threads_of (ctx), eps, tw_tensor_f64 (x),
                    aff ? tw_tensor_f64 (in[1]) : NULL, aff ? tw_tensor_f64 (in[2]) : NULL,
                    tw_tensor_f64 (out[0]), NULL, NULL);
  return TRUE;
}

static gboolean
ln_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
             tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  gboolean affine = n_in > 2;
  tw_val *gi[3], *go[3] = { 0 };
  int n = 0;
  if (gout[0] == NULL)
    return TRUE;                /* the output does not reach the loss: zero gradients */
  gi[n++] = in[0];
  if (affine)
    gi[n++] = in[1];
  gi[n++] = gout[0];
  tw_attrs *ga = tw_attrs_new ();
  tw_attrs_set_int (ga, "normalized_ndim", tw_attrs_get_int (a, "normalized_ndim", 1));
  tw_attrs_set_float (ga, "eps", tw_attrs_get_float (a, "eps", 1e-5));
  tw_attrs_set_bool (ga, "affine", affine);
  gboolean ok = tw_emit_op_multi (e, "layer_norm_grad", ga, n, gi, 3, go);
  tw_attrs_free (ga);
  if (!ok)
    return FALSE;
  if (needs[0])
    gin[0] = go[0];
  if (affine && needs[1])
    gin[1] = go[1];
  if (affine && needs[2])
    gin[2] = go[2];
  return TRUE;
}

/* Mean, variance, normalise and scale: about 7 flops per element. */
static void
ln_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
         tw_cost *cost)
{
  io_bytes (in, n_in, out, n_out, cost);
  cost->flops = 7.0 * (double) tw_tinfo_numel (&in[0], NULL);
}

static const tw_op_def layer_norm_def = {
  .name = "layer_norm",
  .category = "Normalisation",
  .doc = "Layer normalisation over the last dims of each sample (PyTorch nn.LayerNorm)",
  .attrs = layer_norm_attrs,
  .min_inputs = 1,
  .max_inputs = 1,
  .input_names = bn_inputs,
  .n_outputs = 1,
  .params = ln_params,
  .infer = ln_infer,
  .forward = ln_forward,
  .backward = ln_backward,
  .cost = ln_cost,
  .onnx_name = "LayerNormalization",
};

/* ---- layer_norm_grad (x, [weight], dy) -------------------------------- */

static const tw_attr_spec layer_norm_grad_attrs[] = {
  { "normalized_ndim", TW_ATTR_INT, "1", FALSE, "normalised trailing dims of the forward" },
  { "eps", TW_ATTR_FLOAT, "1e-5", FALSE, "eps of the forward" },
  { "affine", TW_ATTR_BOOL, "true", FALSE, "a weight input follows x" },
  { NULL }
};

static gboolean
ln_grad_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  const char *op = "layer_norm_grad";
  gboolean affine = tw_attrs_get_bool (a, "affine", TRUE);
  int k;
  int64_t D;
  if (n_in != 2 + affine)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ARITY, "%s expects %d inputs (x, %sdy), got %d",
                   op, 2 + affine, affine ? "weight, " : "", n_in);
      return FALSE;
    }
  if (!ln_shape (op, a, &in[0], &k, &D, error)
      || !expect_shape (op, "dy", &in[1 + affine], in[0].dtype, in[0].ndim, in[0].dims, error)
      || (affine
          && !expect_shape (op, "weight", &in[1], in[0].dtype, k, in[0].dims + in[0].ndim - k,
                            error)))
    return FALSE;
  out[0] = in[0];
  tw_tinfo_set (&out[1], in[0].dtype, k, in[0].dims + in[0].ndim - k);
  out[2] = out[1];
  return TRUE;
}

static gboolean
ln_grad_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                 tw_tensor *const *out, GError **error)
{
  gboolean affine = tw_attrs_get_bool (a, "affine", TRUE);
  double eps = tw_attrs_get_float (a, "eps", 1e-5);
  const tw_tensor *x = in[0], *w = affine ? in[1] : NULL, *dy = in[1 + affine];
  int64_t D = tw_tensor_numel (out[1]);
  int64_t R = D > 0 ? tw_tensor_numel (x) / D : 0;
  double *stats = tw_scratch (ctx, (2 * R + 1) * sizeof (double));
  if (x->dtype == TW_F32)
    ln_backward_f32 (R, D, threads_of (ctx), eps, tw_tensor_f32 (x), w ? tw_tensor_f32 (w) : NULL,
                     tw_tensor_f32 (dy), tw_tensor_f32 (out[0]), tw_tensor_f32 (out[1]),
                     tw_tensor_f32 (out[2]), stats);
  else
    ln_backward_f64 (R, D, threads_of (ctx), eps, tw_tensor_f64 (x), w ? tw_tensor_f64 (w) : NULL,
                     tw_tensor_f64 (dy), tw_tensor_f64 (out[0]), tw_tensor_f64 (out[1]),
                     tw_tensor_f64 (out[2]), stats);
  return TRUE;
}

static const char *const ln_grad_inputs[] = { "x", "weight", "dy", NULL };

static const tw_op_def layer_norm_grad_def = {
  .name = "layer_norm_grad",
  .category = "Normalisation",
  .doc = "Gradients of layer_norm: dx, dweight, dbias",
  .attrs = layer_norm_grad_attrs,
  .min_inputs = 2,
  .max_inputs = 3,
  .input_names = ln_grad_inputs,
  .n_outputs = 3,
  .infer = ln_grad_infer,
  .forward = ln_grad_forward,
  .cost = norm_grad_cost,
  .flags = TW_OP_INTERNAL,
};

void
tw_ops_register_norm (void)
{
  tw_op_register (&batch_norm_def);
  tw_op_register (&batch_norm_grad_def);
  tw_op_register (&layer_norm_def);
  tw_op_register (&layer_norm_grad_def);
}
