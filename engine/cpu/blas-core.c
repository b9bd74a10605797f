/* blas-core.c — the OpenBLAS core in force against what the CPU supports;
 * see blas-core.h. */
#define G_LOG_DOMAIN "twb-cpu"

#include "engine/cpu/blas-core.h"

#include <cblas.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define HAVE_CPUID 1
#else
#define HAVE_CPUID 0
#endif

#if HAVE_CPUID
/* XCR0: which register states the OS saves on a context switch.  Without
 * them the instructions fault even where cpuid lists them. */
static guint64
xgetbv0 (void)
{
  guint32 lo, hi;
  __asm__ volatile ("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((guint64) hi << 32) | lo;
}
#endif

void
tw_cpu_features_detect (tw_cpu_features *f)
{
  memset (f, 0, sizeof *f);
#if HAVE_CPUID
  unsigned a, b, c, d, max;
  if (!__get_cpuid (0, &max, &b, &c, &d))
    return;
  memcpy (f->vendor, &b, 4);
  memcpy (f->vendor + 4, &d, 4);
  memcpy (f->vendor + 8, &c, 4);
  f->vendor[12] = '\0';
  if (max < 1 || !__get_cpuid (1, &a, &b, &c, &d))
    return;
  /* Intel SDM vol. 2A, CPUID leaf 1 EAX: the extended family and model. */
  f->family = (int) ((a >> 8) & 0xf);
  f->model = (int) ((a >> 4) & 0xf);
  if (f->family == 0xf)
    f->family += (int) ((a >> 20) & 0xff);
  if (f->family == 6 || f->family >= 0xf)
    f->model += (int) (((a >> 16) & 0xf) << 4);
  f->sse3 = (c & bit_SSE3) != 0;
  gboolean osxsave = (c & bit_OSXSAVE) != 0;
  guint64 xcr0 = osxsave ? xgetbv0 () : 0;
  gboolean ymm = (xcr0 & 0x6) == 0x6;            /* SSE and AVX state */
  gboolean zmm = ymm && (xcr0 & 0xe0) == 0xe0;   /* opmask, ZMM_Hi256, Hi16_ZMM */
  gboolean tiles = (xcr0 & 0x60000) == 0x60000;  /* XTILECFG, XTILEDATA */
  f->avx = ymm && (c & bit_AVX) != 0;
  f->fma = f->avx && (c & bit_FMA) != 0;
  if (max >= 7 && __get_cpuid_count (7, 0, &a, &b, &c, &d))
    {
      unsigned sub = a;
      f->avx2 = f->avx && (b & bit_AVX2) != 0;
      const unsigned avx512 = bit_AVX512F | bit_AVX512CD | bit_AVX512BW | bit_AVX512DQ
                              | bit_AVX512VL;
      f->avx512 = zmm && (b & avx512) == avx512;
      f->amx = tiles && (d & (1u << 24)) != 0;   /* AMX-TILE: leaf 7.0 EDX bit 24 */
      if (sub >= 1 && __get_cpuid_count (7, 1, &a, &b, &c, &d))
        f->avx512_bf16 = f->avx512 && (a & (1u << 5)) != 0; /* leaf 7.1 EAX bit 5 */
    }
#endif
}

tw_isa_tier
tw_cpu_tier (const tw_cpu_features *f)
{
  if (f->avx512)
    return TW_ISA_AVX512;
  if (f->avx2 && f->fma)
    return TW_ISA_AVX2;
  if (f->avx)
    return TW_ISA_AVX;
  if (f->sse3)
    return TW_ISA_SSE;
  return TW_ISA_UNKNOWN;
}

/* OpenBLAS 0.3.21's x86-64 core names (driver/others/dynamic.c,
 * corename[]) by the instructions their SGEMM kernels use. */
static const struct
{
  const char *name;
  tw_isa_tier tier;
} cores[] = {
  { "SkylakeX", TW_ISA_AVX512 },    { "Cooperlake", TW_ISA_AVX512 },
  { "SapphireRapids", TW_ISA_AVX512 },
  { "Haswell", TW_ISA_AVX2 },       { "Zen", TW_ISA_AVX2 },
  { "Sandybridge", TW_ISA_AVX },    { "Bulldozer", TW_ISA_AVX },
  { "Piledriver", TW_ISA_AVX },     { "Steamroller", TW_ISA_AVX },
  { "Excavator", TW_ISA_AVX },
  { "Prescott", TW_ISA_SSE },       { "Core2", TW_ISA_SSE },
  { "Penryn", TW_ISA_SSE },         { "Dunnington", TW_ISA_SSE },
  { "Nehalem", TW_ISA_SSE },        { "Atom", TW_ISA_SSE },
  { "Opteron", TW_ISA_SSE },        { "Opteron_SSE3", TW_ISA_SSE },
  { "Barcelona", TW_ISA_SSE },      { "Bobcat", TW_ISA_SSE },
  { "Nano", TW_ISA_SSE },           { "Katmai", TW_ISA_SSE },
  { "Coppermine", TW_ISA_SSE },     { "Northwood", TW_ISA_SSE },
  { "Banias", TW_ISA_SSE },         { "Athlon", TW_ISA_SSE },
};

tw_isa_tier
tw_blas_core_tier (const char *core)
{
  for (guint i = 0; core && i < G_N_ELEMENTS (cores); i++)
    if (g_ascii_strcasecmp (core, cores[i].name) == 0)
      return cores[i].tier;
  return TW_ISA_UNKNOWN;
}

const char *
tw_blas_core_for (const tw_cpu_features *f)
{
  switch (tw_cpu_tier (f))
    {
    case TW_ISA_AVX512:
      /* Also for CPUs with AVX512-BF16: Cooperlake's SGEMM kernels are
       * SkylakeX's, and SkylakeX is the core measured on the Xeons. */
      return "SkylakeX";
    case TW_ISA_AVX2:
      return strcmp (f->vendor, "AuthenticAMD") == 0 ? "Zen" : "Haswell";
    case TW_ISA_AVX:
      return "Sandybridge";
    case TW_ISA_SSE:
      return "Prescott";
    case TW_ISA_UNKNOWN:
      break;
    }
  return NULL;
}

const char *
tw_isa_tier_name (tw_isa_tier t)
{
  switch (t)
    {
    case TW_ISA_AVX512:
      return "AVX-512";
    case TW_ISA_AVX2:
      return "AVX2";
    case TW_ISA_AVX:
      return "AVX";
    case TW_ISA_SSE:
      return "SSE3";
    case TW_ISA_UNKNOWN:
      break;
    }
  return "unknown";
}

const char *
tw_blas_core_name (void)
{
  return openblas_get_corename ();
}

const char *
tw_blas_config (void)
{
  return openblas_get_config ();
}

char *
tw_blas_core_advice (const char *core, const tw_cpu_features *f, const char *coretype_env)
{
  tw_isa_tier have = tw_blas_core_tier (core), can = tw_cpu_tier (f);
  const char *want = tw_blas_core_for (f);
  if (have == TW_ISA_UNKNOWN || can == TW_ISA_UNKNOWN || have >= can || want == NULL)
    return NULL;
  gboolean forced = coretype_env && *coretype_env && tw_blas_core_tier (coretype_env) == have;
  if (forced)
    return g_strdup_printf ("OpenBLAS runs its %s (%s) kernels because OPENBLAS_CORETYPE=%s is "
                            "set, below this CPU's %s: OPENBLAS_CORETYPE=%s runs its %s kernels "
                            "(matrix products several times faster)",
                            core, tw_isa_tier_name (have), coretype_env, tw_isa_tier_name (can),
                            want, want);
  return g_strdup_printf ("OpenBLAS runs its %s (%s) kernels, below this CPU's %s (%s family %d "
                          "model %d, which this OpenBLAS does not recognise): set "
                          "OPENBLAS_CORETYPE=%s to run its %s kernels (matrix products several "
                          "times faster)",
                          core, tw_isa_tier_name (have), tw_isa_tier_name (can),
                          *f->vendor ? f->vendor : "CPU", f->family, f->model, want, want);
}
