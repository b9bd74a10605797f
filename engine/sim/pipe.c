/* pipe.c — a pipeline or hybrid step in the simulator's time mode
 * (pipe.h). */
#define G_LOG_DOMAIN "twb-sim"

#include "engine/sim/pipe.h"

#include <math.h>
#include <string.h>

void
tw_sim_pipe_options_init (tw_sim_pipe_options *o)
{
  memset (o, 0, sizeof *o);
  o->ranks = 1;
  o->stages = 1;
  o->micro_batches = 4;
  o->schedule = TW_SCHEDULE_1F1B;
  o->algo = TW_ALGO_RING;
  o->bucket_mb = 25;
  o->gamma = -1;
}

typedef struct
{
  gboolean fwd;
  int mb;
} pipe_op;

static void
push (GArray *a, gboolean fwd, int mb)
{
  pipe_op op = { fwd, mb };
  g_array_append_val (a, op);
}

/* Stage s's forwards and backwards in the order the engine runs them
 * (train.h). */
static GArray *
stage_order (tw_pipe_schedule sch, int s, int S, int M)
{
  GArray *a = g_array_new (FALSE, FALSE, sizeof (pipe_op));
  if (sch == TW_SCHEDULE_GPIPE)
    {
      for (int m = 0; m < M; m++)
        push (a, TRUE, m);
      for (int m = 0; m < M; m++)
        push (a, FALSE, m);
      return a;
    }
  int f = 0, b = 0, warm = MIN (S - s - 1, M);
  for (; f < warm; f++)
    push (a, TRUE, f);
  while (f < M)
    {
      push (a, TRUE, f++);
      push (a, FALSE, b++);
    }
  while (b < M)
    push (a, FALSE, b++);
  return a;
}

/* Adam's update of `bytes` of gradients (step.c's roofline). */
static double
update_time (const tw_device_profile *d, double bytes)
{
  return d->launch_s + 7 * bytes / (d->mem_bw * d->mem_eff);
}

static void
span_add (GArray *spans, GArray *ev, int rank, tw_event_kind kind, tw_coll_kind coll, int seq,
          double bytes, tw_algo algo, const char *name, const char *what, int ev_start,
          int ev_end, double dur)
{
  if (spans == NULL)
    return;
  tw_sim_span sp = { .rank = rank, .kind = kind, .node = -1, .seq = seq, .bytes = bytes,
                     .algo = algo, .coll = coll, .dur_s = dur };
  g_strlcpy (sp.name, name, sizeof sp.name);
  g_strlcpy (sp.what, what ? what : "", sizeof sp.what);
  g_array_append_val (spans, sp);
  int e[2] = { ev_start, ev_end };
  g_array_append_vals (ev, e, 2);
}

