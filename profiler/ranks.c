/* ranks.c — merging the ranks' traces, collectives across ranks, per-rank
 * figures (ranks.h). */
#define G_LOG_DOMAIN "tw-profiler"

#include "profiler/ranks.h"
#include "profiler/summary.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

G_DEFINE_QUARK (tw-ranks-error-quark, tw_ranks_error)

/* Tids given to a rank's lanes whose tid another of its processes took
 * already (a PyTorch trace's CPU and GPU processes): above the importer's
 * string tids (1 << 40, chrome-read.c). */
#define REMAPPED_TID_BASE ((gint64) 1 << 42)

/* How many seqs or messages merge.note lists by value before "...". */
#define NOTE_MAX_LISTED 5

static gboolean
parse_u64 (const char *s, guint64 *out)
{
  if (s == NULL || !g_ascii_isdigit (s[0]))
    return FALSE;
  char *end;
  guint64 v = g_ascii_strtoull (s, &end, 10);
  if (*end)
    return FALSE;
  *out = v;
  return TRUE;
}

static gboolean
parse_int (const char *s, int *out)
{
  if (s == NULL || s[0] == '\0')
    return FALSE;
  char *end;
  gint64 v = g_ascii_strtoll (s, &end, 10);
  if (*end || v < G_MININT || v > G_MAXINT)
    return FALSE;
  *out = (int) v;
  return TRUE;
}

static gboolean
is_collective_cat (const tw_slice *s)
{
  return s->category && strcmp (s->category, "collective") == 0;
}

/* A collective's seq (> 0); FALSE for anything else, messages included.
 * Ours (category collective, "seq") or PyTorch's NCCL kernels ("Seq"). */
static gboolean
slice_seq (const tw_slice *s, guint64 *seq)
{
  if (s->category && strcmp (s->category, "kernel") == 0 && tw_slice_arg (s, "Collective name"))
    {
      const char *name = tw_slice_arg (s, "Collective name");
      return strcmp (name, "send") != 0 && strcmp (name, "recv") != 0
             && parse_u64 (tw_slice_arg (s, "Seq"), seq) && *seq > 0;
    }
  if (!is_collective_cat (s))
    return FALSE;
  const char *kind = tw_slice_arg (s, "kind");
  if (kind && (strcmp (kind, "send") == 0 || strcmp (kind, "recv") == 0))
    return FALSE;
  return parse_u64 (tw_slice_arg (s, "seq"), seq) && *seq > 0;
}

/* A message on rank `rank`: its (sender, receiver, msg_seq) and whether
 * it is the sending end. */
static gboolean
slice_message (const tw_slice *s, int rank, int *from, int *to, guint64 *msg, gboolean *is_send)
{
  if (!is_collective_cat (s))
    return FALSE;
  const char *kind = tw_slice_arg (s, "kind");
  int peer;
  if (kind == NULL || !parse_int (tw_slice_arg (s, "peer"), &peer)
      || !parse_u64 (tw_slice_arg (s, "msg_seq"), msg) || *msg == 0)
    return FALSE;
  if (strcmp (kind, "send") == 0)
    *from = rank, *to = peer, *is_send = TRUE;
  else if (strcmp (kind, "recv") == 0)
    *from = peer, *to = rank, *is_send = FALSE;
  else
    return FALSE;
  return TRUE;
}

/* ---- clocks ---- */

typedef struct
{
  gint64 off;                   /* the offset given */
  gboolean refined;             /* apply c + d (x - xbar) after it */
  double c, d;
  gint64 xbar;
} rank_clock;

static gint64
clamp_ns (gint64 t)
{
  return CLAMP (t, -TW_TRACE_MAX_NS, TW_TRACE_MAX_NS);
}

static gint64
clock_map (const rank_clock *k, gint64 t)
{
  gint64 x = clamp_ns (tw_trace_ns_sum (t, k->off));
  if (!k->refined)
    return x;
  double corr = k->c + k->d * (double) (x - k->xbar);
  corr = CLAMP (corr, (double) -TW_TRACE_MAX_NS, (double) TW_TRACE_MAX_NS);
  return clamp_ns (x + (gint64) llround (corr));
}

