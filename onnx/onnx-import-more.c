/* onnx-import-more.c — translators for the ONNX ops beyond those the real
 * models need (comparisons, logic, trigonometry, activations and the other
 * element-wise ops ONNX's own test cases use).  The table is consulted after onnx-import.c's own.
 *
 * The ops without attributes (Sin, Equal, And, Not, IsNaN, Round, ...) map
 * one to one through the registry's onnx_name; here are those whose
 * attributes need reading (Elu, Selu, Celu, ThresholdedRelu, Shrink, IsInf,
 * Mod), PRelu (a constant per-channel slope becomes prelu's weight, any
 * other slope a second input of prelu_broadcast), the n-ary Sum and Mean
 * (chains of add, Mean scaled by 1 / n) and Pow of mixed element types. */
#define G_LOG_DOMAIN "tw-onnx"

#include "onnx/onnx-import-private.h"

#include <string.h>

/* A node of op on the references in[0..n) (n >= 1); attrs is taken. */
static tw_node *
emit_refs (tw_imp *im, const tw_imp_val *weight, const char *op, tw_attrs *attrs,
           const char *const *in, int n)
{
  tw_imp_val x = { .kind = TW_IMP_DYN, .ref = (char *) in[0] };
  tw_node *node = tw_imp_emit1 (im, weight, op, attrs, &x);
  for (int k = 1; node && k < n; k++)
    tw_graph_set_input_ref (im->graph, node, k, in[k]);
  return node;
}

/* ONNX's float attributes of an activation as twb's (same names), the
 * defaults ONNX's. */
static void
float_attr_op (tw_imp *im, const char *op, const char *const *names, const float *defaults)
{
  tw_imp_check_attrs (im, names);
  const char *x = tw_imp_ref_input (im, 0, "X");
  tw_attrs *a = tw_attrs_new ();
  for (int i = 0; names[i]; i++)
    tw_attrs_set_float (a, names[i],
                        tw_imp_short_double (tw_imp_attr_float (im, names[i], defaults[i])));
  if (x == NULL || im->failed)
    {
      tw_attrs_free (a);
      return;
    }
  emit_refs (im, NULL, op, a, &x, 1);
}

static void
import_elu (tw_imp *im)
{
  static const char *const names[] = { "alpha", NULL };
  float_attr_op (im, "elu", names, (const float[]){ 1.0f });
}

/* ONNX's Selu defaults, as the float attributes its reference reads. */
static void
import_selu (tw_imp *im)
{
  static const char *const names[] = { "alpha", "gamma", NULL };
  float_attr_op (im, "selu", names,
                 (const float[]){ 1.67326319217681884765625f, 1.05070102214813232421875f });
}

static void
import_celu (tw_imp *im)
{
  static const char *const names[] = { "alpha", NULL };
  float_attr_op (im, "celu", names, (const float[]){ 1.0f });
}

static void
import_thresholded_relu (tw_imp *im)
{
  static const char *const names[] = { "alpha", NULL };
  float_attr_op (im, "thresholded_relu", names, (const float[]){ 1.0f });
}

static void
import_shrink (tw_imp *im)
{
  static const char *const names[] = { "bias", "lambd", NULL };
  float_attr_op (im, "shrink", names, (const float[]){ 0.0f, 0.5f });
}

static void
import_isinf (tw_imp *im)
{
  static const char *const known[] = { "detect_positive", "detect_negative", NULL };
  tw_imp_check_attrs (im, known);
  const char *x = tw_imp_ref_input (im, 0, "X");
  int64_t pos = tw_imp_attr_int (im, "detect_positive", 1),
          neg = tw_imp_attr_int (im, "detect_negative", 1);
  if (x == NULL || im->failed)
    return;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_bool (a, "detect_positive", pos != 0);
  tw_attrs_set_bool (a, "detect_negative", neg != 0);
  emit_refs (im, NULL, "isinf", a, &x, 1);
}

static void
import_mod (tw_imp *im)
{
  static const char *const known[] = { "fmod", NULL };
  tw_imp_check_attrs (im, known);
  int64_t fm = tw_imp_attr_int (im, "fmod", 0);
  if (fm != 0 && fm != 1)
    tw_imp_problem (im, "fmod=%" G_GINT64_FORMAT " (ONNX allows 0 and 1)", fm);
  const char *a = tw_imp_ref_input (im, 0, "A"), *b = a ? tw_imp_ref_input (im, 1, "B") : NULL;
  if (a == NULL || b == NULL || im->failed)
    return;
  tw_attrs *at = tw_attrs_new ();
  tw_attrs_set_int (at, "fmod", fm);
  emit_refs (im, NULL, "mod", at, (const char *const[]){ a, b }, 2);
}

/* Sum and Mean of 1..n inputs (NumPy broadcasting): a chain of adds, then
 * Mean's 1 / n (one input: the input itself, through scale 1). */
static void
import_sum_mean (tw_imp *im, gboolean mean)
{
  tw_imp_check_attrs (im, NULL);
  gsize n = im->n->n_input;
  if (n == 0)
    {
      tw_imp_problem (im, "no inputs");
      return;
    }
  const char *acc = tw_imp_ref_input (im, 0, "input 0");
  for (gsize i = 1; acc && i < n; i++)
    {
      const char *b = tw_imp_ref_input (im, i, "every input");
      tw_node *node =
        b ? emit_refs (im, NULL, "add", NULL, (const char *const[]){ acc, b }, 2) : NULL;
      acc = node ? node->id : NULL;
    }
  if (acc == NULL || (n > 1 && !mean))
    return;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_float (a, "alpha", mean ? 1.0 / (double) n : 1.0);
  emit_refs (im, NULL, "scale", a, &acc, 1);
}

