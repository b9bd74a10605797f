/* et.c — Chakra execution traces in and out (et.h). */
#include "chakra/et.h"
#include "engine/fileutil.h"

#include "chakra.pb-c.h"

#include <gio/gio.h>
#include <math.h>
#include <string.h>

#define CHAKRA_ERROR g_quark_from_static_string ("twb-chakra-error")

static void
put_varint (GByteArray *out, guint64 v)
{
  while (v >= 0x80)
    {
      guint8 b = (guint8) (v | 0x80);
      g_byte_array_append (out, &b, 1);
      v >>= 7;
    }
  guint8 b = (guint8) v;
  g_byte_array_append (out, &b, 1);
}

static void
put_message (GByteArray *out, const ProtobufCMessage *m)
{
  size_t n = protobuf_c_message_get_packed_size (m);
  put_varint (out, n);
  guint off = out->len;
  g_byte_array_set_size (out, out->len + (guint) n);
  protobuf_c_message_pack (m, out->data + off);
}

static ChakraProtoMsg__AttributeProto *
attr_new (const char *name)
{
  ChakraProtoMsg__AttributeProto *a = g_new0 (ChakraProtoMsg__AttributeProto, 1);
  chakra_proto_msg__attribute_proto__init (a);
  a->name = (char *) name;
  return a;
}

static gint
by_start (gconstpointer a, gconstpointer b)
{
  const tw_sim_span *x = a, *y = b;
  return x->start_s < y->start_s ? -1 : x->start_s > y->start_s ? 1 : 0;
}

gboolean
tw_chakra_write (const GArray *spans, int rank, int ranks, const char *model, const char *path,
                 GError **error)
{
  GByteArray *out = g_byte_array_new ();
  /* Metadata. */
  ChakraProtoMsg__GlobalMetadata meta = CHAKRA_PROTO_MSG__GLOBAL_METADATA__INIT;
  meta.version = (char *) "0.0.4";
  ChakraProtoMsg__AttributeProto *ma[4];
  ma[0] = attr_new ("twb_model");
  ma[0]->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
  ma[0]->string_val = (char *) (model ? model : "");
  ma[1] = attr_new ("twb_rank");
  ma[1]->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
  ma[1]->int64_val = rank;
  ma[2] = attr_new ("twb_ranks");
  ma[2]->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
  ma[2]->int64_val = ranks;
  meta.attr = ma;
  meta.n_attr = 3;
  put_message (out, &meta.base);
  for (int i = 0; i < 3; i++)
    g_free (ma[i]);
  /* This rank's spans (the fast simulation keeps rank 0's alone: the
   * ranks are identical), in the order they start. */
  g_autoptr (GArray) mine = g_array_new (FALSE, FALSE, sizeof (tw_sim_span));
  gboolean has_rank = FALSE;
  for (guint i = 0; i < spans->len; i++)
    has_rank |= g_array_index (spans, tw_sim_span, i).rank == rank;
  for (guint i = 0; i < spans->len; i++)
    {
      const tw_sim_span *sp = &g_array_index (spans, tw_sim_span, i);
      if (sp->rank == (has_rank ? rank : 0))
        g_array_append_val (mine, *sp);
    }
  g_array_sort (mine, by_start);
  int prev[2] = { -1, -1 };
  for (guint i = 0; i < mine->len; i++)
    {
      const tw_sim_span *e = &g_array_index (mine, tw_sim_span, i);
      ChakraProtoMsg__Node n = CHAKRA_PROTO_MSG__NODE__INIT;
      n.id = i;
      n.name = (char *) e->name;
      int coll = e->kind == TW_EV_COLLECTIVE;
      n.type = coll ? CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE
                    : CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE;
      uint64_t ctrl = 0, data = 0;
      double eps = 1e-12 + 1e-9 * e->start_s;
      double prev_end = 0;
      if (prev[coll] >= 0)
        {
          const tw_sim_span *q = &g_array_index (mine, tw_sim_span, prev[coll]);
          prev_end = q->start_s + q->dur_s;
          ctrl = (uint64_t) prev[coll];
          n.ctrl_deps = &ctrl;
          n.n_ctrl_deps = 1;
        }
      /* What else it waited for: when it started after its resource was
       * free, the latest span of the other resource that had ended then
       * (a bucket's all-reduce: the backward that finished the bucket;
       * the updates: the loss's all-reduce). */
      if (e->start_s > prev_end + eps)
        for (int k = (int) i - 1; k >= 0; k--)
          {
            const tw_sim_span *q = &g_array_index (mine, tw_sim_span, k);
            if ((q->kind == TW_EV_COLLECTIVE) != coll && q->start_s + q->dur_s <= e->start_s + eps)
              {
                data = (uint64_t) k;
                n.data_deps = &data;
                n.n_data_deps = 1;
                break;
              }
          }
      prev[coll] = (int) i;
      n.start_time_micros = (uint64_t) llround (e->start_s * 1e6);
      n.duration_micros = coll ? 0 : (uint64_t) llround (e->dur_s * 1e6);
      ChakraProtoMsg__AttributeProto *a[4];
      int na = 0;
      a[na] = attr_new ("is_cpu_op");
      a[na]->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL;
      a[na++]->bool_val = FALSE;
      if (coll)
        {
          a[na] = attr_new ("comm_type");
          a[na]->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
          a[na++]->int64_val = e->coll == TW_COLL_REDUCE_SCATTER
                                 ? CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER
                               : e->coll == TW_COLL_ALLGATHER
                                 ? CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_GATHER
                               : e->coll == TW_COLL_BROADCAST
                                 ? CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BROADCAST
                               : e->coll == TW_COLL_BARRIER
                                 ? CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BARRIER
                                 : CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE;
          a[na] = attr_new ("comm_size");
          a[na]->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
          a[na++]->int64_val = (int64_t) e->bytes;
        }
      else
        {
          a[na] = attr_new ("twb_duration_s");
          a[na]->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL;
          a[na++]->double_val = e->dur_s;
        }
      n.attr = a;
      n.n_attr = na;
      put_message (out, &n.base);
      for (int k = 0; k < na; k++)
        g_free (a[k]);
    }
  gboolean ok = tw_file_save (path, out->data, out->len, error);
  g_byte_array_unref (out);
  return ok;
}

