/* twb-tensor-view.c — the tensor inspector (see twb-tensor-view.h).
 *
 * The statistics come from engine/tensor-stats.h; this file only lays out
 * and draws them.  Every drawing goes through one function per page that
 * takes a cairo context and a size, so the drawing areas and
 * twb_tensor_view_draw_page (tests, screenshots) draw the same pixels. */
#define G_LOG_DOMAIN "twb-tensor-view"

#include "ui/twb-tensor-view.h"
#include "ui/twb-tensor-draw.h"
#include "ui/twb-focus.h"

#include <math.h>
#include <string.h>

/* Values page: at most this many rows and columns of cells at once. */
#define MAX_CELLS 64
/* Images page: at most this many tiles; each is scaled up (nearest
 * neighbour) until its shorter side is at least TILE_MIN_PX, and not past
 * TILE_MAX_PX on its longer side; sampled down to TILE_MAX_SAMPLES. */
#define MAX_TILES 64
#define TILE_MIN_PX 32
#define TILE_MAX_PX 256
#define TILE_MAX_SAMPLES 512
#define TILE_GAP 8
/* Figures that are no longer the values now are drawn at this opacity:
 * still readable (text contrast above 3:1 on both themes), plainly faded. */
#define STALE_OPACITY 0.55
/* Histogram bins: 64 bars fit a 360 px side panel at 5 px each. */
#define HIST_BINS 64

typedef struct
{
  const char *key, *title;
} stat_def;

static const stat_def stat_defs[] = {
  { "count", "count" }, { "finite", "finite" }, { "min", "min" },   { "max", "max" },
  { "mean", "mean" },   { "std", "std" },       { "abs_max", "|max|" }, { "zeros", "zeros" },
  { "nan", "NaN" },     { "inf", "Inf" },
};

static const stat_def diff_defs[] = {
  { "diff.mean", "mean Δ" },    { "diff.std", "std Δ" },  { "diff.abs_max", "max |Δ|" },
  { "diff.changed", "changed" }, { "diff.nan", "NaN Δ" }, { "diff.inf", "Inf Δ" },
};

typedef struct
{
  cairo_surface_t *surface;
  int n, c;
} tile;

struct _TwbTensorView
{
  GtkWidget parent_instance;
  GtkWidget *box;
  GtkWidget *header;
  GtkWidget *stale_label;          /* shown while the tensor is not the value now */
  GtkWidget *content;              /* everything under the header and the stale line */
  GtkWidget *histogram;
  GtkWidget *stack;
  GtkWidget *slice_bar;            /* GtkFlowBox of "dim k" spin buttons */
  GtkWidget *slice_spins[TW_MAX_DIMS];
  GHashTable *stat_labels;         /* key (static) → GtkLabel */

  GtkWidget *values_msg, *values_content, *values_note, *values_offsets, *row_spin, *col_spin;
  GtkWidget *values_area;
  GtkWidget *heat_msg, *heat_content, *heat_area, *heat_readout;
  GtkWidget *images_msg, *images_content, *images_note, *images_area;
  GtkWidget *diff_msg, *diff_content, *diff_headline, *diff_area, *diff_readout;

  char *name, *role;
  int64_t iteration, prev_iteration;  /* of t and prev (0: not given) */
  char *stale;                     /* why the values are not the values now, or NULL */
  tw_tensor *t, *prev, *diff;      /* host tensors */
  tw_tensor *vslice;               /* the values page's slice of t (any rank) */
  char *diff_error;                /* why there is no difference */
  tw_tensor_stats stats, diff_stats;
  gboolean has_stats, has_diff;
  int64_t slice[TW_MAX_DIMS];
  int64_t rows, cols, row0, col0;  /* the current slice; the values window */
  TwbHeatModel heat, diff_heat;
  tile tiles[MAX_TILES];
  int n_tiles, tile_scale, tile_w, tile_h;  /* tile_w/h: source pixels */
  gboolean building;               /* widgets are being filled: ignore their signals */
};

G_DEFINE_FINAL_TYPE (TwbTensorView, twb_tensor_view, GTK_TYPE_WIDGET)

static void
get_error_colour (GtkWidget *w, GdkRGBA *c)
{
  G_GNUC_BEGIN_IGNORE_DEPRECATIONS
  if (!gtk_style_context_lookup_color (gtk_widget_get_style_context (w), "error_color", c))
    *c = (GdkRGBA) { 0.88f, 0.11f, 0.14f, 1.0f };
  G_GNUC_END_IGNORE_DEPRECATIONS
}



static char *
heat_readout (TwbTensorView *self, TwbHeatModel *hm, double x, double y, int width, int height)
{
  graphene_rect_t r;
  if (hm->slice == NULL || !twb_heat_rect (width, height, &r)
      || !graphene_rect_contains_point (&r, &GRAPHENE_POINT_INIT (x, y)))
    return NULL;
  int64_t row = (int64_t) ((y - r.origin.y) / r.size.height * hm->rows);
  int64_t col = (int64_t) ((x - r.origin.x) / r.size.width * hm->cols);
  row = CLAMP (row, 0, hm->rows - 1);
  col = CLAMP (col, 0, hm->cols - 1);
  GString *s = g_string_new ("[");
  for (int d = 0; d < self->t->ndim - 2; d++)
    g_string_append_printf (s, "%" G_GINT64_FORMAT ", ", self->slice[d]);
  if (self->t->ndim >= 2)
    g_string_append_printf (s, "%" G_GINT64_FORMAT ", ", row);
  g_autofree char *v = twb_tensor_format_value (hm->slice->dtype,
                                     tw_tensor_get_flat (hm->slice, row * hm->cols + col));
  g_string_append_printf (s, "%" G_GINT64_FORMAT "] = %s", col, v);
  return g_string_free (s, FALSE);
}


/* ---- Images -------------------------------------------------------------------- */

static void
clear_tiles (TwbTensorView *self)
{
  for (int i = 0; i < self->n_tiles; i++)
    g_clear_pointer (&self->tiles[i].surface, cairo_surface_destroy);
  self->n_tiles = 0;
}

static gboolean
images_apply (TwbTensorView *self)
{
  return self->t && self->t->ndim == 4 && tw_tensor_numel (self->t) > 0;
}

