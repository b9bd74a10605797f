/* rng.h — counter-based random numbers (Philox-4x32-10).
 *
 * Each number is a pure function of (seed, stream, counter), so the same seed
 * gives the same weights and dropout masks whatever the thread count or the
 * order of work: element i of a tensor uses counter i.
 *
 *   float u = tw_rng_uniform (seed, tw_node_key ("fc1.weight"), i);   // [0, 1)
 */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

/* Four 32-bit words for (key = seed, stream; counter). */
void tw_philox4x32 (uint64_t seed, uint64_t stream, uint64_t counter, uint32_t out[4]);
/* Uniform in [0, 1) with 24 bits. */
float tw_rng_uniform (uint64_t seed, uint64_t stream, uint64_t counter);
/* Standard normal (Box–Muller on one Philox block). */
float tw_rng_normal (uint64_t seed, uint64_t stream, uint64_t counter);
/* Fill n floats: uniform in [lo, hi) or normal(mean, std), element i from counter i. */
void tw_rng_fill_uniform (float *out, int64_t n, uint64_t seed, uint64_t stream, float lo, float hi);
void tw_rng_fill_normal (float *out, int64_t n, uint64_t seed, uint64_t stream, float mean,
                         float std);
/* Fisher–Yates permutation of 0..n-1 driven by Philox (stream, counter i). */
void tw_rng_permutation (int64_t *perm, int64_t n, uint64_t seed, uint64_t stream);

G_END_DECLS
