/* fuse.c — operator fusion.
 *
 * Rewrites groups of instructions into one instruction running a fused
 * kernel (fuse-private.h), in this order:
 *
 *  1. Activation gradients read the activation's output: relu_grad (x, dy)
 *     becomes relu_grad (y, dy) where y = relu (x) (relu' (x) = [y > 0]
 *     exactly; the same for leaky_relu with a slope >= 0), so the
 *     pre-activation x is needed by the activation alone and fusing the
 *     activation into its producer makes x dead.
 *  2. linear + relu / leaky_relu: one GEMM with a bias + activation
 *     epilogue.  A linear without one still goes through the GEMM with the
 *     bias epilogue.
 *  3. conv2d + relu: the bias and ReLU applied as the GEMM's output is
 *     copied out; the same for a conv2d with a batch norm folded in
 *     (fold-bn.c).  tw_pass_fuse_residual, a pass of its own that runs
 *     before this one, takes conv2d + add (+ relu) first.
 *  4. Backward: max_pool2d_grad + relu_grad + conv2d_grad_bias in one pass;
 *     relu_grad + conv2d_grad_bias; linear_grad_input + relu_grad +
 *     linear_grad_bias (the mask and the column sums while the GEMM's rows
 *     are in cache); the remaining linear / conv gradient GEMMs through
 *     tw_gemm.
 *  5. Chains of element-wise ops of one shape into one blocked loop.
 *
 * Rules: only f32 instructions; never across a slot that is kept or read
 * outside the group (use counts); every fused instruction lists the union
 * of the sources of what it covers, and sits at the position of the
 * covered instruction that ran last among those producing its outputs, so
 * every input is ready and every reader comes after.
 */
#define G_LOG_DOMAIN "twb-compile"

#include "engine/compile/fuse-private.h"
#include "engine/kernels.h"

#include <string.h>

/* ---- helpers --------------------------------------------------------------- */

static tw_instr *
at (tw_program *p, int i)
{
  return i >= 0 && i < (int) p->instrs->len ? g_ptr_array_index (p->instrs, i) : NULL;
}

static gboolean
is_op (const tw_instr *ins, const char *name)
{
  return ins && ins->op && !ins->kernel && !ins->pinned && strcmp (ins->op->name, name) == 0;
}

static gboolean
slot_f32 (const tw_program *p, int s)
{
  return tw_program_slot (p, s)->info.dtype == TW_F32;
}

static gboolean
all_f32 (const tw_program *p, const tw_instr *ins)
{
  for (int k = 0; k < ins->n_in; k++)
    if (!slot_f32 (p, ins->in[k]))
      return FALSE;
  for (int k = 0; k < ins->n_out; k++)
    if (!slot_f32 (p, ins->out[k]))
      return FALSE;
  return TRUE;
}

/* Index of the one instruction reading slot s (once), or -1: none, several,
 * or s is kept past the program (readers.c's index). */
static int
sole_reader (const tw_program *p, int s)
{
  return tw_program_sole_reader (p, s);
}

static gboolean
is_op_on_input0 (const tw_program *p, int pos, const tw_instr *ins, int s, gconstpointer name)
{
  return is_op (ins, name) && ins->n_in >= 1 && ins->in[0] == s && all_f32 (p, ins);
}

/* The first f32 instruction `name` reading s as its input 0, or -1. */
static int
reader_with_op (const tw_program *p, int s, const char *name)
{
  return tw_program_first_reader (p, s, is_op_on_input0, name);
}

/* leaky_relu's slope as its kernels read it. */
static float
leaky_slope (const tw_instr *ins)
{
  return (float) tw_attrs_get_float (ins->attrs, "negative_slope", 0.01);
}

/* An activation the GEMM epilogue and the y-based gradient cover: relu, or
 * leaky_relu with a slope >= 0 (then y > 0 exactly where x > 0). */
