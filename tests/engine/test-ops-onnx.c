/* test-ops-onnx.c — the ops real ONNX models need: clip, relu6,
 * hard_sigmoid, hard_swish, pad, resize (nearest), and the element-wise
 * abs, sign, floor, ceil, erf, pow, minimum, maximum; squeeze, unsqueeze,
 * cast, where, expand.
 *
 * - ONNX's own node test cases (libonnx-testdata, checked in as
 *   data/onnx-node-ops.json by data/gen-onnx-node-ops.py) through the
 *   registry, in f32 and f64;
 * - forward against independent float64 references (written per output
 *   element from the spec, not from the kernels' row plans) on random
 *   inputs: batch 1, odd sizes, every mode;
 * - backward against central finite differences in float64;
 * - attribute and shape errors that name the attribute and the shape;
 * - a small network of all of them trained by the eager and the compiled
 *   executors: the same losses and weights.
 */
#include "opcheck.h"

#include "engine/model.h"
#include "engine/params.h"
#include "engine/rng.h"
#include "engine/train.h"

#include <math.h>
#include <string.h>

/* pad, resize and clip only copy or select elements: exact. */
#define TOL_EXACT 0.0
/* hard_sigmoid / hard_swish in f32 against a float64 reference: alpha x +
 * beta and the product round once or twice at 2^-24 relative (6e-8) of
 * values below 5; 1e-6 leaves room and catches any wrong piece (errors of
 * order 1e-1). */
#define TOL_F32 1e-6
/* f64 against the f64 reference: the same formula, maybe contracted to an
 * fma: a few ulps at 2^-53. */
#define TOL_F64 1e-14
/* Central differences in float64 on piecewise-linear (quadratic) ops away
 * from the kinks: exact up to rounding, ~1e-9 (opcheck.c). */
#define TOL_GRAD 1e-6

static tw_tensor *
run1 (const char *op, const tw_attrs *a, tw_tensor *x)
{
  tw_tensor *in[1] = { x }, *out[1];
  twt_run_guarded (op, a, in, 1, out, NULL);
  return out[0];
}

/* ---- ONNX's own cases ----------------------------------------------------------- */

static tw_tensor *
tensor_from_json (JsonObject *c, const char *shape_m, const char *data_m)
{
  JsonArray *sh = json_object_get_array_member (c, shape_m);
  JsonArray *d = json_object_get_array_member (c, data_m);
  int64_t dims[TW_MAX_DIMS];
  int nd = (int) json_array_get_length (sh);
  for (int i = 0; i < nd; i++)
    dims[i] = json_array_get_int_element (sh, i);
  tw_tensor *t = tw_tensor_new (TW_F64, nd, dims);
  g_assert_cmpint (tw_tensor_numel (t), ==, json_array_get_length (d));
  for (guint i = 0; i < json_array_get_length (d); i++)
    tw_tensor_f64 (t)[i] = json_array_get_double_element (d, i);
  return t;
}

static void
test_onnx_cases (void)
{
  g_autofree char *path = g_build_filename (TW_TEST_DATA_DIR, "onnx-node-ops.json", NULL);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  g_assert_true (json_parser_load_from_file (parser, path, &error));
  JsonArray *cases = json_object_get_array_member (json_node_get_object (json_parser_get_root (parser)),
                                                   "cases");
  g_assert_cmpuint (json_array_get_length (cases), >=, 32);
  for (guint i = 0; i < json_array_get_length (cases); i++)
    {
      JsonObject *c = json_array_get_object_element (cases, i);
      const char *name = json_object_get_string_member (c, "case");
      const char *op = json_object_get_string_member (c, "op");
      const tw_op_def *def = tw_op_lookup (op);
      g_assert_nonnull (def);
      g_autoptr (tw_tensor) x = tensor_from_json (c, "x_shape", "x");
      g_autoptr (tw_tensor) x2 = json_object_has_member (c, "x2")
                                   ? tensor_from_json (c, "x2_shape", "x2") : NULL;
      g_autoptr (tw_tensor) y = tensor_from_json (c, "y_shape", "y");
      tw_attrs *a = tw_attrs_from_json (json_object_get_object_member (c, "attrs"), def->attrs,
                                        name, &error);
      g_assert_no_error (error);
      /* ONNX computed these in float32: exact for the copies and selections,
       * a rounding or two for the hard_* ops, erf and pow (TOL_F32). */
      static const char *const exact_ops[] = { "pad", "resize", "clip", "abs", "sign", "floor",
                                               "ceil", "minimum", "maximum", NULL };
      gboolean exact = g_strv_contains (exact_ops, op);
      for (int f32 = 0; f32 < 2; f32++)
        {
          g_autoptr (tw_tensor) xin = tw_tensor_cast (x, f32 ? TW_F32 : TW_F64);
          g_autoptr (tw_tensor) xin2 = x2 ? tw_tensor_cast (x2, f32 ? TW_F32 : TW_F64) : NULL;
          tw_tensor *ins[2] = { xin, xin2 }, *outs[1];
          twt_run_guarded (op, a, ins, x2 ? 2 : 1, outs, NULL);
          g_autoptr (tw_tensor) got = outs[0];
          g_assert_true (tw_tensor_same_shape (got, y));
          double err = twt_max_error (got, y);
          if (err > (exact ? TOL_EXACT : TOL_F32))
            g_error ("%s (%s, %s): error %.3g against ONNX's output", name, op,
                     f32 ? "f32" : "f64", err);
        }
      tw_attrs_free (a);
    }
  g_test_message ("%u ONNX node cases pass", json_array_get_length (cases));
}

