/* scan.h — whole-tensor scans the debugger and the dashboard run on every
 * op or step: a NaN / Inf check and a squared norm.  They have to cost
 * little next to the op itself (the NaN watch's budget is 5 % of a step),
 * so they keep many independent sums in flight and are compiled for the
 * widest vector unit the CPU has (function multi-versioning). */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

/* 0: every value finite; 1: a NaN (first kind found wins: NaN over Inf);
 * 2: an Inf and no NaN. */
int tw_scan_nonfinite_f32 (const float *x, int64_t n);
/* Σ x², accumulated in double. */
double tw_scan_sumsq_f32 (const float *x, int64_t n);

G_END_DECLS
