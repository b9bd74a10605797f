/* fit.c — datasets as a model wants them: the recipe's dataset opened per
 * split, its samples laid out as the model's data input, and the
 * validation split held out. */
#define G_LOG_DOMAIN "twb-data"

#include "engine/data-fit.h"
#include "engine/cpu/scan.h"
#include "engine/memory.h"
#include "engine/number.h"
#include "engine/rng.h"

#include <math.h>
#include <string.h>

/* The classes of the model's loss (its logits [N, C]), else of its first
 * output; 0 when neither is [N, C]. */
static int64_t
model_classes (const tw_model *m)
{
  tw_node *loss = tw_graph_find_loss (m->graph);
  const char *const *outs = tw_graph_outputs (m->graph);
  const char *ref = loss && loss->n_inputs > 0 ? loss->inputs[0] : outs ? outs[0] : NULL;
  tw_port p = ref ? tw_graph_resolve (m->graph, ref) : (tw_port) { -1, 0 };
  tw_node *n = p.node >= 0 ? tw_graph_node (m->graph, p.node) : NULL;
  if (n == NULL || n->out_info == NULL || p.output >= n->n_outputs)
    return 0;
  const tw_tinfo *o = &n->out_info[p.output];
  return o->ndim == 2 && o->dims[1] > 0 ? o->dims[1] : 0;
}

/* Whether cancellable was cancelled; sets error then. */
static gboolean
cancelled (GCancellable *cancellable, GError **error)
{
  return g_cancellable_set_error_if_cancelled (cancellable, error);
}

/* "synthetic[:N]": samples shaped as the model's data input, N of them
 * (default: as many as fit in 2^24 values, 32 to 1024; the test split a
 * quarter), sample i of class i mod C: the class's fixed random pattern
 * (from the recipe seed) plus normal noise of 0.5, different per split.  A
 * learnable stand-in for the images of an imported model.
 *
 * Only the first MIN (N, C) classes occur, so only their patterns are drawn:
 * the work and memory grow with the samples, not with C (ResNet-18 at 224 x
 * 224: 111 of 1,000, where making them all took 600 MB and 20 s).  Every
 * size comes from the model's shapes, so each is checked (tensor.h's checked
 * arithmetic) and the total is compared with the memory available before
 * anything is allocated.  cancellable is looked at between samples and
 * classes. */
