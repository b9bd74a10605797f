/* calibrate.c — this machine measured for the simulator (calibrate.h).
 *
 * A profile in JSON:
 *   {"name": "local", "host": "vm", "cores": 2,
 *    "roofline": {"matmul_gflops": 40, "vector_gflops": 5, "mem_gbytes_per_s": 8,
 *                 "launch_us": 3},
 *    "link": {"latency_us": 12, "gbytes_per_s": 4.5},
 *    "collectives": [{"ranks": 2, "overhead_us": 90}],
 *    "models": [{"model": "spirals", "batch": 16, "update_ns_per_byte": 0.4,
 *                "step_overhead_us": 40, "nodes": {"fc1": [12.5, 20.1], ...}}]}
 * (node times in µs: forward, backward). */
#define G_LOG_DOMAIN "twb-sim"

#include "engine/sim/calibrate.h"
#include "engine/device.h"
#include "engine/events.h"
#include "engine/fileutil.h"
#include "engine/session.h"
#include "engine/train.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct
{
  char *model;
  int64_t batch;
  GHashTable *nodes;          /* id → double[2] seconds */
  double update_s_per_byte;
  double step_overhead_s;
  GArray *lockstep;           /* lock_entry */
} model_entry;

typedef struct
{
  int ranks;
  double overhead_s;
  double s_per_byte;          /* beyond the ring's over the link */
} coll_entry;

/* The model's ranks in lockstep at a rank count (tw_sim_calibrate_contention). */
typedef struct
{
  int ranks;
  double compute_scale;       /* a rank's compute in lockstep over one alone's */
  double wait_s;              /* the all-reduce that ends a step, beyond its ring */
} lock_entry;

struct tw_sim_profile
{
  char *name, *host;
  int cores;
  gboolean have_roofline;
  tw_device_profile dev;
  gboolean have_link;
  double latency, bandwidth;
  GArray *colls;              /* coll_entry */
  GPtrArray *models;          /* model_entry */
};

static void
model_entry_free (model_entry *e)
{
  g_free (e->model);
  g_hash_table_unref (e->nodes);
  g_array_unref (e->lockstep);
  g_free (e);
}

static model_entry *
model_entry_new (const char *model, int64_t batch)
{
  model_entry *e = g_new0 (model_entry, 1);
  e->model = g_strdup (model);
  e->batch = batch;
  e->nodes = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  e->lockstep = g_array_new (FALSE, FALSE, sizeof (lock_entry));
  return e;
}

tw_sim_profile *
tw_sim_profile_new (const char *name)
{
  tw_sim_profile *p = g_new0 (tw_sim_profile, 1);
  p->name = g_strdup (name ? name : "local");
  p->host = g_strdup (g_get_host_name ());
  p->cores = (int) sysconf (_SC_NPROCESSORS_ONLN);
  p->colls = g_array_new (FALSE, FALSE, sizeof (coll_entry));
  p->models = g_ptr_array_new_with_free_func ((GDestroyNotify) model_entry_free);
  tw_device_profile_named ("h100", &p->dev, NULL);   /* replaced by the fit */
  g_strlcpy (p->dev.name, p->name, sizeof p->dev.name);
  return p;
}

void
tw_sim_profile_free (tw_sim_profile *p)
{
  if (p == NULL)
    return;
  g_free (p->name);
  g_free (p->host);
  g_array_unref (p->colls);
  g_ptr_array_unref (p->models);
  g_free (p);
}

char *
tw_sim_profile_path (const char *name)
{
  g_autofree char *file = g_strdup_printf ("%s.json", name);
  return g_build_filename (g_get_user_data_dir (), "twb", "sim", file, NULL);
}

int
tw_sim_profile_cores (const tw_sim_profile *p)
{
  return MAX (p->cores, 1);
}

gboolean
tw_sim_profile_link (const tw_sim_profile *p, double *latency, double *bandwidth)
{
  if (latency)
    *latency = p->latency;
  if (bandwidth)
    *bandwidth = p->bandwidth;
  return p->have_link;
}

static model_entry *
find_model (const tw_sim_profile *p, const char *model, int64_t batch)
{
  for (guint i = 0; i < p->models->len; i++)
    {
      model_entry *e = g_ptr_array_index (p->models, i);
      if (g_strcmp0 (e->model, model) == 0 && e->batch == batch)
        return e;
    }
  return NULL;
}

gboolean
tw_sim_profile_has_model (const tw_sim_profile *p, const char *model, int64_t batch)
{
  return find_model (p, model, batch) != NULL;
}

/* ---- files ----------------------------------------------------------- */

/* o's member as an object / array, or NULL (absent or another type). */
static JsonObject *
obj_member (JsonObject *o, const char *name)
{
  JsonNode *n = o ? json_object_get_member (o, name) : NULL;
  return n && JSON_NODE_HOLDS_OBJECT (n) ? json_node_get_object (n) : NULL;
}

static JsonArray *
arr_member (JsonObject *o, const char *name)
{
  JsonNode *n = o ? json_object_get_member (o, name) : NULL;
  return n && JSON_NODE_HOLDS_ARRAY (n) ? json_node_get_array (n) : NULL;
}

static gboolean
num (JsonObject *o, const char *member, double lo, double *out, const char *path, const char *where,
     GError **error)
{
  JsonNode *n = o ? json_object_get_member (o, member) : NULL;
  if (n == NULL || !JSON_NODE_HOLDS_VALUE (n)
      || (json_node_get_value_type (n) != G_TYPE_DOUBLE
          && json_node_get_value_type (n) != G_TYPE_INT64)
      || !(json_node_get_double (n) >= lo) || !isfinite (json_node_get_double (n)))
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                   "%s: %s\"%s\" must be a number of %g or more", path, where, member, lo);
      return FALSE;
    }
  *out = json_node_get_double (n);
  return TRUE;
}