static gboolean
epilogue_act (const tw_instr *ins, tw_gemm_act *act, float *slope)
{
  if (is_op (ins, "relu"))
    {
      *act = TW_GEMM_ACT_RELU;
      *slope = 0;
      return TRUE;
    }
  if (is_op (ins, "leaky_relu") && leaky_slope (ins) >= 0)
    {
      *act = TW_GEMM_ACT_LEAKY_RELU;
      *slope = leaky_slope (ins);
      return TRUE;
    }
  return FALSE;
}

/* A new fused instruction covering `covered` (sources in their order); the
 * phase, RNG key and training flag of the first. */
static tw_instr *
fused_new (const char *label, const char *fused_op, gpointer kdata, const tw_attrs *attrs,
           tw_instr *const *covered, int n)
{
  tw_instr *f = tw_instr_new (NULL, attrs, label);
  f->fused_op = fused_op;
  f->kernel = tw_fused_cpu_kernel (fused_op);
  f->kdata = kdata;
  f->kdata_free = g_free;
  f->phase = covered[0]->phase;
  f->node_key = covered[0]->node_key;
  f->training = covered[0]->training;
  for (int c = 0; c < n; c++)
    {
      for (guint s = 0; s < covered[c]->sources->len; s++)
        tw_instr_add_source (f, g_ptr_array_index (covered[c]->sources, s));
      /* Intermediate values stay in registers: an upper bound on bytes. */
      f->cost.flops += covered[c]->cost.flops;
      f->cost.bytes_read += covered[c]->cost.bytes_read;
      f->cost.bytes_written += covered[c]->cost.bytes_written;
    }
  return f;
}

static void
set_io (tw_instr *f, int n_in, const int *in, int n_out, const int *out)
{
  f->n_in = n_in;
  memcpy (f->in, in, n_in * sizeof (int));
  f->n_out = n_out;
  memcpy (f->out, out, n_out * sizeof (int));
}

/* Put f at position pos and drop the instructions at the other indices
 * (entries become NULL until tw_program_compact). */
/* The outputs of a covered instruction that f does not produce are written
 * and read by nobody now.  The memory plan would still give each of them
 * arena space (live at instruction 0), so they become views of f's first
 * output, which is at least as large in every fusion here. */
static void
retire_outputs (tw_program *p, const tw_instr *covered, const tw_instr *f)
{
  tw_slot *o = tw_program_slot (p, f->out[0]);
  for (int k = 0; k < covered->n_out; k++)
    {
      gboolean kept = FALSE;
      for (int j = 0; j < f->n_out; j++)
        kept |= f->out[j] == covered->out[k];
      tw_slot *s = tw_program_slot (p, covered->out[k]);
      if (!kept && s->kind == TW_SLOT_ACT && s->alias_of < 0 && o->alias_of < 0
          && tw_tinfo_numel (&s->info, NULL) * tw_dtype_size (s->info.dtype)
               <= tw_tinfo_numel (&o->info, NULL) * tw_dtype_size (o->info.dtype))
        s->alias_of = o->id;
    }
}

static void
install (tw_program *p, int pos, tw_instr *f, const int *drop, int n_drop)
{
  retire_outputs (p, at (p, pos), f);
  for (int d = 0; d < n_drop; d++)
    if (drop[d] >= 0 && drop[d] != pos)
      retire_outputs (p, at (p, drop[d]), f);
  for (int d = 0; d < n_drop; d++)
    if (drop[d] >= 0 && drop[d] != pos)
      tw_instr_free (tw_program_set_instr (p, drop[d], NULL));
  tw_instr_free (tw_program_set_instr (p, pos, f));
}

/* The helpers above for the passes beside this one (fold-bn.c). */
tw_instr *
tw_fuse_at (tw_program *p, int i)
{
  return at (p, i);
}

gboolean
tw_fuse_is_op (const tw_instr *ins, const char *name)
{
  return is_op (ins, name);
}

gboolean
tw_fuse_all_f32 (const tw_program *p, const tw_instr *ins)
{
  return all_f32 (p, ins);
}

int
tw_fuse_sole_reader (const tw_program *p, int s)
{
  return sole_reader (p, s);
}

