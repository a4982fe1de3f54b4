/* builder: `slipway builder`, the process that runs one Build. It reads its Build with a
 * build-scoped token, fetches the source (inline Dockerfile, uploaded binary, git), picks a
 * backend (backend.h: native unless the Dockerfile needs buildah, or the Build's annotation
 * build.slipway.dev/backend says), and with the native one fetches the
 * base image's manifest and config (never its layers), assembles layers from the Dockerfile,
 * streams each one compressed to the output registry (or reuses the previous image's layer when
 * its uncompressed digest is unchanged), makes the base layers available there (present, mounted
 * or copied), pushes the config and the manifest, and reports stages, the failure reason or the
 * digest through builds/<n>/details. Progress lines on the log are the build log. Design:
 * docs/builds.md ("The builder"); the protocol: docs/internals/builds.md. */
#ifndef SW_BUILDER_BUILDER_H
#define SW_BUILDER_BUILDER_H

#include <stdbool.h>
#include <stdio.h>

typedef struct sw_builder_opts {
    unsigned int version;                   /* SW_BUILDER_OPTS_VERSION */
    const char *server;                     /* API server URL */
    const char *ca_file;                    /* CA bundle for the server, or NULL */
    const char *token_file;                 /* the build token */
    const char *ns, *build;                 /* the Build */
    const char *const *insecure_registries; /* NULL-terminated HOST[:PORT] list, or NULL */
    const char *push_auth, *pull_auth;      /* docker config.json files, or NULL */
    const char *workdir;                    /* where the scratch dir goes; NULL: $TMPDIR, /tmp */
    FILE *log;                              /* progress lines; NULL: stdout */
    int threads;                            /* compression threads; 0: online CPUs */
    const char *backends; /* comma-separated backends allowed (backend.h); NULL: all */
} sw_builder_opts;

#define SW_BUILDER_OPTS_VERSION 2
#define SW_BUILDER_OPTS_INIT                                                                       \
    {                                                                                              \
        .version = SW_BUILDER_OPTS_VERSION                                                         \
    }

/* Runs the build. Returns 0 when the image was built (and pushed, when the build has an output)
 * and the outcome reported; otherwise the failing step's SW_E* code, with its message set, after
 * reporting reason and message through details (unless stopped: then nothing is reported and
 * sw_builder_stop_requested() is true). The scratch directory is removed on every path. */
int sw_builder_run(const sw_builder_opts *o);

/* Asks a running build to stop at the next check (between steps, and while a layer is
 * compressed or a source is downloaded): uploads in progress are cancelled. Async-signal-safe. */
void sw_builder_request_stop(void);
bool sw_builder_stop_requested(void);

#endif
