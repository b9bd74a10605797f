/* twb-run.h — one training run of a model, as the window drives it.
 *
 * A TwbRun makes a tw_session over a copy of the model and drains its
 * snapshots on the main loop (every 30 ms, and at once through
 * twb_run_drain), turning them into metric series (TwbMetrics, under the
 * run's id), progress, the last pause and notices.  The session opens the
 * datasets (engine/data-fit.h), initialises the parameters and loads the
 * initial weights on its worker when the run starts (tw_session_new_deferred):
 * meanwhile twb_run_get_preparing says what it does, Stop cancels it, and a
 * failure there ends the run as any other ("finished", twb_run_get_error).  It computes nothing of the training itself: the session's
 * worker does, and the run only copies what comes out.  GTK-free (GObject
 * and the GLib main loop), so it is tested without a display.
 *
 *   g_autoptr (TwbRun) r = twb_run_new (model, &config, metrics, &error);
 *   g_signal_connect (r, "paused", G_CALLBACK (show_position), win);
 *   twb_run_run (r, &error);            // start, or go on after a pause
 *
 * The session's snapshot queue is bounded (metrics are dropped, never
 * queued without end, when the main loop is slow), so a busy window never
 * slows training.
 *
 * Series (run id, name): "loss", "accuracy", "lr", "samples_per_s",
 * "step_ms", "grad_norm:PARAM" per step (x = step), for external runs
 * also "comm_bytes" and "step_ms:rank N" (every rank's); "train_loss",
 * "val_loss", "val_accuracy", "test_loss", "test_accuracy" per epoch (x =
 * the step the epoch ended at).
 *
 * Signals:
 *   "progress" ()                 metrics arrived (at most once per drain)
 *   "paused" ()                   the run paused: twb_run_get_pause ()
 *   "epoch" (gint64 epoch)        an epoch ended: validation, class report
 *   "notice" (const char *text)   something the session did on its own
 *   "graph-changed" (gpointer tw_graph_change*) an edit was applied
 *   "state-changed" ()            running / paused / finished, preparing …
 *   "finished" ()                 the worker is done (twb_run_get_error)
 * Ownership: getters return borrowed pointers valid until the next drain.
 */
#pragma once

#include <glib-object.h>

#include "engine/classes.h"
#include "engine/session.h"
#include "engine/train.h"
#include "ui/twb-metrics.h"

G_BEGIN_DECLS

typedef struct
{
  tw_exec_mode mode;
  int threads;                 /* 0: twb_run_default_threads () */
  int64_t max_steps;           /* 0: the recipe's epochs */
  const char *init_weights;    /* a state_dict to start from, or NULL */
  const char *data;            /* a dataset overriding the recipe's, or NULL */
  const char *run_id;          /* the series' run name ("run-3") */
  const char *const *breakpoints;   /* specs (tw_session_add_breakpoint), NULL-terminated */
  const char *const *frozen;   /* node ids whose parameters start frozen */
} TwbRunConfig;

#define TWB_TYPE_RUN (twb_run_get_type ())
G_DECLARE_FINAL_TYPE (TwbRun, twb_run, TWB, RUN, GObject)

/* NULL with an error when a breakpoint or frozen node of config does not
 * fit the model; nothing is made then.  The dataset, its fit to the
 * model's input and the weights file are checked by the worker once the run
 * starts: their errors end the run (FAILED, the message naming them). */
TwbRun *twb_run_new (const tw_model *model, const TwbRunConfig *config, TwbMetrics *metrics,
                     GError **error);

/* The worker's CPU threads when the config says 0: the cores less one (the
 * window keeps one), 1 to 4. */
int twb_run_default_threads (void);

const char *twb_run_get_id (TwbRun *r);
tw_session *twb_run_get_session (TwbRun *r);           /* borrowed: commands */
tw_session_state twb_run_get_state (TwbRun *r);
gboolean twb_run_is_active (TwbRun *r);                /* running or paused */
/* What the worker prepares before the run's first step ("Preparing the data
 * (synthetic)…"), NULL once it is ready (or ended).  "state-changed" tells
 * each change.  Borrowed. */
const char *twb_run_get_preparing (TwbRun *r);

gboolean twb_run_run (TwbRun *r, GError **error);
gboolean twb_run_pause (TwbRun *r, GError **error);
gboolean twb_run_stop (TwbRun *r, GError **error);
gboolean twb_run_step_op (TwbRun *r, GError **error);
gboolean twb_run_step_layer (TwbRun *r, GError **error);
gboolean twb_run_step_iteration (TwbRun *r, GError **error);
/* Run n more steps, then pause between iterations. */
gboolean twb_run_run_steps (TwbRun *r, int64_t n, GError **error);
/* Replace the breakpoints with specs (NULL-terminated); a bad one fails
 * naming it, the others stay set. */
