/* program.h — the compiled executor's static program.
 *
 * A tw_program is a flat schedule of instructions over slots (values with a
 * concrete type and shape), built from a graph and a batch size: forward,
 * then — for training — backward derived from the same backward rules the
 * eager tape uses (through a graph-building tw_emit), then the optimizer
 * update of every parameter in one pass.  Passes rewrite it (constant
 * folding, dead code, common subexpressions, fusion, in-place reuse) and the
 * memory planner places every activation, gradient and temporary in one
 * arena, so a step allocates nothing.
 *
 *   g_autoptr (tw_program) p = tw_program_build (graph, 64, TW_PROGRAM_TRAIN, &error);
 *   tw_program_optimize (p, TW_PASS_ALL, &error);     // passes + memory plan
 *   g_autofree char *report = tw_program_report (p);
 *
 * Every instruction keeps the ids of the graph nodes it covers (a fused
 * kernel covers several), so the debugger and the profiler map it back to
 * the drawing.
 *
 * Ownership: the program owns its slots, instructions and constants; the
 * graph passed to build is copied.
 */
#pragma once

#include "engine/graph.h"
#include "engine/eager.h"

G_BEGIN_DECLS

typedef enum
{
  TW_SLOT_DATA,        /* fed: the data batch */
  TW_SLOT_LABEL,       /* fed: the labels */
  TW_SLOT_PARAM,       /* a parameter or buffer, bound to the tw_params store */
  TW_SLOT_GRAD,        /* the final gradient of a trainable parameter */
  TW_SLOT_ACT,         /* activation, activation gradient or temporary: in the arena */
  TW_SLOT_CONST,       /* known at compile time (value holds it) */
  TW_SLOT_SEED,        /* fed before backward: the gradient of a value (tw_grad_spec.seeds),
                        * named "grad:REF" */
} tw_slot_kind;

typedef struct
{
  int id;
  tw_slot_kind kind;
  tw_tinfo info;
  char *name;          /* parameter name (PARAM, GRAD), node ref for activations */
  tw_tensor *value;    /* CONST only */
  int producer;        /* instruction index, -1 for DATA/LABEL/PARAM/CONST */
  int alias_of;        /* shares the buffer of this slot (in-place, views), -1 */
  int64_t offset;      /* byte offset in the arena after planning, -1 before */
  gboolean keep;       /* needed after the program (loss, prediction, grads) */
} tw_slot;

typedef struct tw_instr tw_instr;

/* A kernel for a fused instruction (no registered op behind it). */
typedef gboolean (*tw_kernel_fn) (const tw_kctx *ctx, const tw_instr *ins, tw_tensor *const *in,
                                  tw_tensor *const *out, GError **error);

struct tw_instr
{
  const tw_op_def *op;        /* registered op, or NULL when kernel is set */
  tw_attrs *attrs;            /* resolved */
  tw_kernel_fn kernel;        /* fused kernels: the CPU kernel of fused_op */
  const char *fused_op;       /* the fused op's name in the kernel table (static), or NULL */
  gpointer kdata;             /* the fused kernel's data, freed with kdata_free */
  GDestroyNotify kdata_free;
  char *label;                /* what the report shows: "linear", "fused linear+relu" */
  int n_in, n_out;
  int in[TW_MAX_INPUTS + TW_MAX_PARAMS];
  int out[TW_MAX_OUTPUTS];
  tw_phase phase;
  guint64 node_key;           /* RNG key of the forward node it derives from */
  gboolean training;
  GPtrArray *sources;         /* graph node ids (char *) covered */
  GHashTable *source_set;     /* the same ids as a set once there are many (borrowed), or NULL */
  gboolean inplace_ok;        /* out[0] may share in[k]'s buffer (element-wise) */
  tw_cost cost;               /* per run; a fused instruction sums what it covers */
  char *param;                /* UPDATE instructions: the parameter they update */
  gboolean pinned;            /* covers a kept node: fusion leaves it alone */
};

