/* twb-cluster-dialog.c — the settings of a run on several processes. */
#define G_LOG_DOMAIN "twb-cluster"

#include "ui/twb-cluster-dialog.h"
#include "app/twb-dist.h"

#include <math.h>
#include <string.h>

void
twb_cluster_config_init (TwbClusterConfig *c)
{
  memset (c, 0, sizeof *c);
  c->ranks = 2;
  c->parallel = g_strdup ("data");
  c->algo = g_strdup ("mpi");
  c->async_staleness = -1;
  c->bucket_mb = 25;
  c->sim_device = g_strdup ("h100");
  c->sim_topology = g_strdup ("nvlink+ib");
}

void
twb_cluster_config_clear (TwbClusterConfig *c)
{
  g_clear_pointer (&c->parallel, g_free);
  g_clear_pointer (&c->algo, g_free);
  g_clear_pointer (&c->compress, g_free);
  g_clear_pointer (&c->sim_device, g_free);
  g_clear_pointer (&c->sim_topology, g_free);
}

void
twb_cluster_config_copy (TwbClusterConfig *dst, const TwbClusterConfig *src)
{
  *dst = *src;
  dst->parallel = g_strdup (src->parallel);
  dst->algo = g_strdup (src->algo);
  dst->compress = g_strdup (src->compress);
  dst->sim_device = g_strdup (src->sim_device);
  dst->sim_topology = g_strdup (src->sim_topology);
}

static gboolean
is_pipeline (const TwbClusterConfig *c)
{
  return g_strcmp0 (c->parallel, "pipeline") == 0 || g_strcmp0 (c->parallel, "hybrid") == 0;
}

gboolean
twb_cluster_config_check (const TwbClusterConfig *c, gint64 batch, GError **error)
{
  if (c->simulated && is_pipeline (c))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "A simulated cluster trains data parallel; pipeline and hybrid runs are "
                   "for MPI ranks");
      return FALSE;
    }
  if (c->simulated && (c->ranks < 1 || c->ranks > 256))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "A simulated cluster trains 1 to 256 virtual ranks, not %d", c->ranks);
      return FALSE;
    }
  twb_dist_args a;
  twb_dist_args_init (&a);
  a.ranks = c->ranks;
  a.ranks_set = TRUE;
  a.parallel = g_strdup (c->parallel);
  a.algo = g_strdup (c->algo);
  a.bucket_mb = c->bucket_mb;
  a.local_sgd = c->local_sgd;
  a.async_staleness = c->async_staleness;
  a.compress = g_strdup (c->compress);
  if (g_strcmp0 (c->parallel, "hybrid") == 0)
    a.stages = c->stages;
  if (is_pipeline (c))
    a.micro_batches = c->micro_batches;
  gboolean ok = twb_dist_args_check (&a, batch, error);
  twb_dist_args_clear (&a);
  return ok;
}

static char *
num (double v)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  return g_strdup (g_ascii_formatd (buf, sizeof buf, "%g", v));
}