gboolean twb_run_set_breakpoints (TwbRun *r, const char *const *specs, GError **error);

/* Take every queued snapshot now (the timer does it every 30 ms); returns
 * how many. */
guint twb_run_drain (TwbRun *r);

/* Progress: steps done and to do, epoch (0-based) and epochs, samples/s
 * and seconds left (-1 unknown) as of the latest finished step (the
 * session's, from its finished steps: engine/rate.h). */
typedef struct
{
  int64_t step, total_steps;
  int64_t epoch, epochs;
  double samples_per_s, eta_s;
  double loss, accuracy, lr;
  guint dropped;               /* metric snapshots the window skipped so far */
} TwbRunProgress;
void twb_run_get_progress (TwbRun *r, TwbRunProgress *out);

/* The last pause (NULL when not paused).  Borrowed. */
const tw_snapshot *twb_run_get_pause (TwbRun *r);
/* The tensor of the last pause, or of a request answered since, by name
 * (NULL once the worker has gone on: a copy from an earlier pause is not
 * the value now); and the same tensor at the previous pause in an earlier
 * iteration (for the inspector's difference), or NULL.  Borrowed. */
tw_tensor *twb_run_get_tensor (TwbRun *r, const char *name);
tw_tensor *twb_run_get_previous_tensor (TwbRun *r, const char *name);
/* The 1-based iteration the latest copy of name (previous: the one
 * twb_run_get_previous_tensor returns) was taken in; 0 when there is none. */
int64_t twb_run_get_tensor_iteration (TwbRun *r, const char *name, gboolean previous);
/* The last epoch's class report on the test (or validation) set, NULL for
 * models that are not classifiers or before the first epoch ends. */
const tw_class_report *twb_run_get_class_report (TwbRun *r, int64_t *epoch);
/* The error that ended a failed run, NULL otherwise. */
const char *twb_run_get_error (TwbRun *r);
/* The finished snapshot (results), NULL before the end.  Borrowed. */
const tw_snapshot *twb_run_get_result (TwbRun *r);

/* A run trained by other processes (`twb train --ranks N --progress-json`,
 * started by the window): no session; the caller feeds it the stream's
 * lines (metrics, epoch, finished: the same series as a session's) and
 * ends it.  Commands other than those fail (twb_run_get_session is NULL).
 * label: what the Runs list calls it ("2 ranks, ring, top-k 1%"); command:
 * the command line, kept with the run.
 *
 *   TwbRun *r = twb_run_new_external ("run-4", "2 ranks, ring", "twb train …", model, metrics);
 *   twb_run_feed_line (r, "{\"event\":\"metrics\",\"step\":1,…}");
 *   twb_run_end_external (r, TW_SESSION_STOPPED, NULL);   // if no "finished" came
 */
TwbRun *twb_run_new_external (const char *run_id, const char *label, const char *command,
                              const tw_model *model, TwbMetrics *metrics);
gboolean twb_run_is_external (TwbRun *r);
const char *twb_run_get_label (TwbRun *r);       /* NULL for the window's own runs */
const char *twb_run_get_command (TwbRun *r);     /* NULL for the window's own runs */
/* One line of --progress-json; FALSE (nothing taken) when it is not one. */
gboolean twb_run_feed_line (TwbRun *r, const char *line);
/* Every rank's step time: a series per rank ("step_ms:rank N"), from
 * metrics lines' rank_step_ms; the number of ranks seen (0 before). */
guint twb_run_get_n_ranks (TwbRun *r);
/* The straggler: the rank whose mean step time over the run (the first
 * step, which makes the buffers, left out) is at least
 * TWB_RUN_STRAGGLER_RATIO times the others' mean (ratio: that quotient,
 * NaN before two ranks reported), or -1 when none is or fewer than
 * TWB_RUN_STRAGGLER_MIN_STEPS steps after the first were measured (the
 * next few steps still warm caches and buffers up unevenly). */
#define TWB_RUN_STRAGGLER_MIN_STEPS 10
#define TWB_RUN_STRAGGLER_RATIO 1.25   /* a margin chosen over the noise of equal ranks
                                        * sharing cores, not a measured bound */
int twb_run_get_straggler (TwbRun *r, double *ratio);
/* Data parallel: the gradient buckets the run ended with (its "buckets"
 * line) and the --bucket-mb it ran with; NULL before that line.  Borrowed. */
const tw_bucket_layout *twb_run_get_buckets (TwbRun *r, double *bucket_mb);
/* The processes ended: state (FINISHED, STOPPED, FAILED) and the error of
 * a failure, unless a "finished" line said it already.  "finished" then. */
void twb_run_end_external (TwbRun *r, tw_session_state state, const char *error);

G_END_DECLS
