/* onnx-import-reduce.c — translators for ONNX's reductions, index ops and
 * losses.  The table is consulted after onnx-import-more.c's.
 *
 * Reductions take their axes from the attribute (opsets before 13, or 18
 * for all but ReduceSum) or from a constant second input; keepdims (default
 * 1), noop_with_empty_axes and negative axes are read; no axes means all.
 * ReduceSum/Mean/Max/Min/Prod/LogSumExp map to one twb op each; ReduceL1
 * = sum (abs), ReduceL2 = sqrt (sum (square)), ReduceSumSquare = sum
 * (square), ReduceLogSum = log (sum).  ArgMax/ArgMin (select_last_index:
 * argmin of -x), Trilu, GatherElements, ScatterElements (and Scatter),
 * GatherND, ScatterND, EyeLike, TopK (constant K), CumSum, Hardmax, GlobalMaxPool,
 * CastLike, Tile (concatenated copies), LayerNormalization (constant scale
 * and bias become its parameters, graph values multiply and add),
 * InstanceNormalization (composed: mean, variance, scale and B per channel),
 * NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (log_softmax over
 * dim 1, then nll_loss); Size and Range are folded when their inputs are
 * known; Einsum maps the forms that are a matmul, a transpose or a sum. */
#define G_LOG_DOMAIN "tw-onnx"

#include "onnx/onnx-import-private.h"

#include <math.h>
#include <string.h>

/* ---- emitting several twb nodes for one ONNX node -------------------------------------- */

static char *
base_id (tw_imp *im)
{
  const char *name = im->n->name;
  if (name == NULL || name[0] == '\0')
    {
      g_autofree char *op = g_ascii_strdown (im->n->op_type, -1);
      return g_strdup_printf ("%s_%" G_GSIZE_FORMAT, op, im->index);
    }
  GString *o = g_string_new (NULL);
  for (const char *p = name; *p; p++)
    if (g_ascii_isalnum (*p) || *p == '_' || *p == '.' || *p == '-')
      g_string_append_c (o, *p);
    else if (o->len > 0 && o->str[o->len - 1] != '_')
      g_string_append_c (o, '_');
  if (o->len == 0)
    g_string_append (o, "node");
  return g_string_free (o, FALSE);
}

/* Output k of the current node is the twb value ref. */
static void
set_out (tw_imp *im, gsize k, const char *ref)
{
  if (k >= im->n->n_output || im->n->output[k][0] == '\0')
    return;
  tw_imp_val *v = g_new0 (tw_imp_val, 1);
  v->kind = TW_IMP_DYN;
  v->ref = g_strdup (ref);
  g_hash_table_replace (im->vals, g_strdup (im->n->output[k]), v);
}

/* A twb node of op on refs (NULL-terminated); attrs is taken.  Its id
 * (borrowed from the graph), or NULL with a problem reported. */
static const char *
emit (tw_imp *im, const char *op, tw_attrs *attrs, const char *const *refs)
{
  g_autofree char *base = base_id (im);
  g_autofree char *id = tw_imp_unique_id (im, base);
  g_autoptr (GError) error = NULL;
  tw_node *node = tw_graph_add_node (im->graph, id, op, attrs, refs, &error);
  tw_attrs_free (attrs);
  if (node == NULL)
    {
      tw_imp_problem (im, "%s", error->message);
      return NULL;
    }
  return node->id;
}

static const char *
emit_1 (tw_imp *im, const char *op, tw_attrs *attrs, const char *x)
{
  const char *in[] = { x, NULL };
  if (x == NULL)
    {
      tw_attrs_free (attrs);
      return NULL;
    }
  return emit (im, op, attrs, in);
}

static const char *
emit_2 (tw_imp *im, const char *op, tw_attrs *attrs, const char *a, const char *b)
{
  const char *in[] = { a, b, NULL };
  if (a == NULL || b == NULL)
    {
      tw_attrs_free (attrs);
      return NULL;
    }
  return emit (im, op, attrs, in);
}

static gboolean
output_used (tw_imp *im, gsize k)
{
  return k < im->n->n_output && im->n->output[k][0] != '\0'
         && g_hash_table_contains (im->uses, im->n->output[k]);
}

/* ---- reductions --------------------------------------------------------------------------- */

typedef enum
{
  RED_SUM, RED_MEAN, RED_MAX, RED_MIN, RED_PROD, RED_L1, RED_L2, RED_LOG_SUM, RED_LOG_SUM_EXP,
  RED_SUM_SQUARE,
} red_kind;

/* The normalised axes of the current reduction node for a rank-r input
 * (all dims when none are given, unless *noop is set: then 0 axes). */
