/* rest: libcurl plumbing (handle pool, share handle, TLS and auth options), the REST verbs
 * over sw_resource paths, paging, HTTP status -> SW_E* mapping, and cancellable streams driven
 * by a private multi handle (see rest.h and docs/internals/client.md). */
#include "client/rest.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/httpc.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POOL_MAX 64 /* idle easy handles kept: more than the embedded controllers use at once */
#define TOKEN_REREAD_MS 60000      /* token files rotate; re-read at most this often */
#define ERROR_BODY_MAX (64u << 10) /* bytes of an error body kept to read its Status */
#define URL_MAX (64u << 10)

const sw_resource sw_res_namespaces = {"", "v1", "namespaces", false};
const sw_resource sw_res_configmaps = {"", "v1", "configmaps", true};
const sw_resource sw_res_secrets = {"", "v1", "secrets", true};
const sw_resource sw_res_events = {"", "v1", "events", true};
const sw_resource sw_res_imagestreams = {"image.openshift.io", "v1", "imagestreams", true};
const sw_resource sw_res_imagestreamtags = {"image.openshift.io", "v1", "imagestreamtags", true};
const sw_resource sw_res_imagestreamimages = {"image.openshift.io", "v1", "imagestreamimages",
                                              true};
const sw_resource sw_res_imagestreamimports = {"image.openshift.io", "v1", "imagestreamimports",
                                               true};
const sw_resource sw_res_imagestreammappings = {"image.openshift.io", "v1", "imagestreammappings",
                                                true};
const sw_resource sw_res_builds = {"build.openshift.io", "v1", "builds", true};
const sw_resource sw_res_buildconfigs = {"build.openshift.io", "v1", "buildconfigs", true};
const sw_resource sw_res_managedimages = {"image.slipway.dev", "v1alpha1", "managedimages", true};
const sw_resource sw_res_pods = {"", "v1", "pods", true};
const sw_resource sw_res_serviceaccounts = {"", "v1", "serviceaccounts", true};
const sw_resource sw_res_replicationcontrollers = {"", "v1", "replicationcontrollers", true};
const sw_resource sw_res_deploymentconfigs = {"apps.openshift.io", "v1", "deploymentconfigs", true};
const sw_resource sw_res_deployments = {"apps", "v1", "deployments", true};
const sw_resource sw_res_replicasets = {"apps", "v1", "replicasets", true};
const sw_resource sw_res_statefulsets = {"apps", "v1", "statefulsets", true};
const sw_resource sw_res_daemonsets = {"apps", "v1", "daemonsets", true};
const sw_resource sw_res_controllerrevisions = {"apps", "v1", "controllerrevisions", true};
const sw_resource sw_res_cronjobs = {"batch", "v1", "cronjobs", true};
const sw_resource sw_res_leases = {"coordination.k8s.io", "v1", "leases", true};

struct sw_client {
    char *server;          /* base URL as written in the URL of every request */
    char *connect_to;      /* CURLOPT_CONNECT_TO entry when tls-server-name is set, or NULL */
    char *ns;              /* kubeconfig namespace */
    char *ca, *cert, *key; /* PEM or NULL */
    size_t ca_len, cert_len, key_len;
    bool insecure;
    char *user_agent;
    int timeout_ms;
    size_t max_response;
    pthread_mutex_t mu; /* guards token and the pool */
    char *token;        /* or NULL */
    char *token_file;   /* re-read every TOKEN_REREAD_MS, or NULL */
    int64_t token_read_ms;
    sw_httpc_pool *pool; /* easy handles, each keeping its connections alive */
    CURLSH *share;       /* DNS cache and TLS sessions shared by every handle */
    pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];
    bool down; /* sw_client_shutdown was called (__atomic) */
};

struct sw_client_cancel {
    pthread_mutex_t mu;
    bool fired;
    CURLM *active; /* the stream's multi handle while one runs */
};

