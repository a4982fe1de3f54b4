/* Unit tests for src/registry/push against an in-process fake registry (libmicrohttpd on
 * 127.0.0.1) that keeps upload sessions and blobs and is strict where the real one is lenient:
 * chunks must be contiguous (416 otherwise) and typed application/octet-stream, the committed
 * content must hash to ?digest=. Scenarios the real registry will not stage: relative and
 * absolute Locations, a Location on another host, OCI-Chunk-Min-Length, a PATCH or PUT
 * answered 503, a registry lying about a digest, HEAD redirects and sizes, bearer tokens whose
 * scopes are checked, and hostile answers: a PATCH answered before its body is read, a mount
 * answered 201 without doing it, odd and over-long Locations, a token realm on an HTTPS host
 * (T, a second daemon with a self-signed certificate). The real registry: test_push_live.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "registry/manifest.h"
#include "registry/push.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/str.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define MAX_SESSIONS 32
#define MAX_BLOBS 64

typedef struct session {
    bool used;
    char repo[64];
    sw_buf data;
} session;

typedef struct blob {
    char repo[64];
    char digest[80];
    size_t size;
} blob;

/* The fake registry's state, guarded by mu. */
static struct fake {
    struct MHD_Daemon *d, *tls;
    int port, tls_port;
    char host[64];
    char *tls_cert, *tls_key; /* PEM of T's self-signed certificate and key */
    pthread_mutex_t mu;
    session sessions[MAX_SESSIONS];
    blob blobs[MAX_BLOBS];
    int n_blobs;
    int heads, posts, patches, puts, deletes, manifests, tokens;
    size_t min_patch;      /* smallest PATCH body */
    int fail_puts;         /* flaky/app: PUTs still to answer 503 */
    const void *copy_body; /* copysrc/app: what a blob GET answers, whatever the digest */
    size_t copy_len;
    int copy_gets;
    int streamed_patches;    /* PATCHes sent with chunked transfer encoding */
    char scopes[512];        /* scope parameters of the last token request, joined by "|" */
    char manifest_type[128]; /* Content-Type of the last manifest PUT */
    int storage_heads;       /* HEADs of /storage/ (where the redir repositories point) */
    bool storage_auth;       /* one of them carried an Authorization header */
} F;

/* Per-request state: the body as it arrives. */
typedef struct req {
    sw_buf body;
    bool answered; /* a response was queued before the body arrived */
} req;

static void digest_of(const void *data, size_t len, char out[80])
{
    unsigned char md[32];
    unsigned int n;
    EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
    memcpy(out, "sha256:", 7);
    sw_hex(md, 32, out + 7);
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *body,
                             const char *const *headers)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    for (size_t i = 0; headers && headers[i]; i += 2)
        MHD_add_response_header(r, headers[i], headers[i + 1]);
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result reply_error(struct MHD_Connection *c, unsigned status, const char *code,
                                   const char *msg)
{
    char body[512];
    snprintf(body, sizeof(body), "{\"errors\":[{\"code\":\"%s\",\"message\":\"%s\"}]}", code, msg);
    return reply(c, status, body, NULL);
}

static const char *hdr(struct MHD_Connection *c, const char *name)
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
    return v ? v : "";
}

