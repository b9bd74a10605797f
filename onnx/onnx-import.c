/* onnx-import.c — an ONNX graph as a twb model (see onnx-import.h). */
#define G_LOG_DOMAIN "tw-onnx"

#include "onnx/onnx-import-private.h"

#include "engine/safetensors.h"

#include <math.h>
#include <string.h>

static void
val_free (gpointer p)
{
  tw_imp_val *v = p;
  g_free (v->ref);
  g_free (v->init_name);
  if (v->c)
    tw_tensor_unref (v->c);
  g_free (v);
}

void
tw_imp_problem (tw_imp *im, const char *fmt, ...) G_GNUC_PRINTF (2, 3);

void
tw_imp_problem (tw_imp *im, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  if (im->n == NULL)
    {
      /* Not a node's: the graph outputs'. */
      g_ptr_array_add (im->problems, g_strdup_printf ("graph outputs: %s", msg));
      return;
    }
  g_autofree char *label = tw_onnx_node_label (im->n, im->index);
  if (im->failed)
    {
      /* One entry per node: further problems of the same node join it. */
      char *last = g_ptr_array_index (im->problems, im->problems->len - 1);
      im->problems->pdata[im->problems->len - 1] = g_strdup_printf ("%s, %s", last, msg);
      g_free (last);
      return;
    }
  g_ptr_array_add (im->problems,
                   g_strdup_printf ("'%s' (%s, opset %" G_GINT64_FORMAT "): %s", label,
                                    im->n->op_type ? im->n->op_type : "no op_type", im->opset,
                                    msg));
  im->failed = TRUE;
}

const tw_imp_val *
tw_imp_input (tw_imp *im, gsize i)
{
  if (i >= im->n->n_input || im->n->input[i][0] == '\0')
    return NULL;
  return g_hash_table_lookup (im->vals, im->n->input[i]);
}

static void
set_val (tw_imp *im, const char *name, tw_imp_kind kind, const char *ref, tw_tensor *c)
{
  if (name == NULL || name[0] == '\0')
    {
      if (c)
        tw_tensor_unref (c);
      return;
    }
  tw_imp_val *v = g_new0 (tw_imp_val, 1);
  v->kind = kind;
  v->ref = g_strdup (ref);
  v->c = c;
  g_hash_table_replace (im->vals, g_strdup (name), v);
}

void
tw_imp_set_const (tw_imp *im, int k, tw_tensor *c)
{
  set_val (im, (gsize) k < im->n->n_output ? im->n->output[k] : NULL, TW_IMP_CONST, NULL, c);
}

gboolean
tw_imp_is_used (tw_imp *im, gsize k)
{
  return k < im->n->n_output && im->n->output[k][0] != '\0'
         && g_hash_table_contains (im->uses, im->n->output[k]);
}

/* ---- ids ------------------------------------------------------------------ */

static char *
sanitise (const char *s)
{
  GString *o = g_string_new (NULL);
  for (const char *p = s; *p; p++)
    g_string_append_c (o, g_ascii_isalnum (*p) || *p == '_' || *p == '.' || *p == '-' ? *p : '_');
  return g_string_free (o, FALSE);
}

/* Module paths of PyTorch's scoped names (each part repeats its parent's
 * name as a prefix when the module is an item of a container):
 * "/layer1/layer1.0/downsample/downsample.0/Conv" → "layer1.0.downsample.0";
 * "/layer1/layer1.0/relu_1/Relu" → "layer1.0.relu_1"; "/layer1/layer1.0/Add"
 * → "layer1.0.add" (a stage's own op gets the op's name, unless the node has
 * parameters: then the module is theirs, "/features/features.0/features.0.0/Conv"
 * → "features.0.0"); other names are kept ("Conv_3"). */
static char *
id_from_name (const Onnx__NodeProto *n, gsize index, gboolean owner)
{
  if (n->name == NULL || n->name[0] == '\0')
    {
      g_autofree char *op = g_ascii_strdown (n->op_type, -1);
      return g_strdup_printf ("%s_%" G_GSIZE_FORMAT, op, index);
    }
  if (n->name[0] != '/')
    return sanitise (n->name);
  g_auto (GStrv) parts = g_strsplit (n->name + 1, "/", -1);
  guint np = g_strv_length (parts);
  GString *path = g_string_new (NULL);
  const char *prev = NULL;
  for (guint i = 0; i + 1 < np; i++)
    {
      const char *c = parts[i];
      if (prev && g_str_has_prefix (c, prev) && c[strlen (prev)] == '.')
        g_string_append (path, c + strlen (prev));
      else
        g_string_append_printf (path, "%s%s", path->len ? "." : "", c);
      prev = c;
    }
  g_autofree char *last = g_ascii_strdown (np > 0 ? parts[np - 1] : n->op_type, -1);
  const char *tail = strrchr (path->str, '.');
  tail = tail ? tail + 1 : path->str;
  g_autofree char *id = NULL;
  if (path->len == 0)
    id = g_strdup (last);
  else if (g_ascii_isdigit (tail[0]) && !owner)
    id = g_strdup_printf ("%s.%s", path->str, last);
  else
    id = g_strdup (path->str);
  g_string_free (path, TRUE);
  return sanitise (id);
}

char *
tw_imp_unique_id (tw_imp *im, const char *base)
{
  if (base[0] == '\0')
    base = "node";
  if (!g_hash_table_contains (im->ids, base))
    {
      g_hash_table_add (im->ids, g_strdup (base));
      return g_strdup (base);
    }
  /* base_2, base_3, ...: each base goes on from the last suffix it gave, so
   * n nodes of one name cost O(n), not O(n^2) probes; a suffix taken by a
   * node named so is skipped (each taken id is skipped once at most). */
  gpointer next = g_hash_table_lookup (im->id_next, base);
  guint64 k = next ? *(guint64 *) next : 2;
  char *id = NULL;
  do
    {
      g_free (id);
      id = g_strdup_printf ("%s_%" G_GUINT64_FORMAT, base, k++);
    }
  while (g_hash_table_contains (im->ids, id));
  guint64 *stored = g_new (guint64, 1);
  *stored = k;
  g_hash_table_replace (im->id_next, g_strdup (base), stored);
  g_hash_table_add (im->ids, g_strdup (id));
  return id;
}

/* The id of the current node: the scope of its weight initializer when it
 * is named "<scope>.weight", else from the node's name.  A weight another
 * node took first makes this node share that node's parameters (a shared
 * layer: *share is set to the scope, the id comes from the node's name). */
static char *
node_id (tw_imp *im, const tw_imp_val *weight, const char **share)
{
  g_autofree char *base = NULL;
  *share = weight && weight->init_name ? g_hash_table_lookup (im->weight_scope, weight->init_name)
                                       : NULL;
  if (*share == NULL && weight && weight->init_name && g_str_has_suffix (weight->init_name, ".weight")
      && strlen (weight->init_name) > strlen (".weight") && !strchr (weight->init_name, ':'))
    {
      g_autofree char *scope = g_strndup (weight->init_name,
                                          strlen (weight->init_name) - strlen (".weight"));
      base = sanitise (scope);
    }
  else
    base = id_from_name (im->n, im->index, weight != NULL);
  return tw_imp_unique_id (im, base);
}

