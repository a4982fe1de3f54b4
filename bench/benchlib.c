/* benchlib: the helpers sw-loadgen and sw-importgen share (see benchlib.h): monotonic clock,
 * diagnostics and options, latency percentiles, the keep-alive libcurl connection, the worker
 * pool and the NDJSON splitter. Allocation goes through src/util (abort on OOM). */
#include "benchlib.h"

#include "util/alloc.h"
#include "util/str.h"
#include "util/time.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---------- clock ---------- */

int64_t bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * BENCH_NS_PER_SEC + ts.tv_nsec;
}

void bench_sleep_ns(int64_t ns)
{
    if (ns <= 0)
        return;
    struct timespec ts = {.tv_sec = ns / BENCH_NS_PER_SEC, .tv_nsec = ns % BENCH_NS_PER_SEC};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

void bench_sleep_until(int64_t t)
{
    bench_sleep_ns(t - bench_now());
}

void bench_cond_init(pthread_cond_t *c)
{
    sw_time_cond_init(c);
}

struct timespec bench_abstime(int64_t t)
{
    return (struct timespec){.tv_sec = t / BENCH_NS_PER_SEC, .tv_nsec = t % BENCH_NS_PER_SEC};
}

uint64_t bench_rand(uint64_t *state)
{
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * 2685821657736338717ULL;
}

/* ---------- diagnostics and options ---------- */

static const char *bench_name = "bench";

void bench_set_prog(const char *name)
{
    bench_name = name;
}

void bench_complain(const char *fmt, ...)
{
    static atomic_int count;
    va_list ap;
    int n = atomic_fetch_add(&count, 1);
    if (n > 10)
        return;
    if (n == 10) {
        fprintf(stderr, "%s: further errors not shown\n", bench_name);
        return;
    }
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", bench_name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int bench_opt_value(int argc, char **argv, int *i, const char **out)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "%s: %s needs a value\n", bench_name, argv[*i]);
        return -1;
    }
    *out = argv[++*i];
    return 0;
}

/* A whole string as an unsigned decimal up to max; 0 or -1. */
static int bench_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    const char *p = s;
    if (!s || sw_parse_u64(&p, max, out) < 0 || *p)
        return -1;
    return 0;
}

/* A whole string as a non-negative decimal number; 0 or -1. */
static int bench_parse_double(const char *s, double *out)
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

int bench_numopt_set(const struct bench_numopt *opts, size_t n, uint64_t max, const char *flag,
                     const char *v)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(flag, opts[i].flag) != 0)
            continue;
        return opts[i].u ? bench_parse_u64(v, max, opts[i].u) : bench_parse_double(v, opts[i].d);
    }
    return 1;
}

/* ---------- latency samples ---------- */

void bench_lat_push(struct bench_lat *l, int64_t ns)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 1024;
        l->ns = sw_realloc(l->ns, l->cap * sizeof(*l->ns));
    }
    l->ns[l->n++] = ns;
    l->sorted = false;
}

void bench_lat_merge(struct bench_lat *dst, const struct bench_lat *src)
{
    for (size_t i = 0; i < src->n; i++)
        bench_lat_push(dst, src->ns[i]);
}

static int bench_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void bench_lat_sort(struct bench_lat *l)
{
    if (!l->sorted && l->n > 1)
        qsort(l->ns, l->n, sizeof(*l->ns), bench_cmp_i64);
    l->sorted = true;
}

double bench_lat_pct(struct bench_lat *l, double q, double empty)
{
    if (l->n == 0)
        return empty;
    bench_lat_sort(l);
    /* ceil(q * n), tolerant of the rounding error in q * n */
    size_t rank = (size_t)(q * (double)l->n + 0.999999);
    if (rank < 1)
        rank = 1;
    if (rank > l->n)
        rank = l->n;
    return (double)l->ns[rank - 1] / 1e6;
}

void bench_lat_dispose(struct bench_lat *l)
{
    sw_free(l->ns);
    memset(l, 0, sizeof(*l));
}

/* ---------- one keep-alive HTTP connection ---------- */

static size_t bench_conn_write(char *data, size_t size, size_t nmemb, void *payload)
{
    struct bench_conn *c = payload;
    size_t n = size * nmemb;
    return sw_buf_put(&c->resp, data, n) == 0 ? n : 0;
}

