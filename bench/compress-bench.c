/* compress-bench.c — gradient compression (engine/comm/compress.h) on a
 * 25 MiB bucket against the dense all-reduce: payload bytes and time per
 * step (start: compression and posting; finish: the wait and the
 * decompression), the slowest rank's, median of the steps.
 *
 *   mpirun -np 4 --bind-to none build/bench/compress-bench [steps]
 *
 * The bucket is one [2560, 2560] matrix (6,553,600 floats: 25 MiB), so
 * that PowerSGD compresses all of it. */
#include "engine/comm/compress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { M = 2560, C = 2560, N = M * C };

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

static double
median (double *v, int n)
{
  qsort (v, n, sizeof *v, cmp_double);
  return v[n / 2];
}

int
main (int argc, char **argv)
{
  int steps = argc > 1 ? atoi (argv[1]) : 5;
  tw_comm_options opt;
  tw_comm_options_init (&opt);
  opt.algo = TW_ALGO_RING;
  GError *error = NULL;
  g_autoptr (tw_comm) comm = tw_comm_new_mpi (&opt, &error);
  if (comm == NULL)
    {
      fprintf (stderr, "%s\n", error->message);
      return 1;
    }
  int rank = tw_comm_rank (comm), p = tw_comm_size (comm);
  g_autofree float *grad = g_new (float, N), *buf = g_new (float, N);
  for (int64_t i = 0; i < N; i++)
    grad[i] = (float) (((i * 2654435761u + rank * 40503u) % 20001) / 10000.0 - 1.0);
  tw_compress_member mb = { .offset = 0, .numel = N, .ndim = 2, .shape = { M, C } };
  static const char *specs[] = { "dense", "topk:0.01", "int8", "sign", "powersgd:4" };
  if (rank == 0)
    printf ("%d ranks, bucket of %d floats (%.1f MiB), %d steps, dense all-reduce: ring\n"
            "%-11s %12s %8s %10s %10s %10s\n", p, N, N * 4.0 / (1 << 20), steps, "method",
            "payload B", "ratio", "start ms", "finish ms", "step ms");
  for (guint s = 0; s < G_N_ELEMENTS (specs); s++)
    {
      gboolean dense = strcmp (specs[s], "dense") == 0;
      g_autoptr (tw_compressor) z = dense ? NULL : tw_compressor_new (specs[s], &error);
      g_autofree double *t_start = g_new (double, steps), *t_finish = g_new (double, steps);
      for (int k = 0; k < steps; k++)
        {
          memcpy (buf, grad, N * sizeof *buf);
          tw_comm_barrier_sync (comm, NULL);
          gint64 t0 = g_get_monotonic_time ();
          tw_compress_op *op = NULL;
          tw_comm_req *r = NULL;
          if (dense)
            r = tw_comm_allreduce (comm, buf, N, TW_F32, TW_REDUCE_SUM, NULL);
          else
            op = tw_compressor_start (z, comm, 0, buf, N, &mb, 1, NULL);
          gint64 t1 = g_get_monotonic_time ();
          gboolean ok = dense ? tw_comm_wait (comm, r, &error) : tw_compressor_finish (z, op, &error);
          gint64 t2 = g_get_monotonic_time ();
          tw_comm_req_free (r);
          if (!ok)
            {
              fprintf (stderr, "rank %d: %s\n", rank, error->message);
              return 1;
            }
          double t[2] = { (t1 - t0) / 1e3, (t2 - t1) / 1e3 };
          tw_comm_allreduce_sync (comm, t, 2, TW_F64, TW_REDUCE_MAX, NULL, NULL);
          t_start[k] = t[0];
          t_finish[k] = t[1];
        }
      gint64 sent = 4 * (gint64) N * steps, all = sent;
      if (!dense)
        tw_compressor_take_bytes (z, &sent, &all);
      double a = median (t_start, steps), b = median (t_finish, steps);
      if (rank == 0)
        printf ("%-11s %12" G_GINT64_FORMAT " %7.2f%% %10.2f %10.2f %10.2f\n", specs[s],
                sent / steps, 100.0 * sent / all, a, b, a + b);
    }
  return 0;
}
