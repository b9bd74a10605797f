/* onnx-import-fold.c — constants folded at import: Constant, Shape (from the
 * shapes inferred so far), Gather, Unsqueeze, Squeeze, Concat, Cast, Slice,
 * ConstantOfShape, Reshape and arithmetic on constants, so that the chains
 * exporters emit before a Reshape become its constant shape. */
#define G_LOG_DOMAIN "tw-onnx"

#include "onnx/onnx-import-private.h"

#include <string.h>

/* ---- constants --------------------------------------------------------------- */

tw_tensor *
tw_imp_as_f32 (const tw_tensor *t)
{
  if (t->dtype == TW_F32)
    return tw_tensor_clone (t);
  return tw_tensor_cast (t, TW_F32);
}

/* A constant's values as int64 (for shapes, axes, indices). */
gboolean
tw_imp_const_ints (tw_imp *im, const tw_imp_val *v, const char *what, int64_t **out, int64_t *n)
{
  if (v == NULL || v->kind != TW_IMP_CONST || v->c->dtype == TW_F32 || v->c->dtype == TW_F64)
    {
      tw_imp_problem (im, "%s must be a constant integer tensor", what);
      return FALSE;
    }
  *n = tw_tensor_numel (v->c);
  *out = g_new (int64_t, MAX (*n, 1));
  for (int64_t i = 0; i < *n; i++)
    (*out)[i] = v->c->dtype == TW_I64 ? tw_tensor_i64 (v->c)[i]
                                      : (int64_t) tw_tensor_get_flat (v->c, i);
  return TRUE;
}

tw_tensor *
tw_imp_const_new (tw_imp *im, tw_dtype dtype, int ndim, const int64_t *dims, const char *what)
{
  int64_t numel = 0;
  if (ndim < 0 || ndim > TW_MAX_DIMS)
    {
      tw_imp_problem (im, "%s would have more dims than twb's tensors (%d)", what, TW_MAX_DIMS);
      return NULL;
    }
  for (int d = 0; d < ndim; d++)
    if (dims[d] < 0)
      {
        /* TW_DIM_N, TW_IMP_BATCH, TW_IMP_UNKNOWN: the batch, unknown at import. */
        if (dims[d] == TW_DIM_N || dims[d] == TW_IMP_BATCH || dims[d] == TW_IMP_UNKNOWN)
          tw_imp_problem (im, "%s would have a dim that depends on the batch size", what);
        else
          tw_imp_problem (im, "%s would have a dim of %" G_GINT64_FORMAT, what, dims[d]);
        return NULL;
      }
  if (tw_shape_numel_checked (ndim, dims, &numel) && numel <= TW_IMP_MAX_FOLDED)
    return tw_tensor_new (dtype, ndim, dims);
  g_autofree char *shape = tw_shape_to_string (ndim, dims);
  tw_imp_problem (im, "%s of shape %s holds more than the %d values import makes", what, shape,
                  TW_IMP_MAX_FOLDED);
  return NULL;
}

static tw_tensor *
ints_tensor (int ndim, const int64_t *data, int64_t n)
{
  return tw_tensor_from_data (TW_I64, ndim, (int64_t[]) { n }, data);
}

/* Axes of Unsqueeze / Squeeze / ReduceX: the attribute before opset 13, the
 * second input from 13 on.  *n -1: absent. */
gboolean
tw_imp_axes_of (tw_imp *im, int64_t **axes, int64_t *n)
{
  if (im->opset < 13)
    {
      gsize len = 0;
      int64_t buf[TW_MAX_DIMS * 2];
      if (tw_onnx_attr (im->n, "axes") == NULL)
        {
          *axes = NULL, *n = -1;
          return TRUE;
        }
      if (!tw_imp_attr_ints (im, "axes", 0, 0, buf, &len))
        return FALSE;
      *axes = g_memdup2 (buf, MAX (len, 1) * sizeof *buf);
      *n = (int64_t) len;
      return TRUE;
    }
  const tw_imp_val *a = tw_imp_input (im, 1);
  if (a == NULL)
    {
      *axes = NULL, *n = -1;
      return TRUE;
    }
  return tw_imp_const_ints (im, a, "axes", axes, n);
}

