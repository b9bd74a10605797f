/* twb-metrics.c — named metric series: points, smoothing, decimation, CSV. */
#define G_LOG_DOMAIN "twb-metrics"

#include "ui/twb-metrics.h"

#include "engine/fileutil.h"

#include <math.h>
#include <string.h>

/* Caches kept per series: a dashboard draws a series in one or two plots,
 * each with the raw and the smoothed curve, at one width; a few entries
 * cover that and an export at another size without thrashing. */
#define N_SMOOTH_CACHES 4
#define N_BUCKET_CACHES 8
/* Largest CSV read: 1 GiB is some 25 million points, beyond any run here. */
#define MAX_CSV_BYTES ((gsize) 1 << 30)

typedef struct
{
  double x, y;
} Point;

typedef struct
{
  double s;            /* 0 when the slot is free */
  GArray *vals;        /* double: smoothed y of points [0, vals->len) */
  double last;         /* EMA state after vals->len points */
  double weight;       /* s^k, k = finite points so far */
  guint64 used;
} SmoothCache;

typedef struct
{
  TwbMetricsBucket *b; /* NULL when the slot is free */
  double s, x0, x1;
  guint n;
  gsize done;          /* points [0, done) are in b (or outside [x0, x1]) */
  guint64 used;
} BucketCache;

typedef struct
{
  char *run, *name;
  GArray *pts;         /* Point, x non-decreasing */
  /* Ranges of points with finite y, and with y > 0. */
  gboolean any, pos_any;
  double xmin, xmax, ymin, ymax;
  double pxmin, pxmax, pymin, pymax;
  SmoothCache smooth[N_SMOOTH_CACHES];
  BucketCache buckets[N_BUCKET_CACHES];
} Series;

struct _TwbMetrics
{
  GObject parent_instance;
  GPtrArray *series;   /* Series *, NULL where removed; index = id */
  GHashTable *ids;     /* "run\x1fname" → id + 1 */
  GPtrArray *runs;     /* char *, in the order first added */
  guint64 tick;
};

G_DEFINE_FINAL_TYPE (TwbMetrics, twb_metrics, G_TYPE_OBJECT)

G_DEFINE_QUARK (twb-metrics-error-quark, twb_metrics_error)

enum
{
  SIG_CHANGED,
  SIG_SERIES_ADDED,
  SIG_SERIES_REMOVED,
  N_SIGNALS
};
static guint signals[N_SIGNALS];

/* ---- Series ------------------------------------------------------------------ */

static void
series_drop_caches (Series *s)
{
  for (guint i = 0; i < N_SMOOTH_CACHES; i++)
    {
      g_clear_pointer (&s->smooth[i].vals, g_array_unref);
      s->smooth[i].s = 0;
    }
  for (guint i = 0; i < N_BUCKET_CACHES; i++)
    g_clear_pointer (&s->buckets[i].b, g_free);
}

static void
series_reset_ranges (Series *s)
{
  s->any = s->pos_any = FALSE;
  s->xmin = s->xmax = s->ymin = s->ymax = NAN;
  s->pxmin = s->pxmax = s->pymin = s->pymax = NAN;
}

static void
series_free (Series *s)
{
  if (s == NULL)
    return;
  series_drop_caches (s);
  g_array_unref (s->pts);
  g_free (s->run);
  g_free (s->name);
  g_free (s);
}

static char *
series_key (const char *run, const char *name)
{
  return g_strconcat (run, "\x1f", name, NULL);
}

static Series *
get_series (TwbMetrics *m, guint id)
{
  g_return_val_if_fail (TWB_IS_METRICS (m), NULL);
  if (id >= m->series->len)
    return NULL;
  return g_ptr_array_index (m->series, id);
}

static void
series_push (Series *s, double x, double y)
{
  Point p = { x, y };
  g_array_append_val (s->pts, p);
  if (isfinite (y))
    {
      if (!s->any)
        {
          s->any = TRUE;
          s->xmin = s->xmax = x;
          s->ymin = s->ymax = y;
        }
      s->xmin = MIN (s->xmin, x);
      s->xmax = MAX (s->xmax, x);
      s->ymin = MIN (s->ymin, y);
      s->ymax = MAX (s->ymax, y);
      if (y > 0)
        {
          if (!s->pos_any)
            {
              s->pos_any = TRUE;
              s->pxmin = s->pxmax = x;
              s->pymin = s->pymax = y;
            }
          s->pxmin = MIN (s->pxmin, x);
          s->pxmax = MAX (s->pxmax, x);
          s->pymin = MIN (s->pymin, y);
          s->pymax = MAX (s->pymax, y);
        }
    }
}

