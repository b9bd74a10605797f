/* graph.c — graph IR: nodes, references, topological order, shape inference. */
#define G_LOG_DOMAIN "twb-graph"

#include "engine/graph.h"

#include <stdarg.h>
#include <string.h>

G_DEFINE_QUARK (tw-graph-error-quark, tw_graph_error)

struct tw_graph
{
  GPtrArray *nodes;        /* tw_node*, owned */
  GHashTable *index;       /* id → GINT index+1; rebuilt lazily */
  gboolean index_dirty;
  char **outputs;          /* NULL-terminated references: the marked outputs */
  char **default_outputs;  /* what tw_graph_outputs last derived from the losses */
  char *loss;              /* id of the loss node to train, or NULL: the first loss */
  GArray *diags;           /* tw_diag */
};

static void
node_clear_inferred (tw_node *n)
{
  g_clear_pointer (&n->in_ports, g_free);
  g_clear_pointer (&n->resolved, tw_attrs_free);
  g_clear_pointer (&n->out_info, g_free);
  g_clear_pointer (&n->error, g_free);
  n->n_outputs = 0;
  n->n_params = 0;
  n->valid = FALSE;
  memset (&n->cost, 0, sizeof n->cost);
}

static void
node_free (gpointer p)
{
  tw_node *n = p;
  node_clear_inferred (n);
  g_free (n->id);
  g_free (n->op_name);
  tw_attrs_free (n->attrs);
  g_strfreev (n->inputs);
  g_free (n->share);
  g_free (n);
}

static void
diag_clear (gpointer p)
{
  g_free (((tw_diag *) p)->message);
}

tw_graph *
tw_graph_new (void)
{
  tw_graph *g = g_new0 (tw_graph, 1);
  g->nodes = g_ptr_array_new_with_free_func (node_free);
  g->index = g_hash_table_new (g_str_hash, g_str_equal);
  g->outputs = g_new0 (char *, 1);
  g->diags = g_array_new (FALSE, TRUE, sizeof (tw_diag));
  g_array_set_clear_func (g->diags, diag_clear);
  return g;
}

void
tw_graph_free (tw_graph *g)
{
  if (g == NULL)
    return;
  g_ptr_array_unref (g->nodes);
  g_hash_table_unref (g->index);
  g_strfreev (g->outputs);
  g_strfreev (g->default_outputs);
  g_free (g->loss);
  g_array_unref (g->diags);
  g_free (g);
}

tw_graph *
tw_graph_copy (const tw_graph *g)
{
  tw_graph *c = tw_graph_new ();
  for (guint i = 0; i < g->nodes->len; i++)
    {
      const tw_node *n = g_ptr_array_index (g->nodes, i);
      tw_node *m = tw_graph_add_node (c, n->id, n->op_name, n->attrs,
                                      (const char *const *) n->inputs, NULL);
      g_assert (m != NULL);
      m->share = g_strdup (n->share);
      m->has_pos = n->has_pos;
      m->x = n->x;
      m->y = n->y;
    }
  tw_graph_set_outputs (c, (const char *const *) g->outputs);
  c->loss = g_strdup (g->loss);
  return c;
}

static void
rebuild_index (const tw_graph *cg)
{
  tw_graph *g = (tw_graph *) cg;
  if (!g->index_dirty)
    return;
  g_hash_table_remove_all (g->index);
  for (guint i = 0; i < g->nodes->len; i++)
    {
      tw_node *n = g_ptr_array_index (g->nodes, i);
      g_hash_table_insert (g->index, n->id, GINT_TO_POINTER (i + 1));
    }
  g->index_dirty = FALSE;
}

int
tw_graph_n_nodes (const tw_graph *g)
{
  return (int) g->nodes->len;
}

tw_node *
tw_graph_node (const tw_graph *g, int i)
{
  g_assert (i >= 0 && i < (int) g->nodes->len);
  return g_ptr_array_index (g->nodes, i);
}

int
tw_graph_index_of (const tw_graph *g, const char *id)
{
  rebuild_index (g);
  return GPOINTER_TO_INT (g_hash_table_lookup (g->index, id)) - 1;
}

tw_node *
tw_graph_find (const tw_graph *g, const char *id)
{
  int i = id ? tw_graph_index_of (g, id) : -1;
  return i >= 0 ? tw_graph_node (g, i) : NULL;
}

tw_node *
tw_graph_add_node (tw_graph *g, const char *id, const char *op_name, const tw_attrs *attrs,
                   const char *const *inputs, GError **error)
{
  if (id == NULL || *id == '\0' || strchr (id, ':'))
    {
      g_set_error (error, TW_GRAPH_ERROR, TW_GRAPH_ERROR_INVALID,
                   "'%s' is not a valid node id (non-empty, no ':')", id ? id : "");
      return NULL;
    }
  if (tw_graph_find (g, id))
    {
      g_set_error (error, TW_GRAPH_ERROR, TW_GRAPH_ERROR_DUPLICATE_ID, "duplicate node id '%s'",
                   id);
      return NULL;
    }
  tw_node *n = g_new0 (tw_node, 1);
  n->id = g_strdup (id);
  n->op_name = g_strdup (op_name);
  n->op = tw_op_lookup (op_name);
  n->attrs = tw_attrs_copy (attrs);
  n->inputs = g_strdupv ((char **) (inputs ? inputs : (const char *const[]) { NULL }));
  n->n_inputs = (int) g_strv_length (n->inputs);
  g_ptr_array_add (g->nodes, n);
  g_hash_table_insert (g->index, n->id, GINT_TO_POINTER (g->nodes->len));
  return n;
}

