/* twb-simulate-trace.c — the simulated step as a Chrome trace
 * (twb-simulate-trace.h). */
#define G_LOG_DOMAIN "twb"

#include "app/twb-simulate-trace.h"
#include "profiler/chrome.h"
#include "profiler/recorder.h"

#include <math.h>
#include <string.h>

/* The main thread's tid in each rank's process: any number other than the
 * communication lane's does. */
#define MAIN_TID 1

static gint64
to_ns (double s)
{
  return (gint64) llround (s * 1e9);
}

static void
add_span (tw_trace *t, int pid, const tw_sim_span *sp)
{
  char seq[16], bytes[32], rank[16];
  g_snprintf (rank, sizeof rank, "%d", pid);
  g_ascii_formatd (bytes, sizeof bytes, "%.17g", sp->bytes);
  /* Start and end rounded to the nanosecond, so that the durations of
   * back-to-back spans add up to the end of the last. */
  gint64 t0 = to_ns (sp->start_s), dur = to_ns (sp->start_s + sp->dur_s) - t0;
  if (sp->kind == TW_EV_COLLECTIVE)
    {
      guint lane = tw_trace_add_lane (t, pid, TW_RECORDER_COMM_TID, "communication",
                                      TW_LANE_STREAM);
      g_snprintf (seq, sizeof seq, "%d", sp->seq);
      tw_trace_arg args[] = {
        { "kind", tw_coll_kind_name (sp->coll) },
        { "seq", seq },
        { "bytes", bytes },
        { "algo", tw_algo_name (sp->algo) },
        { "what", sp->what },
        { "rank", rank },
        { "simulated", "true" },
      };
      tw_trace_add_slice (t, lane, t0, dur, sp->name, "collective", args, G_N_ELEMENTS (args));
      return;
    }
  guint lane = tw_trace_add_lane (t, pid, MAIN_TID, "main", TW_LANE_THREAD);
  const char *cat = tw_event_kind_name (sp->kind);
  if (sp->kind == TW_EV_UPDATE)
    {
      tw_trace_arg args[] = { { "what", sp->what }, { "bytes", bytes } };
      tw_trace_add_slice (t, lane, t0, dur, sp->name, cat, args, G_N_ELEMENTS (args));
    }
  else if (sp->kind == TW_EV_FORWARD || sp->kind == TW_EV_BACKWARD)
    {
      /* The node's id: what sits between the parentheses of its name. */
      const char *open = strrchr (sp->name, '(');
      g_autofree char *node = open ? g_strndup (open + 1, strlen (open + 1) - 1) : g_strdup ("");
      tw_trace_arg args[] = { { "phase", cat }, { "nodes", node } };
      tw_trace_add_slice (t, lane, t0, dur, sp->name, cat, args, G_N_ELEMENTS (args));
    }
  else
    tw_trace_add_slice (t, lane, t0, dur, sp->name, cat, NULL, 0);
}

gboolean
twb_simulate_trace_save (const char *path, const GArray *spans, int ranks, gboolean exact,
                         const char *const *meta, GError **error)
{
  g_autoptr (tw_trace) t = tw_trace_new ();
  int written = exact ? ranks : MIN (ranks, TWB_SIMULATE_TRACE_RANKS);
  for (int r = 0; r < written; r++)
    {
      g_autofree char *name = g_strdup_printf ("rank %d", r);
      tw_trace_add_process (t, r, name);
      tw_trace_add_lane (t, r, MAIN_TID, "main", TW_LANE_THREAD);
    }
  for (guint i = 0; i < spans->len; i++)
    {
      const tw_sim_span *sp = &g_array_index (spans, tw_sim_span, i);
      if (exact)
        add_span (t, sp->rank, sp);
      else
        for (int r = 0; r < written; r++)
          add_span (t, r, sp);
    }
  /* "ranks" is the processes in the file, as in a merged trace (ranks.c
   * reads it so); "sim.ranks" the ranks simulated. */
  char n[16], w[16];
  g_snprintf (n, sizeof n, "%d", ranks);
  g_snprintf (w, sizeof w, "%d", written);
  tw_trace_set_meta (t, "simulated", "twb simulate");
  tw_trace_set_meta (t, "ranks", w);
  tw_trace_set_meta (t, "sim.ranks", n);
  if (written < ranks)
    {
      g_autofree char *note = g_strdup_printf (
        "ranks summarised: %d of %d ranks written; the ranks are identical (twb simulate "
        "--exact --trace writes every rank)", written, ranks);
      tw_trace_set_meta (t, "sim.note", note);
    }
  for (int k = 0; meta && meta[k] && meta[k + 1]; k += 2)
    tw_trace_set_meta (t, meta[k], meta[k + 1]);
  tw_trace_sort (t);
  return tw_chrome_trace_save (t, path, error);
}
