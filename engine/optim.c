/* optim.c — SGD, Adam and AdamW with torch.optim's update rules, and the
 * learning-rate schedules.
 *
 * The kernels mirror torch.optim's single-tensor code paths (PyTorch 1.13–2.x,
 * foreach=False) operation by operation in float32, so that our parameters
 * follow PyTorch's to within a few float32 roundings per step.  Scalars are
 * computed in double, as Python does, and rounded to float once, as ATen does
 * when a Python scalar meets a float32 tensor. */
#define G_LOG_DOMAIN "twb-optim"

#include "engine/optim.h"

#include <math.h>
#include <string.h>

typedef struct
{
  float decay, l2, beta1, one_minus_beta1, beta2, one_minus_beta2;
  float bc2_sqrt, eps, step_size;
} adam_scalars;

struct tw_optimizer
{
  tw_optimizer_config cfg;
  int64_t step;          /* steps taken; Adam's bias correction uses it */
  double lr;             /* of the step begun last */
  adam_scalars adam;     /* per-step Adam constants */
  gboolean last_nonfinite;  /* the last tw_optimizer_update read a NaN or Inf gradient */
};


tw_optimizer *
tw_optimizer_new (const tw_optimizer_config *cfg)
{
  g_return_val_if_fail (cfg != NULL, NULL);
  tw_optimizer *opt = g_new0 (tw_optimizer, 1);
  opt->cfg = *cfg;
  return opt;
}

void
tw_optimizer_set_config (tw_optimizer *opt, const tw_optimizer_config *cfg)
{
  opt->cfg = *cfg;
}

const tw_optimizer_config *
tw_optimizer_get_config (const tw_optimizer *opt)
{
  return &opt->cfg;
}

void
tw_optimizer_free (tw_optimizer *opt)
{
  g_free (opt);
}

int64_t
tw_optimizer_get_step (const tw_optimizer *opt)
{
  return opt->step;
}

void
tw_optimizer_set_step (tw_optimizer *opt, int64_t step)
{
  g_return_if_fail (step >= 0);
  opt->step = step;
}

/* Optimizer state k of e as an f32 contiguous tensor of the value's shape;
 * created as zeros on first use, and recreated as zeros if what is there does
 * not fit (a checkpoint from another graph). */
static float *
param_state (tw_param *e, int k)
{
  tw_tensor *s = e->state[k];
  if (s == NULL || s->dtype != TW_F32 || !tw_tensor_is_contiguous (s)
      || !tw_tensor_same_shape (s, e->value))
    {
      if (s != NULL)
        g_debug ("%s: optimizer state %d has the wrong shape; restarting it from zeros",
                 e->name, k);
      g_clear_pointer (&e->state[k], tw_tensor_unref);
      e->state[k] = tw_tensor_zeros (TW_F32, e->value->ndim, e->value->shape);
    }
  return tw_tensor_f32 (e->state[k]);
}

/* ---- kernels: p, g, b, m, v are (n) f32 ---------------------------------- *
 *
 * Element-wise loops over restrict pointers.  "omp simd" asks for
 * vectorisation at -O2, where GCC's default cost model would refuse loops that
 * need a remainder epilogue; it changes no rounding (nothing is reduced). */

/* torch.optim.SGD without momentum: d = g + wd·p;  p ← p − lr·d. */
static float
sgd_plain (float *restrict p, const float *restrict g, int64_t n, float lr, float wd)
{
  float probe = 0;
#pragma omp simd reduction (+ : probe)
  for (int64_t i = 0; i < n; i++)
    {
      float d = g[i] + wd * p[i];
      p[i] = p[i] - lr * d;
      probe += g[i] * 0.0f;
    }
  return probe;
}

/* torch.optim.SGD with momentum μ, dampening 0:
 *   d = g + wd·p;  b ← μ·b + d  (on the first step b = d, which is what μ·0 + d gives);
 *   d = nesterov ? d + μ·b : b;  p ← p − lr·d. */