tw_sim_profile *
tw_sim_profile_load (const char *name_or_path, GError **error)
{
  g_autofree char *path = strchr (name_or_path, '/') || g_str_has_suffix (name_or_path, ".json")
                            ? g_strdup (name_or_path)
                            : tw_sim_profile_path (name_or_path);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) e = NULL;
  if (!json_parser_load_from_file (parser, path, &e))
    {
      gboolean missing = g_error_matches (e, G_FILE_ERROR, G_FILE_ERROR_NOENT);
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG, "%s: %s%s", path, e->message,
                   missing && !strchr (name_or_path, '/')
                     ? " (make it with twb simulate MODEL.json --calibrate)" : "");
      return NULL;
    }
  JsonNode *root = json_parser_get_root (parser);
  JsonObject *o = root && JSON_NODE_HOLDS_OBJECT (root) ? json_node_get_object (root) : NULL;
  if (o == NULL)
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG, "%s: a profile is a JSON object", path);
      return NULL;
    }
  const char *name = json_object_get_string_member_with_default (o, "name", "local");
  g_autoptr (tw_sim_profile) p = tw_sim_profile_new (name);
  g_free (p->host);
  p->host = g_strdup (json_object_get_string_member_with_default (o, "host", ""));
  double v;
  if (!num (o, "cores", 1, &v, path, "", error))
    return NULL;
  p->cores = (int) v;
  JsonObject *r = obj_member (o, "roofline");
  if (r)
    {
      double mm, vec, bw, la;
      if (!num (r, "matmul_gflops", 1e-6, &mm, path, "roofline: ", error)
          || !num (r, "vector_gflops", 1e-6, &vec, path, "roofline: ", error)
          || !num (r, "mem_gbytes_per_s", 1e-6, &bw, path, "roofline: ", error)
          || !num (r, "launch_us", 0, &la, path, "roofline: ", error))
        return NULL;
      p->have_roofline = TRUE;
      p->dev.matmul_flops = mm * 1e9;
      p->dev.vector_flops = vec * 1e9;
      p->dev.mem_bw = bw * 1e9;
      p->dev.launch_s = la * 1e-6;
      p->dev.matmul_eff = p->dev.vector_eff = p->dev.mem_eff = 1;
    }
  JsonObject *l = obj_member (o, "link");
  if (l)
    {
      double lat, gbs;
      if (!num (l, "latency_us", 0, &lat, path, "link: ", error)
          || !num (l, "gbytes_per_s", 1e-9, &gbs, path, "link: ", error))
        return NULL;
      p->have_link = TRUE;
      p->latency = lat * 1e-6;
      p->bandwidth = gbs * 1e9;
    }
  JsonArray *cs = arr_member (o, "collectives");
  for (guint i = 0; cs && i < json_array_get_length (cs); i++)
    {
      JsonNode *en = json_array_get_element (cs, i);
      JsonObject *c = JSON_NODE_HOLDS_OBJECT (en) ? json_node_get_object (en) : NULL;
      double rk, ov, pb = 0;
      if (!num (c, "ranks", 2, &rk, path, "collectives: ", error)
          || !num (c, "overhead_us", 0, &ov, path, "collectives: ", error)
          || (json_object_has_member (c, "ns_per_byte")
              && !num (c, "ns_per_byte", 0, &pb, path, "collectives: ", error)))
        return NULL;
      coll_entry ce = { (int) rk, ov * 1e-6, pb * 1e-9 };
      g_array_append_val (p->colls, ce);
    }
  JsonArray *ms = arr_member (o, "models");
  for (guint i = 0; ms && i < json_array_get_length (ms); i++)
    {
      JsonNode *en = json_array_get_element (ms, i);
      JsonObject *m = JSON_NODE_HOLDS_OBJECT (en) ? json_node_get_object (en) : NULL;
      double batch, upd, ovh;
      const char *model = m ? json_object_get_string_member_with_default (m, "model", NULL) : NULL;
      if (model == NULL || !num (m, "batch", 1, &batch, path, "models: ", error)
          || !num (m, "update_ns_per_byte", 0, &upd, path, "models: ", error)
          || !num (m, "step_overhead_us", 0, &ovh, path, "models: ", error)
)
        {
          if (model == NULL)
            g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                         "%s: models: entry %u has no \"model\" name", path, i);
          return NULL;
        }
      model_entry *me = model_entry_new (model, (int64_t) batch);
      g_ptr_array_add (p->models, me);
      me->update_s_per_byte = upd * 1e-9;
      me->step_overhead_s = ovh * 1e-6;
      JsonArray *ls = arr_member (m, "lockstep");
      for (guint j = 0; ls && j < json_array_get_length (ls); j++)
        {
          JsonNode *ln = json_array_get_element (ls, j);
          JsonObject *lo = JSON_NODE_HOLDS_OBJECT (ln) ? json_node_get_object (ln) : NULL;
          double rk, sc, wt;
          if (!num (lo, "ranks", 2, &rk, path, "models: lockstep: ", error)
              || !num (lo, "compute_scale", 1e-3, &sc, path, "models: lockstep: ", error)
              || !num (lo, "wait_us", 0, &wt, path, "models: lockstep: ", error))
            return NULL;
          lock_entry le = { (int) rk, sc, wt * 1e-6 };
          g_array_append_val (me->lockstep, le);
        }
      JsonObject *nodes = obj_member (m, "nodes");
      g_autoptr (GList) ids = nodes ? json_object_get_members (nodes) : NULL;
      for (GList *it = ids; it; it = it->next)
        {
          JsonArray *a = arr_member (nodes, it->data);
          if (a == NULL || json_array_get_length (a) != 2
              || !(json_array_get_double_element (a, 0) >= 0)
              || !(json_array_get_double_element (a, 1) >= 0))
            {
              g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                           "%s: models: %s: node %s must be [forward µs, backward µs]", path,
                           model, (const char *) it->data);
              return NULL;
            }
          double *t = g_new (double, 2);
          t[0] = json_array_get_double_element (a, 0) * 1e-6;
          t[1] = json_array_get_double_element (a, 1) * 1e-6;
          g_hash_table_insert (me->nodes, g_strdup (it->data), t);
        }
    }
  return g_steal_pointer (&p);
}

