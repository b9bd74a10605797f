/* twb-whatif-sweep.c — the What if page's sweep, figure for figure as
 * `twb simulate --sweep` computes it (app/twb-simulate.c: the nodes a
 * rank count takes, the global batch, the one-rank baseline of the
 * scaling efficiency, a calibrated profile's options). */
#define G_LOG_DOMAIN "twb-whatif"

#include "ui/twb-whatif-sweep.h"

#include "engine/sim/calibrate.h"

#include <math.h>
#include <string.h>

void
twb_whatif_config_init (TwbWhatifConfig *c)
{
  memset (c, 0, sizeof *c);
  static const int defaults[] = { 8, 64, 512, 1024 };
  for (guint i = 0; i < G_N_ELEMENTS (defaults); i++)
    c->ranks[c->n_ranks++] = defaults[i];
  g_strlcpy (c->topology, "nvlink+ib", sizeof c->topology);
  c->devices_per_node = 8;
  g_strlcpy (c->device, "h100", sizeof c->device);
  c->algo = TW_ALGO_RING;
  c->bucket_mb = 25;
}

gboolean
twb_whatif_parse_ranks (const char *text, TwbWhatifConfig *c, GError **error)
{
  g_auto (GStrv) parts = g_strsplit_set (text ? text : "", ", ;", -1);
  int n = 0, ranks[TWB_WHATIF_MAX_RANKS];
  for (char **p = parts; *p; p++)
    {
      if (!**p)
        continue;
      gint64 v = 0;
      if (!g_ascii_string_to_signed (*p, 10, 1, 1 << 20, &v, NULL))
        {
          g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                       "Ranks: \"%s\" is not a rank count from 1 to 1048576", *p);
          return FALSE;
        }
      if (n == TWB_WHATIF_MAX_RANKS)
        {
          g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                       "Ranks: at most %d rank counts in one sweep", TWB_WHATIF_MAX_RANKS);
          return FALSE;
        }
      ranks[n++] = (int) v;
    }
  if (n == 0)
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                   "Ranks: none given (a list such as 8, 64, 512, 1024)");
      return FALSE;
    }
  memcpy (c->ranks, ranks, n * sizeof *ranks);
  c->n_ranks = n;
  return TRUE;
}

char *
twb_whatif_ranks_text (const TwbWhatifConfig *c)
{
  GString *s = g_string_new (NULL);
  for (int i = 0; i < c->n_ranks; i++)
    g_string_append_printf (s, "%s%d", i ? "," : "", c->ranks[i]);
  return g_string_free (s, FALSE);
}

gboolean
twb_whatif_local_available (void)
{
  g_autofree char *path = tw_sim_profile_path ("local");
  return g_file_test (path, G_FILE_TEST_IS_REGULAR);
}

static gboolean
is_local (const TwbWhatifConfig *c)
{
  return strcmp (c->device, "local") == 0;
}

char *
twb_whatif_command_line (const TwbWhatifConfig *c, const char *model_path)
{
  const char *mp = model_path ? model_path : "MODEL.json";
  /* An unquoted path reads better where quoting is not needed. */
  g_autofree char *model = strpbrk (mp, " \t\n'\"\\$`*?[]{}()<>|&;#~!") == NULL
                             ? g_strdup (mp) : g_shell_quote (mp);
  g_autofree char *ranks = twb_whatif_ranks_text (c);
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "twb simulate %s --sweep ranks=%s", model, ranks);
  /* A local profile brings its own topology (this machine's measured
   * link); --topology would replace it. */
  if (!is_local (c))
    g_string_append_printf (s, " --topology %s", c->topology);
  /* 8 is the default, which also lets fewer ranks than a node make one
   * node of them: naming it would refuse those. */
  if (c->devices_per_node != 8)
    g_string_append_printf (s, " --devices-per-node %d", c->devices_per_node);
  char mb[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd (mb, sizeof mb, "%g", c->bucket_mb);
  g_string_append_printf (s, " --device %s --algo %s --bucket-mb %s", c->device,
                          tw_algo_name (c->algo), mb);
  if (c->batch > 0)
    g_string_append_printf (s, " --batch %" G_GINT64_FORMAT, c->batch);
  return g_string_free (s, FALSE);
}

/* As twb simulate's shape_for without --nodes: ranks / devices per node
 * whole nodes, or one node of them when fewer than a node and the
 * devices per node are the default. */
static gboolean
shape_for (int ranks, int per_opt, int *nodes, int *per, GError **error)
{
  int per_node = per_opt > 0 ? per_opt : 8;
  if (ranks <= per_node && per_opt <= 0)
    {
      *nodes = 1;
      *per = ranks;
      return TRUE;
    }
  if (ranks % per_node != 0)
    {
      g_set_error (error, TW_SIM_ERROR, TW_SIM_ERROR_ARG,
                   "%d ranks are not whole nodes of %d devices (%d or %d ranks would be)",
                   ranks, per_node, ranks / per_node * per_node, (ranks / per_node + 1) * per_node);
      return FALSE;
    }
  *nodes = ranks / per_node;
  *per = per_node;
  return TRUE;
}

static void
fail (TwbWhatifResult *res, int ranks, const GError *error)
{
  res->error = ranks > 0 ? g_strdup_printf ("At %d ranks: %s", ranks, error->message)
                         : g_strdup (error->message);
}

