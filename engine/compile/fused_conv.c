/* fused_conv.c — fused kernels of convolution layers: conv2d with the bias,
 * a folded inference batch norm, a residual add and the ReLU applied while
 * the GEMM's output block is copied out (tw_fused_conv), the conv
 * gradients through tw_gemm, and max_pool2d_grad + relu_grad +
 * conv2d_grad_bias in one pass over the pool's input.
 *
 * The im2col / col2im helpers are the generic op's own (engine/ops/
 * conv_tmpl.h, included here for f32 with tw_gemm_f32 as its GEMM), so the
 * fused kernels differ from the generic ones only by the GEMM's float32
 * rounding.  The masking and the sums keep the generic kernels' expressions
 * and order (bitwise equal given the same GEMM results).
 */
#define G_LOG_DOMAIN "twb-compile"

#include "engine/cpu/parallel.h"
#include "engine/compile/fuse-private.h"
#include "engine/ops/conv_private.h"

#include <math.h>
#include <string.h>

static gboolean
conv_is_pointwise (const conv_geom *g)
{
  return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
}

#define GEMM tw_gemm_f32
#define T float
#define TW_FN(name) name##_fused
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "engine/ops/conv_tmpl.h"
#pragma GCC diagnostic pop
#undef T
#undef TW_FN
#undef GEMM

/* One output channel's epilogue (fuse-private.h, tw_fused_conv): the bias,
 * then a folded batch norm in batch_norm's own expression and rounding
 * ((v - mean) * scale + shift, scale = (float) (weight / sqrt (var + eps))
 * worked out in double), then the residual. */
typedef struct
{
  float bias;
  gboolean bn;
  float mean, scale, shift;
} chan_epilogue;

/* The relu is relu's expression (x > 0 ? x : 0); each case is its own loop
 * so the compiler vectorises it. */
#define EPILOGUE_LOOP(expr)                                                     \
  do                                                                            \
    {                                                                           \
      if (relu)                                                                 \
        for (int64_t p = 0; p < P; p++)                                         \
          {                                                                     \
            const float v = (expr);                                             \
            dst[p] = v > 0 ? v : 0.0f;                                          \
          }                                                                     \
      else                                                                      \
        for (int64_t p = 0; p < P; p++)                                         \
          dst[p] = (expr);                                                      \
    }                                                                           \
  while (0)

/* dst [P] = epilogue (src [P]) (+ res [P] when res is not NULL); dst may be src. */
static inline void
epilogue_row (float *dst, const float *src, const float *res, const chan_epilogue *e, int64_t P,
              gboolean relu)
{
  const float b = e->bias, m = e->mean, sc = e->scale, sh = e->shift;
  if (e->bn && res)
    EPILOGUE_LOOP (((src[p] + b) - m) * sc + sh + res[p]);
  else if (e->bn)
    EPILOGUE_LOOP (((src[p] + b) - m) * sc + sh);
  else if (res)
    EPILOGUE_LOOP ((src[p] + b) + res[p]);
  else
    EPILOGUE_LOOP (src[p] + b);
}
#undef EPILOGUE_LOOP

/* Samples n0 .. n0+cnt-1 of y [N, O, Ho, Wo] = epilogue (conv (x [N, C, H,
 * W], w [O, C/G, kh, kw])), with ep [O] each channel's epilogue and res [N,
 * O, Ho, Wo] (or NULL) the residual; b: some epilogue has a bias or batch
 * norm; ws: one thread's workspace.  The generic conv_forward_chunk with the
 * epilogue in its copy-out loop. */
