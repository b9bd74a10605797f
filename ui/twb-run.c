/* twb-run.c — one training run, drained on the main loop. */
#define G_LOG_DOMAIN "twb-run"

#include "ui/twb-run.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

/* How often the main loop takes the session's snapshots: 30 ms keeps the
 * curves moving smoothly (33 updates a second) at a negligible cost. */
#define DRAIN_INTERVAL_MS 30
/* Snapshots taken per drain at most: the rest wait for the next one, so a
 * fast run cannot hold the main loop (input is answered between drains). */
#define DRAIN_MAX 4096

typedef struct
{
  int64_t iteration;
  guint serial;                /* TwbRun.serial when it came */
  tw_tensor *tensor;
} Seen;

static void
seen_free (gpointer p)
{
  Seen *s = p;
  tw_tensor_unref (s->tensor);
  g_free (s);
}

struct _TwbRun
{
  GObject parent_instance;

  char *id;
  tw_session *session;
  TwbMetrics *metrics;
  guint drain_source;
  tw_session_state state;
  int64_t total_steps, epochs, per_epoch, batch;
  char *preparing;             /* what the worker prepares before its first step, or NULL */
  TwbRunProgress progress;
  tw_snapshot *pause;
  tw_snapshot *result;
  char *error;
  GHashTable *last_seen;       /* tensor name → Seen: the latest copy */
  GHashTable *previous;        /* tensor name → Seen: the latest from an earlier iteration */
  guint serial;                /* counts the times the worker went on or paused anew: copies
                                * from before are stale */
  tw_class_report *classes;
  int64_t classes_epoch;
  guint series_loss, series_acc, series_lr, series_rate, series_ms;
  guint series_comm;           /* external runs: bytes a rank sent per step */
  gboolean external;
  char *label, *command;
  GHashTable *grad_series;     /* param name → series id + 1 */
  /* External runs: every rank's step time ("step_ms:rank N"), its sum and
   * count for the straggler, and the gradient buckets the run ended with. */
  GArray *rank_series;         /* series id per rank */
  GArray *rank_sum;            /* double per rank */
  int64_t rank_steps;
  tw_bucket_layout buckets;
  double bucket_mb;
};

G_DEFINE_FINAL_TYPE (TwbRun, twb_run, G_TYPE_OBJECT)

enum
{
  SIGNAL_PROGRESS,
  SIGNAL_PAUSED,
  SIGNAL_EPOCH,
  SIGNAL_NOTICE,
  SIGNAL_GRAPH_CHANGED,
  SIGNAL_STATE_CHANGED,
  SIGNAL_FINISHED,
  N_SIGNALS
};
static guint signals[N_SIGNALS];

static void
clear_classes (TwbRun *r)
{
  if (r->classes)
    {
      tw_class_report_clear (r->classes);
      g_clear_pointer (&r->classes, g_free);
    }
}

static void
twb_run_dispose (GObject *object)
{
  TwbRun *r = TWB_RUN (object);
  g_clear_handle_id (&r->drain_source, g_source_remove);
  /* Stops the worker at its next op and joins it: closing a window during
   * training leaves no thread behind. */
  g_clear_pointer (&r->session, tw_session_free);
  g_clear_object (&r->metrics);
  G_OBJECT_CLASS (twb_run_parent_class)->dispose (object);
}

static void
twb_run_finalize (GObject *object)
{
  TwbRun *r = TWB_RUN (object);
  g_free (r->id);
  g_free (r->label);
  g_free (r->command);
  g_free (r->preparing);
  g_clear_pointer (&r->pause, tw_snapshot_free);
  g_clear_pointer (&r->result, tw_snapshot_free);
  g_free (r->error);
  g_hash_table_unref (r->last_seen);
  g_hash_table_unref (r->previous);
  g_hash_table_unref (r->grad_series);
  g_clear_pointer (&r->rank_series, g_array_unref);
  g_clear_pointer (&r->rank_sum, g_array_unref);
  tw_bucket_layout_clear (&r->buckets);
  clear_classes (r);
  G_OBJECT_CLASS (twb_run_parent_class)->finalize (object);
}

