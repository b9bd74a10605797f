/* reduce-private.h — what reduce.c's sum, mean, max and min share with the
 * reductions of reduce-more.c (prod, logsumexp): their "axes" / "keepdim"
 * attributes read the same way. */
#pragma once

#include "engine/op.h"

/* mask[d] = TRUE for each reduced dim of an ndim input, from the "axes"
 * attribute (absent or empty: every dim; negative: counted from the end). */
gboolean tw_reduce_axes_mask (const tw_attrs *a, int ndim, gboolean *mask, GError **error);
/* A float input reduced over "axes", the dims kept as 1 under "keepdim". */
gboolean tw_reduce_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                          GError **error);
/* Attributes for broadcast_to re-inserting the dims a keepdim=false
 * reduction of x dropped (NULL when keepdim is set: plain broadcasting works). */
tw_attrs *tw_reduce_reinsert_attrs (tw_emit *e, const tw_attrs *a, tw_val *x);
