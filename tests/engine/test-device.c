/* test-device.c — devices (engine/device.h), the kernel table
 * (engine/kernels.h) and kernels' scratch (tw_scratch), on every device
 * present: the CPU here; a CUDA build adds its devices to tw_device_list and
 * these tests run on them too. */
#include "engine/device.h"
#include "engine/kernels.h"
#include "engine/op.h"
#include "engine/rng.h"

#include <string.h>

/* Memory, memset and the three copies through a stream and an event: bytes
 * come back as they went. */
static void
test_memory_and_copies (void)
{
  const tw_device *const *devs = tw_device_list ();
  g_assert_nonnull (devs[0]);
  g_assert_true (devs[0] == tw_device_cpu ());
  for (int d = 0; devs[d]; d++)
    {
      const tw_device *dev = devs[d];
      const size_t n = 100000;      /* past the CPU's 64 KiB block cache threshold */
      g_autofree guint8 *host = g_malloc (n), *back = g_malloc (n);
      for (size_t i = 0; i < n; i++)
        host[i] = (guint8) (i * 7 + 3);
      guint8 *a = tw_device_alloc (dev, n), *b = tw_device_alloc (dev, n);
      g_assert_nonnull (a);
      g_assert_nonnull (b);
      g_assert_cmpuint ((guintptr) a % 64, ==, 0);
      g_autoptr (tw_stream) s = tw_stream_new (dev);
      g_assert_true (tw_stream_device (s) == dev);
      g_autoptr (tw_device_event) ev = tw_device_event_new (dev);
      tw_device_memset (dev, b, 0xAB, n, s);
      tw_device_copy_h2d (dev, a, host, n, s);
      tw_device_copy_d2d (dev, b, a, n / 2, s);
      tw_device_event_record (ev, s);
      tw_device_event_wait (s, ev);
      tw_device_copy_d2h (dev, back, b, n, s);
      tw_stream_sync (s);
      tw_device_event_sync (ev);
      tw_device_sync (dev);
      g_assert_cmpmem (back, n / 2, host, n / 2);
      for (size_t i = n / 2; i < n; i++)
        g_assert_cmpuint (back[i], ==, 0xAB);
      tw_device_free (dev, a, n);
      tw_device_free (dev, b, n);
      g_assert_cmpint (tw_device_get_num_threads (dev), >=, 1);
    }
}

/* Lookup by name; a name that is not there says what is. */
static void
test_find (void)
{
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_device_find ("cpu", &error) == tw_device_cpu ());
  g_assert_no_error (error);
  g_assert_cmpstr (tw_device_name (tw_device_cpu ()), ==, "cpu");
  g_assert_true (tw_device_is_host (tw_device_cpu ()));
  const tw_device *const *devs = tw_device_list ();
  gboolean have_cuda = FALSE;
  for (int d = 0; devs[d]; d++)
    have_cuda |= tw_device_get_kind (devs[d]) == TW_DEVICE_CUDA;
  if (!have_cuda)
    {
      g_assert_null (tw_device_find ("cuda:0", &error));
      g_assert_error (error, TW_DEVICE_ERROR, TW_DEVICE_ERROR_NOT_FOUND);
      g_assert_nonnull (strstr (error->message, "cuda:0"));
      g_assert_nonnull (strstr (error->message, "devices: cpu"));
      g_clear_error (&error);
    }
  g_assert_null (tw_device_find ("tpu", &error));
  g_assert_error (error, TW_DEVICE_ERROR, TW_DEVICE_ERROR_NOT_FOUND);
}

/* Tensors live on a device and move between devices with the same values. */
static void
test_tensor_devices (void)
{
  const tw_device *const *devs = tw_device_list ();
  g_autoptr (tw_tensor) h = tw_tensor_new (TW_F32, 2, (int64_t[]) { 3, 5 });
  tw_rng_fill_uniform (tw_tensor_f32 (h), 15, 1, 1, -1.0f, 1.0f);
  g_assert_true (tw_tensor_device (h) == tw_device_cpu ());
  for (int d = 0; devs[d]; d++)
    {
      g_autoptr (tw_tensor) t = tw_tensor_to_device (h, devs[d]);
      g_assert_true (tw_tensor_device (t) == devs[d]);
      g_autoptr (tw_tensor) back = tw_tensor_to_host (t);
      g_assert_true (tw_device_is_host (tw_tensor_device (back)));
      g_assert_cmpmem (tw_tensor_data (back), 60, tw_tensor_data (h), 60);
      if (devs[d] == tw_device_cpu ())
        g_assert_true (t == h && back == h);   /* nothing to move: the same tensor */
      g_autoptr (tw_tensor) on = tw_tensor_new_on (devs[d], TW_F64, 1, (int64_t[]) { 7 });
      g_assert_true (tw_tensor_device (on) == devs[d]);
    }
}

