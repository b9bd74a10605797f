/* conv_tmpl.h — typed convolution kernels, included twice by conv.c.
 *
 * The includer defines T (float or double), TW_FN (name) (name with the dtype
 * suffix) and GEMM (tw_gemm_f32 or tw_gemm_f64: the engine's one GEMM
 * dispatch, engine/cpu/gemm.h, whose arguments it takes).  Layouts (all
 * row-major):
 *
 *   x   [N, C, H, W]        input
 *   w   [O, C/G, kh, kw]    weight (PyTorch layout)
 *   y   [N, O, Ho, Wo]      output
 *   col [K, ldc]            im2col matrix, K = C/G * kh * kw; sample s of a
 *                           chunk owns columns [s*P, (s+1)*P), P = Ho * Wo
 *   xp  [C/G, Hp, Wp]       zero-padded copy of one sample's group, Hp = H + 2 ph
 *
 * Padding is handled by copying the sample into xp once, so the im2col and
 * col2im inner loops have no bounds checks.  Several samples of a group are
 * batched into one GEMM when the workspace allows (see tw_conv_chunk in conv.c):
 * the LeNet-sized GEMMs ([16, 150] x [150, 100] per sample) are too small for
 * a GEMM to reach its peak one at a time.
 */

/* xp [cg, Hp, Wp] = x [cg, H, W] surrounded by ph / pw zeros. */
static void
TW_FN (pad_copy) (const conv_geom *g, int64_t cg, const T *x, T *xp)
{
  const int64_t H = g->h, W = g->w, Hp = H + 2 * g->ph, Wp = W + 2 * g->pw;
  for (int64_t c = 0; c < cg; c++)
    {
      T *dst = xp + c * Hp * Wp;
      memset (dst, 0, (size_t) (g->ph * Wp) * sizeof (T));
      for (int64_t i = 0; i < H; i++)
        {
          T *d = dst + (i + g->ph) * Wp;
          for (int64_t j = 0; j < g->pw; j++)
            d[j] = 0;
          memcpy (d + g->pw, x + (c * H + i) * W, (size_t) W * sizeof (T));
          for (int64_t j = g->pw + W; j < Wp; j++)
            d[j] = 0;
        }
      memset (dst + (g->ph + H) * Wp, 0, (size_t) (g->ph * Wp) * sizeof (T));
    }
}

/* Rows [r0, r1) of col [cg*kh*kw, ldc] (this sample's P columns) from
 * xp [cg, Hp, Wp]. */
static void
TW_FN (im2col_rows) (const conv_geom *g, const T *xp, T *col, int64_t ldc, int64_t r0, int64_t r1)
{
  const int64_t Hp = g->h + 2 * g->ph, Wp = g->w + 2 * g->pw;
  const int64_t Ho = g->ho, Wo = g->wo, sh = g->sh, sw = g->sw;
  for (int64_t r = r0; r < r1; r++)
    {
      const int64_t kj = r % g->kw, ki = (r / g->kw) % g->kh, c = r / (g->kw * g->kh);
      const T *src = xp + (c * Hp + ki * g->dh) * Wp + kj * g->dw;
      T *dst = col + r * ldc;
      if (sw == 1)
        for (int64_t oh = 0; oh < Ho; oh++)
          memcpy (dst + oh * Wo, src + oh * sh * Wp, (size_t) Wo * sizeof (T));
      else
        for (int64_t oh = 0; oh < Ho; oh++)
          {
            const T *s = src + oh * sh * Wp;
            T *d = dst + oh * Wo;
            for (int64_t ow = 0; ow < Wo; ow++)
              d[ow] = s[ow * sw];
          }
    }
}

/* col [cg*kh*kw, ldc] (this sample's P columns) from xp [cg, Hp, Wp].  The
 * serial case stays out of OpenMP: a parallel region costs about 1 us even
 * when its if clause is false, and this runs once per sample. */
static void
TW_FN (im2col) (const conv_geom *g, int64_t cg, const T *xp, T *col, int64_t ldc)
{
  const int64_t rows = cg * g->kh * g->kw;
  if (g->threads > 1 && rows * g->ho * g->wo > 32768)
    TW_PARALLEL_FOR (TRUE, g->threads, r, rows, {
      TW_FN (im2col_rows) (g, xp, col, ldc, r, r + 1);
    });
  else
    TW_FN (im2col_rows) (g, xp, col, ldc, 0, rows);
}

