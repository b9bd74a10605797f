/* conv.c — 2-D convolution (im2col + GEMM) and its internal gradient ops.
 *
 *   conv2d             (x [N, C, H, W], weight [O, C/G, kh, kw], bias [O]) -> [N, O, Ho, Wo]
 *   conv2d_grad_input  (dy [N, O, Ho, Wo], weight)                   -> dx [N, C, in_h, in_w]
 *   conv2d_grad_weight (dy, x)                                        -> dweight [O, C/G, kh, kw]
 *   conv2d_grad_bias   (dy)                                           -> dbias [O]
 *
 * The typed kernels live in conv_tmpl.h; the pools in pool.c share the
 * window geometry (conv_private.h).
 */
#include "engine/cpu/gemm.h"
#include "engine/cpu/parallel.h"
#include "engine/memory.h"
#include "engine/ops/conv_private.h"

#include <string.h>

/* Workspace budget for the im2col matrices of one GEMM.  Samples are batched
 * into one GEMM while their columns (plus the GEMM output) fit: 256 KiB stays
 * in a core's L2.  On the LeNet-5 layers at batch 64 (1 thread, 2-core VM)
 * budgets from one sample to 4 MiB measured within noise of each other;
 * batching helps layers with few output pixels per sample, where one
 * sample's GEMM is too small for a GEMM kernel to reach its speed. */
#define CONV_WS_BUDGET ((size_t) 256 << 10)

static gboolean
conv_is_pointwise (const conv_geom *g)
{
  return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
}

#define TW_CAT_(a, b) a##_##b
#define TW_CAT(a, b) TW_CAT_ (a, b)

#define T float
#define TW_FN(name) TW_CAT (name, f32)
#define GEMM tw_gemm_f32
#include "engine/ops/conv_tmpl.h"
#undef T
#undef TW_FN
#undef GEMM

#define T double
#define TW_FN(name) TW_CAT (name, f64)
#define GEMM tw_gemm_f64
#include "engine/ops/conv_tmpl.h"
#undef T
#undef TW_FN
#undef GEMM

/* ---- window geometry (shared with pool.c) ------------------------------ */

/* Workspace elements per sample (col + tmp) and for the padded sample,
 * checked: FALSE when they overflow int64. */
static gboolean
conv_ws_parts (const conv_geom *g, int64_t *per, int64_t *pad)
{
  int64_t cg = g->c / MAX (g->groups, 1), og = g->o / MAX (g->groups, 1), t, hp, wp, p2;
  return tw_size_mul (cg, g->kh, &t) && tw_size_mul (t, g->kw, &t) && tw_size_add (t, og, &t)
         && tw_size_mul (t, MAX (g->ho, 1), &t) && tw_size_mul (t, MAX (g->wo, 1), per)
         && tw_size_mul (g->ph, 2, &p2) && tw_size_add (MAX (g->h, 0), p2, &hp)
         && tw_size_mul (g->pw, 2, &p2) && tw_size_add (MAX (g->w, 0), p2, &wp)
         && tw_size_mul (cg, hp, &t) && tw_size_mul (t, wp, pad);
}


static gboolean
read_pair (const char *op, const tw_attrs *a, const char *name, int64_t fallback, int64_t min,
           int64_t out[2], GError **error)
{
  const tw_attr_value *v = tw_attrs_lookup (a, name);
  if (v && v->type == TW_ATTR_INTS && (v->n < 1 || v->n > 2))
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "%s: '%s' must be one int or [h, w], got a list of %d", op, name, v->n);
      return FALSE;
    }
  tw_attrs_get_ints2 (a, name, out, fallback);
  if (out[0] < min || out[1] < min)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "%s: '%s' must be at least %" G_GINT64_FORMAT ", got [%" G_GINT64_FORMAT
                   ", %" G_GINT64_FORMAT "]",
                   op, name, min, out[0], out[1]);
      return FALSE;
    }
  return TRUE;
}

gboolean
tw_conv_read_window (const char *op, const tw_attrs *a, gboolean stride_is_kernel, conv_geom *g,
                     GError **error)
{
  int64_t k[2], s[2], p[2], d[2];
  if (!tw_attrs_has (a, "kernel_size"))
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR, "%s needs attribute 'kernel_size'", op);
      return FALSE;
    }
  if (!read_pair (op, a, "kernel_size", 1, 1, k, error))
    return FALSE;
  if (stride_is_kernel && !tw_attrs_has (a, "stride"))
    {
      s[0] = k[0];
      s[1] = k[1];
    }
  else if (!read_pair (op, a, "stride", 1, 1, s, error))
    return FALSE;
  if (!read_pair (op, a, "padding", 0, 0, p, error)
      || !read_pair (op, a, "dilation", 1, 1, d, error))
    return FALSE;
  g->kh = k[0], g->kw = k[1];
  g->sh = s[0], g->sw = s[1];
  g->ph = p[0], g->pw = p[1];
  g->dh = d[0], g->dw = d[1];
  return TRUE;
}

