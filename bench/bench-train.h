/* bench-train.h — what the training-step benchmarks (bus-bench,
 * profile-overhead) share: their command line, the model, one random batch
 * of its input shape, and a comparator for medians.
 *
 *   twb_bench_args a;
 *   g_autoptr (tw_model) m = twb_bench_load (argc, argv, "bus-bench", 800, &a);
 *   twb_bench_make_batch (m, a.batch, &x, &y);
 */
#pragma once

#include "engine/model.h"

G_BEGIN_DECLS

typedef struct
{
  char *path;          /* the model file (mlp.json unless given); owned */
  int64_t batch, steps;
  int threads;
} twb_bench_args;

/* Parses [MODEL.json] [--batch N] [--steps N] [--threads N], sets the
 * engine's threads and loads the model; on a usage error exits 2, on a
 * model that does not load prints why (as prog) and exits 1. */
tw_model *twb_bench_load (int argc, char **argv, const char *prog, int64_t default_steps,
                          twb_bench_args *out);
/* x: uniform [0, 1) of the data input's shape with batch rows, y: i % 10. */
void twb_bench_make_batch (const tw_model *m, int64_t batch, tw_tensor **x, tw_tensor **y);
/* For qsort / g_array_sort of doubles. */
int twb_bench_cmp_double (const void *a, const void *b);

G_END_DECLS
