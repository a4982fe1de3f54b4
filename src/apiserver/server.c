/* server: libmicrohttpd front end, auth, dispatch, health and compaction (see server.h). */
#include "apiserver/server.h"

#include "apiserver/tls.h"

#include "apiserver/connlimit.h"
#include "apiserver/metrics.h"
#include "apiserver/notify.h"
#include "apiserver/protobuf.h"
#include "apiserver/watchcache.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct sw_apiserver {
    struct MHD_Daemon *daemon;
    sw_api *api;
    sw_apiserver_opts opts;
    pthread_t compactor;
    bool compactor_running;
    pthread_mutex_t mu;
    pthread_cond_t cond;    /* CLOCK_MONOTONIC: stopping (the compactor waits on it) */
    pthread_cond_t drained; /* CLOCK_MONOTONIC: active reached 0 */
    bool stopping;
    int active; /* requests begun and not completed (under mu) */
    sw_connlimit *limit;
    sw_metrics *metrics;
    uint64_t body_bytes; /* atomic: request bytes all connections hold in memory */
};

#define DRAIN_MS 5000 /* how long a stop waits for requests in progress to be answered */

#define MAX_UPLOAD (2ULL * 1024 * 1024 * 1024)
/* A request no credential vouches for (/healthz, /version...) needs no body to speak of. */
#define MAX_ANONYMOUS_BODY (16u * 1024)

typedef struct conn_ctx {
    sw_buf body;
    bool too_big;
    int64_t start_ms;
    int upload_fd; /* a streamed upload (instantiatebinary) goes to a file */
    char upload_path[4200];
    uint64_t upload_len;
    int upload_errno; /* the upload could not be stored: why */
    bool upload;      /* an upload (start_upload), whatever became of its file */
    bool answered;    /* reject_early replied from the headers */
    bool over_budget; /* the bodies in flight together hold all the server allows */
    uint64_t held;    /* what this body adds to body_bytes */
    sw_user user;     /* who the request authenticated as */
    bool rbac;        /* the authorizer judged it */
} conn_ctx;

/* Binary build uploads are streamed to <data dir>/uploads, never held in memory. Only called
 * for authenticated requests. */
static void start_upload(sw_apiserver *s, conn_ctx *cc, const char *method, const char *url)
{
    const char *dir = s->api->kctx.data_dir;
    if (!dir || strcmp(method, "POST") || !sw_str_suffix(url, "/instantiatebinary"))
        return;
    cc->upload = true;
    snprintf(cc->upload_path, sizeof(cc->upload_path), "%s/uploads", dir);
    if (mkdir(cc->upload_path, 0700) < 0 && errno != EEXIST)
        cc->upload_errno = errno;
    snprintf(cc->upload_path, sizeof(cc->upload_path), "%s/uploads/upload-XXXXXX", dir);
    cc->upload_fd = cc->upload_errno ? -1 : mkstemp(cc->upload_path);
    if (cc->upload_fd < 0) {
        cc->upload_errno = cc->upload_errno ? cc->upload_errno : errno;
        cc->upload_path[0] = '\0';
    }
}

/* Closes and removes the upload's file (is_upload stays true). */
static void upload_drop(conn_ctx *cc)
{
    if (cc->upload_fd >= 0)
        close(cc->upload_fd);
    cc->upload_fd = -1;
    if (cc->upload_path[0])
        unlink(cc->upload_path);
    cc->upload_path[0] = '\0';
}

static void upload_write(conn_ctx *cc, const char *data, size_t n)
{
    cc->upload_len += n;
    bool too_big = cc->upload_len > MAX_UPLOAD;
    ssize_t w = too_big ? 0 : write(cc->upload_fd, data, n);
    if (too_big || w != (ssize_t)n) {
        cc->too_big = too_big;
        if (!too_big)
            cc->upload_errno = w < 0 ? errno : ENOSPC;
        upload_drop(cc);
    }
}

/* Whether the request is an upload that the server spools to a file (see start_upload). */
static bool is_upload(const conn_ctx *cc)
{
    return cc->upload;
}

static const char *query_cb(void *conn, const char *key)
{
    return MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, key);
}

static const char *header_cb(void *conn, const char *key)
{
    return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, key);
}

