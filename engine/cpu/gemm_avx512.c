/* gemm_avx512.c — packed, cache-blocked SGEMM with an AVX-512 micro-kernel.
 *
 * Goto/BLIS structure, for one thread's rectangle of C:
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
 * Micro-kernel (MR × NR = 14 × 32): 28 zmm accumulators, two zmm loads of B
 * and 14 broadcasts of A per k.  Zen 5 has two 512-bit FMA pipes with a
 * latency of 4 cycles, so 2 × 4 = 8 independent accumulators keep them busy;
 * 28 leave room for load latency and cover the 2 B registers within the
 * 32 zmm registers (28 + 2 + 1 broadcast + 1 spare).  Every tile height
 * m = 1..14 and width (1 or 2 vectors) gets its own unrolled instance, so
 * edges cost only the work they hold; the last column vector is masked, and
 * masked loads/stores never touch memory outside the matrix.
 *
 * Blocking for this CPU (AMD EPYC, Zen 5 class: L1d 48 KiB 12-way, L2 1 MiB
 * 8-way per core, from getconf; /sys/.../cache is absent in this VM):
 *   KC = 512: K is cut into equal blocks of at most KC (784 → 2 × 392), a
 *     function of K alone so results do not depend on the thread split.
 *     The B micro-panel [KC][NR] is then 64 KiB, more than L1 (48 KiB), so
 *     it streams from L2 — which costs nothing: Zen 5's L2 delivers 64 bytes
 *     a cycle and the kernel needs 128 bytes of B per 14 cycles — while
 *     fewer K blocks halve the passes over C and the per-block overheads.
 *     Measured against KC = 256 and 384 in alternating runs on this
 *     (shared, noisy) machine: +5..15 % on the big NT shapes, equal on the
 *     rest.
 *   MC = 336 (24 × MR): the packed A block [MC][KC] is 672 KiB, two thirds
 *     of the 1 MiB L2, leaving room for the B panel and the C tiles passing
 *     through (16 panels measured the same within noise).
 *   NC = 4096: the packed B block [KC][NC] is 8 MiB (L3, shared); the hot
 *     shapes have N ≤ 4096 so B is packed once per K block.
 *   TW_GEMM_KC and TW_GEMM_MCP (MC in panels) can be set with -D for such
 *   sweeps.
 *
 * Two departures from the textbook loops, both measured with gemm-bench:
 *   - when a thread's share of rows fits one row panel (M ≤ 14: the MLP's
 *     last layer dW, LeNet's conv1 forward) B is read in place instead of
 *     packed, since each B panel is used once (2-4x faster on 10×4096×256);
 *   - when K blocks are short (≤ 32) and the B block fits in half of L2 the
 *     tiles go row panel by row panel, writing each row of C in one pass
 *     (the product is bound by writing C: 256×4096×10 went 1.0x → 1.3-2x
 *     OpenBLAS).
 *
 * The functions carry target attributes (no global -mavx512f), so this file
 * builds into a binary that runs on any x86-64; gemm.c calls in only after
 * tw_gemm_avx512_supported ().
 */
#define G_LOG_DOMAIN "twb-gemm"

#include "engine/cpu/gemm-private.h"

#include <stdlib.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define TW_GEMM_HAVE_KERNEL 1
#include <immintrin.h>
#endif

#ifdef TW_GEMM_HAVE_KERNEL

#define TW_AVX512 __attribute__ ((target ("avx512f,avx512vl,avx512bw,avx512dq,fma")))
#define TW_AVX512_INLINE static inline __attribute__ ((always_inline)) TW_AVX512

#define MR TW_GEMM_MR
#define NR TW_GEMM_NR
/* See the top for these numbers. */
#ifndef TW_GEMM_KC
#define TW_GEMM_KC 512
#endif
#ifndef TW_GEMM_MCP
#define TW_GEMM_MCP 24
#endif
#define KC TW_GEMM_KC
#define MC (MR * TW_GEMM_MCP)
#define NC 4096
#define L2_BYTES (1 << 20)
#define ROWS_OUTER_MAX_KC 32

gboolean
tw_gemm_avx512_supported (void)
{
  __builtin_cpu_init ();
  return __builtin_cpu_supports ("avx512f") && __builtin_cpu_supports ("avx512vl")
         && __builtin_cpu_supports ("avx512bw") && __builtin_cpu_supports ("avx512dq")
         && __builtin_cpu_supports ("fma");
}

