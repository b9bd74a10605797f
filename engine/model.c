/* model.c — the model file: JSON in and out, with errors that name the file
 * and the JSON path of the offending member.
 *
 * Loading checks structure and types here; what needs the graph as a whole
 * (references to nodes that do not exist, unknown ops, shapes) is left to
 * tw_graph_infer, so that such a model still opens in the editor.
 */
#define G_LOG_DOMAIN "tw-model"

#include "engine/model.h"
#include "engine/fileutil.h"
#include "engine/json-text.h"
#include "engine/number.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

G_DEFINE_QUARK (tw-model-error-quark, tw_model_error)

/* Width of a line in saved files: shorter arrays and objects stay on one line. */
#define LINE_WIDTH 100

/* ---- Models ------------------------------------------------------------ */

tw_model *
tw_model_new (const char *name)
{
  tw_model *m = g_new0 (tw_model, 1);
  m->name = g_strdup (name);
  m->graph = tw_graph_new ();
  tw_recipe_init_defaults (&m->recipe);
  return m;
}

void
tw_model_free (tw_model *m)
{
  if (m == NULL)
    return;
  g_free (m->name);
  tw_graph_free (m->graph);
  tw_recipe_clear (&m->recipe);
  g_clear_pointer (&m->editor, json_node_unref);
  g_free (m);
}

/* ---- Loading: error helpers -------------------------------------------- */

typedef struct
{
  const char *file;          /* the source as named in messages */
  GError **error;
} loader;

static void G_GNUC_PRINTF (4, 5)
fail_impl (loader *ld, int code, const char *path, const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *msg = g_strdup_vprintf (format, args);
  va_end (args);
  if (path)
    g_set_error (ld->error, TW_MODEL_ERROR, code, "%s: %s: %s", ld->file, path, msg);
  else
    g_set_error (ld->error, TW_MODEL_ERROR, code, "%s: %s", ld->file, msg);
}

/* Sets the error and is FALSE, visibly to the compiler (fail_impl, being
 * variadic, is never inlined): `return fail (...)`. */
static inline gboolean
false_value (void)
{
  return FALSE;
}
#define fail(...) (fail_impl (__VA_ARGS__), false_value ())

static const char *
json_kind (JsonNode *n)
{
  switch (JSON_NODE_TYPE (n))
    {
    case JSON_NODE_OBJECT: return "an object";
    case JSON_NODE_ARRAY: return "an array";
    case JSON_NODE_NULL: return "null";
    case JSON_NODE_VALUE:
      {
        GType t = json_node_get_value_type (n);
        if (t == G_TYPE_STRING)
          return "a string";
        if (t == G_TYPE_BOOLEAN)
          return "a boolean";
        if (t == G_TYPE_INT64)
          return "an integer";
        return "a number";
      }
    }
  return "something else";
}

#define expected(ld, path, what, got) \
  fail ((ld), TW_MODEL_ERROR_FORMAT, (path), "expected %s, got %s", (what), json_kind (got))

static JsonObject *
get_object (loader *ld, JsonNode *n, const char *path)
{
  if (!JSON_NODE_HOLDS_OBJECT (n))
    {
      expected (ld, path, "an object", n);
      return NULL;
    }
  return json_node_get_object (n);
}

static JsonArray *
get_array (loader *ld, JsonNode *n, const char *path)
{
  if (!JSON_NODE_HOLDS_ARRAY (n))
    {
      expected (ld, path, "an array", n);
      return NULL;
    }
  return json_node_get_array (n);
}

static gboolean
get_string (loader *ld, JsonNode *n, const char *path, const char **out)
{
  if (!JSON_NODE_HOLDS_VALUE (n) || json_node_get_value_type (n) != G_TYPE_STRING)
    return expected (ld, path, "a string", n);
  *out = json_node_get_string (n);
  return TRUE;
}

/* A string, or null for "none". */
static gboolean
get_string_or_null (loader *ld, JsonNode *n, const char *path, const char **out)
{
  if (JSON_NODE_HOLDS_NULL (n))
    {
      *out = NULL;
      return TRUE;
    }
  if (!JSON_NODE_HOLDS_VALUE (n) || json_node_get_value_type (n) != G_TYPE_STRING)
    return expected (ld, path, "a string or null", n);
  *out = json_node_get_string (n);
  return TRUE;
}

static gboolean
get_int (loader *ld, JsonNode *n, const char *path, int64_t *out)
{
  if (!JSON_NODE_HOLDS_VALUE (n) || json_node_get_value_type (n) != G_TYPE_INT64)
    return expected (ld, path, "an integer", n);
  *out = json_node_get_int (n);
  return TRUE;
}

/* An integer in [min, max]. */
static gboolean
get_int_range (loader *ld, JsonNode *n, const char *path, int64_t min, int64_t max, int64_t *out)
{
  int64_t v;
  if (!get_int (ld, n, path, &v))
    return FALSE;
  if (v < min)
    return fail (ld, TW_MODEL_ERROR_FORMAT, path,
                 "must be at least %" G_GINT64_FORMAT " (got %" G_GINT64_FORMAT ")", min, v);
  if (v > max)
    return fail (ld, TW_MODEL_ERROR_FORMAT, path,
                 "must be at most %" G_GINT64_FORMAT " (got %" G_GINT64_FORMAT ")", max, v);
  *out = v;
  return TRUE;
}

