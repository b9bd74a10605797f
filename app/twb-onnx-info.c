/* twb-onnx-info.c — `twb onnx-info FILE.onnx [--json]`: what an ONNX file
 * holds, read through the reader's checks (onnx/onnx-read.h): IR version,
 * producer, opsets, graph inputs and outputs with their shapes, nodes per
 * op type, initializers and their parameter total. */
#define G_LOG_DOMAIN "twb"

#include "app/twb-cli.h"
#include "onnx/onnx-read.h"

#include <json-glib/json-glib.h>
#include <string.h>

static void
usage_onnx_info (void)
{
  g_printerr ("usage: twb onnx-info FILE.onnx [--json]\n"
              "  IR version, producer, opsets, inputs and outputs with shapes, nodes per op\n"
              "  type, initializers and parameters; --json: the same as one JSON object\n");
}

static const char *
elem_type_name (int32_t t)
{
  const ProtobufCEnumValue *v
    = protobuf_c_enum_descriptor_get_value (&onnx__tensor_proto__data_type__descriptor, t);
  return v != NULL ? v->name : "UNDEFINED";
}

/* A value's tensor type, NULL when it is no tensor (sequence, map…). */
static const Onnx__TypeProto__Tensor *
value_tensor (const Onnx__ValueInfoProto *v)
{
  if (v->type == NULL || v->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
    return NULL;
  return v->type->tensor_type;
}

/* "FLOAT [batch, 3, 224, 224]": symbolic dims by name, unknown ones "?",
 * no shape at all "[...]". */
static char *
value_to_string (const Onnx__ValueInfoProto *v)
{
  const Onnx__TypeProto__Tensor *t = value_tensor (v);
  if (t == NULL)
    return g_strdup ("(not a tensor)");
  GString *s = g_string_new (elem_type_name (t->has_elem_type ? t->elem_type : 0));
  if (t->shape == NULL)
    {
      g_string_append (s, " [...]");
      return g_string_free (s, FALSE);
    }
  g_string_append (s, " [");
  for (size_t i = 0; i < t->shape->n_dim; i++)
    {
      const Onnx__TensorShapeProto__Dimension *d = t->shape->dim[i];
      if (i > 0)
        g_string_append (s, ", ");
      if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
        g_string_append_printf (s, "%" G_GINT64_FORMAT, (gint64) d->dim_value);
      else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
               && d->dim_param != NULL && d->dim_param[0] != '\0')
        g_string_append (s, d->dim_param);
      else
        g_string_append (s, "?");
    }
  g_string_append (s, "]");
  return g_string_free (s, FALSE);
}

static void
value_to_json (JsonBuilder *b, const Onnx__ValueInfoProto *v)
{
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "name");
  json_builder_add_string_value (b, v->name != NULL ? v->name : "");
  const Onnx__TypeProto__Tensor *t = value_tensor (v);
  json_builder_set_member_name (b, "type");
  if (t == NULL)
    json_builder_add_null_value (b);
  else
    json_builder_add_string_value (b, elem_type_name (t->has_elem_type ? t->elem_type : 0));
  /* dims: numbers, names (symbolic) or null (unknown); shape null when
   * the file gives none. */
  json_builder_set_member_name (b, "shape");
  if (t == NULL || t->shape == NULL)
    json_builder_add_null_value (b);
  else
    {
      json_builder_begin_array (b);
      for (size_t i = 0; i < t->shape->n_dim; i++)
        {
          const Onnx__TensorShapeProto__Dimension *d = t->shape->dim[i];
          if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
            json_builder_add_int_value (b, d->dim_value);
          else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
                   && d->dim_param != NULL && d->dim_param[0] != '\0')
            json_builder_add_string_value (b, d->dim_param);
          else
            json_builder_add_null_value (b);
        }
      json_builder_end_array (b);
    }
  json_builder_end_object (b);
}

typedef struct
{
  char *op;     /* "Conv", or "domain.Op" outside the default domain */
  guint count;
} op_count;

static int
op_count_cmp (gconstpointer a, gconstpointer b)
{
  const op_count *x = a, *y = b;
  if (x->count != y->count)
    return x->count > y->count ? -1 : 1;
  return strcmp (x->op, y->op);
}

static void
op_count_clear (gpointer p)
{
  g_free (((op_count *) p)->op);
}

