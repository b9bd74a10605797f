/* test-gemm-choice.c — AUTO's per-machine choice between our GEMM kernel and
 * OpenBLAS (engine/cpu/gemm-choice.c): measuring a shape leaves the caller's
 * C exactly as the product makes it (beta ≠ 0, epilogue with pre), the
 * choices land in $XDG_CACHE_HOME/twb/gemm-ID.json, the first 3 processes to
 * meet a shape measure it (the fastest of their times decides), a later
 * process reads the choice instead of measuring again, and a file written
 * for another machine, or a damaged one, is ignored and replaced.
 *
 * XDG_CACHE_HOME points into a fresh temporary directory for the whole run.
 * On a CPU that runs none of our kernels there is nothing to choose from
 * and the test skips. */
#include "engine/cpu/gemm.h"

#include <cblas.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

typedef struct
{
  gboolean ta, tb;
  int64_t m, n, k;
} shape;

static const shape shapes[] = {
  { FALSE, TRUE, 64, 256, 784 },  /* a linear layer's forward */
  { TRUE, FALSE, 128, 256, 64 },  /* its weight gradient */
  { FALSE, FALSE, 1, 10, 128 },   /* batch-1 inference */
};

static char *cache_home;

/* gemm.h's rule: OpenBLAS only when more than 3 % faster than ours; one
 * thread only when more than 3 % faster than the team. */
static void
assert_rule (const tw_gemm_choice *c)
{
  gboolean ours = c->openblas_us * 1.03 >= c->ours_us;
  double best = ours ? c->ours_us : c->openblas_us;
  if (c->threads == 1)
    {
      g_assert_cmpfloat (c->serial_ours_us, ==, 0);
      g_assert_cmpint (c->run_threads, ==, 1);
      g_assert_true (c->ours == ours);
      return;
    }
  g_assert_cmpfloat (c->serial_ours_us, >, 0);
  g_assert_cmpfloat (c->serial_openblas_us, >, 0);
  gboolean s_ours = c->serial_openblas_us * 1.03 >= c->serial_ours_us;
  double s_best = s_ours ? c->serial_ours_us : c->serial_openblas_us;
  if (s_best * 1.03 < best)
    {
      g_assert_cmpint (c->run_threads, ==, 1);
      g_assert_true (c->ours == s_ours);
    }
  else
    {
      g_assert_cmpint (c->run_threads, ==, c->threads);
      g_assert_true (c->ours == ours);
    }
}

static void
fill (float *x, int64_t n, guint32 seed)
{
  for (int64_t i = 0; i < n; i++)
    {
      seed = seed * 1664525u + 1013904223u;
      x[i] = (float) ((seed >> 8) * 0x1p-24 - 0.5);
    }
}

/* Runs every shape once with beta = 0.5 over a known C and a bias + ReLU
 * epilogue with pre; checks C and pre against the double reference. */
static void
run_shapes (void)
{
  for (guint s = 0; s < G_N_ELEMENTS (shapes); s++)
    {
      const shape *p = &shapes[s];
      int64_t lda = p->ta ? p->m : p->k, ldb = p->tb ? p->k : p->n;
      g_autofree float *a = g_new (float, p->m * p->k);
      g_autofree float *b = g_new (float, p->k * p->n);
      g_autofree float *bias = g_new (float, p->n);
      g_autofree float *c = g_new (float, p->m * p->n);
      g_autofree float *ref = g_new (float, p->m * p->n);
      g_autofree float *pre = g_new (float, p->m * p->n);
      g_autofree float *pre_ref = g_new (float, p->m * p->n);
      fill (a, p->m * p->k, 1 + s);
      fill (b, p->k * p->n, 7 + s);
      fill (bias, p->n, 11 + s);
      fill (c, p->m * p->n, 13 + s);
      memcpy (ref, c, p->m * p->n * sizeof (float));
      tw_gemm_epilogue ep = { .bias = bias, .act = TW_GEMM_ACT_RELU, .pre = pre, .ldpre = p->n };
      tw_gemm_epilogue ep_ref = ep;
      ep_ref.pre = pre_ref;
      tw_gemm_f32_ex (p->ta, p->tb, p->m, p->n, p->k, 1.0f, a, lda, b, ldb, 0.5f, c, p->n, &ep);
      tw_gemm_f32_ref (p->ta, p->tb, p->m, p->n, p->k, 1.0f, a, lda, b, ldb, 0.5f, ref, p->n,
                       &ep_ref);
      double tol = (4.0 * sqrt ((double) p->k) + 8.0) * 0x1p-24, worst = 0, scale = 1e-30;
      for (int64_t i = 0; i < p->m * p->n; i++)
        {
          worst = MAX (worst, fabs (c[i] - ref[i]));
          worst = MAX (worst, fabs (pre[i] - pre_ref[i]));
          scale = MAX (scale, fabs (pre_ref[i]));
        }
      g_assert_cmpfloat (worst / scale, <=, tol);
    }
}