tw_node *
tw_graph_add (tw_graph *g, const char *id, const char *op_name, const tw_attrs *attrs, ...)
{
  g_autoptr (GPtrArray) in = g_ptr_array_new ();
  va_list ap;
  va_start (ap, attrs);
  for (const char *s = va_arg (ap, const char *); s; s = va_arg (ap, const char *))
    g_ptr_array_add (in, (gpointer) s);
  va_end (ap);
  g_ptr_array_add (in, NULL);
  g_autoptr (GError) error = NULL;
  tw_node *n = tw_graph_add_node (g, id, op_name, attrs, (const char *const *) in->pdata, &error);
  if (n == NULL)
    g_error ("tw_graph_add: %s", error->message);
  return n;
}

tw_node *
tw_graph_add_input (tw_graph *g, const char *id, tw_dtype dtype, int ndim, const int64_t *shape,
                    const char *role)
{
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_ints (a, "shape", ndim, shape);
  tw_attrs_set_string (a, "dtype", tw_dtype_name (dtype));
  tw_attrs_set_string (a, "role", role ? role : "data");
  tw_node *n = tw_graph_add (g, id, "input", a, NULL);
  tw_attrs_free (a);
  return n;
}

/* Does ref name node `id` (as "id" or "id:k")? */
static gboolean
ref_names (const char *ref, const char *id)
{
  size_t l = strlen (id);
  return strncmp (ref, id, l) == 0 && (ref[l] == '\0' || ref[l] == ':');
}

gboolean
tw_graph_remove_node (tw_graph *g, const char *id)
{
  int i = tw_graph_index_of (g, id);
  if (i < 0)
    return FALSE;
  g_ptr_array_remove_index (g->nodes, i);
  g->index_dirty = TRUE;
  return TRUE;
}

static char *
rename_ref (const char *ref, const char *old_id, const char *new_id)
{
  if (!ref_names (ref, old_id))
    return NULL;
  return g_strconcat (new_id, ref + strlen (old_id), NULL);
}

gboolean
tw_graph_rename_node (tw_graph *g, const char *old_id, const char *new_id, GError **error)
{
  tw_node *n = tw_graph_find (g, old_id);
  if (n == NULL)
    {
      g_set_error (error, TW_GRAPH_ERROR, TW_GRAPH_ERROR_UNKNOWN_NODE, "no node '%s'", old_id);
      return FALSE;
    }
  if (new_id == NULL || *new_id == '\0' || strchr (new_id, ':'))
    {
      g_set_error (error, TW_GRAPH_ERROR, TW_GRAPH_ERROR_INVALID,
                   "'%s' is not a valid node id (non-empty, no ':')", new_id ? new_id : "");
      return FALSE;
    }
  if (strcmp (old_id, new_id) == 0)
    return TRUE;
  if (tw_graph_find (g, new_id))
    {
      g_set_error (error, TW_GRAPH_ERROR, TW_GRAPH_ERROR_DUPLICATE_ID, "duplicate node id '%s'",
                   new_id);
      return FALSE;
    }
  g_autofree char *old = g_strdup (old_id);
  for (guint i = 0; i < g->nodes->len; i++)
    {
      tw_node *m = g_ptr_array_index (g->nodes, i);
      for (int k = 0; k < m->n_inputs; k++)
        {
          char *r = rename_ref (m->inputs[k], old, new_id);
          if (r)
            {
              g_free (m->inputs[k]);
              m->inputs[k] = r;
            }
        }
      if (m->share && strcmp (m->share, old) == 0)
        {
          g_free (m->share);
          m->share = g_strdup (new_id);
        }
    }
  if (g_strcmp0 (g->loss, old) == 0)
    {
      g_free (g->loss);
      g->loss = g_strdup (new_id);
    }
  for (char **o = g->outputs; *o; o++)
    {
      char *r = rename_ref (*o, old, new_id);
      if (r)
        {
          g_free (*o);
          *o = r;
        }
    }
  g_free (n->id);
  n->id = g_strdup (new_id);
  g->index_dirty = TRUE;
  return TRUE;
}

void
tw_graph_set_input_ref (tw_graph *g, tw_node *n, int i, const char *ref)
{
  if (i >= n->n_inputs)
    {
      n->inputs = g_renew (char *, n->inputs, i + 2);
      for (int k = n->n_inputs; k <= i; k++)
        n->inputs[k] = g_strdup ("");
      n->inputs[i + 1] = NULL;
      n->n_inputs = i + 1;
    }
  g_free (n->inputs[i]);
  n->inputs[i] = g_strdup (ref ? ref : "");
}

void
tw_graph_set_share (tw_graph *g, tw_node *n, const char *scope)
{
  g_free (n->share);
  n->share = scope && *scope ? g_strdup (scope) : NULL;
}

void
tw_graph_set_pos (tw_graph *g, tw_node *n, double x, double y)
{
  n->has_pos = TRUE;
  n->x = x;
  n->y = y;
}

