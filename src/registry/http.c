/* http: the registry client's libcurl transport. Each host has a pool of at most max_per_host
 * easy handles; a request takes one (waiting on the host's condition variable when all are
 * busy), so the pool is both the per-registry concurrency limit and the connection cache:
 * a handle keeps its connection (HTTP/1.1 keep-alive or HTTP/2) between requests.
 * Retries of 429 (Retry-After honoured), 5xx and transient network errors live here. */
#include "registry/client_int.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#ifndef SW_VERSION
#define SW_VERSION "0"
#endif

/* Streamed transfers have no total time limit; one slower than this for a whole stall time
 * (the timeout, at least 60 s) is ended as stuck. */
#define STREAM_LOW_SPEED 1024L /* bytes per second */

/* ---- hosts ---- */

/* The host entry for name, created on first use. Caller holds r->mu. */
static reg_host *host_get_locked(sw_registry *r, const char *name)
{
    for (reg_host *h = r->hosts; h; h = h->next)
        if (strcmp(h->name, name) == 0)
            return h;
    reg_host *h = sw_calloc(1, sizeof(*h));
    sw_strlcpy(h->name, name, sizeof(h->name));
    h->pool = sw_httpc_pool_new(r->max_per_host, r->max_per_host);
    if (sw_registry__down(r))
        sw_httpc_pool_shutdown(h->pool);
    h->next = r->hosts;
    r->hosts = h;
    return h;
}

void sw_registry__hosts_free(sw_registry *r)
{
    reg_host *h = r->hosts;
    while (h) {
        reg_host *next = h->next;
        sw_httpc_pool_free(h->pool);
        sw_free(h);
        h = next;
    }
    r->hosts = NULL;
}

int sw_registry__host_scheme(sw_registry *r, const char *host)
{
    pthread_mutex_lock(&r->mu);
    int s = host_get_locked(r, host)->scheme;
    pthread_mutex_unlock(&r->mu);
    return s;
}

void sw_registry__set_host_scheme(sw_registry *r, const char *host, int scheme)
{
    pthread_mutex_lock(&r->mu);
    host_get_locked(r, host)->scheme = scheme;
    pthread_mutex_unlock(&r->mu);
}

bool sw_registry__host_basic(sw_registry *r, const char *host)
{
    pthread_mutex_lock(&r->mu);
    bool b = host_get_locked(r, host)->basic;
    pthread_mutex_unlock(&r->mu);
    return b;
}

void sw_registry__set_host_basic(sw_registry *r, const char *host)
{
    pthread_mutex_lock(&r->mu);
    host_get_locked(r, host)->basic = true;
    pthread_mutex_unlock(&r->mu);
}

bool sw_registry__down(const sw_registry *r)
{
    return __atomic_load_n(&r->down, __ATOMIC_ACQUIRE);
}

bool sw_registry_is_down(const sw_registry *r)
{
    return sw_registry__down(r);
}

void sw_registry_shutdown(sw_registry *r)
{
    pthread_mutex_lock(&r->mu);
    __atomic_store_n(&r->down, true, __ATOMIC_RELEASE);
    for (reg_host *h = r->hosts; h; h = h->next)
        sw_httpc_pool_shutdown(h->pool);
    pthread_mutex_unlock(&r->mu);
}

/* Takes a slot of host (blocking while all are in use) and returns its handle; NULL once the
 * registry is shut down. */
static CURL *handle_acquire(sw_registry *r, const char *host)
{
    pthread_mutex_lock(&r->mu);
    sw_httpc_pool *p = host_get_locked(r, host)->pool; /* hosts live until the registry */
    pthread_mutex_unlock(&r->mu);
    return sw_httpc_take(p);
}

/* Returns the slot. The handle is reset (keeping its connection) so it holds no pointer into
 * a finished request. */
static void handle_release(sw_registry *r, const char *host, CURL *c)
{
    pthread_mutex_lock(&r->mu);
    sw_httpc_pool *p = host_get_locked(r, host)->pool;
    pthread_mutex_unlock(&r->mu);
    sw_httpc_give(p, c, false);
}

bool sw_registry__url_host(const char *url, char *out, size_t n, bool *https)
{
    size_t skip;
    if (strncasecmp(url, "https://", 8) == 0)
        skip = 8, *https = true;
    else if (strncasecmp(url, "http://", 7) == 0)
        skip = 7, *https = false;
    else
        return false;
    const char *h = url + skip;
    size_t len = strcspn(h, "/?#");
    if (len == 0 || len >= n || memchr(h, '@', len))
        return false; /* no host, or userinfo in the URL */
    memcpy(out, h, len);
    out[len] = '\0';
    return true;
}

