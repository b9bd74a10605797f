/* elementwise.c — broadcasting arithmetic (add, sub, mul, div, pow,
 * minimum, maximum), unary math (neg, scale, add_scalar, square, sqrt, exp,
 * log, reciprocal, abs, sign, floor, ceil, erf),
 * activations (relu, leaky_relu, gelu, sigmoid, tanh) and their internal
 * grad ops, plus fill_like / zeros_like.
 *
 * Kernels are written once per element type through macros expanded for
 * float and double (the broadcasting binary ops also for int32, int64 and
 * uint8: ONNX's integer arithmetic).  Every loop is a plain contiguous loop over restrict
 * pointers so gcc vectorises it; large loops are split across OpenMP threads
 * (element-wise results do not depend on the split). */
#include "engine/cpu/parallel.h"
#include "engine/op.h"

#include <math.h>
#include <string.h>
#include <tgmath.h>

/* The kernels never read floating-point exception flags.  Without this, gcc
 * treats each float compare in the clamps of tw_expf as possibly trapping,
 * keeps branches and does not vectorise the f32 exp / sigmoid / tanh / gelu
 * loops (measured 5-10x slower with gcc 12 at -O2). */
#pragma GCC optimize ("no-trapping-math")

/* Below this many elements the OpenMP fork/join (a few µs) costs more than
 * the loop itself (~1 ns per element). */
#define EW_PAR_MIN 32768

/* ---- vectorisable float math ------------------------------------------------ */

/* glibc's expf / tanhf / erff are scalar calls (5-15 ns each); these
 * branch-free forms let gcc vectorise the f32 loops.  f64 kernels (used by
 * the gradient checks) keep libm. */

/* exp: Cephes expf (S. Moshier): x = n ln2 + r with ln2 split in two parts,
 * a degree-5 polynomial for e^r, 2^n built in the exponent bits.  About 1 ulp
 * on [-87.3, 88.7]; above: +inf, below: 0 (denormal results are flushed). */
static inline float
tw_expf (float x)
{
  float c = x > 88.3762626647949f ? 88.3762626647949f : x;
  c = c < -87.3365447504f ? -87.3365447504f : c;
  c = x != x ? 0.0f : c;                            /* NaN: keep the int conversion defined */
  float fx = c * 1.44269504088896341f + 0.5f;
  int32_t n = (int32_t) fx;
  n -= fx < (float) n;                              /* floor */
  float r = c - (float) n * 0.693359375f + (float) n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  uint32_t bits = (uint32_t) (n + 127) << 23;
  float scale;
  memcpy (&scale, &bits, sizeof scale);
  float y = p * scale;
  y = x > 88.7228391f ? INFINITY : y;               /* ln (FLT_MAX) */
  y = x < -87.3365447504f ? 0.0f : y;               /* ln (FLT_MIN) */
  return x != x ? x : y;
}

/* tanh: odd Taylor series (to x^7, error < 4e-13 at |x| = 1/16) near 0,
 * (1 - e) / (1 + e) with e = exp (-2|x|) elsewhere: absolute error ~1e-7. */
static inline float
tw_tanhf (float x)
{
  float a = fabsf (x), x2 = x * x;
  float e = tw_expf (-2.0f * a);
  float big = copysignf ((1.0f - e) / (1.0f + e), x);
  float small = x * (1.0f + x2 * (-1.0f / 3 + x2 * (2.0f / 15 + x2 * (-17.0f / 315))));
  return a < 0.0625f ? small : big;
}

/* erf: Abramowitz & Stegun 7.1.26, |error| <= 1.5e-7 (about 1 f32 ulp of
 * values near 1; GELU multiplies it by x/2, so its relative error stays
 * ~1.5e-7). */
static inline float
tw_erff (float x)
{
  float a = fabsf (x);
  float t = 1.0f / (1.0f + 0.3275911f * a);
  float p = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f
            + t * (-1.453152027f + t * 1.061405429f))));
  return copysignf (1.0f - p * tw_expf (-a * a), x);
}

static inline double tw_exp_d (double x) { return exp (x); }
static inline double tw_tanh_d (double x) { return tanh (x); }
static inline double tw_erf_d (double x) { return erf (x); }

/* Type-generic forms for the kernel templates. */
#define EXP(x) _Generic ((x), float: tw_expf, default: tw_exp_d) (x)
#define TANH(x) _Generic ((x), float: tw_tanhf, default: tw_tanh_d) (x)
#define ERF(x) _Generic ((x), float: tw_erff, default: tw_erf_d) (x)

static inline int
ew_threads (const tw_kctx *ctx)
{
  return ctx && ctx->num_threads > 0 ? ctx->num_threads : 1;
}

static gboolean
check_float (const tw_tinfo *t, const char *what, GError **error)
{
  if (tw_dtype_is_float (t->dtype))
    return TRUE;
  g_autofree char *s = tw_tinfo_to_string (t);
  g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_DTYPE, "expects a float %s (f32 or f64), got %s", what,
               s);
  return FALSE;
}

/* ---- broadcasting binary ops ------------------------------------------- */


void
tw_broadcast_strides (const tw_tensor *x, const tw_tensor *y, int64_t *s)
{
  int lead = y->ndim - x->ndim;
  int64_t st = 1;
  for (int d = y->ndim - 1; d >= 0; d--)
    {
      int64_t dim = d < lead ? 1 : x->shape[d - lead];
      s[d] = dim == 1 ? 0 : st;
      st *= dim;
    }
}

