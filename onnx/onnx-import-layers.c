/* onnx-import-layers.c — the ONNX ops that become twb layers with
 * parameters or need a layout translation: Conv (1-D through conv2d),
 * Gemm and MatMul (linear, or matmul of computed values),
 * BatchNormalization, MaxPool / AveragePool (see onnx-import.h). */
#define G_LOG_DOMAIN "tw-onnx"

#include "onnx/onnx-import-private.h"

#include <string.h>

static const tw_imp_val *
const_input (tw_imp *im, gsize i, const char *what)
{
  const tw_imp_val *v = tw_imp_input (im, i);
  if (v == NULL || v->kind != TW_IMP_CONST)
    {
      tw_imp_problem (im, "%s must be an initializer or a constant", what);
      return NULL;
    }
  if (!tw_dtype_is_float (v->c->dtype))
    {
      tw_imp_problem (im, "%s has dtype %s, twb parameters are floating-point", what,
                      tw_dtype_name (v->c->dtype));
      return NULL;
    }
  return v;
}

/* Spatial pads [top, left, bottom, right] as twb's symmetric [ph, pw]; a
 * 1-D op's [begin, end] as [0, p] (it runs as 2-D over [N, C, 1, L]). */
static gboolean
sym_pads (tw_imp *im, int nsp, int64_t out[2])
{
  int64_t p[4];
  if (!tw_imp_attr_ints (im, "pads", 2 * nsp, 0, p, NULL))
    return FALSE;
  if (p[0] != p[nsp] || (nsp == 2 && p[1] != p[3]))
    {
      g_autofree char *sp = tw_shape_to_string (2 * nsp, p);
      tw_imp_problem (im, "asymmetric pads %s (twb pads each side alike)", sp);
      return FALSE;
    }
  out[0] = nsp == 2 ? p[0] : 0, out[1] = nsp == 2 ? p[1] : p[0];
  if (!tw_imp_attr_string_is (im, "auto_pad", "NOTSET") &&
      !tw_imp_attr_string_is (im, "auto_pad", "VALID"))
    {
      g_autofree char *ap = tw_imp_attr_string_dup (im, "auto_pad");
      tw_imp_problem (im, "auto_pad %s is not supported (only explicit pads)", ap);
      return FALSE;
    }
  return TRUE;
}

/* An ints attribute of nsp (1 or 2) spatial entries as 2-D [h, w]: a 1-D
 * op's [v] as [lead, v]. */
static gboolean
spatial_ints (tw_imp *im, const char *name, int nsp, int64_t d, int64_t lead, int64_t out[2])
{
  int64_t v[2];
  if (!tw_imp_attr_ints (im, name, nsp, d, v, NULL))
    return FALSE;
  out[0] = nsp == 2 ? v[0] : lead, out[1] = nsp == 2 ? v[1] : v[0];
  return TRUE;
}

/* A 1-D op on x [N, C, L] runs as 2-D on [N, C, 1, L]: x unsqueezed at
 * dim 2 (a value borrowed from link), then the output squeezed. */
static const tw_imp_val *
as_2d (tw_imp *im, const tw_imp_val *x, tw_imp_val *link)
{
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_ints (a, "axes", 1, (int64_t[]){ 2 });
  tw_node *u = tw_imp_emit1 (im, NULL, "unsqueeze", a, x);
  if (u == NULL)
    return NULL;
  *link = (tw_imp_val){ .kind = TW_IMP_DYN, .ref = u->id };
  return link;
}

static void
back_to_1d (tw_imp *im, const tw_node *y)
{
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_ints (a, "axes", 1, (int64_t[]){ 2 });
  tw_imp_emitn (im, "squeeze", a, (const char *const[]){ y->id, NULL }, 1);
}

