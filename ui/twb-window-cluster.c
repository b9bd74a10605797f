/* twb-window-cluster.c — training on several processes from the window:
 * the "Cluster (MPI ranks)…" device, its settings (twb-cluster-dialog.h),
 * and a run that is `twb train TMP.json --ranks N … --progress-json` in a
 * subprocess: its stdout lines (rank 0's curves) feed an external TwbRun
 * (twb-run.h), its stderr lines (errors, "rank N: …") go to the notice
 * area, Stop sends SIGTERM to its process group (the launcher, mpirun and
 * the ranks). */
#define G_LOG_DOMAIN "twb-window-cluster"

#include "ui/twb-window-private.h"
#include "ui/twb-cluster-dialog.h"
#include "ui/twb-run-store.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* After SIGTERM, how long the ranks have to go before SIGKILL: a step of
 * the models this is for takes milliseconds, mpirun's own teardown about a
 * second (TOOLCHAIN.md: one mpirun start ≈ 0.7 s). */
#define STOP_GRACE_MS 5000
/* Error lines kept for the notice and a failed run's message. */
#define KEPT_ERRORS 4

struct _TwbWindowCluster
{
  TwbClusterConfig config;    /* the device's settings now (MPI ranks or simulated) */
  TwbClusterConfig mpi_config, sim_config;   /* each kind's last, for its dialog */
  gboolean selected;          /* the device chosen is the cluster */
  char *unavailable;          /* why there is no cluster (no mpirun), or NULL */
  GtkWidget *dialog;          /* while open */
  GSubprocess *proc;
  GCancellable *cancel;
  GDataInputStream *out, *err;
  TwbRun *run;                /* the run the process feeds (also self->run) */
  char *model_path;           /* the temporary copy of the model */
  GPid pgid;
  int open_ends;              /* stdout, stderr and the exit still to come */
  gboolean stopping, exited_ok;
  int exit_status;
  guint kill_source;
  GArray *tree;               /* GPid: the run's processes when Stop was pressed */
  GQueue errors;              /* char*: the last KEPT_ERRORS stderr lines */
};

static TwbWindowCluster *
cl (TwbWindow *self)
{
  return self->cluster;
}

gboolean
twb_window_cluster_selected (TwbWindow *self)
{
  return cl (self) && cl (self)->selected;
}

gboolean
twb_window_cluster_running (TwbWindow *self)
{
  return cl (self) && cl (self)->proc != NULL;
}

GtkWidget *
twb_window_get_cluster_dialog (TwbWindow *self)
{
  return cl (self) ? cl (self)->dialog : NULL;
}

int
twb_window_cluster_get_pgid (TwbWindow *self)
{
  return cl (self) && cl (self)->proc ? (int) cl (self)->pgid : 0;
}

const char *
twb_window_cluster_unavailable (TwbWindow *self)
{
  return cl (self) ? cl (self)->unavailable : NULL;
}

/* The twb program: $TWB_PROGRAM, this program when it is twb, the twb
 * beside it (a build folder's app/ from tests/ui/ too), or PATH's.
 * Caller frees; NULL when there is none. */
static char *
find_twb (void)
{
  const char *env = g_getenv ("TWB_PROGRAM");
  if (env && *env)
    return g_strdup (env);
  g_autofree char *self = g_file_read_link ("/proc/self/exe", NULL);
  if (self)
    {
      g_autofree char *base = g_path_get_basename (self);
      if (strcmp (base, "twb") == 0)
        return g_steal_pointer (&self);
      g_autofree char *dir = g_path_get_dirname (self);
      const char *near[] = { "twb", "../app/twb", "../../app/twb" };
      for (guint i = 0; i < G_N_ELEMENTS (near); i++)
        {
          g_autofree char *p = g_build_filename (dir, near[i], NULL);
          if (g_file_test (p, G_FILE_TEST_IS_EXECUTABLE) && !g_file_test (p, G_FILE_TEST_IS_DIR))
            return g_canonicalize_filename (p, NULL);
        }
    }
  return g_find_program_in_path ("twb");
}

static void
update_device_label (TwbWindow *self)
{
  TwbWindowCluster *c = cl (self);
  if (self->device_button == NULL)
    return;
  g_autofree char *label = c->selected ? twb_cluster_config_label (&c->config) : NULL;
  g_autofree char *text = label ? g_strdup_printf ("%s: %s", c->config.simulated
                                                    ? "Simulated" : "Cluster", label)
                                 : g_strdup ("CPU");
  gtk_menu_button_set_label (GTK_MENU_BUTTON (self->device_button), text);
}

