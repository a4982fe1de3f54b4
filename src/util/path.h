/* path: lexical cleaning of slash-separated paths (no file system access): ".", empty
 * components and leading/trailing '/' go, ".." removes the previous component. Used wherever a
 * path from outside is placed inside a root (build contexts, image layers). Also the one
 * recursive removal of a scratch directory tree. */
#ifndef SW_PATH_H
#define SW_PATH_H

#include <stdbool.h>
#include <stddef.h>

/* Cleans path into out ("" is the root). A ".." at the root stays at the root when clamp is
 * true (Docker's "/.." is "/"), else it is SW_EINVALID. SW_ELIMIT when out (n bytes) is too
 * small. The error message is left to the caller. */
int sw_path_clean(const char *path, bool clamp, char *out, size_t n);
/* Removes dir and everything below it, depth first, never following symlinks; "" and a missing
 * dir are no-ops. Best effort: returns -1 if something could not be removed, else 0. */
int sw_path_remove_tree(const char *dir);

#endif
