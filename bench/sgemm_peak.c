/* sgemm_peak.c — what OpenBLAS alone does on the GEMMs of one training step
 * of the GEMM-bound MLP (assets/models/mlp-gemm.json: 784 → 4096 → 4096 → 10).
 *
 * For every linear layer (in → out), weights W [out, in] as PyTorch lays them
 * out, batch B, row-major:
 *
 *   forward       Y [B, out]   = X [B, in] · Wᵀ         M=B    N=out  K=in
 *   grad input    dX [B, in]   = dY [B, out] · W        M=B    N=in   K=out
 *   grad weight   dW [out, in] = dYᵀ [out, B] · X       M=out  N=in   K=B
 *
 * each 2·B·in·out FLOPs, so one step is 6·B·Σ(in·out) FLOPs — the same count
 * bench/compare-torch uses to turn a step time into GFLOP/s.  (Training does
 * not need the first layer's grad input; it is timed anyway so the count
 * matches that formula.)
 *
 * Each product is called until it has run for --min-time seconds (at least 5
 * calls, after 2 untimed ones); the median call time is reported.  The step
 * figure is the sum of the nine medians.
 *
 *   sgemm-peak [--batch 256] [--threads 1] [--min-time 0.3] [--json]
 *
 * OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are left as the environment has them.
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct
{
  const char *layer;
  int in, out;
} layer_shape;

/* assets/models/mlp-gemm.json */
static const layer_shape layers[] = {
  { "fc1", 784, 4096 },
  { "fc2", 4096, 4096 },
  { "fc3", 4096, 10 },
};
#define N_LAYERS ((int) (sizeof layers / sizeof layers[0]))

/* Upper bound on timed calls per product (only reached by tiny products). */
#define MAX_CALLS 10000

typedef struct
{
  char name[32];
  CBLAS_TRANSPOSE ta, tb;
  int m, n, k;
  double ms; /* median per call */
} product;

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

/* Values in [-1, 1) from a fixed LCG: no denormals, same data every run. */
static float *
random_matrix (size_t n, unsigned *state)
{
  float *p = malloc (n * sizeof *p);
  if (p == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++)
    {
      *state = *state * 1664525u + 1013904223u;
      p[i] = (float) ((*state >> 8) * (2.0 / 16777216.0) - 1.0);
    }
  return p;
}

static void
product_init (product *p, const char *layer, const char *what, CBLAS_TRANSPOSE ta,
              CBLAS_TRANSPOSE tb, int m, int n, int k)
{
  snprintf (p->name, sizeof p->name, "%s.%s", layer, what);
  p->ta = ta;
  p->tb = tb;
  p->m = m;
  p->n = n;
  p->k = k;
  p->ms = 0;
}

static double
time_product (const product *p, const float *a, const float *b, float *c, double min_time)
{
  static double t[MAX_CALLS];
  int lda = p->ta == CblasNoTrans ? p->k : p->m;
  int ldb = p->tb == CblasNoTrans ? p->n : p->k;
  int calls = 0;
  double start;

  for (int i = 0; i < 2; i++)
    cblas_sgemm (CblasRowMajor, p->ta, p->tb, p->m, p->n, p->k, 1.0f, a, lda, b, ldb, 0.0f, c,
                 p->n);

  start = now_s ();
  while (calls < MAX_CALLS && (calls < 5 || now_s () - start < min_time))
    {
      double t0 = now_s ();
      cblas_sgemm (CblasRowMajor, p->ta, p->tb, p->m, p->n, p->k, 1.0f, a, lda, b, ldb, 0.0f, c,
                   p->n);
      t[calls++] = now_s () - t0;
    }
  qsort (t, calls, sizeof t[0], cmp_double);
  return (calls % 2 ? t[calls / 2] : 0.5 * (t[calls / 2 - 1] + t[calls / 2])) * 1e3;
}

static void
usage (FILE *f)
{
  fprintf (f, "usage: sgemm-peak [--batch B] [--threads T] [--min-time SECONDS] [--json]\n");
}

