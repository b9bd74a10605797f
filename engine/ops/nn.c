/* nn.c — dense layers: linear, embedding, argmax, and the internal
 * ops their backward rules use (linear_grad_*, matmul_grad_*, embedding_grad,
 * nn_zeros_like).  matmul lives in matmul.c, dropout and the softmax family
 * in nn-act.c.
 *
 * Kernels see contiguous row-major buffers.  Matrix products go to the
 * engine's one GEMM dispatch (engine/cpu/gemm.h: our kernel or OpenBLAS, per
 * shape and machine) with the transpose flags doing the work, so no
 * transposed copy is ever made.  Parameter layouts follow PyTorch's state_dict: linear.weight is
 * (out, in), embedding.weight is (num_embeddings, embedding_dim).
 */
#define G_LOG_DOMAIN "twb-ops-nn"

#include "engine/cpu/gemm.h"
#include "engine/cpu/scan.h"
#include "engine/ops/nn-private.h"

#include <math.h>
#include <string.h>

/* ---- shared helpers ------------------------------------------------------ */

gboolean
tw_nn_check_float (const char *op, const char *what, const tw_tinfo *t, GError **error)
{
  if (t->dtype == TW_F32 || t->dtype == TW_F64)
    return TRUE;
  g_autofree char *s = tw_tinfo_to_string (t);
  g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_DTYPE, "%s expects %s of type f32 or f64, got %s",
               op, what, s);
  return FALSE;
}

gboolean
tw_nn_axis (const char *op, int64_t axis, const tw_tinfo *t, int *out, GError **error)
{
  if (axis < -t->ndim || axis >= t->ndim)
    {
      g_autofree char *s = tw_tinfo_to_string (t);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "%s: axis %" G_GINT64_FORMAT " is out of range for input %s", op, axis, s);
      return FALSE;
    }
  *out = (int) (axis < 0 ? axis + t->ndim : axis);
  return TRUE;
}

void
tw_nn_split_axis (const tw_tensor *x, int axis, int64_t *outer, int64_t *len, int64_t *inner)
{
  *outer = 1;
  *inner = 1;
  for (int d = 0; d < axis; d++)
    *outer *= x->shape[d];
  for (int d = axis + 1; d < x->ndim; d++)
    *inner *= x->shape[d];
  *len = x->shape[axis];
}

char *
tw_nn_index_string (int ndim, const int64_t *shape, int64_t flat)
{
  int64_t idx[TW_MAX_DIMS];
  for (int d = ndim - 1; d >= 0; d--)
    {
      idx[d] = shape[d] > 0 ? flat % shape[d] : 0;
      flat = shape[d] > 0 ? flat / shape[d] : 0;
    }
  return tw_shape_to_string (ndim, idx);
}

gboolean
tw_nn_shape_error (GError **error, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error_literal (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE, msg);
  return FALSE;
}

/* See nn-private.h. */
void
tw_nn_gemm (tw_dtype dt, gboolean ta, gboolean tb, int64_t m, int64_t n, int64_t k,
            const void *a, int64_t lda, const void *b, int64_t ldb, double beta, void *c,
            int64_t ldc)
{
  if (dt == TW_F32)
    tw_gemm_f32 (ta, tb, m, n, k, 1.0f, a, lda, b, ldb, (float) beta, c, ldc);
  else
    tw_gemm_f64 (ta, tb, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
}

static const char *const init_choices[] = {
  "default", "he_normal", "he_uniform", "xavier_uniform", "xavier_normal", "zeros", NULL
};

/* The weight init the "init" attribute selects; "default" gives dflt. */
static tw_init
nn_weight_init (const tw_attrs *a, tw_init dflt)
{
  static const struct
  {
    const char *name;
    tw_init init;
  } map[] = {
    { "he_normal", TW_INIT_HE_NORMAL },
    { "he_uniform", TW_INIT_HE_UNIFORM },
    { "xavier_uniform", TW_INIT_XAVIER_UNIFORM },
    { "xavier_normal", TW_INIT_XAVIER_NORMAL },
    { "zeros", TW_INIT_ZEROS },
  };
  const char *s = tw_attrs_get_string (a, "init", "default");
  for (guint i = 0; i < G_N_ELEMENTS (map); i++)
    if (strcmp (s, map[i].name) == 0)
      return map[i].init;
  return dflt;
}

static void
nn_param (tw_param_spec *p, const char *suffix, tw_dtype dt, int ndim, const int64_t *dims,
          tw_init init, int64_t fan_in, int64_t fan_out)
{
  memset (p, 0, sizeof *p);
  p->suffix = suffix;
  tw_tinfo_set (&p->info, dt, ndim, dims);
  p->init = init;
  p->fan_in = fan_in;
  p->fan_out = fan_out;
  p->trainable = TRUE;
}

/* ---- nn_zeros_like (internal) -------------------------------------------- */

/* The gradient of an input whose output gradient is absent (gout[k] NULL). */
static gboolean
zeros_like_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                    tw_tensor *const *out, GError **error)
{
  memset (tw_tensor_data (out[0]), 0, tw_tensor_nbytes (out[0]));
  return TRUE;
}