static gboolean
reduce_axes (tw_imp *im, int rank, int64_t *axes, int *n_axes, gboolean *noop)
{
  int64_t raw[TW_MAX_DIMS * 2];
  gsize n = 0;
  const tw_imp_val *av = tw_imp_input (im, 1);
  if (av)
    {
      g_autofree int64_t *v = NULL;
      int64_t nv = 0;
      if (av->kind != TW_IMP_CONST)
        {
          tw_imp_problem (im, "the axes input is computed at run time (twb needs constant axes)");
          return FALSE;
        }
      if (!tw_imp_const_ints (im, av, "axes", &v, &nv))
        return FALSE;
      if (nv > TW_MAX_DIMS)
        {
          tw_imp_problem (im, "%" G_GINT64_FORMAT " axes for a rank-%d input", nv, rank);
          return FALSE;
        }
      memcpy (raw, v, nv * sizeof *v);
      n = (gsize) nv;
    }
  else if (!tw_imp_attr_ints (im, "axes", 0, 0, raw, &n))
    return FALSE;
  *noop = n == 0 && tw_imp_attr_int (im, "noop_with_empty_axes", 0) != 0;
  gboolean seen[TW_MAX_DIMS] = { FALSE };
  *n_axes = 0;
  if (n == 0 && !*noop)
    for (int d = 0; d < rank; d++)
      axes[(*n_axes)++] = d;
  for (gsize i = 0; i < n; i++)
    {
      int ax = tw_imp_norm_axis (im, raw[i], rank);
      if (ax < 0)
        return FALSE;
      if (seen[ax])
        {
          tw_imp_problem (im, "axis %" G_GINT64_FORMAT " is listed twice", raw[i]);
          return FALSE;
        }
      seen[ax] = TRUE;
      axes[(*n_axes)++] = ax;
    }
  return TRUE;
}

static tw_attrs *
red_attrs (int n, const int64_t *axes, gboolean keep)
{
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_ints (a, "axes", n, axes);
  tw_attrs_set_bool (a, "keepdim", keep);
  return a;
}

static void
import_reduce (tw_imp *im, red_kind kind)
{
  static const char *const known[] = { "axes", "keepdims", "noop_with_empty_axes", NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "data");
  tw_tinfo info;
  if (x == NULL || !tw_imp_dyn_info (im, x, &info))
    return;
  int64_t axes[TW_MAX_DIMS];
  int n = 0;
  gboolean noop = FALSE;
  gboolean keep = tw_imp_attr_int (im, "keepdims", 1) != 0;
  if (!reduce_axes (im, info.ndim, axes, &n, &noop) || im->failed)
    return;
  if (noop)
    {
      set_out (im, 0, x->ref);      /* ONNX: the input as it is */
      return;
    }
  static const char *const one[] = {
    [RED_SUM] = "sum", [RED_MEAN] = "mean", [RED_MAX] = "max", [RED_MIN] = "min",
    [RED_PROD] = "prod", [RED_LOG_SUM_EXP] = "logsumexp",
  };
  const char *y = NULL;
  switch (kind)
    {
    case RED_SUM: case RED_MEAN: case RED_MAX: case RED_MIN: case RED_PROD: case RED_LOG_SUM_EXP:
      y = emit_1 (im, one[kind], red_attrs (n, axes, keep), x->ref);
      break;
    case RED_L1:
      y = emit_1 (im, "sum", red_attrs (n, axes, keep), emit_1 (im, "abs", NULL, x->ref));
      break;
    case RED_L2:
      y = emit_1 (im, "sqrt", NULL,
                  emit_1 (im, "sum", red_attrs (n, axes, keep), emit_1 (im, "square", NULL, x->ref)));
      break;
    case RED_SUM_SQUARE:
      y = emit_1 (im, "sum", red_attrs (n, axes, keep), emit_1 (im, "square", NULL, x->ref));
      break;
    case RED_LOG_SUM:
      y = emit_1 (im, "log", NULL, emit_1 (im, "sum", red_attrs (n, axes, keep), x->ref));
      break;
    }
  if (y)
    set_out (im, 0, y);
}

static void import_reduce_sum (tw_imp *im) { import_reduce (im, RED_SUM); }
static void import_reduce_mean (tw_imp *im) { import_reduce (im, RED_MEAN); }
static void import_reduce_max (tw_imp *im) { import_reduce (im, RED_MAX); }
static void import_reduce_min (tw_imp *im) { import_reduce (im, RED_MIN); }
static void import_reduce_prod (tw_imp *im) { import_reduce (im, RED_PROD); }
static void import_reduce_l1 (tw_imp *im) { import_reduce (im, RED_L1); }
static void import_reduce_l2 (tw_imp *im) { import_reduce (im, RED_L2); }
static void import_reduce_log_sum (tw_imp *im) { import_reduce (im, RED_LOG_SUM); }
static void import_reduce_log_sum_exp (tw_imp *im) { import_reduce (im, RED_LOG_SUM_EXP); }
static void import_reduce_sum_square (tw_imp *im) { import_reduce (im, RED_SUM_SQUARE); }

static void
import_global_max_pool (tw_imp *im)
{
  tw_imp_check_attrs (im, NULL);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "X");
  tw_tinfo info;
  if (x == NULL || !tw_imp_dyn_info (im, x, &info))
    return;
  if (info.ndim < 3)
    {
      tw_imp_problem (im, "an input of rank %d (GlobalMaxPool takes [N, C, spatial...])", info.ndim);
      return;
    }
  int64_t axes[TW_MAX_DIMS];
  for (int d = 2; d < info.ndim; d++)
    axes[d - 2] = d;
  const char *y = emit_1 (im, "max", red_attrs (info.ndim - 2, axes, TRUE), x->ref);
  if (y)
    set_out (im, 0, y);
}

/* ---- ArgMax, ArgMin, Hardmax ------------------------------------------------------------ */