static tw_dataset *
synthetic_for_model (const tw_model *m, const char *name, tw_split split,
                     GCancellable *cancellable, GError **error)
{
  tw_node *src = tw_graph_find_source (m->graph, "data");
  int64_t classes = model_classes (m);
  if (src == NULL || src->out_info == NULL || classes == 0)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_MISMATCH,
                   "dataset %s: gives class labels for a model with a data input and logits "
                   "[N, C]; this one has %s",
                   name, src == NULL ? "no data input" : "no output of that shape");
      return NULL;
    }
  const tw_tinfo *want = &src->out_info[0];
  if (!tw_dtype_is_float (want->dtype))
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_MISMATCH,
                   "dataset %s: input '%s' takes %s values; synthetic samples are floats", name,
                   src->id, tw_dtype_name (want->dtype));
      return NULL;
    }
  if (classes > G_MAXINT)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_MISMATCH,
                   "dataset %s: the model's logits have %" G_GINT64_FORMAT " classes; labels "
                   "take at most %d", name, classes, G_MAXINT);
      return NULL;
    }
  int64_t sample[TW_MAX_DIMS], per;
  for (int i = 1; i < want->ndim; i++)
    sample[i - 1] = MAX (want->dims[i], 1);
  if (!tw_shape_numel_checked (MAX (want->ndim - 1, 0), sample, &per))
    {
      g_autofree char *shape = tw_shape_to_string (MAX (want->ndim - 1, 0), sample);
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_MISMATCH,
                   "dataset %s: samples shaped %s (input '%s') hold more than 2^63 values", name,
                   shape, src->id);
      return NULL;
    }
  int64_t n = CLAMP ((int64_t) (1 << 24) / per, 32, 1024);
  if (name[strlen ("synthetic")] == ':')
    {
      const char *count = name + strlen ("synthetic:");
      g_autoptr (GError) local = NULL;
      g_autofree char *what = g_strdup_printf ("dataset %s: the sample count", name);
      if (!tw_number_parse_int (count, 1, 1 << 20, what, &n, &local))
        {
          g_set_error_literal (error, TW_DATA_ERROR, TW_DATA_ERROR_UNKNOWN, local->message);
          return NULL;
        }
    }
  if (split == TW_SPLIT_TEST)
    n = MAX (n / 4, 1);
  int64_t used = MIN (n, classes);   /* classes 0 .. used - 1 occur */
  int64_t channels = want->ndim >= 3 ? MAX (want->dims[1], 1) : 1;
  int64_t xs, ps, total = 0;
  gboolean fits = tw_size_mul (n, per, &xs) && tw_size_mul (used, per, &ps)
                  && tw_size_add (xs, ps, &total) && tw_size_add (total, channels, &total)
                  && tw_size_mul (total, sizeof (float), &total)
                  && tw_size_add (total, n * (int64_t) sizeof (int64_t), &total);
  g_autofree char *what = g_strdup_printf (
    "dataset %s (%" G_GINT64_FORMAT " samples of %" G_GINT64_FORMAT " values for input '%s', "
    "the patterns of %" G_GINT64_FORMAT " of the %" G_GINT64_FORMAT " classes)",
    name, n, per, src->id, used, classes);
  if (!fits)
    {
      g_set_error (error, TW_MEMORY_ERROR, TW_MEMORY_ERROR_OVERFLOW,
                   "%s needs more than 2^63 bytes", what);
      return NULL;
    }
  if (!tw_memory_check ((guint64) total, what, error))
    return NULL;

  int64_t shape[TW_MAX_DIMS];
  shape[0] = n;
  memcpy (shape + 1, sample, (MAX (want->ndim, 1) - 1) * sizeof (int64_t));
  g_autoptr (tw_tensor) x = tw_tensor_try_new (TW_F32, MAX (want->ndim, 1), shape);
  g_autoptr (tw_tensor) y = tw_tensor_try_new (TW_I64, 1, (int64_t[]) { n });
  g_autofree float *patterns = g_try_new (float, MAX (ps, 1));
  g_autofree float *levels = g_try_new (float, channels);
  if (x == NULL || y == NULL || patterns == NULL || levels == NULL)
    {
      g_autofree char *need = tw_format_bytes ((guint64) total);
      g_set_error (error, TW_MEMORY_ERROR, TW_MEMORY_ERROR_EXHAUSTED,
                   "%s: no memory for %s", what, need);
      return NULL;
    }
  /* Class c's pattern: a level per channel (the sample's first dim, for
   * samples of rank 2 or more: it survives global pooling) plus a pattern
   * per element (normal, 0.5). */
  guint64 seed = m->recipe.seed;
  int64_t inner = per / channels;
  for (int64_t c = 0; c < used; c++)
    {
      if (cancelled (cancellable, error))
        return NULL;
      float *mu = patterns + c * per;
      tw_rng_fill_normal (mu, per, seed, 0x5e7000 + 2 * c, 0, 0.5f);
      if (channels > 1)
        {
          tw_rng_fill_normal (levels, channels, seed, 0x5e7000 + 2 * c + 1, 0, 1);
          for (int64_t k = 0; k < per; k++)
            mu[k] += levels[k / inner];
        }
    }
  float *px = tw_tensor_f32 (x);
  int64_t *py = tw_tensor_i64 (y);
  /* The noise: element j of the split's stream (tw_rng_fill_normal counts
   * element i from counter i), a sample at a time. */
  guint64 noise = split == TW_SPLIT_TEST ? 0x5e6002 : 0x5e6001;
  for (int64_t i = 0; i < n; i++)
    {
      if (cancelled (cancellable, error))
        return NULL;
      py[i] = i % classes;
      const float *mu = patterns + py[i] * per;
      for (int64_t k = 0; k < per; k++)
        px[i * per + k] = 0.5f * tw_rng_normal (seed, noise, (guint64) (i * per + k)) + mu[k];
    }
  return tw_dataset_new (name, x, y, (int) classes);
}

