/* Unit tests for src/registry/client against an in-process fake registry (libmicrohttpd on
 * 127.0.0.1): plain-http fallback of insecure hosts, Accept list, digest verification, size
 * caps, 404/403, 429 with Retry-After (a stop request ends the wait), 5xx retries, timeouts,
 * bearer tokens (cache, basic credentials to the token server), basic auth, secrets kept out of
 * messages, Link paging (loops, duplicate tags, other repositories), blob redirects and the
 * per-host concurrency limit. The real registry: test_live.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "registry/client.h"
#include "registry/manifest.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/str.h"
#include "util/time.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BIG_BYTES (2 * 1024 * 1024)

static const char config_blob[] = "{\"architecture\":\"amd64\",\"os\":\"linux\","
                                  "\"config\":{\"Env\":[\"A=1\"]},\"rootfs\":{\"type\":\"layers\","
                                  "\"diff_ids\":[]}}";

/* The fake registry's state. */
static struct fake {
    struct MHD_Daemon *d;
    int port;
    char host[64];       /* 127.0.0.1:port */
    char manifest[1024]; /* an OCI manifest whose config is config_blob */
    char manifest_digest[80];
    char config_digest[80];
    char *big;             /* BIG_BYTES of JSON-ish filler */
    atomic_int hits;       /* requests to the current scenario */
    atomic_int token_hits; /* requests to /token */
    atomic_int in_flight, max_in_flight;
} F;

static void digest_of(const char *data, size_t len, char out[80])
{
    unsigned char md[32];
    unsigned int n;
    EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
    memcpy(out, "sha256:", 7);
    sw_hex(md, 32, out + 7);
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *body,
                             size_t len, const char *const *headers)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    for (size_t i = 0; headers && headers[i]; i += 2)
        MHD_add_response_header(r, headers[i], headers[i + 1]);
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result reply_str(struct MHD_Connection *c, unsigned status, const char *body,
                                 const char *const *headers)
{
    return reply(c, status, body, strlen(body), headers);
}

static enum MHD_Result reply_error(struct MHD_Connection *c, unsigned status, const char *code,
                                   const char *msg, const char *const *headers)
{
    char body[512];
    snprintf(body, sizeof(body), "{\"errors\":[{\"code\":\"%s\",\"message\":\"%s\"}]}", code, msg);
    return reply(c, status, body, strlen(body), headers);
}

static const char *hdr(struct MHD_Connection *c, const char *name)
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
    return v ? v : "";
}

static enum MHD_Result serve_manifest(struct MHD_Connection *c, const char *digest_header)
{
    if (!strstr(hdr(c, "Accept"), SW_MEDIA_OCI_MANIFEST)) /* like docker-registry 2.8 */
        return reply_error(c, 404, "MANIFEST_UNKNOWN", "manifest unknown", NULL);
    const char *h[] = {"Content-Type", SW_MEDIA_OCI_MANIFEST, "Docker-Content-Digest",
                       digest_header, NULL};
    if (!digest_header)
        h[2] = NULL;
    return reply(c, 200, F.manifest, strlen(F.manifest), h);
}

static ssize_t big_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    if (pos >= BIG_BYTES)
        return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = BIG_BYTES - pos < max ? BIG_BYTES - pos : max;
    memset(buf, ' ', n);
    return (ssize_t)n;
}

static enum MHD_Result serve_chunked_big(struct MHD_Connection *c)
{
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 65536, big_reader, NULL, NULL);
    MHD_add_response_header(r, "Content-Type", SW_MEDIA_OCI_MANIFEST);
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

static bool starts(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

/* /token: alice:pw gets "good-token", anonymous gets "anon-token", anything else 401. */
static enum MHD_Result serve_token(struct MHD_Connection *c)
{
    atomic_fetch_add(&F.token_hits, 1);
    const char *auth = hdr(c, "Authorization");
    const char *scope = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "scope");
    const char *service = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "service");
    if (!service || strcmp(service, "fake registry") != 0 || !scope ||
        strcmp(scope, "repository:token/app:pull") != 0)
        return reply_str(c, 400, "bad token request", NULL);
    if (!*auth)
        return reply_str(c, 200, "{\"token\":\"anon-token\"}", NULL);
    if (strcmp(auth, "Basic YWxpY2U6cHc=") == 0) /* alice:pw */
        return reply_str(c, 200, "{\"access_token\":\"good-token\",\"expires_in\":300}", NULL);
    return reply_str(c, 401, "{}", NULL);
}

static enum MHD_Result serve_token_repo(struct MHD_Connection *c)
{
    if (strcmp(hdr(c, "Authorization"), "Bearer good-token") == 0)
        return serve_manifest(c, F.manifest_digest);
    char chal[256];
    snprintf(chal, sizeof(chal),
             "Bearer realm=\"http://%s/token\",service=\"fake registry\","
             "scope=\"repository:token/app:pull\"",
             F.host);
    const char *h[] = {"WWW-Authenticate", chal, NULL};
    return reply_error(c, 401, "UNAUTHORIZED", "authentication required", h);
}

