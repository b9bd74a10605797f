/* device-impl.h — what a device implementation provides (private to
 * engine/cpu/cpu_device.c and, later, engine/cuda/).  Shared code uses
 * engine/device.h only. */
#pragma once

#include "engine/device.h"

G_BEGIN_DECLS

typedef enum
{
  TW_COPY_H2D,
  TW_COPY_D2H,
  TW_COPY_D2D,
} tw_copy_kind;

typedef struct
{
  void *(*alloc) (const tw_device *dev, size_t nbytes);
  void (*free) (const tw_device *dev, void *ptr, size_t nbytes);
  void (*memset) (const tw_device *dev, void *ptr, int value, size_t nbytes, tw_stream *s);
  void (*copy) (const tw_device *dev, void *dst, const void *src, size_t nbytes,
                tw_copy_kind kind, tw_stream *s);
  void (*sync) (const tw_device *dev);
  /* Streams and events: the implementation fills handle. */
  gboolean (*stream_init) (tw_stream *s);
  void (*stream_clear) (tw_stream *s);
  void (*stream_sync) (tw_stream *s);
  gboolean (*event_init) (tw_device_event *ev);
  void (*event_clear) (tw_device_event *ev);
  void (*event_record) (tw_device_event *ev, tw_stream *s);
  void (*event_wait) (tw_stream *s, tw_device_event *ev);
  void (*event_sync) (tw_device_event *ev);
  void (*set_num_threads) (const tw_device *dev, int n);
  int (*get_num_threads) (const tw_device *dev);
} tw_device_iface;

struct tw_device
{
  const char *name;
  tw_device_kind kind;
  int index;                    /* cuda:N */
  gboolean host_memory;
  const tw_device_iface *iface;
  gpointer context;             /* the implementation's */
};

struct tw_stream
{
  const tw_device *device;
  gpointer handle;
};

struct tw_device_event
{
  const tw_device *device;
  gpointer handle;
};

G_END_DECLS
