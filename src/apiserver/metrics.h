/* metrics: the server's Prometheus metrics, served at /metrics in the text exposition format
 * (version 0.0.4) under kube-apiserver's names: apiserver_request_total{verb, group, resource,
 * subresource, code}, apiserver_request_duration_seconds{verb, group, resource, subresource}
 * (a histogram with kube-apiserver's buckets; watches are counted, not timed), the gauges the
 * caller passes (requests in flight, request body bytes held, watch cache events and bytes)
 * and process_resident_memory_bytes, process_cpu_seconds_total, process_open_fds,
 * process_start_time_seconds, then util/metric.h's (store writes and compactions, imports,
 * builds, work queues). Recording takes one mutex and no allocation once a series
 * exists; at most MAX_SERIES series are kept (later ones count under verb "other").
 * Thread-safe. */
#ifndef SW_METRICS_H
#define SW_METRICS_H

#include "util/buf.h"

#include <stdint.h>

typedef struct sw_metrics sw_metrics;

typedef struct sw_metrics_gauges {
    int64_t inflight;     /* requests begun and not answered */
    int64_t body_bytes;   /* request bodies held in memory */
    int64_t watch_events; /* events in the watch cache's ring */
    int64_t watch_bytes;  /* what they hold */
    int64_t wal_bytes;    /* the SQLite store's WAL file, or -1 (etcd) */
} sw_metrics_gauges;

sw_metrics *sw_metrics_new(void);
void sw_metrics_free(sw_metrics *m);

/* One answered request. verb is Kubernetes' (get, list, watch, create, update, patch, delete,
 * deletecollection) or the lower-cased HTTP method for paths that are not resources; group,
 * resource and subresource may be "" (never NULL). */
void sw_metrics_request(sw_metrics *m, const char *verb, const char *group, const char *resource,
                        const char *subresource, int code, double seconds);

/* Appends the exposition text to out. */
void sw_metrics_render(sw_metrics *m, const sw_metrics_gauges *g, sw_buf *out);

#endif
