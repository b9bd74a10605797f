/* test-backend-ops.c — every registered op on every device, in the manner of
 * ggml's tests/test-backend-ops.cpp.
 *
 * One test, /engine/backend-ops/registry, walks tw_op_list () (public and
 * TW_OP_INTERNAL ops alike).  For each op:
 *
 *  1. the schema is complete: a CPU kernel, a cost callback and a backward
 *     rule, unless allow_list[] below exempts the op, with the reason; an op
 *     without a case generator in tw_boc_cases[] (backend-ops-cases.c)
 *     fails ("add one"), so a new op comes with its cases, its backward
 *     and its cost;
 *  2. the op's generator gives a few cases with fixed seeds: batch 1, odd
 *     sizes (7, 13), broadcasting, the op's attributes, inputs valid for the
 *     op (indices in range, positive inputs for log and sqrt, no ties for
 *     max, nothing near the kink of relu);
 *  3. on every device the forward runs in f64 and in f32 with guard bytes
 *     around its outputs (twt_run_guarded) and is compared by normalised
 *     error (twt_max_error) with the CPU float64 run on the same inputs;
 *  4. the backward rule matches central finite differences in float64
 *     (twt_grad_check) for every float input it differentiates;
 *  5. infer () gives the output shapes the generator expects, in the dtype
 *     of the run, and cost () fills finite, non-negative flops and bytes.
 *
 * Failures are collected and the test fails once at the end with the list;
 * g_test_message prints one summary line per op (cases, worst errors).
 * Guard overwrites and backward rules that error out abort at once, from
 * opcheck.c, naming the op.
 */
#include "engine/kernels.h"
#include "backend-ops-cases.h"
#include "opcheck.h"

#include "engine/rng.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

/* f32 kernels against the f64 kernel on the very same (f32-exact) inputs.
 * The cases are small: f32 sums of at most 40 products (conv2d_grad_weight
 * over N Ho Wo), reductions, normalisations and losses (which accumulate in
 * double) over at most a few thousand values.  Each result is then a few
 * ulps (2^-24 ~ 6e-8) of the largest output times sqrt (terms); measured
 * worst 2.1e-7 (conv2d_grad_weight).  The per-op suites hold f32 to 1e-5
 * too (test-ops-nn.c measures 4.5e-7 at K = 784); a wrong index or a
 * missed term gives errors of order 1e-1. */
#define TOL_F32 1e-5
/* f64 on a device against the CPU's f64: the same sums, perhaps in another
 * order, rounded at 2^-53 (the CPU against itself agrees exactly). */
#define TOL_F64 1e-12
/* Central differences in float64 (opcheck.c: eps 1e-6; truncation O(eps^2)
 * and rounding O(1e-16 / eps), ~1e-10 on smooth ops, exact up to rounding
 * on piecewise-linear ones away from their kinks); measured worst 1.9e-8
 * (conv2d, whose loss sums a few hundred terms).  The per-op suites
 * (test-ops-*.c) hold every op to 1e-6. */
#define TOL_GRAD 1e-6
/* Elements probed per input by the finite differences (each costs two
 * forward runs): every element of inputs up to this size, an even spread
 * over larger ones (at most 7^4 = 2401 elements here); the whole test runs
 * in well under a second at -O3. */
#define MAX_PROBES 256


/* ---- devices ---------------------------------------------------------------- */

typedef struct
{
  const char *name;
  /* TRUE when the device has a forward kernel for def. */
  gboolean (*has_kernel) (const tw_op_def *def);
  /* Forward with guard bytes around every output; inputs and outputs are
   * CPU tensors (a GPU device copies in and out around its kernel). */
  void (*run_guarded) (const char *op, const tw_attrs *attrs, tw_tensor *const *in, int n_in,
                       tw_tensor **out, const tw_kctx *ctx);
} backend;

/* The CPU's entry in the kernel table (engine/kernels.h). */
static gboolean
cpu_has_kernel (const tw_op_def *def)
{
  const tw_kernel *k = tw_kernel_find (def->name, tw_device_cpu (), NULL, NULL, 0);
  return k != NULL && k->forward != NULL;
}

/* The devices every op is compared on.  The CPU float64 run is the
 * reference; a CUDA device is one more entry (its has_kernel reads its own
 * kernel table). */
