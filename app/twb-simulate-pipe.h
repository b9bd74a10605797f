/* twb-simulate-pipe.h — `twb simulate --parallel pipeline|hybrid`: one
 * configuration's pipeline or hybrid step from engine/sim/pipe.h, printed
 * as text or JSON, with its bubble and memory per device. */
#pragma once

#include "app/twb-dist.h"
#include "engine/sim/pipe.h"

G_BEGIN_DECLS

typedef struct
{
  const char *model_path;
  const char *model_name;
  const char *topology;       /* as printed */
  const char *trace_out;      /* --trace, or NULL */
  gboolean json;
  tw_algo algo;
  double bucket_mb;
} twb_simulate_pipe_args;

/* The exit status: 0, 1 (the model does not cut or fit, naming the stage,
 * node or figures). */
int twb_simulate_pipe (const twb_simulate_pipe_args *a, const twb_dist_args *dist, int ranks,
                       const tw_graph *g, int64_t global_batch, const tw_device_profile *d,
                       tw_topo *t);

G_END_DECLS