/* POST /apis/build.openshift.io/v1/namespaces/<ns>/buildconfigs/<bc>/webhooks/<secret>/<type>
 * and nothing else: git hosts and registries cannot send a bearer token, so the secret in the
 * path is the credential (checked by the handler; 401 when wrong), as OpenShift's webhook URLs
 * are meant to be used. The path must have exactly that shape: a BuildConfig named "webhooks"
 * or a namespace named "buildconfigs" must not open other subresources to anonymous callers. */
typedef struct webhook_ref {
    char part[6][256]; /* ns, "buildconfigs", bc, "webhooks", secret, type */
} webhook_ref;

/* Whether method and path are a webhook call; its segments go to *out (may be NULL). */
static bool is_webhook(const char *method, const char *path, webhook_ref *out)
{
    static const char prefix[] = "/apis/build.openshift.io/v1/namespaces/";
    static const char *const shape[] = {NULL, "buildconfigs", NULL, "webhooks", NULL, NULL};
    if (strcmp(method, "POST") || !sw_str_prefix(path, prefix))
        return false;
    const char *p = path + sizeof(prefix) - 1;
    for (size_t i = 0; i < sizeof(shape) / sizeof(shape[0]); i++) {
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        bool last = i + 1 == sizeof(shape) / sizeof(shape[0]);
        if (len == 0 || (len <= 2 && !strncmp(p, "..", len)) || (last != !end))
            return false;
        if (shape[i] && (strlen(shape[i]) != len || strncmp(p, shape[i], len)))
            return false;
        if (out && len >= sizeof(out->part[i]))
            return false;
        if (out) {
            memcpy(out->part[i], p, len);
            out->part[i][len] = '\0';
        }
        p = end ? end + 1 : p + len;
    }
    return true;
}

/* /healthz, /livez, /readyz, each with ?verbose and one path per check (/readyz/store), as
 * kube-apiserver answers them: "ok", or 500 listing the failed checks. livez has only ping: a
 * server whose store is down is alive (restarting it would not help) but neither healthy nor
 * ready. */
static bool health_path(const char *url)
{
    static const char *const roots[] = {"/healthz", "/livez", "/readyz"};
    for (size_t i = 0; i < 3; i++) {
        size_t n = strlen(roots[i]);
        if (!strncmp(url, roots[i], n) && (url[n] == '\0' || url[n] == '/'))
            return true;
    }
    return false;
}

/* What authenticate() found: a path anyone may call, a credential that opens its one path (a
 * webhook secret, the registry's notification token), or one that makes the caller a user
 * (a token, a client certificate; or --insecure-anonymous). */
enum { AUTH_NONE = 0, AUTH_PATH = 1, AUTH_USER = 2 };

/* From the request's headers and path alone, before any of its body is read: AUTH_*, else
 * SW_EUNAUTHORIZED / SW_EFORBIDDEN with the message set. *rbac: whether the authorizer judges
 * what the user asks (not for build tokens, whose scope buildauth.c checked, nor for paths a
 * credential opens). */
