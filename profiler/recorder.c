/* recorder.c — the event bus → trace recorder (recorder.h). */
#define G_LOG_DOMAIN "tw-profiler"
#define _GNU_SOURCE             /* pthread_getname_np */

#include "profiler/recorder.h"
#include "engine/comm/comm.h"
#include "engine/compile/compiled.h"
#include "profiler/chrome.h"
#include "engine/eager.h"
#include "engine/tensor.h"

#include <math.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The tid of the "steps" lane: no thread has it on Linux (0 is never a tid). */
#define STEPS_TID 0

enum
{
  REC_SLICE,
  REC_STEP,
  REC_INSTANT,
  REC_COUNTER,
  REC_MARK,
  REC_COLL,                     /* t0, t1: started, ended; u.coll; followed by a REC_COLL_SEQ */
  REC_COLL_SEQ,                 /* t0: posted; t1: seq; u.step: msg_seq (not counted an event) */
};

/* The recorder's own counters (names of REC_COUNTER records). */
static const char COUNTER_LOSS[] = "loss";
static const char COUNTER_RATE[] = "samples/s";
static const char COUNTER_TENSORS[] = "tensor memory";
static const char COUNTER_ARENA[] = "arena in use";

/* What an op's events share, taken on its first event (and again when its
 * shapes' batch dimension changes).  The hot path only copies numbers and
 * pointers; the text of names and arguments is made once per entry when
 * the buffers are merged. */
typedef struct ident_cache ident_cache;
struct ident_cache
{
  ident_cache *next;            /* another variant under the same key (other shapes) */
  const char *label;            /* the ident's, to catch a reused address */
  const void *nodes_key;        /* the ident's nodes (a kernel's ident is a copy on the stack) */
  int kind;
  gint64 in0, out0;             /* dimension 0 of the first input / output, -1 if none */
  gboolean has_ident;
  const char *label_copy;       /* in the buffer's strings */
  const char *nodes;            /* comma list, in the buffer's strings */
  const char *param;            /* UPDATE: the parameter's name, in the buffer's strings */
  int phase;
  gboolean fused;
  double flops, bytes;
  int n_in, n_out;
  gint64 *dims;                 /* per tensor: ndim (-1: none) then the dims */
  guint n_dims;
  /* At merge, by the one thread that converts (the caller of
   * tw_recorder_take_trace, or the stream's writer); the entry is never
   * changed otherwise once made: */
  const char *t_name, *t_cat;
  const tw_trace_arg *t_args;
  guint t_n_args;
};

/* What a collective's events share across steps (kind, peer, sizes, the
 * bucket and its parameters), taken once per distinct one: a record
 * carries only the times and sequence numbers that change. */
typedef struct
{
  tw_coll_kind kind;
  tw_algo algo;
  int rank, size, peer;
  gint64 bytes, sent, received;
  const char *what;             /* in the buffer's strings, or NULL */
  const char *params;           /* comma list (truncated), in the buffer's strings, or NULL */
} coll_cache;

typedef struct
{
  gint64 t0, t1;
  union
  {
    const ident_cache *op;      /* REC_SLICE */
    const coll_cache *coll;     /* REC_COLL */
    const char *name;           /* REC_INSTANT: the parameter, in the buffer's strings; REC_MARK */
    guint64 step;               /* REC_STEP */
    double value;               /* REC_COUNTER */
  } u;
  const char *category;         /* REC_MARK; REC_COUNTER: its name */
  int type;
} record;

/* Records are kept in blocks that never move: no large copy while the
 * buffer grows mid-step.  8192 records (320 KiB) a block. */
#define RECORD_BLOCK 8192

typedef struct
{
  gint64 tid;
  char *thread_name;
  GStringChunk *strings;
  GHashTable *interned;
  GPtrArray *blocks;            /* record[RECORD_BLOCK] */
  guint fill;                   /* in the last block */
  GHashTable *cache;            /* ident or param → ident_cache (variants chained) */
  GHashTable *colls;            /* key text → coll_cache */
  /* Training thread state: */
  gboolean in_step;
  gint64 step_batch;            /* dimension 0 of the step's first forward input, -1 */
  guint64 last_tensor_bytes, last_arena_bytes;
} buffer;

/* What a subscription's user_data points to: it can outlive the recorder
 * (a session that ends before it takes a queued subscription frees the
 * command, and runs its destroy, only when the session is freed).  One
 * reference is the recorder's, one the subscription's (dropped by its
 * destroy, which also says the callback will never run again). */
typedef struct
{
  gatomicrefcount ref;
  GMutex lock;
  GCond cond;
  gboolean gone;                /* the destroy ran */
  tw_recorder *r;
} rec_link;

struct tw_recorder
{
  guint64 generation;           /* unique per recorder: tells threads' buffers apart */
  guint64 max_events;
  gssize n_events;              /* atomic, at most max_events */
  gssize n_dropped;             /* atomic */
  tw_bus *bus;                  /* tw_recorder_start */
  tw_session *session;          /* tw_recorder_start_session */
  guint sub;
  rec_link *link;               /* of the current subscription */
  /* Session recordings keep whole steps: nothing before the first
   * iteration begins, nothing after the last one ends.  Both written on
   * the training thread only, read after it let go of the recorder. */
  gboolean wait_step;
  gint64 last_step_end;
  gboolean whole_steps;         /* a session recording: trim what follows the last step */
  GMutex lock;                  /* buffers, marks, meta, process_name */
  GPtrArray *buffers;
  GArray *marks;                /* record: REC_MARK (name and category g_strdup'ed) or REC_COUNTER
                                 * from tw_recorder_counter (the name g_strdup'ed in category) */
  GPtrArray *meta;              /* key, value, key, value... (g_strdup'ed) */
  char *process_name;
  guint64 next_flow;            /* the converter's */

  /* Streaming (tw_recorder_stream_to).  The training thread hands its
   * buffer's records off at a step end once they are handoff or more; the
   * writer thread converts and writes them. */
  tw_chrome_writer *writer;
  GThread *writer_thread;
  GAsyncQueue *chunks;          /* chunk*; one with b NULL ends the thread */
  tw_trace *pool;               /* names and arguments of the stream's slices (writer thread) */
  guint handoff;
  gssize n_written;             /* atomic: events written (off the cap) */
  GMutex stream_lock;
  GCond stream_cond;
  guint64 queued;               /* records handed off, not yet written */
  guint64 peak_buffered;
  GError *stream_error;         /* the writer's first failure */
};

