/* push: writing to a registry with the client of client.h (same pools, auth, retries and
 * errors): blob existence by HEAD, cross-repository mount, streamed uploads (POST a session,
 * PATCH chunks, PUT ?digest= to commit; the registry verifies the digest), one-shot blob pushes
 * that retry by themselves, and manifest PUT. Every call asks for repository:<name>:pull,push
 * (a mount also for repository:<from>:pull). Design note: docs/internals/registry.md, "Pushing". */
#ifndef SW_REGISTRY_PUSH_H
#define SW_REGISTRY_PUSH_H

#include "registry/client.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SW_UPLOAD_CHUNK_DEFAULT (8 * 1024 * 1024) /* bytes buffered per PATCH */
#define SW_UPLOAD_CHUNK_MAX (64 * 1024 * 1024)
#define SW_UPLOAD_STREAM_BUFFER (1024 * 1024) /* socket buffer between write() and the PATCH */

/* Errors, beyond those listed in client.h: SW_EINVALID also for a digest the registry refused
 * (DIGEST_INVALID), a manifest naming a blob the repository lacks (MANIFEST_BLOB_UNKNOWN), or
 * any other 4xx, with the registry's "CODE: message" in the message. */

/* HEAD /v2/<repo>/blobs/<digest>: *exists true when the repository has the blob, which only a
 * 2xx proves (a 307/308 is followed once, without credentials; any other redirect, or a 404,
 * is absent); *size is its Content-Length or -1. size may be NULL, but a caller that knows the
 * blob's size should treat another *size as absent. */
int sw_registry_blob_exists(sw_registry *r, const sw_registry_call *c, const sw_ref *repo,
                            const char *digest, bool *exists, int64_t *size);

/* A blob upload session: bytes are buffered up to the chunk size and sent as PATCH requests
 * in order; the rest goes with the committing PUT (a blob smaller than one chunk is one PUT).
 * Memory is bounded by the chunk size. A session is used by one thread at a time. The call
 * options' credentials (c->creds) must stay alive until commit or abort. */
typedef struct sw_blob_upload sw_blob_upload;

/* POST /v2/<repo>/blobs/uploads/ and keep the session's Location. */
int sw_registry_upload_start(sw_registry *r, const sw_registry_call *c, const sw_ref *repo,
                             sw_blob_upload **out);
/* Chunk size for this session (default SW_UPLOAD_CHUNK_DEFAULT, at most SW_UPLOAD_CHUNK_MAX,
 * at least the registry's OCI-Chunk-Min-Length). Only before the first write. */
void sw_registry_upload_set_chunk_size(sw_blob_upload *u, size_t n);
/* Streamed mode, before the first write: the whole blob goes out as ONE PATCH of unknown
 * length (chunked transfer encoding, no Content-Range: what the docker client does), written
 * while it is produced, instead of chunk_size PATCHes; the registry then does its per-request
 * work once. The PATCH's failure surfaces at a later write or the commit, like a chunk's. */
int sw_registry_upload_set_streamed(sw_blob_upload *u);
/* Appends data (copied). Whenever a chunk is full it is PATCHed by a helper thread while the
 * caller goes on writing (one PATCH in flight, in order; never retried: a chunk's fate is
 * unknown after a failure). On failure the error is sticky: a later write or the commit
 * returns it, the session is lost, and the caller must abort and restart from the first byte
 * with a new session (sw_registry_push_blob does that by itself). */
int sw_registry_upload_write(sw_blob_upload *u, const void *data, size_t len);
/* Bytes written so far (for progress displays). */
uint64_t sw_registry_upload_size(const sw_blob_upload *u);
/* PUT <session>?digest=<digest> with the buffered rest; the registry checks the digest
 * (SW_EINVALID "... DIGEST_INVALID ..." when the content does not match). Frees u whatever
 * the result; a failed session is cancelled. */
