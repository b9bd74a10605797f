/* twb-compile-view.c — the compile report view (twb-compile-view.h).
 *
 * Children: a summary line (the program, or the compiler's error), then three
 * sections — passes, fused groups, memory plan — side by side when the view
 * is wide (a bottom panel) and stacked when it is tall (a side panel).  The
 * data is a tw_compile_report (engine/compile/report-data.h); the memory
 * plan is drawn from its buffers with cairo. */
#define G_LOG_DOMAIN "twb-compile-view"

#include "ui/twb-compile-view.h"
#include "graph_editor/twb-picture.h"
#include "engine/fileutil.h"

#include <cairo-svg.h>
#include <math.h>
#include <string.h>

struct _TwbCompileView
{
  GtkWidget parent_instance;
  GtkWidget *summary;         /* GtkLabel */
  GtkWidget *sections[3];     /* passes, groups, memory: heading + content */
  GtkWidget *passes, *groups; /* GtkListBox */
  GtkWidget *memory;          /* GtkDrawingArea */
  tw_compile_report *report;  /* NULL without a model or after an error */
  GHashTable *no_groups;      /* what node_groups returns without a report */
  char *error;
  int hover; /* buffer under the pointer, -1 */
};

G_DEFINE_FINAL_TYPE (TwbCompileView, twb_compile_view, GTK_TYPE_WIDGET)

enum
{
  SIGNAL_GROUP_ACTIVATED,
  N_SIGNALS
};
static guint signals[N_SIGNALS];

/* ---- Colours ----------------------------------------------------------------- */

/* Tableau 10 without its grey (a grey tint reads as no tint): mid-lightness
 * hues that stay visible as a translucent tint on a white node body and on a
 * dark one (#303035), and as text-free swatches in both themes. */
static const guint32 group_palette[] = {
  0x4e79a7, 0xf28e2b, 0x59a14f, 0xe15759, 0xb07aa1, 0xedc948, 0x76b7b2, 0xff9da7, 0x9c755f,
};

void
twb_compile_view_group_colour (guint group, GdkRGBA *out)
{
  guint32 c = group_palette[group % G_N_ELEMENTS (group_palette)];
  out->red = ((c >> 16) & 0xff) / 255.0f;
  out->green = ((c >> 8) & 0xff) / 255.0f;
  out->blue = (c & 0xff) / 255.0f;
  out->alpha = 1.0f;
}

typedef struct
{
  GdkRGBA fg, dim, bg, grid;
  GdkRGBA phase[3]; /* forward, backward, update */
} Colours;

static void
colours_for (GtkWidget *w, gboolean *dark_out, Colours *c)
{
  G_GNUC_BEGIN_IGNORE_DEPRECATIONS
  gtk_style_context_get_color (gtk_widget_get_style_context (w), &c->fg);
  G_GNUC_END_IGNORE_DEPRECATIONS
  /* Light text means a dark theme (as the graph canvas decides). */
  gboolean dark = 0.299 * c->fg.red + 0.587 * c->fg.green + 0.114 * c->fg.blue > 0.5;
  if (dark_out)
    *dark_out = dark;
  c->dim = c->fg;
  c->dim.alpha = 0.6f;
  c->grid = c->fg;
  c->grid.alpha = 0.15f;
  c->bg = dark ? (GdkRGBA){ 0.14f, 0.14f, 0.15f, 1 } : (GdkRGBA){ 0.98f, 0.98f, 0.98f, 1 };
  /* Blue, orange, green of the group palette: the phase strip and the bars. */
  twb_compile_view_group_colour (0, &c->phase[TW_PHASE_FORWARD]);
  twb_compile_view_group_colour (1, &c->phase[TW_PHASE_BACKWARD]);
  twb_compile_view_group_colour (2, &c->phase[TW_PHASE_UPDATE]);
}

/* ---- Memory plan geometry ---------------------------------------------------- */

/* Bands from the top: the legend (text and the arena / eager bars), the
 * phase strip, the plot; the instruction axis below; offsets at the left. */
#define LEGEND_H 20.0
#define STRIP_H 14.0
#define AXIS_LEFT 64.0
#define AXIS_BOTTOM 18.0
#define PAD 6.0