static const backend backends[] = {
  { "cpu", cpu_has_kernel, twt_run_guarded },
};

/* ---- allow-list --------------------------------------------------------------- */

typedef enum
{
  NO_FORWARD = 1 << 0,
  NO_COST = 1 << 1,
  NO_BACKWARD = 1 << 2,
} exemption;

typedef struct
{
  const char *op;
  guint exempt;
  const char *reason;
} allowed;

static const allowed allow_list[] = {
  { "input", NO_FORWARD | NO_COST | NO_BACKWARD,
    "a source: the executor writes the fed batch into its output, so there is no kernel to "
    "run, no work to cost and nothing upstream to differentiate" },
  { "argmax", NO_BACKWARD,
    "integer output (i64 indices): piecewise constant in x, zero gradient almost everywhere "
    "and undefined at ties" },
  { "argmin", NO_BACKWARD, "integer output (i64 indices), as argmax" },
  { "hardmax", NO_BACKWARD,
    "one-hot of the maximum: piecewise constant in x, zero gradient almost everywhere" },
  { "logical_and", NO_BACKWARD, "u8 inputs and output (ONNX's bool): nothing to differentiate" },
  { "logical_or", NO_BACKWARD, "u8 inputs and output, as logical_and" },
  { "logical_xor", NO_BACKWARD, "u8 inputs and output, as logical_and" },
  { "logical_not", NO_BACKWARD, "u8 input and output, as logical_and" },
};

/* Gradient ops without a second-order rule.  Each is emitted only by the
 * backward rule of its primal op (nn_zeros_like: by the rules whose output
 * gradient is absent), and the engine differentiates a graph once: neither
 * executor has a double backward, so nothing ever asks for these gradients.
 * Drop a name once its rule is written; the test then checks the rule
 * against finite differences. */
static const char *const first_order_ops[] = {
  "avg_pool2d_grad", "batch_norm_grad", "bce_with_logits_grad", "conv2d_grad_bias",
  "conv2d_grad_input", "conv2d_grad_weight", "cross_entropy_grad", "dropout_grad",
  "embedding_grad", "gelu_grad", "global_avg_pool2d_grad", "layer_norm_grad",
  "linear_grad_bias", "linear_grad_input", "linear_grad_weight", "log_softmax_grad",
  "matmul_grad_a", "matmul_grad_b", "max_grad", "max_pool2d_grad", "mse_loss_grad",
  "nn_zeros_like", "softmax_grad", "prod_grad", "gather_elements_grad", "nll_loss_grad",
  "gather_nd_grad",
  "elu_grad", "selu_grad", "celu_grad",
};

static const allowed first_order = {
  NULL, NO_BACKWARD, "gradient op, emitted only by backward rules; no double backward",
};

/* ---- the harness ------------------------------------------------------------------------------ */

typedef struct
{
  GString *text;
  int n;
} report;

static void G_GNUC_PRINTF (2, 3)
fail (report *r, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_test_message ("FAIL: %s", msg);
  g_string_append_printf (r->text, "\n  %s", msg);
  r->n++;
}

typedef struct
{
  int n_cases;
  double fwd_err;                   /* worst f32 error against the f64 reference */
  double grad_err;                  /* worst finite-difference error */
  gboolean any_grad;
} op_stats;

static void
bcase_clear (bcase *c)
{
  for (int i = 0; i < c->n_in; i++)
    tw_tensor_unref (c->in[i]);
  g_clear_pointer (&c->attrs, tw_attrs_free);
}

/* "conv2d case 1 (f64[2, 4, 9, 7], f64[6, 2, 3, 2], f64[6]; {...})". */
static char *
case_label (const char *op, int k, const bcase *c)
{
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "%s case %d (", op, k);
  for (int i = 0; i < c->n_in; i++)
    {
      tw_tinfo t;
      tw_tinfo_from_tensor (&t, c->in[i]);
      g_autofree char *ts = tw_tinfo_to_string (&t);
      g_string_append_printf (s, "%s%s", i ? ", " : "", ts);
    }
  if (c->attrs && tw_attrs_count (c->attrs) > 0)
    {
      JsonNode *node = tw_attrs_to_json (c->attrs);
      g_autofree char *js = json_to_string (node, FALSE);
      g_string_append_printf (s, "%s%s", c->n_in ? "; " : "", js);
      json_node_unref (node);
    }
  if (!c->ctx.training)
    g_string_append (s, "; evaluation");
  g_string_append_c (s, ')');
  return g_string_free (s, FALSE);
}

