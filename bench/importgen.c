/* sw-importgen: the client behind bench/import.sh (image import throughput and push-to-status
 * latency). Modes: `head` is the protocol floor (HEAD, or HEAD + GET manifest + GET config, of
 * every tag straight at the registry), `isi` imports every tag through slipway's
 * imagestreamimports, `controller` creates ImageStreams with DockerImage spec tags and times
 * the embedded controller until every tag has status, `latency` pushes new manifests to
 * scheduled tags and times each until a watch shows the new digest. Each worker thread owns one
 * keep-alive libcurl handle. Every mode prints one `key=value ...` line on stdout; diagnostics
 * go to stderr. Standalone (libcurl, jansson, libcrypto, pthreads). See bench/README.md. */
#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define IG_NS_PER_SEC 1000000000LL
#define IG_MAX_WORKERS 256
#define IG_URL_MAX 1024
#define IG_RESP_LIMIT ((size_t)256 << 20)
#define IG_MANIFEST_MAX ((size_t)4 << 20)
#define IG_IS_PATH "/apis/image.openshift.io/v1/namespaces/%s/imagestreams"
#define IG_ISI_PATH "/apis/image.openshift.io/v1/namespaces/%s/imagestreamimports"
#define IG_ACCEPT                                                                                  \
    "Accept: application/vnd.oci.image.manifest.v1+json, "                                         \
    "application/vnd.oci.image.index.v1+json, "                                                    \
    "application/vnd.docker.distribution.manifest.v2+json, "                                       \
    "application/vnd.docker.distribution.manifest.list.v2+json"
#define IG_LAT_TAG "latest"

struct ig_opts {
    const char *mode;          /* head|isi|controller|latency */
    const char *url;           /* slipway base URL */
    const char *token;         /* bearer token or NULL */
    bool insecure_tls;         /* https without verifying the certificate */
    const char *registry;      /* HOST:PORT of the registry (plain HTTP) */
    const char *ns;            /* namespace of the streams */
    const char *repo_prefix;   /* repository of tag set i: <repo_prefix><i %03d> */
    const char *stream_prefix; /* stream of repository i: <stream_prefix><i %03d> */
    uint64_t repos;            /* repositories (lanes for latency) */
    uint64_t tags;             /* tags t1..tN per repository */
    uint64_t inflight;         /* worker threads, one connection each */
    bool per_tag;              /* isi: one ImageStreamImport per tag (stream <s>NNN-tK) */
    bool get;                  /* head: also GET the manifest and its config blob */
    double timeout;            /* per request, seconds */
    double deadline;           /* whole measured phase, seconds */
    const char *pushes;        /* latency: directory of <lane>-<sample>.json manifests */
    uint64_t samples;          /* latency: pushes per lane */
    double gap_max;            /* latency: random pause before each push, seconds */
    double wait;               /* latency: give up on one sample after this, seconds */
};

/* ---------- small helpers ---------- */

static void *ig_grow(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fputs("sw-importgen: out of memory\n", stderr);
        abort();
    }
    return q;
}

static void *ig_alloc(size_t n)
{
    return memset(ig_grow(NULL, n), 0, n);
}

static bool ig_append(char **buf, size_t *len, size_t *cap, const char *data, size_t n,
                      size_t limit)
{
    if (*len + n + 1 > limit)
        return false;
    while (*len + n + 1 > *cap) {
        *cap = *cap ? *cap * 2 : 16384;
        *buf = ig_grow(*buf, *cap);
    }
    memcpy(*buf + *len, data, n);
    *len += n;
    (*buf)[*len] = '\0';
    return true;
}

static int64_t ig_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * IG_NS_PER_SEC + ts.tv_nsec;
}

static void ig_sleep_ns(int64_t d)
{
    if (d <= 0)
        return;
    struct timespec ts = {.tv_sec = d / IG_NS_PER_SEC, .tv_nsec = d % IG_NS_PER_SEC};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static struct timespec ig_abstime(int64_t mono_deadline)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t t = (int64_t)ts.tv_sec * IG_NS_PER_SEC + ts.tv_nsec + (mono_deadline - ig_now());
    ts.tv_sec = t / IG_NS_PER_SEC;
    ts.tv_nsec = t % IG_NS_PER_SEC;
    return ts;
}

static void ig_cond_init(pthread_cond_t *c)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(c, &a);
    pthread_condattr_destroy(&a);
}

static int ig_parse_u64(const char *s, uint64_t max, uint64_t *out)
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

static int ig_parse_double(const char *s, double *out)
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

/* stderr diagnostics, the first 10 per process only. */
__attribute__((format(printf, 1, 2))) static void ig_complain(const char *fmt, ...)
{
    static atomic_int count;
    va_list ap;
    int n = atomic_fetch_add(&count, 1);
    if (n > 10)
        return;
    if (n == 10) {
        fputs("sw-importgen: further errors not shown\n", stderr);
        return;
    }
    va_start(ap, fmt);
    fputs("sw-importgen: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* xorshift64*, one state per thread */
static uint64_t ig_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

/* ---------- latencies ---------- */

struct ig_lat {
    int64_t *ns;
    size_t n, cap;
};

static void ig_lat_push(struct ig_lat *l, int64_t ns)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 256;
        l->ns = ig_grow(l->ns, l->cap * sizeof(*l->ns));
    }
    l->ns[l->n++] = ns;
}

static int ig_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile in ms (sorts l); -1 when empty. */
static double ig_lat_pct(struct ig_lat *l, double q)
{
    if (l->n == 0)
        return -1;
    qsort(l->ns, l->n, sizeof(*l->ns), ig_cmp_i64);
    size_t rank = (size_t)(q * (double)l->n + 0.999999);
    if (rank < 1)
        rank = 1;
    if (rank > l->n)
        rank = l->n;
    return (double)l->ns[rank - 1] / 1e6;
}

static double ig_lat_mean(const struct ig_lat *l)
{
    double sum = 0;
    for (size_t i = 0; i < l->n; i++)
        sum += (double)l->ns[i];
    return l->n ? sum / (double)l->n / 1e6 : -1;
}

/* ---------- one keep-alive connection ---------- */

struct ig_conn {
    CURL *curl;
    struct curl_slist *api_headers; /* JSON + bearer token, for slipway */
    struct curl_slist *reg_headers; /* the manifest Accept list, for the registry */
    char *resp;
    size_t len, cap;
    long status;
    char digest[128]; /* Docker-Content-Digest of the last response */
};