/* Add the twb node for the current ONNX node; its outputs become TW_IMP_DYN.
 * inputs: NULL-terminated references.  Returns the node (borrowed). */
static tw_node *
emit (tw_imp *im, const tw_imp_val *weight, const char *op, tw_attrs *attrs, const char *const *inputs,
      int n_out)
{
  const char *share = NULL;
  g_autofree char *id = node_id (im, weight, &share);
  g_autoptr (GError) error = NULL;
  tw_node *node = tw_graph_add_node (im->graph, id, op, attrs, inputs, &error);
  tw_attrs_free (attrs);
  if (node == NULL)
    {
      tw_imp_problem (im, "%s", error->message);
      return NULL;
    }
  if (share)
    tw_graph_set_share (im->graph, node, share);
  else if (weight && weight->init_name)
    g_hash_table_insert (im->weight_scope, g_strdup (weight->init_name), g_strdup (id));
  for (int k = 0; k < n_out && (gsize) k < im->n->n_output; k++)
    {
      g_autofree char *ref = k == 0 ? g_strdup (id) : g_strdup_printf ("%s:%d", id, k);
      set_val (im, im->n->output[k], TW_IMP_DYN, ref, NULL);
    }
  return node;
}

tw_node *
tw_imp_emitn (tw_imp *im, const char *op, tw_attrs *attrs, const char *const *inputs, int n_out)
{
  return emit (im, NULL, op, attrs, inputs, n_out);
}

tw_node *
tw_imp_emit1 (tw_imp *im, const tw_imp_val *weight, const char *op, tw_attrs *attrs, const tw_imp_val *x)
{
  const char *in[] = { x->ref, NULL };
  return emit (im, weight, op, attrs, in, 1);
}

static gboolean
same_values (const tw_tensor *a, const tw_tensor *b)
{
  if (a->dtype != b->dtype || a->ndim != b->ndim
      || memcmp (a->shape, b->shape, sizeof (int64_t) * a->ndim) != 0)
    return FALSE;
  for (int64_t i = 0, n = tw_tensor_numel (a); i < n; i++)
    if (tw_tensor_get_flat (a, i) != tw_tensor_get_flat (b, i))
      return FALSE;
  return TRUE;
}

void
tw_imp_add_weight (tw_imp *im, const tw_node *node, const char *suffix, tw_tensor *t)
{
  const char *scope = tw_node_scope (node);
  g_autofree char *name = g_strdup_printf ("%s.%s", scope, suffix);
  const tw_tensor *have = node->share ? g_hash_table_lookup (im->weights, name) : NULL;
  if (have == NULL)
    {
      g_hash_table_replace (im->weights, g_steal_pointer (&name), t);
      return;
    }
  /* A shared layer: its parameters are those of the node it shares. */
  if (!same_values (have, t))
    tw_imp_problem (im, "it uses the weight of '%s' but another %s (twb shares a layer's "
                    "parameters whole)", scope, suffix);
  tw_tensor_unref (t);
}

/* Integers f32 holds exactly (the constant op's store is f32). */
#define F32_EXACT_INT 16777216.0

const char *
tw_imp_ref (tw_imp *im, const tw_imp_val *v)
{
  if (v == NULL || v->kind == TW_IMP_BAD)
    return NULL;
  if (v->kind == TW_IMP_DYN || v->ref != NULL)
    return v->ref;
  const tw_tensor *c = v->c;
  if (!tw_dtype_is_float (c->dtype))
    for (int64_t i = 0, n = tw_tensor_numel (c); i < n; i++)
      if (fabs (tw_tensor_get_flat (c, i)) > F32_EXACT_INT)
        {
          tw_imp_problem (im, "a constant integer operand holding %.0f (twb's constants hold "
                          "integers up to 2^24)", tw_tensor_get_flat (c, i));
          return NULL;
        }
  /* A twb constant exported keeps its id: "c.value" → node c. */
  g_autofree char *stem = v->init_name && g_str_has_suffix (v->init_name, ".value")
                              && strlen (v->init_name) > strlen (".value")
                            ? g_strndup (v->init_name, strlen (v->init_name) - strlen (".value"))
                            : g_strdup (v->init_name);
  g_autofree char *base = stem ? sanitise (stem) : g_strdup ("constant");
  g_autofree char *id = tw_imp_unique_id (im, base);
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_ints (a, "shape", c->ndim, c->shape);
  tw_attrs_set_string (a, "dtype", tw_dtype_name (c->dtype));
  const char *none[] = { NULL };
  g_autoptr (GError) error = NULL;
  tw_node *node = tw_graph_add_node (im->graph, id, "constant", a, none, &error);
  tw_attrs_free (a);
  if (node == NULL)
    {
      tw_imp_problem (im, "%s", error->message);
      return NULL;
    }
  tw_imp_add_weight (im, node, "value", tw_imp_as_f32 (c));
  /* Made once: later uses of the value share the node. */
  ((tw_imp_val *) v)->ref = g_strdup (id);
  return v->ref;
}

const char *
tw_imp_ref_input (tw_imp *im, gsize i, const char *what)
{
  const tw_imp_val *v = tw_imp_input (im, i);
  if (v == NULL)
    {
      tw_imp_problem (im, "%s is missing", what);
      return NULL;
    }
  return tw_imp_ref (im, v);
}

/* ---- attributes -------------------------------------------------------------- */

/* The inferred type of a dynamic value (the batch symbolic). */
/* ---- shapes of dynamic values -------------------------------------------------- */

gboolean
tw_imp_dyn_info (tw_imp *im, const tw_imp_val *v, tw_tinfo *out)
{
  tw_graph_infer (im->graph);
  tw_port p = tw_graph_resolve (im->graph, v->ref);
  tw_node *node = p.node >= 0 ? tw_graph_node (im->graph, p.node) : NULL;
  if (node == NULL || !node->valid || p.output >= node->n_outputs)
    {
      /* Name the twb node upstream whose own inference failed. */
      tw_node *cur = node;
      for (int steps = 0; cur && !cur->error && steps < tw_graph_n_nodes (im->graph); steps++)
        {
          tw_node *next = NULL;
          for (int i = 0; i < cur->n_inputs && next == NULL && cur->in_ports; i++)
            {
              tw_node *up = cur->in_ports[i].node >= 0 ? tw_graph_node (im->graph, cur->in_ports[i].node) : NULL;
              if (up && !up->valid)
                next = up;
            }
          cur = next;
        }
      if (cur && cur->error)
        tw_imp_problem (im, "the shape of its input '%s' is not known (node %s: %s)", v->ref, cur->id,
                        cur->error);
      else
        tw_imp_problem (im, "the shape of its input '%s' is not known", v->ref);
      return FALSE;
    }
  *out = node->out_info[p.output];
  return TRUE;
}

int
tw_imp_norm_axis (tw_imp *im, int64_t axis, int rank)
{
  if (axis < -rank || axis >= rank)
    {
      tw_imp_problem (im, "axis %" G_GINT64_FORMAT " is outside a rank-%d tensor", axis, rank);
      return -1;
    }
  return (int) (axis < 0 ? axis + rank : axis);
}

