/* grad64-ref.h — a plain reference of forward and backward for the networks
 * of test-grad64.c, written once and included twice: with T = double (the
 * judge) and with T = float (the "plain float32 re-computation" whose error
 * twb's is held to).
 *
 * The includer defines T, R (name) (name with the type's suffix), EXP, LOG
 * and SQRT (the libm functions of T) and, before the first inclusion, the
 * net description (ref_net, ref_node, ref_shape in test-grad64.c) and the
 * convolution's tap lists (ref_taps).
 *
 * Written from PyTorch's definitions of the ops, not from twb's kernels:
 * naive loops in T, every sum a single accumulator of type T in loop order
 * (no blocking, no pairwise or wider accumulation), so the float copy shows
 * what straightforward float32 code gets.  Layouts are row-major, the batch
 * first: a value of node i is [N, shape_i...].  Parameter gradients
 * accumulate (+=), as do activation gradients (a value may feed several
 * nodes); the caller zeroes them.
 */

/* y [N, O, Ho, Wo] = b[o] + sum_{c, ki, kj} w [o, c, ki, kj] x [n, g*C/G + c, ih, iw]
 * with ih = oh*sh - ph + ki*dh, iw = ow*sw - pw + kj*dw: each output summed
 * in (c, ki, kj) order, from 0, then the bias added; taps in the zero
 * padding add nothing (ref_taps skips them).  The loops run a whole output
 * row at a time, which changes no output's order of summation. */
static void
R (conv_forward) (const ref_node *nd, const ref_shape *xs, int64_t N, const T *x, const T *w,
                  const T *b, T *y)
{
  const int64_t C = xs->d[0], H = xs->d[1], W = xs->d[2], O = nd->shape.d[0];
  const int64_t Ho = nd->shape.d[1], Wo = nd->shape.d[2], kw = nd->k[1], sw = nd->s[1];
  const int64_t cg = C / nd->groups, og = O / nd->groups;
  ref_taps t = ref_taps_new (nd, xs);
  for (int64_t n = 0; n < N; n++)
    for (int64_t o = 0; o < O; o++)
      {
        const T *xn = x + (n * C + o / og * cg) * H * W, *wo = w + o * cg * nd->k[0] * kw;
        for (int64_t oh = 0; oh < Ho; oh++)
          {
            T *yr = y + ((n * O + o) * Ho + oh) * Wo;
            const int64_t h0 = oh * nd->s[0] - nd->p[0];
            for (int64_t ow = 0; ow < Wo; ow++)
              yr[ow] = 0;
            for (int64_t c = 0; c < cg; c++)
              for (int64_t ki = t.hlo[oh]; ki < t.hhi[oh]; ki++)
                for (int64_t kj = 0; kj < kw; kj++)
                  {
                    const T wv = wo[(c * nd->k[0] + ki) * kw + kj];
                    const T *xr = xn + (c * H + h0 + ki * nd->d[0]) * W + kj * nd->d[1] - nd->p[1];
                    for (int64_t ow = t.olo[kj]; ow < t.ohi[kj]; ow++)
                      yr[ow] += wv * xr[ow * sw];
                  }
            for (int64_t ow = 0; b && ow < Wo; ow++)
              yr[ow] += b[o];
          }
      }
  ref_taps_clear (&t);
}

/* The adjoint of conv_forward: db [o] (may be NULL) += dy in (n, oh, ow)
 * order, dw [o, c, ki, kj] += dy x likewise, dx (may be NULL) += dy w. */
