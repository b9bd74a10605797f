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
#include "engine/comm/compress.h"
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
  o->staleness = -1;
}

/* splitmix64: a draw that depends on (seed, rank, step) alone, so a
 * configuration gives the same factors whatever order they are asked in. */
static guint64
mix64 (guint64 x)
{
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

double
tw_sim_rank_factor (const tw_sim_dp_options *o, int rank, int ranks, int step)
{
  double f = o->straggler > 1 && rank == ranks - 1 ? o->straggler : 1;
  if (o->jitter > 0)
    {
      guint64 h = mix64 (o->seed ^ mix64 (((guint64) (guint32) rank << 32) | (guint32) step));
      double u1 = ((double) (h >> 11) + 0.5) / 9007199254740992.0;   /* (0, 1) */
      double u2 = (double) (mix64 (h) >> 11) / 9007199254740992.0;
      double z = sqrt (-2 * log (u1)) * cos (2 * G_PI * u2);
      /* Log-normal of mean 1: σ² = ln (1 + cv²), μ = −σ²/2. */
      double s2 = log1p (o->jitter * o->jitter);
      f *= exp (-s2 / 2 + sqrt (s2) * z);
    }
  return f;
}

double
tw_sim_slowest_factor (const tw_sim_dp_options *o, int ranks)
{
  if (o->jitter <= 0)
    return o->straggler > 1 ? o->straggler : 1;
  double sum = 0;
  for (int k = 0; k < 256; k++)
    {
      double mx = 0;
      for (int r = 0; r < ranks; r++)
        mx = fmax (mx, tw_sim_rank_factor (o, r, ranks, k));
      sum += mx;
    }
  return sum / 256;
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

/* A span into o->spans (when set); its times come later in the exact
 * step, where ev holds the events they are read from. */
static void
span_add (const tw_sim_dp_options *o, GArray *ev, int rank, tw_event_kind kind, const tw_node *n,
          int ni, double start, double dur, int ev_start, int ev_end)
{
  /* Inputs take no time: a real trace has no span for them either. */
  if (o->spans == NULL || (n && g_strcmp0 (n->op_name, "input") == 0))
    return;
  tw_sim_span sp = { .rank = rank, .kind = kind, .node = ni, .start_s = start, .dur_s = dur };
  if (n)
    g_snprintf (sp.name, sizeof sp.name, "%s (%s)", n->op_name, n->id);
  else
    g_strlcpy (sp.name, "step overhead", sizeof sp.name);
  g_array_append_val (o->spans, sp);
  if (ev)
    {
      int e[2] = { ev_start, ev_end };
      g_array_append_vals (ev, e, 2);
    }
}

static void
span_last_coll (const tw_sim_dp_options *o, tw_event_kind kind, tw_coll_kind coll, int seq,
                double bytes, const char *what)
{
  if (o->spans == NULL)
    return;
  tw_sim_span *sp = &g_array_index (o->spans, tw_sim_span, o->spans->len - 1);
  sp->kind = kind;
  sp->seq = seq;
  sp->bytes = bytes;
  sp->algo = coll == TW_COLL_ALLREDUCE ? o->algo : TW_ALGO_RING;
  sp->coll = coll;
  sp->node = -1;
  g_strlcpy (sp->what, what, sizeof sp->what);
  if (kind == TW_EV_COLLECTIVE)
    g_snprintf (sp->name, sizeof sp->name, "%s %s", tw_coll_kind_name (coll), what);
  else
    g_snprintf (sp->name, sizeof sp->name, "update %s", what);
}

static void
span_last_named (const tw_sim_dp_options *o, tw_event_kind kind, int seq, double bytes,
                 const char *what)
{
  span_last_coll (o, kind, TW_COLL_ALLREDUCE, seq, bytes, what);
}

gboolean
tw_sim_compress_parse (const char *spec, tw_sim_dp_options *o, GError **error)
{
  o->compress = TW_SIM_COMPRESS_NONE;
  if (spec == NULL || strcmp (spec, "none") == 0)
    return TRUE;
  if (strcmp (spec, "int8") == 0)
    o->compress = TW_SIM_COMPRESS_INT8;
  else if (strcmp (spec, "sign") == 0)
    o->compress = TW_SIM_COMPRESS_SIGN;
  else if (g_str_has_prefix (spec, "topk:"))
    {
      char *end = NULL;
      double f = g_ascii_strtod (spec + 5, &end);
      if (end == spec + 5 || *end || !(f > 0 && f <= 1))
        {
          g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                       "compression %s: top-k's fraction F in (0, 1] is needed (topk:0.01)", spec);
          return FALSE;
        }
      o->compress = TW_SIM_COMPRESS_TOPK;
      o->compress_fraction = f;
    }
  else
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                   "compression %s: the simulator models topk:F, int8 and sign (PowerSGD's "
                   "payload depends on the buckets' matrix shapes: not modelled yet)", spec);
      return FALSE;
    }
  return TRUE;
}

