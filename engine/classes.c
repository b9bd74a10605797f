/* classes.c — a classifier's confusion matrix and a sample of its
 * predictions (see classes.h). */
#define G_LOG_DOMAIN "twb-classes"

#include "engine/classes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Sort key of a confidence: NaN (logits that were not finite) last. */
static double
conf_key (float c)
{
  return isnan (c) ? -INFINITY : (double) c;
}

/* Wrong ones first, most confident first; then right ones, least confident
 * first (the near misses); ties in dataset order. */
static int
compare_samples (gconstpointer pa, gconstpointer pb)
{
  const tw_class_sample *a = pa, *b = pb;
  gboolean wa = a->predicted != a->label, wb = b->predicted != b->label;
  if (wa != wb)
    return wa ? -1 : 1;
  double ca = conf_key (a->confidence), cb = conf_key (b->confidence);
  if (ca != cb)
    return (ca > cb) == wa ? -1 : 1;
  return (a->index > b->index) - (a->index < b->index);
}

/* Every label of the dataset is a class index of a C-class output. */
static gboolean
check_labels (const int64_t *labels, int64_t n, int64_t c, GError **error)
{
  for (int64_t i = 0; i < n; i++)
    if (labels[i] < 0 || labels[i] >= c)
      {
        g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT,
                     "sample %" G_GINT64_FORMAT " has label %" G_GINT64_FORMAT
                     ", not a class of the model's %" G_GINT64_FORMAT " outputs (0 to %"
                     G_GINT64_FORMAT ")",
                     i, labels[i], c, c - 1);
        return FALSE;
      }
  return TRUE;
}

/* Argmax (the first of equal maxima, as tw_count_correct) and its softmax
 * probability, computed stably: 1 / sum exp (x_j - max). */
static int64_t
row_argmax (const float *row, int64_t c, float *confidence)
{
  int64_t best = 0;
  for (int64_t j = 1; j < c; j++)
    if (row[j] > row[best])
      best = j;
  double m = row[best], sum = 0;
  for (int64_t j = 0; j < c; j++)
    sum += exp ((double) row[j] - m);
  *confidence = (float) (1.0 / sum);
  return best;
}

/* The rows of x (any shape [n, ...]) at the samples' indices, in order. */
static tw_tensor *
gather_rows (tw_tensor *x, const GArray *samples)
{
  g_autoptr (tw_tensor) host = tw_tensor_to_host (x);
  g_autoptr (tw_tensor) xc = tw_tensor_contiguous (host);
  int64_t shape[TW_MAX_DIMS];
  memcpy (shape, xc->shape, sizeof shape);
  shape[0] = samples->len;
  tw_tensor *out = tw_tensor_new (xc->dtype, xc->ndim, shape);
  size_t row = xc->shape[0] ? tw_tensor_nbytes (xc) / (size_t) xc->shape[0] : 0;
  const guint8 *src = tw_tensor_data (xc);
  guint8 *dst = tw_tensor_data (out);
  for (guint k = 0; k < samples->len; k++)
    {
      const tw_class_sample *s = &g_array_index (samples, tw_class_sample, k);
      memcpy (dst + k * row, src + (size_t) s->index * row, row);
    }
  return out;
}

