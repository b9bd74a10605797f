/* shape-extra.c — squeeze, unsqueeze (ONNX Squeeze, Unsqueeze) and cast
 * (ONNX Cast), the shape and type ops exported graphs are full of.
 *
 * squeeze and unsqueeze keep the element order (one memcpy, TW_OP_VIEW);
 * their gradient is dy reshaped back (reshape_like).  Their axes follow
 * ONNX: squeeze's name input dims (absent: every dim of size 1, the batch
 * dim N excepted), unsqueeze's name dims of the output.  cast converts
 * between every pair of dtypes: floats to integers truncate towards zero and
 * saturate (NaN gives 0), as numpy's astype does for values in range; its
 * gradient casts dy back to a float input's dtype.
 */
#define G_LOG_DOMAIN "twb-ops-shape"

#include "engine/op.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

static gboolean G_GNUC_PRINTF (3, 4)
op_error (GError **error, int code, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error_literal (error, TW_OP_ERROR, code, msg);
  return FALSE;
}

/* ---- squeeze / unsqueeze ---------------------------------------------------------- */

/* mask[d] = TRUE for each dim named by the axes attribute of a tensor of
 * rank nd (negative from the end); FALSE with an error on an axis out of
 * range or named twice.  Returns the number of axes (-1: attribute absent). */
static int
axes_mask (const char *op, const tw_attrs *a, int nd, const tw_tinfo *x, gboolean *mask,
           GError **error)
{
  int64_t axes[TW_ATTR_MAX_LIST];
  int n = tw_attrs_get_ints (a, "axes", axes, TW_ATTR_MAX_LIST);
  memset (mask, 0, sizeof (gboolean) * TW_MAX_DIMS);
  if (n < 0)
    return -1;
  for (int i = 0; i < n; i++)
    {
      int64_t d = axes[i] < 0 ? axes[i] + nd : axes[i];
      g_autofree char *xs = tw_tinfo_to_string (x);
      if (d < 0 || d >= nd)
        {
          op_error (error, TW_OP_ERROR_ATTR,
                    "%s: axis %" G_GINT64_FORMAT " is out of range for %d dims (input %s)", op,
                    axes[i], nd, xs);
          return -2;
        }
      if (mask[d])
        {
          op_error (error, TW_OP_ERROR_ATTR, "%s: axis %" G_GINT64_FORMAT " is named twice", op,
                    axes[i]);
          return -2;
        }
      mask[d] = TRUE;
    }
  return n;
}

static gboolean
squeeze_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  gboolean mask[TW_MAX_DIMS];
  int n = axes_mask ("squeeze", a, in[0].ndim, &in[0], mask, error);
  if (n == -2)
    return FALSE;
  int64_t dims[TW_MAX_DIMS];
  int nd = 0;
  for (int d = 0; d < in[0].ndim; d++)
    {
      int64_t len = in[0].dims[d];
      if (n < 0 ? len == 1 : mask[d])
        {
          if (len != 1)
            {
              g_autofree char *xs = tw_tinfo_to_string (&in[0]);
              g_autofree char *ls = len == TW_DIM_N ? g_strdup ("the batch N")
                                                    : g_strdup_printf ("%" G_GINT64_FORMAT, len);
              return op_error (error, TW_OP_ERROR_SHAPE, "squeeze: dim %d of %s is %s, not 1", d,
                               xs, ls);
            }
          continue;
        }
      dims[nd++] = len;
    }
  tw_tinfo_set (&out[0], in[0].dtype, nd, dims);
  return TRUE;
}

