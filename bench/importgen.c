/* sw-importgen: the client behind bench/import.sh (image import throughput and push-to-status
 * latency). Modes: `head` is the protocol floor (HEAD, or HEAD + GET manifest + GET config, of
 * every tag straight at the registry), `isi` imports every tag through slipway's
 * imagestreamimports, `controller` creates ImageStreams with DockerImage spec tags and times
 * the embedded controller until every tag has status, `latency` pushes new manifests to
 * scheduled tags and times each until a watch shows the new digest. Each worker thread owns one
 * keep-alive libcurl handle. Every mode prints one `key=value ...` line on stdout; diagnostics
 * go to stderr. Built on src/util (swcore) and bench/benchlib. See bench/README.md. */
#include "benchlib.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/buf.h"
#include "util/sha256.h"
#include "util/str.h"

#include <curl/curl.h>
#include <jansson.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    const char *mode;               /* head|isi|controller|latency */
    const char *url;                /* slipway base URL */
    struct bench_conn_opts http;    /* token, --insecure-tls, per-request timeout, digest capture */
    struct curl_slist *reg_headers; /* the manifest Accept list for registry requests (read-only,
                                       shared by every connection; built in main) */
    const char *registry;           /* HOST:PORT of the registry (plain HTTP) */
    const char *ns;                 /* namespace of the streams */
    const char *repo_prefix;        /* repository of tag set i: <repo_prefix><i %03d> */
    const char *stream_prefix;      /* stream of repository i: <stream_prefix><i %03d> */
    uint64_t repos;                 /* repositories (lanes for latency) */
    uint64_t tags;                  /* tags t1..tN per repository */
    uint64_t inflight;              /* worker threads, one connection each */
    bool per_tag;                   /* isi: one ImageStreamImport per tag (stream <s>NNN-tK) */
    bool get;                       /* head: also GET the manifest and its config blob */
    bool no_head;                   /* head --get: GET at once, no HEAD (a first import) */
    double deadline;                /* whole measured phase, seconds */
    const char *pushes;             /* latency: directory of <lane>-<sample>.json manifests */
    uint64_t samples;               /* latency: pushes per lane */
    double gap_max;                 /* latency: random pause before each push, seconds */
    double wait;                    /* latency: give up on one sample after this, seconds */
};

/* ---------- small helpers ---------- */

static double ig_lat_mean(const struct bench_lat *l)
{
    double sum = 0;
    for (size_t i = 0; i < l->n; i++)
        sum += (double)l->ns[i];
    return l->n ? sum / (double)l->n / 1e6 : -1;
}

/* Parses the response body as JSON; NULL (with a complaint) if it is not. */
static json_t *ig_conn_json(const struct bench_conn *c, const char *what)
{
    json_error_t err;
    json_t *root = json_loadb(sw_buf_cstr(&c->resp), c->resp.len, 0, &err);
    if (!root)
        bench_complain("%s: the answer is not JSON: %s", what, err.text);
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
    uint64_t v;
    if (!name || strncmp(name, o->stream_prefix, pl) != 0)
        return -1;
    const char *p = name + pl;
    if (sw_parse_u64(&p, INT64_MAX - 1, &v) < 0 || (*p && *p != '-'))
        return -1;
    return (int64_t)v;
}

static void ig_api_url(char *out, size_t n, const struct ig_opts *o, const char *fmt)
{
    char path[512];
    snprintf(path, sizeof(path), fmt, o->ns);
    snprintf(out, n, "%s%s", o->url, path);
}

/* POSTs obj (consumed; NULL fails) to the API path fmt (%s: the namespace). Returns 0 when an
 * answer arrived (its status in c->status), -1 otherwise. */
static int ig_post(struct bench_conn *c, const struct ig_opts *o, const char *fmt, json_t *obj)
{
    char url[IG_URL_MAX];
    char *body = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    json_decref(obj);
    ig_api_url(url, sizeof(url), o, fmt);
    int rc = body ? bench_conn_do(c, "POST", url, c->api_headers, body, strlen(body)) : -1;
    free(body); /* jansson's allocation */
    return rc;
}

/* GETs the namespace's ImageStream list (its URL into url) on a connection of its own: the
 * parsed answer, or NULL. */