static void
zeros_like_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
                 tw_cost *cost)
{
  tw_cost_elementwise (in, 0, out, n_out, 0, cost);
}

static const tw_attr_spec no_attrs[] = { { NULL } };

static const tw_op_def zeros_like_def = {
  .name = "nn_zeros_like",
  .category = "Math",
  .doc = "Zeros of the input's type and shape (gradient of an unused output)",
  .attrs = no_attrs,
  .min_inputs = 1,
  .max_inputs = 1,
  .n_outputs = 1,
  .infer = tw_infer_same_as_input0,
  .forward = zeros_like_forward,
  .cost = zeros_like_cost,
  .flags = TW_OP_INTERNAL | TW_OP_ELEMENTWISE,
};

/* ---- linear ---------------------------------------------------------------- */

static const tw_attr_spec linear_attrs[] = {
  { "out_features", TW_ATTR_INT, NULL, TRUE, "number of output features" },
  { "bias", TW_ATTR_BOOL, "true", FALSE, "add a learned bias" },
  { "init", TW_ATTR_STRING, "\"default\"", FALSE,
    "weight initialisation (default: PyTorch's; others set the bias to zeros)", init_choices },
  { NULL }
};

static const char *const x_input_names[] = { "x", NULL };

static int
linear_params (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_param_spec *out,
               GError **error)
{
  int64_t nout = tw_attrs_get_int (a, "out_features", 0);
  tw_init winit = nn_weight_init (a, TW_INIT_UNIFORM_FAN_IN);
  if (nout <= 0)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "linear: out_features must be positive, got %" G_GINT64_FORMAT, nout);
      return -1;
    }
  if (n_in < 1 || in[0].ndim < 1 || in[0].dims[in[0].ndim - 1] == TW_DIM_N)
    {
      g_autofree char *s = n_in < 1 ? g_strdup ("nothing") : tw_tinfo_to_string (&in[0]);
      tw_nn_shape_error (error,
                         "linear expects input of shape [..., in_features] with a known last "
                         "dimension, got %s",
                         s);
      return -1;
    }
  int64_t nin = in[0].dims[in[0].ndim - 1];
  tw_dtype dt = tw_dtype_is_float (in[0].dtype) ? in[0].dtype : TW_F32;
  if (!tw_shape_nbytes_checked (dt, 2, (int64_t[]) { nout, nin }, NULL))
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "linear: out_features %" G_GINT64_FORMAT " with %" G_GINT64_FORMAT
                   " in_features makes a weight of more than 2^63 bytes", nout, nin);
      return -1;
    }
  nn_param (&out[0], "weight", dt, 2, (int64_t[]) { nout, nin }, winit, nin, nout);
  if (!tw_attrs_get_bool (a, "bias", TRUE))
    return 1;
  /* PyTorch's default bias is U(-1/sqrt(in), 1/sqrt(in)); the other schemes
   * start it at zero as Keras and most papers do. */
  nn_param (&out[1], "bias", dt, 1, (int64_t[]) { nout },
            winit == TW_INIT_UNIFORM_FAN_IN ? TW_INIT_UNIFORM_FAN_IN : TW_INIT_ZEROS, nin, nout);
  return 2;
}

static gboolean
linear_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  int64_t nout = tw_attrs_get_int (a, "out_features", 0);
  gboolean has_bias = tw_attrs_get_bool (a, "bias", TRUE);
  const tw_tinfo *x = &in[0];
  g_autofree char *sx = tw_tinfo_to_string (x);

  if (nout <= 0)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "linear: out_features must be positive, got %" G_GINT64_FORMAT, nout);
      return FALSE;
    }
  if (!tw_nn_check_float ("linear", "input", x, error))
    return FALSE;
  if (x->ndim < 1)
    return tw_nn_shape_error (error, "linear expects input of shape [..., in_features], got %s",
                              sx);
  if (n_in != 1 && n_in != (has_bias ? 3 : 2))
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ARITY,
                   "linear%s expects %s, got %d inputs", has_bias ? "" : " without bias",
                   has_bias ? "x, weight and bias" : "x and weight", n_in);
      return FALSE;
    }
  if (n_in >= 2)
    {
      const tw_tinfo *w = &in[1];
      g_autofree char *sw = tw_tinfo_to_string (w);
      if (w->ndim != 2 || w->dims[0] != nout || w->dtype != x->dtype)
        return tw_nn_shape_error (error,
                                  "linear expects weight of shape %s[%" G_GINT64_FORMAT
                                  ", in_features], got %s",
                                  tw_dtype_name (x->dtype), nout, sw);
      if (x->dims[x->ndim - 1] != w->dims[1])
        return tw_nn_shape_error (error,
                                  "linear expects input of shape [..., %" G_GINT64_FORMAT
                                  "] (in_features from the weight), got %s",
                                  w->dims[1], sx);
    }
  if (n_in >= 3)
    {
      const tw_tinfo *b = &in[2];
      g_autofree char *sb = tw_tinfo_to_string (b);
      if (b->ndim != 1 || b->dims[0] != nout || b->dtype != x->dtype)
        return tw_nn_shape_error (error,
                                  "linear expects bias of shape %s[%" G_GINT64_FORMAT "], got %s",
                                  tw_dtype_name (x->dtype), nout, sb);
    }
  out[0] = *x;
  out[0].dims[x->ndim - 1] = nout;
  return TRUE;
}