static void
set_device_state (TwbWindow *self, const char *name)
{
  GAction *a = g_action_map_lookup_action (G_ACTION_MAP (self->debugger_actions), "device");
  g_simple_action_set_state (G_SIMPLE_ACTION (a), g_variant_new_string (name));
}

/* The stages a run with these settings cuts the graph into (twb-dist.c's
 * default: as many as ranks for a pipeline, 2 for hybrid); 0 for data
 * parallelism. */
static int
config_stages (const TwbClusterConfig *c)
{
  if (g_strcmp0 (c->parallel, "pipeline") == 0)
    return c->stages > 0 ? c->stages : MAX (c->ranks, 1);
  if (g_strcmp0 (c->parallel, "hybrid") == 0)
    return c->stages > 0 ? c->stages : 2;
  return 0;
}

/* The canvas paints the stages of the run to come (and the document's
 * "stage" attributes whatever the device). */
static void
sync_stages (TwbWindow *self)
{
  TwbWindowCluster *c = cl (self);
  if (self->doc)
    twb_document_set_pipeline_stages (self->doc, c && c->selected ? config_stages (&c->config) : 0);
}

/* The same trainable parameters in both (a layout made for this graph). */
static gboolean
same_params (const tw_bucket_layout *a, const tw_bucket_layout *b)
{
  int na = 0, nb = 0;
  for (int k = 0; k < a->n; k++)
    for (int i = 0; a->names[k][i]; i++, na++)
      if (tw_bucket_layout_find (b, a->names[k][i], NULL) < 0)
        return FALSE;
  for (int k = 0; k < b->n; k++)
    nb += (int) g_strv_length (b->names[k]);
  return na == nb;
}

/* The inspector's gradient buckets: with data parallelism chosen, the last
 * cluster run's final layout while the graph has its parameters, else the
 * engine's prediction for the first step; none for other devices. */
void
twb_window_cluster_update_buckets (TwbWindow *self)
{
  TwbWindowCluster *c = cl (self);
  if (self->inspector == NULL || self->doc == NULL)
    return;
  gboolean data = c && c->selected && g_strcmp0 (c->config.parallel, "data") == 0
                  && c->config.async_staleness < 0 && c->config.local_sgd == 0;
  tw_bucket_layout predicted = { 0 };
  if (!data || !tw_dist_bucket_predict (twb_document_get_graph (self->doc), c->config.bucket_mb,
                                        &predicted))
    {
      twb_inspector_set_buckets (self->inspector, NULL, FALSE, 0);
      return;
    }
  double mb = 0;
  TwbRun *run = twb_window_get_run (self);
  const tw_bucket_layout *measured = run && twb_run_is_external (run)
                                       ? twb_run_get_buckets (run, &mb) : NULL;
  if (measured && same_params (measured, &predicted))
    twb_inspector_set_buckets (self->inspector, measured, TRUE, mb);
  else
    twb_inspector_set_buckets (self->inspector, &predicted, FALSE, c->config.bucket_mb);
  tw_bucket_layout_clear (&predicted);
}

void
twb_window_cluster_doc_set (TwbWindow *self)
{
  sync_stages (self);
}

static void
dialog_done (const TwbClusterConfig *config, gpointer data)
{
  TwbWindow *self = data;
  TwbWindowCluster *c = cl (self);
  twb_cluster_config_clear (&c->config);
  twb_cluster_config_copy (&c->config, config);
  TwbClusterConfig *kind = config->simulated ? &c->sim_config : &c->mpi_config;
  twb_cluster_config_clear (kind);
  twb_cluster_config_copy (kind, config);
  c->selected = TRUE;
  set_device_state (self, config->simulated ? "simulated" : "cluster");
  update_device_label (self);
  sync_stages (self);
  twb_window_cluster_update_buckets (self);
  twb_window_run_update_actions (self);
  g_autofree char *label = twb_cluster_config_label (config);
  g_autofree char *msg = g_strdup_printf ("Runs train on %s (Run, F5); CPU in Devices trains "
                                          "in the window again", label);
  twb_window_show_toast (self, msg);
}

static void
dialog_destroyed (GtkWidget *w, TwbWindow *self)
{
  if (cl (self))
    cl (self)->dialog = NULL;
}