void
tw_bcast_plan_init (tw_bcast_plan *p, const tw_tensor *a, const tw_tensor *b, const tw_tensor *y)
{
  int64_t sa[TW_MAX_DIMS], sb[TW_MAX_DIMS];
  tw_broadcast_strides (a, y, sa);
  tw_broadcast_strides (b, y, sb);
  p->nd = 0;
  for (int d = 0; d < y->ndim; d++)
    {
      int64_t n = y->shape[d];
      if (n == 1)
        continue;
      int l = p->nd - 1;
      if (l >= 0 && p->sa[l] == sa[d] * n && p->sb[l] == sb[d] * n)
        {
          p->shape[l] *= n;
          p->sa[l] = sa[d];
          p->sb[l] = sb[d];
        }
      else
        {
          p->shape[p->nd] = n;
          p->sa[p->nd] = sa[d];
          p->sb[p->nd] = sb[d];
          p->nd++;
        }
    }
  if (p->nd == 0)
    {
      p->nd = 1;
      p->shape[0] = 1;
      p->sa[0] = p->sb[0] = 0;
    }
}

/* Row kernel: y[i] = OP (a[i * sa], b[i * sb]) for i < n, with sa, sb in {0, 1}
 * (the inner dim of a plan is contiguous or broadcast); the three loops are
 * vectorisable. */
#define BINARY_KERNELS(NAME, T, EXPR)                                                        \
  static void NAME##_row_##T (int64_t n, const T *restrict a, int64_t sa, const T *restrict b, \
                              int64_t sb, T *restrict y)                                    \
  {                                                                                         \
    if (sa && sb)                                                                           \
      _Pragma ("omp simd")                                                                  \
      for (int64_t i = 0; i < n; i++)                                                       \
        {                                                                                   \
          const T x0 = a[i], x1 = b[i];                                                     \
          y[i] = (EXPR);                                                                    \
        }                                                                                   \
    else if (sa)                                                                            \
      {                                                                                     \
        const T x1 = b[0];                                                                  \
        _Pragma ("omp simd")                                                                \
        for (int64_t i = 0; i < n; i++)                                                     \
          {                                                                                 \
            const T x0 = a[i];                                                              \
            y[i] = (EXPR);                                                                  \
          }                                                                                 \
      }                                                                                     \
    else if (sb)                                                                            \
      {                                                                                     \
        const T x0 = a[0];                                                                  \
        _Pragma ("omp simd")                                                                \
        for (int64_t i = 0; i < n; i++)                                                     \
          {                                                                                 \
            const T x1 = b[i];                                                              \
            y[i] = (EXPR);                                                                  \
          }                                                                                 \
      }                                                                                     \
    else                                                                                    \
      {                                                                                     \
        const T x0 = a[0], x1 = b[0];                                                       \
        _Pragma ("omp simd")                                                                \
        for (int64_t i = 0; i < n; i++)                                                     \
          y[i] = (EXPR);                                                                    \
      }                                                                                     \
  }                                                                                         \
  /* y: plan's shape (contiguous); a, b: their own contiguous shapes. */                    \
  static void NAME##_plan_##T (const tw_bcast_plan *p, const T *a, const T *b, T *y, int nt)   \
  {                                                                                         \
    int64_t inner = p->shape[p->nd - 1], rows = 1;                                          \
    int64_t sa = p->sa[p->nd - 1], sb = p->sb[p->nd - 1];                                   \
    for (int d = 0; d < p->nd - 1; d++)                                                     \
      rows *= p->shape[d];                                                                  \
    if (rows == 1)                                                                          \
      {                                                                                     \
        /* One long row: split it in blocks of 4096 (a few pages per block). */            \
        int64_t nblk = (inner + 4095) / 4096;                                               \
        TW_PARALLEL_FOR (inner > EW_PAR_MIN, nt, k, nblk, {                                 \
            int64_t s = k * 4096, n = MIN (4096, inner - s);                                \
            NAME##_row_##T (n, a + s * sa, sa, b + s * sb, sb, y + s);                      \
          });                                                                               \
        return;                                                                             \
      }                                                                                     \
    TW_PARALLEL_FOR (rows * inner > EW_PAR_MIN, nt, r, rows, {                              \
        int64_t oa, ob;                                                                     \
        tw_bcast_row_offsets (p, r, &oa, &ob);                                                 \
        NAME##_row_##T (inner, a + oa, sa, b + ob, sb, y + r * inner);                      \
      });                                                                                   \
  }

#define BINARY_OP(NAME, EXPR)                                                               \
  BINARY_KERNELS (NAME, float, EXPR)                                                        \
  BINARY_KERNELS (NAME, double, EXPR)                                                       \
  BINARY_KERNELS (NAME, int32_t, EXPR)                                                      \
  BINARY_KERNELS (NAME, int64_t, EXPR)                                                      \
  BINARY_KERNELS (NAME, uint8_t, EXPR)                                                      \
  /* in[0], in[1]: broadcastable, one element type; out[0]: the broadcast shape. */         \
  static gboolean NAME##_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, \
                                  int n_in, tw_tensor *const *out, GError **error)          \
  {                                                                                         \
    tw_bcast_plan p;                                                                           \
    if (tw_tensor_numel (out[0]) == 0)                                                      \
      return TRUE;                                                                          \
    tw_bcast_plan_init (&p, in[0], in[1], out[0]);                                             \
    switch (out[0]->dtype)                                                                  \
      {                                                                                     \
      case TW_F32:                                                                          \
        NAME##_plan_float (&p, tw_tensor_f32 (in[0]), tw_tensor_f32 (in[1]),                \
                           tw_tensor_f32 (out[0]), ew_threads (ctx));                       \
        break;                                                                              \
      case TW_F64:                                                                          \
        NAME##_plan_double (&p, tw_tensor_f64 (in[0]), tw_tensor_f64 (in[1]),               \
                            tw_tensor_f64 (out[0]), ew_threads (ctx));                      \
        break;                                                                              \
      case TW_I32:                                                                          \
        NAME##_plan_int32_t (&p, tw_tensor_i32 (in[0]), tw_tensor_i32 (in[1]),              \
                             tw_tensor_i32 (out[0]), ew_threads (ctx));                     \
        break;                                                                              \
      case TW_I64:                                                                          \
        NAME##_plan_int64_t (&p, tw_tensor_i64 (in[0]), tw_tensor_i64 (in[1]),              \
                             tw_tensor_i64 (out[0]), ew_threads (ctx));                     \
        break;                                                                              \
      default:                                                                              \
        NAME##_plan_uint8_t (&p, tw_tensor_u8 (in[0]), tw_tensor_u8 (in[1]),                \
                             tw_tensor_u8 (out[0]), ew_threads (ctx));                      \
        break;                                                                              \
      }                                                                                     \
    return TRUE;                                                                            \
  }

