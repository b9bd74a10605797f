/* tensor-stats.h — what the tensor inspector shows about a tensor, computed
 * in float64 over a host copy: count, min, max, mean, std (population),
 * NaN and Inf counts, a histogram of the finite values, and the same of
 * the element-wise difference of two tensors of the same shape.
 *
 *   tw_tensor_stats st;
 *   tw_tensor_stats_compute (t, 64, &st);       // 64 histogram bins
 *   ... st.mean, st.hist[i] ...
 *   tw_tensor_stats_clear (&st);
 *
 * Any dtype (f32, f64, i32, i64, u8); non-float dtypes have no NaN/Inf
 * (i64 values beyond 2^53 are rounded to the nearest double).  Any strides;
 * device tensors are copied to the host first.
 * Mean and std use a compensated two-pass sum, so they match an independent
 * float64 computation to ~1e-12 relative.  The sums run over the values
 * scaled by a power of two near 1 / abs_max (exact), so values up to
 * DBL_MAX do not overflow the sum of squares.
 *
 * The histogram: n_bins equal bins over [min, max] of the finite values.
 * When min == max (a constant tensor, one finite value) it has a single bin
 * (n_bins 1, hist_lo == hist_hi == the value) holding every finite value;
 * with no finite values (or n_bins 0 asked for) n_bins is 0 and hist NULL.
 */
#pragma once

#include "engine/tensor.h"

G_BEGIN_DECLS

#define TW_TENSOR_STATS_ERROR (tw_tensor_stats_error_quark ())
GQuark tw_tensor_stats_error_quark (void);

typedef enum
{
  TW_TENSOR_STATS_ERROR_SHAPE,   /* tw_tensor_stats_diff / tw_tensor_diff: shapes differ */
} tw_tensor_stats_error_code;

typedef struct
{
  int64_t count;          /* elements */
  int64_t finite;         /* of which finite */
  int64_t nan, inf;       /* NaN, ±Inf */
  int64_t zeros;
  double min, max;        /* over finite values (NaN when none) */
  double mean, std;       /* over finite values (NaN when none) */
  double abs_max;         /* over finite values (NaN when none) */
  int n_bins;
  double hist_lo, hist_hi;  /* bin i covers [lo + i·w, lo + (i+1)·w), the last one closed */
  int64_t *hist;          /* n_bins counts; owned */
} tw_tensor_stats;

/* n_bins >= 0; out is overwritten (not cleared first): clear it after. */
void tw_tensor_stats_compute (const tw_tensor *t, int n_bins, tw_tensor_stats *out);
/* Stats of a - b (same shape and element count; FALSE with an error naming
 * both shapes otherwise, and out zeroed, so clearing it is safe). */
gboolean tw_tensor_stats_diff (const tw_tensor *a, const tw_tensor *b, int n_bins,
                               tw_tensor_stats *out, GError **error);
void tw_tensor_stats_clear (tw_tensor_stats *s);
/* Element at a flat index as double (any dtype).  The same function as in
 * engine/tensor.h (defined in tensor.c), declared here for the inspector. */
double tw_tensor_get_flat (const tw_tensor *t, int64_t i);

/* Added for the inspector's Diff page: a - b element-wise as a new
 * contiguous host f64 tensor of a's shape (any dtypes; device tensors are
 * read on the host).  NULL with TW_TENSOR_STATS_ERROR_SHAPE naming both
 * shapes when they differ.  The caller unrefs the result. */
tw_tensor *tw_tensor_diff (const tw_tensor *a, const tw_tensor *b, GError **error);
/* Added: the bin of the finite value x in s's histogram (clamped to
 * [0, n_bins - 1]); -1 when s has no bins or x is not finite. */
int tw_tensor_stats_bin (const tw_tensor_stats *s, double x);

G_END_DECLS