void
tw_graph_set_outputs (tw_graph *g, const char *const *refs)
{
  char **c = g_strdupv ((char **) (refs ? refs : (const char *const[]) { NULL }));
  g_strfreev (g->outputs);
  g->outputs = c;
}

const char *const *
tw_graph_marked_outputs (const tw_graph *g)
{
  return (const char *const *) g->outputs;
}

/* The prediction a loss node scores: its input 0 as written, NULL when
 * that port is not connected. */
static const char *
loss_prediction_ref (const tw_node *n)
{
  return n->n_inputs > 0 && n->inputs[0][0] ? n->inputs[0] : NULL;
}

const char *const *
tw_graph_outputs (const tw_graph *cg)
{
  tw_graph *g = (tw_graph *) cg;
  if (g->outputs[0])
    return (const char *const *) g->outputs;
  g_autoptr (GPtrArray) refs = g_ptr_array_new ();
  for (guint i = 0; i < g->nodes->len; i++)
    {
      const tw_node *n = g_ptr_array_index (g->nodes, i);
      const char *ref = n->op && (n->op->flags & TW_OP_LOSS) ? loss_prediction_ref (n) : NULL;
      gboolean seen = FALSE;
      for (guint k = 0; ref && k < refs->len && !seen; k++)
        seen = strcmp (g_ptr_array_index (refs, k), ref) == 0;
      if (ref && !seen)
        g_ptr_array_add (refs, (gpointer) ref);
    }
  g_ptr_array_add (refs, NULL);
  /* Kept while it stays the same, so that what callers hold stays valid. */
  if (g->default_outputs == NULL
      || !g_strv_equal ((const char *const *) g->default_outputs,
                        (const char *const *) refs->pdata))
    {
      g_strfreev (g->default_outputs);
      g->default_outputs = g_strdupv ((char **) refs->pdata);
    }
  return (const char *const *) g->default_outputs;
}

gboolean
tw_graph_outputs_are_default (const tw_graph *g)
{
  return g->outputs[0] == NULL;
}

const char *
tw_graph_prediction (const tw_graph *g)
{
  const tw_node *loss = tw_graph_find_loss (g);
  const char *ref = loss ? loss_prediction_ref (loss) : NULL;
  if (ref)
    return ref;
  return tw_graph_outputs (g)[0];
}

gboolean
tw_ref_parse (const char *ref, char **id, int *output)
{
  const char *colon = ref ? strrchr (ref, ':') : NULL;
  if (ref == NULL || *ref == '\0' || colon == ref)
    return FALSE;
  if (colon == NULL)
    {
      *id = g_strdup (ref);
      *output = 0;
      return TRUE;
    }
  char *end = NULL;
  guint64 k = g_ascii_strtoull (colon + 1, &end, 10);
  if (end == colon + 1 || *end != '\0' || k > TW_MAX_OUTPUTS)
    return FALSE;
  *id = g_strndup (ref, colon - ref);
  *output = (int) k;
  return TRUE;
}

tw_port
tw_graph_resolve (const tw_graph *g, const char *ref)
{
  tw_port p = { -1, 0 };
  g_autofree char *id = NULL;
  if (!tw_ref_parse (ref, &id, &p.output))
    return p;
  p.node = tw_graph_index_of (g, id);
  return p;
}

/* Min-heap of node indices: Kahn's algorithm taking the lowest ready index
 * in O(log n) a step (a scan of the ready list made a graph of 200,000
 * siblings take 20 s). */
static void
heap_push (GArray *h, int v)
{
  g_array_append_val (h, v);
  int *a = (int *) h->data;
  for (guint i = h->len - 1; i > 0;)
    {
      guint p = (i - 1) / 2;
      if (a[p] <= a[i])
        break;
      int t = a[p];
      a[p] = a[i];
      a[i] = t;
      i = p;
    }
}

static int
heap_pop (GArray *h)
{
  int *a = (int *) h->data;
  int top = a[0];
  a[0] = a[h->len - 1];
  g_array_set_size (h, h->len - 1);
  a = (int *) h->data;
  for (guint i = 0;;)
    {
      guint l = 2 * i + 1, r = l + 1, m = i;
      if (l < h->len && a[l] < a[m])
        m = l;
      if (r < h->len && a[r] < a[m])
        m = r;
      if (m == i)
        break;
      int t = a[m];
      a[m] = a[i];
      a[i] = t;
      i = m;
    }
  return top;
}

/* Kahn's algorithm.  stuck (optional, [n]) marks the nodes left over: those
 * on a cycle or downstream of one.  Successors in CSR form: O(E log V). */
