/* client_int: internals shared by the registry client's files: http.c (libcurl transport,
 * per-host handle pools, retries), auth.c (challenges, token cache), client.c (the
 * distribution API calls) and push.c (uploads, mounts, manifest PUT). Not for use outside
 * src/registry/. */
#ifndef SW_REGISTRY_CLIENT_INT_H
#define SW_REGISTRY_CLIENT_INT_H

#include "registry/challenge.h"
#include "registry/client.h"
#include "util/buf.h"

#include "util/httpc.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define REG_ERROR_BODY_MAX 65536 /* non-2xx bodies are kept up to this, the rest dropped */
#define REG_WAIT_BUDGET_MS 10000 /* total sleep (Retry-After, backoff) per call */
#define REG_BACKOFF_BASE_MS 200  /* first retry delay, doubled per attempt */
#define REG_BACKOFF_MAX_MS 2000
#define REG_STOP_POLL_MS 100 /* how often a retry wait checks opts.stop */
#define REG_TOKEN_CACHE_MAX 4096

enum { REG_SCHEME_UNKNOWN = 0, REG_SCHEME_HTTPS = 1, REG_SCHEME_HTTP = 2 };

/* One registry or token-server host: a pool of idle easy handles whose size bounds the
 * concurrent requests, and what was learned about the host. Guarded by sw_registry.mu. */
typedef struct reg_host {
    char name[256];      /* host[:port] */
    sw_httpc_pool *pool; /* max_per_host handles: the host's concurrency and connections */
    int scheme;          /* REG_SCHEME_*: learned by an insecure ping */
    bool basic;          /* the host answered with a Basic challenge */
    struct reg_host *next;
} reg_host;

typedef struct reg_token {
    char *key;       /* "host\nscope\ncredkey" */
    char *token;     /* wiped on free */
    int64_t expires; /* monotonic ms */
} reg_token;

struct sw_registry {
    pthread_mutex_t mu; /* hosts and tokens */
    reg_host *hosts;
    reg_token *tokens;
    size_t n_tokens, cap_tokens;
    CURLSH *share; /* DNS cache and TLS sessions */
    pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];
    char **insecure; /* NULL-terminated copy of opts.insecure_hosts */
    int timeout_ms, max_per_host, retries;
    bool (*stop)(void); /* opts.stop: ends Retry-After or backoff waits early */
    bool down;          /* sw_registry_shutdown was called (__atomic) */
    uint64_t st_heads, st_sessions, st_mounts, st_bytes, st_manifests; /* push.c, __atomic */
};

/* One API call in progress: where it goes, as whom, and its auth and retry state. */
typedef struct reg_call {
    sw_registry *r;
    char host[256];    /* endpoint host[:port] */
    char display[512]; /* "registry/repository" for messages */
    const char *repository;
    bool insecure;
    const char *scheme;      /* "https" or "http" */
    const char *user, *pass; /* from the keyring or NULL; never logged */
    char credkey[33];        /* "" anonymous, else a hash of the credentials */
    char scope[640];         /* "repository:<repo>:pull" (push.c: ":pull,push", more) */
    char *token;             /* bearer token in use, wiped on dispose */
    bool basic;              /* send basic credentials */
    bool authed;             /* one 401 was already answered */
    int64_t wait_budget_ms;  /* remaining sleep for 429/backoff */
    int64_t deadline_ms;     /* sw_registry_call.deadline_ms */
} reg_call;

typedef struct reg_req {
    const char *method; /* "GET", "HEAD", or with a body "POST", "PUT", "PATCH"; "DELETE" */
    const char *url;
    const char *host;        /* pool key: host[:port] of url */
    const char *accept;      /* Accept header or NULL */
    const char *bearer;      /* token or NULL */
    const char *user, *pass; /* basic credentials or NULL */
    bool insecure;           /* skip TLS verification */
    bool retry;              /* retry 429/5xx/transient errors */
    size_t body_max;         /* a 2xx body larger than this aborts the transfer */

    const char *content_type;  /* POST/PUT/PATCH: Content-Type of the body, NULL for none */
    const char *content_range; /* Content-Range value or NULL */
    const void *send;          /* POST/PUT/PATCH: the request body (NULL when send_len is 0) */
    size_t send_len;
    /* Instead of send: a body of unknown length pulled through this (libcurl's read-callback
     * contract: bytes, 0 at the end, CURL_READFUNC_ABORT); sent chunked, never replayed. */
    size_t (*stream)(char *buf, size_t size, size_t nitems, void *payload);
    void *stream_payload;
} reg_req;