/* debugger.device::cluster (and ::simulated): the settings, then the device. */
void
twb_window_cluster_choose (TwbWindow *self, gboolean simulated)
{
  TwbWindowCluster *c = cl (self);
  if (c->unavailable && !simulated)
    {
      twb_window_show_toast (self, c->unavailable);
      return;
    }
  if (c->dialog)
    {
      gtk_window_present (GTK_WINDOW (c->dialog));
      return;
    }
  gint64 batch = twb_document_get_model (self->doc)->recipe.batch_size;
  c->dialog = twb_cluster_dialog_new (GTK_WINDOW (self), simulated ? &c->sim_config
                                                                   : &c->mpi_config,
                                      batch, dialog_done, self);
  g_signal_connect (c->dialog, "destroy", G_CALLBACK (dialog_destroyed), self);
  gtk_window_present (GTK_WINDOW (c->dialog));
}

void
twb_window_cluster_use_cpu (TwbWindow *self)
{
  if (cl (self) == NULL)
    return;
  cl (self)->selected = FALSE;
  update_device_label (self);
  sync_stages (self);
  twb_window_cluster_update_buckets (self);
  twb_window_run_update_actions (self);
}

/* ---- The process ----------------------------------------------------------------------- */

static void
child_setup (gpointer data)
{
  /* Its own process group: Stop reaches the launcher, mpirun and the ranks. */
  setpgid (0, 0);
}

static void finish_if_done (TwbWindow *self);

static void
kept_error (TwbWindowCluster *c, const char *line)
{
  g_queue_push_tail (&c->errors, g_strdup (line));
  while (c->errors.length > KEPT_ERRORS)
    g_free (g_queue_pop_head (&c->errors));
}

static char *
joined_errors (TwbWindowCluster *c)
{
  GString *s = g_string_new (NULL);
  for (GList *l = c->errors.head; l; l = l->next)
    g_string_append_printf (s, "%s%s", s->len ? "\n" : "", (const char *) l->data);
  return g_string_free (s, s->len == 0);
}

static void read_next (TwbWindow *self, GDataInputStream *in);

/* Open MPI's own counts of the help messages it did not repeat
 * ("[host:123] 1 more process has sent help message …", "Set MCA
 * parameter \"orte_base_help_aggregate\" to 0 …"): the rank's line has
 * said what went wrong. */
static gboolean
mpirun_chatter (const char *line)
{
  return (line[0] == '[' && strstr (line, "has sent help message"))
         || (line[0] == '[' && strstr (line, "orte_base_help_aggregate"));
}

static void
line_read (GObject *src, GAsyncResult *res, gpointer data)
{
  TwbWindow *self = data;
  GDataInputStream *in = G_DATA_INPUT_STREAM (src);
  g_autoptr (GError) error = NULL;
  gsize len = 0;
  g_autofree char *line = g_data_input_stream_read_line_finish_utf8 (in, res, &len, &error);
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      g_object_unref (self);
      return;
    }
  TwbWindowCluster *c = cl (self);
  if (c == NULL || (in != c->out && in != c->err))
    {
      /* The window went (or the run ended) while the line was on its way. */
      g_object_unref (self);
      return;
    }
  if (line == NULL)
    {
      /* The end of the stream (or an unreadable one: taken as its end). */
      c->open_ends--;
      finish_if_done (self);
      g_object_unref (self);
      return;
    }
  if (in == c->out)
    {
      if (!twb_run_feed_line (c->run, line) && line[0])
        g_message ("cluster run: not a progress line: %.200s", line);
    }
  else if (g_strstrip (line)[0] && !mpirun_chatter (line))
    {
      /* A rank's error ("rank 1: …", or rank 0's "twb: …"): in the
       * notice area at once, and kept for a failed run's message. */
      kept_error (c, line);
      g_autofree char *all = joined_errors (c);
      twb_window_show_toast (self, all);
    }
  read_next (self, in);
  g_object_unref (self);
}

static void
read_next (TwbWindow *self, GDataInputStream *in)
{
  g_data_input_stream_read_line_async (in, G_PRIORITY_DEFAULT, cl (self)->cancel, line_read,
                                       g_object_ref (self));
}

static void
process_exited (GObject *src, GAsyncResult *res, gpointer data)
{
  TwbWindow *self = data;
  g_autoptr (GError) error = NULL;
  gboolean ok = g_subprocess_wait_finish (G_SUBPROCESS (src), res, &error);
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      g_object_unref (self);
      return;
    }
  TwbWindowCluster *c = cl (self);
  if (c == NULL || c->proc != G_SUBPROCESS (src))
    {
      g_object_unref (self);
      return;
    }
  c->exited_ok = ok && g_subprocess_get_if_exited (G_SUBPROCESS (src))
                 && g_subprocess_get_exit_status (G_SUBPROCESS (src)) == 0;
  c->exit_status = ok && g_subprocess_get_if_exited (G_SUBPROCESS (src))
                     ? g_subprocess_get_exit_status (G_SUBPROCESS (src)) : -1;
  c->open_ends--;
  finish_if_done (self);
  g_object_unref (self);
}