tw_instr *
tw_fuse_new (const char *label, const char *fused_op, gpointer kdata, const tw_attrs *attrs,
             tw_instr *const *covered, int n)
{
  return fused_new (label, fused_op, kdata, attrs, covered, n);
}

void
tw_fuse_set_io (tw_instr *f, int n_in, const int *in, int n_out, const int *out)
{
  set_io (f, n_in, in, n_out, out);
}

void
tw_fuse_install (tw_program *p, int pos, tw_instr *f, const int *drop, int n_drop)
{
  install (p, pos, f, drop, n_drop);
}

/* ---- 1. activation gradients from the activation's output ------------------ */

typedef struct
{
  const char *grad;
  tw_gemm_act act;
  float slope;
  int after;          /* the activation's position: its gradients come later */
} act_grad_match;

static gboolean
is_act_grad_of (const tw_program *p, int pos, const tw_instr *g, int x, gconstpointer data)
{
  const act_grad_match *m = data;
  return pos > m->after && is_op (g, m->grad) && g->in[0] == x
         && (m->act == TW_GEMM_ACT_RELU || leaky_slope (g) == m->slope);
}

static int
rewrite_act_grads (tw_program *p)
{
  int n = 0;
  /* x → the first activation of x rewritten for: a later one of the same
   * kind finds its gradients rewritten already (they came after both). */
  g_autoptr (GHashTable) done = g_hash_table_new (g_direct_hash, g_direct_equal);
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_instr *a = at (p, (int) i);
      tw_gemm_act act;
      float slope;
      if (!epilogue_act (a, &act, &slope) || !all_f32 (p, a))
        continue;
      tw_instr *first = g_hash_table_lookup (done, GINT_TO_POINTER (a->in[0]));
      tw_gemm_act first_act;
      float first_slope;
      if (first && epilogue_act (first, &first_act, &first_slope) && first_act == act
          && first_slope == slope)
        continue;
      if (first == NULL)
        g_hash_table_insert (done, GINT_TO_POINTER (a->in[0]), a);
      const char *grad = act == TW_GEMM_ACT_RELU ? "relu_grad" : "leaky_relu_grad";
      act_grad_match m = { grad, act, slope, (int) i };
      g_autoptr (GArray) readers = tw_program_readers (p, a->in[0]);
      for (guint r = 0; r < readers->len; r++)
        {
          int j = g_array_index (readers, int, r);
          if (!is_act_grad_of (p, j, at (p, j), a->in[0], &m))
            continue;
          tw_instr *g = tw_program_set_instr (p, j, NULL);
          g->in[0] = a->out[0];
          tw_program_set_instr (p, j, g);
          n++;
        }
    }
  return n;
}

/* ---- 2. linear (+ activation) ----------------------------------------------- */

static int
fuse_linear (tw_program *p)
{
  int n = 0;
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_instr *l = at (p, (int) i);
      if (!is_op (l, "linear") || !all_f32 (p, l))
        continue;
      int r = sole_reader (p, l->out[0]);
      tw_instr *a = at (p, r);
      tw_fused_linear *k = g_new0 (tw_fused_linear, 1);
      k->has_bias = l->n_in > 2;
      gboolean with_act = a && epilogue_act (a, &k->act, &k->slope) && all_f32 (p, a);
      tw_instr *cov[2] = { l, a };
      const char *label = with_act ? (k->act == TW_GEMM_ACT_RELU ? "fused linear+relu"
                                                                 : "fused linear+leaky_relu")
                                   : k->has_bias ? "fused linear+bias" : "linear (gemm)";
      tw_instr *f = fused_new (label, "fused_linear", k, NULL, cov, with_act ? 2 : 1);
      set_io (f, l->n_in, l->in, 1, with_act ? a->out : l->out);
      int drop[1] = { (int) i };
      install (p, with_act ? r : (int) i, f, drop, 1);
      n += with_act;
    }
  tw_program_compact (p);
  return n;
}

/* ---- 3. conv2d (+ folded batch norm) (+ residual add) (+ relu) -------------- */

