/* test-compress-parts.c — the pure parts of gradient compression
 * (engine/comm/compress.h) on one process: top-k selection with ties and
 * NaN against a sort, int8 codes, sign bits, Gram–Schmidt, PowerSGD's
 * seeded Q.  The collectives are tests/engine/comm/test-compress.c's. */
#include "engine/comm/compress.h"

#include <math.h>
#include <string.h>

static guint64
mix (guint64 x)
{
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

static void
test_topk_k (void)
{
  g_assert_cmpint (tw_compress_topk_k (0.01, 1000), ==, 10);
  g_assert_cmpint (tw_compress_topk_k (0.01, 1001), ==, 11);   /* ceil */
  g_assert_cmpint (tw_compress_topk_k (0.01, 5), ==, 1);       /* at least one */
  g_assert_cmpint (tw_compress_topk_k (1, 7), ==, 7);
  g_assert_cmpint (tw_compress_topk_k (0.5, 0), ==, 0);
}

static void
test_topk_ties (void)
{
  const float x[] = { 1, -3, 3, 2, -3, 0, -0.0f };
  int32_t idx[7];
  tw_compress_topk_select (x, 7, 2, idx);                  /* three of |3|: the lowest two */
  g_assert_cmpint (idx[0], ==, 1);
  g_assert_cmpint (idx[1], ==, 2);
  tw_compress_topk_select (x, 7, 4, idx);
  g_assert_cmpint (idx[2], ==, 3);
  g_assert_cmpint (idx[3], ==, 4);
  tw_compress_topk_select (x, 7, 7, idx);
  for (int i = 0; i < 7; i++)
    g_assert_cmpint (idx[i], ==, i);
  tw_compress_topk_select (x, 7, 6, idx);                  /* 0 and −0 tie: −0 (later) goes */
  g_assert_cmpint (idx[5], ==, 5);
  const float y[] = { 5, NAN, -INFINITY, 7 };
  tw_compress_topk_select (y, 4, 1, idx);
  g_assert_cmpint (idx[0], ==, 1);
  tw_compress_topk_select (y, 4, 2, idx);
  g_assert_cmpint (idx[0], ==, 1);
  g_assert_cmpint (idx[1], ==, 2);
}

static const float *sort_x;

static int
cmp_mag (const void *a, const void *b)
{
  int i = *(const int *) a, j = *(const int *) b;
  float u = fabsf (sort_x[i]), v = fabsf (sort_x[j]);
  return u > v ? -1 : u < v ? 1 : i - j;
}

static int
cmp_int (const void *a, const void *b)
{
  return *(const int32_t *) a - *(const int32_t *) b;
}

/* Against a sort on magnitudes of every scale (so that both 16-bit halves
 * of the radix select matter) with many ties (values on a grid). */
static void
test_topk_random (void)
{
  for (int trial = 0; trial < 40; trial++)
    {
      int n = 1 + (int) (mix (trial) % 5000);
      g_autofree float *x = g_new (float, n);
      for (int i = 0; i < n; i++)
        {
          guint64 h = mix ((guint64) trial << 32 | (guint64) i);
          double v = trial % 2 ? (double) (h % 64) / 8 - 4         /* ties */
                               : ldexp ((double) (h >> 40) / (1 << 24) - 0.5, (int) (h % 40) - 20);
          x[i] = (float) v;
        }
      g_autofree int *ord = g_new (int, n);
      for (int i = 0; i < n; i++)
        ord[i] = i;
      sort_x = x;
      qsort (ord, n, sizeof *ord, cmp_mag);
      int64_t ks[] = { 1, tw_compress_topk_k (0.01, n), tw_compress_topk_k (0.3, n), n };
      for (guint j = 0; j < G_N_ELEMENTS (ks); j++)
        {
          int64_t k = ks[j];
          g_autofree int32_t *got = g_new (int32_t, k), *want = g_new (int32_t, k);
          tw_compress_topk_select (x, n, k, got);
          for (int64_t i = 0; i < k; i++)
            want[i] = ord[i];
          qsort (want, k, sizeof *want, cmp_int);
          g_assert_cmpmem (got, k * 4, want, k * 4);
        }
    }
}

static void
test_int8 (void)
{
  const float x[] = { 0.5f, -1.27f, 0.004f, 0.006f, -0.0049f, 1.0f };
  int8_t q[6];
  float s = tw_compress_int8_quantize (x, 6, q);
  g_assert_cmpfloat (s, ==, 1.27f / 127.0f);
  const int8_t want[] = { 50, -127, 0, 1, 0, 100 };   /* 0.004/0.01 rounds down, 0.006 up */
  g_assert_cmpmem (q, 6, want, 6);
  for (int i = 0; i < 6; i++)
    g_assert_cmpfloat (fabsf (x[i] - q[i] * s), <=, s / 2 * (1 + 1e-6));
  const float zero[] = { 0, -0.0f, 0 };
  memset (q, 9, sizeof q);
  g_assert_cmpfloat (tw_compress_int8_quantize (zero, 3, q), ==, 0);
  g_assert_cmpint (q[0] | q[1] | q[2], ==, 0);
  const float bad[] = { 1, NAN, 2 };
  g_assert_true (isnan (tw_compress_int8_quantize (bad, 3, q)));
  const float inf[] = { 1, -INFINITY };
  g_assert_true (isnan (tw_compress_int8_quantize (inf, 2, q)));
}

static void
test_sign_bits (void)
{
  const float x[] = { -1, 2, -3, 0, 4, -5, 6, -7, 8, -0.5f, 1.5f };
  guint8 bits[2] = { 0xff, 0xff };
  float s = tw_compress_sign_pack (x, 11, bits);
  g_assert_cmpfloat_with_epsilon (s, 38.0 / 11, 1e-6);
  /* bit i%8 of byte i/8 set for negatives; 0 is positive; padding clear */
  g_assert_cmpint (bits[0], ==, 0x01 | 0x04 | 0x20 | 0x80);
  g_assert_cmpint (bits[1], ==, 0x02);
  float out[11] = { 0 };
  out[0] = 1;
  tw_compress_sign_add (bits, 2, 11, out);
  g_assert_cmpfloat (out[0], ==, -1);
  g_assert_cmpfloat (out[1], ==, 2);
  g_assert_cmpfloat (out[3], ==, 2);
  g_assert_cmpfloat (out[9], ==, -2);
  g_assert_cmpfloat (tw_compress_sign_pack (x, 0, bits), ==, 0);
}

static void
test_orthonormalize (void)
{
  enum { M = 40, R = 4 };
  float p[M * R], orig[M * R];
  for (int i = 0; i < M * R; i++)
    orig[i] = p[i] = (float) ((double) (mix (i + 7) >> 11) / (1ull << 53) - 0.5);
  /* Column 3 = column 0 + column 1: in the span. */
  for (int i = 0; i < M; i++)
    orig[i * R + 3] = p[i * R + 3] = p[i * R] + p[i * R + 1];
  tw_compress_orthonormalize (p, M, R);
  for (int a = 0; a < R; a++)
    for (int b = 0; b < R; b++)
      {
        double d = 0;
        for (int i = 0; i < M; i++)
          d += (double) p[i * R + a] * p[i * R + b];
        /* Float storage of unit vectors: 40 terms of 6e-8 each. */
        double want = a == b && a < 3 ? 1 : 0;
        g_assert_cmpfloat (fabs (d - want), <=, 1e-6);
      }
  /* Column 0 keeps its direction: p0 = orig0/‖orig0‖. */
  double nn = 0;
  for (int i = 0; i < M; i++)
    nn += (double) orig[i * R] * orig[i * R];
  for (int i = 0; i < M; i++)
    g_assert_cmpfloat (fabs (p[i * R] - orig[i * R] / sqrt (nn)), <=, 1e-6);
  float zero[3 * 2] = { 0 };
  tw_compress_orthonormalize (zero, 3, 2);
  for (int i = 0; i < 6; i++)
    g_assert_cmpfloat (zero[i], ==, 0);
}

static void
test_init_q (void)
{
  float a[30 * 3], b[30 * 3], c[30 * 3];
  tw_compress_powersgd_init_q (a, 30, 3, 1);
  tw_compress_powersgd_init_q (b, 30, 3, 1);
  tw_compress_powersgd_init_q (c, 30, 3, 2);
  g_assert_cmpmem (a, sizeof a, b, sizeof b);
  g_assert_true (memcmp (a, c, sizeof a) != 0);
  for (int i = 0; i < 90; i++)
    g_assert_true (a[i] >= -1 && a[i] < 1);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/compress/topk/k", test_topk_k);
  g_test_add_func ("/compress/topk/ties", test_topk_ties);
  g_test_add_func ("/compress/topk/random", test_topk_random);
  g_test_add_func ("/compress/int8", test_int8);
  g_test_add_func ("/compress/sign-bits", test_sign_bits);
  g_test_add_func ("/compress/orthonormalize", test_orthonormalize);
  g_test_add_func ("/compress/powersgd-init-q", test_init_q);
  return g_test_run ();
}
