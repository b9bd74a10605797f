/* test-ops-reduce.c — sum, mean, max, max_grad, sum_to, broadcast_to against
 * naive double references; gradients; thread-count determinism; errors. */
#include "opcheck.h"

#include "engine/rng.h"

#include <math.h>
#include <string.h>

/* f32 reductions accumulate in double and round once at the end, so the
 * error against a double reference is one f32 rounding (6e-8) of the
 * result, normalised by max(1, |ref|); 1e-6 leaves margin.  max is exact. */
#define TOL_F32 1e-6
/* f64: summation order differs from the reference's; n ~1e4 terms of size 1
 * give ~n * 1e-16. */
#define TOL_F64 1e-11
/* Central differences in float64 (eps 1e-6), linear ops: ~1e-10. */
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

typedef struct
{
  int nd;
  int64_t d[TW_MAX_DIMS];
  int naxes;                  /* -1: attribute absent */
  int64_t axes[TW_MAX_DIMS];
} red_case;

static const red_case cases[] = {
  { 3, { 2, 3, 4 }, -1 },
  { 3, { 2, 3, 4 }, 1, { 0 } },
  { 3, { 2, 3, 4 }, 1, { 1 } },
  { 3, { 2, 3, 4 }, 1, { -1 } },
  { 3, { 2, 3, 4 }, 2, { 0, 2 } },
  { 3, { 2, 3, 4 }, 2, { 2, 1 } },
  { 3, { 2, 3, 4 }, 3, { 0, 1, 2 } },
  { 4, { 2, 3, 1, 5 }, 2, { 1, 2 } },
  { 4, { 3, 2, 4, 5 }, 2, { 0, 3 } },
  { 1, { 7 }, 1, { 0 } },
  { 0, { 0 }, -1 },
  { 2, { 1, 9 }, 1, { 0 } },
  { 2, { 300, 130 }, 1, { 0 } },    /* 39000 elements: parallel rows */
  { 2, { 6, 9000 }, 1, { 1 } },     /* spans longer than one block */
  { 1, { 50001 }, -1 },              /* full reduction over 13 blocks */
};

static tw_attrs *
case_attrs (const red_case *c, gboolean keep)
{
  tw_attrs *a = tw_attrs_new ();
  if (c->naxes >= 0)
    tw_attrs_set_ints (a, "axes", c->naxes, c->axes);
  tw_attrs_set_bool (a, "keepdim", keep);
  return a;
}

/* Naive reference: one pass over x in row-major order. */
static tw_tensor *
reference (const char *op, const red_case *c, const tw_tensor *x, const tw_tensor *y)
{
  gboolean mask[TW_MAX_DIMS];
  for (int d = 0; d < c->nd; d++)
    mask[d] = c->naxes <= 0;
  for (int i = 0; i < c->naxes; i++)
    mask[c->axes[i] < 0 ? c->axes[i] + c->nd : c->axes[i]] = TRUE;
  int64_t no = tw_tensor_numel (y), count = tw_tensor_numel (x) / no;
  tw_tensor *r = tw_tensor_new (TW_F64, y->ndim, y->shape);
  double *rp = tw_tensor_f64 (r);
  for (int64_t o = 0; o < no; o++)
    rp[o] = strcmp (op, "max") == 0 ? -INFINITY : 0;
  for (int64_t i = 0; i < tw_tensor_numel (x); i++)
    {
      int64_t q = i, idx[TW_MAX_DIMS], o = 0;
      for (int d = c->nd - 1; d >= 0; d--)
        {
          idx[d] = q % c->d[d];
          q /= c->d[d];
        }
      for (int d = 0; d < c->nd; d++)
        if (!mask[d])
          o = o * c->d[d] + idx[d];
      double v = tw_tensor_get_flat (x, i);
      rp[o] = strcmp (op, "max") == 0 ? MAX (rp[o], v) : rp[o] + v;
    }
  if (strcmp (op, "mean") == 0)
    for (int64_t o = 0; o < no; o++)
      rp[o] /= (double) count;
  return r;
}

