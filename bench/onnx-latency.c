/* onnx-latency.c — inference latency of an ONNX ResNet-50 in twb beside
 * PyTorch, at the same thread count.
 *
 *   build/bench/onnx-latency [--model resnet50] [--batches 1,8] [--threads N]
 *       [--seconds 2] [--warmup 3] [--max-runs 200] [--size 224] [--opset 17]
 *       [--torch-folded] [--keep DIR] [--json FILE]
 *
 * bench/onnx_latency_torch.py (run with /usr/bin/python3) builds the
 * torchvision model (random weights, nothing downloaded), exports it to
 * ONNX into a temporary folder with its batch norms as BatchNormalization
 * nodes (--torch-folded: folded by torch's exporter, its default), writes
 * one input and torch's output per batch size and times torch eager
 * (torch.no_grad, eval) and torch.jit.freeze (torch.jit.trace (model)).
 * This program then imports the file (tw_onnx_import) and times, on the
 * same inputs:
 *
 *   twb eager          tw_eager_forward (inference) + tw_eager_release
 *   twb compiled       the INFER program with every pass (TW_PASS_ALL)
 *   twb compiled -     the same without TW_PASS_FOLD_BN and
 *                      TW_PASS_FUSE_RESIDUAL (batch norm folding, conv +
 *                      residual add + relu)
 *
 * Every cell: WARMUP untimed runs, then timed runs until SECONDS have been
 * spent in them (at least 3, at most MAX_RUNS); median and p90 (nearest
 * rank) in ms.  Threads: --threads (default: every core) for twb
 * (tw_set_num_threads and the executors) and torch (torch.set_num_threads,
 * OMP_NUM_THREADS / MKL_NUM_THREADS in its environment).  Also printed:
 * each twb output's largest error against torch's, relative to the largest
 * logit, and what the two compiled programs fused.
 *
 * Without torch, torchvision or onnx for /usr/bin/python3 it says so and
 * exits 0 (nothing to compare with).  Exit 1 when a step fails.
 */
#include "bench/bench-train.h"
#include "engine/compile/compiled.h"
#include "engine/device.h"
#include "engine/events.h"
#include "onnx/onnx-import.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#define TORCH_PYTHON "/usr/bin/python3"
#define NEW_PASSES (TW_PASS_FOLD_BN | TW_PASS_FUSE_RESIDUAL)

enum
{
  TWB_EAGER,
  TWB_COMPILED,
  TWB_COMPILED_PLAIN,
  TORCH_EAGER,
  TORCH_JIT,
  N_MODES
};

static const char *const mode_names[N_MODES] = {
  "twb eager", "twb compiled", "twb compiled -", "torch eager", "torch jit",
};
static const char *const mode_notes[N_MODES] = {
  "", "all passes", "no fold/fusion", "no_grad", "trace+freeze",
};

typedef struct
{
  double median_ms, p90_ms;
  int runs;
  gboolean done;
} cell;

typedef struct
{
  char *model, *batches_opt, *keep, *json_out, *script;
  int threads, warmup, max_runs, size, opset;
  double seconds;
  gboolean torch_folded;
} options;

typedef struct
{
  tw_eager *ex;   /* TWB_EAGER */
  tw_compiled *c; /* the compiled modes */
} runner;

static gboolean
run_once (runner *r, tw_tensor *x, GError **error)
{
  if (r->ex)
    {
      gboolean ok = tw_eager_forward (r->ex, x, NULL, FALSE, 0, error);
      tw_eager_release (r->ex);
      return ok;
    }
  return tw_compiled_run (r->c, TW_PROGRAM_INFER, x, NULL, 0, error);
}

