/* constant.c — a tensor of fixed values: a node with no inputs whose output
 * is its one parameter, "value", a buffer (not trained) of the given shape,
 * converted to the node's dtype.  The store keeps parameters in f32 (as the
 * executors create them), so a constant holds what f32 holds exactly:
 * integers up to 2^24 (the importer checks), f64 values rounded to f32.
 * Imported ONNX graphs use it wherever an initializer or a
 * Constant feeds an op that takes computed values (Add of a [3, 4] constant,
 * Where's condition, Concat with a constant part); its values live in the
 * weights table like any parameter's ("<id>.value"). */
#include "engine/op.h"

#include <string.h>

static const char *const dtype_choices[] = { "f32", "f64", "i32", "i64", "u8", NULL };

static const tw_attr_spec constant_attrs[] = {
  { "shape", TW_ATTR_INTS, NULL, TRUE, "the whole shape (no batch dimension; [] is 0-d)" },
  { "dtype", TW_ATTR_STRING, "\"f32\"", FALSE, "element type", dtype_choices },
  { NULL }
};

static gboolean
constant_info (const tw_attrs *a, tw_tinfo *out, GError **error)
{
  int64_t shape[TW_MAX_DIMS];
  int n = tw_attrs_get_ints (a, "shape", shape, TW_MAX_DIMS);
  tw_dtype dt = TW_F32;
  if (n < 0)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "constant: 'shape' must list at most %d dimensions", TW_MAX_DIMS);
      return FALSE;
    }
  for (int i = 0; i < n; i++)
    if (shape[i] < 0)
      {
        g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                     "constant: dimension %d of 'shape' is %" G_GINT64_FORMAT, i, shape[i]);
        return FALSE;
      }
  if (!tw_dtype_from_name (tw_attrs_get_string (a, "dtype", "f32"), &dt))
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR, "constant: unknown dtype");
      return FALSE;
    }
  if (!tw_shape_nbytes_checked (dt, n, shape, NULL))
    {
      g_autofree char *s = tw_shape_to_string (n, shape);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "constant: 'shape' %s is larger than 2^63 bytes", s);
      return FALSE;
    }
  tw_tinfo_set (out, dt, n, shape);
  return TRUE;
}

static int
constant_params (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_param_spec *out,
                 GError **error)
{
  memset (&out[0], 0, sizeof out[0]);
  if (!constant_info (a, &out[0].info, error))
    return -1;
  out[0].info.dtype = TW_F32;
  out[0].suffix = "value";
  out[0].init = TW_INIT_ZEROS;
  out[0].trainable = FALSE;
  return 1;
}

/* in[0] is the parameter (the op has no data inputs). */
static gboolean
constant_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  return constant_info (a, &out[0], error);
}

/* out = value (f32) in out's dtype; integers are whole numbers in value. */
static gboolean
constant_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                  tw_tensor *const *out, GError **error)
{
  int64_t n = tw_tensor_numel (out[0]);
  void *o = tw_tensor_data (out[0]);
  if (in[0]->dtype != TW_F32)
    {
      /* A value held in another type (a float64 reference run). */
      g_autoptr (tw_tensor) c = tw_tensor_cast (in[0], out[0]->dtype);
      g_autoptr (tw_tensor) cc = tw_tensor_contiguous (c);
      if (n > 0)
        memcpy (o, tw_tensor_data (cc), (size_t) n * tw_dtype_size (out[0]->dtype));
      return TRUE;
    }
  const float *v = tw_tensor_f32 (in[0]);
  switch (out[0]->dtype)
    {
    case TW_F32:
      if (n > 0)
        memcpy (o, v, (size_t) n * sizeof (float));
      break;
    case TW_F64:
      for (int64_t i = 0; i < n; i++)
        ((double *) o)[i] = v[i];
      break;
    case TW_I32:
      for (int64_t i = 0; i < n; i++)
        ((int32_t *) o)[i] = (int32_t) v[i];
      break;
    case TW_I64:
      for (int64_t i = 0; i < n; i++)
        ((int64_t *) o)[i] = (int64_t) v[i];
      break;
    case TW_U8:
      for (int64_t i = 0; i < n; i++)
        ((uint8_t *) o)[i] = (uint8_t) v[i];
      break;
    default:
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_DTYPE, "constant: dtype %s",
                   tw_dtype_name (out[0]->dtype));
      return FALSE;
    }
  return TRUE;
}

/* Nothing to do: the value is a buffer, never trained (needs[0] is FALSE). */
static gboolean
constant_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
                   tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  return TRUE;
}

static void
constant_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
               tw_cost *cost)
{
  size_t nbytes = 0;
  tw_tinfo_nbytes (&out[0], 1, &nbytes);
  cost->flops = 0;
  cost->bytes_read = (double) nbytes;
  cost->bytes_written = (double) nbytes;
}

static const tw_op_def constant_def = {
  .name = "constant",
  .category = "Data",
  .doc = "A tensor of fixed values (its 'value' buffer, not trained)",
  .attrs = constant_attrs,
  .min_inputs = 0,
  .max_inputs = 0,
  .n_outputs = 1,
  .params = constant_params,
  .infer = constant_infer,
  .forward = constant_forward,
  .backward = constant_backward,
  .cost = constant_cost,
};

void
tw_ops_register_constant (void)
{
  tw_op_register (&constant_def);
}