/* ---- translations ------------------------------------------------------------ */

/* The dynamic data input 0 of the current node, or NULL (a problem reported). */
const tw_imp_val *
tw_imp_dyn_input (tw_imp *im, gsize i, const char *what)
{
  const tw_imp_val *v = tw_imp_input (im, i);
  if (v == NULL || v->kind != TW_IMP_DYN)
    {
      tw_imp_problem (im, "%s must be computed from the graph input (a constant one is not supported)",
               what);
      return NULL;
    }
  return v;
}

gboolean
tw_imp_scalar_of (const tw_imp_val *v, double *out)
{
  if (v == NULL || v->kind != TW_IMP_CONST || tw_tensor_numel (v->c) != 1
      || !tw_dtype_is_float (v->c->dtype))
    return FALSE;
  *out = tw_tensor_get_flat (v->c, 0);
  return TRUE;
}

/* a op b with constants as constant nodes (in the ONNX order). */
static void
binary_const (tw_imp *im, const tw_op_def *def)
{
  const char *ra = tw_imp_ref_input (im, 0, "A"), *rb = ra ? tw_imp_ref_input (im, 1, "B") : NULL;
  if (ra == NULL || rb == NULL)
    return;
  const char *in[] = { ra, rb, NULL };
  emit (im, NULL, def->name, NULL, in, 1);
}

/* A registry op whose inputs are all constants, run now: its outputs
 * become constants (folded like the shape chains).  FALSE when an input is
 * not a constant, or the op cannot run here (the node is then emitted, and
 * reports its own error). */
static gboolean
eval_const (tw_imp *im, const tw_op_def *def, const tw_attrs *attrs)
{
  gsize n_in = im->n->n_input;
  if (n_in == 0 || n_in > TW_MAX_INPUTS || def->params != NULL || def->forward == NULL
      || (def->flags & (TW_OP_LOSS | TW_OP_SOURCE)))
    return FALSE;
  tw_tensor *in[TW_MAX_INPUTS];
  for (gsize i = 0; i < n_in; i++)
    {
      const tw_imp_val *v = tw_imp_input (im, i);
      if (v == NULL || v->kind != TW_IMP_CONST || tw_tensor_numel (v->c) > TW_IMP_MAX_FOLDED
          || !tw_tensor_is_contiguous (v->c))
        return FALSE;
      in[i] = v->c;
    }
  g_autoptr (GError) error = NULL;
  tw_attrs *res = tw_op_resolve_attrs (def, attrs, &error);
  if (res == NULL)
    return FALSE;
  int n_out = tw_op_num_outputs (def, res);
  tw_tensor *out[TW_MAX_OUTPUTS] = { NULL };
  tw_kctx ctx = { .num_threads = 1 };
  /* The outputs' sizes first: inputs within TW_IMP_MAX_FOLDED may broadcast
   * to far more ([65536, 1] + [1, 65536]: 2^32 values, 16 GB computed and
   * then dropped); those are left to run time. */
  tw_tinfo info_in[TW_MAX_INPUTS], info_out[TW_MAX_OUTPUTS];
  gboolean small = n_out >= 1 && n_out <= TW_MAX_OUTPUTS;
  for (gsize i = 0; small && i < n_in; i++)
    tw_tinfo_from_tensor (&info_in[i], in[i]);
  memset (info_out, 0, sizeof info_out);
  small = small && def->infer (res, info_in, (int) n_in, info_out, NULL);
  for (int k = 0; small && k < n_out; k++)
    {
      gboolean symbolic;
      int64_t numel = tw_tinfo_numel (&info_out[k], &symbolic);
      small = !symbolic && numel <= TW_IMP_MAX_FOLDED;
    }
  gboolean ok = small && tw_op_run (def, &ctx, res, in, (int) n_in, out, &error);
  tw_attrs_free (res);
  if (!ok)
    return FALSE;
  for (int k = 0; k < n_out; k++)
    if ((gsize) k < im->n->n_output && tw_tensor_numel (out[k]) <= TW_IMP_MAX_FOLDED)
      tw_imp_set_const (im, k, out[k]);
    else
      tw_tensor_unref (out[k]);
  return TRUE;
}

/* Before opset 7, broadcast=1 with axis: B's dims line up with A's from
 * axis on (B [3] on A [2, 3, 4] at axis 1 is B [3, 1]). */
static void
binary_axis (tw_imp *im, const tw_op_def *def)
{
  const char *ra = tw_imp_ref_input (im, 0, "A"), *rb = ra ? tw_imp_ref_input (im, 1, "B") : NULL;
  if (rb == NULL)
    return;
  tw_imp_val av = { .kind = TW_IMP_DYN, .ref = (char *) ra }, bv = { .kind = TW_IMP_DYN, .ref = (char *) rb };
  tw_tinfo ai, bi;
  if (!tw_imp_dyn_info (im, &av, &ai) || !tw_imp_dyn_info (im, &bv, &bi))
    return;
  int axis = tw_imp_norm_axis (im, tw_imp_attr_int (im, "axis", 0), ai.ndim);
  if (axis < 0)
    return;
  if (axis + bi.ndim > ai.ndim || (ai.ndim > 0 && ai.dims[0] == TW_DIM_N && axis == 0))
    {
      tw_imp_problem (im, "B of rank %d at axis %d of a rank-%d A", bi.ndim, axis, ai.ndim);
      return;
    }
  int64_t dims[TW_MAX_DIMS];
  int nd = ai.ndim - axis;
  for (int d = 0; d < nd; d++)
    dims[d] = d < bi.ndim ? bi.dims[d] : 1;
  const char *rb2 = nd == bi.ndim ? rb : tw_imp_reshape_full (im, &bv, &bi, nd, dims);
  if (rb2)
    emit (im, NULL, def->name, NULL, (const char *const[]) { ra, rb2, NULL }, 1);
}

/* Max / Min of n inputs as a chain of n - 1 binary nodes (one input: itself). */
static void
import_variadic (tw_imp *im, const tw_op_def *def)
{
  const char *acc = tw_imp_ref_input (im, 0, "input 0");
  if (acc == NULL)
    return;
  if (im->n->n_input == 1)
    {
      const tw_imp_val *v = tw_imp_input (im, 0);
      if (v->kind == TW_IMP_DYN)
        set_val (im, im->n->output[0], TW_IMP_DYN, v->ref, NULL);
      else
        tw_imp_set_const (im, 0, tw_tensor_clone (v->c));
      return;
    }
  for (gsize i = 1; i < im->n->n_input; i++)
    {
      const char *b = tw_imp_ref_input (im, i, "every input");
      if (b == NULL)
        return;
      const char *in[] = { acc, b, NULL };
      tw_node *node = emit (im, NULL, def->name, NULL, in, 1);
      if (node == NULL)
        return;
      acc = node->id;
    }
}