/* An integer >= min. */
static gboolean
get_int_min (loader *ld, JsonNode *n, const char *path, int64_t min, int64_t *out)
{
  return get_int_range (ld, n, path, min, G_MAXINT64, out);
}

static gboolean
get_number (loader *ld, JsonNode *n, const char *path, double *out)
{
  if (!JSON_NODE_HOLDS_VALUE (n)
      || (json_node_get_value_type (n) != G_TYPE_INT64
          && json_node_get_value_type (n) != G_TYPE_DOUBLE))
    return expected (ld, path, "a number", n);
  double v = json_node_get_double (n);
  if (!isfinite (v))
    return fail (ld, TW_MODEL_ERROR_FORMAT, path, "number out of range");
  *out = v;
  return TRUE;
}

/* A number in [lo, hi), or [lo, +inf) when hi is infinite; strict: (lo, ...). */
static gboolean
get_number_range (loader *ld, JsonNode *n, const char *path, double lo, gboolean strict, double hi,
                  double *out)
{
  double v;
  if (!get_number (ld, n, path, &v))
    return FALSE;
  if (strict ? !(v > lo) : !(v >= lo))
    return fail (ld, TW_MODEL_ERROR_FORMAT, path, "must be %s %g (got %g)",
                 strict ? "greater than" : "at least", lo, v);
  if (isfinite (hi) && !(v < hi))
    return fail (ld, TW_MODEL_ERROR_FORMAT, path, "must be less than %g (got %g)", hi, v);
  *out = v;
  return TRUE;
}

static gboolean
get_bool (loader *ld, JsonNode *n, const char *path, gboolean *out)
{
  if (!JSON_NODE_HOLDS_VALUE (n) || json_node_get_value_type (n) != G_TYPE_BOOLEAN)
    return expected (ld, path, "true or false", n);
  *out = json_node_get_boolean (n);
  return TRUE;
}

/* Every member of obj must be one of `known` (NULL-terminated). */
static gboolean
check_members (loader *ld, JsonObject *obj, const char *path, const char *const *known)
{
  g_autoptr (GList) members = json_object_get_members (obj);
  for (GList *l = members; l; l = l->next)
    {
      const char *name = l->data;
      if (g_strv_contains (known, name))
        continue;
      g_autofree char *list = g_strjoinv (", ", (char **) known);
      g_autofree char *p = g_strdup_printf ("%s.%s", path, name);
      return fail (ld, TW_MODEL_ERROR_FORMAT, p, "unknown member (known: %s)", list);
    }
  return TRUE;
}

/* The member `name`, or NULL (with an error when required). */
static JsonNode *
member (loader *ld, JsonObject *obj, const char *path, const char *name, gboolean required)
{
  JsonNode *n = json_object_get_member (obj, name);
  if (n == NULL && required)
    fail (ld, TW_MODEL_ERROR_FORMAT, path, "missing member \"%s\"", name);
  return n;
}

/* ---- Loading: the graph ------------------------------------------------ */

static const char *const top_members[] = { "format", "version", "name", "graph", "training",
                                            "editor", NULL };
static const char *const graph_members[] = { "nodes", "outputs", NULL };
static const char *const node_members[] = { "id", "op", "inputs", "attrs", "share", "pos", NULL };

static gboolean
check_ref (loader *ld, const char *ref, const char *path)
{
  g_autofree char *id = NULL;
  int output;
  if (ref[0] == '\0' || !tw_ref_parse (ref, &id, &output))
    return fail (ld, TW_MODEL_ERROR_FORMAT, path,
                 "malformed reference '%s' (expected \"node\" or \"node:output\")", ref);
  return TRUE;
}

/* A NULL-terminated array of reference strings, borrowed from the JSON. */
static gboolean
load_refs (loader *ld, JsonNode *n, const char *path, GPtrArray *out)
{
  JsonArray *arr = get_array (ld, n, path);
  if (arr == NULL)
    return FALSE;
  for (guint i = 0; i < json_array_get_length (arr); i++)
    {
      g_autofree char *p = g_strdup_printf ("%s[%u]", path, i);
      const char *ref;
      /* "" is an input port left unconnected (the editor allows that; shape
       * inference reports it on the node). */
      if (!get_string (ld, json_array_get_element (arr, i), p, &ref)
          || (ref[0] != '\0' && !check_ref (ld, ref, p)))
        return FALSE;
      g_ptr_array_add (out, (gpointer) ref);
    }
  g_ptr_array_add (out, NULL);
  return TRUE;
}

