/* onnx-read.h — ONNX files read safely, and tensors both ways.  GTK-free.
 *
 * The protobuf structures are protoc-c's from onnx/onnx.proto
 * ("onnx.pb-c.h": Onnx__ModelProto, Onnx__NodeProto, Onnx__TensorProto…).
 *
 *   g_autoptr (GError) error = NULL;
 *   Onnx__ModelProto *m = tw_onnx_read_model ("resnet18.onnx", &error);
 *   if (m == NULL)
 *     g_printerr ("%s\n", error->message);  // "resnet18.onnx: opset 9 is outside 11–17"
 *   ...
 *   onnx__model_proto__free_unpacked (m, NULL);
 *
 * What read_model refuses, each with the file's name and where in it:
 * not a ModelProto (protobuf-c's unpack fails, or the file is empty or
 * larger than TW_ONNX_MAX_FILE_BYTES), protobuf messages nested deeper than
 * TW_FILE_MAX_NESTING (64, the limit of every reader), a string field that
 * is not valid UTF-8, more messages than unpack within 64 MiB plus 8 times
 * the file's size (and the memory available: a few MB of empty attributes
 * or initializers unpacked into gigabytes), no graph, a default-domain
 * opset outside TW_ONNX_MIN_OPSET..TW_ONNX_MAX_OPSET, tensors with external
 * data (all of them listed; whether the file is there is said only for a
 * plain name in the model's folder, without following a link: a location
 * elsewhere is named "outside the model's folder" by its text alone),
 * tensors whose declared dims disagree with their data or exceed
 * TW_ONNX_MAX_TENSOR_ELEMS, subgraphs nested deeper than TW_ONNX_MAX_DEPTH,
 * and a value defined twice (two nodes writing one output, an output named
 * as a graph input or initializer, a graph input or an initializer declared
 * twice; an initializer also listed as an input is its default).  Control
 * flow (If, Loop, Scan) and unknown ops are the importer's to report (with
 * the other unsupported ops, all at once).
 */
#pragma once

#include "engine/tensor.h"
#include "onnx.pb-c.h"

#include <glib.h>

G_BEGIN_DECLS

#define TW_ONNX_MIN_OPSET 11
#define TW_ONNX_MAX_OPSET 17
#define TW_ONNX_MAX_FILE_BYTES ((gsize) 2 << 30)        /* protobuf's own 2 GiB limit */
#define TW_ONNX_MAX_TENSOR_ELEMS ((int64_t) 1 << 31)
#define TW_ONNX_MAX_DEPTH 8

#define TW_ONNX_ERROR (tw_onnx_error_quark ())
GQuark tw_onnx_error_quark (void);

typedef enum
{
  TW_ONNX_ERROR_READ,           /* the file cannot be read */
  TW_ONNX_ERROR_PARSE,          /* not a valid ModelProto / TensorProto */
  TW_ONNX_ERROR_OPSET,          /* opset outside the range */
  TW_ONNX_ERROR_EXTERNAL,       /* external data */
  TW_ONNX_ERROR_TENSOR,         /* a tensor's type, dims or data are wrong */
  TW_ONNX_ERROR_UNSUPPORTED,    /* ops, attributes or types twb lacks (importer) */
} tw_onnx_error;

/* Free with onnx__model_proto__free_unpacked (m, NULL). */
Onnx__ModelProto *tw_onnx_read_model (const char *path, GError **error);
/* The same from memory; filename names it in errors. */
Onnx__ModelProto *tw_onnx_read_model_from_data (const guint8 *data, gsize len,
                                                const char *filename, GError **error);
/* tw_onnx_read_model, but default-domain opsets 1..TW_ONNX_MAX_OPSET are
 * accepted (ONNX's own test cases of opsets 6–10): for the conformance
 * runner, whose importer refuses older forms of ops per node. */
Onnx__ModelProto *tw_onnx_read_model_any_opset (const char *path, GError **error);
/* The default domain's ("" or "ai.onnx") opset version, -1 when none. */
int64_t tw_onnx_model_opset (const Onnx__ModelProto *m);

/* A TensorProto's value as a new tensor: FLOAT → f32, DOUBLE → f64, INT32
 * / INT16 / INT8 / UINT8 / BOOL → i32 or u8 as the engine has them, INT64 →
 * i64; from raw_data (little-endian) or the typed fields.  A 0-d tensor is
 * a 0-d tensor.  what names it in errors ("initializer conv1.weight"). */
tw_tensor *tw_onnx_tensor_to_tw (const Onnx__TensorProto *t, const char *what, GError **error);
/* A file holding one serialized TensorProto (the test data's input_0.pb). */
tw_tensor *tw_onnx_read_tensor_file (const char *path, GError **error);
/* A tensor as a new TensorProto named name (raw_data); free with
 * tw_onnx_tensor_proto_free. */
Onnx__TensorProto *tw_onnx_tensor_from_tw (const tw_tensor *x, const char *name);
void tw_onnx_tensor_proto_free (Onnx__TensorProto *t);

/* A node's attribute by name, NULL when absent. */
const Onnx__AttributeProto *tw_onnx_attr (const Onnx__NodeProto *n, const char *name);
/* Typed reads with a default when absent; FALSE (and error naming the node
 * and attribute) when present with another type. */
gboolean tw_onnx_attr_int (const Onnx__NodeProto *n, const char *name, int64_t def, int64_t *out,
                           GError **error);
gboolean tw_onnx_attr_float (const Onnx__NodeProto *n, const char *name, float def, float *out,
                             GError **error);
/* ints: *out is g_new'ed (NULL and 0 when absent). */
gboolean tw_onnx_attr_ints (const Onnx__NodeProto *n, const char *name, int64_t **out, gsize *len,
                            GError **error);
/* The node's name for messages: its name, else "op_type #index". */
char *tw_onnx_node_label (const Onnx__NodeProto *n, gsize index);

G_END_DECLS