typedef struct
{
  double x0, x1, y0, y1; /* the plot */
  double strip_y;
  int n; /* instruction columns */
  double arena;
} Geometry;

static gboolean
geometry (const tw_compile_report *r, int width, int height, Geometry *g)
{
  if (r == NULL || r->n_instrs == 0)
    return FALSE;
  g->x0 = AXIS_LEFT;
  g->x1 = MAX (g->x0 + 1, width - PAD);
  g->strip_y = PAD + LEGEND_H;
  g->y0 = g->strip_y + STRIP_H + 4;
  g->y1 = MAX (g->y0 + 1, height - AXIS_BOTTOM);
  g->n = r->n_instrs;
  g->arena = MAX ((double) r->arena_bytes, 1.0);
  return TRUE;
}

static void
buffer_bounds (const Geometry *g, const tw_compile_buffer *b, graphene_rect_t *out)
{
  double cw = (g->x1 - g->x0) / g->n;
  int last = MIN (b->last, g->n - 1); /* kept buffers (last = n) run to the end */
  double ph = g->y1 - g->y0;
  double top = g->y1 - (b->offset + (double) b->bytes) / g->arena * ph;
  double bottom = g->y1 - b->offset / g->arena * ph;
  if (bottom - top < 1)
    top = bottom - 1; /* a few bytes stay visible */
  graphene_rect_init (out, (float) (g->x0 + b->first * cw), (float) top,
                      (float) ((last + 1 - b->first) * cw), (float) (bottom - top));
}

static int
buffer_at (TwbCompileView *v, double x, double y)
{
  Geometry g;
  if (!geometry (v->report, gtk_widget_get_width (v->memory), gtk_widget_get_height (v->memory),
                 &g))
    return -1;
  /* The smallest buffer containing the point: small ones sit inside no
   * other, but a 1-pixel one may overlap its neighbour's drawn edge. */
  int best = -1;
  gsize best_bytes = G_MAXSIZE;
  for (guint i = 0; i < v->report->buffers->len; i++)
    {
      const tw_compile_buffer *b = &g_array_index (v->report->buffers, tw_compile_buffer, i);
      graphene_rect_t rc;
      buffer_bounds (&g, b, &rc);
      if (graphene_rect_contains_point (&rc, &GRAPHENE_POINT_INIT ((float) x, (float) y)) &&
          b->bytes < best_bytes)
        best = (int) i, best_bytes = b->bytes;
    }
  return best;
}

/* ---- Memory plan drawing ----------------------------------------------------- */

static void
set_rgba (cairo_t *cr, const GdkRGBA *c, double alpha)
{
  cairo_set_source_rgba (cr, c->red, c->green, c->blue, c->alpha * alpha);
}

static void
show_text (cairo_t *cr, PangoLayout *l, const char *text, double x, double y, int align,
           double *w_out)
{
  int w, h;
  pango_layout_set_text (l, text, -1);
  pango_layout_get_pixel_size (l, &w, &h);
  cairo_move_to (cr, align < 0 ? x : align == 0 ? x - w / 2.0 : x - w, y - h / 2.0);
  pango_cairo_show_layout (cr, l);
  if (w_out)
    *w_out = w;
}

static char *
legend_text (const tw_compile_report *r)
{
  g_autofree char *arena = g_format_size (r->arena_bytes);
  if (r->eager_peak_bytes == 0)
    return g_strdup_printf ("arena %s", arena);
  g_autofree char *peak = g_format_size (r->eager_peak_bytes);
  double change =
    100.0 * ((double) r->arena_bytes - (double) r->eager_peak_bytes) / (double) r->eager_peak_bytes;
  return g_strdup_printf ("arena %s vs eager peak %s (%s%.0f %%)", arena, peak,
                          change < 0 ? "−" : "+", fabs (change));
}

