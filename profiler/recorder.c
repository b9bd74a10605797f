/* recorder.c — the event bus → trace recorder (recorder.h). */
#define G_LOG_DOMAIN "tw-profiler"
#define _GNU_SOURCE             /* pthread_getname_np */

#include "profiler/recorder.h"
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
  REC_LOSS,
  REC_MARK,
};

/* What an op's events share, taken on its first event (and again when its
 * shapes' batch dimension changes).  The hot path only copies numbers and
 * pointers; the text of names and arguments is made once per entry when
 * the buffers are merged. */
typedef struct
{
  const char *label;            /* the ident's, to catch a reused address */
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
  /* At merge: */
  const char *t_name;
  const tw_trace_arg *t_args;
  guint t_n_args;
} ident_cache;

typedef struct
{
  gint64 t0, t1;
  union
  {
    const ident_cache *op;      /* REC_SLICE */
    const char *name;           /* REC_INSTANT: the parameter, in the buffer's strings; REC_MARK */
    guint64 step;               /* REC_STEP */
    double value;               /* REC_LOSS */
  } u;
  const char *category;         /* REC_MARK */
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
  GHashTable *cache;            /* ident or param → ident_cache */
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
  GMutex lock;                  /* buffers, marks */
  GPtrArray *buffers;
  GArray *marks;                /* record: REC_MARK (name and category g_strdup'ed) or REC_LOSS
                                 * from tw_recorder_counter (the name g_strdup'ed in category) */
};

typedef struct
{
  guint64 generation;
  buffer *buf;
} thread_slot;

static GPrivate slot_key = G_PRIVATE_INIT (g_free);
static guint64 next_generation = 1;     /* under generation_lock */
static GMutex generation_lock;

