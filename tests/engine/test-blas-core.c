/* test-blas-core.c — the OpenBLAS core against the CPU (engine/cpu/
 * blas-core.h): the warning logic on synthetic core / CPU pairs (the
 * machines the project is measured on, and the cases around them), and the
 * detection on this machine for consistency only (its values are the
 * machine's, not checked). */
#include "engine/cpu/blas-core.h"

#include <glib.h>
#include <string.h>

static tw_cpu_features
cpu (const char *vendor, int family, int model, tw_isa_tier tier, gboolean bf16)
{
  tw_cpu_features f;
  memset (&f, 0, sizeof f);
  g_strlcpy (f.vendor, vendor, sizeof f.vendor);
  f.family = family;
  f.model = model;
  f.sse3 = tier >= TW_ISA_SSE;
  f.avx = tier >= TW_ISA_AVX;
  f.avx2 = f.fma = tier >= TW_ISA_AVX2;
  f.avx512 = tier >= TW_ISA_AVX512;
  f.avx512_bf16 = f.amx = f.avx512 && bf16;
  return f;
}

static void
test_tiers (void)
{
  g_assert_cmpint (tw_blas_core_tier ("Prescott"), ==, TW_ISA_SSE);
  g_assert_cmpint (tw_blas_core_tier ("prescott"), ==, TW_ISA_SSE); /* as OPENBLAS_CORETYPE is read */
  g_assert_cmpint (tw_blas_core_tier ("SkylakeX"), ==, TW_ISA_AVX512);
  g_assert_cmpint (tw_blas_core_tier ("COOPERLAKE"), ==, TW_ISA_AVX512);
  g_assert_cmpint (tw_blas_core_tier ("Zen"), ==, TW_ISA_AVX2);
  g_assert_cmpint (tw_blas_core_tier ("Haswell"), ==, TW_ISA_AVX2);
  g_assert_cmpint (tw_blas_core_tier ("Sandybridge"), ==, TW_ISA_AVX);
  g_assert_cmpint (tw_blas_core_tier ("Unknown"), ==, TW_ISA_UNKNOWN);
  g_assert_cmpint (tw_blas_core_tier (NULL), ==, TW_ISA_UNKNOWN);
  g_assert_cmpint (tw_blas_core_tier (""), ==, TW_ISA_UNKNOWN);
}

