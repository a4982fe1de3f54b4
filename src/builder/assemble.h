/* assemble: a parsed Dockerfile and a build context become an image plan. Configuration
 * instructions (ENV, LABEL, USER, EXPOSE, VOLUME, ENTRYPOINT, CMD, STOPSIGNAL, WORKDIR) are
 * applied to the sw_oci_image at once; every COPY/ADD becomes one layer (a deterministic sw_tar
 * of entries resolved from the context, as Docker makes one layer per instruction), and the
 * directories WORKDIR creates go into the next COPY/ADD layer (or a layer of their own when none
 * follows). The caller builds the layers in order and appends each step's history. Pure: no
 * network; files are only opened when a tar is written (ADD reads local archives here).
 * Design: docs/builds.md ("The builder"). */
#ifndef SW_BUILDER_ASSEMBLE_H
#define SW_BUILDER_ASSEMBLE_H

#include "builder/dockerfile.h"
#include "builder/source.h"
#include "image/oci.h"
#include "image/tar.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct sw_assemble_opts {
    unsigned int version;      /* SW_ASSEMBLE_OPTS_VERSION */
    bool scratch;              /* FROM scratch: the builder knows every directory there is */
    const char *base_workdir;  /* the base config's WorkingDir, or NULL ("/") */
    const char *spool_dir;     /* where ADD unpacks local archives (must exist) */
    const char *const *env;    /* NULL or "K=V" list appended as one ENV (dockerStrategy.env) */
    const char *const *labels; /* NULL or "K=V" list appended as one LABEL (imageLabels) */
    /* What the archives ADD unpacks may hold, all of them together (0: the context's
     * defaults, SW_TAR_MAX_ENTRIES, SW_TARREAD_MAX_BYTES, SW_SOURCE_MAX_PATH_BYTES): a small
     * archive must not expand into more than a context of its own could be. */
    size_t max_unpack_entries;
    uint64_t max_unpack_bytes;
    uint64_t max_unpack_path_bytes;
} sw_assemble_opts;

#define SW_ASSEMBLE_OPTS_VERSION 1
#define SW_ASSEMBLE_OPTS_INIT                                                                      \
    {                                                                                              \
        .version = SW_ASSEMBLE_OPTS_VERSION                                                        \
    }

/* One history step, in Dockerfile order (FROM is not one: the base's history comes with it). */
typedef struct sw_assemble_step {
    char *created_by; /* history text: "COPY --chown=1:1 . /app/", "ENV A=b" */
    int line;         /* Dockerfile line, 0 for the appended ENV/LABEL */
    sw_tar *tar;      /* the layer, or NULL for a configuration-only step (empty_layer) */
    size_t entries;   /* entries in tar */
} sw_assemble_step;

typedef struct sw_assembly sw_assembly;

/* Plans df (instruction 0 is FROM) on ctx into img. Errors name the Dockerfile line:
 * "Dockerfile:7: COPY ../x: \"../x\" leaves the build context". SW_EINVALID for bad sources
 * (outside the context, several sources to a non-directory destination, a file over a
 * directory, --chown with names), SW_ENOTFOUND for missing sources, else the failing step's. */
int sw_assemble(sw_assembly **out, const sw_dockerfile *df, const sw_source *ctx, sw_oci_image *img,
                const sw_assemble_opts *opts);
size_t sw_assembly_count(const sw_assembly *a);
/* Borrowed; NULL past the end. */
const sw_assemble_step *sw_assembly_step(const sw_assembly *a, size_t i);
/* Number of steps that carry a layer. */
size_t sw_assembly_layers(const sw_assembly *a);
void sw_assembly_free(sw_assembly *a);

/* "UID[:GID]" of --chown into ids; a missing GID is the UID, "root" is 0. Names need the base
 * image's /etc/passwd, which slipway does not read: SW_EINVALID saying to use numbers. */
int sw_assemble_parse_chown(const char *s, uint32_t *uid, uint32_t *gid);

#endif