static gboolean
unsqueeze_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                 GError **error)
{
  int64_t axes[TW_ATTR_MAX_LIST];
  int na = tw_attrs_get_ints (a, "axes", axes, TW_ATTR_MAX_LIST);
  int nd = in[0].ndim + MAX (na, 0);
  if (nd > TW_MAX_DIMS)
    {
      g_autofree char *xs = tw_tinfo_to_string (&in[0]);
      return op_error (error, TW_OP_ERROR_ATTR, "unsqueeze: %s with %d more dims exceeds %d dims",
                       xs, na, TW_MAX_DIMS);
    }
  gboolean mask[TW_MAX_DIMS];
  if (axes_mask ("unsqueeze", a, nd, &in[0], mask, error) < 0)
    {
      if (error && *error == NULL)
        op_error (error, TW_OP_ERROR_ATTR, "unsqueeze needs axes");
      return FALSE;
    }
  int64_t dims[TW_MAX_DIMS];
  for (int d = 0, k = 0; d < nd; d++)
    dims[d] = mask[d] ? 1 : in[0].dims[k++];
  tw_tinfo_set (&out[0], in[0].dtype, nd, dims);
  return TRUE;
}

/* Same element order in and out. */
static gboolean
memcpy_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                tw_tensor *const *out, GError **error)
{
  memcpy (tw_tensor_data (out[0]), tw_tensor_data (in[0]), tw_tensor_nbytes (out[0]));
  return TRUE;
}

static gboolean
reshape_back_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                       tw_val *const *out, tw_val *const *gout, const gboolean *needs,
                       tw_val **gin)
{
  gin[0] = tw_emit2 (e, "reshape_like", NULL, gout[0], in[0]);
  return gin[0] != NULL;
}

static void
copy_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
           tw_cost *cost)
{
  cost->flops = 0;
  cost->bytes_written = (double) tw_tinfo_numel (&out[0], NULL) * tw_dtype_size (out[0].dtype);
  cost->bytes_read = (double) tw_tinfo_numel (&in[0], NULL) * tw_dtype_size (in[0].dtype);
}

/* ---- cast ---------------------------------------------------------------------------- */

static gboolean
cast_target (const tw_attrs *a, tw_dtype *dt, GError **error)
{
  const char *to = tw_attrs_get_string (a, "to", NULL);
  if (to != NULL && tw_dtype_from_name (to, dt))
    return TRUE;
  return op_error (error, TW_OP_ERROR_ATTR,
                   "cast: 'to' must name a dtype (f32, f64, i32, i64, u8), got %s",
                   to ? to : "nothing");
}

static gboolean
cast_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  tw_dtype dt;
  if (!cast_target (a, &dt, error))
    return FALSE;
  tw_tinfo_set (&out[0], dt, in[0].ndim, in[0].dims);
  return TRUE;
}

/* A float converted to an integer type: truncated towards zero, saturated at
 * the type's range, NaN to 0 (C leaves out-of-range conversions undefined). */
static inline double
to_int_range (double v, double lo, double hi)
{
  if (isnan (v))
    return 0;
  v = trunc (v);
  return v < lo ? lo : (v > hi ? hi : v);
}

/* Integers convert exactly through int64_t; floats through double. */
static gboolean
cast_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
              tw_tensor *const *out, GError **error)
{
  const tw_tensor *x = in[0];
  tw_tensor *y = out[0];
  int64_t n = tw_tensor_numel (x);
  if (x->dtype == y->dtype)
    {
      memcpy (tw_tensor_data (y), tw_tensor_data (x), tw_tensor_nbytes (x));
      return TRUE;
    }
  gboolean from_float = tw_dtype_is_float (x->dtype);
  for (int64_t i = 0; i < n; i++)
    {
      double f = 0;
      int64_t k = 0;
      switch (x->dtype)
        {
        case TW_F32: f = tw_tensor_f32 (x)[i]; break;
        case TW_F64: f = tw_tensor_f64 (x)[i]; break;
        case TW_I32: k = tw_tensor_i32 (x)[i]; break;
        case TW_I64: k = tw_tensor_i64 (x)[i]; break;
        default: k = tw_tensor_u8 (x)[i]; break;
        }
      switch (y->dtype)
        {
        case TW_F32: tw_tensor_f32 (y)[i] = from_float ? (float) f : (float) k; break;
        case TW_F64: tw_tensor_f64 (y)[i] = from_float ? f : (double) k; break;
        case TW_I32:
          tw_tensor_i32 (y)[i] = from_float ? (int32_t) to_int_range (f, G_MININT32, G_MAXINT32)
                                            : (int32_t) CLAMP (k, G_MININT32, G_MAXINT32);
          break;
        case TW_I64:
          /* 2^63 is not an int64_t: the largest double below it is 2^63 - 1024 */
          tw_tensor_i64 (y)[i] = from_float ? (int64_t) to_int_range (f, -9223372036854775808.0,
                                                                        9223372036854774784.0)
                                            : k;
          break;
        default:
          tw_tensor_u8 (y)[i] = from_float ? (uint8_t) to_int_range (f, 0, 255)
                                           : (uint8_t) CLAMP (k, 0, 255);
          break;
        }
    }
  return TRUE;
}

