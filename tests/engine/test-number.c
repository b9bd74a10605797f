/* test-number.c — the one rule for numbers a user types (engine/number.h):
 * a number is all of its token and within its range, or an error naming what
 * it was for and quoting the token. */
#include "engine/number.h"

#include <math.h>
#include <string.h>

static void
test_int (void)
{
  static const struct
  {
    const char *text;
    int64_t min, max;
    gboolean ok;
    int64_t value;
  } cases[] = {
    { "64", 1, G_MAXINT32, TRUE, 64 },
    { "+7", 1, 10, TRUE, 7 },
    { "-3", -5, 5, TRUE, -3 },
    { "007", 0, 10, TRUE, 7 },
    { "9223372036854775807", 1, G_MAXINT64, TRUE, G_MAXINT64 },
    { "-9223372036854775808", G_MININT64, 0, TRUE, G_MININT64 },
    { "99999999999999999999", 1, G_MAXINT64, FALSE, 0 }, /* past int64: never wrapped */
    { "9223372036854775808", 1, G_MAXINT64, FALSE, 0 },
    { "-9223372036854775809", G_MININT64, 0, FALSE, 0 },
    { "2147483648", 1, G_MAXINT32, FALSE, 0 }, /* past the range */
    { "0", 1, 10, FALSE, 0 },
    { "64k", 1, G_MAXINT32, FALSE, 0 },
    { "1e3", 1, G_MAXINT32, FALSE, 0 },
    { "2.5", 1, 10, FALSE, 0 },
    { "2.", 1, 10, FALSE, 0 },
    { " 5", 1, 10, FALSE, 0 },
    { "5 ", 1, 10, FALSE, 0 },
    { "0x10", 1, 100, FALSE, 0 },
    { "", 0, 10, FALSE, 0 },
    { "-", -5, 5, FALSE, 0 },
    { "+", 0, 5, FALSE, 0 },
    { "--1", -5, 5, FALSE, 0 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr (GError) error = NULL;
      int64_t v = -12345;
      gboolean ok =
        tw_number_parse_int (cases[i].text, cases[i].min, cases[i].max, "--n", &v, &error);
      g_test_message ("'%s': %s", cases[i].text, ok ? "taken" : error->message);
      g_assert_cmpint (ok, ==, cases[i].ok);
      if (ok)
        {
          g_assert_no_error (error);
          g_assert_cmpint (v, ==, cases[i].value);
        }
      else
        {
          g_assert_error (error, TW_NUMBER_ERROR, TW_NUMBER_ERROR_INVALID);
          g_assert_cmpint (v, ==, -12345); /* untouched */
          g_autofree char *want =
            g_strdup_printf ("--n: '%s' is not valid (expected a whole "
                             "number in [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "])",
                             cases[i].text, cases[i].min, cases[i].max);
          g_assert_cmpstr (error->message, ==, want);
        }
    }
}

static void
test_real (void)
{
  static const tw_real_range positive = { 0, INFINITY, TRUE, FALSE };
  static const tw_real_range fraction = { 0, 1, FALSE, TRUE };
  static const tw_real_range any = { -INFINITY, INFINITY, FALSE, FALSE };
  static const struct
  {
    const char *text;
    const tw_real_range *range;
    gboolean ok;
    double value;
    const char *expected;
  } cases[] = {
    { "0.01", &positive, TRUE, 0.01, NULL },
    { "1e-3", &positive, TRUE, 1e-3, NULL },
    { "5", &positive, TRUE, 5, NULL },
    { ".5", &fraction, TRUE, 0.5, NULL },
    { "0", &fraction, TRUE, 0, NULL },
    { "-2.5E+2", &any, TRUE, -250, NULL },
    { "5abc", &positive, FALSE, 0, "a number > 0" },
    { "0", &positive, FALSE, 0, "a number > 0" },
    { "1", &fraction, FALSE, 0, "a number in [0, 1)" },
    { "inf", &any, FALSE, 0, "a finite number" },
    { "nan", &any, FALSE, 0, "a finite number" },
    { "1e999", &any, FALSE, 0, "a finite number" },
    { "0x1p3", &any, FALSE, 0, "a finite number" },
    { "1e", &any, FALSE, 0, "a finite number" },
    { ".", &any, FALSE, 0, "a finite number" },
    { " 1", &any, FALSE, 0, "a finite number" },
    { "1 ", &any, FALSE, 0, "a finite number" },
    { "", &any, FALSE, 0, "a finite number" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr (GError) error = NULL;
      double v = -12345;
      gboolean ok = tw_number_parse_real (cases[i].text, cases[i].range, "lr", &v, &error);
      g_test_message ("'%s': %s", cases[i].text, ok ? "taken" : error->message);
      g_assert_cmpint (ok, ==, cases[i].ok);
      if (ok)
        g_assert_cmpfloat (v, ==, cases[i].value);
      else
        {
          g_assert_cmpfloat (v, ==, -12345);
          g_autofree char *want = g_strdup_printf ("lr: '%s' is not valid (expected %s)",
                                                   cases[i].text, cases[i].expected);
          g_assert_cmpstr (error->message, ==, want);
        }
    }
}

/* A token of a megabyte is refused with its head quoted, not all of it. */
static void
test_long_token (void)
{
  g_autofree char *text = g_strnfill (1 << 20, '7');
  g_autoptr (GError) error = NULL;
  int64_t v;
  g_assert_false (tw_number_parse_int (text, 1, 10, "step=N", &v, &error));
  g_assert_cmpuint (strlen (error->message), <, 200);
  g_autofree char *head = g_strnfill (TW_NUMBER_QUOTE_MAX, '7');
  g_autofree char *want = g_strdup_printf ("step=N: '%s…' is not valid", head);
  g_assert_true (g_str_has_prefix (error->message, want));
  /* A cut inside a UTF-8 sequence still gives valid UTF-8. */
  g_autofree char *wide = g_strdup_printf ("%.*s%s", TW_NUMBER_QUOTE_MAX - 1, head, "éé");
  g_autofree char *shown = tw_number_head (wide);
  g_assert_true (g_utf8_validate (shown, -1, NULL));
  g_assert_true (g_str_has_suffix (shown, "…"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/number/int", test_int);
  g_test_add_func ("/engine/number/real", test_real);
  g_test_add_func ("/engine/number/long-token", test_long_token);
  return g_test_run ();
}
