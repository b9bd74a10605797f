/* attrs.c — typed attribute bags and their JSON form. */
#define G_LOG_DOMAIN "twb-attrs"

#include "engine/attrs.h"
#include "engine/json-text.h"
#include "engine/op.h"

#include <string.h>

typedef struct
{
  char *name;
  tw_attr_value v;
} attr_entry;

struct tw_attrs
{
  GArray *entries;   /* of attr_entry, in insertion order */
};

const char *
tw_attr_type_name (tw_attr_type type)
{
  switch (type)
    {
    case TW_ATTR_INT: return "an integer";
    case TW_ATTR_FLOAT: return "a number";
    case TW_ATTR_BOOL: return "a boolean";
    case TW_ATTR_STRING: return "a string";
    case TW_ATTR_INTS: return "a list of integers";
    case TW_ATTR_FLOATS: return "a list of numbers";
    default: return "?";
    }
}

void
tw_attr_value_clear (tw_attr_value *v)
{
  if (v->type == TW_ATTR_STRING)
    g_clear_pointer (&v->s, g_free);
}

static void
value_copy (tw_attr_value *dst, const tw_attr_value *src)
{
  *dst = *src;
  if (src->type == TW_ATTR_STRING)
    dst->s = g_strdup (src->s);
}

static gboolean
value_equal (const tw_attr_value *a, const tw_attr_value *b)
{
  if (a->type != b->type)
    return FALSE;
  switch (a->type)
    {
    case TW_ATTR_INT: return a->i == b->i;
    case TW_ATTR_FLOAT: return a->f == b->f;
    case TW_ATTR_BOOL: return !a->b == !b->b;
    case TW_ATTR_STRING: return g_strcmp0 (a->s, b->s) == 0;
    case TW_ATTR_INTS:
      return a->n == b->n && memcmp (a->ints, b->ints, a->n * sizeof (int64_t)) == 0;
    case TW_ATTR_FLOATS:
      if (a->n != b->n)
        return FALSE;
      for (int i = 0; i < a->n; i++)
        if (a->floats[i] != b->floats[i])
          return FALSE;
      return TRUE;
    default: return FALSE;
    }
}

static void
entry_clear (gpointer p)
{
  attr_entry *e = p;
  g_free (e->name);
  tw_attr_value_clear (&e->v);
}

tw_attrs *
tw_attrs_new (void)
{
  tw_attrs *a = g_new0 (tw_attrs, 1);
  a->entries = g_array_new (FALSE, TRUE, sizeof (attr_entry));
  g_array_set_clear_func (a->entries, entry_clear);
  return a;
}

tw_attrs *
tw_attrs_copy (const tw_attrs *a)
{
  tw_attrs *c = tw_attrs_new ();
  for (int i = 0; a && i < (int) a->entries->len; i++)
    {
      const attr_entry *e = &g_array_index (a->entries, attr_entry, i);
      tw_attrs_set (c, e->name, &e->v);
    }
  return c;
}

void
tw_attrs_free (tw_attrs *a)
{
  if (a == NULL)
    return;
  g_array_unref (a->entries);
  g_free (a);
}

gboolean
tw_attrs_equal (const tw_attrs *a, const tw_attrs *b)
{
  int na = tw_attrs_count (a), nb = tw_attrs_count (b);
  if (na != nb)
    return FALSE;
  for (int i = 0; i < na; i++)
    {
      const attr_entry *e = &g_array_index (a->entries, attr_entry, i);
      const tw_attr_value *o = tw_attrs_lookup (b, e->name);
      if (o == NULL || !value_equal (&e->v, o))
        return FALSE;
    }
  return TRUE;
}

int
tw_attrs_count (const tw_attrs *a)
{
  return a ? (int) a->entries->len : 0;
}

const char *
tw_attrs_name_at (const tw_attrs *a, int i)
{
  return g_array_index (a->entries, attr_entry, i).name;
}

static attr_entry *
find_entry (const tw_attrs *a, const char *name, guint *index)
{
  for (guint i = 0; a && i < a->entries->len; i++)
    {
      attr_entry *e = &g_array_index (a->entries, attr_entry, i);
      if (strcmp (e->name, name) == 0)
        {
          if (index)
            *index = i;
          return e;
        }
    }
  return NULL;
}

const tw_attr_value *
tw_attrs_lookup (const tw_attrs *a, const char *name)
{
  attr_entry *e = find_entry (a, name, NULL);
  return e ? &e->v : NULL;
}

