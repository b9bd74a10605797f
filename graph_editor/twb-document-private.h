/* twb-document-private.h — TwbDocument's instance struct and the pieces its
 * files share: node snapshots, undo primitives and commands, blocks. */
#pragma once

#include "engine/layout.h"
#include "graph_editor/twb-document.h"

G_BEGIN_DECLS

/* Everything a model file says about one node. */
typedef struct
{
  char *id;
  char *op;
  tw_attrs *attrs;
  char **inputs;                /* NULL-terminated */
  char *share;
  gboolean has_pos;
  double x, y;
} TwbNodeSnap;

/* An editor-level group of nodes, drawn as one box when collapsed.  Blocks
 * nest: a block's nodes are all those inside it, its inner blocks' too;
 * two blocks' node sets are disjoint or one holds the other.  Where it is
 * drawn follows from its nodes' places (tw_layout_place_blocks). */
typedef struct
{
  char *name;
  char **nodes;                 /* member ids, NULL-terminated */
  gboolean collapsed;
} TwbBlock;

typedef enum
{
  TWB_PRIM_INSERT,              /* node `after` inserted at index */
  TWB_PRIM_REMOVE,              /* node `before` removed from index */
  TWB_PRIM_REPLACE,             /* node at index: before → after */
  TWB_PRIM_POS,                 /* node at index moved */
  TWB_PRIM_OUTPUTS,
  TWB_PRIM_RECIPE,
  TWB_PRIM_BLOCKS,
  TWB_PRIM_ARRANGED,            /* the view the positions were arranged for */
} TwbPrimKind;

/* One reversible step; a command is a list of them, undone in reverse. */
typedef struct
{
  TwbPrimKind kind;
  int index;
  TwbNodeSnap *before, *after;
  gboolean had_pos[2];          /* TWB_PRIM_ARRANGED: whether it was arranged */
  double pos[2][2];
  tw_layout_view view[2];
  char **strv[2];               /* outputs */
  tw_recipe *recipe[2];
  GPtrArray *blocks[2];         /* of TwbBlock */
} TwbPrim;

typedef struct
{
  char *label;
  GPtrArray *prims;             /* TwbPrim*, in the order applied */
  guint64 serial;               /* identifies the state after it, for the dirty flag */
  char **move_ids;              /* a move that later moves of these nodes may join */
} TwbCommand;

struct _TwbDocument
{
  GObject parent_instance;

  tw_model *model;
  char *path;
  char *recovery_name;          /* file name under the recovery directory (untitled) */
  char *recovery_file;          /* the recovery file last written, or NULL */

  GPtrArray *undo_stack;        /* TwbCommand*, oldest first */
  GPtrArray *redo_stack;        /* TwbCommand*, next redo last */
  TwbCommand *current;          /* the edit being recorded */
  TwbCommand *group;            /* open group, or NULL */
  int group_depth;
  TwbCommand *merge_target;     /* the move later moves may join */
  guint64 next_serial;
  guint64 saved_serial;         /* serial of the top command when saved (0: empty stack) */

  GHashTable *selection;        /* id → id (owned) */
  GPtrArray *blocks;            /* TwbBlock* */
  GHashTable *block_of;         /* node id → its outermost collapsed block; NULL: to compute */

  tw_layout_view view;          /* the canvas layouts are for (twb_document_set_view) */
  gboolean view_known;          /* a canvas told it (else TW_LAYOUT_VIEW_DEFAULT) */
  gboolean opened_laid_out;     /* opened without positions: laid out whole (tw_layout_model) */
  tw_layout_view arranged;      /* the view of the last arrangement, when arranged_valid */
  gboolean arranged_valid;

  GPtrArray *changed_ids;       /* ids to re-infer after the edit (owned) */
  gboolean needs_infer;
  guint pending_flags;
  double last_infer_us;

  /* Pipeline stages shown (twb-document-stages.c): asked for, and the
   * placement of the graph as it was last computed. */
  int pipeline_stages;
  gboolean stages_valid;
  int n_stages;
  int *stage_of;                /* [n_nodes] of the graph it was made for */
  int stage_of_len;
  char *stage_error;
  char *stage_error_node;

