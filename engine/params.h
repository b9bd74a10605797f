/* params.h — named parameters and buffers, laid out as PyTorch's state_dict.
 *
 * A tw_params holds, in insertion order, named tensors ("fc1.weight" [256, 784])
 * with their gradients and optimizer state.  Executors create entries from
 * the graph's param specs and keep entries of unchanged nodes across edits.
 *
 * Ownership: the store owns its entries; tw_params_get returns a borrowed
 * pointer valid until the entry is removed or the store freed.
 */
#pragma once

#include "engine/op.h"

G_BEGIN_DECLS

typedef struct
{
  char *name;
  tw_tensor *value;        /* f32, contiguous */
  tw_tensor *grad;         /* same shape; NULL for buffers; zeroed by tw_params_zero_grad */
  gboolean trainable;
  tw_tensor *state[2];     /* optimizer state (momentum / Adam m, v), NULL until used */
  gboolean frozen;         /* trainable, but the optimizer leaves it alone */
} tw_param;

typedef struct tw_params tw_params;

tw_params *tw_params_new (void);
void tw_params_free (tw_params *p);
int tw_params_count (const tw_params *p);
tw_param *tw_params_at (const tw_params *p, int i);
tw_param *tw_params_get (const tw_params *p, const char *name);
/* Adds (or returns the existing entry when name and shape match; replaces it when
 * the shape changed).  value is taken as a new reference.
 * value must be contiguous, and f32 when trainable (buffers may be any dtype).
 * A kept entry keeps its value, gradient and state (the new value is not
 * used) and takes the trainable flag given; a replaced one keeps its position,
 * gets a zero gradient and loses its optimizer state.  Trainable entries
 * always have a gradient, others never.  Returns the entry (borrowed). */
tw_param *tw_params_set (tw_params *p, const char *name, tw_tensor *value, gboolean trainable);
gboolean tw_params_remove (tw_params *p, const char *name);
void tw_params_zero_grad (tw_params *p);
int64_t tw_params_numel (const tw_params *p, gboolean trainable_only);

/* Initialise a tensor from a param spec: counter-based RNG keyed by
 * (seed, tw_node_key (name)), so results do not depend on threads or order.
 * Element i (row-major) uses counter i, so it depends only on (seed, name, i).
 * Bounds and deviations use spec->fan_in / fan_out (a non-positive fan gives
 * zeros, as PyTorch's nn.Linear does for the bias of a layer with no inputs);
 * t may have any dtype and layout (f32 contiguous is the fast path). */
void tw_param_init (tw_tensor *t, const tw_param_spec *spec, guint64 seed, const char *name);

/* ---- Starting from given weights (a PyTorch state_dict) -----------------
 *
 * A state_dict saved with safetensors.torch.save_file loads as it is: its
 * keys are the parameter and buffer names above ("fc1.weight",
 * "bn1.running_mean").  Each entry of the store found in the file takes the
 * file's values; shapes must match exactly, and floating-point values are
 * converted to the entry's dtype (F64 → F32); integer tensors for a
 * floating-point entry are refused.  As torch's load_state_dict reports:
 *
 *   missing     entries of the store the file lacks: they keep their values
 *   unexpected  tensors of the file no entry takes
 *   ignored     tensors known and left out on purpose: a batch norm's
 *               "<scope>.num_batches_tracked" (twb keeps no batch counter;
 *               its momentum is never None) and a twb checkpoint's optimizer
 *               state ("optimizer.*": use a resume for that)
 *
 *   tw_state_dict_report rep = { 0 };
 *   if (!tw_params_load_state_dict_file (params, "init.safetensors", FALSE, &rep, &error))
 *     ...;   // nothing changed
 *   tw_state_dict_report_clear (&rep);
 *
 * Everything is checked before anything changes: on failure the store is as
 * it was.  strict fails (TW_STATE_DICT_ERROR_STRICT) when any key is missing
 * or unexpected.  Errors name the file and the key (a shape mismatch gives
 * both shapes).  report may be NULL; its lists are NULL-terminated, in the
 * store's order (missing, loaded) or sorted (unexpected, ignored), and owned
 * by the report. */
#define TW_STATE_DICT_ERROR (tw_state_dict_error_quark ())
GQuark tw_state_dict_error_quark (void);

typedef enum
{
  TW_STATE_DICT_ERROR_SHAPE,     /* a tensor's shape differs from the entry's */
  TW_STATE_DICT_ERROR_DTYPE,     /* a dtype that cannot be converted */
  TW_STATE_DICT_ERROR_STRICT,    /* strict, and keys are missing or unexpected */
} tw_state_dict_error_code;

typedef struct
{
  char **loaded;
  char **missing;
  char **unexpected;
  char **ignored;
} tw_state_dict_report;

void tw_state_dict_report_clear (tw_state_dict_report *report);
/* The one rule for a tensor loaded into entry e, by every reader of weights
 * (--init-weights, --resume, --weights of eval, predict and export): the
 * same shape, and the same dtype or both floating point (F64 → F32).
 * FALSE with TW_STATE_DICT_ERROR_SHAPE or _DTYPE naming source, the tensor
 * and both shapes or dtypes. */
gboolean tw_param_accepts (const tw_param *e, const tw_tensor *t, const char *source,
                           GError **error);
/* tensors: name → tw_tensor * (borrowed); source names them in errors. */
gboolean tw_params_load_state_dict (tw_params *p, GHashTable *tensors, GHashTable *metadata,
                                    const char *source, gboolean strict,
                                    tw_state_dict_report *report, GError **error);
/* The same from a safetensors file (errors of engine/safetensors.h too). */
gboolean tw_params_load_state_dict_file (tw_params *p, const char *path, gboolean strict,
                                         tw_state_dict_report *report, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_params, tw_params_free)

G_END_DECLS