static void
twb_run_class_init (TwbRunClass *klass)
{
  GObjectClass *oc = G_OBJECT_CLASS (klass);
  oc->dispose = twb_run_dispose;
  oc->finalize = twb_run_finalize;
  GType t = G_TYPE_FROM_CLASS (klass);
  signals[SIGNAL_PROGRESS] = g_signal_new ("progress", t, G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                           G_TYPE_NONE, 0);
  signals[SIGNAL_PAUSED] = g_signal_new ("paused", t, G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                         G_TYPE_NONE, 0);
  signals[SIGNAL_EPOCH] = g_signal_new ("epoch", t, G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                        G_TYPE_NONE, 1, G_TYPE_INT64);
  signals[SIGNAL_NOTICE] = g_signal_new ("notice", t, G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                         G_TYPE_NONE, 1, G_TYPE_STRING);
  signals[SIGNAL_GRAPH_CHANGED] = g_signal_new ("graph-changed", t, G_SIGNAL_RUN_LAST, 0, NULL,
                                                NULL, NULL, G_TYPE_NONE, 1, G_TYPE_POINTER);
  signals[SIGNAL_STATE_CHANGED] = g_signal_new ("state-changed", t, G_SIGNAL_RUN_LAST, 0, NULL,
                                                NULL, NULL, G_TYPE_NONE, 0);
  signals[SIGNAL_FINISHED] = g_signal_new ("finished", t, G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                           G_TYPE_NONE, 0);
}

static void
twb_run_init (TwbRun *r)
{
  r->last_seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, seen_free);
  r->previous = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, seen_free);
  r->grad_series = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  r->progress.eta_s = -1;
  r->progress.loss = r->progress.accuracy = r->progress.lr = NAN;
  r->state = TW_SESSION_IDLE;
}

static gboolean
drain_tick (gpointer data)
{
  twb_run_drain (TWB_RUN (data));
  return G_SOURCE_CONTINUE;
}

int
twb_run_default_threads (void)
{
  return CLAMP ((int) g_get_num_processors () - 1, 1, 4);
}

TwbRun *
twb_run_new (const tw_model *model, const TwbRunConfig *cfg, TwbMetrics *metrics, GError **error)
{
  tw_session_options o;
  tw_session_options_init (&o);
  o.mode = cfg->mode;
  o.max_steps = cfg->max_steps;
  /* One core left to the window (its frames and input), at most 4 for the
   * worker: with every core busy the worker's OpenMP threads and the main
   * loop preempt each other and a step takes 5–100 times as long
   * (bench/gui-train-bench, 2 cores). */
  o.threads = cfg->threads > 0 ? cfg->threads : twb_run_default_threads ();
  o.class_samples = 32;
  /* The data, the parameters and the initial weights are made on the
   * session's worker (a synthetic ImageNet-sized set takes seconds): the
   * main loop only copies the model. */
  tw_session_source src = { .data = cfg->data, .want_test = TRUE,
                            .init_weights = cfg->init_weights };
  g_autoptr (tw_session) s = tw_session_new_deferred (model, &src, &o, error);
  tw_session_options_clear (&o);
  if (s == NULL)
    return NULL;
  for (const char *const *b = cfg->breakpoints; b && *b; b++)
    if (!tw_session_add_breakpoint (s, *b, error))
      return NULL;
  for (const char *const *f = cfg->frozen; f && *f; f++)
    if (!tw_session_freeze (s, *f, TRUE, error))
      return NULL;

  TwbRun *r = g_object_new (TWB_TYPE_RUN, NULL);
  r->id = g_strdup (cfg->run_id ? cfg->run_id : "run");
  r->session = g_steal_pointer (&s);
  r->metrics = g_object_ref (metrics);
  r->batch = MAX (model->recipe.batch_size, 1);
  r->epochs = MAX (model->recipe.epochs, 1);
  r->progress.epochs = r->epochs;
  r->preparing = g_strdup ("Preparing…");
  twb_metrics_clear_run (metrics, r->id);
  r->series_loss = twb_metrics_add_series (metrics, r->id, "loss");
  r->series_acc = twb_metrics_add_series (metrics, r->id, "accuracy");
  r->series_lr = twb_metrics_add_series (metrics, r->id, "lr");
  r->series_rate = twb_metrics_add_series (metrics, r->id, "samples_per_s");
  r->series_ms = twb_metrics_add_series (metrics, r->id, "step_ms");
  r->drain_source = g_timeout_add (DRAIN_INTERVAL_MS, drain_tick, r);
  return r;
}

