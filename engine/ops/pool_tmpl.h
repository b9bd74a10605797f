/* pool_tmpl.h — typed pooling kernels, included twice by pool.c (T is float
 * or double, TW_FN (name) appends the dtype suffix).
 *
 * Every kernel works on planes: x [N*C, H, W] -> y [N*C, Ho, Wo].  The valid
 * kernel taps of each output row / column are precomputed (pool_ranges in
 * pool.c: taps [lo, hi) fall inside the unpadded input), so the inner loops
 * carry no bounds checks.  Planes are independent, so the OpenMP loops over
 * them give the same bits for any thread count.
 */

/* Index in the plane of the maximum of window (oh, ow); -1 if the window
 * holds no input element.  The first maximum in row-major window order wins
 * and a NaN wins over numbers, as in PyTorch's max_pool2d. */
static inline int64_t
TW_FN (max_window) (const conv_geom *g, const pool_ranges *r, const T *xp, int64_t oh, int64_t ow,
                    T *value)
{
  const int64_t h0 = oh * g->sh - g->ph, w0 = ow * g->sw - g->pw;
  T best = -INFINITY;
  /* PyTorch starts from the first tap, so an all -inf window still has one. */
  int64_t idx = r->hlo[oh] < r->hhi[oh] && r->wlo[ow] < r->whi[ow]
                    ? (h0 + r->hlo[oh] * g->dh) * g->w + w0 + r->wlo[ow] * g->dw
                    : -1;
  for (int64_t ki = r->hlo[oh]; ki < r->hhi[oh]; ki++)
    {
      const int64_t ih = h0 + ki * g->dh;
      const T *row = xp + ih * g->w;
      for (int64_t kj = r->wlo[ow]; kj < r->whi[ow]; kj++)
        {
          const int64_t iw = w0 + kj * g->dw;
          const T v = row[iw];
          if (v > best || isnan (v))
            {
              best = v;
              idx = ih * g->w + iw;
            }
        }
    }
  *value = best;
  return idx;
}

/* y [N*C, Ho, Wo] = max over each window of x [N*C, H, W]. */
static void
TW_FN (max_pool_forward) (const conv_geom *g, const pool_ranges *r, const T *x, T *y)
{
  const int64_t planes = g->n * g->c, HW = g->h * g->w, P = g->ho * g->wo;
  TW_PARALLEL_FOR (g->threads > 1 && planes * P > 32768, g->threads, pl, planes, {
      const T *xp = x + pl * HW;
      T *yp = y + pl * P;
      if (g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->ph == 0 && g->pw == 0
          && g->dh == 1 && g->dw == 1)
        {
          /* The LeNet / VGG case: 2x2 windows, stride 2, no padding.  Same
           * tie and NaN rule as max_window (first max in a, b, c, d order). */
          for (int64_t oh = 0; oh < g->ho; oh++)
            {
              const T *r0 = xp + 2 * oh * g->w, *r1 = r0 + g->w;
              T *yr = yp + oh * g->wo;
              for (int64_t ow = 0; ow < g->wo; ow++)
                {
                  T m = r0[2 * ow];
                  T b = r0[2 * ow + 1], c = r1[2 * ow], d = r1[2 * ow + 1];
                  m = (b > m || isnan (b)) ? b : m;
                  m = (c > m || isnan (c)) ? c : m;
                  m = (d > m || isnan (d)) ? d : m;
                  yr[ow] = m;
                }
            }
          continue;
        }
      for (int64_t oh = 0; oh < g->ho; oh++)
        for (int64_t ow = 0; ow < g->wo; ow++)
          TW_FN (max_window) (g, r, xp, oh, ow, &yp[oh * g->wo + ow]);
    });
}

/* dx [N*C, H, W] = dy [N*C, Ho, Wo] scattered to the argmax of each window
 * of x (recomputed with the forward's rule). */
static void
TW_FN (max_pool_backward) (const conv_geom *g, const pool_ranges *r, const T *x, const T *dy,
                           T *dx)
{
  const int64_t planes = g->n * g->c, HW = g->h * g->w, P = g->ho * g->wo;
  TW_PARALLEL_FOR (g->threads > 1 && planes * P > 32768, g->threads, pl, planes, {
      const T *xp = x + pl * HW, *dyp = dy + pl * P;
      T *dxp = dx + pl * HW;
      memset (dxp, 0, (size_t) HW * sizeof (T));
      for (int64_t oh = 0; oh < g->ho; oh++)
        for (int64_t ow = 0; ow < g->wo; ow++)
          {
            T v;
            int64_t idx = TW_FN (max_window) (g, r, xp, oh, ow, &v);
            if (idx >= 0)
              dxp[idx] += dyp[oh * g->wo + ow];
          }
    });
}

