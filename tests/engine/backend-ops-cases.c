/* backend-ops-cases.c — see backend-ops-cases.h. */
#include "backend-ops-cases.h"
#include "opcheck.h"

#include "engine/rng.h"

#include <math.h>
#include <string.h>

/* ---- cases ------------------------------------------------------------------------ */

gboolean
boc_is (const char *a, const char *b)
{
  return strcmp (a, b) == 0;
}

tw_attrs *
boc_attrs (bcase *c)
{
  if (c->attrs == NULL)
    c->attrs = tw_attrs_new ();
  return c->attrs;
}

tw_tensor *
boc_push (bcase *c, tw_tensor *t)
{
  g_assert (c->n_in < MAX_IN);
  c->in[c->n_in++] = t;
  return t;
}

/* N(0, 1), rounded to f32. */
static tw_tensor *
in_randn (bcase *c, int nd, const int64_t *shape)
{
  g_autoptr (tw_tensor) t = twt_randn (TW_F32, nd, shape, c->seed++);
  return boc_push (c, tw_tensor_cast (t, TW_F64));
}

tw_tensor *
boc_in_randn_s (bcase *c, const shp *s)
{
  return in_randn (c, s->nd, s->d);
}

/* U(lo, hi), rounded to f32. */
tw_tensor *
boc_in_uniform (bcase *c, double lo, double hi, const shp *s)
{
  g_autoptr (tw_tensor) t = twt_uniform (TW_F32, s->nd, s->d, c->seed++, lo, hi);
  return boc_push (c, tw_tensor_cast (t, TW_F64));
}

/* i64 in [0, hi). */
tw_tensor *
boc_in_int (bcase *c, int64_t hi, const shp *s)
{
  return boc_push (c, twt_randint (s->nd, s->d, c->seed++, hi));
}

/* N(0, 1) moved at least 0.1 away from 0, the kink of relu and leaky_relu:
 * the finite-difference step (1e-6) then never crosses it. */
tw_tensor *
boc_in_away_from_zero (bcase *c, const shp *s)
{
  tw_tensor *t = boc_in_randn_s (c, s);
  for (int64_t i = 0; i < tw_tensor_numel (t); i++)
    {
      double v = tw_tensor_get_flat (t, i);
      if (fabs (v) < 0.1)
        tw_tensor_set_flat (t, i, (float) (v < 0 ? v - 0.1 : v + 0.1));
    }
  return t;
}

/* Distinct multiples of 1/64 in random order (|x| <= n / 128): max, argmax
 * and max pooling see no ties, and the finite-difference step (1e-6) never
 * changes which element of a row or window is the largest. */
tw_tensor *
boc_in_distinct (bcase *c, const shp *s)
{
  tw_tensor *t = tw_tensor_new (TW_F64, s->nd, s->d);
  int64_t n = tw_tensor_numel (t);
  g_autofree int64_t *perm = g_new (int64_t, MAX (n, 1));
  tw_rng_permutation (perm, n, c->seed++, 0x7e5a);
  for (int64_t i = 0; i < n; i++)
    tw_tensor_set_flat (t, i, (double) (perm[i] - n / 2) / 64);
  return boc_push (c, t);
}

void
boc_want (bcase *c, const shp *s)
{
  g_assert (c->n_want < TW_MAX_OUTPUTS);
  tw_tinfo_set (&c->want[c->n_want++], TW_F64, s->nd, s->d);
}

static void
want_dims (bcase *c, int nd, const int64_t *d)
{
  shp s = { nd, { 0 } };
  memcpy (s.d, d, nd * sizeof *d);
  boc_want (c, &s);
}

/* Output 0 of op on in[] (float64), for the saved tensors of grad ops. */
static tw_tensor *
run_op (bcase *c, const char *op, tw_tensor *const *in, int n_in)
{
  const tw_op_def *def = tw_op_lookup (op);
  g_autoptr (GError) error = NULL;
  tw_tensor *out[TW_MAX_OUTPUTS] = { 0 };
  tw_attrs *ra = tw_op_resolve_attrs (def, c->attrs, &error);
  g_assert_no_error (error);
  gboolean ok = tw_op_run (def, &c->ctx, ra, in, n_in, out, &error);
  g_assert_no_error (error);
  g_assert_true (ok);
  for (int k = 1; k < TW_MAX_OUTPUTS; k++)
    g_clear_pointer (&out[k], tw_tensor_unref);
  tw_attrs_free (ra);
  return out[0];
}

/* A random shape (fixed seed): rank 1..max_rank, dims in [1, 7]. */
static shp
random_shape (bcase *c, int max_rank)
{
  guint64 seed = c->seed++;
  shp s = { 1 + (int) (tw_rng_uniform (seed, 0x7e5b, 0) * max_rank), { 0 } };
  for (int d = 0; d < s.nd; d++)
    s.d[d] = 1 + (int64_t) (tw_rng_uniform (seed, 0x7e5b, d + 1) * 7);
  return s;
}

/* TRUE with probability p (fixed seed). */
static gboolean
coin (bcase *c, double p)
{
  return tw_rng_uniform (c->seed++, 0x7e5c, 0) < p;
}

/* ---- element-wise ---------------------------------------------------------------- */

static const shp ew_shapes[] = {
  { 2, { 1, 7 } },                    /* batch 1 */
  { 2, { 3, 13 } },                   /* odd sizes */
  { 3, { 2, 3, 5 } },
};

/* Case k of the element-wise ops: the table, then a random shape. */
shp
boc_ew_shape (bcase *c, int k)
{
  return k < (int) G_N_ELEMENTS (ew_shapes) ? ew_shapes[k] : random_shape (c, 4);
}

/* Unary ops (x), and the activations' grad ops (x or y, dy) -> dx. */
static void
gen_unary (bcase *c, const char *op, int k)
{
  shp s = boc_ew_shape (c, k);
  if (boc_is (op, "sqrt") || boc_is (op, "log") || boc_is (op, "reciprocal"))
    boc_in_uniform (c, 0.5, 3, &s);       /* positive, away from the pole / branch point at 0 */
  else if (g_str_has_prefix (op, "relu") || g_str_has_prefix (op, "leaky_relu") || boc_is (op, "abs")
           || boc_is (op, "sign"))
    boc_in_away_from_zero (c, &s);
  else if (boc_is (op, "sigmoid_grad"))
    boc_in_uniform (c, 0.05, 0.95, &s);   /* y = sigmoid (x) lies in (0, 1) */
  else if (boc_is (op, "tanh_grad"))
    boc_in_uniform (c, -0.95, 0.95, &s);  /* y = tanh (x) lies in (-1, 1) */
  else
    boc_in_randn_s (c, &s);
  if (g_str_has_suffix (op, "_grad"))
    boc_in_randn_s (c, &s);
  if (boc_is (op, "scale"))
    tw_attrs_set_float (boc_attrs (c), "alpha", -1.7);
  else if (boc_is (op, "add_scalar"))
    tw_attrs_set_float (boc_attrs (c), "value", 0.3);
  else if (boc_is (op, "fill_like"))
    tw_attrs_set_float (boc_attrs (c), "value", 2.5);
  else if (g_str_has_prefix (op, "leaky_relu") && k == 1)
    tw_attrs_set_float (boc_attrs (c), "negative_slope", 0.2);
  else if (g_str_has_prefix (op, "gelu") && k == 1)
    tw_attrs_set_string (boc_attrs (c), "approximate", "tanh");
  boc_want (c, &s);
}

