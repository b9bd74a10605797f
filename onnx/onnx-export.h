/* onnx-export.h — a twb model's inference graph as an ONNX file.  GTK-free.
 *
 * What is written: the nodes the prediction outputs depend on, in
 * topological order.  Graph inputs are the model's inputs with role "data"
 * (the batch dimension "N" with dynamic_batch, else the fixed batch);
 * labels, losses and everything only they need are left out; dropout (an
 * identity at inference) is dropped, or becomes an Identity where it is a
 * prediction output.  Each twb node becomes one ONNX node named by the twb
 * id whose output 0 is the value "ID" (output k: "ID:k"); where a twb op
 * takes several ONNX nodes (gelu, layer_norm before opset 17, linear on
 * inputs of rank other than 2), the helpers are named "ID/what" and the last
 * one carries the id.  Initializers are the parameters under their
 * state_dict names ("fc1.weight"; a shared scope's once); the constants the
 * mapping needs are "ID/what".
 *
 *   tw_onnx_export_options opt = { .opset = 17, .dynamic_batch = TRUE };
 *   if (!tw_onnx_export (model, params, &opt, "mlp.onnx", &error))
 *     g_printerr ("%s\n", error->message);
 *
 * Refused, with nothing written: an opset outside 13..17
 * (TW_ONNX_ERROR_OPSET), shape errors in the graph, and nodes that have no
 * ONNX form here — all of them at once, one line each
 * ("node loss (cross_entropy): a loss is training-only ...",
 * TW_ONNX_ERROR_UNSUPPORTED).  The file is saved atomically
 * (engine/fileutil.h), so a failure leaves any previous file as it was.
 */
#pragma once

#include "engine/model.h"
#include "engine/params.h"

#include <glib.h>

G_BEGIN_DECLS

#define TW_ONNX_EXPORT_MIN_OPSET 13
#define TW_ONNX_EXPORT_MAX_OPSET 17

typedef struct
{
  int opset;              /* TW_ONNX_EXPORT_MIN_OPSET..MAX_OPSET; 0: the max */
  gboolean dynamic_batch; /* the batch dimension is the symbol "N" */
  int64_t batch;          /* fixed batch size when not dynamic; <= 0: 1 */
} tw_onnx_export_options;

/* The model's parameters initialised as a run of it would start them
 * (tw_params_sync_graph with the recipe's seed), then, when weights is not
 * NULL, every one of them loaded from that safetensors file (a twb weights
 * file, a checkpoint or a PyTorch state_dict).  Returns a new store (free
 * with tw_params_free), or NULL with an error naming the file or node. */
tw_params *tw_onnx_export_params (const tw_model *m, const char *weights, GError **error);

/* The ModelProto, serialised.  params holds every parameter the exported
 * nodes use (borrowed).  Returns new bytes (g_bytes_unref) or NULL with an
 * error. */
GBytes *tw_onnx_export_to_bytes (const tw_model *m, const tw_params *params,
                                 const tw_onnx_export_options *opt, GError **error);
/* The same, saved atomically at path. */
gboolean tw_onnx_export (const tw_model *m, const tw_params *params,
                         const tw_onnx_export_options *opt, const char *path, GError **error);

/* Why op (a registry name) has no ONNX form, or NULL when it has one:
 * the one list of the ops the exporter refuses whatever their attributes
 * (a node of another op may still be refused for its attributes, its
 * shapes or the opset; the error says so). */
const char *tw_onnx_export_refusal (const char *op);

G_END_DECLS