/* Records of one buffer handed to the writer. */
typedef struct
{
  buffer *b;
  GPtrArray *blocks;
  guint n;
  gint64 trim_after;            /* records starting later are left out */
} chunk;

/* A thread's buffers for the last few recorders it recorded for (a
 * thread may feed several at once: bench/profile-overhead has two). */
#define SLOT_WAYS 4

typedef struct
{
  guint64 generation[SLOT_WAYS];
  buffer *buf[SLOT_WAYS];
  guint next;                   /* the way replaced next */
} thread_slot;

static GPrivate slot_key = G_PRIVATE_INIT (g_free);
static guint64 next_generation = 1;     /* under generation_lock */
static GMutex generation_lock;

static void
cache_free (gpointer p)
{
  for (ident_cache *c = p, *next; c; c = next)
    {
      next = c->next;
      g_free (c->dims);
      g_free (c);
    }
}

static void
buffer_free (gpointer p)
{
  buffer *b = p;
  g_free (b->thread_name);
  g_string_chunk_free (b->strings);
  g_hash_table_unref (b->interned);
  g_ptr_array_unref (b->blocks);
  g_hash_table_unref (b->cache);
  g_hash_table_unref (b->colls);
  g_free (b);
}

static const char *
buf_intern (buffer *b, const char *s)
{
  if (s == NULL)
    return NULL;
  const char *found = g_hash_table_lookup (b->interned, s);
  if (found)
    return found;
  char *copy = g_string_chunk_insert (b->strings, s);
  g_hash_table_add (b->interned, copy);
  return copy;
}

static record *
buf_push (buffer *b)
{
  if (b->fill == RECORD_BLOCK)
    {
      g_ptr_array_add (b->blocks, g_new (record, RECORD_BLOCK));
      b->fill = 0;
    }
  record *block = g_ptr_array_index (b->blocks, b->blocks->len - 1);
  return &block[b->fill++];
}

static guint
buf_n_records (const buffer *b)
{
  return b->blocks->len ? (b->blocks->len - 1) * RECORD_BLOCK + b->fill : 0;
}

static const record *
block_record (GPtrArray *blocks, guint i)
{
  return &((const record *) g_ptr_array_index (blocks, i / RECORD_BLOCK))[i % RECORD_BLOCK];
}

static buffer *
thread_buffer (tw_recorder *r)
{
  thread_slot *slot = g_private_get (&slot_key);
  for (guint w = 0; slot && w < SLOT_WAYS; w++)
    if (slot->generation[w] == r->generation)
      return slot->buf[w];
  if (slot == NULL)
    {
      slot = g_new0 (thread_slot, 1);
      g_private_set (&slot_key, slot);
    }
  /* Not in the slot: the buffer made for this thread before, if any (its
   * way was taken by other recorders since), else a new one.  (A thread
   * that ended may have left its tid to a new one: then they share a
   * buffer, one after the other.) */
  gint64 tid = (gint64) syscall (SYS_gettid);
  buffer *b = NULL;
  g_mutex_lock (&r->lock);
  for (guint i = 0; i < r->buffers->len && b == NULL; i++)
    if (((buffer *) g_ptr_array_index (r->buffers, i))->tid == tid)
      b = g_ptr_array_index (r->buffers, i);
  g_mutex_unlock (&r->lock);
  if (b == NULL)
    {
      b = g_new0 (buffer, 1);
      b->tid = tid;
      char name[64] = "";
      if (pthread_getname_np (pthread_self (), name, sizeof name) != 0 || name[0] == '\0')
        g_snprintf (name, sizeof name, "thread %" G_GINT64_FORMAT, b->tid);
      b->thread_name = g_strdup (name);
      b->strings = g_string_chunk_new (16 * 1024);
      b->interned = g_hash_table_new (g_str_hash, g_str_equal);
      b->blocks = g_ptr_array_new_with_free_func (g_free);
      b->fill = RECORD_BLOCK;
      b->cache = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, cache_free);
      b->colls = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
      b->step_batch = -1;
      g_mutex_lock (&r->lock);
      g_ptr_array_add (r->buffers, b);
      g_mutex_unlock (&r->lock);
    }
  guint w = slot->next++ % SLOT_WAYS;
  slot->generation[w] = r->generation;
  slot->buf[w] = b;
  return b;
}

static const char *
phase_name (int phase)
{
  switch (phase)
    {
    case TW_PHASE_FORWARD: return "forward";
    case TW_PHASE_BACKWARD: return "backward";
    case TW_PHASE_UPDATE: return "update";
    default: return "unknown";
    }
}

static gint64
dim0 (tw_tensor *const *ts, int n)
{
  return n > 0 && ts[0] && ts[0]->ndim > 0 ? ts[0]->shape[0] : -1;
}

static void
copy_dims (ident_cache *c, tw_tensor *const *ts, int n, guint *k)
{
  for (int i = 0; i < n; i++)
    {
      c->dims[(*k)++] = ts[i] ? ts[i]->ndim : -1;
      for (int d = 0; ts[i] && d < ts[i]->ndim; d++)
        c->dims[(*k)++] = ts[i]->shape[d];
    }
}