const boc_bcast_case boc_bcast_cases[] = {
  { { 2, { 1, 7 } }, { 2, { 1, 7 } }, { 2, { 1, 7 } } },              /* batch 1, same shape */
  { { 2, { 3, 13 } }, { 1, { 13 } }, { 2, { 3, 13 } } },              /* a bias row */
  { { 3, { 2, 1, 5 } }, { 2, { 3, 1 } }, { 3, { 2, 3, 5 } } },        /* both broadcast */
  { { 0, { 0 } }, { 2, { 4, 7 } }, { 2, { 4, 7 } } },                 /* 0-d against a matrix */
};
const guint boc_n_bcast_cases = G_N_ELEMENTS (boc_bcast_cases);

/* Random broadcasting: a takes the full rank, b a random suffix of it, and
 * each dim of either is 1 with probability 1/3; y follows NumPy's rule. */
void
boc_random_broadcast (bcase *c, shp *a, shp *b, shp *y)
{
  shp full = random_shape (c, 4);
  *a = full;
  b->nd = (int) (tw_rng_uniform (c->seed++, 0x7e5d, 0) * (full.nd + 1));
  for (int d = 0; d < b->nd; d++)
    b->d[d] = full.d[full.nd - b->nd + d];
  for (int d = 0; d < a->nd; d++)
    if (coin (c, 1.0 / 3))
      a->d[d] = 1;
  for (int d = 0; d < b->nd; d++)
    if (coin (c, 1.0 / 3))
      b->d[d] = 1;
  *y = *a;
  for (int d = 0; d < b->nd; d++)
    {
      int64_t *yd = &y->d[y->nd - b->nd + d];
      *yd = MAX (*yd, b->d[d]);
    }
}

static void
gen_binary (bcase *c, const char *op, int k)
{
  shp a, b, y;
  if (k < (int) boc_n_bcast_cases)
    a = boc_bcast_cases[k].a, b = boc_bcast_cases[k].b, y = boc_bcast_cases[k].y;
  else
    boc_random_broadcast (c, &a, &b, &y);
  if (boc_is (op, "pow"))
    boc_in_uniform (c, 0.5, 2, &a);       /* positive base: log (a) in the exponent's gradient */
  else
    boc_in_randn_s (c, &a);
  if (boc_is (op, "div"))
    boc_in_uniform (c, 0.5, 2, &b);       /* divisor away from 0 */
  else
    boc_in_randn_s (c, &b);
  boc_want (c, &y);
}

/* ---- reductions --------------------------------------------------------------------- */

static const struct
{
  shp x;
  int n_axes;                       /* 0: attribute absent, every dim */
  int64_t axes[2];
  gboolean keepdim;
  shp y;
} reduce_cases[] = {
  { { 2, { 1, 7 } }, 1, { -1 }, FALSE, { 1, { 1 } } },
  { { 2, { 3, 13 } }, 0, { 0 }, FALSE, { 0, { 0 } } },
  { { 3, { 2, 3, 5 } }, 2, { 0, 2 }, TRUE, { 3, { 1, 3, 1 } } },
  { { 3, { 4, 1, 6 } }, 1, { 1 }, FALSE, { 2, { 4, 6 } } },           /* a size-1 dim */
};

/* Case k of the reductions: shapes in *x, *y and the attributes; after the
 * table, a random shape with a random set of axes (none listed: all). */
void
boc_reduce_case (bcase *c, int k, shp *x, shp *y)
{
  int64_t axes[TW_MAX_DIMS];
  int n_axes = 0;
  gboolean keep;
  if (k < (int) G_N_ELEMENTS (reduce_cases))
    {
      *x = reduce_cases[k].x;
      *y = reduce_cases[k].y;
      n_axes = reduce_cases[k].n_axes;
      memcpy (axes, reduce_cases[k].axes, sizeof reduce_cases[k].axes);
      keep = reduce_cases[k].keepdim;
    }
  else
    {
      gboolean mask[TW_MAX_DIMS];
      *x = random_shape (c, 4);
      keep = coin (c, 0.5);
      for (int d = 0; d < x->nd; d++)
        if ((mask[d] = coin (c, 0.5)))
          axes[n_axes++] = d - (coin (c, 0.5) ? x->nd : 0);   /* negative half the time */
      y->nd = 0;
      for (int d = 0; d < x->nd; d++)
        if (!mask[d] && n_axes > 0)
          y->d[y->nd++] = x->d[d];
        else if (keep)
          y->d[y->nd++] = 1;
    }
  if (n_axes > 0)
    tw_attrs_set_ints (boc_attrs (c), "axes", n_axes, axes);
  tw_attrs_set_bool (boc_attrs (c), "keepdim", keep);
}

static void
gen_reduce (bcase *c, const char *op, int k)
{
  shp x, y;
  boc_reduce_case (c, k, &x, &y);
  if (boc_is (op, "max") || boc_is (op, "min"))
    boc_in_distinct (c, &x);
  else
    boc_in_randn_s (c, &x);
  boc_want (c, &y);
}

/* max_grad (x, y = max (x), dy). */
static void
gen_max_grad (bcase *c, const char *op, int k)
{
  shp xs, ys;
  boc_reduce_case (c, k, &xs, &ys);
  tw_tensor *x = boc_in_distinct (c, &xs);
  boc_push (c, run_op (c, "max", &x, 1));
  boc_in_randn_s (c, &ys);
  boc_want (c, &xs);
}

static const struct
{
  shp g, like;
} sum_to_cases[] = {
  { { 3, { 2, 3, 5 } }, { 2, { 3, 1 } } },
  { { 2, { 1, 7 } }, { 1, { 7 } } },
  { { 2, { 4, 6 } }, { 2, { 1, 1 } } },
  { { 2, { 3, 13 } }, { 2, { 3, 13 } } },     /* nothing to sum */
};

static void
gen_sum_to (bcase *c, const char *op, int k)
{
  boc_in_randn_s (c, &sum_to_cases[k].g);
  boc_in_randn_s (c, &sum_to_cases[k].like);
  boc_want (c, &sum_to_cases[k].like);
}

