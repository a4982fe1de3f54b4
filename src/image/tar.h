/* tar: the deterministic tar writer behind image layers. Entries are collected first, then
 * written in path-byte order as POSIX ustar with PAX records where ustar falls short, every
 * mtime set to one epoch, no uname/gname, atime, ctime or device numbers, so the same entries
 * give the same bytes whatever order they were added in and whatever the files' timestamps.
 * Writing streams: files are read in chunks and handed to a callback. Design note:
 * docs/internals/image.md. */
#ifndef SW_IMAGE_TAR_H
#define SW_IMAGE_TAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SW_TAR_MAX_ENTRIES 1000000 /* entries per archive */
#define SW_TAR_MAX_PATH 4096       /* bytes of a path or link target */
#define SW_TAR_MAX_MTIME 077777777777LL

typedef enum sw_tar_type {
    SW_TAR_REG = 1,      /* regular file: content from src_path or data */
    SW_TAR_DIR = 2,      /* directory */
    SW_TAR_SYMLINK = 3,  /* symbolic link to `link` (any string, stored verbatim) */
    SW_TAR_HARDLINK = 4, /* hard link to the regular entry at layer path `link` */
} sw_tar_type;

/* One entry as the caller describes it (a value; sw_tar_add copies everything it points to). */
typedef struct sw_tar_entry {
    const char *path; /* path inside the layer: "a/b", "/a/b" and "./a/b" are the same */
    sw_tar_type type;
    uint32_t mode;        /* permission bits, 07777 at most */
    uint32_t uid, gid;    /* 0/0 unless --chown */
    const char *src_path; /* SW_TAR_REG: file to read at write time, or NULL to use data */
    const void *data;     /* SW_TAR_REG without src_path: in-memory content (copied) */
    size_t data_len;
    const char *link; /* SW_TAR_SYMLINK target, or SW_TAR_HARDLINK target's layer path */
    bool src_range;   /* SW_TAR_REG with src_path: the contents are src_size bytes at */
    uint64_t src_offset, src_size; /* src_offset of the file (one spool file, many entries) */
} sw_tar_entry;

/* Receives the archive bytes in order; returns 0 or a negative SW_E* code, which stops the
 * write and is returned by sw_tar_write unchanged. */
typedef int (*sw_tar_write_fn)(void *payload, const void *data, size_t len);

typedef struct sw_tar sw_tar;

/* Always 0 (allocation failure aborts); int for the project's constructor shape. */
int sw_tar_new(sw_tar **out);
void sw_tar_free(sw_tar *t);

/* Adds a copy of e. Returns SW_EINVALID for an empty path or one with "..", "." or empty
 * components, a mode above 07777, a link entry without link, or a regular entry with
 * data == NULL and data_len > 0 (an entry with neither src_path nor data is an empty file),
 * and SW_ELIMIT past SW_TAR_MAX_ENTRIES. Duplicate paths are reported by sw_tar_write. */
int sw_tar_add(sw_tar *t, const sw_tar_entry *e);
size_t sw_tar_count(const sw_tar *t);

/* Writes the archive: entries sorted by path bytes (so parents precede children), then two
 * zero blocks. mtime is the epoch given to every entry (SOURCE_DATE_EPOCH, 0 when unset), in
 * 0..SW_TAR_MAX_MTIME. A hard link whose target sorts after it is written the other way
 * round (the first of the group in path order carries the data, the rest link to it), so
 * extraction works in one pass. Source files are opened at write time: one that is missing,
 * not a regular file, or changes size while read fails with SW_ENOTFOUND / SW_EINVALID /
 * SW_ECONFLICT (a range: the file ends before it); a duplicate path or a hard link to a
 * non-regular entry is SW_EINVALID.
 * May be called more than once (each call writes the same bytes if the files did not change). */
int sw_tar_write(sw_tar *t, int64_t mtime, sw_tar_write_fn write, void *payload);

/* The normalised layer path of p ("/a//b" is refused; "./a/b/" becomes "a/b") into out, or
 * SW_EINVALID. Exposed for the builder, which must name entries the way the tar will. */
int sw_tar_clean_path(const char *p, char *out, size_t n);

#endif