const char *
twb_run_get_preparing (TwbRun *r)
{
  return r->preparing;
}

/* The session is prepared: the steps to do are known. */
static void
take_ready (TwbRun *r, const tw_snapshot *sn)
{
  r->total_steps = sn->total_steps;
  r->per_epoch = MAX (sn->per_epoch, 1);
  r->epochs = MAX ((r->total_steps + r->per_epoch - 1) / r->per_epoch, 1);
  r->progress.total_steps = r->total_steps;
  r->progress.epochs = r->epochs;
  g_clear_pointer (&r->preparing, g_free);
}

const char *
twb_run_get_id (TwbRun *r)
{
  return r->id;
}

tw_session *
twb_run_get_session (TwbRun *r)
{
  return r->session;
}

tw_session_state
twb_run_get_state (TwbRun *r)
{
  return r->state;
}

gboolean
twb_run_is_active (TwbRun *r)
{
  return r->state == TW_SESSION_RUNNING || r->state == TW_SESSION_PAUSED;
}

static void
set_state (TwbRun *r, tw_session_state st)
{
  if (r->state == st)
    return;
  r->state = st;
  if (st != TW_SESSION_PAUSED)
    g_clear_pointer (&r->pause, tw_snapshot_free);
  if (st == TW_SESSION_RUNNING)
    r->serial++;
  g_signal_emit (r, signals[SIGNAL_STATE_CHANGED], 0);
}

/* The session's commands, on a run in other processes. */
static gboolean
session_or_error (TwbRun *r, GError **error)
{
  if (r->session)
    return TRUE;
  g_set_error (error, TW_SESSION_ERROR, TW_SESSION_ERROR_STATE,
               "This run trains in other processes (%s): the debugger steps one process's "
               "session", r->label ? r->label : "a cluster run");
  return FALSE;
}

/* A command that sets the worker going: the state is RUNNING from now on
 * (the next PAUSED or FINISHED snapshot says otherwise). */
static gboolean
go (TwbRun *r, gboolean ok)
{
  if (ok)
    set_state (r, TW_SESSION_RUNNING);
  return ok;
}

gboolean
twb_run_run (TwbRun *r, GError **error)
{
  if (!session_or_error (r, error))
    return FALSE;
  return go (r, tw_session_run (r->session, error));
}

gboolean
twb_run_pause (TwbRun *r, GError **error)
{
  if (!session_or_error (r, error))
    return FALSE;
  return tw_session_pause (r->session, error);
}

gboolean
twb_run_stop (TwbRun *r, GError **error)
{
  /* From a pause the worker goes on to its end (a FINISHED snapshot always
   * follows): running until then, so nothing takes the old pause for the
   * position and `twb --do` waits for the stop to finish. */
  if (!session_or_error (r, error))
    return FALSE;
  gboolean paused = r->state == TW_SESSION_PAUSED;
  gboolean ok = tw_session_stop (r->session, error);
  return paused ? go (r, ok) : ok;
}

gboolean
twb_run_step_op (TwbRun *r, GError **error)
{
  if (!session_or_error (r, error))
    return FALSE;
  return go (r, tw_session_step_op (r->session, error));
}

gboolean
twb_run_step_layer (TwbRun *r, GError **error)
{
  if (!session_or_error (r, error))
    return FALSE;
  return go (r, tw_session_step_layer (r->session, error));
}

gboolean
twb_run_step_iteration (TwbRun *r, GError **error)
{
  if (!session_or_error (r, error))
    return FALSE;
  return go (r, tw_session_step_iteration (r->session, error));
}

gboolean
twb_run_run_steps (TwbRun *r, int64_t n, GError **error)
{
  if (!session_or_error (r, error))
    return FALSE;
  int64_t at = r->progress.step;
  if (r->pause && r->pause->phase >= 0)
    at = r->pause->iteration - 1;     /* inside an iteration: it counts as the first */
  g_autofree char *spec = g_strdup_printf ("step=%" G_GINT64_FORMAT, at + MAX (n, 1) + 1);
  /* A step=N breakpoint pauses before iteration N; it stays set (harmless:
   * the run never comes back to that step). */
  if (!tw_session_add_breakpoint (r->session, spec, error))
    return FALSE;
  return twb_run_run (r, error);
}

