/* source: a build's context as an in-memory tree whose file contents live in spool files the
 * builder owns. Nothing from the source is ever checked out on the host: an uploaded archive is
 * read with src/image/tarread, a git commit is read blob by blob with libgit2, so no path or
 * symlink of the source is ever followed by the kernel. COPY/ADD sources are resolved here,
 * following symlinks only while they stay inside the context (spec.source.contextDir narrows
 * it); anything that leaves it is refused. Design: docs/builds.md ("The builder"). */
#ifndef SW_BUILDER_SOURCE_H
#define SW_BUILDER_SOURCE_H

#include "image/tar.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SW_SOURCE_MAX_LINKS 40                   /* symlinks followed while resolving one path */
#define SW_SOURCE_MAX_DEPTH 256                  /* path components of one entry */
#define SW_SOURCE_MAX_PATH_BYTES (256ULL << 20)  /* the paths of all entries together */
#define SW_SOURCE_MAX_PATTERN_SEGMENTS 256       /* path segments of one .dockerignore line */
#define SW_SOURCE_MAX_IGNORE_RULES 10000         /* lines of a .dockerignore */
#define SW_SOURCE_MAX_IGNORE_WORK (512ULL << 20) /* pattern-segment tests of one .dockerignore */
#define SW_SOURCE_MAX_GIT_BLOB (256ULL << 20)    /* one file of a git source (read into memory) */

typedef enum sw_src_type {
    SW_SRC_DIR = 1,
    SW_SRC_FILE = 2,
    SW_SRC_SYMLINK = 3,
} sw_src_type;

typedef struct sw_source sw_source;     /* opaque: the tree, its index and the root in use */
typedef struct sw_src_node sw_src_node; /* opaque: one entry; lives as long as its source */

/* An empty context (the root directory only). Contents of archives, git blobs and in-memory
 * entries are appended to a few spool files (never one per entry) in spool_dir, an existing
 * directory the caller owns and removes. */
int sw_source_new(sw_source **out, const char *spool_dir);
void sw_source_free(sw_source *s);

/* What a source may hold; a field left 0 keeps its default. Entries count every node of the
 * tree, directories created for a child included. */
typedef struct sw_source_limits {
    size_t max_entries;       /* default SW_TAR_MAX_ENTRIES */
    uint64_t max_bytes;       /* contents of an archive or a git tree; SW_TARREAD_MAX_BYTES */
    uint64_t max_path_bytes;  /* the paths of all entries; SW_SOURCE_MAX_PATH_BYTES */
    uint64_t max_ignore_work; /* .dockerignore tests; SW_SOURCE_MAX_IGNORE_WORK */
} sw_source_limits;

/* Replaces the limits (sw_source_new sets the defaults); call before adding anything. */
void sw_source_set_limits(sw_source *s, const sw_source_limits *l);

/* Adds one entry as tarread describes it (path cleaned; regular files by src_path, kept as is,
 * or by data, spooled). Missing parents are created as 0755 directories; a later directory entry
 * sets their mode. Hard links become regular files sharing their target's contents. A range of
 * src_path (src_range) is kept as a range. SW_EINVALID
 * for a path given twice, an entry under a non-directory, a path of more than
 * SW_SOURCE_MAX_DEPTH components, or a hard link to a missing or non-regular entry; SW_ELIMIT
 * past the limits (sw_source_limits). */
int sw_source_add(sw_source *s, const sw_tar_entry *e);
/* An uploaded archive (tar, pax, GNU; plain or gzip/bzip2/xz/zstd). SW_EUNSUPPORTED when path is
 * not a tar archive at all, SW_EINVALID for a malformed one (the message says why). *entries
 * (may be NULL) receives the number of entries read. */
int sw_source_add_archive(sw_source *s, const char *path, size_t *entries);
/* One uploaded file (spec.source.binary.asFile): name is a plain file name, mode 0644. The
 * contents stay in path, which must outlive s. */
int sw_source_add_file(sw_source *s, const char *name, const char *path);

/* What sw_source_add_git checked out. */
typedef struct sw_source_git_info {
    char commit[41];   /* the commit's hex id */
    char subject[256]; /* first line of its message (UTF-8 cut at a character boundary) */
    size_t entries;    /* entries added */
    size_t submodules; /* gitlinks skipped (submodules are not fetched) */
} sw_source_git_info;

/* Clones uri (a URL, file:// URI or local path) into clone_dir (bare; must not exist) with
 * libgit2 and adds the tree of ref: a branch, a tag, a commit id, or the remote's HEAD when ref
 * is NULL or "". Blobs are spooled; modes are 0644 / 0755 as a checkout gives them; symlinks
 * keep their target; a blob several entries share is spooled once. stop (may be NULL) is
 * polled during the transfer; true cancels it. SW_EUNAVAILABLE when the clone fails or is
 * stopped, SW_ENOTFOUND for an unknown ref, SW_ELIMIT past max_entries entries or max_bytes of
 * contents (every entry counted, shared or not). */