/* Appends the op's parameters for the data inputs, as an executor would
 * create them: trainable ones N(0, 1), buffers (running statistics) in
 * [0.5, 1.5], a valid variance.  Buffers are not differentiated. */
static gboolean
add_params (const tw_op_def *def, bcase *c, const tw_attrs *ra, GError **error)
{
  tw_param_spec specs[TW_MAX_PARAMS];
  tw_tinfo info[MAX_IN];
  if (def->params == NULL)
    return TRUE;
  for (int i = 0; i < c->n_in; i++)
    tw_tinfo_from_tensor (&info[i], c->in[i]);
  int n = def->params (ra, info, c->n_in, specs, error);
  if (n < 0)
    return FALSE;
  for (int p = 0; p < n; p++)
    {
      shp s = { specs[p].info.ndim, { 0 } };
      memcpy (s.d, specs[p].info.dims, s.nd * sizeof (int64_t));
      g_assert_true (tw_dtype_is_float (specs[p].info.dtype));
      if (specs[p].trainable)
        boc_in_randn_s (c, &s);
      else
        boc_in_uniform (c, 0.5, 1.5, &s);
      c->no_grad[c->n_in - 1] = !specs[p].trainable;
    }
  return TRUE;
}

/* Float inputs rounded to f32 (the generators' derived tensors, such as a
 * softmax output, are not f32-exact by themselves): the f32 run and the f64
 * reference then see the same numbers and differ by the kernels only. */
static void
round_to_f32 (bcase *c)
{
  for (int i = 0; i < c->n_in; i++)
    if (tw_dtype_is_float (c->in[i]->dtype))
      for (int64_t j = 0; j < tw_tensor_numel (c->in[i]); j++)
        tw_tensor_set_flat (c->in[i], j, (float) tw_tensor_get_flat (c->in[i], j));
}

/* Copies of c's inputs with the float ones in dtype dt (kernels may update
 * buffers in place, so every run gets its own). */
static void
inputs_as (const bcase *c, tw_dtype dt, tw_tensor **in)
{
  for (int i = 0; i < c->n_in; i++)
    in[i] = tw_dtype_is_float (c->in[i]->dtype) ? tw_tensor_cast (c->in[i], dt)
                                                : tw_tensor_clone (c->in[i]);
}

static void
unref_all (tw_tensor **t, int n)
{
  for (int i = 0; i < n; i++)
    g_clear_pointer (&t[i], tw_tensor_unref);
}

/* infer () against the generator's expectation: same dims, and float
 * outputs in the dtype of the run (exact dtypes when exact is set). */
static gboolean
check_shapes (const bcase *c, const tw_tinfo *out, int n_out, tw_dtype dt, gboolean exact,
              const char *label, report *r)
{
  gboolean ok = TRUE;
  for (int k = 0; k < n_out; k++)
    {
      tw_tinfo w = c->want[k];
      if (!exact && tw_dtype_is_float (w.dtype))
        w.dtype = dt;
      if (!tw_tinfo_equal (&w, &out[k]))
        {
          g_autofree char *ws = tw_tinfo_to_string (&w);
          g_autofree char *gs = tw_tinfo_to_string (&out[k]);
          fail (r, "%s: infer gives output %d as %s, expected %s", label, k, gs, ws);
          ok = FALSE;
        }
    }
  return ok;
}

/* cost () must set flops and both byte counts (the NaN sentinel catches a
 * field left alone) to finite, non-negative values, and count the bytes of
 * a non-empty output. */