/* One grey tile per (n, c), normalised to its own finite min / max. */
static void
build_tiles (TwbTensorView *self)
{
  clear_tiles (self);
  if (!images_apply (self))
    return;
  tw_tensor *t = self->t;
  int64_t N = t->shape[0], C = t->shape[1], H = t->shape[2], W = t->shape[3];
  self->n_tiles = (int) MIN (N * C, MAX_TILES);
  self->tile_h = (int) MIN (H, TILE_MAX_SAMPLES);
  self->tile_w = (int) MIN (W, TILE_MAX_SAMPLES);
  int64_t lo_side = MIN (H, W), hi_side = MAX (H, W);
  int64_t s = (TILE_MIN_PX + lo_side - 1) / lo_side;
  s = MIN (s, MAX (1, TILE_MAX_PX / hi_side));
  self->tile_scale = (int) MAX (s, 1);
  for (int k = 0; k < self->n_tiles; k++)
    {
      tile *tl = &self->tiles[k];
      tl->n = (int) (k / C);
      tl->c = (int) (k % C);
      g_autoptr (tw_tensor) a = tw_tensor_slice (t, 0, tl->n, tl->n + 1, 1);
      g_autoptr (tw_tensor) v = tw_tensor_slice (a, 1, tl->c, tl->c + 1, 1);
      tw_tensor_stats st;
      tw_tensor_stats_compute (v, 0, &st);
      tl->surface = cairo_image_surface_create (CAIRO_FORMAT_RGB24, self->tile_w, self->tile_h);
      cairo_surface_flush (tl->surface);
      guint8 *data = cairo_image_surface_get_data (tl->surface);
      int stride = cairo_image_surface_get_stride (tl->surface);
      for (int py = 0; py < self->tile_h; py++)
        {
          guint32 *row = (guint32 *) (data + (size_t) py * stride);
          int64_t y = py * H / self->tile_h;
          for (int px = 0; px < self->tile_w; px++)
            {
              double x = tw_tensor_get_flat (v, y * W + px * W / self->tile_w);
              double rgb[3];
              if (isnan (x))
                memcpy (rgb, twb_tensor_nan_rgb, sizeof rgb);
              else
                {
                  double g = isinf (x) ? (x > 0 ? 1 : 0)
                             : st.max > st.min
                               ? (x * 0.5 - st.min * 0.5) / (st.max * 0.5 - st.min * 0.5)
                               : 0.5;
                  rgb[0] = rgb[1] = rgb[2] = g;
                }
              row[px] = twb_tensor_pack_rgb (rgb);
            }
        }
      cairo_surface_mark_dirty (tl->surface);
      tw_tensor_stats_clear (&st);
    }
}

/* Filters ([O, I, kh, kw]) are labelled "o·i", activations "n·c". */
static gboolean
tiles_are_filters (TwbTensorView *self)
{
  return (self->role && g_str_has_prefix (self->role, "param"))
         || (self->name && strstr (self->name, "weight"));
}

/* Tiles flow left to right in rows; each has its label under it. */
static void
tile_layout (TwbTensorView *self, GtkWidget *w, int width, int *cell_w, int *cell_h, int *per_row,
             int *total_h)
{
  int lh = twb_tensor_small_line_height (w);
  int64_t H = self->t->shape[2], W = self->t->shape[3];
  *cell_w = (int) (W * self->tile_scale);
  *cell_h = (int) (H * self->tile_scale) + lh + 2;
  *per_row = MAX (1, (width - 2 * PAD + TILE_GAP) / (*cell_w + TILE_GAP));
  int rows = (self->n_tiles + *per_row - 1) / *per_row;
  *total_h = 2 * PAD + rows * (*cell_h + TILE_GAP) - TILE_GAP;
}

static void
draw_images (TwbTensorView *self, GtkWidget *w, cairo_t *cr, int width, int height)
{
  if (self->n_tiles == 0)
    return;
  GdkRGBA fg;
  twb_tensor_fg (w, &fg);
  int cell_w, cell_h, per_row, total_h;
  tile_layout (self, w, width, &cell_w, &cell_h, &per_row, &total_h);
  int64_t H = self->t->shape[2];
  gboolean filters = tiles_are_filters (self);
  for (int k = 0; k < self->n_tiles; k++)
    {
      double x = PAD + (k % per_row) * (cell_w + TILE_GAP);
      double y = PAD + (k / per_row) * (cell_h + TILE_GAP);
      tile *tl = &self->tiles[k];
      cairo_save (cr);
      cairo_translate (cr, x, y);
      cairo_scale (cr, (double) cell_w / self->tile_w, (double) H * self->tile_scale / self->tile_h);
      cairo_set_source_surface (cr, tl->surface, 0, 0);
      cairo_pattern_set_filter (cairo_get_source (cr), CAIRO_FILTER_NEAREST);
      cairo_paint (cr);
      cairo_restore (cr);
      g_autofree char *label = g_strdup_printf (filters ? "o%d i%d" : "n%d c%d", tl->n, tl->c);
      twb_tensor_draw_text (cr, w, label, x, y + H * self->tile_scale + 1, 0, &fg, 0.75);
    }
}

static void
images_resize (GtkDrawingArea *area, int width, int height, TwbTensorView *self)
{
  int need = 0;
  if (self->n_tiles > 0)
    {
      int cw, ch, pr;
      tile_layout (self, GTK_WIDGET (area), width, &cw, &ch, &pr, &need);
    }
  if (need != gtk_drawing_area_get_content_height (area))
    gtk_drawing_area_set_content_height (area, need);
}

/* ---- Values -------------------------------------------------------------------- */

static gboolean
cell_in_slice (TwbTensorView *self, int64_t row, int64_t col)
{
  return self->vslice && row >= 0 && col >= 0 && row < self->rows && col < self->cols;
}

static double
cell_value (TwbTensorView *self, int64_t row, int64_t col)
{
  return tw_tensor_get_flat (self->vslice, row * self->cols + col);
}

/* Monospace cell metrics of the current window: characters per cell and per
 * row header, pixel width of a character, line height. */
typedef struct
{
  int cell_chars, hdr_chars, char_w, line_h;
  int64_t n_rows, n_cols;
} values_metrics;

static values_metrics
measure_values (TwbTensorView *self)
{
  values_metrics m = { 4, 1, 8, 16, 0, 0 };
  g_autoptr (PangoLayout) l = gtk_widget_create_pango_layout (self->values_area, "0000000000");
  int w10, h;
  pango_layout_get_pixel_size (l, &w10, &h);
  m.char_w = MAX (1, w10 / 10);
  m.line_h = h + 2;
  if (self->vslice == NULL)
    return m;
  m.n_rows = MIN (MAX_CELLS, self->rows - self->row0);
  m.n_cols = MIN (MAX_CELLS, self->cols - self->col0);
  for (int64_t r = 0; r < m.n_rows; r++)
    for (int64_t c = 0; c < m.n_cols; c++)
      {
        g_autofree char *s = twb_tensor_view_cell_text (self, self->row0 + r, self->col0 + c);
        m.cell_chars = MAX (m.cell_chars, (int) strlen (s) + 2);
      }
  g_autofree char *last = g_strdup_printf ("%" G_GINT64_FORMAT,
                                           MAX (self->row0 + m.n_rows - 1, self->col0 + m.n_cols - 1));
  m.cell_chars = MAX (m.cell_chars, (int) strlen (last) + 2);
  m.hdr_chars = (int) strlen (last) + 1;
  return m;
}