static void
import_arg (tw_imp *im, gboolean is_max)
{
  static const char *const known[] = { "axis", "keepdims", "select_last_index", NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "data");
  tw_tinfo info;
  if (x == NULL || !tw_imp_dyn_info (im, x, &info))
    return;
  int ax = tw_imp_norm_axis (im, tw_imp_attr_int (im, "axis", 0), info.ndim);
  gboolean keep = tw_imp_attr_int (im, "keepdims", 1) != 0;
  gboolean last = tw_imp_attr_int (im, "select_last_index", 0) != 0;
  if (ax < 0 || im->failed)
    return;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, "axis", ax);
  tw_attrs_set_bool (a, "keepdims", keep);
  const char *y;
  if (is_max && !last)
    y = emit_1 (im, "argmax", a, x->ref);
  else
    {
      /* the last maximum of x is the last minimum of -x */
      tw_attrs_set_bool (a, "select_last_index", last);
      y = emit_1 (im, "argmin", a, is_max ? emit_1 (im, "neg", NULL, x->ref) : x->ref);
    }
  if (y)
    set_out (im, 0, y);
}

static void import_argmax (tw_imp *im) { import_arg (im, TRUE); }
static void import_argmin (tw_imp *im) { import_arg (im, FALSE); }

static void
import_hardmax (tw_imp *im)
{
  static const char *const known[] = { "axis", NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "input");
  tw_tinfo info;
  if (x == NULL || !tw_imp_dyn_info (im, x, &info))
    return;
  int ax = tw_imp_softmax_axis (im, &info);
  if (ax < 0)
    return;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, "axis", ax);
  const char *y = emit_1 (im, "hardmax", a, x->ref);
  if (y)
    set_out (im, 0, y);
}

/* ---- Trilu, GatherElements, CumSum, Tile ---------------------------------------------------- */

/* Optional constant integer scalar input i into *v (def when absent). */
static gboolean
const_int_input (tw_imp *im, gsize i, const char *what, int64_t def, int64_t *v)
{
  const tw_imp_val *c = tw_imp_input (im, i);
  *v = def;
  if (c == NULL)
    return TRUE;
  g_autofree int64_t *vals = NULL;
  int64_t n = 0;
  if (c->kind != TW_IMP_CONST)
    {
      tw_imp_problem (im, "%s is computed at run time (twb needs a constant)", what);
      return FALSE;
    }
  if (!tw_imp_const_ints (im, c, what, &vals, &n))
    return FALSE;
  if (n != 1)
    {
      tw_imp_problem (im, "%s has %" G_GINT64_FORMAT " values (one expected)", what, n);
      return FALSE;
    }
  *v = vals[0];
  return TRUE;
}

static void
import_trilu (tw_imp *im)
{
  static const char *const known[] = { "upper", NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "input"), *kv = tw_imp_input (im, 1);
  int64_t k = 0;
  /* k computed in the graph is read at run time (the shape does not depend on it) */
  gboolean dyn_k = kv && kv->kind == TW_IMP_DYN;
  if (!dyn_k && !const_int_input (im, 1, "k", 0, &k))
    return;
  gboolean upper = tw_imp_attr_int (im, "upper", 1) != 0;
  if (x == NULL || im->failed)
    return;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_bool (a, "upper", upper);
  tw_attrs_set_int (a, "k", k);
  const char *y = dyn_k ? emit_2 (im, "trilu", a, x->ref, kv->ref) : emit_1 (im, "trilu", a, x->ref);
  if (y)
    set_out (im, 0, y);
}

static void
import_gather_elements (tw_imp *im)
{
  static const char *const known[] = { "axis", NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "data");
  const char *idx = tw_imp_ref_input (im, 1, "indices");    /* a constant: a constant node */
  tw_tinfo info;
  if (x == NULL || idx == NULL || !tw_imp_dyn_info (im, x, &info))
    return;
  int ax = tw_imp_norm_axis (im, tw_imp_attr_int (im, "axis", 0), info.ndim);
  if (ax < 0 || im->failed)
    return;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, "axis", ax);
  const char *y = emit_2 (im, "gather_elements", a, x->ref, idx);
  if (y)
    set_out (im, 0, y);
}

static void
import_cumsum (tw_imp *im)
{
  static const char *const known[] = { "exclusive", "reverse", NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "x"), *av = tw_imp_input (im, 1);
  int64_t axis = 0;
  tw_tinfo info;
  if (av == NULL)
    tw_imp_problem (im, "the axis input is missing");
  /* an axis computed in the graph is read at run time (the shape does not depend on it) */
  gboolean dyn_axis = av && av->kind == TW_IMP_DYN;
  if (x == NULL || im->failed || (!dyn_axis && !const_int_input (im, 1, "axis", 0, &axis))
      || !tw_imp_dyn_info (im, x, &info))
    return;
  int ax = dyn_axis ? 0 : tw_imp_norm_axis (im, axis, info.ndim);
  gboolean excl = tw_imp_attr_int (im, "exclusive", 0) != 0;
  gboolean rev = tw_imp_attr_int (im, "reverse", 0) != 0;
  if (ax < 0 || im->failed)
    return;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, "axis", ax);
  tw_attrs_set_bool (a, "exclusive", excl);
  tw_attrs_set_bool (a, "reverse", rev);
  const char *y = dyn_axis ? emit_2 (im, "cumsum", a, x->ref, av->ref) : emit_1 (im, "cumsum", a, x->ref);
  if (y)
    set_out (im, 0, y);
}

