/* memory.c — available memory and estimates made before allocating. */
#define G_LOG_DOMAIN "twb-memory"

#include "engine/memory.h"
#include "engine/graph.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

G_DEFINE_QUARK (tw-memory-error-quark, tw_memory_error)

/* "512M" → 512 MiB; FALSE when malformed: digits, then at most a suffix
 * (no sign, blank or other text: strtoull took "-1" as 2^64 - 1). */
static gboolean
parse_limit (const char *text, guint64 *out)
{
  char *end = NULL;
  if (!g_ascii_isdigit (text[0]))
    return FALSE;
  errno = 0;
  guint64 v = g_ascii_strtoull (text, &end, 10);
  if (errno != 0)
    return FALSE;
  int shift = 0;
  switch (*end)
    {
    case '\0': break;
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: return FALSE;
    }
  /* 0 would refuse everything; it is as likely a try at "no limit". */
  if (*end != '\0' || v == 0 || (shift && v > (G_MAXUINT64 >> shift)))
    return FALSE;
  *out = v << shift;
  return TRUE;
}

/* MemAvailable of /proc/meminfo in bytes, or 0. */
static guint64
meminfo_available (void)
{
  FILE *f = fopen ("/proc/meminfo", "re");
  if (f == NULL)
    return 0;
  char line[256];
  guint64 kb = 0;
  while (fgets (line, sizeof line, f))
    if (sscanf (line, "MemAvailable: %" G_GUINT64_FORMAT " kB", &kb) == 1)
      break;
  fclose (f);
  return kb <= G_MAXUINT64 / 1024 ? kb * 1024 : G_MAXUINT64;
}

