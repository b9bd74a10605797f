/* loss.c — registration of the loss op family (filled in by its owner). */
#include "engine/op.h"

void
tw_ops_register_loss (void)
{
}
