/* matmul.c — NumPy-style matrix product with broadcast batch dimensions and
 * its two gradient ops (matmul_grad_a, matmul_grad_b), all on OpenBLAS GEMMs
 * with transpose flags instead of transposed copies. */
#define G_LOG_DOMAIN "twb-ops-nn"

#include "engine/ops/nn-private.h"

#include <string.h>

static const tw_attr_spec no_attrs[] = { { NULL } };

/* ---- matmul -------------------------------------------------------------- */

/* NumPy matmul: a is [..., M, K] (or [K], read as [1, K]), b is [..., K, P]
 * (or [K], read as [K, 1]); the leading "batch" dimensions broadcast.  The
 * output is [batch..., M, P] without the dimensions a 1-D operand added. */
typedef struct
{
  int nb;                       /* rank of the broadcast batch */
  int64_t batch[TW_MAX_DIMS];
  int64_t ba[TW_MAX_DIMS], bb[TW_MAX_DIMS];  /* a's, b's batch dims aligned right (1 = absent) */
  int64_t M, K, K2, P;
  gboolean a1, b1;              /* 1-D operands */
} mm_geom;

static gboolean
mm_geometry (const int64_t *da, int na, const int64_t *db, int nb, mm_geom *g)
{
  memset (g, 0, sizeof *g);
  if (na < 1 || nb < 1)
    return FALSE;
  g->a1 = na == 1;
  g->b1 = nb == 1;
  g->M = g->a1 ? 1 : da[na - 2];
  g->K = da[na - 1];
  g->K2 = g->b1 ? db[0] : db[nb - 2];
  g->P = g->b1 ? 1 : db[nb - 1];
  if (g->K != g->K2)
    return FALSE;
  int nba = MAX (na - 2, 0), nbb = MAX (nb - 2, 0);
  g->nb = MAX (nba, nbb);
  for (int i = 0; i < g->nb; i++)
    {
      int64_t x = i < g->nb - nba ? 1 : da[i - (g->nb - nba)];
      int64_t y = i < g->nb - nbb ? 1 : db[i - (g->nb - nbb)];
      g->ba[i] = x;
      g->bb[i] = y;
      if (x == y || y == 1)
        g->batch[i] = x;
      else if (x == 1)
        g->batch[i] = y;
      else
        return FALSE;
    }
  return TRUE;
}

static gboolean
matmul_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  mm_geom g;
  if (!tw_nn_check_float ("matmul", "a", &in[0], error)
      || !tw_nn_check_float ("matmul", "b", &in[1], error))
    return FALSE;
  g_autofree char *s0 = tw_tinfo_to_string (&in[0]);
  g_autofree char *s1 = tw_tinfo_to_string (&in[1]);
  if (in[0].dtype != in[1].dtype)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_DTYPE,
                   "matmul expects a and b of one dtype, got %s and %s", s0, s1);
      return FALSE;
    }
  if (in[0].ndim < 1 || in[1].ndim < 1)
    return tw_nn_shape_error (error,
                              "matmul expects a [..., M, K] and b [..., K, P] (1-D allowed), "
                              "got %s and %s",
                              s0, s1);
  if (!mm_geometry (in[0].dims, in[0].ndim, in[1].dims, in[1].ndim, &g))
    {
      if (g.K != g.K2)
        return tw_nn_shape_error (error,
                                  "matmul expects a [..., M, K] and b [..., K, P] with one K, "
                                  "got %s (K = %" G_GINT64_FORMAT ") and %s (K = %"
                                  G_GINT64_FORMAT ")",
                                  s0, g.K, s1, g.K2);
      return tw_nn_shape_error (error,
                                "matmul: the leading (batch) dimensions of %s and %s do not "
                                "broadcast",
                                s0, s1);
    }
  int n = g.nb + (g.a1 ? 0 : 1) + (g.b1 ? 0 : 1);
  out[0].dtype = in[0].dtype;
  out[0].ndim = n;
  for (int i = 0; i < g.nb; i++)
    out[0].dims[i] = g.batch[i];
  if (!g.a1)
    out[0].dims[g.nb] = g.M;
  if (!g.b1)
    out[0].dims[n - 1] = g.P;
  return TRUE;
}