static void
draw_values (GtkDrawingArea *area, cairo_t *cr, int width, int height, gpointer data)
{
  TwbTensorView *self = data;
  values_metrics m = measure_values (self);
  if (m.n_rows <= 0 || m.n_cols <= 0)
    return;
  GtkWidget *w = GTK_WIDGET (area);
  GdkRGBA fg, err;
  twb_tensor_fg (w, &fg);
  get_error_colour (w, &err);
  double cw = m.cell_chars * m.char_w, x0 = m.hdr_chars * m.char_w;
  /* Non-finite cells: a tint behind the text. */
  for (int64_t r = 0; r < m.n_rows; r++)
    for (int64_t c = 0; c < m.n_cols; c++)
      {
        double v = cell_value (self, self->row0 + r, self->col0 + c);
        if (isfinite (v))
          continue;
        twb_tensor_set_source (cr, &err, isnan (v) ? 0.3 : 0.15);
        cairo_rectangle (cr, x0 + c * cw + m.char_w, (r + 1) * m.line_h, cw - m.char_w, m.line_h);
        cairo_fill (cr);
      }
  /* One layout per line: the cells right-aligned in fixed-width fields;
   * the column indices (first line) and row indices dimmer. */
  for (int64_t r = -1; r < m.n_rows; r++)
    {
      double y = (r + 1) * m.line_h + 1;
      if (r >= 0)
        {
          g_autofree char *idx = g_strdup_printf ("%*" G_GINT64_FORMAT, m.hdr_chars - 1,
                                                  self->row0 + r);
          g_autoptr (PangoLayout) hl = gtk_widget_create_pango_layout (w, idx);
          cairo_move_to (cr, 0, y);
          twb_tensor_set_source (cr, &fg, 0.55);
          pango_cairo_show_layout (cr, hl);
        }
      g_autoptr (GString) line = g_string_new (NULL);
      for (int64_t c = 0; c < m.n_cols; c++)
        {
          g_autofree char *s
            = r < 0 ? g_strdup_printf ("%" G_GINT64_FORMAT, self->col0 + c)
                    : twb_tensor_view_cell_text (self, self->row0 + r, self->col0 + c);
          g_string_append_printf (line, "%*s", m.cell_chars, s);
        }
      g_autoptr (PangoLayout) l = gtk_widget_create_pango_layout (w, line->str);
      cairo_move_to (cr, x0, y);
      twb_tensor_set_source (cr, &fg, r < 0 ? 0.55 : 1);
      pango_cairo_show_layout (cr, l);
    }
  twb_tensor_set_source (cr, &fg, 0.2);
  cairo_rectangle (cr, x0, m.line_h, width - x0, 1);
  cairo_fill (cr);
}

static void
update_values_size (TwbTensorView *self)
{
  values_metrics m = measure_values (self);
  GtkDrawingArea *a = GTK_DRAWING_AREA (self->values_area);
  gtk_drawing_area_set_content_width (a, (int) (m.hdr_chars + m.n_cols * m.cell_chars) * m.char_w
                                           + 4);
  gtk_drawing_area_set_content_height (a, (int) (m.n_rows + 1) * m.line_h + 4);
  gtk_widget_queue_draw (self->values_area);
}

/* "first 64 of 300 columns", "rows 65–128 of 300". */
static void
append_window (GString *s, int64_t first, int64_t total, const char *what)
{
  if (total <= MAX_CELLS)
    return;
  if (s->len)
    g_string_append (s, " · ");
  int64_t last = MIN (first + MAX_CELLS, total);
  if (first == 0)
    g_string_append_printf (s, "first %d of %" G_GINT64_FORMAT " %s", MAX_CELLS, total, what);
  else
    g_string_append_printf (s, "%s %" G_GINT64_FORMAT "–%" G_GINT64_FORMAT " of %" G_GINT64_FORMAT,
                            what, first, last - 1, total);
}

static void
update_values_note (TwbTensorView *self)
{
  g_autoptr (GString) s = g_string_new (NULL);
  if (self->t)
    {
      append_window (s, self->row0, self->rows, "rows");
      append_window (s, self->col0, self->cols, "columns");
    }
  gtk_label_set_text (GTK_LABEL (self->values_note), s->str);
  gtk_widget_set_visible (self->values_note, s->len > 0);
  gtk_widget_set_visible (self->values_offsets, s->len > 0);
}

/* ---- Statistics labels --------------------------------------------------------- */

static char *
stat_value (const tw_tensor_stats *st, const char *key)
{
  if (g_str_equal (key, "count"))
    return g_strdup_printf ("%" G_GINT64_FORMAT, st->count);
  if (g_str_equal (key, "finite"))
    return g_strdup_printf ("%" G_GINT64_FORMAT, st->finite);
  if (g_str_equal (key, "zeros"))
    return g_strdup_printf ("%" G_GINT64_FORMAT, st->zeros);
  if (g_str_equal (key, "nan"))
    return g_strdup_printf ("%" G_GINT64_FORMAT, st->nan);
  if (g_str_equal (key, "inf"))
    return g_strdup_printf ("%" G_GINT64_FORMAT, st->inf);
  if (g_str_equal (key, "changed"))
    return g_strdup_printf ("%" G_GINT64_FORMAT, st->count - st->zeros);
  double v = g_str_equal (key, "min")    ? st->min
             : g_str_equal (key, "max")  ? st->max
             : g_str_equal (key, "mean") ? st->mean
             : g_str_equal (key, "std")  ? st->std
                                         : st->abs_max;
  return isnan (v) ? g_strdup ("—") : twb_tensor_format_double (v);
}

static void
fill_stat_labels (TwbTensorView *self, const stat_def *defs, int n, const tw_tensor_stats *st)
{
  for (int i = 0; i < n; i++)
    {
      GtkWidget *l = g_hash_table_lookup (self->stat_labels, defs[i].key);
      const char *key = g_str_has_prefix (defs[i].key, "diff.") ? defs[i].key + 5 : defs[i].key;
      g_autofree char *text = st ? stat_value (st, key) : g_strdup ("—");
      gtk_label_set_text (GTK_LABEL (l), text);
      gboolean bad = st && ((g_str_equal (key, "nan") && st->nan > 0)
                            || (g_str_equal (key, "inf") && st->inf > 0));
      if (bad)
        gtk_widget_add_css_class (l, "error");
      else
        gtk_widget_remove_css_class (l, "error");
    }
}

static GtkWidget *
stats_grid (TwbTensorView *self, const stat_def *defs, int n)
{
  GtkWidget *grid = gtk_grid_new ();
  gtk_grid_set_column_spacing (GTK_GRID (grid), 8);
  gtk_grid_set_row_spacing (GTK_GRID (grid), 1);
  for (int i = 0; i < n; i++)
    {
      GtkWidget *t = gtk_label_new (defs[i].title);
      gtk_widget_add_css_class (t, "dim-label");
      gtk_label_set_xalign (GTK_LABEL (t), 0);
      GtkWidget *v = gtk_label_new ("—");
      gtk_label_set_selectable (GTK_LABEL (v), TRUE);
      gtk_label_set_xalign (GTK_LABEL (v), 0);
      gtk_widget_set_hexpand (v, TRUE);
      gtk_label_set_ellipsize (GTK_LABEL (v), PANGO_ELLIPSIZE_END);
      gtk_label_set_width_chars (GTK_LABEL (v), 6);
      gtk_widget_add_css_class (v, "numeric");
      gtk_widget_set_focusable (v, FALSE);
      gtk_grid_attach (GTK_GRID (grid), t, (i % 2) * 2, i / 2, 1, 1);
      gtk_grid_attach (GTK_GRID (grid), v, (i % 2) * 2 + 1, i / 2, 1, 1);
      g_hash_table_insert (self->stat_labels, (gpointer) defs[i].key, v);
    }
  return grid;
}

