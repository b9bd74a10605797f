/* number.c — the one rule for numbers a user types (number.h). */
#define G_LOG_DOMAIN "twb-number"

#include "engine/number.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

G_DEFINE_QUARK (tw-number-error-quark, tw_number_error)

static const char *
skip_digits (const char *p)
{
  while (g_ascii_isdigit (*p))
    p++;
  return p;
}

/* [+-]digits, all of text. */
static gboolean
is_whole (const char *text)
{
  const char *p = text + (*text == '+' || *text == '-');
  const char *q = skip_digits (p);
  return q > p && *q == '\0';
}

/* [+-](digits[.digits*] | .digits)([eE][+-]digits), all of text. */
static gboolean
is_decimal (const char *text)
{
  const char *p = text + (*text == '+' || *text == '-');
  const char *q = skip_digits (p);
  gboolean digits = q > p;
  if (*q == '.')
    {
      const char *f = skip_digits (q + 1);
      digits |= f > q + 1;
      q = f;
    }
  if (!digits)
    return FALSE;
  if (*q == 'e' || *q == 'E')
    {
      const char *e = q + 1 + (q[1] == '+' || q[1] == '-');
      q = skip_digits (e);
      if (q == e)
        return FALSE;
    }
  return *q == '\0';
}

char *
tw_number_head (const char *text)
{
  size_t len = strlen (text);
  g_autofree char *head = g_strndup (text, MIN (len, TW_NUMBER_QUOTE_MAX));
  g_autofree char *valid = g_utf8_make_valid (head, -1);
  return len > TW_NUMBER_QUOTE_MAX ? g_strconcat (valid, "…", NULL) : g_steal_pointer (&valid);
}

static void
refuse (GError **error, const char *what, const char *text, const GString *want)
{
  g_autofree char *shown = tw_number_head (text);
  g_set_error (error, TW_NUMBER_ERROR, TW_NUMBER_ERROR_INVALID,
               "%s: '%s' is not valid (expected %s)", what, shown, want->str);
}

void
tw_number_describe_int (GString *s, int64_t min, int64_t max)
{
  g_string_append_printf (s, "a whole number in [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]", min,
                          max);
}

void
tw_number_describe_real (GString *s, const tw_real_range *r)
{
  gboolean lo = isfinite (r->min), hi = isfinite (r->max);
  if (lo && hi)
    g_string_append_printf (s, "a number in %c%.15g, %.15g%c", r->min_open ? '(' : '[', r->min,
                            r->max, r->max_open ? ')' : ']');
  else if (lo)
    g_string_append_printf (s, "a number %s %.15g", r->min_open ? ">" : ">=", r->min);
  else if (hi)
    g_string_append_printf (s, "a number %s %.15g", r->max_open ? "<" : "<=", r->max);
  else
    g_string_append (s, "a finite number");
}

gboolean
tw_number_parse_int (const char *text, int64_t min, int64_t max, const char *what, int64_t *out,
                     GError **error)
{
  gboolean ok = text != NULL && is_whole (text);
  int64_t v = 0;
  if (ok)
    {
      errno = 0;
      v = g_ascii_strtoll (text, NULL, 10);
      ok = errno == 0 && v >= min && v <= max;
    }
  if (!ok)
    {
      g_autoptr (GString) want = g_string_new (NULL);
      tw_number_describe_int (want, min, max);
      refuse (error, what, text ? text : "", want);
      return FALSE;
    }
  *out = v;
  return TRUE;
}

gboolean
tw_number_parse_real (const char *text, const tw_real_range *r, const char *what, double *out,
                      GError **error)
{
  gboolean ok = text != NULL && is_decimal (text);
  double v = 0;
  if (ok)
    {
      v = g_ascii_strtod (text, NULL);
      ok = isfinite (v) && (r->min_open ? v > r->min : v >= r->min) &&
           (r->max_open ? v < r->max : v <= r->max);
    }
  if (!ok)
    {
      g_autoptr (GString) want = g_string_new (NULL);
      tw_number_describe_real (want, r);
      refuse (error, what, text ? text : "", want);
      return FALSE;
    }
  *out = v;
  return TRUE;
}