/* ---- responses ---- */

void sw_registry__resp_init(reg_resp *resp)
{
    memset(resp, 0, sizeof(*resp));
    resp->content_length = -1;
    resp->chunk_min = -1;
    sw_buf_init(&resp->body, (size_t)-1 / 2);
    sw_buf_init(&resp->www_auth, SW_CHALLENGE_HEADER_MAX);
}

void sw_registry__resp_dispose(reg_resp *resp)
{
    sw_buf_dispose(&resp->body);
    sw_buf_dispose(&resp->www_auth);
}

/* Forgets the headers of an earlier response (a redirect, or an earlier attempt). */
static void resp_clear_headers(reg_resp *resp)
{
    resp->status = 0;
    resp->content_length = -1;
    resp->content_type[0] = resp->digest[0] = resp->retry_after[0] = resp->link[0] = '\0';
    resp->location[0] = '\0';
    resp->chunk_min = -1;
    sw_buf_clear(&resp->www_auth);
}

static void resp_reset(reg_resp *resp)
{
    resp_clear_headers(resp);
    sw_buf_clear(&resp->body);
    resp->code = CURLE_OK;
    resp->curl_msg[0] = '\0';
    resp->too_large = false;
}

static bool is_2xx(long status)
{
    return status >= 200 && status < 300;
}

/* "HTTP/1.1 200 OK" or "HTTP/2 200": the status code, or 0. */
static long status_of(const char *line, size_t n)
{
    const char *sp = memchr(line, ' ', n);
    if (!sp || (size_t)(sp - line) + 4 > n)
        return 0;
    long code = 0;
    for (int i = 1; i <= 3; i++) {
        char c = sp[i];
        if (c < '0' || c > '9')
            return 0;
        code = code * 10 + (c - '0');
    }
    return code;
}

/* Copies the trimmed value of a header line into out (truncated to fit). */
static void header_value(const char *v, size_t n, char *out, size_t cap)
{
    while (n && (*v == ' ' || *v == '\t'))
        v++, n--;
    while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    if (n >= cap)
        n = cap - 1;
    memcpy(out, v, n);
    out[n] = '\0';
}

static bool header_is(const char *line, size_t n, const char *name, const char **value,
                      size_t *vlen)
{
    size_t k = strlen(name);
    if (n <= k || line[k] != ':' || strncasecmp(line, name, k) != 0)
        return false;
    *value = line + k + 1;
    *vlen = n - k - 1;
    return true;
}

static void on_content_length(reg_resp *resp, const char *v, size_t vn)
{
    char tmp[32];
    header_value(v, vn, tmp, sizeof(tmp));
    uint64_t cl;
    if (sw_str_to_u64(tmp, &cl) == 0 && cl <= INT64_MAX)
        resp->content_length = (int64_t)cl;
    if (is_2xx(resp->status) && resp->content_length > (int64_t)resp->body_max)
        resp->too_large = true;
}

static void on_chunk_min(reg_resp *resp, const char *v, size_t vn)
{
    char tmp[32];
    uint64_t n;
    header_value(v, vn, tmp, sizeof(tmp));
    if (sw_str_to_u64(tmp, &n) == 0 && n <= INT64_MAX)
        resp->chunk_min = (int64_t)n;
}

static void on_www_authenticate(reg_resp *resp, const char *v, size_t vn)
{
    char tmp[4096];
    header_value(v, vn, tmp, sizeof(tmp));
    if (resp->www_auth.len)
        sw_buf_puts(&resp->www_auth, ", ");
    sw_buf_puts(&resp->www_auth, tmp);
}