/* Tile: each dim repeated by concatenating copies along it. */
static void
import_tile (tw_imp *im)
{
  tw_imp_check_attrs (im, NULL);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "input");
  const tw_imp_val *rv = tw_imp_input (im, 1);
  g_autofree int64_t *rep = NULL;
  int64_t nr = 0;
  tw_tinfo info;
  if (rv == NULL || rv->kind != TW_IMP_CONST)
    {
      tw_imp_problem (im, "repeats is computed at run time (twb needs a constant)");
      return;
    }
  if (x == NULL || !tw_imp_const_ints (im, rv, "repeats", &rep, &nr) || !tw_imp_dyn_info (im, x, &info))
    return;
  if (nr != info.ndim)
    {
      tw_imp_problem (im, "%" G_GINT64_FORMAT " repeats for a rank-%d input", nr, info.ndim);
      return;
    }
  const char *cur = x->ref;
  for (int d = 0; d < info.ndim && cur; d++)
    {
      if (rep[d] < 1 || rep[d] > 1024)
        {
          tw_imp_problem (im, "repeats[%d] = %" G_GINT64_FORMAT " (twb takes 1..1024)", d, rep[d]);
          return;
        }
      if (rep[d] == 1)
        continue;
      g_autofree const char **refs = g_new0 (const char *, rep[d] + 1);
      for (int64_t r = 0; r < rep[d]; r++)
        refs[r] = cur;
      tw_attrs *a = tw_attrs_new ();
      tw_attrs_set_int (a, "axis", d);
      cur = emit (im, "concat", a, refs);
    }
  if (cur == x->ref)
    cur = emit_1 (im, "scale", NULL, cur);      /* a node of its own for the output */
  if (cur)
    set_out (im, 0, cur);
}

/* ScatterElements (Scatter before opset 11: the same without reduction). */
static void
import_scatter_elements (tw_imp *im)
{
  static const char *const known[] = { "axis", "reduction", NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "data");
  const char *idx = tw_imp_ref_input (im, 1, "indices"), *up = tw_imp_ref_input (im, 2, "updates");
  tw_tinfo info;
  if (x == NULL || idx == NULL || up == NULL || !tw_imp_dyn_info (im, x, &info))
    return;
  int ax = tw_imp_norm_axis (im, tw_imp_attr_int (im, "axis", 0), info.ndim);
  g_autofree char *red = tw_onnx_attr (im->n, "reduction") ? tw_imp_attr_string_dup (im, "reduction")
                                                           : g_strdup ("none");
  if (strcmp (red, "none") != 0 && strcmp (red, "add") != 0 && strcmp (red, "mul") != 0)
    tw_imp_problem (im, "reduction '%s' (twb takes none, add and mul)", red);
  if (ax < 0 || im->failed)
    return;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, "axis", ax);
  tw_attrs_set_string (a, "reduction", red);
  const char *in[] = { x->ref, idx, up, NULL };
  const char *y = emit (im, "scatter_elements", a, in);
  if (y)
    set_out (im, 0, y);
}

static void
import_gather_nd (tw_imp *im)
{
  static const char *const known[] = { "batch_dims", NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "data");
  const char *idx = tw_imp_ref_input (im, 1, "indices");
  int64_t b = tw_imp_attr_int (im, "batch_dims", 0);
  if (x == NULL || idx == NULL || im->failed)
    return;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, "batch_dims", b);
  const char *y = emit_2 (im, "gather_nd", a, x->ref, idx);
  if (y)
    set_out (im, 0, y);
}

static void
import_scatter_nd (tw_imp *im)
{
  static const char *const known[] = { "reduction", NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "data");
  const char *idx = tw_imp_ref_input (im, 1, "indices"), *up = tw_imp_ref_input (im, 2, "updates");
  g_autofree char *red = tw_onnx_attr (im->n, "reduction") ? tw_imp_attr_string_dup (im, "reduction")
                                                           : g_strdup ("none");
  if (strcmp (red, "none") != 0 && strcmp (red, "add") != 0 && strcmp (red, "mul") != 0)
    tw_imp_problem (im, "reduction '%s' (twb takes none, add and mul)", red);
  if (x == NULL || idx == NULL || up == NULL || im->failed)
    return;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_string (a, "reduction", red);
  const char *in[] = { x->ref, idx, up, NULL };
  const char *y = emit (im, "scatter_nd", a, in);
  if (y)
    set_out (im, 0, y);
}

/* InstanceNormalization: per sample and channel over the spatial dims,
 * then scale and B per channel (computed values, unsqueezed to [C, 1...]). */