static void
import_sum (tw_imp *im)
{
  import_sum_mean (im, FALSE);
}
static void
import_mean (tw_imp *im)
{
  import_sum_mean (im, TRUE);
}

/* The channel count C when the constant slope s is one per channel of x
 * (dim 1): [C] before opset 7 (PRelu then broadcast along the channels),
 * [C, 1, ..., 1] aligned with x's dims 1.. (torch's export), [1, C, 1, ...];
 * 1 when s has one element; 0 otherwise. */
static int64_t
slope_channels (const tw_imp *im, const tw_tensor *s, const tw_tinfo *x)
{
  if (tw_tensor_numel (s) == 1)
    return 1;
  if (x->ndim < 2)
    return 0;
  int64_t c = x->dims[1];
  if (s->ndim == 1 && s->shape[0] == c && (im->opset < 7 || x->ndim == 2))
    return c;
  int first = s->ndim == x->ndim - 1 ? 0 : (s->ndim == x->ndim && s->shape[0] == 1 ? 1 : -1);
  if (first < 0 || s->shape[first] != c)
    return 0;
  for (int d = first + 1; d < s->ndim; d++)
    if (s->shape[d] != 1)
      return 0;
  return c;
}

static void
import_prelu (tw_imp *im)
{
  tw_imp_check_attrs (im, NULL);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "X"), *s = tw_imp_input (im, 1);
  tw_tinfo info;
  if (s == NULL)
    tw_imp_problem (im, "the slope is missing");
  if (x == NULL || s == NULL || im->failed || !tw_imp_dyn_info (im, x, &info))
    return;
  int64_t c = s->kind == TW_IMP_CONST && tw_dtype_is_float (s->c->dtype)
                ? slope_channels (im, s->c, &info)
                : 0;
  if (c > 0)
    {
      tw_attrs *a = tw_attrs_new ();
      tw_attrs_set_int (a, "num_parameters", c);
      tw_node *node = tw_imp_emit1 (im, s, "prelu", a, x);
      if (node == NULL)
        return;
      g_autoptr (tw_tensor) f = tw_imp_as_f32 (s->c);
      tw_tensor *w = tw_tensor_reshape (f, 1, &c);
      tw_imp_add_weight (im, node, "weight", tw_tensor_clone (w));
      tw_tensor_unref (w);
      return;
    }
  if (im->opset < 7)
    {
      tw_imp_problem (im,
                      "a slope that is not one per channel (opset %" G_GINT64_FORMAT
                      " broadcasts it along the channels)",
                      im->opset);
      return;
    }
  const char *rs = tw_imp_ref (im, s);
  if (rs)
    emit_refs (im, NULL, "prelu_broadcast", NULL, (const char *const[]){ x->ref, rs }, 2);
}

static gboolean
val_dtype (tw_imp *im, const tw_imp_val *v, tw_dtype *dt)
{
  tw_tinfo info;
  if (v->kind == TW_IMP_CONST)
    {
      *dt = v->c->dtype;
      return TRUE;
    }
  if (!tw_imp_dyn_info (im, v, &info))
    return FALSE;
  *dt = info.dtype;
  return TRUE;
}

/* Pow: the exponent may have another element type than the base (ONNX's T
 * and T1); it is cast to the base's, the output's type. */
static void
import_pow (tw_imp *im)
{
  tw_imp_check_attrs (im, NULL);
  const tw_imp_val *x = tw_imp_input (im, 0), *y = tw_imp_input (im, 1);
  const char *rx = tw_imp_ref_input (im, 0, "X"), *ry = rx ? tw_imp_ref_input (im, 1, "Y") : NULL;
  tw_dtype dx, dy;
  if (rx == NULL || ry == NULL || !val_dtype (im, x, &dx) || !val_dtype (im, y, &dy))
    return;
  if (dx != dy)
    {
      tw_attrs *c = tw_attrs_new ();
      tw_attrs_set_string (c, "to", tw_dtype_name (dx));
      tw_node *cast = emit_refs (im, NULL, "cast", c, &ry, 1);
      if (cast == NULL)
        return;
      ry = cast->id;
    }
  emit_refs (im, NULL, "pow", NULL, (const char *const[]){ rx, ry }, 2);
}

static const struct
{
  const char *op;
  tw_imp_fn fn;
} more_translators[] = {
  { "Elu", import_elu },       { "Selu", import_selu },
  { "Celu", import_celu },     { "ThresholdedRelu", import_thresholded_relu },
  { "Shrink", import_shrink }, { "IsInf", import_isinf },
  { "Mod", import_mod },       { "Sum", import_sum },
  { "Mean", import_mean },     { "PRelu", import_prelu },
  { "Pow", import_pow },
};

tw_imp_fn
tw_imp_more_translator (const char *op)
{
  for (guint i = 0; i < G_N_ELEMENTS (more_translators); i++)
    if (more_translators[i].op && strcmp (op, more_translators[i].op) == 0)
      return more_translators[i].fn;
  return NULL;
}
