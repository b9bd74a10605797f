/* report-data.c — the compile report as data for a view (report-data.h).
 * Reads an optimised program; changes nothing in it. */
#define G_LOG_DOMAIN "twb-compile"

#include "engine/compile/report-data.h"
#include "engine/memory.h"

#include <string.h>

/* What fuse_update.c names its kernel (the weight gradient applied in blocks). */
#define GRAD_UPDATE_OP "fused_linear_grad_weight_update"

static gboolean
is_fused_kernel (const tw_instr *ins)
{
  /* As the report's "fused" list counts them (program.c). */
  return ins->kernel != NULL && strcmp (ins->label, "optimizer update") != 0
         && strcmp (ins->label, TW_GRAD_ACCUMULATE_LABEL) != 0;
}

static gboolean
is_grad_update (const tw_instr *ins)
{
  return ins->fused_op != NULL && strcmp (ins->fused_op, GRAD_UPDATE_OP) == 0;
}

static const char *
short_label (const char *label)
{
  return g_str_has_prefix (label, "fused ") ? label + strlen ("fused ") : label;
}

static void
append_sources (GString *s, const tw_instr *ins)
{
  for (guint k = 0; k < ins->sources->len; k++)
    g_string_append_printf (s, "%s%s", k ? ", " : "", (char *) g_ptr_array_index (ins->sources, k));
}

/* Every fused kernel of the fusion pass with its nodes, forward first:
 * "linear+relu (fc1, relu1), linear+bias (fc3); backward: ..." (brief
 * FALSE), or with the backward ones counted by kernel, "backward:
 * linear_grad_input+relu_grad ×2, ..." (brief TRUE). */
static char *
fusion_summary (const tw_program *p, gboolean brief)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < p->instrs->len; i++)
    {
      const tw_instr *ins = g_ptr_array_index (p->instrs, i);
      if (!is_fused_kernel (ins) || is_grad_update (ins) || ins->phase != TW_PHASE_FORWARD)
        continue;
      g_string_append_printf (s, "%s%s (", s->len ? ", " : "", short_label (ins->label));
      append_sources (s, ins);
      g_string_append_c (s, ')');
    }
  /* Backward kernels in order of first appearance, with their count. */
  g_autoptr (GPtrArray) labels = g_ptr_array_new ();
  g_autoptr (GArray) counts = g_array_new (FALSE, TRUE, sizeof (int));
  gsize forward_len = s->len;
  for (guint i = 0; i < p->instrs->len; i++)
    {
      const tw_instr *ins = g_ptr_array_index (p->instrs, i);
      if (!is_fused_kernel (ins) || is_grad_update (ins) || ins->phase != TW_PHASE_BACKWARD)
        continue;
      if (!brief)
        {
          g_string_append (s,
                           s->len == forward_len ? (s->len ? "; backward: " : "backward: ") : ", ");
          g_string_append_printf (s, "%s (", short_label (ins->label));
          append_sources (s, ins);
          g_string_append_c (s, ')');
          continue;
        }
      guint k;
      for (k = 0; k < labels->len; k++)
        if (strcmp (g_ptr_array_index (labels, k), ins->label) == 0)
          break;
      if (k == labels->len)
        {
          g_ptr_array_add (labels, ins->label);
          g_array_set_size (counts, k + 1);
        }
      g_array_index (counts, int, k)++;
    }
  for (guint k = 0; k < labels->len; k++)
    {
      g_string_append (s, k ? ", " : s->len ? "; backward: " : "backward: ");
      g_string_append (s, short_label (g_ptr_array_index (labels, k)));
      if (g_array_index (counts, int, k) > 1)
        g_string_append_printf (s, " ×%d", g_array_index (counts, int, k));
    }
  return g_string_free (s, FALSE);
}

static char *
grad_update_summary (const tw_program *p)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < p->instrs->len; i++)
    {
      const tw_instr *ins = g_ptr_array_index (p->instrs, i);
      if (!is_grad_update (ins))
        continue;
      g_string_append (s, s->len ? ", " : "weight gradients applied in blocks, never stored: ");
      append_sources (s, ins);
    }
  return g_string_free (s, FALSE);
}

/* passes.c's one line per fold or fusion as one summary: "2 batch norms
 * folded: bn1 into conv1, bn2 into conv2", "1 fused: conv2d+add+relu:
 * conv2, add1, relu2". */
static char *
lines_summary (const char *pass, const char *detail)
{
  g_auto (GStrv) lines = g_strsplit (detail, "\n", -1);
  GString *s = g_string_new (NULL);
  int n = 0;
  for (char **l = lines; *l; l++)
    if (**l)
      g_string_append_printf (s, "%s%s", n++ ? "; " : "", *l);
  gboolean fold = strcmp (pass, "fold batch norm") == 0;
  g_string_prepend (s, fold ? (n == 1 ? "1 batch norm folded: " : " batch norms folded: ")
                            : (n == 1 ? "1 residual block tail fused: "
                                      : " residual block tails fused: "));
  if (n != 1)
    {
      g_autofree char *count = g_strdup_printf ("%d", n);
      g_string_prepend (s, count);
    }
  return g_string_free (s, FALSE);
}

