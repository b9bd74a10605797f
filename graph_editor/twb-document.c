/* twb-document.c — the editable model: the object, files, edits with their
 * validation, selection and live checks.  The command stack is in
 * twb-document-undo.c, layout, blocks, clipboard and recovery in their own
 * files. */
#define G_LOG_DOMAIN "twb-document"

#include "graph_editor/twb-document-private.h"

#include <math.h>
#include <string.h>

G_DEFINE_QUARK (twb-document-error-quark, twb_document_error)

G_DEFINE_FINAL_TYPE (TwbDocument, twb_document, G_TYPE_OBJECT)

enum
{
  PROP_0,
  PROP_PATH,
  PROP_DIRTY,
  PROP_CAN_UNDO,
  PROP_CAN_REDO,
  PROP_TITLE,
  N_PROPS
};

enum
{
  SIGNAL_CHANGED,
  SIGNAL_SELECTION_CHANGED,
  N_SIGNALS
};

static GParamSpec *properties[N_PROPS];
static guint signals[N_SIGNALS];

static void
twb_document_finalize (GObject *object)
{
  TwbDocument *doc = TWB_DOCUMENT (object);
  twb_document_discard_recovery (doc);
  tw_model_free (doc->model);
  g_free (doc->path);
  g_free (doc->recovery_name);
  g_ptr_array_unref (doc->undo_stack);
  g_ptr_array_unref (doc->redo_stack);
  twb_command_free (doc->current);
  twb_command_free (doc->group);
  g_hash_table_unref (doc->selection);
  g_ptr_array_unref (doc->blocks);
  g_clear_pointer (&doc->block_of, g_hash_table_unref);
  g_ptr_array_unref (doc->changed_ids);
  twb_document_stages_invalidate (doc);
  G_OBJECT_CLASS (twb_document_parent_class)->finalize (object);
}

static void
twb_document_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  TwbDocument *doc = TWB_DOCUMENT (object);
  switch (prop_id)
    {
    case PROP_PATH:
      g_value_set_string (value, doc->path);
      break;
    case PROP_DIRTY:
      g_value_set_boolean (value, twb_document_get_dirty (doc));
      break;
    case PROP_CAN_UNDO:
      g_value_set_boolean (value, twb_document_can_undo (doc));
      break;
    case PROP_CAN_REDO:
      g_value_set_boolean (value, twb_document_can_redo (doc));
      break;
    case PROP_TITLE:
      g_value_take_string (value, twb_document_get_title (doc));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
twb_document_class_init (TwbDocumentClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  object_class->finalize = twb_document_finalize;
  object_class->get_property = twb_document_get_property;

  properties[PROP_PATH] = g_param_spec_string ("path", NULL, NULL, NULL,
                                               G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  properties[PROP_DIRTY] = g_param_spec_boolean ("dirty", NULL, NULL, FALSE,
                                                 G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  properties[PROP_CAN_UNDO] = g_param_spec_boolean ("can-undo", NULL, NULL, FALSE,
                                                    G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  properties[PROP_CAN_REDO] = g_param_spec_boolean ("can-redo", NULL, NULL, FALSE,
                                                    G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  properties[PROP_TITLE] = g_param_spec_string ("title", NULL, NULL, NULL,
                                                G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  /* "changed" (guint flags: TwbChangeFlags) */
  signals[SIGNAL_CHANGED] = g_signal_new ("changed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                          0, NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_UINT);
  signals[SIGNAL_SELECTION_CHANGED] = g_signal_new ("selection-changed",
                                                    G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                                    0, NULL, NULL, NULL, G_TYPE_NONE, 0);
}

static void
twb_document_init (TwbDocument *doc)
{
  doc->undo_stack = g_ptr_array_new_with_free_func ((GDestroyNotify) twb_command_free);
  doc->redo_stack = g_ptr_array_new_with_free_func ((GDestroyNotify) twb_command_free);
  doc->selection = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  doc->blocks = g_ptr_array_new_with_free_func ((GDestroyNotify) twb_block_free);
  doc->changed_ids = g_ptr_array_new_with_free_func (g_free);
  doc->recovery_name = g_strdup_printf ("doc-%08x%08x.json", g_random_int (), g_random_int ());
  twb_document_set_view (doc, NULL);
}

static void
infer_full (TwbDocument *doc)
{
  gint64 t0 = g_get_monotonic_time ();
  tw_graph_infer (doc->model->graph);
  doc->last_infer_us = (double) (g_get_monotonic_time () - t0);
}

TwbDocument *
twb_document_new_for_model_in_view (tw_model *model, const tw_layout_view *view)
{
  g_return_val_if_fail (model != NULL, NULL);
  TwbDocument *doc = g_object_new (TWB_TYPE_DOCUMENT, NULL);
  doc->model = model;
  twb_document_set_view (doc, view);
  twb_document_blocks_load (doc);
  twb_document_place_unpositioned (doc);
  infer_full (doc);
  return doc;
}

TwbDocument *
twb_document_new_for_model (tw_model *model)
{
  return twb_document_new_for_model_in_view (model, NULL);
}

TwbDocument *
twb_document_new (void)
{
  return twb_document_new_for_model (tw_model_new (NULL));
}

TwbDocument *
twb_document_new_from_file_in_view (const char *path, const tw_layout_view *view,
                                    GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);
  g_autoptr (GError) local = NULL;
  tw_model *m = tw_model_load (path, &local);
  if (m == NULL)
    {
      g_set_error_literal (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_IO, local->message);
      return NULL;
    }
  TwbDocument *doc = twb_document_new_for_model_in_view (m, view);
  doc->path = g_strdup (path);
  return doc;
}

TwbDocument *
twb_document_new_from_file (const char *path, GError **error)
{
  return twb_document_new_from_file_in_view (path, NULL, error);
}

tw_model *
twb_document_get_model (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), NULL);
  return doc->model;
}

tw_graph *
twb_document_get_graph (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), NULL);
  return doc->model->graph;
}

const char *
twb_document_get_path (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), NULL);
  return doc->path;
}