/* Integer division as C's (truncating, ONNX's Div), defined everywhere: a
 * zero divisor gives 0 and INT_MIN / -1 wraps (both undefined in C). */
static inline int64_t
tw_idiv (int64_t a, int64_t b)
{
  return b == 0 ? 0 : b == -1 ? (int64_t) (0 - (uint64_t) a) : a / b;
}
#define DIV(a, b) _Generic ((a), float: (a) / (b), double: (a) / (b), default: tw_idiv ((a), (b)))
/* Signed integer +, -, * wrap (through unsigned: overflow is undefined in C). */
#define WRAP(a, op, b)                                                                      \
  _Generic ((a), int32_t: (int32_t) ((uint32_t) (a) op (uint32_t) (b)),                     \
            int64_t: (int64_t) ((uint64_t) (a) op (uint64_t) (b)), default: (a) op (b))

BINARY_OP (add, WRAP (x0, +, x1))
BINARY_OP (sub, WRAP (x0, -, x1))
BINARY_OP (mul, WRAP (x0, *, x1))
BINARY_OP (div, DIV (x0, x1))
BINARY_OP (pow, pow (x0, x1))
BINARY_OP (minimum, x0 <= x1 ? x0 : x1)
BINARY_OP (maximum, x0 >= x1 ? x0 : x1)
BINARY_OP (ge_mask, (__typeof__ (x0)) (x0 >= x1))

/* Any element type, the same for both (integers as C computes them in
 * int, stored back wrapping for u8; ONNX's integer Add, Div, Max ...). */
static gboolean
binary_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  if (in[0].dtype != in[1].dtype)
    {
      g_autofree char *sa = tw_tinfo_to_string (&in[0]);
      g_autofree char *sb = tw_tinfo_to_string (&in[1]);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_DTYPE,
                   "inputs must have the same element type, got %s and %s", sa, sb);
      return FALSE;
    }
  return tw_infer_broadcast (a, in, n_in, out, error);
}

/* The gradient g (shaped like the output) reduced to the shape of x: g itself
 * when the shapes already match, else sum_to (g, x). */
static tw_val *
reduce_to (tw_emit *e, tw_val *g, tw_val *x)
{
  const tw_tinfo *gi = tw_val_info (e, g), *xi = tw_val_info (e, x);
  gboolean same = gi->ndim == xi->ndim;
  for (int d = 0; same && d < gi->ndim; d++)
    same = gi->dims[d] == xi->dims[d];
  return same ? g : tw_emit2 (e, "sum_to", NULL, g, x);
}

/* Emit a one-float-attribute op (scale: alpha, add_scalar: value). */
static tw_val *
emit_f (tw_emit *e, const char *op, const char *attr, double v, tw_val *x)
{
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_float (a, attr, v);
  tw_val *y = tw_emit1 (e, op, a, x);
  tw_attrs_free (a);
  return y;
}

static gboolean
add_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
              tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  for (int i = 0; i < 2; i++)
    if (needs[i])
      gin[i] = reduce_to (e, gout[0], in[i]);
  return TRUE;
}

static gboolean
sub_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
              tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  if (needs[0])
    gin[0] = reduce_to (e, gout[0], in[0]);
  if (needs[1])   /* reduce first: the negation then runs on the smaller tensor */
    gin[1] = tw_emit1 (e, "neg", NULL, reduce_to (e, gout[0], in[1]));
  return TRUE;
}

static gboolean
mul_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
              tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  if (needs[0])
    gin[0] = reduce_to (e, tw_emit2 (e, "mul", NULL, gout[0], in[1]), in[0]);
  if (needs[1])
    gin[1] = reduce_to (e, tw_emit2 (e, "mul", NULL, gout[0], in[0]), in[1]);
  return TRUE;
}

/* y = a / b: da = dy / b, db = -dy * y / b. */
static gboolean
div_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
              tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  tw_val *ga = tw_emit2 (e, "div", NULL, gout[0], in[1]);
  if (needs[0])
    gin[0] = reduce_to (e, ga, in[0]);
  if (needs[1])
    gin[1] = tw_emit1 (e, "neg", NULL, reduce_to (e, tw_emit2 (e, "mul", NULL, ga, out[0]), in[1]));
  return TRUE;
}

/* y = a^b: da = dy b a^(b - 1), db = dy y log (a) (a > 0 where b is
 * differentiated, as for PyTorch's pow). */
