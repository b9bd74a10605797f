/* scan.c — see scan.h. */
#include "engine/cpu/scan.h"

#include <math.h>
#include <string.h>

/* 64 floats per block: with AVX-512 four registers of sums, with AVX2 eight,
 * with SSE sixteen — enough independent additions to cover the adder's
 * latency, so a scan runs at the speed of loading the data. */
#define LANES 64

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define MULTI __attribute__ ((target_clones ("avx512f", "avx2", "default")))
#else
#define MULTI
#endif

MULTI static float
nonfinite_probe (const float *restrict x, int64_t n)
{
  /* x * 0 is 0 for finite x and NaN for NaN and ±Inf. */
  float acc[LANES] = { 0 };
  int64_t i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int j = 0; j < LANES; j++)
      acc[j] += x[i + j] * 0.0f;
  float s = 0;
  for (; i < n; i++)
    s += x[i] * 0.0f;
  for (int j = 0; j < LANES; j++)
    s += acc[j];
  return s;
}

int
tw_scan_nonfinite_f32 (const float *x, int64_t n)
{
  if (nonfinite_probe (x, n) == 0.0f)
    return 0;
  for (int64_t i = 0; i < n; i++)
    if (isnan (x[i]))
      return 1;
  return 2;
}

MULTI double
tw_scan_sumsq_f32 (const float *restrict x, int64_t n)
{
  double acc[LANES / 2] = { 0 };
  int64_t i = 0;
  for (; i + LANES / 2 <= n; i += LANES / 2)
    for (int j = 0; j < LANES / 2; j++)
      acc[j] += (double) x[i + j] * x[i + j];
  double s = 0;
  for (; i < n; i++)
    s += (double) x[i] * x[i];
  for (int j = 0; j < LANES / 2; j++)
    s += acc[j];
  return s;
}

/* Columns a partial sum covers at a time: 1 KiB on the stack. */
#define COLSUM_COLS 256

void
tw_colsum_block_add_f32 (const float *dy, float *db, int64_t rows, int64_t N, int64_t j0,
                         int64_t j1)
{
  for (int64_t c0 = j0; c0 < j1; c0 += COLSUM_COLS)
    {
      int64_t w = MIN (COLSUM_COLS, j1 - c0);
      float part[COLSUM_COLS];
      memcpy (part, dy + c0, w * sizeof (float));
      for (int64_t i = 1; i < rows; i++)
        {
          const float *row = dy + i * N + c0;
#pragma omp simd
          for (int64_t j = 0; j < w; j++)
            part[j] += row[j];
        }
#pragma omp simd
      for (int64_t j = 0; j < w; j++)
        db[c0 + j] += part[j];
    }
}

void
tw_colsum_f32 (const float *dy, float *db, int64_t M, int64_t N, int64_t j0, int64_t j1)
{
  memset (db + j0, 0, MAX (j1 - j0, 0) * sizeof (float));
  for (int64_t i = 0; i < M; i += TW_COLSUM_ROWS)
    tw_colsum_block_add_f32 (dy + i * N, db, MIN (TW_COLSUM_ROWS, M - i), N, j0, j1);
}
