/* index-map.c — gather and scatter-add through per-dim index maps (pad,
 * resize). */
#define G_LOG_DOMAIN "twb-ops-index-map"

#include "engine/ops/index-map.h"

#include "engine/cpu/parallel.h"

#include <string.h>

/* Rows of the output go parallel above this many elements (fork/join costs a
 * few µs, a row copy ~1 ns per element). */
#define INDEX_MAP_PAR_MIN 32768

void
tw_index_map_build (tw_index_map *m, const tw_kctx *ctx, int nd, const int64_t *in,
                    const int64_t *out, tw_index_map_fn fn, const void *data)
{
  g_return_if_fail (nd >= 1 && nd <= TW_MAX_DIMS);
  int64_t total = 1;
  m->nd = nd;
  for (int d = 0; d < nd; d++)
    {
      m->in[d] = in[d];
      m->out[d] = out[d];
      total += out[d];
    }
  int64_t *buf = tw_scratch (ctx, (size_t) total * sizeof (int64_t));
  for (int d = 0; d < nd; d++)
    {
      m->map[d] = buf;
      for (int64_t i = 0; i < out[d]; i++)
        buf[i] = fn (data, d, i);
      buf += out[d];
    }
}

static inline int
map_threads (const tw_kctx *ctx)
{
  return ctx && ctx->num_threads > 0 ? ctx->num_threads : 1;
}

/* Offset in x of output row r (all dims but the last), or -1 when the row
 * lies in the constant border. */
static inline int64_t
row_source (const tw_index_map *m, int64_t r)
{
  int64_t off = 0, stride = m->in[m->nd - 1];
  for (int d = m->nd - 2; d >= 0; d--)
    {
      int64_t i = r % m->out[d];
      r /= m->out[d];
      int64_t s = m->map[d][i];
      if (s < 0)
        return -1;
      off += s * stride;
      stride *= m->in[d];
    }
  return off;
}

/* Number of output rows (all dims but the last). */
static int64_t
out_rows (const tw_index_map *m)
{
  int64_t rows = 1;
  for (int d = 0; d < m->nd - 1; d++)
    rows *= m->out[d];
  return rows;
}

#define INDEX_MAP_KERNELS(T)                                                                       \
  static void gather_##T (const tw_index_map *m, const T *x, T *y, T v, int nt)                    \
  {                                                                                                \
    int64_t w = m->out[m->nd - 1], rows = out_rows (m);                                            \
    const int64_t *ml = m->map[m->nd - 1];                                                         \
    TW_PARALLEL_FOR (rows *w > INDEX_MAP_PAR_MIN, nt, r, rows, {                                   \
      int64_t off = row_source (m, r);                                                             \
      T *yr = y + r * w;                                                                           \
      if (off < 0)                                                                                 \
        for (int64_t j = 0; j < w; j++)                                                            \
          yr[j] = v;                                                                               \
      else                                                                                         \
        for (int64_t j = 0; j < w; j++)                                                            \
          yr[j] = ml[j] < 0 ? v : x[off + ml[j]];                                                  \
    });                                                                                            \
  }                                                                                                \
  static void scatter_add_##T (const tw_index_map *m, const T *dy, T *dx, int n_lead, int nt)      \
  {                                                                                                \
    int64_t w = m->out[m->nd - 1], rows = out_rows (m), numel_in = 1, parts = 1;                   \
    const int64_t *ml = m->map[m->nd - 1];                                                         \
    for (int d = 0; d < m->nd; d++)                                                                \
      numel_in *= m->in[d];                                                                        \
    for (int d = 0; d < n_lead; d++)                                                               \
      parts *= m->out[d];                                                                          \
    memset (dx, 0, (size_t) numel_in * sizeof (T));                                                \
    int64_t per = rows / MAX (parts, 1);                                                           \
    TW_PARALLEL_FOR (n_lead > 0 && rows * w > INDEX_MAP_PAR_MIN, nt, q, parts, {                   \
      for (int64_t r = q * per; r < (q + 1) * per; r++)                                            \
        {                                                                                          \
          int64_t off = row_source (m, r);                                                         \
          const T *gr = dy + r * w;                                                                \
          if (off < 0)                                                                             \
            continue;                                                                              \
          for (int64_t j = 0; j < w; j++)                                                          \
            if (ml[j] >= 0)                                                                        \
              dx[off + ml[j]] += gr[j];                                                            \
        }                                                                                          \
    });                                                                                            \
  }

INDEX_MAP_KERNELS (float)
INDEX_MAP_KERNELS (double)

void
tw_index_map_gather (const tw_index_map *m, const tw_kctx *ctx, const tw_tensor *x, tw_tensor *y,
                     double value)
{
  if (x->dtype == TW_F32)
    gather_float (m, tw_tensor_f32 (x), tw_tensor_f32 (y), (float) value, map_threads (ctx));
  else
    gather_double (m, tw_tensor_f64 (x), tw_tensor_f64 (y), value, map_threads (ctx));
}

void
tw_index_map_scatter_add (const tw_index_map *m, const tw_kctx *ctx, const tw_tensor *dy,
                          tw_tensor *dx, int n_lead)
{
  g_return_if_fail (n_lead >= 0 && n_lead < m->nd);
  if (dx->dtype == TW_F32)
    scatter_add_float (m, tw_tensor_f32 (dy), tw_tensor_f32 (dx), n_lead, map_threads (ctx));
  else
    scatter_add_double (m, tw_tensor_f64 (dy), tw_tensor_f64 (dx), n_lead, map_threads (ctx));
}

gboolean
tw_index_map_check_float (const char *op, const char *what, const tw_tinfo *t, GError **error)
{
  if (tw_dtype_is_float (t->dtype))
    return TRUE;
  g_autofree char *s = tw_tinfo_to_string (t);
  g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_DTYPE, "%s expects a float %s (f32 or f64), got %s",
               op, what, s);
  return FALSE;
}

gboolean
tw_index_map_check_grad (const char *op, const char *what, const tw_tinfo *dy, int nd,
                         const int64_t *out, GError **error)
{
  tw_tinfo want;
  tw_tinfo_set (&want, dy->dtype, nd, out);
  if (tw_tinfo_equal (&want, dy))
    return TRUE;
  g_autofree char *ws = tw_tinfo_to_string (&want);
  g_autofree char *gs = tw_tinfo_to_string (dy);
  g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_SHAPE,
               "%s expects dy shaped like the %s input, %s, got %s", op, what, ws, gs);
  return FALSE;
}

void
tw_index_map_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out, int n_out,
                   tw_cost *cost)
{
  tw_cost_elementwise (in, 1, out, n_out, 0, cost);
}

void
tw_index_map_grad_cost (const tw_attrs *a, const tw_tinfo *in, int n_in, const tw_tinfo *out,
                        int n_out, tw_cost *cost)
{
  tw_cost_elementwise (in, 1, out, n_out, 0, cost);
  cost->flops = (double) tw_tinfo_numel (&in[0], NULL);
}
