/* oci: the OCI image objects a build produces: the image config (runtime config, rootfs
 * diff_ids, history), the image manifest (OCI, or Docker schema2 for old registries) and
 * their descriptors, all encoded as canonical JSON (sorted keys, no spaces) so the same
 * inputs always give the same digests. An image starts empty (FROM scratch) or from a base
 * image's config and layer descriptors; later layers and settings are added on top. Design
 * note: docs/internals/image.md. */
#ifndef SW_IMAGE_OCI_H
#define SW_IMAGE_OCI_H

#include "image/compress.h"
#include "util/sha256.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define SW_OCI_MEDIA_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define SW_OCI_MEDIA_INDEX "application/vnd.oci.image.index.v1+json"
#define SW_OCI_MEDIA_CONFIG "application/vnd.oci.image.config.v1+json"
#define SW_OCI_MEDIA_LAYER "application/vnd.oci.image.layer.v1.tar"
#define SW_OCI_MEDIA_LAYER_GZIP "application/vnd.oci.image.layer.v1.tar+gzip"
#define SW_OCI_MEDIA_LAYER_ZSTD "application/vnd.oci.image.layer.v1.tar+zstd"
#define SW_DOCKER_MEDIA_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define SW_DOCKER_MEDIA_CONFIG "application/vnd.docker.container.image.v1+json"
#define SW_DOCKER_MEDIA_LAYER_GZIP "application/vnd.docker.image.rootfs.diff.tar.gzip"
#define SW_OCI_REF_NAME "org.opencontainers.image.ref.name" /* index.json tag annotation */

#define SW_OCI_MAX_LAYERS 1000
#define SW_OCI_CONFIG_MAX (8 * 1024 * 1024) /* bytes of a base config */

/* A content descriptor (value type). */
typedef struct sw_oci_desc {
    char media_type[128];
    char digest[SW_SHA256_DIGEST_BUF];
    int64_t size;
} sw_oci_desc;

typedef enum sw_oci_format {
    SW_OCI_FORMAT_OCI = 0,    /* OCI media types (the default) */
    SW_OCI_FORMAT_DOCKER = 1, /* Docker schema2; gzip layers only */
} sw_oci_format;

/* The OCI layer media type of a compression (static string). */
const char *sw_oci_layer_media_type(sw_compress_kind k);
/* The GOARCH-style name of the architecture slipway was built for ("amd64", "arm64"...). */
const char *sw_oci_host_arch(void);

/* Canonical JSON: compact, keys sorted by bytes. *out is sw_malloc'd and NUL-terminated,
 * *len excludes the NUL. SW_ELIMIT past 16 MiB. */
int sw_oci_json_canonical(const json_t *j, char **out, size_t *len);

typedef struct sw_oci_image sw_oci_image;

/* An image with no layers (FROM scratch). os/arch NULL mean "linux" and the host's arch;
 * created (seconds since the epoch, normally SOURCE_DATE_EPOCH or 0) is the config's and
 * every new history entry's time. Always returns 0 (allocation failure aborts). */
int sw_oci_image_new(sw_oci_image **out, const char *os, const char *arch, int64_t created);
/* An image on top of a base: the base config blob (config_len bytes, at most
 * SW_OCI_CONFIG_MAX) gives architecture, os, variant, the runtime config fields slipway
 * knows (Env, Entrypoint, Cmd, WorkingDir, User, ExposedPorts, Volumes, Labels, StopSignal),
 * rootfs.diff_ids and history; layers are the base manifest's layer descriptors, one per
 * diff_id. Other base fields are dropped. SW_EINVALID for bad JSON, wrong field types, a
 * diff_id that is not a sha256 digest or a diff_id count that differs from nlayers. */
int sw_oci_image_new_from_base(sw_oci_image **out, const char *config, size_t config_len,
                               const sw_oci_desc *layers, size_t nlayers, int64_t created);
void sw_oci_image_free(sw_oci_image *img);

/* Runtime config. Strings must be valid UTF-8 (else SW_EINVALID). */
int sw_oci_image_set_env(sw_oci_image *img, const char *name, const char *value); /* replaces */
/* argv of n strings; n == 0 removes the field (a Dockerfile ENTRYPOINT also clears Cmd: the
 * caller does that). */
int sw_oci_image_set_entrypoint(sw_oci_image *img, const char *const *argv, size_t n);
int sw_oci_image_set_cmd(sw_oci_image *img, const char *const *argv, size_t n);
int sw_oci_image_set_workdir(sw_oci_image *img, const char *dir);
int sw_oci_image_set_user(sw_oci_image *img, const char *user);
int sw_oci_image_set_stop_signal(sw_oci_image *img, const char *signal);
/* "8080", "8080/tcp", "53/udp", "9/sctp" (ports 1-65535; no ranges) -> "8080/tcp" ... */
int sw_oci_image_add_port(sw_oci_image *img, const char *port);
int sw_oci_image_add_volume(sw_oci_image *img, const char *path);
int sw_oci_image_set_label(sw_oci_image *img, const char *key, const char *value);

/* Appends a layer: its descriptor, its diff_id and a history entry (created_by may be NULL).
 * SW_ELIMIT past SW_OCI_MAX_LAYERS, SW_EINVALID for a bad digest or diff_id. */
int sw_oci_image_add_layer(sw_oci_image *img, const sw_oci_desc *layer, const char *diff_id,
                           const char *created_by);
/* Appends a history entry with empty_layer: true (ENV, LABEL ... instructions). */
int sw_oci_image_add_history(sw_oci_image *img, const char *created_by);

size_t sw_oci_image_layer_count(const sw_oci_image *img);
const sw_oci_desc *sw_oci_image_layer(const sw_oci_image *img, size_t i);

/* Sets an annotation of the manifest (replacing one of the same key); the manifest gets an
 * "annotations" object once one is set. SW_EINVALID for an empty key or a key or value that
 * is not UTF-8. */
int sw_oci_image_set_annotation(sw_oci_image *img, const char *key, const char *value);

/* The canonical config blob (sw_malloc'd, NUL-terminated, *len without the NUL) and its
 * descriptor (the media type follows fmt; the bytes do not). */
int sw_oci_image_config(const sw_oci_image *img, sw_oci_format fmt, char **json, size_t *len,
                        sw_oci_desc *desc);
/* The canonical manifest for fmt and its descriptor. Layer media types are converted between
 * the OCI and Docker names for the same bytes; SW_EUNSUPPORTED when fmt is Docker and a
 * layer is not gzip. */
int sw_oci_image_manifest(const sw_oci_image *img, sw_oci_format fmt, char **json, size_t *len,
                          sw_oci_desc *desc);

#endif