/* ---- independent references ---------------------------------------------------- */

static void
unflatten (int nd, const int64_t *shape, int64_t flat, int64_t *idx)
{
  for (int d = nd - 1; d >= 0; d--)
    {
      idx[d] = flat % shape[d];
      flat /= shape[d];
    }
}

static int64_t
flatten_index (int nd, const int64_t *shape, const int64_t *idx)
{
  int64_t f = 0;
  for (int d = 0; d < nd; d++)
    f = f * shape[d] + idx[d];
  return f;
}

static double
ref_act (const char *op, double x, double p, double q)
{
  if (strcmp (op, "clip") == 0)
    return fmin (fmax (x, p), q);
  if (strcmp (op, "relu6") == 0)
    return fmin (fmax (x, 0), 6);
  if (strcmp (op, "hard_sigmoid") == 0)
    return fmax (0, fmin (1, p * x + q));
  return x * fmax (0, fmin (1, x / 6 + 0.5));    /* hard_swish */
}

static void
check_act (const char *op, tw_attrs *a, double p, double q, int nd, const int64_t *shape,
           guint64 seed)
{
  g_autoptr (tw_tensor) x32 = twt_uniform (TW_F32, nd, shape, seed, -8, 8);
  g_autoptr (tw_tensor) x = tw_tensor_cast (x32, TW_F64);
  g_autoptr (tw_tensor) ref = tw_tensor_new_like (x);
  for (int64_t i = 0; i < tw_tensor_numel (x); i++)
    tw_tensor_f64 (ref)[i] = ref_act (op, tw_tensor_f64 (x)[i], p, q);
  g_autoptr (tw_tensor) y64 = run1 (op, a, x);
  g_autoptr (tw_tensor) y32 = run1 (op, a, x32);
  g_assert_cmpfloat (twt_max_error (y64, ref), <=, TOL_F64);
  g_assert_cmpfloat (twt_max_error (y32, ref), <=, TOL_F32);
  /* Gradients on the small shapes (each probe costs two forward runs); the
   * large one is there for the threaded forward. */
  if (tw_tensor_numel (x) > 1000)
    return;
  tw_tensor *in[1] = { x };
  double ge = twt_grad_check (op, a, in, 1, (gboolean[]) { TRUE }, 0, NULL);
  if (!(ge < TOL_GRAD))
    g_error ("%s: gradient error %.3g", op, ge);
}

static void
test_activations (void)
{
  static const struct
  {
    int nd;
    int64_t d[4];
  } shapes[] = { { 2, { 1, 9 } }, { 3, { 3, 5, 7 } }, { 4, { 2, 3, 1, 13 } }, { 1, { 40000 } } };
  for (guint s = 0; s < G_N_ELEMENTS (shapes); s++)
    {
      guint64 seed = 10 * s;
      tw_attrs *a = tw_attrs_new ();
      tw_attrs_set_float (a, "min", -1.25);
      tw_attrs_set_float (a, "max", 2.5);
      check_act ("clip", a, -1.25, 2.5, shapes[s].nd, shapes[s].d, seed + 1);
      tw_attrs_remove (a, "min");
      check_act ("clip", a, -INFINITY, 2.5, shapes[s].nd, shapes[s].d, seed + 2);
      tw_attrs_free (a);
      check_act ("relu6", NULL, 0, 0, shapes[s].nd, shapes[s].d, seed + 3);
      check_act ("hard_sigmoid", NULL, 0.2, 0.5, shapes[s].nd, shapes[s].d, seed + 4);
      a = tw_attrs_new ();
      tw_attrs_set_float (a, "alpha", 0.35);
      tw_attrs_set_float (a, "beta", 0.25);
      check_act ("hard_sigmoid", a, 0.35, 0.25, shapes[s].nd, shapes[s].d, seed + 5);
      tw_attrs_free (a);
      check_act ("hard_swish", NULL, 0, 0, shapes[s].nd, shapes[s].d, seed + 6);
    }
}

static double
ref_math (const char *op, double a, double b)
{
  if (strcmp (op, "abs") == 0)
    return fabs (a);
  if (strcmp (op, "sign") == 0)
    return (a > 0) - (a < 0);
  if (strcmp (op, "floor") == 0)
    return floor (a);
  if (strcmp (op, "ceil") == 0)
    return ceil (a);
  if (strcmp (op, "erf") == 0)
    return erf (a);
  if (strcmp (op, "pow") == 0)
    return pow (a, b);
  if (strcmp (op, "minimum") == 0)
    return fmin (a, b);
  return fmax (a, b);   /* maximum */
}

/* The element-wise additions against libm in float64, b broadcast as a row
 * ([K] against [M, K]) for the binary ops; f32 within TOL_F32 (erf's vector
 * form is within 1.5e-7, powf within an ulp or two). */