static size_t ig_conn_write(char *data, size_t size, size_t nmemb, void *payload)
{
    struct ig_conn *c = payload;
    size_t n = size * nmemb;
    return ig_append(&c->resp, &c->len, &c->cap, data, n, IG_RESP_LIMIT) ? n : 0;
}

static size_t ig_conn_header(char *data, size_t size, size_t nmemb, void *payload)
{
    struct ig_conn *c = payload;
    size_t n = size * nmemb;
    static const char name[] = "docker-content-digest:";
    if (n > sizeof(name) && strncasecmp(data, name, sizeof(name) - 1) == 0) {
        const char *v = data + sizeof(name) - 1;
        size_t vl = n - (sizeof(name) - 1);
        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
            vl--;
        if (vl < sizeof(c->digest)) {
            memcpy(c->digest, v, vl);
            c->digest[vl] = '\0';
        }
    }
    return n;
}

static int ig_conn_init(struct ig_conn *c, const struct ig_opts *o)
{
    char auth[2048];
    memset(c, 0, sizeof(*c));
    c->curl = curl_easy_init();
    if (!c->curl)
        return -1;
    c->api_headers = curl_slist_append(NULL, "Content-Type: application/json");
    c->api_headers = curl_slist_append(c->api_headers, "Accept: application/json");
    c->api_headers = curl_slist_append(c->api_headers, "Expect:");
    if (o->token && *o->token) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", o->token);
        c->api_headers = curl_slist_append(c->api_headers, auth);
    }
    c->reg_headers = curl_slist_append(NULL, IG_ACCEPT);
    c->reg_headers = curl_slist_append(c->reg_headers, "Expect:");
    curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->curl, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(c->curl, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, ig_conn_write);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, ig_conn_header);
    curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, c);
    curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, (long)(o->timeout * 1000));
    if (o->insecure_tls) {
        curl_easy_setopt(c->curl, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c->curl, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    return c->api_headers && c->reg_headers ? 0 : -1;
}

static void ig_conn_dispose(struct ig_conn *c)
{
    if (c->curl)
        curl_easy_cleanup(c->curl);
    curl_slist_free_all(c->api_headers);
    curl_slist_free_all(c->reg_headers);
    free(c->resp);
    memset(c, 0, sizeof(*c));
}

/* One request on the keep-alive connection: method HEAD, GET, POST or PUT; headers is the list
 * to send. Returns 0 when a response arrived (status in c->status), -1 otherwise. */
static int ig_conn_do(struct ig_conn *c, const char *method, const char *url,
                      struct curl_slist *headers, const char *body, size_t len)
{
    c->len = 0;
    c->status = 0;
    c->digest[0] = '\0';
    if (c->resp)
        c->resp[0] = '\0';
    curl_easy_setopt(c->curl, CURLOPT_URL, url);
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c->curl, CURLOPT_NOBODY, strcmp(method, "HEAD") == 0 ? 1L : 0L);
    if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, NULL);
        if (strcmp(method, "GET") == 0)
            curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE, (long)(body ? len : 0));
        curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, strcmp(method, "PUT") == 0 ? "PUT" : NULL);
    }
    CURLcode rc = curl_easy_perform(c->curl);
    if (rc != CURLE_OK) {
        ig_complain("%s %s: %s", method, url, curl_easy_strerror(rc));
        return -1;
    }
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &c->status);
    return 0;
}

static int ig_unexpected(const struct ig_conn *c, const char *what)
{
    ig_complain("%s: HTTP %ld: %.200s", what, c->status, c->resp ? c->resp : "");
    return -1;
}

/* Parses the response body as JSON; NULL (with a complaint) if it is not. */
static json_t *ig_conn_json(const struct ig_conn *c, const char *what)
{
    json_error_t err;
    json_t *root = json_loadb(c->resp ? c->resp : "", c->len, 0, &err);
    if (!root)
        ig_complain("%s: the answer is not JSON: %s", what, err.text);
    return root;
}

/* ---------- naming ---------- */

static void ig_repo(char *out, size_t n, const struct ig_opts *o, uint64_t repo)
{
    snprintf(out, n, "%s%03llu", o->repo_prefix, (unsigned long long)repo);
}

static void ig_stream(char *out, size_t n, const struct ig_opts *o, uint64_t repo)
{
    snprintf(out, n, "%s%03llu", o->stream_prefix, (unsigned long long)repo);
}

/* The stream index of name (<stream_prefix>NNN or <stream_prefix>NNN-tK), or -1. */
static int64_t ig_stream_index(const struct ig_opts *o, const char *name)
{
    size_t pl = strlen(o->stream_prefix);
    char digits[24];
    uint64_t v;
    if (!name || strncmp(name, o->stream_prefix, pl) != 0)
        return -1;
    size_t dl = strcspn(name + pl, "-");
    if (dl == 0 || dl >= sizeof(digits))
        return -1;
    memcpy(digits, name + pl, dl);
    digits[dl] = '\0';
    if (ig_parse_u64(digits, UINT64_MAX, &v) < 0 || v >= INT64_MAX)
        return -1;
    return (int64_t)v;
}

static void ig_api_url(char *out, size_t n, const struct ig_opts *o, const char *fmt)
{
    char path[512];
    snprintf(path, sizeof(path), fmt, o->ns);
    snprintf(out, n, "%s%s", o->url, path);
}

/* ---------- worker pool ---------- */

struct ig_pool;
typedef int (*ig_job_fn)(struct ig_pool *p, struct ig_conn *c, uint64_t job, uint64_t *ok,
                         uint64_t *bad);

struct ig_pool {
    const struct ig_opts *o;
    ig_job_fn fn;
    uint64_t jobs;
    atomic_uint_fast64_t next;
    int64_t deadline;
};

struct ig_worker {
    struct ig_pool *pool;
    struct ig_lat lat;
    uint64_t ok, bad, errors, done;
};

static void *ig_worker_main(void *arg)
{
    struct ig_worker *w = arg;
    struct ig_pool *p = w->pool;
    struct ig_conn c;
    if (ig_conn_init(&c, p->o) < 0) {
        w->errors++;
        ig_conn_dispose(&c);
        return NULL;
    }
    for (;;) {
        uint64_t job = atomic_fetch_add(&p->next, 1);
        if (job >= p->jobs || ig_now() > p->deadline)
            break;
        int64_t t0 = ig_now();
        if (p->fn(p, &c, job, &w->ok, &w->bad) < 0)
            w->errors++;
        ig_lat_push(&w->lat, ig_now() - t0);
        w->done++;
    }
    ig_conn_dispose(&c);
    return NULL;
}

