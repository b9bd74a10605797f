/* twb-train.c — `twb train` and `twb eval`. */
#define G_LOG_DOMAIN "twb"

#include "app/twb-cli.h"
#include "app/twb-dist.h"
#include "engine/comm/comm.h"
#include "engine/cpu/parallel.h"
#include "engine/fileutil.h"
#include "engine/device.h"
#include "engine/memory.h"
#include "engine/rate.h"
#include "engine/number.h"
#include "engine/session.h"
#include "engine/train.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double
now_s (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int
compare_double (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

typedef struct
{
  gboolean tty;
  gboolean quiet;
  int64_t total;
  double last_print;
  int64_t last_plain;
} progress;

static void
progress_update (progress *p, int64_t step, int64_t epoch, double loss, double samples_per_s,
                 double eta_s, gboolean final)
{
  double t = now_s ();
  if (p->quiet)
    return;
  if (p->tty)
    {
      if (!final && t - p->last_print < 0.1)
        return;
      p->last_print = t;
      const int width = 28;
      double frac = p->total > 0 ? (double) step / p->total : 0;
      int fill = (int) (frac * width);
      char bar[64];
      for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '=' : (i == fill ? '>' : ' ');
      bar[width] = '\0';
      /* The session's figures, from its finished steps (engine/rate.h). */
      char eta[32];
      tw_rate_format_eta (final ? 0 : eta_s, eta, sizeof eta);
      g_printerr ("\r[%s] %3.0f%% step %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT
                  " epoch %" G_GINT64_FORMAT " loss %.4f %.0f samples/s ETA %s  ",
                  bar, frac * 100, step, p->total, epoch + 1, loss, samples_per_s, eta);
      if (final)
        g_printerr ("\n");
      return;
    }
  /* Plain lines, about every 10% and at the end. */
  int64_t every = MAX (1, p->total / 10);
  if ((final && step != p->last_plain) || step - p->last_plain >= every)
    {
      p->last_plain = step;
      g_printerr ("step %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT " epoch %" G_GINT64_FORMAT
                  " loss %.4f %.0f samples/s\n",
                  step, p->total, epoch + 1, loss, samples_per_s);
    }
}

static void
json_member_int (JsonBuilder *b, const char *name, gint64 v)
{
  json_builder_set_member_name (b, name);
  json_builder_add_int_value (b, v);
}

void
twb_print_json (JsonBuilder *b)
{
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  g_autofree char *text = json_generator_to_data (gen, NULL);
  g_print ("%s\n", text);
  /* A reader of the stream (--progress-json) gets every line as it is made. */
  fflush (stdout);
}

/* ---- Numeric options, checked as they are parsed ------------------------
 *
 * Each is all of its token, within its range and whole where it counts
 * something (engine/number.h), or the command stops with a usage error
 * naming the option and the value; `set` says whether it was given (no
 * value doubles as "unset"). */
typedef struct
{
  const char *name;          /* long name, without "--" */
  char short_name;           /* or 0 */
  gboolean integer;
  int64_t min, max;          /* of an integer option */
  tw_real_range range;       /* of a real one */
  gboolean set;
  gint64 i;                  /* the value of an integer option */
  double d;                  /* of any option */
} num_opt;

#define NUM_INT(name, s, lo, hi) { name, s, TRUE, lo, hi, { 0 }, FALSE, 0, 0 }
#define NUM_REAL(name, lo, lo_open, hi, hi_open) \
  { name, 0, FALSE, 0, 0, { lo, hi, lo_open, hi_open }, FALSE, 0, 0 }

static num_opt *
num_opt_find (num_opt *opts, const char *option_name)
{
  for (num_opt *o = opts; o->name; o++)
    if ((g_str_has_prefix (option_name, "--") && strcmp (option_name + 2, o->name) == 0)
        || (option_name[0] == '-' && option_name[1] == o->short_name && option_name[1]
            && option_name[2] == '\0'))
      return o;
  return NULL;
}

static gboolean
parse_num_opt (const char *option_name, const char *value, gpointer data, GError **error)
{
  num_opt *o = num_opt_find (data, option_name);
  g_assert (o != NULL);
  g_autofree char *what = g_strdup_printf ("--%s", o->name);
  gboolean ok = o->integer ? tw_number_parse_int (value, o->min, o->max, what, &o->i, error)
                           : tw_number_parse_real (value, &o->range, what, &o->d, error);
  if (ok && o->integer)
    o->d = (double) o->i;
  o->set = ok;
  return ok;
}

/* An option context whose callbacks see nums. */
static GOptionContext *
option_context_new (const char *parameter, const GOptionEntry *entries, num_opt *nums)
{
  GOptionContext *ctx = g_option_context_new (parameter);
  GOptionGroup *g = g_option_group_new ("twb", "twb", "twb options", nums, NULL);
  g_option_group_add_entries (g, entries);
  g_option_context_set_main_group (ctx, g);
  return ctx;
}

#define NUM_ENTRY(name, s, help, arg) \
  { name, s, 0, G_OPTION_ARG_CALLBACK, (gpointer) parse_num_opt, help, arg }

static gboolean
apply_overrides (tw_model *m, const char *optimizer, const num_opt *lr, const num_opt *batch,
                 const num_opt *epochs, const num_opt *seed, const num_opt *val_split,
                 GError **error)
{
  tw_recipe *r = &m->recipe;
  if (optimizer)
    {
      tw_optimizer_type t;
      if (!tw_optimizer_type_from_name (optimizer, &t))
        {
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                       "--optimizer: '%s' is not sgd, adam or adamw", optimizer);
          return FALSE;
        }
      r->optimizer.type = t;
    }
  if (lr->set)
    r->optimizer.lr = lr->d;
  if (batch->set)
    r->batch_size = batch->i;
  if (epochs->set)
    r->epochs = epochs->i;
  if (seed->set)
    r->seed = (guint64) seed->i;
  if (val_split->set)
    r->validation_split = val_split->d;
  return TRUE;
}

static gboolean
check_device_mode (const char *device, const char *mode, GError **error)
{
  g_autoptr (GError) local = NULL;
  const tw_device *dev = device ? tw_device_find (device, &local) : tw_device_cpu ();
  if (dev == NULL)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "--device: %s", local->message);
      return FALSE;
    }
  if (tw_device_get_kind (dev) != TW_DEVICE_CPU)
    {
      /* Devices other than the CPU have no kernels yet. */
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "--device %s: training runs on the CPU only so far", device);
      return FALSE;
    }
  if (mode && strcmp (mode, "eager") != 0 && strcmp (mode, "compiled") != 0)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "--mode %s: expected eager or compiled", mode);
      return FALSE;
    }
  return TRUE;
}

static void
json_member_strv (JsonBuilder *b, const char *name, char **v)
{
  json_builder_set_member_name (b, name);
  json_builder_begin_array (b);
  for (char **p = v; p && *p; p++)
    json_builder_add_string_value (b, *p);
  json_builder_end_array (b);
}

/* Keys of --init-weights that did not load, as torch's load_state_dict
 * reports them (stderr). */