static int authenticate(sw_apiserver *s, struct MHD_Connection *conn, const char *method,
                        const char *path, sw_user *u, bool *rbac)
{
    const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    webhook_ref hook;
    sw_user_init(u, "system:anonymous");
    *rbac = false;
    if (s->opts.anonymous) {
        sw_user_add_group(u, "system:unauthenticated");
        return AUTH_USER;
    }
    if (health_path(path) || !strcmp(path, "/version"))
        return AUTH_NONE;
    if (is_webhook(method, path, &hook)) {
        sw_user_init(u, "system:webhook");
        return sw_api_webhook_check(s->api, hook.part[0], hook.part[2], hook.part[4],
                                    hook.part[5]) < 0
                   ? SW_EUNAUTHORIZED
                   : AUTH_PATH;
    }
    if (sw_notify_matches(path)) {
        sw_user_init(u, "system:registry");
        return sw_notify_authorized(s->api->notifier, h)
                   ? AUTH_PATH
                   : sw_error_set(SW_EUNAUTHORIZED, "Unauthorized");
    }
    if (!h && s->opts.client_ca) {
        /* a client certificate the client CA signed: CN is the user, each O a group */
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
        char cn[256], groups[1024];
        if (sw_tls_peer_identity(ci ? ci->tls_session : NULL, cn, sizeof(cn), groups,
                                 sizeof(groups)) < 0)
            return sw_error_set(SW_EUNAUTHORIZED, "Unauthorized");
        sw_user_init(u, cn);
        for (char *g = groups, *next; *g; g = next) {
            next = g + strcspn(g, ",");
            if (*next)
                *next++ = '\0';
            sw_user_add_group(u, g);
        }
        sw_user_add_group(u, "system:authenticated");
        *rbac = true;
        return AUTH_USER;
    }
    if (!h || strncmp(h, "Bearer ", 7))
        return sw_error_set(SW_EUNAUTHORIZED, "Unauthorized");
    const char *tok = h + 7;
    if (sw_str_prefix(tok, "swb1.")) {
        sw_user_init(u, "system:build");
        int error = sw_api_build_token_check(s->api, tok, method, path);
        return error < 0 ? error : AUTH_USER;
    }
    int error = sw_api_token_user(s->api, tok, NULL, 0, u, NULL, 0);
    if (error == SW_EUNAUTHORIZED) /* why stays in the server's log, as kube-apiserver's */
        sw_log(SW_LOG_INFO, "authentication failed: %s", sw_error_msg());
    if (error < 0)
        return error == SW_EUNAUTHORIZED ? sw_error_set(SW_EUNAUTHORIZED, "Unauthorized") : error;
    *rbac = true;
    return AUTH_USER;
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    sw_stream *st = cls;
    long n = st->next(st->state, buf, max);
    if (n == SW_STREAM_CUT)
        return MHD_CONTENT_READER_END_WITH_ERROR; /* the chunked reply ends without its end */
    return n < 0 ? MHD_CONTENT_READER_END_OF_STREAM : (ssize_t)n;
}

static void stream_free(void *cls)
{
    sw_stream *st = cls;
    st->free(st->state);
    sw_free(st);
}

/* Warning: 299 - "<text>", the text as an RFC 7230 quoted-string: client-go drops a warning
 * whose inner quotes are not escaped. CR and LF become spaces. */
static void warning_value(const char *text, char *out, size_t n)
{
    size_t o = sw_strlcpy(out, "299 - \"", n);
    for (; *text && o + 3 < n; text++) {
        char c = *text == '\n' || *text == '\r' ? ' ' : *text;
        if (c == '"' || c == '\\')
            out[o++] = '\\';
        out[o++] = c;
    }
    out[o++] = '"';
    out[o] = '\0';
}

static enum MHD_Result send_response(struct MHD_Connection *conn, sw_response *resp)
{
    struct MHD_Response *r;
    if (resp->stream.next) {
        sw_stream *st = sw_malloc(sizeof(*st));
        *st = resp->stream;
        resp->stream.next = NULL;
        resp->stream.free = NULL;
        r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, stream_reader, st,
                                              stream_free);
    } else {
        r = MHD_create_response_from_buffer(resp->body.len, resp->body.ptr, MHD_RESPMEM_MUST_COPY);
    }
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", resp->content_type);
    MHD_add_response_header(r, "Cache-Control", "no-cache, private");
    if (resp->warning[0]) {
        char w[600];
        warning_value(resp->warning, w, sizeof(w));
        MHD_add_response_header(r, "Warning", w);
    }
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)resp->status, r);
    MHD_destroy_response(r);
    return ret;
}

static void health(sw_apiserver *s, const sw_request *req, const char *url, sw_response *resp)
{
    static const char *const checks[] = {"ping", "store"};
    const char *name = url[1] == 'l' ? "livez" : url[1] == 'r' ? "readyz" : "healthz";
    const char *one = strchr(url + 1, '/');
    size_t nchecks = url[1] == 'l' ? 1 : 2;
    const char *vv = NULL;
    size_t vn = 0;
    bool failed = false, verbose = MHD_lookup_connection_value_n(req->conn, MHD_GET_ARGUMENT_KIND,
                                                                 "verbose", 7, &vv, &vn) == MHD_YES;
    resp->content_type = "text/plain";
    if (one && !sw_str_one_of(one + 1, (const char *const[]){"ping", "store", NULL})) {
        sw_response_error(resp, SW_ENOTFOUND, "the server could not find the requested resource",
                          NULL, NULL);
        return;
    }
    if (one && !strcmp(one + 1, "store") && nchecks == 1) {
        sw_response_error(resp, SW_ENOTFOUND, "livez has no store check", NULL, NULL);
        return;
    }
    sw_buf lines = SW_BUF_INIT(4096);
    for (size_t i = 0; i < nchecks; i++) {
        if (one && strcmp(one + 1, checks[i]))
            continue;
        bool ok = i == 0 || sw_store_health(s->api->store) == 0;
        if (!ok)
            sw_log(SW_LOG_INFO, "%s: store check failed: %s", name, sw_error_msg());
        failed = failed || !ok;
        sw_buf_printf(&lines, "[%c]%s %s\n", ok ? '+' : '-', checks[i],
                      ok ? "ok" : "failed: reason withheld");
    }
    resp->status = failed ? 500 : 200;
    if (verbose || failed)
        sw_buf_printf(&resp->body, "%s%s check %s\n", sw_buf_cstr(&lines), name,
                      failed ? "failed" : "passed");
    else
        sw_buf_puts(&resp->body, "ok");
    sw_buf_dispose(&lines);
}

