/* nn.c — registration of the nn op family (filled in by its owner). */
#include "engine/op.h"

void
tw_ops_register_nn (void)
{
}