/* ---- packing ------------------------------------------------------------ */

static inline __mmask16
mask_n (int64_t n)
{
  return n >= 16 ? (__mmask16) 0xffff : (__mmask16) ((1u << n) - 1);
}

/* r [16] rows of 16 floats → r [16] columns, in registers. */
TW_AVX512_INLINE void
transpose16 (__m512 r[16])
{
  __m512 t[16], u[16];
  for (int i = 0; i < 8; i++)
    {
      t[2 * i] = _mm512_unpacklo_ps (r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm512_unpackhi_ps (r[2 * i], r[2 * i + 1]);
    }
  /* u [4g + c], 128-bit lane l: rows 4g..4g+3 of column 4l + c. */
  for (int g = 0; g < 4; g++)
    {
      __m512d a = _mm512_castps_pd (t[4 * g]), b = _mm512_castps_pd (t[4 * g + 1]);
      __m512d c = _mm512_castps_pd (t[4 * g + 2]), d = _mm512_castps_pd (t[4 * g + 3]);
      u[4 * g + 0] = _mm512_castpd_ps (_mm512_unpacklo_pd (a, c));
      u[4 * g + 1] = _mm512_castpd_ps (_mm512_unpackhi_pd (a, c));
      u[4 * g + 2] = _mm512_castpd_ps (_mm512_unpacklo_pd (b, d));
      u[4 * g + 3] = _mm512_castpd_ps (_mm512_unpackhi_pd (b, d));
    }
  /* Column 4l + c is lane l of u [c], u [4 + c], u [8 + c], u [12 + c]. */
  for (int c = 0; c < 4; c++)
    {
      __m512 v0 = _mm512_shuffle_f32x4 (u[c], u[4 + c], 0x88);
      __m512 v1 = _mm512_shuffle_f32x4 (u[c], u[4 + c], 0xdd);
      __m512 w0 = _mm512_shuffle_f32x4 (u[8 + c], u[12 + c], 0x88);
      __m512 w1 = _mm512_shuffle_f32x4 (u[8 + c], u[12 + c], 0xdd);
      r[c] = _mm512_shuffle_f32x4 (v0, w0, 0x88);
      r[8 + c] = _mm512_shuffle_f32x4 (v0, w0, 0xdd);
      r[4 + c] = _mm512_shuffle_f32x4 (v1, w1, 0x88);
      r[12 + c] = _mm512_shuffle_f32x4 (v1, w1, 0xdd);
    }
}

/* The A block: rows ic.., columns p0..p0+kc-1 of op(A), into np panels,
 * panel p (rows start[p] .. start[p]+size[p]-1 of the block) at
 * dst + start[p]·kc as [kc][size[p]]. */
static TW_AVX512 void
pack_a (const tw_gemm_args *g, int64_t ic, int np, const int *start, const int *size, int64_t p0,
        int64_t kc, float *restrict dst)
{
  if (g->ta)
    {
      /* op(A) [i][k] = A [k][i]: walk A's rows in order (a strided walk
       * down one panel at a time defeats the prefetcher when lda is large)
       * and deal each row out to the panels. */
      const float *src = g->A + p0 * g->lda + ic;
      for (int64_t k = 0; k < kc; k++)
        for (int p = 0; p < np; p++)
          {
            __mmask16 mm = mask_n (size[p]);
            _mm512_mask_storeu_ps (dst + start[p] * kc + k * size[p], mm,
                                   _mm512_maskz_loadu_ps (mm, src + k * g->lda + start[p]));
          }
      return;
    }
  /* op(A) [i][k] = A [i][k]: transpose 16 k at a time. */
  for (int p = 0; p < np; p++)
    {
      const int m = size[p];
      const __mmask16 mm = mask_n (m);
      const float *src = g->A + (ic + start[p]) * g->lda + p0;
      float *d = dst + start[p] * kc;
      for (int64_t k = 0; k < kc; k += 16)
        {
          int64_t kk = MIN (16, kc - k);
          __mmask16 km = mask_n (kk);
          __m512 r[16];
          for (int i = 0; i < 16; i++)
            r[i] = i < m ? _mm512_maskz_loadu_ps (km, src + i * g->lda + k) : _mm512_setzero_ps ();
          transpose16 (r);
          for (int j = 0; j < kk; j++)
            _mm512_mask_storeu_ps (d + (k + j) * m, mm, r[j]);
        }
    }
}

/* One panel of the B block when B is stored transposed: op(B) [k][j] =
 * B [j][k], columns j0..j0+n-1, transposed 16 × 16 at a time. */
static TW_AVX512 void
pack_b_trans (const tw_gemm_args *g, int64_t j0, int64_t n, int64_t p0, int64_t kc,
              float *restrict dst)
{
  for (int h = 0; h < 2; h++)
    {
      int64_t nh = MIN (16, n - 16 * h);
      if (nh <= 0)
        break;  /* a panel of n ≤ 16 is read by the one-vector tiles only */
      const float *src = g->B + (j0 + 16 * h) * g->ldb + p0;
      for (int64_t k = 0; k < kc; k += 16)
        {
          int64_t kk = MIN (16, kc - k);
          __mmask16 km = mask_n (kk);
          __m512 r[16];
          for (int j = 0; j < 16; j++)
            r[j] = j < nh ? _mm512_maskz_loadu_ps (km, src + j * g->ldb + k) : _mm512_setzero_ps ();
          transpose16 (r);
          for (int j = 0; j < kk; j++)
            _mm512_store_ps (dst + (k + j) * NR + 16 * h, r[j]);
        }
    }
}

/* The B block: rows p0..p0+kc-1, columns jc..jc+nc-1 of op(B), into
 * panels of NR columns, [kc][NR] each, kc·NR apart; zero past nc. */
static TW_AVX512 void
pack_b (const tw_gemm_args *g, int64_t jc, int64_t nc, int64_t p0, int64_t kc, float *restrict dst)
{
  if (!g->tb)
    {
      /* Row by row of B (see pack_a on strided walks). */
      const float *src = g->B + p0 * g->ldb + jc;
      for (int64_t k = 0; k < kc; k++)
        for (int64_t jr = 0; jr < nc; jr += NR)
          {
            int64_t n = nc - jr;
            __mmask16 m0 = mask_n (n), m1 = mask_n (n > 16 ? n - 16 : 0);
            float *d = dst + jr * kc + k * NR;
            _mm512_store_ps (d, _mm512_maskz_loadu_ps (m0, src + k * g->ldb + jr));
            _mm512_store_ps (d + 16, _mm512_maskz_loadu_ps (m1, src + k * g->ldb + jr + 16));
          }
      return;
    }
  for (int64_t jr = 0; jr < nc; jr += NR)
    pack_b_trans (g, jc + jr, MIN (NR, nc - jr), p0, kc, dst + jr * kc);
}

/* ---- micro-kernel ------------------------------------------------------- */

/* C [m, n] (rows ldc apart) from packed ap [kc][m] and bp [kc][ldbp] (a
 * packed panel, ldbp = NR, or B itself, ldbp = ldb); m ≤ MR, n ≤ 16 · nv.
 * m and nv are constants in each instance below. */
TW_AVX512_INLINE void
tile (const int m, const int nv, const float *restrict ap, const float *restrict bp,
      int64_t ldbp, float *restrict c, int64_t ldc, int64_t n, const tw_gemm_tile_ctx *t)
{
  __m512 acc[MR][2];
  const __mmask16 last_mask = mask_n (n - 16 * (nv - 1));

#pragma GCC unroll 14
  for (int i = 0; i < m; i++)
    {
      acc[i][0] = _mm512_setzero_ps ();
      acc[i][1] = _mm512_setzero_ps ();
      /* Both lines of the row (read for beta or C +=, or written anyway):
       * the loads are a whole k loop away. */
      _mm_prefetch ((const char *) (c + i * ldc), _MM_HINT_T0);
      if (nv > 1)
        _mm_prefetch ((const char *) (c + i * ldc + 16), _MM_HINT_T0);
    }

#pragma GCC unroll 2
  for (int64_t k = 0; k < t->kc; k++)
    {
      __m512 b0 = _mm512_loadu_ps (bp);
      __m512 b1 = nv > 1 ? _mm512_loadu_ps (bp + 16) : b0;
      /* Unpacked B is a strided walk the hardware prefetcher may miss; 8
       * rows ahead is ~100 cycles at 14 cycles per k. */
      _mm_prefetch ((const char *) (bp + 8 * ldbp), _MM_HINT_T0);
      if (nv > 1)
        _mm_prefetch ((const char *) (bp + 8 * ldbp + 16), _MM_HINT_T0);
#pragma GCC unroll 14
      for (int i = 0; i < m; i++)
        {
          __m512 a = _mm512_set1_ps (ap[i]);
          acc[i][0] = _mm512_fmadd_ps (a, b0, acc[i][0]);
          if (nv > 1)
            acc[i][1] = _mm512_fmadd_ps (a, b1, acc[i][1]);
        }
      ap += m;
      bp += ldbp;
    }

  const __m512 valpha = _mm512_set1_ps (t->alpha), vbeta = _mm512_set1_ps (t->beta);
  const __m512 zero = _mm512_setzero_ps (), vslope = _mm512_set1_ps (t->slope);
  __m512 bias[2] = { zero, zero };
  if (t->last && t->bias)
    for (int v = 0; v < nv; v++)
      bias[v] = _mm512_maskz_loadu_ps (v == nv - 1 ? last_mask : 0xffff, t->bias + 16 * v);

#pragma GCC unroll 14
  for (int i = 0; i < m; i++)
    for (int v = 0; v < nv; v++)
      {
        __mmask16 mk = v == nv - 1 ? last_mask : 0xffff;
        float *cp = c + i * ldc + 16 * v;
        __m512 x = acc[i][v];
        if (t->alpha != 1.0f)
          x = _mm512_mul_ps (x, valpha);
        if (!t->first)
          x = _mm512_add_ps (x, _mm512_maskz_loadu_ps (mk, cp));
        else if (t->beta != 0)
          x = _mm512_fmadd_ps (vbeta, _mm512_maskz_loadu_ps (mk, cp), x);
        if (t->last)
          {
            if (t->bias)
              x = _mm512_add_ps (x, bias[v]);
            if (t->pre)
              _mm512_mask_storeu_ps (t->pre + i * t->ldpre + 16 * v, mk, x);
            if (t->act == TW_GEMM_ACT_RELU)
              /* max (0, x): NaN and -0 pass through, as x < 0 ? 0 : x. */
              x = _mm512_max_ps (zero, x);
            else if (t->act == TW_GEMM_ACT_LEAKY_RELU)
              x = _mm512_mask_mul_ps (x, _mm512_cmp_ps_mask (x, zero, _CMP_LT_OQ), x, vslope);
          }
        _mm512_mask_storeu_ps (cp, mk, x);
      }

  if (t->last && t->act == TW_GEMM_ACT_GELU_TANH)
    tw_gemm_act_block (t->act, t->slope, c, ldc, m, n);
}

typedef void (*tile_fn) (const float *ap, const float *bp, int64_t ldbp, float *c, int64_t ldc,
                         int64_t n, const tw_gemm_tile_ctx *t);

#define TILE_FN(M, NV)                                                                        \
  static TW_AVX512 void tile_##M##_##NV (const float *ap, const float *bp, int64_t ldbp,     \
                                         float *c, int64_t ldc, int64_t n, const tw_gemm_tile_ctx *t) \
  {                                                                                           \
    tile (M, NV, ap, bp, ldbp, c, ldc, n, t);                                                 \
  }
