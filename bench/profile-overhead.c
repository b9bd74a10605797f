/* profile-overhead.c — what the profiler's recorder costs a training step:
 * the trainer with no bus against the same trainer with the recorder
 * subscribed (keeping the trace in memory) and with a recorder streaming it
 * to a file (profiler/recorder.h: its writer thread converts and writes at
 * step ends), one model (the example MLP at batch 64 unless told
 * otherwise), eager and compiled.
 *
 *   build/bench/profile-overhead [MODEL.json] [--batch N] [--steps N] [--threads N]
 *
 * This shared machine's speed drifts by ±20 % over seconds, more than the
 * effect measured.  So the three configurations take turns step by step
 * (interleaved) on one trainer and their medians are compared.  The data
 * is one random batch fed again and again.  The in-memory recorder keeps
 * every recorded step; its trace is merged at the end (that time is
 * printed apart: it is paid once, after the run); the stream's file goes
 * to the temporary folder and is removed. */
#include "bench/bench-train.h"
#include "engine/data.h"
#include "engine/device.h"
#include "engine/rng.h"
#include "engine/train.h"
#include "profiler/recorder.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
main (int argc, char **argv)
{
  twb_bench_args args;
  g_autoptr (tw_model) m = twb_bench_load (argc, argv, "profile-overhead", 600, &args);
  g_autofree char *path = args.path;
  int64_t batch = args.batch, steps = args.steps;
  int threads = args.threads;
  g_autoptr (GError) error = NULL;
  printf ("%s, batch %" G_GINT64_FORMAT ", %d thread(s), %" G_GINT64_FORMAT
          " steps per configuration, no bus / recorder / streaming recorder interleaved step by "
          "step: median ms/step\n\n", path, batch, threads, steps);
  printf ("| mode | no bus ms | recorder ms | overhead | streaming ms | overhead | events/step | merge ms |\n"
          "|---|---|---|---|---|---|---|---|\n");
  g_autofree char *dir = g_dir_make_tmp ("twb-profile-overhead-XXXXXX", &error);
  if (dir == NULL)
    g_error ("%s", error->message);
  g_autofree char *file = g_build_filename (dir, "stream.json", NULL);
  for (int mode = 0; mode < 2; mode++)
    {
      g_autoptr (tw_trainer) tr = tw_trainer_new (m, &error);
      if (tr == NULL)
        g_error ("%s", error->message);
      tw_trainer_set_mode (tr, mode);
      tw_trainer_set_num_threads (tr, threads);
      /* One bus each: the trainer publishes on the one whose turn it is. */
      g_autoptr (tw_bus) bus = tw_bus_new ();
      g_autoptr (tw_bus) stream_bus = tw_bus_new ();
      g_autoptr (tw_recorder) rec = tw_recorder_new (0);
      g_autoptr (tw_recorder) stream = tw_recorder_new (0);
      if (!tw_recorder_stream_to (stream, file, &error))
        g_error ("%s", error->message);
      tw_recorder_start (rec, bus);
      tw_recorder_start (stream, stream_bus);
      tw_bus *buses[3] = { NULL, bus, stream_bus };
      g_autoptr (tw_tensor) x = NULL;
      g_autoptr (tw_tensor) y = NULL;
      twb_bench_make_batch (m, batch, &x, &y);
      GArray *t[3];
      for (int c = 0; c < 3; c++)
        t[c] = g_array_new (FALSE, FALSE, sizeof (double));
      for (int64_t i = 0; i < 3 * (steps + 8); i++)
        {
          int c = (int) (i % 3);
          tw_trainer_set_bus (tr, buses[c]);
          gint64 t0 = g_get_monotonic_time ();
          if (!tw_trainer_step (tr, x, y, NULL, &error))
            g_error ("%s", error->message);
          double ms = (g_get_monotonic_time () - t0) / 1000.0;
          if (i >= 3 * 8)   /* the first steps warm up (the compiled program is built) */
            g_array_append_val (t[c], ms);
        }
      tw_recorder_stop (rec);
      tw_recorder_stop (stream);
      double med[3];
      for (int c = 0; c < 3; c++)
        {
          g_array_sort (t[c], (GCompareFunc) twb_bench_cmp_double);
          med[c] = g_array_index (t[c], double, t[c]->len / 2);
          g_array_unref (t[c]);
        }
      guint64 events = tw_recorder_n_events (rec);
      gint64 t0 = g_get_monotonic_time ();
      g_autoptr (tw_trace) trace = tw_recorder_take_trace (rec);
      double merge_ms = (g_get_monotonic_time () - t0) / 1000.0;
      if (!tw_recorder_finish_stream (stream, &error))
        g_error ("%s", error->message);
      g_unlink (file);
      printf ("| %s | %.3f | %.3f | %+.1f%% | %.3f | %+.1f%% | %.0f | %.1f |\n",
              mode ? "compiled" : "eager", med[0], med[1], (med[1] / med[0] - 1) * 100, med[2],
              (med[2] / med[0] - 1) * 100, (double) events / (steps + 8), merge_ms);
    }
  g_rmdir (dir);
  return 0;
}
