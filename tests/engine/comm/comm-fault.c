/* comm-fault.c — a rank that fails its collective, for test-timeout.sh:
 *
 *   mpiexec -np 3 comm-fault late [ALGO]   rank 1 sleeps 6 s before the third
 *                                          all-reduce, past the 2 s time-out
 *   mpiexec -np 3 comm-fault kill [ALGO]   rank 1 kills itself (SIGKILL) there
 *
 *   mpiexec -np 3 comm-fault silent        rank 0 waits for a message rank 1
 *                                          never sends
 *
 * ALGO: the all-reduce's (default ring). *
 * The others wait for that all-reduce; when it fails they print the error
 * ("rank 1 never arrived at collective #3 ...") and the flight recorder
 * to stderr and exit 1, without finalising MPI (the communicator is
 * broken), so mpirun ends the job. */
#include "engine/comm/comm.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

int
main (int argc, char **argv)
{
  const char *mode = argc > 1 ? argv[1] : "late";
  tw_comm_options opt;
  tw_comm_options_init (&opt);
  opt.timeout_s = 2;
  GError *error = NULL;
  if (!tw_algo_from_name (argc > 2 ? argv[2] : "ring", &opt.algo, &error))
    {
      fprintf (stderr, "%s\n", error->message);
      return 2;
    }
  tw_comm *c = tw_comm_new_mpi (&opt, &error);
  if (c == NULL)
    {
      fprintf (stderr, "%s\n", error->message);
      return 2;
    }
  int rank = tw_comm_rank (c);
  if (strcmp (mode, "silent") == 0)
    {
      /* Rank 0 waits for a message rank 1 never sends; the others stay
       * alive (their communication threads answer) until mpirun ends them. */
      if (rank == 0)
        {
          gint64 v = 0;
          tw_comm_req *r = tw_comm_recv (c, &v, 1, TW_I64, 1,
                                         &(tw_coll_tag) { .what = "activations" });
          if (!tw_comm_wait (c, r, &error))
            {
              fprintf (stderr, "rank 0: %s\n", error->message);
              fflush (stderr);
              tw_comm_req_free (r);
              tw_comm_free (c);
              return 1;
            }
        }
      else
        g_usleep (20 * G_USEC_PER_SEC);
      tw_comm_free (c);
      return 0;
    }
  for (int k = 0; k < 3; k++)
    {
      if (k == 2 && rank == 1)
        {
          if (strcmp (mode, "kill") == 0)
            raise (SIGKILL);
          g_usleep (6 * G_USEC_PER_SEC);
        }
      float x[4] = { rank, 1, 2, 3 };
      if (!tw_comm_allreduce_sync (c, x, 4, TW_F32, TW_REDUCE_SUM,
                                   &(tw_coll_tag) { .what = "bucket 0" }, &error))
        {
          g_autofree char *dump = tw_comm_flight_dump (c, 0);
          fprintf (stderr, "rank %d: %s\nrank %d: flight recorder:\n%s", rank, error->message,
                   rank, dump);
          fflush (stderr);
          tw_comm_free (c);
          return 1;
        }
    }
  tw_comm_free (c);
  return 0;
}