static const ident_cache *
op_cache (buffer *b, const tw_event *ev)
{
  const tw_op_ident *id = ev->ident;
  /* A kernel's ident is a copy made on the stack for each kernel: its
   * label (the kernel's op) and nodes (its parent's) tell them apart. */
  gpointer key = ev->kind == TW_EV_UPDATE && ev->param ? (gpointer) ev->param
                 : ev->kind == TW_EV_KERNEL && id ? (gpointer) id->label
                 : id ? (gpointer) id : GINT_TO_POINTER (0x10 + ev->kind);
  const void *nodes_key = id ? (const void *) id->nodes : NULL;
  gint64 in0 = dim0 (ev->inputs, ev->n_inputs), out0 = dim0 (ev->outputs, ev->n_outputs);
  ident_cache *head = g_hash_table_lookup (b->cache, key);
  for (ident_cache *c = head; c; c = c->next)
    if (c->label == (id ? id->label : NULL) && c->nodes_key == nodes_key && c->kind == (int) ev->kind
        && c->in0 == in0 && c->out0 == out0 && c->n_in == ev->n_inputs && c->n_out == ev->n_outputs)
      return c;
  /* A new variant (a reused address, other shapes): entries are never
   * changed once made, so that the stream's writer may read them. */
  ident_cache *c = g_new0 (ident_cache, 1);
  c->next = head;
  g_hash_table_steal (b->cache, key);
  g_hash_table_insert (b->cache, key, c);
  c->label = id ? id->label : NULL;
  c->nodes_key = nodes_key;
  c->kind = ev->kind;
  c->in0 = in0;
  c->out0 = out0;
  c->has_ident = id != NULL;
  c->label_copy = buf_intern (b, id && id->label ? id->label : tw_event_kind_name (ev->kind));
  if (id)
    {
      g_autofree char *nodes = id->nodes ? g_strjoinv (",", (char **) id->nodes) : g_strdup ("");
      c->nodes = buf_intern (b, nodes);
      c->phase = id->phase;
      c->fused = id->fused;
      c->flops = id->flops;
      c->bytes = id->bytes;
    }
  c->param = ev->kind == TW_EV_UPDATE && ev->param ? buf_intern (b, ev->param->name) : NULL;
  c->n_in = ev->n_inputs;
  c->n_out = ev->n_outputs;
  c->dims = g_new (gint64, (ev->n_inputs + ev->n_outputs) * (TW_MAX_DIMS + 1) + 1);
  guint k = 0;
  copy_dims (c, ev->inputs, ev->n_inputs, &k);
  copy_dims (c, ev->outputs, ev->n_outputs, &k);
  c->n_dims = k;
  return c;
}

static void
push_counter (buffer *b, const char *name, gint64 t, double value)
{
  record *c = buf_push (b);
  c->type = REC_COUNTER;
  c->t0 = c->t1 = t;
  c->category = name;
  c->u.value = value;
}

/* Tensor storage (engine/tensor.h) after an op, when it changed: one
 * relaxed atomic read. */
static void
sample_memory (buffer *b, gint64 t)
{
  guint64 bytes = tw_tensor_storage_bytes ();
  if (bytes != b->last_tensor_bytes)
    {
      b->last_tensor_bytes = bytes;
      push_counter (b, COUNTER_TENSORS, t, (double) bytes);
    }
}

static void hand_off (tw_recorder *r, buffer *b);

/* A collective's parameter list is cut past this many bytes (a bucket of
 * a large model carries hundreds of names): the slice says how many more. */
#define PARAMS_MAX_BYTES 512

static char *
params_text (char **params)
{
  if (params == NULL || params[0] == NULL)
    return NULL;
  GString *s = g_string_new (NULL);
  guint i = 0;
  for (; params[i]; i++)
    {
      if (s->len && s->len + strlen (params[i]) + 1 > PARAMS_MAX_BYTES)
        break;
      if (s->len)
        g_string_append_c (s, ',');
      g_string_append (s, params[i]);
    }
  guint more = g_strv_length (params) - i;
  if (more)
    g_string_append_printf (s, ",\u2026 (%u more)", more);
  return g_string_free (s, FALSE);
}

/* The cache entry of a collective's constant part (made once per distinct
 * one: a bucket's all-reduce each step finds its entry).  The key holds
 * every number, the tag's what and its parameters' count and first name:
 * enough to tell a model's buckets apart without joining every name on
 * the hot path. */
static const coll_cache *
coll_of (buffer *b, const tw_coll_info *ci)
{
  guint n_params = ci->params ? g_strv_length (ci->params) : 0;
  g_autofree char *key = g_strdup_printf ("%d %d %d %d %d %" G_GINT64_FORMAT " %" G_GINT64_FORMAT
                                          " %" G_GINT64_FORMAT " %u %s\x1f%s", ci->kind, ci->algo,
                                          ci->rank, ci->size, ci->peer, ci->bytes, ci->sent,
                                          ci->received, n_params, ci->what ? ci->what : "",
                                          n_params ? ci->params[0] : "");
  coll_cache *c = g_hash_table_lookup (b->colls, key);
  if (c)
    return c;
  c = g_new0 (coll_cache, 1);
  c->kind = ci->kind;
  c->algo = ci->algo;
  c->rank = ci->rank;
  c->size = ci->size;
  c->peer = ci->peer;
  c->bytes = ci->bytes;
  c->sent = ci->sent;
  c->received = ci->received;
  c->what = buf_intern (b, ci->what);
  g_autofree char *params = params_text (ci->params);
  c->params = buf_intern (b, params);
  g_hash_table_insert (b->colls, g_steal_pointer (&key), c);
  return c;
}

static void
push_op (buffer *b, record *rec, const tw_event *ev)
{
  const ident_cache *c = op_cache (b, ev);
  rec->type = REC_SLICE;
  rec->u.op = c;
  /* The samples of the step: the first input of its first forward op. */
  if (ev->kind == TW_EV_FORWARD && b->in_step && b->step_batch < 0)
    b->step_batch = c->in0;
  if (ev->kind != TW_EV_KERNEL)
    sample_memory (b, ev->t_end);
}