static char *
pass_summary (const tw_program *p, const tw_pass_record *r)
{
  int removed = r->instrs_before - r->instrs_after;
  g_autofree char *text = NULL;

  if (strcmp (r->pass, "fusion") == 0)
    text = fusion_summary (p, TRUE);
  else if (strcmp (r->pass, "fuse weight gradients into updates") == 0)
    text = grad_update_summary (p);
  else if (strcmp (r->pass, "schedule updates early") == 0)
    {
      if (p->n_updates > 0)
        text = g_strdup_printf ("%d parameter updates, each right after its gradient is ready",
                                p->n_updates);
    }
  else if (strcmp (r->pass, "memory plan") == 0)
    {
      g_autofree char *arena = g_format_size (p->arena_bytes);
      g_autofree char *all = g_format_size (p->unplanned_bytes);
      text =
        g_strdup_printf ("arena %s for %s of activations, gradients and temporaries", arena, all);
    }
  else if ((strcmp (r->pass, "fold batch norm") == 0 || strcmp (r->pass, "conv + residual add") == 0)
           && r->detail && *r->detail)
    text = lines_summary (r->pass, r->detail);
  else if (r->detail && *r->detail)
    text = g_strdup (r->detail);
  else if (removed > 0 && g_str_has_prefix (r->pass, "dead code"))
    text = g_strdup_printf ("%d unused instructions removed", removed);
  else if (removed > 0 && strcmp (r->pass, "common subexpressions") == 0)
    text = g_strdup_printf ("%d repeated computations merged", removed);
  else if (removed > 0 && strcmp (r->pass, "constant folding") == 0)
    text = g_strdup_printf ("%d instructions folded into constants", removed);
  else if (removed > 0)
    text = g_strdup_printf ("%d instructions removed", removed);

  if (text == NULL || *text == '\0')
    return g_strdup ("nothing to do");
  return g_steal_pointer (&text);
}

/* A name for a buffer: its slot's (a node output); a parameter's final
 * gradient ("fc2.bias gradient"); else, for the temporaries
 * of backward, what produces it and for which nodes, with the output's
 * number when the producer has several. */
static char *
buffer_name (const tw_program *p, const tw_slot *sl, GHashTable *grad_of)
{
  if (sl->name)
    return g_strdup (sl->name);
  const char *param = g_hash_table_lookup (grad_of, GINT_TO_POINTER (sl->id));
  if (param)
    return g_strdup_printf ("%s gradient", param);
  if (sl->producer < 0 || sl->producer >= (int) p->instrs->len)
    return g_strdup_printf ("%%%d", sl->id);
  const tw_instr *ins = g_ptr_array_index (p->instrs, sl->producer);
  GString *s = g_string_new (short_label (ins->label));
  if (ins->sources->len)
    {
      g_string_append (s, " · ");
      append_sources (s, ins);
    }
  for (int k = 0; k < ins->n_out && ins->n_out > 1; k++)
    if (ins->out[k] == sl->id)
      g_string_append_printf (s, " (output %d of %d)", k + 1, ins->n_out);
  return g_string_free (s, FALSE);
}

static void
pass_clear (gpointer data)
{
  tw_compile_pass *ps = data;
  g_free (ps->pass);
  g_free (ps->summary);
  g_free (ps->detail);
}

static void
group_clear (gpointer data)
{
  tw_compile_group *g = data;
  g_free (g->kernel);
  g_strfreev (g->nodes);
}

static void
buffer_clear (gpointer data)
{
  g_free (((tw_compile_buffer *) data)->name);
}

static void
add_groups (tw_compile_report *r, const tw_program *p)
{
  for (guint i = 0; i < p->instrs->len; i++)
    {
      const tw_instr *ins = g_ptr_array_index (p->instrs, i);
      if (!is_fused_kernel (ins) || ins->phase != TW_PHASE_FORWARD || ins->sources->len < 2)
        continue;
      g_autoptr (GStrvBuilder) nodes = g_strv_builder_new ();
      for (guint k = 0; k < ins->sources->len; k++)
        g_strv_builder_add (nodes, g_ptr_array_index (ins->sources, k));
      tw_compile_group g = { g_strdup (short_label (ins->label)), g_strv_builder_end (nodes),
                             (int) i };
      g_array_append_val (r->groups, g);
      for (char **n = g.nodes; *n; n++)
        if (!g_hash_table_contains (r->node_group, *n))
          g_hash_table_insert (r->node_group, g_strdup (*n), GINT_TO_POINTER (r->groups->len));
    }
}

/* Lifetimes as memplan.c computes them: first writer to last reader of any
 * ACT slot sharing the buffer, kept slots to the end; read-only ones from 0. */