static void
import_binary (tw_imp *im, const tw_op_def *def)
{
  const char *op = im->n->op_type;
  static const char *const known_6[] = { "broadcast", "axis", NULL };
  tw_imp_check_attrs (im, im->opset < 7 ? known_6 : NULL);
  if (im->opset < 7 && tw_onnx_attr (im->n, "axis") && tw_imp_attr_int (im, "broadcast", 0) == 1)
    {
      binary_axis (im, def);
      return;
    }
  if ((strcmp (op, "Max") == 0 || strcmp (op, "Min") == 0) && im->n->n_input != 2
      && im->n->n_input > 0)
    {
      import_variadic (im, def);
      return;
    }
  const tw_imp_val *a = tw_imp_input (im, 0), *b = tw_imp_input (im, 1);
  if (a == NULL || b == NULL || im->n->n_input != 2)
    {
      tw_imp_problem (im, "needs two inputs");
      return;
    }
  if (a->kind == TW_IMP_DYN && b->kind == TW_IMP_DYN)
    {
      const char *in[] = { a->ref, b->ref, NULL };
      emit (im, NULL, def->name, NULL, in, 1);
      return;
    }
  if (!im->failed && eval_const (im, def, NULL))
    return;
  gboolean commutes = strcmp (op, "Add") == 0 || strcmp (op, "Mul") == 0;
  if (a->kind == TW_IMP_CONST && commutes)
    {
      const tw_imp_val *t = a;
      a = b, b = t;
    }
  gboolean arith = commutes || strcmp (op, "Sub") == 0 || strcmp (op, "Div") == 0;
  if (a->kind != TW_IMP_DYN)
    {
      binary_const (im, def);
      return;
    }
  /* MatMul + Add → linear with bias. */
  if (strcmp (op, "Add") == 0 && g_hash_table_contains (im->bias_free, a->ref)
      && tw_dtype_is_float (b->c->dtype))
    {
      const char *src = NULL;
      for (gsize i = 0; i < 2; i++)
        {
          const tw_imp_val *v = tw_imp_input (im, i);
          if (v == a)
            src = im->n->input[i];
        }
      tw_node *lin = tw_graph_find (im->graph, a->ref);
      int64_t nout = tw_attrs_get_int (lin->attrs, "out_features", 0);
      guint n_uses = GPOINTER_TO_UINT (g_hash_table_lookup (im->uses, src));
      if (n_uses == 1 && tw_tensor_numel (b->c) == nout
          && (b->c->ndim == 1 || b->c->shape[b->c->ndim - 1] == nout))
        {
          g_autoptr (tw_tensor) bias = tw_imp_bias_vector (im, b->c, nout, 1.0);
          tw_attrs_set_bool (lin->attrs, "bias", TRUE);
          tw_imp_add_weight (im, lin, "bias", g_steal_pointer (&bias));
          g_hash_table_remove (im->bias_free, lin->id);
          set_val (im, im->n->output[0], TW_IMP_DYN, lin->id, NULL);
          return;
        }
    }
  /* A float scalar of no higher rank than a: add_scalar / scale; anything
   * else a constant node. */
  double c;
  tw_tinfo ai;
  if (!arith || !tw_imp_scalar_of (b, &c) || !tw_imp_dyn_info (im, a, &ai) || b->c->ndim > ai.ndim
      || !tw_dtype_is_float (ai.dtype))
    {
      if (!im->failed)
        binary_const (im, def);
      return;
    }
  if (b->c->dtype == TW_F32)
    c = tw_imp_short_double ((float) c);
  tw_attrs *at = tw_attrs_new ();
  const char *twop;
  if (op[0] == 'A' || op[0] == 'S')
    {
      twop = "add_scalar";
      tw_attrs_set_float (at, "value", op[0] == 'A' ? c : -c);
    }
  else
    {
      twop = "scale";
      tw_attrs_set_float (at, "alpha", op[0] == 'M' ? c : 1.0 / c);
    }
  tw_imp_emit1 (im, NULL, twop, at, a);
}

/* x (of fixed shape info) as the whole shape dims[nd], for graphs without a
 * batch dimension: one reshape when dim 0 stays, else unsqueeze → reshape →
 * squeeze (twb's reshape keeps dim 0). */
const char *
tw_imp_reshape_full (tw_imp *im, const tw_imp_val *x, const tw_tinfo *info, int nd,
                     const int64_t *dims)
{
  gboolean keeps0 = info->ndim >= 1 && nd >= 1 && dims[0] == info->dims[0];
  if (nd > TW_MAX_DIMS - (keeps0 ? 0 : 1))
    {
      tw_imp_problem (im, "a rank-%d target shape (twb reshapes to at most %d dims here)", nd,
                      TW_MAX_DIMS - (keeps0 ? 0 : 1));
      return NULL;
    }
  if (keeps0)
    {
      tw_attrs *a = tw_attrs_new ();
      tw_attrs_set_ints (a, "shape", nd - 1, dims + 1);
      tw_node *r = tw_imp_emit1 (im, NULL, "reshape", a, x);
      return r ? r->id : NULL;
    }
  int64_t zero = 0;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_ints (a, "axes", 1, &zero);
  tw_node *u = tw_imp_emit1 (im, NULL, "unsqueeze", a, x);
  if (u == NULL)
    return NULL;
  a = tw_attrs_new ();
  tw_attrs_set_ints (a, "shape", nd, dims);
  const char *in1[] = { u->id, NULL };
  tw_node *r = emit (im, NULL, "reshape", a, in1, 1);
  if (r == NULL)
    return NULL;
  a = tw_attrs_new ();
  tw_attrs_set_ints (a, "axes", 1, &zero);
  const char *in2[] = { r->id, NULL };
  tw_node *q = emit (im, NULL, "squeeze", a, in2, 1);
  return q ? q->id : NULL;
}

static void
import_flatten (tw_imp *im)
{
  static const char *const known[] = { "axis", NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "the input");
  tw_tinfo info;
  if (x == NULL || !tw_imp_dyn_info (im, x, &info))
    return;
  int64_t axis = tw_imp_attr_int (im, "axis", 1);
  if (axis < 0)
    axis += info.ndim;
  if (im->fixed && axis >= 0 && axis <= info.ndim)
    {
      int64_t t[2] = { 1, 1 };
      for (int d = 0; d < info.ndim; d++)
        t[d < axis ? 0 : 1] *= info.dims[d];
      tw_imp_reshape_full (im, x, &info, 2, t);
      return;
    }
  if (axis != 1)
    {
      tw_imp_problem (im, "axis=%" G_GINT64_FORMAT " (twb keeps the batch dimension: axis 1 only)", axis);
      return;
    }
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, "start_dim", 1);
  tw_attrs_set_int (a, "end_dim", -1);
  tw_imp_emit1 (im, NULL, "flatten", a, x);
}

/* ONNX's Reshape (0 copies the input's dim, one -1 is inferred) of a value
 * of fixed shape. */
