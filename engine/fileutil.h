/* fileutil.h — reading and saving the user's files safely.
 *
 * Every file the engine, the command line and the editor write (models,
 * checkpoints, .npy outputs, pictures, recovery files) goes through one
 * atomic save: the data goes to a temporary file beside the target, which
 * is synced and renamed over it, so a crash leaves the old file or the new
 * one, never half of one.  The save
 *
 * - writes through a symbolic link: the link stays, its target is replaced
 *   (the temporary goes beside the target);
 * - keeps the mode (0600 stays 0600) and, where allowed, the owner of the
 *   file it replaces; a new file gets 0666 less the umask;
 * - refuses targets that are not regular files (devices such as /dev/full,
 *   directories, fifos, sockets) instead of replacing them;
 * - removes stale temporaries of its own naming left by a killed save of
 *   the same target (see below).
 *
 *   g_autoptr (tw_save) s = tw_save_begin (path, &error);
 *   if (s == NULL || !tw_save_write (s, header, n, &error) || !tw_save_write (s, data, m, &error)
 *       || !tw_save_commit (g_steal_pointer (&s), &error))
 *     return FALSE;                          // the error names the file
 *
 * Temporaries are named NAME.tmp-PID-XXXXXX (NAME: the target's file name,
 * PID: the writing process).  When a save of NAME begins, temporaries
 * NAME.tmp-PID-XXXXXX in the same folder whose process no longer runs, or
 * that were last modified more than an hour ago (a save in progress writes
 * to its file; a reused PID is caught by the age), are removed, as are
 * NAME.tmp-XXXXXX of earlier builds last modified more than a minute ago.
 * Nothing else is ever removed.
 *
 * Errors are G_FILE_ERROR, their messages start with the file's name.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Deepest nesting accepted in any file read, whatever nests in it (JSON
 * arrays and objects: engine/json-text.h; protobuf messages: ONNX files,
 * onnx/onnx-read.c): recursive parsers overflow an 8 MiB stack somewhere
 * past 10,000 levels, and real files stay within 30 (an ONNX model with
 * TW_ONNX_MAX_DEPTH levels of subgraphs nests 3 messages a level). */
#define TW_FILE_MAX_NESTING 64

/* Largest model or other JSON text read (256 MiB): a model file holds a
 * graph, not weights. */
#define TW_FILE_MAX_TEXT ((gsize) 256 << 20)

/* Reads all of path into *contents (NUL-terminated; g_free it), refusing
 * what is not a regular file (a device such as /dev/zero, a fifo, a
 * directory: reading those need not end) and files larger than max bytes,
 * with an error naming the file. */
gboolean tw_file_read_regular (const char *path, gsize max, char **contents, gsize *len,
                               GError **error);

/* A read-only mapping of a regular file (NULL contents when it is empty),
 * refusing other kinds as tw_file_read_regular does.  Unref it. */
GMappedFile *tw_file_map_regular (const char *path, GError **error);

/* ---- What a command reads and writes -----------------------------------
 *
 * Every path a command reads is an input (the model, every data file, label
 * files included, weights, checkpoints, ONNX files, traces); every path it
 * writes is an output (the main one and those derived from it: checkpoints,
 * metrics, dumps, traces, OUT.safetensors beside an import).  Before it
 * writes anything a command lists them all and checks, for each output:
 *
 * - it is a regular file, or a name that can be created: not a directory,
 *   fifo, socket or device (/dev/null, /dev/full), and its folder exists;
 * - it is not an input: compared by device and inode after following
 *   links (a link, a hard link, "./x" all name the same file), and a link
 *   whose target does not exist yet is compared by where it leads;
 * - it is not another output.
 *
 *   g_autoptr (tw_file_roles) io = tw_file_roles_new ();
 *   tw_file_roles_input (io, model_path, "the model");
 *   tw_file_roles_output (io, checkpoint, "--checkpoint");
 *   if (!tw_file_roles_check (io, &error))
 *     return FALSE;      // "--checkpoint ck is the same file as the model m.json: ..."
 *
 * NULL paths are ignored, so optional options go in as they are. */
typedef struct tw_file_roles tw_file_roles;

tw_file_roles *tw_file_roles_new (void);
void tw_file_roles_free (tw_file_roles *io);     /* NULL-safe */
/* path (copied) is read, as role (copied: "--data", "the model"). */
void tw_file_roles_input (tw_file_roles *io, const char *path, const char *role);
/* The same for an input that the output of output_role may replace: the
 * --resume checkpoint by --checkpoint (read whole before a write, which
 * continues it). */
void tw_file_roles_input_replaced_by (tw_file_roles *io, const char *path, const char *role,
                                      const char *output_role);
/* path (copied) is written, as role. */
void tw_file_roles_output (tw_file_roles *io, const char *path, const char *role);
/* FALSE with a G_FILE_ERROR naming the output, its role and, for a clash,
 * the other file and its role. */
gboolean tw_file_roles_check (const tw_file_roles *io, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_file_roles, tw_file_roles_free)

typedef struct tw_save tw_save;

/* Starts saving path: resolves links, refuses a non-regular target, cleans
 * stale temporaries and creates the temporary.  NULL with an error. */
tw_save *tw_save_begin (const char *path, GError **error);
/* The same with the mode of a new file (0600 for private ones; the umask
 * still applies).  A file replaced keeps its own mode. */
tw_save *tw_save_begin_mode (const char *path, int new_mode, GError **error);
gboolean tw_save_write (tw_save *s, const void *data, gsize len, GError **error);
/* For writers that open files by name (cairo, GdkTexture): the temporary's
 * path (lives in s).  Write it by name, then commit. */
const char *tw_save_temp_path (const tw_save *s);
/* Syncs the temporary and renames it over the target; frees s either way. */
gboolean tw_save_commit (tw_save *s, GError **error);
/* Removes the temporary and frees s (NULL-safe): the target is untouched. */
void tw_save_abort (tw_save *s);
/* The whole thing for data in memory. */
gboolean tw_file_save (const char *path, const void *data, gsize len, GError **error);
gboolean tw_file_save_mode (const char *path, const void *data, gsize len, int new_mode,
                            GError **error);

/* Removes the stale temporaries of saves of path (the rule above); returns
 * how many.  tw_save_begin calls it. */
guint tw_save_clean_stale (const char *path);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_save, tw_save_abort)

G_END_DECLS
