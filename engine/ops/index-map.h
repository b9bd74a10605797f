/* index-map.h — per-dim index maps shared by pad.c and resize.c (not public).
 *
 * An op whose output element copies one input element, chosen dim by dim
 * (pad, nearest resize), is a gather through nd maps: map[d][i] is the
 * index along dim d of x that output index i along dim d reads, or -1 where
 * the output holds a constant instead (pad's constant border).  The
 * gradient is the adjoint scatter-add.  x is shaped in, y out, both
 * contiguous, f32 or f64.
 */
#pragma once

#include "engine/op.h"

G_BEGIN_DECLS

typedef struct
{
  int nd; /* >= 1 */
  int64_t in[TW_MAX_DIMS], out[TW_MAX_DIMS];
  int64_t *map[TW_MAX_DIMS]; /* map[d] holds out[d] entries */
} tw_index_map;

/* Source index along dim d for output index i (in [0, in[d]) or -1). */
typedef int64_t (*tw_index_map_fn) (const void *data, int d, int64_t i);

/* Sets nd, in and out and fills the maps by calling fn for every output
 * index of every dim; the maps live in ctx's scratch (valid until the
 * kernel returns). */
void tw_index_map_build (tw_index_map *m, const tw_kctx *ctx, int nd, const int64_t *in,
                         const int64_t *out, tw_index_map_fn fn, const void *data);

/* y[i] = x[src (i)], or value where a map gives -1.  x is m->in, y m->out. */
void tw_index_map_gather (const tw_index_map *m, const tw_kctx *ctx, const tw_tensor *x,
                          tw_tensor *y, double value);

/* dx = 0, then dx[src (i)] += dy[i] for every i not on the border.  dy is
 * m->out, dx m->in.  Rows go to threads split by the first n_lead dims,
 * which the caller vouches are identity maps (so that no two threads write
 * one element of dx); with n_lead 0 it runs on one thread.  n_lead < nd. */
void tw_index_map_scatter_add (const tw_index_map *m, const tw_kctx *ctx, const tw_tensor *dy,
                               tw_tensor *dx, int n_lead);

/* Checks shared by the ops built on index maps.  check_float: t (the op's
 * what) is f32 or f64.  check_grad: dy is shaped out[nd] (the shape of the
 * op's output, which what names: "padded"), with dy's dtype. */
gboolean tw_index_map_check_float (const char *op, const char *what, const tw_tinfo *t,
                                   GError **error);
gboolean tw_index_map_check_grad (const char *op, const char *what, const tw_tinfo *dy, int nd,
                                  const int64_t *out, GError **error);

/* tw_op_def costs: the gather moves data without flops; the scatter-add
 * adds once per dy element (in[0]). */
void tw_index_map_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out,
                        int n_out, tw_cost *cost);
void tw_index_map_grad_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out,
                             int n_out, tw_cost *cost);

G_END_DECLS
