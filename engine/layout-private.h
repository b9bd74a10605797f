/* layout-private.h — what engine/layout.c and engine/layout-fold.c share. */
#pragma once

#include "engine/layout.h"

G_BEGIN_DECLS

/* The compound layout for blocks that fits view at the largest zoom over
 * the widths a block's contents may wrap at: places into xs, ys (either
 * may be NULL), the blocks' boxes set, the extent in *width, *height;
 * returns the zoom it fits the view at. */
double tw_layout_best (const tw_graph *g, tw_layout_block *const *blocks, int n_blocks,
                       const tw_layout_view *view, double *xs, double *ys, double *width,
                       double *height);

G_END_DECLS