gboolean
twb_run_set_breakpoints (TwbRun *r, const char *const *specs, GError **error)
{
  if (r->session == NULL)
    return TRUE;      /* an external run has no debugger: nothing to set */
  tw_session_clear_breakpoints (r->session);
  gboolean ok = TRUE;
  for (const char *const *b = specs; b && *b; b++)
    if (!tw_session_add_breakpoint (r->session, *b, ok ? error : NULL))
      ok = FALSE;
  return ok;
}

/* ---- Snapshots ----------------------------------------------------------------------- */

static guint
grad_series (TwbRun *r, const char *param)
{
  gpointer v = g_hash_table_lookup (r->grad_series, param);
  if (v)
    return GPOINTER_TO_UINT (v) - 1;
  g_autofree char *name = g_strconcat ("grad_norm:", param, NULL);
  guint id = twb_metrics_add_series (r->metrics, r->id, name);
  g_hash_table_insert (r->grad_series, g_strdup (param), GUINT_TO_POINTER (id + 1));
  return id;
}

static void
take_metrics (TwbRun *r, const tw_snapshot *sn)
{
  double x = (double) sn->step;
  twb_metrics_append (r->metrics, r->series_loss, x, sn->loss);
  twb_metrics_append (r->metrics, r->series_acc, x, sn->accuracy);
  twb_metrics_append (r->metrics, r->series_lr, x, sn->lr);
  twb_metrics_append (r->metrics, r->series_rate, x, sn->samples_per_s);
  twb_metrics_append (r->metrics, r->series_ms, x, sn->step_ms);
  for (int i = 0; sn->param_names && sn->param_names[i]; i++)
    twb_metrics_append (r->metrics, grad_series (r, sn->param_names[i]), x, sn->grad_norm[i]);
  r->progress.step = sn->step;
  r->progress.epoch = sn->epoch;
  r->progress.loss = sn->loss;
  r->progress.accuracy = sn->accuracy;
  r->progress.lr = sn->lr;
  /* The session's figures over its finished steps (engine/rate.h). */
  r->progress.samples_per_s = sn->samples_per_s;
  r->progress.eta_s = sn->eta_s;
  r->progress.dropped += sn->dropped;
}

static void
take_tensors (TwbRun *r, const tw_snapshot *sn)
{
  if (sn->tensors == NULL)
    return;
  int64_t iter = sn->iteration > 0 ? sn->iteration : sn->step + 1;
  for (guint i = 0; i < sn->tensors->len; i++)
    {
      const tw_snapshot_tensor *t = g_ptr_array_index (sn->tensors, i);
      Seen *old = g_hash_table_lookup (r->last_seen, t->name);
      if (old && old->iteration < iter)
        {
          Seen *keep = g_new0 (Seen, 1);
          keep->iteration = old->iteration;
          keep->serial = old->serial;
          keep->tensor = tw_tensor_ref (old->tensor);
          g_hash_table_replace (r->previous, g_strdup (t->name), keep);
        }
      Seen *now = g_new0 (Seen, 1);
      now->iteration = iter;
      now->serial = r->serial;
      now->tensor = tw_tensor_ref (t->tensor);
      g_hash_table_replace (r->last_seen, g_strdup (t->name), now);
    }
}

static void
take_epoch (TwbRun *r, tw_snapshot *sn)
{
  double x = (double) sn->step;
  const struct
  {
    const char *name;
    double v;
  } per_epoch[] = {
    { "train_loss", sn->train_loss },
    { "val_loss", sn->val_loss },
    { "val_accuracy", sn->val_accuracy },
  };
  for (guint i = 0; i < G_N_ELEMENTS (per_epoch); i++)
    if (!isnan (per_epoch[i].v) || twb_metrics_find_series (r->metrics, r->id, per_epoch[i].name)
                                     != G_MAXUINT)
      twb_metrics_append (r->metrics,
                          twb_metrics_add_series (r->metrics, r->id, per_epoch[i].name), x,
                          per_epoch[i].v);
  if (sn->classes)
    {
      clear_classes (r);
      r->classes = g_steal_pointer (&sn->classes);
      r->classes_epoch = sn->epoch;
    }
}

