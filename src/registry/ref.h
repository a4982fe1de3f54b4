/* ref: container image references ("ruby", "quay.io/a/b:1@sha256:...", "localhost:5000/x"),
 * parsed and normalised the way docker does (distribution/reference): a bare name lives on
 * docker.io, a one-component docker.io name gains "library/", no tag and no digest means
 * ":latest". Values only; no allocation. Design note: docs/internals/registry.md. */
#ifndef SW_REGISTRY_REF_H
#define SW_REGISTRY_REF_H

#include <stdbool.h>
#include <stddef.h>

#define SW_REF_NAME_MAX 255 /* normalised "registry/repository", like docker */
#define SW_REF_TAG_MAX 128
#define SW_REF_DIGEST_MAX 79 /* "sha256:" + 64 hex = 71 */

typedef struct sw_ref {
    char registry[256];   /* "docker.io", "quay.io", "localhost:5000", "[::1]:5000" */
    char repository[256]; /* "library/ruby", lower case path components */
    char tag[129];        /* "" when absent (only possible with a digest) */
    char digest[80];      /* "" or "sha256:<64 lower-case hex>" */
} sw_ref;

/* Parses and normalises s. Returns 0, or SW_EINVALID with a message naming what is wrong
 * ("invalid reference format: repository name must be lowercase"). *out is written only on
 * success. */
int sw_ref_parse(const char *s, sw_ref *out);

/* Canonical "registry/repository[:tag][@digest]"; truncates (still terminated) if n is short. */
void sw_ref_format(const sw_ref *r, char *out, size_t n);

/* The host[:port] to contact: docker.io -> registry-1.docker.io, everything else unchanged. */
const char *sw_ref_endpoint(const sw_ref *r);

/* True if d is "sha256:" followed by exactly 64 lower-case hex digits (the only algorithm
 * slipway verifies). */
bool sw_ref_digest_valid(const char *d);

/* The digest part of a pull spec ("repo@sha256:..." → "sha256:..."), the string itself when it
 * is a bare "sha256:..." digest, else "" (never NULL; ref may be NULL). */
const char *sw_ref_digest_of(const char *ref);

/* Whether two pull specs name the same image: by digest when both carry one (a registry alias
 * or an `external` tag reaching the same image is the same image), else as strings. */
bool sw_ref_same_image(const char *a, const char *b);

/* True if s is a valid tag: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}. */
bool sw_ref_tag_valid(const char *s);

#endif