/* x is (M, K), w is (N, K), b is (N) or NULL; y is (M, N) = x w^T + b.
 * Float32: the bias is the GEMM's epilogue, as in the compiled program's
 * fused linear (same dispatch, same shape, so the same kernel and the same
 * rounding: eager and compiled agree bit for bit).  Float64: the bias is
 * copied into the rows of y first and the GEMM adds onto it (beta = 1). */
static gboolean
linear_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                tw_tensor *const *out, GError **error)
{
  const tw_tensor *x = in[0], *w = in[1];
  const tw_tensor *b = n_in > 2 ? in[2] : NULL;
  tw_tensor *y = out[0];
  size_t es = tw_dtype_size (x->dtype);
  int64_t K = w->shape[1], N = w->shape[0];
  int64_t M = K > 0 ? tw_tensor_numel (x) / K : tw_tensor_numel (y) / MAX (N, 1);
  void *yd = tw_tensor_data (y);

  if (x->dtype == TW_F32)
    {
      tw_gemm_epilogue ep = { .bias = b ? tw_tensor_f32 (b) : NULL };
      tw_gemm_f32_ex (FALSE, TRUE, M, N, K, 1.0f, tw_tensor_f32 (x), K, tw_tensor_f32 (w), K,
                      0.0f, yd, N, &ep);
      return TRUE;
    }
  if (b != NULL)
    for (int64_t i = 0; i < M; i++)
      memcpy (tw_nn_at (yd, i * N, es), tw_tensor_data (b), N * es);
  tw_nn_gemm (x->dtype, FALSE, TRUE, M, N, K, tw_tensor_data (x), K, tw_tensor_data (w), K,
              b != NULL ? 1.0 : 0.0, yd, N);
  return TRUE;
}

static gboolean
linear_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
                 tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  tw_val *dy = gout[0];
  gboolean ok = TRUE;
  for (int i = 0; i < n_in; i++)
    {
      if (!needs[i])
        continue;
      if (dy == NULL)
        gin[i] = tw_emit1 (e, "nn_zeros_like", NULL, in[i]);
      else if (i == 0)
        gin[i] = tw_emit2 (e, "linear_grad_input", NULL, dy, in[1]);
      else if (i == 1)
        gin[i] = tw_emit2 (e, "linear_grad_weight", NULL, dy, in[0]);
      else
        gin[i] = tw_emit1 (e, "linear_grad_bias", NULL, dy);
      ok &= gin[i] != NULL;
    }
  return ok;
}

static void
linear_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
             tw_cost *cost)
{
  double es = tw_dtype_size (in[0].dtype);
  double K = (double) in[0].dims[in[0].ndim - 1];
  double MN = (double) tw_tinfo_numel (&out[0], NULL);
  double N = (double) out[0].dims[out[0].ndim - 1];
  double M = N > 0 ? MN / N : 0;
  gboolean bias = tw_attrs_get_bool (a, "bias", TRUE);
  cost->flops = 2 * M * K * N + (bias ? MN : 0);
  cost->bytes_read = es * (M * K + N * K + (bias ? N : 0));
  cost->bytes_written = es * MN;
}

static const tw_op_def linear_def = {
  .name = "linear",
  .category = "Core",
  .doc = "Fully connected layer: y = x W^T + b over the last dimension",
  .attrs = linear_attrs,
  .min_inputs = 1,
  .max_inputs = 1,
  .input_names = x_input_names,
  .n_outputs = 1,
  .params = linear_params,
  .infer = linear_infer,
  .forward = linear_forward,
  .backward = linear_backward,
  .cost = linear_cost,
  .onnx_name = "Gemm",
};

/* linear_grad_input (dy [..., out], W [out, in]) -> dx [..., in] = dy W. */
static gboolean
linear_grad_input_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                         GError **error)
{
  const tw_tinfo *dy = &in[0], *w = &in[1];
  if (dy->ndim < 1 || w->ndim != 2 || dy->dims[dy->ndim - 1] != w->dims[0]
      || dy->dtype != w->dtype)
    {
      g_autofree char *s0 = tw_tinfo_to_string (dy);
      g_autofree char *s1 = tw_tinfo_to_string (w);
      return tw_nn_shape_error (error,
                                "linear_grad_input expects dy [..., out] and weight [out, in], "
                                "got %s and %s",
                                s0, s1);
    }
  out[0] = *dy;
  out[0].dims[dy->ndim - 1] = w->dims[1];
  return TRUE;
}