static gboolean
topo_sort (const tw_graph *g, GArray **order, gboolean *stuck, GError **error)
{
  int n = (int) g->nodes->len;
  rebuild_index (g);
  g_autofree int *indeg = g_new0 (int, MAX (n, 1));
  g_autofree int *succ_start = g_new0 (int, n + 1);
  g_autoptr (GArray) edges = g_array_new (FALSE, FALSE, sizeof (int) * 2);   /* { from, to } */
  for (int i = 0; i < n; i++)
    {
      tw_node *nd = tw_graph_node (g, i);
      for (int k = 0; k < nd->n_inputs; k++)
        {
          tw_port p = tw_graph_resolve (g, nd->inputs[k]);
          if (p.node < 0)
            continue;
          int e[2] = { p.node, i };
          g_array_append_val (edges, e);
          succ_start[p.node + 1]++;
          indeg[i]++;
        }
    }
  for (int i = 0; i < n; i++)
    succ_start[i + 1] += succ_start[i];
  g_autofree int *succ = g_new (int, MAX (edges->len, 1));
  g_autofree int *fill = g_memdup2 (succ_start, sizeof (int) * (n + 1));
  for (guint e = 0; e < edges->len; e++)
    {
      const int *ft = (const int *) edges->data + 2 * e;
      succ[fill[ft[0]]++] = ft[1];
    }

  /* Always taking the lowest ready index: the order follows the file where
   * it can, so results are stable. */
  GArray *out = g_array_sized_new (FALSE, FALSE, sizeof (int), n);
  g_autoptr (GArray) heap = g_array_new (FALSE, FALSE, sizeof (int));
  for (int i = 0; i < n; i++)
    if (indeg[i] == 0)
      heap_push (heap, i);
  while (heap->len > 0)
    {
      int i = heap_pop (heap);
      g_array_append_val (out, i);
      for (int k = succ_start[i]; k < succ_start[i + 1]; k++)
        if (--indeg[succ[k]] == 0)
          heap_push (heap, succ[k]);
    }
  if ((int) out->len < n)
    {
      GString *ids = g_string_new (NULL);
      for (int i = 0; i < n; i++)
        if (indeg[i] > 0)
          {
            g_string_append_printf (ids, "%s%s", ids->len ? ", " : "", tw_graph_node (g, i)->id);
            if (stuck)
              stuck[i] = TRUE;
          }
      g_set_error (error, TW_GRAPH_ERROR, TW_GRAPH_ERROR_CYCLE, "the graph has a cycle through %s",
                   ids->str);
      g_string_free (ids, TRUE);
      g_array_unref (out);
      return FALSE;
    }
  *order = out;
  return TRUE;
}

gboolean
tw_graph_topo_order (const tw_graph *g, GArray **order, GError **error)
{
  return topo_sort (g, order, NULL, error);
}

void
tw_graph_mark_upstream (const tw_graph *g, int node, gboolean *marked)
{
  if (node < 0 || marked[node])
    return;
  g_autoptr (GArray) stack = g_array_new (FALSE, FALSE, sizeof (int));
  marked[node] = TRUE;
  g_array_append_val (stack, node);
  while (stack->len > 0)
    {
      const tw_node *n = tw_graph_node (g, g_array_index (stack, int, stack->len - 1));
      g_array_set_size (stack, stack->len - 1);
      for (int k = 0; n->in_ports && k < n->n_inputs; k++)
        {
          int up = n->in_ports[k].node;
          if (up >= 0 && !marked[up])
            {
              marked[up] = TRUE;
              g_array_append_val (stack, up);
            }
        }
    }
}

const char *
tw_node_scope (const tw_node *n)
{
  return n->share ? n->share : n->id;
}

char *
tw_node_param_name (const tw_node *n, int k)
{
  g_assert (k >= 0 && k < n->n_params);
  return g_strdup_printf ("%s.%s", tw_node_scope (n), n->params[k].suffix);
}

static void
node_fail (tw_graph *g, tw_node *n, const char *fmt, ...) G_GNUC_PRINTF (3, 4);

static void
node_fail (tw_graph *g, tw_node *n, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_free (n->error);
  n->error = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  n->valid = FALSE;
  tw_diag d = { n->id, g_strdup (n->error) };
  g_array_append_val (g->diags, d);
}

static void
substitute_batch (tw_tinfo *t, int64_t batch)
{
  if (batch <= 0)
    return;
  for (int d = 0; d < t->ndim; d++)
    if (t->dims[d] == TW_DIM_N)
      t->dims[d] = batch;
}

/* Why a shape is refused (tw_shape_nbytes_checked). */
#define TOO_LARGE "a negative size or more than 2^63 bytes (check the sizes in its attributes)"

