/* sw-loadgen: the HTTP load generator behind bench/api.sh.
 * One client for two targets, slipway's Kubernetes REST API and etcd's v3 JSON gateway, so
 * both see the same concurrency (one keep-alive libcurl handle per worker thread) and the same
 * ~1 KiB ImageStream bodies. Each mode prints one `key=value ...` line on stdout (start
 * prints two); diagnostics go to stderr. Standalone on purpose (libcurl, jansson, pthreads only):
 * it must keep building while the server tree changes under it. See bench/README.md. */
#include <curl/curl.h>
#include <jansson.h>

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LG_NS_PER_SEC 1000000000LL
#define LG_MAX_WORKERS 256
#define LG_MAX_WATCHERS 1000
#define LG_BODY_MAX 4096
#define LG_URL_MAX 1024
#define LG_RV_MAX 32
#define LG_MAX_FAILING 20                 /* consecutive failed requests before a worker gives up */
#define LG_RESP_LIMIT ((size_t)512 << 20) /* a 10k-object list is ~20 MB */
#define LG_LINE_LIMIT ((size_t)64 << 20)  /* bytes kept per watch stream */
#define LG_IS_PATH "/apis/image.openshift.io/v1/namespaces/default/imagestreams"
#define LG_ETCD_PREFIX "/registry/imagestreams/default/"

enum lg_target { LG_SLIPWAY, LG_ETCD };

struct lg_opts {
    const char *mode;      /* create|update|get|list|watch-latency|start|ports */
    enum lg_target target; /* which API the requests speak */
    const char *url;       /* base URL, e.g. http://127.0.0.1:6443 */
    const char *token;     /* bearer token or NULL */
    bool insecure_tls;     /* https: skip certificate verification (loopback benchmarks) */
    uint64_t gen_base;     /* per-process offset of the body's generation annotation, so a
                              rewrite never carries identical bytes (a no-op update emits no
                              watch event and skips the store) */
    uint64_t inflight;     /* worker threads, one connection each */
    uint64_t count;        /* cap on timed operations (0: none) */
    double duration;       /* cap on the timed phase, seconds */
    uint64_t start;        /* first object index for create */
    uint64_t objects;      /* size of the object set for update/get/watch */
    uint64_t limit;        /* list page size (0: one request) */
    uint64_t repeat;       /* list repetitions (median reported) */
    uint64_t watchers;     /* watch streams */
    uint64_t writes;       /* writes during the watch test */
    double rate;           /* writes per second during the watch test */
    double timeout;        /* per-request timeout, seconds */
    uint64_t nports;       /* ports mode: how many */
    char **cmd;            /* start mode: server argv after "--" */
};

/* ---------- small helpers ---------- */

/* Allocation failure is fatal for a benchmark tool. */
static void *lg_grow(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "sw-loadgen: out of memory\n");
        abort();
    }
    return q;
}

static void *lg_alloc(size_t n)
{
    return memset(lg_grow(NULL, n), 0, n);
}

/* Appends n bytes to a growable buffer kept NUL-terminated; false past limit. */
static bool lg_append(char **buf, size_t *len, size_t *cap, const char *data, size_t n,
                      size_t limit)
{
    if (*len + n + 1 > limit)
        return false;
    while (*len + n + 1 > *cap) {
        *cap = *cap ? *cap * 2 : 65536;
        *buf = lg_grow(*buf, *cap);
    }
    memcpy(*buf + *len, data, n);
    *len += n;
    (*buf)[*len] = '\0';
    return true;
}

static int64_t lg_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * LG_NS_PER_SEC + ts.tv_nsec;
}

static void lg_sleep_until(int64_t t)
{
    int64_t d = t - lg_now();
    if (d <= 0)
        return;
    struct timespec ts = {.tv_sec = d / LG_NS_PER_SEC, .tv_nsec = d % LG_NS_PER_SEC};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Whole-string unsigned decimal; returns 0 or -1. */
static int lg_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    if (!s || !*s)
        return -1;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        unsigned d = (unsigned)(*p - '0');
        if (v > (max - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static int lg_parse_double(const char *s, double *out)
{
    char *end = NULL;
    if (!s || !*s)
        return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !(v >= 0))
        return -1;
    *out = v;
    return 0;
}

/* stderr diagnostics, at most the first 10 per process so a dead server cannot flood logs. */
__attribute__((format(printf, 1, 2))) static void lg_complain(const char *fmt, ...)
{
    static atomic_int count;
    va_list ap;
    int n = atomic_fetch_add(&count, 1);
    if (n > 10)
        return;
    if (n == 10) {
        fprintf(stderr, "sw-loadgen: further errors not shown\n");
        return;
    }
    va_start(ap, fmt);
    fputs("sw-loadgen: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static const char lg_b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Standard base64 with padding into out (NUL-terminated); returns length or -1 if too small. */
static int lg_b64_encode(const void *data, size_t len, char *out, size_t n)
{
    const unsigned char *p = data;
    size_t need = (len + 2) / 3 * 4 + 1, o = 0;
    if (need > n)
        return -1;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < len)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < len)
            v |= p[i + 2];
        out[o++] = lg_b64[(v >> 18) & 63];
        out[o++] = lg_b64[(v >> 12) & 63];
        out[o++] = i + 1 < len ? lg_b64[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? lg_b64[v & 63] : '=';
    }
    out[o] = '\0';
    return (int)o;
}

static int lg_b64_value(char c)
{
    const char *p = c ? strchr(lg_b64, c) : NULL;
    return p ? (int)(p - lg_b64) : -1;
}

/* Decodes base64 into out (NUL-terminated); returns length or -1. */
static int lg_b64_decode(const char *s, char *out, size_t n)
{
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (; *s && *s != '='; s++) {
        int v = lg_b64_value(*s);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o + 1 >= n)
                return -1;
            out[o++] = (char)((acc >> bits) & 0xff);
        }
    }
    out[o] = '\0';
    return (int)o;
}

/* "bench-000042" -> 42; returns 0 or -1. */
static int lg_name_index(const char *name, uint64_t *out)
{
    static const char prefix[] = "bench-";
    if (strncmp(name, prefix, sizeof(prefix) - 1) != 0)
        return -1;
    return lg_parse_u64(name + sizeof(prefix) - 1, UINT64_MAX, out);
}

static void lg_object_name(uint64_t idx, char *out, size_t n)
{
    snprintf(out, n, "bench-%06llu", (unsigned long long)idx);
}

/* ---------- latency samples ---------- */

struct lg_lat {
    int64_t *v; /* nanoseconds */
    size_t n, cap;
};

static void lg_lat_push(struct lg_lat *l, int64_t ns)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 1024;
        l->v = lg_grow(l->v, l->cap * sizeof(*l->v));
    }
    l->v[l->n++] = ns;
}

static void lg_lat_merge(struct lg_lat *dst, const struct lg_lat *src)
{
    for (size_t i = 0; i < src->n; i++)
        lg_lat_push(dst, src->v[i]);
}

static int lg_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile in milliseconds of a sorted sample set (0 if empty). */
static double lg_lat_pct(const struct lg_lat *l, double q)
{
    if (l->n == 0)
        return 0;
    double exact = q * (double)l->n;
    size_t rank = (size_t)exact;
    if ((double)rank < exact)
        rank++;
    if (rank < 1)
        rank = 1;
    return (double)l->v[rank - 1] / 1e6;
}