#define TILE_FNS(M) TILE_FN (M, 1) TILE_FN (M, 2)
TILE_FNS (1)
TILE_FNS (2)
TILE_FNS (3)
TILE_FNS (4)
TILE_FNS (5)
TILE_FNS (6)
TILE_FNS (7)
TILE_FNS (8)
TILE_FNS (9)
TILE_FNS (10)
TILE_FNS (11)
TILE_FNS (12)
TILE_FNS (13)
TILE_FNS (14)

/* tiles [m - 1][nv - 1] */
static const tile_fn tiles[MR][2] = {
  { tile_1_1, tile_1_2 },   { tile_2_1, tile_2_2 },   { tile_3_1, tile_3_2 },
  { tile_4_1, tile_4_2 },   { tile_5_1, tile_5_2 },   { tile_6_1, tile_6_2 },
  { tile_7_1, tile_7_2 },   { tile_8_1, tile_8_2 },   { tile_9_1, tile_9_2 },
  { tile_10_1, tile_10_2 }, { tile_11_1, tile_11_2 }, { tile_12_1, tile_12_2 },
  { tile_13_1, tile_13_2 }, { tile_14_1, tile_14_2 },
};

/* ---- blocking ----------------------------------------------------------- */

/* Cuts mc rows into panels of MR, except that a short last panel (fewer
 * than MR / 2 rows) is merged with the one before and the two split evenly:
 * a 2-row tile has 4 accumulator chains, too few to hide the FMA latency.
 * Fills start[] and size[], returns the count. */