static void
reshape_fixed (tw_imp *im, const tw_imp_val *x, const tw_tinfo *info, const int64_t *dims, int64_t nd)
{
  if (nd > TW_MAX_DIMS)
    {
      tw_imp_problem (im, "a rank-%" G_GINT64_FORMAT " target shape", nd);
      return;
    }
  int64_t t[TW_MAX_DIMS], have = 1, rest = 1;
  int neg = -1;
  for (int d = 0; d < info->ndim; d++)
    have *= info->dims[d];
  for (int64_t i = 0; i < nd; i++)
    {
      t[i] = dims[i] == 0 && i < info->ndim ? info->dims[i] : dims[i];
      if (t[i] == -1 && neg < 0)
        neg = (int) i;
      else if (t[i] < 0)
        {
          tw_imp_problem (im, "entry %" G_GINT64_FORMAT " of the target shape is %" G_GINT64_FORMAT, i,
                          dims[i]);
          return;
        }
      else
        rest *= t[i];
    }
  if (neg >= 0)
    {
      if (rest == 0 || have % rest != 0)
        {
          tw_imp_problem (im, "the target shape does not fit %" G_GINT64_FORMAT " elements", have);
          return;
        }
      t[neg] = have / rest;
    }
  tw_imp_reshape_full (im, x, info, (int) nd, t);
}

static void
import_reshape (tw_imp *im)
{
  static const char *const known[] = { "allowzero", NULL };
  if (im->opset < 5)
    {
      tw_imp_problem (im, "Reshape before opset 5 (the shape as an attribute)");
      return;
    }
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "data");
  g_autofree int64_t *dims = NULL;
  int64_t nd;
  const tw_imp_val *sv = tw_imp_input (im, 1);
  if (x == NULL)
    return;
  if (sv == NULL || sv->kind != TW_IMP_CONST)
    {
      tw_imp_problem (im, "the shape is computed at run time and could not be folded");
      return;
    }
  if (!tw_imp_const_ints (im, sv, "the shape", &dims, &nd))
    return;
  if (tw_imp_attr_int (im, "allowzero", 0) != 0)
    tw_imp_problem (im, "allowzero=1");
  tw_tinfo info;
  if (im->failed || !tw_imp_dyn_info (im, x, &info))
    return;
  if (im->fixed)
    {
      reshape_fixed (im, x, &info, dims, nd);
      return;
    }
  gboolean rest_neg = FALSE;
  for (int64_t i = 1; i < nd; i++)
    rest_neg |= dims[i] == -1;
  if (nd < 1 || nd - 1 > TW_MAX_DIMS
      || !(dims[0] == TW_IMP_BATCH || dims[0] == 0 || (dims[0] == -1 && !rest_neg)
           || (im->export_batch > 0 && dims[0] == im->export_batch)))
    {
      tw_imp_problem (im, "a target shape that does not keep the batch dimension first");
      return;
    }
  int64_t per[TW_MAX_DIMS];
  for (int64_t i = 1; i < nd; i++)
    {
      if (dims[i] == TW_IMP_BATCH || dims[i] == TW_IMP_UNKNOWN)
        {
          tw_imp_problem (im, "entry %" G_GINT64_FORMAT " of the target shape depends on the batch size", i);
          return;
        }
      per[i - 1] = dims[i] == 0 ? (i < info.ndim ? info.dims[i] : 1) : dims[i];
    }
  /* A -1 resolved from the per-sample size, so that the file says it. */
  int64_t have = 1, rest = 1, neg = -1;
  for (int d = 1; d < info.ndim; d++)
    have *= info.dims[d];
  for (int64_t i = 0; i < nd - 1; i++)
    if (per[i] == -1)
      neg = i;
    else
      rest *= per[i];
  if (neg >= 0 && rest > 0 && have % rest == 0)
    per[neg] = have / rest;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_ints (a, "shape", (int) (nd - 1), per);
  tw_imp_emit1 (im, NULL, "reshape", a, x);
}

int
tw_imp_softmax_axis (tw_imp *im, const tw_tinfo *info)
{
  int ax = tw_imp_norm_axis (im, tw_imp_attr_int (im, "axis", im->opset >= 13 ? -1 : 1), info->ndim);
  if (ax >= 0 && im->opset < 13 && ax != info->ndim - 1)
    {
      tw_imp_problem (im, "axis %d of a rank-%d input before opset 13 (over the flattened trailing dims)",
                      ax, info->ndim);
      return -1;
    }
  return ax;
}

static void
import_softmax (tw_imp *im, const char *twop)
{
  static const char *const known[] = { "axis", NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "the input");
  tw_tinfo info;
  if (x == NULL || !tw_imp_dyn_info (im, x, &info))
    return;
  int ax = tw_imp_softmax_axis (im, &info);
  if (ax < 0)
    return;
  if (ax == 0 && !im->fixed)
    {
      tw_imp_problem (im, "a softmax over the batch dimension");
      return;
    }
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, "axis", ax);
  tw_imp_emit1 (im, NULL, twop, a, x);
}

static void
import_transpose (tw_imp *im)
{
  static const char *const known[] = { "perm", NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "data");
  tw_tinfo info;
  if (x == NULL || !tw_imp_dyn_info (im, x, &info))
    return;
  int64_t perm[TW_MAX_DIMS * 2];
  gsize np = 0;
  if (!tw_imp_attr_ints (im, "perm", 0, 0, perm, &np))
    return;
  if (np == 0)
    for (int i = 0; i < info.ndim; i++)
      perm[np++] = info.ndim - 1 - i;
  if (perm[0] != 0 && !im->fixed)
    {
      tw_imp_problem (im, "a permutation that moves the batch dimension");
      return;
    }
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_ints (a, "perm", (int) np, perm);
  tw_imp_emit1 (im, NULL, "transpose", a, x);
}

static void
import_concat (tw_imp *im)
{
  static const char *const known[] = { "axis", NULL };
  tw_imp_check_attrs (im, known);
  GPtrArray *refs = g_ptr_array_new ();
  for (gsize i = 0; i < im->n->n_input; i++)
    {
      const char *ref = tw_imp_ref_input (im, i, "every input");
      if (ref == NULL)
        break;
      g_ptr_array_add (refs, (gpointer) ref);
    }
  g_ptr_array_add (refs, NULL);
  tw_tinfo info;
  if (!im->failed && tw_imp_dyn_info (im, tw_imp_input (im, 0), &info))
    {
      int ax = tw_imp_norm_axis (im, tw_imp_attr_int (im, "axis", 1), info.ndim);
      if (ax == 0 && !im->fixed)
        tw_imp_problem (im, "a concatenation along the batch dimension");
      else if (ax >= 0)
        {
          tw_attrs *a = tw_attrs_new ();
          tw_attrs_set_int (a, "axis", ax);
          emit (im, NULL, "concat", a, (const char *const *) refs->pdata, 1);
        }
    }
  g_ptr_array_free (refs, TRUE);
}

