/* twb-sequential-dialog.c — add a stack of layers from a few lines of text. */
#define G_LOG_DOMAIN "twb-sequential"

#include "ui/twb-sequential-dialog.h"

#include <string.h>

static char *
default_anchor (TwbDocument *doc)
{
  g_auto (GStrv) sel = twb_document_get_selection (doc);
  if (sel && sel[0] && !sel[1])
    return g_strdup (sel[0]);
  tw_node *src = tw_graph_find_source (twb_document_get_graph (doc), "data");
  return src ? g_strdup (src->id) : NULL;
}

int
twb_sequential_apply (TwbDocument *doc, const char *after, const char *text, GError **error)
{
  g_autofree char *anchor = after ? g_strdup (after) : default_anchor (doc);
  tw_graph *g = twb_document_get_graph (doc);
  double x = 40, y = 120;
  if (anchor)
    {
      tw_node *a = tw_graph_find (g, anchor);
      if (a == NULL)
        {
          g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_NO_SUCH_NODE,
                       "no node '%s' to stack the layers after", anchor);
          return -1;
        }
      twb_document_after_node (doc, anchor, &x, &y);
    }

  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  /* Check every line before touching the document. */
  for (int i = 0; lines[i]; i++)
    {
      g_auto (GStrv) words = g_strsplit_set (g_strstrip (lines[i]), " \t", -1);
      if (words[0] == NULL || words[0][0] == '\0' || words[0][0] == '#')
        continue;
      const tw_op_def *def = tw_op_lookup (words[0]);
      if (def == NULL || (def->flags & TW_OP_INTERNAL))
        {
          g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_UNKNOWN_OP,
                       "line %d: unknown layer '%s'", i + 1, words[0]);
          return -1;
        }
      int depth = 0;   /* inside a list value: "kernel_size=[3, 3]" */
      for (int k = 1; words[k]; k++)
        {
          gboolean in_list = depth > 0;
          for (const char *c = words[k]; *c; c++)
            depth += *c == '[' ? 1 : *c == ']' ? -1 : 0;
          if (in_list || words[k][0] == '\0')
            continue;
          const char *eq = strchr (words[k], '=');
          if (eq == NULL || eq == words[k])
            {
              g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ATTR,
                           "line %d (%s): '%s' is not name=value, like out_features=128",
                           i + 1, words[0], words[k]);
              return -1;
            }
          g_autofree char *name = g_strndup (words[k], eq - words[k]);
          gboolean known = FALSE;
          g_autoptr (GString) names = g_string_new (NULL);
          for (const tw_attr_spec *a = def->attrs; a && a->name; a++)
            {
              known = known || strcmp (a->name, name) == 0;
              g_string_append_printf (names, "%s%s", names->len ? ", " : "", a->name);
            }
          if (!known)
            {
              if (names->len)
                g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ATTR,
                             "line %d (%s): %s has no setting '%s' (it has %s)", i + 1, words[0],
                             words[0], name, names->str);
              else
                g_set_error (error, TWB_DOCUMENT_ERROR, TWB_DOCUMENT_ERROR_INVALID_ATTR,
                             "line %d (%s): %s takes no settings, not '%s'", i + 1, words[0],
                             words[0], name);
              return -1;
            }
        }
    }

  int added = 0;
  g_autofree char *prev = g_strdup (anchor);
  g_autoptr (GPtrArray) new_ids = g_ptr_array_new_with_free_func (g_free);
  twb_document_begin_group (doc, "Add layers");
  for (int i = 0; lines[i]; i++)
    {
      /* Values may hold spaces ("kernel_size=[3, 3]"): split at '=' words. */
      char *line = g_strstrip (lines[i]);
      if (line[0] == '\0' || line[0] == '#')
        continue;
      char *sp = strpbrk (line, " \t");
      g_autofree char *op = sp ? g_strndup (line, sp - line) : g_strdup (line);
      const char *id = twb_document_add_node (doc, op, NULL, x, y, error);
      g_autofree char *nid = g_strdup (id);
      if (id == NULL)
        goto fail_line;
      if (prev && !twb_document_connect (doc, prev, nid, 0, error))
        goto fail_line;
      const char *rest = sp ? sp : "";
      while (*rest)
        {
          while (*rest == ' ' || *rest == '\t')
            rest++;
          if (*rest == '\0')
            break;
          const char *eq = strchr (rest, '=');
          g_autofree char *name = g_strstrip (g_strndup (rest, eq - rest));
          const char *v = eq + 1;
          int depth = 0;
          const char *e = v;
          for (; *e && (depth > 0 || (*e != ' ' && *e != '\t')); e++)
            depth += *e == '[' ? 1 : *e == ']' ? -1 : 0;
          g_autofree char *value = g_strndup (v, e - v);
          if (!twb_document_set_attr_text (doc, nid, name, value, error))
            goto fail_line;
          rest = e;
        }
      g_free (prev);
      prev = g_strdup (nid);
      g_ptr_array_add (new_ids, g_strdup (nid));
      added++;
      continue;
    fail_line:
      /* Name the line and layer as typed, not the id the layer was given:
       * "line 2 (linear): out_features: expected a whole number like 128". */
      if (error && *error && nid && g_str_has_prefix ((*error)->message, nid)
          && (*error)->message[strlen (nid)] == '.')
        {
          char *plain = g_strdup ((*error)->message + strlen (nid) + 1);
          g_free ((*error)->message);
          (*error)->message = plain;
        }
      g_prefix_error (error, "line %d (%s): ", i + 1, op);
      twb_document_end_group (doc);
      twb_document_undo (doc);
      return -1;
    }
  /* The new layers go into free space as one block, rows left to right. */
  g_ptr_array_add (new_ids, NULL);
  twb_document_place_block (doc, (const char *const *) new_ids->pdata, x, y);
  twb_document_end_group (doc);
  if (prev && added)
    {
      const char *ids[] = { prev, NULL };
      twb_document_select (doc, ids, FALSE);
    }
  return added;
}