/* ---------- one HTTP connection ---------- */

struct lg_conn {
    CURL *curl;
    struct curl_slist *headers;
    char *resp; /* response body, NUL-terminated */
    size_t len, cap;
    bool overflow; /* response exceeded LG_RESP_LIMIT */
    bool quiet;    /* transport errors are expected (readiness polling) */
    long status;
};

static size_t lg_conn_write(char *data, size_t size, size_t nmemb, void *payload)
{
    struct lg_conn *c = payload;
    size_t n = size * nmemb;
    if (!lg_append(&c->resp, &c->len, &c->cap, data, n, LG_RESP_LIMIT)) {
        c->overflow = true;
        return 0;
    }
    return n;
}

static struct curl_slist *lg_headers(const struct lg_opts *o)
{
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json");
    h = curl_slist_append(h, "Expect:");
    if (o->token && *o->token) {
        char auth[2048];
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", o->token);
        h = curl_slist_append(h, auth);
    }
    return h;
}

static void lg_tls(CURL *curl, const struct lg_opts *o)
{
    if (o->insecure_tls) {
        curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
    }
}

static int lg_conn_init(struct lg_conn *c, const struct lg_opts *o, double timeout)
{
    memset(c, 0, sizeof(*c));
    c->curl = curl_easy_init();
    c->headers = lg_headers(o);
    if (!c->curl || !c->headers)
        return -1;
    curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->curl, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(c->curl, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, lg_conn_write);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, (long)(timeout * 1000));
    lg_tls(c->curl, o);
    return 0;
}

static void lg_conn_dispose(struct lg_conn *c)
{
    if (c->curl)
        curl_easy_cleanup(c->curl);
    curl_slist_free_all(c->headers);
    free(c->resp);
    memset(c, 0, sizeof(*c));
}

/* One request on the connection's keep-alive socket. method is GET, POST or PUT; body may be
 * NULL for GET. Returns 0 when an HTTP response arrived (status in c->status), -1 otherwise. */
static int lg_conn_do(struct lg_conn *c, const char *method, const char *url, const char *body,
                      size_t len)
{
    c->len = 0;
    c->overflow = false;
    c->status = 0;
    if (c->resp)
        c->resp[0] = '\0';
    curl_easy_setopt(c->curl, CURLOPT_URL, url);
    if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, NULL);
        curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE, (long)(body ? len : 0));
        curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, strcmp(method, "PUT") == 0 ? "PUT" : NULL);
    }
    CURLcode rc = curl_easy_perform(c->curl);
    if (rc != CURLE_OK) {
        if (!c->quiet)
            lg_complain("%s %s: %s", method, url, curl_easy_strerror(rc));
        return -1;
    }
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &c->status);
    return 0;
}

/* Reports an unexpected answer (status and the start of the body); returns -1. */
static int lg_unexpected(const struct lg_conn *c, const char *what)
{
    lg_complain("%s: HTTP %ld: %.160s", what, c->status, c->resp ? c->resp : "");
    return -1;
}

/* ---------- request shapes ---------- */

/* The ~1 KiB ImageStream, identical bytes for both targets (slipway updates add the
 * resourceVersion they carry). rv may be NULL. Returns the length or -1. */
static int lg_object_json(char *out, size_t n, const char *name, const char *rv, uint64_t gen)
{
    char rvpart[LG_RV_MAX + 32] = "";
    if (rv)
        snprintf(rvpart, sizeof(rvpart), "\"resourceVersion\":\"%s\",", rv);
    int len = snprintf(
        out, n,
        "{\"apiVersion\":\"image.openshift.io/v1\",\"kind\":\"ImageStream\",\"metadata\":{"
        "\"name\":\"%s\",\"namespace\":\"default\",%s\"labels\":{\"app\":\"bench\",\"team\":"
        "\"platform\",\"tier\":\"backend\"},\"annotations\":{\"bench.slipway.io/generation\":"
        "\"%010llu\",\"description\":\"written by bench/api.sh\"}},"
        "\"spec\":{\"lookupPolicy\":{\"local\":false},\"tags\":["
        "{\"name\":\"latest\",\"from\":{\"kind\":\"DockerImage\",\"name\":"
        "\"registry.example.com/bench/%s:latest\"},\"importPolicy\":{\"scheduled\":false},"
        "\"referencePolicy\":{\"type\":\"Source\"}},"
        "{\"name\":\"stable\",\"from\":{\"kind\":\"DockerImage\",\"name\":"
        "\"registry.example.com/bench/%s:stable\"},\"importPolicy\":{\"scheduled\":false},"
        "\"referencePolicy\":{\"type\":\"Source\"}},"
        "{\"name\":\"v1.4.2\",\"from\":{\"kind\":\"DockerImage\",\"name\":"
        "\"registry.example.com/bench/%s:v1.4.2\"},\"importPolicy\":{\"scheduled\":false},"
        "\"referencePolicy\":{\"type\":\"Local\"}},"
        "{\"name\":\"v1.4.1\",\"from\":{\"kind\":\"DockerImage\",\"name\":"
        "\"registry.example.com/bench/%s:v1.4.1\"},\"importPolicy\":{\"scheduled\":false},"
        "\"referencePolicy\":{\"type\":\"Local\"}}]}}",
        name, rvpart, (unsigned long long)gen, name, name, name, name);
    return len > 0 && (size_t)len < n ? len : -1;
}

/* {"key":b64(key)[,"value":b64(value)]} for /v3/kv/put and /v3/kv/range. */
static int lg_etcd_body(char *out, size_t n, const char *key, const char *value, size_t vlen)
{
    char k64[512], v64[LG_BODY_MAX * 2];
    if (lg_b64_encode(key, strlen(key), k64, sizeof(k64)) < 0)
        return -1;
    int len;
    if (value) {
        if (lg_b64_encode(value, vlen, v64, sizeof(v64)) < 0)
            return -1;
        len = snprintf(out, n, "{\"key\":\"%s\",\"value\":\"%s\"}", k64, v64);
    } else {
        len = snprintf(out, n, "{\"key\":\"%s\"}", k64);
    }
    return len > 0 && (size_t)len < n ? len : -1;
}

/* Range over the whole bench prefix, starting at from_key (NULL: prefix start). */
static int lg_etcd_range_body(char *out, size_t n, const char *from_key, uint64_t limit)
{
    char k64[1024], e64[128];
    const char *start = from_key ? from_key : LG_ETCD_PREFIX;
    char end[] = LG_ETCD_PREFIX;
    end[sizeof(end) - 2]++; /* "/registry/imagestreams/default0" */
    if (lg_b64_encode(start, strlen(start) + (from_key ? 1 : 0), k64, sizeof(k64)) < 0 ||
        lg_b64_encode(end, strlen(end), e64, sizeof(e64)) < 0)
        return -1;
    int len = snprintf(out, n, "{\"key\":\"%s\",\"range_end\":\"%s\",\"limit\":\"%llu\"}", k64, e64,
                       (unsigned long long)limit);
    return len > 0 && (size_t)len < n ? len : -1;
}

