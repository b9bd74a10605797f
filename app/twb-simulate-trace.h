/* twb-simulate-trace.h — `twb simulate --trace OUT.json`: the simulated
 * step as a Chrome trace of the kind a real multi-rank run writes (the
 * merged trace of profiler/ranks.c), which the profiler opens: one process
 * per rank ("rank N"), its nodes' forward and backward and the updates on
 * its "main" thread, its collectives on its "communication" lane with a
 * real collective's arguments (kind, seq, bytes, algo, what, rank). */
#pragma once

#include "engine/sim/step.h"

G_BEGIN_DECLS

/* spans: tw_sim_span, from tw_sim_dp_step with o->spans set.  exact: they
 * hold every rank's; otherwise rank 0's, written for the first few of
 * ranks (identical) with a metadata note ("sim.note") saying so.  meta:
 * NULL-terminated key, value pairs added to the metadata.  Saved
 * atomically; FALSE with an error naming the file. */
gboolean twb_simulate_trace_save (const char *path, const GArray *spans, int ranks,
                                  gboolean exact, const char *const *meta, GError **error);

/* How many ranks the fast mode writes. */
#define TWB_SIMULATE_TRACE_RANKS 4

G_END_DECLS