static guint64
top_serial (TwbDocument *doc)
{
  if (doc->undo_stack->len == 0)
    return 0;
  return ((TwbCommand *) g_ptr_array_index (doc->undo_stack, doc->undo_stack->len - 1))->serial;
}

gboolean
twb_document_get_dirty (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  return top_serial (doc) != doc->saved_serial;
}

char *
twb_document_get_title (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), NULL);
  if (doc->path == NULL)
    /* Never saved: the model's own name (an imported file's), else Untitled. */
    return g_strdup (doc->model->name && doc->model->name[0] ? doc->model->name : "Untitled");
  g_autofree char *base = g_path_get_basename (doc->path);
  return g_filename_display_name (base);
}

void
twb_document_finish (TwbDocument *doc, guint flags)
{
  flags |= doc->pending_flags;
  doc->pending_flags = 0;
  if (doc->needs_infer)
    {
      g_ptr_array_add (doc->changed_ids, NULL);
      gint64 t0 = g_get_monotonic_time ();
      tw_graph_infer_from (doc->model->graph, (const char *const *) doc->changed_ids->pdata);
      doc->last_infer_us = (double) (g_get_monotonic_time () - t0);
      g_ptr_array_set_size (doc->changed_ids, 0);
      doc->needs_infer = FALSE;
      flags |= TWB_CHANGE_SHAPES;
    }
  gboolean dirty = twb_document_get_dirty (doc);
  gboolean can_undo = twb_document_can_undo (doc), can_redo = twb_document_can_redo (doc);
  if (flags & (TWB_CHANGE_STRUCTURE | TWB_CHANGE_ATTRS | TWB_CHANGE_SHAPES | TWB_CHANGE_FILE))
    twb_document_stages_invalidate (doc);
  if (flags)
    g_signal_emit (doc, signals[SIGNAL_CHANGED], 0, flags);
  if (dirty != doc->n_dirty)
    {
      doc->n_dirty = dirty;
      g_object_notify_by_pspec (G_OBJECT (doc), properties[PROP_DIRTY]);
    }
  if (can_undo != doc->n_can_undo)
    {
      doc->n_can_undo = can_undo;
      g_object_notify_by_pspec (G_OBJECT (doc), properties[PROP_CAN_UNDO]);
    }
  if (can_redo != doc->n_can_redo)
    {
      doc->n_can_redo = can_redo;
      g_object_notify_by_pspec (G_OBJECT (doc), properties[PROP_CAN_REDO]);
    }
}

/* ---- Files ------------------------------------------------------------- */

char *
twb_document_to_data (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), NULL);
  twb_document_blocks_store (doc);
  return tw_model_to_data (doc->model, NULL);
}

gboolean
twb_document_save (TwbDocument *doc, const char *path, GError **error)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  g_return_val_if_fail (path != NULL, FALSE);
  g_autoptr (GError) local = NULL;
  twb_document_blocks_store (doc);
  if (!tw_model_save (doc->model, path, &local))
    {
      g_set_error_literal (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_IO, local->message);
      return FALSE;
    }
  twb_document_discard_recovery (doc);
  gboolean path_changed = g_strcmp0 (doc->path, path) != 0;
  if (path_changed)
    {
      g_free (doc->path);
      doc->path = g_strdup (path);
    }
  doc->saved_serial = top_serial (doc);
  twb_document_finish (doc, TWB_CHANGE_FILE);
  if (path_changed)
    {
      g_object_notify_by_pspec (G_OBJECT (doc), properties[PROP_PATH]);
      g_object_notify_by_pspec (G_OBJECT (doc), properties[PROP_TITLE]);
    }
  return TRUE;
}

/* ---- Helpers for edits --------------------------------------------------- */

static tw_node *
find_node (TwbDocument *doc, const char *id, GError **error)
{
  tw_node *n = id ? tw_graph_find (doc->model->graph, id) : NULL;
  if (n == NULL)
    g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_NO_SUCH_NODE, "no node '%s'",
                 id ? id : "(null)");
  return n;
}

static gboolean
check_id (TwbDocument *doc, const char *id, GError **error)
{
  if (id == NULL || *id == '\0')
    {
      g_set_error_literal (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ID,
                           "a node id may not be empty");
      return FALSE;
    }
  if (strchr (id, ':'))
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ID,
                   "'%s': a node id may not contain ':' (it separates the output index)", id);
      return FALSE;
    }
  if (!g_utf8_validate (id, -1, NULL))
    {
      g_set_error_literal (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ID,
                           "a node id must be valid UTF-8");
      return FALSE;
    }
  if (tw_graph_find (doc->model->graph, id))
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ID,
                   "there is already a node '%s'", id);
      return FALSE;
    }
  return TRUE;
}

/* Ids some node refers to (inputs, shares, outputs) without a node of that
 * name: a fresh id must not silently connect to them. */