static size_t on_header(char *line, size_t size, size_t nitems, void *data)
{
    reg_resp *resp = data;
    size_t n = size * nitems;
    const char *v;
    size_t vn;
    if (n >= 5 && strncmp(line, "HTTP/", 5) == 0) {
        resp_clear_headers(resp);
        resp->status = status_of(line, n);
    } else if (header_is(line, n, "content-length", &v, &vn)) {
        on_content_length(resp, v, vn);
        if (resp->too_large)
            return 0; /* refuse before reading the body */
    } else if (header_is(line, n, "content-type", &v, &vn)) {
        header_value(v, vn, resp->content_type, sizeof(resp->content_type));
    } else if (header_is(line, n, "docker-content-digest", &v, &vn)) {
        header_value(v, vn, resp->digest, sizeof(resp->digest));
    } else if (header_is(line, n, "retry-after", &v, &vn)) {
        header_value(v, vn, resp->retry_after, sizeof(resp->retry_after));
    } else if (header_is(line, n, "www-authenticate", &v, &vn)) {
        on_www_authenticate(resp, v, vn);
    } else if (header_is(line, n, "link", &v, &vn)) {
        header_value(v, vn, resp->link, sizeof(resp->link));
    } else if (header_is(line, n, "location", &v, &vn)) {
        header_value(v, vn, resp->location, sizeof(resp->location));
    } else if (header_is(line, n, "oci-chunk-min-length", &v, &vn)) {
        on_chunk_min(resp, v, vn);
    }
    return n;
}

static size_t on_body(char *data, size_t size, size_t nitems, void *userdata)
{
    reg_resp *resp = userdata;
    size_t n = size * nitems;
    if (!is_2xx(resp->status)) {
        size_t room = REG_ERROR_BODY_MAX -
                      (resp->body.len < REG_ERROR_BODY_MAX ? resp->body.len : REG_ERROR_BODY_MAX);
        sw_buf_put(&resp->body, data, n < room ? n : room);
        return n;
    }
    uint64_t have = resp->sink ? resp->sunk : resp->body.len;
    if (n > resp->body_max || have > resp->body_max - n) {
        resp->too_large = true;
        return 0;
    }
    if (resp->sink) {
        int error = resp->sink(resp->sink_payload, data, n);
        if (error < 0) {
            resp->sink_error = error;
            return 0;
        }
        resp->sunk += n;
        return n;
    }
    sw_buf_put(&resp->body, data, n);
    return n;
}

/* ---- one transfer ---- */

/* POST, PUT and PATCH carry a body (possibly empty); DELETE and the rest do not. */
static bool sends_body(const char *method)
{
    return strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
           strcmp(method, "PATCH") == 0;
}

/* Content-Type (or none: curl would send a form type), Content-Range, and no Expect:
 * 100-continue wait before a large body. */
static struct curl_slist *body_headers(const reg_req *req, struct curl_slist *list)
{
    char line[512];
    snprintf(line, sizeof(line), "Content-Type:%s%s", req->content_type ? " " : "",
             req->content_type ? req->content_type : "");
    list = curl_slist_append(list, line);
    if (req->content_range) {
        snprintf(line, sizeof(line), "Content-Range: %s", req->content_range);
        list = curl_slist_append(list, line);
    }
    return curl_slist_append(list, "Expect:");
}

static struct curl_slist *build_headers(const reg_req *req)
{
    struct curl_slist *list = NULL;
    char line[256];
    if (req->accept) {
        sw_buf b = SW_BUF_INIT(4096);
        sw_buf_printf(&b, "Accept: %s", req->accept);
        list = curl_slist_append(list, sw_buf_cstr(&b));
        sw_buf_dispose(&b);
    }
    if (req->bearer) {
        sw_buf b = SW_BUF_INIT(65536);
        sw_buf_printf(&b, "Authorization: Bearer %s", req->bearer);
        list = curl_slist_append(list, sw_buf_cstr(&b));
        OPENSSL_cleanse(b.ptr, b.len);
        sw_buf_dispose(&b);
    }
    snprintf(line, sizeof(line), "User-Agent: slipway/%s", SW_VERSION);
    list = curl_slist_append(list, line);
    if (sends_body(req->method))
        list = body_headers(req, list);
    return list;
}

/* curl's progress callback: a non-zero return aborts the transfer. */
static int on_progress(void *p, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    return sw_registry__down(p) ? 1 : 0;
}