static gboolean
linear_grad_input_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in,
                           int n_in, tw_tensor *const *out, GError **error)
{
  const tw_tensor *dy = in[0], *w = in[1];
  int64_t N = w->shape[0], K = w->shape[1];
  int64_t M = N > 0 ? tw_tensor_numel (dy) / N : tw_tensor_numel (out[0]) / MAX (K, 1);
  /* dx (M, K) = dy (M, N) @ W (N, K) */
  tw_nn_gemm (dy->dtype, FALSE, FALSE, M, K, N, tw_tensor_data (dy), N, tw_tensor_data (w), K, 0.0,
              tw_tensor_data (out[0]), K);
  return TRUE;
}

static void
linear_grad_input_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out,
                        int n_out, tw_cost *cost)
{
  double es = tw_dtype_size (in[0].dtype);
  double N = (double) in[1].dims[0], K = (double) in[1].dims[1];
  double M = N > 0 ? (double) tw_tinfo_numel (&in[0], NULL) / N : 0;
  cost->flops = 2 * M * N * K;
  cost->bytes_read = es * (M * N + N * K);
  cost->bytes_written = es * M * K;
}

static const tw_op_def linear_grad_input_def = {
  .name = "linear_grad_input",
  .category = "Core",
  .doc = "Gradient of linear's input: dy W",
  .attrs = no_attrs,
  .min_inputs = 2,
  .max_inputs = 2,
  .n_outputs = 1,
  .infer = linear_grad_input_infer,
  .forward = linear_grad_input_forward,
  .cost = linear_grad_input_cost,
  .flags = TW_OP_INTERNAL,
};

/* linear_grad_weight (dy [..., out], x [..., in]) -> dW [out, in] = dy^T x. */
static gboolean
linear_grad_weight_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                          GError **error)
{
  const tw_tinfo *dy = &in[0], *x = &in[1];
  gboolean ok = dy->ndim >= 1 && dy->ndim == x->ndim && dy->dtype == x->dtype;
  for (int d = 0; ok && d < dy->ndim - 1; d++)
    ok = dy->dims[d] == x->dims[d];
  if (!ok)
    {
      g_autofree char *s0 = tw_tinfo_to_string (dy);
      g_autofree char *s1 = tw_tinfo_to_string (x);
      return tw_nn_shape_error (error,
                                "linear_grad_weight expects dy [..., out] and x [..., in] with "
                                "the same leading dimensions, got %s and %s",
                                s0, s1);
    }
  tw_tinfo_set (&out[0], dy->dtype, 2,
                (int64_t[]) { dy->dims[dy->ndim - 1], x->dims[x->ndim - 1] });
  return TRUE;
}

static gboolean
linear_grad_weight_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in,
                            int n_in, tw_tensor *const *out, GError **error)
{
  const tw_tensor *dy = in[0], *x = in[1];
  int64_t N = out[0]->shape[0], K = out[0]->shape[1];
  int64_t M = 1;
  for (int d = 0; d < dy->ndim - 1; d++)
    M *= dy->shape[d];
  /* dW (N, K) = dy^T (N, M) @ x (M, K): dy is stored (M, N), hence TransA. */
  tw_nn_gemm (dy->dtype, TRUE, FALSE, N, K, M, tw_tensor_data (dy), N, tw_tensor_data (x), K, 0.0,
              tw_tensor_data (out[0]), K);
  return TRUE;
}

static void
linear_grad_weight_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out,
                         int n_out, tw_cost *cost)
{
  double es = tw_dtype_size (in[0].dtype);
  double N = (double) out[0].dims[0], K = (double) out[0].dims[1];
  double M = N > 0 ? (double) tw_tinfo_numel (&in[0], NULL) / N : 0;
  cost->flops = 2 * M * N * K;
  cost->bytes_read = es * (M * N + M * K);
  cost->bytes_written = es * N * K;
}

static const tw_op_def linear_grad_weight_def = {
  .name = "linear_grad_weight",
  .category = "Core",
  .doc = "Gradient of linear's weight: dy^T x",
  .attrs = no_attrs,
  .min_inputs = 2,
  .max_inputs = 2,
  .n_outputs = 1,
  .infer = linear_grad_weight_infer,
  .forward = linear_grad_weight_forward,
  .cost = linear_grad_weight_cost,
  .flags = TW_OP_INTERNAL,
};