/* seq → end time (+ offset) of each collective of t (the first of each seq). */
static GHashTable *
collective_ends (const tw_trace *t, gint64 off)
{
  GHashTable *ends = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_free);
  for (guint l = 0; l < tw_trace_n_lanes (t); l++)
    for (guint k = 0, n = tw_trace_lane_n_slices (t, l); k < n; k++)
      {
        const tw_slice *s = tw_trace_lane_slice (t, l, k);
        guint64 seq;
        if (!slice_seq (s, &seq) || g_hash_table_contains (ends, &seq))
          continue;
        gint64 *key = g_new (gint64, 1), *end = g_new (gint64, 1);
        *key = (gint64) seq;
        *end = clamp_ns (tw_trace_ns_sum (s->start_ns + s->dur_ns, off));
        g_hash_table_insert (ends, key, end);
      }
  return ends;
}

typedef struct
{
  gint64 x, y;                  /* end on rank r (offset applied), end on rank 0 */
} end_pair;

static int
cmp_pair (gconstpointer a, gconstpointer b)
{
  const end_pair *p = a, *q = b;
  return p->x < q->x ? -1 : p->x > q->x;
}

/* Least squares through the pairs: y - x = c + d (x - xbar).  Returns the
 * RMS residual. */
static double
fit_pairs (GArray *pairs, rank_clock *k)
{
  guint n = pairs->len;
  gint64 x0 = g_array_index (pairs, end_pair, 0).x;
  double mx = 0, mv = 0;
  for (guint i = 0; i < n; i++)
    {
      const end_pair *p = &g_array_index (pairs, end_pair, i);
      mx += (double) (p->x - x0);
      mv += (double) (p->y - p->x);
    }
  mx /= n;
  mv /= n;
  double sxx = 0, sxv = 0;
  for (guint i = 0; i < n; i++)
    {
      const end_pair *p = &g_array_index (pairs, end_pair, i);
      double dx = (double) (p->x - x0) - mx, dv = (double) (p->y - p->x) - mv;
      sxx += dx * dx;
      sxv += dx * dv;
    }
  k->xbar = x0 + (gint64) llround (mx);
  k->c = mv + (sxx > 0 ? sxv / sxx : 0) * ((double) k->xbar - x0 - mx);
  k->d = sxx > 0 ? sxv / sxx : 0;
  double ss = 0;
  for (guint i = 0; i < n; i++)
    {
      const end_pair *p = &g_array_index (pairs, end_pair, i);
      double r = (double) (p->y - p->x) - k->c - k->d * (double) (p->x - k->xbar);
      ss += r * r;
    }
  return sqrt (ss / n);
}

/* ---- merge ---- */

typedef struct
{
  guint lane;
  gint64 start;
} msg_end;

typedef struct
{
  tw_trace *out;
  guint64 next_flow;
  GHashTable *sends, *recvs;    /* "from to msg" → msg_end */
} merger;

static void
note_message (merger *m, int rank, guint lane, const tw_slice *s, gint64 start)
{
  int from, to;
  guint64 msg;
  gboolean is_send;
  if (!slice_message (s, rank, &from, &to, &msg, &is_send))
    return;
  char *key = g_strdup_printf ("%d %d %" G_GUINT64_FORMAT, from, to, msg);
  GHashTable *into = is_send ? m->sends : m->recvs;
  if (g_hash_table_contains (into, key))
    {
      g_free (key);             /* a duplicate: the first one stands */
      return;
    }
  msg_end *e = g_new (msg_end, 1);
  e->lane = lane;
  e->start = start;
  g_hash_table_insert (into, key, e);
}

