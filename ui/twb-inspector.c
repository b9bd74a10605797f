/* twb-inspector.c — attributes of the selected node; the training recipe. */
#define G_LOG_DOMAIN "twb-inspector"

#include "ui/twb-inspector.h"
#include "ui/twb-focus.h"

#include "engine/data.h"
#include "engine/train.h"

#include "graph_editor/twb-graph-scene.h"

#include <string.h>

struct _TwbInspector
{
  GtkWidget parent_instance;
  GtkWidget *box;
  GtkWidget *stack;
  GtkWidget *node_page;       /* GtkScrolledWindow */
  GtkWidget *node_box;        /* rebuilt per node */
  GtkWidget *node_error;      /* the node's shape error */
  GtkWidget *node_info;       /* shape, params, FLOPs */
  GtkWidget *first_field;
  GHashTable *attr_errors;    /* attr name → GtkLabel */
  GHashTable *attr_widgets;   /* attr name → widget */
  GtkWidget *recipe_grid;
  GHashTable *recipe_widgets; /* field → widget */
  GSimpleActionGroup *actions; /* "inspector": set-dataset(s), choose-dataset */
  GtkWidget *dataset_error;   /* the line under the dataset */
  char *dataset_message;      /* its text, NULL when the value was taken */

  TwbDocument *doc;
  gulong changed_id, selection_id;
  char *node_id;
  char *block_name;           /* the collapsed block the node page shows, or NULL */
  gboolean building;          /* widgets are being filled: ignore their signals */
  gboolean applying;          /* our own edit: don't rebuild under the user's fingers */
  gboolean stage_error_shown; /* the stage field shows the placement's error */
  /* Data parallel's gradient buckets (twb_inspector_set_buckets). */
  tw_bucket_layout buckets;
  gboolean buckets_measured;
  double bucket_mb;
};

/* Every node's "stage" (engine/attrs.c): typed as text, empty unsets it. */
static const tw_attr_spec stage_spec = {
  .name = "stage",
  .type = TW_ATTR_STRING,
  .doc = "Pipeline stage (0, 1, …) for pipeline and hybrid runs; empty: the latest stage of "
         "its inputs (or automatic placement when no node has one)",
};

G_DEFINE_FINAL_TYPE (TwbInspector, twb_inspector, GTK_TYPE_WIDGET)

static void rebuild_node_page (TwbInspector *self);
static void no_scroll_to_focus (GtkWidget *sw);
static void refresh_recipe (TwbInspector *self);
static void refresh_node_info (TwbInspector *self);

/* ---- Node page --------------------------------------------------------------- */

static tw_node *
current_node (TwbInspector *self)
{
  if (self->doc == NULL || self->node_id == NULL)
    return NULL;
  return tw_graph_find (twb_document_get_graph (self->doc), self->node_id);
}

/* The line under a field for its error: always there, one line high, so
 * that an error appearing never moves the fields below (a click meant for
 * one would land on the next).  What it shows is made to fit that line
 * (show_attr_error); a longer message is ellipsized, the whole of it the
 * line's tooltip and the field's accessible description. */
static GtkWidget *
error_line (void)
{
  GtkWidget *err = gtk_label_new (NULL);
  gtk_widget_add_css_class (err, "error");
  gtk_widget_add_css_class (err, "caption");
  gtk_label_set_xalign (GTK_LABEL (err), 0);
  gtk_label_set_single_line_mode (GTK_LABEL (err), TRUE);
  gtk_label_set_ellipsize (GTK_LABEL (err), PANGO_ELLIPSIZE_END);
  gtk_label_set_width_chars (GTK_LABEL (err), 1);
  return err;
}

static void
show_attr_error (TwbInspector *self, const char *attr, const char *message)
{
  GtkWidget *label = g_hash_table_lookup (self->attr_errors, attr);
  GtkWidget *w = g_hash_table_lookup (self->attr_widgets, attr);
  if (label == NULL)
    return;
  /* Under the field, "pool1.kernel_size: " says nothing the row does not. */
  g_autofree char *prefix = g_strdup_printf ("%s.%s: ", self->node_id ? self->node_id : "", attr);
  const char *shown = message ? message : "";
  if (g_str_has_prefix (shown, prefix) && shown[strlen (prefix)])
    shown += strlen (prefix);
  /* Nor ", not '1, twenty-eight, 28'": the field shows what was typed,
   * and the line has room for what is expected. */
  g_autofree char *fit = g_strdup (shown);
  char *echo = g_strrstr (fit, ", not '");
  if (echo && g_str_has_suffix (fit, "'"))
    *echo = '\0';
  gtk_label_set_text (GTK_LABEL (label), fit);
  gtk_widget_set_tooltip_text (label, message);
  g_object_set_data_full (G_OBJECT (label), "message", g_strdup (message), g_free);
  if (w)
    {
      if (message)
        gtk_widget_add_css_class (w, "error");
      else
        gtk_widget_remove_css_class (w, "error");
    }
}

/* The stage field: the placement's error when it names this node. */
static void
refresh_stage_error (TwbInspector *self)
{
  if (self->doc == NULL || self->node_id == NULL
      || !g_hash_table_contains (self->attr_errors, "stage"))
    return;
  const char *node = NULL;
  const char *msg = twb_document_get_stage_error (self->doc, &node);
  gboolean mine = msg && g_strcmp0 (node, self->node_id) == 0;
  if (mine)
    show_attr_error (self, "stage", msg);
  else if (self->stage_error_shown)
    show_attr_error (self, "stage", NULL);
  self->stage_error_shown = mine;
}

static gboolean
apply_attr (TwbInspector *self, const char *attr, const char *text)
{
  g_autoptr (GError) error = NULL;
  if (self->building || self->node_id == NULL)
    return FALSE;
  self->applying = TRUE;
  gboolean ok;
  if (text == NULL || text[0] == '\0')
    ok = twb_document_unset_attr (self->doc, self->node_id, attr, &error);
  else
    ok = twb_document_set_attr_text (self->doc, self->node_id, attr, text, &error);
  self->applying = FALSE;
  show_attr_error (self, attr, ok ? NULL : error->message);
  if (ok && strcmp (attr, "stage") == 0)
    self->stage_error_shown = FALSE;
  if (ok)
    refresh_stage_error (self);
  return ok;
}

static void
spin_changed (GtkSpinButton *spin, TwbInspector *self)
{
  const char *attr = g_object_get_data (G_OBJECT (spin), "attr");
  char buf[64];
  if (gtk_spin_button_get_digits (spin) == 0)
    g_snprintf (buf, sizeof buf, "%" G_GINT64_FORMAT, (gint64) gtk_spin_button_get_value (spin));
  else
    g_ascii_dtostr (buf, sizeof buf, gtk_spin_button_get_value (spin));
  apply_attr (self, attr, buf);
}

static void
switch_changed (GtkSwitch *sw, GParamSpec *p, TwbInspector *self)
{
  apply_attr (self, g_object_get_data (G_OBJECT (sw), "attr"),
              gtk_switch_get_active (sw) ? "true" : "false");
}

static void
dropdown_changed (GtkDropDown *dd, GParamSpec *p, TwbInspector *self)
{
  GtkStringObject *o = gtk_drop_down_get_selected_item (dd);
  if (o)
    apply_attr (self, g_object_get_data (G_OBJECT (dd), "attr"), gtk_string_object_get_string (o));
}

static void
entry_activate (GtkEntry *e, TwbInspector *self)
{
  apply_attr (self, g_object_get_data (G_OBJECT (e), "attr"),
              gtk_editable_get_text (GTK_EDITABLE (e)));
}

static void
entry_focus_leave (GtkEventControllerFocus *c, TwbInspector *self)
{
  GtkWidget *e = gtk_event_controller_get_widget (GTK_EVENT_CONTROLLER (c));
  const char *attr = g_object_get_data (G_OBJECT (e), "attr");
  const char *orig = g_object_get_data (G_OBJECT (e), "orig");
  const char *now = gtk_editable_get_text (GTK_EDITABLE (e));
  if (g_strcmp0 (orig, now) != 0)
    apply_attr (self, attr, now);
}