static void
import_dropout (tw_imp *im)
{
  static const char *const known[] = { "ratio", "seed", NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "data");
  double p = tw_imp_attr_float (im, "ratio", 0.5f);
  const tw_imp_val *r = tw_imp_input (im, 1), *tm = tw_imp_input (im, 2);
  double train = 0;
  if (tm && !(tm->kind == TW_IMP_CONST && tw_tensor_numel (tm->c) == 1
              && (train = tw_tensor_get_flat (tm->c, 0), train == 0)))
    tw_imp_problem (im, "training_mode (the random form; import the inference graph)");
  /* An inference graph of fixed inputs (ONNX's test cases) runs dropout as
   * the identity whatever the ratio, and its mask is all true. */
  if (r && !tw_imp_scalar_of (r, &p) && !im->fixed)
    tw_imp_problem (im, "ratio must be a constant scalar");
  if (tw_imp_is_used (im, 1) && !im->fixed)
    tw_imp_problem (im, "the mask output is used");
  tw_tinfo info;
  if (x == NULL || im->failed || !tw_imp_dyn_info (im, x, &info))
    return;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_float (a, "p", tw_imp_short_double ((float) CLAMP (p, 0.0, 0.99)));
  tw_node *y = tw_imp_emit1 (im, NULL, "dropout", a, x);
  if (y && tw_imp_is_used (im, 1))
    {
      tw_tensor *ones = tw_imp_const_new (im, TW_U8, info.ndim, info.dims, "the dropout mask");
      if (ones)
        {
          tw_tensor_fill (ones, 1.0);
          tw_imp_set_const (im, 1, ones);
        }
    }
}

/* An op the registry maps one to one: no attributes, dynamic inputs only. */
static void
import_direct (tw_imp *im, const tw_op_def *def)
{
  tw_imp_check_attrs (im, NULL);
  if (def->params != NULL || (def->flags & (TW_OP_LOSS | TW_OP_SOURCE)))
    {
      tw_imp_problem (im, "no translation to twb's %s", def->name);
      return;
    }
  int n_in = (int) im->n->n_input;
  if (n_in < def->min_inputs || (def->max_inputs >= 0 && n_in > def->max_inputs))
    {
      tw_imp_problem (im, "%d inputs (twb's %s takes %d..%d)", n_in, def->name, def->min_inputs,
               def->max_inputs);
      return;
    }
  if (!im->failed && eval_const (im, def, NULL))
    return;
  g_autofree const char **refs = g_new0 (const char *, n_in + 1);
  for (int i = 0; i < n_in; i++)
    {
      refs[i] = tw_imp_ref_input (im, i, "every input");
      if (refs[i] == NULL)
        return;
    }
  int n_out = def->n_outputs > 0 ? def->n_outputs : 1;
  for (gsize k = n_out; k < im->n->n_output; k++)
    if (tw_imp_is_used (im, k))
      tw_imp_problem (im, "output %" G_GSIZE_FORMAT " is used (twb's %s has %d)", k, def->name, n_out);
  if (!im->failed)
    emit (im, NULL, def->name, NULL, refs, n_out);
}

static const tw_op_def *
registry_op (const char *onnx_name)
{
  int n = 0;
  const tw_op_def *const *all = tw_op_list (&n);
  for (int i = 0; i < n; i++)
    if (all[i]->onnx_name && strcmp (all[i]->onnx_name, onnx_name) == 0
        && !(all[i]->flags & TW_OP_INTERNAL))
      return all[i];
  return NULL;
}

static void import_max_pool (tw_imp *im) { tw_imp_pool (im, TRUE); }
static void import_avg_pool (tw_imp *im) { tw_imp_pool (im, FALSE); }
static void import_softmax_op (tw_imp *im) { import_softmax (im, "softmax"); }
static void import_log_softmax (tw_imp *im) { import_softmax (im, "log_softmax"); }

/* The ops whose attributes or layout need a translation (the rest map one
 * to one through the registry's onnx_name). */
static const struct
{
  const char *op;
  void (*fn) (tw_imp *im);
} translators[] = {
  { "Conv", tw_imp_conv }, { "Gemm", tw_imp_gemm }, { "MatMul", tw_imp_matmul },
  { "BatchNormalization", tw_imp_batch_norm }, { "MaxPool", import_max_pool },
  { "AveragePool", import_avg_pool }, { "Flatten", import_flatten }, { "Reshape", import_reshape },
  { "Softmax", import_softmax_op }, { "LogSoftmax", import_log_softmax },
  { "Transpose", import_transpose }, { "Concat", import_concat }, { "Dropout", import_dropout },
  { "LeakyRelu", tw_imp_leaky_relu }, { "Clip", tw_imp_clip }, { "HardSigmoid", tw_imp_hard_sigmoid },
  { "Pad", tw_imp_pad }, { "Resize", tw_imp_resize }, { "Cast", tw_imp_cast },
  { "Squeeze", tw_imp_squeeze }, { "Unsqueeze", tw_imp_squeeze }, { "Slice", tw_imp_slice },
  { "Split", tw_imp_split }, { "Expand", tw_imp_expand },
  { "Gather", tw_imp_gather },
};

/* Also importable in some form: folded at import, or scalar forms. */
static const char *const translated[] = {
  "Constant", "Shape", "Identity", "Cast", "Unsqueeze", "Squeeze", "Gather", "Concat", "Slice",
  "ConstantOfShape", "Reshape", "Add", "Sub", "Mul", "Div", NULL
};

/* Whether some input could make the op importable. */
static gboolean
op_known (const char *op)
{
  for (guint i = 0; i < G_N_ELEMENTS (translators); i++)
    if (strcmp (op, translators[i].op) == 0)
      return TRUE;
  if (tw_imp_more_translator (op) != NULL || tw_imp_reduce_translator (op) != NULL)
    return TRUE;
  return g_strv_contains (translated, op) || registry_op (op) != NULL;
}

static void
import_node (tw_imp *im)
{
  const Onnx__NodeProto *n = im->n;
  const char *op = n->op_type;
  if (op == NULL || op[0] == '\0')
    {
      tw_imp_problem (im, "no op_type");
      return;
    }

  if (n->domain && n->domain[0] && strcmp (n->domain, "ai.onnx") != 0)
    {
      tw_imp_problem (im, "domain '%s' is not supported", n->domain);
      return;
    }
  for (gsize i = 0; i < n->n_input; i++)
    {
      if (n->input[i][0] == '\0')
        continue;
      const tw_imp_val *v = g_hash_table_lookup (im->vals, n->input[i]);
      if (v == NULL)
        {
          tw_imp_problem (im, "input '%s' is produced by no node, initializer or graph input",
                   n->input[i]);
          return;
        }
      if (v->kind == TW_IMP_BAD)
        {
          /* Its producer is reported; an op twb lacks altogether is listed too. */
          if (!op_known (op))
            tw_imp_problem (im, "no twb op");
          return;
        }
    }
  if (strcmp (op, "If") == 0 || strcmp (op, "Loop") == 0 || strcmp (op, "Scan") == 0)
    {
      tw_imp_problem (im, "control flow");
      return;
    }
  if (strcmp (op, "Identity") == 0 && tw_imp_input (im, 0) && tw_imp_input (im, 0)->kind == TW_IMP_DYN)
    {
      set_val (im, n->output[0], TW_IMP_DYN, tw_imp_input (im, 0)->ref, NULL);
      return;
    }
  if (tw_imp_fold (im))
    return;

  for (guint i = 0; i < G_N_ELEMENTS (translators); i++)
    if (strcmp (op, translators[i].op) == 0)
      {
        translators[i].fn (im);
        return;
      }
  tw_imp_fn more = tw_imp_more_translator (op);
  if (more == NULL)
    more = tw_imp_reduce_translator (op);
  if (more != NULL)
    {
      more (im);
      return;
    }
  const tw_op_def *def = registry_op (op);
  if (def == NULL)
    tw_imp_problem (im, "no twb op");
  else if (def->min_inputs == 2 && def->max_inputs == 2 && (def->flags & TW_OP_ELEMENTWISE))
    import_binary (im, def);
  else
    import_direct (im, def);
}

