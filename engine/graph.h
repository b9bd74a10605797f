/* graph.h — the graph IR shared by the model file, the editor, the eager
 * executor and the compiler.
 *
 * A graph is a list of nodes.  Each node has a stable id (its name in the
 * model file: "fc1"), an op, typed attributes, and inputs that name other
 * nodes' outputs: "fc1" is output 0 of node fc1, "split1:2" its output 2.
 * Source nodes (op "input") are fed by the executor: the data ("role":
 * "data") and the labels ("role": "label").
 *
 * Parameters are named "<scope>.<suffix>" as in PyTorch's state_dict, where
 * the scope is the node id, or the id given in the node's "share" field: two
 * nodes sharing a scope use one parameter set (a shared layer).
 *
 * Functional building:
 *
 *   tw_graph *g = tw_graph_new ();
 *   tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]) { 784 }, "data");
 *   tw_graph_add (g, "fc1", "linear", attrs, "x", NULL);   // inputs: NULL-terminated
 *   tw_graph_add (g, "act1", "relu", NULL, "fc1", NULL);
 *   tw_graph_set_outputs (g, (const char *[]) { "act1", NULL });
 *   tw_graph_infer (g);                  // every error, per node
 *
 * Ownership: the graph owns its nodes, their attrs and diagnostics; pointers
 * into it stay valid until the node is removed or the graph freed.
 */
#pragma once

#include "engine/op.h"

G_BEGIN_DECLS

#define TW_GRAPH_ERROR (tw_graph_error_quark ())
GQuark tw_graph_error_quark (void);

typedef enum
{
  TW_GRAPH_ERROR_DUPLICATE_ID,
  TW_GRAPH_ERROR_UNKNOWN_NODE,
  TW_GRAPH_ERROR_UNKNOWN_OP,
  TW_GRAPH_ERROR_CYCLE,
  TW_GRAPH_ERROR_INVALID,
} tw_graph_error;

typedef struct tw_graph tw_graph;

/* A reference to one output of a node. */
typedef struct
{
  int node;      /* index in the graph's node array */
  int output;
} tw_port;

typedef struct
{
  char *id;                       /* stable, unique; the node's name */
  char *op_name;
  const tw_op_def *op;            /* NULL when op_name is unknown (an error) */
  tw_attrs *attrs;                /* as written (defaults not filled in) */
  int n_inputs;
  char **inputs;                  /* references as written: "fc1", "split:1" */
  char *share;                    /* parameter scope shared with another node, or NULL */
  gboolean has_pos;
  double x, y;                    /* editor position */

  /* Filled by tw_graph_infer (): */
  tw_port *in_ports;              /* resolved inputs (node -1 if unresolved) */
  tw_attrs *resolved;             /* attrs with defaults; NULL if invalid */
  int n_outputs;
  tw_tinfo *out_info;             /* [n_outputs] */
  int n_params;
  tw_param_spec params[TW_MAX_PARAMS];
  char *error;                    /* this node's own problem, or NULL */
  gboolean valid;                 /* inferred without error, upstream included */
  tw_cost cost;                   /* per sample where the batch is symbolic */
} tw_node;

/* One diagnostic of shape inference. */
typedef struct
{
  const char *node_id;            /* lives in the graph */
  char *message;
} tw_diag;

tw_graph *tw_graph_new (void);
tw_graph *tw_graph_copy (const tw_graph *g);
void tw_graph_free (tw_graph *g);

int tw_graph_n_nodes (const tw_graph *g);
tw_node *tw_graph_node (const tw_graph *g, int i);
tw_node *tw_graph_find (const tw_graph *g, const char *id);
int tw_graph_index_of (const tw_graph *g, const char *id);      /* -1 if absent */

/* Adds a node; inputs is a NULL-terminated array of references (may be NULL).
 * The op need not exist (tw_graph_infer reports it).  Fails only on a
 * duplicate or empty id. */
tw_node *tw_graph_add_node (tw_graph *g, const char *id, const char *op_name,
                            const tw_attrs *attrs, const char *const *inputs, GError **error);
/* Varargs form: inputs follow attrs, NULL-terminated.  Aborts on duplicate id
 * (programmer error); for builders in code and tests. */
tw_node *tw_graph_add (tw_graph *g, const char *id, const char *op_name, const tw_attrs *attrs,
                       ...) G_GNUC_NULL_TERMINATED;
/* An "input" node: shape excludes the batch dimension. */
tw_node *tw_graph_add_input (tw_graph *g, const char *id, tw_dtype dtype, int ndim,
                             const int64_t *shape, const char *role);
gboolean tw_graph_remove_node (tw_graph *g, const char *id);
gboolean tw_graph_rename_node (tw_graph *g, const char *old_id, const char *new_id,
                               GError **error);   /* updates references */
void tw_graph_set_input_ref (tw_graph *g, tw_node *n, int i, const char *ref);
void tw_graph_set_share (tw_graph *g, tw_node *n, const char *scope);
void tw_graph_set_pos (tw_graph *g, tw_node *n, double x, double y);

/* The model's outputs (its predictions, "logits") are the references
 * marked with tw_graph_set_outputs: the model file's "outputs", what the
 * editor marks.  When none is marked, they are the predictions the losses
 * score: input 0 of each loss node (cross_entropy's logits, mse_loss's
 * pred), in node order, once each; so a model drawn without marks predicts
 * what it trains, and training, twb train / info / predict, export and the
 * editor all agree.
 *
 * set_outputs keeps a NULL-terminated copy (NULL or empty: none marked).
 * tw_graph_marked_outputs: the marked references; tw_graph_outputs: the
 * outputs as described above.  Both borrowed: valid until the graph next
 * changes (tw_graph_outputs keeps its array while the result is the same). */
