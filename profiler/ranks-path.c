/* ranks-path.c — the critical path of one step across the ranks of a
 * merged trace (ranks.h, tw_trace_critical_path).
 *
 * Walked backwards from the end of the step on the rank that ends it
 * last.  On a rank, time before the cursor is either an op of its worker
 * (compute: the path goes through it), or the worker waiting.  A wait that
 * ends when one of the rank's collectives ends was a wait for that
 * collective: the collective could not finish before its last rank
 * arrived, so the path goes to that rank at the moment it arrived (posted
 * the collective) — time from there to the end is communication — and
 * goes on on that rank.  A wait that no collective explains is idle.  The
 * dependencies are those the engine has: ops in order on a worker, a
 * bucket's all-reduce after the op whose gradient completed it, the
 * update after its bucket. */
#define G_LOG_DOMAIN "twb-profiler"

#include "profiler/ranks.h"

#include <string.h>

/* What a rank's worker does: its ops (depth 0 slices on thread lanes that
 * are not steps or epochs). */
/* PyTorch's NCCL kernels carry their collective's name and "Seq". */
static gboolean
is_torch_collective (const tw_slice *s)
{
  const char *name = tw_slice_arg (s, "Collective name");
  return s->category && strcmp (s->category, "kernel") == 0 && name && strcmp (name, "send") != 0
         && strcmp (name, "recv") != 0 && tw_slice_arg (s, "Seq") != NULL;
}

static gboolean
is_step_name (const char *name)
{
  return name && (g_str_has_prefix (name, "ProfilerStep#") || g_str_has_prefix (name, "step "));
}

/* What a rank's worker does: its ops (depth 0 slices on thread lanes that
 * are not steps, epochs or collectives) and, in PyTorch's GPU traces, the
 * kernels on its streams. */
static gboolean
is_work (const tw_slice *s, tw_lane_kind kind)
{
  const char *c = s->category ? s->category : "";
  if (kind != TW_LANE_THREAD)
    return strcmp (c, "kernel") == 0 && !is_torch_collective (s);
  return s->depth == 0 && strcmp (c, "step") != 0 && strcmp (c, "epoch") != 0
         && strcmp (c, "collective") != 0 && strcmp (c, "grad_ready") != 0
         && !(strcmp (c, "user_annotation") == 0 && is_step_name (s->name));
}

/* Ours ("step N") or PyTorch's ("ProfilerStep#N"). */
static gboolean
is_step_n (const tw_slice *s, guint64 n)
{
  char want[48];
  g_snprintf (want, sizeof want, "step %" G_GUINT64_FORMAT, n);
  if (s->name && strcmp (s->name, want) == 0)
    return TRUE;
  g_snprintf (want, sizeof want, "ProfilerStep#%" G_GUINT64_FORMAT, n);
  return s->name && strcmp (s->name, want) == 0;
}

typedef struct
{
  int pid;
  gint64 step_start, step_end;
  guint step_lane;
  guint work_lane;            /* where its ops run (its step's lane when it has none) */
  gboolean has_work_lane;
  GArray *work;               /* guint lane, guint index pairs: the worker's ops by end */
  GArray *colls;              /* the same for its collectives */
} rank_view;

typedef struct
{
  guint lane, index;
  gint64 start, end;
} ref;

static int
cmp_end (gconstpointer a, gconstpointer b)
{
  const ref *x = a, *y = b;
  return x->end < y->end ? -1 : x->end > y->end;
}

/* The latest ref of a (by end) ending at or before t + slack, or NULL. */
static const ref *
last_before (GArray *a, gint64 t, gint64 slack)
{
  const ref *best = NULL;
  for (guint i = 0; i < a->len; i++)
    {
      const ref *r = &g_array_index (a, ref, i);
      if (r->end <= t + slack)
        best = r;
      else
        break;
    }
  return best;
}

static void
add_seg (GArray *path, int rank, tw_path_kind kind, const char *name, gint64 start, gint64 end,
         guint lane, guint slice_index)
{
  if (end <= start)
    return;
  tw_path_segment s = { .rank = rank, .kind = kind, .name = name, .start_ns = start,
                        .dur_ns = end - start, .lane = lane, .slice_index = slice_index };
  g_array_append_val (path, s);
}

