/* client: the distribution API calls (manifest HEAD/GET, blob GET, tags list) on top of the
 * transport (http.c) and auth (auth.c). A call resolves the endpoint, the credentials and the
 * scheme (an insecure host is pinged over https first, then http), sends the request with any
 * cached token, answers one 401, maps the final status to an SW_E* code and verifies digests. */
#include "registry/client_int.h"

#include "registry/manifest.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TAGS_PAGE_SIZE 100
#define TAGS_PAGE_MAX_BYTES (4 * 1024 * 1024)
#define TAGS_MAX_PAGES 1000
#define WHAT_MAX 700 /* "manifest registry/repository:tag" and the like, for messages */

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *userptr)
{
    sw_registry *r = userptr;
    pthread_mutex_lock(&r->share_mu[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *userptr)
{
    sw_registry *r = userptr;
    pthread_mutex_unlock(&r->share_mu[data]);
}

static void copy_insecure(sw_registry *r, const char *const *hosts)
{
    size_t n = 0;
    while (hosts && hosts[n])
        n++;
    r->insecure = sw_calloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        r->insecure[i] = sw_strdup(hosts[i]);
}

int sw_registry_new(sw_registry **out, const sw_registry_opts *o)
{
    sw_httpc_global_init();
    sw_registry *r = sw_calloc(1, sizeof(*r));
    r->timeout_ms = (o && o->timeout_ms > 0) ? o->timeout_ms : 30000;
    r->max_per_host = (o && o->max_per_host > 0) ? o->max_per_host : 16;
    r->retries = (o && o->retries != 0) ? (o->retries < 0 ? 0 : o->retries) : 3;
    r->stop = o ? o->stop : NULL;
    copy_insecure(r, o ? o->insecure_hosts : NULL);
    pthread_mutex_init(&r->mu, NULL);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&r->share_mu[i], NULL);
    r->share = curl_share_init();
    if (!r->share) {
        fprintf(stderr, "slipway: fatal: curl_share_init failed\n");
        abort();
    }
    curl_share_setopt(r->share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(r->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(r->share, CURLSHOPT_USERDATA, r);
    curl_share_setopt(r->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(r->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    *out = r;
    return 0;
}

void sw_registry_free(sw_registry *r)
{
    if (!r)
        return;
    sw_registry__hosts_free(r);
    curl_share_cleanup(r->share);
    sw_registry__tokens_free(r);
    for (size_t i = 0; r->insecure[i]; i++)
        sw_free(r->insecure[i]);
    sw_free(r->insecure);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&r->share_mu[i]);
    pthread_mutex_destroy(&r->mu);
    sw_free(r);
}

/* ---- per-call setup ---- */

/* A --insecure-registry entry matches "host:port" exactly, or "host" with any port. */
static bool listed_insecure(const sw_registry *r, const char *host)
{
    size_t hlen = strcspn(host, ":");
    if (host[0] == '[') {
        const char *close = strchr(host, ']');
        hlen = close ? (size_t)(close - host) + 1 : strlen(host);
    }
    for (size_t i = 0; r->insecure[i]; i++) {
        const char *e = r->insecure[i];
        if (strcasecmp(e, host) == 0)
            return true;
        if (strlen(e) == hlen && strncasecmp(e, host, hlen) == 0)
            return true;
    }
    return false;
}

bool sw_registry_insecure_ref(const sw_registry *r, const sw_ref *ref)
{
    return listed_insecure(r, sw_ref_endpoint(ref)) || listed_insecure(r, ref->registry);
}

static void call_dispose(reg_call *cx)
{
    if (cx->token) {
        OPENSSL_cleanse(cx->token, strlen(cx->token));
        sw_free(cx->token);
        cx->token = NULL;
    }
}

/* Learns whether an insecure host speaks https (any answer to GET /v2/ over TLS without
 * verification) or only plain http. The answer is remembered per host. */
static int ping(reg_call *cx)
{
    int scheme = sw_registry__host_scheme(cx->r, cx->host);
    int error = 0;
    char url[300];
    reg_resp resp;
    if (scheme != REG_SCHEME_UNKNOWN) {
        cx->scheme = scheme == REG_SCHEME_HTTP ? "http" : "https";
        return 0;
    }
    sw_registry__resp_init(&resp);
    snprintf(url, sizeof(url), "https://%s/v2/", cx->host);
    reg_req req = {.method = "GET",
                   .url = url,
                   .host = cx->host,
                   .insecure = true,
                   .body_max = REG_ERROR_BODY_MAX};
    error = sw_registry__perform(cx, &req, &resp);
    if (error == 0) {
        scheme = REG_SCHEME_HTTPS;
    } else if (error != SW_ETIMEOUT) {
        snprintf(url, sizeof(url), "http://%s/v2/", cx->host);
        req.retry = true;
        error = sw_registry__perform(cx, &req, &resp);
        scheme = REG_SCHEME_HTTP;
    }
    sw_registry__resp_dispose(&resp);
    if (error < 0)
        return error;
    sw_registry__set_host_scheme(cx->r, cx->host, scheme);
    cx->scheme = scheme == REG_SCHEME_HTTP ? "http" : "https";
    return 0;
}

static int call_init(sw_registry *r, const sw_registry_call *c, const sw_ref *ref, reg_call *cx)
{
    memset(cx, 0, sizeof(*cx));
    cx->r = r;
    if (!r || !ref || !ref->registry[0] || !ref->repository[0])
        return sw_error_set(SW_EINVALID, "registry call without a registry or repository");
    sw_strlcpy(cx->host, sw_ref_endpoint(ref), sizeof(cx->host));
    snprintf(cx->display, sizeof(cx->display), "%s/%s", ref->registry, ref->repository);
    cx->repository = ref->repository;
    cx->insecure = (c && c->insecure) || sw_registry_insecure_ref(r, ref);
    const char *user, *pass;
    if (c && c->creds &&
        sw_creds_lookup_repo(c->creds, ref->registry, ref->repository, &user, &pass)) {
        cx->user = user;
        cx->pass = pass;
    }
    sw_registry__credkey(cx->user, cx->pass, cx->credkey);
    snprintf(cx->scope, sizeof(cx->scope), "repository:%s:pull", ref->repository);
    cx->wait_budget_ms = REG_WAIT_BUDGET_MS;
    cx->deadline_ms = c ? c->deadline_ms : 0;
    cx->token = sw_registry__token_cached(cx);
    cx->basic = cx->user && sw_registry__host_basic(r, cx->host);
    cx->scheme = "https";
    return cx->insecure ? ping(cx) : 0;
}

int sw_registry__call_init(sw_registry *r, const sw_registry_call *c, const sw_ref *ref,
                           reg_call *cx)
{
    return call_init(r, c, ref, cx);
}

void sw_registry__call_dispose(reg_call *cx)
{
    call_dispose(cx);
}

/* Sends method path with auth: cached token or basic credentials, and one 401 answered. */
int sw_registry__exec(reg_call *cx, const char *method, const char *path, const char *accept,
                      const reg_send *send, size_t body_max, reg_resp *resp)
{
    sw_buf url = SW_BUF_INIT(4096);
    sw_buf_printf(&url, "%s://%s%s", cx->scheme, cx->host, path);
    int error = sw_buf_error(&url);
    if (error < 0) {
        error = sw_error_set(SW_EINVALID, "registry URL too long");
        goto done;
    }
    for (;;) {
        reg_req req = {.method = method,
                       .url = sw_buf_cstr(&url),
                       .host = cx->host,
                       .accept = accept,
                       .bearer = cx->token,
                       .insecure = cx->insecure,
                       .retry = !send || !send->once,
                       .body_max = body_max};
        if (send) {
            req.content_type = send->content_type;
            req.content_range = send->content_range;
            req.send = send->data;
            req.send_len = send->len;
            req.stream = send->stream;
            req.stream_payload = send->stream_payload;
            if (send->stream)
                req.retry = false; /* a stream cannot be read twice */
        }
        if (cx->basic) {
            req.user = cx->user;
            req.pass = cx->pass;
        }
        error = sw_registry__perform(cx, &req, resp);
        if (error < 0 || resp->status != 401 || cx->authed || (send && send->stream))
            break;
        cx->authed = true;
        error = sw_registry__authenticate(cx, resp);
        if (error < 0)
            break;
    }
done:
    sw_buf_dispose(&url);
    return error;
}

static int exec(reg_call *cx, const char *method, const char *path, const char *accept,
                size_t body_max, reg_resp *resp)
{
    return sw_registry__exec(cx, method, path, accept, NULL, body_max, resp);
}

/* ---- responses ---- */

/* "CODE: message" of the first entry of a distribution error body, scrubbed of secrets. */
static void registry_error_text(const reg_call *cx, const reg_resp *resp, char *out, size_t n)
{
    json_t *root = NULL;
    out[0] = '\0';
    if (!resp->body.len || sw_json_parse(resp->body.ptr, resp->body.len, 16, 0, &root) < 0)
        return;
    json_t *e = json_array_get(json_object_get(root, "errors"), 0);
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    if (code || msg) {
        char raw[512];
        snprintf(raw, sizeof(raw), ": %.64s%s%.300s", code ? code : "", code && msg ? ": " : "",
                 msg ? msg : "");
        sw_registry__scrub(cx, raw, out, n);
    }
    json_decref(root);
    sw_error_clear();
}

/* Maps a non-2xx final status to an SW_E* code; what names the object ("manifest x:1"). */
static int status_error(const reg_call *cx, const reg_resp *resp, const char *what)
{
    char detail[400];
    long s = resp->status;
    registry_error_text(cx, resp, detail, sizeof(detail));
    if (s == 401 && cx->user)
        return sw_error_set(SW_EUNAUTHORIZED,
                            "registry %s rejected the credentials for %s "
                            "(401 Unauthorized%s)",
                            cx->host, what, detail);
    if (s == 401)
        return sw_error_set(SW_EUNAUTHORIZED,
                            "registry %s requires authentication for %s and "
                            "no credentials were found (401 Unauthorized%s)",
                            cx->host, what, detail);
    if (s == 403)
        return sw_error_set(SW_EFORBIDDEN, "registry %s denied access to %s (403 Forbidden%s)",
                            cx->host, what, detail);
    if (s == 404)
        return sw_error_set(SW_ENOTFOUND, "%s not found (404 Not Found%s)", what, detail);
    if (s >= 500)
        return sw_error_set(SW_EUNAVAILABLE, "registry %s answered %ld for %s%s", cx->host, s, what,
                            detail);
    if (s >= 400)
        return sw_error_set(SW_EINVALID, "registry %s answered %ld for %s%s", cx->host, s, what,
                            detail);
    return sw_error_set(SW_EUNSUPPORTED, "registry %s answered %ld for %s", cx->host, s, what);
}

int sw_registry__status_error(const reg_call *cx, const reg_resp *resp, const char *what)
{
    return status_error(cx, resp, what);
}

static bool ok_status(const reg_resp *resp)
{
    return resp->status >= 200 && resp->status < 300;
}

/* GET path into resp with the body capped at max bytes: a larger one is refused (SW_EINVALID),
 * a status other than 2xx is an error (status_error). what names the object in messages. */
static int get_capped(reg_call *cx, const char *path, const char *accept, size_t max,
                      const char *what, reg_resp *resp)
{
    int error = exec(cx, "GET", path, accept, max, resp);
    if (error < 0 && resp->too_large)
        return sw_error_set(SW_EINVALID,
                            "%s is larger than %zu bytes (Content-Length %lld); refused", what, max,
                            (long long)resp->content_length);
    if (error < 0)
        return error;
    return ok_status(resp) ? 0 : status_error(cx, resp, what);
}

/* Content-Type without parameters into out[128]. */
static void bare_content_type(const char *ct, char *out)
{
    size_t n = strcspn(ct, "; \t");
    if (n > 127)
        n = 127;
    memcpy(out, ct, n);
    out[n] = '\0';
}

static void sha256_digest(const void *data, size_t len, char out[80])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32) {
        fprintf(stderr, "slipway: fatal: SHA-256 failed\n");
        abort();
    }
    memcpy(out, "sha256:", 7);
    sw_hex(md, 32, out + 7);
}

void sw_registry__sha256(const void *data, size_t len, char out[80])
{
    sha256_digest(data, len, out);
}

static void manifest_what(const sw_ref *ref, char *out, size_t n)
{
    snprintf(out, n, "manifest %s/%s%s%s", ref->registry, ref->repository,
             ref->digest[0] ? "@" : ":", ref->digest[0] ? ref->digest : ref->tag);
}

static void manifest_path(const sw_ref *ref, sw_buf *b)
{
    sw_buf_printf(b, "/v2/%s/manifests/%s", ref->repository,
                  ref->digest[0] ? ref->digest : ref->tag);
}

/* ---- manifests ---- */

static int get_manifest_cx(reg_call *cx, const sw_ref *ref, char **body, size_t *len,
                           char media_type[128], char digest[80])
{
    char what[WHAT_MAX], got[80];
    sw_buf path = SW_BUF_INIT(1024);
    reg_resp resp;
    sw_registry__resp_init(&resp);
    manifest_what(ref, what, sizeof(what));
    manifest_path(ref, &path);
    int error =
        get_capped(cx, sw_buf_cstr(&path), SW_MANIFEST_ACCEPT, SW_MANIFEST_MAX_BYTES, what, &resp);
    if (error < 0)
        goto done;
    sha256_digest(resp.body.ptr ? resp.body.ptr : "", resp.body.len, got);
    const char *expected = ref->digest[0] ? ref->digest : resp.digest;
    if (expected[0] && !sw_ref_digest_valid(expected)) {
        error = sw_error_set(SW_EINVALID,
                             "%s: registry sent an invalid Docker-Content-Digest "
                             "\"%.80s\"",
                             what, expected);
        goto done;
    }
    if (expected[0] && strcmp(expected, got) != 0) {
        error = sw_error_set(SW_EINVALID, "manifest digest mismatch: expected %s got %s (%s)",
                             expected, got, what);
        goto done;
    }
    if (media_type)
        bare_content_type(resp.content_type, media_type);
    if (digest)
        memcpy(digest, got, sizeof(got));
    *body = sw_buf_detach(&resp.body, len);
done:
    sw_buf_dispose(&path);
    sw_registry__resp_dispose(&resp);
    return error;
}

int sw_registry_get_manifest(sw_registry *r, const sw_registry_call *c, const sw_ref *ref,
                             char **body, size_t *len, char media_type[128], char digest[80])
{
    reg_call cx;
    int error = call_init(r, c, ref, &cx);
    if (error == 0 && (!body || !len))
        error = sw_error_set(SW_EINVALID, "get_manifest: no output buffer");
    if (error == 0)
        error = get_manifest_cx(&cx, ref, body, len, media_type, digest);
    call_dispose(&cx);
    return error;
}

/* HEAD gave no Docker-Content-Digest for a tag: fetch the manifest and hash it. */
static int head_fallback(reg_call *cx, const sw_ref *ref, char digest[80])
{
    char *body = NULL;
    size_t len = 0;
    int error = get_manifest_cx(cx, ref, &body, &len, NULL, digest);
    sw_free(body);
    return error;
}

static int head_digest(reg_call *cx, const sw_ref *ref, const reg_resp *resp, const char *what,
                       char out[80])
{
    char tmp[80];
    if (!resp->digest[0] && ref->digest[0]) {
        memcpy(tmp, ref->digest, sizeof(tmp));
    } else if (!resp->digest[0]) {
        int error = head_fallback(cx, ref, tmp);
        if (error < 0)
            return error;
    } else if (!sw_ref_digest_valid(resp->digest)) {
        return sw_error_set(SW_EINVALID,
                            "%s: registry sent an invalid Docker-Content-Digest "
                            "\"%.80s\"",
                            what, resp->digest);
    } else if (ref->digest[0] && strcmp(ref->digest, resp->digest) != 0) {
        return sw_error_set(SW_EINVALID, "manifest digest mismatch: expected %s got %s (%s)",
                            ref->digest, resp->digest, what);
    } else {
        memcpy(tmp, resp->digest, sizeof(tmp));
    }
    if (out)
        memcpy(out, tmp, sizeof(tmp));
    return 0;
}

int sw_registry_head_manifest(sw_registry *r, const sw_registry_call *c, const sw_ref *ref,
                              char digest[80], char media_type[128], int64_t *size)
{
    char what[WHAT_MAX];
    sw_buf path = SW_BUF_INIT(1024);
    reg_call cx;
    reg_resp resp;
    sw_registry__resp_init(&resp);
    int error = call_init(r, c, ref, &cx);
    if (error < 0)
        goto done;
    manifest_what(ref, what, sizeof(what));
    manifest_path(ref, &path);
    error = exec(&cx, "HEAD", sw_buf_cstr(&path), SW_MANIFEST_ACCEPT, SW_MANIFEST_MAX_BYTES, &resp);
    if (error < 0)
        goto done;
    if (!ok_status(&resp)) {
        error = status_error(&cx, &resp, what);
        goto done;
    }
    error = head_digest(&cx, ref, &resp, what, digest);
    if (error < 0)
        goto done;
    if (media_type)
        bare_content_type(resp.content_type, media_type);
    if (size)
        *size = resp.content_length;
done:
    sw_buf_dispose(&path);
    sw_registry__resp_dispose(&resp);
    call_dispose(&cx);
    return error;
}

/* ---- blobs ---- */

static int get_blob_cx(reg_call *cx, const sw_ref *repo, const char *digest, size_t max,
                       char **body, size_t *len)
{
    char what[WHAT_MAX], got[80];
    sw_buf path = SW_BUF_INIT(1024);
    reg_resp resp;
    sw_registry__resp_init(&resp);
    snprintf(what, sizeof(what), "blob %s of %s", digest, cx->display);
    sw_buf_printf(&path, "/v2/%s/blobs/%s", repo->repository, digest);
    int error = get_capped(cx, sw_buf_cstr(&path), NULL, max, what, &resp);
    if (error < 0)
        goto done;
    sha256_digest(resp.body.ptr ? resp.body.ptr : "", resp.body.len, got);
    if (strcmp(got, digest) != 0) {
        error = sw_error_set(SW_EINVALID, "blob digest mismatch: expected %s got %s (%s)", digest,
                             got, cx->display);
        goto done;
    }
    *body = sw_buf_detach(&resp.body, len);
done:
    sw_buf_dispose(&path);
    sw_registry__resp_dispose(&resp);
    return error;
}

int sw_registry_get_blob(sw_registry *r, const sw_registry_call *c, const sw_ref *repo,
                         const char *digest, size_t max, char **body, size_t *len)
{
    reg_call cx;
    int error = call_init(r, c, repo, &cx);
    if (error == 0 && (!body || !len))
        error = sw_error_set(SW_EINVALID, "get_blob: no output buffer");
    if (error == 0 && !sw_ref_digest_valid(digest))
        error = sw_error_set(SW_EINVALID, "blob digest \"%.80s\" is not a sha256 digest",
                             digest ? digest : "");
    if (error == 0)
        error = get_blob_cx(&cx, repo, digest, max, body, len);
    call_dispose(&cx);
    return error;
}

/* ---- tags ---- */

/* The URL of the rel="next" entry of a Link header into out, or "" if none. */
static void link_next(const char *link, char *out, size_t n)
{
    out[0] = '\0';
    const char *p = link;
    while ((p = strchr(p, '<')) != NULL) {
        const char *end = strchr(p, '>');
        if (!end)
            return;
        const char *params = end + 1;
        size_t plen = strcspn(params, "<");
        const char *rel = strstr(params, "rel=");
        if (rel && (size_t)(rel - params) < plen &&
            (strncmp(rel, "rel=\"next\"", 10) == 0 || strncmp(rel, "rel=next", 8) == 0)) {
            size_t ulen = (size_t)(end - p - 1);
            if (ulen < n) {
                memcpy(out, p + 1, ulen);
                out[ulen] = '\0';
            }
            return;
        }
        p = end + 1;
    }
}

/* Whether path, query aside, is exactly this repository's tag list: an absolute-path Link
 * could otherwise name another repository of the same host. */
static bool own_tag_list(const reg_call *cx, const char *path)
{
    char want[300];
    int n = snprintf(want, sizeof(want), "/v2/%s/tags/list", cx->repository);
    return n > 0 && (size_t)n < sizeof(want) && strcspn(path, "?") == (size_t)n &&
           memcmp(path, want, (size_t)n) == 0;
}

/* Turns a Link target into a path on cx's host: relative paths as they are, absolute URLs
 * only when they point at the same host; either must be this repository's tag list. */
static int next_path(const reg_call *cx, const char *target, sw_buf *path)
{
    char host[256];
    bool https;
    sw_buf_clear(path);
    for (const char *p = target; *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == 0x7f)
            return sw_error_set(SW_EINVALID, "tags list of %s: bad Link header", cx->display);
    if (target[0] == '/') {
        sw_buf_puts(path, target);
    } else if (sw_registry__url_host(target, host, sizeof(host), &https) &&
               strcasecmp(host, cx->host) == 0) {
        const char *rest = strchr(target + (https ? 8 : 7), '/');
        sw_buf_puts(path, rest ? rest : "/");
    } else {
        return sw_error_set(SW_EUNSUPPORTED, "tags list of %s: next page is on another host",
                            cx->display);
    }
    if (sw_buf_error(path) < 0)
        return sw_error_set(SW_EINVALID, "tags list of %s: Link too long", cx->display);
    if (!own_tag_list(cx, sw_buf_cstr(path)))
        return sw_error_set(SW_EINVALID,
                            "tags list of %s: the next page %.200s is not this repository's tag "
                            "list",
                            cx->display, sw_buf_cstr(path));
    return 0;
}

typedef struct tag_list {
    char **v;
    size_t n, cap, max;
    json_t *seen; /* the tags of v as keys (a hash set): repeats are found in O(1) */
} tag_list;

/* Appends the valid tags of one page not listed yet (invalid names and repeats of earlier
 * tags are skipped), stopping at tl->max. */
static int add_page(const reg_call *cx, const reg_resp *resp, tag_list *tl)
{
    json_t *root = NULL;
    if (sw_json_parse(resp->body.ptr ? resp->body.ptr : "", resp->body.len, 8, 0, &root) < 0 ||
        !json_is_object(root)) {
        json_decref(root);
        return sw_error_set(SW_EINVALID, "tags list of %s is not a JSON object", cx->display);
    }
    json_t *tags = json_object_get(root, "tags");
    if (tags && !json_is_null(tags) && !json_is_array(tags)) {
        json_decref(root);
        return sw_error_set(SW_EINVALID, "tags list of %s: tags is not an array", cx->display);
    }
    size_t i;
    json_t *t;
    json_array_foreach(tags, i, t)
    {
        const char *s = json_string_value(t);
        if (tl->n >= tl->max)
            break;
        if (!s || !sw_ref_tag_valid(s) || json_object_get(tl->seen, s))
            continue;
        if (tl->n == tl->cap) {
            tl->cap = tl->cap ? tl->cap * 2 : 16;
            tl->v = sw_realloc(tl->v, tl->cap * sizeof(char *));
        }
        tl->v[tl->n++] = sw_strdup(s);
        json_object_set_new_nocheck(tl->seen, s, json_null());
    }
    json_decref(root);
    return 0;
}

/* Follows the Link pages of the tag list; a next page already fetched is an error, so pages
 * looping A -> B -> A end at once instead of at TAGS_MAX_PAGES. A page linking to itself
 * simply ends the list. */
static int list_tags_cx(reg_call *cx, const sw_ref *repo, tag_list *tl)
{
    char what[WHAT_MAX], next[2048];
    sw_buf path = SW_BUF_INIT(4096);
    json_t *visited = json_object(); /* the paths fetched, as keys */
    reg_resp resp;
    sw_registry__resp_init(&resp);
    int error = 0;
    snprintf(what, sizeof(what), "repository %s", cx->display);
    size_t page = tl->max < TAGS_PAGE_SIZE ? tl->max : TAGS_PAGE_SIZE;
    sw_buf_printf(&path, "/v2/%s/tags/list?n=%zu", repo->repository, page ? page : 1);
    for (int pages = 0; pages < TAGS_MAX_PAGES && tl->n < tl->max; pages++) {
        if (pages && cx->deadline_ms && sw_time_mono_ms() >= cx->deadline_ms) {
            error = sw_error_set(SW_ETIMEOUT,
                                 "tags list of %s: still paging at the deadline (%d pages read)",
                                 cx->display, pages);
            break;
        }
        json_object_set_new_nocheck(visited, sw_buf_cstr(&path), json_null());
        error = exec(cx, "GET", sw_buf_cstr(&path), "application/json", TAGS_PAGE_MAX_BYTES, &resp);
        if (error < 0)
            break;
        if (!ok_status(&resp)) {
            error = status_error(cx, &resp, what);
            break;
        }
        error = add_page(cx, &resp, tl);
        link_next(resp.link, next, sizeof(next));
        if (error < 0 || !next[0] || strcmp(next, sw_buf_cstr(&path)) == 0)
            break;
        error = next_path(cx, next, &path);
        if (error == 0 && json_object_get(visited, sw_buf_cstr(&path)))
            error = sw_error_set(SW_EINVALID,
                                 "tags list of %s: the registry's tag list pages loop back to "
                                 "%.200s",
                                 cx->display, sw_buf_cstr(&path));
        if (error < 0)
            break;
    }
    json_decref(visited);
    sw_buf_dispose(&path);
    sw_registry__resp_dispose(&resp);
    return error;
}

int sw_registry_list_tags(sw_registry *r, const sw_registry_call *c, const sw_ref *repo, size_t max,
                          char ***tags, size_t *count)
{
    reg_call cx;
    tag_list tl = {.max = max, .seen = json_object()};
    int error = call_init(r, c, repo, &cx);
    if (error == 0 && (!tags || !count))
        error = sw_error_set(SW_EINVALID, "list_tags: no output");
    if (error == 0)
        error = list_tags_cx(&cx, repo, &tl);
    call_dispose(&cx);
    json_decref(tl.seen);
    if (error < 0) {
        sw_registry_tags_free(tl.v, tl.n);
        return error;
    }
    *tags = tl.v ? tl.v : sw_calloc(1, sizeof(char *));
    *count = tl.n;
    return 0;
}

void sw_registry_tags_free(char **tags, size_t count)
{
    if (!tags)
        return;
    for (size_t i = 0; i < count; i++)
        sw_free(tags[i]);
    sw_free(tags);
}
