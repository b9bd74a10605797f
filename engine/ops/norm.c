/* norm.c — registration of the norm op family (filled in by its owner). */
#include "engine/op.h"

void
tw_ops_register_norm (void)
{
}
