/* op.h — the op registry.
 *
 * Every op is declared once, as a tw_op_def: its attribute schema, shape
 * inference, parameters, CPU forward kernel, backward rule, cost and ONNX
 * name.  The graph IR, the eager executor, the compiler, the editor's palette
 * and inspector, the profiler and the simulator all read the same table.
 *
 * Conventions shared by every op:
 *
 * - Inputs are the data inputs followed by the op's parameters, in the order
 *   its params() callback lists them (linear: x, weight, bias).  Parameters
 *   follow PyTorch's state_dict layout (linear.weight is [out, in]).
 * - forward() receives contiguous inputs and contiguous, already allocated
 *   outputs whose shapes come from infer() (so the compiler can place them in
 *   an arena).  It writes every element of every output.
 * - backward() is written in terms of other registered ops through a
 *   tw_emit: in eager mode the emitter runs them at once, in compiled mode
 *   it records them into the backward graph.  Ops used only by backward
 *   rules (relu_grad, conv2d_grad_input, ...) are registered with
 *   TW_OP_INTERNAL so the palette hides them.
 * - Shapes in infer() may hold TW_DIM_N, the symbolic batch size, in any
 *   position; concrete executors pass concrete shapes.
 *
 * Example (see engine/ops/ for real ones):
 *
 *   static const tw_attr_spec relu_attrs[] = { { NULL } };
 *   const tw_op_def tw_op_relu = {
 *     .name = "relu", .category = "Activation", .min_inputs = 1, .max_inputs = 1,
 *     .n_outputs = 1, .attrs = relu_attrs, .infer = tw_infer_same_as_input0,
 *     .forward = relu_forward, .backward = relu_backward, .cost = relu_cost,
 *     .onnx_name = "Relu", .flags = TW_OP_ELEMENTWISE,
 *   };
 */
#pragma once

#include "engine/attrs.h"
#include "engine/tensor.h"

#include <glib.h>

G_BEGIN_DECLS

#define TW_OP_ERROR (tw_op_error_quark ())
GQuark tw_op_error_quark (void);

typedef enum
{
  TW_OP_ERROR_SHAPE,        /* inputs whose shapes do not fit the op */
  TW_OP_ERROR_ATTR,         /* missing, unknown or invalid attribute */
  TW_OP_ERROR_ARITY,        /* wrong number of inputs */
  TW_OP_ERROR_DTYPE,
  TW_OP_ERROR_UNKNOWN_OP,
  TW_OP_ERROR_NUMERIC,      /* NaN / Inf where the op must refuse them */
  TW_OP_ERROR_UNSUPPORTED,  /* e.g. no backward for this op */
} tw_op_error;

/* The symbolic batch dimension, "N" on the canvas. */
#define TW_DIM_N ((int64_t) -1)

#define TW_MAX_INPUTS 16
#define TW_MAX_OUTPUTS 16
#define TW_MAX_PARAMS 8

/* Type and shape of a value. */
typedef struct
{
  tw_dtype dtype;
  int ndim;
  int64_t dims[TW_MAX_DIMS];
} tw_tinfo;

void tw_tinfo_set (tw_tinfo *t, tw_dtype dtype, int ndim, const int64_t *dims);
void tw_tinfo_from_tensor (tw_tinfo *t, const tw_tensor *x);
gboolean tw_tinfo_equal (const tw_tinfo *a, const tw_tinfo *b);
char *tw_tinfo_to_string (const tw_tinfo *t);        /* "f32[N, 784]"; caller frees */
/* Product of dims; a symbolic dim counts as 1 (*symbolic set when present).
 * Saturates at G_MAXINT64 for shapes that are not representable. */
int64_t tw_tinfo_numel (const tw_tinfo *t, gboolean *symbolic);
/* Bytes of t with TW_DIM_N taken as batch (1 when batch <= 0): FALSE when a
 * dim is negative or the shape is not representable (tw_shape_nbytes_checked).
 * nbytes may be NULL. */
gboolean tw_tinfo_nbytes (const tw_tinfo *t, int64_t batch, size_t *nbytes);