static void
draw_memory (TwbCompileView *v, cairo_t *cr, int width, int height, gboolean background)
{
  Colours c;
  colours_for (GTK_WIDGET (v), NULL, &c);
  if (background)
    {
      set_rgba (cr, &c.bg, 1);
      cairo_paint (cr);
    }
  const tw_compile_report *r = v->report;
  Geometry g;
  g_autoptr (PangoLayout) l = gtk_widget_create_pango_layout (v->memory, NULL);
  pango_cairo_update_layout (cr, l);
  if (!geometry (r, width, height, &g))
    {
      set_rgba (cr, &c.dim, 1);
      show_text (cr, l, v->error ? "No memory plan: the model does not compile" : "No program",
                 width / 2.0, height / 2.0, 0, NULL);
      return;
    }

  /* Legend: the figures, then arena and eager peak as two bars to scale. */
  g_autofree char *legend = legend_text (r);
  double tw;
  set_rgba (cr, &c.fg, 1);
  show_text (cr, l, legend, g.x0, PAD + LEGEND_H / 2, -1, &tw);
  double bx = g.x0 + tw + 12, bw = MIN (200.0, g.x1 - bx);
  if (bw > 20 && r->eager_peak_bytes > 0)
    {
      double full = MAX ((double) r->arena_bytes, (double) r->eager_peak_bytes);
      set_rgba (cr, &c.dim, 0.5);
      cairo_rectangle (cr, bx, PAD + 3, bw * r->eager_peak_bytes / full, 5);
      cairo_fill (cr);
      set_rgba (cr, &c.phase[TW_PHASE_FORWARD], 1);
      cairo_rectangle (cr, bx, PAD + 11, bw * r->arena_bytes / full, 5);
      cairo_fill (cr);
    }

  /* Phase strip: one cell per instruction; runs labelled where they fit,
   * updates counted with the backward pass they are interleaved with. */
  double cw = (g.x1 - g.x0) / g.n;
  for (int i = 0; i < g.n; i++)
    {
      set_rgba (cr, &c.phase[r->phases[i]], 0.35);
      cairo_rectangle (cr, g.x0 + i * cw, g.strip_y, cw, STRIP_H);
      cairo_fill (cr);
    }
  for (int i = 0; i < g.n;)
    {
      gboolean fwd = r->phases[i] == TW_PHASE_FORWARD, updates = FALSE;
      int j = i;
      for (; j < g.n && (r->phases[j] == TW_PHASE_FORWARD) == fwd; j++)
        updates |= r->phases[j] == TW_PHASE_UPDATE;
      const char *name = fwd ? "forward" : updates ? "backward · updates" : "backward";
      int tw_i, th;
      pango_layout_set_text (l, name, -1);
      pango_layout_get_pixel_size (l, &tw_i, &th);
      if (tw_i + 4 > (j - i) * cw && updates)
        {
          name = "backward";
          pango_layout_set_text (l, name, -1);
          pango_layout_get_pixel_size (l, &tw_i, &th);
        }
      if (tw_i + 4 < (j - i) * cw)
        {
          set_rgba (cr, &c.fg, 0.85);
          show_text (cr, l, name, g.x0 + (i + j) * cw / 2, g.strip_y + STRIP_H / 2, 0, NULL);
        }
      i = j;
    }

  /* Axes: offsets 0, half and the arena; instruction indices. */
  cairo_set_line_width (cr, 1);
  for (int k = 0; k <= 2; k++)
    {
      double y = g.y1 - k * (g.y1 - g.y0) / 2;
      set_rgba (cr, &c.grid, 1);
      cairo_move_to (cr, g.x0, floor (y) + 0.5);
      cairo_line_to (cr, g.x1, floor (y) + 0.5);
      cairo_stroke (cr);
      g_autofree char *t = g_format_size ((guint64) (r->arena_bytes * k / 2));
      set_rgba (cr, &c.dim, 1);
      show_text (cr, l, k == 0 ? "0" : t, g.x0 - 4, y, 1, NULL);
    }
  int step = MAX (1, (int) ceil (40.0 / MAX (cw, 1e-3)));
  for (int i = 0; i < g.n; i += step)
    {
      g_autofree char *t = g_strdup_printf ("%d", i);
      set_rgba (cr, &c.dim, 1);
      show_text (cr, l, t, g.x0 + (i + 0.5) * cw, g.y1 + AXIS_BOTTOM / 2, 0, NULL);
    }

  /* One rectangle per buffer, coloured by the phase that writes it first. */
  for (guint i = 0; i < r->buffers->len; i++)
    {
      const tw_compile_buffer *b = &g_array_index (r->buffers, tw_compile_buffer, i);
      graphene_rect_t rc;
      buffer_bounds (&g, b, &rc);
      gboolean hot = (int) i == v->hover;
      set_rgba (cr, &c.phase[r->phases[MIN (b->first, g.n - 1)]], hot ? 0.95 : 0.6);
      cairo_rectangle (cr, rc.origin.x, rc.origin.y, rc.size.width, rc.size.height);
      cairo_fill_preserve (cr);
      set_rgba (cr, hot ? &c.fg : &c.bg, hot ? 1 : 0.8);
      cairo_set_line_width (cr, hot ? 1.5 : 0.5);
      cairo_stroke (cr);
    }
}