static GHashTable *
referenced_ids (TwbDocument *doc)
{
  tw_graph *g = doc->model->graph;
  GHashTable *set = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (int i = 0; i < tw_graph_n_nodes (g); i++)
    {
      tw_node *n = tw_graph_node (g, i);
      for (int k = 0; k < n->n_inputs; k++)
        {
          char *id = NULL;
          int out;
          if (tw_ref_parse (n->inputs[k], &id, &out))
            g_hash_table_add (set, id);
        }
      if (n->share)
        g_hash_table_add (set, g_strdup (n->share));
    }
  for (const char *const *o = tw_graph_marked_outputs (g); *o; o++)
    {
      char *id = NULL;
      int out;
      if (tw_ref_parse (*o, &id, &out))
        g_hash_table_add (set, id);
    }
  return set;
}

GHashTable *
twb_document_referenced_ids (TwbDocument *doc)
{
  return referenced_ids (doc);
}

char *
twb_document_fresh_id (TwbDocument *doc, const char *base, gboolean from_op, GHashTable *taken,
                       GHashTable *refs_in)
{
  tw_graph *g = doc->model->graph;
  g_autoptr (GHashTable) own = refs_in ? NULL : referenced_ids (doc);
  GHashTable *refs = refs_in ? refs_in : own;
  if (!from_op && !tw_graph_find (g, base) && !g_hash_table_contains (refs, base)
      && !(taken && g_hash_table_contains (taken, base)))
    return g_strdup (base);
  for (int k = from_op ? 1 : 2;; k++)
    {
      char *id = from_op ? g_strdup_printf ("%s%d", base, k) : g_strdup_printf ("%s_%d", base, k);
      if (!tw_graph_find (g, id) && !g_hash_table_contains (refs, id)
          && !(taken && g_hash_table_contains (taken, id)))
        return id;
      g_free (id);
    }
}

static void
selection_changed (TwbDocument *doc)
{
  g_signal_emit (doc, signals[SIGNAL_SELECTION_CHANGED], 0);
}

/* ---- Edits --------------------------------------------------------------- */

const char *
twb_document_add_node (TwbDocument *doc, const char *op, const char *id, double x, double y,
                       GError **error)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), NULL);
  const tw_op_def *def = op ? tw_op_lookup (op) : NULL;
  if (def == NULL || (def->flags & TW_OP_INTERNAL))
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_UNKNOWN_OP,
                   "'%s' is not an op that can be placed", op ? op : "(null)");
      return NULL;
    }
  g_autofree char *fresh = NULL;
  if (id == NULL)
    id = fresh = twb_document_fresh_id (doc, op, TRUE, NULL, NULL);
  else if (!check_id (doc, id, error))
    return NULL;

  TwbNodeSnap snap = { (char *) id, (char *) op, NULL, (char *[]) { NULL }, NULL, TRUE, x, y };
  g_autofree char *label = g_strdup_printf ("Add %s", op);
  int index = tw_graph_n_nodes (doc->model->graph);
  twb_document_edit_begin (doc, label);
  twb_document_prim_insert (doc, index, &snap);
  twb_document_edit_end (doc);
  return tw_graph_node (doc->model->graph, index)->id;
}

static int
cmp_int_desc (gconstpointer a, gconstpointer b)
{
  return *(const int *) b - *(const int *) a;
}

/* inputs of n with references to ids in `gone` removed where they trail
 * (a port in the middle keeps its reference: a model file has no way to
 * leave it empty, and inference names the missing node). */
static char **
inputs_without (const tw_node *n, GHashTable *gone, gboolean *changed)
{
  int keep = n->n_inputs;
  while (keep > 0)
    {
      g_autofree char *id = NULL;
      int out;
      if (!tw_ref_parse (n->inputs[keep - 1], &id, &out) || !g_hash_table_contains (gone, id))
        break;
      keep--;
    }
  *changed = keep != n->n_inputs;
  char **v = g_new0 (char *, keep + 1);
  for (int k = 0; k < keep; k++)
    v[k] = g_strdup (n->inputs[k]);
  return v;
}

gboolean
twb_document_remove_nodes (TwbDocument *doc, const char *const *ids, GError **error)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  tw_graph *g = doc->model->graph;
  g_autoptr (GHashTable) gone = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr (GArray) idx = g_array_new (FALSE, FALSE, sizeof (int));
  for (int i = 0; ids && ids[i]; i++)
    {
      int k = tw_graph_index_of (g, ids[i]);
      if (k < 0)
        {
          find_node (doc, ids[i], error);
          return FALSE;
        }
      if (g_hash_table_contains (gone, ids[i]))
        continue;
      g_hash_table_add (gone, (gpointer) tw_graph_node (g, k)->id);
      g_array_append_val (idx, k);
    }
  if (idx->len == 0)
    return TRUE;
  g_array_sort (idx, cmp_int_desc);

  g_autofree char *label = idx->len == 1 ? g_strdup_printf ("Delete %s", ids[0])
                                         : g_strdup_printf ("Delete %u nodes", idx->len);
  twb_document_edit_begin (doc, label);
  /* Consumers first, while indices are those of now. */
  for (int i = 0; i < tw_graph_n_nodes (g); i++)
    {
      tw_node *n = tw_graph_node (g, i);
      if (g_hash_table_contains (gone, n->id))
        continue;
      gboolean changed;
      char **inputs = inputs_without (n, gone, &changed);
      if (changed)
        {
          TwbNodeSnap *s = twb_node_snap_new (n);
          g_strfreev (s->inputs);
          s->inputs = inputs;
          twb_document_prim_replace (doc, i, s);
          twb_node_snap_free (s);
        }
      else
        g_strfreev (inputs);
    }
  GPtrArray *blocks = twb_document_blocks_without (doc, gone);
  if (blocks)
    twb_document_prim_blocks (doc, blocks);
  twb_document_drop_outputs_of (doc, gone);
  gboolean was_selected = FALSE;
  for (guint i = 0; i < idx->len; i++)
    {
      int k = g_array_index (idx, int, i);
      was_selected |= g_hash_table_contains (doc->selection, tw_graph_node (g, k)->id);
      twb_document_prim_remove (doc, k);
    }
  twb_document_edit_end (doc);
  if (was_selected)
    selection_changed (doc);
  return TRUE;
}

