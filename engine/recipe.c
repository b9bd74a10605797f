/* recipe.c — the training recipe of a model: defaults, copies, optimizer
 * names.  The JSON side lives with the model file code. */
#define G_LOG_DOMAIN "twb-recipe"

#include "engine/model.h"

#include <string.h>

static const char *const optimizer_names[] = {
  [TW_OPT_SGD] = "sgd",
  [TW_OPT_ADAM] = "adam",
  [TW_OPT_ADAMW] = "adamw",
};

void
tw_recipe_init_defaults (tw_recipe *r)
{
  memset (r, 0, sizeof *r);
  r->loss = NULL;
  r->batch_size = 64;
  r->epochs = 1;
  r->seed = 0;
  r->dataset = NULL;
  r->validation_split = 0.0;

  r->optimizer.type = TW_OPT_SGD;
  r->optimizer.lr = 0.01;
  r->optimizer.momentum = 0.9;
  r->optimizer.nesterov = FALSE;
  r->optimizer.weight_decay = 0.0;
  /* torch.optim.Adam's defaults: betas (0.9, 0.999), eps 1e-8. */
  r->optimizer.beta1 = 0.9;
  r->optimizer.beta2 = 0.999;
  r->optimizer.eps = 1e-8;

  r->schedule.type = TW_SCHED_CONSTANT;
  /* step_size 0 means "never decays" until a file sets it; gamma 0.1 is
   * torch.optim.lr_scheduler.StepLR's default. */
  r->schedule.step_size = 0;
  r->schedule.gamma = 0.1;
  r->schedule.t_max = 0;
  r->schedule.min_lr = 0.0;
  r->schedule.warmup_steps = 0;
}

/* Frees the strings of r and leaves it holding the defaults, so clearing twice
 * is harmless. */
void
tw_recipe_clear (tw_recipe *r)
{
  if (r == NULL)
    return;
  g_free (r->loss);
  g_free (r->dataset);
  tw_recipe_init_defaults (r);
}

/* dst is treated as uninitialised: it is overwritten, not cleared first (call
 * tw_recipe_clear on it beforehand if it owns strings).  dst == src is a no-op. */
void
tw_recipe_copy (tw_recipe *dst, const tw_recipe *src)
{
  if (dst == src)
    return;
  *dst = *src;
  dst->loss = g_strdup (src->loss);
  dst->dataset = g_strdup (src->dataset);
}

const char *
tw_optimizer_type_name (tw_optimizer_type t)
{
  if ((guint) t >= G_N_ELEMENTS (optimizer_names))
    return NULL;
  return optimizer_names[t];
}

/* Accepts "sgd", "adam", "adamw" in any letter case. */
gboolean
tw_optimizer_type_from_name (const char *name, tw_optimizer_type *out)
{
  if (name == NULL)
    return FALSE;
  for (guint i = 0; i < G_N_ELEMENTS (optimizer_names); i++)
    if (g_ascii_strcasecmp (name, optimizer_names[i]) == 0)
      {
        if (out != NULL)
          *out = (tw_optimizer_type) i;
        return TRUE;
      }
  return FALSE;
}