void
tw_imp_conv (tw_imp *im)
{
  static const char *const known[] = { "kernel_shape", "strides",  "pads", "dilations",
                                       "group",        "auto_pad", NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "the input"),
                   *w = const_input (im, 1, "the weight");
  const tw_imp_val *b = tw_imp_input (im, 2);
  if (b && !(b = const_input (im, 2, "the bias")))
    return;
  if (x == NULL || w == NULL)
    return;
  if (w->c->ndim != 4 && w->c->ndim != 3)
    {
      tw_imp_problem (im, "a %d-D convolution (twb has conv2d, and 1-D through it)",
                      w->c->ndim - 2);
      return;
    }
  int nsp = w->c->ndim - 2;
  int64_t k[2], s[2], d[2], p[2];
  if (!spatial_ints (im, "kernel_shape", nsp, 0, 1, k) ||
      !spatial_ints (im, "strides", nsp, 1, 1, s) ||
      !spatial_ints (im, "dilations", nsp, 1, 1, d) || !sym_pads (im, nsp, p))
    return;
  int64_t wshape[4] = { w->c->shape[0], w->c->shape[1], nsp == 2 ? w->c->shape[2] : 1,
                        w->c->shape[nsp == 2 ? 3 : 2] };
  if (tw_onnx_attr (im->n, "kernel_shape") && (k[0] != wshape[2] || k[1] != wshape[3]))
    {
      tw_imp_problem (im, "kernel_shape disagrees with the weight's shape");
      return;
    }
  int64_t group = tw_imp_attr_int (im, "group", 1);
  if (im->failed)
    return;
  tw_imp_val link;
  if (nsp == 1 && (x = as_2d (im, x, &link)) == NULL)
    return;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, "out_channels", w->c->shape[0]);
  tw_attrs_set_ints (a, "kernel_size", 2, wshape + 2);
  tw_attrs_set_ints (a, "stride", 2, s);
  tw_attrs_set_ints (a, "padding", 2, p);
  tw_attrs_set_ints (a, "dilation", 2, d);
  tw_attrs_set_int (a, "groups", group);
  tw_attrs_set_bool (a, "bias", b != NULL);
  tw_node *node = tw_imp_emit1 (im, w, "conv2d", a, x);
  if (node == NULL)
    return;
  g_autoptr (tw_tensor) wf = tw_imp_as_f32 (w->c);
  tw_imp_add_weight (im, node, "weight", tw_tensor_reshape (wf, 4, wshape));
  if (nsp == 1)
    back_to_1d (im, node);
  if (b)
    tw_imp_add_weight (im, node, "bias", tw_imp_as_f32 (b->c));
}

/* ONNX's [out] or [1, out] bias (or a scalar) as [n] times beta. */
tw_tensor *
tw_imp_bias_vector (tw_imp *im, const tw_tensor *c, int64_t n, double beta)
{
  int64_t numel = tw_tensor_numel (c);
  if (!(numel == n || numel == 1) || (c->ndim > 1 && c->shape[c->ndim - 1] != numel))
    {
      g_autofree char *sc = tw_shape_to_string (c->ndim, c->shape);
      tw_imp_problem (
        im, "a bias of shape %s for %" G_GINT64_FORMAT " outputs (twb adds one per output)", sc, n);
      return NULL;
    }
  tw_tensor *out = tw_tensor_new (TW_F32, 1, &n);
  for (int64_t i = 0; i < n; i++)
    tw_tensor_f32 (out)[i] = (float) (beta * tw_tensor_get_flat (c, numel == 1 ? 0 : i));
  return out;
}

/* w [rows, cols] (transposed when trans) times alpha, as f32 [out, in]. */
static tw_tensor *
linear_weight (const tw_tensor *w, gboolean trans, double alpha)
{
  g_autoptr (tw_tensor) f = tw_imp_as_f32 (w);
  g_autoptr (tw_tensor) t = trans ? tw_tensor_transpose (f, 0, 1) : tw_tensor_ref (f);
  tw_tensor *c = tw_tensor_clone (t);
  if (alpha != 1.0)
    for (int64_t i = 0, n = tw_tensor_numel (c); i < n; i++)
      tw_tensor_f32 (c)[i] *= (float) alpha;
  return c;
}

void
tw_imp_gemm (tw_imp *im)
{
  static const char *const known[] = { "alpha", "beta", "transA", "transB", NULL };
  /* Before opset 7, broadcast=1 asked for the broadcasting of C that is
   * the rule from 7 on (and 0 for a C of the full shape, which is too). */
  static const char *const known_6[] = { "alpha", "beta", "transA", "transB", "broadcast", NULL };
  tw_imp_check_attrs (im, im->opset < 7 ? known_6 : known);
  if (im->fixed)
    {
      const tw_imp_val *a0 = tw_imp_input (im, 0), *b0 = tw_imp_input (im, 1),
                       *c0 = tw_imp_input (im, 2);
      if (a0 && b0 &&
          (a0->kind != TW_IMP_DYN || b0->kind != TW_IMP_CONST || (c0 && c0->kind != TW_IMP_CONST) ||
           tw_imp_attr_int (im, "transA", 0) != 0))
        {
          tw_imp_gemm_values (im);
          return;
        }
    }
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "A"), *w = const_input (im, 1, "B (the weight)");
  const tw_imp_val *c = tw_imp_input (im, 2);
  if (c && !(c = const_input (im, 2, "C (the bias)")))
    return;
  double alpha = tw_imp_attr_float (im, "alpha", 1.0f), beta = tw_imp_attr_float (im, "beta", 1.0f);
  int64_t ta = tw_imp_attr_int (im, "transA", 0), tb = tw_imp_attr_int (im, "transB", 0);
  if (ta != 0)
    tw_imp_problem (im, "transA=1 (twb's linear takes [batch, in])");
  if (x == NULL || w == NULL || im->failed)
    return;
  if (w->c->ndim != 2)
    {
      tw_imp_problem (im, "B must be 2-D");
      return;
    }
  int64_t nout = tb ? w->c->shape[0] : w->c->shape[1];
  g_autoptr (tw_tensor) bias = c ? tw_imp_bias_vector (im, c->c, nout, beta) : NULL;
  if (c && bias == NULL)
    return;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, "out_features", nout);
  tw_attrs_set_bool (a, "bias", bias != NULL);
  tw_node *node = tw_imp_emit1 (im, w, "linear", a, x);
  if (node == NULL)
    return;
  tw_imp_add_weight (im, node, "weight", linear_weight (w->c, !tb, alpha));
  if (bias)
    tw_imp_add_weight (im, node, "bias", g_steal_pointer (&bias));
}

