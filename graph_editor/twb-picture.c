/* twb-picture.c — a cairo drawing to PNG, SVG or PDF, atomically. */
#define G_LOG_DOMAIN "twb-picture"

#include "graph_editor/twb-picture.h"
#include "engine/fileutil.h"

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <gio/gio.h>
#include <math.h>

/* Cairo's image surfaces stop at 32,767 pixels a side; 16,384 leaves room
 * and is more than any screen or page needs. */
#define MAX_SIDE 16384

gboolean
twb_picture_save (const char *path, double width, double height, double png_scale,
                  TwbPictureFormats formats, TwbPictureDraw draw, gpointer data, GError **error)
{
  g_autofree char *lower = g_ascii_strdown (path, -1);
  TwbPictureFormats fmt = g_str_has_suffix (lower, ".png")   ? TWB_PICTURE_PNG
                          : g_str_has_suffix (lower, ".svg") ? TWB_PICTURE_SVG
                          : g_str_has_suffix (lower, ".pdf") ? TWB_PICTURE_PDF
                                                             : 0;
  if (!(fmt & formats))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "%s: unknown picture format (use %s%s%s)", path,
                   formats & TWB_PICTURE_PNG ? ".png" : "",
                   formats & TWB_PICTURE_SVG ? (formats & TWB_PICTURE_PDF ? ", .svg" : " or .svg") : "",
                   formats & TWB_PICTURE_PDF ? " or .pdf" : "");
      return FALSE;
    }
  double scale = fmt == TWB_PICTURE_PNG ? png_scale : 1;
  int pw = (int) ceil (width * scale), ph = (int) ceil (height * scale);
  if (!(width > 0 && height > 0) || pw > MAX_SIDE || ph > MAX_SIDE)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "%s: a picture of %.0f × %.0f pixels cannot be made (1 to 16,384 a side)",
                   path, width * scale, height * scale);
      return FALSE;
    }
  /* Through the engine's atomic save: cairo writes the temporary by name. */
  g_autoptr (tw_save) save = tw_save_begin (path, error);
  if (save == NULL)
    return FALSE;
  const char *tmp = tw_save_temp_path (save);
  cairo_surface_t *surf = fmt == TWB_PICTURE_PNG ? cairo_image_surface_create (CAIRO_FORMAT_ARGB32, pw, ph)
                          : fmt == TWB_PICTURE_SVG ? cairo_svg_surface_create (tmp, width, height)
                                                   : cairo_pdf_surface_create (tmp, width, height);
  cairo_t *cr = cairo_create (surf);
  cairo_scale (cr, scale, scale);
  draw (cr, width, height, data);
  cairo_status_t st = cairo_status (cr);
  cairo_destroy (cr);
  if (st == CAIRO_STATUS_SUCCESS && fmt == TWB_PICTURE_PNG)
    st = cairo_surface_write_to_png (surf, tmp);
  cairo_surface_finish (surf);
  if (st == CAIRO_STATUS_SUCCESS)
    st = cairo_surface_status (surf);
  cairo_surface_destroy (surf);
  if (st != CAIRO_STATUS_SUCCESS)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s: cannot write: %s", path,
                   cairo_status_to_string (st));
      return FALSE;
    }
  return tw_save_commit (g_steal_pointer (&save), error);
}
