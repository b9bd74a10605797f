/* reduce.c — registration of the reduce op family (filled in by its owner). */
#include "engine/op.h"

void
tw_ops_register_reduce (void)
{
}
