/* metrics: request counters and histograms in a fixed table, rendered as Prometheus text
 * (see metrics.h). */
#include "apiserver/metrics.h"

#include "util/alloc.h"
#include "util/metric.h"
#include "util/str.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_SERIES 2048
#define SLOTS 4096 /* open addressing over the series, twice their number */

/* kube-apiserver's apiserver_request_duration_seconds buckets */
static const double bounds[] = {0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0,
                                3.0,   4.0,   5.0,  6.0, 8.0, 10,  15,  20,  30,  45,   60};
#define NB (sizeof(bounds) / sizeof(bounds[0]))

typedef struct series {
    char verb[24], group[64], resource[64], sub[32];
    int code;
    uint64_t count;
    uint64_t timed;      /* observations in the histogram (watches are not timed) */
    uint64_t bucket[NB]; /* per bucket, not cumulative */
    double sum;
} series;

struct sw_metrics {
    pthread_mutex_t mu;
    size_t n;
    series *s;     /* MAX_SERIES */
    int16_t *slot; /* SLOTS: index into s, -1 free */
    double start;  /* process_start_time_seconds */
};

static series *find(sw_metrics *m, const char *verb, const char *group, const char *resource,
                    const char *sub, int code);

sw_metrics *sw_metrics_new(void)
{
    sw_metrics *m = sw_calloc(1, sizeof(*m));
    pthread_mutex_init(&m->mu, NULL);
    m->s = sw_calloc(MAX_SERIES, sizeof(*m->s));
    m->slot = sw_malloc(SLOTS * sizeof(*m->slot));
    for (size_t i = 0; i < SLOTS; i++)
        m->slot[i] = -1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    m->start = (double)ts.tv_sec + ts.tv_nsec / 1e9;
    find(m, "other", "", "", "", 0); /* where requests count once the table is full */
    return m;
}

void sw_metrics_free(sw_metrics *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->mu);
    sw_free(m->s);
    sw_free(m->slot);
    sw_free(m);
}

static bool same(const series *e, const char *verb, const char *group, const char *resource,
                 const char *sub, int code)
{
    return e->code == code && !strcmp(e->verb, verb) && !strcmp(e->resource, resource) &&
           !strcmp(e->group, group) && !strcmp(e->sub, sub);
}

/* Under mu: the series of these labels, made when new; NULL when the table is full. */
static series *find(sw_metrics *m, const char *verb, const char *group, const char *resource,
                    const char *sub, int code)
{
    uint64_t h = SW_FNV1A_OFFSET;
    h = sw_fnv1a(h, verb, strlen(verb));
    h = sw_fnv1a(h, group, strlen(group));
    h = sw_fnv1a(h, resource, strlen(resource));
    h = sw_fnv1a(h, sub, strlen(sub));
    h = sw_fnv1a(h, &code, sizeof(code));
    for (size_t i = 0; i < SLOTS; i++) {
        size_t at = (h + i) % SLOTS;
        if (m->slot[at] < 0) {
            if (m->n == MAX_SERIES)
                return NULL;
            series *e = &m->s[m->n];
            sw_strlcpy(e->verb, verb, sizeof(e->verb));
            sw_strlcpy(e->group, group, sizeof(e->group));
            sw_strlcpy(e->resource, resource, sizeof(e->resource));
            sw_strlcpy(e->sub, sub, sizeof(e->sub));
            e->code = code;
            m->slot[at] = (int16_t)m->n++;
            return e;
        }
        series *e = &m->s[m->slot[at]];
        if (same(e, verb, group, resource, sub, code))
            return e;
    }
    return NULL;
}

void sw_metrics_request(sw_metrics *m, const char *verb, const char *group, const char *resource,
                        const char *subresource, int code, double seconds)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    series *e = find(m, verb, group, resource, subresource, code);
    if (!e)
        e = find(m, "other", "", "", "", 0);
    if (e) {
        e->count++;
        if (strcmp(verb, "watch")) {
            size_t b = 0;
            while (b < NB && seconds > bounds[b])
                b++;
            if (b < NB)
                e->bucket[b]++;
            e->timed++;
            e->sum += seconds;
        }
    }
    pthread_mutex_unlock(&m->mu);
}

static void labels(sw_buf *out, const series *e)
{
    sw_metric_label(out, "verb", e->verb, true);
    sw_metric_label(out, "group", e->group, false);
    sw_metric_label(out, "resource", e->resource, false);
    sw_metric_label(out, "subresource", e->sub, false);
}

static int by_labels(const void *a, const void *b)
{
    const series *x = a, *y = b;
    int c = strcmp(x->verb, y->verb);
    c = c ? c : strcmp(x->group, y->group);
    c = c ? c : strcmp(x->resource, y->resource);
    c = c ? c : strcmp(x->sub, y->sub);
    return c ? c : x->code - y->code;
}