static void
test_forward (void)
{
  const char *ops[] = { "sum", "mean", "max" };
  tw_kctx ctx = { .num_threads = 2 };
  double worst[2] = { 0, 0 };
  for (gsize c = 0; c < G_N_ELEMENTS (cases); c++)
    for (int keep = 0; keep < 2; keep++)
      for (int dt = 0; dt < 2; dt++)
        for (gsize o = 0; o < G_N_ELEMENTS (ops); o++)
          {
            tw_dtype t = dt ? TW_F64 : TW_F32;
            /* mean 0.5: sums do not cancel to ~0, so relative errors mean something */
            g_autoptr (tw_tensor) x = twt_uniform (t, cases[c].nd, cases[c].d, c, -0.5, 1.5);
            tw_attrs *a = case_attrs (&cases[c], keep);
            tw_tensor *in[1] = { x }, *out[1];
            twt_run_guarded (ops[o], a, in, 1, out, &ctx);
            g_autoptr (tw_tensor) y = out[0];
            tw_tinfo xi, yi;
            tw_tinfo_from_tensor (&xi, x);
            g_assert_true (infer_op (ops[o], a, 1, &xi, &yi, NULL));
            g_assert_cmpint (yi.ndim, ==, keep ? cases[c].nd : y->ndim);
            g_autoptr (tw_tensor) ref = reference (ops[o], &cases[c], x, y);
            double err = twt_max_error (y, ref);
            worst[dt] = MAX (worst[dt], err);
            if (err > (dt ? TOL_F64 : TOL_F32))
              g_error ("%s case %zu keep %d %s: error %g", ops[o], c, keep, tw_dtype_name (t),
                       err);
            if (o == 2)
              g_assert_cmpfloat (err, ==, 0);
            tw_attrs_free (a);
          }
  g_test_message ("worst error f32 %.3g, f64 %.3g", worst[0], worst[1]);
}

static void
test_grad (void)
{
  const char *ops[] = { "sum", "mean", "max" };
  for (gsize c = 0; c < G_N_ELEMENTS (cases) - 3; c++)
    for (int keep = 0; keep < 2; keep++)
      for (gsize o = 0; o < G_N_ELEMENTS (ops); o++)
        {
          /* randn: continuous values, so max has no ties and gaps >> eps */
          g_autoptr (tw_tensor) x = twt_randn (TW_F64, cases[c].nd, cases[c].d, 50 + c);
          tw_attrs *a = case_attrs (&cases[c], keep);
          tw_tensor *in[1] = { x };
          twt_assert_grad (ops[o], a, in, 1, (gboolean[]) { TRUE }, TOL_GRAD);
          tw_attrs_free (a);
        }
}

/* max_grad sends dy to the first maximum only. */
static void
test_max_ties (void)
{
  g_autoptr (tw_tensor) x = tw_tensor_from_data (TW_F32, 2, (int64_t[]) { 2, 3 },
                                                 (float[]) { 1, 3, 3, 2, 2, 0 });
  g_autoptr (tw_tensor) dy = tw_tensor_from_data (TW_F32, 1, (int64_t[]) { 2 },
                                                  (float[]) { 5, 7 });
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_ints (a, "axes", 1, (int64_t[]) { 1 });
  tw_tensor *in[1] = { x }, *out[1];
  twt_run_guarded ("max", a, in, 1, out, NULL);
  g_autoptr (tw_tensor) y = out[0];
  g_assert_cmpfloat (tw_tensor_f32 (y)[0], ==, 3);
  g_assert_cmpfloat (tw_tensor_f32 (y)[1], ==, 2);
  tw_tensor *gin[3] = { x, y, dy }, *gout[1];
  twt_run_guarded ("max_grad", a, gin, 3, gout, NULL);
  g_autoptr (tw_tensor) dx = gout[0];
  const float want[] = { 0, 5, 0, 7, 0, 0 };
  g_assert_cmpmem (tw_tensor_f32 (dx), 6 * sizeof (float), want, sizeof want);

  /* over axis 0 (a trailing kept dim): column 1 ties 3 vs 2 → row 0; all: first 3 */
  tw_attrs_set_ints (a, "axes", 1, (int64_t[]) { 0 });
  g_autoptr (tw_tensor) x2 = tw_tensor_from_data (TW_F32, 2, (int64_t[]) { 2, 3 },
                                                  (float[]) { 1, 3, 0, 1, 2, 0 });
  in[0] = x2;
  twt_run_guarded ("max", a, in, 1, out, NULL);
  g_autoptr (tw_tensor) y2 = out[0];
  g_autoptr (tw_tensor) dy2 = tw_tensor_from_data (TW_F32, 1, (int64_t[]) { 3 },
                                                   (float[]) { 1, 2, 3 });
  tw_tensor *gin2[3] = { x2, y2, dy2 };
  twt_run_guarded ("max_grad", a, gin2, 3, gout, NULL);
  g_autoptr (tw_tensor) dx2 = gout[0];
  const float want2[] = { 1, 2, 3, 0, 0, 0 };
  g_assert_cmpmem (tw_tensor_f32 (dx2), 6 * sizeof (float), want2, sizeof want2);
  tw_attrs_free (a);
}

