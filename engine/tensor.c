/* tensor.c — tensor storage, views and strided copies. */
#define G_LOG_DOMAIN "twb-tensor"

#include "engine/tensor.h"
#include "engine/device.h"
#include "engine/memory.h"

#include <string.h>

static const size_t dtype_sizes[TW_N_DTYPES] = { 4, 8, 4, 8, 1 };
static const char *const dtype_names[TW_N_DTYPES] = { "f32", "f64", "i32", "i64", "u8" };

size_t
tw_dtype_size (tw_dtype dtype)
{
  g_assert (dtype < TW_N_DTYPES);
  return dtype_sizes[dtype];
}

const char *
tw_dtype_name (tw_dtype dtype)
{
  g_assert (dtype < TW_N_DTYPES);
  return dtype_names[dtype];
}

gboolean
tw_dtype_from_name (const char *name, tw_dtype *out)
{
  for (int i = 0; i < TW_N_DTYPES; i++)
    if (g_strcmp0 (name, dtype_names[i]) == 0)
      {
        *out = (tw_dtype) i;
        return TRUE;
      }
  return FALSE;
}

gboolean
tw_dtype_is_float (tw_dtype dtype)
{
  return dtype == TW_F32 || dtype == TW_F64;
}

/* Bytes of tensor storage allocated and not yet freed, every device: one
 * relaxed atomic add per allocation and per free (the profiler samples it). */
static gint64 storage_bytes_live;

guint64
tw_tensor_storage_bytes (void)
{
  return (guint64) __atomic_load_n (&storage_bytes_live, __ATOMIC_RELAXED);
}

static tw_storage *
storage_try_new (const tw_device *dev, size_t nbytes)
{
  /* Linux overcommits: refuse what cannot be backed before the pages are
   * touched (and the process killed).  Small blocks skip the check, which
   * reads /proc/meminfo. */
  if (nbytes >= TW_TENSOR_CHECKED_BYTES && tw_device_is_host (dev)
      && nbytes > tw_memory_available ())
    return NULL;
  void *data = tw_device_alloc (dev, nbytes);
  if (data == NULL)
    return NULL;
  tw_storage *s = g_new0 (tw_storage, 1);
  s->refcount = 1;
  s->data = data;
  s->nbytes = nbytes;
  s->device = dev;
  s->owns_data = TRUE;
  __atomic_add_fetch (&storage_bytes_live, (gint64) nbytes, __ATOMIC_RELAXED);
  return s;
}

static tw_storage *
storage_new (const tw_device *dev, size_t nbytes)
{
  tw_storage *s = storage_try_new (dev, nbytes);
  if (s == NULL)
    g_error ("out of memory allocating %zu bytes for a tensor on %s", nbytes,
             tw_device_name (dev));
  return s;
}

static void
storage_unref (tw_storage *s)
{
  if (g_atomic_int_dec_and_test (&s->refcount))
    {
      if (s->owns_data)
        {
          tw_device_free (s->device, s->data, s->nbytes);
          __atomic_sub_fetch (&storage_bytes_live, (gint64) s->nbytes, __ATOMIC_RELAXED);
        }
      g_free (s);
    }
}

/* Strides of a representable shape: a 0 counts as 1, so that they never
 * overflow (tw_shape_numel_checked bounds that product). */
static void
set_contiguous_strides (tw_tensor *t)
{
  int64_t s = 1;
  for (int i = t->ndim - 1; i >= 0; i--)
    {
      t->strides[i] = s;
      s *= MAX (t->shape[i], 1);
    }
}

/* NULL when the shape is not representable. */
static tw_tensor *
tensor_alloc_header (tw_dtype dtype, int ndim, const int64_t *shape)
{
  g_assert (ndim >= 0 && ndim <= TW_MAX_DIMS);
  if (!tw_shape_nbytes_checked (dtype, ndim, shape, NULL))
    return NULL;
  tw_tensor *t = g_new0 (tw_tensor, 1);
  t->refcount = 1;
  t->dtype = dtype;
  t->ndim = ndim;
  for (int i = 0; i < ndim; i++)
    t->shape[i] = shape[i];
  set_contiguous_strides (t);
  return t;
}

