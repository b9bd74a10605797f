/* train-pipe.c — pipeline and hybrid parallelism (train.h, "Pipeline and
 * hybrid parallelism"): stages from the "stage" attribute or by cost, a
 * sub-graph per stage, GPipe and 1F1B schedules over micro-batches,
 * activations and their gradients by send/recv, the replicas of a stage
 * all-reducing their gradients, the bubble measured.
 *
 * Each micro-batch in flight has an executor of its own on the stage's
 * sub-graph: in eager mode a tape, in compiled mode a tw_compiled whose
 * TRAIN program starts from the received gradients (tw_grad_spec), gives
 * those of the received activations and adds the parameters' gradients
 * into the store; its forward part runs at the micro-batch's F slot and
 * its backward part at its B slot over the same arena, which holds the
 * forward's values in between (no forward is recomputed: memory is one
 * arena per micro-batch in flight, as eager keeps one tape each). */
#define G_LOG_DOMAIN "twb-train"

#include "engine/comm/comm.h"
#include "engine/train-private.h"

#include <math.h>
#include <string.h>

/* A value one stage computes and a later one reads. */
typedef struct
{
  char *ref;                  /* in the whole graph and the producer's sub-graph: "fc2",
                               * "split:1" */
  char *in_id;                /* the consumer's input node: "fc2", "split.1" */
  int from, to;               /* stages */
  tw_tinfo info;              /* dims[0] is the batch */
} xfer;

/* A message in flight and the tensor it reads or fills. */
typedef struct
{
  tw_comm_req *req;
  tw_tensor *t;
} msg;

struct tw_pipe
{
  tw_comm *world;             /* borrowed */
  tw_comm *stage_comm;        /* the replicas of this stage (a split, owned by world), or NULL */
  tw_pipeline_options opt;
  int n_stages, n_replicas, stage, replica, rank, size;
  int *stage_of;              /* [nodes of the whole graph] */
  tw_graph *sub;              /* this stage's sub-graph */
  tw_eager **ex;              /* eager mode: one per micro-batch in flight, on sub */
  tw_compiled **cx;           /* compiled mode: the same ([n_ex]) */
  int n_ex;
  xfer *xfers;                /* every stage-to-stage value, the same list on every rank */
  int n_xfers;
  char *data_id, *label_id;   /* the sub-graph's data and label inputs, or NULL */
  char *loss_id;              /* the last stage's loss node */
  int *owner;                 /* [params]: the stage of each parameter of tr->params */
  int n_owner;
  GArray *sends;              /* msg: sends of this step, waited for at its end */
  double idle_sum, sched_sum; /* over every rank and the measured steps */
  double my_idle, my_sched;   /* this rank's, the same steps */
  int64_t measured_steps;
  int64_t steps_run;          /* steps this pipeline ran */
  int last_m;                 /* micro-batches of the last step */
  int64_t correct;            /* the last step's correct predictions (global batch), or -1 */
  /* Replicas: each trainable parameter's all-reduce over stage_comm, posted
   * in one order on every replica (ar: params indices, the last first, about
   * the order backward finishes them) as soon as its gradient is final in
   * the step's last backward and those before it are posted, so that they
   * run while that backward goes on. */
  tw_trainer *tr;
  int *ar;
  int n_ar;
  gboolean *ar_ready;
  /* ...packed into buckets of opt.bucket_mb: bucket b is ar[bk_first[b]]
   * up to ar[bk_first[b + 1]] (one parameter alone is all-reduced in its
   * gradient, several through bk_buf). */
  int n_bk;
  int *bk_first;
  int64_t *bk_numel;
  float **bk_buf;
  char **bk_what;
  char ***bk_names;
  tw_comm_req **bk_req;
  int bk_next;
  gboolean ar_listen;         /* inside the step's last backward */
  tw_bus *sub_bus;
  guint sub_id;
};

static void buckets_make (tw_pipe *P);

const char *
tw_pipe_schedule_name (tw_pipe_schedule s)
{
  return s == TW_SCHEDULE_GPIPE ? "gpipe" : "1f1b";
}

gboolean
tw_pipe_schedule_from_name (const char *name, tw_pipe_schedule *out, GError **error)
{
  if (g_strcmp0 (name, "1f1b") == 0)
    *out = TW_SCHEDULE_1F1B;
  else if (g_strcmp0 (name, "gpipe") == 0)
    *out = TW_SCHEDULE_GPIPE;
  else
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_INPUT,
                   "unknown pipeline schedule '%s' (known: 1f1b, gpipe)", name);
      return FALSE;
    }
  return TRUE;
}

void
tw_pipeline_options_init (tw_pipeline_options *o)
{
  memset (o, 0, sizeof *o);
  o->micro_batches = 4;
  o->schedule = TW_SCHEDULE_1F1B;
  o->bucket_mb = 25;
}

static gboolean
is_source (const tw_node *n)
{
  return n->op && (n->op->flags & TW_OP_SOURCE);
}

/* ---- stages ----------------------------------------------------------------------------- */

/* Contiguous runs of the topological order of about equal cost: a node
 * goes to the next stage when more than half of it would lie past the
 * current stage's share, and never so late that a later stage is left
 * empty.  Every node costs at least 1 FLOP, so that free ops (reshape)
 * count and a graph of them is cut by count. */
static void
balance (const tw_graph *g, const GArray *order, int n_stages, int *stage_of)
{
  double total = 0;
  int n_work = 0;
  for (guint oi = 0; oi < order->len; oi++)
    {
      const tw_node *n = tw_graph_node (g, g_array_index (order, int, oi));
      if (!is_source (n))
        {
          total += MAX (n->cost.flops, 1.0);
          n_work++;
        }
    }
  double cum = 0;
  int cur = 0, in_cur = 0, seen = 0;
  for (guint oi = 0; oi < order->len; oi++)
    {
      int i = g_array_index (order, int, oi);
      const tw_node *n = tw_graph_node (g, i);
      if (is_source (n))
        continue;
      double c = MAX (n->cost.flops, 1.0);
      if (cur < n_stages - 1 && in_cur > 0
          && (cum + c / 2 > (cur + 1) * total / n_stages || n_work - seen <= n_stages - 1 - cur))
        {
          cur++;
          in_cur = 0;
        }
      stage_of[i] = cur;
      cum += c;
      in_cur++;
      seen++;
    }
}

gboolean
tw_pipeline_assign_stages (const tw_graph *g, int n_stages, int *stage_of, GError **error)
{
  return tw_pipeline_assign_stages_full (g, n_stages, stage_of, NULL, error);
}

