/* norm_tmpl.h — typed normalisation kernels, included twice by norm.c (T is
 * float or double, TW_FN (name) appends the dtype suffix).
 *
 * Batch norm sees x as [N, C, S] (S = product of the spatial dims, 1 for
 * [N, C]) and works per channel; layer norm sees x as [R, D] (D = product of
 * the normalised dims) and works per row.  Statistics use two passes with
 * double accumulators.  Parallel loops split channels, rows or columns, never
 * a sum, so the results do not depend on the thread count.
 */

/* mean [C], var [C] (biased) of x [N, C, S] over N and S. */
static void
TW_FN (bn_stats) (int64_t N, int64_t C, int64_t S, int threads, const T *x, double *mean,
                  double *var)
{
  const double M = (double) (N * S);
  TW_PARALLEL_FOR (threads > 1 && N * C * S > 32768, threads, c, C, {
      double s = 0, q = 0;
      for (int64_t n = 0; n < N; n++)
        {
          const T *xr = x + (n * C + c) * S;
          for (int64_t i = 0; i < S; i++)
            s += xr[i];
        }
      const double m = s / M;
      for (int64_t n = 0; n < N; n++)
        {
          const T *xr = x + (n * C + c) * S;
          for (int64_t i = 0; i < S; i++)
            q += (xr[i] - m) * (xr[i] - m);
        }
      mean[c] = m;
      var[c] = q / M;
    });
}

/* y [N, C, S] = (x - mean[c]) * invstd[c] * w[c] + b[c]; w, b may be NULL. */
static void
TW_FN (bn_apply) (int64_t N, int64_t C, int64_t S, int threads, const T *x, const double *mean,
                  const double *invstd, const T *w, const T *b, T *y)
{
  TW_PARALLEL_FOR (threads > 1 && N * C * S > 32768, threads, r, N * C, {
      const int64_t c = r % C;
      const T m = (T) mean[c];
      const T scale = (T) (invstd[c] * (w ? (double) w[c] : 1.0));
      const T shift = b ? b[c] : 0;
      const T *xr = x + r * S;
      T *yr = y + r * S;
      for (int64_t i = 0; i < S; i++)
        yr[i] = (xr[i] - m) * scale + shift;
    });
}

/* Gradients of batch norm for x [N, C, S], dy [N, C, S], w [C] (NULL: 1).
 * Training (rm == NULL): mean / var are recomputed from x and
 *   dx = w invstd (dy - mean(dy) - xhat mean(dy xhat)).
 * Eval: mean = rm, var = rv are constants and dx = w invstd dy.
 * dw [C] = sum dy xhat, db [C] = sum dy (over N and S) in both modes. */
static void
TW_FN (bn_backward) (int64_t N, int64_t C, int64_t S, int threads, double eps, const T *x,
                     const T *w, const T *dy, const T *rm, const T *rv, T *dx, T *dw, T *db)
{
  const double M = (double) (N * S);
  TW_PARALLEL_FOR (threads > 1 && N * C * S > 32768, threads, c, C, {
      double m, v;
      if (rm)
        m = rm[c], v = rv[c];
      else
        {
          double s = 0, q = 0;
          for (int64_t n = 0; n < N; n++)
            for (int64_t i = 0; i < S; i++)
              s += x[(n * C + c) * S + i];
          m = s / M;
          for (int64_t n = 0; n < N; n++)
            for (int64_t i = 0; i < S; i++)
              {
                double d = x[(n * C + c) * S + i] - m;
                q += d * d;
              }
          v = q / M;
        }
      const double invstd = 1.0 / sqrt (v + eps);
      double sdy = 0, sdyx = 0;
      for (int64_t n = 0; n < N; n++)
        {
          const T *xr = x + (n * C + c) * S, *dr = dy + (n * C + c) * S;
          for (int64_t i = 0; i < S; i++)
            {
              sdy += dr[i];
              sdyx += dr[i] * ((xr[i] - m) * invstd);
            }
        }
      const double k = invstd * (w ? (double) w[c] : 1.0);
      const double a = rm ? 0 : sdy / M, bq = rm ? 0 : sdyx / M;
      for (int64_t n = 0; n < N; n++)
        {
          const T *xr = x + (n * C + c) * S, *dr = dy + (n * C + c) * S;
          T *o = dx + (n * C + c) * S;
          for (int64_t i = 0; i < S; i++)
            o[i] = (T) (k * (dr[i] - a - (xr[i] - m) * invstd * bq));
        }
      dw[c] = (T) sdyx;
      db[c] = (T) sdy;
    });
}