guint64
tw_memory_available (void)
{
  const char *env = g_getenv ("TWB_MEMORY_LIMIT");
  guint64 avail = 0;
  if (env && *env)
    {
      if (!parse_limit (env, &avail))
        {
          static gsize warned = 0;
          if (g_once_init_enter (&warned))
            {
              g_warning ("TWB_MEMORY_LIMIT=%s is not a positive byte count (e.g. 1073741824 or 1G); "
                         "ignored", env);
              g_once_init_leave (&warned, 1);
            }
          avail = 0;
        }
    }
  if (avail == 0)
    avail = meminfo_available ();
  if (avail == 0)
    {
      long pages = sysconf (_SC_PHYS_PAGES), size = sysconf (_SC_PAGESIZE);
      avail = pages > 0 && size > 0 ? (guint64) pages * (guint64) size : G_MAXUINT64;
    }
  static const int limits[] = { RLIMIT_AS, RLIMIT_DATA };
  for (guint i = 0; i < G_N_ELEMENTS (limits); i++)
    {
      struct rlimit rl;
      if (getrlimit (limits[i], &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        avail = MIN (avail, (guint64) rl.rlim_cur);
    }
  return avail;
}

gboolean
tw_memory_check (guint64 nbytes, const char *what, GError **error)
{
  guint64 avail = tw_memory_available ();
  if (nbytes <= avail)
    return TRUE;
  g_autofree char *need = tw_format_bytes (nbytes);
  g_autofree char *have = tw_format_bytes (avail);
  g_set_error (error, TW_MEMORY_ERROR, TW_MEMORY_ERROR_EXHAUSTED,
               "%s needs %s; %s of memory is available%s", what ? what : "this allocation",
               need, have, g_getenv ("TWB_MEMORY_LIMIT") ? " (TWB_MEMORY_LIMIT)" : "");
  return FALSE;
}

/* ---- Estimates --------------------------------------------------------- */

static gboolean
add_checked (guint64 *acc, guint64 v)
{
  return g_uint64_checked_add (acc, *acc, v);
}

static gboolean
tinfo_bytes (const tw_tinfo *t, int64_t batch, guint64 *out)
{
  size_t n;
  if (!tw_tinfo_nbytes (t, batch, &n))
    return FALSE;
  *out = n;
  return TRUE;
}

gboolean
tw_graph_estimate_memory (const tw_graph *g, int64_t batch, tw_memory_estimate *out,
                          GError **error)
{
  memset (out, 0, sizeof *out);
  for (int i = 0; i < tw_graph_n_nodes (g); i++)
    {
      const tw_node *n = tw_graph_node (g, i);
      for (int k = 0; n->out_info && k < n->n_outputs; k++)
        {
          guint64 b;
          if (!tinfo_bytes (&n->out_info[k], batch, &b) || !add_checked (&out->activations, b))
            {
              g_autofree char *s = tw_tinfo_to_string (&n->out_info[k]);
              g_set_error (error, TW_MEMORY_ERROR, TW_MEMORY_ERROR_OVERFLOW,
                           "node %s: output %d (%s) at batch %" G_GINT64_FORMAT
                           " is larger than 2^63 bytes", n->id, k, s, batch);
              return FALSE;
            }
          if (b > out->largest)
            {
              out->largest = b;
              out->largest_node = n->id;
            }
        }
      if (n->share)
        continue;
      for (int k = 0; k < n->n_params; k++)
        {
          guint64 b;
          if (!tinfo_bytes (&n->params[k].info, 1, &b) || !add_checked (&out->params, b)
              || (n->params[k].trainable && !add_checked (&out->trainable, b)))
            {
              g_set_error (error, TW_MEMORY_ERROR, TW_MEMORY_ERROR_OVERFLOW,
                           "node %s: parameter %s is larger than 2^63 bytes", n->id,
                           n->params[k].suffix);
              return FALSE;
            }
        }
    }
  return TRUE;
}

static guint64
sat_add (guint64 a, guint64 b)
{
  guint64 r;
  return g_uint64_checked_add (&r, a, b) ? r : G_MAXUINT64;
}

static guint64
sat_mul (guint64 a, guint64 b)
{
  guint64 r;
  return g_uint64_checked_mul (&r, a, b) ? r : G_MAXUINT64;
}

guint64
tw_memory_estimate_eager_peak (const tw_memory_estimate *e, gboolean training)
{
  if (!training)
    return e->activations;
  return sat_add (sat_add (e->activations, e->trainable), sat_mul (e->largest, 2));
}

gboolean
tw_graph_check_memory (const tw_graph *g, int64_t batch, gboolean training, GError **error)
{
  tw_memory_estimate e;
  if (!tw_graph_estimate_memory (g, batch, &e, error))
    return FALSE;
  /* Parameters, plus in training their gradients' optimizer states (Adam
   * keeps two per parameter; the gradients are in the eager peak). */
  guint64 total = sat_add (sat_add (e.params, training ? sat_mul (e.trainable, 2) : 0),
                           tw_memory_estimate_eager_peak (&e, training));
  guint64 avail = tw_memory_available ();
  if (total <= avail)
    return TRUE;
  g_autofree char *need = tw_format_bytes (total);
  g_autofree char *have = tw_format_bytes (avail);
  g_autofree char *largest = tw_format_bytes (e.largest);
  g_autofree char *params = tw_format_bytes (e.params);
  if (e.largest_node && e.largest >= e.params)
    g_set_error (error, TW_MEMORY_ERROR, TW_MEMORY_ERROR_EXHAUSTED,
                 "node %s: its output at batch %" G_GINT64_FORMAT " takes %s, and a %s step "
                 "of the model needs about %s in all; %s of memory is available%s",
                 e.largest_node, MAX (batch, 1), largest, training ? "training" : "forward",
                 need, have, g_getenv ("TWB_MEMORY_LIMIT") ? " (TWB_MEMORY_LIMIT)" : "");
  else
    {
      /* Name the node with the largest parameters. */
      const char *big = NULL;
      guint64 most = 0;
      for (int i = 0; i < tw_graph_n_nodes (g); i++)
        {
          const tw_node *n = tw_graph_node (g, i);
          guint64 sum = 0;
          for (int k = 0; !n->share && k < n->n_params; k++)
            {
              guint64 b = 0;
              if (tinfo_bytes (&n->params[k].info, 1, &b))
                sum = sat_add (sum, b);
            }
          if (sum > most)
            most = sum, big = n->id;
        }
      g_autofree char *mine = tw_format_bytes (most);
      g_set_error (error, TW_MEMORY_ERROR, TW_MEMORY_ERROR_EXHAUSTED,
                   "node %s: its parameters take %s (%s for the model), and a %s step needs "
                   "about %s in all; %s of memory is available%s",
                   big ? big : "?", mine, params, training ? "training" : "forward", need, have,
                   g_getenv ("TWB_MEMORY_LIMIT") ? " (TWB_MEMORY_LIMIT)" : "");
    }
  return FALSE;
}
