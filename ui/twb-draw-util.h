/* twb-draw-util.h — what the plot and the charts beside it share
 * (twb-plot-draw.c, twb-whatif-bars.c): text and axis steps. */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

/* s's size in pixels in l (w or h may be NULL); l keeps s. */
void twb_draw_text_size (PangoLayout *l, const char *s, double *w, double *h);
/* s drawn with its box's point (fx, fy) (fractions of its size) at (x, y). */
void twb_draw_text_at (cairo_t *cr, PangoLayout *l, const char *s, double x, double y, double fx,
                       double fy);

/* An axis step: 1, 2 or 5 times a power of ten, about span / target. */
double twb_draw_nice_step (double span, double target);

G_END_DECLS
