/* onnx-import-attrs.c — the importer's reads of a node's attributes: typed,
 * with ONNX's defaults, every unknown or mistyped attribute reported as a
 * problem of the node (see onnx-import-private.h). */
#define G_LOG_DOMAIN "tw-onnx"

#include "onnx/onnx-import-private.h"

#include <string.h>

/* Report every attribute of the node not in known (NULL-terminated). */
void
tw_imp_check_attrs (tw_imp *im, const char *const *known)
{
  for (gsize i = 0; i < im->n->n_attribute; i++)
    {
      const char *name = im->n->attribute[i]->name ? im->n->attribute[i]->name : "";
      gboolean ok = FALSE;
      for (int k = 0; known && known[k]; k++)
        ok |= strcmp (known[k], name) == 0;
      if (!ok)
        tw_imp_problem (im, "attribute '%s' is not supported", name);
    }
}

int64_t
tw_imp_attr_int (tw_imp *im, const char *name, int64_t def)
{
  int64_t v = def;
  g_autoptr (GError) error = NULL;
  if (!tw_onnx_attr_int (im->n, name, def, &v, &error))
    tw_imp_problem (im, "%s", error->message);
  return v;
}

/* A float attribute as the shortest decimal that reads back as the same
 * float (1e-5f → 1e-05, not 9.999999747378752e-06), for the model file. */
double
tw_imp_short_double (float f)
{
  char buf[32];
  for (int digits = 6; digits < 9; digits++)
    {
      g_snprintf (buf, sizeof buf, "%.*g", digits, f);
      if ((float) g_ascii_strtod (buf, NULL) == f)
        return g_ascii_strtod (buf, NULL);
    }
  return f;
}

float
tw_imp_attr_float (tw_imp *im, const char *name, float def)
{
  float v = def;
  g_autoptr (GError) error = NULL;
  if (!tw_onnx_attr_float (im->n, name, def, &v, &error))
    tw_imp_problem (im, "%s", error->message);
  return v;
}

/* ints of exactly want entries (want 0: any), or def (filled with d) when absent. */
gboolean
tw_imp_attr_ints (tw_imp *im, const char *name, gsize want, int64_t d, int64_t *out, gsize *len)
{
  g_autofree int64_t *v = NULL;
  gsize n = 0;
  g_autoptr (GError) error = NULL;
  if (!tw_onnx_attr_ints (im->n, name, &v, &n, &error))
    {
      tw_imp_problem (im, "%s", error->message);
      return FALSE;
    }
  if (v == NULL)
    {
      for (gsize i = 0; i < want; i++)
        out[i] = d;
      if (len)
        *len = want;
      return TRUE;
    }
  if ((want && n != want) || n > TW_MAX_DIMS * 2)
    {
      tw_imp_problem (im, "attribute '%s' has %" G_GSIZE_FORMAT " entries, twb takes %" G_GSIZE_FORMAT,
               name, n, want);
      return FALSE;
    }
  memcpy (out, v, n * sizeof *v);
  if (len)
    *len = n;
  return TRUE;
}

/* A string attribute's value (bytes, not NUL-terminated in protobuf-c)
 * for messages; caller frees. */
char *
tw_imp_attr_string_dup (tw_imp *im, const char *name)
{
  const Onnx__AttributeProto *a = tw_onnx_attr (im->n, name);
  if (a == NULL || a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING)
    return g_strdup ("?");
  g_autofree char *raw = g_strndup ((const char *) a->s.data, a->s.len);
  return g_utf8_make_valid (raw, -1);
}

gboolean
tw_imp_attr_string_is (tw_imp *im, const char *name, const char *want)
{
  const Onnx__AttributeProto *a = tw_onnx_attr (im->n, name);
  if (a == NULL)
    return TRUE;
  if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING)
    return FALSE;
  return a->s.len == strlen (want) && memcmp (a->s.data, want, a->s.len) == 0;
}