/* /v2/elsewhere/app: a Bearer challenge whose plain-http realm is on another host name
 * (localhost instead of 127.0.0.1). */
static enum MHD_Result serve_elsewhere_repo(struct MHD_Connection *c)
{
    char chal[256];
    snprintf(chal, sizeof(chal),
             "Bearer realm=\"http://localhost:%d/token\",service=\"fake registry\","
             "scope=\"repository:elsewhere/app:pull\"",
             F.port);
    const char *h[] = {"WWW-Authenticate", chal, NULL};
    return reply_error(c, 401, "UNAUTHORIZED", "authentication required", h);
}

static enum MHD_Result serve_basic_repo(struct MHD_Connection *c)
{
    if (strcmp(hdr(c, "Authorization"), "Basic YWxpY2U6cHc=") == 0)
        return serve_manifest(c, F.manifest_digest);
    const char *h[] = {"WWW-Authenticate", "Basic realm=\"fake\"", NULL};
    /* A careless registry echoing the user name and password: the client must scrub them. */
    return reply_error(c, 401, "UNAUTHORIZED", "user mallory with password hunter2 denied", h);
}

static enum MHD_Result serve_tags(struct MHD_Connection *c)
{
    const char *last = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "last");
    if (!last) {
        char link[128];
        snprintf(link, sizeof(link), "</v2/plain/app/tags/list?n=2&last=b>; rel=\"next\"");
        const char *h[] = {"Link", link, NULL};
        return reply_str(c, 200, "{\"name\":\"plain/app\",\"tags\":[\"a\",\"b\"]}", h);
    }
    if (strcmp(last, "b") == 0) {
        char link[128];
        snprintf(link, sizeof(link), "<http://%s/v2/plain/app/tags/list?n=2&last=d>; rel=next",
                 F.host);
        const char *h[] = {"Link", link, NULL};
        return reply_str(c, 200, "{\"tags\":[\"c\",\"bad tag\",\"d\"]}", h);
    }
    return reply_str(c, 200, "{\"tags\":[\"e\"]}", NULL);
}

/* /v2/loop/app: the first page links to page B (an absolute URL), B to C and C back to B. */
static enum MHD_Result serve_tags_loop(struct MHD_Connection *c)
{
    const char *last = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "last");
    char link[160];
    if (!last || strcmp(last, "a") == 0) {
        snprintf(link, sizeof(link), "<http://%s/v2/loop/app/tags/list?last=b>; rel=\"next\"",
                 F.host);
        const char *h[] = {"Link", link, NULL};
        return reply_str(c, 200, "{\"tags\":[\"a\"]}", h);
    }
    const char *h[] = {"Link", "</v2/loop/app/tags/list?last=a>; rel=\"next\"", NULL};
    return reply_str(c, 200, "{\"tags\":[\"b\"]}", h);
}

/* /v2/endless/app: page N (50 ms each) holds tag tN and links to page N+1, without end. */
static enum MHD_Result serve_tags_endless(struct MHD_Connection *c)
{
    const char *last = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "last");
    long n = last ? strtol(last, NULL, 10) + 1 : 0;
    char link[160], body[64];
    usleep(50 * 1000);
    snprintf(link, sizeof(link), "</v2/endless/app/tags/list?last=%ld>; rel=\"next\"", n);
    snprintf(body, sizeof(body), "{\"tags\":[\"t%ld\"]}", n);
    const char *h[] = {"Link", link, NULL};
    return reply_str(c, 200, body, h);
}

/* /v2/dup/app: three pages repeating tags of earlier pages (and within a page). */
static enum MHD_Result serve_tags_dup(struct MHD_Connection *c)
{
    const char *last = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "last");
    if (!last) {
        const char *h[] = {"Link", "</v2/dup/app/tags/list?last=b>; rel=\"next\"", NULL};
        return reply_str(c, 200, "{\"tags\":[\"a\",\"b\",\"a\"]}", h);
    }
    if (strcmp(last, "b") == 0) {
        const char *h[] = {"Link", "</v2/dup/app/tags/list?last=c>; rel=\"next\"", NULL};
        return reply_str(c, 200, "{\"tags\":[\"b\",\"c\",\"a\"]}", h);
    }
    return reply_str(c, 200, "{\"tags\":[\"d\",\"c\",\"e\"]}", NULL);
}

/* /v2/other/app: the next page is the tag list of another repository on the same host. */
static enum MHD_Result serve_tags_other(struct MHD_Connection *c)
{
    const char *h[] = {"Link", "</v2/plain/app/tags/list?n=2&last=b>; rel=\"next\"", NULL};
    return reply_str(c, 200, "{\"tags\":[\"x\"]}", h);
}

