/* fileutil.c — regular-file reads, what a command reads and writes, the atomic save. */
#define G_LOG_DOMAIN "twb-file"

#include "engine/fileutil.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Links followed before giving up, as the kernel's MAXSYMLINKS. */
#define MAX_LINK_HOPS 40
/* Ages after which a temporary is stale (see fileutil.h). */
#define STALE_WITH_PID_S (60 * 60)
#define STALE_LEGACY_S 60

static const char *
file_kind (mode_t m)
{
  if (S_ISDIR (m))
    return "a directory";
  if (S_ISCHR (m))
    return "a character device";
  if (S_ISBLK (m))
    return "a block device";
  if (S_ISFIFO (m))
    return "a fifo";
  if (S_ISSOCK (m))
    return "a socket";
  return "not a regular file";
}

static void
set_errno_error (GError **error, int e, const char *display, const char *what)
{
  g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "%s: %s: %s", display, what,
               g_strerror (e));
}

/* ---- Reading ----------------------------------------------------------- */

gboolean
tw_file_read_regular (const char *path, gsize max, char **contents, gsize *len, GError **error)
{
  g_autofree char *display = g_filename_display_name (path);
  /* O_NONBLOCK: opening a fifo for reading would wait for a writer. */
  int fd = g_open (path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0);
  if (fd < 0)
    {
      set_errno_error (error, errno, display, "cannot open");
      return FALSE;
    }
  struct stat st;
  if (fstat (fd, &st) != 0)
    {
      set_errno_error (error, errno, display, "cannot read");
      close (fd);
      return FALSE;
    }
  if (!S_ISREG (st.st_mode))
    {
      g_set_error (error, G_FILE_ERROR, S_ISDIR (st.st_mode) ? G_FILE_ERROR_ISDIR : G_FILE_ERROR_INVAL,
                   "%s is %s, not a regular file", display, file_kind (st.st_mode));
      close (fd);
      return FALSE;
    }
  if ((guint64) st.st_size > max)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
                   "%s: %" G_GUINT64_FORMAT " bytes, more than the %" G_GSIZE_FORMAT
                   " allowed for this kind of file", display, (guint64) st.st_size, max);
      close (fd);
      return FALSE;
    }
  /* The size may change while we read: read to the end, within max. */
  gsize cap = (gsize) st.st_size + 1, n = 0;
  char *buf = g_malloc (cap + 1);
  for (;;)
    {
      if (n == cap)
        {
          if (cap > max)
            {
              g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
                           "%s: more than the %" G_GSIZE_FORMAT " bytes allowed for this kind of "
                           "file", display, max);
              g_free (buf);
              close (fd);
              return FALSE;
            }
          cap = MIN (cap * 2, max + 1);
          buf = g_realloc (buf, cap + 1);
        }
      ssize_t r = read (fd, buf + n, cap - n);
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0)
        {
          set_errno_error (error, errno, display, "cannot read");
          g_free (buf);
          close (fd);
          return FALSE;
        }
      if (r == 0)
        break;
      n += (gsize) r;
    }
  close (fd);
  buf[n] = '\0';
  *contents = buf;
  if (len)
    *len = n;
  return TRUE;
}

GMappedFile *
tw_file_map_regular (const char *path, GError **error)
{
  g_autofree char *display = g_filename_display_name (path);
  int fd = g_open (path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0);
  if (fd < 0)
    {
      set_errno_error (error, errno, display, "cannot open");
      return NULL;
    }
  struct stat st;
  if (fstat (fd, &st) != 0)
    {
      set_errno_error (error, errno, display, "cannot read");
      close (fd);
      return NULL;
    }
  if (!S_ISREG (st.st_mode))
    {
      g_set_error (error, G_FILE_ERROR, S_ISDIR (st.st_mode) ? G_FILE_ERROR_ISDIR : G_FILE_ERROR_INVAL,
                   "%s is %s, not a regular file", display, file_kind (st.st_mode));
      close (fd);
      return NULL;
    }
  g_autoptr (GError) local = NULL;
  GMappedFile *map = g_mapped_file_new_from_fd (fd, FALSE, &local);
  close (fd);
  if (map == NULL)
    g_set_error (error, G_FILE_ERROR, local->code, "%s: cannot read: %s", display,
                 local->message);
  return map;
}

/* ---- What a command reads and writes ------------------------------------ */

static char *resolve_links (const char *path, const char *display, GError **error);

typedef struct
{
  char *path, *role;
  char *replaced_by;            /* inputs: the output role that may replace it */
} file_role;

struct tw_file_roles
{
  GArray *inputs, *outputs;     /* file_role */
};

