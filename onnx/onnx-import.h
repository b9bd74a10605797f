/* onnx-import.h — an ONNX graph as a twb model and its weights.  GTK-free.
 *
 *   g_autoptr (GError) error = NULL;
 *   GHashTable *weights = NULL;       // name → tw_tensor *, as a state_dict
 *   tw_model *m = tw_onnx_import ("resnet18.onnx", &weights, &error);
 *   if (m == NULL)
 *     g_printerr ("%s\n", error->message);
 *     // "resnet18.onnx: 2 nodes cannot be imported: 'Loop_12' (Loop, opset 13):
 *     //  control flow; 'topk' (TopK, opset 13): no twb op"
 *
 * Each ONNX node maps through the op registry (tw_op_def.onnx_name) or a
 * translation where attributes or layouts differ: Gemm and MatMul (+ Add)
 * with initializer weights → linear (weight [out, in] as PyTorch lays it),
 * Conv → conv2d, MaxPool / AveragePool / GlobalAveragePool, BatchNormalization
 * (scale, bias, mean, var → weight, bias, running_mean, running_var),
 * Flatten, Reshape with a constant shape, Softmax / LogSoftmax, Transpose,
 * Concat, Dropout, scalar Add / Sub / Mul / Div → add_scalar / scale.
 * Constant, Shape, Gather, Unsqueeze, Squeeze, Concat, Cast, Slice,
 * ConstantOfShape, Identity and integer arithmetic on constants are folded
 * at import (Shape from the shapes inferred so far, the batch symbolic), so
 * the chains exporters emit before a Reshape disappear.
 *
 * Node ids come from the ONNX names: a node with parameters takes the scope
 * of its weight initializer ("layer1.0.conv1.weight" → "layer1.0.conv1"),
 * so that the parameter names twb derives (engine/graph.h) are PyTorch's;
 * others take their module path ("/layer1/layer1.0/relu/Relu" →
 * "layer1.0.relu").  Ids are unique.  The first graph input becomes an
 * "input" node with role "data" whose shape drops the batch dimension; the
 * graph outputs become the model's outputs.  The modules the ids name
 * ("layer1", "layer1.0") become editor blocks, folded so that the model
 * reads on the canvas, and the nodes get the editor's layout for them
 * (engine/layout.h, tw_layout_fold).
 *
 * Every node that cannot be imported (unknown op, attribute, dtype, a layout
 * twb lacks, control flow) is listed in one TW_ONNX_ERROR_UNSUPPORTED error
 * with its name, op and opset; then NULL is returned and *weights is left
 * untouched.  Errors of the reader (onnx/onnx-read.h) and of shape inference
 * of the imported graph are returned as they are.
 *
 * Ownership: the model is the caller's (tw_model_free); *weights receives a
 * new table (g_hash_table_unref) of contiguous f32 tensors named as
 * tw_node_param_name names them.  weights may be NULL.
 */
#pragma once

#include "engine/layout.h"
#include "engine/model.h"
#include "onnx/onnx-read.h"

G_BEGIN_DECLS

tw_model *tw_onnx_import (const char *path, GHashTable **weights, GError **error);

/* What a training run needs, added after import (onnx-import-train.c). */
typedef enum
{
  TW_ONNX_LOSS_NONE,            /* the inference graph only (the default) */
  TW_ONNX_LOSS_AUTO,            /* cross-entropy when the first output is [N, C], else none */
  TW_ONNX_LOSS_CROSS_ENTROPY,   /* a label input (i64 class indices) + cross_entropy */
  TW_ONNX_LOSS_MSE,             /* a label input shaped like the output + mse_loss */
} tw_onnx_loss;

typedef struct
{
  /* Every graph input (not an initializer) becomes an "input" node, in
   * order, of fixed shape ("batch": false, the ONNX dims as they are): the
   * first has role "data", the others role "other".  For graphs whose
   * inputs share no batch dimension (ONNX's node test cases).  Default
   * FALSE: the first input is the data batch (its dim 0 the batch). */
  gboolean fixed_inputs;
  /* Accept default-domain opsets below TW_ONNX_MIN_OPSET (ONNX's test
   * cases of opset 6–10): nodes whose older form differs from the one the
   * importer reads are then refused per node, as unsupported.  The
   * conformance runner only; users' files keep the 11–17 check. */
  gboolean any_opset;
  tw_onnx_loss loss;
  /* The canvas the layout is for; NULL: TW_LAYOUT_VIEW_DEFAULT. */
  const tw_layout_view *view;
} tw_onnx_import_options;

/* tw_onnx_import with options (NULL: the defaults, all zero). */
tw_model *tw_onnx_import_with (const char *path, const tw_onnx_import_options *opts,
                               GHashTable **weights, GError **error);
tw_model *tw_onnx_import_model_with (const Onnx__ModelProto *proto, const char *filename,
                                     const tw_onnx_import_options *opts, GHashTable **weights,
                                     GError **error);
/* Adds a label input and a loss node to an imported model (loss as in
 * tw_onnx_import_options); TW_ONNX_LOSS_AUTO without a [N, C] output and
 * TW_ONNX_LOSS_NONE leave it as it is.  FALSE with an error naming the
 * output when the model cannot take that loss. */
gboolean tw_onnx_add_loss (tw_model *m, tw_onnx_loss loss, GError **error);
/* The names "none", "auto", "cross-entropy", "mse"; FALSE if unknown. */
gboolean tw_onnx_loss_from_name (const char *name, tw_onnx_loss *out);
/* The same from a parsed model; filename names it in errors and gives the
 * model's name (its base name without ".onnx"). */
tw_model *tw_onnx_import_model (const Onnx__ModelProto *proto, const char *filename,
                                GHashTable **weights, GError **error);

/* The safetensors file beside a model file: "out/resnet.json" →
 * "out/resnet.safetensors".  Caller frees. */
char *tw_onnx_weights_path_for (const char *model_path);

G_END_DECLS
