/* device.h — the backend vtable.
 *
 * Each backend (CPU now; CUDA later) fills one tw_device.  Shared code never
 * tests for a backend by name; it calls through this table.  Memory returned
 * by alloc belongs to the caller and goes back through free.
 */
#pragma once

#include <glib.h>
#include <stddef.h>

G_BEGIN_DECLS

typedef enum
{
  TW_DEVICE_CPU,
  TW_DEVICE_CUDA,
} tw_device_kind;

struct tw_device
{
  const char *name;                    /* "cpu", "cuda:0" */
  tw_device_kind kind;
  void *(*alloc) (size_t nbytes);      /* aligned to 64 bytes; NULL on OOM */
  void (*free) (void *ptr, size_t nbytes);   /* nbytes as passed to alloc */
  void (*copy) (void *dst, const void *src, size_t nbytes);  /* within the device */
  void (*sync) (void);
};

typedef struct tw_device tw_device;

const tw_device *tw_device_cpu (void);

/* The CPU device keeps freed blocks of 64 KiB and more for reuse (a training
 * step allocates the same sizes every time; fresh pages cost a fault each).
 * Cached bytes are capped; tw_device_cpu_trim () returns them all. */
void tw_device_cpu_trim (void);
size_t tw_device_cpu_cached_bytes (void);

/* Threads used by CPU kernels and OpenBLAS (default: all cores). */
void tw_set_num_threads (int n);
/* The calling thread's own count, over the process-wide one (0: back to
 * that); a session's worker sets it. */
void tw_set_thread_num_threads (int n);
int tw_get_num_threads (void);

G_END_DECLS
