/* opcheck.h — shared checks for op tests.
 *
 * twt_run_guarded: runs an op's forward with 64 guard floats on each side of
 *   every output and asserts they are untouched.
 * twt_grad_check: the op's backward rule (through the eager emitter, in
 *   float64) against central finite differences of L = sum_k <w_k, out_k>
 *   with random w_k.  Returns the largest error, normalised per element as
 *   |analytic - numeric| / max(1, |numeric|).
 * twt_max_error: normalised error between two tensors
 *   max|a - b| / max(1, max|b|).
 */
#pragma once

#include "engine/emit.h"
#include "engine/op.h"
#include "engine/session.h"

G_BEGIN_DECLS

tw_tensor *twt_randn (tw_dtype dtype, int ndim, const int64_t *shape, guint64 seed);
tw_tensor *twt_uniform (tw_dtype dtype, int ndim, const int64_t *shape, guint64 seed, double lo,
                        double hi);
tw_tensor *twt_randint (int ndim, const int64_t *shape, guint64 seed, int64_t hi);  /* i64 in [0, hi) */

/* Forward with guard bytes; returns new references in out[]. */
void twt_run_guarded (const char *op, const tw_attrs *attrs, tw_tensor *const *in, int n_in,
                      tw_tensor **out, const tw_kctx *ctx);

/* wrt[i]: check the gradient of input i (float inputs only).  At most
 * max_elems elements of each input are probed (spread evenly); 0 = all.
 * ctx may be NULL (training, seed 1, step 0). */
double twt_grad_check (const char *op, const tw_attrs *attrs, tw_tensor *const *in, int n_in,
                       const gboolean *wrt, int max_elems, const tw_kctx *ctx);

double twt_max_error (const tw_tensor *a, const tw_tensor *b);

/* A new attribute bag holding one int (caller frees). */
tw_attrs *twt_attrs_int (const char *name, int64_t v);

/* Shape inference of op on input types, defaults filled in from the schema;
 * FALSE with error when the attributes or the inputs do not fit. */
gboolean twt_infer (const char *op, const tw_attrs *a, const tw_tinfo *in, int n_in,
                    tw_tinfo *out, GError **error);
/* Asserts twt_infer fails with a message containing needle1 (and needle2
 * unless NULL). */
void twt_assert_infer_error (const char *op, const tw_attrs *a, const tw_tinfo *in, int n_in,
                             const char *needle1, const char *needle2);

/* g_assert that twt_grad_check's error is below tol, with a message naming op. */
#define twt_assert_grad(op, attrs, in, n_in, wrt, tol)                                     \
  G_STMT_START                                                                            \
  {                                                                                       \
    double _e = twt_grad_check ((op), (attrs), (in), (n_in), (wrt), 0, NULL);             \
    if (!(_e < (tol)))                                                                    \
      g_error ("%s: gradient error %.3g exceeds %.3g", (op), _e, (double) (tol));         \
  }                                                                                       \
  G_STMT_END

/* Trains two copies of the model (a twb-model JSON with a cross-entropy
 * loss) for `steps` SGD steps on one fixed batch, eagerly and compiled: x
 * of shape x_shape, N(0, 1) from seed; labels in [0, n_classes) from seed
 * + 1.  Fails unless each step's losses agree within 1e-4 relative (float32
 * rounding drifts ~1e-6 over a few steps, a wrong rule or a missed
 * dependency far more), the loss falls, and the parameters agree at the end. */
void twt_check_train_parity (const char *model_json, const char *name, int steps, int x_ndim,
                             const int64_t *x_shape, guint64 seed, int64_t n_classes);

/* The next snapshot of kind from s, others skipped; a hang (30 s) or the
 * session's end before one comes fails the test.  Caller frees. */
tw_snapshot *twt_pop_kind (tw_session *s, tw_snapshot_kind kind);

G_END_DECLS
