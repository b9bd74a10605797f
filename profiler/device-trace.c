/* device-trace.c — node times from a trace of the same model (device-trace.h). */
#include "profiler/device-trace.h"
#include "profiler/chrome-read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* PyTorch's op names for each of our ops: the forward's top-level aten op,
 * and the backward's autograd function (without its version suffix). */
typedef struct
{
  const char *op;
  const char *forward[5];
  const char *backward[4];
} op_map;

static const op_map maps[] = {
  { "linear", { "aten::linear", "aten::addmm", "aten::matmul", "aten::mm" },
    { "AddmmBackward", "MmBackward", "MatmulBackward", "LinearBackward" } },
  { "conv2d", { "aten::conv2d", "aten::convolution", "aten::_convolution",
                "aten::cudnn_convolution" },
    { "ConvolutionBackward", "CudnnConvolutionBackward", "MkldnnConvolutionBackward" } },
  { "relu", { "aten::relu", "aten::relu_" }, { "ReluBackward" } },
  { "tanh", { "aten::tanh" }, { "TanhBackward" } },
  { "sigmoid", { "aten::sigmoid" }, { "SigmoidBackward" } },
  { "gelu", { "aten::gelu" }, { "GeluBackward" } },
  { "max_pool2d", { "aten::max_pool2d", "aten::max_pool2d_with_indices" },
    { "MaxPool2DWithIndicesBackward" } },
  { "avg_pool2d", { "aten::avg_pool2d" }, { "AvgPool2DBackward" } },
  { "batch_norm", { "aten::batch_norm", "aten::native_batch_norm" },
    { "NativeBatchNormBackward", "CudnnBatchNormBackward" } },
  { "layer_norm", { "aten::layer_norm" }, { "NativeLayerNormBackward" } },
  { "dropout", { "aten::dropout", "aten::native_dropout" }, { "NativeDropoutBackward" } },
  { "flatten", { "aten::flatten" }, { "ViewBackward", "ReshapeAliasBackward" } },
  { "softmax", { "aten::softmax" }, { "SoftmaxBackward" } },
  { "log_softmax", { "aten::log_softmax" }, { "LogSoftmaxBackward" } },
  { "cross_entropy", { "aten::cross_entropy_loss" }, { "NllLossBackward", "LogSoftmaxBackward" } },
  { "mse_loss", { "aten::mse_loss" }, { "MseLossBackward" } },
  { "add", { "aten::add" }, { "AddBackward" } },
  { "embedding", { "aten::embedding" }, { "EmbeddingBackward" } },
};

/* Ops of a model's step that are bookkeeping, not a layer: never warned about. */
static gboolean
bookkeeping (const char *name)
{
  static const char *const skip[] = { "aten::to", "aten::_to_copy", "aten::copy_", "aten::empty",
                                      "aten::zeros", "aten::zero_", "aten::ones", "aten::fill_",
                                      "aten::item", "aten::_local_scalar_dense", "aten::detach",
                                      "aten::view", "aten::reshape", "aten::t", "aten::transpose",
                                      "aten::ones_like", "aten::empty_like", "aten::set_",
                                      "aten::resize_", "aten::stride", "aten::as_strided", NULL };
  for (int i = 0; skip[i]; i++)
    if (strcmp (name, skip[i]) == 0)
      return TRUE;
  /* The optimizer's ops (Optimizer.step#Adam.step and what it runs). */
  return g_str_has_prefix (name, "Optimizer.") || g_str_has_prefix (name, "aten::_foreach")
         || g_str_has_prefix (name, "aten::add_") || g_str_has_prefix (name, "aten::mul_")
         || g_str_has_prefix (name, "aten::addcmul_") || g_str_has_prefix (name, "aten::addcdiv_")
         || g_str_has_prefix (name, "aten::sqrt") || g_str_has_prefix (name, "aten::div_")
         || g_str_has_prefix (name, "aten::lerp_");
}

static const op_map *
map_forward (const char *name)
{
  for (guint i = 0; i < G_N_ELEMENTS (maps); i++)
    for (int k = 0; k < 5 && maps[i].forward[k]; k++)
      if (strcmp (name, maps[i].forward[k]) == 0)
        return &maps[i];
  return NULL;
}

/* "autograd::engine::evaluate_function: AddmmBackward0" → linear's map. */
static const op_map *
map_backward (const char *name, const char **fn)
{
  const char *p = strstr (name, "evaluate_function: ");
  if (p == NULL)
    return NULL;
  p += strlen ("evaluate_function: ");
  *fn = p;
  for (guint i = 0; i < G_N_ELEMENTS (maps); i++)
    for (int k = 0; k < 4 && maps[i].backward[k]; k++)
      if (g_str_has_prefix (p, maps[i].backward[k]))
        return &maps[i];
  return NULL;
}