/* Nodes of the main graph per op type, most frequent first. */
static GArray *
count_ops (const Onnx__GraphProto *g)
{
  g_autoptr (GHashTable) index = g_hash_table_new (g_str_hash, g_str_equal);
  GArray *ops = g_array_new (FALSE, FALSE, sizeof (op_count));
  g_array_set_clear_func (ops, op_count_clear);
  for (size_t i = 0; i < g->n_node; i++)
    {
      const Onnx__NodeProto *n = g->node[i];
      const char *domain = n->domain;
      gboolean plain = domain == NULL || domain[0] == '\0' || strcmp (domain, "ai.onnx") == 0;
      g_autofree char *op = plain ? g_strdup (n->op_type != NULL ? n->op_type : "?")
                                  : g_strdup_printf ("%s.%s", domain,
                                                     n->op_type != NULL ? n->op_type : "?");
      gpointer at;
      if (g_hash_table_lookup_extended (index, op, NULL, &at))
        {
          g_array_index (ops, op_count, GPOINTER_TO_UINT (at)).count++;
          continue;
        }
      op_count c = { g_steal_pointer (&op), 1 };
      g_array_append_val (ops, c);
      g_hash_table_insert (index, c.op, GUINT_TO_POINTER (ops->len - 1));
    }
  g_array_sort (ops, op_count_cmp);
  return ops;
}

/* Elements of an initializer: dims already checked by the reader. */
static gint64
tensor_numel (const Onnx__TensorProto *t)
{
  gint64 n = 1;
  for (size_t i = 0; i < t->n_dims; i++)
    n *= t->dims[i];
  return n;
}

/* Graph inputs that are not initializers (IR < 4 lists both). */
static GPtrArray *
real_inputs (const Onnx__GraphProto *g)
{
  g_autoptr (GHashTable) inits = g_hash_table_new (g_str_hash, g_str_equal);
  for (size_t i = 0; i < g->n_initializer; i++)
    if (g->initializer[i]->name != NULL)
      g_hash_table_add (inits, g->initializer[i]->name);
  GPtrArray *in = g_ptr_array_new ();
  for (size_t i = 0; i < g->n_input; i++)
    if (g->input[i]->name == NULL || !g_hash_table_contains (inits, g->input[i]->name))
      g_ptr_array_add (in, g->input[i]);
  return in;
}

static const char *
or_empty (const char *s)
{
  return s != NULL ? s : "";
}

static void
print_json (const char *path, const Onnx__ModelProto *m, GPtrArray *inputs, GArray *ops,
            gint64 params)
{
  const Onnx__GraphProto *g = m->graph;
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "file");
  json_builder_add_string_value (b, path);
  json_builder_set_member_name (b, "ir_version");
  json_builder_add_int_value (b, m->has_ir_version ? m->ir_version : 0);
  json_builder_set_member_name (b, "producer_name");
  json_builder_add_string_value (b, or_empty (m->producer_name));
  json_builder_set_member_name (b, "producer_version");
  json_builder_add_string_value (b, or_empty (m->producer_version));
  json_builder_set_member_name (b, "opset");
  json_builder_add_int_value (b, tw_onnx_model_opset (m));
  json_builder_set_member_name (b, "opsets");
  json_builder_begin_array (b);
  for (size_t i = 0; i < m->n_opset_import; i++)
    {
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "domain");
      json_builder_add_string_value (b, or_empty (m->opset_import[i]->domain));
      json_builder_set_member_name (b, "version");
      json_builder_add_int_value (b, m->opset_import[i]->version);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_set_member_name (b, "graph");
  json_builder_add_string_value (b, or_empty (g->name));
  json_builder_set_member_name (b, "inputs");
  json_builder_begin_array (b);
  for (guint i = 0; i < inputs->len; i++)
    value_to_json (b, inputs->pdata[i]);
  json_builder_end_array (b);
  json_builder_set_member_name (b, "outputs");
  json_builder_begin_array (b);
  for (size_t i = 0; i < g->n_output; i++)
    value_to_json (b, g->output[i]);
  json_builder_end_array (b);
  json_builder_set_member_name (b, "nodes");
  json_builder_add_int_value (b, (gint64) g->n_node);
  json_builder_set_member_name (b, "ops");
  json_builder_begin_object (b);
  for (guint i = 0; i < ops->len; i++)
    {
      const op_count *c = &g_array_index (ops, op_count, i);
      json_builder_set_member_name (b, c->op);
      json_builder_add_int_value (b, c->count);
    }
  json_builder_end_object (b);
  json_builder_set_member_name (b, "initializers");
  json_builder_add_int_value (b, (gint64) g->n_initializer);
  json_builder_set_member_name (b, "parameters");
  json_builder_add_int_value (b, params);
  json_builder_end_object (b);
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  g_autofree char *text = json_generator_to_data (gen, NULL);
  g_print ("%s\n", text);
}

