/* params.c — the named parameter store and parameter initialisation. */
#define G_LOG_DOMAIN "twb-params"

#include "engine/params.h"
#include "engine/rng.h"
#include "engine/safetensors.h"

#include <math.h>
#include <string.h>

struct tw_params
{
  GPtrArray *entries;    /* tw_param *, insertion order; owns them */
  GHashTable *index;     /* name (borrowed from the entry) → tw_param * */
};

static void
param_clear_state (tw_param *e)
{
  for (guint k = 0; k < G_N_ELEMENTS (e->state); k++)
    g_clear_pointer (&e->state[k], tw_tensor_unref);
}

static void
param_free (gpointer data)
{
  tw_param *e = data;
  param_clear_state (e);
  g_clear_pointer (&e->grad, tw_tensor_unref);
  g_clear_pointer (&e->value, tw_tensor_unref);
  g_free (e->name);
  g_free (e);
}

/* Gives e a zeroed gradient when it is trainable, none otherwise. */
static void
param_sync_grad (tw_param *e)
{
  if (e->trainable && e->grad == NULL)
    e->grad = tw_tensor_zeros_like (e->value);
  else if (!e->trainable)
    g_clear_pointer (&e->grad, tw_tensor_unref);
}

tw_params *
tw_params_new (void)
{
  tw_params *p = g_new0 (tw_params, 1);
  p->entries = g_ptr_array_new_with_free_func (param_free);
  p->index = g_hash_table_new (g_str_hash, g_str_equal);
  return p;
}

void
tw_params_free (tw_params *p)
{
  if (p == NULL)
    return;
  g_hash_table_unref (p->index);
  g_ptr_array_unref (p->entries);
  g_free (p);
}

int
tw_params_count (const tw_params *p)
{
  return (int) p->entries->len;
}

tw_param *
tw_params_at (const tw_params *p, int i)
{
  g_return_val_if_fail (i >= 0 && (guint) i < p->entries->len, NULL);
  return g_ptr_array_index (p->entries, i);
}

tw_param *
tw_params_get (const tw_params *p, const char *name)
{
  return g_hash_table_lookup (p->index, name);
}

/* value must be contiguous; trainable entries must be f32 (the optimizers
 * update f32 data).  Non-trainable buffers may have any dtype.  When the name
 * exists with the same dtype and shape the existing entry (value, gradient and
 * optimizer state) is kept and only its trainable flag follows the argument;
 * otherwise the entry is replaced in place, keeping its position in the order,
 * with a fresh gradient and no optimizer state. */
tw_param *
tw_params_set (tw_params *p, const char *name, tw_tensor *value, gboolean trainable)
{
  g_return_val_if_fail (name != NULL && value != NULL, NULL);
  g_return_val_if_fail (tw_tensor_is_contiguous (value), NULL);
  g_return_val_if_fail (!trainable || value->dtype == TW_F32, NULL);

  tw_param *e = g_hash_table_lookup (p->index, name);
  if (e != NULL)
    {
      if (e->value->dtype == value->dtype && tw_tensor_same_shape (e->value, value))
        {
          e->trainable = trainable;
          param_sync_grad (e);
          return e;
        }
      tw_tensor_unref (e->value);
      e->value = tw_tensor_ref (value);
      g_clear_pointer (&e->grad, tw_tensor_unref);
      param_clear_state (e);
      e->trainable = trainable;
      param_sync_grad (e);
      return e;
    }

  e = g_new0 (tw_param, 1);
  e->name = g_strdup (name);
  e->value = tw_tensor_ref (value);
  e->trainable = trainable;
  param_sync_grad (e);
  g_ptr_array_add (p->entries, e);
  g_hash_table_insert (p->index, e->name, e);
  return e;
}

gboolean
tw_params_remove (tw_params *p, const char *name)
{
  tw_param *e = g_hash_table_lookup (p->index, name);
  if (e == NULL)
    return FALSE;
  g_hash_table_remove (p->index, name);
  /* Frees e (and its name, the key just removed); keeps the order. */
  g_ptr_array_remove (p->entries, e);
  return TRUE;
}

void
tw_params_zero_grad (tw_params *p)
{
  for (guint i = 0; i < p->entries->len; i++)
    {
      tw_param *e = g_ptr_array_index (p->entries, i);
      if (e->grad != NULL)
        memset (tw_tensor_data (e->grad), 0, tw_tensor_nbytes (e->grad));
    }
}

int64_t
tw_params_numel (const tw_params *p, gboolean trainable_only)
{
  int64_t n = 0;
  for (guint i = 0; i < p->entries->len; i++)
    {
      tw_param *e = g_ptr_array_index (p->entries, i);
      if (!trainable_only || e->trainable)
        n += tw_tensor_numel (e->value);
    }
  return n;
}