typedef enum
{
  TW_PROGRAM_INFER,           /* the graph's outputs only, eval mode (predict) */
  TW_PROGRAM_EVAL,            /* outputs and loss, eval mode (evaluation) */
  TW_PROGRAM_TRAIN,           /* forward, loss, backward; gradients kept for the caller */
  TW_PROGRAM_STEP,            /* TRAIN plus the optimizer update of every parameter,
                               * each as soon as its gradient is ready */
} tw_program_kind;

/* What update (and gradient accumulate) instructions read through
 * tw_kctx.exec_data. */
typedef struct
{
  struct tw_optimizer *opt;   /* tw_optimizer_begin_step () done for this step */
  tw_params *params;
  gboolean grad_norms;        /* fused gradient+update kernels keep their gradient's norm */
  gboolean grads_set;         /* gradient accumulate instructions: = (TRUE) or += */
} tw_update_ctx;

/* What a training program differentiates, and where the gradients go
 * (tw_program_build_grads).  The default (NULL): the loss, seeded with 1,
 * into each trainable parameter's gradient slot, kept for the caller.
 *
 * seeds: values ("fc2", "split:1", the loss node) whose gradients are fed
 * to the run before its backward part (TW_SLOT_SEED slots "grad:REF",
 * p->seed_slot); when given, the loss gets no seed 1 of its own (name it
 * to start from it, with the weight wanted) and the graph needs no loss.
 * grad_inputs: input node ids whose gradient the program keeps
 * (p->input_grad_slot), as if they were parameters.
 * accumulate: each parameter's gradient ends in a "grad_accumulate"
 * instruction that writes it into the tw_params store's grad (= or += by
 * tw_update_ctx.grads_set), so that micro-batches sum there; the gradient
 * slots are then not kept.  TRAIN programs only.
 *
 * Parameter gradients accumulate (+=) across runs; activation and input
 * gradients are assigned (=) by each run. */
typedef struct
{
  const char *const *seeds;        /* NULL-terminated, or NULL */
  const char *const *grad_inputs;  /* NULL-terminated, or NULL */
  gboolean accumulate;
} tw_grad_spec;

/* The label of a grad_accumulate instruction (the report leaves it out of
 * the fused kernels, as it does optimizer updates). */
#define TW_GRAD_ACCUMULATE_LABEL "gradient accumulate"

/* The CPU kernel of a fused op (engine/kernels.h). */
tw_kernel_fn tw_fused_cpu_kernel (const char *fused_op);
/* The fused ops of fuse_update.c and program.c (optimizer updates). */
void tw_fused_update_ops_register (void);
void tw_program_register_update_op (void);

/* The squared norm of the gradient a fused gradient+update instruction
 * applied in its last run (NaN unless tw_update_ctx.grad_norms was set, or
 * for another instruction). */
double tw_fused_update_grad_sq (const tw_instr *ins);

typedef enum
{
  TW_PASS_CONSTFOLD = 1 << 0,
  TW_PASS_DCE = 1 << 1,
  TW_PASS_CSE = 1 << 2,
  TW_PASS_FUSE = 1 << 3,
  TW_PASS_INPLACE = 1 << 4,
  TW_PASS_SCHEDULE = 1 << 5,
  TW_PASS_FUSE_UPDATES = 1 << 6,   /* weight gradient + update (needs TW_PASS_FUSE too) */
  TW_PASS_FOLD_BN = 1 << 7,        /* inference batch norm into the conv2d / linear before it
                                    * (needs TW_PASS_FUSE too) */
  TW_PASS_FUSE_RESIDUAL = 1 << 8,  /* conv2d + residual add (+ relu) of inference programs
                                    * (needs TW_PASS_FUSE too) */
  TW_PASS_ALL = 0x1ff,
} tw_pass_flags;