gboolean
tw_conv_out_size (int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, int64_t *out)
{
  if (in == TW_DIM_N)
    {
      *out = TW_DIM_N;
      return TRUE;
    }
  int64_t padded, span;
  if (!tw_conv_window_fits (in, k, p, d, &padded, &span))
    return FALSE;
  if (padded < span)
    return FALSE;
  *out = (padded - span) / s + 1;
  return TRUE;
}

gboolean
tw_conv_window_fits (int64_t in, int64_t k, int64_t p, int64_t d, int64_t *padded, int64_t *span)
{
  int64_t pp, dk;
  return tw_size_mul (p, 2, &pp) && tw_size_add (MAX (in, 0), pp, padded)
         && tw_size_mul (d, k - 1, &dk) && tw_size_add (dk, 1, span);
}

gboolean
tw_conv_check_spatial (const char *op, const tw_tinfo *x, conv_geom *g, GError **error)
{
  int64_t padded, span;
  if (!tw_conv_window_fits (x->dims[2], g->kh, g->ph, g->dh, &padded, &span)
      || !tw_conv_window_fits (x->dims[3], g->kw, g->pw, g->dw, &padded, &span))
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "%s: 'padding' [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "], 'dilation' [%"
                   G_GINT64_FORMAT ", %" G_GINT64_FORMAT "] and 'kernel_size' [%" G_GINT64_FORMAT
                   ", %" G_GINT64_FORMAT "] overflow the window's size (more than 2^63)",
                   op, g->ph, g->pw, g->dh, g->dw, g->kh, g->kw);
      return FALSE;
    }
  if (!tw_conv_out_size (x->dims[2], g->kh, g->sh, g->ph, g->dh, &g->ho)
      || !tw_conv_out_size (x->dims[3], g->kw, g->sw, g->pw, g->dw, &g->wo))
    {
      g_autofree char *xs = tw_tinfo_to_string (x);
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "%s: input %s is too small for kernel %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                   " (dilation %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT ", padding %" G_GINT64_FORMAT
                   "x%" G_GINT64_FORMAT "): expected H >= %" G_GINT64_FORMAT " and W >= %" G_GINT64_FORMAT
                   " so that the output is at least 1x1",
                   op, xs, g->kh, g->kw, g->dh, g->dw, g->ph, g->pw,
                   MAX (1, g->dh * (g->kh - 1) + 1 - 2 * g->ph),
                   MAX (1, g->dw * (g->kw - 1) + 1 - 2 * g->pw));
      return FALSE;
    }
  return TRUE;
}

/* ---- conv2d ------------------------------------------------------------ */

static const char *const init_choices[] = { "default", "he_normal", "he_uniform",
                                            "xavier_uniform", "xavier_normal", "zeros", NULL };

static const tw_attr_spec conv2d_attrs[] = {
  { "out_channels", TW_ATTR_INT, NULL, TRUE, "number of output channels O" },
  { "kernel_size", TW_ATTR_INTS, NULL, TRUE, "kernel size: k or [kh, kw]" },
  { "stride", TW_ATTR_INTS, "1", FALSE, "stride: s or [sh, sw]" },
  { "padding", TW_ATTR_INTS, "0", FALSE, "zero padding on each side: p or [ph, pw]" },
  { "dilation", TW_ATTR_INTS, "1", FALSE, "spacing of the kernel taps: d or [dh, dw]" },
  { "groups", TW_ATTR_INT, "1", FALSE, "channel groups (C for depthwise)" },
  { "bias", TW_ATTR_BOOL, "true", FALSE, "add a learnt bias per output channel" },
  { "init", TW_ATTR_STRING, "\"default\"", FALSE,
    "weight initialisation (default: PyTorch's kaiming_uniform(a=sqrt(5)))", init_choices },
  { NULL }
};

