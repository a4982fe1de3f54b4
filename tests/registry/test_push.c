/* Unit tests for src/registry/push against an in-process fake registry (libmicrohttpd on
 * 127.0.0.1) that keeps upload sessions and blobs and is strict where the real one is lenient:
 * chunks must be contiguous (416 otherwise) and typed application/octet-stream, the committed
 * content must hash to ?digest=. Scenarios the real registry will not stage: relative and
 * absolute Locations, a Location on another host, OCI-Chunk-Min-Length, a PATCH or PUT
 * answered 503, a registry lying about a digest, a HEAD redirect, and bearer tokens whose
 * scopes are checked. The real registry: test_push_live.c. */
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
    struct MHD_Daemon *d;
    int port;
    char host[64];
    pthread_mutex_t mu;
    session sessions[MAX_SESSIONS];
    blob blobs[MAX_BLOBS];
    int n_blobs;
    int heads, posts, patches, puts, deletes, manifests, tokens;
    size_t min_patch;        /* smallest PATCH body */
    int fail_puts;           /* flaky/app: PUTs still to answer 503 */
    const void *copy_body;   /* copysrc/app: what a blob GET answers, whatever the digest */
    size_t copy_len;
    int copy_gets;
    int streamed_patches; /* PATCHes sent with chunked transfer encoding */
    char scopes[512];        /* scope parameters of the last token request, joined by "|" */
    char manifest_type[128]; /* Content-Type of the last manifest PUT */
} F;

/* Per-request state: the body as it arrives. */
typedef struct req {
    sw_buf body;
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

/* /token: "push" when a scope grants push on token/app, else "pull". */
static enum MHD_Result serve_token(struct MHD_Connection *c)
{
    F.tokens++;
    F.scopes[0] = '\0';
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_scope, NULL);
    bool push = strstr(F.scopes, "repository:token/app:pull,push") != NULL;
    return reply(c, 200, push ? "{\"token\":\"push\"}" : "{\"token\":\"pull\"}", NULL);
}

/* token/app: HEAD needs any token, writes need "push"; the challenge names the scope the
 * request needs, as distribution does (plus the source's pull for a mount). */
