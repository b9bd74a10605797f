/* test-device-trace.c — a device profile from a real trace of the same
 * model (profiler/device-trace.h): PyTorch's profiler format (aten ops and
 * autograd functions mapped to nodes by op and order, their time that of
 * the kernels their launches started), ours (spans naming their nodes, a
 * fused span split), the batch scaling, and what maps to nothing named. */
#include "profiler/device-trace.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

static char *
write_tmp (const char *text)
{
  char *path = NULL;
  int fd = g_file_open_tmp ("twb-devtrace-XXXXXX.json", &path, NULL);
  g_assert_cmpint (fd, >=, 0);
  g_assert_true (g_file_set_contents (path, text, -1, NULL));
  close (fd);
  return path;
}

/* x -> fc (linear) -> r (relu) -> loss (cross entropy with y). */
static tw_graph *
graph (void)
{
  tw_graph *g = tw_graph_new ();
  tw_graph_add_input (g, "x", TW_F32, 1, (int64_t[]) { 2 }, "data");
  tw_graph_add_input (g, "y", TW_I64, 0, NULL, "label");
  tw_attrs *a = tw_attrs_new ();
  tw_attrs_set_int (a, "out_features", 3);
  tw_graph_add (g, "fc", "linear", a, "x", NULL);
  tw_graph_add (g, "r", "relu", NULL, "fc", NULL);
  tw_graph_add (g, "loss", "cross_entropy", NULL, "r", "y", NULL);
  tw_attrs_free (a);
  return g;
}

static gboolean
has_warning (const tw_device_trace *d, const char *needle)
{
  for (char **w = d->warnings; w && *w; w++)
    if (strstr (*w, needle))
      return TRUE;
  return FALSE;
}

/* Two steps of a PyTorch trace; kernels on a stream, joined to their
 * launches by ac2g flows.  Step 2's kernels take twice step 1's. */
static const char *pytorch_trace =
  "{\"traceEvents\": ["
  "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":1000},"
  "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::linear\",\"pid\":1,\"tid\":1,\"ts\":10,\"dur\":90,"
  "  \"args\":{\"Input Dims\":\"[[32, 2], [3, 2], [3]]\"}},"
  "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::addmm\",\"pid\":1,\"tid\":1,\"ts\":12,\"dur\":80},"
  "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":20,\"dur\":5},"
  "{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":1,\"pid\":1,\"tid\":1,\"ts\":20},"
  "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ampere_sgemm_32x32\",\"pid\":0,\"tid\":\"stream 7\",\"ts\":30,\"dur\":40},"
  "{\"ph\":\"f\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":1,\"pid\":0,\"tid\":\"stream 7\",\"ts\":30,\"bp\":\"e\"},"
  "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::relu\",\"pid\":1,\"tid\":1,\"ts\":110,\"dur\":20},"
  "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":112,\"dur\":3},"
  "{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":2,\"pid\":1,\"tid\":1,\"ts\":112},"
  "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"relu_kernel\",\"pid\":0,\"tid\":\"stream 7\",\"ts\":120,\"dur\":6},"
  "{\"ph\":\"f\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":2,\"pid\":0,\"tid\":\"stream 7\",\"ts\":120,\"bp\":\"e\"},"
  "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::frobnicate\",\"pid\":1,\"tid\":1,\"ts\":140,\"dur\":10},"
  "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"autograd::engine::evaluate_function: ReluBackward0\",\"pid\":1,\"tid\":1,\"ts\":200,\"dur\":20},"
  "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":205,\"dur\":3},"
  "{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":3,\"pid\":1,\"tid\":1,\"ts\":205},"
  "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"relu_bw\",\"pid\":0,\"tid\":\"stream 7\",\"ts\":210,\"dur\":5},"
  "{\"ph\":\"f\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":3,\"pid\":0,\"tid\":\"stream 7\",\"ts\":210,\"bp\":\"e\"},"
  "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"autograd::engine::evaluate_function: AddmmBackward0\",\"pid\":1,\"tid\":1,\"ts\":230,\"dur\":70},"
  "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":240,\"dur\":3},"
  "{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":4,\"pid\":1,\"tid\":1,\"ts\":240},"
  "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"sgemm_bw\",\"pid\":0,\"tid\":\"stream 7\",\"ts\":250,\"dur\":30},"
  "{\"ph\":\"f\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":4,\"pid\":0,\"tid\":\"stream 7\",\"ts\":250,\"bp\":\"e\"},"
  "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#2\",\"pid\":1,\"tid\":1,\"ts\":2000,\"dur\":1000},"
  "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::linear\",\"pid\":1,\"tid\":1,\"ts\":2010,\"dur\":90},"
  "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":2020,\"dur\":5},"
  "{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":5,\"pid\":1,\"tid\":1,\"ts\":2020},"
  "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ampere_sgemm_32x32\",\"pid\":0,\"tid\":\"stream 7\",\"ts\":2030,\"dur\":80},"
  "{\"ph\":\"f\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":5,\"pid\":0,\"tid\":\"stream 7\",\"ts\":2030,\"bp\":\"e\"}"
  "]}";