static gboolean
on_event (const tw_event *ev, gpointer user)
{
  tw_recorder *r = ((rec_link *) user)->r;
  if (G_UNLIKELY (r->wait_step))
    {
      if (ev->kind != TW_EV_ITERATION || ev->end)
        return TRUE;
      r->wait_step = FALSE;
    }
  if (!ev->end && ev->kind != TW_EV_GRAD_READY)
    {
      if (ev->kind == TW_EV_ITERATION)
        {
          buffer *b = thread_buffer (r);
          b->in_step = TRUE;
          b->step_batch = -1;
        }
      return TRUE;
    }
  /* Count the event against the cap (events in memory: those written by
   * a stream are off it), or as dropped: a compare-and-swap, so the count
   * never passes the cap whatever the threads do. */
  gssize n;
  do
    {
      n = (gssize) g_atomic_pointer_get ((gssize *) &r->n_events);
      if ((guint64) (n - (gssize) g_atomic_pointer_get ((gssize *) &r->n_written)) >= r->max_events)
        {
          g_atomic_pointer_add (&r->n_dropped, 1);
          return TRUE;
        }
    }
  while (!__atomic_compare_exchange_n (&r->n_events, &n, n + 1, TRUE, __ATOMIC_RELAXED,
                                       __ATOMIC_RELAXED));
  buffer *b = thread_buffer (r);
  record *rec = buf_push (b);
  rec->t0 = ev->t_start;
  rec->t1 = ev->kind == TW_EV_GRAD_READY ? ev->t_start : ev->t_end;
  switch (ev->kind)
    {
    case TW_EV_ITERATION:
      rec->type = REC_STEP;
      rec->u.step = ev->step;
      r->last_step_end = ev->t_end;
      /* The step's counters: records more, not counted against the cap
       * (they belong to the step's). */
      if (isfinite (ev->loss))
        push_counter (b, COUNTER_LOSS, ev->t_end, ev->loss);
      if (b->in_step && b->step_batch > 0 && ev->t_end > ev->t_start)
        push_counter (b, COUNTER_RATE, ev->t_end,
                      (double) b->step_batch * 1e9 / (double) (ev->t_end - ev->t_start));
      b->in_step = FALSE;
      push_counter (b, COUNTER_TENSORS, ev->t_end, (double) tw_tensor_storage_bytes ());
      {
        guint64 arena = tw_compiled_arena_bytes ();
        if (arena || b->last_arena_bytes)
          push_counter (b, COUNTER_ARENA, ev->t_end, (double) arena);
        b->last_arena_bytes = arena;
      }
      if (r->writer && buf_n_records (b) >= r->handoff)
        hand_off (r, b);
      break;
    case TW_EV_COLLECTIVE:
      if (ev->coll)
        {
          rec->type = REC_COLL;
          rec->t0 = ev->coll->t_start;
          rec->t1 = ev->coll->t_end;
          rec->u.coll = coll_of (b, ev->coll);
          record *more = buf_push (b);
          more->type = REC_COLL_SEQ;
          more->t0 = ev->coll->t_post;
          more->t1 = (gint64) ev->coll->seq;
          more->u.step = ev->coll->msg_seq;
        }
      else                      /* a publisher without the details: an op slice */
        push_op (b, rec, ev);
      break;
    case TW_EV_GRAD_READY:
      rec->type = REC_INSTANT;
      rec->u.name = buf_intern (b, ev->param ? ev->param->name : "");
      break;
    default:
      push_op (b, rec, ev);
      break;
    }
  return TRUE;
}

/* The name and arguments of an op's slices, made once per cache entry. */
static void
cache_to_trace (ident_cache *c, tw_trace *t)
{
  if (c->t_name)
    return;
  g_autoptr (GString) name = g_string_new (c->label_copy);
  if (c->param)
    g_string_append_printf (name, " (%s)", c->param);
  else if (c->nodes && c->nodes[0])
    g_string_append_printf (name, " (%s)", c->nodes);
  c->t_name = tw_trace_intern (t, name->str);
  c->t_cat = tw_trace_intern (t, tw_event_kind_name (c->kind));
  tw_trace_arg args[7];
  guint n = 0;
  char flops[G_ASCII_DTOSTR_BUF_SIZE], bytes[G_ASCII_DTOSTR_BUF_SIZE];
  if (c->has_ident)
    {
      args[n++] = (tw_trace_arg) { "phase", phase_name (c->phase) };
      args[n++] = (tw_trace_arg) { "nodes", c->nodes };
      args[n++] = (tw_trace_arg) { "fused", c->fused ? "true" : "false" };
      args[n++] = (tw_trace_arg) { "flops", g_ascii_formatd (flops, sizeof flops, "%.17g", c->flops) };
      args[n++] = (tw_trace_arg) { "bytes", g_ascii_formatd (bytes, sizeof bytes, "%.17g", c->bytes) };
    }
  if (c->param)
    args[n++] = (tw_trace_arg) { "param", c->param };
  g_autoptr (GString) shapes = g_string_new (NULL);
  if (c->n_in + c->n_out > 0)
    {
      guint k = 0;
      for (int i = 0; i < c->n_in + c->n_out; i++)
        {
          if (i == c->n_in)
            g_string_append (shapes, " -> ");
          else if (i)
            g_string_append_c (shapes, ',');
          gint64 nd = c->dims[k++];
          if (nd < 0)
            {
              g_string_append_c (shapes, '-');
              continue;
            }
          g_string_append_c (shapes, '[');
          for (gint64 d = 0; d < nd; d++)
            g_string_append_printf (shapes, "%s%" G_GINT64_FORMAT, d ? "x" : "", c->dims[k++]);
          g_string_append_c (shapes, ']');
        }
      if (c->n_out == 0)
        g_string_append (shapes, " ->");
      args[n++] = (tw_trace_arg) { "shapes", shapes->str };
    }
  c->t_args = tw_trace_intern_args (t, args, n);
  c->t_n_args = n;
}

tw_recorder *
tw_recorder_new (guint64 max_events)
{
  tw_recorder *r = g_new0 (tw_recorder, 1);
  g_mutex_lock (&generation_lock);
  r->generation = next_generation++;
  g_mutex_unlock (&generation_lock);
  r->max_events = MIN (max_events ? max_events : TW_RECORDER_DEFAULT_MAX_EVENTS, (guint64) G_MAXSSIZE);
  g_mutex_init (&r->lock);
  r->buffers = g_ptr_array_new_with_free_func (buffer_free);
  r->marks = g_array_new (FALSE, FALSE, sizeof (record));
  r->meta = g_ptr_array_new_with_free_func (g_free);
  r->handoff = TW_RECORDER_STREAM_HANDOFF;
  g_mutex_init (&r->stream_lock);
  g_cond_init (&r->stream_cond);
  return r;
}

