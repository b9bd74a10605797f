/* twb-run-store.c — every run of a model, kept as CSV + JSON. */
#define G_LOG_DOMAIN "twb-run-store"

#include "ui/twb-run-store.h"
#include "engine/fileutil.h"
#include "engine/json-text.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void
twb_run_record_free (TwbRunRecord *r)
{
  if (r == NULL)
    return;
  g_free (r->id);
  g_free (r->csv_path);
  g_free (r->json_path);
  g_free (r->mode);
  g_free (r->state);
  g_free (r->summary);
  g_free (r->label);
  g_free (r);
}

/* "<file name less extension>-<10 hex digits of the SHA-1 of its absolute path>". */
static char *
path_key (const char *model_path)
{
  g_autofree char *abs = g_canonicalize_filename (model_path, NULL);
  g_autofree char *base = g_path_get_basename (abs);
  char *dot = strrchr (base, '.');
  if (dot && dot != base)
    *dot = '\0';
  g_autofree char *hash = g_compute_checksum_for_string (G_CHECKSUM_SHA1, abs, -1);
  hash[10] = '\0';
  return g_strdup_printf ("%s-%s", base, hash);
}

char *
twb_run_store_dir_for_id (const char *model_id)
{
  g_autofree char *key = g_strdup (model_id && *model_id ? model_id : "model");
  /* No separators or dots in the folder's name. */
  g_strcanon (key, G_CSET_a_2_z G_CSET_A_2_Z G_CSET_DIGITS "-_", '_');
  return g_build_filename (g_get_user_data_dir (), "twb", "runs", key, NULL);
}

char *
twb_run_store_new_model_id (const char *model_path)
{
  if (model_path)
    return path_key (model_path);
  g_autofree char *uuid = g_uuid_string_random ();
  return g_strconcat ("model-", uuid, NULL);
}

char *
twb_run_store_dir_for (const char *model_path, const char *model_name)
{
  g_autofree char *key = model_path ? path_key (model_path)
                                    : g_strdup_printf ("unsaved-%s", model_name && model_name[0]
                                                                        ? model_name : "model");
  return twb_run_store_dir_for_id (key);
}

static int
run_number (const char *name)
{
  if (!g_str_has_prefix (name, "run-"))
    return -1;
  char *end = NULL;
  long n = strtol (name + 4, &end, 10);
  return end && (strcmp (end, ".json") == 0 || strcmp (end, ".csv") == 0) && n > 0 && n < G_MAXINT
           ? (int) n
           : -1;
}

char *
twb_run_store_next_id (const char *dir)
{
  int max = 0;
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name (d)))
    max = MAX (max, run_number (name));
  return g_strdup_printf ("run-%d", max + 1);
}

static void
member_double (JsonBuilder *b, const char *name, double v)
{
  json_builder_set_member_name (b, name);
  if (isfinite (v))
    json_builder_add_double_value (b, v);
  else
    json_builder_add_null_value (b);
}

static double
last_value (TwbMetrics *m, const char *run, const char *name)
{
  guint s = twb_metrics_find_series (m, run, name);
  if (s == G_MAXUINT)
    return NAN;
  for (gsize i = twb_metrics_series_len (m, s); i > 0; i--)
    {
      double x, y;
      twb_metrics_get_point (m, s, i - 1, &x, &y);
      if (isfinite (y))
        return y;
    }
  return NAN;
}

gboolean
twb_run_store_save (const char *dir, TwbRun *run, TwbMetrics *metrics, const tw_model *model,
                    GError **error)
{
  gboolean external = twb_run_is_external (run);
  tw_trainer *trainer = external ? NULL : tw_session_trainer (twb_run_get_session (run));
  const tw_snapshot *end = twb_run_get_result (run);
  TwbRunProgress pr;
  twb_run_get_progress (run, &pr);
  if ((trainer == NULL && !external) || (end && end->step == 0) || (external && pr.step == 0))
    return TRUE;
  if (g_mkdir_with_parents (dir, 0755) != 0)
    {
      int e = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e),
                   "cannot make the runs folder %s: %s", dir, g_strerror (e));
      return FALSE;
    }
  const char *id = twb_run_get_id (run);
  /* This run's series alone, through a model of their own. */
  g_autoptr (TwbMetrics) mine = twb_metrics_new ();
  for (guint s = 0; s < twb_metrics_n_series (metrics); s++)
    {
      if (g_strcmp0 (twb_metrics_series_run (metrics, s), id) != 0)
        continue;
      guint t = twb_metrics_add_series (mine, id, twb_metrics_series_name (metrics, s));
      gsize n = twb_metrics_series_len (metrics, s);
      g_autofree double *xs = g_new (double, MAX (n, 1));
      g_autofree double *ys = g_new (double, MAX (n, 1));
      for (gsize i = 0; i < n; i++)
        twb_metrics_get_point (metrics, s, i, &xs[i], &ys[i]);
      twb_metrics_append_many (mine, t, xs, ys, n);
    }
  g_autofree char *csv = g_strdup_printf ("%s/%s.csv", dir, id);
  if (!twb_metrics_export_csv (mine, csv, error))
    return FALSE;

  const tw_snapshot *res = end;
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "format");
  json_builder_add_string_value (b, "twb-run");
  json_builder_set_member_name (b, "id");
  json_builder_add_string_value (b, id);
  json_builder_set_member_name (b, "created");
  json_builder_add_int_value (b, g_get_real_time () / G_USEC_PER_SEC);
  json_builder_set_member_name (b, "state");
  json_builder_add_string_value (b, tw_session_state_name (twb_run_get_state (run)));
  json_builder_set_member_name (b, "mode");
  json_builder_add_string_value (
    b, trainer && tw_trainer_get_mode (trainer) == TW_MODE_COMPILED ? "compiled" : "eager");
  if (twb_run_get_label (run))
    {
      json_builder_set_member_name (b, "label");
      json_builder_add_string_value (b, twb_run_get_label (run));
    }
  if (twb_run_get_command (run))
    {
      json_builder_set_member_name (b, "command");
      json_builder_add_string_value (b, twb_run_get_command (run));
    }
  json_builder_set_member_name (b, "steps");
  json_builder_add_int_value (b, res ? res->step : pr.step);
  member_double (b, "final_loss", last_value (metrics, id, "loss"));
  member_double (b, "test_loss", res ? res->test_loss : NAN);
  member_double (b, "test_accuracy", res ? res->test_accuracy : NAN);
  if (twb_run_get_error (run))
    {
      json_builder_set_member_name (b, "error");
      json_builder_add_string_value (b, twb_run_get_error (run));
    }
  const tw_recipe *r = &model->recipe;
  json_builder_set_member_name (b, "recipe");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "optimizer");
  json_builder_add_string_value (b, tw_optimizer_type_name (r->optimizer.type));
  member_double (b, "lr", r->optimizer.lr);
  member_double (b, "momentum", r->optimizer.momentum);
  member_double (b, "weight_decay", r->optimizer.weight_decay);
  json_builder_set_member_name (b, "batch_size");
  json_builder_add_int_value (b, r->batch_size);
  json_builder_set_member_name (b, "epochs");
  json_builder_add_int_value (b, r->epochs);
  json_builder_set_member_name (b, "seed");
  json_builder_add_int_value (b, (gint64) r->seed);
  json_builder_set_member_name (b, "dataset");
  json_builder_add_string_value (b, r->dataset ? r->dataset : "");
  json_builder_end_object (b);
  json_builder_end_object (b);
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  json_generator_set_pretty (gen, TRUE);
  gsize len = 0;
  g_autofree char *text = json_generator_to_data (gen, &len);
  g_autofree char *json = g_strdup_printf ("%s/%s.json", dir, id);
  return tw_file_save (json, text, len, error);
}

