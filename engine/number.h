/* number.h — the one rule for numbers a user types: command-line options,
 * breakpoint specs (--break-on, the prompt's b), the debugger prompt's
 * arguments.
 *
 * A number is all of its token, or an error naming what it was for:
 *
 *   int64_t batch;
 *   if (!tw_number_parse_int (text, 1, TW_MAX_BATCH, "--batch", &batch, error))
 *     return FALSE;   // "--batch: '64k' is not valid (expected a whole number in [1, 2147483647])"
 *
 * Whole numbers are [+-]digits: "64", "-1"; never "64k", "1e3", "2.5",
 * " 64", "0x40" or a value past int64 ("99999999999999999999" is refused,
 * never wrapped or saturated).  Real numbers are decimal ([+-] digits with an
 * optional fraction and exponent: "0.01", "1e-3", ".5") and finite; never
 * "inf", "nan", hexadecimal floats, trailing text ("5abc") or blanks.  Both
 * check their range before anything uses the value.
 *
 * Errors are TW_NUMBER_ERROR; the message starts with `what` and quotes the
 * token (its first TW_NUMBER_QUOTE_MAX bytes and "…" when longer). */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

#define TW_NUMBER_ERROR (tw_number_error_quark ())
GQuark tw_number_error_quark (void);

typedef enum
{
  TW_NUMBER_ERROR_INVALID, /* not a number of the kind asked for, or out of range */
} tw_number_error;

/* Bytes of a refused token quoted in the message: enough for any number
 * worth reading, short enough for a one-line message whatever was typed. */
#define TW_NUMBER_QUOTE_MAX 40

/* The largest batch size anywhere (--batch, the recipe's batch_size,
 * export's --batch): OpenBLAS as Debian builds it (LP64) takes int matrix
 * dims, and the batch is the M of every linear layer's product. */
#define TW_MAX_BATCH G_MAXINT32

/* A whole number in [min, max]. */
gboolean tw_number_parse_int (const char *text, int64_t min, int64_t max, const char *what,
                              int64_t *out, GError **error);

/* The bounds of a real number: [min, max], with min_open / max_open making
 * that end exclusive; an infinite bound is no bound. */
typedef struct
{
  double min, max;
  gboolean min_open, max_open;
} tw_real_range;

/* A finite real number within range. */
gboolean tw_number_parse_real (const char *text, const tw_real_range *range, const char *what,
                               double *out, GError **error);

/* text as a message quotes what a user typed: its first TW_NUMBER_QUOTE_MAX
 * bytes, valid UTF-8, and "…" when it was longer.  The caller frees it. */
char *tw_number_head (const char *text);

/* What a range accepts, as the messages say it: "a whole number in [1, 10]",
 * "a number > 0", "a number in [0, 1)".  Appended to s. */
void tw_number_describe_int (GString *s, int64_t min, int64_t max);
void tw_number_describe_real (GString *s, const tw_real_range *range);

G_END_DECLS