/* One line of the compile report. */
typedef struct
{
  char *pass;
  int instrs_before, instrs_after;
  double ms;
  char *detail;               /* e.g. fused groups, may be NULL */
} tw_pass_record;

typedef struct tw_program tw_program;
typedef struct tw_readers tw_readers;   /* readers.c */

struct tw_program
{
  tw_program_kind kind;
  int64_t batch;
  tw_graph *graph;            /* copy, inferred at this batch */
  GPtrArray *slots;           /* tw_slot* */
  GPtrArray *instrs;          /* tw_instr* in schedule order */
  int data_slot, label_slot, loss_slot;
  GArray *output_slots;       /* int: the graph's outputs, in order */
  int pred_slot;              /* the prediction accuracy scores (tw_graph_prediction), or -1 */
  GHashTable *param_slot;     /* param name → GINT slot+1 */
  GHashTable *grad_slot;      /* param name → GINT slot+1 (final gradients) */
  GHashTable *seed_slot;      /* value ref → GINT slot+1 (TW_SLOT_SEED; tw_grad_spec.seeds) */
  GHashTable *input_grad_slot;/* input id → GINT slot+1 (tw_grad_spec.grad_inputs reached) */
  int n_accumulates;          /* grad_accumulate instructions (tw_grad_spec.accumulate) */
  GArray *param_order;        /* param slots in order of first use */
  int n_updates;              /* update instructions (STEP programs) */
  int n_graph_nodes;          /* executed graph nodes (the "before" count) */
  size_t arena_bytes;         /* after planning */
  size_t unplanned_bytes;     /* sum of all ACT slot sizes (no reuse) */
  gboolean guards;            /* planned with guard bytes between slots */
  GArray *records;            /* tw_pass_record */
  GHashTable *keep_nodes;     /* node ids fusion must not hide (set before optimize), or NULL */
  double build_ms;
  tw_readers *readers;        /* who reads each slot (readers.c), or NULL until asked */
};

tw_program *tw_program_build (const tw_graph *graph, int64_t batch, tw_program_kind kind,
                              GError **error);
/* The same with what training differentiates (NULL: the default; see
 * tw_grad_spec).  Fails naming a seed that is no value of the graph or a
 * grad input that is no input. */
tw_program *tw_program_build_grads (const tw_graph *graph, int64_t batch, tw_program_kind kind,
                                    const tw_grad_spec *spec, GError **error);
/* The first instruction of the part of a TRAIN program that needs its
 * seeds (the first backward or seed-reading instruction; n_instrs when
 * none): a run can stop there and go on later, after the seeds are fed.
 * -1 when an output, the loss or the prediction is computed after it. */
int tw_program_backward_start (const tw_program *p);
void tw_program_free (tw_program *p);

/* Passes, in a fixed order, then the memory plan.  Records each in p->records. */
gboolean tw_program_optimize (tw_program *p, tw_pass_flags passes, GError **error);

/* Individual passes (each returns the number of instructions removed or merged). */
int tw_pass_constfold (tw_program *p);
int tw_pass_dce (tw_program *p);
int tw_pass_cse (tw_program *p);
int tw_pass_fuse (tw_program *p);
int tw_pass_inplace (tw_program *p);
/* Inference programs (eval-mode instructions): a batch_norm with running
 * statistics whose input is a conv2d's (or a 2-d linear's, + a relu after
 * it) output read by nothing else becomes part of that layer's kernel: the
 * per-channel scale weight / sqrt (running_var + eps) and shift, worked out
 * from the parameters at every run (O(channels), so a program cached
 * across training steps or after new weights were loaded never runs a stale
 * fold), applied in the GEMM's epilogue, which is W' = W · scale,
 * b' = (b - mean) · scale + bias without a copy of W.  Runs before fusion.
 * Returns the number folded. */
int tw_pass_fold_bn (tw_program *p);
/* Inference programs: conv2d (+ its folded batch norm) + add of a
 * same-shaped residual (+ relu) as one instruction, relu (conv (x) + b + r)
 * in the conv's epilogue (fuse.c).  Runs after tw_pass_fold_bn, before
 * fusion.  Returns the number fused. */