/* A figure as written: 9 significant digits, so that the unit changes
 * (µs ↔ s) do not leave rounding noise and load → save gives the same
 * bytes. */
static double
tidy (double v)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd (buf, sizeof buf, "%.9g", v);
  return g_ascii_strtod (buf, NULL);
}

gboolean
tw_sim_profile_save (const tw_sim_profile *p, const char *path, GError **error)
{
  g_autofree char *dir = g_path_get_dirname (path);
  if (g_mkdir_with_parents (dir, 0755) != 0)
    {
      int e = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "%s: %s", dir,
                   g_strerror (e));
      return FALSE;
    }
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "name");
  json_builder_add_string_value (b, p->name);
  json_builder_set_member_name (b, "host");
  json_builder_add_string_value (b, p->host ? p->host : "");
  json_builder_set_member_name (b, "cores");
  json_builder_add_int_value (b, p->cores);
  if (p->have_roofline)
    {
      json_builder_set_member_name (b, "roofline");
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "matmul_gflops");
      json_builder_add_double_value (b, tidy (p->dev.matmul_flops * p->dev.matmul_eff / 1e9));
      json_builder_set_member_name (b, "vector_gflops");
      json_builder_add_double_value (b, tidy (p->dev.vector_flops * p->dev.vector_eff / 1e9));
      json_builder_set_member_name (b, "mem_gbytes_per_s");
      json_builder_add_double_value (b, tidy (p->dev.mem_bw * p->dev.mem_eff / 1e9));
      json_builder_set_member_name (b, "launch_us");
      json_builder_add_double_value (b, tidy (p->dev.launch_s * 1e6));
      json_builder_end_object (b);
    }
  if (p->have_link)
    {
      json_builder_set_member_name (b, "link");
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "latency_us");
      json_builder_add_double_value (b, tidy (p->latency * 1e6));
      json_builder_set_member_name (b, "gbytes_per_s");
      json_builder_add_double_value (b, tidy (p->bandwidth / 1e9));
      json_builder_end_object (b);
    }
  json_builder_set_member_name (b, "collectives");
  json_builder_begin_array (b);
  for (guint i = 0; i < p->colls->len; i++)
    {
      const coll_entry *c = &g_array_index (p->colls, coll_entry, i);
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "ranks");
      json_builder_add_int_value (b, c->ranks);
      json_builder_set_member_name (b, "overhead_us");
      json_builder_add_double_value (b, tidy (c->overhead_s * 1e6));
      json_builder_set_member_name (b, "ns_per_byte");
      json_builder_add_double_value (b, tidy (c->s_per_byte * 1e9));
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_set_member_name (b, "models");
  json_builder_begin_array (b);
  for (guint i = 0; i < p->models->len; i++)
    {
      const model_entry *e = g_ptr_array_index (p->models, i);
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "model");
      json_builder_add_string_value (b, e->model);
      json_builder_set_member_name (b, "batch");
      json_builder_add_int_value (b, e->batch);
      json_builder_set_member_name (b, "update_ns_per_byte");
      json_builder_add_double_value (b, tidy (e->update_s_per_byte * 1e9));
      json_builder_set_member_name (b, "step_overhead_us");
      json_builder_add_double_value (b, tidy (e->step_overhead_s * 1e6));
      json_builder_set_member_name (b, "lockstep");
      json_builder_begin_array (b);
      for (guint j = 0; j < e->lockstep->len; j++)
        {
          const lock_entry *le = &g_array_index (e->lockstep, lock_entry, j);
          json_builder_begin_object (b);
          json_builder_set_member_name (b, "ranks");
          json_builder_add_int_value (b, le->ranks);
          json_builder_set_member_name (b, "compute_scale");
          json_builder_add_double_value (b, tidy (le->compute_scale));
          json_builder_set_member_name (b, "wait_us");
          json_builder_add_double_value (b, tidy (le->wait_s * 1e6));
          json_builder_end_object (b);
        }
      json_builder_end_array (b);
      json_builder_set_member_name (b, "nodes");
      json_builder_begin_object (b);
      g_autoptr (GList) ids = g_hash_table_get_keys (e->nodes);
      ids = g_list_sort (ids, (GCompareFunc) strcmp);
      for (GList *it = ids; it; it = it->next)
        {
          const double *t = g_hash_table_lookup (e->nodes, it->data);
          json_builder_set_member_name (b, it->data);
          json_builder_begin_array (b);
          json_builder_add_double_value (b, tidy (t[0] * 1e6));
          json_builder_add_double_value (b, tidy (t[1] * 1e6));
          json_builder_end_array (b);
        }
      json_builder_end_object (b);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_end_object (b);
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  json_generator_set_pretty (gen, TRUE);
  gsize len = 0;
  g_autofree char *text = json_generator_to_data (gen, &len);
  g_autoptr (tw_save) s = tw_save_begin (path, error);
  return s && tw_save_write (s, text, len, error) && tw_save_write (s, "\n", 1, error)
         && tw_save_commit (g_steal_pointer (&s), error);
}