static void
R (conv_backward) (const ref_node *nd, const ref_shape *xs, int64_t N, const T *x, const T *w,
                   const T *dy, T *dx, T *dw, T *db)
{
  const int64_t C = xs->d[0], H = xs->d[1], W = xs->d[2], O = nd->shape.d[0];
  const int64_t Ho = nd->shape.d[1], Wo = nd->shape.d[2], kw = nd->k[1], sw = nd->s[1];
  const int64_t cg = C / nd->groups, og = O / nd->groups;
  ref_taps t = ref_taps_new (nd, xs);
  for (int64_t n = 0; n < N; n++)
    for (int64_t o = 0; o < O; o++)
      {
        const int64_t xo = (n * C + o / og * cg) * H * W, wo = o * cg * nd->k[0] * kw;
        for (int64_t oh = 0; oh < Ho; oh++)
          {
            const T *dyr = dy + ((n * O + o) * Ho + oh) * Wo;
            const int64_t h0 = oh * nd->s[0] - nd->p[0];
            for (int64_t ow = 0; db && ow < Wo; ow++)
              db[o] += dyr[ow];
            for (int64_t c = 0; c < cg; c++)
              for (int64_t ki = t.hlo[oh]; ki < t.hhi[oh]; ki++)
                for (int64_t kj = 0; kj < kw; kj++)
                  {
                    const int64_t wi = wo + (c * nd->k[0] + ki) * kw + kj;
                    const int64_t xr = xo + (c * H + h0 + ki * nd->d[0]) * W + kj * nd->d[1]
                                       - nd->p[1];
                    T acc = dw[wi];
                    for (int64_t ow = t.olo[kj]; ow < t.ohi[kj]; ow++)
                      acc += dyr[ow] * x[xr + ow * sw];
                    dw[wi] = acc;
                    if (!dx)
                      continue;
                    const T wv = w[wi];
                    for (int64_t ow = t.olo[kj]; ow < t.ohi[kj]; ow++)
                      dx[xr + ow * sw] += dyr[ow] * wv;
                  }
          }
      }
  ref_taps_clear (&t);
}

/* Max pooling (PyTorch's max_pool2d, floor mode): padding is -inf, the
 * first maximum in row-major window order wins, a NaN wins over numbers.
 * arg [N, C, Ho, Wo] receives the index of the winner in its plane. */
static void
R (max_pool_forward) (const ref_node *nd, const ref_shape *xs, int64_t N, const T *x, T *y,
                      int64_t *arg)
{
  const int64_t C = xs->d[0], H = xs->d[1], W = xs->d[2];
  const int64_t Ho = nd->shape.d[1], Wo = nd->shape.d[2];
  for (int64_t pl = 0; pl < N * C; pl++)
    for (int64_t oh = 0; oh < Ho; oh++)
      for (int64_t ow = 0; ow < Wo; ow++)
        {
          T best = -INFINITY;
          int64_t at = -1;
          for (int64_t ki = 0; ki < nd->k[0]; ki++)
            {
              const int64_t ih = oh * nd->s[0] - nd->p[0] + ki * nd->d[0];
              if (ih < 0 || ih >= H)
                continue;
              for (int64_t kj = 0; kj < nd->k[1]; kj++)
                {
                  const int64_t iw = ow * nd->s[1] - nd->p[1] + kj * nd->d[1];
                  if (iw < 0 || iw >= W)
                    continue;
                  const T v = x[(pl * H + ih) * W + iw];
                  if (at < 0 || v > best || isnan (v))
                    {
                      best = v;
                      at = ih * W + iw;
                    }
                }
            }
          y[(pl * Ho + oh) * Wo + ow] = best;
          arg[(pl * Ho + oh) * Wo + ow] = at;
        }
}

static void
R (max_pool_backward) (const ref_node *nd, const ref_shape *xs, int64_t N, const int64_t *arg,
                       const T *dy, T *dx)
{
  const int64_t C = xs->d[0], HW = xs->d[1] * xs->d[2];
  const int64_t P = nd->shape.d[1] * nd->shape.d[2];
  for (int64_t pl = 0; pl < N * C; pl++)
    for (int64_t q = 0; q < P; q++)
      dx[pl * HW + arg[pl * P + q]] += dy[pl * P + q];
}

/* Average pooling (PyTorch's avg_pool2d, floor mode): the window runs over
 * [oh*s - p, min (oh*s - p + k, H + p)); its size counts the padding when
 * count_include_pad, else only the taps inside the input.  No divisor
 * override, no dilation. */
static void
R (avg_window) (const ref_node *nd, const ref_shape *xs, int64_t oh, int64_t ow, int64_t *h0,
                int64_t *h1, int64_t *w0, int64_t *w1, T *div)
{
  const int64_t H = xs->d[1], W = xs->d[2];
  int64_t hs = oh * nd->s[0] - nd->p[0], ws = ow * nd->s[1] - nd->p[1];
  int64_t he = MIN (hs + nd->k[0], H + nd->p[0]), we = MIN (ws + nd->k[1], W + nd->p[1]);
  const int64_t pool_size = (he - hs) * (we - ws);
  hs = MAX (hs, 0), ws = MAX (ws, 0), he = MIN (he, H), we = MIN (we, W);
  *h0 = hs, *h1 = he, *w0 = ws, *w1 = we;
  *div = (T) (nd->include_pad ? pool_size : (he - hs) * (we - ws));
}

