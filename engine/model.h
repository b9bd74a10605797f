/* model.h — a model: a graph plus its training recipe, and its JSON file.
 *
 * File format (JSON, "format": "twb-model", "version": 1):
 *
 *   {
 *     "format": "twb-model", "version": 1, "name": "mlp",
 *     "graph": {
 *       "nodes": [
 *         { "id": "x", "op": "input", "attrs": { "shape": [1, 28, 28], "dtype": "f32",
 *                                                "role": "data" }, "pos": [40, 120] },
 *         { "id": "y", "op": "input", "attrs": { "shape": [], "dtype": "i64", "role": "label" } },
 *         { "id": "flat", "op": "flatten", "inputs": ["x"] },
 *         { "id": "fc1", "op": "linear", "inputs": ["flat"], "attrs": { "out_features": 10 } },
 *         { "id": "loss", "op": "cross_entropy", "inputs": ["fc1", "y"] }
 *       ],
 *       "outputs": ["fc1"]
 *     },
 *     "training": {
 *       "loss": "loss", "batch_size": 64, "epochs": 1, "seed": 0,
 *       "dataset": "fashion-mnist",
 *       "optimizer": { "type": "sgd", "lr": 0.01, "momentum": 0.9, "nesterov": false,
 *                      "weight_decay": 0 },
 *       "schedule": { "type": "constant" }        // step: step_size, gamma;
 *                                                 // cosine: t_max, min_lr; warmup_steps on any
 *     }
 *   }
 *
 * A node may carry "share": "<other id>" to use that node's parameters.
 * An optional top-level "editor" object holds the graph editor's state
 * ("blocks": [{"name": ..., "nodes": [ids], "collapsed": true, "pos": [x, y]}]);
 * the engine keeps it verbatim (tw_model.editor) and does not interpret it.
 * Every member but format, version, graph and graph.nodes (and a node's id
 * and op) is optional; unknown members are errors.  Errors name the file and
 * the JSON path ("mlp.json: $.graph.nodes[3].op: expected a string, got an
 * integer"; syntax errors: "mlp.json: line 12, column 5: ...").  Loading
 * checks structure, types and the attributes of known ops against their
 * schema; unknown ops, references to missing nodes and shapes are left to
 * tw_graph_infer, so such a model still opens in the editor.  Saving writes
 * a temporary file and renames it.
 */
#pragma once

#include "engine/graph.h"

G_BEGIN_DECLS

#define TW_MODEL_ERROR (tw_model_error_quark ())
GQuark tw_model_error_quark (void);

typedef enum
{
  TW_MODEL_ERROR_PARSE,      /* not JSON */
  TW_MODEL_ERROR_FORMAT,     /* JSON, but not a valid twb-model */
  TW_MODEL_ERROR_VERSION,    /* a version this build does not read */
  TW_MODEL_ERROR_IO,
} tw_model_error;

#define TW_MODEL_FORMAT_VERSION 1

typedef enum
{
  TW_OPT_SGD,
  TW_OPT_ADAM,
  TW_OPT_ADAMW,
} tw_optimizer_type;

typedef enum
{
  TW_SCHED_CONSTANT,
  TW_SCHED_STEP,
  TW_SCHED_COSINE,
} tw_schedule_type;

typedef struct
{
  tw_optimizer_type type;
  double lr;
  double momentum;           /* sgd */
  gboolean nesterov;         /* sgd */
  double weight_decay;       /* sgd: L2 added to the gradient; adamw: decoupled */
  double beta1, beta2, eps;  /* adam, adamw */
} tw_optimizer_config;

typedef struct
{
  tw_schedule_type type;
  int64_t step_size;         /* step: every step_size steps, lr *= gamma */
  double gamma;
  int64_t t_max;             /* cosine: period in steps (0: the whole run) */
  double min_lr;
  int64_t warmup_steps;      /* linear warm-up from 0 to lr, before any schedule */
} tw_schedule_config;

typedef struct
{
  char *loss;                /* node id of the loss; NULL: the graph's first loss node */
  int64_t batch_size;
  int64_t epochs;
  guint64 seed;
  char *dataset;             /* "fashion-mnist", "spirals", a path, ... */
  double validation_split;   /* fraction of training data held out (0: none) */
  tw_optimizer_config optimizer;
  tw_schedule_config schedule;
} tw_recipe;

typedef struct
{
  char *name;
  tw_graph *graph;
  tw_recipe recipe;
  /* The optional top-level member "editor" (an object: the graph editor's
   * blocks and other view state), kept verbatim: loaded, saved and copied as
   * is, NULL when absent.  Owned by the model. */
  JsonNode *editor;
} tw_model;

/* Defaults: SGD lr 0.01 momentum 0.9, batch 64, 1 epoch, seed 0, constant schedule,
 * adam betas 0.9/0.999 eps 1e-8. */
void tw_recipe_init_defaults (tw_recipe *r);
void tw_recipe_clear (tw_recipe *r);
void tw_recipe_copy (tw_recipe *dst, const tw_recipe *src);
const char *tw_optimizer_type_name (tw_optimizer_type t);
gboolean tw_optimizer_type_from_name (const char *name, tw_optimizer_type *out);

tw_model *tw_model_new (const char *name);         /* empty graph, default recipe */
void tw_model_free (tw_model *m);

/* Load from a file or a string.  `filename` names the source in messages
 * (NULL: "<data>"); len -1: NUL-terminated.  Returns a new model the caller
 * frees with tw_model_free, or NULL with a TW_MODEL_ERROR.  A file without
 * "name" gives a NULL name. */
tw_model *tw_model_load (const char *path, GError **error);
tw_model *tw_model_load_from_data (const char *data, gssize len, const char *filename,
                                   GError **error);
/* Serialise; the caller frees the string. */
char *tw_model_to_data (const tw_model *m, gsize *len);
/* Atomic save: write path.tmp-XXXXXX, fsync, rename over path. */
gboolean tw_model_save (const tw_model *m, const char *path, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_model, tw_model_free)

G_END_DECLS
