/* twb-palette.h — the layer palette: every op of the registry that a user
 * places (TW_OP_INTERNAL ones hidden), grouped by category, with a search.
 * Rows are drag sources (a string: the op name) for the graph canvas; Enter
 * or a double-click emits "op-activated" (const char *op) instead.
 */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

#define TWB_TYPE_PALETTE (twb_palette_get_type ())
G_DECLARE_FINAL_TYPE (TwbPalette, twb_palette, TWB, PALETTE, GtkWidget)

GtkWidget *twb_palette_new (void);
/* Filter as if typed in the search entry. */
void twb_palette_set_search (TwbPalette *self, const char *text);
/* Number of rows the current search shows (tests). */
int twb_palette_count_visible (TwbPalette *self);
/* The op Enter in the search adds: the first row shown (while searching,
 * rows rank the op named exactly first, then names starting with the text,
 * then names containing it, then category or description matches). */
const char *twb_palette_first_match (TwbPalette *self);
/* Palette order of categories; ops of other categories come last. */
const char *const *twb_palette_categories (void);

G_END_DECLS