static JsonObject *
read_cache (JsonParser *parser)
{
  g_autofree char *path = tw_gemm_choice_cache_path ();
  g_assert_nonnull (path);
  g_assert_true (g_str_has_prefix (path, cache_home));
  g_autoptr (GError) error = NULL;
  g_assert_true (json_parser_load_from_file (parser, path, &error));
  g_assert_no_error (error);
  return json_node_get_object (json_parser_get_root (parser));
}

static void
test_measure_and_remember (void)
{
  tw_gemm_choice_forget ();
  run_shapes ();
  g_assert_cmpuint (tw_gemm_choice_measured (), ==, G_N_ELEMENTS (shapes));
  GArray *choices = tw_gemm_choices ();
  g_assert_cmpuint (choices->len, ==, G_N_ELEMENTS (shapes));
  for (guint i = 0; i < choices->len; i++)
    {
      const tw_gemm_choice *c = &g_array_index (choices, tw_gemm_choice, i);
      g_assert_true (c->epilogue);
      g_assert_cmpint (c->threads, >=, 1);
      g_assert_cmpfloat (c->ours_us, >, 0);
      g_assert_cmpfloat (c->openblas_us, >, 0);
      assert_rule (c);
      g_test_message ("%c%c %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                      " at %d threads: ours %.2f us, openblas %.2f us (one thread: %.2f, %.2f)"
                      " -> %s on %d",
                      c->trans_a ? 'T' : 'N', c->trans_b ? 'T' : 'N', c->m, c->n, c->k,
                      c->threads, c->ours_us, c->openblas_us, c->serial_ours_us,
                      c->serial_openblas_us, c->ours ? "ours" : "openblas", c->run_threads);
    }

  tw_gemm_choice_flush ();
  g_autoptr (JsonParser) parser = json_parser_new ();
  JsonObject *o = read_cache (parser);
  g_assert_cmpint (json_object_get_int_member (o, "format"), ==, 2);
  g_assert_nonnull (strstr (json_object_get_string_member (o, "machine"), "OpenBLAS"));
  g_assert_cmpuint (json_array_get_length (json_object_get_array_member (o, "choices")), ==,
                    G_N_ELEMENTS (shapes));

  /* Same process, table forgotten (as a new process sees it): measured
   * once more by the 2nd and the 3rd, each side keeping its fastest time;
   * then read back, nothing measured. */
  for (int round = 2; round <= 4; round++)
    {
      tw_gemm_choice_forget ();
      run_shapes ();
      g_assert_cmpuint (tw_gemm_choice_measured (), ==, round <= 3 ? G_N_ELEMENTS (shapes) : 0);
      g_autoptr (GArray) again = tw_gemm_choices ();
      g_assert_cmpuint (again->len, ==, choices->len);
      for (guint i = 0; i < again->len; i++)
        {
          const tw_gemm_choice *now = &g_array_index (again, tw_gemm_choice, i);
          const tw_gemm_choice *before = &g_array_index (choices, tw_gemm_choice, i);
          g_assert_cmpint (now->samples, ==, MIN (round, 3));
          g_assert_cmpfloat (now->ours_us, <=, before->ours_us);
          g_assert_cmpfloat (now->openblas_us, <=, before->openblas_us);
          g_assert_cmpfloat (now->serial_ours_us, <=, before->serial_ours_us);
          g_assert_cmpfloat (now->serial_openblas_us, <=, before->serial_openblas_us);
          assert_rule (now);
        }
      g_array_unref (choices);
      choices = g_array_ref (again);
      tw_gemm_choice_flush ();
    }
  g_array_unref (choices);
}

/* Forgets, runs and writes until a run measures nothing (3 rounds from an
 * empty cache). */
