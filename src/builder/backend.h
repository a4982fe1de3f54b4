/* backend: what turns a build's Dockerfile and context into a pushed image inside `slipway
 * builder`. The builder keeps fetching the source and reporting; between the two it picks a
 * backend (sw_backend_choose) and hands it one sw_backend_job. A backend pulls, assembles and
 * pushes through the job's registry handle and credentials, so every backend's image reaches the
 * output the same way (HEAD, cross-repository mount, streamed upload, manifest PUT) and the server
 * records it in the stream from the same report. Backends: "native" (builder.c: the daemonless
 * assembler, COPY-only and reproducible) and "buildah" (buildah.h: the whole Dockerfile grammar
 * through Debian's buildah). Threading: a job runs on the builder's one thread; stop() may turn
 * true at any time (a signal) and a backend polls it at least every 100 ms while it waits.
 * Design: docs/builds.md ("Backends"). */
#ifndef SW_BUILDER_BACKEND_H
#define SW_BUILDER_BACKEND_H

#include "builder/source.h"
#include "image/compress.h"
#include "registry/client.h"
#include "registry/ref.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SW_BACKEND_VERSION 1
#define SW_BACKEND_KEY "build.slipway.dev/backend" /* Build annotation and manifest annotation */
#define SW_BACKEND_NETWORK_KEY "build.slipway.dev/network" /* Build annotation: "host" */
#define SW_BACKEND_TARGET_KEY "build.slipway.dev/target"   /* Build annotation: stage to build */
#define SW_BACKENDS_DEFAULT "native,buildah"

/* One build for a backend. Everything is borrowed for the call. */
typedef struct sw_backend_job {
    unsigned int version;   /* SW_BACKEND_VERSION */
    const char *dir;        /* the build's private scratch directory (0700), removed by
                             * the builder after the call whatever it returns */
    const sw_source *src;   /* the context, .dockerignore applied */
    const char *dockerfile; /* its text (NUL-terminated) */
    size_t dockerfile_len;
    const char *const *build_args; /* NULL-terminated "K=V" lists, or NULL */
    const char *const *env;        /* dockerStrategy.env: appended to the image's Env */
    const char *const *labels;     /* output.imageLabels */
    const char *from;   /* dockerStrategy.from's pull spec: replaces the last FROM's image */
    const char *target; /* the stage to build, or NULL for the last */
    int64_t epoch;      /* SOURCE_DATE_EPOCH: created time and file times */
    bool no_cache, force_pull;
    bool host_network;            /* RUN may use the host's network (else none at all) */
    sw_compress_kind compression; /* of new layers */
    sw_registry *reg;             /* the builder's client (its insecure hosts are the build's) */
    const sw_creds *push_creds;
    const char *pull_auth; /* the pull credentials' file, for tools; or NULL */
    bool push;             /* push to out (else build only) */
    const sw_ref *out;
    bool (*stop)(void);
    void (*say)(void *ctx, const char *line); /* one line of build log */
    void *ctx; /* the builder's own (say's, and the native backend's state) */
    /* out: set by the backend */
    const char *reason; /* the OpenShift reason of a failure (SW_REASON_*), or NULL */
} sw_backend_job;

typedef struct sw_backend {
    unsigned int version; /* SW_BACKEND_VERSION */
    const char *name;     /* "native", "buildah" */
    /* 0 when the backend can run here; otherwise SW_EUNAVAILABLE saying why. */
    int (*available)(void);
    /* Builds (and pushes, when job->push) the image; digest gets its manifest digest. Returns 0
     * or an SW_E* code with the message set and job->reason naming the failure. */
    int (*build)(sw_backend_job *job, char digest[80]);
} sw_backend;

/* The backend named name among the ones compiled in, or NULL. */
const sw_backend *sw_backend_find(const char *name);

/* Validates a comma-separated backend list ("native,buildah"): every name known, none twice.
 * SW_EINVALID naming the bad one. */
int sw_backend_list_check(const char *list);
/* Whether name is in the comma-separated list (NULL: SW_BACKENDS_DEFAULT). */
bool sw_backend_allowed(const char *list, const char *name);

/* Which backend builds (pure): forced is the Build's annotation (NULL/"": choose); allowed is the
 * server's list (NULL: SW_BACKENDS_DEFAULT); native_parse is what the native Dockerfile parser
 * returned (0, or its error with native_msg: SW_EUNSUPPORTED for valid Docker beyond the native
 * subset); buildah_unavailable is NULL when buildah can run here, else why not. Returns 0 with
 * *out set, or SW_EINVALID (an unknown or disallowed forced backend) or SW_EUNSUPPORTED (only a
 * missing or disallowed buildah could build it) with a message that says what to do. Forced
 * native onto a Dockerfile it refuses returns native_parse with native_msg (the refusal names
 * the line); forced buildah ignores native_parse (buildah judges the file). Unforced, a
 * native_parse error other than SW_EUNSUPPORTED is returned with native_msg (the Dockerfile is
 * bad whoever builds it). */
int sw_backend_choose(const char *forced, const char *allowed, int native_parse,
                      const char *native_msg, const char *buildah_unavailable,
                      const sw_backend **out);

#endif