static tw_attrs *
load_attrs (loader *ld, JsonNode *n, const char *path, const tw_op_def *def)
{
  JsonObject *obj = get_object (ld, n, path);
  if (obj == NULL)
    return NULL;

  /* With the op's schema when it is known: unknown names and wrong types are
   * errors.  Unknown ops keep their attributes as written, typed from the JSON. */
  g_autoptr (GError) local = NULL;
  g_autofree char *where = g_strdup_printf ("%s: %s", ld->file, path);
  tw_attrs *a = tw_attrs_from_json (obj, def ? def->attrs : NULL, where, &local);
  if (a == NULL)
    {
      g_set_error_literal (ld->error, TW_MODEL_ERROR, TW_MODEL_ERROR_FORMAT, local->message);
      return NULL;
    }
  for (int i = 0; i < tw_attrs_count (a); i++)
    {
      const char *name = tw_attrs_name_at (a, i);
      const tw_attr_value *v = tw_attrs_lookup (a, name);
      gboolean finite = TRUE;
      if (v->type == TW_ATTR_FLOAT)
        finite = isfinite (v->f);
      else if (v->type == TW_ATTR_FLOATS)
        for (int k = 0; k < v->n; k++)
          finite = finite && isfinite (v->floats[k]);
      if (!finite)
        {
          g_autofree char *p = g_strdup_printf ("%s.%s", path, name);
          fail (ld, TW_MODEL_ERROR_FORMAT, p, "number out of range");
          tw_attrs_free (a);
          return NULL;
        }
    }
  return a;
}

static gboolean
load_pos (loader *ld, JsonNode *n, const char *path, double *x, double *y)
{
  JsonArray *arr = get_array (ld, n, path);
  if (arr == NULL)
    return FALSE;
  if (json_array_get_length (arr) != 2)
    return fail (ld, TW_MODEL_ERROR_FORMAT, path, "expected [x, y], got %u numbers",
                 json_array_get_length (arr));
  g_autofree char *px = g_strdup_printf ("%s[0]", path);
  g_autofree char *py = g_strdup_printf ("%s[1]", path);
  return get_number (ld, json_array_get_element (arr, 0), px, x)
         && get_number (ld, json_array_get_element (arr, 1), py, y);
}

static gboolean
load_node (loader *ld, tw_graph *g, JsonNode *n, const char *path, GHashTable *seen)
{
  g_autoptr (GError) local = NULL;   /* before any goto: cleanups must not be jumped over */
  JsonObject *obj = get_object (ld, n, path);
  if (obj == NULL || !check_members (ld, obj, path, node_members))
    return FALSE;

  JsonNode *jid = member (ld, obj, path, "id", TRUE);
  JsonNode *jop = jid ? member (ld, obj, path, "op", TRUE) : NULL;
  if (jop == NULL)
    return FALSE;

  g_autofree char *pid = g_strdup_printf ("%s.id", path);
  g_autofree char *pop = g_strdup_printf ("%s.op", path);
  const char *id = NULL, *op = NULL;
  if (!get_string (ld, jid, pid, &id))
    return FALSE;
  if (id[0] == '\0')
    return fail (ld, TW_MODEL_ERROR_FORMAT, pid, "empty id");
  if (strchr (id, ':'))
    return fail (ld, TW_MODEL_ERROR_FORMAT, pid,
                 "'%s': an id may not contain ':' (it separates the output index)", id);
  const char *first = g_hash_table_lookup (seen, id);
  if (first)
    return fail (ld, TW_MODEL_ERROR_FORMAT, pid, "duplicate id '%s' (first at %s)", id, first);
  g_hash_table_insert (seen, (gpointer) id, g_strdup (path));

  if (!get_string (ld, jop, pop, &op))
    return FALSE;
  if (op[0] == '\0')
    return fail (ld, TW_MODEL_ERROR_FORMAT, pop, "empty op name");

  g_autoptr (GPtrArray) inputs = g_ptr_array_new ();
  JsonNode *jin = member (ld, obj, path, "inputs", FALSE);
  if (jin)
    {
      g_autofree char *p = g_strdup_printf ("%s.inputs", path);
      if (!load_refs (ld, jin, p, inputs))
        return FALSE;
    }

  tw_attrs *attrs = NULL;
  JsonNode *jattrs = member (ld, obj, path, "attrs", FALSE);
  if (jattrs)
    {
      g_autofree char *p = g_strdup_printf ("%s.attrs", path);
      attrs = load_attrs (ld, jattrs, p, tw_op_lookup (op));
      if (attrs == NULL)
        return FALSE;
    }

  const char *share = NULL;
  JsonNode *jshare = member (ld, obj, path, "share", FALSE);
  if (jshare)
    {
      g_autofree char *p = g_strdup_printf ("%s.share", path);
      if (!get_string_or_null (ld, jshare, p, &share))
        goto fail_attrs;
      if (share && (share[0] == '\0' || strchr (share, ':')))
        {
          fail (ld, TW_MODEL_ERROR_FORMAT, p, "'%s' is not a node id", share);
          goto fail_attrs;
        }
    }

  double x = 0, y = 0;
  JsonNode *jpos = member (ld, obj, path, "pos", FALSE);
  if (jpos)
    {
      g_autofree char *p = g_strdup_printf ("%s.pos", path);
      if (!load_pos (ld, jpos, p, &x, &y))
        goto fail_attrs;
    }

  tw_node *node = tw_graph_add_node (g, id, op, attrs,
                                     inputs->len ? (const char *const *) inputs->pdata : NULL,
                                     &local);
  tw_attrs_free (attrs);
  if (node == NULL)
    return fail (ld, TW_MODEL_ERROR_FORMAT, path, "%s", local->message);
  if (share)
    tw_graph_set_share (g, node, share);
  if (jpos)
    tw_graph_set_pos (g, node, x, y);
  return TRUE;

fail_attrs:
  tw_attrs_free (attrs);
  return FALSE;
}