/* Divisor of window (oh, ow): kh*kw with count_include_pad (in floor mode
 * no window reaches past the padding, so PyTorch's clipped window size is
 * always kh*kw), else the number of input elements under the window. */
static inline T
TW_FN (avg_divisor) (const conv_geom *g, const pool_ranges *r, gboolean include_pad, int64_t oh,
                     int64_t ow)
{
  if (include_pad)
    return (T) (g->kh * g->kw);
  return (T) ((r->hhi[oh] - r->hlo[oh]) * (r->whi[ow] - r->wlo[ow]));
}

/* y [N*C, Ho, Wo] = mean over each window of x [N*C, H, W] (padding counts as 0). */
static void
TW_FN (avg_pool_forward) (const conv_geom *g, const pool_ranges *r, gboolean include_pad,
                          const T *x, T *y)
{
  const int64_t planes = g->n * g->c, HW = g->h * g->w, P = g->ho * g->wo;
  TW_PARALLEL_FOR (g->threads > 1 && planes * P > 32768, g->threads, pl, planes, {
      const T *xp = x + pl * HW;
      T *yp = y + pl * P;
      for (int64_t oh = 0; oh < g->ho; oh++)
        for (int64_t ow = 0; ow < g->wo; ow++)
          {
            const int64_t h0 = oh * g->sh - g->ph, w0 = ow * g->sw - g->pw;
            double s = 0;
            for (int64_t ki = r->hlo[oh]; ki < r->hhi[oh]; ki++)
              {
                const T *row = xp + (h0 + ki) * g->w;
                for (int64_t kj = r->wlo[ow]; kj < r->whi[ow]; kj++)
                  s += row[w0 + kj];
              }
            T div = TW_FN (avg_divisor) (g, r, include_pad, oh, ow);
            yp[oh * g->wo + ow] = div > 0 ? (T) (s / div) : 0;
          }
    });
}

/* dx [N*C, H, W] = each dy [N*C, Ho, Wo] / divisor spread over its window. */
static void
TW_FN (avg_pool_backward) (const conv_geom *g, const pool_ranges *r, gboolean include_pad,
                           const T *dy, T *dx)
{
  const int64_t planes = g->n * g->c, HW = g->h * g->w, P = g->ho * g->wo;
  TW_PARALLEL_FOR (g->threads > 1 && planes * P > 32768, g->threads, pl, planes, {
      const T *dyp = dy + pl * P;
      T *dxp = dx + pl * HW;
      memset (dxp, 0, (size_t) HW * sizeof (T));
      for (int64_t oh = 0; oh < g->ho; oh++)
        for (int64_t ow = 0; ow < g->wo; ow++)
          {
            const int64_t h0 = oh * g->sh - g->ph, w0 = ow * g->sw - g->pw;
            T div = TW_FN (avg_divisor) (g, r, include_pad, oh, ow);
            if (div <= 0)
              continue;
            const T v = dyp[oh * g->wo + ow] / div;
            for (int64_t ki = r->hlo[oh]; ki < r->hhi[oh]; ki++)
              {
                T *row = dxp + (h0 + ki) * g->w;
                for (int64_t kj = r->wlo[ow]; kj < r->whi[ow]; kj++)
                  row[w0 + kj] += v;
              }
          }
    });
}

/* y [planes] = mean of each plane of x [planes, HW], in double. */
static void
TW_FN (global_avg_forward) (int64_t planes, int64_t HW, int threads, const T *x, T *y)
{
  TW_PARALLEL_FOR (threads > 1 && planes * HW > 32768, threads, pl, planes, {
      const T *xp = x + pl * HW;
      double s = 0;
      for (int64_t i = 0; i < HW; i++)
        s += xp[i];
      y[pl] = (T) (s / (double) HW);
    });
}

/* dx [planes, HW] = dy [planes] / HW. */
static void
TW_FN (global_avg_backward) (int64_t planes, int64_t HW, int threads, const T *dy, T *dx)
{
  TW_PARALLEL_FOR (threads > 1 && planes * HW > 32768, threads, pl, planes, {
      const T v = (T) (dy[pl] / (double) HW);
      T *dxp = dx + pl * HW;
      for (int64_t i = 0; i < HW; i++)
        dxp[i] = v;
    });
}