char **
twb_cluster_config_argv (const TwbClusterConfig *c, const char *program, const char *model_path)
{
  GStrvBuilder *b = g_strv_builder_new ();
  g_strv_builder_add_many (b, program, c->simulated ? "simulate" : "train", model_path, NULL);
  if (c->simulated)
    g_strv_builder_add_many (b, "--mode", "train", NULL);
  g_autofree char *ranks = g_strdup_printf ("%d", c->ranks);
  g_strv_builder_add_many (b, "--ranks", ranks, NULL);
  if (c->simulated)
    {
      /* Nodes of 8 devices, or one node of fewer. */
      int per = c->ranks <= 8 || c->ranks % 8 ? c->ranks : 8;
      g_autofree char *nodes = g_strdup_printf ("%d", c->ranks / MAX (per, 1));
      g_autofree char *pn = g_strdup_printf ("%d", per);
      g_strv_builder_add_many (b, "--nodes", nodes, "--devices-per-node", pn, NULL);
      if (c->sim_device && strcmp (c->sim_device, "h100") != 0)
        g_strv_builder_add_many (b, "--device", c->sim_device, NULL);
      if (c->sim_topology && strcmp (c->sim_topology, "nvlink+ib") != 0)
        g_strv_builder_add_many (b, "--topology", c->sim_topology, NULL);
    }
  else if (c->parallel && strcmp (c->parallel, "data") != 0)
    g_strv_builder_add_many (b, "--parallel", c->parallel, NULL);
  if (c->algo && strcmp (c->algo, "mpi") != 0)
    g_strv_builder_add_many (b, "--algo", c->algo, NULL);
  if (c->async_staleness >= 0)
    {
      g_autofree char *k = g_strdup_printf ("%d", c->async_staleness);
      g_strv_builder_add_many (b, "--async", k, NULL);
    }
  if (c->local_sgd > 0)
    {
      g_autofree char *h = g_strdup_printf ("%d", c->local_sgd);
      g_strv_builder_add_many (b, "--local-sgd", h, NULL);
    }
  if (c->compress && strcmp (c->compress, "none") != 0)
    g_strv_builder_add_many (b, "--compress", c->compress, NULL);
  if (c->bucket_mb != 25)
    {
      g_autofree char *mb = num (c->bucket_mb);
      g_strv_builder_add_many (b, "--bucket-mb", mb, NULL);
    }
  if (g_strcmp0 (c->parallel, "hybrid") == 0 && c->stages > 0)
    {
      g_autofree char *s = g_strdup_printf ("%d", c->stages);
      g_strv_builder_add_many (b, "--stages", s, NULL);
    }
  if (is_pipeline (c) && c->micro_batches > 0)
    {
      g_autofree char *m = g_strdup_printf ("%d", c->micro_batches);
      g_strv_builder_add_many (b, "--micro-batches", m, NULL);
    }
  if (c->max_steps > 0)
    {
      g_autofree char *n = g_strdup_printf ("%" G_GINT64_FORMAT, c->max_steps);
      g_strv_builder_add_many (b, "--max-steps", n, NULL);
    }
  g_strv_builder_add (b, "--progress-json");
  char **v = g_strv_builder_end (b);
  g_strv_builder_unref (b);
  return v;
}

char *
twb_cluster_config_label (const TwbClusterConfig *c)
{
  GString *s = g_string_new (NULL);
  if (c->simulated)
    g_string_append_printf (s, "%d × %s, %s", c->ranks, c->sim_device ? c->sim_device : "h100",
                            c->sim_topology ? c->sim_topology : "nvlink+ib");
  else
    g_string_append_printf (s, "%d ranks", c->ranks);
  if (is_pipeline (c))
    g_string_append_printf (s, ", %s", c->parallel);
  if (c->algo && strcmp (c->algo, "mpi") != 0)
    g_string_append_printf (s, ", %s", c->algo);
  if (c->async_staleness >= 0)
    g_string_append_printf (s, ", async K=%d", c->async_staleness);
  if (c->local_sgd > 0)
    g_string_append_printf (s, ", local SGD H=%d", c->local_sgd);
  if (c->compress && g_str_has_prefix (c->compress, "topk:"))
    g_string_append_printf (s, ", top-k %g%%", 100 * g_ascii_strtod (c->compress + 5, NULL));
  else if (c->compress && g_str_has_prefix (c->compress, "powersgd:"))
    g_string_append_printf (s, ", PowerSGD rank %s", c->compress + 9);
  else if (c->compress && strcmp (c->compress, "none") != 0)
    g_string_append_printf (s, ", %s", c->compress);
  return g_string_free (s, FALSE);
}

/* ---- The dialog ---------------------------------------------------------------------- */

static const char *const parallel_ids[] = { "data", "pipeline", "hybrid", NULL };
static const char *const parallel_names[] = { "Data (a shard of each batch per rank)",
                                              "Pipeline (a stage of the graph per rank)",
                                              "Hybrid (replicas of a pipeline)", NULL };
static const char *const algo_ids[] = { "mpi", "ring", "tree", "ps", "hier", NULL };
static const char *const algo_names[] = { "MPI's own", "Ring", "Tree", "Parameter server",
                                          "Hierarchical (in a node, then across)", NULL };
static const char *const update_names[] = { "Synchronous", "Asynchronous (staleness K)",
                                            "Local SGD (average every H steps)", NULL };