/* linear_grad_bias (dy [..., out]) -> db [out]: column sums of dy seen as (M, out). */
static gboolean
linear_grad_bias_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                        GError **error)
{
  if (in[0].ndim < 1 || !tw_dtype_is_float (in[0].dtype))
    {
      g_autofree char *s = tw_tinfo_to_string (&in[0]);
      return tw_nn_shape_error (error, "linear_grad_bias expects dy [..., out], got %s", s);
    }
  tw_tinfo_set (&out[0], in[0].dtype, 1, &in[0].dims[in[0].ndim - 1]);
  return TRUE;
}

/* Columns per parallel block: each block sums all rows of its columns in row
 * order, so the result does not depend on the thread count.  256 columns of
 * f32 are 1 KiB, a few cache lines per row per block. */
#define NN_COLSUM_BLOCK 256

/* f64: in row order (double is exact enough); f32: blocked, see
 * tw_colsum_f32 (engine/cpu/scan.h). */
static inline void
colsum_block_f64 (const double *restrict dy, double *restrict db, int64_t M, int64_t N,
                  int64_t j0, int64_t j1)
{
  for (int64_t j = j0; j < j1; j++)
    db[j] = 0;
  for (int64_t i = 0; i < M; i++)
    {
      const double *row = dy + i * N;
#pragma omp simd
      for (int64_t j = j0; j < j1; j++)
        db[j] += row[j];
    }
}

#define NN_DEFINE_COLSUM(T, SFX, BLOCK)                                                       \
  static void colsum_##SFX (const T *dy, T *db, int64_t M, int64_t N, int nthreads)         \
  {                                                                                         \
    int64_t nblocks = (N + NN_COLSUM_BLOCK - 1) / NN_COLSUM_BLOCK;                          \
    TW_NN_FOR (blk, nblocks, M * N, nthreads,                                               \
               BLOCK (dy, db, M, N, blk * NN_COLSUM_BLOCK,                                  \
                      MIN (N, (blk + 1) * NN_COLSUM_BLOCK)));                               \
  }

NN_DEFINE_COLSUM (float, f32, tw_colsum_f32)
NN_DEFINE_COLSUM (double, f64, colsum_block_f64)

static gboolean
linear_grad_bias_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                          tw_tensor *const *out, GError **error)
{
  int64_t N = out[0]->shape[0];
  int64_t M = N > 0 ? tw_tensor_numel (in[0]) / N : 0;
  if (in[0]->dtype == TW_F32)
    colsum_f32 (tw_tensor_f32 (in[0]), tw_tensor_f32 (out[0]), M, N, tw_nn_threads (ctx));
  else
    colsum_f64 (tw_tensor_f64 (in[0]), tw_tensor_f64 (out[0]), M, N, tw_nn_threads (ctx));
  return TRUE;
}

static void
linear_grad_bias_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out,
                       int n_out, tw_cost *cost)
{
  double es = tw_dtype_size (in[0].dtype);
  double n = (double) tw_tinfo_numel (&in[0], NULL);
  cost->flops = n;
  cost->bytes_read = es * n;
  cost->bytes_written = es * (double) out[0].dims[0];
}

static const tw_op_def linear_grad_bias_def = {
  .name = "linear_grad_bias",
  .category = "Core",
  .doc = "Gradient of linear's bias: column sums of dy",
  .attrs = no_attrs,
  .min_inputs = 1,
  .max_inputs = 1,
  .n_outputs = 1,
  .infer = linear_grad_bias_infer,
  .forward = linear_grad_bias_forward,
  .cost = linear_grad_bias_cost,
  .flags = TW_OP_INTERNAL,
};

/* ---- embedding ------------------------------------------------------------ */

static const tw_attr_spec embedding_attrs[] = {
  { "num_embeddings", TW_ATTR_INT, NULL, TRUE, "size of the vocabulary" },
  { "embedding_dim", TW_ATTR_INT, NULL, TRUE, "length of each embedding vector" },
  { "init", TW_ATTR_STRING, "\"default\"", FALSE, "weight initialisation (default: N(0, 1))",
    init_choices },
  { NULL }
};

static const char *const indices_input_names[] = { "indices", NULL };

static gboolean
embedding_check_attrs (const tw_attrs *a, int64_t *num, int64_t *dim, GError **error)
{
  *num = tw_attrs_get_int (a, "num_embeddings", 0);
  *dim = tw_attrs_get_int (a, "embedding_dim", 0);
  if (*num > 0 && *dim > 0 && !tw_shape_nbytes_checked (TW_F32, 2, (int64_t[]) { *num, *dim }, NULL))
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "embedding: num_embeddings %" G_GINT64_FORMAT " times embedding_dim %"
                   G_GINT64_FORMAT " makes a weight of more than 2^63 bytes", *num, *dim);
      return FALSE;
    }
  if (*num > 0 && *dim > 0)
    return TRUE;
  g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
               "embedding: num_embeddings and embedding_dim must be positive, got %"
               G_GINT64_FORMAT " and %" G_GINT64_FORMAT,
               *num, *dim);
  return FALSE;
}

