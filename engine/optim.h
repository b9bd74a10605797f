/* optim.h — optimizers and learning-rate schedules.
 *
 * Semantics follow PyTorch's torch.optim exactly (SGD with momentum/dampening 0,
 * Nesterov, L2 weight decay added to the gradient; Adam with bias correction and
 * L2 weight decay; AdamW with decoupled weight decay), so losses can be
 * compared with PyTorch step by step.
 *
 *   tw_optimizer *opt = tw_optimizer_new (&recipe.optimizer);
 *   double lr = tw_schedule_lr (&recipe.schedule, recipe.optimizer.lr, step, total_steps);
 *   tw_optimizer_step (opt, params, lr);     // uses each trainable param's grad
 */
#pragma once

#include "engine/model.h"
#include "engine/params.h"

G_BEGIN_DECLS

typedef struct tw_optimizer tw_optimizer;

/* cfg is copied.  Free with tw_optimizer_free (NULL is accepted). */
tw_optimizer *tw_optimizer_new (const tw_optimizer_config *cfg);
void tw_optimizer_free (tw_optimizer *opt);
/* Change hyper-parameters (lr is the base rate; state and step count are
 * kept).  From the next update on. */
void tw_optimizer_set_config (tw_optimizer *opt, const tw_optimizer_config *cfg);
const tw_optimizer_config *tw_optimizer_get_config (const tw_optimizer *opt);
/* One update of every trainable parameter that has a gradient.  State lives in
 * tw_param.state[] so that it is saved with checkpoints: SGD with momentum uses
 * state[0] (momentum buffer), Adam/AdamW state[0] (m) and state[1] (v), f32 of
 * the param's shape, created as zeros on first use.  Gradients are only read.
 * The step count is one per optimizer, not per parameter as in PyTorch: a
 * parameter added mid-run starts its Adam moments from zero with the run's
 * (larger) bias correction. */
void tw_optimizer_step (tw_optimizer *opt, tw_params *params, double lr);
/* The same update in pieces, for executors that update each parameter as soon
 * as its gradient is ready: begin_step once per step (advances the step
 * count, fixes lr and Adam's bias corrections), then update any range
 * [offset, offset + n) of a parameter's elements from grad (n floats).
 * A frozen parameter (tw_param.frozen) is left as it is, state included. */
void tw_optimizer_begin_step (tw_optimizer *opt, double lr);
void tw_optimizer_update (tw_optimizer *opt, tw_param *param, const float *grad, int64_t offset,
                          int64_t n);
/* How many state tensors an update keeps per parameter: 0 (SGD), 1 (SGD
 * with momentum: the buffer), 2 (Adam, AdamW: m and v). */
int tw_optimizer_state_count (const tw_optimizer *opt);
/* tw_optimizer_update with the state of those n elements held by the
 * caller instead of in param->state (ZeRO-1 keeps only its shard's):
 * state[k] points at n floats for each of tw_optimizer_state_count, zeros
 * before the first update, as param->state's would be. */
void tw_optimizer_update_with_state (tw_optimizer *opt, tw_param *param, const float *grad,
                                     int64_t offset, int64_t n, float *const *state);
/* Whether the last tw_optimizer_update read a NaN or Inf in its gradient
 * (found in the same pass as the update: the NaN watch needs no pass of its
 * own over parameter gradients). */
gboolean tw_optimizer_last_grad_nonfinite (const tw_optimizer *opt);
/* Number of steps taken (Adam's bias correction); settable for resume. */
int64_t tw_optimizer_get_step (const tw_optimizer *opt);
void tw_optimizer_set_step (tw_optimizer *opt, int64_t step);

/* Learning rate at step (0-based) of a run of total_steps.  Warm-up (when
 * warmup_steps > 0): base_lr·(step + 1)/warmup_steps for the first warmup_steps
 * steps; then the schedule runs on t = step − warmup_steps: constant; step:
 * base_lr·gamma^floor(t/step_size) (step_size ≤ 0: constant); cosine: min_lr +
 * (base_lr − min_lr)(1 + cos(π·min(t, T)/T))/2 with T = t_max, or when t_max is 0
 * T = total_steps − warmup_steps (T ≤ 0: base_lr). */
double tw_schedule_lr (const tw_schedule_config *s, double base_lr, int64_t step,
                       int64_t total_steps);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_optimizer, tw_optimizer_free)

G_END_DECLS