static int lg_url(char *out, size_t n, const struct lg_opts *o, const char *path)
{
    int len = snprintf(out, n, "%s%s", o->url, path);
    return len > 0 && (size_t)len < n ? 0 : -1;
}

static int lg_object_url(char *out, size_t n, const struct lg_opts *o, const char *name)
{
    int len = snprintf(out, n, "%s" LG_IS_PATH "/%s", o->url, name);
    return len > 0 && (size_t)len < n ? 0 : -1;
}

/* metadata.resourceVersion of a JSON object response into rv. */
static int lg_json_rv(const char *body, size_t len, char *rv, size_t n)
{
    int rc = -1;
    json_t *root = json_loadb(body, len, 0, NULL);
    const char *s =
        json_string_value(json_object_get(json_object_get(root, "metadata"), "resourceVersion"));
    if (!s || strlen(s) >= n)
        goto done;
    memcpy(rv, s, strlen(s) + 1);
    rc = 0;
done:
    json_decref(root);
    return rc;
}

/* ---------- write/read operations (one per call, on one connection) ---------- */

/* Writes object idx. rv: CAS precondition for slipway (NULL: create or unconditional update);
 * rv_out receives the new resourceVersion when non-NULL. Returns 0, -1, or 409 on conflict. */
static int lg_op_write(struct lg_conn *c, const struct lg_opts *o, uint64_t idx, bool create,
                       const char *rv, uint64_t gen, char *rv_out)
{
    char name[64], url[LG_URL_MAX], obj[LG_BODY_MAX], body[LG_BODY_MAX * 2];
    lg_object_name(idx, name, sizeof(name));
    int olen = lg_object_json(obj, sizeof(obj), name, o->target == LG_SLIPWAY ? rv : NULL,
                              (o->gen_base + gen) % 10000000000ULL);
    if (olen < 0)
        return -1;
    if (o->target == LG_ETCD) {
        char key[256];
        snprintf(key, sizeof(key), LG_ETCD_PREFIX "%s", name);
        int blen = lg_etcd_body(body, sizeof(body), key, obj, (size_t)olen);
        if (blen < 0 || lg_url(url, sizeof(url), o, "/v3/kv/put") < 0)
            return -1;
        if (lg_conn_do(c, "POST", url, body, (size_t)blen) < 0)
            return -1;
        if (c->status != 200 || !strstr(c->resp ? c->resp : "", "\"revision\""))
            return lg_unexpected(c, "etcd put");
        return 0;
    }
    int rc =
        create ? lg_url(url, sizeof(url), o, LG_IS_PATH) : lg_object_url(url, sizeof(url), o, name);
    if (rc < 0 || lg_conn_do(c, create ? "POST" : "PUT", url, obj, (size_t)olen) < 0)
        return -1;
    if (c->status == 409)
        return 409;
    if (c->status != (create ? 201 : 200))
        return lg_unexpected(c, create ? "create" : "update");
    return rv_out ? lg_json_rv(c->resp, c->len, rv_out, LG_RV_MAX) : 0;
}

/* Reads object idx; rv_out (may be NULL) receives its resourceVersion (slipway only). */
static int lg_op_get(struct lg_conn *c, const struct lg_opts *o, uint64_t idx, char *rv_out)
{
    char name[64], url[LG_URL_MAX], body[1024];
    lg_object_name(idx, name, sizeof(name));
    if (o->target == LG_ETCD) {
        char key[256];
        snprintf(key, sizeof(key), LG_ETCD_PREFIX "%s", name);
        int blen = lg_etcd_body(body, sizeof(body), key, NULL, 0);
        if (blen < 0 || lg_url(url, sizeof(url), o, "/v3/kv/range") < 0)
            return -1;
        if (lg_conn_do(c, "POST", url, body, (size_t)blen) < 0)
            return -1;
        if (c->status != 200 || !strstr(c->resp ? c->resp : "", "\"kvs\""))
            return lg_unexpected(c, "etcd range");
        return 0;
    }
    if (lg_object_url(url, sizeof(url), o, name) < 0 || lg_conn_do(c, "GET", url, NULL, 0) < 0)
        return -1;
    if (c->status != 200 || c->len == 0)
        return lg_unexpected(c, "get");
    return rv_out ? lg_json_rv(c->resp, c->len, rv_out, LG_RV_MAX) : 0;
}

/* ---------- create / update / get: worker pool ---------- */

struct lg_pool {
    const struct lg_opts *o;
    atomic_uint_fast64_t next; /* next operation number (shared cap on count) */
    int64_t deadline;          /* monotonic ns */
};

struct lg_worker {
    struct lg_pool *pool;
    unsigned id;
    pthread_t th;
    struct lg_conn conn;
    struct lg_lat lat;
    uint64_t ops, errors, conflicts;
    unsigned failing;      /* consecutive errors; the worker gives up at LG_MAX_FAILING */
    char (*rv)[LG_RV_MAX]; /* update: resourceVersion per owned object */
    uint64_t nowned;
};

/* Claims the next operation number; false when the count or the deadline is reached. */
static bool lg_pool_claim(struct lg_pool *p, uint64_t *out)
{
    if (lg_now() >= p->deadline)
        return false;
    uint64_t n = atomic_fetch_add(&p->next, 1);
    if (p->o->count && n >= p->o->count)
        return false;
    *out = n;
    return true;
}

/* Counts one operation's outcome; false when the worker should give up. */
static bool lg_worker_record(struct lg_worker *w, int64_t t0, int rc)
{
    if (rc == 0) {
        w->ops++;
        w->failing = 0;
        lg_lat_push(&w->lat, lg_now() - t0);
    } else if (rc == 409) {
        w->conflicts++;
    } else {
        w->errors++;
        w->failing++;
    }
    return w->failing < LG_MAX_FAILING;
}

static void *lg_create_main(void *arg)
{
    struct lg_worker *w = arg;
    const struct lg_opts *o = w->pool->o;
    uint64_t n;
    while (lg_pool_claim(w->pool, &n)) {
        int64_t t0 = lg_now();
        if (!lg_worker_record(w, t0, lg_op_write(&w->conn, o, o->start + n, true, NULL, 0, NULL)))
            break;
    }
    return NULL;
}

/* Worker id owns objects id, id+inflight, ...; slipway needs their current resourceVersions
 * (one untimed GET each) so that every timed PUT is a GET-free compare-and-swap. */
static int lg_update_setup(struct lg_worker *w)
{
    const struct lg_opts *o = w->pool->o;
    w->nowned = w->id < o->objects ? (o->objects - w->id - 1) / o->inflight + 1 : 0;
    w->rv = lg_alloc((w->nowned ? w->nowned : 1) * sizeof(*w->rv));
    if (o->target == LG_ETCD)
        return 0;
    for (uint64_t k = 0; k < w->nowned; k++) {
        if (lg_op_get(&w->conn, o, w->id + k * o->inflight, w->rv[k]) < 0) {
            fprintf(stderr, "sw-loadgen: update setup: GET object %llu failed (status %ld)\n",
                    (unsigned long long)(w->id + k * o->inflight), w->conn.status);
            return -1;
        }
    }
    return 0;
}