static void
memory_draw_func (GtkDrawingArea *area, cairo_t *cr, int width, int height, gpointer data)
{
  draw_memory (TWB_COMPILE_VIEW (data), cr, width, height, FALSE);
}

char *
twb_compile_view_memory_readout_at (TwbCompileView *v, double x, double y)
{
  g_return_val_if_fail (TWB_IS_COMPILE_VIEW (v), NULL);
  int k = buffer_at (v, x, y);
  if (k < 0)
    return NULL;
  const tw_compile_buffer *b = &g_array_index (v->report->buffers, tw_compile_buffer, k);
  g_autofree char *size = g_format_size (b->bytes);
  int n = v->report->n_instrs;
  if (b->last >= n)
    return g_strdup_printf ("%s · %s (%zu bytes) · instructions %d–%d, kept after the step",
                            b->name, size, b->bytes, b->first, n - 1);
  return g_strdup_printf ("%s · %s (%zu bytes) · instructions %d–%d", b->name, size, b->bytes,
                          b->first, b->last);
}

gboolean
twb_compile_view_buffer_rect (TwbCompileView *v, guint k, graphene_rect_t *out)
{
  g_return_val_if_fail (TWB_IS_COMPILE_VIEW (v), FALSE);
  Geometry g;
  if (v->report == NULL || k >= v->report->buffers->len ||
      !geometry (v->report, gtk_widget_get_width (v->memory), gtk_widget_get_height (v->memory),
                 &g))
    return FALSE;
  buffer_bounds (&g, &g_array_index (v->report->buffers, tw_compile_buffer, k), out);
  return TRUE;
}

static void
set_hover (TwbCompileView *v, int k)
{
  if (v->hover == k)
    return;
  v->hover = k;
  gtk_widget_queue_draw (v->memory);
}

static void
on_motion (GtkEventControllerMotion *m, double x, double y, gpointer data)
{
  TwbCompileView *v = data;
  set_hover (v, buffer_at (v, x, y));
}

static void
on_leave (GtkEventControllerMotion *m, gpointer data)
{
  set_hover (data, -1);
}

static gboolean
on_query_tooltip (GtkWidget *w, int x, int y, gboolean keyboard, GtkTooltip *tip, gpointer data)
{
  g_autofree char *text = twb_compile_view_memory_readout_at (data, x, y);
  if (text == NULL)
    return FALSE;
  gtk_tooltip_set_text (tip, text);
  return TRUE;
}

/* ---- Lists ------------------------------------------------------------------- */

static void
list_clear (GtkWidget *list)
{
  GtkWidget *child;
  while ((child = gtk_widget_get_first_child (list)))
    gtk_list_box_remove (GTK_LIST_BOX (list), child);
}

static GtkWidget *
wrapped_label (const char *text)
{
  GtkWidget *l = gtk_label_new (text);
  gtk_label_set_wrap (GTK_LABEL (l), TRUE);
  gtk_label_set_wrap_mode (GTK_LABEL (l), PANGO_WRAP_WORD_CHAR);
  gtk_label_set_xalign (GTK_LABEL (l), 0);
  gtk_widget_set_hexpand (l, TRUE);
  return l;
}

