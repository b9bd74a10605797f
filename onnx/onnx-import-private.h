/* onnx-import-private.h — what the importer's files share (onnx-import.c:
 * translations and the graph; onnx-import-layers.c: the layers;
 * onnx-import-fold.c: constant folding). */
#pragma once

#include "onnx/onnx-import.h"

G_BEGIN_DECLS

/* Folded shape values: the symbolic batch size, and a value that depends on
 * it in a way twb cannot express (batch * 2).  Far from any real size. */
#define TW_IMP_BATCH (G_MININT64 + 7)
#define TW_IMP_UNKNOWN (G_MININT64 + 8)
/* Folding makes small shape tensors; a bigger one (1 << 24 values, 64 MiB
 * of f32) is refused rather than allocated. */
#define TW_IMP_MAX_FOLDED (1 << 24)

typedef enum
{
  TW_IMP_DYN,      /* a twb node's output */
  TW_IMP_CONST,    /* an initializer or a folded value */
  TW_IMP_BAD,      /* produced by a node that could not be imported */
} tw_imp_kind;

typedef struct
{
  tw_imp_kind kind;
  char *ref;          /* TW_IMP_DYN: "id" or "id:k" */
  tw_tensor *c;       /* TW_IMP_CONST */
  char *init_name;    /* TW_IMP_CONST from an initializer: its name */
} tw_imp_val;

typedef struct
{
  const char *filename;
  int64_t opset;
  tw_graph *graph;
  GHashTable *vals;        /* ONNX value name → tw_imp_val */
  GHashTable *uses;        /* ONNX value name → number of consumers (+ graph outputs) */
  GHashTable *ids;         /* twb ids taken */
  GHashTable *id_next;     /* base id → the next suffix to try (guint64 *) */
  GHashTable *weights;     /* parameter name → tw_tensor */
  GHashTable *weight_scope; /* weight initializer name → the scope of the node that took it first */
  GHashTable *bias_free;   /* twb id of a linear made from MatMul, still without bias */
  GPtrArray *problems;     /* one line per node that cannot be imported */
  int64_t export_batch;    /* the ONNX input's static batch size, -1 when symbolic */
  gboolean fixed;          /* inputs of fixed shape (tw_onnx_import_options): no batch dim */
  /* The node being imported. */
  const Onnx__NodeProto *n;
  gsize index;
  gboolean failed;         /* a problem was reported for it */
} tw_imp;

/* One line for the current node in im->problems (further problems of the
 * same node join its line); sets im->failed. */
void tw_imp_problem (tw_imp *im, const char *fmt, ...) G_GNUC_PRINTF (2, 3);
/* A twb id not taken yet, base itself when free, else base_2, base_3, ...
 * ("node" for an empty base); taken from now on.  The caller frees it. */
char *tw_imp_unique_id (tw_imp *im, const char *base);
/* Input i of the current node (NULL when absent or empty). */
const tw_imp_val *tw_imp_input (tw_imp *im, gsize i);
/* Output k of the current node becomes the constant c (taken). */
void tw_imp_set_const (tw_imp *im, int k, tw_tensor *c);
/* Attribute reads; a wrong type is a problem (the default is returned). */
int64_t tw_imp_attr_int (tw_imp *im, const char *name, int64_t def);
gboolean tw_imp_attr_ints (tw_imp *im, const char *name, gsize want, int64_t d, int64_t *out,
                           gsize *len);
/* The inferred type of a dynamic value (batch symbolic); FALSE: a problem. */
gboolean tw_imp_dyn_info (tw_imp *im, const tw_imp_val *v, tw_tinfo *out);
/* axis in -rank..rank-1 as 0..rank-1; -1 (and a problem) outside. */
int tw_imp_norm_axis (tw_imp *im, int64_t axis, int rank);
/* The "axis" of Softmax, LogSoftmax and Hardmax (default -1 from opset 13,
 * 1 before, when only the last axis is a twb form), normalised; -1 after a
 * problem. */
int tw_imp_softmax_axis (tw_imp *im, const tw_tinfo *info);
/* A constant integer tensor's values; *out g_new'ed. */
gboolean tw_imp_const_ints (tw_imp *im, const tw_imp_val *v, const char *what, int64_t **out, int64_t *n);
/* A new constant of dtype shaped dims for what import computes (`what`
 * names it in the problem): NULL, with a problem, when a dim is the batch
 * (unknown at import), the rank is past TW_MAX_DIMS or it would hold more
 * than TW_IMP_MAX_FOLDED values.  Every constant import sizes from the
 * model's values or shapes is made here.  Uninitialised; the caller owns
 * it (tw_tensor_unref, or tw_imp_set_const takes it). */
tw_tensor *tw_imp_const_new (tw_imp *im, tw_dtype dtype, int ndim, const int64_t *dims,
                             const char *what);
/* A contiguous f32 copy. */
tw_tensor *tw_imp_as_f32 (const tw_tensor *t);
/* Shared by the translators (onnx-import.c, onnx-import-act.c). */
/* A node of op on input x, named from weight's scope when given (NULL: from
 * the ONNX node); attrs is taken. */
tw_node *tw_imp_emit1 (tw_imp *im, const tw_imp_val *weight, const char *op, tw_attrs *attrs,
                       const tw_imp_val *x);
/* A node of op on inputs (NULL-terminated references) with n_out outputs,
 * named from the ONNX node; its outputs become the node's (the last node
 * emitted for an ONNX node gives its value).  attrs is taken. */
