/* cpu_device.c — the CPU device: memory (with a block cache), trivial
 * streams and events, and thread control. */
#include "engine/device-impl.h"

#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

/* Blocks from 64 KiB up are cached by size (rounded to 4 KiB pages): below
 * that, malloc reuses memory without page faults anyway.  The cap bounds what
 * a run that changes shapes (the last, smaller batch; evaluation) can hold. */
#define CACHE_MIN_BYTES (64u * 1024u)
#define CACHE_ROUND 4096u
#define CACHE_CAP_BYTES ((size_t) 1 << 30)

static GMutex cache_lock;
static GHashTable *cache;          /* rounded size → GSList of blocks */
static size_t cached_bytes;

static size_t
rounded_size (size_t nbytes)
{
  return (nbytes + CACHE_ROUND - 1) / CACHE_ROUND * CACHE_ROUND;
}

static void *
cpu_alloc (const tw_device *dev, size_t nbytes)
{
  void *p = NULL;
  if (nbytes >= CACHE_MIN_BYTES)
    {
      size_t r = rounded_size (nbytes);
      g_mutex_lock (&cache_lock);
      GSList *l = cache ? g_hash_table_lookup (cache, GSIZE_TO_POINTER (r)) : NULL;
      if (l)
        {
          p = l->data;
          g_hash_table_insert (cache, GSIZE_TO_POINTER (r), g_slist_delete_link (l, l));
          cached_bytes -= r;
        }
      g_mutex_unlock (&cache_lock);
      if (p)
        return p;
      nbytes = r;
    }
  /* 64 bytes: one cache line and one AVX-512 vector. */
  if (posix_memalign (&p, 64, nbytes ? nbytes : 64) != 0)
    return NULL;
  return p;
}

static void
cpu_free (const tw_device *dev, void *ptr, size_t nbytes)
{
  if (nbytes >= CACHE_MIN_BYTES)
    {
      size_t r = rounded_size (nbytes);
      g_mutex_lock (&cache_lock);
      if (cached_bytes + r <= CACHE_CAP_BYTES)
        {
          if (cache == NULL)
            cache = g_hash_table_new (g_direct_hash, g_direct_equal);
          GSList *l = g_hash_table_lookup (cache, GSIZE_TO_POINTER (r));
          g_hash_table_insert (cache, GSIZE_TO_POINTER (r), g_slist_prepend (l, ptr));
          cached_bytes += r;
          ptr = NULL;
        }
      g_mutex_unlock (&cache_lock);
    }
  free (ptr);
}

static void
free_list (gpointer key, gpointer value, gpointer user)
{
  g_slist_free_full (value, free);
}

void
tw_device_cpu_trim (void)
{
  g_mutex_lock (&cache_lock);
  if (cache)
    {
      g_hash_table_foreach (cache, free_list, NULL);
      g_hash_table_remove_all (cache);
    }
  cached_bytes = 0;
  g_mutex_unlock (&cache_lock);
}

size_t
tw_device_cpu_cached_bytes (void)
{
  g_mutex_lock (&cache_lock);
  size_t b = cached_bytes;
  g_mutex_unlock (&cache_lock);
  return b;
}

static void
cpu_memset (const tw_device *dev, void *ptr, int value, size_t nbytes, tw_stream *st)
{
  memset (ptr, value, nbytes);
}

static void
cpu_copy (const tw_device *dev, void *dst, const void *src, size_t nbytes, tw_copy_kind kind,
          tw_stream *st)
{
  memcpy (dst, src, nbytes);
}

static void
cpu_sync (const tw_device *dev)
{
}

/* A CPU stream runs its work when it is queued: nothing to keep. */
static gboolean
cpu_stream_init (tw_stream *st)
{
  return TRUE;
}

static void
cpu_stream_nop (tw_stream *st)
{
}

static gboolean
cpu_event_init (tw_device_event *ev)
{
  return TRUE;
}

static void
cpu_event_nop (tw_device_event *ev)
{
}

static void
cpu_event_record (tw_device_event *ev, tw_stream *st)
{
}

static void
cpu_event_wait (tw_stream *st, tw_device_event *ev)
{
}

static void cpu_set_num_threads (const tw_device *dev, int n);
static int cpu_get_num_threads (const tw_device *dev);

static const tw_device_iface cpu_iface = {
  .alloc = cpu_alloc,
  .free = cpu_free,
  .memset = cpu_memset,
  .copy = cpu_copy,
  .sync = cpu_sync,
  .stream_init = cpu_stream_init,
  .stream_clear = cpu_stream_nop,
  .stream_sync = cpu_stream_nop,
  .event_init = cpu_event_init,
  .event_clear = cpu_event_nop,
  .event_record = cpu_event_record,
  .event_wait = cpu_event_wait,
  .event_sync = cpu_event_nop,
  .set_num_threads = cpu_set_num_threads,
  .get_num_threads = cpu_get_num_threads,
};

static const tw_device cpu_device = {
  .name = "cpu",
  .kind = TW_DEVICE_CPU,
  .host_memory = TRUE,
  .iface = &cpu_iface,
};

const tw_device *
tw_device_cpu (void)
{
  return &cpu_device;
}

static int num_threads = 0;

void
tw_set_num_threads (int n)
{
  if (n <= 0)
    n = omp_get_num_procs ();
  num_threads = n;
  omp_set_num_threads (n);
  /* OpenBLAS stays single-threaded: large products are split over our
   * OpenMP team instead (engine/cpu/blas.h says why). */
  openblas_set_num_threads (1);
}

/* A training session's worker sets its own count: two sessions with
 * different counts run side by side. */
static __thread int thread_num_threads = 0;

void
tw_set_thread_num_threads (int n)
{
  thread_num_threads = n > 0 ? n : 0;
  if (n > 0)
    omp_set_num_threads (n);      /* per thread in OpenMP too */
}

static void
cpu_set_num_threads (const tw_device *dev, int n)
{
  tw_set_num_threads (n);
}

static int
cpu_get_num_threads (const tw_device *dev)
{
  return tw_get_num_threads ();
}

int
tw_get_num_threads (void)
{
  if (thread_num_threads > 0)
    return thread_num_threads;
  if (num_threads <= 0)
    return omp_get_max_threads ();
  return num_threads;
}