static void
add_buffers (tw_compile_report *r, const tw_program *p)
{
  int ns = (int) p->slots->len, ni = (int) p->instrs->len;
  g_autofree int *first = g_new (int, ns);
  g_autofree int *last = g_new (int, ns);
  for (int s = 0; s < ns; s++)
    first[s] = G_MAXINT, last[s] = -1;
  for (int i = 0; i < ni; i++)
    {
      const tw_instr *ins = g_ptr_array_index (p->instrs, i);
      for (int k = 0; k < ins->n_out; k++)
        {
          if (tw_program_slot (p, ins->out[k])->kind != TW_SLOT_ACT)
            continue;
          int root = tw_program_alias_root (p, ins->out[k]);
          first[root] = MIN (first[root], i);
          last[root] = MAX (last[root], i);
        }
      for (int k = 0; k < ins->n_in; k++)
        {
          if (tw_program_slot (p, ins->in[k])->kind != TW_SLOT_ACT)
            continue;
          int root = tw_program_alias_root (p, ins->in[k]);
          last[root] = MAX (last[root], i);
        }
    }
  for (int s = 0; s < ns; s++)
    if (tw_program_slot (p, s)->kind == TW_SLOT_ACT && tw_program_slot (p, s)->keep)
      {
        int root = tw_program_alias_root (p, s);
        last[root] = ni;
      }
  /* Buffer → the parameter whose final gradient it holds (one pass, not one
   * per buffer). */
  g_autoptr (GHashTable) grad_of = g_hash_table_new (g_direct_hash, g_direct_equal);
  GHashTableIter it;
  gpointer name, slot1;
  g_hash_table_iter_init (&it, p->grad_slot);
  while (g_hash_table_iter_next (&it, &name, &slot1))
    {
      gpointer root = GINT_TO_POINTER (tw_program_alias_root (p, GPOINTER_TO_INT (slot1) - 1));
      const char *had = g_hash_table_lookup (grad_of, root);
      if (had == NULL || strcmp (name, had) < 0)
        g_hash_table_insert (grad_of, root, name);
    }
  for (int s = 0; s < ns; s++)
    {
      const tw_slot *sl = tw_program_slot (p, s);
      if (sl->kind != TW_SLOT_ACT || sl->alias_of >= 0 || sl->offset < 0)
        continue; /* not in the arena, shares another's buffer, or unused */
      if (first[s] == G_MAXINT && last[s] < 0)
        continue;
      tw_compile_buffer b = {
        s, buffer_name (p, sl, grad_of), tw_slot_bytes (sl), sl->offset, first[s] == G_MAXINT ? 0 : first[s],
        0
      };
      b.last = MAX (last[s], b.first);
      g_array_append_val (r->buffers, b);
    }
}

tw_compile_report *
tw_compile_report_new (const tw_program *p)
{
  tw_compile_report *r = g_new0 (tw_compile_report, 1);
  r->kind = p->kind;
  r->batch = p->batch;
  r->n_graph_nodes = p->n_graph_nodes;
  r->n_instrs = (int) p->instrs->len;
  r->phases = g_new (tw_phase, MAX (r->n_instrs, 1));
  for (int i = 0; i < r->n_instrs; i++)
    r->phases[i] = tw_program_instr (p, i)->phase;
  r->passes = g_array_new (FALSE, TRUE, sizeof (tw_compile_pass));
  g_array_set_clear_func (r->passes, pass_clear);
  r->groups = g_array_new (FALSE, TRUE, sizeof (tw_compile_group));
  g_array_set_clear_func (r->groups, group_clear);
  r->node_group = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  r->buffers = g_array_new (FALSE, TRUE, sizeof (tw_compile_buffer));
  g_array_set_clear_func (r->buffers, buffer_clear);
  r->arena_bytes = p->arena_bytes;
  r->unplanned_bytes = p->unplanned_bytes;

  int first_before =
    p->records->len ? g_array_index (p->records, tw_pass_record, 0).instrs_before : r->n_instrs;
  tw_compile_pass build = { g_strdup ("build"), p->n_graph_nodes, first_before,
                            g_strdup_printf ("%d graph nodes → %d instructions (forward, "
                                             "backward%s)",
                                             p->n_graph_nodes, first_before,
                                             p->n_updates ? ", updates" : ""),
                            NULL };
  g_array_append_val (r->passes, build);
  for (guint i = 0; i < p->records->len; i++)
    {
      const tw_pass_record *rec = &g_array_index (p->records, tw_pass_record, i);
      tw_compile_pass ps = { g_strdup (rec->pass), rec->instrs_before, rec->instrs_after,
                             pass_summary (p, rec), NULL };
      if (strcmp (rec->pass, "fusion") == 0)
        ps.detail = fusion_summary (p, FALSE);
      g_array_append_val (r->passes, ps);
    }
  add_groups (r, p);
  add_buffers (r, p);

  tw_memory_estimate est;
  gboolean training = p->kind == TW_PROGRAM_TRAIN || p->kind == TW_PROGRAM_STEP;
  if (tw_graph_estimate_memory (p->graph, p->batch, &est, NULL))
    r->eager_peak_bytes = (gsize) tw_memory_estimate_eager_peak (&est, training);
  return r;
}

void
tw_compile_report_free (tw_compile_report *r)
{
  if (r == NULL)
    return;
  g_free (r->phases);
  g_array_unref (r->passes);
  g_array_unref (r->groups);
  g_hash_table_unref (r->node_group);
  g_array_unref (r->buffers);
  g_free (r);
}