char *
twb_compile_view_pass_line (TwbCompileView *v, guint i)
{
  g_return_val_if_fail (TWB_IS_COMPILE_VIEW (v), NULL);
  if (v->report == NULL || i >= v->report->passes->len)
    return NULL;
  const tw_compile_pass *ps = &g_array_index (v->report->passes, tw_compile_pass, i);
  if (i == 0) /* build: graph nodes → instructions */
    return g_strdup_printf ("%s — %d nodes → %d ops", ps->pass, ps->before, ps->after);
  if (ps->before != ps->after)
    return g_strdup_printf ("%s — %d → %d ops: %s", ps->pass, ps->before, ps->after, ps->summary);
  return g_strdup_printf ("%s — %d ops: %s", ps->pass, ps->before, ps->summary);
}

static void
swatch_draw (GtkDrawingArea *area, cairo_t *cr, int w, int h, gpointer data)
{
  GdkRGBA c;
  twb_compile_view_group_colour (GPOINTER_TO_UINT (data), &c);
  gdk_cairo_set_source_rgba (cr, &c);
  cairo_rectangle (cr, 1, 1, w - 2, h - 2);
  cairo_fill (cr);
}

static void
fill_lists (TwbCompileView *v)
{
  list_clear (v->passes);
  list_clear (v->groups);
  if (v->report == NULL)
    return;
  for (guint i = 0; i < v->report->passes->len; i++)
    {
      const tw_compile_pass *ps = &g_array_index (v->report->passes, tw_compile_pass, i);
      g_autofree char *line = twb_compile_view_pass_line (v, i);
      GtkWidget *l = wrapped_label (line);
      if (i > 0 && ps->before == ps->after && strcmp (ps->summary, "nothing to do") == 0)
        gtk_widget_add_css_class (l, "dim-label");
      if (ps->detail)
        gtk_widget_set_tooltip_text (l, ps->detail);
      gtk_list_box_append (GTK_LIST_BOX (v->passes), l);
    }
  for (guint i = 0; i < v->report->groups->len; i++)
    {
      const tw_compile_group *g = &g_array_index (v->report->groups, tw_compile_group, i);
      GtkWidget *row = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
      GtkWidget *sw = gtk_drawing_area_new ();
      gtk_drawing_area_set_content_width (GTK_DRAWING_AREA (sw), 14);
      gtk_drawing_area_set_content_height (GTK_DRAWING_AREA (sw), 14);
      gtk_widget_set_valign (sw, GTK_ALIGN_CENTER);
      gtk_drawing_area_set_draw_func (GTK_DRAWING_AREA (sw), swatch_draw, GUINT_TO_POINTER (i),
                                      NULL);
      g_autofree char *nodes = g_strjoinv (", ", g->nodes);
      g_autofree char *text = g_strdup_printf ("%s — %s", g->kernel, nodes);
      gtk_box_append (GTK_BOX (row), sw);
      gtk_box_append (GTK_BOX (row), wrapped_label (text));
      gtk_list_box_append (GTK_LIST_BOX (v->groups), row);
    }
  if (v->report->groups->len == 0)
    {
      GtkWidget *l = wrapped_label ("No fused groups");
      gtk_widget_add_css_class (l, "dim-label");
      gtk_list_box_append (GTK_LIST_BOX (v->groups), l);
      gtk_list_box_row_set_activatable (gtk_list_box_get_row_at_index (GTK_LIST_BOX (v->groups), 0),
                                        FALSE);
    }
}

static void
on_group_row (GtkListBox *list, GtkListBoxRow *row, gpointer data)
{
  TwbCompileView *v = data;
  int i = gtk_list_box_row_get_index (row);
  if (v->report && i >= 0 && (guint) i < v->report->groups->len)
    g_signal_emit (v, signals[SIGNAL_GROUP_ACTIVATED], 0, (guint) i);
}

/* ---- Model ------------------------------------------------------------------- */

static void
update_summary (TwbCompileView *v)
{
  GtkLabel *l = GTK_LABEL (v->summary);
  gtk_widget_remove_css_class (v->summary, "error");
  if (v->error)
    {
      /* The executor's preamble says what the heading already does. */
      const char *msg = v->error;
      if (g_str_has_prefix (msg, "the graph has errors:\n"))
        msg += strlen ("the graph has errors:\n");
      g_autofree char *text = g_strdup_printf ("Does not compile — %s", msg);
      gtk_label_set_text (l, text);
      gtk_widget_add_css_class (v->summary, "error");
    }
  else if (v->report)
    {
      const tw_compile_report *r = v->report;
      g_autofree char *legend = legend_text (r);
      g_autofree char *text = g_strdup_printf (
        "Training step, batch %" G_GINT64_FORMAT ": %d nodes → %d instructions, %u fused "
        "groups; %s",
        r->batch, r->n_graph_nodes, r->n_instrs, r->groups->len, legend);
      gtk_label_set_text (l, text);
    }
  else
    gtk_label_set_text (l, "No model");
}

