/* recorder.h — records what the engine's event bus publishes into a trace.
 * GTK-free.
 *
 * Each op event (forward, backward, update, kernel, copy, collective, data)
 * becomes a slice on the lane of the thread that published it, with
 * arguments phase, nodes (a comma list), fused, flops, bytes and shapes;
 * an eager backward op gets a flow ("kernel") to each kernel slice inside
 * it.  Training steps become slices "step N" on a lane "steps" (tid 0),
 * each gradient becoming final an instant.
 *
 * Collectives and messages (TW_EV_COLLECTIVE with ev->coll,
 * engine/comm/comm.h) become slices on the process's lane
 * "communication" (tid TW_RECORDER_COMM_TID, kind TW_LANE_STREAM),
 * whichever thread waited for them, from the communication thread's start
 * to its end, category "collective", named "allreduce bucket 3", "send to
 * 1", "recv from 0 (activations)".  Arguments: kind, seq (the same on
 * every rank for one collective; 0 for messages), msg_seq (send and recv
 * only: shared by a send and its receive), peer, bytes, sent, received,
 * algo, what, params (a comma list cut after 512 bytes with "…
 * (N more)"), busbw_gbps (GB/s: bytes × 2(p−1)/p / duration for an
 * all-reduce over p ranks, the bus bandwidth NCCL's tests report; bytes /
 * duration for the others; absent for a zero duration), queued_us (from
 * the caller's post to the start; absent when the post was not timed) and
 * rank.  Counters: "loss" and
 * "samples/s" (the first forward op's batch over the step's time) at each
 * step end, "tensor memory" (live tensor storage, engine/tensor.h) after
 * each op that changed it and at each step end, "arena in use" (the
 * compiled programs' arenas) at each step end in compiled mode.  Only end
 * events are used: they carry both times.
 *
 * Events go to a per-thread buffer (no lock on the hot path); the buffers
 * are merged into one trace when recording stops.  Memory is bounded: past
 * max_events events in memory further ones are counted as dropped (the
 * trace's metadata "dropped_events" says how many).
 *
 *   g_autoptr (tw_recorder) rec = tw_recorder_new (0);       // default cap
 *   tw_recorder_start (rec, bus);            // subscribes; not while the bus publishes
 *   ... train ...
 *   tw_recorder_stop (rec);
 *   g_autoptr (tw_trace) trace = tw_recorder_take_trace (rec);
 *
 * A running session (the GUI's Record button) is recorded the same way
 * with tw_recorder_start_session (rec, session) at any time: the trace then
 * holds whole steps only, from the first one that begins after the session
 * took the subscription to the last one that ended before it let it go.
 *
 * Long runs stream to disk instead, in bounded memory:
 *
 *   tw_recorder_stream_to (rec, "run.json.gz", &error);     // before start
 *   tw_recorder_start (rec, bus);
 *   ... train for hours ...
 *   tw_recorder_stop (rec);
 *   tw_recorder_finish_stream (rec, &error);                // renames the file into place
 *
 * At a step end (on the thread that trains) a buffer holding
 * TW_RECORDER_STREAM_HANDOFF records or more is handed to a writer thread,
 * which converts and appends them to the file's temporary
 * (NAME.tmp-PID-XXXXXX beside it, profiler/chrome.h) and syncs it; a
 * writer more than 3 handoffs behind holds the training thread at the
 * next step end.  A crashed run leaves that temporary: an unterminated
 * trace that the importer opens with every handed-off step.
 */
#pragma once

#include "engine/events.h"
#include "engine/session.h"
#include "profiler/trace.h"

G_BEGIN_DECLS

/* The tid of the "communication" lane: no thread has it (Linux tids stay
 * below PID_MAX_LIMIT, 2^22), and it fits in 32 bits for viewers that
 * read tids as such. */
#define TW_RECORDER_COMM_TID G_GINT64_CONSTANT (0x7ffffff0)