/* Attributes of the internal gradient ops: the window and the groups. */
#define CONV_WINDOW_ATTRS                                                                  \
  { "kernel_size", TW_ATTR_INTS, NULL, TRUE, "kernel size: k or [kh, kw]" },               \
  { "stride", TW_ATTR_INTS, "1", FALSE, "stride" },                                        \
  { "padding", TW_ATTR_INTS, "0", FALSE, "zero padding on each side" },                    \
  { "dilation", TW_ATTR_INTS, "1", FALSE, "dilation" },                                    \
  { "groups", TW_ATTR_INT, "1", FALSE, "channel groups" }

static const tw_attr_spec conv2d_grad_input_attrs[] = {
  CONV_WINDOW_ATTRS,
  { "in_h", TW_ATTR_INT, NULL, TRUE, "height of the forward input" },
  { "in_w", TW_ATTR_INT, NULL, TRUE, "width of the forward input" },
  { NULL }
};

static const tw_attr_spec conv2d_grad_weight_attrs[] = { CONV_WINDOW_ATTRS, { NULL } };
static const tw_attr_spec conv2d_grad_bias_attrs[] = { { NULL } };

static gboolean
check_float (const char *op, const char *what, const tw_tinfo *t, GError **error)
{
  if (t->dtype == TW_F32 || t->dtype == TW_F64)
    return TRUE;
  g_autofree char *s = tw_tinfo_to_string (t);
  g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_DTYPE, "%s expects %s of type f32 or f64, got %s",
               op, what, s);
  return FALSE;
}

static gboolean
check_rank4 (const char *op, const char *what, const tw_tinfo *t, GError **error)
{
  if (t->ndim == 4)
    return check_float (op, what, t, error);
  g_autofree char *s = tw_tinfo_to_string (t);
  g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
               "%s expects %s of rank 4 [N, C, H, W], got %s", op, what, s);
  return FALSE;
}

/* Window, groups and output channels of a conv op; checks x [N, C, H, W]
 * against them.  o < 0: take O from the attribute "out_channels". */
static gboolean
conv_setup (const char *op, const tw_attrs *a, const tw_tinfo *x, int64_t o, conv_geom *g,
            GError **error)
{
  memset (g, 0, sizeof *g);
  if (!check_rank4 (op, "input", x, error) || !tw_conv_read_window (op, a, FALSE, g, error))
    return FALSE;
  g->groups = tw_attrs_get_int (a, "groups", 1);
  g->o = o >= 0 ? o : tw_attrs_get_int (a, "out_channels", 0);
  g->n = x->dims[0], g->c = x->dims[1], g->h = x->dims[2], g->w = x->dims[3];
  if (g->groups < 1 || g->o < 1)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "%s: 'groups' and 'out_channels' must be positive, got %" G_GINT64_FORMAT
                   " and %" G_GINT64_FORMAT,
                   op, g->groups, g->o);
      return FALSE;
    }
  g_autofree char *xs = tw_tinfo_to_string (x);
  if (g->c == TW_DIM_N)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "%s expects input [N, C, H, W] with a known channel count C, got %s", op, xs);
      return FALSE;
    }
  if (g->c % g->groups != 0)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "%s: input channels must be divisible by groups=%" G_GINT64_FORMAT
                   ", got %" G_GINT64_FORMAT " channels in %s",
                   op, g->groups, g->c, xs);
      return FALSE;
    }
  if (g->o % g->groups != 0)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                   "%s: out_channels must be divisible by groups=%" G_GINT64_FORMAT
                   ", got %" G_GINT64_FORMAT,
                   op, g->groups, g->o);
      return FALSE;
    }
  if (!tw_conv_check_spatial (op, x, g, error))
    return FALSE;
  int64_t per, pad;
  if (!conv_ws_parts (g, &per, &pad) || !tw_size_mul (per, 8, &per) || !tw_size_mul (pad, 8, &pad))
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                   "%s: the im2col buffer of one sample (in_channels/groups x kernel_size x "
                   "output size) would be larger than 2^63 bytes; check 'kernel_size' [%"
                   G_GINT64_FORMAT ", %" G_GINT64_FORMAT "] and 'padding' [%" G_GINT64_FORMAT
                   ", %" G_GINT64_FORMAT "]", op, g->kh, g->kw, g->ph, g->pw);
      return FALSE;
    }
  return TRUE;
}

static gboolean
expect_shape (const char *op, const char *what, const tw_tinfo *got, tw_dtype dtype, int ndim,
              const int64_t *dims, const char *why, GError **error)
{
  tw_tinfo want;
  tw_tinfo_set (&want, dtype, ndim, dims);
  if (tw_tinfo_equal (&want, got))
    return TRUE;
  g_autofree char *ws = tw_tinfo_to_string (&want);
  g_autofree char *gs = tw_tinfo_to_string (got);
  g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE, "%s expects %s %s%s, got %s", op, what, ws,
               why, gs);
  return FALSE;
}

