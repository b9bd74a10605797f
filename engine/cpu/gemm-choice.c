/* gemm-choice.c — which implementation runs a product of a given shape on
 * this machine: our kernel or OpenBLAS, measured once and remembered.
 *
 * Neither wins everywhere.  On the AMD EPYC the project was tuned on, the
 * AVX-512 kernel beats OpenBLAS's Haswell kernels on every training shape;
 * on an Intel Xeon, where OpenBLAS runs its SkylakeX kernels, it reached
 * 0.84-0.97x on the large products and lost the batch-1 ones (call
 * overhead).  So in AUTO mode the first call of each (trans_a, trans_b, M,
 * N, K, epilogue or not, threads) times both on the caller's operands,
 * writing into scratch outputs (so C is untouched and beta ≠ 0 stays
 * correct), and keeps the faster.  OpenBLAS's time includes the epilogue
 * pass it needs after the product: that pass is what our kernel saves.
 *
 * Timing: after one untimed call of each, ROUNDS alternating rounds (ours,
 * OpenBLAS, ours, …: drift in clock speed or in the load of this shared
 * machine hits both), each round long enough for the clock (≥ ROUND_NS, at
 * least one call); each side's figure is its fastest round, per call.  The
 * noise that remains is a few per cent, so OpenBLAS must win by more than
 * MARGIN to be picked: in a tie our kernel keeps the fused epilogue and its
 * results do not depend on OpenBLAS's thread count.  A shape offered more
 * than one thread is timed on one thread too, both kernels, in the same
 * rounds; one thread must win by more than MARGIN as well (gemm.h,
 * tw_gemm_choice, says why that is measured).
 *
 * Contention only ever adds time, and on a shared machine one measurement
 * can be hit for its whole few milliseconds (a 2-thread call with one core
 * taken by another process ran 10x slower).  So a choice is settled only
 * after SETTLE measurements in different processes: until then each new
 * process measures the shape once more at its first call, and each side's
 * figure is the fastest seen over all of them.  One-thread calls are timed
 * on the calling thread's CPU clock, which a time slice given to another
 * process does not advance; a team's calls on the wall clock, since its
 * waiting for a descheduled thread is part of what it costs.
 *
 * The choices are kept per machine in $XDG_CACHE_HOME/twb/gemm-ID.json
 * (~/.cache when XDG_CACHE_HOME is unset), ID a digest of what makes the
 * timings valid: the CPU model and its online CPUs, our kernel and its
 * revision, OpenBLAS's build and core, and OPENBLAS_CORETYPE.  Another
 * machine (or an upgraded OpenBLAS, a changed kernel) reads another file and
 * measures anew.  The file is rewritten whole, atomically: at most once a
 * second while new shapes come in, and at exit.  An unreadable or foreign
 * file is ignored (and replaced at the next write).
 *
 * The table is shared by all threads; a lookup takes a mutex (tens of ns,
 * against the microseconds of the smallest product that matters). */
#define G_LOG_DOMAIN "twb-gemm"

#include "engine/cpu/gemm-private.h"
#include "engine/fileutil.h"
#include "engine/json-text.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <json-glib/json-glib.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bump when a kernel changes enough to move its timings: old caches then
 * fall out of use. */
#define KERNEL_REVISION 4 /* 4: one-thread times are the thread's CPU time */
/* Bump when what a choice holds changes: 2 added the one-thread times (a
 * version-1 file lacks them and is measured anew). */
#define FORMAT_VERSION 2
#define ROUNDS 5
#define ROUND_NS 200000       /* 0.2 ms of calls per round */
/* One call over 1 ms: 2 rounds are enough (a call that long averages the
 * clock's and the scheduler's jitter out by itself), so measuring costs
 * about 7 calls instead of 13 — what eager mode's first inference of a
 * large network (ResNet-50: dozens of such shapes) pays once per shape. */
