/* twb.c — entry point of the `twb` command line and `twb info`. */
#define G_LOG_DOMAIN "twb"

#include "app/twb-cli.h"
#include "engine/device.h"
#include "engine/fileutil.h"

#ifdef TWB_HAVE_GUI
#include "app/twb-application.h"
#endif

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
void
twb_json_member_double (JsonBuilder *b, const char *name, double v)
{
  json_builder_set_member_name (b, name);
  if (isfinite (v))
    json_builder_add_double_value (b, v);
  else
    json_builder_add_null_value (b);
}


void
twb_print_error (const char *what, const GError *error)
{
  if (what)
    g_printerr ("twb: %s: %s\n", what, error ? error->message : "failed");
  else
    g_printerr ("twb: %s\n", error ? error->message : "failed");
}

gint64
twb_peak_rss_bytes (void)
{
  struct rusage ru;
  if (getrusage (RUSAGE_SELF, &ru) != 0)
    return 0;
  return (gint64) ru.ru_maxrss * 1024;   /* Linux reports kilobytes */
}

tw_model *
twb_load_model_checked (const char *path)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (tw_model) m = tw_model_load (path, &error);
  if (m == NULL)
    {
      twb_print_error (NULL, error);
      return NULL;
    }
  if (tw_graph_infer (m->graph) > 0)
    {
      g_autofree char *errs = tw_graph_errors_to_string (m->graph);
      g_printerr ("twb: %s: the graph has errors:\n", path);
      g_auto (GStrv) lines = g_strsplit (errs, "\n", -1);
      for (char **l = lines; *l; l++)
        g_printerr ("  %s\n", *l);
      return NULL;
    }
  /* Every model accepted here runs under every command. */
  if (!tw_graph_check_runnable (m->graph, &error))
    {
      g_autofree char *display = g_filename_display_name (path);
      g_printerr ("twb: %s: %s\n", display, error->message);
      return NULL;
    }
  return g_steal_pointer (&m);
}

gboolean
twb_check_files (const tw_file_roles *io)
{
  g_autoptr (GError) error = NULL;
  if (tw_file_roles_check (io, &error))
    return TRUE;
  twb_print_error (NULL, error);
  return FALSE;
}

tw_file_roles *
twb_model_inputs (const char *model_path, const tw_model *m, const char *spec)
{
  tw_file_roles *io = tw_file_roles_new ();
  tw_file_roles_input (io, model_path, "the model");
  g_auto (GStrv) files = tw_dataset_files (spec ? spec : m->recipe.dataset);
  for (char **f = files; *f; f++)
    tw_file_roles_input (io, *f, spec ? "--data" : "the recipe's dataset");
  return io;
}

static void
format_count (char *buf, size_t len, double v)
{
  if (v >= 1e9)
    g_snprintf (buf, len, "%.2fG", v / 1e9);
  else if (v >= 1e6)
    g_snprintf (buf, len, "%.2fM", v / 1e6);
  else if (v >= 1e3)
    g_snprintf (buf, len, "%.1fk", v / 1e3);
  else
    g_snprintf (buf, len, "%.0f", v);
}