static float
sgd_momentum (float *restrict p, const float *restrict g, float *restrict b, int64_t n,
              float lr, float wd, float mu, gboolean nesterov)
{
  float probe = 0;
  if (nesterov)
    {
#pragma omp simd reduction (+ : probe)
      for (int64_t i = 0; i < n; i++)
        {
          float d = g[i] + wd * p[i];
          float bi = b[i] * mu + d;
          b[i] = bi;
          p[i] = p[i] - lr * (d + mu * bi);
          probe += g[i] * 0.0f;
        }
    }
  else
    {
#pragma omp simd reduction (+ : probe)
      for (int64_t i = 0; i < n; i++)
        {
          float d = g[i] + wd * p[i];
          float bi = b[i] * mu + d;
          b[i] = bi;
          p[i] = p[i] - lr * bi;
          probe += g[i] * 0.0f;
        }
    }
  return probe;
}

/* torch.optim.Adam (amsgrad off), with AdamW's decoupled decay folded in:
 *   p ← p·decay                          (AdamW: decay = 1 − lr·wd; Adam: 1)
 *   g' = g + l2·p                        (Adam: l2 = wd; AdamW: 0)
 *   m ← β1·m + (1 − β1)·g'
 *   v ← β2·v + (1 − β2)·g'²
 *   p ← p − (lr / bc1) · m / (sqrt(v) / sqrt(bc2) + eps),  bc_k = 1 − β_k^t */


static float
adam_update (float *restrict p, const float *restrict g, float *restrict m, float *restrict v,
             int64_t n, const adam_scalars *a)
{
  float probe = 0;
  const float decay = a->decay, l2 = a->l2, b1 = a->beta1, ob1 = a->one_minus_beta1;
  const float b2 = a->beta2, ob2 = a->one_minus_beta2, bc2s = a->bc2_sqrt, eps = a->eps;
  const float step_size = a->step_size;
#pragma omp simd reduction (+ : probe)
  for (int64_t i = 0; i < n; i++)
    {
      probe += g[i] * 0.0f;
      float pi = p[i] * decay;
      float gi = g[i] + l2 * pi;
      float mi = m[i] * b1 + ob1 * gi;
      float vi = v[i] * b2 + ob2 * gi * gi;
      m[i] = mi;
      v[i] = vi;
      float denom = sqrtf (vi) / bc2s + eps;
      p[i] = pi - step_size * (mi / denom);
    }
  return probe;
}

void
tw_optimizer_begin_step (tw_optimizer *opt, double lr)
{
  const tw_optimizer_config *c = &opt->cfg;
  opt->step++;
  opt->lr = lr;
  memset (&opt->adam, 0, sizeof opt->adam);
  if (c->type == TW_OPT_ADAM || c->type == TW_OPT_ADAMW)
    {
      adam_scalars *a = &opt->adam;
      double t = (double) opt->step;
      double bc1 = 1.0 - pow (c->beta1, t);
      double bc2 = 1.0 - pow (c->beta2, t);
      gboolean decoupled = c->type == TW_OPT_ADAMW;
      a->decay = decoupled ? (float) (1.0 - lr * c->weight_decay) : 1.0f;
      a->l2 = decoupled ? 0.0f : (float) c->weight_decay;
      a->beta1 = (float) c->beta1;
      a->one_minus_beta1 = (float) (1.0 - c->beta1);
      a->beta2 = (float) c->beta2;
      a->one_minus_beta2 = (float) (1.0 - c->beta2);
      a->bc2_sqrt = (float) sqrt (bc2);
      a->eps = (float) c->eps;
      a->step_size = (float) (lr / bc1);
    }
}

int
tw_optimizer_state_count (const tw_optimizer *opt)
{
  const tw_optimizer_config *c = &opt->cfg;
  switch (c->type)
    {
    case TW_OPT_SGD:
      return c->momentum != 0.0 ? 1 : 0;
    case TW_OPT_ADAM:
    case TW_OPT_ADAMW:
      return 2;
    default:
      return 0;
    }
}

/* The update of n elements at p from g, with the optimizer's state at
 * state[k] (n floats each, tw_optimizer_state_count of them). */
