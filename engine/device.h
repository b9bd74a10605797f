/* device.h — devices: where tensors live and kernels run.
 *
 * A tw_device is an instance (the CPU today; "cuda:0", "cuda:1", … when a
 * CUDA build finds GPUs), as ggml's backends are: shared code never tests
 * for a backend by name, it calls these functions, which go through the
 * device's table of function pointers (engine/device-impl.h, private to the
 * device implementations).
 *
 *   const tw_device *dev = tw_device_find ("cpu", &error);
 *   void *buf = tw_device_alloc (dev, nbytes);                 // NULL when out of memory
 *   tw_stream *s = tw_stream_new (dev);
 *   tw_device_copy_h2d (dev, buf, host, nbytes, s);            // async on s
 *   tw_stream_sync (s);
 *   tw_device_free (dev, buf, nbytes);
 *
 * On the CPU a stream runs its work at once (copies are memcpy) and events
 * are always complete; the calls exist so that executors are written once.
 *
 * Kernels register per (op, device) in the kernel table (engine/kernels.h).
 * Kernels never allocate: the executor gives them a workspace
 * (tw_kctx_scratch in engine/op.h).
 *
 * Ownership: devices live as long as the process (never freed).  Memory from
 * tw_device_alloc goes back through tw_device_free with the same size;
 * streams and events through their _free.
 */
#pragma once

#include <glib.h>
#include <stddef.h>

G_BEGIN_DECLS

typedef enum
{
  TW_DEVICE_CPU,
  TW_DEVICE_CUDA,
  TW_N_DEVICE_KINDS
} tw_device_kind;

typedef struct tw_device tw_device;
typedef struct tw_stream tw_stream;
typedef struct tw_device_event tw_device_event;

#define TW_DEVICE_ERROR (tw_device_error_quark ())
GQuark tw_device_error_quark (void);

typedef enum
{
  TW_DEVICE_ERROR_NOT_FOUND,     /* no such device in this build or on this machine */
  TW_DEVICE_ERROR_OUT_OF_MEMORY,
} tw_device_error_code;

/* The CPU device (always present). */
const tw_device *tw_device_cpu (void);
/* By name: "cpu"; "cuda", "cuda:N".  The error says what is present. */
const tw_device *tw_device_find (const char *name, GError **error);
/* Every device present, NULL-terminated, the CPU first.  Static. */
const tw_device *const *tw_device_list (void);

const char *tw_device_name (const tw_device *dev);        /* "cpu", "cuda:0" */
tw_device_kind tw_device_get_kind (const tw_device *dev);
gboolean tw_device_is_host (const tw_device *dev);        /* its memory is ordinary host memory */

/* Memory: aligned to 64 bytes; NULL when out of memory. */
void *tw_device_alloc (const tw_device *dev, size_t nbytes);
void tw_device_free (const tw_device *dev, void *ptr, size_t nbytes);
/* stream NULL: done when the call returns. */
void tw_device_memset (const tw_device *dev, void *ptr, int value, size_t nbytes, tw_stream *stream);
void tw_device_copy_h2d (const tw_device *dev, void *dst, const void *host_src, size_t nbytes,
                         tw_stream *stream);
void tw_device_copy_d2h (const tw_device *dev, void *host_dst, const void *src, size_t nbytes,
                         tw_stream *stream);
void tw_device_copy_d2d (const tw_device *dev, void *dst, const void *src, size_t nbytes,
                         tw_stream *stream);
/* Wait for everything queued on the device. */
void tw_device_sync (const tw_device *dev);

tw_stream *tw_stream_new (const tw_device *dev);
void tw_stream_free (tw_stream *stream);
void tw_stream_sync (tw_stream *stream);
const tw_device *tw_stream_device (const tw_stream *stream);

tw_device_event *tw_device_event_new (const tw_device *dev);
void tw_device_event_free (tw_device_event *ev);
void tw_device_event_record (tw_device_event *ev, tw_stream *stream);
/* Work queued on stream after this waits for ev. */
void tw_device_event_wait (tw_stream *stream, tw_device_event *ev);
void tw_device_event_sync (tw_device_event *ev);

/* The device's kernel threads (CPU: the OpenMP team; default all cores). */
void tw_device_set_num_threads (const tw_device *dev, int n);
int tw_device_get_num_threads (const tw_device *dev);

/* The CPU device keeps freed blocks of 64 KiB and more for reuse (a training
 * step allocates the same sizes every time; fresh pages cost a fault each).
 * Cached bytes are capped; tw_device_cpu_trim () returns them all. */
void tw_device_cpu_trim (void);
size_t tw_device_cpu_cached_bytes (void);

/* Threads used by CPU kernels and OpenBLAS, process-wide (default: all
 * cores); the same as tw_device_set_num_threads on the CPU device. */
void tw_set_num_threads (int n);
/* The calling thread's own count, over the process-wide one (0: back to
 * that); a session's worker sets it. */
void tw_set_thread_num_threads (int n);
int tw_get_num_threads (void);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_stream, tw_stream_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_device_event, tw_device_event_free)

G_END_DECLS