static void *lg_update_main(void *arg)
{
    struct lg_worker *w = arg;
    const struct lg_opts *o = w->pool->o;
    uint64_t n, k = 0;
    if (w->nowned == 0)
        return NULL;
    while (lg_pool_claim(w->pool, &n)) {
        uint64_t idx = w->id + k * o->inflight;
        char *rv = w->rv[k];
        int64_t t0 = lg_now();
        int rc =
            lg_op_write(&w->conn, o, idx, false, o->target == LG_SLIPWAY ? rv : NULL, n + 1, rv);
        if (!lg_worker_record(w, t0, rc))
            break;
        if (rc == 409 && lg_op_get(&w->conn, o, idx, rv) < 0)
            w->errors++;
        k = (k + 1) % w->nowned;
    }
    return NULL;
}

static void *lg_get_main(void *arg)
{
    struct lg_worker *w = arg;
    const struct lg_opts *o = w->pool->o;
    uint64_t n, x = 0x9e3779b97f4a7c15ULL ^ (w->id + 1);
    while (lg_pool_claim(w->pool, &n)) {
        x ^= x << 13; /* xorshift64: spread reads over the whole set */
        x ^= x >> 7;
        x ^= x << 17;
        int64_t t0 = lg_now();
        if (!lg_worker_record(w, t0, lg_op_get(&w->conn, o, x % o->objects, NULL)))
            break;
    }
    return NULL;
}

static void lg_pool_report(const struct lg_opts *o, struct lg_worker *ws, double secs)
{
    struct lg_lat all = {0};
    uint64_t ops = 0, errors = 0, conflicts = 0;
    for (unsigned i = 0; i < o->inflight; i++) {
        ops += ws[i].ops;
        errors += ws[i].errors;
        conflicts += ws[i].conflicts;
        lg_lat_merge(&all, &ws[i].lat);
    }
    qsort(all.v, all.n, sizeof(*all.v), lg_cmp_i64);
    printf("mode=%s target=%s inflight=%u ops=%llu errors=%llu conflicts=%llu secs=%.3f "
           "rate=%.1f p50_ms=%.3f p99_ms=%.3f\n",
           o->mode, o->target == LG_ETCD ? "etcd" : "slipway", (unsigned)o->inflight,
           (unsigned long long)ops, (unsigned long long)errors, (unsigned long long)conflicts, secs,
           secs > 0 ? (double)ops / secs : 0, lg_lat_pct(&all, 0.50), lg_lat_pct(&all, 0.99));
    free(all.v);
}

/* Runs create, update or get with o->inflight workers; the timed phase starts after every
 * worker's untimed setup. Returns 0 when at least one operation succeeded and none failed. */
static int lg_run_pool(const struct lg_opts *o, void *(*fn)(void *))
{
    int rc = -1;
    unsigned started = 0;
    struct lg_pool pool = {.o = o};
    struct lg_worker *ws = lg_alloc(o->inflight * sizeof(*ws));
    atomic_init(&pool.next, 0);
    for (unsigned i = 0; i < o->inflight; i++) {
        ws[i].pool = &pool;
        ws[i].id = i;
        if (lg_conn_init(&ws[i].conn, o, o->timeout) < 0)
            goto done;
        if (fn == lg_update_main && lg_update_setup(&ws[i]) < 0)
            goto done;
    }
    int64_t t0 = lg_now();
    pool.deadline = t0 + (int64_t)(o->duration * LG_NS_PER_SEC);
    for (; started < o->inflight; started++) {
        if (pthread_create(&ws[started].th, NULL, fn, &ws[started]) != 0)
            break;
    }
    for (unsigned i = 0; i < started; i++)
        pthread_join(ws[i].th, NULL);
    double secs = (double)(lg_now() - t0) / 1e9;
    lg_pool_report(o, ws, secs);
    rc = 0;
    for (unsigned i = 0; i < o->inflight; i++) {
        if (ws[i].errors || ws[i].conflicts)
            rc = -1;
    }
    if (started < o->inflight)
        rc = -1;
done:
    for (unsigned i = 0; i < o->inflight; i++) {
        lg_conn_dispose(&ws[i].conn);
        free(ws[i].lat.v);
        free(ws[i].rv);
    }
    free(ws);
    return rc;
}

/* ---------- list ---------- */

/* Counts items of one list page and copies the continuation (slipway metadata.continue, or
 * etcd's last key when "more" is set) into cont. */
static int lg_list_page(const struct lg_opts *o, const struct lg_conn *c, uint64_t *items,
                        char *cont, size_t n)
{
    int rc = -1;
    json_t *root = json_loadb(c->resp, c->len, 0, NULL);
    json_t *arr = json_object_get(root, o->target == LG_ETCD ? "kvs" : "items");
    const char *next = NULL;
    cont[0] = '\0';
    if (!root)
        goto done;
    *items += json_array_size(arr); /* etcd omits kvs when empty */
    if (o->target == LG_SLIPWAY) {
        next = json_string_value(json_object_get(json_object_get(root, "metadata"), "continue"));
    } else if (json_is_true(json_object_get(root, "more")) && json_array_size(arr) > 0) {
        json_t *last = json_array_get(arr, json_array_size(arr) - 1);
        const char *k64 = json_string_value(json_object_get(last, "key"));
        if (!k64 || lg_b64_decode(k64, cont, n) < 0)
            goto done;
    }
    if (next && *next) {
        if (strlen(next) >= n)
            goto done;
        memcpy(cont, next, strlen(next) + 1);
    }
    rc = 0;
done:
    json_decref(root);
    return rc;
}

/* One request of a (possibly paged) list; only the transfer is timed, into *ns. */
static int lg_list_request(const struct lg_opts *o, struct lg_conn *c, const char *cont,
                           int64_t *ns)
{
    char url[LG_URL_MAX * 2], body[2048];
    int64_t t0;
    if (o->target == LG_ETCD) {
        int blen = lg_etcd_range_body(body, sizeof(body), *cont ? cont : NULL, o->limit);
        if (blen < 0 || lg_url(url, sizeof(url), o, "/v3/kv/range") < 0)
            return -1;
        t0 = lg_now();
        if (lg_conn_do(c, "POST", url, body, (size_t)blen) < 0)
            return -1;
    } else {
        char *esc = curl_easy_escape(c->curl, cont, 0);
        int len = snprintf(url, sizeof(url), "%s" LG_IS_PATH "?limit=%llu%s%s", o->url,
                           (unsigned long long)o->limit, *cont ? "&continue=" : "", esc ? esc : "");
        curl_free(esc);
        if (len < 0 || (size_t)len >= sizeof(url))
            return -1;
        t0 = lg_now();
        if (lg_conn_do(c, "GET", url, NULL, 0) < 0)
            return -1;
    }
    *ns += lg_now() - t0;
    return c->status == 200 && !c->overflow ? 0 : -1;
}

/* Lists every object once; *ns gets the summed transfer time, *items the count. */
static int lg_list_once(const struct lg_opts *o, struct lg_conn *c, int64_t *ns, uint64_t *items,
                        uint64_t *pages, uint64_t *bytes)
{
    char cont[4096] = "";
    *ns = 0;
    *items = *pages = *bytes = 0;
    do {
        if (lg_list_request(o, c, cont, ns) < 0)
            return lg_unexpected(c, "list");
        (*pages)++;
        *bytes += c->len;
        if (lg_list_page(o, c, items, cont, sizeof(cont)) < 0)
            return -1;
    } while (cont[0] && *pages < 100000);
    return 0;
}