/* Channels [c0, c1) of xp [cg, Hp, Wp] += col2im (col [cg*kh*kw, ldc]). */
static void
TW_FN (col2im_channels) (const conv_geom *g, const T *restrict col, int64_t ldc, T *restrict xp,
                         int64_t c0, int64_t c1)
{
  const int64_t Hp = g->h + 2 * g->ph, Wp = g->w + 2 * g->pw;
  const int64_t Ho = g->ho, Wo = g->wo, sh = g->sh, sw = g->sw, kk = g->kh * g->kw;
  for (int64_t c = c0; c < c1; c++)
    for (int64_t k = 0; k < kk; k++)
      {
        const int64_t ki = k / g->kw, kj = k % g->kw;
        T *restrict dst = xp + (c * Hp + ki * g->dh) * Wp + kj * g->dw;
        const T *restrict src = col + (c * kk + k) * ldc;
        for (int64_t oh = 0; oh < Ho; oh++)
          {
            T *restrict d = dst + oh * sh * Wp;
            const T *restrict s = src + oh * Wo;
            if (sw == 1)
              for (int64_t ow = 0; ow < Wo; ow++)
                d[ow] += s[ow];
            else
              for (int64_t ow = 0; ow < Wo; ow++)
                d[ow * sw] += s[ow];
          }
      }
}

/* xp [cg, Hp, Wp] += col2im (col [cg*kh*kw, ldc]).  Parallel over channels
 * only: the kh*kw rows of one channel overlap in xp and are summed in a
 * fixed order, so the result does not depend on the thread count.  The
 * serial case stays out of OpenMP (see im2col). */
static void
TW_FN (col2im) (const conv_geom *g, int64_t cg, const T *restrict col, int64_t ldc,
                T *restrict xp)
{
  if (g->threads > 1 && cg * g->kh * g->kw * g->ho * g->wo > 32768)
    TW_PARALLEL_FOR (TRUE, g->threads, c, cg, {
      TW_FN (col2im_channels) (g, col, ldc, xp, c, c + 1);
    });
  else
    TW_FN (col2im_channels) (g, col, ldc, xp, 0, cg);
}

/* im2col of samples n0 .. n0+cnt-1 of group gi into col [K, cnt*P]. */
static void
TW_FN (im2col_chunk) (const conv_geom *g, const T *x, int64_t n0, int64_t cnt, int64_t gi,
                      T *col, T *xp)
{
  const int64_t cg = g->c / g->groups, HW = g->h * g->w, P = g->ho * g->wo;
  for (int64_t s = 0; s < cnt; s++)
    {
      const T *xs = x + ((n0 + s) * g->c + gi * cg) * HW;
      if (g->ph > 0 || g->pw > 0)
        {
          TW_FN (pad_copy) (g, cg, xs, xp);
          xs = xp;
        }
      TW_FN (im2col) (g, cg, xs, col + s * P, cnt * P);
    }
}

/* buf [og, cnt*P] = the og channels of group gi of samples n0.. of t [N, O, P]. */
static void
TW_FN (gather_rows) (const conv_geom *g, const T *t, int64_t n0, int64_t cnt, int64_t gi, T *buf)
{
  const int64_t og = g->o / g->groups, P = g->ho * g->wo;
  for (int64_t o = 0; o < og; o++)
    for (int64_t s = 0; s < cnt; s++)
      memcpy (buf + o * cnt * P + s * P, t + ((n0 + s) * g->o + gi * og + o) * P,
              (size_t) P * sizeof (T));
}

/* Samples n0 .. n0+cnt-1 of y [N, O, Ho, Wo] = conv (x [N, C, H, W],
 * w [O, C/G, kh, kw]) + b [O] (b may be NULL); ws: one thread's
 * tw_conv_workspace_elems (g, nb) elements. */
static void
TW_FN (conv_forward_chunk) (const conv_geom *g, const T *x, const T *w, const T *b, T *y, T *ws,
                            int64_t nb, int64_t n0)
{
  const int64_t G = g->groups, cg = g->c / G, og = g->o / G;
  const int64_t K = cg * g->kh * g->kw, P = g->ho * g->wo;
  const gboolean pointwise = conv_is_pointwise (g);
  T *col = ws;                          /* [K, nb*P] */
  T *tmp = col + K * nb * P;            /* [og, nb*P] */
  T *xp = tmp + og * nb * P;            /* [cg, Hp, Wp] */
  const int64_t cnt = MIN (nb, g->n - n0);

  for (int64_t gi = 0; gi < G; gi++)
    {
      const T *wg = w + gi * og * K;        /* [og, K] */
      const T *bg = b ? b + gi * og : NULL;
      if (cnt == 1)
        {
          /* One sample: the GEMM writes straight into y; the bias is
           * added while the block is still in cache. */
          T *yb = y + (n0 * g->o + gi * og) * P;
          const T *src = x + (n0 * g->c + gi * cg) * g->h * g->w;
          if (!pointwise)
            {
              TW_FN (im2col_chunk) (g, x, n0, 1, gi, col, xp);
              src = col;
            }
          GEMM (FALSE, FALSE, og, P, K, 1, wg, K, src, P, 0, yb, P);
          if (bg)
            for (int64_t o = 0; o < og; o++)
              {
                const T bo = bg[o];
                T *row = yb + o * P;
                for (int64_t p = 0; p < P; p++)
                  row[p] += bo;
              }
          continue;
        }
      TW_FN (im2col_chunk) (g, x, n0, cnt, gi, col, xp);
      GEMM (FALSE, FALSE, og, cnt * P, K, 1, wg, K, col, cnt * P, 0, tmp, cnt * P);
      /* tmp [og, cnt, P] -> y [n0 + s, gi*og + o, P], adding the bias. */
      for (int64_t s = 0; s < cnt; s++)
        for (int64_t o = 0; o < og; o++)
          {
            const T bo = bg ? bg[o] : 0;
            const T *src = tmp + (o * cnt + s) * P;
            T *dst = y + ((n0 + s) * g->o + gi * og + o) * P;
            for (int64_t p = 0; p < P; p++)
              dst[p] = src[p] + bo;
          }
    }
}