/* ---- graph input, outputs, layout -------------------------------------------- */

/* A graph input of fixed shape: every dim as the file gives it. */
static gboolean
add_fixed_input (tw_imp *im, const Onnx__ValueInfoProto *vi, tw_dtype dt, const char *role,
                 GError **error)
{
  g_autofree char *display = g_filename_display_name (im->filename);
  const Onnx__TensorShapeProto *sh = vi->type->tensor_type->shape;
  if (sh->n_dim > TW_MAX_DIMS)
    {
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED,
                   "%s: graph input '%s' has rank %" G_GSIZE_FORMAT " (twb takes at most %d dims)",
                   display, vi->name, sh->n_dim, TW_MAX_DIMS);
      return FALSE;
    }
  int64_t dims[TW_MAX_DIMS];
  for (gsize i = 0; i < sh->n_dim; i++)
    {
      const Onnx__TensorShapeProto__Dimension *d = sh->dim[i];
      if (d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE || d->dim_value < 0)
        {
          g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED,
                       "%s: graph input '%s': dimension %" G_GSIZE_FORMAT
                       " is symbolic ('%s'); a fixed input needs every dimension fixed",
                       display, vi->name, i,
                       d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
                         ? d->dim_param : "?");
          return FALSE;
        }
      dims[i] = d->dim_value;
    }
  g_autofree char *base = sanitise (vi->name);
  g_autofree char *id = tw_imp_unique_id (im, base);
  tw_node *node = tw_graph_add_input (im->graph, id, dt, (int) sh->n_dim, dims, role);
  tw_attrs_set_bool (node->attrs, "batch", FALSE);
  set_val (im, vi->name, TW_IMP_DYN, id, NULL);
  return TRUE;
}

static gboolean
add_graph_input (tw_imp *im, const Onnx__ValueInfoProto *vi, const char *role, GError **error)
{
  g_autofree char *display = g_filename_display_name (im->filename);
  const Onnx__TypeProto *t = vi->type;
  if (t == NULL || t->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || t->tensor_type == NULL
      || t->tensor_type->shape == NULL)
    {
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED,
                   "%s: graph input '%s' is not a tensor of known rank", display, vi->name);
      return FALSE;
    }
  tw_dtype dt;
  switch (t->tensor_type->elem_type)
    {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: dt = TW_F32; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: dt = TW_F64; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: dt = TW_I64; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: dt = TW_I32; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: dt = TW_U8; break;
    /* As onnx-read.c reads such tensors: bool as u8, narrow integers as i32. */
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: dt = TW_U8; break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: dt = TW_I32; break;
    default:
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED,
                   "%s: graph input '%s' has ONNX data type %d, which twb lacks", display,
                   vi->name, t->tensor_type->elem_type);
      return FALSE;
    }
  const Onnx__TensorShapeProto *sh = t->tensor_type->shape;
  if (im->fixed)
    return add_fixed_input (im, vi, dt, role, error);
  if (sh->n_dim < 1 || sh->n_dim > TW_MAX_DIMS)
    {
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED,
                   "%s: graph input '%s' has rank %" G_GSIZE_FORMAT
                   " (twb needs a batch dimension first, at most %d dims)",
                   display, vi->name, sh->n_dim, TW_MAX_DIMS);
      return FALSE;
    }
  int64_t dims[TW_MAX_DIMS];
  for (gsize i = 0; i < sh->n_dim; i++)
    {
      const Onnx__TensorShapeProto__Dimension *d = sh->dim[i];
      gboolean known = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE
                       && d->dim_value > 0;
      if (i == 0)
        im->export_batch = known ? d->dim_value : -1;
      else if (!known)
        {
          g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED,
                       "%s: graph input '%s': dimension %" G_GSIZE_FORMAT
                       " is symbolic ('%s'); twb needs every dimension but the batch fixed",
                       display, vi->name, i,
                       d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
                         ? d->dim_param : "?");
          return FALSE;
        }
      else
        dims[i - 1] = d->dim_value;
    }
  g_autofree char *base = sanitise (vi->name);
  g_autofree char *id = tw_imp_unique_id (im, base);
  tw_graph_add_input (im->graph, id, dt, (int) sh->n_dim - 1, dims, "data");
  set_val (im, vi->name, TW_IMP_DYN, id, NULL);
  return TRUE;
}

/* Every parameter the inferred graph asks for is there, with its shape. */
static gboolean
check_weights (tw_imp *im, GError **error)
{
  g_autofree char *display = g_filename_display_name (im->filename);
  for (int i = 0; i < tw_graph_n_nodes (im->graph); i++)
    {
      tw_node *node = tw_graph_node (im->graph, i);
      for (int k = 0; k < node->n_params; k++)
        {
          g_autofree char *name = tw_node_param_name (node, k);
          tw_tensor *t = g_hash_table_lookup (im->weights, name);
          tw_tinfo have;
          if (t)
            tw_tinfo_from_tensor (&have, t);
          if (t == NULL || have.ndim != node->params[k].info.ndim
              || memcmp (have.dims, node->params[k].info.dims, have.ndim * sizeof (int64_t)) != 0)
            {
              g_autofree char *want = tw_tinfo_to_string (&node->params[k].info);
              g_autofree char *got = t ? tw_tinfo_to_string (&have) : g_strdup ("nothing");
              g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED,
                           "%s: node '%s': parameter %s should be %s, the file gives %s",
                           display, node->id, name, want, got);
              return FALSE;
            }
        }
    }
  return TRUE;
}

static char *
model_name_for (const char *filename)
{
  g_autofree char *base = g_path_get_basename (filename);
  if (g_str_has_suffix (base, ".onnx"))
    base[strlen (base) - strlen (".onnx")] = '\0';
  return g_steal_pointer (&base);
}