static void
take_finished (TwbRun *r, tw_snapshot *sn)
{
  double x = (double) sn->step;
  if (!isnan (sn->test_loss))
    {
      twb_metrics_append (r->metrics, twb_metrics_add_series (r->metrics, r->id, "test_loss"), x,
                          sn->test_loss);
      twb_metrics_append (r->metrics,
                          twb_metrics_add_series (r->metrics, r->id, "test_accuracy"), x,
                          sn->test_accuracy);
    }
  g_free (r->error);
  r->error = sn->state == TW_SESSION_FAILED ? g_strdup (sn->message ? sn->message : "failed")
                                             : NULL;
  r->progress.eta_s = 0;
  g_clear_pointer (&r->result, tw_snapshot_free);
  r->result = sn;
}

guint
twb_run_drain (TwbRun *r)
{
  g_object_ref (r);
  guint n = 0;
  gboolean progress = FALSE;
  tw_snapshot *sn;
  while (r->session && n < DRAIN_MAX && (sn = tw_session_pop (r->session, 0)))
    {
      n++;
      switch (sn->kind)
        {
        case TW_SNAP_METRICS:
          take_metrics (r, sn);
          progress = TRUE;
          tw_snapshot_free (sn);
          break;
        case TW_SNAP_EPOCH:
          take_epoch (r, sn);
          g_signal_emit (r, signals[SIGNAL_EPOCH], 0, (gint64) sn->epoch);
          tw_snapshot_free (sn);
          break;
        case TW_SNAP_PAUSED:
          /* A new position: copies from before it (a request answered
           * after the worker went on, but drained only now) are stale. */
          r->serial++;
          take_tensors (r, sn);
          g_clear_pointer (&r->pause, tw_snapshot_free);
          r->pause = sn;
          /* Paused between iterations: the steps done are the position. */
          r->progress.step = MAX (r->progress.step, sn->step);
          set_state (r, TW_SESSION_PAUSED);
          g_signal_emit (r, signals[SIGNAL_PAUSED], 0);
          break;
        case TW_SNAP_TENSOR:
          take_tensors (r, sn);
          tw_snapshot_free (sn);
          g_signal_emit (r, signals[SIGNAL_PAUSED], 0);
          break;
        case TW_SNAP_GRAPH_CHANGED:
          g_signal_emit (r, signals[SIGNAL_GRAPH_CHANGED], 0, &sn->change);
          tw_snapshot_free (sn);
          break;
        case TW_SNAP_NOTE:
          g_signal_emit (r, signals[SIGNAL_NOTICE], 0, sn->message);
          tw_snapshot_free (sn);
          break;
        case TW_SNAP_PREPARING:
          g_free (r->preparing);
          r->preparing = g_steal_pointer (&sn->message);
          tw_snapshot_free (sn);
          g_signal_emit (r, signals[SIGNAL_STATE_CHANGED], 0);
          break;
        case TW_SNAP_READY:
          take_ready (r, sn);
          tw_snapshot_free (sn);
          g_signal_emit (r, signals[SIGNAL_STATE_CHANGED], 0);
          break;
        case TW_SNAP_FINISHED:
          {
            tw_session_state st = sn->state;
            g_clear_pointer (&r->preparing, g_free);
            take_finished (r, sn);
            set_state (r, st);
            g_clear_handle_id (&r->drain_source, g_source_remove);
            g_signal_emit (r, signals[SIGNAL_FINISHED], 0);
            break;
          }
        default:
          tw_snapshot_free (sn);
          break;
        }
    }
  if (progress)
    g_signal_emit (r, signals[SIGNAL_PROGRESS], 0);
  g_object_unref (r);
  return n;
}

void
twb_run_get_progress (TwbRun *r, TwbRunProgress *out)
{
  *out = r->progress;
}

const tw_snapshot *
twb_run_get_pause (TwbRun *r)
{
  return r->state == TW_SESSION_PAUSED ? r->pause : NULL;
}

tw_tensor *
twb_run_get_tensor (TwbRun *r, const char *name)
{
  /* A copy from before the worker last went on is not the value now. */
  Seen *s = g_hash_table_lookup (r->last_seen, name);
  return s && s->serial == r->serial ? s->tensor : NULL;
}

tw_tensor *
twb_run_get_previous_tensor (TwbRun *r, const char *name)
{
  Seen *s = g_hash_table_lookup (r->previous, name);
  return s ? s->tensor : NULL;
}

int64_t
twb_run_get_tensor_iteration (TwbRun *r, const char *name, gboolean previous)
{
  Seen *s = g_hash_table_lookup (previous ? r->previous : r->last_seen, name);
  return s ? s->iteration : 0;
}