static const char *
arg (const tw_slice *s, const char *key)
{
  for (guint i = 0; i < s->n_args; i++)
    if (strcmp (s->args[i].key, key) == 0)
      return s->args[i].value;
  return NULL;
}

static double *
times_of (GHashTable *h, const char *id)
{
  double *v = g_hash_table_lookup (h, id);
  if (v == NULL)
    {
      v = g_new0 (double, 2);
      g_hash_table_insert (h, g_strdup (id), v);
    }
  return v;
}

gboolean
tw_device_trace_sniff (const char *path)
{
  FILE *f = fopen (path, "rb");
  if (f == NULL)
    return FALSE;
  char buf[4097];
  size_t n = fread (buf, 1, 4096, f);
  fclose (f);
  buf[n] = '\0';
  if (n >= 2 && (guchar) buf[0] == 0x1f && (guchar) buf[1] == 0x8b)
    return TRUE;                /* gzip: a trace (profiles are plain JSON) */
  const char *p = buf;
  while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
    p++;
  return *p == '[' || strstr (buf, "\"traceEvents\"") != NULL;
}

/* Ours: forward and backward spans with their nodes. */
static void
load_ours (const tw_trace *t, const tw_graph *g, tw_device_trace *out, GPtrArray *warn)
{
  const char *b = tw_trace_get_meta (t, "batch");
  const char *st = tw_trace_get_meta (t, "steps");
  out->batch = b ? g_ascii_strtoll (b, NULL, 10) : 0;
  int steps = st ? (int) g_ascii_strtoll (st, NULL, 10) : 0;
  int counted = 0;
  for (guint l = 0; l < tw_trace_n_lanes (t); l++)
    for (guint i = 0; i < tw_trace_lane_n_slices (t, l); i++)
      {
        const tw_slice *s = tw_trace_lane_slice (t, l, i);
        if (s->category && strcmp (s->category, "step") == 0)
          counted++;
        if (s->category == NULL
            || (strcmp (s->category, "forward") != 0 && strcmp (s->category, "backward") != 0))
          continue;
        const char *nodes = arg (s, "nodes");
        if (nodes == NULL)
          continue;
        int phase = strcmp (s->category, "backward") == 0;
        g_auto (GStrv) ids = g_strsplit (nodes, ",", -1);
        guint k = g_strv_length (ids);
        for (guint j = 0; j < k; j++)
          {
            const char *id = g_strstrip (ids[j]);
            if (tw_graph_find (g, id) == NULL)
              {
                g_ptr_array_add (warn, g_strdup_printf ("the trace's node %s is not in the model", id));
                continue;
              }
            times_of (out->node_times, id)[phase] += s->dur_ns / 1e9 / k;
          }
      }
  out->steps = steps > 0 ? steps : MAX (counted, 1);
}

typedef struct
{
  const tw_slice *s;
  guint lane;
  const op_map *map;
  const char *fn;             /* backward: the autograd function's name */
  double t;                   /* seconds: its kernels', or its own */
  gboolean backward, claimed;
} op_at;

static gint
op_by_start (gconstpointer a, gconstpointer b)
{
  gint64 x = ((const op_at *) a)->s->start_ns, y = ((const op_at *) b)->s->start_ns;
  return x < y ? -1 : x > y;
}

/* Our op's entry in maps, or NULL. */
static const op_map *
map_of_op (const char *op)
{
  for (guint i = 0; i < G_N_ELEMENTS (maps); i++)
    if (strcmp (maps[i].op, op) == 0)
      return &maps[i];
  return NULL;
}

/* The slice of lane that starts at t_ns (slices are sorted by start), or NULL. */
static const tw_slice *
slice_starting_at (const tw_trace *t, guint lane, gint64 t_ns)
{
  guint lo = 0, hi = tw_trace_lane_n_slices (t, lane);
  while (lo < hi)
    {
      guint mid = lo + (hi - lo) / 2;
      if (tw_trace_lane_slice (t, lane, mid)->start_ns < t_ns)
        lo = mid + 1;
      else
        hi = mid;
    }
  if (lo < tw_trace_lane_n_slices (t, lane) && tw_trace_lane_slice (t, lane, lo)->start_ns == t_ns)
    return tw_trace_lane_slice (t, lane, lo);
  return NULL;
}

/* The op of lane whose span holds t_ns, or NULL: ops are grouped by lane,
 * each lane's in start order without overlap. */