static gboolean
load_graph (loader *ld, tw_graph *g, JsonNode *n)
{
  JsonObject *obj = get_object (ld, n, "$.graph");
  if (obj == NULL || !check_members (ld, obj, "$.graph", graph_members))
    return FALSE;

  JsonNode *jnodes = member (ld, obj, "$.graph", "nodes", TRUE);
  JsonArray *nodes = jnodes ? get_array (ld, jnodes, "$.graph.nodes") : NULL;
  if (nodes == NULL)
    return FALSE;

  /* id → path of its node, for duplicate messages; ids are borrowed from the JSON. */
  g_autoptr (GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, g_free);
  for (guint i = 0; i < json_array_get_length (nodes); i++)
    {
      g_autofree char *p = g_strdup_printf ("$.graph.nodes[%u]", i);
      if (!load_node (ld, g, json_array_get_element (nodes, i), p, seen))
        return FALSE;
    }

  JsonNode *jout = member (ld, obj, "$.graph", "outputs", FALSE);
  if (jout)
    {
      g_autoptr (GPtrArray) outputs = g_ptr_array_new ();
      if (!load_refs (ld, jout, "$.graph.outputs", outputs))
        return FALSE;
      tw_graph_set_outputs (g, (const char *const *) outputs->pdata);
    }
  return TRUE;
}

/* ---- Loading: the training recipe ------------------------------------- */

static const char *const recipe_members[] = {
  "loss", "batch_size", "epochs", "seed", "dataset", "validation_split", "optimizer", "schedule",
  NULL
};
static const char *const optimizer_members[] = {
  "type", "lr", "momentum", "nesterov", "weight_decay", "betas", "eps", NULL
};
static const char *const schedule_members[] = {
  "type", "step_size", "gamma", "t_max", "min_lr", "warmup_steps", NULL
};
static const char *const schedule_names[] = { "constant", "step", "cosine", NULL };

static const char *
schedule_type_name (tw_schedule_type t)
{
  return (guint) t < G_N_ELEMENTS (schedule_names) - 1 ? schedule_names[t] : "constant";
}

static gboolean
load_optimizer (loader *ld, tw_optimizer_config *o, JsonNode *n)
{
  const char *path = "$.training.optimizer";
  JsonObject *obj = get_object (ld, n, path);
  if (obj == NULL || !check_members (ld, obj, path, optimizer_members))
    return FALSE;

  JsonNode *m;
  if ((m = member (ld, obj, path, "type", FALSE)))
    {
      const char *name;
      if (!get_string (ld, m, "$.training.optimizer.type", &name))
        return FALSE;
      if (!tw_optimizer_type_from_name (name, &o->type))
        return fail (ld, TW_MODEL_ERROR_FORMAT, "$.training.optimizer.type",
                     "unknown optimizer '%s' (known: sgd, adam, adamw)", name);
    }
  if ((m = member (ld, obj, path, "lr", FALSE))
      && !get_number_range (ld, m, "$.training.optimizer.lr", 0, FALSE, INFINITY, &o->lr))
    return FALSE;
  if ((m = member (ld, obj, path, "momentum", FALSE))
      && !get_number_range (ld, m, "$.training.optimizer.momentum", 0, FALSE, INFINITY,
                            &o->momentum))
    return FALSE;
  if ((m = member (ld, obj, path, "nesterov", FALSE))
      && !get_bool (ld, m, "$.training.optimizer.nesterov", &o->nesterov))
    return FALSE;
  if ((m = member (ld, obj, path, "weight_decay", FALSE))
      && !get_number_range (ld, m, "$.training.optimizer.weight_decay", 0, FALSE, INFINITY,
                            &o->weight_decay))
    return FALSE;
  if ((m = member (ld, obj, path, "eps", FALSE))
      && !get_number_range (ld, m, "$.training.optimizer.eps", 0, TRUE, INFINITY, &o->eps))
    return FALSE;
  if ((m = member (ld, obj, path, "betas", FALSE)))
    {
      JsonArray *arr = get_array (ld, m, "$.training.optimizer.betas");
      if (arr == NULL)
        return FALSE;
      if (json_array_get_length (arr) != 2)
        return fail (ld, TW_MODEL_ERROR_FORMAT, "$.training.optimizer.betas",
                     "expected [beta1, beta2], got %u numbers", json_array_get_length (arr));
      /* Adam needs 0 <= beta < 1: its bias correction divides by 1 - beta^t. */
      if (!get_number_range (ld, json_array_get_element (arr, 0), "$.training.optimizer.betas[0]",
                             0, FALSE, 1, &o->beta1)
          || !get_number_range (ld, json_array_get_element (arr, 1),
                                "$.training.optimizer.betas[1]", 0, FALSE, 1, &o->beta2))
        return FALSE;
    }
  return TRUE;
}

