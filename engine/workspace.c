/* workspace.c — kernels' scratch memory (tw_scratch in op.h).
 *
 * A bump allocator over one block; what does not fit goes into overflow
 * blocks, and the next reset replaces everything by one block as large as
 * the most any single kernel run took, so that a program's steps after the
 * first allocate nothing. */
#define G_LOG_DOMAIN "twb-workspace"

#include "engine/device.h"
#include "engine/memory.h"
#include "engine/op.h"
#include "engine/workspace-private.h"

#define ALIGN 64

struct tw_workspace
{
  const tw_device *dev;
  guint8 *base;
  size_t size, used;
  size_t high;               /* most used in one kernel run */
  GArray *extra;             /* overflow blocks: { ptr, size } */
  guint growths;
};

typedef struct
{
  void *ptr;
  size_t size;
} block;

static __thread tw_workspace *current;

static void
fallback_free (gpointer p)
{
  tw_workspace_free (p);
}

static GPrivate fallback_key = G_PRIVATE_INIT (fallback_free);

tw_workspace *
tw_workspace_new (const tw_device *dev)
{
  tw_workspace *ws = g_new0 (tw_workspace, 1);
  ws->dev = dev ? dev : tw_device_cpu ();
  ws->extra = g_array_new (FALSE, FALSE, sizeof (block));
  return ws;
}

void
tw_workspace_free (tw_workspace *ws)
{
  if (ws == NULL)
    return;
  for (guint i = 0; i < ws->extra->len; i++)
    {
      block *b = &g_array_index (ws->extra, block, i);
      tw_device_free (ws->dev, b->ptr, b->size);
    }
  g_array_unref (ws->extra);
  tw_device_free (ws->dev, ws->base, ws->size);
  g_free (ws);
}

size_t
tw_workspace_size (const tw_workspace *ws)
{
  return ws->size;
}

guint
tw_workspace_growths (const tw_workspace *ws)
{
  return ws->growths;
}

void
tw_workspace_reset (tw_workspace *ws)
{
  if (ws->extra->len > 0)
    {
      for (guint i = 0; i < ws->extra->len; i++)
        {
          block *b = &g_array_index (ws->extra, block, i);
          tw_device_free (ws->dev, b->ptr, b->size);
        }
      g_array_set_size (ws->extra, 0);
      tw_device_free (ws->dev, ws->base, ws->size);
      ws->size = (ws->high + 4095) / 4096 * 4096;
      ws->base = tw_device_alloc (ws->dev, ws->size);
      if (ws->base == NULL)
        ws->size = 0;
      ws->growths++;
    }
  ws->used = 0;
}

void *
tw_workspace_try_take (tw_workspace *ws, size_t nbytes)
{
  if (nbytes > G_MAXSIZE - ALIGN || ws->used > G_MAXSIZE - nbytes - ALIGN)
    return NULL;
  size_t n = (MAX (nbytes, 1) + ALIGN - 1) / ALIGN * ALIGN;
  if (ws->base && ws->used + n <= ws->size)
    {
      void *p = ws->base + ws->used;
      ws->used += n;
      ws->high = MAX (ws->high, ws->used);
      return p;
    }
  /* Overflow: a block of its own until the next reset merges them.  Large
   * ones are checked first: Linux overcommits (engine/memory.h). */
  if (n >= TW_TENSOR_CHECKED_BYTES && tw_device_is_host (ws->dev)
      && n > tw_memory_available ())
    return NULL;
  block b = { tw_device_alloc (ws->dev, n), n };
  if (b.ptr == NULL)
    return NULL;
  g_array_append_val (ws->extra, b);
  ws->used += n;
  ws->high = MAX (ws->high, ws->used);
  return b.ptr;
}

void *
tw_workspace_take (tw_workspace *ws, size_t nbytes)
{
  void *p = tw_workspace_try_take (ws, nbytes);
  if (p == NULL)
    g_error ("out of memory allocating %zu bytes of kernel scratch", nbytes);
  return p;
}

tw_workspace *
tw_workspace_enter (const tw_kctx *ctx)
{
  tw_workspace *prev = current;
  tw_workspace *ws = ctx ? ctx->ws : NULL;
  if (ws == NULL)
    {
      ws = g_private_get (&fallback_key);
      if (ws == NULL)
        {
          ws = tw_workspace_new (NULL);
          g_private_set (&fallback_key, ws);
        }
    }
  tw_workspace_reset (ws);
  current = ws;
  return prev;
}

void
tw_workspace_leave (tw_workspace *prev)
{
  current = prev;
}

static tw_workspace *
scratch_workspace (const tw_kctx *ctx)
{
  tw_workspace *ws = ctx && ctx->ws ? ctx->ws : current;
  if (ws == NULL)
    {
      /* A kernel called outside tw_op_forward (a test calling it directly):
       * the thread's own workspace, never reset while nobody enters it. */
      tw_workspace_leave (tw_workspace_enter (NULL));
      ws = g_private_get (&fallback_key);
    }
  return ws;
}

void *
tw_scratch (const tw_kctx *ctx, size_t nbytes)
{
  return tw_workspace_take (scratch_workspace (ctx), nbytes);
}

void *
tw_scratch_try (const tw_kctx *ctx, size_t nbytes)
{
  return tw_workspace_try_take (scratch_workspace (ctx), nbytes);
}
