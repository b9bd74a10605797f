/* gemm_avx2.c — packed, cache-blocked SGEMM with an AVX2 + FMA micro-kernel
 * (6 × 16), for x86-64 CPUs without AVX-512.  Not written yet: reports
 * itself unsupported, so the dispatch uses OpenBLAS. */
#define G_LOG_DOMAIN "twb-gemm"

#include "engine/cpu/gemm-private.h"

gboolean
tw_gemm_avx2_supported (void)
{
  return FALSE;
}

void
tw_gemm_avx2_run (const tw_gemm_args *g, int64_t m0, int64_t m1, int64_t n0, int64_t n1)
{
  g_assert_not_reached ();
}