static void
file_role_clear (gpointer p)
{
  file_role *r = p;
  g_free (r->path);
  g_free (r->role);
  g_free (r->replaced_by);
}

tw_file_roles *
tw_file_roles_new (void)
{
  tw_file_roles *io = g_new0 (tw_file_roles, 1);
  io->inputs = g_array_new (FALSE, TRUE, sizeof (file_role));
  io->outputs = g_array_new (FALSE, TRUE, sizeof (file_role));
  g_array_set_clear_func (io->inputs, file_role_clear);
  g_array_set_clear_func (io->outputs, file_role_clear);
  return io;
}

void
tw_file_roles_free (tw_file_roles *io)
{
  if (io == NULL)
    return;
  g_array_unref (io->inputs);
  g_array_unref (io->outputs);
  g_free (io);
}

static void
add_role (GArray *to, const char *path, const char *role, const char *replaced_by)
{
  if (path == NULL)
    return;
  file_role r = { g_strdup (path), g_strdup (role), g_strdup (replaced_by) };
  g_array_append_val (to, r);
}

void
tw_file_roles_input (tw_file_roles *io, const char *path, const char *role)
{
  add_role (io->inputs, path, role, NULL);
}

void
tw_file_roles_input_replaced_by (tw_file_roles *io, const char *path, const char *role,
                                 const char *output_role)
{
  add_role (io->inputs, path, role, output_role);
}

void
tw_file_roles_output (tw_file_roles *io, const char *path, const char *role)
{
  add_role (io->outputs, path, role, NULL);
}

/* Where a file is, or would be: its device and inode when it exists, else
 * its folder's and its name. */
typedef struct
{
  gboolean exists;
  dev_t dev;
  ino_t ino;
  char *name;                   /* not existing: the last component */
} file_id;

/* The id of an output (links followed, so a dangling link is where its
 * target would be created), or FALSE with the error for what cannot be
 * written there. */
static gboolean
output_id (const file_role *o, file_id *id, GError **error)
{
  g_autofree char *display = g_filename_display_name (o->path);
  g_autoptr (GError) local = NULL;
  g_autofree char *target = resolve_links (o->path, display, &local);
  if (target == NULL)
    {
      g_set_error (error, G_FILE_ERROR, local->code, "%s %s", o->role, local->message);
      return FALSE;
    }
  GStatBuf st;
  if (g_stat (target, &st) == 0)
    {
      if (!S_ISREG (st.st_mode))
        {
          g_set_error (error, G_FILE_ERROR, S_ISDIR (st.st_mode) ? G_FILE_ERROR_ISDIR
                                                                 : G_FILE_ERROR_INVAL,
                       "%s %s is %s, not a regular file: refusing to replace it", o->role,
                       display, file_kind (st.st_mode));
          return FALSE;
        }
      *id = (file_id) { TRUE, st.st_dev, st.st_ino, NULL };
      return TRUE;
    }
  if (errno != ENOENT)
    {
      int e = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "%s %s: %s", o->role,
                   display, g_strerror (e));
      return FALSE;
    }
  g_autofree char *dir = g_path_get_dirname (target);
  g_autofree char *ddir = g_filename_display_name (dir);
  if (g_stat (dir, &st) != 0 || !S_ISDIR (st.st_mode))
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOENT,
                   "%s %s: the folder %s does not exist", o->role, display, ddir);
      return FALSE;
    }
  if (access (dir, W_OK) != 0)
    {
      int e = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e),
                   "%s %s: cannot create a file in %s: %s", o->role, display, ddir, g_strerror (e));
      return FALSE;
    }
  *id = (file_id) { FALSE, st.st_dev, st.st_ino, g_path_get_basename (target) };
  return TRUE;
}

static gboolean
same_id (const file_id *a, const file_id *b)
{
  return a->exists == b->exists && a->dev == b->dev && a->ino == b->ino
         && g_strcmp0 (a->name, b->name) == 0;
}