static void
rename_activate (GtkEntry *e, TwbInspector *self)
{
  g_autoptr (GError) error = NULL;
  const char *new_id = gtk_editable_get_text (GTK_EDITABLE (e));
  if (self->node_id == NULL || g_strcmp0 (new_id, self->node_id) == 0)
    return;
  g_autofree char *old = g_strdup (self->node_id);
  if (!twb_document_rename_node (self->doc, old, new_id, &error))
    {
      show_attr_error (self, "$id", error->message);
      return;
    }
  const char *ids[] = { new_id, NULL };
  twb_document_select (self->doc, ids, FALSE);
}

static void
block_rename_activate (GtkEntry *e, TwbInspector *self)
{
  g_autoptr (GError) error = NULL;
  const char *new_name = gtk_editable_get_text (GTK_EDITABLE (e));
  if (self->block_name == NULL || g_strcmp0 (new_name, self->block_name) == 0)
    return;
  g_autofree char *old = g_strdup (self->block_name);
  if (!twb_document_rename_block (self->doc, old, new_name, &error))
    show_attr_error (self, "$id", error->message);
}

/* The "output" row's words: what the switch means for this node now. */
static const char *
output_hint (TwbOutputKind kind)
{
  switch (kind)
    {
    case TWB_OUTPUT_MARKED: return "marked: a model output";
    case TWB_OUTPUT_DEFAULT: return "an output while none is marked: it feeds the loss";
    case TWB_OUTPUT_NONE:
    default: return "";
    }
}

/* The output switch and its line show the document's state. */
static void
refresh_output_row (TwbInspector *self)
{
  GtkWidget *sw = g_hash_table_lookup (self->attr_widgets, "$output");
  GtkWidget *hint = sw ? g_object_get_data (G_OBJECT (sw), "hint") : NULL;
  if (sw == NULL || self->node_id == NULL)
    return;
  TwbOutputKind kind = twb_document_output_kind (self->doc, self->node_id);
  gboolean was = self->building;
  self->building = TRUE;
  gtk_switch_set_active (GTK_SWITCH (sw), kind != TWB_OUTPUT_NONE);
  self->building = was;
  gtk_label_set_text (GTK_LABEL (hint), output_hint (kind));
}

static void
output_switched (GtkSwitch *sw, GParamSpec *p, TwbInspector *self)
{
  if (self->building || self->node_id == NULL)
    return;
  g_autoptr (GError) error = NULL;
  self->applying = TRUE;
  gboolean ok = twb_document_set_output (self->doc, self->node_id, gtk_switch_get_active (sw),
                                         &error);
  self->applying = FALSE;
  show_attr_error (self, "$output", ok ? NULL : error->message);
  refresh_output_row (self);
}

/* "output": a switch marking the node as a model output (graph.output on
 * the canvas), with a line saying whether it is marked or an output by
 * default, and the refusal when it must stay one. */
static int
add_output_row (TwbInspector *self, GtkWidget *grid, int row)
{
  GtkWidget *l = gtk_label_new ("output");
  gtk_label_set_xalign (GTK_LABEL (l), 0);
  const char *tip = "A model output: what twb predict writes and ONNX export names. With no node "
                    "marked, the prediction each loss scores is the output.";
  gtk_widget_set_tooltip_text (l, tip);
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 8);
  GtkWidget *sw = gtk_switch_new ();
  gtk_widget_set_valign (sw, GTK_ALIGN_CENTER);
  gtk_widget_set_tooltip_text (sw, tip);
  gtk_accessible_update_relation (GTK_ACCESSIBLE (sw), GTK_ACCESSIBLE_RELATION_LABELLED_BY, l, NULL,
                                  -1);
  GtkWidget *hint = gtk_label_new (NULL);
  gtk_label_set_xalign (GTK_LABEL (hint), 0);
  gtk_label_set_wrap (GTK_LABEL (hint), TRUE);
  gtk_widget_set_hexpand (hint, TRUE);
  gtk_widget_add_css_class (hint, "dim-label");
  gtk_widget_add_css_class (hint, "caption");
  gtk_box_append (GTK_BOX (box), sw);
  gtk_box_append (GTK_BOX (box), hint);
  g_object_set_data (G_OBJECT (sw), "hint", hint);
  g_object_set_data_full (G_OBJECT (sw), "attr", g_strdup ("$output"), g_free);
  g_signal_connect (sw, "notify::active", G_CALLBACK (output_switched), self);
  gtk_grid_attach (GTK_GRID (grid), l, 0, row, 1, 1);
  gtk_grid_attach (GTK_GRID (grid), box, 1, row++, 1, 1);
  GtkWidget *err = error_line ();
  gtk_grid_attach (GTK_GRID (grid), err, 0, row++, 2, 1);
  g_hash_table_insert (self->attr_errors, g_strdup ("$output"), err);
  g_hash_table_insert (self->attr_widgets, g_strdup ("$output"), sw);
  twb_focus_set_key (sw, "$output");
  refresh_output_row (self);
  return row;
}

/* The page of a collapsed block (its members are the selection): its name,
 * to rename it, what it holds, and Expand. */
static void
build_block_page (TwbInspector *self, const char *block)
{
  g_auto (GStrv) members = twb_document_block_members (self->doc, block);
  guint n = g_strv_length (members);
  GtkWidget *title = gtk_label_new (NULL);
  g_autofree char *markup = g_markup_printf_escaped ("<b>Block</b>\n%u node%s collapsed into one box",
                                                     n, n == 1 ? "" : "s");
  gtk_label_set_markup (GTK_LABEL (title), markup);
  gtk_label_set_xalign (GTK_LABEL (title), 0);
  gtk_label_set_wrap (GTK_LABEL (title), TRUE);
  gtk_box_append (GTK_BOX (self->node_box), title);

  GtkWidget *grid = gtk_grid_new ();
  gtk_grid_set_row_spacing (GTK_GRID (grid), 4);
  gtk_grid_set_column_spacing (GTK_GRID (grid), 8);
  GtkWidget *nl = gtk_label_new ("name");
  gtk_label_set_xalign (GTK_LABEL (nl), 0);
  GtkWidget *ne = gtk_entry_new ();
  gtk_editable_set_text (GTK_EDITABLE (ne), block);
  gtk_widget_set_hexpand (ne, TRUE);
  gtk_widget_set_tooltip_text (ne, "the block's name on the canvas; Enter renames it");
  gtk_accessible_update_relation (GTK_ACCESSIBLE (ne), GTK_ACCESSIBLE_RELATION_LABELLED_BY, nl,
                                  NULL, -1);
  g_signal_connect (ne, "activate", G_CALLBACK (block_rename_activate), self);
  gtk_grid_attach (GTK_GRID (grid), nl, 0, 0, 1, 1);
  gtk_grid_attach (GTK_GRID (grid), ne, 1, 0, 1, 1);
  GtkWidget *err = error_line ();
  gtk_grid_attach (GTK_GRID (grid), err, 0, 1, 2, 1);
  g_hash_table_insert (self->attr_errors, g_strdup ("$id"), err);
  g_hash_table_insert (self->attr_widgets, g_strdup ("$id"), ne);
  twb_focus_set_key (ne, "$block");
  self->first_field = ne;
  gtk_box_append (GTK_BOX (self->node_box), grid);

  g_autofree char *list = g_strjoinv (", ", members);
  GtkWidget *ml = gtk_label_new (list);
  gtk_label_set_xalign (GTK_LABEL (ml), 0);
  gtk_label_set_wrap (GTK_LABEL (ml), TRUE);
  gtk_label_set_selectable (GTK_LABEL (ml), TRUE);
  gtk_widget_add_css_class (ml, "dim-label");
  gtk_box_append (GTK_BOX (self->node_box), ml);

  GtkWidget *expand = gtk_button_new_with_mnemonic ("_Expand");
  gtk_widget_set_halign (expand, GTK_ALIGN_START);
  gtk_actionable_set_action_name (GTK_ACTIONABLE (expand), "graph.expand-named");
  gtk_actionable_set_action_target (GTK_ACTIONABLE (expand), "s", block);
  gtk_box_append (GTK_BOX (self->node_box), expand);
}