/* Default cap: 4 Mi events, about 200 MB of buffers at the worst. */
#define TW_RECORDER_DEFAULT_MAX_EVENTS ((guint64) 4 << 20)
/* Records a stream's buffer holds before it is handed off at a step end:
 * 64 Ki, 2.5 MiB of records (some 10 MB of JSON). */
#define TW_RECORDER_STREAM_HANDOFF (64u << 10)

typedef struct tw_recorder tw_recorder;

/* max_events 0: TW_RECORDER_DEFAULT_MAX_EVENTS.  Free with tw_recorder_free. */
tw_recorder *tw_recorder_new (guint64 max_events);
void tw_recorder_free (tw_recorder *r);      /* NULL-safe; stops first */

/* Subscribes to every kind on bus (holds a reference until stop).  Under
 * the bus's rule: not while an executor publishes on it.  Call it on the
 * thread that trains where you can: that thread's buffer is made here
 * instead of inside the first op recorded. */
void tw_recorder_start (tw_recorder *r, tw_bus *bus);
/* Records a session's events from its next iteration on: any time, from
 * any thread but the session's worker, whatever the session's state
 * (through tw_session_subscribe; the callbacks run on the worker).  The
 * session must outlive the recording: stop (or free the recorder) before
 * freeing it. */
void tw_recorder_start_session (tw_recorder *r, tw_session *s);
/* Ends the recording.  When it returns the recorder's callback runs no
 * more, so tw_recorder_take_trace is safe: for a session this waits until
 * the worker let go of the client — at once when the session is paused,
 * idle or over, at the worker's next op when it runs.  Not from inside a
 * callback. */
void tw_recorder_stop (tw_recorder *r);
gboolean tw_recorder_is_recording (const tw_recorder *r);

/* A slice on the "steps" lane (an epoch, a phase of the caller's own):
 * any thread, while recording or not. */
void tw_recorder_mark (tw_recorder *r, const char *name, const char *category, gint64 start_ns,
                       gint64 end_ns);

/* A counter sample of the caller's own: any thread. */
void tw_recorder_counter (tw_recorder *r, const char *name, gint64 t_ns, double value);
/* Metadata for the trace ("model", "mode"; copied; a key set again is
 * replaced), after the recorder's own "machine", "recorded_events",
 * "dropped_events".  Any time before the take or the finish. */
void tw_recorder_set_meta (tw_recorder *r, const char *key, const char *value);
/* The process's name in the trace (default: the program's name).  Set it
 * before a stream starts: each part written names it. */
void tw_recorder_set_process_name (tw_recorder *r, const char *name);

guint64 tw_recorder_n_events (const tw_recorder *r);
guint64 tw_recorder_n_dropped (const tw_recorder *r);

/* Merges what was recorded so far into a new sorted trace (the caller
 * frees it) with metadata "machine", "dropped_events", "recorded_events";
 * the recorder starts empty again.  Call after stop; not when streaming. */
tw_trace *tw_recorder_take_trace (tw_recorder *r);

/* Streams the next recording to path (Chrome trace JSON; gzip when it
 * ends in .gz).  Before start.  FALSE with an error naming the file when
 * it cannot be created.  While streaming the event cap counts only the
 * events not yet written. */
gboolean tw_recorder_stream_to (tw_recorder *r, const char *path, GError **error);
/* After stop: writes what is left and the metadata and renames the file
 * into place; the recorder is empty and streams no more (either way).  A
 * write that failed on the way fails here, naming the file (nothing is
 * left behind). */
gboolean tw_recorder_finish_stream (tw_recorder *r, GError **error);
/* The records a buffer holds before a handoff (0: the default); tests
 * make it small.  Before start. */
void tw_recorder_set_stream_handoff (tw_recorder *r, guint records);
/* The stream's temporary file while it streams (lives in r), else NULL. */
const char *tw_recorder_stream_temp_path (const tw_recorder *r);
/* The most records the stream held in memory at once, as seen at
 * handoffs: the training thread's buffer plus what waits to be written. */
guint64 tw_recorder_peak_buffered (tw_recorder *r);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_recorder, tw_recorder_free)

G_END_DECLS
