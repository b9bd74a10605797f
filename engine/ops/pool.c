/* pool.c — 2-D pooling over [N, C, H, W] and the internal gradient ops.
 *
 *   max_pool2d        (x)      -> [N, C, Ho, Wo]     max_pool2d_grad        (x, dy) -> dx
 *   avg_pool2d        (x)      -> [N, C, Ho, Wo]     avg_pool2d_grad        (dy)    -> dx
 *   global_avg_pool2d (x)      -> [N, C, 1, 1]       global_avg_pool2d_grad (dy)    -> dx
 *
 * PyTorch semantics in floor mode (ceil_mode = False).  Registered from
 * tw_ops_register_conv (conv.c); typed kernels in pool_tmpl.h.
 */
#include "engine/cpu/parallel.h"
#include "engine/ops/conv_private.h"

#include <math.h>
#include <string.h>

/* Valid kernel taps [lo, hi) per output row and column. */
typedef struct
{
  int64_t *hlo, *hhi, *wlo, *whi;
} pool_ranges;

#define TW_CAT_(a, b) a##_##b
#define TW_CAT(a, b) TW_CAT_ (a, b)

#define T float
#define TW_FN(name) TW_CAT (name, f32)
#include "engine/ops/pool_tmpl.h"
#undef T
#undef TW_FN

#define T double
#define TW_FN(name) TW_CAT (name, f64)
#include "engine/ops/pool_tmpl.h"
#undef T
#undef TW_FN

/* Taps k in [0, K) with 0 <= o*s - p + k*d < L, for o in [0, Lo). */
static void
tap_ranges (int64_t Lo, int64_t L, int64_t K, int64_t s, int64_t p, int64_t d, int64_t *lo,
            int64_t *hi)
{
  for (int64_t o = 0; o < Lo; o++)
    {
      int64_t off = o * s - p, rest = L - off;
      int64_t a = off >= 0 ? 0 : (-off + d - 1) / d;
      int64_t b = rest <= 0 ? 0 : (rest + d - 1) / d;
      lo[o] = MIN (a, K);
      hi[o] = CLAMP (b, lo[o], K);
    }
}

static pool_ranges
pool_ranges_new (const conv_geom *g)
{
  pool_ranges r;
  r.hlo = tw_scratch (NULL, 2 * (g->ho + g->wo) * sizeof (int64_t));
  r.hhi = r.hlo + g->ho;
  r.wlo = r.hhi + g->ho;
  r.whi = r.wlo + g->wo;
  tap_ranges (g->ho, g->h, g->kh, g->sh, g->ph, g->dh, r.hlo, r.hhi);
  tap_ranges (g->wo, g->w, g->kw, g->sw, g->pw, g->dw, r.wlo, r.whi);
  return r;
}

/* The ranges live in the kernel's scratch: nothing to free. */
static void
pool_ranges_clear (pool_ranges *r)
{
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
check_input (const char *op, const char *what, const tw_tinfo *x, GError **error)
{
  g_autofree char *s = tw_tinfo_to_string (x);
  if (x->ndim != 4)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "%s expects %s of rank 4 [N, C, H, W], got %s", op, what, s);
      return FALSE;
    }
  if (x->dtype != TW_F32 && x->dtype != TW_F64)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_DTYPE,
                   "%s expects %s of type f32 or f64, got %s", op, what, s);
      return FALSE;
    }
  return TRUE;
}

/* Window of a pool op over x [N, C, H, W]; sets the output size.  PyTorch's
 * rule: padding at most half the kernel, so every window touches the input. */
static gboolean
pool_setup (const char *op, const tw_attrs *a, const tw_tinfo *x, conv_geom *g, GError **error)
{
  memset (g, 0, sizeof *g);
  if (!check_input (op, "input", x, error) || !tw_conv_read_window (op, a, TRUE, g, error))
    return FALSE;
  if (g->ph > g->kh / 2 || g->pw > g->kw / 2)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "%s: padding must be at most half the kernel size (%" G_GINT64_FORMAT
                   "x%" G_GINT64_FORMAT " allows %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                   "), got %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT,
                   op, g->kh, g->kw, g->kh / 2, g->kw / 2, g->ph, g->pw);
      return FALSE;
    }
  g->n = x->dims[0], g->c = x->dims[1], g->h = x->dims[2], g->w = x->dims[3];
  g->o = g->c, g->groups = 1;
  return tw_conv_check_spatial (op, x, g, error);
}