/* ---- construction ---- */

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access a, void *ud)
{
    sw_client *c = ud;
    pthread_mutex_lock(&c->share_mu[data < CURL_LOCK_DATA_LAST ? data : 0]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *ud)
{
    sw_client *c = ud;
    pthread_mutex_unlock(&c->share_mu[data < CURL_LOCK_DATA_LAST ? data : 0]);
}

static char *dup_bytes(const char *p, size_t n)
{
    return p ? sw_strndup(p, n) : NULL;
}

/* Splits scheme://host[:port]/prefix; host keeps IPv6 brackets. */
static int split_server(const char *url, sw_buf *scheme, sw_buf *host, sw_buf *port,
                        const char **rest)
{
    const char *p = strstr(url, "://"), *h, *end;
    if (!p)
        return sw_error_set(SW_EINVALID, "server %s is not a URL", url);
    sw_buf_put(scheme, url, (size_t)(p - url));
    h = p + 3;
    end = h[0] == '[' ? strchr(h, ']') : h;
    if (!end)
        return sw_error_set(SW_EINVALID, "server %s: unterminated IPv6 address", url);
    end += strcspn(end, ":/");
    sw_buf_put(host, h, (size_t)(end - h));
    if (*end == ':') {
        size_t n = strcspn(end + 1, "/");
        sw_buf_put(port, end + 1, n);
        end += 1 + n;
    } else {
        sw_buf_puts(port, sw_str_eq(sw_buf_cstr(scheme), "https") ? "443" : "80");
    }
    *rest = end;
    return 0;
}

/* With tls-server-name, requests go to https://NAME:PORT (so the certificate is checked against
 * NAME and SNI carries it) while CURLOPT_CONNECT_TO points the connection at the real host. */
static int setup_server(sw_client *c, const sw_kubeconfig *kc)
{
    const char *sni = sw_kubeconfig_tls_server_name(kc), *rest = NULL;
    sw_buf scheme = SW_BUF_INIT(64), host = SW_BUF_INIT(1024), port = SW_BUF_INIT(16);
    sw_buf url = SW_BUF_INIT(URL_MAX), ct = SW_BUF_INIT(URL_MAX);
    int error = 0;
    if (!sni) {
        c->server = sw_strdup(sw_kubeconfig_server(kc));
        return 0;
    }
    if ((error = split_server(sw_kubeconfig_server(kc), &scheme, &host, &port, &rest)) < 0)
        goto done;
    sw_buf_printf(&url, "%s://%s:%s%s", sw_buf_cstr(&scheme), sni, sw_buf_cstr(&port), rest);
    sw_buf_printf(&ct, "%s:%s:%s:%s", sni, sw_buf_cstr(&port), sw_buf_cstr(&host),
                  sw_buf_cstr(&port));
    if ((error = sw_buf_error(&url)) < 0 || (error = sw_buf_error(&ct)) < 0)
        goto done;
    c->server = sw_buf_detach(&url, NULL);
    c->connect_to = sw_buf_detach(&ct, NULL);
done:
    sw_buf_dispose(&scheme);
    sw_buf_dispose(&host);
    sw_buf_dispose(&port);
    sw_buf_dispose(&url);
    sw_buf_dispose(&ct);
    return error;
}

int sw_client_new_opts(sw_client **out, const sw_kubeconfig *kc, const sw_client_opts *opts)
{
    sw_client *c = sw_calloc(1, sizeof(*c));
    c->pool = sw_httpc_pool_new(0, POOL_MAX);
    size_t n;
    const char *p;
    int error = setup_server(c, kc);
    if (error < 0) {
        sw_client_free(c);
        return error;
    }
    c->ns = sw_strdup(sw_kubeconfig_namespace(kc));
    p = sw_kubeconfig_ca(kc, &n);
    c->ca = dup_bytes(p, n);
    c->ca_len = n;
    p = sw_kubeconfig_client_cert(kc, &n);
    c->cert = dup_bytes(p, n);
    c->cert_len = n;
    p = sw_kubeconfig_client_key(kc, &n);
    c->key = dup_bytes(p, n);
    c->key_len = n;
    c->insecure = sw_kubeconfig_insecure(kc);
    c->token = sw_kubeconfig_token(kc) ? sw_strdup(sw_kubeconfig_token(kc)) : NULL;
    c->token_file = sw_kubeconfig_token_file(kc) ? sw_strdup(sw_kubeconfig_token_file(kc)) : NULL;
    c->token_read_ms = sw_time_mono_ms();
    c->user_agent = sw_strdup(opts && opts->user_agent ? opts->user_agent : "slipway/" SW_VERSION);
    c->timeout_ms = opts && opts->timeout_ms > 0 ? opts->timeout_ms : 60000;
    c->max_response = opts && opts->max_response ? opts->max_response : (size_t)256 << 20;
    pthread_mutex_init(&c->mu, NULL);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&c->share_mu[i], NULL);
    c->share = curl_share_init();
    curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    /* Not CURL_LOCK_DATA_CONNECT: a shared connection cache is not thread-safe (curl known
     * bug 11.11). Each pooled handle keeps its own connections alive instead. */
    *out = c;
    return 0;
}

int sw_client_new(sw_client **out, const sw_kubeconfig *kc)
{
    return sw_client_new_opts(out, kc, NULL);
}

void sw_client_free(sw_client *c)
{
    if (!c)
        return;
    sw_httpc_pool_free(c->pool);
    if (c->share) {
        curl_share_cleanup(c->share);
        pthread_mutex_destroy(&c->mu);
        for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
            pthread_mutex_destroy(&c->share_mu[i]);
    }
    sw_free(c->server);
    sw_free(c->connect_to);
    sw_free(c->ns);
    sw_free(c->ca);
    sw_free(c->cert);
    sw_free(c->key);
    sw_free(c->user_agent);
    sw_free(c->token);
    sw_free(c->token_file);
    sw_free(c);
}

const char *sw_client_server(const sw_client *c)
{
    return c->server;
}

const char *sw_client_namespace(const sw_client *c)
{
    return c->ns;
}

/* ---- paths ---- */

static void put_escaped(sw_buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char ch = *p;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '.' || ch == '_' || ch == '~') {
            sw_buf_putc(b, (char)ch);
        } else {
            char e[3] = {'%', hex[ch >> 4], hex[ch & 15]};
            sw_buf_put(b, e, 3);
        }
    }
}