struct ig_pool_result {
    uint64_t done, ok, bad, errors;
    double secs, p50, p99;
};

/* Runs fn over jobs 0..jobs-1 on o->inflight threads; timed from before the first job to after
 * the last. */
static void ig_pool_run(const struct ig_opts *o, ig_job_fn fn, uint64_t jobs,
                        struct ig_pool_result *r)
{
    struct ig_pool p = {.o = o, .fn = fn, .jobs = jobs};
    uint64_t n = o->inflight < jobs ? o->inflight : jobs;
    struct ig_worker *ws = ig_alloc(n * sizeof(*ws));
    pthread_t *th = ig_alloc(n * sizeof(*th));
    struct ig_lat all = {0};
    memset(r, 0, sizeof(*r));
    atomic_init(&p.next, 0);
    int64_t t0 = ig_now();
    p.deadline = t0 + (int64_t)(o->deadline * IG_NS_PER_SEC);
    uint64_t started = 0;
    for (; started < n; started++) {
        ws[started].pool = &p;
        if (pthread_create(&th[started], NULL, ig_worker_main, &ws[started]) != 0)
            break;
    }
    for (uint64_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    r->secs = (double)(ig_now() - t0) / 1e9;
    for (uint64_t i = 0; i < started; i++) {
        r->done += ws[i].done;
        r->ok += ws[i].ok;
        r->bad += ws[i].bad;
        r->errors += ws[i].errors;
        for (size_t j = 0; j < ws[i].lat.n; j++)
            ig_lat_push(&all, ws[i].lat.ns[j]);
        free(ws[i].lat.ns);
    }
    if (started < n)
        r->errors += n - started;
    r->p50 = ig_lat_pct(&all, 0.50);
    r->p99 = ig_lat_pct(&all, 0.99);
    free(all.ns);
    free(ws);
    free(th);
}

/* ---------- head: the protocol floor ---------- */

/* GET of the manifest just fetched's config blob. */
static int ig_get_config(struct ig_conn *c, const struct ig_opts *o, const char *repo)
{
    char url[IG_URL_MAX];
    json_t *m = ig_conn_json(c, "manifest");
    const char *cfg = json_string_value(json_object_get(json_object_get(m, "config"), "digest"));
    if (!cfg) {
        ig_complain("%s: the manifest names no config blob", repo);
        json_decref(m);
        return -1;
    }
    snprintf(url, sizeof(url), "http://%s/v2/%s/blobs/%s", o->registry, repo, cfg);
    json_decref(m);
    if (ig_conn_do(c, "GET", url, c->reg_headers, NULL, 0) < 0)
        return -1;
    return c->status == 200 ? 0 : ig_unexpected(c, "GET config blob");
}

static int ig_head_job(struct ig_pool *p, struct ig_conn *c, uint64_t job, uint64_t *ok,
                       uint64_t *bad)
{
    const struct ig_opts *o = p->o;
    char repo[256], url[IG_URL_MAX];
    ig_repo(repo, sizeof(repo), o, job / o->tags);
    snprintf(url, sizeof(url), "http://%s/v2/%s/manifests/t%llu", o->registry, repo,
             (unsigned long long)(job % o->tags + 1));
    if (ig_conn_do(c, "HEAD", url, c->reg_headers, NULL, 0) < 0)
        return -1;
    if (c->status != 200 || !c->digest[0]) {
        (*bad)++;
        return ig_unexpected(c, url);
    }
    if (o->get) {
        if (ig_conn_do(c, "GET", url, c->reg_headers, NULL, 0) < 0)
            return -1;
        if (c->status != 200 || ig_get_config(c, o, repo) < 0) {
            (*bad)++;
            return c->status == 200 ? -1 : ig_unexpected(c, url);
        }
    }
    (*ok)++;
    return 0;
}

static int ig_run_head(const struct ig_opts *o)
{
    struct ig_pool_result r;
    ig_pool_run(o, ig_head_job, o->repos * o->tags, &r);
    printf("tags=%llu ok=%llu errors=%llu secs=%.3f rate=%.1f p50_ms=%.2f p99_ms=%.2f\n",
           (unsigned long long)r.done, (unsigned long long)r.ok,
           (unsigned long long)(r.errors + r.bad), r.secs, r.secs > 0 ? (double)r.ok / r.secs : 0,
           r.p50, r.p99);
    return r.ok == o->repos * o->tags ? 0 : 1;
}

/* ---------- isi: ImageStreamImport POSTs ---------- */

static json_t *ig_isi_image(const struct ig_opts *o, uint64_t repo, uint64_t tag)
{
    char name[IG_URL_MAX], repo_name[256], to[32];
    ig_repo(repo_name, sizeof(repo_name), o, repo);
    snprintf(name, sizeof(name), "%s/%s:t%llu", o->registry, repo_name, (unsigned long long)tag);
    snprintf(to, sizeof(to), "t%llu", (unsigned long long)tag);
    return json_pack("{s:{s:s, s:s}, s:{s:s}}", "from", "kind", "DockerImage", "name", name, "to",
                     "name", to);
}

/* The ImageStreamImport body of job: one repository's tags, or one tag. */
static char *ig_isi_body(const struct ig_opts *o, uint64_t job)
{
    char stream[128];
    json_t *images = json_array();
    uint64_t repo = o->per_tag ? job / o->tags : job;
    ig_stream(stream, sizeof(stream), o, repo);
    if (o->per_tag) {
        size_t l = strlen(stream);
        snprintf(stream + l, sizeof(stream) - l, "-t%llu",
                 (unsigned long long)(job % o->tags + 1));
        json_array_append_new(images, ig_isi_image(o, repo, job % o->tags + 1));
    } else {
        for (uint64_t t = 1; t <= o->tags; t++)
            json_array_append_new(images, ig_isi_image(o, repo, t));
    }
    json_t *isi = json_pack("{s:s, s:s, s:{s:s}, s:{s:b, s:o}}", "apiVersion",
                            "image.openshift.io/v1", "kind", "ImageStreamImport", "metadata",
                            "name", stream, "spec", "import", 1, "images", images);
    char *body = json_dumps(isi, JSON_COMPACT);
    json_decref(isi);
    return body;
}

static int ig_isi_job(struct ig_pool *p, struct ig_conn *c, uint64_t job, uint64_t *ok,
                      uint64_t *bad)
{
    const struct ig_opts *o = p->o;
    char url[IG_URL_MAX];
    char *body = ig_isi_body(o, job);
    ig_api_url(url, sizeof(url), o, IG_ISI_PATH);
    int rc = body ? ig_conn_do(c, "POST", url, c->api_headers, body, strlen(body)) : -1;
    free(body);
    if (rc < 0)
        return -1;
    if (c->status != 201 && c->status != 200)
        return ig_unexpected(c, "POST imagestreamimports");
    json_t *root = ig_conn_json(c, "imagestreamimport");
    json_t *items = json_object_get(json_object_get(root, "status"), "images"), *it;
    size_t i;
    json_array_foreach(items, i, it) {
        json_t *st = json_object_get(it, "status");
        if (strcmp(json_string_value(json_object_get(st, "status")) ?: "", "Success") == 0) {
            (*ok)++;
        } else {
            (*bad)++;
            ig_complain("import of tag %s failed: %s",
                        json_string_value(json_object_get(it, "tag")) ?: "?",
                        json_string_value(json_object_get(st, "message")) ?: "(no message)");
        }
    }
    json_decref(root);
    return 0;
}

/* After a pass: tags with a tag event in the stored streams, and the events in all. */
static int ig_count_written(const struct ig_opts *o, uint64_t *tags, uint64_t *events)
{
    struct ig_conn c;
    char url[IG_URL_MAX];
    json_t *root = NULL, *s;
    size_t i;
    int rc = -1;
    *tags = *events = 0;
    if (ig_conn_init(&c, o) < 0)
        goto done;
    ig_api_url(url, sizeof(url), o, IG_IS_PATH);
    if (ig_conn_do(&c, "GET", url, c.api_headers, NULL, 0) < 0 || c.status != 200)
        goto done;
    root = ig_conn_json(&c, "imagestream list");
    json_array_foreach(json_object_get(root, "items"), i, s) {
        json_t *t;
        size_t j;
        json_array_foreach(json_object_get(json_object_get(s, "status"), "tags"), j, t) {
            size_t n = json_array_size(json_object_get(t, "items"));
            *tags += n > 0;
            *events += n;
        }
    }
    rc = root ? 0 : -1;
done:
    json_decref(root);
    ig_conn_dispose(&c);
    return rc;
}

static int ig_run_isi(const struct ig_opts *o)
{
    struct ig_pool_result r;
    uint64_t written = 0, events = 0, want = o->repos * o->tags;
    ig_pool_run(o, ig_isi_job, o->per_tag ? want : o->repos, &r);
    if (ig_count_written(o, &written, &events) < 0)
        ig_complain("could not list the streams to check the tag events");
    printf("requests=%llu tags=%llu ok=%llu failed=%llu errors=%llu secs=%.3f rate=%.1f "
           "p50_ms=%.2f p99_ms=%.2f written=%llu events=%llu\n",
           (unsigned long long)r.done, (unsigned long long)(r.ok + r.bad),
           (unsigned long long)r.ok, (unsigned long long)r.bad, (unsigned long long)r.errors,
           r.secs, r.secs > 0 ? (double)r.ok / r.secs : 0, r.p50, r.p99,
           (unsigned long long)written, (unsigned long long)events);
    return r.ok == want && written == want ? 0 : 1;
}

/* ---------- watch: one stream of events, handled line by line ---------- */

typedef void (*ig_event_fn)(json_t *object, int64_t t, void *payload);

struct ig_watch {
    const struct ig_opts *o;
    char url[IG_URL_MAX];
    ig_event_fn fn;
    void *payload;
    pthread_t thread;
    atomic_bool stop;
    atomic_bool established; /* HTTP 200 headers arrived */
    atomic_bool ended;
    char *buf;
    size_t len, cap;
};

static void ig_watch_line(struct ig_watch *w, const char *line, size_t n, int64_t t)
{
    json_error_t err;
    json_t *ev = json_loadb(line, n, 0, &err);
    const char *type = json_string_value(json_object_get(ev, "type"));
    if (!ev) {
        ig_complain("watch: a line is not JSON: %s", err.text);
        return;
    }
    if (type && (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0))
        w->fn(json_object_get(ev, "object"), t, w->payload);
    json_decref(ev);
}

static size_t ig_watch_write(char *data, size_t size, size_t nmemb, void *payload)
{
    struct ig_watch *w = payload;
    size_t n = size * nmemb, start = 0;
    int64_t t = ig_now();
    if (!ig_append(&w->buf, &w->len, &w->cap, data, n, IG_RESP_LIMIT))
        return 0;
    for (size_t i = 0; i < w->len; i++) {
        if (w->buf[i] != '\n')
            continue;
        if (i > start)
            ig_watch_line(w, w->buf + start, i - start, t);
        start = i + 1;
    }
    memmove(w->buf, w->buf + start, w->len - start + 1);
    w->len -= start;
    return atomic_load(&w->stop) ? 0 : n;
}

static size_t ig_watch_header(char *data, size_t size, size_t nmemb, void *payload)
{
    struct ig_watch *w = payload;
    if (size * nmemb > 12 && strncmp(data, "HTTP/", 5) == 0 && strstr(data, " 200"))
        atomic_store(&w->established, true);
    return size * nmemb;
}

static int ig_watch_progress(void *payload, curl_off_t a, curl_off_t b, curl_off_t c,
                             curl_off_t d)
{
    struct ig_watch *w = payload;
    return atomic_load(&w->stop) ? 1 : 0;
}

static void *ig_watch_main(void *arg)
{
    struct ig_watch *w = arg;
    struct ig_conn c;
    if (ig_conn_init(&c, w->o) == 0) {
        curl_easy_setopt(c.curl, CURLOPT_URL, w->url);
        curl_easy_setopt(c.curl, CURLOPT_HTTPHEADER, c.api_headers);
        curl_easy_setopt(c.curl, CURLOPT_TIMEOUT_MS, 0L);
        curl_easy_setopt(c.curl, CURLOPT_WRITEFUNCTION, ig_watch_write);
        curl_easy_setopt(c.curl, CURLOPT_WRITEDATA, w);
        curl_easy_setopt(c.curl, CURLOPT_HEADERFUNCTION, ig_watch_header);
        curl_easy_setopt(c.curl, CURLOPT_HEADERDATA, w);
        curl_easy_setopt(c.curl, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c.curl, CURLOPT_XFERINFOFUNCTION, ig_watch_progress);
        curl_easy_setopt(c.curl, CURLOPT_XFERINFODATA, w);
        CURLcode rc = curl_easy_perform(c.curl);
        if (!atomic_load(&w->stop))
            ig_complain("watch ended early: %s", curl_easy_strerror(rc));
    }
    ig_conn_dispose(&c);
    atomic_store(&w->ended, true);
    return NULL;
}

/* Lists the streams for the current resourceVersion, then watches from it. */
static int ig_watch_start(struct ig_watch *w, const struct ig_opts *o, ig_event_fn fn,
                          void *payload)
{
    struct ig_conn c;
    char url[IG_URL_MAX];
    const char *rv = NULL;
    json_t *root = NULL;
    int rc = -1;
    memset(w, 0, sizeof(*w));
    w->o = o;
    w->fn = fn;
    w->payload = payload;
    if (ig_conn_init(&c, o) < 0)
        goto done;
    ig_api_url(url, sizeof(url), o, IG_IS_PATH);
    if (ig_conn_do(&c, "GET", url, c.api_headers, NULL, 0) < 0 || c.status != 200)
        goto done;
    root = ig_conn_json(&c, "imagestream list");
    rv = json_string_value(json_object_get(json_object_get(root, "metadata"), "resourceVersion"));
    if (!rv)
        goto done;
    int len = snprintf(w->url, sizeof(w->url), "%s?watch=true&resourceVersion=%s&timeoutSeconds=1800",
                       url, rv);
    if (len < 0 || (size_t)len >= sizeof(w->url) ||
        pthread_create(&w->thread, NULL, ig_watch_main, w) != 0)
        goto done;
    for (int i = 0; i < 5000 && !atomic_load(&w->established) && !atomic_load(&w->ended); i++)
        ig_sleep_ns(IG_NS_PER_SEC / 1000);
    rc = 0;
done:
    if (rc < 0)
        ig_complain("could not start the watch on %s", url);
    json_decref(root);
    ig_conn_dispose(&c);
    return rc;
}

static void ig_watch_stop(struct ig_watch *w)
{
    atomic_store(&w->stop, true);
    pthread_join(w->thread, NULL);
    free(w->buf);
}

/* ---------- controller: streams with spec tags, until every tag has status ---------- */

struct ig_ctl {
    const struct ig_opts *o;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    uint8_t *imported; /* per stream: tags with a tag event */
    uint8_t *failed;   /* per stream: tags with only a failed ImportSuccess condition */
    uint64_t total_imported, total_failed;
    int64_t t_done; /* when every tag had status, 0 until then */
};

/* Tags of a status with items, and tags with only conditions. */
static void ig_status_counts(const json_t *obj, uint8_t *imported, uint8_t *failed)
{
    json_t *t;
    size_t i;
    *imported = *failed = 0;
    json_array_foreach(json_object_get(json_object_get(obj, "status"), "tags"), i, t) {
        if (json_array_size(json_object_get(t, "items")))
            (*imported)++;
        else if (json_array_size(json_object_get(t, "conditions")))
            (*failed)++;
    }
}

static void ig_ctl_event(json_t *obj, int64_t t, void *payload)
{
    struct ig_ctl *x = payload;
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    int64_t idx = ig_stream_index(x->o, name);
    uint8_t imp, fail;
    if (idx < 0 || (uint64_t)idx >= x->o->repos)
        return;
    ig_status_counts(obj, &imp, &fail);
    pthread_mutex_lock(&x->mu);
    x->total_imported += (uint64_t)imp - x->imported[idx];
    x->total_failed += (uint64_t)fail - x->failed[idx];
    x->imported[idx] = imp;
    x->failed[idx] = fail;
    if (!x->t_done && x->total_imported + x->total_failed >= x->o->repos * x->o->tags) {
        x->t_done = t;
        pthread_cond_broadcast(&x->cond);
    }
    pthread_mutex_unlock(&x->mu);
}

static char *ig_stream_body(const struct ig_opts *o, uint64_t repo)
{
    char stream[128];
    json_t *tags = json_array();
    ig_stream(stream, sizeof(stream), o, repo);
    for (uint64_t t = 1; t <= o->tags; t++) {
        json_t *img = ig_isi_image(o, repo, t); /* {from, to:{name}} */
        json_t *tag = json_pack("{s:O, s:O}", "name",
                                json_object_get(json_object_get(img, "to"), "name"), "from",
                                json_object_get(img, "from"));
        json_array_append_new(tags, tag);
        json_decref(img);
    }
    json_t *is = json_pack("{s:s, s:s, s:{s:s}, s:{s:o}}", "apiVersion", "image.openshift.io/v1",
                           "kind", "ImageStream", "metadata", "name", stream, "spec", "tags", tags);
    char *body = json_dumps(is, JSON_COMPACT);
    json_decref(is);
    return body;
}

static int ig_create_job(struct ig_pool *p, struct ig_conn *c, uint64_t job, uint64_t *ok,
                         uint64_t *bad)
{
    char url[IG_URL_MAX];
    char *body = ig_stream_body(p->o, job);
    ig_api_url(url, sizeof(url), p->o, IG_IS_PATH);
    int rc = body ? ig_conn_do(c, "POST", url, c->api_headers, body, strlen(body)) : -1;
    free(body);
    if (rc < 0)
        return -1;
    if (c->status != 201) {
        (*bad)++;
        return ig_unexpected(c, "POST imagestreams");
    }
    (*ok)++;
    return 0;
}

static int ig_run_controller(const struct ig_opts *o)
{
    struct ig_ctl x = {.o = o};
    struct ig_watch w;
    struct ig_pool_result r;
    uint64_t want = o->repos * o->tags;
    pthread_mutex_init(&x.mu, NULL);
    ig_cond_init(&x.cond);
    x.imported = ig_alloc(o->repos);
    x.failed = ig_alloc(o->repos);
    if (ig_watch_start(&w, o, ig_ctl_event, &x) < 0)
        return 1;
    int64_t t0 = ig_now(), deadline = t0 + (int64_t)(o->deadline * IG_NS_PER_SEC);
    ig_pool_run(o, ig_create_job, o->repos, &r);
    pthread_mutex_lock(&x.mu);
    struct timespec until = ig_abstime(deadline);
    while (!x.t_done && !atomic_load(&w.ended) && ig_now() < deadline)
        pthread_cond_timedwait(&x.cond, &x.mu, &until);
    int64_t end = x.t_done ? x.t_done : ig_now();
    uint64_t imported = x.total_imported, failed = x.total_failed;
    pthread_mutex_unlock(&x.mu);
    ig_watch_stop(&w);
    double secs = (double)(end - t0) / 1e9;
    printf("streams=%llu tags=%llu imported=%llu failed=%llu create_secs=%.3f secs=%.3f "
           "rate=%.1f complete=%d\n",
           (unsigned long long)r.ok, (unsigned long long)want, (unsigned long long)imported,
           (unsigned long long)failed, r.secs, secs, secs > 0 ? (double)imported / secs : 0,
           x.t_done != 0);
    free(x.imported);
    free(x.failed);
    return imported == want ? 0 : 1;
}

/* ---------- latency: push a new digest, wait until the stream's status shows it ---------- */

struct ig_lane {
    uint64_t index;
    char repo[256], stream[128];
    char awaited[128]; /* digest being waited for ("" while none) */
    char current[128]; /* what status.tags[latest].items[0].image said last */
    int64_t t_seen;    /* when the watch showed awaited, 0 until then */
    char **manifests;  /* samples' bytes, loaded before timing */
    size_t *sizes;
    char (*digests)[80];
    struct ig_lat lat;
    uint64_t missed, errors;
    uint64_t seed;
};

struct ig_latrun {
    const struct ig_opts *o;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    struct ig_lane *lanes;
};

static const char *ig_latest_image(const json_t *obj)
{
    json_t *t;
    size_t i;
    json_array_foreach(json_object_get(json_object_get(obj, "status"), "tags"), i, t) {
        if (strcmp(json_string_value(json_object_get(t, "tag")) ?: "", IG_LAT_TAG) == 0)
            return json_string_value(
                json_object_get(json_array_get(json_object_get(t, "items"), 0), "image"));
    }
    return NULL;
}

static void ig_lat_event(json_t *obj, int64_t t, void *payload)
{
    struct ig_latrun *run = payload;
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    int64_t idx = ig_stream_index(run->o, name);
    const char *image = ig_latest_image(obj);
    if (idx < 0 || (uint64_t)idx >= run->o->repos || !image)
        return;
    struct ig_lane *l = &run->lanes[idx];
    pthread_mutex_lock(&run->mu);
    snprintf(l->current, sizeof(l->current), "%s", image);
    if (l->awaited[0] && !l->t_seen && strcmp(image, l->awaited) == 0)
        l->t_seen = t;
    pthread_cond_broadcast(&run->cond);
    pthread_mutex_unlock(&run->mu);
}

static int ig_read_file(const char *path, char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0, r;
    char chunk[8192];
    if (!f) {
        ig_complain("cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    while ((r = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (!ig_append(&buf, &n, &cap, chunk, r, IG_MANIFEST_MAX)) {
            ig_complain("%s is larger than %zu bytes", path, IG_MANIFEST_MAX);
            fclose(f);
            free(buf);
            return -1;
        }
    }
    fclose(f);
    *out = buf ? buf : ig_alloc(1);
    *len = n;
    return 0;
}

static void ig_sha256_digest(const char *data, size_t len, char out[80])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    int o = snprintf(out, 80, "sha256:");
    EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL);
    for (unsigned int i = 0; i < mdlen && o + 3 <= 80; i++)
        o += snprintf(out + o, 80 - (size_t)o, "%02x", md[i]);
}