/* "fused conv2d+batch_norm+add+relu", or "conv2d (gemm)" for the plain one. */
static char *
conv_label (const tw_fused_conv *k)
{
  if (k->bn < 0 && k->residual < 0 && !k->relu)
    return g_strdup ("conv2d (gemm)");
  return g_strdup_printf ("fused conv2d%s%s%s", k->bn >= 0 ? "+batch_norm" : "",
                          k->residual >= 0 ? "+add" : "", k->relu ? "+relu" : "");
}

/* A conv2d instruction the epilogue may still grow on: a plain f32 conv2d
 * (a fresh tw_fused_conv in *k), or a fused one of fold-bn.c with nothing
 * after its batch norm yet (a copy of its description). */
static gboolean
conv_head (const tw_program *p, const tw_instr *c, tw_fused_conv **k)
{
  if (is_op (c, "conv2d") && all_f32 (p, c))
    {
      *k = tw_fused_conv_new (c->n_in > 2);
      return TRUE;
    }
  if (c == NULL || c->pinned || g_strcmp0 (c->fused_op, "fused_conv2d") != 0
      || c->phase != TW_PHASE_FORWARD)
    return FALSE;
  const tw_fused_conv *old = c->kdata;
  if (old->relu || old->residual >= 0)
    return FALSE;
  *k = g_memdup2 (old, sizeof *old);
  return TRUE;
}

/* The instruction reading conv (conv's output as its input 0 or 1) that
 * adds a same-shaped f32 residual: its index, and the residual's slot in *r. */
static int
residual_add (const tw_program *p, const tw_instr *conv, int *r)
{
  int ai = sole_reader (p, conv->out[0]);
  tw_instr *a = at ((tw_program *) p, ai);
  if (!is_op (a, "add") || !all_f32 (p, a) || a->training || a->n_in != 2)
    return -1;
  const tw_tinfo *o = &tw_program_slot (p, conv->out[0])->info;
  int other = a->in[0] == conv->out[0] ? a->in[1] : a->in[0];
  if (!tw_tinfo_equal (&tw_program_slot (p, other)->info, o)
      || !tw_tinfo_equal (&tw_program_slot (p, a->out[0])->info, o))
    return -1;   /* broadcasting: the generic add */
  *r = other;
  return ai;
}

/* Replaces the head conv at i and what follows it (the residual add at ai,
 * the relu at ri; either -1) by one fused instruction. */
static void
conv_install (tw_program *p, int i, tw_fused_conv *k, int ai, int r, int ri)
{
  tw_instr *c = at (p, (int) i), *a = at (p, ai), *rl = at (p, ri);
  tw_instr *cov[3] = { c };
  int ncov = 1;
  int in[TW_MAX_INPUTS + TW_MAX_PARAMS];
  int n_in = c->n_in;
  memcpy (in, c->in, n_in * sizeof (int));
  if (a)
    {
      cov[ncov++] = a;
      k->residual = n_in;
      in[n_in++] = r;
    }
  if (rl)
    {
      cov[ncov++] = rl;
      k->relu = TRUE;
    }
  g_autofree char *label = conv_label (k);
  tw_instr *f = fused_new (label, "fused_conv2d", k, c->attrs, cov, ncov);
  const tw_instr *last = rl ? rl : a ? a : c;
  set_io (f, n_in, in, 1, last->out);
  int drop[2] = { (int) i, a && rl ? ai : -1 };
  install (p, rl ? ri : a ? ai : (int) i, f, drop, 2);
}

static int
fuse_conv (tw_program *p)
{
  int n = 0;
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_instr *c = at (p, (int) i);
      tw_fused_conv *k = NULL;
      if (!conv_head (p, c, &k))
        continue;
      int r = sole_reader (p, c->out[0]);
      tw_instr *a = at (p, r);
      gboolean relu = is_op (a, "relu") && all_f32 (p, a);
      if (!relu && c->kernel)
        {
          g_free (k);   /* fold-bn.c's instruction as it is */
          continue;
        }
      conv_install (p, (int) i, k, -1, -1, relu ? r : -1);
      n += relu;
    }
  tw_program_compact (p);
  return n;
}