static void
R (avg_pool_forward) (const ref_node *nd, const ref_shape *xs, int64_t N, const T *x, T *y)
{
  const int64_t C = xs->d[0], H = xs->d[1], W = xs->d[2];
  const int64_t Ho = nd->shape.d[1], Wo = nd->shape.d[2];
  for (int64_t pl = 0; pl < N * C; pl++)
    for (int64_t oh = 0; oh < Ho; oh++)
      for (int64_t ow = 0; ow < Wo; ow++)
        {
          int64_t h0, h1, w0, w1;
          T div, s = 0;
          R (avg_window) (nd, xs, oh, ow, &h0, &h1, &w0, &w1, &div);
          for (int64_t ih = h0; ih < h1; ih++)
            for (int64_t iw = w0; iw < w1; iw++)
              s += x[(pl * H + ih) * W + iw];
          y[(pl * Ho + oh) * Wo + ow] = s / div;
        }
}

static void
R (avg_pool_backward) (const ref_node *nd, const ref_shape *xs, int64_t N, const T *dy, T *dx)
{
  const int64_t C = xs->d[0], H = xs->d[1], W = xs->d[2];
  const int64_t Ho = nd->shape.d[1], Wo = nd->shape.d[2];
  for (int64_t pl = 0; pl < N * C; pl++)
    for (int64_t oh = 0; oh < Ho; oh++)
      for (int64_t ow = 0; ow < Wo; ow++)
        {
          int64_t h0, h1, w0, w1;
          T div;
          R (avg_window) (nd, xs, oh, ow, &h0, &h1, &w0, &w1, &div);
          const T g = dy[(pl * Ho + oh) * Wo + ow] / div;
          for (int64_t ih = h0; ih < h1; ih++)
            for (int64_t iw = w0; iw < w1; iw++)
              dx[(pl * H + ih) * W + iw] += g;
        }
}

/* Batch norm in training mode (PyTorch's batch_norm with training=True):
 * per channel c, over the M = N*S values of x [N, C, S],
 *   mean = sum x / M,  var = sum (x - mean)^2 / M  (biased),
 *   xhat = (x - mean) / sqrt (var + eps),  y = w xhat + b.
 * The running statistics do not enter the output or the gradients. */
static void
R (bn_stats) (int64_t N, int64_t C, int64_t S, int64_t c, double eps, const T *x, T *mean,
              T *invstd)
{
  const T M = (T) (N * S);
  T s = 0, q = 0;
  for (int64_t n = 0; n < N; n++)
    for (int64_t i = 0; i < S; i++)
      s += x[(n * C + c) * S + i];
  const T m = s / M;
  for (int64_t n = 0; n < N; n++)
    for (int64_t i = 0; i < S; i++)
      {
        const T d = x[(n * C + c) * S + i] - m;
        q += d * d;
      }
  *mean = m;
  *invstd = 1 / SQRT (q / M + (T) eps);
}

static void
R (bn_forward) (int64_t N, int64_t C, int64_t S, double eps, const T *x, const T *w, const T *b,
                T *y)
{
  for (int64_t c = 0; c < C; c++)
    {
      T m, is;
      R (bn_stats) (N, C, S, c, eps, x, &m, &is);
      for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < S; i++)
          {
            const int64_t k = (n * C + c) * S + i;
            y[k] = (x[k] - m) * is * (w ? w[c] : 1) + (b ? b[c] : 0);
          }
    }
}

/* dx = w invstd (dy - sum (dy) / M - xhat sum (dy xhat) / M),
 * dw = sum dy xhat, db = sum dy (the derivative of the forward above). */
static void
R (bn_backward) (int64_t N, int64_t C, int64_t S, double eps, const T *x, const T *w, const T *dy,
                 T *dx, T *dw, T *db)
{
  const T M = (T) (N * S);
  for (int64_t c = 0; c < C; c++)
    {
      T m, is, sdy = 0, sdyx = 0;
      R (bn_stats) (N, C, S, c, eps, x, &m, &is);
      for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < S; i++)
          {
            const int64_t k = (n * C + c) * S + i;
            sdy += dy[k];
            sdyx += dy[k] * ((x[k] - m) * is);
          }
      if (dw)
        dw[c] += sdyx;
      if (db)
        db[c] += sdy;
      if (!dx)
        continue;
      const T f = (w ? w[c] : 1) * is;
      for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < S; i++)
          {
            const int64_t k = (n * C + c) * S + i;
            dx[k] += f * (dy[k] - sdy / M - (x[k] - m) * is * (sdyx / M));
          }
    }
}