/* Is there a path of edges from `from` to `to`?  If so, it is written into
 * path as "a → b → c". */
static gboolean
reaches (tw_graph *g, int from, int to, GString *path)
{
  int n = tw_graph_n_nodes (g);
  g_autofree int *parent = g_new (int, n);
  for (int i = 0; i < n; i++)
    parent[i] = -2;
  /* Walk upstream from `to` looking for `from`: parent[] points downstream. */
  g_autoptr (GArray) stack = g_array_new (FALSE, FALSE, sizeof (int));
  g_array_append_val (stack, to);
  parent[to] = -1;
  while (stack->len)
    {
      int i = g_array_index (stack, int, stack->len - 1);
      g_array_set_size (stack, stack->len - 1);
      if (i == from)
        {
          for (int k = from; k >= 0; k = parent[k])
            g_string_append_printf (path, "%s%s", path->len ? " → " : "",
                                    tw_graph_node (g, k)->id);
          return TRUE;
        }
      tw_node *nd = tw_graph_node (g, i);
      for (int k = 0; k < nd->n_inputs; k++)
        {
          tw_port p = tw_graph_resolve (g, nd->inputs[k]);
          if (p.node >= 0 && parent[p.node] == -2)
            {
              parent[p.node] = i;
              g_array_append_val (stack, p.node);
            }
        }
    }
  return FALSE;
}

static const char *
port_name (const tw_op_def *def, int port)
{
  if (def->input_names == NULL)
    return NULL;
  for (int k = 0; def->input_names[k]; k++)
    if (k == port)
      return def->input_names[k];
  return NULL;
}

gboolean
twb_document_can_connect (TwbDocument *doc, const char *from, const char *to, int port,
                          GError **error)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  tw_graph *g = doc->model->graph;
  g_autofree char *src_id = NULL;
  int out = 0;
  if (from == NULL || !tw_ref_parse (from, &src_id, &out))
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_EDGE,
                   "'%s' is not an output (expected \"node\" or \"node:output\")",
                   from ? from : "(null)");
      return FALSE;
    }
  tw_node *src = find_node (doc, src_id, error);
  tw_node *dst = src ? find_node (doc, to, error) : NULL;
  if (dst == NULL)
    return FALSE;
  if (src == dst)
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_EDGE,
                   "cannot connect %s to itself", dst->id);
      return FALSE;
    }
  int n_out = src->op ? (src->n_outputs > 0 ? src->n_outputs : src->op->n_outputs) : 0;
  if (src->op && n_out > 0 && out >= n_out)
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_EDGE,
                   "%s has %d output%s; there is no output %d", src->id, n_out,
                   n_out == 1 ? "" : "s", out);
      return FALSE;
    }
  const tw_op_def *def = dst->op;
  if (def == NULL)
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_EDGE,
                   "%s has an unknown op '%s'; its inputs are unknown", dst->id, dst->op_name);
      return FALSE;
    }
  if (def->flags & TW_OP_SOURCE)
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_EDGE,
                   "%s is a graph input (%s): it takes no inputs", dst->id, def->name);
      return FALSE;
    }
  int limit = def->max_inputs >= 0 ? def->max_inputs : MIN (dst->n_inputs + 1, TW_MAX_INPUTS);
  if (port < 0 || port >= limit)
    {
      if (def->max_inputs >= 0)
        g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_EDGE,
                     "%s (%s) has %d input port%s; there is no port %d", dst->id, def->name,
                     def->max_inputs, def->max_inputs == 1 ? "" : "s", port);
      else
        g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_EDGE,
                     "%s (%s) has %d inputs; connect to ports 0 to %d", dst->id, def->name,
                     dst->n_inputs, limit - 1);
      return FALSE;
    }
  if (port > dst->n_inputs)
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_EDGE,
                   "connect port %d of %s first: a model file cannot leave a port before "
                   "another one empty", dst->n_inputs, dst->id);
      return FALSE;
    }
  g_autoptr (GString) path = g_string_new (NULL);
  if (reaches (g, tw_graph_index_of (g, dst->id), tw_graph_index_of (g, src->id), path))
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_EDGE,
                   "connecting %s to %s would form a cycle: %s → %s", src->id, dst->id,
                   path->str, dst->id);
      return FALSE;
    }
  /* Class labels and embedding indices are integers: a float output cannot
   * be one, whatever its shape. */
  const char *name = port_name (def, port);
  if (name && (strcmp (name, "labels") == 0 || strcmp (name, "indices") == 0) && src->valid
      && src->out_info && out < src->n_outputs && tw_dtype_is_float (src->out_info[out].dtype))
    {
      g_autofree char *t = tw_tinfo_to_string (&src->out_info[out]);
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_EDGE,
                   "port %s of %s takes integer %s; %s gives %s", name, dst->id, name,
                   from, t);
      return FALSE;
    }
  return TRUE;
}

static void
replace_inputs (TwbDocument *doc, tw_node *n, char **inputs)
{
  TwbNodeSnap *s = twb_node_snap_new (n);
  g_strfreev (s->inputs);
  s->inputs = inputs;
  twb_document_prim_replace (doc, tw_graph_index_of (doc->model->graph, n->id), s);
  twb_node_snap_free (s);
}