/* conv2d (+ folded batch norm) + add (+ relu) of inference programs: the
 * residual block's tail, out = relu (conv (x) + b + r), in the conv's
 * epilogue.  Training programs keep their schedule (the backward reads the
 * add's output through relu_grad). */
int
tw_pass_fuse_residual (tw_program *p)
{
  int n = 0;
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_instr *c = at (p, (int) i);
      tw_fused_conv *k = NULL;
      int r = -1;
      if (c == NULL || c->training || c->phase != TW_PHASE_FORWARD)
        continue;
      if (!conv_head (p, c, &k))
        continue;
      int ai = residual_add (p, c, &r);
      if (ai < 0)
        {
          g_free (k);
          continue;
        }
      int ri = sole_reader (p, at (p, ai)->out[0]);
      tw_instr *rl = at (p, ri);
      gboolean relu = is_op (rl, "relu") && all_f32 (p, rl) && !rl->training;
      conv_install (p, (int) i, k, ai, r, relu ? ri : -1);
      n++;
    }
  tw_program_compact (p);
  return n;
}

/* ---- 4. backward ---------------------------------------------------------------- */

/* Non-overlapping windows: stride = kernel, no padding, no dilation. */
static gboolean
pool_disjoint (const tw_attrs *a)
{
  int64_t k[2], s[2], pd[2], d[2];
  tw_attrs_get_ints2 (a, "kernel_size", k, 1);
  if (tw_attrs_has (a, "stride"))
    tw_attrs_get_ints2 (a, "stride", s, 1);
  else
    s[0] = k[0], s[1] = k[1];
  tw_attrs_get_ints2 (a, "padding", pd, 0);
  tw_attrs_get_ints2 (a, "dilation", d, 1);
  return s[0] == k[0] && s[1] == k[1] && pd[0] == 0 && pd[1] == 0 && d[0] == 1 && d[1] == 1;
}

static int
fuse_pool_backward (tw_program *p)
{
  int n = 0;
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_instr *pg = at (p, (int) i);
      if (!is_op (pg, "max_pool2d_grad") || !all_f32 (p, pg) || !pool_disjoint (pg->attrs))
        continue;
      int y = pg->in[0];
      int r = sole_reader (p, pg->out[0]);
      tw_instr *rg = at (p, r);
      gboolean relu = is_op (rg, "relu_grad") && rg->in[0] == y && rg->in[1] == pg->out[0]
                      && all_f32 (p, rg);
      int dz = relu ? rg->out[0] : pg->out[0];
      int b = reader_with_op (p, dz, "conv2d_grad_bias");
      tw_instr *cb = at (p, b);
      tw_fused_pool_bwd *k = g_new0 (tw_fused_pool_bwd, 1);
      k->relu = relu;
      k->bias_grad = cb != NULL;
      tw_instr *cov[3] = { pg, relu ? rg : cb, cb };
      int ncov = 1 + relu + (cb != NULL);
      const char *label = relu && cb ? "fused max_pool2d_grad+relu_grad+conv2d_grad_bias"
                          : relu     ? "fused max_pool2d_grad+relu_grad"
                          : cb       ? "fused max_pool2d_grad+conv2d_grad_bias"
                                     : "max_pool2d_grad (disjoint windows)";
      tw_instr *f = fused_new (label, "fused_pool_backward", k, pg->attrs, cov, ncov);
      int outs[2] = { dz, cb ? cb->out[0] : -1 };
      set_io (f, 2, pg->in, cb ? 2 : 1, outs);
      int drop[3] = { (int) i, relu ? r : -1, b };
      install (p, relu ? r : (int) i, f, drop, 3);
      n++;
    }
  tw_program_compact (p);
  return n;
}

/* relu_grad / leaky_relu_grad with the GEMM producing its dy and the bias
 * gradient reading its output; linear_grad_input alone; conv2d_grad_bias
 * after relu_grad. */
