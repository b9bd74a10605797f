/* gemm_avx2.c — packed, cache-blocked SGEMM with an AVX2 + FMA
 * micro-kernel, for x86-64 CPUs without AVX-512 (Haswell and later, Zen 1-4).
 *
 * The structure of gemm_avx512.c (Goto/BLIS), for one thread's rectangle
 * of C:
 *
 *   for jc in columns, NC at a time
 *     for pc in K, kc at a time            pack op(B) [kc, nc] → NR-column panels
 *       for ic in rows, MC at a time       pack op(A) [mc, kc] → row panels (≤ MR rows)
 *         for jr in the NR-column panels
 *           for ir in the row panels       micro-kernel: C [m, NR] (+)= A panel · B panel
 *
 * Packed layouts (the micro-kernel sees only these, whatever trans_a/trans_b):
 *   A panel of m rows:   [kc][m]   (k-major: the m values of one k are adjacent)
 *   B panel:             [kc][NR]  (columns past N are zero)
 *
 * Micro-kernel (MR × NR = 6 × 16): 12 ymm accumulators, two ymm loads of B
 * and 6 broadcasts of A per k.  Haswell to Zen 4 have two 256-bit FMA pipes
 * with a latency of 4 or 5 cycles, so 2 × 5 = 10 independent accumulators
 * keep them busy; 12 plus the 2 B vectors and one broadcast fill 15 of the
 * 16 ymm registers (the BLIS and OpenBLAS Haswell kernels use the same
 * tile).  Per k, 8 loads feed 12 FMAs: within the 2-3 load ports.  Every
 * tile height m = 1..6 and width (1 or 2 vectors) gets its own unrolled
 * instance; a partial last vector of C, A or B is read and written with
 * _mm256_maskload_ps / _mm256_maskstore_ps, which never touch the lanes
 * masked off, so no access falls outside the matrices.
 *
 * Blocking, from the caches the CPU reports (sysconf, which glibc answers
 * from cpuid, so it works where /sys/.../cache is absent, as in this VM):
 *   KC: the B micro-panel [KC][NR] (64 bytes a k) takes half of L1d, the
 *     other half holding the A micro-panel [KC][MR] and the C tile
 *     (Low et al., "Analytical modeling is enough for high-performance
 *     BLIS", 2016): 32 KiB → 256, 48 KiB → 384; clamped to [128, 512].
 *     K is cut into equal blocks of at most KC (784 → 4 × 196): a function
 *     of K and this machine constant only, never of the thread split, so
 *     results are bitwise the same for any number of threads.
 *   MC: the packed A block [MC][KC] takes half of L2, leaving the rest for
 *     the B micro-panel streaming through and the C tiles (512 KiB and
 *     KC = 256 → 126 rows; BLIS's Zen configuration uses 144).
 *   NC = 4096: the packed B block [KC][NC] (4 MiB at KC = 256) lives in
 *     L3; the hot shapes have N ≤ 4096, so B is packed once per K block.
 *     Wider N is cut into equal column blocks (whole panels), so no thin
 *     last block re-packs the whole of A for a few columns.
 *   Fallbacks when sysconf reports nothing: L1d 32 KiB, L2 256 KiB (the
 *   smallest of the CPUs above).  TW_GEMM_AVX2_KC / TW_GEMM_AVX2_MC in the
 *   environment override both (for sweeps with gemm-bench; KC still must
 *   not change within a process).
 *
 * Departures from the textbook loops, measured with gemm-bench (those of
 * gemm_avx512.c and more):
 *   - B is read in place instead of packed when a thread's rows fit one row
 *     panel (M ≤ 6: each B panel is used once), or three when B's rows stay
 *     in L2 (see rows_stay_in_l2); A likewise when its columns fit one
 *     panel (N ≤ 16: a 10-way output layer), or eight when A's rows stay
 *     in L2 (the narrow column chunks gemm.c gives each thread: packing
 *     A for each chunk cost up to a third of the time);
 *   - B stored transposed is packed panel by panel just before its first
 *     use, while it is in L1 for the tiles of the first row block;
 *   - when K blocks are short (≤ 32) and the B block fits in half of L2 the
 *     tiles go row panel by row panel, writing each row of C in one pass;
 *   - rows are cut into even panels (7 → 4 + 3, not 6 + 1).
 *
 * The functions carry target attributes (no global -mavx2), so this file
 * builds into a binary that runs on any x86-64; gemm.c calls in only after
 * tw_gemm_avx2_supported ().
 */