static void
free_marks (GArray *marks)
{
  for (guint i = 0; i < marks->len; i++)
    {
      record *m = &g_array_index (marks, record, i);
      if (m->type == REC_MARK)
        g_free ((char *) m->u.name);
      g_free ((char *) m->category);
    }
  g_array_set_size (marks, 0);
}

static void stream_abort (tw_recorder *r);

void
tw_recorder_free (tw_recorder *r)
{
  if (r == NULL)
    return;
  tw_recorder_stop (r);
  stream_abort (r);
  free_marks (r->marks);
  g_array_unref (r->marks);
  g_ptr_array_unref (r->buffers);
  g_ptr_array_unref (r->meta);
  g_free (r->process_name);
  g_mutex_clear (&r->lock);
  g_mutex_clear (&r->stream_lock);
  g_cond_clear (&r->stream_cond);
  g_free (r);
}

static rec_link *
link_new (tw_recorder *r)
{
  rec_link *l = g_new0 (rec_link, 1);
  g_atomic_ref_count_init (&l->ref);
  g_atomic_ref_count_inc (&l->ref);       /* the subscription's */
  g_mutex_init (&l->lock);
  g_cond_init (&l->cond);
  l->r = r;
  return l;
}

static void
link_unref (rec_link *l)
{
  if (l == NULL || !g_atomic_ref_count_dec (&l->ref))
    return;
  g_mutex_clear (&l->lock);
  g_cond_clear (&l->cond);
  g_free (l);
}

/* The subscription's destroy: on the thread that removed it. */
static void
link_gone (gpointer p)
{
  rec_link *l = p;
  g_mutex_lock (&l->lock);
  l->gone = TRUE;
  g_cond_broadcast (&l->cond);
  g_mutex_unlock (&l->lock);
  link_unref (l);
}

static gboolean
link_is_gone (rec_link *l)
{
  g_mutex_lock (&l->lock);
  gboolean gone = l->gone;
  g_mutex_unlock (&l->lock);
  return gone;
}

void
tw_recorder_start (tw_recorder *r, tw_bus *bus)
{
  g_return_if_fail (!tw_recorder_is_recording (r) && bus != NULL);
  r->bus = tw_bus_ref (bus);
  r->wait_step = FALSE;
  r->link = link_new (r);
  r->sub = tw_bus_subscribe (bus, TW_EV_MASK_ALL, on_event, r->link, link_gone);
  /* The calling thread usually trains: its buffer is made now rather than
   * inside the first op it records. */
  buffer *b = thread_buffer (r);
  if (b->fill == RECORD_BLOCK)
    {
      g_ptr_array_add (b->blocks, g_new (record, RECORD_BLOCK));
      b->fill = 0;
    }
}

void
tw_recorder_start_session (tw_recorder *r, tw_session *s)
{
  g_return_if_fail (!tw_recorder_is_recording (r) && s != NULL);
  r->session = s;
  /* Written before the session sees the subscription (its command queue
   * orders it before the worker's first callback). */
  r->wait_step = TRUE;
  r->last_step_end = G_MININT64;
  r->whole_steps = TRUE;
  r->link = link_new (r);
  r->sub = tw_session_subscribe (s, TW_EV_MASK_ALL, on_event, r->link, link_gone);
}

/* How often a stop waiting for a session's worker looks whether the
 * session ended meanwhile (then it takes no more commands). */
#define STOP_POLL_US (20 * 1000)

/* Unsubscribes from the session and waits until the callback can no
 * longer run.  A session that is not running takes the command at once:
 * before its first command and after its end the session removes the
 * client itself; a paused worker takes it while it waits; a running one at
 * its next op or iteration boundary.  A session that ends with the command
 * still queued never takes it: seen here as the terminal state, and then
 * unsubscribing again removes the client directly (or finds it was never
 * added: the queued subscription's destroy runs when the session is freed,
 * which the link outlives). */
static void
stop_session (tw_recorder *r)
{
  rec_link *l = r->link;
  if (!link_is_gone (l))
    tw_session_unsubscribe (r->session, r->sub);
  g_mutex_lock (&l->lock);
  while (!l->gone)
    {
      if (g_cond_wait_until (&l->cond, &l->lock, g_get_monotonic_time () + STOP_POLL_US))
        continue;
      g_mutex_unlock (&l->lock);
      tw_session_state st = tw_session_get_state (r->session);
      gboolean ended = st == TW_SESSION_FINISHED || st == TW_SESSION_STOPPED
                       || st == TW_SESSION_FAILED;
      if (ended)
        tw_session_unsubscribe (r->session, r->sub);
      g_mutex_lock (&l->lock);
      if (ended)
        break;
    }
  g_mutex_unlock (&l->lock);
}

void
tw_recorder_stop (tw_recorder *r)
{
  if (r->bus)
    {
      tw_bus_unsubscribe (r->bus, r->sub);
      g_clear_pointer (&r->bus, tw_bus_unref);
    }
  else if (r->session)
    {
      stop_session (r);
      r->session = NULL;
    }
  else
    return;
  g_clear_pointer (&r->link, link_unref);
  r->sub = 0;
}

gboolean
tw_recorder_is_recording (const tw_recorder *r)
{
  return r->bus != NULL || r->session != NULL;
}

void
tw_recorder_mark (tw_recorder *r, const char *name, const char *category, gint64 start_ns,
                  gint64 end_ns)
{
  record m = { .type = REC_MARK, .u.name = g_strdup (name), .category = g_strdup (category ? category : ""),
               .t0 = start_ns, .t1 = end_ns };
  g_mutex_lock (&r->lock);
  g_array_append_val (r->marks, m);
  g_mutex_unlock (&r->lock);
}

void
tw_recorder_counter (tw_recorder *r, const char *name, gint64 t_ns, double value)
{
  record c = { .type = REC_COUNTER, .u.value = value, .category = g_strdup (name), .t0 = t_ns,
               .t1 = t_ns };
  g_mutex_lock (&r->lock);
  g_array_append_val (r->marks, c);
  g_mutex_unlock (&r->lock);
}