/* /metrics: for whoever may get the non-resource URL /metrics (a build token may not:
 * buildauth.c). */
static void metrics(sw_apiserver *s, const sw_request *req, sw_response *resp)
{
    if (strcmp(req->method, "GET")) {
        sw_response_error(resp, SW_EMETHOD, "/metrics takes a GET", NULL, NULL);
        return;
    }
    sw_metrics_gauges g = {.body_bytes =
                               (int64_t)__atomic_load_n(&s->body_bytes, __ATOMIC_RELAXED)};
    pthread_mutex_lock(&s->mu);
    g.inflight = s->active;
    pthread_mutex_unlock(&s->mu);
    if (s->api->cache)
        sw_watchcache_stats(s->api->cache, &g.watch_events, &g.watch_bytes);
    char wal[4200];
    struct stat st;
    snprintf(wal, sizeof(wal), "%s/state.db-wal",
             s->api->kctx.data_dir ? s->api->kctx.data_dir : ".");
    g.wal_bytes = stat(wal, &st) == 0 ? (int64_t)st.st_size : -1;
    resp->status = 200;
    resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
    sw_metrics_render(s->metrics, &g, &resp->body);
}

/* Typed clients send built-in kinds as protobuf (k8s\0 + runtime.Unknown). Such a body is
 * decoded to the JSON the client would have sent (*json_out, sw_malloc'd) and the request then
 * reads as application/json. Other content types are left alone. Returns 0, or a negative code
 * with the 400/415 already in resp. */
static int protobuf_to_json(sw_request *req, char **json_out, sw_response *resp)
{
    json_t *obj = NULL;
    if (!req->content_type || !sw_str_prefix(req->content_type, SW_PROTOBUF_MEDIA_TYPE))
        return 0;
    if (!req->body_len) {
        req->content_type = NULL;
        return 0;
    }
    int error = sw_protobuf_decode(req->body, req->body_len, &obj);
    if (error < 0) {
        sw_response_error(resp, error, sw_error_msg(), NULL, NULL);
        return error;
    }
    *json_out = sw_json_dumps(obj, &req->body_len);
    req->body = *json_out;
    req->content_type = "application/json";
    json_decref(obj);
    return 0;
}

