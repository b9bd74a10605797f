/* dist-check.h — what the mpiexec tests of training share: a check that
 * counts a rank's failures (and says which rank), the end of a case that
 * fails it when any rank failed, and the small MLP they train. */
#pragma once

#include "engine/comm/comm.h"
#include "engine/model.h"

#include <stdio.h>

/* The test's communicator (one per process). */
extern tw_comm *comm;
extern int failures;

#define CHECK(cond, ...)                                                                     \
  do                                                                                         \
    {                                                                                        \
      if (!(cond))                                                                           \
        {                                                                                    \
          failures++;                                                                        \
          fprintf (stderr, "rank %d: %s:%d: ", tw_comm_rank (comm), __FILE__, __LINE__);     \
          fprintf (stderr, __VA_ARGS__);                                                     \
          fputc ('\n', stderr);                                                              \
        }                                                                                    \
    }                                                                                        \
  while (0)

/* Every rank's failures, summed: a case passes only when none failed anywhere. */
static inline void
case_end (void)
{
  gint64 f = failures;
  g_autoptr (GError) error = NULL;
  g_assert_true (tw_comm_allreduce_sync (comm, &f, 1, TW_I64, TW_REDUCE_SUM, NULL, &error));
  failures = 0;
  g_assert_cmpint (f, ==, 0);
}

/* 2 -> hidden -> tanh -> hidden -> relu -> 3, cross-entropy (6 nodes
 * besides the inputs): SGD (lr 0.1, momentum 0.9) or Adam (lr 0.01). */
static inline tw_model *
dist_test_model (const char *name, tw_optimizer_type opt, int64_t batch, int64_t hidden)
{
  tw_model *m = tw_model_new (name);
  tw_graph *g = m->graph;
  tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]) { 2 }, "data");
  tw_graph_add_input (g, "y", TW_I64, 0, NULL, "label");
  tw_attrs *h = tw_attrs_new (), *o = tw_attrs_new ();
  tw_attrs_set_int (h, "out_features", hidden);
  tw_attrs_set_int (o, "out_features", 3);
  tw_graph_add (g, "fc1", "linear", h, "x", NULL);
  tw_graph_add (g, "t1", "tanh", NULL, "fc1", NULL);
  tw_graph_add (g, "fc2", "linear", h, "t1", NULL);
  tw_graph_add (g, "r2", "relu", NULL, "fc2", NULL);
  tw_graph_add (g, "fc3", "linear", o, "r2", NULL);
  tw_graph_add (g, "loss", "cross_entropy", NULL, "fc3", "y", NULL);
  tw_attrs_free (h);
  tw_attrs_free (o);
  m->recipe.batch_size = batch;
  m->recipe.seed = 7;
  m->recipe.optimizer.type = opt;
  m->recipe.optimizer.lr = opt == TW_OPT_SGD ? 0.1 : 0.01;
  m->recipe.optimizer.momentum = opt == TW_OPT_SGD ? 0.9 : 0;
  m->recipe.optimizer.beta1 = 0.9;
  m->recipe.optimizer.beta2 = 0.999;
  m->recipe.optimizer.eps = 1e-8;
  return m;
}
