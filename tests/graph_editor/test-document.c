#include "graph_editor/twb-document.h"
static void test_basic (void) { g_autoptr (TwbDocument) d = twb_document_new (); g_assert_nonnull (d); }
int main (int argc, char **argv) { g_test_init (&argc, &argv, G_TEST_OPTION_ISOLATE_DIRS, NULL); tw_ops_init (); g_test_add_func ("/editor/document/basic", test_basic); return g_test_run (); }
