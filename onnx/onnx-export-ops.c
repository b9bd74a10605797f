/* onnx-export-ops.c — the ONNX forms of the ops onnx-export.c does not
 * write itself: element-wise and activation ops, casts and selections,
 * shape ops, the reductions of reduce.c and reduce-more.c, the index ops of
 * index-more.c, nll_loss, pad and resize; and the ops with no ONNX form at
 * all (tw_onnx_export_refusal).
 *
 * Where ONNX moved an attribute to an input the form follows opsets 13..17:
 * Squeeze, Unsqueeze, Clip, TopK, CumSum and Trilu take theirs as inputs
 * there, ReduceMin, ReduceProd and ReduceLogSumExp their axes as an
 * attribute (an input from 18 only), HardSwish and Trilu exist from 14
 * (13: x times HardSigmoid (x / 6 + 1/2); a Where of a constant mask of
 * the matrix dims), and the add and mul reductions of ScatterElements and
 * ScatterND come with 16. */
#include "onnx/onnx-export.h"
#include "onnx/onnx-export-private.h"

#include "onnx/onnx-read.h"

#include <string.h>

/* The public ops the exporter refuses whatever their attributes, and why
 * (one place: the exporter's message and tests/onnx/test-export-coverage.c
 * read it).  The losses: an exported graph is the inference graph (ONNX's
 * SoftmaxCrossEntropyLoss would fit cross_entropy, but nothing of MSE or
 * BCE with logits; nll_loss, a node of an inference graph too, exports). */
static const char *const ex_refused[][2] = {
  { "cross_entropy",
    "a loss is training-only and is not exported; predict from the node it scores" },
  { "mse_loss", "a loss is training-only and is not exported; predict from the node it scores" },
  { "bce_with_logits",
    "a loss is training-only and is not exported; predict from the node it scores" },
};

const char *
tw_onnx_export_refusal (const char *op)
{
  for (gsize i = 0; i < G_N_ELEMENTS (ex_refused); i++)
    if (strcmp (ex_refused[i][0], op) == 0)
      return ex_refused[i][1];
  return NULL;
}

/* One-to-one element-wise ops: the registry's onnx_name, inputs as they are. */
static const char *const ex_plain[] = {
  "abs",     "ceil",    "floor",           "erf",       "sign", "pow", "maximum",
  "minimum", "hardmax", "gather_elements", "gather_nd", NULL
};

static const char *
ex_axis_const (tw_ex_ctx *ex, const char *name, int64_t v)
{
  return tw_ex_const (ex, name, TW_I64, 0, NULL, &v);
}

/* Cast v to ONNX's BOOL (twb's u8 masks). */
static const char *
ex_to_bool (tw_ex_ctx *ex, const tw_node *n, const char *v, const char *what)
{
  const char *b = tw_ex_printf (ex, "%s/%s_bool", n->id, what);
  Onnx__NodeProto *c = tw_ex_node1 (ex, "Cast", b, (const char *const[]){ v, NULL });
  tw_ex_attr_int (ex, c, "to", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL);
  return b;
}

static void
ex_attr_string (tw_ex_ctx *ex, Onnx__NodeProto *o, const char *name, const char *v)
{
  Onnx__AttributeProto *a = tw_ex_alloc (ex, sizeof *a);
  onnx__attribute_proto__init (a);
  a->name = tw_ex_strdup (ex, name);
  a->has_type = TRUE;
  a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
  a->has_s = TRUE;
  a->s.data = (uint8_t *) tw_ex_strdup (ex, v);
  a->s.len = strlen (v);
  g_assert (o->n_attribute < EX_MAX_NODE_ATTRS);
  o->attribute[o->n_attribute++] = a;
}