static void
print_state_dict_report (const char *path, const tw_state_dict_report *rep)
{
  g_printerr ("initial weights from %s: %u tensors loaded\n", path,
              rep->loaded ? g_strv_length (rep->loaded) : 0);
  if (rep->missing && rep->missing[0])
    {
      g_autofree char *k = g_strjoinv (", ", rep->missing);
      g_printerr ("missing keys: %s (they keep their initial values)\n", k);
    }
  if (rep->unexpected && rep->unexpected[0])
    {
      g_autofree char *k = g_strjoinv (", ", rep->unexpected);
      g_printerr ("unexpected keys: %s (not used)\n", k);
    }
}

/* Results of a finished run, as text or one JSON object. */
static void
print_results (tw_session *s, const tw_model *m, const char *path, const tw_snapshot *fin,
               gboolean json, gboolean compiled, int nthreads, const char *checkpoint,
               gboolean have_val, const tw_dataset *test, const char *init_weights,
               const tw_state_dict_report *init_report, gboolean tagged)
{
  tw_trainer *tr = tw_session_trainer (s);
  const tw_recipe *r = &tw_trainer_model (tr)->recipe;
  const GArray *times_ms = tw_session_step_times (s);
  g_autoptr (GArray) times = g_array_sized_new (FALSE, FALSE, sizeof (double), times_ms->len);
  double sum_ms = 0;
  for (guint i = 0; i < times_ms->len; i++)
    {
      double t = g_array_index (times_ms, double, i);
      g_array_append_val (times, t);
      sum_ms += t;
    }
  double median = NAN, mean = NAN, p90 = NAN;
  if (times->len)
    {
      g_array_sort (times, compare_double);
      median = g_array_index (times, double, times->len / 2);
      mean = sum_ms / times->len;
      /* Nearest rank. */
      p90 = g_array_index (times, double, MAX (0, (int) ceil (0.9 * times->len) - 1));
    }
  double sps = times->len ? (double) tw_session_step_samples (s) / MAX (sum_ms * 1e-3, 1e-9) : 0;
  size_t peak_act = tw_eager_peak_bytes (tw_trainer_executor (tr));
  /* A pipeline: the time its ranks waited for each other, against theory. */
  double bubble, bubble_theory;
  gboolean have_bubble = tw_trainer_pipeline_bubble (tr, &bubble, &bubble_theory);
  if (json)
    {
      g_autoptr (JsonBuilder) jb = json_builder_new ();
      json_builder_begin_object (jb);
      if (tagged)
        {
          json_builder_set_member_name (jb, "event");
          json_builder_add_string_value (jb, "results");
        }
      json_builder_set_member_name (jb, "model");
      json_builder_add_string_value (jb, m->name ? m->name : path);
      twb_json_member_double (jb, "train_loss", fin->train_loss);
      twb_json_member_double (jb, "test_loss", fin->test_loss);
      twb_json_member_double (jb, "test_accuracy", fin->test_accuracy);
      if (have_val)
        {
          twb_json_member_double (jb, "val_loss", fin->val_loss);
          twb_json_member_double (jb, "val_accuracy", fin->val_accuracy);
        }
      json_member_int (jb, "steps", tw_trainer_step_count (tr));
      json_member_int (jb, "batch", r->batch_size);
      json_member_int (jb, "threads", nthreads);
      twb_json_member_double (jb, "median_step_ms", median);
      twb_json_member_double (jb, "mean_step_ms", mean);
      twb_json_member_double (jb, "p90_step_ms", p90);
      {
        /* Parallel regions, and how often contention sent them to one
         * thread (engine/cpu/parallel.h). */
        tw_team_stats ts;
        tw_team_get_stats (&ts);
        json_member_int (jb, "parallel_regions", (gint64) ts.regions);
        json_member_int (jb, "parallel_degradations", (gint64) ts.degradations);
      }
      twb_json_member_double (jb, "samples_per_s", sps);
      json_member_int (jb, "peak_rss_bytes", twb_peak_rss_bytes ());
      json_member_int (jb, "peak_activation_bytes", (gint64) peak_act);
      json_builder_set_member_name (jb, "mode");
      json_builder_add_string_value (jb, compiled ? "compiled" : "eager");
      if (have_bubble)
        {
          twb_json_member_double (jb, "pipeline_bubble", bubble);
          twb_json_member_double (jb, "pipeline_bubble_theory", bubble_theory);
        }
      if (compiled && tw_trainer_pipeline_stage (tr) >= 0)
        /* A pipeline: this rank's stage's arenas, one per micro-batch in
         * flight (the only programs this process has run). */
        json_member_int (jb, "arena_bytes", (gint64) tw_compiled_arena_bytes ());
      else if (compiled)
        {
          /* Arena of the training program for the run's batch size. */
          tw_program *prog = tw_compiled_program (tw_trainer_compiled (tr), TW_PROGRAM_STEP,
                                                  r->batch_size, NULL);
          json_member_int (jb, "arena_bytes", prog ? (gint64) prog->arena_bytes : -1);
        }
      tw_dist_stats ds;
      tw_trainer_dist_stats (tr, &ds);
      if (ds.ranks > 1)
        {
          json_member_int (jb, "ranks", ds.ranks);
          json_member_int (jb, "buckets", ds.buckets);
          twb_json_member_double (jb, "comm_payload_bytes_per_step", ds.payload_bytes);
          twb_json_member_double (jb, "comm_sent_bytes_per_step", ds.sent_bytes);
          twb_json_member_double (jb, "comm_exposed_ms_per_step", ds.exposed_ms);
          twb_json_member_double (jb, "optimizer_state_bytes", ds.optimizer_state_bytes);
          json_builder_set_member_name (jb, "shard_optimizer");
          json_builder_add_boolean_value (jb, ds.sharded);
          if (ds.async_updates > 0)
            {
              json_member_int (jb, "async_updates", ds.async_updates);
              twb_json_member_double (jb, "staleness_mean", ds.staleness_mean);
              json_member_int (jb, "staleness_max", ds.staleness_max);
            }
        }
      if (init_weights)
        {
          json_builder_set_member_name (jb, "init_weights");
          json_builder_begin_object (jb);
          json_builder_set_member_name (jb, "file");
          json_builder_add_string_value (jb, init_weights);
          json_member_strv (jb, "loaded_keys", init_report->loaded);
          json_member_strv (jb, "missing_keys", init_report->missing);
          json_member_strv (jb, "unexpected_keys", init_report->unexpected);
          json_member_strv (jb, "ignored_keys", init_report->ignored);
          json_builder_end_object (jb);
        }
      json_builder_end_object (jb);
      twb_print_json (jb);
      return;
    }
  g_print ("steps %" G_GINT64_FORMAT ", train loss %.4f, median step %.3f ms, %.0f samples/s\n",
           tw_trainer_step_count (tr), fin->train_loss, median, sps);
  if (have_bubble)
    g_print ("pipeline bubble %.1f%% of the schedule (theory (S-1)/(M+S-1): %.1f%%)\n",
             bubble * 100, bubble_theory * 100);
  if (test)
    g_print ("test accuracy %.2f%% (loss %.4f) on %" G_GINT64_FORMAT " samples\n",
             fin->test_accuracy * 100, fin->test_loss, tw_dataset_size (test));
  tw_dist_stats ds;
  tw_trainer_dist_stats (tr, &ds);
  if (ds.ranks > 1)
    {
      g_autofree char *sent = g_format_size ((guint64) ds.sent_bytes);
      if (ds.async_updates > 0)
        g_print ("%d ranks (asynchronous: %d workers and a parameter server): %" G_GINT64_FORMAT
                 " updates, staleness mean %.2f, max %" G_GINT64_FORMAT "; %s pushed per step "
                 "and worker\n", ds.ranks, ds.ranks - 1, ds.async_updates, ds.staleness_mean,
                 ds.staleness_max, sent);
      else
        g_print ("%d ranks, %d gradient bucket%s: %s sent per step and rank, %.3f ms a step "
                 "waiting for communication after backward\n", ds.ranks, ds.buckets,
                 ds.buckets == 1 ? "" : "s", sent, ds.exposed_ms);
      g_autofree char *st = g_format_size ((guint64) ds.optimizer_state_bytes);
      g_print ("optimizer state on rank 0: %s%s\n", st,
               ds.sharded ? " (its shard of every bucket: ZeRO-1)" : " (the whole model's)");
    }
  if (checkpoint)
    g_print ("checkpoint saved to %s\n", checkpoint);
}

