/* device.c — the device-independent half of engine/device.h: lookup by
 * name and calls through each device's table. */
#define G_LOG_DOMAIN "twb-device"

#include "engine/device-impl.h"

#include <string.h>

G_DEFINE_QUARK (tw-device-error-quark, tw_device_error)

const tw_device *const *
tw_device_list (void)
{
  /* A CUDA build adds its devices here (engine/cuda/). */
  static const tw_device *list[2];
  if (list[0] == NULL)
    list[0] = tw_device_cpu ();
  return list;
}

const tw_device *
tw_device_find (const char *name, GError **error)
{
  const tw_device *const *l = tw_device_list ();
  for (int i = 0; l[i]; i++)
    if (g_strcmp0 (l[i]->name, name) == 0
        || (g_strcmp0 (name, "cuda") == 0 && l[i]->kind == TW_DEVICE_CUDA && l[i]->index == 0))
      return l[i];
  GString *have = g_string_new (NULL);
  for (int i = 0; l[i]; i++)
    g_string_append_printf (have, "%s%s", i ? ", " : "", l[i]->name);
  g_set_error (error, TW_DEVICE_ERROR, TW_DEVICE_ERROR_NOT_FOUND,
               g_str_has_prefix (name ? name : "", "cuda")
                 ? "no device '%s': this build has no CUDA support or this machine no GPU "
                   "(devices: %s)"
                 : "no device '%s' (devices: %s)",
               name ? name : "(null)", have->str);
  g_string_free (have, TRUE);
  return NULL;
}

const char *
tw_device_name (const tw_device *dev)
{
  return dev->name;
}

tw_device_kind
tw_device_get_kind (const tw_device *dev)
{
  return dev->kind;
}

gboolean
tw_device_is_host (const tw_device *dev)
{
  return dev->host_memory;
}

void *
tw_device_alloc (const tw_device *dev, size_t nbytes)
{
  return dev->iface->alloc (dev, nbytes);
}

void
tw_device_free (const tw_device *dev, void *ptr, size_t nbytes)
{
  if (ptr)
    dev->iface->free (dev, ptr, nbytes);
}

void
tw_device_memset (const tw_device *dev, void *ptr, int value, size_t nbytes, tw_stream *stream)
{
  dev->iface->memset (dev, ptr, value, nbytes, stream);
}

void
tw_device_copy_h2d (const tw_device *dev, void *dst, const void *src, size_t nbytes,
                    tw_stream *stream)
{
  dev->iface->copy (dev, dst, src, nbytes, TW_COPY_H2D, stream);
}

void
tw_device_copy_d2h (const tw_device *dev, void *dst, const void *src, size_t nbytes,
                    tw_stream *stream)
{
  dev->iface->copy (dev, dst, src, nbytes, TW_COPY_D2H, stream);
}

void
tw_device_copy_d2d (const tw_device *dev, void *dst, const void *src, size_t nbytes,
                    tw_stream *stream)
{
  dev->iface->copy (dev, dst, src, nbytes, TW_COPY_D2D, stream);
}

void
tw_device_sync (const tw_device *dev)
{
  dev->iface->sync (dev);
}

tw_stream *
tw_stream_new (const tw_device *dev)
{
  tw_stream *s = g_new0 (tw_stream, 1);
  s->device = dev;
  if (!dev->iface->stream_init (s))
    {
      g_free (s);
      return NULL;
    }
  return s;
}

void
tw_stream_free (tw_stream *s)
{
  if (s == NULL)
    return;
  s->device->iface->stream_clear (s);
  g_free (s);
}

void
tw_stream_sync (tw_stream *s)
{
  s->device->iface->stream_sync (s);
}

const tw_device *
tw_stream_device (const tw_stream *s)
{
  return s->device;
}

tw_device_event *
tw_device_event_new (const tw_device *dev)
{
  tw_device_event *ev = g_new0 (tw_device_event, 1);
  ev->device = dev;
  if (!dev->iface->event_init (ev))
    {
      g_free (ev);
      return NULL;
    }
  return ev;
}

void
tw_device_event_free (tw_device_event *ev)
{
  if (ev == NULL)
    return;
  ev->device->iface->event_clear (ev);
  g_free (ev);
}

void
tw_device_event_record (tw_device_event *ev, tw_stream *s)
{
  ev->device->iface->event_record (ev, s);
}

void
tw_device_event_wait (tw_stream *s, tw_device_event *ev)
{
  s->device->iface->event_wait (s, ev);
}

void
tw_device_event_sync (tw_device_event *ev)
{
  ev->device->iface->event_sync (ev);
}

void
tw_device_set_num_threads (const tw_device *dev, int n)
{
  dev->iface->set_num_threads (dev, n);
}

int
tw_device_get_num_threads (const tw_device *dev)
{
  return dev->iface->get_num_threads (dev);
}