static int
fuse_act_backward (tw_program *p)
{
  int n = 0;
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_instr *rg = at (p, (int) i);
      gboolean relu = is_op (rg, "relu_grad"), leaky = is_op (rg, "leaky_relu_grad");
      if ((!relu && !leaky) || !all_f32 (p, rg) || (leaky && leaky_slope (rg) < 0))
        continue;
      int dz = rg->out[0];
      /* Producers are positions as of the last compaction; fusions since
       * put their instruction at one of the positions they cover. */
      int gi = tw_program_slot (p, rg->in[1])->producer;
      tw_instr *li = at (p, gi);
      if (gi >= (int) i)
        gi = -1;
      gboolean gemm = is_op (li, "linear_grad_input") && all_f32 (p, li)
                      && sole_reader (p, rg->in[1]) == (int) i;
      int b = reader_with_op (p, dz, "linear_grad_bias");
      int cbi = relu && !gemm ? reader_with_op (p, dz, "conv2d_grad_bias") : -1;
      if (cbi >= 0)
        {
          tw_instr *cb = at (p, cbi);
          tw_instr *cov[2] = { rg, cb };
          tw_instr *f = fused_new ("fused relu_grad+conv2d_grad_bias",
                                   "fused_relu_conv_bias_backward", NULL, NULL, cov, 2);
          int outs[2] = { dz, cb->out[0] };
          set_io (f, 2, rg->in, 2, outs);
          int drop[1] = { cbi };
          install (p, (int) i, f, drop, 1);
          n++;
          continue;
        }
      if (!gemm && b < 0)
        continue;   /* nothing to fold: the element-wise pass may take it */
      tw_instr *lb = at (p, b);
      tw_fused_act_bwd *k = g_new0 (tw_fused_act_bwd, 1);
      k->mode = gemm ? TW_FUSED_GEMM_MASK : TW_FUSED_MASK;
      k->act = relu ? TW_GEMM_ACT_RELU : TW_GEMM_ACT_LEAKY_RELU;
      k->slope = leaky ? leaky_slope (rg) : 0;
      k->bias_grad = lb != NULL;
      tw_instr *cov[3];
      int ncov = 0;
      if (gemm)
        cov[ncov++] = li;
      cov[ncov++] = rg;
      if (lb)
        cov[ncov++] = lb;
      g_autofree char *label = g_strdup_printf ("fused %s%s%s", gemm ? "linear_grad_input+" : "",
                                                rg->op->name, lb ? "+linear_grad_bias" : "");
      tw_instr *f = fused_new (label, "fused_act_backward", k, NULL, cov, ncov);
      int ins3[3] = { rg->in[0], gemm ? li->in[0] : rg->in[1], gemm ? li->in[1] : -1 };
      int outs[2] = { dz, lb ? lb->out[0] : -1 };
      set_io (f, gemm ? 3 : 2, ins3, lb ? 2 : 1, outs);
      int drop[2] = { gemm ? gi : -1, b };
      install (p, (int) i, f, drop, 2);
      n++;
    }
  tw_program_compact (p);
  return n;
}

/* The gradient GEMMs left: through tw_gemm (not fusions; counted apart). */
static void
gemm_backward (tw_program *p)
{
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_instr *g = at (p, (int) i);
      const char *fn = NULL;
      gpointer kd = NULL;
      const char *label = NULL;
      if (g == NULL || !g->op || g->kernel || !all_f32 (p, g))
        continue;
      if (is_op (g, "linear_grad_input"))
        {
          tw_fused_act_bwd *k = g_new0 (tw_fused_act_bwd, 1);
          k->mode = TW_FUSED_GEMM;
          fn = "fused_act_backward", kd = k, label = "linear_grad_input (gemm)";
        }
      else if (is_op (g, "linear_grad_weight"))
        fn = "fused_linear_grad_weight", kd = NULL, label = "linear_grad_weight (gemm)";
      else if (is_op (g, "conv2d_grad_input"))
        fn = "fused_conv2d_grad_input", kd = NULL, label = "conv2d_grad_input (gemm)";
      else if (is_op (g, "conv2d_grad_weight"))
        fn = "fused_conv2d_grad_weight", kd = NULL, label = "conv2d_grad_weight (gemm)";
      else
        continue;
      tw_instr *f = fused_new (label, fn, kd, g->attrs, &g, 1);
      set_io (f, g->n_in, g->in, g->n_out, g->out);
      install (p, (int) i, f, NULL, 0);
    }
}

