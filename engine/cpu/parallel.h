/* parallel.h — loops split over the OpenMP team only when that pays.
 *
 *   TW_PARALLEL_FOR (n * m > 32768, nthreads, i, n, {
 *     y[i] = f (x[i]);
 *   });
 *
 * runs `for (int64_t i = 0; i < n; i++) { … }` with a static schedule over
 * nthreads threads when the condition holds and nthreads > 1, and as a plain
 * loop on the calling thread otherwise.  Why not `#pragma omp parallel for
 * if (…)`: a region whose if clause is false still enters libgomp, which
 * allocates and frees a team structure for it every time (it caches teams
 * of two threads or more only) — an allocation per small kernel in a step
 * that must allocate nothing, and a microsecond or so each.
 *
 * The body is a macro argument: no preprocessor directives inside it (use
 * _Pragma), and iterations must be independent, as in any parallel for. */
#pragma once

#include <stdint.h>

#define TW_PARALLEL_FOR(cond, nthreads, i, n, ...)                                          \
  do                                                                                        \
    {                                                                                       \
      const int64_t tw_pf_n_ = (n);                                                         \
      const int tw_pf_nt_ = (nthreads);                                                     \
      if (tw_pf_nt_ > 1 && (cond))                                                          \
        {                                                                                   \
          _Pragma ("omp parallel for num_threads (tw_pf_nt_) schedule (static)")            \
          for (int64_t i = 0; i < tw_pf_n_; i++)                                            \
            __VA_ARGS__                                                                     \
        }                                                                                   \
      else                                                                                  \
        for (int64_t i = 0; i < tw_pf_n_; i++)                                              \
          __VA_ARGS__                                                                       \
    }                                                                                       \
  while (0)