/* Loads <pushes>/<lane>-<sample>.json for every sample of l. */
static int ig_lane_load(const struct ig_opts *o, struct ig_lane *l)
{
    char path[IG_URL_MAX];
    l->manifests = ig_alloc(o->samples * sizeof(*l->manifests));
    l->sizes = ig_alloc(o->samples * sizeof(*l->sizes));
    l->digests = ig_alloc(o->samples * sizeof(*l->digests));
    for (uint64_t s = 0; s < o->samples; s++) {
        snprintf(path, sizeof(path), "%s/%llu-%llu.json", o->pushes, (unsigned long long)l->index,
                 (unsigned long long)s);
        if (ig_read_file(path, &l->manifests[s], &l->sizes[s]) < 0)
            return -1;
        ig_sha256_digest(l->manifests[s], l->sizes[s], l->digests[s]);
    }
    return 0;
}

static char *ig_lat_stream_body(const struct ig_opts *o, const struct ig_lane *l)
{
    char from[IG_URL_MAX];
    snprintf(from, sizeof(from), "%s/%s:" IG_LAT_TAG, o->registry, l->repo);
    json_t *is = json_pack("{s:s, s:s, s:{s:s}, s:{s:[{s:s, s:{s:s, s:s}, s:{s:b}}]}}",
                           "apiVersion", "image.openshift.io/v1", "kind", "ImageStream",
                           "metadata", "name", l->stream, "spec", "tags", "name", IG_LAT_TAG,
                           "from", "kind", "DockerImage", "name", from, "importPolicy",
                           "scheduled", 1);
    char *body = json_dumps(is, JSON_COMPACT);
    json_decref(is);
    return body;
}