gboolean
tw_pipeline_assign_stages_full (const tw_graph *g, int n_stages, int *stage_of, int *bad_node,
                                GError **error)
{
  int nn = tw_graph_n_nodes (g), n_work = 0;
  int unused;
  if (bad_node == NULL)
    bad_node = &unused;
  *bad_node = -1;
  gboolean any = FALSE;
  for (int i = 0; i < nn; i++)
    {
      const tw_node *n = tw_graph_node (g, i);
      stage_of[i] = -1;
      if (is_source (n))
        continue;
      n_work++;
      any |= n->attrs && tw_attrs_has (n->attrs, "stage");
    }
  if (n_stages < 1)
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH,
                   "a pipeline needs at least 1 stage (%d asked)", n_stages);
      return FALSE;
    }
  if (n_stages > n_work)
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH,
                   "%d pipeline stages need at least %d nodes besides the inputs; the model has "
                   "%d", n_stages, n_stages, n_work);
      return FALSE;
    }
  g_autoptr (GArray) order = NULL;
  if (!tw_graph_topo_order (g, &order, error))
    return FALSE;
  const tw_node *loss = tw_graph_find_loss (g);
  if (!any)
    {
      balance (g, order, n_stages, stage_of);
      /* The loss closes the last stage (nothing reads it). */
      if (loss)
        stage_of[tw_graph_index_of (g, loss->id)] = n_stages - 1;
    }
  else
    for (guint oi = 0; oi < order->len; oi++)
      {
        int i = g_array_index (order, int, oi);
        const tw_node *n = tw_graph_node (g, i);
        if (is_source (n))
          continue;
        const tw_attr_value *v = n->attrs ? tw_attrs_lookup (n->attrs, "stage") : NULL;
        if (v)
          {
            if (v->type != TW_ATTR_INT || v->i < 0 || v->i >= n_stages)
              {
                *bad_node = i;
                g_autofree char *what = v->type == TW_ATTR_INT
                                          ? g_strdup_printf ("%" G_GINT64_FORMAT, v->i)
                                          : g_strdup ("not an integer");
                g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH,
                             "node %s: stage %s names no stage (the pipeline has %d: 0 to %d)",
                             n->id, what, n_stages, n_stages - 1);
                return FALSE;
              }
            stage_of[i] = (int) v->i;
            continue;
          }
        /* No stage of its own: the latest of its inputs'. */
        int s = 0;
        for (int k = 0; k < n->n_inputs; k++)
          if (n->in_ports[k].node >= 0)
            s = MAX (s, stage_of[n->in_ports[k].node]);
        stage_of[i] = s;
      }

  /* A chain: each node reads only from its own stage and earlier ones. */
  for (int i = 0; i < nn; i++)
    {
      const tw_node *n = tw_graph_node (g, i);
      if (is_source (n))
        continue;
      for (int k = 0; k < n->n_inputs; k++)
        {
          int m = n->in_ports[k].node;
          if (m >= 0 && stage_of[m] > stage_of[i])
            {
              *bad_node = i;
              g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH,
                           "node %s (stage %d) reads %s of stage %d: the stages must form a "
                           "chain, each reading only from itself and earlier stages",
                           n->id, stage_of[i], n->inputs[k], stage_of[m]);
              return FALSE;
            }
        }
      if (n->share)
        {
          int o = tw_graph_index_of (g, n->share);
          if (o >= 0 && stage_of[o] != stage_of[i])
            {
              *bad_node = i;
              g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH,
                           "node %s (stage %d) shares the parameters of %s (stage %d): a shared "
                           "layer must stay in one stage", n->id, stage_of[i], n->share,
                           stage_of[o]);
              return FALSE;
            }
        }
    }
  if (loss && stage_of[tw_graph_index_of (g, loss->id)] != n_stages - 1)
    {
      *bad_node = tw_graph_index_of (g, loss->id);
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH,
                   "node %s: the loss is in stage %d; it must be in the last stage (%d)",
                   loss->id, stage_of[tw_graph_index_of (g, loss->id)], n_stages - 1);
      return FALSE;
    }
  g_autofree int *count = g_new0 (int, n_stages);
  for (int i = 0; i < nn; i++)
    if (stage_of[i] >= 0)
      count[stage_of[i]]++;
  for (int s = 0; s < n_stages; s++)
    if (count[s] == 0)
      {
        g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH,
                     "stage %d of %d has no nodes: give it some with the \"stage\" attribute, or "
                     "use fewer stages", s, n_stages);
        return FALSE;
      }
  return TRUE;
}

/* ---- the sub-graph ---------------------------------------------------------------------- */

static char *
value_ref (const tw_graph *g, tw_port p)
{
  const tw_node *n = tw_graph_node (g, p.node);
  return n->n_outputs > 1 ? g_strdup_printf ("%s:%d", n->id, p.output) : g_strdup (n->id);
}

/* Every value crossing stages, once per consumer stage, in node order. */
static gboolean
find_xfers (tw_pipe *P, const tw_graph *g, GError **error)
{
  GArray *a = g_array_new (FALSE, TRUE, sizeof (xfer));
  for (int i = 0; i < tw_graph_n_nodes (g); i++)
    {
      const tw_node *n = tw_graph_node (g, i);
      if (is_source (n))
        continue;
      for (int k = 0; k < n->n_inputs; k++)
        {
          tw_port p = n->in_ports[k];
          const tw_node *m = tw_graph_node (g, p.node);
          if (is_source (m) || P->stage_of[p.node] == P->stage_of[i])
            continue;
          g_autofree char *ref = value_ref (g, p);
          gboolean dup = FALSE;
          for (guint j = 0; j < a->len && !dup; j++)
            dup = g_array_index (a, xfer, j).to == P->stage_of[i]
                  && strcmp (g_array_index (a, xfer, j).ref, ref) == 0;
          if (dup)
            continue;
          const tw_tinfo *info = &m->out_info[p.output];
          if (info->ndim < 1 || info->dims[0] != TW_DIM_N)
            {
              g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH,
                           "node %s (stage %d) reads %s of stage %d, which has no batch "
                           "dimension: only per-sample values can go between stages",
                           n->id, P->stage_of[i], ref, P->stage_of[p.node]);
              for (guint j = 0; j < a->len; j++)
                {
                  g_free (g_array_index (a, xfer, j).ref);
                  g_free (g_array_index (a, xfer, j).in_id);
                }
              g_array_free (a, TRUE);
              return FALSE;
            }
          xfer x = { .ref = g_steal_pointer (&ref), .from = P->stage_of[p.node],
                     .to = P->stage_of[i], .info = *info };
          x.in_id = m->n_outputs > 1 ? g_strdup_printf ("%s.%d", m->id, p.output)
                                     : g_strdup (m->id);
          g_array_append_val (a, x);
        }
    }
  P->n_xfers = (int) a->len;
  P->xfers = (xfer *) g_array_free (a, FALSE);
  return TRUE;
}

static const xfer *
xfer_into (const tw_pipe *P, int stage, const char *ref)
{
  for (int j = 0; j < P->n_xfers; j++)
    if (P->xfers[j].to == stage && strcmp (P->xfers[j].ref, ref) == 0)
      return &P->xfers[j];
  return NULL;
}

/* Stage s's nodes; the inputs they read (copied); the values they receive
 * as inputs of role "other"; the values later stages read as outputs. */