/* ---- State --------------------------------------------------------------------- */

static void
show_page_content (GtkWidget *msg, GtkWidget *content, const char *why)
{
  gtk_label_set_text (GTK_LABEL (msg), why ? why : "");
  gtk_widget_set_visible (msg, why != NULL);
  gtk_widget_set_visible (content, why == NULL);
}

static void
update_slice (TwbTensorView *self)
{
  g_clear_pointer (&self->vslice, tw_tensor_unref);
  if (self->t)
    self->vslice = twb_tensor_slice_view (self->t, self->slice);
  twb_heat_model_set (&self->heat, self->t, self->slice);
  twb_heat_model_set (&self->diff_heat, self->diff, self->slice);
  if (self->t)
    twb_tensor_slice_dims (self->t, &self->rows, &self->cols);
  else
    self->rows = self->cols = 0;
  self->row0 = MIN (self->row0, MAX (self->rows - 1, 0));
  self->col0 = MIN (self->col0, MAX (self->cols - 1, 0));
  update_values_note (self);
  update_values_size (self);
  gtk_label_set_text (GTK_LABEL (self->heat_readout), "");
  gtk_label_set_text (GTK_LABEL (self->diff_readout), "");
  gtk_widget_queue_draw (self->heat_area);
  gtk_widget_queue_draw (self->diff_area);
}

static void
slice_changed (GtkSpinButton *spin, TwbTensorView *self)
{
  if (self->building || self->t == NULL)
    return;
  for (int d = 0; d < self->t->ndim - 2; d++)
    self->slice[d] = gtk_spin_button_get_value_as_int (GTK_SPIN_BUTTON (self->slice_spins[d]));
  update_slice (self);
}

static void
offsets_changed (GtkSpinButton *spin, TwbTensorView *self)
{
  if (self->building)
    return;
  self->row0 = gtk_spin_button_get_value_as_int (GTK_SPIN_BUTTON (self->row_spin));
  self->col0 = gtk_spin_button_get_value_as_int (GTK_SPIN_BUTTON (self->col_spin));
  update_values_note (self);
  update_values_size (self);
}

static void
update_slice_visibility (TwbTensorView *self)
{
  const char *page = gtk_stack_get_visible_child_name (GTK_STACK (self->stack));
  gtk_widget_set_visible (self->slice_bar, self->t && self->t->ndim > 2 && tw_tensor_numel (self->t) > 0
                                             && g_strcmp0 (page, "images") != 0);
}

static void
rebuild_slice_bar (TwbTensorView *self)
{
  GtkWidget *child;
  /* An index typed, then F11: the new tensor's bar has the focus back in
   * the same dimension's field (twb-focus.h). */
  g_autofree char *focus_key = NULL;
  for (child = gtk_widget_get_first_child (self->slice_bar); child && focus_key == NULL;
       child = gtk_widget_get_next_sibling (child))
    focus_key = twb_focus_save (child);
  while ((child = gtk_widget_get_first_child (self->slice_bar)))
    gtk_flow_box_remove (GTK_FLOW_BOX (self->slice_bar), child);
  memset (self->slice_spins, 0, sizeof self->slice_spins);
  for (int d = 0; self->t && d < self->t->ndim - 2; d++)
    {
      int64_t n = self->t->shape[d];
      self->slice[d] = CLAMP (self->slice[d], 0, MAX (n - 1, 0));
      GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 4);
      g_autofree char *title = g_strdup_printf ("dim %d", d);
      GtkWidget *l = gtk_label_new (title);
      gtk_widget_add_css_class (l, "dim-label");
      GtkWidget *spin = gtk_spin_button_new_with_range (0, MAX (n - 1, 0), 1);
      gtk_spin_button_set_value (GTK_SPIN_BUTTON (spin), (double) self->slice[d]);
      gtk_widget_set_sensitive (spin, n > 1);
      g_autofree char *tip = g_strdup_printf ("Index along dimension %d (size %" G_GINT64_FORMAT ")",
                                              d, n);
      gtk_widget_set_tooltip_text (spin, tip);
      gtk_accessible_update_property (GTK_ACCESSIBLE (spin), GTK_ACCESSIBLE_PROPERTY_LABEL, tip, -1);
      g_signal_connect (spin, "value-changed", G_CALLBACK (slice_changed), self);
      gtk_box_append (GTK_BOX (box), l);
      gtk_box_append (GTK_BOX (box), spin);
      g_autofree char *key = g_strdup_printf ("dim %d", d);
      twb_focus_set_key (spin, key);
      gtk_flow_box_append (GTK_FLOW_BOX (self->slice_bar), box);
      self->slice_spins[d] = spin;
    }
  twb_focus_restore (self->slice_bar, focus_key);
  for (int d = self->t ? MAX (self->t->ndim - 2, 0) : 0; d < TW_MAX_DIMS; d++)
    self->slice[d] = 0;
}

/* "Iteration 12 − iteration 9: max |Δ| = 0.5": which two snapshots, always
 * (the earlier is the last one of this tensor the debugger received, not
 * necessarily the iteration before); "no difference" said in words. */
static char *
diff_headline (TwbTensorView *self)
{
  GString *s = g_string_new (NULL);
  if (self->iteration > 0 && self->prev_iteration > 0)
    g_string_append_printf (s, "Iteration %" G_GINT64_FORMAT " − iteration %" G_GINT64_FORMAT
                               ": ", self->iteration, self->prev_iteration);
  else
    g_string_append (s, "This snapshot − the one before: ");
  const tw_tensor_stats *d = &self->diff_stats;
  if (d->finite == d->count && d->count > 0 && d->abs_max == 0)
    g_string_append (s, "no difference, every element is equal");
  else
    {
      g_autofree char *v = twb_tensor_format_double (d->abs_max);
      g_string_append_printf (s, "max |Δ| = %s", isnan (d->abs_max) ? "—" : v);
    }
  return g_string_free (s, FALSE);
}

/* The stale line, and the figures below it faded, while the values shown
 * are not the values now (the run went on, or ended). */
static void
update_stale (TwbTensorView *self)
{
  gboolean stale = self->stale != NULL;
  gtk_widget_set_visible (self->stale_label, stale);
  if (stale)
    {
      g_autofree char *text = g_strdup_printf ("Stale: %s", self->stale);
      gtk_label_set_text (GTK_LABEL (self->stale_label), text);
    }
  gtk_widget_set_opacity (self->content, stale ? STALE_OPACITY : 1.0);
}

