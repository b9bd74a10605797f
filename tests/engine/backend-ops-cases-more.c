/* backend-ops-cases-more.c — the case generators of the ops ONNX graphs
 * brought (trigonometry, activations, comparisons, logic, mod, the
 * reductions, index ops and losses of reduce-more.c, index-more.c and
 * loss-more.c, and constant): the second table of backend-ops-cases.h. */
#include "backend-ops-cases.h"
#include "opcheck.h"

#include <math.h>
#include <string.h>

/* ---- trigonometry, activations, comparisons, logic and mod of ONNX graphs ------------- */

/* Unary float ops of elementwise-more.c (x, and dy for the grad ops) in
 * their domains; the piecewise ones (thresholded_relu at alpha, shrink at
 * +-lambd) are kinks the f32-rounded N(0, 1) draws miss. */
static void
gen_ew_more (bcase *c, const char *op, int k)
{
  shp s = boc_ew_shape (c, k);
  if (boc_is (op, "asin") || boc_is (op, "acos") || boc_is (op, "atanh"))
    boc_in_uniform (c, -0.9, 0.9, &s);    /* inside the domain, away from the poles at +-1 */
  else if (boc_is (op, "acosh"))
    boc_in_uniform (c, 1.2, 3, &s);
  else if (boc_is (op, "tan"))
    boc_in_uniform (c, -1.2, 1.2, &s);    /* away from the poles at +-pi/2 */
  else if (g_str_has_prefix (op, "selu") || g_str_has_prefix (op, "prelu"))
    boc_in_away_from_zero (c, &s);            /* selu and prelu have a kink at 0 */
  else
    boc_in_randn_s (c, &s);
  if (g_str_has_suffix (op, "_grad"))
    boc_in_randn_s (c, &s);
  if (g_str_has_prefix (op, "elu") && k == 1)
    tw_attrs_set_float (boc_attrs (c), "alpha", 0.7);
  else if (g_str_has_prefix (op, "selu") && k == 1)
    {
      tw_attrs_set_float (boc_attrs (c), "alpha", 2);
      tw_attrs_set_float (boc_attrs (c), "gamma", 3);
    }
  else if (g_str_has_prefix (op, "celu") && k == 1)
    tw_attrs_set_float (boc_attrs (c), "alpha", 2.5);
  else if (g_str_has_prefix (op, "thresholded_relu") && k == 1)
    tw_attrs_set_float (boc_attrs (c), "alpha", -0.3);
  else if (g_str_has_prefix (op, "shrink") && k == 1)
    {
      tw_attrs_set_float (boc_attrs (c), "bias", 0.25);
      tw_attrs_set_float (boc_attrs (c), "lambd", 0.8);
    }
  else if (boc_is (op, "prelu") && k == 1)
    tw_attrs_set_int (boc_attrs (c), "num_parameters", s.d[1]);   /* one slope per channel */
  boc_want (c, &s);
}

/* prelu_broadcast (x, slope): the slope broadcasts to x (a row, a column,
 * a scalar); mod (a, b): the divisor away from 0, a's jumps (at multiples of
 * b) missed by the draws, both fmod forms. */
static void
gen_ew_more_binary (bcase *c, const char *op, int k)
{
  static const struct
  {
    shp a, b;
  } pc[] = {
    { { 2, { 1, 7 } }, { 2, { 1, 7 } } },
    { { 2, { 3, 13 } }, { 1, { 13 } } },
    { { 3, { 2, 3, 5 } }, { 2, { 3, 1 } } },
    { { 2, { 4, 7 } }, { 0, { 0 } } },
  };
  if (boc_is (op, "prelu_broadcast"))
    {
      boc_in_away_from_zero (c, &pc[k].a);
      boc_in_randn_s (c, &pc[k].b);
      boc_want (c, &pc[k].a);
      return;
    }
  shp a, b, y;
  if (k < (int) boc_n_bcast_cases)
    a = boc_bcast_cases[k].a, b = boc_bcast_cases[k].b, y = boc_bcast_cases[k].y;
  else
    boc_random_broadcast (c, &a, &b, &y);
  boc_in_uniform (c, -6, 6, &a);
  tw_tensor *t = boc_in_uniform (c, 0.5, 2, &b);
  if (k % 2 == 1)
    for (int64_t i = 0; i < tw_tensor_numel (t); i++)
      tw_tensor_set_flat (t, i, -tw_tensor_get_flat (t, i));   /* negative divisors */
  tw_attrs_set_int (boc_attrs (c), "fmod", k >= 2);
  boc_want (c, &y);
}