static void
check_cost (const tw_op_def *def, const tw_attrs *ra, const tw_tinfo *in, int n_in,
            const tw_tinfo *out, int n_out, const char *label, tw_dtype dt, report *r)
{
  tw_cost cost = { NAN, NAN, NAN };
  int64_t out_elems = 0;
  def->cost (ra, in, n_in, out, n_out, &cost);
  for (int k = 0; k < n_out; k++)
    out_elems += tw_tinfo_numel (&out[k], NULL);
  if (!(isfinite (cost.flops) && cost.flops >= 0 && isfinite (cost.bytes_read)
        && cost.bytes_read >= 0 && isfinite (cost.bytes_written) && cost.bytes_written >= 0))
    fail (r, "%s, %s: cost gives flops %g, bytes read %g, bytes written %g (each must be set, "
          "finite and >= 0)", label, tw_dtype_name (dt), cost.flops, cost.bytes_read,
          cost.bytes_written);
  else if (out_elems > 0 && cost.bytes_written <= 0)
    fail (r, "%s, %s: cost counts no bytes written for %" G_GINT64_FORMAT " output elements",
          label, tw_dtype_name (dt), out_elems);
}

static void
check_case (const tw_op_def *def, case_gen gen, int k, op_stats *st, report *r)
{
  static const tw_dtype dtypes[] = { TW_F64, TW_F32 };
  g_autoptr (GError) error = NULL;
  g_autofree char *label = NULL;
  bcase c = { 0 };
  tw_tensor *ref[TW_MAX_OUTPUTS] = { 0 };
  tw_tensor *in[MAX_IN] = { 0 };
  tw_tinfo info[MAX_IN], out_info[TW_MAX_OUTPUTS];
  gboolean have[G_N_ELEMENTS (dtypes)] = { 0 };
  tw_attrs *ra;
  int n_out;

  c.ctx = (tw_kctx) { .training = TRUE, .seed = 1, .node_key = 42, .num_threads = 2 };
  c.seed = (tw_node_key (def->name) & 0xffffffff) + 1000 * (guint64) k;
  gen (&c, def->name, k);
  ra = tw_op_resolve_attrs (def, c.attrs, &error);
  if (ra == NULL || !add_params (def, &c, ra, &error))
    {
      label = case_label (def->name, k, &c);
      fail (r, "%s: %s", label, error->message);
      goto out;
    }
  round_to_f32 (&c);
  label = case_label (def->name, k, &c);
  if (g_test_verbose ())
    g_test_message ("%s", label);
  n_out = tw_op_num_outputs (def, ra);
  if (c.n_want != n_out)
    {
      fail (r, "%s: the op has %d outputs, the case expects %d", label, n_out, c.n_want);
      goto out;
    }
  st->n_cases++;

  if (def->forward == NULL)
    {
      /* a source: nothing to run, only the inferred type */
      memset (out_info, 0, sizeof out_info);
      if (!def->infer (ra, info, 0, out_info, &error))
        fail (r, "%s: infer fails: %s", label, error->message);
      else
        check_shapes (&c, out_info, n_out, TW_F32, TRUE, label, r);
      goto out;
    }

  /* 5: types and cost, per dtype. */
  for (guint d = 0; d < G_N_ELEMENTS (dtypes); d++)
    {
      inputs_as (&c, dtypes[d], in);
      for (int i = 0; i < c.n_in; i++)
        tw_tinfo_from_tensor (&info[i], in[i]);
      unref_all (in, c.n_in);
      memset (out_info, 0, sizeof out_info);
      if (!def->infer (ra, info, c.n_in, out_info, &error))
        {
          if (dtypes[d] == TW_F64)
            fail (r, "%s: infer refuses float64 inputs (the reference): %s", label,
                  error->message);
          else
            g_test_message ("%s: no %s kernel (%s)", label, tw_dtype_name (dtypes[d]),
                            error->message);
          g_clear_error (&error);
          continue;
        }
      /* a wrong type would only make the runs below fail less clearly */
      if (!check_shapes (&c, out_info, n_out, dtypes[d], FALSE, label, r))
        goto out;
      have[d] = TRUE;
      if (def->cost)
        check_cost (def, ra, info, c.n_in, out_info, n_out, label, dtypes[d], r);
    }
  if (!have[0])
    goto out;

  /* 3: forward on every device and dtype against the CPU float64 run. */
  inputs_as (&c, TW_F64, in);
  twt_run_guarded (def->name, c.attrs, in, c.n_in, ref, &c.ctx);
  unref_all (in, c.n_in);
  for (guint b = 0; b < G_N_ELEMENTS (backends); b++)
    {
      if (!backends[b].has_kernel (def))
        {
          g_test_message ("%s: no kernel on %s", label, backends[b].name);
          continue;
        }
      for (guint d = 0; d < G_N_ELEMENTS (dtypes); d++)
        {
          tw_tensor *out[TW_MAX_OUTPUTS] = { 0 };
          if (!have[d])
            continue;
          inputs_as (&c, dtypes[d], in);
          backends[b].run_guarded (def->name, c.attrs, in, c.n_in, out, &c.ctx);
          for (int o = 0; o < n_out; o++)
            {
              double err = twt_max_error (out[o], ref[o]);
              double tol = !tw_dtype_is_float (ref[o]->dtype) ? 0
                           : dtypes[d] == TW_F32              ? TOL_F32
                                                              : TOL_F64;
              if (dtypes[d] == TW_F32)
                st->fwd_err = MAX (st->fwd_err, err);
              if (!(err <= tol))
                fail (r, "%s on %s: %s output %d differs from the float64 CPU run by %.3g "
                      "(tolerance %.3g)", label, backends[b].name, tw_dtype_name (dtypes[d]), o,
                      err, tol);
            }
          unref_all (out, n_out);
          unref_all (in, c.n_in);
        }
    }

  /* 4: backward against finite differences, every differentiated float input. */
  if (def->backward)
    {
      gboolean wrt[MAX_IN] = { 0 }, any = FALSE;
      for (int i = 0; i < c.n_in; i++)
        {
          wrt[i] = tw_dtype_is_float (c.in[i]->dtype) && !c.no_grad[i];
          any |= wrt[i];
        }
      if (any)
        {
          double err = twt_grad_check (def->name, c.attrs, c.in, c.n_in, wrt, MAX_PROBES, &c.ctx);
          st->grad_err = MAX (st->grad_err, err);
          st->any_grad = TRUE;
          if (!(err < TOL_GRAD))
            fail (r, "%s: backward differs from finite differences by %.3g (tolerance %.3g)",
                  label, err, TOL_GRAD);
        }
    }

out:
  unref_all (ref, TW_MAX_OUTPUTS);
  g_clear_pointer (&ra, tw_attrs_free);
  bcase_clear (&c);
}