#define SLOW_CALL_NS 1000000
#define MARGIN 1.03
#define SETTLE 3
#define SAVE_INTERVAL_US G_USEC_PER_SEC
/* Largest cache file read: a choice is about 200 bytes of JSON, so 16 MiB
 * hold some 80,000 shapes, far more than any run measures. */
#define MAX_CACHE_BYTES ((gsize) 16 << 20)
/* Thread counts and dimensions read back from the cache: what the command
 * line accepts (--threads up to 4096) and what a tensor dimension is. */
#define MAX_CACHE_THREADS 4096
/* Scratch outputs above this are not allocated to measure: ours is kept. */
#define MAX_SCRATCH_BYTES ((gint64) 512 << 20)

typedef struct
{
  gint64 m, n, k;
  gint32 threads;
  guint8 ta, tb, ep;
} choice_key;

typedef struct
{
  choice_key key;
  gboolean ours;
  int run_threads;
  double ours_us, openblas_us;
  double serial_ours_us, serial_openblas_us;
  int samples;       /* measurements merged into the times */
  gboolean checked;  /* measured by this process, or settled */
  gboolean measuring; /* a thread is measuring it now: the others wait */
} choice;

static GMutex lock;
/* Signalled when a measurement ends: threads that meet a shape while it is
 * being measured (the chunks of a convolution shared by a team, engine/ops/
 * conv.c) wait for its choice rather than run the other kernel, so that
 * every call of a shape in a process runs the same kernel (and rounds the
 * same way). */
static GCond measured_cond;
static GHashTable *table; /* choice_key * → choice * (the key is inside) */
static char *cache_path;  /* NULL: no cache directory */
static char *machine_id;
static gboolean dirty;
static gint64 last_save_us;
static guint n_measured;

static guint
key_hash (gconstpointer p)
{
  const choice_key *k = p;
  guint64 h = (guint64) k->m * 0x9e3779b97f4a7c15ull;
  h ^= (guint64) k->n * 0xc2b2ae3d27d4eb4full + (h << 6) + (h >> 2);
  h ^= (guint64) k->k * 0x165667b19e3779f9ull + (h << 6) + (h >> 2);
  /* Unsigned: a shift of the signed thread count could overflow. */
  h ^= ((guint64) (guint32) k->threads << 3) | ((guint64) k->ta << 2) | ((guint64) k->tb << 1)
       | (guint64) k->ep;
  return (guint) (h ^ (h >> 32));
}

static gboolean
key_equal (gconstpointer a, gconstpointer b)
{
  const choice_key *x = a, *y = b;
  return x->m == y->m && x->n == y->n && x->k == y->k && x->threads == y->threads
         && x->ta == y->ta && x->tb == y->tb && x->ep == y->ep;
}

/* ---- machine identity and the cache file ------------------------------ */

static char *
cpu_model (void)
{
  g_autofree char *text = NULL;
  char *model = NULL;
  if (g_file_get_contents ("/proc/cpuinfo", &text, NULL, NULL))
    {
      g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
      for (char **l = lines; *l && model == NULL; l++)
        if (g_str_has_prefix (*l, "model name") && strchr (*l, ':'))
          model = g_strstrip (g_strdup (strchr (*l, ':') + 1));
    }
  return model ? model : g_strdup ("unknown CPU");
}

static char *
make_machine_id (void)
{
  g_autofree char *model = cpu_model ();
  const char *coretype = g_getenv ("OPENBLAS_CORETYPE");
  return g_strdup_printf ("%s; %ld CPUs; kernel %s rev %d; OpenBLAS %s, core %s; "
                          "OPENBLAS_CORETYPE=%s",
                          model, sysconf (_SC_NPROCESSORS_ONLN), tw_gemm_kernel_name_ours (),
                          KERNEL_REVISION, openblas_get_config (), openblas_get_corename (),
                          coretype ? coretype : "");
}