static void
clear (TwbCompileView *v)
{
  g_clear_pointer (&v->report, tw_compile_report_free);
  g_clear_pointer (&v->error, g_free);
  v->hover = -1;
}

static void
show_state (TwbCompileView *v)
{
  update_summary (v);
  fill_lists (v);
  gtk_widget_queue_draw (v->memory);
}

gboolean
twb_compile_view_set_model (TwbCompileView *v, const tw_model *model, GError **error)
{
  g_return_val_if_fail (TWB_IS_COMPILE_VIEW (v), FALSE);
  clear (v);
  if (model == NULL)
    {
      show_state (v);
      return TRUE;
    }
  /* As `twb compile` does: the program is built from a copy of the graph
   * (tw_program_build copies it) and needs no parameter values, so nothing
   * of a running session is touched and no weights are allocated.  It is
   * the program compiled training runs (forward, backward and each update;
   * tw_compiled's default passes, no guard bytes). */
  g_autoptr (GError) local = NULL;
  g_autoptr (tw_program) p =
    tw_program_build (model->graph, model->recipe.batch_size, TW_PROGRAM_STEP, &local);
  if (p && !tw_program_optimize (p, TW_PASS_ALL, &local))
    g_clear_pointer (&p, tw_program_free);
  if (p == NULL)
    {
      v->error = g_strdup (local->message);
      show_state (v);
      g_propagate_error (error, g_steal_pointer (&local));
      return FALSE;
    }
  v->report = tw_compile_report_new (p);
  show_state (v);
  return TRUE;
}

GHashTable *
twb_compile_view_node_groups (TwbCompileView *v)
{
  g_return_val_if_fail (TWB_IS_COMPILE_VIEW (v), NULL);
  return v->report ? v->report->node_group : v->no_groups;
}

guint
twb_compile_view_n_groups (TwbCompileView *v)
{
  g_return_val_if_fail (TWB_IS_COMPILE_VIEW (v), 0);
  return v->report ? v->report->groups->len : 0;
}

const tw_compile_report *
twb_compile_view_get_report (TwbCompileView *v)
{
  g_return_val_if_fail (TWB_IS_COMPILE_VIEW (v), NULL);
  return v->report;
}

const char *
twb_compile_view_get_error (TwbCompileView *v)
{
  g_return_val_if_fail (TWB_IS_COMPILE_VIEW (v), NULL);
  return v->error;
}

const tw_compile_buffer *
twb_compile_view_get_buffers (TwbCompileView *v, guint *n)
{
  g_return_val_if_fail (TWB_IS_COMPILE_VIEW (v), NULL);
  *n = v->report ? v->report->buffers->len : 0;
  return v->report ? (const tw_compile_buffer *) (gpointer) v->report->buffers->data : NULL;
}

void
twb_compile_view_get_memory (TwbCompileView *v, gsize *arena, gsize *eager_peak, guint *n_buffers)
{
  g_return_if_fail (TWB_IS_COMPILE_VIEW (v));
  const tw_compile_report *r = v->report;
  if (arena)
    *arena = r ? r->arena_bytes : 0;
  if (eager_peak)
    *eager_peak = r ? r->eager_peak_bytes : 0;
  if (n_buffers)
    *n_buffers = r ? r->buffers->len : 0;
}

static void
draw_memory_picture (cairo_t *cr, double width, double height, gpointer data)
{
  draw_memory (data, cr, (int) width, (int) height, TRUE);
}

gboolean
twb_compile_view_export (TwbCompileView *v, const char *path, int width, int height, GError **error)
{
  g_return_val_if_fail (TWB_IS_COMPILE_VIEW (v), FALSE);
  return twb_picture_save (path, width, height, 1, TWB_PICTURE_PNG | TWB_PICTURE_SVG,
                           draw_memory_picture, v, error);
}