static tw_graph *
build_sub (tw_pipe *P, const tw_graph *g, int s, GError **error)
{
  g_autoptr (tw_graph) sub = tw_graph_new ();
  int nn = tw_graph_n_nodes (g);
  g_autofree gboolean *read = g_new0 (gboolean, nn);
  for (int i = 0; i < nn; i++)
    {
      const tw_node *n = tw_graph_node (g, i);
      if (P->stage_of[i] != s)
        continue;
      for (int k = 0; k < n->n_inputs; k++)
        if (is_source (tw_graph_node (g, n->in_ports[k].node)))
          read[n->in_ports[k].node] = TRUE;
    }
  for (int i = 0; i < nn; i++)
    if (read[i])
      {
        const tw_node *n = tw_graph_node (g, i);
        if (tw_graph_add_node (sub, n->id, n->op_name, n->attrs, NULL, error) == NULL)
          return NULL;
      }
  for (int j = 0; j < P->n_xfers; j++)
    {
      const xfer *x = &P->xfers[j];
      if (x->to == s)
        tw_graph_add_input (sub, x->in_id, x->info.dtype, x->info.ndim - 1, x->info.dims + 1,
                            "other");
    }
  for (int i = 0; i < nn; i++)
    {
      const tw_node *n = tw_graph_node (g, i);
      if (P->stage_of[i] != s)
        continue;
      g_autofree const char **inputs = g_new0 (const char *, n->n_inputs + 1);
      g_autoptr (GPtrArray) keep = g_ptr_array_new_with_free_func (g_free);
      for (int k = 0; k < n->n_inputs; k++)
        {
          tw_port p = n->in_ports[k];
          inputs[k] = n->inputs[k];
          if (!is_source (tw_graph_node (g, p.node)) && P->stage_of[p.node] != s)
            {
              char *ref = value_ref (g, p);
              g_ptr_array_add (keep, ref);
              inputs[k] = xfer_into (P, s, ref)->in_id;
            }
        }
      tw_node *c = tw_graph_add_node (sub, n->id, n->op_name, n->attrs, inputs, error);
      if (c == NULL)
        return NULL;
      if (n->share)
        tw_graph_set_share (sub, c, n->share);
    }
  g_autoptr (GPtrArray) outs = g_ptr_array_new ();
  for (int j = 0; j < P->n_xfers; j++)
    if (P->xfers[j].from == s)
      {
        gboolean dup = FALSE;
        for (guint k = 0; k < outs->len && !dup; k++)
          dup = strcmp (g_ptr_array_index (outs, k), P->xfers[j].ref) == 0;
        if (!dup)
          g_ptr_array_add (outs, P->xfers[j].ref);
      }
  g_ptr_array_add (outs, NULL);
  if (outs->len > 1)
    tw_graph_set_outputs (sub, (const char *const *) outs->pdata);
  const tw_node *loss = tw_graph_find_loss (g);
  if (loss && P->stage_of[tw_graph_index_of (g, loss->id)] == s)
    tw_graph_set_loss (sub, loss->id);
  if (tw_graph_infer (sub) > 0)
    {
      g_autofree char *msg = tw_graph_errors_to_string (sub);
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH, "stage %d's sub-graph: %s", s, msg);
      return NULL;
    }
  return g_steal_pointer (&sub);
}

/* ---- set-up ----------------------------------------------------------------------------- */

void
tw_pipe_free (tw_pipe *P)
{
  if (P == NULL)
    return;
  if (P->sends)
    {
      for (guint i = 0; i < P->sends->len; i++)
        {
          msg *m = &g_array_index (P->sends, msg, i);
          tw_comm_req_free (m->req);
          tw_tensor_unref (m->t);
        }
      g_array_unref (P->sends);
    }
  for (int i = 0; i < P->n_ex; i++)
    {
      tw_eager_free (P->ex[i]);
      tw_compiled_free (P->cx[i]);
    }
  g_free (P->ex);
  g_free (P->cx);
  if (P->sub_bus)
    {
      tw_bus_unsubscribe (P->sub_bus, P->sub_id);
      tw_bus_unref (P->sub_bus);
    }
  for (int b = 0; b < P->n_bk; b++)
    {
      tw_comm_req_free (P->bk_req[b]);
      g_free (P->bk_buf[b]);
      g_free (P->bk_what[b]);
      g_free (P->bk_names[b]);   /* (the names are the parameters') */
    }
  g_free (P->bk_req);
  g_free (P->bk_buf);
  g_free (P->bk_what);
  g_free (P->bk_names);
  g_free (P->bk_first);
  g_free (P->bk_numel);
  g_free (P->ar);
  g_free (P->ar_ready);
  tw_graph_free (P->sub);
  for (int j = 0; j < P->n_xfers; j++)
    {
      g_free (P->xfers[j].ref);
      g_free (P->xfers[j].in_id);
    }
  g_free (P->xfers);
  g_free (P->stage_of);
  g_free (P->owner);
  g_free (P->data_id);
  g_free (P->label_id);
  g_free (P->loss_id);
  g_free (P);
}

/* The stage of each parameter: that of the node whose scope it is in. */
static void
find_owners (tw_pipe *P, tw_trainer *tr)
{
  const tw_graph *g = tr->model->graph;
  int np = tw_params_count (tr->params);
  g_free (P->owner);
  P->owner = g_new0 (int, MAX (np, 1));
  P->n_owner = np;
  for (int i = 0; i < tw_graph_n_nodes (g); i++)
    {
      const tw_node *n = tw_graph_node (g, i);
      for (int k = 0; k < n->n_params && P->stage_of[i] >= 0; k++)
        {
          g_autofree char *name = tw_node_param_name (n, k);
          for (int j = 0; j < np; j++)
            if (strcmp (tw_params_at (tr->params, j)->name, name) == 0)
              P->owner[j] = P->stage_of[i];
        }
    }
}