static void
settle (void)
{
  for (int round = 0; round < 3; round++)
    {
      tw_gemm_choice_forget ();
      run_shapes ();
      tw_gemm_choice_flush ();
    }
  tw_gemm_choice_forget ();
  run_shapes ();
  g_assert_cmpuint (tw_gemm_choice_measured (), ==, 0);
}

/* A restart: a child process with the same XDG_CACHE_HOME measures nothing. */
static void
test_restart (void)
{
  if (g_test_subprocess ())
    {
      run_shapes ();
      g_print ("measured %u\n", tw_gemm_choice_measured ());
      return;
    }
  settle ();
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDERR);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stdout ("measured 0\n");
}

/* A file for another machine, then a damaged one: ignored, measured anew,
 * replaced by this machine's. */
static void
test_foreign_and_damaged (void)
{
  settle ();
  g_autofree char *path = tw_gemm_choice_cache_path ();
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  char *machine = strstr (text, "\"machine\"");
  g_assert_nonnull (machine);
  machine = strchr (strchr (machine, ':'), '"');
  g_assert_nonnull (machine);
  machine[1] ^= 1; /* another CPU model */
  g_assert_true (g_file_set_contents (path, text, -1, NULL));

  tw_gemm_choice_forget ();
  run_shapes ();
  g_assert_cmpuint (tw_gemm_choice_measured (), ==, G_N_ELEMENTS (shapes));
  tw_gemm_choice_flush ();
  g_autoptr (JsonParser) parser = json_parser_new ();
  JsonObject *o = read_cache (parser);
  g_assert_cmpuint (json_array_get_length (json_object_get_array_member (o, "choices")), ==,
                    G_N_ELEMENTS (shapes));

  const char *damaged[] = { "", "{", "[1,2]", "{\"format\": 1, \"machine\": 5}", "\x01\xff garbage" };
  for (guint i = 0; i < G_N_ELEMENTS (damaged); i++)
    {
      tw_gemm_choice_flush (); /* or forget () would write the table over it */
      g_assert_true (g_file_set_contents (path, damaged[i], -1, NULL));
      tw_gemm_choice_forget ();
      run_shapes ();
      g_assert_cmpuint (tw_gemm_choice_measured (), ==, G_N_ELEMENTS (shapes));
    }
}

/* The settled cache with the first choice's member `name` set to the JSON
 * text `value` (the others as they are). */
static char *
cache_with (const char *settled, const char *name, const char *value)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_assert_true (json_parser_load_from_data (parser, settled, -1, NULL));
  JsonObject *o = json_node_get_object (json_parser_get_root (parser));
  JsonArray *a = json_object_get_array_member (o, "choices");
  JsonObject *first = json_array_get_object_element (a, 0);
  /* A placeholder, replaced by the raw text (json-glib would write 1e999
   * as "inf", which is no JSON). */
  json_object_set_string_member (first, name, "@VALUE@");
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  json_generator_set_root (gen, json_parser_get_root (parser));
  g_autofree char *text = json_generator_to_data (gen, NULL);
  g_auto (GStrv) parts = g_strsplit (text, "\"@VALUE@\"", 2);
  g_assert_cmpuint (g_strv_length (parts), ==, 2);
  return g_strconcat (parts[0], value, parts[1], NULL);
}

/* Crafted caches (the cache is a file anyone with the account can write):
 * values out of range make their choice ignored (it is measured anew, the
 * others are read back); nesting 100,000 levels deep (it overflowed
 * json-glib's recursion in `twb devices` and every compiled run), members
 * of the wrong type and a file too large are ignored whole.  Under UBSan a
 * thread count of 99999999999 overflowed the shift in key_hash. */