/* Creates every lane's stream and waits until each shows an imported `latest`. */
static int ig_lat_setup(struct ig_latrun *run, struct ig_conn *c)
{
    const struct ig_opts *o = run->o;
    char url[IG_URL_MAX];
    ig_api_url(url, sizeof(url), o, IG_IS_PATH);
    for (uint64_t i = 0; i < o->repos; i++) {
        char *body = ig_lat_stream_body(o, &run->lanes[i]);
        int rc = ig_conn_do(c, "POST", url, c->api_headers, body, strlen(body));
        free(body);
        if (rc < 0 || c->status != 201)
            return rc < 0 ? -1 : ig_unexpected(c, "POST imagestreams");
    }
    int64_t deadline = ig_now() + 30 * IG_NS_PER_SEC;
    pthread_mutex_lock(&run->mu);
    for (uint64_t i = 0; i < o->repos; i++) {
        struct timespec until = ig_abstime(deadline);
        while (!run->lanes[i].current[0] && ig_now() < deadline)
            pthread_cond_timedwait(&run->cond, &run->mu, &until);
        if (!run->lanes[i].current[0]) {
            pthread_mutex_unlock(&run->mu);
            ig_complain("stream %s was not imported within 30 s", run->lanes[i].stream);
            return -1;
        }
    }
    pthread_mutex_unlock(&run->mu);
    return 0;
}