/* ---- compute ------------------------------------------------------------ */

typedef struct
{
  GHashTable *fwd, *bwd;      /* node id → double (this step's seconds) */
  double update;
} step_times;

static gboolean
on_op (const tw_event *ev, gpointer user)
{
  step_times *st = user;
  if (!ev->end || ev->ident == NULL)
    return TRUE;
  double dt = (ev->t_end - ev->t_start) * 1e-9;
  if (ev->kind == TW_EV_UPDATE)
    {
      st->update += dt;
      return TRUE;
    }
  if (ev->ident->n_nodes < 1 || ev->ident->nodes == NULL)
    return TRUE;
  /* A fused op's time shared among its nodes. */
  for (int k = 0; k < ev->ident->n_nodes; k++)
    {
      GHashTable *h = ev->kind == TW_EV_FORWARD ? st->fwd : st->bwd;
      double *v = g_hash_table_lookup (h, ev->ident->nodes[k]);
      if (v == NULL)
        {
          v = g_new0 (double, 1);
          g_hash_table_insert (h, g_strdup (ev->ident->nodes[k]), v);
        }
      *v += dt / ev->ident->n_nodes;
    }
  return TRUE;
}

static int
cmp_double (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

/* The mean of the middle 80 % (sorts a). */
static double
trimmed_mean (GArray *a)
{
  if (a->len == 0)
    return 0;
  g_array_sort (a, cmp_double);
  guint cut = a->len / 10, n = 0;
  double sum = 0;
  for (guint i = cut; i < a->len - cut; i++, n++)
    sum += g_array_index (a, double, i);
  return sum / n;
}

static double
median (GArray *a)
{
  if (a->len == 0)
    return 0;
  g_array_sort (a, cmp_double);
  return g_array_index (a, double, a->len / 2);
}

static gboolean
is_matrix_op (const char *op)
{
  return g_strcmp0 (op, "linear") == 0 || g_strcmp0 (op, "matmul") == 0
         || g_str_has_prefix (op ? op : "", "conv");
}

/* A copy of the model whose recipe takes `batch` rows a step. */
static tw_model *
model_at_batch (const tw_model *m0, int64_t batch, GError **error)
{
  g_autofree char *data = tw_model_to_data (m0, NULL);
  tw_model *m = tw_model_load_from_data (data, -1, m0->name ? m0->name : "model", error);
  if (m)
    m->recipe.batch_size = batch;
  return m;
}

/* One step of the trainer on the batcher's next batch (a new epoch when it
 * runs out), then with comm an 8-byte all-reduce: ranks in lockstep, as
 * data parallel's are.  *wall: the step's seconds.  With sync (may be
 * NULL), a second all-reduce follows at once: sync[0] is the first's
 * seconds (the ranks arrive apart), sync[1] the second's (they arrive
 * together). */
static gboolean
timed_step (tw_trainer *tr, tw_batcher *b, int64_t *epoch, int64_t batch, tw_comm *comm,
            double *wall, double *sync, GError **error)
{
  gint64 t0 = tw_now_ns ();
  tw_tensor *x, *y;
  if (!tw_batcher_next (b, &x, &y))
    {
      tw_batcher_reset (b, ++*epoch);
      if (!tw_batcher_next (b, &x, &y))
        {
          g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                       "the training set has fewer than %" G_GINT64_FORMAT " rows", batch);
          return FALSE;
        }
    }
  gboolean ok = tw_trainer_step (tr, x, y, NULL, error);
  tw_tensor_unref (x);
  tw_tensor_unref (y);
  gint64 t1 = tw_now_ns ();
  double one = 1;
  if (ok && comm)
    ok = tw_comm_allreduce_sync (comm, &one, 1, TW_F64, TW_REDUCE_SUM, NULL, error);
  gint64 t2 = tw_now_ns ();
  if (ok && comm && sync)
    ok = tw_comm_allreduce_sync (comm, &one, 1, TW_F64, TW_REDUCE_SUM, NULL, error);
  *wall = (t1 - t0) * 1e-9;
  if (sync)
    {
      sync[0] = (t2 - t1) * 1e-9;
      sync[1] = (tw_now_ns () - t2) * 1e-9;
    }
  return ok;
}

/* A trainer of m on one thread, as twb train's ranks take by default,
 * publishing on bus. */
static tw_trainer *
one_thread_trainer (tw_model *m, tw_bus *bus, GError **error)
{
  tw_trainer *tr = tw_trainer_new (m, error);
  if (tr)
    {
      tw_trainer_set_num_threads (tr, 1);
      tw_trainer_set_bus (tr, bus);
    }
  return tr;
}

/* The median step of a session run as `twb train` runs one (its default
 * options: one thread, the NaN watch, gradient norms; no evaluation),
 * `steps` after two of warm-up. */
static gboolean
session_step (const tw_model *m, const tw_dataset *train, int steps, double *out, GError **error)
{
  tw_session_options o;
  tw_session_options_init (&o);
  o.max_steps = steps + 2;
  o.evaluate_test = FALSE;
  g_autoptr (tw_session) s
    = tw_session_new (m, tw_dataset_new (train->name, train->x, train->y, train->n_classes),
                      NULL, NULL, &o, error);
  if (s == NULL || !tw_session_run (s, error))
    return FALSE;
  g_autoptr (GArray) ms = g_array_new (FALSE, FALSE, sizeof (double));
  for (;;)
    {
      tw_snapshot *sn = tw_session_pop (s, -1);
      if (sn == NULL)
        continue;
      if (sn->kind == TW_SNAP_METRICS && sn->step > 2)
        {
          double v = sn->step_ms * 1e-3;
          g_array_append_val (ms, v);
        }
      gboolean end = sn->kind == TW_SNAP_FINISHED;
      gboolean failed = end && sn->state != TW_SESSION_FINISHED;
      if (failed)
        g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG, "the training run failed: %s",
                     sn->message ? sn->message : "no reason given");
      tw_snapshot_free (sn);
      if (failed)
        return FALSE;
      if (end)
        break;
    }
  *out = median (ms);
  return ms->len > 0;
}