void
tw_recorder_set_meta (tw_recorder *r, const char *key, const char *value)
{
  g_mutex_lock (&r->lock);
  guint i = 0;
  while (i < r->meta->len && strcmp (g_ptr_array_index (r->meta, i), key) != 0)
    i += 2;
  if (i == r->meta->len)
    {
      g_ptr_array_add (r->meta, g_strdup (key));
      g_ptr_array_add (r->meta, g_strdup (value));
    }
  else
    {
      g_free (g_ptr_array_index (r->meta, i + 1));
      g_ptr_array_index (r->meta, i + 1) = g_strdup (value);
    }
  g_mutex_unlock (&r->lock);
}

void
tw_recorder_set_process_name (tw_recorder *r, const char *name)
{
  g_mutex_lock (&r->lock);
  g_free (r->process_name);
  r->process_name = g_strdup (name);
  g_mutex_unlock (&r->lock);
}

guint64
tw_recorder_n_events (const tw_recorder *r)
{
  return (guint64) g_atomic_pointer_get ((gssize *) &r->n_events);
}

guint64
tw_recorder_n_dropped (const tw_recorder *r)
{
  return (guint64) g_atomic_pointer_get ((gssize *) &r->n_dropped);
}

/* ---- records to a trace: shared by tw_recorder_take_trace and the stream ---- */

typedef struct
{
  tw_trace *out;                /* the events go here */
  tw_trace *pool;               /* names and arguments are interned here (out, or the stream's) */
  int pid;
  guint steps;                  /* out's "steps" lane */
  int comm;                     /* out's "communication" lane, -1 until a collective needs it */
  guint64 *next_flow;
} converter;

static void
converter_init (converter *cx, tw_recorder *r, tw_trace *out, tw_trace *pool)
{
  cx->out = out;
  cx->pool = pool;
  cx->pid = (int) getpid ();
  cx->next_flow = &r->next_flow;
  g_mutex_lock (&r->lock);
  const char *process = r->process_name ? r->process_name
                        : g_get_prgname () ? g_get_prgname () : "twb";
  tw_trace_add_process (out, cx->pid, process);
  g_mutex_unlock (&r->lock);
  cx->steps = tw_trace_add_lane (out, cx->pid, STEPS_TID, "steps", TW_LANE_THREAD);
  cx->comm = -1;
}

/* A collective's slice on the process's "communication" lane: rec is its
 * REC_COLL, seq the REC_COLL_SEQ after it. */
static void
convert_coll (converter *cx, const record *rec, const record *seq)
{
  if (cx->comm < 0)
    cx->comm = (int) tw_trace_add_lane (cx->out, cx->pid, TW_RECORDER_COMM_TID, "communication",
                                        TW_LANE_STREAM);
  const coll_cache *c = rec->u.coll;
  gboolean p2p = c->kind == TW_COLL_SEND || c->kind == TW_COLL_RECV;
  g_autoptr (GString) name = g_string_new (tw_coll_kind_name (c->kind));
  if (p2p)
    g_string_append_printf (name, " %s %d", c->kind == TW_COLL_SEND ? "to" : "from", c->peer);
  if (c->what && c->what[0])
    g_string_append_printf (name, p2p ? " (%s)" : " %s", c->what);
  gint64 dur = rec->t1 - rec->t0;
  char seqs[24], msg[24], peer[16], bytes[24], sent[24], recvd[24], rank[16], queued[32], bw[32];
  g_snprintf (seqs, sizeof seqs, "%" G_GINT64_FORMAT, seq->t1);
  g_snprintf (msg, sizeof msg, "%" G_GUINT64_FORMAT, seq->u.step);
  g_snprintf (peer, sizeof peer, "%d", c->peer);
  g_snprintf (bytes, sizeof bytes, "%" G_GINT64_FORMAT, c->bytes);
  g_snprintf (sent, sizeof sent, "%" G_GINT64_FORMAT, c->sent);
  g_snprintf (recvd, sizeof recvd, "%" G_GINT64_FORMAT, c->received);
  g_snprintf (rank, sizeof rank, "%d", c->rank);
  /* A publisher that did not time the post (0) gets no queueing. */
  gboolean posted = seq->t0 > 0 && seq->t0 <= rec->t0;
  g_ascii_formatd (queued, sizeof queued, "%.3f", posted ? (rec->t0 - seq->t0) / 1e3 : 0.0);
  tw_trace_arg args[14];
  guint n = 0;
  args[n++] = (tw_trace_arg) { "kind", tw_coll_kind_name (c->kind) };
  args[n++] = (tw_trace_arg) { "seq", seqs };
  if (p2p)
    args[n++] = (tw_trace_arg) { "msg_seq", msg };
  args[n++] = (tw_trace_arg) { "peer", peer };
  args[n++] = (tw_trace_arg) { "bytes", bytes };
  args[n++] = (tw_trace_arg) { "sent", sent };
  args[n++] = (tw_trace_arg) { "received", recvd };
  args[n++] = (tw_trace_arg) { "algo", tw_algo_name (c->algo) };
  if (c->what)
    args[n++] = (tw_trace_arg) { "what", c->what };
  if (c->params)
    args[n++] = (tw_trace_arg) { "params", c->params };
  if (dur > 0)
    {
      double factor = c->kind == TW_COLL_ALLREDUCE && c->size > 0
                      ? 2.0 * (c->size - 1) / c->size : 1.0;
      /* bytes per ns is GB/s. */
      args[n++] = (tw_trace_arg) { "busbw_gbps",
                                   g_ascii_formatd (bw, sizeof bw, "%.3f", c->bytes * factor / dur) };
    }
  if (posted)
    args[n++] = (tw_trace_arg) { "queued_us", queued };
  args[n++] = (tw_trace_arg) { "rank", rank };
  tw_trace_add_slice (cx->out, (guint) cx->comm, rec->t0, dur, name->str,
                      tw_trace_intern (cx->pool, "collective"), args, n);
}

typedef struct
{
  gint64 t0, t1;
} span;

/* n records of b (in blocks) onto b's lane of cx->out; those starting after
 * trim_after are left out.  Each op slice gets a flow to every kernel slice
 * inside it (the kernels end, and are recorded, before their op).  Returns
 * the events converted (as the cap counts them). */
