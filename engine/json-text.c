/* json-text.c — the one rule for JSON text read (json-text.h). */
#define G_LOG_DOMAIN "twb-json"

#include "engine/json-text.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

G_DEFINE_QUARK (tw-json-error-quark, tw_json_error)

/* Digits of the longest int64 (G_MININT64 without its sign: 19): shorter
 * integers always fit. */
#define INT64_SAFE_DIGITS 18

int
tw_json_line_at (const char *text, gsize offset)
{
  int line = 1;
  for (gsize i = 0; i < offset; i++)
    if (text[i] == '\n')
      line++;
  return line;
}

gboolean
tw_json_text_check (const char *text, gsize len, GError **error)
{
  const char *bad;
  if (len > 0 && !g_utf8_validate_len (text, len, &bad))
    {
      g_set_error (error, TW_JSON_ERROR, TW_JSON_ERROR_INVALID, "line %d: not valid UTF-8 text",
                   tw_json_line_at (text, (gsize) (bad - text)));
      return FALSE;
    }

  gboolean in_string = FALSE, closed = FALSE;
  int depth = 0, line = 1;
  gsize line_start = 0;
  for (gsize i = 0; i < len; i++)
    {
      char c = text[i];
      if (c == '\n')
        {
          line++;
          line_start = i + 1;
        }
      if (closed && !in_string && !g_ascii_isspace (c))
        {
          g_set_error (error, TW_JSON_ERROR, TW_JSON_ERROR_INVALID,
                       "line %d, column %d: content after the end of the top-level value "
                       "(offset %" G_GSIZE_FORMAT ")", line, (int) (i - line_start) + 1, i);
          return FALSE;
        }
      if (in_string)
        {
          if (c == '\\')
            i++;
          else if (c == '"')
            {
              in_string = FALSE;
              closed = closed || depth == 0;
            }
          continue;
        }
      if (c == '"')
        in_string = TRUE;
      else if (c == '[' || c == '{')
        {
          if (++depth > TW_JSON_MAX_DEPTH)
            {
              g_set_error (error, TW_JSON_ERROR, TW_JSON_ERROR_INVALID,
                           "line %d: nested more than %d levels deep", line, TW_JSON_MAX_DEPTH);
              return FALSE;
            }
        }
      else if (c == ']' || c == '}')
        closed = --depth <= 0;
      else if (c == '-' || g_ascii_isdigit (c))
        {
          gsize start = i;
          gboolean is_int = TRUE;
          while (i < len && (g_ascii_isdigit (text[i]) || strchr ("+-.eE", text[i])))
            {
              if (strchr (".eE", text[i]))
                is_int = FALSE;
              i++;
            }
          if (is_int && i - start > INT64_SAFE_DIGITS)
            {
              g_autofree char *num = g_strndup (text + start, i - start);
              char *rest;
              errno = 0;
              g_ascii_strtoll (num, &rest, 10);
              if (errno == ERANGE)
                {
                  g_set_error (error, TW_JSON_ERROR, TW_JSON_ERROR_INVALID,
                               "line %d: integer %s is out of range", line, num);
                  return FALSE;
                }
            }
          i--;
          /* A scalar alone at the top level is a whole value too. */
          closed = closed || depth == 0;
        }
      else if (depth == 0 && !g_ascii_isspace (c))
        {
          /* true, false, null at the top level: skip the word. */
          while (i + 1 < len && g_ascii_isalpha (text[i + 1]))
            i++;
          closed = TRUE;
        }
    }
  return TRUE;
}

/* json-glib says "<data>:3:14: Parse error: unexpected ..."; the text
 * becomes "line 3, column 14: unexpected ...". */
static char *
parser_message (const GError *err)
{
  int line, col, n = 0;
  const char *msg = err->message;
  if (sscanf (msg, "<data>:%d:%d: %n", &line, &col, &n) == 2 && n > 0)
    {
      const char *rest = msg + n;
      if (g_str_has_prefix (rest, "Parse error: "))
        rest += strlen ("Parse error: ");
      return g_strdup_printf ("line %d, column %d: %s", line, col, rest);
    }
  return g_strdup (msg);
}

JsonParser *
tw_json_parse (const char *text, gsize len, const char *display, GError **error)
{
  g_autoptr (GError) local = NULL;
  if (!tw_json_text_check (text, len, &local))
    {
      g_set_error (error, TW_JSON_ERROR, TW_JSON_ERROR_INVALID, "%s: %s", display, local->message);
      return NULL;
    }
  g_autoptr (JsonParser) parser = json_parser_new_immutable ();
  if (!json_parser_load_from_data (parser, len > 0 ? text : "", (gssize) len, &local))
    {
      g_autofree char *msg = parser_message (local);
      g_set_error (error, TW_JSON_ERROR, TW_JSON_ERROR_INVALID, "%s: %s", display, msg);
      return NULL;
    }
  return g_steal_pointer (&parser);
}
