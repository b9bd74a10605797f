/* events.h — the event bus: what the executors publish, for any number of
 * clients (the debugger, the dashboard, the profiler, data-parallel
 * bucketing).  The executors know none of them.
 *
 *   static gboolean
 *   on_event (const tw_event *ev, gpointer user)
 *   {
 *     if (ev->kind == TW_EV_FORWARD && ev->end)
 *       g_print ("%s took %" G_GINT64_FORMAT " ns\n", ev->ident->label, ev->t_end - ev->t_start);
 *     return TRUE;                 // FALSE asks the executor to stop here
 *   }
 *
 *   g_autoptr (tw_bus) bus = tw_bus_new ();
 *   guint id = tw_bus_subscribe (bus, TW_EV_MASK_OPS, on_event, NULL, NULL);
 *   tw_trainer_set_bus (trainer, bus);          // the eager and compiled executors publish
 *   ...
 *   tw_bus_unsubscribe (bus, id);
 *
 * What each kind means — the same in eager and compiled mode:
 *
 * - TW_EV_ITERATION: one training step (forward, backward, update), begin and
 *   end; every op event of the step nests inside it.  Published by the trainer.
 * - TW_EV_DATA: loading one batch (published by the session's loop, outside
 *   the iteration it feeds).
 * - TW_EV_FORWARD: one forward op.  Eager: one graph node.  Compiled: one
 *   instruction, which may cover several nodes (ident->nodes lists them all,
 *   ident->fused says so).  inputs: the op's inputs (data then parameters);
 *   outputs (end only): its outputs.
 * - TW_EV_BACKWARD: backward work for graph nodes.  Eager: the whole
 *   backward rule of one node (its kernels nest inside as TW_EV_KERNEL) and
 *   the adding of its results into its inputs' and parameters' gradients
 *   (tw_param.grad includes this node's share at its end); inputs are the
 *   gradients of the node's outputs (entries may be NULL), outputs (end
 *   only) the gradients of its inputs then of its parameters (NULL where not
 *   needed).
 *   Compiled: one backward instruction (a node's backward may take several;
 *   they all name it), inputs and outputs as the instruction reads and writes.
 * - TW_EV_UPDATE: the optimizer update of one parameter (param is set).
 *   Compiled mode may fuse a linear layer's weight gradient into its update:
 *   ident->fused is then TRUE and the gradient never exists whole.
 * - TW_EV_KERNEL: one kernel run inside an op event.  Eager: each op a
 *   backward rule emits (relu_grad, linear_grad_weight, ...); an op's
 *   forward is one kernel and publishes none.  Compiled: none (every
 *   instruction is one kernel, published as its op event).
 * - TW_EV_COPY: host↔device copies, for the devices that make them.
 * - TW_EV_COLLECTIVE: one collective or message of a communicator
 *   (engine/comm/comm.h): coll says which (kind, sequence number, bytes,
 *   peer, algorithm, the bucket and parameters it carries), t_start/t_end
 *   when the communication thread started and finished it.  Published on
 *   the thread that waits for it, when it waits.
 * - TW_EV_GRAD_READY: an instant (start == end), once per trainable parameter
 *   per step, the moment its gradient is final and before its update: param
 *   and grad are set (grad is NULL where a fused update consumes it in
 *   blocks; grad_norm then carries its norm).  Eager: when the last node using the parameter (shared layers
 *   count each use) has run its backward, or at the end of backward for a
 *   parameter the loss does not reach.  Compiled: at the end of the
 *   instruction producing its final gradient.
 *
 * Events come in pairs, begin (end = FALSE, t_start set) and end (end = TRUE,
 * both times set), except GRAD_READY.  Times are CLOCK_MONOTONIC nanoseconds,
 * measured only when a client is attached: with none, publishing costs the
 * one branch of tw_bus_wants ().  Tensors are borrowed: valid during the
 * callback only.  Callbacks run on the executing thread; a client that blocks
 * pauses the run between two ops, one that returns FALSE stops it (the
 * executor returns TW_EXEC_ERROR_STOPPED).
 *
 * Subscribe and unsubscribe only while no executor publishes on the bus (a
 * session does it between iterations, or before it starts).
 */
#pragma once

#include "engine/params.h"

G_BEGIN_DECLS

typedef struct tw_device tw_device;

typedef enum
{
  TW_EV_ITERATION,
  TW_EV_DATA,
  TW_EV_FORWARD,
  TW_EV_BACKWARD,
  TW_EV_UPDATE,
  TW_EV_KERNEL,
  TW_EV_COPY,
  TW_EV_COLLECTIVE,
  TW_EV_GRAD_READY,
  TW_EV_N_KINDS
} tw_event_kind;

#define TW_EV_BIT(kind) (1u << (kind))
#define TW_EV_MASK_OPS (TW_EV_BIT (TW_EV_FORWARD) | TW_EV_BIT (TW_EV_BACKWARD) | TW_EV_BIT (TW_EV_UPDATE))
#define TW_EV_MASK_ALL ((1u << TW_EV_N_KINDS) - 1)
/* Not a kind: a client that reads an op's inputs in its end event (the
 * debugger's session) adds this to its mask.  An executor that writes an
 * output over an input's buffer (compiled mode's in-place reuse) then gives
 * the end event a copy of that input taken before the kernel ran; without
 * it, such an input holds the output's values at the end (its begin event
 * still sees the input). */