const tw_class_report *
twb_run_get_class_report (TwbRun *r, int64_t *epoch)
{
  if (epoch)
    *epoch = r->classes_epoch;
  return r->classes;
}

const char *
twb_run_get_error (TwbRun *r)
{
  return r->error;
}

const tw_snapshot *
twb_run_get_result (TwbRun *r)
{
  return r->result;
}

/* ---- Runs in other processes --------------------------------------------------------- */

TwbRun *
twb_run_new_external (const char *run_id, const char *label, const char *command,
                      const tw_model *model, TwbMetrics *metrics)
{
  TwbRun *r = g_object_new (TWB_TYPE_RUN, NULL);
  r->external = TRUE;
  r->id = g_strdup (run_id ? run_id : "run");
  r->label = g_strdup (label);
  r->command = g_strdup (command);
  r->metrics = g_object_ref (metrics);
  r->batch = MAX (model->recipe.batch_size, 1);
  r->epochs = MAX (model->recipe.epochs, 1);
  r->progress.epochs = r->epochs;
  r->preparing = g_strdup ("Starting the ranks…");
  twb_metrics_clear_run (metrics, r->id);
  r->series_loss = twb_metrics_add_series (metrics, r->id, "loss");
  r->series_acc = twb_metrics_add_series (metrics, r->id, "accuracy");
  r->series_lr = twb_metrics_add_series (metrics, r->id, "lr");
  r->series_rate = twb_metrics_add_series (metrics, r->id, "samples_per_s");
  r->series_ms = twb_metrics_add_series (metrics, r->id, "step_ms");
  r->series_comm = G_MAXUINT;
  r->state = TW_SESSION_RUNNING;
  return r;
}

gboolean
twb_run_is_external (TwbRun *r)
{
  return r->external;
}

const char *
twb_run_get_label (TwbRun *r)
{
  return r->label;
}

const char *
twb_run_get_command (TwbRun *r)
{
  return r->command;
}

static double
member_num (JsonObject *o, const char *name)
{
  JsonNode *n = json_object_get_member (o, name);
  if (n == NULL || !JSON_NODE_HOLDS_VALUE (n))
    return NAN;
  GType t = json_node_get_value_type (n);
  return t == G_TYPE_DOUBLE || t == G_TYPE_INT64 ? json_node_get_double (n) : NAN;
}

/* "rank_step_ms": [..] of a metrics line: a series per rank. */
static void
take_rank_times (TwbRun *r, JsonObject *o, double x)
{
  JsonNode *n = json_object_get_member (o, "rank_step_ms");
  if (n == NULL || !JSON_NODE_HOLDS_ARRAY (n))
    return;
  JsonArray *a = json_node_get_array (n);
  guint nr = json_array_get_length (a);
  if (r->rank_series == NULL)
    {
      r->rank_series = g_array_new (FALSE, FALSE, sizeof (guint));
      r->rank_sum = g_array_new (FALSE, TRUE, sizeof (double));
    }
  for (guint k = r->rank_series->len; k < nr; k++)
    {
      g_autofree char *name = g_strdup_printf ("step_ms:rank %u", k);
      guint id = twb_metrics_add_series (r->metrics, r->id, name);
      g_array_append_val (r->rank_series, id);
    }
  g_array_set_size (r->rank_sum, MAX (r->rank_sum->len, nr));
  for (guint k = 0; k < nr; k++)
    {
      JsonNode *e = json_array_get_element (a, k);
      if (!JSON_NODE_HOLDS_VALUE (e))
        continue;
      double ms = json_node_get_double (e);
      twb_metrics_append (r->metrics, g_array_index (r->rank_series, guint, k), x, ms);
      /* The first step makes the executors and buffers: left out. */
      if (r->rank_steps > 0)
        g_array_index (r->rank_sum, double, k) += ms;
    }
  r->rank_steps++;
}