static void
test_math (void)
{
  static const char *const ops[] = { "abs", "sign", "floor", "ceil", "erf", "pow", "minimum",
                                     "maximum" };
  static const int64_t shapes[][2] = { { 1, 9 }, { 7, 13 }, { 300, 129 } };
  for (guint o = 0; o < G_N_ELEMENTS (ops); o++)
    for (guint s = 0; s < G_N_ELEMENTS (shapes); s++)
      {
        const char *op = ops[o];
        gboolean binary = o >= 5;
        guint64 seed = 1000 + 10 * o + s;
        g_autoptr (tw_tensor) a32 = strcmp (op, "pow") == 0
                                      ? twt_uniform (TW_F32, 2, shapes[s], seed, 0.25, 3)
                                      : twt_uniform (TW_F32, 2, shapes[s], seed, -4, 4);
        g_autoptr (tw_tensor) b32 = twt_uniform (TW_F32, 1, &shapes[s][1], seed + 500, -2, 2);
        g_autoptr (tw_tensor) a = tw_tensor_cast (a32, TW_F64);
        g_autoptr (tw_tensor) b = tw_tensor_cast (b32, TW_F64);
        g_autoptr (tw_tensor) ref = tw_tensor_new_like (a);
        int64_t k = shapes[s][1];
        for (int64_t i = 0; i < tw_tensor_numel (a); i++)
          tw_tensor_f64 (ref)[i] = ref_math (op, tw_tensor_f64 (a)[i], tw_tensor_f64 (b)[i % k]);
        tw_tensor *in64[2] = { a, b }, *in32[2] = { a32, b32 }, *out[1];
        twt_run_guarded (op, NULL, in64, binary ? 2 : 1, out, NULL);
        g_autoptr (tw_tensor) y64 = out[0];
        twt_run_guarded (op, NULL, in32, binary ? 2 : 1, out, NULL);
        g_autoptr (tw_tensor) y32 = out[0];
        if (twt_max_error (y64, ref) > TOL_F64 || twt_max_error (y32, ref) > TOL_F32)
          g_error ("%s [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]: errors %.3g (f64), %.3g (f32)",
                   op, shapes[s][0], k, twt_max_error (y64, ref), twt_max_error (y32, ref));
      }
}

/* numpy.pad's reflect and edge, one reflection at a time (the kernel's
 * single-step formula holds only for pads < dim, which the op demands). */
static int64_t
ref_pad_src (const char *mode, int64_t s, int64_t n)
{
  if (strcmp (mode, "edge") == 0)
    return CLAMP (s, 0, n - 1);
  while (s < 0 || s >= n)
    s = s < 0 ? -s : 2 * (n - 1) - s;
  return s;
}

static void
check_pad (int nd, const int64_t *shape, int np, const int64_t *pads, const char *mode,
           guint64 seed)
{
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_ints (a, "pads", np, pads);
  tw_attrs_set_string (a, "mode", mode);
  tw_attrs_set_float (a, "value", -0.75);
  g_autoptr (tw_tensor) x32 = twt_randn (TW_F32, nd, shape, seed);
  g_autoptr (tw_tensor) x = tw_tensor_cast (x32, TW_F64);
  int k = np / 2, first = nd - k;
  int64_t oshape[TW_MAX_DIMS];
  for (int d = 0; d < nd; d++)
    oshape[d] = shape[d] + (d >= first ? pads[d - first] + pads[d - first + k] : 0);
  g_autoptr (tw_tensor) ref = tw_tensor_new (TW_F64, nd, oshape);
  for (int64_t f = 0; f < tw_tensor_numel (ref); f++)
    {
      int64_t idx[TW_MAX_DIMS];
      gboolean inside = TRUE;
      unflatten (nd, oshape, f, idx);
      for (int d = first; d < nd; d++)
        {
          int64_t s = idx[d] - pads[d - first];
          if (s < 0 || s >= shape[d])
            {
              if (strcmp (mode, "constant") == 0)
                inside = FALSE;
              else
                s = ref_pad_src (mode, s, shape[d]);
            }
          idx[d] = s;
        }
      tw_tensor_f64 (ref)[f] = inside ? tw_tensor_f64 (x)[flatten_index (nd, shape, idx)] : -0.75;
    }
  g_autoptr (tw_tensor) y64 = run1 ("pad", a, x);
  g_autoptr (tw_tensor) y32 = run1 ("pad", a, x32);
  g_assert_true (tw_tensor_same_shape (y64, ref));
  g_assert_cmpfloat (twt_max_error (y64, ref), ==, TOL_EXACT);
  g_assert_cmpfloat (twt_max_error (y32, ref), ==, TOL_EXACT);
  if (tw_tensor_numel (x) <= 300)
    {
      tw_tensor *in[1] = { x };
      twt_assert_grad ("pad", a, in, 1, (gboolean[]) { TRUE }, TOL_GRAD);
    }
  tw_attrs_free (a);
}

static void
test_pad (void)
{
  static const char *const modes[] = { "constant", "reflect", "edge" };
  for (int m = 0; m < 3; m++)
    {
      guint64 seed = 100 * (m + 1);
      check_pad (4, (int64_t[]) { 1, 2, 3, 4 }, 4, (int64_t[]) { 1, 2, 2, 3 }, modes[m], seed);
      check_pad (4, (int64_t[]) { 3, 1, 5, 7 }, 4, (int64_t[]) { 0, 3, 4, 0 }, modes[m], seed + 1);
      check_pad (3, (int64_t[]) { 2, 3, 5 }, 6, (int64_t[]) { 0, 1, 2, 0, 2, 1 }, modes[m],
                 seed + 2);
      check_pad (2, (int64_t[]) { 5, 2 }, 2, (int64_t[]) { 1, 1 }, modes[m], seed + 3);
      check_pad (4, (int64_t[]) { 4, 8, 33, 65 }, 4, (int64_t[]) { 2, 3, 1, 4 }, modes[m],
                 seed + 4);   /* large enough for the threaded rows */
    }
}