static gboolean
pow_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
              tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  if (needs[0])
    {
      tw_val *p = tw_emit2 (e, "pow", NULL, in[0], emit_f (e, "add_scalar", "value", -1.0, in[1]));
      tw_val *d = tw_emit2 (e, "mul", NULL, gout[0], tw_emit2 (e, "mul", NULL, in[1], p));
      gin[0] = reduce_to (e, d, in[0]);
    }
  if (needs[1])
    {
      tw_val *d = tw_emit2 (e, "mul", NULL, gout[0],
                            tw_emit2 (e, "mul", NULL, out[0], tw_emit1 (e, "log", NULL, in[0])));
      gin[1] = reduce_to (e, d, in[1]);
    }
  return TRUE;
}

/* minimum / maximum: dy goes to the input that was chosen, to a on ties
 * (m = ge_mask (a, b) for maximum, ge_mask (b, a) for minimum). */
static gboolean
minmax_backward (tw_emit *e, tw_val *const *in, tw_val *const *gout, const gboolean *needs,
                 tw_val **gin, gboolean is_max)
{
  tw_val *m = is_max ? tw_emit2 (e, "ge_mask", NULL, in[0], in[1])
                     : tw_emit2 (e, "ge_mask", NULL, in[1], in[0]);
  tw_val *da = tw_emit2 (e, "mul", NULL, gout[0], m);
  if (needs[0])
    gin[0] = reduce_to (e, da, in[0]);
  if (needs[1])
    gin[1] = reduce_to (e, tw_emit2 (e, "sub", NULL, gout[0], da), in[1]);
  return TRUE;
}

static gboolean
minimum_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
                  tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  return minmax_backward (e, in, gout, needs, gin, FALSE);
}

static gboolean
maximum_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
                  tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  return minmax_backward (e, in, gout, needs, gin, TRUE);
}

/* Broadcast cost: one flop per output element; reads counted per input. */
static void
cost_1flop (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
            tw_cost *cost)
{
  tw_cost_elementwise (in, n_in, out, n_out, 1, cost);
}

/* Transcendental ops: ~10-20 flops each in libm's vector forms; 10 is the
 * figure the profiler uses for exp/log/erf/tanh. */
static void
cost_10flops (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
              tw_cost *cost)
{
  tw_cost_elementwise (in, n_in, out, n_out, 10, cost);
}

static const tw_attr_spec no_attrs[] = { { NULL } };
static const char *const names_ab[] = { "a", "b", NULL };
static const char *const names_x[] = { "x", NULL };
static const char *const names_x_dy[] = { "x", "dy", NULL };
static const char *const names_y_dy[] = { "y", "dy", NULL };

#define DEF_BINARY(NAME, ONNX, DOC)                                                          \
  static const tw_op_def NAME##_def = {                                                     \
    .name = #NAME, .category = "Math", .doc = DOC, .attrs = no_attrs, .min_inputs = 2,      \
    .max_inputs = 2, .input_names = names_ab, .n_outputs = 1, .infer = binary_infer,        \
    .forward = NAME##_forward, .backward = NAME##_backward, .cost = cost_1flop,             \
    .onnx_name = ONNX, .flags = TW_OP_ELEMENTWISE,                                          \
  };

DEF_BINARY (add, "Add", "a + b with NumPy broadcasting")
DEF_BINARY (sub, "Sub", "a - b with NumPy broadcasting")
DEF_BINARY (mul, "Mul", "a * b (element-wise) with NumPy broadcasting")
DEF_BINARY (div, "Div", "a / b (element-wise) with NumPy broadcasting")
DEF_BINARY (pow, "Pow", "a ^ b (element-wise) with NumPy broadcasting")
DEF_BINARY (minimum, "Min", "the smaller of a and b with NumPy broadcasting")
DEF_BINARY (maximum, "Max", "the larger of a and b with NumPy broadcasting")
static const tw_op_def ge_mask_def = {
  .name = "ge_mask", .category = "Math", .doc = "1 where a >= b, else 0 (minimum's and maximum's "
  "gradient mask)", .attrs = no_attrs, .min_inputs = 2, .max_inputs = 2, .input_names = names_ab,
  .n_outputs = 1, .infer = binary_infer, .forward = ge_mask_forward, .backward = tw_zero_backward,
  .cost = cost_1flop, .flags = TW_OP_ELEMENTWISE | TW_OP_INTERNAL,
};

/* ---- unary ops ----------------------------------------------------------- */

/* y[i] = EXPR (x) with one float parameter p (an attribute; unused by most). */
#define UNARY_KERNEL(NAME, TY, EXPR)                                                          \
  static void NAME##_k_##TY (int64_t n, const TY *restrict xs, TY *restrict y, double pd,   \
                             int nt)                                                        \
  {                                                                                         \
    typedef TY T;                                                                           \
    const T p = (T) pd;                                                                     \
    (void) p;                                                                               \
    /* No OpenMP region at all when serial (engine/cpu/parallel.h says why). */             \
    if (nt > 1 && n > EW_PAR_MIN && (nt = tw_team_threads (nt)) > 1)                        \
      {                                                                                     \
        tw_team_region r_;                                                                  \
        tw_team_begin (&r_, nt);                                                            \
        _Pragma ("omp parallel num_threads (nt)")                                           \
        {                                                                                   \
          _Pragma ("omp for simd schedule (static) nowait")                                 \
          for (int64_t i = 0; i < n; i++)                                                   \
            {                                                                               \
              const T x = xs[i];                                                            \
              y[i] = (EXPR);                                                                \
            }                                                                               \
          tw_team_arrive (&r_);                                                             \
        }                                                                                   \
        tw_team_end (&r_);                                                                  \
        return;                                                                             \
      }                                                                                     \
    _Pragma ("omp simd")                                                                    \
    for (int64_t i = 0; i < n; i++)                                                         \
      {                                                                                     \
        const T x = xs[i];                                                                  \
        y[i] = (EXPR);                                                                      \
      }                                                                                     \
  }

