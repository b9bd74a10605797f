/* doc-bench.c — the graph editor's document on a 5,000-node model: full and
 * incremental shape inference, undo, automatic layout.  Prints ms.
 *
 * The model: a long chain of linear → relu → add blocks (the add joins a
 * branch from two blocks back), on an [N, 64] input.  Floor from issue 4:
 * incremental inference after one edit on 5,000 nodes under 5 ms. */
#include "graph_editor/twb-document.h"

#include <stdio.h>

#define N_NODES 5000

static double
ms_since (gint64 t0)
{
  return (double) (g_get_monotonic_time () - t0) / 1000.0;
}

static tw_model *
build (void)
{
  tw_model *m = tw_model_new ("bench");
  tw_graph *g = m->graph;
  tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]) { 64 }, "data");
  char prev[32] = "x", back[32] = "x";
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, "out_features", 64);
  for (int i = 0; tw_graph_n_nodes (g) + 3 <= N_NODES; i++)
    {
      char fc[32], act[32], sum[32];
      g_snprintf (fc, sizeof fc, "fc%d", i);
      g_snprintf (act, sizeof act, "act%d", i);
      g_snprintf (sum, sizeof sum, "sum%d", i);
      tw_graph_add (g, fc, "linear", a, prev, NULL);
      tw_graph_add (g, act, "relu", NULL, fc, NULL);
      tw_graph_add (g, sum, "add", NULL, act, back, NULL);
      g_strlcpy (back, prev, sizeof back);
      g_strlcpy (prev, sum, sizeof prev);
    }
  tw_attrs_free (a);
  return m;
}

/* The layout of engine/layout.h on graphs whose ids name modules, as an
 * imported model's do: a chain of `n` nodes in modules of ten
 * ("s12.n125"), folded and laid out as a file without positions opens. */
static void
modules_rows (void)
{
  const int sizes[] = { 200, 1000, 5000 };
  for (guint k = 0; k < G_N_ELEMENTS (sizes); k++)
    {
      tw_model *m = tw_model_new ("modules");
      tw_graph *g = m->graph;
      tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]) { 64 }, "data");
      char prev[32] = "x";
      for (int i = 1; i < sizes[k]; i++)
        {
          char id[32];
          g_snprintf (id, sizeof id, "s%d.n%d", i / 10, i);
          tw_graph_add (g, id, "relu", NULL, prev, NULL);
          g_strlcpy (prev, id, sizeof prev);
        }
      gint64 t0 = g_get_monotonic_time ();
      g_autoptr (TwbDocument) doc = twb_document_new_for_model (m);
      double open = ms_since (t0);
      t0 = g_get_monotonic_time ();
      twb_document_auto_layout (doc);
      printf ("%5d nodes in modules: opened (fold + layout) %8.3f ms, arrange again %8.3f ms\n",
              sizes[k], open, ms_since (t0));
    }
}

int
main (void)
{
  tw_ops_init ();
  gint64 t0 = g_get_monotonic_time ();
  g_autoptr (TwbDocument) doc = twb_document_new_for_model (build ());
  double load = ms_since (t0);
  tw_graph *g = twb_document_get_graph (doc);
  int n = tw_graph_n_nodes (g);
  printf ("nodes: %d (document with layout on load: %.1f ms)\n", n, load);

  t0 = g_get_monotonic_time ();
  tw_graph_infer (g);
  printf ("full inference:                          %8.3f ms\n", ms_since (t0));
  g_assert (twb_document_get_diagnostics (doc)->len == 0);

  int blocks = (n - 1) / 3;
  g_autofree char *late = g_strdup_printf ("fc%d", blocks - 2);
  const char *early = "fc1";

  /* An edit that changes no output shape (bias off), then one that breaks
   * shapes downstream (out_features), near the end and near the start. */
  struct { const char *what; const char *id; const char *attr; const char *value; } edits[] = {
    { "bias, near the end", late, "bias", "false" },
    { "bias, near the start", early, "bias", "false" },
    { "out_features, near the end", late, "out_features", "32" },
    { "out_features, near the start", early, "out_features", "32" },
  };
  for (guint e = 0; e < G_N_ELEMENTS (edits); e++)
    {
      g_autoptr (GError) error = NULL;
      t0 = g_get_monotonic_time ();
      if (!twb_document_set_attr_text (doc, edits[e].id, edits[e].attr, edits[e].value, &error))
        g_error ("%s", error->message);
      double edit = ms_since (t0);
      double infer = twb_document_last_infer_us (doc) / 1000.0;
      t0 = g_get_monotonic_time ();
      twb_document_undo (doc);
      double undo = ms_since (t0);
      printf ("edit %-30s incremental inference %7.3f ms (whole edit %7.3f ms), undo %7.3f ms "
              "(inference %7.3f ms)\n",
              edits[e].what, infer, edit, undo, twb_document_last_infer_us (doc) / 1000.0);
    }

  t0 = g_get_monotonic_time ();
  twb_document_move_nodes (doc, (const char *[]) { late, NULL }, 500, 500, FALSE);
  twb_document_auto_layout (doc);
  printf ("auto layout (one undo step):             %8.3f ms\n", ms_since (t0));
  t0 = g_get_monotonic_time ();
  twb_document_undo (doc);
  printf ("undo of the layout:                      %8.3f ms\n", ms_since (t0));
  modules_rows ();

  twb_document_select_all (doc);
  g_autofree char *clip = twb_document_copy_selection (doc);
  t0 = g_get_monotonic_time ();
  g_autoptr (GError) error = NULL;
  if (!twb_document_paste (doc, clip, 0, 2000, &error))
    g_error ("%s", error->message);
  printf ("paste of all %d nodes:                 %8.3f ms\n", n, ms_since (t0));
  t0 = g_get_monotonic_time ();
  twb_document_undo (doc);
  printf ("undo of the paste:                       %8.3f ms\n", ms_since (t0));
  return 0;
}