static gboolean
conv2d_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  conv_geom g;
  gboolean bias = tw_attrs_get_bool (a, "bias", TRUE);
  if (!conv_setup ("conv2d", a, &in[0], -1, &g, error))
    return FALSE;
  if (n_in > (bias ? 3 : 2))
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ARITY,
                   "conv2d expects at most %d inputs (x, weight%s), got %d", bias ? 3 : 2,
                   bias ? ", bias" : "", n_in);
      return FALSE;
    }
  if (n_in > 1)
    {
      const tw_tinfo *w = &in[1];
      /* A weight that disagrees on the input channels is reported as an input
       * error: the weight is what the user drew, the input came from upstream. */
      if (w->ndim == 4 && w->dims[1] * g.groups != g.c)
        {
          g_autofree char *ws = tw_tinfo_to_string (w);
          g_autofree char *xs = tw_tinfo_to_string (&in[0]);
          g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
                       "conv2d expects input with %" G_GINT64_FORMAT
                       " channels (in_channels from the weight %s, groups %" G_GINT64_FORMAT
                       "), got %s",
                       w->dims[1] * g.groups, ws, g.groups, xs);
          return FALSE;
        }
      int64_t wd[4] = { g.o, g.c / g.groups, g.kh, g.kw };
      if (!expect_shape ("conv2d", "weight", w, in[0].dtype, 4, wd,
                         " [out_channels, in_channels/groups, kh, kw]", error))
        return FALSE;
    }
  if (n_in > 2 && !expect_shape ("conv2d", "bias", &in[2], in[0].dtype, 1, &g.o, "", error))
    return FALSE;
  int64_t od[4] = { g.n, g.o, g.ho, g.wo };
  tw_tinfo_set (&out[0], in[0].dtype, 4, od);
  return TRUE;
}

static void
init_for (const tw_attrs *a, tw_init *weight, tw_init *bias)
{
  const char *s = tw_attrs_get_string (a, "init", "default");
  /* PyTorch's default for both; with an explicit scheme the bias starts at 0
   * (the usual companion of He / Xavier initialisation). */
  *bias = TW_INIT_ZEROS;
  if (g_str_equal (s, "he_normal"))
    *weight = TW_INIT_HE_NORMAL;
  else if (g_str_equal (s, "he_uniform"))
    *weight = TW_INIT_HE_UNIFORM;
  else if (g_str_equal (s, "xavier_uniform"))
    *weight = TW_INIT_XAVIER_UNIFORM;
  else if (g_str_equal (s, "xavier_normal"))
    *weight = TW_INIT_XAVIER_NORMAL;
  else if (g_str_equal (s, "zeros"))
    *weight = TW_INIT_ZEROS;
  else
    *weight = *bias = TW_INIT_UNIFORM_FAN_IN;
}

static int
conv2d_params (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_param_spec *out,
               GError **error)
{
  conv_geom g;
  tw_init wi, bi;
  if (!conv_setup ("conv2d", a, &in[0], -1, &g, error))
    return -1;
  init_for (a, &wi, &bi);
  /* fan_in / fan_out as torch.nn.init._calculate_fan_in_and_fan_out on
   * weight [O, C/G, kh, kw]: receptive field kh*kw. */
  int64_t rf = g.kh * g.kw, fan_in = g.c / g.groups * rf, fan_out = g.o * rf;
  int64_t wd[4] = { g.o, g.c / g.groups, g.kh, g.kw };
  memset (out, 0, 2 * sizeof *out);
  out[0].suffix = "weight";
  tw_tinfo_set (&out[0].info, in[0].dtype, 4, wd);
  out[0].init = wi;
  out[0].fan_in = fan_in, out[0].fan_out = fan_out;
  out[0].trainable = TRUE;
  if (!tw_attrs_get_bool (a, "bias", TRUE))
    return 1;
  out[1].suffix = "bias";
  tw_tinfo_set (&out[1].info, in[0].dtype, 1, &g.o);
  out[1].init = bi;
  out[1].fan_in = fan_in, out[1].fan_out = fan_out;
  out[1].trainable = TRUE;
  return 2;
}

/* Samples per GEMM within CONV_WS_BUDGET (at least 1). */
int64_t
tw_conv_chunk (const conv_geom *g, size_t es)
{
  int64_t per, pad;
  if (!conv_ws_parts (g, &per, &pad))
    return 1;
  int64_t nb = (int64_t) (CONV_WS_BUDGET / es) / MAX (per, 1);
  return CLAMP (nb, 1, MAX (g->n, 1));
}