gboolean
tw_trainer_set_pipeline (tw_trainer *tr, tw_comm *comm, const tw_pipeline_options *o,
                         GError **error)
{
  g_return_val_if_fail (tr->pipe == NULL && tr->dist == NULL, FALSE);
  tw_pipeline_options opt;
  if (o)
    opt = *o;
  else
    tw_pipeline_options_init (&opt);
  int rank = tw_comm_rank (comm), size = tw_comm_size (comm);
  if (opt.stages < 1 || size % opt.stages != 0)
    {
      g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                   "%d ranks cannot run %d pipeline stages: the ranks must be a multiple of the "
                   "stages (replicas × stages)", size, opt.stages);
      return FALSE;
    }
  if (opt.micro_batches < 1)
    {
      g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                   "%d micro-batches: a pipeline needs at least 1", opt.micro_batches);
      return FALSE;
    }
  g_autofree char *mine = tw_trainer_model_hash (tr);
  g_auto (GStrv) all = tw_comm_allgather_strings (comm, mine, error);
  if (all == NULL)
    return FALSE;
  for (int r = 1; r < size; r++)
    if (g_strcmp0 (all[r], all[0]) != 0)
      {
        g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_MISMATCH,
                     "rank %d has a different model from rank 0's (graph, recipe or parameter "
                     "shapes); every rank must load the same file with the same options", r);
        return FALSE;
      }

  /* Everything local (the same on every rank, so that all fail alike)
   * before the next collective. */
  tw_pipe *P = g_new0 (tw_pipe, 1);
  P->world = comm;
  if (!(opt.bucket_mb > 0))
    opt.bucket_mb = 25;
  P->opt = opt;
  P->rank = rank;
  P->size = size;
  P->n_stages = opt.stages;
  P->n_replicas = size / opt.stages;
  P->stage = rank % opt.stages;
  P->replica = rank / opt.stages;
  P->sends = g_array_new (FALSE, TRUE, sizeof (msg));
  P->correct = -1;
  const tw_graph *g = tr->model->graph;
  P->stage_of = g_new0 (int, MAX (tw_graph_n_nodes (g), 1));
  if (!tw_pipeline_assign_stages (g, P->n_stages, P->stage_of, error)
      || !find_xfers (P, g, error))
    {
      tw_pipe_free (P);
      return FALSE;
    }
  for (int s = 0; s < P->n_stages; s++)
    {
      /* Every stage's sub-graph must build (each rank checks all of them). */
      tw_graph *sub = build_sub (P, g, s, error);
      if (sub == NULL)
        {
          tw_pipe_free (P);
          return FALSE;
        }
      if (s == P->stage)
        P->sub = sub;
      else
        tw_graph_free (sub);
    }
  const tw_node *d = tw_graph_find_source (g, "data"), *l = tw_graph_find_source (g, "label");
  if (d && tw_graph_find (P->sub, d->id))
    P->data_id = g_strdup (d->id);
  if (l && tw_graph_find (P->sub, l->id))
    P->label_id = g_strdup (l->id);
  const tw_node *loss = tw_graph_find_loss (P->sub);
  if (loss)
    P->loss_id = g_strdup (loss->id);
  find_owners (P, tr);

  /* Rank 0's weights and buffers everywhere. */
  for (int i = 0; i < tw_params_count (tr->params); i++)
    {
      tw_param *p = tw_params_at (tr->params, i);
      if (!tw_comm_broadcast_sync (comm, tw_tensor_f32 (p->value), tw_tensor_numel (p->value),
                                   TW_F32, 0, &(tw_coll_tag) { .what = p->name }, error))
        {
          tw_pipe_free (P);
          return FALSE;
        }
    }
  if (P->n_replicas > 1)
    {
      g_autofree char *name = g_strdup_printf ("stage %d", P->stage);
      P->stage_comm = tw_comm_split (comm, P->stage, P->replica, name, error);
      if (P->stage_comm == NULL)
        {
          tw_pipe_free (P);
          return FALSE;
        }
    }
  P->tr = tr;
  P->ar = g_new0 (int, MAX (P->n_owner, 1));
  for (int i = P->n_owner - 1; i >= 0; i--)
    if (P->owner[i] == P->stage && tw_params_at (tr->params, i)->trainable)
      P->ar[P->n_ar++] = i;
  P->ar_ready = g_new0 (gboolean, MAX (P->n_ar, 1));
  buckets_make (P);
  tr->pipe = P;
  return TRUE;
}

int
tw_trainer_pipeline_stage (tw_trainer *tr)
{
  return tr->pipe ? tr->pipe->stage : -1;
}

int
tw_trainer_pipeline_param_stage (tw_trainer *tr, int i)
{
  tw_pipe *P = tr->pipe;
  return P && i >= 0 && i < P->n_owner ? P->owner[i] : -1;
}

int
tw_trainer_pipeline_replica (tw_trainer *tr)
{
  return tr->pipe ? tr->pipe->replica : -1;
}

int
tw_pipe_rank (tw_trainer *tr)
{
  return tr->pipe ? tr->pipe->rank : 0;
}

int
tw_pipe_size (tw_trainer *tr)
{
  return tr->pipe ? tr->pipe->size : 1;
}

gboolean
tw_pipe_sum (tw_trainer *tr, double *v, int n, GError **error)
{
  return tw_comm_allreduce_sync (tr->pipe->world, v, n, TW_F64, TW_REDUCE_SUM,
                                 &(tw_coll_tag) { .what = "totals" }, error);
}

gboolean
tw_trainer_pipeline_bubble (tw_trainer *tr, double *measured, double *theory)
{
  tw_pipe *P = tr->pipe;
  gboolean ok = P && P->measured_steps > 0 && P->sched_sum > 0;
  if (measured)
    *measured = ok ? P->idle_sum / P->sched_sum : NAN;
  if (theory)
    *theory = ok ? (double) (P->n_stages - 1) / (P->last_m + P->n_stages - 1) : NAN;
  return ok;
}

int64_t
tw_trainer_pipeline_correct (tw_trainer *tr)
{
  return tr->pipe ? tr->pipe->correct : -1;
}

double
tw_trainer_pipeline_rank_bubble (tw_trainer *tr)
{
  tw_pipe *P = tr->pipe;
  return P && P->my_sched > 0 ? P->my_idle / P->my_sched : NAN;
}

/* Every parameter (values, optimizer state with with_state) from the first
 * replica of the stage that trains it, to every rank. */
gboolean
tw_pipe_gather (tw_trainer *tr, gboolean with_state, GError **error)
{
  tw_pipe *P = tr->pipe;
  for (int i = 0; i < tw_params_count (tr->params) && i < P->n_owner; i++)
    {
      tw_param *p = tw_params_at (tr->params, i);
      int root = P->owner[i];     /* replica 0's rank of the stage */
      tw_coll_tag tag = { .what = p->name };
      if (!tw_comm_broadcast_sync (P->world, tw_tensor_f32 (p->value), tw_tensor_numel (p->value),
                                   TW_F32, root, &tag, error))
        return FALSE;
      if (!with_state)
        continue;
      int64_t has[2] = { p->state[0] != NULL, p->state[1] != NULL };
      if (!tw_comm_broadcast_sync (P->world, has, 2, TW_I64, root, &tag, error))
        return FALSE;
      for (int k = 0; k < 2; k++)
        {
          if (!has[k])
            {
              g_clear_pointer (&p->state[k], tw_tensor_unref);
              continue;
            }
          if (p->state[k] == NULL)
            p->state[k] = tw_tensor_zeros_like (p->value);
          if (!tw_comm_broadcast_sync (P->world, tw_tensor_f32 (p->state[k]),
                                       tw_tensor_numel (p->state[k]), TW_F32, root, &tag, error))
            return FALSE;
        }
    }
  return TRUE;
}

/* ---- the step --------------------------------------------------------------------------- */