#define TW_EV_INPUTS_AT_END (1u << 31)

const char *tw_event_kind_name (tw_event_kind kind);     /* "forward", ... */

/* The identity of an instruction or op, computed once when the executor is
 * built (eager: per node; compiled: per instruction) and shared by all the
 * events it publishes.  Lives as long as the executor's program. */
typedef struct
{
  const char *label;            /* "linear", "fused linear+relu", "optimizer update" */
  const char *const *nodes;     /* graph node ids covered, NULL-terminated */
  const int *node_index;        /* their indices in the executor's graph (-1 when unknown) */
  int n_nodes;
  int phase;                    /* tw_phase */
  gboolean fused;               /* covers several ops */
  gboolean layer_end;           /* the last op of its node(s) in this phase */
  double flops;                 /* per execution */
  double bytes;                 /* read + written */
  const tw_device *device;
  /* Names of the event's inputs and outputs, as the debugger shows them
   * ("fc1", "fc1.weight", "grad:fc1"); NULL-terminated, may be shorter than
   * the event's tensors (or NULL). */
  const char *const *in_names;
  const char *const *out_names;
} tw_op_ident;

/* A name for a value that has none of its own (a backward rule's
 * intermediate, a compiled temporary): the op that made it applied to its
 * inputs' names, "matmul(transpose(grad:fc1), flat)", with ":k" for output
 * k of several (n_out > 1); an unnamed input reads "?".  Longer than
 * TW_VALUE_NAME_MAX bytes, the arguments are left out and serial (the
 * value's index in its rule or program) keeps it apart from its
 * neighbours: "matmul(…)#7".  Caller frees. */
#define TW_VALUE_NAME_MAX 64
char *tw_value_name (const char *op, const char *const *in_names, int n_in, int output, int n_out,
                     int serial);

typedef struct
{
  tw_event_kind kind;
  gboolean end;                 /* FALSE: begin; TRUE: end (outputs and t_end set) */
  gboolean compiled;            /* published by the compiled executor */
  const tw_op_ident *ident;     /* NULL for ITERATION, DATA */
  guint64 step;                 /* training step (0-based) */
  gint64 t_start, t_end;        /* CLOCK_MONOTONIC ns; t_end 0 on begin */
  tw_tensor *const *inputs;
  int n_inputs;
  tw_tensor *const *outputs;
  int n_outputs;
  tw_param *param;              /* UPDATE, GRAD_READY: the parameter (name, value) */
  tw_tensor *grad;              /* GRAD_READY: its final gradient (may be NULL) */
  double grad_norm;             /* GRAD_READY with grad NULL: its L2 norm when the fused
                                 * update computed it, else NaN */
  double loss;                  /* ITERATION end: the step's loss */
  const struct tw_coll_info *coll;  /* COLLECTIVE: what it was (engine/comm/comm.h) */
} tw_event;

typedef gboolean (*tw_event_fn) (const tw_event *ev, gpointer user_data);

typedef struct tw_bus tw_bus;

tw_bus *tw_bus_new (void);
tw_bus *tw_bus_ref (tw_bus *bus);
void tw_bus_unref (tw_bus *bus);
/* mask: TW_EV_BIT of the kinds wanted.  Returns an id > 0. */
guint tw_bus_subscribe (tw_bus *bus, guint mask, tw_event_fn fn, gpointer user_data,
                        GDestroyNotify destroy);
void tw_bus_unsubscribe (tw_bus *bus, guint id);
/* For owners that subscribe on the publishing thread on another's behalf
 * (tw_session_subscribe): an id now (any thread), the subscription later. */
guint tw_bus_reserve_id (tw_bus *bus);
void tw_bus_subscribe_id (tw_bus *bus, guint id, guint mask, tw_event_fn fn, gpointer user_data,
                          GDestroyNotify destroy);
/* Change what a client wants; unlike (un)subscribing this is safe from
 * inside a callback of the same bus. */
void tw_bus_set_mask (tw_bus *bus, guint id, guint mask);

/* Nanoseconds on CLOCK_MONOTONIC. */
gint64 tw_now_ns (void);

/* For publishers. */
struct tw_bus
{
  gint refcount;
  guint mask;                   /* union of the clients' masks */
  GArray *clients;
  gint next_id;
};

static inline gboolean
tw_bus_wants (const tw_bus *bus, tw_event_kind kind)
{
  return bus != NULL && G_UNLIKELY (bus->mask & TW_EV_BIT (kind));
}

/* Whether a client reads end events' inputs (TW_EV_INPUTS_AT_END). */
static inline gboolean
tw_bus_wants_inputs_at_end (const tw_bus *bus)
{
  return bus != NULL && (bus->mask & TW_EV_INPUTS_AT_END);
}

/* Deliver ev to every client that wants its kind.  FALSE when one asked to
 * stop (every client still sees the event). */
gboolean tw_bus_publish (tw_bus *bus, const tw_event *ev);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_bus, tw_bus_unref)

G_END_DECLS