/* Elements of workspace for chunks of nb samples: col + tmp + padded sample;
 * SIZE_MAX when that overflows (tw_scratch then fails). */
size_t
tw_conv_workspace_elems (const conv_geom *g, int64_t nb)
{
  int64_t per, pad, t;
  if (!conv_ws_parts (g, &per, &pad) || !tw_size_mul (per, nb, &t) || !tw_size_add (t, pad, &t)
      || !tw_size_mul (t, 8, &pad))
    return SIZE_MAX;
  return (size_t) t;
}

/* A chunk's GEMMs (all groups) below this many multiply-adds a thread do
 * not split well: the GEMM's own threshold (engine/cpu/gemm.c, threads_for:
 * 2^19 a thread).  With 4 chunks a thread or more, sharing the chunks wins
 * anyway: no packing is duplicated, one region instead of several per chunk,
 * and a late thread's chunks go to the others (dynamic schedule). */
#define CONV_TEAM_MIN_WORK ((double) (1 << 19))
#define CONV_TEAM_CHUNKS 4

int
tw_conv_team (const conv_geom *g, int64_t nb)
{
  if (g->threads <= 1 || g->n <= 1 || nb < 1)
    return 1;
  int64_t chunks = (g->n + nb - 1) / nb;
  int nt = (int) MIN ((int64_t) g->threads, chunks);
  if (nt <= 1)
    return 1;
  double k = (double) (g->c / MAX (g->groups, 1)) * (double) g->kh * (double) g->kw;
  double work = (double) g->o * k * (double) nb * (double) g->ho * (double) g->wo;
  if (chunks >= (int64_t) CONV_TEAM_CHUNKS * nt || work < nt * CONV_TEAM_MIN_WORK)
    return nt;
  return 1;
}

/* At most 8 runs (enough for the thread counts the engine is run at; each
 * run costs one pass over dW to add), and their partials within 4 MiB: for
 * the small layers of the example networks (LeNet-5's conv2: 16 x 150
 * floats) that is 8 runs; ResNet's large layers (dW of megabytes) keep one,
 * their GEMMs split over the threads instead. */
#define CONV_WGRAD_GROUPS 8
#define CONV_WGRAD_PARTIAL_BUDGET ((size_t) 4 << 20)

int64_t
tw_conv_wgrad_groups (const conv_geom *g, int64_t nb, size_t es)
{
  if (g->n <= 1 || nb < 1)
    return 1;
  int64_t chunks = (g->n + nb - 1) / nb;
  int64_t dw = (g->o / MAX (g->groups, 1)) * (g->c / MAX (g->groups, 1)) * g->kh * g->kw;
  int64_t groups = MIN (chunks, CONV_WGRAD_GROUPS);
  while (groups > 1 && (size_t) (groups - 1) * (size_t) dw * es > CONV_WGRAD_PARTIAL_BUDGET)
    groups--;
  return groups;
}

void *
tw_conv_scratch (const tw_kctx *ctx, const conv_geom *g, int64_t nb, int copies, size_t extra,
                 size_t es, const char *op, GError **error)
{
  size_t elems = tw_conv_workspace_elems (g, nb), bytes;
  if (elems == SIZE_MAX || !g_size_checked_mul (&elems, elems, (size_t) MAX (copies, 1))
      || !g_size_checked_add (&elems, elems, extra) || !g_size_checked_mul (&bytes, elems, es))
    bytes = SIZE_MAX;
  void *p = tw_scratch_try (ctx, bytes);
  if (p == NULL)
    {
      g_autofree char *b = tw_format_bytes (bytes);
      g_autofree char *have = tw_format_bytes (tw_memory_available ());
      g_set_error (error, TW_MEMORY_ERROR, TW_MEMORY_ERROR_EXHAUSTED,
                   "%s: out of memory for the im2col columns of %" G_GINT64_FORMAT " sample%s "
                   "(%s of scratch; %s available)", op, nb, nb == 1 ? "" : "s",
                   bytes == SIZE_MAX ? "more than 2^64 bytes" : b, have);
    }
  return p;
}