gboolean
twb_document_connect (TwbDocument *doc, const char *from, const char *to, int port,
                      GError **error)
{
  if (!twb_document_can_connect (doc, from, to, port, error))
    return FALSE;
  tw_node *dst = tw_graph_find (doc->model->graph, to);
  if (port < dst->n_inputs && strcmp (dst->inputs[port], from) == 0)
    return TRUE;
  char **inputs = g_new0 (char *, MAX (dst->n_inputs, port + 1) + 1);
  for (int k = 0; k < dst->n_inputs; k++)
    inputs[k] = g_strdup (dst->inputs[k]);
  g_free (inputs[port]);
  inputs[port] = g_strdup (from);
  g_autofree char *label = g_strdup_printf ("Connect %s to %s", from, to);
  twb_document_edit_begin (doc, label);
  replace_inputs (doc, dst, inputs);
  twb_document_edit_end (doc);
  return TRUE;
}

gboolean
twb_document_disconnect (TwbDocument *doc, const char *to, int port, GError **error)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  tw_node *dst = find_node (doc, to, error);
  if (dst == NULL)
    return FALSE;
  if (port < 0 || port >= dst->n_inputs)
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_EDGE,
                   "port %d of %s is not connected", port, to);
      return FALSE;
    }
  if (dst->inputs[port][0] == '\0')
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_EDGE,
                   "port %d of %s is not connected", port, to);
      return FALSE;
    }
  /* A port in the middle is left empty ("" in the file: shape inference
   * reports it); trailing empty ports are dropped. */
  int n = dst->n_inputs;
  char **inputs = g_new0 (char *, n + 1);
  for (int k = 0; k < n; k++)
    inputs[k] = g_strdup (k == port ? "" : dst->inputs[k]);
  while (n > 0 && inputs[n - 1][0] == '\0')
    g_clear_pointer (&inputs[--n], g_free);
  g_autofree char *label = g_strdup_printf ("Disconnect %s", to);
  twb_document_edit_begin (doc, label);
  replace_inputs (doc, dst, inputs);
  twb_document_edit_end (doc);
  return TRUE;
}

const char *
twb_document_get_input (TwbDocument *doc, const char *id, int port)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), NULL);
  tw_node *n = id ? tw_graph_find (doc->model->graph, id) : NULL;
  if (n == NULL || port < 0 || port >= n->n_inputs || n->inputs[port] == NULL
      || n->inputs[port][0] == '\0')
    return NULL;
  return n->inputs[port];
}

static gboolean
check_port_free (TwbDocument *doc, const char *to, int port, GError **error)
{
  const char *taken = twb_document_get_input (doc, to, port);
  if (taken == NULL)
    return TRUE;
  tw_node *dst = tw_graph_find (doc->model->graph, to);
  const char *name = dst->op ? port_name (dst->op, port) : NULL;
  g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_EDGE,
               "input %d%s%s%s of %s is taken by %s: delete that edge or drag it off first",
               port, name ? " (" : "", name ? name : "", name ? ")" : "", to, taken);
  return FALSE;
}

gboolean
twb_document_connect_free (TwbDocument *doc, const char *from, const char *to, int port,
                           GError **error)
{
  if (!twb_document_can_connect (doc, from, to, port, error))
    return FALSE;
  if (!check_port_free (doc, to, port, error))
    return FALSE;
  return twb_document_connect (doc, from, to, port, error);
}

gboolean
twb_document_move_edge (TwbDocument *doc, const char *to, int port, const char *new_to,
                        int new_port, GError **error)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  const char *src = twb_document_get_input (doc, to, port);
  if (src == NULL)
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_EDGE,
                   "port %d of %s is not connected", port, to ? to : "(null)");
      return FALSE;
    }
  if (new_to && strcmp (new_to, to) == 0 && new_port == port)
    return TRUE;
  g_autofree char *from = g_strdup (src);
  if (!twb_document_can_connect (doc, from, new_to, new_port, error)
      || !check_port_free (doc, new_to, new_port, error))
    return FALSE;
  /* Connect first: disconnecting first could drop a trailing port the new
   * edge's port number counts on. */
  g_autofree char *label = g_strdup_printf ("Move edge %s to %s", from, new_to);
  twb_document_begin_group (doc, label);
  gboolean connected = twb_document_connect (doc, from, new_to, new_port, error);
  gboolean ok = connected && twb_document_disconnect (doc, to, port, error);
  twb_document_end_group (doc);
  if (connected && !ok)
    twb_document_undo (doc);    /* the group: nothing changes */
  return ok;
}

static const tw_attr_spec *
attr_spec (const tw_op_def *def, const char *name)
{
  for (const tw_attr_spec *s = def->attrs; s && s->name; s++)
    if (strcmp (s->name, name) == 0)
      return s;
  return NULL;
}

typedef tw_attrs tw_attrs_bag;
G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_attrs_bag, tw_attrs_free)

static void
stand_in (tw_attrs *a, const tw_attr_spec *sp)
{
  switch (sp->type)
    {
    case TW_ATTR_INT:
      tw_attrs_set_int (a, sp->name, 1);
      break;
    case TW_ATTR_FLOAT:
      tw_attrs_set_float (a, sp->name, 1.0);
      break;
    case TW_ATTR_BOOL:
      tw_attrs_set_bool (a, sp->name, FALSE);
      break;
    case TW_ATTR_STRING:
      tw_attrs_set_string (a, sp->name, sp->choices ? sp->choices[0] : "x");
      break;
    case TW_ATTR_INTS:
      tw_attrs_set_ints (a, sp->name, 1, (int64_t[]) { 1 });
      break;
    case TW_ATTR_FLOATS:
      tw_attrs_set_floats (a, sp->name, 1, (double[]) { 1.0 });
      break;
    }
}

