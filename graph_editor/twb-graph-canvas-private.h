/* twb-graph-canvas-private.h — what the canvas's files share: its
 * instance struct and the helpers the view (twb-graph-canvas-view.c) and
 * context-menu (twb-graph-canvas-menu.c) code call. */
#pragma once

#include "graph_editor/twb-graph-canvas.h"

G_BEGIN_DECLS

/* Zoom limits: 5 % shows 5,000 nodes at once; 400 % is enough to read port
 * types on a laptop screen. */
#define MIN_ZOOM 0.05
#define MAX_ZOOM 4.0
/* Port hit radius in device pixels (a finger-sized 10 px target either side). */
#define PORT_SLOP_PX 10.0
/* Edge hit tolerance either side of the drawn curve, device pixels. */
#define EDGE_SLOP_PX 6.0

typedef enum
{
  DRAG_NONE,
  DRAG_MOVE,
  DRAG_BAND,
  DRAG_CONNECT,
  DRAG_PAN,
  DRAG_DETACH,          /* an edge's end dragged off its input port */
} DragMode;

struct _TwbGraphCanvas
{
  GtkWidget parent_instance;

  TwbDocument *doc;
  gulong changed_id, selection_id;
  TwbGraphScene *scene;
  TwbRenderView view;
  gboolean snap;
  gboolean fit_pending;
  gboolean space_down;
  char *focus_id;
  char *message;
  /* The selected edge, as the document knows it (input port of a node);
   * NULL when none.  Selecting an edge clears the node selection. */
  char *edge_to;
  int edge_port;

  DragMode mode;
  double drag_x, drag_y;          /* start, widget coordinates */
  double moved_x, moved_y;        /* model delta applied so far */
  int anchor;                     /* node dragged */
  double anchor_x, anchor_y;      /* its position at the start */
  gboolean first_move;
  char *drag_block;               /* collapsed block being dragged, or NULL */
  int connect_node;
  TwbPortDirection connect_dir;
  int connect_port;
  double pan_tx, pan_ty;
  double zoom_start;
  char *detach_to;                /* DRAG_DETACH: the edge's input port */
  int detach_port;
  GtkWidget *menu;                /* the context menu (GtkPopoverMenu), created on first use */
  /* The pointer over the canvas (motion controller), widget coordinates:
   * Ctrl+wheel zooms about it. */
  gboolean pointer_in;
  double pointer_x, pointer_y;
  gboolean ctrl_down;             /* a Control key held (key controller) */
  gboolean show_minimap;
  /* The minimap's rectangle over the canvas, widget coordinates (0 x 0:
   * none); fit-to-window leaves it free. */
  graphene_rect_t minimap_rect;
  TwbRenderView fitted;           /* the view the last fit made, and the canvas size then */
  int fitted_w, fitted_h;
  int alloc_w, alloc_h;         /* the last allocation: a new size changes the visible area */
};

/* The hint on an empty canvas; the accelerators are the application's
 * (win.sequential: Ctrl+Shift+A). */
#define EMPTY_HINT \
  "Drag a layer from the palette (or select it and press Enter),\n" \
  "or press Ctrl+Shift+A to build a Sequential model"

/* twb-graph-canvas.c */
/* Whether model point (mx, my) is in the header margin of scene node i
 * (where a click toggles a breakpoint); never for blocks. */
gboolean twb_canvas_in_margin (TwbGraphCanvas *self, int i, double mx, double my);
void twb_canvas_to_model (TwbGraphCanvas *self, double wx, double wy, double *mx, double *my);
void twb_canvas_view_changed (TwbGraphCanvas *self);
void twb_canvas_set_message (TwbGraphCanvas *self, const char *text);
void twb_canvas_update_accessible (TwbGraphCanvas *self);
void twb_canvas_select_scene_node (TwbGraphCanvas *self, int i, gboolean extend);
char **twb_canvas_selection_ids (TwbGraphCanvas *self);

/* twb-graph-canvas-view.c */
void twb_canvas_zoom_about (TwbGraphCanvas *self, double new_scale, double wx, double wy);
/* The canvas as the layout sees it at w × h: its size and the minimap's
 * corner; the document is told it (layouts are made for it). */
void twb_canvas_layout_view (TwbGraphCanvas *self, int w, int h, tw_layout_view *lv);
void twb_canvas_tell_view (TwbGraphCanvas *self);
/* Open or close block `name` (a double-click, the frame's button), keeping
 * its corner where it was on screen. */
void twb_canvas_toggle_block (TwbGraphCanvas *self, const char *name, gboolean open);
void twb_canvas_fit_in (TwbGraphCanvas *self, int w, int h);
void twb_canvas_refit_if_fitted (TwbGraphCanvas *self);

/* twb-graph-canvas-menu.c */
void twb_canvas_update_menu_actions (TwbGraphCanvas *self);
void twb_canvas_act_delete (GtkWidget *w, const char *name, GVariant *param);
void twb_canvas_act_disconnect (GtkWidget *w, const char *name, GVariant *param);
void twb_canvas_act_duplicate (GtkWidget *w, const char *name, GVariant *param);
gboolean twb_canvas_popup_menu_key (TwbGraphCanvas *self);
void twb_canvas_secondary_pressed (GtkGestureClick *g, int n_press, double x, double y,
                                   TwbGraphCanvas *self);

G_END_DECLS
