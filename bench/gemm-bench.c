/* gemm-bench.c — tw_gemm_f32 with our kernel (the AVX-512 one, or the AVX2
 * + FMA one on CPUs without AVX-512: whichever the CPU runs) against
 * cblas_sgemm on the GEMMs the engine runs in training, in the same process
 * and environment, next to the machine's FMA peak.
 *
 * Shapes (row-major, C [M, N] = op(A) [M, K] · op(B) [K, N]); for a linear
 * layer with W [out, in] and batch B:
 *   fwd  NT  M=B    N=out K=in     y = x · Wᵀ
 *   dx   NN  M=B    N=in  K=out    dx = dy · W
 *   dW   TN  M=out  N=in  K=B      dW = dyᵀ · x
 * for the MLP 784-256-128-10 at batch 64 and 256, the MLP 784-4096-4096-10
 * at batch 256, and LeNet-5's im2col products at batch 64 (conv1: W [6, 25],
 * columns [25, 64·784]; conv2: W [16, 150], columns [150, 64·100]).
 *
 * At one thread the two implementations are timed in alternating rounds
 * (so drift in clock speed or in the other workers' load hits both), each
 * round long enough (≥ 20 µs) for the clock; the figure is the median round,
 * and "best ratio" compares the fastest rounds (the ones no other process
 * interrupted: on a shared machine the steadier figure of the kernels
 * themselves).  Two untimed calls of each come first.  With more threads,
 * alternating rounds would measure each library against the other's idle
 * threads, which keep spinning after a call (OpenBLAS's for up to 2^28
 * cycles, ~0.1 s, by default; libgomp's for a shorter while), so each
 * implementation gets two phases of its own (ours, OpenBLAS, ours, OpenBLAS)
 * after a 0.2 s pause.
 *
 * Peak: at start, the single-precision FMA throughput of one core at the
 * width of our kernel (12 independent chains of vector FMAs on registers,
 * the fastest of 2000 bursts of ~10 µs after 20 ms of warm-up, so a burst
 * that kept the core to itself sets it); "% peak" is our figure against threads × that.
 * build/bench/fma-peak measures the same ceiling over longer runs and all
 * cores.
 *
 *   gemm-bench [--threads 1,2] [--min-time 0.2] [--filter SUBSTRING]
 *
 * OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are left as the environment has them.
 */
#include "engine/cpu/gemm.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_X86 1
#endif

typedef struct
{
  const char *name;
  gboolean ta, tb;
  int m, n, k;
} shape;

static const shape shapes[] = {
  { "mlp-s b64 fc1 fwd", FALSE, TRUE, 64, 256, 784 },
  { "mlp-s b64 fc1 dW", TRUE, FALSE, 256, 784, 64 },
  { "mlp-s b64 fc2 fwd", FALSE, TRUE, 64, 128, 256 },
  { "mlp-s b64 fc2 dx", FALSE, FALSE, 64, 256, 128 },
  { "mlp-s b64 fc2 dW", TRUE, FALSE, 128, 256, 64 },
  { "mlp-s b64 fc3 fwd", FALSE, TRUE, 64, 10, 128 },
  { "mlp-s b64 fc3 dx", FALSE, FALSE, 64, 128, 10 },
  { "mlp-s b64 fc3 dW", TRUE, FALSE, 10, 128, 64 },
  { "mlp-s b256 fc1 fwd", FALSE, TRUE, 256, 256, 784 },
  { "mlp-s b256 fc1 dW", TRUE, FALSE, 256, 784, 256 },
  { "mlp-s b256 fc2 fwd", FALSE, TRUE, 256, 128, 256 },
  { "mlp-s b256 fc2 dx", FALSE, FALSE, 256, 256, 128 },
  { "mlp-s b256 fc2 dW", TRUE, FALSE, 128, 256, 256 },
  { "mlp-s b256 fc3 fwd", FALSE, TRUE, 256, 10, 128 },
  { "mlp-s b256 fc3 dx", FALSE, FALSE, 256, 128, 10 },
  { "mlp-s b256 fc3 dW", TRUE, FALSE, 10, 128, 256 },
  { "lenet b64 conv1 fwd", FALSE, FALSE, 6, 64 * 784, 25 },
  { "lenet b64 conv1 dW", FALSE, TRUE, 6, 25, 64 * 784 },
  { "lenet b64 conv1 dcol", TRUE, FALSE, 25, 64 * 784, 6 },
  { "lenet b64 conv2 fwd", FALSE, FALSE, 16, 64 * 100, 150 },
  { "lenet b64 conv2 dW", FALSE, TRUE, 16, 150, 64 * 100 },
  { "lenet b64 conv2 dcol", TRUE, FALSE, 150, 64 * 100, 16 },
  { "mlp-L b256 fc1 fwd", FALSE, TRUE, 256, 4096, 784 },
  { "mlp-L b256 fc1 dx", FALSE, FALSE, 256, 784, 4096 },
  { "mlp-L b256 fc1 dW", TRUE, FALSE, 4096, 784, 256 },
  { "mlp-L b256 fc2 fwd", FALSE, TRUE, 256, 4096, 4096 },
  { "mlp-L b256 fc2 dx", FALSE, FALSE, 256, 4096, 4096 },
  { "mlp-L b256 fc2 dW", TRUE, FALSE, 4096, 4096, 256 },
  { "mlp-L b256 fc3 fwd", FALSE, TRUE, 256, 10, 4096 },
  { "mlp-L b256 fc3 dx", FALSE, FALSE, 256, 4096, 10 },
  { "mlp-L b256 fc3 dW", TRUE, FALSE, 10, 4096, 256 },
};

