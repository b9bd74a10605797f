/* train-private.h — the trainer's state, shared by train.c and the data
 * parallel step (train-dist.c).  Not installed. */
#pragma once

#include "engine/train.h"

G_BEGIN_DECLS

struct tw_trainer
{
  tw_model *model;
  tw_params *params;
  tw_eager *ex;
  tw_optimizer *opt;
  int64_t step;
  int64_t total_steps;
  gboolean allow_nan;
  double lr;
  int num_threads;
  tw_exec_mode mode;
  tw_compiled *compiled;
  tw_bus *bus;
  gboolean grad_norms;
  gboolean stop_pending;     /* a client asked to stop during the updates */
  GArray *upd_ident;         /* tw_op_ident per params index (eager updates) */
  GPtrArray *upd_strings;    /* what upd_ident points at */
  struct tw_dist *dist;      /* data parallel over a communicator (train-dist.c), or NULL */
  struct tw_pipe *pipe;      /* pipeline / hybrid parallel (train-pipe.c), or NULL */
  double *rank_ms;           /* every rank's compute time of the last step (tw_trainer_rank_step_ms) */
  int n_rank_ms;
};

/* train.c */
gboolean tw_trainer_publish_iteration (tw_trainer *tr, gboolean end, gint64 t0, double loss,
                                       GError **error);
/* The optimizer update of parameter i from grad (its numel floats), between
 * an UPDATE begin and end event when listen (a client wants them); a
 * client asking to stop there sets stop_pending (the step is finished). */
void tw_trainer_update_param (tw_trainer *tr, int i, const float *grad, gboolean listen);
/* The same for elements [offset, offset + n) of parameter i, grad being n
 * floats, with the optimizer state of those elements at state[k] (ZeRO-1's
 * shard) or, when state is NULL, in the parameter's own. */
void tw_trainer_update_range (tw_trainer *tr, int i, const float *grad, int64_t offset, int64_t n,
                              float *const *state, gboolean listen);
/* Keep every rank's compute time of the step just done (n values, ms). */
void tw_trainer_set_rank_ms (tw_trainer *tr, const double *ms, int n);

/* train-dist.c */
/* A sha256 (hex) of what every rank must share: the model (graph and
 * recipe) and every parameter's name and shape.  Caller frees. */
char *tw_trainer_model_hash (tw_trainer *tr);
typedef struct tw_dist tw_dist;
void tw_dist_free (tw_dist *d);
/* One data-parallel step on this rank's shard of the global batch x, y. */
gboolean tw_dist_step (tw_trainer *tr, tw_tensor *x, tw_tensor *y, double lr, double *loss,
                       GError **error);
int tw_dist_rank (tw_trainer *tr);
int tw_dist_size (tw_trainer *tr);
/* Asynchronous: every rank takes the server's weights (collective). */
gboolean tw_dist_sync_weights (tw_trainer *tr, GError **error);
/* ZeRO-1: every rank's optimizer shards into each parameter's whole
 * state[] (collective; before a checkpoint), and back to the shards
 * (the whole state dropped).  Without a sharded optimizer they do nothing. */
gboolean tw_dist_state_gather (tw_trainer *tr, GError **error);
void tw_dist_state_release (tw_trainer *tr);
/* Sum over the ranks of n doubles (evaluation's totals). */
gboolean tw_dist_sum (tw_trainer *tr, double *v, int n, GError **error);

/* train-pipe.c */
typedef struct tw_pipe tw_pipe;
void tw_pipe_free (tw_pipe *p);
gboolean tw_pipe_step (tw_trainer *tr, tw_tensor *x, tw_tensor *y, double lr, double *loss,
                       GError **error);
/* Every stage's parameters (and optimizer state) on every rank; collective. */
gboolean tw_pipe_gather (tw_trainer *tr, gboolean with_state, GError **error);
int tw_pipe_rank (tw_trainer *tr);     /* in the world */
int tw_pipe_size (tw_trainer *tr);
gboolean tw_pipe_sum (tw_trainer *tr, double *v, int n, GError **error);

G_END_DECLS