typedef struct
{
  TwbDocument *doc;
  GtkWidget *window;
  GtkTextBuffer *buffer;
  GtkWidget *error;
} Dialog;

static void
dialog_free (Dialog *d)
{
  g_object_unref (d->doc);
  g_free (d);
}

static void
quick_add (GtkButton *b, Dialog *d)
{
  GtkTextIter end;
  gtk_text_buffer_get_end_iter (d->buffer, &end);
  g_autofree char *line = g_strdup_printf ("%s%s\n", gtk_text_iter_starts_line (&end) ? "" : "\n",
                                           (const char *) g_object_get_data (G_OBJECT (b), "line"));
  gtk_text_buffer_insert (d->buffer, &end, line, -1);
}

static void
add_clicked (GtkButton *b, Dialog *d)
{
  GtkTextIter s, e;
  gtk_text_buffer_get_bounds (d->buffer, &s, &e);
  g_autofree char *text = gtk_text_buffer_get_text (d->buffer, &s, &e, FALSE);
  g_autoptr (GError) error = NULL;
  if (twb_sequential_apply (d->doc, NULL, text, &error) < 0)
    {
      gtk_label_set_text (GTK_LABEL (d->error), error->message);
      gtk_widget_set_visible (d->error, TRUE);
      return;
    }
  gtk_window_destroy (GTK_WINDOW (d->window));
}

static void
cancel_clicked (GtkButton *b, Dialog *d)
{
  gtk_window_destroy (GTK_WINDOW (d->window));
}

