/* onnx-export-private.h — what onnx-export.c shares with onnx-export-ops.c:
 * the export context and its node, constant and value helpers. */
#pragma once

#include "engine/graph.h"
#include "engine/params.h"
#include "onnx.pb-c.h"

#include <glib.h>

/* Attributes of one ONNX node: the most any mapping sets is 5 (Conv). */
#define EX_MAX_NODE_ATTRS 8

typedef struct
{
  const tw_graph *g;
  const tw_params *params;
  int opset;
  GPtrArray *blocks;         /* g_free'd at the end */
  GPtrArray *held;           /* tw_tensor refs whose data initializers point into */
  GPtrArray *nodes;          /* Onnx__NodeProto *, in order */
  GPtrArray *inits;          /* Onnx__TensorProto * */
  GHashTable *init_names;    /* initializer names added (borrowed keys in blocks) */
  GHashTable *alias;         /* value name → value name it stands for (dropped nodes) */
  GHashTable *output_values; /* value names that are graph outputs */
} tw_ex_ctx;

/* Blocks and strings kept until the end of the export. */
void *tw_ex_alloc (tw_ex_ctx *ex, gsize size);
char *tw_ex_strdup (tw_ex_ctx *ex, const char *s);
char *tw_ex_printf (tw_ex_ctx *ex, const char *fmt, ...) G_GNUC_PRINTF (2, 3);
int32_t tw_ex_onnx_dtype (tw_dtype d);

/* Values: input i of n, its type, output k of n ("ID", "ID:k"). */
const char *tw_ex_input (tw_ex_ctx *ex, const tw_node *n, int i);
const tw_tinfo *tw_ex_input_info (tw_ex_ctx *ex, const tw_node *n, int i);
const char *tw_ex_output (tw_ex_ctx *ex, const tw_node *n, int k);

/* Constants (initializers) copied into the arena; return their names. */
const char *tw_ex_const (tw_ex_ctx *ex, const char *name, tw_dtype dtype, int ndim,
                         const int64_t *dims, const void *data);
const char *tw_ex_const_i64 (tw_ex_ctx *ex, const char *name, int n, const int64_t *v);
const char *tw_ex_const_scalar (tw_ex_ctx *ex, const char *name, tw_dtype dtype, double v);

/* Nodes: inputs and outputs NULL-terminated ("" for an omitted optional
 * input); ex_node1's one output is named like the node. */
Onnx__NodeProto *tw_ex_node (tw_ex_ctx *ex, const char *op_type, const char *name,
                             const char *const *inputs, const char *const *outputs);
Onnx__NodeProto *tw_ex_node1 (tw_ex_ctx *ex, const char *op_type, const char *name,
                              const char *const *inputs);
void tw_ex_attr_int (tw_ex_ctx *ex, Onnx__NodeProto *n, const char *name, int64_t v);
void tw_ex_attr_float (tw_ex_ctx *ex, Onnx__NodeProto *n, const char *name, double v);
void tw_ex_attr_ints (tw_ex_ctx *ex, Onnx__NodeProto *n, const char *name, int len,
                      const int64_t *v);
gboolean tw_ex_is (const tw_node *n, const char *op);

/* onnx-export-ops.c: the ops of this file's forms.  TRUE when n is one of
 * them (*ok then says whether it was written; FALSE with a line in
 * problems). */
gboolean tw_ex_emit_more (tw_ex_ctx *ex, const tw_node *n, GString *problems, gboolean *ok);