static void dispatch(sw_apiserver *s, struct MHD_Connection *conn, const char *method,
                     const char *url, conn_ctx *cc, sw_response *resp)
{
    char *pb_json = NULL;
    sw_request req = {
        .method = method,
        .path = url,
        .content_type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type"),
        .accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Accept"),
        .body = sw_buf_cstr(&cc->body),
        .body_len = cc->body.len,
        .body_file = cc->upload_path[0] ? cc->upload_path : NULL,
        .query = query_cb,
        .header = header_cb,
        .conn = conn,
        .user = cc->rbac || s->opts.anonymous || !strcmp(cc->user.name, "system:build") ? &cc->user
                                                                                        : NULL,
    };
    if (cc->over_budget) {
        char msg[128];
        snprintf(msg, sizeof(msg),
                 "the server holds as many request bodies as it may (%llu MiB); retry later",
                 (unsigned long long)(s->opts.body_budget >> 20));
        sw_response_error(resp, SW_ETOOMANY, msg, NULL, NULL);
    } else if (cc->too_big) {
        char msg[96];
        if (is_upload(cc))
            snprintf(msg, sizeof(msg), "the upload is larger than the %llu-byte limit", MAX_UPLOAD);
        else
            snprintf(msg, sizeof(msg), "the request body is larger than the %llu-byte limit",
                     (unsigned long long)cc->body.limit);
        sw_response_error(resp, SW_ELIMIT, msg, NULL, NULL);
    } else if (cc->upload_errno) {
        char msg[160];
        snprintf(msg, sizeof(msg), "the server cannot store the upload: %s",
                 sw_strerror(cc->upload_errno));
        sw_response_error(resp, SW_ERROR, msg, NULL, NULL);
    } else if (sw_notify_matches(url)) {
        /* The registry authenticates with its own token, not the admin one. */
        sw_notify_handle(s->api->notifier, &req,
                         MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization"), resp);
    } else if (health_path(url)) {
        health(s, &req, url, resp);
    } else if (!strcmp(url, "/metrics")) {
        metrics(s, &req, resp);
    } else if (sw_openapi_matches(url)) {
        sw_openapi_handle(s->api, &req, resp);
    } else if (sw_discovery_matches(url)) {
        sw_discovery_handle(s->api, &req, resp);
    } else if (!sw_rest_routes(url)) { /* 404 whatever the body is, as kube-apiserver answers */
        sw_response_error(resp, SW_ENOTFOUND, "the server could not find the requested resource",
                          NULL, NULL);
    } else if (protobuf_to_json(&req, &pb_json, resp) < 0) {
        /* resp holds the 400 or 415 */
    } else {
        sw_rest_handle(s->api, &req, resp);
    }
    sw_free(pb_json);
}

/* The path as the log shows it: a webhook URL's secret segment is replaced (whatever the
 * method), as kube-apiserver's audit log omits credentials. */
static const char *log_path(const char *url, char *out, size_t n)
{
    /* whatever the rest of the path looks like (a trailing slash, doubled slashes): the
     * segment after the last "/webhooks/" may be a secret */
    const char *w = NULL;
    for (const char *p = strstr(url, "/webhooks/"); p; p = strstr(p + 1, "/webhooks/"))
        w = p;
    if (!w)
        return url;
    const char *secret = w + strlen("/webhooks/");
    while (*secret == '/')
        secret++;
    const char *after = secret + strcspn(secret, "/");
    snprintf(out, n, "%.*s<redacted>%s", (int)(secret - url), url, after);
    return out;
}

/* Counts the request in /metrics: a resource's verb, else the lower-cased method. */
static void count_request(sw_metrics *m, const char *method, const sw_response *resp,
                          int64_t took_ms)
{
    /* the method comes from the client: a fixed set, so no caller can mint label values */
    static const char *const methods[][2] = {
        {"GET", "get"},       {"POST", "post"}, {"PUT", "put"},        {"PATCH", "patch"},
        {"DELETE", "delete"}, {"HEAD", "head"}, {"OPTIONS", "options"}};
    const char *verb = resp->verb;
    for (size_t i = 0; !verb && i < sizeof(methods) / sizeof(methods[0]); i++)
        if (!strcmp(method, methods[i][0]))
            verb = methods[i][1];
    sw_metrics_request(m, verb ? verb : "other", resp->group, resp->resource, resp->subresource,
                       resp->status, (double)took_ms / 1000.0);
}

/* Logs the request (every one at --v=2, else 5xx only), counts it, sends resp and disposes of
 * it. */
static enum MHD_Result reply(sw_apiserver *s, struct MHD_Connection *conn, const char *method,
                             const char *url, const conn_ctx *cc, sw_response *resp)
{
    char shown[1024];
    int64_t took = sw_time_mono_ms() - cc->start_ms;
    if (sw_log_enabled(SW_LOG_REQUEST)) {
        sw_log_request(SW_LOG_REQUEST, method, log_path(url, shown, sizeof(shown)), resp->status,
                       took, cc->user.name, NULL);
    } else if (resp->status >= 500) {
        char detail[1024];
        snprintf(detail, sizeof(detail), "%.*s", (int)resp->body.len, sw_buf_cstr(&resp->body));
        sw_log_request(SW_LOG_ERROR, method, log_path(url, shown, sizeof(shown)), resp->status,
                       took, cc->user.name, detail);
    }
    count_request(s->metrics, method, resp, took);
    enum MHD_Result ret = send_response(conn, resp);
    sw_response_dispose(resp);
    return ret;
}

/* Answers a request from its headers alone (the body, if any, is never read: libmicrohttpd
 * closes the connection after the reply). */
static enum MHD_Result reject_early(sw_apiserver *s, struct MHD_Connection *conn,
                                    const char *method, const char *url, conn_ctx *cc, int code,
                                    const char *msg)
{
    sw_response resp;
    sw_response_init(&resp);
    sw_response_error(&resp, code, msg, NULL, NULL);
    cc->answered = true; /* nothing more of the request is taken in */
    return reply(s, conn, method, url, cc, &resp);
}

/* The connection's entry in the limiter (its socket context), or NULL. */
static sw_connlimit_conn *limit_entry(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static void budget_release(sw_apiserver *s, conn_ctx *cc)
{
    __atomic_sub_fetch(&s->body_bytes, cc->held, __ATOMIC_RELAXED);
    cc->held = 0;
}

/* Appends a piece of the body, charging what the buffer grew by to the server's budget for
 * bodies in flight; over the budget, the body is dropped and the request will get a 429. */
static void body_append(sw_apiserver *s, conn_ctx *cc, const char *data, size_t n)
{
    if (cc->too_big || cc->over_budget)
        return;
    if (sw_buf_put(&cc->body, data, n) < 0) {
        cc->too_big = true;
        return;
    }
    uint64_t grew = cc->body.cap - cc->held;
    cc->held = cc->body.cap;
    if (__atomic_add_fetch(&s->body_bytes, grew, __ATOMIC_RELAXED) > s->opts.body_budget) {
        cc->over_budget = true;
        sw_buf_dispose(&cc->body);
        budget_release(s, cc);
    }
}

/* MHD_get_connection_values_n iterator: finds a query parameter with a NUL byte (%00), which
 * a C string would silently cut (labelSelector=%00 would select everything). */
static enum MHD_Result find_nul(void *cls, enum MHD_ValueKind kind, const char *key,
                                size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    const char **bad = cls;
    if (memchr(key, '\0', key_size) || (value && memchr(value, '\0', value_size))) {
        *bad = key;
        return MHD_NO;
    }
    return MHD_YES;
}

/* The first call for a request (its headers are in): authenticates it and refuses what the
 * headers already show is too large or malformed. */
static enum MHD_Result request_begin(sw_apiserver *s, struct MHD_Connection *conn,
                                     const char *method, const char *url, conn_ctx *cc)
{
    /* Authenticate on the headers, before any of the body is read or stored: a caller
     * without a valid credential gets its 401 at once and the body is never taken in. */
    int auth = authenticate(s, conn, method, url, &cc->user, &cc->rbac);
    /* a webhook secret or the registry's token opens one path, not a claim on connections */
    sw_connlimit_request(s->limit, limit_entry(conn), auth == AUTH_USER);
    if (auth < 0)
        return reject_early(s, conn, method, url, cc, auth, sw_error_msg());
    /* and authorized on them too: a request the user may not make is refused unread */
    if (cc->rbac && s->api->authz) {
        sw_authz_attrs at;
        sw_authz_attrs_from(
            method, url, MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "watch"),
            MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "fieldSelector"), &at);
        if (!sw_authz_allowed(s->api->authz, &cc->user, &at, NULL, 0)) {
            char msg[1200];
            sw_authz_denied_message(&cc->user, &at, msg, sizeof(msg));
            return reject_early(s, conn, method, url, cc, SW_EFORBIDDEN, msg);
        }
    }
    const char *nul = NULL;
    MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, find_nul, &nul);
    if (nul) {
        char msg[160];
        snprintf(msg, sizeof(msg), "query parameter %.64s: a NUL byte (%%00) is not allowed", nul);
        return reject_early(s, conn, method, url, cc, SW_EBADREQUEST, msg);
    }
    size_t cap = auth == AUTH_NONE ? MAX_ANONYMOUS_BODY : SW_API_MAX_BODY;
    sw_buf_init(&cc->body, cap);
    start_upload(s, cc, method, url);
    /* a body that says it is too large is refused before it is sent */
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
    uint64_t len = 0, max = is_upload(cc) ? MAX_UPLOAD : cap;
    if (cl && sw_parse_u64(&cl, UINT64_MAX, &len) == 0 && len > max) {
        char msg[96];
        upload_drop(cc);
        snprintf(msg, sizeof(msg), "the %s is larger than the %llu-byte limit",
                 is_upload(cc) ? "upload" : "request body", (unsigned long long)max);
        return reject_early(s, conn, method, url, cc, SW_ELIMIT, msg);
    }
    return MHD_YES;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls)
{
    sw_apiserver *s = cls;
    conn_ctx *cc = *con_cls;
    if (!cc) {
        cc = sw_calloc(1, sizeof(*cc));
        sw_buf_init(&cc->body, MAX_ANONYMOUS_BODY);
        cc->start_ms = sw_time_mono_ms();
        cc->upload_fd = -1;
        *con_cls = cc;
        pthread_mutex_lock(&s->mu);
        s->active++;
        pthread_mutex_unlock(&s->mu);
        return request_begin(s, conn, method, url, cc);
    }
    if (cc->answered) {
        *upload_size = 0;
        return MHD_YES;
    }
    if (*upload_size) {
        if (cc->upload_fd >= 0)
            upload_write(cc, upload, *upload_size);
        else if (!is_upload(cc)) /* a failed upload's rest is dropped, not held */
            body_append(s, cc, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (cc->upload_fd >= 0) {
        close(cc->upload_fd);
        cc->upload_fd = -1;
    }
    /* The request is in: it may take as long as it needs (an import, a watch, a log follow);
     * the idle timeout applies again once it is answered (completed). */
    MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
    sw_response resp;
    sw_response_init(&resp);
    dispatch(s, conn, method, url, cc, &resp);
    return reply(s, conn, method, url, cc, &resp);
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    sw_apiserver *s = cls;
    conn_ctx *cc = *con_cls;
    if (!cc)
        return;
    pthread_mutex_lock(&s->mu);
    if (--s->active == 0)
        pthread_cond_broadcast(&s->drained);
    pthread_mutex_unlock(&s->mu);
    if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
        MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT, s->opts.idle_timeout);
    sw_connlimit_idle(s->limit, limit_entry(conn));
    budget_release(s, cc);
    if (cc->upload_fd >= 0)
        close(cc->upload_fd);
    if (cc->upload_path[0])
        unlink(cc->upload_path); /* gone already when a build kept it */
    sw_buf_dispose(&cc->body);
    sw_free(cc);
    *con_cls = NULL;
}

static enum MHD_Result accept_policy(void *cls, const struct sockaddr *addr, socklen_t len)
{
    sw_apiserver *s = cls;
    return sw_connlimit_admit(s->limit, addr, len) ? MHD_YES : MHD_NO;
}

/* Every connection has an entry in the limiter from its start to just before its socket is
 * closed (connlimit.h). */
static void connection_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                              enum MHD_ConnectionNotificationCode toe)
{
    sw_apiserver *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        sw_connlimit_closed(s->limit, *socket_context);
        *socket_context = NULL;
        return;
    }
    const union MHD_ConnectionInfo *fd =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *addr =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    *socket_context = fd && addr ? sw_connlimit_opened(s->limit, fd->connect_fd, addr->client_addr,
                                                       sizeof(struct sockaddr_in))
                                 : NULL;
}