/* Layer norm (PyTorch's layer_norm) over rows of D values of x [R, D]:
 *   xhat = (x - mean) / sqrt (var + eps) (biased var),  y = w xhat + b,
 * w, b [D]. */
static void
R (ln_stats) (int64_t D, const T *xr, double eps, T *mean, T *invstd)
{
  T s = 0, q = 0;
  for (int64_t j = 0; j < D; j++)
    s += xr[j];
  const T m = s / (T) D;
  for (int64_t j = 0; j < D; j++)
    q += (xr[j] - m) * (xr[j] - m);
  *mean = m;
  *invstd = 1 / SQRT (q / (T) D + (T) eps);
}

static void
R (ln_forward) (int64_t Rows, int64_t D, double eps, const T *x, const T *w, const T *b, T *y)
{
  for (int64_t r = 0; r < Rows; r++)
    {
      T m, is;
      R (ln_stats) (D, x + r * D, eps, &m, &is);
      for (int64_t j = 0; j < D; j++)
        y[r * D + j] = (x[r * D + j] - m) * is * (w ? w[j] : 1) + (b ? b[j] : 0);
    }
}

/* Per row, with g = dy w: dx = invstd (g - mean (g) - xhat mean (g xhat));
 * dw += dy xhat, db += dy over the rows. */
static void
R (ln_backward) (int64_t Rows, int64_t D, double eps, const T *x, const T *w, const T *dy, T *dx,
                 T *dw, T *db)
{
  for (int64_t r = 0; r < Rows; r++)
    {
      const T *xr = x + r * D, *dr = dy + r * D;
      T m, is, sg = 0, sgx = 0;
      R (ln_stats) (D, xr, eps, &m, &is);
      for (int64_t j = 0; j < D; j++)
        {
          const T g = dr[j] * (w ? w[j] : 1), xh = (xr[j] - m) * is;
          sg += g;
          sgx += g * xh;
          if (dw)
            dw[j] += dr[j] * xh;
          if (db)
            db[j] += dr[j];
        }
      if (!dx)
        continue;
      for (int64_t j = 0; j < D; j++)
        {
          const T g = dr[j] * (w ? w[j] : 1), xh = (xr[j] - m) * is;
          dx[r * D + j] += is * (g - sg / (T) D - xh * (sgx / (T) D));
        }
    }
}

/* y [M, O] = x [M, I] w [O, I]^T + b [O]  (PyTorch's nn.Linear). */
static void
R (linear_forward) (int64_t M, int64_t I, int64_t O, const T *x, const T *w, const T *b, T *y)
{
  for (int64_t m = 0; m < M; m++)
    for (int64_t o = 0; o < O; o++)
      {
        T acc = 0;
        for (int64_t i = 0; i < I; i++)
          acc += x[m * I + i] * w[o * I + i];
        y[m * O + o] = acc + (b ? b[o] : 0);
      }
}

/* dx += dy w, dw += dy^T x, db += column sums of dy, each summed over m in order. */
static void
R (linear_backward) (int64_t M, int64_t I, int64_t O, const T *x, const T *w, const T *dy, T *dx,
                     T *dw, T *db)
{
  for (int64_t m = 0; m < M; m++)
    for (int64_t o = 0; o < O; o++)
      {
        const T g = dy[m * O + o];
        if (db)
          db[o] += g;
        for (int64_t i = 0; i < I; i++)
          {
            dw[o * I + i] += g * x[m * I + i];
            if (dx)
              dx[m * I + i] += g * w[o * I + i];
          }
      }
}

/* Cross-entropy of logits x [N, K] against labels, mean over the batch
 * (PyTorch's F.cross_entropy, no weights or smoothing):
 *   loss = sum_n (log sum_k exp x [n, k] - x [n, y_n]) / N,
 * the log-sum-exp taken around the row max.  dx (may be NULL) receives
 * (softmax (x) - onehot (y)) / N. */
