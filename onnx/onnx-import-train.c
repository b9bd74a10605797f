/* onnx-import-train.c — what an imported model needs to train: a label
 * input, a loss on its first output and a recipe (tw_onnx_add_loss). */
#define G_LOG_DOMAIN "tw-onnx"

#include "onnx/onnx-import-private.h"

#include <string.h>

gboolean
tw_onnx_loss_from_name (const char *name, tw_onnx_loss *out)
{
  static const struct
  {
    const char *name;
    tw_onnx_loss loss;
  } names[] = {
    { "none", TW_ONNX_LOSS_NONE },
    { "auto", TW_ONNX_LOSS_AUTO },
    { "cross-entropy", TW_ONNX_LOSS_CROSS_ENTROPY },
    { "mse", TW_ONNX_LOSS_MSE },
  };
  for (guint i = 0; name && i < G_N_ELEMENTS (names); i++)
    if (strcmp (name, names[i].name) == 0)
      {
        *out = names[i].loss;
        return TRUE;
      }
  return FALSE;
}

gboolean
tw_imp_loss_nodes (const tw_graph *g, tw_node **loss_out, tw_node **label_out)
{
  tw_node *loss = tw_graph_find_loss (g);
  if (loss == NULL || loss->n_inputs < 1)
    return FALSE;
  tw_node *label = NULL;
  if (loss->n_inputs > 1)
    {
      tw_port p = tw_graph_resolve (g, loss->inputs[1]);
      tw_node *n = p.node >= 0 ? tw_graph_node (g, p.node) : NULL;
      if (n && strcmp (n->op_name, "input") == 0 &&
          g_strcmp0 (tw_attrs_get_string (n->attrs, "role", NULL), "label") == 0)
        label = n;
    }
  *loss_out = loss;
  *label_out = label;
  return TRUE;
}

void
tw_imp_place_loss (tw_graph *g)
{
  tw_node *loss, *label;
  if (!tw_imp_loss_nodes (g, &loss, &label))
    return;
  tw_port p = tw_graph_resolve (g, loss->inputs[0]);
  tw_node *at = p.node >= 0 ? tw_graph_node (g, p.node) : NULL;
  double x = at && at->has_pos ? at->x : 40, y = at && at->has_pos ? at->y : 40;
  /* One layer step right (a 180-unit box and engine/layout.c's 80 gap);
   * the label one slot below the output (104: a 64-unit box and the 40
   * gap), or below the loss where a node is there. */
  tw_graph_set_pos (g, loss, x + 260, y);
  if (label == NULL)
    return;
  gboolean taken = FALSE;
  for (int i = 0; i < tw_graph_n_nodes (g); i++)
    {
      tw_node *n = tw_graph_node (g, i);
      taken |= n != label && n != loss && n->has_pos && n->x == x && n->y == y + 104;
    }
  tw_graph_set_pos (g, label, taken ? x + 260 : x, y + 104);
}

/* base, or base_1, base_2, ... : an id the graph does not have yet. */
static char *
free_id (const tw_graph *g, const char *base)
{
  char *id = g_strdup (base);
  for (int k = 1; tw_graph_find (g, id) != NULL; k++)
    {
      g_free (id);
      id = g_strdup_printf ("%s_%d", base, k);
    }
  return id;
}

/* Recipe defaults for a model that came without one: the synthetic data
 * fitted to its input (engine/data-fit.h) until the user names a dataset;
 * small batches (a CPU step of ResNet-18 at 224 × 224 and batch 16 takes
 * seconds); Adam at 1e-4: torch's export folds batch norm into the
 * convolutions, and without it ResNet-18's loss on synthetic data jumps
 * at 1e-3 (7.2, 3.5, 20.1, ...) where at 1e-4 it falls at every step
 * (7.2 → 1.8 in 6 steps). */
static void
set_recipe (tw_model *m, const char *loss_id)
{
  g_free (m->recipe.loss);
  m->recipe.loss = g_strdup (loss_id);
  if (m->recipe.dataset == NULL)
    m->recipe.dataset = g_strdup ("synthetic");
  m->recipe.batch_size = 16;
  m->recipe.optimizer.type = TW_OPT_ADAM;
  m->recipe.optimizer.lr = 1e-4;
}

