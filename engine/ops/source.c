/* source.c — graph inputs: data and labels fed by the executor. */
#include "engine/op.h"

static const char *const role_choices[] = { "data", "label", "other", NULL };
static const char *const dtype_choices[] = { "f32", "f64", "i32", "i64", "u8", NULL };

static const tw_attr_spec input_attrs[] = {
  { "shape", TW_ATTR_INTS, NULL, TRUE, "shape of one sample (without the batch dimension)" },
  { "dtype", TW_ATTR_STRING, "\"f32\"", FALSE, "element type", dtype_choices },
  { "role", TW_ATTR_STRING, "\"data\"", FALSE, "what the executor feeds here", role_choices },
  { "batch", TW_ATTR_BOOL, "true", FALSE,
    "the fed tensor has a batch dimension before 'shape' (false: 'shape' is the whole shape, "
    "as for an imported graph input of fixed size)" },
  { NULL }
};

/* Output: [N, shape...].  Graph inference replaces N by the batch when known.
 * With "batch": false the output is [shape...], fixed (it may be 0-d). */
static gboolean
input_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  int64_t shape[TW_MAX_DIMS];
  int n = tw_attrs_get_ints (a, "shape", shape, TW_MAX_DIMS);
  gboolean batched = tw_attrs_get_bool (a, "batch", TRUE);
  int lead = batched ? 1 : 0;
  tw_dtype dt = TW_F32;
  if (n < 0 || n > TW_MAX_DIMS - lead)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "input: 'shape' must list at most %d dimensions", TW_MAX_DIMS - lead);
      return FALSE;
    }
  for (int i = 0; i < n; i++)
    if (shape[i] <= 0)
      {
        g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                     "input: dimension %d of 'shape' is %" G_GINT64_FORMAT "; must be positive",
                     i, shape[i]);
        return FALSE;
      }
  if (!tw_dtype_from_name (tw_attrs_get_string (a, "dtype", "f32"), &dt))
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR, "input: unknown dtype");
      return FALSE;
    }
  if (!tw_shape_nbytes_checked (dt, n, shape, NULL))
    {
      g_autofree char *s = tw_shape_to_string (n, shape);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "input: 'shape' %s makes one sample larger than 2^63 bytes", s);
      return FALSE;
    }
  out[0].dtype = dt;
  out[0].ndim = n + lead;
  if (batched)
    out[0].dims[0] = TW_DIM_N;
  for (int i = 0; i < n; i++)
    out[0].dims[i + lead] = shape[i];
  return TRUE;
}

static const tw_op_def input_def = {
  .name = "input",
  .category = "Data",
  .doc = "A graph input: a batch of samples or of labels",
  .attrs = input_attrs,
  .min_inputs = 0,
  .max_inputs = 0,
  .n_outputs = 1,
  .infer = input_infer,
  .flags = TW_OP_SOURCE,
};

void
tw_ops_register_source (void)
{
  tw_op_register (&input_def);
}