/* Comparisons (small integers in f64: ties happen), logic (u8 0/1) and
 * isnan / isinf (NaN, +-inf planted): u8 outputs, exact; the comparisons'
 * zero gradient is not probed (finite differences across a tie are not 0). */
static void
gen_compare (bcase *c, const char *op, int k)
{
  gboolean unary = boc_is (op, "logical_not") || boc_is (op, "isnan") || boc_is (op, "isinf");
  shp a, b, y;
  if (k < (int) boc_n_bcast_cases)
    a = boc_bcast_cases[k].a, b = boc_bcast_cases[k].b, y = boc_bcast_cases[k].y;
  else
    boc_random_broadcast (c, &a, &b, &y);
  if (unary)
    y = a = b;
  int n_in = unary ? 1 : 2;
  for (int i = 0; i < n_in; i++)
    {
      const shp *si = i == 0 ? &a : &b;
      if (g_str_has_prefix (op, "logical_"))
        {
          g_autoptr (tw_tensor) t = twt_randint (si->nd, si->d, c->seed++, 2);
          boc_push (c, tw_tensor_cast (t, TW_U8));
        }
      else if (boc_is (op, "isnan") || boc_is (op, "isinf"))
        {
          tw_tensor *t = boc_in_randn_s (c, si);
          static const double planted[] = { NAN, INFINITY, -INFINITY };
          for (int64_t j = 0; j < tw_tensor_numel (t); j += 3)
            tw_tensor_set_flat (t, j, planted[(j / 3) % 3]);
        }
      else
        {
          g_autoptr (tw_tensor) t = twt_randint (si->nd, si->d, c->seed++, 3);
          boc_push (c, tw_tensor_cast (t, TW_F64));
          c->no_grad[c->n_in - 1] = TRUE;
        }
    }
  if (boc_is (op, "isinf") && k == 1)
    tw_attrs_set_bool (boc_attrs (c), "detect_negative", FALSE);
  boc_want (c, &y);
  c->want[0].dtype = TW_U8;
}

/* ---- the table ------------------------------------------------------------------------------- */

/* ---- reductions, index ops and nll_loss of ONNX graphs --------------------------------- */

/* prod_grad (x, dy shaped as prod's output). */
static void
gen_prod_grad (bcase *c, const char *op, int k)
{
  shp xs, ys;
  boc_reduce_case (c, k, &xs, &ys);
  boc_in_randn_s (c, &xs);
  boc_in_randn_s (c, &ys);
  boc_want (c, &xs);
}

/* argmin along an axis, the last of ties in case 2; hardmax along one. */
static void
gen_argmin (bcase *c, const char *op, int k)
{
  boc_in_distinct (c, &boc_argmax_cases[k].x);
  tw_attrs_set_int (boc_attrs (c), "axis", boc_argmax_cases[k].axis);
  if (boc_is (op, "hardmax"))
    {
      boc_want (c, &boc_argmax_cases[k].x);
      return;
    }
  tw_attrs_set_bool (boc_attrs (c), "keepdims", boc_argmax_cases[k].keep);
  tw_attrs_set_bool (boc_attrs (c), "select_last_index", k == 2);
  boc_want (c, &boc_argmax_cases[k].y);
  c->want[0].dtype = TW_I64;
}

