/* twb-sequential-dialog.h — stack layers fast: one layer per line,
 *
 *   conv2d out_channels=16 kernel_size=3 padding=1
 *   relu
 *   max_pool2d kernel_size=2
 *   flatten
 *   linear out_features=10
 *
 * appended after the selected node (or the data input), each fed by the one
 * before, as one undo step.
 */
#pragma once

#include <gtk/gtk.h>

#include "graph_editor/twb-document.h"

G_BEGIN_DECLS

GtkWidget *twb_sequential_dialog_new (GtkWindow *parent, TwbDocument *doc);

/* The dialog's work without a dialog: parse text and append the layers after
 * node `after` (NULL: the single selected node, else the data input, else
 * nothing).  All or nothing: on error the document is unchanged and the
 * error names the line.  Returns the number of layers added, -1 on error. */
int twb_sequential_apply (TwbDocument *doc, const char *after, const char *text, GError **error);

G_END_DECLS
