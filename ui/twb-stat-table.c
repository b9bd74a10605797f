/* twb-stat-table.c — a sortable table of figures (twb-stat-table.h). */
#define G_LOG_DOMAIN "twb-stat-table"

#include "ui/twb-stat-table.h"

#include <math.h>

/* ---- Rows -------------------------------------------------------------------------------- */

#define TWB_TYPE_STAT_ROW (twb_stat_row_get_type ())
G_DECLARE_FINAL_TYPE (TwbStatRow, twb_stat_row, TWB, STAT_ROW, GObject)

struct _TwbStatRow
{
  GObject parent_instance;
  guint id;
  guint n;
  char **texts;                 /* n entries, NULL where none */
  double *values;
};

G_DEFINE_FINAL_TYPE (TwbStatRow, twb_stat_row, G_TYPE_OBJECT)

static void
twb_stat_row_finalize (GObject *o)
{
  TwbStatRow *r = TWB_STAT_ROW (o);
  for (guint i = 0; i < r->n; i++)
    g_free (r->texts[i]);
  g_free (r->texts);
  g_free (r->values);
  G_OBJECT_CLASS (twb_stat_row_parent_class)->finalize (o);
}

static void
twb_stat_row_class_init (TwbStatRowClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = twb_stat_row_finalize;
}

static void
twb_stat_row_init (TwbStatRow *r)
{
}

/* ---- The table --------------------------------------------------------------------------- */

struct _TwbStatTable
{
  GtkWidget parent_instance;
  TwbStatColumn *cols;
  guint n_cols;
  GListStore *store;            /* TwbStatRow in the order added */
  GtkSortListModel *sorted;
  GtkSingleSelection *selection;
  GtkWidget *box, *stack, *view, *placeholder, *footer;
  GPtrArray *columns;           /* GtkColumnViewColumn */
  gboolean filling;             /* no row-activated while the rows change */
};

G_DEFINE_FINAL_TYPE (TwbStatTable, twb_stat_table, GTK_TYPE_WIDGET)

enum
{
  SIG_ROW_ACTIVATED,
  N_SIGNALS
};
static guint signals[N_SIGNALS];

char *
twb_format_duration (double ns)
{
  if (isnan (ns))
    return g_strdup ("—");
  double a = fabs (ns);
  if (a < 1e3)
    return g_strdup_printf ("%.0f ns", ns);
  if (a < 1e6)
    return g_strdup_printf (a < 1e4 ? "%.2f µs" : a < 1e5 ? "%.1f µs" : "%.0f µs", ns / 1e3);
  if (a < 1e9)
    return g_strdup_printf (a < 1e7 ? "%.2f ms" : a < 1e8 ? "%.1f ms" : "%.0f ms", ns / 1e6);
  return g_strdup_printf ("%.2f s", ns / 1e9);
}

static char *
format_cell (const TwbStatColumn *c, const TwbStatRow *r, guint col)
{
  double v = r->values[col];
  if (c->kind == TWB_COL_TEXT)
    return g_strdup (r->texts[col] ? r->texts[col] : "");
  if (isnan (v))
    return g_strdup ("—");
  switch (c->kind)
    {
    case TWB_COL_COUNT:
      return g_strdup_printf ("%.0f", v);
    case TWB_COL_TIME:
      return twb_format_duration (v);
    case TWB_COL_SIGNED_TIME:
      {
        g_autofree char *d = twb_format_duration (fabs (v));
        return g_strdup_printf ("%s%s", v > 0 ? "+" : v < 0 ? "−" : "", d);
      }
    case TWB_COL_PERCENT:
      return g_strdup_printf (v != 0 && fabs (v) < 0.1 ? "%.2f %%" : "%.1f %%", v);
    case TWB_COL_NUMBER:
    default:
      return g_strdup_printf ("%.1f", v);
    }
}

typedef struct
{
  TwbStatTable *table;
  guint col;
} col_ref;