static guint
convert_records (converter *cx, buffer *b, GPtrArray *blocks, guint n, gint64 trim_after)
{
  tw_trace *t = cx->out;
  guint lane = tw_trace_add_lane (t, cx->pid, b->tid, b->thread_name, TW_LANE_THREAD);
  const char *step_cat = tw_trace_intern (cx->pool, "step");
  const char *grad_cat = tw_trace_intern (cx->pool, "grad_ready");
  g_autoptr (GArray) kernels = g_array_new (FALSE, FALSE, sizeof (span));
  guint events = 0;
  for (guint k = 0; k < n; k++)
    {
      const record *rec = block_record (blocks, k);
      events += rec->type != REC_COUNTER && rec->type != REC_COLL_SEQ;
      if (rec->t0 > trim_after)
        continue;               /* the part of a step the recording stopped in */
      switch (rec->type)
        {
        case REC_COLL:
          /* Its REC_COLL_SEQ follows it in the same chunk (handoffs happen
           * at step ends, between events). */
          if (k + 1 < n)
            convert_coll (cx, rec, block_record (blocks, k + 1));
          break;
        case REC_COLL_SEQ:
          break;
        case REC_SLICE:
          {
            ident_cache *c = (ident_cache *) rec->u.op;
            cache_to_trace (c, cx->pool);
            tw_trace_add_slice_interned (t, lane, rec->t0, rec->t1 - rec->t0, c->t_name, c->t_cat,
                                         c->t_args, c->t_n_args);
            if (c->kind == TW_EV_KERNEL)
              {
                span sp = { rec->t0, rec->t1 };
                g_array_append_val (kernels, sp);
                break;
              }
            for (guint i = 0; i < kernels->len; i++)
              {
                const span *sp = &g_array_index (kernels, span, i);
                if (sp->t0 >= rec->t0 && sp->t1 <= rec->t1)
                  tw_trace_add_flow (t, ++*cx->next_flow, "kernel", lane, rec->t0, lane, sp->t0);
              }
            g_array_set_size (kernels, 0);
            break;
          }
        case REC_STEP:
          {
            char name[48], step[32];
            g_snprintf (name, sizeof name, "step %" G_GUINT64_FORMAT, rec->u.step);
            g_snprintf (step, sizeof step, "%" G_GUINT64_FORMAT, rec->u.step);
            tw_trace_add_slice (t, cx->steps, rec->t0, rec->t1 - rec->t0, name, step_cat,
                                (tw_trace_arg[]) { { "step", step } }, 1);
            break;
          }
        case REC_INSTANT:
          {
            g_autofree char *name = g_strconcat ("grad ready ", rec->u.name, NULL);
            tw_trace_add_instant (t, lane, rec->t0, name, grad_cat);
            break;
          }
        case REC_COUNTER:
          tw_trace_add_counter (t, cx->pid, rec->category, rec->t0, rec->u.value);
          break;
        default:
          g_assert_not_reached ();
        }
    }
  return events;
}

/* The caller's marks and counters (then freed). */
static void
convert_marks (converter *cx, GArray *marks)
{
  for (guint k = 0; k < marks->len; k++)
    {
      const record *m = &g_array_index (marks, record, k);
      if (m->type == REC_COUNTER)
        tw_trace_add_counter (cx->out, cx->pid, m->category, m->t0, m->u.value);
      else
        tw_trace_add_slice (cx->out, cx->steps, m->t0, m->t1 - m->t0, m->u.name, m->category, NULL, 0);
    }
  free_marks (marks);
}

/* machine, recorded and dropped events, then the caller's keys. */
static void
set_meta (tw_recorder *r, tw_trace *t)
{
  char host[256] = "";
  gethostname (host, sizeof host - 1);
  g_autofree char *machine = g_strdup_printf ("%s, %u CPUs", host, g_get_num_processors ());
  tw_trace_set_meta (t, "machine", machine);
  char num[32];
  g_snprintf (num, sizeof num, "%" G_GUINT64_FORMAT, tw_recorder_n_events (r));
  tw_trace_set_meta (t, "recorded_events", num);
  g_snprintf (num, sizeof num, "%" G_GUINT64_FORMAT, tw_recorder_n_dropped (r));
  tw_trace_set_meta (t, "dropped_events", num);
  g_mutex_lock (&r->lock);
  for (guint i = 0; i + 1 < r->meta->len; i += 2)
    tw_trace_set_meta (t, g_ptr_array_index (r->meta, i), g_ptr_array_index (r->meta, i + 1));
  g_mutex_unlock (&r->lock);
}

/* Empty again: a new generation, so threads make new buffers. */
static void
reset (tw_recorder *r)
{
  g_mutex_lock (&r->lock);
  g_ptr_array_set_size (r->buffers, 0);
  free_marks (r->marks);
  g_mutex_lock (&generation_lock);
  r->generation = next_generation++;
  g_mutex_unlock (&generation_lock);
  g_mutex_unlock (&r->lock);
  g_atomic_pointer_set (&r->n_events, 0);
  g_atomic_pointer_set (&r->n_dropped, 0);
  g_atomic_pointer_set (&r->n_written, 0);
  r->whole_steps = FALSE;
}

tw_trace *
tw_recorder_take_trace (tw_recorder *r)
{
  g_return_val_if_fail (r->writer == NULL, NULL);
  tw_trace *t = tw_trace_new ();
  set_meta (r, t);
  converter cx;
  converter_init (&cx, r, t, t);
  gint64 trim = r->whole_steps ? r->last_step_end : G_MAXINT64;
  g_mutex_lock (&r->lock);
  for (guint i = 0; i < r->buffers->len; i++)
    {
      buffer *b = g_ptr_array_index (r->buffers, i);
      if (buf_n_records (b) == 0)
        continue;               /* a thread that started the recorder but trained elsewhere */
      convert_records (&cx, b, b->blocks, buf_n_records (b), trim);
    }
  convert_marks (&cx, r->marks);
  g_mutex_unlock (&r->lock);
  reset (r);
  tw_trace_sort (t);
  return t;
}

/* ---- streaming ---- */