static void
update_pages (TwbTensorView *self)
{
  tw_tensor *t = self->t;
  gboolean empty = t && tw_tensor_numel (t) == 0;
  const char *none = t == NULL ? "No tensor selected" : empty ? "Empty tensor: nothing to show" : NULL;

  show_page_content (self->values_msg, self->values_content, none);
  show_page_content (self->heat_msg, self->heat_content,
                     none ? none : t->ndim == 0 ? "A scalar has no heat map: see its value" : NULL);

  g_autofree char *img_why = NULL;
  if (!none && t->ndim != 4)
    {
      g_autofree char *shape = tw_shape_to_string (t->ndim, t->shape);
      img_why = g_strdup_printf ("Images need a 4-D tensor [N, C, H, W] (activations) or "
                                 "[O, I, kh, kw] (filters); this one is %s", shape);
    }
  show_page_content (self->images_msg, self->images_content, none ? none : img_why);
  g_autofree char *img_note = NULL;
  if (images_apply (self) && t->shape[0] * t->shape[1] > MAX_TILES)
    img_note = g_strdup_printf ("first %d of %" G_GINT64_FORMAT " tiles (%" G_GINT64_FORMAT
                                " × %" G_GINT64_FORMAT "), each normalised to its own range",
                                MAX_TILES, t->shape[0] * t->shape[1], t->shape[0], t->shape[1]);
  else if (images_apply (self))
    img_note = g_strdup_printf ("%d tiles, each normalised to its own range", self->n_tiles);
  gtk_label_set_text (GTK_LABEL (self->images_note), img_note ? img_note : "");
  gtk_widget_queue_resize (self->images_area);
  gtk_widget_queue_draw (self->images_area);

  const char *diff_why = none;
  if (!diff_why && self->prev == NULL)
    diff_why = "No previous iteration yet: the difference shows from the next snapshot on";
  if (!diff_why && !self->has_diff)
    diff_why = self->diff_error;
  show_page_content (self->diff_msg, self->diff_content, diff_why);
  if (self->has_diff)
    {
      g_autofree char *text = diff_headline (self);
      gtk_label_set_text (GTK_LABEL (self->diff_headline), text);
    }
  update_slice_visibility (self);
}

void
twb_tensor_view_set_tensor (TwbTensorView *self, const char *name, const char *role, tw_tensor *t,
                            tw_tensor *previous)
{
  g_return_if_fail (TWB_IS_TENSOR_VIEW (self));
  self->building = TRUE;
  g_clear_pointer (&self->t, tw_tensor_unref);
  g_clear_pointer (&self->prev, tw_tensor_unref);
  g_clear_pointer (&self->diff, tw_tensor_unref);
  tw_tensor_stats_clear (&self->stats);
  tw_tensor_stats_clear (&self->diff_stats);
  self->has_stats = self->has_diff = FALSE;
  g_free (self->name);
  g_free (self->role);
  self->name = g_strdup (name);
  self->role = g_strdup (role);
  self->iteration = self->prev_iteration = 0;
  g_clear_pointer (&self->diff_error, g_free);
  /* A new tensor is the value now until the caller says otherwise. */
  g_clear_pointer (&self->stale, g_free);
  update_stale (self);

  if (t)
    {
      self->t = tw_tensor_to_host (t);
      tw_tensor_stats_compute (self->t, HIST_BINS, &self->stats);
      self->has_stats = TRUE;
      if (previous)
        {
          self->prev = tw_tensor_to_host (previous);
          g_autoptr (GError) error = NULL;
          self->diff = tw_tensor_diff (self->t, self->prev, &error);
          if (self->diff)
            {
              tw_tensor_stats_compute (self->diff, 0, &self->diff_stats);
              self->has_diff = TRUE;
            }
          else
            self->diff_error = g_strdup (error->message);
        }
    }

  /* Header: name · role · shape · dtype. */
  g_autoptr (GString) head = g_string_new (NULL);
  if (self->t)
    {
      g_autofree char *shape = tw_shape_to_string (self->t->ndim, self->t->shape);
      g_string_append (head, name && *name ? name : "(unnamed)");
      if (role && *role)
        g_string_append_printf (head, " · %s", role);
      g_string_append_printf (head, " · %s · %s", shape, tw_dtype_name (self->t->dtype));
    }
  else
    g_string_append (head, "No tensor");
  gtk_label_set_text (GTK_LABEL (self->header), head->str);
  gtk_widget_set_tooltip_text (self->header, head->str);

  fill_stat_labels (self, stat_defs, G_N_ELEMENTS (stat_defs), self->has_stats ? &self->stats : NULL);
  fill_stat_labels (self, diff_defs, G_N_ELEMENTS (diff_defs), self->has_diff ? &self->diff_stats : NULL);
  rebuild_slice_bar (self);
  build_tiles (self);

  int64_t rows = 0, cols = 0;
  if (self->t)
    twb_tensor_slice_dims (self->t, &rows, &cols);
  gtk_spin_button_set_range (GTK_SPIN_BUTTON (self->row_spin), 0, MAX (rows - 1, 0));
  gtk_spin_button_set_range (GTK_SPIN_BUTTON (self->col_spin), 0, MAX (cols - 1, 0));
  gtk_widget_set_visible (gtk_widget_get_parent (self->row_spin), rows > MAX_CELLS);
  gtk_widget_set_visible (gtk_widget_get_parent (self->col_spin), cols > MAX_CELLS);
  self->row0 = MIN (self->row0, MAX (rows - 1, 0));
  self->col0 = MIN (self->col0, MAX (cols - 1, 0));
  gtk_spin_button_set_value (GTK_SPIN_BUTTON (self->row_spin), (double) self->row0);
  gtk_spin_button_set_value (GTK_SPIN_BUTTON (self->col_spin), (double) self->col0);
  self->building = FALSE;

  update_slice (self);
  update_pages (self);
  gtk_widget_queue_draw (self->histogram);
}

/* ---- Iterations and staleness ---------------------------------------------- */

void
twb_tensor_view_set_iterations (TwbTensorView *self, int64_t iteration, int64_t previous)
{
  g_return_if_fail (TWB_IS_TENSOR_VIEW (self));
  self->iteration = iteration;
  self->prev_iteration = previous;
  update_pages (self);
}

void
twb_tensor_view_set_stale (TwbTensorView *self, const char *why)
{
  g_return_if_fail (TWB_IS_TENSOR_VIEW (self));
  if (g_strcmp0 (why, self->stale) == 0)
    return;
  g_free (self->stale);
  self->stale = self->t ? g_strdup (why) : NULL;
  update_stale (self);
}

const char *
twb_tensor_view_get_stale (TwbTensorView *self)
{
  g_return_val_if_fail (TWB_IS_TENSOR_VIEW (self), NULL);
  return self->stale;
}

/* ---- Drawing areas ------------------------------------------------------------- */

static void
draw_histogram_area (GtkDrawingArea *area, cairo_t *cr, int width, int height, gpointer data)
{
  TwbTensorView *self = data;
  if (self->has_stats)
    twb_histogram_draw (GTK_WIDGET (area), &self->stats, cr, width, height);
}

static void
draw_heat_area (GtkDrawingArea *area, cairo_t *cr, int width, int height, gpointer data)
{
  TwbTensorView *self = data;
  twb_heat_draw (GTK_WIDGET (area), GTK_WIDGET (area) == self->diff_area ? &self->diff_heat : &self->heat,
             cr, width, height);
}

static void
draw_images_area (GtkDrawingArea *area, cairo_t *cr, int width, int height, gpointer data)
{
  draw_images (data, GTK_WIDGET (area), cr, width, height);
}