GArray *
tw_trace_critical_path (const tw_trace *t, guint64 step, tw_path_summary *sum)
{
  memset (sum, 0, sizeof *sum);
  int n_ranks = 0;
  if (!tw_trace_is_multi_rank (t, &n_ranks))
    return NULL;
  GHashTable *by_pid = g_hash_table_new (NULL, NULL);
  GPtrArray *views = g_ptr_array_new ();
  for (guint l = 0; l < tw_trace_n_lanes (t); l++)
    {
      const tw_lane_info *li = tw_trace_lane (t, l);
      rank_view *v = g_hash_table_lookup (by_pid, GINT_TO_POINTER (li->pid + 1));
      if (v == NULL)
        {
          v = g_new0 (rank_view, 1);
          v->pid = li->pid;
          v->step_start = G_MININT64;
          v->work = g_array_new (FALSE, FALSE, sizeof (ref));
          v->colls = g_array_new (FALSE, FALSE, sizeof (ref));
          g_hash_table_insert (by_pid, GINT_TO_POINTER (li->pid + 1), v);
          g_ptr_array_add (views, v);
        }
      for (guint i = 0; i < tw_trace_lane_n_slices (t, l); i++)
        {
          const tw_slice *s = tw_trace_lane_slice (t, l, i);
          ref r = { l, i, s->start_ns, s->start_ns + s->dur_ns };
          if (is_step_n (s, step))
            {
              v->step_start = s->start_ns;
              v->step_end = r.end;
              v->step_lane = l;
            }
          else if ((s->category && strcmp (s->category, "collective") == 0
                    && tw_slice_arg (s, "seq") != NULL)
                   || is_torch_collective (s))
            g_array_append_val (v->colls, r);
          else if (is_work (s, li->kind))
            {
              g_array_append_val (v->work, r);
              if (!v->has_work_lane)
                v->work_lane = l;
              v->has_work_lane = TRUE;
            }
        }
    }
  GArray *path = NULL;
  rank_view *cur = NULL;
  for (guint i = 0; i < views->len; i++)
    {
      rank_view *v = g_ptr_array_index (views, i);
      g_array_sort (v->work, cmp_end);
      g_array_sort (v->colls, cmp_end);
      if (!v->has_work_lane)
        v->work_lane = v->step_lane;
      if (v->step_start != G_MININT64 && (cur == NULL || v->step_end > cur->step_end))
        cur = v;
    }
  if (cur == NULL)
    goto out;
  path = g_array_new (FALSE, FALSE, sizeof (tw_path_segment));
  gint64 t_cur = cur->step_end, floor = G_MAXINT64;
  for (guint i = 0; i < views->len; i++)
    {
      rank_view *v = g_ptr_array_index (views, i);
      if (v->step_start != G_MININT64)
        floor = MIN (floor, v->step_start);
    }
  sum->step = step;
  sum->end_rank = cur->pid;
  sum->span_ns = cur->step_end - floor;
  for (int guard = 0; guard < 1000000 && t_cur > floor; guard++)
    {
      gint64 lo = MAX (cur->step_start, floor);
      if (t_cur <= lo)
        {
          /* Before its step began this rank did nothing the step needs. */
          break;
        }
      const ref *w = last_before (cur->work, t_cur, 0);
      const ref *c = last_before (cur->colls, t_cur, 0);
      gint64 w_end = w && w->end > lo ? w->end : lo;
      if (c && c->end > w_end)
        {
          /* It waited for a collective: communication back to the last
           * rank's arrival, then that rank's path. */
          const tw_slice *s = tw_trace_lane_slice (t, c->lane, c->index);
          g_autoptr (GArray) peers = tw_trace_collective_peers (t, c->lane, c->index);
          const tw_coll_peer *last = NULL;
          for (guint k = 0; peers && k < peers->len; k++)
            {
              const tw_coll_peer *p = &g_array_index (peers, tw_coll_peer, k);
              if (last == NULL || p->start_ns > last->start_ns)
                last = p;
            }
          gint64 arrive = last ? last->start_ns : c->start;
          add_seg (path, cur->pid, TW_PATH_WAIT, s->name, c->end, t_cur, cur->work_lane,
                   G_MAXUINT);
          add_seg (path, last ? last->rank : cur->pid, TW_PATH_COMM, s->name, MAX (arrive, floor),
                   c->end, last ? last->lane : c->lane, last ? last->slice_index : c->index);
          rank_view *next = last ? g_hash_table_lookup (by_pid, GINT_TO_POINTER (last->rank + 1))
                                 : NULL;
          if (next)
            cur = next;
          t_cur = MIN (MAX (arrive, floor), t_cur - 1);
          continue;
        }
      if (w && w->end > lo)
        {
          /* A gap no collective explains, then the op before it. */
          const tw_slice *s = tw_trace_lane_slice (t, w->lane, w->index);
          gint64 start = MAX (w->start, lo);
          add_seg (path, cur->pid, TW_PATH_IDLE, "idle", w->end, t_cur, cur->work_lane, G_MAXUINT);
          add_seg (path, cur->pid, TW_PATH_COMPUTE, s->name, start, w->end, w->lane, w->index);
          t_cur = MIN (start, t_cur - 1);
          continue;
        }
      /* Nothing explains the gap: idle, back to the last op. */
      add_seg (path, cur->pid, TW_PATH_IDLE, "idle", w_end, t_cur, cur->work_lane, G_MAXUINT);
      t_cur = w_end;
    }
  /* Oldest first. */
  for (guint i = 0; i < path->len / 2; i++)
    {
      tw_path_segment tmp = g_array_index (path, tw_path_segment, i);
      g_array_index (path, tw_path_segment, i) = g_array_index (path, tw_path_segment,
                                                                path->len - 1 - i);
      g_array_index (path, tw_path_segment, path->len - 1 - i) = tmp;
    }
  for (guint i = 0; i < path->len; i++)
    {
      const tw_path_segment *s = &g_array_index (path, tw_path_segment, i);
      gint64 *slot = s->kind == TW_PATH_COMPUTE ? &sum->compute_ns
                     : s->kind == TW_PATH_COMM  ? &sum->comm_ns
                     : s->kind == TW_PATH_WAIT  ? &sum->wait_ns
                                                : &sum->idle_ns;
      *slot += s->dur_ns;
      if (s->rank >= 0 && s->rank < 64)
        sum->ranks_mask |= G_GUINT64_CONSTANT (1) << s->rank;
    }
out:
  for (guint i = 0; i < views->len; i++)
    {
      rank_view *v = g_ptr_array_index (views, i);
      g_array_unref (v->work);
      g_array_unref (v->colls);
      g_free (v);
    }
  g_ptr_array_free (views, TRUE);
  g_hash_table_unref (by_pid);
  return path;
}

