/* twb-inspector.h — edit the selected node's attributes and the model's
 * training recipe.
 *
 * Node page: one typed widget per attribute of the op's schema (spin buttons
 * for ints and floats, switches for bools, drop-downs for choices, entries
 * for lists and free strings), the node's id (rename), its output shape,
 * parameters and FLOPs, and its shape error.  A value the document refuses
 * is shown inline under its widget, in a line kept for it (the fields below
 * never move); the document is unchanged.  A selection that is exactly a
 * collapsed block shows the block: its name (rename), members, Expand.
 * Recipe page: optimizer, learning rate, schedule, batch size, epochs, seed,
 * dataset (typed, picked from the known sets or chosen as a file; checked),
 * validation split.
 */
#pragma once

#include <gtk/gtk.h>

#include "graph_editor/twb-document.h"
#include "engine/train.h"

G_BEGIN_DECLS

#define TWB_TYPE_INSPECTOR (twb_inspector_get_type ())
G_DECLARE_FINAL_TYPE (TwbInspector, twb_inspector, TWB, INSPECTOR, GtkWidget)

GtkWidget *twb_inspector_new (void);
/* Data parallel's gradient buckets, for the Live checks of a node with
 * parameters ("bucket 2 of 3, 16.4 kB, all-reduced after fc3's"): the
 * layout (copied; NULL: none shown), whether a run measured it (its final
 * one) or it is the prediction for the first step, and the bucket size. */
void twb_inspector_set_buckets (TwbInspector *self, const tw_bucket_layout *l, gboolean measured,
                                double bucket_mb);
void twb_inspector_set_document (TwbInspector *self, TwbDocument *doc);
/* Show the node page and focus its first attribute widget. */
gboolean twb_inspector_focus_node (TwbInspector *self);
/* Show "node" or "recipe". */
void twb_inspector_show_page (TwbInspector *self, const char *page);
/* The node the node page shows, NULL if none (tests). */
const char *twb_inspector_get_node (TwbInspector *self);
/* The collapsed block the node page shows (its members are the selection:
 * after Ctrl+G or a click on the block), NULL if none.  Its name is edited
 * as attribute "$id" (twb_inspector_edit_attr). */
const char *twb_inspector_get_block (TwbInspector *self);
/* The inline error under an attribute's widget, NULL if none (tests). */
const char *twb_inspector_get_attr_error (TwbInspector *self, const char *attr);
/* The widget that edits attribute attr ("$id": the id or block name), NULL
 * if none; owned by the inspector, valid until the page is rebuilt (tests). */
GtkWidget *twb_inspector_get_attr_widget (TwbInspector *self, const char *attr);
/* Type text into an attribute's widget and commit it, as a user would (tests). */
gboolean twb_inspector_edit_attr (TwbInspector *self, const char *attr, const char *text);

/* The node page's "Live checks" text (output shapes, parameters, FLOPs),
 * NULL without a node; owned by the inspector (tests). */
GtkWidget *twb_inspector_get_live_checks (TwbInspector *self);
/* Whether value can be the recipe's dataset: empty (none), a known name
 * (tw_dataset_known_names), an existing .csv or .npy file or folder (IDX
 * files).  Otherwise FALSE with an error naming the value and what fits. */
gboolean twb_inspector_check_dataset (const char *value, GError **error);
/* Type text into the recipe's dataset entry and press Enter, as a user
 * would; FALSE when it was refused (tests). */
gboolean twb_inspector_set_dataset_text (TwbInspector *self, const char *text);
/* The line under the dataset: why the last value was refused, or NULL. */
const char *twb_inspector_get_dataset_error (TwbInspector *self);

G_END_DECLS
