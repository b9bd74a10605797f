/* blas-core.h — which OpenBLAS kernels are in force, and whether the CPU
 * could run better ones.
 *
 * OpenBLAS picks its kernels ("core") at load time from the CPU's model
 * number.  A CPU newer than the OpenBLAS build falls back to an old core: on
 * a Xeon of family 6 model 207 (Emerald Rapids, AVX-512), OpenBLAS 0.3.21
 * runs its SSE3 "Prescott" kernels, about 5× slower on SGEMM than its
 * SkylakeX ones (docs: TOOLCHAIN, "OpenBLAS environment").  The environment
 * variable OPENBLAS_CORETYPE forces a core; the engine never sets it (it is
 * the user's and other programs' too) but says when it would help:
 *
 *   tw_cpu_features f;
 *   tw_cpu_features_detect (&f);
 *   g_autofree char *warn = tw_blas_core_advice (tw_blas_core_name (), &f,
 *                                                g_getenv ("OPENBLAS_CORETYPE"));
 *   if (warn)
 *     g_print ("warning: %s\n", warn);
 *
 * Cores are compared by the vector instructions their SGEMM kernels use
 * (tw_isa_tier), not by name: Cooperlake's SGEMM kernels are SkylakeX's,
 * Zen's are Haswell's, so a Sapphire Rapids on SkylakeX or an EPYC on
 * Cooperlake is not "below" anything. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum
{
  TW_ISA_UNKNOWN, /* not x86-64, or a core name we do not know */
  TW_ISA_SSE,     /* SSE2/SSE3 kernels: Prescott, Core2, Nehalem, Opteron, … */
  TW_ISA_AVX,     /* Sandybridge, Bulldozer and its successors */
  TW_ISA_AVX2,    /* AVX2 + FMA: Haswell, Zen */
  TW_ISA_AVX512,  /* AVX-512 F, CD, BW, DQ, VL: SkylakeX, Cooperlake, SapphireRapids */
} tw_isa_tier;

/* What cpuid (and XGETBV, for the registers the OS saves) says. */
typedef struct
{
  char vendor[13]; /* "GenuineIntel", "AuthenticAMD", … ("" when unknown) */
  int family, model;
  gboolean sse3, avx, avx2, fma, avx512; /* avx512: F, CD, BW, DQ and VL */
  gboolean avx512_bf16, amx;
} tw_cpu_features;

/* Fills f for the CPU this runs on (all FALSE off x86-64). */
void tw_cpu_features_detect (tw_cpu_features *f);

/* The widest tier whose kernels the CPU can run. */
tw_isa_tier tw_cpu_tier (const tw_cpu_features *f);

/* The tier of an OpenBLAS core name (case does not matter: OPENBLAS_CORETYPE
 * is read the same way); TW_ISA_UNKNOWN for a name not listed. */
tw_isa_tier tw_blas_core_tier (const char *core);

/* The OpenBLAS core to ask for on this CPU: its tier's first core —
 * SkylakeX (AVX-512), Haswell or, on AMD, Zen (AVX2), Sandybridge (AVX),
 * Prescott (SSE3) — or NULL when the tier is unknown.  Static string. */
const char *tw_blas_core_for (const tw_cpu_features *f);

/* "AVX-512", "AVX2", "AVX", "SSE3", "unknown".  Static string. */
const char *tw_isa_tier_name (tw_isa_tier t);

/* The core in force: openblas_get_corename (), e.g. "Cooperlake".  Static
 * (OpenBLAS's) string. */
const char *tw_blas_core_name (void);
/* openblas_get_config (): version and build options.  Static string. */
const char *tw_blas_config (void);

/* NULL when `core` (the core in force) is as good as the CPU allows or
 * either tier is unknown; else a newly allocated sentence for the user
 * (g_free it): the core and its tier, the CPU's, and the exact
 * OPENBLAS_CORETYPE=… that fixes it — saying so when coretype_env (the
 * variable's value, or NULL when unset) is what holds it back. */
char *tw_blas_core_advice (const char *core, const tw_cpu_features *f, const char *coretype_env);

G_END_DECLS