/* --metrics FILE.csv: the curves the window's dashboard draws, in its CSV
 * format (run,series,x,y; %.17g; nan), run "train". */
static void
metric_row (GString *csv, const char *series, int64_t x, double y)
{
  if (csv == NULL)
    return;
  char num[G_ASCII_DTOSTR_BUF_SIZE];
  if (isnan (y))
    g_strlcpy (num, "nan", sizeof num);
  else if (isinf (y))
    g_strlcpy (num, y > 0 ? "inf" : "-inf", sizeof num);
  else
    g_ascii_formatd (num, sizeof num, "%.17g", y);
  g_string_append_printf (csv, "train,%s,%" G_GINT64_FORMAT ",%s\n", series, x, num);
}

static void
metric_rows (GString *csv, const tw_snapshot *sn)
{
  if (csv == NULL)
    return;
  switch (sn->kind)
    {
    case TW_SNAP_METRICS:
      metric_row (csv, "loss", sn->step, sn->loss);
      metric_row (csv, "accuracy", sn->step, sn->accuracy);
      metric_row (csv, "lr", sn->step, sn->lr);
      metric_row (csv, "samples_per_s", sn->step, sn->samples_per_s);
      metric_row (csv, "step_ms", sn->step, sn->step_ms);
      if (!isnan (sn->comm_bytes))
        metric_row (csv, "comm_bytes", sn->step, sn->comm_bytes);
      for (int i = 0; sn->param_names && sn->param_names[i]; i++)
        {
          g_autofree char *name = g_strconcat ("grad_norm:", sn->param_names[i], NULL);
          metric_row (csv, name, sn->step, sn->grad_norm[i]);
        }
      break;
    case TW_SNAP_EPOCH:
      metric_row (csv, "train_loss", sn->step, sn->train_loss);
      if (!isnan (sn->val_loss))
        {
          metric_row (csv, "val_loss", sn->step, sn->val_loss);
          metric_row (csv, "val_accuracy", sn->step, sn->val_accuracy);
        }
      break;
    case TW_SNAP_FINISHED:
      if (!isnan (sn->test_loss))
        {
          metric_row (csv, "test_loss", sn->step, sn->test_loss);
          metric_row (csv, "test_accuracy", sn->step, sn->test_accuracy);
        }
      break;
    default:
      break;
    }
}

/* --progress-json: one line of JSON on stdout per snapshot the curves are
 * made of (what the window reads from a run in other processes).  event
 * "metrics": step, epoch, loss, accuracy, lr, step_ms, samples_per_s,
 * comm_bytes (null alone), total_steps, and over several ranks rank_step_ms
 * (every rank's compute time of the step, rank 0 first) and grad_norm (an
 * object: each trainable parameter's gradient norm on rank 0, null where
 * rank 0 has none); "epoch": step, epoch, train_loss, val_loss,
 * val_accuracy; "buckets" (data parallel, before "finished"): bucket_mb and
 * buckets, each { params (names in packing order), bytes }, the layout the
 * run ended with; "finished": step, state, test_loss, test_accuracy and
 * message when it did not finish.  Numbers that are not finite are null. */
void
twb_progress_json_line (const tw_snapshot *sn, int64_t total_steps)
{
  const char *event = sn->kind == TW_SNAP_METRICS ? "metrics"
                      : sn->kind == TW_SNAP_EPOCH  ? "epoch"
                      : sn->kind == TW_SNAP_FINISHED ? "finished" : NULL;
  if (event == NULL)
    return;
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "event");
  json_builder_add_string_value (b, event);
  json_member_int (b, "step", sn->step);
  switch (sn->kind)
    {
    case TW_SNAP_METRICS:
      json_member_int (b, "epoch", sn->epoch);
      twb_json_member_double (b, "loss", sn->loss);
      twb_json_member_double (b, "accuracy", sn->accuracy);
      twb_json_member_double (b, "lr", sn->lr);
      twb_json_member_double (b, "step_ms", sn->step_ms);
      twb_json_member_double (b, "samples_per_s", sn->samples_per_s);
      twb_json_member_double (b, "comm_bytes", sn->comm_bytes);
      json_member_int (b, "total_steps", total_steps);
      if (sn->n_ranks > 0)
        {
          json_builder_set_member_name (b, "rank_step_ms");
          json_builder_begin_array (b);
          for (int r = 0; r < sn->n_ranks; r++)
            if (isfinite (sn->rank_step_ms[r]))
              json_builder_add_double_value (b, sn->rank_step_ms[r]);
            else
              json_builder_add_null_value (b);
          json_builder_end_array (b);
        }
      if (sn->param_names)
        {
          json_builder_set_member_name (b, "grad_norm");
          json_builder_begin_object (b);
          for (int i = 0; sn->param_names[i]; i++)
            twb_json_member_double (b, sn->param_names[i], sn->grad_norm[i]);
          json_builder_end_object (b);
        }
      break;
    case TW_SNAP_EPOCH:
      json_member_int (b, "epoch", sn->epoch);
      twb_json_member_double (b, "train_loss", sn->train_loss);
      twb_json_member_double (b, "val_loss", sn->val_loss);
      twb_json_member_double (b, "val_accuracy", sn->val_accuracy);
      break;
    default:
      json_builder_set_member_name (b, "state");
      json_builder_add_string_value (b, tw_session_state_name (sn->state));
      twb_json_member_double (b, "test_loss", sn->test_loss);
      twb_json_member_double (b, "test_accuracy", sn->test_accuracy);
      if (sn->message)
        {
          json_builder_set_member_name (b, "message");
          json_builder_add_string_value (b, sn->message);
        }
      break;
    }
  json_builder_end_object (b);
  twb_print_json (b);
}