static void
import_instance_norm (tw_imp *im)
{
  static const char *const known[] = { "epsilon", NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "input");
  /* initializers (as exporters write them) become constant nodes */
  const char *sc = tw_imp_ref_input (im, 1, "scale"), *b = tw_imp_ref_input (im, 2, "B");
  double eps = tw_imp_attr_float (im, "epsilon", 1e-5f);
  tw_tinfo info;
  if (x == NULL || sc == NULL || b == NULL || im->failed || !tw_imp_dyn_info (im, x, &info))
    return;
  if (info.ndim < 3)
    {
      tw_imp_problem (im, "an input of rank %d ([N, C, spatial...] expected)", info.ndim);
      return;
    }
  int64_t axes[TW_MAX_DIMS], un[TW_MAX_DIMS];
  for (int d = 2; d < info.ndim; d++)
    axes[d - 2] = d, un[d - 2] = d - 1;
  int na = info.ndim - 2;
  const char *mean = emit_1 (im, "mean", red_attrs (na, axes, TRUE), x->ref);
  const char *d = emit_2 (im, "sub", NULL, x->ref, mean);
  const char *var = emit_1 (im, "mean", red_attrs (na, axes, TRUE), emit_1 (im, "square", NULL, d));
  tw_attrs *e = tw_attrs_new ();
  tw_attrs_set_float (e, "value", tw_imp_short_double ((float) eps));
  const char *inv = emit_1 (im, "reciprocal", NULL,
                            emit_1 (im, "sqrt", NULL, emit_1 (im, "add_scalar", e, var)));
  tw_attrs *u1 = tw_attrs_new (), *u2 = tw_attrs_new ();
  tw_attrs_set_ints (u1, "axes", na, un);
  tw_attrs_set_ints (u2, "axes", na, un);
  const char *y = emit_2 (im, "mul", NULL, emit_2 (im, "mul", NULL, d, inv),
                          emit_1 (im, "unsqueeze", u1, sc));
  y = emit_2 (im, "add", NULL, y, emit_1 (im, "unsqueeze", u2, b));
  if (y)
    set_out (im, 0, y);
}

/* ONNX's TensorProto data type as a twb dtype name (NULL: none). */
static const char *
dtype_name_of_onnx (int64_t t)
{
  switch (t)
    {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return "f32";
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return "f64";
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return "i32";
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return "i64";
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: return "u8";
    default: return NULL;
    }
}

static void
import_eye_like (tw_imp *im)
{
  static const char *const known[] = { "dtype", "k", NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "input");
  int64_t k = tw_imp_attr_int (im, "k", 0);
  const char *to = NULL;
  if (tw_onnx_attr (im->n, "dtype"))
    {
      int64_t t = tw_imp_attr_int (im, "dtype", 0);
      if ((to = dtype_name_of_onnx (t)) == NULL)
        tw_imp_problem (im, "dtype %" G_GINT64_FORMAT " (twb has float, double, int32, int64, uint8)", t);
    }
  if (x == NULL || im->failed)
    return;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, "k", k);
  if (to)
    tw_attrs_set_string (a, "to", to);
  const char *y = emit_1 (im, "eye_like", a, x->ref);
  if (y)
    set_out (im, 0, y);
}

/* TopK: K from a constant input (opset 10 on) or the attribute before;
 * sorted output only. */
static void
import_topk (tw_imp *im)
{
  static const char *const known_old[] = { "axis", "k", NULL };
  static const char *const known[] = { "axis", "largest", "sorted", NULL };
  tw_imp_check_attrs (im, im->opset < 10 ? known_old : known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "X"), *kv = tw_imp_input (im, 1);
  int64_t k = im->opset < 10 ? tw_imp_attr_int (im, "k", 1) : 0;
  if (im->opset >= 10)
    {
      if (kv && kv->kind == TW_IMP_DYN)
        {
          tw_imp_problem (im, "K is computed at run time (the output's shape depends on it)");
          return;
        }
      if (kv == NULL)
        tw_imp_problem (im, "K is missing");
      else if (!const_int_input (im, 1, "K", 1, &k))
        return;
    }
  tw_tinfo info;
  if (x == NULL || im->failed || !tw_imp_dyn_info (im, x, &info))
    return;
  int ax = tw_imp_norm_axis (im, tw_imp_attr_int (im, "axis", -1), info.ndim);
  gboolean largest = tw_imp_attr_int (im, "largest", 1) != 0;
  if (tw_imp_attr_int (im, "sorted", 1) == 0)
    tw_imp_problem (im, "sorted=0 (twb's topk sorts)");
  if (ax < 0 || im->failed)
    return;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, "k", k);
  tw_attrs_set_int (a, "axis", ax);
  tw_attrs_set_bool (a, "largest", largest);
  const char *y = emit_1 (im, "topk", a, x->ref);
  if (y == NULL)
    return;
  g_autofree char *y1 = g_strdup_printf ("%s:1", y);
  set_out (im, 0, y);
  set_out (im, 1, y1);
}

/* ---- Size, Range, CastLike ------------------------------------------------------------------- */

static void
import_size (tw_imp *im)
{
  tw_imp_check_attrs (im, NULL);
  const tw_imp_val *x = tw_imp_input (im, 0);
  int64_t numel = 1;
  if (x && x->kind == TW_IMP_CONST)
    numel = tw_tensor_numel (x->c);
  else
    {
      tw_tinfo info;
      if ((x = tw_imp_dyn_input (im, 0, "data")) == NULL || !tw_imp_dyn_info (im, x, &info))
        return;
      for (int d = 0; d < info.ndim; d++)
        {
          if (info.dims[d] == TW_DIM_N)
            {
              tw_imp_problem (im, "the size depends on the batch size");
              return;
            }
          numel *= info.dims[d];
        }
    }
  tw_tensor *c = tw_tensor_new (TW_I64, 0, NULL);
  tw_tensor_i64 (c)[0] = numel;
  tw_imp_set_const (im, 0, c);
}