static void
print_text (const char *path, const Onnx__ModelProto *m, GPtrArray *inputs, GArray *ops,
            gint64 params)
{
  const Onnx__GraphProto *g = m->graph;
  g_print ("%s\n", path);
  g_print ("ir version:   %" G_GINT64_FORMAT "\n", (gint64) (m->has_ir_version ? m->ir_version : 0));
  g_print ("producer:     %s%s%s\n", m->producer_name != NULL && m->producer_name[0] != '\0'
                                        ? m->producer_name : "(none)",
           m->producer_version != NULL && m->producer_version[0] != '\0' ? " " : "",
           or_empty (m->producer_version));
  g_print ("opset:        %" G_GINT64_FORMAT, (gint64) tw_onnx_model_opset (m));
  for (size_t i = 0; i < m->n_opset_import; i++)
    {
      const char *d = m->opset_import[i]->domain;
      if (d != NULL && d[0] != '\0' && strcmp (d, "ai.onnx") != 0)
        g_print (", %s %" G_GINT64_FORMAT, d, (gint64) m->opset_import[i]->version);
    }
  g_print ("\n");
  for (guint i = 0; i < inputs->len; i++)
    {
      const Onnx__ValueInfoProto *v = inputs->pdata[i];
      g_autofree char *s = value_to_string (v);
      g_print ("%s %s: %s\n", i == 0 ? "inputs:      " : "             ", or_empty (v->name), s);
    }
  for (size_t i = 0; i < g->n_output; i++)
    {
      const Onnx__ValueInfoProto *v = g->output[i];
      g_autofree char *s = value_to_string (v);
      g_print ("%s %s: %s\n", i == 0 ? "outputs:     " : "             ", or_empty (v->name), s);
    }
  g_print ("nodes:        %zu", g->n_node);
  for (guint i = 0; i < ops->len; i++)
    {
      const op_count *c = &g_array_index (ops, op_count, i);
      g_print ("%s%s %u", i == 0 ? " (" : ", ", c->op, c->count);
    }
  g_print ("%s\n", ops->len > 0 ? ")" : "");
  g_print ("initializers: %zu, %" G_GINT64_FORMAT " parameters\n", g->n_initializer, params);
}

int
twb_cmd_onnx_info (int argc, char **argv)
{
  gboolean json = FALSE;
  const char *path = NULL;
  for (int i = 1; i < argc; i++)
    {
      if (strcmp (argv[i], "--json") == 0)
        json = TRUE;
      else if (strcmp (argv[i], "--help") == 0 || strcmp (argv[i], "-h") == 0)
        {
          usage_onnx_info ();
          return 0;
        }
      else if (argv[i][0] == '-' && argv[i][1] != '\0')
        {
          g_printerr ("twb: onnx-info: unknown option '%s'\n", argv[i]);
          usage_onnx_info ();
          return 2;
        }
      else if (path == NULL)
        path = argv[i];
      else
        {
          g_printerr ("twb: onnx-info: one file at a time ('%s' and '%s')\n", path, argv[i]);
          return 2;
        }
    }
  if (path == NULL)
    {
      usage_onnx_info ();
      return 2;
    }
  g_autoptr (GError) error = NULL;
  Onnx__ModelProto *m = tw_onnx_read_model (path, &error);
  if (m == NULL)
    {
      twb_print_error (NULL, error);
      return 1;
    }
  g_autoptr (GPtrArray) inputs = real_inputs (m->graph);
  g_autoptr (GArray) ops = count_ops (m->graph);
  gint64 params = 0;
  for (size_t i = 0; i < m->graph->n_initializer; i++)
    params += tensor_numel (m->graph->initializer[i]);
  if (json)
    print_json (path, m, inputs, ops, params);
  else
    print_text (path, m, inputs, ops, params);
  onnx__model_proto__free_unpacked (m, NULL);
  return 0;
}