/* The timing rule of onnx_latency_torch.py's timed (). */
static gboolean
time_cell (runner *r, tw_tensor *x, const options *o, cell *out, GError **error)
{
  for (int i = 0; i < o->warmup; i++)
    if (!run_once (r, x, error))
      return FALSE;
  g_autoptr (GArray) t = g_array_new (FALSE, FALSE, sizeof (double));
  double total = 0;
  while ((int) t->len < o->max_runs && ((int) t->len < 3 || total < o->seconds))
    {
      gint64 t0 = tw_now_ns ();
      if (!run_once (r, x, error))
        return FALSE;
      double s = (tw_now_ns () - t0) * 1e-9;
      g_array_append_val (t, s);
      total += s;
    }
  g_array_sort (t, twb_bench_cmp_double);
  int n = (int) t->len;
  double *v = (double *) t->data;
  out->median_ms = 1e3 * (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
  out->p90_ms = 1e3 * v[MAX (0, (int) ceil (0.9 * n) - 1)];
  out->runs = n;
  out->done = TRUE;
  return TRUE;
}

/* Largest |got - want| over the largest |want| (the measure). */
static double
rel_error (const tw_tensor *got, const tw_tensor *want)
{
  if (tw_tensor_numel (got) != tw_tensor_numel (want))
    return INFINITY;
  double err = 0, scale = 0;
  for (int64_t i = 0, n = tw_tensor_numel (want); i < n; i++)
    {
      err = MAX (err, fabs (tw_tensor_get_flat (got, i) - tw_tensor_get_flat (want, i)));
      scale = MAX (scale, fabs (tw_tensor_get_flat (want, i)));
    }
  return err / MAX (scale, 1e-30);
}

/* Runs the torch side; returns its JSON object (new reference), NULL with
 * *skipped when torch is missing, NULL with an error when it failed. */
static JsonObject *
run_torch (const options *o, const char *dir, gboolean *skipped, GError **error)
{
  g_autofree char *threads = g_strdup_printf ("%d", o->threads);
  g_autofree char *seconds = g_strdup_printf ("%g", o->seconds);
  g_autofree char *warmup = g_strdup_printf ("%d", o->warmup);
  g_autofree char *max_runs = g_strdup_printf ("%d", o->max_runs);
  g_autofree char *size = g_strdup_printf ("%d", o->size);
  g_autofree char *opset = g_strdup_printf ("%d", o->opset);
  const char *argv[] = { TORCH_PYTHON, o->script,   "--out",
                         dir,          "--model",   o->model,
                         "--opset",    opset,       "--size",
                         size,         "--batches", o->batches_opt,
                         "--threads",  threads,     "--seconds",
                         seconds,      "--warmup",  warmup,
                         "--max-runs", max_runs,    o->torch_folded ? "--torch-folded" : NULL,
                         NULL };
  g_auto (GStrv) env = g_get_environ ();
  env = g_environ_setenv (env, "OMP_NUM_THREADS", threads, TRUE);
  env = g_environ_setenv (env, "MKL_NUM_THREADS", threads, TRUE);
  g_autofree char *out = NULL;
  int status = 0;
  *skipped = FALSE;
  /* stderr (its progress lines) goes to ours. */
  if (!g_spawn_sync (NULL, (char **) argv, env, G_SPAWN_DEFAULT, NULL, NULL, &out, NULL, &status,
                     error))
    return NULL;
  if (WIFEXITED (status) && WEXITSTATUS (status) == 77)
    {
      *skipped = TRUE;
      return NULL;
    }
  if (!g_spawn_check_wait_status (status, error))
    {
      g_prefix_error (error, "%s: ", o->script);
      return NULL;
    }
  const char *last = g_strrstr (out, "\n{");
  last = last ? last + 1 : out;
  g_autoptr (JsonParser) parser = json_parser_new ();
  if (!json_parser_load_from_data (parser, last, -1, error))
    {
      g_prefix_error (error, "%s: its output: ", o->script);
      return NULL;
    }
  JsonNode *root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s printed no JSON object",
                   o->script);
      return NULL;
    }
  return json_object_ref (json_node_get_object (root));
}