static int lg_run_list(const struct lg_opts *o)
{
    struct lg_conn c;
    struct lg_lat lat = {0};
    uint64_t items = 0, pages = 0, bytes = 0;
    int rc = lg_conn_init(&c, o, o->timeout);
    for (unsigned r = 0; rc == 0 && r < o->repeat; r++) {
        int64_t ns;
        rc = lg_list_once(o, &c, &ns, &items, &pages, &bytes);
        if (rc == 0)
            lg_lat_push(&lat, ns);
    }
    if (rc == 0) {
        qsort(lat.v, lat.n, sizeof(*lat.v), lg_cmp_i64);
        printf("mode=list target=%s limit=%llu items=%llu pages=%llu bytes=%llu repeat=%u "
               "median_ms=%.1f min_ms=%.1f\n",
               o->target == LG_ETCD ? "etcd" : "slipway", (unsigned long long)o->limit,
               (unsigned long long)items, (unsigned long long)pages, (unsigned long long)bytes,
               (unsigned)o->repeat, lg_lat_pct(&lat, 0.5), lat.n ? (double)lat.v[0] / 1e6 : 0);
    }
    free(lat.v);
    lg_conn_dispose(&c);
    return rc;
}

/* ---------- watch delivery latency ---------- */

struct lg_watch_run {
    const struct lg_opts *o;
    _Atomic int64_t *sent; /* per object index: monotonic ns just before its write was sent */
    atomic_int established;
    atomic_int stop;
    _Atomic int64_t last_rx; /* monotonic ns of the newest chunk on any stream */
    char rv[LG_RV_MAX];      /* slipway: watch from this resourceVersion */
};

/* Arrival of one received chunk: the stream offset just past it and when it arrived. */
struct lg_chunk {
    size_t end;
    int64_t t;
};

/* A watcher only stores bytes and arrival times while the test runs; the events are parsed
 * after the streams close, so JSON decoding costs no CPU inside the measured window. */
struct lg_watcher {
    struct lg_watch_run *run;
    CURL *curl;
    struct curl_slist *headers;
    char *buf; /* every byte of the stream */
    size_t len, cap;
    struct lg_chunk *chunks;
    size_t nchunks, chunkcap;
    struct lg_lat lat;
    atomic_uint_fast64_t lines; /* complete lines received (progress for the drain) */
    uint64_t events;            /* events matched to a write */
    uint64_t stray;             /* events for objects nobody wrote, bookmarks excluded */
    long status;
    atomic_bool established;
    bool failed;
};

static void lg_watch_established(struct lg_watcher *w)
{
    if (!atomic_exchange(&w->established, true))
        atomic_fetch_add(&w->run->established, 1);
}

/* Matches one event's object name against the writer's send times. */
static void lg_watch_event(struct lg_watcher *w, const char *name, int64_t t)
{
    uint64_t idx;
    int64_t sent = 0;
    if (name && lg_name_index(name, &idx) == 0 && idx < w->run->o->objects)
        sent = atomic_load(&w->run->sent[idx]);
    if (sent <= 0) {
        w->stray++;
        return;
    }
    lg_lat_push(&w->lat, t - sent);
    w->events++;
}

static void lg_watch_etcd_line(struct lg_watcher *w, json_t *root, int64_t t)
{
    json_t *result = json_object_get(root, "result");
    json_t *events = json_object_get(result, "events");
    size_t i;
    if (!result) {
        fprintf(stderr, "sw-loadgen: etcd watch: unexpected message\n");
        w->failed = true;
        return;
    }
    for (i = 0; i < json_array_size(events); i++) {
        json_t *ev = json_array_get(events, i);
        const char *k64 = json_string_value(json_object_get(json_object_get(ev, "kv"), "key"));
        char key[512];
        if (!k64 || lg_b64_decode(k64, key, sizeof(key)) < 0 ||
            strncmp(key, LG_ETCD_PREFIX, sizeof(LG_ETCD_PREFIX) - 1) != 0) {
            w->stray++;
            continue;
        }
        lg_watch_event(w, key + sizeof(LG_ETCD_PREFIX) - 1, t);
    }
}

static void lg_watch_slipway_line(struct lg_watcher *w, json_t *root, int64_t t)
{
    const char *type = json_string_value(json_object_get(root, "type"));
    json_t *obj = json_object_get(root, "object");
    if (!type) {
        w->stray++;
        return;
    }
    if (strcmp(type, "BOOKMARK") == 0)
        return;
    if (strcmp(type, "ERROR") == 0) {
        fprintf(stderr, "sw-loadgen: slipway watch: ERROR event: %s\n",
                json_string_value(json_object_get(obj, "message")));
        w->failed = true;
        return;
    }
    lg_watch_event(w, json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")),
                   t);
}

/* After the run: decodes every complete line; an event's receive time is the arrival of
 * the chunk holding its terminating newline. */
static void lg_watch_parse(struct lg_watcher *w)
{
    size_t start = 0, c = 0;
    for (;;) {
        char *nl = w->len > start ? memchr(w->buf + start, '\n', w->len - start) : NULL;
        if (!nl)
            break;
        size_t n = (size_t)(nl - (w->buf + start)), end = start + n + 1;
        while (c + 1 < w->nchunks && w->chunks[c].end < end)
            c++;
        if (n > 0) {
            json_t *root = json_loadb(w->buf + start, n, 0, NULL);
            if (!root)
                w->stray++;
            else if (w->run->o->target == LG_ETCD)
                lg_watch_etcd_line(w, root, w->chunks[c].t);
            else
                lg_watch_slipway_line(w, root, w->chunks[c].t);
            json_decref(root);
        }
        start = end;
    }
}

static size_t lg_watch_write(char *data, size_t size, size_t nmemb, void *payload)
{
    struct lg_watcher *w = payload;
    int64_t t = lg_now(); /* receive time, taken first */
    size_t n = size * nmemb;
    uint64_t lines = 0;
    if (atomic_load(&w->run->stop))
        return 0;
    for (const char *p = data; (p = memchr(p, '\n', (size_t)(data + n - p))) != NULL; p++)
        lines++;
    if (!lg_append(&w->buf, &w->len, &w->cap, data, n, LG_LINE_LIMIT)) {
        w->failed = true;
        return 0;
    }
    if (w->nchunks == w->chunkcap) {
        w->chunkcap = w->chunkcap ? w->chunkcap * 2 : 1024;
        w->chunks = lg_grow(w->chunks, w->chunkcap * sizeof(*w->chunks));
    }
    w->chunks[w->nchunks++] = (struct lg_chunk){.end = w->len, .t = t};
    atomic_fetch_add(&w->lines, lines);
    atomic_store(&w->run->last_rx, t);
    /* etcd confirms the watch with a first message carrying "created":true */
    if (w->run->o->target == LG_ETCD && !atomic_load(&w->established) &&
        memmem(w->buf, w->len, "\"created\":true", 14))
        lg_watch_established(w);
    return n;
}