int sw_client_path(sw_buf *out, const sw_resource *r, const char *ns, const char *name,
                   const char *sub)
{
    if (r->group && *r->group)
        sw_buf_printf(out, "/apis/%s/%s", r->group, r->version);
    else
        sw_buf_printf(out, "/api/%s", r->version);
    if (r->namespaced && ns && *ns) {
        sw_buf_puts(out, "/namespaces/");
        put_escaped(out, ns);
    }
    sw_buf_putc(out, '/');
    sw_buf_puts(out, r->plural);
    if (name) {
        if (!*name)
            return sw_error_set(SW_EINVALID, "%s: an empty name is not allowed", r->plural);
        sw_buf_putc(out, '/');
        put_escaped(out, name);
    }
    if (name && sub) {
        sw_buf_putc(out, '/');
        sw_buf_puts(out, sub);
    }
    return sw_buf_error(out);
}

int sw_client_query(sw_buf *out, const char *key, const char *value)
{
    if (!value)
        return sw_buf_error(out);
    sw_buf_putc(out, strchr(sw_buf_cstr(out), '?') ? '&' : '?');
    sw_buf_puts(out, key);
    sw_buf_putc(out, '=');
    put_escaped(out, value);
    return sw_buf_error(out);
}

/* ---- status mapping ---- */

int sw_client_status_code(long status, const char *reason)
{
    switch (status) {
    case 400:
        return SW_EBADREQUEST;
    case 401:
        return SW_EUNAUTHORIZED;
    case 403:
        return SW_EFORBIDDEN;
    case 404:
        return SW_ENOTFOUND;
    case 405:
        return SW_EMETHOD;
    case 406:
        return SW_ENOTACCEPT;
    case 409:
        return sw_str_eq(reason, "AlreadyExists") ? SW_EEXISTS : SW_ECONFLICT;
    case 410:
        return SW_EGONE;
    case 413:
        return SW_ELIMIT;
    case 415:
        return SW_EUNSUPPORTED;
    case 422:
        return SW_EINVALID;
    case 429:
        return SW_EUNAVAILABLE;
    default:
        break;
    }
    if (status >= 500 && status <= 599)
        return SW_EUNAVAILABLE;
    return SW_ERROR;
}

/* Sets the error for a non-2xx answer from its Status body (or a generic line). */
static int status_error(long status, const char *body, size_t len, const char *method,
                        const char *path)
{
    json_t *st = NULL;
    const char *msg = NULL, *reason = NULL;
    if (len && sw_json_parse(body, len, SW_JSON_MAX_DEPTH, 0, &st) == 0 &&
        sw_str_eq(sw_json_str_at(st, "kind"), "Status")) {
        msg = sw_json_str_at(st, "message");
        reason = sw_json_str_at(st, "reason");
    }
    int code = sw_client_status_code(status, reason);
    if (msg && *msg)
        sw_error_set(code, "%s", msg);
    else
        sw_error_set(code, "%s %s: HTTP %ld%s%.*s", method, path, status, len ? ": " : "",
                     (int)(len < 200 ? len : 200), body ? body : "");
    json_decref(st);
    return code;
}

/* ---- handles ---- */

static CURL *acquire(sw_client *c)
{
    return sw_httpc_take(c->pool); /* never waits: the pool has no limit on handles out */
}

static void release(sw_client *c, CURL *e)
{
    sw_httpc_give(c->pool, e, false);
}

/* Appends the Authorization header, re-reading a rotating token file when due. */
static struct curl_slist *auth_header(sw_client *c, struct curl_slist *h)
{
    pthread_mutex_lock(&c->mu);
    int64_t now = sw_time_mono_ms();
    if (c->token_file && now - c->token_read_ms >= TOKEN_REREAD_MS) {
        char *tok = NULL;
        size_t len = 0;
        if (sw_kubeconfig_read_file(c->token_file, SW_KUBECONFIG_MAX_FILE, &tok, &len) == 0) {
            while (len && (tok[len - 1] == '\n' || tok[len - 1] == '\r'))
                tok[--len] = '\0';
            sw_free(c->token);
            c->token = tok;
        }
        c->token_read_ms = now;
    }
    if (c->token) {
        sw_buf b = SW_BUF_INIT(SW_KUBECONFIG_MAX_FILE + 64);
        sw_buf_printf(&b, "Authorization: Bearer %s", c->token);
        h = curl_slist_append(h, sw_buf_cstr(&b));
        sw_buf_dispose(&b);
    }
    pthread_mutex_unlock(&c->mu);
    return h;
}

/* One request's state. */
typedef struct call {
    const char *method;
    const char *path; /* path and query */
    const char *body; /* or NULL */
    size_t body_len;
    const char *content_type; /* of body */
    const char *accept;
    long timeout_ms;        /* 0: none */
    sw_client_read_fn read; /* an upload body pulled while sending, or NULL */
    void *read_payload;
    int64_t read_len; /* bytes fn will hand over, or -1: chunked */
    int read_error;   /* fn's negative code once it failed */
    CURL *easy;
    struct curl_slist *headers, *connect_to;
    char *url;
    char errbuf[CURL_ERROR_SIZE];
    const sw_client *client; /* set by call_setup */
} call;

static void call_dispose(sw_client *c, call *k)
{
    if (k->easy)
        release(c, k->easy);
    curl_slist_free_all(k->headers);
    curl_slist_free_all(k->connect_to);
    sw_free(k->url);
    k->easy = NULL;
    k->headers = k->connect_to = NULL;
    k->url = NULL;
}