static void
conv_forward_epilogue_chunk (const conv_geom *g, const float *x, const float *w, gboolean b,
                             const chan_epilogue *ep, const float *res, float *y, float *ws,
                             int64_t nb, gboolean relu, int64_t n0)
{
  const int64_t G = g->groups, cg = g->c / G, og = g->o / G;
  const int64_t K = cg * g->kh * g->kw, P = g->ho * g->wo;
  const gboolean pointwise = conv_is_pointwise (g);
  float *col = ws;                      /* [K, nb*P] */
  float *tmp = col + K * nb * P;        /* [og, nb*P] */
  float *xp = tmp + og * nb * P;        /* [cg, Hp, Wp] */
  const int64_t cnt = MIN (nb, g->n - n0);

  for (int64_t gi = 0; gi < G; gi++)
    {
      const float *wg = w + gi * og * K;    /* [og, K] */
      const chan_epilogue *eg = ep + gi * og;
      if (cnt == 1)
        {
          const int64_t at = (n0 * g->o + gi * og) * P;
          float *yb = y + at;
          const float *src = x + (n0 * g->c + gi * cg) * g->h * g->w;
          if (!pointwise)
            {
              im2col_chunk_fused (g, x, n0, 1, gi, col, xp);
              src = col;
            }
          tw_gemm_f32 (FALSE, FALSE, og, P, K, 1.0f, wg, K, src, P, 0.0f, yb, P);
          /* As conv2d: nothing added to a lone sample without a bias. */
          for (int64_t o = 0; o < og && (b || relu || res); o++)
            epilogue_row (yb + o * P, yb + o * P, res ? res + at + o * P : NULL, &eg[o], P,
                          relu);
          continue;
        }
      im2col_chunk_fused (g, x, n0, cnt, gi, col, xp);
      tw_gemm_f32 (FALSE, FALSE, og, cnt * P, K, 1.0f, wg, K, col, cnt * P, 0.0f, tmp, cnt * P);
      for (int64_t s = 0; s < cnt; s++)
        for (int64_t o = 0; o < og; o++)
          {
            const int64_t at = ((n0 + s) * g->o + gi * og + o) * P;
            epilogue_row (y + at, tmp + (o * cnt + s) * P, res ? res + at : NULL, &eg[o], P,
                          relu);
          }
    }
}

/* The whole batch, chunk by chunk, `team` threads sharing the chunks
 * (tw_conv_team); ws: team workspaces. */
static void
conv_forward_epilogue (const conv_geom *g, const float *x, const float *w, gboolean b,
                       const chan_epilogue *ep, const float *res, float *y, float *ws, int64_t nb,
                       gboolean relu, int team)
{
  const int64_t chunks = (g->n + nb - 1) / nb;
  const size_t per = tw_conv_workspace_elems (g, nb);
  TW_PARALLEL_FOR_DYNAMIC (team > 1, team, t, ci, chunks, {
      conv_forward_epilogue_chunk (g, x, w, b, ep, res, y, ws + (size_t) t * per, nb, relu,
                                   ci * nb);
    });
}

tw_fused_conv *
tw_fused_conv_new (gboolean has_bias)
{
  tw_fused_conv *k = g_new0 (tw_fused_conv, 1);
  k->has_bias = has_bias;
  k->bn = k->residual = -1;
  return k;
}

gboolean
tw_fused_conv_fwd (const tw_kctx *ctx, const tw_instr *ins, tw_tensor *const *in,
                   tw_tensor *const *out, GError **error)
{
  const tw_fused_conv *k = ins->kdata;
  conv_geom g;
  tw_conv_geom_run (ctx, ins->attrs, in[0], out[0], &g);
  int64_t nb = tw_conv_chunk (&g, sizeof (float));
  int team = tw_conv_team (&g, nb);
  chan_epilogue *ep = tw_scratch (ctx, MAX (g.o, 1) * sizeof (chan_epilogue));
  float *ws = tw_conv_scratch (ctx, &g, nb, team, 0, sizeof (float), "fused_conv2d", error);
  if (ws == NULL)
    return FALSE;
  /* The parameters as they are now (O values each: nothing beside the GEMM). */
  const float *b = k->has_bias ? tw_tensor_f32 (in[2]) : NULL;
  const float *bw = NULL, *bb = NULL, *rm = NULL, *rv = NULL;
  if (k->bn >= 0)
    {
      int i = k->bn;
      if (k->bn_affine)
        {
          bw = tw_tensor_f32 (in[i++]);
          bb = tw_tensor_f32 (in[i++]);
        }
      rm = tw_tensor_f32 (in[i++]);
      rv = tw_tensor_f32 (in[i]);
    }
  for (int64_t o = 0; o < g.o; o++)
    {
      ep[o].bias = b ? b[o] : 0.0f;
      ep[o].bn = rm != NULL;
      if (rm == NULL)
        continue;
      const double invstd = 1.0 / sqrt ((double) rv[o] + k->bn_eps);
      ep[o].mean = rm[o];
      ep[o].scale = (float) (invstd * (bw ? (double) bw[o] : 1.0));
      ep[o].shift = bb ? bb[o] : 0.0f;
    }
  conv_forward_epilogue (&g, tw_tensor_f32 (in[0]), tw_tensor_f32 (in[1]),
                         k->has_bias || k->bn >= 0, ep,
                         k->residual >= 0 ? tw_tensor_f32 (in[k->residual]) : NULL,
                         tw_tensor_f32 (out[0]), ws, nb, k->relu, team);
  return TRUE;
}