static char *
value_text (const tw_attr_value *v)
{
  if (v == NULL)
    return g_strdup ("");
  if (v->type == TW_ATTR_STRING)
    return g_strdup (v->s);
  g_autoptr (JsonNode) node = tw_attr_value_to_json (v);
  return json_to_string (node, FALSE);
}

/* The dim text of an empty entry: what applies when the attribute is not
 * set, in words ("default: 1", "default: the kernel size" from the schema's
 * doc), never something that reads like a value the user typed. */
static char *
default_hint (const tw_attr_spec *spec)
{
  if (spec->default_value)
    return g_strdup_printf ("default: %s", spec->default_value);
  const char *d = spec->doc ? strstr (spec->doc, "(default: ") : NULL;
  if (d)
    {
      d += strlen ("(default: ");
      const char *end = strchr (d, ')');
      g_autofree char *what = g_strndup (d, end ? (gsize) (end - d) : strlen (d));
      return g_strdup_printf ("default: %s", what);
    }
  return spec->required ? g_strdup ("required") : g_strdup ("not set");
}

static GtkWidget *
attr_widget (TwbInspector *self, const tw_attr_spec *spec, const tw_attr_value *cur)
{
  GtkWidget *w = NULL;
  tw_attr_value def = { 0 };
  gboolean have_def = spec->default_value
                      && tw_attr_value_parse (spec->type, spec->default_value, &def, NULL);
  const tw_attr_value *v = cur ? cur : have_def ? &def : NULL;
  /* A value stored in another form than the schema's (kernel_size 5 for
   * [5, 5]) is edited as text. */
  tw_attr_type t = v ? v->type : spec->type;
  if (v && v->type != spec->type && !(spec->type == TW_ATTR_FLOAT && v->type == TW_ATTR_INT))
    t = TW_ATTR_INTS;

  if (spec->choices)
    {
      w = gtk_drop_down_new_from_strings ((const char *const *) spec->choices);
      for (guint i = 0; v && v->type == TW_ATTR_STRING && spec->choices[i]; i++)
        if (strcmp (spec->choices[i], v->s) == 0)
          gtk_drop_down_set_selected (GTK_DROP_DOWN (w), i);
      g_signal_connect (w, "notify::selected", G_CALLBACK (dropdown_changed), self);
    }
  else if (t == TW_ATTR_INT || (t == TW_ATTR_FLOAT && spec->type == TW_ATTR_FLOAT))
    {
      gboolean is_float = spec->type == TW_ATTR_FLOAT;
      w = gtk_spin_button_new_with_range (is_float ? -1e9 : -(1 << 30), is_float ? 1e9 : (1 << 30),
                                          is_float ? 0.001 : 1);
      gtk_spin_button_set_digits (GTK_SPIN_BUTTON (w), is_float ? 4 : 0);
      double d = v ? (v->type == TW_ATTR_INT ? (double) v->i : v->f) : 0;
      gtk_spin_button_set_value (GTK_SPIN_BUTTON (w), d);
      g_signal_connect (w, "value-changed", G_CALLBACK (spin_changed), self);
    }
  else if (t == TW_ATTR_BOOL)
    {
      w = gtk_switch_new ();
      gtk_widget_set_halign (w, GTK_ALIGN_START);
      gtk_switch_set_active (GTK_SWITCH (w), v ? v->b : FALSE);
      g_signal_connect (w, "notify::active", G_CALLBACK (switch_changed), self);
    }
  else
    {
      w = gtk_entry_new ();
      g_autofree char *text = cur ? value_text (cur) : g_strdup ("");
      gtk_editable_set_text (GTK_EDITABLE (w), text);
      g_autofree char *hint = cur ? NULL : default_hint (spec);
      if (hint)
        gtk_entry_set_placeholder_text (GTK_ENTRY (w), hint);
      g_object_set_data_full (G_OBJECT (w), "orig", g_strdup (text), g_free);
      g_signal_connect (w, "activate", G_CALLBACK (entry_activate), self);
      GtkEventController *fc = gtk_event_controller_focus_new ();
      g_signal_connect (fc, "leave", G_CALLBACK (entry_focus_leave), self);
      gtk_widget_add_controller (w, fc);
    }
  if (have_def)
    tw_attr_value_clear (&def);
  g_object_set_data_full (G_OBJECT (w), "attr", g_strdup (spec->name), g_free);
  gtk_widget_set_hexpand (w, TRUE);
  return w;
}

/* "bucket 2 of 3, 16.4 kB, all-reduced after fc3's": where data parallel
 * packs the gradients of the node's trainable parameters (one line when
 * they share a bucket, else one per parameter). */
static char *
bucket_words (TwbInspector *self, int b)
{
  const tw_bucket_layout *l = &self->buckets;
  g_autofree char *size = tw_format_bytes ((guint64) l->bytes[b]);
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "bucket %d of %d, %s, ", b + 1, l->n, size);
  if (b == 0)
    {
      g_string_append (s, "all-reduced first");
      return g_string_free (s, FALSE);
    }
  /* The nodes of the bucket before (a parameter's node: its name less ".weight"). */
  g_autoptr (GPtrArray) owners = g_ptr_array_new_with_free_func (g_free);
  for (int i = 0; l->names[b - 1][i]; i++)
    {
      const char *dot = strrchr (l->names[b - 1][i], '.');
      char *o = dot ? g_strndup (l->names[b - 1][i], dot - l->names[b - 1][i])
                    : g_strdup (l->names[b - 1][i]);
      gboolean seen = FALSE;
      for (guint k = 0; k < owners->len && !seen; k++)
        seen = strcmp (g_ptr_array_index (owners, k), o) == 0;
      if (seen)
        g_free (o);
      else
        g_ptr_array_add (owners, o);
    }
  g_string_append (s, "all-reduced after ");
  for (guint k = 0; k < MIN (owners->len, 2); k++)
    g_string_append_printf (s, "%s%s's", k ? " and " : "", (char *) g_ptr_array_index (owners, k));
  if (owners->len > 2)
    g_string_append_printf (s, " (and %u more)", owners->len - 2);
  return g_string_free (s, FALSE);
}

static void
append_buckets (TwbInspector *self, const tw_node *n, GString *s)
{
  if (self->buckets.n == 0 || n->share)
    return;
  g_autoptr (GPtrArray) lines = g_ptr_array_new_with_free_func (g_free);
  int first = -2;
  gboolean same = TRUE;
  for (int k = 0; k < n->n_params; k++)
    {
      if (!n->params[k].trainable)
        continue;
      g_autofree char *name = tw_node_param_name (n, k);
      int b = tw_bucket_layout_find (&self->buckets, name, NULL);
      if (b < 0)
        continue;
      same &= first == -2 || b == first;
      if (first == -2)
        first = b;
      g_autofree char *w = bucket_words (self, b);
      g_ptr_array_add (lines, g_strdup_printf ("%s: %s", name, w));
    }
  if (lines->len == 0)
    return;
  g_string_append_printf (s, "\ngradient buckets (%s, %g MB):",
                          self->buckets_measured ? "as the last run packed them"
                                                 : "predicted for the first step",
                          self->bucket_mb);
  if (same)
    {
      g_autofree char *w = bucket_words (self, first);
      g_string_append_printf (s, "\n%s", w);
    }
  else
    for (guint i = 0; i < lines->len; i++)
      g_string_append_printf (s, "\n%s", (char *) g_ptr_array_index (lines, i));
}

void
twb_inspector_set_buckets (TwbInspector *self, const tw_bucket_layout *l, gboolean measured,
                           double bucket_mb)
{
  tw_bucket_layout_clear (&self->buckets);
  if (l)
    {
      self->buckets.n = l->n;
      self->buckets.names = g_new0 (char **, MAX (l->n, 1));
      self->buckets.bytes = g_memdup2 (l->bytes, MAX (l->n, 1) * sizeof (int64_t));
      for (int b = 0; b < l->n; b++)
        self->buckets.names[b] = g_strdupv (l->names[b]);
    }
  self->buckets_measured = measured;
  self->bucket_mb = bucket_mb;
  refresh_node_info (self);
}

