/* twb-export.c — `twb export MODEL.json [--weights W.safetensors] -o OUT.onnx`:
 * the model's inference graph with its weights as an ONNX file. */
#include "app/twb-cli.h"
#include "onnx/onnx-export.h"

#include <string.h>

int
twb_cmd_export (int argc, char **argv)
{
  g_autofree char *weights = NULL, *output = NULL, *opset_s = NULL, *batch_s = NULL;
  int64_t opset = TW_ONNX_EXPORT_MAX_OPSET, batch = 0;
  gboolean dynamic = FALSE;
  GOptionEntry entries[] = {
    { "weights", 'w', 0, G_OPTION_ARG_FILENAME, &weights,
      "Weights or checkpoint (safetensors; default: the model's seeded initial weights)", "FILE" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "The ONNX file to write", "OUT.onnx" },
    { "opset", 0, 0, G_OPTION_ARG_STRING, &opset_s, "ONNX opset, 13 to 17 (default 17)", "N" },
    { "dynamic-batch", 0, 0, G_OPTION_ARG_NONE, &dynamic,
      "Leave the batch dimension symbolic (\"N\")", NULL },
    { "batch", 'b', 0, G_OPTION_ARG_STRING, &batch_s,
      "Fixed batch size (default: the model's training batch size)", "N" },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx
    = g_option_context_new ("MODEL.json -o OUT.onnx — export to ONNX");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  const char *usage = "usage: twb export MODEL.json [--weights FILE] -o OUT.onnx [--opset 13..17] "
                      "[--dynamic-batch | --batch N]\n";

  if (!g_option_context_parse (ctx, &argc, &argv, &error) || argc != 2 || output == NULL)
    {
      g_printerr ("%s", usage);
      if (error)
        g_printerr ("twb: %s\n", error->message);
      return 2;
    }
  /* Every command's rule (engine/number.h): all of the token, in range; a
   * --batch of 0 used to fall back to the recipe's silently. */
  if ((opset_s && !tw_number_parse_int (opset_s, TW_ONNX_EXPORT_MIN_OPSET,
                                        TW_ONNX_EXPORT_MAX_OPSET, "--opset", &opset, &error))
      || (batch_s && !tw_number_parse_int (batch_s, 1, TW_MAX_BATCH, "--batch", &batch, &error)))
    {
      g_printerr ("%stwb: %s\n", usage, error->message);
      return 2;
    }
  if (batch_s && dynamic)
    {
      g_printerr ("%stwb: --batch takes a positive size and not with --dynamic-batch\n", usage);
      return 2;
    }
  g_autoptr (tw_file_roles) io = tw_file_roles_new ();
  tw_file_roles_input (io, argv[1], "the model");
  tw_file_roles_input (io, weights, "--weights");
  tw_file_roles_output (io, output, "-o");
  if (!twb_check_files (io))
    return 1;

  g_autoptr (tw_model) m = twb_load_model_checked (argv[1]);
  if (m == NULL)
    return 1;
  g_autoptr (tw_params) params = tw_onnx_export_params (m, weights, &error);
  if (params == NULL)
    {
      twb_print_error (NULL, error);
      return 1;
    }
  tw_onnx_export_options opt = {
    .opset = (int) opset,
    .dynamic_batch = dynamic,
    .batch = batch_s ? batch : m->recipe.batch_size,
  };
  if (!tw_onnx_export (m, params, &opt, output, &error))
    {
      g_printerr ("twb: %s: %s\n", argv[1], error->message);
      return 1;
    }
  if (weights == NULL)
    g_printerr ("twb: no --weights: %s holds the model's initial weights (seed %" G_GUINT64_FORMAT
                ")\n",
                output, m->recipe.seed);
  return 0;
}