static char *
make_cache_path (const char *id)
{
  const char *xdg = g_getenv ("XDG_CACHE_HOME");
  const char *base = xdg && g_path_is_absolute (xdg) ? xdg : g_get_user_cache_dir ();
  if (base == NULL || *base == '\0')
    return NULL;
  g_autofree char *digest = g_compute_checksum_for_string (G_CHECKSUM_SHA256, id, -1);
  g_autofree char *name = g_strdup_printf ("gemm-%.16s.json", digest);
  return g_build_filename (base, "twb", name, NULL);
}

static gint64
member_int (JsonObject *o, const char *name, gboolean *ok)
{
  JsonNode *n = json_object_get_member (o, name);
  if (n == NULL || json_node_get_value_type (n) != G_TYPE_INT64)
    {
      *ok = FALSE;
      return 0;
    }
  return json_node_get_int (n);
}

/* A string member, or NULL (absent or of another type). */
static const char *
member_string (JsonObject *o, const char *name)
{
  JsonNode *n = json_object_get_member (o, name);
  return n && JSON_NODE_HOLDS_VALUE (n) && json_node_get_value_type (n) == G_TYPE_STRING
           ? json_node_get_string (n) : NULL;
}

/* A time in microseconds: finite and >= 0, else *ok is cleared. */
static double
member_time (JsonObject *o, const char *name, gboolean *ok)
{
  JsonNode *n = json_object_get_member (o, name);
  GType t = n && JSON_NODE_HOLDS_VALUE (n) ? json_node_get_value_type (n) : G_TYPE_INVALID;
  double v = t == G_TYPE_DOUBLE || t == G_TYPE_INT64 ? json_node_get_double (n) : 0.0;
  if (n != NULL && !(isfinite (v) && v >= 0))
    *ok = FALSE;
  return v;
}

/* The kernel and thread count from the times: OpenBLAS only when more than
 * MARGIN faster than ours, one thread only when more than MARGIN faster
 * than the team (not measurable, a scratch too large: ours, on the team). */
static void
decide (choice *c)
{
  gboolean ours = c->ours_us <= 0 || c->openblas_us <= 0 || c->openblas_us * MARGIN >= c->ours_us;
  double best = ours ? c->ours_us : c->openblas_us;
  c->ours = ours;
  c->run_threads = c->key.threads;
  if (c->key.threads > 1 && best > 0 && c->serial_ours_us > 0 && c->serial_openblas_us > 0)
    {
      gboolean s_ours = c->serial_openblas_us * MARGIN >= c->serial_ours_us;
      double s_best = s_ours ? c->serial_ours_us : c->serial_openblas_us;
      if (s_best * MARGIN < best)
        {
          c->ours = s_ours;
          c->run_threads = 1;
        }
    }
}

/* Fills table from cache_path when the file is ours and for this machine;
 * anything else in it is ignored.  Called with lock held. */