static int
embedding_params (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_param_spec *out,
                  GError **error)
{
  int64_t num, dim;
  if (!embedding_check_attrs (a, &num, &dim, error))
    return -1;
  /* fan_in / fan_out as torch.nn.init computes them for a [num, dim] matrix. */
  nn_param (&out[0], "weight", TW_F32, 2, (int64_t[]) { num, dim },
            nn_weight_init (a, TW_INIT_NORMAL), dim, num);
  return 1;
}

static gboolean
embedding_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  int64_t num, dim;
  tw_dtype dt = TW_F32;
  if (!embedding_check_attrs (a, &num, &dim, error))
    return FALSE;
  g_autofree char *si = tw_tinfo_to_string (&in[0]);
  if (in[0].dtype != TW_I64 || in[0].ndim >= TW_MAX_DIMS)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_DTYPE,
                   "embedding expects i64 indices of rank below %d, got %s", TW_MAX_DIMS, si);
      return FALSE;
    }
  if (n_in != 1 && n_in != 2)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ARITY,
                   "embedding expects indices and weight, got %d inputs", n_in);
      return FALSE;
    }
  if (n_in == 2)
    {
      g_autofree char *sw = tw_tinfo_to_string (&in[1]);
      if (in[1].ndim != 2 || in[1].dims[0] != num || in[1].dims[1] != dim
          || !tw_dtype_is_float (in[1].dtype))
        return tw_nn_shape_error (error,
                                  "embedding expects weight of shape [%" G_GINT64_FORMAT
                                  ", %" G_GINT64_FORMAT "] (float), got %s",
                                  num, dim, sw);
      dt = in[1].dtype;
    }
  out[0] = in[0];
  out[0].dtype = dt;
  out[0].dims[in[0].ndim] = dim;
  out[0].ndim = in[0].ndim + 1;
  return TRUE;
}

/* FALSE with an error naming the first index outside [0, num). */
static gboolean
embedding_check_indices (const char *op, const tw_tensor *idx, int64_t num, GError **error)
{
  const int64_t *ix = tw_tensor_i64 (idx);
  int64_t n = tw_tensor_numel (idx);
  int64_t bad = -1;
  for (int64_t i = 0; i < n; i++)
    if ((uint64_t) ix[i] >= (uint64_t) num)
      {
        bad = i;
        break;
      }
  if (bad < 0)
    return TRUE;
  g_autofree char *pos = tw_nn_index_string (idx->ndim, idx->shape, bad);
  g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
               "%s: index %" G_GINT64_FORMAT " at position %s is outside [0, %" G_GINT64_FORMAT
               ")",
               op, ix[bad], pos, num);
  return FALSE;
}

static gboolean
embedding_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                   tw_tensor *const *out, GError **error)
{
  const tw_tensor *idx = in[0], *w = in[1];
  int64_t num = w->shape[0], dim = w->shape[1];
  int64_t n = tw_tensor_numel (idx);
  size_t row = dim * tw_dtype_size (w->dtype);
  const int64_t *ix = tw_tensor_i64 (idx);
  const char *wd = tw_tensor_data (w);
  char *yd = tw_tensor_data (out[0]);

  if (!embedding_check_indices ("embedding", idx, num, error))
    return FALSE;
  TW_NN_FOR (i, n, n * dim, tw_nn_threads (ctx), memcpy (yd + i * row, wd + ix[i] * row, row));
  return TRUE;
}

static gboolean
embedding_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                    tw_val *const *out, tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  if (!needs[1])
    return TRUE;
  if (gout[0] == NULL)
    {
      gin[1] = tw_emit1 (e, "nn_zeros_like", NULL, in[1]);
      return gin[1] != NULL;
    }
  tw_attrs *ga = tw_attrs_new ();
  tw_attrs_set_int (ga, "num_embeddings", tw_val_info (e, in[1])->dims[0]);
  gin[1] = tw_emit2 (e, "embedding_grad", ga, gout[0], in[0]);
  tw_attrs_free (ga);
  return gin[1] != NULL;
}

static void
embedding_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
                tw_cost *cost)
{
  double n = (double) tw_tinfo_numel (&out[0], NULL);
  cost->flops = 0;
  /* rows copied plus the i64 indices */
  cost->bytes_read = n * tw_dtype_size (out[0].dtype)
                     + 8.0 * (double) tw_tinfo_numel (&in[0], NULL);
  cost->bytes_written = n * tw_dtype_size (out[0].dtype);
}

static const tw_op_def embedding_def = {
  .name = "embedding",
  .category = "Core",
  .doc = "Lookup table: row i of the weight for each index i",
  .attrs = embedding_attrs,
  .min_inputs = 1,
  .max_inputs = 1,
  .input_names = indices_input_names,
  .n_outputs = 1,
  .params = embedding_params,
  .infer = embedding_infer,
  .forward = embedding_forward,
  .backward = embedding_backward,
  .cost = embedding_cost,
  .onnx_name = "Gather",
};