/* Concrete geometry at run time from x [N, C, H, W] and y [N, C, Ho, Wo]. */
static void
pool_geom_run (const tw_kctx *ctx, const tw_attrs *a, const tw_tensor *x, const tw_tensor *y,
               conv_geom *g)
{
  memset (g, 0, sizeof *g);
  tw_conv_read_window ("pool", a, TRUE, g, NULL);
  g->n = x->shape[0], g->c = x->shape[1], g->h = x->shape[2], g->w = x->shape[3];
  g->o = g->c, g->groups = 1;
  g->ho = y->shape[2], g->wo = y->shape[3];
  g->threads = tw_conv_threads (ctx);
}

static gboolean
pool_infer_out (const char *op, const tw_attrs *a, const tw_tinfo *x, tw_tinfo *out,
                GError **error)
{
  conv_geom g;
  if (!pool_setup (op, a, x, &g, error))
    return FALSE;
  int64_t od[4] = { g.n, g.c, g.ho, g.wo };
  tw_tinfo_set (out, x->dtype, 4, od);
  return TRUE;
}

/* Checks dy against the pool output of x (the input of the forward op). */
static gboolean
pool_check_dy (const char *op, const tw_attrs *a, const tw_tinfo *x, const tw_tinfo *dy,
               GError **error)
{
  tw_tinfo y;
  if (!check_input (op, "dy", dy, error) || !pool_infer_out (op, a, x, &y, error))
    return FALSE;
  if (tw_tinfo_equal (&y, dy))
    return TRUE;
  g_autofree char *ys = tw_tinfo_to_string (&y);
  g_autofree char *ds = tw_tinfo_to_string (dy);
  g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
               "%s expects dy %s (the pool output), got %s", op, ys, ds);
  return FALSE;
}

/* Input shape of the forward pool from dy [N, C, .., ..] and in_h / in_w. */
static void
grad_input_shape (const tw_attrs *a, const tw_tinfo *dy, tw_tinfo *x)
{
  int64_t xd[4] = { dy->ndim > 0 ? dy->dims[0] : 0, dy->ndim > 1 ? dy->dims[1] : 0,
                    tw_attrs_get_int (a, "in_h", 0), tw_attrs_get_int (a, "in_w", 0) };
  tw_tinfo_set (x, dy->dtype, 4, xd);
}

/* One comparison or addition per tap and output element. */
static void
pool_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
           tw_cost *cost)
{
  int64_t k[2];
  tw_attrs_get_ints2 (a, "kernel_size", k, 1);
  io_bytes (in, n_in, out, n_out, cost);
  cost->flops = (double) tw_tinfo_numel (&out[0], NULL) * ((double) k[0] * (double) k[1]);
}

static void
pool_grad_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
                tw_cost *cost)
{
  int64_t k[2];
  tw_attrs_get_ints2 (a, "kernel_size", k, 1);
  io_bytes (in, n_in, out, n_out, cost);
  cost->flops = (double) tw_tinfo_numel (&in[n_in - 1], NULL) * ((double) k[0] * (double) k[1]);
}

static tw_attrs *
copy_attrs (const tw_attrs *a, const char *const *names, int n)
{
  tw_attrs *r = tw_attrs_new ();
  for (int i = 0; i < n; i++)
    if (tw_attrs_has (a, names[i]))
      tw_attrs_set (r, names[i], tw_attrs_lookup (a, names[i]));
  return r;
}

/* ---- max_pool2d --------------------------------------------------------- */

static const tw_attr_spec max_pool_attrs[] = {
  { "kernel_size", TW_ATTR_INTS, NULL, TRUE, "window size: k or [kh, kw]" },
  { "stride", TW_ATTR_INTS, NULL, FALSE, "stride: s or [sh, sw] (default: the kernel size)" },
  { "padding", TW_ATTR_INTS, "0", FALSE, "implicit -inf padding on each side (at most k/2)" },
  { "dilation", TW_ATTR_INTS, "1", FALSE, "spacing of the window taps" },
  { NULL }
};

static gboolean
max_pool_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  return pool_infer_out ("max_pool2d", a, &in[0], &out[0], error);
}

static gboolean
max_pool_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                  tw_tensor *const *out, GError **error)
{
  conv_geom g;
  pool_geom_run (ctx, a, in[0], out[0], &g);
  pool_ranges r = pool_ranges_new (&g);
  if (in[0]->dtype == TW_F32)
    max_pool_forward_f32 (&g, &r, tw_tensor_f32 (in[0]), tw_tensor_f32 (out[0]));
  else
    max_pool_forward_f64 (&g, &r, tw_tensor_f64 (in[0]), tw_tensor_f64 (out[0]));
  pool_ranges_clear (&r);
  return TRUE;
}