static op_at *
op_holding (GArray *ops, guint lane, gint64 t_ns)
{
  guint lo = 0, hi = ops->len;
  while (lo < hi)
    {
      guint mid = lo + (hi - lo) / 2;
      const op_at *o = &g_array_index (ops, op_at, mid);
      if (o->lane < lane || (o->lane == lane && o->s->start_ns <= t_ns))
        lo = mid + 1;
      else
        hi = mid;
    }
  if (lo == 0)
    return NULL;
  op_at *o = &g_array_index (ops, op_at, lo - 1);
  return o->lane == lane && t_ns <= o->s->start_ns + o->s->dur_ns ? o : NULL;
}

/* PyTorch's: top-level aten ops and autograd functions, by order. */
static gboolean
load_pytorch (const tw_trace *t, const tw_graph *g, tw_device_trace *out, GPtrArray *warn,
              GError **error)
{
  /* Kernel time started from within each CPU span: the flows from a
   * launch (on a thread lane) to a kernel (on a device or stream lane). */
  gboolean have_kernels = FALSE;
  GArray *ops = g_array_new (FALSE, TRUE, sizeof (op_at));
  int steps = 0;
  for (guint l = 0; l < tw_trace_n_lanes (t); l++)
    {
      if (tw_trace_lane (t, l)->kind != TW_LANE_THREAD)
        {
          have_kernels |= tw_trace_lane_n_slices (t, l) > 0;
          continue;
        }
      gint64 open_end = G_MININT64;   /* the end of the top-level op we are inside */
      for (guint i = 0; i < tw_trace_lane_n_slices (t, l); i++)
        {
          const tw_slice *s = tw_trace_lane_slice (t, l, i);
          if (g_str_has_prefix (s->name, "ProfilerStep#"))
            {
              steps++;
              continue;
            }
          if (s->start_ns < open_end)
            continue;           /* inside an op already taken */
          const char *fn = NULL;
          const op_map *m = NULL;
          gboolean bw = FALSE;
          if (g_str_has_prefix (s->name, "aten::"))
            m = map_forward (s->name);
          else if (g_str_has_prefix (s->name, "autograd::engine::evaluate_function: "))
            {
              m = map_backward (s->name, &fn);
              bw = TRUE;
            }
          else
            continue;
          if (m == NULL && !bw && bookkeeping (s->name))
            {
              open_end = s->start_ns + s->dur_ns;
              continue;
            }
          if (m == NULL && bw && (strstr (s->name, "AccumulateGrad")
                                  || strstr (s->name, "TBackward")
                                  || strstr (s->name, "ViewBackward")))
            {
              open_end = s->start_ns + s->dur_ns;
              continue;
            }
          open_end = s->start_ns + s->dur_ns;
          op_at o = { .s = s, .lane = l, .map = m, .fn = fn, .t = s->dur_ns / 1e9, .backward = bw };
          g_array_append_val (ops, o);
        }
    }
  if (have_kernels)
    {
      for (guint k = 0; k < ops->len; k++)
        g_array_index (ops, op_at, k).t = 0;
      /* ops holds each lane's top-level ops together, in start order
       * (they do not overlap): a launch is found by bisection among its
       * lane's, a kernel among its lane's slices (sorted by start). */
      for (guint f = 0; f < tw_trace_n_flows (t); f++)
        {
          const tw_flow *fl = tw_trace_flow (t, f);
          if (tw_trace_lane (t, fl->to_lane)->kind == TW_LANE_THREAD)
            continue;
          const tw_slice *kern = slice_starting_at (t, fl->to_lane, fl->to_ns);
          op_at *o = kern ? op_holding (ops, fl->from_lane, fl->from_ns) : NULL;
          if (o)
            o->t += kern->dur_ns / 1e9;
        }
    }
  /* Sorted by time, then matched: forward in the graph's order, backward
   * in its reverse. */
  g_array_sort (ops, op_by_start);
  g_autoptr (GArray) order = NULL;
  if (!tw_graph_topo_order (g, &order, error))
    {
      g_array_unref (ops);
      return FALSE;
    }
  out->steps = MAX (steps, 1);
  /* Where the next unclaimed op of each kind and phase may be: a kind's
   * ops are claimed in time order, so the search goes on from there. */
  guint cursor[G_N_ELEMENTS (maps)][2] = { { 0 } };
  for (int step = 0; step < out->steps; step++)
    {
      /* Each node takes the next op of its kind, step after step: with
       * S steps, the ops come in S rounds of the graph. */
      for (int phase = 0; phase < 2; phase++)
        for (guint j = 0; j < order->len; j++)
          {
            int idx = g_array_index (order, int, phase ? order->len - 1 - j : j);
            tw_node *n = tw_graph_node (g, idx);
            const op_map *want = n->op_name ? map_of_op (n->op_name) : NULL;
            if (want == NULL)
              continue;
            guint *c = &cursor[want - maps][phase];
            for (; *c < ops->len; (*c)++)
              {
                op_at *o = &g_array_index (ops, op_at, *c);
                if (o->claimed || o->backward != phase || o->map != want)
                  continue;
                o->claimed = TRUE;
                times_of (out->node_times, n->id)[phase] += o->t;
                (*c)++;
                break;
              }
          }
    }
  GHashTable *unmapped = g_hash_table_new (g_str_hash, g_str_equal);
  for (guint k = 0; k < ops->len; k++)
    {
      op_at *o = &g_array_index (ops, op_at, k);
      if (!o->claimed && !g_hash_table_contains (unmapped, o->s->name))
        {
          g_hash_table_add (unmapped, (gpointer) o->s->name);
          g_ptr_array_add (warn, g_strdup_printf ("%s (%s) maps to no node of the model",
                                                  o->backward && o->fn ? o->fn : o->s->name,
                                                  o->backward ? "backward" : "forward"));
        }
    }
  g_hash_table_unref (unmapped);
  /* The batch: the first mapped op's first input's first dimension. */
  for (guint k = 0; k < ops->len && out->batch == 0; k++)
    {
      const char *dims = arg (g_array_index (ops, op_at, k).s, "Input Dims");
      if (dims && !g_array_index (ops, op_at, k).backward)
        {
          const char *p = strchr (dims, '[');
          if (p && (p = strchr (p + 1, '[')))
            out->batch = g_ascii_strtoll (p + 1, NULL, 10);
        }
    }
  g_array_unref (ops);
  return TRUE;
}