gboolean
tw_attrs_has (const tw_attrs *a, const char *name)
{
  return find_entry (a, name, NULL) != NULL;
}

void
tw_attrs_remove (tw_attrs *a, const char *name)
{
  guint i;
  if (find_entry (a, name, &i))
    g_array_remove_index (a->entries, i);
}

void
tw_attrs_set (tw_attrs *a, const char *name, const tw_attr_value *v)
{
  attr_entry *e = find_entry (a, name, NULL);
  if (e)
    {
      tw_attr_value_clear (&e->v);
      value_copy (&e->v, v);
      return;
    }
  attr_entry ne = { g_strdup (name), { 0 } };
  value_copy (&ne.v, v);
  g_array_append_val (a->entries, ne);
}

void
tw_attrs_set_int (tw_attrs *a, const char *name, int64_t v)
{
  tw_attr_value x = { .type = TW_ATTR_INT, .i = v };
  tw_attrs_set (a, name, &x);
}

void
tw_attrs_set_float (tw_attrs *a, const char *name, double v)
{
  tw_attr_value x = { .type = TW_ATTR_FLOAT, .f = v };
  tw_attrs_set (a, name, &x);
}

void
tw_attrs_set_bool (tw_attrs *a, const char *name, gboolean v)
{
  tw_attr_value x = { .type = TW_ATTR_BOOL, .b = v };
  tw_attrs_set (a, name, &x);
}

void
tw_attrs_set_string (tw_attrs *a, const char *name, const char *v)
{
  tw_attr_value x = { .type = TW_ATTR_STRING, .s = (char *) v };
  tw_attrs_set (a, name, &x);
}

void
tw_attrs_set_ints (tw_attrs *a, const char *name, int n, const int64_t *v)
{
  g_assert (n <= TW_ATTR_MAX_LIST);
  tw_attr_value x = { .type = TW_ATTR_INTS, .n = n };
  if (n > 0)
    memcpy (x.ints, v, n * sizeof (int64_t));
  tw_attrs_set (a, name, &x);
}

void
tw_attrs_set_floats (tw_attrs *a, const char *name, int n, const double *v)
{
  g_assert (n <= TW_ATTR_MAX_LIST);
  tw_attr_value x = { .type = TW_ATTR_FLOATS, .n = n };
  if (n > 0)
    memcpy (x.floats, v, n * sizeof (double));
  tw_attrs_set (a, name, &x);
}

int64_t
tw_attrs_get_int (const tw_attrs *a, const char *name, int64_t fallback)
{
  const tw_attr_value *v = tw_attrs_lookup (a, name);
  if (v == NULL)
    return fallback;
  if (v->type == TW_ATTR_INT)
    return v->i;
  if (v->type == TW_ATTR_FLOAT)
    return (int64_t) v->f;
  if (v->type == TW_ATTR_BOOL)
    return v->b ? 1 : 0;
  return fallback;
}

double
tw_attrs_get_float (const tw_attrs *a, const char *name, double fallback)
{
  const tw_attr_value *v = tw_attrs_lookup (a, name);
  if (v == NULL)
    return fallback;
  if (v->type == TW_ATTR_FLOAT)
    return v->f;
  if (v->type == TW_ATTR_INT)
    return (double) v->i;
  return fallback;
}

gboolean
tw_attrs_get_bool (const tw_attrs *a, const char *name, gboolean fallback)
{
  const tw_attr_value *v = tw_attrs_lookup (a, name);
  if (v == NULL)
    return fallback;
  if (v->type == TW_ATTR_BOOL)
    return v->b;
  if (v->type == TW_ATTR_INT)
    return v->i != 0;
  return fallback;
}

const char *
tw_attrs_get_string (const tw_attrs *a, const char *name, const char *fallback)
{
  const tw_attr_value *v = tw_attrs_lookup (a, name);
  return v && v->type == TW_ATTR_STRING ? v->s : fallback;
}

int
tw_attrs_get_ints (const tw_attrs *a, const char *name, int64_t *out, int max)
{
  const tw_attr_value *v = tw_attrs_lookup (a, name);
  if (v == NULL)
    return -1;
  if (v->type == TW_ATTR_INT)
    {
      if (max > 0)
        out[0] = v->i;
      return 1;
    }
  if (v->type != TW_ATTR_INTS)
    return -1;
  for (int i = 0; i < v->n && i < max; i++)
    out[i] = v->ints[i];
  return v->n;
}