static void set_tls(sw_client *c, CURL *e)
{
    if (c->insecure) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (c->ca) {
        struct curl_blob ca = {c->ca, c->ca_len, CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &ca);
    }
    if (c->cert && c->key) {
        struct curl_blob cert = {c->cert, c->cert_len, CURL_BLOB_COPY};
        struct curl_blob key = {c->key, c->key_len, CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cert);
        curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &key);
        curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
    }
}

static void set_method(CURL *e, const call *k)
{
    if (!strcmp(k->method, "GET"))
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    else
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, k->method);
    if (k->body) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)k->body_len);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, k->body);
    }
}

static size_t upload_read(char *p, size_t size, size_t n, void *ud)
{
    call *k = ud;
    long got = k->read(p, size * n, k->read_payload);
    if (got < 0) {
        k->read_error = (int)got;
        return CURL_READFUNC_ABORT;
    }
    return (size_t)got;
}

/* The body of an upload call: pulled through k->read, chunked when its length is unknown. */
static void set_upload(CURL *e, call *k)
{
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_READFUNCTION, upload_read);
    curl_easy_setopt(e, CURLOPT_READDATA, k);
    if (k->read_len >= 0)
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)k->read_len);
    else
        k->headers = curl_slist_append(k->headers, "Transfer-Encoding: chunked");
    curl_easy_setopt(e, CURLOPT_EXPECT_100_TIMEOUT_MS, 3000L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, 60L);
}

/* Prepares k->easy with everything but the write callback. */
static bool client_down(const sw_client *c)
{
    return __atomic_load_n(&c->down, __ATOMIC_ACQUIRE);
}

void sw_client_shutdown(sw_client *c)
{
    __atomic_store_n(&c->down, true, __ATOMIC_RELEASE);
}

/* curl's progress callback: a non-zero return aborts the transfer. */
static int client_progress(void *p, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                           curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    return client_down(p) ? 1 : 0;
}

static int call_setup(sw_client *c, call *k)
{
    k->client = c;
    if (client_down(c))
        return sw_error_set(SW_EUNAVAILABLE, "%s %s: abandoned: the client is shutting down",
                            k->method, k->path);
    sw_buf b = SW_BUF_INIT(URL_MAX);
    sw_buf_printf(&b, "%s%s", c->server, k->path);
    if (sw_buf_error(&b) < 0) {
        sw_buf_dispose(&b);
        return sw_error_set(SW_ELIMIT, "request URL is longer than %u bytes", URL_MAX);
    }
    k->url = sw_buf_detach(&b, NULL);
    k->easy = acquire(c);
    CURL *e = k->easy;
    k->headers = auth_header(c, k->headers);
    sw_buf_printf(&b, "Accept: %s", k->accept ? k->accept : "application/json");
    k->headers = curl_slist_append(k->headers, sw_buf_cstr(&b));
    sw_buf_clear(&b);
    if (k->body || k->read) {
        sw_buf_printf(&b, "Content-Type: %s",
                      k->content_type ? k->content_type : "application/json");
        k->headers = curl_slist_append(k->headers, sw_buf_cstr(&b));
    }
    sw_buf_dispose(&b);
    /* An upload asks first (Expect: 100-continue), so a server that refuses it from its
     * headers (too large, unauthorized) answers before any of the body is sent: the client
     * reads that answer instead of failing on a connection closed mid-send. */
    k->headers = curl_slist_append(k->headers, k->read ? "Expect: 100-continue" : "Expect:");
    if (k->read)
        set_upload(e, k);
    curl_easy_setopt(e, CURLOPT_URL, k->url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, k->headers);
    curl_easy_setopt(e, CURLOPT_USERAGENT, c->user_agent);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, client_progress);
    curl_easy_setopt(e, CURLOPT_XFERINFODATA, c);
    curl_easy_setopt(e, CURLOPT_SHARE, c->share);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, k->errbuf);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, k->timeout_ms);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    if (c->connect_to) {
        k->connect_to = curl_slist_append(NULL, c->connect_to);
        curl_easy_setopt(e, CURLOPT_CONNECT_TO, k->connect_to);
    }
    set_tls(c, e);
    set_method(e, k);
    k->errbuf[0] = '\0';
    return 0;
}

static int transport_error(const call *k, CURLcode rc)
{
    const char *why = k->errbuf[0] ? k->errbuf : curl_easy_strerror(rc);
    if (rc == CURLE_ABORTED_BY_CALLBACK && k->client && client_down(k->client))
        return sw_error_set(SW_EUNAVAILABLE, "%s %s: abandoned: the client is shutting down",
                            k->method, k->url);
    if (rc == CURLE_OPERATION_TIMEDOUT)
        return sw_error_set(SW_ETIMEOUT, "%s %s: %s", k->method, k->url, why);
    return sw_error_set(SW_EUNAVAILABLE, "%s %s: %s", k->method, k->url, why);
}

static size_t buf_write(char *p, size_t size, size_t n, void *ud)
{
    return sw_buf_put(ud, p, size * n) < 0 ? 0 : size * n;
}

