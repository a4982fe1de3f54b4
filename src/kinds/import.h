/* import: resolves one image reference against its registry the way OpenShift's importer does,
 * but HEAD first: when the registry reports the digest imported last time, nothing is fetched.
 * Otherwise the manifest (and, for lists, the platform manifest or every child) and the config
 * blob are fetched, verified, and turned into image.openshift.io/v1 Image objects. Used by the
 * imagestreamimports handler and by the import controller. */
#ifndef SW_KINDS_IMPORT_H
#define SW_KINDS_IMPORT_H

#include "registry/client.h"
#include "registry/dockercfg.h"

#include <jansson.h>
#include <stdbool.h>

typedef struct sw_import_req {
    const char *from;        /* DockerImage pull spec */
    bool insecure;           /* importPolicy.insecure */
    bool preserve_original;  /* importMode PreserveOriginal (else Legacy) */
    const char *prefer_arch; /* tag annotation importer.image.openshift.io/prefer-arch */
    const char *prefer_os;   /* tag annotation importer.image.openshift.io/prefer-os */
    /* Whether digest is what was imported last time (for a list: the index digest); asked
     * only after HEAD, so a lookup it needs is paid only when the digest is not the obvious
     * one. NULL: nothing imported yet, so there is no HEAD: the manifest is fetched at once. */
    bool (*is_known)(void *payload, const char *digest);
    void *known_payload;
    /* Monotonic milliseconds (sw_time_mono_ms) after which no new registry request starts;
     * 0: none. Each request has its own timeout, so an import ends by about deadline + that. */
    int64_t deadline_ms;
} sw_import_req;

typedef struct sw_import_result {
    int code;             /* 0 or SW_E* */
    char message[512];    /* why it failed; never holds credentials */
    bool unchanged;       /* HEAD reported the known digest: nothing fetched, image is NULL */
    char digest[80];      /* what `from` resolves to (the index digest for lists) */
    json_t *image;        /* the Image the tag points at (Legacy lists: the chosen platform's) */
    json_t *manifests;    /* PreserveOriginal lists: the child Images; else NULL */
    char pull_spec[1024]; /* <registry>/<repository>@<image digest> */
} sw_import_result;

/* Never fails as a whole: every outcome is in out. */
void sw_import_image(sw_registry *r, const sw_creds *creds, const sw_import_req *req,
                     sw_import_result *out);
void sw_import_result_dispose(sw_import_result *res);

/* Tags of a repository in OpenShift's import priority (latest; X.Y descending; full semver
 * descending; the rest lexicographic), at most max; *more counts the ones left out. */
int sw_import_list_tags(sw_registry *r, const sw_creds *creds, const char *repository,
                        bool insecure, int64_t deadline_ms, size_t max, char ***tags, size_t *count,
                        char ***more, size_t *more_count);

/* qsort comparator over char * tag names in that priority order (library-go PrioritizeTags). */
int sw_import_tag_cmp(const void *a, const void *b);

/* The annotation on an Image imported through a manifest list that records the list's digest,
 * so change detection compares the index digest, never a platform digest. */
#define SW_IMPORT_INDEX_ANNOTATION "image.slipway.dev/index-digest"
#define SW_IMPORT_MAX_IMAGE_BYTES (1024 * 1024) /* an imported Image, encoded */

#endif