/* One sample: pause, push the manifest to <repo>:latest, wait for the watch to show it. */
static void ig_lat_sample(struct ig_latrun *run, struct ig_lane *l, struct ig_conn *c,
                          uint64_t s, struct curl_slist *put_headers)
{
    const struct ig_opts *o = run->o;
    char url[IG_URL_MAX];
    uint64_t gap = (uint64_t)(o->gap_max * 1e9);
    ig_sleep_ns(gap ? (int64_t)(ig_rand(&l->seed) % gap) : 0);
    snprintf(url, sizeof(url), "http://%s/v2/%s/manifests/" IG_LAT_TAG, o->registry, l->repo);
    pthread_mutex_lock(&run->mu);
    snprintf(l->awaited, sizeof(l->awaited), "%s", l->digests[s]);
    l->t_seen = 0;
    pthread_mutex_unlock(&run->mu);
    int rc = ig_conn_do(c, "PUT", url, put_headers, l->manifests[s], l->sizes[s]);
    int64_t t0 = ig_now();
    if (rc < 0 || c->status != 201) {
        if (rc == 0)
            ig_unexpected(c, "PUT manifest");
        l->errors++;
        return;
    }
    int64_t deadline = t0 + (int64_t)(o->wait * IG_NS_PER_SEC);
    struct timespec until = ig_abstime(deadline);
    pthread_mutex_lock(&run->mu);
    while (!l->t_seen && ig_now() < deadline)
        pthread_cond_timedwait(&run->cond, &run->mu, &until);
    int64_t seen = l->t_seen;
    l->awaited[0] = '\0';
    pthread_mutex_unlock(&run->mu);
    if (!seen) {
        l->missed++;
        ig_complain("%s: %s not in status within %.1f s", l->stream, l->digests[s], o->wait);
        return;
    }
    /* The registry may notify before its answer reaches us: such a sample counts as 0. */
    ig_lat_push(&l->lat, seen > t0 ? seen - t0 : 0);
}

