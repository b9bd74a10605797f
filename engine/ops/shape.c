/* shape.c — registration of the shape op family (filled in by its owner). */
#include "engine/op.h"

void
tw_ops_register_shape (void)
{
}