/* ONNX's Resize spec for one output coordinate, written as a formula per
 * mode (not the kernel's table). */
static int64_t
ref_resize_src (const char *ct, const char *nm, int64_t i, int64_t in, int64_t out, double s)
{
  double x;
  if (strcmp (ct, "asymmetric") == 0)
    x = i / s;
  else if (strcmp (ct, "align_corners") == 0)
    x = out == 1 ? 0 : i * (double) (in - 1) / (double) (out - 1);
  else if (strcmp (ct, "pytorch_half_pixel") == 0)
    x = out > 1 ? (i + 0.5) / s - 0.5 : 0;
  else
    x = (i + 0.5) / s - 0.5;
  double r;
  if (strcmp (nm, "floor") == 0)
    r = floor (x);
  else if (strcmp (nm, "ceil") == 0)
    r = ceil (x);
  else if (strcmp (nm, "round_prefer_ceil") == 0)
    r = floor (x + 0.5);
  else
    r = ceil (x - 0.5);
  return (int64_t) fmin (fmax (r, 0), (double) (in - 1));
}

static void
check_resize (int nd, const int64_t *shape, const double *scales, const int64_t *sizes,
              const char *ct, const char *nm, guint64 seed)
{
  tw_attrs *a = tw_attrs_new ();
  int ns = nd - 2;
  int64_t oshape[TW_MAX_DIMS];
  double sc[TW_MAX_DIMS];
  oshape[0] = shape[0];
  oshape[1] = shape[1];
  for (int d = 2; d < nd; d++)
    {
      oshape[d] = scales ? (int64_t) floor (shape[d] * scales[d - 2]) : sizes[d - 2];
      sc[d] = scales ? scales[d - 2] : (double) sizes[d - 2] / (double) shape[d];
    }
  if (scales)
    tw_attrs_set_floats (a, "scales", ns, scales);
  else
    tw_attrs_set_ints (a, "sizes", ns, sizes);
  tw_attrs_set_string (a, "coordinate_transformation_mode", ct);
  tw_attrs_set_string (a, "nearest_mode", nm);
  g_autoptr (tw_tensor) x32 = twt_randn (TW_F32, nd, shape, seed);
  g_autoptr (tw_tensor) x = tw_tensor_cast (x32, TW_F64);
  g_autoptr (tw_tensor) ref = tw_tensor_new (TW_F64, nd, oshape);
  for (int64_t f = 0; f < tw_tensor_numel (ref); f++)
    {
      int64_t idx[TW_MAX_DIMS];
      unflatten (nd, oshape, f, idx);
      for (int d = 2; d < nd; d++)
        idx[d] = ref_resize_src (ct, nm, idx[d], shape[d], oshape[d], sc[d]);
      tw_tensor_f64 (ref)[f] = tw_tensor_f64 (x)[flatten_index (nd, shape, idx)];
    }
  g_autoptr (tw_tensor) y64 = run1 ("resize", a, x);
  g_autoptr (tw_tensor) y32 = run1 ("resize", a, x32);
  g_assert_true (tw_tensor_same_shape (y64, ref));
  g_assert_cmpfloat (twt_max_error (y64, ref), ==, TOL_EXACT);
  g_assert_cmpfloat (twt_max_error (y32, ref), ==, TOL_EXACT);
  if (tw_tensor_numel (x) <= 300)
    {
      tw_tensor *in[1] = { x };
      twt_assert_grad ("resize", a, in, 1, (gboolean[]) { TRUE }, TOL_GRAD);
    }
  tw_attrs_free (a);
}

static void
test_resize (void)
{
  static const char *const cts[] = { "half_pixel", "pytorch_half_pixel", "asymmetric",
                                     "align_corners" };
  static const char *const nms[] = { "round_prefer_floor", "round_prefer_ceil", "floor", "ceil" };
  guint64 seed = 500;
  for (int c = 0; c < 4; c++)
    for (int m = 0; m < 4; m++)
      {
        check_resize (4, (int64_t[]) { 1, 2, 3, 4 }, (double[]) { 2, 2 }, NULL, cts[c], nms[m],
                      seed++);
        check_resize (4, (int64_t[]) { 2, 1, 7, 5 }, (double[]) { 0.5, 1.5 }, NULL, cts[c],
                      nms[m], seed++);
        check_resize (4, (int64_t[]) { 1, 3, 5, 3 }, NULL, (int64_t[]) { 1, 8 }, cts[c], nms[m],
                      seed++);
        check_resize (3, (int64_t[]) { 3, 2, 6 }, (double[]) { 1.7 }, NULL, cts[c], nms[m],
                      seed++);
        check_resize (5, (int64_t[]) { 1, 2, 2, 3, 2 }, NULL, (int64_t[]) { 3, 3, 5 }, cts[c],
                      nms[m], seed++);
      }
  /* Threaded rows and planes: 2 * 16 * 64 * 64 outputs. */
  check_resize (4, (int64_t[]) { 2, 16, 32, 32 }, (double[]) { 2, 2 }, NULL, "asymmetric",
                "floor", seed++);

  /* The grad op on its own: every input element receives the sum of the
   * outputs that copied it (a downscale leaves some with none). */
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_floats (a, "scales", 2, (double[]) { 0.5, 3 });
  tw_attrs_set_string (a, "coordinate_transformation_mode", "asymmetric");
  tw_attrs_set_string (a, "nearest_mode", "floor");
  g_autoptr (tw_tensor) x = twt_randn (TW_F64, 4, (int64_t[]) { 1, 1, 4, 2 }, 7);
  g_autoptr (tw_tensor) dy = tw_tensor_new (TW_F64, 4, (int64_t[]) { 1, 1, 2, 6 });
  tw_tensor_fill (dy, 1.0);
  tw_tensor *in[2] = { dy, x }, *out[1];
  twt_run_guarded ("resize_grad", a, in, 2, out, NULL);
  /* rows 0 and 2 of x are read (each by 6 outputs: 3 per column), 1 and 3 never */
  static const double want[8] = { 3, 3, 0, 0, 3, 3, 0, 0 };
  for (int i = 0; i < 8; i++)
    g_assert_cmpfloat (tw_tensor_f64 (out[0])[i], ==, want[i]);
  tw_tensor_unref (out[0]);
  tw_attrs_free (a);
}