static void process_metrics(const sw_metrics *m, sw_buf *out)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        char line[128];
        const char *p = fgets(line, sizeof(line), f) ? line : "";
        char *end;
        pages = strtol(p, &end, 10);
        rss = strtol(end, NULL, 10);
        fclose(f);
    }
    long pg = sysconf(_SC_PAGESIZE);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    long fds = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        for (struct dirent *e; (e = readdir(d));)
            fds += e->d_name[0] != '.';
        closedir(d);
        fds--; /* the directory's own descriptor */
    }
    sw_buf_printf(out,
                  "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
                  "# TYPE process_resident_memory_bytes gauge\n"
                  "process_resident_memory_bytes %ld\n"
                  "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
                  "# TYPE process_virtual_memory_bytes gauge\n"
                  "process_virtual_memory_bytes %ld\n"
                  "# HELP process_cpu_seconds_total Total user and system CPU time spent in "
                  "seconds.\n"
                  "# TYPE process_cpu_seconds_total counter\n"
                  "process_cpu_seconds_total %.3f\n"
                  "# HELP process_open_fds Number of open file descriptors.\n"
                  "# TYPE process_open_fds gauge\n"
                  "process_open_fds %ld\n"
                  "# HELP process_start_time_seconds Start time of the process since unix epoch "
                  "in seconds.\n"
                  "# TYPE process_start_time_seconds gauge\n"
                  "process_start_time_seconds %.3f\n",
                  rss * pg, pages * pg, cpu, fds, m->start);
}

void sw_metrics_render(sw_metrics *m, const sw_metrics_gauges *g, sw_buf *out)
{
    pthread_mutex_lock(&m->mu);
    size_t n = m->n;
    series *s = sw_malloc((n ? n : 1) * sizeof(*s));
    memcpy(s, m->s, n * sizeof(*s));
    pthread_mutex_unlock(&m->mu);
    qsort(s, n, sizeof(*s), by_labels);

    sw_buf_puts(out, "# HELP apiserver_request_total Counter of apiserver requests broken out "
                     "for each verb, API group, resource, subresource and HTTP response code.\n"
                     "# TYPE apiserver_request_total counter\n");
    for (size_t i = 0; i < n; i++) {
        sw_buf_puts(out, "apiserver_request_total{");
        labels(out, &s[i]);
        sw_buf_printf(out, ",code=\"%d\"} %llu\n", s[i].code, (unsigned long long)s[i].count);
    }
    sw_buf_puts(out, "# HELP apiserver_request_duration_seconds Response latency distribution "
                     "in seconds for each verb, API group, resource and subresource.\n"
                     "# TYPE apiserver_request_duration_seconds histogram\n");
    for (size_t i = 0; i < n;) {
        /* the series of one label set (all codes) are adjacent after the sort */
        uint64_t bucket[NB] = {0}, timed = 0;
        double sum = 0;
        size_t j = i;
        for (; j < n && !strcmp(s[j].verb, s[i].verb) && !strcmp(s[j].group, s[i].group) &&
               !strcmp(s[j].resource, s[i].resource) && !strcmp(s[j].sub, s[i].sub);
             j++) {
            for (size_t b = 0; b < NB; b++)
                bucket[b] += s[j].bucket[b];
            timed += s[j].timed;
            sum += s[j].sum;
        }
        if (timed) {
            uint64_t cum = 0;
            for (size_t b = 0; b < NB; b++) {
                cum += bucket[b];
                sw_buf_puts(out, "apiserver_request_duration_seconds_bucket{");
                labels(out, &s[i]);
                sw_buf_printf(out, ",le=\"%g\"} %llu\n", bounds[b], (unsigned long long)cum);
            }
            sw_buf_puts(out, "apiserver_request_duration_seconds_bucket{");
            labels(out, &s[i]);
            sw_buf_printf(out, ",le=\"+Inf\"} %llu\n", (unsigned long long)timed);
            sw_buf_puts(out, "apiserver_request_duration_seconds_sum{");
            labels(out, &s[i]);
            sw_buf_printf(out, "} %.6f\n", sum);
            sw_buf_puts(out, "apiserver_request_duration_seconds_count{");
            labels(out, &s[i]);
            sw_buf_printf(out, "} %llu\n", (unsigned long long)timed);
        }
        i = j;
    }
    sw_free(s);
    sw_buf_printf(out,
                  "# HELP apiserver_current_inflight_requests Requests being served.\n"
                  "# TYPE apiserver_current_inflight_requests gauge\n"
                  "apiserver_current_inflight_requests %lld\n"
                  "# HELP slipway_request_body_bytes Request body bytes held in memory.\n"
                  "# TYPE slipway_request_body_bytes gauge\n"
                  "slipway_request_body_bytes %lld\n"
                  "# HELP slipway_watch_cache_events Events in the watch cache.\n"
                  "# TYPE slipway_watch_cache_events gauge\n"
                  "slipway_watch_cache_events %lld\n"
                  "# HELP slipway_watch_cache_bytes Bytes the watch cache's events hold.\n"
                  "# TYPE slipway_watch_cache_bytes gauge\n"
                  "slipway_watch_cache_bytes %lld\n",
                  (long long)g->inflight, (long long)g->body_bytes, (long long)g->watch_events,
                  (long long)g->watch_bytes);
    if (g->wal_bytes >= 0)
        sw_buf_printf(out,
                      "# HELP slipway_store_wal_bytes Size of the SQLite store's write-ahead log.\n"
                      "# TYPE slipway_store_wal_bytes gauge\n"
                      "slipway_store_wal_bytes %lld\n",
                      (long long)g->wal_bytes);
    process_metrics(m, out);
    sw_metric_render(out); /* the store's, imports', builds', work queues' */
}