/* Reading. */

static gboolean
get_varint (const guint8 *p, gsize n, gsize *pos, guint64 *v)
{
  *v = 0;
  for (int shift = 0; shift < 64; shift += 7)
    {
      if (*pos >= n)
        return FALSE;
      guint8 b = p[(*pos)++];
      *v |= (guint64) (b & 0x7f) << shift;
      if (!(b & 0x80))
        return TRUE;
    }
  return FALSE;
}

static const ChakraProtoMsg__AttributeProto *
find_attr (const ChakraProtoMsg__Node *n, const char *name)
{
  for (size_t i = 0; i < n->n_attr; i++)
    if (n->attr[i]->name && strcmp (n->attr[i]->name, name) == 0)
      return n->attr[i];
  return NULL;
}

static double
attr_num (const ChakraProtoMsg__AttributeProto *a, double fallback)
{
  if (a == NULL)
    return fallback;
  switch (a->value_case)
    {
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL: return a->double_val;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FLOAT_VAL: return a->float_val;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL: return a->int32_val;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL: return (double) a->int64_val;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT32_VAL: return a->uint32_val;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL: return (double) a->uint64_val;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT32_VAL: return a->sint32_val;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT64_VAL: return (double) a->sint64_val;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL: return a->bool_val;
    default: return fallback;
    }
}

static void
note_once (GPtrArray *notes, GHashTable *seen, char *msg)
{
  if (g_hash_table_contains (seen, msg))
    {
      g_free (msg);
      return;
    }
  g_hash_table_add (seen, msg);
  g_ptr_array_add (notes, g_strdup (msg));
}

/* Ready nodes (indices into nodes) by their id. */
static gint
by_id (gconstpointer a, gconstpointer b, gpointer nodes)
{
  const ChakraProtoMsg__Node *x = g_ptr_array_index ((GPtrArray *) nodes, GPOINTER_TO_UINT (a));
  const ChakraProtoMsg__Node *y = g_ptr_array_index ((GPtrArray *) nodes, GPOINTER_TO_UINT (b));
  return x->id < y->id ? -1 : x->id > y->id;
}

static void
node_free (gpointer n)
{
  chakra_proto_msg__node__free_unpacked (n, NULL);
}

