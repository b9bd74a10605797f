/* emit.h — the eager emitter, and the interface other emitters implement.
 *
 * Backward rules call tw_emit_op () (op.h).  The eager emitter runs each op at
 * once on CPU tensors; the compiler (#3) records them into a graph instead.
 *
 *   tw_emit *e = tw_eager_emit_new (&kctx);
 *   tw_val *x = tw_eager_emit_wrap (e, x_tensor);
 *   tw_val *y = tw_emit1 (e, "relu", NULL, x);
 *   tw_tensor *yt = tw_eager_emit_tensor (y);     // borrowed, lives in e
 *   tw_eager_emit_free (e);
 */
#pragma once

#include "engine/events.h"
#include "engine/op.h"

G_BEGIN_DECLS

typedef struct
{
  /* Emit def on in[]; fill out[0..n_out).  Returns FALSE with error set. */
  gboolean (*op) (tw_emit *e, const tw_op_def *def, const tw_attrs *a, int n_in,
                  tw_val *const *in, int n_out, tw_val **out, GError **error);
  const tw_tinfo *(*info) (tw_emit *e, tw_val *v);
} tw_emit_vtable;

/* Base struct: emitters embed it first. */
struct tw_emit
{
  const tw_emit_vtable *vt;
  tw_kctx kctx;
  GError *error;            /* first error, owned */
};

/* Takes and clears the first error an emitter hit (NULL if none). */
GError *tw_emit_take_error (tw_emit *e);
void tw_emit_set_kctx (tw_emit *e, const tw_kctx *ctx);

tw_emit *tw_eager_emit_new (const tw_kctx *ctx);
void tw_eager_emit_free (tw_emit *e);
/* Wrap a tensor as a value; the emitter takes its own reference. */
tw_val *tw_eager_emit_wrap (tw_emit *e, tw_tensor *t);
/* The same, named as kernel events name it ("grad:fc1", "fc1.weight"; name
 * copied, may be NULL); the kernels' results are named after what made
 * them (tw_value_name in events.h). */
tw_val *tw_eager_emit_wrap_named (tw_emit *e, tw_tensor *t, const char *name);
/* Publish a TW_EV_KERNEL event for every op run, nested in parent's event
 * (bus and parent borrowed; bus may be NULL). */
void tw_eager_emit_set_bus (tw_emit *e, tw_bus *bus, const tw_op_ident *parent, guint64 step);
/* TRUE once a kernel event's client asked to stop (the op then failed). */
gboolean tw_eager_emit_stopped (tw_emit *e);
/* The tensor behind a value; borrowed (lives as long as the emitter). */
tw_tensor *tw_eager_emit_tensor (tw_val *v);

G_END_DECLS
