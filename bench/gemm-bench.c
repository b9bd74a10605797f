/* gemm-bench.c — tw_gemm_f32 (AVX-512 kernel) against cblas_sgemm on the
 * GEMMs the engine runs in training, in the same process and environment.
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
 * round long enough (≥ 20 µs) for the clock; the figure is the median round.
 * Two untimed calls of each come first.  With more threads, alternating
 * rounds would measure each library against the other's idle threads, which
 * keep spinning after a call (OpenBLAS's for up to 2^28 cycles, ~0.1 s, by
 * default; libgomp's for a shorter while), so each implementation gets two
 * phases of its own (ours, OpenBLAS, ours, OpenBLAS) after a 0.2 s pause.
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

/* Seconds per call of ours [0] and OpenBLAS [1]. */
static void
time_shape (const shape *s, const float *a, const float *b, float *c, double min_time,
            int nthreads, double out[2])
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

  if (!tw_gemm_set_backend (TW_GEMM_BACKEND_AVX512))
    printf ("# no AVX-512 on this CPU: 'ours' is the OpenBLAS fallback\n");
  printf ("# kernel: %s; OPENBLAS_CORETYPE=%s; %s\n", tw_gemm_kernel_name (),
          g_getenv ("OPENBLAS_CORETYPE") ? g_getenv ("OPENBLAS_CORETYPE") : "(unset)",
          openblas_get_config ());
  printf ("| shape | trans | M×N×K | threads | ours GFLOP/s | OpenBLAS GFLOP/s | ratio |\n");
  printf ("| --- | --- | --- | --- | --- | --- | --- |\n");

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
          double sec[2], flop = 2.0 * s->m * s->n * s->k;
          tw_gemm_set_num_threads (nt);
          openblas_set_num_threads (nt);
          time_shape (s, a, b, c, min_time, nt, sec);
          printf ("| %s | %c%c | %d×%d×%d | %d | %.1f | %.1f | %.2f |\n", s->name,
                  s->ta ? 'T' : 'N', s->tb ? 'T' : 'N', s->m, s->n, s->k, nt,
                  flop / sec[0] * 1e-9, flop / sec[1] * 1e-9, sec[1] / sec[0]);
          fflush (stdout);
        }
      g_free (a);
      g_free (b);
      g_free (c);
    }
  return 0;
}
