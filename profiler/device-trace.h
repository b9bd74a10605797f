/* device-trace.h — a device profile from a real trace of the same model:
 * each node's forward and backward time per step, for the simulator's
 * compute model (tw_sim_dp_options.node_times, engine/sim/step.h), so
 * that one real GPU profile predicts a cluster of those GPUs.
 *
 *   tw_device_trace d;
 *   if (!tw_device_trace_load ("lenet5-h100.json.gz", graph, &d, &error)) ...;
 *   g_autoptr (GHashTable) times = tw_device_trace_times_at (&d, rank_batch);
 *   for (char **w = d.warnings; w && *w; w++) g_printerr ("twb: note: %s\n", *w);
 *   tw_device_trace_clear (&d);
 *
 * Two kinds of trace are read:
 *
 *   ours (twb profile --trace): each forward and backward span names its
 *   nodes (args "nodes"; a fused span's time is split evenly among them);
 *   the batch and the steps are in its metadata;
 *
 *   PyTorch's profiler (torch.profiler, exported with
 *   export_chrome_trace): its top-level aten ops (aten::linear,
 *   aten::conv2d, ...) are mapped to the graph's nodes by op and order
 *   (each node takes the next unclaimed op of its kind in the step, in the
 *   graph's order), the autograd functions (AddmmBackward0, ...) to their
 *   backward in reverse order; an op's time is that of the GPU kernels its
 *   launches started (the trace's flow events), or its own CPU time when
 *   the trace has no kernels; the steps are its ProfilerStep#N spans; the
 *   batch is the first dimension of the first op's "Input Dims" (record_shapes),
 *   else unknown.
 *
 * Ops of the trace that map to no node and nodes the trace has no time
 * for are listed, by name, in warnings (those nodes fall back to the
 * roofline); a trace with no time for any node is an error that says so.
 * GTK-free. */
#pragma once

#include "engine/graph.h"

G_BEGIN_DECLS

typedef struct
{
  GHashTable *node_times;     /* node id → double[2] {forward, backward} s per step */
  int64_t batch;              /* rows a step of the trace took; 0: unknown */
  int steps;
  const char *kind;           /* "twb" or "pytorch" */
  char **warnings;            /* NULL-terminated (may be empty) */
} tw_device_trace;

gboolean tw_device_trace_load (const char *path, const tw_graph *g, tw_device_trace *out,
                               GError **error);
void tw_device_trace_clear (tw_device_trace *t);
/* Whether path holds a Chrome trace (its first bytes say so), not a
 * calibration profile. */
gboolean tw_device_trace_sniff (const char *path);
/* The times at a rank's batch: scaled by rank_batch / batch (the work of
 * these ops grows with the rows), as they are when the batch is unknown
 * or the same.  A new table (id → double[2]); free it. */
GHashTable *tw_device_trace_times_at (const tw_device_trace *t, int64_t rank_batch);

G_END_DECLS