/* Matrix offset (in matrices) of batch index idx into an operand whose batch
 * dims are bd (1 where broadcast). */
static int64_t
mm_offset (const mm_geom *g, const int64_t *bd, const int64_t *idx)
{
  int64_t off = 0;
  for (int i = 0; i < g->nb; i++)
    off = off * bd[i] + (bd[i] == 1 ? 0 : idx[i]);
  return off;
}

static int64_t
mm_numel (int n, const int64_t *d)
{
  int64_t r = 1;
  for (int i = 0; i < n; i++)
    r *= d[i];
  return r;
}

static void
mm_next (const mm_geom *g, int64_t *idx)
{
  for (int i = g->nb - 1; i >= 0; i--)
    {
      if (++idx[i] < g->batch[i])
        return;
      idx[i] = 0;
    }
}

static void
mm_geom_of (const tw_tensor *a, const tw_tensor *b, mm_geom *g)
{
  gboolean ok = mm_geometry (a->shape, a->ndim, b->shape, b->ndim, g);
  g_assert (ok);
}

static gboolean
matmul_forward (const tw_kctx *ctx, const tw_attrs *attrs, tw_tensor *const *in, int n_in,
                tw_tensor *const *out, GError **error)
{
  const tw_tensor *a = in[0], *b = in[1];
  mm_geom g;
  mm_geom_of (a, b, &g);
  size_t es = tw_dtype_size (a->dtype);
  int64_t M = g.M, K = g.K, P = g.P;
  int64_t nbatch = mm_numel (g.nb, g.batch);
  const void *ad = tw_tensor_data (a), *bd = tw_tensor_data (b);
  void *yd = tw_tensor_data (out[0]);

  if (mm_numel (g.nb, g.bb) == 1 && mm_numel (g.nb, g.ba) == nbatch)
    {
      /* b is one matrix shared by every batch: one GEMM over (nbatch * M) rows. */
      tw_nn_gemm (a->dtype, FALSE, FALSE, nbatch * M, P, K, ad, K, bd, P, 0.0, yd, P);
    }
  else
    {
      int64_t idx[TW_MAX_DIMS] = { 0 };
      for (int64_t i = 0; i < nbatch; i++, mm_next (&g, idx))
        tw_nn_gemm (a->dtype, FALSE, FALSE, M, P, K,
                    tw_nn_at (ad, mm_offset (&g, g.ba, idx) * M * K, es), K,
                    tw_nn_at (bd, mm_offset (&g, g.bb, idx) * K * P, es), P, 0.0,
                    tw_nn_at (yd, i * M * P, es), P);
    }
  return TRUE;
}

static gboolean
matmul_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
                 tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  static const char *const grad_ops[2] = { "matmul_grad_a", "matmul_grad_b" };
  gboolean ok = TRUE;
  for (int i = 0; i < 2; i++)
    {
      if (!needs[i])
        continue;
      if (gout[0] == NULL)
        gin[i] = tw_emit1 (e, "nn_zeros_like", NULL, in[i]);
      else
        gin[i] = tw_emit3 (e, grad_ops[i], NULL, gout[0], in[0], in[1]);
      ok &= gin[i] != NULL;
    }
  return ok;
}

static void
matmul_cost (const tw_attrs *attrs, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
             tw_cost *cost)
{
  double es = tw_dtype_size (in[0].dtype);
  double K = (double) in[0].dims[in[0].ndim - 1];
  cost->flops = 2 * K * (double) tw_tinfo_numel (&out[0], NULL);
  cost->bytes_read = es * (double) (tw_tinfo_numel (&in[0], NULL) + tw_tinfo_numel (&in[1], NULL));
  cost->bytes_written = es * (double) tw_tinfo_numel (&out[0], NULL);
}

