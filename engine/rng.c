/* rng.c — Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy
 * as 1, 2, 3", SC'11), the generator cuRAND and PyTorch's CUDA backend use. */
#include "engine/rng.h"

#include <math.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void
tw_philox4x32 (uint64_t seed, uint64_t stream, uint64_t counter, uint32_t out[4])
{
  uint32_t c0 = (uint32_t) counter, c1 = (uint32_t) (counter >> 32);
  uint32_t c2 = (uint32_t) stream, c3 = (uint32_t) (stream >> 32);
  uint32_t k0 = (uint32_t) seed, k1 = (uint32_t) (seed >> 32);
  for (int r = 0; r < 10; r++)
    {
      uint64_t p0 = (uint64_t) PHILOX_M0 * c0;
      uint64_t p1 = (uint64_t) PHILOX_M1 * c2;
      uint32_t n0 = (uint32_t) (p1 >> 32) ^ c1 ^ k0;
      uint32_t n1 = (uint32_t) p1;
      uint32_t n2 = (uint32_t) (p0 >> 32) ^ c3 ^ k1;
      uint32_t n3 = (uint32_t) p0;
      c0 = n0; c1 = n1; c2 = n2; c3 = n3;
      k0 += PHILOX_W0;
      k1 += PHILOX_W1;
    }
  out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

float
tw_rng_uniform (uint64_t seed, uint64_t stream, uint64_t counter)
{
  uint32_t r[4];
  tw_philox4x32 (seed, stream, counter, r);
  return (float) (r[0] >> 8) * (1.0f / 16777216.0f);
}

float
tw_rng_normal (uint64_t seed, uint64_t stream, uint64_t counter)
{
  uint32_t r[4];
  tw_philox4x32 (seed, stream, counter, r);
  /* u1 in (0, 1] so the log is finite. */
  double u1 = ((double) (r[0] >> 8) + 1.0) / 16777216.0;
  double u2 = (double) (r[1] >> 8) / 16777216.0;
  return (float) (sqrt (-2.0 * log (u1)) * cos (2.0 * G_PI * u2));
}

void
tw_rng_fill_uniform (float *out, int64_t n, uint64_t seed, uint64_t stream, float lo, float hi)
{
  for (int64_t i = 0; i < n; i++)
    out[i] = lo + (hi - lo) * tw_rng_uniform (seed, stream, (uint64_t) i);
}

void
tw_rng_fill_normal (float *out, int64_t n, uint64_t seed, uint64_t stream, float mean, float std)
{
  for (int64_t i = 0; i < n; i++)
    out[i] = mean + std * tw_rng_normal (seed, stream, (uint64_t) i);
}

void
tw_rng_permutation (int64_t *perm, int64_t n, uint64_t seed, uint64_t stream)
{
  for (int64_t i = 0; i < n; i++)
    perm[i] = i;
  for (int64_t i = n - 1; i > 0; i--)
    {
      uint32_t r[4];
      tw_philox4x32 (seed, stream, (uint64_t) i, r);
      uint64_t x = ((uint64_t) r[0] << 32) | r[1];
      int64_t j = (int64_t) (x % (uint64_t) (i + 1));
      int64_t t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
}