/* embedding_grad (dy [..., dim], idx [...]; num_embeddings) -> dW [num, dim]:
 * dW[idx[i]] += dy[i], positions in order. */
static const tw_attr_spec embedding_grad_attrs[] = {
  { "num_embeddings", TW_ATTR_INT, NULL, TRUE, "rows of the weight" },
  { NULL }
};

static gboolean
embedding_grad_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                      GError **error)
{
  const tw_tinfo *dy = &in[0], *idx = &in[1];
  int64_t num = tw_attrs_get_int (a, "num_embeddings", 0);
  gboolean ok = num > 0 && idx->dtype == TW_I64 && dy->ndim == idx->ndim + 1
                && tw_dtype_is_float (dy->dtype);
  for (int d = 0; ok && d < idx->ndim; d++)
    ok = dy->dims[d] == idx->dims[d];
  if (!ok)
    {
      g_autofree char *s0 = tw_tinfo_to_string (dy);
      g_autofree char *s1 = tw_tinfo_to_string (idx);
      return tw_nn_shape_error (error,
                                "embedding_grad expects dy [..., dim] and i64 indices [...], "
                                "got %s and %s",
                                s0, s1);
    }
  tw_tinfo_set (&out[0], dy->dtype, 2, (int64_t[]) { num, dy->dims[dy->ndim - 1] });
  return TRUE;
}

#define NN_DEFINE_SCATTER_ADD(T, SFX)                                                         \
  /* Columns [j0, j1) of dw (num, dim) += dy (n, dim) rows scattered by ix (n), in         \
   * position order. */                                                                    \
  static inline void scatter_block_##SFX (const T *restrict dy, const int64_t *ix,          \
                                          T *restrict dw, int64_t n, int64_t dim,           \
                                          int64_t j0, int64_t j1)                           \
  {                                                                                         \
    for (int64_t i = 0; i < n; i++)                                                         \
      {                                                                                     \
        T *dst = dw + ix[i] * dim;                                                          \
        const T *src = dy + i * dim;                                                        \
        _Pragma ("omp simd")                                                                \
        for (int64_t j = j0; j < j1; j++)                                                   \
          dst[j] += src[j];                                                                 \
      }                                                                                     \
  }                                                                                         \
                                                                                            \
  /* dw (num, dim) = 0, then dw[ix[i]] += dy[i]; parallel over blocks of columns. */       \
  static void scatter_add_##SFX (const T *dy, const int64_t *ix, T *dw, int64_t n,          \
                                 int64_t num, int64_t dim, int nthreads)                    \
  {                                                                                         \
    int64_t nblocks = (dim + NN_COLSUM_BLOCK - 1) / NN_COLSUM_BLOCK;                        \
    memset (dw, 0, (size_t) (num * dim) * sizeof (T));                                      \
    TW_NN_FOR (blk, nblocks, n * dim, nthreads,                                             \
               scatter_block_##SFX (dy, ix, dw, n, dim, blk * NN_COLSUM_BLOCK,              \
                                    MIN (dim, (blk + 1) * NN_COLSUM_BLOCK)));               \
  }

NN_DEFINE_SCATTER_ADD (float, f32)
NN_DEFINE_SCATTER_ADD (double, f64)

static gboolean
embedding_grad_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                        tw_tensor *const *out, GError **error)
{
  const tw_tensor *dy = in[0], *idx = in[1];
  int64_t num = out[0]->shape[0], dim = out[0]->shape[1];
  int64_t n = tw_tensor_numel (idx);
  if (!embedding_check_indices ("embedding_grad", idx, num, error))
    return FALSE;
  if (dy->dtype == TW_F32)
    scatter_add_f32 (tw_tensor_f32 (dy), tw_tensor_i64 (idx), tw_tensor_f32 (out[0]), n, num, dim,
                     tw_nn_threads (ctx));
  else
    scatter_add_f64 (tw_tensor_f64 (dy), tw_tensor_i64 (idx), tw_tensor_f64 (out[0]), n, num, dim,
                     tw_nn_threads (ctx));
  return TRUE;
}

static void
embedding_grad_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out,
                     int n_out, tw_cost *cost)
{
  double es = tw_dtype_size (in[0].dtype);
  double n = (double) tw_tinfo_numel (&in[0], NULL);
  cost->flops = n;
  cost->bytes_read = es * n + 8.0 * (double) tw_tinfo_numel (&in[1], NULL);
  cost->bytes_written = es * (double) tw_tinfo_numel (&out[0], NULL) + es * n;
}