static gboolean
calibrate_compute (tw_sim_profile *p, const tw_model *m0, const tw_dataset *train, int64_t batch,
                   int steps, GError **error)
{
  g_autoptr (tw_model) m = model_at_batch (m0, batch, error);
  if (m == NULL)
    return FALSE;
  g_autoptr (tw_bus) bus = tw_bus_new ();
  g_autoptr (tw_trainer) tr = one_thread_trainer (m, bus, error);
  if (tr == NULL)
    return FALSE;
  step_times st = { g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free),
                    g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free), 0 };
  tw_bus_subscribe (bus, TW_EV_BIT (TW_EV_FORWARD) | TW_EV_BIT (TW_EV_BACKWARD)
                          | TW_EV_BIT (TW_EV_UPDATE), on_op, &st, NULL);
  g_autoptr (GHashTable) fwd = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                                      (GDestroyNotify) g_array_unref);
  g_autoptr (GHashTable) bwd = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                                      (GDestroyNotify) g_array_unref);
  g_autoptr (GArray) upd = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr (GArray) over = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr (GArray) walls = g_array_new (FALSE, FALSE, sizeof (double));
  tw_batcher *b = tw_batcher_new (train, batch, TRUE, m->recipe.seed, TRUE);
  tw_batcher_reset (b, 0);
  gboolean ok = TRUE;
  int64_t epoch = 0;
  /* Each op's time, step by step. */
  for (int i = 0; i < steps + 2 && ok; i++)
    {
      g_hash_table_remove_all (st.fwd);
      g_hash_table_remove_all (st.bwd);
      st.update = 0;
      double wall = 0;
      ok = timed_step (tr, b, &epoch, batch, NULL, &wall, NULL, error);
      if (!ok || i < 2)
        continue;
      g_array_append_val (walls, wall);
      double ops = st.update;
      for (int k = 0; k < 2; k++)
        {
          GHashTable *src = k ? st.bwd : st.fwd, *dst = k ? bwd : fwd;
          GHashTableIter it;
          gpointer key, val;
          g_hash_table_iter_init (&it, src);
          while (g_hash_table_iter_next (&it, &key, &val))
            {
              GArray *a = g_hash_table_lookup (dst, key);
              if (a == NULL)
                {
                  a = g_array_new (FALSE, FALSE, sizeof (double));
                  g_hash_table_insert (dst, g_strdup (key), a);
                }
              g_array_append_val (a, *(double *) val);
              ops += *(double *) val;
            }
        }
      g_array_append_val (upd, st.update);
      double o = MAX (wall - ops, 0);
      g_array_append_val (over, o);
    }
  tw_batcher_free (b);
  g_hash_table_unref (st.fwd);
  g_hash_table_unref (st.bwd);
  /* The step as twb train takes it (watching costs, and so do the
   * session's NaN watch and gradient norms): the watched times are scaled
   * to it. */
  double session = 0;
  if (!ok || !session_step (m, train, steps, &session, error))
    return FALSE;
  const char *name = m0->name ? m0->name : "model";
  model_entry *e = find_model (p, name, batch);
  if (e)
    g_ptr_array_remove (p->models, e);
  e = model_entry_new (name, batch);
  g_ptr_array_add (p->models, e);
  /* The nodes by id; the roofline fitted to them (matrix products: FLOPs
   * over time; the rest: bytes over time; the launch: the quickest op). */
  double mm_f = 0, mm_t = 0, v_b = 0, v_t = 0, quickest = INFINITY;
  double param_bytes = 0;
  for (int i = 0; i < tw_graph_n_nodes (m->graph); i++)
    {
      const tw_node *n = tw_graph_node (m->graph, i);
      for (int k = 0; k < n->n_params; k++)
        if (n->params[k].trainable && !n->share)
          param_bytes += 4.0 * tw_tinfo_numel (&n->params[k].info, NULL);
      GArray *a = g_hash_table_lookup (fwd, n->id), *c = g_hash_table_lookup (bwd, n->id);
      if (a == NULL && c == NULL)
        continue;
      double *t = g_new (double, 2);
      t[0] = a ? median (a) : 0;
      t[1] = c ? median (c) : 0;
      g_hash_table_insert (e->nodes, g_strdup (n->id), t);
      if (t[0] > 0)
        quickest = fmin (quickest, t[0]);
      /* Costs are per sample when inferred without a batch. */
      double rows = (double) batch;
      if (is_matrix_op (n->op_name))
        {
          mm_f += 3 * n->cost.flops * rows;
          mm_t += t[0] + t[1];
        }
      else
        {
          v_b += 2 * (n->cost.bytes_read + n->cost.bytes_written) * rows;
          v_t += t[0] + t[1];
        }
    }
  double scale = median (walls) > 0 ? session / median (walls) : 1;
  GHashTableIter it;
  gpointer val;
  g_hash_table_iter_init (&it, e->nodes);
  while (g_hash_table_iter_next (&it, NULL, &val))
    {
      ((double *) val)[0] *= scale;
      ((double *) val)[1] *= scale;
    }
  mm_t *= scale;
  v_t *= scale;
  quickest *= scale;
  e->update_s_per_byte = param_bytes > 0 ? scale * median (upd) / param_bytes : 0;
  e->step_overhead_s = scale * median (over);
  p->have_roofline = TRUE;
  p->dev.matmul_eff = p->dev.vector_eff = p->dev.mem_eff = 1;
  p->dev.launch_s = isfinite (quickest) ? quickest * 0.5 : 0;
  if (mm_t > 0 && mm_f > 0)
    p->dev.matmul_flops = mm_f / mm_t;
  if (v_t > 0 && v_b > 0)
    p->dev.mem_bw = v_b / v_t;
  p->dev.vector_flops = p->dev.matmul_flops / 4;
  return TRUE;
}

