/* infer-latency.c — batch-1 inference latency of a model in the eager and
 * compiled executors: median of N forward passes after a warm-up, one JSON
 * line.  bench/compare-torch puts it beside PyTorch's eager and
 * torch.jit.trace + freeze figures.
 *
 *   build/bench/infer-latency assets/models/mlp.json [--runs 2000] [--threads 1]
 */
#include "engine/compile/compiled.h"
#include "engine/device.h"
#include "engine/model.h"
#include "engine/rng.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int
cmp (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

int
main (int argc, char **argv)
{
  int runs = 2000, threads = 1;
  const char *path = NULL;
  setlocale (LC_NUMERIC, "C");
  for (int i = 1; i < argc; i++)
    {
      if (strcmp (argv[i], "--runs") == 0 && i + 1 < argc)
        runs = atoi (argv[++i]);
      else if (strcmp (argv[i], "--threads") == 0 && i + 1 < argc)
        threads = atoi (argv[++i]);
      else
        path = argv[i];
    }
  if (path == NULL || runs < 1)
    {
      fprintf (stderr, "usage: infer-latency MODEL.json [--runs N] [--threads T]\n");
      return 2;
    }
  tw_ops_init ();
  tw_set_num_threads (threads);
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = tw_model_load (path, &error);
  if (m == NULL || tw_graph_infer (m->graph) > 0)
    {
      fprintf (stderr, "infer-latency: %s: %s\n", path, error ? error->message : "graph errors");
      return 1;
    }
  tw_node *src = tw_graph_find_source (m->graph, "data");
  const tw_tinfo *xi = &src->out_info[0];
  int64_t shape[TW_MAX_DIMS] = { 1 };
  for (int d = 1; d < xi->ndim; d++)
    shape[d] = xi->dims[d];
  g_autoptr (tw_tensor) x = tw_tensor_new (TW_F32, xi->ndim, shape);
  tw_rng_fill_uniform (tw_tensor_f32 (x), tw_tensor_numel (x), 1, 1, 0, 1);

  g_autoptr (tw_params) params = tw_params_new ();
  g_autoptr (tw_eager) ex = tw_eager_new (m->graph, params, 0, &error);
  g_autoptr (tw_compiled) c = tw_compiled_new (m->graph, params, 0, &error);
  g_autofree double *t = g_new (double, runs);
  double med[2];
  for (int mode = 0; mode < 2; mode++)
    {
      for (int i = -100; i < runs; i++)
        {
          double t0 = now_ms ();
          gboolean ok = mode == 0 ? tw_eager_forward (ex, x, NULL, FALSE, 0, &error)
                                  : tw_compiled_run (c, TW_PROGRAM_INFER, x, NULL, 0, &error);
          if (!ok)
            {
              fprintf (stderr, "infer-latency: %s\n", error->message);
              return 1;
            }
          if (mode == 0)
            tw_eager_release (ex);
          if (i >= 0)
            t[i] = now_ms () - t0;
        }
      qsort (t, runs, sizeof (double), cmp);
      med[mode] = t[runs / 2];
    }
  printf ("{\"framework\": \"twb\", \"model\": \"%s\", \"threads\": %d, \"eager_ms\": %.5f, "
          "\"compiled_ms\": %.5f}\n", m->name ? m->name : path, threads, med[0], med[1]);
  return 0;
}