typedef enum
{
  TW_INIT_ZEROS,
  TW_INIT_ONES,
  TW_INIT_HE_NORMAL,          /* N(0, 2/fan_in) */
  TW_INIT_HE_UNIFORM,         /* U(-sqrt(6/fan_in), +); */
  TW_INIT_XAVIER_UNIFORM,     /* U(-sqrt(6/(fan_in+fan_out)), +) */
  TW_INIT_XAVIER_NORMAL,
  TW_INIT_UNIFORM_FAN_IN,     /* PyTorch's nn.Linear/Conv default: U(-1/sqrt(fan_in), +) for bias,
                               * kaiming_uniform(a=sqrt(5)) for weight is the same bound */
  TW_INIT_NORMAL,             /* N(0, 1) (embedding) */
} tw_init;

/* One parameter (or buffer) of an op. */
typedef struct
{
  const char *suffix;         /* "weight", "bias", "running_mean" */
  tw_tinfo info;              /* concrete shape: parameters never hold TW_DIM_N */
  tw_init init;
  int64_t fan_in, fan_out;
  gboolean trainable;         /* FALSE for buffers (batch-norm running stats) */
} tw_param_spec;

/* Cost of one execution, for the profiler, the simulator and `twb info`. */
typedef struct
{
  double flops;
  double bytes_read;
  double bytes_written;
} tw_cost;

typedef struct tw_workspace tw_workspace;
typedef struct tw_device tw_device;

/* What kernels see of the run they belong to. */
typedef struct
{
  gboolean training;          /* dropout and batch-norm behave differently */
  guint64 seed;               /* the run's seed */
  guint64 step;               /* training step, for dropout masks */
  guint64 node_key;           /* stable hash of the node's id (tw_node_key) */
  int num_threads;
  gpointer exec_data;         /* the executor's own context (compiled update kernels) */
  tw_workspace *ws;           /* scratch memory the executor supplies (NULL: the thread's own) */
  const tw_device *device;    /* where the kernel runs (NULL: the CPU) */
} tw_kctx;

/* Scratch memory for a kernel: kernels never allocate, they take what they
 * need for one run from the executor's workspace (64-byte aligned, valid
 * until the kernel returns; uninitialised).  Call it on the kernel's own
 * thread, before any parallel region (size per-thread parts by the team).
 * ctx may be NULL in helpers deep inside a kernel: the workspace of the
 * kernel running on this thread is used.
 *
 * A workspace starts empty and grows to the largest single kernel's need:
 * after the first step of a static program it never allocates again. */
void *tw_scratch (const tw_kctx *ctx, size_t nbytes);
/* For scratch whose size the user's shapes set beyond the kernel's own
 * tensors (im2col columns): NULL instead of aborting, also when a large
 * block exceeds tw_memory_available (engine/memory.h); the kernel then
 * fails with an error naming the bytes.  tw_scratch aborts when memory runs
 * out: use it only for needs bounded by the kernel's inputs and outputs. */
void *tw_scratch_try (const tw_kctx *ctx, size_t nbytes);
tw_workspace *tw_workspace_new (const tw_device *dev);
void tw_workspace_free (tw_workspace *ws);
/* Bytes held, and how many times it had to grow. */
size_t tw_workspace_size (const tw_workspace *ws);
guint tw_workspace_growths (const tw_workspace *ws);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_workspace, tw_workspace_free)

/* Emitter used by backward rules.  A tw_val is an opaque handle: a tensor in
 * eager mode, a graph value in compiled mode. */
typedef struct tw_emit tw_emit;
typedef struct tw_val tw_val;

/* Emit op_name on inputs; returns its single output, or NULL on error (the
 * error is kept in the emitter and returned by the executor).  attrs may be
 * NULL; it is copied. */
tw_val *tw_emit_op (tw_emit *e, const char *op_name, const tw_attrs *attrs, int n_in,
                    tw_val *const *in);
/* Multi-output form; fills out[0..n_out). */
gboolean tw_emit_op_multi (tw_emit *e, const char *op_name, const tw_attrs *attrs, int n_in,
                           tw_val *const *in, int n_out, tw_val **out);