static tw_tensor *
reshaped_copy (const tw_tensor *t, int ndim, const int64_t *dims)
{
  g_autoptr (tw_tensor) c = tw_tensor_clone (t);
  return tw_tensor_reshape (c, ndim, dims);
}

/* ONNX Slice of a contiguous t along axis a: start, end and step as ONNX
 * clamps them (negative from the end; a negative step walks backwards). */
static tw_tensor *
slice_axis (const tw_tensor *t, int a, int64_t start, int64_t end, int64_t step)
{
  int64_t dim = t->shape[a];
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  /* Indices first + k * step while before last; a step of any size (up to
   * +-2^63) takes no more than dim of them and never overflows. */
  GArray *idx = g_array_new (FALSE, FALSE, sizeof (int64_t));
  int64_t first = step > 0 ? CLAMP (start, 0, dim) : CLAMP (start, 0, dim - 1);
  int64_t last = step > 0 ? CLAMP (end, 0, dim) : CLAMP (end, -1, dim - 1);
  guint64 span = step > 0 ? (guint64) MAX (last - first, 0) : (guint64) MAX (first - last, 0);
  guint64 mag = step > 0 ? (guint64) step : (guint64) 0 - (guint64) step;
  guint64 count = span == 0 ? 0 : (span - 1) / mag + 1;
  for (guint64 k = 0; k < count; k++)
    {
      int64_t i = step > 0 ? first + (int64_t) (k * mag) : first - (int64_t) (k * mag);
      g_array_append_val (idx, i);
    }
  int64_t shape[TW_MAX_DIMS];
  memcpy (shape, t->shape, t->ndim * sizeof *shape);
  shape[a] = idx->len;
  tw_tensor *out = tw_tensor_new (t->dtype, t->ndim, shape);
  size_t es = tw_dtype_size (t->dtype);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < a; d++)
    outer *= t->shape[d];
  for (int d = a + 1; d < t->ndim; d++)
    inner *= t->shape[d];
  const char *src = tw_tensor_data (t);
  char *dst = tw_tensor_data (out);
  for (int64_t o = 0; o < outer; o++)
    for (guint j = 0; j < idx->len; j++)
      memcpy (dst + ((o * idx->len + j) * inner) * es,
              src + ((o * dim + g_array_index (idx, int64_t, j)) * inner) * es, inner * es);
  g_array_free (idx, TRUE);
  return out;
}

static int64_t
fold_int (const char *op, int64_t a, int64_t b)
{
  if (a == TW_IMP_BATCH || b == TW_IMP_BATCH || a == TW_IMP_UNKNOWN || b == TW_IMP_UNKNOWN)
    {
      /* The batch times 1 or plus 0 is still the batch. */
      if ((strcmp (op, "Mul") == 0 || strcmp (op, "Div") == 0) && (b == 1 || (a == 1 && op[0] == 'M')))
        return a == 1 ? b : a;
      if ((strcmp (op, "Add") == 0 || strcmp (op, "Sub") == 0) && (b == 0 || (a == 0 && op[0] == 'A')))
        return a == 0 ? b : a;
      return TW_IMP_UNKNOWN;
    }
  int64_t r;
  gboolean over;
  if (strcmp (op, "Add") == 0)
    over = __builtin_add_overflow (a, b, &r);
  else if (strcmp (op, "Sub") == 0)
    over = __builtin_sub_overflow (a, b, &r);
  else if (strcmp (op, "Mul") == 0)
    over = __builtin_mul_overflow (a, b, &r);
  else
    {
      over = b == 0 || (a == G_MININT64 && b == -1);
      r = over ? 0 : a / b;
    }
  return over ? TW_IMP_UNKNOWN : r;
}

/* Evaluate the current node on constant inputs (and Shape on a dynamic
 * one).  Returns FALSE when the op is not one folding knows (nothing
 * reported then); TRUE when handled (folded, or a problem reported). */
