/* tensor-stats.c — see tensor-stats.h. */
#define G_LOG_DOMAIN "tw-tensor-stats"

#include "engine/tensor-stats.h"

#include "engine/device.h"

#include <math.h>
#include <string.h>

G_DEFINE_QUARK (tw-tensor-stats-error-quark, tw_tensor_stats_error)

/* Elements converted to double per step: 32 KiB of doubles stays in L1/L2. */
#define CHUNK 4096

/* A contiguous host tensor with t's values (a new reference). */
static tw_tensor *
host_contiguous (const tw_tensor *t)
{
  tw_tensor *tt = (tw_tensor *) t;
  const tw_device *dev = tw_tensor_device (t);
  if (tw_device_is_host (dev))
    return tw_tensor_contiguous (tt);
  if (tw_tensor_is_contiguous (t))
    return tw_tensor_to_host (tt);
  /* A strided view of device memory: the whole storage to the host, the
   * same view over that copy, then a contiguous copy of the view. */
  g_autoptr (tw_tensor) whole
    = tw_tensor_new (TW_U8, 1, (int64_t[]) { (int64_t) t->storage->nbytes });
  tw_device_copy_d2h (dev, tw_tensor_data (whole), t->storage->data, t->storage->nbytes, NULL);
  tw_tensor view = *t;
  view.refcount = 1;
  view.storage = whole->storage;
  return tw_tensor_clone (&view);
}

/* buf[k] = element start + k of contiguous data p, for k < n. */
static void
load_chunk (const void *p, tw_dtype dt, int64_t start, int64_t n, double *buf)
{
  switch (dt)
    {
    case TW_F32:
      for (int64_t k = 0; k < n; k++)
        buf[k] = ((const float *) p)[start + k];
      break;
    case TW_F64:
      memcpy (buf, (const double *) p + start, n * sizeof (double));
      break;
    case TW_I32:
      for (int64_t k = 0; k < n; k++)
        buf[k] = ((const int32_t *) p)[start + k];
      break;
    case TW_I64:
      for (int64_t k = 0; k < n; k++)
        buf[k] = (double) ((const int64_t *) p)[start + k];
      break;
    case TW_U8:
      for (int64_t k = 0; k < n; k++)
        buf[k] = ((const uint8_t *) p)[start + k];
      break;
    default:
      g_assert_not_reached ();
    }
}

/* Neumaier's compensated sum (Kahan–Babuška): exact to one rounding of the
 * result for any order of magnitudes. */
typedef struct
{
  double s, c;
} ksum;

static inline void
ksum_add (ksum *k, double x)
{
  double t = k->s + x;
  if (fabs (k->s) >= fabs (x))
    k->c += (k->s - t) + x;
  else
    k->c += (x - t) + k->s;
  k->s = t;
}

static inline double
ksum_value (const ksum *k)
{
  return k->s + k->c;
}

int
tw_tensor_stats_bin (const tw_tensor_stats *s, double x)
{
  if (s->n_bins <= 0 || !isfinite (x))
    return -1;
  if (s->n_bins == 1)
    return 0;
  /* Halves: max - min of finite values may exceed DBL_MAX.  One rounding
   * of (x - lo) · n, one of the division: exact for integer data. */
  double range = s->hist_hi * 0.5 - s->hist_lo * 0.5;
  double f = (x * 0.5 - s->hist_lo * 0.5) * s->n_bins / range;
  if (!(f >= 0))
    return 0;
  return f >= s->n_bins ? s->n_bins - 1 : (int) f;
}

