/* sw-loadgen: the HTTP load generator behind bench/api.sh.
 * One client for two targets, slipway's Kubernetes REST API and etcd's v3 JSON gateway, so
 * both see the same concurrency (one keep-alive libcurl handle per worker thread) and the same
 * ~1 KiB ImageStream bodies. Each mode prints one `key=value ...` line on stdout (start
 * prints two); diagnostics go to stderr. Built on src/util (swcore) and bench/benchlib (clock,
 * latency percentiles, connection, worker pool, NDJSON splitter). See bench/README.md. */
#include "benchlib.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/str.h"
#include "util/time.h"

#include <curl/curl.h>
#include <jansson.h>

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

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
    const char *mode;            /* create|update|get|list|watch-latency|start|ports */
    enum lg_target target;       /* which API the requests speak */
    const char *url;             /* base URL, e.g. http://127.0.0.1:6443 */
    struct bench_conn_opts http; /* bearer token, --insecure-tls, per-request --timeout */
    uint64_t gen_base;           /* per-process offset of the body's generation annotation, so
                                    a rewrite never carries identical bytes (a no-op update
                                    emits no watch event and skips the store) */
    uint64_t inflight;           /* worker threads, one connection each */
    uint64_t count;              /* cap on timed operations (0: none) */
    double duration;             /* cap on the timed phase, seconds */
    uint64_t start;              /* first object index for create */
    uint64_t objects;            /* size of the object set for update/get/watch */
    uint64_t limit;              /* list page size (0: one request) */
    uint64_t repeat;             /* list repetitions (median reported) */
    uint64_t watchers;           /* watch streams */
    uint64_t writes;             /* writes during the watch test */
    double rate;                 /* writes per second during the watch test */
    uint64_t nports;             /* ports mode: how many */
    char **cmd;                  /* start mode: server argv after "--" */
};

/* ---------- small helpers ---------- */

/* Decodes base64 s into out as a NUL-terminated string; returns 0 or -1. */
static int lg_b64_decode(const char *s, char *out, size_t n)
{
    unsigned char *raw = NULL;
    size_t len = 0;
    int rc = -1;
    if (sw_base64_decode(s, strlen(s), &raw, &len) < 0 || len >= n)
        goto done;
    memcpy(out, raw, len + 1);
    rc = 0;
done:
    sw_free(raw);
    return rc;
}

/* "bench-000042" -> 42; returns 0 or -1. */
static int lg_name_index(const char *name, uint64_t *out)
{
    static const char prefix[] = "bench-";
    if (strncmp(name, prefix, sizeof(prefix) - 1) != 0)
        return -1;
    return sw_str_to_u64(name + sizeof(prefix) - 1, out) < 0 ? -1 : 0;
}

static void lg_object_name(uint64_t idx, char *out, size_t n)
{
    snprintf(out, n, "bench-%06llu", (unsigned long long)idx);
}

static const char *lg_target_name(const struct lg_opts *o)
{
    return o->target == LG_ETCD ? "etcd" : "slipway";
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
    char *k64 = sw_base64_encode(key, strlen(key));
    char *v64 = value ? sw_base64_encode(value, vlen) : NULL;
    int len;
    if (v64)
        len = snprintf(out, n, "{\"key\":\"%s\",\"value\":\"%s\"}", k64, v64);
    else
        len = snprintf(out, n, "{\"key\":\"%s\"}", k64);
    sw_free(k64);
    sw_free(v64);
    return len > 0 && (size_t)len < n ? len : -1;
}

/* `"key":b64(start[0..len)),"range_end":b64(end of the bench prefix)` into out: the keys of a
 * range or watch over the bench objects. Returns the length or -1. */
static int lg_etcd_range_keys(char *out, size_t n, const char *start, size_t len)
{
    char end[] = LG_ETCD_PREFIX;
    end[sizeof(end) - 2]++; /* "/registry/imagestreams/default0" */
    char *k64 = sw_base64_encode(start, len), *e64 = sw_base64_encode(end, strlen(end));
    int w = snprintf(out, n, "\"key\":\"%s\",\"range_end\":\"%s\"", k64, e64);
    sw_free(k64);
    sw_free(e64);
    return w > 0 && (size_t)w < n ? w : -1;
}