/* trilu (upper / lower, k) and cumsum (axis, exclusive, reverse). */
static void
gen_trilu_cumsum (bcase *c, const char *op, int k)
{
  static const shp shapes[] = { { 2, { 1, 7 } }, { 3, { 2, 3, 5 } }, { 2, { 4, 4 } } };
  const shp *s = &shapes[k];
  boc_in_randn_s (c, s);
  if (boc_is (op, "trilu"))
    {
      tw_attrs_set_bool (boc_attrs (c), "upper", k != 1);
      tw_attrs_set_int (boc_attrs (c), "k", k - 1);
    }
  else
    {
      tw_attrs_set_int (boc_attrs (c), "axis", k == 1 ? -2 : k == 2 ? 0 : 1);
      tw_attrs_set_bool (boc_attrs (c), "exclusive", k != 0);
      tw_attrs_set_bool (boc_attrs (c), "reverse", k == 2);
    }
  boc_want (c, s);
}

/* gather_elements (data, indices) along axis, and its grad (data, indices,
 * dy): case 1 picks more along the axis than it has (repeats). */
static void
gen_gather_elements (bcase *c, const char *op, int k)
{
  static const struct
  {
    shp data, idx;
    int64_t axis;
  } gc[] = {
    { { 2, { 3, 5 } }, { 2, { 3, 4 } }, 1 },
    { { 3, { 2, 3, 4 } }, { 3, { 5, 3, 4 } }, 0 },
    { { 2, { 1, 7 } }, { 2, { 1, 7 } }, -1 },
  };
  boc_in_randn_s (c, &gc[k].data);
  int ax = (int) (gc[k].axis < 0 ? gc[k].axis + gc[k].data.nd : gc[k].axis);
  boc_in_int (c, gc[k].data.d[ax], &gc[k].idx);
  if (boc_is (op, "gather_elements_grad"))
    boc_in_randn_s (c, &gc[k].idx);
  tw_attrs_set_int (boc_attrs (c), "axis", gc[k].axis);
  boc_want (c, boc_is (op, "gather_elements_grad") ? &gc[k].data : &gc[k].idx);
}

/* nll_loss (x [N, C, d...], target[, weight]) and its grad (..., dy):
 * case 0 means, case 1 sums with class weights, case 2 keeps [N, d] and
 * ignores class 1. */
static void
gen_nll_loss (bcase *c, const char *op, int k)
{
  static const struct
  {
    shp x, t, y;
  } nc[] = {
    { { 2, { 4, 5 } }, { 1, { 4 } }, { 0, { 0 } } },
    { { 3, { 2, 3, 4 } }, { 2, { 2, 4 } }, { 0, { 0 } } },
    { { 3, { 1, 3, 7 } }, { 2, { 1, 7 } }, { 2, { 1, 7 } } },
  };
  static const char *const red[] = { "mean", "sum", "none" };
  boc_in_randn_s (c, &nc[k].x);
  boc_in_int (c, nc[k].x.d[1], &nc[k].t);
  if (k == 1)
    {
      shp w = { 1, { nc[k].x.d[1] } };
      boc_in_uniform (c, 0.2, 2, &w);
      c->no_grad[c->n_in - 1] = TRUE;     /* the gradient flows to x only */
    }
  if (boc_is (op, "nll_loss_grad"))
    boc_in_randn_s (c, &nc[k].y);
  tw_attrs_set_string (boc_attrs (c), "reduction", red[k]);
  if (k == 2)
    tw_attrs_set_int (boc_attrs (c), "ignore_index", 1);
  boc_want (c, boc_is (op, "nll_loss_grad") ? &nc[k].x : &nc[k].y);
}

/* scatter_elements (data, indices, updates): case 0 writes at distinct
 * positions, case 1 adds with repeats, case 2 writes along dim 0. */
static void
gen_scatter_elements (bcase *c, const char *op, int k)
{
  static const int64_t rows[] = { 4, 0, 2, 3, 1, 0, 2, 4, 1 };    /* distinct per row */
  shp d = { 2, { 3, 5 } }, ix = { 2, { k == 2 ? 2 : 3, k == 2 ? 5 : 3 } };
  boc_in_randn_s (c, &d);
  tw_tensor *t = boc_push (c, tw_tensor_new (TW_I64, ix.nd, ix.d));
  for (int64_t i = 0; i < tw_tensor_numel (t); i++)
    if (k == 2)
      tw_tensor_i64 (t)[i] = i < 5 ? 0 : -1;          /* rows 0 and 2 of each column */
    else
      tw_tensor_i64 (t)[i] = k == 1 ? i % 3 : rows[i];
  boc_in_randn_s (c, &ix);
  tw_attrs_set_int (boc_attrs (c), "axis", k == 2 ? 0 : 1);
  tw_attrs_set_string (boc_attrs (c), "reduction", k == 1 ? "add" : "none");
  boc_want (c, &d);
}