/* ---- 5. element-wise chains --------------------------------------------------- */

static gboolean
ew_member (const tw_program *p, const tw_instr *ins, tw_ew_step *st)
{
  if (ins == NULL || ins->op == NULL || ins->kernel || ins->pinned || !(ins->op->flags & TW_OP_ELEMENTWISE)
      || ins->n_out != 1 || ins->n_in < 1 || ins->n_in > 2 || !all_f32 (p, ins))
    return FALSE;
  const tw_tinfo *o = &tw_program_slot (p, ins->out[0])->info;
  for (int k = 0; k < ins->n_in; k++)
    if (!tw_tinfo_equal (&tw_program_slot (p, ins->in[k])->info, o))
      return FALSE;   /* broadcasting: left to the generic kernel */
  int code = tw_ew_code_for (ins->op, ins->attrs, &st->p);
  if (code < 0)
    return FALSE;
  st->code = (tw_ew_code) code;
  return TRUE;
}

static int
ew_reg (tw_ew_program *prog, int *in_slots, int slot, const int *step_out, int n_steps)
{
  for (int s = 0; s < n_steps; s++)
    if (step_out[s] == slot)
      return prog->n_in + s;
  for (int k = 0; k < prog->n_in; k++)
    if (in_slots[k] == slot)
      return k;
  in_slots[prog->n_in] = slot;
  return prog->n_in++;
}

static int
fuse_elementwise (tw_program *p)
{
  int n = 0;
  for (guint i = 0; i < p->instrs->len; i++)
    {
      tw_ew_step st;
      if (!ew_member (p, at (p, (int) i), &st))
        continue;
      int members[TW_EW_MAX_STEPS], nm = 0;
      tw_ew_step steps[TW_EW_MAX_STEPS];
      members[nm] = (int) i;
      steps[nm++] = st;
      while (nm < TW_EW_MAX_STEPS)
        {
          int r = sole_reader (p, at (p, members[nm - 1])->out[0]);
          if (r < 0 || !ew_member (p, at (p, r), &st))
            break;
          members[nm] = r;
          steps[nm++] = st;
        }
      if (nm < 2)
        continue;
      /* Registers: inputs in order of first use, then one per step.  The
       * register numbers of step inputs are fixed before the step's own. */
      tw_ew_program *prog = g_new0 (tw_ew_program, 1);
      int in_slots[TW_EW_MAX_REGS], step_out[TW_EW_MAX_STEPS];
      tw_instr *cov[TW_EW_MAX_STEPS];
      int n_inputs_ok = TRUE;
      for (int s = 0; s < nm; s++)
        {
          tw_instr *m = at (p, members[s]);
          cov[s] = m;
          prog->steps[s] = steps[s];
          prog->steps[s].a = ew_reg (prog, in_slots, m->in[0], step_out, s);
          prog->steps[s].b = m->n_in > 1 ? ew_reg (prog, in_slots, m->in[1], step_out, s)
                                          : prog->steps[s].a;
          step_out[s] = m->out[0];
          n_inputs_ok &= prog->n_in <= TW_MAX_INPUTS;
        }
      prog->n_steps = nm;
      if (!n_inputs_ok)
        {
          g_free (prog);
          continue;
        }
      /* Registers of steps count from n_in, known only now: shift them. */
      for (int s = 0; s < nm; s++)
        {
          tw_instr *m = cov[s];
          prog->steps[s].a = ew_reg (prog, in_slots, m->in[0], step_out, s);
          prog->steps[s].b = m->n_in > 1 ? ew_reg (prog, in_slots, m->in[1], step_out, s)
                                          : prog->steps[s].a;
        }
      GString *label = g_string_new ("fused ");
      for (int s = 0; s < nm; s++)
        g_string_append_printf (label, "%s%s", s ? "+" : "", cov[s]->op->name);
      tw_instr *f = fused_new (label->str, "fused_elementwise", prog, NULL, cov, nm);
      g_string_free (label, TRUE);
      set_io (f, prog->n_in, in_slots, 1, cov[nm - 1]->out);
      install (p, members[nm - 1], f, members, nm - 1);
      n++;
    }
  tw_program_compact (p);
  return n;
}