/* Check the node's attrs with `name` set to v (or removed when v is NULL)
 * against the schema; set them as one undo step. */
static gboolean
edit_attr (TwbDocument *doc, const char *id, const char *name, const tw_attr_value *v,
           GError **error)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  g_return_val_if_fail (name != NULL, FALSE);
  tw_node *n = find_node (doc, id, error);
  if (n == NULL)
    return FALSE;
  g_autoptr (GError) local = NULL;
  TwbNodeSnap *s = twb_node_snap_new (n);
  if (v)
    tw_attrs_set (s->attrs, name, v);
  else
    tw_attrs_remove (s->attrs, name);
  if (n->op)
    {
      if (attr_spec (n->op, name) == NULL && strcmp (name, "stage") != 0)
        {
          g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ATTR,
                       "%s (%s) has no attribute '%s'", id, n->op->name, name);
          twb_node_snap_free (s);
          return FALSE;
        }
      /* Other required attributes may still be missing (a node fresh from
       * the palette): stand-ins of the right type keep them from failing the
       * check, which is about this one. */
      g_autoptr (tw_attrs_bag) probe = tw_attrs_copy (s->attrs);
      for (const tw_attr_spec *sp = n->op->attrs; sp && sp->name; sp++)
        if (sp->required && strcmp (sp->name, name) != 0 && !tw_attrs_has (probe, sp->name))
          stand_in (probe, sp);
      tw_attrs *r = tw_op_resolve_attrs (n->op, probe, &local);
      if (r == NULL)
        {
          g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ATTR, "%s: %s", id,
                       local->message);
          twb_node_snap_free (s);
          return FALSE;
        }
      tw_attrs_free (r);
    }
  if (tw_attrs_equal (s->attrs, n->attrs))
    {
      twb_node_snap_free (s);
      return TRUE;
    }
  g_autofree char *label = g_strdup_printf ("Set %s of %s", name, id);
  twb_document_edit_begin (doc, label);
  twb_document_prim_replace (doc, tw_graph_index_of (doc->model->graph, id), s);
  twb_document_edit_end (doc);
  twb_node_snap_free (s);
  return TRUE;
}

gboolean
twb_document_set_attr (TwbDocument *doc, const char *id, const char *name,
                       const tw_attr_value *value, GError **error)
{
  g_return_val_if_fail (value != NULL, FALSE);
  return edit_attr (doc, id, name, value, error);
}

gboolean
twb_document_set_attr_int (TwbDocument *doc, const char *id, const char *name, int64_t v,
                           GError **error)
{
  tw_attr_value value = { .type = TW_ATTR_INT, .i = v };
  tw_node *n = find_node (doc, id, error);
  if (n == NULL)
    return FALSE;
  const tw_attr_spec *spec = n->op ? attr_spec (n->op, name) : NULL;
  if (spec && spec->type == TW_ATTR_FLOAT)
    value = (tw_attr_value) { .type = TW_ATTR_FLOAT, .f = (double) v };
  return edit_attr (doc, id, name, &value, error);
}

/* What a value of this type looks like, for errors. */
static const char *
attr_type_expected (tw_attr_type type)
{
  switch (type)
    {
    case TW_ATTR_INT:
      return "a whole number like 128";
    case TW_ATTR_FLOAT:
      return "a number like 0.1";
    case TW_ATTR_BOOL:
      return "true or false";
    case TW_ATTR_STRING:
      return "a word like mean";
    case TW_ATTR_INTS:
      return "whole numbers like 1, 28, 28";
    case TW_ATTR_FLOATS:
      return "numbers like 0.5, 0.5";
    }
  return "a valid value";
}

/* A list typed as a person writes it: "1, 28, 28", "1 28 28" or
 * "(1, 28, 28)" reads as the JSON list [1, 28, 28]; a single value, a
 * bracketed list or "[]" stays as typed.  Caller frees. */
static char *
list_as_json (const char *t)
{
  size_t n = strlen (t);
  if (n >= 2 && t[0] == '(' && t[n - 1] == ')')
    return g_strdup_printf ("[%.*s]", (int) (n - 2), t + 1);
  if (t[0] == '[')
    return g_strdup (t);
  g_auto (GStrv) parts = g_strsplit_set (t, ", \t", -1);
  g_autoptr (GPtrArray) items = g_ptr_array_new ();
  for (char **p = parts; *p; p++)
    if (**p)
      g_ptr_array_add (items, *p);
  if (items->len < 2)
    return g_strdup (t);
  g_ptr_array_add (items, NULL);
  g_autofree char *joined = g_strjoinv (", ", (char **) items->pdata);
  return g_strdup_printf ("[%s]", joined);
}

