/* twb-palette.c — layers grouped by category, searchable, draggable. */
#define G_LOG_DOMAIN "twb-palette"

#include "ui/twb-palette.h"

#include "engine/op.h"

#include <string.h>

struct _TwbPalette
{
  GtkWidget parent_instance;
  GtkWidget *box;
  GtkWidget *search;
  GtkWidget *list;
  char *filter;
  gboolean setting_text;        /* twb_palette_set_search is setting the entry */
};

G_DEFINE_FINAL_TYPE (TwbPalette, twb_palette, GTK_TYPE_WIDGET)

enum
{
  SIGNAL_OP_ACTIVATED,
  N_SIGNALS
};
static guint signals[N_SIGNALS];

/* The order of the palette; Shape and Math hold the rest. */
static const char *const categories[] = { "Core",  "Convolution", "Pooling", "Normalisation",
                                          "Activation", "Loss", "Data", "Shape",
                                          "Math", NULL };

const char *const *
twb_palette_categories (void)
{
  return categories;
}

static int
category_rank (const char *cat)
{
  for (int i = 0; categories[i]; i++)
    if (cat && strcmp (cat, categories[i]) == 0)
      return i;
  return G_N_ELEMENTS (categories);
}

static int
cmp_ops (const void *a, const void *b)
{
  const tw_op_def *x = *(const tw_op_def *const *) a, *y = *(const tw_op_def *const *) b;
  int r = category_rank (x->category) - category_rank (y->category);
  return r ? r : strcmp (x->name, y->name);
}

static GdkContentProvider *
drag_prepare (GtkDragSource *src, double x, double y, GtkWidget *row)
{
  const char *op = g_object_get_data (G_OBJECT (row), "op");
  return gdk_content_provider_new_typed (G_TYPE_STRING, op);
}

static void
drag_begin (GtkDragSource *src, GdkDrag *drag, GtkWidget *row)
{
  GdkPaintable *icon = gtk_widget_paintable_new (row);
  gtk_drag_source_set_icon (src, icon, 10, 10);
  g_object_unref (icon);
}

static const char *
row_category (GtkListBoxRow *row)
{
  return g_object_get_data (G_OBJECT (row), "category");
}

/* While searching: how well a row's op name matches (0: the name itself,
 * 1: a name starting with it, 2: a name containing it, 3: its category or
 * description), so "sigmoid" lists and adds sigmoid before hard_sigmoid. */
static int
match_rank (GtkListBoxRow *row, const char *filter)
{
  g_autofree char *name = g_utf8_casefold (g_object_get_data (G_OBJECT (row), "op"), -1);
  if (strcmp (name, filter) == 0)
    return 0;
  if (g_str_has_prefix (name, filter))
    return 1;
  return strstr (name, filter) ? 2 : 3;
}

static gboolean
searching (TwbPalette *self)
{
  return self->filter && self->filter[0];
}

static int
sort_func (GtkListBoxRow *a, GtkListBoxRow *b, gpointer data)
{
  TwbPalette *self = data;
  if (searching (self))
    {
      int ra = match_rank (a, self->filter), rb = match_rank (b, self->filter);
      if (ra != rb)
        return ra - rb;
    }
  return GPOINTER_TO_INT (g_object_get_data (G_OBJECT (a), "order"))
         - GPOINTER_TO_INT (g_object_get_data (G_OBJECT (b), "order"));
}

static void
header_func (GtkListBoxRow *row, GtkListBoxRow *before, gpointer data)
{
  /* While searching the rows are ranked: a category's header shows again
   * where ranks interleave categories. */
  const char *cat = row_category (row);
  if (before && g_strcmp0 (cat, row_category (before)) == 0)
    {
      gtk_list_box_row_set_header (row, NULL);
      return;
    }
  GtkWidget *label = gtk_label_new (cat);
  gtk_label_set_xalign (GTK_LABEL (label), 0);
  gtk_widget_add_css_class (label, "palette-header");
  gtk_list_box_row_set_header (row, label);
}