static const struct
{
  shp g;
  int n_axes;
  int64_t axes[2];
  shp like;
} broadcast_to_cases[] = {
  { { 2, { 3, 1 } }, 0, { 0 }, { 3, { 2, 3, 5 } } },
  { { 1, { 7 } }, 0, { 0 }, { 2, { 1, 7 } } },
  { { 2, { 2, 5 } }, 1, { 1 }, { 3, { 2, 3, 5 } } },   /* re-inserts the dim a sum dropped */
};

static void
gen_broadcast_to (bcase *c, const char *op, int k)
{
  boc_in_randn_s (c, &broadcast_to_cases[k].g);
  boc_in_randn_s (c, &broadcast_to_cases[k].like);
  if (broadcast_to_cases[k].n_axes > 0)
    tw_attrs_set_ints (boc_attrs (c), "axes", broadcast_to_cases[k].n_axes,
                       broadcast_to_cases[k].axes);
  boc_want (c, &broadcast_to_cases[k].like);
}

/* ---- shape ops ------------------------------------------------------------------------ */

static const struct
{
  shp x;
  int64_t start, end;
  shp y;
} flatten_cases[] = {
  { { 3, { 1, 3, 5 } }, 1, -1, { 2, { 1, 15 } } },
  { { 4, { 2, 3, 5, 1 } }, 1, 2, { 3, { 2, 15, 1 } } },
  { { 3, { 7, 2, 3 } }, 0, -1, { 1, { 42 } } },
};

static void
gen_flatten (bcase *c, const char *op, int k)
{
  boc_in_randn_s (c, &flatten_cases[k].x);
  tw_attrs_set_int (boc_attrs (c), "start_dim", flatten_cases[k].start);
  tw_attrs_set_int (boc_attrs (c), "end_dim", flatten_cases[k].end);
  boc_want (c, &flatten_cases[k].y);
}

static const struct
{
  shp x, shape, y;                  /* shape: per sample, one entry may be -1 */
} reshape_cases[] = {
  { { 3, { 1, 6, 7 } }, { 2, { 7, -1 } }, { 3, { 1, 7, 6 } } },
  { { 2, { 3, 13 } }, { 2, { 13, 1 } }, { 3, { 3, 13, 1 } } },
};

/* reshape (x) and reshape_like (g, like): y's elements in x's shape. */
static void
gen_reshape (bcase *c, const char *op, int k)
{
  if (boc_is (op, "reshape_like"))
    {
      boc_in_randn_s (c, &reshape_cases[k].y);
      boc_in_randn_s (c, &reshape_cases[k].x);
      boc_want (c, &reshape_cases[k].x);
      return;
    }
  boc_in_randn_s (c, &reshape_cases[k].x);
  tw_attrs_set_ints (boc_attrs (c), "shape", reshape_cases[k].shape.nd, reshape_cases[k].shape.d);
  boc_want (c, &reshape_cases[k].y);
}

static const struct
{
  shp x;
  int n_perm;                       /* 0: attribute absent, dims reversed */
  int64_t perm[4];
  shp y;
} transpose_cases[] = {
  { { 3, { 1, 7, 3 } }, 0, { 0 }, { 3, { 3, 7, 1 } } },
  { { 3, { 2, 3, 5 } }, 3, { 0, 2, 1 }, { 3, { 2, 5, 3 } } },
  { { 4, { 2, 3, 5, 4 } }, 4, { 2, 0, 3, 1 }, { 4, { 5, 2, 4, 3 } } },
};

static void
gen_transpose (bcase *c, const char *op, int k)
{
  boc_in_randn_s (c, &transpose_cases[k].x);
  if (transpose_cases[k].n_perm > 0)
    tw_attrs_set_ints (boc_attrs (c), "perm", transpose_cases[k].n_perm, transpose_cases[k].perm);
  boc_want (c, &transpose_cases[k].y);
}

static const struct
{
  int n;
  shp parts[3];
  int64_t axis;
  shp y;
} concat_cases[] = {
  { 2, { { 2, { 1, 3 } }, { 2, { 1, 4 } } }, 1, { 2, { 1, 7 } } },
  { 3, { { 3, { 2, 3, 5 } }, { 3, { 1, 3, 5 } }, { 3, { 3, 3, 5 } } }, 0, { 3, { 6, 3, 5 } } },
  { 2, { { 3, { 2, 3, 1 } }, { 3, { 2, 3, 4 } } }, -1, { 3, { 2, 3, 5 } } },
};

static void
gen_concat (bcase *c, const char *op, int k)
{
  for (int i = 0; i < concat_cases[k].n; i++)
    boc_in_randn_s (c, &concat_cases[k].parts[i]);
  tw_attrs_set_int (boc_attrs (c), "axis", concat_cases[k].axis);
  boc_want (c, &concat_cases[k].y);
}

static const struct
{
  shp x;
  int64_t axis;
  int n;
  int64_t sizes[3];
  shp parts[3];
} split_cases[] = {
  { { 2, { 1, 7 } }, 1, 2, { 3, 4 }, { { 2, { 1, 3 } }, { 2, { 1, 4 } } } },
  { { 3, { 2, 13, 3 } }, 1, 3, { 5, 1, 7 },
    { { 3, { 2, 5, 3 } }, { 3, { 2, 1, 3 } }, { 3, { 2, 7, 3 } } } },
  { { 2, { 6, 5 } }, 0, 1, { 6 }, { { 2, { 6, 5 } } } },            /* one part */
};

static void
gen_split (bcase *c, const char *op, int k)
{
  boc_in_randn_s (c, &split_cases[k].x);
  tw_attrs_set_int (boc_attrs (c), "axis", split_cases[k].axis);
  tw_attrs_set_ints (boc_attrs (c), "sizes", split_cases[k].n, split_cases[k].sizes);
  for (int i = 0; i < split_cases[k].n; i++)
    boc_want (c, &split_cases[k].parts[i]);
}

/* Python slices: x[start:end:step] along axis. */
static const struct
{
  shp x;
  int64_t axis, start, end, step;
  shp y;
} slice_cases[] = {
  { { 2, { 1, 13 } }, 1, 2, 11, 3, { 2, { 1, 3 } } },               /* 2, 5, 8 */
  { { 2, { 5, 7 } }, 0, -1, -6, -2, { 2, { 3, 7 } } },              /* 4, 2, 0 */
  { { 3, { 2, 3, 5 } }, -1, 1, 100, 1, { 3, { 2, 3, 4 } } },        /* end clamped */
};

/* slice (x) and slice_grad (g shaped as the slice, like shaped as x). */
static void
gen_slice (bcase *c, const char *op, int k)
{
  gboolean grad = boc_is (op, "slice_grad");
  tw_attrs *a = boc_attrs (c);
  if (grad)
    boc_in_randn_s (c, &slice_cases[k].y);
  boc_in_randn_s (c, &slice_cases[k].x);
  tw_attrs_set_int (a, "axis", slice_cases[k].axis);
  tw_attrs_set_int (a, "start", slice_cases[k].start);
  tw_attrs_set_int (a, "end", slice_cases[k].end);
  tw_attrs_set_int (a, "step", slice_cases[k].step);
  boc_want (c, grad ? &slice_cases[k].x : &slice_cases[k].y);
}