static gboolean
load_schedule (loader *ld, tw_schedule_config *s, JsonNode *n)
{
  const char *path = "$.training.schedule";
  JsonObject *obj = get_object (ld, n, path);
  if (obj == NULL || !check_members (ld, obj, path, schedule_members))
    return FALSE;

  JsonNode *m;
  if ((m = member (ld, obj, path, "type", FALSE)))
    {
      const char *name;
      if (!get_string (ld, m, "$.training.schedule.type", &name))
        return FALSE;
      int t = 0;
      while (schedule_names[t] && strcmp (schedule_names[t], name) != 0)
        t++;
      if (schedule_names[t] == NULL)
        return fail (ld, TW_MODEL_ERROR_FORMAT, "$.training.schedule.type",
                     "unknown schedule '%s' (known: constant, step, cosine)", name);
      s->type = (tw_schedule_type) t;
    }
  if ((m = member (ld, obj, path, "step_size", FALSE))
      && !get_int_min (ld, m, "$.training.schedule.step_size", 1, &s->step_size))
    return FALSE;
  if ((m = member (ld, obj, path, "gamma", FALSE))
      && !get_number_range (ld, m, "$.training.schedule.gamma", 0, TRUE, INFINITY, &s->gamma))
    return FALSE;
  if ((m = member (ld, obj, path, "t_max", FALSE))
      && !get_int_min (ld, m, "$.training.schedule.t_max", 0, &s->t_max))
    return FALSE;
  if ((m = member (ld, obj, path, "min_lr", FALSE))
      && !get_number_range (ld, m, "$.training.schedule.min_lr", 0, FALSE, INFINITY, &s->min_lr))
    return FALSE;
  if ((m = member (ld, obj, path, "warmup_steps", FALSE))
      && !get_int_min (ld, m, "$.training.schedule.warmup_steps", 0, &s->warmup_steps))
    return FALSE;
  if (s->type == TW_SCHED_STEP && s->step_size < 1)
    return fail (ld, TW_MODEL_ERROR_FORMAT, path, "a step schedule needs \"step_size\" >= 1");
  return TRUE;
}

static gboolean
replace_string (loader *ld, JsonNode *n, const char *path, char **field)
{
  const char *s;
  if (!get_string_or_null (ld, n, path, &s))
    return FALSE;
  if (s && s[0] == '\0')
    return fail (ld, TW_MODEL_ERROR_FORMAT, path, "empty string (use null for none)");
  g_free (*field);
  *field = g_strdup (s);
  return TRUE;
}

static gboolean
load_recipe (loader *ld, tw_recipe *r, JsonNode *n)
{
  const char *path = "$.training";
  JsonObject *obj = get_object (ld, n, path);
  if (obj == NULL || !check_members (ld, obj, path, recipe_members))
    return FALSE;

  JsonNode *m;
  int64_t seed = 0;
  if ((m = member (ld, obj, path, "loss", FALSE))
      && !replace_string (ld, m, "$.training.loss", &r->loss))
    return FALSE;
  if ((m = member (ld, obj, path, "batch_size", FALSE))
      && !get_int_range (ld, m, "$.training.batch_size", 1, TW_MAX_BATCH, &r->batch_size))
    return FALSE;
  if ((m = member (ld, obj, path, "epochs", FALSE))
      && !get_int_min (ld, m, "$.training.epochs", 1, &r->epochs))
    return FALSE;
  if ((m = member (ld, obj, path, "seed", FALSE)))
    {
      if (!get_int_min (ld, m, "$.training.seed", 0, &seed))
        return FALSE;
      r->seed = (guint64) seed;
    }
  if ((m = member (ld, obj, path, "dataset", FALSE))
      && !replace_string (ld, m, "$.training.dataset", &r->dataset))
    return FALSE;
  if ((m = member (ld, obj, path, "validation_split", FALSE))
      && !get_number_range (ld, m, "$.training.validation_split", 0, FALSE, 1,
                            &r->validation_split))
    return FALSE;
  if ((m = member (ld, obj, path, "optimizer", FALSE)) && !load_optimizer (ld, &r->optimizer, m))
    return FALSE;
  if ((m = member (ld, obj, path, "schedule", FALSE)) && !load_schedule (ld, &r->schedule, m))
    return FALSE;
  return TRUE;
}

/* ---- Loading: the whole file ------------------------------------------- */

/* training.loss names the node training minimises: it must be a loss node of
 * the graph (an unknown op is left to inference to report). */
static gboolean
bind_loss (loader *ld, tw_model *model)
{
  const char *id = model->recipe.loss;
  if (id == NULL)
    return TRUE;
  const tw_node *n = tw_graph_find (model->graph, id);
  if (n == NULL)
    return fail (ld, TW_MODEL_ERROR_FORMAT, "$.training.loss", "no node \"%s\" in the graph", id);
  if (n->op && !(n->op->flags & TW_OP_LOSS))
    return fail (ld, TW_MODEL_ERROR_FORMAT, "$.training.loss",
                 "node \"%s\" is a %s, not a loss (cross_entropy, mse_loss, bce_with_logits, ...)",
                 id, n->op->name);
  tw_graph_set_loss (model->graph, id);
  return TRUE;
}