static void
refresh_node_info (TwbInspector *self)
{
  tw_node *n = current_node (self);
  if (n == NULL || self->node_error == NULL)
    return;
  gtk_label_set_text (GTK_LABEL (self->node_error), n->error ? n->error : "");
  gtk_widget_set_visible (self->node_error, n->error != NULL);
  GString *s = g_string_new (NULL);
  if (n->valid && n->out_info)
    for (int k = 0; k < n->n_outputs; k++)
      {
        g_autofree char *t = tw_tinfo_to_string (&n->out_info[k]);
        g_string_append_printf (s, "%soutput %d: %s", k ? "\n" : "", k, t);
      }
  else
    g_string_append (s, "output: unknown (shape error)");
  int64_t np = 0;
  for (int k = 0; k < n->n_params && !n->share && n->valid; k++)
    np += tw_tinfo_numel (&n->params[k].info, NULL);
  g_autofree char *f = twb_format_count (n->cost.flops);
  g_string_append_printf (s, "\nparameters: %" G_GINT64_FORMAT "%s\nFLOPs per sample: %s", np,
                          n->share ? " (shared)" : "", f);
  int stage = twb_document_get_node_stage (self->doc, n->id);
  if (stage >= 0)
    g_string_append_printf (s, "\npipeline stage: %d of %d", stage,
                            twb_document_get_n_stages (self->doc));
  append_buckets (self, n, s);
  gtk_label_set_text (GTK_LABEL (self->node_info), s->str);
  g_string_free (s, TRUE);
  refresh_stage_error (self);
}

static GtkWidget *
section_label (const char *text)
{
  GtkWidget *l = gtk_label_new (text);
  gtk_label_set_xalign (GTK_LABEL (l), 0);
  gtk_widget_add_css_class (l, "heading");
  return l;
}

static void
rebuild_node_page (TwbInspector *self)
{
  GtkWidget *sw = self->node_page;
  /* The field being edited may be what asked for this page (Enter in the
   * id field renames the node): it gets the focus back on the new page. */
  g_autofree char *focus_key = self->node_box ? twb_focus_save (self->node_box) : NULL;
  self->node_box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 8);
  gtk_widget_set_margin_start (self->node_box, 12);
  gtk_widget_set_margin_end (self->node_box, 12);
  gtk_widget_set_margin_top (self->node_box, 12);
  gtk_widget_set_margin_bottom (self->node_box, 12);
  g_hash_table_remove_all (self->attr_errors);
  g_hash_table_remove_all (self->attr_widgets);
  self->node_error = self->node_info = self->first_field = NULL;
  self->building = TRUE;

  g_auto (GStrv) sel = self->doc ? twb_document_get_selection (self->doc) : NULL;
  int n_sel = sel ? (int) g_strv_length (sel) : 0;
  g_clear_pointer (&self->node_id, g_free);
  g_clear_pointer (&self->block_name, g_free);
  const char *block = self->doc ? twb_document_block_of_selection (self->doc) : NULL;
  if (n_sel == 1 && block == NULL)
    self->node_id = g_strdup (sel[0]);
  tw_node *n = current_node (self);

  if (block)
    {
      self->block_name = g_strdup (block);
      build_block_page (self, block);
    }
  else if (n == NULL)
    {
      g_autofree char *msg = n_sel > 1 ? g_strdup_printf ("%d nodes selected.\nSelect one node to edit its attributes.", n_sel)
                                       : g_strdup ("No node selected.\nClick a node, or press Tab in the canvas, to edit its attributes.");
      GtkWidget *l = gtk_label_new (msg);
      gtk_label_set_wrap (GTK_LABEL (l), TRUE);
      gtk_label_set_justify (GTK_LABEL (l), GTK_JUSTIFY_CENTER);
      gtk_widget_add_css_class (l, "dim-label");
      gtk_widget_set_vexpand (l, TRUE);
      gtk_box_append (GTK_BOX (self->node_box), l);
    }
  else
    {
      GtkWidget *grid = gtk_grid_new ();
      gtk_grid_set_row_spacing (GTK_GRID (grid), 2);   /* the error lines space the fields */
      gtk_grid_set_column_spacing (GTK_GRID (grid), 8);
      int row = 0;

      GtkWidget *op = gtk_label_new (NULL);
      g_autofree char *markup = g_markup_printf_escaped ("<b>%s</b>%s%s", n->op_name,
                                                         n->op && n->op->doc ? "\n" : "",
                                                         n->op && n->op->doc ? n->op->doc : "");
      gtk_label_set_markup (GTK_LABEL (op), markup);
      gtk_label_set_wrap (GTK_LABEL (op), TRUE);
      gtk_label_set_xalign (GTK_LABEL (op), 0);
      gtk_box_append (GTK_BOX (self->node_box), op);

      self->node_error = gtk_label_new (NULL);
      gtk_label_set_wrap (GTK_LABEL (self->node_error), TRUE);
      gtk_label_set_xalign (GTK_LABEL (self->node_error), 0);
      gtk_widget_add_css_class (self->node_error, "error");
      gtk_widget_add_css_class (self->node_error, "node-error");
      gtk_box_append (GTK_BOX (self->node_box), self->node_error);

      /* Live checks before the fields: at 1280 × 800 a conv2d's fields fill
       * the panel above the Issues pane, and the shape is what one edits
       * them for. */
      gtk_box_append (GTK_BOX (self->node_box), section_label ("Live checks"));
      self->node_info = gtk_label_new (NULL);
      gtk_label_set_xalign (GTK_LABEL (self->node_info), 0);
      gtk_label_set_selectable (GTK_LABEL (self->node_info), TRUE);
      gtk_label_set_wrap (GTK_LABEL (self->node_info), TRUE);
      gtk_widget_add_css_class (self->node_info, "monospace");
      gtk_box_append (GTK_BOX (self->node_box), self->node_info);
      gtk_box_append (GTK_BOX (self->node_box), section_label ("Attributes"));

      GtkWidget *idl = gtk_label_new ("id");
      gtk_label_set_xalign (GTK_LABEL (idl), 0);
      GtkWidget *ide = gtk_entry_new ();
      gtk_editable_set_text (GTK_EDITABLE (ide), n->id);
      gtk_widget_set_hexpand (ide, TRUE);
      gtk_accessible_update_relation (GTK_ACCESSIBLE (ide), GTK_ACCESSIBLE_RELATION_LABELLED_BY,
                                      idl, NULL, -1);
      g_signal_connect (ide, "activate", G_CALLBACK (rename_activate), self);
      gtk_grid_attach (GTK_GRID (grid), idl, 0, row, 1, 1);
      gtk_grid_attach (GTK_GRID (grid), ide, 1, row++, 1, 1);
      GtkWidget *ide_err = error_line ();
      gtk_grid_attach (GTK_GRID (grid), ide_err, 0, row++, 2, 1);
      g_hash_table_insert (self->attr_errors, g_strdup ("$id"), ide_err);
      g_hash_table_insert (self->attr_widgets, g_strdup ("$id"), ide);
      twb_focus_set_key (ide, "$id");
      row = add_output_row (self, grid, row);

      for (const tw_attr_spec *spec = n->op ? n->op->attrs : NULL; spec && spec->name; spec++)
        {
          GtkWidget *label = gtk_label_new (spec->name);
          gtk_label_set_xalign (GTK_LABEL (label), 0);
          if (spec->doc)
            gtk_widget_set_tooltip_text (label, spec->doc);
          if (spec->required)
            gtk_widget_add_css_class (label, "required");
          GtkWidget *w = attr_widget (self, spec, tw_attrs_lookup (n->attrs, spec->name));
          if (spec->doc)
            gtk_widget_set_tooltip_text (w, spec->doc);
          gtk_accessible_update_relation (GTK_ACCESSIBLE (w), GTK_ACCESSIBLE_RELATION_LABELLED_BY,
                                          label, NULL, -1);
          if (spec->doc)
            gtk_accessible_update_property (GTK_ACCESSIBLE (w),
                                            GTK_ACCESSIBLE_PROPERTY_DESCRIPTION, spec->doc, -1);
          gtk_grid_attach (GTK_GRID (grid), label, 0, row, 1, 1);
          gtk_grid_attach (GTK_GRID (grid), w, 1, row++, 1, 1);
          GtkWidget *err = error_line ();
          gtk_grid_attach (GTK_GRID (grid), err, 0, row++, 2, 1);
          g_hash_table_insert (self->attr_errors, g_strdup (spec->name), err);
          g_hash_table_insert (self->attr_widgets, g_strdup (spec->name), w);
          twb_focus_set_key (w, spec->name);
          if (self->first_field == NULL)
            self->first_field = w;
        }
      if (n->op == NULL || !(n->op->flags & TW_OP_SOURCE))
        {
          const tw_attr_spec *spec = &stage_spec;
          GtkWidget *label = gtk_label_new (spec->name);
          gtk_label_set_xalign (GTK_LABEL (label), 0);
          gtk_widget_set_tooltip_text (label, spec->doc);
          GtkWidget *w = attr_widget (self, spec, tw_attrs_lookup (n->attrs, spec->name));
          gtk_widget_set_tooltip_text (w, spec->doc);
          gtk_accessible_update_relation (GTK_ACCESSIBLE (w), GTK_ACCESSIBLE_RELATION_LABELLED_BY,
                                          label, NULL, -1);
          gtk_accessible_update_property (GTK_ACCESSIBLE (w), GTK_ACCESSIBLE_PROPERTY_DESCRIPTION,
                                          spec->doc, -1);
          gtk_grid_attach (GTK_GRID (grid), label, 0, row, 1, 1);
          gtk_grid_attach (GTK_GRID (grid), w, 1, row++, 1, 1);
          GtkWidget *err = error_line ();
          gtk_grid_attach (GTK_GRID (grid), err, 0, row++, 2, 1);
          g_hash_table_insert (self->attr_errors, g_strdup (spec->name), err);
          g_hash_table_insert (self->attr_widgets, g_strdup (spec->name), w);
          twb_focus_set_key (w, spec->name);
        }
      self->stage_error_shown = FALSE;
      if (self->first_field == NULL)
        self->first_field = ide;
      gtk_box_append (GTK_BOX (self->node_box), grid);

      refresh_node_info (self);
    }
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (sw), self->node_box);
  no_scroll_to_focus (sw);
  self->building = FALSE;
  twb_focus_restore (self->node_box, focus_key);
}