static tw_eager *
executor (tw_trainer *tr, tw_pipe *P, int j, GError **error)
{
  tw_eager **slot = &P->ex[j % P->n_ex];
  if (*slot == NULL)
    {
      *slot = tw_eager_new (P->sub, tr->params, tr->model->recipe.seed, error);
      if (*slot == NULL)
        return NULL;
      g_autoptr (GPtrArray) ins = g_ptr_array_new ();
      for (int k = 0; k < P->n_xfers; k++)
        if (P->xfers[k].to == P->stage)
          g_ptr_array_add (ins, P->xfers[k].in_id);
      g_ptr_array_add (ins, NULL);
      tw_eager_set_grad_inputs (*slot, (const char *const *) ins->pdata);
    }
  tw_eager_set_bus (*slot, tr->bus);
  tw_eager_set_num_threads (*slot, tr->num_threads);
  return *slot;
}

static gboolean
compiled_mode (const tw_trainer *tr)
{
  return tr->mode == TW_MODE_COMPILED;
}

/* Compiled mode's executor of micro-batch j: its TRAIN program starts
 * from the gradients of the values later stages read (and the loss's,
 * weighted, on the last stage), keeps those of the values it receives and
 * accumulates the parameters' gradients in the store. */
static tw_compiled *
compiled_executor (tw_trainer *tr, tw_pipe *P, int j, GError **error)
{
  tw_compiled **slot = &P->cx[j % P->n_ex];
  if (*slot == NULL)
    {
      *slot = tw_compiled_new (P->sub, tr->params, tr->model->recipe.seed, error);
      if (*slot == NULL)
        return NULL;
      g_autoptr (GPtrArray) seeds = g_ptr_array_new ();
      g_autoptr (GPtrArray) ins = g_ptr_array_new ();
      for (int k = 0; k < P->n_xfers; k++)
        {
          if (P->xfers[k].from == P->stage)
            g_ptr_array_add (seeds, P->xfers[k].ref);
          if (P->xfers[k].to == P->stage)
            g_ptr_array_add (ins, P->xfers[k].in_id);
        }
      if (P->loss_id)
        g_ptr_array_add (seeds, P->loss_id);
      g_ptr_array_add (seeds, NULL);
      g_ptr_array_add (ins, NULL);
      tw_grad_spec spec = { .seeds = (const char *const *) seeds->pdata,
                            .grad_inputs = (const char *const *) ins->pdata,
                            .accumulate = TRUE };
      tw_compiled_set_grads (*slot, &spec);
      /* A non-finite loss is the step's to refuse, over every stage's sum
       * (tw_pipe_step), as in eager mode. */
      tw_compiled_set_allow_nan (*slot, TRUE);
    }
  tw_compiled_set_bus (*slot, tr->bus);
  tw_compiled_set_num_threads (*slot, tr->num_threads);
  return *slot;
}

static tw_tensor *
batch_tensor (const tw_tinfo *info, int64_t n)
{
  int64_t shape[TW_MAX_DIMS];
  shape[0] = n;
  for (int d = 1; d < info->ndim; d++)
    shape[d] = info->dims[d];
  return tw_tensor_new (info->dtype, info->ndim, shape);
}

static int
peer (const tw_pipe *P, int stage)
{
  return P->replica * P->n_stages + stage;
}

/* Wait for a receive; the time it took is the rank's idle time. */
static gboolean
wait_idle (tw_pipe *P, tw_comm_req *r, double *idle, GError **error)
{
  gint64 t0 = tw_now_ns ();
  gboolean ok = tw_comm_wait (P->world, r, error);
  *idle += (tw_now_ns () - t0) * 1e-9;
  tw_comm_req_free (r);
  return ok;
}

/* copy: t lives in an arena that a later run reuses before the step's
 * sends are waited for. */
static void
post_send (tw_pipe *P, tw_tensor *t, gboolean copy, int to_stage, const char *what)
{
  msg m = { .t = copy ? tw_tensor_clone (t) : tw_tensor_contiguous (t) };
  m.req = tw_comm_send (P->world, tw_tensor_data (m.t), tw_tensor_numel (m.t), m.t->dtype,
                        peer (P, to_stage), &(tw_coll_tag) { .what = what });
  g_array_append_val (P->sends, m);
}

static gboolean
drain_sends (tw_pipe *P, GError **error)
{
  gboolean ok = TRUE;
  for (guint i = 0; i < P->sends->len; i++)
    {
      msg *m = &g_array_index (P->sends, msg, i);
      ok = tw_comm_wait (P->world, m->req, ok ? error : NULL) && ok;
      tw_comm_req_free (m->req);
      tw_tensor_unref (m->t);
    }
  g_array_set_size (P->sends, 0);
  return ok;
}

typedef struct
{
  tw_tensor *x, *y;           /* the replica's shard */
  int64_t n_all;              /* the global batch */
  int m;
  int64_t n_mine;
  guint64 step;
  double idle;
  double loss_sum;            /* Σ loss_j · n_j / n_all, on the last stage */
  double correct;             /* correct predictions of the replica, on the last stage */
  gboolean unscored;          /* a prediction that is not class scores */
  gboolean first_backward;
  msg *recvs[2];              /* [m × n_xfers]: receives of activations (0), gradients (1) */
  int posted[2];              /* micro-batches whose receives of each kind are posted */
} step_ctx;

static void
mb_rows (const step_ctx *c, int j, int64_t *lo, int64_t *hi)
{
  *lo = c->n_mine * j / c->m;
  *hi = c->n_mine * (j + 1) / c->m;
}

/* The receives of the micro-batches up to `upto`: activations (kind 0)
 * from earlier stages, gradients (kind 1) from later ones.  Posted in
 * micro-batch order, the order every schedule sends them in (messages
 * between two ranks match in the order posted), one micro-batch ahead of
 * use, so that the next one arrives while this stage computes. */
static void
post_recvs (tw_pipe *P, step_ctx *c, int kind, int upto)
{
  for (; c->posted[kind] <= MIN (upto, c->m - 1); c->posted[kind]++)
    {
      int j = c->posted[kind];
      int64_t lo, hi;
      mb_rows (c, j, &lo, &hi);
      for (int k = 0; k < P->n_xfers; k++)
        {
          const xfer *x = &P->xfers[k];
          if ((kind == 0 ? x->to : x->from) != P->stage)
            continue;
          msg *m = &c->recvs[kind][j * P->n_xfers + k];
          m->t = batch_tensor (&x->info, hi - lo);
          g_autofree char *what = g_strdup_printf ("%s mb %d (%s)",
                                                   kind == 0 ? "activations" : "gradients", j,
                                                   x->ref);
          m->req = tw_comm_recv (P->world, tw_tensor_data (m->t), tw_tensor_numel (m->t),
                                 m->t->dtype, peer (P, kind == 0 ? x->from : x->to),
                                 &(tw_coll_tag) { .what = what });
        }
    }
}

/* Micro-batch j's receives of one kind, waited for: the rank's idle time. */
static gboolean
wait_recvs (tw_pipe *P, step_ctx *c, int kind, int j, GError **error)
{
  post_recvs (P, c, kind, j + 1);
  gboolean ok = TRUE;
  for (int k = 0; k < P->n_xfers; k++)
    {
      msg *m = &c->recvs[kind][j * P->n_xfers + k];
      if (m->req)
        ok = wait_idle (P, g_steal_pointer (&m->req), &c->idle, ok ? error : NULL) && ok;
    }
  return ok;
}

