/* twb-stat-table.h — a sortable table of figures (GtkColumnView): the
 * Profiler tab's aggregated range, top ops, layers, ranks and comparison.
 *
 * Columns are text or numbers; numbers are shown by their kind (a count, a
 * duration in ns shown as ns/µs/ms/s, a percentage, a plain figure) and
 * sort numerically; a click on a header sorts by it.
 *
 *   static const TwbStatColumn cols[] = { { "Name", TWB_COL_TEXT }, { "Total", TWB_COL_TIME } };
 *   GtkWidget *t = twb_stat_table_new (cols, G_N_ELEMENTS (cols));
 *   twb_stat_table_append (TWB_STAT_TABLE (t), (const char *[]) { "linear", NULL },
 *                          (double[]) { 0, 1.5e6 });
 *   twb_stat_table_sort (TWB_STAT_TABLE (t), 1, GTK_SORT_DESCENDING);
 */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

typedef enum
{
  TWB_COL_TEXT,
  TWB_COL_COUNT,                /* a whole number */
  TWB_COL_TIME,                 /* nanoseconds */
  TWB_COL_PERCENT,              /* 0..100 */
  TWB_COL_NUMBER,               /* a figure, 1 decimal (GFLOP/s) */
  TWB_COL_SIGNED_TIME,          /* nanoseconds, with a sign (a difference) */
} TwbColKind;

typedef struct
{
  const char *title;
  TwbColKind kind;
} TwbStatColumn;

#define TWB_TYPE_STAT_TABLE (twb_stat_table_get_type ())
G_DECLARE_FINAL_TYPE (TwbStatTable, twb_stat_table, TWB, STAT_TABLE, GtkWidget)

/* cols is copied (titles too). */
GtkWidget *twb_stat_table_new (const TwbStatColumn *cols, guint n_cols);

void twb_stat_table_clear (TwbStatTable *t);
/* One row: texts[c] for text columns (NULL shows nothing), values[c] for
 * the others (NaN shows "—").  Its row id is the number of rows before it. */
void twb_stat_table_append (TwbStatTable *t, const char *const *texts, const double *values);
guint twb_stat_table_n_rows (TwbStatTable *t);
/* The cell as added (for tests): a text column's text or NULL. */
const char *twb_stat_table_get_text (TwbStatTable *t, guint row, guint col);
double twb_stat_table_get_value (TwbStatTable *t, guint row, guint col);
/* The cell as shown ("1.25 ms"); free it. */
char *twb_stat_table_format (TwbStatTable *t, guint row, guint col);
void twb_stat_table_sort (TwbStatTable *t, guint col, GtkSortType order);
/* A column's header, as shown and as twb_stat_table_get_title reads it
 * (the title given to _new until set; owned by the table). */
void twb_stat_table_set_title (TwbStatTable *t, guint col, const char *title);
const char *twb_stat_table_get_title (TwbStatTable *t, guint col);
/* A line under the table (totals, "no range selected"); NULL hides it. */
void twb_stat_table_set_footer (TwbStatTable *t, const char *text);
/* Shown instead of an empty table. */
void twb_stat_table_set_placeholder (TwbStatTable *t, const char *text);

/* "row-activated" (TwbStatTable *, guint row id): a row picked (click or
 * Enter). */

/* ns as text: "850 ns", "12.5 µs", "3.20 ms", "1.50 s" (free it). */
char *twb_format_duration (double ns);

G_END_DECLS