/* Infer one node whose inputs are done. */
static void
infer_node (tw_graph *g, tw_node *n, int64_t batch)
{
  g_autoptr (GError) error = NULL;
  tw_tinfo in[TW_MAX_INPUTS + TW_MAX_PARAMS];
  gboolean upstream_ok = TRUE;

  n->in_ports = g_new0 (tw_port, MAX (n->n_inputs, 1));
  if (n->op == NULL)
    {
      node_fail (g, n, "unknown op '%s'", n->op_name ? n->op_name : "");
      return;
    }
  const tw_op_def *def = n->op;
  if (def->flags & TW_OP_INTERNAL)
    {
      /* Gradient ops and the compiler's fused ops: emitted by backward rules
       * and passes, they have no gradient of their own. */
      node_fail (g, n, "'%s' is an internal op (used by backward rules and the compiler), not one "
                 "a model may use", def->name);
      return;
    }
  /* tw_graph_infer_from may hand back the node's own resolved attrs when
   * neither its op nor its attrs changed. */
  if (n->resolved == NULL)
    n->resolved = tw_op_resolve_attrs (def, n->attrs, &error);
  if (n->resolved == NULL)
    {
      node_fail (g, n, "%s", error->message);
      return;
    }
  n->n_outputs = tw_op_num_outputs (def, n->resolved);
  if (n->n_outputs < 1 || n->n_outputs > TW_MAX_OUTPUTS)
    {
      node_fail (g, n, "%s: %d outputs (1 to %d allowed)", def->name, n->n_outputs,
                 TW_MAX_OUTPUTS);
      n->n_outputs = 0;
      return;
    }
  n->out_info = g_new0 (tw_tinfo, n->n_outputs);

  if (n->n_inputs < def->min_inputs
      || (def->max_inputs >= 0 && n->n_inputs > def->max_inputs)
      || n->n_inputs > TW_MAX_INPUTS)
    {
      if (def->max_inputs == def->min_inputs)
        node_fail (g, n, "%s takes %d input%s, got %d", def->name, def->min_inputs,
                   def->min_inputs == 1 ? "" : "s", n->n_inputs);
      else if (def->max_inputs < 0)
        node_fail (g, n, "%s takes at least %d inputs, got %d", def->name, def->min_inputs,
                   n->n_inputs);
      else
        node_fail (g, n, "%s takes %d to %d inputs, got %d", def->name, def->min_inputs,
                   def->max_inputs, n->n_inputs);
      return;
    }

  for (int k = 0; k < n->n_inputs; k++)
    {
      tw_port p = tw_graph_resolve (g, n->inputs[k]);
      n->in_ports[k] = p;
      if (p.node < 0)
        {
          if (n->inputs[k][0] == '\0')
            node_fail (g, n, "input %d is not connected", k + 1);
          else
            node_fail (g, n, "input %d refers to '%s', which is not a node", k + 1,
                       n->inputs[k]);
          return;
        }
      tw_node *src = tw_graph_node (g, p.node);
      if (src->out_info == NULL || !src->valid)
        {
          upstream_ok = FALSE;
          continue;
        }
      if (p.output >= src->n_outputs)
        {
          node_fail (g, n, "input %d refers to output %d of '%s', which has %d output%s", k + 1,
                     p.output, src->id, src->n_outputs, src->n_outputs == 1 ? "" : "s");
          return;
        }
      in[k] = src->out_info[p.output];
    }
  if (!upstream_ok)
    return;   /* invalid, silently: the cause is reported upstream */

  int n_in = n->n_inputs;
  if (def->params)
    {
      n->n_params = def->params (n->resolved, in, n_in, n->params, &error);
      if (n->n_params < 0)
        {
          n->n_params = 0;
          node_fail (g, n, "%s", error->message);
          return;
        }
      for (int k = 0; k < n->n_params; k++)
        {
          if (!tw_tinfo_nbytes (&n->params[k].info, 1, NULL))
            {
              g_autofree char *s = tw_shape_to_string (n->params[k].info.ndim,
                                                       n->params[k].info.dims);
              node_fail (g, n, "%s: its %s would be %s, %s", def->name, n->params[k].suffix, s,
                         TOO_LARGE);
              n->n_params = 0;
              return;
            }
          in[n_in + k] = n->params[k].info;
        }
    }
  if (!def->infer (n->resolved, in, n_in + n->n_params, n->out_info, &error))
    {
      node_fail (g, n, "%s", error->message);
      return;
    }
  if (def->flags & TW_OP_SOURCE)
    substitute_batch (&n->out_info[0], batch);
  /* The one check every op gets: what an op's own attributes checks missed,
   * a size that overflows never reaches an executor. */
  for (int k = 0; k < n->n_outputs; k++)
    if (!tw_tinfo_nbytes (&n->out_info[k], batch, NULL))
      {
        g_autofree char *s = tw_tinfo_to_string (&n->out_info[k]);
        if (batch > 0)
          node_fail (g, n, "%s: output %d would be %s at batch %" G_GINT64_FORMAT ", %s",
                     def->name, k, s, batch, TOO_LARGE);
        else
          node_fail (g, n, "%s: output %d would be %s, %s", def->name, k, s, TOO_LARGE);
        return;
      }
  if (def->cost)
    def->cost (n->resolved, in, n_in + n->n_params, n->out_info, n->n_outputs, &n->cost);
  n->valid = TRUE;
}

/* Parameters of nodes sharing a scope must agree in count and shape. */
static void
check_shared_params (tw_graph *g)
{
  for (guint i = 0; i < g->nodes->len; i++)
    {
      tw_node *n = g_ptr_array_index (g->nodes, i);
      if (n->share == NULL || !n->valid)
        continue;
      tw_node *owner = tw_graph_find (g, n->share);
      if (owner == NULL)
        {
          node_fail (g, n, "shares parameters with '%s', which is not a node", n->share);
          continue;
        }
      if (owner->share != NULL)
        {
          node_fail (g, n, "shares parameters with '%s', which itself shares with '%s'; name '%s'",
                     owner->id, owner->share, owner->share);
          continue;
        }
      if (!owner->valid)
        continue;
      if (owner->n_params != n->n_params)
        {
          node_fail (g, n, "shares parameters with '%s' but needs %d parameters, not %d",
                     owner->id, n->n_params, owner->n_params);
          continue;
        }
      for (int k = 0; k < n->n_params; k++)
        if (!tw_tinfo_equal (&owner->params[k].info, &n->params[k].info))
          {
            g_autofree char *a = tw_tinfo_to_string (&n->params[k].info);
            g_autofree char *b = tw_tinfo_to_string (&owner->params[k].info);
            node_fail (g, n, "shares parameters with '%s' but its %s would be %s, not %s",
                       owner->id, n->params[k].suffix, a, b);
            break;
          }
    }
}

