/* sha256: the project's one SHA-256 helper (OpenSSL EVP underneath): a streaming context for
 * blobs hashed while they are produced (layers, uploads) and one-shot helpers for small
 * buffers. Digests are written in OCI form, "sha256:" + 64 lower-case hex digits. */
#ifndef SW_UTIL_SHA256_H
#define SW_UTIL_SHA256_H

#include <stdbool.h>
#include <stddef.h>

#define SW_SHA256_LEN 32        /* raw digest bytes */
#define SW_SHA256_DIGEST_LEN 71 /* strlen("sha256:") + 64 */
#define SW_SHA256_DIGEST_BUF 72 /* with the NUL */

/* A caller-owned streaming context: _init, any number of _update, then _final (which also
 * disposes it) or _dispose to abandon. The context allocates (abort on OOM, as sw_malloc). */
typedef struct sw_sha256 {
    void *ctx; /* EVP_MD_CTX, NULL when disposed */
} sw_sha256;

void sw_sha256_init(sw_sha256 *h);
void sw_sha256_update(sw_sha256 *h, const void *data, size_t len);
/* Writes the raw digest and disposes the context. */
void sw_sha256_final(sw_sha256 *h, unsigned char out[SW_SHA256_LEN]);
/* Writes "sha256:<hex>" and disposes the context. */
void sw_sha256_final_digest(sw_sha256 *h, char out[SW_SHA256_DIGEST_BUF]);
void sw_sha256_dispose(sw_sha256 *h);

/* One-shot: "sha256:<hex>" of data[0..len). */
void sw_sha256_digest(const void *data, size_t len, char out[SW_SHA256_DIGEST_BUF]);

/* True if s is "sha256:" followed by exactly 64 lower-case hex digits. */
bool sw_sha256_digest_valid(const char *s);

#endif
