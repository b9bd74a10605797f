/* kernels.c — the kernel table (kernels.h). */
#define G_LOG_DOMAIN "twb-kernels"

#include "engine/kernels.h"

#include <string.h>

static GMutex lock;
static GHashTable *table;       /* op name → GPtrArray of const tw_kernel* */
static GHashTable *fused_docs;  /* fused op name → doc */

void
tw_kernel_register (const tw_kernel *k)
{
  g_mutex_lock (&lock);
  if (table == NULL)
    table = g_hash_table_new (g_str_hash, g_str_equal);
  GPtrArray *a = g_hash_table_lookup (table, k->op);
  if (a == NULL)
    {
      a = g_ptr_array_new ();
      g_hash_table_insert (table, (gpointer) k->op, a);
    }
  g_ptr_array_add (a, (gpointer) k);
  g_mutex_unlock (&lock);
}

const GPtrArray *
tw_kernels_for (const char *op)
{
  g_mutex_lock (&lock);
  GPtrArray *a = table ? g_hash_table_lookup (table, op) : NULL;
  g_mutex_unlock (&lock);
  return a;
}

const tw_kernel *
tw_kernel_find (const char *op, const tw_device *dev, const tw_attrs *a, tw_tensor *const *in,
                int n_in)
{
  const GPtrArray *ks = tw_kernels_for (op);
  tw_device_kind kind = dev ? tw_device_get_kind (dev) : TW_DEVICE_CPU;
  for (guint i = 0; ks && i < ks->len; i++)
    {
      const tw_kernel *k = g_ptr_array_index (ks, i);
      if (k->device == kind && (in == NULL || k->supports == NULL || k->supports (a, in, n_in)))
        return k;
    }
  return NULL;
}

void
tw_fused_op_register (const char *name, const char *doc)
{
  g_mutex_lock (&lock);
  if (fused_docs == NULL)
    fused_docs = g_hash_table_new (g_str_hash, g_str_equal);
  g_hash_table_insert (fused_docs, (gpointer) name, (gpointer) doc);
  g_mutex_unlock (&lock);
}

const char *
tw_fused_op_doc (const char *name)
{
  g_mutex_lock (&lock);
  const char *d = fused_docs ? g_hash_table_lookup (fused_docs, name) : NULL;
  g_mutex_unlock (&lock);
  return d;
}

static int
cmp_str (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

const char **
tw_fused_op_names (void)
{
  g_mutex_lock (&lock);
  guint n = 0;
  const char **names = fused_docs ? (const char **) g_hash_table_get_keys_as_array (fused_docs, &n)
                                  : g_new0 (const char *, 1);
  g_mutex_unlock (&lock);
  qsort (names, n, sizeof (char *), cmp_str);
  return names;
}