/* PARAM: the attribute read into p, or NULL. */
#define UNARY_OP(NAME, PARAM, PDEFAULT, EXPR)                                                \
  UNARY_KERNEL (NAME, float, EXPR)                                                          \
  UNARY_KERNEL (NAME, double, EXPR)                                                         \
  /* in[0]: any shape; out[0]: same shape. */                                               \
  static gboolean NAME##_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, \
                                  int n_in, tw_tensor *const *out, GError **error)          \
  {                                                                                         \
    const char *pname = PARAM;                                                              \
    double pv = pname ? tw_attrs_get_float (a, pname, PDEFAULT) : 0;                        \
    int64_t n = tw_tensor_numel (out[0]);                                                   \
    if (out[0]->dtype == TW_F32)                                                            \
      NAME##_k_float (n, tw_tensor_f32 (in[0]), tw_tensor_f32 (out[0]), pv, ew_threads (ctx)); \
    else                                                                                    \
      NAME##_k_double (n, tw_tensor_f64 (in[0]), tw_tensor_f64 (out[0]), pv, ew_threads (ctx)); \
    return TRUE;                                                                            \
  }

/* sqrt(2/pi) and the cubic coefficient of the tanh approximation of GELU
 * (Hendrycks & Gimpel 2016; PyTorch's approximate="tanh"). */
#define GELU_K 0.7978845608028654
#define GELU_C 0.044715

UNARY_OP (neg, NULL, 0, -x)
UNARY_OP (scale, "alpha", 1.0, p * x)
UNARY_OP (add_scalar, "value", 0.0, x + p)
UNARY_OP (square, NULL, 0, x * x)
UNARY_OP (sqrt, NULL, 0, sqrt (x))
UNARY_OP (exp, NULL, 0, EXP (x))
UNARY_OP (log, NULL, 0, log (x))
UNARY_OP (reciprocal, NULL, 0, (T) 1 / x)
UNARY_OP (relu, NULL, 0, x > 0 ? x : (T) 0)
UNARY_OP (leaky_relu, "negative_slope", 0.01, x > 0 ? x : p * x)
UNARY_OP (gelu_erf, NULL, 0, (T) 0.5 * x * ((T) 1 + ERF (x * (T) M_SQRT1_2)))
UNARY_OP (gelu_tanh, NULL, 0,
          (T) 0.5 * x * ((T) 1 + TANH ((T) GELU_K * (x + (T) GELU_C * x * x * x))))
UNARY_OP (sigmoid, NULL, 0, (T) 1 / ((T) 1 + EXP (-x)))
UNARY_OP (tanh, NULL, 0, TANH (x))
UNARY_OP (abs, NULL, 0, fabs (x))
UNARY_OP (sign, NULL, 0, x > 0 ? (T) 1 : (x < 0 ? (T) -1 : (T) 0))
UNARY_OP (floor, NULL, 0, floor (x))
UNARY_OP (ceil, NULL, 0, ceil (x))
UNARY_OP (erf, NULL, 0, ERF (x))

static gboolean
gelu_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
              tw_tensor *const *out, GError **error)
{
  if (g_strcmp0 (tw_attrs_get_string (a, "approximate", "none"), "tanh") == 0)
    return gelu_tanh_forward (ctx, a, in, n_in, out, error);
  return gelu_erf_forward (ctx, a, in, n_in, out, error);
}

static gboolean
fill_like_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                   tw_tensor *const *out, GError **error)
{
  tw_tensor_fill (out[0], tw_attrs_get_float (a, "value", 0.0));
  return TRUE;
}

/* Any dtype: all-zero bytes are 0 for every element type. */
static gboolean
zeros_like_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                    tw_tensor *const *out, GError **error)
{
  memset (tw_tensor_data (out[0]), 0, tw_tensor_nbytes (out[0]));
  return TRUE;
}

static gboolean
unary_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  if (!check_float (&in[0], "input", error))
    return FALSE;
  out[0] = in[0];
  return TRUE;
}

/* Two same-shaped float inputs (x or y, dy) → one output of that shape. */
static gboolean
grad_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  if (!check_float (&in[0], "input", error))
    return FALSE;
  if (!tw_tinfo_equal (&in[0], &in[1]))
    {
      g_autofree char *s0 = tw_tinfo_to_string (&in[0]);
      g_autofree char *s1 = tw_tinfo_to_string (&in[1]);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "expects the gradient to match the input: %s, got %s", s0, s1);
      return FALSE;
    }
  out[0] = in[0];
  return TRUE;
}

static gboolean
fill_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  out[0] = in[0];
  return TRUE;
}

/* Backward rules of the unary ops.  y = out[0], dy = gout[0]. */

static gboolean
neg_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
              tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  gin[0] = tw_emit1 (e, "neg", NULL, gout[0]);
  return TRUE;
}

static gboolean
scale_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
                tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  gin[0] = emit_f (e, "scale", "alpha", tw_attrs_get_float (a, "alpha", 1.0), gout[0]);
  return TRUE;
}

static gboolean
add_scalar_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                     tw_val *const *out, tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  gin[0] = gout[0];
  return TRUE;
}

/* d(x^2) = 2 x dy */
static gboolean
square_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
                 tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  gin[0] = emit_f (e, "scale", "alpha", 2.0, tw_emit2 (e, "mul", NULL, gout[0], in[0]));
  return TRUE;
}