/* Concrete geometry at run time: x [N, C, H, W], output [N, O, Ho, Wo]. */
void
tw_conv_geom_run (const tw_kctx *ctx, const tw_attrs *a, const tw_tensor *x, const tw_tensor *y,
               conv_geom *g)
{
  memset (g, 0, sizeof *g);
  tw_conv_read_window ("conv2d", a, FALSE, g, NULL);
  g->groups = tw_attrs_get_int (a, "groups", 1);
  g->n = x->shape[0], g->c = x->shape[1], g->h = x->shape[2], g->w = x->shape[3];
  g->o = y->shape[1], g->ho = y->shape[2], g->wo = y->shape[3];
  g->threads = tw_conv_threads (ctx);
}

static gboolean
conv2d_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                tw_tensor *const *out, GError **error)
{
  conv_geom g;
  tw_conv_geom_run (ctx, a, in[0], out[0], &g);
  size_t es = tw_dtype_size (in[0]->dtype);
  int64_t nb = tw_conv_chunk (&g, es);
  int team = tw_conv_team (&g, nb);
  void *ws = tw_conv_scratch (ctx, &g, nb, team, 0, es, "conv2d", error);
  if (ws == NULL)
    return FALSE;
  if (in[0]->dtype == TW_F32)
    conv_forward_f32 (&g, tw_tensor_f32 (in[0]), tw_tensor_f32 (in[1]),
                      n_in > 2 ? tw_tensor_f32 (in[2]) : NULL, tw_tensor_f32 (out[0]), ws, nb,
                      team);
  else
    conv_forward_f64 (&g, tw_tensor_f64 (in[0]), tw_tensor_f64 (in[1]),
                      n_in > 2 ? tw_tensor_f64 (in[2]) : NULL, tw_tensor_f64 (out[0]), ws, nb,
                      team);
  return TRUE;
}

/* The window attributes of a conv2d node, for its gradient ops. */
static tw_attrs *
window_attrs (const tw_attrs *a)
{
  static const char *const names[] = { "kernel_size", "stride", "padding", "dilation", "groups" };
  tw_attrs *r = tw_attrs_new ();
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    if (tw_attrs_has (a, names[i]))
      tw_attrs_set (r, names[i], tw_attrs_lookup (a, names[i]));
  return r;
}

static gboolean
conv2d_backward (tw_emit *e, const tw_attrs *a, tw_val *const *in, int n_in, tw_val *const *out,
                 tw_val *const *gout, const gboolean *needs, tw_val **gin)
{
  gboolean ok = TRUE;
  if (gout[0] == NULL)
    return TRUE;                /* the output does not reach the loss: zero gradients */
  tw_attrs *wa = window_attrs (a);
  if (needs[0])
    {
      const tw_tinfo *x = tw_val_info (e, in[0]);
      tw_attrs *ia = tw_attrs_copy (wa);
      tw_attrs_set_int (ia, "in_h", x->dims[2]);
      tw_attrs_set_int (ia, "in_w", x->dims[3]);
      gin[0] = tw_emit2 (e, "conv2d_grad_input", ia, gout[0], in[1]);
      ok &= gin[0] != NULL;
      tw_attrs_free (ia);
    }
  if (needs[1])
    {
      gin[1] = tw_emit2 (e, "conv2d_grad_weight", wa, gout[0], in[0]);
      ok &= gin[1] != NULL;
    }
  if (n_in > 2 && needs[2])
    {
      gin[2] = tw_emit1 (e, "conv2d_grad_bias", NULL, gout[0]);
      ok &= gin[2] != NULL;
    }
  tw_attrs_free (wa);
  return ok;
}

static void
io_bytes (const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out, tw_cost *cost)
{
  cost->bytes_read = cost->bytes_written = 0;
  for (int i = 0; i < n_in; i++)
    cost->bytes_read += (double) tw_tinfo_numel (&in[i], NULL) * tw_dtype_size (in[i].dtype);
  for (int k = 0; k < n_out; k++)
    cost->bytes_written += (double) tw_tinfo_numel (&out[k], NULL) * tw_dtype_size (out[k].dtype);
}

/* 2 N O Ho Wo (C/G) kh kw: one multiply-add per tap and output element. */
static void
conv2d_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
             tw_cost *cost)
{
  int64_t k[2];
  tw_attrs_get_ints2 (a, "kernel_size", k, 1);
  int64_t cg = in[0].dims[1] / MAX (1, tw_attrs_get_int (a, "groups", 1));
  io_bytes (in, n_in, out, n_out, cost);
  cost->flops = 2.0 * (double) tw_tinfo_numel (&out[0], NULL) * ((double) cg * (double) k[0] * (double) k[1]);
}

static const char *const conv2d_inputs[] = { "x", "weight", "bias", NULL };

