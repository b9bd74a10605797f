/* step.c — a data-parallel step in the simulator's time mode (step.h).
 *
 * Device peaks (dense, no sparsity; the matrix class at TF32, as PyTorch
 * runs float32 convolutions by default on tensor cores):
 *   H100 SXM5  FP32 67 TFLOP/s, TF32 494.7 TFLOP/s, HBM3 3.35 TB/s, 80 GB
 *              (NVIDIA H100 Tensor Core GPU datasheet)
 *   H200 SXM   the H100's compute, HBM3e 4.8 TB/s, 141 GB (NVIDIA H200
 *              datasheet)
 *   A100 SXM4  FP32 19.5 TFLOP/s, TF32 156 TFLOP/s, HBM2e 2.039 TB/s, 80 GB
 *              (NVIDIA A100 datasheet)
 *   MI300X     FP32 163.4 TFLOP/s, TF32 653.7 TFLOP/s, HBM3 5.3 TB/s, 192 GB
 *              (AMD Instinct MI300X data sheet)
 * Efficiencies (0.6 of the matrix peak, 0.5 of the vector peak, 0.8 of the
 * memory bandwidth) and a 4 µs launch are starting points for a roofline;
 * a calibration or a real trace replaces them. */
#define G_LOG_DOMAIN "twb-sim"

#include "engine/sim/step.h"
#include "engine/train.h"

#include <math.h>
#include <string.h>

static const tw_device_profile profiles[] = {
  { "h100", 494.7e12, 67e12, 3.35e12, 0.6, 0.5, 0.8, 4e-6, 80e9 },
  { "h200", 494.7e12, 67e12, 4.8e12, 0.6, 0.5, 0.8, 4e-6, 141e9 },
  { "a100", 156e12, 19.5e12, 2.039e12, 0.6, 0.5, 0.8, 4e-6, 80e9 },
  { "mi300x", 653.7e12, 163.4e12, 5.3e12, 0.6, 0.5, 0.8, 4e-6, 192e9 },
};

gboolean
tw_device_profile_named (const char *name, tw_device_profile *out, GError **error)
{
  for (guint i = 0; i < G_N_ELEMENTS (profiles); i++)
    if (g_ascii_strcasecmp (name ? name : "", profiles[i].name) == 0)
      {
        *out = profiles[i];
        return TRUE;
      }
  g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
               "device %s: unknown (known: h100, h200, a100, mi300x)", name ? name : "(none)");
  return FALSE;
}

static gboolean
is_matrix_op (const char *op)
{
  static const char *const names[] = { "linear", "matmul", "conv1d", "conv2d", "conv3d",
                                       "conv_transpose2d", "gemm", "attention", "embedding",
                                       NULL };
  for (int i = 0; names[i]; i++)
    if (g_strcmp0 (op, names[i]) == 0)
      return TRUE;
  return FALSE;
}

static gboolean
has_trainable (const tw_node *n)
{
  for (int k = 0; k < n->n_params; k++)
    if (n->params[k].trainable)
      return TRUE;
  return FALSE;
}

double
tw_device_op_time (const tw_device_profile *d, const tw_node *n, gboolean backward)
{
  if (g_strcmp0 (n->op_name, "input") == 0)
    return 0;
  double k = backward ? (has_trainable (n) ? 2 : 1) : 1;
  double peak = is_matrix_op (n->op_name) ? d->matmul_flops * d->matmul_eff
                                          : d->vector_flops * d->vector_eff;
  double flops = k * n->cost.flops, bytes = k * (n->cost.bytes_read + n->cost.bytes_written);
  return d->launch_s + fmax (flops / peak, bytes / (d->mem_bw * d->mem_eff));
}

void
tw_sim_dp_options_init (tw_sim_dp_options *o)
{
  memset (o, 0, sizeof *o);
  o->ranks = 1;
  o->algo = TW_ALGO_RING;
  o->bucket_mb = 25;
  o->gamma = -1;
}

typedef struct
{
  GArray *nodes;              /* int: node indices whose gradients it holds */
  double bytes;
} sim_bucket;


/* A node's time on this rank: measured when the calibration has it, else
 * the roofline's; times the cores' sharing. */