/* d sqrt(x) = dy / (2 y) */
static gboolean
sqrt_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
               tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  gin[0] = tw_emit2 (e, "div", NULL, emit_f (e, "scale", "alpha", 0.5, gout[0]), out[0]);
  return TRUE;
}

/* d exp(x) = dy y */
static gboolean
exp_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
              tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  gin[0] = tw_emit2 (e, "mul", NULL, gout[0], out[0]);
  return TRUE;
}

/* d log(x) = dy / x */
static gboolean
log_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
              tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  gin[0] = tw_emit2 (e, "div", NULL, gout[0], in[0]);
  return TRUE;
}

/* d (1/x) = -dy y^2 */
static gboolean
reciprocal_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                     tw_val *const *out, tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  tw_val *t = tw_emit2 (e, "mul", NULL, gout[0], tw_emit1 (e, "square", NULL, out[0]));
  gin[0] = tw_emit1 (e, "neg", NULL, t);
  return TRUE;
}

/* d |x| = dy sign (x) */
static gboolean
abs_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
              tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  gin[0] = tw_emit2 (e, "mul", NULL, gout[0], tw_emit1 (e, "sign", NULL, in[0]));
  return TRUE;
}

/* d erf (x) = dy 2 / sqrt (pi) e^(-x^2) */
static gboolean
erf_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
              tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  tw_val *g = tw_emit1 (e, "exp", NULL, tw_emit1 (e, "neg", NULL, tw_emit1 (e, "square", NULL, in[0])));
  gin[0] = tw_emit2 (e, "mul", NULL, gout[0], emit_f (e, "scale", "alpha", M_2_SQRTPI, g));
  return TRUE;
}

/* Activations: forward input x (relu, leaky_relu, gelu) or output y
 * (sigmoid, tanh) goes to the grad op with dy; attrs pass through. */
#define ACT_BACKWARD(NAME, SAVED)                                                            \
  static gboolean NAME##_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, \
                                   tw_val *const *out, tw_val *const *gout,                \
                                   const gboolean *needs, tw_val **gin)                    \
  {                                                                                         \
    gin[0] = tw_emit2 (e, #NAME "_grad", a, SAVED, gout[0]);                                \
    return TRUE;                                                                            \
  }

ACT_BACKWARD (relu, in[0])
ACT_BACKWARD (leaky_relu, in[0])
ACT_BACKWARD (gelu, in[0])
ACT_BACKWARD (sigmoid, out[0])
ACT_BACKWARD (tanh, out[0])

/* ---- activation grad ops --------------------------------------------------- */

/* dx[i] = EXPR (s = saved x or y, d = dy, p = attribute). */
#define GRAD_KERNEL(NAME, TY, EXPR)                                                           \
  static void NAME##_k_##TY (int64_t n, const TY *restrict ss, const TY *restrict ds,       \
                             TY *restrict dx, double pd, int nt)                            \
  {                                                                                         \
    typedef TY T;                                                                           \
    const T p = (T) pd;                                                                     \
    (void) p;                                                                               \
    if (nt > 1 && n > EW_PAR_MIN && (nt = tw_team_threads (nt)) > 1)                        \
      {                                                                                     \
        tw_team_region r_;                                                                  \
        tw_team_begin (&r_, nt);                                                            \
        _Pragma ("omp parallel num_threads (nt)")                                           \
        {                                                                                   \
          _Pragma ("omp for simd schedule (static) nowait")                                 \
          for (int64_t i = 0; i < n; i++)                                                   \
            {                                                                               \
              const T s = ss[i], d = ds[i];                                                 \
              dx[i] = (EXPR);                                                               \
            }                                                                               \
          tw_team_arrive (&r_);                                                             \
        }                                                                                   \
        tw_team_end (&r_);                                                                  \
        return;                                                                             \
      }                                                                                     \
    _Pragma ("omp simd")                                                                    \
    for (int64_t i = 0; i < n; i++)                                                         \
      {                                                                                     \
        const T s = ss[i], d = ds[i];                                                       \
        dx[i] = (EXPR);                                                                     \
      }                                                                                     \
  }

#define GRAD_OP(NAME, PARAM, PDEFAULT, EXPR)                                                 \
  GRAD_KERNEL (NAME, float, EXPR)                                                           \
  GRAD_KERNEL (NAME, double, EXPR)                                                          \
  /* in[0]: x or y; in[1]: dy, same shape; out[0]: dx. */                                   \
  static gboolean NAME##_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, \
                                  int n_in, tw_tensor *const *out, GError **error)          \
  {                                                                                         \
    const char *pname = PARAM;                                                              \
    double pv = pname ? tw_attrs_get_float (a, pname, PDEFAULT) : 0;                        \
    int64_t n = tw_tensor_numel (out[0]);                                                   \
    if (out[0]->dtype == TW_F32)                                                            \
      NAME##_k_float (n, tw_tensor_f32 (in[0]), tw_tensor_f32 (in[1]), tw_tensor_f32 (out[0]), \
                      pv, ew_threads (ctx));                                                \
    else                                                                                    \
      NAME##_k_double (n, tw_tensor_f64 (in[0]), tw_tensor_f64 (in[1]),                     \
                       tw_tensor_f64 (out[0]), pv, ew_threads (ctx));                       \
    return TRUE;                                                                            \
  }

/* 1/sqrt(2 pi), for the Gaussian density in the exact GELU derivative. */
#define INV_SQRT_2PI 0.3989422804014327