static void
clear_process (TwbWindowCluster *c)
{
  g_clear_handle_id (&c->kill_source, g_source_remove);
  if (c->cancel)
    g_cancellable_cancel (c->cancel);
  g_clear_object (&c->cancel);
  g_clear_object (&c->out);
  g_clear_object (&c->err);
  g_clear_object (&c->proc);
  g_clear_object (&c->run);
  g_clear_pointer (&c->tree, g_array_unref);
  if (c->model_path)
    g_unlink (c->model_path);
  g_clear_pointer (&c->model_path, g_free);
  c->pgid = 0;
}

/* The three ends came (both streams and the exit): the run ends. */
static void
finish_if_done (TwbWindow *self)
{
  TwbWindowCluster *c = cl (self);
  if (c->open_ends > 0 || c->proc == NULL)
    return;
  g_autoptr (TwbRun) run = g_object_ref (c->run);
  gboolean stopped = c->stopping;
  gboolean ok = c->exited_ok;
  g_autofree char *why = joined_errors (c);
  if (why == NULL)
    why = g_strdup_printf ("twb %s ended with status %d and said nothing",
                           c->config.simulated ? "simulate" : "train", c->exit_status);
  clear_process (c);
  twb_run_end_external (run, stopped ? TW_SESSION_STOPPED
                             : ok    ? TW_SESSION_FINISHED
                                     : TW_SESSION_FAILED,
                        stopped || ok ? NULL : why);
  twb_window_cluster_update_buckets (self);
  twb_window_run_update_actions (self);
}

gboolean
twb_window_cluster_start (TwbWindow *self, GError **error)
{
  TwbWindowCluster *c = cl (self);
  if (c->proc)
    return TRUE;
  const tw_model *model = twb_document_get_model (self->doc);
  if (!twb_cluster_config_check (&c->config, model->recipe.batch_size, error))
    return FALSE;
  g_autofree char *twb = find_twb ();
  if (twb == NULL)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                   "Cannot find the twb program to start the ranks with (set TWB_PROGRAM)");
      return FALSE;
    }
  /* The model as drawn now, unsaved edits included. */
  g_autofree char *tmp = NULL;
  int fd = g_file_open_tmp ("twb-cluster-XXXXXX.json", &tmp, error);
  if (fd < 0)
    return FALSE;
  close (fd);
  if (!tw_model_save (model, tmp, error))
    {
      g_unlink (tmp);
      return FALSE;
    }
  g_auto (GStrv) argv = twb_cluster_config_argv (&c->config, twb, tmp);
  if (self->init_weights)
    {
      GStrvBuilder *b = g_strv_builder_new ();
      g_strv_builder_addv (b, (const char **) argv);
      g_strv_builder_add_many (b, "--init-weights", self->init_weights, NULL);
      g_strfreev (argv);
      argv = g_strv_builder_end (b);
      g_strv_builder_unref (b);
    }
  g_autoptr (GSubprocessLauncher) l
    = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
  g_subprocess_launcher_set_child_setup (l, child_setup, NULL, NULL);
  GSubprocess *proc = g_subprocess_launcher_spawnv (l, (const char *const *) argv, error);
  if (proc == NULL)
    {
      g_unlink (tmp);
      return FALSE;
    }
  g_autofree char *id = twb_window_runs_dir_next_id (self);
  g_autofree char *label = twb_cluster_config_label (&c->config);
  g_auto (GStrv) shown = twb_cluster_config_argv (&c->config, "twb",
                                                  twb_document_get_path (self->doc)
                                                    ? twb_document_get_path (self->doc)
                                                    : "MODEL.json");
  g_autofree char *command = g_strjoinv (" ", shown);
  c->run = twb_run_new_external (id, label, command, model, self->metrics);
  c->proc = proc;
  c->model_path = g_steal_pointer (&tmp);
  c->pgid = (GPid) atoi (g_subprocess_get_identifier (proc));
  c->cancel = g_cancellable_new ();
  c->stopping = FALSE;
  c->open_ends = 3;
  g_queue_clear_full (&c->errors, g_free);
  c->out = g_data_input_stream_new (g_subprocess_get_stdout_pipe (proc));
  c->err = g_data_input_stream_new (g_subprocess_get_stderr_pipe (proc));
  read_next (self, c->out);
  read_next (self, c->err);
  g_subprocess_wait_async (proc, c->cancel, process_exited, g_object_ref (self));
  twb_window_run_adopt (self, c->run);
  twb_window_run_update_actions (self);
  return TRUE;
}