static enum MHD_Result route_more(struct MHD_Connection *c, const char *url, int hit)
{
    if (starts(url, "/v2/limited/app/manifests/")) {
        const char *h[] = {"Retry-After", "1", NULL};
        if (hit == 1)
            return reply_error(c, 429, "TOOMANYREQUESTS", "slow down", h);
        return serve_manifest(c, F.manifest_digest);
    }
    if (starts(url, "/v2/down/app/"))
        return reply_str(c, 503, "down", NULL);
    if (starts(url, "/v2/stall/app/")) {
        usleep(3000 * 1000);
        return serve_manifest(c, F.manifest_digest);
    }
    if (starts(url, "/v2/slow/app/")) {
        usleep(800 * 1000);
        return serve_manifest(c, F.manifest_digest);
    }
    if (starts(url, "/v2/conc/app/")) {
        int now = atomic_fetch_add(&F.in_flight, 1) + 1;
        int prev = atomic_load(&F.max_in_flight);
        while (now > prev && !atomic_compare_exchange_weak(&F.max_in_flight, &prev, now))
            ;
        usleep(100 * 1000);
        atomic_fetch_sub(&F.in_flight, 1);
        return serve_manifest(c, F.manifest_digest);
    }
    if (strcmp(url, "/v2/plain/app/tags/list") == 0)
        return serve_tags(c);
    if (strcmp(url, "/v2/loop/app/tags/list") == 0)
        return serve_tags_loop(c);
    if (strcmp(url, "/v2/dup/app/tags/list") == 0)
        return serve_tags_dup(c);
    if (strcmp(url, "/v2/endless/app/tags/list") == 0)
        return serve_tags_endless(c);
    if (strcmp(url, "/v2/other/app/tags/list") == 0)
        return serve_tags_other(c);
    if (starts(url, "/v2/redir/app/blobs/")) {
        char loc[256];
        /* Another host name for the same server: curl must drop the credentials. */
        snprintf(loc, sizeof(loc), "http://localhost:%d/storage/%s", F.port, url + 20);
        const char *h[] = {"Location", loc, NULL};
        return reply_str(c, 307, "", h);
    }
    if (starts(url, "/storage/")) {
        if (*hdr(c, "Authorization")) /* credentials must not follow a redirect ... */
            return reply_str(c, 400, "", NULL);
        return reply(c, 200, config_blob, strlen(config_blob), NULL);
    }
    return reply_error(c, 404, "NAME_UNKNOWN", "repository name not known to registry", NULL);
}

static enum MHD_Result route(struct MHD_Connection *c, const char *url, int hit)
{
    char blob[200];
    snprintf(blob, sizeof(blob), "/v2/plain/app/blobs/%s", F.config_digest);
    if (strcmp(url, "/v2/") == 0)
        return reply_str(c, 200, "{}", NULL);
    if (strcmp(url, "/token") == 0)
        return serve_token(c);
    if (strcmp(url, "/v2/plain/app/manifests/v1") == 0)
        return serve_manifest(c, F.manifest_digest);
    if (starts(url, "/v2/plain/app/manifests/") && strcmp(url + 24, F.manifest_digest) == 0)
        return serve_manifest(c, F.manifest_digest);
    if (strcmp(url, blob) == 0)
        return reply(c, 200, config_blob, strlen(config_blob), NULL);
    if (starts(url, "/v2/bad/digest/manifests/"))
        return serve_manifest(c, "sha256:0000000000000000000000000000000000000000000000000000000"
                                 "000000000");
    if (starts(url, "/v2/bad/digest/blobs/"))
        return reply_str(c, 200, "tampered", NULL);
    if (starts(url, "/v2/nodigest/app/manifests/"))
        return serve_manifest(c, NULL);
    if (starts(url, "/v2/big/manifest/manifests/")) {
        const char *h[] = {"Content-Type", SW_MEDIA_OCI_MANIFEST, NULL};
        return reply(c, 200, F.big, BIG_BYTES, h);
    }
    if (starts(url, "/v2/big/chunked/manifests/"))
        return serve_chunked_big(c);
    if (starts(url, "/v2/forbidden/app/"))
        return reply_error(c, 403, "DENIED", "requested access to the resource is denied", NULL);
    if (starts(url, "/v2/token/app/"))
        return serve_token_repo(c);
    if (starts(url, "/v2/elsewhere/app/"))
        return serve_elsewhere_repo(c);
    if (starts(url, "/v2/basic/app/"))
        return serve_basic_repo(c);
    if (starts(url, "/v2/flaky/app/") && hit <= 2)
        return reply_str(c, 503, "try later", NULL);
    if (starts(url, "/v2/flaky/app/"))
        return serve_manifest(c, F.manifest_digest);
    return route_more(c, url, hit);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls)
{
    if (!*con_cls) { /* first call: headers only */
        *con_cls = (void *)1;
        return MHD_YES;
    }
    int hit = 0;
    if (strcmp(url, "/v2/") != 0 && strcmp(url, "/token") != 0)
        hit = atomic_fetch_add(&F.hits, 1) + 1;
    return route(c, url, hit);
}

