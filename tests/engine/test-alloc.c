/* test-alloc.c — a compiled training step allocates nothing.
 *
 * This program defines malloc and its relatives itself (forwarding to
 * glibc's), so every allocation in the process — the engine's, GLib's,
 * OpenBLAS's, libgomp's — is counted while the calling thread has counting
 * switched on.  After warm-up steps (first use creates the program, its
 * arena, the kernels' workspace, OpenMP's team and the optimizer state), a
 * step of the compiled executor must allocate nothing: kernels take scratch
 * from the executor's workspace (tw_scratch) and every value lives in the
 * arena.
 *
 * Under AddressSanitizer (which replaces malloc itself) the counting is
 * skipped. */
#define _GNU_SOURCE
#include "engine/data.h"
#include "opcheck.h"
#include "engine/device.h"
#include "engine/rng.h"
#include "engine/train.h"

#include <dlfcn.h>
#include <link.h>
#include <malloc.h>
#include <omp.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define COUNTING 0
#else
#define COUNTING 1
#endif

#if COUNTING
extern void *__libc_malloc (size_t);
extern void *__libc_calloc (size_t, size_t);
extern void *__libc_realloc (void *, size_t);
extern void *__libc_memalign (size_t, size_t);
extern void __libc_free (void *);

static __thread int counting;
static __thread guint64 allocations, runtime_allocations;

/* libgomp allocates a team structure for every OpenMP region that runs on
 * one thread (it caches teams of two or more); the engine's kernels open no
 * region when they would run alone (engine/cpu/parallel.h), so those count
 * too, apart, to say where an allocation came from.
 *
 * OpenBLAS's own small-matrix kernels (the SkylakeX and Cooperlake builds of
 * sgemm_small_kernel_*, chosen on AVX-512 CPUs) malloc a packing buffer on
 * every call: that is OpenBLAS's code, not ours, and on those CPUs the GEMM
 * choice may rightly pick OpenBLAS for a small product.  They are counted
 * apart and reported; the engine's, GLib's and libgomp's must be zero. */
typedef struct
{
  const char *name;
  void *base, *end;
} code_range;

static code_range libgomp = { "libgomp" }, libopenblas = { "libopenblas" };
static __thread guint64 blas_allocations;

static inline gboolean
in_range (const code_range *r, void *caller)
{
  return caller >= r->base && caller < r->end;
}

static inline void
count (void *caller)
{
  if (!counting)
    return;
  if (in_range (&libgomp, caller))
    runtime_allocations++;
  else if (in_range (&libopenblas, caller))
    blas_allocations++;
  else
    allocations++;
}

void *
malloc (size_t n)
{
  count (__builtin_return_address (0));
  return __libc_malloc (n);
}

void *
calloc (size_t a, size_t b)
{
  count (__builtin_return_address (0));
  return __libc_calloc (a, b);
}

void *
realloc (void *p, size_t n)
{
  count (__builtin_return_address (0));
  return __libc_realloc (p, n);
}

void
free (void *p)
{
  __libc_free (p);
}

int
posix_memalign (void **out, size_t align, size_t n)
{
  count (__builtin_return_address (0));
  void *p = __libc_memalign (align, n);
  if (p == NULL)
    return 12; /* ENOMEM */
  *out = p;
  return 0;
}

void *
aligned_alloc (size_t align, size_t n)
{
  count (__builtin_return_address (0));
  return __libc_memalign (align, n);
}

void *
memalign (size_t align, size_t n)
{
  count (__builtin_return_address (0));
  return __libc_memalign (align, n);
}
/* Where a library's code is mapped (its executable segments). */
static int
find_library (struct dl_phdr_info *info, size_t size, void *data)
{
  code_range *r = data;
  if (info->dlpi_name == NULL || strstr (info->dlpi_name, r->name) == NULL)
    return 0;
  for (int i = 0; i < info->dlpi_phnum; i++)
    {
      const ElfW (Phdr) *ph = &info->dlpi_phdr[i];
      if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
        continue;
      guint8 *lo = (guint8 *) (info->dlpi_addr + ph->p_vaddr);
      if (r->base == NULL || (void *) lo < r->base)
        r->base = lo;
      if ((void *) (lo + ph->p_memsz) > r->end)
        r->end = lo + ph->p_memsz;
    }
  return 1;
}
#endif

/* Convolutions (grouped too), batch norm, both poolings, layer norm, gelu,
 * dropout: every kernel that needs scratch. */
