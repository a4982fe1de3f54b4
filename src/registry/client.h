/* client: the OCI distribution (registry v2) client on libcurl. One sw_registry per process,
 * shared by every thread: per-host pools of reused connections (HTTP/2 over TLS when the server
 * offers it) that double as a per-registry concurrency limit, bearer-token and basic auth
 * driven by WWW-Authenticate, a token cache per (registry, scope, credentials), retries with
 * Retry-After and bounded backoff, and digest verification of every manifest and blob.
 * Credentials and tokens are never logged and never put in error messages.
 * Design note: docs/internals/registry.md. */
#ifndef SW_REGISTRY_CLIENT_H
#define SW_REGISTRY_CLIENT_H

#include "registry/dockercfg.h"
#include "registry/ref.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sw_registry sw_registry;

typedef struct sw_registry_opts {
    const char *const *insecure_hosts; /* --insecure-registry HOST[:PORT] list, NULL-terminated */
    int timeout_ms;                    /* per request, default 30000 */
    int max_per_host;                  /* concurrent requests per registry host, default 16 */
    int retries;                       /* for 429/5xx/transient network errors, default 3 */
    bool (*stop)(void);                /* NULL, or true when waits between retries must end now */
} sw_registry_opts;

/* o may be NULL (all defaults); zero fields take their default, retries < 0 means none. */
int sw_registry_new(sw_registry **out, const sw_registry_opts *o);
/* Frees the registry; no call may be in progress. */
void sw_registry_free(sw_registry *r);
/* Ends every call in progress and every later one at once (transfers abort, waits for a
 * connection slot or a retry end) with SW_EUNAVAILABLE: the server's first step when it stops,
 * so no request waits on a slow registry. */
void sw_registry_shutdown(sw_registry *r);
/* Whether ref's registry is one of sw_registry_opts.insecure_hosts ("host:port" exactly, or
 * "host" with any port), as every call decides it. */
bool sw_registry_insecure_ref(const sw_registry *r, const sw_ref *ref);

/* True once sw_registry_shutdown ran (results of calls cut short then say nothing about the
 * registry). */
bool sw_registry_is_down(const sw_registry *r);

/* Per-call options. creds may be NULL (anonymous). insecure: skip TLS verification and fall
 * back to plain HTTP when the HTTPS ping fails (importPolicy.insecure); hosts listed in
 * sw_registry_opts.insecure_hosts are insecure for every call. c itself may be NULL. */
typedef struct sw_registry_call {
    const sw_creds *creds;
    bool insecure;
    int64_t deadline_ms; /* monotonic ms (sw_time_mono_ms) after which a tag listing starts no
                          * further page (SW_ETIMEOUT); 0: none */
} sw_registry_call;

/* Errors of every call below (the message says what happened, never a credential):
 * SW_EUNAUTHORIZED  401 after authenticating (or no credentials for a registry requiring them)
 * SW_EFORBIDDEN     403
 * SW_ENOTFOUND      404: manifest, blob or repository unknown
 * SW_EUNAVAILABLE   unreachable, TLS failure, or 429/5xx still failing after the retries
 *                   ("... answered 503 after 4 attempts")
 * SW_ETIMEOUT       a request took longer than timeout_ms
 * SW_EINVALID       digest mismatch, manifest over 1 MiB or blob over max (refused from the
 *                   Content-Length or cut off while reading), malformed response
 * SW_EUNSUPPORTED   an unexpected status or content the client does not handle */

/* HEAD the manifest by tag or digest with the Accept list of all four manifest types. Fills
 * digest (Docker-Content-Digest; if the registry omits it, the manifest is fetched and hashed),
 * media_type (Content-Type without parameters) and *size (Content-Length, -1 if unknown). Any
 * output pointer may be NULL. */
int sw_registry_head_manifest(sw_registry *r, const sw_registry_call *c, const sw_ref *ref,
                              char digest[80], char media_type[128], int64_t *size);

/* GET the manifest (at most SW_MANIFEST_MAX_BYTES) and verify sha256(body) against the ref's
 * digest, or the Docker-Content-Digest header when fetching by tag ("manifest digest mismatch:
 * expected sha256:.. got sha256:.."). *body is sw_malloc'd and NUL-terminated; digest receives
 * the verified digest. media_type and digest may be NULL. */
int sw_registry_get_manifest(sw_registry *r, const sw_registry_call *c, const sw_ref *ref,
                             char **body, size_t *len, char media_type[128], char digest[80]);

/* GET a blob of repo (its registry and repository; tag and digest ignored) of at most max bytes
 * and verify its digest. *body is sw_malloc'd and NUL-terminated. */
int sw_registry_get_blob(sw_registry *r, const sw_registry_call *c, const sw_ref *repo,
                         const char *digest, size_t max, char **body, size_t *len);

/* The repository's tags, following Link: <...>; rel="next" pages (n= and last=), each tag once
 * (where it first appears). Stops after max tags (the list is then a prefix of the registry's
 * order). SW_EINVALID when a next page was already fetched or is not this repository's
 * /v2/<repository>/tags/list. *tags is an sw_malloc'd array of sw_malloc'd strings: free with
 * sw_registry_tags_free(). */
int sw_registry_list_tags(sw_registry *r, const sw_registry_call *c, const sw_ref *repo, size_t max,
                          char ***tags, size_t *count);
void sw_registry_tags_free(char **tags, size_t count);

#endif
