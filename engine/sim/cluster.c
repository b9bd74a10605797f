/* cluster.c — the simulator's train mode (cluster.h). */
#include "engine/sim/cluster.h"

#include <math.h>
#include <string.h>

struct tw_sim_cluster
{
  int ranks;
  tw_sim_world *world;
  tw_comm **comms;
  tw_session **sessions;
  double virtual_step_s, virtual_compute_s;
  int64_t global_batch;
  double virtual_s;
  GThread *drainer;
  gint quit;                  /* atomic: the drainer ends */
  gint stopping;              /* atomic */
  GMutex lock;
  char *first_error;          /* under lock: the first rank's failure, "rank 2: ..." */
};

void
tw_sim_cluster_options_init (tw_sim_cluster_options *o)
{
  memset (o, 0, sizeof *o);
  o->ranks = 2;
  tw_comm_options_init (&o->comm);
  tw_session_options_init (&o->session);
}

/* A rank's FINISHED: remember its error, release the others. */
static void
rank_finished (tw_sim_cluster *c, int r, const tw_snapshot *s)
{
  if (s->state != TW_SESSION_FAILED)
    return;
  g_mutex_lock (&c->lock);
  gboolean first = c->first_error == NULL;
  /* A rank released because another failed says so; the cause is the
   * other's. */
  if (first && !(s->message && strstr (s->message, " failed: ")))
    c->first_error = g_strdup_printf ("rank %d: %s", r, s->message ? s->message : "failed");
  g_mutex_unlock (&c->lock);
  if (!g_atomic_int_get (&c->stopping))
    tw_sim_world_fail (c->world, r, s->message);
}

static gpointer
drain (gpointer data)
{
  tw_sim_cluster *c = data;
  gboolean *done = g_new0 (gboolean, c->ranks);
  while (!g_atomic_int_get (&c->quit))
    {
      gboolean any = FALSE;
      for (int r = 1; r < c->ranks; r++)
        {
          if (done[r])
            continue;
          tw_snapshot *s;
          while ((s = tw_session_pop (c->sessions[r], 0)))
            {
              any = TRUE;
              if (s->kind == TW_SNAP_FINISHED)
                {
                  done[r] = TRUE;
                  rank_finished (c, r, s);
                }
              tw_snapshot_free (s);
              if (done[r])
                break;
            }
        }
      if (!any)
        g_usleep (5000);
    }
  g_free (done);
  return NULL;
}

tw_sim_cluster *
tw_sim_cluster_new (const tw_model *model, const tw_session_source *source,
                    const tw_sim_cluster_options *o, GError **error)
{
  if (o->ranks < 1 || o->ranks > 4096)
    {
      g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG,
                   "%d virtual ranks: from 1 to 4096 are simulated in train mode", o->ranks);
      return NULL;
    }
  if (!(o->virtual_step_s >= 0) || isinf (o->virtual_step_s))
    {
      g_set_error (error, TW_COMM_ERROR, TW_COMM_ERROR_ARG, "a virtual step of %g s", o->virtual_step_s);
      return NULL;
    }
  tw_sim_cluster *c = g_new0 (tw_sim_cluster, 1);
  c->ranks = o->ranks;
  c->virtual_step_s = o->virtual_step_s;
  c->virtual_compute_s = o->virtual_compute_s;
  c->global_batch = o->global_batch;
  g_mutex_init (&c->lock);
  c->world = tw_sim_world_new (o->ranks);
  c->comms = g_new0 (tw_comm *, o->ranks);
  c->sessions = g_new0 (tw_session *, o->ranks);
  for (int r = 0; r < o->ranks; r++)
    {
      c->comms[r] = tw_comm_new_sim (c->world, r, &o->comm);
      tw_session_options so = o->session;
      so.comm = o->ranks > 1 ? c->comms[r] : NULL;
      /* Only rank 0 writes checkpoints (or gathers and writes them). */
      c->sessions[r] = tw_session_new_deferred (model, source, &so, error);
      if (c->sessions[r] == NULL)
        {
          tw_sim_cluster_free (c);
          return NULL;
        }
    }
  return c;
}