static void
load_cache (void)
{
  if (cache_path == NULL)
    return;
  /* A regular file of at most MAX_CACHE_BYTES, held to the rule of every
   * JSON text read (engine/json-text.h: a file of 100,000 nested '[' would
   * overflow json-glib's recursion). */
  g_autofree char *text = NULL;
  gsize len = 0;
  g_autoptr (GError) error = NULL;
  g_autoptr (JsonParser) parser = NULL;
  if (tw_file_read_regular (cache_path, MAX_CACHE_BYTES, &text, &len, &error))
    parser = tw_json_parse (text, len, cache_path, &error);
  if (parser == NULL)
    {
      if (!g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_NOENT))
        g_debug ("%s; measuring anew", error->message);
      return;
    }
  JsonNode *root = json_parser_get_root (parser);
  JsonObject *o = root && JSON_NODE_HOLDS_OBJECT (root) ? json_node_get_object (root) : NULL;
  gboolean ok = TRUE;
  if (o == NULL || member_int (o, "format", &ok) != FORMAT_VERSION || !ok
      || g_strcmp0 (member_string (o, "machine"), machine_id) != 0)
    return;
  JsonNode *an = json_object_get_member (o, "choices");
  JsonArray *a = an && JSON_NODE_HOLDS_ARRAY (an) ? json_node_get_array (an) : NULL;
  for (guint i = 0; a && i < json_array_get_length (a); i++)
    {
      JsonNode *en = json_array_get_element (a, i);
      if (!JSON_NODE_HOLDS_OBJECT (en))
        continue;
      JsonObject *e = json_node_get_object (en);
      ok = TRUE;
      choice c = { 0 };
      c.key.m = member_int (e, "m", &ok);
      c.key.n = member_int (e, "n", &ok);
      c.key.k = member_int (e, "k", &ok);
      gint64 threads = member_int (e, "threads", &ok);
      c.key.ta = member_int (e, "trans_a", &ok) != 0;
      c.key.tb = member_int (e, "trans_b", &ok) != 0;
      c.key.ep = member_int (e, "epilogue", &ok) != 0;
      const char *k = member_string (e, "kernel");
      c.ours_us = member_time (e, "ours_us", &ok);
      c.openblas_us = member_time (e, "openblas_us", &ok);
      c.serial_ours_us = member_time (e, "serial_ours_us", &ok);
      c.serial_openblas_us = member_time (e, "serial_openblas_us", &ok);
      /* Entries out of range are ignored, as a foreign file is. */
      if (!ok || c.key.m <= 0 || c.key.n <= 0 || c.key.k <= 0 || threads <= 0
          || threads > MAX_CACHE_THREADS
          || (g_strcmp0 (k, "ours") != 0 && g_strcmp0 (k, "openblas") != 0))
        continue;
      c.key.threads = (gint32) threads;
      c.ours = strcmp (k, "ours") == 0;
      decide (&c);
      gboolean has_samples = TRUE;
      gint64 samples = member_int (e, "samples", &has_samples);
      c.samples = has_samples ? (int) CLAMP (samples, 1, SETTLE) : 1;
      c.checked = c.samples >= SETTLE;
      choice *slot = g_memdup2 (&c, sizeof c);
      g_hash_table_replace (table, &slot->key, slot);
    }
}

static gint choice_cmp (gconstpointer a, gconstpointer b);

/* The table's choices, sorted by shape (borrowed).  Called with lock held. */
static GPtrArray *
sorted_choices (void)
{
  GPtrArray *all = g_ptr_array_sized_new (g_hash_table_size (table));
  GHashTableIter it;
  gpointer v;
  g_hash_table_iter_init (&it, table);
  while (g_hash_table_iter_next (&it, NULL, &v))
    if (((choice *) v)->samples > 0) /* not a first measurement under way */
      g_ptr_array_add (all, v);
  g_ptr_array_sort (all, choice_cmp);
  return all;
}

static gint
choice_cmp (gconstpointer a, gconstpointer b)
{
  const choice *x = *(choice *const *) a, *y = *(choice *const *) b;
  const gint64 ax[] = { x->key.m, x->key.n, x->key.k, x->key.threads, x->key.ta, x->key.tb, x->key.ep };
  const gint64 bx[] = { y->key.m, y->key.n, y->key.k, y->key.threads, y->key.ta, y->key.tb, y->key.ep };
  for (guint i = 0; i < G_N_ELEMENTS (ax); i++)
    if (ax[i] != bx[i])
      return ax[i] < bx[i] ? -1 : 1;
  return 0;
}

static tw_gemm_choice
to_public (const choice *c)
{
  return (tw_gemm_choice) {
    .trans_a = c->key.ta, .trans_b = c->key.tb, .m = c->key.m, .n = c->key.n,
    .k = c->key.k, .epilogue = c->key.ep, .threads = c->key.threads, .ours = c->ours,
    .run_threads = c->run_threads, .ours_us = c->ours_us, .openblas_us = c->openblas_us,
    .serial_ours_us = c->serial_ours_us, .serial_openblas_us = c->serial_openblas_us,
    .samples = c->samples,
  };
}