static void
heat_motion (GtkEventControllerMotion *motion, double x, double y, TwbTensorView *self)
{
  GtkWidget *area = gtk_event_controller_get_widget (GTK_EVENT_CONTROLLER (motion));
  gboolean diff = area == self->diff_area;
  g_autofree char *text = self->t ? heat_readout (self, diff ? &self->diff_heat : &self->heat, x, y,
                                                  gtk_widget_get_width (area),
                                                  gtk_widget_get_height (area))
                                  : NULL;
  gtk_label_set_text (GTK_LABEL (diff ? self->diff_readout : self->heat_readout), text ? text : "");
}

static GtkWidget *
heat_area_new (TwbTensorView *self, const char *accessible)
{
  GtkWidget *a = gtk_drawing_area_new ();
  gtk_drawing_area_set_content_width (GTK_DRAWING_AREA (a), 120);
  gtk_drawing_area_set_content_height (GTK_DRAWING_AREA (a), 80);
  gtk_widget_set_vexpand (a, TRUE);
  gtk_drawing_area_set_draw_func (GTK_DRAWING_AREA (a), draw_heat_area, self, NULL);
  GtkEventController *motion = gtk_event_controller_motion_new ();
  g_signal_connect (motion, "motion", G_CALLBACK (heat_motion), self);
  gtk_widget_add_controller (a, motion);
  gtk_accessible_update_property (GTK_ACCESSIBLE (a), GTK_ACCESSIBLE_PROPERTY_LABEL, accessible, -1);
  return a;
}

static GtkWidget *
message_label (void)
{
  GtkWidget *l = gtk_label_new (NULL);
  gtk_widget_add_css_class (l, "dim-label");
  gtk_label_set_wrap (GTK_LABEL (l), TRUE);
  gtk_label_set_xalign (GTK_LABEL (l), 0);
  gtk_label_set_width_chars (GTK_LABEL (l), 20);
  gtk_widget_set_valign (l, GTK_ALIGN_START);
  gtk_widget_set_margin_top (l, 6);
  return l;
}

static GtkWidget *
note_label (void)
{
  GtkWidget *l = gtk_label_new (NULL);
  gtk_widget_add_css_class (l, "dim-label");
  gtk_label_set_xalign (GTK_LABEL (l), 0);
  gtk_label_set_ellipsize (GTK_LABEL (l), PANGO_ELLIPSIZE_END);
  return l;
}

static GtkWidget *
page_box (GtkWidget *msg, GtkWidget *content)
{
  GtkWidget *b = gtk_box_new (GTK_ORIENTATION_VERTICAL, 4);
  gtk_box_append (GTK_BOX (b), msg);
  gtk_box_append (GTK_BOX (b), content);
  gtk_widget_set_vexpand (content, TRUE);
  return b;
}

static GtkWidget *
offset_spin (GtkWidget *row, const char *title, GtkWidget **spin, TwbTensorView *self)
{
  GtkWidget *b = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 4);
  GtkWidget *l = gtk_label_new (title);
  gtk_widget_add_css_class (l, "dim-label");
  *spin = gtk_spin_button_new_with_range (0, 0, 1);
  gtk_spin_button_set_increments (GTK_SPIN_BUTTON (*spin), 1, MAX_CELLS);
  g_autofree char *tip = g_strdup_printf ("First %s shown", title);
  gtk_widget_set_tooltip_text (*spin, tip);
  gtk_accessible_update_property (GTK_ACCESSIBLE (*spin), GTK_ACCESSIBLE_PROPERTY_LABEL, tip, -1);
  g_signal_connect (*spin, "value-changed", G_CALLBACK (offsets_changed), self);
  gtk_box_append (GTK_BOX (b), l);
  gtk_box_append (GTK_BOX (b), *spin);
  gtk_box_append (GTK_BOX (row), b);
  return b;
}

static GtkWidget *
build_values_page (TwbTensorView *self)
{
  self->values_msg = message_label ();
  GtkWidget *content = gtk_box_new (GTK_ORIENTATION_VERTICAL, 4);
  self->values_content = content;
  self->values_note = note_label ();
  self->values_offsets = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 8);
  offset_spin (self->values_offsets, "row", &self->row_spin, self);
  offset_spin (self->values_offsets, "column", &self->col_spin, self);
  self->values_area = gtk_drawing_area_new ();
  gtk_widget_add_css_class (self->values_area, "monospace");
  gtk_drawing_area_set_draw_func (GTK_DRAWING_AREA (self->values_area), draw_values, self, NULL);
  gtk_accessible_update_property (GTK_ACCESSIBLE (self->values_area), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  "Values of the selected slice", -1);
  GtkWidget *sw = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (sw), self->values_area);
  gtk_widget_set_vexpand (sw, TRUE);
  gtk_box_append (GTK_BOX (content), self->values_note);
  gtk_box_append (GTK_BOX (content), self->values_offsets);
  gtk_box_append (GTK_BOX (content), sw);
  return page_box (self->values_msg, content);
}

static GtkWidget *
build_heat_page (TwbTensorView *self)
{
  self->heat_msg = message_label ();
  self->heat_content = gtk_box_new (GTK_ORIENTATION_VERTICAL, 2);
  self->heat_area = heat_area_new (self, "Heat map of the selected slice");
  self->heat_readout = note_label ();
  gtk_widget_add_css_class (self->heat_readout, "monospace");
  gtk_box_append (GTK_BOX (self->heat_content), self->heat_area);
  gtk_box_append (GTK_BOX (self->heat_content), self->heat_readout);
  return page_box (self->heat_msg, self->heat_content);
}

static GtkWidget *
build_images_page (TwbTensorView *self)
{
  self->images_msg = message_label ();
  self->images_content = gtk_box_new (GTK_ORIENTATION_VERTICAL, 4);
  self->images_note = note_label ();
  self->images_area = gtk_drawing_area_new ();
  gtk_drawing_area_set_draw_func (GTK_DRAWING_AREA (self->images_area), draw_images_area, self, NULL);
  g_signal_connect (self->images_area, "resize", G_CALLBACK (images_resize), self);
  gtk_accessible_update_property (GTK_ACCESSIBLE (self->images_area), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  "One image per sample and channel", -1);
  GtkWidget *sw = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (sw), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (sw), self->images_area);
  gtk_widget_set_vexpand (sw, TRUE);
  gtk_box_append (GTK_BOX (self->images_content), self->images_note);
  gtk_box_append (GTK_BOX (self->images_content), sw);
  return page_box (self->images_msg, self->images_content);
}