/* Rounds kept per implementation: bounds the memory for the medians. */
#define MAX_ROUNDS 4096

static double
now_s (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

static double
median (double *t, int n)
{
  qsort (t, n, sizeof t[0], cmp_double);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* Values in [-1, 1) from a fixed LCG: no denormals, same data every run. */
static void
fill (float *p, size_t n, unsigned *state)
{
  for (size_t i = 0; i < n; i++)
    {
      *state = *state * 1664525u + 1013904223u;
      p[i] = (float) ((*state >> 8) * (2.0 / 16777216.0) - 1.0);
    }
}

/* ---- FMA peak of one core ------------------------------------------------ */

#define PEAK_CHAINS 12
#define PEAK_ITERS 4096 /* per burst: 12 · 4096 vector FMAs, ~10 µs */

#ifdef HAVE_X86
__attribute__ ((target ("avx2,fma"), noinline)) static float
peak_burst_avx2 (void)
{
  __m256 acc[PEAK_CHAINS];
  const __m256 a = _mm256_set1_ps (0.999f), b = _mm256_set1_ps (1e-3f);
  for (int c = 0; c < PEAK_CHAINS; c++)
    acc[c] = _mm256_set1_ps ((float) c);
  for (int i = 0; i < PEAK_ITERS; i++)
    for (int c = 0; c < PEAK_CHAINS; c++)
      acc[c] = _mm256_fmadd_ps (acc[c], a, b);
  __m256 s = acc[0];
  for (int c = 1; c < PEAK_CHAINS; c++)
    s = _mm256_add_ps (s, acc[c]);
  return _mm256_cvtss_f32 (s);
}

/* 24 chains: the AVX-512 kernel's width, two pipes × 4 cycles with room. */
__attribute__ ((target ("avx512f,fma"), noinline)) static float
peak_burst_avx512 (void)
{
  __m512 acc[2 * PEAK_CHAINS];
  const __m512 a = _mm512_set1_ps (0.999f), b = _mm512_set1_ps (1e-3f);
  for (int c = 0; c < 2 * PEAK_CHAINS; c++)
    acc[c] = _mm512_set1_ps ((float) c);
  for (int i = 0; i < PEAK_ITERS; i++)
    for (int c = 0; c < 2 * PEAK_CHAINS; c++)
      acc[c] = _mm512_fmadd_ps (acc[c], a, b);
  __m512 s = acc[0];
  for (int c = 1; c < 2 * PEAK_CHAINS; c++)
    s = _mm512_add_ps (s, acc[c]);
  return _mm512_reduce_add_ps (s);
}
#endif

/* GFLOP/s of one core at the width of our kernel; 0 when it has none. */
static double
fma_peak_one_core (const char **width)
{
#ifdef HAVE_X86
  gboolean wide = tw_gemm_have_avx512 ();
  if (!wide && !tw_gemm_have_kernel ())
    return 0;
  *width = wide ? "AVX-512" : "AVX2";
  double best = G_MAXDOUBLE;
  volatile float sink = 0;
  /* Warm-up: the clock rises under load. */
  for (double end = now_s () + 0.02; now_s () < end;)
    sink += wide ? peak_burst_avx512 () : peak_burst_avx2 ();
  for (int r = 0; r < 2000; r++)
    {
      double t0 = now_s ();
      sink += wide ? peak_burst_avx512 () : peak_burst_avx2 ();
      best = MIN (best, now_s () - t0);
    }
  double flop = 2.0 * PEAK_ITERS * PEAK_CHAINS * (wide ? 2 * 16 : 8);
  return flop / best * 1e-9;
#else
  return 0;
#endif
}

static void
call (gboolean ours, const shape *s, const float *a, const float *b, float *c)
{
  int lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
  if (ours)
    tw_gemm_f32 (s->ta, s->tb, s->m, s->n, s->k, 1.0f, a, lda, b, ldb, 0.0f, c, s->n);
  else
    cblas_sgemm (CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans,
                 s->tb ? CblasTrans : CblasNoTrans, s->m, s->n, s->k, 1.0f, a, lda, b, ldb, 0.0f,
                 c, s->n);
}

/* Seconds per call of ours [0] and OpenBLAS [1]: median rounds in out,
 * fastest rounds in best. */
static void
time_shape (const shape *s, const float *a, const float *b, float *c, double min_time,
            int nthreads, double out[2], double best[2])
{
  static double t[2][MAX_ROUNDS];
  int reps = 1, rounds = 0;
  double start;

  for (int impl = 0; impl < 2; impl++)
    for (int i = 0; i < 2; i++)
      call (impl == 0, s, a, b, c);
  /* Calls per round: enough for 20 µs of the faster one (clock resolution
   * and call overhead stay below 1 %). */
  for (;;)
    {
      double t0 = now_s ();
      for (int r = 0; r < reps; r++)
        call (TRUE, s, a, b, c);
      if (now_s () - t0 >= 20e-6 || reps >= 1 << 16)
        break;
      reps *= 2;
    }
  if (nthreads == 1)
    {
      start = now_s ();
      while (rounds < MAX_ROUNDS && (rounds < 7 || now_s () - start < min_time))
        {
          for (int impl = 0; impl < 2; impl++)
            {
              double t0 = now_s ();
              for (int r = 0; r < reps; r++)
                call (impl == 0, s, a, b, c);
              t[impl][rounds] = (now_s () - t0) / reps;
            }
          rounds++;
        }
      out[0] = median (t[0], rounds);
      out[1] = median (t[1], rounds);
      best[0] = t[0][0]; /* sorted by median () */
      best[1] = t[1][0];
      return;
    }

  int n[2] = { 0, 0 };
  for (int phase = 0; phase < 4; phase++)
    {
      int impl = phase % 2, k = 0;
      g_usleep (200000);
      call (impl == 0, s, a, b, c);
      start = now_s ();
      while (n[impl] < MAX_ROUNDS && (k < 4 || now_s () - start < min_time / 2))
        {
          double t0 = now_s ();
          for (int r = 0; r < reps; r++)
            call (impl == 0, s, a, b, c);
          t[impl][n[impl]++] = (now_s () - t0) / reps;
          k++;
        }
    }
  out[0] = median (t[0], n[0]);
  out[1] = median (t[1], n[1]);
  best[0] = t[0][0];
  best[1] = t[1][0];
}

int
main (int argc, char **argv)
{
  const char *threads_arg = "1,2", *filter = NULL;
  double min_time = 0.2;
  unsigned seed = 12345;

  for (int i = 1; i < argc; i++)
    {
      if (strcmp (argv[i], "--threads") == 0 && i + 1 < argc)
        threads_arg = argv[++i];
      else if (strcmp (argv[i], "--min-time") == 0 && i + 1 < argc)
        min_time = atof (argv[++i]);
      else if (strcmp (argv[i], "--filter") == 0 && i + 1 < argc)
        filter = argv[++i];
      else
        {
          fprintf (stderr,
                   "usage: gemm-bench [--threads 1,2] [--min-time SECONDS] [--filter TEXT]\n");
          return strcmp (argv[i], "--help") == 0 ? 0 : 2;
        }
    }

  if (!tw_gemm_set_backend (TW_GEMM_BACKEND_OURS))
    printf ("# no AVX-512 nor AVX2 + FMA on this CPU: 'ours' is the OpenBLAS fallback\n");
  const char *width = NULL;
  double peak = fma_peak_one_core (&width);
  printf ("# kernel: %s; OPENBLAS_CORETYPE=%s; %s\n", tw_gemm_kernel_name (),
          g_getenv ("OPENBLAS_CORETYPE") ? g_getenv ("OPENBLAS_CORETYPE") : "(unset)",
          openblas_get_config ());
  if (peak > 0)
    printf ("# FMA peak of one core (%s): %.1f GFLOP/s\n", width, peak);
  printf ("| shape | trans | M×N×K | threads | ours GFLOP/s | OpenBLAS GFLOP/s | ratio | best ratio "
          "| ours %% peak |\n");
  printf ("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");

  g_auto (GStrv) tl = g_strsplit (threads_arg, ",", -1);
  for (guint si = 0; si < G_N_ELEMENTS (shapes); si++)
    {
      const shape *s = &shapes[si];
      if (filter && !strstr (s->name, filter))
        continue;
      size_t na = (size_t) s->m * s->k, nb = (size_t) s->k * s->n, nc = (size_t) s->m * s->n;
      float *a = g_new (float, na), *b = g_new (float, nb), *c = g_new0 (float, nc);
      fill (a, na, &seed);
      fill (b, nb, &seed);
      for (int ti = 0; tl[ti]; ti++)
        {
          int nt = atoi (tl[ti]);
          double sec[2], best[2], flop = 2.0 * s->m * s->n * s->k;
          tw_gemm_set_num_threads (nt);
          openblas_set_num_threads (nt);
          time_shape (s, a, b, c, min_time, nt, sec, best);
          g_autofree char *pct
            = peak > 0 ? g_strdup_printf ("%.0f", 100 * flop / sec[0] * 1e-9 / (peak * nt))
                       : g_strdup ("-");
          printf ("| %s | %c%c | %d×%d×%d | %d | %.1f | %.1f | %.2f | %.2f | %s |\n", s->name,
                  s->ta ? 'T' : 'N', s->tb ? 'T' : 'N', s->m, s->n, s->k, nt,
                  flop / sec[0] * 1e-9, flop / sec[1] * 1e-9, sec[1] / sec[0], best[1] / best[0],
                  pct);
          fflush (stdout);
        }
      g_free (a);
      g_free (b);
      g_free (c);
    }
  return 0;
}
