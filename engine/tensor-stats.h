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
 * Any dtype (f32, f64, i32, i64, u8); non-float dtypes have no NaN/Inf.
 * Mean and std use a compensated two-pass sum, so they match an independent
 * float64 computation to ~1e-12 relative.
 */
#pragma once

#include "engine/tensor.h"

G_BEGIN_DECLS

typedef struct
{
  int64_t count;          /* elements */
  int64_t finite;         /* of which finite */
  int64_t nan, inf;       /* NaN, ±Inf */
  int64_t zeros;
  double min, max;        /* over finite values (NaN when none) */
  double mean, std;       /* over finite values */
  double abs_max;
  int n_bins;
  double hist_lo, hist_hi;  /* bin i covers [lo + i·w, lo + (i+1)·w), the last one closed */
  int64_t *hist;          /* n_bins counts; owned */
} tw_tensor_stats;

void tw_tensor_stats_compute (const tw_tensor *t, int n_bins, tw_tensor_stats *out);
/* Stats of a - b (same shape and element count; FALSE with an error naming
 * both shapes otherwise). */
gboolean tw_tensor_stats_diff (const tw_tensor *a, const tw_tensor *b, int n_bins,
                               tw_tensor_stats *out, GError **error);
void tw_tensor_stats_clear (tw_tensor_stats *s);
/* Element at a flat index as double (any dtype). */
double tw_tensor_get_flat (const tw_tensor *t, int64_t i);

G_END_DECLS
