/* twb-devices.c — `twb devices`: the compute devices this build and machine
 * have; for the CPU its vector instructions, the OpenBLAS core in force (with
 * a warning and the OPENBLAS_CORETYPE that fixes it when the core is below
 * what the CPU runs, engine/cpu/blas-core.h), and which matrix-product
 * kernel runs which shape (the per-machine choices AUTO measured,
 * engine/cpu/gemm.h). */
#define G_LOG_DOMAIN "twb"

#include "app/twb-cli.h"
#include "engine/cpu/blas-core.h"
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

/* "AVX-512 (BF16, AMX), AVX2, FMA": what the kernels can use. */
static char *
features_string (const tw_cpu_features *f)
{
  GString *s = g_string_new (NULL);
  if (f->avx512)
    g_string_append_printf (s, "AVX-512%s%s%s, ", f->avx512_bf16 || f->amx ? " (" : "",
                            f->avx512_bf16 ? (f->amx ? "BF16, AMX" : "BF16") : (f->amx ? "AMX" : ""),
                            f->avx512_bf16 || f->amx ? ")" : "");
  if (f->avx2)
    g_string_append (s, "AVX2, ");
  if (f->fma)
    g_string_append (s, "FMA, ");
  if (f->avx && !f->avx2)
    g_string_append (s, "AVX, ");
  if (f->sse3 && !f->avx)
    g_string_append (s, "SSE3, ");
  if (s->len >= 2)
    g_string_truncate (s, s->len - 2);
  else
    g_string_append (s, "no vector extensions known to the engine");
  return g_string_free (s, FALSE);
}

static void
member_string (JsonBuilder *b, const char *name, const char *value)
{
  json_builder_set_member_name (b, name);
  if (value)
    json_builder_add_string_value (b, value);
  else
    json_builder_add_null_value (b);
}

/* The "cpu" and "blas" members of --json. */
static void
blas_json (JsonBuilder *b, const tw_cpu_features *f, const char *advice)
{
  const char *core = tw_blas_core_name (), *env = g_getenv ("OPENBLAS_CORETYPE");
  g_autofree char *feats = features_string (f);
  json_builder_set_member_name (b, "cpu");
  json_builder_begin_object (b);
  member_string (b, "vendor", f->vendor);
  json_builder_set_member_name (b, "family");
  json_builder_add_int_value (b, f->family);
  json_builder_set_member_name (b, "model");
  json_builder_add_int_value (b, f->model);
  member_string (b, "features", feats);
  member_string (b, "isa", tw_isa_tier_name (tw_cpu_tier (f)));
  json_builder_end_object (b);
  json_builder_set_member_name (b, "blas");
  json_builder_begin_object (b);
  member_string (b, "library", "OpenBLAS");
  member_string (b, "config", tw_blas_config ());
  member_string (b, "core", core);
  member_string (b, "core_isa", tw_isa_tier_name (tw_blas_core_tier (core)));
  member_string (b, "best_core", tw_blas_core_for (f));
  member_string (b, "openblas_coretype", env);
  json_builder_set_member_name (b, "below_cpu");
  json_builder_add_boolean_value (b, advice != NULL);
  member_string (b, "warning", advice);
  json_builder_end_object (b);
}

static void
print_json (GArray *choices, const char *cache, const tw_cpu_features *f, const char *advice)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "devices");
  json_builder_begin_array (b);
  for (const tw_device *const *d = tw_device_list (); *d; d++)
    json_builder_add_string_value (b, tw_device_name (*d));
  json_builder_end_array (b);
  blas_json (b, f, advice);
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
  tw_cpu_features f;
  tw_cpu_features_detect (&f);
  const char *core = tw_blas_core_name (), *env = g_getenv ("OPENBLAS_CORETYPE");
  g_autofree char *advice = tw_blas_core_advice (core, &f, env);
  if (json)
    {
      print_json (choices, cache, &f, advice);
      return 0;
    }

  g_autofree char *feats = features_string (&f);
  g_print ("devices:");
  for (const tw_device *const *d = tw_device_list (); *d; d++)
    g_print (" %s", tw_device_name (*d));
  g_print ("\ncpu: %s family %d model %d: %s\n", *f.vendor ? f.vendor : "unknown vendor",
           f.family, f.model, feats);
  tw_isa_tier have = tw_blas_core_tier (core), can = tw_cpu_tier (&f);
  g_print ("openblas core: %s (%s kernels%s%s)%s%s; %s\n", core, tw_isa_tier_name (have),
           env ? ", OPENBLAS_CORETYPE=" : "", env ? env : "",
           have == TW_ISA_UNKNOWN || can == TW_ISA_UNKNOWN ? ""
           : have >= can ? ": as wide as this CPU's " : ": below this CPU's ",
           have == TW_ISA_UNKNOWN || can == TW_ISA_UNKNOWN ? "" : tw_isa_tier_name (can),
           tw_blas_config ());
  if (advice)
    g_print ("warning: %s\n", advice);
  g_print ("cpu matrix products: %s (TWB_GEMM=%s)\n", tw_gemm_kernel_name (),
           backend_name (tw_gemm_get_backend ()));
  g_print ("choices cache: %s\n", cache ? cache : "(no cache directory)");
  if (choices->len == 0)
    {
      g_print ("no shape measured yet on this machine: each is timed the first time it runs\n");
      return 0;
    }
  g_print ("\n%-5s %8s %8s %8s %8s %7s %10s %12s %14s %13s\n", "op", "M", "N", "K", "epilogue",
           "threads", "ours us", "openblas us", "1-thread us", "runs on");
  for (guint i = 0; i < choices->len; i++)
    {
      const tw_gemm_choice *c = &g_array_index (choices, tw_gemm_choice, i);
      /* The one-thread times (ours / OpenBLAS) exist for shapes offered
       * more than one thread. */
      g_autofree char *serial = c->threads > 1
                                  ? g_strdup_printf ("%.1f / %.1f", c->serial_ours_us,
                                                     c->serial_openblas_us)
                                  : g_strdup ("-");
      g_autofree char *runs = g_strdup_printf ("%s x%d", c->ours ? "ours" : "openblas",
                                               c->run_threads > 0 ? c->run_threads : c->threads);
      g_print ("%-5s %8" G_GINT64_FORMAT " %8" G_GINT64_FORMAT " %8" G_GINT64_FORMAT
               " %8s %7d %10.2f %12.2f %14s %13s\n",
               c->trans_a ? (c->trans_b ? "TT" : "TN") : (c->trans_b ? "NT" : "NN"), c->m,
               c->n, c->k, c->epilogue ? "yes" : "no", c->threads, c->ours_us, c->openblas_us,
               serial, runs);
    }
  return 0;
}