GRAD_OP (relu_grad, NULL, 0, s > 0 ? d : (T) 0)
GRAD_OP (leaky_relu_grad, "negative_slope", 0.01, s > 0 ? d : p * d)
/* d/dx [x Phi(x)] = Phi(x) + x phi(x) */
GRAD_OP (gelu_erf_grad, NULL, 0,
         d * ((T) 0.5 * ((T) 1 + ERF (s * (T) M_SQRT1_2))
              + s * (T) INV_SQRT_2PI * EXP ((T) -0.5 * s * s)))
/* t = tanh(k (x + c x^3)): d/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2) */
GRAD_OP (gelu_tanh_grad, NULL, 0,
         d * ({
           const T t = TANH ((T) GELU_K * (s + (T) GELU_C * s * s * s));
           (T) 0.5 * ((T) 1 + t)
             + (T) 0.5 * s * ((T) 1 - t * t) * (T) GELU_K * ((T) 1 + (T) (3 * GELU_C) * s * s);
         }))
GRAD_OP (sigmoid_grad, NULL, 0, d * s * ((T) 1 - s))
GRAD_OP (tanh_grad, NULL, 0, d * ((T) 1 - s * s))

static gboolean
gelu_grad_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                   tw_tensor *const *out, GError **error)
{
  if (g_strcmp0 (tw_attrs_get_string (a, "approximate", "none"), "tanh") == 0)
    return gelu_tanh_grad_forward (ctx, a, in, n_in, out, error);
  return gelu_erf_grad_forward (ctx, a, in, n_in, out, error);
}

/* Backward of the piecewise-linear grad ops: linear in dy with the same
 * mask, zero in x (almost everywhere). */
static gboolean
relu_grad_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                    tw_val *const *out, tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  if (needs[0])
    gin[0] = tw_emit1 (e, "zeros_like", NULL, in[0]);
  if (needs[1])
    gin[1] = tw_emit2 (e, "relu_grad", NULL, in[0], gout[0]);
  return TRUE;
}

static gboolean
leaky_relu_grad_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                          tw_val *const *out, tw_val *const *gout, const gboolean *needs,
                          tw_val **gin)
{
  if (needs[0])
    gin[0] = tw_emit1 (e, "zeros_like", NULL, in[0]);
  if (needs[1])
    gin[1] = tw_emit2 (e, "leaky_relu_grad", a, in[0], gout[0]);
  return TRUE;
}

/* s = y, dx = d y (1 - y): d/dy = g d (1 - 2 y), d/dd = sigmoid_grad (y, g). */
static gboolean
sigmoid_grad_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                       tw_val *const *out, tw_val *const *gout, const gboolean *needs,
                       tw_val **gin)
{
  if (needs[0])
    {
      tw_val *f = emit_f (e, "add_scalar", "value", 1.0, emit_f (e, "scale", "alpha", -2.0, in[0]));
      gin[0] = tw_emit2 (e, "mul", NULL, tw_emit2 (e, "mul", NULL, gout[0], in[1]), f);
    }
  if (needs[1])
    gin[1] = tw_emit2 (e, "sigmoid_grad", NULL, in[0], gout[0]);
  return TRUE;
}

/* s = y, dx = d (1 - y^2): d/dy = -2 y d g, d/dd = tanh_grad (y, g). */
static gboolean
tanh_grad_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in,
                    tw_val *const *out, tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  if (needs[0])
    {
      tw_val *t = tw_emit2 (e, "mul", NULL, tw_emit2 (e, "mul", NULL, gout[0], in[1]), in[0]);
      gin[0] = emit_f (e, "scale", "alpha", -2.0, t);
    }
  if (needs[1])
    gin[1] = tw_emit2 (e, "tanh_grad", NULL, in[0], gout[0]);
  return TRUE;
}

static void
cost_0flops (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
             tw_cost *cost)
{
  tw_cost_elementwise (in, 0, out, n_out, 0, cost);
}

static void
cost_2flops (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
             tw_cost *cost)
{
  tw_cost_elementwise (in, n_in, out, n_out, 2, cost);
}

static const tw_attr_spec scale_attrs[] = {
  { "alpha", TW_ATTR_FLOAT, "1.0", FALSE, "factor: y = alpha * x" },
  { NULL }
};
static const tw_attr_spec value_attrs[] = {
  { "value", TW_ATTR_FLOAT, "0.0", FALSE, "the constant" },
  { NULL }
};
static const tw_attr_spec leaky_attrs[] = {
  { "negative_slope", TW_ATTR_FLOAT, "0.01", FALSE, "slope for x < 0" },
  { NULL }
};
static const char *const gelu_choices[] = { "none", "tanh", NULL };
static const tw_attr_spec gelu_attrs[] = {
  { "approximate", TW_ATTR_STRING, "\"none\"", FALSE,
    "\"none\": x Phi(x) with erf; \"tanh\": the tanh approximation", gelu_choices },
  { NULL }
};

#define DEF_UNARY(NAME, CAT, DOC, ATTRS, INFER, BWD, COST, ONNX, FLAGS)                      \
  static const tw_op_def NAME##_def = {                                                     \
    .name = #NAME, .category = CAT, .doc = DOC, .attrs = ATTRS, .min_inputs = 1,            \
    .max_inputs = 1, .input_names = names_x, .n_outputs = 1, .infer = INFER,                \
    .forward = NAME##_forward, .backward = BWD, .cost = COST, .onnx_name = ONNX,            \
    .flags = TW_OP_ELEMENTWISE | (FLAGS),                                                   \
  };