static tw_model *
load_model (loader *ld, JsonNode *root)
{
  JsonObject *obj = get_object (ld, root, "$");
  if (obj == NULL)
    return NULL;

  /* format and version first: a file of another kind or a newer version should
   * say so rather than complain about members it does not know. */
  const char *format = NULL;
  JsonNode *m = member (ld, obj, "$", "format", FALSE);
  if (m == NULL)
    {
      fail (ld, TW_MODEL_ERROR_FORMAT, "$", "missing member \"format\" (not a twb-model file)");
      return NULL;
    }
  if (!get_string (ld, m, "$.format", &format))
    return NULL;
  if (strcmp (format, "twb-model") != 0)
    {
      fail (ld, TW_MODEL_ERROR_FORMAT, "$.format", "expected \"twb-model\", got \"%s\"", format);
      return NULL;
    }

  int64_t version = 0;
  m = member (ld, obj, "$", "version", TRUE);
  if (m == NULL || !get_int (ld, m, "$.version", &version))
    return NULL;
  if (version > TW_MODEL_FORMAT_VERSION)
    {
      fail (ld, TW_MODEL_ERROR_VERSION, "$.version",
            "version %" G_GINT64_FORMAT " is newer than this build reads (%d)", version,
            TW_MODEL_FORMAT_VERSION);
      return NULL;
    }
  if (version < 1)
    {
      fail (ld, TW_MODEL_ERROR_FORMAT, "$.version", "version %" G_GINT64_FORMAT " is not valid",
            version);
      return NULL;
    }

  if (!check_members (ld, obj, "$", top_members))
    return NULL;

  const char *name = NULL;
  if ((m = member (ld, obj, "$", "name", FALSE)) && !get_string_or_null (ld, m, "$.name", &name))
    return NULL;

  g_autoptr (tw_model) model = tw_model_new (name);
  m = member (ld, obj, "$", "graph", TRUE);
  if (m == NULL || !load_graph (ld, model->graph, m))
    return NULL;
  if ((m = member (ld, obj, "$", "training", FALSE)) && !load_recipe (ld, &model->recipe, m))
    return NULL;
  if (!bind_loss (ld, model))
    return NULL;
  if ((m = member (ld, obj, "$", "editor", FALSE)))
    {
      if (get_object (ld, m, "$.editor") == NULL)
        return NULL;
      model->editor = json_node_copy (m);
    }
  return g_steal_pointer (&model);
}

tw_model *
tw_model_load_from_data (const char *data, gssize len, const char *filename, GError **error)
{
  g_return_val_if_fail (data != NULL || len == 0, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  loader ld = { filename ? filename : "<data>", error };
  gsize n = len < 0 ? strlen (data) : (gsize) len;
  /* Held to the rule of every JSON text read (engine/json-text.h): valid
   * UTF-8, nesting within TW_JSON_MAX_DEPTH, nothing after the top-level
   * value, integers within int64. */
  g_autoptr (GError) local = NULL;
  g_autoptr (JsonParser) parser = tw_json_parse (data ? data : "", n, ld.file, &local);
  if (parser == NULL)
    {
      g_set_error_literal (error, TW_MODEL_ERROR, TW_MODEL_ERROR_PARSE, local->message);
      return NULL;
    }
  JsonNode *root = json_parser_get_root (parser);
  if (root == NULL)
    {
      fail (&ld, TW_MODEL_ERROR_PARSE, NULL, "empty file (expected a JSON object)");
      return NULL;
    }
  return load_model (&ld, root);
}

tw_model *
tw_model_load (const char *path, GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);

  g_autofree char *display = g_filename_display_name (path);
  g_autofree char *data = NULL;
  gsize len;
  g_autoptr (GError) local = NULL;
  /* Regular files only (/dev/zero would never end), and a model is text:
   * TW_FILE_MAX_TEXT at most. */
  if (!tw_file_read_regular (path, TW_FILE_MAX_TEXT, &data, &len, &local))
    {
      g_set_error_literal (error, TW_MODEL_ERROR, TW_MODEL_ERROR_IO, local->message);
      return NULL;
    }
  return tw_model_load_from_data (data, (gssize) len, display, error);
}

/* ---- Saving ------------------------------------------------------------ */

/* Shortest text that reads back as the same double.  Floats always show a
 * '.' or an exponent so that an attribute of an unknown op stays a float;
 * non-finite values, which JSON cannot hold, are written as null. */
static void
append_double (GString *s, double v, gboolean keep_float)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  if (!isfinite (v))
    {
      g_string_append (s, "null");
      return;
    }
  for (int prec = 1; prec <= 17; prec++)
    {
      char format[8];
      g_snprintf (format, sizeof format, "%%.%dg", prec);
      g_ascii_formatd (buf, sizeof buf, format, v);
      if (g_ascii_strtod (buf, NULL) == v)
        break;
    }
  g_string_append (s, buf);
  if (keep_float && !strpbrk (buf, ".eE"))
    g_string_append (s, ".0");
}

static void
append_string (GString *s, const char *str)
{
  g_string_append_c (s, '"');
  for (const unsigned char *p = (const unsigned char *) str; *p; p++)
    {
      switch (*p)
        {
        case '"': g_string_append (s, "\\\""); break;
        case '\\': g_string_append (s, "\\\\"); break;
        case '\n': g_string_append (s, "\\n"); break;
        case '\r': g_string_append (s, "\\r"); break;
        case '\t': g_string_append (s, "\\t"); break;
        case '\b': g_string_append (s, "\\b"); break;
        case '\f': g_string_append (s, "\\f"); break;
        default:
          if (*p < 0x20)
            g_string_append_printf (s, "\\u%04x", *p);
          else
            g_string_append_c (s, (char) *p);
        }
    }
  g_string_append_c (s, '"');
}