/* MatMul (x, W) with W an initializer [in, out]: linear without bias; a
 * following Add of a [out] constant becomes its bias (import_binary). */
void
tw_imp_matmul (tw_imp *im)
{
  tw_imp_check_attrs (im, NULL);
  const tw_imp_val *x = tw_imp_input (im, 0), *w = tw_imp_input (im, 1);
  if (x && w && x->kind == TW_IMP_DYN && w->kind == TW_IMP_DYN)
    {
      const char *in[] = { x->ref, w->ref, NULL };
      tw_imp_emitn (im, "matmul", NULL, in, 1);
      return;
    }
  if (x && w &&
      (x->kind == TW_IMP_CONST || w->kind == TW_IMP_DYN || w->c->ndim != 2 ||
       !tw_dtype_is_float (w->c->dtype)))
    {
      /* Not a layer's weight: a product of values, constants as nodes. */
      const char *ra = tw_imp_ref (im, x), *rb = ra ? tw_imp_ref (im, w) : NULL;
      if (ra && rb)
        tw_imp_emitn (im, "matmul", NULL, (const char *const[]){ ra, rb, NULL }, 1);
      return;
    }
  x = tw_imp_dyn_input (im, 0, "A");
  w = const_input (im, 1, "B (the weight)");
  if (x == NULL || w == NULL)
    return;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, "out_features", w->c->shape[1]);
  tw_attrs_set_bool (a, "bias", FALSE);
  tw_node *node = tw_imp_emit1 (im, w, "linear", a, x);
  if (node == NULL)
    return;
  tw_imp_add_weight (im, node, "weight", linear_weight (w->c, TRUE, 1.0));
  g_hash_table_add (im->bias_free, g_strdup (node->id));
}

void
tw_imp_batch_norm (tw_imp *im)
{
  static const char *const known[] = { "epsilon", "momentum", "training_mode", "spatial", NULL };
  static const char *const known_6[] = { "epsilon", "momentum", "spatial", "is_test", NULL };
  tw_imp_check_attrs (im, im->opset < 7 ? known_6 : known);
  if (im->opset < 7 && tw_imp_attr_int (im, "is_test", 0) != 1)
    tw_imp_problem (im, "is_test=0 (the training form; import the inference graph)");
  if (im->fixed && im->opset >= 7 && tw_imp_attr_int (im, "training_mode", 0) == 0)
    for (gsize k = 1; k <= 4; k++)
      if (tw_imp_input (im, k) && tw_imp_input (im, k)->kind != TW_IMP_CONST)
        {
          for (gsize j = 1; j < im->n->n_output; j++)
            if (tw_imp_is_used (im, j))
              tw_imp_problem (im, "output %" G_GSIZE_FORMAT " (running statistics) is used", j);
          if (!im->failed)
            tw_imp_batch_norm_values (im, tw_imp_attr_float (im, "epsilon", 1e-5f));
          return;
        }
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "X");
  const tw_imp_val *p[4] = { const_input (im, 1, "scale"), const_input (im, 2, "B"),
                             const_input (im, 3, "input_mean"), const_input (im, 4, "input_var") };
  if (tw_imp_attr_int (im, "training_mode", 0) != 0)
    tw_imp_problem (im, "training_mode=1 (import the inference graph)");
  if (tw_imp_attr_int (im, "spatial", 1) != 1)
    tw_imp_problem (im, "spatial=0");
  for (gsize k = 1; k < im->n->n_output; k++)
    if (tw_imp_is_used (im, k))
      tw_imp_problem (im, "output %" G_GSIZE_FORMAT " (running statistics) is used", k);
  double eps = tw_imp_attr_float (im, "epsilon", 1e-5f),
         mom = tw_imp_attr_float (im, "momentum", 0.9f);
  if (x == NULL || !p[0] || !p[1] || !p[2] || !p[3] || im->failed)
    return;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_float (a, "eps", tw_imp_short_double ((float) eps));
  /* ONNX: running = running * momentum + batch * (1 - momentum); PyTorch's
   * (and twb's) momentum is the weight of the batch. */
  tw_attrs_set_float (a, "momentum",
                      tw_imp_short_double ((float) (1.0 - tw_imp_short_double ((float) mom))));
  tw_node *node = tw_imp_emit1 (im, p[0], "batch_norm", a, x);
  if (node == NULL)
    return;
  static const char *const names[] = { "weight", "bias", "running_mean", "running_var" };
  for (int k = 0; k < 4; k++)
    tw_imp_add_weight (im, node, names[k], tw_imp_as_f32 (p[k]->c));
}