static int start_fake(void **state)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    F.d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL,
                           NULL, handler, NULL, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_END);
    if (!F.d)
        return -1;
    F.port = MHD_get_daemon_info(F.d, MHD_DAEMON_INFO_BIND_PORT)->port;
    snprintf(F.host, sizeof(F.host), "127.0.0.1:%d", F.port);
    digest_of(config_blob, strlen(config_blob), F.config_digest);
    snprintf(F.manifest, sizeof(F.manifest),
             "{\"schemaVersion\":2,\"mediaType\":\"%s\",\"config\":{\"mediaType\":"
             "\"application/vnd.oci.image.config.v1+json\",\"digest\":\"%s\",\"size\":%zu},"
             "\"layers\":[]}",
             SW_MEDIA_OCI_MANIFEST, F.config_digest, strlen(config_blob));
    digest_of(F.manifest, strlen(F.manifest), F.manifest_digest);
    F.big = sw_malloc(BIG_BYTES);
    memset(F.big, ' ', BIG_BYTES);
    return 0;
}

static int stop_fake(void **state)
{
    MHD_stop_daemon(F.d);
    sw_free(F.big);
    return 0;
}

/* A client with short timeouts; insecure because the fake speaks plain http. */
static int setup(void **state)
{
    sw_registry *r;
    sw_registry_opts o = {.timeout_ms = 5000, .retries = 2};
    assert_int_equal(sw_registry_new(&r, &o), 0);
    *state = r;
    atomic_store(&F.hits, 0);
    atomic_store(&F.token_hits, 0);
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

static void test_client__head_and_get(void **state)
{
    sw_registry *r = *state;
    sw_ref ref = ref_of("plain/app:v1");
    char digest[80], mt[128];
    int64_t size = 0;
    if (sw_registry_head_manifest(r, &insecure, &ref, digest, mt, &size) != 0)
        fail_msg("head: %s", sw_error_msg());
    assert_string_equal(digest, F.manifest_digest);
    assert_string_equal(mt, SW_MEDIA_OCI_MANIFEST);
    assert_int_equal(size, strlen(F.manifest));
    char *body = NULL;
    size_t len = 0;
    char digest2[80];
    assert_int_equal(sw_registry_get_manifest(r, &insecure, &ref, &body, &len, mt, digest2), 0);
    assert_string_equal(digest2, F.manifest_digest);
    assert_int_equal(len, strlen(F.manifest));
    assert_memory_equal(body, F.manifest, len);
    sw_manifest *m;
    assert_int_equal(sw_manifest_parse(mt, body, len, &m), 0);
    const char *cfg = sw_manifest_config(m)->digest;
    char *blob = NULL;
    size_t blen = 0;
    assert_int_equal(sw_registry_get_blob(r, &insecure, &ref, cfg, 4096, &blob, &blen), 0);
    assert_string_equal(blob, config_blob);
    sw_free(blob);
    /* Too small a cap refuses the blob. */
    assert_int_equal(sw_registry_get_blob(r, &insecure, &ref, cfg, 10, &blob, &blen), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "larger than 10 bytes"));
    sw_manifest_free(m);
    sw_free(body);
    /* By digest. */
    ref = ref_of("plain/app");
    sw_strlcpy(ref.digest, F.manifest_digest, sizeof(ref.digest));
    ref.tag[0] = '\0';
    assert_int_equal(sw_registry_head_manifest(r, &insecure, &ref, digest, NULL, NULL), 0);
    assert_string_equal(digest, F.manifest_digest);
    assert_int_equal(sw_registry_get_manifest(r, &insecure, &ref, &body, &len, NULL, NULL), 0);
    sw_free(body);
}

static void test_client__secure_call_to_http_host_fails(void **state)
{
    sw_registry *r = *state;
    sw_ref ref = ref_of("plain/app:v1");
    char digest[80];
    int rc = sw_registry_head_manifest(r, NULL, &ref, digest, NULL, NULL);
    assert_int_equal(rc, SW_EUNAVAILABLE);
    /* --insecure-registry makes the same call work without the per-call flag. */
    const char *list[] = {F.host, NULL};
    sw_registry_opts o = {.insecure_hosts = list};
    sw_registry *r2;
    sw_registry_new(&r2, &o);
    assert_int_equal(sw_registry_head_manifest(r2, NULL, &ref, digest, NULL, NULL), 0);
    sw_registry_free(r2);
    const char *list2[] = {"127.0.0.1", NULL}; /* a host without port covers every port */
    o.insecure_hosts = list2;
    sw_registry_new(&r2, &o);
    assert_int_equal(sw_registry_head_manifest(r2, NULL, &ref, digest, NULL, NULL), 0);
    sw_registry_free(r2);
}