static void
setup_cell (GtkSignalListItemFactory *f, GtkListItem *item, gpointer data)
{
  col_ref *ref = data;
  GtkWidget *label = gtk_label_new (NULL);
  gboolean text = ref->table->cols[ref->col].kind == TWB_COL_TEXT;
  gtk_label_set_xalign (GTK_LABEL (label), text ? 0.0f : 1.0f);
  if (text)
    {
      gtk_label_set_ellipsize (GTK_LABEL (label), PANGO_ELLIPSIZE_END);
      gtk_label_set_width_chars (GTK_LABEL (label), 8);
    }
  else
    gtk_widget_add_css_class (label, "numeric");
  gtk_list_item_set_child (item, label);
}

static void
bind_cell (GtkSignalListItemFactory *f, GtkListItem *item, gpointer data)
{
  col_ref *ref = data;
  TwbStatRow *r = gtk_list_item_get_item (item);
  g_autofree char *s = format_cell (&ref->table->cols[ref->col], r, ref->col);
  GtkWidget *label = gtk_list_item_get_child (item);
  gtk_label_set_text (GTK_LABEL (label), s);
  if (ref->table->cols[ref->col].kind == TWB_COL_TEXT)
    gtk_widget_set_tooltip_text (label, s);
}

static int
compare_rows (gconstpointer a, gconstpointer b, gpointer data)
{
  col_ref *ref = data;
  const TwbStatRow *x = a, *y = b;
  if (ref->table->cols[ref->col].kind == TWB_COL_TEXT)
    {
      const char *s = x->texts[ref->col] ? x->texts[ref->col] : "";
      const char *t = y->texts[ref->col] ? y->texts[ref->col] : "";
      int c = g_utf8_collate (s, t);
      return c < 0 ? GTK_ORDERING_SMALLER : c > 0 ? GTK_ORDERING_LARGER : GTK_ORDERING_EQUAL;
    }
  double u = x->values[ref->col], v = y->values[ref->col];
  if (isnan (u) || isnan (v))
    return isnan (u) == isnan (v) ? GTK_ORDERING_EQUAL
                                  : isnan (u) ? GTK_ORDERING_LARGER : GTK_ORDERING_SMALLER;
  return u < v ? GTK_ORDERING_SMALLER : u > v ? GTK_ORDERING_LARGER : GTK_ORDERING_EQUAL;
}

static void
selection_changed (GtkSingleSelection *sel, GParamSpec *p, TwbStatTable *t)
{
  if (t->filling)
    return;
  TwbStatRow *r = gtk_single_selection_get_selected_item (sel);
  if (r)
    g_signal_emit (t, signals[SIG_ROW_ACTIVATED], 0, r->id);
}

static void
row_activate (GtkColumnView *v, guint position, TwbStatTable *t)
{
  g_autoptr (TwbStatRow) r = g_list_model_get_item (G_LIST_MODEL (t->sorted), position);
  if (r)
    g_signal_emit (t, signals[SIG_ROW_ACTIVATED], 0, r->id);
}

GtkWidget *
twb_stat_table_new (const TwbStatColumn *cols, guint n_cols)
{
  g_return_val_if_fail (n_cols > 0, NULL);
  TwbStatTable *t = g_object_new (TWB_TYPE_STAT_TABLE, NULL);
  t->n_cols = n_cols;
  t->cols = g_new (TwbStatColumn, n_cols);
  for (guint c = 0; c < n_cols; c++)
    {
      t->cols[c].kind = cols[c].kind;
      t->cols[c].title = g_intern_string (cols[c].title);
    }
  for (guint c = 0; c < n_cols; c++)
    {
      col_ref *ref = g_new (col_ref, 1);
      ref->table = t;
      ref->col = c;
      GtkListItemFactory *f = gtk_signal_list_item_factory_new ();
      g_signal_connect (f, "setup", G_CALLBACK (setup_cell), ref);
      g_signal_connect (f, "bind", G_CALLBACK (bind_cell), ref);
      GtkColumnViewColumn *col = gtk_column_view_column_new (t->cols[c].title, f);
      g_object_set_data_full (G_OBJECT (col), "twb-col-ref", ref, g_free);
      GtkSorter *s = GTK_SORTER (gtk_custom_sorter_new (compare_rows, ref, NULL));
      gtk_column_view_column_set_sorter (col, s);
      g_object_unref (s);
      gtk_column_view_column_set_resizable (col, TRUE);
      if (t->cols[c].kind == TWB_COL_TEXT && c == 0)
        gtk_column_view_column_set_expand (col, TRUE);
      gtk_column_view_append_column (GTK_COLUMN_VIEW (t->view), col);
      g_ptr_array_add (t->columns, col);
    }
  return GTK_WIDGET (t);
}