static void
test_crafted (void)
{
  settle ();
  g_autofree char *path = tw_gemm_choice_cache_path ();
  g_autofree char *settled = NULL;
  g_assert_true (g_file_get_contents (path, &settled, NULL, NULL));
  static const struct
  {
    const char *member, *value;
  } bad_values[] = {
    { "threads", "99999999999" }, { "threads", "-3" }, { "threads", "0" },
    { "threads", "4097" }, { "m", "-1" }, { "k", "0" }, { "threads", "\"2\"" },
    { "ours_us", "-1.5" }, { "openblas_us", "1e999" }, { "kernel", "{}" },
    { "kernel", "\"both\"" }, { "n", "9223372036854775807" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad_values); i++)
    {
      g_autofree char *text = cache_with (settled, bad_values[i].member, bad_values[i].value);
      tw_gemm_choice_flush ();
      g_assert_true (g_file_set_contents (path, text, -1, NULL));
      tw_gemm_choice_forget ();
      run_shapes ();
      /* The first shape is measured anew, the others read back (n =
       * INT64_MAX is a valid key, only never met). */
      g_test_message ("%s = %s: %u measured", bad_values[i].member, bad_values[i].value,
                      tw_gemm_choice_measured ());
      g_assert_cmpuint (tw_gemm_choice_measured (), ==, 1);
    }

  /* Whole files ignored: every shape measured anew. */
  g_autoptr (GString) deep = g_string_new ("{\"format\": 1, \"machine\": \"x\", \"choices\": ");
  for (int i = 0; i < 100000; i++)
    g_string_append_c (deep, '[');
  for (int i = 0; i < 100000; i++)
    g_string_append_c (deep, ']');
  g_string_append_c (deep, '}');
  g_autofree char *wrong_choices = cache_with (settled, "m", "1");
  char *c = strstr (wrong_choices, "\"choices\"");
  g_assert_nonnull (c);
  g_autofree char *choices_5 = g_strdup_printf ("%.*s\"choices\" : 5}", (int) (c - wrong_choices),
                                                wrong_choices);
  g_autofree char *big = g_strnfill ((16 << 20) + 1, ' ');
  const char *files[] = { deep->str, choices_5, "{\"format\": \"1\"}", "{\"format\": 1, \"machine\": []}",
                          big };
  for (guint i = 0; i < G_N_ELEMENTS (files); i++)
    {
      tw_gemm_choice_flush ();
      g_assert_true (g_file_set_contents (path, files[i], -1, NULL));
      tw_gemm_choice_forget ();
      run_shapes ();
      g_assert_cmpuint (tw_gemm_choice_measured (), ==, G_N_ELEMENTS (shapes));
    }
}

int
main (int argc, char **argv)
{
  /* Before GLib reads it, and inherited by the restart's child. */
  if (g_getenv ("TWB_TEST_CACHE_HOME") == NULL)
    {
      char *dir = g_dir_make_tmp ("twb-gemm-choice-XXXXXX", NULL);
      g_setenv ("TWB_TEST_CACHE_HOME", dir, TRUE);
      g_free (dir);
    }
  cache_home = g_strdup (g_getenv ("TWB_TEST_CACHE_HOME"));
  g_setenv ("XDG_CACHE_HOME", cache_home, TRUE);
  g_unsetenv ("TWB_GEMM");
  /* The choices are keyed by the threads a call runs on; on a loaded
   * machine contention would send some calls to one thread (engine/cpu/
   * parallel.h) and add keys the assertions do not expect. */
  g_setenv ("TWB_ADAPTIVE_THREADS", "0", TRUE);
  g_test_init (&argc, &argv, NULL);
  /* OpenBLAS single-threaded, as tw_ops_init sets it for the engine
   * (engine/cpu/blas.h says why): otherwise its own pool spins against the
   * OpenMP team and the one-thread OpenBLAS times are OpenBLAS's two
   * threads fighting ours (27 ms for a 0.3 ms product on a loaded machine). */
  openblas_set_num_threads (1);
  if (!tw_gemm_have_kernel ())
    {
      g_test_skip ("this CPU runs none of our GEMM kernels (no AVX2 + FMA): OpenBLAS is the only choice");
      return g_test_run ();
    }
  g_test_add_func ("/engine/gemm-choice/measure-and-remember", test_measure_and_remember);
  g_test_add_func ("/engine/gemm-choice/restart", test_restart);
  g_test_add_func ("/engine/gemm-choice/foreign-and-damaged", test_foreign_and_damaged);
  g_test_add_func ("/engine/gemm-choice/crafted", test_crafted);
  int rc = g_test_run ();
  if (!g_test_subprocess ())
    {
      /* Remove what the test wrote (nothing is left to write at exit). */
      tw_gemm_choice_flush ();
      g_autofree char *twb = g_build_filename (cache_home, "twb", NULL);
      g_autoptr (GDir) d = g_dir_open (twb, 0, NULL);
      const char *name;
      while (d && (name = g_dir_read_name (d)))
        {
          g_autofree char *f = g_build_filename (twb, name, NULL);
          g_unlink (f);
        }
      g_rmdir (twb);
      g_rmdir (cache_home);
    }
  g_free (cache_home);
  return rc;
}