static void test_client__digest_checks(void **state)
{
    sw_registry *r = *state;
    sw_ref ref = ref_of("bad/digest:v1");
    char *body = NULL;
    size_t len;
    assert_int_equal(sw_registry_get_manifest(r, &insecure, &ref, &body, &len, NULL, NULL),
                     SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "manifest digest mismatch: expected sha256:0000"));
    assert_non_null(strstr(sw_error_msg(), F.manifest_digest));
    assert_null(body);
    /* A blob whose content does not hash to its name. */
    assert_int_equal(sw_registry_get_blob(r, &insecure, &ref, F.config_digest, 4096, &body, &len),
                     SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "blob digest mismatch"));
    /* By digest, the ref's digest is what the body must hash to. */
    ref =
        ref_of("plain/app@sha256:1111111111111111111111111111111111111111111111111111111111111111");
    assert_int_equal(sw_registry_get_manifest(r, &insecure, &ref, &body, &len, NULL, NULL),
                     SW_ENOTFOUND);
    /* No Docker-Content-Digest on HEAD: the manifest is fetched and hashed. */
    ref = ref_of("nodigest/app:v1");
    char digest[80];
    assert_int_equal(sw_registry_head_manifest(r, &insecure, &ref, digest, NULL, NULL), 0);
    assert_string_equal(digest, F.manifest_digest);
    assert_int_equal(sw_registry_get_blob(r, &insecure, &ref, "sha256:zz", 10, &body, &len),
                     SW_EINVALID);
}

static void test_client__oversized(void **state)
{
    sw_registry *r = *state;
    sw_ref ref = ref_of("big/manifest:v1");
    char *body = NULL;
    size_t len;
    int64_t t0 = sw_time_mono_ms();
    assert_int_equal(sw_registry_get_manifest(r, &insecure, &ref, &body, &len, NULL, NULL),
                     SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "larger than 1048576 bytes (Content-Length 2097152)"));
    ref = ref_of("big/chunked:v1");
    assert_int_equal(sw_registry_get_manifest(r, &insecure, &ref, &body, &len, NULL, NULL),
                     SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "larger than 1048576 bytes"));
    assert_true(sw_time_mono_ms() - t0 < 3000);
    assert_null(body);
}

static void test_client__not_found_and_forbidden(void **state)
{
    sw_registry *r = *state;
    sw_ref ref = ref_of("nope/app:v1");
    char digest[80];
    char *body = NULL;
    size_t len;
    assert_int_equal(sw_registry_head_manifest(r, &insecure, &ref, digest, NULL, NULL),
                     SW_ENOTFOUND);
    assert_int_equal(sw_registry_get_manifest(r, &insecure, &ref, &body, &len, NULL, NULL),
                     SW_ENOTFOUND);
    assert_non_null(strstr(sw_error_msg(), "NAME_UNKNOWN"));
    assert_non_null(strstr(sw_error_msg(), "nope/app:v1"));
    ref = ref_of("forbidden/app:v1");
    assert_int_equal(sw_registry_get_manifest(r, &insecure, &ref, &body, &len, NULL, NULL),
                     SW_EFORBIDDEN);
    assert_non_null(strstr(sw_error_msg(), "403"));
}

static void test_client__retries(void **state)
{
    sw_registry *r = *state;
    char digest[80];
    /* Two 503s, then success: within retries = 2. */
    sw_ref ref = ref_of("flaky/app:v1");
    if (sw_registry_head_manifest(r, &insecure, &ref, digest, NULL, NULL) != 0)
        fail_msg("flaky: %s", sw_error_msg());
    assert_int_equal(atomic_load(&F.hits), 3);
    /* Always 503: the message names the status and the attempts. */
    atomic_store(&F.hits, 0);
    ref = ref_of("down/app:v1");
    assert_int_equal(sw_registry_head_manifest(r, &insecure, &ref, digest, NULL, NULL),
                     SW_EUNAVAILABLE);
    assert_non_null(strstr(sw_error_msg(), "503 Service Unavailable after 3 attempts"));
    assert_int_equal(atomic_load(&F.hits), 3);
    /* 429 with Retry-After: 1 is honoured. */
    atomic_store(&F.hits, 0);
    ref = ref_of("limited/app:v1");
    int64_t t0 = sw_time_mono_ms();
    assert_int_equal(sw_registry_head_manifest(r, &insecure, &ref, digest, NULL, NULL), 0);
    int64_t waited = sw_time_mono_ms() - t0;
    assert_true(waited >= 950 && waited < 3000);
    assert_int_equal(atomic_load(&F.hits), 2);
}

static bool stop_now(void)
{
    return true;
}

/* opts.stop ends the Retry-After wait at once; the 429 is the error. */
static void test_client__stop_ends_retry_wait(void **state)
{
    (void)state;
    sw_registry *r;
    sw_registry_opts o = {.timeout_ms = 5000, .stop = stop_now};
    assert_int_equal(sw_registry_new(&r, &o), 0);
    sw_ref ref = ref_of("limited/app:v1");
    char digest[80];
    int64_t t0 = sw_time_mono_ms();
    assert_int_equal(sw_registry_head_manifest(r, &insecure, &ref, digest, NULL, NULL),
                     SW_EUNAVAILABLE);
    assert_true(sw_time_mono_ms() - t0 < 900);
    assert_non_null(strstr(sw_error_msg(), "429 Too Many Requests after 1 attempt"));
    assert_int_equal(atomic_load(&F.hits), 1);
    sw_registry_free(r);
}