void
tw_gemm_choice_to_json (const tw_gemm_choice *c, JsonBuilder *b)
{
  json_builder_begin_object (b);
  const struct
  {
    const char *name;
    gint64 v;
  } ints[] = {
    { "trans_a", c->trans_a != 0 }, { "trans_b", c->trans_b != 0 }, { "m", c->m },
    { "n", c->n }, { "k", c->k }, { "epilogue", c->epilogue != 0 }, { "threads", c->threads },
  };
  for (guint i = 0; i < G_N_ELEMENTS (ints); i++)
    {
      json_builder_set_member_name (b, ints[i].name);
      json_builder_add_int_value (b, ints[i].v);
    }
  json_builder_set_member_name (b, "kernel");
  json_builder_add_string_value (b, c->ours ? "ours" : "openblas");
  json_builder_set_member_name (b, "run_threads");
  json_builder_add_int_value (b, c->run_threads > 0 ? c->run_threads : c->threads);
  json_builder_set_member_name (b, "ours_us");
  json_builder_add_double_value (b, c->ours_us);
  json_builder_set_member_name (b, "openblas_us");
  json_builder_add_double_value (b, c->openblas_us);
  json_builder_set_member_name (b, "serial_ours_us");
  json_builder_add_double_value (b, c->serial_ours_us);
  json_builder_set_member_name (b, "serial_openblas_us");
  json_builder_add_double_value (b, c->serial_openblas_us);
  json_builder_set_member_name (b, "samples");
  json_builder_add_int_value (b, c->samples);
  json_builder_end_object (b);
}

/* Writes the whole table to cache_path, atomically.  Called with lock held.
 * A failure is reported once at debug level: the cache only saves time. */
static void
save_cache (void)
{
  dirty = FALSE;
  last_save_us = g_get_monotonic_time ();
  if (cache_path == NULL)
    return;
  g_autoptr (GPtrArray) all = sorted_choices ();
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "format");
  json_builder_add_int_value (b, FORMAT_VERSION);
  json_builder_set_member_name (b, "machine");
  json_builder_add_string_value (b, machine_id);
  json_builder_set_member_name (b, "choices");
  json_builder_begin_array (b);
  for (guint i = 0; i < all->len; i++)
    {
      tw_gemm_choice e = to_public (all->pdata[i]);
      tw_gemm_choice_to_json (&e, b);
    }
  json_builder_end_array (b);
  json_builder_end_object (b);
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  json_generator_set_pretty (gen, TRUE);
  gsize len = 0;
  g_autofree char *text = json_generator_to_data (gen, &len);
  g_autofree char *dir = g_path_get_dirname (cache_path);
  g_autoptr (GError) error = NULL;
  if (g_mkdir_with_parents (dir, 0700) != 0
      || !tw_file_save_mode (cache_path, text, len, 0600, &error))
    g_debug ("cannot write the GEMM choices to %s: %s", cache_path,
             error ? error->message : g_strerror (errno));
}

static void
save_at_exit (void)
{
  g_mutex_lock (&lock);
  if (table && dirty)
    save_cache ();
  g_mutex_unlock (&lock);
}

/* Called with lock held. */
static void
ensure_table (void)
{
  if (table != NULL)
    return;
  static gboolean exit_hook;
  table = g_hash_table_new_full (key_hash, key_equal, NULL, g_free);
  if (machine_id == NULL)
    machine_id = make_machine_id ();
  g_free (cache_path);
  cache_path = make_cache_path (machine_id);
  load_cache ();
  if (!exit_hook)
    {
      atexit (save_at_exit);
      exit_hook = TRUE;
    }
}

/* ---- measuring ---------------------------------------------------------- */