/* Performs k; the body (2xx or not) lands in resp. */
static int call_perform(sw_client *c, call *k, sw_buf *resp, long *status)
{
    int error = call_setup(c, k);
    if (error < 0)
        return error;
    curl_easy_setopt(k->easy, CURLOPT_WRITEFUNCTION, buf_write);
    curl_easy_setopt(k->easy, CURLOPT_WRITEDATA, resp);
    CURLcode rc = curl_easy_perform(k->easy);
    if (rc != CURLE_OK && k->read_error < 0)
        return k->read_error;
    if (rc == CURLE_WRITE_ERROR && sw_buf_error(resp) < 0)
        return sw_error_set(SW_ELIMIT, "%s %s: the response is larger than %zu bytes", k->method,
                            k->url, resp->limit);
    if (rc != CURLE_OK)
        return transport_error(k, rc);
    curl_easy_getinfo(k->easy, CURLINFO_RESPONSE_CODE, status);
    return 0;
}

int sw_client_request_raw(sw_client *c, const char *method, const char *path_and_query,
                          const char *body, size_t body_len, const char *content_type,
                          const char *accept, long *status, char **out, size_t *out_len)
{
    call k = {.method = method,
              .path = path_and_query,
              .body = body,
              .body_len = body_len,
              .content_type = content_type,
              .accept = accept ? accept : "*/*",
              .timeout_ms = c->timeout_ms};
    sw_buf resp = SW_BUF_INIT(c->max_response);
    long st = 0;
    int error = call_perform(c, &k, &resp, &st);
    if (status)
        *status = st;
    if (error == 0 && (st < 200 || st > 299))
        error = status_error(st, sw_buf_cstr(&resp), resp.len, method, path_and_query);
    if (error == 0 && out)
        *out = sw_buf_detach(&resp, out_len);
    call_dispose(c, &k);
    sw_buf_dispose(&resp);
    return error;
}

int sw_client_request_upload(sw_client *c, const char *method, const char *path_and_query,
                             sw_client_read_fn fn, void *payload, int64_t len,
                             const char *content_type, long *status, json_t **out)
{
    call k = {.method = method,
              .path = path_and_query,
              .content_type = content_type,
              .accept = "application/json",
              .read = fn,
              .read_payload = payload,
              .read_len = len < 0 ? -1 : len};
    sw_buf resp = SW_BUF_INIT(c->max_response);
    long st = 0;
    int error = call_perform(c, &k, &resp, &st);
    if (status)
        *status = st;
    if (error == 0 && (st < 200 || st > 299))
        error = status_error(st, sw_buf_cstr(&resp), resp.len, method, path_and_query);
    if (error == 0 && out) {
        *out = NULL;
        if (resp.len && sw_json_parse(sw_buf_cstr(&resp), resp.len, SW_JSON_MAX_DEPTH, 0, out) < 0)
            error =
                sw_error_set(SW_ERROR, "%s %s: the response is not JSON", method, path_and_query);
    }
    call_dispose(c, &k);
    sw_buf_dispose(&resp);
    return error;
}

/* A JSON request: body encoded, 2xx body decoded into *out (when out is not NULL). */
static int json_call(sw_client *c, const char *method, const char *path, const json_t *body,
                     const char *content_type, long *status, json_t **out)
{
    char *req = body ? sw_json_dumps(body, NULL) : NULL, *resp = NULL;
    size_t len = 0;
    int error = sw_client_request_raw(c, method, path, req, req ? strlen(req) : 0, content_type,
                                      "application/json", status, &resp, &len);
    if (error == 0 && out) {
        *out = NULL;
        if (len && (error = sw_json_parse(resp, len, SW_JSON_MAX_DEPTH, 0, out)) < 0)
            error = sw_error_set(SW_ERROR, "%s %s: the response is not JSON", method, path);
    }
    sw_free(req);
    sw_free(resp);
    return error;
}

int sw_client_request(sw_client *c, const char *method, const char *path_and_query,
                      const json_t *body, const char *content_type, long *status, json_t **out)
{
    return json_call(c, method, path_and_query, body, content_type, status, out);
}

/* ---- REST verbs ---- */

static const char *obj_ns(const sw_client *c, const char *ns, const json_t *obj)
{
    const char *o = obj ? sw_json_str_at(obj, "metadata.namespace") : NULL;
    return ns ? ns : o && *o ? o : c->ns;
}

/* Builds the path of a named object (or the collection when name is NULL). */
static int object_path(sw_client *c, sw_buf *b, const sw_resource *r, const char *ns,
                       const char *name, const char *sub)
{
    if (r->namespaced && ns && !*ns)
        return sw_error_set(SW_EINVALID, "%s: an empty namespace is not allowed", r->plural);
    int error = sw_client_path(b, r, ns, name, sub);
    return error == SW_ELIMIT ? sw_error_set(SW_ELIMIT, "request path too long") : error;
}

int sw_client_get(sw_client *c, const sw_resource *r, const char *ns, const char *name,
                  json_t **out)
{
    sw_buf p = SW_BUF_INIT(URL_MAX);
    int error = object_path(c, &p, r, obj_ns(c, ns, NULL), name ? name : "", NULL);
    if (error == 0)
        error = json_call(c, "GET", sw_buf_cstr(&p), NULL, NULL, NULL, out);
    sw_buf_dispose(&p);
    return error;
}