/* Keeps the value of the header named c->capture, trimmed. */
static size_t bench_conn_header(char *data, size_t size, size_t nmemb, void *payload)
{
    struct bench_conn *c = payload;
    size_t n = size * nmemb, nl = c->capture ? strlen(c->capture) : 0;
    if (!nl || n <= nl || strncasecmp(data, c->capture, nl) != 0)
        return n;
    const char *v = data + nl;
    size_t vl = n - nl;
    while (vl && (*v == ' ' || *v == '\t'))
        v++, vl--;
    while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
        vl--;
    if (vl < sizeof(c->header)) {
        memcpy(c->header, v, vl);
        c->header[vl] = '\0';
    }
    return n;
}

struct curl_slist *bench_api_headers(const char *token)
{
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json");
    h = curl_slist_append(h, "Expect:");
    if (h && token && *token) {
        char auth[2048];
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
        h = curl_slist_append(h, auth);
    }
    return h;
}

void bench_tls(CURL *curl, bool insecure)
{
    if (insecure) {
        curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
    }
}

int bench_conn_init(struct bench_conn *c, const struct bench_conn_opts *o)
{
    memset(c, 0, sizeof(*c));
    sw_buf_init(&c->resp, o->limit);
    c->capture = o->capture;
    c->curl = curl_easy_init();
    c->api_headers = bench_api_headers(o->token);
    if (!c->curl || !c->api_headers)
        return -1;
    curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->curl, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(c->curl, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->api_headers);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, bench_conn_write);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, bench_conn_header);
    curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, c);
    curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, (long)(o->timeout * 1000));
    bench_tls(c->curl, o->insecure_tls);
    return 0;
}

void bench_conn_dispose(struct bench_conn *c)
{
    if (c->curl)
        curl_easy_cleanup(c->curl);
    curl_slist_free_all(c->api_headers);
    sw_buf_dispose(&c->resp);
    memset(c, 0, sizeof(*c));
}

/* The method part of one request: HEAD and GET have no body, POST and PUT send body. */
static void bench_conn_method(struct bench_conn *c, const char *method, const char *body,
                              size_t len)
{
    bool head = strcmp(method, "HEAD") == 0, get = strcmp(method, "GET") == 0;
    curl_easy_setopt(c->curl, CURLOPT_NOBODY, head ? 1L : 0L);
    if (head || get) {
        curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, NULL);
        if (get)
            curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
        return;
    }
    curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body ? body : "");
    curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE, (long)(body ? len : 0));
    bool custom = strcmp(method, "PUT") == 0 || strcmp(method, "DELETE") == 0;
    curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, custom ? method : NULL);
}

int bench_conn_do(struct bench_conn *c, const char *method, const char *url,
                  struct curl_slist *headers, const char *body, size_t len)
{
    sw_buf_clear(&c->resp);
    c->status = 0;
    c->header[0] = '\0';
    curl_easy_setopt(c->curl, CURLOPT_URL, url);
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, headers ? headers : c->api_headers);
    bench_conn_method(c, method, body, len);
    CURLcode rc = curl_easy_perform(c->curl);
    if (rc != CURLE_OK) {
        if (!c->quiet)
            bench_complain("%s %s: %s", method, url, curl_easy_strerror(rc));
        return -1;
    }
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &c->status);
    return 0;
}

int bench_conn_unexpected(const struct bench_conn *c, const char *what)
{
    bench_complain("%s: HTTP %ld: %.200s", what, c->status, sw_buf_cstr(&c->resp));
    return -1;
}

/* ---------- worker pool ---------- */

struct bench_pool {
    const struct bench_pool_opts *o;
    atomic_uint_fast64_t next; /* next job number */
    int64_t deadline;          /* bench_now() time the timed phase ends */
};

/* Claims the next job number; false when the jobs or the time have run out. */
static bool bench_pool_claim(struct bench_pool *p, uint64_t *out)
{
    if (bench_now() >= p->deadline)
        return false;
    uint64_t n = atomic_fetch_add(&p->next, 1);
    if (p->o->jobs && n >= p->o->jobs)
        return false;
    *out = n;
    return true;
}