static gint64
clock_ns (clockid_t id)
{
  struct timespec ts;
  clock_gettime (id, &ts);
  return (gint64) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ns per call of fn over reps calls: on one thread the calling thread's CPU
 * time (what the product costs, whatever else the machine runs: a time
 * slice lost to another process is not counted), on several the wall clock
 * (the team's waiting is part of the cost).  *wall: the wall clock's, per
 * call, either way. */
static double
time_calls (tw_gemm_runner fn, const tw_gemm_args *g, int nt, int reps, double *wall)
{
  gint64 c0 = clock_ns (CLOCK_THREAD_CPUTIME_ID), w0 = clock_ns (CLOCK_MONOTONIC);
  for (int i = 0; i < reps; i++)
    fn (g, nt);
  gint64 c1 = clock_ns (CLOCK_THREAD_CPUTIME_ID), w1 = clock_ns (CLOCK_MONOTONIC);
  *wall = (double) (w1 - w0) / reps;
  return nt > 1 ? *wall : (double) (c1 - c0) / reps;
}

static void
measure (const tw_gemm_args *g, int nt, tw_gemm_runner ours, tw_gemm_runner openblas,
         choice *out)
{
  guint64 cbytes, pbytes = 0;
  if (!g_uint64_checked_mul (&cbytes, (guint64) g->M, (guint64) g->N)
      || !g_uint64_checked_mul (&cbytes, cbytes, sizeof (float))
      || cbytes > (guint64) MAX_SCRATCH_BYTES)
    return;
  if (g->ep && g->ep->pre)
    pbytes = cbytes;
  float *c = g_try_malloc0 ((gsize) cbytes), *pre = pbytes ? g_try_malloc ((gsize) pbytes) : NULL;
  if (c == NULL || (pbytes && pre == NULL))
    {
      g_free (c);
      g_free (pre);
      return;
    }
  tw_gemm_epilogue ep;
  tw_gemm_args s = *g;
  s.C = c;
  s.ldc = g->N;
  if (g->ep)
    {
      ep = *g->ep;
      if (ep.pre)
        {
          ep.pre = pre;
          ep.ldpre = g->N;
        }
      s.ep = &ep;
    }

  /* Candidates: ours and OpenBLAS on nt threads, then on one thread (the
   * one-thread ones last: at nt = 1 they are the first two). */
  const tw_gemm_runner fn[4] = { ours, openblas, ours, openblas };
  const int threads[4] = { nt, nt, 1, 1 };
  const int n_cand = nt > 1 ? 4 : 2;
  double t[4], wall;
  for (int i = 0; i < n_cand; i++)
    t[i] = time_calls (fn[i], &s, threads[i], 1, &wall);
  t[0] = time_calls (ours, &s, nt, 1, &wall);
  int reps = (int) CLAMP (ROUND_NS / MAX (wall, 1.0), 1, 10000);
  int rounds = wall > SLOW_CALL_NS ? 2 : ROUNDS;
  for (int i = 0; i < n_cand; i++)
    t[i] = G_MAXDOUBLE;
  for (int r = 0; r < rounds; r++)
    for (int i = 0; i < n_cand; i++)
      t[i] = MIN (t[i], time_calls (fn[i], &s, threads[i], reps, &wall));
  g_free (c);
  g_free (pre);
  out->ours_us = t[0] / 1000.0;
  out->openblas_us = t[1] / 1000.0;
  out->serial_ours_us = n_cand > 2 ? t[2] / 1000.0 : 0;
  out->serial_openblas_us = n_cand > 2 ? t[3] / 1000.0 : 0;
}

gboolean
tw_gemm_choice_ours (const tw_gemm_args *g, int nt, tw_gemm_runner ours, tw_gemm_runner openblas,
                     int *run_nt)
{
  *run_nt = nt;
  choice_key key;
  memset (&key, 0, sizeof key);
  key.m = g->M;
  key.n = g->N;
  key.k = g->K;
  key.threads = nt;
  key.ta = g->ta != 0;
  key.tb = g->tb != 0;
  key.ep = g->ep != NULL;

  g_mutex_lock (&lock);
  ensure_table ();
  choice *c;
  while ((c = g_hash_table_lookup (table, &key)) != NULL && c->measuring)
    g_cond_wait (&measured_cond, &lock);
  if (c != NULL && c->checked)
    {
      gboolean pick = c->ours;
      *run_nt = c->run_threads;
      g_mutex_unlock (&lock);
      return pick;
    }
  if (c == NULL)
    {
      /* A placeholder (samples 0: not listed, not saved) that makes the
       * other threads wait for this thread's measurement. */
      c = g_new0 (choice, 1);
      c->key = key;
      c->ours = TRUE;
      c->run_threads = nt;
      g_hash_table_replace (table, &c->key, c);
    }
  c->checked = TRUE; /* this thread measures it (once more), below */
  c->measuring = TRUE;
  g_mutex_unlock (&lock);

  /* Measured outside the lock: other shapes go on meanwhile. */
  choice fresh = { .key = key };
  measure (g, nt, ours, openblas, &fresh);

  g_mutex_lock (&lock);
  ensure_table ();
  c = g_hash_table_lookup (table, &key);
  if (c == NULL || c->samples == 0)
    {
      if (c == NULL)
        {
          /* The table was forgotten meanwhile. */
          c = g_new0 (choice, 1);
          c->key = key;
          g_hash_table_replace (table, &c->key, c);
        }
      c->ours_us = fresh.ours_us;
      c->openblas_us = fresh.openblas_us;
      c->serial_ours_us = fresh.serial_ours_us;
      c->serial_openblas_us = fresh.serial_openblas_us;
    }
  else if (fresh.ours_us > 0 && fresh.openblas_us > 0)
    {
#define FASTEST(field) c->field = c->field > 0 && fresh.field > 0 ? MIN (c->field, fresh.field) \
                                                                  : MAX (c->field, fresh.field)
      FASTEST (ours_us);
      FASTEST (openblas_us);
      FASTEST (serial_ours_us);
      FASTEST (serial_openblas_us);
#undef FASTEST
    }
  c->samples = MIN (c->samples + 1, SETTLE);
  c->checked = TRUE;
  c->measuring = FALSE;
  g_cond_broadcast (&measured_cond);
  decide (c);
  gboolean pick = c->ours;
  *run_nt = c->run_threads;
  n_measured++;
  dirty = TRUE;
  if (g_get_monotonic_time () - last_save_us >= SAVE_INTERVAL_US)
    save_cache ();
  g_mutex_unlock (&lock);
  return pick;
}

/* ---- public ------------------------------------------------------------- */

GArray *
tw_gemm_choices (void)
{
  GArray *out = g_array_new (FALSE, TRUE, sizeof (tw_gemm_choice));
  g_mutex_lock (&lock);
  ensure_table ();
  g_autoptr (GPtrArray) all = sorted_choices ();
  for (guint i = 0; i < all->len; i++)
    {
      tw_gemm_choice e = to_public (all->pdata[i]);
      g_array_append_val (out, e);
    }
  g_mutex_unlock (&lock);
  return out;
}

char *
tw_gemm_choice_cache_path (void)
{
  g_mutex_lock (&lock);
  ensure_table ();
  char *p = g_strdup (cache_path);
  g_mutex_unlock (&lock);
  return p;
}

guint
tw_gemm_choice_measured (void)
{
  g_mutex_lock (&lock);
  guint n = n_measured;
  g_mutex_unlock (&lock);
  return n;
}

void
tw_gemm_choice_flush (void)
{
  save_at_exit ();
}

void
tw_gemm_choice_forget (void)
{
  g_mutex_lock (&lock);
  if (table && dirty)
    save_cache ();
  g_clear_pointer (&table, g_hash_table_unref);
  g_clear_pointer (&cache_path, g_free);
  n_measured = 0;
  g_cond_broadcast (&measured_cond); /* waiters look the shape up again */
  g_mutex_unlock (&lock);
}