void
tw_imp_pool (tw_imp *im, gboolean max)
{
  static const char *const known_max[] = { "kernel_shape", "strides",       "pads",     "dilations",
                                           "ceil_mode",    "storage_order", "auto_pad", NULL };
  static const char *const known_avg[] = { "kernel_shape",      "strides",  "pads", "ceil_mode",
                                           "count_include_pad", "auto_pad", NULL };
  tw_imp_check_attrs (im, max ? known_max : known_avg);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "X");
  const Onnx__AttributeProto *ks = tw_onnx_attr (im->n, "kernel_shape");
  int nsp = ks && ks->n_ints == 1 ? 1 : 2;
  int64_t k[2], s[2], d[2], p[2] = { 0, 0 }, b[2], e[2];
  if (!spatial_ints (im, "kernel_shape", nsp, 0, 1, k) ||
      !spatial_ints (im, "strides", nsp, 1, 1, s) || !spatial_ints (im, "dilations", nsp, 1, 1, d))
    return;
  if (tw_onnx_attr (im->n, "kernel_shape") == NULL)
    tw_imp_problem (im, "kernel_shape is missing");
  gboolean ceil_mode = tw_imp_attr_int (im, "ceil_mode", 0) != 0;
  if (ceil_mode && !max)
    tw_imp_problem (im, "ceil_mode=1 (the last window's divisor leaves out what is past the end)");
  if (tw_imp_attr_int (im, "storage_order", 0) != 0)
    tw_imp_problem (im, "storage_order=1");
  if (tw_imp_is_used (im, 1))
    tw_imp_problem (im, "the Indices output is used");
  int64_t cip = tw_imp_attr_int (im, "count_include_pad", 0);
  tw_tinfo info;
  if (x == NULL || im->failed || !tw_imp_dyn_info (im, x, &info))
    return;
  if (info.ndim != nsp + 2)
    {
      tw_imp_problem (im, "a rank-%d input for a %d-D pool", info.ndim, nsp);
      return;
    }
  int64_t hw[2] = { nsp == 2 ? info.dims[2] : 1, info.dims[info.ndim - 1] };
  if (!tw_imp_pool_pads (im, nsp, hw, k, s, d, ceil_mode, b, e))
    return;
  /* twb pads each side alike, by at most half the kernel; other pads go
   * into a pad node before the pool (the lowest float for max, zeros for
   * an average that counts them). */
  gboolean fits = TRUE;
  for (int i = 0; i < 2; i++)
    fits &= b[i] == e[i] && 2 * b[i] <= k[i];
  if (!fits && !max && !cip)
    {
      tw_imp_problem (im,
                      "pads [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "] + [%" G_GINT64_FORMAT
                      ", %" G_GINT64_FORMAT "] with count_include_pad=0 (twb pads each side alike, "
                      "by at most half the kernel)",
                      b[0], b[1], e[0], e[1]);
      return;
    }
  tw_imp_val link, plink;
  if (nsp == 1 && (x = as_2d (im, x, &link)) == NULL)
    return;
  if (fits)
    p[0] = b[0], p[1] = b[1];
  else
    {
      tw_attrs *pa = tw_attrs_new ();
      tw_attrs_set_ints (pa, "pads", 4, (int64_t[]){ b[0], b[1], e[0], e[1] });
      tw_attrs_set_float (pa, "value", max ? -G_MAXFLOAT : 0.0);
      tw_node *pn = tw_imp_emit1 (im, NULL, "pad", pa, x);
      if (pn == NULL)
        return;
      plink = (tw_imp_val){ .kind = TW_IMP_DYN, .ref = pn->id };
      x = &plink;
    }
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_ints (a, "kernel_size", 2, k);
  tw_attrs_set_ints (a, "stride", 2, s);
  tw_attrs_set_ints (a, "padding", 2, p);
  if (max)
    tw_attrs_set_ints (a, "dilation", 2, d);
  else
    tw_attrs_set_bool (a, "count_include_pad", cip != 0);
  tw_node *y = tw_imp_emit1 (im, NULL, max ? "max_pool2d" : "avg_pool2d", a, x);
  if (y && nsp == 1)
    back_to_1d (im, y);
}