/* libmicrohttpd's own messages (TLS handshake failures of probing clients and the like). */
static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
    char line[512];
    vsnprintf(line, sizeof(line), fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    char shown[600];
    sw_log(SW_LOG_INFO, "http: %s", log_path(line, shown, sizeof(shown))); /* may quote a URL */
}

static void *compactor_main(void *arg)
{
    sw_apiserver *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stopping) {
        /* only the interval or a stop ends the wait, never a spurious wakeup or a clock step */
        struct timespec until = sw_time_mono_deadline((int64_t)s->opts.compact_interval * 1000);
        while (!s->stopping && pthread_cond_timedwait(&s->cond, &s->mu, &until) != ETIMEDOUT)
            ;
        if (s->stopping)
            break;
        pthread_mutex_unlock(&s->mu);
        int64_t target = sw_store_current_revision(s->api->store) - s->opts.compact_keep;
        if (target > sw_store_compacted_revision(s->api->store)) {
            /* several servers on one etcd: one of them compacts per interval */
            int error = sw_store_compact_round(s->api->store, target);
            if (error < 0)
                sw_log(SW_LOG_ERROR, "compaction to revision %lld failed: %s", (long long)target,
                       sw_error_msg());
            else if (error == 1)
                sw_log(SW_LOG_INFO, "compacted the store to revision %lld", (long long)target);
            else
                sw_log(SW_LOG_INFO, "another server compacts the store this round");
        }
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int sw_apiserver_start(sw_apiserver **out, sw_api *api, const sw_apiserver_opts *opts)
{
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(opts->port);
    if (inet_pton(AF_INET, opts->host, &addr.sin_addr) != 1)
        return sw_error_set(SW_EINVALID, "--listen: %s is not an IPv4 address", opts->host);
    sw_apiserver *s = sw_calloc(1, sizeof(*s));
    s->api = api;
    s->opts = *opts;
    pthread_mutex_init(&s->mu, NULL);
    sw_time_cond_init(&s->cond);
    sw_time_cond_init(&s->drained);
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | MHD_USE_ERROR_LOG | MHD_USE_ITC;
    sw_connlimit_opts lo = {.max = opts->max_connections,
                            .per_address = opts->max_per_address,
                            .header_timeout_ms = opts->header_timeout_ms};
    if (sw_connlimit_new(&s->limit, &lo) < 0) {
        sw_free(s);
        return SW_ERROR;
    }
    s->metrics = sw_metrics_new();
    /* libmicrohttpd's own limit leaves room for connections the limiter cut that are still
     * closing; the limiter keeps the real one (connlimit.h). */
    struct MHD_OptionItem o[16] = {
        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_logger, NULL},
        {MHD_OPTION_SOCK_ADDR, 0, &addr},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, s},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)connection_notify, s},
        {MHD_OPTION_CONNECTION_LIMIT, (intptr_t)opts->max_connections + 64, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)opts->idle_timeout, NULL},
        {MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024, NULL},
    };
    size_t n = 7;
    if (opts->tls_cert) {
        flags |= MHD_USE_TLS;
        o[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)opts->tls_cert};
        o[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)opts->tls_key};
        if (opts->client_ca)
            o[n++] =
                (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, (void *)opts->client_ca};
    }
    o[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    s->daemon = MHD_start_daemon(flags, 0, accept_policy, s, handler, s, MHD_OPTION_ARRAY, o,
                                 MHD_OPTION_END);
    if (!s->daemon) {
        int e = errno;
        sw_connlimit_free(s->limit);
        sw_metrics_free(s->metrics);
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cond);
        sw_free(s);
        return sw_error_set(SW_ERROR, "cannot listen on %s:%u: %s", opts->host, opts->port,
                            sw_strerror(e));
    }
    if (opts->compact_interval > 0 && pthread_create(&s->compactor, NULL, compactor_main, s) == 0)
        s->compactor_running = true;
    *out = s;
    return 0;
}