/* Shorthands. */
tw_val *tw_emit1 (tw_emit *e, const char *op_name, const tw_attrs *attrs, tw_val *a);
tw_val *tw_emit2 (tw_emit *e, const char *op_name, const tw_attrs *attrs, tw_val *a, tw_val *b);
tw_val *tw_emit3 (tw_emit *e, const char *op_name, const tw_attrs *attrs, tw_val *a, tw_val *b,
                  tw_val *c);
/* Type and shape of a value (always concrete). */
const tw_tinfo *tw_val_info (tw_emit *e, tw_val *v);
/* The run the backward belongs to (training flag, seed, step, node key of the
 * node being differentiated): internal grad ops that recompute masks use it. */
const tw_kctx *tw_emit_kctx (tw_emit *e);

typedef enum
{
  TW_OP_INTERNAL = 1 << 0,      /* used by backward rules / compiler; not in the palette */
  TW_OP_ELEMENTWISE = 1 << 1,   /* output i depends on input i only (fusable) */
  TW_OP_LOSS = 1 << 2,          /* scalar loss; the training target */
  TW_OP_SOURCE = 1 << 3,        /* graph input (no inputs, fed by the executor) */
  TW_OP_STATEFUL = 1 << 4,      /* forward updates non-trainable buffers in training */
  TW_OP_RANDOM = 1 << 5,        /* uses the counter-based RNG */
  TW_OP_VIEW = 1 << 6,          /* output is a reshaped/reordered copy of input 0 */
} tw_op_flags;

typedef struct tw_op_def tw_op_def;

struct tw_op_def
{
  const char *name;             /* "conv2d" */
  const char *category;         /* palette group: Core, Convolution, Pooling, Normalisation,
                                 * Activation, Loss, Data, Shape, Math */
  const char *doc;              /* one line for tooltips */
  const tw_attr_spec *attrs;    /* terminated by { NULL } */
  int min_inputs, max_inputs;   /* data inputs; max_inputs -1 means variadic */
  const char *const *input_names;  /* port names, NULL-terminated; may be shorter than max */
  int n_outputs;                /* 0: ask num_outputs() */
  int (*num_outputs) (const tw_attrs *a);

  /* Parameters for these data-input shapes.  Returns the count (<= TW_MAX_PARAMS)
   * or -1 with error.  NULL for ops without parameters. */
  int (*params) (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_param_spec *out,
                 GError **error);

  /* Output types from input types (data inputs then params).  Reports one error
   * naming what was expected and what was got. */
  gboolean (*infer) (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                     GError **error);

  /* CPU kernel. */
  gboolean (*forward) (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                       tw_tensor *const *out, GError **error);

  /* Gradients of the inputs (data and params) from the gradients of the outputs.
   * gout[k] may be NULL when output k does not reach the loss.  Set gin[i] only
   * where needs[i] is TRUE; leave the rest NULL.  NULL backward: not differentiable. */
  gboolean (*backward) (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                        tw_val *const *out, tw_val *const *gout, const gboolean *needs,
                        tw_val **gin);

  void (*cost) (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out,
                int n_out, tw_cost *cost);

  const char *onnx_name;        /* NULL where there is no direct mapping */
  guint flags;
};

/* Registry.  tw_ops_init is idempotent and thread-safe; lookups need it. */
void tw_ops_init (void);
const tw_op_def *tw_op_lookup (const char *name);
/* All registered ops sorted by name; the array lives as long as the process. */
const tw_op_def *const *tw_op_list (int *n);
void tw_op_register (const tw_op_def *def);

int tw_op_num_outputs (const tw_op_def *def, const tw_attrs *a);
/* Fill in defaults from the schema and check names, types, choices and
 * required attributes.  Returns a new bag. */
tw_attrs *tw_op_resolve_attrs (const tw_op_def *def, const tw_attrs *a, GError **error);

/* Run the op's kernel for ctx's device (engine/kernels.h) on allocated
 * outputs, with ctx's workspace (reset first) as the kernel's scratch. */
gboolean tw_op_forward (const tw_op_def *def, const tw_kctx *ctx, const tw_attrs *a,
                        tw_tensor *const *in, int n_in, tw_tensor *const *out, GError **error);

/* Run an op eagerly on tensors: infers output shapes, allocates the outputs,
 * runs the forward kernel (tw_op_forward).  out[] receives new references. */