static GtkWidget *
build_diff_page (TwbTensorView *self)
{
  self->diff_msg = message_label ();
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 4);
  self->diff_headline = gtk_label_new (NULL);
  gtk_widget_add_css_class (self->diff_headline, "heading");
  gtk_label_set_xalign (GTK_LABEL (self->diff_headline), 0);
  /* "Iteration 12 − iteration 9: …" wraps in a narrow side panel. */
  gtk_label_set_wrap (GTK_LABEL (self->diff_headline), TRUE);
  gtk_label_set_wrap_mode (GTK_LABEL (self->diff_headline), PANGO_WRAP_WORD_CHAR);
  gtk_label_set_selectable (GTK_LABEL (self->diff_headline), TRUE);
  gtk_widget_set_focusable (self->diff_headline, FALSE);
  self->diff_area = heat_area_new (self, "Heat map of the difference from the previous iteration");
  gtk_drawing_area_set_content_height (GTK_DRAWING_AREA (self->diff_area), 120);
  self->diff_readout = note_label ();
  gtk_widget_add_css_class (self->diff_readout, "monospace");
  gtk_box_append (GTK_BOX (box), self->diff_headline);
  gtk_box_append (GTK_BOX (box), stats_grid (self, diff_defs, G_N_ELEMENTS (diff_defs)));
  gtk_box_append (GTK_BOX (box), self->diff_area);
  gtk_box_append (GTK_BOX (box), self->diff_readout);
  /* Scrolls, so that the page fits a short side panel. */
  self->diff_content = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (self->diff_content), GTK_POLICY_NEVER,
                                  GTK_POLICY_AUTOMATIC);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (self->diff_content), box);
  return page_box (self->diff_msg, self->diff_content);
}

static void
page_changed (GObject *stack, GParamSpec *pspec, TwbTensorView *self)
{
  update_slice_visibility (self);
}

/* The theme gives stack switcher buttons a 100 px minimum: four of them
 * would not fit a 360 px side panel. */
static void
ensure_css (void)
{
  static gboolean done;
  GdkDisplay *display = gdk_display_get_default ();
  if (done || display == NULL)
    return;
  done = TRUE;
  GtkCssProvider *css = gtk_css_provider_new ();
  gtk_css_provider_load_from_data (css,
                                   "tensorview stackswitcher > button "
                                   "{ min-width: 0; padding-left: 8px; padding-right: 8px; }\n"
                                   /* The theme's error red reads badly on a
                                    * dark background (contrast ~2:1). */
                                   "tensorview.on-dark label.error { color: #ff7b63; }\n"
                                   /* The stale line: the theme's warning
                                    * colour, bold, a bar at its left. */
                                   "tensorview label.stale { font-weight: bold; "
                                   "color: @warning_color; border-left: 3px solid "
                                   "@warning_color; padding-left: 6px; }",
                                   -1);
  gtk_style_context_add_provider_for_display (display, GTK_STYLE_PROVIDER (css),
                                              GTK_STYLE_PROVIDER_PRIORITY_APPLICATION);
  g_object_unref (css);
}

static void
twb_tensor_view_init (TwbTensorView *self)
{
  ensure_css ();
  self->stat_labels = g_hash_table_new (g_str_hash, g_str_equal);
  self->box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 6);
  gtk_widget_set_parent (self->box, GTK_WIDGET (self));

  self->header = gtk_label_new ("No tensor");
  gtk_widget_add_css_class (self->header, "heading");
  gtk_label_set_xalign (GTK_LABEL (self->header), 0);
  gtk_label_set_ellipsize (GTK_LABEL (self->header), PANGO_ELLIPSIZE_MIDDLE);
  gtk_box_append (GTK_BOX (self->box), self->header);
  self->stale_label = gtk_label_new (NULL);
  gtk_widget_add_css_class (self->stale_label, "stale");
  gtk_label_set_xalign (GTK_LABEL (self->stale_label), 0);
  gtk_label_set_wrap (GTK_LABEL (self->stale_label), TRUE);
  gtk_label_set_wrap_mode (GTK_LABEL (self->stale_label), PANGO_WRAP_WORD_CHAR);
  gtk_widget_set_visible (self->stale_label, FALSE);
  gtk_box_append (GTK_BOX (self->box), self->stale_label);
  /* The rest fades together while stale. */
  GtkWidget *outer = self->box;
  self->content = gtk_box_new (GTK_ORIENTATION_VERTICAL, 6);
  gtk_widget_set_vexpand (self->content, TRUE);
  gtk_box_append (GTK_BOX (outer), self->content);
  self->box = self->content;
  gtk_box_append (GTK_BOX (self->box), stats_grid (self, stat_defs, G_N_ELEMENTS (stat_defs)));

  self->histogram = gtk_drawing_area_new ();
  gtk_drawing_area_set_content_height (GTK_DRAWING_AREA (self->histogram), 64);
  gtk_drawing_area_set_content_width (GTK_DRAWING_AREA (self->histogram), 120);
  gtk_drawing_area_set_draw_func (GTK_DRAWING_AREA (self->histogram), draw_histogram_area, self, NULL);
  gtk_accessible_update_property (GTK_ACCESSIBLE (self->histogram), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  "Histogram of the finite values", -1);
  gtk_box_append (GTK_BOX (self->box), self->histogram);

  self->stack = gtk_stack_new ();
  gtk_stack_add_titled (GTK_STACK (self->stack), build_values_page (self), "values", "Values");
  gtk_stack_add_titled (GTK_STACK (self->stack), build_heat_page (self), "heatmap", "Heat map");
  gtk_stack_add_titled (GTK_STACK (self->stack), build_images_page (self), "images", "Images");
  gtk_stack_add_titled (GTK_STACK (self->stack), build_diff_page (self), "diff", "Diff");
  gtk_widget_set_vexpand (self->stack, TRUE);
  g_signal_connect (self->stack, "notify::visible-child", G_CALLBACK (page_changed), self);
  GtkWidget *switcher = gtk_stack_switcher_new ();
  gtk_stack_switcher_set_stack (GTK_STACK_SWITCHER (switcher), GTK_STACK (self->stack));
  gtk_box_append (GTK_BOX (self->box), switcher);

  self->slice_bar = gtk_flow_box_new ();
  gtk_flow_box_set_selection_mode (GTK_FLOW_BOX (self->slice_bar), GTK_SELECTION_NONE);
  gtk_flow_box_set_max_children_per_line (GTK_FLOW_BOX (self->slice_bar), TW_MAX_DIMS);
  gtk_flow_box_set_column_spacing (GTK_FLOW_BOX (self->slice_bar), 8);
  gtk_box_append (GTK_BOX (self->box), self->slice_bar);
  gtk_box_append (GTK_BOX (self->box), self->stack);
  self->box = outer;
  self->diff_heat.centred = TRUE;

  twb_tensor_view_set_tensor (self, NULL, NULL, NULL, NULL);
}

/* Whether the theme is dark (light text) is known for sure while drawing:
 * the style is up to date then.  The class only recolours error labels, so
 * the one extra frame after a theme switch settles. */
static void
twb_tensor_view_snapshot (GtkWidget *widget, GtkSnapshot *snap)
{
  GdkRGBA fg;
  twb_tensor_fg (widget, &fg);
  gboolean dark = 0.2126 * fg.red + 0.7152 * fg.green + 0.0722 * fg.blue > 0.5;
  if (dark != gtk_widget_has_css_class (widget, "on-dark"))
    {
      if (dark)
        gtk_widget_add_css_class (widget, "on-dark");
      else
        gtk_widget_remove_css_class (widget, "on-dark");
    }
  GTK_WIDGET_CLASS (twb_tensor_view_parent_class)->snapshot (widget, snap);
}

