/* twb-devices.c — `twb devices`: the compute devices this build and machine
 * have, and for the CPU which matrix-product kernel runs which shape (the
 * per-machine choices AUTO measured, engine/cpu/gemm.h). */
#define G_LOG_DOMAIN "twb"

#include "app/twb-cli.h"
#include "engine/cpu/gemm.h"
#include "engine/device.h"

#include <json-glib/json-glib.h>

static const char *
backend_name (tw_gemm_backend b)
{
  switch (b)
    {
    case TW_GEMM_BACKEND_AUTO:
      return "auto";
    case TW_GEMM_BACKEND_OURS:
      return "ours";
    case TW_GEMM_BACKEND_OPENBLAS:
      return "openblas";
    }
  return "?";
}

static void
print_json (GArray *choices, const char *cache)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "devices");
  json_builder_begin_array (b);
  for (const tw_device *const *d = tw_device_list (); *d; d++)
    json_builder_add_string_value (b, tw_device_name (*d));
  json_builder_end_array (b);
  json_builder_set_member_name (b, "gemm");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "backend");
  json_builder_add_string_value (b, backend_name (tw_gemm_get_backend ()));
  json_builder_set_member_name (b, "kernel");
  json_builder_add_string_value (b, tw_gemm_kernel_name ());
  json_builder_set_member_name (b, "cache");
  if (cache)
    json_builder_add_string_value (b, cache);
  else
    json_builder_add_null_value (b);
  json_builder_set_member_name (b, "choices");
  json_builder_begin_array (b);
  for (guint i = 0; i < choices->len; i++)
    tw_gemm_choice_to_json (&g_array_index (choices, tw_gemm_choice, i), b);
  json_builder_end_array (b);
  json_builder_end_object (b);
  json_builder_end_object (b);
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  json_generator_set_pretty (gen, TRUE);
  g_autofree char *text = json_generator_to_data (gen, NULL);
  g_print ("%s\n", text);
}

int
twb_cmd_devices (int argc, char **argv)
{
  gboolean json = FALSE;
  GOptionEntry entries[] = {
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print one JSON object", NULL },
    { NULL },
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("— devices, and the CPU's matrix-product kernel per shape");
  g_option_context_set_summary (
    ctx, "Which of our kernel and OpenBLAS runs each product shape on this machine is\n"
         "measured the first time the shape is seen and remembered in the cache file\n"
         "shown.  TWB_GEMM=ours or TWB_GEMM=openblas forces one; deleting the file\n"
         "measures again.");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &error) || argc != 1)
    {
      g_printerr ("twb devices: %s\n", error ? error->message : "takes no arguments");
      return 2;
    }

  g_autoptr (GArray) choices = tw_gemm_choices ();
  g_autofree char *cache = tw_gemm_choice_cache_path ();
  if (json)
    {
      print_json (choices, cache);
      return 0;
    }

  g_print ("devices:");
  for (const tw_device *const *d = tw_device_list (); *d; d++)
    g_print (" %s", tw_device_name (*d));
  g_print ("\ncpu matrix products: %s (TWB_GEMM=%s)\n", tw_gemm_kernel_name (),
           backend_name (tw_gemm_get_backend ()));
  g_print ("choices cache: %s\n", cache ? cache : "(no cache directory)");
  if (choices->len == 0)
    {
      g_print ("no shape measured yet on this machine: each is timed the first time it runs\n");
      return 0;
    }
  g_print ("\n%-5s %8s %8s %8s %8s %7s %10s %12s %9s\n", "op", "M", "N", "K", "epilogue",
           "threads", "ours us", "openblas us", "runs on");
  for (guint i = 0; i < choices->len; i++)
    {
      const tw_gemm_choice *c = &g_array_index (choices, tw_gemm_choice, i);
      g_print ("%-5s %8" G_GINT64_FORMAT " %8" G_GINT64_FORMAT " %8" G_GINT64_FORMAT
               " %8s %7d %10.2f %12.2f %9s\n",
               c->trans_a ? (c->trans_b ? "TT" : "TN") : (c->trans_b ? "NT" : "NN"), c->m,
               c->n, c->k, c->epilogue ? "yes" : "no", c->threads, c->ours_us, c->openblas_us,
               c->ours ? "ours" : "openblas");
    }
  return 0;
}