/* gather_nd (data, indices[, dy]): tuples of 2, one batch dim, rows. */
static void
gen_gather_nd (bcase *c, const char *op, int k)
{
  static const struct
  {
    shp data, idx, y;
    int b;
  } gc[] = {
    { { 3, { 2, 3, 4 } }, { 2, { 5, 2 } }, { 2, { 5, 4 } }, 0 },
    { { 3, { 2, 3, 4 } }, { 3, { 2, 3, 1 } }, { 3, { 2, 3, 4 } }, 1 },
    { { 2, { 1, 7 } }, { 2, { 3, 1 } }, { 2, { 3, 7 } }, 0 },
  };
  boc_in_randn_s (c, &gc[k].data);
  tw_tensor *t = boc_push (c, tw_tensor_new (TW_I64, gc[k].idx.nd, gc[k].idx.d));
  int64_t kk = gc[k].idx.d[gc[k].idx.nd - 1];
  for (int64_t i = 0; i < tw_tensor_numel (t); i++)
    tw_tensor_i64 (t)[i] = (int64_t) ((i * 7 + 3) % gc[k].data.d[gc[k].b + i % kk]);
  if (boc_is (op, "gather_nd_grad"))
    boc_in_randn_s (c, &gc[k].y);
  tw_attrs_set_int (boc_attrs (c), "batch_dims", gc[k].b);
  boc_want (c, boc_is (op, "gather_nd_grad") ? &gc[k].data : &gc[k].y);
}

/* scatter_nd (data, indices, updates): rows written, elements added (one
 * position twice), rows of a 3-D data written. */
static void
gen_scatter_nd (bcase *c, const char *op, int k)
{
  static const struct
  {
    shp data, idx, up;
    int64_t iv[4];
  } sc[] = {
    { { 2, { 4, 3 } }, { 2, { 2, 1 } }, { 2, { 2, 3 } }, { 3, 0 } },
    { { 2, { 4, 3 } }, { 2, { 2, 2 } }, { 1, { 2 } }, { 1, 2, 1, 2 } },
    { { 3, { 2, 3, 5 } }, { 2, { 2, 2 } }, { 2, { 2, 5 } }, { 1, 2, 0, -1 } },
  };
  boc_in_randn_s (c, &sc[k].data);
  boc_push (c, tw_tensor_from_data (TW_I64, sc[k].idx.nd, sc[k].idx.d, sc[k].iv));
  boc_in_randn_s (c, &sc[k].up);
  tw_attrs_set_string (boc_attrs (c), "reduction", k == 1 ? "add" : "none");
  boc_want (c, &sc[k].data);
}

/* topk (x): the 3 largest along dim 1, the 2 smallest along the last, 1
 * along dim 0; values distinct. */
static void
gen_topk (bcase *c, const char *op, int k)
{
  static const struct
  {
    shp x, y;
    int64_t k, axis;
  } tc[] = {
    { { 3, { 2, 5, 3 } }, { 3, { 2, 3, 3 } }, 3, 1 },
    { { 2, { 3, 13 } }, { 2, { 3, 2 } }, 2, -1 },
    { { 2, { 1, 7 } }, { 2, { 1, 7 } }, 1, 0 },
  };
  boc_in_distinct (c, &tc[k].x);
  tw_attrs_set_int (boc_attrs (c), "k", tc[k].k);
  tw_attrs_set_int (boc_attrs (c), "axis", tc[k].axis);
  tw_attrs_set_bool (boc_attrs (c), "largest", k != 1);
  boc_want (c, &tc[k].y);
  boc_want (c, &tc[k].y);
  c->want[1].dtype = TW_I64;
}