/* Every registered op with a forward has its CPU kernel in the table; a
 * kernel registered for another device is found for that device only, and
 * supports () can turn a case away. */
static gboolean
only_f64 (const tw_attrs *a, tw_tensor *const *in, int n_in)
{
  return n_in > 0 && in[0]->dtype == TW_F64;
}

static gboolean
fake_forward (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
              tw_tensor *const *out, GError **error)
{
  return TRUE;
}

static void
test_kernel_table (void)
{
  int n;
  const tw_op_def *const *ops = tw_op_list (&n);
  for (int i = 0; i < n; i++)
    if (ops[i]->forward)
      {
        const tw_kernel *k = tw_kernel_find (ops[i]->name, tw_device_cpu (), NULL, NULL, 0);
        g_assert_nonnull (k);
        g_assert_true (k->forward == ops[i]->forward);
      }
  static const tw_kernel fake_cuda = { .op = "relu", .device = TW_DEVICE_CUDA,
                                       .name = "relu (test)", .supports = only_f64,
                                       .forward = fake_forward };
  tw_kernel_register (&fake_cuda);
  g_assert_true (tw_kernel_find ("relu", tw_device_cpu (), NULL, NULL, 0)->device
                 == TW_DEVICE_CPU);
  const GPtrArray *all = tw_kernels_for ("relu");
  g_assert_cmpuint (all->len, ==, 2);
  g_autoptr (tw_tensor) f32 = tw_tensor_zeros (TW_F32, 1, (int64_t[]) { 4 });
  g_autoptr (tw_tensor) f64 = tw_tensor_zeros (TW_F64, 1, (int64_t[]) { 4 });
  g_assert_false (fake_cuda.supports (NULL, &f32, 1));
  g_assert_true (fake_cuda.supports (NULL, &f64, 1));
  g_assert_null (tw_kernel_find ("no_such_op", tw_device_cpu (), NULL, NULL, 0));
}

/* Scratch: aligned, usable, and after one run of a kernel the workspace
 * serves the same need again without growing. */
static gboolean
scratch_kernel (const tw_kctx *ctx, const tw_attrs *a, tw_tensor *const *in, int n_in,
                tw_tensor *const *out, GError **error)
{
  double *p = tw_scratch (ctx, 1000 * sizeof (double));
  guint8 *q = tw_scratch (NULL, 100000);    /* through the thread's current workspace */
  g_assert_cmpuint ((guintptr) p % 64, ==, 0);
  g_assert_cmpuint ((guintptr) q % 64, ==, 0);
  for (int i = 0; i < 1000; i++)
    p[i] = i;
  memset (q, 1, 100000);
  float s = 0;
  for (int i = 0; i < 1000; i++)
    s += (float) p[i];
  tw_tensor_f32 (out[0])[0] = s + q[99999];
  return TRUE;
}

static void
test_scratch (void)
{
  static const tw_attr_spec no_attrs[] = { { NULL } };
  static const tw_op_def def = { .name = "scratch_test", .category = "Math", .attrs = no_attrs,
                                 .min_inputs = 0, .max_inputs = 0, .n_outputs = 1,
                                 .forward = scratch_kernel, .flags = TW_OP_INTERNAL };
  tw_op_register (&def);
  g_autoptr (tw_workspace) ws = tw_workspace_new (NULL);
  tw_kctx ctx = { .num_threads = 1, .ws = ws };
  g_autoptr (tw_tensor) out = tw_tensor_zeros (TW_F32, 1, (int64_t[]) { 1 });
  g_autoptr (GError) error = NULL;
  for (int run = 0; run < 3; run++)
    {
      g_assert_true (tw_op_forward (&def, &ctx, NULL, NULL, 0, &out, &error));
      g_assert_cmpfloat (tw_tensor_f32 (out)[0], ==, 499500.0f + 1);
    }
  /* It grew once (the first run's overflow merged into one block), never after. */
  g_assert_cmpuint (tw_workspace_growths (ws), ==, 1);
  g_assert_cmpuint (tw_workspace_size (ws), >=, 1000 * sizeof (double) + 100000);
  /* Registered late, the op is listed too. */
  int n;
  const tw_op_def *const *ops = tw_op_list (&n);
  gboolean listed = FALSE;
  for (int i = 0; i < n; i++)
    listed |= ops[i] == &def;
  g_assert_true (listed);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tw_ops_init ();
  g_test_add_func ("/engine/device/memory-and-copies", test_memory_and_copies);
  g_test_add_func ("/engine/device/find", test_find);
  g_test_add_func ("/engine/device/tensors", test_tensor_devices);
  g_test_add_func ("/engine/device/kernel-table", test_kernel_table);
  g_test_add_func ("/engine/device/scratch", test_scratch);
  return g_test_run ();
}
