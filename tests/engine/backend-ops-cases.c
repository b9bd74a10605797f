/* backend-ops-cases.c — see backend-ops-cases.h. */
#include "backend-ops-cases.h"
#include "opcheck.h"

#include "engine/rng.h"

#include <math.h>
#include <string.h>

/* ---- cases ------------------------------------------------------------------------ */

static gboolean
is (const char *a, const char *b)
{
  return strcmp (a, b) == 0;
}

static tw_attrs *
attrs_of (bcase *c)
{
  if (c->attrs == NULL)
    c->attrs = tw_attrs_new ();
  return c->attrs;
}

static tw_tensor *
push (bcase *c, tw_tensor *t)
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
  return push (c, tw_tensor_cast (t, TW_F64));
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
  return push (c, tw_tensor_cast (t, TW_F64));
}

/* i64 in [0, hi). */
static tw_tensor *
in_int (bcase *c, int64_t hi, const shp *s)
{
  return push (c, twt_randint (s->nd, s->d, c->seed++, hi));
}

/* N(0, 1) moved at least 0.1 away from 0, the kink of relu and leaky_relu:
 * the finite-difference step (1e-6) then never crosses it. */
static tw_tensor *
in_away_from_zero (bcase *c, const shp *s)
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
static tw_tensor *
in_distinct (bcase *c, const shp *s)
{
  tw_tensor *t = tw_tensor_new (TW_F64, s->nd, s->d);
  int64_t n = tw_tensor_numel (t);
  g_autofree int64_t *perm = g_new (int64_t, MAX (n, 1));
  tw_rng_permutation (perm, n, c->seed++, 0x7e5a);
  for (int64_t i = 0; i < n; i++)
    tw_tensor_set_flat (t, i, (double) (perm[i] - n / 2) / 64);
  return push (c, t);
}

static void
want (bcase *c, const shp *s)
{
  g_assert (c->n_want < TW_MAX_OUTPUTS);
  tw_tinfo_set (&c->want[c->n_want++], TW_F64, s->nd, s->d);
}

static void
want_dims (bcase *c, int nd, const int64_t *d)
{
  shp s = { nd, { 0 } };
  memcpy (s.d, d, nd * sizeof *d);
  want (c, &s);
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
static shp
ew_shape (bcase *c, int k)
{
  return k < (int) G_N_ELEMENTS (ew_shapes) ? ew_shapes[k] : random_shape (c, 4);
}

/* Unary ops (x), and the activations' grad ops (x or y, dy) -> dx. */
static void
gen_unary (bcase *c, const char *op, int k)
{
  shp s = ew_shape (c, k);
  if (is (op, "sqrt") || is (op, "log") || is (op, "reciprocal"))
    boc_in_uniform (c, 0.5, 3, &s);       /* positive, away from the pole / branch point at 0 */
  else if (g_str_has_prefix (op, "relu") || g_str_has_prefix (op, "leaky_relu") || is (op, "abs")
           || is (op, "sign"))
    in_away_from_zero (c, &s);
  else if (is (op, "sigmoid_grad"))
    boc_in_uniform (c, 0.05, 0.95, &s);   /* y = sigmoid (x) lies in (0, 1) */
  else if (is (op, "tanh_grad"))
    boc_in_uniform (c, -0.95, 0.95, &s);  /* y = tanh (x) lies in (-1, 1) */
  else
    boc_in_randn_s (c, &s);
  if (g_str_has_suffix (op, "_grad"))
    boc_in_randn_s (c, &s);
  if (is (op, "scale"))
    tw_attrs_set_float (attrs_of (c), "alpha", -1.7);
  else if (is (op, "add_scalar"))
    tw_attrs_set_float (attrs_of (c), "value", 0.3);
  else if (is (op, "fill_like"))
    tw_attrs_set_float (attrs_of (c), "value", 2.5);
  else if (g_str_has_prefix (op, "leaky_relu") && k == 1)
    tw_attrs_set_float (attrs_of (c), "negative_slope", 0.2);
  else if (g_str_has_prefix (op, "gelu") && k == 1)
    tw_attrs_set_string (attrs_of (c), "approximate", "tanh");
  want (c, &s);
}

static const struct
{
  shp a, b, y;
} bcast_cases[] = {
  { { 2, { 1, 7 } }, { 2, { 1, 7 } }, { 2, { 1, 7 } } },              /* batch 1, same shape */
  { { 2, { 3, 13 } }, { 1, { 13 } }, { 2, { 3, 13 } } },              /* a bias row */
  { { 3, { 2, 1, 5 } }, { 2, { 3, 1 } }, { 3, { 2, 3, 5 } } },        /* both broadcast */
  { { 0, { 0 } }, { 2, { 4, 7 } }, { 2, { 4, 7 } } },                 /* 0-d against a matrix */
};

/* Random broadcasting: a takes the full rank, b a random suffix of it, and
 * each dim of either is 1 with probability 1/3; y follows NumPy's rule. */
static void
random_broadcast (bcase *c, shp *a, shp *b, shp *y)
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
  if (k < (int) G_N_ELEMENTS (bcast_cases))
    a = bcast_cases[k].a, b = bcast_cases[k].b, y = bcast_cases[k].y;
  else
    random_broadcast (c, &a, &b, &y);
  if (is (op, "pow"))
    boc_in_uniform (c, 0.5, 2, &a);       /* positive base: log (a) in the exponent's gradient */
  else
    boc_in_randn_s (c, &a);
  if (is (op, "div"))
    boc_in_uniform (c, 0.5, 2, &b);       /* divisor away from 0 */
  else
    boc_in_randn_s (c, &b);
  want (c, &y);
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
static void
reduce_case (bcase *c, int k, shp *x, shp *y)
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
    tw_attrs_set_ints (attrs_of (c), "axes", n_axes, axes);
  tw_attrs_set_bool (attrs_of (c), "keepdim", keep);
}