int
twb_cmd_info (int argc, char **argv)
{
  gboolean json = FALSE;
  GOptionEntry entries[] = {
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print JSON instead of a table", NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("MODEL.json — nodes, shapes, parameters, FLOPs");
  g_autoptr (GError) error = NULL;
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error) || argc != 2)
    {
      g_printerr ("usage: twb info MODEL.json [--json]\n%s%s", error ? error->message : "",
                  error ? "\n" : "");
      return 2;
    }
  g_autoptr (tw_model) m = tw_model_load (argv[1], &error);
  if (m == NULL)
    {
      twb_print_error (NULL, error);
      return 1;
    }
  int n_err = tw_graph_infer (m->graph);
  int nn = tw_graph_n_nodes (m->graph);

  if (json)
    {
      g_autoptr (JsonBuilder) b = json_builder_new ();
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "model");
      json_builder_add_string_value (b, m->name ? m->name : "");
      json_builder_set_member_name (b, "nodes");
      json_builder_begin_array (b);
      for (int i = 0; i < nn; i++)
        {
          tw_node *n = tw_graph_node (m->graph, i);
          int64_t np = 0;
          for (int k = 0; k < n->n_params && !n->share; k++)
            np += tw_tinfo_numel (&n->params[k].info, NULL);
          json_builder_begin_object (b);
          json_builder_set_member_name (b, "id");
          json_builder_add_string_value (b, n->id);
          json_builder_set_member_name (b, "op");
          json_builder_add_string_value (b, n->op_name);
          json_builder_set_member_name (b, "shape");
          if (n->valid && n->n_outputs > 0)
            {
              g_autofree char *s = tw_tinfo_to_string (&n->out_info[0]);
              json_builder_add_string_value (b, s);
            }
          else
            json_builder_add_null_value (b);
          json_builder_set_member_name (b, "params");
          json_builder_add_int_value (b, np);
          json_builder_set_member_name (b, "flops");
          json_builder_add_double_value (b, n->cost.flops);
          if (n->error)
            {
              json_builder_set_member_name (b, "error");
              json_builder_add_string_value (b, n->error);
            }
          json_builder_end_object (b);
        }
      json_builder_end_array (b);
      json_builder_set_member_name (b, "total_params");
      json_builder_add_int_value (b, tw_graph_param_count (m->graph));
      /* The outputs as every command takes them: marked, else the losses' predictions. */
      json_builder_set_member_name (b, "outputs");
      json_builder_begin_array (b);
      for (const char *const *o = tw_graph_outputs (m->graph); *o; o++)
        json_builder_add_string_value (b, *o);
      json_builder_end_array (b);
      json_builder_set_member_name (b, "outputs_marked");
      json_builder_add_boolean_value (b, !tw_graph_outputs_are_default (m->graph));
      json_builder_set_member_name (b, "total_flops_per_sample");
      json_builder_add_double_value (b, tw_graph_flops (m->graph));
      json_builder_set_member_name (b, "errors");
      json_builder_add_int_value (b, n_err);
      json_builder_end_object (b);
      g_autoptr (JsonGenerator) gen = json_generator_new ();
      g_autoptr (JsonNode) root = json_builder_get_root (b);
      json_generator_set_root (gen, root);
      json_generator_set_pretty (gen, TRUE);
      g_autofree char *text = json_generator_to_data (gen, NULL);
      g_print ("%s\n", text);
      return n_err ? 1 : 0;
    }

  g_print ("%-16s %-18s %-22s %12s %12s\n", "node", "op", "output", "params", "FLOPs/sample");
  g_print ("%-16s %-18s %-22s %12s %12s\n", "----", "--", "------", "------", "------------");
  for (int i = 0; i < nn; i++)
    {
      tw_node *n = tw_graph_node (m->graph, i);
      int64_t np = 0;
      char pbuf[32], fbuf[32];
      for (int k = 0; k < n->n_params && !n->share; k++)
        np += tw_tinfo_numel (&n->params[k].info, NULL);
      g_autofree char *shape = n->valid && n->n_outputs > 0
                                 ? tw_shape_to_string (n->out_info[0].ndim, n->out_info[0].dims)
                                 : g_strdup (n->error ? "error" : "?");
      g_snprintf (pbuf, sizeof pbuf, "%" G_GINT64_FORMAT, np);
      format_count (fbuf, sizeof fbuf, n->cost.flops);
      g_autofree char *op = n->share ? g_strdup_printf ("%s (=%s)", n->op_name, n->share)
                                     : g_strdup (n->op_name);
      g_print ("%-16s %-18s %-22s %12s %12s\n", n->id, op, shape, n->share ? "shared" : pbuf,
               fbuf);
    }
  char tf[32];
  format_count (tf, sizeof tf, tw_graph_flops (m->graph));
  g_autofree char *outs = g_strjoinv (", ", (char **) tw_graph_outputs (m->graph));
  const char *why = !outs[0] ? " (mark one, or add a loss)"
                    : tw_graph_outputs_are_default (m->graph)
                      ? " (none marked: the prediction each loss scores)"
                      : "";
  g_print ("outputs: %s%s\n", outs[0] ? outs : "none", why);
  g_print ("total: %" G_GINT64_FORMAT " parameters, %s FLOPs per sample (forward)\n",
           tw_graph_param_count (m->graph), tf);
  if (n_err)
    {
      g_autofree char *errs = tw_graph_errors_to_string (m->graph);
      g_printerr ("twb: %s: %d error%s:\n%s\n", argv[1], n_err, n_err == 1 ? "" : "s", errs);
      return 1;
    }
  return 0;
}

/* The subcommands, matched by exact name before anything else: a file
 * named like one is opened as ./train or after "--". */
static const struct
{
  const char *name;
  int (*run) (int argc, char **argv);
} commands[] = {
  { "train", twb_cmd_train },       { "eval", twb_cmd_eval },
  { "info", twb_cmd_info },         { "compile", twb_cmd_compile },
  { "predict", twb_cmd_predict },   { "devices", twb_cmd_devices },
  { "profile", twb_cmd_profile },   { "trace-info", twb_cmd_trace_info },
  { "onnx-info", twb_cmd_onnx_info }, { "import", twb_cmd_import },
  { "export", twb_cmd_export },     { "simulate", twb_cmd_simulate },
};