static void
twb_stat_table_dispose (GObject *o)
{
  TwbStatTable *t = TWB_STAT_TABLE (o);
  if (t->selection)
    g_signal_handlers_disconnect_by_data (t->selection, t);
  g_clear_pointer (&t->box, gtk_widget_unparent);
  g_clear_pointer (&t->columns, g_ptr_array_unref);
  g_clear_object (&t->selection);
  G_OBJECT_CLASS (twb_stat_table_parent_class)->dispose (o);
}

static void
twb_stat_table_finalize (GObject *o)
{
  TwbStatTable *t = TWB_STAT_TABLE (o);
  g_free (t->cols);
  G_OBJECT_CLASS (twb_stat_table_parent_class)->finalize (o);
}

static void
twb_stat_table_class_init (TwbStatTableClass *klass)
{
  GObjectClass *oc = G_OBJECT_CLASS (klass);
  oc->dispose = twb_stat_table_dispose;
  oc->finalize = twb_stat_table_finalize;
  gtk_widget_class_set_layout_manager_type (GTK_WIDGET_CLASS (klass), GTK_TYPE_BIN_LAYOUT);
  signals[SIG_ROW_ACTIVATED] = g_signal_new ("row-activated", G_TYPE_FROM_CLASS (klass),
                                             G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE,
                                             1, G_TYPE_UINT);
}

static void
twb_stat_table_init (TwbStatTable *t)
{
  t->columns = g_ptr_array_new ();
  t->store = g_list_store_new (TWB_TYPE_STAT_ROW);
  t->view = gtk_column_view_new (NULL);
  /* The sort model follows the sorter of the headers clicked. */
  GtkSorter *sorter = gtk_column_view_get_sorter (GTK_COLUMN_VIEW (t->view));
  t->sorted = gtk_sort_list_model_new (G_LIST_MODEL (t->store), g_object_ref (sorter));
  t->selection = gtk_single_selection_new (G_LIST_MODEL (t->sorted));
  gtk_single_selection_set_autoselect (t->selection, FALSE);
  gtk_single_selection_set_can_unselect (t->selection, TRUE);
  gtk_column_view_set_model (GTK_COLUMN_VIEW (t->view), GTK_SELECTION_MODEL (t->selection));
  gtk_column_view_set_show_column_separators (GTK_COLUMN_VIEW (t->view), TRUE);
  gtk_widget_add_css_class (t->view, "data-table");
  g_signal_connect (t->selection, "notify::selected", G_CALLBACK (selection_changed), t);
  g_signal_connect (t->view, "activate", G_CALLBACK (row_activate), t);

  t->box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
  gtk_widget_set_parent (t->box, GTK_WIDGET (t));
  t->stack = gtk_stack_new ();
  gtk_widget_set_vexpand (t->stack, TRUE);
  GtkWidget *sw = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (sw), GTK_POLICY_AUTOMATIC,
                                  GTK_POLICY_AUTOMATIC);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (sw), t->view);
  gtk_scrolled_window_set_min_content_height (GTK_SCROLLED_WINDOW (sw), 80);
  gtk_stack_add_named (GTK_STACK (t->stack), sw, "table");
  t->placeholder = gtk_label_new ("");
  gtk_label_set_wrap (GTK_LABEL (t->placeholder), TRUE);
  gtk_widget_add_css_class (t->placeholder, "dim-label");
  gtk_stack_add_named (GTK_STACK (t->stack), t->placeholder, "empty");
  gtk_stack_set_visible_child_name (GTK_STACK (t->stack), "empty");
  gtk_box_append (GTK_BOX (t->box), t->stack);
  t->footer = gtk_label_new (NULL);
  gtk_label_set_xalign (GTK_LABEL (t->footer), 0.0f);
  gtk_label_set_wrap (GTK_LABEL (t->footer), TRUE);
  gtk_widget_add_css_class (t->footer, "dim-label");
  gtk_widget_set_margin_start (t->footer, 6);
  gtk_widget_set_margin_top (t->footer, 2);
  gtk_widget_set_visible (t->footer, FALSE);
  gtk_box_append (GTK_BOX (t->box), t->footer);
}