int tw_pass_fuse_residual (tw_program *p);
/* Moves each update instruction right after the last instruction that needs
 * the parameter's old value or produces its gradient, so gradient buffers
 * die early.  Returns the number moved. */
int tw_pass_schedule_updates (tw_program *p);
/* A linear layer's weight gradient whose only reader is its update becomes one
 * instruction computing and applying it in row blocks (the full gradient is
 * never stored).  Runs after scheduling.  Returns the number fused. */
int tw_pass_fuse_updates (tw_program *p);
/* Liveness-based placement of every ACT slot in one arena.  With guards, 64
 * guard bytes separate neighbouring slots (tests check them). */
void tw_program_plan_memory (tw_program *p, gboolean guards);

/* Helpers for passes. */
/* A registered op with no randomness, state or source role: safe to fold or merge. */
gboolean tw_instr_is_pure (const tw_instr *ins);
tw_slot *tw_program_slot (const tw_program *p, int id);
tw_instr *tw_program_instr (const tw_program *p, int i);
int tw_program_add_slot (tw_program *p, tw_slot_kind kind, const tw_tinfo *info,
                         const char *name);
/* A new instruction (not yet in the schedule); the caller fills it. */
tw_instr *tw_instr_new (const tw_op_def *op, const tw_attrs *attrs, const char *label);
void tw_instr_free (tw_instr *ins);
void tw_instr_add_source (tw_instr *ins, const char *node_id);
/* Rebuild producers and drop NULL entries after a pass edited the schedule. */
void tw_program_compact (tw_program *p);
/* The slot whose buffer slot s shares (following alias_of), s itself if none. */
int tw_program_alias_root (const tw_program *p, int s);
/* Bytes of a slot's value (numel x dtype size). */
size_t tw_slot_bytes (const tw_slot *s);
/* Replace every read of slot `from` by slot `to`. */
void tw_program_replace_uses (tw_program *p, int from, int to);

/* Readers of slots (readers.c): an index built on the first question after
 * a compaction in O(instructions), so that passes stay linear.  Passes
 * replace instructions through tw_program_set_instr, which keeps it exact;
 * writing p->instrs or an instruction's inputs directly needs
 * tw_program_drop_readers after. */
/* Reads of slot (an instruction reading it twice counts twice). */
int tw_program_use_count (const tw_program *p, int slot);
/* The position of the one instruction reading slot (once), or -1: none,
 * several, or slot is kept past the program. */
int tw_program_sole_reader (const tw_program *p, int slot);
typedef gboolean (*tw_reader_pred) (const tw_program *p, int pos, const tw_instr *reader,
                                    int slot, gconstpointer data);
/* The first position (in schedule order) of an instruction reading slot for
 * which pred holds, or -1; O(the slot's readers). */
int tw_program_first_reader (const tw_program *p, int slot, tw_reader_pred pred,
                             gconstpointer data);
/* The positions of the instructions reading slot now, increasing, each
 * once; O(the slot's readers).  The caller frees the array (of int). */
GArray *tw_program_readers (const tw_program *p, int slot);
/* Put ins (or NULL) at position pos; returns what was there (the caller
 * frees it). */
tw_instr *tw_program_set_instr (tw_program *p, int pos, tw_instr *ins);
void tw_program_drop_readers (tw_program *p);
void tw_readers_free (tw_readers *r);

/* Human-readable report: counts before/after each pass, fused groups with
 * their source nodes, arena bytes, compile time.  Caller frees. */
char *tw_program_report (const tw_program *p);
JsonNode *tw_program_report_json (const tw_program *p);
/* One line per instruction: "%12 = linear(%3, %4, %5)  [fc1]".  Caller frees. */
char *tw_program_dump (const tw_program *p);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_program, tw_program_free)

G_END_DECLS
