/* bus-bench.c — what observing a run costs: the event bus with no client,
 * with a client that counts every event, and the NaN/Inf watch (the checks
 * a training session runs on every op's outputs), against the trainer with
 * no bus at all; one model (the example MLP at batch 64 unless told
 * otherwise), eager and compiled.
 *
 *   build/bench/bus-bench [MODEL.json] [--batch N] [--steps N] [--threads N]
 *
 * This shared machine's speed drifts by ±20 % over seconds, more than the
 * effects measured here.  So one trainer runs all the configurations in
 * turn, switching between consecutive steps (no bus / bus without client /
 * counting client / NaN watch / no bus ...), and each configuration's
 * median step time is compared with the no-bus median of the same run.
 * The data is one random batch fed again and again. */
#include "engine/cpu/scan.h"
#include "bench/bench-train.h"
#include "engine/data.h"
#include "engine/device.h"
#include "engine/rng.h"
#include "engine/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum
{
  CFG_PLAIN,
  CFG_BUS_EMPTY,
  CFG_BUS_COUNTING,
  CFG_NAN_WATCH,
  N_CFG
};

static const char *const cfg_names[N_CFG] = {
  "no bus",
  "bus, no client",
  "bus, counting client",
  "NaN/Inf watch",
};

static gboolean
count_event (const tw_event *ev, gpointer user)
{
  (*(guint64 *) user)++;
  return TRUE;
}

/* What tw_session's NaN watch does per op (engine/session.c, watch_nan):
 * every float output of every op scanned, except an eager node's backward
 * outputs when its kernels were scanned already, and eager kernels' outputs
 * shaped like a parameter (parameter gradients: the optimizer checks them in
 * its own pass; here, shaped like any parameter of the model). */
typedef struct
{
  int kernels;
  guint64 found;
  tw_params *params;
} watch;

static gboolean
param_shaped (const watch *w, const tw_tensor *t)
{
  for (int i = 0; i < tw_params_count (w->params); i++)
    if (tw_tensor_same_shape (tw_params_at (w->params, i)->value, t))
      return TRUE;
  return FALSE;
}

static gboolean
watch_event (const tw_event *ev, gpointer user)
{
  watch *w = user;
  if (ev->kind == TW_EV_BACKWARD && !ev->end)
    w->kernels = 0;
  if (!ev->end)
    return TRUE;
  if (ev->kind == TW_EV_KERNEL)
    w->kernels++;
  if (ev->kind == TW_EV_BACKWARD && !ev->compiled && w->kernels > 0)
    return TRUE;
  for (int k = 0; k < ev->n_outputs; k++)
    {
      tw_tensor *t = ev->outputs[k];
      if (t && ev->kind == TW_EV_KERNEL && param_shaped (w, t))
        continue;
      if (t && t->dtype == TW_F32 && tw_tensor_is_contiguous (t))
        w->found += tw_scan_nonfinite_f32 (tw_tensor_f32 (t), tw_tensor_numel (t)) != 0;
    }
  return TRUE;
}

int
main (int argc, char **argv)
{
  twb_bench_args args;
  g_autoptr (tw_model) m = twb_bench_load (argc, argv, "bus-bench", 800, &args);
  g_autofree char *path = args.path;
  int64_t batch = args.batch, steps = args.steps;
  int threads = args.threads;
  g_autoptr (GError) error = NULL;
  printf ("%s, batch %" G_GINT64_FORMAT ", %d thread(s), %" G_GINT64_FORMAT
          " steps per mode, configurations interleaved step by step: median ms/step\n\n",
          path, batch, threads, steps);
  printf ("| configuration | eager ms | vs no bus | compiled ms | vs no bus |\n|---|---|---|---|---|\n");
  double med[2][N_CFG];
  guint64 per_step[2] = { 0, 0 };
  for (int mode = 0; mode < 2; mode++)
    {
      g_autoptr (tw_trainer) tr = tw_trainer_new (m, &error);
      if (tr == NULL)
        g_error ("%s", error->message);
      tw_trainer_set_mode (tr, mode);
      tw_trainer_set_num_threads (tr, threads);
      g_autoptr (tw_bus) bus = tw_bus_new ();
      guint64 events = 0;
      watch w = { 0, 0, tw_trainer_params (tr) };
      guint counting = tw_bus_subscribe (bus, 0, count_event, &events, NULL);
      guint watching = tw_bus_subscribe (bus, 0, watch_event, &w, NULL);
      g_autoptr (tw_tensor) x = NULL;
      g_autoptr (tw_tensor) y = NULL;
      twb_bench_make_batch (m, batch, &x, &y);
      GArray *t[N_CFG];
      for (int c = 0; c < N_CFG; c++)
        t[c] = g_array_new (FALSE, FALSE, sizeof (double));
      for (int64_t i = 0; i < steps + 8; i++)
        {
          int c = (int) (i % N_CFG);
          tw_trainer_set_bus (tr, c == CFG_PLAIN ? NULL : bus);
          tw_bus_set_mask (bus, counting, c == CFG_BUS_COUNTING ? TW_EV_MASK_ALL : 0);
          tw_bus_set_mask (bus, watching,
                           c == CFG_NAN_WATCH ? TW_EV_MASK_OPS | TW_EV_BIT (TW_EV_KERNEL) : 0);
          guint64 before = events;
          gint64 t0 = g_get_monotonic_time ();
          if (!tw_trainer_step (tr, x, y, NULL, &error))
            g_error ("%s", error->message);
          double ms = (g_get_monotonic_time () - t0) / 1000.0;
          if (c == CFG_BUS_COUNTING)
            per_step[mode] = events - before;
          if (i >= 8)   /* the first steps warm up (the compiled program is built) */
            g_array_append_val (t[c], ms);
        }
      for (int c = 0; c < N_CFG; c++)
        {
          g_array_sort (t[c], (GCompareFunc) twb_bench_cmp_double);
          med[mode][c] = g_array_index (t[c], double, t[c]->len / 2);
          g_array_unref (t[c]);
        }
      if (w.found)
        g_error ("the watch found non-finite values in a finite run");
    }
  for (int c = 0; c < N_CFG; c++)
    printf ("| %s | %.3f | %+.1f%% | %.3f | %+.1f%% |\n", cfg_names[c], med[0][c],
            (med[0][c] / med[0][CFG_PLAIN] - 1) * 100, med[1][c],
            (med[1][c] / med[1][CFG_PLAIN] - 1) * 100);
  printf ("\nevents per step seen by the counting client: eager %" G_GUINT64_FORMAT
          ", compiled %" G_GUINT64_FORMAT "\n",
          per_step[0], per_step[1]);
  return 0;
}