/* ---- dense layers ------------------------------------------------------------------------ */

static const struct
{
  shp x;
  int64_t out;
  gboolean bias;
  shp y;
} linear_cases[] = {
  { { 2, { 1, 7 } }, 5, TRUE, { 2, { 1, 5 } } },
  { { 2, { 3, 13 } }, 4, FALSE, { 2, { 3, 4 } } },
  { { 3, { 2, 3, 7 } }, 5, TRUE, { 3, { 2, 3, 5 } } },               /* [..., in] */
};

/* linear (x) and its grads: linear_grad_input (dy, weight) -> dx,
 * linear_grad_weight (dy, x) -> dweight, linear_grad_bias (dy) -> dbias. */
static void
gen_linear (bcase *c, const char *op, int k)
{
  const shp *x = &linear_cases[k].x, *y = &linear_cases[k].y;
  shp w = { 2, { linear_cases[k].out, x->d[x->nd - 1] } }, b = { 1, { linear_cases[k].out } };
  if (boc_is (op, "linear"))
    {
      boc_in_randn_s (c, x);
      tw_attrs_set_int (boc_attrs (c), "out_features", linear_cases[k].out);
      tw_attrs_set_bool (boc_attrs (c), "bias", linear_cases[k].bias);
      boc_want (c, y);
      return;
    }
  boc_in_randn_s (c, y);
  if (boc_is (op, "linear_grad_input"))
    {
      boc_in_randn_s (c, &w);
      boc_want (c, x);
    }
  else if (boc_is (op, "linear_grad_weight"))
    {
      boc_in_randn_s (c, x);
      boc_want (c, &w);
    }
  else
    boc_want (c, &b);
}

static const struct
{
  shp a, b, y;
} matmul_cases[] = {
  { { 2, { 1, 7 } }, { 2, { 7, 5 } }, { 2, { 1, 5 } } },
  { { 3, { 2, 3, 4 } }, { 2, { 4, 5 } }, { 3, { 2, 3, 5 } } },
  { { 1, { 7 } }, { 3, { 2, 7, 3 } }, { 2, { 2, 3 } } },               /* 1-D a */
  { { 4, { 2, 1, 3, 4 } }, { 3, { 5, 4, 2 } }, { 4, { 2, 5, 3, 2 } } }, /* batches broadcast */
  { { 2, { 3, 7 } }, { 1, { 7 } }, { 1, { 3 } } },                     /* 1-D b */
};

/* matmul (a, b) and matmul_grad_a / _b (dy, a, b). */
static void
gen_matmul (bcase *c, const char *op, int k)
{
  if (!boc_is (op, "matmul"))
    boc_in_randn_s (c, &matmul_cases[k].y);
  boc_in_randn_s (c, &matmul_cases[k].a);
  boc_in_randn_s (c, &matmul_cases[k].b);
  boc_want (c, boc_is (op, "matmul")          ? &matmul_cases[k].y
           : boc_is (op, "matmul_grad_a") ? &matmul_cases[k].a
                                      : &matmul_cases[k].b);
}

static const struct
{
  shp idx;
  int64_t num, dim;
} embedding_cases[] = {
  { { 2, { 1, 7 } }, 11, 5 },
  { { 2, { 3, 4 } }, 13, 3 },
  { { 1, { 6 } }, 2, 7 },           /* repeated indices: the gradient adds them up */
};

/* embedding (indices) and embedding_grad (dy, indices) -> dweight [num, dim]. */
static void
gen_embedding (bcase *c, const char *op, int k)
{
  gboolean grad = boc_is (op, "embedding_grad");
  shp y = embedding_cases[k].idx, w = { 2, { embedding_cases[k].num, embedding_cases[k].dim } };
  y.d[y.nd++] = embedding_cases[k].dim;
  if (grad)
    boc_in_randn_s (c, &y);
  boc_in_int (c, embedding_cases[k].num, &embedding_cases[k].idx);
  tw_attrs_set_int (boc_attrs (c), "num_embeddings", embedding_cases[k].num);
  if (!grad)
    tw_attrs_set_int (boc_attrs (c), "embedding_dim", embedding_cases[k].dim);
  boc_want (c, grad ? &w : &y);
}

const boc_axis_case boc_argmax_cases[] = {
  { { 2, { 1, 7 } }, -1, FALSE, { 1, { 1 } } },
  { { 2, { 3, 13 } }, 0, TRUE, { 2, { 1, 13 } } },
  { { 3, { 2, 3, 5 } }, 1, FALSE, { 2, { 2, 5 } } },
};

static void
gen_argmax (bcase *c, const char *op, int k)
{
  boc_in_distinct (c, &boc_argmax_cases[k].x);
  tw_attrs_set_int (boc_attrs (c), "axis", boc_argmax_cases[k].axis);
  tw_attrs_set_bool (boc_attrs (c), "keepdims", boc_argmax_cases[k].keep);
  boc_want (c, &boc_argmax_cases[k].y);
  c->want[0].dtype = TW_I64;
}

/* dropout and dropout_grad: the mask is a function of the run context, the
 * same in the forward, the backward and every finite-difference run. */
static void
gen_dropout (bcase *c, const char *op, int k)
{
  static const double p[] = { 0.5, 0.2, 0.5, 0.0 };
  const shp *s = &ew_shapes[k % 3];
  boc_in_randn_s (c, s);
  tw_attrs_set_float (boc_attrs (c), "p", p[k]);
  c->ctx.training = k != 2;         /* case 2: evaluation, the identity */
  boc_want (c, s);
}

/* softmax / log_softmax (x) along axis -1, 0, 1, and their grads (y, dy)
 * with y the forward's output. */
static void
gen_softmax (bcase *c, const char *op, int k)
{
  static const int64_t axis[] = { -1, 0, 1 };
  const shp *s = &ew_shapes[k];
  tw_attrs_set_int (boc_attrs (c), "axis", axis[k]);
  if (g_str_has_suffix (op, "_grad"))
    {
      g_autoptr (tw_tensor) x = twt_randn (TW_F64, s->nd, s->d, c->seed++);
      boc_push (c, run_op (c, boc_is (op, "softmax_grad") ? "softmax" : "log_softmax", &x, 1));
    }
  boc_in_randn_s (c, s);
  boc_want (c, s);
}

/* ---- convolution and pooling -------------------------------------------------------------- */

