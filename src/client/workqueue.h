/* workqueue: a rate-limited queue of string keys for controllers, with client-go's semantics:
 * a key queued twice is queued once, a key being processed is never handed to a second worker
 * (re-added meanwhile, it is queued again at done), delayed adds, and a rate limiter combining
 * per-key exponential backoff with an overall token bucket. See docs/internals/client.md. */
#ifndef SW_CLIENT_WORKQUEUE_H
#define SW_CLIENT_WORKQUEUE_H

#include <stddef.h>
#include <stdint.h>

typedef struct sw_workqueue sw_workqueue;

typedef struct sw_workqueue_opts {
    int64_t base_delay_ms; /* first per-key backoff; 0 means 5 ms */
    int64_t max_delay_ms;  /* per-key backoff cap; 0 means 1000 s */
    double qps;            /* overall token bucket refill rate; 0 means 10/s */
    int burst;             /* token bucket size; 0 means 100 */
    /* client-go's workqueue metrics under this name label (workqueue_depth, _adds_total,
     * _retries_total, _queue_duration_seconds, _work_duration_seconds); NULL: none. The
     * string must outlive the queue. */
    const char *name;
} sw_workqueue_opts;

/* opts may be NULL for the defaults (client-go's DefaultControllerRateLimiter). */
int sw_workqueue_new(sw_workqueue **out, const sw_workqueue_opts *opts);
/* Frees the queue; no thread may still be using it (call shutdown and join workers first). */
void sw_workqueue_free(sw_workqueue *q);

/* Queues key unless it is already queued (a key being processed is queued again at done).
 * Ignored after shutdown. */
void sw_workqueue_add(sw_workqueue *q, const char *key);
/* Queues key once delay_ms have passed; an earlier pending delay for the same key wins. */
void sw_workqueue_add_after(sw_workqueue *q, const char *key, int64_t delay_ms);
/* add_after(key, when(key)): the per-key backoff or the token bucket delay, whichever is longer. */
void sw_workqueue_add_rate_limited(sw_workqueue *q, const char *key);
/* The rate limiter alone: counts one more failure of key and returns the delay to wait (ms). */
int64_t sw_workqueue_when(sw_workqueue *q, const char *key);
/* Clears key's failure count (call after a successful reconcile). */
void sw_workqueue_forget(sw_workqueue *q, const char *key);
/* How many failures of key the limiter counts. */
int sw_workqueue_num_requeues(sw_workqueue *q, const char *key);

/* Blocks until a key is ready and marks it as being processed. *out is sw_malloc'd; pass it to
 * sw_workqueue_done, then sw_free it. After shutdown, keys already queued are still handed out;
 * once none is left, returns SW_EUNAVAILABLE. */
int sw_workqueue_get(sw_workqueue *q, char **out);
/* Ends processing of key; if it was added meanwhile it is queued again. */
void sw_workqueue_done(sw_workqueue *q, const char *key);
/* Keys ready to be handed out now (delayed keys whose time has come included). */
size_t sw_workqueue_len(sw_workqueue *q);
/* Stops accepting keys, drops delayed ones and wakes every blocked getter; keys already queued
 * are still handed out. */
void sw_workqueue_shutdown(sw_workqueue *q);
/* Shutdown that also drops the queued keys: getters return at once (a controller stopping with
 * thousands of keys queued does not work through them first). */
void sw_workqueue_discard(sw_workqueue *q);

#endif
