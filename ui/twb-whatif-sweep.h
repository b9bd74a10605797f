/* twb-whatif-sweep.h — the What if page's model: a sweep of data-parallel
 * configurations of one graph through the simulator's time mode
 * (engine/sim/step.h), computed as `twb simulate MODEL --sweep ranks=…`
 * computes it (app/twb-simulate.c), with that command line for it.
 * GLib only (no GTK): the page runs it on a worker thread (GTask) and the
 * tests call it directly.
 *
 *   TwbWhatifConfig c;
 *   twb_whatif_config_init (&c);
 *   twb_whatif_parse_ranks ("8, 64, 512", &c, &error);
 *   g_autoptr (TwbWhatifResult) r = twb_whatif_run (graph, "mlp", 64, &c);
 *   // r->rows: one TwbWhatifRow per rank count simulated; r->error: why
 *   // the sweep stopped before the end (the rows before it are kept)
 *   g_autofree char *cmd = twb_whatif_command_line (&c, "assets/models/mlp.json");
 */
#pragma once

#include "engine/graph.h"
#include "engine/sim/step.h"

G_BEGIN_DECLS

#define TWB_WHATIF_MAX_RANKS 32    /* rank counts in one sweep: a page's worth */

typedef struct
{
  int ranks[TWB_WHATIF_MAX_RANKS];
  int n_ranks;
  char topology[32];          /* a preset of tw_topo_cluster: "nvlink+ib", ... */
  int devices_per_node;       /* 8: the command line's default (fewer ranks: one node of them) */
  char device[32];            /* "h100", "h200", "a100", "mi300x" or "local" (calibrated) */
  tw_algo algo;               /* TW_ALGO_RING, _TREE, _PS, _HIER */
  double bucket_mb;
  int64_t batch;              /* global batch; 0: the recipe's batch × the ranks */
} TwbWhatifConfig;

/* h100, nvlink+ib, 8 devices a node, ring, 25 MB buckets, the recipe's
 * batch a rank, ranks 8, 64, 512, 1024 (twb simulate's defaults). */
void twb_whatif_config_init (TwbWhatifConfig *c);
/* "8, 64, 512" (commas or spaces) into c->ranks; FALSE (error naming the
 * item) on anything but 1 to TWB_WHATIF_MAX_RANKS counts from 1 to 2^20. */
gboolean twb_whatif_parse_ranks (const char *text, TwbWhatifConfig *c, GError **error);
/* "8,64,512"; caller frees. */
char *twb_whatif_ranks_text (const TwbWhatifConfig *c);
/* The `twb simulate` command that prints the same figures, model_path
 * quoted for a shell (NULL: "MODEL.json"); caller frees. */
char *twb_whatif_command_line (const TwbWhatifConfig *c, const char *model_path);
/* Whether the calibrated "local" profile exists (twb simulate --calibrate). */
gboolean twb_whatif_local_available (void);

typedef struct
{
  int ranks;
  int64_t batch;              /* the global batch of this configuration */
  tw_sim_dp_result r;
  double efficiency;          /* samples/s per rank against one rank's at the same shard */
  double comm_share;          /* comm_s / step_s */
  double memory;              /* bytes per device: parameters, gradients, Adam, activations */
  char *link;                 /* the busiest link's name, or NULL (one rank) */
} TwbWhatifRow;

typedef struct
{
  TwbWhatifConfig config;
  char *device_name;          /* the profile's name as the simulator gives it */
  GArray *rows;               /* TwbWhatifRow, in the sweep's order */
  char *error;                /* NULL, or the problem that stopped the sweep */
  char *note;                 /* NULL, or a remark (a local profile's fitted roofline) */
} TwbWhatifResult;

/* Runs every configuration of c on g (borrowed; only read, so a copy may
 * be handed to a worker thread).  model_name: the model's name (a local
 * profile's key); recipe_batch: the recipe's batch size.  Never NULL;
 * failures are in ->error.  Free with twb_whatif_result_free. */
TwbWhatifResult *twb_whatif_run (const tw_graph *g, const char *model_name,
                                 int64_t recipe_batch, const TwbWhatifConfig *c);
void twb_whatif_result_free (TwbWhatifResult *r);
/* The same sweep up to its row `row` (0-based), whose step's spans
 * (tw_sim_span, rank 0's: the ranks are identical) are appended to spans
 * (a trace of it: app/twb-simulate-trace.h).  The result holds the rows
 * up to that one. */
TwbWhatifResult *twb_whatif_run_row (const tw_graph *g, const char *model_name,
                                     int64_t recipe_batch, const TwbWhatifConfig *c, int row,
                                     GArray *spans);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (TwbWhatifResult, twb_whatif_result_free)

G_END_DECLS