static json_t *ig_list_streams(const struct ig_opts *o, char *url, size_t n)
{
    struct bench_conn c;
    json_t *root = NULL;
    ig_api_url(url, n, o, IG_IS_PATH);
    if (bench_conn_init(&c, &o->http) == 0 &&
        bench_conn_do(&c, "GET", url, c.api_headers, NULL, 0) == 0 && c.status == 200)
        root = ig_conn_json(&c, "imagestream list");
    bench_conn_dispose(&c);
    return root;
}

/* ---------- worker pool ---------- */

/* Runs job over 0..jobs-1 on o->inflight workers (payload: o), capped by --deadline; the
 * time runs from before the first job to after the last. */
static void ig_pool_run(const struct ig_opts *o, bench_job_fn job, uint64_t jobs,
                        struct bench_pool_result *r)
{
    struct bench_pool_opts po = {.workers = (unsigned)o->inflight,
                                 .jobs = jobs,
                                 .duration = o->deadline,
                                 .conn = &o->http,
                                 .job = job,
                                 .payload = (void *)o};
    if (bench_pool_run(&po, r) < 0)
        bench_complain("could not set up the workers' connections");
}

/* ---------- head: the protocol floor ---------- */

/* GET of the manifest just fetched's config blob. */
static int ig_get_config(struct bench_conn *c, const struct ig_opts *o, const char *repo)
{
    char url[IG_URL_MAX];
    json_t *m = ig_conn_json(c, "manifest");
    const char *cfg = json_string_value(json_object_get(json_object_get(m, "config"), "digest"));
    if (!cfg) {
        bench_complain("%s: the manifest names no config blob", repo);
        json_decref(m);
        return -1;
    }
    snprintf(url, sizeof(url), "http://%s/v2/%s/blobs/%s", o->registry, repo, cfg);
    json_decref(m);
    if (bench_conn_do(c, "GET", url, o->reg_headers, NULL, 0) < 0)
        return -1;
    return c->status == 200 ? 0 : bench_conn_unexpected(c, "GET config blob");
}

static int ig_head_job(struct bench_worker *w, uint64_t job, void *payload)
{
    const struct ig_opts *o = payload;
    struct bench_conn *c = &w->conn;
    char repo[256], url[IG_URL_MAX];
    ig_repo(repo, sizeof(repo), o, job / o->tags);
    snprintf(url, sizeof(url), "http://%s/v2/%s/manifests/t%llu", o->registry, repo,
             (unsigned long long)(job % o->tags + 1));
    if (!o->no_head && bench_conn_do(c, "HEAD", url, o->reg_headers, NULL, 0) < 0)
        return -1;
    if (!o->no_head && (c->status != 200 || !c->header[0])) {
        w->bad++;
        return bench_conn_unexpected(c, url);
    }
    if (o->get) {
        if (bench_conn_do(c, "GET", url, o->reg_headers, NULL, 0) < 0)
            return -1;
        if (c->status != 200 || ig_get_config(c, o, repo) < 0) {
            w->bad++;
            return c->status == 200 ? -1 : bench_conn_unexpected(c, url);
        }
    }
    w->ok++;
    return 0;
}