int sw_client_create(sw_client *c, const sw_resource *r, const char *ns, const json_t *obj,
                     json_t **out)
{
    sw_buf p = SW_BUF_INIT(URL_MAX);
    int error = object_path(c, &p, r, obj_ns(c, ns, obj), NULL, NULL);
    if (error == 0)
        error = json_call(c, "POST", sw_buf_cstr(&p), obj, NULL, NULL, out);
    sw_buf_dispose(&p);
    return error;
}

static int put_object(sw_client *c, const sw_resource *r, const char *ns, const json_t *obj,
                      const char *sub, json_t **out)
{
    const char *name = sw_json_str_at(obj, "metadata.name");
    sw_buf p = SW_BUF_INIT(URL_MAX);
    int error = 0;
    if (!name || !*name)
        return sw_error_set(SW_EINVALID, "%s: the object has no metadata.name", r->plural);
    if ((error = object_path(c, &p, r, obj_ns(c, ns, obj), name, sub)) == 0)
        error = json_call(c, "PUT", sw_buf_cstr(&p), obj, NULL, NULL, out);
    sw_buf_dispose(&p);
    return error;
}

int sw_client_update(sw_client *c, const sw_resource *r, const char *ns, const json_t *obj,
                     json_t **out)
{
    return put_object(c, r, ns, obj, NULL, out);
}

int sw_client_update_status(sw_client *c, const sw_resource *r, const char *ns, const json_t *obj,
                            json_t **out)
{
    return put_object(c, r, ns, obj, "status", out);
}

static const char *patch_content_type(const char *t)
{
    if (sw_str_eq(t, "merge"))
        return "application/merge-patch+json";
    if (sw_str_eq(t, "json"))
        return "application/json-patch+json";
    if (sw_str_eq(t, "strategic"))
        return "application/strategic-merge-patch+json";
    return t && sw_str_prefix(t, "application/") ? t : NULL;
}

int sw_client_patch_sub(sw_client *c, const sw_resource *r, const char *ns, const char *name,
                        const char *sub, const char *patch_type, const json_t *patch, json_t **out)
{
    const char *ct = patch_content_type(patch_type);
    sw_buf p = SW_BUF_INIT(URL_MAX);
    int error = 0;
    if (!ct)
        return sw_error_set(SW_EINVALID, "unknown patch type %s (merge, json or strategic)",
                            patch_type ? patch_type : "(null)");
    if ((error = object_path(c, &p, r, obj_ns(c, ns, NULL), name ? name : "", sub)) == 0)
        error = json_call(c, "PATCH", sw_buf_cstr(&p), patch, ct, NULL, out);
    sw_buf_dispose(&p);
    return error;
}

int sw_client_patch(sw_client *c, const sw_resource *r, const char *ns, const char *name,
                    const char *patch_type, const json_t *patch, json_t **out)
{
    return sw_client_patch_sub(c, r, ns, name, NULL, patch_type, patch, out);
}

int sw_client_delete(sw_client *c, const sw_resource *r, const char *ns, const char *name)
{
    return sw_client_delete_opts(c, r, ns, name, "Background", NULL, NULL, NULL);
}

/* ---- list with paging ---- */

static int list_page(sw_client *c, const sw_resource *r, const char *ns, const sw_list_opts *o,
                     int64_t limit, const char *cont, json_t **out)
{
    sw_buf p = SW_BUF_INIT(URL_MAX);
    char lim[32];
    int error = object_path(c, &p, r, ns, NULL, NULL);
    snprintf(lim, sizeof(lim), "%lld", (long long)limit);
    sw_client_query(&p, "labelSelector",
                    o->label_selector && *o->label_selector ? o->label_selector : NULL);
    sw_client_query(&p, "fieldSelector",
                    o->field_selector && *o->field_selector ? o->field_selector : NULL);
    sw_client_query(&p, "limit", limit > 0 ? lim : NULL);
    /* The API rejects resourceVersion together with continue. */
    sw_client_query(&p, cont ? "continue" : "resourceVersion", cont ? cont : o->resource_version);
    if (error == 0 && (error = sw_buf_error(&p)) < 0)
        error = sw_error_set(SW_ELIMIT, "list request path too long");
    if (error == 0)
        error = json_call(c, "GET", sw_buf_cstr(&p), NULL, NULL, NULL, out);
    if (error == 0 && !json_is_array(json_object_get(*out, "items"))) {
        json_decref(*out);
        error = sw_error_set(SW_ERROR, "GET %s: the answer is not a List", sw_buf_cstr(&p));
    }
    sw_buf_dispose(&p);
    return error;
}

/* Follows continue tokens from first, appending items to it. */
static int list_rest(sw_client *c, const sw_resource *r, const char *ns, const sw_list_opts *o,
                     int64_t limit, json_t *first)
{
    int error = 0;
    char *cont = NULL;
    const char *tok = sw_json_str_at(first, "metadata.continue");
    cont = tok && *tok ? sw_strdup(tok) : NULL;
    while (error == 0 && cont) {
        json_t *page = NULL;
        if ((error = list_page(c, r, ns, o, limit, cont, &page)) < 0)
            break;
        json_array_extend(json_object_get(first, "items"), json_object_get(page, "items"));
        tok = sw_json_str_at(page, "metadata.continue");
        sw_free(cont);
        cont = tok && *tok ? sw_strdup(tok) : NULL;
        json_decref(page);
    }
    sw_free(cont);
    return error;
}

