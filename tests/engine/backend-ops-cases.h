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

/* The table: one entry per op (the harness fails an op that has none). */
extern const op_case tw_boc_cases[];
extern const guint tw_boc_n_cases;

G_END_DECLS