static void
import_range (tw_imp *im)
{
  tw_imp_check_attrs (im, NULL);
  const tw_imp_val *v[3];
  for (gsize i = 0; i < 3; i++)
    {
      v[i] = tw_imp_input (im, i);
      if (v[i] == NULL || v[i]->kind != TW_IMP_CONST || tw_tensor_numel (v[i]->c) != 1)
        {
          tw_imp_problem (im, "start, limit and delta must be constant scalars (a range computed at "
                          "run time has no fixed shape)");
          return;
        }
    }
  tw_dtype dt = v[0]->c->dtype;
  double start = tw_tensor_get_flat (v[0]->c, 0), limit = tw_tensor_get_flat (v[1]->c, 0);
  double delta = tw_tensor_get_flat (v[2]->c, 0);
  if (delta == 0)
    {
      tw_imp_problem (im, "delta is 0");
      return;
    }
  double count = MAX (ceil ((limit - start) / delta), 0);     /* ONNX: max (ceil (...), 0) */
  if (!(count <= TW_IMP_MAX_FOLDED))
    {
      tw_imp_problem (im, "a range of %g elements", count);
      return;
    }
  int64_t n = (int64_t) count;
  tw_tensor *c = tw_tensor_new (dt, 1, &n);
  for (int64_t i = 0; i < n; i++)
    tw_tensor_set_flat (c, i, start + (double) i * delta);
  tw_imp_set_const (im, 0, c);
}

static void
import_cast_like (tw_imp *im)
{
  static const char *const known[] = { "saturate", NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "input");
  const tw_imp_val *like = tw_imp_input (im, 1);
  tw_dtype dt;
  if (like == NULL)
    {
      tw_imp_problem (im, "target_type is missing");
      return;
    }
  if (like->kind == TW_IMP_CONST)
    dt = like->c->dtype;
  else
    {
      tw_tinfo info;
      if (like->kind != TW_IMP_DYN || !tw_imp_dyn_info (im, like, &info))
        return;
      dt = info.dtype;
    }
  if (x == NULL || im->failed)
    return;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_string (a, "to", tw_dtype_name (dt));
  const char *y = emit_1 (im, "cast", a, x->ref);
  if (y)
    set_out (im, 0, y);
}

/* ---- LayerNormalization --------------------------------------------------------------------- */

static void
import_layer_norm (tw_imp *im)
{
  static const char *const known[] = { "axis", "epsilon", "stash_type", NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "X");
  const tw_imp_val *sc = tw_imp_input (im, 1), *b = tw_imp_input (im, 2);
  tw_tinfo info;
  if (x == NULL || !tw_imp_dyn_info (im, x, &info))
    return;
  int ax = tw_imp_norm_axis (im, tw_imp_attr_int (im, "axis", -1), info.ndim);
  double eps = tw_imp_attr_float (im, "epsilon", 1e-5f);
  if (tw_imp_attr_int (im, "stash_type", 1) != 1)
    tw_imp_problem (im, "stash_type other than 1 (float)");
  if (sc == NULL)
    tw_imp_problem (im, "Scale is missing");
  if (ax < 0 || im->failed)
    return;
  /* Mean and InvStdDev (shaped as X with the normalised dims 1), when used. */
  if (output_used (im, 1) || output_used (im, 2))
    {
      int64_t axes[TW_MAX_DIMS];
      for (int d = ax; d < info.ndim; d++)
        axes[d - ax] = d;
      const char *mean = emit_1 (im, "mean", red_attrs (info.ndim - ax, axes, TRUE), x->ref);
      const char *var = emit_1 (im, "mean", red_attrs (info.ndim - ax, axes, TRUE),
                                emit_1 (im, "square", NULL, emit_2 (im, "sub", NULL, x->ref, mean)));
      tw_attrs *e = tw_attrs_new ();
      tw_attrs_set_float (e, "value", tw_imp_short_double ((float) eps));
      const char *inv = emit_1 (im, "reciprocal", NULL,
                                emit_1 (im, "sqrt", NULL, emit_1 (im, "add_scalar", e, var)));
      if (inv == NULL)
        return;
      set_out (im, 1, mean);
      set_out (im, 2, inv);
    }
  /* -1 (no constant's size) when a dim is the batch or the product is past int64. */
  int64_t D = 1;
  for (int d = ax; d < info.ndim && D >= 0; d++)
    if (!tw_size_mul (D, info.dims[d], &D))
      D = -1;
  /* Constant scale and bias of the normalised shape become parameters. */
  gboolean as_params = sc->kind == TW_IMP_CONST && tw_dtype_is_float (sc->c->dtype)
                       && tw_tensor_numel (sc->c) == D
                       && (b == NULL || (b->kind == TW_IMP_CONST && tw_dtype_is_float (b->c->dtype)
                                         && tw_tensor_numel (b->c) == D));
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, "normalized_ndim", info.ndim - ax);
  tw_attrs_set_float (a, "eps", tw_imp_short_double ((float) eps));
  tw_attrs_set_bool (a, "elementwise_affine", as_params);
  const char *y = emit_1 (im, "layer_norm", a, x->ref);
  if (y == NULL)
    return;
  if (as_params)
    {
      int64_t dims[TW_MAX_DIMS];
      for (int d = ax; d < info.ndim; d++)
        dims[d - ax] = info.dims[d];
      for (int k = 0; k < 2; k++)
        {
          tw_tensor *t;
          if (k == 0 || b != NULL)
            {
              g_autoptr (tw_tensor) f = tw_imp_as_f32 (k == 0 ? sc->c : b->c);
              g_autoptr (tw_tensor) r = tw_tensor_reshape (f, info.ndim - ax, dims);
              t = tw_tensor_clone (r);
            }
          else
            t = tw_tensor_zeros (TW_F32, info.ndim - ax, dims);   /* D values, as the scale */
          g_hash_table_replace (im->weights, g_strdup_printf ("%s.%s", y, k ? "bias" : "weight"), t);
        }
      set_out (im, 0, y);
      return;
    }
  /* computed (or broadcast) scale and bias: multiplied and added, a
   * constant one as a constant node */
  y = emit_2 (im, "mul", NULL, y, tw_imp_ref (im, sc));
  if (b && y)
    y = emit_2 (im, "add", NULL, y, tw_imp_ref (im, b));
  if (y)
    set_out (im, 0, y);
}

