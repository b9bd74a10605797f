/* twb-graph-canvas-menu.c — the canvas context menu on nodes and edges: Delete,
 * Disconnect, Duplicate, Model Output, the debugger's breakpoint and freeze. */
#define G_LOG_DOMAIN "twb-graph-canvas"

#include "graph_editor/twb-graph-canvas-private.h"

#include <math.h>
#include <string.h>

/* ---- Context menu ------------------------------------------------------------- */

void
twb_canvas_update_menu_actions (TwbGraphCanvas *self)
{
  g_auto (GStrv) sel = twb_canvas_selection_ids (self);
  gboolean nodes = sel && sel[0];
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "canvas.delete", nodes || self->edge_to);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "canvas.disconnect", self->edge_to != NULL);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "canvas.duplicate", nodes);
}

void
twb_canvas_act_delete (GtkWidget *w, const char *name, GVariant *param)
{
  TwbGraphCanvas *self = TWB_GRAPH_CANVAS (w);
  if (self->edge_to)
    {
      twb_graph_canvas_delete_selected_edge (self);
      return;
    }
  g_auto (GStrv) sel = twb_canvas_selection_ids (self);
  g_autoptr (GError) error = NULL;
  if (sel && sel[0] && !twb_document_remove_nodes (self->doc, (const char *const *) sel, &error))
    twb_canvas_set_message (self, error->message);
}

void
twb_canvas_act_disconnect (GtkWidget *w, const char *name, GVariant *param)
{
  twb_graph_canvas_delete_selected_edge (TWB_GRAPH_CANVAS (w));
}

void
twb_canvas_act_duplicate (GtkWidget *w, const char *name, GVariant *param)
{
  TwbGraphCanvas *self = TWB_GRAPH_CANVAS (w);
  g_autoptr (GError) error = NULL;
  if (self->doc && !twb_document_duplicate_selection (self->doc, &error))
    twb_canvas_set_message (self, error->message);
}

gboolean
twb_graph_canvas_popup_menu_at (TwbGraphCanvas *self, double x, double y)
{
  g_return_val_if_fail (TWB_IS_GRAPH_CANVAS (self), FALSE);
  if (self->scene == NULL)
    return FALSE;
  double mx, my;
  twb_canvas_to_model (self, x, y, &mx, &my);
  int hit = twb_graph_scene_hit_node (self->scene, mx, my);
  int edge = hit < 0 ? twb_graph_scene_hit_edge (self->scene, mx, my,
                                                  EDGE_SLOP_PX / self->view.scale)
                     : -1;
  /* The menu acts on what is under the pointer: select it first (a node
   * already in a multiple selection keeps the selection). */
  if (hit >= 0 && !self->scene->nodes[hit].selected)
    {
      twb_graph_canvas_select_edge (self, NULL, 0);
      twb_canvas_select_scene_node (self, hit, FALSE);
    }
  else if (edge >= 0)
    {
      g_autofree char *to = g_strdup (self->scene->edges[edge].to_id);
      twb_graph_canvas_select_edge (self, to, self->scene->edges[edge].to_input);
    }
  else if (hit < 0)
    return FALSE;
  twb_canvas_update_menu_actions (self);
  if (self->menu == NULL)
    {
      g_autoptr (GMenu) model = g_menu_new ();
      g_menu_append (model, "_Delete", "canvas.delete");
      g_menu_append (model, "Dis_connect", "canvas.disconnect");
      g_menu_append (model, "D_uplicate", "canvas.duplicate");
      /* The window's stateful graph.output: a check on the selected node. */
      g_autoptr (GMenu) outputs = g_menu_new ();
      g_menu_append (outputs, "Model _Output", "graph.output");
      g_menu_append_section (model, NULL, G_MENU_MODEL (outputs));
      /* The window's debugger actions, on the selected node ('' = the selection). */
      g_autoptr (GMenu) debug = g_menu_new ();
      g_menu_append (debug, "Toggle _Breakpoint", "debugger.toggle-breakpoint('')");
      g_menu_append (debug, "_Freeze Parameters", "debugger.toggle-freeze('')");
      g_menu_append_section (model, NULL, G_MENU_MODEL (debug));
      self->menu = gtk_popover_menu_new_from_model (G_MENU_MODEL (model));
      gtk_widget_set_parent (self->menu, GTK_WIDGET (self));
      gtk_popover_set_has_arrow (GTK_POPOVER (self->menu), FALSE);
      gtk_widget_set_halign (self->menu, GTK_ALIGN_START);
    }
  gtk_popover_set_pointing_to (GTK_POPOVER (self->menu), &(GdkRectangle) { (int) x, (int) y, 1, 1 });
  gtk_popover_popup (GTK_POPOVER (self->menu));
  return TRUE;
}

GtkWidget *
twb_graph_canvas_get_context_menu (TwbGraphCanvas *self)
{
  return self->menu;
}

/* Menu key / Shift+F10: at the selected edge's middle or the focus node. */
gboolean
twb_canvas_popup_menu_key (TwbGraphCanvas *self)
{
  if (self->scene == NULL)
    return FALSE;
  double mx, my;
  int e = self->view.selected_edge, n = twb_graph_scene_find (self->scene, self->focus_id);
  if (self->edge_to && e >= 0)
    {
      const TwbSceneEdge *ed = &self->scene->edges[e];
      double x0, y0, x3, y3;
      twb_graph_scene_port_pos (self->scene, ed->from, TWB_PORT_OUTPUT, ed->from_port, &x0, &y0);
      twb_graph_scene_port_pos (self->scene, ed->to, TWB_PORT_INPUT, ed->to_port, &x3, &y3);
      if (twb_graph_scene_edge_route (self->scene, x0, y0, x3, y3, (double[6][2]) { { 0 } }) > 0)
        {
          /* A routed edge: its output end. */
          mx = x0 + 4;
          my = y0;
        }
      else
        {
          mx = (x0 + x3) / 2;
          my = (y0 + y3) / 2;
        }
    }
  else if (n >= 0)
    {
      mx = self->scene->nodes[n].x + self->scene->nodes[n].w / 2;
      my = self->scene->nodes[n].y + self->scene->nodes[n].h / 2;
    }
  else
    return FALSE;
  return twb_graph_canvas_popup_menu_at (self, mx * self->view.scale + self->view.tx,
                                         my * self->view.scale + self->view.ty);
}

void
twb_canvas_secondary_pressed (GtkGestureClick *g, int n_press, double x, double y, TwbGraphCanvas *self)
{
  gtk_widget_grab_focus (GTK_WIDGET (self));
  if (twb_graph_canvas_popup_menu_at (self, x, y))
    gtk_gesture_set_state (GTK_GESTURE (g), GTK_EVENT_SEQUENCE_CLAIMED);
}