int sw_registry_upload_commit(sw_blob_upload *u, const char *digest);
/* DELETE the session (best effort) and free u. NULL is a no-op. */
void sw_registry_upload_abort(sw_blob_upload *u);

/* POST /v2/<repo>/blobs/uploads/?mount=<digest>&from=<from_repo> (a repository of the same
 * registry). *mounted true: the blob is now in repo (a 201 without Docker-Content-Digest is
 * checked by a HEAD, against size unless it is negative). false: the registry opened an upload
 * session instead (no such blob in from_repo, no pull access to it, or no mount support);
 * it is returned in *session when session is non-NULL, else cancelled. A 201 the HEAD does
 * not confirm is false too, with no session. */
int sw_registry_blob_mount(sw_registry *r, const sw_registry_call *c, const sw_ref *repo,
                           const char *digest, int64_t size, const char *from_repo, bool *mounted,
                           sw_blob_upload **session);

/* What a one-shot push did. */
typedef enum sw_blob_pushed {
    SW_BLOB_EXISTED = 1, /* HEAD: the repository had it; nothing sent */
    SW_BLOB_MOUNTED = 2, /* mounted from from_repo; nothing sent */
    SW_BLOB_UPLOADED = 3,
} sw_blob_pushed;

/* Pushes a blob held in memory: HEAD first (a blob of another size counts as absent), then a
 * mount from from_repo (may be NULL), else an upload. A transport failure, timeout or 5xx during
 * the upload restarts it in a new session (up to the registry's retries). how may be NULL. */
int sw_registry_push_blob(sw_registry *r, const sw_registry_call *c, const sw_ref *repo,
                          const char *digest, const void *data, size_t len, const char *from_repo,
                          sw_blob_pushed *how);
/* Copies blob digest, size bytes, from repository from (another registry, or the same) into
 * repository to without holding it: the GET is streamed into an upload session (one streamed
 * PATCH fed while the rest arrives) and hashed on the way; a body longer than size or
 * with another digest aborts the upload. Memory stays at a socket buffer whatever the size. A
 * transport failure or 5xx restarts the whole copy (up to the client's retries); the GET has no
 * total time limit, only a stall limit. It holds one connection to each side at once, so a
 * copy within one host needs max_per_host >= 2 (SW_EINVALID otherwise). No HEAD or mount
 * here: the caller tries those first. */
int sw_registry_copy_blob(sw_registry *r, const sw_registry_call *from_call, const sw_ref *from,
                          const sw_registry_call *to_call, const sw_ref *to, const char *digest,
                          uint64_t size);
/* The same for size bytes read with pread() from fd, from offset 0 (a restart reads again). */
int sw_registry_push_blob_fd(sw_registry *r, const sw_registry_call *c, const sw_ref *repo,
                             const char *digest, int fd, uint64_t size, const char *from_repo,
                             sw_blob_pushed *how);

/* PUT /v2/<repo>/manifests/<ref.tag, else ref.digest> with Content-Type media_type. The body
 * (at most SW_MANIFEST_MAX_BYTES) must hash to ref.digest when one is given; the registry's
 * Docker-Content-Digest, when sent, must equal sha256(body). digest_out (may be NULL) receives
 * sha256(body). */
int sw_registry_put_manifest(sw_registry *r, const sw_registry_call *c, const sw_ref *ref,
                             const char *media_type, const char *body, size_t len,
                             char digest_out[80]);

/* Counters of one sw_registry since its creation, for tests and progress reports. */
typedef struct sw_push_stats {
    uint64_t blob_heads;      /* HEAD requests for blobs */
    uint64_t upload_sessions; /* sessions the registry opened (POST answered 202) */
    uint64_t mounts;          /* blobs mounted (POST answered 201) */
    uint64_t bytes;           /* blob bytes sent in PATCH and PUT bodies */
    uint64_t manifests;       /* manifests stored */
} sw_push_stats;

void sw_registry_push_stats(sw_registry *r, sw_push_stats *out);

#endif
