/* metric: process-wide Prometheus counters, gauges and histograms with labels, for the modules
 * below the API server (the store, registry imports, builds, work queues), rendered at the end
 * of /metrics. A metric is a static sw_metric_desc; its series are made on first use and found
 * by the desc's address and the label values. Recording takes one mutex and allocates only
 * for a new series; at most SW_METRIC_MAX_SERIES series are kept in all (later ones are
 * dropped and counted in slipway_metric_series_dropped_total). Thread-safe. */
#ifndef SW_METRIC_H
#define SW_METRIC_H

#include "util/buf.h"

#include <stdbool.h>
#include <stddef.h>

#define SW_METRIC_MAX_LABELS 3
#define SW_METRIC_MAX_SERIES 1024

enum { SW_METRIC_COUNTER = 0, SW_METRIC_GAUGE = 1, SW_METRIC_HISTOGRAM = 2 };

typedef struct sw_metric_desc {
    const char *name;
    const char *help;
    int type;                                     /* SW_METRIC_* */
    const char *labels[SW_METRIC_MAX_LABELS + 1]; /* label names, NULL after the last */
    const double *buckets;                        /* histograms: upper bounds, ascending */
    size_t nbuckets;
} sw_metric_desc;

/* Latency buckets in seconds for store commits and queue waits (client-go's workqueue ones,
 * 1 µs to 10 s, by tens) and for slower work (imports, builds: 0.1 s to 30 min). */
extern const double sw_metric_fast_buckets[];
extern const size_t sw_metric_fast_nbuckets;
extern const double sw_metric_slow_buckets[];
extern const size_t sw_metric_slow_nbuckets;

/* values: one per label of d, in order (NULL when d has none). */
void sw_metric_add(const sw_metric_desc *d, const char *const *values, double v); /* counter */
void sw_metric_set(const sw_metric_desc *d, const char *const *values, double v); /* gauge */
void sw_metric_observe(const sw_metric_desc *d, const char *const *values, double v);

/* Appends every metric recorded so far, in the text format (0.0.4), families by name. */
void sw_metric_render(sw_buf *out);
/* name="value" as the text format quotes it, after a comma unless first. */
void sw_metric_label(sw_buf *out, const char *name, const char *value, bool first);

#endif