static double
get_double (JsonObject *o, const char *name)
{
  JsonNode *n = json_object_get_member (o, name);
  return n && JSON_NODE_HOLDS_VALUE (n) ? json_node_get_double (n) : NAN;
}

static const char *
get_string (JsonObject *o, const char *name)
{
  JsonNode *n = json_object_get_member (o, name);
  return n && JSON_NODE_HOLDS_VALUE (n) && json_node_get_value_type (n) == G_TYPE_STRING
           ? json_node_get_string (n) : NULL;
}

static TwbRunRecord *
read_record (const char *dir, const char *name)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  /* A regular file, held to the rule of every JSON text read
   * (engine/json-text.h). */
  g_autofree char *text = NULL;
  gsize len = 0;
  g_autoptr (GError) error = NULL;
  g_autoptr (JsonParser) p = NULL;
  if (tw_file_read_regular (path, TW_FILE_MAX_TEXT, &text, &len, &error))
    p = tw_json_parse (text, len, path, &error);
  if (p == NULL)
    {
      g_message ("skipping a run record: %s", error->message);
      return NULL;
    }
  JsonNode *root = json_parser_get_root (p);
  JsonObject *o = root && JSON_NODE_HOLDS_OBJECT (root) ? json_node_get_object (root) : NULL;
  if (o == NULL || g_strcmp0 (get_string (o, "format"), "twb-run") != 0 || !get_string (o, "id"))
    {
      g_message ("skipping %s: not a run record", path);
      return NULL;
    }
  TwbRunRecord *r = g_new0 (TwbRunRecord, 1);
  r->id = g_strdup (get_string (o, "id"));
  r->json_path = g_steal_pointer (&path);
  r->csv_path = g_strdup_printf ("%s/%s.csv", dir, r->id);
  r->created = (gint64) get_double (o, "created");
  r->mode = g_strdup (get_string (o, "mode") ? get_string (o, "mode") : "eager");
  r->state = g_strdup (get_string (o, "state") ? get_string (o, "state") : "finished");
  double steps = get_double (o, "steps");
  r->steps = isfinite (steps) ? (int64_t) steps : 0;
  r->final_loss = get_double (o, "final_loss");
  r->label = g_strdup (get_string (o, "label"));
  r->test_accuracy = get_double (o, "test_accuracy");
  JsonNode *rn = json_object_get_member (o, "recipe");
  if (rn && JSON_NODE_HOLDS_OBJECT (rn))
    {
      JsonObject *ro = json_node_get_object (rn);
      const char *opt = get_string (ro, "optimizer");
      r->summary = g_strdup_printf ("%s lr %g · batch %.0f · %.0f epochs", opt ? opt : "?",
                                    get_double (ro, "lr"), get_double (ro, "batch_size"),
                                    get_double (ro, "epochs"));
    }
  return r;
}

static int
newest_first (gconstpointer a, gconstpointer b)
{
  const TwbRunRecord *x = *(TwbRunRecord *const *) a, *y = *(TwbRunRecord *const *) b;
  int nx = run_number (strrchr (x->json_path, '/') + 1), ny = run_number (strrchr (y->json_path, '/') + 1);
  return ny - nx;
}

GPtrArray *
twb_run_store_list (const char *dir)
{
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) twb_run_record_free);
  g_autoptr (GDir) d = dir ? g_dir_open (dir, 0, NULL) : NULL;
  const char *name;
  while (d && (name = g_dir_read_name (d)))
    {
      if (!g_str_has_suffix (name, ".json") || run_number (name) < 0)
        continue;
      TwbRunRecord *r = read_record (dir, name);
      if (r)
        g_ptr_array_add (out, r);
    }
  g_ptr_array_sort (out, newest_first);
  return out;
}