static void
append_inline (GString *s, JsonNode *n)
{
  switch (JSON_NODE_TYPE (n))
    {
    case JSON_NODE_NULL:
      g_string_append (s, "null");
      break;
    case JSON_NODE_VALUE:
      {
        GType t = json_node_get_value_type (n);
        if (t == G_TYPE_STRING)
          append_string (s, json_node_get_string (n));
        else if (t == G_TYPE_BOOLEAN)
          g_string_append (s, json_node_get_boolean (n) ? "true" : "false");
        else if (t == G_TYPE_INT64)
          g_string_append_printf (s, "%" G_GINT64_FORMAT, json_node_get_int (n));
        else
          append_double (s, json_node_get_double (n), TRUE);
        break;
      }
    case JSON_NODE_ARRAY:
      {
        JsonArray *arr = json_node_get_array (n);
        g_string_append_c (s, '[');
        for (guint i = 0; i < json_array_get_length (arr); i++)
          {
            if (i)
              g_string_append (s, ", ");
            append_inline (s, json_array_get_element (arr, i));
          }
        g_string_append_c (s, ']');
        break;
      }
    case JSON_NODE_OBJECT:
      {
        JsonObject *obj = json_node_get_object (n);
        g_autoptr (GList) members = json_object_get_members (obj);
        if (members == NULL)
          {
            g_string_append (s, "{}");
            break;
          }
        g_string_append (s, "{ ");
        for (GList *l = members; l; l = l->next)
          {
            if (l != members)
              g_string_append (s, ", ");
            append_string (s, l->data);
            g_string_append (s, ": ");
            append_inline (s, json_object_get_member (obj, l->data));
          }
        g_string_append (s, " }");
        break;
      }
    }
}

/* Objects and arrays that fit in the rest of the line stay on it; others
 * get one member per line.  `col` is where n starts. */
static void
append_pretty (GString *s, JsonNode *n, int indent, int col)
{
  g_autoptr (GString) one = g_string_new (NULL);
  append_inline (one, n);
  if (col + (int) one->len <= LINE_WIDTH || JSON_NODE_HOLDS_VALUE (n) || JSON_NODE_HOLDS_NULL (n))
    {
      g_string_append_len (s, one->str, (gssize) one->len);
      return;
    }
  if (JSON_NODE_HOLDS_ARRAY (n))
    {
      JsonArray *arr = json_node_get_array (n);
      g_string_append (s, "[\n");
      for (guint i = 0; i < json_array_get_length (arr); i++)
        {
          g_string_append_printf (s, "%*s", indent + 2, "");
          append_pretty (s, json_array_get_element (arr, i), indent + 2, indent + 2);
          g_string_append (s, i + 1 < json_array_get_length (arr) ? ",\n" : "\n");
        }
      g_string_append_printf (s, "%*s]", indent, "");
    }
  else
    {
      JsonObject *obj = json_node_get_object (n);
      g_autoptr (GList) members = json_object_get_members (obj);
      g_string_append (s, "{\n");
      for (GList *l = members; l; l = l->next)
        {
          gsize start = s->len;
          g_string_append_printf (s, "%*s", indent + 2, "");
          append_string (s, l->data);
          g_string_append (s, ": ");
          append_pretty (s, json_object_get_member (obj, l->data), indent + 2,
                         (int) (s->len - start));
          g_string_append (s, l->next ? ",\n" : "\n");
        }
      g_string_append_printf (s, "%*s}", indent, "");
    }
}

/* Numbers of the recipe and of positions: integral values as integers. */
static void
set_number (JsonObject *obj, const char *name, double v)
{
  /* 2^53: above it not every integer is a double, and the int64 cast may overflow. */
  if (isfinite (v) && v == floor (v) && fabs (v) < 9007199254740992.0)
    json_object_set_int_member (obj, name, (int64_t) v);
  else
    json_object_set_double_member (obj, name, v);
}

static void
add_number_element (JsonArray *arr, double v)
{
  if (isfinite (v) && v == floor (v) && fabs (v) < 9007199254740992.0)
    json_array_add_int_element (arr, (int64_t) v);
  else
    json_array_add_double_element (arr, v);
}

static void
set_string_array (JsonObject *obj, const char *name, const char *const *strv, int n)
{
  JsonArray *arr = json_array_new ();
  for (int i = 0; n < 0 ? strv && strv[i] : i < n; i++)
    json_array_add_string_element (arr, strv[i]);
  json_object_set_array_member (obj, name, arr);
}

static JsonObject *
node_to_json (const tw_node *node)
{
  JsonObject *obj = json_object_new ();
  json_object_set_string_member (obj, "id", node->id);
  json_object_set_string_member (obj, "op", node->op_name);
  if (node->n_inputs > 0)
    set_string_array (obj, "inputs", (const char *const *) node->inputs, node->n_inputs);
  if (node->attrs && tw_attrs_count (node->attrs) > 0)
    json_object_set_member (obj, "attrs", tw_attrs_to_json (node->attrs));
  if (node->share)
    json_object_set_string_member (obj, "share", node->share);
  if (node->has_pos)
    {
      JsonArray *pos = json_array_new ();
      add_number_element (pos, node->x);
      add_number_element (pos, node->y);
      json_object_set_array_member (obj, "pos", pos);
    }
  return obj;
}

