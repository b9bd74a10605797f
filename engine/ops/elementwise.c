/* elementwise.c — registration of the elementwise op family (filled in by its owner). */
#include "engine/op.h"

void
tw_ops_register_elementwise (void)
{
}