/* ---- errors and symbolic batch --------------------------------------------------- */

static void
test_errors (void)
{
  tw_tinfo x4, xi, xn;
  tw_tinfo_set (&x4, TW_F32, 4, (int64_t[]) { 2, 3, 4, 5 });
  tw_tinfo_set (&xi, TW_I64, 2, (int64_t[]) { 2, 3 });
  tw_tinfo_set (&xn, TW_F32, 4, (int64_t[]) { TW_DIM_N, 3, 4, 5 });
  tw_attrs *a = tw_attrs_new ();

  tw_attrs_set_float (a, "min", 2);
  tw_attrs_set_float (a, "max", 1);
  twt_assert_infer_error ("clip", a, &x4, 1, "min (2)", "max (1)");
  tw_attrs_set_float (a, "min", NAN);
  twt_assert_infer_error ("clip", a, &x4, 1, "clip", "min is NaN");
  twt_assert_infer_error ("relu6", NULL, &xi, 1, "relu6", "i64[2, 3]");
  tw_attrs_free (a);
  a = tw_attrs_new ();
  tw_attrs_set_float (a, "alpha", INFINITY);
  twt_assert_infer_error ("hard_sigmoid", a, &x4, 1, "alpha", "finite");
  tw_attrs_free (a);

  a = tw_attrs_new ();
  twt_assert_infer_error ("pad", a, &x4, 1, "pads", NULL);     /* required */
  tw_attrs_set_ints (a, "pads", 3, (int64_t[]) { 1, 1, 1 });
  twt_assert_infer_error ("pad", a, &x4, 1, "pads", "got 3 values");
  tw_attrs_set_ints (a, "pads", 10, (int64_t[]) { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 });
  twt_assert_infer_error ("pad", a, &x4, 1, "f32[2, 3, 4, 5]", "got 10 values");
  tw_attrs_set_ints (a, "pads", 4, (int64_t[]) { 1, -1, 0, 0 });
  twt_assert_infer_error ("pad", a, &x4, 1, "negative", "dim 3");
  tw_attrs_set_ints (a, "pads", 4, (int64_t[]) { 4, 0, 0, 0 });
  tw_attrs_set_string (a, "mode", "reflect");
  twt_assert_infer_error ("pad", a, &x4, 1, "reflect", "dim 2 of f32[2, 3, 4, 5]");
  tw_attrs_set_string (a, "mode", "wrap");
  twt_assert_infer_error ("pad", a, &x4, 1, "mode", "wrap");
  tw_attrs_set_string (a, "mode", "edge");
  tw_attrs_set_ints (a, "pads", 8, (int64_t[]) { 1, 0, 0, 0, 0, 0, 0, 0 });
  twt_assert_infer_error ("pad", a, &xn, 1, "batch dim N", NULL);
  tw_tinfo out;
  g_autoptr (GError) error = NULL;
  tw_attrs_set_ints (a, "pads", 4, (int64_t[]) { 1, 2, 3, 4 });
  g_assert_true (twt_infer ("pad", a, &xn, 1, &out, &error));
  g_assert_no_error (error);
  g_assert_cmpint (out.dims[0], ==, TW_DIM_N);
  g_assert_cmpint (out.dims[2], ==, 8);
  g_assert_cmpint (out.dims[3], ==, 11);
  tw_attrs_free (a);

  a = tw_attrs_new ();
  twt_assert_infer_error ("resize", a, &x4, 1, "exactly one of scales and sizes", NULL);
  tw_attrs_set_floats (a, "scales", 2, (double[]) { 2, 2 });
  tw_attrs_set_ints (a, "sizes", 2, (int64_t[]) { 8, 10 });
  twt_assert_infer_error ("resize", a, &x4, 1, "exactly one of scales and sizes", NULL);
  tw_attrs_remove (a, "sizes");
  tw_attrs_set_floats (a, "scales", 3, (double[]) { 2, 2, 2 });
  twt_assert_infer_error ("resize", a, &x4, 1, "scales needs 2 values", "got 3");
  tw_attrs_set_floats (a, "scales", 4, (double[]) { 1, 2, 2, 2 });
  twt_assert_infer_error ("resize", a, &x4, 1, "may not resize dim 1 (C)", NULL);
  tw_attrs_set_floats (a, "scales", 2, (double[]) { 0, 2 });
  twt_assert_infer_error ("resize", a, &x4, 1, "positive", "dim 2");
  tw_attrs_set_floats (a, "scales", 2, (double[]) { 0.1, 2 });
  twt_assert_infer_error ("resize", a, &x4, 1, "0 elements", "dim 2");
  tw_attrs_set_floats (a, "scales", 1, (double[]) { 2 });
  tw_tinfo x2;
  tw_tinfo_set (&x2, TW_F32, 2, (int64_t[]) { 4, 5 });
  twt_assert_infer_error ("resize", a, &x2, 1, "rank 3 or more", "f32[4, 5]");
  tw_attrs_set_floats (a, "scales", 4, (double[]) { 1, 1, 2, 3 });   /* ONNX's full-rank form */
  g_assert_true (twt_infer ("resize", a, &xn, 1, &out, &error));
  g_assert_no_error (error);
  g_assert_cmpint (out.dims[0], ==, TW_DIM_N);
  g_assert_cmpint (out.dims[2], ==, 8);
  g_assert_cmpint (out.dims[3], ==, 15);
  tw_attrs_set_string (a, "mode", "linear");
  twt_assert_infer_error ("resize", a, &x4, 1, "mode", "linear");
  tw_attrs_free (a);
}