/* The measurements take one thread, as twb train's ranks do by default:
 * the trainer's, and the kernels' OpenMP team (this thread's count, unset
 * again after). */
gboolean
tw_sim_calibrate_compute (tw_sim_profile *p, const tw_model *m, const tw_dataset *train,
                          int64_t batch, int steps, GError **error)
{
  tw_set_thread_num_threads (1);
  gboolean ok = calibrate_compute (p, m, train, batch, steps, error);
  tw_set_thread_num_threads (0);
  return ok;
}

/* ---- links --------------------------------------------------------------- */

static gboolean
wait_free (tw_comm *c, tw_comm_req *r, GError **error)
{
  gboolean ok = tw_comm_wait (c, r, error);
  tw_comm_req_free (r);
  return ok;
}

gboolean
tw_sim_calibrate_links (tw_sim_profile *p, tw_comm *c, GError **error)
{
  int rank = tw_comm_rank (c), size = tw_comm_size (c);
  if (size < 2)
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                   "measuring links needs 2 ranks or more (it has %d)", size);
      return FALSE;
    }
  static const int64_t sizes[] = { 8, 64, 512, 4096, 32768, 262144, 1048576, 4194304 };
  g_autofree guint8 *buf = g_malloc0 (4194304);
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  int np = 0;
  double small = INFINITY;
  for (guint k = 0; k < G_N_ELEMENTS (sizes); k++)
    {
      int reps = sizes[k] >= 1048576 ? 5 : 20;
      double best = INFINITY;
      for (int i = 0; i < reps; i++)
        {
          gint64 t0 = tw_now_ns ();
          gboolean ok = TRUE;
          if (rank == 0)
            ok = wait_free (c, tw_comm_send (c, buf, sizes[k], TW_U8, 1, NULL), error)
                 && wait_free (c, tw_comm_recv (c, buf, sizes[k], TW_U8, 1, NULL), error);
          else if (rank == 1)
            ok = wait_free (c, tw_comm_recv (c, buf, sizes[k], TW_U8, 0, NULL), error)
                 && wait_free (c, tw_comm_send (c, buf, sizes[k], TW_U8, 0, NULL), error);
          if (!ok)
            return FALSE;
          best = fmin (best, (tw_now_ns () - t0) * 1e-9 / 2);
        }
      if (k == 0)
        small = best;
      /* Least squares of one-way time against bytes. */
      sx += (double) sizes[k];
      sy += best;
      sxx += (double) sizes[k] * sizes[k];
      sxy += (double) sizes[k] * best;
      np++;
    }
  double beta = (np * sxy - sx * sy) / (np * sxx - sx * sx);
  double alpha = small;       /* the latency: the smallest message's one-way time */
  if (!(beta > 0))
    beta = 1e-12;
  /* All-reduces as training posts them, each after a millisecond of
   * compute (the communication thread asleep meanwhile, as in a step):
   * their time less the ring's over the measured link, fitted as c + d·n,
   * is the collective's own cost here (the thread's wake-up and hand-off,
   * MPI's own algorithm). */
  static const int64_t ar_sizes[] = { 8, 4096, 65536, 1048576 };
  g_autofree double *big = g_new0 (double, 1048576 / sizeof (double));
  double rx = 0, ry = 0, rxx = 0, rxy = 0, first_excess = 0;
  int nr = 0;
  for (guint k = 0; k < G_N_ELEMENTS (ar_sizes); k++)
    {
      g_autoptr (GArray) ar = g_array_new (FALSE, FALSE, sizeof (double));
      int64_t count = ar_sizes[k] / (int64_t) sizeof (double);
      for (int i = 0; i < 15; i++)
        {
          if (!tw_comm_barrier_sync (c, error))
            return FALSE;
          volatile double burn = 0;
          for (gint64 t1 = tw_now_ns (); tw_now_ns () - t1 < 1000000;)
            for (int j = 0; j < 1000; j++)
              burn += j * 1e-9;
          gint64 t0 = tw_now_ns ();
          if (!tw_comm_allreduce_sync (c, big, MAX (count, 1), TW_F64, TW_REDUCE_SUM, NULL, error))
            return FALSE;
          double dt = (tw_now_ns () - t0) * 1e-9;
          if (i >= 3)
            g_array_append_val (ar, dt);
        }
      double n = (double) (MAX (count, 1) * sizeof (double));
      double ring = 2.0 * (size - 1) * (alpha + n / size * beta);
      double r = median (ar) - ring;
      if (k == 0)
        first_excess = r;
      rx += n;
      ry += r;
      rxx += n * n;
      rxy += n * r;
      nr++;
    }
  /* The fixed cost is the smallest all-reduce's excess (a regression's
   * intercept would take the large sizes' noise); the slope the fit's. */
  double d = (nr * rxy - rx * ry) / (nr * rxx - rx * rx);
  if (!(d > 0))
    d = 0;
  double over = MAX (first_excess, 0);
  /* Rank 0's figures are the profile's. */
  double fig[4] = { alpha, beta, over, d };
  if (!tw_comm_broadcast_sync (c, fig, 4, TW_F64, 0, NULL, error))
    return FALSE;
  p->have_link = TRUE;
  p->latency = fig[0];
  p->bandwidth = 1 / fig[1];
  for (guint i = 0; i < p->colls->len; i++)
    if (g_array_index (p->colls, coll_entry, i).ranks == size)
      g_array_remove_index (p->colls, i--);
  coll_entry ce = { size, fig[2], fig[3] };
  g_array_append_val (p->colls, ce);
  return TRUE;
}

