/* twb-picture.h — write a cairo drawing to a file: PNG, SVG or PDF by the
 * name's extension, atomically (the engine's tw_save), with the size
 * checked.  Every export of the app (the drawing, charts, the confusion
 * matrix, the memory plan) goes through it.
 *
 *   static void draw (cairo_t *cr, double w, double h, gpointer data) { ... }
 *   twb_picture_save ("loss.svg", 800, 400, 1, TWB_PICTURE_PNG | TWB_PICTURE_SVG,
 *                     draw, plot, &error);
 *
 * width × height are in drawing units; a PNG has png_scale pixels per unit
 * (2 for crisp text when zoomed in a viewer).
 */
#pragma once

#include <cairo.h>
#include <glib.h>

G_BEGIN_DECLS

typedef enum
{
  TWB_PICTURE_PNG = 1 << 0,
  TWB_PICTURE_SVG = 1 << 1,
  TWB_PICTURE_PDF = 1 << 2,
} TwbPictureFormats;

typedef void (*TwbPictureDraw) (cairo_t *cr, double width, double height, gpointer data);

/* FALSE with an error naming path: a format not among formats (the message
 * lists those that are), a size outside 1 to 16,384 pixels a side, or a
 * write that failed (nothing is left at path then). */
gboolean twb_picture_save (const char *path, double width, double height, double png_scale,
                           TwbPictureFormats formats, TwbPictureDraw draw, gpointer data,
                           GError **error);

G_END_DECLS
