/* twb-document.h — the editable model behind the graph canvas.
 *
 * A TwbDocument owns a tw_model (graph + training recipe) and is the only
 * way the GUI changes it.  Every change is a command that can be undone and
 * redone; after each one the document re-infers shapes and emits "changed".
 * The document is GTK-free (GObject + the engine), so it is tested without a
 * display; the canvas (TwbGraphCanvas), the inspector and the palette are
 * views of it.
 *
 *   g_autoptr (TwbDocument) doc = twb_document_new ();          // empty model
 *   const char *id = twb_document_add_node (doc, "linear", NULL, 200, 100, &error);
 *   twb_document_connect (doc, "x", id, 0, &error);              // x → input 0 of id
 *   twb_document_set_attr_int (doc, id, "out_features", 10, &error);
 *   twb_document_undo (doc);
 *   twb_document_save (doc, "model.json", &error);               // atomic
 *
 * Node ids are stable: an edit never renames a node it did not touch.  Edits
 * that would make the file unloadable (duplicate or malformed ids, unknown
 * attribute names, values of the wrong type, cycles, a second connection to
 * an input port) are refused with a GError saying why, and change nothing.
 *
 * Ownership: getters returning const pointers point into the document and
 * stay valid until the next edit; functions returning char * give a string
 * the caller frees.
 */
#pragma once

#include <glib-object.h>

#include "engine/layout.h"
#include "engine/model.h"

G_BEGIN_DECLS

#define TWB_DOCUMENT_ERROR (twb_document_error_quark ())
GQuark twb_document_error_quark (void);

typedef enum
{
  TWB_DOCUMENT_ERROR_INVALID_EDGE,   /* wrong port, would form a cycle, port taken, type mismatch */
  TWB_DOCUMENT_ERROR_INVALID_ATTR,   /* unknown attribute, wrong type, not an allowed choice */
  TWB_DOCUMENT_ERROR_INVALID_ID,     /* empty, contains ':', duplicate */
  TWB_DOCUMENT_ERROR_NO_SUCH_NODE,
  TWB_DOCUMENT_ERROR_UNKNOWN_OP,
  TWB_DOCUMENT_ERROR_IO,
} TwbDocumentError;

/* What a "changed" signal reports; views redraw what they need. */
typedef enum
{
  TWB_CHANGE_STRUCTURE = 1 << 0,     /* nodes or edges added/removed */
  TWB_CHANGE_ATTRS = 1 << 1,         /* attributes, ids, shares */
  TWB_CHANGE_LAYOUT = 1 << 2,        /* positions, groups collapsed/expanded */
  TWB_CHANGE_RECIPE = 1 << 3,        /* training recipe */
  TWB_CHANGE_SHAPES = 1 << 4,        /* inference results changed */
  TWB_CHANGE_FILE = 1 << 5,          /* loaded, saved, path or dirty flag changed */
} TwbChangeFlags;

#define TWB_TYPE_DOCUMENT (twb_document_get_type ())
/* Also in "changed": the pipeline stages to show changed
 * (twb_document_set_pipeline_stages), the graph did not. */
#define TWB_CHANGE_STAGES (1 << 6)
G_DECLARE_FINAL_TYPE (TwbDocument, twb_document, TWB, DOCUMENT, GObject)

/* Signals:
 *   "changed" (TwbChangeFlags flags)
 *   "selection-changed" ()
 * Properties: "path" (string, NULL until saved/loaded), "dirty" (boolean),
 *   "can-undo", "can-redo" (boolean), "title" (string: file name or "Untitled"). */

TwbDocument *twb_document_new (void);
/* Takes ownership of model. */
TwbDocument *twb_document_new_for_model (tw_model *model);
/* Load a model file; on error returns NULL and nothing else changes. Files
 * without positions get the layout an import gets (engine/layout.h). */