static void
update_elements (tw_optimizer *opt, float *p, const float *g, int64_t n, float *const *state)
{
  const tw_optimizer_config *c = &opt->cfg;
  float lr = (float) opt->lr;
  float probe = 0;
  switch (c->type)
    {
    case TW_OPT_SGD:
      if (c->momentum != 0.0)
        probe = sgd_momentum (p, g, state[0], n, lr, (float) c->weight_decay, (float) c->momentum,
                              c->nesterov);
      else
        probe = sgd_plain (p, g, n, lr, (float) c->weight_decay);
      break;
    case TW_OPT_ADAM:
    case TW_OPT_ADAMW:
      probe = adam_update (p, g, state[0], state[1], n, &opt->adam);
      break;
    default:
      g_return_if_reached ();
    }
  /* g · 0 summed in the same pass: 0 unless a gradient value was NaN or Inf. */
  opt->last_nonfinite = probe != 0;
}

void
tw_optimizer_update (tw_optimizer *opt, tw_param *e, const float *g, int64_t offset, int64_t n)
{
  opt->last_nonfinite = FALSE;
  if (e->frozen)
    return;
  g_return_if_fail (e->value->dtype == TW_F32 && tw_tensor_is_contiguous (e->value));
  g_return_if_fail (offset >= 0 && offset + n <= tw_tensor_numel (e->value));
  float *state[2] = { NULL, NULL };
  for (int k = 0; k < tw_optimizer_state_count (opt); k++)
    state[k] = param_state (e, k) + offset;
  update_elements (opt, tw_tensor_f32 (e->value) + offset, g, n, state);
}

void
tw_optimizer_update_with_state (tw_optimizer *opt, tw_param *e, const float *g, int64_t offset,
                                int64_t n, float *const *state)
{
  opt->last_nonfinite = FALSE;
  if (e->frozen)
    return;
  g_return_if_fail (e->value->dtype == TW_F32 && tw_tensor_is_contiguous (e->value));
  g_return_if_fail (offset >= 0 && offset + n <= tw_tensor_numel (e->value));
  update_elements (opt, tw_tensor_f32 (e->value) + offset, g, n, state);
}

gboolean
tw_optimizer_last_grad_nonfinite (const tw_optimizer *opt)
{
  return opt->last_nonfinite;
}

void
tw_optimizer_step (tw_optimizer *opt, tw_params *params, double lr)
{
  tw_optimizer_begin_step (opt, lr);
  for (int i = 0; i < tw_params_count (params); i++)
    {
      tw_param *e = tw_params_at (params, i);
      if (!e->trainable || e->grad == NULL)
        continue;
      g_return_if_fail (e->grad->dtype == TW_F32 && tw_tensor_is_contiguous (e->grad)
                        && tw_tensor_same_shape (e->grad, e->value));
      tw_optimizer_update (opt, e, tw_tensor_f32 (e->grad), 0, tw_tensor_numel (e->value));
    }
}

/* ---- schedules ---------------------------------------------------------- */

/* Warm-up: for step < warmup_steps, lr·(step + 1)/warmup_steps.  After it the
 * schedule runs on t = step − warmup_steps:
 *   constant  lr
 *   step      lr·gamma^floor(t / step_size)          (step_size ≤ 0: constant)
 *   cosine    min_lr + (lr − min_lr)(1 + cos(π·min(t, T)/T))/2, with T = t_max, or
 *             when t_max is 0 the steps left after warm-up (total_steps −
 *             warmup_steps) so that the run ends at min_lr; T ≤ 0 (no total
 *             known): lr. */
double
tw_schedule_lr (const tw_schedule_config *s, double base_lr, int64_t step, int64_t total_steps)
{
  if (step < 0)
    step = 0;
  int64_t warmup = MAX (s->warmup_steps, 0);
  if (step < warmup)
    return base_lr * (double) (step + 1) / (double) warmup;
  int64_t t = step - warmup;

  switch (s->type)
    {
    case TW_SCHED_CONSTANT:
      return base_lr;
    case TW_SCHED_STEP:
      if (s->step_size <= 0)
        return base_lr;
      return base_lr * pow (s->gamma, (double) (t / s->step_size));
    case TW_SCHED_COSINE:
      {
        int64_t period = s->t_max > 0 ? s->t_max : total_steps - warmup;
        if (period <= 0)
          return base_lr;
        t = MIN (t, period);
        return s->min_lr
               + (base_lr - s->min_lr) * (1.0 + cos (G_PI * (double) t / (double) period)) / 2.0;
      }
    default:
      g_return_val_if_reached (base_lr);
    }
}