static T
R (cross_entropy) (int64_t N, int64_t K, const T *x, const int64_t *labels, T *dx)
{
  T total = 0;
  for (int64_t n = 0; n < N; n++)
    {
      const T *r = x + n * K;
      T m = r[0], se = 0;
      for (int64_t k = 1; k < K; k++)
        m = r[k] > m ? r[k] : m;
      for (int64_t k = 0; k < K; k++)
        se += EXP (r[k] - m);
      total += m + LOG (se) - r[labels[n]];
      if (!dx)
        continue;
      for (int64_t k = 0; k < K; k++)
        dx[n * K + k] += (EXP (r[k] - m) / se - (k == labels[n] ? 1 : 0)) / (T) N;
    }
  return total / (T) N;
}

/* Concatenation along per-sample axis ax of values a [N, ...] and b [N, ...]:
 * outer = N * the dims before ax, each block of a (la * inner values) then
 * b (lb * inner).  back: split y (a gradient) into a and b (+=) instead,
 * either of which may then be NULL (an input, which needs no gradient). */
static void
R (concat) (const ref_shape *sa, const ref_shape *sb, int ax, int64_t N, T *a, T *b, T *y,
            gboolean back)
{
  int64_t outer = N, inner = 1;
  for (int i = 0; i < ax; i++)
    outer *= sa->d[i];
  for (int i = ax + 1; i < sa->nd; i++)
    inner *= sa->d[i];
  const int64_t la = sa->d[ax] * inner, lb = sb->d[ax] * inner;
  for (int64_t o = 0; o < outer; o++)
    {
      T *yo = y + o * (la + lb);
      for (int64_t j = 0; a && j < la; j++)
        if (back)
          a[o * la + j] += yo[j];
        else
          yo[j] = a[o * la + j];
      for (int64_t j = 0; b && j < lb; j++)
        if (back)
          b[o * lb + j] += yo[la + j];
        else
          yo[la + j] = b[o * lb + j];
    }
}

/* One forward (and, when grads is not NULL, backward) of net on a batch of
 * N samples x [N, input shape] with labels [N].  params [i] holds parameter
 * i in T; grads [i] receives its gradient (+=).  Returns the loss. */