/* The graph's outputs name existing outputs of nodes. */
static void
check_outputs (tw_graph *g)
{
  for (char **o = g->outputs; *o; o++)
    {
      tw_port p = tw_graph_resolve (g, *o);
      char *msg = NULL;
      if (p.node < 0)
        msg = g_strdup_printf ("output '%s' is not a node", *o);
      else
        {
          const tw_node *n = tw_graph_node (g, p.node);
          /* n_outputs is known once the node's op and attributes resolved. */
          if (n->out_info && p.output >= n->n_outputs)
            msg = g_strdup_printf ("output '%s' refers to output %d of '%s', which has %d "
                                   "output%s", *o, p.output, n->id, n->n_outputs,
                                   n->n_outputs == 1 ? "" : "s");
        }
      if (msg)
        {
          tw_diag d = { NULL, msg };
          g_array_append_val (g->diags, d);
        }
    }
}

int
tw_graph_infer_batch (tw_graph *g, int64_t batch)
{
  g_autoptr (GArray) order = NULL;
  g_autoptr (GError) error = NULL;

  g_array_set_size (g->diags, 0);
  for (guint i = 0; i < g->nodes->len; i++)
    node_clear_inferred (g_ptr_array_index (g->nodes, i));

  g_autofree gboolean *stuck = g_new0 (gboolean, MAX (g->nodes->len, 1));
  if (!topo_sort (g, &order, stuck, &error))
    {
      /* Report the cycle on each node in (or after) it; infer nothing else. */
      for (guint i = 0; i < g->nodes->len; i++)
        if (stuck[i])
          node_fail (g, g_ptr_array_index (g->nodes, i), "%s", error->message);
      return (int) g->diags->len;
    }
  for (guint k = 0; k < order->len; k++)
    infer_node (g, tw_graph_node (g, g_array_index (order, int, k)), batch);
  check_shared_params (g);

  check_outputs (g);
  return (int) g->diags->len;
}

int
tw_graph_infer (tw_graph *g)
{
  return tw_graph_infer_batch (g, 0);
}

const GArray *
tw_graph_diagnostics (const tw_graph *g)
{
  return g->diags;
}

char *
tw_graph_errors_to_string (const tw_graph *g)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < g->diags->len; i++)
    {
      const tw_diag *d = &g_array_index (g->diags, tw_diag, i);
      if (s->len)
        g_string_append_c (s, '\n');
      if (d->node_id)
        g_string_append_printf (s, "node %s: %s", d->node_id, d->message);
      else
        g_string_append (s, d->message);
    }
  return g_string_free (s, FALSE);
}

tw_node *
tw_graph_find_source (const tw_graph *g, const char *role)
{
  for (guint i = 0; i < g->nodes->len; i++)
    {
      tw_node *n = g_ptr_array_index (g->nodes, i);
      if (n->op && (n->op->flags & TW_OP_SOURCE)
          && g_strcmp0 (tw_attrs_get_string (n->attrs, "role", "data"), role) == 0)
        return n;
    }
  return NULL;
}

void
tw_graph_set_loss (tw_graph *g, const char *id)
{
  g_free (g->loss);
  g->loss = g_strdup (id);
}

const char *
tw_graph_get_loss (const tw_graph *g)
{
  return g->loss;
}

gboolean
tw_graph_check_runnable (const tw_graph *g, GError **error)
{
  if (tw_graph_find_source (g, "data") == NULL)
    {
      g_set_error (error, TW_GRAPH_ERROR, TW_GRAPH_ERROR_INVALID,
                   "the graph has no input node with role \"data\" (an \"input\" node whose "
                   "attrs say \"role\": \"data\", the default)");
      return FALSE;
    }
  const tw_node *loss = tw_graph_find_loss (g);
  if (loss && loss_prediction_ref (loss) == NULL)
    {
      const char *port = loss->op->input_names ? loss->op->input_names[0] : "first";
      g_set_error (error, TW_GRAPH_ERROR, TW_GRAPH_ERROR_INVALID,
                   "node %s: nothing is connected to its %s input, so the model has no "
                   "prediction to train or to score: connect the layer that predicts",
                   loss->id, port);
      return FALSE;
    }
  if (tw_graph_outputs (g)[0] == NULL)
    {
      g_set_error (error, TW_GRAPH_ERROR, TW_GRAPH_ERROR_INVALID,
                   "the graph has no outputs: no node is marked as one (\"outputs\": "
                   "[\"NODE\"] in the model's \"graph\"; in the editor, right-click the node "
                   "› Model Output) and there is no loss whose prediction would be");
      return FALSE;
    }
  return TRUE;
}

tw_node *
tw_graph_find_loss (const tw_graph *g)
{
  if (g->loss)
    {
      tw_node *n = tw_graph_find (g, g->loss);
      if (n && n->op && (n->op->flags & TW_OP_LOSS))
        return n;
    }
  for (guint i = 0; i < g->nodes->len; i++)
    {
      tw_node *n = g_ptr_array_index (g->nodes, i);
      if (n->op && (n->op->flags & TW_OP_LOSS))
        return n;
    }
  return NULL;
}