/* How much longer a rank's compute takes when `ranks` share the cores:
 * ranks / cores when they outnumber them. */
static double
compute_share (const tw_sim_profile *p, int ranks)
{
  return ranks > p->cores ? (double) ranks / MAX (p->cores, 1) : 1;
}

/* The latest entry for model m (the one tw_sim_calibrate_compute added last). */
static model_entry *
latest_model (const tw_sim_profile *p, const char *model)
{
  for (guint i = p->models->len; i-- > 0;)
    {
      model_entry *e = g_ptr_array_index (p->models, i);
      if (g_strcmp0 (e->model, model) == 0)
        return e;
    }
  return NULL;
}

static coll_entry *
coll_at (const tw_sim_profile *p, int ranks)
{
  for (guint i = 0; i < p->colls->len; i++)
    if (g_array_index (p->colls, coll_entry, i).ranks == ranks)
      return &g_array_index (p->colls, coll_entry, i);
  return NULL;
}

static gboolean
calibrate_contention (tw_sim_profile *p, const tw_model *m0, const tw_dataset *train, int steps,
                      tw_comm *c, GError **error)
{
  int size = tw_comm_size (c), rank = tw_comm_rank (c);
  const char *name = m0->name ? m0->name : "model";
  model_entry *e = latest_model (p, name);
  coll_entry *ce = coll_at (p, size);
  if (e == NULL || ce == NULL || !p->have_link)
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                   "measuring %d ranks in lockstep needs %s measured alone and the links at "
                   "%d ranks first", size, name, size);
      return FALSE;
    }
  g_autoptr (tw_model) m = model_at_batch (m0, e->batch, error);
  if (m == NULL)
    return FALSE;
  g_autoptr (tw_bus) bus = tw_bus_new ();
  g_autoptr (tw_trainer) tr = one_thread_trainer (m, bus, error);
  if (tr == NULL)
    return FALSE;
  tw_batcher *b = tw_batcher_new (train, e->batch, TRUE, m->recipe.seed + rank, TRUE);
  tw_batcher_reset (b, 0);
  g_autoptr (GArray) alone = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr (GArray) walls = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr (GArray) syncs = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr (GArray) aligned = g_array_new (FALSE, FALSE, sizeof (double));
  gboolean ok = TRUE;
  int64_t epoch = 0;
  /* Warm-up, then rounds of rank 0 alone (the others wait in the barrier,
   * their threads asleep) and every rank at once, interleaved so that the
   * machine's drift (a shared host) falls on both alike. */
  for (int i = 0; i < 4 && ok; i++)
    {
      double wall = 0, sync[2];
      ok = timed_step (tr, b, &epoch, e->batch, c, &wall, sync, error);
    }
  const int per_round = 5;
  for (int round = 0; round * per_round < steps && ok; round++)
    {
      for (int i = 0; rank == 0 && i < per_round && ok; i++)
        {
          double wall = 0;
          ok = timed_step (tr, b, &epoch, e->batch, NULL, &wall, NULL, error);
          if (ok)
            g_array_append_val (alone, wall);
        }
      ok = ok && tw_comm_barrier_sync (c, error);
      for (int i = 0; i < per_round && ok; i++)
        {
          double wall = 0, sync[2] = { 0, 0 };
          ok = timed_step (tr, b, &epoch, e->batch, c, &wall, sync, error);
          if (ok)
            {
              g_array_append_val (walls, wall);
              g_array_append_val (syncs, sync[0]);
              g_array_append_val (aligned, sync[1]);
            }
        }
    }
  tw_batcher_free (b);
  if (!ok)
    return FALSE;
  /* Rank 0's figures are the profile's: its compute in lockstep over its
   * compute alone (cores, memory and the others' polling shared); the first
   * all-reduce's time beyond its ring over the link, what ending a step in
   * lockstep costs (the ranks arrive apart: the first waits for the last,
   * and wakes late); the second's, a collective's own cost.  Means of the
   * middle 80 %: ranks outnumbering the cores make steps bimodal (run
   * through, or pre-empted), which a median would take one side of. */
  double ring = 2.0 * (size - 1) * (p->latency + 8.0 / size / p->bandwidth);
  double fig[3] = { rank == 0 && trimmed_mean (alone) > 0
                      ? trimmed_mean (walls) / trimmed_mean (alone) : 1,
                    MAX (trimmed_mean (syncs) - ring, 0), MAX (trimmed_mean (aligned) - ring, 0) };
  if (!tw_comm_broadcast_sync (c, fig, 3, TW_F64, 0, NULL, error))
    return FALSE;
  for (guint i = 0; i < e->lockstep->len; i++)
    if (g_array_index (e->lockstep, lock_entry, i).ranks == size)
      g_array_remove_index (e->lockstep, i--);
  lock_entry le = { size, MAX (fig[0], 1e-3), fig[1] };
  g_array_append_val (e->lockstep, le);
  ce->overhead_s = fig[2];
  return TRUE;
}

