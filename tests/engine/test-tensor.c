/* test-tensor.c — tensor storage, views, broadcasting, copies, RNG. */
#include "engine/rng.h"
#include "engine/tensor.h"

#include <math.h>

static void
test_views (void)
{
  g_autoptr (tw_tensor) x = tw_tensor_new (TW_F32, 2, (int64_t[]) { 3, 4 });
  for (int i = 0; i < 12; i++)
    tw_tensor_f32 (x)[i] = (float) i;
  g_autoptr (tw_tensor) t = tw_tensor_transpose (x, 0, 1);
  g_assert_false (tw_tensor_is_contiguous (t));
  g_assert_cmpint (t->shape[0], ==, 4);
  /* t[1][2] == x[2][1] == 9 */
  g_assert_cmpfloat (tw_tensor_get_flat (t, 1 * 3 + 2), ==, 9.0);
  g_autoptr (tw_tensor) c = tw_tensor_contiguous (t);
  g_assert_true (tw_tensor_is_contiguous (c));
  g_assert_cmpfloat (tw_tensor_f32 (c)[1 * 3 + 2], ==, 9.0f);

  g_autoptr (tw_tensor) s = tw_tensor_slice (x, 1, 1, 4, 2);   /* columns 1 and 3 */
  g_assert_cmpint (s->shape[1], ==, 2);
  g_assert_cmpfloat (tw_tensor_get_flat (s, 3), ==, 7.0);      /* x[1][3] */

  g_autoptr (tw_tensor) r = tw_tensor_reshape (x, 3, (int64_t[]) { 2, -1, 2 });
  g_assert_cmpint (r->shape[1], ==, 3);
  g_assert_true (r->storage == x->storage);
}

static void
test_broadcast (void)
{
  int n;
  int64_t out[TW_MAX_DIMS];
  g_assert_true (tw_broadcast_shapes (2, (int64_t[]) { 5, 1 }, 3, (int64_t[]) { 2, 1, 4 }, &n, out));
  g_assert_cmpint (n, ==, 3);
  g_assert_cmpint (out[0], ==, 2);
  g_assert_cmpint (out[1], ==, 5);
  g_assert_cmpint (out[2], ==, 4);
  g_assert_false (tw_broadcast_shapes (1, (int64_t[]) { 3 }, 1, (int64_t[]) { 4 }, &n, out));

  g_autoptr (tw_tensor) b = tw_tensor_from_data (TW_F32, 1, (int64_t[]) { 3 }, (float[]) { 1, 2, 3 });
  g_autoptr (tw_tensor) d = tw_tensor_new (TW_F64, 2, (int64_t[]) { 2, 3 });
  g_assert_true (tw_tensor_copy_into (d, b));
  g_assert_cmpfloat (tw_tensor_f64 (d)[5], ==, 3.0);
  g_autoptr (tw_tensor) bad = tw_tensor_new (TW_F32, 1, (int64_t[]) { 4 });
  g_assert_false (tw_tensor_copy_into (bad, b));
}

static void
test_rng (void)
{
  /* Philox4x32-10 known-answer test from the Random123 distribution (kat_vectors):
   * counter {0,0,0,0}, key {0,0} → 6627e8d5 e169c58d bc57ac4c 9b00dbd8. */
  uint32_t r[4];
  tw_philox4x32 (0, 0, 0, r);
  g_assert_cmphex (r[0], ==, 0x6627e8d5);
  g_assert_cmphex (r[1], ==, 0xe169c58d);
  g_assert_cmphex (r[2], ==, 0xbc57ac4c);
  g_assert_cmphex (r[3], ==, 0x9b00dbd8);

  float a[1000];
  tw_rng_fill_normal (a, 1000, 42, 7, 0, 1);
  double m = 0, v = 0;
  for (int i = 0; i < 1000; i++)
    m += a[i];
  m /= 1000;
  for (int i = 0; i < 1000; i++)
    v += (a[i] - m) * (a[i] - m);
  v /= 999;
  /* 1000 samples: the standard error of the mean is 0.032, of the variance ~0.045. */
  g_assert_cmpfloat (fabs (m), <, 0.15);
  g_assert_cmpfloat (fabs (v - 1), <, 0.2);

  int64_t p[100];
  tw_rng_permutation (p, 100, 1, 2);
  gboolean seen[100] = { 0 };
  for (int i = 0; i < 100; i++)
    seen[p[i]] = TRUE;
  for (int i = 0; i < 100; i++)
    g_assert_true (seen[i]);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/tensor/views", test_views);
  g_test_add_func ("/engine/tensor/broadcast", test_broadcast);
  g_test_add_func ("/engine/rng/philox", test_rng);
  return g_test_run ();
}