static void
torch_cell (JsonObject *torch, const char *which, int64_t batch, cell *out)
{
  g_autofree char *key = g_strdup_printf ("%" G_GINT64_FORMAT, batch);
  JsonObject *cells = json_object_get_object_member (torch, "cells");
  JsonObject *w = cells ? json_object_get_object_member (cells, which) : NULL;
  JsonObject *c =
    w && json_object_has_member (w, key) ? json_object_get_object_member (w, key) : NULL;
  if (c == NULL)
    return;
  out->median_ms = json_object_get_double_member (c, "median_ms");
  out->p90_ms = json_object_get_double_member (c, "p90_ms");
  out->runs = (int) json_object_get_int_member (c, "runs");
  out->done = TRUE;
}

/* "N batch norms folded, M residual tails fused" of a compiled program. */
static char *
program_summary (tw_program *p)
{
  int folds = 0, residual = 0, bn_left = 0;
  for (guint i = 0; i < p->instrs->len; i++)
    {
      const tw_instr *ins = tw_program_instr (p, (int) i);
      folds += strstr (ins->label, "+batch_norm") != NULL;
      residual += strstr (ins->label, "conv2d") && strstr (ins->label, "+add");
      bn_left += ins->op && strcmp (ins->op->name, "batch_norm") == 0;
    }
  return g_strdup_printf ("%u instructions, %d batch norms folded (%d left), %d conv + add "
                          "(+ relu) fused",
                          p->instrs->len, folds, bn_left, residual);
}

static void
remove_dir (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *f;
  while (d && (f = g_dir_read_name (d)))
    {
      g_autofree char *fp = g_build_filename (dir, f, NULL);
      g_unlink (fp);
    }
  g_rmdir (dir);
}

static void
json_cell (JsonBuilder *b, const char *name, const cell *c)
{
  json_builder_set_member_name (b, name);
  if (!c->done)
    {
      json_builder_add_null_value (b);
      return;
    }
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "median_ms");
  json_builder_add_double_value (b, c->median_ms);
  json_builder_set_member_name (b, "p90_ms");
  json_builder_add_double_value (b, c->p90_ms);
  json_builder_set_member_name (b, "runs");
  json_builder_add_int_value (b, c->runs);
  json_builder_end_object (b);
}