void sw_apiserver_stop(sw_apiserver *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mu);
    __atomic_store_n(&s->api->kctx.stopping, true, __ATOMIC_RELEASE); /* log follows end */
    if (s->compactor_running)
        pthread_join(s->compactor, NULL);
    sw_watchcache_close(s->api->cache); /* watches end */
    /* No new connections; requests in progress get their answers (for up to DRAIN_MS), then
     * every connection is closed. */
    MHD_socket lsock = MHD_quiesce_daemon(s->daemon);
    if (lsock != MHD_INVALID_SOCKET)
        shutdown(lsock, SHUT_RDWR); /* new connections are refused, not left in the backlog */
    struct timespec until = sw_time_mono_deadline(DRAIN_MS);
    pthread_mutex_lock(&s->mu);
    while (s->active > 0 && pthread_cond_timedwait(&s->drained, &s->mu, &until) == 0)
        ;
    if (s->active > 0)
        sw_log(SW_LOG_WARN, "stopping with %d request(s) still in progress", s->active);
    pthread_mutex_unlock(&s->mu);
    MHD_stop_daemon(s->daemon);
    sw_connlimit_free(s->limit);
    sw_metrics_free(s->metrics);
    if (lsock != MHD_INVALID_SOCKET)
        close(lsock);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cond);
    pthread_cond_destroy(&s->drained);
    sw_free(s);
}
