/* onnx-import-reduce.c — translators for ONNX's reductions, index ops and
 * losses.  The table is consulted after onnx-import-more.c's. */
#define G_LOG_DOMAIN "tw-onnx"

#include "onnx/onnx-import-private.h"

#include <string.h>

static const struct
{
  const char *op;
  tw_imp_fn fn;
} reduce_translators[] = {
  { NULL, NULL },
};

tw_imp_fn
tw_imp_reduce_translator (const char *op)
{
  for (guint i = 0; i < G_N_ELEMENTS (reduce_translators); i++)
    if (reduce_translators[i].op && strcmp (op, reduce_translators[i].op) == 0)
      return reduce_translators[i].fn;
  return NULL;
}