/* Everything after the folder for the export exists: 0, or 1 (said why). */
static int
run (const options *o, GArray *batches, const char *dir)
{
  g_autoptr (GError) error = NULL;
  fprintf (stderr, "onnx-latency: %s: torch export and timing (%d thread%s)\n", o->model,
           o->threads, o->threads == 1 ? "" : "s");
  gboolean skipped = FALSE;
  g_autoptr (JsonObject) torch = run_torch (o, dir, &skipped, &error);
  if (torch == NULL)
    {
      if (skipped)
        {
          printf ("onnx-latency: skipped: %s lacks torch, torchvision or onnx (nothing to export "
                  "the model with or compare against)\n",
                  TORCH_PYTHON);
          return 0;
        }
      fprintf (stderr, "onnx-latency: %s\n", error->message);
      return 1;
    }

  tw_ops_init ();
  tw_set_num_threads (o->threads);
  const char *onnx_path = json_object_get_string_member (torch, "onnx");
  g_autoptr (GHashTable) weights = NULL;
  gint64 t0 = tw_now_ns ();
  g_autoptr (tw_model) m = tw_onnx_import (onnx_path, &weights, &error);
  double import_ms = (tw_now_ns () - t0) * 1e-6;
  if (m == NULL)
    {
      fprintf (stderr, "onnx-latency: %s\n", error->message);
      return 1;
    }
  g_autoptr (tw_params) params = tw_params_new ();
  g_autoptr (tw_eager) ex = tw_eager_new (m->graph, params, 0, &error);
  tw_state_dict_report rep = { 0 };
  if (ex == NULL ||
      !tw_params_load_state_dict (params, weights, NULL, onnx_path, TRUE, &rep, &error))
    {
      fprintf (stderr, "onnx-latency: %s\n", error->message);
      return 1;
    }
  tw_state_dict_report_clear (&rep);
  tw_eager_set_num_threads (ex, o->threads);
  g_autoptr (tw_compiled) c_all = tw_compiled_new (m->graph, params, 0, &error);
  g_autoptr (tw_compiled) c_plain = c_all ? tw_compiled_new (m->graph, params, 0, &error) : NULL;
  if (c_plain == NULL)
    {
      fprintf (stderr, "onnx-latency: %s\n", error->message);
      return 1;
    }
  tw_compiled_set_passes (c_plain, TW_PASS_ALL & ~NEW_PASSES);
  tw_compiled_set_num_threads (c_all, o->threads);
  tw_compiled_set_num_threads (c_plain, o->threads);
  runner runners[3] = { { ex, NULL }, { NULL, c_all }, { NULL, c_plain } };

  guint nb = batches->len;
  g_autofree cell *cells = g_new0 (cell, nb * N_MODES);
  g_autofree double *errs = g_new0 (double, nb * 3);
  g_auto (GStrv) summaries = g_new0 (char *, 2 * nb + 1);
  for (guint bi = 0; bi < nb; bi++)
    {
      int64_t b = g_array_index (batches, int64_t, bi);
      g_autofree char *xin = g_strdup_printf ("%s/input-b%" G_GINT64_FORMAT ".pb", dir, b);
      g_autofree char *yout = g_strdup_printf ("%s/output-b%" G_GINT64_FORMAT ".pb", dir, b);
      g_autoptr (tw_tensor) x = tw_onnx_read_tensor_file (xin, &error);
      g_autoptr (tw_tensor) want = x ? tw_onnx_read_tensor_file (yout, &error) : NULL;
      if (want == NULL)
        {
          fprintf (stderr, "onnx-latency: %s\n", error->message);
          return 1;
        }
      for (int k = 0; k < 3; k++)
        {
          fprintf (stderr, "onnx-latency: batch %" G_GINT64_FORMAT ": %s %s\n", b, mode_names[k],
                   mode_notes[k]);
          if (!run_once (&runners[k], x, &error))
            {
              fprintf (stderr, "onnx-latency: %s, batch %" G_GINT64_FORMAT ": %s\n", mode_names[k],
                       b, error->message);
              return 1;
            }
          if (k == TWB_EAGER)
            {
              /* run_once released the tape: once more, keeping the output. */
              if (!tw_eager_forward (ex, x, NULL, FALSE, 0, &error))
                {
                  fprintf (stderr, "onnx-latency: twb eager: %s\n", error->message);
                  return 1;
                }
              errs[bi * 3 + k] = rel_error (tw_eager_prediction (ex), want);
              tw_eager_release (ex);
            }
          else
            {
              errs[bi * 3 + k] = rel_error (tw_compiled_prediction (runners[k].c), want);
              tw_program *p = tw_compiled_program (runners[k].c, TW_PROGRAM_INFER, b, NULL);
              summaries[2 * bi + k - 1] = program_summary (p);
            }
          if (!time_cell (&runners[k], x, o, &cells[bi * N_MODES + k], &error))
            {
              fprintf (stderr, "onnx-latency: %s: %s\n", mode_names[k], error->message);
              return 1;
            }
        }
      torch_cell (torch, "eager", b, &cells[bi * N_MODES + TORCH_EAGER]);
      torch_cell (torch, "jit", b, &cells[bi * N_MODES + TORCH_JIT]);
    }

  printf ("%s (torchvision %s, random weights), ONNX opset %d%s, %dx%d, %d thread%s "
          "(torch %s: %" G_GINT64_FORMAT "); imported in %.0f ms\n",
          o->model, json_object_get_string_member (torch, "torchvision"), o->opset,
          o->torch_folded ? " (batch norms folded by torch's exporter)" : " with its batch norms",
          o->size, o->size, o->threads, o->threads == 1 ? "" : "s",
          json_object_get_string_member (torch, "torch"),
          json_object_get_int_member (torch, "threads"), import_ms);
  printf ("latency in ms, median / p90 (timed runs)\n\n%6s", "batch");
  for (int k = 0; k < N_MODES; k++)
    printf (" %21s", mode_names[k]);
  printf ("\n%6s", "");
  for (int k = 0; k < N_MODES; k++)
    printf (" %21s", mode_notes[k]);
  printf ("\n");
  for (guint bi = 0; bi < nb; bi++)
    {
      printf ("%6" G_GINT64_FORMAT, g_array_index (batches, int64_t, bi));
      for (int k = 0; k < N_MODES; k++)
        {
          const cell *c = &cells[bi * N_MODES + k];
          g_autofree char *s =
            c->done ? g_strdup_printf ("%.1f / %.1f (%d)", c->median_ms, c->p90_ms, c->runs)
                    : g_strdup ("n/a");
          printf (" %21s", s);
        }
      printf ("\n");
    }
  printf ("\nlargest |twb - torch| / largest |torch logit|:\n");
  for (guint bi = 0; bi < nb; bi++)
    printf ("  batch %" G_GINT64_FORMAT ": eager %.2e, compiled %.2e, compiled - %.2e\n",
            g_array_index (batches, int64_t, bi), errs[bi * 3], errs[bi * 3 + 1], errs[bi * 3 + 2]);
  printf ("compiled programs (batch %" G_GINT64_FORMAT "):\n  all passes:      %s\n"
          "  no fold/fusion:  %s\n",
          g_array_index (batches, int64_t, 0), summaries[0], summaries[1]);

  if (o->json_out)
    {
      g_autoptr (JsonBuilder) jb = json_builder_new ();
      json_builder_begin_object (jb);
      json_builder_set_member_name (jb, "model");
      json_builder_add_string_value (jb, o->model);
      json_builder_set_member_name (jb, "threads");
      json_builder_add_int_value (jb, o->threads);
      json_builder_set_member_name (jb, "import_ms");
      json_builder_add_double_value (jb, import_ms);
      json_builder_set_member_name (jb, "batches");
      json_builder_begin_array (jb);
      for (guint bi = 0; bi < nb; bi++)
        {
          json_builder_begin_object (jb);
          json_builder_set_member_name (jb, "batch");
          json_builder_add_int_value (jb, g_array_index (batches, int64_t, bi));
          static const char *const keys[N_MODES] = { "twb_eager", "twb_compiled",
                                                     "twb_compiled_without_fold_fusion",
                                                     "torch_eager", "torch_jit_freeze" };
          for (int k = 0; k < N_MODES; k++)
            json_cell (jb, keys[k], &cells[bi * N_MODES + k]);
          static const char *const ekeys[3] = { "error_twb_eager", "error_twb_compiled",
                                                "error_twb_compiled_without_fold_fusion" };
          for (int k = 0; k < 3; k++)
            {
              json_builder_set_member_name (jb, ekeys[k]);
              json_builder_add_double_value (jb, errs[bi * 3 + k]);
            }
          json_builder_end_object (jb);
        }
      json_builder_end_array (jb);
      json_builder_end_object (jb);
      g_autoptr (JsonGenerator) gen = json_generator_new ();
      g_autoptr (JsonNode) root = json_builder_get_root (jb);
      json_generator_set_root (gen, root);
      json_generator_set_pretty (gen, TRUE);
      if (!json_generator_to_file (gen, o->json_out, &error))
        {
          fprintf (stderr, "onnx-latency: %s\n", error->message);
          return 1;
        }
    }
  return 0;
}