static const tw_op_def conv2d_def = {
  .name = "conv2d",
  .category = "Convolution",
  .doc = "2-D convolution over [N, C, H, W] (PyTorch nn.Conv2d)",
  .attrs = conv2d_attrs,
  .min_inputs = 1,
  .max_inputs = 1,
  .input_names = conv2d_inputs,
  .n_outputs = 1,
  .params = conv2d_params,
  .infer = conv2d_infer,
  .forward = conv2d_forward,
  .backward = conv2d_backward,
  .cost = conv2d_cost,
  .onnx_name = "Conv",
};

/* ---- conv2d_grad_input (dy, weight) ----------------------------------- */

static gboolean
grad_input_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                  GError **error)
{
  const char *op = "conv2d_grad_input";
  const tw_tinfo *dy = &in[0], *w = &in[1];
  conv_geom g;
  if (!check_rank4 (op, "dy", dy, error) || !check_rank4 (op, "weight", w, error))
    return FALSE;
  int64_t groups = tw_attrs_get_int (a, "groups", 1);
  int64_t xd[4] = { dy->dims[0], w->dims[1] * groups, tw_attrs_get_int (a, "in_h", 0),
                    tw_attrs_get_int (a, "in_w", 0) };
  tw_tinfo x;
  tw_tinfo_set (&x, dy->dtype, 4, xd);
  if (!conv_setup (op, a, &x, w->dims[0], &g, error))
    return FALSE;
  int64_t yd[4] = { dy->dims[0], g.o, g.ho, g.wo };
  if (!expect_shape (op, "dy", dy, w->dtype, 4, yd, " (the conv2d output)", error))
    return FALSE;
  out[0] = x;
  return TRUE;
}

static gboolean
grad_input_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                    tw_tensor *const *out, GError **error)
{
  conv_geom g;
  tw_conv_geom_run (ctx, a, out[0], in[0], &g);
  size_t es = tw_dtype_size (in[0]->dtype);
  int64_t nb = tw_conv_chunk (&g, es);
  int team = tw_conv_team (&g, nb);
  void *ws = tw_conv_scratch (ctx, &g, nb, team, 0, es, "conv2d_grad_input", error);
  if (ws == NULL)
    return FALSE;
  if (in[0]->dtype == TW_F32)
    conv_grad_input_f32 (&g, tw_tensor_f32 (in[0]), tw_tensor_f32 (in[1]), tw_tensor_f32 (out[0]),
                         ws, nb, team);
  else
    conv_grad_input_f64 (&g, tw_tensor_f64 (in[0]), tw_tensor_f64 (in[1]), tw_tensor_f64 (out[0]),
                         ws, nb, team);
  return TRUE;
}

/* Same multiply-adds as the forward convolution. */
static void
grad_input_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out,
                 int n_out, tw_cost *cost)
{
  io_bytes (in, n_in, out, n_out, cost);
  cost->flops = 2.0 * (double) tw_tinfo_numel (&in[0], NULL)
                * (double) (in[1].dims[1] * in[1].dims[2] * in[1].dims[3]);
}

static const char *const grad_input_inputs[] = { "dy", "weight", NULL };

static const tw_op_def conv2d_grad_input_def = {
  .name = "conv2d_grad_input",
  .category = "Convolution",
  .doc = "Gradient of conv2d with respect to its input (GEMM then col2im)",
  .attrs = conv2d_grad_input_attrs,
  .min_inputs = 2,
  .max_inputs = 2,
  .input_names = grad_input_inputs,
  .n_outputs = 1,
  .infer = grad_input_infer,
  .forward = grad_input_forward,
  .cost = grad_input_cost,
  .flags = TW_OP_INTERNAL,
};

/* ---- conv2d_grad_weight (dy, x) --------------------------------------- */

static gboolean
grad_weight_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out,
                   GError **error)
{
  const char *op = "conv2d_grad_weight";
  const tw_tinfo *dy = &in[0], *x = &in[1];
  conv_geom g;
  if (!check_rank4 (op, "dy", dy, error) || !conv_setup (op, a, x, dy->dims[1], &g, error))
    return FALSE;
  int64_t yd[4] = { x->dims[0], g.o, g.ho, g.wo };
  if (!expect_shape (op, "dy", dy, x->dtype, 4, yd, " (the conv2d output)", error))
    return FALSE;
  int64_t wd[4] = { g.o, g.c / g.groups, g.kh, g.kw };
  tw_tinfo_set (&out[0], x->dtype, 4, wd);
  return TRUE;
}