gboolean
tw_file_roles_check (const tw_file_roles *io, GError **error)
{
  guint n_out = io->outputs->len;
  g_autofree file_id *ids = g_new0 (file_id, MAX (n_out, 1));
  gboolean ok = TRUE;
  for (guint i = 0; i < n_out && ok; i++)
    {
      const file_role *o = &g_array_index (io->outputs, file_role, i);
      if (!(ok = output_id (o, &ids[i], error)))
        break;
      g_autofree char *dout = g_filename_display_name (o->path);
      for (guint k = 0; k < i && ok; k++)
        if (same_id (&ids[k], &ids[i]))
          {
            const file_role *p = &g_array_index (io->outputs, file_role, k);
            g_autofree char *dp = g_filename_display_name (p->path);
            g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
                         "%s %s is the same file as %s %s: each output needs a file of its own",
                         o->role, dout, p->role, dp);
            ok = FALSE;
          }
      /* Inputs exist (or reading them fails first): only an existing
       * output can be one. */
      for (guint k = 0; k < io->inputs->len && ok && ids[i].exists; k++)
        {
          const file_role *in = &g_array_index (io->inputs, file_role, k);
          GStatBuf st;
          if (g_stat (in->path, &st) != 0 || st.st_dev != ids[i].dev || st.st_ino != ids[i].ino
              || g_strcmp0 (in->replaced_by, o->role) == 0)
            continue;
          g_autofree char *din = g_filename_display_name (in->path);
          g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
                       "%s %s is the same file as %s %s: writing it would overwrite the input; "
                       "choose another file", o->role, dout, in->role, din);
          ok = FALSE;
        }
    }
  for (guint i = 0; i < n_out; i++)
    g_free (ids[i].name);
  return ok;
}

/* ---- Saving ------------------------------------------------------------- */

struct tw_save
{
  char *display;      /* the path as the caller named it, for messages */
  char *target;       /* links resolved */
  char *tmp;
  int fd;
  gboolean by_name;   /* tw_save_temp_path was asked: written by another opener */
};

/* path with every symbolic link on its last component followed. */
static char *
resolve_links (const char *path, const char *display, GError **error)
{
  g_autofree char *cur = g_strdup (path);
  for (int hop = 0; hop < MAX_LINK_HOPS; hop++)
    {
      GStatBuf st;
      if (g_lstat (cur, &st) != 0 || !S_ISLNK (st.st_mode))
        return g_steal_pointer (&cur);
      g_autofree char *to = g_file_read_link (cur, NULL);
      if (to == NULL)
        return g_steal_pointer (&cur);
      if (!g_path_is_absolute (to))
        {
          g_autofree char *dir = g_path_get_dirname (cur);
          char *joined = g_build_filename (dir, to, NULL);
          g_free (cur);
          cur = joined;
        }
      else
        {
          g_free (cur);
          cur = g_steal_pointer (&to);
        }
    }
  set_errno_error (error, ELOOP, display, "cannot save");
  return NULL;
}

/* Temporary names after "NAME.tmp-": the writer's pid ("123-AbC123", or
 * "123" from pictures and screenshots of earlier builds), or six random
 * characters (earlier builds).  *pid 0 for the latter. */
static gboolean
parse_temp_suffix (const char *rest, long *pid)
{
  const char *p = rest;
  while (g_ascii_isdigit (*p))
    p++;
  gboolean has_pid = p > rest && p - rest <= 10;   /* pid_t: at most 10 digits */
  if (has_pid && (*p == '\0' || *p == '-'))
    {
      const char *r = *p == '-' ? p + 1 : p;
      gsize n = strlen (r);
      for (gsize i = 0; i < n; i++)
        if (!g_ascii_isalnum (r[i]))
          return FALSE;
      if (*p == '-' && n != 6)
        return FALSE;
      *pid = strtol (rest, NULL, 10);
      return *pid > 0;
    }
  if (strlen (rest) != 6)
    return FALSE;
  for (int i = 0; i < 6; i++)
    if (!g_ascii_isalnum (rest[i]))
      return FALSE;
  *pid = 0;
  return TRUE;
}

static gboolean
process_gone (long pid)
{
  return kill ((pid_t) pid, 0) != 0 && errno == ESRCH;
}

guint
tw_save_clean_stale (const char *path)
{
  g_autofree char *dir = g_path_get_dirname (path);
  g_autofree char *base = g_path_get_basename (path);
  g_autofree char *prefix = g_strconcat (base, ".tmp-", NULL);
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  if (d == NULL)
    return 0;
  gint64 now = g_get_real_time () / G_USEC_PER_SEC;
  guint removed = 0;
  const char *name;
  while ((name = g_dir_read_name (d)))
    {
      long pid;
      if (!g_str_has_prefix (name, prefix) || !parse_temp_suffix (name + strlen (prefix), &pid))
        continue;
      g_autofree char *full = g_build_filename (dir, name, NULL);
      GStatBuf st;
      if (g_lstat (full, &st) != 0 || !S_ISREG (st.st_mode))
        continue;
      gint64 age = now - (gint64) st.st_mtime;
      gboolean stale = pid > 0 ? process_gone (pid) || age > STALE_WITH_PID_S
                               : age > STALE_LEGACY_S;
      if (stale && g_unlink (full) == 0)
        removed++;
    }
  return removed;
}

tw_save *
tw_save_begin (const char *path, GError **error)
{
  return tw_save_begin_mode (path, 0666, error);
}