void
tw_tensor_stats_compute (const tw_tensor *t, int n_bins, tw_tensor_stats *out)
{
  g_return_if_fail (n_bins >= 0);
  memset (out, 0, sizeof *out);
  out->min = out->max = out->mean = out->std = out->abs_max = NAN;
  out->hist_lo = out->hist_hi = NAN;
  out->count = tw_tensor_numel (t);
  if (out->count == 0)
    return;

  g_autoptr (tw_tensor) c = host_contiguous (t);
  const void *p = tw_tensor_data (c);
  double buf[CHUNK];
  int64_t n = out->count;
  double lo = INFINITY, hi = -INFINITY;
  ksum raw = { 0, 0 };

  for (int64_t i0 = 0; i0 < n; i0 += CHUNK)
    {
      int64_t m = MIN (CHUNK, n - i0);
      load_chunk (p, c->dtype, i0, m, buf);
      for (int64_t k = 0; k < m; k++)
        {
          double x = buf[k];
          if (isnan (x))
            out->nan++;
          else if (isinf (x))
            out->inf++;
          else
            {
              out->finite++;
              out->zeros += x == 0;
              lo = MIN (lo, x);
              hi = MAX (hi, x);
              ksum_add (&raw, x);
            }
        }
    }
  if (out->finite == 0)
    return;
  out->min = lo;
  out->max = hi;
  out->abs_max = MAX (fabs (lo), fabs (hi));

  /* Sums over x · 2^-e with abs_max · 2^-e in [0.5, 1): exact scaling, and
   * the squares cannot overflow.  e >= -1020 keeps 2^-e finite.  The sum
   * of the unscaled values (pass one) is the same sum times 2^e unless it
   * overflowed; only then is it taken again, scaled. */
  int e = 0;
  if (out->abs_max > 0)
    frexp (out->abs_max, &e);
  e = MAX (e, -1020);
  double scale = ldexp (1.0, -e);

  double total = ksum_value (&raw) * scale;
  if (!isfinite (ksum_value (&raw)))
    {
      ksum sum = { 0, 0 };
      for (int64_t i0 = 0; i0 < n; i0 += CHUNK)
        {
          int64_t m = MIN (CHUNK, n - i0);
          load_chunk (p, c->dtype, i0, m, buf);
          for (int64_t k = 0; k < m; k++)
            if (isfinite (buf[k]))
              ksum_add (&sum, buf[k] * scale);
        }
      total = ksum_value (&sum);
    }
  double nf = (double) out->finite;
  double mean_s = total / nf;

  if (n_bins > 0)
    {
      out->n_bins = lo == hi ? 1 : n_bins;
      out->hist_lo = lo;
      out->hist_hi = hi;
      out->hist = g_new0 (int64_t, out->n_bins);
    }

  /* Corrected two-pass variance: (Σd² - (Σd)²/n) / n with d = x - mean. */
  ksum sd = { 0, 0 }, sd2 = { 0, 0 };
  for (int64_t i0 = 0; i0 < n; i0 += CHUNK)
    {
      int64_t m = MIN (CHUNK, n - i0);
      load_chunk (p, c->dtype, i0, m, buf);
      for (int64_t k = 0; k < m; k++)
        {
          double x = buf[k];
          if (!isfinite (x))
            continue;
          double d = x * scale - mean_s;
          ksum_add (&sd, d);
          ksum_add (&sd2, d * d);
          if (out->hist)
            out->hist[tw_tensor_stats_bin (out, x)]++;
        }
    }
  double s1 = ksum_value (&sd);
  double var_s = (ksum_value (&sd2) - s1 * s1 / nf) / nf;
  out->mean = mean_s / scale;
  out->std = sqrt (MAX (var_s, 0.0)) / scale;
}

tw_tensor *
tw_tensor_diff (const tw_tensor *a, const tw_tensor *b, GError **error)
{
  if (!tw_tensor_same_shape (a, b))
    {
      g_autofree char *sa = tw_shape_to_string (a->ndim, a->shape);
      g_autofree char *sb = tw_shape_to_string (b->ndim, b->shape);
      g_set_error (error, TW_TENSOR_STATS_ERROR, TW_TENSOR_STATS_ERROR_SHAPE,
                   "Cannot take the difference of tensors of shapes %s and %s", sa, sb);
      return NULL;
    }
  g_autoptr (tw_tensor) ca = host_contiguous (a);
  g_autoptr (tw_tensor) cb = host_contiguous (b);
  tw_tensor *d = tw_tensor_new (TW_F64, a->ndim, a->shape);
  int64_t n = tw_tensor_numel (d);
  double *out = tw_tensor_f64 (d);
  double buf[CHUNK];
  for (int64_t i0 = 0; i0 < n; i0 += CHUNK)
    {
      int64_t m = MIN (CHUNK, n - i0);
      load_chunk (tw_tensor_data (ca), ca->dtype, i0, m, out + i0);
      load_chunk (tw_tensor_data (cb), cb->dtype, i0, m, buf);
      for (int64_t k = 0; k < m; k++)
        out[i0 + k] -= buf[k];
    }
  return d;
}

gboolean
tw_tensor_stats_diff (const tw_tensor *a, const tw_tensor *b, int n_bins, tw_tensor_stats *out,
                      GError **error)
{
  g_autoptr (tw_tensor) d = tw_tensor_diff (a, b, error);
  if (d == NULL)
    {
      memset (out, 0, sizeof *out);
      return FALSE;
    }
  tw_tensor_stats_compute (d, n_bins, out);
  return TRUE;
}

void
tw_tensor_stats_clear (tw_tensor_stats *s)
{
  g_clear_pointer (&s->hist, g_free);
  s->n_bins = 0;
}
