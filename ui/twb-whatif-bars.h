/* twb-whatif-bars.h — a stacked bar per configuration of a simulated
 * step: compute, exposed communication (what the step waited for after
 * backward) and the rest, in milliseconds, with a y axis, the
 * configurations' labels under their bars and a legend.  The widget only
 * draws what it is given (the What if page's sweep, twb-whatif-sweep.h).
 *
 *   GtkWidget *bars = twb_whatif_bars_new ();
 *   TwbWhatifBar b[] = { { "8", 1.2, 0.1, 0.05 }, { "64", 1.2, 0.4, 0.05 } };
 *   twb_whatif_bars_set (TWB_WHATIF_BARS (bars), b, 2, "ranks");
 */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

typedef struct
{
  char label[16];             /* under the bar: "8" */
  double compute_ms, exposed_ms, rest_ms;   /* stacked bottom to top; negatives count as 0 */
} TwbWhatifBar;

#define TWB_TYPE_WHATIF_BARS (twb_whatif_bars_get_type ())
G_DECLARE_FINAL_TYPE (TwbWhatifBars, twb_whatif_bars, TWB, WHATIF_BARS, GtkWidget)

GtkWidget *twb_whatif_bars_new (void);
/* Copies n bars (0: "No data yet", as the plot); x_label names what the labels are. */
void twb_whatif_bars_set (TwbWhatifBars *self, const TwbWhatifBar *bars, guint n,
                          const char *x_label);
guint twb_whatif_bars_get_n (TwbWhatifBars *self);
/* Draw into cr at width × height (what snapshot draws). */
void twb_whatif_bars_draw (TwbWhatifBars *self, cairo_t *cr, int width, int height);

G_END_DECLS