static const char *const device_ids[] = { "h100", "h200", "a100", "mi300x", NULL };
static const char *const device_names[] = { "NVIDIA H100", "NVIDIA H200", "NVIDIA A100",
                                            "AMD MI300X", NULL };
static const char *const topology_ids[] = { "nvlink+ib", "nvlink+roce", "pcie+eth", "shm+eth",
                                            NULL };
static const char *const topology_names[] = { "NVLink in a node, InfiniBand across",
                                              "NVLink in a node, RoCE across",
                                              "PCIe in a node, Ethernet across",
                                              "Shared memory in a node, Ethernet across", NULL };
static const char *const compress_names[] = { "None", "Top-k (fraction kept)", "int8", "Sign",
                                              "PowerSGD (rank)", NULL };

typedef struct
{
  GtkWidget *window;
  GHashTable *controls;       /* name → widget (borrowed) */
  GtkWidget *stages_row, *micro_row, *staleness_row, *local_row, *topk_row, *powersgd_row;
  gint64 batch;
  gboolean simulated;
  TwbClusterDone done;
  gpointer user_data;
  gboolean updating;
} Dialog;

static void
dialog_free (Dialog *d)
{
  g_hash_table_unref (d->controls);
  g_free (d);
}

static GtkWidget *
ctl (Dialog *d, const char *name)
{
  return g_hash_table_lookup (d->controls, name);
}

static int
spin_int (Dialog *d, const char *name)
{
  return gtk_spin_button_get_value_as_int (GTK_SPIN_BUTTON (ctl (d, name)));
}

static guint
pick (Dialog *d, const char *name)
{
  return gtk_drop_down_get_selected (GTK_DROP_DOWN (ctl (d, name)));
}

/* The settings as the controls say them now. */
static void
read_config (Dialog *d, TwbClusterConfig *c)
{
  twb_cluster_config_init (c);
  c->ranks = spin_int (d, "ranks");
  g_free (c->parallel);
  c->parallel = g_strdup (parallel_ids[MIN (pick (d, "parallel"), 2)]);
  g_free (c->algo);
  c->algo = g_strdup (algo_ids[MIN (pick (d, "algo"), 4)]);
  guint upd = pick (d, "update");
  c->async_staleness = upd == 1 ? spin_int (d, "staleness") : -1;
  c->local_sgd = upd == 2 ? spin_int (d, "local-sgd") : 0;
  switch (pick (d, "compress"))
    {
    case 1:
      {
        g_autofree char *f = num (gtk_spin_button_get_value (GTK_SPIN_BUTTON (ctl (d, "topk"))));
        c->compress = g_strconcat ("topk:", f, NULL);
        break;
      }
    case 2:
      c->compress = g_strdup ("int8");
      break;
    case 3:
      c->compress = g_strdup ("sign");
      break;
    case 4:
      c->compress = g_strdup_printf ("powersgd:%d", spin_int (d, "powersgd"));
      break;
    default:
      break;
    }
  c->bucket_mb = gtk_spin_button_get_value (GTK_SPIN_BUTTON (ctl (d, "bucket")));
  c->stages = spin_int (d, "stages");
  c->micro_batches = spin_int (d, "micro-batches");
  c->max_steps = (gint64) gtk_spin_button_get_value (GTK_SPIN_BUTTON (ctl (d, "max-steps")));
  c->simulated = d->simulated;
  if (d->simulated)
    {
      g_free (c->sim_device);
      c->sim_device = g_strdup (device_ids[MIN (pick (d, "sim-device"), 3)]);
      g_free (c->sim_topology);
      c->sim_topology = g_strdup (topology_ids[MIN (pick (d, "sim-topology"), 3)]);
    }
}

/* What shows, what can be chosen, and whether the settings go together
 * (the command line's own check, its message inline). */