static const char *ig_media_type(const char *manifest, size_t len)
{
    static const char *types[] = {"application/vnd.oci.image.manifest.v1+json",
                                  "application/vnd.docker.distribution.manifest.v2+json",
                                  "application/vnd.oci.image.index.v1+json",
                                  "application/vnd.docker.distribution.manifest.list.v2+json"};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (memmem(manifest, len, types[i], strlen(types[i])))
            return types[i];
    return types[0];
}

struct ig_lane_arg {
    struct ig_latrun *run;
    struct ig_lane *lane;
};

static void *ig_lane_main(void *arg)
{
    struct ig_lane_arg *a = arg;
    struct ig_conn c;
    char ct[160];
    if (ig_conn_init(&c, a->run->o) < 0) {
        a->lane->errors++;
        ig_conn_dispose(&c);
        return NULL;
    }
    for (uint64_t s = 0; s < a->run->o->samples; s++) {
        struct ig_lane *l = a->lane;
        snprintf(ct, sizeof(ct), "Content-Type: %s", ig_media_type(l->manifests[s], l->sizes[s]));
        struct curl_slist *h = curl_slist_append(NULL, ct);
        h = curl_slist_append(h, "Expect:");
        ig_lat_sample(a->run, l, &c, s, h);
        curl_slist_free_all(h);
    }
    ig_conn_dispose(&c);
    return NULL;
}

/* Percentile q over the observed samples plus `missed` ones that never showed up (later than
 * any observed one): "inf" when the rank falls among those. */
static void ig_pct_text(struct ig_lat *l, uint64_t missed, double q, char *out, size_t n)
{
    uint64_t total = l->n + missed;
    uint64_t rank = (uint64_t)(q * (double)total + 0.999999);
    if (total == 0) {
        snprintf(out, n, "n/a");
        return;
    }
    if (rank < 1)
        rank = 1;
    if (rank > l->n) {
        snprintf(out, n, "inf");
        return;
    }
    qsort(l->ns, l->n, sizeof(*l->ns), ig_cmp_i64);
    snprintf(out, n, "%.1f", (double)l->ns[rank - 1] / 1e6);
}

static void ig_lat_report(const struct ig_opts *o, struct ig_lane *lanes, double secs)
{
    char p50[32], p99[32], pmax[32];
    struct ig_lat all = {0};
    uint64_t missed = 0, errors = 0;
    for (uint64_t i = 0; i < o->repos; i++) {
        for (size_t j = 0; j < lanes[i].lat.n; j++)
            ig_lat_push(&all, lanes[i].lat.ns[j]);
        missed += lanes[i].missed;
        errors += lanes[i].errors;
    }
    double mean = ig_lat_mean(&all);
    ig_pct_text(&all, missed, 0.50, p50, sizeof(p50));
    ig_pct_text(&all, missed, 0.99, p99, sizeof(p99));
    ig_pct_text(&all, missed, 1.00, pmax, sizeof(pmax));
    printf("lanes=%llu pushes=%llu observed=%zu missed=%llu errors=%llu secs=%.3f p50_ms=%s "
           "p99_ms=%s max_ms=%s observed_mean_ms=%.1f observed_max_ms=%.1f\n",
           (unsigned long long)o->repos, (unsigned long long)(o->repos * o->samples), all.n,
           (unsigned long long)missed, (unsigned long long)errors, secs, p50, p99, pmax, mean,
           ig_lat_pct(&all, 1.0));
    free(all.ns);
}

static void ig_lanes_free(const struct ig_opts *o, struct ig_lane *lanes)
{
    for (uint64_t i = 0; i < o->repos; i++) {
        for (uint64_t s = 0; lanes[i].manifests && s < o->samples; s++)
            free(lanes[i].manifests[s]);
        free(lanes[i].manifests);
        free(lanes[i].sizes);
        free(lanes[i].digests);
        free(lanes[i].lat.ns);
    }
    free(lanes);
}

