/* kernels.h — the kernel table: which function runs an op on a device.
 *
 * Kernels register per (op, device kind), as ggml's backends do.  An op of
 * the registry (engine/op.h) gets its CPU kernel from its definition's
 * forward when it is registered; fused ops (what the compiler's fusion pass
 * makes: "fused_linear", "fused_elementwise", …) are named here too, each
 * with a kernel per device that has one.  Executors look kernels up once per
 * instruction (compiled) or per op run (eager); supports () lets a device
 * take only some cases (dtypes, layouts) and leave the rest to another
 * kernel registered for the same op.
 *
 *   static const tw_kernel conv2d_cuda = {
 *     .op = "conv2d", .device = TW_DEVICE_CUDA, .name = "conv2d (cuDNN)",
 *     .supports = f32_only, .forward = conv2d_cuda_forward,
 *   };
 *   tw_kernel_register (&conv2d_cuda);
 *   const tw_kernel *k = tw_kernel_find ("conv2d", dev, attrs, in, n_in);
 *
 * Ownership: registered kernels must live as long as the process (static
 * data); lookups return them borrowed.
 */
#pragma once

#include "engine/device.h"
#include "engine/op.h"

G_BEGIN_DECLS

typedef gboolean (*tw_forward_fn) (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in,
                                   int n_in, tw_tensor *const *out, GError **error);

typedef struct
{
  const char *op;             /* a registered op's name, or a fused op's */
  tw_device_kind device;
  const char *name;           /* what the profiler shows: "conv2d (im2col + sgemm)" */
  /* Whether this kernel takes these inputs (NULL: every case the op accepts). */
  gboolean (*supports) (const tw_attrs *a, tw_tensor *const *in, int n_in);
  tw_forward_fn forward;      /* registered ops */
  gpointer fused;             /* fused ops: a tw_kernel_fn (engine/compile/program.h) */
} tw_kernel;

void tw_kernel_register (const tw_kernel *k);
/* The first kernel registered for op on dev's kind that supports the inputs
 * (in may be NULL to skip supports ()), or NULL. */
const tw_kernel *tw_kernel_find (const char *op, const tw_device *dev, const tw_attrs *a,
                                 tw_tensor *const *in, int n_in);
/* Every kernel registered for op, in order (borrowed array, NULL if none). */
const GPtrArray *tw_kernels_for (const char *op);
/* Names of the fused ops (registered with tw_fused_op_register), sorted,
 * NULL-terminated; free the array (not the strings) with g_free. */
const char **tw_fused_op_names (void);
/* A fused op: its name and one line of what it computes (for reports). */
void tw_fused_op_register (const char *name, const char *doc);
const char *tw_fused_op_doc (const char *name);

G_END_DECLS