gboolean
tw_imp_fold (tw_imp *im)
{
  const char *op = im->n->op_type;
  const tw_imp_val *x = tw_imp_input (im, 0);

  if (strcmp (op, "Constant") == 0)
    {
      const Onnx__AttributeProto *a = im->n->n_attribute == 1 ? im->n->attribute[0] : NULL;
      if (a && a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR && a->t)
        {
          g_autoptr (GError) error = NULL;
          g_autofree char *label = tw_onnx_node_label (im->n, im->index);
          g_autofree char *what = g_strdup_printf ("constant '%s'", label);
          tw_tensor *t = tw_onnx_tensor_to_tw (a->t, what, &error);
          if (t == NULL)
            tw_imp_problem (im, "%s", error->message);
          else
            tw_imp_set_const (im, 0, t);
        }
      else if (a && a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)
        tw_imp_set_const (im, 0, tw_tensor_scalar_f32 (a->f));
      else if (a && a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)
        tw_imp_set_const (im, 0, tw_tensor_from_data (TW_I64, 0, NULL, &a->i));
      else if (a && a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS)
        tw_imp_set_const (im, 0, ints_tensor (1, a->ints, (int64_t) a->n_ints));
      else if (a && a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS)
        tw_imp_set_const (im, 0, tw_tensor_from_data (TW_F32, 1, (int64_t[]) { a->n_floats }, a->floats));
      else
        tw_imp_problem (im, "a constant of this kind (sparse, strings or several values) is not supported");
      return TRUE;
    }

  if (strcmp (op, "Shape") == 0 && x && x->kind == TW_IMP_DYN)
    {
      tw_tinfo info;
      if (!tw_imp_dyn_info (im, x, &info))
        return TRUE;
      int64_t dims[TW_MAX_DIMS];
      for (int i = 0; i < info.ndim; i++)
        dims[i] = info.dims[i] == TW_DIM_N ? TW_IMP_BATCH : info.dims[i];
      int64_t start = tw_imp_attr_int (im, "start", 0), end = tw_imp_attr_int (im, "end", info.ndim);
      start = CLAMP (start < 0 ? start + info.ndim : start, 0, info.ndim);
      end = CLAMP (end < 0 ? end + info.ndim : end, 0, info.ndim);
      end = MAX (end, start);
      tw_imp_set_const (im, 0, ints_tensor (1, dims + start, end - start));
      return TRUE;
    }

  /* Everything below needs constant inputs. */
  for (gsize i = 0; i < im->n->n_input; i++)
    {
      const tw_imp_val *v = tw_imp_input (im, i);
      if (v && v->kind != TW_IMP_CONST)
        return FALSE;
    }
  if (x == NULL)
    return FALSE;

  if (strcmp (op, "Identity") == 0)
    {
      tw_imp_set_const (im, 0, tw_tensor_ref (x->c));
      return TRUE;
    }
  if (strcmp (op, "Cast") == 0)
    {
      int64_t to = tw_imp_attr_int (im, "to", 0);
      tw_dtype dt;
      switch (to)
        {
        case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: dt = TW_F32; break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: dt = TW_F64; break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: dt = TW_I32; break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: dt = TW_I64; break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
        case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: dt = TW_U8; break;
        default:
          tw_imp_problem (im, "cast to ONNX data type %" G_GINT64_FORMAT " is not supported", to);
          return TRUE;
        }
      tw_imp_set_const (im, 0, x->c->dtype == dt ? tw_tensor_ref (x->c) : tw_tensor_cast (x->c, dt));
      return TRUE;
    }
  if (strcmp (op, "Unsqueeze") == 0 || strcmp (op, "Squeeze") == 0)
    {
      g_autofree int64_t *axes = NULL;
      int64_t na;
      if (!tw_imp_axes_of (im, &axes, &na))
        return TRUE;
      int r = x->c->ndim;
      int64_t dims[TW_MAX_DIMS];
      int nd = 0;
      if (op[0] == 'U')
        {
          int rout = r + (int) CLAMP (na, 0, TW_MAX_DIMS + 1);
          if (na <= 0 || rout > TW_MAX_DIMS)
            {
              tw_imp_problem (im, "needs axes giving at most %d dims", TW_MAX_DIMS);
              return TRUE;
            }
          gboolean is_new[TW_MAX_DIMS] = { FALSE };
          for (int64_t k = 0; k < na; k++)
            {
              int ax = tw_imp_norm_axis (im, axes[k], rout);
              if (ax < 0)
                return TRUE;
              is_new[ax] = TRUE;
            }
          for (int d = 0, src = 0; d < rout; d++)
            dims[nd++] = is_new[d] ? 1 : x->c->shape[src++];
        }
      else
        {
          gboolean drop[TW_MAX_DIMS] = { FALSE };
          for (int d = 0; d < r; d++)
            drop[d] = na < 0 && x->c->shape[d] == 1;
          for (int64_t k = 0; k < na; k++)
            {
              int ax = tw_imp_norm_axis (im, axes[k], r);
              if (ax < 0)
                return TRUE;
              drop[ax] = TRUE;
            }
          for (int d = 0; d < r; d++)
            if (!drop[d])
              dims[nd++] = x->c->shape[d];
        }
      tw_imp_set_const (im, 0, reshaped_copy (x->c, nd, dims));
      return TRUE;
    }
  if (strcmp (op, "Gather") == 0)
    {
      const tw_imp_val *iv = tw_imp_input (im, 1);
      g_autofree int64_t *idx = NULL;
      int64_t ni;
      if (tw_imp_attr_int (im, "axis", 0) != 0 || x->c->ndim < 1)
        {
          tw_imp_problem (im, "folding a Gather of a constant is supported on axis 0 only");
          return TRUE;
        }
      if (!tw_imp_const_ints (im, iv, "indices", &idx, &ni))
        return TRUE;
      int64_t d0 = x->c->shape[0], row = d0 > 0 ? tw_tensor_numel (x->c) / d0 : 0;
      int64_t dims[TW_MAX_DIMS * 2];
      int nd = 0;
      for (int d = 0; d < iv->c->ndim; d++)
        dims[nd++] = iv->c->shape[d];
      for (int d = 1; d < x->c->ndim; d++)
        dims[nd++] = x->c->shape[d];
      g_autoptr (tw_tensor) src = tw_tensor_contiguous (x->c);
      tw_tensor *out = tw_imp_const_new (im, x->c->dtype, nd, dims, "the folded Gather");
      if (out == NULL)
        return TRUE;
      size_t es = tw_dtype_size (x->c->dtype);
      for (int64_t k = 0; k < ni; k++)
        {
          int64_t j = idx[k] < 0 ? idx[k] + d0 : idx[k];
          if (j < 0 || j >= d0)
            {
              tw_tensor_unref (out);
              tw_imp_problem (im, "index %" G_GINT64_FORMAT " is outside 0..%" G_GINT64_FORMAT, idx[k],
                       d0 - 1);
              return TRUE;
            }
          memcpy ((char *) tw_tensor_data (out) + k * row * es,
                  (const char *) tw_tensor_data (src) + j * row * es, row * es);
        }
      tw_imp_set_const (im, 0, out);
      return TRUE;
    }
  if (strcmp (op, "Concat") == 0)
    {
      /* Shape vectors: 1-D, one dtype. */
      GArray *all = g_array_new (FALSE, FALSE, sizeof (int64_t));
      for (gsize i = 0; i < im->n->n_input; i++)
        {
          const tw_imp_val *v = tw_imp_input (im, i);
          g_autofree int64_t *vals = NULL;
          int64_t nv;
          if (v == NULL || v->c->ndim != 1 || !tw_imp_const_ints (im, v, "a folded Concat's input", &vals, &nv))
            {
              if (!im->failed)
                tw_imp_problem (im, "folding a Concat of constants is supported for 1-D integer tensors only");
              g_array_free (all, TRUE);
              return TRUE;
            }
          g_array_append_vals (all, vals, nv);
        }
      tw_imp_set_const (im, 0, ints_tensor (1, (int64_t *) all->data, all->len));
      g_array_free (all, TRUE);
      return TRUE;
    }
  if (strcmp (op, "Slice") == 0 && im->opset >= 10)
    {
      g_autofree int64_t *st = NULL, *en = NULL, *ax = NULL, *sp = NULL;
      int64_t ns, ne, nax = -1, nsp = -1;
      if (!tw_imp_const_ints (im, tw_imp_input (im, 1), "starts", &st, &ns)
          || !tw_imp_const_ints (im, tw_imp_input (im, 2), "ends", &en, &ne)
          || (tw_imp_input (im, 3) && !tw_imp_const_ints (im, tw_imp_input (im, 3), "axes", &ax, &nax))
          || (tw_imp_input (im, 4) && !tw_imp_const_ints (im, tw_imp_input (im, 4), "steps", &sp, &nsp)))
        return TRUE;
      if (ne != ns || (nax >= 0 && nax != ns) || (nsp >= 0 && nsp != ns))
        {
          tw_imp_problem (im, "starts, ends, axes and steps of different lengths");
          return TRUE;
        }
      g_autoptr (tw_tensor) cur = tw_tensor_clone (x->c);
      for (int64_t k = 0; k < ns; k++)
        {
          int a = tw_imp_norm_axis (im, nax >= 0 ? ax[k] : k, cur->ndim);
          int64_t step = nsp >= 0 ? sp[k] : 1;
          if (a < 0)
            return TRUE;
          if (step == 0)
            {
              tw_imp_problem (im, "a step of 0");
              return TRUE;
            }
          tw_tensor *next = slice_axis (cur, a, st[k], en[k], step);
          tw_tensor_unref (cur);
          cur = next;
        }
      tw_imp_set_const (im, 0, g_steal_pointer (&cur));
      return TRUE;
    }
  if (strcmp (op, "Transpose") == 0)
    {
      int64_t perm[TW_MAX_DIMS * 2];
      gsize np = 0;
      int r = x->c->ndim;
      if (!tw_imp_attr_ints (im, "perm", 0, 0, perm, &np))
        return TRUE;
      int p[TW_MAX_DIMS];
      gboolean seen[TW_MAX_DIMS] = { FALSE };
      if (np != 0 && np != (gsize) r)
        {
          tw_imp_problem (im, "perm of %" G_GSIZE_FORMAT " entries for a rank-%d constant", np, r);
          return TRUE;
        }
      for (int d = 0; d < r; d++)
        {
          p[d] = np ? (int) perm[d] : r - 1 - d;
          if (p[d] < 0 || p[d] >= r || seen[p[d]])
            {
              tw_imp_problem (im, "perm is not a permutation");
              return TRUE;
            }
          seen[p[d]] = TRUE;
        }
      g_autoptr (tw_tensor) c = tw_tensor_clone (x->c);
      g_autoptr (tw_tensor) v = tw_tensor_permute (c, p);
      tw_imp_set_const (im, 0, tw_tensor_clone (v));
      return TRUE;
    }
  if (strcmp (op, "ConstantOfShape") == 0)
    {
      g_autofree int64_t *dims = NULL;
      int64_t nd;
      if (!tw_imp_const_ints (im, x, "the shape", &dims, &nd))
        return TRUE;
      if (nd > TW_MAX_DIMS)
        {
          tw_imp_problem (im, "a shape of %" G_GINT64_FORMAT " dims (twb's tensors have at most %d)",
                          nd, TW_MAX_DIMS);
          return TRUE;
        }
      g_autoptr (tw_tensor) out = tw_imp_const_new (im, TW_F32, (int) nd, dims, "the ConstantOfShape");
      if (out == NULL)
        return TRUE;
      const Onnx__AttributeProto *a = tw_onnx_attr (im->n, "value");
      g_autoptr (tw_tensor) v = NULL;
      if (a && a->t)
        {
          g_autoptr (GError) error = NULL;
          v = tw_onnx_tensor_to_tw (a->t, "ConstantOfShape value", &error);
          if (v == NULL)
            {
              tw_imp_problem (im, "%s", error->message);
              return TRUE;
            }
        }
      if (v && v->dtype != TW_F32)
        {
          tw_tensor_unref (out);
          out = tw_tensor_new (v->dtype, (int) nd, dims);
        }
      tw_tensor_fill (out, v ? tw_tensor_get_flat (v, 0) : 0.0);
      tw_imp_set_const (im, 0, g_steal_pointer (&out));
      return TRUE;
    }
  if (strcmp (op, "Reshape") == 0)
    {
      g_autofree int64_t *dims = NULL;
      int64_t nd, known = 1, neg = -1, numel = tw_tensor_numel (x->c);
      if (!tw_imp_const_ints (im, tw_imp_input (im, 1), "the shape", &dims, &nd))
        return TRUE;
      for (int64_t i = 0; i < nd && nd <= TW_MAX_DIMS; i++)
        {
          if (dims[i] == 0)
            dims[i] = i < x->c->ndim ? x->c->shape[i] : 1;
          if (dims[i] > MAX (numel, 1) || dims[i] < -1)
            {
              tw_imp_problem (im, "a constant of %" G_GINT64_FORMAT " elements cannot take that shape",
                              numel);
              return TRUE;
            }
          if (dims[i] == -1)
            neg = i;
          else if (!tw_size_mul (known, dims[i], &known))
            known = -1;   /* past int64: no shape of numel elements */
        }
      if (neg >= 0 && known > 0)
        dims[neg] = numel / known;
      int64_t total = 1;
      for (int64_t i = 0; i < nd && total >= 0; i++)
        if (!tw_size_mul (total, MAX (dims[i], 0), &total))
          total = -1;
      if (nd > TW_MAX_DIMS || total != numel)
        {
          tw_imp_problem (im, "a constant of %" G_GINT64_FORMAT " elements cannot take that shape", numel);
          return TRUE;
        }
      tw_imp_set_const (im, 0, reshaped_copy (x->c, (int) nd, dims));
      return TRUE;
    }
  if (strcmp (op, "Add") == 0 || strcmp (op, "Sub") == 0 || strcmp (op, "Mul") == 0
      || strcmp (op, "Div") == 0)
    {
      const tw_imp_val *y = tw_imp_input (im, 1);
      const tw_tensor *a = x->c, *b = y ? y->c : NULL;
      /* Other shapes and dtypes: the registry's op runs on them (import_binary). */
      if (b == NULL || a->dtype != b->dtype
          || (!tw_tensor_same_shape (a, b) && tw_tensor_numel (a) != 1 && tw_tensor_numel (b) != 1))
        return FALSE;
      const tw_tensor *big = tw_tensor_numel (a) >= tw_tensor_numel (b) ? a : b;
      tw_tensor *out = tw_tensor_new (a->dtype, big->ndim, big->shape);
      int64_t n = tw_tensor_numel (out);
      for (int64_t i = 0; i < n; i++)
        {
          int64_t ia = tw_tensor_numel (a) == 1 ? 0 : i, ib = tw_tensor_numel (b) == 1 ? 0 : i;
          if (a->dtype == TW_I64)
            tw_tensor_i64 (out)[i] = fold_int (op, tw_tensor_i64 (a)[ia], tw_tensor_i64 (b)[ib]);
          else
            {
              double p = tw_tensor_get_flat (a, ia), q = tw_tensor_get_flat (b, ib);
              double r = op[0] == 'A' ? p + q : op[0] == 'S' ? p - q : op[0] == 'M' ? p * q : p / q;
              tw_tensor_set_flat (out, i, r);
            }
        }
      tw_imp_set_const (im, 0, out);
      return TRUE;
    }
  if (strcmp (op, "Neg") == 0 && !tw_dtype_is_float (x->c->dtype))
    {
      /* Integer negation (twb's neg is for floats): the axes of ONNX's
       * function bodies (LayerNormalization's expansion). */
      tw_tensor *out = tw_tensor_clone (x->c);
      for (int64_t i = 0, n = tw_tensor_numel (out); i < n; i++)
        if (out->dtype == TW_I64)
          tw_tensor_i64 (out)[i] = tw_tensor_i64 (x->c)[i] == G_MININT64 ? G_MININT64
                                                                          : -tw_tensor_i64 (x->c)[i];
        else
          tw_tensor_set_flat (out, i, -tw_tensor_get_flat (x->c, i));
      tw_imp_set_const (im, 0, out);
      return TRUE;
    }
  return FALSE;
}