gboolean
twb_document_set_attr_text (TwbDocument *doc, const char *id, const char *name, const char *text,
                            GError **error)
{
  g_return_val_if_fail (text != NULL, FALSE);
  tw_node *n = find_node (doc, id, error);
  if (n == NULL)
    return FALSE;
  const tw_attr_spec *spec = n->op ? attr_spec (n->op, name) : NULL;
  /* "stage" belongs to every node (its pipeline stage, engine/attrs.c). */
  gboolean stage = spec == NULL && strcmp (name, "stage") == 0;
  if (n->op && spec == NULL && !stage)
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ATTR,
                   "%s (%s) has no attribute '%s'", id, n->op->name, name);
      return FALSE;
    }
  tw_attr_type type;
  const tw_attr_value *old = tw_attrs_lookup (n->attrs, name);
  if (stage)
    type = TW_ATTR_INT;
  else if (spec)
    type = spec->type;
  else if (old)
    type = old->type;
  else
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ATTR,
                   "%s: the type of '%s' is unknown (unknown op)", id, name);
      return FALSE;
    }
  /* Strings may be typed bare: mean rather than "mean". */
  g_autofree char *quoted = NULL;
  const char *t = g_strstrip (g_strdup (text));
  g_autofree char *owned = (char *) t;
  if (type == TW_ATTR_STRING && t[0] != '"')
    t = quoted = g_strdup_printf ("\"%s\"", t);
  else if (type == TW_ATTR_INTS || type == TW_ATTR_FLOATS)
    t = quoted = list_as_json (t);
  tw_attr_value v = { 0 };
  g_autoptr (GError) local = NULL;
  if (!tw_attr_value_parse (type, t, &v, &local))
    {
      /* The parser's own words ("<data>:1:4: Parse error: unexpected
       * identifier") mean nothing to someone typing a value: say what fits. */
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ATTR,
                   "%s.%s: expected %s, not '%s'", id, name, attr_type_expected (type), owned);
      return FALSE;
    }
  gboolean ok = edit_attr (doc, id, name, &v, error);
  tw_attr_value_clear (&v);
  return ok;
}

gboolean
twb_document_unset_attr (TwbDocument *doc, const char *id, const char *name, GError **error)
{
  tw_node *n = find_node (doc, id, error);
  if (n == NULL)
    return FALSE;
  if (!tw_attrs_has (n->attrs, name))
    return TRUE;
  return edit_attr (doc, id, name, NULL, error);
}

static char *
rename_ref (const char *ref, const char *old_id, const char *new_id)
{
  size_t l = strlen (old_id);
  if (strncmp (ref, old_id, l) != 0 || (ref[l] != '\0' && ref[l] != ':'))
    return NULL;
  return g_strconcat (new_id, ref + l, NULL);
}

gboolean
twb_document_rename_node (TwbDocument *doc, const char *id, const char *new_id, GError **error)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  tw_node *n = find_node (doc, id, error);
  if (n == NULL)
    return FALSE;
  if (new_id && strcmp (id, new_id) == 0)
    return TRUE;
  if (!check_id (doc, new_id, error))
    return FALSE;
  tw_graph *g = doc->model->graph;
  g_autofree char *old = g_strdup (id);
  g_autofree char *label = g_strdup_printf ("Rename %s to %s", old, new_id);
  twb_document_edit_begin (doc, label);
  for (int i = 0; i < tw_graph_n_nodes (g); i++)
    {
      tw_node *m = tw_graph_node (g, i);
      gboolean touched = m == n;
      TwbNodeSnap *s = twb_node_snap_new (m);
      for (int k = 0; s->inputs[k]; k++)
        {
          char *r = rename_ref (s->inputs[k], old, new_id);
          if (r)
            {
              g_free (s->inputs[k]);
              s->inputs[k] = r;
              touched = TRUE;
            }
        }
      if (s->share && strcmp (s->share, old) == 0)
        {
          g_free (s->share);
          s->share = g_strdup (new_id);
          touched = TRUE;
        }
      if (m == n)
        {
          g_free (s->id);
          s->id = g_strdup (new_id);
        }
      if (touched)
        twb_document_prim_replace (doc, i, s);
      twb_node_snap_free (s);
    }
  const char *const *outs = tw_graph_marked_outputs (g);
  g_autoptr (GPtrArray) nouts = g_ptr_array_new_with_free_func (g_free);
  gboolean outs_changed = FALSE;
  for (int k = 0; outs[k]; k++)
    {
      char *r = rename_ref (outs[k], old, new_id);
      outs_changed |= r != NULL;
      g_ptr_array_add (nouts, r ? r : g_strdup (outs[k]));
    }
  g_ptr_array_add (nouts, NULL);
  if (outs_changed)
    twb_document_prim_outputs (doc, (const char *const *) nouts->pdata);
  /* Blocks name their members. */
  gboolean in_block = FALSE;
  GPtrArray *blocks = twb_blocks_copy (doc->blocks);
  for (guint b = 0; b < blocks->len; b++)
    {
      TwbBlock *blk = g_ptr_array_index (blocks, b);
      for (int k = 0; blk->nodes[k]; k++)
        if (strcmp (blk->nodes[k], old) == 0)
          {
            g_free (blk->nodes[k]);
            blk->nodes[k] = g_strdup (new_id);
            in_block = TRUE;
          }
    }
  if (in_block)
    twb_document_prim_blocks (doc, blocks);
  else
    g_ptr_array_unref (blocks);
  /* The recipe names the loss it trains. */
  if (g_strcmp0 (doc->model->recipe.loss, old) == 0)
    {
      tw_recipe r;
      tw_recipe_copy (&r, &doc->model->recipe);
      g_free (r.loss);
      r.loss = g_strdup (new_id);
      twb_document_prim_recipe (doc, &r);
      tw_recipe_clear (&r);
    }
  gboolean selected = g_hash_table_remove (doc->selection, old);
  if (selected)
    g_hash_table_add (doc->selection, g_strdup (new_id));
  twb_document_edit_end (doc);
  return TRUE;
}

