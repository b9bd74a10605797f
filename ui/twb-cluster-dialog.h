/* twb-cluster-dialog.h — training on several processes: the options of
 * `twb train --ranks N` (app/twb-dist.h) as a run's settings, their check
 * (twb_dist_args_check, the command line's own), the command they make and
 * a dialog to choose them.
 *
 *   TwbClusterConfig c;
 *   twb_cluster_config_init (&c);            // 2 ranks, data, mpi, synchronous
 *   c.ranks = 4;
 *   c.algo = g_strdup ("ring");
 *   if (!twb_cluster_config_check (&c, batch, &error)) …   // names the option
 *   g_auto (GStrv) argv = twb_cluster_config_argv (&c, "twb", "/tmp/m.json");
 *   g_autofree char *name = twb_cluster_config_label (&c);   // "4 ranks, ring"
 *
 * The dialog (modal, over parent) edits a copy and emits nothing: on Use it
 * calls done (config, user_data) with the checked settings (borrowed for
 * the call); Cancel calls nothing.
 */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

typedef struct
{
  int ranks;                  /* 2–64 */
  char *parallel;             /* "data", "pipeline", "hybrid" */
  char *algo;                 /* "mpi", "ring", "tree", "ps", "hier" */
  int async_staleness;        /* --async K; -1: off */
  int local_sgd;              /* --local-sgd H; 0: off */
  char *compress;             /* NULL (none), "topk:0.01", "int8", "sign", "powersgd:2" */
  double bucket_mb;           /* 25 */
  int stages;                 /* hybrid: --stages (0: default 2) */
  int micro_batches;          /* pipeline / hybrid: 0: default 4 */
  gint64 max_steps;           /* --max-steps; 0: the recipe's epochs */
  /* A simulated cluster instead of MPI ranks: `twb simulate --mode train`
   * (virtual ranks in one process, on the cluster's virtual time), data
   * parallel only, up to 256 ranks, on this device and topology. */
  gboolean simulated;
  char *sim_device;           /* "h100" (default), "h200", "a100", "mi300x" */
  char *sim_topology;         /* "nvlink+ib" (default), "nvlink+roce", "pcie+eth", "shm+eth" */
} TwbClusterConfig;

void twb_cluster_config_init (TwbClusterConfig *c);
void twb_cluster_config_clear (TwbClusterConfig *c);
void twb_cluster_config_copy (TwbClusterConfig *dst, const TwbClusterConfig *src);
/* twb_dist_args_check on these settings (batch: the recipe's global batch). */
gboolean twb_cluster_config_check (const TwbClusterConfig *c, gint64 batch, GError **error);
/* program train MODEL --ranks N … --progress-json (only what differs from
 * twb train's defaults); simulated: program simulate MODEL --mode train
 * --ranks N --nodes A --devices-per-node B … --progress-json.  Free with
 * g_strfreev. */
char **twb_cluster_config_argv (const TwbClusterConfig *c, const char *program,
                                const char *model_path);
/* The run's name in the Runs list: "4 ranks, ring, top-k 1%".  Caller frees. */
char *twb_cluster_config_label (const TwbClusterConfig *c);

typedef void (*TwbClusterDone) (const TwbClusterConfig *config, gpointer user_data);

/* The dialog, not yet shown (gtk_window_present); batch: the recipe's, for
 * the check. */
GtkWidget *twb_cluster_dialog_new (GtkWindow *parent, const TwbClusterConfig *initial,
                                   gint64 batch, TwbClusterDone done, gpointer user_data);
/* For tests: a control by name ("ranks", "parallel", "sim-device", "sim-topology" (a
 * simulated cluster's), "algo", "update",
 * "staleness", "local-sgd", "compress", "topk", "powersgd", "bucket",
 * "stages", "micro-batches", "max-steps", "error", "command", "use"). */
GtkWidget *twb_cluster_dialog_get_control (GtkWidget *dialog, const char *name);

G_END_DECLS