/* slipway: the stream counts as open once its 200 response headers are complete. */
static size_t lg_watch_header(char *data, size_t size, size_t nmemb, void *payload)
{
    struct lg_watcher *w = payload;
    size_t n = size * nmemb;
    if (n > 9 && memcmp(data, "HTTP/", 5) == 0) {
        const char *sp = memchr(data, ' ', n);
        w->status =
            sp && sp + 4 <= data + n ? (sp[1] - '0') * 100 + (sp[2] - '0') * 10 + (sp[3] - '0') : 0;
    } else if (n <= 2 && w->status == 200 && w->run->o->target == LG_SLIPWAY) {
        lg_watch_established(w);
    }
    return n;
}

/* The event loop thread: a curl multi handle driven through epoll on its sockets (the
 * curl_multi_socket_action interface), so one wake-up serves every stream with data and the
 * client adds as little as possible to the latency it measures. */
struct lg_loop {
    struct lg_watch_run *run;
    pthread_t th;
    CURLM *multi;
    int ep;          /* epoll fd */
    long timeout_ms; /* curl's requested timer, -1: none */
};

static int lg_loop_socket(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
    struct lg_loop *l = userp;
    struct epoll_event ev = {.data.fd = s};
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(l->ep, EPOLL_CTL_DEL, s, NULL);
        return 0;
    }
    ev.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u);
    if (epoll_ctl(l->ep, EPOLL_CTL_MOD, s, &ev) != 0 &&
        epoll_ctl(l->ep, EPOLL_CTL_ADD, s, &ev) != 0)
        return -1;
    return 0;
}

static int lg_loop_timer(CURLM *multi, long timeout_ms, void *userp)
{
    struct lg_loop *l = userp;
    l->timeout_ms = timeout_ms;
    return 0;
}

/* A stream that ends before the test stops is a failure. */
static void lg_loop_reap(struct lg_loop *l)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(l->multi, &left)) != NULL) {
        struct lg_watcher *w = NULL;
        if (msg->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&w);
        if (w && !atomic_load(&l->run->stop)) {
            lg_complain("watch stream ended: %s (status %ld)", curl_easy_strerror(msg->data.result),
                        w->status);
            w->failed = true;
        }
    }
}