static const allowed *
find_allowed (const char *op)
{
  for (guint i = 0; i < G_N_ELEMENTS (allow_list); i++)
    if (strcmp (allow_list[i].op, op) == 0)
      return &allow_list[i];
  for (guint i = 0; i < G_N_ELEMENTS (first_order_ops); i++)
    if (strcmp (first_order_ops[i], op) == 0)
      return &first_order;
  return NULL;
}

static const op_case *
find_case (const char *op)
{
  for (guint i = 0; i < tw_boc_n_cases; i++)
    if (strcmp (tw_boc_cases[i].op, op) == 0)
      return &tw_boc_cases[i];
  for (guint i = 0; i < tw_boc_n_more_cases; i++)
    if (strcmp (tw_boc_more_cases[i].op, op) == 0)
      return &tw_boc_more_cases[i];
  return NULL;
}

/* 1: a kernel, a cost and a backward, or an allow-list entry saying why not
 * (and no entry left over once the op has what it exempts). */
static void
check_schema (const tw_op_def *def, report *r)
{
  static const struct
  {
    exemption what;
    const char *name;
  } parts[] = {
    { NO_FORWARD, "CPU kernel (forward)" },
    { NO_COST, "cost callback" },
    { NO_BACKWARD, "backward rule" },
  };
  const allowed *al = find_allowed (def->name);
  guint exempt = al ? al->exempt : 0;
  for (guint p = 0; p < G_N_ELEMENTS (parts); p++)
    {
      gboolean has = parts[p].what == NO_FORWARD ? cpu_has_kernel (def)
                     : parts[p].what == NO_COST  ? def->cost != NULL
                                                 : def->backward != NULL;
      if (!has && !(exempt & parts[p].what))
        fail (r, "op %s has no %s and is not in the allow-list of test-backend-ops",
              def->name, parts[p].name);
      else if (has && (exempt & parts[p].what))
        fail (r, "op %s now has a %s: drop that exemption from the allow-list of test-backend-ops",
              def->name, parts[p].name);
    }
}