static double
op_time (const tw_sim_dp_options *o, const tw_device_profile *d, const tw_node *n,
         gboolean backward)
{
  double scale = o->compute_scale > 0 ? o->compute_scale : 1;
  const double *m = o->node_times ? g_hash_table_lookup (o->node_times, n->id) : NULL;
  return scale * (m ? m[backward ? 1 : 0] : tw_device_op_time (d, n, backward));
}

/* Node ni's backward has ended: one member less for bucket b when ni is
 * one of its; TRUE when that was its last. */
static gboolean
node_done (GArray *buckets, int b, int ni, int *pending)
{
  GArray *nodes = g_array_index (buckets, sim_bucket, b).nodes;
  for (guint i = 0; i < nodes->len; i++)
    if (g_array_index (nodes, int, i) == ni)
      return --pending[b] == 0;
  return FALSE;
}

static double
update_time (const tw_sim_dp_options *o, const tw_device_profile *d, double bytes)
{
  double scale = o->compute_scale > 0 ? o->compute_scale : 1;
  if (o->update_s_per_byte > 0)
    return scale * o->update_s_per_byte * bytes;
  /* Adam: read p, g, m, v; write p, m, v. */
  return scale * (d->launch_s + 7 * bytes / (d->mem_bw * d->mem_eff));
}

void
tw_sim_schedule_clear (GArray *schedule)
{
  for (guint i = 0; schedule && i < schedule->len; i++)
    g_free (g_array_index (schedule, tw_sim_event, i).name);
  if (schedule)
    g_array_set_size (schedule, 0);
}

/* Appends an event to o->schedule (when recording); its index, or -1. */
static int
record (const tw_sim_dp_options *o, tw_sim_event_kind kind, char *name, const tw_node *n,
        double start, double dur, double bytes, double flops, int dep)
{
  if (o->schedule == NULL)
    {
      g_free (name);
      return -1;
    }
  tw_sim_event e = { kind, name, n ? n->id : NULL, start, dur, bytes, flops, dep };
  g_array_append_val (o->schedule, e);
  return (int) o->schedule->len - 1;
}

/* The ranks are identical: one rank's chain, each collective's time from
 * tw_sim_allreduce_time (every member starts it at once). */