/* ---- Recipe page ---------------------------------------------------------------- */

static void set_dataset_error (TwbInspector *self, const char *message);

static const char *const optimizers[] = { "sgd", "adam", "adamw", NULL };
static const char *const schedules[] = { "constant", "step", "cosine", NULL };

typedef enum
{
  R_OPT,
  R_LR,
  R_MOMENTUM,
  R_WD,
  R_SCHED,
  R_STEP_SIZE,
  R_GAMMA,
  R_TMAX,
  R_MIN_LR,
  R_WARMUP,
  R_BATCH,
  R_EPOCHS,
  R_SEED,
  R_DATASET,
  R_VAL,
  R_N
} RecipeField;

gboolean
twb_inspector_check_dataset (const char *value, GError **error)
{
  if (value == NULL || value[0] == '\0')
    return TRUE;   /* none: twb train --data names one */
  const char *const *known = tw_dataset_known_names ();
  if (g_strv_contains (known, value))
    return TRUE;
  /* Samples made for the model (engine/data-fit.h), "synthetic:N" N of them. */
  const char *count = g_str_has_prefix (value, "synthetic:") ? value + strlen ("synthetic:") : NULL;
  if (strcmp (value, "synthetic") == 0
      || (count && count[0] && strspn (count, "0123456789") == strlen (count)))
    return TRUE;
  g_autofree char *lower = g_ascii_strdown (value, -1);
  gboolean file = g_str_has_suffix (lower, ".csv") || g_str_has_suffix (lower, ".npy");
  if (file && g_file_test (value, G_FILE_TEST_IS_REGULAR))
    return TRUE;
  if (file)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_IO, "no file %s", value);
      return FALSE;
    }
  if (g_file_test (value, G_FILE_TEST_IS_DIR))
    return TRUE;   /* a folder of IDX files; tw_dataset_open checks its files */
  g_autofree char *list = g_strjoinv (", ", (char **) known);
  if (strchr (value, G_DIR_SEPARATOR))
    g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_IO,
                 "no folder %s (a dataset file ends in .csv or .npy)", value);
  else
    g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_UNKNOWN,
                 "unknown dataset '%s': one of %s, synthetic[:N], a .csv or .npy file, or a "
                 "folder of IDX files",
                 value, list);
  return FALSE;
}

static void
set_dataset_error (TwbInspector *self, const char *message)
{
  g_free (self->dataset_message);
  self->dataset_message = g_strdup (message);
  gtk_label_set_text (GTK_LABEL (self->dataset_error), message ? message : "");
  gtk_widget_set_tooltip_text (self->dataset_error, message);
}

static void
recipe_apply (TwbInspector *self, RecipeField f, GtkWidget *w)
{
  if (self->building || self->doc == NULL)
    return;
  tw_recipe r;
  tw_recipe_copy (&r, &twb_document_get_model (self->doc)->recipe);
  double v = GTK_IS_SPIN_BUTTON (w) ? gtk_spin_button_get_value (GTK_SPIN_BUTTON (w)) : 0;
  guint sel = GTK_IS_DROP_DOWN (w) ? gtk_drop_down_get_selected (GTK_DROP_DOWN (w)) : 0;
  switch (f)
    {
    case R_OPT: r.optimizer.type = (tw_optimizer_type) sel; break;
    case R_LR: r.optimizer.lr = v; break;
    case R_MOMENTUM: r.optimizer.momentum = v; break;
    case R_WD: r.optimizer.weight_decay = v; break;
    case R_SCHED: r.schedule.type = (tw_schedule_type) sel; break;
    case R_STEP_SIZE: r.schedule.step_size = (int64_t) v; break;
    case R_GAMMA: r.schedule.gamma = v; break;
    case R_TMAX: r.schedule.t_max = (int64_t) v; break;
    case R_MIN_LR: r.schedule.min_lr = v; break;
    case R_WARMUP: r.schedule.warmup_steps = (int64_t) v; break;
    case R_BATCH: r.batch_size = (int64_t) v; break;
    case R_EPOCHS: r.epochs = (int64_t) v; break;
    case R_SEED: r.seed = (guint64) v; break;
    case R_DATASET:
      {
        g_autoptr (GError) bad = NULL;
        g_autofree char *value = g_strstrip (g_strdup (gtk_editable_get_text (GTK_EDITABLE (w))));
        if (!twb_inspector_check_dataset (value, &bad))
          {
            /* Refused: the recipe keeps its dataset, the entry the typo. */
            set_dataset_error (self, bad->message);
            gtk_widget_add_css_class (w, "error");
            tw_recipe_clear (&r);
            return;
          }
        set_dataset_error (self, NULL);
        g_free (r.dataset);
        r.dataset = value[0] ? g_steal_pointer (&value) : NULL;
      }
      break;
    case R_VAL: r.validation_split = v; break;
    case R_N:
    default: break;
    }
  g_autoptr (GError) error = NULL;
  self->applying = TRUE;
  if (!twb_document_set_recipe (self->doc, &r, &error))
    gtk_widget_add_css_class (w, "error");
  else
    gtk_widget_remove_css_class (w, "error");
  self->applying = FALSE;
  tw_recipe_clear (&r);
  refresh_recipe (self);   /* show or hide the fields of the chosen optimizer/schedule */
}