TwbDocument *twb_document_new_from_file (const char *path, GError **error);
/* The same, laid out (where the file has no positions) for view, the
 * canvas it opens in (NULL: TW_LAYOUT_VIEW_DEFAULT), which becomes the
 * document's view. */
TwbDocument *twb_document_new_for_model_in_view (tw_model *model, const tw_layout_view *view);
TwbDocument *twb_document_new_from_file_in_view (const char *path, const tw_layout_view *view,
                                                 GError **error);

tw_model *twb_document_get_model (TwbDocument *doc);      /* borrowed; read-only for views */
tw_graph *twb_document_get_graph (TwbDocument *doc);      /* borrowed; read-only for views */
const char *twb_document_get_path (TwbDocument *doc);
gboolean twb_document_get_dirty (TwbDocument *doc);
char *twb_document_get_title (TwbDocument *doc);

/* Which model this is, whatever its file is called (a string kept in the
 * model file's "editor" member, carried through save, Save As and every
 * edit; the runs of the model are filed under it).  NULL until set: a new
 * or imported model, or a file written before identities.  Setting it is
 * no edit (no undo, not dirty); the next save writes it.  The string lives
 * in the document. */
const char *twb_document_get_model_id (TwbDocument *doc);
void twb_document_set_model_id (TwbDocument *doc, const char *id);

/* Files.  save writes atomically and clears the dirty flag. */
gboolean twb_document_save (TwbDocument *doc, const char *path, GError **error);
/* Serialised model (what save writes), caller frees. */
char *twb_document_to_data (TwbDocument *doc);

/* ---- Edits (each one undoable; on error nothing changes) ---------------- */

/* Adds a node of op at (x, y) with a fresh id derived from the op ("linear3")
 * unless id is given.  Returns the id (owned by the document). */
const char *twb_document_add_node (TwbDocument *doc, const char *op, const char *id, double x,
                                   double y, GError **error);
gboolean twb_document_remove_nodes (TwbDocument *doc, const char *const *ids, GError **error);
/* Connect output `from` ("fc1" or "split:1") to input port `port` of node `to`.
 * Refused: unknown nodes, a port the op does not have (variadic ops grow),
 * an edge that would form a cycle, a self-loop.  Replaces an existing edge
 * into that port (one undo step). */
gboolean twb_document_connect (TwbDocument *doc, const char *from, const char *to, int port,
                               GError **error);
gboolean twb_document_disconnect (TwbDocument *doc, const char *to, int port, GError **error);
/* What the editor's pointer does: connect only into a free input port; a
 * port that already has an edge is refused with the edge it has (delete or
 * drag that edge off first). */
gboolean twb_document_connect_free (TwbDocument *doc, const char *from, const char *to, int port,
                                    GError **error);
/* The output connected to input `port` of `id` ("fc1", "split:1"), NULL when
 * the port is free; borrowed until the next edit. */
const char *twb_document_get_input (TwbDocument *doc, const char *id, int port);
/* Move the edge into input `port` of `to` so that it goes into input
 * `new_port` of `new_to` (a free port): one undo step; on error nothing
 * changes. */
gboolean twb_document_move_edge (TwbDocument *doc, const char *to, int port, const char *new_to,
                                 int new_port, GError **error);
/* Validation without changing anything: FALSE with the reason. */
gboolean twb_document_can_connect (TwbDocument *doc, const char *from, const char *to, int port,
                                   GError **error);
gboolean twb_document_set_attr (TwbDocument *doc, const char *id, const char *name,
                                const tw_attr_value *value, GError **error);
gboolean twb_document_set_attr_int (TwbDocument *doc, const char *id, const char *name,
                                    int64_t v, GError **error);
/* Parse text as the attribute's schema type ("[5, 5]", "0.1", "true", "mean"). */
gboolean twb_document_set_attr_text (TwbDocument *doc, const char *id, const char *name,
                                     const char *text, GError **error);
gboolean twb_document_unset_attr (TwbDocument *doc, const char *id, const char *name,
                                  GError **error);