int
main (int argc, char **argv)
{
  int batch = 256, threads = 1, json = 0;
  double min_time = 0.3;
  product prods[3 * N_LAYERS];
  int n_prods = 0;
  double step_ms = 0, step_flops = 0;
  unsigned seed = 12345;

  for (int i = 1; i < argc; i++)
    {
      if (strcmp (argv[i], "--batch") == 0 && i + 1 < argc)
        batch = atoi (argv[++i]);
      else if (strcmp (argv[i], "--threads") == 0 && i + 1 < argc)
        threads = atoi (argv[++i]);
      else if (strcmp (argv[i], "--min-time") == 0 && i + 1 < argc)
        min_time = atof (argv[++i]);
      else if (strcmp (argv[i], "--json") == 0)
        json = 1;
      else if (strcmp (argv[i], "--help") == 0 || strcmp (argv[i], "-h") == 0)
        {
          usage (stdout);
          return 0;
        }
      else
        {
          usage (stderr);
          return 2;
        }
    }
  if (batch < 1 || threads < 1 || min_time < 0)
    {
      usage (stderr);
      return 2;
    }

  openblas_set_num_threads (threads);

  for (int l = 0; l < N_LAYERS; l++)
    {
      int in = layers[l].in, out = layers[l].out;
      product *p = &prods[n_prods];
      size_t big = (size_t) (batch > out ? batch : out) * (size_t) (in > out ? in : out);
      float *a = random_matrix (big, &seed);
      float *b = random_matrix (big, &seed);
      float *c = malloc (big * sizeof *c);

      if (a == NULL || b == NULL || c == NULL)
        {
          fprintf (stderr, "sgemm-peak: out of memory\n");
          return 1;
        }

      product_init (&p[0], layers[l].layer, "forward", CblasNoTrans, CblasTrans, batch, out, in);
      product_init (&p[1], layers[l].layer, "grad_input", CblasNoTrans, CblasNoTrans, batch, in,
                    out);
      product_init (&p[2], layers[l].layer, "grad_weight", CblasTrans, CblasNoTrans, out, in,
                    batch);

      for (int j = 0; j < 3; j++)
        {
          p[j].ms = time_product (&p[j], a, b, c, min_time);
          step_ms += p[j].ms;
          step_flops += 2.0 * p[j].m * p[j].n * p[j].k;
        }
      n_prods += 3;
      free (a);
      free (b);
      free (c);
    }

  if (json)
    {
      printf ("{\"batch\": %d, \"threads\": %d, \"step_gemm_ms\": %.4f, \"step_gflop\": %.4f, "
              "\"gflops\": %.2f, \"products\": [",
              batch, threads, step_ms, step_flops * 1e-9, step_flops / (step_ms * 1e-3) * 1e-9);
      for (int i = 0; i < n_prods; i++)
        {
          const product *p = &prods[i];
          printf ("%s{\"name\": \"%s\", \"m\": %d, \"n\": %d, \"k\": %d, \"ms\": %.4f, "
                  "\"gflops\": %.2f}",
                  i ? ", " : "", p->name, p->m, p->n, p->k, p->ms,
                  2.0 * p->m * p->n * p->k / (p->ms * 1e-3) * 1e-9);
        }
      printf ("]}\n");
      return 0;
    }

  printf ("OpenBLAS cblas_sgemm, MLP 784-4096-4096-10, batch %d, %d thread(s)\n", batch, threads);
  printf ("%-18s %6s %6s %6s %10s %9s\n", "product", "M", "N", "K", "ms/call", "GFLOP/s");
  for (int i = 0; i < n_prods; i++)
    {
      const product *p = &prods[i];
      printf ("%-18s %6d %6d %6d %10.3f %9.1f\n", p->name, p->m, p->n, p->k, p->ms,
              2.0 * p->m * p->n * p->k / (p->ms * 1e-3) * 1e-9);
    }
  printf ("%-18s %6s %6s %6s %10.3f %9.1f\n", "one step (sum)", "", "", "", step_ms,
          step_flops / (step_ms * 1e-3) * 1e-9);
  return 0;
}