static void test_client__unreachable_and_timeout(void **state)
{
    sw_registry *r = *state;
    /* A closed port: unreachable, quickly, naming the attempts. */
    sw_ref ref;
    assert_int_equal(sw_ref_parse("127.0.0.1:1/x/y:1", &ref), 0);
    char digest[80];
    int64_t t0 = sw_time_mono_ms();
    assert_int_equal(sw_registry_head_manifest(r, &insecure, &ref, digest, NULL, NULL),
                     SW_EUNAVAILABLE);
    assert_true(sw_time_mono_ms() - t0 < 3000);
    assert_non_null(strstr(sw_error_msg(), "unreachable after 3 attempts"));
    /* A registry slower than the timeout. */
    sw_registry *r2;
    sw_registry_opts o = {.timeout_ms = 300};
    sw_registry_new(&r2, &o);
    ref = ref_of("slow/app:v1");
    assert_int_equal(sw_registry_head_manifest(r2, &insecure, &ref, digest, NULL, NULL),
                     SW_ETIMEOUT);
    assert_non_null(strstr(sw_error_msg(), "300 ms"));
    sw_registry_free(r2);
}

static sw_creds *creds_for(const char *user, const char *pass)
{
    sw_creds *c;
    sw_creds_new(&c);
    char json[256];
    snprintf(json, sizeof(json), "{\"auths\":{\"%s\":{\"username\":\"%s\",\"password\":\"%s\"}}}",
             F.host, user, pass);
    assert_int_equal(sw_creds_add_secret(c, SW_CREDS_TYPE_DOCKERCONFIGJSON, json, strlen(json)), 0);
    return c;
}

static void test_client__bearer_token(void **state)
{
    sw_registry *r = *state;
    sw_ref ref = ref_of("token/app:v1");
    char digest[80];
    /* Anonymous: the token server hands out a token the registry does not accept. */
    assert_int_equal(sw_registry_head_manifest(r, &insecure, &ref, digest, NULL, NULL),
                     SW_EUNAUTHORIZED);
    assert_non_null(strstr(sw_error_msg(), "no credentials"));
    assert_null(strstr(sw_error_msg(), "anon-token"));
    sw_creds *good = creds_for("alice", "pw");
    sw_registry_call call = {.creds = good, .insecure = true};
    atomic_store(&F.token_hits, 0);
    assert_int_equal(sw_registry_head_manifest(r, &call, &ref, digest, NULL, NULL), 0);
    assert_string_equal(digest, F.manifest_digest);
    assert_int_equal(atomic_load(&F.token_hits), 1);
    /* The token is cached for this scope and these credentials. */
    char *body;
    size_t len;
    assert_int_equal(sw_registry_get_manifest(r, &call, &ref, &body, &len, NULL, NULL), 0);
    sw_free(body);
    assert_int_equal(atomic_load(&F.token_hits), 1);
    /* ... and never shared with an anonymous caller. */
    assert_int_equal(sw_registry_head_manifest(r, &insecure, &ref, digest, NULL, NULL),
                     SW_EUNAUTHORIZED);
    /* Wrong credentials: the token server refuses; nothing secret in the message. */
    sw_creds *bad = creds_for("mallory", "hunter2");
    call.creds = bad;
    assert_int_equal(sw_registry_head_manifest(r, &call, &ref, digest, NULL, NULL),
                     SW_EUNAUTHORIZED);
    assert_non_null(strstr(sw_error_msg(), "rejected the credentials"));
    assert_null(strstr(sw_error_msg(), "mallory"));
    assert_null(strstr(sw_error_msg(), "hunter2"));
    /* An insecure registry whose plain-http realm is on another host gets no credentials. */
    sw_ref elsewhere = ref_of("elsewhere/app:v1");
    call.creds = good;
    atomic_store(&F.token_hits, 0);
    assert_int_equal(sw_registry_head_manifest(r, &call, &elsewhere, digest, NULL, NULL),
                     SW_EUNAUTHORIZED);
    assert_non_null(strstr(sw_error_msg(), "not the registry's own host"));
    assert_int_equal(atomic_load(&F.token_hits), 0);
    sw_creds_free(good);
    sw_creds_free(bad);
}

static void test_client__basic_auth(void **state)
{
    sw_registry *r = *state;
    sw_ref ref = ref_of("basic/app:v1");
    char digest[80];
    sw_creds *good = creds_for("alice", "pw");
    sw_registry_call call = {.creds = good, .insecure = true};
    assert_int_equal(sw_registry_head_manifest(r, &call, &ref, digest, NULL, NULL), 0);
    assert_int_equal(sw_registry_head_manifest(r, &call, &ref, digest, NULL, NULL), 0);
    assert_int_equal(sw_registry_head_manifest(r, &insecure, &ref, digest, NULL, NULL),
                     SW_EUNAUTHORIZED);
    assert_non_null(strstr(sw_error_msg(), "no credentials were found"));
    sw_creds *bad = creds_for("mallory", "hunter2");
    call.creds = bad;
    char *body;
    size_t len;
    assert_int_equal(sw_registry_get_manifest(r, &call, &ref, &body, &len, NULL, NULL),
                     SW_EUNAUTHORIZED);
    assert_non_null(strstr(sw_error_msg(), "rejected the credentials"));
    assert_non_null(strstr(sw_error_msg(), "user *** with password *** denied"));
    assert_null(strstr(sw_error_msg(), "mallory"));
    assert_null(strstr(sw_error_msg(), "hunter2"));
    sw_creds_free(good);
    sw_creds_free(bad);
}