static int ig_run_latency(const struct ig_opts *o)
{
    struct ig_latrun run = {.o = o};
    struct ig_watch w;
    struct ig_conn c;
    int rc = 1;
    bool watching = false;
    pthread_mutex_init(&run.mu, NULL);
    ig_cond_init(&run.cond);
    run.lanes = ig_alloc(o->repos * sizeof(*run.lanes));
    memset(&c, 0, sizeof(c));
    for (uint64_t i = 0; i < o->repos; i++) {
        struct ig_lane *l = &run.lanes[i];
        l->index = i;
        l->seed = 0x9E3779B97F4A7C15ULL ^ (i + 1) ^ (uint64_t)ig_now();
        ig_repo(l->repo, sizeof(l->repo), o, i);
        ig_stream(l->stream, sizeof(l->stream), o, i);
        if (ig_lane_load(o, l) < 0)
            goto done;
    }
    if (ig_conn_init(&c, o) < 0 || ig_watch_start(&w, o, ig_lat_event, &run) < 0)
        goto done;
    watching = true;
    if (ig_lat_setup(&run, &c) < 0)
        goto done;
    pthread_t *th = ig_alloc(o->repos * sizeof(*th));
    struct ig_lane_arg *args = ig_alloc(o->repos * sizeof(*args));
    int64_t t0 = ig_now();
    uint64_t started = 0;
    for (; started < o->repos; started++) {
        args[started] = (struct ig_lane_arg){.run = &run, .lane = &run.lanes[started]};
        if (pthread_create(&th[started], NULL, ig_lane_main, &args[started]) != 0)
            break;
    }
    for (uint64_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    ig_lat_report(o, run.lanes, (double)(ig_now() - t0) / 1e9);
    rc = started == o->repos ? 0 : 1;
    for (uint64_t i = 0; i < o->repos; i++)
        if (run.lanes[i].missed || run.lanes[i].errors)
            rc = 1;
    free(th);
    free(args);
done:
    if (watching)
        ig_watch_stop(&w);
    ig_conn_dispose(&c);
    ig_lanes_free(o, run.lanes);
    return rc;
}

/* ---------- arguments ---------- */

static void ig_usage(void)
{
    fputs("usage: sw-importgen MODE [options]\n"
          "  head        --registry H:P --repos N --tags K --inflight P [--get]\n"
          "  isi         --url U --registry H:P --repos N --tags K --inflight P [--per-tag]\n"
          "  controller  --url U --registry H:P --repos N --tags K --inflight P\n"
          "  latency     --url U --registry H:P --repos LANES --samples S --pushes DIR\n"
          "              [--gap-max S] [--wait S]\n"
          "common: --token T --insecure-tls --namespace NS --repo-prefix P --stream-prefix P\n"
          "        --timeout S (per request) --deadline S (whole phase)\n",
          stderr);
}

static int ig_opt_value(int argc, char **argv, int *i, const char **out)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "sw-importgen: %s needs a value\n", argv[*i]);
        return -1;
    }
    *out = argv[++*i];
    return 0;
}

static int ig_opt_number(const char *flag, const char *v, struct ig_opts *o)
{
    struct {
        const char *flag;
        uint64_t *u;
        double *d;
    } nums[] = {{"--repos", &o->repos, NULL},       {"--tags", &o->tags, NULL},
                {"--inflight", &o->inflight, NULL}, {"--samples", &o->samples, NULL},
                {"--timeout", NULL, &o->timeout},   {"--deadline", NULL, &o->deadline},
                {"--gap-max", NULL, &o->gap_max},   {"--wait", NULL, &o->wait}};
    for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
        if (strcmp(flag, nums[i].flag) != 0)
            continue;
        int rc = nums[i].u ? ig_parse_u64(v, 1000000, nums[i].u) : ig_parse_double(v, nums[i].d);
        if (rc < 0)
            fprintf(stderr, "sw-importgen: bad value for %s: %s\n", flag, v);
        return rc;
    }
    return 1; /* not a numeric flag */
}

static int ig_opt_string(const char *flag, const char *v, struct ig_opts *o)
{
    struct {
        const char *flag;
        const char **s;
    } strs[] = {{"--url", &o->url},
                {"--token", &o->token},
                {"--registry", &o->registry},
                {"--namespace", &o->ns},
                {"--repo-prefix", &o->repo_prefix},
                {"--stream-prefix", &o->stream_prefix},
                {"--pushes", &o->pushes}};
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
        if (strcmp(flag, strs[i].flag) == 0) {
            *strs[i].s = v;
            return 0;
        }
    }
    return 1;
}

static int ig_check_opts(const struct ig_opts *o)
{
    bool api = strcmp(o->mode, "head") != 0;
    if (!o->registry || (api && !o->url) || o->repos == 0 || o->inflight == 0 ||
        o->inflight > IG_MAX_WORKERS || o->tags == 0 || o->tags > 200) {
        fputs("sw-importgen: --registry (and --url), --repos, --tags and --inflight (1..256) "
              "are needed\n",
              stderr);
        return -1;
    }
    if (strcmp(o->mode, "latency") == 0 && (!o->pushes || o->samples == 0)) {
        fputs("sw-importgen: latency needs --pushes DIR and --samples N\n", stderr);
        return -1;
    }
    return 0;
}

static int ig_parse_args(int argc, char **argv, struct ig_opts *o)
{
    *o = (struct ig_opts){.ns = "default", .repo_prefix = "bench/r", .stream_prefix = "r",
                          .tags = 1, .inflight = 16, .timeout = 30, .deadline = 300,
                          .gap_max = 0.1, .wait = 10};
    if (argc < 2)
        return -1;
    o->mode = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *v = NULL;
        if (strcmp(argv[i], "--insecure-tls") == 0) {
            o->insecure_tls = true;
        } else if (strcmp(argv[i], "--per-tag") == 0) {
            o->per_tag = true;
        } else if (strcmp(argv[i], "--get") == 0) {
            o->get = true;
        } else {
            if (ig_opt_value(argc, argv, &i, &v) < 0)
                return -1;
            int rc = ig_opt_number(argv[i - 1], v, o);
            if (rc > 0)
                rc = ig_opt_string(argv[i - 1], v, o);
            if (rc != 0) {
                if (rc > 0)
                    fprintf(stderr, "sw-importgen: unknown option %s\n", argv[i - 1]);
                return -1;
            }
        }
    }
    return ig_check_opts(o);
}

int main(int argc, char **argv)
{
    struct ig_opts o;
    int rc = 2;
    if (ig_parse_args(argc, argv, &o) < 0) {
        ig_usage();
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (strcmp(o.mode, "head") == 0)
        rc = ig_run_head(&o);
    else if (strcmp(o.mode, "isi") == 0)
        rc = ig_run_isi(&o);
    else if (strcmp(o.mode, "controller") == 0)
        rc = ig_run_controller(&o);
    else if (strcmp(o.mode, "latency") == 0)
        rc = ig_run_latency(&o);
    else
        ig_usage();
    fflush(stdout);
    curl_global_cleanup();
    return rc;
}
