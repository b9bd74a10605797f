/* classes.h — a classifier's results on a dataset, class by class: the
 * confusion matrix and a sample of predictions (wrong ones first), for the
 * dashboard's epoch-end view.
 *
 *   tw_class_report r;
 *   if (tw_trainer_classify (tr, test, 256, 32, &r, &error)) ...
 *   r.confusion[true * r.n_classes + predicted]
 *   tw_class_report_clear (&r);
 *
 * Runs the model in eval mode (as tw_trainer_evaluate does) in the mode the
 * trainer is in; the matrix sums to the dataset's size.
 */
#pragma once

#include "engine/train.h"

G_BEGIN_DECLS

typedef struct
{
  int64_t index;          /* in the dataset */
  int label, predicted;
  float confidence;       /* softmax probability of the predicted class */
} tw_class_sample;

typedef struct
{
  int n_classes;
  int64_t total, correct;
  int64_t *confusion;     /* [n_classes × n_classes], row = true label; owned */
  GArray *samples;        /* tw_class_sample: up to max_samples, wrong first (by
                           * confidence, highest first), then right ones; owned */
  tw_tensor *images;      /* the samples' inputs [k, ...] in samples' order (a copy), or NULL */
} tw_class_report;

/* FALSE with an error (*out then zeroed) when the dataset is empty, the
 * model's output is not [N, C] logits with the dataset's classes <= C <=
 * TW_CLASS_REPORT_MAX_CLASSES, or a label is not a class index (the error
 * names the sample and its label).  Predictions run as `twb predict` runs
 * them (eval mode, no loss): the trainer's parameters, step and random
 * streams are left as they were, so training after it goes on bit for bit
 * as it would have.  Samples that are right come after the wrong ones,
 * least confident first (the near misses); ties keep dataset order.
 * images has x's row shape: [k, ...] for x [n, ...]; NULL when k = 0. */
#define TW_CLASS_REPORT_MAX_CLASSES 4096   /* a 128 MiB matrix */
gboolean tw_trainer_classify (tw_trainer *tr, const tw_dataset *d, int64_t batch_size,
                              int max_samples, tw_class_report *out, GError **error);
void tw_class_report_copy (tw_class_report *dst, const tw_class_report *src);
/* The classes a classifier confuses most: ordered by their errors (the
 * samples of the class predicted as another, plus the samples of other
 * classes predicted as it: the off-diagonal sums of its row and column),
 * most first, ties by class index.  Writes min (k, n_classes) class indices
 * to out and returns how many; classes without any error come last, so all
 * classes are ranked when k >= n_classes. */
int tw_class_report_most_confused (const tw_class_report *r, int k, int *out);
void tw_class_report_clear (tw_class_report *r);

G_END_DECLS