static void
twb_tensor_view_dispose (GObject *object)
{
  TwbTensorView *self = TWB_TENSOR_VIEW (object);
  g_clear_pointer (&self->box, gtk_widget_unparent);
  g_clear_pointer (&self->t, tw_tensor_unref);
  g_clear_pointer (&self->prev, tw_tensor_unref);
  g_clear_pointer (&self->diff, tw_tensor_unref);
  g_clear_pointer (&self->vslice, tw_tensor_unref);
  tw_tensor_stats_clear (&self->stats);
  tw_tensor_stats_clear (&self->diff_stats);
  twb_heat_model_clear (&self->heat);
  twb_heat_model_clear (&self->diff_heat);
  clear_tiles (self);
  g_clear_pointer (&self->stat_labels, g_hash_table_unref);
  G_OBJECT_CLASS (twb_tensor_view_parent_class)->dispose (object);
}

static void
twb_tensor_view_finalize (GObject *object)
{
  TwbTensorView *self = TWB_TENSOR_VIEW (object);
  g_free (self->name);
  g_free (self->role);
  g_free (self->diff_error);
  g_free (self->stale);
  G_OBJECT_CLASS (twb_tensor_view_parent_class)->finalize (object);
}

static void
twb_tensor_view_class_init (TwbTensorViewClass *klass)
{
  G_OBJECT_CLASS (klass)->dispose = twb_tensor_view_dispose;
  G_OBJECT_CLASS (klass)->finalize = twb_tensor_view_finalize;
  GTK_WIDGET_CLASS (klass)->snapshot = twb_tensor_view_snapshot;
  gtk_widget_class_set_layout_manager_type (GTK_WIDGET_CLASS (klass), GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name (GTK_WIDGET_CLASS (klass), "tensorview");
}

/* ---- Public -------------------------------------------------------------------- */

GtkWidget *
twb_tensor_view_new (void)
{
  return g_object_new (TWB_TYPE_TENSOR_VIEW, NULL);
}

void
twb_tensor_view_show_page (TwbTensorView *self, const char *page)
{
  g_return_if_fail (TWB_IS_TENSOR_VIEW (self));
  g_return_if_fail (gtk_stack_get_child_by_name (GTK_STACK (self->stack), page) != NULL);
  gtk_stack_set_visible_child_name (GTK_STACK (self->stack), page);
}

void
twb_tensor_view_set_slice (TwbTensorView *self, int dim, int64_t index)
{
  g_return_if_fail (TWB_IS_TENSOR_VIEW (self));
  g_return_if_fail (self->t != NULL && dim >= 0 && dim < self->t->ndim - 2);
  index = CLAMP (index, 0, MAX (self->t->shape[dim] - 1, 0));
  gtk_spin_button_set_value (GTK_SPIN_BUTTON (self->slice_spins[dim]), (double) index);
  if (self->slice[dim] != index)   /* the spin held this value: no signal */
    {
      self->slice[dim] = index;
      update_slice (self);
    }
}

void
twb_tensor_view_set_values_offset (TwbTensorView *self, int64_t row0, int64_t col0)
{
  g_return_if_fail (TWB_IS_TENSOR_VIEW (self));
  self->building = TRUE;
  gtk_spin_button_set_value (GTK_SPIN_BUTTON (self->row_spin), (double) row0);
  gtk_spin_button_set_value (GTK_SPIN_BUTTON (self->col_spin), (double) col0);
  self->building = FALSE;
  offsets_changed (NULL, self);
}

const tw_tensor_stats *
twb_tensor_view_get_stats (TwbTensorView *self)
{
  g_return_val_if_fail (TWB_IS_TENSOR_VIEW (self), NULL);
  return self->has_stats ? &self->stats : NULL;
}

const tw_tensor_stats *
twb_tensor_view_get_diff_stats (TwbTensorView *self)
{
  g_return_val_if_fail (TWB_IS_TENSOR_VIEW (self), NULL);
  return self->has_diff ? &self->diff_stats : NULL;
}

char *
twb_tensor_view_cell_text (TwbTensorView *self, int64_t row, int64_t col)
{
  g_return_val_if_fail (TWB_IS_TENSOR_VIEW (self), NULL);
  if (!cell_in_slice (self, row, col))
    return NULL;
  return twb_tensor_format_value (self->t->dtype, cell_value (self, row, col));
}

GtkWidget *
twb_tensor_view_get_stat_label (TwbTensorView *self, const char *stat)
{
  g_return_val_if_fail (TWB_IS_TENSOR_VIEW (self), NULL);
  return g_hash_table_lookup (self->stat_labels, stat);
}

const char *
twb_tensor_view_stat_text (TwbTensorView *self, const char *stat)
{
  GtkWidget *l = twb_tensor_view_get_stat_label (self, stat);
  return l ? gtk_label_get_text (GTK_LABEL (l)) : NULL;
}

const char *
twb_tensor_view_page_note (TwbTensorView *self, const char *page)
{
  g_return_val_if_fail (TWB_IS_TENSOR_VIEW (self), NULL);
  GtkWidget *msg = NULL, *note = NULL;
  if (g_str_equal (page, "values"))
    msg = self->values_msg, note = self->values_note;
  else if (g_str_equal (page, "heatmap"))
    msg = self->heat_msg;
  else if (g_str_equal (page, "images"))
    msg = self->images_msg, note = self->images_note;
  else if (g_str_equal (page, "diff"))
    msg = self->diff_msg, note = self->diff_headline;
  else
    g_return_val_if_reached (NULL);
  if (gtk_widget_get_visible (msg))
    return gtk_label_get_text (GTK_LABEL (msg));
  return note ? gtk_label_get_text (GTK_LABEL (note)) : "";
}

gboolean
twb_tensor_view_draw_page (TwbTensorView *self, const char *page, cairo_t *cr, int width,
                           int height)
{
  g_return_val_if_fail (TWB_IS_TENSOR_VIEW (self), FALSE);
  GtkWidget *w = GTK_WIDGET (self);
  if (g_str_equal (page, "histogram"))
    {
      if (!self->has_stats)
        return FALSE;
      twb_histogram_draw (w, &self->stats, cr, width, height);
      return TRUE;
    }
  if (g_str_equal (page, "heatmap") || g_str_equal (page, "diff"))
    {
      TwbHeatModel *hm = g_str_equal (page, "diff") ? &self->diff_heat : &self->heat;
      if (hm->slice == NULL)
        return FALSE;
      twb_heat_draw (w, hm, cr, width, height);
      return TRUE;
    }
  if (g_str_equal (page, "images"))
    {
      if (self->n_tiles == 0)
        return FALSE;
      draw_images (self, w, cr, width, height);
      return TRUE;
    }
  g_return_val_if_reached (FALSE);
}

char *
twb_tensor_view_readout_at (TwbTensorView *self, const char *page, double x, double y, int width,
                            int height)
{
  g_return_val_if_fail (TWB_IS_TENSOR_VIEW (self), NULL);
  if (self->t == NULL)
    return NULL;
  return heat_readout (self, g_str_equal (page, "diff") ? &self->diff_heat : &self->heat, x, y,
                       width, height);
}