/* Range over the whole bench prefix, starting at from_key (NULL: prefix start). */
static int lg_etcd_range_body(char *out, size_t n, const char *from_key, uint64_t limit)
{
    char keys[1536];
    const char *start = from_key ? from_key : LG_ETCD_PREFIX;
    /* from_key is the last key seen: its trailing NUL makes the range start just after it */
    if (lg_etcd_range_keys(keys, sizeof(keys), start, strlen(start) + (from_key ? 1 : 0)) < 0)
        return -1;
    int len = snprintf(out, n, "{%s,\"limit\":\"%llu\"}", keys, (unsigned long long)limit);
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

/* metadata.resourceVersion of a JSON object response into rv. slipway renders it as the first
 * member of metadata, where a scan finds it (the etcd side only scans its answers too, so the
 * client costs both servers alike); any other layout is parsed. */
static int lg_json_rv(const sw_buf *body, char *rv, size_t n)
{
    static const char lead[] = "\"metadata\":{\"resourceVersion\":\"";
    const char *at = strstr(sw_buf_cstr(body), lead);
    if (at) {
        at += sizeof(lead) - 1;
        size_t len = strspn(at, "0123456789");
        if (len && len < n && at[len] == '"') {
            memcpy(rv, at, len);
            rv[len] = '\0';
            return 0;
        }
    }
    int rc = -1;
    json_t *root = json_loadb(sw_buf_cstr(body), body->len, 0, NULL);
    const char *s =
        json_string_value(json_object_get(json_object_get(root, "metadata"), "resourceVersion"));
    if (!s || sw_strlcpy(rv, s, n) >= n)
        goto done;
    rc = 0;
done:
    json_decref(root);
    return rc;
}

/* ---------- write/read operations (one per call, on one connection) ---------- */

/* One etcd gateway call for object `name`: a put of value (vlen bytes), or a range (value
 * NULL). The answer must be 200 and carry "revision" (put) or "kvs" (range). */
static int lg_etcd_call(struct bench_conn *c, const struct lg_opts *o, const char *name,
                        const char *value, size_t vlen)
{
    char key[256], url[LG_URL_MAX], body[LG_BODY_MAX * 2];
    bool put = value != NULL;
    snprintf(key, sizeof(key), LG_ETCD_PREFIX "%s", name);
    int blen = lg_etcd_body(body, sizeof(body), key, value, vlen);
    if (blen < 0 || lg_url(url, sizeof(url), o, put ? "/v3/kv/put" : "/v3/kv/range") < 0)
        return -1;
    if (bench_conn_do(c, "POST", url, NULL, body, (size_t)blen) < 0)
        return -1;
    if (c->status != 200 || !strstr(sw_buf_cstr(&c->resp), put ? "\"revision\"" : "\"kvs\""))
        return bench_conn_unexpected(c, put ? "etcd put" : "etcd range");
    return 0;
}

/* Writes object idx. rv: CAS precondition for slipway (NULL: create or unconditional update);
 * rv_out receives the new resourceVersion when non-NULL. Returns 0, -1, or 409 on conflict. */
static int lg_op_write(struct bench_conn *c, const struct lg_opts *o, uint64_t idx, bool create,
                       const char *rv, uint64_t gen, char *rv_out)
{
    char name[64], url[LG_URL_MAX], obj[LG_BODY_MAX];
    lg_object_name(idx, name, sizeof(name));
    int olen = lg_object_json(obj, sizeof(obj), name, o->target == LG_SLIPWAY ? rv : NULL,
                              (o->gen_base + gen) % 10000000000ULL);
    if (olen < 0)
        return -1;
    if (o->target == LG_ETCD)
        return lg_etcd_call(c, o, name, obj, (size_t)olen);
    int rc =
        create ? lg_url(url, sizeof(url), o, LG_IS_PATH) : lg_object_url(url, sizeof(url), o, name);
    if (rc < 0 || bench_conn_do(c, create ? "POST" : "PUT", url, NULL, obj, (size_t)olen) < 0)
        return -1;
    if (c->status == 409)
        return 409;
    if (c->status != (create ? 201 : 200))
        return bench_conn_unexpected(c, create ? "create" : "update");
    return rv_out ? lg_json_rv(&c->resp, rv_out, LG_RV_MAX) : 0;
}

/* Reads object idx; rv_out (may be NULL) receives its resourceVersion (slipway only). */
static int lg_op_get(struct bench_conn *c, const struct lg_opts *o, uint64_t idx, char *rv_out)
{
    char name[64], url[LG_URL_MAX];
    lg_object_name(idx, name, sizeof(name));
    if (o->target == LG_ETCD)
        return lg_etcd_call(c, o, name, NULL, 0);
    if (lg_object_url(url, sizeof(url), o, name) < 0 ||
        bench_conn_do(c, "GET", url, NULL, NULL, 0) < 0)
        return -1;
    if (c->status != 200 || c->resp.len == 0)
        return bench_conn_unexpected(c, "get");
    return rv_out ? lg_json_rv(&c->resp, rv_out, LG_RV_MAX) : 0;
}

/* ---------- create / update / get: worker pool ---------- */

/* update: the objects one worker owns (id, id+inflight, ...) and their resourceVersions. */
struct lg_owned {
    char (*rv)[LG_RV_MAX]; /* resourceVersion per owned object (slipway) */
    uint64_t n;            /* objects owned */
    uint64_t next;         /* the owned object the next update writes */
};

/* What the jobs share: the options and, for update, each worker's objects. */
struct lg_jobs {
    const struct lg_opts *o;
    struct lg_owned *owned; /* update: one per worker */
};

/* A job's outcome from an operation's: an operation counts in ok, a conflict in bad (1: not
 * timed, not an error), a failure is an error. */
static int lg_outcome(struct bench_worker *w, int rc)
{
    if (rc == 0)
        w->ok++;
    if (rc != 409)
        return rc;
    w->bad++;
    return 1;
}

static int lg_create_job(struct bench_worker *w, uint64_t n, void *payload)
{
    const struct lg_opts *o = ((struct lg_jobs *)payload)->o;
    return lg_outcome(w, lg_op_write(&w->conn, o, o->start + n, true, NULL, 0, NULL));
}

/* Worker id owns objects id, id+inflight, ...; slipway needs their current resourceVersions
 * (one untimed GET each) so that every timed PUT is a GET-free compare-and-swap. */
static int lg_update_setup(struct bench_worker *w, void *payload)
{
    struct lg_jobs *j = payload;
    const struct lg_opts *o = j->o;
    struct lg_owned *own = &j->owned[w->id];
    own->n = w->id < o->objects ? (o->objects - w->id - 1) / o->inflight + 1 : 0;
    own->rv = sw_calloc(own->n, sizeof(*own->rv));
    if (o->target == LG_ETCD)
        return 0;
    for (uint64_t k = 0; k < own->n; k++) {
        if (lg_op_get(&w->conn, o, w->id + k * o->inflight, own->rv[k]) < 0) {
            fprintf(stderr, "sw-loadgen: update setup: GET object %llu failed (status %ld)\n",
                    (unsigned long long)(w->id + k * o->inflight), w->conn.status);
            return -1;
        }
    }
    return 0;
}

/* A CAS update of the worker's next object; after a conflict its resourceVersion is read
 * again (untimed: conflicts are not timed). */
static int lg_update_job(struct bench_worker *w, uint64_t n, void *payload)
{
    struct lg_jobs *j = payload;
    const struct lg_opts *o = j->o;
    struct lg_owned *own = &j->owned[w->id];
    uint64_t idx = w->id + own->next * o->inflight;
    char *rv = own->rv[own->next];
    own->next = (own->next + 1) % own->n;
    int rc = lg_op_write(&w->conn, o, idx, false, o->target == LG_SLIPWAY ? rv : NULL, n + 1, rv);
    if (rc == 409 && lg_op_get(&w->conn, o, idx, rv) < 0)
        w->errors++;
    return lg_outcome(w, rc);
}

/* A read of a random object, spread over the whole set. */
static int lg_get_job(struct bench_worker *w, uint64_t n, void *payload)
{
    const struct lg_opts *o = ((struct lg_jobs *)payload)->o;
    return lg_outcome(w, lg_op_get(&w->conn, o, bench_rand(&w->rng) % o->objects, NULL));
}

static void lg_pool_report(const struct lg_opts *o, struct bench_pool_result *r)
{
    printf("mode=%s target=%s inflight=%u ops=%llu errors=%llu conflicts=%llu secs=%.3f "
           "rate=%.1f p50_ms=%.3f p99_ms=%.3f\n",
           o->mode, lg_target_name(o), (unsigned)o->inflight, (unsigned long long)r->ok,
           (unsigned long long)r->errors, (unsigned long long)r->bad, r->secs,
           r->secs > 0 ? (double)r->ok / r->secs : 0, bench_lat_pct(&r->lat, 0.50, 0),
           bench_lat_pct(&r->lat, 0.99, 0));
}

/* Runs create, update (setup: lg_update_setup) or get with o->inflight workers; the timed
 * phase starts after every worker's untimed setup. Returns 0 when nothing failed. */
static int lg_run_pool(const struct lg_opts *o, bench_job_fn job, bench_setup_fn setup)
{
    struct lg_jobs j = {.o = o};
    struct bench_pool_result r;
    struct bench_pool_opts po = {.workers = (unsigned)o->inflight,
                                 .jobs = o->count,
                                 .duration = o->duration,
                                 .max_failing = LG_MAX_FAILING,
                                 .conn = &o->http,
                                 .setup = setup,
                                 .job = job,
                                 .payload = &j};
    if (setup) {
        /* a worker that would own no object has nothing to update */
        po.workers = (unsigned)(o->objects < o->inflight ? o->objects : o->inflight);
        j.owned = sw_calloc(po.workers, sizeof(*j.owned));
    }
    int rc = bench_pool_run(&po, &r);
    if (rc == 0) {
        lg_pool_report(o, &r);
        rc = r.errors || r.bad ? -1 : 0;
    }
    for (unsigned i = 0; j.owned && i < po.workers; i++)
        sw_free(j.owned[i].rv);
    sw_free(j.owned);
    bench_lat_dispose(&r.lat);
    return rc;
}

/* ---------- list ---------- */

/* Counts items of one list page and copies the continuation (slipway metadata.continue, or
 * etcd's last key when "more" is set) into cont. */
static int lg_list_page(const struct lg_opts *o, const struct bench_conn *c, uint64_t *items,
                        char *cont, size_t n)
{
    int rc = -1;
    json_t *root = json_loadb(sw_buf_cstr(&c->resp), c->resp.len, 0, NULL);
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
    if (next && *next && sw_strlcpy(cont, next, n) >= n)
        goto done;
    rc = 0;
done:
    json_decref(root);
    return rc;
}

/* One request of a (possibly paged) list; only the transfer is timed, into *ns. */
static int lg_list_request(const struct lg_opts *o, struct bench_conn *c, const char *cont,
                           int64_t *ns)
{
    char url[LG_URL_MAX * 2], body[2048];
    int64_t t0;
    if (o->target == LG_ETCD) {
        int blen = lg_etcd_range_body(body, sizeof(body), *cont ? cont : NULL, o->limit);
        if (blen < 0 || lg_url(url, sizeof(url), o, "/v3/kv/range") < 0)
            return -1;
        t0 = bench_now();
        if (bench_conn_do(c, "POST", url, NULL, body, (size_t)blen) < 0)
            return -1;
    } else {
        char *esc = curl_easy_escape(c->curl, cont, 0);
        int len = snprintf(url, sizeof(url), "%s" LG_IS_PATH "?limit=%llu%s%s", o->url,
                           (unsigned long long)o->limit, *cont ? "&continue=" : "", esc ? esc : "");
        curl_free(esc);
        if (len < 0 || (size_t)len >= sizeof(url))
            return -1;
        t0 = bench_now();
        if (bench_conn_do(c, "GET", url, NULL, NULL, 0) < 0)
            return -1;
    }
    *ns += bench_now() - t0;
    return c->status == 200 && !sw_buf_error(&c->resp) ? 0 : -1;
}

/* Lists every object once; *ns gets the summed transfer time, *items the count. */
static int lg_list_once(const struct lg_opts *o, struct bench_conn *c, int64_t *ns, uint64_t *items,
                        uint64_t *pages, uint64_t *bytes)
{
    char cont[4096] = "";
    *ns = 0;
    *items = *pages = *bytes = 0;
    do {
        if (lg_list_request(o, c, cont, ns) < 0)
            return bench_conn_unexpected(c, "list");
        (*pages)++;
        *bytes += c->resp.len;
        if (lg_list_page(o, c, items, cont, sizeof(cont)) < 0)
            return -1;
    } while (cont[0] && *pages < 100000);
    return 0;
}

static int lg_run_list(const struct lg_opts *o)
{
    struct bench_conn c;
    struct bench_lat lat = {0};
    uint64_t items = 0, pages = 0, bytes = 0;
    int rc = bench_conn_init(&c, &o->http);
    for (unsigned r = 0; rc == 0 && r < o->repeat; r++) {
        int64_t ns;
        rc = lg_list_once(o, &c, &ns, &items, &pages, &bytes);
        if (rc == 0)
            bench_lat_push(&lat, ns);
    }
    if (rc == 0) {
        printf("mode=list target=%s limit=%llu items=%llu pages=%llu bytes=%llu repeat=%u "
               "median_ms=%.1f min_ms=%.1f\n",
               lg_target_name(o), (unsigned long long)o->limit, (unsigned long long)items,
               (unsigned long long)pages, (unsigned long long)bytes, (unsigned)o->repeat,
               bench_lat_pct(&lat, 0.5, 0), bench_lat_pct(&lat, 0, 0));
    }
    bench_lat_dispose(&lat);
    bench_conn_dispose(&c);
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
    struct bench_ndjson stream; /* every byte of the stream, split into lines afterwards */
    struct lg_chunk *chunks;
    size_t nchunks, chunkcap;
    struct bench_lat lat;
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
    bench_lat_push(&w->lat, t - sent);
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
    size_t c = 0, end;
    json_t *root;
    while (bench_ndjson_next(&w->stream, &root, &end)) {
        while (c + 1 < w->nchunks && w->chunks[c].end < end)
            c++;
        if (!root)
            w->stray++;
        else if (w->run->o->target == LG_ETCD)
            lg_watch_etcd_line(w, root, w->chunks[c].t);
        else
            lg_watch_slipway_line(w, root, w->chunks[c].t);
        json_decref(root);
    }
}

static size_t lg_watch_write(char *data, size_t size, size_t nmemb, void *payload)
{
    struct lg_watcher *w = payload;
    int64_t t = bench_now(); /* receive time, taken first */
    size_t n = size * nmemb;
    uint64_t lines = 0;
    if (atomic_load(&w->run->stop))
        return 0;
    for (const char *p = data; (p = memchr(p, '\n', (size_t)(data + n - p))) != NULL; p++)
        lines++;
    if (bench_ndjson_feed(&w->stream, data, n) < 0) {
        w->failed = true;
        return 0;
    }
    if (w->nchunks == w->chunkcap) {
        w->chunkcap = w->chunkcap ? w->chunkcap * 2 : 1024;
        w->chunks = sw_realloc(w->chunks, w->chunkcap * sizeof(*w->chunks));
    }
    w->chunks[w->nchunks++] = (struct lg_chunk){.end = w->stream.buf.len, .t = t};
    atomic_fetch_add(&w->lines, lines);
    atomic_store(&w->run->last_rx, t);
    /* etcd confirms the watch with a first message carrying "created":true */
    if (w->run->o->target == LG_ETCD && !atomic_load(&w->established) &&
        memmem(w->stream.buf.ptr, w->stream.buf.len, "\"created\":true", 14))
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
            bench_complain("watch stream ended: %s (status %ld)",
                           curl_easy_strerror(msg->data.result), w->status);
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
    bench_ndjson_init(&w->stream, LG_LINE_LIMIT);
    atomic_init(&w->lines, 0);
    atomic_init(&w->established, false);
    w->curl = curl_easy_init();
    w->headers = bench_api_headers(o->http.token);
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
    bench_tls(w->curl, o->http.insecure_tls);
    curl_easy_setopt(w->curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(w->curl, CURLOPT_TIMEOUT_MS, (long)(o->duration * 1000) + 30000L);
    if (body)
        curl_easy_setopt(w->curl, CURLOPT_COPYPOSTFIELDS, body);
    return 0;
}

/* The writer: o->writes writes at o->rate per second to distinct objects, one connection;
 * slipway writes are unconditional PUTs, etcd writes plain puts. */
static int lg_watch_writer(struct lg_watch_run *run, struct bench_conn *c, uint64_t *errors)
{
    const struct lg_opts *o = run->o;
    int64_t t0 = bench_now();
    for (uint64_t i = 0; i < o->writes; i++) {
        bench_sleep_until(t0 + (int64_t)((double)i / o->rate * 1e9));
        atomic_store(&run->sent[i], bench_now());
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
    int64_t end = bench_now() + max_ns;
    while (bench_now() < end) {
        bool all = true;
        for (unsigned i = 0; i < run->o->watchers && all; i++)
            all = atomic_load(&ws[i].lines) >= want || ws[i].failed;
        if (all || bench_now() - atomic_load(&run->last_rx) > BENCH_NS_PER_SEC)
            return;
        bench_sleep_ns(5000000);
    }
}

static int lg_watch_prepare(struct lg_watch_run *run, char *url, size_t n, char *body, size_t bn)
{
    const struct lg_opts *o = run->o;
    struct bench_conn c;
    int rc = -1;
    if (o->target == LG_ETCD) {
        char keys[512];
        if (lg_etcd_range_keys(keys, sizeof(keys), LG_ETCD_PREFIX, strlen(LG_ETCD_PREFIX)) < 0)
            return -1;
        snprintf(body, bn, "{\"create_request\":{%s}}", keys);
        return lg_url(url, n, o, "/v3/watch");
    }
    /* slipway: watch from the current resourceVersion, so no initial ADDED flood */
    char lurl[LG_URL_MAX];
    if (bench_conn_init(&c, &o->http) < 0 ||
        lg_url(lurl, sizeof(lurl), o, LG_IS_PATH "?limit=1") < 0)
        goto done;
    if (bench_conn_do(&c, "GET", lurl, NULL, NULL, 0) < 0 || c.status != 200 ||
        lg_json_rv(&c.resp, run->rv, sizeof(run->rv)) < 0) {
        fprintf(stderr, "sw-loadgen: watch: cannot read the list resourceVersion\n");
        goto done;
    }
    body[0] = '\0';
    int len = snprintf(url, n, "%s" LG_IS_PATH "?watch=true&resourceVersion=%s", o->url, run->rv);
    rc = len > 0 && (size_t)len < n ? 0 : -1;
done:
    bench_conn_dispose(&c);
    return rc;
}

static void lg_watch_report(const struct lg_opts *o, struct lg_watcher *ws, int established,
                            uint64_t write_errors)
{
    struct bench_lat all = {0};
    uint64_t events = 0, stray = 0;
    unsigned failed = 0;
    for (unsigned i = 0; i < o->watchers; i++) {
        bench_lat_merge(&all, &ws[i].lat);
        events += ws[i].events;
        stray += ws[i].stray;
        failed += ws[i].failed;
    }
    printf("mode=watch-latency target=%s watchers=%u established=%d writes=%llu "
           "write_errors=%llu events=%llu expected=%llu stray=%llu failed=%u p50_ms=%.3f "
           "p99_ms=%.3f max_ms=%.3f\n",
           lg_target_name(o), (unsigned)o->watchers, established, (unsigned long long)o->writes,
           (unsigned long long)write_errors, (unsigned long long)events,
           (unsigned long long)o->writes * o->watchers, (unsigned long long)stray, failed,
           bench_lat_pct(&all, 0.50, 0), bench_lat_pct(&all, 0.99, 0), bench_lat_pct(&all, 1, 0));
    bench_lat_dispose(&all);
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
        bench_ndjson_dispose(&ws[i].stream);
        sw_free(ws[i].chunks);
        bench_lat_dispose(&ws[i].lat);
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
    struct lg_watcher *ws = sw_calloc(o->watchers, sizeof(*ws));
    struct lg_loop loop = {.ep = -1};
    struct bench_conn wc = {0};
    char url[LG_URL_MAX], body[1024];
    bool joined = false;
    uint64_t write_errors = 0;
    int rc = -1, established = 0;
    run.sent = sw_calloc(o->objects, sizeof(*run.sent));
    atomic_init(&run.established, 0);
    atomic_init(&run.stop, 0);
    atomic_init(&run.last_rx, 0);
    if (o->writes > o->objects || lg_watch_prepare(&run, url, sizeof(url), body, sizeof(body)) < 0)
        goto done;
    if (bench_conn_init(&wc, &o->http) < 0 || lg_loop_init(&loop, &run) < 0)
        goto done;
    for (unsigned i = 0; i < o->watchers; i++) {
        if (lg_watcher_init(&ws[i], &run, url, body[0] ? body : NULL) < 0 ||
            curl_multi_add_handle(loop.multi, ws[i].curl) != CURLM_OK)
            goto done;
    }
    if (pthread_create(&loop.th, NULL, lg_loop_main, &loop) != 0)
        goto done;
    joined = true;
    int64_t until = bench_now() + 10 * BENCH_NS_PER_SEC;
    while (atomic_load(&run.established) < (int)o->watchers && bench_now() < until)
        bench_sleep_ns(2000000);
    established = atomic_load(&run.established);
    bench_sleep_ns(300000000); /* let the streams settle */
    lg_watch_writer(&run, &wc, &write_errors);
    lg_watch_drain(&run, ws, 5 * BENCH_NS_PER_SEC);
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
    bench_conn_dispose(&wc);
    sw_free(run.sent);
    sw_free(ws);
    return rc;
}

/* ---------- start: launch a server and time it to ready ---------- */

static bool lg_ready(const struct lg_opts *o, struct bench_conn *c)
{
    char url[LG_URL_MAX];
    bool etcd = o->target == LG_ETCD;
    if (lg_url(url, sizeof(url), o, etcd ? "/health" : "/readyz") < 0)
        return false;
    if (bench_conn_do(c, "GET", url, NULL, NULL, 0) < 0 || c->status != 200)
        return false;
    return !etcd || strstr(sw_buf_cstr(&c->resp), "\"health\":\"true\"") != NULL;
}

/* Forks o->cmd (its stdout joined to stderr so callers capturing our stdout never wait on
 * the server), prints `pid=N` at once, polls readiness every 2 ms and prints `start_ms=X`
 * (fork to ready); the server keeps running. On timeout the child is killed. */
static int lg_run_start(const struct lg_opts *o)
{
    struct bench_conn c;
    struct bench_conn_opts probe = o->http;
    int rc = -1, status;
    probe.timeout = 1.0;
    if (bench_conn_init(&c, &probe) < 0)
        goto done;
    curl_easy_setopt(c.curl, CURLOPT_CONNECTTIMEOUT_MS, 500L);
    c.quiet = true;
    fflush(stdout);
    int64_t t0 = bench_now();
    pid_t pid = fork();
    if (pid < 0)
        goto done;
    if (pid == 0) {
        dup2(STDERR_FILENO, STDOUT_FILENO);
        signal(SIGPIPE, SIG_DFL); /* the server gets default dispositions, not ours */
        signal(SIGINT, SIG_DFL);
        execvp(o->cmd[0], o->cmd);
        fprintf(stderr, "sw-loadgen: exec %s: %s\n", o->cmd[0], sw_strerror(errno));
        _exit(127);
    }
    printf("pid=%d\n", (int)pid); /* at once: if we are killed, the caller still knows it */
    fflush(stdout);
    int64_t end = t0 + (int64_t)(o->http.timeout * BENCH_NS_PER_SEC);
    while (bench_now() < end) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            fprintf(stderr, "sw-loadgen: start: %s exited before it was ready\n", o->cmd[0]);
            goto done;
        }
        if (lg_ready(o, &c)) {
            printf("start_ms=%.1f\n", (double)(bench_now() - t0) / 1e6);
            rc = 0;
            goto done;
        }
        bench_sleep_ns(2000000);
    }
    fprintf(stderr, "sw-loadgen: start: %s not ready after %.0f s\n", o->cmd[0], o->http.timeout);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
done:
    bench_conn_dispose(&c);
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

static int lg_opt_numeric(const char *flag, const char *v, struct lg_opts *o)
{
    const struct bench_numopt flags[] = {
        {"--inflight", &o->inflight, NULL}, {"--count", &o->count, NULL},
        {"--start", &o->start, NULL},       {"--objects", &o->objects, NULL},
        {"--limit", &o->limit, NULL},       {"--repeat", &o->repeat, NULL},
        {"--watchers", &o->watchers, NULL}, {"--writes", &o->writes, NULL},
        {"--n", &o->nports, NULL},          {"--duration", NULL, &o->duration},
        {"--rate", NULL, &o->rate},         {"--timeout", NULL, &o->http.timeout},
    };
    return bench_numopt_set(flags, sizeof(flags) / sizeof(flags[0]), 1ULL << 40, flag, v);
}

static int lg_parse_args(int argc, char **argv, struct lg_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->inflight = o->repeat = o->nports = 1;
    o->objects = 1000;
    o->watchers = o->rate = 100;
    o->writes = 500;
    o->duration = o->http.timeout = 10;
    o->http.limit = LG_RESP_LIMIT;
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
            o->http.insecure_tls = true;
            continue;
        }
        if (bench_opt_value(argc, argv, &i, &v) < 0)
            return -1;
        if (strcmp(argv[i - 1], "--target") == 0) {
            if (strcmp(v, "etcd") != 0 && strcmp(v, "slipway") != 0)
                return -1;
            o->target = strcmp(v, "etcd") == 0 ? LG_ETCD : LG_SLIPWAY;
        } else if (strcmp(argv[i - 1], "--url") == 0) {
            o->url = v;
        } else if (strcmp(argv[i - 1], "--token") == 0) {
            o->http.token = v;
        } else if (lg_opt_numeric(argv[i - 1], v, o) != 0) {
            fprintf(stderr, "sw-loadgen: bad option %s %s\n", argv[i - 1], v);
            return -1;
        }
    }
    if (o->inflight < 1 || o->inflight > LG_MAX_WORKERS || o->watchers > LG_MAX_WATCHERS ||
        o->objects < 1 || o->repeat < 1 || o->rate <= 0 || o->http.timeout <= 0)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    struct lg_opts o;
    int rc = -1;
    bench_set_prog("sw-loadgen");
    if (lg_parse_args(argc, argv, &o) < 0) {
        lg_usage();
        return 2;
    }
    o.gen_base = (uint64_t)sw_time_now_micro();
    signal(SIGPIPE, SIG_IGN);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return 1;
    if (strcmp(o.mode, "create") == 0)
        rc = lg_run_pool(&o, lg_create_job, NULL);
    else if (strcmp(o.mode, "update") == 0)
        rc = lg_run_pool(&o, lg_update_job, lg_update_setup);
    else if (strcmp(o.mode, "get") == 0)
        rc = lg_run_pool(&o, lg_get_job, NULL);
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