/* Rank r's trace into m->out on rank 0's clock k. */
static void
copy_rank (merger *m, tw_trace *src, int r, const rank_clock *k)
{
  tw_trace *out = m->out;
  guint n_lanes = tw_trace_n_lanes (src);
  g_autofree guint *lane_of = g_new (guint, n_lanes);
  g_autoptr (GHashTable) tid_owner = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL);
  gint64 next_tid = REMAPPED_TID_BASE;
  for (guint l = 0; l < n_lanes; l++)
    {
      const tw_lane_info *li = tw_trace_lane (src, l);
      gint64 tid = li->tid;
      gpointer owner;
      if (g_hash_table_lookup_extended (tid_owner, &tid, NULL, &owner)
          && GPOINTER_TO_INT (owner) != li->pid)
        tid = next_tid++;
      gint64 *key = g_new (gint64, 1);
      *key = tid;
      g_hash_table_replace (tid_owner, key, GINT_TO_POINTER (li->pid));
      lane_of[l] = tw_trace_add_lane (out, r, tid, li->name, li->kind);
    }
  for (guint l = 0; l < n_lanes; l++)
    {
      for (guint i = 0, n = tw_trace_lane_n_slices (src, l); i < n; i++)
        {
          const tw_slice *s = tw_trace_lane_slice (src, l, i);
          gint64 a = clock_map (k, s->start_ns), b = clock_map (k, s->start_ns + s->dur_ns);
          tw_trace_add_slice (out, lane_of[l], a, MAX (b - a, 0), s->name, s->category, s->args,
                              s->n_args);
          note_message (m, r, lane_of[l], s, a);
        }
      for (guint i = 0, n = tw_trace_lane_n_instants (src, l); i < n; i++)
        {
          const tw_instant *in = tw_trace_lane_instant (src, l, i);
          tw_trace_add_instant (out, lane_of[l], clock_map (k, in->t_ns), in->name, in->category);
        }
    }
  for (guint i = 0; i < tw_trace_n_counters (src); i++)
    {
      const tw_counter_sample *c = tw_trace_counter (src, i);
      tw_trace_add_counter (out, r, c->name, clock_map (k, c->t_ns), c->value);
    }
  for (guint i = 0; i < tw_trace_n_flows (src); i++)
    {
      const tw_flow *f = tw_trace_flow (src, i);
      tw_trace_add_flow (out, ++m->next_flow, f->name, lane_of[f->from_lane], clock_map (k, f->from_ns),
                         lane_of[f->to_lane], clock_map (k, f->to_ns));
    }
}

static void
set_meta_printf (tw_trace *t, const char *key_fmt, int r, const char *fmt, ...) G_GNUC_PRINTF (4, 5);

static void
set_meta_printf (tw_trace *t, const char *key_fmt, int r, const char *fmt, ...)
{
  g_autofree char *key = g_strdup_printf (key_fmt, r);
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *value = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  tw_trace_set_meta (t, key, value);
}

static int
cmp_u64 (gconstpointer a, gconstpointer b)
{
  guint64 x = *(const guint64 *) a, y = *(const guint64 *) b;
  return x < y ? -1 : x > y;
}

/* A sentence for merge.note about the seqs not every rank holds, or NULL. */
static char *
missing_note (GHashTable **ends, int n_ranks)
{
  g_autoptr (GHashTable) count = g_hash_table_new_full (g_int64_hash, g_int64_equal, NULL, NULL);
  for (int r = 0; r < n_ranks; r++)
    {
      GHashTableIter it;
      gpointer key;
      g_hash_table_iter_init (&it, ends[r]);
      while (g_hash_table_iter_next (&it, &key, NULL))
        g_hash_table_replace (count, key,
                              GINT_TO_POINTER (GPOINTER_TO_INT (g_hash_table_lookup (count, key)) + 1));
    }
  g_autoptr (GArray) missing = g_array_new (FALSE, FALSE, sizeof (guint64));
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init (&it, count);
  while (g_hash_table_iter_next (&it, &key, &value))
    if (GPOINTER_TO_INT (value) < n_ranks)
      {
        guint64 seq = (guint64) *(gint64 *) key;
        g_array_append_val (missing, seq);
      }
  if (missing->len == 0)
    return NULL;
  g_array_sort (missing, cmp_u64);
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "%u collective%s not on every rank (seq", missing->len,
                          missing->len == 1 ? " is" : "s are");
  for (guint i = 0; i < missing->len && i < NOTE_MAX_LISTED; i++)
    g_string_append_printf (s, "%s %" G_GUINT64_FORMAT, i ? "," : "", g_array_index (missing, guint64, i));
  g_string_append (s, missing->len > NOTE_MAX_LISTED ? ", ...)" : ")");
  return g_string_free (s, FALSE);
}