#define G_LOG_DOMAIN "twb-gemm"

#include "engine/cpu/gemm-private.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define TW_GEMM_AVX2_HAVE_KERNEL 1
#include <immintrin.h>
#endif

#ifdef TW_GEMM_AVX2_HAVE_KERNEL

#define TW_AVX2 __attribute__ ((target ("avx2,fma")))
#define TW_AVX2_INLINE static inline __attribute__ ((always_inline)) TW_AVX2

#define MR TW_GEMM_AVX2_MR
#define NR TW_GEMM_AVX2_NR
#define NC 4096
#define ROWS_OUTER_MAX_KC 32
#define DIRECT_B_PANELS 3
#define DIRECT_A_PANELS 8
/* Floats the pack stores may write past a panel's end (8-float stores of
 * 6-float columns); the buffers have this much slack. */
#define PACK_SLACK 8

gboolean
tw_gemm_avx2_supported (void)
{
  __builtin_cpu_init ();
  return __builtin_cpu_supports ("avx2") && __builtin_cpu_supports ("fma");
}

/* ---- block sizes, from the caches ----------------------------------------- */

typedef struct
{
  int64_t kc, mc;  /* see the top */
  int64_t l2;      /* bytes */
  int64_t l2_ways;
} blocking;

static int64_t
cache_bytes (int name, int64_t fallback)
{
  long v = sysconf (name);
  /* 0 or -1 when unknown; anything below 4 KiB or above 64 MiB is not a
   * per-core data cache either. */
  return v >= 4096 && v <= (64l << 20) ? v : fallback;
}

static int64_t
env_int (const char *name, int64_t lo, int64_t hi)
{
  const char *s = g_getenv (name);
  if (!s || !*s)
    return 0;
  gint64 v = g_ascii_strtoll (s, NULL, 10);
  return v >= lo && v <= hi ? v : 0;
}

static const blocking *
get_blocking (void)
{
  static gsize once = 0;
  static blocking b;
  if (g_once_init_enter (&once))
    {
      int64_t l1 = cache_bytes (_SC_LEVEL1_DCACHE_SIZE, 32 << 10);
      b.l2 = cache_bytes (_SC_LEVEL2_CACHE_SIZE, 256 << 10);
      long ways = sysconf (_SC_LEVEL2_CACHE_ASSOC);
      /* 8: Haswell to Zen 4 (0 is "fully associative" or unknown). */
      b.l2_ways = ways >= 1 && ways <= 64 ? ways : 8;
      /* Half of L1 for the B micro-panel, NR floats a k; a multiple of 8
       * (whole 8 × 8 transposes when packing). */
      int64_t kc = l1 / 2 / (NR * (int64_t) sizeof (float)) / 8 * 8;
      b.kc = CLAMP (kc, 128, 512);
      /* Half of L2 for the A block, whole panels. */
      int64_t mc = b.l2 / 2 / (b.kc * (int64_t) sizeof (float)) / MR * MR;
      b.mc = CLAMP (mc, 4 * MR, 96 * MR);
      int64_t kc_env = env_int ("TW_GEMM_AVX2_KC", 8, 4096);
      int64_t mc_env = env_int ("TW_GEMM_AVX2_MC", MR, 4096);
      if (kc_env)
        b.kc = kc_env;
      if (mc_env)
        b.mc = mc_env / MR * MR;
      g_debug ("avx2 kernel: L1d %" G_GINT64_FORMAT " B, L2 %" G_GINT64_FORMAT
               " B -> KC %" G_GINT64_FORMAT ", MC %" G_GINT64_FORMAT,
               l1, b.l2, b.kc, b.mc);
      g_once_init_leave (&once, 1);
    }
  return &b;
}

