/* twb-import.c — `twb import MODEL.onnx [-o OUT.json] [--loss KIND]`: an
 * ONNX file as a twb model and its weights (OUT.safetensors beside it),
 * optionally with a label input and a loss to train it. */
#define G_LOG_DOMAIN "twb"

#include "app/twb-cli.h"
#include "engine/safetensors.h"
#include "onnx/onnx-import.h"

#include <string.h>

/* "MODEL.onnx" → "MODEL.json" in the same folder. */
static char *
default_output (const char *input)
{
  if (g_str_has_suffix (input, ".onnx"))
    return g_strdup_printf ("%.*s.json", (int) (strlen (input) - strlen (".onnx")), input);
  return g_strdup_printf ("%s.json", input);
}

int
twb_cmd_import (int argc, char **argv)
{
  g_autofree char *output = NULL, *loss_name = NULL;
  GOptionEntry entries[] = {
    { "loss", 0, 0, G_OPTION_ARG_STRING, &loss_name,
      "Add a label input and a loss on the first output, for training: none (default), auto "
      "(cross-entropy when the output is [N, C]), cross-entropy or mse", "KIND" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
      "Model file to write (default: MODEL.json beside MODEL.onnx); the weights go to "
      "OUT.safetensors beside it", "OUT.json" },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx
    = g_option_context_new ("MODEL.onnx — an ONNX model as a twb model and its weights");
  g_autoptr (GError) error = NULL;
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error) || argc != 2)
    {
      g_printerr ("usage: twb import MODEL.onnx [-o OUT.json] [--loss KIND]\n%s%s",
                  error ? error->message : "", error ? "\n" : "");
      return 2;
    }
  tw_onnx_loss loss = TW_ONNX_LOSS_NONE;
  if (loss_name && !tw_onnx_loss_from_name (loss_name, &loss))
    {
      g_printerr ("twb: --loss: unknown “%s” (none, auto, cross-entropy or mse)\n", loss_name);
      return 2;
    }
  const char *input = argv[1];
  if (output == NULL)
    output = default_output (input);
  g_autofree char *wpath = tw_onnx_weights_path_for (output);
  /* Both outputs checked before either is written: -o a folder, a fifo or
   * /dev/full is refused, and OUT.safetensors is never made beside it. */
  g_autoptr (tw_file_roles) io = tw_file_roles_new ();
  tw_file_roles_input (io, input, "the ONNX model");
  tw_file_roles_output (io, output, "-o");
  tw_file_roles_output (io, wpath, "the weights file");
  if (!twb_check_files (io))
    return 1;

  g_autoptr (GHashTable) weights = NULL;
  tw_onnx_import_options opts = { .loss = loss };
  g_autoptr (tw_model) m = tw_onnx_import_with (input, &opts, &weights, &error);
  if (m == NULL)
    {
      twb_print_error (NULL, error);
      return 1;
    }
  /* Weights first: a model file never names a weights file that is not there. */
  g_autoptr (GHashTable) meta = g_hash_table_new (g_str_hash, g_str_equal);
  g_hash_table_insert (meta, "source", (gpointer) input);
  if (!tw_safetensors_save (wpath, weights, meta, &error) || !tw_model_save (m, output, &error))
    {
      twb_print_error (NULL, error);
      return 1;
    }

  /* Nodes per op, in the order ops first appear. */
  g_autoptr (GHashTable) counts = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr (GPtrArray) ops = g_ptr_array_new ();
  int nn = tw_graph_n_nodes (m->graph);
  for (int i = 0; i < nn; i++)
    {
      const char *op = tw_graph_node (m->graph, i)->op_name;
      guint c = GPOINTER_TO_UINT (g_hash_table_lookup (counts, op));
      if (c == 0)
        g_ptr_array_add (ops, (gpointer) op);
      g_hash_table_insert (counts, (gpointer) op, GUINT_TO_POINTER (c + 1));
    }
  g_autoptr (GString) per_op = g_string_new (NULL);
  for (guint k = 0; k < ops->len; k++)
    g_string_append_printf (per_op, "%s%s %u", k ? ", " : "", (const char *) ops->pdata[k],
                            GPOINTER_TO_UINT (g_hash_table_lookup (counts, ops->pdata[k])));
  int64_t numel = 0;
  GHashTableIter it;
  gpointer v;
  g_hash_table_iter_init (&it, weights);
  while (g_hash_table_iter_next (&it, NULL, &v))
    numel += tw_tensor_numel (v);
  g_print ("wrote %s: %d nodes (%s)\n", output, nn, per_op->str);
  g_print ("wrote %s: %u tensors, %" G_GINT64_FORMAT " values\n", wpath,
           g_hash_table_size (weights), numel);
  return 0;
}