TwbWhatifResult *
twb_whatif_run (const tw_graph *g, const char *model_name, int64_t recipe_batch,
                const TwbWhatifConfig *c)
{
  return twb_whatif_run_row (g, model_name, recipe_batch, c, -1, NULL);
}

TwbWhatifResult *
twb_whatif_run_row (const tw_graph *g, const char *model_name, int64_t recipe_batch,
                    const TwbWhatifConfig *c, int row, GArray *spans)
{
  TwbWhatifResult *res = g_new0 (TwbWhatifResult, 1);
  res->config = *c;
  res->rows = g_array_new (FALSE, TRUE, sizeof (TwbWhatifRow));
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_sim_profile) local = NULL;
  tw_device_profile dev;
  tw_sim_dp_options o;
  tw_sim_dp_options_init (&o);
  o.algo = c->algo;
  o.bucket_mb = c->bucket_mb;
  if (is_local (c))
    {
      local = tw_sim_profile_load ("local", &error);
      if (local == NULL)
        {
          fail (res, 0, error);
          return res;
        }
    }
  else if (!tw_device_profile_named (c->device, &dev, &error))
    {
      fail (res, 0, error);
      return res;
    }
  if (recipe_batch <= 0)
    recipe_batch = 1;
  int per_opt = c->devices_per_node == 8 ? 0 : c->devices_per_node;
  double sps1 = NAN;
  int last = row >= 0 ? MIN (row, c->n_ranks - 1) : c->n_ranks - 1;
  for (int i = 0; i <= last; i++)
    {
      int r = c->ranks[i];
      int nn = 0, pp = 0;
      if (!shape_for (r, per_opt, &nn, &pp, &error))
        {
          fail (res, 0, error);
          return res;
        }
      g_autoptr (tw_topo) own = tw_topo_cluster (nn, pp, c->topology, &error);
      if (own == NULL)
        {
          fail (res, r, error);
          return res;
        }
      tw_topo *t = own;
      int64_t gb = c->batch > 0 ? c->batch : recipe_batch * r;
      g_autoptr (tw_topo) local_topo = NULL;
      if (local)
        {
          int64_t rb = (gb + r - 1) / r;
          if (!tw_sim_profile_apply (local, model_name ? model_name : "", rb, r, &o, &dev,
                                     &local_topo, &error))
            {
              fail (res, r, error);
              return res;
            }
          if (i == 0 && !tw_sim_profile_has_model (local, model_name ? model_name : "", rb))
            res->note = g_strdup_printf (
              "The local profile has not measured this model at %" G_GINT64_FORMAT
              " rows a rank: its fitted roofline stands in (twb simulate MODEL --calibrate).", rb);
          t = local_topo;
        }
      /* The baseline of the scaling efficiency: one rank with its own
       * share of the batch (once for weak scaling, per row for a fixed
       * global batch), as twb simulate takes it. */
      if (isnan (sps1) || c->batch > 0)
        {
          g_autoptr (tw_topo) one = tw_topo_cluster (1, 1, "nvlink+ib", NULL);
          tw_sim_dp_options o1 = o;
          o1.ranks = 1;
          o1.compute_scale = 1;
          tw_sim_dp_result r1;
          if (!tw_sim_dp_step (g, MAX (gb / r, 1), &dev, one, &o1, &r1, &error))
            {
              fail (res, 0, error);
              return res;
            }
          sps1 = r1.samples_per_s;
        }
      TwbWhatifRow w = { .ranks = r, .batch = gb };
      o.ranks = r;
      o.spans = i == row ? spans : NULL;
      if (!tw_sim_dp_step (g, gb, &dev, t, &o, &w.r, &error))
        {
          fail (res, r, error);
          return res;
        }
      if (res->device_name == NULL)
        res->device_name = g_strdup (dev.name);
      w.efficiency = sps1 > 0 ? w.r.samples_per_s / r / sps1 : NAN;
      w.comm_share = w.r.step_s > 0 ? w.r.comm_s / w.r.step_s : 0;
      w.memory = w.r.param_bytes + w.r.grad_mem_bytes + w.r.optimizer_bytes
                 + w.r.activation_bytes;
      if (w.memory > dev.memory_bytes)
        {
          g_autofree char *need = g_format_size ((guint64) w.memory);
          g_autofree char *have = g_format_size ((guint64) dev.memory_bytes);
          res->error = g_strdup_printf ("At %d ranks: does not fit: each %s needs %s of its %s; "
                                        "more ranks or a smaller global batch", r, dev.name,
                                        need, have);
          return res;
        }
      w.link = w.r.busiest_link >= 0 ? g_strdup (tw_topo_link_name (t, w.r.busiest_link)) : NULL;
      g_array_append_val (res->rows, w);
    }
  return res;
}

void
twb_whatif_result_free (TwbWhatifResult *r)
{
  if (r == NULL)
    return;
  for (guint i = 0; i < r->rows->len; i++)
    g_free (g_array_index (r->rows, TwbWhatifRow, i).link);
  g_array_unref (r->rows);
  g_free (r->device_name);
  g_free (r->error);
  g_free (r->note);
  g_free (r);
}
