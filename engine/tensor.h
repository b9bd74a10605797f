/* tensor.h — refcounted n-dimensional arrays.
 *
 * A tensor is a view (dtype, shape, strides, offset) over a refcounted
 * storage that lives on a device.  Strides and offset count elements, not
 * bytes.  Views (permute, slice, expand, reshape of contiguous data) share the
 * storage; everything else copies.
 *
 *   g_autoptr (tw_tensor) x = tw_tensor_new (TW_F32, 2, (int64_t[]) { 64, 784 });
 *   float *p = tw_tensor_f32 (x);           // contiguous CPU data
 *   g_autoptr (tw_tensor) t = tw_tensor_permute (x, (int[]) { 1, 0 });  // view
 *
 * Ownership: every function returning a tw_tensor * returns a new reference
 * that the caller releases with tw_tensor_unref ().
 */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

#define TW_MAX_DIMS 6

typedef enum
{
  TW_F32,
  TW_F64,
  TW_I32,
  TW_I64,
  TW_U8,
  TW_N_DTYPES
} tw_dtype;

typedef struct tw_device tw_device;

typedef struct tw_storage
{
  gint refcount;
  void *data;
  size_t nbytes;
  const tw_device *device;
  gboolean owns_data;   /* FALSE for storage wrapping external memory */
} tw_storage;

typedef struct tw_tensor
{
  gint refcount;
  tw_dtype dtype;
  int ndim;
  int64_t shape[TW_MAX_DIMS];
  int64_t strides[TW_MAX_DIMS];   /* in elements */
  int64_t offset;                 /* in elements */
  tw_storage *storage;
} tw_tensor;

size_t tw_dtype_size (tw_dtype dtype);
const char *tw_dtype_name (tw_dtype dtype);          /* "f32", "f64", "i32", "i64", "u8" */
gboolean tw_dtype_from_name (const char *name, tw_dtype *out);
gboolean tw_dtype_is_float (tw_dtype dtype);

/* Constructors: contiguous, on the CPU unless _on names a device.  _new
 * leaves the data uninitialised. */
tw_tensor *tw_tensor_new_on (const tw_device *dev, tw_dtype dtype, int ndim, const int64_t *shape);
tw_tensor *tw_tensor_try_new_on (const tw_device *dev, tw_dtype dtype, int ndim,
                                 const int64_t *shape);
const tw_device *tw_tensor_device (const tw_tensor *t);
/* The same values on dev (a new reference to t when it is there already). */
tw_tensor *tw_tensor_to_device (tw_tensor *t, const tw_device *dev);
/* The same values in host memory, for code outside kernels that reads
 * them (loss values, the debugger's statistics): t itself on the CPU. */
tw_tensor *tw_tensor_to_host (tw_tensor *t);
tw_tensor *tw_tensor_new (tw_dtype dtype, int ndim, const int64_t *shape);
/* Like tw_tensor_new, but returns NULL instead of aborting when memory runs
 * out, when the shape is not representable (see tw_shape_nbytes_checked) or
 * when a host allocation of TW_TENSOR_CHECKED_BYTES or more exceeds
 * tw_memory_available () (engine/memory.h): Linux overcommits, so a large
 * malloc succeeds and the process is killed later, when the pages are
 * touched.  Same for tw_tensor_try_new_on. */
#define TW_TENSOR_CHECKED_BYTES ((size_t) 64 << 20)
tw_tensor *tw_tensor_try_new (tw_dtype dtype, int ndim, const int64_t *shape);
tw_tensor *tw_tensor_zeros (tw_dtype dtype, int ndim, const int64_t *shape);
tw_tensor *tw_tensor_new_like (const tw_tensor *t);
tw_tensor *tw_tensor_zeros_like (const tw_tensor *t);
/* Copies numel elements of dtype from data. */
tw_tensor *tw_tensor_from_data (tw_dtype dtype, int ndim, const int64_t *shape, const void *data);
tw_tensor *tw_tensor_scalar_f32 (float v);  /* 0-d tensor */
/* A contiguous tensor over memory it does not own: the caller keeps data
 * alive (and may repoint t->storage->data) for the tensor's lifetime. */
tw_tensor *tw_tensor_new_borrowed (tw_dtype dtype, int ndim, const int64_t *shape, void *data);

tw_tensor *tw_tensor_ref (tw_tensor *t);
void tw_tensor_unref (tw_tensor *t);

