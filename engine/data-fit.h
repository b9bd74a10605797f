/* data-fit.h — datasets as a model wants them (engine/data/fit.c).
 *
 *   tw_dataset *train, *val, *test;
 *   if (!tw_datasets_open_for_training (m, NULL, TRUE, &train, &val, &test, &error))
 *     ... error names the dataset and, on a mismatch, the model's input ...
 *
 * The command line and the GUI's training session open data the same way.
 */
#pragma once

#include <gio/gio.h>

#include "engine/data.h"
#include "engine/model.h"

G_BEGIN_DECLS

/* Open the dataset split named by spec (or the model's recipe) and check that
 * its samples fit the model's data input; reshapes x when only the layout
 * differs (same element count per sample).  Besides tw_dataset_open's
 * names, "synthetic" or "synthetic:N" gives N samples shaped for the data
 * input (default 2^24 values' worth, 32 to 1024; the test split a quarter)
 * with labels for the model's logits [N, C]: class c's fixed random pattern
 * plus noise, learnable, for a model without data of its own (an imported
 * one).  The caller frees the result. */
tw_dataset *tw_dataset_open_for_model (const tw_model *m, const char *spec, tw_split split,
                                       GError **error);
/* Samples x [n, ...] laid out as the model's data input wants (same elements
 * per sample, cast to its dtype): a new reference, x itself when it already
 * fits.  NULL with an error naming `source` and the input otherwise. */
tw_tensor *tw_samples_fit_input (tw_tensor *x, const tw_node *input, const char *source,
                                 GError **error);
/* The training split (less the recipe's validation split, if any, held out
 * into *val, else NULL) and, when want_test, the test split (test may be
 * NULL then).  Every dataset is the caller's; nothing is set on failure.
 * A model whose training step at batch 1 does not fit in memory
 * (tw_graph_check_memory) is refused first, before any data is read. */
gboolean tw_datasets_open_for_training (const tw_model *m, const char *spec, gboolean want_test,
                                        tw_dataset **train, tw_dataset **val, tw_dataset **test,
                                        GError **error);
/* The same, giving up soon after cancellable (may be NULL) is cancelled:
 * FALSE with G_IO_ERROR_CANCELLED, nothing set.  It is looked at between
 * the splits and, while a synthetic set is made, between its samples; a
 * file being decoded is read to its end first. */
gboolean tw_datasets_open_for_training_cancellable (const tw_model *m, const char *spec,
                                                    gboolean want_test, tw_dataset **train,
                                                    tw_dataset **val, tw_dataset **test,
                                                    GCancellable *cancellable, GError **error);

G_END_DECLS