  /* Last notified values, to notify only real changes. */
  gboolean n_dirty, n_can_undo, n_can_redo;
};

/* Snapshots. */
TwbNodeSnap *twb_node_snap_new (const tw_node *n);
TwbNodeSnap *twb_node_snap_copy (const TwbNodeSnap *s);
void twb_node_snap_free (TwbNodeSnap *s);

TwbBlock *twb_block_copy (const TwbBlock *b);
void twb_block_free (TwbBlock *b);
GPtrArray *twb_blocks_copy (GPtrArray *blocks);

/* Recording edits (twb-document-undo.c).  An edit calls _edit_begin, then
 * the primitives (each applies itself and is recorded), then _edit_end,
 * which pushes the command, re-infers and notifies. */
void twb_document_edit_begin (TwbDocument *doc, const char *label);
void twb_document_edit_end (TwbDocument *doc);
void twb_document_prim_insert (TwbDocument *doc, int index, const TwbNodeSnap *snap);
void twb_document_prim_remove (TwbDocument *doc, int index);
void twb_document_prim_replace (TwbDocument *doc, int index, const TwbNodeSnap *snap);
void twb_document_prim_pos (TwbDocument *doc, int index, double x, double y);
void twb_document_prim_outputs (TwbDocument *doc, const char *const *refs);
void twb_document_prim_recipe (TwbDocument *doc, const tw_recipe *recipe);
void twb_document_prim_blocks (TwbDocument *doc, GPtrArray *blocks);   /* takes ownership */
/* Arranged for view (NULL: not arranged). */
void twb_document_prim_arranged (TwbDocument *doc, const tw_layout_view *view);
void twb_command_free (TwbCommand *c);
/* Join a move to the previous move of the same nodes; FALSE if it cannot. */
gboolean twb_document_merge_move (TwbDocument *doc, const char *const *ids, double dx, double dy);

/* Re-infer if an edit asked for it, then emit "changed" and notify. */
void twb_document_finish (TwbDocument *doc, guint flags);
void twb_document_mark_changed (TwbDocument *doc, const char *id);

void twb_document_emit_selection_changed (TwbDocument *doc);

/* Stages (twb-document-stages.c): forget the placement; free it. */
void twb_document_stages_invalidate (TwbDocument *doc);

/* Blocks (twb-document-blocks.c). */
void twb_document_blocks_load (TwbDocument *doc);
void twb_document_blocks_store (TwbDocument *doc);
/* After node removals/renames, drop members that no longer exist. */
GPtrArray *twb_document_blocks_without (TwbDocument *doc, GHashTable *removed);
/* doc->blocks was replaced: forget what was derived from it. */
void twb_document_blocks_changed (TwbDocument *doc);

/* Arrange (twb-document-arrange.c).  The blocks (doc->blocks when NULL) as
 * the layout takes them, in the same order; caller frees. */
GPtrArray *twb_document_layout_blocks (TwbDocument *doc, GPtrArray *blocks);
/* New blocks (taken) as one edit: laid out again when the document is
 * arranged, else room made around `opened` (a block just expanded, or
 * NULL). */
void twb_document_set_blocks (TwbDocument *doc, GPtrArray *blocks, const char *label,
                              const char *opened);
/* A model as it opens: a file without positions (or blocks) laid out as
 * an import is (tw_layout_model), with blocks for those; nodes without a
 * position in a file that has some go below the rest. */
void twb_document_place_unpositioned (TwbDocument *doc);
/* Outputs (twb-document-outputs.c): records the marks without those of
 * the nodes in `gone` (id set), if any had one. */
void twb_document_drop_outputs_of (TwbDocument *doc, GHashTable *gone);

/* Fresh id "<op><n>" or "<base>_<n>" not in the graph, not referred to by
 * any node (refs: twb_document_referenced_ids, or NULL to compute it) and
 * not in `taken`. */
GHashTable *twb_document_referenced_ids (TwbDocument *doc);
char *twb_document_fresh_id (TwbDocument *doc, const char *base, gboolean from_op,
                             GHashTable *taken, GHashTable *refs);

G_END_DECLS
