/* report-data.h — what a compiled program's report shows, as data for a
 * view: each pass with a one-line account of what it did, the fused groups
 * (forward kernels covering two or more graph nodes, the ones a canvas can
 * tint), and the memory plan as one rectangle per arena buffer (first to
 * last instruction that uses it × its bytes at its arena offset), with the
 * arena size beside the estimated eager peak (the figure `twb compile`
 * prints).
 *
 *   g_autoptr (tw_program) p = tw_program_build (graph, 64, TW_PROGRAM_STEP, &error);
 *   tw_program_optimize (p, TW_PASS_ALL, &error);
 *   g_autoptr (tw_compile_report) r = tw_compile_report_new (p);
 *   for (guint i = 0; i < r->buffers->len; i++)
 *     {
 *       const tw_compile_buffer *b = &g_array_index (r->buffers, tw_compile_buffer, i);
 *       draw (b->first, b->last + 1, b->offset, b->offset + b->bytes);
 *     }
 *
 * The report is a copy: it does not refer to the program, which may be freed.
 * Lifetimes follow memplan.c's rule (from the first writer to the last reader
 * of any slot sharing the buffer; kept slots to the end of the program), so
 * two buffers whose rectangles intersect in (instruction × offset) would be a
 * planner bug.
 */
#pragma once

#include "engine/compile/program.h"

G_BEGIN_DECLS

/* One line of the pass list. */
typedef struct
{
  char *pass;        /* "fusion", "memory plan", ... ("build" first) */
  int before, after; /* instructions (build: graph nodes → instructions) */
  char *summary;     /* what it did: "linear+relu (fc1, relu1), ..." or "nothing to do";
                        * fusion counts its backward kernels ("... ×2") */
  char *detail;      /* the longer account (fusion: every backward kernel with its
                        * nodes), or NULL */
} tw_compile_pass;

/* A forward fused kernel covering two or more graph nodes. */
typedef struct
{
  char *kernel; /* its label without "fused ": "linear+relu" */
  GStrv nodes;  /* graph node ids covered, in the kernel's order */
  int instr;    /* its position in the schedule */
} tw_compile_group;

/* One arena buffer (a slot and the slots sharing its memory). */
typedef struct
{
  int slot;        /* the root slot's id */
  char *name;      /* "fc1" (an activation), "fc2.bias gradient" (read by an update),
                    * "relu_grad · fc1" (a temporary: its producer's label and nodes) */
  gsize bytes;     /* its slot's size (the planner rounds up to 64 bytes) */
  gint64 offset;   /* in the arena */
  int first, last; /* instructions using it, inclusive */
} tw_compile_buffer;

typedef struct
{
  tw_program_kind kind;
  gint64 batch;
  int n_graph_nodes;
  int n_instrs;
  tw_phase *phases;       /* [n_instrs]: each instruction's phase */
  GArray *passes;         /* tw_compile_pass, in the order they ran */
  GArray *groups;         /* tw_compile_group, in schedule order */
  GHashTable *node_group; /* node id → GINT_TO_POINTER (group index + 1) */
  GArray *buffers;        /* tw_compile_buffer, in slot order; unused buffers left out */
  gsize arena_bytes;
  gsize unplanned_bytes;  /* every ACT slot without reuse */
  gsize eager_peak_bytes; /* tw_memory_estimate_eager_peak of the program's graph; 0 if unknown */
} tw_compile_report;

/* The report of an optimised program.  Caller frees with tw_compile_report_free. */
tw_compile_report *tw_compile_report_new (const tw_program *p);
void tw_compile_report_free (tw_compile_report *r);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_compile_report, tw_compile_report_free)

G_END_DECLS