/* Programmer error: shapes reaching tw_tensor_new were checked upstream. */
static tw_tensor *
tensor_header_or_die (tw_dtype dtype, int ndim, const int64_t *shape)
{
  tw_tensor *t = tensor_alloc_header (dtype, ndim, shape);
  if (t == NULL)
    {
      g_autofree char *s = tw_shape_to_string (ndim, shape);
      g_error ("tensor of shape %s: negative size or larger than 2^63 bytes", s);
    }
  return t;
}

tw_tensor *
tw_tensor_new_on (const tw_device *dev, tw_dtype dtype, int ndim, const int64_t *shape)
{
  tw_tensor *t = tensor_header_or_die (dtype, ndim, shape);
  t->storage = storage_new (dev, tw_tensor_nbytes (t));
  return t;
}

tw_tensor *
tw_tensor_try_new_on (const tw_device *dev, tw_dtype dtype, int ndim, const int64_t *shape)
{
  tw_tensor *t = tensor_alloc_header (dtype, ndim, shape);
  if (t == NULL)
    return NULL;
  t->storage = storage_try_new (dev, tw_tensor_nbytes (t));
  if (t->storage == NULL)
    {
      g_free (t);
      return NULL;
    }
  return t;
}

tw_tensor *
tw_tensor_new (tw_dtype dtype, int ndim, const int64_t *shape)
{
  return tw_tensor_new_on (tw_device_cpu (), dtype, ndim, shape);
}

tw_tensor *
tw_tensor_try_new (tw_dtype dtype, int ndim, const int64_t *shape)
{
  return tw_tensor_try_new_on (tw_device_cpu (), dtype, ndim, shape);
}

const tw_device *
tw_tensor_device (const tw_tensor *t)
{
  return t->storage->device;
}

tw_tensor *
tw_tensor_to_device (tw_tensor *t, const tw_device *dev)
{
  const tw_device *from = t->storage->device;
  if (from == dev)
    return tw_tensor_ref (t);
  g_autoptr (tw_tensor) c = NULL;
  if (!tw_device_is_host (from))
    {
      /* Whole storage over, then a host view of it. */
      g_assert (tw_tensor_is_contiguous (t));
      tw_tensor *h = tw_tensor_new (t->dtype, t->ndim, t->shape);
      tw_device_copy_d2h (from, tw_tensor_data (h),
                          (guint8 *) t->storage->data + t->offset * tw_dtype_size (t->dtype),
                          tw_tensor_nbytes (t), NULL);
      if (tw_device_is_host (dev))
        return h;
      c = h;
    }
  else
    c = tw_tensor_contiguous (t);
  tw_tensor *d = tw_tensor_new_on (dev, c->dtype, c->ndim, c->shape);
  tw_device_copy_h2d (dev, tw_tensor_data (d), tw_tensor_data (c), tw_tensor_nbytes (c), NULL);
  return d;
}

tw_tensor *
tw_tensor_to_host (tw_tensor *t)
{
  if (tw_device_is_host (t->storage->device))
    return tw_tensor_ref (t);
  return tw_tensor_to_device (t, tw_device_cpu ());
}

tw_tensor *
tw_tensor_zeros (tw_dtype dtype, int ndim, const int64_t *shape)
{
  tw_tensor *t = tw_tensor_new (dtype, ndim, shape);
  memset (t->storage->data, 0, tw_tensor_nbytes (t));
  return t;
}

tw_tensor *
tw_tensor_new_like (const tw_tensor *t)
{
  return tw_tensor_new (t->dtype, t->ndim, t->shape);
}

tw_tensor *
tw_tensor_zeros_like (const tw_tensor *t)
{
  return tw_tensor_zeros (t->dtype, t->ndim, t->shape);
}