/* Lists ref's tags (up to 100) and expects exactly want, space-separated, in order. */
static void expect_tags(sw_registry *r, const sw_ref *ref, const char *want)
{
    char **tags = NULL, got[256] = "";
    size_t n = 0;
    if (sw_registry_list_tags(r, &insecure, ref, 100, &tags, &n) != 0)
        fail_msg("tags: %s", sw_error_msg());
    for (size_t i = 0; i < n; i++)
        snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", i ? " " : "", tags[i]);
    sw_registry_tags_free(tags, n);
    assert_string_equal(got, want);
}

static void test_client__tags_paging(void **state)
{
    sw_registry *r = *state;
    sw_ref ref = ref_of("plain/app");
    char **tags = NULL;
    size_t n = 0;
    expect_tags(r, &ref, "a b c d e"); /* "bad tag" skipped */
    assert_int_equal(sw_registry_list_tags(r, &insecure, &ref, 3, &tags, &n), 0);
    assert_int_equal(n, 3);
    sw_registry_tags_free(tags, n);
    ref = ref_of("nope/app");
    assert_int_equal(sw_registry_list_tags(r, &insecure, &ref, 3, &tags, &n), SW_ENOTFOUND);
}

/* Pages B -> C -> B: refused before fetching B again, not after the page cap. */
static void test_client__tags_loop(void **state)
{
    sw_registry *r = *state;
    sw_ref ref = ref_of("loop/app");
    char **tags = NULL;
    size_t n = 0;
    assert_int_equal(sw_registry_list_tags(r, &insecure, &ref, 100000, &tags, &n), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "the registry's tag list pages loop back to"));
    assert_non_null(strstr(sw_error_msg(), "/v2/loop/app/tags/list?last=b"));
    assert_int_equal(atomic_load(&F.hits), 3);
    assert_null(tags);
}

/* A tag list that pages on without end stops at the caller's deadline (an ImageStreamImport's
 * 120 s): SW_ETIMEOUT after a few pages, not TAGS_MAX_PAGES of them. */
static void test_client__tags_deadline(void **state)
{
    sw_registry *r = *state;
    sw_ref ref = ref_of("endless/app");
    char **tags = NULL;
    size_t n = 0;
    int64_t t0 = sw_time_mono_ms();
    sw_registry_call call = {.insecure = true, .deadline_ms = t0 + 300};
    assert_int_equal(sw_registry_list_tags(r, &call, &ref, 100000, &tags, &n), SW_ETIMEOUT);
    assert_true(sw_time_mono_ms() - t0 < 2000);
    assert_non_null(strstr(sw_error_msg(), "still paging at the deadline"));
    assert_true(atomic_load(&F.hits) >= 3 && atomic_load(&F.hits) < 20);
    assert_null(tags);
}

/* A tag repeated on a later page (or within one) is listed once, where it first appeared. */
static void test_client__tags_dedup(void **state)
{
    sw_registry *r = *state;
    sw_ref ref = ref_of("dup/app");
    char **tags = NULL;
    size_t n = 0;
    expect_tags(r, &ref, "a b c d e");
    /* max counts distinct tags. */
    assert_int_equal(sw_registry_list_tags(r, &insecure, &ref, 4, &tags, &n), 0);
    assert_int_equal(n, 4);
    assert_string_equal(tags[3], "d");
    sw_registry_tags_free(tags, n);
}

/* A Link to another repository's tag list on the same host is refused, not followed. */
static void test_client__tags_other_repository(void **state)
{
    sw_registry *r = *state;
    sw_ref ref = ref_of("other/app");
    char **tags = NULL;
    size_t n = 0;
    assert_int_equal(sw_registry_list_tags(r, &insecure, &ref, 100, &tags, &n), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "/v2/plain/app/tags/list"));
    assert_int_equal(atomic_load(&F.hits), 1);
}

static void test_client__blob_redirect(void **state)
{
    sw_registry *r = *state;
    sw_creds *good = creds_for("alice", "pw");
    sw_registry_call call = {.creds = good, .insecure = true};
    /* Learn that the host wants basic auth, so the blob request carries credentials. */
    sw_ref b = ref_of("basic/app:v1");
    char digest[80];
    assert_int_equal(sw_registry_head_manifest(r, &call, &b, digest, NULL, NULL), 0);
    sw_ref ref = ref_of("redir/app");
    char *body = NULL;
    size_t len;
    if (sw_registry_get_blob(r, &call, &ref, F.config_digest, 4096, &body, &len) != 0)
        fail_msg("redirect: %s", sw_error_msg());
    assert_string_equal(body, config_blob);
    sw_free(body);
    sw_creds_free(good);
}