typedef struct reg_resp {
    long status;   /* 0 when no response arrived */
    CURLcode code; /* transport result */
    char curl_msg[CURL_ERROR_SIZE];
    bool too_large;         /* aborted: Content-Length or body over body_max */
    int64_t content_length; /* -1 unknown */
    sw_buf body;
    char content_type[128];
    char digest[128]; /* Docker-Content-Digest */
    char retry_after[64];
    sw_buf www_auth; /* every WWW-Authenticate value, joined with ", " */
    char link[2048]; /* the rel="next" Link header, raw */
    size_t body_max; /* copied from the request */
    int attempts;    /* requests made, for messages */

    char location[4096]; /* Location (upload sessions, created blobs) */
    int64_t chunk_min;   /* OCI-Chunk-Min-Length, -1 when absent */

    /* Optional: a 2xx body goes here as it arrives instead of into body (still capped by
     * body_max). A negative return aborts the transfer and becomes perform's result. A
     * transfer is never retried once the sink has taken a byte. */
    int (*sink)(void *payload, const void *data, size_t len);
    void *sink_payload;
    uint64_t sunk;  /* bytes handed to the sink */
    int sink_error; /* its failure, 0 if none */
} reg_resp;

/* http.c */
void sw_registry__resp_init(reg_resp *resp);
void sw_registry__resp_dispose(reg_resp *resp);
/* Performs req, retrying 429/5xx/transient errors when req->retry (sleeping at most
 * cx->wait_budget_ms in total). Returns 0 when a response arrived (any status: the caller maps
 * it; a 429/5xx left after the retries is turned into SW_EUNAVAILABLE here), else SW_ETIMEOUT,
 * SW_EUNAVAILABLE or SW_EINVALID (too large) with a message. */
int sw_registry__perform(reg_call *cx, const reg_req *req, reg_resp *resp);
/* Sleeps ms in slices; true (at once) when the registry's stop request is set. */
bool sw_registry__wait_or_stop(const sw_registry *r, int64_t ms);
/* True once sw_registry_shutdown ran: transfers abort, nothing new starts. */
bool sw_registry__down(const sw_registry *r);
/* host[:port] of an http(s) URL into out; false if url is not http(s). */
bool sw_registry__url_host(const char *url, char *out, size_t n, bool *https);
int sw_registry__host_scheme(sw_registry *r, const char *host);
void sw_registry__set_host_scheme(sw_registry *r, const char *host, int scheme);
bool sw_registry__host_basic(sw_registry *r, const char *host);
void sw_registry__set_host_basic(sw_registry *r, const char *host);
/* Frees every host and its idle handles. */
void sw_registry__hosts_free(sw_registry *r);

/* client.c: what push.c shares with the pull calls. */
/* A request body and how to send it; NULL means none (and retries allowed). */
typedef struct reg_send {
    const char *content_type;
    const char *content_range;
    const void *data;
    size_t len;
    bool once; /* no retry of 5xx/transport errors: the request is not idempotent */
    size_t (*stream)(char *buf, size_t size, size_t nitems, void *payload); /* see reg_req */
    void *stream_payload;
} reg_send;
/* Resolves endpoint, credentials and scheme for ref (pinging an insecure host once). cx keeps
 * pointers to ref->repository and to c->creds' strings: both must outlive cx. */
int sw_registry__call_init(sw_registry *r, const sw_registry_call *c, const sw_ref *ref,
                           reg_call *cx);
void sw_registry__call_dispose(reg_call *cx);
/* Sends method path (path and query on cx's host) with auth, answering one 401 per call. */
int sw_registry__exec(reg_call *cx, const char *method, const char *path, const char *accept,
                      const reg_send *send, size_t body_max, reg_resp *resp);
/* Maps a non-2xx final status to an SW_E* code; what names the object ("manifest x:1"). */
int sw_registry__status_error(const reg_call *cx, const reg_resp *resp, const char *what);
void sw_registry__sha256(const void *data, size_t len, char out[80]);

/* auth.c */
/* A cached token for cx's host, scope and credentials (sw_malloc'd copy), or NULL. */
char *sw_registry__token_cached(reg_call *cx);
/* Answers a 401 response: picks a challenge, fetches a bearer token (cached per host, scope
 * and credentials) or switches cx to basic credentials. Returns 0 to retry the request, or
 * SW_EUNAUTHORIZED / SW_EFORBIDDEN / SW_EUNAVAILABLE with a message free of secrets. */
int sw_registry__authenticate(reg_call *cx, const reg_resp *resp);
void sw_registry__tokens_free(sw_registry *r);
/* credkey for user/pass: 32 hex digits of SHA-256, or "" when user is NULL. */
void sw_registry__credkey(const char *user, const char *pass, char out[33]);
/* Copies s to out with every occurrence of the call's user name and password replaced by
 * "***" (registry-supplied text that goes into error messages). */
void sw_registry__scrub(const reg_call *cx, const char *s, char *out, size_t n);

#endif
