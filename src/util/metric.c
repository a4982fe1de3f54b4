/* metric: the process-wide registry of labelled series (see metric.h). Series are kept in one
 * array in creation order, found through an open-addressing table keyed by the desc's address
 * and the label values; rendering copies them under the mutex and prints them sorted. */
#include "util/metric.h"

#include "util/alloc.h"
#include "util/str.h"

#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS (2 * SW_METRIC_MAX_SERIES)
#define MAX_VALUE 128 /* bytes of a label value kept */
#define MAX_BUCKETS 16

const double sw_metric_fast_buckets[] = {1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1, 10};
const size_t sw_metric_fast_nbuckets = 8;
const double sw_metric_slow_buckets[] = {0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800};
const size_t sw_metric_slow_nbuckets = 12;

typedef struct series {
    const sw_metric_desc *d;
    char values[SW_METRIC_MAX_LABELS][MAX_VALUE];
    double value;                 /* counter, gauge; histogram: the sum */
    uint64_t count;               /* histogram observations */
    uint64_t bucket[MAX_BUCKETS]; /* per bucket, not cumulative */
} series;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static series *all; /* SW_METRIC_MAX_SERIES, made on first use */
static int16_t slot[SLOTS];
static size_t nseries;
static uint64_t dropped;

static size_t nlabels(const sw_metric_desc *d)
{
    size_t n = 0;
    while (n < SW_METRIC_MAX_LABELS && d->labels[n])
        n++;
    return n;
}

static bool same(const series *s, const sw_metric_desc *d, const char *const *values, size_t n)
{
    if (s->d != d)
        return false;
    for (size_t i = 0; i < n; i++)
        if (strncmp(s->values[i], values[i] ? values[i] : "", MAX_VALUE - 1))
            return false;
    return true;
}

/* Under mu: the series of d and values, made when new; NULL when the table is full. */
static series *find(const sw_metric_desc *d, const char *const *values)
{
    if (!all) {
        all = sw_calloc(SW_METRIC_MAX_SERIES, sizeof(*all));
        for (size_t i = 0; i < SLOTS; i++)
            slot[i] = -1;
    }
    size_t n = nlabels(d);
    uint64_t h = SW_FNV1A_OFFSET;
    h = sw_fnv1a(h, &d, sizeof(d));
    for (size_t i = 0; i < n; i++) {
        const char *v = values[i] ? values[i] : "";
        size_t len = strlen(v);
        h = sw_fnv1a(h, v, len < MAX_VALUE - 1 ? len : MAX_VALUE - 1);
    }
    for (size_t i = 0; i < SLOTS; i++) {
        size_t at = (h + i) % SLOTS;
        if (slot[at] < 0) {
            if (nseries == SW_METRIC_MAX_SERIES) {
                dropped++;
                return NULL;
            }
            series *s = &all[nseries];
            s->d = d;
            for (size_t k = 0; k < n; k++)
                sw_strlcpy(s->values[k], values[k] ? values[k] : "", MAX_VALUE);
            slot[at] = (int16_t)nseries++;
            return s;
        }
        if (same(&all[slot[at]], d, values, n))
            return &all[slot[at]];
    }
    dropped++;
    return NULL;
}

void sw_metric_add(const sw_metric_desc *d, const char *const *values, double v)
{
    pthread_mutex_lock(&mu);
    series *s = find(d, values);
    if (s)
        s->value += v;
    pthread_mutex_unlock(&mu);
}

void sw_metric_set(const sw_metric_desc *d, const char *const *values, double v)
{
    pthread_mutex_lock(&mu);
    series *s = find(d, values);
    if (s)
        s->value = v;
    pthread_mutex_unlock(&mu);
}

void sw_metric_observe(const sw_metric_desc *d, const char *const *values, double v)
{
    size_t nb = d->nbuckets < MAX_BUCKETS ? d->nbuckets : MAX_BUCKETS, b = 0;
    while (b < nb && v > d->buckets[b])
        b++;
    pthread_mutex_lock(&mu);
    series *s = find(d, values);
    if (s) {
        if (b < nb)
            s->bucket[b]++;
        s->count++;
        s->value += v;
    }
    pthread_mutex_unlock(&mu);
}

void sw_metric_label(sw_buf *out, const char *name, const char *v, bool first)
{
    sw_buf_printf(out, "%s%s=\"", first ? "" : ",", name);
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            sw_buf_putc(out, '\\');
        if (*v == '\n')
            sw_buf_puts(out, "\\n");
        else
            sw_buf_putc(out, *v);
    }
    sw_buf_putc(out, '"');
}

static int by_name(const void *a, const void *b)
{
    const series *x = a, *y = b;
    int c = strcmp(x->d->name, y->d->name);
    for (size_t i = 0; !c && i < SW_METRIC_MAX_LABELS; i++)
        c = strcmp(x->values[i], y->values[i]);
    return c;
}

/* name{labels[,extra]} */
static void series_name(sw_buf *out, const series *s, const char *suffix, const char *le)
{
    size_t n = nlabels(s->d);
    sw_buf_printf(out, "%s%s", s->d->name, suffix);
    if (!n && !le)
        return;
    sw_buf_putc(out, '{');
    for (size_t i = 0; i < n; i++)
        sw_metric_label(out, s->d->labels[i], s->values[i], i == 0);
    if (le)
        sw_metric_label(out, "le", le, n == 0);
    sw_buf_putc(out, '}');
}

void sw_metric_render(sw_buf *out)
{
    static const char *const types[] = {"counter", "gauge", "histogram"};
    pthread_mutex_lock(&mu);
    size_t n = nseries;
    uint64_t lost = dropped;
    series *s = sw_malloc((n ? n : 1) * sizeof(*s));
    if (n)
        memcpy(s, all, n * sizeof(*s));
    pthread_mutex_unlock(&mu);
    qsort(s, n, sizeof(*s), by_name);
    for (size_t i = 0; i < n; i++) {
        const sw_metric_desc *d = s[i].d;
        if (i == 0 || s[i - 1].d != d)
            sw_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", d->name, d->help, d->name,
                          types[d->type]);
        if (d->type != SW_METRIC_HISTOGRAM) {
            series_name(out, &s[i], "", NULL);
            sw_buf_printf(out, " %.17g\n", s[i].value);
            continue;
        }
        uint64_t cum = 0;
        size_t nb = d->nbuckets < MAX_BUCKETS ? d->nbuckets : MAX_BUCKETS;
        for (size_t b = 0; b < nb; b++) {
            char le[32];
            cum += s[i].bucket[b];
            snprintf(le, sizeof(le), "%g", d->buckets[b]);
            series_name(out, &s[i], "_bucket", le);
            sw_buf_printf(out, " %llu\n", (unsigned long long)cum);
        }
        series_name(out, &s[i], "_bucket", "+Inf");
        sw_buf_printf(out, " %llu\n", (unsigned long long)s[i].count);
        series_name(out, &s[i], "_sum", NULL);
        sw_buf_printf(out, " %.9g\n", s[i].value);
        series_name(out, &s[i], "_count", NULL);
        sw_buf_printf(out, " %llu\n", (unsigned long long)s[i].count);
    }
    sw_free(s);
    sw_buf_printf(out,
                  "# HELP slipway_metric_series_dropped_total Series not kept: the table of %d "
                  "was full.\n# TYPE slipway_metric_series_dropped_total counter\n"
                  "slipway_metric_series_dropped_total %llu\n",
                  SW_METRIC_MAX_SERIES, (unsigned long long)lost);
}