GtkWidget *
twb_sequential_dialog_new (GtkWindow *parent, TwbDocument *doc)
{
  static const char *const quick[][2] = {
    { "linear", "linear out_features=128" }, { "conv2d", "conv2d out_channels=16 kernel_size=3 padding=1" },
    { "relu", "relu" }, { "max_pool2d", "max_pool2d kernel_size=2" },
    { "batch_norm", "batch_norm" }, { "dropout", "dropout" }, { "flatten", "flatten" },
  };
  Dialog *d = g_new0 (Dialog, 1);
  d->doc = g_object_ref (doc);
  d->window = gtk_window_new ();
  gtk_window_set_title (GTK_WINDOW (d->window), "Add Sequential Layers");
  gtk_window_set_transient_for (GTK_WINDOW (d->window), parent);
  gtk_window_set_modal (GTK_WINDOW (d->window), TRUE);
  gtk_window_set_default_size (GTK_WINDOW (d->window), 520, 420);
  g_object_set_data_full (G_OBJECT (d->window), "dialog", d, (GDestroyNotify) dialog_free);

  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 8);
  gtk_widget_set_margin_start (box, 12);
  gtk_widget_set_margin_end (box, 12);
  gtk_widget_set_margin_top (box, 12);
  gtk_widget_set_margin_bottom (box, 12);
  GtkWidget *help = gtk_label_new ("One layer per line: the op, then name=value attributes. "
                                   "Each layer takes the previous one's output; the first is fed "
                                   "by the selected node (or the data input).");
  gtk_label_set_wrap (GTK_LABEL (help), TRUE);
  gtk_label_set_xalign (GTK_LABEL (help), 0);
  gtk_box_append (GTK_BOX (box), help);

  GtkWidget *flow = gtk_flow_box_new ();
  gtk_flow_box_set_selection_mode (GTK_FLOW_BOX (flow), GTK_SELECTION_NONE);
  for (guint i = 0; i < G_N_ELEMENTS (quick); i++)
    {
      g_autofree char *label = g_strdup_printf ("+ %s", quick[i][0]);
      GtkWidget *b = gtk_button_new_with_label (label);
      g_object_set_data (G_OBJECT (b), "line", (gpointer) quick[i][1]);
      g_signal_connect (b, "clicked", G_CALLBACK (quick_add), d);
      gtk_flow_box_append (GTK_FLOW_BOX (flow), b);
    }
  gtk_box_append (GTK_BOX (box), flow);

  GtkWidget *tv = gtk_text_view_new ();
  gtk_text_view_set_monospace (GTK_TEXT_VIEW (tv), TRUE);
  gtk_accessible_update_property (GTK_ACCESSIBLE (tv), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  "Layers, one per line", -1);
  d->buffer = gtk_text_view_get_buffer (GTK_TEXT_VIEW (tv));
  gtk_text_buffer_set_text (d->buffer, "linear out_features=128\nrelu\nlinear out_features=10\n", -1);
  GtkWidget *sw = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (sw), tv);
  gtk_widget_set_vexpand (sw, TRUE);
  gtk_widget_add_css_class (sw, "card");
  gtk_box_append (GTK_BOX (box), sw);

  d->error = gtk_label_new (NULL);
  gtk_widget_add_css_class (d->error, "error");
  gtk_label_set_wrap (GTK_LABEL (d->error), TRUE);
  gtk_label_set_xalign (GTK_LABEL (d->error), 0);
  gtk_widget_set_visible (d->error, FALSE);
  gtk_box_append (GTK_BOX (box), d->error);

  GtkWidget *buttons = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 8);
  gtk_widget_set_halign (buttons, GTK_ALIGN_END);
  GtkWidget *cancel = gtk_button_new_with_mnemonic ("_Cancel");
  GtkWidget *add = gtk_button_new_with_mnemonic ("_Add Layers");
  gtk_widget_add_css_class (add, "suggested-action");
  g_signal_connect (cancel, "clicked", G_CALLBACK (cancel_clicked), d);
  g_signal_connect (add, "clicked", G_CALLBACK (add_clicked), d);
  gtk_box_append (GTK_BOX (buttons), cancel);
  gtk_box_append (GTK_BOX (buttons), add);
  gtk_box_append (GTK_BOX (box), buttons);
  gtk_window_set_child (GTK_WINDOW (d->window), box);
  gtk_window_set_default_widget (GTK_WINDOW (d->window), add);
  return d->window;
}