/* ---- losses -------------------------------------------------------------------------------- */

/* nll_loss (logp, target[, weight]) with the node's reduction and ignore_index. */
static const char *
emit_nll (tw_imp *im, const char *logp, const tw_imp_val *target, const tw_imp_val *w)
{
  g_autofree char *red = tw_onnx_attr (im->n, "reduction") ? tw_imp_attr_string_dup (im, "reduction")
                                                           : g_strdup ("mean");
  if (strcmp (red, "none") != 0 && strcmp (red, "sum") != 0 && strcmp (red, "mean") != 0)
    {
      tw_imp_problem (im, "reduction '%s' (none, sum or mean)", red);
      return NULL;
    }
  const char *wref = w ? tw_imp_ref (im, w) : NULL;     /* a constant: a constant node */
  if (w && wref == NULL)
    return NULL;
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_string (a, "reduction", red);
  if (tw_onnx_attr (im->n, "ignore_index"))
    tw_attrs_set_int (a, "ignore_index", tw_imp_attr_int (im, "ignore_index", 0));
  if (im->failed || logp == NULL)
    {
      tw_attrs_free (a);
      return NULL;
    }
  const char *in[] = { logp, target->ref, wref, NULL };
  return emit (im, "nll_loss", a, in);
}

static void
import_nll (tw_imp *im)
{
  static const char *const known[] = { "reduction", "ignore_index", NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "input");
  const tw_imp_val *t = tw_imp_dyn_input (im, 1, "target");
  const tw_imp_val *w = tw_imp_input (im, 2);
  if (x == NULL || t == NULL)
    return;
  const char *y = emit_nll (im, x->ref, t, w);
  if (y)
    set_out (im, 0, y);
}

static void
import_sce (tw_imp *im)
{
  static const char *const known[] = { "reduction", "ignore_index", NULL };
  tw_imp_check_attrs (im, known);
  const tw_imp_val *x = tw_imp_dyn_input (im, 0, "scores");
  const tw_imp_val *t = tw_imp_dyn_input (im, 1, "labels");
  const tw_imp_val *w = tw_imp_input (im, 2);
  tw_tinfo info;
  if (x == NULL || t == NULL || !tw_imp_dyn_info (im, x, &info))
    return;
  if (info.ndim < 2)
    {
      tw_imp_problem (im, "scores of rank %d ([N, C, d1...] expected)", info.ndim);
      return;
    }
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, "axis", 1);
  const char *logp = emit_1 (im, "log_softmax", a, x->ref);
  const char *y = emit_nll (im, logp, t, w);
  if (y == NULL)
    return;
  set_out (im, 0, y);
  set_out (im, 1, logp);
}

/* ---- Einsum ---------------------------------------------------------------------------------- */

/* The letters of one operand's term, or FALSE (ellipsis, repeats, bad
 * characters: forms twb does not map). */
static gboolean
einsum_term (const char *s, gsize len, char *out, int *n)
{
  *n = 0;
  for (gsize i = 0; i < len; i++)
    {
      char c = s[i];
      if (c == ' ')
        continue;
      if (!g_ascii_isalpha (c) || *n >= TW_MAX_DIMS || memchr (out, c, *n))
        return FALSE;
      out[(*n)++] = c;
    }
  return TRUE;
}

/* A single operand with term in: sum over the letters absent from the
 * output, then the remaining ones permuted into the output's order. */
static const char *
einsum_one (tw_imp *im, const char *x, const char *in, int nin, const char *out, int nout)
{
  int64_t axes[TW_MAX_DIMS], perm[TW_MAX_DIMS];
  int na = 0;
  char rest[TW_MAX_DIMS];
  int nr = 0;
  for (int i = 0; i < nin; i++)
    if (!memchr (out, in[i], nout))
      axes[na++] = i;
    else
      rest[nr++] = in[i];
  for (int j = 0; j < nout; j++)
    if (!memchr (in, out[j], nin))
      return NULL;
  const char *y = x;
  if (na > 0)
    y = emit_1 (im, "sum", red_attrs (na, axes, FALSE), y);
  gboolean identity = TRUE;
  for (int j = 0; j < nout; j++)
    {
      perm[j] = (const char *) memchr (rest, out[j], nr) - rest;
      identity &= perm[j] == j;
    }
  if (!identity && y)
    {
      tw_attrs *a = tw_attrs_new ();
      tw_attrs_set_ints (a, "perm", nout, perm);
      y = emit_1 (im, "transpose", a, y);
    }
  if (y == x)
    y = emit_1 (im, "scale", NULL, y);
  return y;
}