static void *lg_loop_main(void *arg)
{
    struct lg_loop *l = arg;
    struct epoll_event evs[64];
    int running = 0;
    curl_multi_socket_action(l->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    while (!atomic_load(&l->run->stop)) {
        int wait = l->timeout_ms < 0 || l->timeout_ms > 50 ? 50 : (int)l->timeout_ms;
        int n = epoll_wait(l->ep, evs, 64, wait);
        if (n <= 0)
            curl_multi_socket_action(l->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        for (int i = 0; i < n; i++) {
            int flags = ((evs[i].events & EPOLLIN) ? CURL_CSELECT_IN : 0) |
                        ((evs[i].events & EPOLLOUT) ? CURL_CSELECT_OUT : 0) |
                        ((evs[i].events & (EPOLLERR | EPOLLHUP)) ? CURL_CSELECT_ERR : 0);
            curl_multi_socket_action(l->multi, evs[i].data.fd, flags, &running);
        }
        lg_loop_reap(l);
    }
    return NULL;
}

static int lg_loop_init(struct lg_loop *l, struct lg_watch_run *run)
{
    l->run = run;
    l->timeout_ms = -1;
    l->ep = epoll_create1(EPOLL_CLOEXEC);
    l->multi = curl_multi_init();
    if (l->ep < 0 || !l->multi)
        return -1;
    curl_multi_setopt(l->multi, CURLMOPT_SOCKETFUNCTION, lg_loop_socket);
    curl_multi_setopt(l->multi, CURLMOPT_SOCKETDATA, l);
    curl_multi_setopt(l->multi, CURLMOPT_TIMERFUNCTION, lg_loop_timer);
    curl_multi_setopt(l->multi, CURLMOPT_TIMERDATA, l);
    return 0;
}

static int lg_watcher_init(struct lg_watcher *w, struct lg_watch_run *run, char *url,
                           const char *body)
{
    const struct lg_opts *o = run->o;
    w->run = run;
    atomic_init(&w->lines, 0);
    atomic_init(&w->established, false);
    w->curl = curl_easy_init();
    w->headers = lg_headers(o);
    if (!w->curl || !w->headers)
        return -1;
    curl_easy_setopt(w->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(w->curl, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(w->curl, CURLOPT_URL, url);
    curl_easy_setopt(w->curl, CURLOPT_HTTPHEADER, w->headers);
    curl_easy_setopt(w->curl, CURLOPT_WRITEFUNCTION, lg_watch_write);
    curl_easy_setopt(w->curl, CURLOPT_WRITEDATA, w);
    curl_easy_setopt(w->curl, CURLOPT_HEADERFUNCTION, lg_watch_header);
    curl_easy_setopt(w->curl, CURLOPT_HEADERDATA, w);
    curl_easy_setopt(w->curl, CURLOPT_PRIVATE, (char *)w);
    lg_tls(w->curl, o);
    curl_easy_setopt(w->curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(w->curl, CURLOPT_TIMEOUT_MS, (long)(o->duration * 1000) + 30000L);
    if (body) {
        curl_easy_setopt(w->curl, CURLOPT_COPYPOSTFIELDS, body);
    }
    return 0;
}

/* The writer: o->writes writes at o->rate per second to distinct objects, one connection;
 * slipway writes are unconditional PUTs, etcd writes plain puts. */
static int lg_watch_writer(struct lg_watch_run *run, struct lg_conn *c, uint64_t *errors)
{
    const struct lg_opts *o = run->o;
    int64_t t0 = lg_now();
    for (uint64_t i = 0; i < o->writes; i++) {
        lg_sleep_until(t0 + (int64_t)((double)i / o->rate * 1e9));
        atomic_store(&run->sent[i], lg_now());
        if (lg_op_write(c, o, i, false, NULL, 1000000 + i, NULL) != 0 && ++*errors >= 20)
            break;
    }
    return 0;
}

/* Waits until every watcher has a line per write (etcd: plus its "created" line), or no
 * stream has received anything for a second, or max_ns passed. */
static void lg_watch_drain(struct lg_watch_run *run, struct lg_watcher *ws, int64_t max_ns)
{
    uint64_t want = run->o->writes + (run->o->target == LG_ETCD ? 1 : 0);
    int64_t end = lg_now() + max_ns;
    while (lg_now() < end) {
        bool all = true;
        for (unsigned i = 0; i < run->o->watchers && all; i++)
            all = atomic_load(&ws[i].lines) >= want || ws[i].failed;
        if (all || lg_now() - atomic_load(&run->last_rx) > LG_NS_PER_SEC)
            return;
        lg_sleep_until(lg_now() + 5000000);
    }
}

static int lg_watch_prepare(struct lg_watch_run *run, char *url, size_t n, char *body, size_t bn)
{
    const struct lg_opts *o = run->o;
    struct lg_conn c;
    int rc = -1;
    if (o->target == LG_ETCD) {
        char k64[128], e64[128], end[] = LG_ETCD_PREFIX;
        end[sizeof(end) - 2]++;
        if (lg_b64_encode(LG_ETCD_PREFIX, strlen(LG_ETCD_PREFIX), k64, sizeof(k64)) < 0 ||
            lg_b64_encode(end, strlen(end), e64, sizeof(e64)) < 0)
            return -1;
        snprintf(body, bn, "{\"create_request\":{\"key\":\"%s\",\"range_end\":\"%s\"}}", k64, e64);
        return lg_url(url, n, o, "/v3/watch");
    }
    /* slipway: watch from the current resourceVersion, so no initial ADDED flood */
    char lurl[LG_URL_MAX];
    if (lg_conn_init(&c, o, o->timeout) < 0 ||
        lg_url(lurl, sizeof(lurl), o, LG_IS_PATH "?limit=1") < 0)
        goto done;
    if (lg_conn_do(&c, "GET", lurl, NULL, 0) < 0 || c.status != 200 ||
        lg_json_rv(c.resp, c.len, run->rv, sizeof(run->rv)) < 0) {
        fprintf(stderr, "sw-loadgen: watch: cannot read the list resourceVersion\n");
        goto done;
    }
    body[0] = '\0';
    int len = snprintf(url, n, "%s" LG_IS_PATH "?watch=true&resourceVersion=%s", o->url, run->rv);
    rc = len > 0 && (size_t)len < n ? 0 : -1;
done:
    lg_conn_dispose(&c);
    return rc;
}

static void lg_watch_report(const struct lg_opts *o, struct lg_watcher *ws, int established,
                            uint64_t write_errors)
{
    struct lg_lat all = {0};
    uint64_t events = 0, stray = 0;
    unsigned failed = 0;
    for (unsigned i = 0; i < o->watchers; i++) {
        lg_lat_merge(&all, &ws[i].lat);
        events += ws[i].events;
        stray += ws[i].stray;
        failed += ws[i].failed;
    }
    qsort(all.v, all.n, sizeof(*all.v), lg_cmp_i64);
    printf("mode=watch-latency target=%s watchers=%u established=%d writes=%llu "
           "write_errors=%llu events=%llu expected=%llu stray=%llu failed=%u p50_ms=%.3f "
           "p99_ms=%.3f max_ms=%.3f\n",
           o->target == LG_ETCD ? "etcd" : "slipway", (unsigned)o->watchers, established,
           (unsigned long long)o->writes, (unsigned long long)write_errors,
           (unsigned long long)events, (unsigned long long)o->writes * o->watchers,
           (unsigned long long)stray, failed, lg_lat_pct(&all, 0.50), lg_lat_pct(&all, 0.99),
           all.n ? (double)all.v[all.n - 1] / 1e6 : 0);
    free(all.v);
}

/* Streams stop: loop joined, handles detached, events decoded. */
static void lg_watch_close(const struct lg_opts *o, struct lg_loop *l, bool joined,
                           struct lg_watcher *ws)
{
    if (joined)
        pthread_join(l->th, NULL);
    for (unsigned i = 0; i < o->watchers; i++) {
        if (ws[i].curl && l->multi)
            curl_multi_remove_handle(l->multi, ws[i].curl);
        lg_watch_parse(&ws[i]);
    }
}

static void lg_watch_dispose(const struct lg_opts *o, struct lg_loop *l, struct lg_watcher *ws)
{
    for (unsigned i = 0; i < o->watchers; i++) {
        if (ws[i].curl)
            curl_easy_cleanup(ws[i].curl);
        curl_slist_free_all(ws[i].headers);
        free(ws[i].buf);
        free(ws[i].chunks);
        free(ws[i].lat.v);
    }
    if (l->multi)
        curl_multi_cleanup(l->multi);
    if (l->ep >= 0)
        close(l->ep);
}

/* Measures delivery latency: open the streams on one event loop, wait until all are
 * established, write at a modest rate from this thread, drain, then decode what arrived. */
static int lg_run_watch(const struct lg_opts *o)
{
    struct lg_watch_run run = {.o = o};
    struct lg_watcher *ws = lg_alloc(o->watchers * sizeof(*ws));
    struct lg_loop loop = {.ep = -1};
    struct lg_conn wc = {0};
    char url[LG_URL_MAX], body[1024];
    bool joined = false;
    uint64_t write_errors = 0;
    int rc = -1, established = 0;
    run.sent = lg_alloc(o->objects * sizeof(*run.sent));
    atomic_init(&run.established, 0);
    atomic_init(&run.stop, 0);
    atomic_init(&run.last_rx, 0);
    if (o->writes > o->objects || lg_watch_prepare(&run, url, sizeof(url), body, sizeof(body)) < 0)
        goto done;
    if (lg_conn_init(&wc, o, o->timeout) < 0 || lg_loop_init(&loop, &run) < 0)
        goto done;
    for (unsigned i = 0; i < o->watchers; i++) {
        if (lg_watcher_init(&ws[i], &run, url, body[0] ? body : NULL) < 0 ||
            curl_multi_add_handle(loop.multi, ws[i].curl) != CURLM_OK)
            goto done;
    }
    if (pthread_create(&loop.th, NULL, lg_loop_main, &loop) != 0)
        goto done;
    joined = true;
    int64_t until = lg_now() + 10 * LG_NS_PER_SEC;
    while (atomic_load(&run.established) < (int)o->watchers && lg_now() < until)
        lg_sleep_until(lg_now() + 2000000);
    established = atomic_load(&run.established);
    lg_sleep_until(lg_now() + 300000000); /* let the streams settle */
    lg_watch_writer(&run, &wc, &write_errors);
    lg_watch_drain(&run, ws, 5 * LG_NS_PER_SEC);
    rc = 0;
done:
    atomic_store(&run.stop, 1);
    lg_watch_close(o, &loop, joined, ws);
    if (rc == 0) {
        lg_watch_report(o, ws, established, write_errors);
        if (established < (int)o->watchers || write_errors)
            rc = -1;
    }
    lg_watch_dispose(o, &loop, ws);
    lg_conn_dispose(&wc);
    free(run.sent);
    free(ws);
    return rc;
}

/* ---------- start: launch a server and time it to ready ---------- */

static bool lg_ready(const struct lg_opts *o, struct lg_conn *c)
{
    char url[LG_URL_MAX];
    bool etcd = o->target == LG_ETCD;
    if (lg_url(url, sizeof(url), o, etcd ? "/health" : "/readyz") < 0)
        return false;
    if (lg_conn_do(c, "GET", url, NULL, 0) < 0 || c->status != 200)
        return false;
    return !etcd || strstr(c->resp ? c->resp : "", "\"health\":\"true\"") != NULL;
}

/* Forks o->cmd (its stdout joined to stderr so callers capturing our stdout never wait on
 * the server), prints `pid=N` at once, polls readiness every 2 ms and prints `start_ms=X`
 * (fork to ready); the server keeps running. On timeout the child is killed. */
static int lg_run_start(const struct lg_opts *o)
{
    struct lg_conn c;
    int rc = -1, status;
    if (lg_conn_init(&c, o, 1.0) < 0)
        return -1;
    curl_easy_setopt(c.curl, CURLOPT_CONNECTTIMEOUT_MS, 500L);
    c.quiet = true;
    fflush(stdout);
    int64_t t0 = lg_now();
    pid_t pid = fork();
    if (pid < 0)
        goto done;
    if (pid == 0) {
        dup2(STDERR_FILENO, STDOUT_FILENO);
        signal(SIGPIPE, SIG_DFL); /* the server gets default dispositions, not ours */
        signal(SIGINT, SIG_DFL);
        execvp(o->cmd[0], o->cmd);
        fprintf(stderr, "sw-loadgen: exec %s: %s\n", o->cmd[0], strerror(errno));
        _exit(127);
    }
    printf("pid=%d\n", (int)pid); /* at once: if we are killed, the caller still knows it */
    fflush(stdout);
    int64_t end = t0 + (int64_t)(o->timeout * LG_NS_PER_SEC);
    while (lg_now() < end) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            fprintf(stderr, "sw-loadgen: start: %s exited before it was ready\n", o->cmd[0]);
            goto done;
        }
        if (lg_ready(o, &c)) {
            printf("start_ms=%.1f\n", (double)(lg_now() - t0) / 1e6);
            rc = 0;
            goto done;
        }
        lg_sleep_until(lg_now() + 2000000);
    }
    fprintf(stderr, "sw-loadgen: start: %s not ready after %.0f s\n", o->cmd[0], o->timeout);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
done:
    lg_conn_dispose(&c);
    return rc;
}

/* ---------- ports: free loopback TCP ports ---------- */

static int lg_run_ports(const struct lg_opts *o)
{
    int fds[16], rc = -1;
    unsigned n = 0;
    char out[256] = "";
    size_t used = 0;
    for (; n < o->nports && n < 16; n++) {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t al = sizeof(a);
        fds[n] = socket(AF_INET, SOCK_STREAM, 0);
        if (fds[n] < 0)
            goto done;
        if (bind(fds[n], (struct sockaddr *)&a, sizeof(a)) < 0 ||
            getsockname(fds[n], (struct sockaddr *)&a, &al) < 0) {
            close(fds[n]);
            goto done;
        }
        used += (size_t)snprintf(out + used, sizeof(out) - used, "%s%u", n ? "," : "",
                                 (unsigned)ntohs(a.sin_port));
    }
    printf("ports=%s\n", out);
    rc = 0;
done:
    for (unsigned i = 0; i < n; i++)
        close(fds[i]);
    return rc;
}

/* ---------- command line ---------- */

static void lg_usage(void)
{
    fprintf(stderr,
            "usage: sw-loadgen MODE [options]\n"
            "modes: create update get list watch-latency start ports\n"
            "  --target slipway|etcd   API spoken (default slipway)\n"
            "  --url URL               server base URL\n"
            "  --token T               bearer token (slipway)\n"
            "  --insecure-tls          https without certificate verification\n"
            "  --inflight N            workers, one keep-alive connection each (default 1)\n"
            "  --count N               cap on timed operations (0: none)\n"
            "  --duration S            cap on the timed phase in seconds (default 10)\n"
            "  --start I               first object index for create (default 0)\n"
            "  --objects N             object set for update/get/watch-latency (default 1000)\n"
            "  --limit N --repeat R    list page size (0: one request) and repetitions\n"
            "  --watchers N --writes N --rate R   watch-latency shape (100, 500, 100/s)\n"
            "  --timeout S             per-request timeout; start: readiness timeout\n"
            "  --n N                   ports: how many free ports\n"
            "  start ... -- CMD ARGS   launch CMD, print pid= and start_ms= once ready\n");
}

static int lg_opt_value(int argc, char **argv, int *i, const char **out)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "sw-loadgen: %s needs a value\n", argv[*i]);
        return -1;
    }
    *out = argv[++*i];
    return 0;
}