int64_t tw_tensor_numel (const tw_tensor *t);
size_t tw_tensor_nbytes (const tw_tensor *t);       /* numel * dtype size */
gboolean tw_tensor_is_contiguous (const tw_tensor *t);
gboolean tw_tensor_same_shape (const tw_tensor *a, const tw_tensor *b);

/* Pointer to the first element (storage data + offset).  The typed variants
 * g_assert the dtype. */
void *tw_tensor_data (const tw_tensor *t);
float *tw_tensor_f32 (const tw_tensor *t);
double *tw_tensor_f64 (const tw_tensor *t);
int64_t *tw_tensor_i64 (const tw_tensor *t);
int32_t *tw_tensor_i32 (const tw_tensor *t);
uint8_t *tw_tensor_u8 (const tw_tensor *t);

/* Views (share storage). */
tw_tensor *tw_tensor_permute (tw_tensor *t, const int *perm);
tw_tensor *tw_tensor_transpose (tw_tensor *t, int d0, int d1);
tw_tensor *tw_tensor_slice (tw_tensor *t, int dim, int64_t start, int64_t stop, int64_t step);
/* Broadcast view to ndim/shape (NumPy rules; stride 0 on expanded dims).
 * Returns NULL if the shapes are incompatible. */
tw_tensor *tw_tensor_expand (tw_tensor *t, int ndim, const int64_t *shape);
/* A view if t is contiguous, else a contiguous copy.  One entry may be -1. */
tw_tensor *tw_tensor_reshape (tw_tensor *t, int ndim, const int64_t *shape);

/* Copies. */
tw_tensor *tw_tensor_contiguous (tw_tensor *t);     /* new ref to t if already contiguous */
tw_tensor *tw_tensor_clone (const tw_tensor *t);    /* always a fresh contiguous copy */
tw_tensor *tw_tensor_cast (const tw_tensor *t, tw_dtype dtype);
/* dst[...] = src[...] with src broadcast to dst's shape; dtypes may differ. */
gboolean tw_tensor_copy_into (tw_tensor *dst, const tw_tensor *src);
void tw_tensor_fill (tw_tensor *t, double value);

/* Element access by logical flat index (row-major over shape), any strides
 * and dtype.  Slow: for tests, I/O and debugging. */
double tw_tensor_get_flat (const tw_tensor *t, int64_t i);
void tw_tensor_set_flat (tw_tensor *t, int64_t i, double v);

/* NumPy broadcasting of two shapes.  Returns FALSE if incompatible. */
gboolean tw_broadcast_shapes (int na, const int64_t *a, int nb, const int64_t *b,
                              int *nout, int64_t *out);

/* "[64, 784]"; the caller frees the string. */
char *tw_shape_to_string (int ndim, const int64_t *shape);

/* ---- Checked size arithmetic -----------------------------------------
 *
 * Every element count and byte size computed from sizes a user wrote (model
 * attributes, file headers, batch sizes, step counters) goes through these:
 * they return FALSE instead of wrapping.  A shape is representable when its
 * dims are >= 0 and its extent — the product of its dims with a 0 counted
 * as 1, times the element size — fits in int64: then every element count,
 * stride and byte offset into a tensor of that shape fits too, so kernels
 * may multiply dims freely.
 *
 *   int64_t numel;
 *   if (!tw_shape_numel_checked (ndim, shape, &numel))   // refuse, naming the shape
 */
/* *out = a * b or a + b, for a, b >= 0; FALSE (out untouched) when either is
 * negative or the result exceeds G_MAXINT64. */
gboolean tw_size_mul (int64_t a, int64_t b, int64_t *out);
gboolean tw_size_add (int64_t a, int64_t b, int64_t *out);
/* Elements of a representable shape of 1-byte elements (out may be NULL). */
gboolean tw_shape_numel_checked (int ndim, const int64_t *shape, int64_t *numel);
/* Bytes of a representable shape of dtype elements (out may be NULL). */
gboolean tw_shape_nbytes_checked (tw_dtype dtype, int ndim, const int64_t *shape,
                                  size_t *nbytes);
/* "1.50 GB", "512 bytes": sizes in messages (powers of 1000, as df -H); the
 * caller frees the string. */
char *tw_format_bytes (guint64 nbytes);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_tensor, tw_tensor_unref)

/* Bytes of tensor storage allocated and not yet freed, all devices
 * (storage wrapping memory of others' not counted): a relaxed atomic read. */
guint64 tw_tensor_storage_bytes (void);

G_END_DECLS