static void
refresh (Dialog *d)
{
  if (d->updating)
    return;
  guint par = pick (d, "parallel");
  guint upd = pick (d, "update");
  gboolean pipe = par != 0;
  gtk_widget_set_visible (d->stages_row, par == 2);
  gtk_widget_set_visible (d->micro_row, pipe);
  gtk_widget_set_visible (d->staleness_row, upd == 1);
  gtk_widget_set_visible (d->local_row, upd == 2);
  gtk_widget_set_visible (d->topk_row, pick (d, "compress") == 1);
  gtk_widget_set_visible (d->powersgd_row, pick (d, "compress") == 4);
  /* A pipeline's stages exchange activations: no whole-model gradients to
   * update asynchronously, average or compress; the strategies send none
   * to compress. */
  gtk_widget_set_sensitive (ctl (d, "update"), !pipe);
  gtk_widget_set_sensitive (ctl (d, "compress"), !pipe && upd == 0);
  gtk_widget_set_tooltip_text (ctl (d, "update"), pipe ? "Pipeline and hybrid runs update "
                                                         "synchronously" : NULL);
  gtk_widget_set_tooltip_text (ctl (d, "compress"),
                               pipe ? "A pipeline's stages exchange activations, not gradients"
                               : upd ? "Compression goes with synchronous updates" : NULL);
  TwbClusterConfig c;
  read_config (d, &c);
  g_autoptr (GError) error = NULL;
  gboolean ok = twb_cluster_config_check (&c, d->batch, &error);
  GtkWidget *err = ctl (d, "error");
  gtk_label_set_text (GTK_LABEL (err), ok ? "" : error->message);
  gtk_widget_set_visible (err, !ok);
  gtk_widget_set_sensitive (ctl (d, "use"), ok);
  g_auto (GStrv) argv = twb_cluster_config_argv (&c, "twb", "MODEL.json");
  g_autofree char *cmd = g_strjoinv (" ", argv);
  gtk_label_set_text (GTK_LABEL (ctl (d, "command")), cmd);
  twb_cluster_config_clear (&c);
}

static void
changed (GObject *o, GParamSpec *p, Dialog *d)
{
  refresh (d);
}

static void
spin_changed (GtkSpinButton *s, Dialog *d)
{
  refresh (d);
}

static GtkWidget *
add_row (Dialog *d, GtkWidget *grid, int row, const char *label, const char *name,
         GtkWidget *control)
{
  GtkWidget *l = gtk_label_new_with_mnemonic (label);
  gtk_label_set_xalign (GTK_LABEL (l), 1);
  gtk_label_set_mnemonic_widget (GTK_LABEL (l), control);
  gtk_widget_add_css_class (l, "dim-label");
  gtk_widget_set_hexpand (control, TRUE);
  gtk_grid_attach (GTK_GRID (grid), l, 0, row, 1, 1);
  gtk_grid_attach (GTK_GRID (grid), control, 1, row, 1, 1);
  gtk_accessible_update_property (GTK_ACCESSIBLE (control), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  label, -1);
  g_hash_table_insert (d->controls, (gpointer) name, control);
  if (GTK_IS_SPIN_BUTTON (control))
    g_signal_connect (control, "value-changed", G_CALLBACK (spin_changed), d);
  else
    g_signal_connect (control, "notify::selected", G_CALLBACK (changed), d);
  /* Hidden together: the label goes with its control. */
  g_object_bind_property (control, "visible", l, "visible", G_BINDING_SYNC_CREATE);
  return control;
}

static GtkWidget *
spin (double lo, double hi, double step, guint digits, double value)
{
  GtkWidget *s = gtk_spin_button_new_with_range (lo, hi, step);
  gtk_spin_button_set_digits (GTK_SPIN_BUTTON (s), digits);
  gtk_spin_button_set_value (GTK_SPIN_BUTTON (s), value);
  return s;
}

static guint
index_of (const char *const *ids, const char *id)
{
  for (guint i = 0; ids[i]; i++)
    if (g_strcmp0 (ids[i], id) == 0)
      return i;
  return 0;
}

static void
use_clicked (GtkButton *b, Dialog *d)
{
  TwbClusterConfig c;
  read_config (d, &c);
  if (twb_cluster_config_check (&c, d->batch, NULL))
    {
      if (d->done)
        d->done (&c, d->user_data);
      gtk_window_destroy (GTK_WINDOW (d->window));
    }
  twb_cluster_config_clear (&c);
}

static void
cancel_clicked (GtkButton *b, Dialog *d)
{
  gtk_window_destroy (GTK_WINDOW (d->window));
}