/* y [N, O, Ho, Wo] = conv (x [N, C, H, W], w [O, C/G, kh, kw]) + b [O] (b may be NULL),
 * chunk by chunk, `team` threads sharing the chunks (tw_conv_team).
 * ws: team × tw_conv_workspace_elems (g, nb) elements. */
static void
TW_FN (conv_forward) (const conv_geom *g, const T *x, const T *w, const T *b, T *y, T *ws,
                      int64_t nb, int team)
{
  const int64_t chunks = (g->n + nb - 1) / nb;
  const size_t per = tw_conv_workspace_elems (g, nb);
  TW_PARALLEL_FOR_DYNAMIC (team > 1, team, t, ci, chunks, {
      TW_FN (conv_forward_chunk) (g, x, w, b, y, ws + (size_t) t * per, nb, ci * nb);
    });
}

/* Samples n0 .. n0+cnt-1 of dx [N, C, H, W] = conv_transpose (dy [N, O, Ho, Wo],
 * w [O, C/G, kh, kw]); ws: one thread's workspace. */
static void
TW_FN (conv_grad_input_chunk) (const conv_geom *g, const T *dy, const T *w, T *dx, T *ws,
                               int64_t nb, int64_t n0)
{
  const int64_t G = g->groups, cg = g->c / G, og = g->o / G;
  const int64_t K = cg * g->kh * g->kw, P = g->ho * g->wo, HW = g->h * g->w;
  const int64_t Hp = g->h + 2 * g->ph, Wp = g->w + 2 * g->pw;
  const gboolean pointwise = conv_is_pointwise (g), padded = g->ph > 0 || g->pw > 0;
  T *col = ws;                          /* [K, nb*P] */
  T *dyc = col + K * nb * P;            /* [og, nb*P] */
  T *xp = dyc + og * nb * P;            /* [cg, Hp, Wp] */
  const int64_t cnt = MIN (nb, g->n - n0);

  for (int64_t gi = 0; gi < G; gi++)
    {
      const T *wg = w + gi * og * K;        /* [og, K] */
      const T *dys = dy + (n0 * g->o + gi * og) * P;
      if (cnt > 1)
        {
          TW_FN (gather_rows) (g, dy, n0, cnt, gi, dyc);
          dys = dyc;
        }
      if (pointwise && cnt == 1)
        {
          GEMM (TRUE, FALSE, cg, P, og, 1, wg, K, dys, P, 0, dx + (n0 * g->c + gi * cg) * HW,
                HW);
          continue;
        }
      /* col [K, cnt*P] = wg^T [K, og] . dy [og, cnt*P] */
      GEMM (TRUE, FALSE, K, cnt * P, og, 1, wg, K, dys, cnt * P, 0, col, cnt * P);
      for (int64_t s = 0; s < cnt; s++)
        {
          T *dxs = dx + ((n0 + s) * g->c + gi * cg) * HW;
          T *acc = padded ? xp : dxs;
          memset (acc, 0, (size_t) (cg * Hp * Wp) * sizeof (T));
          TW_FN (col2im) (g, cg, col + s * P, cnt * P, acc);
          if (padded)
            for (int64_t c = 0; c < cg; c++)
              for (int64_t i = 0; i < g->h; i++)
                memcpy (dxs + (c * g->h + i) * g->w, xp + (c * Hp + i + g->ph) * Wp + g->pw,
                        (size_t) g->w * sizeof (T));
        }
    }
}

/* dx [N, C, H, W] = conv_transpose (dy [N, O, Ho, Wo], w [O, C/G, kh, kw]),
 * `team` threads sharing the chunks; ws: team × tw_conv_workspace_elems. */