/* ---- initialisation ----------------------------------------------------- */

/* 1/sqrt(x), or 0 where x is not positive (PyTorch's nn.Linear uses bound 0
 * for the bias of a layer with no inputs). */
static double
inv_sqrt_or_zero (double x)
{
  return x > 0 ? 1.0 / sqrt (x) : 0.0;
}

/* Fills t (any shape; f32 contiguous is the fast path) per spec->init.
 * Element i uses Philox counter i under key (seed, tw_node_key (name)), so the
 * values depend only on (seed, name, index).  fan_in and fan_out come from the
 * spec; the tensor's own shape is not consulted for them. */
void
tw_param_init (tw_tensor *t, const tw_param_spec *spec, guint64 seed, const char *name)
{
  g_return_if_fail (t != NULL && spec != NULL && name != NULL);

  double fan_in = (double) spec->fan_in;
  double fan_out = (double) spec->fan_out;
  gboolean normal = FALSE;
  double scale;   /* uniform: half-width of the interval; normal: standard deviation */

  switch (spec->init)
    {
    case TW_INIT_ZEROS:
      tw_tensor_fill (t, 0.0);
      return;
    case TW_INIT_ONES:
      tw_tensor_fill (t, 1.0);
      return;
    case TW_INIT_UNIFORM_FAN_IN:
      scale = inv_sqrt_or_zero (fan_in);
      break;
    case TW_INIT_HE_NORMAL:
      normal = TRUE;
      /* std = gain / sqrt(fan_in), ReLU gain sqrt(2) (He et al. 2015). */
      scale = sqrt (2.0) * inv_sqrt_or_zero (fan_in);
      break;
    case TW_INIT_HE_UNIFORM:
      /* bound = sqrt(3) · std of He normal = sqrt(6 / fan_in). */
      scale = sqrt (6.0) * inv_sqrt_or_zero (fan_in);
      break;
    case TW_INIT_XAVIER_UNIFORM:
      /* Glorot & Bengio 2010: bound sqrt(6 / (fan_in + fan_out)). */
      scale = sqrt (6.0) * inv_sqrt_or_zero (fan_in + fan_out);
      break;
    case TW_INIT_XAVIER_NORMAL:
      normal = TRUE;
      scale = sqrt (2.0) * inv_sqrt_or_zero (fan_in + fan_out);
      break;
    case TW_INIT_NORMAL:
      normal = TRUE;
      scale = 1.0;
      break;
    default:
      g_return_if_reached ();
    }

  guint64 stream = tw_node_key (name);
  int64_t n = tw_tensor_numel (t);
  gboolean direct = t->dtype == TW_F32 && tw_tensor_is_contiguous (t);
  float *out = direct ? tw_tensor_f32 (t) : g_new (float, MAX (n, 1));

  if (normal)
    tw_rng_fill_normal (out, n, seed, stream, 0.0f, (float) scale);
  else
    tw_rng_fill_uniform (out, n, seed, stream, (float) -scale, (float) scale);

  if (!direct)
    {
      for (int64_t i = 0; i < n; i++)
        tw_tensor_set_flat (t, i, out[i]);
      g_free (out);
    }
}

/* ---- Loading a state_dict ----------------------------------------------- */

G_DEFINE_QUARK (tw-state-dict-error-quark, tw_state_dict_error)

#define BATCH_COUNTER ".num_batches_tracked"

void
tw_state_dict_report_clear (tw_state_dict_report *report)
{
  if (report == NULL)
    return;
  g_clear_pointer (&report->loaded, g_strfreev);
  g_clear_pointer (&report->missing, g_strfreev);
  g_clear_pointer (&report->unexpected, g_strfreev);
  g_clear_pointer (&report->ignored, g_strfreev);
}

static gboolean
dtype_is_float (tw_dtype d)
{
  return d == TW_F32 || d == TW_F64;
}

/* PyTorch's batch counter of a batch norm whose running mean the store has. */
static gboolean
is_batch_counter (const tw_params *p, const char *key)
{
  if (!g_str_has_suffix (key, BATCH_COUNTER))
    return FALSE;
  g_autofree char *scope = g_strndup (key, strlen (key) - strlen (BATCH_COUNTER));
  g_autofree char *mean = g_strconcat (scope, ".running_mean", NULL);
  return tw_params_get (p, mean) != NULL;
}

/* "a, b, c" — at most 8 names, then how many more. */
static char *
join_keys (GPtrArray *keys)
{
  const guint shown = 8;
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < keys->len && i < shown; i++)
    g_string_append_printf (s, "%s%s", i ? ", " : "", (const char *) g_ptr_array_index (keys, i));
  if (keys->len > shown)
    g_string_append_printf (s, " and %u more", keys->len - shown);
  return g_string_free (s, FALSE);
}