/* ---- Layout ------------------------------------------------------------------ */

/* Side by side when the view is this much wider than tall (a bottom panel,
 * 1280 × 260, is about 5; a side panel, 360 × 600, is 0.6). */
#define WIDE_RATIO 1.6

static void
measure (GtkWidget *w, GtkOrientation o, int for_size, int *min, int *nat, int *min_base,
         int *nat_base)
{
  TwbCompileView *v = TWB_COMPILE_VIEW (w);
  int smin, snat;
  gtk_widget_measure (v->summary, o, o == GTK_ORIENTATION_VERTICAL ? for_size : -1, &smin, &snat,
                      NULL, NULL);
  int cmin = 0, cnat = 0;
  for (int k = 0; k < 3; k++)
    {
      int a, b;
      gtk_widget_measure (v->sections[k], o, -1, &a, &b, NULL, NULL);
      cmin = MAX (cmin, a);
      cnat += b;
    }
  if (o == GTK_ORIENTATION_HORIZONTAL)
    *min = MAX (smin, cmin), *nat = MAX (snat, cnat);
  else
    *min = smin + cmin, *nat = snat + MAX (cmin, 220);
}

static void
size_allocate (GtkWidget *w, int width, int height, int baseline)
{
  TwbCompileView *v = TWB_COMPILE_VIEW (w);
  int sh, snat;
  gtk_widget_measure (v->summary, GTK_ORIENTATION_VERTICAL, width, &sh, &snat, NULL, NULL);
  gtk_widget_size_allocate (v->summary, &(GtkAllocation){ 0, 0, width, sh }, -1);
  int top = sh, rest = MAX (0, height - sh);
  int mins[3];
  for (int k = 0; k < 3; k++)
    gtk_widget_measure (v->sections[k], GTK_ORIENTATION_VERTICAL, -1, &mins[k], NULL, NULL, NULL);
  if (width >= WIDE_RATIO * rest)
    {
      /* Passes 40 %, groups 22 %, the memory plan the rest. */
      static const double share[3] = { 0.40, 0.22, 0.38 };
      int x = 0;
      for (int k = 0; k < 3; k++)
        {
          int cw = k == 2 ? width - x : (int) (width * share[k]);
          gtk_widget_size_allocate (v->sections[k],
                                    &(GtkAllocation){ x, top, cw, MAX (rest, mins[k]) }, -1);
          x += cw;
        }
    }
  else
    {
      static const double share[3] = { 0.34, 0.22, 0.44 };
      int y = top;
      for (int k = 0; k < 3; k++)
        {
          int ch = k == 2 ? height - y : (int) (rest * share[k]);
          ch = MAX (ch, mins[k]);
          gtk_widget_size_allocate (v->sections[k], &(GtkAllocation){ 0, y, width, ch }, -1);
          y += ch;
        }
    }
}

static GtkSizeRequestMode
request_mode (GtkWidget *w)
{
  return GTK_SIZE_REQUEST_HEIGHT_FOR_WIDTH;
}

static GtkWidget *
section_new (const char *title, GtkWidget *content, gboolean scrolled)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 2);
  GtkWidget *h = gtk_label_new (title);
  gtk_widget_add_css_class (h, "heading");
  gtk_label_set_xalign (GTK_LABEL (h), 0);
  gtk_widget_set_margin_start (h, 6);
  gtk_widget_set_margin_top (h, 4);
  gtk_box_append (GTK_BOX (box), h);
  GtkWidget *body = content;
  if (scrolled)
    {
      body = gtk_scrolled_window_new ();
      gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (body), GTK_POLICY_NEVER,
                                      GTK_POLICY_AUTOMATIC);
      gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (body), content);
    }
  gtk_widget_set_vexpand (body, TRUE);
  gtk_box_append (GTK_BOX (box), body);
  return box;
}

/* ---- GObject ----------------------------------------------------------------- */

static void
twb_compile_view_dispose (GObject *object)
{
  TwbCompileView *v = TWB_COMPILE_VIEW (object);
  g_clear_pointer (&v->summary, gtk_widget_unparent);
  for (int k = 0; k < 3; k++)
    g_clear_pointer (&v->sections[k], gtk_widget_unparent);
  v->passes = v->groups = v->memory = NULL;
  G_OBJECT_CLASS (twb_compile_view_parent_class)->dispose (object);
}