void
tw_attrs_get_ints2 (const tw_attrs *a, const char *name, int64_t out[2], int64_t fallback)
{
  const tw_attr_value *v = tw_attrs_lookup (a, name);
  out[0] = out[1] = fallback;
  if (v == NULL)
    return;
  if (v->type == TW_ATTR_INT)
    out[0] = out[1] = v->i;
  else if (v->type == TW_ATTR_INTS && v->n == 1)
    out[0] = out[1] = v->ints[0];
  else if (v->type == TW_ATTR_INTS && v->n >= 2)
    {
      out[0] = v->ints[0];
      out[1] = v->ints[1];
    }
}

/* ---- JSON ------------------------------------------------------------ */

static gboolean
json_is_int (JsonNode *n)
{
  return JSON_NODE_HOLDS_VALUE (n) && json_node_get_value_type (n) == G_TYPE_INT64;
}

static gboolean
json_is_number (JsonNode *n)
{
  return JSON_NODE_HOLDS_VALUE (n)
         && (json_node_get_value_type (n) == G_TYPE_INT64
             || json_node_get_value_type (n) == G_TYPE_DOUBLE);
}

gboolean
tw_attr_value_from_json (JsonNode *node, tw_attr_type type, tw_attr_value *out, GError **error)
{
  memset (out, 0, sizeof *out);
  out->type = type;
  switch (type)
    {
    case TW_ATTR_INT:
      if (!json_is_int (node))
        goto wrong;
      out->i = json_node_get_int (node);
      return TRUE;
    case TW_ATTR_FLOAT:
      if (!json_is_number (node))
        goto wrong;
      out->f = json_node_get_double (node);
      return TRUE;
    case TW_ATTR_BOOL:
      if (!JSON_NODE_HOLDS_VALUE (node) || json_node_get_value_type (node) != G_TYPE_BOOLEAN)
        goto wrong;
      out->b = json_node_get_boolean (node);
      return TRUE;
    case TW_ATTR_STRING:
      if (!JSON_NODE_HOLDS_VALUE (node) || json_node_get_value_type (node) != G_TYPE_STRING)
        goto wrong;
      out->s = g_strdup (json_node_get_string (node));
      return TRUE;
    case TW_ATTR_INTS:
    case TW_ATTR_FLOATS:
      {
        if (type == TW_ATTR_INTS && json_is_int (node))
          {
            /* A single integer stands for a one-element list ("kernel_size": 3). */
            out->n = 1;
            out->ints[0] = json_node_get_int (node);
            return TRUE;
          }
        if (!JSON_NODE_HOLDS_ARRAY (node))
          goto wrong;
        JsonArray *arr = json_node_get_array (node);
        guint n = json_array_get_length (arr);
        if (n > TW_ATTR_MAX_LIST)
          {
            g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR, "list longer than %d entries",
                         TW_ATTR_MAX_LIST);
            return FALSE;
          }
        out->n = (int) n;
        for (guint i = 0; i < n; i++)
          {
            JsonNode *e = json_array_get_element (arr, i);
            if (type == TW_ATTR_INTS ? !json_is_int (e) : !json_is_number (e))
              goto wrong;
            if (type == TW_ATTR_INTS)
              out->ints[i] = json_node_get_int (e);
            else
              out->floats[i] = json_node_get_double (e);
          }
        return TRUE;
      }
    }
wrong:
  g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR, "expected %s", tw_attr_type_name (type));
  return FALSE;
}

gboolean
tw_attr_value_parse (tw_attr_type type, const char *text, tw_attr_value *out, GError **error)
{
  /* Held to the rule of every JSON text read (engine/json-text.h): a value
   * typed as 100,000 nested '[' would overflow json-glib's recursion. */
  g_autofree char *wrapped = g_strdup_printf ("[%s]", text);
  g_autoptr (GError) local = NULL;
  g_autoptr (JsonParser) p = tw_json_parse (wrapped, strlen (wrapped), "value", &local);
  if (p == NULL)
    {
      g_set_error_literal (error, TW_OP_ERROR, TW_OP_ERROR_ATTR, local->message);
      return FALSE;
    }
  JsonArray *arr = json_node_get_array (json_parser_get_root (p));
  if (json_array_get_length (arr) != 1)
    {
      g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR, "'%s' is not one value", text);
      return FALSE;
    }
  return tw_attr_value_from_json (json_array_get_element (arr, 0), type, out, error);
}