/* ---- the pass ------------------------------------------------------------------ */

/* ---- the fused ops ---------------------------------------------------------- */

#define FUSED(op_, fn_, doc_)                                                   \
  static const tw_kernel fused_cpu_##fn_ = { .op = op_, .device = TW_DEVICE_CPU, \
                                             .name = op_, .fused = (gpointer) fn_ }
FUSED ("fused_linear", tw_fused_linear_fwd, );
FUSED ("fused_conv2d", tw_fused_conv_fwd, );
FUSED ("fused_linear_batch_norm", tw_fused_linear_bn_fwd, );
FUSED ("fused_pool_backward", tw_fused_pool_bwd_run, );
FUSED ("fused_relu_conv_bias_backward", tw_fused_relu_conv_bias_bwd, );
FUSED ("fused_act_backward", tw_fused_act_bwd_run, );
FUSED ("fused_linear_grad_weight", tw_fused_linear_grad_weight, );
FUSED ("fused_conv2d_grad_input", tw_fused_conv_grad_input, );
FUSED ("fused_conv2d_grad_weight", tw_fused_conv_grad_weight, );
FUSED ("fused_elementwise", tw_fused_ew, );
#undef FUSED

void
tw_fused_ops_register (void)
{
  static const struct
  {
    const tw_kernel *k;
    const char *doc;
  } ops[] = {
    { &fused_cpu_tw_fused_linear_fwd, "linear + bias (+ relu / leaky_relu) as one GEMM with an epilogue" },
    { &fused_cpu_tw_fused_conv_fwd, "conv2d + bias (+ inference batch_norm) (+ residual add) (+ relu) "
                                     "as im2col and one GEMM with an epilogue" },
    { &fused_cpu_tw_fused_linear_bn_fwd, "linear + inference batch_norm (+ relu): the GEMM, then "
                                         "one pass over its output" },
    { &fused_cpu_tw_fused_pool_bwd_run, "max_pool2d_grad (+ relu_grad) (+ conv2d_grad_bias) in one pass" },
    { &fused_cpu_tw_fused_relu_conv_bias_bwd, "relu_grad + conv2d_grad_bias in one pass" },
    { &fused_cpu_tw_fused_act_bwd_run, "linear_grad_input (GEMM) + activation mask + linear_grad_bias" },
    { &fused_cpu_tw_fused_linear_grad_weight, "linear_grad_weight through the engine's GEMM" },
    { &fused_cpu_tw_fused_conv_grad_input, "conv2d_grad_input through the engine's GEMM" },
    { &fused_cpu_tw_fused_conv_grad_weight, "conv2d_grad_weight through the engine's GEMM" },
    { &fused_cpu_tw_fused_ew, "a chain of element-wise ops in one blocked loop" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (ops); i++)
    {
      tw_fused_op_register (ops[i].k->op, ops[i].doc);
      tw_kernel_register (ops[i].k);
    }
  tw_fused_update_ops_register ();
}

tw_kernel_fn
tw_fused_cpu_kernel (const char *fused_op)
{
  const tw_kernel *k = tw_kernel_find (fused_op, tw_device_cpu (), NULL, NULL, 0);
  g_assert (k != NULL);   /* every fused op has a CPU kernel */
  return (tw_kernel_fn) k->fused;
}

int
tw_pass_fuse (tw_program *p)
{
  int before = (int) p->instrs->len;
  rewrite_act_grads (p);
  fuse_linear (p);
  fuse_conv (p);
  fuse_pool_backward (p);
  fuse_act_backward (p);
  gemm_backward (p);
  fuse_elementwise (p);
  return before - (int) p->instrs->len;
}