gboolean twb_document_rename_node (TwbDocument *doc, const char *id, const char *new_id,
                                   GError **error);
gboolean twb_document_set_share (TwbDocument *doc, const char *id, const char *scope,
                                 GError **error);
/* Moves are merged into one undo step while `merge` is TRUE (a drag): pass
 * FALSE for the first motion of a drag (it starts a new undo step) and TRUE
 * for the following ones, which join it as long as they move the same ids
 * and no other edit came between. */
void twb_document_move_nodes (TwbDocument *doc, const char *const *ids, double dx, double dy,
                              gboolean merge);
gboolean twb_document_set_recipe (TwbDocument *doc, const tw_recipe *recipe, GError **error);
void twb_document_set_outputs (TwbDocument *doc, const char *const *refs);

/* The model's outputs (tw_graph_outputs): the nodes marked as outputs, or,
 * when none is, the predictions the losses score. */
typedef enum
{
  TWB_OUTPUT_NONE,
  TWB_OUTPUT_DEFAULT,     /* an output because it feeds a loss and nothing is marked */
  TWB_OUTPUT_MARKED,
} TwbOutputKind;
TwbOutputKind twb_document_output_kind (TwbDocument *doc, const char *id);
/* Marks node `id` (its output 0) as a model output or unmarks it, as one
 * undo step.  Marking keeps the outputs there were (the losses'
 * predictions too); unmarking the last marked node brings back the
 * losses' predictions.  Fails, naming the node, when unmarking would leave
 * no output: the node is the only prediction a loss trains. */
gboolean twb_document_set_output (TwbDocument *doc, const char *id, gboolean output,
                                  GError **error);
gboolean twb_document_toggle_output (TwbDocument *doc, const char *id, GError **error);

/* Several edits as one undo step. */
void twb_document_begin_group (TwbDocument *doc, const char *label);
void twb_document_end_group (TwbDocument *doc);

gboolean twb_document_undo (TwbDocument *doc);
gboolean twb_document_redo (TwbDocument *doc);
gboolean twb_document_can_undo (TwbDocument *doc);
gboolean twb_document_can_redo (TwbDocument *doc);
const char *twb_document_undo_label (TwbDocument *doc);      /* "Add linear", NULL */
const char *twb_document_redo_label (TwbDocument *doc);

/* ---- Selection, clipboard ------------------------------------------------ */

void twb_document_select (TwbDocument *doc, const char *const *ids, gboolean extend);
void twb_document_select_all (TwbDocument *doc);
void twb_document_clear_selection (TwbDocument *doc);
gboolean twb_document_is_selected (TwbDocument *doc, const char *id);
/* NULL-terminated, in graph order; caller frees with g_strfreev. */
char **twb_document_get_selection (TwbDocument *doc);
/* Selected nodes and the edges among them as model-file JSON; caller frees. */
char *twb_document_copy_selection (TwbDocument *doc);
/* Paste clipboard text: nodes get fresh ids where theirs are taken, edges
 * among them are kept, positions offset by (dx, dy); the pasted nodes become
 * the selection.  Refuses text that is not a copied selection. */
gboolean twb_document_paste (TwbDocument *doc, const char *text, double dx, double dy,
                             GError **error);
gboolean twb_document_duplicate_selection (TwbDocument *doc, GError **error);

/* ---- Layout and blocks ---------------------------------------------------- */

/* Arrange (Ctrl+L): the layout of engine/layout.h for the document's view
 * and blocks; a document without blocks that would not read at
 * TW_LAYOUT_READ_ZOOM gets the blocks its node ids name, folded to fit.
 * One undo step. */
void twb_document_auto_layout (TwbDocument *doc);
/* The canvas layouts are made for (what Arrange fits, and the fold aims
 * at); NULL: TW_LAYOUT_VIEW_DEFAULT, also the initial view.  A document
 * opened without positions before any canvas told it its view (a file
 * named on the command line opens before the window has a size) is laid
 * out again for the first real view, unless it has been edited since. */