static void
test_pytorch (void)
{
  g_autofree char *path = write_tmp (pytorch_trace);
  g_assert_true (tw_device_trace_sniff (path));
  g_autoptr (tw_graph) g = graph ();
  g_autoptr (GError) error = NULL;
  tw_device_trace d;
  gboolean ok = tw_device_trace_load (path, g, &d, &error);
  g_assert_no_error (error);
  g_assert_true (ok);
  g_assert_cmpstr (d.kind, ==, "pytorch");
  g_assert_cmpint (d.steps, ==, 2);
  g_assert_cmpint (d.batch, ==, 32);
  /* fc: (40 + 80) µs over 2 steps forward, 30 µs backward (one step's). */
  double *fc = g_hash_table_lookup (d.node_times, "fc");
  double *r = g_hash_table_lookup (d.node_times, "r");
  g_assert_nonnull (fc);
  g_assert_nonnull (r);
  g_assert_cmpfloat (fabs (fc[0] - 60e-6), <, 1e-12);
  g_assert_cmpfloat (fabs (fc[1] - 15e-6), <, 1e-12);
  g_assert_cmpfloat (fabs (r[0] - 3e-6), <, 1e-12);
  g_assert_cmpfloat (fabs (r[1] - 2.5e-6), <, 1e-12);
  g_assert_true (has_warning (&d, "aten::frobnicate (forward) maps to no node"));
  g_assert_true (has_warning (&d, "node loss (cross_entropy) has no time"));
  g_assert_false (has_warning (&d, "node fc"));
  /* At a rank's batch of 64: twice the work. */
  g_autoptr (GHashTable) at = tw_device_trace_times_at (&d, 64);
  g_assert_cmpfloat (fabs (((double *) g_hash_table_lookup (at, "fc"))[0] - 120e-6), <, 1e-12);
  tw_device_trace_clear (&d);
  g_unlink (path);
}

static void
test_ours (void)
{
  g_autofree char *path = write_tmp (
    "{\"displayTimeUnit\":\"ns\",\"metadata\":{\"model\":\"m\",\"steps\":\"2\",\"batch\":\"16\"},"
    "\"traceEvents\":["
    "{\"ph\":\"X\",\"cat\":\"forward\",\"name\":\"linear (fc)\",\"pid\":5,\"tid\":5,\"ts\":0,\"dur\":10,\"args\":{\"nodes\":\"fc\"}},"
    "{\"ph\":\"X\",\"cat\":\"forward\",\"name\":\"relu (r)\",\"pid\":5,\"tid\":5,\"ts\":20,\"dur\":4,\"args\":{\"nodes\":\"r\"}},"
    "{\"ph\":\"X\",\"cat\":\"backward\",\"name\":\"fused\",\"pid\":5,\"tid\":5,\"ts\":30,\"dur\":8,\"args\":{\"nodes\":\"r,fc\"}},"
    "{\"ph\":\"X\",\"cat\":\"forward\",\"name\":\"linear (fc)\",\"pid\":5,\"tid\":5,\"ts\":100,\"dur\":30,\"args\":{\"nodes\":\"fc\"}},"
    "{\"ph\":\"X\",\"cat\":\"forward\",\"name\":\"linear (gone)\",\"pid\":5,\"tid\":5,\"ts\":140,\"dur\":3,\"args\":{\"nodes\":\"gone\"}}"
    "]}");
  g_autoptr (tw_graph) g = graph ();
  g_autoptr (GError) error = NULL;
  tw_device_trace d;
  g_assert_true (tw_device_trace_load (path, g, &d, &error));
  g_assert_cmpstr (d.kind, ==, "twb");
  g_assert_cmpint (d.steps, ==, 2);
  g_assert_cmpint (d.batch, ==, 16);
  double *fc = g_hash_table_lookup (d.node_times, "fc");
  double *r = g_hash_table_lookup (d.node_times, "r");
  g_assert_cmpfloat (fabs (fc[0] - 20e-6), <, 1e-12);   /* (10 + 30) / 2 */
  g_assert_cmpfloat (fabs (fc[1] - 2e-6), <, 1e-12);    /* half of 8, over 2 steps */
  g_assert_cmpfloat (fabs (r[0] - 2e-6), <, 1e-12);
  g_assert_cmpfloat (fabs (r[1] - 2e-6), <, 1e-12);
  g_assert_true (has_warning (&d, "node gone is not in the model"));
  g_assert_true (has_warning (&d, "node loss (cross_entropy) has no time"));
  tw_device_trace_clear (&d);
  g_unlink (path);
}

static void
test_refused (void)
{
  g_autoptr (tw_graph) g = graph ();
  g_autoptr (GError) error = NULL;
  tw_device_trace d;
  /* Nothing of the model's ops. */
  g_autofree char *none = write_tmp (
    "[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::frobnicate\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":5}]");
  g_assert_false (tw_device_trace_load (none, g, &d, &error));
  g_assert_nonnull (strstr (error->message, none));
  g_assert_nonnull (strstr (error->message, "maps to a node"));
  g_clear_error (&error);
  /* Not JSON. */
  g_autofree char *bad = write_tmp ("{\"traceEvents\": [ {\"ph\": ");
  tw_device_trace_load (bad, g, &d, &error);
  tw_device_trace_clear (&d);
  g_clear_error (&error);
  /* A calibration profile is not a trace. */
  g_autofree char *prof = write_tmp ("{\"format\": \"twb-sim-profile\", \"models\": []}");
  g_assert_false (tw_device_trace_sniff (prof));
  g_unlink (none);
  g_unlink (bad);
  g_unlink (prof);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/device-trace/pytorch", test_pytorch);
  g_test_add_func ("/device-trace/ours", test_ours);
  g_test_add_func ("/device-trace/refused", test_refused);
  return g_test_run ();
}