static void set_options(sw_registry *r, CURL *c, const reg_req *req, reg_resp *resp,
                        struct curl_slist *headers)
{
    curl_easy_setopt(c, CURLOPT_URL, req->url);
    curl_easy_setopt(c, CURLOPT_SHARE, r->share);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    /* An aborted transfer leaves a name lookup in progress to its thread instead of waiting
     * for it (up to the resolver's own timeouts). */
    curl_easy_setopt(c, CURLOPT_QUICK_EXIT, 1L);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, r);
    if (resp->sink) {
        /* A streamed body lasts as long as its sink takes (a copy waits for its uploads): no
         * cap on the whole transfer, only on a stall of a full timeout (and at least 60 s). */
        long stall = r->timeout_ms / 1000 > 60 ? (long)(r->timeout_ms / 1000) : 60L;
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 0L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, STREAM_LOW_SPEED);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, stall);
    } else {
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)r->timeout_ms);
    }
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)r->timeout_ms);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, resp);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, resp->curl_msg);
    if (strcmp(req->method, "HEAD") == 0) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (strcmp(req->method, "GET") != 0) {
        /* Uploads: no redirects (a 201's Location is read by the caller, not followed). */
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
        if (sends_body(req->method) && req->stream) {
            /* Unknown length: an upload with a read callback goes out chunked (HTTP/1.1) or as
             * DATA frames (HTTP/2); it lasts as long as its producer, so a stall limit only. */
            long stall = r->timeout_ms / 1000 > 60 ? (long)(r->timeout_ms / 1000) : 60L;
            curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
            curl_easy_setopt(c, CURLOPT_READFUNCTION, req->stream);
            curl_easy_setopt(c, CURLOPT_READDATA, req->stream_payload);
            curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 0L);
            curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, STREAM_LOW_SPEED);
            curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, stall);
        } else if (sends_body(req->method)) {
            curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->send_len);
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->send_len ? req->send : "");
        }
    } else {
        /* Blob downloads may redirect to storage; curl sends neither the Authorization header
         * nor basic credentials to another host. */
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    }
    if (req->user) {
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(c, CURLOPT_USERNAME, req->user);
        curl_easy_setopt(c, CURLOPT_PASSWORD, req->pass ? req->pass : "");
    }
    if (req->insecure) {
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    }
}

static const char *http_version_name(long v)
{
    switch (v) {
    case CURL_HTTP_VERSION_1_0:
        return "HTTP/1.0";
    case CURL_HTTP_VERSION_1_1:
        return "HTTP/1.1";
    case CURL_HTTP_VERSION_2_0:
        return "HTTP/2";
    case CURL_HTTP_VERSION_3:
        return "HTTP/3";
    default:
        return "no response";
    }
}

static void transfer(sw_registry *r, const reg_req *req, reg_resp *resp)
{
    resp_reset(resp);
    resp->body_max = req->body_max;
    resp->attempts++;
    struct curl_slist *headers = build_headers(req);
    int64_t t0 = sw_time_mono_ms();
    CURL *c = handle_acquire(r, req->host);
    if (!c) {
        curl_slist_free_all(headers);
        resp->code = CURLE_ABORTED_BY_CALLBACK;
        return;
    }
    set_options(r, c, req, resp, headers);
    resp->code = curl_easy_perform(c);
    long status = 0, version = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(c, CURLINFO_HTTP_VERSION, &version);
    handle_release(r, req->host, c);
    curl_slist_free_all(headers);
    if (resp->code == CURLE_OK)
        resp->status = status;
    if (resp->code != CURLE_OK && !resp->curl_msg[0])
        sw_strlcpy(resp->curl_msg, curl_easy_strerror(resp->code), sizeof(resp->curl_msg));
    if (sw_log_enabled(SW_LOG_DEBUG))
        sw_log(SW_LOG_DEBUG, "registry: %s %s -> %ld %s(%s, %lld ms)", req->method, req->url,
               resp->status, resp->code ? resp->curl_msg : "", http_version_name(version),
               (long long)(sw_time_mono_ms() - t0));
}

/* ---- retries ---- */

static bool retryable_code(CURLcode c)
{
    switch (c) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return true;
    default:
        return false;
    }
}

static bool retryable_status(long s)
{
    return s == 429 || s == 500 || s == 502 || s == 503 || s == 504;
}

static const char *status_text(long s)
{
    switch (s) {
    case 429:
        return "Too Many Requests";
    case 500:
        return "Internal Server Error";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    default:
        return "";
    }
}

/* Milliseconds a Retry-After value (delta-seconds or HTTP-date) asks for, or -1. */
static int64_t retry_after_ms(const char *v)
{
    uint64_t secs;
    if (!*v)
        return -1;
    if (sw_str_to_u64(v, &secs) == 0)
        return secs > 86400 ? 86400000 : (int64_t)secs * 1000;
    time_t t = curl_getdate(v, NULL);
    if (t < 0)
        return -1;
    int64_t d = (int64_t)t - sw_time_now();
    return d <= 0 ? 0 : d * 1000;
}