static void
stream_fail (tw_recorder *r, GError *error)
{
  g_mutex_lock (&r->stream_lock);
  if (r->stream_error == NULL)
    r->stream_error = g_steal_pointer (&error);
  g_mutex_unlock (&r->stream_lock);
  g_clear_error (&error);
}

/* On the writer thread (or, at the finish, the caller's): one chunk (c->b
 * NULL: none) and the marks so far, into the file. */
static void
write_chunk (tw_recorder *r, chunk *c)
{
  g_autoptr (tw_trace) t = tw_trace_new ();
  converter cx;
  converter_init (&cx, r, t, r->pool);
  guint events = c->b ? convert_records (&cx, c->b, c->blocks, c->n, c->trim_after) : 0;
  g_autoptr (GArray) marks = g_array_new (FALSE, FALSE, sizeof (record));
  g_mutex_lock (&r->lock);
  GArray *tmp = r->marks;
  r->marks = marks;
  marks = tmp;
  g_mutex_unlock (&r->lock);
  convert_marks (&cx, marks);
  tw_trace_sort (t);
  tw_chrome_writer_add_trace (r->writer, t);
  GError *error = NULL;
  if (!tw_chrome_writer_sync (r->writer, &error))
    stream_fail (r, error);
  g_atomic_pointer_add (&r->n_written, (gssize) events);
}

static gpointer
writer_main (gpointer data)
{
  tw_recorder *r = data;
  for (;;)
    {
      chunk *c = g_async_queue_pop (r->chunks);
      if (c->b == NULL)
        {
          g_free (c);
          return NULL;
        }
      write_chunk (r, c);
      g_ptr_array_unref (c->blocks);
      g_mutex_lock (&r->stream_lock);
      r->queued -= c->n;
      g_cond_broadcast (&r->stream_cond);
      g_mutex_unlock (&r->stream_lock);
      g_free (c);
    }
}

/* A writer that falls behind holds the training thread at a step end once
 * this many handoffs wait: memory stays bounded whatever the run. */
#define STREAM_MAX_WAITING 3

static void
queue_chunk (tw_recorder *r, buffer *b, gint64 trim_after, gboolean wait)
{
  chunk *c = g_new0 (chunk, 1);
  c->b = b;
  c->blocks = b->blocks;
  c->n = buf_n_records (b);
  c->trim_after = trim_after;
  b->blocks = g_ptr_array_new_with_free_func (g_free);
  b->fill = RECORD_BLOCK;
  g_mutex_lock (&r->stream_lock);
  r->peak_buffered = MAX (r->peak_buffered, r->queued + c->n);
  while (wait && r->queued > 0 && r->queued + c->n > (guint64) STREAM_MAX_WAITING * r->handoff)
    g_cond_wait (&r->stream_cond, &r->stream_lock);
  r->queued += c->n;
  g_mutex_unlock (&r->stream_lock);
  g_async_queue_push (r->chunks, c);
}

static void
hand_off (tw_recorder *r, buffer *b)
{
  queue_chunk (r, b, G_MAXINT64, TRUE);
}

gboolean
tw_recorder_stream_to (tw_recorder *r, const char *path, GError **error)
{
  g_return_val_if_fail (!tw_recorder_is_recording (r) && r->writer == NULL, FALSE);
  r->writer = tw_chrome_writer_begin (path, error);
  if (r->writer == NULL)
    return FALSE;
  r->pool = tw_trace_new ();
  r->chunks = g_async_queue_new ();
  r->queued = r->peak_buffered = 0;
  r->writer_thread = g_thread_new ("twb-trace-writer", writer_main, r);
  return TRUE;
}

void
tw_recorder_set_stream_handoff (tw_recorder *r, guint records)
{
  r->handoff = records ? records : TW_RECORDER_STREAM_HANDOFF;
}

const char *
tw_recorder_stream_temp_path (const tw_recorder *r)
{
  return r->writer ? tw_chrome_writer_temp_path (r->writer) : NULL;
}

guint64
tw_recorder_peak_buffered (tw_recorder *r)
{
  g_mutex_lock (&r->stream_lock);
  guint64 peak = r->peak_buffered;
  g_mutex_unlock (&r->stream_lock);
  return peak;
}

/* Ends the writer thread and frees the stream but the writer. */
static void
stream_join (tw_recorder *r)
{
  g_async_queue_push (r->chunks, g_new0 (chunk, 1));
  g_thread_join (g_steal_pointer (&r->writer_thread));
  g_clear_pointer (&r->chunks, g_async_queue_unref);
}

static void
stream_abort (tw_recorder *r)
{
  if (r->writer == NULL)
    return;
  stream_join (r);
  g_clear_pointer (&r->pool, tw_trace_free);
  g_clear_pointer (&r->writer, tw_chrome_writer_abort);
  g_clear_error (&r->stream_error);
  reset (r);
}

gboolean
tw_recorder_finish_stream (tw_recorder *r, GError **error)
{
  g_return_val_if_fail (r->writer != NULL && !tw_recorder_is_recording (r), FALSE);
  gint64 trim = r->whole_steps ? r->last_step_end : G_MAXINT64;
  g_mutex_lock (&r->lock);
  g_autoptr (GPtrArray) left = g_ptr_array_new ();         /* borrowed */
  for (guint i = 0; i < r->buffers->len; i++)
    g_ptr_array_add (left, g_ptr_array_index (r->buffers, i));
  g_mutex_unlock (&r->lock);
  for (guint i = 0; i < left->len; i++)
    {
      buffer *b = g_ptr_array_index (left, i);
      if (buf_n_records (b) > 0)
        queue_chunk (r, b, trim, FALSE);
    }
  stream_join (r);
  /* The marks made after the last chunk. */
  chunk none = { 0 };
  write_chunk (r, &none);
  g_clear_pointer (&r->pool, tw_trace_free);
  g_autoptr (tw_trace) meta = tw_trace_new ();
  set_meta (r, meta);
  tw_chrome_writer *w = g_steal_pointer (&r->writer);
  GError *failed = g_steal_pointer (&r->stream_error);
  reset (r);
  if (failed)
    {
      tw_chrome_writer_abort (w);
      g_propagate_error (error, failed);
      return FALSE;
    }
  return tw_chrome_writer_end (w, meta, error);
}