static void
free_recvs (tw_pipe *P, step_ctx *c)
{
  for (int kind = 0; kind < 2; kind++)
    {
      for (int i = 0; c->recvs[kind] && i < c->m * P->n_xfers; i++)
        {
          tw_comm_req_free (c->recvs[kind][i].req);
          g_clear_pointer (&c->recvs[kind][i].t, tw_tensor_unref);
        }
      g_clear_pointer (&c->recvs[kind], g_free);
    }
}

static gboolean
forward_mb (tw_trainer *tr, tw_pipe *P, step_ctx *c, int j, GError **error)
{
  gboolean compiled = compiled_mode (tr);
  tw_eager *ex = compiled ? NULL : executor (tr, P, j, error);
  tw_compiled *cx = compiled ? compiled_executor (tr, P, j, error) : NULL;
  if (ex == NULL && cx == NULL)
    return FALSE;
  int64_t lo, hi;
  mb_rows (c, j, &lo, &hi);
  int64_t n = hi - lo;
  g_autoptr (GPtrArray) held = g_ptr_array_new_with_free_func ((GDestroyNotify) tw_tensor_unref);
  GArray *feeds = g_array_new (FALSE, FALSE, sizeof (tw_feed));
  if (P->data_id)
    {
      tw_tensor *t = tw_tensor_slice (c->x, 0, lo, hi, 1);
      g_ptr_array_add (held, t);
      g_array_append_val (feeds, ((tw_feed) { P->data_id, t }));
    }
  if (P->label_id)
    {
      tw_tensor *t = tw_tensor_slice (c->y, 0, lo, hi, 1);
      g_ptr_array_add (held, t);
      g_array_append_val (feeds, ((tw_feed) { P->label_id, t }));
    }
  gboolean ok = wait_recvs (P, c, 0, j, error);
  for (int k = 0; k < P->n_xfers; k++)
    {
      msg *m = &c->recvs[0][j * P->n_xfers + k];
      if (P->xfers[k].to == P->stage && m->t)
        {
          tw_tensor *t = g_steal_pointer (&m->t);
          g_ptr_array_add (held, t);
          g_array_append_val (feeds, ((tw_feed) { P->xfers[k].in_id, t }));
        }
    }
  if (compiled)
    ok = ok && tw_compiled_forward_feeds (cx, (tw_feed *) feeds->data, (int) feeds->len, c->step,
                                          error);
  else
    ok = ok && tw_eager_forward_feeds (ex, (tw_feed *) feeds->data, (int) feeds->len,
                                       P->loss_id != NULL, TRUE, c->step, error);
  tw_tensor *labels = P->label_id ? g_array_index (feeds, tw_feed, P->data_id ? 1 : 0).tensor
                                  : NULL;
  g_array_free (feeds, TRUE);
  if (!ok)
    return FALSE;
  if (P->loss_id)
    {
      double l = compiled ? tw_compiled_loss_value (cx) : tw_eager_loss_value (ex);
      c->loss_sum += l * (double) n / (double) c->n_all;
      int64_t k = tw_count_correct (compiled ? tw_compiled_prediction (cx)
                                             : tw_eager_prediction (ex), labels);
      c->correct += (double) MAX (k, 0);
      c->unscored |= k < 0;
    }
  for (int k = 0; k < P->n_xfers; k++)
    {
      const xfer *x = &P->xfers[k];
      if (x->from != P->stage)
        continue;
      tw_tensor *v = compiled ? tw_compiled_output (cx, x->ref) : tw_eager_value (ex, x->ref);
      g_assert (v != NULL);
      g_autofree char *what = g_strdup_printf ("activations mb %d (%s)", j, x->ref);
      post_send (P, v, compiled, x->to, what);
    }
  return TRUE;
}

static gboolean
backward_mb (tw_trainer *tr, tw_pipe *P, step_ctx *c, int j, GError **error)
{
  gboolean compiled = compiled_mode (tr);
  tw_eager *ex = compiled ? NULL : executor (tr, P, j, error);
  tw_compiled *cx = compiled ? compiled_executor (tr, P, j, error) : NULL;
  if (ex == NULL && cx == NULL)
    return FALSE;
  int64_t lo, hi;
  mb_rows (c, j, &lo, &hi);
  int64_t n = hi - lo;
  g_autoptr (GPtrArray) held = g_ptr_array_new_with_free_func ((GDestroyNotify) tw_tensor_unref);
  GArray *seeds = g_array_new (FALSE, FALSE, sizeof (tw_feed));
  if (P->loss_id)
    {
      /* This micro-batch's share of the global batch's mean loss. */
      tw_tensor *w = tw_tensor_new_like (compiled ? tw_compiled_loss (cx) : tw_eager_loss (ex));
      tw_tensor_fill (w, (double) n / (double) c->n_all);
      g_ptr_array_add (held, w);
      g_array_append_val (seeds, ((tw_feed) { P->loss_id, w }));
    }
  gboolean ok = wait_recvs (P, c, 1, j, error);
  for (int k = 0; k < P->n_xfers; k++)
    {
      msg *m = &c->recvs[1][j * P->n_xfers + k];
      if (P->xfers[k].from == P->stage && m->t)
        {
          tw_tensor *t = g_steal_pointer (&m->t);
          g_ptr_array_add (held, t);
          g_array_append_val (seeds, ((tw_feed) { P->xfers[k].ref, t }));
        }
    }
  if (compiled)
    ok = ok && tw_compiled_backward_from (cx, (tw_feed *) seeds->data, (int) seeds->len,
                                          c->first_backward, error);
  else
    ok = ok && tw_eager_backward_from (ex, (tw_feed *) seeds->data, (int) seeds->len,
                                       c->first_backward, error);
  g_array_free (seeds, TRUE);
  if (!ok)
    return FALSE;
  c->first_backward = FALSE;
  for (int k = 0; k < P->n_xfers; k++)
    {
      const xfer *x = &P->xfers[k];
      if (x->to != P->stage)
        continue;
      tw_tensor *g = compiled ? tw_compiled_input_grad (cx, x->in_id)
                              : tw_eager_input_grad (ex, x->in_id);
      g_autoptr (tw_tensor) zeros = g ? NULL : batch_tensor (&x->info, n);
      if (zeros)
        tw_tensor_fill (zeros, 0);
      g_autofree char *what = g_strdup_printf ("gradients mb %d (%s)", j, x->ref);
      post_send (P, g ? g : zeros, compiled && g, x->from, what);
    }
  if (ex)
    tw_eager_release (ex);
  return TRUE;
}

/* The schedule of stage s: ops[k] = j + 1 for the forward of micro-batch
 * j, −(j + 1) for its backward; 2m entries. */