gboolean
twb_document_set_share (TwbDocument *doc, const char *id, const char *scope, GError **error)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  tw_node *n = find_node (doc, id, error);
  if (n == NULL)
    return FALSE;
  if (scope && *scope == '\0')
    scope = NULL;
  if (scope && strcmp (scope, id) == 0)
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ATTR,
                   "%s cannot share parameters with itself", id);
      return FALSE;
    }
  if (scope && strchr (scope, ':'))
    {
      g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ATTR,
                   "'%s' is not a node id", scope);
      return FALSE;
    }
  if (g_strcmp0 (scope, n->share) == 0)
    return TRUE;
  TwbNodeSnap *s = twb_node_snap_new (n);
  g_free (s->share);
  s->share = g_strdup (scope);
  g_autofree char *label = g_strdup_printf ("Share parameters of %s", id);
  twb_document_edit_begin (doc, label);
  twb_document_prim_replace (doc, tw_graph_index_of (doc->model->graph, id), s);
  twb_document_edit_end (doc);
  twb_node_snap_free (s);
  return TRUE;
}

void
twb_document_move_nodes (TwbDocument *doc, const char *const *ids, double dx, double dy,
                         gboolean merge)
{
  g_return_if_fail (TWB_IS_DOCUMENT (doc));
  tw_graph *g = doc->model->graph;
  if (ids == NULL || ids[0] == NULL)
    return;
  if (merge && twb_document_merge_move (doc, ids, dx, dy))
    return;
  twb_document_edit_begin (doc, "Move");
  for (int i = 0; ids[i]; i++)
    {
      int k = tw_graph_index_of (g, ids[i]);
      if (k < 0)
        continue;
      tw_node *n = tw_graph_node (g, k);
      twb_document_prim_pos (doc, k, n->x + dx, n->y + dy);
    }
  doc->current->move_ids = g_strdupv ((char **) ids);
  twb_document_edit_end (doc);
}

gboolean
twb_document_set_recipe (TwbDocument *doc, const tw_recipe *recipe, GError **error)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  g_return_val_if_fail (recipe != NULL, FALSE);
  /* The same limits the model file puts on them. */
  const char *bad = NULL;
  if (recipe->batch_size < 1)
    bad = "the batch size must be at least 1";
  else if (recipe->epochs < 1)
    bad = "the number of epochs must be at least 1";
  else if (!(recipe->optimizer.lr > 0) || !isfinite (recipe->optimizer.lr))
    bad = "the learning rate must be a positive number";
  else if (!(recipe->validation_split >= 0 && recipe->validation_split < 1))
    bad = "the validation split must be in [0, 1)";
  else if (recipe->optimizer.type > TW_OPT_ADAMW || recipe->schedule.type > TW_SCHED_COSINE)
    bad = "unknown optimizer or schedule";
  if (bad)
    {
      g_set_error_literal (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ATTR, bad);
      return FALSE;
    }
  twb_document_edit_begin (doc, "Change training settings");
  twb_document_prim_recipe (doc, recipe);
  twb_document_edit_end (doc);
  return TRUE;
}

void
twb_document_set_outputs (TwbDocument *doc, const char *const *refs)
{
  g_return_if_fail (TWB_IS_DOCUMENT (doc));
  const char *const *empty = (const char *const[]) { NULL };
  if (g_strv_equal (refs ? refs : empty, tw_graph_marked_outputs (doc->model->graph)))
    return;
  twb_document_edit_begin (doc, "Set outputs");
  twb_document_prim_outputs (doc, refs);
  twb_document_edit_end (doc);
}

/* ---- Selection ------------------------------------------------------------ */

void
twb_document_select (TwbDocument *doc, const char *const *ids, gboolean extend)
{
  g_return_if_fail (TWB_IS_DOCUMENT (doc));
  if (!extend)
    g_hash_table_remove_all (doc->selection);
  for (int i = 0; ids && ids[i]; i++)
    if (tw_graph_find (doc->model->graph, ids[i]))
      g_hash_table_add (doc->selection, g_strdup (ids[i]));
  selection_changed (doc);
}

void
twb_document_select_all (TwbDocument *doc)
{
  g_return_if_fail (TWB_IS_DOCUMENT (doc));
  tw_graph *g = doc->model->graph;
  for (int i = 0; i < tw_graph_n_nodes (g); i++)
    g_hash_table_add (doc->selection, g_strdup (tw_graph_node (g, i)->id));
  selection_changed (doc);
}

void
twb_document_clear_selection (TwbDocument *doc)
{
  g_return_if_fail (TWB_IS_DOCUMENT (doc));
  if (g_hash_table_size (doc->selection) == 0)
    return;
  g_hash_table_remove_all (doc->selection);
  selection_changed (doc);
}

gboolean
twb_document_is_selected (TwbDocument *doc, const char *id)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), FALSE);
  return id && g_hash_table_contains (doc->selection, id);
}

char **
twb_document_get_selection (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), NULL);
  tw_graph *g = doc->model->graph;
  GPtrArray *out = g_ptr_array_new ();
  if (g_hash_table_size (doc->selection) > 0)
    for (int i = 0; i < tw_graph_n_nodes (g); i++)
      {
        const char *id = tw_graph_node (g, i)->id;
        if (g_hash_table_contains (doc->selection, id))
          g_ptr_array_add (out, g_strdup (id));
      }
  g_ptr_array_add (out, NULL);
  return (char **) g_ptr_array_free (out, FALSE);
}

void
twb_document_emit_selection_changed (TwbDocument *doc)
{
  selection_changed (doc);
}

/* ---- Live checks ----------------------------------------------------------- */

const GArray *
twb_document_get_diagnostics (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), NULL);
  return tw_graph_diagnostics (doc->model->graph);
}

int64_t
twb_document_param_count (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), 0);
  return tw_graph_param_count (doc->model->graph);
}

double
twb_document_flops (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), 0);
  return tw_graph_flops (doc->model->graph);
}

double
twb_document_last_infer_us (TwbDocument *doc)
{
  g_return_val_if_fail (TWB_IS_DOCUMENT (doc), 0);
  return doc->last_infer_us;
}