tw_tensor *
tw_tensor_from_data (tw_dtype dtype, int ndim, const int64_t *shape, const void *data)
{
  tw_tensor *t = tw_tensor_new (dtype, ndim, shape);
  memcpy (t->storage->data, data, tw_tensor_nbytes (t));
  return t;
}

tw_tensor *
tw_tensor_new_borrowed (tw_dtype dtype, int ndim, const int64_t *shape, void *data)
{
  tw_tensor *t = tensor_header_or_die (dtype, ndim, shape);
  tw_storage *s = g_new0 (tw_storage, 1);
  s->refcount = 1;
  s->data = data;
  s->nbytes = tw_tensor_nbytes (t);
  s->device = tw_device_cpu ();
  s->owns_data = FALSE;
  t->storage = s;
  return t;
}

tw_tensor *
tw_tensor_scalar_f32 (float v)
{
  tw_tensor *t = tw_tensor_new (TW_F32, 0, NULL);
  *tw_tensor_f32 (t) = v;
  return t;
}

tw_tensor *
tw_tensor_ref (tw_tensor *t)
{
  g_atomic_int_inc (&t->refcount);
  return t;
}

void
tw_tensor_unref (tw_tensor *t)
{
  if (t == NULL)
    return;
  if (g_atomic_int_dec_and_test (&t->refcount))
    {
      storage_unref (t->storage);
      g_free (t);
    }
}

int64_t
tw_tensor_numel (const tw_tensor *t)
{
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++)
    n *= t->shape[i];
  return n;
}

size_t
tw_tensor_nbytes (const tw_tensor *t)
{
  return (size_t) tw_tensor_numel (t) * tw_dtype_size (t->dtype);
}

gboolean
tw_tensor_is_contiguous (const tw_tensor *t)
{
  int64_t s = 1;
  for (int i = t->ndim - 1; i >= 0; i--)
    {
      if (t->shape[i] == 0)
        return TRUE;     /* no element: any strides will do */
      if (t->shape[i] != 1 && t->strides[i] != s)
        return FALSE;
      s *= t->shape[i];
    }
  return TRUE;
}

gboolean
tw_tensor_same_shape (const tw_tensor *a, const tw_tensor *b)
{
  if (a->ndim != b->ndim)
    return FALSE;
  for (int i = 0; i < a->ndim; i++)
    if (a->shape[i] != b->shape[i])
      return FALSE;
  return TRUE;
}

void *
tw_tensor_data (const tw_tensor *t)
{
  return (char *) t->storage->data + t->offset * (int64_t) tw_dtype_size (t->dtype);
}

#define TYPED_ACCESSOR(fn, ctype, DT)                 \
  ctype *fn (const tw_tensor *t)                      \
  {                                                   \
    g_assert (t->dtype == DT);                        \
    return (ctype *) tw_tensor_data (t);              \
  }

TYPED_ACCESSOR (tw_tensor_f32, float, TW_F32)
TYPED_ACCESSOR (tw_tensor_f64, double, TW_F64)
TYPED_ACCESSOR (tw_tensor_i64, int64_t, TW_I64)
TYPED_ACCESSOR (tw_tensor_i32, int32_t, TW_I32)
TYPED_ACCESSOR (tw_tensor_u8, uint8_t, TW_U8)

static tw_tensor *
view_of (tw_tensor *t)
{
  tw_tensor *v = g_new0 (tw_tensor, 1);
  *v = *t;
  v->refcount = 1;
  g_atomic_int_inc (&t->storage->refcount);
  return v;
}

tw_tensor *
tw_tensor_permute (tw_tensor *t, const int *perm)
{
  tw_tensor *v = view_of (t);
  gboolean seen[TW_MAX_DIMS] = { 0 };
  for (int i = 0; i < t->ndim; i++)
    {
      g_assert (perm[i] >= 0 && perm[i] < t->ndim && !seen[perm[i]]);
      seen[perm[i]] = TRUE;
      v->shape[i] = t->shape[perm[i]];
      v->strides[i] = t->strides[perm[i]];
    }
  return v;
}