/* 200 ms doubled per attempt, at most 2 s, with +-20% jitter. */
static int64_t backoff_ms(int attempt)
{
    int shift = attempt > 1 ? attempt - 1 : 0;
    int64_t ms = shift > 10 ? REG_BACKOFF_MAX_MS : (int64_t)REG_BACKOFF_BASE_MS << shift;
    if (ms > REG_BACKOFF_MAX_MS)
        ms = REG_BACKOFF_MAX_MS;
    uint32_t rnd;
    sw_random_bytes(&rnd, sizeof(rnd));
    return ms * (80 + (int64_t)(rnd % 41)) / 100;
}

/* Waits ms between attempts, in slices, so a stop request (r->stop) ends it early: true then.
 * Also push.c's pause between restarts. */
bool sw_registry__wait_or_stop(const sw_registry *r, int64_t ms)
{
    for (;;) {
        if (sw_registry__down(r) || (r->stop && r->stop()))
            return true;
        if (ms <= 0)
            return false;
        int64_t slice = ms < REG_STOP_POLL_MS ? ms : REG_STOP_POLL_MS;
        sw_time_sleep_ms(slice);
        ms -= slice;
    }
}

static bool tls_verify_failure(CURLcode c)
{
    return c == CURLE_PEER_FAILED_VERIFICATION || c == CURLE_SSL_CACERT_BADFILE ||
           c == CURLE_SSL_CERTPROBLEM || c == CURLE_SSL_ISSUER_ERROR ||
           c == CURLE_SSL_PINNEDPUBKEYNOTMATCH;
}

static int transport_error(const reg_call *cx, const reg_req *req, const reg_resp *resp)
{
    if (resp->code == CURLE_ABORTED_BY_CALLBACK && sw_registry__down(cx->r))
        return sw_error_set(SW_EUNAVAILABLE, "request to registry %s abandoned: shutting down",
                            req->host);
    if (resp->too_large)
        return sw_error_set(SW_EINVALID,
                            "response from %s is larger than the limit of %zu bytes "
                            "(Content-Length %lld); refused",
                            req->host, req->body_max, (long long)resp->content_length);
    if (resp->code == CURLE_OPERATION_TIMEDOUT)
        return sw_error_set(SW_ETIMEOUT, "registry %s did not answer within %d ms", req->host,
                            cx->r->timeout_ms);
    if (tls_verify_failure(resp->code))
        return sw_error_set(SW_EUNAVAILABLE,
                            "TLS verification of %s failed (%s); mark the "
                            "registry insecure to skip verification",
                            req->host, resp->curl_msg);
    if (resp->attempts > 1)
        return sw_error_set(SW_EUNAVAILABLE, "registry %s unreachable after %d attempts: %s",
                            req->host, resp->attempts, resp->curl_msg);
    return sw_error_set(SW_EUNAVAILABLE, "registry %s unreachable: %s", req->host, resp->curl_msg);
}

int sw_registry__perform(reg_call *cx, const reg_req *req, reg_resp *resp)
{
    int max_attempts = req->retry ? cx->r->retries + 1 : 1;
    resp->attempts = 0;
    for (;;) {
        transfer(cx->r, req, resp);
        if (resp->too_large || resp->sink_error || resp->sunk)
            break; /* a sink cannot take the same bytes twice */
        bool failed = resp->code != CURLE_OK;
        bool again = failed ? retryable_code(resp->code) : retryable_status(resp->status);
        if (!again || resp->attempts >= max_attempts || cx->wait_budget_ms <= 0)
            break;
        int64_t wait = -1;
        if (!failed && resp->status == 429)
            wait = retry_after_ms(resp->retry_after);
        if (wait < 0)
            wait = backoff_ms(resp->attempts);
        if (wait > cx->wait_budget_ms)
            wait = cx->wait_budget_ms;
        cx->wait_budget_ms -= wait;
        if (sw_registry__wait_or_stop(cx->r, wait))
            break; /* the answer so far is the error */
    }
    if (resp->sink_error)
        return resp->sink_error; /* its message is this thread's */
    if (resp->code != CURLE_OK || resp->too_large)
        return transport_error(cx, req, resp);
    if (req->retry && retryable_status(resp->status))
        return sw_error_set(SW_EUNAVAILABLE, "registry %s answered %ld %s after %d attempt%s",
                            req->host, resp->status, status_text(resp->status), resp->attempts,
                            resp->attempts == 1 ? "" : "s");
    return 0;
}