/* --progress-json, data parallel: the gradient buckets the run ended with. */
void
twb_progress_json_buckets (tw_trainer *tr, double bucket_mb)
{
  tw_bucket_layout l;
  if (!tw_trainer_dist_buckets (tr, &l))
    return;
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "event");
  json_builder_add_string_value (b, "buckets");
  twb_json_member_double (b, "bucket_mb", bucket_mb);
  json_builder_set_member_name (b, "buckets");
  json_builder_begin_array (b);
  for (int k = 0; k < l.n; k++)
    {
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "params");
      json_builder_begin_array (b);
      for (int i = 0; l.names[k][i]; i++)
        json_builder_add_string_value (b, l.names[k][i]);
      json_builder_end_array (b);
      json_member_int (b, "bytes", l.bytes[k]);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_end_object (b);
  twb_print_json (b);
  tw_bucket_layout_clear (&l);
}

int
twb_cmd_train (int argc, char **argv)
{
  char *data = NULL, *optimizer = NULL, *device = NULL, *mode = NULL;
  char *checkpoint = NULL, *resume = NULL, *dump = NULL, *init_weights = NULL, *metrics = NULL;
  char **breaks = NULL;
  gboolean json = FALSE, quiet = FALSE, allow_nan = FALSE, no_eval = FALSE, debug = FALSE;
  gboolean strict = FALSE, progress_json = FALSE;
  gboolean silent = FALSE;    /* a rank other than 0: no results either */
  enum { EPOCHS, MAX_STEPS, BATCH, LR, SEED, VAL_SPLIT, THREADS, RANKS, COMM_TIMEOUT, BUCKET_MB,
         RANKS_PER_NODE, LOCAL_SGD, ASYNC, STAGES, MICRO_BATCHES };
  g_auto (GStrv) original_argv = g_strdupv (argv);
  twb_dist_args dist;
  twb_dist_args_init (&dist);
  tw_comm *comm = NULL;
  num_opt nums[] = {
    [EPOCHS] = NUM_INT ("epochs", 'e', 1, G_MAXINT64),
    [MAX_STEPS] = NUM_INT ("max-steps", 0, 1, G_MAXINT64),
    [BATCH] = NUM_INT ("batch", 'b', 1, TW_MAX_BATCH),
    [LR] = NUM_REAL ("lr", 0, TRUE, INFINITY, FALSE),
    [SEED] = NUM_INT ("seed", 0, 0, G_MAXINT64),
    [VAL_SPLIT] = NUM_REAL ("val-split", 0, FALSE, 1, TRUE),
    [THREADS] = NUM_INT ("threads", 't', 0, TWB_MAX_THREADS),
    [RANKS] = NUM_INT ("ranks", 0, 1, 65536),
    [COMM_TIMEOUT] = NUM_REAL ("comm-timeout", 0, TRUE, 604800, FALSE),
    [BUCKET_MB] = NUM_REAL ("bucket-mb", 0, TRUE, 65536, FALSE),
    [RANKS_PER_NODE] = NUM_INT ("ranks-per-node", 0, 1, 65536),
    [LOCAL_SGD] = NUM_INT ("local-sgd", 0, 1, G_MAXINT32),
    [ASYNC] = NUM_INT ("async", 0, 0, G_MAXINT32),
    [STAGES] = NUM_INT ("stages", 0, 1, 65536),
    [MICRO_BATCHES] = NUM_INT ("micro-batches", 0, 1, TW_MAX_BATCH),
    { NULL },
  };
  GOptionEntry entries[] = {
    { "data", 'd', 0, G_OPTION_ARG_STRING, &data,
      "Dataset: fashion-mnist, fashion-mnist-subset, spirals, circles, xor, blobs, a folder of IDX "
      "files, FILE.csv, FILE.npy or synthetic[:N] (random class patterns shaped for the model's "
      "input) (default: the model's recipe)", "DATA" },
    NUM_ENTRY ("epochs", 'e', "Epochs (default: recipe)", "N"),
    NUM_ENTRY ("max-steps", 0, "Stop after N steps (in all, counting those of a resumed run)", "N"),
    { "debug", 0, 0, G_OPTION_ARG_NONE, &debug,
      "At each break (and before the first step, without --break-on) read debugger commands "
      "from standard input: c, s, n, i, p NAME, b WHEN, d, lr X, q (h lists them)", NULL },
    NUM_ENTRY ("batch", 'b', "Batch size (default: recipe)", "N"),
    NUM_ENTRY ("lr", 0, "Learning rate (default: recipe)", "X"),
    { "optimizer", 0, 0, G_OPTION_ARG_STRING, &optimizer, "sgd, adam or adamw", "NAME" },
    NUM_ENTRY ("seed", 0, "Seed for weights, shuffling and dropout", "N"),
    NUM_ENTRY ("val-split", 0,
               "Hold out this fraction of the training data for validation after each epoch", "X"),
    NUM_ENTRY ("threads", 't', "CPU threads (default 1; 0 = all)", "N"),
    { "device", 0, 0, G_OPTION_ARG_STRING, &device, "cpu", "DEV" },
    { "mode", 0, 0, G_OPTION_ARG_STRING, &mode, "eager (define-by-run) or compiled (static program)", "MODE" },
    { "checkpoint", 0, 0, G_OPTION_ARG_FILENAME, &checkpoint,
      "Save a checkpoint (safetensors) after every epoch and at the end", "FILE" },
    { "resume", 0, 0, G_OPTION_ARG_FILENAME, &resume, "Resume from a checkpoint", "FILE" },
    { "init-weights", 0, 0, G_OPTION_ARG_FILENAME, &init_weights,
      "Start from these weights: a state_dict as safetensors (PyTorch's names and shapes); "
      "missing and unexpected keys are reported", "FILE" },
    { "strict", 0, 0, G_OPTION_ARG_NONE, &strict,
      "With --init-weights: refuse a file with missing or unexpected keys", NULL },
    { "break-on", 0, 0, G_OPTION_ARG_STRING_ARRAY, &breaks,
      "Stop and report where: nan, inf (the first op producing one), loss>X, grad-norm>X, "
      "node=ID[:forward|backward], step=N (repeatable)", "WHEN" },
    { "metrics", 0, 0, G_OPTION_ARG_FILENAME, &metrics,
      "Write every step's loss, accuracy, learning rate, throughput and gradient norms, and "
      "each epoch's, as CSV (run,series,x,y: the window's dashboard format)", "FILE.csv" },
    { "dump-on-break", 0, 0, G_OPTION_ARG_FILENAME, &dump,
      "At a break, write the op's tensors to FILE (safetensors)", "FILE" },
    { "allow-nan", 0, 0, G_OPTION_ARG_NONE, &allow_nan, "Go on when values are not finite", NULL },
    { "no-eval", 0, 0, G_OPTION_ARG_NONE, &no_eval, "Skip the test-set evaluation", NULL },
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print one JSON object with the results", NULL },
    { "progress-json", 0, 0, G_OPTION_ARG_NONE, &progress_json,
      "Print one JSON object per line on stdout as training goes (event metrics, epoch, "
      "buckets over several ranks, finished; then the --json results with event results) "
      "instead of the progress and summary", NULL },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "No progress output", NULL },
    NUM_ENTRY ("ranks", 0,
               "Train on N processes (MPI ranks; mpirun is started when twb was not started by "
               "it); --batch stays the global batch", "N"),
    { "parallel", 0, 0, G_OPTION_ARG_STRING, &dist.parallel,
      "With --ranks: data (each rank trains on its shard of every batch), pipeline (each rank "
      "runs one stage of the graph) or hybrid (replicas of a pipeline of --stages ranks)",
      "KIND" },
    NUM_ENTRY ("stages", 0,
               "Pipeline stages of --parallel hybrid (default 2; --ranks must be a multiple); "
               "nodes' \"stage\" attributes, else their FLOPs, cut the graph", "S"),
    NUM_ENTRY ("micro-batches", 0,
               "Pipeline: cut each batch (a replica's share) into M micro-batches (default 4)",
               "M"),
    { "schedule", 0, 0, G_OPTION_ARG_STRING, &dist.schedule,
      "Pipeline schedule: 1f1b (default) or gpipe", "NAME" },
    { "algo", 0, 0, G_OPTION_ARG_STRING, &dist.algo,
      "All-reduce algorithm: mpi (MPI's own, default), ring, tree, ps (parameter server) or "
      "hier (inside each node, then across)", "NAME" },
    NUM_ENTRY ("comm-timeout", 0,
               "Seconds a rank waits for the others before the run fails naming the rank that "
               "never arrived (default 60)", "S"),
    NUM_ENTRY ("bucket-mb", 0, "Gradient bucket size in MB for the all-reduce (default 25)", "MB"),
    NUM_ENTRY ("ranks-per-node", 0,
               "Treat each N consecutive ranks as one node (hier; default: the real machines)",
               "N"),
    NUM_ENTRY ("local-sgd", 0,
               "Local SGD: each rank updates from its own shard and the weights are averaged "
               "every H steps (H = 1: synchronous)", "H"),
    { "compress", 0, 0, G_OPTION_ARG_STRING, &dist.compress,
      "Gradient compression with error feedback: topk:F (the fraction F kept), int8, sign or "
      "powersgd:R (rank R)", "SPEC" },
    NUM_ENTRY ("async", 0,
               "Asynchronous updates through a parameter server (the last rank); a worker may be "
               "at most K steps ahead of the slowest", "K"),
    { "shard-optimizer", 0, 0, G_OPTION_ARG_NONE, &dist.shard_optimizer,
      "ZeRO-1: each rank keeps the optimizer state of its 1/N of the gradients "
      "(reduce-scatter, update, all-gather)", NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = option_context_new ("MODEL.json — train a model", entries, nums);
  g_autoptr (GError) error = NULL;
  tw_state_dict_report init_report = { 0 };
  int status = 1;

  if (!g_option_context_parse (ctx, &argc, &argv, &error) || argc != 2)
    {
      g_printerr ("usage: twb train MODEL.json [OPTIONS]   (twb train --help)\n");
      if (error)
        g_printerr ("twb: %s\n", error->message);
      status = 2;
      goto out;
    }
  if (!check_device_mode (device, mode, &error))
    {
      twb_print_error (NULL, error);
      status = 2;
      goto out;
    }
  if (dump && (breaks == NULL || breaks[0] == NULL))
    {
      g_printerr ("twb: --dump-on-break needs at least one --break-on\n");
      status = 2;
      goto out;
    }
  if (init_weights && resume)
    {
      g_printerr ("twb: --init-weights and --resume exclude each other (a checkpoint has its "
                  "own weights)\n");
      status = 2;
      goto out;
    }
  if (strict && !init_weights)
    {
      g_printerr ("twb: --strict goes with --init-weights\n");
      status = 2;
      goto out;
    }
  dist.ranks = nums[RANKS].set ? (int) nums[RANKS].i : 0;
  dist.ranks_set = nums[RANKS].set;
  if (nums[COMM_TIMEOUT].set)
    dist.comm_timeout = nums[COMM_TIMEOUT].d;
  if (nums[BUCKET_MB].set)
    dist.bucket_mb = nums[BUCKET_MB].d;
  if (nums[RANKS_PER_NODE].set)
    dist.ranks_per_node = (int) nums[RANKS_PER_NODE].i;
  if (nums[LOCAL_SGD].set)
    dist.local_sgd = (int) nums[LOCAL_SGD].i;
  if (nums[ASYNC].set)
    dist.async_staleness = (int) nums[ASYNC].i;
  if (nums[STAGES].set)
    dist.stages = (int) nums[STAGES].i;
  if (nums[MICRO_BATCHES].set)
    dist.micro_batches = (int) nums[MICRO_BATCHES].i;
  if (twb_dist_wanted (&dist) && debug)
    {
      g_printerr ("twb: --debug reads commands from one terminal: it works with one process, "
                  "not with --ranks\n");
      status = 2;
      goto out;
    }
  {
    g_autoptr (tw_model) m = twb_load_model_checked (argv[1]);
    if (m == NULL)
      goto out;
    /* Every file read, every file written: checked before anything is.  A
     * run resumed from a checkpoint may go on writing it. */
    g_autoptr (tw_file_roles) io = twb_model_inputs (argv[1], m, data);
    tw_file_roles_input (io, init_weights, "--init-weights");
    tw_file_roles_input_replaced_by (io, resume, "--resume", "--checkpoint");
    tw_file_roles_output (io, checkpoint, "--checkpoint");
    tw_file_roles_output (io, metrics, "--metrics");
    tw_file_roles_output (io, dump, "--dump-on-break");
    if (!twb_check_files (io))
      goto out;
    if (!apply_overrides (m, optimizer, &nums[LR], &nums[BATCH], &nums[EPOCHS], &nums[SEED],
                          &nums[VAL_SPLIT], &error))
      {
        twb_print_error (NULL, error);
        status = 2;
        goto out;
      }
    if (!twb_dist_args_check (&dist, m->recipe.batch_size, &error))
      {
        twb_print_error (NULL, error);
        status = 2;
        goto out;
      }
    if (dist.ranks > 1 && !tw_comm_launched ())
      {
        status = twb_dist_launch (&dist, original_argv);
        goto out;
      }
    if (twb_dist_wanted (&dist))
      {
        comm = twb_dist_start (&dist);
        if (comm == NULL)
          goto out;
        if (tw_comm_rank (comm) != 0)
          {
            /* Rank 0 speaks for the run; the others only print errors. */
            quiet = TRUE;
            silent = TRUE;
            json = FALSE;
            progress_json = FALSE;
            g_clear_pointer (&metrics, g_free);
          }
      }
    int threads = nums[THREADS].set ? (int) nums[THREADS].i : 1;
    gint64 max_steps = nums[MAX_STEPS].set ? nums[MAX_STEPS].i : 0;
    tw_set_num_threads (threads);
    int nthreads = tw_get_num_threads ();

    tw_dataset *train_set = NULL, *val_set = NULL, *test_set = NULL;
    if (!tw_datasets_open_for_training (m, data, !no_eval, &train_set, &val_set, &test_set,
                                        &error))
      {
        twb_print_error (NULL, error);
        goto out;
      }
    g_autoptr (tw_dataset) train = train_set;
    g_autoptr (tw_dataset) val = val_set;
    g_autoptr (tw_dataset) test = test_set;

    gboolean compiled = g_strcmp0 (mode, "compiled") == 0;
    tw_session_options o;
    tw_session_options_init (&o);
    o.threads = nthreads;
    o.mode = compiled ? TW_MODE_COMPILED : TW_MODE_EAGER;
    o.allow_nan = allow_nan;
    o.max_steps = max_steps;
    o.checkpoint = g_strdup (checkpoint);
    o.grad_norms = FALSE;     /* the command line shows none; break-on grad-norm turns them on */
    for (char **b = breaks; b && *b; b++)
      o.grad_norms |= g_str_has_prefix (*b, "grad-norm");
    o.grad_norms |= metrics != NULL;
    /* A cluster run's window charts them as a local run's (rank 0 prints). */
    o.grad_norms |= progress_json && comm && tw_comm_rank (comm) == 0;
    o.comm = comm;
    o.dist.bucket_mb = dist.bucket_mb;
    o.dist.local_sgd = dist.local_sgd;
    o.dist.async_staleness = dist.async_staleness;
    o.dist.compress = dist.compress;
    o.dist.shard_optimizer = dist.shard_optimizer;
    if (comm)
      twb_dist_pipeline_options (&dist, tw_comm_size (comm), &o.pipeline);
    if (o.pipeline.stages > 0 && !quiet && !json)
      {
        g_autofree char *cut = twb_dist_pipeline_describe (m->graph, &o.pipeline,
                                                           tw_comm_size (comm));
        if (cut)
          g_printerr ("%s\n", cut);
      }
    const tw_dataset *test_ref = test;
    gboolean have_val = val != NULL;
    g_autoptr (tw_session) s = tw_session_new (m, g_steal_pointer (&train), g_steal_pointer (&val),
                                               g_steal_pointer (&test), &o, &error);
    tw_session_options_clear (&o);
    if (s == NULL)
      {
        twb_print_error (argv[1], error);
        goto out;
      }
    for (char **b = breaks; b && *b; b++)
      if (!tw_session_add_breakpoint (s, *b, &error))
        {
          twb_print_error ("--break-on", error);
          status = 2;
          goto out;
        }
    if (debug && (breaks == NULL || breaks[0] == NULL))
      tw_session_add_breakpoint (s, "step=1", NULL);
    if (resume)
      {
        if (!tw_session_load_checkpoint (s, resume, &error))
          {
            twb_print_error (NULL, error);
            goto out;
          }
        if (!quiet)
          g_printerr ("resumed from %s at step %" G_GINT64_FORMAT "\n", resume,
                      tw_trainer_step_count (tw_session_trainer (s)));
      }
    if (init_weights)
      {
        if (!tw_session_init_weights (s, init_weights, strict, &init_report, &error))
          {
            twb_print_error (NULL, error);
            goto out;
          }
        print_state_dict_report (init_weights, &init_report);
      }

    const tw_recipe *r = &m->recipe;
    int64_t total = tw_session_total_steps (s);
    if (progress_json)
      json = TRUE;
    progress pr = { isatty (STDERR_FILENO), quiet || json, total, 0, 0 };
    if (!tw_session_run (s, &error))
      {
        twb_print_error (NULL, error);
        goto out;
      }
    double loss = NAN, sps = 0, eta = -1;
    int64_t epoch = 0;
    g_autoptr (GString) csv = metrics ? g_string_new ("run,series,x,y\n") : NULL;
    for (;;)
      {
        /* Polled, not waited for: a reader blocked on the queue is woken by
         * every step's metrics (a context switch per step on a small
         * machine); a look every 10 ms is plenty for a progress bar. */
        g_autoptr (tw_snapshot) sn = tw_session_pop (s, 0);
        if (sn == NULL)
          {
            g_usleep (10000);
            continue;
          }
        metric_rows (csv, sn);
        if (progress_json && comm && sn->kind == TW_SNAP_FINISHED)
          twb_progress_json_buckets (tw_session_trainer (s), dist.bucket_mb);
        if (progress_json)
          twb_progress_json_line (sn, total);
        switch (sn->kind)
          {
          case TW_SNAP_METRICS:
            loss = sn->loss;
            epoch = sn->epoch;
            sps = sn->samples_per_s;
            eta = sn->eta_s;
            progress_update (&pr, sn->step, sn->epoch, sn->loss, sps, eta, FALSE);
            break;
          case TW_SNAP_EPOCH:
            if (!pr.quiet && !isnan (sn->val_loss))
              g_printerr ("%sepoch %" G_GINT64_FORMAT ": validation accuracy %.2f%% (loss %.4f)\n",
                          pr.tty ? "\n" : "", sn->epoch + 1, sn->val_accuracy * 100,
                          sn->val_loss);
            break;
          case TW_SNAP_NOTE:
            if (!pr.quiet)
              g_printerr ("%s%s\n", pr.tty ? "\n" : "", sn->message);
            break;
          case TW_SNAP_PAUSED:
            {
              if (pr.tty && !pr.quiet)
                g_printerr ("\n");
              twb_print_break (sn);
              if (debug && twb_debug_prompt (s, stdin))
                break;
              status = 2;
              if (dump && !twb_dump_break (sn, dump, argv[1], &error))
                {
                  twb_print_error (NULL, error);
                  status = 1;
                }
              else if (dump)
                g_printerr ("tensors written to %s\n", dump);
              tw_session_stop (s, NULL);
              g_autoptr (tw_snapshot) fin = NULL;
              while ((fin = tw_session_pop (s, -1))->kind != TW_SNAP_FINISHED)
                g_clear_pointer (&fin, tw_snapshot_free);
              goto out;
            }
          case TW_SNAP_FINISHED:
            if (sn->state != TW_SESSION_FINISHED)
              {
                if (pr.tty && !pr.quiet)
                  g_printerr ("\n");
                g_printerr ("twb: %s: %s\n", argv[1], sn->message ? sn->message : "stopped");
                twb_dist_print_failure (comm);
                goto out;
              }
            progress_update (&pr, tw_trainer_step_count (tw_session_trainer (s)),
                             MIN (epoch, r->epochs - 1), loss, sps, eta, TRUE);
            if (!silent)
              print_results (s, m, argv[1], sn, json, compiled, nthreads, checkpoint, have_val,
                             test_ref, init_weights, &init_report, progress_json);
            status = 0;
            if (csv && !tw_file_save (metrics, csv->str, csv->len, &error))
              {
                twb_print_error (NULL, error);
                status = 1;
              }
            goto out;
          default:
            break;
          }
      }
  }

out:
  g_free (data);
  g_free (optimizer);
  g_free (device);
  g_free (mode);
  g_free (checkpoint);
  g_free (resume);
  g_free (init_weights);
  g_free (dump);
  g_free (metrics);
  g_strfreev (breaks);
  tw_state_dict_report_clear (&init_report);
  twb_dist_args_clear (&dist);
  twb_dist_finish (comm, status);
  return status;
}

int
twb_cmd_eval (int argc, char **argv)
{
  char *data = NULL, *weights = NULL, *device = NULL, *mode = NULL;
  gboolean json = FALSE;
  enum { BATCH, THREADS };
  num_opt nums[] = {
    [BATCH] = NUM_INT ("batch", 'b', 1, TW_MAX_BATCH),
    [THREADS] = NUM_INT ("threads", 't', 0, TWB_MAX_THREADS),
    { NULL },
  };
  GOptionEntry entries[] = {
    { "weights", 'w', 0, G_OPTION_ARG_FILENAME, &weights, "Weights or checkpoint (safetensors)",
      "FILE" },
    { "data", 'd', 0, G_OPTION_ARG_STRING, &data, "Dataset (default: the model's recipe)", "DATA" },
    NUM_ENTRY ("batch", 'b', "Batch size (default 256)", "N"),
    NUM_ENTRY ("threads", 't', "CPU threads (default 1; 0 = all)", "N"),
    { "device", 0, 0, G_OPTION_ARG_STRING, &device, "cpu", "DEV" },
    { "mode", 0, 0, G_OPTION_ARG_STRING, &mode, "eager or compiled", "MODE" },
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print one JSON object", NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = option_context_new ("MODEL.json --weights FILE — evaluate",
                                                       entries, nums);
  g_autoptr (GError) error = NULL;
  int status = 1;

  if (!g_option_context_parse (ctx, &argc, &argv, &error) || argc != 2 || weights == NULL)
    {
      g_printerr ("usage: twb eval MODEL.json --weights FILE [--data DATA] [--json]\n");
      if (error)
        g_printerr ("twb: %s\n", error->message);
      status = 2;
      goto out;
    }
  if (!check_device_mode (device, mode, &error))
    {
      twb_print_error (NULL, error);
      status = 2;
      goto out;
    }
  {
    g_autoptr (tw_model) m = twb_load_model_checked (argv[1]);
    if (m == NULL)
      goto out;
    int batch = nums[BATCH].set ? (int) nums[BATCH].i : 256;
    tw_set_num_threads (nums[THREADS].set ? (int) nums[THREADS].i : 1);
    g_autoptr (tw_dataset) test = tw_dataset_open_for_model (m, data, TW_SPLIT_TEST, &error);
    if (test == NULL)
      {
        twb_print_error (NULL, error);
        goto out;
      }
    if (tw_dataset_size (test) == 0)
      {
        g_printerr ("twb: %s: no test samples to evaluate\n", data ? data : m->recipe.dataset);
        goto out;
      }
    g_autoptr (tw_trainer) tr = tw_trainer_new (m, &error);
    if (tr == NULL || !tw_params_load_weights (tw_trainer_params (tr), weights, &error))
      {
        twb_print_error (NULL, error);
        goto out;
      }
    tw_trainer_set_num_threads (tr, tw_get_num_threads ());
    if (g_strcmp0 (mode, "compiled") == 0)
      tw_trainer_set_mode (tr, TW_MODE_COMPILED);
    double loss, acc;
    double t0 = now_s ();
    if (!tw_trainer_evaluate (tr, test, batch, &loss, &acc, &error))
      {
        twb_print_error ("evaluation", error);
        goto out;
      }
    double dt = now_s () - t0;
    if (json)
      {
        g_autoptr (JsonBuilder) jb = json_builder_new ();
        json_builder_begin_object (jb);
        twb_json_member_double (jb, "test_loss", loss);
        twb_json_member_double (jb, "test_accuracy", acc);
        json_member_int (jb, "samples", tw_dataset_size (test));
        twb_json_member_double (jb, "samples_per_s", tw_dataset_size (test) / MAX (dt, 1e-9));
        json_builder_end_object (jb);
        twb_print_json (jb);
      }
    else
      g_print ("test accuracy %.2f%% (loss %.4f) on %" G_GINT64_FORMAT " samples\n", acc * 100,
               loss, tw_dataset_size (test));
    status = 0;
  }
out:
  g_free (data);
  g_free (weights);
  g_free (device);
  g_free (mode);
  return status;
}

int
twb_cmd_compile (int argc, char **argv)
{
  gboolean json = FALSE, dump = FALSE, infer = FALSE;
  char *passes_opt = NULL;
  enum { BATCH };
  num_opt nums[] = {
    [BATCH] = NUM_INT ("batch", 'b', 1, TW_MAX_BATCH),
    { NULL },
  };
  GOptionEntry entries[] = {
    NUM_ENTRY ("batch", 'b', "Batch size (default: recipe)", "N"),
    { "inference", 0, 0, G_OPTION_ARG_NONE, &infer, "The inference program (forward only)", NULL },
    { "passes", 0, 0, G_OPTION_ARG_STRING, &passes_opt,
      "Passes to run: all, none, or a comma list of constfold,dce,cse,fuse,inplace,foldbn,residual "
      "(the last two: inference programs, with fuse)", "LIST" },
    { "dump", 0, 0, G_OPTION_ARG_NONE, &dump, "Print every instruction", NULL },
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print the report as JSON", NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = option_context_new ("MODEL.json — compile and report", entries,
                                                       nums);
  g_autoptr (GError) error = NULL;
  int status = 1;
  tw_pass_flags passes = TW_PASS_ALL;

  if (!g_option_context_parse (ctx, &argc, &argv, &error) || argc != 2)
    {
      g_printerr ("usage: twb compile MODEL.json [--batch N] [--inference] [--json] [--dump]\n");
      if (error)
        g_printerr ("twb: %s\n", error->message);
      g_free (passes_opt);
      return 2;
    }
  if (passes_opt)
    {
      static const struct { const char *name; tw_pass_flags flag; } names[] = {
        { "constfold", TW_PASS_CONSTFOLD }, { "dce", TW_PASS_DCE }, { "cse", TW_PASS_CSE },
        { "fuse", TW_PASS_FUSE | TW_PASS_FUSE_UPDATES }, { "inplace", TW_PASS_INPLACE }, { "all", TW_PASS_ALL },
        { "foldbn", TW_PASS_FOLD_BN }, { "residual", TW_PASS_FUSE_RESIDUAL },
        { "none", 0 },
      };
      g_auto (GStrv) parts = g_strsplit (passes_opt, ",", -1);
      passes = 0;
      for (char **pp = parts; *pp; pp++)
        {
          gboolean found = FALSE;
          for (guint i = 0; i < G_N_ELEMENTS (names); i++)
            if (strcmp (*pp, names[i].name) == 0)
              {
                passes |= names[i].flag;
                found = TRUE;
              }
          if (!found)
            {
              g_printerr ("twb: --passes: unknown pass '%s'\n", *pp);
              g_free (passes_opt);
              return 2;
            }
        }
    }
  {
    g_autoptr (tw_model) m = twb_load_model_checked (argv[1]);
    if (m == NULL)
      goto out;
    int64_t b = nums[BATCH].set ? nums[BATCH].i : m->recipe.batch_size;
    gint64 t0 = g_get_monotonic_time ();
    g_autoptr (tw_program) p = tw_program_build (m->graph, b, infer ? TW_PROGRAM_INFER : TW_PROGRAM_STEP,
                                                 &error);
    if (p == NULL || !tw_program_optimize (p, passes, &error))
      {
        twb_print_error (argv[1], error);
        goto out;
      }
    double ms = (g_get_monotonic_time () - t0) / 1000.0;

    /* The eager executor's peak on one step of the same batch, estimated from
     * the shapes (running a step at a large batch would take that memory). */
    tw_memory_estimate est;
    size_t eager_peak = 0;
    if (tw_graph_estimate_memory (p->graph, b, &est, NULL))
      eager_peak = (size_t) tw_memory_estimate_eager_peak (&est, !infer);
    if (json)
      {
        g_autoptr (JsonNode) root = tw_program_report_json (p);
        JsonObject *o = json_node_get_object (root);
        json_object_set_double_member (o, "compile_ms", ms);
        json_object_set_int_member (o, "eager_peak_bytes", (gint64) eager_peak);
        g_autoptr (JsonGenerator) gen = json_generator_new ();
        json_generator_set_root (gen, root);
        json_generator_set_pretty (gen, TRUE);
        g_autofree char *text = json_generator_to_data (gen, NULL);
        g_print ("%s\n", text);
      }
    else
      {
        g_autofree char *report = tw_program_report (p);
        g_print ("%s", report);
        if (eager_peak)
          g_print ("eager peak (estimated, one step): %zu bytes; arena is %.0f%% of it\n", eager_peak,
                   100.0 * p->arena_bytes / eager_peak);
        g_print ("compile time: %.2f ms\n", ms);
        if (dump)
          {
            g_autofree char *d = tw_program_dump (p);
            g_print ("\n%s", d);
          }
      }
    status = 0;
  }
out:
  g_free (passes_opt);
  return status;
}

int
twb_cmd_predict (int argc, char **argv)
{
  char *weights = NULL, *input = NULL, *output = NULL, *mode = NULL;
  gboolean json = FALSE;
  enum { THREADS };
  num_opt nums[] = {
    [THREADS] = NUM_INT ("threads", 't', 0, TWB_MAX_THREADS),
    { NULL },
  };
  GOptionEntry entries[] = {
    { "weights", 'w', 0, G_OPTION_ARG_FILENAME, &weights, "Weights or checkpoint (safetensors)", "FILE" },
    { "input", 'i', 0, G_OPTION_ARG_FILENAME, &input, "Samples as a NumPy .npy array [n, ...]", "FILE" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write the model's outputs to this .npy", "FILE" },
    { "mode", 0, 0, G_OPTION_ARG_STRING, &mode, "eager or compiled (default compiled)", "MODE" },
    NUM_ENTRY ("threads", 't', "CPU threads (default 1; 0 = all)", "N"),
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print predictions as JSON", NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = option_context_new (
    "MODEL.json --weights FILE --input FILE.npy — predict", entries, nums);
  g_autoptr (GError) error = NULL;
  int status = 1;

  if (!g_option_context_parse (ctx, &argc, &argv, &error) || argc != 2 || !weights || !input)
    {
      g_printerr ("usage: twb predict MODEL.json --weights FILE --input FILE.npy [--output OUT.npy] [--json]\n");
      if (error)
        g_printerr ("twb: %s\n", error->message);
      status = 2;
      goto out;
    }
  if (!check_device_mode (NULL, mode, &error))
    {
      twb_print_error (NULL, error);
      status = 2;
      goto out;
    }
  {
    g_autoptr (tw_file_roles) io = tw_file_roles_new ();
    tw_file_roles_input (io, argv[1], "the model");
    tw_file_roles_input (io, weights, "--weights");
    tw_file_roles_input (io, input, "--input");
    tw_file_roles_output (io, output, "--output");
    if (!twb_check_files (io))
      goto out;
  }
  {
    g_autoptr (tw_model) m = twb_load_model_checked (argv[1]);
    if (m == NULL)
      goto out;
    tw_set_num_threads (nums[THREADS].set ? (int) nums[THREADS].i : 1);
    g_autoptr (tw_tensor) raw = tw_npy_load (input, &error);
    if (raw == NULL)
      {
        twb_print_error (NULL, error);
        goto out;
      }
    g_autoptr (tw_tensor) x = tw_samples_fit_input (raw, tw_graph_find_source (m->graph, "data"),
                                               input, &error);
    if (x == NULL)
      {
        twb_print_error (NULL, error);
        goto out;
      }

    g_autoptr (tw_params) params = tw_params_new ();
    tw_tensor *pred = NULL;
    g_autoptr (tw_eager) ex = NULL;
    g_autoptr (tw_compiled) c = NULL;
    if (g_strcmp0 (mode, "eager") == 0)
      {
        ex = tw_eager_new (m->graph, params, m->recipe.seed, &error);
        if (ex == NULL || !tw_params_load_weights (params, weights, &error)
            || !tw_eager_forward (ex, x, NULL, FALSE, 0, &error))
          {
            twb_print_error (NULL, error);
            goto out;
          }
        pred = tw_eager_prediction (ex);
      }
    else
      {
        c = tw_compiled_new (m->graph, params, m->recipe.seed, &error);
        if (c == NULL || !tw_params_load_weights (params, weights, &error)
            || !tw_compiled_run (c, TW_PROGRAM_INFER, x, NULL, 0, &error))
          {
            twb_print_error (NULL, error);
            goto out;
          }
        pred = tw_compiled_prediction (c);
      }
    if (output && !tw_npy_save (output, pred, &error))
      {
        twb_print_error (NULL, error);
        goto out;
      }
    /* Class predictions: argmax over the last axis of a [n, classes] output. */
    int64_t n = pred->shape[0], k = pred->ndim == 2 ? pred->shape[1] : 0;
    g_autoptr (tw_tensor) pf = tw_tensor_cast (pred, TW_F32);
    g_autoptr (JsonBuilder) jb = json_builder_new ();
    json_builder_begin_array (jb);
    for (int64_t i = 0; i < n && k > 0; i++)
      {
        const float *row = tw_tensor_f32 (pf) + i * k;
        int64_t best = 0;
        for (int64_t j = 1; j < k; j++)
          if (row[j] > row[best])
            best = j;
        if (json)
          json_builder_add_int_value (jb, best);
        else
          g_print ("%" G_GINT64_FORMAT "\t%" G_GINT64_FORMAT "\t%.4f\n", i, best, row[best]);
      }
    json_builder_end_array (jb);
    if (json)
      {
        g_autoptr (JsonNode) arr = json_builder_get_root (jb);
        g_autoptr (JsonBuilder) ob = json_builder_new ();
        json_builder_begin_object (ob);
        json_builder_set_member_name (ob, "predictions");
        json_builder_add_value (ob, json_node_copy (arr));
        json_builder_end_object (ob);
        twb_print_json (ob);
      }
    status = 0;
  }
out:
  g_free (weights);
  g_free (input);
  g_free (output);
  g_free (mode);
  return status;
}