/* ---- squeeze, unsqueeze, cast ------------------------------------------------------ */

static void
test_squeeze_cast (void)
{
  g_autoptr (GError) error = NULL;
  tw_tinfo in, out;
  tw_attrs *a = tw_attrs_new ();

  /* unsqueeze then squeeze of the same axes: the same shape and bytes */
  g_autoptr (tw_tensor) x = twt_randn (TW_F64, 3, (int64_t[]) { 2, 3, 5 }, 77);
  tw_attrs_set_ints (a, "axes", 3, (int64_t[]) { 0, 3, -1 });
  g_autoptr (tw_tensor) u = run1 ("unsqueeze", a, x);
  g_assert_cmpint (u->ndim, ==, 6);
  static const int64_t ud[6] = { 1, 2, 3, 1, 5, 1 };
  for (int d = 0; d < 6; d++)
    g_assert_cmpint (u->shape[d], ==, ud[d]);
  g_assert_cmpmem (tw_tensor_data (u), tw_tensor_nbytes (u), tw_tensor_data (x),
                   tw_tensor_nbytes (x));
  g_autoptr (tw_tensor) sq = run1 ("squeeze", a, u);
  g_assert_true (tw_tensor_same_shape (sq, x));
  g_autoptr (tw_tensor) all = run1 ("squeeze", NULL, u);   /* every size-1 dim */
  g_assert_true (tw_tensor_same_shape (all, x));
  tw_tensor *gin[1] = { x };
  twt_assert_grad ("unsqueeze", a, gin, 1, (gboolean[]) { TRUE }, TOL_GRAD);

  tw_tinfo_set (&in, TW_F32, 3, (int64_t[]) { TW_DIM_N, 1, 4 });
  g_assert_true (twt_infer ("squeeze", NULL, &in, 1, &out, &error));   /* N stays */
  g_assert_no_error (error);
  g_assert_cmpint (out.ndim, ==, 2);
  g_assert_cmpint (out.dims[0], ==, TW_DIM_N);
  tw_attrs_set_ints (a, "axes", 1, (int64_t[]) { 0 });
  twt_assert_infer_error ("squeeze", a, &in, 1, "dim 0 of f32[N, 1, 4]", "batch N");
  tw_attrs_set_ints (a, "axes", 1, (int64_t[]) { 2 });
  twt_assert_infer_error ("squeeze", a, &in, 1, "dim 2 of f32[N, 1, 4] is 4", "not 1");
  tw_attrs_set_ints (a, "axes", 1, (int64_t[]) { 3 });
  twt_assert_infer_error ("squeeze", a, &in, 1, "axis 3 is out of range", "f32[N, 1, 4]");
  tw_attrs_set_ints (a, "axes", 2, (int64_t[]) { 1, -4 });     /* both dim 1 of the rank-5 output */
  twt_assert_infer_error ("unsqueeze", a, &in, 1, "axis -4 is named twice", NULL);
  twt_assert_infer_error ("unsqueeze", NULL, &in, 1, "axes", NULL);
  tw_attrs_free (a);

  /* cast: truncation towards zero, saturation, NaN to 0, exact integers */
  static const double src[8] = { -1.7, 1.7, 255.5, 300, -3, NAN, 1e30, 16777217 };
  g_autoptr (tw_tensor) xf = tw_tensor_from_data (TW_F64, 1, (int64_t[]) { 8 }, src);
  static const struct
  {
    const char *to;
    double want[8];
  } casts[] = {
    { "i64", { -1, 1, 255, 300, -3, 0, 9223372036854774784.0, 16777217 } },
    { "i32", { -1, 1, 255, 300, -3, 0, 2147483647, 16777217 } },
    { "u8", { 0, 1, 255, 255, 0, 0, 255, 255 } },
    { "f32", { -1.7f, 1.7f, 255.5, 300, -3, NAN, 1e30f, 16777216 } },   /* 2^24 + 1 rounds */
  };
  for (guint c = 0; c < G_N_ELEMENTS (casts); c++)
    {
      tw_attrs *ca = tw_attrs_new ();
      tw_attrs_set_string (ca, "to", casts[c].to);
      g_autoptr (tw_tensor) y = run1 ("cast", ca, xf);
      g_assert_cmpstr (tw_dtype_name (y->dtype), ==, casts[c].to);
      for (int i = 0; i < 8; i++)
        {
          double v = tw_tensor_get_flat (y, i);
          if (!(v == casts[c].want[i] || (isnan (v) && isnan (casts[c].want[i]))))
            g_error ("cast %g to %s gave %.17g, expected %.17g", src[i], casts[c].to, v,
                     casts[c].want[i]);
        }
      tw_attrs_free (ca);
    }
  g_autoptr (tw_tensor) xi = tw_tensor_from_data (TW_I64, 1, (int64_t[]) { 2 },
                                                  (int64_t[]) { G_MAXINT64, -5 });
  tw_attrs *ca = tw_attrs_new ();
  tw_attrs_set_string (ca, "to", "i64");
  g_autoptr (tw_tensor) same = run1 ("cast", ca, xi);
  g_assert_cmpint (tw_tensor_i64 (same)[0], ==, G_MAXINT64);
  /* f64 -> f32: the gradient is dy cast back to f64 (finite differences
   * would only see the f32 rounding steps) */
  tw_attrs_set_string (ca, "to", "f32");
  g_autoptr (tw_tensor) xd = twt_randn (TW_F64, 2, (int64_t[]) { 3, 4 }, 78);
  g_autoptr (tw_tensor) yd = run1 ("cast", ca, xd);
  g_autoptr (tw_tensor) dy = twt_randn (TW_F32, 2, (int64_t[]) { 3, 4 }, 79);
  tw_emit *e = tw_eager_emit_new (NULL);
  tw_val *vin[1] = { tw_eager_emit_wrap (e, xd) }, *vout[1] = { tw_eager_emit_wrap (e, yd) };
  tw_val *vg[1] = { tw_eager_emit_wrap (e, dy) }, *vgin[1] = { NULL };
  g_assert_true (tw_op_lookup ("cast")->backward (e, ca, vin, 1, vout, vg, (gboolean[]) { TRUE },
                                                  vgin));
  tw_tensor *gx = tw_eager_emit_tensor (vgin[0]);
  g_assert_true (gx->dtype == TW_F64);
  for (int i = 0; i < 12; i++)
    g_assert_cmpfloat (tw_tensor_f64 (gx)[i], ==, tw_tensor_f32 (dy)[i]);
  tw_eager_emit_free (e);
  tw_attrs_set_string (ca, "to", "f16");
  twt_assert_infer_error ("cast", ca, &in, 1, "to", "f16");
  tw_attrs_free (ca);
}