static void
gen_reduce (bcase *c, const char *op, int k)
{
  shp x, y;
  reduce_case (c, k, &x, &y);
  if (is (op, "max") || is (op, "min"))
    in_distinct (c, &x);
  else
    boc_in_randn_s (c, &x);
  want (c, &y);
}

/* max_grad (x, y = max (x), dy). */
static void
gen_max_grad (bcase *c, const char *op, int k)
{
  shp xs, ys;
  reduce_case (c, k, &xs, &ys);
  tw_tensor *x = in_distinct (c, &xs);
  push (c, run_op (c, "max", &x, 1));
  boc_in_randn_s (c, &ys);
  want (c, &xs);
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
  want (c, &sum_to_cases[k].like);
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
    tw_attrs_set_ints (attrs_of (c), "axes", broadcast_to_cases[k].n_axes,
                       broadcast_to_cases[k].axes);
  want (c, &broadcast_to_cases[k].like);
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
  tw_attrs_set_int (attrs_of (c), "start_dim", flatten_cases[k].start);
  tw_attrs_set_int (attrs_of (c), "end_dim", flatten_cases[k].end);
  want (c, &flatten_cases[k].y);
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
  if (is (op, "reshape_like"))
    {
      boc_in_randn_s (c, &reshape_cases[k].y);
      boc_in_randn_s (c, &reshape_cases[k].x);
      want (c, &reshape_cases[k].x);
      return;
    }
  boc_in_randn_s (c, &reshape_cases[k].x);
  tw_attrs_set_ints (attrs_of (c), "shape", reshape_cases[k].shape.nd, reshape_cases[k].shape.d);
  want (c, &reshape_cases[k].y);
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
    tw_attrs_set_ints (attrs_of (c), "perm", transpose_cases[k].n_perm, transpose_cases[k].perm);
  want (c, &transpose_cases[k].y);
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
  tw_attrs_set_int (attrs_of (c), "axis", concat_cases[k].axis);
  want (c, &concat_cases[k].y);
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
  tw_attrs_set_int (attrs_of (c), "axis", split_cases[k].axis);
  tw_attrs_set_ints (attrs_of (c), "sizes", split_cases[k].n, split_cases[k].sizes);
  for (int i = 0; i < split_cases[k].n; i++)
    want (c, &split_cases[k].parts[i]);
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
  gboolean grad = is (op, "slice_grad");
  tw_attrs *a = attrs_of (c);
  if (grad)
    boc_in_randn_s (c, &slice_cases[k].y);
  boc_in_randn_s (c, &slice_cases[k].x);
  tw_attrs_set_int (a, "axis", slice_cases[k].axis);
  tw_attrs_set_int (a, "start", slice_cases[k].start);
  tw_attrs_set_int (a, "end", slice_cases[k].end);
  tw_attrs_set_int (a, "step", slice_cases[k].step);
  want (c, grad ? &slice_cases[k].x : &slice_cases[k].y);
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
  if (is (op, "linear"))
    {
      boc_in_randn_s (c, x);
      tw_attrs_set_int (attrs_of (c), "out_features", linear_cases[k].out);
      tw_attrs_set_bool (attrs_of (c), "bias", linear_cases[k].bias);
      want (c, y);
      return;
    }
  boc_in_randn_s (c, y);
  if (is (op, "linear_grad_input"))
    {
      boc_in_randn_s (c, &w);
      want (c, x);
    }
  else if (is (op, "linear_grad_weight"))
    {
      boc_in_randn_s (c, x);
      want (c, &w);
    }
  else
    want (c, &b);
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
  if (!is (op, "matmul"))
    boc_in_randn_s (c, &matmul_cases[k].y);
  boc_in_randn_s (c, &matmul_cases[k].a);
  boc_in_randn_s (c, &matmul_cases[k].b);
  want (c, is (op, "matmul")          ? &matmul_cases[k].y
           : is (op, "matmul_grad_a") ? &matmul_cases[k].a
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
  gboolean grad = is (op, "embedding_grad");
  shp y = embedding_cases[k].idx, w = { 2, { embedding_cases[k].num, embedding_cases[k].dim } };
  y.d[y.nd++] = embedding_cases[k].dim;
  if (grad)
    boc_in_randn_s (c, &y);
  in_int (c, embedding_cases[k].num, &embedding_cases[k].idx);
  tw_attrs_set_int (attrs_of (c), "num_embeddings", embedding_cases[k].num);
  if (!grad)
    tw_attrs_set_int (attrs_of (c), "embedding_dim", embedding_cases[k].dim);
  want (c, grad ? &w : &y);
}

static const struct
{
  shp x;
  int64_t axis;
  gboolean keep;
  shp y;
} argmax_cases[] = {
  { { 2, { 1, 7 } }, -1, FALSE, { 1, { 1 } } },
  { { 2, { 3, 13 } }, 0, TRUE, { 2, { 1, 13 } } },
  { { 3, { 2, 3, 5 } }, 1, FALSE, { 2, { 2, 5 } } },
};

static void
gen_argmax (bcase *c, const char *op, int k)
{
  in_distinct (c, &argmax_cases[k].x);
  tw_attrs_set_int (attrs_of (c), "axis", argmax_cases[k].axis);
  tw_attrs_set_bool (attrs_of (c), "keepdims", argmax_cases[k].keep);
  want (c, &argmax_cases[k].y);
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
  tw_attrs_set_float (attrs_of (c), "p", p[k]);
  c->ctx.training = k != 2;         /* case 2: evaluation, the identity */
  want (c, s);
}

/* softmax / log_softmax (x) along axis -1, 0, 1, and their grads (y, dy)
 * with y the forward's output. */
static void
gen_softmax (bcase *c, const char *op, int k)
{
  static const int64_t axis[] = { -1, 0, 1 };
  const shp *s = &ew_shapes[k];
  tw_attrs_set_int (attrs_of (c), "axis", axis[k]);
  if (g_str_has_suffix (op, "_grad"))
    {
      g_autoptr (tw_tensor) x = twt_randn (TW_F64, s->nd, s->d, c->seed++);
      push (c, run_op (c, is (op, "softmax_grad") ? "softmax" : "log_softmax", &x, 1));
    }
  boc_in_randn_s (c, s);
  want (c, s);
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
  tw_attrs *a = attrs_of (c);
  if (is (op, "conv2d_grad_bias"))
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
  if (is (op, "conv2d"))
    {
      in_randn (c, 4, x);
      tw_attrs_set_int (a, "out_channels", conv_cases[k].o);
      tw_attrs_set_bool (a, "bias", conv_cases[k].bias);
      want_dims (c, 4, y);
    }
  else if (is (op, "conv2d_grad_input"))
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
  tw_attrs *a = attrs_of (c);
  tw_attrs_set_ints (a, "kernel_size", 2, pc->k);
  if (pc->s[0] > 0)
    tw_attrs_set_ints (a, "stride", 2, pc->s);
  tw_attrs_set_ints (a, "padding", 2, pc->p);
  if (is_max)
    {
      tw_attrs_set_ints (a, "dilation", 2, pc->d);
      in_distinct (c, &x);
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
      tw_attrs_set_int (attrs_of (c), "in_h", x[2]);
      tw_attrs_set_int (attrs_of (c), "in_w", x[3]);
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
  tw_attrs_set_bool (attrs_of (c), "affine", bn_cases[k].affine);
  tw_attrs_set_bool (attrs_of (c), "track_running_stats", bn_cases[k].track);
  if (k == 1)
    tw_attrs_set_float (attrs_of (c), "momentum", 0.3);
  c->ctx.training = bn_cases[k].training;
  want (c, &bn_cases[k].x);
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
  tw_attrs_set_bool (attrs_of (c), "affine", affine);
  tw_attrs_set_bool (attrs_of (c), "training", training);
  want (c, x);
  want (c, &ch);
  want (c, &ch);
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
  tw_attrs_set_int (attrs_of (c), "normalized_ndim", ln_cases[k].ndim);
  want (c, x);
  if (is (op, "layer_norm"))
    {
      tw_attrs_set_bool (attrs_of (c), "elementwise_affine", ln_cases[k].affine);
      if (k == 2)
        tw_attrs_set_float (attrs_of (c), "eps", 1e-3);
      return;
    }
  if (ln_cases[k].affine)
    boc_in_randn_s (c, &ns);
  boc_in_randn_s (c, x);
  tw_attrs_set_bool (attrs_of (c), "affine", ln_cases[k].affine);
  want (c, &ns);
  want (c, &ns);
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
  gboolean grad = is (op, "cross_entropy_grad");
  boc_in_randn_s (c, x);
  in_int (c, x->d[1], &labels);
  if (grad)
    in_randn (c, 0, NULL);         /* dloss */
  if (k == 1)
    {
      tw_attrs_set_float (attrs_of (c), "label_smoothing", 0.1);
      tw_attrs_set_string (attrs_of (c), "reduction", "sum");
    }
  want (c, grad ? x : &scalar);
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
      tw_attrs_set_string (attrs_of (c), "reduction", "sum");
      if (bce)
        tw_attrs_set_float (attrs_of (c), "pos_weight", 2.5);
      if (grad)
        tw_attrs_set_bool (attrs_of (c), "wrt_target", TRUE);
    }
  want (c, grad ? s : &scalar);
}

/* ---- sources ---------------------------------------------------------------------------------- */

/* Shape inference only: the output is [N, shape...] with the symbolic N. */
static void
gen_input (bcase *c, const char *op, int k)
{
  if (k == 0)
    {
      tw_attrs_set_ints (attrs_of (c), "shape", 2, (int64_t[]) { 3, 5 });
      tw_tinfo_set (&c->want[0], TW_F32, 3, (int64_t[]) { TW_DIM_N, 3, 5 });
    }
  else
    {
      tw_attrs_set_ints (attrs_of (c), "shape", 1, (int64_t[]) { 7 });
      tw_attrs_set_string (attrs_of (c), "dtype", "i64");
      tw_attrs_set_string (attrs_of (c), "role", "label");
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
  shp s = ew_shape (c, k);
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
        tw_attrs_set_float (attrs_of (c), "min", -0.5);
      if (k != 1)
        tw_attrs_set_float (attrs_of (c), "max", 0.7);
    }
  else if (g_str_has_prefix (op, "hard_sigmoid") && k == 1)
    {
      tw_attrs_set_float (attrs_of (c), "alpha", 1.0 / 6);
      tw_attrs_set_float (attrs_of (c), "beta", 0.5);
    }
  want (c, &s);
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
  tw_attrs_set_ints (attrs_of (c), "pads", cases[k].np, cases[k].pads);
  tw_attrs_set_string (attrs_of (c), "mode", cases[k].mode);
  if (k == 0)
    tw_attrs_set_float (attrs_of (c), "value", 0.25);
  if (is (op, "pad_grad"))
    {
      boc_in_randn_s (c, &cases[k].y);
      boc_in_randn_s (c, &cases[k].x);
      want (c, &cases[k].x);
    }
  else
    {
      boc_in_randn_s (c, &cases[k].x);
      want (c, &cases[k].y);
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
  tw_attrs *a = attrs_of (c);
  tw_attrs_set_string (a, "coordinate_transformation_mode", cases[k].ct);
  tw_attrs_set_string (a, "nearest_mode", cases[k].nm);
  if (cases[k].sizes[0])
    tw_attrs_set_ints (a, "sizes", cases[k].n, cases[k].sizes);
  else
    tw_attrs_set_floats (a, "scales", cases[k].n, cases[k].scales);
  if (is (op, "resize_grad"))
    {
      boc_in_randn_s (c, &cases[k].y);
      boc_in_randn_s (c, &cases[k].x);
      want (c, &cases[k].x);
    }
  else
    {
      boc_in_randn_s (c, &cases[k].x);
      want (c, &cases[k].y);
    }
}

/* squeeze (a size-1 dim by axis, then every size-1 dim), unsqueeze (axes of
 * the output, one negative), cast to integer types (truncation, u8's
 * saturation from values in [-10, 300], i64 to i32). */
static void
gen_squeeze (bcase *c, const char *op, int k)
{
  if (is (op, "cast"))
    {
      static const char *const to[] = { "i64", "u8", "i32" };
      shp s = ew_shapes[k];
      if (k == 0)
        boc_in_randn_s (c, &s);
      else if (k == 1)
        boc_in_uniform (c, -10, 300, &s);
      else
        in_int (c, 1000, &s);
      tw_attrs_set_string (attrs_of (c), "to", to[k]);
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
  const __typeof__ (sq[0]) *t = is (op, "squeeze") ? &sq[k] : &unsq[k];
  boc_in_randn_s (c, &t->x);
  if (t->n)
    tw_attrs_set_ints (attrs_of (c), "axes", t->n, t->axes);
  want (c, &t->y);
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
  if (is (op, "expand"))
    {
      boc_in_randn_s (c, &ec[k].c);
      tw_attrs_set_ints (attrs_of (c), "shape", ec[k].a.nd, ec[k].a.d);
      want (c, &ec[k].y);
      return;
    }
  in_int (c, 2, &wc[k].c);
  boc_in_randn_s (c, &wc[k].a);
  boc_in_randn_s (c, &wc[k].b);
  want (c, &wc[k].y);
}

/* ---- trigonometry, activations, comparisons, logic and mod of ONNX graphs ------------- */

/* Unary float ops of elementwise-more.c (x, and dy for the grad ops) in
 * their domains; the piecewise ones (thresholded_relu at alpha, shrink at
 * +-lambd) are kinks the f32-rounded N(0, 1) draws miss. */
static void
gen_ew_more (bcase *c, const char *op, int k)
{
  shp s = ew_shape (c, k);
  if (is (op, "asin") || is (op, "acos") || is (op, "atanh"))
    boc_in_uniform (c, -0.9, 0.9, &s);    /* inside the domain, away from the poles at +-1 */
  else if (is (op, "acosh"))
    boc_in_uniform (c, 1.2, 3, &s);
  else if (is (op, "tan"))
    boc_in_uniform (c, -1.2, 1.2, &s);    /* away from the poles at +-pi/2 */
  else if (g_str_has_prefix (op, "selu") || g_str_has_prefix (op, "prelu"))
    in_away_from_zero (c, &s);            /* selu and prelu have a kink at 0 */
  else
    boc_in_randn_s (c, &s);
  if (g_str_has_suffix (op, "_grad"))
    boc_in_randn_s (c, &s);
  if (g_str_has_prefix (op, "elu") && k == 1)
    tw_attrs_set_float (attrs_of (c), "alpha", 0.7);
  else if (g_str_has_prefix (op, "selu") && k == 1)
    {
      tw_attrs_set_float (attrs_of (c), "alpha", 2);
      tw_attrs_set_float (attrs_of (c), "gamma", 3);
    }
  else if (g_str_has_prefix (op, "celu") && k == 1)
    tw_attrs_set_float (attrs_of (c), "alpha", 2.5);
  else if (g_str_has_prefix (op, "thresholded_relu") && k == 1)
    tw_attrs_set_float (attrs_of (c), "alpha", -0.3);
  else if (g_str_has_prefix (op, "shrink") && k == 1)
    {
      tw_attrs_set_float (attrs_of (c), "bias", 0.25);
      tw_attrs_set_float (attrs_of (c), "lambd", 0.8);
    }
  else if (is (op, "prelu") && k == 1)
    tw_attrs_set_int (attrs_of (c), "num_parameters", s.d[1]);   /* one slope per channel */
  want (c, &s);
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
  if (is (op, "prelu_broadcast"))
    {
      in_away_from_zero (c, &pc[k].a);
      boc_in_randn_s (c, &pc[k].b);
      want (c, &pc[k].a);
      return;
    }
  shp a, b, y;
  if (k < (int) G_N_ELEMENTS (bcast_cases))
    a = bcast_cases[k].a, b = bcast_cases[k].b, y = bcast_cases[k].y;
  else
    random_broadcast (c, &a, &b, &y);
  boc_in_uniform (c, -6, 6, &a);
  tw_tensor *t = boc_in_uniform (c, 0.5, 2, &b);
  if (k % 2 == 1)
    for (int64_t i = 0; i < tw_tensor_numel (t); i++)
      tw_tensor_set_flat (t, i, -tw_tensor_get_flat (t, i));   /* negative divisors */
  tw_attrs_set_int (attrs_of (c), "fmod", k >= 2);
  want (c, &y);
}

/* Comparisons (small integers in f64: ties happen), logic (u8 0/1) and
 * isnan / isinf (NaN, +-inf planted): u8 outputs, exact; the comparisons'
 * zero gradient is not probed (finite differences across a tie are not 0). */
static void
gen_compare (bcase *c, const char *op, int k)
{
  gboolean unary = is (op, "logical_not") || is (op, "isnan") || is (op, "isinf");
  shp a, b, y;
  if (k < (int) G_N_ELEMENTS (bcast_cases))
    a = bcast_cases[k].a, b = bcast_cases[k].b, y = bcast_cases[k].y;
  else
    random_broadcast (c, &a, &b, &y);
  if (unary)
    y = a = b;
  int n_in = unary ? 1 : 2;
  for (int i = 0; i < n_in; i++)
    {
      const shp *si = i == 0 ? &a : &b;
      if (g_str_has_prefix (op, "logical_"))
        {
          g_autoptr (tw_tensor) t = twt_randint (si->nd, si->d, c->seed++, 2);
          push (c, tw_tensor_cast (t, TW_U8));
        }
      else if (is (op, "isnan") || is (op, "isinf"))
        {
          tw_tensor *t = boc_in_randn_s (c, si);
          static const double planted[] = { NAN, INFINITY, -INFINITY };
          for (int64_t j = 0; j < tw_tensor_numel (t); j += 3)
            tw_tensor_set_flat (t, j, planted[(j / 3) % 3]);
        }
      else
        {
          g_autoptr (tw_tensor) t = twt_randint (si->nd, si->d, c->seed++, 3);
          push (c, tw_tensor_cast (t, TW_F64));
          c->no_grad[c->n_in - 1] = TRUE;
        }
    }
  if (is (op, "isinf") && k == 1)
    tw_attrs_set_bool (attrs_of (c), "detect_negative", FALSE);
  want (c, &y);
  c->want[0].dtype = TW_U8;
}

/* ---- the table ------------------------------------------------------------------------------- */

/* ---- reductions, index ops and nll_loss of ONNX graphs --------------------------------- */

/* prod_grad (x, dy shaped as prod's output). */
static void
gen_prod_grad (bcase *c, const char *op, int k)
{
  shp xs, ys;
  reduce_case (c, k, &xs, &ys);
  boc_in_randn_s (c, &xs);
  boc_in_randn_s (c, &ys);
  want (c, &xs);
}

/* argmin along an axis, the last of ties in case 2; hardmax along one. */
static void
gen_argmin (bcase *c, const char *op, int k)
{
  in_distinct (c, &argmax_cases[k].x);
  tw_attrs_set_int (attrs_of (c), "axis", argmax_cases[k].axis);
  if (is (op, "hardmax"))
    {
      want (c, &argmax_cases[k].x);
      return;
    }
  tw_attrs_set_bool (attrs_of (c), "keepdims", argmax_cases[k].keep);
  tw_attrs_set_bool (attrs_of (c), "select_last_index", k == 2);
  want (c, &argmax_cases[k].y);
  c->want[0].dtype = TW_I64;
}

/* trilu (upper / lower, k) and cumsum (axis, exclusive, reverse). */
static void
gen_trilu_cumsum (bcase *c, const char *op, int k)
{
  static const shp shapes[] = { { 2, { 1, 7 } }, { 3, { 2, 3, 5 } }, { 2, { 4, 4 } } };
  const shp *s = &shapes[k];
  boc_in_randn_s (c, s);
  if (is (op, "trilu"))
    {
      tw_attrs_set_bool (attrs_of (c), "upper", k != 1);
      tw_attrs_set_int (attrs_of (c), "k", k - 1);
    }
  else
    {
      tw_attrs_set_int (attrs_of (c), "axis", k == 1 ? -2 : k == 2 ? 0 : 1);
      tw_attrs_set_bool (attrs_of (c), "exclusive", k != 0);
      tw_attrs_set_bool (attrs_of (c), "reverse", k == 2);
    }
  want (c, s);
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
  in_int (c, gc[k].data.d[ax], &gc[k].idx);
  if (is (op, "gather_elements_grad"))
    boc_in_randn_s (c, &gc[k].idx);
  tw_attrs_set_int (attrs_of (c), "axis", gc[k].axis);
  want (c, is (op, "gather_elements_grad") ? &gc[k].data : &gc[k].idx);
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
  in_int (c, nc[k].x.d[1], &nc[k].t);
  if (k == 1)
    {
      shp w = { 1, { nc[k].x.d[1] } };
      boc_in_uniform (c, 0.2, 2, &w);
      c->no_grad[c->n_in - 1] = TRUE;     /* the gradient flows to x only */
    }
  if (is (op, "nll_loss_grad"))
    boc_in_randn_s (c, &nc[k].y);
  tw_attrs_set_string (attrs_of (c), "reduction", red[k]);
  if (k == 2)
    tw_attrs_set_int (attrs_of (c), "ignore_index", 1);
  want (c, is (op, "nll_loss_grad") ? &nc[k].x : &nc[k].y);
}

/* scatter_elements (data, indices, updates): case 0 writes at distinct
 * positions, case 1 adds with repeats, case 2 writes along dim 0. */
static void
gen_scatter_elements (bcase *c, const char *op, int k)
{
  static const int64_t rows[] = { 4, 0, 2, 3, 1, 0, 2, 4, 1 };    /* distinct per row */
  shp d = { 2, { 3, 5 } }, ix = { 2, { k == 2 ? 2 : 3, k == 2 ? 5 : 3 } };
  boc_in_randn_s (c, &d);
  tw_tensor *t = push (c, tw_tensor_new (TW_I64, ix.nd, ix.d));
  for (int64_t i = 0; i < tw_tensor_numel (t); i++)
    if (k == 2)
      tw_tensor_i64 (t)[i] = i < 5 ? 0 : -1;          /* rows 0 and 2 of each column */
    else
      tw_tensor_i64 (t)[i] = k == 1 ? i % 3 : rows[i];
  boc_in_randn_s (c, &ix);
  tw_attrs_set_int (attrs_of (c), "axis", k == 2 ? 0 : 1);
  tw_attrs_set_string (attrs_of (c), "reduction", k == 1 ? "add" : "none");
  want (c, &d);
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
  tw_tensor *t = push (c, tw_tensor_new (TW_I64, gc[k].idx.nd, gc[k].idx.d));
  int64_t kk = gc[k].idx.d[gc[k].idx.nd - 1];
  for (int64_t i = 0; i < tw_tensor_numel (t); i++)
    tw_tensor_i64 (t)[i] = (int64_t) ((i * 7 + 3) % gc[k].data.d[gc[k].b + i % kk]);
  if (is (op, "gather_nd_grad"))
    boc_in_randn_s (c, &gc[k].y);
  tw_attrs_set_int (attrs_of (c), "batch_dims", gc[k].b);
  want (c, is (op, "gather_nd_grad") ? &gc[k].data : &gc[k].y);
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
  push (c, tw_tensor_from_data (TW_I64, sc[k].idx.nd, sc[k].idx.d, sc[k].iv));
  boc_in_randn_s (c, &sc[k].up);
  tw_attrs_set_string (attrs_of (c), "reduction", k == 1 ? "add" : "none");
  want (c, &sc[k].data);
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
  in_distinct (c, &tc[k].x);
  tw_attrs_set_int (attrs_of (c), "k", tc[k].k);
  tw_attrs_set_int (attrs_of (c), "axis", tc[k].axis);
  tw_attrs_set_bool (attrs_of (c), "largest", k != 1);
  want (c, &tc[k].y);
  want (c, &tc[k].y);
  c->want[1].dtype = TW_I64;
}

/* eye_like (x) on diagonals 0, 2 and -1. */
static void
gen_eye_like (bcase *c, const char *op, int k)
{
  static const shp s[] = { { 2, { 1, 7 } }, { 2, { 3, 13 } }, { 2, { 4, 4 } } };
  boc_in_randn_s (c, &s[k]);
  tw_attrs_set_int (attrs_of (c), "k", k == 1 ? 2 : -k / 2);
  want (c, &s[k]);
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
  /* reductions, index ops and nll_loss of ONNX graphs */
  { "min", 6, gen_reduce }, { "prod", 6, gen_reduce }, { "prod_grad", 6, gen_prod_grad },
  { "logsumexp", 6, gen_reduce }, { "argmin", 3, gen_argmin }, { "hardmax", 3, gen_argmin },
  { "trilu", 3, gen_trilu_cumsum }, { "cumsum", 3, gen_trilu_cumsum },
  { "gather_elements", 3, gen_gather_elements }, { "gather_elements_grad", 3, gen_gather_elements },
  { "nll_loss", 3, gen_nll_loss }, { "nll_loss_grad", 3, gen_nll_loss },
  { "scatter_elements", 3, gen_scatter_elements }, { "gather_nd", 3, gen_gather_nd },
  { "gather_nd_grad", 3, gen_gather_nd }, { "eye_like", 3, gen_eye_like },
  { "scatter_nd", 3, gen_scatter_nd }, { "topk", 3, gen_topk },
  /* trigonometry, activations, comparisons, logic and mod of ONNX graphs */
  { "sin", 4, gen_ew_more }, { "cos", 4, gen_ew_more }, { "tan", 4, gen_ew_more },
  { "asin", 4, gen_ew_more }, { "acos", 4, gen_ew_more }, { "atan", 4, gen_ew_more },
  { "sinh", 4, gen_ew_more }, { "cosh", 4, gen_ew_more }, { "asinh", 4, gen_ew_more },
  { "acosh", 4, gen_ew_more }, { "atanh", 4, gen_ew_more }, { "round", 4, gen_ew_more },
  { "elu", 4, gen_ew_more }, { "selu", 4, gen_ew_more }, { "celu", 4, gen_ew_more },
  { "softplus", 4, gen_ew_more }, { "softsign", 4, gen_ew_more },
  { "thresholded_relu", 4, gen_ew_more }, { "shrink", 4, gen_ew_more },
  { "elu_grad", 4, gen_ew_more }, { "selu_grad", 4, gen_ew_more }, { "celu_grad", 4, gen_ew_more },
  { "thresholded_relu_grad", 4, gen_ew_more }, { "shrink_grad", 4, gen_ew_more },
  { "prelu", 4, gen_ew_more }, { "prelu_broadcast", 4, gen_ew_more_binary },
  { "mod", 6, gen_ew_more_binary },
  { "equal", 6, gen_compare }, { "greater", 6, gen_compare }, { "less", 6, gen_compare },
  { "greater_equal", 6, gen_compare }, { "less_equal", 6, gen_compare },
  { "logical_and", 6, gen_compare }, { "logical_or", 6, gen_compare },
  { "logical_xor", 6, gen_compare }, { "logical_not", 4, gen_compare },
  { "isnan", 4, gen_compare }, { "isinf", 4, gen_compare },
  /* sources */
  { "input", 2, gen_input },
};

const guint tw_boc_n_cases = G_N_ELEMENTS (tw_boc_cases);