/* root and its descendants, living (not zombies), from /proc: mpirun's
 * ranks are in a process group of their own. */
static GArray *
process_tree (GPid root)
{
  g_autoptr (GArray) pid = g_array_new (FALSE, FALSE, sizeof (GPid));
  g_autoptr (GArray) ppid = g_array_new (FALSE, FALSE, sizeof (GPid));
  g_autoptr (GDir) proc = g_dir_open ("/proc", 0, NULL);
  const char *name;
  while (proc && (name = g_dir_read_name (proc)))
    {
      if (!g_ascii_isdigit (name[0]))
        continue;
      g_autofree char *path = g_build_filename ("/proc", name, "stat", NULL);
      g_autofree char *stat = NULL;
      if (!g_file_get_contents (path, &stat, NULL, NULL))
        continue;
      const char *close = strrchr (stat, ')');
      char state = 0;
      int parent = 0;
      if (close && sscanf (close + 1, " %c %d", &state, &parent) == 2 && state != 'Z')
        {
          GPid p = (GPid) atoi (name);
          g_array_append_val (pid, p);
          g_array_append_val (ppid, parent);
        }
    }
  GArray *tree = g_array_new (FALSE, FALSE, sizeof (GPid));
  g_array_append_val (tree, root);
  for (guint k = 0; k < tree->len; k++)
    for (guint i = 0; i < pid->len; i++)
      if (g_array_index (ppid, GPid, i) == g_array_index (tree, GPid, k))
        g_array_append_val (tree, g_array_index (pid, GPid, i));
  return tree;
}

static void
signal_tree (TwbWindowCluster *c, int sig)
{
  if (c->pgid > 0)
    kill (-c->pgid, sig);
  for (guint i = 0; c->tree && i < c->tree->len; i++)
    kill (g_array_index (c->tree, GPid, i), sig);
}

static gboolean
kill_late (gpointer data)
{
  TwbWindow *self = data;
  TwbWindowCluster *c = cl (self);
  c->kill_source = 0;
  signal_tree (c, SIGKILL);
  return G_SOURCE_REMOVE;
}

void
twb_window_cluster_stop (TwbWindow *self)
{
  TwbWindowCluster *c = cl (self);
  if (c->proc == NULL || c->stopping)
    return;
  c->stopping = TRUE;
  g_clear_pointer (&c->tree, g_array_unref);
  c->tree = process_tree (c->pgid);
  signal_tree (c, SIGTERM);
  c->kill_source = g_timeout_add (STOP_GRACE_MS, kill_late, self);
}

void
twb_window_cluster_init (TwbWindow *self)
{
  TwbWindowCluster *c = g_new0 (TwbWindowCluster, 1);
  twb_cluster_config_init (&c->config);
  twb_cluster_config_init (&c->mpi_config);
  twb_cluster_config_init (&c->sim_config);
  c->sim_config.simulated = TRUE;
  c->sim_config.ranks = 8;
  g_free (c->sim_config.algo);
  c->sim_config.algo = g_strdup ("ring");
  g_queue_init (&c->errors);
  g_autofree char *mpirun = g_find_program_in_path ("mpirun");
  if (mpirun == NULL)
    mpirun = g_find_program_in_path ("mpiexec");
  if (mpirun == NULL)
    c->unavailable = g_strdup ("Training on several processes needs Open MPI's mpirun, which is "
                               "not on PATH (Debian: apt-get install openmpi-bin)");
  self->cluster = c;
}

void
twb_window_cluster_dispose (TwbWindow *self)
{
  TwbWindowCluster *c = cl (self);
  if (c == NULL)
    return;
  /* Closing the window ends its ranks: none is left behind. */
  if (c->pgid > 0)
    {
      g_clear_pointer (&c->tree, g_array_unref);
      c->tree = process_tree (c->pgid);
      signal_tree (c, SIGTERM);
    }
  if (c->dialog)
    gtk_window_destroy (GTK_WINDOW (c->dialog));
  clear_process (c);
  twb_cluster_config_clear (&c->config);
  twb_cluster_config_clear (&c->mpi_config);
  twb_cluster_config_clear (&c->sim_config);
  g_queue_clear_full (&c->errors, g_free);
  g_free (c->unavailable);
  g_free (c);
  self->cluster = NULL;
}