static const char *const window_names[] = { "kernel_size", "stride", "padding", "dilation" };

static gboolean
max_pool_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                   tw_val *const *out, tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  if (gout[0] == NULL || !needs[0])
    return TRUE;
  tw_attrs *ga = copy_attrs (a, window_names, G_N_ELEMENTS (window_names));
  gin[0] = tw_emit2 (e, "max_pool2d_grad", ga, in[0], gout[0]);
  tw_attrs_free (ga);
  return gin[0] != NULL;
}

static const char *const x_inputs[] = { "x", NULL };

static const tw_op_def max_pool_def = {
  .name = "max_pool2d",
  .category = "Pooling",
  .doc = "2-D max pooling over [N, C, H, W] (PyTorch nn.MaxPool2d, floor mode)",
  .attrs = max_pool_attrs,
  .min_inputs = 1,
  .max_inputs = 1,
  .input_names = x_inputs,
  .n_outputs = 1,
  .infer = max_pool_infer,
  .forward = max_pool_forward,
  .backward = max_pool_backward,
  .cost = pool_cost,
  .onnx_name = "MaxPool",
};

/* max_pool2d_grad (x, dy) -> dx */
static gboolean
max_pool_grad_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                     GError **error)
{
  if (!pool_check_dy ("max_pool2d_grad", a, &in[0], &in[1], error))
    return FALSE;
  out[0] = in[0];
  return TRUE;
}

static gboolean
max_pool_grad_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                       tw_tensor *const *out, GError **error)
{
  conv_geom g;
  pool_geom_run (ctx, a, in[0], in[1], &g);
  pool_ranges r = pool_ranges_new (&g);
  if (in[0]->dtype == TW_F32)
    max_pool_backward_f32 (&g, &r, tw_tensor_f32 (in[0]), tw_tensor_f32 (in[1]),
                           tw_tensor_f32 (out[0]));
  else
    max_pool_backward_f64 (&g, &r, tw_tensor_f64 (in[0]), tw_tensor_f64 (in[1]),
                           tw_tensor_f64 (out[0]));
  pool_ranges_clear (&r);
  return TRUE;
}

static const char *const max_grad_inputs[] = { "x", "dy", NULL };

static const tw_op_def max_pool_grad_def = {
  .name = "max_pool2d_grad",
  .category = "Pooling",
  .doc = "Gradient of max_pool2d: dy routed to the first maximum of each window",
  .attrs = max_pool_attrs,
  .min_inputs = 2,
  .max_inputs = 2,
  .input_names = max_grad_inputs,
  .n_outputs = 1,
  .infer = max_pool_grad_infer,
  .forward = max_pool_grad_forward,
  .cost = pool_grad_cost,
  .flags = TW_OP_INTERNAL,
};

/* ---- avg_pool2d --------------------------------------------------------- */

static const tw_attr_spec avg_pool_attrs[] = {
  { "kernel_size", TW_ATTR_INTS, NULL, TRUE, "window size: k or [kh, kw]" },
  { "stride", TW_ATTR_INTS, NULL, FALSE, "stride: s or [sh, sw] (default: the kernel size)" },
  { "padding", TW_ATTR_INTS, "0", FALSE, "implicit zero padding on each side (at most k/2)" },
  { "count_include_pad", TW_ATTR_BOOL, "true", FALSE,
    "divide by the whole window (true) or by the input elements under it (false)" },
  { NULL }
};

static const tw_attr_spec avg_pool_grad_attrs[] = {
  { "kernel_size", TW_ATTR_INTS, NULL, TRUE, "window size" },
  { "stride", TW_ATTR_INTS, NULL, FALSE, "stride (default: the kernel size)" },
  { "padding", TW_ATTR_INTS, "0", FALSE, "padding on each side" },
  { "count_include_pad", TW_ATTR_BOOL, "true", FALSE, "divisor rule of the forward" },
  { "in_h", TW_ATTR_INT, NULL, TRUE, "height of the forward input" },
  { "in_w", TW_ATTR_INT, NULL, TRUE, "width of the forward input" },
  { NULL }
};

static gboolean
avg_pool_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  return pool_infer_out ("avg_pool2d", a, &in[0], &out[0], error);
}