gboolean
tw_fused_conv_grad_input (const tw_kctx *ctx, const tw_instr *ins, tw_tensor *const *in,
                          tw_tensor *const *out, GError **error)
{
  conv_geom g;
  tw_conv_geom_run (ctx, ins->attrs, out[0], in[0], &g);
  int64_t nb = tw_conv_chunk (&g, sizeof (float));
  int team = tw_conv_team (&g, nb);
  float *ws = tw_conv_scratch (ctx, &g, nb, team, 0, sizeof (float), "fused_conv2d_grad_input",
                               error);
  if (ws == NULL)
    return FALSE;
  conv_grad_input_fused (&g, tw_tensor_f32 (in[0]), tw_tensor_f32 (in[1]),
                         tw_tensor_f32 (out[0]), ws, nb, team);
  return TRUE;
}

gboolean
tw_fused_conv_grad_weight (const tw_kctx *ctx, const tw_instr *ins, tw_tensor *const *in,
                           tw_tensor *const *out, GError **error)
{
  conv_geom g;
  tw_conv_geom_run (ctx, ins->attrs, in[1], in[0], &g);
  int64_t nb = tw_conv_chunk (&g, sizeof (float));
  int team = tw_conv_team (&g, nb);
  int64_t groups = tw_conv_wgrad_groups (&g, nb, sizeof (float));
  int copies = (int) MIN ((int64_t) team, groups);
  size_t partial = (size_t) (groups - 1) * (size_t) tw_tensor_numel (out[0]) / MAX (g.groups, 1);
  float *ws = tw_conv_scratch (ctx, &g, nb, copies, partial, sizeof (float),
                               "fused_conv2d_grad_weight", error);
  if (ws == NULL)
    return FALSE;
  if (g.n == 0)
    memset (tw_tensor_f32 (out[0]), 0, tw_tensor_nbytes (out[0]));
  else
    conv_grad_weight_fused (&g, tw_tensor_f32 (in[0]), tw_tensor_f32 (in[1]),
                            tw_tensor_f32 (out[0]), ws, nb, team, groups);
  return TRUE;
}

/* db [C] from the per-plane sums s [N*C] (each a double sum of its plane in
 * row-major order), added over the batch in order: conv2d_grad_bias's order. */
static void
bias_from_planes (const double *s, int64_t N, int64_t C, float *db)
{
  for (int64_t c = 0; c < C; c++)
    {
      double acc = 0;
      for (int64_t n = 0; n < N; n++)
        acc += s[n * C + c];
      db[c] = (float) acc;
    }
}

static inline double
plane_sum (const float *p, int64_t HW)
{
  double s = 0;
  for (int64_t i = 0; i < HW; i++)
    s += p[i];
  return s;
}

/* m ? x : y for an all-ones or all-zero mask m, on the bits (the compiler
 * keeps float ternaries as branches here, without SSE4.1's blend). */
static inline float
select_f (uint32_t m, float x, float y)
{
  uint32_t a, b, r;
  memcpy (&a, &x, sizeof a);
  memcpy (&b, &y, sizeof b);
  r = (a & m) | (b & ~m);
  float f;
  memcpy (&f, &r, sizeof f);
  return f;
}

