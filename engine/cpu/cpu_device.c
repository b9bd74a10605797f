/* cpu_device.c — the CPU backend's device table and thread control. */
#include "engine/device.h"

#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static void *
cpu_alloc (size_t nbytes)
{
  void *p = NULL;
  /* 64 bytes: one cache line and one AVX-512 vector. */
  if (posix_memalign (&p, 64, nbytes ? nbytes : 64) != 0)
    return NULL;
  return p;
}

static void
cpu_free (void *ptr)
{
  free (ptr);
}

static void
cpu_copy (void *dst, const void *src, size_t nbytes)
{
  memcpy (dst, src, nbytes);
}

static void
cpu_sync (void)
{
}

static const tw_device cpu_device = {
  .name = "cpu",
  .kind = TW_DEVICE_CPU,
  .alloc = cpu_alloc,
  .free = cpu_free,
  .copy = cpu_copy,
  .sync = cpu_sync,
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
  openblas_set_num_threads (n);
}

int
tw_get_num_threads (void)
{
  if (num_threads <= 0)
    return omp_get_max_threads ();
  return num_threads;
}