static gboolean
avg_pool_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                  tw_tensor *const *out, GError **error)
{
  conv_geom g;
  gboolean include_pad = tw_attrs_get_bool (a, "count_include_pad", TRUE);
  pool_geom_run (ctx, a, in[0], out[0], &g);
  pool_ranges r = pool_ranges_new (&g);
  if (in[0]->dtype == TW_F32)
    avg_pool_forward_f32 (&g, &r, include_pad, tw_tensor_f32 (in[0]), tw_tensor_f32 (out[0]));
  else
    avg_pool_forward_f64 (&g, &r, include_pad, tw_tensor_f64 (in[0]), tw_tensor_f64 (out[0]));
  pool_ranges_clear (&r);
  return TRUE;
}

static gboolean
avg_pool_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                   tw_val *const *out, tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  static const char *const names[] = { "kernel_size", "stride", "padding", "count_include_pad" };
  if (gout[0] == NULL || !needs[0])
    return TRUE;
  const tw_tinfo *x = tw_val_info (e, in[0]);
  tw_attrs *ga = copy_attrs (a, names, G_N_ELEMENTS (names));
  tw_attrs_set_int (ga, "in_h", x->dims[2]);
  tw_attrs_set_int (ga, "in_w", x->dims[3]);
  gin[0] = tw_emit1 (e, "avg_pool2d_grad", ga, gout[0]);
  tw_attrs_free (ga);
  return gin[0] != NULL;
}

static const tw_op_def avg_pool_def = {
  .name = "avg_pool2d",
  .category = "Pooling",
  .doc = "2-D average pooling over [N, C, H, W] (PyTorch nn.AvgPool2d, floor mode)",
  .attrs = avg_pool_attrs,
  .min_inputs = 1,
  .max_inputs = 1,
  .input_names = x_inputs,
  .n_outputs = 1,
  .infer = avg_pool_infer,
  .forward = avg_pool_forward,
  .backward = avg_pool_backward,
  .cost = pool_cost,
  .onnx_name = "AveragePool",
};

/* avg_pool2d_grad (dy) -> dx [N, C, in_h, in_w] */
static gboolean
avg_pool_grad_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                     GError **error)
{
  tw_tinfo x;
  grad_input_shape (a, &in[0], &x);
  if (!pool_check_dy ("avg_pool2d_grad", a, &x, &in[0], error))
    return FALSE;
  out[0] = x;
  return TRUE;
}

static gboolean
avg_pool_grad_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                       tw_tensor *const *out, GError **error)
{
  conv_geom g;
  gboolean include_pad = tw_attrs_get_bool (a, "count_include_pad", TRUE);
  pool_geom_run (ctx, a, out[0], in[0], &g);
  pool_ranges r = pool_ranges_new (&g);
  if (in[0]->dtype == TW_F32)
    avg_pool_backward_f32 (&g, &r, include_pad, tw_tensor_f32 (in[0]), tw_tensor_f32 (out[0]));
  else
    avg_pool_backward_f64 (&g, &r, include_pad, tw_tensor_f64 (in[0]), tw_tensor_f64 (out[0]));
  pool_ranges_clear (&r);
  return TRUE;
}

static const char *const dy_inputs[] = { "dy", NULL };

static const tw_op_def avg_pool_grad_def = {
  .name = "avg_pool2d_grad",
  .category = "Pooling",
  .doc = "Gradient of avg_pool2d: dy spread evenly over each window",
  .attrs = avg_pool_grad_attrs,
  .min_inputs = 1,
  .max_inputs = 1,
  .input_names = dy_inputs,
  .n_outputs = 1,
  .infer = avg_pool_grad_infer,
  .forward = avg_pool_grad_forward,
  .cost = pool_grad_cost,
  .flags = TW_OP_INTERNAL,
};

/* ---- global_avg_pool2d -------------------------------------------------- */

static const tw_attr_spec global_avg_attrs[] = { { NULL } };

static const tw_attr_spec global_avg_grad_attrs[] = {
  { "in_h", TW_ATTR_INT, NULL, TRUE, "height of the forward input" },
  { "in_w", TW_ATTR_INT, NULL, TRUE, "width of the forward input" },
  { NULL }
};

static gboolean
global_avg_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                  GError **error)
{
  if (!check_input ("global_avg_pool2d", "input", &in[0], error))
    return FALSE;
  int64_t od[4] = { in[0].dims[0], in[0].dims[1], 1, 1 };
  tw_tinfo_set (&out[0], in[0].dtype, 4, od);
  return TRUE;
}

static gboolean
global_avg_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                    tw_tensor *const *out, GError **error)
{
  const tw_tensor *x = in[0];
  int64_t planes = x->shape[0] * x->shape[1], HW = x->shape[2] * x->shape[3];
  if (x->dtype == TW_F32)
    global_avg_forward_f32 (planes, HW, tw_conv_threads (ctx), tw_tensor_f32 (x),
                            tw_tensor_f32 (out[0]));
  else
    global_avg_forward_f64 (planes, HW, tw_conv_threads (ctx), tw_tensor_f64 (x),
                            tw_tensor_f64 (out[0]));
  return TRUE;
}