/* One HEAD of repo (default conc/app:v1) on its own thread: its result, when it ended, and
 * its error message. */
typedef struct conc_arg {
    sw_registry *r;
    int rc;
    const char *repo;
    int64_t done_ms;
    char msg[256];
} conc_arg;

static void *conc_worker(void *p)
{
    conc_arg *a = p;
    sw_ref ref = ref_of(a->repo ? a->repo : "conc/app:v1");
    char digest[80];
    a->rc = sw_registry_head_manifest(a->r, &insecure, &ref, digest, NULL, NULL);
    a->done_ms = sw_time_mono_ms();
    snprintf(a->msg, sizeof(a->msg), "%s", a->rc < 0 ? sw_error_msg() : "");
    return NULL;
}

static void test_client__concurrency_limit(void **state)
{
    sw_registry *r;
    sw_registry_opts o = {.max_per_host = 2};
    sw_registry_new(&r, &o);
    pthread_t th[6];
    conc_arg args[6];
    atomic_store(&F.max_in_flight, 0);
    for (int i = 0; i < 6; i++) {
        args[i] = (conc_arg){.r = r, .rc = -1};
        pthread_create(&th[i], NULL, conc_worker, &args[i]);
    }
    for (int i = 0; i < 6; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].rc, 0);
    }
    assert_true(atomic_load(&F.max_in_flight) >= 1);
    assert_true(atomic_load(&F.max_in_flight) <= 2);
    sw_registry_free(r);
}

/* sw_registry_shutdown: the transfer in flight is aborted, a call waiting for a connection slot
 * ends at once, and so does every later call, each saying why. */
static void test_client__shutdown(void **state)
{
    (void)state;
    sw_registry *r;
    sw_registry_opts o = {.max_per_host = 1, .timeout_ms = 5000};
    sw_registry_new(&r, &o);
    pthread_t th[2];
    conc_arg args[2] = {{.r = r, .repo = "stall/app:v1"}, {.r = r, .repo = "stall/app:v1"}};
    pthread_create(&th[0], NULL, conc_worker, &args[0]);
    usleep(100 * 1000);
    pthread_create(&th[1], NULL, conc_worker, &args[1]); /* waits for the one slot */
    usleep(200 * 1000);
    int64_t t0 = sw_time_mono_ms();
    sw_registry_shutdown(r);
    pthread_join(th[1], NULL);
    pthread_join(th[0], NULL);
    assert_int_equal(args[1].rc, SW_EUNAVAILABLE);
    assert_true(args[1].done_ms - t0 < 300);
    assert_non_null(strstr(args[1].msg, "shutting down"));
    /* The transfer in flight (a 3 s answer) is aborted by the progress callback, which curl
     * calls about once a second while nothing moves. */
    assert_int_equal(args[0].rc, SW_EUNAVAILABLE);
    assert_true(args[0].done_ms - t0 < 2000);
    assert_non_null(strstr(args[0].msg, "shutting down"));
    sw_ref ref = ref_of("plain/app:v1");
    char digest[80];
    t0 = sw_time_mono_ms();
    assert_int_equal(sw_registry_head_manifest(r, &insecure, &ref, digest, NULL, NULL),
                     SW_EUNAVAILABLE);
    assert_true(sw_time_mono_ms() - t0 < 300);
    assert_non_null(strstr(sw_error_msg(), "shutting down"));
    sw_registry_free(r);
}

static void test_client__bad_arguments(void **state)
{
    sw_registry *r = *state;
    sw_ref ref;
    memset(&ref, 0, sizeof(ref));
    char digest[80];
    assert_int_equal(sw_registry_head_manifest(r, &insecure, &ref, digest, NULL, NULL),
                     SW_EINVALID);
    assert_int_equal(sw_registry_head_manifest(r, &insecure, NULL, digest, NULL, NULL),
                     SW_EINVALID);
    ref = ref_of("plain/app:v1");
    assert_int_equal(sw_registry_get_manifest(r, &insecure, &ref, NULL, NULL, NULL, NULL),
                     SW_EINVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_client__head_and_get, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client__secure_call_to_http_host_fails, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_client__digest_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client__oversized, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client__not_found_and_forbidden, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client__retries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client__stop_ends_retry_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client__unreachable_and_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client__bearer_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client__basic_auth, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client__tags_paging, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client__tags_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client__tags_deadline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client__tags_dedup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client__tags_other_repository, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client__blob_redirect, setup, teardown),
        cmocka_unit_test(test_client__concurrency_limit),
        cmocka_unit_test(test_client__shutdown),
        cmocka_unit_test_setup_teardown(test_client__bad_arguments, setup, teardown),
    };
    return cmocka_run_group_tests(tests, start_fake, stop_fake);
}
