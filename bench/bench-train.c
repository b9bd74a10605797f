/* bench-train.c — shared setup of the training-step benchmarks. */
#include "bench/bench-train.h"
#include "engine/device.h"
#include "engine/rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
twb_bench_cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

void
twb_bench_make_batch (const tw_model *m, int64_t batch, tw_tensor **x, tw_tensor **y)
{
  tw_node *src = tw_graph_find_source (m->graph, "data");
  const tw_attr_value *sh = tw_attrs_lookup (src->attrs, "shape");
  int64_t shape[TW_MAX_DIMS] = { batch };
  int nd = sh ? sh->n + 1 : 1;
  for (int d = 1; d < nd; d++)
    shape[d] = sh->ints[d - 1];
  *x = tw_tensor_new (TW_F32, nd, shape);
  tw_rng_fill_uniform (tw_tensor_f32 (*x), tw_tensor_numel (*x), 1, 1, 0.0f, 1.0f);
  *y = tw_tensor_new (TW_I64, 1, (int64_t[]) { batch });
  for (int64_t i = 0; i < batch; i++)
    tw_tensor_i64 (*y)[i] = i % 10;
}

tw_model *
twb_bench_load (int argc, char **argv, const char *prog, int64_t default_steps,
                twb_bench_args *out)
{
  const char *path = NULL;
  out->batch = 64;
  out->steps = default_steps;
  out->threads = 1;
  for (int i = 1; i < argc; i++)
    {
      if (strcmp (argv[i], "--batch") == 0 && i + 1 < argc)
        out->batch = atoll (argv[++i]);
      else if (strcmp (argv[i], "--steps") == 0 && i + 1 < argc)
        out->steps = atoll (argv[++i]);
      else if (strcmp (argv[i], "--threads") == 0 && i + 1 < argc)
        out->threads = atoi (argv[++i]);
      else if (argv[i][0] != '-')
        path = argv[i];
      else
        {
          fprintf (stderr, "usage: %s [MODEL.json] [--batch N] [--steps N] [--threads N]\n", prog);
          exit (2);
        }
    }
  out->path = path ? g_strdup (path) : g_build_filename (TWB_ASSETS_DIR, "models", "mlp.json", NULL);
  tw_ops_init ();
  tw_set_num_threads (out->threads);
  g_autoptr (GError) error = NULL;
  tw_model *m = tw_model_load (out->path, &error);
  if (m == NULL)
    {
      fprintf (stderr, "%s: %s\n", prog, error->message);
      exit (1);
    }
  return m;
}