int64_t
tw_graph_param_count (const tw_graph *g)
{
  int64_t total = 0;
  for (guint i = 0; i < g->nodes->len; i++)
    {
      tw_node *n = g_ptr_array_index (g->nodes, i);
      if (n->share)
        continue;
      for (int k = 0; k < n->n_params; k++)
        if (n->params[k].trainable)
          total += tw_tinfo_numel (&n->params[k].info, NULL);
    }
  return total;
}

GPtrArray *
tw_graph_param_nodes (const tw_graph *g, const char *const *names, guint *n_found)
{
  GPtrArray *ids = g_ptr_array_new ();
  g_autoptr (GHashTable) wanted = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr (GHashTable) found = g_hash_table_new (g_str_hash, g_str_equal);
  for (const char *const *n = names; n && *n; n++)
    g_hash_table_add (wanted, (gpointer) *n);
  for (guint i = 0; i < g->nodes->len && g_hash_table_size (wanted) > 0; i++)
    {
      tw_node *n = g_ptr_array_index (g->nodes, i);
      gboolean owns = FALSE;
      for (int k = 0; k < n->n_params; k++)
        {
          g_autofree char *name = tw_node_param_name (n, k);
          const char *key = NULL;
          if (g_hash_table_lookup_extended (wanted, name, (gpointer *) &key, NULL))
            {
              g_hash_table_add (found, (gpointer) key);
              owns = TRUE;
            }
        }
      if (owns)
        g_ptr_array_add (ids, n->id);
    }
  if (n_found)
    *n_found = g_hash_table_size (found);
  return ids;
}

double
tw_graph_flops (const tw_graph *g)
{
  double f = 0;
  for (guint i = 0; i < g->nodes->len; i++)
    f += ((tw_node *) g_ptr_array_index (g->nodes, i))->cost.flops;
  return f;
}

gboolean
tw_graph_add_sequential (tw_graph *g, const char *input, const tw_layer *layers, int n_layers,
                         GError **error)
{
  const char *prev = input;
  for (int i = 0; i < n_layers; i++)
    {
      const char *in[] = { prev, NULL };
      if (!tw_graph_add_node (g, layers[i].id, layers[i].op, layers[i].attrs,
                              prev ? in : NULL, error))
        return FALSE;
      prev = layers[i].id;
    }
  return TRUE;
}

/* ---- For the editor: insertion at a position, incremental inference ---- */

tw_node *
tw_graph_insert_node (tw_graph *g, int index, const char *id, const char *op_name,
                      const tw_attrs *attrs, const char *const *inputs, GError **error)
{
  g_return_val_if_fail (index >= 0 && index <= (int) g->nodes->len, NULL);
  tw_node *n = tw_graph_add_node (g, id, op_name, attrs, inputs, error);
  if (n == NULL || index == (int) g->nodes->len - 1)
    return n;
  g_ptr_array_steal_index (g->nodes, g->nodes->len - 1);
  g_ptr_array_insert (g->nodes, index, n);
  g->index_dirty = TRUE;
  return n;
}

void
tw_graph_remove_node_at (tw_graph *g, int index)
{
  g_return_if_fail (index >= 0 && index < (int) g->nodes->len);
  g_ptr_array_remove_index (g->nodes, index);
  g->index_dirty = TRUE;
}

/* tw_ref_parse without allocating: *id points into ref or into buf.
 * Returns 1, 0 when malformed, -1 when the id does not fit buf. */
static int
ref_split (const char *ref, char *buf, gsize size, const char **id, int *output)
{
  const char *colon = ref ? strrchr (ref, ':') : NULL;
  if (ref == NULL || *ref == '\0' || colon == ref)
    return 0;
  if (colon == NULL)
    {
      *id = ref;
      *output = 0;
      return 1;
    }
  char *end = NULL;
  guint64 k = g_ascii_strtoull (colon + 1, &end, 10);
  if (end == colon + 1 || *end != '\0' || k > TW_MAX_OUTPUTS)
    return 0;
  if ((gsize) (colon - ref) >= size)
    return -1;
  memcpy (buf, ref, colon - ref);
  buf[colon - ref] = '\0';
  *id = buf;
  *output = (int) k;
  return 1;
}

/* What consumers of a node read of it during inference. */
static gboolean
outputs_same (gboolean valid_a, int n_a, const tw_tinfo *a, const tw_node *b)
{
  gboolean usable_a = valid_a && a != NULL, usable_b = b->valid && b->out_info != NULL;
  if (usable_a != usable_b)
    return FALSE;
  if (!usable_a)
    return TRUE;
  if (n_a != b->n_outputs)
    return FALSE;
  for (int k = 0; k < n_a; k++)
    if (!tw_tinfo_equal (&a[k], &b->out_info[k]))
      return FALSE;
  return TRUE;
}

/* in_ports of a node kept from the last inference, with node indices as they
 * are now: the entries infer_node would have filled. */
static void
refresh_in_ports (tw_graph *g, tw_node *n, const tw_port *ports)
{
  const tw_op_def *def = n->op;
  if (n->out_info == NULL || def == NULL
      || n->n_inputs < def->min_inputs
      || (def->max_inputs >= 0 && n->n_inputs > def->max_inputs)
      || n->n_inputs > TW_MAX_INPUTS)
    return;
  for (int k = 0; k < n->n_inputs; k++)
    {
      tw_port p = ports[k];
      n->in_ports[k] = p;
      if (p.node < 0)
        return;
      tw_node *src = tw_graph_node (g, p.node);
      if (src->out_info == NULL || !src->valid)
        continue;
      if (p.output >= src->n_outputs)
        return;
    }
}

