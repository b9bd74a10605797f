/* workspace-private.h — for executors: entering a kernel's run. */
#pragma once

#include "engine/op.h"

G_BEGIN_DECLS

/* Make ctx's workspace (or the thread's own) the one tw_scratch uses on
 * this thread, emptied; returns the previous one for tw_workspace_leave. */
tw_workspace *tw_workspace_enter (const tw_kctx *ctx);
void tw_workspace_leave (tw_workspace *prev);
void tw_workspace_reset (tw_workspace *ws);
/* Aborts when memory runs out (scratch bounded by the kernel's own tensors);
 * _try_ returns NULL instead, also for a host block of
 * TW_TENSOR_CHECKED_BYTES or more that exceeds tw_memory_available (). */
void *tw_workspace_take (tw_workspace *ws, size_t nbytes);
void *tw_workspace_try_take (tw_workspace *ws, size_t nbytes);

G_END_DECLS