gboolean
tw_sim_pipe_step (const tw_graph *g0, int64_t global_batch, const tw_device_profile *d,
                  tw_topo *t, const tw_sim_pipe_options *o, tw_sim_pipe_result *out,
                  GError **error)
{
  memset (out, 0, sizeof *out);
  int S = o->stages, W = o->ranks;
  if (S < 1 || W < S || W % S != 0)
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                   "%d ranks in %d stages: the ranks must be a multiple of the stages "
                   "(replicas × stages)", W, S);
      return FALSE;
    }
  if (W > tw_topo_n_devices (t))
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                   "%d ranks on a topology of %d devices: 1 to %d ranks can run there", W,
                   tw_topo_n_devices (t), tw_topo_n_devices (t));
      return FALSE;
    }
  int R = W / S;
  if (global_batch < R)
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                   "a batch of %" G_GINT64_FORMAT " samples cannot be split into %d replicas' "
                   "shards", global_batch, R);
      return FALSE;
    }
  int64_t shard = (global_batch + R - 1) / R;
  int M = (int) MIN ((int64_t) MAX (o->micro_batches, 1), shard);
  int64_t rows = (shard + M - 1) / M;   /* the largest micro-batch sets the pace */
  out->micro_batches = M;
  g_autoptr (tw_graph) g = tw_graph_copy (g0);
  if (tw_graph_infer_batch (g, rows) > 0)
    {
      g_autofree char *msg = tw_graph_errors_to_string (g);
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG, "the model does not infer: %s", msg);
      return FALSE;
    }
  int nn = tw_graph_n_nodes (g);
  g_autofree int *stage_of = g_new (int, MAX (nn, 1));
  if (!tw_pipeline_assign_stages (g, S, stage_of, error))
    return FALSE;
  g_autoptr (GArray) order = NULL;
  if (!tw_graph_topo_order (g, &order, error))
    return FALSE;
  g_autofree double *tf = g_new0 (double, S), *tb = g_new0 (double, S);
  g_autofree double *flops = g_new0 (double, S), *act = g_new0 (double, S);
  g_autofree double *params = g_new0 (double, S), *grads = g_new0 (double, S);
  g_autofree double *xfer = g_new0 (double, (gsize) S * S);   /* [from * S + to] */
  GArray **numel = g_new0 (GArray *, S);
  for (int s = 0; s < S; s++)
    numel[s] = g_array_new (FALSE, FALSE, sizeof (int64_t));
  g_autoptr (GHashTable) sent = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (int j = (int) order->len - 1; j >= 0; j--)
    {
      int i = g_array_index (order, int, j);
      const tw_node *n = tw_graph_node (g, i);
      int s = stage_of[i];
      if (s < 0)
        continue;
      tf[s] += tw_device_op_time (d, n, FALSE);
      tb[s] += tw_device_op_time (d, n, TRUE);
      flops[s] += n->cost.flops;
      act[s] += n->cost.bytes_written;
      for (int k = n->n_params - 1; k >= 0; k--)
        {
          int64_t e = tw_tinfo_numel (&n->params[k].info, NULL);
          params[s] += (double) e * tw_dtype_size (n->params[k].info.dtype);
          if (!n->params[k].trainable || n->share)
            continue;
          g_array_append_val (numel[s], e);
          grads[s] += 4.0 * e;
        }
      /* The values it reads from earlier stages, each sent once per stage. */
      for (int k = 0; k < n->n_inputs; k++)
        {
          tw_port pt = n->in_ports[k];
          if (pt.node < 0 || stage_of[pt.node] < 0 || stage_of[pt.node] == s)
            continue;
          char *key = g_strdup_printf ("%d:%d:%d", pt.node, pt.output, s);
          if (!g_hash_table_add (sent, key))
            continue;
          size_t nb = 0;
          tw_tinfo_nbytes (&tw_graph_node (g, pt.node)->out_info[pt.output], rows, &nb);
          xfer[stage_of[pt.node] * S + s] += (double) nb;
        }
    }
  double gamma = o->gamma >= 0 ? o->gamma : 3.0 / (d->mem_bw * d->mem_eff);

  for (int s = 0; s < S; s++)
    g_debug ("stage %d: forward %g s, backward %g s a micro-batch of %" G_GINT64_FORMAT " rows",
             s, tf[s], tb[s], rows);
  g_autoptr (tw_netsim) sim = tw_netsim_new (t);
  g_autofree int *fwd_ev = g_new (int, (gsize) S * M), *bwd_ev = g_new (int, (gsize) S * M);
  g_autofree int *idx = g_new0 (int, S), *last = g_new (int, S), *peak = g_new0 (int, S);
  g_autofree int *held = g_new0 (int, S), *seq = g_new0 (int, S);
  for (int k = 0; k < S * M; k++)
    fwd_ev[k] = bwd_ev[k] = -1;
  GArray **ops = g_new0 (GArray *, S);
  for (int s = 0; s < S; s++)
    {
      ops[s] = stage_order (o->schedule, s, S, M);
      last[s] = -1;
    }
  g_autoptr (GArray) span_ev = g_array_new (FALSE, FALSE, sizeof (int));
  guint span0 = o->spans ? o->spans->len : 0;
  g_autofree double *msg_s = g_new0 (double, S);   /* each stage's transfers, summed */
  g_autoptr (GArray) msgs = g_array_new (FALSE, FALSE, sizeof (int) * 3);   /* {ev, a, b} */
  g_autofree int *deps = g_new (int, S + 1);
  /* Add each stage's next op once what it waits for on other stages is
   * added: the schedules never wait in a cycle. */
  for (gboolean progress = TRUE; progress;)
    {
      progress = FALSE;
      for (int s = 0; s < S; s++)
        while (idx[s] < (int) ops[s]->len)
          {
            pipe_op op = g_array_index (ops[s], pipe_op, idx[s]);
            gboolean ready = TRUE;
            for (int a = 0; a < S && ready; a++)
              if (op.fwd && a < s && xfer[a * S + s] > 0)
                ready = fwd_ev[a * M + op.mb] >= 0;
              else if (!op.fwd && a > s && xfer[s * S + a] > 0)
                ready = bwd_ev[a * M + op.mb] >= 0;
            if (!ready)
              break;
            int nd = 0;
            if (last[s] >= 0)
              deps[nd++] = last[s];
            for (int a = 0; a < S; a++)
              {
                gboolean in = op.fwd ? a < s && xfer[a * S + s] > 0
                                     : a > s && xfer[s * S + a] > 0;
                if (!in)
                  continue;
                double bytes = xfer[op.fwd ? a * S + s : s * S + a];
                int from = op.fwd ? fwd_ev[a * M + op.mb] : bwd_ev[a * M + op.mb];
                int m = tw_netsim_add (sim, a, s, bytes, 0, &from, 1);
                deps[nd++] = m;
                int rec[3] = { m, a, s };
                g_array_append_vals (msgs, rec, 1);
                char name[80], what[24];
                g_snprintf (what, sizeof what, "%s mb %d", op.fwd ? "activations" : "gradients",
                            op.mb);
                g_snprintf (name, sizeof name, "send to %d (%s)", s, what);
                span_add (o->spans, span_ev, a, TW_EV_COLLECTIVE, TW_COLL_SEND, ++seq[a], bytes,
                          o->algo, name, what, m, m, 0);
                g_snprintf (name, sizeof name, "recv from %d (%s)", a, what);
                span_add (o->spans, span_ev, s, TW_EV_COLLECTIVE, TW_COLL_RECV, ++seq[s], bytes,
                          o->algo, name, what, m, m, 0);
              }
            double dur = op.fwd ? tf[s] : tb[s];
            last[s] = tw_netsim_add (sim, s, s, 0, dur, deps, nd);
            (op.fwd ? fwd_ev : bwd_ev)[s * M + op.mb] = last[s];
            held[s] += op.fwd ? 1 : -1;
            peak[s] = MAX (peak[s], held[s]);
            char name[80];
            g_snprintf (name, sizeof name, "stage %d %s mb %d", s, op.fwd ? "forward" : "backward",
                        op.mb);
            span_add (o->spans, span_ev, s, op.fwd ? TW_EV_FORWARD : TW_EV_BACKWARD, 0, 0, 0,
                      o->algo, name, NULL, last[s], last[s], dur);
            idx[s]++;
            progress = TRUE;
          }
    }
  g_autofree int *bwd_last = g_memdup2 (last, S * sizeof (int));
  g_autofree double *ar_s = g_new0 (double, S), *upd_s = g_new0 (double, S);
  gboolean ok = TRUE;
  for (int s = 0; s < S && ok; s++)
    {
      if (idx[s] < (int) ops[s]->len)
        {
          g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                       "stage %d's schedule waits for itself (a stage reading a later one)", s);
          ok = FALSE;
          break;
        }
      /* The replicas' buckets of this stage, the last parameter first. */
      int np = (int) numel[s]->len;
      g_autofree int *cut = g_new (int, MAX (np, 1));
      int nb = np ? tw_dist_bucket_cut ((const int64_t *) numel[s]->data, np,
                                        MAX (o->bucket_mb, 1e-9), cut) : 0;
      g_autofree double *bb = g_new0 (double, MAX (nb, 1));
      for (int j = 0; j < np; j++)
        bb[cut[j]] += 4.0 * g_array_index (numel[s], int64_t, j);
      g_autofree int *members = g_new (int, R);
      for (int q = 0; q < R; q++)
        members[q] = q * S + s;
      int comm = last[s];
      for (int b = 0; b < nb; b++)
        {
          if (R > 1)
            {
              double dur = tw_sim_allreduce_time (t, o->algo, members, R, bb[b], gamma, NULL,
                                                  error);
              if (isnan (dur))
                {
                  ok = FALSE;
                  break;
                }
              comm = tw_netsim_add (sim, s, s, 0, dur, &comm, 1);
              ar_s[s] += dur;
              char what[24], name[80];
              g_snprintf (what, sizeof what, "bucket %d", b);
              g_snprintf (name, sizeof name, "allreduce stage %d %s", s, what);
              span_add (o->spans, span_ev, s, TW_EV_COLLECTIVE, TW_COLL_ALLREDUCE, ++seq[s],
                        bb[b], o->algo, name, what, comm, comm, dur);
            }
          int dd[2] = { last[s], comm };
          double dur = update_time (d, bb[b]);
          upd_s[s] += dur;
          last[s] = tw_netsim_add (sim, s, s, 0, dur, dd, 2);
          char what[24], name[80];
          g_snprintf (what, sizeof what, "stage %d bucket %d", s, b);
          g_snprintf (name, sizeof name, "update %s", what);
          span_add (o->spans, span_ev, s, TW_EV_UPDATE, 0, 0, bb[b], o->algo, name, what,
                    last[s], last[s], dur);
          if (s == 0)
            out->grad_bytes += bb[b], out->buckets++;
        }
    }
  if (ok)
    ok = tw_netsim_run (sim, error);
  if (ok)
    {
      int busy = 0;
      for (int s = 0; s < S; s++)
        {
          out->step_s = fmax (out->step_s, tw_netsim_end (sim, last[s]));
          out->pipeline_s = fmax (out->pipeline_s, tw_netsim_end (sim, bwd_last[s]));
          if (tf[s] + tb[s] > tf[busy] + tb[busy])
            busy = s;
        }
      for (guint k = 0; k < msgs->len; k++)
        {
          const int *rec = (const int *) msgs->data + 3 * k;
          double dt = tw_netsim_end (sim, rec[0]) - tw_netsim_start (sim, rec[0]);
          msg_s[rec[1]] += dt;
          msg_s[rec[2]] += dt;
        }
      out->bubble = out->pipeline_s > 0 ? 1 - M * (tf[busy] + tb[busy]) / out->pipeline_s : 0;
      out->compute_s = M * (tf[busy] + tb[busy]) + upd_s[busy];
      out->comm_s = msg_s[busy] + ar_s[busy];
      out->samples_per_s = out->step_s > 0 ? (double) global_batch / out->step_s : 0;
      out->stage_flops_min = G_MAXDOUBLE;
      for (int s = 0; s < S; s++)
        {
          out->stage_flops_max = fmax (out->stage_flops_max, flops[s]);
          out->stage_flops_min = fmin (out->stage_flops_min, flops[s]);
          out->param_bytes = fmax (out->param_bytes, params[s]);
          out->grad_mem_bytes = fmax (out->grad_mem_bytes, grads[s]);
          out->activation_bytes = fmax (out->activation_bytes, act[s] * peak[s]);
          out->peak_in_flight = MAX (out->peak_in_flight, peak[s]);
        }
      out->optimizer_bytes = 2 * out->grad_mem_bytes;
      for (guint k = 0; o->spans && k < o->spans->len - span0; k++)
        {
          tw_sim_span *sp = &g_array_index (o->spans, tw_sim_span, span0 + k);
          int e = g_array_index (span_ev, int, 2 * k + 1);
          double end = tw_netsim_end (sim, e);
          /* A message from when it was ready; an event its delay before its end. */
          sp->start_s = sp->coll == TW_COLL_SEND || sp->coll == TW_COLL_RECV
                          ? tw_netsim_start (sim, e) : end - sp->dur_s;
          sp->dur_s = end - sp->start_s;
        }
    }
  for (int s = 0; s < S; s++)
    {
      g_array_unref (numel[s]);
      g_array_unref (ops[s]);
    }
  g_free (numel);
  g_free (ops);
  return ok;
}