static double
last_x (Series *s)
{
  return s->pts->len ? g_array_index (s->pts, Point, s->pts->len - 1).x : -INFINITY;
}

/* ---- GObject ----------------------------------------------------------------- */

static void
twb_metrics_finalize (GObject *object)
{
  TwbMetrics *m = TWB_METRICS (object);
  g_ptr_array_unref (m->series);
  g_hash_table_unref (m->ids);
  g_ptr_array_unref (m->runs);
  G_OBJECT_CLASS (twb_metrics_parent_class)->finalize (object);
}

static void
twb_metrics_class_init (TwbMetricsClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = twb_metrics_finalize;
  signals[SIG_CHANGED] = g_signal_new ("changed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                                       NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_UINT);
  signals[SIG_SERIES_ADDED] = g_signal_new ("series-added", G_TYPE_FROM_CLASS (klass),
                                            G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE,
                                            1, G_TYPE_UINT);
  signals[SIG_SERIES_REMOVED] = g_signal_new ("series-removed", G_TYPE_FROM_CLASS (klass),
                                              G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE,
                                              1, G_TYPE_UINT);
}

static void
twb_metrics_init (TwbMetrics *m)
{
  m->series = g_ptr_array_new_with_free_func ((GDestroyNotify) series_free);
  m->ids = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  m->runs = g_ptr_array_new_with_free_func (g_free);
}

TwbMetrics *
twb_metrics_new (void)
{
  return g_object_new (TWB_TYPE_METRICS, NULL);
}

/* ---- Series: adding, naming, points ------------------------------------------ */

guint
twb_metrics_add_series (TwbMetrics *m, const char *run, const char *name)
{
  g_return_val_if_fail (TWB_IS_METRICS (m), G_MAXUINT);
  g_return_val_if_fail (run != NULL && name != NULL, G_MAXUINT);
  guint id = twb_metrics_find_series (m, run, name);
  if (id != G_MAXUINT)
    return id;
  Series *s = g_new0 (Series, 1);
  s->run = g_strdup (run);
  s->name = g_strdup (name);
  s->pts = g_array_new (FALSE, FALSE, sizeof (Point));
  series_reset_ranges (s);
  id = m->series->len;
  g_ptr_array_add (m->series, s);
  g_hash_table_insert (m->ids, series_key (run, name), GUINT_TO_POINTER (id + 1));
  gboolean known = FALSE;
  for (guint i = 0; i < m->runs->len && !known; i++)
    known = g_str_equal (g_ptr_array_index (m->runs, i), run);
  if (!known)
    g_ptr_array_add (m->runs, g_strdup (run));
  g_signal_emit (m, signals[SIG_SERIES_ADDED], 0, id);
  return id;
}

guint
twb_metrics_find_series (TwbMetrics *m, const char *run, const char *name)
{
  g_return_val_if_fail (TWB_IS_METRICS (m), G_MAXUINT);
  g_autofree char *key = series_key (run, name);
  gpointer v = g_hash_table_lookup (m->ids, key);
  return v ? GPOINTER_TO_UINT (v) - 1 : G_MAXUINT;
}

guint
twb_metrics_n_series (TwbMetrics *m)
{
  g_return_val_if_fail (TWB_IS_METRICS (m), 0);
  return m->series->len;
}

gboolean
twb_metrics_has_series (TwbMetrics *m, guint series)
{
  return get_series (m, series) != NULL;
}

const char *
twb_metrics_series_run (TwbMetrics *m, guint series)
{
  Series *s = get_series (m, series);
  return s ? s->run : NULL;
}

const char *
twb_metrics_series_name (TwbMetrics *m, guint series)
{
  Series *s = get_series (m, series);
  return s ? s->name : NULL;
}

gsize
twb_metrics_series_len (TwbMetrics *m, guint series)
{
  Series *s = get_series (m, series);
  return s ? s->pts->len : 0;
}

void
twb_metrics_get_point (TwbMetrics *m, guint series, gsize i, double *x, double *y)
{
  Series *s = get_series (m, series);
  g_return_if_fail (s != NULL && i < s->pts->len);
  const Point *p = &g_array_index (s->pts, Point, i);
  if (x)
    *x = p->x;
  if (y)
    *y = p->y;
}

void
twb_metrics_append (TwbMetrics *m, guint series, double x, double y)
{
  twb_metrics_append_many (m, series, &x, &y, 1);
}

void
twb_metrics_append_many (TwbMetrics *m, guint series, const double *x, const double *y, gsize n)
{
  Series *s = get_series (m, series);
  g_return_if_fail (s != NULL);
  if (n == 0)
    return;
  g_return_if_fail (x != NULL && y != NULL);
  double prev = last_x (s);
  for (gsize i = 0; i < n; i++)
    {
      g_return_if_fail (isfinite (x[i]) && x[i] >= prev);
      prev = x[i];
    }
  for (gsize i = 0; i < n; i++)
    series_push (s, x[i], y[i]);
  g_signal_emit (m, signals[SIG_CHANGED], 0, series);
}

void
twb_metrics_clear_run (TwbMetrics *m, const char *run)
{
  g_return_if_fail (TWB_IS_METRICS (m) && run != NULL);
  for (guint id = 0; id < m->series->len; id++)
    {
      Series *s = g_ptr_array_index (m->series, id);
      if (s == NULL || !g_str_equal (s->run, run))
        continue;
      series_drop_caches (s);
      g_array_set_size (s->pts, 0);
      series_reset_ranges (s);
      g_signal_emit (m, signals[SIG_CHANGED], 0, id);
    }
}

void
twb_metrics_remove_run (TwbMetrics *m, const char *run)
{
  g_return_if_fail (TWB_IS_METRICS (m) && run != NULL);
  for (guint i = 0; i < m->runs->len; i++)
    if (g_str_equal (g_ptr_array_index (m->runs, i), run))
      {
        g_ptr_array_remove_index (m->runs, i);
        break;
      }
  for (guint id = 0; id < m->series->len; id++)
    {
      Series *s = g_ptr_array_index (m->series, id);
      if (s == NULL || !g_str_equal (s->run, run))
        continue;
      g_autofree char *key = series_key (s->run, s->name);
      g_hash_table_remove (m->ids, key);
      series_free (g_steal_pointer (&m->series->pdata[id]));
      g_signal_emit (m, signals[SIG_SERIES_REMOVED], 0, id);
    }
}

char **
twb_metrics_list_runs (TwbMetrics *m)
{
  g_return_val_if_fail (TWB_IS_METRICS (m), NULL);
  char **runs = g_new0 (char *, m->runs->len + 1);
  for (guint i = 0; i < m->runs->len; i++)
    runs[i] = g_strdup (g_ptr_array_index (m->runs, i));
  return runs;
}

gboolean
twb_metrics_range (TwbMetrics *m, guint series, gboolean positive_only, double *xmin,
                   double *xmax, double *ymin, double *ymax)
{
  Series *s = get_series (m, series);
  if (s == NULL || !(positive_only ? s->pos_any : s->any))
    return FALSE;
  if (xmin)
    *xmin = positive_only ? s->pxmin : s->xmin;
  if (xmax)
    *xmax = positive_only ? s->pxmax : s->xmax;
  if (ymin)
    *ymin = positive_only ? s->pymin : s->ymin;
  if (ymax)
    *ymax = positive_only ? s->pymax : s->ymax;
  return TRUE;
}

/* ---- Smoothing ---------------------------------------------------------------- */

/* The smoothed values of s for smoothing sm, brought up to the series'
 * length: only points appended since the last call are walked. */
static const double *
smoothed_values (TwbMetrics *m, Series *s, double sm)
{
  SmoothCache *c = NULL, *victim = &s->smooth[0];
  for (guint i = 0; i < N_SMOOTH_CACHES && c == NULL; i++)
    {
      if (s->smooth[i].vals != NULL && s->smooth[i].s == sm)
        c = &s->smooth[i];
      else if (s->smooth[i].vals == NULL || s->smooth[i].used < victim->used)
        victim = &s->smooth[i];
    }
  if (c == NULL)
    {
      c = victim;
      g_clear_pointer (&c->vals, g_array_unref);
      c->vals = g_array_new (FALSE, FALSE, sizeof (double));
      c->s = sm;
      c->last = 0;
      c->weight = 1;
    }
  c->used = ++m->tick;
  guint have = c->vals->len;
  g_array_set_size (c->vals, s->pts->len);
  double *v = (double *) (void *) c->vals->data;
  const Point *p = (const Point *) (const void *) s->pts->data;
  for (guint i = have; i < s->pts->len; i++)
    {
      double y = p[i].y;
      if (!isfinite (y))
        {
          v[i] = y;
          continue;
        }
      c->last = c->last * sm + (1 - sm) * y;
      c->weight *= sm;
      v[i] = c->last / (1 - c->weight);
    }
  return v;
}

double
twb_metrics_smoothed (TwbMetrics *m, guint series, double smoothing, gsize i)
{
  Series *s = get_series (m, series);
  g_return_val_if_fail (s != NULL && i < s->pts->len, NAN);
  g_return_val_if_fail (smoothing >= 0 && smoothing < 1, NAN);
  if (smoothing == 0)
    return g_array_index (s->pts, Point, i).y;
  return smoothed_values (m, s, smoothing)[i];
}

/* ---- Buckets ------------------------------------------------------------------ */

/* First index with x >= x0. */
static gsize
lower_bound (const Point *p, gsize n, double x0)
{
  gsize lo = 0, hi = n;
  while (lo < hi)
    {
      gsize mid = lo + (hi - lo) / 2;
      if (p[mid].x < x0)
        lo = mid + 1;
      else
        hi = mid;
    }
  return lo;
}

static inline void
bucket_add (TwbMetricsBucket *b, double y)
{
  if (!b->any)
    {
      b->any = TRUE;
      b->first = y;
    }
  b->last = y;
  if (isfinite (y))
    {
      if (!(b->min <= y))
        b->min = y;
      if (!(b->max >= y))
        b->max = y;
    }
}

/* Adds points [from, n) of p (y from v when not NULL) to the columns. */
static void
bucket_walk (BucketCache *c, const Point *p, const double *v, gsize from, gsize n)
{
  double span = c->x1 - c->x0;
  double n_cols = c->n;
  for (gsize i = from; i < n; i++)
    {
      double x = p[i].x;
      if (x > c->x1)
        break;
      if (x < c->x0)
        continue;
      guint col = 0;
      if (span > 0)
        {
          /* x >= x0: truncation is the floor of the header's definition. */
          double f = (x - c->x0) * n_cols / span;
          col = f >= n_cols ? c->n - 1 : (guint) f;
        }
      bucket_add (&c->b[col], v ? v[i] : p[i].y);
    }
}

void
twb_metrics_buckets (TwbMetrics *m, guint series, double smoothing, double x0, double x1,
                     TwbMetricsBucket *buckets, guint n_buckets)
{
  Series *s = get_series (m, series);
  g_return_if_fail (s != NULL && buckets != NULL && n_buckets > 0);
  g_return_if_fail (smoothing >= 0 && smoothing < 1);
  BucketCache *c = NULL, *victim = &s->buckets[0];
  for (guint i = 0; i < N_BUCKET_CACHES && c == NULL; i++)
    {
      BucketCache *e = &s->buckets[i];
      if (e->b != NULL && e->s == smoothing && e->x0 == x0 && e->x1 == x1 && e->n == n_buckets)
        c = e;
      else if (e->b == NULL || (victim->b != NULL && e->used < victim->used))
        victim = e;
    }
  const Point *p = (const Point *) (const void *) s->pts->data;
  gsize n = s->pts->len;
  const double *v = smoothing > 0 ? smoothed_values (m, s, smoothing) : NULL;
  if (c == NULL)
    {
      c = victim;
      g_free (c->b);
      c->b = g_new (TwbMetricsBucket, n_buckets);
      for (guint i = 0; i < n_buckets; i++)
        c->b[i] = (TwbMetricsBucket) { NAN, NAN, NAN, NAN, FALSE };
      c->s = smoothing;
      c->x0 = x0;
      c->x1 = x1;
      c->n = n_buckets;
      c->done = lower_bound (p, n, x0);
    }
  c->used = ++m->tick;
  if (c->done < n)
    bucket_walk (c, p, v, c->done, n);
  c->done = n;
  memcpy (buckets, c->b, n_buckets * sizeof *buckets);
}

gssize
twb_metrics_nearest (TwbMetrics *m, guint series, double x)
{
  Series *s = get_series (m, series);
  if (s == NULL || s->pts->len == 0 || isnan (x))
    return -1;
  const Point *p = (const Point *) (const void *) s->pts->data;
  gsize n = s->pts->len;
  gsize i = lower_bound (p, n, x);
  if (i == 0)
    return 0;
  /* The earlier point wins a tie, the first of points with the same x. */
  if (i == n || x - p[i - 1].x <= p[i].x - x)
    return lower_bound (p, n, p[i - 1].x);
  return i;
}

/* ---- CSV ------------------------------------------------------------------------ */

static void
csv_field (GString *out, const char *s)
{
  if (strpbrk (s, ",\"\r\n") == NULL)
    {
      g_string_append (out, s);
      return;
    }
  g_string_append_c (out, '"');
  for (const char *c = s; *c; c++)
    {
      if (*c == '"')
        g_string_append_c (out, '"');
      g_string_append_c (out, *c);
    }
  g_string_append_c (out, '"');
}

static void
csv_number (GString *out, double v)
{
  if (isnan (v))
    g_string_append (out, "nan");
  else if (isinf (v))
    g_string_append (out, v > 0 ? "inf" : "-inf");
  else
    {
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      g_string_append (out, g_ascii_formatd (buf, sizeof buf, "%.17g", v));
    }
}

gboolean
twb_metrics_export_csv_series (TwbMetrics *m, const char *path, const guint *series, guint n,
                               GError **error)
{
  g_return_val_if_fail (TWB_IS_METRICS (m), FALSE);
  g_return_val_if_fail (path != NULL, FALSE);
  g_autoptr (GString) out = g_string_new ("run,series,x,y\n");
  for (guint k = 0; k < n; k++)
    {
      Series *s = get_series (m, series[k]);
      if (s == NULL)
        continue;
      g_autoptr (GString) prefix = g_string_new (NULL);
      csv_field (prefix, s->run);
      g_string_append_c (prefix, ',');
      csv_field (prefix, s->name);
      g_string_append_c (prefix, ',');
      for (guint i = 0; i < s->pts->len; i++)
        {
          const Point *p = &g_array_index (s->pts, Point, i);
          g_string_append_len (out, prefix->str, prefix->len);
          csv_number (out, p->x);
          g_string_append_c (out, ',');
          csv_number (out, p->y);
          g_string_append_c (out, '\n');
        }
    }
  return tw_file_save (path, out->str, out->len, error);
}

gboolean
twb_metrics_export_csv (TwbMetrics *m, const char *path, GError **error)
{
  g_return_val_if_fail (TWB_IS_METRICS (m), FALSE);
  g_autofree guint *ids = g_new (guint, m->series->len + 1);
  for (guint i = 0; i < m->series->len; i++)
    ids[i] = i;
  return twb_metrics_export_csv_series (m, path, ids, m->series->len, error);
}

/* Splits one CSV line (no line break) into fields, with RFC 4180 quoting.
 * NULL with *why set when a quote is unbalanced. */
static GPtrArray *
csv_split (const char *line, const char **why)
{
  g_autoptr (GPtrArray) fields = g_ptr_array_new_with_free_func (g_free);
  const char *c = line;
  for (;;)
    {
      g_autoptr (GString) f = g_string_new (NULL);
      if (*c == '"')
        {
          c++;
          for (;;)
            {
              if (*c == '\0')
                {
                  *why = "a quoted field is not closed";
                  return NULL;
                }
              if (*c == '"' && c[1] == '"')
                {
                  g_string_append_c (f, '"');
                  c += 2;
                }
              else if (*c == '"')
                {
                  c++;
                  break;
                }
              else
                g_string_append_c (f, *c++);
            }
          if (*c != ',' && *c != '\0')
            {
              *why = "text follows a closing quote";
              return NULL;
            }
        }
      else
        while (*c != ',' && *c != '\0')
          g_string_append_c (f, *c++);
      g_ptr_array_add (fields, g_string_free (g_steal_pointer (&f), FALSE));
      if (*c == '\0')
        break;
      c++; /* the comma */
    }
  return g_steal_pointer (&fields);
}

static gboolean
parse_number (const char *text, double *v)
{
  if (*text == '\0' || g_ascii_isspace (*text))
    return FALSE;
  char *end = NULL;
  *v = g_ascii_strtod (text, &end);
  return end != text && *end == '\0';
}

typedef struct
{
  char *run, *name;
  GArray *x, *y;
} Pending;

static void
pending_free (Pending *p)
{
  g_free (p->run);
  g_free (p->name);
  g_array_unref (p->x);
  g_array_unref (p->y);
  g_free (p);
}

static gboolean
parse_error (GError **error, const char *path, guint line, const char *format, ...)
  G_GNUC_PRINTF (4, 5);

static gboolean
parse_error (GError **error, const char *path, guint line, const char *format, ...)
{
  va_list ap;
  va_start (ap, format);
  g_autofree char *what = g_strdup_vprintf (format, ap);
  va_end (ap);
  g_set_error (error, TWB_METRICS_ERROR, TWB_METRICS_ERROR_PARSE, "%s:%u: %s", path, line, what);
  return FALSE;
}

gboolean
twb_metrics_import_csv (TwbMetrics *m, const char *path, const char *run_override,
                        GError **error)
{
  g_return_val_if_fail (TWB_IS_METRICS (m), FALSE);
  g_return_val_if_fail (path != NULL, FALSE);
  g_autofree char *text = NULL;
  gsize len = 0;
  if (!tw_file_read_regular (path, MAX_CSV_BYTES, &text, &len, error))
    return FALSE;
  if (memchr (text, '\0', len) != NULL)
    return parse_error (error, path, 1, "this is not a text file (it holds NUL bytes)");

  g_autoptr (GPtrArray) order = g_ptr_array_new_with_free_func ((GDestroyNotify) pending_free);
  g_autoptr (GHashTable) pending = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  gboolean header = FALSE;
  guint lineno = 0;
  char *next = text;
  while (next != NULL && *next != '\0')
    {
      char *line = next;
      char *nl = strchr (line, '\n');
      next = nl ? nl + 1 : NULL;
      if (nl)
        *nl = '\0';
      lineno++;
      gsize ll = strlen (line);
      if (ll > 0 && line[ll - 1] == '\r')
        line[--ll] = '\0';
      if (ll == 0)
        continue;
      if (!header)
        {
          if (!g_str_equal (line, "run,series,x,y"))
            return parse_error (error, path, lineno,
                                "the first line should be the header “run,series,x,y”");
          header = TRUE;
          continue;
        }
      const char *why = NULL;
      g_autoptr (GPtrArray) f = csv_split (line, &why);
      if (f == NULL)
        return parse_error (error, path, lineno, "%s", why);
      if (f->len != 4)
        return parse_error (error, path, lineno,
                            "expected 4 fields (run,series,x,y), found %u", f->len);
      const char *run = run_override ? run_override : g_ptr_array_index (f, 0);
      const char *name = g_ptr_array_index (f, 1);
      const char *xs = g_ptr_array_index (f, 2), *ys = g_ptr_array_index (f, 3);
      if (*run == '\0' || *name == '\0')
        return parse_error (error, path, lineno, "the run and the series need names");
      double x, y;
      if (!parse_number (xs, &x) || !isfinite (x))
        return parse_error (error, path, lineno, "x “%s” is not a finite number", xs);
      if (!parse_number (ys, &y))
        return parse_error (error, path, lineno, "y “%s” is not a number (or nan)", ys);
      g_autofree char *key = series_key (run, name);
      Pending *p = g_hash_table_lookup (pending, key);
      if (p == NULL)
        {
          p = g_new0 (Pending, 1);
          p->run = g_strdup (run);
          p->name = g_strdup (name);
          p->x = g_array_new (FALSE, FALSE, sizeof (double));
          p->y = g_array_new (FALSE, FALSE, sizeof (double));
          g_ptr_array_add (order, p);
          g_hash_table_insert (pending, g_steal_pointer (&key), p);
        }
      double prev = -INFINITY;
      if (p->x->len)
        prev = g_array_index (p->x, double, p->x->len - 1);
      else
        {
          Series *s = get_series (m, twb_metrics_find_series (m, run, name));
          if (s != NULL)
            prev = last_x (s);
        }
      if (x < prev)
        return parse_error (error, path, lineno,
                            "x %s comes before the previous point of %s/%s (x %.17g): points go "
                            "in increasing x",
                            xs, run, name, prev);
      g_array_append_val (p->x, x);
      g_array_append_val (p->y, y);
    }
  if (!header)
    return parse_error (error, path, 1, "the file is empty (no header “run,series,x,y”)");
  for (guint i = 0; i < order->len; i++)
    {
      Pending *p = g_ptr_array_index (order, i);
      guint id = twb_metrics_add_series (m, p->run, p->name);
      twb_metrics_append_many (m, id, (double *) (void *) p->x->data,
                               (double *) (void *) p->y->data, p->x->len);
    }
  return TRUE;
}