static void
schedule (const tw_pipe *P, int m, int *ops)
{
  int k = 0;
  if (P->opt.schedule == TW_SCHEDULE_GPIPE)
    {
      for (int j = 0; j < m; j++)
        ops[k++] = j + 1;
      for (int j = 0; j < m; j++)
        ops[k++] = -(j + 1);
      return;
    }
  int warm = MIN (P->n_stages - P->stage - 1, m);
  int f = 0, b = 0;
  for (; f < warm; f++)
    ops[k++] = f + 1;
  while (f < m)
    {
      ops[k++] = ++f;
      ops[k++] = -(++b);
    }
  while (b < m)
    ops[k++] = -(++b);
}

/* Micro-batches held at once by the schedule: its tapes. */
static int
tapes_needed (const tw_pipe *P, int m)
{
  if (P->opt.schedule == TW_SCHEDULE_GPIPE)
    return MAX (m, 1);
  return MAX (MIN (P->n_stages - P->stage, m), 1);
}

static void
update (tw_trainer *tr, tw_pipe *P, double lr)
{
  gboolean listen = tw_bus_wants (tr->bus, TW_EV_UPDATE);
  tw_optimizer_begin_step (tr->opt, lr);
  for (int i = 0; i < P->n_owner; i++)
    {
      tw_param *p = tw_params_at (tr->params, i);
      if (P->owner[i] != P->stage || !p->trainable || p->grad == NULL)
        continue;
      tw_trainer_update_param (tr, i, tw_tensor_f32 (p->grad), listen);
    }
}

static void
ar_post_ready (tw_pipe *P)
{
  while (P->bk_next < P->n_bk)
    {
      int b = P->bk_next;
      gboolean ready = TRUE;
      for (int k = P->bk_first[b]; ready && k < P->bk_first[b + 1]; k++)
        ready = P->ar_ready[k];
      if (!ready)
        return;
      P->bk_next++;
      float *buf = P->bk_buf[b];
      int64_t off = 0;
      for (int k = P->bk_first[b]; k < P->bk_first[b + 1]; k++)
        {
          tw_param *p = tw_params_at (P->tr->params, P->ar[k]);
          if (p->grad == NULL)
            p->grad = tw_tensor_zeros_like (p->value);
          if (buf == NULL)
            buf = tw_tensor_f32 (p->grad);   /* alone in its bucket: in place */
          else
            memcpy (buf + off, tw_tensor_f32 (p->grad), tw_tensor_numel (p->grad) * sizeof (float));
          off += tw_tensor_numel (p->value);
        }
      tw_coll_tag tag = { .what = P->bk_what[b], .params = (const char *const *) P->bk_names[b] };
      P->bk_req[b] = tw_comm_allreduce (P->stage_comm, buf, P->bk_numel[b], TW_F32,
                                        TW_REDUCE_SUM, &tag);
    }
}

/* The stage's gradients (ar: the last parameter first) cut into buckets
 * of bucket_mb (tw_dist_bucket_cut: each takes parameters until it holds that much). */
static void
buckets_make (tw_pipe *P)
{
  P->bk_first = g_new0 (int, P->n_ar + 1);
  P->bk_numel = g_new0 (int64_t, MAX (P->n_ar, 1));
  g_autofree int64_t *numel = g_new (int64_t, MAX (P->n_ar, 1));
  g_autofree int *bucket_of = g_new (int, MAX (P->n_ar, 1));
  for (int k = 0; k < P->n_ar; k++)
    numel[k] = tw_tensor_numel (tw_params_at (P->tr->params, P->ar[k])->value);
  /* Data parallel's cut (tw_dist_bucket_cut): ar's order is contiguous. */
  P->n_bk = tw_dist_bucket_cut (numel, P->n_ar, P->opt.bucket_mb, bucket_of);
  for (int k = P->n_ar - 1; k >= 0; k--)
    {
      P->bk_first[bucket_of[k]] = k;
      P->bk_numel[bucket_of[k]] += numel[k];
    }
  P->bk_first[P->n_bk] = P->n_ar;
  P->bk_buf = g_new0 (float *, MAX (P->n_bk, 1));
  P->bk_req = g_new0 (tw_comm_req *, MAX (P->n_bk, 1));
  P->bk_what = g_new0 (char *, MAX (P->n_bk, 1));
  P->bk_names = g_new0 (char **, MAX (P->n_bk, 1));
  for (int b = 0; b < P->n_bk; b++)
    {
      int n = P->bk_first[b + 1] - P->bk_first[b];
      if (n > 1)
        P->bk_buf[b] = g_new0 (float, P->bk_numel[b]);
      P->bk_names[b] = g_new0 (char *, n + 1);
      for (int j = 0; j < n; j++)
        P->bk_names[b][j] = tw_params_at (P->tr->params, P->ar[P->bk_first[b] + j])->name;
      P->bk_what[b] = n > 1 ? g_strdup_printf ("stage %d bucket %d", P->stage, b)
                            : g_strdup (P->bk_names[b][0]);
    }
}

static gboolean
on_grad_ready (const tw_event *ev, gpointer user)
{
  tw_pipe *P = user;
  if (!P->ar_listen || ev->param == NULL)
    return TRUE;
  for (int k = 0; k < P->n_ar; k++)
    if (tw_params_at (P->tr->params, P->ar[k]) == ev->param)
      {
        P->ar_ready[k] = TRUE;
        ar_post_ready (P);
        break;
      }
  return TRUE;
}

/* grad_ready from the stage's executors, which publish on the trainer's bus. */
static void
ar_subscribe (tw_trainer *tr, tw_pipe *P)
{
  if (P->sub_bus && P->sub_bus == tr->bus)
    return;
  if (P->sub_bus)
    {
      tw_bus_unsubscribe (P->sub_bus, P->sub_id);
      g_clear_pointer (&P->sub_bus, tw_bus_unref);
    }
  if (tr->bus == NULL)
    {
      g_autoptr (tw_bus) bus = tw_bus_new ();
      tw_trainer_set_bus (tr, bus);
    }
  P->sub_bus = tw_bus_ref (tr->bus);
  P->sub_id = tw_bus_subscribe (P->sub_bus, TW_EV_BIT (TW_EV_GRAD_READY), on_grad_ready, P, NULL);
  /* The stage's all-reduces are collectives of the trainer's run too. */
  tw_comm_set_bus (P->stage_comm, tr->bus);
}

/* Every all-reduce posted (those backward did not reach: now), in order,
 * and waited for. */
static gboolean
ar_finish (tw_pipe *P, GError **error)
{
  for (int k = 0; k < P->n_ar; k++)
    P->ar_ready[k] = TRUE;
  ar_post_ready (P);
  gboolean ok = TRUE;
  for (int b = 0; b < P->n_bk; b++)
    {
      ok = tw_comm_wait (P->stage_comm, P->bk_req[b], ok ? error : NULL) && ok;
      g_clear_pointer (&P->bk_req[b], tw_comm_req_free);
      int64_t off = 0;
      for (int k = P->bk_first[b]; ok && P->bk_buf[b] && k < P->bk_first[b + 1]; k++)
        {
          tw_param *p = tw_params_at (P->tr->params, P->ar[k]);
          memcpy (tw_tensor_f32 (p->grad), P->bk_buf[b] + off,
                  tw_tensor_numel (p->grad) * sizeof (float));
          off += tw_tensor_numel (p->value);
        }
    }
  return ok;
}

