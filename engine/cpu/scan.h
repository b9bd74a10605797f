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

/* Column sums db [j] = Σ_i dy [i, j] of dy [M, N] (rows N apart), for
 * columns [j0, j1): the gradient of a bias over a batch.  Rows are summed
 * in blocks of TW_COLSUM_ROWS, each block in row order into a partial sum,
 * the partials added to db in order, so the rounding error grows with
 * M / TW_COLSUM_ROWS + TW_COLSUM_ROWS instead of M (a full batch of 60,000
 * rows summed one by one in float32 loses about 10 bits).  The order
 * depends on M alone: any split of the columns between threads gives the
 * same bits. */
#define TW_COLSUM_ROWS 64
void tw_colsum_f32 (const float *dy, float *db, int64_t M, int64_t N, int64_t j0, int64_t j1);
/* One block's step of the same sum: db [j0, j1) += Σ of rows [0, rows) of
 * dy (rows ≤ TW_COLSUM_ROWS), for kernels that produce the rows block by
 * block: zeroing db, then calling this for rows 0.., TW_COLSUM_ROWS at a
 * time, gives tw_colsum_f32's bits. */
void tw_colsum_block_add_f32 (const float *dy, float *db, int64_t rows, int64_t N, int64_t j0,
                              int64_t j1);

G_END_DECLS
