/* csv.c — numeric CSV files: feature columns and one integer label column. */
#define G_LOG_DOMAIN "twb-data"

#include "engine/data/data-private.h"
#include "engine/fileutil.h"
#include "engine/memory.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* The cells of one line, split in place at the commas. */
typedef struct
{
  GPtrArray *cells;         /* char *, pointing into the line */
  int line_no;              /* 1-based line in the file */
} csv_row;

static void
split_cells (char *line, GPtrArray *cells)
{
  g_ptr_array_set_size (cells, 0);
  for (char *p = line;;)
    {
      char *comma = strchr (p, ',');
      if (comma != NULL)
        *comma = '\0';
      char *cell = g_strstrip (p);
      gsize len = strlen (cell);
      if (len >= 2 && cell[0] == '"' && cell[len - 1] == '"')
        {
          cell[len - 1] = '\0';
          cell = g_strstrip (cell + 1);
        }
      g_ptr_array_add (cells, cell);
      if (comma == NULL)
        break;
      p = comma + 1;
    }
}

static gboolean
parse_number (const char *cell, double *out)
{
  if (*cell == '\0')
    return FALSE;
  char *end = NULL;
  *out = g_ascii_strtod (cell, &end);
  return end != cell && *end == '\0' && isfinite (*out);
}

static gboolean
row_is_numeric (GPtrArray *cells)
{
  double v;
  for (guint i = 0; i < cells->len; i++)
    if (!parse_number (g_ptr_array_index (cells, i), &v))
      return FALSE;
  return TRUE;
}

tw_dataset *
tw_dataset_load_csv (const char *path, int label_column, GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  g_autofree char *text = NULL;
  g_autoptr (GError) local = NULL;
  /* A regular file (a device or fifo need not end), no larger than half the
   * memory available: its numbers take about as much again as the text. */
  if (!tw_file_read_regular (path, tw_memory_available () / 2, &text, NULL, &local))
    {
      g_set_error_literal (error, TW_DATA_ERROR, TW_DATA_ERROR_IO, local->message);
      return NULL;
    }

  g_autoptr (GPtrArray) cells = g_ptr_array_new ();
  g_autoptr (GArray) features = g_array_new (FALSE, FALSE, sizeof (float));
  g_autoptr (GArray) labels = g_array_new (FALSE, FALSE, sizeof (int64_t));
  int n_columns = 0, first_line = 0, label = -1;
  int64_t max_label = -1;
  gboolean header = FALSE;

  char *line = text;
  for (int line_no = 1; line != NULL; line_no++)
    {
      char *eol = strchr (line, '\n');
      if (eol != NULL)
        *eol = '\0';
      char *cur = line;
      line = eol ? eol + 1 : NULL;
      if (*g_strstrip (cur) == '\0')
        continue;

      split_cells (cur, cells);
      if (n_columns == 0)
        {
          n_columns = (int) cells->len;
          first_line = line_no;
          if (n_columns < 2)
            {
              g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                           "%s: line %d has %d column; a CSV dataset needs at least one "
                           "feature column and a label column", path, line_no, n_columns);
              return NULL;
            }
          label = label_column < 0 ? n_columns + label_column : label_column;
          if (label < 0 || label >= n_columns)
            {
              g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_MISMATCH,
                           "%s: label column %d does not exist: the file has %d columns",
                           path, label_column, n_columns);
              return NULL;
            }
          header = !row_is_numeric (cells);
          if (header)
            continue;
        }
      if ((int) cells->len != n_columns)
        {
          g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                       "%s: line %d has %u columns, expected %d (as on line %d)", path,
                       line_no, cells->len, n_columns, first_line);
          return NULL;
        }
      for (int c = 0; c < n_columns; c++)
        {
          const char *cell = g_ptr_array_index (cells, c);
          double v;
          if (!parse_number (cell, &v))
            {
              g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                           "%s: line %d, column %d: “%s” is not a number", path, line_no,
                           c + 1, cell);
              return NULL;
            }
          if (c != label)
            {
              /* Features are float32 (data.h): 1e39 would become inf, which
               * no command accepts (tw_samples_fit_input's rule). */
              if (fabs (v) > FLT_MAX)
                {
                  g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                               "%s: line %d, column %d: “%s” is beyond the range of float32 "
                               "(±%g)", path, line_no, c + 1, cell, FLT_MAX);
                  return NULL;
                }
              float f = (float) v;
              g_array_append_val (features, f);
              continue;
            }
          /* G_MAXINT: n_classes = max + 1 must fit an int. */
          if (v < 0 || v >= G_MAXINT || v != floor (v))
            {
              g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                           "%s: line %d, column %d: label “%s” is not a class index "
                           "(a whole number >= 0)", path, line_no, c + 1, cell);
              return NULL;
            }
          int64_t y = (int64_t) v;
          g_array_append_val (labels, y);
          max_label = MAX (max_label, y);
        }
    }

  if (n_columns == 0)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT, "%s: the file is empty", path);
      return NULL;
    }
  if (labels->len == 0)
    {
      g_set_error (error, TW_DATA_ERROR, TW_DATA_ERROR_FORMAT,
                   "%s: no data rows after the header on line %d", path, first_line);
      return NULL;
    }

  int64_t n = labels->len;
  g_autoptr (tw_tensor) x = tw_tensor_from_data (TW_F32, 2, (int64_t[]) { n, n_columns - 1 },
                                                 features->data);
  g_autoptr (tw_tensor) y = tw_tensor_from_data (TW_I64, 1, (int64_t[]) { n }, labels->data);
  g_autofree char *name = tw_data_stem (path, ".csv");
  return tw_dataset_new (name, x, y, (int) (max_label + 1));
}
