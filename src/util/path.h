/* path: lexical cleaning of slash-separated paths (no file system access): ".", empty
 * components and leading/trailing '/' go, ".." removes the previous component. Used wherever a
 * path from outside is placed inside a root (build contexts, image layers). Also the one
 * recursive removal of a scratch directory tree, and the one reader of a whole small file. */
#ifndef SW_PATH_H
#define SW_PATH_H

#include <stdbool.h>
#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>

/* Cleans path into out ("" is the root). A ".." at the root stays at the root when clamp is
 * true (Docker's "/.." is "/"), else it is SW_EINVALID. SW_ELIMIT when out (n bytes) is too
 * small. The error message is left to the caller. */
int sw_path_clean(const char *path, bool clamp, char *out, size_t n);
/* Removes dir and everything below it, depth first, never following symlinks; "" and a missing
 * dir are no-ops. Best effort: returns -1 if something could not be removed, else 0. */
int sw_path_remove_tree(const char *dir);
/* Reads the whole file at path (at most max bytes, symlinks followed unless nofollow) into *out,
 * sw_malloc'd and NUL-terminated, its length in *len (may be NULL). SW_ENOTFOUND (no message)
 * when it does not exist, SW_EINVALID past max, SW_ERROR otherwise (message set). */
int sw_path_read(const char *path, size_t max, bool nofollow, char **out, size_t *len);
/* The reading loop under sw_path_read: up to count bytes (UINT64_MAX: to the end) from fd's
 * current offset into *out (sw_malloc'd, NUL-terminated, length in *len). SW_ELIMIT past max
 * ("<what> is larger than <max> bytes"), SW_ERROR on a read error ("reading <file>: ...").
 * fd stays open. */
int sw_path_read_fd(int fd, const char *file, const char *what, uint64_t count, size_t max,
                    char **out, size_t *len);
/* Writes all len bytes of data to fd (short writes and EINTR resumed). SW_ERROR "writing
 * <what>: <why>" on failure. */
int sw_path_write_fd(int fd, const char *what, const void *data, size_t len);
/* The first executable name on $PATH (/usr/local/bin:/usr/bin:/bin without one) into out (n
 * bytes). False when there is none. */
bool sw_path_find_exec(const char *name, char *out, size_t n);
/* Replaces the file at path with data (len bytes) atomically and durably: written to
 * "<path>.tmp" (a leftover one is removed first) with mode, fsynced, renamed over path, and the
 * directory fsynced. The result always has mode, whatever the old file had, and a symlink at
 * path is replaced, not followed. SW_ERROR (message set) on failure; path is then unchanged. */
int sw_path_write(const char *path, const void *data, size_t len, mode_t mode);

#endif