static tw_model *
make_model (void)
{
  tw_model *m = tw_model_new ("alloc-test");
  tw_graph *g = m->graph;
  tw_attrs *c1 = twt_attrs_int ("out_channels", 8), *c2 = twt_attrs_int ("out_channels", 8);
  tw_attrs_set_ints (c1, "kernel_size", 1, (int64_t[]) { 3 });
  tw_attrs_set_ints (c1, "padding", 1, (int64_t[]) { 1 });
  tw_attrs_set_ints (c2, "kernel_size", 1, (int64_t[]) { 3 });
  tw_attrs_set_ints (c2, "padding", 1, (int64_t[]) { 1 });
  tw_attrs_set_int (c2, "groups", 2);
  tw_attrs *pool = tw_attrs_new ();
  tw_attrs_set_ints (pool, "kernel_size", 1, (int64_t[]) { 2 });
  tw_attrs *h = twt_attrs_int ("out_features", 32), *o = twt_attrs_int ("out_features", 4);
  tw_attrs *drop = tw_attrs_new ();
  tw_attrs_set_float (drop, "p", 0.1);
  tw_graph_add_input (g, "x", TW_F32, 3, (int64_t[]) { 3, 12, 12 }, "data");
  tw_graph_add_input (g, "y", TW_I64, 0, NULL, "label");
  tw_graph_add (g, "conv1", "conv2d", c1, "x", NULL);
  tw_graph_add (g, "bn1", "batch_norm", NULL, "conv1", NULL);
  tw_graph_add (g, "r1", "relu", NULL, "bn1", NULL);
  tw_graph_add (g, "p1", "max_pool2d", pool, "r1", NULL);
  tw_graph_add (g, "conv2", "conv2d", c2, "p1", NULL);
  tw_graph_add (g, "p2", "avg_pool2d", pool, "conv2", NULL);
  tw_graph_add (g, "flat", "flatten", NULL, "p2", NULL);
  tw_graph_add (g, "fc1", "linear", h, "flat", NULL);
  tw_graph_add (g, "ln", "layer_norm", NULL, "fc1", NULL);
  tw_graph_add (g, "act", "gelu", NULL, "ln", NULL);
  tw_graph_add (g, "drop", "dropout", drop, "act", NULL);
  tw_graph_add (g, "fc2", "linear", o, "drop", NULL);
  tw_graph_add (g, "loss", "cross_entropy", NULL, "fc2", "y", NULL);
  tw_graph_set_outputs (g, (const char *[]) { "fc2", NULL });
  tw_attrs_free (c1);
  tw_attrs_free (c2);
  tw_attrs_free (pool);
  tw_attrs_free (h);
  tw_attrs_free (o);
  tw_attrs_free (drop);
  m->recipe.optimizer.type = TW_OPT_ADAM;
  m->recipe.optimizer.lr = 1e-3;
  return m;
}

static void
check_no_alloc (tw_model *m, int threads)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_trainer) tr = tw_trainer_new (m, &error);
  g_assert_no_error (error);
  tw_trainer_set_mode (tr, TW_MODE_COMPILED);
  tw_trainer_set_num_threads (tr, threads);
  tw_set_num_threads (threads);
  const int64_t b = 64;   /* conv and norm outputs past the kernels' thresholds: 2 threads do split them */
  g_autoptr (tw_tensor) x = tw_tensor_new (TW_F32, 4, (int64_t[]) { b, 3, 12, 12 });
  tw_rng_fill_uniform (tw_tensor_f32 (x), tw_tensor_numel (x), 3, 1, -1.0f, 1.0f);
  g_autoptr (tw_tensor) y = tw_tensor_new (TW_I64, 1, (int64_t[]) { b });
  for (int64_t i = 0; i < b; i++)
    tw_tensor_i64 (y)[i] = i % 4;
  for (int i = 0; i < 3; i++)
    g_assert_true (tw_trainer_step (tr, x, y, NULL, &error));
  const tw_workspace *ws = tw_compiled_workspace (tw_trainer_compiled (tr));
  guint growths = tw_workspace_growths (ws);
  g_assert_cmpuint (tw_workspace_size (ws), >, 0);   /* conv im2col, norms: scratch was used */
#if COUNTING
  allocations = runtime_allocations = blas_allocations = 0;
  counting = 1;
#endif
  for (int i = 0; i < 4; i++)
    g_assert_true (tw_trainer_step (tr, x, y, NULL, &error));
#if COUNTING
  counting = 0;
  g_test_message ("%d thread(s): %" G_GUINT64_FORMAT " allocations in 4 compiled steps "
                  "(and %" G_GUINT64_FORMAT " by libgomp, %" G_GUINT64_FORMAT
                  " inside OpenBLAS's own kernels); kernel workspace %zu bytes",
                  threads, allocations, runtime_allocations, blas_allocations,
                  tw_workspace_size (ws));
  g_assert_cmpuint (allocations, ==, 0);
  g_assert_cmpuint (runtime_allocations, ==, 0);
#endif
  g_assert_cmpuint (tw_workspace_growths (ws), ==, growths);
}

static void
test_compiled_step_allocates_nothing (void)
{
#if !COUNTING
  g_test_skip ("AddressSanitizer replaces malloc: allocations are not counted");
#endif
  g_autoptr (tw_model) m = make_model ();
  check_no_alloc (m, 1);
  check_no_alloc (m, 2);
}

/* Kernels take scratch, not memory of their own: an eager step's allocations
 * are its tensors, and its workspace stops growing after the first step. */
static void
test_counting_works (void)
{
#if !COUNTING
  g_test_skip ("AddressSanitizer replaces malloc: allocations are not counted");
#else
  counting = 1;
  allocations = 0;
  void *p = g_malloc (100);
  g_free (p);
  tw_tensor *t = tw_tensor_new (TW_F32, 1, (int64_t[]) { 1000 });
  tw_tensor_unref (t);
  counting = 0;
  /* The counter sees GLib's allocations and the device's. */
  g_assert_cmpuint (allocations, >=, 3);
#endif
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  tw_set_num_threads (1);
#if COUNTING
  dl_iterate_phdr (find_library, &libgomp);
  dl_iterate_phdr (find_library, &libopenblas);
  g_assert_nonnull (libgomp.base);
  g_assert_nonnull (libopenblas.base);
#endif
  g_test_add_func ("/engine/alloc/counting", test_counting_works);
  g_test_add_func ("/engine/alloc/compiled-step", test_compiled_step_allocates_nothing);
  return g_test_run ();
}