/* eye_like (x) on diagonals 0, 2 and -1. */
static void
gen_eye_like (bcase *c, const char *op, int k)
{
  static const shp s[] = { { 2, { 1, 7 } }, { 2, { 3, 13 } }, { 2, { 4, 4 } } };
  boc_in_randn_s (c, &s[k]);
  tw_attrs_set_int (boc_attrs (c), "k", k == 1 ? 2 : -k / 2);
  boc_want (c, &s[k]);
}

/* ---- constant ------------------------------------------------------------------ */

/* No inputs: the harness adds the 'value' buffer; the output is its shape,
 * fixed (no batch dimension), 0-d included, in the "dtype" attribute's type
 * whatever the type of the run (integer types here, so that the harness
 * compares them as they are; the float path is the importer's and the
 * conformance runner's). */
static void
gen_constant (bcase *c, const char *op, int k)
{
  static const shp shapes[] = { { 2, { 3, 4 } }, { 0, { 0 } }, { 3, { 2, 1, 5 } } };
  static const char *const dtypes[] = { "i64", "i32", "u8" };
  static const tw_dtype types[] = { TW_I64, TW_I32, TW_U8 };
  tw_attrs_set_ints (boc_attrs (c), "shape", shapes[k].nd, shapes[k].d);
  tw_attrs_set_string (boc_attrs (c), "dtype", dtypes[k]);
  tw_tinfo_set (&c->want[c->n_want++], types[k], shapes[k].nd, shapes[k].d);
}

const op_case tw_boc_more_cases[] = {
  { "prod_grad", 6, gen_prod_grad }, { "argmin", 3, gen_argmin }, { "hardmax", 3, gen_argmin },
  { "trilu", 3, gen_trilu_cumsum }, { "cumsum", 3, gen_trilu_cumsum }, { "gather_elements", 3, gen_gather_elements },
  { "gather_elements_grad", 3, gen_gather_elements }, { "nll_loss", 3, gen_nll_loss }, { "nll_loss_grad", 3, gen_nll_loss },
  { "scatter_elements", 3, gen_scatter_elements }, { "gather_nd", 3, gen_gather_nd }, { "gather_nd_grad", 3, gen_gather_nd },
  { "eye_like", 3, gen_eye_like }, { "scatter_nd", 3, gen_scatter_nd }, { "topk", 3, gen_topk },
  { "sin", 4, gen_ew_more }, { "cos", 4, gen_ew_more }, { "tan", 4, gen_ew_more },
  { "asin", 4, gen_ew_more }, { "acos", 4, gen_ew_more }, { "atan", 4, gen_ew_more },
  { "sinh", 4, gen_ew_more }, { "cosh", 4, gen_ew_more }, { "asinh", 4, gen_ew_more },
  { "acosh", 4, gen_ew_more }, { "atanh", 4, gen_ew_more }, { "round", 4, gen_ew_more },
  { "elu", 4, gen_ew_more }, { "selu", 4, gen_ew_more }, { "celu", 4, gen_ew_more },
  { "softplus", 4, gen_ew_more }, { "softsign", 4, gen_ew_more }, { "thresholded_relu", 4, gen_ew_more },
  { "shrink", 4, gen_ew_more }, { "elu_grad", 4, gen_ew_more }, { "selu_grad", 4, gen_ew_more },
  { "celu_grad", 4, gen_ew_more }, { "thresholded_relu_grad", 4, gen_ew_more }, { "shrink_grad", 4, gen_ew_more },
  { "prelu", 4, gen_ew_more }, { "prelu_broadcast", 4, gen_ew_more_binary }, { "mod", 6, gen_ew_more_binary },
  { "equal", 6, gen_compare }, { "greater", 6, gen_compare }, { "less", 6, gen_compare },
  { "greater_equal", 6, gen_compare }, { "less_equal", 6, gen_compare }, { "logical_and", 6, gen_compare },
  { "logical_or", 6, gen_compare }, { "logical_xor", 6, gen_compare }, { "logical_not", 4, gen_compare },
  { "isnan", 4, gen_compare }, { "isinf", 4, gen_compare },
  { "constant", 3, gen_constant },
};

const guint tw_boc_n_more_cases = G_N_ELEMENTS (tw_boc_more_cases);