static void
recipe_spin_changed (GtkSpinButton *w, TwbInspector *self)
{
  recipe_apply (self, GPOINTER_TO_INT (g_object_get_data (G_OBJECT (w), "field")), GTK_WIDGET (w));
}

static void
recipe_dd_changed (GtkDropDown *w, GParamSpec *p, TwbInspector *self)
{
  recipe_apply (self, GPOINTER_TO_INT (g_object_get_data (G_OBJECT (w), "field")), GTK_WIDGET (w));
}

static void
recipe_entry_activate (GtkEntry *w, TwbInspector *self)
{
  recipe_apply (self, GPOINTER_TO_INT (g_object_get_data (G_OBJECT (w), "field")), GTK_WIDGET (w));
}

static void
recipe_entry_leave (GtkEventControllerFocus *c, TwbInspector *self)
{
  GtkWidget *w = gtk_event_controller_get_widget (GTK_EVENT_CONTROLLER (c));
  const tw_recipe *r = self->doc ? &twb_document_get_model (self->doc)->recipe : NULL;
  if (r && g_strcmp0 (r->dataset ? r->dataset : "", gtk_editable_get_text (GTK_EDITABLE (w))) != 0)
    recipe_apply (self, R_DATASET, w);
}

static void
add_recipe_row (TwbInspector *self, int *row, RecipeField f, const char *label,
                const char *tooltip, GtkWidget *w)
{
  GtkWidget *l = gtk_label_new (label);
  gtk_label_set_xalign (GTK_LABEL (l), 0);
  gtk_widget_set_tooltip_text (l, tooltip);
  gtk_widget_set_tooltip_text (w, tooltip);
  gtk_widget_set_hexpand (w, TRUE);
  gtk_accessible_update_relation (GTK_ACCESSIBLE (w), GTK_ACCESSIBLE_RELATION_LABELLED_BY, l, NULL,
                                  -1);
  g_object_set_data (G_OBJECT (w), "field", GINT_TO_POINTER (f));
  g_object_set_data (G_OBJECT (w), "label", l);
  if (GTK_IS_SPIN_BUTTON (w))
    g_signal_connect (w, "value-changed", G_CALLBACK (recipe_spin_changed), self);
  else if (GTK_IS_DROP_DOWN (w))
    g_signal_connect (w, "notify::selected", G_CALLBACK (recipe_dd_changed), self);
  else
    {
      g_signal_connect (w, "activate", G_CALLBACK (recipe_entry_activate), self);
      GtkEventController *fc = gtk_event_controller_focus_new ();
      g_signal_connect (fc, "leave", G_CALLBACK (recipe_entry_leave), self);
      gtk_widget_add_controller (w, fc);
    }
  gtk_grid_attach (GTK_GRID (self->recipe_grid), l, 0, *row, 1, 1);
  gtk_grid_attach (GTK_GRID (self->recipe_grid), w, 1, (*row)++, 1, 1);
  g_hash_table_insert (self->recipe_widgets, GINT_TO_POINTER (f), w);
}

static GtkWidget *
spin (double lo, double hi, double step, int digits)
{
  GtkWidget *w = gtk_spin_button_new_with_range (lo, hi, step);
  gtk_spin_button_set_digits (GTK_SPIN_BUTTON (w), digits);
  return w;
}

static void
act_set_dataset (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbInspector *self = data;
  GtkWidget *ds = g_hash_table_lookup (self->recipe_widgets, GINT_TO_POINTER (R_DATASET));
  gtk_editable_set_text (GTK_EDITABLE (ds), g_variant_get_string (p, NULL));
  recipe_apply (self, R_DATASET, ds);
}

static void
dataset_chosen (GtkNativeDialog *dlg, int response, gpointer data)
{
  TwbInspector *self = data;
  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr (GFile) f = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dlg));
      g_autofree char *path = f ? g_file_get_path (f) : NULL;
      /* IDX sets are opened by their folder (train- and t10k- files). */
      g_autofree char *lower = path ? g_ascii_strdown (path, -1) : NULL;
      if (path && !g_str_has_suffix (lower, ".csv") && !g_str_has_suffix (lower, ".npy")
          && !g_file_test (path, G_FILE_TEST_IS_DIR))
        {
          char *dir = g_path_get_dirname (path);
          g_free (path);
          path = dir;
        }
      if (path)
        g_action_group_activate_action (G_ACTION_GROUP (self->actions), "set-dataset",
                                        g_variant_new_string (path));
    }
  g_object_unref (dlg);
  g_object_unref (self);
}

static void
act_choose_dataset (GSimpleAction *a, GVariant *p, gpointer data)
{
  TwbInspector *self = data;
  GtkRoot *root = gtk_widget_get_root (GTK_WIDGET (self));
  GtkFileChooserNative *dlg = gtk_file_chooser_native_new (
      "Choose Dataset", GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL,
      GTK_FILE_CHOOSER_ACTION_OPEN, "_Choose", "_Cancel");
  GtkFileFilter *all = gtk_file_filter_new ();
  gtk_file_filter_set_name (all, "Datasets (CSV, NumPy, IDX)");
  const char *patterns[] = { "*.csv", "*.npy", "*-ubyte", "*-ubyte.gz", "*.idx*" };
  for (guint i = 0; i < G_N_ELEMENTS (patterns); i++)
    gtk_file_filter_add_pattern (all, patterns[i]);
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (dlg), all);
  g_object_unref (all);
  g_signal_connect (dlg, "response", G_CALLBACK (dataset_chosen), g_object_ref (self));
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dlg));
}

/* The dataset: an entry for any name or path, a menu of the known sets, a
 * file chooser; what is typed is checked (twb_inspector_check_dataset) and
 * a value that is no dataset is refused with a line saying why. */
static void
add_dataset_row (TwbInspector *self, int *row)
{
  GtkWidget *ds = gtk_entry_new ();
  gtk_entry_set_placeholder_text (GTK_ENTRY (ds), "none: twb train --data");
  GtkWidget *hbox = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 0);
  gtk_widget_add_css_class (hbox, "linked");
  gtk_widget_set_hexpand (ds, TRUE);
  gtk_box_append (GTK_BOX (hbox), ds);

  g_autoptr (GMenu) menu = g_menu_new ();
  for (const char *const *n = tw_dataset_known_names (); *n; n++)
    {
      g_autoptr (GMenuItem) item = g_menu_item_new (*n, NULL);
      g_menu_item_set_action_and_target_value (item, "inspector.set-dataset",
                                               g_variant_new_string (*n));
      g_menu_append_item (menu, item);
    }
  g_autoptr (GMenu) files = g_menu_new ();
  g_menu_append (files, "Choose File…", "inspector.choose-dataset");
  g_menu_append_section (menu, NULL, G_MENU_MODEL (files));
  GtkWidget *mb = gtk_menu_button_new ();
  gtk_menu_button_set_menu_model (GTK_MENU_BUTTON (mb), G_MENU_MODEL (menu));
  gtk_widget_set_tooltip_text (mb, "Known datasets");
  gtk_accessible_update_property (GTK_ACCESSIBLE (mb), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  "Known datasets", -1);
  gtk_box_append (GTK_BOX (hbox), mb);
  GtkWidget *open = gtk_button_new_from_icon_name ("document-open-symbolic");
  gtk_actionable_set_action_name (GTK_ACTIONABLE (open), "inspector.choose-dataset");
  gtk_widget_set_tooltip_text (open, "Choose a dataset file (.csv, .npy, IDX)…");
  gtk_accessible_update_property (GTK_ACCESSIBLE (open), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  "Choose dataset file", -1);
  gtk_box_append (GTK_BOX (hbox), open);

  GtkWidget *l = gtk_label_new ("dataset");
  gtk_label_set_xalign (GTK_LABEL (l), 0);
  const char *tip = "a known set from the menu, a .csv or .npy file or a folder of IDX files "
                    "(twb train --data)";
  gtk_widget_set_tooltip_text (l, tip);
  gtk_widget_set_tooltip_text (ds, tip);
  gtk_accessible_update_relation (GTK_ACCESSIBLE (ds), GTK_ACCESSIBLE_RELATION_LABELLED_BY, l, NULL,
                                  -1);
  g_object_set_data (G_OBJECT (ds), "field", GINT_TO_POINTER (R_DATASET));
  g_object_set_data (G_OBJECT (ds), "label", l);
  g_signal_connect (ds, "activate", G_CALLBACK (recipe_entry_activate), self);
  GtkEventController *fc = gtk_event_controller_focus_new ();
  g_signal_connect (fc, "leave", G_CALLBACK (recipe_entry_leave), self);
  gtk_widget_add_controller (ds, fc);
  gtk_grid_attach (GTK_GRID (self->recipe_grid), l, 0, *row, 1, 1);
  gtk_grid_attach (GTK_GRID (self->recipe_grid), hbox, 1, (*row)++, 1, 1);
  self->dataset_error = error_line ();
  gtk_grid_attach (GTK_GRID (self->recipe_grid), self->dataset_error, 0, (*row)++, 2, 1);
  g_hash_table_insert (self->recipe_widgets, GINT_TO_POINTER (R_DATASET), ds);
}