gboolean
tw_onnx_add_loss (tw_model *m, tw_onnx_loss loss, GError **error)
{
  g_return_val_if_fail (m != NULL && m->graph != NULL, FALSE);
  if (loss == TW_ONNX_LOSS_NONE)
    return TRUE;
  tw_graph *g = m->graph;
  const char *const *outs = tw_graph_outputs (g);
  const char *name = m->name ? m->name : "the model";
  if (outs == NULL || outs[0] == NULL)
    {
      g_set_error (error, TW_GRAPH_ERROR, TW_GRAPH_ERROR_INVALID, "%s: no output to put a loss on",
                   name);
      return FALSE;
    }
  tw_node *existing = tw_graph_find_loss (g);
  if (existing)
    {
      if (loss == TW_ONNX_LOSS_AUTO)
        return TRUE;
      g_set_error (error, TW_GRAPH_ERROR, TW_GRAPH_ERROR_INVALID,
                   "%s: already has a loss, node '%s' (%s)", name, existing->id, existing->op_name);
      return FALSE;
    }
  tw_graph_infer (g);
  tw_port p = tw_graph_resolve (g, outs[0]);
  tw_node *src = p.node >= 0 ? tw_graph_node (g, p.node) : NULL;
  if (src == NULL || !src->valid || src->out_info == NULL || p.output >= src->n_outputs)
    {
      g_set_error (error, TW_GRAPH_ERROR, TW_GRAPH_ERROR_INVALID,
                   "%s: output '%s' has no inferred shape to put a loss on", name, outs[0]);
      return FALSE;
    }
  const tw_tinfo *o = &src->out_info[p.output];
  gboolean classes = o->ndim == 2 && o->dims[0] == TW_DIM_N && tw_dtype_is_float (o->dtype);
  if (loss == TW_ONNX_LOSS_AUTO)
    {
      if (!classes)
        return TRUE;
      loss = TW_ONNX_LOSS_CROSS_ENTROPY;
    }
  if (loss == TW_ONNX_LOSS_CROSS_ENTROPY && !classes)
    {
      g_autofree char *s = tw_tinfo_to_string (o);
      g_set_error (error, TW_GRAPH_ERROR, TW_GRAPH_ERROR_INVALID,
                   "%s: output '%s' is %s; cross-entropy needs logits [N, C] of a float type", name,
                   outs[0], s);
      return FALSE;
    }
  if (loss == TW_ONNX_LOSS_MSE &&
      (o->ndim < 1 || o->dims[0] != TW_DIM_N || !tw_dtype_is_float (o->dtype)))
    {
      g_autofree char *s = tw_tinfo_to_string (o);
      g_set_error (error, TW_GRAPH_ERROR, TW_GRAPH_ERROR_INVALID,
                   "%s: output '%s' is %s; mse needs a float output with the batch first", name,
                   outs[0], s);
      return FALSE;
    }

  g_autofree char *label_id = free_id (g, "label");
  g_autofree char *loss_id = free_id (g, "loss");
  g_autofree char *out_ref = g_strdup (outs[0]);
  gboolean ce = loss == TW_ONNX_LOSS_CROSS_ENTROPY;
  tw_node *label =
    ce ? tw_graph_add_input (g, label_id, TW_I64, 0, NULL, "label")
       : tw_graph_add_input (g, label_id, o->dtype, o->ndim - 1, o->dims + 1, "label");
  const char *inputs[] = { out_ref, label_id, NULL };
  tw_node *ln =
    tw_graph_add_node (g, loss_id, ce ? "cross_entropy" : "mse_loss", NULL, inputs, error);
  g_assert (label != NULL && ln != NULL); /* the ids are free */
  if (tw_graph_infer (g) > 0)
    {
      g_autofree char *errs = tw_graph_errors_to_string (g);
      g_set_error (error, TW_GRAPH_ERROR, TW_GRAPH_ERROR_INVALID,
                   "%s: a %s loss on output '%s' does not infer:\n%s", name,
                   ce ? "cross-entropy" : "mse", out_ref, errs);
      tw_graph_remove_node (g, loss_id);
      tw_graph_remove_node (g, label_id);
      tw_graph_infer (g);
      return FALSE;
    }
  tw_graph_set_loss (g, loss_id);
  tw_imp_place_loss (g);
  set_recipe (m, loss_id);
  return TRUE;
}