tw_node *tw_imp_emitn (tw_imp *im, const char *op, tw_attrs *attrs, const char *const *inputs,
                       int n_out);
/* Whether output k of the current node is read by a node or is a graph output. */
gboolean tw_imp_is_used (tw_imp *im, gsize k);
/* t (taken) as the parameter "<node id>.<suffix>". */
void tw_imp_add_weight (tw_imp *im, const tw_node *node, const char *suffix, tw_tensor *t);
/* ONNX's [n] or [1, n] bias (or a scalar) times beta as f32 [n]; NULL (a
 * problem) for other shapes. */
tw_tensor *tw_imp_bias_vector (tw_imp *im, const tw_tensor *c, int64_t n, double beta);
/* Attributes other than known (NULL-terminated) are problems. */
void tw_imp_check_attrs (tw_imp *im, const char *const *known);
/* f as the shortest double that reads back as it ("0.2", not 0.20000000298). */
double tw_imp_short_double (float f);
float tw_imp_attr_float (tw_imp *im, const char *name, float def);
char *tw_imp_attr_string_dup (tw_imp *im, const char *name);
gboolean tw_imp_attr_string_is (tw_imp *im, const char *name, const char *want);
/* Input i as a dynamic value (a problem naming what otherwise). */
const tw_imp_val *tw_imp_dyn_input (tw_imp *im, gsize i, const char *what);
/* A value as a twb reference: a dynamic value's own, a constant's a
 * "constant" node (engine/ops/constant.c) made on first use, its values in
 * the weights as "<id>.value"; NULL (a problem reported) when the value
 * cannot be one (an integer beyond 2^24, a failed producer). */
const char *tw_imp_ref (tw_imp *im, const tw_imp_val *v);
/* The same for input i of the current node (missing: a problem naming what). */
const char *tw_imp_ref_input (tw_imp *im, gsize i, const char *what);
/* A one-element float constant's value. */
gboolean tw_imp_scalar_of (const tw_imp_val *v, double *out);
/* The translators in onnx-import-act.c. */
/* A translation for one ONNX op. */
typedef void (*tw_imp_fn) (tw_imp *im);
/* The translators of onnx-import-more.c (comparisons, reductions, the
 * ops ONNX's test cases need), consulted after onnx-import.c's own table;
 * NULL when op has none there. */
tw_imp_fn tw_imp_more_translator (const char *op);
/* The same for onnx-import-reduce.c (reductions, index and loss ops),
 * consulted after tw_imp_more_translator. */
tw_imp_fn tw_imp_reduce_translator (const char *op);

/* Axes of Unsqueeze / Squeeze / ReduceX: the attribute before opset 13, a
 * constant second input from 13 on; *n -1 when absent (*axes g_new'ed). */
gboolean tw_imp_axes_of (tw_imp *im, int64_t **axes, int64_t *n);

void tw_imp_cast (tw_imp *im);
/* Gemm of computed values (fixed inputs): matmul of the transposed
 * operands, scaled, plus beta C. */
void tw_imp_gemm_values (tw_imp *im);
void tw_imp_split (tw_imp *im);
void tw_imp_batch_norm_values (tw_imp *im, double eps);
gboolean tw_imp_pool_pads (tw_imp *im, int nsp, const int64_t hw[2], const int64_t k[2],
                           const int64_t s[2], const int64_t d[2], gboolean ceil_mode, int64_t b[2],
                           int64_t e[2]);
/* Gather: rows of a constant 2-D table by computed indices (embedding), or,
 * with fixed inputs, gather_elements of indices broadcast along the axis. */
void tw_imp_gather (tw_imp *im);
/* x (of fixed shape info) reshaped to the whole shape dims[nd] (one reshape
 * when dim 0 stays, else unsqueeze → reshape → squeeze); the last node's
 * id, or NULL with a problem. */
const char *tw_imp_reshape_full (tw_imp *im, const tw_imp_val *x, const tw_tinfo *info, int nd,
                                 const int64_t *dims);
void tw_imp_expand (tw_imp *im);
void tw_imp_slice (tw_imp *im);
void tw_imp_squeeze (tw_imp *im);     /* Squeeze and Unsqueeze of computed values */
/* The layers' translators (onnx-import-layers.c). */
void tw_imp_conv (tw_imp *im);
void tw_imp_gemm (tw_imp *im);
void tw_imp_matmul (tw_imp *im);
void tw_imp_batch_norm (tw_imp *im);
void tw_imp_pool (tw_imp *im, gboolean max);
void tw_imp_leaky_relu (tw_imp *im);
void tw_imp_clip (tw_imp *im);
void tw_imp_hard_sigmoid (tw_imp *im);
void tw_imp_pad (tw_imp *im);
void tw_imp_resize (tw_imp *im);
/* Fold the current node when its inputs are constants (or Shape of a
 * dynamic value): FALSE when the op is not one folding knows. */
gboolean tw_imp_fold (tw_imp *im);
/* The loss tw_onnx_add_loss added, right of the output it reads, and its
 * label input below that output (onnx-import-train.c), for a model that
 * has positions already.  Nothing without a loss. */
void tw_imp_place_loss (tw_graph *g);
/* The loss node and its label input (NULL when it has none of role
 * "label"), or FALSE without a loss. */
gboolean tw_imp_loss_nodes (const tw_graph *g, tw_node **loss, tw_node **label);

G_END_DECLS