void twb_document_set_view (TwbDocument *doc, const tw_layout_view *view);
void twb_document_get_view (TwbDocument *doc, tw_layout_view *view);
/* Whether a canvas has set the view (FALSE: the default stands in). */
gboolean twb_document_view_is_known (TwbDocument *doc);
/* Whether the positions are what Arrange (or the import) made, for the
 * blocks as they are: then opening or closing a block arranges again;
 * otherwise an opened block pushes aside only what its frame covers. */
gboolean twb_document_is_arranged (TwbDocument *doc);
/* Node box size used by layout and hit-testing (the canvas draws this size):
 * width 40 + 7 px per character of id and op name, clamped to [140, 240];
 * height 56 + 14 per port row beyond the first. */
void twb_document_node_size (TwbDocument *doc, const char *id, double *width, double *height);
/* Ports the canvas draws: returns the input ports (all of a fixed op's, one
 * free port more than connected for a variadic op), outputs in *n_outputs. */
int twb_document_node_ports (TwbDocument *doc, const char *id, int *n_outputs);
/* Top-left corner (*x, *y) for a w × h box at or near (near_x, near_y) that
 * overlaps no node box, keeping a margin for edges; the nearest such spot
 * right of or below the wanted one is preferred.  Nodes in `ignore`
 * (NULL-terminated, may be NULL) do not count. */
void twb_document_free_position (TwbDocument *doc, double near_x, double near_y, double w,
                                 double h, const char *const *ignore, double *x, double *y);
/* Lay the nodes `ids` out left to right, wrapping into rows, as one block
 * in free space near (near_x, near_y); one undo step (joins an open group). */
void twb_document_place_block (TwbDocument *doc, const char *const *ids, double near_x,
                               double near_y);
/* The spot right of node id where the next layer after it goes. */
void twb_document_after_node (TwbDocument *doc, const char *id, double *x, double *y);
/* Add a node of op where there is room: with one node selected, after it and
 * fed by its output (when the op has an input and the edge is valid);
 * otherwise near (near_x, near_y), top left.  One undo step; the new node
 * becomes the selection.  Returns its id (owned by the document). */
const char *twb_document_insert_node (TwbDocument *doc, const char *op, double near_x,
                                      double near_y, GError **error);

/* Collapse the selection into a named block: an editor-level group drawn as
 * one node; the graph itself is unchanged.  Saved in the model file.
 * Blocks nest: a block whose nodes are all selected goes inside the new
 * one, one holding all the selection stays around it, and selected nodes
 * leave any other (expanded) block; a collapsed block selected in part is
 * refused. */
gboolean twb_document_collapse_selection (TwbDocument *doc, const char *name, GError **error);
/* Expanding keeps the block (expanded: a frame around its members, drawn as
 * usual); collapsing an expanded block makes it one box again; removing it
 * ungroups the nodes.  None changes the graph; all are undoable, and move
 * nodes as twb_document_is_arranged says. */
gboolean twb_document_expand_block (TwbDocument *doc, const char *name, GError **error);
gboolean twb_document_collapse_block (TwbDocument *doc, const char *name, GError **error);
gboolean twb_document_remove_block (TwbDocument *doc, const char *name, GError **error);
gboolean twb_document_move_block (TwbDocument *doc, const char *name, double dx, double dy,
                                  GError **error);
/* Rename a block; refuses an empty name, another block's name and a node's
 * id.  Undoable; the members stay selected. */
gboolean twb_document_rename_block (TwbDocument *doc, const char *name, const char *new_name,
                                    GError **error);
/* The collapsed block whose members are exactly the selection (what a click
 * on the block or Ctrl+G leaves selected), NULL otherwise; owned by doc. */