static double
R (net_run) (const ref_net *net, int64_t N, const float *x, const int64_t *labels,
             T *const *params, T *const *grads)
{
  const int nn = net->n_nodes;
  T **val = g_new0 (T *, nn), **grad = g_new0 (T *, nn);
  int64_t **arg = g_new0 (int64_t *, nn);
  double loss = NAN;

  for (int i = 0; i < nn; i++)
    {
      const ref_node *nd = &net->nodes[i];
      const int64_t len = N * ref_shape_numel (&nd->shape);
      if (nd->op == REF_LABEL)
        continue;
      val[i] = g_new (T, MAX (len, 1));
      if (grads && nd->op != REF_INPUT)
        grad[i] = g_new0 (T, MAX (len, 1));
    }
  for (int i = 0; i < nn; i++)
    {
      const ref_node *nd = &net->nodes[i];
      const ref_node *a = nd->n_in > 0 ? &net->nodes[nd->in[0]] : NULL;
      const T *xa = a ? val[nd->in[0]] : NULL;
      const T *w = nd->pw >= 0 ? params[nd->pw] : NULL, *b = nd->pb >= 0 ? params[nd->pb] : NULL;
      const int64_t len = N * ref_shape_numel (&nd->shape);
      switch (nd->op)
        {
        case REF_INPUT:
          for (int64_t k = 0; k < len; k++)
            val[i][k] = (T) x[k];
          break;
        case REF_LABEL:
          break;
        case REF_CONV:
          R (conv_forward) (nd, &a->shape, N, xa, w, b, val[i]);
          break;
        case REF_MAX_POOL:
          arg[i] = g_new (int64_t, len);
          R (max_pool_forward) (nd, &a->shape, N, xa, val[i], arg[i]);
          break;
        case REF_AVG_POOL:
          R (avg_pool_forward) (nd, &a->shape, N, xa, val[i]);
          break;
        case REF_BATCH_NORM:
          R (bn_forward) (N, a->shape.d[0], ref_shape_numel (&a->shape) / a->shape.d[0], nd->eps,
                          xa, w, b, val[i]);
          break;
        case REF_LAYER_NORM:
          R (ln_forward) (len / nd->norm_size, nd->norm_size, nd->eps, xa, w, b, val[i]);
          break;
        case REF_LINEAR:
          R (linear_forward) (len / nd->shape.d[nd->shape.nd - 1], a->shape.d[a->shape.nd - 1],
                              nd->shape.d[nd->shape.nd - 1], xa, w, b, val[i]);
          break;
        case REF_RELU:
          for (int64_t k = 0; k < len; k++)
            val[i][k] = xa[k] > 0 ? xa[k] : 0;
          break;
        case REF_FLATTEN:
          memcpy (val[i], xa, len * sizeof (T));
          break;
        case REF_ADD:
          for (int64_t k = 0; k < len; k++)
            val[i][k] = xa[k] + val[nd->in[1]][k];
          break;
        case REF_CONCAT:
          R (concat) (&a->shape, &net->nodes[nd->in[1]].shape, nd->axis, N, val[nd->in[0]],
                      val[nd->in[1]], val[i], FALSE);
          break;
        case REF_CROSS_ENTROPY:
          {
            T l = R (cross_entropy) (N, a->shape.d[0], xa, labels,
                                     grads && i == net->loss ? grad[nd->in[0]] : NULL);
            val[i][0] = l;
            if (i == net->loss)
              loss = (double) l;
            break;
          }
        }
    }

  /* Backward: reverse topological order; a node's gradient is complete when
   * it is reached (every consumer comes after it).  The loss seeded its
   * logits' gradient above. */
  for (int i = nn - 1; grads && i >= 0; i--)
    {
      const ref_node *nd = &net->nodes[i];
      if (nd->op == REF_INPUT || nd->op == REF_LABEL || nd->op == REF_CROSS_ENTROPY)
        continue;
      const ref_node *a = &net->nodes[nd->in[0]];
      const T *xa = val[nd->in[0]], *dy = grad[i];
      T *dxa = grad[nd->in[0]];
      const T *w = nd->pw >= 0 ? params[nd->pw] : NULL;
      T *dw = nd->pw >= 0 ? grads[nd->pw] : NULL, *db = nd->pb >= 0 ? grads[nd->pb] : NULL;
      const int64_t len = N * ref_shape_numel (&nd->shape);
      switch (nd->op)
        {
        case REF_CONV:
          R (conv_backward) (nd, &a->shape, N, xa, w, dy, dxa, dw, db);
          break;
        case REF_MAX_POOL:
          if (dxa)
            R (max_pool_backward) (nd, &a->shape, N, arg[i], dy, dxa);
          break;
        case REF_AVG_POOL:
          if (dxa)
            R (avg_pool_backward) (nd, &a->shape, N, dy, dxa);
          break;
        case REF_BATCH_NORM:
          R (bn_backward) (N, a->shape.d[0], ref_shape_numel (&a->shape) / a->shape.d[0], nd->eps,
                           xa, w, dy, dxa, dw, db);
          break;
        case REF_LAYER_NORM:
          R (ln_backward) (len / nd->norm_size, nd->norm_size, nd->eps, xa, w, dy, dxa, dw, db);
          break;
        case REF_LINEAR:
          R (linear_backward) (len / nd->shape.d[nd->shape.nd - 1], a->shape.d[a->shape.nd - 1],
                               nd->shape.d[nd->shape.nd - 1], xa, w, dy, dxa, dw, db);
          break;
        case REF_RELU:
          /* PyTorch's threshold_backward on the result: 0 where y <= 0. */
          if (dxa)
            for (int64_t k = 0; k < len; k++)
              dxa[k] += val[i][k] > 0 ? dy[k] : 0;
          break;
        case REF_FLATTEN:
          if (dxa)
            for (int64_t k = 0; k < len; k++)
              dxa[k] += dy[k];
          break;
        case REF_ADD:
          for (int j = 0; j < 2; j++)
            if (grad[nd->in[j]])
              for (int64_t k = 0; k < len; k++)
                grad[nd->in[j]][k] += dy[k];
          break;
        case REF_CONCAT:
          R (concat) (&a->shape, &net->nodes[nd->in[1]].shape, nd->axis, N, grad[nd->in[0]],
                      grad[nd->in[1]], grad[i], TRUE);
          break;
        default:
          g_assert_not_reached ();
        }
    }

  for (int i = 0; i < nn; i++)
    {
      g_free (val[i]);
      g_free (grad[i]);
      g_free (arg[i]);
    }
  g_free (val);
  g_free (grad);
  g_free (arg);
  return loss;
}