static char **
steal_strv (GPtrArray *a)
{
  g_ptr_array_add (a, NULL);
  return (char **) g_ptr_array_steal (a, NULL);
}

static int
compare_str (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

gboolean
tw_param_accepts (const tw_param *e, const tw_tensor *t, const char *source, GError **error)
{
  const char *what = e->trainable ? "parameter" : "buffer";
  if (!tw_tensor_same_shape (t, e->value))
    {
      g_autofree char *a = tw_shape_to_string (t->ndim, t->shape);
      g_autofree char *b = tw_shape_to_string (e->value->ndim, e->value->shape);
      g_set_error (error, TW_STATE_DICT_ERROR, TW_STATE_DICT_ERROR_SHAPE,
                   "%s: tensor '%s' has shape %s; the model's %s is %s", source, e->name, a,
                   what, b);
      return FALSE;
    }
  if (t->dtype != e->value->dtype
      && !(dtype_is_float (t->dtype) && dtype_is_float (e->value->dtype)))
    {
      g_set_error (error, TW_STATE_DICT_ERROR, TW_STATE_DICT_ERROR_DTYPE,
                   "%s: tensor '%s' is %s; the model's %s is %s (floating point values "
                   "expected)", source, e->name, tw_dtype_name (t->dtype), what,
                   tw_dtype_name (e->value->dtype));
      return FALSE;
    }
  return TRUE;
}

gboolean
tw_params_load_state_dict (tw_params *p, GHashTable *tensors, GHashTable *metadata,
                           const char *source, gboolean strict, tw_state_dict_report *report,
                           GError **error)
{
  g_return_val_if_fail (p != NULL && tensors != NULL, FALSE);
  const char *src = source ? source : "state_dict";
  gboolean checkpoint = metadata
                        && g_strcmp0 (g_hash_table_lookup (metadata, "format"), "twb-checkpoint") == 0;
  g_autoptr (GPtrArray) loaded = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) missing = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) unexpected = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) ignored = g_ptr_array_new_with_free_func (g_free);

  /* Every check first: a failed load changes nothing. */
  for (guint i = 0; i < p->entries->len; i++)
    {
      tw_param *e = g_ptr_array_index (p->entries, i);
      tw_tensor *t = g_hash_table_lookup (tensors, e->name);
      if (t == NULL)
        {
          g_ptr_array_add (missing, g_strdup (e->name));
          continue;
        }
      if (!tw_param_accepts (e, t, src, error))
        return FALSE;
      g_ptr_array_add (loaded, g_strdup (e->name));
    }
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init (&it, tensors);
  while (g_hash_table_iter_next (&it, &key, NULL))
    {
      const char *k = key;
      if (tw_params_get (p, k))
        continue;
      if (is_batch_counter (p, k) || (checkpoint && g_str_has_prefix (k, "optimizer.")))
        g_ptr_array_add (ignored, g_strdup (k));
      else
        g_ptr_array_add (unexpected, g_strdup (k));
    }
  g_ptr_array_sort (unexpected, compare_str);
  g_ptr_array_sort (ignored, compare_str);

  if (strict && (missing->len || unexpected->len))
    {
      g_autofree char *m = join_keys (missing);
      g_autofree char *u = join_keys (unexpected);
      g_set_error (error, TW_STATE_DICT_ERROR, TW_STATE_DICT_ERROR_STRICT,
                   "%s: strict loading refused: %s%s%s%s%s", src,
                   missing->len ? "missing keys: " : "", m, missing->len && unexpected->len ? "; " : "",
                   unexpected->len ? "unexpected keys: " : "", u);
      return FALSE;
    }

  for (guint i = 0; i < loaded->len; i++)
    {
      const char *name = g_ptr_array_index (loaded, i);
      tw_param *e = tw_params_get (p, name);
      tw_tensor_copy_into (e->value, g_hash_table_lookup (tensors, name));
    }
  if (report)
    {
      tw_state_dict_report_clear (report);
      report->loaded = steal_strv (loaded);
      report->missing = steal_strv (missing);
      report->unexpected = steal_strv (unexpected);
      report->ignored = steal_strv (ignored);
    }
  return TRUE;
}

gboolean
tw_params_load_state_dict_file (tw_params *p, const char *path, gboolean strict,
                                tw_state_dict_report *report, GError **error)
{
  g_autoptr (GHashTable) tensors = NULL;
  g_autoptr (GHashTable) meta = NULL;
  if (!tw_safetensors_load (path, &tensors, &meta, error))
    return FALSE;
  g_autofree char *display = g_filename_display_name (path);
  return tw_params_load_state_dict (p, tensors, meta, display, strict, report, error);
}