tw_tensor *
tw_tensor_transpose (tw_tensor *t, int d0, int d1)
{
  int perm[TW_MAX_DIMS];
  for (int i = 0; i < t->ndim; i++)
    perm[i] = i;
  perm[d0] = d1;
  perm[d1] = d0;
  return tw_tensor_permute (t, perm);
}

tw_tensor *
tw_tensor_slice (tw_tensor *t, int dim, int64_t start, int64_t stop, int64_t step)
{
  g_assert (dim >= 0 && dim < t->ndim && step > 0);
  int64_t n = t->shape[dim];
  if (start < 0)
    start += n;
  if (stop < 0)
    stop += n;
  start = CLAMP (start, 0, n);
  stop = CLAMP (stop, start, n);
  tw_tensor *v = view_of (t);
  v->offset += start * t->strides[dim];
  v->shape[dim] = (stop - start + step - 1) / step;
  v->strides[dim] = t->strides[dim] * step;
  return v;
}

gboolean
tw_broadcast_shapes (int na, const int64_t *a, int nb, const int64_t *b, int *nout, int64_t *out)
{
  int n = MAX (na, nb);
  if (n > TW_MAX_DIMS)
    return FALSE;
  for (int i = 0; i < n; i++)
    {
      int64_t da = i < n - na ? 1 : a[i - (n - na)];
      int64_t db = i < n - nb ? 1 : b[i - (n - nb)];
      if (da == db || db == 1)
        out[i] = da;
      else if (da == 1)
        out[i] = db;
      else
        return FALSE;
    }
  *nout = n;
  return TRUE;
}

tw_tensor *
tw_tensor_expand (tw_tensor *t, int ndim, const int64_t *shape)
{
  if (ndim < t->ndim || ndim > TW_MAX_DIMS)
    return NULL;
  tw_tensor *v = view_of (t);
  v->ndim = ndim;
  int lead = ndim - t->ndim;
  for (int i = 0; i < ndim; i++)
    {
      int64_t d = i < lead ? 1 : t->shape[i - lead];
      int64_t s = i < lead ? 0 : t->strides[i - lead];
      if (d == shape[i])
        v->strides[i] = d == 1 ? 0 : s;
      else if (d == 1)
        v->strides[i] = 0;
      else
        {
          tw_tensor_unref (v);
          return NULL;
        }
      v->shape[i] = shape[i];
    }
  return v;
}

tw_tensor *
tw_tensor_reshape (tw_tensor *t, int ndim, const int64_t *shape)
{
  int64_t resolved[TW_MAX_DIMS];
  int infer = -1;
  g_assert (ndim <= TW_MAX_DIMS);
  for (int i = 0; i < ndim; i++)
    {
      resolved[i] = shape[i];
      if (shape[i] == -1)
        {
          g_assert (infer < 0);
          infer = i;
          resolved[i] = 1;
        }
    }
  int64_t numel = tw_tensor_numel (t), known;
  g_return_val_if_fail (tw_shape_numel_checked (ndim, resolved, &known), NULL);
  if (infer >= 0)
    resolved[infer] = known ? numel / known : 0;
  g_return_val_if_fail (numel == (infer >= 0 ? known * resolved[infer] : known), NULL);

  g_autoptr (tw_tensor) src = tw_tensor_contiguous (t);
  tw_tensor *v = view_of (src);
  v->ndim = ndim;
  for (int i = 0; i < ndim; i++)
    v->shape[i] = resolved[i];
  set_contiguous_strides (v);
  return v;
}

/* Iterate a strided index over shape: advance idx (row-major), return FALSE at
 * the end. */
static inline gboolean
next_index (int ndim, const int64_t *shape, int64_t *idx)
{
  for (int d = ndim - 1; d >= 0; d--)
    {
      if (++idx[d] < shape[d])
        return TRUE;
      idx[d] = 0;
    }
  return FALSE;
}