/* The stage's buffers (running statistics) from its first replica. */
static gboolean
broadcast_buffers (tw_trainer *tr, tw_pipe *P, GError **error)
{
  if (P->stage_comm == NULL)
    return TRUE;
  for (int i = 0; i < P->n_owner; i++)
    {
      tw_param *p = tw_params_at (tr->params, i);
      if (P->owner[i] != P->stage || p->trainable)
        continue;
      if (!tw_comm_broadcast_sync (P->stage_comm, tw_tensor_f32 (p->value),
                                   tw_tensor_numel (p->value), TW_F32, 0,
                                   &(tw_coll_tag) { .what = p->name }, error))
        return FALSE;
    }
  return TRUE;
}

gboolean
tw_pipe_step (tw_trainer *tr, tw_tensor *x, tw_tensor *y, double lr, double *loss,
              GError **error)
{
  tw_pipe *P = tr->pipe;
  gboolean iter_events = tw_bus_wants (tr->bus, TW_EV_ITERATION);
  gint64 t0 = iter_events ? tw_now_ns () : 0;
  if (iter_events && !tw_trainer_publish_iteration (tr, FALSE, t0, NAN, error))
    return FALSE;
  if (tw_params_count (tr->params) != P->n_owner)
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_GRAPH,
                   "the parameters changed under the pipeline (a graph replaced while training "
                   "pipeline parallel is not supported)");
      return FALSE;
    }
  if (!broadcast_buffers (tr, P, error))
    return FALSE;

  step_ctx c = { .n_all = x->shape[0], .step = (guint64) tr->step, .first_backward = TRUE };
  int64_t lo = c.n_all * P->replica / P->n_replicas;
  int64_t hi = c.n_all * (P->replica + 1) / P->n_replicas;
  c.n_mine = hi - lo;
  c.m = (int) MIN ((int64_t) P->opt.micro_batches, c.n_mine);
  g_autoptr (tw_tensor) xs = tw_tensor_slice (x, 0, lo, hi, 1);
  g_autoptr (tw_tensor) ys = tw_tensor_slice (y, 0, lo, hi, 1);
  c.x = xs;
  c.y = ys;
  int need = tapes_needed (P, c.m);
  if (need > P->n_ex)
    {
      /* The executors hold no state between steps: a new pool is as good. */
      for (int i = 0; i < P->n_ex; i++)
        {
          tw_eager_free (P->ex[i]);
          tw_compiled_free (P->cx[i]);
        }
      g_free (P->ex);
      g_free (P->cx);
      P->ex = g_new0 (tw_eager *, need);
      P->cx = g_new0 (tw_compiled *, need);
      P->n_ex = need;
    }

  gint64 t_sched = tw_now_ns ();
  g_autofree int *ops = g_new0 (int, 2 * MAX (c.m, 1));
  schedule (P, c.m, ops);
  GError *local = NULL;
  c.recvs[0] = g_new0 (msg, MAX (c.m * P->n_xfers, 1));
  c.recvs[1] = g_new0 (msg, MAX (c.m * P->n_xfers, 1));
  if (P->stage_comm)
    {
      ar_subscribe (tr, P);
      memset (P->ar_ready, 0, MAX (P->n_ar, 1) * sizeof (gboolean));
      P->bk_next = 0;
    }
  for (int k = 0; k < 2 * c.m && local == NULL; k++)
    {
      int j = ABS (ops[k]) - 1;
      if (ops[k] > 0)
        forward_mb (tr, P, &c, j, &local);
      else
        {
          /* The last op of every schedule: gradients final as it goes. */
          P->ar_listen = P->stage_comm && k == 2 * c.m - 1;
          backward_mb (tr, P, &c, j, &local);
          P->ar_listen = FALSE;
        }
    }
  if (local == NULL)
    drain_sends (P, &local);
  else
    drain_sends (P, NULL);
  free_recvs (P, &c);
  double sched = (tw_now_ns () - t_sched) * 1e-9;
  /* A shard without rows had no backward: its gradients are zero (before
   * their all-reduces, which such a replica posts only now). */
  if (local == NULL && c.first_backward)
    for (int i = 0; i < P->n_owner; i++)
      {
        tw_param *p = tw_params_at (tr->params, i);
        if (P->owner[i] == P->stage && p->trainable && p->grad)
          tw_tensor_fill (p->grad, 0);
      }
  GError *ar_error = NULL;
  if (P->stage_comm && !ar_finish (P, &ar_error))
    {
      if (local == NULL)
        {
          local = ar_error;
          g_prefix_error (&local, "the all-reduce of its gradients: ");
        }
      else
        g_error_free (ar_error);
    }
  if (local)
    {
      g_propagate_prefixed_error (error, local, "stage %d (rank %d): ", P->stage, P->rank);
      return FALSE;
    }
  /* The global loss (the last stages' sums), and the idle and schedule
   * times of every rank; then one slot per rank: its busy time (the
   * schedule less its waits), for tw_trainer_rank_step_ms. */
  int nw = P->size;
  double *tot = g_newa (double, 5 + nw);
  memset (tot, 0, (5 + nw) * sizeof (double));
  tot[0] = P->loss_id ? c.loss_sum : 0;
  tot[1] = c.idle;
  tot[2] = sched;
  tot[3] = c.correct;
  tot[4] = P->loss_id && c.unscored ? 1 : 0;
  tot[5 + P->rank] = MAX (sched - c.idle, 0) * 1e3;
  if (!tw_comm_allreduce_sync (P->world, tot, 5 + nw, TW_F64, TW_REDUCE_SUM,
                               &(tw_coll_tag) { .what = "loss" }, error))
    return FALSE;
  tw_trainer_set_rank_ms (tr, tot + 5, nw);
  double l = tot[0];
  P->correct = tot[4] == 0 ? (int64_t) tot[3] : -1;
  if (loss)
    *loss = l;
  if (!isfinite (l) && !tr->allow_nan)
    {
      g_set_error (error, TW_EXEC_ERROR, TW_EXEC_ERROR_NAN,
                   "the loss became %s at step %" G_GINT64_FORMAT " (lower the learning rate, "
                   "or pass --allow-nan to go on)", isnan (l) ? "NaN" : "infinite", tr->step + 1);
      return FALSE;
    }
  /* The first step makes the executors and their buffers: measured
   * alone only until a second one comes. */
  if (++P->steps_run == 2)
    {
      P->idle_sum = P->sched_sum = P->my_idle = P->my_sched = 0;
      P->measured_steps = 0;
    }
  P->idle_sum += tot[1];
  P->sched_sum += tot[2];
  P->my_idle += c.idle;
  P->my_sched += sched;
  P->measured_steps++;
  P->last_m = c.m;
  tr->lr = lr;
  update (tr, P, lr);
  if (iter_events)
    tw_trainer_publish_iteration (tr, TRUE, t0, l, NULL);
  tr->step++;
  return TRUE;
}
