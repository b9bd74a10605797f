/* twb-debug.c — the command-line debugger's report of a break
 * (`twb train --break-on ... [--dump-on-break FILE]`). */
#define G_LOG_DOMAIN "twb"

#include "app/twb-cli.h"
#include "engine/safetensors.h"

#include <math.h>
#include <string.h>

static const char *const phase_names[] = { "forward", "backward", "update" };

typedef struct
{
  double min, max, mean;
  int64_t nan, inf, n;
} stats;

static stats
tensor_stats (const tw_tensor *t)
{
  stats s = { INFINITY, -INFINITY, 0, 0, 0, tw_tensor_numel (t) };
  double sum = 0;
  int64_t finite = 0;
  for (int64_t i = 0; i < s.n; i++)
    {
      double v = tw_tensor_get_flat (t, i);
      if (isnan (v))
        s.nan++;
      else if (isinf (v))
        s.inf++;
      else
        {
          s.min = MIN (s.min, v);
          s.max = MAX (s.max, v);
          sum += v;
          finite++;
        }
    }
  s.mean = finite ? sum / finite : NAN;
  if (finite == 0)
    s.min = s.max = NAN;
  return s;
}

static void
print_tensor (const tw_snapshot_tensor *t)
{
  g_autofree char *shape = tw_shape_to_string (t->tensor->ndim, t->tensor->shape);
  stats st = tensor_stats (t->tensor);
  g_printerr ("  %-9s %-22s %s%s  min %-11.5g max %-11.5g mean %-11.5g NaN %" G_GINT64_FORMAT
              " Inf %" G_GINT64_FORMAT "\n",
              t->role, t->name, tw_dtype_name (t->tensor->dtype), shape, st.min, st.max, st.mean,
              st.nan, st.inf);
}

void
twb_print_break (const tw_snapshot *sn)
{
  g_printerr ("break: %s\n", sn->reason ? sn->reason : "paused");
  if (sn->phase < 0)
    g_printerr ("  at iteration %" G_GINT64_FORMAT ", before it starts\n", sn->iteration);
  else
    {
      g_autofree char *nodes = sn->nodes ? g_strjoinv (", ", sn->nodes) : g_strdup ("?");
      g_printerr ("  at iteration %" G_GINT64_FORMAT " › %s › %s (op %s%s)\n", sn->iteration,
                  phase_names[sn->phase], nodes, sn->op ? sn->op : "?",
                  sn->compiled ? ", compiled" : "");
    }
  for (guint i = 0; sn->tensors && i < sn->tensors->len; i++)
    print_tensor (g_ptr_array_index (sn->tensors, i));
  if (sn->trace && sn->trace[0])
    {
      guint n = g_strv_length (sn->trace);
      g_printerr ("  ops of this iteration so far (%u)%s:\n", n, n > 12 ? ", the last 12" : "");
      for (guint i = n > 12 ? n - 12 : 0; i < n; i++)
        g_printerr ("    %s\n", sn->trace[i]);
    }
}

gboolean
twb_dump_break (const tw_snapshot *sn, const char *path, const char *model, GError **error)
{
  g_autoptr (GHashTable) tensors = tw_tensor_table_new ();
  g_autoptr (GHashTable) meta = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  for (guint i = 0; sn->tensors && i < sn->tensors->len; i++)
    {
      const tw_snapshot_tensor *t = g_ptr_array_index (sn->tensors, i);
      /* The same name twice (an op reading one value twice): keep both. */
      g_autofree char *name = g_strdup (t->name);
      for (int k = 2; g_hash_table_contains (tensors, name); k++)
        {
          g_free (name);
          name = g_strdup_printf ("%s#%d", t->name, k);
        }
      g_hash_table_insert (tensors, g_steal_pointer (&name), tw_tensor_ref (t->tensor));
    }
  g_hash_table_insert (meta, g_strdup ("format"), g_strdup ("twb-break"));
  g_hash_table_insert (meta, g_strdup ("model"), g_strdup (model));
  g_hash_table_insert (meta, g_strdup ("reason"), g_strdup (sn->reason ? sn->reason : ""));
  g_hash_table_insert (meta, g_strdup ("iteration"),
                       g_strdup_printf ("%" G_GINT64_FORMAT, sn->iteration));
  g_hash_table_insert (meta, g_strdup ("phase"),
                       g_strdup (sn->phase >= 0 ? phase_names[sn->phase] : "between iterations"));
  g_hash_table_insert (meta, g_strdup ("nodes"),
                       sn->nodes ? g_strjoinv (",", sn->nodes) : g_strdup (""));
  g_hash_table_insert (meta, g_strdup ("op"), g_strdup (sn->op ? sn->op : ""));
  for (guint i = 0; sn->tensors && i < sn->tensors->len; i++)
    {
      const tw_snapshot_tensor *t = g_ptr_array_index (sn->tensors, i);
      g_hash_table_insert (meta, g_strdup_printf ("role.%s", t->name), g_strdup (t->role));
    }
  return tw_safetensors_save (path, tensors, meta, error);
}