gboolean
tw_device_trace_load (const char *path, const tw_graph *g, tw_device_trace *out, GError **error)
{
  memset (out, 0, sizeof *out);
  g_autoptr (GError) e = NULL;
  tw_trace *t = tw_trace_load_chrome (path, &e);
  if (t == NULL)
    {
      g_propagate_error (error, g_steal_pointer (&e));
      return FALSE;
    }
  out->node_times = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  GPtrArray *warn = g_ptr_array_new ();
  gboolean ours = tw_trace_get_meta (t, "model") != NULL && tw_trace_get_meta (t, "steps") != NULL;
  gboolean ok = TRUE;
  if (ours)
    {
      out->kind = "twb";
      load_ours (t, g, out, warn);
    }
  else
    {
      out->kind = "pytorch";
      ok = load_pytorch (t, g, out, warn, error);
    }
  tw_trace_free (t);
  if (ok && g_hash_table_size (out->node_times) == 0)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                   "%s: no span of the trace maps to a node of the model (a %s trace: %s)", path,
                   ours ? "twb profile" : "PyTorch profiler",
                   ours ? "its forward and backward spans name other nodes"
                        : "no aten op or autograd function of the model's ops");
      ok = FALSE;
    }
  if (ok)
    {
      /* Per step; and the nodes it has no time for. */
      GHashTableIter it;
      gpointer v;
      g_hash_table_iter_init (&it, out->node_times);
      while (g_hash_table_iter_next (&it, NULL, &v))
        {
          ((double *) v)[0] /= out->steps;
          ((double *) v)[1] /= out->steps;
        }
      for (int i = 0; i < tw_graph_n_nodes (g); i++)
        {
          tw_node *n = tw_graph_node (g, i);
          if (n->op_name && strcmp (n->op_name, "input") != 0
              && !g_hash_table_contains (out->node_times, n->id))
            g_ptr_array_add (warn, g_strdup_printf ("node %s (%s) has no time in the trace: "
                                                    "the roofline's stands in", n->id,
                                                    n->op_name));
        }
    }
  g_ptr_array_add (warn, NULL);
  out->warnings = (char **) g_ptr_array_free (warn, FALSE);
  if (!ok)
    tw_device_trace_clear (out);
  return ok;
}

void
tw_device_trace_clear (tw_device_trace *t)
{
  g_clear_pointer (&t->node_times, g_hash_table_unref);
  g_clear_pointer (&t->warnings, g_strfreev);
}

GHashTable *
tw_device_trace_times_at (const tw_device_trace *t, int64_t rank_batch)
{
  double f = t->batch > 0 && rank_batch > 0 ? (double) rank_batch / t->batch : 1;
  GHashTable *h = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init (&it, t->node_times);
  while (g_hash_table_iter_next (&it, &k, &v))
    {
      double *d = g_new (double, 2);
      d[0] = ((double *) v)[0] * f;
      d[1] = ((double *) v)[1] * f;
      g_hash_table_insert (h, g_strdup (k), d);
    }
  return h;
}