int sw_client_list_opts(sw_client *c, const sw_resource *r, const char *ns,
                        const sw_list_opts *opts, json_t **out)
{
    sw_list_opts o = opts ? *opts : (sw_list_opts){0};
    int64_t limit = o.limit == 0 ? 500 : o.limit;
    json_t *list = NULL;
    int error = list_page(c, r, ns, &o, limit, NULL, &list);
    if (error == 0 && limit > 0 && (error = list_rest(c, r, ns, &o, limit, list)) == SW_EGONE) {
        /* The continue token expired (compaction): one consistent unpaged list instead. */
        json_decref(list);
        list = NULL;
        error = list_page(c, r, ns, &o, -1, NULL, &list);
    }
    if (error < 0) {
        json_decref(list);
        return error;
    }
    json_t *md = json_object_get(list, "metadata");
    json_object_del(md, "continue");
    json_object_del(md, "remainingItemCount");
    *out = list;
    return 0;
}

int sw_client_list_each(sw_client *c, const sw_resource *r, const char *ns,
                        const sw_list_opts *opts, sw_client_item_fn fn, void *payload, char *rv,
                        size_t rv_len)
{
    sw_list_opts o = opts ? *opts : (sw_list_opts){0};
    int64_t limit = o.limit > 0 ? o.limit : 500;
    int error = 0;
    /* A continue token that expired (compaction) starts the list again once from the top,
     * and fn is told so (page and item NULL): it sees some items twice, never a list that
     * mixes two revisions silently. */
    for (int round = 0; round < 2; round++) {
        char *cont = NULL;
        bool first = true;
        if (round && (error = fn(NULL, NULL, payload)) < 0)
            break;
        do {
            json_t *page = NULL, *item;
            size_t i;
            error = list_page(c, r, ns, &o, limit, cont, &page);
            if (error == SW_ELIMIT && limit > 1) {
                /* a page of large objects past the reply cap: smaller pages */
                limit = limit / 4 > 0 ? limit / 4 : 1;
                continue;
            }
            if (error < 0)
                break;
            if (first && rv)
                sw_strlcpy(rv, sw_json_str_at(page, "metadata.resourceVersion") ?: "", rv_len);
            first = false;
            json_array_foreach(json_object_get(page, "items"), i, item)
            {
                if ((error = fn(page, item, payload)) < 0)
                    break;
            }
            const char *tok = sw_json_str_at(page, "metadata.continue");
            sw_free(cont);
            cont = error == 0 && tok && *tok ? sw_strdup(tok) : NULL;
            json_decref(page);
        } while (cont);
        sw_free(cont);
        if (error != SW_EGONE || first)
            break;
    }
    return error;
}

int sw_client_delete_opts(sw_client *c, const sw_resource *r, const char *ns, const char *name,
                          const char *policy, const char *uid, const char *rv, json_t **out)
{
    json_t *opts = json_object(), *pre = json_object();
    if (policy && *policy)
        json_object_set_new(opts, "propagationPolicy", json_string(policy));
    if (uid && *uid)
        json_object_set_new(pre, "uid", json_string(uid));
    if (rv && *rv)
        json_object_set_new(pre, "resourceVersion", json_string(rv));
    if (json_object_size(pre))
        json_object_set(opts, "preconditions", pre);
    json_decref(pre);
    sw_buf p = SW_BUF_INIT(URL_MAX);
    int error = object_path(c, &p, r, obj_ns(c, ns, NULL), name ? name : "", NULL);
    if (error == 0)
        error = json_call(c, "DELETE", sw_buf_cstr(&p), opts, NULL, NULL, out);
    sw_buf_dispose(&p);
    json_decref(opts);
    return error;
}

int sw_client_list(sw_client *c, const sw_resource *r, const char *ns, const char *label_selector,
                   json_t **out)
{
    sw_list_opts o = {.label_selector = label_selector};
    return sw_client_list_opts(c, r, ns, &o, out);
}

int sw_client_list_controlled(sw_client *c, const sw_resource *r, const char *ns,
                              const char *label_selector, const char *owner_uid, json_t **out)
{
    json_t *list = NULL;
    int error = sw_client_list(c, r, ns, label_selector, &list);
    *out = json_array();
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(list, "items"), i, item)
    {
        size_t j;
        json_t *ref;
        json_array_foreach(sw_json_at(item, "metadata.ownerReferences"), j, ref)
        {
            if (sw_json_bool_at(ref, "controller") &&
                sw_str_eq(sw_json_str_at(ref, "uid"), owner_uid)) {
                json_array_append(*out, item);
                break;
            }
        }
    }
    json_decref(list);
    return error;
}

/* ---- cancellation ---- */

sw_client_cancel *sw_client_cancel_new(void)
{
    sw_client_cancel *k = sw_calloc(1, sizeof(*k));
    pthread_mutex_init(&k->mu, NULL);
    return k;
}

void sw_client_cancel_free(sw_client_cancel *k)
{
    if (!k)
        return;
    pthread_mutex_destroy(&k->mu);
    sw_free(k);
}