/* ---- sum_to / broadcast_to ---------------------------------------------------- */

typedef struct
{
  int ng;
  int64_t g[TW_MAX_DIMS];
  int nl;
  int64_t l[TW_MAX_DIMS];
} pair_case;

static const pair_case pairs[] = {
  { 3, { 2, 3, 4 }, 2, { 3, 1 } },
  { 2, { 4, 5 }, 1, { 5 } },
  { 2, { 2, 3 }, 0, { 0 } },
  { 2, { 2, 3 }, 2, { 2, 3 } },
  { 3, { 2, 1, 4 }, 3, { 1, 1, 4 } },
  { 4, { 2, 3, 4, 5 }, 3, { 3, 1, 1 } },
  { 2, { 400, 100 }, 1, { 100 } },
};

/* Value of the reference sum_to (g) at like's flat index: sum over all g
 * elements that map there. */
static tw_tensor *
ref_sum_to (const tw_tensor *g, const tw_tensor *l)
{
  tw_tensor *r = tw_tensor_zeros (TW_F64, l->ndim, l->shape);
  int lead = g->ndim - l->ndim;
  for (int64_t i = 0; i < tw_tensor_numel (g); i++)
    {
      int64_t q = i, idx[TW_MAX_DIMS], o = 0;
      for (int d = g->ndim - 1; d >= 0; d--)
        {
          idx[d] = q % g->shape[d];
          q /= g->shape[d];
        }
      for (int d = 0; d < l->ndim; d++)
        o = o * l->shape[d] + (l->shape[d] == 1 ? 0 : idx[d + lead]);
      tw_tensor_f64 (r)[o] += tw_tensor_get_flat (g, i);
    }
  return r;
}

static void
test_sum_to (void)
{
  tw_kctx ctx = { .num_threads = 2 };
  for (gsize c = 0; c < G_N_ELEMENTS (pairs); c++)
    for (int dt = 0; dt < 2; dt++)
      {
        tw_dtype t = dt ? TW_F64 : TW_F32;
        g_autoptr (tw_tensor) g = twt_uniform (t, pairs[c].ng, pairs[c].g, c, -0.5, 1.5);
        g_autoptr (tw_tensor) l = twt_randn (t, pairs[c].nl, pairs[c].l, c + 9);
        tw_tensor *in[2] = { g, l }, *out[1];
        twt_run_guarded ("sum_to", NULL, in, 2, out, &ctx);
        g_autoptr (tw_tensor) y = out[0];
        g_autoptr (tw_tensor) ref = ref_sum_to (g, l);
        g_assert_cmpfloat (twt_max_error (y, ref), <, dt ? TOL_F64 : TOL_F32);
        if (dt && tw_tensor_numel (g) < 1000)
          twt_assert_grad ("sum_to", NULL, in, 2, ((gboolean[]) { TRUE, FALSE }), TOL_GRAD);
      }
}