GtkWidget *
twb_cluster_dialog_new (GtkWindow *parent, const TwbClusterConfig *initial, gint64 batch,
                        TwbClusterDone done, gpointer user_data)
{
  Dialog *d = g_new0 (Dialog, 1);
  d->controls = g_hash_table_new (g_str_hash, g_str_equal);
  d->batch = batch;
  d->done = done;
  d->user_data = user_data;
  d->updating = TRUE;
  d->simulated = initial->simulated;
  d->window = gtk_window_new ();
  gtk_window_set_title (GTK_WINDOW (d->window), d->simulated ? "Train on a Simulated Cluster"
                                                             : "Train on Several Processes");
  gtk_window_set_transient_for (GTK_WINDOW (d->window), parent);
  gtk_window_set_modal (GTK_WINDOW (d->window), TRUE);
  gtk_window_set_default_size (GTK_WINDOW (d->window), 520, -1);
  g_object_set_data_full (G_OBJECT (d->window), "dialog", d, (GDestroyNotify) dialog_free);

  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 8);
  gtk_widget_set_margin_start (box, 12);
  gtk_widget_set_margin_end (box, 12);
  gtk_widget_set_margin_top (box, 12);
  gtk_widget_set_margin_bottom (box, 12);
  GtkWidget *help = gtk_label_new (
    d->simulated ? "Run trains the model on virtual ranks in one process, each doing its real "
                   "share of the work, with the command shown below; the curves are rank 0's, "
                   "and step times are the simulated cluster's."
                 : "Run trains the model on MPI ranks on this machine with the "
                   "command shown below; the curves are rank 0's.");
  gtk_label_set_wrap (GTK_LABEL (help), TRUE);
  gtk_label_set_xalign (GTK_LABEL (help), 0);
  gtk_box_append (GTK_BOX (box), help);

  GtkWidget *grid = gtk_grid_new ();
  gtk_grid_set_row_spacing (GTK_GRID (grid), 6);
  gtk_grid_set_column_spacing (GTK_GRID (grid), 8);
  int row = 0;
  add_row (d, grid, row++, "_Ranks", "ranks",
           spin (2, d->simulated ? 256 : 64, 1, 0, initial->ranks));
  if (d->simulated)
    {
      add_row (d, grid, row++, "_Device", "sim-device", gtk_drop_down_new_from_strings (device_names));
      add_row (d, grid, row++, "_Network", "sim-topology",
               gtk_drop_down_new_from_strings (topology_names));
      gtk_drop_down_set_selected (GTK_DROP_DOWN (ctl (d, "sim-device")),
                                  index_of (device_ids, initial->sim_device));
      gtk_drop_down_set_selected (GTK_DROP_DOWN (ctl (d, "sim-topology")),
                                  index_of (topology_ids, initial->sim_topology));
    }
  add_row (d, grid, row++, "_Parallelism", "parallel",
           gtk_drop_down_new_from_strings (parallel_names));
  /* Virtual ranks train data parallel. */
  gtk_widget_set_visible (ctl (d, "parallel"), !d->simulated);
  d->stages_row = add_row (d, grid, row++, "_Stages", "stages",
                           spin (1, 64, 1, 0, initial->stages > 0 ? initial->stages : 2));
  d->micro_row = add_row (d, grid, row++, "_Micro-batches", "micro-batches",
                          spin (1, 1024, 1, 0,
                                initial->micro_batches > 0 ? initial->micro_batches : 4));
  add_row (d, grid, row++, "_All-reduce", "algo", gtk_drop_down_new_from_strings (algo_names));
  add_row (d, grid, row++, "_Updates", "update", gtk_drop_down_new_from_strings (update_names));
  d->staleness_row = add_row (d, grid, row++, "Staleness _K", "staleness",
                              spin (0, 1000, 1, 0, MAX (initial->async_staleness, 2)));
  d->local_row = add_row (d, grid, row++, "Average every _H steps", "local-sgd",
                          spin (1, 100000, 1, 0, initial->local_sgd > 0 ? initial->local_sgd : 4));
  add_row (d, grid, row++, "_Compression", "compress",
           gtk_drop_down_new_from_strings (compress_names));
  double frac = initial->compress && g_str_has_prefix (initial->compress, "topk:")
                  ? g_ascii_strtod (initial->compress + 5, NULL) : 0.01;
  d->topk_row = add_row (d, grid, row++, "Fraction _kept", "topk", spin (0.001, 1, 0.001, 3, frac));
  double prank = initial->compress && g_str_has_prefix (initial->compress, "powersgd:")
                   ? g_ascii_strtod (initial->compress + 9, NULL) : 2;
  d->powersgd_row = add_row (d, grid, row++, "PowerSGD ran_k", "powersgd",
                             spin (1, 64, 1, 0, prank));
  add_row (d, grid, row++, "_Bucket size (MB)", "bucket",
           spin (0.1, 65536, 1, 1, initial->bucket_mb > 0 ? initial->bucket_mb : 25));
  GtkWidget *steps = add_row (d, grid, row++, "S_teps (0: the recipe's epochs)", "max-steps",
                              spin (0, 1e9, 10, 0, (double) initial->max_steps));
  gtk_widget_set_tooltip_text (steps, "Stop after this many steps (--max-steps)");
  gtk_box_append (GTK_BOX (box), grid);

  gtk_drop_down_set_selected (GTK_DROP_DOWN (ctl (d, "parallel")),
                              index_of (parallel_ids, initial->parallel));
  gtk_drop_down_set_selected (GTK_DROP_DOWN (ctl (d, "algo")), index_of (algo_ids, initial->algo));
  gtk_drop_down_set_selected (GTK_DROP_DOWN (ctl (d, "update")),
                              initial->async_staleness >= 0 ? 1 : initial->local_sgd > 0 ? 2 : 0);
  const char *z = initial->compress;
  gtk_drop_down_set_selected (GTK_DROP_DOWN (ctl (d, "compress")),
                              z == NULL                             ? 0
                              : g_str_has_prefix (z, "topk:")       ? 1
                              : strcmp (z, "int8") == 0             ? 2
                              : strcmp (z, "sign") == 0             ? 3
                              : g_str_has_prefix (z, "powersgd:")   ? 4
                                                                    : 0);

  GtkWidget *err = gtk_label_new (NULL);
  gtk_widget_add_css_class (err, "error");
  gtk_label_set_wrap (GTK_LABEL (err), TRUE);
  gtk_label_set_xalign (GTK_LABEL (err), 0);
  gtk_widget_set_visible (err, FALSE);
  g_hash_table_insert (d->controls, "error", err);
  gtk_box_append (GTK_BOX (box), err);

  GtkWidget *cmd = gtk_label_new (NULL);
  gtk_label_set_wrap (GTK_LABEL (cmd), TRUE);
  gtk_label_set_wrap_mode (GTK_LABEL (cmd), PANGO_WRAP_WORD_CHAR);
  gtk_label_set_selectable (GTK_LABEL (cmd), TRUE);
  gtk_label_set_xalign (GTK_LABEL (cmd), 0);
  gtk_widget_add_css_class (cmd, "monospace");
  gtk_widget_add_css_class (cmd, "dim-label");
  gtk_widget_set_tooltip_text (cmd, "The same run from a shell");
  g_hash_table_insert (d->controls, "command", cmd);
  gtk_box_append (GTK_BOX (box), cmd);

  GtkWidget *buttons = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 8);
  gtk_widget_set_halign (buttons, GTK_ALIGN_END);
  GtkWidget *cancel = gtk_button_new_with_mnemonic ("_Cancel");
  GtkWidget *use = gtk_button_new_with_mnemonic ("_Use for Runs");
  gtk_widget_add_css_class (use, "suggested-action");
  g_hash_table_insert (d->controls, "use", use);
  g_signal_connect (cancel, "clicked", G_CALLBACK (cancel_clicked), d);
  g_signal_connect (use, "clicked", G_CALLBACK (use_clicked), d);
  gtk_box_append (GTK_BOX (buttons), cancel);
  gtk_box_append (GTK_BOX (buttons), use);
  gtk_box_append (GTK_BOX (box), buttons);
  gtk_window_set_child (GTK_WINDOW (d->window), box);
  gtk_window_set_default_widget (GTK_WINDOW (d->window), use);
  d->updating = FALSE;
  refresh (d);
  return d->window;
}

GtkWidget *
twb_cluster_dialog_get_control (GtkWidget *dialog, const char *name)
{
  Dialog *d = g_object_get_data (G_OBJECT (dialog), "dialog");
  return d ? ctl (d, name) : NULL;
}