/* ---- where, expand -------------------------------------------------------------------- */

/* Element of t (shape aligned to the right of the output's) at output index idx. */
static double
bcast_get (const tw_tensor *t, int ond, const int64_t *idx)
{
  int64_t f = 0;
  for (int d = 0; d < t->ndim; d++)
    {
      int64_t i = idx[ond - t->ndim + d];
      f = f * t->shape[d] + (t->shape[d] == 1 ? 0 : i);
    }
  return tw_tensor_get_flat (t, f);
}

static void
test_where_expand (void)
{
  /* cond u8 [2, 1, 5], a [3, 1], b [5] -> [2, 3, 5] */
  g_autoptr (tw_tensor) cond = tw_tensor_new (TW_U8, 3, (int64_t[]) { 2, 1, 5 });
  for (int i = 0; i < 10; i++)
    tw_tensor_u8 (cond)[i] = (guint8) ((i * 7) % 3);    /* 0, 1, 2: two of three true */
  g_autoptr (tw_tensor) a = twt_randn (TW_F64, 2, (int64_t[]) { 3, 1 }, 31);
  g_autoptr (tw_tensor) b = twt_randn (TW_F64, 1, (int64_t[]) { 5 }, 32);
  tw_tensor *in[3] = { cond, a, b }, *out[1];
  twt_run_guarded ("where", NULL, in, 3, out, NULL);
  g_autoptr (tw_tensor) y = out[0];
  g_assert_cmpint (y->ndim, ==, 3);
  for (int64_t f = 0; f < 30; f++)
    {
      int64_t idx[3];
      unflatten (3, y->shape, f, idx);
      double want = bcast_get (cond, 3, idx) != 0 ? bcast_get (a, 3, idx) : bcast_get (b, 3, idx);
      g_assert_cmpfloat (tw_tensor_f64 (y)[f], ==, want);
    }
  /* the gradients of a and b (cond u8 is not differentiated) */
  twt_assert_grad ("where", NULL, in, 3, ((gboolean[]) { FALSE, TRUE, TRUE }), TOL_GRAD);

  /* expand [3, 1] with [2, 1, 4] -> [2, 3, 4], i64 too (a copy of any dtype) */
  tw_attrs *ea = tw_attrs_new ();
  tw_attrs_set_ints (ea, "shape", 3, (int64_t[]) { 2, 1, 4 });
  g_autoptr (tw_tensor) xi = twt_randint (2, (int64_t[]) { 3, 1 }, 33, 1000);
  g_autoptr (tw_tensor) ye = run1 ("expand", ea, xi);
  g_assert_cmpint (ye->ndim, ==, 3);
  for (int64_t f = 0; f < 24; f++)
    {
      int64_t idx[3];
      unflatten (3, ye->shape, f, idx);
      g_assert_cmpint (tw_tensor_i64 (ye)[f], ==, (int64_t) bcast_get (xi, 3, idx));
    }
  g_autoptr (tw_tensor) xd = twt_randn (TW_F64, 2, (int64_t[]) { 3, 1 }, 34);
  tw_tensor *gin[1] = { xd };
  twt_assert_grad ("expand", ea, gin, 1, (gboolean[]) { TRUE }, TOL_GRAD);
  tw_tinfo x4;
  tw_tinfo_set (&x4, TW_F32, 2, (int64_t[]) { 3, 2 });
  twt_assert_infer_error ("expand", ea, &x4, 1, "[3, 2] and [2, 1, 4]", NULL);   /* 2 against 4 */
  tw_attrs_set_ints (ea, "shape", 1, (int64_t[]) { -2 });
  twt_assert_infer_error ("expand", ea, &x4, 1, "entry 0 of 'shape' is -2", NULL);
  tw_attrs_free (ea);
  tw_tinfo wi[3];
  tw_tinfo_set (&wi[0], TW_U8, 1, (int64_t[]) { 3 });
  tw_tinfo_set (&wi[1], TW_F32, 1, (int64_t[]) { 3 });
  tw_tinfo_set (&wi[2], TW_F64, 1, (int64_t[]) { 3 });
  twt_assert_infer_error ("where", NULL, wi, 3, "f32[3] and f64[3]", NULL);
}