static const char *const matmul_input_names[] = { "a", "b", NULL };

static const tw_op_def matmul_def = {
  .name = "matmul",
  .category = "Math",
  .doc = "Matrix product with NumPy broadcasting of the leading dimensions",
  .attrs = no_attrs,
  .min_inputs = 2,
  .max_inputs = 2,
  .input_names = matmul_input_names,
  .n_outputs = 1,
  .infer = matmul_infer,
  .forward = matmul_forward,
  .backward = matmul_backward,
  .cost = matmul_cost,
  .onnx_name = "MatMul",
};

/* matmul_grad_a (dy, a, b) -> da with a's shape: da[ia] += dy[i] b[ib]^T summed
 * over the batches that broadcast onto ia; matmul_grad_b likewise
 * db[ib] += a[ia]^T dy[i].  Batches are visited in order (deterministic). */
static gboolean
matmul_grad_infer (const tw_attrs *attrs, const tw_tinfo *in, int n_in, tw_tinfo *out,
                   GError **error, int which)
{
  tw_tinfo y;
  if (!matmul_infer (attrs, &in[1], 2, &y, error))
    return FALSE;
  if (!tw_tinfo_equal (&y, &in[0]))
    {
      g_autofree char *s0 = tw_tinfo_to_string (&in[0]);
      g_autofree char *s1 = tw_tinfo_to_string (&y);
      return tw_nn_shape_error (error, "matmul gradient: dy is %s, expected %s", s0, s1);
    }
  out[0] = in[1 + which];
  return TRUE;
}

static gboolean
matmul_grad_a_infer (const tw_attrs *attrs, const tw_tinfo *in, int n_in, tw_tinfo *out,
                     GError **error)
{
  return matmul_grad_infer (attrs, in, n_in, out, error, 0);
}

static gboolean
matmul_grad_b_infer (const tw_attrs *attrs, const tw_tinfo *in, int n_in, tw_tinfo *out,
                     GError **error)
{
  return matmul_grad_infer (attrs, in, n_in, out, error, 1);
}

static gboolean
matmul_grad_a_forward (const tw_kctx *ctx, const tw_attrs *attrs, tw_tensor *const *in,
                       int n_in, tw_tensor *const *out, GError **error)
{
  const tw_tensor *dy = in[0], *a = in[1], *b = in[2];
  mm_geom g;
  mm_geom_of (a, b, &g);
  size_t es = tw_dtype_size (a->dtype);
  int64_t M = g.M, K = g.K, P = g.P;
  int64_t nbatch = mm_numel (g.nb, g.batch);
  const void *dyd = tw_tensor_data (dy), *bd = tw_tensor_data (b);
  void *dad = tw_tensor_data (out[0]);

  if (mm_numel (g.nb, g.bb) == 1 && mm_numel (g.nb, g.ba) == nbatch)
    {
      /* da (nbatch*M, K) = dy (nbatch*M, P) @ b^T, b stored (K, P). */
      tw_nn_gemm (a->dtype, FALSE, TRUE, nbatch * M, K, P, dyd, P, bd, P, 0.0, dad, K);
      return TRUE;
    }
  gboolean reduce = mm_numel (g.nb, g.ba) != nbatch;
  if (reduce)
    memset (dad, 0, tw_tensor_nbytes (out[0]));
  int64_t idx[TW_MAX_DIMS] = { 0 };
  for (int64_t i = 0; i < nbatch; i++, mm_next (&g, idx))
    tw_nn_gemm (a->dtype, FALSE, TRUE, M, K, P, tw_nn_at (dyd, i * M * P, es), P,
                tw_nn_at (bd, mm_offset (&g, g.bb, idx) * K * P, es), P, reduce ? 1.0 : 0.0,
                tw_nn_at (dad, mm_offset (&g, g.ba, idx) * M * K, es), K);
  return TRUE;
}