DEF_UNARY (neg, "Math", "-x", no_attrs, unary_infer, neg_backward, cost_1flop, "Neg", 0)
DEF_UNARY (scale, "Math", "alpha * x", scale_attrs, unary_infer, scale_backward, cost_1flop,
           NULL, 0)
DEF_UNARY (add_scalar, "Math", "x + value", value_attrs, unary_infer, add_scalar_backward,
           cost_1flop, NULL, 0)
DEF_UNARY (square, "Math", "x * x", no_attrs, unary_infer, square_backward, cost_1flop, NULL, 0)
DEF_UNARY (sqrt, "Math", "square root", no_attrs, unary_infer, sqrt_backward, cost_10flops,
           "Sqrt", 0)
DEF_UNARY (exp, "Math", "e^x", no_attrs, unary_infer, exp_backward, cost_10flops, "Exp", 0)
DEF_UNARY (log, "Math", "natural logarithm", no_attrs, unary_infer, log_backward, cost_10flops,
           "Log", 0)
DEF_UNARY (reciprocal, "Math", "1 / x", no_attrs, unary_infer, reciprocal_backward, cost_1flop,
           "Reciprocal", 0)
DEF_UNARY (relu, "Activation", "max(x, 0)", no_attrs, unary_infer, relu_backward, cost_1flop,
           "Relu", 0)
DEF_UNARY (leaky_relu, "Activation", "x if x > 0 else negative_slope * x", leaky_attrs,
           unary_infer, leaky_relu_backward, cost_2flops, "LeakyRelu", 0)
DEF_UNARY (gelu, "Activation", "Gaussian error linear unit, x Phi(x)", gelu_attrs, unary_infer,
           gelu_backward, cost_10flops, "Gelu", 0)
DEF_UNARY (sigmoid, "Activation", "1 / (1 + e^-x)", no_attrs, unary_infer, sigmoid_backward,
           cost_10flops, "Sigmoid", 0)
DEF_UNARY (tanh, "Activation", "hyperbolic tangent", no_attrs, unary_infer, tanh_backward,
           cost_10flops, "Tanh", 0)
DEF_UNARY (abs, "Math", "|x|", no_attrs, unary_infer, abs_backward, cost_1flop, "Abs", 0)
/* sign, floor and ceil are piecewise constant: zero gradients. */
DEF_UNARY (sign, "Math", "-1, 0 or 1 by the sign of x", no_attrs, unary_infer, tw_zero_backward,
           cost_1flop, "Sign", 0)
DEF_UNARY (floor, "Math", "largest integer <= x", no_attrs, unary_infer, tw_zero_backward,
           cost_1flop, "Floor", 0)
DEF_UNARY (ceil, "Math", "smallest integer >= x", no_attrs, unary_infer, tw_zero_backward,
           cost_1flop, "Ceil", 0)
DEF_UNARY (erf, "Math", "the error function", no_attrs, unary_infer, erf_backward, cost_10flops,
           "Erf", 0)
DEF_UNARY (fill_like, "Math", "a tensor shaped like x, every element = value", value_attrs,
           unary_infer, tw_zero_backward, cost_0flops, NULL, TW_OP_INTERNAL)
DEF_UNARY (zeros_like, "Math", "zeros shaped like x", no_attrs, fill_infer, tw_zero_backward,
           cost_0flops, NULL, TW_OP_INTERNAL)

#define DEF_GRAD(NAME, DOC, NAMES, ATTRS, BWD, COST)                                         \
  static const tw_op_def NAME##_def = {                                                     \
    .name = #NAME, .category = "Activation", .doc = DOC, .attrs = ATTRS, .min_inputs = 2,   \
    .max_inputs = 2, .input_names = NAMES, .n_outputs = 1, .infer = grad_infer,             \
    .forward = NAME##_forward, .backward = BWD, .cost = COST, .onnx_name = NULL,            \
    .flags = TW_OP_ELEMENTWISE | TW_OP_INTERNAL,                                            \
  };

DEF_GRAD (relu_grad, "dy where x > 0, else 0", names_x_dy, no_attrs, relu_grad_backward,
          cost_1flop)
DEF_GRAD (leaky_relu_grad, "dy where x > 0, else negative_slope * dy", names_x_dy, leaky_attrs,
          leaky_relu_grad_backward, cost_2flops)
DEF_GRAD (gelu_grad, "dy * gelu'(x)", names_x_dy, gelu_attrs, NULL, cost_10flops)
DEF_GRAD (sigmoid_grad, "dy * y * (1 - y) from the sigmoid's output y", names_y_dy, no_attrs,
          sigmoid_grad_backward, cost_2flops)
DEF_GRAD (tanh_grad, "dy * (1 - y^2) from the tanh's output y", names_y_dy, no_attrs,
          tanh_grad_backward, cost_2flops)

void
tw_ops_register_elementwise (void)
{
  static const tw_op_def *const defs[] = {
    &add_def, &sub_def, &mul_def, &div_def, &pow_def, &minimum_def, &maximum_def, &ge_mask_def,
    &abs_def, &sign_def, &floor_def, &ceil_def, &erf_def,
    &neg_def, &scale_def, &add_scalar_def, &square_def, &sqrt_def, &exp_def, &log_def,
    &reciprocal_def, &relu_def, &leaky_relu_def, &gelu_def, &sigmoid_def, &tanh_def,
    &fill_like_def, &zeros_like_def,
    &relu_grad_def, &leaky_relu_grad_def, &gelu_grad_def, &sigmoid_grad_def, &tanh_grad_def,
  };
  for (gsize i = 0; i < G_N_ELEMENTS (defs); i++)
    tw_op_register (defs[i]);
}