double
tw_sim_compress_payload (const tw_sim_dp_options *o, double n)
{
  switch (o->compress)
    {
    case TW_SIM_COMPRESS_TOPK:
      return 8.0 * (double) tw_compress_topk_k (o->compress_fraction, (int64_t) n);
    case TW_SIM_COMPRESS_INT8:
      return n + 4;
    case TW_SIM_COMPRESS_SIGN:
      return ceil (n / 8) + 4;
    default:
      return 4 * n;
    }
}

/* Ring all-reduce time of bytes over p, its links' bytes times `share`
 * into link_bytes (the ring's halves are its reduce-scatter and its
 * all-gather: each moves half its bytes, the all-gather half its time when
 * gamma is 0, since every step of a ring has the same pattern). */
static double
ring_part (tw_topo *t, int p, double bytes, double gamma, double share, double *link_bytes,
           GError **error)
{
  int nl = tw_topo_n_links (t);
  g_autofree double *lb = g_new0 (double, MAX (nl, 1));
  double dur = tw_sim_allreduce_time (t, TW_ALGO_RING, NULL, p, bytes, gamma, lb, error);
  for (int l = 0; l < nl; l++)
    link_bytes[l] += share * lb[l];
  return dur;
}

/* A bucket's collective during backward: the all-reduce, ZeRO-1's
 * reduce-scatter (the all-reduce less its all-gather half), or the
 * compressed payload's all-gather (a ring all-gather of p payloads takes
 * half a ring all-reduce of them at gamma 0) plus the compressor's pass
 * over the bucket (read it, write the payload) and the decompressor's
 * (read the p payloads, write the bucket), memory-bound. */