void sw_client_cancel_fire(sw_client_cancel *k)
{
    pthread_mutex_lock(&k->mu);
    k->fired = true;
    if (k->active)
        curl_multi_wakeup(k->active);
    pthread_mutex_unlock(&k->mu);
}

bool sw_client_cancel_fired(sw_client_cancel *k)
{
    pthread_mutex_lock(&k->mu);
    bool f = k->fired;
    pthread_mutex_unlock(&k->mu);
    return f;
}

void sw_client_cancel_reset(sw_client_cancel *k)
{
    pthread_mutex_lock(&k->mu);
    k->fired = false;
    pthread_mutex_unlock(&k->mu);
}

/* Registers m as the stream to wake; false if the cancel already fired. */
static bool cancel_attach(sw_client_cancel *k, CURLM *m)
{
    if (!k)
        return true;
    pthread_mutex_lock(&k->mu);
    bool ok = !k->fired;
    if (ok)
        k->active = m;
    pthread_mutex_unlock(&k->mu);
    return ok;
}

static void cancel_detach(sw_client_cancel *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&k->mu);
    k->active = NULL;
    pthread_mutex_unlock(&k->mu);
}

/* ---- streams ---- */

typedef struct stream {
    CURL *easy;
    sw_client_data_fn fn;
    void *payload;
    long status;    /* known once the first body bytes arrive */
    int fn_result;  /* fn's non-zero answer */
    sw_buf errbody; /* a non-2xx body, bounded */
} stream;

static size_t stream_write(char *p, size_t size, size_t n, void *ud)
{
    stream *s = ud;
    size_t len = size * n;
    if (!s->status)
        curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &s->status);
    if (s->status < 200 || s->status > 299) {
        sw_buf_put(&s->errbody, p, len); /* truncation is fine: sticky, bounded */
        return len;
    }
    int r = s->fn(p, len, s->payload);
    if (r != 0) {
        s->fn_result = r;
        return 0; /* aborts the transfer */
    }
    return len;
}

/* Drives one transfer on a private multi handle so sw_client_cancel_fire can wake it at once. */
static CURLcode stream_loop(CURLM *m, stream *s, const sw_stream_opts *o, bool *cancelled)
{
    int running = 1;
    CURLcode rc = CURLE_OK;
    int64_t next_tick = o->tick_ms > 0 ? sw_time_mono_ms() + o->tick_ms : 0;
    while (running) {
        if (curl_multi_perform(m, &running) != CURLM_OK)
            return CURLE_RECV_ERROR;
        if (!running)
            break;
        if (o->cancel && sw_client_cancel_fired(o->cancel)) {
            *cancelled = true;
            return CURLE_OK;
        }
        int wait = 1000;
        if (next_tick) {
            int64_t now = sw_time_mono_ms();
            if (now >= next_tick) {
                int r = s->fn(NULL, 0, s->payload);
                if (r != 0) {
                    s->fn_result = r;
                    return CURLE_OK;
                }
                next_tick = now + o->tick_ms;
            }
            wait = next_tick - now < wait ? (int)(next_tick - now) : wait;
        }
        curl_multi_poll(m, NULL, 0, wait > 0 ? wait : 0, NULL);
    }
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(m, &left)))
        if (msg->msg == CURLMSG_DONE)
            rc = msg->data.result;
    return rc;
}

static int stream_result(call *k, stream *s, CURLcode rc, bool cancelled)
{
    if (cancelled || s->fn_result > 0)
        return 0;
    if (s->fn_result < 0)
        return s->fn_result;
    if (!s->status)
        curl_easy_getinfo(k->easy, CURLINFO_RESPONSE_CODE, &s->status);
    if (s->status && (s->status < 200 || s->status > 299))
        return status_error(s->status, sw_buf_cstr(&s->errbody), s->errbody.len, "GET", k->path);
    return rc == CURLE_OK ? 0 : transport_error(k, rc);
}

int sw_client_stream(sw_client *c, const char *path_and_query, const sw_stream_opts *opts,
                     sw_client_data_fn fn, void *payload)
{
    sw_stream_opts o = opts ? *opts : (sw_stream_opts){0};
    call k = {.method = "GET", .path = path_and_query, .timeout_ms = o.timeout_ms};
    stream s = {.fn = fn, .payload = payload, .errbody = SW_BUF_INIT(ERROR_BODY_MAX)};
    CURLM *m = NULL;
    bool cancelled = false;
    CURLcode rc = CURLE_OK;
    int error = call_setup(c, &k);
    if (error < 0)
        goto done;
    s.easy = k.easy;
    curl_easy_setopt(k.easy, CURLOPT_WRITEFUNCTION, stream_write);
    curl_easy_setopt(k.easy, CURLOPT_WRITEDATA, &s);
    if (!(m = curl_multi_init()))
        abort();
    curl_multi_add_handle(m, k.easy);
    if (cancel_attach(o.cancel, m)) {
        rc = stream_loop(m, &s, &o, &cancelled);
        cancel_detach(o.cancel);
    } else {
        cancelled = true;
    }
    error = stream_result(&k, &s, rc, cancelled);
    curl_multi_remove_handle(m, k.easy);
done:
    if (m)
        curl_multi_cleanup(m);
    call_dispose(c, &k);
    sw_buf_dispose(&s.errbody);
    return error;
}