/* The 2x2 case of tw_fused_pool_bwd_run on one plane, without branches on
 * the data (random maxima mispredict: ~15 ns a window with branches): the
 * first maximum of a, b, c, d in that order, a NaN winning (max_window's
 * rule), picked with bit masks; all four outputs of a window written; the
 * plane's double sum in row-major order (the +0 terms change nothing).
 * y, dz [H, W], dp [Ho, Wo].  Returns the sum. */
static double
pool2x2_plane (const float *y, const float *dp, float *dz, int64_t H, int64_t W, int64_t Ho,
               int64_t Wo, gboolean relu)
{
  double s = 0;
  for (int64_t oh = 0; oh < Ho; oh++)
    {
      const float *r0 = y + 2 * oh * W, *r1 = r0 + W;
      float *z0 = dz + 2 * oh * W, *z1 = z0 + W;
      for (int64_t ow = 0; ow < Wo; ow++)
        {
          const float a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], e = r1[2 * ow + 1];
          float best = a;
          uint32_t k = 0;
          uint32_t m = 0u - (uint32_t) ((b > best) | (b != b));
          best = select_f (m, b, best);
          k = (k & ~m) | (1u & m);
          m = 0u - (uint32_t) ((c > best) | (c != c));
          best = select_f (m, c, best);
          k = (k & ~m) | (2u & m);
          m = 0u - (uint32_t) ((e > best) | (e != e));
          best = select_f (m, e, best);
          k = (k & ~m) | (3u & m);
          const float d = 0.0f + dp[oh * Wo + ow];
          const float val = select_f (0u - (uint32_t) (!relu || best > 0), d, 0.0f);
          z0[2 * ow] = select_f (0u - (uint32_t) (k == 0), val, 0.0f);
          z0[2 * ow + 1] = select_f (0u - (uint32_t) (k == 1), val, 0.0f);
          z1[2 * ow] = select_f (0u - (uint32_t) (k == 2), val, 0.0f);
          z1[2 * ow + 1] = select_f (0u - (uint32_t) (k == 3), val, 0.0f);
        }
      for (int64_t w = 2 * Wo; w < W; w++)
        z0[w] = z1[w] = 0.0f;
      for (int64_t ow = 0; ow < Wo; ow++)
        s += (double) z0[2 * ow] + (double) z0[2 * ow + 1];
      for (int64_t ow = 0; ow < Wo; ow++)
        s += (double) z1[2 * ow] + (double) z1[2 * ow + 1];
    }
  if (2 * Ho < H)
    memset (dz + 2 * Ho * W, 0, (size_t) ((H - 2 * Ho) * W) * sizeof (float));
  return s;
}