const char *twb_document_block_of_selection (TwbDocument *doc);
/* The expanded block whose members are exactly the selection (what a
 * click on its frame's band leaves selected), NULL otherwise; owned by
 * doc.  Ctrl+G collapses it again. */
const char *twb_document_open_block_of_selection (TwbDocument *doc);
/* The outermost collapsed block containing the node (the box it is drawn
 * in), NULL when it is in no collapsed block. */
const char *twb_document_block_of (TwbDocument *doc, const char *id);
/* Names of all blocks, NULL-terminated; caller frees with g_strfreev. */
char **twb_document_list_blocks (TwbDocument *doc);
gboolean twb_document_block_is_collapsed (TwbDocument *doc, const char *name);
/* Member node ids of a block; caller frees with g_strfreev. */
char **twb_document_block_members (TwbDocument *doc, const char *name);
/* The top left of the block's box (collapsed) or frame (expanded). */
void twb_document_block_position (TwbDocument *doc, const char *name, double *x, double *y);
/* Every block's box or frame (tw_layout_place_blocks), in list order, as
 * tw_layout_block (members by graph index); caller frees. */
GPtrArray *twb_document_block_boxes (TwbDocument *doc);

/* ---- Live checks --------------------------------------------------------- */

/* Errors of the last inference, one per node (tw_diag), borrowed. */
const GArray *twb_document_get_diagnostics (TwbDocument *doc);
int64_t twb_document_param_count (TwbDocument *doc);
double twb_document_flops (TwbDocument *doc);
/* Time the last inference took, in microseconds (status bar, benchmark). */
double twb_document_last_infer_us (TwbDocument *doc);

/* ---- Recovery ------------------------------------------------------------ */

/* Write the document to its recovery file ($XDG_STATE_HOME/twb/recovery/),
 * atomically; remove it on a clean save or close. */
gboolean twb_document_autosave (TwbDocument *doc, GError **error);
void twb_document_discard_recovery (TwbDocument *doc);
/* Recovery files left by a crash, newest first; caller frees with g_strfreev. */
char **twb_document_list_recovery_files (void);
/* The recovery file this document last wrote (owned by it), or NULL. */
const char *twb_document_get_recovery_file (TwbDocument *doc);
/* Open a recovery file: the document gets the original path (NULL if it was
 * untitled), is dirty, and removes the recovery file once saved or closed. */
TwbDocument *twb_document_new_from_recovery (const char *file, GError **error);

/* Pipeline stages, as the canvas paints them: placed by the engine's own
 * rules (tw_pipeline_assign_stages) for n_stages set here (the Cluster
 * dialog's pipeline or hybrid; 0: none asked), or, when none is asked, for
 * one stage past the highest "stage" attribute of any node.  Nothing is
 * placed when no stage is asked and no node has one, or while the shapes
 * do not check.  Setting emits "changed" with TWB_CHANGE_STAGES alone.
 *
 *   twb_document_set_pipeline_stages (doc, 2);
 *   int s = twb_document_get_node_stage (doc, "fc2");      // 1
 *   const char *e = twb_document_get_stage_error (doc, &id); // NULL: none
 */
void twb_document_set_pipeline_stages (TwbDocument *doc, int n_stages);
int twb_document_get_pipeline_stages (TwbDocument *doc);
/* Stages placed (0: none, or the placement failed). */
int twb_document_get_n_stages (TwbDocument *doc);
/* A node's stage, -1 for input nodes, unknown ids and when none is placed. */
int twb_document_get_node_stage (TwbDocument *doc, const char *id);
/* The same by the node's index in the graph (no lookup: for every node). */
int twb_document_get_node_stage_at (TwbDocument *doc, int graph_index);
/* Why the placement failed (a run would stop with it), NULL when it did
 * not; *node_id (may be NULL) the node it names, NULL for a graph-wide
 * one.  Borrowed, valid until the document changes. */
const char *twb_document_get_stage_error (TwbDocument *doc, const char **node_id);

G_END_DECLS