static int
cmp_span (gconstpointer a, gconstpointer b)
{
  const tw_path_summary *x = a, *y = b;
  return x->span_ns < y->span_ns ? -1 : x->span_ns > y->span_ns;
}

GArray *
tw_trace_critical_path_median (const tw_trace *t, tw_path_summary *sum)
{
  memset (sum, 0, sizeof *sum);
  if (!tw_trace_is_multi_rank (t, NULL))
    return NULL;
  /* Steps are numbered from 0 or 1 on; a run recorded after its warm-up
   * starts later: up to 1000 numbers are tried before the first found,
   * then they run on until one is missing. */
  g_autoptr (GArray) spans = g_array_new (FALSE, FALSE, sizeof (tw_path_summary));
  for (guint64 k = 0; k < 100000; k++)
    {
      tw_path_summary ps;
      g_autoptr (GArray) p = tw_trace_critical_path (t, k, &ps);
      if (p == NULL)
        {
          if (spans->len || k > 1000)
            break;
          continue;
        }
      g_array_append_val (spans, ps);
    }
  if (spans->len == 0)
    return NULL;
  g_array_sort (spans, cmp_span);
  guint64 step = g_array_index (spans, tw_path_summary, spans->len / 2).step;
  return tw_trace_critical_path (t, step, sum);
}