static int
cmp_strp (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* Flows from each send to its receive; a sentence about the unmatched, or NULL. */
static char *
pair_messages (merger *m)
{
  guint unmatched = 0;
  guint n_keys;
  g_autofree gpointer *keys = g_hash_table_get_keys_as_array (m->sends, &n_keys);
  qsort (keys, n_keys, sizeof *keys, cmp_strp);       /* flow ids in a stable order */
  for (guint i = 0; i < n_keys; i++)
    {
      const msg_end *s = g_hash_table_lookup (m->sends, keys[i]);
      const msg_end *r = g_hash_table_lookup (m->recvs, keys[i]);
      if (r == NULL)
        {
          unmatched++;
          continue;
        }
      tw_trace_add_flow (m->out, ++m->next_flow, "message", s->lane, s->start, r->lane, r->start);
    }
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init (&it, m->recvs);
  while (g_hash_table_iter_next (&it, &key, NULL))
    unmatched += !g_hash_table_contains (m->sends, key);
  if (unmatched == 0)
    return NULL;
  return g_strdup_printf ("%u message end%s without the other end (a send without its receive "
                          "or the reverse)", unmatched, unmatched == 1 ? "" : "s");
}

static void
free_ends (GHashTable **ends, int n)
{
  for (int r = 0; r < n; r++)
    if (ends[r])
      g_hash_table_unref (ends[r]);
  g_free (ends);
}

tw_trace *
tw_trace_merge_ranks (tw_trace *const *per_rank, int n_ranks, const gint64 *offset_ns,
                      const gint64 *rtt_ns, GError **error)
{
  if (n_ranks < 1 || per_rank == NULL)
    {
      g_set_error (error, TW_RANKS_ERROR, TW_RANKS_ERROR_ARG, "no rank's trace to merge");
      return NULL;
    }
  for (int r = 0; r < n_ranks; r++)
    {
      if (per_rank[r] == NULL)
        {
          g_set_error (error, TW_RANKS_ERROR, TW_RANKS_ERROR_ARG, "rank %d: no trace", r);
          return NULL;
        }
      int n;
      if (tw_trace_is_multi_rank (per_rank[r], &n))
        {
          g_set_error (error, TW_RANKS_ERROR, TW_RANKS_ERROR_ARG,
                       "rank %d: its trace holds %d ranks already", r, n);
          return NULL;
        }
      tw_trace_sort (per_rank[r]);
    }

  /* Clocks: the offsets given, refined from the collectives' ends. */
  g_autofree rank_clock *clocks = g_new0 (rank_clock, n_ranks);
  GHashTable **ends = g_new0 (GHashTable *, n_ranks);
  for (int r = 0; r < n_ranks; r++)
    {
      clocks[r].off = offset_ns ? offset_ns[r] : 0;
      ends[r] = collective_ends (per_rank[r], clocks[r].off);
    }
  tw_trace *out = tw_trace_new ();
  char num[24];
  g_snprintf (num, sizeof num, "%d", n_ranks);
  tw_trace_set_meta (out, "ranks", num);
  for (int r = 0; r < n_ranks; r++)
    {
      set_meta_printf (out, "clock_offset_ns.%d", r, "%" G_GINT64_FORMAT, clocks[r].off);
      gboolean rtt_known = rtt_ns && rtt_ns[r] > 0;
      if (rtt_known)
        set_meta_printf (out, "clock_rtt_ns.%d", r, "%" G_GINT64_FORMAT, rtt_ns[r]);
      const char *used = r == 0 ? "reference" : offset_ns ? "ping-pong" : "none";
      g_autoptr (GArray) pairs = g_array_new (FALSE, FALSE, sizeof (end_pair));
      GHashTableIter it;
      gpointer key, value;
      g_hash_table_iter_init (&it, ends[r]);
      while (r > 0 && g_hash_table_iter_next (&it, &key, &value))
        {
          const gint64 *y = g_hash_table_lookup (ends[0], key);
          if (y)
            g_array_append_val (pairs, ((end_pair) { *(gint64 *) value, *y }));
        }
      if (pairs->len > 0)
        {
          g_array_sort (pairs, cmp_pair);
          rank_clock fit = clocks[r];
          double residual = fit_pairs (pairs, &fit);
          char c[G_ASCII_DTOSTR_BUF_SIZE], d[G_ASCII_DTOSTR_BUF_SIZE], res[G_ASCII_DTOSTR_BUF_SIZE];
          set_meta_printf (out, "clock_refined.%d", r, "%s %s %s %u",
                           g_ascii_formatd (c, sizeof c, "%.0f", (double) fit.off + fit.c),
                           g_ascii_formatd (d, sizeof d, "%.3f", fit.d * 1e6),
                           g_ascii_formatd (res, sizeof res, "%.0f", residual), pairs->len);
          /* 3 pairs: the fewest that leave the line a residual to judge it by. */
          if (pairs->len >= 3 && (!rtt_known || residual < rtt_ns[r] / 2.0))
            {
              clocks[r] = fit;
              clocks[r].refined = TRUE;
              used = "refined";
            }
        }
      set_meta_printf (out, "clock_used.%d", r, "%s", used);
      const char *host = tw_trace_get_meta (per_rank[r], "host");
      if (host)
        set_meta_printf (out, "host.%d", r, "%s", host);
    }
  const char *const *keys = tw_trace_meta_keys (per_rank[0]);
  for (guint i = 0; keys && keys[i]; i++)
    if (tw_trace_get_meta (out, keys[i]) == NULL)
      tw_trace_set_meta (out, keys[i], tw_trace_get_meta (per_rank[0], keys[i]));

  merger m = { .out = out };
  m.sends = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  m.recvs = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  for (int r = 0; r < n_ranks; r++)
    {
      const char *host = tw_trace_get_meta (per_rank[r], "host");
      g_autofree char *name = host ? g_strdup_printf ("rank %d (%s)", r, host)
                                   : g_strdup_printf ("rank %d", r);
      tw_trace_add_process (out, r, name);
      copy_rank (&m, per_rank[r], r, &clocks[r]);
    }
  g_autofree char *msg_note = pair_messages (&m);
  g_autofree char *seq_note = missing_note (ends, n_ranks);
  if (msg_note || seq_note)
    {
      g_autofree char *note = g_strjoin ("; ", msg_note ? msg_note : seq_note,
                                         msg_note && seq_note ? seq_note : NULL, NULL);
      tw_trace_set_meta (out, "merge.note", note);
    }
  g_hash_table_unref (m.sends);
  g_hash_table_unref (m.recvs);
  free_ends (ends, n_ranks);
  tw_trace_sort (out);
  return out;
}

/* ---- reading a merged trace ---- */

gboolean
tw_trace_pytorch_rank (const tw_trace *t, int *rank)
{
  const char *info = tw_trace_get_meta (t, "distributedInfo");
  if (info == NULL)
    return FALSE;
  g_autoptr (JsonParser) parser = json_parser_new ();
  if (!json_parser_load_from_data (parser, info, -1, NULL))
    return FALSE;
  JsonNode *root = json_parser_get_root (parser);
  if (!JSON_NODE_HOLDS_OBJECT (root))
    return FALSE;
  JsonNode *r = json_object_get_member (json_node_get_object (root), "rank");
  if (r == NULL || !JSON_NODE_HOLDS_VALUE (r) || json_node_get_value_type (r) != G_TYPE_INT64)
    return FALSE;
  gint64 v = json_node_get_int (r);
  if (v < 0 || v > G_MAXINT)
    return FALSE;
  *rank = (int) v;
  return TRUE;
}

gboolean
tw_trace_is_pytorch_rank (const tw_trace *t)
{
  int r;
  return tw_trace_pytorch_rank (t, &r) && !tw_trace_is_multi_rank (t, NULL);
}

/* A rank far past the traces given is not a run's (ranks.h). */
#define MAX_EMPTY_RANKS 4096

tw_trace *
tw_trace_merge_pytorch_ranks (tw_trace *const *traces, guint n, GError **error)
{
  int n_ranks = 0;
  for (guint i = 0; i < n; i++)
    {
      int r;
      if (!tw_trace_is_pytorch_rank (traces[i]))
        {
          g_set_error (error, TW_RANKS_ERROR, TW_RANKS_ERROR_ARG,
                       "trace %u is not one rank's PyTorch trace (no distributedInfo.rank)", i + 1);
          return NULL;
        }
      tw_trace_pytorch_rank (traces[i], &r);
      if (r > (int) n + MAX_EMPTY_RANKS)
        {
          g_set_error (error, TW_RANKS_ERROR, TW_RANKS_ERROR_ARG,
                       "trace %u is of rank %d, far past the %u traces given", i + 1, r, n);
          return NULL;
        }
      n_ranks = MAX (n_ranks, r + 1);
    }
  g_autofree tw_trace **at = g_new0 (tw_trace *, MAX (n_ranks, 1));
  for (guint i = 0; i < n; i++)
    {
      int r;
      tw_trace_pytorch_rank (traces[i], &r);
      if (at[r])
        {
          g_set_error (error, TW_RANKS_ERROR, TW_RANKS_ERROR_ARG,
                       "two traces are of rank %d", r);
          return NULL;
        }
      at[r] = traces[i];
    }
  g_autoptr (GPtrArray) empty = g_ptr_array_new_with_free_func ((GDestroyNotify) tw_trace_free);
  for (int r = 0; r < n_ranks; r++)
    if (!at[r])
      g_ptr_array_add (empty, at[r] = tw_trace_new ());
  return tw_trace_merge_ranks (at, n_ranks, NULL, NULL, error);
}

gboolean
tw_trace_is_multi_rank (const tw_trace *t, int *n_ranks)
{
  int n = 0;
  if (!parse_int (tw_trace_get_meta (t, "ranks"), &n))
    {
      n = 0;
      for (guint i = 0; i < tw_trace_n_processes (t); i++)
        {
          const char *name = tw_trace_process (t, i)->name;
          n += name && g_str_has_prefix (name, "rank ") && g_ascii_isdigit (name[5]);
        }
    }
  if (n_ranks)
    *n_ranks = MAX (n, 1);
  return n >= 2;
}

static int
cmp_peer (gconstpointer a, gconstpointer b)
{
  const tw_coll_peer *p = a, *q = b;
  return p->rank < q->rank ? -1 : p->rank > q->rank;
}

GArray *
tw_trace_collective_peers (const tw_trace *t, guint lane, guint slice_index)
{
  if (lane >= tw_trace_n_lanes (t) || slice_index >= tw_trace_lane_n_slices (t, lane))
    return NULL;
  guint64 seq;
  if (!slice_seq (tw_trace_lane_slice (t, lane, slice_index), &seq))
    return NULL;
  GArray *peers = g_array_new (FALSE, FALSE, sizeof (tw_coll_peer));
  g_autoptr (GHashTable) seen = g_hash_table_new (NULL, NULL);
  for (guint l = 0; l < tw_trace_n_lanes (t); l++)
    {
      int pid = tw_trace_lane (t, l)->pid;
      if (g_hash_table_contains (seen, GINT_TO_POINTER (pid)))
        continue;
      for (guint k = 0, n = tw_trace_lane_n_slices (t, l); k < n; k++)
        {
          const tw_slice *s = tw_trace_lane_slice (t, l, k);
          guint64 q;
          if (!slice_seq (s, &q) || q != seq)
            continue;
          tw_coll_peer p = { .rank = pid, .lane = l, .slice_index = k, .start_ns = s->start_ns,
                             .end_ns = s->start_ns + s->dur_ns };
          g_array_append_val (peers, p);
          g_hash_table_add (seen, GINT_TO_POINTER (pid));
          break;
        }
    }
  gint64 latest = G_MININT64;
  for (guint i = 0; i < peers->len; i++)
    latest = MAX (latest, g_array_index (peers, tw_coll_peer, i).start_ns);
  for (guint i = 0; i < peers->len; i++)
    {
      tw_coll_peer *p = &g_array_index (peers, tw_coll_peer, i);
      p->skew_ns = p->start_ns - latest;
      p->wait_ns = MIN (-p->skew_ns, p->end_ns - p->start_ns);
    }
  g_array_sort (peers, cmp_peer);
  return peers;
}

/* ---- per-rank figures ---- */

/* Ours ("step N", category step) or PyTorch's ("ProfilerStep#N"). */
static gboolean
is_step (const tw_slice *s)
{
  guint64 n;
  if (s->name == NULL)
    return FALSE;
  if (g_str_has_prefix (s->name, "ProfilerStep#"))
    return parse_u64 (s->name + strlen ("ProfilerStep#"), &n);
  return s->category && strcmp (s->category, "step") == 0 && g_str_has_prefix (s->name, "step ")
         && parse_u64 (s->name + strlen ("step "), &n);
}

static int
cmp_i64 (gconstpointer a, gconstpointer b)
{
  gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;
  return x < y ? -1 : x > y;
}

/* The median of a (sorted here); 0 when empty. */
static gint64
median_of (GArray *a)
{
  if (a->len == 0)
    return 0;
  g_array_sort (a, cmp_i64);
  guint n = a->len;
  gint64 lo = g_array_index (a, gint64, (n - 1) / 2), hi = g_array_index (a, gint64, n / 2);
  return lo + (hi - lo) / 2;
}

GArray *
tw_trace_rank_stats (const tw_trace *t, double straggler_pct)
{
  g_autoptr (GArray) base = tw_summary_ranks (t);
  GArray *rows = g_array_sized_new (FALSE, TRUE, sizeof (tw_rank_stats), base->len);
  g_autoptr (GHashTable) steps = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) g_array_unref);
  for (guint l = 0; l < tw_trace_n_lanes (t); l++)
    {
      gpointer pid = GINT_TO_POINTER (tw_trace_lane (t, l)->pid);
      for (guint k = 0, n = tw_trace_lane_n_slices (t, l); k < n; k++)
        {
          const tw_slice *s = tw_trace_lane_slice (t, l, k);
          if (!is_step (s))
            continue;
          GArray *of = g_hash_table_lookup (steps, pid);
          if (of == NULL)
            g_hash_table_insert (steps, pid, of = g_array_new (FALSE, FALSE, sizeof (gint64)));
          g_array_append_val (of, s->dur_ns);
        }
    }
  for (guint i = 0; i < base->len; i++)
    {
      const tw_rank_row *b = &g_array_index (base, tw_rank_row, i);
      tw_rank_stats r = { .rank = b->pid, .name = b->name, .span_ns = b->span_ns,
                          .compute_ns = b->compute_ns, .comm_ns = b->comm_ns,
                          .exposed_ns = MAX (b->comm_ns - b->overlap_ns, 0), .idle_ns = b->idle_ns };
      r.overlap_pct = r.comm_ns > 0 ? 100.0 * (1.0 - (double) r.exposed_ns / (double) r.comm_ns) : 0;
      GArray *of = g_hash_table_lookup (steps, GINT_TO_POINTER (b->pid));
      if (of)
        {
          r.n_steps = of->len;
          r.step_median_ns = median_of (of);
        }
      g_array_append_val (rows, r);
    }
  gint64 mm = tw_rank_stats_median_step (rows);
  for (guint i = 0; mm > 0 && i < rows->len; i++)
    {
      tw_rank_stats *r = &g_array_index (rows, tw_rank_stats, i);
      if (r->n_steps == 0)
        continue;
      r->slower_pct = 100.0 * ((double) r->step_median_ns / (double) mm - 1.0);
      r->straggler = r->slower_pct > straggler_pct;
    }
  return rows;
}

gint64
tw_rank_stats_median_step (const GArray *rows)
{
  g_autoptr (GArray) medians = g_array_new (FALSE, FALSE, sizeof (gint64));
  for (guint i = 0; i < rows->len; i++)
    {
      const tw_rank_stats *r = &g_array_index (rows, tw_rank_stats, i);
      if (r->n_steps)
        g_array_append_val (medians, r->step_median_ns);
    }
  return median_of (medians);
}
