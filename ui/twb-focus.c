/* twb-focus.c — see twb-focus.h. */
#define G_LOG_DOMAIN "twb-focus"

#include "ui/twb-focus.h"

#define FOCUS_KEY "twb-focus-key"

void
twb_focus_set_key (GtkWidget *w, const char *key)
{
  g_return_if_fail (GTK_IS_WIDGET (w));
  g_object_set_data_full (G_OBJECT (w), FOCUS_KEY, g_strdup (key), g_free);
}

static GtkWidget *
focus_of (GtkWidget *w)
{
  GtkRoot *root = gtk_widget_get_root (w);
  return root ? gtk_root_get_focus (root) : NULL;
}

gboolean
twb_focus_is_within (GtkWidget *w)
{
  g_return_val_if_fail (GTK_IS_WIDGET (w), FALSE);
  GtkWidget *f = focus_of (w);
  return f && (f == w || gtk_widget_is_ancestor (f, w));
}

/* Off the widget: the root keeps no focus widget (keys go to the window,
 * whose shortcuts work from there) until the caller gives it back. */
static void
move_focus_off (GtkWidget *w)
{
  gtk_root_set_focus (gtk_widget_get_root (w), NULL);
}

/* The idle that holds the last reference: its destroy notify drops it. */
static gboolean
let_go (gpointer data)
{
  return G_SOURCE_REMOVE;
}

char *
twb_focus_save (GtkWidget *old)
{
  g_return_val_if_fail (GTK_IS_WIDGET (old), NULL);
  if (!twb_focus_is_within (old))
    return NULL;
  const char *key = NULL;
  for (GtkWidget *w = focus_of (old); w && key == NULL;
       w = w == old ? NULL : gtk_widget_get_parent (w))
    key = g_object_get_data (G_OBJECT (w), FOCUS_KEY);
  char *copy = g_strdup (key ? key : "");
  move_focus_off (old);
  /* The event that led here may still be on its way through `old`'s
   * widgets: they are let go once it is over. */
  g_idle_add_full (G_PRIORITY_DEFAULT, let_go, g_object_ref (old), g_object_unref);
  return copy;
}

static GtkWidget *
find_key (GtkWidget *w, const char *key)
{
  if (g_strcmp0 (g_object_get_data (G_OBJECT (w), FOCUS_KEY), key) == 0)
    return w;
  for (GtkWidget *c = gtk_widget_get_first_child (w); c; c = gtk_widget_get_next_sibling (c))
    {
      GtkWidget *hit = find_key (c, key);
      if (hit)
        return hit;
    }
  return NULL;
}

gboolean
twb_focus_restore (GtkWidget *root, const char *key)
{
  g_return_val_if_fail (GTK_IS_WIDGET (root), FALSE);
  if (key == NULL || key[0] == '\0')
    return FALSE;
  GtkWidget *w = find_key (root, key);
  if (w == NULL || !gtk_widget_is_sensitive (w) || !gtk_widget_get_visible (w)
      || !gtk_widget_grab_focus (w))
    return FALSE;
  if (GTK_IS_EDITABLE (w))
    gtk_editable_set_position (GTK_EDITABLE (w), -1);
  return TRUE;
}

#define RETURN_KEY "twb-focus-return"

void
twb_widget_set_sensitive (GtkWidget *w, gboolean sensitive)
{
  g_return_if_fail (GTK_IS_WIDGET (w));
  if (!sensitive && gtk_widget_get_sensitive (w) && twb_focus_is_within (w))
    {
      /* Remembered: the field gets the focus back when it is editable again
       * and nothing else took it meanwhile (F11 pressed in it: a step). */
      g_object_set_data_full (G_OBJECT (w), RETURN_KEY, g_object_ref (focus_of (w)),
                              g_object_unref);
      move_focus_off (w);
    }
  gtk_widget_set_sensitive (w, sensitive);
  GtkWidget *back = sensitive ? g_object_get_data (G_OBJECT (w), RETURN_KEY) : NULL;
  if (back)
    {
      GtkRoot *root = gtk_widget_get_root (w);
      if (root && gtk_root_get_focus (root) == NULL && gtk_widget_is_ancestor (back, w))
        gtk_widget_grab_focus (back);
      g_object_set_data (G_OBJECT (w), RETURN_KEY, NULL);
    }
}