static inline int64_t
strided_offset (const tw_tensor *t, const int64_t *idx)
{
  int64_t o = t->offset;
  for (int d = 0; d < t->ndim; d++)
    o += idx[d] * t->strides[d];
  return o;
}

static inline double
load_as_double (const void *base, tw_dtype dt, int64_t o)
{
  switch (dt)
    {
    case TW_F32: return ((const float *) base)[o];
    case TW_F64: return ((const double *) base)[o];
    case TW_I32: return ((const int32_t *) base)[o];
    case TW_I64: return (double) ((const int64_t *) base)[o];
    case TW_U8: return ((const uint8_t *) base)[o];
    default: g_assert_not_reached ();
    }
}

static inline void
store_double (void *base, tw_dtype dt, int64_t o, double v)
{
  switch (dt)
    {
    case TW_F32: ((float *) base)[o] = (float) v; break;
    case TW_F64: ((double *) base)[o] = v; break;
    case TW_I32: ((int32_t *) base)[o] = (int32_t) v; break;
    case TW_I64: ((int64_t *) base)[o] = (int64_t) v; break;
    case TW_U8: ((uint8_t *) base)[o] = (uint8_t) v; break;
    default: g_assert_not_reached ();
    }
}

gboolean
tw_tensor_copy_into (tw_tensor *dst, const tw_tensor *src)
{
  g_autoptr (tw_tensor) s = tw_tensor_expand ((tw_tensor *) src, dst->ndim, dst->shape);
  if (s == NULL)
    return FALSE;
  if (tw_tensor_numel (dst) == 0)
    return TRUE;

  size_t es = tw_dtype_size (dst->dtype);
  if (s->dtype == dst->dtype && tw_tensor_is_contiguous (s) && tw_tensor_is_contiguous (dst))
    {
      memmove (tw_tensor_data (dst), tw_tensor_data (s), tw_tensor_numel (dst) * es);
      return TRUE;
    }

  int64_t idx[TW_MAX_DIMS] = { 0 };
  void *db = dst->storage->data;
  const void *sb = s->storage->data;
  if (s->dtype == dst->dtype)
    {
      do
        memcpy ((char *) db + strided_offset (dst, idx) * es,
                (const char *) sb + strided_offset (s, idx) * es, es);
      while (next_index (dst->ndim, dst->shape, idx));
    }
  else
    {
      do
        store_double (db, dst->dtype, strided_offset (dst, idx),
                      load_as_double (sb, s->dtype, strided_offset (s, idx)));
      while (next_index (dst->ndim, dst->shape, idx));
    }
  return TRUE;
}

tw_tensor *
tw_tensor_contiguous (tw_tensor *t)
{
  if (tw_tensor_is_contiguous (t))
    return tw_tensor_ref (t);
  return tw_tensor_clone (t);
}

tw_tensor *
tw_tensor_clone (const tw_tensor *t)
{
  tw_tensor *c = tw_tensor_new (t->dtype, t->ndim, t->shape);
  tw_tensor_copy_into (c, t);
  return c;
}

tw_tensor *
tw_tensor_cast (const tw_tensor *t, tw_dtype dtype)
{
  tw_tensor *c = tw_tensor_new (dtype, t->ndim, t->shape);
  tw_tensor_copy_into (c, t);
  return c;
}

void
tw_tensor_fill (tw_tensor *t, double value)
{
  int64_t n = tw_tensor_numel (t);
  if (n == 0)
    return;
  if (tw_tensor_is_contiguous (t))
    {
      void *p = tw_tensor_data (t);
      if (t->dtype == TW_F32)
        {
          float v = (float) value, *f = p;
          for (int64_t i = 0; i < n; i++)
            f[i] = v;
        }
      else
        for (int64_t i = 0; i < n; i++)
          store_double (p, t->dtype, i, value);
      return;
    }
  int64_t idx[TW_MAX_DIMS] = { 0 };
  do
    store_double (t->storage->data, t->dtype, strided_offset (t, idx), value);
  while (next_index (t->ndim, t->shape, idx));
}