/* "grad_norm": { param: norm or null } of a metrics line, into sn. */
static void
take_grad_norms (JsonObject *o, tw_snapshot *sn)
{
  JsonNode *n = json_object_get_member (o, "grad_norm");
  if (n == NULL || !JSON_NODE_HOLDS_OBJECT (n))
    return;
  JsonObject *g = json_node_get_object (n);
  g_autoptr (GList) names = json_object_get_members (g);
  guint len = g_list_length (names), i = 0;
  sn->param_names = g_new0 (char *, len + 1);
  sn->grad_norm = g_new0 (double, MAX (len, 1));
  for (GList *l = names; l; l = l->next, i++)
    {
      sn->param_names[i] = g_strdup (l->data);
      sn->grad_norm[i] = member_num (g, l->data);
    }
}

/* A "buckets" line: the layout the run ended with. */
static void
take_buckets (TwbRun *r, JsonObject *o)
{
  tw_bucket_layout_clear (&r->buckets);
  r->bucket_mb = member_num (o, "bucket_mb");
  JsonNode *n = json_object_get_member (o, "buckets");
  if (n == NULL || !JSON_NODE_HOLDS_ARRAY (n))
    return;
  JsonArray *a = json_node_get_array (n);
  int nb = (int) json_array_get_length (a);
  r->buckets.names = g_new0 (char **, MAX (nb, 1));
  r->buckets.bytes = g_new0 (int64_t, MAX (nb, 1));
  for (int b = 0; b < nb; b++)
    {
      JsonNode *e = json_array_get_element (a, b);
      JsonObject *k = JSON_NODE_HOLDS_OBJECT (e) ? json_node_get_object (e) : NULL;
      JsonArray *ps = k && json_object_has_member (k, "params")
                          && JSON_NODE_HOLDS_ARRAY (json_object_get_member (k, "params"))
                        ? json_object_get_array_member (k, "params") : NULL;
      guint np = ps ? json_array_get_length (ps) : 0;
      r->buckets.names[b] = g_new0 (char *, np + 1);
      for (guint i = 0; i < np; i++)
        {
          const char *s = json_node_get_string (json_array_get_element (ps, i));
          r->buckets.names[b][i] = g_strdup (s ? s : "");
        }
      double bytes = k ? member_num (k, "bytes") : NAN;
      r->buckets.bytes[b] = isfinite (bytes) ? (int64_t) bytes : 0;
    }
  r->buckets.n = nb;
}

const tw_bucket_layout *
twb_run_get_buckets (TwbRun *r, double *bucket_mb)
{
  if (bucket_mb)
    *bucket_mb = r->bucket_mb;
  return r->buckets.n > 0 ? &r->buckets : NULL;
}

guint
twb_run_get_n_ranks (TwbRun *r)
{
  return r->rank_series ? r->rank_series->len : 0;
}

int
twb_run_get_straggler (TwbRun *r, double *ratio)
{
  guint nr = twb_run_get_n_ranks (r);
  if (ratio)
    *ratio = NAN;
  if (nr < 2 || r->rank_steps < 1 + TWB_RUN_STRAGGLER_MIN_STEPS)
    return -1;
  int slow = 0;
  double total = 0;
  for (guint k = 0; k < nr; k++)
    {
      double v = g_array_index (r->rank_sum, double, k);
      total += v;
      if (v > g_array_index (r->rank_sum, double, slow))
        slow = (int) k;
    }
  double me = g_array_index (r->rank_sum, double, slow);
  double others = (total - me) / (nr - 1);
  double q = others > 0 ? me / others : NAN;
  if (ratio)
    *ratio = q;
  return isfinite (q) && q >= TWB_RUN_STRAGGLER_RATIO ? slow : -1;
}