static gboolean
filter_func (GtkListBoxRow *row, gpointer data)
{
  TwbPalette *self = data;
  if (self->filter == NULL || self->filter[0] == '\0')
    return TRUE;
  const char *op = g_object_get_data (G_OBJECT (row), "op");
  const char *cat = row_category (row);
  const char *doc = g_object_get_data (G_OBJECT (row), "doc");
  g_autofree char *a = g_utf8_casefold (op, -1);
  g_autofree char *b = g_utf8_casefold (cat ? cat : "", -1);
  g_autofree char *c = g_utf8_casefold (doc ? doc : "", -1);
  return strstr (a, self->filter) || strstr (b, self->filter) || strstr (c, self->filter);
}

static void
search_changed (GtkSearchEntry *e, TwbPalette *self)
{
  if (self->setting_text)
    return;
  twb_palette_set_search (self, gtk_editable_get_text (GTK_EDITABLE (e)));
}

void
twb_palette_set_search (TwbPalette *self, const char *text)
{
  /* The entry first: setting its text empties it on the way, and an empty
   * search entry reports at once (search_changed would then filter by ""). */
  if (g_strcmp0 (gtk_editable_get_text (GTK_EDITABLE (self->search)), text ? text : "") != 0)
    {
      self->setting_text = TRUE;
      gtk_editable_set_text (GTK_EDITABLE (self->search), text ? text : "");
      self->setting_text = FALSE;
    }
  g_free (self->filter);
  self->filter = g_utf8_casefold (text ? text : "", -1);
  gtk_list_box_invalidate_filter (GTK_LIST_BOX (self->list));
  gtk_list_box_invalidate_sort (GTK_LIST_BOX (self->list));
  gtk_list_box_invalidate_headers (GTK_LIST_BOX (self->list));
}

int
twb_palette_count_visible (TwbPalette *self)
{
  int n = 0;
  for (GtkWidget *c = gtk_widget_get_first_child (self->list); c; c = gtk_widget_get_next_sibling (c))
    if (GTK_IS_LIST_BOX_ROW (c) && gtk_widget_get_child_visible (c)
        && filter_func (GTK_LIST_BOX_ROW (c), self))
      n++;
  return n;
}

static void
row_activated (GtkListBox *box, GtkListBoxRow *row, TwbPalette *self)
{
  g_signal_emit (self, signals[SIGNAL_OP_ACTIVATED], 0, g_object_get_data (G_OBJECT (row), "op"));
}

static GtkListBoxRow *
first_match (TwbPalette *self)
{
  GtkListBoxRow *r;
  for (int i = 0; (r = gtk_list_box_get_row_at_index (GTK_LIST_BOX (self->list), i)); i++)
    if (filter_func (r, self))
      return r;
  return NULL;
}

const char *
twb_palette_first_match (TwbPalette *self)
{
  GtkListBoxRow *r = first_match (self);
  return r ? g_object_get_data (G_OBJECT (r), "op") : NULL;
}

static void
search_activate (GtkSearchEntry *e, TwbPalette *self)
{
  /* Enter in the search adds the first match, in the list's (ranked) order. */
  GtkListBoxRow *r = first_match (self);
  if (r)
    row_activated (GTK_LIST_BOX (self->list), r, self);
}