static int ig_run_head(const struct ig_opts *o)
{
    struct bench_pool_result r;
    ig_pool_run(o, ig_head_job, o->repos * o->tags, &r);
    printf("tags=%llu ok=%llu errors=%llu secs=%.3f rate=%.1f p50_ms=%.2f p99_ms=%.2f\n",
           (unsigned long long)r.done, (unsigned long long)r.ok,
           (unsigned long long)(r.errors + r.bad), r.secs, r.secs > 0 ? (double)r.ok / r.secs : 0,
           bench_lat_pct(&r.lat, 0.50, -1), bench_lat_pct(&r.lat, 0.99, -1));
    bench_lat_dispose(&r.lat);
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
static json_t *ig_isi_body(const struct ig_opts *o, uint64_t job)
{
    char stream[128];
    json_t *images = json_array();
    uint64_t repo = o->per_tag ? job / o->tags : job;
    ig_stream(stream, sizeof(stream), o, repo);
    if (o->per_tag) {
        size_t l = strlen(stream);
        snprintf(stream + l, sizeof(stream) - l, "-t%llu", (unsigned long long)(job % o->tags + 1));
        json_array_append_new(images, ig_isi_image(o, repo, job % o->tags + 1));
    } else {
        for (uint64_t t = 1; t <= o->tags; t++)
            json_array_append_new(images, ig_isi_image(o, repo, t));
    }
    return json_pack("{s:s, s:s, s:{s:s}, s:{s:b, s:o}}", "apiVersion", "image.openshift.io/v1",
                     "kind", "ImageStreamImport", "metadata", "name", stream, "spec", "import", 1,
                     "images", images);
}

static int ig_isi_job(struct bench_worker *w, uint64_t job, void *payload)
{
    const struct ig_opts *o = payload;
    struct bench_conn *c = &w->conn;
    if (ig_post(c, o, IG_ISI_PATH, ig_isi_body(o, job)) < 0)
        return -1;
    if (c->status != 201 && c->status != 200)
        return bench_conn_unexpected(c, "POST imagestreamimports");
    json_t *root = ig_conn_json(c, "imagestreamimport");
    json_t *items = json_object_get(json_object_get(root, "status"), "images"), *it;
    size_t i;
    json_array_foreach(items, i, it)
    {
        json_t *st = json_object_get(it, "status");
        if (strcmp(json_string_value(json_object_get(st, "status")) ?: "", "Success") == 0) {
            w->ok++;
        } else {
            w->bad++;
            bench_complain("import of tag %s failed: %s",
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
    char url[IG_URL_MAX];
    json_t *root = ig_list_streams(o, url, sizeof(url)), *s;
    size_t i;
    *tags = *events = 0;
    if (!root)
        return -1;
    json_array_foreach(json_object_get(root, "items"), i, s)
    {
        json_t *t;
        size_t j;
        json_array_foreach(json_object_get(json_object_get(s, "status"), "tags"), j, t)
        {
            size_t n = json_array_size(json_object_get(t, "items"));
            *tags += n > 0;
            *events += n;
        }
    }
    json_decref(root);
    return 0;
}

static int ig_run_isi(const struct ig_opts *o)
{
    struct bench_pool_result r;
    uint64_t written = 0, events = 0, want = o->repos * o->tags;
    ig_pool_run(o, ig_isi_job, o->per_tag ? want : o->repos, &r);
    if (ig_count_written(o, &written, &events) < 0)
        bench_complain("could not list the streams to check the tag events");
    printf("requests=%llu tags=%llu ok=%llu failed=%llu errors=%llu secs=%.3f rate=%.1f "
           "p50_ms=%.2f p99_ms=%.2f written=%llu events=%llu\n",
           (unsigned long long)r.done, (unsigned long long)(r.ok + r.bad), (unsigned long long)r.ok,
           (unsigned long long)r.bad, (unsigned long long)r.errors, r.secs,
           r.secs > 0 ? (double)r.ok / r.secs : 0, bench_lat_pct(&r.lat, 0.50, -1),
           bench_lat_pct(&r.lat, 0.99, -1), (unsigned long long)written,
           (unsigned long long)events);
    bench_lat_dispose(&r.lat);
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
    struct bench_ndjson lines; /* the stream, split into events as it arrives */
};

/* One event (NULL: the line was not JSON) received at t. */
static void ig_watch_line(struct ig_watch *w, json_t *ev, int64_t t)
{
    const char *type = json_string_value(json_object_get(ev, "type"));
    if (!ev) {
        bench_complain("watch: a line is not JSON");
        return;
    }
    if (type && (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0))
        w->fn(json_object_get(ev, "object"), t, w->payload);
}

static size_t ig_watch_write(char *data, size_t size, size_t nmemb, void *payload)
{
    struct ig_watch *w = payload;
    size_t n = size * nmemb, end;
    int64_t t = bench_now();
    json_t *ev;
    if (bench_ndjson_feed(&w->lines, data, n) < 0)
        return 0;
    while (bench_ndjson_next(&w->lines, &ev, &end)) {
        ig_watch_line(w, ev, t);
        json_decref(ev);
    }
    bench_ndjson_compact(&w->lines);
    return atomic_load(&w->stop) ? 0 : n;
}

static size_t ig_watch_header(char *data, size_t size, size_t nmemb, void *payload)
{
    struct ig_watch *w = payload;
    if (size * nmemb > 12 && strncmp(data, "HTTP/", 5) == 0 && strstr(data, " 200"))
        atomic_store(&w->established, true);
    return size * nmemb;
}

static int ig_watch_progress(void *payload, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    struct ig_watch *w = payload;
    return atomic_load(&w->stop) ? 1 : 0;
}

static void *ig_watch_main(void *arg)
{
    struct ig_watch *w = arg;
    struct bench_conn c;
    if (bench_conn_init(&c, &w->o->http) == 0) {
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
            bench_complain("watch ended early: %s", curl_easy_strerror(rc));
    }
    bench_conn_dispose(&c);
    atomic_store(&w->ended, true);
    return NULL;
}

/* Lists the streams for the current resourceVersion, then watches from it. */
static int ig_watch_start(struct ig_watch *w, const struct ig_opts *o, ig_event_fn fn,
                          void *payload)
{
    char url[IG_URL_MAX];
    const char *rv = NULL;
    json_t *root = NULL;
    int rc = -1;
    memset(w, 0, sizeof(*w));
    w->o = o;
    w->fn = fn;
    w->payload = payload;
    bench_ndjson_init(&w->lines, IG_RESP_LIMIT);
    root = ig_list_streams(o, url, sizeof(url));
    rv = json_string_value(json_object_get(json_object_get(root, "metadata"), "resourceVersion"));
    if (!rv)
        goto done;
    int len = snprintf(w->url, sizeof(w->url),
                       "%s?watch=true&resourceVersion=%s&timeoutSeconds=1800", url, rv);
    if (len < 0 || (size_t)len >= sizeof(w->url) ||
        pthread_create(&w->thread, NULL, ig_watch_main, w) != 0)
        goto done;
    for (int i = 0; i < 5000 && !atomic_load(&w->established) && !atomic_load(&w->ended); i++)
        bench_sleep_ns(BENCH_NS_PER_SEC / 1000);
    rc = 0;
done:
    if (rc < 0)
        bench_complain("could not start the watch on %s", url);
    json_decref(root);
    return rc;
}

static void ig_watch_stop(struct ig_watch *w)
{
    atomic_store(&w->stop, true);
    pthread_join(w->thread, NULL);
    bench_ndjson_dispose(&w->lines);
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
    json_array_foreach(json_object_get(json_object_get(obj, "status"), "tags"), i, t)
    {
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

static json_t *ig_stream_body(const struct ig_opts *o, uint64_t repo)
{
    char stream[128];
    json_t *tags = json_array();
    ig_stream(stream, sizeof(stream), o, repo);
    for (uint64_t t = 1; t <= o->tags; t++) {
        json_t *img = ig_isi_image(o, repo, t); /* {from, to:{name}} */
        json_t *tag =
            json_pack("{s:O, s:O}", "name", json_object_get(json_object_get(img, "to"), "name"),
                      "from", json_object_get(img, "from"));
        json_array_append_new(tags, tag);
        json_decref(img);
    }
    return json_pack("{s:s, s:s, s:{s:s}, s:{s:o}}", "apiVersion", "image.openshift.io/v1", "kind",
                     "ImageStream", "metadata", "name", stream, "spec", "tags", tags);
}

static int ig_create_job(struct bench_worker *w, uint64_t job, void *payload)
{
    const struct ig_opts *o = payload;
    if (ig_post(&w->conn, o, IG_IS_PATH, ig_stream_body(o, job)) < 0)
        return -1;
    if (w->conn.status != 201) {
        w->bad++;
        return bench_conn_unexpected(&w->conn, "POST imagestreams");
    }
    w->ok++;
    return 0;
}

static int ig_run_controller(const struct ig_opts *o)
{
    struct ig_ctl x = {.o = o};
    struct ig_watch w;
    struct bench_pool_result r;
    uint64_t want = o->repos * o->tags;
    pthread_mutex_init(&x.mu, NULL);
    bench_cond_init(&x.cond);
    x.imported = sw_calloc(o->repos, 1);
    x.failed = sw_calloc(o->repos, 1);
    if (ig_watch_start(&w, o, ig_ctl_event, &x) < 0) {
        sw_free(x.imported);
        sw_free(x.failed);
        return 1;
    }
    int64_t t0 = bench_now(), deadline = t0 + (int64_t)(o->deadline * BENCH_NS_PER_SEC);
    ig_pool_run(o, ig_create_job, o->repos, &r);
    pthread_mutex_lock(&x.mu);
    struct timespec until = bench_abstime(deadline);
    while (!x.t_done && !atomic_load(&w.ended) && bench_now() < deadline)
        pthread_cond_timedwait(&x.cond, &x.mu, &until);
    int64_t end = x.t_done ? x.t_done : bench_now();
    uint64_t imported = x.total_imported, failed = x.total_failed;
    pthread_mutex_unlock(&x.mu);
    ig_watch_stop(&w);
    double secs = (double)(end - t0) / 1e9;
    printf("streams=%llu tags=%llu imported=%llu failed=%llu create_secs=%.3f secs=%.3f "
           "rate=%.1f complete=%d\n",
           (unsigned long long)r.ok, (unsigned long long)want, (unsigned long long)imported,
           (unsigned long long)failed, r.secs, secs, secs > 0 ? (double)imported / secs : 0,
           x.t_done != 0);
    bench_lat_dispose(&r.lat);
    sw_free(x.imported);
    sw_free(x.failed);
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
    char (*digests)[SW_SHA256_DIGEST_BUF];
    struct bench_lat lat;
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
    json_array_foreach(json_object_get(json_object_get(obj, "status"), "tags"), i, t)
    {
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
    sw_buf b = SW_BUF_INIT(IG_MANIFEST_MAX);
    char chunk[8192];
    size_t r;
    if (!f) {
        bench_complain("cannot open %s: %s", path, sw_strerror(errno));
        return -1;
    }
    while ((r = fread(chunk, 1, sizeof(chunk), f)) > 0 && sw_buf_put(&b, chunk, r) == 0) {
    }
    fclose(f);
    if (sw_buf_error(&b)) {
        bench_complain("%s is larger than %zu bytes", path, IG_MANIFEST_MAX);
        sw_buf_dispose(&b);
        return -1;
    }
    *out = sw_buf_detach(&b, len);
    return 0;
}

/* Loads <pushes>/<lane>-<sample>.json for every sample of l. */
static int ig_lane_load(const struct ig_opts *o, struct ig_lane *l)
{
    char path[IG_URL_MAX];
    l->manifests = sw_calloc(o->samples, sizeof(*l->manifests));
    l->sizes = sw_calloc(o->samples, sizeof(*l->sizes));
    l->digests = sw_calloc(o->samples, sizeof(*l->digests));
    for (uint64_t s = 0; s < o->samples; s++) {
        snprintf(path, sizeof(path), "%s/%llu-%llu.json", o->pushes, (unsigned long long)l->index,
                 (unsigned long long)s);
        if (ig_read_file(path, &l->manifests[s], &l->sizes[s]) < 0)
            return -1;
        sw_sha256_digest(l->manifests[s], l->sizes[s], l->digests[s]);
    }
    return 0;
}

static json_t *ig_lat_stream_body(const struct ig_opts *o, const struct ig_lane *l)
{
    char from[IG_URL_MAX];
    snprintf(from, sizeof(from), "%s/%s:" IG_LAT_TAG, o->registry, l->repo);
    return json_pack("{s:s, s:s, s:{s:s}, s:{s:[{s:s, s:{s:s, s:s}, s:{s:b}}]}}", "apiVersion",
                     "image.openshift.io/v1", "kind", "ImageStream", "metadata", "name", l->stream,
                     "spec", "tags", "name", IG_LAT_TAG, "from", "kind", "DockerImage", "name",
                     from, "importPolicy", "scheduled", 1);
}

/* Creates every lane's stream and waits until each shows an imported `latest`. */
static int ig_lat_setup(struct ig_latrun *run, struct bench_conn *c)
{
    const struct ig_opts *o = run->o;
    for (uint64_t i = 0; i < o->repos; i++) {
        int rc = ig_post(c, o, IG_IS_PATH, ig_lat_stream_body(o, &run->lanes[i]));
        if (rc < 0 || c->status != 201)
            return rc < 0 ? -1 : bench_conn_unexpected(c, "POST imagestreams");
    }
    int64_t deadline = bench_now() + 30 * BENCH_NS_PER_SEC;
    pthread_mutex_lock(&run->mu);
    for (uint64_t i = 0; i < o->repos; i++) {
        struct timespec until = bench_abstime(deadline);
        while (!run->lanes[i].current[0] && bench_now() < deadline)
            pthread_cond_timedwait(&run->cond, &run->mu, &until);
        if (!run->lanes[i].current[0]) {
            pthread_mutex_unlock(&run->mu);
            bench_complain("stream %s was not imported within 30 s", run->lanes[i].stream);
            return -1;
        }
    }
    pthread_mutex_unlock(&run->mu);
    return 0;
}

/* One sample: pause, push the manifest to <repo>:latest, wait for the watch to show it. */
static void ig_lat_sample(struct ig_latrun *run, struct ig_lane *l, struct bench_conn *c,
                          uint64_t s, struct curl_slist *put_headers)
{
    const struct ig_opts *o = run->o;
    char url[IG_URL_MAX];
    uint64_t gap = (uint64_t)(o->gap_max * 1e9);
    bench_sleep_ns(gap ? (int64_t)(bench_rand(&l->seed) % gap) : 0);
    snprintf(url, sizeof(url), "http://%s/v2/%s/manifests/" IG_LAT_TAG, o->registry, l->repo);
    pthread_mutex_lock(&run->mu);
    snprintf(l->awaited, sizeof(l->awaited), "%s", l->digests[s]);
    l->t_seen = 0;
    pthread_mutex_unlock(&run->mu);
    int rc = bench_conn_do(c, "PUT", url, put_headers, l->manifests[s], l->sizes[s]);
    int64_t t0 = bench_now();
    if (rc < 0 || c->status != 201) {
        if (rc == 0)
            bench_conn_unexpected(c, "PUT manifest");
        l->errors++;
        return;
    }
    int64_t deadline = t0 + (int64_t)(o->wait * BENCH_NS_PER_SEC);
    struct timespec until = bench_abstime(deadline);
    pthread_mutex_lock(&run->mu);
    while (!l->t_seen && bench_now() < deadline)
        pthread_cond_timedwait(&run->cond, &run->mu, &until);
    int64_t seen = l->t_seen;
    l->awaited[0] = '\0';
    pthread_mutex_unlock(&run->mu);
    if (!seen) {
        l->missed++;
        bench_complain("%s: %s not in status within %.1f s", l->stream, l->digests[s], o->wait);
        return;
    }
    /* The registry may notify before its answer reaches us: such a sample counts as 0. */
    bench_lat_push(&l->lat, seen > t0 ? seen - t0 : 0);
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
    struct bench_conn c;
    char ct[160];
    if (bench_conn_init(&c, &a->run->o->http) < 0) {
        a->lane->errors++;
        bench_conn_dispose(&c);
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
    bench_conn_dispose(&c);
    return NULL;
}

/* Percentile q over the observed samples plus `missed` ones that never showed up (later than
 * any observed one): "inf" when the rank falls among those. */
static void ig_pct_text(struct bench_lat *l, uint64_t missed, double q, char *out, size_t n)
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
    bench_lat_sort(l);
    snprintf(out, n, "%.1f", (double)l->ns[rank - 1] / 1e6);
}

static void ig_lat_report(const struct ig_opts *o, struct ig_lane *lanes, double secs)
{
    char p50[32], p99[32], pmax[32];
    struct bench_lat all = {0};
    uint64_t missed = 0, errors = 0;
    for (uint64_t i = 0; i < o->repos; i++) {
        bench_lat_merge(&all, &lanes[i].lat);
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
           bench_lat_pct(&all, 1.0, -1));
    bench_lat_dispose(&all);
}

static void ig_lanes_free(const struct ig_opts *o, struct ig_lane *lanes)
{
    for (uint64_t i = 0; i < o->repos; i++) {
        for (uint64_t s = 0; lanes[i].manifests && s < o->samples; s++)
            sw_free(lanes[i].manifests[s]);
        sw_free(lanes[i].manifests);
        sw_free(lanes[i].sizes);
        sw_free(lanes[i].digests);
        bench_lat_dispose(&lanes[i].lat);
    }
    sw_free(lanes);
}

static int ig_run_latency(const struct ig_opts *o)
{
    struct ig_latrun run = {.o = o};
    struct ig_watch w;
    struct bench_conn c;
    int rc = 1;
    bool watching = false;
    pthread_mutex_init(&run.mu, NULL);
    bench_cond_init(&run.cond);
    run.lanes = sw_calloc(o->repos, sizeof(*run.lanes));
    memset(&c, 0, sizeof(c));
    for (uint64_t i = 0; i < o->repos; i++) {
        struct ig_lane *l = &run.lanes[i];
        l->index = i;
        l->seed = 0x9E3779B97F4A7C15ULL ^ (i + 1) ^ (uint64_t)bench_now();
        ig_repo(l->repo, sizeof(l->repo), o, i);
        ig_stream(l->stream, sizeof(l->stream), o, i);
        if (ig_lane_load(o, l) < 0)
            goto done;
    }
    if (bench_conn_init(&c, &o->http) < 0 || ig_watch_start(&w, o, ig_lat_event, &run) < 0)
        goto done;
    watching = true;
    if (ig_lat_setup(&run, &c) < 0)
        goto done;
    pthread_t *th = sw_calloc(o->repos, sizeof(*th));
    struct ig_lane_arg *args = sw_calloc(o->repos, sizeof(*args));
    int64_t t0 = bench_now();
    uint64_t started = 0;
    for (; started < o->repos; started++) {
        args[started] = (struct ig_lane_arg){.run = &run, .lane = &run.lanes[started]};
        if (pthread_create(&th[started], NULL, ig_lane_main, &args[started]) != 0)
            break;
    }
    for (uint64_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    ig_lat_report(o, run.lanes, (double)(bench_now() - t0) / 1e9);
    rc = started == o->repos ? 0 : 1;
    for (uint64_t i = 0; i < o->repos; i++)
        if (run.lanes[i].missed || run.lanes[i].errors)
            rc = 1;
    sw_free(th);
    sw_free(args);
done:
    if (watching)
        ig_watch_stop(&w);
    bench_conn_dispose(&c);
    ig_lanes_free(o, run.lanes);
    return rc;
}

/* ---------- arguments ---------- */

static void ig_usage(void)
{
    fputs("usage: sw-importgen MODE [options]\n"
          "  head        --registry H:P --repos N --tags K --inflight P [--get [--no-head]]\n"
          "  isi         --url U --registry H:P --repos N --tags K --inflight P [--per-tag]\n"
          "  controller  --url U --registry H:P --repos N --tags K --inflight P\n"
          "  latency     --url U --registry H:P --repos LANES --samples S --pushes DIR\n"
          "              [--gap-max S] [--wait S]\n"
          "common: --token T --insecure-tls --namespace NS --repo-prefix P --stream-prefix P\n"
          "        --timeout S (per request) --deadline S (whole phase)\n",
          stderr);
}

static int ig_opt_number(const char *flag, const char *v, struct ig_opts *o)
{
    const struct bench_numopt nums[] = {
        {"--repos", &o->repos, NULL},          {"--tags", &o->tags, NULL},
        {"--inflight", &o->inflight, NULL},    {"--samples", &o->samples, NULL},
        {"--timeout", NULL, &o->http.timeout}, {"--deadline", NULL, &o->deadline},
        {"--gap-max", NULL, &o->gap_max},      {"--wait", NULL, &o->wait}};
    int rc = bench_numopt_set(nums, sizeof(nums) / sizeof(nums[0]), 1000000, flag, v);
    if (rc < 0)
        fprintf(stderr, "sw-importgen: bad value for %s: %s\n", flag, v);
    return rc; /* 1: not a numeric flag */
}

static int ig_opt_string(const char *flag, const char *v, struct ig_opts *o)
{
    struct {
        const char *flag;
        const char **s;
    } strs[] = {{"--url", &o->url},
                {"--token", &o->http.token},
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
    *o = (struct ig_opts){
        .ns = "default",
        .repo_prefix = "bench/r",
        .stream_prefix = "r",
        .tags = 1,
        .inflight = 16,
        .deadline = 300,
        .gap_max = 0.1,
        .wait = 10,
        .http = {.timeout = 30, .limit = IG_RESP_LIMIT, .capture = "docker-content-digest:"}};
    if (argc < 2)
        return -1;
    o->mode = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *v = NULL;
        if (strcmp(argv[i], "--insecure-tls") == 0) {
            o->http.insecure_tls = true;
        } else if (strcmp(argv[i], "--per-tag") == 0) {
            o->per_tag = true;
        } else if (strcmp(argv[i], "--get") == 0) {
            o->get = true;
        } else if (strcmp(argv[i], "--no-head") == 0) {
            o->no_head = true;
        } else {
            if (bench_opt_value(argc, argv, &i, &v) < 0)
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
    bench_set_prog("sw-importgen");
    if (ig_parse_args(argc, argv, &o) < 0) {
        ig_usage();
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    o.reg_headers = curl_slist_append(NULL, IG_ACCEPT);
    o.reg_headers = curl_slist_append(o.reg_headers, "Expect:");
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
    curl_slist_free_all(o.reg_headers);
    curl_global_cleanup();
    return rc;
}
