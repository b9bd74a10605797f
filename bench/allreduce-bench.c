/* allreduce-bench.c — all-reduce time and bus bandwidth against message
 * size for each algorithm of the communicator (engine/comm/comm.h):
 *
 *   mpirun -np 4 build/bench/allreduce-bench [--algos=mpi,ring,tree,ps,hier]
 *          [--max-bytes=67108864] [--reps=N] [--ranks-per-node=K] [--csv]
 *
 * Sizes 4 B to 64 MB in powers of 4, float32 sums.  Each (algorithm, size)
 * runs a few warm-up all-reduces, then N timed ones, each between two
 * barriers; a run's time is the slowest rank's (the collective is done
 * when the last rank has its result), and the table shows the median over
 * the N runs.
 *
 * Bandwidths as nccl-tests define them (PERFORMANCE.md there):
 *   algbw = bytes / time
 *   busbw = algbw · 2(p−1)/p
 * busbw is what each rank's link carried for a bandwidth-optimal (ring)
 * all-reduce, which moves 2(p−1)/p of the buffer in and out of every rank:
 * it is comparable across p and against the links' peak.  For tree and ps,
 * which move more, it is the ring-equivalent figure, not their own traffic.
 *
 * Prints figures; not a test. */
#include "engine/comm/comm.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int
cmp_i64 (const void *a, const void *b)
{
  gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;
  return x < y ? -1 : x > y;
}

/* Repetitions: enough for a stable median where a run is short, few
 * where one 64 MB all-reduce takes most of a second on a loaded machine. */
static int
reps_for (gint64 bytes)
{
  return bytes <= (64 << 10) ? 51 : bytes <= (4 << 20) ? 15 : 5;
}

int
main (int argc, char **argv)
{
  const char *algos = "mpi,ring,tree,ps,hier";
  gint64 max_bytes = 64 << 20;
  int reps = 0;
  gboolean csv = FALSE;
  tw_comm_options opt;
  tw_comm_options_init (&opt);
  opt.timeout_s = 300;
  for (int i = 1; i < argc; i++)
    {
      const char *a = argv[i];
      if (g_str_has_prefix (a, "--algos="))
        algos = a + 8;
      else if (g_str_has_prefix (a, "--max-bytes="))
        max_bytes = g_ascii_strtoll (a + 12, NULL, 10);
      else if (g_str_has_prefix (a, "--reps="))
        reps = atoi (a + 7);
      else if (g_str_has_prefix (a, "--ranks-per-node="))
        opt.ranks_per_node = atoi (a + 17);
      else if (strcmp (a, "--csv") == 0)
        csv = TRUE;
      else
        {
          fprintf (stderr, "usage: mpirun -np P %s [--algos=mpi,ring,tree,ps,hier] "
                   "[--max-bytes=N] [--reps=N] [--ranks-per-node=K] [--csv]\n", argv[0]);
          return 2;
        }
    }
  g_auto (GStrv) names = g_strsplit (algos, ",", -1);
  int n_algos = g_strv_length (names);
  g_autofree tw_algo *algo = g_new (tw_algo, MAX (n_algos, 1));
  for (int a = 0; a < n_algos; a++)
    {
      GError *error = NULL;
      if (!tw_algo_from_name (names[a], &algo[a], &error))
        {
          fprintf (stderr, "%s\n", error->message);
          return 2;
        }
    }

  GError *error = NULL;
  tw_comm *c = tw_comm_new_mpi (&opt, &error);
  if (c == NULL)
    {
      fprintf (stderr, "%s\n", error->message);
      return 1;
    }
  int rank = tw_comm_rank (c), p = tw_comm_size (c);
  if (rank != 0)
    {
      int null = open ("/dev/null", O_WRONLY);
      dup2 (null, STDOUT_FILENO);
      close (null);
    }

  int n_sizes = 0;
  gint64 sizes[32];
  for (gint64 b = 4; b <= max_bytes && n_sizes < 32; b *= 4)
    sizes[n_sizes++] = b;
  /* median time (ns) per size and algorithm */
  g_autofree gint64 *med = g_new0 (gint64, n_sizes * MAX (n_algos, 1));
  float *buf = g_malloc0 (MAX (max_bytes, 4));
  gint64 *times = g_new (gint64, 64 + MAX (reps, 0));
  for (int a = 0; a < n_algos; a++)
    {
      tw_comm_set_algo (c, algo[a]);
      for (int s = 0; s < n_sizes; s++)
        {
          gint64 n = sizes[s] / 4;
          int r = reps > 0 ? reps : reps_for (sizes[s]);
          int warm = sizes[s] <= (1 << 20) ? 5 : 1;
          for (int k = -warm; k < r; k++)
            {
              /* Zeros: sums that neither overflow nor turn denormal. */
              if (!tw_comm_barrier_sync (c, &error))
                goto failed;
              gint64 t0 = tw_now_ns ();
              if (!tw_comm_allreduce_sync (c, buf, n, TW_F32, TW_REDUCE_SUM, NULL, &error))
                goto failed;
              gint64 dt = tw_now_ns () - t0;
              if (!tw_comm_allreduce_sync (c, &dt, 1, TW_I64, TW_REDUCE_MAX, NULL, &error))
                goto failed;
              if (k >= 0)
                times[k] = dt;
            }
          qsort (times, r, sizeof *times, cmp_i64);
          med[s * n_algos + a] = times[r / 2];
        }
    }

  if (csv)
    {
      printf ("bytes,algo,ranks,time_us,algbw_gbs,busbw_gbs\n");
      for (int s = 0; s < n_sizes; s++)
        for (int a = 0; a < n_algos; a++)
          {
            double t = med[s * n_algos + a] * 1e-9, alg = sizes[s] / t / 1e9;
            printf ("%" G_GINT64_FORMAT ",%s,%d,%.1f,%.4f,%.4f\n", sizes[s],
                    tw_algo_name (algo[a]), p, t * 1e6, alg, alg * 2 * (p - 1) / p);
          }
    }
  else
    {
      printf ("all-reduce, float32 sum, %d ranks on %s%s; median of N (5-51) runs, each "
              "the slowest rank's time\nbusbw = bytes/time · 2(p−1)/p (nccl-tests); "
              "cells: time µs  busbw GB/s\n\n%10s", p, tw_comm_host (c),
              opt.ranks_per_node > 0 ? " (pretend nodes)" : "", "bytes");
      for (int a = 0; a < n_algos; a++)
        printf (" | %-19s", tw_algo_name (algo[a]));
      printf ("\n");
      for (int s = 0; s < n_sizes; s++)
        {
          g_autofree char *sz = g_format_size_full (sizes[s], G_FORMAT_SIZE_IEC_UNITS);
          printf ("%10s", sz);
          for (int a = 0; a < n_algos; a++)
            {
              double t = med[s * n_algos + a] * 1e-9;
              printf (" | %9.1f %9.3f", t * 1e6, sizes[s] / t / 1e9 * 2 * (p - 1) / p);
            }
          printf ("\n");
        }
    }
  fflush (stdout);
  g_free (buf);
  g_free (times);
  tw_comm_free (c);
  return 0;

failed:
  fprintf (stderr, "rank %d: %s\n", rank, error->message);
  g_free (buf);
  g_free (times);
  tw_comm_free (c);
  return 1;
}