static void
populate (TwbPalette *self)
{
  int n = 0;
  const tw_op_def *const *ops = tw_op_list (&n);
  g_autofree const tw_op_def **sorted = g_new (const tw_op_def *, MAX (n, 1));
  int k = 0;
  for (int i = 0; i < n; i++)
    if (!(ops[i]->flags & TW_OP_INTERNAL))
      sorted[k++] = ops[i];
  qsort (sorted, k, sizeof *sorted, cmp_ops);
  for (int i = 0; i < k; i++)
    {
      const tw_op_def *d = sorted[i];
      GtkWidget *row = gtk_list_box_row_new ();
      GtkWidget *label = gtk_label_new (d->name);
      gtk_label_set_xalign (GTK_LABEL (label), 0);
      gtk_widget_add_css_class (label, "palette-op");
      gtk_list_box_row_set_child (GTK_LIST_BOX_ROW (row), label);
      g_object_set_data (G_OBJECT (row), "op", (gpointer) d->name);
      g_object_set_data (G_OBJECT (row), "category", (gpointer) (d->category ? d->category : "Other"));
      g_object_set_data (G_OBJECT (row), "doc", (gpointer) d->doc);
      g_object_set_data (G_OBJECT (row), "order", GINT_TO_POINTER (i));
      if (d->doc)
        gtk_widget_set_tooltip_text (row, d->doc);
      g_autofree char *acc = g_strdup_printf ("%s layer, %s. Drag onto the canvas or press Enter to add it",
                                              d->name, d->category ? d->category : "Other");
      gtk_accessible_update_property (GTK_ACCESSIBLE (row), GTK_ACCESSIBLE_PROPERTY_LABEL, acc, -1);
      GtkDragSource *src = gtk_drag_source_new ();
      gtk_drag_source_set_actions (src, GDK_ACTION_COPY);
      g_signal_connect (src, "prepare", G_CALLBACK (drag_prepare), row);
      g_signal_connect (src, "drag-begin", G_CALLBACK (drag_begin), row);
      gtk_widget_add_controller (row, GTK_EVENT_CONTROLLER (src));
      gtk_list_box_append (GTK_LIST_BOX (self->list), row);
    }
}

static void
twb_palette_dispose (GObject *object)
{
  TwbPalette *self = TWB_PALETTE (object);
  g_clear_pointer (&self->box, gtk_widget_unparent);
  g_clear_pointer (&self->filter, g_free);
  G_OBJECT_CLASS (twb_palette_parent_class)->dispose (object);
}

static void
twb_palette_class_init (TwbPaletteClass *klass)
{
  G_OBJECT_CLASS (klass)->dispose = twb_palette_dispose;
  signals[SIGNAL_OP_ACTIVATED] = g_signal_new ("op-activated", G_TYPE_FROM_CLASS (klass),
                                               G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                               G_TYPE_NONE, 1, G_TYPE_STRING);
  gtk_widget_class_set_layout_manager_type (GTK_WIDGET_CLASS (klass), GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name (GTK_WIDGET_CLASS (klass), "palette");
}

static void
twb_palette_init (TwbPalette *self)
{
  tw_ops_init ();
  self->box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 6);
  gtk_widget_set_parent (self->box, GTK_WIDGET (self));
  self->search = gtk_search_entry_new ();
  g_object_set (self->search, "placeholder-text", "Search layers", NULL);
  gtk_accessible_update_property (GTK_ACCESSIBLE (self->search), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  "Search layers", -1);
  gtk_widget_set_margin_start (self->search, 6);
  gtk_widget_set_margin_end (self->search, 6);
  gtk_widget_set_margin_top (self->search, 6);
  g_signal_connect (self->search, "search-changed", G_CALLBACK (search_changed), self);
  g_signal_connect (self->search, "activate", G_CALLBACK (search_activate), self);
  gtk_box_append (GTK_BOX (self->box), self->search);

  GtkWidget *sw = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (sw), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
  gtk_widget_set_vexpand (sw, TRUE);
  self->list = gtk_list_box_new ();
  gtk_widget_add_css_class (self->list, "navigation-sidebar");
  gtk_accessible_update_property (GTK_ACCESSIBLE (self->list), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  "Layers", -1);
  gtk_list_box_set_header_func (GTK_LIST_BOX (self->list), header_func, NULL, NULL);
  gtk_list_box_set_sort_func (GTK_LIST_BOX (self->list), sort_func, self, NULL);
  gtk_list_box_set_filter_func (GTK_LIST_BOX (self->list), filter_func, self, NULL);
  gtk_list_box_set_activate_on_single_click (GTK_LIST_BOX (self->list), FALSE);
  g_signal_connect (self->list, "row-activated", G_CALLBACK (row_activated), self);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (sw), self->list);
  gtk_box_append (GTK_BOX (self->box), sw);
  populate (self);
}

GtkWidget *
twb_palette_new (void)
{
  return g_object_new (TWB_TYPE_PALETTE, NULL);
}