/* Whether n rows ld floats apart stay in half of L2.  Rows whose stride
 * is a multiple of a large power of two land in few of its sets: with a
 * 64 KiB set period (512 KiB, 8 ways), rows 16 KiB apart (ld = 4096) use 4
 * sets, 32 lines, and evict each other whatever L2's size. */
static gboolean
rows_stay_in_l2 (const blocking *bk, int64_t n, int64_t ld)
{
  int64_t period = bk->l2 / bk->l2_ways; /* bytes between addresses of the same set */
  int64_t stride = ld * (int64_t) sizeof (float), a = period, b = stride % period;
  while (b != 0)
    {
      int64_t r = a % b;
      a = b;
      b = r;
    }
  int64_t sets = period / MAX (a, 64);
  return n * 2 <= sets * bk->l2_ways;
}

/* ---- masks and transposes ------------------------------------------------- */

static const int32_t mask_table[16] = { -1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0 };

/* The first n lanes (0 ≤ n ≤ 8). */
TW_AVX2_INLINE __m256i
mask_n (int64_t n)
{
  return _mm256_loadu_si256 ((const __m256i *) (mask_table + 8 - n));
}

/* n ≤ 8 floats at p, zero beyond. */
TW_AVX2_INLINE __m256
load_n (const float *p, int64_t n)
{
  return n >= 8 ? _mm256_loadu_ps (p) : _mm256_maskload_ps (p, mask_n (n));
}

TW_AVX2_INLINE void
store_n (float *p, int64_t n, __m256 x)
{
  if (n >= 8)
    _mm256_storeu_ps (p, x);
  else
    _mm256_maskstore_ps (p, mask_n (n), x);
}