static void
test_registry (void)
{
  report r = { g_string_new (NULL), 0 };
  int n_ops, n_cases = 0;
  const tw_op_def *const *ops = tw_op_list (&n_ops);
  gint64 t0 = g_get_monotonic_time ();

  for (guint i = 0; i < tw_boc_n_cases; i++)
    if (tw_op_lookup (tw_boc_cases[i].op) == NULL)
      fail (&r, "test-backend-ops has cases for %s, which is not a registered op", tw_boc_cases[i].op);
  for (guint i = 0; i < tw_boc_n_more_cases; i++)
    if (tw_op_lookup (tw_boc_more_cases[i].op) == NULL)
      fail (&r, "test-backend-ops has cases for %s, which is not a registered op",
            tw_boc_more_cases[i].op);
  for (guint i = 0; i < G_N_ELEMENTS (allow_list); i++)
    if (tw_op_lookup (allow_list[i].op) == NULL)
      fail (&r, "the allow-list of test-backend-ops names %s, which is not a registered op",
            allow_list[i].op);
  for (guint i = 0; i < G_N_ELEMENTS (first_order_ops); i++)
    if (tw_op_lookup (first_order_ops[i]) == NULL)
      fail (&r, "first_order_ops in test-backend-ops names %s, which is not a registered op",
            first_order_ops[i]);

  for (int i = 0; i < n_ops; i++)
    {
      const tw_op_def *def = ops[i];
      const op_case *oc = find_case (def->name);
      const allowed *al = def->backward ? NULL : find_allowed (def->name);
      op_stats st = { 0 };
      check_schema (def, &r);
      if (oc == NULL)
        {
          fail (&r, "op %s has no case in test-backend-ops: add one", def->name);
          continue;
        }
      for (int k = 0; k < oc->n_cases; k++)
        check_case (def, oc->gen, k, &st, &r);
      n_cases += st.n_cases;
      if (def->forward == NULL)
        g_test_message ("%-22s %d cases  infer only", def->name, st.n_cases);
      else if (st.any_grad)
        g_test_message ("%-22s %d cases  f32 error %.2g  gradient error %.2g", def->name,
                        st.n_cases, st.fwd_err, st.grad_err);
      else if (def->backward)
        g_test_message ("%-22s %d cases  f32 error %.2g  no float input to differentiate",
                        def->name, st.n_cases, st.fwd_err);
      else
        g_test_message ("%-22s %d cases  f32 error %.2g  no backward%s%s%s", def->name,
                        st.n_cases, st.fwd_err, al ? " (" : "", al ? al->reason : "",
                        al ? ")" : "");
    }
  /* Every device present has a backend entry here, and every fused op of
   * the compiler a CPU kernel and a description. */
  const tw_device *const *devs = tw_device_list ();
  for (int d = 0; devs[d]; d++)
    {
      gboolean known = FALSE;
      for (guint b = 0; b < G_N_ELEMENTS (backends); b++)
        known |= strcmp (backends[b].name, tw_device_name (devs[d])) == 0;
      if (!known)
        fail (&r, "device %s is present but test-backend-ops does not run it",
              tw_device_name (devs[d]));
    }
  g_autofree const char **fused = tw_fused_op_names ();
  int n_fused = 0;
  for (int f = 0; fused[f]; f++, n_fused++)
    {
      const tw_kernel *k = tw_kernel_find (fused[f], tw_device_cpu (), NULL, NULL, 0);
      if (k == NULL || k->fused == NULL)
        fail (&r, "fused op %s has no CPU kernel", fused[f]);
      if (tw_fused_op_doc (fused[f]) == NULL)
        fail (&r, "fused op %s has no description", fused[f]);
    }
  if (n_fused < 10)
    fail (&r, "only %d fused ops registered", n_fused);
  g_test_message ("%d fused ops, each with a CPU kernel", n_fused);
  g_test_message ("%d ops, %d cases, %u device(s), %.2f s", n_ops, n_cases,
                  (guint) G_N_ELEMENTS (backends), (g_get_monotonic_time () - t0) / 1e6);
  if (r.n > 0)
    g_test_fail_printf ("%d check(s) failed:%s", r.n, r.text->str);
  g_string_free (r.text, TRUE);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  g_test_add_func ("/engine/backend-ops/registry", test_registry);
  return g_test_run ();
}