/* y [R, D] = (x - mean_r) invstd_r * w + b per row; w, b [D] may be NULL.
 * mean, invstd [R] receive the row statistics when not NULL. */
static void
TW_FN (ln_forward) (int64_t R, int64_t D, int threads, double eps, const T *x, const T *w,
                    const T *b, T *y, double *mean, double *invstd)
{
  TW_PARALLEL_FOR (threads > 1 && R * D > 32768, threads, r, R, {
      const T *xr = x + r * D;
      T *yr = y + r * D;
      double s = 0, q = 0;
      for (int64_t i = 0; i < D; i++)
        s += xr[i];
      const double m = s / (double) D;
      for (int64_t i = 0; i < D; i++)
        q += (xr[i] - m) * (xr[i] - m);
      const double is = 1.0 / sqrt (q / (double) D + eps);
      if (mean)
        mean[r] = m, invstd[r] = is;
      const T mt = (T) m, ist = (T) is;
      if (w && b)
        for (int64_t i = 0; i < D; i++)
          yr[i] = (xr[i] - mt) * ist * w[i] + b[i];
      else
        for (int64_t i = 0; i < D; i++)
          yr[i] = (xr[i] - mt) * ist;
    });
}

/* Gradients of layer norm for x [R, D], dy [R, D], w [D] (NULL: 1):
 *   g = dy w,  dx = invstd (g - mean(g) - xhat mean(g xhat))  per row,
 *   dw [D] = sum over rows of dy xhat,  db [D] = sum over rows of dy.
 * stats: 2 R doubles of scratch. */
static void
TW_FN (ln_backward) (int64_t R, int64_t D, int threads, double eps, const T *x, const T *w,
                     const T *dy, T *dx, T *dw, T *db, double *stats)
{
  double *mean = stats, *invstd = stats + R;
  TW_PARALLEL_FOR (threads > 1 && R * D > 32768, threads, r, R, {
      const T *xr = x + r * D, *dr = dy + r * D;
      T *o = dx + r * D;
      double s = 0, q = 0;
      for (int64_t i = 0; i < D; i++)
        s += xr[i];
      const double m = s / (double) D;
      for (int64_t i = 0; i < D; i++)
        q += (xr[i] - m) * (xr[i] - m);
      const double is = 1.0 / sqrt (q / (double) D + eps);
      mean[r] = m, invstd[r] = is;
      double sg = 0, sgx = 0;
      for (int64_t i = 0; i < D; i++)
        {
          double gi = (double) dr[i] * (w ? (double) w[i] : 1.0);
          sg += gi;
          sgx += gi * ((xr[i] - m) * is);
        }
      sg /= (double) D, sgx /= (double) D;
      for (int64_t i = 0; i < D; i++)
        {
          double gi = (double) dr[i] * (w ? (double) w[i] : 1.0);
          o[i] = (T) (is * (gi - sg - (xr[i] - m) * is * sgx));
        }
    });
  /* Column sums in blocks of 64 columns (a fixed split): each block runs
   * over the rows in order. */
  const int64_t nblk = (D + 63) / 64;
  TW_PARALLEL_FOR (threads > 1 && R * D > 32768, threads, bk, nblk, {
      const int64_t j0 = bk * 64, j1 = MIN (D, j0 + 64);
      double aw[64] = { 0 }, ab[64] = { 0 };
      for (int64_t r = 0; r < R; r++)
        {
          const T *xr = x + r * D, *dr = dy + r * D;
          const double m = mean[r], is = invstd[r];
          for (int64_t j = j0; j < j1; j++)
            {
              aw[j - j0] += dr[j] * ((xr[j] - m) * is);
              ab[j - j0] += dr[j];
            }
        }
      for (int64_t j = j0; j < j1; j++)
        {
          dw[j] = (T) aw[j - j0];
          db[j] = (T) ab[j - j0];
        }
    });
}