static double
bucket_comm (tw_topo *t, const tw_sim_dp_options *o, const tw_device_profile *d, int p,
             double bytes, double gamma, double *link_bytes, tw_coll_kind *kind, GError **error)
{
  *kind = TW_COLL_ALLREDUCE;
  if (o->compress != TW_SIM_COMPRESS_NONE && p > 1)
    {
      double pay = tw_sim_compress_payload (o, bytes / 4);
      *kind = TW_COLL_ALLGATHER;
      double ag = ring_part (t, p, p * pay, 0, 0.5, link_bytes, error) / 2;
      double bw = d->mem_bw * d->mem_eff;
      return ag + 2 * d->launch_s + (bytes + pay) / bw + (p * pay + bytes) / bw;
    }
  if (o->shard_optimizer && p > 1)
    {
      *kind = TW_COLL_REDUCE_SCATTER;
      double full = ring_part (t, p, bytes, gamma, 0.5, link_bytes, error);
      double ag = tw_sim_allreduce_time (t, TW_ALGO_RING, NULL, p, bytes, 0, NULL, error) / 2;
      return full - ag;
    }
  return tw_sim_allreduce_time (t, o->algo, NULL, p, bytes, gamma, link_bytes, error);
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
  int seq = 0;
  double c0 = o->collective_overhead_s;
  now = compute = o->step_overhead_s * (o->compute_scale > 0 ? o->compute_scale : 1);
  if (now > 0)
    span_add (o, NULL, 0, TW_EV_DATA, NULL, -1, 0, now, 0, 0);
  for (int j = 0; j < nn; j++)
    {
      const tw_node *n = tw_graph_node (g, g_array_index (order, int, j));
      double dt = op_time (o, d, n, FALSE);
      span_add (o, NULL, 0, TW_EV_FORWARD, n, g_array_index (order, int, j), now, dt, 0, 0);
      now += dt;
      compute += dt;
      out->activation_bytes += n->cost.bytes_written;
    }
  int next_post = 0;
  for (int j = nn - 1; j >= 0; j--)
    {
      int ni = g_array_index (order, int, j);
      double dt = op_time (o, d, tw_graph_node (g, ni), TRUE);
      span_add (o, NULL, 0, TW_EV_BACKWARD, tw_graph_node (g, ni), ni, now, dt, 0, 0);
      now += dt;
      compute += dt;
      for (int b = 0; bucket_of[ni] >= 0 && b < nb; b++)
        node_done (buckets, b, ni, pending);
      while (next_post < nb && pending[next_post] == 0)
        {
          double bytes = g_array_index (buckets, sim_bucket, next_post++).bytes;
          if (o->local_sgd > 1)
            continue;
          double start = fmax (now, comm_free);
          tw_coll_kind kind;
          double dur = bucket_comm (t, o, d, p, bytes, gamma, link_bytes, &kind, error);
          if (isnan (dur))
            return FALSE;
          dur += p > 1 ? c0 + o->collective_s_per_byte * bytes : 0;
          if (first_start < 0)
            first_start = start;
          comm_free = start + dur;
          comm_sum += dur;
          if (p > 1)
            {
              char what[24];
              g_snprintf (what, sizeof what, "bucket %d", next_post - 1);
              span_add (o, NULL, 0, TW_EV_COLLECTIVE, NULL, -1, start, dur, 0, 0);
              span_last_coll (o, TW_EV_COLLECTIVE, kind, ++seq, bytes, what);
            }
        }
    }
  double bwd_end = now;
  double loss = tw_sim_allreduce_time (t, o->algo, NULL, p, 32, gamma, link_bytes, error);
  if (isnan (loss))
    return FALSE;
  loss += p > 1 ? (o->lockstep_s > 0 ? o->lockstep_s : c0) + o->collective_s_per_byte * 32 : 0;
  double loss_done = fmax (bwd_end, comm_free) + loss;
  comm_sum += loss;
  if (p > 1)
    {
      span_add (o, NULL, 0, TW_EV_COLLECTIVE, NULL, -1, loss_done - loss, loss, 0, 0);
      span_last_named (o, TW_EV_COLLECTIVE, ++seq, 32, "loss");
    }
  now = loss_done;
  comm_free = fmax (comm_free, loss_done);
  gboolean zero = o->shard_optimizer && p > 1;
  for (int b = 0; b < nb; b++)
    {
      double bytes = g_array_index (buckets, sim_bucket, b).bytes;
      /* ZeRO-1: the rank's shard updated, then the bucket all-gathered. */
      double dt = update_time (o, d, zero ? bytes / p : bytes);
      char what[24];
      g_snprintf (what, sizeof what, "bucket %d", b);
      span_add (o, NULL, 0, TW_EV_UPDATE, NULL, -1, now, dt, 0, 0);
      span_last_named (o, TW_EV_UPDATE, 0, bytes, what);
      now += dt;
      compute += dt;
      if (zero)
        {
          double ag = ring_part (t, p, bytes, 0, 0.5, link_bytes, error) / 2;
          if (isnan (ag))
            return FALSE;
          ag += c0 + o->collective_s_per_byte * bytes;
          double start = fmax (now, comm_free);
          comm_free = start + ag;
          comm_sum += ag;
          span_add (o, NULL, 0, TW_EV_COLLECTIVE, NULL, -1, start, ag, 0, 0);
          span_last_coll (o, TW_EV_COLLECTIVE, TW_COLL_ALLGATHER, ++seq, bytes, what);
        }
    }
  if (zero)
    now = fmax (now, comm_free);
  /* Local SGD: the parameters' average every H steps, a share 1/H of its
   * time (and bytes) in each step. */
  if (o->local_sgd > 1 && p > 1)
    {
      int nl = tw_topo_n_links (t);
      g_autofree double *lb = g_new0 (double, MAX (nl, 1));
      double avg = tw_sim_allreduce_time (t, o->algo, NULL, p, out->grad_bytes, gamma, lb, error);
      if (isnan (avg))
        return FALSE;
      avg = (avg + c0 + o->collective_s_per_byte * out->grad_bytes) / o->local_sgd;
      for (int l = 0; l < nl; l++)
        link_bytes[l] += lb[l] / o->local_sgd;
      span_add (o, NULL, 0, TW_EV_COLLECTIVE, NULL, -1, now, avg, 0, 0);
      span_last_named (o, TW_EV_COLLECTIVE, ++seq, out->grad_bytes, "parameters / H");
      comm_sum += avg;
      now += avg;
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
  /* Ranks not alike: every bucket waits for the slowest, so the step's
   * compute is taken at its expected factor. */
  tw_sim_dp_options slow;
  if (p >= 1 && (o->straggler > 1 || o->jitter > 0))
    {
      slow = *o;
      slow.compute_scale = (o->compute_scale > 0 ? o->compute_scale : 1)
                           * tw_sim_slowest_factor (o, p);
      o = &slow;
    }
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
  if (o->shard_optimizer)
    out->optimizer_bytes /= p;                   /* ZeRO-1: a shard each */
  if (o->exact && (o->shard_optimizer || o->local_sgd > 1 || o->compress))
    {
      for (int b = 0; b < nb; b++)
        g_array_unref (g_array_index (buckets, sim_bucket, b).nodes);
      g_array_unref (buckets);
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                   "the exact simulation does not model %s yet (without --exact the ranks are "
                   "identical and the figures the same)",
                   o->shard_optimizer ? "the sharded optimizer" : o->local_sgd > 1
                                                                    ? "local SGD" : "compression");
      return FALSE;
    }

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
  /* The spans' events: {start, end} for each of o->spans's new entries. */
  g_autoptr (GArray) span_ev = g_array_new (FALSE, FALSE, sizeof (int));
  guint span0 = o->spans ? o->spans->len : 0;
  for (int r = 0; compute > 0 && r < p; r++)
    {
      cur[r] = tw_netsim_add (s, r, r, 0, compute, NULL, 0);
      span_add (o, span_ev, r, TW_EV_DATA, NULL, -1, 0, compute, cur[r], cur[r]);
    }
  /* Forward, then backward in reverse: one chain of events per rank. */
  for (int j = 0; j < nn; j++)
    {
      const tw_node *n = tw_graph_node (g, g_array_index (order, int, j));
      double dt = op_time (o, d, n, FALSE);
      compute += dt;
      out->activation_bytes += n->cost.bytes_written;
      for (int r = 0; r < p; r++)
        {
          cur[r] = tw_netsim_add (s, r, r, 0, dt, &cur[r], 1);
          span_add (o, span_ev, r, TW_EV_FORWARD, n, g_array_index (order, int, j), 0, dt, cur[r],
                    cur[r]);
        }
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
        {
          cur[r] = tw_netsim_add (s, r, r, 0, dt, &cur[r], 1);
          span_add (o, span_ev, r, TW_EV_BACKWARD, n, ni, 0, dt, cur[r], cur[r]);
        }
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
          int *first = g_memdup2 (tmp, p * sizeof (int));
          tw_sim_allreduce (s, o->algo, NULL, p, g_array_index (buckets, sim_bucket, k).bytes,
                            gamma, tmp);
          char what[24];
          g_snprintf (what, sizeof what, "bucket %d", k);
          for (int r = 0; r < p; r++)
            {
              comm[r] = bucket_done[k * p + r] = tmp[r];
              if (p > 1)
                {
                  span_add (o, span_ev, r, TW_EV_COLLECTIVE, NULL, -1, 0, 0, first[r], tmp[r]);
                  span_last_named (o, TW_EV_COLLECTIVE, k + 1,
                                   g_array_index (buckets, sim_bucket, k).bytes, what);
                }
            }
          g_free (first);
          g_array_append_val (coll_end, tmp[0]);
        }
    }
  /* The loss's all-reduce comes after the buckets (its wait is theirs),
   * then each bucket's update. */
  g_autofree int *bwd_end = g_memdup2 (cur, p * sizeof (int));
  for (int r = 0; r < p; r++)
    {
      int deps[2] = { cur[r], comm[r] };
      tmp[r] = tw_netsim_add (s, r, r, 0,
                              p > 1 ? (o->lockstep_s > 0 ? o->lockstep_s : c0)
                                        + o->collective_s_per_byte * 32 : 0,
                              deps, 2);
    }
  g_array_append_val (coll_start, tmp[0]);
  g_autofree int *loss_first = g_memdup2 (tmp, p * sizeof (int));
  tw_sim_allreduce (s, o->algo, NULL, p, 32, gamma, tmp);
  g_array_append_val (coll_end, tmp[0]);
  for (int r = 0; p > 1 && r < p; r++)
    {
      span_add (o, span_ev, r, TW_EV_COLLECTIVE, NULL, -1, 0, 0, loss_first[r], tmp[r]);
      span_last_named (o, TW_EV_COLLECTIVE, nb + 1, 32, "loss");
    }
  g_autofree int *loss_done = g_memdup2 (tmp, p * sizeof (int));
  for (int r = 0; r < p; r++)
    cur[r] = tmp[r];
  for (int b = 0; b < nb; b++)
    {
      double bytes = g_array_index (buckets, sim_bucket, b).bytes;
      double dt = update_time (o, d, bytes);
      compute += dt;
      char what[24];
      g_snprintf (what, sizeof what, "bucket %d", b);
      for (int r = 0; r < p; r++)
        {
          int deps[2] = { cur[r], bucket_done[b * p + r] };
          cur[r] = tw_netsim_add (s, r, r, 0, dt, deps, 2);
          span_add (o, span_ev, r, TW_EV_UPDATE, NULL, -1, 0, dt, cur[r], cur[r]);
          span_last_named (o, TW_EV_UPDATE, 0, bytes, what);
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
      for (guint k = 0; o->spans && k < o->spans->len - span0; k++)
        {
          tw_sim_span *sp = &g_array_index (o->spans, tw_sim_span, span0 + k);
          double end = tw_netsim_end (s, g_array_index (span_ev, int, 2 * k + 1));
          /* A compute event starts when its work does (its delay before
           * the end); a collective when its hand-off was ready. */
          sp->start_s = sp->kind == TW_EV_COLLECTIVE
                          ? tw_netsim_start (s, g_array_index (span_ev, int, 2 * k)) : end - sp->dur_s;
          sp->dur_s = end - sp->start_s;
        }
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

typedef struct
{
  double arrive;
  int k, w;
} ps_item;

static int
ps_item_cmp (const void *a, const void *b)
{
  const ps_item *x = a, *y = b;
  if (x->arrive != y->arrive)
    return x->arrive < y->arrive ? -1 : 1;
  return x->k != y->k ? x->k - y->k : x->w - y->w;
}

/* The parameter server's schedule without contention: each message its
 * route's latency and bytes at the route's slowest link, the server
 * applying pushes one at a time as they arrive (an event simulation, the
 * arrivals in a heap).  ord[n] gets the order the updates are applied. */
static void
ps_order_estimate (tw_topo *t, const tw_sim_dp_options *o, int workers, int steps,
                   double compute, double upd, double bytes, ps_item *ord)
{
  int ps = workers, K = o->staleness, n = 0;
  g_autofree double *up = g_new (double, workers);
  g_autofree double *down = g_new (double, workers);
  for (int w = 0; w < workers; w++)
    {
      double lat, bw;
      tw_topo_route_cost (t, w, ps, &lat, &bw);
      up[w] = lat + (bw > 0 ? bytes / bw : 0);
      tw_topo_route_cost (t, ps, w, &lat, &bw);
      down[w] = lat + (bw > 0 ? bytes / bw : 0);
    }
  g_autofree double *join = g_new (double, steps);   /* step j all applied, or −1 */
  g_autofree double *last = g_new (double, steps);
  g_autofree int *count = g_new0 (int, steps);
  g_autofree double *ready = g_new (double, workers);   /* pull in, waiting for a join */
  g_autofree int *next = g_new0 (int, workers);       /* the step a worker is at */
  for (int j = 0; j < steps; j++)
    join[j] = -1, last[j] = 0;
  /* A binary min-heap of pushes in flight, by arrival. */
  g_autofree ps_item *heap = g_new (ps_item, workers + 1);
  int hn = 0;
#define HEAP_PUSH(it)                                                                   \
  do                                                                                    \
    {                                                                                   \
      int i_ = hn++;                                                                    \
      heap[i_] = (it);                                                                  \
      while (i_ > 0 && ps_item_cmp (&heap[i_], &heap[(i_ - 1) / 2]) < 0)                \
        {                                                                               \
          ps_item x_ = heap[i_];                                                        \
          heap[i_] = heap[(i_ - 1) / 2];                                                \
          heap[(i_ - 1) / 2] = x_;                                                      \
          i_ = (i_ - 1) / 2;                                                            \
        }                                                                               \
    }                                                                                   \
  while (0)
  for (int w = 0; w < workers; w++)
    {
      ready[w] = -1;   /* −1: computing or its push in flight */
      HEAP_PUSH (((ps_item) { compute * tw_sim_rank_factor (o, w, workers, 0) + up[w], 0, w }));
    }
  double server = 0;
  while (hn > 0)
    {
      ps_item it = heap[0];
      heap[0] = heap[--hn];
      for (int i = 0;;)
        {
          int l = 2 * i + 1, r = l + 1, m = i;
          if (l < hn && ps_item_cmp (&heap[l], &heap[m]) < 0)
            m = l;
          if (r < hn && ps_item_cmp (&heap[r], &heap[m]) < 0)
            m = r;
          if (m == i)
            break;
          ps_item x = heap[i];
          heap[i] = heap[m];
          heap[m] = x;
          i = m;
        }
      ord[n++] = it;
      server = fmax (server, it.arrive) + upd;
      last[it.k] = fmax (last[it.k], server);
      ready[it.w] = server + down[it.w];
      next[it.w] = it.k + 1;
      gboolean joined = ++count[it.k] == workers;
      if (joined)
        join[it.k] = last[it.k];
      /* Every worker whose next step this update (or this step's join)
       * lets start. */
      for (int w = 0; w < workers; w++)
        {
          if (w != it.w && !joined)
            continue;
          int k = next[w], j = k - K - 1;
          if (k >= steps || (w != it.w && ready[w] < 0) || (K >= 0 && j >= 0 && join[j] < 0))
            continue;
          if (w != it.w && k != it.k + K + 1)
            continue;   /* not waiting for this join */
          double start = fmax (ready[w], K >= 0 && j >= 0 ? join[j] : 0);
          ready[w] = -1;   /* started */
          HEAP_PUSH (((ps_item) { start + compute * tw_sim_rank_factor (o, w, workers, k)
                                  + up[w], k, w }));
        }
    }
#undef HEAP_PUSH
}

static int
double_cmp (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

/* The steady state of a run: from the first worker's last update back
 * over half the updates before it, a whole number of rounds of every
 * worker: the time of one round (an update of every worker). */
static double
ps_steady (const tw_netsim *s, const int *srv, int workers, int steps)
{
  gsize n = (gsize) workers * (gsize) steps;
  double t_b = INFINITY;
  for (int w = 0; w < workers; w++)
    t_b = fmin (t_b, tw_netsim_end (s, srv[(steps - 1) * workers + w]));
  int n_b = 0;
  for (gsize i = 0; i < n; i++)
    if (tw_netsim_end (s, srv[i]) <= t_b)
      n_b++;
  int rounds = MAX (n_b / workers / 2, 1);
  int n_a = MAX (n_b - rounds * workers, 0);
  /* The chain's ends in order: the server applies one at a time. */
  g_autofree double *ends = g_new (double, n);
  for (gsize i = 0; i < n; i++)
    ends[i] = tw_netsim_end (s, srv[i]);
  qsort (ends, n, sizeof *ends, double_cmp);
  double t_a = n_a > 0 ? ends[n_a - 1] : 0;
  return (ends[n_b - 1] - t_a) * workers / (n_b - n_a);
}

gboolean
tw_sim_async_step (const tw_graph *g0, int64_t global_batch, const tw_device_profile *d,
                   tw_topo *t, const tw_sim_dp_options *o, int steps, tw_sim_dp_result *out,
                   double *server_link_busy, GError **error)
{
  memset (out, 0, sizeof *out);
  int p = o->ranks, workers = p - 1, ps = p - 1;
  if (p < 2 || p > tw_topo_n_devices (t))
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                   "--async over %d ranks on a topology of %d devices: 2 to %d ranks (a "
                   "parameter server and workers)", p, tw_topo_n_devices (t),
                   tw_topo_n_devices (t));
      return FALSE;
    }
  if (global_batch < workers)
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                   "a batch of %" G_GINT64_FORMAT " samples cannot be split into %d workers' "
                   "shards", global_batch, workers);
      return FALSE;
    }
  steps = MAX (steps, 3);
  int64_t shard = (global_batch + workers - 1) / workers;
  g_autoptr (tw_graph) g = tw_graph_copy (g0);
  if (tw_graph_infer_batch (g, shard) > 0)
    {
      g_autofree char *msg = tw_graph_errors_to_string (g);
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG, "the model does not infer: %s", msg);
      return FALSE;
    }
  double compute = o->step_overhead_s;
  for (int i = 0; i < tw_graph_n_nodes (g); i++)
    {
      const tw_node *n = tw_graph_node (g, i);
      compute += op_time (o, d, n, FALSE) + op_time (o, d, n, TRUE);
      out->activation_bytes += n->cost.bytes_written;
      for (int k = 0; k < n->n_params; k++)
        {
          double e = (double) tw_tinfo_numel (&n->params[k].info, NULL);
          out->param_bytes += e * tw_dtype_size (n->params[k].info.dtype);
          if (n->params[k].trainable && !n->share)
            out->grad_bytes += 4 * e;
        }
    }
  double upd = update_time (o, d, out->grad_bytes);
  int K = o->staleness;
  gboolean uneven = o->straggler > 1 || o->jitter > 0;
  /* Enough steps for a steady state (ranks not alike: several times the
   * bound, up to 64), fewer for thousands of workers (4096 updates). */
  int want = uneven ? CLAMP (4 * (MAX (K, 0) + 2), 32, 64) : 24;
  steps = MAX (steps, MIN (want, MAX (6, 4096 / workers)));
  int n = workers * steps;
  /* The server's order of updates: step-major for alike workers (their
   * pushes arrive so); else the order a simulation without contention
   * gives, then the arrival order of the last run. */
  g_autofree ps_item *ord = g_new (ps_item, n);
  for (int k = 0; k < steps; k++)
    for (int w = 0; w < workers; w++)
      ord[k * workers + w] = (ps_item) { 0, k, w };
  if (uneven)
    ps_order_estimate (t, o, workers, steps, compute, upd, out->grad_bytes, ord);
  g_autofree int *push = g_new (int, n);
  g_autofree int *srv = g_new (int, n);
  g_autofree int *pull = g_new (int, n);
  g_autofree int *join = g_new (int, steps);
  g_autofree int *done = g_new (int, steps);
  g_autoptr (tw_netsim) s = NULL;
  int run = 0;
  double last_step = 0;
  /* Runs: up to 6, 2 for thousands of workers (each run is a second). */
  int runs = uneven ? CLAMP (16384 / n, 2, 6) : 1;
  for (; run < runs; run++)
    {
      g_autoptr (tw_netsim) ns = tw_netsim_new (t);
      for (int i = 0; i < n; i++)
        pull[i] = srv[i] = -1;
      for (int k = 0; k < steps; k++)
        join[k] = -1, done[k] = 0;
      int prev = -1;
      gboolean ok = TRUE;
      for (int i = 0; i < n && ok; i++)
        {
          int k = ord[i].k, w = ord[i].w, deps[2], nd = 0;
          if (k > 0 && (ok = pull[(k - 1) * workers + w] >= 0))
            deps[nd++] = pull[(k - 1) * workers + w];
          int j = k - K - 1;
          if (ok && K >= 0 && j >= 0)
            {
              /* All of step j's updates applied: a join on the server. */
              if (join[j] < 0 && (ok = done[j] == workers))
                join[j] = tw_netsim_add (ns, ps, ps, 0, 0, srv + (gsize) j * workers, workers);
              deps[nd++] = join[j];
            }
          if (!ok)
            break;   /* the order is not causal: keep the last run's */
          int c = tw_netsim_add (ns, w, w, 0, compute * tw_sim_rank_factor (o, w, workers, k), deps,
                                 nd);
          int x = k * workers + w;
          push[x] = tw_netsim_add (ns, w, ps, out->grad_bytes, 0, &c, 1);
          int sd[2] = { push[x], prev };
          prev = srv[x] = tw_netsim_add (ns, ps, ps, 0, upd, sd, prev >= 0 ? 2 : 1);
          pull[x] = tw_netsim_add (ns, ps, w, out->grad_bytes, 0, &srv[x], 1);
          done[k]++;
        }
      if (!ok && s)
        break;
      if (!ok)
        {
          g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                       "the parameter server's schedule could not be built");
          return FALSE;
        }
      if (!tw_netsim_run (ns, error))
        return FALSE;
      g_clear_pointer (&s, tw_netsim_free);
      s = g_steal_pointer (&ns);
      /* Done when the order stays, or the step moves by under 0.5% (near-
       * simultaneous pushes swap places under contention). */
      double step = ps_steady (s, srv, workers, steps);
      gboolean settled = run > 0 && fabs (step - last_step) <= 0.005 * step;
      last_step = step;
      if (settled)
        break;
      /* The next run's order: the pushes' arrivals in this one. */
      gboolean same = TRUE;
      g_autofree ps_item *next = g_new (ps_item, n);
      for (int i = 0; i < n; i++)
        next[i] = (ps_item) { tw_netsim_end (s, push[ord[i].k * workers + ord[i].w]), ord[i].k,
                              ord[i].w };
      qsort (next, (gsize) n, sizeof *next, ps_item_cmp);
      for (int i = 0; i < n && same; i++)
        same = next[i].k == ord[i].k && next[i].w == ord[i].w;
      memcpy (ord, next, sizeof *ord * (gsize) n);
      if (same)
        break;
    }
  g_debug ("parameter server: %d workers, %d steps, %d runs", workers, steps, MIN (run + 1, runs));
  out->step_s = ps_steady (s, srv, workers, steps);
  out->compute_s = compute;
  /* Communication: the share of each worker's cycle (pull to pull) in
   * the middle step that its push and pull took, averaged, of a step. */
  int k = MAX (steps / 2, 1);
  double share = 0;
  for (int w = 0; w < workers; w++)
    {
      int x = k * workers + w;
      double cycle = tw_netsim_end (s, pull[x]) - tw_netsim_end (s, pull[x - workers]);
      double c = tw_netsim_end (s, push[x]) - tw_netsim_start (s, push[x])
                 + tw_netsim_end (s, pull[x]) - tw_netsim_start (s, pull[x]);
      share += cycle > 0 ? fmin (c / cycle, 1) : 0;
    }
  out->comm_s = out->step_s * share / workers;
  out->exposed_s = fmax (out->step_s - compute, 0);
  out->samples_per_s = out->step_s > 0 ? (double) workers * shard / out->step_s : 0;
  out->grad_mem_bytes = out->grad_bytes;
  out->optimizer_bytes = 0;   /* the server keeps it */
  out->busiest_link = -1;
  double span = tw_netsim_makespan (s);
  for (int l = 0; l < tw_topo_n_links (t); l++)
    if (tw_netsim_link_bytes (s, l) / steps > out->busiest_link_bytes)
      {
        out->busiest_link_bytes = tw_netsim_link_bytes (s, l) / steps;
        out->busiest_link = l;
        if (server_link_busy)
          *server_link_busy = span > 0 ? tw_netsim_link_busy (s, l) / span : 0;
      }
  return TRUE;
}