/* r [8] rows of 8 floats → r [8] columns, in registers. */
TW_AVX2_INLINE void
transpose8 (__m256 r[8])
{
  __m256 t[8], u[8];
  for (int i = 0; i < 4; i++)
    {
      t[2 * i] = _mm256_unpacklo_ps (r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm256_unpackhi_ps (r[2 * i], r[2 * i + 1]);
    }
  /* u [4g + c], 128-bit lane l: rows 4g..4g+3 of column 4l + c. */
  for (int g = 0; g < 2; g++)
    {
      u[4 * g + 0] = _mm256_shuffle_ps (t[4 * g], t[4 * g + 2], 0x44);
      u[4 * g + 1] = _mm256_shuffle_ps (t[4 * g], t[4 * g + 2], 0xee);
      u[4 * g + 2] = _mm256_shuffle_ps (t[4 * g + 1], t[4 * g + 3], 0x44);
      u[4 * g + 3] = _mm256_shuffle_ps (t[4 * g + 1], t[4 * g + 3], 0xee);
    }
  for (int c = 0; c < 4; c++)
    {
      r[c] = _mm256_permute2f128_ps (u[c], u[4 + c], 0x20);
      r[4 + c] = _mm256_permute2f128_ps (u[c], u[4 + c], 0x31);
    }
}

/* ---- packing -------------------------------------------------------------- */

/* The A block: rows ic.., columns p0..p0+kc-1 of op(A), into np panels,
 * panel p (rows start[p] .. start[p]+size[p]-1 of the block) at
 * dst + start[p]·kc as [kc][size[p]].  Each k's m ≤ 6 values go out as
 * one 8-float store that spills into the next k's place (or the next
 * panel's first, written later; PACK_SLACK after the last). */
static TW_AVX2 void
pack_a (const tw_gemm_args *g, int64_t ic, int np, const int *start, const int *size, int64_t p0,
        int64_t kc, float *restrict dst)
{
  if (g->ta)
    {
      /* op(A) [i][k] = A [k][i]: walk A's rows in order (a strided walk
       * down one panel at a time defeats the prefetcher when lda is large)
       * and deal each row out to the panels.  Here a store spilling past
       * the panel would land in one already written, so the last few k are
       * masked. */
      const float *src = g->A + p0 * g->lda + ic;
      for (int64_t k = 0; k < kc; k++)
        for (int p = 0; p < np; p++)
          {
            __m256i mm = mask_n (size[p]);
            __m256 x = _mm256_maskload_ps (src + k * g->lda + start[p], mm);
            float *d = dst + start[p] * kc + k * size[p];
            if ((kc - k) * size[p] >= 8)
              _mm256_storeu_ps (d, x);
            else
              _mm256_maskstore_ps (d, mm, x);
          }
      return;
    }
  /* op(A) [i][k] = A [i][k]: transpose 8 k at a time. */
  for (int p = 0; p < np; p++)
    {
      const int m = size[p];
      const float *src = g->A + (ic + start[p]) * g->lda + p0;
      float *d = dst + start[p] * kc;
      for (int64_t k = 0; k < kc; k += 8)
        {
          int64_t kk = MIN (8, kc - k);
          __m256 r[8];
          for (int i = 0; i < 8; i++)
            r[i] = i < m ? load_n (src + i * g->lda + k, kk) : _mm256_setzero_ps ();
          transpose8 (r);
          for (int j = 0; j < kk; j++)
            _mm256_storeu_ps (d + (k + j) * m, r[j]);
        }
    }
}

/* One panel of the B block when B is stored transposed: op(B) [k][j] =
 * B [j][k], columns j0..j0+n-1, transposed 8 × 8 at a time. */
static TW_AVX2 void
pack_b_trans (const tw_gemm_args *g, int64_t j0, int64_t n, int64_t p0, int64_t kc,
              float *restrict dst)
{
  for (int h = 0; h < 2; h++)
    {
      int64_t nh = MIN (8, n - 8 * h);
      if (nh <= 0)
        break;  /* a panel of n ≤ 8 is read by the one-vector tiles only */
      const float *src = g->B + (j0 + 8 * h) * g->ldb + p0;
      for (int64_t k = 0; k < kc; k += 8)
        {
          int64_t kk = MIN (8, kc - k);
          __m256 r[8];
          for (int j = 0; j < 8; j++)
            r[j] = j < nh ? load_n (src + j * g->ldb + k, kk) : _mm256_setzero_ps ();
          transpose8 (r);
          for (int j = 0; j < kk; j++)
            _mm256_store_ps (dst + (k + j) * NR + 8 * h, r[j]);
        }
    }
}

/* The B block: rows p0..p0+kc-1, columns jc..jc+nc-1 of op(B), into
 * panels of NR columns, [kc][NR] each, kc·NR apart; zero past nc. */
static TW_AVX2 void
pack_b (const tw_gemm_args *g, int64_t jc, int64_t nc, int64_t p0, int64_t kc, float *restrict dst)
{
  if (!g->tb)
    {
      /* Row by row of B (see pack_a on strided walks). */
      const float *src = g->B + p0 * g->ldb + jc;
      for (int64_t k = 0; k < kc; k++)
        {
          const float *s = src + k * g->ldb;
          float *d = dst + k * NR;
          int64_t jr = 0;
          if (nc <= NR)
            _mm_prefetch ((const char *) (s + 8 * g->ldb), _MM_HINT_T0);
          for (; jr + NR <= nc; jr += NR, d += kc * NR)
            {
              _mm256_store_ps (d, _mm256_loadu_ps (s + jr));
              _mm256_store_ps (d + 8, _mm256_loadu_ps (s + jr + 8));
            }
          if (jr < nc)
            {
              int64_t n = nc - jr;
              _mm256_store_ps (d, load_n (s + jr, MIN (n, 8)));
              _mm256_store_ps (d + 8, n > 8 ? load_n (s + jr + 8, n - 8) : _mm256_setzero_ps ());
            }
        }
      return;
    }
  for (int64_t jr = 0; jr < nc; jr += NR)
    pack_b_trans (g, jc + jr, MIN (NR, nc - jr), p0, kc, dst + jr * kc);
}

/* ---- micro-kernel --------------------------------------------------------- */

/* C [m, n] (rows ldc apart) = op(A) [m, kc] · op(B) [kc, n], m ≤ MR,
 * n ≤ 8 · nv, where op(A) is at ap either k-major (arows FALSE: element
 * (i, k) at ap [k · as + i]; a packed panel has as = m, A stored
 * transposed as = lda) or row-major (arows TRUE: ap [i · as + k], A itself),
 * and op(B) is at bp as [kc][ldbp]: a packed panel (bdirect FALSE, ldbp =
 * NR) or B itself (bdirect TRUE, ldbp = ldb).  m, nv, arows and bdirect are
 * constants in each instance below.  The write-back goes step by step over
 * all the tile's vectors, each step under one test, so a tile makes a
 * handful of branches rather than a dozen per vector. */
TW_AVX2_INLINE void
tile (const int m, const int nv, const gboolean arows, const gboolean bdirect,
      const float *restrict ap, int64_t as, const float *restrict bp, int64_t ldbp,
      float *restrict c, int64_t ldc, int64_t n, const tw_gemm_tile_ctx *t)
{
  __m256 acc[MR][2];
  if (!bdirect)
    ldbp = NR;

#pragma GCC unroll 6
  for (int i = 0; i < m; i++)
    {
      acc[i][0] = _mm256_setzero_ps ();
      acc[i][1] = _mm256_setzero_ps ();
      /* The row's line(s) of C (read for beta or C +=, or written anyway):
       * the loads are a whole k loop away. */
      _mm_prefetch ((const char *) (c + i * ldc), _MM_HINT_T0);
      if (nv > 1)
        _mm_prefetch ((const char *) (c + i * ldc + 15), _MM_HINT_T0);
    }

  const int64_t kc = t->kc;
  const int64_t astep = arows ? 1 : as;
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; k++)
    {
      __m256 b0 = _mm256_loadu_ps (bp);
      __m256 b1 = nv > 1 ? _mm256_loadu_ps (bp + 8) : b0;
      /* Unpacked B is a strided walk the hardware prefetcher may miss; 8
       * rows ahead is ~50 cycles at 6 cycles per k.  (A packed panel is
       * contiguous and stays in L1.) */
      if (bdirect)
        _mm_prefetch ((const char *) (bp + 8 * ldbp), _MM_HINT_T0);
#pragma GCC unroll 6
      for (int i = 0; i < m; i++)
        {
          __m256 a = _mm256_broadcast_ss (ap + (arows ? i * as : i));
          acc[i][0] = _mm256_fmadd_ps (a, b0, acc[i][0]);
          if (nv > 1)
            acc[i][1] = _mm256_fmadd_ps (a, b1, acc[i][1]);
        }
      ap += astep;
      bp += ldbp;
    }

  /* Floats in the last vector of each row (1..8); the others are full. */
  const int64_t wl = n - 8 * (nv - 1);
  const gboolean full = wl >= 8;
  const __m256i ml = mask_n (MIN (wl, 8));
#define TW_TILE_LOAD(p, v) (v < nv - 1 || full ? _mm256_loadu_ps (p) : _mm256_maskload_ps (p, ml))
#define TW_TILE_STORE(p, v, x)                                                                      (v < nv - 1 || full ? _mm256_storeu_ps (p, x) : _mm256_maskstore_ps (p, ml, x))
#define TW_TILE_EACH for (int i = 0; i < m; i++) for (int v = 0; v < nv; v++)

  if (t->alpha != 1.0f)
    {
      const __m256 valpha = _mm256_set1_ps (t->alpha);
#pragma GCC unroll 12
      TW_TILE_EACH acc[i][v] = _mm256_mul_ps (acc[i][v], valpha);
    }
  if (!t->first)
    {
#pragma GCC unroll 12
      TW_TILE_EACH acc[i][v] = _mm256_add_ps (acc[i][v], TW_TILE_LOAD (c + i * ldc + 8 * v, v));
    }
  else if (t->beta != 0)
    {
      const __m256 vbeta = _mm256_set1_ps (t->beta);
#pragma GCC unroll 12
      TW_TILE_EACH acc[i][v]
        = _mm256_fmadd_ps (vbeta, TW_TILE_LOAD (c + i * ldc + 8 * v, v), acc[i][v]);
    }
  if (t->last)
    {
      const __m256 zero = _mm256_setzero_ps ();
      if (t->bias)
        {
          __m256 bias[2];
          for (int v = 0; v < nv; v++)
            bias[v] = TW_TILE_LOAD (t->bias + 8 * v, v);
#pragma GCC unroll 12
          TW_TILE_EACH acc[i][v] = _mm256_add_ps (acc[i][v], bias[v]);
        }
      if (t->pre)
        {
#pragma GCC unroll 12
          TW_TILE_EACH TW_TILE_STORE (t->pre + i * t->ldpre + 8 * v, v, acc[i][v]);
        }
      if (t->act == TW_GEMM_ACT_RELU)
        {
          /* max (0, x): NaN and -0 pass through, as x < 0 ? 0 : x. */
#pragma GCC unroll 12
          TW_TILE_EACH acc[i][v] = _mm256_max_ps (zero, acc[i][v]);
        }
      else if (t->act == TW_GEMM_ACT_LEAKY_RELU)
        {
          const __m256 vslope = _mm256_set1_ps (t->slope);
#pragma GCC unroll 12
          TW_TILE_EACH acc[i][v]
            = _mm256_blendv_ps (acc[i][v], _mm256_mul_ps (acc[i][v], vslope),
                                _mm256_cmp_ps (acc[i][v], zero, _CMP_LT_OQ));
        }
    }
#pragma GCC unroll 12
  TW_TILE_EACH TW_TILE_STORE (c + i * ldc + 8 * v, v, acc[i][v]);
#undef TW_TILE_LOAD
#undef TW_TILE_STORE
#undef TW_TILE_EACH

  if (t->last && t->act == TW_GEMM_ACT_GELU_TANH)
    tw_gemm_act_block (t->act, t->slope, c, ldc, m, n);
}