void tw_graph_set_outputs (tw_graph *g, const char *const *refs);
const char *const *tw_graph_marked_outputs (const tw_graph *g);
const char *const *tw_graph_outputs (const tw_graph *g);
/* TRUE when no output is marked: tw_graph_outputs follows the losses. */
gboolean tw_graph_outputs_are_default (const tw_graph *g);
/* What accuracy and the class report score: the prediction the training
 * loss (tw_graph_find_loss) takes, whatever else is marked; without a loss,
 * the first output.  NULL when there is neither.  Borrowed. */
const char *tw_graph_prediction (const tw_graph *g);

/* Parse "node:k" into id and output index.  Returns FALSE if malformed. */
gboolean tw_ref_parse (const char *ref, char **id, int *output);
/* Resolve a reference against the graph; node -1 if it names no node. */
tw_port tw_graph_resolve (const tw_graph *g, const char *ref);

/* Shape inference over the whole graph, with the batch dimension symbolic
 * (TW_DIM_N) unless batch > 0.  Every node gets out_info, params, cost and
 * its own error; nodes downstream of an error are marked invalid without a
 * message of their own.  Returns the number of errors. */
int tw_graph_infer (tw_graph *g);
int tw_graph_infer_batch (tw_graph *g, int64_t batch);
/* Diagnostics of the last inference, in node order.  Borrowed. */
const GArray *tw_graph_diagnostics (const tw_graph *g);   /* of tw_diag */
/* All errors as one message ("node fc2: ...\nnode loss: ..."); caller frees. */
char *tw_graph_errors_to_string (const tw_graph *g);

/* Node indices in a topological order (inputs first); FALSE on a cycle, with
 * the ids of the nodes on it in the error.  Caller frees the array. */
gboolean tw_graph_topo_order (const tw_graph *g, GArray **order, GError **error);
/* Sets marked[i] for node and every node it reads from, directly or not
 * (its resolved inputs: call after tw_graph_infer); nodes already marked
 * are not walked again, so several roots share one array [n_nodes].  A
 * walk with its own stack: any depth of graph, linear in the nodes and
 * edges.  node < 0 marks nothing. */
void tw_graph_mark_upstream (const tw_graph *g, int node, gboolean *marked);

/* What every command and executor needs beyond shape inference, checked
 * after tw_graph_infer so that a model refused nowhere is runnable
 * everywhere: an input with role "data", a training loss (if any) whose
 * prediction input is connected, and at least one output (tw_graph_outputs).
 * FALSE with a TW_GRAPH_ERROR_INVALID naming what is missing (and the node). */
gboolean tw_graph_check_runnable (const tw_graph *g, GError **error);

/* Roles. */
tw_node *tw_graph_find_source (const tw_graph *g, const char *role);   /* "data", "label" */
/* The loss node training minimises: the one named by tw_graph_set_loss when
 * it is a loss node (the model file's "training.loss", checked at load),
 * else the first TW_OP_LOSS node.  A rename follows the named node. */
tw_node *tw_graph_find_loss (const tw_graph *g);
void tw_graph_set_loss (tw_graph *g, const char *id);     /* NULL: the first loss */
const char *tw_graph_get_loss (const tw_graph *g);       /* borrowed, may be NULL */

/* Totals after inference (per sample where the batch is symbolic). */
int64_t tw_graph_param_count (const tw_graph *g);  /* shared scopes counted once */
double tw_graph_flops (const tw_graph *g);

/* The nodes owning any of the parameters names ("fc1.weight", as
 * tw_node_param_name makes them: a node sharing another's scope owns the
 * same names), in graph order: their ids, borrowed from g (free the array
 * only, g_ptr_array_unref).  *n_found (may be NULL) gets how many distinct
 * names are parameters of g.  The nodes' parameters are tw_graph_infer's. */
GPtrArray *tw_graph_param_nodes (const tw_graph *g, const char *const *names, guint *n_found);

/* Parameter name of a node's k-th parameter: "<scope>.<suffix>"; caller frees. */
char *tw_node_param_name (const tw_node *n, int k);
const char *tw_node_scope (const tw_node *n);

/* Sequential building: each layer takes the previous one's output.
 * layers[i] gives id, op and attrs; the first layer's input is `input`. */
typedef struct
{
  const char *id;
  const char *op;
  const tw_attrs *attrs;
} tw_layer;
gboolean tw_graph_add_sequential (tw_graph *g, const char *input, const tw_layer *layers,
                                  int n_layers, GError **error);

/* ---- For the editor -------------------------------------------------------
 *
 * Incremental shape inference: after an edit, re-infer only the nodes whose
 * id is in changed_ids (NULL-terminated; include removed and renamed-away
 * ids, and the new ids of added or renamed nodes) and what lies downstream
 * of them, reusing the results of the previous inference for the rest.  A
 * re-inferred node whose outputs come out as before stops the propagation.
 * The results (every node's inferred fields, the diagnostics and their order)
 * are those of tw_graph_infer (g), which the previous inference of g must
 * also have been (batch symbolic); on a cycle it falls back to it.  Returns
 * the number of errors. */
int tw_graph_infer_from (tw_graph *g, const char *const *changed_ids);

/* Like tw_graph_add_node, but the node goes to position index (0..n; other
 * nodes move up by one).  Indices into the graph taken before are stale. */
tw_node *tw_graph_insert_node (tw_graph *g, int index, const char *id, const char *op_name,
                               const tw_attrs *attrs, const char *const *inputs, GError **error);
/* Remove the node at index (no lookup by id). */
void tw_graph_remove_node_at (tw_graph *g, int index);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_graph, tw_graph_free)

G_END_DECLS