static gboolean
global_avg_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                     tw_val *const *out, tw_val *const *gout, const gboolean *needs,
                     tw_val **gin)
{
  if (gout[0] == NULL || !needs[0])
    return TRUE;
  const tw_tinfo *x = tw_val_info (e, in[0]);
  tw_attrs *ga = tw_attrs_new ();
  tw_attrs_set_int (ga, "in_h", x->dims[2]);
  tw_attrs_set_int (ga, "in_w", x->dims[3]);
  gin[0] = tw_emit1 (e, "global_avg_pool2d_grad", ga, gout[0]);
  tw_attrs_free (ga);
  return gin[0] != NULL;
}

static void
global_avg_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out,
                 int n_out, tw_cost *cost)
{
  io_bytes (in, n_in, out, n_out, cost);
  cost->flops = (double) tw_tinfo_numel (&in[0], NULL);
}

static const tw_op_def global_avg_def = {
  .name = "global_avg_pool2d",
  .category = "Pooling",
  .doc = "Mean over H and W: [N, C, H, W] -> [N, C, 1, 1] (nn.AdaptiveAvgPool2d(1))",
  .attrs = global_avg_attrs,
  .min_inputs = 1,
  .max_inputs = 1,
  .input_names = x_inputs,
  .n_outputs = 1,
  .infer = global_avg_infer,
  .forward = global_avg_forward,
  .backward = global_avg_backward,
  .cost = global_avg_cost,
  .onnx_name = "GlobalAveragePool",
};

/* global_avg_pool2d_grad (dy [N, C, 1, 1]) -> dx [N, C, in_h, in_w] */
static gboolean
global_avg_grad_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                       GError **error)
{
  const char *op = "global_avg_pool2d_grad";
  tw_tinfo x;
  if (!check_input (op, "dy", &in[0], error))
    return FALSE;
  if (in[0].dims[2] != 1 || in[0].dims[3] != 1)
    {
      g_autofree char *s = tw_tinfo_to_string (&in[0]);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE, "%s expects dy [N, C, 1, 1], got %s",
                   op, s);
      return FALSE;
    }
  grad_input_shape (a, &in[0], &x);
  if (x.dims[2] < 1 || x.dims[3] < 1)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "%s: in_h and in_w must be positive, got %" G_GINT64_FORMAT " and %"
                   G_GINT64_FORMAT, op, x.dims[2], x.dims[3]);
      return FALSE;
    }
  out[0] = x;
  return TRUE;
}

static gboolean
global_avg_grad_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                         tw_tensor *const *out, GError **error)
{
  const tw_tensor *dx = out[0];
  int64_t planes = dx->shape[0] * dx->shape[1], HW = dx->shape[2] * dx->shape[3];
  if (dx->dtype == TW_F32)
    global_avg_backward_f32 (planes, HW, tw_conv_threads (ctx), tw_tensor_f32 (in[0]),
                             tw_tensor_f32 (dx));
  else
    global_avg_backward_f64 (planes, HW, tw_conv_threads (ctx), tw_tensor_f64 (in[0]),
                             tw_tensor_f64 (dx));
  return TRUE;
}

static void
global_avg_grad_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out,
                      int n_out, tw_cost *cost)
{
  io_bytes (in, n_in, out, n_out, cost);
  cost->flops = (double) tw_tinfo_numel (&out[0], NULL);
}

static const tw_op_def global_avg_grad_def = {
  .name = "global_avg_pool2d_grad",
  .category = "Pooling",
  .doc = "Gradient of global_avg_pool2d: dy / (H W) broadcast over each plane",
  .attrs = global_avg_grad_attrs,
  .min_inputs = 1,
  .max_inputs = 1,
  .input_names = dy_inputs,
  .n_outputs = 1,
  .infer = global_avg_grad_infer,
  .forward = global_avg_grad_forward,
  .cost = global_avg_grad_cost,
  .flags = TW_OP_INTERNAL,
};

void
tw_ops_register_pool (void)
{
  tw_op_register (&max_pool_def);
  tw_op_register (&max_pool_grad_def);
  tw_op_register (&avg_pool_def);
  tw_op_register (&avg_pool_grad_def);
  tw_op_register (&global_avg_def);
  tw_op_register (&global_avg_grad_def);
}