static const tw_op_def embedding_grad_def = {
  .name = "embedding_grad",
  .category = "Core",
  .doc = "Gradient of embedding's weight: scatter-add of dy into the indexed rows",
  .attrs = embedding_grad_attrs,
  .min_inputs = 2,
  .max_inputs = 2,
  .n_outputs = 1,
  .infer = embedding_grad_infer,
  .forward = embedding_grad_forward,
  .cost = embedding_grad_cost,
  .flags = TW_OP_INTERNAL,
};

/* ---- argmax ---------------------------------------------------------------- */

static const tw_attr_spec argmax_attrs[] = {
  { "axis", TW_ATTR_INT, "-1", FALSE, "dimension to search" },
  { "keepdims", TW_ATTR_BOOL, "false", FALSE, "keep the searched dimension with size 1" },
  { NULL }
};

gboolean
tw_nn_arg_infer (const char *op, const tw_attrs *a, const tw_tinfo *in, int64_t def_axis,
                 gboolean def_keep, tw_tinfo *out, GError **error)
{
  int axis;
  if (!tw_nn_check_float (op, "input", &in[0], error)
      || !tw_nn_axis (op, tw_attrs_get_int (a, "axis", def_axis), &in[0], &axis, error))
    return FALSE;
  out[0] = in[0];
  out[0].dtype = TW_I64;
  if (tw_attrs_get_bool (a, "keepdims", def_keep))
    out[0].dims[axis] = 1;
  else
    {
      for (int d = axis; d < in[0].ndim - 1; d++)
        out[0].dims[d] = in[0].dims[d + 1];
      out[0].ndim--;
    }
  return TRUE;
}

static gboolean
argmax_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  return tw_nn_arg_infer ("argmax", a, in, -1, FALSE, out, error);
}

/* x is (outer, L, inner); idx is (outer, inner).  The first maximum wins and a
 * NaN counts as the maximum, as in torch.argmax. */
#define NN_DEFINE_ARGMAX(T, SFX)                                                              \
  static void argmax_##SFX (const T *x, int64_t *idx, int64_t outer, int64_t L,             \
                            int64_t inner, int nthreads)                                    \
  {                                                                                         \
    TW_NN_FOR (r, outer * inner, outer * L * inner, nthreads, {                             \
      const T *p = x + (r / inner) * L * inner + r % inner;                                 \
      int64_t best = 0;                                                                     \
      T bv = p[0];                                                                          \
      for (int64_t l = 1; l < L && !isnan (bv); l++)                                        \
        if (p[l * inner] > bv || isnan (p[l * inner]))                                      \
          {                                                                                 \
            bv = p[l * inner];                                                              \
            best = l;                                                                       \
          }                                                                                 \
      idx[r] = best;                                                                        \
    });                                                                                     \
  }

NN_DEFINE_ARGMAX (float, f32)
NN_DEFINE_ARGMAX (double, f64)

static gboolean
argmax_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                tw_tensor *const *out, GError **error)
{
  int axis = (int) tw_attrs_get_int (a, "axis", -1);
  int64_t outer, L, inner;
  if (axis < 0)
    axis += in[0]->ndim;
  tw_nn_split_axis (in[0], axis, &outer, &L, &inner);
  if (L == 0)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE, "argmax over an empty dimension");
      return FALSE;
    }
  if (in[0]->dtype == TW_F32)
    argmax_f32 (tw_tensor_f32 (in[0]), tw_tensor_i64 (out[0]), outer, L, inner,
                tw_nn_threads (ctx));
  else
    argmax_f64 (tw_tensor_f64 (in[0]), tw_tensor_i64 (out[0]), outer, L, inner,
                tw_nn_threads (ctx));
  return TRUE;
}

static void
argmax_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
             tw_cost *cost)
{
  double n = (double) tw_tinfo_numel (&in[0], NULL);
  cost->flops = n;
  cost->bytes_read = n * tw_dtype_size (in[0].dtype);
  cost->bytes_written = 8.0 * (double) tw_tinfo_numel (&out[0], NULL);
}

static const tw_op_def argmax_def = {
  .name = "argmax",
  .category = "Math",
  .doc = "Index of the largest element along an axis (i64)",
  .attrs = argmax_attrs,
  .min_inputs = 1,
  .max_inputs = 1,
  .input_names = x_input_names,
  .n_outputs = 1,
  .infer = argmax_infer,
  .forward = argmax_forward,
  .cost = argmax_cost,
  .onnx_name = "ArgMax",
};

void
tw_ops_register_nn (void)
{
  tw_op_register (&zeros_like_def);
  tw_op_register (&linear_def);
  tw_op_register (&linear_grad_input_def);
  tw_op_register (&linear_grad_weight_def);
  tw_op_register (&linear_grad_bias_def);
  tw_op_register (&embedding_def);
  tw_op_register (&embedding_grad_def);
  tw_op_register (&argmax_def);
  tw_ops_register_nn_matmul ();
  tw_ops_register_nn_act ();
}