static void
test_broadcast_to (void)
{
  tw_kctx ctx = { .num_threads = 2 };
  /* NumPy broadcasting: g = like-shaped pairs[c].l, target pairs[c].g */
  for (gsize c = 0; c < G_N_ELEMENTS (pairs); c++)
    for (int dt = 0; dt < 2; dt++)
      {
        tw_dtype t = dt ? TW_F64 : TW_F32;
        g_autoptr (tw_tensor) g = twt_randn (t, pairs[c].nl, pairs[c].l, c);
        g_autoptr (tw_tensor) like = twt_randn (t, pairs[c].ng, pairs[c].g, c + 3);
        tw_tensor *in[2] = { g, like }, *out[1];
        twt_run_guarded ("broadcast_to", NULL, in, 2, out, &ctx);
        g_autoptr (tw_tensor) y = out[0];
        g_autoptr (tw_tensor) ref = tw_tensor_new (TW_F64, y->ndim, y->shape);
        g_assert_true (tw_tensor_copy_into (ref, g));
        g_assert_cmpfloat (twt_max_error (y, ref), ==, 0);
        if (dt && tw_tensor_numel (like) < 1000)
          twt_assert_grad ("broadcast_to", NULL, in, 2, ((gboolean[]) { TRUE, FALSE }),
                           TOL_GRAD);
      }

  /* re-inserted axes: g [2, 4] → like [2, 3, 4] with axes [1] */
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_ints (a, "axes", 1, (int64_t[]) { 1 });
  g_autoptr (tw_tensor) g = twt_randn (TW_F64, 2, (int64_t[]) { 2, 4 }, 1);
  g_autoptr (tw_tensor) like = twt_randn (TW_F64, 3, (int64_t[]) { 2, 3, 4 }, 2);
  tw_tensor *in[2] = { g, like }, *out[1];
  twt_run_guarded ("broadcast_to", a, in, 2, out, NULL);
  g_autoptr (tw_tensor) y = out[0];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 4; k++)
        g_assert_cmpfloat (tw_tensor_f64 (y)[(i * 3 + j) * 4 + k], ==, tw_tensor_f64 (g)[i * 4 + k]);
  twt_assert_grad ("broadcast_to", a, in, 2, ((gboolean[]) { TRUE, FALSE }), TOL_GRAD);
  tw_attrs_free (a);
}

/* ---- determinism, shapes, errors ----------------------------------------------- */

static void
test_determinism (void)
{
  const int64_t n = 1000000;
  g_autoptr (tw_tensor) x = tw_tensor_new (TW_F32, 1, &n);
  tw_rng_fill_uniform (tw_tensor_f32 (x), n, 7, 0, -1, 3);
  g_autoptr (tw_tensor) m = tw_tensor_reshape (x, 2, (int64_t[]) { 1000, 1000 });
  const char *ops[] = { "sum", "mean", "max" };
  for (gsize o = 0; o < G_N_ELEMENTS (ops); o++)
    for (int axis = -1; axis < 2; axis++)
      {
        tw_attrs *a = tw_attrs_new ();
        if (axis >= 0)
          tw_attrs_set_ints (a, "axes", 1, (int64_t[]) { axis });
        tw_tensor *in[1] = { axis < 0 ? x : m }, *y1[1], *y2[1], *y3[1];
        twt_run_guarded (ops[o], a, in, 1, y1, &(tw_kctx) { .num_threads = 1 });
        twt_run_guarded (ops[o], a, in, 1, y2, &(tw_kctx) { .num_threads = 2 });
        twt_run_guarded (ops[o], a, in, 1, y3, &(tw_kctx) { .num_threads = 3 });
        g_assert_cmpmem (tw_tensor_data (y1[0]), tw_tensor_nbytes (y1[0]),
                         tw_tensor_data (y2[0]), tw_tensor_nbytes (y2[0]));
        g_assert_cmpmem (tw_tensor_data (y1[0]), tw_tensor_nbytes (y1[0]),
                         tw_tensor_data (y3[0]), tw_tensor_nbytes (y3[0]));
        if (axis < 0 && o == 0)
          {
            double ref = 0;
            for (int64_t i = 0; i < n; i++)
              ref += tw_tensor_f32 (x)[i];
            /* double accumulation, one final f32 rounding: 1e-6 relative */
            g_assert_cmpfloat (fabs (tw_tensor_f32 (y1[0])[0] - ref), <, 1e-6 * fabs (ref));
          }
        tw_tensor_unref (y1[0]);
        tw_tensor_unref (y2[0]);
        tw_tensor_unref (y3[0]);
        tw_attrs_free (a);
      }
}