static gboolean
grad_weight_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                     tw_tensor *const *out, GError **error)
{
  conv_geom g;
  tw_conv_geom_run (ctx, a, in[1], in[0], &g);
  size_t es = tw_dtype_size (in[0]->dtype);
  int64_t nb = tw_conv_chunk (&g, es);
  int team = tw_conv_team (&g, nb);
  int64_t groups = tw_conv_wgrad_groups (&g, nb, es);
  int copies = (int) MIN ((int64_t) team, groups);
  size_t partial = (size_t) (groups - 1) * (size_t) tw_tensor_numel (out[0]) / MAX (g.groups, 1);
  void *ws = tw_conv_scratch (ctx, &g, nb, copies, partial, es, "conv2d_grad_weight", error);
  if (ws == NULL)
    return FALSE;
  if (g.n == 0)
    memset (tw_tensor_data (out[0]), 0, tw_tensor_nbytes (out[0]));
  else if (in[0]->dtype == TW_F32)
    conv_grad_weight_f32 (&g, tw_tensor_f32 (in[0]), tw_tensor_f32 (in[1]),
                          tw_tensor_f32 (out[0]), ws, nb, team, groups);
  else
    conv_grad_weight_f64 (&g, tw_tensor_f64 (in[0]), tw_tensor_f64 (in[1]),
                          tw_tensor_f64 (out[0]), ws, nb, team, groups);
  return TRUE;
}

static void
grad_weight_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out,
                  int n_out, tw_cost *cost)
{
  io_bytes (in, n_in, out, n_out, cost);
  cost->flops = 2.0 * (double) tw_tinfo_numel (&in[0], NULL)
                * (double) (out[0].dims[1] * out[0].dims[2] * out[0].dims[3]);
}

static const char *const grad_weight_inputs[] = { "dy", "x", NULL };

static const tw_op_def conv2d_grad_weight_def = {
  .name = "conv2d_grad_weight",
  .category = "Convolution",
  .doc = "Gradient of conv2d with respect to its weight (im2col then GEMM, summed over the batch)",
  .attrs = conv2d_grad_weight_attrs,
  .min_inputs = 2,
  .max_inputs = 2,
  .input_names = grad_weight_inputs,
  .n_outputs = 1,
  .infer = grad_weight_infer,
  .forward = grad_weight_forward,
  .cost = grad_weight_cost,
  .flags = TW_OP_INTERNAL,
};

/* ---- conv2d_grad_bias (dy) -------------------------------------------- */

static gboolean
grad_bias_infer (const tw_attrs *a, const tw_tinfo *in, int n_in, tw_tinfo *out, GError **error)
{
  if (!check_rank4 ("conv2d_grad_bias", "dy", &in[0], error))
    return FALSE;
  tw_tinfo_set (&out[0], in[0].dtype, 1, &in[0].dims[1]);
  return TRUE;
}

static gboolean
grad_bias_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                   tw_tensor *const *out, GError **error)
{
  const tw_tensor *dy = in[0];
  int64_t P = dy->shape[2] * dy->shape[3];
  if (dy->dtype == TW_F32)
    conv_grad_bias_f32 (dy->shape[0], dy->shape[1], P, tw_tensor_f32 (dy), tw_tensor_f32 (out[0]));
  else
    conv_grad_bias_f64 (dy->shape[0], dy->shape[1], P, tw_tensor_f64 (dy), tw_tensor_f64 (out[0]));
  return TRUE;
}

static void
grad_bias_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
                tw_cost *cost)
{
  io_bytes (in, n_in, out, n_out, cost);
  cost->flops = (double) tw_tinfo_numel (&in[0], NULL);
}

static const char *const grad_bias_inputs[] = { "dy", NULL };

static const tw_op_def conv2d_grad_bias_def = {
  .name = "conv2d_grad_bias",
  .category = "Convolution",
  .doc = "Gradient of conv2d with respect to its bias: dy summed over N, H and W",
  .attrs = conv2d_grad_bias_attrs,
  .min_inputs = 1,
  .max_inputs = 1,
  .input_names = grad_bias_inputs,
  .n_outputs = 1,
  .infer = grad_bias_infer,
  .forward = grad_bias_forward,
  .cost = grad_bias_cost,
  .flags = TW_OP_INTERNAL,
};

void
tw_ops_register_conv (void)
{
  tw_op_register (&conv2d_def);
  tw_op_register (&conv2d_grad_input_def);
  tw_op_register (&conv2d_grad_weight_def);
  tw_op_register (&conv2d_grad_bias_def);
  tw_ops_register_pool ();
}