/* Float to float: dy cast back.  Through an integer type the output is
 * piecewise constant in x: zero gradient. */
static gboolean
cast_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
               tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  const tw_tinfo *xi = tw_val_info (e, in[0]), *yi = tw_val_info (e, out[0]);
  if (!tw_dtype_is_float (yi->dtype) || !tw_dtype_is_float (xi->dtype))
    {
      gin[0] = tw_emit1 (e, "zeros_like", NULL, in[0]);
      return gin[0] != NULL;
    }
  tw_attrs *ca = tw_attrs_new ();
  tw_attrs_set_string (ca, "to", tw_dtype_name (xi->dtype));
  gin[0] = tw_emit1 (e, "cast", ca, gout[0]);
  tw_attrs_free (ca);
  return gin[0] != NULL;
}

/* ---- definitions ----------------------------------------------------------------------- */

static const tw_attr_spec squeeze_attrs[] = {
  { "axes", TW_ATTR_INTS, NULL, FALSE, "dims of size 1 to drop (absent: every size-1 dim)" },
  { NULL }
};
static const tw_attr_spec unsqueeze_attrs[] = {
  { "axes", TW_ATTR_INTS, NULL, TRUE, "dims of the output that are new, of size 1" },
  { NULL }
};
static const char *const dtype_choices[] = { "f32", "f64", "i32", "i64", "u8", NULL };
static const tw_attr_spec cast_attrs[] = {
  { "to", TW_ATTR_STRING, NULL, TRUE, "element type of the output", dtype_choices },
  { NULL }
};
static const char *const names_x[] = { "x", NULL };

static const tw_op_def squeeze_def = {
  .name = "squeeze", .category = "Shape", .doc = "drop dims of size 1",
  .attrs = squeeze_attrs, .min_inputs = 1, .max_inputs = 1, .input_names = names_x,
  .n_outputs = 1, .infer = squeeze_infer, .forward = memcpy_forward,
  .backward = reshape_back_backward, .cost = copy_cost, .onnx_name = "Squeeze",
  .flags = TW_OP_VIEW,
};

static const tw_op_def unsqueeze_def = {
  .name = "unsqueeze", .category = "Shape", .doc = "insert dims of size 1",
  .attrs = unsqueeze_attrs, .min_inputs = 1, .max_inputs = 1, .input_names = names_x,
  .n_outputs = 1, .infer = unsqueeze_infer, .forward = memcpy_forward,
  .backward = reshape_back_backward, .cost = copy_cost, .onnx_name = "Unsqueeze",
  .flags = TW_OP_VIEW,
};

static const tw_op_def cast_def = {
  .name = "cast", .category = "Math", .doc = "convert the elements to another type",
  .attrs = cast_attrs, .min_inputs = 1, .max_inputs = 1, .input_names = names_x,
  .n_outputs = 1, .infer = cast_infer, .forward = cast_forward, .backward = cast_backward,
  .cost = copy_cost, .onnx_name = "Cast",
};

void
tw_ops_register_shape_extra (void)
{
  tw_op_register (&squeeze_def);
  tw_op_register (&unsqueeze_def);
  tw_op_register (&cast_def);
}