static bool token_denied(struct MHD_Connection *c, const char *method, enum MHD_Result *ret)
{
    bool write = strcmp(method, "HEAD") != 0 && strcmp(method, "GET") != 0;
    const char *auth = hdr(c, "Authorization");
    if (strcmp(auth, "Bearer push") == 0 || (!write && strcmp(auth, "Bearer pull") == 0))
        return false;
    char chal[512];
    const char *from = arg(c, "from");
    snprintf(chal, sizeof(chal),
             "Bearer realm=\"http://%s/token\",service=\"fake\","
             "scope=\"repository:token/app:%s%s%s%s\"",
             F.host, write ? "pull,push" : "pull", from ? " repository:" : "", from ? from : "",
             from ? ":pull" : "");
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

/* The session's Location: relative after POST, absolute (with a query) after PATCH. */
static void session_location(const char *repo, int id, bool absolute, char *out, size_t n)
{
    if (strcmp(repo, "otherhost/app") == 0)
        snprintf(out, n, "http://elsewhere.example:%d/v2/%s/blobs/uploads/%d", F.port, repo, id);
    else if (absolute)
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
        add_blob(repo, mount, size);
        const char *h[] = {"Docker-Content-Digest", mount, NULL};
        return reply(c, 201, "", h);
    }
    int id = new_session(repo);
    if (id < 0)
        return reply_error(c, 500, "UNKNOWN", "too many sessions");
    char loc[512];
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
    char loc[512], range[64];
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
    const char *want = arg(c, "digest");
    char got[80];
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

static enum MHD_Result head_blob(struct MHD_Connection *c, const char *url)
{
    F.heads++;
    const char *p = strstr(url, "/blobs/");
    char repo[64];
    size_t n = (size_t)(p - url - 4), size = 0;
    if (n >= sizeof(repo))
        return reply(c, 404, "", NULL);
    memcpy(repo, url + 4, n);
    repo[n] = '\0';
    if (strcmp(repo, "redir/app") == 0) {
        const char *h[] = {"Location", "http://storage.example/x", NULL};
        return reply(c, 307, "", h);
    }
    if (!has_blob(repo, p + 7, &size))
        return reply(c, 404, "", NULL);
    /* A response of the blob's size: MHD sends its Content-Length and, for HEAD, no body. */
    struct MHD_Response *r = MHD_create_response_from_callback(size, 4096, no_body, NULL, NULL);
    MHD_add_response_header(r, "Docker-Content-Digest", p + 7);
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

/* GET of a blob of copysrc/app: F.copy_body (the test decides whether it matches the digest). */
static enum MHD_Result get_blob(struct MHD_Connection *c, const char *url)
{
    if (!starts(url, "/v2/copysrc/app/blobs/") || !F.copy_body)
        return reply_error(c, 404, "BLOB_UNKNOWN", "blob unknown to registry");
    F.copy_gets++;
    struct MHD_Response *r = MHD_create_response_from_buffer(F.copy_len, (void *)F.copy_body,
                                                             MHD_RESPMEM_MUST_COPY);
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
    if (starts(url, "/v2/token/app/") && token_denied(c, method, &ret))
        return ret;
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

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls)
{
    req *rq = *con_cls;
    if (!rq) { /* first call: headers only */
        rq = sw_calloc(1, sizeof(*rq));
        sw_buf_init(&rq->body, 64 * 1024 * 1024);
        *con_cls = rq;
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

static int start_fake(void **state)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    pthread_mutex_init(&F.mu, NULL);
    F.d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL,
                           NULL, handler, NULL, MHD_OPTION_SOCK_ADDR, &sa,
                           MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
    if (!F.d)
        return -1;
    F.port = MHD_get_daemon_info(F.d, MHD_DAEMON_INFO_BIND_PORT)->port;
    snprintf(F.host, sizeof(F.host), "127.0.0.1:%d", F.port);
    return 0;
}

static int stop_fake(void **state)
{
    MHD_stop_daemon(F.d);
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
    CHECK(sw_registry_blob_mount(r, &insecure, &dst, digest, "plain/src", &mounted, &u));
    assert_true(mounted);
    assert_null(u);
    bool exists = false;
    CHECK(sw_registry_blob_exists(r, &insecure, &dst, digest, &exists, NULL));
    assert_true(exists);
    /* A blob the source lacks: the registry opens a session, which we use. */
    unsigned char *m = pattern(3000, 8, missing);
    CHECK(sw_registry_blob_mount(r, &insecure, &dst, missing, "plain/src", &mounted, &u));
    assert_false(mounted);
    assert_non_null(u);
    CHECK(sw_registry_upload_write(u, m, 3000));
    CHECK(sw_registry_upload_commit(u, missing));
    /* ... or cancel when the caller does not want it. */
    int deletes = F.deletes;
    CHECK(sw_registry_blob_mount(r, &insecure, &dst, digest, "plain/none", &mounted, NULL));
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
    assert_int_equal(sw_registry_blob_mount(r, &insecure, &dst, digest, "Bad Name", &mounted, NULL),
                     SW_EINVALID);
    assert_int_equal(sw_registry_blob_mount(r, &insecure, &dst, digest, "a/b:tag", &mounted, NULL),
                     SW_EINVALID);
    assert_int_equal(sw_registry_blob_mount(r, &insecure, &dst, digest, NULL, &mounted, NULL),
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
    sw_ref repo = ref_of("redir/app");
    char digest[80];
    digest_of("y", 1, digest);
    bool exists = false;
    int64_t size = 0;
    CHECK(sw_registry_blob_exists(r, &insecure, &repo, digest, &exists, &size));
    assert_true(exists); /* a redirect to storage means the registry has it */
    assert_int_equal(size, -1);
    repo = ref_of("plain/app");
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
        cmocka_unit_test_setup_teardown(test_push__mount, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push__locations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push__fd, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push__bearer_scopes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push__manifests, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push__head_and_arguments, setup, teardown),
    };
    return cmocka_run_group_tests(tests, start_fake, stop_fake);
}
