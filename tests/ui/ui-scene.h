/* ui-scene.h — checks on a graph scene that UI tests share (GTK-free). */
#pragma once

#include "graph_editor/twb-graph-scene.h"

/* Every edge's drawn route or curve, sampled, stays out of every box but
 * its own ends' (a point on a box's border is outside); fails the test
 * naming the edge and the box otherwise. */
void twt_assert_edges_clear (const TwbGraphScene *s, const char *what);