tw_save *
tw_save_begin_mode (const char *path, int new_mode, GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);
  g_autofree char *display = g_filename_display_name (path);
  g_autofree char *target = resolve_links (path, display, error);
  if (target == NULL)
    return NULL;
  GStatBuf st;
  gboolean exists = g_stat (target, &st) == 0;
  if (exists && !S_ISREG (st.st_mode))
    {
      g_set_error (error, G_FILE_ERROR, S_ISDIR (st.st_mode) ? G_FILE_ERROR_ISDIR : G_FILE_ERROR_INVAL,
                   "%s is %s, not a regular file: refusing to replace it", display,
                   file_kind (st.st_mode));
      return NULL;
    }
  tw_save_clean_stale (target);

  g_autofree char *tmp = g_strdup_printf ("%s.tmp-%ld-XXXXXX", target, (long) getpid ());
  /* new_mode less the umask for a new file; the old file's mode otherwise. */
  int fd = g_mkstemp_full (tmp, O_WRONLY | O_CLOEXEC, new_mode);
  if (fd < 0)
    {
      set_errno_error (error, errno, display, "cannot create a temporary file beside it");
      return NULL;
    }
  if (exists)
    {
      /* Owner first: fchown may clear set-id bits that fchmod then restores.
       * Only root (or the owner, for the group) may: failures are fine. */
      if (st.st_uid != geteuid () || st.st_gid != getegid ())
        {
          int r = fchown (fd, st.st_uid, st.st_gid);
          (void) r;
        }
      if (fchmod (fd, st.st_mode & 07777) != 0)
        {
          int e = errno;
          close (fd);
          g_unlink (tmp);
          set_errno_error (error, e, display, "cannot keep its permissions");
          return NULL;
        }
    }
  tw_save *s = g_new0 (tw_save, 1);
  s->display = g_steal_pointer (&display);
  s->target = g_steal_pointer (&target);
  s->tmp = g_steal_pointer (&tmp);
  s->fd = fd;
  return s;
}

gboolean
tw_save_write (tw_save *s, const void *data, gsize len, GError **error)
{
  const guint8 *p = data;
  while (len > 0)
    {
      ssize_t w = write (s->fd, p, MIN (len, (gsize) G_MAXSSIZE));
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0)
        {
          set_errno_error (error, w < 0 ? errno : EIO, s->display, "cannot write");
          return FALSE;
        }
      p += w;
      len -= (gsize) w;
    }
  return TRUE;
}

const char *
tw_save_temp_path (const tw_save *s)
{
  ((tw_save *) s)->by_name = TRUE;
  return s->tmp;
}

static void
save_free (tw_save *s)
{
  if (s->fd >= 0)
    close (s->fd);
  g_free (s->display);
  g_free (s->target);
  g_free (s->tmp);
  g_free (s);
}

void
tw_save_abort (tw_save *s)
{
  if (s == NULL)
    return;
  g_unlink (s->tmp);
  save_free (s);
}

/* fsync, where the file system has it (EINVAL: it has not). */
static gboolean
sync_fd (int fd)
{
  return fsync (fd) == 0 || errno == EINVAL;
}

gboolean
tw_save_commit (tw_save *s, GError **error)
{
  int fd = s->fd;
  s->fd = -1;
  if (s->by_name)
    {
      close (fd);
      fd = g_open (s->tmp, O_RDONLY | O_CLOEXEC, 0);
    }
  int e = 0;
  if (fd < 0 || !sync_fd (fd))
    e = errno;
  if (fd >= 0 && close (fd) != 0 && e == 0)
    e = errno;
  if (e == 0 && g_rename (s->tmp, s->target) != 0)
    e = errno;
  if (e != 0)
    {
      set_errno_error (error, e, s->display, "cannot save");
      tw_save_abort (s);
      return FALSE;
    }
  /* The rename itself, durable: sync the folder (best effort). */
  g_autofree char *dir = g_path_get_dirname (s->target);
  int dfd = g_open (dir, O_RDONLY | O_CLOEXEC | O_DIRECTORY, 0);
  if (dfd >= 0)
    {
      sync_fd (dfd);
      close (dfd);
    }
  save_free (s);
  return TRUE;
}

gboolean
tw_file_save (const char *path, const void *data, gsize len, GError **error)
{
  return tw_file_save_mode (path, data, len, 0666, error);
}

gboolean
tw_file_save_mode (const char *path, const void *data, gsize len, int new_mode, GError **error)
{
  g_autoptr (tw_save) s = tw_save_begin_mode (path, new_mode, error);
  return s != NULL && tw_save_write (s, data, len, error)
         && tw_save_commit (g_steal_pointer (&s), error);
}