static const char *arg(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

static bool starts(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

/* ---- the fake's storage (callers hold F.mu) ---- */

static bool has_blob(const char *repo, const char *digest, size_t *size)
{
    for (int i = 0; i < F.n_blobs; i++)
        if (strcmp(F.blobs[i].repo, repo) == 0 && strcmp(F.blobs[i].digest, digest) == 0) {
            if (size)
                *size = F.blobs[i].size;
            return true;
        }
    return false;
}

static void add_blob(const char *repo, const char *digest, size_t size)
{
    if (has_blob(repo, digest, NULL) || F.n_blobs == MAX_BLOBS)
        return;
    blob *b = &F.blobs[F.n_blobs++];
    sw_strlcpy(b->repo, repo, sizeof(b->repo));
    sw_strlcpy(b->digest, digest, sizeof(b->digest));
    b->size = size;
}

static int new_session(const char *repo)
{
    for (int i = 0; i < MAX_SESSIONS; i++)
        if (!F.sessions[i].used) {
            F.sessions[i].used = true;
            sw_strlcpy(F.sessions[i].repo, repo, sizeof(F.sessions[i].repo));
            sw_buf_init(&F.sessions[i].data, 64 * 1024 * 1024);
            return i;
        }
    return -1;
}

static void end_session(int id)
{
    sw_buf_dispose(&F.sessions[id].data);
    F.sessions[id].used = false;
}

/* ---- auth ---- */

static enum MHD_Result collect_scope(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    if (strcmp(key, "scope") == 0) {
        if (F.scopes[0])
            strncat(F.scopes, "|", sizeof(F.scopes) - strlen(F.scopes) - 1);
        strncat(F.scopes, value, sizeof(F.scopes) - strlen(F.scopes) - 1);
    }
    return MHD_YES;
}

/* /token: "push" when a scope grants push, else "pull". */
static enum MHD_Result serve_token(struct MHD_Connection *c)
{
    F.tokens++;
    F.scopes[0] = '\0';
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_scope, NULL);
    bool push = strstr(F.scopes, ":pull,push") != NULL;
    return reply(c, 200, push ? "{\"token\":\"push\"}" : "{\"token\":\"pull\"}", NULL);
}

/* The token realm of a repository behind tokens: the fake itself for token/app; T for tokfar
 * (by another name: another host) and toknear (its own endpoint when reached on T). */
static void token_realm(const char *url, char *out, size_t n)
{
    if (starts(url, "/v2/tokfar/"))
        snprintf(out, n, "https://localhost:%d/token", F.tls_port);
    else if (starts(url, "/v2/toknear/"))
        snprintf(out, n, "https://127.0.0.1:%d/token", F.tls_port);
    else
        snprintf(out, n, "http://%s/token", F.host);
}

/* token/app, tokfar/app, toknear/app: HEAD needs any token, writes need "push"; the challenge
 * names the scope the request needs, as distribution does (plus the source's pull for a
 * mount). */
static bool token_denied(struct MHD_Connection *c, const char *method, const char *url,
                         enum MHD_Result *ret)
{
    bool write = strcmp(method, "HEAD") != 0 && strcmp(method, "GET") != 0;
    const char *auth = hdr(c, "Authorization");
    if (strcmp(auth, "Bearer push") == 0 || (!write && strcmp(auth, "Bearer pull") == 0))
        return false;
    char chal[512], realm[128], repo[64];
    const char *from = arg(c, "from");
    size_t n = strcspn(url + 4, "/");
    n += strcspn(url + 4 + n + 1, "/") + 1; /* "<ns>/<name>" */
    snprintf(repo, sizeof(repo), "%.*s", (int)n, url + 4);
    token_realm(url, realm, sizeof(realm));
    snprintf(chal, sizeof(chal),
             "Bearer realm=\"%s\",service=\"fake\","
             "scope=\"repository:%s:%s%s%s%s\"",
             realm, repo, write ? "pull,push" : "pull", from ? " repository:" : "",
             from ? from : "", from ? ":pull" : "");
    const char *h[] = {"WWW-Authenticate", chal, NULL};
    *ret = reply(c, 401, "{\"errors\":[{\"code\":\"UNAUTHORIZED\"}]}", h);
    return true;
}

/* ---- uploads ---- */

/* "/v2/<repo>/blobs/uploads/<id>" into repo and id (-1 when absent or unknown). */
static bool upload_url(const char *url, char repo[64], int *id)
{
    const char *p = strstr(url, "/blobs/uploads/");
    if (!starts(url, "/v2/") || !p || (size_t)(p - url - 4) >= 64)
        return false;
    memcpy(repo, url + 4, (size_t)(p - url - 4));
    repo[p - url - 4] = '\0';
    const char *tail = p + strlen("/blobs/uploads/");
    *id = -1;
    if (*tail) {
        uint64_t v;
        if (sw_str_to_u64(tail, &v) == 0 && v < MAX_SESSIONS && F.sessions[v].used)
            *id = (int)v;
    }
    return true;
}

/* The session's Location: relative after POST, absolute (with a query) after PATCH; query/app
 * answers a PATCH with a query-only reference, frag/app adds fragments, longloc/app pads its
 * first Location to ~4 KB (fine alone, too long once the commit's ?digest= is added). */
static void session_location(const char *repo, int id, bool absolute, char *out, size_t n)
{
    char pad[4001];
    if (strcmp(repo, "otherhost/app") == 0)
        snprintf(out, n, "http://elsewhere.example:%d/v2/%s/blobs/uploads/%d", F.port, repo, id);
    else if (strcmp(repo, "query/app") == 0 && absolute)
        snprintf(out, n, "?_state=2");
    else if (strcmp(repo, "frag/app") == 0)
        snprintf(out, n, "%s%s/v2/%s/blobs/uploads/%d%s#frag", absolute ? "http://" : "",
                 absolute ? F.host : "", repo, id, absolute ? "?_state=abc" : "");
    else if (strcmp(repo, "longloc/app") == 0 && !absolute) {
        memset(pad, 'x', sizeof(pad) - 1);
        pad[sizeof(pad) - 1] = '\0';
        snprintf(out, n, "/v2/%s/blobs/uploads/%d?_pad=%s", repo, id, pad);
    } else if (absolute)
        snprintf(out, n, "http://%s/v2/%s/blobs/uploads/%d?_state=abc", F.host, repo, id);
    else
        snprintf(out, n, "/v2/%s/blobs/uploads/%d", repo, id);
}

static enum MHD_Result post_upload(struct MHD_Connection *c, const char *repo)
{
    F.posts++;
    const char *mount = arg(c, "mount"), *from = arg(c, "from");
    if (mount && from && has_blob(from, mount, NULL)) {
        size_t size = 0;
        has_blob(from, mount, &size);
        /* nodigest/ok and nodigest/lie answer 201 without Docker-Content-Digest; nodigest/lie
         * did not even mount. */
        if (strcmp(repo, "nodigest/lie") != 0)
            add_blob(repo, mount, size);
        const char *h[] = {"Docker-Content-Digest", mount, NULL};
        return reply(c, 201, "", starts(repo, "nodigest/") ? NULL : h);
    }
    int id = new_session(repo);
    if (id < 0)
        return reply_error(c, 500, "UNKNOWN", "too many sessions");
    char loc[4200];
    session_location(repo, id, false, loc, sizeof(loc));
    const char *h[] = {"Location", loc, "Range", "0-0", NULL, NULL, NULL};
    if (strcmp(repo, "minchunk/app") == 0)
        h[4] = "OCI-Chunk-Min-Length", h[5] = "100000";
    return reply(c, 202, "", h);
}

/* Appends a chunk after checking its type and Content-Range (when present). */
static bool take_chunk(struct MHD_Connection *c, session *s, const req *rq, bool range_required)
{
    if (strcmp(hdr(c, "Content-Type"), "application/octet-stream") != 0)
        return false;
    const char *range = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Range");
    if (rq->body.len && (range || range_required)) {
        char want[64];
        snprintf(want, sizeof(want), "%zu-%zu", s->data.len, s->data.len + rq->body.len - 1);
        if (!range || strcmp(range, want) != 0)
            return false;
    }
    sw_buf_put(&s->data, rq->body.ptr, rq->body.len);
    return true;
}

static enum MHD_Result patch_upload(struct MHD_Connection *c, const char *repo, int id,
                                    const req *rq)
{
    F.patches++;
    if (strcmp(repo, "patchfail/app") == 0)
        return reply_error(c, 503, "UNAVAILABLE", "try later");
    if (id < 0)
        return reply_error(c, 404, "BLOB_UPLOAD_UNKNOWN", "blob upload unknown to registry");
    if (F.min_patch == 0 || rq->body.len < F.min_patch)
        F.min_patch = rq->body.len;
    /* A chunked (streamed) PATCH carries no Content-Range, as docker push sends it; a PATCH
     * of known length must say where it goes. */
    const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
    bool streamed = te && strcasecmp(te, "chunked") == 0;
    if (streamed)
        F.streamed_patches++;
    if (!take_chunk(c, &F.sessions[id], rq, !streamed))
        return reply_error(c, 416, "BLOB_UPLOAD_INVALID", "bad range or type");
    char loc[4200], range[64];
    session_location(repo, id, true, loc, sizeof(loc));
    snprintf(range, sizeof(range), "0-%zu", F.sessions[id].data.len - 1);
    const char *h[] = {"Location", loc, "Range", range, NULL};
    return reply(c, 202, "", h);
}

static enum MHD_Result put_upload(struct MHD_Connection *c, const char *repo, int id, const req *rq)
{
    F.puts++;
    if (strcmp(repo, "flaky/app") == 0 && F.fail_puts > 0) {
        F.fail_puts--;
        return reply_error(c, 503, "UNAVAILABLE", "try later");
    }
    if (id < 0)
        return reply_error(c, 404, "BLOB_UPLOAD_UNKNOWN", "blob upload unknown to registry");
    session *s = &F.sessions[id];
    const char *want = arg(c, "digest"), *st = arg(c, "_state");
    char got[80];
    if (strcmp(repo, "query/app") == 0 && (!st || strcmp(st, "2") != 0))
        return reply_error(c, 400, "BLOB_UPLOAD_INVALID", "stale _state");
    if (strcmp(repo, "early/app") == 0 && want) { /* hostile: commits whatever it has */
        end_session(id);
        const char *h[] = {"Docker-Content-Digest", want, NULL};
        return reply(c, 201, "", h);
    }
    if (!take_chunk(c, s, rq, false) || !want)
        return reply_error(c, 400, "BLOB_UPLOAD_INVALID", "bad chunk");
    digest_of(s->data.ptr ? s->data.ptr : "", s->data.len, got);
    if (strcmp(got, want) != 0) {
        end_session(id);
        return reply_error(c, 400, "DIGEST_INVALID",
                           "provided digest did not match uploaded content");
    }
    add_blob(repo, got, s->data.len);
    end_session(id);
    const char *h[] = {"Docker-Content-Digest", got, NULL};
    return reply(c, 201, "", h);
}

static enum MHD_Result route_upload(struct MHD_Connection *c, const char *method, const char *url,
                                    const req *rq)
{
    char repo[64];
    int id;
    if (!upload_url(url, repo, &id))
        return reply_error(c, 404, "NAME_UNKNOWN", "bad upload url");
    if (strcmp(method, "POST") == 0)
        return post_upload(c, repo);
    if (strcmp(method, "PATCH") == 0)
        return patch_upload(c, repo, id, rq);
    if (strcmp(method, "PUT") == 0)
        return put_upload(c, repo, id, rq);
    if (strcmp(method, "DELETE") == 0) {
        F.deletes++;
        if (id < 0)
            return reply_error(c, 404, "BLOB_UPLOAD_UNKNOWN", "blob upload unknown to registry");
        end_session(id);
        return reply(c, 204, "", NULL);
    }
    return reply_error(c, 405, "UNSUPPORTED", "method");
}

/* ---- blobs and manifests ---- */

static ssize_t no_body(void *cls, uint64_t pos, char *buf, size_t max)
{
    return MHD_CONTENT_READER_END_WITH_ERROR;
}

/* 200 with the size of repo's blob digest (badsize/app: one byte more), or 404. */
static enum MHD_Result head_found(struct MHD_Connection *c, const char *repo, const char *digest)
{
    size_t size = 0;
    if (!has_blob(repo, digest, &size))
        return reply(c, 404, "", NULL);
    if (strcmp(repo, "badsize/app") == 0)
        size++;
    /* A response of the blob's size: MHD sends its Content-Length and, for HEAD, no body. */
    struct MHD_Response *r = MHD_create_response_from_callback(size, 4096, no_body, NULL, NULL);
    MHD_add_response_header(r, "Docker-Content-Digest", digest);
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

/* redir/app answers 307, redir302/app 302, both to /storage/redir/app/<digest> on "another
 * host" (localhost instead of 127.0.0.1). */
static enum MHD_Result head_blob(struct MHD_Connection *c, const char *url)
{
    F.heads++;
    const char *p = strstr(url, "/blobs/");
    char repo[64], loc[256];
    size_t n = (size_t)(p - url - 4);
    if (n >= sizeof(repo))
        return reply(c, 404, "", NULL);
    memcpy(repo, url + 4, n);
    repo[n] = '\0';
    if (strcmp(repo, "redir/app") == 0 || strcmp(repo, "redir302/app") == 0) {
        snprintf(loc, sizeof(loc), "http://localhost:%d/storage/redir/app/%s", F.port, p + 7);
        const char *h[] = {"Location", loc, NULL};
        return reply(c, strcmp(repo, "redir/app") == 0 ? 307 : 302, "", h);
    }
    return head_found(c, repo, p + 7);
}

/* HEAD /storage/<repo>/<digest>: the blob store a HEAD was redirected to. */
static enum MHD_Result head_storage(struct MHD_Connection *c, const char *url)
{
    char repo[64];
    const char *slash = strrchr(url, '/');
    size_t n = (size_t)(slash - url) - strlen("/storage/");
    F.storage_heads++;
    if (hdr(c, "Authorization")[0])
        F.storage_auth = true;
    if (n >= sizeof(repo))
        return reply(c, 404, "", NULL);
    memcpy(repo, url + strlen("/storage/"), n);
    repo[n] = '\0';
    return head_found(c, repo, slash + 1);
}

/* GET of a blob of copysrc/app: F.copy_body (the test decides whether it matches the digest). */
static enum MHD_Result get_blob(struct MHD_Connection *c, const char *url)
{
    if (!starts(url, "/v2/copysrc/app/blobs/") || !F.copy_body)
        return reply_error(c, 404, "BLOB_UNKNOWN", "blob unknown to registry");
    F.copy_gets++;
    struct MHD_Response *r =
        MHD_create_response_from_buffer(F.copy_len, (void *)F.copy_body, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result put_manifest(struct MHD_Connection *c, const char *url, const req *rq)
{
    F.manifests++;
    sw_strlcpy(F.manifest_type, hdr(c, "Content-Type"), sizeof(F.manifest_type));
    if (starts(url, "/v2/missing/app/"))
        return reply_error(c, 400, "MANIFEST_BLOB_UNKNOWN", "blob unknown to registry");
    char got[80];
    digest_of(rq->body.ptr ? rq->body.ptr : "", rq->body.len, got);
    if (starts(url, "/v2/liar/app/"))
        got[7] = got[7] == '0' ? '1' : '0';
    const char *h[] = {"Docker-Content-Digest", got, NULL};
    return reply(c, 201, "", h);
}

static enum MHD_Result route(struct MHD_Connection *c, const char *method, const char *url,
                             const req *rq)
{
    enum MHD_Result ret;
    if (strcmp(url, "/v2/") == 0)
        return reply(c, 200, "{}", NULL);
    if (strcmp(url, "/token") == 0)
        return serve_token(c);
    if ((starts(url, "/v2/token/app/") || starts(url, "/v2/tokfar/app/") ||
         starts(url, "/v2/toknear/app/")) &&
        token_denied(c, method, url, &ret))
        return ret;
    if (starts(url, "/storage/") && strcmp(method, "HEAD") == 0)
        return head_storage(c, url);
    if (strstr(url, "/blobs/uploads/"))
        return route_upload(c, method, url, rq);
    if (strstr(url, "/blobs/") && strcmp(method, "HEAD") == 0)
        return head_blob(c, url);
    if (strstr(url, "/blobs/") && strcmp(method, "GET") == 0)
        return get_blob(c, url);
    if (strstr(url, "/manifests/") && strcmp(method, "PUT") == 0)
        return put_manifest(c, url, rq);
    return reply_error(c, 404, "NAME_UNKNOWN", "repository name not known to registry");
}

/* early/app: a PATCH answered 202 at once, before any of its body is read. */
static enum MHD_Result early_answer(struct MHD_Connection *c, req *rq)
{
    pthread_mutex_lock(&F.mu);
    F.patches++;
    pthread_mutex_unlock(&F.mu);
    rq->answered = true;
    return reply(c, 202, "", NULL);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls)
{
    req *rq = *con_cls;
    if (!rq) { /* first call: headers only */
        rq = sw_calloc(1, sizeof(*rq));
        sw_buf_init(&rq->body, 64 * 1024 * 1024);
        *con_cls = rq;
        if (strcmp(method, "PATCH") == 0 && starts(url, "/v2/early/app/"))
            return early_answer(c, rq);
        return MHD_YES;
    }
    if (rq->answered) { /* the rest of a body nobody reads */
        *upload_size = 0;
        return MHD_YES;
    }
    if (*upload_size) {
        sw_buf_put(&rq->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    pthread_mutex_lock(&F.mu);
    enum MHD_Result ret = route(c, method, url, rq);
    pthread_mutex_unlock(&F.mu);
    return ret;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    req *rq = *con_cls;
    if (!rq)
        return;
    sw_buf_dispose(&rq->body);
    sw_free(rq);
    *con_cls = NULL;
}

/* The PEM text of a certificate (x) or private key (pk), sw_malloc'd. */
static char *pem_of(X509 *x, EVP_PKEY *pk)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *p = NULL;
    if (x ? PEM_write_bio_X509(b, x) : PEM_write_bio_PrivateKey(b, pk, NULL, NULL, 0, NULL, NULL)) {
        long n = BIO_get_mem_data(b, &p);
        p = sw_strndup(p, (size_t)n);
    }
    BIO_free(b);
    return p;
}

/* A self-signed certificate for T: no client trusts it. */
static bool make_cert(void)
{
    EVP_PKEY *pk = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    X509_NAME *name = X509_get_subject_name(x);
    bool ok = pk && x && X509_set_version(x, 2) && ASN1_INTEGER_set(X509_get_serialNumber(x), 1) &&
              X509_gmtime_adj(X509_getm_notBefore(x), -3600) &&
              X509_gmtime_adj(X509_getm_notAfter(x), 86400) && X509_set_pubkey(x, pk) &&
              X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                         (const unsigned char *)"127.0.0.1", -1, -1, 0) &&
              X509_set_issuer_name(x, name) && X509_sign(x, pk, EVP_sha256());
    if (ok) {
        F.tls_cert = pem_of(x, NULL);
        F.tls_key = pem_of(NULL, pk);
    }
    X509_free(x);
    EVP_PKEY_free(pk);
    return ok && F.tls_cert && F.tls_key;
}

/* The fake on 127.0.0.1, over HTTPS (T) when tls. */
static struct MHD_Daemon *start_daemon(bool tls, int *port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD;
    struct MHD_Daemon *d =
        tls ? MHD_start_daemon(flags | MHD_USE_TLS, 0, NULL, NULL, handler, NULL,
                               MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED, completed,
                               NULL, MHD_OPTION_HTTPS_MEM_KEY, F.tls_key, MHD_OPTION_HTTPS_MEM_CERT,
                               F.tls_cert, MHD_OPTION_END)
            : MHD_start_daemon(flags, 0, NULL, NULL, handler, NULL, MHD_OPTION_SOCK_ADDR, &sa,
                               MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
    if (d)
        *port = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port;
    return d;
}

static int start_fake(void **state)
{
    pthread_mutex_init(&F.mu, NULL);
    F.d = start_daemon(false, &F.port);
    if (!F.d || !make_cert() || !(F.tls = start_daemon(true, &F.tls_port)))
        return -1;
    snprintf(F.host, sizeof(F.host), "127.0.0.1:%d", F.port);
    return 0;
}

static int stop_fake(void **state)
{
    MHD_stop_daemon(F.d);
    MHD_stop_daemon(F.tls);
    sw_free(F.tls_cert);
    sw_free(F.tls_key);
    for (int i = 0; i < MAX_SESSIONS; i++)
        if (F.sessions[i].used)
            end_session(i);
    pthread_mutex_destroy(&F.mu);
    return 0;
}

static int setup(void **state)
{
    sw_registry *r;
    sw_registry_opts o = {.timeout_ms = 5000, .retries = 2};
    assert_int_equal(sw_registry_new(&r, &o), 0);
    *state = r;
    pthread_mutex_lock(&F.mu);
    F.heads = F.posts = F.patches = F.puts = F.deletes = F.manifests = F.tokens = 0;
    F.min_patch = 0;
    F.fail_puts = 0;
    F.copy_body = NULL;
    F.copy_gets = 0;
    F.streamed_patches = 0;
    F.storage_heads = 0;
    F.storage_auth = false;
    pthread_mutex_unlock(&F.mu);
    return 0;
}

static int teardown(void **state)
{
    sw_registry_free(*state);
    return 0;
}

static const sw_registry_call insecure = {.creds = NULL, .insecure = true};

static sw_ref ref_of(const char *repo_tag)
{
    char s[512];
    sw_ref r;
    snprintf(s, sizeof(s), "%s/%s", F.host, repo_tag);
    if (sw_ref_parse(s, &r) != 0)
        fail_msg("bad test ref %s: %s", s, sw_error_msg());
    return r;
}

/* n bytes of a pattern that differs per seed, and its digest. */
static unsigned char *pattern(size_t n, unsigned seed, char digest[80])
{
    unsigned char *p = sw_malloc(n ? n : 1);
    uint32_t x = 2463534242u ^ seed;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        p[i] = (unsigned char)x;
    }
    digest_of(p, n, digest);
    return p;
}

#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != 0)                                                                              \
            fail_msg("%s: %d %s", #call, rc_, sw_error_msg());                                     \
    } while (0)

static void test_push__chunked_upload(void **state)
{
    sw_registry *r = *state;
    sw_ref repo = ref_of("plain/app");
    char digest[80];
    size_t n = 300 * 1024;
    unsigned char *data = pattern(n, 1, digest);
    sw_blob_upload *u = NULL;
    CHECK(sw_registry_upload_start(r, &insecure, &repo, &u));
    sw_registry_upload_set_chunk_size(u, 64 * 1024);
    /* Odd write sizes, one larger than a chunk (sent straight from our memory). */
    size_t off = 0, sizes[] = {1, 10000, 70000, 4095, 150000};
    for (size_t i = 0; off < n; i++) {
        size_t k = sizes[i % 5] < n - off ? sizes[i % 5] : n - off;
        CHECK(sw_registry_upload_write(u, data + off, k));
        off += k;
    }
    assert_int_equal(sw_registry_upload_size(u), n);
    CHECK(sw_registry_upload_commit(u, digest));
    assert_int_equal(F.posts, 1);
    assert_int_equal(F.patches, 4); /* 4 x 64 KiB, the last 44 KiB with the PUT */
    assert_int_equal(F.puts, 1);
    assert_int_equal(F.min_patch, 64 * 1024);
    bool exists = false;
    int64_t size = 0;
    CHECK(sw_registry_blob_exists(r, &insecure, &repo, digest, &exists, &size));
    assert_true(exists);
    assert_int_equal(size, n);
    sw_push_stats st;
    sw_registry_push_stats(r, &st);
    assert_int_equal(st.bytes, n);
    assert_int_equal(st.upload_sessions, 1);
    assert_int_equal(st.blob_heads, 1);
    sw_free(data);
}

static void test_push__one_shot_and_existing(void **state)
{
    sw_registry *r = *state;
    sw_ref repo = ref_of("plain/app");
    char digest[80];
    unsigned char *data = pattern(5000, 2, digest);
    sw_blob_pushed how = 0;
    CHECK(sw_registry_push_blob(r, &insecure, &repo, digest, data, 5000, NULL, &how));
    assert_int_equal(how, SW_BLOB_UPLOADED);
    assert_int_equal(F.heads, 1);
    assert_int_equal(F.posts, 1);
    assert_int_equal(F.patches, 0); /* small: one PUT */
    assert_int_equal(F.puts, 1);
    /* Again: HEAD says it exists, nothing else is sent. */
    CHECK(sw_registry_push_blob(r, &insecure, &repo, digest, data, 5000, NULL, &how));
    assert_int_equal(how, SW_BLOB_EXISTED);
    assert_int_equal(F.heads, 2);
    assert_int_equal(F.posts, 1);
    assert_int_equal(F.puts, 1);
    /* The empty blob. */
    char empty[80];
    digest_of("", 0, empty);
    CHECK(sw_registry_push_blob(r, &insecure, &repo, empty, NULL, 0, NULL, &how));
    assert_int_equal(how, SW_BLOB_UPLOADED);
    sw_free(data);
}

static void test_push__digest_invalid(void **state)
{
    sw_registry *r = *state;
    sw_ref repo = ref_of("plain/app");
    char digest[80], other[80];
    unsigned char *data = pattern(100000, 3, digest);
    digest_of("something else", 14, other);
    sw_blob_upload *u = NULL;
    CHECK(sw_registry_upload_start(r, &insecure, &repo, &u));
    sw_registry_upload_set_chunk_size(u, 32768);
    CHECK(sw_registry_upload_write(u, data, 100000));
    assert_int_equal(sw_registry_upload_commit(u, other), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "DIGEST_INVALID"));
    assert_non_null(strstr(sw_error_msg(), other));
    assert_int_equal(F.deletes, 1); /* cancelled; the fake had ended it: 404 ignored */
    /* Not a digest at all: refused before any request. */
    CHECK(sw_registry_upload_start(r, &insecure, &repo, &u));
    assert_int_equal(sw_registry_upload_commit(u, "sha256:nope"), SW_EINVALID);
    sw_free(data);
}

static void test_push__patch_failure_is_sticky(void **state)
{
    sw_registry *r = *state;
    sw_ref repo = ref_of("patchfail/app");
    char digest[80];
    unsigned char *data = pattern(100000, 4, digest);
    sw_blob_upload *u = NULL;
    CHECK(sw_registry_upload_start(r, &insecure, &repo, &u));
    sw_registry_upload_set_chunk_size(u, 65536);
    /* The first chunk's PATCH runs behind the writer; its 503 surfaces when the next chunk
     * is full (or at the commit). */
    assert_int_equal(sw_registry_upload_write(u, data, 100000), 0);
    assert_int_equal(sw_registry_upload_write(u, data, 65536), SW_EUNAVAILABLE);
    assert_non_null(strstr(sw_error_msg(), "503"));
    assert_int_equal(F.patches, 1); /* a chunk is never re-sent */
    sw_error_clear();
    assert_int_equal(sw_registry_upload_write(u, data, 10), SW_EUNAVAILABLE);
    assert_non_null(strstr(sw_error_msg(), "503"));
    assert_int_equal(F.patches, 1);
    sw_registry_upload_abort(u);
    assert_int_equal(F.deletes, 1);
    /* A PATCH still in flight at the commit: the commit waits for it and fails with it. */
    CHECK(sw_registry_upload_start(r, &insecure, &repo, &u));
    sw_registry_upload_set_chunk_size(u, 65536);
    assert_int_equal(sw_registry_upload_write(u, data, 100000), 0);
    assert_int_equal(sw_registry_upload_commit(u, digest), SW_EUNAVAILABLE);
    assert_non_null(strstr(sw_error_msg(), "503"));
    assert_int_equal(F.patches, 2);
    assert_int_equal(F.deletes, 2);
    sw_free(data);
}

/* Streamed mode: 3 MB written in odd pieces go out as one chunked PATCH, then the PUT; a PATCH
 * the registry refuses fails the commit with its answer. */
static void test_push__streamed_upload(void **state)
{
    sw_registry *r = *state;
    sw_ref repo = ref_of("stream/app");
    char digest[80];
    size_t n = 3 * 1024 * 1024 + 77;
    unsigned char *data = pattern(n, 5, digest);
    sw_blob_upload *u = NULL;
    CHECK(sw_registry_upload_start(r, &insecure, &repo, &u));
    CHECK(sw_registry_upload_set_streamed(u));
    assert_int_equal(sw_registry_upload_set_streamed(u), SW_EINVALID); /* once, before writes */
    for (size_t off = 0; off < n; off += 99991)
        CHECK(sw_registry_upload_write(u, data + off, n - off < 99991 ? n - off : 99991));
    CHECK(sw_registry_upload_commit(u, digest));
    assert_int_equal(F.patches, 1);
    assert_int_equal(F.streamed_patches, 1);
    assert_true(has_blob("stream/app", digest, NULL));

    sw_ref bad = ref_of("patchfail/app");
    CHECK(sw_registry_upload_start(r, &insecure, &bad, &u));
    CHECK(sw_registry_upload_set_streamed(u));
    int error = 0;
    for (size_t off = 0; off < n && error == 0; off += 99991)
        error = sw_registry_upload_write(u, data + off, n - off < 99991 ? n - off : 99991);
    if (error == 0)
        error = sw_registry_upload_commit(u, digest);
    else
        sw_registry_upload_abort(u);
    assert_int_equal(error, SW_EUNAVAILABLE);
    assert_non_null(strstr(sw_error_msg(), "503"));
    assert_false(has_blob("patchfail/app", digest, NULL));
    sw_free(data);
}

/* A registry that answers the streamed PATCH at once, without reading its body: what was
 * written never reached it, and the commit must fail instead of PUTting an empty upload. The
 * write itself usually succeeds (it fits in the socket pair), but on a loaded machine the early
 * answer can arrive first and fail the write already: either way nothing is PUT. */
static void test_push__streamed_unread(void **state)
{
    sw_registry *r = *state;
    sw_ref repo = ref_of("early/app");
    char digest[80];
    unsigned char *data = pattern(100000, 14, digest);
    sw_blob_upload *u = NULL;
    CHECK(sw_registry_upload_start(r, &insecure, &repo, &u));
    CHECK(sw_registry_upload_set_streamed(u));
    int written = sw_registry_upload_write(u, data, 100000);
    if (written == 0) {
        assert_int_equal(sw_registry_upload_commit(u, digest), SW_EUNAVAILABLE);
        assert_non_null(strstr(sw_error_msg(), "before reading all of it"));
    } else {
        assert_int_equal(written, SW_EUNAVAILABLE);
        sw_registry_upload_abort(u);
    }
    assert_int_equal(F.patches, 1);
    assert_int_equal(F.puts, 0);
    sw_free(data);
}

/* copy_blob: a 503 on the commit restarts the whole copy (a new GET, a new session); a body
 * whose digest is not the one asked for fails at once, and nothing is stored either way but
 * the good copy. */
static void test_push__copy_blob(void **state)
{
    sw_registry *r = *state;
    sw_ref src = ref_of("copysrc/app"), dst = ref_of("flaky/app");
    char digest[80], other[80];
    unsigned char *data = pattern(300000, 9, digest);
    sw_free(pattern(10, 10, other));
    pthread_mutex_lock(&F.mu);
    F.copy_body = data;
    F.copy_len = 300000;
    F.fail_puts = 1;
    pthread_mutex_unlock(&F.mu);
    CHECK(sw_registry_copy_blob(r, &insecure, &src, &insecure, &dst, digest, 300000));
    assert_int_equal(F.copy_gets, 2); /* the 503'd PUT restarted it once */
    assert_true(has_blob("flaky/app", digest, NULL));
    F.copy_gets = 0;
    assert_int_equal(sw_registry_copy_blob(r, &insecure, &src, &insecure, &dst, other, 300000),
                     SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "digest mismatch"));
    assert_int_equal(F.copy_gets, 1); /* final: no restart */
    assert_false(has_blob("flaky/app", other, NULL));
    pthread_mutex_lock(&F.mu);
    F.copy_body = NULL;
    pthread_mutex_unlock(&F.mu);
    sw_free(data);
}

static void test_push__one_shot_restarts(void **state)
{
    sw_registry *r = *state;
    sw_ref repo = ref_of("flaky/app");
    char digest[80];
    unsigned char *data = pattern(20000, 5, digest);
    F.fail_puts = 2;
    sw_blob_pushed how = 0;
    CHECK(sw_registry_push_blob(r, &insecure, &repo, digest, data, 20000, NULL, &how));
    assert_int_equal(how, SW_BLOB_UPLOADED);
    assert_int_equal(F.posts, 3); /* two failed sessions, then one that worked */
    assert_int_equal(F.puts, 3);  /* each PUT sent once */
    assert_int_equal(F.deletes, 2);
    /* More failures than retries (2): the error comes back. */
    unsigned char *d2 = pattern(20000, 6, digest);
    F.fail_puts = 10;
    assert_int_equal(sw_registry_push_blob(r, &insecure, &repo, digest, d2, 20000, NULL, &how),
                     SW_EUNAVAILABLE);
    assert_int_equal(F.fail_puts, 7);
    sw_free(data);
    sw_free(d2);
}

static void test_push__mount(void **state)
{
    sw_registry *r = *state;
    sw_ref src = ref_of("plain/src"), dst = ref_of("plain/dst");
    char digest[80], missing[80];
    unsigned char *data = pattern(4000, 7, digest);
    CHECK(sw_registry_push_blob(r, &insecure, &src, digest, data, 4000, NULL, NULL));
    bool mounted = false;
    sw_blob_upload *u = NULL;
    CHECK(sw_registry_blob_mount(r, &insecure, &dst, digest, 4000, "plain/src", &mounted, &u));
    assert_true(mounted);
    assert_null(u);
    bool exists = false;
    CHECK(sw_registry_blob_exists(r, &insecure, &dst, digest, &exists, NULL));
    assert_true(exists);
    /* A blob the source lacks: the registry opens a session, which we use. */
    unsigned char *m = pattern(3000, 8, missing);
    CHECK(sw_registry_blob_mount(r, &insecure, &dst, missing, 3000, "plain/src", &mounted, &u));
    assert_false(mounted);
    assert_non_null(u);
    CHECK(sw_registry_upload_write(u, m, 3000));
    CHECK(sw_registry_upload_commit(u, missing));
    /* ... or cancel when the caller does not want it. */
    int deletes = F.deletes;
    CHECK(sw_registry_blob_mount(r, &insecure, &dst, digest, 4000, "plain/none", &mounted, NULL));
    assert_false(mounted);
    assert_int_equal(F.deletes, deletes + 1);
    /* The one-shot push mounts. */
    sw_ref third = ref_of("plain/third");
    sw_blob_pushed how = 0;
    int posts = F.posts, puts = F.puts;
    CHECK(sw_registry_push_blob(r, &insecure, &third, digest, data, 4000, "plain/src", &how));
    assert_int_equal(how, SW_BLOB_MOUNTED);
    assert_int_equal(F.posts, posts + 1);
    assert_int_equal(F.puts, puts);
    /* Bad sources. */
    assert_int_equal(
        sw_registry_blob_mount(r, &insecure, &dst, digest, 4000, "Bad Name", &mounted, NULL),
        SW_EINVALID);
    assert_int_equal(
        sw_registry_blob_mount(r, &insecure, &dst, digest, 4000, "a/b:tag", &mounted, NULL),
        SW_EINVALID);
    assert_int_equal(sw_registry_blob_mount(r, &insecure, &dst, digest, 4000, NULL, &mounted, NULL),
                     SW_EINVALID);
    sw_push_stats st;
    sw_registry_push_stats(r, &st);
    assert_int_equal(st.mounts, 2);
    sw_free(data);
    sw_free(m);
}

static void test_push__locations(void **state)
{
    sw_registry *r = *state;
    sw_ref repo = ref_of("otherhost/app");
    sw_blob_upload *u = NULL;
    assert_int_equal(sw_registry_upload_start(r, &insecure, &repo, &u), SW_EUNSUPPORTED);
    assert_non_null(strstr(sw_error_msg(), "another host (elsewhere.example"));
    assert_null(u);
    /* OCI-Chunk-Min-Length raises our chunk size. */
    repo = ref_of("minchunk/app");
    char digest[80];
    unsigned char *data = pattern(250000, 9, digest);
    CHECK(sw_registry_upload_start(r, &insecure, &repo, &u));
    sw_registry_upload_set_chunk_size(u, 65536); /* below the registry's minimum */
    for (size_t off = 0; off < 250000; off += 5000)
        CHECK(sw_registry_upload_write(u, data + off, 5000));
    CHECK(sw_registry_upload_commit(u, digest));
    assert_true(F.min_patch >= 100000);
    sw_free(data);
}

/* Locations a hostile or unusual registry may send: a query-only reference (it keeps the
 * session's path), fragments (curl would drop the ?digest= appended after one), and one so long
 * that the commit's URL would not fit (refused where it is read, not at the commit). */
static void test_push__odd_locations(void **state)
{
    sw_registry *r = *state;
    const char *repos[] = {"query/app", "frag/app"};
    char digest[80];
    unsigned char *data = pattern(100000, 15, digest);
    for (size_t i = 0; i < 2; i++) {
        sw_ref repo = ref_of(repos[i]);
        sw_blob_upload *u = NULL;
        CHECK(sw_registry_upload_start(r, &insecure, &repo, &u));
        sw_registry_upload_set_chunk_size(u, 65536); /* one PATCH, then the PUT */
        CHECK(sw_registry_upload_write(u, data, 100000));
        CHECK(sw_registry_upload_commit(u, digest));
        assert_true(has_blob(repos[i], digest, NULL));
    }
    assert_int_equal(F.patches, 2);
    assert_int_equal(F.puts, 2);
    sw_ref repo = ref_of("longloc/app");
    sw_blob_upload *u = NULL;
    assert_int_equal(sw_registry_upload_start(r, &insecure, &repo, &u), SW_EUNSUPPORTED);
    assert_non_null(strstr(sw_error_msg(), "upload Location too long"));
    assert_null(u);
    sw_free(data);
}

/* A HEAD is only believed when 2xx: a 307 to storage is followed (without credentials), a 302
 * is not, and a blob of another size than ours is not ours. */
static void test_push__head_redirects_and_sizes(void **state)
{
    sw_registry *r = *state;
    sw_ref redir = ref_of("redir/app"), r302 = ref_of("redir302/app");
    char digest[80], absent[80];
    unsigned char *data = pattern(5000, 16, digest);
    digest_of("absent", 6, absent);
    pthread_mutex_lock(&F.mu);
    add_blob("redir/app", digest, 5000);
    pthread_mutex_unlock(&F.mu);
    bool exists = true;
    int64_t size = 0;
    CHECK(sw_registry_blob_exists(r, &insecure, &redir, digest, &exists, &size));
    assert_true(exists);
    assert_int_equal(size, 5000);
    CHECK(sw_registry_blob_exists(r, &insecure, &redir, absent, &exists, &size));
    assert_false(exists);
    assert_int_equal(F.storage_heads, 2);
    assert_false(F.storage_auth);
    CHECK(sw_registry_blob_exists(r, &insecure, &r302, digest, &exists, &size));
    assert_false(exists);
    assert_int_equal(size, -1);
    assert_int_equal(F.storage_heads, 2); /* a 302 is not followed */
    /* badsize/app reports one byte more than it has: the push uploads again. */
    sw_ref bad = ref_of("badsize/app");
    sw_blob_pushed how = 0;
    CHECK(sw_registry_push_blob(r, &insecure, &bad, digest, data, 5000, NULL, &how));
    assert_int_equal(how, SW_BLOB_UPLOADED);
    CHECK(sw_registry_push_blob(r, &insecure, &bad, digest, data, 5000, NULL, &how));
    assert_int_equal(how, SW_BLOB_UPLOADED);
    assert_int_equal(F.puts, 2);
    sw_free(data);
}

/* A mount answered 201 without Docker-Content-Digest is checked by a HEAD: nodigest/ok did
 * mount, nodigest/lie did not (the push then uploads). */
static void test_push__mount_unconfirmed(void **state)
{
    sw_registry *r = *state;
    sw_ref src = ref_of("plain/src2"), ok = ref_of("nodigest/ok"), lie = ref_of("nodigest/lie");
    char digest[80];
    unsigned char *data = pattern(4000, 17, digest);
    CHECK(sw_registry_push_blob(r, &insecure, &src, digest, data, 4000, NULL, NULL));
    bool mounted = false;
    sw_blob_upload *u = NULL;
    CHECK(sw_registry_blob_mount(r, &insecure, &ok, digest, 4000, "plain/src2", &mounted, &u));
    assert_true(mounted);
    assert_null(u);
    /* The right blob but another size than the caller's: not mounted. */
    CHECK(sw_registry_blob_mount(r, &insecure, &ok, digest, 4001, "plain/src2", &mounted, &u));
    assert_false(mounted);
    assert_null(u);
    CHECK(sw_registry_blob_mount(r, &insecure, &lie, digest, 4000, "plain/src2", &mounted, &u));
    assert_false(mounted);
    assert_null(u);
    sw_blob_pushed how = 0;
    CHECK(sw_registry_push_blob(r, &insecure, &lie, digest, data, 4000, "plain/src2", &how));
    assert_int_equal(how, SW_BLOB_UPLOADED);
    assert_true(has_blob("nodigest/lie", digest, NULL));
    sw_push_stats st;
    sw_registry_push_stats(r, &st);
    assert_int_equal(st.mounts, 1);
    sw_free(data);
}

static bool stop_now(void)
{
    return true;
}

/* A stop request ends the pause before a restart: no new session after the first failure. */
static void test_push__restart_pause_stops(void **state)
{
    sw_registry *r;
    sw_registry_opts o = {.timeout_ms = 5000, .retries = 2, .stop = stop_now};
    CHECK(sw_registry_new(&r, &o));
    sw_ref repo = ref_of("flaky/app");
    char digest[80];
    unsigned char *data = pattern(20000, 18, digest);
    F.fail_puts = 10;
    assert_int_equal(sw_registry_push_blob(r, &insecure, &repo, digest, data, 20000, NULL, NULL),
                     SW_EUNAVAILABLE);
    assert_int_equal(F.posts, 1);
    assert_int_equal(F.puts, 1);
    sw_registry_free(r);
    sw_free(data);
}

/* An insecure registry's token realm on another host keeps TLS verification (T's certificate
 * is self-signed: refused); on the registry's own endpoint (reached on T) insecure applies. */
static void test_push__realm_tls(void **state)
{
    sw_registry *r = *state;
    sw_ref far = ref_of("tokfar/app"), near;
    char s[128], digest[80];
    bool exists = true;
    digest_of("realm", 5, digest);
    assert_int_equal(sw_registry_blob_exists(r, &insecure, &far, digest, &exists, NULL),
                     SW_EUNAVAILABLE);
    snprintf(s, sizeof(s), "TLS verification of localhost:%d failed", F.tls_port);
    assert_non_null(strstr(sw_error_msg(), s));
    assert_int_equal(F.tokens, 0);
    snprintf(s, sizeof(s), "127.0.0.1:%d/toknear/app", F.tls_port);
    assert_int_equal(sw_ref_parse(s, &near), 0);
    CHECK(sw_registry_blob_exists(r, &insecure, &near, digest, &exists, NULL));
    assert_false(exists);
    assert_int_equal(F.tokens, 1);
}

static void test_push__fd(void **state)
{
    sw_registry *r = *state;
    sw_ref repo = ref_of("plain/files");
    char digest[80], path[] = "/tmp/sw-push-test.XXXXXX";
    unsigned char *data = pattern(150000, 10, digest);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    assert_int_equal(write(fd, data, 150000), 150000);
    sw_blob_pushed how = 0;
    CHECK(sw_registry_push_blob_fd(r, &insecure, &repo, digest, fd, 150000, NULL, &how));
    assert_int_equal(how, SW_BLOB_UPLOADED);
    char other[80];
    digest_of("x", 1, other);
    assert_int_equal(sw_registry_push_blob_fd(r, &insecure, &repo, other, fd, 200000, NULL, &how),
                     SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "shorter than its size"));
    close(fd);
    sw_free(data);
}

static void test_push__bearer_scopes(void **state)
{
    sw_registry *r = *state;
    sw_ref repo = ref_of("token/app");
    char digest[80];
    unsigned char *data = pattern(3000, 11, digest);
    sw_blob_pushed how = 0;
    /* HEAD asks for pull, the upload for pull,push; the token server sees each scope. */
    CHECK(sw_registry_push_blob(r, &insecure, &repo, digest, data, 3000, NULL, &how));
    assert_int_equal(how, SW_BLOB_UPLOADED);
    assert_string_equal(F.scopes, "repository:token/app:pull,push");
    /* A mount asks for push here and pull on the source, as two scope parameters. */
    unsigned char *d2 = pattern(3000, 12, digest);
    CHECK(sw_registry_push_blob(r, &insecure, &repo, digest, d2, 3000, "token/src", &how));
    assert_int_equal(how, SW_BLOB_UPLOADED);
    assert_string_equal(F.scopes, "repository:token/app:pull,push|repository:token/src:pull");
    /* The push token is cached for the next call. */
    int tokens = F.tokens;
    unsigned char *d3 = pattern(3000, 13, digest);
    sw_blob_upload *u = NULL;
    CHECK(sw_registry_upload_start(r, &insecure, &repo, &u));
    CHECK(sw_registry_upload_write(u, d3, 3000));
    CHECK(sw_registry_upload_commit(u, digest));
    assert_int_equal(F.tokens, tokens);
    sw_free(data);
    sw_free(d2);
    sw_free(d3);
}

static void test_push__manifests(void **state)
{
    sw_registry *r = *state;
    const char *body = "{\"schemaVersion\":2,\"mediaType\":\"" SW_MEDIA_OCI_MANIFEST "\"}";
    size_t len = strlen(body);
    char want[80], got[80];
    digest_of(body, len, want);
    sw_ref ref = ref_of("plain/app:v1");
    CHECK(sw_registry_put_manifest(r, &insecure, &ref, SW_MEDIA_OCI_MANIFEST, body, len, got));
    assert_string_equal(got, want);
    assert_string_equal(F.manifest_type, SW_MEDIA_OCI_MANIFEST);
    /* By digest: the body must hash to it (checked before sending). */
    ref = ref_of("plain/app");
    ref.tag[0] = '\0';
    sw_strlcpy(ref.digest, want, sizeof(ref.digest));
    CHECK(sw_registry_put_manifest(r, &insecure, &ref, SW_MEDIA_OCI_MANIFEST, body, len, NULL));
    int sent = F.manifests;
    digest_of("x", 1, ref.digest);
    assert_int_equal(
        sw_registry_put_manifest(r, &insecure, &ref, SW_MEDIA_OCI_MANIFEST, body, len, NULL),
        SW_EINVALID);
    assert_int_equal(F.manifests, sent);
    /* The registry's complaint about a missing blob. */
    ref = ref_of("missing/app:v1");
    assert_int_equal(
        sw_registry_put_manifest(r, &insecure, &ref, SW_MEDIA_OCI_MANIFEST, body, len, NULL),
        SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "MANIFEST_BLOB_UNKNOWN"));
    /* A registry reporting another digest than the body's. */
    ref = ref_of("liar/app:v1");
    assert_int_equal(
        sw_registry_put_manifest(r, &insecure, &ref, SW_MEDIA_OCI_MANIFEST, body, len, NULL),
        SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "stored manifest"));
    /* No media type, empty body. */
    ref = ref_of("plain/app:v1");
    assert_int_equal(sw_registry_put_manifest(r, &insecure, &ref, "", body, len, NULL),
                     SW_EINVALID);
    assert_int_equal(
        sw_registry_put_manifest(r, &insecure, &ref, SW_MEDIA_OCI_MANIFEST, body, 0, NULL),
        SW_EINVALID);
    sw_push_stats st;
    sw_registry_push_stats(r, &st);
    assert_int_equal(st.manifests, 2);
}

