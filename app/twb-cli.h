/* twb-cli.h — the `twb` command line's subcommands.  Each returns the
 * process exit status (0 ok, 1 error, 2 usage) and prints its own errors. */
#pragma once

#include "engine/data-fit.h"
#include "engine/fileutil.h"
#include "engine/model.h"
#include "engine/number.h"
#include "engine/session.h"

#include <json-glib/json-glib.h>
#include <stdio.h>

G_BEGIN_DECLS

int twb_cmd_train (int argc, char **argv);
int twb_cmd_eval (int argc, char **argv);
int twb_cmd_info (int argc, char **argv);
int twb_cmd_compile (int argc, char **argv);
int twb_cmd_predict (int argc, char **argv);
int twb_cmd_devices (int argc, char **argv);
int twb_cmd_profile (int argc, char **argv);
int twb_cmd_trace_info (int argc, char **argv);
int twb_cmd_onnx_info (int argc, char **argv);
int twb_cmd_import (int argc, char **argv);
int twb_cmd_export (int argc, char **argv);
int twb_cmd_simulate (int argc, char **argv);

/* Largest --threads accepted by every command: far above any machine, low
 * enough that a typo cannot ask OpenMP for a billion threads. */
#define TWB_MAX_THREADS 4096

/* Shared helpers. */
void twb_print_error (const char *what, const GError *error);
/* The builder's object on one line of stdout, flushed (a reader of a
 * stream gets every line as it is made). */
void twb_print_json (JsonBuilder *b);
/* A member holding v, or null when v is not finite (JSON has no NaN). */
void twb_json_member_double (JsonBuilder *b, const char *name, double v);
/* Load a model and infer its shapes; prints every shape error (node by node)
 * and returns NULL when there is any. */
tw_model *twb_load_model_checked (const char *path);
/* The files a command reads and writes, checked before it writes anything
 * (tw_file_roles_check: no output is an input, another output, or anything
 * but a regular file): FALSE with the error printed. */
gboolean twb_check_files (const tw_file_roles *io);
/* A new tw_file_roles (free it) holding as inputs the model file m was read
 * from and the files its dataset reads: spec's, or when NULL the recipe's. */
tw_file_roles *twb_model_inputs (const char *model_path, const tw_model *m, const char *spec);
/* The command-line debugger (twb-debug.c): a break's position and the
 * min / max / mean / NaN / Inf of each of its tensors, on stderr; and the
 * tensors as a safetensors file (names as the debugger shows them). */
void twb_print_break (const tw_snapshot *paused);
gboolean twb_dump_break (const tw_snapshot *paused, const char *path, const char *model,
                         GError **error);
/* `twb train --debug`: commands read from in at a pause (c, s, n, i, p NAME,
 * b WHEN, d, lr X, q; h lists them) until one resumes the session (TRUE) or
 * quits, or in ends (FALSE). */
gboolean twb_debug_prompt (tw_session *s, FILE *in);
/* `--progress-json` (twb train, twb simulate --mode train): one line per
 * METRICS, EPOCH or FINISHED snapshot, as docs/cli.md describes; and the
 * gradient buckets a data-parallel trainer ended with. */
void twb_progress_json_line (const tw_snapshot *sn, int64_t total_steps);
void twb_progress_json_buckets (tw_trainer *tr, double bucket_mb);
/* Peak resident set size of this process, in bytes. */
gint64 twb_peak_rss_bytes (void);

G_END_DECLS
