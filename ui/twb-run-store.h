/* twb-run-store.h — every run of a model, kept: its curves as CSV
 * (twb-metrics.h's format) and its recipe and results as JSON, one pair
 * per run under $XDG_DATA_HOME/twb/runs/<model>-<hash of its path>/.
 *
 *   g_autofree char *dir = twb_run_store_dir_for ("/home/u/mlp.json", "mlp");
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
} TwbRunRecord;

void twb_run_record_free (TwbRunRecord *r);

/* Caller frees.  path NULL (an unsaved model): by name under "unsaved-". */
char *twb_run_store_dir_for (const char *model_path, const char *model_name);
/* The next free run id in dir ("run-1" when empty).  Caller frees. */
char *twb_run_store_next_id (const char *dir);
gboolean twb_run_store_save (const char *dir, TwbRun *run, TwbMetrics *metrics,
                             const tw_model *model, GError **error);
/* TwbRunRecord*, newest first (free with g_ptr_array_unref). */
GPtrArray *twb_run_store_list (const char *dir);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (TwbRunRecord, twb_run_record_free)

G_END_DECLS