/* The window's own options (twb --help-gui), as they start an argument. */
static gboolean
is_window_option (const char *arg)
{
  static const char *const opts[] = { "--screenshot", "--open", "--size", "--panel",
                                      "--select", "--do", "--theme" };
  if (strcmp (arg, "--") == 0)
    return TRUE;
  for (gsize i = 0; i < G_N_ELEMENTS (opts); i++)
    {
      gsize n = strlen (opts[i]);
      if (strncmp (arg, opts[i], n) == 0 && (arg[n] == '\0' || arg[n] == '='))
        return TRUE;
    }
  return FALSE;
}

static void
usage (FILE *to)
{
  fprintf (to, "usage: twb COMMAND [OPTIONS]\n"
               "       twb [FILE...]\n"
               "\n"
               "commands (no display needed; twb COMMAND --help for each one's options):\n"
               "  train MODEL.json     train a model\n"
               "  eval MODEL.json      evaluate trained weights on a test set\n"
               "  info MODEL.json      nodes, output shapes, parameters and FLOPs\n"
               "  compile MODEL.json   compile to a static program and report what the passes did\n"
               "  predict MODEL.json   class predictions for samples in a .npy file\n"
               "  devices              devices, and which kernel runs each matrix product here\n"
               "  profile MODEL.json   train a few steps and write a Chrome trace of every op\n"
               "  trace-info FILE...   event counts, top names and layers, step times, per rank\n"
               "                       compute/communication/idle; --compare A B per layer\n"
               "  onnx-info FILE.onnx  opsets, inputs and outputs, op counts, parameters\n"
               "  import MODEL.onnx    an ONNX model as MODEL.json + MODEL.safetensors\n"
               "  export MODEL.json    the inference graph and its weights as ONNX (-o OUT.onnx)\n"
               "  simulate MODEL.json  predict data-parallel training on a simulated cluster\n"
#ifdef TWB_HAVE_GUI
               "\n"
               "the window (with a display):\n"
               "  twb                  the graph editor\n"
               "  twb FILE...          open each file: a twb model, an ONNX model (imported),\n"
               "                       a Chrome trace, ours or PyTorch's, plain or gzip (the\n"
               "                       Profiler tab); the kind is read from the file's content\n"
               "  twb -- FILE...       the same for files named like a command (or ./train)\n"
               "  twb --screenshot OUT.png [FILE] [--size WxH] [--panel NAME] [--do ACTIONS]\n"
               "  twb --help-gui       the window's options\n"
#endif
               "\n"
               "  twb --help, twb --version\n");
}

int
main (int argc, char **argv)
{
  setlocale (LC_ALL, "");
  /* Numbers in files and JSON use '.', whatever the locale. */
  setlocale (LC_NUMERIC, "C");
  tw_ops_init ();

  if (argc < 2)
    {
#ifdef TWB_HAVE_GUI
      if (twb_gui_have_display ())
        return twb_gui_main (argc, argv);
#endif
      usage (stderr);
      return 2;
    }
  const char *first = argv[1];
  if (strcmp (first, "--help") == 0 || strcmp (first, "-h") == 0)
    {
      usage (stdout);
      return 0;
    }
  if (strcmp (first, "--version") == 0)
    {
      g_print ("twb %s\n", TWB_VERSION);
      return 0;
    }
  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    if (strcmp (first, commands[i].name) == 0)
      {
        /* Help reads "twb train [OPTION…]". */
        g_autofree char *prg = g_strdup_printf ("twb %s", commands[i].name);
        g_set_prgname (prg);
        return commands[i].run (argc - 1, argv + 1);
      }
  if (first[0] == '-' && strcmp (first, "--help-gui") != 0 && !is_window_option (first))
    {
      g_printerr ("twb: unknown option '%s'\n", first);
      usage (stderr);
      return 2;
    }
  /* Not a command: files for the window.  A word that names no file and
   * does not look like a file name is a mistyped command. */
  if (first[0] != '-' && !strchr (first, '/') && !strchr (first, '.')
      && !g_file_test (first, G_FILE_TEST_EXISTS))
    {
      g_printerr ("twb: unknown command '%s' (and no file of that name)\n", first);
      usage (stderr);
      return 2;
    }
#ifdef TWB_HAVE_GUI
  if (strcmp (first, "--help-gui") == 0)
    {
      char *args[] = { argv[0], (char *) "--help", NULL };
      return twb_gui_main (2, args);
    }
  return twb_gui_main (argc, argv);
#else
  g_printerr ("twb: %s: this twb was built without the window (GTK 4); the commands work "
              "without it (twb --help)\n", first);
  return 2;
#endif
}