gboolean
twb_run_feed_line (TwbRun *r, const char *line)
{
  g_return_val_if_fail (r->external, FALSE);
  g_autoptr (JsonParser) p = json_parser_new ();
  if (!json_parser_load_from_data (p, line, -1, NULL))
    return FALSE;
  JsonNode *root = json_parser_get_root (p);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    return FALSE;
  JsonObject *o = json_node_get_object (root);
  const char *event = json_object_get_string_member_with_default (o, "event", "");
  tw_snapshot *sn = g_new0 (tw_snapshot, 1);
  sn->step = (int64_t) member_num (o, "step");
  sn->epoch = isnan (member_num (o, "epoch")) ? r->progress.epoch : (int64_t) member_num (o, "epoch");
  sn->val_loss = sn->val_accuracy = sn->test_loss = sn->test_accuracy = sn->train_loss = NAN;
  gboolean taken = TRUE;
  if (strcmp (event, "metrics") == 0)
    {
      if (r->preparing)
        {
          g_clear_pointer (&r->preparing, g_free);
          g_signal_emit (r, signals[SIGNAL_STATE_CHANGED], 0);
        }
      double total = member_num (o, "total_steps");
      if (total > 0)
        {
          r->total_steps = r->progress.total_steps = (int64_t) total;
          r->per_epoch = MAX ((int64_t) total / MAX (r->epochs, 1), 1);
        }
      sn->kind = TW_SNAP_METRICS;
      sn->loss = member_num (o, "loss");
      sn->accuracy = member_num (o, "accuracy");
      sn->lr = member_num (o, "lr");
      sn->step_ms = member_num (o, "step_ms");
      sn->samples_per_s = member_num (o, "samples_per_s");
      sn->eta_s = -1;
      if (r->total_steps > 0 && sn->samples_per_s > 0)
        sn->eta_s = (double) (r->total_steps - sn->step) * r->batch / sn->samples_per_s;
      sn->comm_bytes = member_num (o, "comm_bytes");
      take_grad_norms (o, sn);
      take_metrics (r, sn);
      take_rank_times (r, o, (double) sn->step);
      if (!isnan (sn->comm_bytes))
        {
          if (r->series_comm == G_MAXUINT)
            r->series_comm = twb_metrics_add_series (r->metrics, r->id, "comm_bytes");
          twb_metrics_append (r->metrics, r->series_comm, (double) sn->step, sn->comm_bytes);
        }
      tw_snapshot_free (sn);
      g_signal_emit (r, signals[SIGNAL_PROGRESS], 0);
    }
  else if (strcmp (event, "epoch") == 0)
    {
      sn->kind = TW_SNAP_EPOCH;
      sn->train_loss = member_num (o, "train_loss");
      sn->val_loss = member_num (o, "val_loss");
      sn->val_accuracy = member_num (o, "val_accuracy");
      take_epoch (r, sn);
      g_signal_emit (r, signals[SIGNAL_EPOCH], 0, (gint64) sn->epoch);
      tw_snapshot_free (sn);
    }
  else if (strcmp (event, "finished") == 0)
    {
      const char *st = json_object_get_string_member_with_default (o, "state", "finished");
      sn->kind = TW_SNAP_FINISHED;
      sn->state = strcmp (st, "finished") == 0  ? TW_SESSION_FINISHED
                  : strcmp (st, "stopped") == 0 ? TW_SESSION_STOPPED
                                                : TW_SESSION_FAILED;
      sn->test_loss = member_num (o, "test_loss");
      sn->test_accuracy = member_num (o, "test_accuracy");
      const char *msg = json_object_get_string_member_with_default (o, "message", NULL);
      sn->message = g_strdup (msg);
      r->progress.step = MAX (r->progress.step, sn->step);
      take_finished (r, sn);   /* the state and "finished" come when the processes end */
    }
  else if (strcmp (event, "buckets") == 0)
    {
      take_buckets (r, o);
      tw_snapshot_free (sn);
    }
  else
    {
      /* "results" and what a later twb adds: read, nothing drawn. */
      taken = strcmp (event, "results") == 0;
      tw_snapshot_free (sn);
    }
  return taken;
}

void
twb_run_end_external (TwbRun *r, tw_session_state state, const char *error)
{
  g_return_if_fail (r->external);
  if (!twb_run_is_active (r))
    return;
  g_clear_pointer (&r->preparing, g_free);
  if (r->result)
    {
      /* The stream's own end: a failure it named stays named. */
      if (r->result->state != TW_SESSION_FINISHED || state == TW_SESSION_FINISHED)
        state = r->result->state;
    }
  else
    {
      tw_snapshot *sn = g_new0 (tw_snapshot, 1);
      sn->kind = TW_SNAP_FINISHED;
      sn->state = state;
      sn->step = r->progress.step;
      sn->test_loss = sn->test_accuracy = NAN;
      r->result = sn;
    }
  if (state == TW_SESSION_FAILED)
    {
      if (error || r->error == NULL)
        {
          g_free (r->error);
          r->error = g_strdup (error ? error : "the ranks failed");
        }
    }
  else
    g_clear_pointer (&r->error, g_free);
  r->result->state = state;
  r->progress.eta_s = 0;
  set_state (r, state);
  g_signal_emit (r, signals[SIGNAL_FINISHED], 0);
}