void
twb_stat_table_clear (TwbStatTable *t)
{
  t->filling = TRUE;
  g_list_store_remove_all (t->store);
  t->filling = FALSE;
  gtk_stack_set_visible_child_name (GTK_STACK (t->stack), "empty");
}

void
twb_stat_table_append (TwbStatTable *t, const char *const *texts, const double *values)
{
  TwbStatRow *r = g_object_new (TWB_TYPE_STAT_ROW, NULL);
  r->id = g_list_model_get_n_items (G_LIST_MODEL (t->store));
  r->n = t->n_cols;
  r->texts = g_new0 (char *, t->n_cols);
  r->values = g_new (double, t->n_cols);
  for (guint c = 0; c < t->n_cols; c++)
    {
      gboolean text = t->cols[c].kind == TWB_COL_TEXT;
      r->texts[c] = text && texts ? g_strdup (texts[c]) : NULL;
      r->values[c] = !text && values ? values[c] : NAN;
    }
  t->filling = TRUE;
  g_list_store_append (t->store, r);
  t->filling = FALSE;
  g_object_unref (r);
  gtk_stack_set_visible_child_name (GTK_STACK (t->stack), "table");
}

guint
twb_stat_table_n_rows (TwbStatTable *t)
{
  return g_list_model_get_n_items (G_LIST_MODEL (t->store));
}

static TwbStatRow *
row_at (TwbStatTable *t, guint row, guint col)
{
  g_return_val_if_fail (col < t->n_cols, NULL);
  TwbStatRow *r = g_list_model_get_item (G_LIST_MODEL (t->store), row);
  if (r)
    g_object_unref (r);         /* the store keeps it */
  return r;
}

const char *
twb_stat_table_get_text (TwbStatTable *t, guint row, guint col)
{
  TwbStatRow *r = row_at (t, row, col);
  return r ? r->texts[col] : NULL;
}

double
twb_stat_table_get_value (TwbStatTable *t, guint row, guint col)
{
  TwbStatRow *r = row_at (t, row, col);
  return r ? r->values[col] : NAN;
}

char *
twb_stat_table_format (TwbStatTable *t, guint row, guint col)
{
  TwbStatRow *r = row_at (t, row, col);
  return r ? format_cell (&t->cols[col], r, col) : NULL;
}

void
twb_stat_table_sort (TwbStatTable *t, guint col, GtkSortType order)
{
  g_return_if_fail (col < t->n_cols);
  gtk_column_view_sort_by_column (GTK_COLUMN_VIEW (t->view), t->columns->pdata[col], order);
}

void
twb_stat_table_set_footer (TwbStatTable *t, const char *text)
{
  gtk_label_set_text (GTK_LABEL (t->footer), text ? text : "");
  gtk_widget_set_visible (t->footer, text != NULL);
}

void
twb_stat_table_set_placeholder (TwbStatTable *t, const char *text)
{
  gtk_label_set_text (GTK_LABEL (t->placeholder), text ? text : "");
}

void
twb_stat_table_set_title (TwbStatTable *t, guint col, const char *title)
{
  g_return_if_fail (TWB_IS_STAT_TABLE (t) && col < t->n_cols);
  gtk_column_view_column_set_title (g_ptr_array_index (t->columns, col), title);
}

const char *
twb_stat_table_get_title (TwbStatTable *t, guint col)
{
  g_return_val_if_fail (TWB_IS_STAT_TABLE (t) && col < t->n_cols, NULL);
  return gtk_column_view_column_get_title (g_ptr_array_index (t->columns, col));
}