/* ---- eager against compiled ---------------------------------------------------------- */

/* Every op of this file in one trainable network: padded (reflect) conv,
 * hard_swish, 2x nearest upsampling, clip, pooling, relu6, hard_sigmoid,
 * a constant-padded second conv, a linear head. */
static const char model_json[] =
  "{ \"format\": \"twb-model\", \"version\": 1, \"name\": \"onnx-ops\","
  "  \"graph\": { \"nodes\": ["
  "    { \"id\": \"x\", \"op\": \"input\", \"attrs\": { \"shape\": [2, 7, 9], \"role\": \"data\" } },"
  "    { \"id\": \"y\", \"op\": \"input\", \"attrs\": { \"shape\": [], \"dtype\": \"i64\", \"role\": \"label\" } },"
  "    { \"id\": \"p1\", \"op\": \"pad\", \"inputs\": [\"x\"], \"attrs\": { \"pads\": [1, 2, 1, 2], \"mode\": \"reflect\" } },"
  "    { \"id\": \"c1\", \"op\": \"conv2d\", \"inputs\": [\"p1\"], \"attrs\": { \"out_channels\": 4, \"kernel_size\": 3 } },"
  "    { \"id\": \"a1\", \"op\": \"hard_swish\", \"inputs\": [\"c1\"] },"
  "    { \"id\": \"r1\", \"op\": \"resize\", \"inputs\": [\"a1\"], \"attrs\": { \"scales\": [2, 2], \"coordinate_transformation_mode\": \"asymmetric\", \"nearest_mode\": \"floor\" } },"
  "    { \"id\": \"k1\", \"op\": \"clip\", \"inputs\": [\"r1\"], \"attrs\": { \"min\": -0.5, \"max\": 1.5 } },"
  "    { \"id\": \"mp\", \"op\": \"max_pool2d\", \"inputs\": [\"k1\"], \"attrs\": { \"kernel_size\": 2 } },"
  "    { \"id\": \"a2\", \"op\": \"relu6\", \"inputs\": [\"mp\"] },"
  "    { \"id\": \"p2\", \"op\": \"pad\", \"inputs\": [\"a2\"], \"attrs\": { \"pads\": [1, 0, 0, 1], \"value\": 0.5 } },"
  "    { \"id\": \"c2\", \"op\": \"conv2d\", \"inputs\": [\"p2\"], \"attrs\": { \"out_channels\": 3, \"kernel_size\": 3 } },"
  "    { \"id\": \"a3\", \"op\": \"hard_sigmoid\", \"inputs\": [\"c2\"] },"
  "    { \"id\": \"e1\", \"op\": \"pad\", \"inputs\": [\"a3\"], \"attrs\": { \"pads\": [1, 1], \"mode\": \"edge\" } },"
  "    { \"id\": \"f\", \"op\": \"flatten\", \"inputs\": [\"e1\"] },"
  "    { \"id\": \"fc\", \"op\": \"linear\", \"inputs\": [\"f\"], \"attrs\": { \"out_features\": 5 } },"
  "    { \"id\": \"loss\", \"op\": \"cross_entropy\", \"inputs\": [\"fc\", \"y\"] }"
  "  ], \"outputs\": [\"fc\"] },"
  "  \"training\": { \"loss\": \"loss\", \"batch_size\": 6, \"seed\": 3,"
  "                \"optimizer\": { \"type\": \"sgd\", \"lr\": 0.1 } } }";

static void
test_eager_compiled (void)
{
  twt_check_train_parity (model_json, "onnx-ops", 8, 4, (int64_t[]) { 6, 2, 7, 9 }, 900, 5);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  g_test_add_func ("/engine/ops/onnx/onnx-cases", test_onnx_cases);
  g_test_add_func ("/engine/ops/onnx/activations", test_activations);
  g_test_add_func ("/engine/ops/onnx/math", test_math);
  g_test_add_func ("/engine/ops/onnx/pad", test_pad);
  g_test_add_func ("/engine/ops/onnx/resize", test_resize);
  g_test_add_func ("/engine/ops/onnx/errors", test_errors);
  g_test_add_func ("/engine/ops/onnx/squeeze-cast", test_squeeze_cast);
  g_test_add_func ("/engine/ops/onnx/where-expand", test_where_expand);
  g_test_add_func ("/engine/ops/onnx/eager-compiled", test_eager_compiled);
  return g_test_run ();
}