static void
twb_compile_view_finalize (GObject *object)
{
  TwbCompileView *v = TWB_COMPILE_VIEW (object);
  clear (v);
  g_hash_table_unref (v->no_groups);
  G_OBJECT_CLASS (twb_compile_view_parent_class)->finalize (object);
}

static void
twb_compile_view_class_init (TwbCompileViewClass *klass)
{
  GObjectClass *oc = G_OBJECT_CLASS (klass);
  GtkWidgetClass *wc = GTK_WIDGET_CLASS (klass);
  oc->dispose = twb_compile_view_dispose;
  oc->finalize = twb_compile_view_finalize;
  wc->measure = measure;
  wc->size_allocate = size_allocate;
  wc->get_request_mode = request_mode;
  gtk_widget_class_set_css_name (wc, "compileview");
  gtk_widget_class_set_accessible_role (wc, GTK_ACCESSIBLE_ROLE_GROUP);

  /**
   * TwbCompileView::group-activated:
   * @group: the fused group's index (as in twb_compile_view_node_groups, less one)
   *
   * A row of the fused-groups list was activated (clicked, or Enter).
   */
  signals[SIGNAL_GROUP_ACTIVATED] =
    g_signal_new ("group-activated", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                  NULL, G_TYPE_NONE, 1, G_TYPE_UINT);
}

static void
twb_compile_view_init (TwbCompileView *v)
{
  v->hover = -1;
  v->no_groups = g_hash_table_new (g_str_hash, g_str_equal);

  v->summary = wrapped_label ("No model");
  gtk_widget_set_margin_start (v->summary, 6);
  gtk_widget_set_margin_end (v->summary, 6);
  gtk_widget_set_margin_top (v->summary, 4);
  gtk_widget_set_parent (v->summary, GTK_WIDGET (v));

  v->passes = gtk_list_box_new ();
  gtk_list_box_set_selection_mode (GTK_LIST_BOX (v->passes), GTK_SELECTION_NONE);
  gtk_accessible_update_property (GTK_ACCESSIBLE (v->passes), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  "Compiler passes", -1);
  v->groups = gtk_list_box_new ();
  gtk_list_box_set_activate_on_single_click (GTK_LIST_BOX (v->groups), TRUE);
  gtk_accessible_update_property (GTK_ACCESSIBLE (v->groups), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  "Fused groups", -1);
  g_signal_connect (v->groups, "row-activated", G_CALLBACK (on_group_row), v);

  v->memory = gtk_drawing_area_new ();
  /* Room for the legend, the phase strip and a plot of a few rows. */
  gtk_drawing_area_set_content_width (GTK_DRAWING_AREA (v->memory), 160);
  gtk_drawing_area_set_content_height (GTK_DRAWING_AREA (v->memory), 120);
  gtk_drawing_area_set_draw_func (GTK_DRAWING_AREA (v->memory), memory_draw_func, v, NULL);
  gtk_widget_set_has_tooltip (v->memory, TRUE);
  g_signal_connect (v->memory, "query-tooltip", G_CALLBACK (on_query_tooltip), v);
  GtkEventController *m = gtk_event_controller_motion_new ();
  g_signal_connect (m, "motion", G_CALLBACK (on_motion), v);
  g_signal_connect (m, "leave", G_CALLBACK (on_leave), v);
  gtk_widget_add_controller (v->memory, m);
  gtk_accessible_update_property (GTK_ACCESSIBLE (v->memory), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  "Memory plan: buffer lifetimes over the schedule", -1);

  v->sections[0] = section_new ("Passes", v->passes, TRUE);
  v->sections[1] = section_new ("Fused groups", v->groups, TRUE);
  v->sections[2] = section_new ("Memory plan", v->memory, FALSE);
  for (int k = 0; k < 3; k++)
    gtk_widget_set_parent (v->sections[k], GTK_WIDGET (v));
}

GtkWidget *
twb_compile_view_new (void)
{
  return g_object_new (TWB_TYPE_COMPILE_VIEW, NULL);
}