int sw_source_add_git(sw_source *s, const char *uri, const char *ref, const char *clone_dir,
                      bool (*stop)(void), sw_source_git_info *info);

/* Narrows the context to dir (spec.source.contextDir), resolved inside the current context.
 * SW_ENOTFOUND when missing, SW_EINVALID when it is not a directory or leaves the context. */
int sw_source_chdir(sw_source *s, const char *dir);

/* Applies .dockerignore text to the context (call after sw_source_chdir): Docker's rules, a
 * pattern per line ('#' comments, blank lines skipped, a leading '/' ignored), * ? [..] within a
 * path segment, ** across segments, a pattern also excluding everything below what it matches,
 * "!pattern" letting paths back in, the last matching line deciding. Ignored entries are
 * invisible to resolution, wildcards and copies (a directory stays when something below it is
 * let back in). *ignored (may be NULL) receives the number of entries ignored. SW_EINVALID
 * (naming the line) for a pattern of more than SW_SOURCE_MAX_PATTERN_SEGMENTS segments;
 * SW_ELIMIT past SW_SOURCE_MAX_IGNORE_RULES patterns or SW_SOURCE_MAX_IGNORE_WORK tests. */
int sw_source_ignore(sw_source *s, const char *text, size_t len, size_t *ignored);

/* Resolves path relative to the context root (a leading '/' also means the root, as in Docker;
 * the path is cleaned lexically first, so "a/../b" is "b" and "../x" leaves the context).
 * Symlinks on the way are followed inside the context only; follow_last also follows the last
 * component. SW_ENOTFOUND when missing; SW_EINVALID when the path or a symlink leaves the
 * context (an absolute target, or ".." above the root) or SW_SOURCE_MAX_LINKS is exceeded. */
int sw_source_resolve(const sw_source *s, const char *path, bool follow_last,
                      const sw_src_node **out);
/* Expands path whose last component may hold the wildcards * ? [...] (fnmatch, dot files
 * included, as Docker). Matches are followed as by sw_source_resolve and returned in name
 * order with the matched names: *nodes and *names are sw_malloc'd arrays of *n items (names
 * borrowed from the nodes). No wildcard: exactly the resolved path, named by its last
 * component. Wildcards in other components are SW_EINVALID; no match is SW_ENOTFOUND. */
int sw_source_glob(const sw_source *s, const char *path, const sw_src_node ***nodes,
                   const char ***names, size_t *n);
/* Reads a regular file's contents (at most max bytes, else SW_ELIMIT) into a NUL-terminated
 * sw_malloc'd buffer. */
int sw_source_read(const sw_src_node *n, size_t max, char **out, size_t *len);
/* True when s holds a wildcard character (* ? [). */
bool sw_source_has_wildcard(const char *s);

/* Writes the context (the current root, ignored entries left out) into dir, which must not
 * exist, for a backend that reads a directory (buildah): directories, regular files with their
 * modes, symlinks with their targets verbatim (never followed: every entry is created relative to
 * its parent's descriptor, O_NOFOLLOW/O_EXCL), every mtime set to epoch (seconds). Directories
 * are filled by up to 4 threads at once (creating files is the cost); directory modes and times
 * are set in a last pass. stop (may be NULL) is polled between entries; true gives
 * SW_EUNAVAILABLE. SW_ERROR for a failed system call,
 * with the path in the message. The caller removes dir. */
int sw_source_write_dir(const sw_source *s, const char *dir, int64_t epoch, bool (*stop)(void));

/* The current root (the context directory). */
const sw_src_node *sw_source_root(const sw_source *s);
size_t sw_source_count(const sw_source *s); /* entries in the whole tree, root excluded */

const char *sw_src_node_name(const sw_src_node *n); /* "" for the tree's root */
sw_src_type sw_src_node_type(const sw_src_node *n);
uint32_t sw_src_node_mode(const sw_src_node *n);    /* permission bits */
const char *sw_src_node_file(const sw_src_node *n); /* SW_SRC_FILE: the file holding it */
/* True when the contents are only *size bytes at *off of that file (spool files hold many). */
bool sw_src_node_range(const sw_src_node *n, uint64_t *off, uint64_t *size);
const char *sw_src_node_link(const sw_src_node *n); /* SW_SRC_SYMLINK: the target, verbatim */
size_t sw_src_node_count(const sw_src_node *n);     /* SW_SRC_DIR: children */
const sw_src_node *sw_src_node_child(const sw_src_node *n, size_t i); /* insertion order */
bool sw_src_node_ignored(const sw_src_node *n); /* excluded by .dockerignore: skip it */

#endif