gboolean
tw_sim_cluster_run (tw_sim_cluster *c, GError **error)
{
  for (int r = 0; r < c->ranks; r++)
    if (!tw_session_run (c->sessions[r], error))
      return FALSE;
  if (c->drainer == NULL && c->ranks > 1)
    c->drainer = g_thread_new ("twb-sim-drain", drain, c);
  return TRUE;
}

void
tw_sim_cluster_stop (tw_sim_cluster *c)
{
  g_atomic_int_set (&c->stopping, 1);
  for (int r = 0; r < c->ranks; r++)
    tw_session_stop (c->sessions[r], NULL);
  /* A rank waiting for one that stopped would wait until the time-out. */
  tw_sim_world_fail (c->world, 0, "the run was stopped");
}

tw_snapshot *
tw_sim_cluster_pop (tw_sim_cluster *c, gint64 timeout_us)
{
  tw_snapshot *s = tw_session_pop (c->sessions[0], timeout_us);
  if (s == NULL)
    return NULL;
  if (s->kind == TW_SNAP_METRICS)
    {
      if (c->virtual_step_s > 0)
        {
          s->step_ms = c->virtual_step_s * 1e3;
          if (c->global_batch > 0)
            s->samples_per_s = c->global_batch / c->virtual_step_s;
          s->eta_s = -1;
          for (int r = 0; c->virtual_compute_s > 0 && r < s->n_ranks; r++)
            s->rank_step_ms[r] = c->virtual_compute_s * 1e3;
          c->virtual_s = s->step * c->virtual_step_s;
        }
      else
        c->virtual_s += s->step_ms / 1e3;
    }
  if (s->kind == TW_SNAP_FINISHED)
    {
      if (s->state == TW_SESSION_FAILED)
        rank_finished (c, 0, s);
      /* The run ends when every rank has: their trainers are then read. */
      for (int r = 1; r < c->ranks; r++)
        while (tw_session_get_state (c->sessions[r]) == TW_SESSION_RUNNING
               || tw_session_get_state (c->sessions[r]) == TW_SESSION_IDLE)
          g_usleep (2000);
      g_mutex_lock (&c->lock);
      if (c->first_error)
        {
          g_free (s->message);
          s->message = g_strdup (c->first_error);
          if (!g_atomic_int_get (&c->stopping))
            s->state = TW_SESSION_FAILED;
        }
      g_mutex_unlock (&c->lock);
      if (g_atomic_int_get (&c->stopping))
        {
          s->state = TW_SESSION_STOPPED;
          g_clear_pointer (&s->message, g_free);
        }
    }
  return s;
}

tw_session *
tw_sim_cluster_session (tw_sim_cluster *c, int r)
{
  return r >= 0 && r < c->ranks ? c->sessions[r] : NULL;
}

int
tw_sim_cluster_ranks (const tw_sim_cluster *c)
{
  return c->ranks;
}

double
tw_sim_cluster_virtual_s (tw_sim_cluster *c)
{
  return c->virtual_s;
}

void
tw_sim_cluster_free (tw_sim_cluster *c)
{
  if (c == NULL)
    return;
  if (c->drainer)
    {
      g_atomic_int_set (&c->quit, 1);
      g_thread_join (c->drainer);
    }
  /* Freeing a session that still runs stops it; a rank waiting for a
   * stopped one is released. */
  g_atomic_int_set (&c->stopping, 1);
  tw_sim_world_fail (c->world, 0, "the run was closed");
  for (int r = 0; r < c->ranks; r++)
    g_clear_pointer (&c->sessions[r], tw_session_free);
  for (int r = 0; r < c->ranks; r++)
    tw_comm_free (c->comms[r]);
  tw_sim_world_free (c->world);
  g_free (c->comms);
  g_free (c->sessions);
  g_free (c->first_error);
  g_mutex_clear (&c->lock);
  g_free (c);
}