int
tw_graph_infer_from (tw_graph *g, const char *const *changed_ids)
{
  int n = (int) g->nodes->len;
  char buf[256];

  rebuild_index (g);
  g_autoptr (GHashTable) changed = g_hash_table_new (g_str_hash, g_str_equal);
  for (int i = 0; changed_ids && changed_ids[i]; i++)
    g_hash_table_add (changed, (gpointer) changed_ids[i]);

  /* Resolve every input once (CSR: ports[start[i] .. start[i + 1])), noting
   * the nodes that refer to a changed id, resolved or not. */
  g_autofree int *start = g_new (int, n + 1);
  start[0] = 0;
  for (int i = 0; i < n; i++)
    start[i + 1] = start[i] + tw_graph_node (g, i)->n_inputs;
  g_autofree tw_port *ports = g_new (tw_port, MAX (start[n], 1));
  g_autofree guint8 *dirty = g_new0 (guint8, MAX (n, 1));
  g_autofree int *indeg = g_new0 (int, MAX (n, 1));
  g_autofree int *succ_start = g_new0 (int, n + 1);
  for (int i = 0; i < n; i++)
    {
      tw_node *nd = tw_graph_node (g, i);
      if (nd->in_ports == NULL || g_hash_table_contains (changed, nd->id) || nd->share)
        dirty[i] = 1;
      for (int k = 0; k < nd->n_inputs; k++)
        {
          const char *id;
          tw_port p = { -1, 0 };
          int r = ref_split (nd->inputs[k], buf, sizeof buf, &id, &p.output);
          if (r > 0)
            {
              p.node = GPOINTER_TO_INT (g_hash_table_lookup (g->index, id)) - 1;
              if (g_hash_table_size (changed) && g_hash_table_contains (changed, id))
                dirty[i] = 1;
            }
          else if (r < 0)
            {
              /* A very long "id:k": the slow path, always re-inferred. */
              p = tw_graph_resolve (g, nd->inputs[k]);
              dirty[i] = 1;
            }
          ports[start[i] + k] = p;
          if (p.node >= 0)
            {
              succ_start[p.node + 1]++;
              indeg[i]++;
            }
        }
    }
  for (int i = 0; i < n; i++)
    succ_start[i + 1] += succ_start[i];
  g_autofree int *succ = g_new (int, MAX (succ_start[n], 1));
  g_autofree int *fill = g_memdup2 (succ_start, sizeof (int) * (n + 1));
  for (int i = 0; i < n; i++)
    for (int k = start[i]; k < start[i + 1]; k++)
      if (ports[k].node >= 0)
        succ[fill[ports[k].node]++] = i;

  g_autoptr (GArray) order = g_array_sized_new (FALSE, FALSE, sizeof (int), n);
  g_autoptr (GArray) heap = g_array_new (FALSE, FALSE, sizeof (int));
  for (int i = 0; i < n; i++)
    if (indeg[i] == 0)
      heap_push (heap, i);
  while (heap->len > 0)
    {
      int i = heap_pop (heap);
      g_array_append_val (order, i);
      for (int s = succ_start[i]; s < succ_start[i + 1]; s++)
        if (--indeg[succ[s]] == 0)
          heap_push (heap, succ[s]);
    }
  if ((int) order->len < n)
    return tw_graph_infer (g);

  /* Re-infer in topological order what changed or sees a changed input. */
  g_autofree guint8 *out_changed = g_new0 (guint8, MAX (n, 1));
  for (guint o = 0; o < order->len; o++)
    {
      int i = g_array_index (order, int, o);
      tw_node *nd = tw_graph_node (g, i);
      for (int k = start[i]; k < start[i + 1] && !dirty[i]; k++)
        if (ports[k].node >= 0 && out_changed[ports[k].node])
          dirty[i] = 1;
      if (!dirty[i])
        {
          refresh_in_ports (g, nd, ports + start[i]);
          continue;
        }
      gboolean old_valid = nd->valid;
      int old_n = nd->n_outputs;
      g_autofree tw_tinfo *old_info = g_steal_pointer (&nd->out_info);
      gboolean was_inferred = nd->in_ports != NULL;
      /* Resolved attrs depend on the node alone: kept unless it changed. */
      tw_attrs *resolved = NULL;
      if (was_inferred && !g_hash_table_contains (changed, nd->id))
        resolved = g_steal_pointer (&nd->resolved);
      node_clear_inferred (nd);
      nd->resolved = resolved;
      infer_node (g, nd, 0);
      out_changed[i] = !was_inferred || !outputs_same (old_valid, old_n, old_info, nd);
    }

  /* Diagnostics as a full inference orders them: node errors in topological
   * order, then shared parameters, then the outputs. */
  g_array_set_size (g->diags, 0);
  for (guint o = 0; o < order->len; o++)
    {
      tw_node *nd = tw_graph_node (g, g_array_index (order, int, o));
      if (nd->error)
        {
          tw_diag d = { nd->id, g_strdup (nd->error) };
          g_array_append_val (g->diags, d);
        }
    }
  check_shared_params (g);
  check_outputs (g);
  return (int) g->diags->len;
}