gboolean
tw_trainer_classify (tw_trainer *tr, const tw_dataset *d, int64_t batch_size, int max_samples,
                     tw_class_report *out, GError **error)
{
  g_return_val_if_fail (tr != NULL && d != NULL && out != NULL, FALSE);
  g_return_val_if_fail (batch_size > 0 && max_samples >= 0, FALSE);
  g_return_val_if_fail (d->y->dtype == TW_I64, FALSE);
  memset (out, 0, sizeof *out);

  int64_t n = tw_dataset_size (d);
  if (n == 0)
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT,
                   "dataset '%s' is empty: no samples to classify", d->name ? d->name : "");
      return FALSE;
    }
  g_autoptr (tw_tensor) yh = tw_tensor_to_host (d->y);
  g_autoptr (tw_tensor) yc = tw_tensor_contiguous (yh);
  const int64_t *labels = tw_tensor_i64 (yc);

  /* The inference path (as `twb predict`): eval mode, no loss, so labels
   * are only read here.  The step only seeds kernels' random streams, which
   * eval mode does not draw from; nothing of the trainer changes. */
  gboolean compiled = tw_trainer_get_mode (tr) == TW_MODE_COMPILED;
  tw_eager *ex = tw_trainer_executor (tr);
  tw_compiled *cx = compiled ? tw_trainer_compiled (tr) : NULL;
  guint64 step = (guint64) tw_trainer_step_count (tr);
  g_autoptr (tw_batcher) b = tw_batcher_new (d, batch_size, FALSE, 0, FALSE);
  g_autoptr (GArray) all = g_array_sized_new (FALSE, FALSE, sizeof (tw_class_sample), n);
  g_autofree int64_t *confusion = NULL;
  int64_t c = 0, seen = 0, correct = 0;
  tw_tensor *x, *y;

  tw_batcher_reset (b, 0);
  while (tw_batcher_next (b, &x, &y))
    {
      g_autoptr (tw_tensor) xb = x;
      tw_tensor_unref (y);   /* the dataset's labels are read by index */
      int64_t bn = xb->shape[0];
      gboolean ok = compiled ? tw_compiled_run (cx, TW_PROGRAM_INFER, xb, NULL, step, error)
                             : tw_eager_forward (ex, xb, NULL, FALSE, step, error);
      tw_tensor *pred = !ok ? NULL : compiled ? tw_compiled_prediction (cx)
                                              : tw_eager_prediction (ex);
      if (ok && (pred == NULL || pred->ndim != 2 || pred->shape[0] != bn || pred->shape[1] < 2
                 || pred->shape[1] < d->n_classes || pred->shape[1] > TW_CLASS_REPORT_MAX_CLASSES))
        {
          g_autofree char *s = pred ? tw_shape_to_string (pred->ndim, pred->shape) : NULL;
          g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH,
                       "the model's output %s is not a classifier's [%" G_GINT64_FORMAT
                       ", classes] logits with %d to %d classes (dataset '%s')",
                       s ? s : "(none)", bn, MAX (2, d->n_classes), TW_CLASS_REPORT_MAX_CLASSES,
                       d->name ? d->name : "");
          ok = FALSE;
        }
      if (ok && c == 0)
        {
          c = pred->shape[1];
          ok = check_labels (labels, n, c, error);
          if (ok)
            confusion = g_new0 (int64_t, c * c);
        }
      if (ok)
        {
          g_autoptr (tw_tensor) ph = tw_tensor_to_host (pred);
          g_autoptr (tw_tensor) pf = tw_tensor_cast (ph, TW_F32);
          g_autoptr (tw_tensor) pc = tw_tensor_contiguous (pf);
          const float *pp = tw_tensor_f32 (pc);
          for (int64_t i = 0; i < bn; i++)
            {
              tw_class_sample s = { .index = seen + i, .label = (int) labels[seen + i] };
              s.predicted = (int) row_argmax (pp + i * c, c, &s.confidence);
              confusion[(int64_t) s.label * c + s.predicted]++;
              correct += s.label == s.predicted;
              g_array_append_val (all, s);
            }
          seen += bn;
        }
      tw_eager_release (ex);
      if (!ok)
        return FALSE;
    }
  g_assert (seen == n);

  g_array_sort (all, compare_samples);
  if (all->len > (guint) max_samples)
    g_array_set_size (all, max_samples);
  out->n_classes = (int) c;
  out->total = n;
  out->correct = correct;
  out->confusion = g_steal_pointer (&confusion);
  out->images = all->len ? gather_rows (d->x, all) : NULL;
  out->samples = g_steal_pointer (&all);
  return TRUE;
}

void
tw_class_report_copy (tw_class_report *dst, const tw_class_report *src)
{
  *dst = *src;
  int64_t cells = (int64_t) src->n_classes * src->n_classes;
  dst->confusion = src->confusion ? g_memdup2 (src->confusion, cells * sizeof (int64_t)) : NULL;
  if (src->samples)
    {
      dst->samples = g_array_sized_new (FALSE, FALSE, sizeof (tw_class_sample), src->samples->len);
      g_array_append_vals (dst->samples, src->samples->data, src->samples->len);
    }
  dst->images = src->images ? tw_tensor_clone (src->images) : NULL;
}

void
tw_class_report_clear (tw_class_report *r)
{
  if (r == NULL)
    return;
  g_free (r->confusion);
  g_clear_pointer (&r->samples, g_array_unref);
  g_clear_pointer (&r->images, tw_tensor_unref);
  memset (r, 0, sizeof *r);
}

typedef struct
{
  int cls;
  int64_t errors;
} class_errors;

static int
cmp_errors (gconstpointer pa, gconstpointer pb)
{
  const class_errors *a = pa, *b = pb;
  if (a->errors != b->errors)
    return a->errors > b->errors ? -1 : 1;
  return a->cls < b->cls ? -1 : a->cls > b->cls;
}

int
tw_class_report_most_confused (const tw_class_report *r, int k, int *out)
{
  int n = r ? r->n_classes : 0;
  if (n <= 0 || r->confusion == NULL || k <= 0)
    return 0;
  g_autofree class_errors *e = g_new0 (class_errors, n);
  for (int c = 0; c < n; c++)
    e[c].cls = c;
  for (int t = 0; t < n; t++)
    for (int p = 0; p < n; p++)
      if (t != p)
        {
          int64_t v = r->confusion[(int64_t) t * n + p];
          e[t].errors += v;
          e[p].errors += v;
        }
  qsort (e, n, sizeof *e, cmp_errors);
  int m = MIN (k, n);
  for (int i = 0; i < m; i++)
    out[i] = e[i].cls;
  return m;
}
