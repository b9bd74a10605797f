/* twb-run-store.h — every run of a model, kept: its curves as CSV
 * (twb-metrics.h's format) and its recipe and results as JSON, one pair
 * per run under $XDG_DATA_HOME/twb/runs/<the model's identity>/ (a file
 * written before identities: <model>-<hash of its path>, its old folder).
 *
 *   g_autofree char *dir = twb_run_store_dir_for_id (twb_document_get_model_id (doc));
 *   twb_run_store_save (dir, run, metrics, model, &error);   // run-3.csv, run-3.json
 *   g_autoptr (GPtrArray) runs = twb_run_store_list (dir);   // TwbRunRecord*, newest first
 *
 * GTK-free.  Files are written atomically; an unreadable record is skipped
 * (and named in a g_message), never fatal.
 */
#pragma once

#include "ui/twb-run.h"

G_BEGIN_DECLS

typedef struct
{
  char *id;                   /* "run-3" */
  char *csv_path, *json_path;
  gint64 created;             /* Unix seconds */
  char *mode;                 /* "eager", "compiled" */
  char *state;                /* "finished", "stopped", "failed" */
  int64_t steps;
  double final_loss, test_accuracy;   /* NaN when unknown */
  char *summary;              /* "SGD lr 0.05 · batch 64 · 3 epochs" */
  char *label;                /* a run in other processes: "2 ranks, ring"; else NULL */
} TwbRunRecord;

void twb_run_record_free (TwbRunRecord *r);

/* The folder of a model's runs by its identity (twb_document_get_model_id):
 * $XDG_DATA_HOME/twb/runs/<id>.  Caller frees. */
char *twb_run_store_dir_for_id (const char *model_id);
/* An identity for a model that has none: for a file, the name its runs
 * were kept under before identities ("<name>-<hash of its path>", so that
 * those runs are still found); for an unsaved model a new random one.
 * Caller frees. */
char *twb_run_store_new_model_id (const char *model_path);
/* The folder before identities (by path; path NULL: by name under
 * "unsaved-").  Caller frees. */
char *twb_run_store_dir_for (const char *model_path, const char *model_name);
/* The next free run id in dir ("run-1" when empty).  Caller frees. */
char *twb_run_store_next_id (const char *dir);
/* Writes the run's two files.  A run that ended before its first step (its
 * dataset or initial weights failed to load, it was stopped while
 * preparing) has nothing to keep: nothing is written, TRUE. */
gboolean twb_run_store_save (const char *dir, TwbRun *run, TwbMetrics *metrics,
                             const tw_model *model, GError **error);
/* TwbRunRecord*, newest first (free with g_ptr_array_unref). */
GPtrArray *twb_run_store_list (const char *dir);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (TwbRunRecord, twb_run_record_free)

G_END_DECLS