static const char help[] =
  "  c, continue        run to the next break\n"
  "  s, step            one op (eager) or one instruction (compiled)\n"
  "  n, next            to the end of the next node's work (a layer)\n"
  "  i, iter            to the end of the iteration\n"
  "  p, print NAME      a parameter (fc1.weight), its gradient (grad:fc1.weight), its\n"
  "                     optimizer state (state:fc1.weight:0) or, eager, a node output (fc1)\n"
  "  b, break WHEN      another breakpoint (nan, inf, loss>X, grad-norm>X, node=ID[:phase], step=N)\n"
  "  d, delete          remove every breakpoint\n"
  "  lr X               learning rate from the next step on\n"
  "  q, quit            stop training (exit status 2)\n";

/* Wait for what a request answered: a tensor, or a note saying why not. */
static void
print_request (tw_session *s)
{
  for (;;)
    {
      g_autoptr (tw_snapshot) sn = tw_session_pop (s, -1);
      if (sn->kind == TW_SNAP_TENSOR)
        {
          for (guint i = 0; sn->tensors && i < sn->tensors->len; i++)
            print_tensor (g_ptr_array_index (sn->tensors, i));
          return;
        }
      if (sn->kind == TW_SNAP_NOTE)
        {
          g_printerr ("  %s\n", sn->message);
          if (g_str_has_prefix (sn->message, "no tensor"))
            return;
        }
    }
}

/* The longest prompt line taken: far more than any command with a node id
 * or parameter name needs; a longer one is refused whole, so memory stays
 * bounded whatever arrives on standard input. */
#define PROMPT_LINE_MAX 65536

/* One line of in, whatever its length, without its newline, in *line; FALSE
 * at the end of input.  *too_long (with the line's length in *len) when it
 * held more than PROMPT_LINE_MAX bytes: the rest was read and dropped. */
static gboolean
read_line (FILE *in, GString *line, gboolean *too_long, guint64 *len)
{
  int c;
  g_string_truncate (line, 0);
  *too_long = FALSE;
  *len = 0;
  while ((c = getc (in)) != EOF && c != '\n')
    {
      ++*len;
      if (*len > PROMPT_LINE_MAX)
        *too_long = TRUE;
      else
        g_string_append_c (line, (char) c);
    }
  return c != EOF || *len > 0;
}

gboolean
twb_debug_prompt (tw_session *s, FILE *in)
{
  g_autoptr (GString) text = g_string_new (NULL);
  static const tw_real_range positive = { 0, INFINITY, TRUE, FALSE };
  for (;;)
    {
      gboolean too_long;
      guint64 len;
      g_printerr ("(twb) ");
      if (!read_line (in, text, &too_long, &len))
        {
          g_printerr ("\n");
          return FALSE;
        }
      if (too_long)
        {
          g_printerr ("  a line of %" G_GUINT64_FORMAT " bytes: commands take at most %d; "
                      "ignored\n", len, PROMPT_LINE_MAX);
          continue;
        }
      char *line = text->str;
      if (strlen (line) != text->len)
        {
          g_printerr ("  a line holding a NUL byte: ignored\n");
          continue;
        }
      g_strstrip (line);
      char *arg = strchr (line, ' ');
      if (arg)
        *arg++ = '\0', arg = g_strstrip (arg);
      const char *cmd = line;
      g_autoptr (GError) error = NULL;
      gboolean ok = TRUE, resume = FALSE;
      if (*cmd == '\0')
        continue;
      if (strcmp (cmd, "c") == 0 || strcmp (cmd, "continue") == 0)
        ok = resume = tw_session_run (s, &error);
      else if (strcmp (cmd, "s") == 0 || strcmp (cmd, "step") == 0)
        ok = resume = tw_session_step_op (s, &error);
      else if (strcmp (cmd, "n") == 0 || strcmp (cmd, "next") == 0)
        ok = resume = tw_session_step_layer (s, &error);
      else if (strcmp (cmd, "i") == 0 || strcmp (cmd, "iter") == 0)
        ok = resume = tw_session_step_iteration (s, &error);
      else if ((strcmp (cmd, "p") == 0 || strcmp (cmd, "print") == 0) && arg && *arg)
        {
          if ((ok = tw_session_request (s, arg, &error)))
            print_request (s);
        }
      else if ((strcmp (cmd, "b") == 0 || strcmp (cmd, "break") == 0) && arg && *arg)
        ok = tw_session_add_breakpoint (s, arg, &error);
      else if (strcmp (cmd, "d") == 0 || strcmp (cmd, "delete") == 0)
        tw_session_clear_breakpoints (s);
      else if (strcmp (cmd, "lr") == 0 && arg && *arg)
        {
          double lr;
          ok = tw_number_parse_real (arg, &positive, "lr", &lr, &error)
               && tw_session_set_lr (s, lr, &error);
        }
      else if (strcmp (cmd, "q") == 0 || strcmp (cmd, "quit") == 0)
        return FALSE;
      else if (strcmp (cmd, "h") == 0 || strcmp (cmd, "help") == 0)
        g_printerr ("%s", help);
      else
        {
          g_autofree char *shown = tw_number_head (cmd);
          g_printerr ("  unknown command '%s' (h lists them)\n", shown);
        }
      if (!ok)
        g_printerr ("  %s\n", error->message);
      if (resume)
        return TRUE;
    }
}