/* Infer the type of an attribute from its JSON when no schema is given. */
static gboolean
guess_type (JsonNode *n, tw_attr_type *type)
{
  if (JSON_NODE_HOLDS_VALUE (n))
    {
      GType t = json_node_get_value_type (n);
      if (t == G_TYPE_INT64)
        *type = TW_ATTR_INT;
      else if (t == G_TYPE_DOUBLE)
        *type = TW_ATTR_FLOAT;
      else if (t == G_TYPE_BOOLEAN)
        *type = TW_ATTR_BOOL;
      else if (t == G_TYPE_STRING)
        *type = TW_ATTR_STRING;
      else
        return FALSE;
      return TRUE;
    }
  if (JSON_NODE_HOLDS_ARRAY (n))
    {
      JsonArray *arr = json_node_get_array (n);
      *type = TW_ATTR_INTS;
      for (guint i = 0; i < json_array_get_length (arr); i++)
        {
          JsonNode *e = json_array_get_element (arr, i);
          if (!json_is_number (e))
            return FALSE;
          if (!json_is_int (e))
            *type = TW_ATTR_FLOATS;
        }
      return TRUE;
    }
  return FALSE;
}

tw_attrs *
tw_attrs_from_json (JsonObject *obj, const tw_attr_spec *spec, const char *where, GError **error)
{
  g_autoptr (GList) members = json_object_get_members (obj);
  tw_attrs *a = tw_attrs_new ();

  for (GList *l = members; l; l = l->next)
    {
      const char *name = l->data;
      JsonNode *n = json_object_get_member (obj, name);
      tw_attr_type type;
      const tw_attr_spec *s = NULL;
      g_autoptr (GError) local = NULL;
      tw_attr_value v;

      if (spec)
        {
          for (const tw_attr_spec *it = spec; it->name; it++)
            if (strcmp (it->name, name) == 0)
              s = it;
          /* "stage" belongs to every node: its pipeline stage (train.h). */
          if (s == NULL && strcmp (name, "stage") == 0)
            type = TW_ATTR_INT;
          else if (s == NULL)
            {
              GString *known = g_string_new (NULL);
              for (const tw_attr_spec *it = spec; it->name; it++)
                g_string_append_printf (known, "%s%s", known->len ? ", " : "", it->name);
              g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                           "%s.%s: unknown attribute (known: %s)", where, name,
                           known->len ? known->str : "none");
              g_string_free (known, TRUE);
              tw_attrs_free (a);
              return NULL;
            }
          else
            type = s->type;
          /* An integer where a number is expected is fine; keep it a float. */
        }
      else if (!guess_type (n, &type))
        {
          g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR,
                       "%s.%s: not a number, string, boolean or list of numbers", where, name);
          tw_attrs_free (a);
          return NULL;
        }
      if (!tw_attr_value_from_json (n, type, &v, &local))
        {
          g_set_error (error, TW_OP_ERROR, TW_OP_ERROR_ATTR, "%s.%s: %s", where, name,
                       local->message);
          tw_attrs_free (a);
          return NULL;
        }
      tw_attrs_set (a, name, &v);
      tw_attr_value_clear (&v);
    }
  return a;
}

JsonNode *
tw_attr_value_to_json (const tw_attr_value *v)
{
  JsonNode *n = json_node_alloc ();
  switch (v->type)
    {
    case TW_ATTR_INT: json_node_init_int (n, v->i); break;
    case TW_ATTR_FLOAT: json_node_init_double (n, v->f); break;
    case TW_ATTR_BOOL: json_node_init_boolean (n, v->b); break;
    case TW_ATTR_STRING: json_node_init_string (n, v->s); break;
    case TW_ATTR_INTS:
    case TW_ATTR_FLOATS:
      {
        JsonArray *arr = json_array_sized_new (v->n);
        for (int i = 0; i < v->n; i++)
          {
            if (v->type == TW_ATTR_INTS)
              json_array_add_int_element (arr, v->ints[i]);
            else
              json_array_add_double_element (arr, v->floats[i]);
          }
        json_node_init_array (n, arr);
        json_array_unref (arr);
        break;
      }
    }
  return n;
}

JsonNode *
tw_attrs_to_json (const tw_attrs *a)
{
  JsonObject *obj = json_object_new ();
  for (int i = 0; i < tw_attrs_count (a); i++)
    {
      const attr_entry *e = &g_array_index (a->entries, attr_entry, i);
      json_object_set_member (obj, e->name, tw_attr_value_to_json (&e->v));
    }
  JsonNode *n = json_node_alloc ();
  json_node_init_object (n, obj);
  json_object_unref (obj);
  return n;
}