gboolean
tw_sim_calibrate_contention (tw_sim_profile *p, const tw_model *m, const tw_dataset *train,
                             int steps, tw_comm *comm, GError **error)
{
  tw_set_thread_num_threads (1);
  gboolean ok = calibrate_contention (p, m, train, steps, comm, error);
  tw_set_thread_num_threads (0);
  return ok;
}

/* ---- use ------------------------------------------------------------------ */

void
tw_sim_profile_merge_links (tw_sim_profile *p, const tw_sim_profile *from, gboolean take_link)
{
  for (guint i = 0; i < from->colls->len; i++)
    {
      coll_entry c = g_array_index (from->colls, coll_entry, i);
      for (guint j = 0; j < p->colls->len; j++)
        if (g_array_index (p->colls, coll_entry, j).ranks == c.ranks)
          g_array_remove_index (p->colls, j--);
      g_array_append_val (p->colls, c);
    }
  for (guint i = 0; i < from->models->len; i++)
    {
      const model_entry *f = g_ptr_array_index (from->models, i);
      model_entry *e = find_model (p, f->model, f->batch);
      for (guint j = 0; e && j < f->lockstep->len; j++)
        {
          lock_entry l = g_array_index (f->lockstep, lock_entry, j);
          for (guint k = 0; k < e->lockstep->len; k++)
            if (g_array_index (e->lockstep, lock_entry, k).ranks == l.ranks)
              g_array_remove_index (e->lockstep, k--);
          g_array_append_val (e->lockstep, l);
        }
    }
  if (take_link && from->have_link)
    {
      p->have_link = TRUE;
      p->latency = from->latency;
      p->bandwidth = from->bandwidth;
    }
}

static int
nearest_coll (const tw_sim_profile *p, int ranks)
{
  int best = -1;
  for (guint i = 0; i < p->colls->len; i++)
    {
      const coll_entry *c = &g_array_index (p->colls, coll_entry, i);
      if (best < 0 || abs (c->ranks - ranks)
                          < abs (g_array_index (p->colls, coll_entry, best).ranks - ranks))
        best = (int) i;
    }
  return best;
}

double
tw_sim_profile_collective_overhead (const tw_sim_profile *p, int ranks)
{
  int best = nearest_coll (p, ranks);
  return best >= 0 ? g_array_index (p->colls, coll_entry, best).overhead_s : 0;
}

/* The model's lockstep entry at the rank count nearest `ranks`, or NULL. */
static const lock_entry *
nearest_lock (const tw_sim_profile *p, const char *model, int64_t batch, int ranks)
{
  const model_entry *e = find_model (p, model, batch);
  const lock_entry *best = NULL;
  for (guint i = 0; e && i < e->lockstep->len; i++)
    {
      const lock_entry *l = &g_array_index (e->lockstep, lock_entry, i);
      if (best == NULL || abs (l->ranks - ranks) < abs (best->ranks - ranks))
        best = l;
    }
  return best;
}

double
tw_sim_profile_compute_scale (const tw_sim_profile *p, const char *model, int64_t batch,
                              int ranks)
{
  if (ranks <= 1)
    return 1;
  /* The nearest count measured: its factor over its share of the cores,
   * carried to this count's share. */
  const lock_entry *n = nearest_lock (p, model, batch, ranks);
  if (n == NULL)
    return compute_share (p, ranks);
  return n->ranks == ranks ? n->compute_scale
                           : n->compute_scale / compute_share (p, n->ranks) * compute_share (p, ranks);
}

double
tw_sim_profile_lockstep (const tw_sim_profile *p, const char *model, int64_t batch, int ranks)
{
  const lock_entry *n = ranks > 1 ? nearest_lock (p, model, batch, ranks) : NULL;
  return n ? n->wait_s : 0;
}

gboolean
tw_sim_profile_apply (const tw_sim_profile *p, const char *model, int64_t batch, int ranks,
                      tw_sim_dp_options *o, tw_device_profile *d, tw_topo **topo, GError **error)
{
  *d = p->dev;
  g_strlcpy (d->name, p->name, sizeof d->name);
  d->memory_bytes = 1e15;     /* a CPU's memory: not the limit here */
  model_entry *e = find_model (p, model, batch);
  o->node_times = e ? e->nodes : NULL;
  o->update_s_per_byte = e ? e->update_s_per_byte : 0;
  o->step_overhead_s = e ? e->step_overhead_s : 0;
  o->compute_scale = tw_sim_profile_compute_scale (p, model, batch, ranks);
  o->lockstep_s = tw_sim_profile_lockstep (p, model, batch, ranks);
  o->collective_overhead_s = tw_sim_profile_collective_overhead (p, ranks);
  int nc = nearest_coll (p, ranks);
  o->collective_s_per_byte = nc >= 0 ? g_array_index (p->colls, coll_entry, nc).s_per_byte : 0;
  if (ranks > 1 && !p->have_link)
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                   "profile %s measured no link between ranks (calibrate with 2 ranks or more)",
                   p->name);
      return FALSE;
    }
  /* One machine: every rank a link to a switch, half the latency each. */
  tw_topo *t = tw_topo_new ();
  int sw = tw_topo_add_switch (t, "shared memory");
  for (int r = 0; r < ranks; r++)
    {
      g_autofree char *name = g_strdup_printf ("rank%d", r);
      tw_topo_add_link (t, tw_topo_add_device (t, name, 0), sw,
                        p->have_link ? p->bandwidth : 1e12, p->have_link ? p->latency / 2 : 0,
                        TW_LINK_SHM, NULL);
    }
  *topo = t;
  return TRUE;
}