typedef void (*tile_fn) (const float *ap, int64_t as, const float *bp, int64_t ldbp, float *c,
                         int64_t ldc, int64_t n, const tw_gemm_tile_ctx *t);

#define TILE_FN(M, NV, AR, BD)                                                                 \
  static TW_AVX2 void tile_##M##_##NV##_##AR##BD (const float *ap, int64_t as, const float *bp, \
                                                  int64_t ldbp, float *c, int64_t ldc,         \
                                                  int64_t n, const tw_gemm_tile_ctx *t)                \
  {                                                                                            \
    tile (M, NV, AR, BD, ap, as, bp, ldbp, c, ldc, n, t);                                      \
  }
/* Packed (or k-major) A with packed B, with B in place, row-major A in
 * place with packed B; one and two vectors wide. */
#define TILE_FNS(M)                                                                            \
  TILE_FN (M, 1, 0, 0) TILE_FN (M, 2, 0, 0) TILE_FN (M, 1, 0, 1) TILE_FN (M, 2, 0, 1)          \
  TILE_FN (M, 1, 1, 0) TILE_FN (M, 2, 1, 0)
TILE_FNS (1)
TILE_FNS (2)
TILE_FNS (3)
TILE_FNS (4)
TILE_FNS (5)
TILE_FNS (6)