static gboolean
matmul_grad_b_forward (const tw_kctx *ctx, const tw_attrs *attrs, tw_tensor *const *in,
                       int n_in, tw_tensor *const *out, GError **error)
{
  const tw_tensor *dy = in[0], *a = in[1], *b = in[2];
  mm_geom g;
  mm_geom_of (a, b, &g);
  size_t es = tw_dtype_size (a->dtype);
  int64_t M = g.M, K = g.K, P = g.P;
  int64_t nbatch = mm_numel (g.nb, g.batch);
  const void *dyd = tw_tensor_data (dy), *ad = tw_tensor_data (a);
  void *dbd = tw_tensor_data (out[0]);

  if (mm_numel (g.nb, g.bb) == 1 && mm_numel (g.nb, g.ba) == nbatch)
    {
      /* db (K, P) = a^T (K, nbatch*M) @ dy (nbatch*M, P), a stored (nbatch*M, K). */
      tw_nn_gemm (a->dtype, TRUE, FALSE, K, P, nbatch * M, ad, K, dyd, P, 0.0, dbd, P);
      return TRUE;
    }
  gboolean reduce = mm_numel (g.nb, g.bb) != nbatch;
  if (reduce)
    memset (dbd, 0, tw_tensor_nbytes (out[0]));
  int64_t idx[TW_MAX_DIMS] = { 0 };
  for (int64_t i = 0; i < nbatch; i++, mm_next (&g, idx))
    tw_nn_gemm (a->dtype, TRUE, FALSE, K, P, M,
                tw_nn_at (ad, mm_offset (&g, g.ba, idx) * M * K, es), K,
                tw_nn_at (dyd, i * M * P, es), P, reduce ? 1.0 : 0.0,
                tw_nn_at (dbd, mm_offset (&g, g.bb, idx) * K * P, es), P);
  return TRUE;
}

static void
matmul_grad_cost (const tw_attrs *attrs, const tw_tinfo *in, int n_in, const tw_tinfo *out,
                  int n_out, tw_cost *cost)
{
  matmul_cost (attrs, &in[1], 2, &in[0], 1, cost);
  cost->bytes_read += cost->bytes_written;
  cost->bytes_written = tw_dtype_size (out[0].dtype) * (double) tw_tinfo_numel (&out[0], NULL);
}

static const char *const matmul_grad_input_names[] = { "dy", "a", "b", NULL };

static const tw_op_def matmul_grad_a_def = {
  .name = "matmul_grad_a",
  .category = "Math",
  .doc = "Gradient of matmul's a: dy b^T summed over broadcast batches",
  .attrs = no_attrs,
  .min_inputs = 3,
  .max_inputs = 3,
  .input_names = matmul_grad_input_names,
  .n_outputs = 1,
  .infer = matmul_grad_a_infer,
  .forward = matmul_grad_a_forward,
  .cost = matmul_grad_cost,
  .flags = TW_OP_INTERNAL,
};

static const tw_op_def matmul_grad_b_def = {
  .name = "matmul_grad_b",
  .category = "Math",
  .doc = "Gradient of matmul's b: a^T dy summed over broadcast batches",
  .attrs = no_attrs,
  .min_inputs = 3,
  .max_inputs = 3,
  .input_names = matmul_grad_input_names,
  .n_outputs = 1,
  .infer = matmul_grad_b_infer,
  .forward = matmul_grad_b_forward,
  .cost = matmul_grad_cost,
  .flags = TW_OP_INTERNAL,
};

void
tw_ops_register_nn_matmul (void)
{
  tw_op_register (&matmul_def);
  tw_op_register (&matmul_grad_a_def);
  tw_op_register (&matmul_grad_b_def);
}
