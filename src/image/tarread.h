/* tarread: reading tar archives given to a build (Dockerfile ADD of a local archive, binary
 * uploads) into the entries of a layer, through libarchive (tar, pax, GNU tar; uncompressed,
 * gzip, bzip2, xz or zstd). Nothing from the archive names a host path: contents are spooled
 * to numbered files in a directory the caller owns (or kept in memory), and every entry path
 * is cleaned and placed under a prefix; ".." components are refused. Design note:
 * docs/internals/image.md. */
#ifndef SW_IMAGE_TARREAD_H
#define SW_IMAGE_TARREAD_H

#include "image/tar.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SW_TARREAD_MAX_BYTES (16ULL << 30) /* default cap on the uncompressed contents */

/* Receives one entry instead of the tar (sw_tarread_opts.on_entry). e and the strings it points to
 * are valid during the call only; a spooled entry's src_path names its spool file, which the
 * callback may keep. A negative SW_E* return stops reading and is returned as is. */
typedef int (*sw_tarread_entry_fn)(void *payload, const sw_tar_entry *e);

typedef struct sw_tarread_opts {
    unsigned int version;  /* SW_TARREAD_OPTS_VERSION */
    const char *prefix;    /* layer directory entries go under; NULL or "" for the root */
    const char *spool_dir; /* existing directory for contents; NULL keeps them in memory */
    uint64_t max_bytes;    /* cap on the contents; 0: SW_TARREAD_MAX_BYTES */
    size_t max_entries;    /* 0: SW_TAR_MAX_ENTRIES */
    bool chown;            /* true: every entry gets uid/gid below (ADD --chown) */
    uint32_t uid, gid;
    const char *spool_file;       /* instead of spool_dir: contents appended to this one file
                                   * (created if missing), entries name their range in it */
    sw_tarread_entry_fn on_entry; /* optional: entries go here, not to t (which may be NULL) */
    void *payload;                /* for on_entry */
    bool in_place; /* with spool_file and sw_tarread_add_file on an uncompressed archive:
                    * regular contents are not copied, entries name their range in the archive
                    * file itself (which the caller keeps); anything else is spooled */
} sw_tarread_opts;

#define SW_TARREAD_OPTS_VERSION 1
#define SW_TARREAD_OPTS_INIT                                                                       \
    {                                                                                              \
        .version = SW_TARREAD_OPTS_VERSION                                                         \
    }

typedef struct sw_tarread_stats {
    size_t entries; /* added to the tar */
    size_t skipped; /* device nodes, FIFOs and sockets, which layers built here do not carry */
    size_t headers; /* every header read (the archive's root and skipped ones too), which
                     * max_entries caps; 0 for a stream that ends at once (zero blocks) */
    uint64_t bytes; /* contents read */
} sw_tarread_stats;

/* Adds the entries of the archive at path (or data[0..len)) to t. Returns SW_EUNSUPPORTED
 * when the input is not a tar archive at all (Docker's ADD then copies the file as it is),
 * SW_EINVALID for a malformed archive, a ".." path, a hard link leaving the archive, an id
 * above 2^32-1 or a path the archive holds twice, SW_ELIMIT past max_bytes or max_entries,
 * SW_ERROR for I/O. On failure t may hold some of the entries: discard it. Spool files are
 * named spool-<n> in spool_dir; the caller removes them after writing the tar. stats may be
 * NULL. */
int sw_tarread_add_file(sw_tar *t, const char *path, const sw_tarread_opts *opts,
                        sw_tarread_stats *stats);
int sw_tarread_add_mem(sw_tar *t, const void *data, size_t len, const sw_tarread_opts *opts,
                       sw_tarread_stats *stats);

#endif