static gboolean
is_synthetic (const char *name)
{
  return strcmp (name, "synthetic") == 0 || g_str_has_prefix (name, "synthetic:");
}

static tw_dataset *
open_for_model (const tw_model *m, const char *spec, tw_split split, GCancellable *cancellable,
                GError **error)
{
  const char *name = spec ? spec : m->recipe.dataset;
  if (name == NULL)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_UNKNOWN,
                   "no dataset: name one with --data or in the model's training recipe");
      return NULL;
    }
  g_autoptr (tw_dataset) d = is_synthetic (name)
                               ? synthetic_for_model (m, name, split, cancellable, error)
                               : tw_dataset_open (name, split, m->recipe.seed, error);
  if (d == NULL || cancelled (cancellable, error))
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

tw_dataset *
tw_dataset_open_for_model (const tw_model *m, const char *spec, tw_split split, GError **error)
{
  return open_for_model (m, spec, split, NULL, error);
}

/* The one rule for samples, whichever command reads them (train, eval,
 * profile, predict): floating-point values are finite as the model reads
 * them.  inf, nan, or 1e39 read into float32 (where it is inf) are refused
 * naming the sample and the value's place in it; train found them only at
 * its first step, eval and predict not at all. */
static gboolean
check_finite (const tw_tensor *x, const char *source, GError **error)
{
  if (x->dtype != TW_F32 && x->dtype != TW_F64)
    return TRUE;
  g_autoptr (tw_tensor) c = tw_tensor_contiguous ((tw_tensor *) x);
  int64_t n = tw_tensor_numel (c);
  if (c->dtype == TW_F32 && tw_scan_nonfinite_f32 (tw_tensor_f32 (c), n) == 0)
    return TRUE;
  int64_t per_sample = c->shape[0] > 0 ? n / c->shape[0] : 1;
  for (int64_t i = 0; i < n; i++)
    {
      double v = tw_tensor_get_flat (c, i);
      if (isfinite (v))
        continue;
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                   "%s: sample %" G_GINT64_FORMAT ", value %" G_GINT64_FORMAT " is %s as %s: "
                   "samples must be finite numbers", source, i / per_sample, i % per_sample,
                   isnan (v) ? "nan" : v > 0 ? "inf" : "-inf", tw_dtype_name (c->dtype));
      return FALSE;
    }
  return TRUE;
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
    return check_finite (x, source, error) ? tw_tensor_ref (x) : NULL;

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
  if (!check_finite (cast, source, error))
    return NULL;
  return tw_tensor_reshape (cast, want->ndim, shape);
}

gboolean
tw_datasets_open_for_training (const tw_model *m, const char *spec, gboolean want_test,
                               tw_dataset **train_out, tw_dataset **val_out,
                               tw_dataset **test_out, GError **error)
{
  return tw_datasets_open_for_training_cancellable (m, spec, want_test, train_out, val_out,
                                                    test_out, NULL, error);
}

gboolean
tw_datasets_open_for_training_cancellable (const tw_model *m, const char *spec,
                                           gboolean want_test, tw_dataset **train_out,
                                           tw_dataset **val_out, tw_dataset **test_out,
                                           GCancellable *cancellable, GError **error)
{
  const char *name = spec ? spec : m->recipe.dataset;
  /* A model that cannot take one training step is refused before its data
   * is read or made (the executors check again at their batch). */
  if (!tw_graph_check_memory (m->graph, 1, TRUE, error))
    return FALSE;
  g_autoptr (tw_dataset) train = open_for_model (m, spec, TW_SPLIT_TRAIN, cancellable, error);
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
      test = open_for_model (m, spec, TW_SPLIT_TEST, cancellable, error);
      if (test == NULL)
        return FALSE;
    }
  *train_out = g_steal_pointer (&train);
  *val_out = g_steal_pointer (&val);
  if (test_out)
    *test_out = g_steal_pointer (&test);
  return TRUE;
}
