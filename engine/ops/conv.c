/* conv.c — registration of the conv op family (filled in by its owner). */
#include "engine/op.h"

void
tw_ops_register_conv (void)
{
}