static int lg_opt_numeric(const char *flag, const char *v, struct lg_opts *o)
{
    const struct {
        const char *name;
        uint64_t *u; /* integer option, or */
        double *d;   /* seconds or a rate */
    } flags[] = {
        {"--inflight", &o->inflight, NULL}, {"--count", &o->count, NULL},
        {"--start", &o->start, NULL},       {"--objects", &o->objects, NULL},
        {"--limit", &o->limit, NULL},       {"--repeat", &o->repeat, NULL},
        {"--watchers", &o->watchers, NULL}, {"--writes", &o->writes, NULL},
        {"--n", &o->nports, NULL},          {"--duration", NULL, &o->duration},
        {"--rate", NULL, &o->rate},         {"--timeout", NULL, &o->timeout},
    };
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
        if (strcmp(flag, flags[i].name) == 0)
            return flags[i].u ? lg_parse_u64(v, 1ULL << 40, flags[i].u)
                              : lg_parse_double(v, flags[i].d);
    }
    return -1;
}

static int lg_parse_args(int argc, char **argv, struct lg_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->inflight = o->repeat = o->nports = 1;
    o->objects = 1000;
    o->watchers = o->rate = 100;
    o->writes = 500;
    o->duration = o->timeout = 10;
    o->url = "http://127.0.0.1:6443";
    if (argc < 2)
        return -1;
    o->mode = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *v = NULL;
        if (strcmp(argv[i], "--") == 0) {
            o->cmd = argv + i + 1;
            break;
        }
        if (strcmp(argv[i], "--insecure-tls") == 0) {
            o->insecure_tls = true;
            continue;
        }
        if (lg_opt_value(argc, argv, &i, &v) < 0)
            return -1;
        if (strcmp(argv[i - 1], "--target") == 0) {
            if (strcmp(v, "etcd") != 0 && strcmp(v, "slipway") != 0)
                return -1;
            o->target = strcmp(v, "etcd") == 0 ? LG_ETCD : LG_SLIPWAY;
        } else if (strcmp(argv[i - 1], "--url") == 0) {
            o->url = v;
        } else if (strcmp(argv[i - 1], "--token") == 0) {
            o->token = v;
        } else if (lg_opt_numeric(argv[i - 1], v, o) < 0) {
            fprintf(stderr, "sw-loadgen: bad option %s %s\n", argv[i - 1], v);
            return -1;
        }
    }
    if (o->inflight < 1 || o->inflight > LG_MAX_WORKERS || o->watchers > LG_MAX_WATCHERS ||
        o->objects < 1 || o->repeat < 1 || o->rate <= 0 || o->timeout <= 0)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    struct lg_opts o;
    int rc = -1;
    if (lg_parse_args(argc, argv, &o) < 0) {
        lg_usage();
        return 2;
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    o.gen_base = (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u;
    signal(SIGPIPE, SIG_IGN);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return 1;
    if (strcmp(o.mode, "create") == 0)
        rc = lg_run_pool(&o, lg_create_main);
    else if (strcmp(o.mode, "update") == 0)
        rc = lg_run_pool(&o, lg_update_main);
    else if (strcmp(o.mode, "get") == 0)
        rc = lg_run_pool(&o, lg_get_main);
    else if (strcmp(o.mode, "list") == 0)
        rc = lg_run_list(&o);
    else if (strcmp(o.mode, "watch-latency") == 0)
        rc = lg_run_watch(&o);
    else if (strcmp(o.mode, "start") == 0 && o.cmd && o.cmd[0])
        rc = lg_run_start(&o);
    else if (strcmp(o.mode, "ports") == 0)
        rc = lg_run_ports(&o);
    else
        lg_usage();
    curl_global_cleanup();
    return rc == 0 ? 0 : 1;
}