static void
cache_free (gpointer p)
{
  ident_cache *c = p;
  g_free (c->dims);
  g_free (c);
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
buf_record (const buffer *b, guint i)
{
  return &((const record *) g_ptr_array_index (b->blocks, i / RECORD_BLOCK))[i % RECORD_BLOCK];
}

static buffer *
thread_buffer (tw_recorder *r)
{
  thread_slot *slot = g_private_get (&slot_key);
  if (slot && slot->generation == r->generation)
    return slot->buf;
  if (slot == NULL)
    {
      slot = g_new0 (thread_slot, 1);
      g_private_set (&slot_key, slot);
    }
  buffer *b = g_new0 (buffer, 1);
  b->tid = (gint64) syscall (SYS_gettid);
  char name[64] = "";
  if (pthread_getname_np (pthread_self (), name, sizeof name) != 0 || name[0] == '\0')
    g_snprintf (name, sizeof name, "thread %" G_GINT64_FORMAT, b->tid);
  b->thread_name = g_strdup (name);
  b->strings = g_string_chunk_new (16 * 1024);
  b->interned = g_hash_table_new (g_str_hash, g_str_equal);
  b->blocks = g_ptr_array_new_with_free_func (g_free);
  b->fill = RECORD_BLOCK;
  b->cache = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, cache_free);
  g_mutex_lock (&r->lock);
  g_ptr_array_add (r->buffers, b);
  g_mutex_unlock (&r->lock);
  slot->generation = r->generation;
  slot->buf = b;
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
  gpointer key = ev->kind == TW_EV_UPDATE && ev->param ? (gpointer) ev->param
                 : id ? (gpointer) id : GINT_TO_POINTER (0x10 + ev->kind);
  gint64 in0 = dim0 (ev->inputs, ev->n_inputs), out0 = dim0 (ev->outputs, ev->n_outputs);
  ident_cache *c = g_hash_table_lookup (b->cache, key);
  if (c && c->label == (id ? id->label : NULL) && c->kind == (int) ev->kind && c->in0 == in0
      && c->out0 == out0 && c->n_in == ev->n_inputs && c->n_out == ev->n_outputs)
    return c;
  if (c == NULL)
    {
      c = g_new0 (ident_cache, 1);
      g_hash_table_insert (b->cache, key, c);
    }
  c->label = id ? id->label : NULL;
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
  g_free (c->dims);
  c->dims = g_new (gint64, (ev->n_inputs + ev->n_outputs) * (TW_MAX_DIMS + 1) + 1);
  guint k = 0;
  copy_dims (c, ev->inputs, ev->n_inputs, &k);
  copy_dims (c, ev->outputs, ev->n_outputs, &k);
  c->n_dims = k;
  c->t_name = NULL;
  return c;
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
    return TRUE;
  /* Count the event against the cap, or as dropped: a compare-and-swap,
   * so the count never passes the cap whatever the threads do. */
  gssize n;
  do
    {
      n = (gssize) g_atomic_pointer_get ((gssize *) &r->n_events);
      if ((guint64) n >= r->max_events)
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
      if (isfinite (ev->loss))
        {
          /* The loss counter: one record more, not counted against the cap
           * (it belongs to the step's). */
          record *loss = buf_push (b);
          loss->type = REC_LOSS;
          loss->t0 = loss->t1 = ev->t_end;
          loss->u.value = ev->loss;
        }
      break;
    case TW_EV_GRAD_READY:
      rec->type = REC_INSTANT;
      rec->u.name = buf_intern (b, ev->param ? ev->param->name : "");
      break;
    default:
      rec->type = REC_SLICE;
      rec->u.op = op_cache (b, ev);
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
  return r;
}

static void
clear_marks (tw_recorder *r)
{
  for (guint i = 0; i < r->marks->len; i++)
    {
      record *m = &g_array_index (r->marks, record, i);
      if (m->type == REC_MARK)
        g_free ((char *) m->u.name);
      g_free ((char *) m->category);
    }
  g_array_set_size (r->marks, 0);
}

void
tw_recorder_free (tw_recorder *r)
{
  if (r == NULL)
    return;
  tw_recorder_stop (r);
  clear_marks (r);
  g_array_unref (r->marks);
  g_ptr_array_unref (r->buffers);
  g_mutex_clear (&r->lock);
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
  record c = { .type = REC_LOSS, .u.value = value, .category = g_strdup (name), .t0 = t_ns,
               .t1 = t_ns };
  g_mutex_lock (&r->lock);
  g_array_append_val (r->marks, c);
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

tw_trace *
tw_recorder_take_trace (tw_recorder *r)
{
  tw_trace *t = tw_trace_new ();
  int pid = (int) getpid ();
  char host[256] = "";
  gethostname (host, sizeof host - 1);
  g_autofree char *machine = g_strdup_printf ("%s, %u CPUs", host, g_get_num_processors ());
  tw_trace_set_meta (t, "machine", machine);
  char num[32];
  g_snprintf (num, sizeof num, "%" G_GUINT64_FORMAT, tw_recorder_n_events (r));
  tw_trace_set_meta (t, "recorded_events", num);
  g_snprintf (num, sizeof num, "%" G_GUINT64_FORMAT, tw_recorder_n_dropped (r));
  tw_trace_set_meta (t, "dropped_events", num);
  tw_trace_add_process (t, pid, g_get_prgname () ? g_get_prgname () : "twb");
  guint steps = tw_trace_add_lane (t, pid, STEPS_TID, "steps", TW_LANE_THREAD);

  g_mutex_lock (&r->lock);
  const char *step_cat = tw_trace_intern (t, "step");
  const char *loss_name = tw_trace_intern (t, "loss");
  const char *grad_cat = tw_trace_intern (t, "grad_ready");
  for (guint i = 0; i < r->buffers->len; i++)
    {
      buffer *b = g_ptr_array_index (r->buffers, i);
      if (buf_n_records (b) == 0)
        continue;               /* a thread that started the recorder but trained elsewhere */
      guint lane = tw_trace_add_lane (t, pid, b->tid, b->thread_name, TW_LANE_THREAD);
      for (guint k = 0, n = buf_n_records (b); k < n; k++)
        {
          const record *rec = buf_record (b, k);
          if (r->whole_steps && rec->t0 > r->last_step_end)
            continue;           /* the part of a step the recording stopped in */
          switch (rec->type)
            {
            case REC_SLICE:
              {
                ident_cache *c = (ident_cache *) rec->u.op;
                cache_to_trace (c, t);
                tw_trace_add_slice_interned (t, lane, rec->t0, rec->t1 - rec->t0, c->t_name,
                                             tw_trace_intern (t, tw_event_kind_name (c->kind)),
                                             c->t_args, c->t_n_args);
                break;
              }
            case REC_STEP:
              {
                char name[48], step[32];
                g_snprintf (name, sizeof name, "step %" G_GUINT64_FORMAT, rec->u.step);
                g_snprintf (step, sizeof step, "%" G_GUINT64_FORMAT, rec->u.step);
                tw_trace_add_slice (t, steps, rec->t0, rec->t1 - rec->t0, name, step_cat,
                                    (tw_trace_arg[]) { { "step", step } }, 1);
                break;
              }
            case REC_INSTANT:
              {
                g_autofree char *name = g_strconcat ("grad ready ", rec->u.name, NULL);
                tw_trace_add_instant (t, lane, rec->t0, name, grad_cat);
                break;
              }
            case REC_LOSS:
              tw_trace_add_counter (t, pid, loss_name, rec->t0, rec->u.value);
              break;
            default:
              g_assert_not_reached ();
            }
        }
    }
  for (guint k = 0; k < r->marks->len; k++)
    {
      const record *m = &g_array_index (r->marks, record, k);
      if (m->type == REC_LOSS)      /* tw_recorder_counter: the name in category */
        tw_trace_add_counter (t, pid, m->category, m->t0, m->u.value);
      else
        tw_trace_add_slice (t, steps, m->t0, m->t1 - m->t0, m->u.name, m->category, NULL, 0);
    }
  /* Start again empty: a new generation, so threads make new buffers. */
  g_ptr_array_set_size (r->buffers, 0);
  clear_marks (r);
  g_mutex_lock (&generation_lock);
  r->generation = next_generation++;
  g_mutex_unlock (&generation_lock);
  g_atomic_pointer_set (&r->n_events, 0);
  g_atomic_pointer_set (&r->n_dropped, 0);
  r->whole_steps = FALSE;
  g_mutex_unlock (&r->lock);
  tw_trace_sort (t);
  return t;
}
