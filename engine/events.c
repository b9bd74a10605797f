/* events.c — the event bus (events.h). */
#define G_LOG_DOMAIN "twb-events"

#include "engine/events.h"

#include <string.h>
#include <time.h>

typedef struct
{
  guint id;
  guint mask;
  tw_event_fn fn;
  gpointer user_data;
  GDestroyNotify destroy;
} client;

static const char *const kind_names[TW_EV_N_KINDS] = {
  "iteration", "data", "forward", "backward", "update", "kernel", "copy", "collective",
  "grad_ready",
};

char *
tw_value_name (const char *op, const char *const *in_names, int n_in, int output, int n_out,
               int serial)
{
  /* An instruction's label less its note: "linear_grad_input (gemm)". */
  const char *note = op ? strstr (op, " (") : NULL;
  GString *s = g_string_new (NULL);
  g_string_append_len (s, op ? op : "?", note ? note - op : -1);
  g_autofree char *head = g_strdup (s->str);
  g_string_append_c (s, '(');
  for (int k = 0; k < n_in; k++)
    g_string_append_printf (s, "%s%s", k ? ", " : "", in_names && in_names[k] ? in_names[k] : "?");
  g_string_append_c (s, ')');
  if (n_out > 1)
    g_string_append_printf (s, ":%d", output);
  if (s->len > TW_VALUE_NAME_MAX)
    {
      g_string_printf (s, "%s(…)", head);
      if (n_out > 1)
        g_string_append_printf (s, ":%d", output);
      g_string_append_printf (s, "#%d", serial);
    }
  return g_string_free (s, FALSE);
}

const char *
tw_event_kind_name (tw_event_kind kind)
{
  return kind < TW_EV_N_KINDS ? kind_names[kind] : "?";
}

gint64
tw_now_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (gint64) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

tw_bus *
tw_bus_new (void)
{
  tw_bus *bus = g_new0 (tw_bus, 1);
  bus->refcount = 1;
  bus->clients = g_array_new (FALSE, FALSE, sizeof (client));
  bus->next_id = 1;
  return bus;
}

tw_bus *
tw_bus_ref (tw_bus *bus)
{
  g_atomic_int_inc (&bus->refcount);
  return bus;
}

void
tw_bus_unref (tw_bus *bus)
{
  if (bus == NULL || !g_atomic_int_dec_and_test (&bus->refcount))
    return;
  for (guint i = 0; i < bus->clients->len; i++)
    {
      client *c = &g_array_index (bus->clients, client, i);
      if (c->destroy)
        c->destroy (c->user_data);
    }
  g_array_unref (bus->clients);
  g_free (bus);
}

static void
update_mask (tw_bus *bus)
{
  guint m = 0;
  for (guint i = 0; i < bus->clients->len; i++)
    m |= g_array_index (bus->clients, client, i).mask;
  bus->mask = m;
}

guint
tw_bus_reserve_id (tw_bus *bus)
{
  return (guint) g_atomic_int_add (&bus->next_id, 1);
}

void
tw_bus_subscribe_id (tw_bus *bus, guint id, guint mask, tw_event_fn fn, gpointer user_data,
                     GDestroyNotify destroy)
{
  client c = { id, mask & (TW_EV_MASK_ALL | TW_EV_INPUTS_AT_END), fn, user_data, destroy };
  g_array_append_val (bus->clients, c);
  update_mask (bus);
}

guint
tw_bus_subscribe (tw_bus *bus, guint mask, tw_event_fn fn, gpointer user_data,
                  GDestroyNotify destroy)
{
  g_return_val_if_fail (bus != NULL && fn != NULL, 0);
  guint id = tw_bus_reserve_id (bus);
  tw_bus_subscribe_id (bus, id, mask, fn, user_data, destroy);
  return id;
}

void
tw_bus_unsubscribe (tw_bus *bus, guint id)
{
  for (guint i = 0; i < bus->clients->len; i++)
    {
      client c = g_array_index (bus->clients, client, i);
      if (c.id != id)
        continue;
      g_array_remove_index (bus->clients, i);
      update_mask (bus);
      if (c.destroy)
        c.destroy (c.user_data);
      return;
    }
}

void
tw_bus_set_mask (tw_bus *bus, guint id, guint mask)
{
  for (guint i = 0; i < bus->clients->len; i++)
    if (g_array_index (bus->clients, client, i).id == id)
      g_array_index (bus->clients, client, i).mask = mask & (TW_EV_MASK_ALL | TW_EV_INPUTS_AT_END);
  update_mask (bus);
}

gboolean
tw_bus_publish (tw_bus *bus, const tw_event *ev)
{
  gboolean go_on = TRUE;
  guint bit = TW_EV_BIT (ev->kind);
  for (guint i = 0; i < bus->clients->len; i++)
    {
      client *c = &g_array_index (bus->clients, client, i);
      if ((c->mask & bit) && !c->fn (ev, c->user_data))
        go_on = FALSE;
    }
  return go_on;
}
