/* layout: an OCI image layout directory (oci-layout, index.json, blobs/sha256/<hex>) that
 * umoci, skopeo (oci:DIR:TAG) and other OCI tools read. Blobs are written once under their
 * digest through a temporary file and a rename; index.json is rewritten atomically (canonical
 * JSON) each time a tag is set, keeping the other entries. Design: docs/internals/image.md. */
#ifndef SW_IMAGE_LAYOUT_H
#define SW_IMAGE_LAYOUT_H

#include "image/layer.h"
#include "image/oci.h"

#include <stddef.h>

#define SW_OCI_INDEX_MAX (8 * 1024 * 1024) /* bytes of an existing index.json */

typedef struct sw_oci_layout sw_oci_layout;

/* Opens dir as a layout, creating it (and oci-layout, blobs/sha256, an empty index.json) as
 * needed; its parent must exist. An existing index.json is loaded so other tags survive.
 * SW_EINVALID for an unreadable or malformed oci-layout/index.json, SW_ERROR for I/O. */
int sw_oci_layout_open(sw_oci_layout **out, const char *dir);
void sw_oci_layout_free(sw_oci_layout *l);

/* Stores data as a blob (skipped if that digest is already present); digest may be NULL. */
int sw_oci_layout_put_blob(sw_oci_layout *l, const void *data, size_t len,
                           char digest[SW_SHA256_DIGEST_BUF]);
/* Builds tar's layer straight into the layout. opts->out_path must be NULL (the layout picks
 * the file); opts->sink, if set, also receives the blob. */
int sw_oci_layout_put_layer(sw_oci_layout *l, sw_tar *tar, const sw_layer_opts *opts,
                            sw_layer_info *info);
/* Points ref_name (the org.opencontainers.image.ref.name annotation, e.g. "latest") at
 * manifest, replacing an entry with that name, and rewrites index.json. */
int sw_oci_layout_tag(sw_oci_layout *l, const sw_oci_desc *manifest, const char *ref_name);
/* Stores img's config and manifest for fmt as blobs and tags the manifest ref_name (if not
 * NULL). *manifest (may be NULL) receives the manifest's descriptor. */
int sw_oci_layout_put_image(sw_oci_layout *l, const sw_oci_image *img, sw_oci_format fmt,
                            const char *ref_name, sw_oci_desc *manifest);

/* ---- reading a layout another tool wrote (buildah push oci:DIR:TAG) ---- */

/* The manifest index.json tags ref_name in the layout at dir: its bytes (at most max, which
 * must cover them) in *body (sw_malloc'd, NUL-terminated), its media type (from the index
 * entry) and digest. SW_ENOTFOUND when no entry has that name; SW_EINVALID for a malformed
 * index, a digest that is not sha256, or bytes that do not hash to the digest. */
int sw_oci_layout_read_manifest(const char *dir, const char *ref_name, size_t max, char **body,
                                size_t *len, char media[128], char digest[80]);
/* The path of blob digest (checked: a valid sha256 digest) in the layout at dir (PATH_MAX). */
int sw_oci_layout_blob_path(const char *dir, const char *digest, char *out);

#endif
