/* twb-simulate-train.h — `twb simulate --mode train` (twb-simulate-train.c). */
#pragma once

#include "app/twb-cli.h"
#include "engine/comm/comm.h"

G_BEGIN_DECLS

typedef struct
{
  int ranks;
  tw_algo algo;
  double bucket_mb;
  double virtual_step_s;       /* the time mode's step for this cluster */
  double virtual_compute_s;    /* its compute part */
  int64_t epochs, batch, max_steps;   /* 0: the recipe's (batch: the global batch) */
  int async_staleness;         /* -1: synchronous */
  int local_sgd;
  const char *compress;
  gboolean shard_optimizer;
  const char *data;            /* a dataset spec, or NULL: the recipe's */
  const char *save_weights;    /* rank 0's weights at the end, or NULL */
  gboolean json;
  gboolean progress_json;       /* twb train --progress-json's lines (the window reads them) */
} twb_sim_train_args;

int twb_simulate_train (const char *model_path, tw_model *m, const twb_sim_train_args *a);

G_END_DECLS