/* Output size floor ((H + 2p - d (k - 1) - 1) / s) + 1, worked out by hand. */
static const struct
{
  int64_t x[4];                     /* N, C, H, W */
  int64_t o, k[2], s[2], p[2], d[2], groups;
  gboolean bias;
  int64_t y[4];
} conv_cases[] = {
  { { 1, 3, 7, 7 }, 4, { 3, 3 }, { 1, 1 }, { 0, 0 }, { 1, 1 }, 1, TRUE, { 1, 4, 5, 5 } },
  { { 2, 4, 9, 7 }, 6, { 3, 2 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, 2, TRUE, { 2, 6, 5, 4 } },
  /* depthwise, dilated, padded to keep the size */
  { { 1, 4, 8, 8 }, 4, { 3, 3 }, { 1, 1 }, { 2, 2 }, { 2, 2 }, 4, FALSE, { 1, 4, 8, 8 } },
};

/* conv2d (x) and its grads: conv2d_grad_input (dy, weight) -> dx,
 * conv2d_grad_weight (dy, x) -> dweight, conv2d_grad_bias (dy) -> dbias. */
static void
gen_conv2d (bcase *c, const char *op, int k)
{
  const int64_t *x = conv_cases[k].x, *y = conv_cases[k].y;
  int64_t w[4] = { conv_cases[k].o, x[1] / conv_cases[k].groups, conv_cases[k].k[0],
                   conv_cases[k].k[1] };
  tw_attrs *a = boc_attrs (c);
  if (boc_is (op, "conv2d_grad_bias"))
    {
      in_randn (c, 4, y);
      want_dims (c, 1, &conv_cases[k].o);
      return;
    }
  tw_attrs_set_ints (a, "kernel_size", 2, conv_cases[k].k);
  tw_attrs_set_ints (a, "stride", 2, conv_cases[k].s);
  tw_attrs_set_ints (a, "padding", 2, conv_cases[k].p);
  tw_attrs_set_ints (a, "dilation", 2, conv_cases[k].d);
  tw_attrs_set_int (a, "groups", conv_cases[k].groups);
  if (boc_is (op, "conv2d"))
    {
      in_randn (c, 4, x);
      tw_attrs_set_int (a, "out_channels", conv_cases[k].o);
      tw_attrs_set_bool (a, "bias", conv_cases[k].bias);
      want_dims (c, 4, y);
    }
  else if (boc_is (op, "conv2d_grad_input"))
    {
      in_randn (c, 4, y);
      in_randn (c, 4, w);
      tw_attrs_set_int (a, "in_h", x[2]);
      tw_attrs_set_int (a, "in_w", x[3]);
      want_dims (c, 4, x);
    }
  else
    {
      in_randn (c, 4, y);
      in_randn (c, 4, x);
      want_dims (c, 4, w);
    }
}

typedef struct
{
  int64_t x[4];
  int64_t k[2], s[2], p[2], d[2];   /* s[0] == 0: stride absent (the kernel size) */
  gboolean include_pad;
  int64_t y[4];
} pool_case;

static const pool_case max_pool_cases[] = {
  { { 1, 2, 7, 7 }, { 2, 2 }, { 0, 0 }, { 0, 0 }, { 1, 1 }, TRUE, { 1, 2, 3, 3 } },
  { { 2, 3, 9, 8 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, TRUE, { 2, 3, 5, 4 } },
  { { 1, 1, 7, 9 }, { 2, 3 }, { 1, 1 }, { 0, 0 }, { 2, 2 }, TRUE, { 1, 1, 5, 5 } },
};

/* avg_pool2d has no dilation. */
static const pool_case avg_pool_cases[] = {
  { { 1, 2, 7, 7 }, { 2, 2 }, { 0, 0 }, { 0, 0 }, { 1, 1 }, TRUE, { 1, 2, 3, 3 } },
  { { 2, 3, 9, 8 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, FALSE, { 2, 3, 5, 4 } },
  { { 1, 4, 5, 6 }, { 3, 2 }, { 1, 2 }, { 1, 0 }, { 1, 1 }, TRUE, { 1, 4, 5, 3 } },
};

/* max_pool2d (x), max_pool2d_grad (x, dy) -> dx, avg_pool2d (x) and
 * avg_pool2d_grad (dy) -> dx [N, C, in_h, in_w]. */
static void
gen_pool2d (bcase *c, const char *op, int k)
{
  gboolean is_max = g_str_has_prefix (op, "max"), grad = g_str_has_suffix (op, "_grad");
  const pool_case *pc = is_max ? &max_pool_cases[k] : &avg_pool_cases[k];
  shp x = { 4, { pc->x[0], pc->x[1], pc->x[2], pc->x[3] } };
  tw_attrs *a = boc_attrs (c);
  tw_attrs_set_ints (a, "kernel_size", 2, pc->k);
  if (pc->s[0] > 0)
    tw_attrs_set_ints (a, "stride", 2, pc->s);
  tw_attrs_set_ints (a, "padding", 2, pc->p);
  if (is_max)
    {
      tw_attrs_set_ints (a, "dilation", 2, pc->d);
      boc_in_distinct (c, &x);
    }
  else
    {
      tw_attrs_set_bool (a, "count_include_pad", pc->include_pad);
      if (grad)
        {
          tw_attrs_set_int (a, "in_h", pc->x[2]);
          tw_attrs_set_int (a, "in_w", pc->x[3]);
        }
      else
        boc_in_randn_s (c, &x);
    }
  if (grad)
    in_randn (c, 4, pc->y);
  want_dims (c, 4, grad ? pc->x : pc->y);
}

/* global_avg_pool2d (x) -> [N, C, 1, 1] and its grad (dy) -> dx. */
static void
gen_global_avg_pool2d (bcase *c, const char *op, int k)
{
  static const int64_t xs[][4] = { { 1, 3, 7, 5 }, { 2, 4, 3, 3 } };
  const int64_t *x = xs[k], y[4] = { x[0], x[1], 1, 1 };
  gboolean grad = g_str_has_suffix (op, "_grad");
  in_randn (c, 4, grad ? y : x);
  if (grad)
    {
      tw_attrs_set_int (boc_attrs (c), "in_h", x[2]);
      tw_attrs_set_int (boc_attrs (c), "in_w", x[3]);
    }
  want_dims (c, 4, grad ? x : y);
}

/* ---- normalisation ------------------------------------------------------------------------- */

/* The parameters (weight, bias, running statistics) come from the op's
 * params () callback; see add_params. */
static const struct
{
  shp x;
  gboolean affine, track, training;
} bn_cases[] = {
  { { 3, { 1, 3, 7 } }, TRUE, TRUE, TRUE },     /* batch 1: statistics over 7 positions */
  { { 2, { 4, 5 } }, TRUE, TRUE, TRUE },        /* [N, C] */
  { { 4, { 2, 3, 5, 4 } }, FALSE, TRUE, TRUE },
  { { 3, { 3, 2, 5 } }, TRUE, TRUE, FALSE },    /* evaluation: the running statistics */
  { { 3, { 2, 3, 4 } }, TRUE, FALSE, FALSE },   /* untracked: batch statistics always */
};

static void
gen_batch_norm (bcase *c, const char *op, int k)
{
  boc_in_randn_s (c, &bn_cases[k].x);
  tw_attrs_set_bool (boc_attrs (c), "affine", bn_cases[k].affine);
  tw_attrs_set_bool (boc_attrs (c), "track_running_stats", bn_cases[k].track);
  if (k == 1)
    tw_attrs_set_float (boc_attrs (c), "momentum", 0.3);
  c->ctx.training = bn_cases[k].training;
  boc_want (c, &bn_cases[k].x);
}

/* batch_norm_grad (x, [weight], dy, [running_mean, running_var]) -> dx, dw, db. */
static void
gen_batch_norm_grad (bcase *c, const char *op, int k)
{
  static const struct
  {
    shp x;
    gboolean affine, training;
  } cases[] = {
    { { 3, { 1, 3, 7 } }, TRUE, TRUE },
    { { 2, { 4, 5 } }, FALSE, TRUE },
    { { 3, { 3, 2, 5 } }, TRUE, FALSE },
  };
  const shp *x = &cases[k].x;
  gboolean affine = cases[k].affine, training = cases[k].training;
  shp ch = { 1, { x->d[1] } };
  boc_in_randn_s (c, x);
  if (affine)
    boc_in_randn_s (c, &ch);
  boc_in_randn_s (c, x);
  if (!training)
    {
      boc_in_randn_s (c, &ch);
      boc_in_uniform (c, 0.5, 1.5, &ch);            /* a variance */
    }
  tw_attrs_set_bool (boc_attrs (c), "affine", affine);
  tw_attrs_set_bool (boc_attrs (c), "training", training);
  boc_want (c, x);
  boc_want (c, &ch);
  boc_want (c, &ch);
}

static const struct
{
  shp x;
  int64_t ndim;                     /* normalised trailing dims */
  gboolean affine;
} ln_cases[] = {
  { { 2, { 1, 7 } }, 1, TRUE },
  { { 3, { 3, 4, 5 } }, 2, TRUE },
  { { 2, { 2, 13 } }, 1, FALSE },
};

/* layer_norm (x) and layer_norm_grad (x, [weight], dy) -> dx, dw, db. */
static void
gen_layer_norm (bcase *c, const char *op, int k)
{
  const shp *x = &ln_cases[k].x;
  shp ns = { (int) ln_cases[k].ndim, { 0 } };
  memcpy (ns.d, x->d + x->nd - ns.nd, ns.nd * sizeof (int64_t));
  boc_in_randn_s (c, x);
  tw_attrs_set_int (boc_attrs (c), "normalized_ndim", ln_cases[k].ndim);
  boc_want (c, x);
  if (boc_is (op, "layer_norm"))
    {
      tw_attrs_set_bool (boc_attrs (c), "elementwise_affine", ln_cases[k].affine);
      if (k == 2)
        tw_attrs_set_float (boc_attrs (c), "eps", 1e-3);
      return;
    }
  if (ln_cases[k].affine)
    boc_in_randn_s (c, &ns);
  boc_in_randn_s (c, x);
  tw_attrs_set_bool (boc_attrs (c), "affine", ln_cases[k].affine);
  boc_want (c, &ns);
  boc_want (c, &ns);
}

/* ---- losses ---------------------------------------------------------------------------------- */

static const shp scalar = { 0, { 0 } };

/* cross_entropy (logits [N, C], labels [N] in [0, C)) and its grad (logits,
 * labels, dloss); case 1 smooths the labels and sums. */
static void
gen_cross_entropy (bcase *c, const char *op, int k)
{
  static const shp logits[] = { { 2, { 1, 7 } }, { 2, { 5, 13 } }, { 2, { 4, 2 } } };
  const shp *x = &logits[k];
  shp labels = { 1, { x->d[0] } };
  gboolean grad = boc_is (op, "cross_entropy_grad");
  boc_in_randn_s (c, x);
  boc_in_int (c, x->d[1], &labels);
  if (grad)
    in_randn (c, 0, NULL);         /* dloss */
  if (k == 1)
    {
      tw_attrs_set_float (boc_attrs (c), "label_smoothing", 0.1);
      tw_attrs_set_string (boc_attrs (c), "reduction", "sum");
    }
  boc_want (c, grad ? x : &scalar);
}

/* mse_loss / bce_with_logits (x, target) and their grads (x, target, dloss):
 * case 1 sums, case 1 of the grads differentiates the target, bce's case 1
 * weighs the positives. */
static void
gen_pair_loss (bcase *c, const char *op, int k)
{
  gboolean bce = g_str_has_prefix (op, "bce");
  gboolean grad = g_str_has_suffix (op, "_grad");
  const shp *s = &ew_shapes[k];
  boc_in_randn_s (c, s);
  if (bce)
    boc_in_uniform (c, 0, 1, s);        /* targets are probabilities */
  else
    boc_in_randn_s (c, s);
  if (grad)
    in_randn (c, 0, NULL);         /* dloss */
  if (k == 1)
    {
      tw_attrs_set_string (boc_attrs (c), "reduction", "sum");
      if (bce)
        tw_attrs_set_float (boc_attrs (c), "pos_weight", 2.5);
      if (grad)
        tw_attrs_set_bool (boc_attrs (c), "wrt_target", TRUE);
    }
  boc_want (c, grad ? s : &scalar);
}

/* ---- sources ---------------------------------------------------------------------------------- */

/* Shape inference only: the output is [N, shape...] with the symbolic N. */
static void
gen_input (bcase *c, const char *op, int k)
{
  if (k == 0)
    {
      tw_attrs_set_ints (boc_attrs (c), "shape", 2, (int64_t[]) { 3, 5 });
      tw_tinfo_set (&c->want[0], TW_F32, 3, (int64_t[]) { TW_DIM_N, 3, 5 });
    }
  else
    {
      tw_attrs_set_ints (boc_attrs (c), "shape", 1, (int64_t[]) { 7 });
      tw_attrs_set_string (boc_attrs (c), "dtype", "i64");
      tw_attrs_set_string (boc_attrs (c), "role", "label");
      tw_tinfo_set (&c->want[0], TW_I64, 2, (int64_t[]) { TW_DIM_N, 7 });
    }
  c->n_want = 1;
}

/* ---- clamping activations, pad, resize ---------------------------------------------------- */

/* clip, relu6, hard_sigmoid, hard_swish and their grad ops (x, dy): inputs
 * spread over every linear piece; the kinks (clip's bounds, 0 and 6,
 * alpha x + beta = 0 or 1, hard_swish's -3 and 3) are f32 values, which
 * f32-rounded draws hit with probability ~1e-7 per element, and the
 * finite-difference step (1e-6) crosses them about as rarely. */
static void
gen_clamp (bcase *c, const char *op, int k)
{
  shp s = boc_ew_shape (c, k);
  if (g_str_has_prefix (op, "relu6"))
    boc_in_uniform (c, -2, 8, &s);
  else if (g_str_has_prefix (op, "hard_swish"))
    boc_in_uniform (c, -4.5, 4.5, &s);
  else if (g_str_has_prefix (op, "hard_sigmoid"))
    boc_in_uniform (c, -3.5, 3.5, &s);
  else
    boc_in_randn_s (c, &s);
  if (g_str_has_suffix (op, "_grad"))
    boc_in_randn_s (c, &s);
  if (g_str_has_prefix (op, "clip"))
    {
      if (k != 2)
        tw_attrs_set_float (boc_attrs (c), "min", -0.5);
      if (k != 1)
        tw_attrs_set_float (boc_attrs (c), "max", 0.7);
    }
  else if (g_str_has_prefix (op, "hard_sigmoid") && k == 1)
    {
      tw_attrs_set_float (boc_attrs (c), "alpha", 1.0 / 6);
      tw_attrs_set_float (boc_attrs (c), "beta", 0.5);
    }
  boc_want (c, &s);
}

/* pad (x) and pad_grad (dy, x): spatial pads in constant mode with a value,
 * reflect on both spatial dims, edge through ONNX's full-rank pads. */
static void
gen_pad (bcase *c, const char *op, int k)
{
  static const struct
  {
    shp x, y;
    const char *mode;
    int np;
    int64_t pads[8];
  } cases[] = {
    { { 4, { 1, 2, 3, 4 } }, { 4, { 1, 2, 4, 7 } }, "constant", 4, { 1, 2, 0, 1 } },
    { { 4, { 2, 3, 5, 4 } }, { 4, { 2, 3, 8, 9 } }, "reflect", 4, { 1, 2, 2, 3 } },
    { { 3, { 3, 1, 5 } }, { 3, { 3, 4, 6 } }, "edge", 6, { 0, 2, 1, 0, 1, 0 } },
  };
  tw_attrs_set_ints (boc_attrs (c), "pads", cases[k].np, cases[k].pads);
  tw_attrs_set_string (boc_attrs (c), "mode", cases[k].mode);
  if (k == 0)
    tw_attrs_set_float (boc_attrs (c), "value", 0.25);
  if (boc_is (op, "pad_grad"))
    {
      boc_in_randn_s (c, &cases[k].y);
      boc_in_randn_s (c, &cases[k].x);
      boc_want (c, &cases[k].x);
    }
  else
    {
      boc_in_randn_s (c, &cases[k].x);
      boc_want (c, &cases[k].y);
    }
}

/* resize (x) and resize_grad (dy, x): an integer upscale (PyTorch's
 * asymmetric floor), sizes with ONNX's defaults, a mixed down/up scale with
 * align_corners, a rank-3 input with a fractional scale. */
static void
gen_resize (bcase *c, const char *op, int k)
{
  static const struct
  {
    shp x, y;
    const char *ct, *nm;
    int n;
    double scales[2];
    int64_t sizes[2];
  } cases[] = {
    { { 4, { 1, 2, 3, 4 } }, { 4, { 1, 2, 6, 8 } }, "asymmetric", "floor", 2, { 2, 2 }, { 0 } },
    { { 4, { 2, 1, 5, 3 } }, { 4, { 2, 1, 7, 4 } }, "half_pixel", "round_prefer_floor", 2, { 0 },
      { 7, 4 } },
    { { 4, { 1, 3, 4, 6 } }, { 4, { 1, 3, 2, 9 } }, "align_corners", "round_prefer_ceil", 2,
      { 0.5, 1.5 }, { 0 } },
    { { 3, { 2, 2, 5 } }, { 3, { 2, 2, 8 } }, "pytorch_half_pixel", "ceil", 1, { 1.7 }, { 0 } },
  };
  tw_attrs *a = boc_attrs (c);
  tw_attrs_set_string (a, "coordinate_transformation_mode", cases[k].ct);
  tw_attrs_set_string (a, "nearest_mode", cases[k].nm);
  if (cases[k].sizes[0])
    tw_attrs_set_ints (a, "sizes", cases[k].n, cases[k].sizes);
  else
    tw_attrs_set_floats (a, "scales", cases[k].n, cases[k].scales);
  if (boc_is (op, "resize_grad"))
    {
      boc_in_randn_s (c, &cases[k].y);
      boc_in_randn_s (c, &cases[k].x);
      boc_want (c, &cases[k].x);
    }
  else
    {
      boc_in_randn_s (c, &cases[k].x);
      boc_want (c, &cases[k].y);
    }
}

/* squeeze (a size-1 dim by axis, then every size-1 dim), unsqueeze (axes of
 * the output, one negative), cast to integer types (truncation, u8's
 * saturation from values in [-10, 300], i64 to i32). */
static void
gen_squeeze (bcase *c, const char *op, int k)
{
  if (boc_is (op, "cast"))
    {
      static const char *const to[] = { "i64", "u8", "i32" };
      shp s = ew_shapes[k];
      if (k == 0)
        boc_in_randn_s (c, &s);
      else if (k == 1)
        boc_in_uniform (c, -10, 300, &s);
      else
        boc_in_int (c, 1000, &s);
      tw_attrs_set_string (boc_attrs (c), "to", to[k]);
      tw_tinfo_set (&c->want[c->n_want++], k == 0 ? TW_I64 : k == 1 ? TW_U8 : TW_I32, s.nd, s.d);
      return;
    }
  static const struct
  {
    shp x, y;
    int n;
    int64_t axes[2];
  } sq[] = {
    { { 3, { 2, 1, 5 } }, { 2, { 2, 5 } }, 1, { 1 } },
    { { 4, { 1, 3, 1, 1 } }, { 1, { 3 } }, 0, { 0 } },
    { { 3, { 4, 1, 3 } }, { 2, { 4, 3 } }, 1, { -2 } },
  }, unsq[] = {
    { { 2, { 2, 5 } }, { 3, { 2, 1, 5 } }, 1, { 1 } },
    { { 1, { 3 } }, { 3, { 1, 3, 1 } }, 2, { 0, -1 } },
    { { 2, { 4, 3 } }, { 4, { 4, 1, 1, 3 } }, 2, { 1, 2 } },
  };
  const __typeof__ (sq[0]) *t = boc_is (op, "squeeze") ? &sq[k] : &unsq[k];
  boc_in_randn_s (c, &t->x);
  if (t->n)
    tw_attrs_set_ints (boc_attrs (c), "axes", t->n, t->axes);
  boc_want (c, &t->y);
}

/* where (cond as i64 0/1, a, b broadcasting three ways) and expand (both
 * ways: [3, 1] against [2, 1, 4]; a row; a 0-d input). */
static void
gen_where (bcase *c, const char *op, int k)
{
  static const struct
  {
    shp c, a, b, y;
  } wc[] = {
    { { 2, { 1, 7 } }, { 2, { 1, 7 } }, { 2, { 1, 7 } }, { 2, { 1, 7 } } },
    { { 2, { 3, 1 } }, { 1, { 13 } }, { 2, { 3, 13 } }, { 2, { 3, 13 } } },
    { { 3, { 2, 1, 5 } }, { 0, { 0 } }, { 2, { 3, 1 } }, { 3, { 2, 3, 5 } } },
  }, ec[] = {
    { { 2, { 3, 1 } }, { 3, { 2, 1, 4 } }, { 0 }, { 3, { 2, 3, 4 } } },
    { { 1, { 5 } }, { 2, { 3, 1 } }, { 0 }, { 2, { 3, 5 } } },
    { { 0, { 0 } }, { 2, { 2, 3 } }, { 0 }, { 2, { 2, 3 } } },
  };
  if (boc_is (op, "expand"))
    {
      boc_in_randn_s (c, &ec[k].c);
      tw_attrs_set_ints (boc_attrs (c), "shape", ec[k].a.nd, ec[k].a.d);
      boc_want (c, &ec[k].y);
      return;
    }
  boc_in_int (c, 2, &wc[k].c);
  boc_in_randn_s (c, &wc[k].a);
  boc_in_randn_s (c, &wc[k].b);
  boc_want (c, &wc[k].y);
}

const op_case tw_boc_cases[] = {
  /* element-wise */
  { "add", 6, gen_binary }, { "sub", 6, gen_binary },
  { "mul", 6, gen_binary }, { "div", 6, gen_binary },
  { "pow", 6, gen_binary }, { "minimum", 6, gen_binary }, { "maximum", 6, gen_binary },
  { "ge_mask", 6, gen_binary },
  { "abs", 4, gen_unary }, { "sign", 4, gen_unary }, { "floor", 4, gen_unary },
  { "ceil", 4, gen_unary }, { "erf", 4, gen_unary },
  { "neg", 4, gen_unary }, { "scale", 4, gen_unary }, { "add_scalar", 4, gen_unary },
  { "square", 4, gen_unary }, { "sqrt", 4, gen_unary }, { "exp", 4, gen_unary },
  { "log", 4, gen_unary }, { "reciprocal", 4, gen_unary },
  { "fill_like", 4, gen_unary }, { "zeros_like", 4, gen_unary },
  { "nn_zeros_like", 4, gen_unary },
  { "relu", 4, gen_unary }, { "leaky_relu", 4, gen_unary }, { "gelu", 4, gen_unary },
  { "sigmoid", 4, gen_unary }, { "tanh", 4, gen_unary },
  { "relu_grad", 4, gen_unary }, { "leaky_relu_grad", 4, gen_unary },
  { "gelu_grad", 4, gen_unary }, { "sigmoid_grad", 4, gen_unary },
  { "tanh_grad", 4, gen_unary },
  /* reductions */
  { "sum", 6, gen_reduce }, { "mean", 6, gen_reduce }, { "max", 6, gen_reduce },
  { "max_grad", 6, gen_max_grad },
  { "sum_to", 4, gen_sum_to }, { "broadcast_to", 3, gen_broadcast_to },
  /* shape */
  { "flatten", 3, gen_flatten }, { "transpose", 3, gen_transpose },
  { "reshape", 2, gen_reshape }, { "reshape_like", 2, gen_reshape },
  { "concat", 3, gen_concat }, { "split", 3, gen_split },
  { "slice", 3, gen_slice }, { "slice_grad", 3, gen_slice },
  /* dense layers */
  { "linear", 3, gen_linear }, { "linear_grad_input", 3, gen_linear },
  { "linear_grad_weight", 3, gen_linear }, { "linear_grad_bias", 3, gen_linear },
  { "matmul", 5, gen_matmul }, { "matmul_grad_a", 5, gen_matmul },
  { "matmul_grad_b", 5, gen_matmul },
  { "embedding", 3, gen_embedding }, { "embedding_grad", 3, gen_embedding },
  { "argmax", 3, gen_argmax },
  { "dropout", 4, gen_dropout }, { "dropout_grad", 4, gen_dropout },
  { "softmax", 3, gen_softmax }, { "softmax_grad", 3, gen_softmax },
  { "log_softmax", 3, gen_softmax }, { "log_softmax_grad", 3, gen_softmax },
  /* convolution and pooling */
  { "conv2d", 3, gen_conv2d }, { "conv2d_grad_input", 3, gen_conv2d },
  { "conv2d_grad_weight", 3, gen_conv2d }, { "conv2d_grad_bias", 3, gen_conv2d },
  { "max_pool2d", 3, gen_pool2d }, { "max_pool2d_grad", 3, gen_pool2d },
  { "avg_pool2d", 3, gen_pool2d }, { "avg_pool2d_grad", 3, gen_pool2d },
  { "global_avg_pool2d", 2, gen_global_avg_pool2d },
  { "global_avg_pool2d_grad", 2, gen_global_avg_pool2d },
  /* normalisation */
  { "batch_norm", 5, gen_batch_norm }, { "batch_norm_grad", 3, gen_batch_norm_grad },
  { "layer_norm", 3, gen_layer_norm }, { "layer_norm_grad", 3, gen_layer_norm },
  /* losses */
  { "cross_entropy", 3, gen_cross_entropy }, { "cross_entropy_grad", 3, gen_cross_entropy },
  { "mse_loss", 3, gen_pair_loss }, { "mse_loss_grad", 3, gen_pair_loss },
  { "bce_with_logits", 3, gen_pair_loss }, { "bce_with_logits_grad", 3, gen_pair_loss },
  /* clamping activations, pad, resize */
  { "clip", 4, gen_clamp }, { "clip_grad", 4, gen_clamp }, { "relu6", 4, gen_clamp },
  { "hard_sigmoid", 4, gen_clamp }, { "hard_sigmoid_grad", 4, gen_clamp },
  { "hard_swish", 4, gen_clamp }, { "hard_swish_grad", 4, gen_clamp },
  { "pad", 3, gen_pad }, { "pad_grad", 3, gen_pad },
  { "resize", 4, gen_resize }, { "resize_grad", 4, gen_resize },
  { "squeeze", 3, gen_squeeze }, { "unsqueeze", 3, gen_squeeze }, { "cast", 3, gen_squeeze },
  { "where", 3, gen_where }, { "expand", 3, gen_where },
  /* reductions of ONNX graphs (the rest of their ops: backend-ops-cases-more.c) */
  { "min", 6, gen_reduce }, { "prod", 6, gen_reduce }, { "logsumexp", 6, gen_reduce },

  /* sources */
  { "input", 2, gen_input },
};

const guint tw_boc_n_cases = G_N_ELEMENTS (tw_boc_cases);
