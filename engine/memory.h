/* memory.h — how much memory a run may take, and estimates made before
 * allocating.
 *
 * Linux overcommits: a malloc of more than the machine has succeeds, and the
 * process is killed later when the pages are touched.  So sizes that come
 * from the user (activations for a batch, parameters of a layer, arenas,
 * datasets) are compared with what is available first, and refused with the
 * figures:
 *
 *   if (!tw_memory_check (nbytes, "node fc1: output f32[64, 2000000000]", &error))
 *     return FALSE;   // "node fc1: ... needs 512 GB; 12.3 GB of memory is available"
 *
 * Available memory is $TWB_MEMORY_LIMIT when set (bytes, or with a suffix
 * k, M, G, T in powers of 1024: "512M"; for tests and to cap a run), else
 * MemAvailable of /proc/meminfo, else the physical memory; never more than
 * the address-space or data rlimit when one is set.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef struct tw_graph tw_graph;   /* engine/graph.h */

#define TW_MEMORY_ERROR (tw_memory_error_quark ())
GQuark tw_memory_error_quark (void);

typedef enum
{
  TW_MEMORY_ERROR_EXHAUSTED,   /* more than is available, or an allocation failed */
  TW_MEMORY_ERROR_OVERFLOW,    /* a size that does not fit in 64 bits */
} tw_memory_error;

/* Bytes this process may still allocate (read afresh on each call). */
guint64 tw_memory_available (void);
/* TRUE when nbytes fit in what is available; otherwise FALSE with an error
 * "WHAT needs N; M of memory is available". */
gboolean tw_memory_check (guint64 nbytes, const char *what, GError **error);

/* ---- Estimates (engine/graph.h's graphs) ---------------------------- */

/* What a graph needs at a batch size, from its inferred shapes (call
 * tw_graph_infer first; symbolic dims take the batch).  Parameters of a
 * shared scope count once. */
typedef struct
{
  guint64 params;            /* parameter and buffer values */
  guint64 trainable;         /* of which trainable (each has a gradient in training) */
  guint64 activations;       /* every node output at the batch: the eager tape */
  guint64 largest;           /* the largest single node output */
  const char *largest_node;  /* its node id (borrowed from the graph), or NULL */
} tw_memory_estimate;

/* FALSE with TW_MEMORY_ERROR_OVERFLOW naming the node when a size overflows. */
gboolean tw_graph_estimate_memory (const tw_graph *g, int64_t batch, tw_memory_estimate *out,
                                   GError **error);
/* Peak of an eager step, estimated: the tape plus, in training, parameter
 * gradients and twice the largest output (its gradient and one more
 * transient); what `twb compile` reports beside the compiled arena. */
guint64 tw_memory_estimate_eager_peak (const tw_memory_estimate *e, gboolean training);
/* Refuses a run at this batch that cannot fit: parameters (with their
 * gradients and up to two optimizer states in training) plus the eager peak.
 * The error names the largest node, its bytes and the total. */
gboolean tw_graph_check_memory (const tw_graph *g, int64_t batch, gboolean training,
                                GError **error);

G_END_DECLS