static void
build_recipe_page (TwbInspector *self, GtkWidget *box)
{
  self->recipe_grid = gtk_grid_new ();
  gtk_grid_set_row_spacing (GTK_GRID (self->recipe_grid), 4);
  gtk_grid_set_column_spacing (GTK_GRID (self->recipe_grid), 8);
  int row = 0;
  add_recipe_row (self, &row, R_OPT, "optimizer", "SGD (with momentum), Adam or AdamW",
                  gtk_drop_down_new_from_strings (optimizers));
  add_recipe_row (self, &row, R_LR, "learning rate", "step size of the optimizer",
                  spin (0, 10, 0.0001, 5));
  add_recipe_row (self, &row, R_MOMENTUM, "momentum", "SGD momentum", spin (0, 1, 0.01, 3));
  add_recipe_row (self, &row, R_WD, "weight decay", "L2 penalty (SGD) or decoupled decay (AdamW)",
                  spin (0, 1, 0.0001, 5));
  add_recipe_row (self, &row, R_SCHED, "schedule", "learning-rate schedule",
                  gtk_drop_down_new_from_strings (schedules));
  add_recipe_row (self, &row, R_STEP_SIZE, "step size", "every this many steps, lr *= gamma",
                  spin (0, 1e9, 1, 0));
  add_recipe_row (self, &row, R_GAMMA, "gamma", "factor of each step", spin (0, 1, 0.01, 3));
  add_recipe_row (self, &row, R_TMAX, "period (steps)", "cosine period; 0: the whole run",
                  spin (0, 1e9, 1, 0));
  add_recipe_row (self, &row, R_MIN_LR, "min lr", "cosine floor", spin (0, 10, 0.0001, 5));
  add_recipe_row (self, &row, R_WARMUP, "warm-up steps", "linear warm-up from 0 to lr",
                  spin (0, 1e9, 1, 0));
  add_recipe_row (self, &row, R_BATCH, "batch size", "samples per step", spin (1, 1 << 20, 1, 0));
  add_recipe_row (self, &row, R_EPOCHS, "epochs", "passes over the training set",
                  spin (1, 1e6, 1, 0));
  add_recipe_row (self, &row, R_SEED, "seed", "initialisation and shuffling seed",
                  spin (0, 1e15, 1, 0));
  add_dataset_row (self, &row);
  add_recipe_row (self, &row, R_VAL, "validation split", "fraction of training data held out",
                  spin (0, 0.9, 0.05, 2));
  gtk_box_append (GTK_BOX (box), self->recipe_grid);
}

static void
set_spin (TwbInspector *self, RecipeField f, double v, gboolean shown)
{
  GtkWidget *w = g_hash_table_lookup (self->recipe_widgets, GINT_TO_POINTER (f));
  gtk_spin_button_set_value (GTK_SPIN_BUTTON (w), v);
  gtk_widget_set_visible (w, shown);
  gtk_widget_set_visible (g_object_get_data (G_OBJECT (w), "label"), shown);
}

static void
refresh_recipe (TwbInspector *self)
{
  if (self->doc == NULL)
    return;
  const tw_recipe *r = &twb_document_get_model (self->doc)->recipe;
  self->building = TRUE;
  gtk_drop_down_set_selected (g_hash_table_lookup (self->recipe_widgets, GINT_TO_POINTER (R_OPT)),
                              r->optimizer.type);
  gtk_drop_down_set_selected (g_hash_table_lookup (self->recipe_widgets, GINT_TO_POINTER (R_SCHED)),
                              r->schedule.type);
  gboolean sgd = r->optimizer.type == TW_OPT_SGD;
  set_spin (self, R_LR, r->optimizer.lr, TRUE);
  set_spin (self, R_MOMENTUM, r->optimizer.momentum, sgd);
  set_spin (self, R_WD, r->optimizer.weight_decay, TRUE);
  set_spin (self, R_STEP_SIZE, r->schedule.step_size, r->schedule.type == TW_SCHED_STEP);
  set_spin (self, R_GAMMA, r->schedule.gamma, r->schedule.type == TW_SCHED_STEP);
  set_spin (self, R_TMAX, r->schedule.t_max, r->schedule.type == TW_SCHED_COSINE);
  set_spin (self, R_MIN_LR, r->schedule.min_lr, r->schedule.type == TW_SCHED_COSINE);
  set_spin (self, R_WARMUP, r->schedule.warmup_steps, TRUE);
  set_spin (self, R_BATCH, r->batch_size, TRUE);
  set_spin (self, R_EPOCHS, r->epochs, TRUE);
  set_spin (self, R_SEED, r->seed, TRUE);
  set_spin (self, R_VAL, r->validation_split, TRUE);
  GtkWidget *ds = g_hash_table_lookup (self->recipe_widgets, GINT_TO_POINTER (R_DATASET));
  gtk_editable_set_text (GTK_EDITABLE (ds), r->dataset ? r->dataset : "");
  gtk_widget_remove_css_class (ds, "error");
  set_dataset_error (self, NULL);
  self->building = FALSE;
}

/* ---- Document --------------------------------------------------------------- */

static void
on_changed (TwbDocument *doc, guint flags, TwbInspector *self)
{
  if (flags & TWB_CHANGE_RECIPE && !self->applying)
    refresh_recipe (self);
  if (self->applying)
    {
      refresh_node_info (self);
      refresh_output_row (self);
      return;
    }
  if (flags & (TWB_CHANGE_STRUCTURE | TWB_CHANGE_ATTRS | TWB_CHANGE_FILE))
    rebuild_node_page (self);
  else if (flags & TWB_CHANGE_LAYOUT
           && g_strcmp0 (twb_document_block_of_selection (doc), self->block_name) != 0)
    rebuild_node_page (self);   /* collapsed (Ctrl+G), expanded or renamed */
  else if (flags & (TWB_CHANGE_SHAPES | TWB_CHANGE_STAGES))
    refresh_node_info (self);
}

static void
on_selection (TwbDocument *doc, TwbInspector *self)
{
  rebuild_node_page (self);
}

void
twb_inspector_set_document (TwbInspector *self, TwbDocument *doc)
{
  if (self->doc)
    {
      g_clear_signal_handler (&self->changed_id, self->doc);
      g_clear_signal_handler (&self->selection_id, self->doc);
      g_clear_object (&self->doc);
    }
  if (doc)
    {
      self->doc = g_object_ref (doc);
      self->changed_id = g_signal_connect (doc, "changed", G_CALLBACK (on_changed), self);
      self->selection_id = g_signal_connect (doc, "selection-changed", G_CALLBACK (on_selection),
                                             self);
    }
  rebuild_node_page (self);
  refresh_recipe (self);
}

gboolean
twb_inspector_focus_node (TwbInspector *self)
{
  gtk_stack_set_visible_child_name (GTK_STACK (self->stack), "node");
  if (self->first_field == NULL)
    return FALSE;
  return gtk_widget_grab_focus (self->first_field);
}