static void
TW_FN (conv_grad_input) (const conv_geom *g, const T *dy, const T *w, T *dx, T *ws, int64_t nb,
                         int team)
{
  const int64_t chunks = (g->n + nb - 1) / nb;
  const size_t per = tw_conv_workspace_elems (g, nb);
  TW_PARALLEL_FOR_DYNAMIC (team > 1, team, t, ci, chunks, {
      TW_FN (conv_grad_input_chunk) (g, dy, w, dx, ws + (size_t) t * per, nb, ci * nb);
    });
}

/* dst [og, K] (= or +=, as beta) the weight gradient of group gi from the
 * samples of chunk ci: dy_n [og, P] . im2col (x_n)^T [P, K]. */
static void
TW_FN (conv_grad_weight_chunk) (const conv_geom *g, const T *dy, const T *x, T *dst, T *ws,
                                int64_t nb, int64_t n0, int64_t gi, T beta)
{
  const int64_t G = g->groups, cg = g->c / G, og = g->o / G;
  const int64_t K = cg * g->kh * g->kw, P = g->ho * g->wo;
  const gboolean pointwise = conv_is_pointwise (g);
  T *col = ws;                          /* [K, nb*P] */
  T *dyc = col + K * nb * P;            /* [og, nb*P] */
  T *xp = dyc + og * nb * P;            /* [cg, Hp, Wp] */
  const int64_t cnt = MIN (nb, g->n - n0);
  const T *dys = dy + (n0 * g->o + gi * og) * P;
  const T *cols = x + (n0 * g->c + gi * cg) * g->h * g->w;
  if (cnt > 1)
    {
      TW_FN (gather_rows) (g, dy, n0, cnt, gi, dyc);
      dys = dyc;
    }
  if (!pointwise || cnt > 1)
    {
      TW_FN (im2col_chunk) (g, x, n0, cnt, gi, col, xp);
      cols = col;
    }
  GEMM (FALSE, TRUE, og, K, cnt * P, 1, dys, cnt * P, cols, cnt * P, beta, dst, K);
}

/* dw [O, C/G, kh, kw] = sum over the batch of dy_n [og, P] . im2col (x_n)^T [P, K].
 * The chunks are summed in `groups` fixed runs of consecutive chunks
 * (tw_conv_wgrad_groups: a function of the shape only), each into its own
 * partial sum, the partials added in order at the end: the same arithmetic
 * whichever thread sums which run, so the result does not depend on the
 * thread count; `team` threads share the runs.  ws: MIN (team, groups) ×
 * tw_conv_workspace_elems, then (groups - 1) × og × K for the partials. */
static void
TW_FN (conv_grad_weight) (const conv_geom *g, const T *dy, const T *x, T *dw, T *ws, int64_t nb,
                          int team, int64_t groups)
{
  const int64_t G = g->groups, cg = g->c / G, og = g->o / G;
  const int64_t K = cg * g->kh * g->kw;
  const int64_t chunks = (g->n + nb - 1) / nb;
  const size_t per = tw_conv_workspace_elems (g, nb);
  const int nt = (int) MIN ((int64_t) team, groups);
  T *partial = ws + (size_t) MAX (nt, 1) * per; /* [groups - 1, og, K] */

  for (int64_t gi = 0; gi < G; gi++)
    {
      T *dwg = dw + gi * og * K;                /* [og, K] */
      TW_PARALLEL_FOR_DYNAMIC (nt > 1, nt, t, r, groups, {
          T *dst = r == 0 ? dwg : partial + (r - 1) * og * K;
          const int64_t c0 = r * chunks / groups, c1 = (r + 1) * chunks / groups;
          for (int64_t ci = c0; ci < c1; ci++)
            TW_FN (conv_grad_weight_chunk) (g, dy, x, dst, ws + (size_t) t * per, nb, ci * nb,
                                            gi, ci == c0 ? 0 : 1);
        });
      for (int64_t r = 1; r < groups; r++)
        {
          const T *src = partial + (r - 1) * og * K;
          for (int64_t i = 0; i < og * K; i++)
            dwg[i] += src[i];
        }
    }
}

/* db [O] = sum of dy [N, O, P] over N and P, in double. */
static void
TW_FN (conv_grad_bias) (int64_t N, int64_t O, int64_t P, const T *dy, T *db)
{
  double *acc = tw_scratch (NULL, O * sizeof (double));
  memset (acc, 0, O * sizeof (double));
  for (int64_t n = 0; n < N; n++)
    for (int64_t o = 0; o < O; o++)
      {
        const T *row = dy + (n * O + o) * P;
        double s = 0;
        for (int64_t p = 0; p < P; p++)
          s += row[p];
        acc[o] += s;
      }
  for (int64_t o = 0; o < O; o++)
    db[o] = (T) acc[o];
}