static int64_t
flat_to_offset (const tw_tensor *t, int64_t i)
{
  int64_t o = t->offset;
  for (int d = t->ndim - 1; d >= 0; d--)
    {
      o += (i % t->shape[d]) * t->strides[d];
      i /= t->shape[d];
    }
  return o;
}

double
tw_tensor_get_flat (const tw_tensor *t, int64_t i)
{
  return load_as_double (t->storage->data, t->dtype, flat_to_offset (t, i));
}

void
tw_tensor_set_flat (tw_tensor *t, int64_t i, double v)
{
  store_double (t->storage->data, t->dtype, flat_to_offset (t, i), v);
}

char *
tw_shape_to_string (int ndim, const int64_t *shape)
{
  GString *s = g_string_new ("[");
  for (int i = 0; i < ndim; i++)
    {
      if (i)
        g_string_append (s, ", ");
      if (shape[i] < 0)
        g_string_append_c (s, 'N');
      else
        g_string_append_printf (s, "%" G_GINT64_FORMAT, shape[i]);
    }
  g_string_append_c (s, ']');
  return g_string_free (s, FALSE);
}

/* ---- Checked size arithmetic ------------------------------------------ */

gboolean
tw_size_mul (int64_t a, int64_t b, int64_t *out)
{
  guint64 r;
  if (a < 0 || b < 0 || !g_uint64_checked_mul (&r, (guint64) a, (guint64) b) || r > G_MAXINT64)
    return FALSE;
  *out = (int64_t) r;
  return TRUE;
}

gboolean
tw_size_add (int64_t a, int64_t b, int64_t *out)
{
  guint64 r;
  if (a < 0 || b < 0 || !g_uint64_checked_add (&r, (guint64) a, (guint64) b) || r > G_MAXINT64)
    return FALSE;
  *out = (int64_t) r;
  return TRUE;
}

/* The extent (dims, 0 counted as 1, times es) fits in int64; *numel the
 * true product. */
static gboolean
shape_checked (int ndim, const int64_t *shape, int64_t es, int64_t *numel)
{
  int64_t extent = es, n = 1;
  for (int i = 0; i < ndim; i++)
    {
      if (shape[i] < 0 || !tw_size_mul (extent, MAX (shape[i], 1), &extent))
        return FALSE;
      n = shape[i] == 0 ? 0 : n * shape[i];
    }
  if (numel)
    *numel = n;
  return TRUE;
}

gboolean
tw_shape_numel_checked (int ndim, const int64_t *shape, int64_t *numel)
{
  return ndim >= 0 && ndim <= TW_MAX_DIMS && shape_checked (ndim, shape, 1, numel);
}

gboolean
tw_shape_nbytes_checked (tw_dtype dtype, int ndim, const int64_t *shape, size_t *nbytes)
{
  int64_t n;
  if (ndim < 0 || ndim > TW_MAX_DIMS || dtype >= TW_N_DTYPES
      || !shape_checked (ndim, shape, (int64_t) tw_dtype_size (dtype), &n))
    return FALSE;
  if (nbytes)
    *nbytes = (size_t) n * tw_dtype_size (dtype);
  return TRUE;
}

char *
tw_format_bytes (guint64 n)
{
  static const char *const units[] = { "kB", "MB", "GB", "TB", "PB", "EB" };
  if (n < 1000)
    return g_strdup_printf ("%" G_GUINT64_FORMAT " bytes", n);
  double v = (double) n;
  int u = -1;
  while (v >= 1000 && u + 1 < (int) G_N_ELEMENTS (units))
    {
      v /= 1000;
      u++;
    }
  return g_strdup_printf ("%.*f %s", v < 10 ? 2 : v < 100 ? 1 : 0, v, units[u]);
}