#define TILE_ROW(M)                                                                            \
  {                                                                                            \
    { tile_##M##_1_00, tile_##M##_2_00 }, { tile_##M##_1_01, tile_##M##_2_01 },                \
    { tile_##M##_1_10, tile_##M##_2_10 },                                                      \
  }
/* tiles [m - 1][mode][nv - 1], mode: 0 packed B, 1 B in place, 2 A in
 * place (row-major) */
static const tile_fn tiles[MR][3][2] = {
  TILE_ROW (1), TILE_ROW (2), TILE_ROW (3), TILE_ROW (4), TILE_ROW (5), TILE_ROW (6),
};

/* ---- blocking ------------------------------------------------------------- */

/* Cuts mc rows into the fewest panels of at most MR rows, as even as they
 * come (256 → 41 × 6 + 2 × 5, 7 → 4 + 3): a short tile has too few
 * accumulator chains to hide the FMA latency (a 1-row tile 2, a 4-row one
 * 8, the latency × the two FMA pipes 8-10), so a 6 + 1 split would run its
 * last row at a fraction of the speed.  (Results do not depend on the
 * panels: each element of C is summed in K order whichever tile holds it.)
 * Fills start[] and size[], returns the count. */
static int
row_panels (int64_t mc, int *start, int *size)
{
  int np = (int) ((mc + MR - 1) / MR);
  int base = (int) (mc / np), extra = (int) (mc % np);
  for (int p = 0, r = 0; p < np; p++)
    {
      start[p] = r;
      size[p] = base + (p < extra);
      r += size[p];
    }
  return np;
}

void
tw_gemm_avx2_run (const tw_gemm_args *g, int64_t m0, int64_t m1, int64_t n0, int64_t n1)
{
  const blocking *bk = get_blocking ();
  const int64_t K = g->K, MC = bk->mc;
  /* Equal K blocks of at most KC: depends on K only (see the top). */
  const int64_t nkb = (K + bk->kc - 1) / bk->kc;
  const int64_t kcb = (K + nkb - 1) / nkb;
  /* Equal column blocks of at most NC, whole panels but the last. */
  const int64_t njb = (n1 - n0 + NC - 1) / NC;
  const int64_t ncb = ((n1 - n0 + njb - 1) / njb + NR - 1) / NR * NR;
  float *abuf = tw_gemm_pack_buffer (0, (size_t) MIN (MC, m1 - m0) * kcb + PACK_SLACK);
  float *bbuf = tw_gemm_pack_buffer (1, (size_t) ncb * kcb);
  const tw_gemm_epilogue *ep = g->ep;
  int *pstart = g_alloca (sizeof (int) * (MC / MR + 1));
  int *psize = g_alloca (sizeof (int) * (MC / MR + 1));
  /* B in place (see below) also for up to DIRECT_B_PANELS row panels
   * when its rows stay in L2: re-reading a panel from L2 for each row
   * panel costs less than packing it (LeNet's conv2 forward, M = 16: 1.3x;
   * dW of a 10-way layer: 1.2-1.4x). */
  const gboolean direct_b
    = !g->tb
      && (m1 - m0 <= MR || (m1 - m0 <= DIRECT_B_PANELS * MR && rows_stay_in_l2 (bk, kcb, g->ldb)));
  /* Likewise A when the columns fit one panel (N ≤ 16: a 10-way output
   * layer's forward and dx), where each A panel would be packed for one
   * use, and up to DIRECT_A_PANELS when A's rows stay in L2: re-reading
   * them from L2 for each column panel costs less than packing (the
   * narrow column chunks gemm.c hands each thread: 1.2-1.6x at 32
   * columns, 1.03-1.13x at 112 on the MLP's products). */
  const int64_t a_rows = g->ta ? kcb : MIN (MC, m1 - m0);
  const gboolean direct_a
    = !direct_b
      && (n1 - n0 <= NR
          || (n1 - n0 <= DIRECT_A_PANELS * NR && rows_stay_in_l2 (bk, a_rows, g->lda)));

  for (int64_t jc = n0; jc < n1; jc += ncb)
    {
      int64_t nc = MIN (ncb, n1 - jc);
      for (int64_t p0 = 0; p0 < K; p0 += kcb)
        {
          int64_t kc = MIN (kcb, K - p0);
          tw_gemm_tile_ctx t = {
            .kc = kc,
            .alpha = g->alpha,
            .beta = p0 == 0 ? g->beta : 1.0f,
            .first = p0 == 0,
            .last = p0 + kc >= K,
            .act = ep ? ep->act : TW_GEMM_ACT_NONE,
            .slope = ep ? ep->slope : 0.0f,
            .ldpre = ep ? ep->ldpre : 0,
          };
          if (!t.last)
            t.act = TW_GEMM_ACT_NONE;

          /* With a single row panel each B panel is used once: packing it
           * would cost as much as the product (K · N floats through memory
           * for M · N · K FMAs with M ≤ 6), so the tiles read B in place,
           * except for a last partial panel (its masked edge is packed). */
          int64_t nc_direct = direct_b ? nc / NR * NR : 0;
          /* B stored transposed is packed panel by panel anyway (8 × 8
           * transposes down 16 of its rows), so each panel is packed just
           * before its first use, while the tiles of the first row block
           * find it in L1; B stored as it is is packed row by row (see
           * pack_b) up front. */
          const gboolean pack_on_use = g->tb;
          if (nc_direct < nc && !pack_on_use)
            pack_b (g, jc + nc_direct, nc - nc_direct, p0, kc, bbuf + nc_direct * kc);

          for (int64_t ic = m0; ic < m1; ic += MC)
            {
              int64_t mc = MIN (MC, m1 - ic);
              int np = row_panels (mc, pstart, psize);
              if (!direct_a)
                pack_a (g, ic, np, pstart, psize, p0, kc, abuf);

              /* Column panels outer (the BLIS order: a B panel stays in L1
               * while the A panels stream from L2), except when the product
               * is bound by writing C (short K blocks) and the B block fits
               * in half of L2: then rows outer, so each row of C is written
               * left to right in one pass rather than 64 bytes at a time. */
              int64_t ncp = (nc + NR - 1) / NR;
              gboolean rows_outer = kc <= ROWS_OUTER_MAX_KC && kc * nc * 4 <= bk->l2 / 2;
              int64_t outer = rows_outer ? np : ncp, inner = rows_outer ? ncp : np;
              for (int64_t qo = 0; qo < outer; qo++)
                for (int64_t qi = 0; qi < inner; qi++)
                  {
                    int64_t jr = (rows_outer ? qi : qo) * NR;
                    int p = (int) (rows_outer ? qo : qi);
                    int64_t n = MIN (NR, nc - jr), col = jc + jr;
                    int64_t row = ic + pstart[p];
                    int mode = 0;
                    const float *bp = bbuf + jr * kc, *ap = abuf + pstart[p] * kc;
                    int64_t as = psize[p];
                    if (pack_on_use && ic == m0 && p == 0 && jr >= nc_direct)
                      pack_b (g, col, n, p0, kc, bbuf + jr * kc);
                    if (jr < nc_direct)
                      {
                        mode = 1;
                        bp = g->B + p0 * g->ldb + col;
                      }
                    else if (direct_a)
                      {
                        mode = g->ta ? 0 : 2;
                        ap = g->ta ? g->A + p0 * g->lda + row : g->A + row * g->lda + p0;
                        as = g->lda;
                      }
                    t.bias = t.last && ep && ep->bias ? ep->bias + col : NULL;
                    t.pre = t.last && ep && ep->pre ? ep->pre + row * ep->ldpre + col : NULL;
                    tiles[psize[p] - 1][mode][n > 8](ap, as, bp, g->ldb, g->C + row * g->ldc + col,
                                                     g->ldc, n, &t);
                  }
            }
        }
    }
}

#else /* !TW_GEMM_AVX2_HAVE_KERNEL */

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

#endif