static gboolean
ex_scatter_reduction (tw_ex_ctx *ex, const tw_node *n, Onnx__NodeProto *o, GString *problems)
{
  const char *red = tw_attrs_get_string (n->resolved, "reduction", "none");
  if (strcmp (red, "none") == 0)
    return TRUE;
  if (ex->opset < 16)
    {
      g_string_append_printf (problems,
                              "node %s (%s): reduction \"%s\" needs opset 16 or later (ONNX "
                              "adds it there); export with --opset 16\n",
                              n->id, n->op_name, red);
      return FALSE;
    }
  ex_attr_string (ex, o, "reduction", red);
  return TRUE;
}

gboolean
tw_ex_emit_more (tw_ex_ctx *ex, const tw_node *n, GString *problems, gboolean *ok)
{
  const tw_attrs *a = n->resolved;
  const char *id = n->id;
  const tw_tinfo *xi = n->n_inputs > 0 ? tw_ex_input_info (ex, n, 0) : NULL;
  const char *x = n->n_inputs > 0 ? tw_ex_input (ex, n, 0) : NULL;
  int r = xi ? xi->ndim : 0;
  const tw_tinfo *yi = &n->out_info[0];
  *ok = TRUE;

  if (g_strv_contains (ex_plain, n->op_name))
    {
      const char *ins[3] = { x, n->n_inputs > 1 ? tw_ex_input (ex, n, 1) : NULL, NULL };
      Onnx__NodeProto *o = tw_ex_node1 (ex, n->op->onnx_name, id, ins);
      if (tw_ex_is (n, "hardmax") || tw_ex_is (n, "gather_elements"))
        tw_ex_attr_int (ex, o, "axis",
                        tw_attrs_get_int (a, "axis", tw_ex_is (n, "hardmax") ? -1 : 0));
      if (tw_ex_is (n, "gather_nd"))
        tw_ex_attr_int (ex, o, "batch_dims", tw_attrs_get_int (a, "batch_dims", 0));
      return TRUE;
    }
  if (tw_ex_is (n, "clip") || tw_ex_is (n, "relu6"))
    {
      /* Clip takes min and max as inputs (0-d, x's type) from opset 11. */
      gboolean r6 = tw_ex_is (n, "relu6");
      const char *lo = "", *hi = "";
      if (r6 || tw_attrs_has (a, "min"))
        lo = tw_ex_const_scalar (ex, tw_ex_printf (ex, "%s/min", id), xi->dtype,
                                 r6 ? 0.0 : tw_attrs_get_float (a, "min", 0));
      if (r6 || tw_attrs_has (a, "max"))
        hi = tw_ex_const_scalar (ex, tw_ex_printf (ex, "%s/max", id), xi->dtype,
                                 r6 ? 6.0 : tw_attrs_get_float (a, "max", 0));
      tw_ex_node1 (ex, "Clip", id, (const char *const[]){ x, lo, hi, NULL });
      return TRUE;
    }
  if (tw_ex_is (n, "hard_sigmoid") || (tw_ex_is (n, "hard_swish") && ex->opset < 14))
    {
      gboolean sw = tw_ex_is (n, "hard_swish");
      const char *hs = sw ? tw_ex_printf (ex, "%s/hard_sigmoid", id) : id;
      Onnx__NodeProto *o = tw_ex_node1 (ex, "HardSigmoid", hs, (const char *const[]){ x, NULL });
      tw_ex_attr_float (ex, o, "alpha", sw ? 1.0 / 6.0 : tw_attrs_get_float (a, "alpha", 0.2));
      tw_ex_attr_float (ex, o, "beta", sw ? 0.5 : tw_attrs_get_float (a, "beta", 0.5));
      if (sw)
        tw_ex_node1 (ex, "Mul", id, (const char *const[]){ x, hs, NULL });
      return TRUE;
    }
  if (tw_ex_is (n, "hard_swish"))
    {
      tw_ex_node1 (ex, "HardSwish", id, (const char *const[]){ x, NULL });
      return TRUE;
    }
  if (tw_ex_is (n, "cast"))
    {
      Onnx__NodeProto *o = tw_ex_node1 (ex, "Cast", id, (const char *const[]){ x, NULL });
      tw_ex_attr_int (ex, o, "to", tw_ex_onnx_dtype (yi->dtype));
      return TRUE;
    }
  if (tw_ex_is (n, "where"))
    {
      const char *c = ex_to_bool (ex, n, x, "cond");
      tw_ex_node1 (
        ex, "Where", id,
        (const char *const[]){ c, tw_ex_input (ex, n, 1), tw_ex_input (ex, n, 2), NULL });
      return TRUE;
    }
  if (tw_ex_is (n, "squeeze") || tw_ex_is (n, "unsqueeze"))
    {
      /* Axes as an input from opset 13; squeeze's absent axes are the
       * size-1 dims of x as twb sees them (never the batch). */
      int64_t axes[TW_MAX_DIMS];
      int na = tw_attrs_get_ints (a, "axes", axes, TW_MAX_DIMS);
      if (na < 0)
        {
          na = 0;
          for (int d = 0; d < r; d++)
            if (xi->dims[d] == 1)
              axes[na++] = d;
        }
      const char *ax = tw_ex_const_i64 (ex, tw_ex_printf (ex, "%s/axes", id), na, axes);
      tw_ex_node1 (ex, tw_ex_is (n, "squeeze") ? "Squeeze" : "Unsqueeze", id,
                   (const char *const[]){ x, ax, NULL });
      return TRUE;
    }
  if (tw_ex_is (n, "expand"))
    {
      int64_t shape[TW_ATTR_MAX_LIST];
      int ns = tw_attrs_get_ints (a, "shape", shape, TW_ATTR_MAX_LIST);
      const char *s = tw_ex_const_i64 (ex, tw_ex_printf (ex, "%s/shape", id), ns, shape);
      tw_ex_node1 (ex, "Expand", id, (const char *const[]){ x, s, NULL });
      return TRUE;
    }
  if (tw_ex_is (n, "min") || tw_ex_is (n, "prod") || tw_ex_is (n, "logsumexp"))
    {
      /* These take their axes as an attribute up to opset 17. */
      int64_t axes[TW_ATTR_MAX_LIST];
      int na = tw_attrs_get_ints (a, "axes", axes, TW_ATTR_MAX_LIST);
      Onnx__NodeProto *o = tw_ex_node1 (ex, n->op->onnx_name, id, (const char *const[]){ x, NULL });
      if (na > 0)
        tw_ex_attr_ints (ex, o, "axes", na, axes);
      tw_ex_attr_int (ex, o, "keepdims", tw_attrs_get_bool (a, "keepdim", FALSE));
      return TRUE;
    }
  if (tw_ex_is (n, "argmin"))
    {
      Onnx__NodeProto *o = tw_ex_node1 (ex, "ArgMin", id, (const char *const[]){ x, NULL });
      tw_ex_attr_int (ex, o, "axis", tw_attrs_get_int (a, "axis", 0));
      tw_ex_attr_int (ex, o, "keepdims", tw_attrs_get_bool (a, "keepdims", TRUE));
      tw_ex_attr_int (ex, o, "select_last_index",
                      tw_attrs_get_bool (a, "select_last_index", FALSE));
      return TRUE;
    }
  if (tw_ex_is (n, "cumsum"))
    {
      const char *ax = n->n_inputs > 1 ? tw_ex_input (ex, n, 1)
                                       : ex_axis_const (ex, tw_ex_printf (ex, "%s/axis", id),
                                                        tw_attrs_get_int (a, "axis", 0));
      Onnx__NodeProto *o = tw_ex_node1 (ex, "CumSum", id, (const char *const[]){ x, ax, NULL });
      tw_ex_attr_int (ex, o, "exclusive", tw_attrs_get_bool (a, "exclusive", FALSE));
      tw_ex_attr_int (ex, o, "reverse", tw_attrs_get_bool (a, "reverse", FALSE));
      return TRUE;
    }
  if (tw_ex_is (n, "trilu"))
    {
      int64_t kk = tw_attrs_get_int (a, "k", 0);
      gboolean upper = tw_attrs_get_bool (a, "upper", TRUE);
      if (ex->opset < 14)
        {
          /* Trilu comes with opset 14: Where of a constant mask of the last
           * two dims (fixed), x, and 0 (NaN outside the triangle is 0 too). */
          int64_t h = xi->dims[r - 2], w = xi->dims[r - 1];
          if (h == TW_DIM_N || w == TW_DIM_N)
            {
              g_string_append_printf (problems,
                                      "node %s (trilu): before opset 14 the matrix dims must be "
                                      "fixed (the batch is one of them); export with --opset 14 "
                                      "or a fixed batch\n",
                                      id);
              *ok = FALSE;
              return TRUE;
            }
          g_autofree guint8 *m = g_new0 (guint8, MAX (h * w, 1));
          for (int64_t i = 0; i < h; i++)
            for (int64_t j = 0; j < w; j++)
              m[i * w + j] = upper ? j - i >= kk : j - i <= kk;
          const char *mu8 =
            tw_ex_const (ex, tw_ex_printf (ex, "%s/mask", id), TW_U8, 2, (int64_t[]){ h, w }, m);
          const char *mb = ex_to_bool (ex, n, mu8, "mask");
          const char *z = tw_ex_const_scalar (ex, tw_ex_printf (ex, "%s/zero", id), xi->dtype, 0);
          tw_ex_node1 (ex, "Where", id, (const char *const[]){ mb, x, z, NULL });
          return TRUE;
        }
      const char *k = ex_axis_const (ex, tw_ex_printf (ex, "%s/k", id), kk);
      Onnx__NodeProto *o = tw_ex_node1 (ex, "Trilu", id, (const char *const[]){ x, k, NULL });
      tw_ex_attr_int (ex, o, "upper", upper);
      return TRUE;
    }
  if (tw_ex_is (n, "topk"))
    {
      /* K is a 1-element input from opset 10; twb sorts, ties to the lower
       * index, as ONNX does. */
      int64_t k = tw_attrs_get_int (a, "k", 1);
      const char *kc = tw_ex_const_i64 (ex, tw_ex_printf (ex, "%s/k", id), 1, &k);
      Onnx__NodeProto *o = tw_ex_node (
        ex, "TopK", id, (const char *const[]){ x, kc, NULL },
        (const char *const[]){ tw_ex_output (ex, n, 0), tw_ex_output (ex, n, 1), NULL });
      tw_ex_attr_int (ex, o, "axis", tw_attrs_get_int (a, "axis", -1));
      tw_ex_attr_int (ex, o, "largest", tw_attrs_get_bool (a, "largest", TRUE));
      tw_ex_attr_int (ex, o, "sorted", 1);
      return TRUE;
    }
  if (tw_ex_is (n, "eye_like"))
    {
      Onnx__NodeProto *o = tw_ex_node1 (ex, "EyeLike", id, (const char *const[]){ x, NULL });
      tw_ex_attr_int (ex, o, "k", tw_attrs_get_int (a, "k", 0));
      tw_ex_attr_int (ex, o, "dtype", tw_ex_onnx_dtype (yi->dtype));
      return TRUE;
    }
  if (tw_ex_is (n, "scatter_elements") || tw_ex_is (n, "scatter_nd"))
    {
      gboolean el = tw_ex_is (n, "scatter_elements");
      Onnx__NodeProto *o = tw_ex_node1 (
        ex, el ? "ScatterElements" : "ScatterND", id,
        (const char *const[]){ x, tw_ex_input (ex, n, 1), tw_ex_input (ex, n, 2), NULL });
      if (el)
        tw_ex_attr_int (ex, o, "axis", tw_attrs_get_int (a, "axis", 0));
      *ok = ex_scatter_reduction (ex, n, o, problems);
      return TRUE;
    }
  if (tw_ex_is (n, "nll_loss"))
    {
      const char *ins[4] = { x, tw_ex_input (ex, n, 1),
                             n->n_inputs > 2 ? tw_ex_input (ex, n, 2) : NULL, NULL };
      Onnx__NodeProto *o = tw_ex_node1 (ex, "NegativeLogLikelihoodLoss", id, ins);
      ex_attr_string (ex, o, "reduction", tw_attrs_get_string (a, "reduction", "mean"));
      if (tw_attrs_has (a, "ignore_index"))
        tw_ex_attr_int (ex, o, "ignore_index", tw_attrs_get_int (a, "ignore_index", 0));
      return TRUE;
    }
  if (tw_ex_is (n, "pad"))
    {
      /* twb's pads: the begins of the last k dims, then their ends; ONNX's:
       * every dim's begin, then every dim's end. */
      int64_t pads[TW_ATTR_MAX_LIST], op[2 * TW_MAX_DIMS] = { 0 };
      int np = tw_attrs_get_ints (a, "pads", pads, TW_ATTR_MAX_LIST);
      int k = np / 2;
      for (int i = 0; i < k; i++)
        {
          op[r - k + i] = pads[i];
          op[2 * r - k + i] = pads[k + i];
        }
      const char *pc = tw_ex_const_i64 (ex, tw_ex_printf (ex, "%s/pads", id), 2 * r, op);
      const char *mode = tw_attrs_get_string (a, "mode", "constant");
      const char *v = strcmp (mode, "constant") == 0
                        ? tw_ex_const_scalar (ex, tw_ex_printf (ex, "%s/value", id), xi->dtype,
                                              tw_attrs_get_float (a, "value", 0))
                        : NULL;
      Onnx__NodeProto *o = tw_ex_node1 (ex, "Pad", id, (const char *const[]){ x, pc, v, NULL });
      ex_attr_string (ex, o, "mode", mode);
      return TRUE;
    }
  if (tw_ex_is (n, "resize"))
    {
      /* Resize-13: X, roi (unused here), scales of every dim or sizes of
       * every dim; twb's name the spatial dims (after N and C). */
      const tw_attr_value *sc = tw_attrs_lookup (a, "scales");
      int64_t sz[TW_ATTR_MAX_LIST];
      int nz = tw_attrs_get_ints (a, "sizes", sz, TW_ATTR_MAX_LIST);
      const char *scales = "", *sizes = NULL;
      if (sc != NULL)
        {
          float f[TW_MAX_DIMS];
          int64_t dim = r;
          for (int d = 0; d < r; d++)
            f[d] = d < 2 ? 1.0f : (float) sc->floats[d - (r - sc->n)];
          scales = tw_ex_const (ex, tw_ex_printf (ex, "%s/scales", id), TW_F32, 1, &dim, f);
        }
      else
        {
          int64_t s[TW_MAX_DIMS];
          for (int d = 0; d < r; d++)
            {
              s[d] = d < 2 ? xi->dims[d] : sz[d - (r - nz)];
              if (s[d] == TW_DIM_N)
                {
                  g_string_append_printf (problems,
                                          "node %s (resize): sizes with the batch symbolic (ONNX's "
                                          "sizes name every dim before opset 18; export with a "
                                          "fixed batch, or give scales)\n",
                                          id);
                  *ok = FALSE;
                  return TRUE;
                }
            }
          sizes = tw_ex_const_i64 (ex, tw_ex_printf (ex, "%s/sizes", id), r, s);
        }
      Onnx__NodeProto *o =
        tw_ex_node1 (ex, "Resize", id, (const char *const[]){ x, "", scales, sizes, NULL });
      ex_attr_string (ex, o, "mode", tw_attrs_get_string (a, "mode", "nearest"));
      ex_attr_string (ex, o, "coordinate_transformation_mode",
                      tw_attrs_get_string (a, "coordinate_transformation_mode", "half_pixel"));
      ex_attr_string (ex, o, "nearest_mode",
                      tw_attrs_get_string (a, "nearest_mode", "round_prefer_floor"));
      return TRUE;
    }
  return FALSE;
}
