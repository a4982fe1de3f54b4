/* manifest: bounded parsing of image manifests (OCI image manifest, OCI image index, Docker
 * schema2 manifest, Docker manifest list) and of image config blobs. The kind is decided by
 * the Content-Type when it names one of the four types, else by the body's mediaType, else by
 * its shape. Parsed objects are read-only and opaque; the strings they hand out live as long
 * as the object. Design note: docs/internals/registry.md. */
#ifndef SW_REGISTRY_MANIFEST_H
#define SW_REGISTRY_MANIFEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SW_MEDIA_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define SW_MEDIA_OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define SW_MEDIA_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define SW_MEDIA_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
/* The Accept header value of every manifest request: all four types. */
#define SW_MANIFEST_ACCEPT                                                                         \
    SW_MEDIA_OCI_MANIFEST ", " SW_MEDIA_OCI_INDEX ", " SW_MEDIA_DOCKER_MANIFEST                    \
                          ", " SW_MEDIA_DOCKER_LIST

#define SW_MANIFEST_MAX_BYTES (1024 * 1024) /* larger manifests are refused */
#define SW_MANIFEST_MAX_ENTRIES 1000        /* layers of a manifest or entries of an index */
#define SW_CONFIG_MAX_BYTES (8 * 1024 * 1024)

typedef enum sw_manifest_kind {
    SW_MANIFEST_IMAGE = 1, /* OCI image manifest or Docker schema2 manifest */
    SW_MANIFEST_INDEX = 2, /* OCI image index or Docker manifest list */
} sw_manifest_kind;

/* A content descriptor: config, layer, or index entry (platform fields only for entries). */
typedef struct sw_descriptor {
    char media_type[128]; /* "" if the manifest omitted it */
    char digest[80];      /* always a valid sha256 digest */
    int64_t size;         /* 0 .. 2^53 */
    char os[32];          /* index entries: platform.os, "" when absent */
    char architecture[32];
    char variant[32];
} sw_descriptor;

typedef struct sw_manifest sw_manifest;

/* Parses body (len bytes, at most SW_MANIFEST_MAX_BYTES) as a manifest; media_type is the
 * response's Content-Type (parameters ignored) and may be NULL. Returns 0, SW_EUNSUPPORTED for
 * other media types (Docker schema1, artifacts), or SW_EINVALID (bad JSON, schemaVersion not 2,
 * mediaType contradicting the Content-Type, a bad descriptor, more than SW_MANIFEST_MAX_ENTRIES
 * layers or entries). */
int sw_manifest_parse(const char *media_type, const char *body, size_t len, sw_manifest **out);
void sw_manifest_free(sw_manifest *m);

sw_manifest_kind sw_manifest_get_kind(const sw_manifest *m);
/* One of the four SW_MEDIA_* types. */
const char *sw_manifest_media_type(const sw_manifest *m);
/* A string value of the manifest's top-level annotations, or NULL. */
const char *sw_manifest_annotation(const sw_manifest *m, const char *key);
/* The config descriptor of an image manifest; NULL for an index. */
const sw_descriptor *sw_manifest_config(const sw_manifest *m);
/* Layers of an image manifest (0 for an index), or entries of an index (0 for a manifest). */
size_t sw_manifest_layer_count(const sw_manifest *m);
const sw_descriptor *sw_manifest_layer(const sw_manifest *m, size_t i);
size_t sw_manifest_entry_count(const sw_manifest *m);
const sw_descriptor *sw_manifest_entry(const sw_manifest *m, size_t i);
/* The first index entry for os/architecture (variant "" matches any); NULL if none. */
const sw_descriptor *sw_manifest_find_platform(const sw_manifest *m, const char *os,
                                               const char *architecture, const char *variant);

/* An image config blob (application/vnd.oci.image.config.v1+json or the Docker equivalent). */
typedef struct sw_image_config sw_image_config;

/* A list of strings borrowed from the config. */
typedef struct sw_strv {
    const char *const *v;
    size_t n;
} sw_strv;

/* Parses a config blob of at most SW_CONFIG_MAX_BYTES. Every field is optional, but a field
 * that is present must have the right JSON type (else SW_EINVALID). */
int sw_image_config_parse(const char *body, size_t len, sw_image_config **out);
void sw_image_config_free(sw_image_config *c);

/* Top-level strings: "architecture", "os", "variant", "created" (RFC 3339), "author";
 * config strings: "config.WorkingDir", "config.User". NULL when absent. */
const char *sw_image_config_str(const sw_image_config *c, const char *field);
sw_strv sw_image_config_env(const sw_image_config *c);        /* "K=V" */
sw_strv sw_image_config_entrypoint(const sw_image_config *c); /* n == 0 when absent */
sw_strv sw_image_config_cmd(const sw_image_config *c);
sw_strv sw_image_config_exposed_ports(const sw_image_config *c); /* "8080/tcp" */
sw_strv sw_image_config_diff_ids(const sw_image_config *c);      /* rootfs.diff_ids */
/* Labels as parallel key/value lists in the blob's order. */
sw_strv sw_image_config_label_keys(const sw_image_config *c);
sw_strv sw_image_config_label_values(const sw_image_config *c);
/* The whole parsed blob (borrowed), for fields not covered above. */
const json_t *sw_image_config_json(const sw_image_config *c);

#endif