static void
import_einsum (tw_imp *im)
{
  static const char *const known[] = { "equation", NULL };
  tw_imp_check_attrs (im, known);
  g_autofree char *eq = tw_imp_attr_string_dup (im, "equation");
  if (strstr (eq, "->") == NULL)
    {
      /* implicit output: the letters used once, in alphabetical order */
      GString *full = g_string_new (eq);
      g_string_append (full, "->");
      for (char c = 'A'; c <= 'z'; c++)
        {
          int uses = 0;
          for (const char *p = eq; *p; p++)
            uses += *p == c;
          if (g_ascii_isalpha (c) && uses == 1)
            g_string_append_c (full, c);
        }
      g_free (eq);
      eq = g_string_free (full, FALSE);
    }
  const char *arrow = strstr (eq, "->");
  /* the operand list ends at the arrow */
  g_autofree char *lhs = g_strndup (eq, arrow - eq);
  g_auto (GStrv) ops = g_strsplit (lhs, ",", -1);
  guint nops = g_strv_length (ops);
  char t[2][TW_MAX_DIMS], o[TW_MAX_DIMS];
  int nt[2] = { 0, 0 }, no = 0;
  gboolean ok = nops >= 1 && nops <= 2 && nops == im->n->n_input
                && einsum_term (arrow + 2, strlen (arrow + 2), o, &no);
  for (guint i = 0; ok && i < nops; i++)
    ok = einsum_term (ops[i], strlen (ops[i]), t[i], &nt[i]);
  const tw_imp_val *a = tw_imp_dyn_input (im, 0, "the first operand");
  const char *b = nops == 2 ? tw_imp_ref_input (im, 1, "the second operand") : NULL;
  if (!ok)
    {
      tw_imp_problem (im, "equation '%s' (twb maps einsum with one or two operands, distinct "
                      "letters per operand, no ellipsis)", eq);
      return;
    }
  if (a == NULL || (nops == 2 && b == NULL))
    return;
  const char *y = NULL;
  if (nops == 1)
    y = einsum_one (im, a->ref, t[0], nt[0], o, no);
  else if (nt[0] == nt[1] && memcmp (t[0], t[1], nt[0]) == 0)
    /* the same letters: an element-wise product, then a one-operand einsum */
    y = einsum_one (im, emit_2 (im, "mul", NULL, a->ref, b), t[0], nt[0], o, no);
  else if (nt[0] >= 2 && nt[0] == nt[1] && nt[0] == no
           && memcmp (t[0], t[1], nt[0] - 2) == 0 && memcmp (t[0], o, nt[0] - 2) == 0)
    {
      /* batch dims b..., then [i j] x [j k] -> [i k] */
      int r = nt[0];
      char i = t[0][r - 2], j = t[0][r - 1];
      if (t[1][r - 2] == j && t[1][r - 1] != i && t[1][r - 1] != j && o[r - 2] == i
          && o[r - 1] == t[1][r - 1])
        y = emit_2 (im, "matmul", NULL, a->ref, b);
    }
  if (y == NULL && !im->failed)
    {
      tw_imp_problem (im, "equation '%s' is not a matmul, a transpose, a sum or a product of equal "
                      "terms", eq);
      return;
    }
  if (y)
    set_out (im, 0, y);
}

/* ---- table ------------------------------------------------------------------------------------ */

static const struct
{
  const char *op;
  tw_imp_fn fn;
} reduce_translators[] = {
  { "ReduceSum", import_reduce_sum },
  { "ReduceMean", import_reduce_mean },
  { "ReduceMax", import_reduce_max },
  { "ReduceMin", import_reduce_min },
  { "ReduceProd", import_reduce_prod },
  { "ReduceL1", import_reduce_l1 },
  { "ReduceL2", import_reduce_l2 },
  { "ReduceLogSum", import_reduce_log_sum },
  { "ReduceLogSumExp", import_reduce_log_sum_exp },
  { "ReduceSumSquare", import_reduce_sum_square },
  { "GlobalMaxPool", import_global_max_pool },
  { "ArgMax", import_argmax },
  { "ArgMin", import_argmin },
  { "Hardmax", import_hardmax },
  { "Trilu", import_trilu },
  { "GatherElements", import_gather_elements },
  { "CumSum", import_cumsum },
  { "ScatterElements", import_scatter_elements },
  { "Scatter", import_scatter_elements },
  { "GatherND", import_gather_nd },
  { "ScatterND", import_scatter_nd },
  { "InstanceNormalization", import_instance_norm },
  { "EyeLike", import_eye_like },
  { "TopK", import_topk },
  { "Tile", import_tile },
  { "Size", import_size },
  { "Range", import_range },
  { "CastLike", import_cast_like },
  { "LayerNormalization", import_layer_norm },
  { "NegativeLogLikelihoodLoss", import_nll },
  { "SoftmaxCrossEntropyLoss", import_sce },
  { "Einsum", import_einsum },
};

tw_imp_fn
tw_imp_reduce_translator (const char *op)
{
  for (guint i = 0; i < G_N_ELEMENTS (reduce_translators); i++)
    if (strcmp (op, reduce_translators[i].op) == 0)
      return reduce_translators[i].fn;
  return NULL;
}
