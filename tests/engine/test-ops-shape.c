/* test-ops-shape.c — flatten, reshape, transpose, concat, split, slice and
 * their internal grad ops: exact copies against naive index arithmetic,
 * gradients, symbolic batch, errors. */
#include "opcheck.h"

#include <string.h>

/* Shape ops only move data: results must be exact. */
#define TOL_COPY 0.0
/* Central differences in float64 on linear ops: ~1e-10. */
#define TOL_GRAD 1e-6

static gboolean
infer_op (const char *op, const tw_attrs *attrs, int n_in, const tw_tinfo *in, tw_tinfo *out,
          GError **error)
{
  const tw_op_def *def = tw_op_lookup (op);
  g_assert_nonnull (def);
  tw_attrs *ra = tw_op_resolve_attrs (def, attrs, error);
  if (ra == NULL)
    return FALSE;
  gboolean ok = def->infer (ra, in, n_in, out, error);
  tw_attrs_free (ra);
  return ok;
}

static void
assert_shape (const tw_tensor *t, int nd, const int64_t *d)
{
  g_assert_cmpint (t->ndim, ==, nd);
  for (int i = 0; i < nd; i++)
    g_assert_cmpint (t->shape[i], ==, d[i]);
}

static void
assert_tinfo (const tw_tinfo *t, int nd, const int64_t *d)
{
  g_assert_cmpint (t->ndim, ==, nd);
  for (int i = 0; i < nd; i++)
    g_assert_cmpint (t->dims[i], ==, d[i]);
}

/* Run op on one input and check the output holds x's elements in order. */
static void
check_same_order (const char *op, const tw_attrs *a, tw_tensor *x, int nd, const int64_t *d)
{
  tw_tensor *in[1] = { x }, *out[1];
  twt_run_guarded (op, a, in, 1, out, NULL);
  assert_shape (out[0], nd, d);
  g_assert_cmpmem (tw_tensor_data (out[0]), tw_tensor_nbytes (out[0]), tw_tensor_data (x),
                   tw_tensor_nbytes (x));
  tw_tensor_unref (out[0]);
}

/* ---- flatten / reshape ------------------------------------------------------------ */