static gboolean
fast_step (tw_graph *g, GArray *order, GArray *buckets, const int *bucket_of,
           const tw_device_profile *d, tw_topo *t, const tw_sim_dp_options *o, double gamma,
           int64_t global_batch, tw_sim_dp_result *out, GError **error)
{
  int p = o->ranks, nn = (int) order->len, nb = (int) buckets->len;
  g_autofree double *link_bytes = g_new0 (double, MAX (tw_topo_n_links (t), 1));
  g_autofree int *pending = g_new0 (int, MAX (nb, 1));
  for (int b = 0; b < nb; b++)
    pending[b] = (int) g_array_index (buckets, sim_bucket, b).nodes->len;
  double now = 0, compute = 0, comm_free = 0, first_start = -1, comm_sum = 0;
  double c0 = o->collective_overhead_s;
  now = compute = o->step_overhead_s * (o->compute_scale > 0 ? o->compute_scale : 1);
  if (now > 0)
    record (o, TW_SIM_EV_COMPUTE, g_strdup ("step overhead"), NULL, 0, now, 0, 0, -1);
  for (int j = 0; j < nn; j++)
    {
      const tw_node *n = tw_graph_node (g, g_array_index (order, int, j));
      double dt = op_time (o, d, n, FALSE);
      record (o, TW_SIM_EV_COMPUTE, g_strdup_printf ("forward %s", n->id), n, now, dt, 0,
              n->cost.flops, -1);
      now += dt;
      compute += dt;
      out->activation_bytes += n->cost.bytes_written;
    }
  int next_post = 0, last_coll = -1;
  for (int j = nn - 1; j >= 0; j--)
    {
      int ni = g_array_index (order, int, j);
      const tw_node *bn = tw_graph_node (g, ni);
      double dt = op_time (o, d, bn, TRUE);
      int ev = record (o, TW_SIM_EV_COMPUTE, g_strdup_printf ("backward %s", bn->id), bn, now,
                       dt, 0, (bn->n_params > 0 ? 2.0 : 1.0) * bn->cost.flops, -1);
      now += dt;
      compute += dt;
      for (int b = 0; bucket_of[ni] >= 0 && b < nb; b++)
        node_done (buckets, b, ni, pending);
      while (next_post < nb && pending[next_post] == 0)
        {
          double bytes = g_array_index (buckets, sim_bucket, next_post++).bytes;
          double start = fmax (now, comm_free);
          double dur = tw_sim_allreduce_time (t, o->algo, NULL, p, bytes, gamma, link_bytes, error);
          if (isnan (dur))
            return FALSE;
          dur += p > 1 ? c0 + o->collective_s_per_byte * bytes : 0;
          if (first_start < 0)
            first_start = start;
          last_coll = record (o, TW_SIM_EV_COLLECTIVE,
                              g_strdup_printf ("all-reduce bucket %d", next_post - 1), NULL, start,
                              dur, bytes, 0, ev);
          comm_free = start + dur;
          comm_sum += dur;
        }
    }
  double bwd_end = now;
  int last_bwd = o->schedule && o->schedule->len ? (int) o->schedule->len - 1 : -1;
  /* The last compute event is the last backward (the collectives come
   * after it only when one was posted by it). */
  for (int k = last_bwd; o->schedule && k >= 0; k--)
    if (g_array_index (o->schedule, tw_sim_event, k).kind == TW_SIM_EV_COMPUTE)
      {
        last_bwd = k;
        break;
      }
  (void) last_coll;
  double loss = tw_sim_allreduce_time (t, o->algo, NULL, p, 32, gamma, link_bytes, error);
  if (isnan (loss))
    return FALSE;
  loss += p > 1 ? c0 + o->collective_s_per_byte * 32 : 0;
  double loss_done = fmax (bwd_end, comm_free) + loss;
  int loss_ev = record (o, TW_SIM_EV_COLLECTIVE, g_strdup ("all-reduce loss"), NULL,
                        fmax (bwd_end, comm_free), loss, 32, 0, last_bwd);
  comm_sum += loss;
  now = loss_done;
  for (int b = 0; b < nb; b++)
    {
      double dt = update_time (o, d, g_array_index (buckets, sim_bucket, b).bytes);
      record (o, TW_SIM_EV_COMPUTE, g_strdup_printf ("update bucket %d", b), NULL, now, dt, 0, 0,
              b == 0 ? loss_ev : -1);
      now += dt;
      compute += dt;
    }
  out->compute_s = compute;
  out->step_s = now;
  out->comm_s = p > 1 ? comm_sum : 0;
  out->exposed_s = loss_done - bwd_end;
  out->samples_per_s = now > 0 ? (double) global_batch / now : 0;
  out->busiest_link = -1;
  for (int l = 0; l < tw_topo_n_links (t); l++)
    if (link_bytes[l] > out->busiest_link_bytes)
      {
        out->busiest_link_bytes = link_bytes[l];
        out->busiest_link = l;
      }
  return TRUE;
}