void
twb_inspector_show_page (TwbInspector *self, const char *page)
{
  gtk_stack_set_visible_child_name (GTK_STACK (self->stack), page);
}

const char *
twb_inspector_get_node (TwbInspector *self)
{
  return self->node_id;
}

GtkWidget *
twb_inspector_get_live_checks (TwbInspector *self)
{
  return self->node_info;
}

gboolean
twb_inspector_set_dataset_text (TwbInspector *self, const char *text)
{
  GtkWidget *ds = g_hash_table_lookup (self->recipe_widgets, GINT_TO_POINTER (R_DATASET));
  gtk_editable_set_text (GTK_EDITABLE (ds), text);
  g_signal_emit_by_name (ds, "activate");
  return self->dataset_message == NULL;
}

const char *
twb_inspector_get_dataset_error (TwbInspector *self)
{
  return self->dataset_message;
}

GtkWidget *
twb_inspector_get_attr_widget (TwbInspector *self, const char *attr)
{
  return g_hash_table_lookup (self->attr_widgets, attr);
}

const char *
twb_inspector_get_block (TwbInspector *self)
{
  return self->block_name;
}

const char *
twb_inspector_get_attr_error (TwbInspector *self, const char *attr)
{
  GtkWidget *l = g_hash_table_lookup (self->attr_errors, attr);
  return l ? g_object_get_data (G_OBJECT (l), "message") : NULL;
}

gboolean
twb_inspector_edit_attr (TwbInspector *self, const char *attr, const char *text)
{
  GtkWidget *w = g_hash_table_lookup (self->attr_widgets, attr);
  if (w == NULL)
    return FALSE;
  if (GTK_IS_ENTRY (w))
    {
      gtk_editable_set_text (GTK_EDITABLE (w), text);
      g_signal_emit_by_name (w, "activate");
      return twb_inspector_get_attr_error (self, attr) == NULL;
    }
  return apply_attr (self, attr, text);
}

/* ---- Scrolling to the field being edited -------------------------------------------- */

/* The pages turn their viewport's own scrolling to the focus off: a
 * drop-down's list takes the focus too, and the viewport scrolled the page
 * to show it, so that the fields jumped under the pointer and the next
 * click missed.  A click only ever focuses what is in view; the keyboard
 * (Tab, the arrows) is followed here instead, once the focus has moved. */
static void
no_scroll_to_focus (GtkWidget *sw)
{
  GtkWidget *vp = gtk_scrolled_window_get_child (GTK_SCROLLED_WINDOW (sw));
  if (GTK_IS_VIEWPORT (vp))
    gtk_viewport_set_scroll_to_focus (GTK_VIEWPORT (vp), FALSE);
}

static gboolean
scroll_to_focus (gpointer data)
{
  GtkWidget *sw = data;
  GtkRoot *root = gtk_widget_get_root (sw);
  GtkWidget *f = root ? gtk_root_get_focus (root) : NULL;
  graphene_rect_t b;
  if (f && gtk_widget_is_ancestor (f, sw) && !gtk_widget_get_ancestor (f, GTK_TYPE_POPOVER)
      && gtk_widget_compute_bounds (GTK_IS_TEXT (f) ? gtk_widget_get_parent (f) : f, sw, &b))
    {
      GtkAdjustment *adj = gtk_scrolled_window_get_vadjustment (GTK_SCROLLED_WINDOW (sw));
      double v = gtk_adjustment_get_value (adj), page = gtk_widget_get_height (sw);
      if (b.origin.y < 0)
        gtk_adjustment_set_value (adj, v + b.origin.y);
      else if (b.origin.y + b.size.height > page)
        gtk_adjustment_set_value (adj, v + b.origin.y + b.size.height - page);
    }
  return G_SOURCE_REMOVE;
}

static gboolean
page_key (GtkEventControllerKey *c, guint keyval, guint code, GdkModifierType state, gpointer data)
{
  GtkWidget *sw = gtk_event_controller_get_widget (GTK_EVENT_CONTROLLER (c));
  g_idle_add_full (G_PRIORITY_DEFAULT, scroll_to_focus, g_object_ref (sw), g_object_unref);
  return FALSE;
}

/* A page that follows the keyboard's focus (see above). */
static void
follow_keyboard_focus (GtkWidget *sw)
{
  GtkEventController *k = gtk_event_controller_key_new ();
  gtk_event_controller_set_propagation_phase (k, GTK_PHASE_CAPTURE);
  g_signal_connect (k, "key-pressed", G_CALLBACK (page_key), NULL);
  gtk_widget_add_controller (sw, k);
}

static void
twb_inspector_dispose (GObject *object)
{
  TwbInspector *self = TWB_INSPECTOR (object);
  twb_inspector_set_document (self, NULL);
  g_clear_pointer (&self->box, gtk_widget_unparent);
  g_clear_pointer (&self->attr_errors, g_hash_table_unref);
  g_clear_pointer (&self->attr_widgets, g_hash_table_unref);
  g_clear_pointer (&self->recipe_widgets, g_hash_table_unref);
  g_clear_pointer (&self->node_id, g_free);
  g_clear_pointer (&self->block_name, g_free);
  g_clear_pointer (&self->dataset_message, g_free);
  tw_bucket_layout_clear (&self->buckets);
  g_clear_object (&self->actions);
  G_OBJECT_CLASS (twb_inspector_parent_class)->dispose (object);
}

static void
twb_inspector_class_init (TwbInspectorClass *klass)
{
  G_OBJECT_CLASS (klass)->dispose = twb_inspector_dispose;
  gtk_widget_class_set_layout_manager_type (GTK_WIDGET_CLASS (klass), GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name (GTK_WIDGET_CLASS (klass), "inspector");
}

static void
twb_inspector_init (TwbInspector *self)
{
  self->attr_errors = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  self->attr_widgets = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  self->recipe_widgets = g_hash_table_new (NULL, NULL);
  static const GActionEntry entries[] = {
    { "set-dataset", act_set_dataset, "s" },
    { "choose-dataset", act_choose_dataset },
  };
  self->actions = g_simple_action_group_new ();
  g_action_map_add_action_entries (G_ACTION_MAP (self->actions), entries, G_N_ELEMENTS (entries),
                                   self);
  gtk_widget_insert_action_group (GTK_WIDGET (self), "inspector", G_ACTION_GROUP (self->actions));
  self->box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
  gtk_widget_set_parent (self->box, GTK_WIDGET (self));
  self->stack = gtk_stack_new ();
  GtkWidget *switcher = gtk_stack_switcher_new ();
  gtk_stack_switcher_set_stack (GTK_STACK_SWITCHER (switcher), GTK_STACK (self->stack));
  gtk_widget_set_halign (switcher, GTK_ALIGN_CENTER);
  gtk_widget_set_margin_top (switcher, 6);
  gtk_widget_set_margin_bottom (switcher, 6);
  gtk_box_append (GTK_BOX (self->box), switcher);
  gtk_widget_set_vexpand (self->stack, TRUE);
  gtk_box_append (GTK_BOX (self->box), self->stack);

  self->node_page = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (self->node_page), GTK_POLICY_NEVER,
                                  GTK_POLICY_AUTOMATIC);
  follow_keyboard_focus (self->node_page);
  gtk_stack_add_titled (GTK_STACK (self->stack), self->node_page, "node", "Node");

  GtkWidget *rsw = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (rsw), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
  GtkWidget *rbox = gtk_box_new (GTK_ORIENTATION_VERTICAL, 8);
  gtk_widget_set_margin_start (rbox, 12);
  gtk_widget_set_margin_end (rbox, 12);
  gtk_widget_set_margin_top (rbox, 12);
  build_recipe_page (self, rbox);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (rsw), rbox);
  no_scroll_to_focus (rsw);
  follow_keyboard_focus (rsw);
  gtk_stack_add_titled (GTK_STACK (self->stack), rsw, "recipe", "Training recipe");
  rebuild_node_page (self);
}

GtkWidget *
twb_inspector_new (void)
{
  return g_object_new (TWB_TYPE_INSPECTOR, NULL);
}
