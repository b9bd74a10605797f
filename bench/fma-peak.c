/* fma-peak.c — the machine's measured single-precision FMA peak: the
 * ceiling any GEMM (ours, OpenBLAS) is judged against in gemm-bench.
 *
 * Each thread runs independent chains of vector fused multiply-adds
 * (acc = acc · a + b, which settles at a finite value, so no overflow and no
 * denormals) on registers only: no memory traffic, so the figure is the FMA
 * pipes' throughput at the clock the cores run at under load.  Chains:
 * CHAINS per thread, more than pipes × latency on any current x86-64 (2
 * pipes × 4 cycles = 8 on Zen 4/5 and Skylake-X/Sapphire Rapids, 2 × 5 = 10
 * on Haswell), fewer than the 16 (AVX2) or 32 (AVX-512) vector registers.
 *
 * Widths: AVX-512 where the CPU has it, and AVX2 + FMA (both when both are
 * there: a kernel of either width is judged against its own ceiling).  Each
 * figure is the best of --repeat runs of --min-time seconds, at 1 thread
 * and at --threads (default: all online CPUs, one OpenMP thread each).
 *
 *   fma-peak [--threads N] [--min-time 0.2] [--repeat 3] [--json]
 *
 * FLOPs: 2 per lane per FMA (multiply and add), as GEMM counts 2·M·N·K. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_X86 1
#endif

#define CHAINS 12
#define INNER 1024 /* FMAs per chain between clock reads */

static double
now_s (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#ifdef HAVE_X86
/* Returns the FMAs per chain done; sink keeps the chains alive. */
__attribute__ ((target ("avx2,fma"))) static long
run_avx2 (double seconds, float *sink)
{
  __m256 acc[CHAINS];
  const __m256 a = _mm256_set1_ps (0.999f), b = _mm256_set1_ps (1e-3f);
  for (int c = 0; c < CHAINS; c++)
    acc[c] = _mm256_set1_ps ((float) c);
  long n = 0;
  double end = now_s () + seconds;
  do
    {
      for (int i = 0; i < INNER; i++)
        for (int c = 0; c < CHAINS; c++)
          acc[c] = _mm256_fmadd_ps (acc[c], a, b);
      n += INNER;
    }
  while (now_s () < end);
  __m256 s = acc[0];
  for (int c = 1; c < CHAINS; c++)
    s = _mm256_add_ps (s, acc[c]);
  *sink = _mm256_cvtss_f32 (s);
  return n;
}

__attribute__ ((target ("avx512f,fma"))) static long
run_avx512 (double seconds, float *sink)
{
  __m512 acc[CHAINS * 2];
  const __m512 a = _mm512_set1_ps (0.999f), b = _mm512_set1_ps (1e-3f);
  for (int c = 0; c < CHAINS * 2; c++)
    acc[c] = _mm512_set1_ps ((float) c);
  long n = 0;
  double end = now_s () + seconds;
  do
    {
      for (int i = 0; i < INNER; i++)
        for (int c = 0; c < CHAINS * 2; c++)
          acc[c] = _mm512_fmadd_ps (acc[c], a, b);
      n += INNER;
    }
  while (now_s () < end);
  __m512 s = acc[0];
  for (int c = 1; c < CHAINS * 2; c++)
    s = _mm512_add_ps (s, acc[c]);
  *sink = _mm512_reduce_add_ps (s);
  return n;
}
#endif

typedef struct
{
  const char *name;
  int lanes, chains;
  long (*run) (double seconds, float *sink);
} width;

/* GFLOP/s of nt threads, each running w for seconds (best of repeat). */
static double
measure (const width *w, int nt, double seconds, int repeat)
{
  double best = 0;
  for (int r = 0; r < repeat; r++)
    {
      long total = 0;
      double t0 = now_s ();
#pragma omp parallel num_threads (nt) reduction (+ : total)
      {
        float sink;
        total += w->run (seconds, &sink);
        if (sink == 12345.678f)
          printf (" ");
      }
      double t = now_s () - t0;
      double gflops = (double) total * w->chains * w->lanes * 2 / t * 1e-9;
      best = gflops > best ? gflops : best;
    }
  return best;
}

int
main (int argc, char **argv)
{
  int threads = (int) sysconf (_SC_NPROCESSORS_ONLN), repeat = 3, json = 0;
  double min_time = 0.2;
  for (int i = 1; i < argc; i++)
    {
      if (strcmp (argv[i], "--threads") == 0 && i + 1 < argc)
        threads = atoi (argv[++i]);
      else if (strcmp (argv[i], "--min-time") == 0 && i + 1 < argc)
        min_time = atof (argv[++i]);
      else if (strcmp (argv[i], "--repeat") == 0 && i + 1 < argc)
        repeat = atoi (argv[++i]);
      else if (strcmp (argv[i], "--json") == 0)
        json = 1;
      else
        {
          fprintf (stderr, "usage: %s [--threads N] [--min-time S] [--repeat N] [--json]\n",
                   argv[0]);
          return 2;
        }
    }
  if (threads < 1 || repeat < 1 || !(min_time > 0))
    {
      fprintf (stderr, "fma-peak: --threads and --repeat must be >= 1, --min-time > 0\n");
      return 2;
    }

  width widths[2];
  int nw = 0;
#ifdef HAVE_X86
  __builtin_cpu_init ();
  if (__builtin_cpu_supports ("avx512f"))
    widths[nw++] = (width) { "avx512", 16, CHAINS * 2, run_avx512 };
  if (__builtin_cpu_supports ("avx2") && __builtin_cpu_supports ("fma"))
    widths[nw++] = (width) { "avx2", 8, CHAINS, run_avx2 };
#endif
  if (nw == 0)
    {
      fprintf (stderr, "fma-peak: this CPU has neither AVX2 + FMA nor AVX-512\n");
      return 1;
    }

  if (json)
    printf ("{\"threads\": %d, \"peaks\": [", threads);
  else
    printf ("%-8s %14s %14s   (GFLOP/s, single precision, %d threads = all online CPUs "
            "unless --threads)\n",
            "width", "1 thread", "all threads", threads);
  for (int i = 0; i < nw; i++)
    {
      double one = measure (&widths[i], 1, min_time, repeat);
      double all = threads > 1 ? measure (&widths[i], threads, min_time, repeat) : one;
      if (json)
        printf ("%s{\"width\": \"%s\", \"one_thread\": %.1f, \"all_threads\": %.1f}",
                i ? ", " : "", widths[i].name, one, all);
      else
        printf ("%-8s %14.1f %14.1f\n", widths[i].name, one, all);
    }
  if (json)
    printf ("]}\n");
  return 0;
}