/* The pairs the issue names, and their neighbours. */
static void
test_advice (void)
{
  /* Emerald Rapids (family 6 model 207) unknown to OpenBLAS 0.3.21: Prescott
   * in force, the variable unset: warn, with the exact fix. */
  tw_cpu_features emr = cpu ("GenuineIntel", 6, 207, TW_ISA_AVX512, TRUE);
  g_autofree char *w = tw_blas_core_advice ("Prescott", &emr, NULL);
  g_assert_nonnull (w);
  g_assert_nonnull (strstr (w, "OPENBLAS_CORETYPE=SkylakeX"));
  g_assert_nonnull (strstr (w, "Prescott"));
  g_assert_nonnull (strstr (w, "AVX-512"));
  g_assert_nonnull (strstr (w, "family 6 model 207"));

  /* Sapphire Rapids on SkylakeX: as good as it gets for SGEMM (no warning,
   * although the CPU has AVX512-BF16 and AMX). */
  tw_cpu_features spr = cpu ("GenuineIntel", 6, 143, TW_ISA_AVX512, TRUE);
  g_assert_null (tw_blas_core_advice ("SkylakeX", &spr, NULL));
  /* Zen 4 on Cooperlake: likewise. */
  tw_cpu_features zen4 = cpu ("AuthenticAMD", 25, 17, TW_ISA_AVX512, TRUE);
  g_assert_null (tw_blas_core_advice ("Cooperlake", &zen4, NULL));

  /* The variable is what holds it back: the warning says so. */
  g_autofree char *w2 = tw_blas_core_advice ("Prescott", &zen4, "Prescott");
  g_assert_nonnull (w2);
  g_assert_nonnull (strstr (w2, "because OPENBLAS_CORETYPE=Prescott is set"));
  g_assert_nonnull (strstr (w2, "OPENBLAS_CORETYPE=SkylakeX"));
  g_autofree char *w3 = tw_blas_core_advice ("Haswell", &zen4, "haswell");
  g_assert_nonnull (w3);
  g_assert_nonnull (strstr (w3, "OPENBLAS_CORETYPE=haswell is set"));

  /* AVX2 machines: Zen on AMD, Haswell on Intel; Sandybridge is below. */
  tw_cpu_features zen2 = cpu ("AuthenticAMD", 23, 49, TW_ISA_AVX2, FALSE);
  g_assert_null (tw_blas_core_advice ("Zen", &zen2, NULL));
  g_assert_null (tw_blas_core_advice ("Haswell", &zen2, NULL));
  g_autofree char *w4 = tw_blas_core_advice ("Sandybridge", &zen2, NULL);
  g_assert_nonnull (strstr (w4, "OPENBLAS_CORETYPE=Zen"));
  tw_cpu_features hsw = cpu ("GenuineIntel", 6, 63, TW_ISA_AVX2, FALSE);
  g_autofree char *w5 = tw_blas_core_advice ("Prescott", &hsw, NULL);
  g_assert_nonnull (strstr (w5, "OPENBLAS_CORETYPE=Haswell"));

  /* A core above the CPU (a forced core the CPU cannot run would crash
   * OpenBLAS itself; the advice only ever asks for more): no warning. */
  g_assert_null (tw_blas_core_advice ("SkylakeX", &hsw, NULL));
  /* Unknown either way: nothing to say. */
  g_assert_null (tw_blas_core_advice ("Unknown", &emr, NULL));
  tw_cpu_features none = cpu ("", 0, 0, TW_ISA_UNKNOWN, FALSE);
  g_assert_null (tw_blas_core_advice ("Prescott", &none, NULL));
}

static void
test_core_for (void)
{
  tw_cpu_features f = cpu ("GenuineIntel", 6, 207, TW_ISA_AVX512, TRUE);
  g_assert_cmpstr (tw_blas_core_for (&f), ==, "SkylakeX");
  f = cpu ("AuthenticAMD", 23, 1, TW_ISA_AVX2, FALSE);
  g_assert_cmpstr (tw_blas_core_for (&f), ==, "Zen");
  f = cpu ("GenuineIntel", 6, 42, TW_ISA_AVX, FALSE);
  g_assert_cmpstr (tw_blas_core_for (&f), ==, "Sandybridge");
  f = cpu ("GenuineIntel", 6, 15, TW_ISA_SSE, FALSE);
  g_assert_cmpstr (tw_blas_core_for (&f), ==, "Prescott");
  f = cpu ("", 0, 0, TW_ISA_UNKNOWN, FALSE);
  g_assert_null (tw_blas_core_for (&f));
}

/* This machine: the detection is self-consistent, and the core in force is
 * one OpenBLAS names (its value is the machine's). */
static void
test_this_machine (void)
{
  tw_cpu_features f;
  tw_cpu_features_detect (&f);
  g_assert_true (!f.avx512 || f.avx2);
  g_assert_true (!f.avx2 || f.avx);
  g_assert_true (!f.avx512_bf16 || f.avx512);
  const char *core = tw_blas_core_name ();
  g_assert_nonnull (core);
  g_assert_nonnull (tw_blas_config ());
  g_test_message ("%s family %d model %d, tier %s; OpenBLAS core %s (%s)", f.vendor, f.family,
                  f.model, tw_isa_tier_name (tw_cpu_tier (&f)), core,
                  tw_isa_tier_name (tw_blas_core_tier (core)));
#if defined(__x86_64__)
  g_assert_cmpstr (f.vendor, !=, "");
  g_assert_true (f.sse3);
#endif
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/blas-core/tiers", test_tiers);
  g_test_add_func ("/engine/blas-core/advice", test_advice);
  g_test_add_func ("/engine/blas-core/core-for", test_core_for);
  g_test_add_func ("/engine/blas-core/this-machine", test_this_machine);
  return g_test_run ();
}
