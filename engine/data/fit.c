/* fit.c — datasets as a model wants them: the recipe's dataset opened per
 * split, its samples laid out as the model's data input, and the
 * validation split held out. */
#define G_LOG_DOMAIN "twb-data"

#include "engine/data-fit.h"

tw_dataset *
tw_dataset_open_for_model (const tw_model *m, const char *spec, tw_split split, GError **error)
{
  const char *name = spec ? spec : m->recipe.dataset;
  if (name == NULL)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_UNKNOWN,
                   "no dataset: name one with --data or in the model's training recipe");
      return NULL;
    }
  g_autoptr (tw_dataset) d = tw_dataset_open (name, split, m->recipe.seed, error);
  if (d == NULL)
    return NULL;
  tw_node *src = tw_graph_find_source (m->graph, "data");
  if (src == NULL || src->out_info == NULL)
    return g_steal_pointer (&d);

  g_autofree char *source = g_strdup_printf ("dataset %s", name);
  tw_tensor *x = tw_samples_fit_input (d->x, src, source, error);
  if (x == NULL)
    return NULL;
  tw_tensor_unref (d->x);
  d->x = x;
  return g_steal_pointer (&d);
}

tw_tensor *
tw_samples_fit_input (tw_tensor *x, const tw_node *input, const char *source, GError **error)
{
  if (input == NULL || input->out_info == NULL)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_MISMATCH,
                   "the model has no input node with role \"data\" for %s", source);
      return NULL;
    }
  if (x->ndim < 1 || x->shape[0] == 0)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_MISMATCH,
                   x->ndim < 1 ? "%s holds one scalar, not samples [n, ...]"
                               : "%s holds no samples (its first dimension is 0)", source);
      return NULL;
    }
  const tw_tinfo *want = &input->out_info[0];
  gboolean same = x->ndim == want->ndim && x->dtype == want->dtype;
  for (int i = 1; same && i < want->ndim; i++)
    same = x->shape[i] == want->dims[i];
  if (same)
    return tw_tensor_ref (x);

  int64_t per_sample = 1, want_per_sample = 1;
  for (int i = 1; i < x->ndim; i++)
    per_sample *= x->shape[i];
  for (int i = 1; i < want->ndim; i++)
    want_per_sample *= want->dims[i];
  if (x->ndim < 1 || per_sample != want_per_sample)
    {
      g_autofree char *have = tw_shape_to_string (MAX (x->ndim - 1, 0), x->shape + 1);
      g_autofree char *need = tw_shape_to_string (want->ndim - 1, want->dims + 1);
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_MISMATCH,
                   "%s has samples of shape %s, but input '%s' of the model expects %s", source,
                   have, input->id, need);
      return NULL;
    }
  int64_t shape[TW_MAX_DIMS];
  shape[0] = x->shape[0];
  for (int i = 1; i < want->ndim; i++)
    shape[i] = want->dims[i];
  g_autoptr (tw_tensor) cast = x->dtype == want->dtype ? tw_tensor_ref (x)
                                                       : tw_tensor_cast (x, want->dtype);
  return tw_tensor_reshape (cast, want->ndim, shape);
}

gboolean
tw_datasets_open_for_training (const tw_model *m, const char *spec, gboolean want_test,
                               tw_dataset **train_out, tw_dataset **val_out,
                               tw_dataset **test_out, GError **error)
{
  const char *name = spec ? spec : m->recipe.dataset;
  g_autoptr (tw_dataset) train = tw_dataset_open_for_model (m, spec, TW_SPLIT_TRAIN, error);
  if (train == NULL)
    return FALSE;
  g_autoptr (tw_dataset) val = NULL;
  if (m->recipe.validation_split > 0)
    {
      tw_dataset *rest = NULL;
      tw_dataset_split (train, m->recipe.validation_split, m->recipe.seed, &rest, &val);
      tw_dataset_free (train);
      train = rest;
      if (tw_dataset_size (val) == 0)
        {
          g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_MISMATCH,
                       "a validation split of %g holds out none of the %" G_GINT64_FORMAT
                       " training samples of %s",
                       m->recipe.validation_split, tw_dataset_size (train), name);
          return FALSE;
        }
    }
  if (tw_dataset_size (train) == 0)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_MISMATCH, "%s: no training samples%s",
                   name, val ? " left after the validation split" : "");
      return FALSE;
    }
  g_autoptr (tw_dataset) test = NULL;
  if (want_test)
    {
      test = tw_dataset_open_for_model (m, spec, TW_SPLIT_TEST, error);
      if (test == NULL)
        return FALSE;
    }
  *train_out = g_steal_pointer (&train);
  *val_out = g_steal_pointer (&val);
  if (test_out)
    *test_out = g_steal_pointer (&test);
  return TRUE;
}