gboolean
tw_fused_pool_bwd_run (const tw_kctx *ctx, const tw_instr *ins, tw_tensor *const *in,
                   tw_tensor *const *out, GError **error)
{
  const tw_fused_pool_bwd *k = ins->kdata;
  const tw_tensor *yt = in[0], *dpt = in[1];
  int64_t kern[2];
  tw_attrs_get_ints2 (ins->attrs, "kernel_size", kern, 1);
  const int64_t kh = kern[0], kw = kern[1];
  const int64_t N = yt->shape[0], C = yt->shape[1], H = yt->shape[2], W = yt->shape[3];
  const int64_t Ho = dpt->shape[2], Wo = dpt->shape[3], HW = H * W, P = Ho * Wo;
  const int64_t planes = N * C;
  const float *y = tw_tensor_f32 (yt), *dp = tw_tensor_f32 (dpt);
  float *dz = tw_tensor_f32 (out[0]);
  double *sums = k->bias_grad ? tw_scratch (ctx, planes * sizeof (double)) : NULL;
  const gboolean relu = k->relu;
  int nt = ctx && ctx->num_threads > 0 ? ctx->num_threads : 1;

  /* Windows do not overlap (stride = kernel, no padding, no dilation): each
   * element gets 0 + dp of its window where it is the window's first maximum
   * (a NaN wins, as max_pool2d_grad's max_window), masked by [y > 0]. */
  TW_PARALLEL_FOR (nt > 1 && planes * HW > 32768, nt, pl, planes, {
      const float *yp = y + pl * HW, *dpp = dp + pl * P;
      float *dzp = dz + pl * HW;
      double s = 0;
      if (kh == 2 && kw == 2)
        {
          s = pool2x2_plane (yp, dpp, dzp, H, W, Ho, Wo, relu);
          if (sums)
            sums[pl] = s;
          continue;
        }
      int64_t at_of[Wo], row_of[Wo];   /* each window's maximum: index, window row */
      memset (dzp, 0, (size_t) HW * sizeof (float));
      for (int64_t oh = 0; oh < Ho; oh++)
        {
          for (int64_t ow = 0; ow < Wo; ow++)
            {
              const int64_t h0 = oh * kh, w0 = ow * kw;
              float best = -INFINITY;
              int64_t idx = h0 * W + w0, row = 0;
              if (kh == 2 && kw == 2)
                {
                  const float *r0 = yp + h0 * W + w0, *r1 = r0 + W;
                  const float v[4] = { r0[0], r0[1], r1[0], r1[1] };
                  const int64_t off[4] = { 0, 1, W, W + 1 };
                  for (int t = 0; t < 4; t++)
                    if (v[t] > best || isnan (v[t]))
                      {
                        best = v[t];
                        idx = h0 * W + w0 + off[t];
                        row = t >> 1;
                      }
                }
              else
                for (int64_t ki = 0; ki < kh; ki++)
                  for (int64_t kj = 0; kj < kw; kj++)
                    {
                      const int64_t at = (h0 + ki) * W + w0 + kj;
                      const float v = yp[at];
                      if (v > best || isnan (v))
                        {
                          best = v;
                          idx = at;
                          row = ki;
                        }
                    }
              const float d = 0.0f + dpp[oh * Wo + ow];
              dzp[idx] = !relu || yp[idx] > 0 ? d : 0.0f;
              at_of[ow] = idx;
              row_of[ow] = row;
            }
          /* conv2d_grad_bias sums the plane in double in row-major order.
           * Only the window maxima can be non-zero here, and adding +0 to
           * a double sum that started at +0 changes nothing, so summing the
           * maxima row by row in row-major order gives the same bits with a
           * quarter of the (latency-bound) additions. */
          if (sums)
            for (int64_t ki = 0; ki < kh; ki++)
              for (int64_t ow = 0; ow < Wo; ow++)
                if (row_of[ow] == ki)
                  s += dzp[at_of[ow]];
        }
      if (sums)
        sums[pl] = s;
    });
  if (sums)
    bias_from_planes (sums, N, C, tw_tensor_f32 (out[1]));
  return TRUE;
}

gboolean
tw_fused_relu_conv_bias_bwd (const tw_kctx *ctx, const tw_instr *ins, tw_tensor *const *in,
                             tw_tensor *const *out, GError **error)
{
  const tw_tensor *yt = in[0];
  const int64_t N = yt->shape[0], C = yt->shape[1], HW = yt->shape[2] * yt->shape[3];
  const int64_t planes = N * C;
  const float *y = tw_tensor_f32 (yt), *g = tw_tensor_f32 (in[1]);
  float *dz = tw_tensor_f32 (out[0]);
  double *sums = tw_scratch (ctx, planes * sizeof (double));
  int nt = ctx && ctx->num_threads > 0 ? ctx->num_threads : 1;

  TW_PARALLEL_FOR (nt > 1 && planes * HW > 32768, nt, pl, planes, {
      const float *yp = y + pl * HW, *gp = g + pl * HW;
      float *dzp = dz + pl * HW;
      for (int64_t i = 0; i < HW; i++)
        dzp[i] = yp[i] > 0 ? gp[i] : 0.0f;
      sums[pl] = plane_sum (dzp, HW);
    });
  bias_from_planes (sums, N, C, tw_tensor_f32 (out[1]));
  return TRUE;
}