gboolean
tw_sim_dp_step (const tw_graph *g0, int64_t global_batch, const tw_device_profile *d, tw_topo *t,
                const tw_sim_dp_options *o, tw_sim_dp_result *out, GError **error)
{
  memset (out, 0, sizeof *out);
  int p = o->ranks;
  if (p < 1 || p > tw_topo_n_devices (t))
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                   "%d ranks on a topology of %d devices: 1 to %d ranks can run there", p,
                   tw_topo_n_devices (t), tw_topo_n_devices (t));
      return FALSE;
    }
  if (global_batch < p)
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                   "a batch of %" G_GINT64_FORMAT " samples cannot be split into %d ranks' shards",
                   global_batch, p);
      return FALSE;
    }
  int64_t shard = (global_batch + p - 1) / p;   /* the largest shard sets the pace */
  g_autoptr (tw_graph) g = tw_graph_copy (g0);
  if (tw_graph_infer_batch (g, shard) > 0)
    {
      g_autofree char *msg = tw_graph_errors_to_string (g);
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG, "the model does not infer: %s", msg);
      return FALSE;
    }
  g_autoptr (GArray) order = NULL;
  if (!tw_graph_topo_order (g, &order, error))
    return FALSE;
  int nn = (int) order->len;
  double gamma = o->gamma >= 0 ? o->gamma : 3.0 / (d->mem_bw * d->mem_eff);

  /* Buckets over the trainable parameters in the order backward finishes
   * them (the engine's from its second step on: a node's parameters when
   * its backward ends), cut as the engine cuts them (tw_dist_bucket_cut). */
  GArray *buckets = g_array_new (FALSE, TRUE, sizeof (sim_bucket));
  g_autofree int *bucket_of = g_new (int, MAX (tw_graph_n_nodes (g), 1));
  for (int i = 0; i < tw_graph_n_nodes (g); i++)
    bucket_of[i] = -1;
  g_autoptr (GArray) numel = g_array_new (FALSE, FALSE, sizeof (int64_t));
  g_autoptr (GArray) owner = g_array_new (FALSE, FALSE, sizeof (int));
  for (int j = nn - 1; j >= 0; j--)
    {
      int ni = g_array_index (order, int, j);
      const tw_node *n = tw_graph_node (g, ni);
      /* The engine's order: parameters by index, the last first. */
      for (int k = n->n_params - 1; k >= 0; k--)
        {
          int64_t e = tw_tinfo_numel (&n->params[k].info, NULL);
          out->param_bytes += (double) e * tw_dtype_size (n->params[k].info.dtype);
          if (!n->params[k].trainable || n->share)
            continue;
          g_array_append_val (numel, e);
          g_array_append_val (owner, ni);
        }
    }
  g_autofree int *cut = g_new (int, MAX (numel->len, 1));
  int n_cut = tw_dist_bucket_cut ((const int64_t *) numel->data, (int) numel->len,
                                  MAX (o->bucket_mb, 1e-9), cut);
  for (int b = 0; b < n_cut; b++)
    {
      sim_bucket e = { g_array_new (FALSE, FALSE, sizeof (int)), 0 };
      g_array_append_val (buckets, e);
    }
  for (guint j = 0; j < numel->len; j++)
    {
      sim_bucket *k = &g_array_index (buckets, sim_bucket, cut[j]);
      int ni = g_array_index (owner, int, j);
      /* A node's parameters may fall in two buckets: its backward ends
       * both its parts (the later bucket is the one that waits for it). */
      if (k->nodes->len == 0 || g_array_index (k->nodes, int, k->nodes->len - 1) != ni)
        g_array_append_val (k->nodes, ni);
      k->bytes += 4.0 * g_array_index (numel, int64_t, j);
      bucket_of[ni] = cut[j];
      out->grad_bytes += 4.0 * g_array_index (numel, int64_t, j);
    }
  int nb = (int) buckets->len;
  out->buckets = nb;
  out->grad_mem_bytes = out->grad_bytes;
  out->optimizer_bytes = 2 * out->grad_bytes;   /* Adam's m and v */

  if (!o->exact)
    {
      gboolean ok = fast_step (g, order, buckets, bucket_of, d, t, o, gamma, global_batch, out,
                               error);
      for (int b = 0; b < nb; b++)
        g_array_unref (g_array_index (buckets, sim_bucket, b).nodes);
      g_array_unref (buckets);
      return ok;
    }
  g_autoptr (tw_netsim) s = tw_netsim_new (t);
  g_autofree int *cur = g_new (int, p);         /* each rank's last compute event */
  g_autofree int *comm = g_new (int, p);        /* each rank's last collective */
  g_autofree int *tmp = g_new (int, p);
  g_autofree int *bucket_ready = g_new (int, (gsize) MAX (nb, 1) * p);
  g_autofree int *bucket_done = g_new (int, (gsize) MAX (nb, 1) * p);
  /* Rank 0's collectives: the events they start and end at. */
  g_autoptr (GArray) coll_start = g_array_new (FALSE, FALSE, sizeof (int));
  g_autoptr (GArray) coll_end = g_array_new (FALSE, FALSE, sizeof (int));
  for (int r = 0; r < p; r++)
    cur[r] = comm[r] = -1;
  double compute = o->step_overhead_s * (o->compute_scale > 0 ? o->compute_scale : 1);
  double c0 = p > 1 ? o->collective_overhead_s : 0;
  for (int r = 0; compute > 0 && r < p; r++)
    cur[r] = tw_netsim_add (s, r, r, 0, compute, NULL, 0);
  /* Forward, then backward in reverse: one chain of events per rank. */
  for (int j = 0; j < nn; j++)
    {
      const tw_node *n = tw_graph_node (g, g_array_index (order, int, j));
      double dt = op_time (o, d, n, FALSE);
      compute += dt;
      out->activation_bytes += n->cost.bytes_written;
      for (int r = 0; r < p; r++)
        cur[r] = tw_netsim_add (s, r, r, 0, dt, &cur[r], 1);
    }
  g_autofree int *pending = g_new0 (int, MAX (nb, 1));
  for (int b = 0; b < nb; b++)
    pending[b] = (int) g_array_index (buckets, sim_bucket, b).nodes->len;
  int next_post = 0;
  for (int j = nn - 1; j >= 0; j--)
    {
      int ni = g_array_index (order, int, j);
      const tw_node *n = tw_graph_node (g, ni);
      double dt = op_time (o, d, n, TRUE);
      compute += dt;
      for (int r = 0; r < p; r++)
        cur[r] = tw_netsim_add (s, r, r, 0, dt, &cur[r], 1);
      if (bucket_of[ni] < 0)
        continue;
      for (int b = 0; b < nb; b++)
        if (node_done (buckets, b, ni, pending))
          for (int r = 0; r < p; r++)
            bucket_ready[b * p + r] = cur[r];
      /* Buckets are posted in order, each when it is whole. */
      while (next_post < nb && pending[next_post] == 0)
        {
          int k = next_post++;
          for (int r = 0; r < p; r++)
            {
              int deps[2] = { bucket_ready[k * p + r], comm[r] };
              double extra = p > 1 ? o->collective_s_per_byte
                                       * g_array_index (buckets, sim_bucket, k).bytes : 0;
              tmp[r] = tw_netsim_add (s, r, r, 0, c0 + extra, deps, 2);
            }
          g_array_append_val (coll_start, tmp[0]);
          tw_sim_allreduce (s, o->algo, NULL, p, g_array_index (buckets, sim_bucket, k).bytes,
                            gamma, tmp);
          for (int r = 0; r < p; r++)
            comm[r] = bucket_done[k * p + r] = tmp[r];
          g_array_append_val (coll_end, tmp[0]);
        }
    }
  /* The loss's all-reduce comes after the buckets (its wait is theirs),
   * then each bucket's update. */
  g_autofree int *bwd_end = g_memdup2 (cur, p * sizeof (int));
  for (int r = 0; r < p; r++)
    {
      int deps[2] = { cur[r], comm[r] };
      tmp[r] = tw_netsim_add (s, r, r, 0, c0 + (p > 1 ? o->collective_s_per_byte * 32 : 0), deps,
                              2);
    }
  g_array_append_val (coll_start, tmp[0]);
  tw_sim_allreduce (s, o->algo, NULL, p, 32, gamma, tmp);
  g_array_append_val (coll_end, tmp[0]);
  g_autofree int *loss_done = g_memdup2 (tmp, p * sizeof (int));
  for (int r = 0; r < p; r++)
    cur[r] = tmp[r];
  for (int b = 0; b < nb; b++)
    {
      double dt = update_time (o, d, g_array_index (buckets, sim_bucket, b).bytes);
      compute += dt;
      for (int r = 0; r < p; r++)
        {
          int deps[2] = { cur[r], bucket_done[b * p + r] };
          cur[r] = tw_netsim_add (s, r, r, 0, dt, deps, 2);
        }
    }
  gboolean ok = tw_netsim_run (s, error);
  if (ok)
    {
      out->compute_s = compute;
      for (int r = 0; r < p; r++)
        out->step_s = fmax (out->step_s, tw_netsim_end (s, cur[r]));
      for (guint k = 0; p > 1 && k < coll_start->len; k++)
        out->comm_s += tw_netsim_end (s, g_array_index (coll_end, int, k))
                       - tw_netsim_start (s, g_array_index (coll_start, int, k));
      out->exposed_s = tw_netsim_end (s, loss_done[0]) - tw_netsim_end (s, bwd_end[0]);
      out->samples_per_s = out->step_s > 0 ? (double) global_batch / out->step_s : 0;
      out->busiest_link = -1;
      for (int l = 0; l < tw_topo_n_links (t); l++)
        if (tw_netsim_link_bytes (s, l) > out->busiest_link_bytes)
          {
            out->busiest_link_bytes = tw_netsim_link_bytes (s, l);
            out->busiest_link = l;
          }
    }
  for (int b = 0; b < nb; b++)
    g_array_unref (g_array_index (buckets, sim_bucket, b).nodes);
  g_array_unref (buckets);
  return ok;
}
