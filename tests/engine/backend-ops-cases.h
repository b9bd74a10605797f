/* backend-ops-cases.h — the per-op case generators of test-backend-ops.c
 * (backend-ops-cases.c): for every registered op, a few cases with fixed
 * seeds — random shapes with batch 1, odd sizes and broadcasting, the op's
 * attributes, inputs valid for the op. */
#pragma once

#include "engine/op.h"

G_BEGIN_DECLS

#define MAX_IN (TW_MAX_INPUTS + TW_MAX_PARAMS)

/* One case: inputs, attributes, run context and the outputs infer () must
 * give.  Float inputs are float64 tensors holding f32-exact values, so the
 * f32 run and the f64 reference see the very same numbers. */
typedef struct
{
  tw_attrs *attrs;                  /* owned; NULL: the schema's defaults */
  int n_in;                         /* data inputs, then the parameters (added by the harness) */
  tw_tensor *in[MAX_IN];            /* owned */
  gboolean no_grad[MAX_IN];         /* float inputs the backward does not differentiate */
  int n_want;
  tw_tinfo want[TW_MAX_OUTPUTS];    /* a float dtype stands for the dtype of the run */
  tw_kctx ctx;
  guint64 seed;                     /* seed of the generator's next tensor */
} bcase;

/* Fills c for case k (0 <= k < n_cases) of op. */
typedef void (*case_gen) (bcase *c, const char *op, int k);

typedef struct
{
  const char *op;
  int n_cases;
  case_gen gen;
} op_case;

/* A shape. */
typedef struct
{
  int nd;
  int64_t d[TW_MAX_DIMS];
} shp;

/* Append an input to c: N(0, 1), or U(lo, hi), rounded to f32 (stored in
 * float64); returned borrowed (c owns it). */
tw_tensor *boc_in_randn_s (bcase *c, const shp *s);
tw_tensor *boc_in_uniform (bcase *c, double lo, double hi, const shp *s);

/* Shared by the generators of both files. */
typedef struct
{
  shp a, b, y;                      /* two operands and the broadcast result */
} boc_bcast_case;
extern const boc_bcast_case boc_bcast_cases[];
extern const guint boc_n_bcast_cases;
typedef struct
{
  shp x;
  int64_t axis;
  gboolean keep;
  shp y;
} boc_axis_case;
extern const boc_axis_case boc_argmax_cases[];   /* 3 cases: x, axis, keepdims, y */

gboolean boc_is (const char *a, const char *b);
tw_attrs *boc_attrs (bcase *c);                    /* c's attrs, made on first use */
tw_tensor *boc_push (bcase *c, tw_tensor *t);      /* append an input (c takes t) */
tw_tensor *boc_in_int (bcase *c, int64_t hi, const shp *s);          /* i64 in [0, hi) */
tw_tensor *boc_in_away_from_zero (bcase *c, const shp *s);
tw_tensor *boc_in_distinct (bcase *c, const shp *s);
void boc_want (bcase *c, const shp *s);            /* an output of shape s, float */
shp boc_ew_shape (bcase *c, int k);
void boc_random_broadcast (bcase *c, shp *a, shp *b, shp *y);
void boc_reduce_case (bcase *c, int k, shp *x, shp *y);

/* The tables: one entry per op (the harness fails an op that has none);
 * the second in backend-ops-cases-more.c. */
extern const op_case tw_boc_cases[];
extern const guint tw_boc_n_cases;
extern const op_case tw_boc_more_cases[];
extern const guint tw_boc_n_more_cases;

G_END_DECLS