static void
test_infer (void)
{
  g_autoptr (GError) error = NULL;
  tw_tinfo in[2], out[1];
  tw_attrs *a = tw_attrs_new ();

  tw_tinfo_set (&in[0], TW_F32, 2, (int64_t[]) { TW_DIM_N, 10 });
  tw_attrs_set_ints (a, "axes", 1, (int64_t[]) { 0 });
  g_assert_true (infer_op ("sum", a, 1, in, out, &error));
  g_assert_cmpint (out[0].ndim, ==, 1);
  g_assert_cmpint (out[0].dims[0], ==, 10);
  tw_attrs_set_bool (a, "keepdim", TRUE);
  g_assert_true (infer_op ("max", a, 1, in, out, &error));
  g_assert_cmpint (out[0].ndim, ==, 2);
  g_assert_cmpint (out[0].dims[0], ==, 1);
  tw_attrs_set_ints (a, "axes", 1, (int64_t[]) { -1 });
  tw_attrs_set_bool (a, "keepdim", FALSE);
  g_assert_true (infer_op ("mean", a, 1, in, out, &error));
  g_assert_cmpint (out[0].ndim, ==, 1);
  g_assert_cmpint (out[0].dims[0], ==, TW_DIM_N);
  g_assert_true (infer_op ("sum", NULL, 1, in, out, &error));
  g_assert_cmpint (out[0].ndim, ==, 0);

  tw_attrs_set_ints (a, "axes", 1, (int64_t[]) { 2 });
  g_assert_false (infer_op ("sum", a, 1, in, out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR);
  g_assert_nonnull (strstr (error->message, "axis 2"));
  g_clear_error (&error);
  tw_attrs_set_ints (a, "axes", 2, (int64_t[]) { 1, -1 });
  g_assert_false (infer_op ("mean", a, 1, in, out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR);
  g_clear_error (&error);

  /* sum_to / broadcast_to with the symbolic batch */
  tw_tinfo_set (&in[1], TW_F32, 1, (int64_t[]) { 10 });
  g_assert_true (infer_op ("sum_to", NULL, 2, in, out, &error));
  g_assert_cmpint (out[0].ndim, ==, 1);
  g_assert_cmpint (out[0].dims[0], ==, 10);
  g_assert_true (infer_op ("broadcast_to", NULL, 2, (tw_tinfo[]) { in[1], in[0] }, out, &error));
  g_assert_cmpint (out[0].dims[0], ==, TW_DIM_N);
  tw_tinfo_set (&in[1], TW_F32, 1, (int64_t[]) { 4 });
  g_assert_false (infer_op ("sum_to", NULL, 2, in, out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE);
  g_assert_nonnull (strstr (error->message, "[4]"));
  g_clear_error (&error);
  g_assert_false (infer_op ("broadcast_to", NULL, 2, (tw_tinfo[]) { in[1], in[0] }, out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE);
  g_clear_error (&error);

  tw_tinfo_set (&in[0], TW_I64, 1, (int64_t[]) { 4 });
  g_assert_false (infer_op ("sum", NULL, 1, in, out, &error));
  g_assert_error (error, TW_OP_ERROR, TW_OP_ERROR_DTYPE);
  tw_attrs_free (a);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  g_test_add_func ("/engine/ops/reduce/forward", test_forward);
  g_test_add_func ("/engine/ops/reduce/grad", test_grad);
  g_test_add_func ("/engine/ops/reduce/max-ties", test_max_ties);
  g_test_add_func ("/engine/ops/sum_to", test_sum_to);
  g_test_add_func ("/engine/ops/broadcast_to", test_broadcast_to);
  g_test_add_func ("/engine/ops/reduce/determinism", test_determinism);
  g_test_add_func ("/engine/ops/reduce/infer", test_infer);
  return g_test_run ();
}