static void test_push__head_and_arguments(void **state)
{
    sw_registry *r = *state;
    sw_ref repo = ref_of("plain/app");
    char digest[80];
    digest_of("y", 1, digest);
    bool exists = false;
    CHECK(sw_registry_blob_exists(r, &insecure, &repo, digest, &exists, NULL));
    assert_false(exists);
    assert_int_equal(sw_registry_blob_exists(r, &insecure, &repo, "md5:1", &exists, NULL),
                     SW_EINVALID);
    assert_int_equal(sw_registry_push_blob(r, &insecure, &repo, digest, NULL, 5, NULL, NULL),
                     SW_EINVALID);
    assert_int_equal(sw_registry_upload_write(NULL, "x", 1), SW_EINVALID);
    assert_int_equal(sw_registry_upload_commit(NULL, digest), SW_EINVALID);
    sw_registry_upload_abort(NULL);
    sw_blob_upload *u = NULL;
    assert_int_equal(sw_registry_upload_start(r, &insecure, NULL, &u), SW_EINVALID);
    /* An unreachable registry. */
    sw_ref down;
    assert_int_equal(sw_ref_parse("127.0.0.1:1/x/y", &down), 0);
    assert_int_equal(sw_registry_upload_start(r, &insecure, &down, &u), SW_EUNAVAILABLE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_push__chunked_upload, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push__one_shot_and_existing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push__digest_invalid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push__patch_failure_is_sticky, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push__one_shot_restarts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push__copy_blob, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push__streamed_upload, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push__streamed_unread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push__mount, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push__locations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push__odd_locations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push__head_redirects_and_sizes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push__mount_unconfirmed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push__restart_pause_stops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push__realm_tls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push__fd, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push__bearer_scopes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push__manifests, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push__head_and_arguments, setup, teardown),
    };
    return cmocka_run_group_tests(tests, start_fake, stop_fake);
}