int
main (int argc, char **argv)
{
  options o = {
    .threads = 0, .warmup = 3, .max_runs = 200, .size = 224, .opset = 17, .seconds = 2.0
  };
  GOptionEntry entries[] = {
    { "model", 0, 0, G_OPTION_ARG_STRING, &o.model, "torchvision model (default resnet50)",
      "NAME" },
    { "batches", 0, 0, G_OPTION_ARG_STRING, &o.batches_opt, "Batch sizes (default 1,8)", "LIST" },
    { "threads", 't', 0, G_OPTION_ARG_INT, &o.threads, "Threads for both (default: every core)",
      "N" },
    { "seconds", 0, 0, G_OPTION_ARG_DOUBLE, &o.seconds, "Timed seconds per cell (default 2)", "S" },
    { "warmup", 0, 0, G_OPTION_ARG_INT, &o.warmup, "Untimed runs per cell (default 3)", "N" },
    { "max-runs", 0, 0, G_OPTION_ARG_INT, &o.max_runs, "Timed runs per cell at most (default 200)",
      "N" },
    { "size", 0, 0, G_OPTION_ARG_INT, &o.size, "Input height and width (default 224)", "PX" },
    { "opset", 0, 0, G_OPTION_ARG_INT, &o.opset, "ONNX opset of the export (default 17)", "N" },
    { "torch-folded", 0, 0, G_OPTION_ARG_NONE, &o.torch_folded,
      "Export as torch does by default: batch norms folded by torch's exporter", NULL },
    { "keep", 0, 0, G_OPTION_ARG_FILENAME, &o.keep, "Export into DIR and keep it", "DIR" },
    { "json", 0, 0, G_OPTION_ARG_FILENAME, &o.json_out, "Also write the results as JSON", "FILE" },
    { "script", 0, 0, G_OPTION_ARG_FILENAME, &o.script,
      "The torch side (default: the source tree's bench/onnx_latency_torch.py)", "FILE" },
    { NULL }
  };
  g_autoptr (GError) error = NULL;
  g_autoptr (GOptionContext) ctx = g_option_context_new ("— ONNX ResNet-50 latency: twb and torch");
  g_option_context_add_main_entries (ctx, entries, NULL);
  setlocale (LC_ALL, "");
  if (!g_option_context_parse (ctx, &argc, &argv, &error) || argc != 1)
    {
      fprintf (stderr, "onnx-latency: %s\n", error ? error->message : "no arguments expected");
      return 2;
    }
  setlocale (LC_NUMERIC, "C");
  if (o.model == NULL)
    o.model = g_strdup ("resnet50");
  if (o.batches_opt == NULL)
    o.batches_opt = g_strdup ("1,8");
  if (o.script == NULL)
    o.script = g_strdup (TWB_BENCH_DIR "/onnx_latency_torch.py");
  if (o.threads <= 0)
    o.threads = g_get_num_processors ();
  g_auto (GStrv) bparts = g_strsplit (o.batches_opt, ",", -1);
  g_autoptr (GArray) batches = g_array_new (FALSE, FALSE, sizeof (int64_t));
  for (char **b = bparts; *b; b++)
    {
      gint64 v;
      if (!**b)
        continue;
      if (!g_ascii_string_to_signed (*b, 10, 1, 4096, &v, NULL))
        {
          fprintf (stderr, "onnx-latency: --batches: '%s' is not a batch size (1..4096)\n", *b);
          return 2;
        }
      g_array_append_val (batches, v);
    }
  if (batches->len == 0 || o.seconds < 0 || o.warmup < 0 || o.max_runs < 1 || o.size < 32)
    {
      fprintf (stderr, "onnx-latency: needs batches, --seconds >= 0, --warmup >= 0, "
                       "--max-runs >= 1, --size >= 32\n");
      return 2;
    }

  g_autofree char *dir =
    o.keep ? g_strdup (o.keep) : g_dir_make_tmp ("twb-onnx-latency-XXXXXX", &error);
  if (dir == NULL || g_mkdir_with_parents (dir, 0755) != 0)
    {
      fprintf (stderr, "onnx-latency: no folder for the export: %s\n",
               error ? error->message : g_strerror (errno));
      return 1;
    }
  int status = run (&o, batches, dir);
  if (o.keep == NULL)
    remove_dir (dir);
  g_free (o.model);
  g_free (o.batches_opt);
  g_free (o.keep);
  g_free (o.json_out);
  g_free (o.script);
  return status;
}