static void *bench_worker_main(void *arg)
{
    struct bench_worker *w = arg;
    const struct bench_pool_opts *o = w->pool->o;
    uint64_t job;
    while (bench_pool_claim(w->pool, &job)) {
        int64_t t0 = bench_now();
        int rc = o->job(w, job, o->payload);
        if (rc == 0) {
            bench_lat_push(&w->lat, bench_now() - t0);
            w->failing = 0;
        } else if (rc < 0) {
            w->errors++;
            w->failing++;
        }
        w->done++;
        if (o->max_failing && w->failing >= o->max_failing)
            break;
    }
    return NULL;
}

/* Connections and the tool's setup for n workers, before the clock starts. */
static int bench_pool_setup(struct bench_pool *p, struct bench_worker *ws, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        ws[i].pool = p;
        ws[i].id = i;
        ws[i].rng = 0x9e3779b97f4a7c15ULL ^ (i + 1);
        if (bench_conn_init(&ws[i].conn, p->o->conn) < 0)
            return -1;
        if (p->o->setup && p->o->setup(&ws[i], p->o->payload) < 0)
            return -1;
    }
    return 0;
}

static void bench_pool_sum(struct bench_worker *ws, unsigned n, unsigned started,
                           struct bench_pool_result *r)
{
    r->workers = n;
    r->errors = n - started;
    for (unsigned i = 0; i < started; i++) {
        r->done += ws[i].done;
        r->errors += ws[i].errors;
        r->ok += ws[i].ok;
        r->bad += ws[i].bad;
        bench_lat_merge(&r->lat, &ws[i].lat);
    }
}

int bench_pool_run(const struct bench_pool_opts *o, struct bench_pool_result *r)
{
    struct bench_pool p = {.o = o};
    unsigned n = o->jobs && o->jobs < o->workers ? (unsigned)o->jobs : o->workers;
    struct bench_worker *ws = sw_calloc(n, sizeof(*ws));
    pthread_t *th = sw_calloc(n, sizeof(*th));
    unsigned started = 0;
    int rc = -1;
    memset(r, 0, sizeof(*r));
    atomic_init(&p.next, 0);
    if (bench_pool_setup(&p, ws, n) < 0)
        goto done;
    int64_t t0 = bench_now();
    p.deadline = t0 + (int64_t)(o->duration * BENCH_NS_PER_SEC);
    for (; started < n; started++) {
        if (pthread_create(&th[started], NULL, bench_worker_main, &ws[started]) != 0)
            break;
    }
    for (unsigned i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    r->secs = (double)(bench_now() - t0) / 1e9;
    bench_pool_sum(ws, n, started, r);
    rc = 0;
done:
    for (unsigned i = 0; i < n; i++) {
        bench_conn_dispose(&ws[i].conn);
        bench_lat_dispose(&ws[i].lat);
    }
    sw_free(ws);
    sw_free(th);
    return rc;
}

/* ---------- NDJSON stream splitter ---------- */

void bench_ndjson_init(struct bench_ndjson *s, size_t limit)
{
    sw_buf_init(&s->buf, limit);
    s->next = 0;
}

int bench_ndjson_feed(struct bench_ndjson *s, const char *data, size_t n)
{
    return sw_buf_put(&s->buf, data, n) == 0 ? 0 : -1;
}

bool bench_ndjson_next(struct bench_ndjson *s, json_t **root, size_t *end)
{
    while (s->next < s->buf.len) {
        const char *line = s->buf.ptr + s->next;
        const char *nl = memchr(line, '\n', s->buf.len - s->next);
        if (!nl)
            return false;
        size_t n = (size_t)(nl - line);
        s->next += n + 1;
        if (n == 0)
            continue;
        *root = json_loadb(line, n, 0, NULL);
        *end = s->next;
        return true;
    }
    return false;
}

void bench_ndjson_compact(struct bench_ndjson *s)
{
    if (s->next == 0)
        return;
    memmove(s->buf.ptr, s->buf.ptr + s->next, s->buf.len - s->next + 1);
    s->buf.len -= s->next;
    s->next = 0;
}

void bench_ndjson_dispose(struct bench_ndjson *s)
{
    sw_buf_dispose(&s->buf);
    s->next = 0;
}