tw_model *
tw_onnx_import_model_with (const Onnx__ModelProto *proto, const char *filename,
                           const tw_onnx_import_options *opts, GHashTable **weights,
                           GError **error)
{
  static const tw_onnx_import_options defaults = { 0 };
  if (opts == NULL)
    opts = &defaults;
  g_return_val_if_fail (proto != NULL && proto->graph != NULL, NULL);
  tw_ops_init ();
  const char *fname = filename ? filename : "<data>";
  g_autofree char *display = g_filename_display_name (fname);
  g_autofree char *name = model_name_for (fname);
  g_autoptr (tw_model) m = tw_model_new (name);
  const Onnx__GraphProto *g = proto->graph;
  tw_imp im = {
    .filename = fname,
    .opset = tw_onnx_model_opset (proto),
    .graph = m->graph,
    .vals = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, val_free),
    .uses = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL),
    .ids = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL),
    .id_next = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free),
    .weight_scope = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free),
    .weights = tw_tensor_table_new (),
    .bias_free = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL),
    .problems = g_ptr_array_new_with_free_func (g_free),
    .export_batch = -1,
    .fixed = opts->fixed_inputs,
  };
  tw_model *result = NULL;

  for (gsize i = 0; i < g->n_node; i++)
    for (gsize j = 0; j < g->node[i]->n_input; j++)
      {
        const char *in = g->node[i]->input[j];
        guint c = GPOINTER_TO_UINT (g_hash_table_lookup (im.uses, in));
        g_hash_table_replace (im.uses, g_strdup (in), GUINT_TO_POINTER (c + 1));
      }
  for (gsize i = 0; i < g->n_output; i++)
    {
      if (g->output[i]->name == NULL)
        {
          g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED,
                       "%s: graph output %" G_GSIZE_FORMAT " has no name", display, i);
          goto out;
        }
      guint c = GPOINTER_TO_UINT (g_hash_table_lookup (im.uses, g->output[i]->name));
      g_hash_table_replace (im.uses, g_strdup (g->output[i]->name), GUINT_TO_POINTER (c + 1));
    }

  for (gsize i = 0; i < g->n_initializer; i++)
    {
      const Onnx__TensorProto *t = g->initializer[i];
      if (t->name == NULL || t->name[0] == '\0')
        continue;               /* nothing can refer to it */
      g_autofree char *what = g_strdup_printf ("initializer %s", t->name ? t->name : "?");
      tw_tensor *c = tw_onnx_tensor_to_tw (t, what, error);
      if (c == NULL)
        {
          g_prefix_error (error, "%s: ", display);
          goto out;
        }
      set_val (&im, t->name, TW_IMP_CONST, NULL, c);
      tw_imp_val *v = g_hash_table_lookup (im.vals, t->name);
      if (v)
        v->init_name = g_strdup (t->name);
    }

  int n_data = 0;
  for (gsize i = 0; i < g->n_input; i++)
    {
      const Onnx__ValueInfoProto *vi = g->input[i];
      if (vi->name == NULL || vi->name[0] == '\0')
        {
          g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED,
                       "%s: graph input %" G_GSIZE_FORMAT " has no name", display, i);
          goto out;
        }
      if (g_hash_table_contains (im.vals, vi->name))
        continue;               /* an initializer listed as an input (IR < 4) */
      if (n_data++ > 0 && !im.fixed)
        {
          g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED,
                       "%s: a second graph input '%s' (a twb model takes one data input)",
                       display, vi->name);
          goto out;
        }
      if (!add_graph_input (&im, vi, n_data == 1 ? "data" : "other", error))
        goto out;
    }
  if (n_data == 0)
    {
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED,
                   "%s: the graph has no input besides its initializers", display);
      goto out;
    }

  for (gsize i = 0; i < g->n_node; i++)
    {
      im.n = g->node[i];
      im.index = i;
      im.failed = FALSE;
      import_node (&im);
      for (gsize k = 0; k < im.n->n_output; k++)
        if (im.n->output[k][0] && (im.failed || !g_hash_table_contains (im.vals, im.n->output[k])))
          set_val (&im, im.n->output[k], TW_IMP_BAD, NULL, NULL);
    }

  GPtrArray *outs = g_ptr_array_new ();
  for (gsize i = 0; i < g->n_output; i++)
    {
      const tw_imp_val *v = g_hash_table_lookup (im.vals, g->output[i]->name);
      if (v && v->kind == TW_IMP_CONST && im.fixed)
        {
          /* A folded output (Shape of a fixed input): a constant node. */
          im.n = NULL;
          const char *ref = tw_imp_ref (&im, v);
          if (ref)
            g_ptr_array_add (outs, (gpointer) ref);
        }
      else if (v && v->kind == TW_IMP_DYN)
        g_ptr_array_add (outs, v->ref);
      else if (v == NULL || v->kind == TW_IMP_CONST)
        g_ptr_array_add (im.problems,
                         g_strdup_printf ("graph output '%s': %s", g->output[i]->name,
                                          v ? "a constant (twb computes outputs from the input)"
                                            : "produced by no node"));
    }
  g_ptr_array_add (outs, NULL);
  tw_graph_set_outputs (m->graph, (const char *const *) outs->pdata);
  g_ptr_array_free (outs, TRUE);

  if (im.problems->len > 0)
    {
      g_ptr_array_add (im.problems, NULL);
      g_autofree char *list = g_strjoinv ("; ", (char **) im.problems->pdata);
      guint n = im.problems->len - 1;
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED,
                   "%s: %u node%s cannot be imported: %s", display, n, n == 1 ? "" : "s", list);
      goto out;
    }
  if (tw_graph_infer (m->graph) > 0)
    {
      g_autofree char *errs = tw_graph_errors_to_string (m->graph);
      g_set_error (error, TW_ONNX_ERROR, TW_ONNX_ERROR_UNSUPPORTED,
                   "%s: the imported graph has shape errors:\n%s", display, errs);
      goto out;
    }
  if (!tw_graph_check_runnable (m->graph, error))
    {
      g_prefix_error (error, "%s: ", display);
      goto out;
    }
  if (!check_weights (&im, error))
    goto out;
  /* Its errors name the model. */
  if (opts->loss != TW_ONNX_LOSS_NONE && !tw_onnx_add_loss (m, opts->loss, error))
    goto out;

  tw_layout_model (m, opts->view);
  if (weights)
    *weights = g_hash_table_ref (im.weights);
  result = g_steal_pointer (&m);

out:
  g_hash_table_unref (im.vals);
  g_hash_table_unref (im.uses);
  g_hash_table_unref (im.ids);
  g_hash_table_unref (im.id_next);
  g_hash_table_unref (im.weight_scope);
  g_hash_table_unref (im.weights);
  g_hash_table_unref (im.bias_free);
  g_ptr_array_free (im.problems, TRUE);
  return result;
}

tw_model *
tw_onnx_import_model (const Onnx__ModelProto *proto, const char *filename, GHashTable **weights,
                      GError **error)
{
  return tw_onnx_import_model_with (proto, filename, NULL, weights, error);
}

tw_model *
tw_onnx_import_with (const char *path, const tw_onnx_import_options *opts, GHashTable **weights,
                     GError **error)
{
  Onnx__ModelProto *proto = opts && opts->any_opset ? tw_onnx_read_model_any_opset (path, error)
                                                    : tw_onnx_read_model (path, error);
  if (proto == NULL)
    return NULL;
  tw_model *m = tw_onnx_import_model_with (proto, path, opts, weights, error);
  onnx__model_proto__free_unpacked (proto, NULL);
  return m;
}

tw_model *
tw_onnx_import (const char *path, GHashTable **weights, GError **error)
{
  return tw_onnx_import_with (path, NULL, weights, error);
}

char *
tw_onnx_weights_path_for (const char *model_path)
{
  if (g_str_has_suffix (model_path, ".json"))
    return g_strdup_printf ("%.*s.safetensors", (int) (strlen (model_path) - strlen (".json")),
                            model_path);
  return g_strdup_printf ("%s.safetensors", model_path);
}