gboolean
tw_chakra_simulate (const char *path, tw_topo *t, int ranks, tw_algo algo, double gamma,
                    tw_chakra_result *out, GError **error)
{
  memset (out, 0, sizeof *out);
  g_autofree char *data = NULL;
  gsize len = 0;
  if (!g_file_get_contents (path, &data, &len, error))
    return FALSE;
  const guint8 *p = (const guint8 *) data;
  gsize pos = 0;
  GPtrArray *nodes = g_ptr_array_new_with_free_func (node_free);
  gboolean first = TRUE, ok = TRUE;
  while (pos < len)
    {
      guint64 n;
      gsize at = pos;
      if (!get_varint (p, len, &pos, &n) || n > len - pos)
        {
          g_set_error (error, CHAKRA_ERROR, 1, "%s: byte %" G_GSIZE_FORMAT ": a message's length "
                       "runs past the end of the file (not a Chakra trace, or cut short)", path, at);
          ok = FALSE;
          break;
        }
      if (first)
        {
          ChakraProtoMsg__GlobalMetadata *m
            = chakra_proto_msg__global_metadata__unpack (NULL, (size_t) n, p + pos);
          if (m == NULL)
            {
              g_set_error (error, CHAKRA_ERROR, 1, "%s: its first message is not Chakra's "
                           "GlobalMetadata", path);
              ok = FALSE;
              break;
            }
          for (size_t i = 0; i < m->n_attr; i++)
            if (m->attr[i]->name && strcmp (m->attr[i]->name, "twb_model") == 0
                && m->attr[i]->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL)
              out->model = g_strdup (m->attr[i]->string_val);
          chakra_proto_msg__global_metadata__free_unpacked (m, NULL);
          first = FALSE;
        }
      else
        {
          ChakraProtoMsg__Node *node = chakra_proto_msg__node__unpack (NULL, (size_t) n, p + pos);
          if (node == NULL)
            {
              g_set_error (error, CHAKRA_ERROR, 1, "%s: byte %" G_GSIZE_FORMAT ": not a Chakra "
                           "Node message", path, at);
              ok = FALSE;
              break;
            }
          g_ptr_array_add (nodes, node);
        }
      pos += (gsize) n;
    }
  if (ok && nodes->len == 0)
    {
      g_set_error (error, CHAKRA_ERROR, 1, "%s: no nodes (a Chakra trace holds its metadata, "
                   "then its nodes)", path);
      ok = FALSE;
    }
  if (!ok)
    {
      g_ptr_array_unref (nodes);
      tw_chakra_result_clear (out);
      return FALSE;
    }
  guint nn = nodes->len;
  GHashTable *index = g_hash_table_new (g_int64_hash, g_int64_equal);
  for (guint i = 0; i < nn; i++)
    {
      ChakraProtoMsg__Node *node = g_ptr_array_index (nodes, i);
      if (g_hash_table_contains (index, &node->id))
        {
          g_set_error (error, CHAKRA_ERROR, 1, "%s: two nodes have id %" G_GUINT64_FORMAT, path,
                       (guint64) node->id);
          g_hash_table_unref (index);
          g_ptr_array_unref (nodes);
          tw_chakra_result_clear (out);
          return FALSE;
        }
      g_hash_table_insert (index, &node->id, GUINT_TO_POINTER (i + 1));
    }
  GPtrArray *notes = g_ptr_array_new ();
  GHashTable *seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  double *end = g_new0 (double, nn);
  /* Kahn's order: each node's unfinished dependencies, who waits for it,
   * and the ready nodes by id. */
  guint *pending = g_new0 (guint, nn);
  GArray **waiters = g_new0 (GArray *, nn);
  for (guint i = 0; i < nn; i++)
    {
      ChakraProtoMsg__Node *node = g_ptr_array_index (nodes, i);
      for (int k = 0; k < 2; k++)
        {
          size_t nd = k ? node->n_data_deps : node->n_ctrl_deps;
          uint64_t *deps = k ? node->data_deps : node->ctrl_deps;
          for (size_t j = 0; j < nd; j++)
            {
              guint di = GPOINTER_TO_UINT (g_hash_table_lookup (index, &deps[j]));
              if (di == 0)
                {
                  note_once (notes, seen, g_strdup_printf ("node %" G_GUINT64_FORMAT
                                                           " depends on node %" G_GUINT64_FORMAT
                                                           ", which is not in the file: ignored",
                                                           (guint64) node->id,
                                                           (guint64) deps[j]));
                  continue;
                }
              if (waiters[di - 1] == NULL)
                waiters[di - 1] = g_array_new (FALSE, FALSE, sizeof (guint));
              g_array_append_val (waiters[di - 1], i);
              pending[i]++;
            }
        }
    }
  GSequence *ready = g_sequence_new (NULL);
  for (guint i = 0; i < nn; i++)
    if (pending[i] == 0)
      g_sequence_insert_sorted (ready, GUINT_TO_POINTER (i), by_id, nodes);
  double free_at[2] = { 0, 0 };
  guint n_done = 0;
  while (ok && n_done < nn)
    {
      if (g_sequence_is_empty (ready))
        {
          g_set_error (error, CHAKRA_ERROR, 1, "%s: the nodes' dependencies form a cycle (%u of "
                       "%u nodes can never start)", path, nn - n_done, nn);
          ok = FALSE;
          break;
        }
      /* The ready node of lowest id, after its dependencies' ends. */
      GSequenceIter *head = g_sequence_get_begin_iter (ready);
      int pick = GPOINTER_TO_INT (g_sequence_get (head));
      g_sequence_remove (head);
      ChakraProtoMsg__Node *node = g_ptr_array_index (nodes, pick);
      double ready_at = 0;
      for (int k = 0; k < 2; k++)
        {
          size_t nd = k ? node->n_data_deps : node->n_ctrl_deps;
          uint64_t *deps = k ? node->data_deps : node->ctrl_deps;
          for (size_t j = 0; j < nd; j++)
            {
              guint di = GPOINTER_TO_UINT (g_hash_table_lookup (index, &deps[j]));
              if (di)
                ready_at = fmax (ready_at, end[di - 1]);
            }
        }
      int res = 0;
      double dur = 0;
      if (node->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE)
        {
          dur = attr_num (find_attr (node, "twb_duration_s"), node->duration_micros / 1e6);
          out->compute_s += dur;
          out->n_compute++;
        }
      else if (node->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE)
        {
          res = 1;
          double bytes = attr_num (find_attr (node, "comm_size"), 0);
          int kind = (int) attr_num (find_attr (node, "comm_type"), 0);
          double factor = 1;
          if (kind == CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BARRIER)
            bytes = 8;
          else if (kind != CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE
                   && kind != CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_TO_ALL)
            {
              factor = 0.5;
              note_once (notes, seen, g_strdup_printf ("collectives of kind %d (%s) are taken as "
                                                       "half an all-reduce of their size", kind,
                                                       node->name ? node->name : ""));
            }
          GError *e = NULL;
          dur = ranks > 1 ? factor * tw_sim_allreduce_time (t, algo, NULL, ranks, bytes, gamma,
                                                            NULL, &e)
                          : 0;
          if (e)
            {
              g_propagate_prefixed_error (error, e, "%s: node %" G_GUINT64_FORMAT ": ", path,
                                          (guint64) node->id);
              ok = FALSE;
              break;
            }
          out->comm_s += dur;
          out->n_collective++;
        }
      else
        {
          dur = node->duration_micros / 1e6;
          out->n_other++;
          res = node->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE
                || node->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE;
          note_once (notes, seen, g_strdup_printf ("nodes of type %d (%s) take their "
                                                   "duration_micros", (int) node->type,
                                                   node->name ? node->name : ""));
        }
      double start = fmax (ready_at, free_at[res]);
      end[pick] = start + dur;
      free_at[res] = end[pick];
      n_done++;
      for (guint w = 0; waiters[pick] && w < waiters[pick]->len; w++)
        {
          guint wi = g_array_index (waiters[pick], guint, w);
          if (--pending[wi] == 0)
            g_sequence_insert_sorted (ready, GUINT_TO_POINTER (wi), by_id, nodes);
        }
      out->step_s = fmax (out->step_s, end[pick]);
    }
  g_free (end);
  g_free (pending);
  for (guint i = 0; i < nn; i++)
    if (waiters[i])
      g_array_unref (waiters[i]);
  g_free (waiters);
  g_sequence_free (ready);
  g_hash_table_unref (seen);
  g_hash_table_unref (index);
  g_ptr_array_unref (nodes);
  g_ptr_array_add (notes, NULL);
  out->notes = (char **) g_ptr_array_free (notes, FALSE);
  if (!ok)
    tw_chakra_result_clear (out);
  return ok;
}

void
tw_chakra_result_clear (tw_chakra_result *r)
{
  g_clear_pointer (&r->model, g_free);
  g_clear_pointer (&r->notes, g_strfreev);
}
