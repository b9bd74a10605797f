/* attrs.h — typed node attributes.
 *
 * A tw_attrs is a small ordered bag of name → typed value, as found in a
 * node of the model file ("attrs": {"out_features": 256, "kernel": [5, 5]}).
 * Getters take a fallback used when the attribute is absent, so kernels read
 *
 *   int64_t out = tw_attrs_get_int (a, "out_features", 0);
 *   int64_t k[2]; tw_attrs_get_ints2 (a, "kernel_size", k, 1);
 *
 * Ownership: tw_attrs_new/_copy return a bag the caller frees with
 * tw_attrs_free; strings returned by getters live inside the bag.
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef enum
{
  TW_ATTR_INT,
  TW_ATTR_FLOAT,
  TW_ATTR_BOOL,
  TW_ATTR_STRING,
  TW_ATTR_INTS,
  TW_ATTR_FLOATS,
} tw_attr_type;

#define TW_ATTR_MAX_LIST 16

typedef struct
{
  tw_attr_type type;
  int n;                                /* list length for INTS / FLOATS */
  union
  {
    int64_t i;
    double f;
    gboolean b;
    char *s;
    int64_t ints[TW_ATTR_MAX_LIST];
    double floats[TW_ATTR_MAX_LIST];
  };
} tw_attr_value;

/* Schema entry of an op's attribute.  default_value is written as in JSON
 * ("1", "0.5", "true", "\"mean\"", "[1, 1]") or NULL when required or when
 * absence has a meaning of its own.  choices: NULL-terminated list for
 * string enums. */
typedef struct
{
  const char *name;
  tw_attr_type type;
  const char *default_value;
  gboolean required;
  const char *doc;
  const char *const *choices;
} tw_attr_spec;

typedef struct tw_attrs tw_attrs;

tw_attrs *tw_attrs_new (void);
tw_attrs *tw_attrs_copy (const tw_attrs *a);       /* NULL copies to an empty bag */
void tw_attrs_free (tw_attrs *a);
gboolean tw_attrs_equal (const tw_attrs *a, const tw_attrs *b);

int tw_attrs_count (const tw_attrs *a);
const char *tw_attrs_name_at (const tw_attrs *a, int i);
const tw_attr_value *tw_attrs_lookup (const tw_attrs *a, const char *name);  /* NULL if absent */
gboolean tw_attrs_has (const tw_attrs *a, const char *name);
void tw_attrs_remove (tw_attrs *a, const char *name);

/* Setters replace an existing value of the same name. */
void tw_attrs_set (tw_attrs *a, const char *name, const tw_attr_value *v);  /* copies v */
void tw_attrs_set_int (tw_attrs *a, const char *name, int64_t v);
void tw_attrs_set_float (tw_attrs *a, const char *name, double v);
void tw_attrs_set_bool (tw_attrs *a, const char *name, gboolean v);
void tw_attrs_set_string (tw_attrs *a, const char *name, const char *v);
void tw_attrs_set_ints (tw_attrs *a, const char *name, int n, const int64_t *v);
void tw_attrs_set_floats (tw_attrs *a, const char *name, int n, const double *v);

/* Getters: a NULL bag or absent name gives the fallback.  INT and FLOAT are
 * interchangeable on read (an int attribute read as float converts). */
int64_t tw_attrs_get_int (const tw_attrs *a, const char *name, int64_t fallback);
double tw_attrs_get_float (const tw_attrs *a, const char *name, double fallback);
gboolean tw_attrs_get_bool (const tw_attrs *a, const char *name, gboolean fallback);
const char *tw_attrs_get_string (const tw_attrs *a, const char *name, const char *fallback);
/* Copies up to max entries into out; returns the count, or -1 if absent. */
int tw_attrs_get_ints (const tw_attrs *a, const char *name, int64_t *out, int max);
/* A pair attribute written either as one int (3 → [3, 3]) or as [h, w]. */
void tw_attrs_get_ints2 (const tw_attrs *a, const char *name, int64_t out[2], int64_t fallback);

/* Parse a JSON-written value of the given type ("[1, 2]", "0.5"). */
gboolean tw_attr_value_parse (tw_attr_type type, const char *text, tw_attr_value *out,
                              GError **error);
void tw_attr_value_clear (tw_attr_value *v);
const char *tw_attr_type_name (tw_attr_type type);

/* JSON conversion.  from_json checks each member against the schema when
 * spec is not NULL: unknown names and wrong types are errors naming `where`
 * (for example "mlp.json: $.graph.nodes[3].attrs"). */
JsonNode *tw_attrs_to_json (const tw_attrs *a);
tw_attrs *tw_attrs_from_json (JsonObject *obj, const tw_attr_spec *spec, const char *where,
                              GError **error);
/* Single values, for the inspector and the model file. */
JsonNode *tw_attr_value_to_json (const tw_attr_value *v);
gboolean tw_attr_value_from_json (JsonNode *node, tw_attr_type type, tw_attr_value *out,
                                  GError **error);

G_END_DECLS