/* Every member the recipe sets differently from the defaults is written, and
 * the ones that matter for the chosen optimizer and schedule always are, so
 * that a file says what it does and a round trip is exact. */
static JsonObject *
recipe_to_json (const tw_recipe *r, const tw_graph *g)
{
  tw_recipe d;
  tw_recipe_init_defaults (&d);

  JsonObject *obj = json_object_new ();
  /* A loss renamed away in the editor is not written: the file would not load. */
  if (r->loss && tw_graph_find (g, r->loss))
    json_object_set_string_member (obj, "loss", r->loss);
  json_object_set_int_member (obj, "batch_size", r->batch_size);
  json_object_set_int_member (obj, "epochs", r->epochs);
  /* JSON integers are read as int64; larger seeds do not round-trip. */
  json_object_set_int_member (obj, "seed", (int64_t) MIN (r->seed, (guint64) G_MAXINT64));
  if (r->dataset)
    json_object_set_string_member (obj, "dataset", r->dataset);
  else if (d.dataset)
    json_object_set_null_member (obj, "dataset");
  set_number (obj, "validation_split", r->validation_split);

  const tw_optimizer_config *o = &r->optimizer, *od = &d.optimizer;
  gboolean sgd = o->type == TW_OPT_SGD;
  JsonObject *opt = json_object_new ();
  const char *type = tw_optimizer_type_name (o->type);
  json_object_set_string_member (opt, "type", type ? type : "sgd");
  set_number (opt, "lr", o->lr);
  if (sgd || o->momentum != od->momentum)
    set_number (opt, "momentum", o->momentum);
  if (sgd || o->nesterov != od->nesterov)
    json_object_set_boolean_member (opt, "nesterov", o->nesterov);
  set_number (opt, "weight_decay", o->weight_decay);
  if (!sgd || o->beta1 != od->beta1 || o->beta2 != od->beta2)
    {
      JsonArray *betas = json_array_new ();
      add_number_element (betas, o->beta1);
      add_number_element (betas, o->beta2);
      json_object_set_array_member (opt, "betas", betas);
    }
  if (!sgd || o->eps != od->eps)
    set_number (opt, "eps", o->eps);
  json_object_set_object_member (obj, "optimizer", opt);

  const tw_schedule_config *s = &r->schedule, *sd = &d.schedule;
  JsonObject *sched = json_object_new ();
  json_object_set_string_member (sched, "type", schedule_type_name (s->type));
  if (s->type == TW_SCHED_STEP || s->step_size != sd->step_size)
    json_object_set_int_member (sched, "step_size", s->step_size);
  if (s->type == TW_SCHED_STEP || s->gamma != sd->gamma)
    set_number (sched, "gamma", s->gamma);
  if (s->type == TW_SCHED_COSINE || s->t_max != sd->t_max)
    json_object_set_int_member (sched, "t_max", s->t_max);
  if (s->type == TW_SCHED_COSINE || s->min_lr != sd->min_lr)
    set_number (sched, "min_lr", s->min_lr);
  if (s->warmup_steps != sd->warmup_steps)
    json_object_set_int_member (sched, "warmup_steps", s->warmup_steps);
  json_object_set_object_member (obj, "schedule", sched);

  tw_recipe_clear (&d);
  return obj;
}

char *
tw_model_to_data (const tw_model *m, gsize *len)
{
  g_return_val_if_fail (m != NULL, NULL);

  g_autoptr (JsonObject) root = json_object_new ();
  json_object_set_string_member (root, "format", "twb-model");
  json_object_set_int_member (root, "version", TW_MODEL_FORMAT_VERSION);
  if (m->name)
    json_object_set_string_member (root, "name", m->name);

  JsonObject *graph = json_object_new ();
  JsonArray *nodes = json_array_new ();
  for (int i = 0; i < tw_graph_n_nodes (m->graph); i++)
    json_array_add_object_element (nodes, node_to_json (tw_graph_node (m->graph, i)));
  json_object_set_array_member (graph, "nodes", nodes);
  /* As marked: unmarked, the outputs follow the losses when the file is read. */
  set_string_array (graph, "outputs", tw_graph_marked_outputs (m->graph), -1);
  json_object_set_object_member (root, "graph", graph);
  json_object_set_object_member (root, "training", recipe_to_json (&m->recipe, m->graph));
  if (m->editor)
    json_object_set_member (root, "editor", json_node_copy (m->editor));

  g_autoptr (JsonNode) node = json_node_init_object (json_node_alloc (), root);
  GString *s = g_string_new (NULL);
  append_pretty (s, node, 0, 0);
  g_string_append_c (s, '\n');
  if (len)
    *len = s->len;
  return g_string_free (s, FALSE);
}

gboolean
tw_model_save (const tw_model *m, const char *path, GError **error)
{
  g_return_val_if_fail (m != NULL && path != NULL, FALSE);

  gsize len;
  g_autofree char *data = tw_model_to_data (m, &len);
  g_autoptr (GError) local = NULL;
  /* A crash leaves either the old file or the new one (engine/fileutil.h). */
  if (!tw_file_save (path, data, len, &local))
    {
      g_set_error_literal (error, TW_MODEL_ERROR, TW_MODEL_ERROR_IO, local->message);
      return FALSE;
    }
  return TRUE;
}