static int
row_panels (int64_t mc, int *start, int *size)
{
  int n = 0, r = 0;
  while (r < mc)
    {
      int64_t left = mc - r;
      int s = (int) MIN (MR, left);
      if (left > MR && left < MR + MR / 2)
        s = (int) ((left + 1) / 2);
      start[n] = r;
      size[n++] = s;
      r += s;
    }
  return n;
}

void
tw_gemm_avx512_run (const tw_gemm_args *g, int64_t m0, int64_t m1, int64_t n0, int64_t n1)
{
  const int64_t K = g->K;
  /* Equal K blocks of at most KC: depends on K only (see the top). */
  const int64_t nkb = (K + KC - 1) / KC;
  const int64_t kcb = (K + nkb - 1) / nkb;
  const int64_t ncmax = MIN (NC, (n1 - n0 + NR - 1) / NR * NR);
  float *abuf = tw_gemm_pack_buffer (0, (size_t) MC * kcb);
  float *bbuf = tw_gemm_pack_buffer (1, (size_t) ncmax * kcb);
  const tw_gemm_epilogue *ep = g->ep;
  int pstart[MC / MR + 1], psize[MC / MR + 1];
  const gboolean direct_b = !g->tb && m1 - m0 <= MR;

  for (int64_t jc = n0; jc < n1; jc += NC)
    {
      int64_t nc = MIN (NC, n1 - jc);
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
          };
          if (!t.last)
            t.act = TW_GEMM_ACT_NONE;

          /* With a single row panel each B panel is used once: packing it
           * would cost as much as the product (K · N floats through memory
           * for M · N · K FMAs with M ≤ 14), so the tiles read B in place,
           * except for a last partial panel (its masked edge is packed). */
          int64_t nc_direct = direct_b ? nc / NR * NR : 0;
          if (nc_direct < nc)
            pack_b (g, jc + nc_direct, nc - nc_direct, p0, kc, bbuf + nc_direct * kc);

          for (int64_t ic = m0; ic < m1; ic += MC)
            {
              int64_t mc = MIN (MC, m1 - ic);
              int np = row_panels (mc, pstart, psize);
              pack_a (g, ic, np, pstart, psize, p0, kc, abuf);

              /* Column panels outer (the BLIS order: a B panel stays in L1
               * while the A panels stream from L2), except when the product
               * is bound by writing C (short K blocks) and the B block fits
               * in half of L2: then rows outer, so each row of C is written
               * left to right in one pass rather than 128 bytes at a time. */
              int64_t ncp = (nc + NR - 1) / NR;
              gboolean rows_outer = kc <= ROWS_OUTER_MAX_KC && kc * nc * 4 <= L2_BYTES / 2;
              for (int64_t q = 0; q < ncp * np; q++)
                {
                  int64_t jr = (rows_outer ? q % ncp : q / np) * NR;
                  int p = (int) (rows_outer ? q / ncp : q % np);
                  int64_t n = MIN (NR, nc - jr), col = jc + jr;
                  int nv = n > 16 ? 2 : 1;
                  const float *bp = bbuf + jr * kc;
                  int64_t ldbp = NR;
                  if (jr < nc_direct)
                    {
                      bp = g->B + p0 * g->ldb + col;
                      ldbp = g->ldb;
                    }
                  int64_t row = ic + pstart[p];
                  t.bias = t.last && ep && ep->bias ? ep->bias + col : NULL;
                  t.pre = t.last && ep && ep->pre ? ep->pre + row * ep->ldpre + col : NULL;
                  t.ldpre = ep ? ep->ldpre : 0;
                  tiles[psize[p] - 1][nv - 1](abuf + pstart[p] * kc, bp, ldbp,
                                              g->C + row * g->ldc + col, g->ldc, n, &t);
                }
            }
        }
    }
}

#else /* !TW_GEMM_HAVE_KERNEL */

gboolean
tw_gemm_avx512_supported (void)
{
  return FALSE;
}

void
tw_gemm_avx512_run (const tw_gemm_args *g, int64_t m0, int64_t m1, int64_t n0, int64_t n1)
{
  g_assert_not_reached ();
}

#endif