static void
test_flatten (void)
{
  g_autoptr (tw_tensor) x = twt_randn (TW_F32, 4, (int64_t[]) { 2, 3, 4, 5 }, 1);
  tw_attrs *a = tw_attrs_new ();
  check_same_order ("flatten", NULL, x, 2, (int64_t[]) { 2, 60 });
  tw_attrs_set_int (a, "start_dim", 0);
  check_same_order ("flatten", a, x, 1, (int64_t[]) { 120 });
  tw_attrs_set_int (a, "start_dim", 1);
  tw_attrs_set_int (a, "end_dim", -2);
  check_same_order ("flatten", a, x, 3, (int64_t[]) { 2, 12, 5 });
  tw_attrs_set_int (a, "start_dim", 3);
  tw_attrs_set_int (a, "end_dim", 3);
  check_same_order ("flatten", a, x, 4, (int64_t[]) { 2, 3, 4, 5 });
  g_autoptr (tw_tensor) s = twt_randn (TW_F64, 0, NULL, 2);
  tw_attrs_set_int (a, "start_dim", 0);
  tw_attrs_set_int (a, "end_dim", -1);
  check_same_order ("flatten", a, s, 1, (int64_t[]) { 1 });

  /* symbolic batch: [N, 1, 28, 28] → [N, 784] */
  g_autoptr (GError) error = NULL;
  tw_tinfo in, out;
  tw_tinfo_set (&in, TW_F32, 4, (int64_t[]) { TW_DIM_N, 1, 28, 28 });
  g_assert_true (infer_op ("flatten", NULL, 1, &in, &out, &error));
  assert_tinfo (&out, 2, (int64_t[]) { TW_DIM_N, 784 });
  tw_tinfo_set (&in, TW_F32, 2, (int64_t[]) { TW_DIM_N, 1 });
  g_assert_true (infer_op ("flatten", a, 1, &in, &out, &error));   /* [N, 1] from 0: [N] */
  assert_tinfo (&out, 1, (int64_t[]) { TW_DIM_N });
  tw_tinfo_set (&in, TW_F32, 2, (int64_t[]) { TW_DIM_N, 10 });
  g_assert_false (infer_op ("flatten", a, 1, &in, &out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE);
  g_assert_nonnull (strstr (error->message, "f32[N, 10]"));
  g_clear_error (&error);
  tw_attrs_set_int (a, "start_dim", 2);
  g_assert_false (infer_op ("flatten", a, 1, &in, &out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR);
  g_clear_error (&error);
  tw_attrs_free (a);

  g_autoptr (tw_tensor) xd = twt_randn (TW_F64, 3, (int64_t[]) { 2, 3, 4 }, 3);
  tw_tensor *gin[1] = { xd };
  twt_assert_grad ("flatten", NULL, gin, 1, (gboolean[]) { TRUE }, TOL_GRAD);
}

static void
test_reshape (void)
{
  g_autoptr (tw_tensor) x = twt_randint (2, (int64_t[]) { 2, 12 }, 1, 100);   /* i64 too */
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_ints (a, "shape", 2, (int64_t[]) { 3, 4 });
  check_same_order ("reshape", a, x, 3, (int64_t[]) { 2, 3, 4 });
  tw_attrs_set_ints (a, "shape", 2, (int64_t[]) { -1, 2 });
  check_same_order ("reshape", a, x, 3, (int64_t[]) { 2, 6, 2 });

  g_autoptr (GError) error = NULL;
  tw_tinfo in, out;
  tw_tinfo_set (&in, TW_F32, 2, (int64_t[]) { TW_DIM_N, 784 });
  tw_attrs_set_ints (a, "shape", 3, (int64_t[]) { 1, 28, 28 });
  g_assert_true (infer_op ("reshape", a, 1, &in, &out, &error));
  assert_tinfo (&out, 4, (int64_t[]) { TW_DIM_N, 1, 28, 28 });
  tw_attrs_set_ints (a, "shape", 2, (int64_t[]) { 10, 10 });
  g_assert_false (infer_op ("reshape", a, 1, &in, &out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE);
  g_assert_nonnull (strstr (error->message, "784"));
  g_assert_nonnull (strstr (error->message, "100"));
  g_clear_error (&error);
  tw_attrs_set_ints (a, "shape", 2, (int64_t[]) { -1, 5 });
  g_assert_false (infer_op ("reshape", a, 1, &in, &out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE);
  g_clear_error (&error);
  tw_attrs_set_ints (a, "shape", 2, (int64_t[]) { -1, -1 });
  g_assert_false (infer_op ("reshape", a, 1, &in, &out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR);
  g_clear_error (&error);

  g_autoptr (tw_tensor) xd = twt_randn (TW_F64, 2, (int64_t[]) { 3, 8 }, 3);
  tw_attrs_set_ints (a, "shape", 2, (int64_t[]) { 2, 4 });
  tw_tensor *gin[1] = { xd };
  twt_assert_grad ("reshape", a, gin, 1, (gboolean[]) { TRUE }, TOL_GRAD);
  tw_attrs_free (a);

  /* reshape_like: the internal op the two use backwards */
  g_autoptr (tw_tensor) like = twt_randn (TW_F32, 3, (int64_t[]) { 4, 2, 3 }, 4);
  tw_tensor *rin[2] = { xd, like }, *rout[1];
  twt_run_guarded ("reshape_like", NULL, rin, 2, rout, NULL);
  assert_shape (rout[0], 3, (int64_t[]) { 4, 2, 3 });
  g_assert_true (rout[0]->dtype == TW_F64);
  g_assert_cmpmem (tw_tensor_data (rout[0]), 24 * 8, tw_tensor_data (xd), 24 * 8);
  tw_tensor_unref (rout[0]);
  twt_assert_grad ("reshape_like", NULL, rin, 2, ((gboolean[]) { TRUE, FALSE }), TOL_GRAD);
}

/* ---- transpose ------------------------------------------------------------------ */

static void
check_transpose (tw_tensor *x, int np, const int *perm, const tw_kctx *ctx)
{
  tw_attrs *a = tw_attrs_new ();
  int64_t p64[TW_MAX_DIMS];
  int rev[TW_MAX_DIMS];
  for (int d = 0; d < x->ndim; d++)
    {
      p64[d] = np ? perm[d] : x->ndim - 1 - d;
      rev[d] = (int) p64[d];
    }
  if (np)
    tw_attrs_set_ints (a, "perm", np, p64);
  tw_tensor *in[1] = { x }, *out[1];
  twt_run_guarded ("transpose", a, in, 1, out, ctx);
  g_autoptr (tw_tensor) ref = tw_tensor_permute (x, rev);   /* strided view: the reference */
  g_assert_cmpfloat (twt_max_error (out[0], ref), ==, TOL_COPY);
  tw_tensor_unref (out[0]);
  if (x->dtype == TW_F64 && tw_tensor_numel (x) < 500)
    twt_assert_grad ("transpose", a, in, 1, (gboolean[]) { TRUE }, TOL_GRAD);
  tw_attrs_free (a);
}

static void
test_transpose (void)
{
  tw_kctx ctx = { .num_threads = 2 };
  g_autoptr (tw_tensor) x3 = twt_randn (TW_F64, 3, (int64_t[]) { 2, 3, 4 }, 1);
  check_transpose (x3, 0, NULL, NULL);
  check_transpose (x3, 3, (int[]) { 0, 2, 1 }, NULL);
  check_transpose (x3, 3, (int[]) { 1, 0, 2 }, NULL);
  check_transpose (x3, 3, (int[]) { 2, 0, 1 }, NULL);
  check_transpose (x3, 3, (int[]) { 0, 1, 2 }, NULL);
  g_autoptr (tw_tensor) x4 = twt_randn (TW_F32, 4, (int64_t[]) { 2, 3, 1, 5 }, 2);
  check_transpose (x4, 4, (int[]) { 0, 2, 3, 1 }, NULL);
  check_transpose (x4, 4, (int[]) { 3, 1, 2, 0 }, NULL);
  g_autoptr (tw_tensor) xi = twt_randint (2, (int64_t[]) { 5, 7 }, 3, 1000);
  check_transpose (xi, 0, NULL, NULL);
  g_autoptr (tw_tensor) big = twt_randn (TW_F32, 2, (int64_t[]) { 300, 170 }, 4);
  check_transpose (big, 2, (int[]) { 1, 0 }, &ctx);

  g_autoptr (GError) error = NULL;
  tw_tinfo in, out;
  tw_attrs *a = tw_attrs_new ();
  tw_tinfo_set (&in, TW_F32, 3, (int64_t[]) { TW_DIM_N, 3, 4 });
  tw_attrs_set_ints (a, "perm", 3, (int64_t[]) { 0, 2, 1 });
  g_assert_true (infer_op ("transpose", a, 1, &in, &out, &error));
  assert_tinfo (&out, 3, (int64_t[]) { TW_DIM_N, 4, 3 });
  tw_attrs_set_ints (a, "perm", 3, (int64_t[]) { 0, 2, 2 });
  g_assert_false (infer_op ("transpose", a, 1, &in, &out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR);
  g_assert_nonnull (strstr (error->message, "[0, 2, 2]"));
  g_clear_error (&error);
  tw_attrs_set_ints (a, "perm", 2, (int64_t[]) { 1, 0 });
  g_assert_false (infer_op ("transpose", a, 1, &in, &out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR);
  tw_attrs_free (a);
}

/* ---- concat / split ------------------------------------------------------------- */

static void
test_concat (void)
{
  for (int ax = -1; ax < 3; ax++)
    {
      int axis = ax < 0 ? 2 : ax;
      int64_t s0[3] = { 2, 3, 4 }, s1[3] = { 2, 3, 4 }, s2[3] = { 2, 3, 4 };
      s1[axis] = 1;
      s2[axis] = 5;
      g_autoptr (tw_tensor) a = twt_randn (TW_F64, 3, s0, 1);
      g_autoptr (tw_tensor) b = twt_randn (TW_F64, 3, s1, 2);
      g_autoptr (tw_tensor) c = twt_randn (TW_F64, 3, s2, 3);
      tw_attrs *at = tw_attrs_new ();
      tw_attrs_set_int (at, "axis", ax);
      tw_tensor *in[3] = { a, b, c }, *out[1];
      twt_run_guarded ("concat", at, in, 3, out, NULL);
      g_autoptr (tw_tensor) y = out[0];
      g_assert_cmpint (y->shape[axis], ==, s0[axis] + 1 + 5);
      /* each part of y along axis is the matching input */
      int64_t off = 0;
      for (int i = 0; i < 3; i++)
        {
          g_autoptr (tw_tensor) part = tw_tensor_slice (y, axis, off, off + in[i]->shape[axis], 1);
          g_assert_cmpfloat (twt_max_error (part, in[i]), ==, TOL_COPY);
          off += in[i]->shape[axis];
        }
      twt_assert_grad ("concat", at, in, 3, ((gboolean[]) { TRUE, TRUE, TRUE }), TOL_GRAD);
      tw_attrs_free (at);
    }

  g_autoptr (GError) error = NULL;
  tw_tinfo in[3], out;
  tw_tinfo_set (&in[0], TW_F32, 2, (int64_t[]) { TW_DIM_N, 3 });
  tw_tinfo_set (&in[1], TW_F32, 2, (int64_t[]) { TW_DIM_N, 4 });
  g_assert_true (infer_op ("concat", NULL, 2, in, &out, &error));
  assert_tinfo (&out, 2, (int64_t[]) { TW_DIM_N, 7 });
  tw_tinfo_set (&in[2], TW_F32, 2, (int64_t[]) { 5, 4 });
  g_assert_false (infer_op ("concat", NULL, 3, in, &out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE);
  g_assert_nonnull (strstr (error->message, "input 2"));
  g_assert_nonnull (strstr (error->message, "dim 0"));
  g_clear_error (&error);
  tw_attrs *at = tw_attrs_new ();
  tw_attrs_set_int (at, "axis", 0);
  g_assert_false (infer_op ("concat", at, 2, in, &out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE);
  g_clear_error (&error);
  tw_tinfo_set (&in[1], TW_F64, 2, (int64_t[]) { TW_DIM_N, 4 });
  g_assert_false (infer_op ("concat", NULL, 2, in, &out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE);
  g_assert_nonnull (strstr (error->message, "input 1"));
  tw_attrs_free (at);
}

static void
test_split (void)
{
  g_autoptr (tw_tensor) x = twt_randn (TW_F64, 3, (int64_t[]) { 2, 6, 3 }, 1);
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_ints (a, "sizes", 4, (int64_t[]) { 2, 3, 0, 1 });
  const tw_op_def *def = tw_op_lookup ("split");
  g_assert_cmpint (tw_op_num_outputs (def, a), ==, 4);
  tw_tensor *in[1] = { x }, *out[4];
  twt_run_guarded ("split", a, in, 1, out, NULL);
  g_assert_cmpint (out[0]->shape[1], ==, 2);
  g_assert_cmpint (out[2]->shape[1], ==, 0);
  int64_t off = 0;
  for (int k = 0; k < 4; k++)
    {
      g_autoptr (tw_tensor) ref = tw_tensor_slice (x, 1, off, off + out[k]->shape[1], 1);
      g_assert_cmpfloat (twt_max_error (out[k], ref), ==, TOL_COPY);
      off += out[k]->shape[1];
    }
  /* round trip: concat of the parts is x */
  tw_tensor *back[1];
  twt_run_guarded ("concat", NULL, out, 4, back, NULL);
  g_assert_cmpmem (tw_tensor_data (back[0]), tw_tensor_nbytes (back[0]), tw_tensor_data (x),
                   tw_tensor_nbytes (x));
  tw_tensor_unref (back[0]);
  twt_assert_grad ("split", a, in, 1, (gboolean[]) { TRUE }, TOL_GRAD);

  /* an output that does not reach the loss (gout NULL) counts as zeros */
  tw_emit *e = tw_eager_emit_new (NULL);
  tw_val *vin[1] = { tw_eager_emit_wrap (e, x) }, *vout[4], *gout[4] = { 0 }, *gin[1] = { 0 };
  for (int k = 0; k < 4; k++)
    vout[k] = tw_eager_emit_wrap (e, out[k]);
  g_autoptr (tw_tensor) g1 = tw_tensor_new (TW_F64, 3, out[1]->shape);
  tw_tensor_fill (g1, 1.0);
  gout[1] = tw_eager_emit_wrap (e, g1);
  g_assert_true (def->backward (e, a, vin, 1, vout, gout, (gboolean[]) { TRUE }, gin));
  g_assert_null (tw_emit_take_error (e));
  tw_tensor *gx = tw_eager_emit_tensor (gin[0]);
  assert_shape (gx, 3, x->shape);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 6; j++)
      for (int k = 0; k < 3; k++)
        g_assert_cmpfloat (tw_tensor_f64 (gx)[(i * 6 + j) * 3 + k], ==, j >= 2 && j < 5 ? 1 : 0);
  tw_eager_emit_free (e);
  for (int k = 0; k < 4; k++)
    tw_tensor_unref (out[k]);

  g_autoptr (GError) error = NULL;
  tw_tinfo ti, to[4];
  tw_tinfo_set (&ti, TW_F32, 2, (int64_t[]) { TW_DIM_N, 6 });
  tw_attrs_set_ints (a, "sizes", 2, (int64_t[]) { 1, 5 });
  g_assert_true (infer_op ("split", a, 1, &ti, to, &error));
  assert_tinfo (&to[1], 2, (int64_t[]) { TW_DIM_N, 5 });
  tw_attrs_set_ints (a, "sizes", 2, (int64_t[]) { 2, 5 });
  g_assert_false (infer_op ("split", a, 1, &ti, to, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE);
  g_assert_nonnull (strstr (error->message, "add up to 7"));
  g_clear_error (&error);
  g_assert_false (infer_op ("split", NULL, 1, &ti, to, &error));   /* sizes required */
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR);
  tw_attrs_free (a);
}

/* ---- slice ----------------------------------------------------------------------- */

typedef struct
{
  int64_t start, end, step;
  int n;
  int idx[10];              /* expected indices along the axis (length 10) */
} slice_case;

/* Expected values written out by hand from Python's semantics,
 * e.g. list(range(10))[8:2:-2] == [8, 6, 4]. */
static const slice_case slices[] = {
  { 2, 8, 1, 6, { 2, 3, 4, 5, 6, 7 } },
  { -3, G_MAXINT64, 1, 3, { 7, 8, 9 } },
  { 0, 100, 3, 4, { 0, 3, 6, 9 } },
  { 8, 2, -2, 3, { 8, 6, 4 } },
  { -1, -11, -1, 10, { 9, 8, 7, 6, 5, 4, 3, 2, 1, 0 } },
  { 5, 2, 1, 0, { 0 } },
  { -100, 3, 1, 3, { 0, 1, 2 } },
  { 9, -100, -4, 3, { 9, 5, 1 } },
  { 100, 0, -1, 9, { 9, 8, 7, 6, 5, 4, 3, 2, 1 } },
};

static void
test_slice (void)
{
  g_autoptr (tw_tensor) x = twt_randn (TW_F64, 3, (int64_t[]) { 2, 10, 3 }, 1);
  for (gsize c = 0; c < G_N_ELEMENTS (slices); c++)
    {
      const slice_case *s = &slices[c];
      tw_attrs *a = tw_attrs_new ();
      tw_attrs_set_int (a, "start", s->start);
      if (s->end != G_MAXINT64)
        tw_attrs_set_int (a, "end", s->end);
      tw_attrs_set_int (a, "step", s->step);
      tw_tensor *in[1] = { x }, *out[1];
      twt_run_guarded ("slice", a, in, 1, out, NULL);
      g_autoptr (tw_tensor) y = out[0];
      assert_shape (y, 3, (int64_t[]) { 2, s->n, 3 });
      for (int i = 0; i < 2; i++)
        for (int j = 0; j < s->n; j++)
          for (int k = 0; k < 3; k++)
            g_assert_cmpfloat (tw_tensor_f64 (y)[(i * s->n + j) * 3 + k], ==,
                               tw_tensor_f64 (x)[(i * 10 + s->idx[j]) * 3 + k]);
      twt_assert_grad ("slice", a, in, 1, (gboolean[]) { TRUE }, TOL_GRAD);

      /* slice_grad: zeros with the gradient scattered into the slice */
      tw_tensor *gin[2] = { y, x }, *gout[1];
      twt_run_guarded ("slice_grad", a, gin, 2, gout, NULL);
      g_autoptr (tw_tensor) z = gout[0];
      g_autoptr (tw_tensor) zs = NULL;
      twt_run_guarded ("slice", a, (tw_tensor *[]) { z }, 1, out, NULL);
      zs = out[0];
      g_assert_cmpfloat (twt_max_error (zs, y), ==, TOL_COPY);
      double total = 0, total_y = 0;
      for (int64_t i = 0; i < tw_tensor_numel (z); i++)
        total += tw_tensor_f64 (z)[i];
      for (int64_t i = 0; i < tw_tensor_numel (y); i++)
        total_y += tw_tensor_f64 (y)[i];
      g_assert_cmpfloat (total, ==, total_y);    /* nothing written outside the slice */
      twt_assert_grad ("slice_grad", a, gin, 2, ((gboolean[]) { TRUE, FALSE }), TOL_GRAD);
      tw_attrs_free (a);
    }

  g_autoptr (GError) error = NULL;
  tw_tinfo in, out;
  tw_attrs *a = tw_attrs_new ();
  tw_tinfo_set (&in, TW_F32, 2, (int64_t[]) { TW_DIM_N, 10 });
  tw_attrs_set_int (a, "start", 1);
  g_assert_true (infer_op ("slice", a, 1, &in, &out, &error));
  assert_tinfo (&out, 2, (int64_t[]) { TW_DIM_N, 9 });
  tw_attrs_set_int (a, "step", 0);
  g_assert_false (infer_op ("slice", a, 1, &in, &out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR);
  g_clear_error (&error);
  tw_attrs_set_int (a, "step", 1);
  tw_attrs_set_int (a, "axis", 0);
  g_assert_false (infer_op ("slice", a, 1, &in, &out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE);
  g_clear_error (&error);
  tw_attrs_set_int (a, "axis", 2);
  g_assert_false (infer_op ("slice", a, 1, &in, &out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR);
  tw_attrs_free (a);
}

static void
test_registry (void)
{
  const char *names[] = { "flatten", "reshape", "reshape_like", "transpose", "concat", "split",
                          "slice", "slice_grad" };
  for (gsize i = 0; i < G_N_ELEMENTS (names); i++)
    {
      const tw_op_def *d = tw_op_lookup (names[i]);
      g_assert_nonnull (d);
      g_assert_cmpstr (d->category, ==, "Shape");
      g_assert_nonnull (d->doc);
      g_assert_nonnull (d->backward);
      g_assert_nonnull (d->cost);
    }
  g_assert_true (tw_op_lookup ("transpose")->flags & TW_OP_VIEW);
  g_assert_true (tw_op_lookup ("slice_grad")->flags & TW_OP_INTERNAL);
  g_assert_cmpint (tw_op_lookup ("concat")->max_inputs, ==, -1);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  g_test_add_func ("/engine/ops/flatten", test_flatten);
  g_test_add_func ("/engine/ops/reshape", test_reshape);
  g_test_add_func ("/engine/ops/transpose", test_transpose);
  g_test_add_func ("/engine/ops/concat", test_concat);
  g_test_add_func ("/engine/ops/split", test_split);
  g_test_add_func ("/engine/ops/slice", test_slice);
  g_test_add_func ("/engine/ops/shape/registry", test_registry);
  return g_test_run ();
}