gboolean tw_op_run (const tw_op_def *def, const tw_kctx *ctx, const tw_attrs *a,
                    tw_tensor *const *in, int n_in, tw_tensor **out, GError **error);

/* Common infer helpers. */
/* The backward rule of an op that is piecewise constant in every input
 * (comparisons, sign, floor, masks): zeros shaped like each needed input. */
gboolean tw_zero_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                           tw_val *const *out, tw_val *const *gout, const gboolean *needs,
                           tw_val **gin);
gboolean tw_infer_same_as_input0 (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                                  GError **error);
/* Element strides of x read as the broadcast shape of y (x's dims aligned
 * to the right; 0 along the dims x broadcasts).  st has y->ndim entries. */
void tw_broadcast_strides (const tw_tensor *x, const tw_tensor *y, int64_t *st);
/* A broadcast plan: the output's dims with size-1 dims dropped and adjacent
 * dims merged wherever both inputs step through them contiguously (or both
 * broadcast them); at least one dim.  Same shapes collapse to one dim with
 * strides (1, 1), a scalar operand to (1, 0), a bias row [K] against [M, K]
 * to (M, K) with b strides (0, 1).  Strides count elements; 0 = broadcast.
 * A loop walks the output in rows of the last dim (shape[nd - 1] elements,
 * the inputs stepping by sa[nd - 1] and sb[nd - 1]). */
typedef struct
{
  int nd;
  int64_t shape[TW_MAX_DIMS];
  int64_t sa[TW_MAX_DIMS], sb[TW_MAX_DIMS];
} tw_bcast_plan;
/* a, b contiguous; y their broadcast shape. */
void tw_bcast_plan_init (tw_bcast_plan *p, const tw_tensor *a, const tw_tensor *b,
                         const tw_tensor *y);
/* Offsets in a and b of output row r (all dims but the last). */
static inline void
tw_bcast_row_offsets (const tw_bcast_plan *p, int64_t r, int64_t *oa, int64_t *ob)
{
  int64_t a = 0, b = 0;
  for (int d = p->nd - 2; d >= 0; d--)
    {
      int64_t i = r % p->shape[d];
      r /= p->shape[d];
      a += i * p->sa[d];
      b += i * p->sb[d];
    }
  *oa = a;
  *ob = b;
}
/* NumPy broadcasting of all inputs, dtype of input 0; TW_DIM_N broadcasts
 * with 1 and with itself. */
gboolean tw_infer_broadcast (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                             GError **error);
/* Cost helper for element-wise ops: flops_per_elem * numel of out[0]. */
void tw_cost_elementwise (const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
                          double flops_per_elem, tw_cost *cost);

/* Stable 64-bit key of a node id (FNV-1a), for the RNG. */
guint64 tw_node_key (const char *node_id);

/* Per-family registration, called by tw_ops_init (one per file in engine/ops/). */
void tw_ops_register_elementwise (void);
void tw_ops_register_reduce (void);
void tw_ops_register_shape (void);
void tw_ops_register_nn (void);
void tw_ops_register_conv (void);
void tw_ops_register_norm (void);
void tw_ops_register_loss (void);
void tw_ops_register_source (void);
void tw_ops_register_constant (void);    /* constant.c: constant */
void tw_ops_register_act_extra (void);   /* act-extra.c: clip, relu6, hard_sigmoid, hard_swish */
void tw_ops_register_pad (void);
void tw_ops_register_resize (void);
void tw_ops_register_shape_extra (void);  /* shape-extra.c: squeeze, unsqueeze, cast */
void tw_ops_register_select (void);       /* select.c: where, expand */
void tw_ops_register_elementwise_more (void);  /* elementwise-more.c: trigonometry, elu, prelu, ... */
void tw_ops_register_logic (void);        /* logic.c: comparisons, logic, isnan, isinf, mod */
void tw_ops_register_reduce_more (void);  /* reduce-more.c: prod, logsumexp */
void tw_ops_register_index_more (void);   /* index-more.c: argmin, trilu, gather_elements, cumsum, hardmax */
void tw_ops_register_loss_more (void);    /* loss-more.c: nll_loss */
/* The compiler's fused ops and their CPU kernels (engine/compile/fuse.c). */
void tw_fused_ops_register (void);

G_END_DECLS
