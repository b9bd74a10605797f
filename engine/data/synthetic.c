/* synthetic.c — 2-D toy classification sets (spirals, circles, xor, blobs).
 *
 * Point i is a pure function of (seed, stream, i): one Philox block gives two
 * uniforms that place it and two more that Box–Muller turns into the noise,
 * so the same seed always gives the same points. */
#define G_LOG_DOMAIN "twb-data"

#include "engine/data/data-private.h"
#include "engine/rng.h"

#include <math.h>
#include <string.h>

#define DEFAULT_TRAIN_POINTS 2000
#define DEFAULT_TEST_POINTS 1000

/* Philox streams ("synth" in ASCII, then the split), so a seed's test points
 * differ from its training points. */
#define STREAM_TRAIN G_GUINT64_CONSTANT (0x73796e7468000001)
#define STREAM_TEST G_GUINT64_CONSTANT (0x73796e7468000002)

typedef void (*place_func) (int64_t i, double u0, double u1, double *x, double *y, int64_t *c);

/* Two arms of 1.75 turns from the centre out to radius 1, the second arm
 * turned by half a turn.  Neighbouring arms lie about 0.29 apart. */
static void
place_spirals (int64_t i, double u0, double u1, double *x, double *y, int64_t *c)
{
  *c = i % 2;
  double r = u0;
  double theta = 1.75 * 2 * G_PI * u0 + (double) *c * G_PI;
  *x = r * cos (theta);
  *y = r * sin (theta);
}

/* An outer ring of radius 1 (class 0) around an inner one of radius 0.5. */
static void
place_circles (int64_t i, double u0, double u1, double *x, double *y, int64_t *c)
{
  *c = i % 2;
  double r = *c == 0 ? 1.0 : 0.5;
  *x = r * cos (2 * G_PI * u0);
  *y = r * sin (2 * G_PI * u0);
}

/* Quadrant i mod 4; the class is whether x and y have different signs.
 * Points keep 0.1 away from the axes so the noiseless set is separable. */
static void
place_xor (int64_t i, double u0, double u1, double *x, double *y, int64_t *c)
{
  int q = (int) (i % 4);
  double sx = (q & 1) ? -1.0 : 1.0, sy = (q & 2) ? -1.0 : 1.0;
  *c = (q & 1) ^ ((q >> 1) & 1);
  *x = sx * (0.1 + 0.9 * u0);
  *y = sy * (0.1 + 0.9 * u1);
}

/* Three centres on the unit circle, 120° apart; the noise spreads them. */
static void
place_blobs (int64_t i, double u0, double u1, double *x, double *y, int64_t *c)
{
  *c = i % 3;
  double angle = G_PI / 2 + (double) *c * 2 * G_PI / 3;
  *x = cos (angle);
  *y = sin (angle);
}

static const struct
{
  const char *kind;
  place_func place;
  int n_classes;
  /* Default standard deviation: a quarter to a sixth of the narrowest gap
   * between classes (spirals 0.29, circles 0.5, xor 0.2, blobs 1.73), so the
   * classes touch a little but stay learnable. */
  double noise;
} kinds[] = {
  { "spirals", place_spirals, 2, 0.05 },
  { "circles", place_circles, 2, 0.1 },
  { "xor", place_xor, 2, 0.05 },
  { "blobs", place_blobs, 3, 0.3 },
};

tw_dataset *
tw_dataset_synthetic_for_split (const char *kind, tw_split split, int64_t n, guint64 seed,
                                double noise, GError **error)
{
  g_return_val_if_fail (n >= 0, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  guint k;
  for (k = 0; k < G_N_ELEMENTS (kinds); k++)
    if (g_strcmp0 (kind, kinds[k].kind) == 0)
      break;
  if (k == G_N_ELEMENTS (kinds))
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_UNKNOWN,
                   "unknown synthetic dataset “%s”: expected spirals, circles, xor or blobs",
                   kind ? kind : "(null)");
      return NULL;
    }
  if (n == 0)
    n = split == TW_SPLIT_TEST ? DEFAULT_TEST_POINTS : DEFAULT_TRAIN_POINTS;
  if (noise < 0)
    noise = kinds[k].noise;
  guint64 stream = split == TW_SPLIT_TEST ? STREAM_TEST : STREAM_TRAIN;

  g_autoptr (tw_tensor) x = tw_tensor_new (TW_F32, 2, (int64_t[]) { n, 2 });
  g_autoptr (tw_tensor) y = tw_tensor_new (TW_I64, 1, (int64_t[]) { n });
  float *px = tw_tensor_f32 (x);
  int64_t *py = tw_tensor_i64 (y);
  /* 2^-24: 24-bit uniforms, as tw_rng_uniform makes them. */
  const double ulp = 1.0 / 16777216.0;
  for (int64_t i = 0; i < n; i++)
    {
      uint32_t r[4];
      tw_philox4x32 (seed, stream, (uint64_t) i, r);
      double u0 = (r[0] >> 8) * ulp, u1 = (r[1] >> 8) * ulp;
      /* Box–Muller; the first uniform in (0, 1] so the log is finite. */
      double b0 = ((r[2] >> 8) + 1.0) * ulp, b1 = (r[3] >> 8) * ulp;
      double rad = sqrt (-2.0 * log (b0));
      double a, b;
      kinds[k].place (i, u0, u1, &a, &b, &py[i]);
      px[2 * i] = (float) (a + noise * rad * cos (2 * G_PI * b1));
      px[2 * i + 1] = (float) (b + noise * rad * sin (2 * G_PI * b1));
    }
  return tw_dataset_new (kind, x, y, kinds[k].n_classes);
}

tw_dataset *
tw_dataset_synthetic (const char *kind, int64_t n, guint64 seed, double noise, GError **error)
{
  return tw_dataset_synthetic_for_split (kind, TW_SPLIT_TRAIN, n, seed, noise, error);
}
