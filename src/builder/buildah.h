/* buildah: the build backend for the whole Dockerfile grammar (RUN, multi-stage, --target), by
 * Debian's buildah driven as a subprocess (backend.h). Everything it touches lives in the job's
 * scratch directory: the context written out (sw_source_write_dir), the Dockerfile, buildah's
 * storage (--root/--runroot, vfs by default), its temporary files (TMPDIR). Bases are pulled
 * first (with the pull credentials and --tls-verify=false for insecure registries), then `buildah
 * bud --isolation chroot --pull=never` runs in a network namespace of its own (no network at
 * all) unless the Build asks for the host's, and the image is exported to an OCI layout there
 * and pushed by slipway's push path, not by `buildah push`. Every process buildah starts stays
 * in the builder's process group (what the build controller signals); on a stop the builder
 * also sends SIGTERM, then SIGKILL, to buildah itself. buildah's output is the build log.
 * RUN executes the Dockerfile's commands as root in a chroot: docs/builds.md ("Backends"). */
#ifndef SW_BUILDER_BUILDAH_H
#define SW_BUILDER_BUILDAH_H

#include "builder/backend.h"
#include "builder/dockerfile.h"

extern const sw_backend sw_backend_buildah;

/* The Dockerfile with every FROM written again from its stage: "FROM [flags ]<image>[ AS name]"
 * followed by as many newlines as the original instruction spanned (so later line numbers
 * stay), where image is the stage's (the caller normalises it, or sets dockerStrategy.from for
 * the last one). A new sw_malloc'd text in *out. Pure; exposed for tests. */
int sw_buildah_rewrite_froms(const char *text, size_t len, const sw_df_stage *stages, size_t n,
                             char **out, size_t *out_len);

#endif
