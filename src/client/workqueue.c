/* workqueue: FIFO of keys with dirty/processing sets, a min-heap of delayed keys promoted by the
 * getters themselves (no timer thread), and the rate limiter (see workqueue.h). */
#include "client/workqueue.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/metric.h"
#include "util/time.h"

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct delayed {
    int64_t at_ms; /* monotonic time the key becomes ready */
    char *key;     /* owned */
} delayed;

static const sw_metric_desc m_depth = {
    "workqueue_depth", "Current depth of workqueue.", SW_METRIC_GAUGE, {"name"}, NULL, 0};
static const sw_metric_desc m_adds = {"workqueue_adds_total",
                                      "Total number of adds handled by workqueue.",
                                      SW_METRIC_COUNTER,
                                      {"name"},
                                      NULL,
                                      0};
static const sw_metric_desc m_retries = {"workqueue_retries_total",
                                         "Total number of retries handled by workqueue.",
                                         SW_METRIC_COUNTER,
                                         {"name"},
                                         NULL,
                                         0};
static const sw_metric_desc m_queue = {
    "workqueue_queue_duration_seconds",
    "How long in seconds an item stays in workqueue before being requested.",
    SW_METRIC_HISTOGRAM,
    {"name"},
    sw_metric_fast_buckets,
    8};
static const sw_metric_desc m_work = {"workqueue_work_duration_seconds",
                                      "How long in seconds processing an item from workqueue "
                                      "takes.",
                                      SW_METRIC_HISTOGRAM,
                                      {"name"},
                                      sw_metric_fast_buckets,
                                      8};

struct sw_workqueue {
    pthread_mutex_t mu;
    pthread_cond_t cond; /* CLOCK_MONOTONIC; signalled on add, broadcast on add_after/shutdown */
    char **ring;         /* FIFO of owned keys */
    size_t head, count, cap;
    json_t *dirty;      /* keys queued (or to be queued at done) -> when (monotonic s) */
    json_t *processing; /* keys handed out and not yet done -> since when */
    delayed *heap;      /* min-heap by at_ms */
    size_t nheap, capheap;
    json_t *waiting;   /* key -> earliest at_ms among its heap entries (others are stale) */
    json_t *failures;  /* key -> failure count */
    double tokens;     /* token bucket level (negative: reserved ahead) */
    int64_t bucket_ms; /* when tokens was last refilled */
    bool shutting_down;
    sw_workqueue_opts opts;
};

int sw_workqueue_new(sw_workqueue **out, const sw_workqueue_opts *opts)
{
    sw_workqueue *q = sw_calloc(1, sizeof(*q));
    pthread_mutex_init(&q->mu, NULL);
    sw_time_cond_init(&q->cond);
    if (opts)
        q->opts = *opts;
    if (q->opts.base_delay_ms <= 0)
        q->opts.base_delay_ms = 5;
    if (q->opts.max_delay_ms <= 0)
        q->opts.max_delay_ms = 1000 * 1000;
    if (q->opts.qps <= 0)
        q->opts.qps = 10;
    if (q->opts.burst <= 0)
        q->opts.burst = 100;
    q->dirty = json_object();
    q->processing = json_object();
    q->waiting = json_object();
    q->failures = json_object();
    q->tokens = q->opts.burst;
    q->bucket_ms = sw_time_mono_ms();
    *out = q;
    return 0;
}

static void clear_heap(sw_workqueue *q)
{
    for (size_t i = 0; i < q->nheap; i++)
        sw_free(q->heap[i].key);
    q->nheap = 0;
    json_object_clear(q->waiting);
}

void sw_workqueue_free(sw_workqueue *q)
{
    if (!q)
        return;
    for (size_t i = 0; i < q->count; i++)
        sw_free(q->ring[(q->head + i) % q->cap]);
    clear_heap(q);
    sw_free(q->ring);
    sw_free(q->heap);
    json_decref(q->dirty);
    json_decref(q->processing);
    json_decref(q->waiting);
    json_decref(q->failures);
    pthread_cond_destroy(&q->cond);
    pthread_mutex_destroy(&q->mu);
    sw_free(q);
}

/* ---- metrics (caller holds mu) ---- */

static void depth(sw_workqueue *q)
{
    const char *name[] = {q->opts.name};
    if (q->opts.name)
        sw_metric_set(&m_depth, name, (double)q->count);
}

/* Observes the time since the stamp set[key] holds into d. */
static void since(sw_workqueue *q, const sw_metric_desc *d, const json_t *set, const char *key)
{
    const char *name[] = {q->opts.name};
    const json_t *t = json_object_get(set, key);
    if (q->opts.name && json_is_real(t))
        sw_metric_observe(d, name, sw_time_mono_s() - json_real_value(t));
}

/* ---- FIFO ring (caller holds mu) ---- */

static void ring_push(sw_workqueue *q, char *key)
{
    if (q->count == q->cap) {
        size_t ncap = q->cap ? q->cap * 2 : 16, bytes;
        if (!sw_size_mul(&bytes, ncap, sizeof(char *)))
            abort();
        char **n = sw_malloc(bytes);
        for (size_t i = 0; i < q->count; i++)
            n[i] = q->ring[(q->head + i) % q->cap];
        sw_free(q->ring);
        q->ring = n;
        q->cap = ncap;
        q->head = 0;
    }
    q->ring[(q->head + q->count) % q->cap] = key;
    q->count++;
    depth(q);
}

static char *ring_pop(sw_workqueue *q)
{
    char *key = q->ring[q->head];
    q->head = (q->head + 1) % q->cap;
    q->count--;
    depth(q);
    return key;
}

static bool set_has(const json_t *set, const char *key)
{
    return json_object_get(set, key) != NULL;
}

/* The add logic with mu held. */
static void add_locked(sw_workqueue *q, const char *key)
{
    if (q->shutting_down || set_has(q->dirty, key))
        return;
    json_object_set_new_nocheck(q->dirty, key, json_real(sw_time_mono_s()));
    if (q->opts.name) {
        const char *name[] = {q->opts.name};
        sw_metric_add(&m_adds, name, 1);
    }
    if (set_has(q->processing, key))
        return;
    ring_push(q, sw_strdup(key));
    pthread_cond_signal(&q->cond);
}

void sw_workqueue_add(sw_workqueue *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    add_locked(q, key);
    pthread_mutex_unlock(&q->mu);
}

/* ---- delayed keys: a binary min-heap by at_ms (caller holds mu) ---- */

static void heap_swap(delayed *h, size_t a, size_t b)
{
    delayed t = h[a];
    h[a] = h[b];
    h[b] = t;
}

static void heap_push(sw_workqueue *q, int64_t at_ms, const char *key)
{
    if (q->nheap == q->capheap) {
        size_t bytes;
        q->capheap = q->capheap ? q->capheap * 2 : 16;
        if (!sw_size_mul(&bytes, q->capheap, sizeof(delayed)))
            abort();
        q->heap = sw_realloc(q->heap, bytes);
    }
    size_t i = q->nheap++;
    q->heap[i] = (delayed){at_ms, sw_strdup(key)};
    while (i > 0 && q->heap[(i - 1) / 2].at_ms > q->heap[i].at_ms) {
        heap_swap(q->heap, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static delayed heap_pop(sw_workqueue *q)
{
    delayed top = q->heap[0];
    q->heap[0] = q->heap[--q->nheap];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < q->nheap && q->heap[l].at_ms < q->heap[m].at_ms)
            m = l;
        if (r < q->nheap && q->heap[r].at_ms < q->heap[m].at_ms)
            m = r;
        if (m == i)
            break;
        heap_swap(q->heap, i, m);
        i = m;
    }
    return top;
}

/* Moves every delayed key whose time has come into the FIFO. An entry fires only if it still is
 * its key's earliest schedule; superseded entries are dropped. */
static void promote_due(sw_workqueue *q, int64_t now)
{
    while (q->nheap && q->heap[0].at_ms <= now) {
        delayed d = heap_pop(q);
        json_t *at = json_object_get(q->waiting, d.key);
        if (at && json_integer_value(at) == d.at_ms) {
            json_object_del(q->waiting, d.key);
            add_locked(q, d.key);
        }
        sw_free(d.key);
    }
}

void sw_workqueue_add_after(sw_workqueue *q, const char *key, int64_t delay_ms)
{
    if (delay_ms <= 0) {
        sw_workqueue_add(q, key);
        return;
    }
    int64_t at_ms = sw_time_mono_ms() + delay_ms;
    pthread_mutex_lock(&q->mu);
    json_t *cur = json_object_get(q->waiting, key);
    if (!q->shutting_down && (!cur || json_integer_value(cur) > at_ms)) {
        json_object_set_new_nocheck(q->waiting, key, json_integer(at_ms));
        heap_push(q, at_ms, key);
        pthread_cond_broadcast(&q->cond); /* getters recompute how long to sleep */
    }
    pthread_mutex_unlock(&q->mu);
}

/* ---- rate limiter ---- */

static int64_t backoff_ms(const sw_workqueue_opts *o, int64_t failures)
{
    int64_t d = o->base_delay_ms;
    for (int64_t i = 0; i < failures && d < o->max_delay_ms; i++)
        d = d > o->max_delay_ms / 2 ? o->max_delay_ms : d * 2;
    return d < o->max_delay_ms ? d : o->max_delay_ms;
}

/* Takes one token, reserving ahead when the bucket is empty; returns the wait for it (ms). */
static int64_t bucket_take(sw_workqueue *q, int64_t now)
{
    q->tokens += (double)(now - q->bucket_ms) * q->opts.qps / 1000.0;
    if (q->tokens > q->opts.burst)
        q->tokens = q->opts.burst;
    q->bucket_ms = now;
    q->tokens -= 1.0;
    if (q->tokens >= 0)
        return 0;
    return (int64_t)(-q->tokens * 1000.0 / q->opts.qps + 0.999);
}

int64_t sw_workqueue_when(sw_workqueue *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    json_int_t n = json_integer_value(json_object_get(q->failures, key));
    json_object_set_new_nocheck(q->failures, key, json_integer(n + 1));
    int64_t per_key = backoff_ms(&q->opts, n);
    int64_t bucket = bucket_take(q, sw_time_mono_ms());
    pthread_mutex_unlock(&q->mu);
    return per_key > bucket ? per_key : bucket;
}

void sw_workqueue_add_rate_limited(sw_workqueue *q, const char *key)
{
    if (q->opts.name) {
        const char *name[] = {q->opts.name};
        sw_metric_add(&m_retries, name, 1);
    }
    sw_workqueue_add_after(q, key, sw_workqueue_when(q, key));
}

void sw_workqueue_forget(sw_workqueue *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    json_object_del(q->failures, key);
    pthread_mutex_unlock(&q->mu);
}

int sw_workqueue_num_requeues(sw_workqueue *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    json_int_t n = json_integer_value(json_object_get(q->failures, key));
    pthread_mutex_unlock(&q->mu);
    return (int)n;
}

/* ---- consumers ---- */

static void wait_until(sw_workqueue *q, int64_t at_ms)
{
    int64_t delta = at_ms - sw_time_mono_ms();
    if (delta <= 0)
        return;
    struct timespec ts = sw_time_mono_deadline(delta);
    pthread_cond_timedwait(&q->cond, &q->mu, &ts);
}

int sw_workqueue_get(sw_workqueue *q, char **out)
{
    pthread_mutex_lock(&q->mu);
    for (;;) {
        promote_due(q, sw_time_mono_ms());
        if (q->count || q->shutting_down)
            break;
        if (q->nheap)
            wait_until(q, q->heap[0].at_ms);
        else
            pthread_cond_wait(&q->cond, &q->mu);
    }
    if (!q->count) {
        pthread_mutex_unlock(&q->mu);
        return sw_error_set(SW_EUNAVAILABLE, "work queue is shut down");
    }
    char *key = ring_pop(q);
    since(q, &m_queue, q->dirty, key);
    json_object_del(q->dirty, key);
    json_object_set_new_nocheck(q->processing, key, json_real(sw_time_mono_s()));
    pthread_mutex_unlock(&q->mu);
    *out = key;
    return 0;
}

void sw_workqueue_done(sw_workqueue *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    since(q, &m_work, q->processing, key);
    json_object_del(q->processing, key);
    if (set_has(q->dirty, key)) {
        ring_push(q, sw_strdup(key));
        pthread_cond_signal(&q->cond);
    }
    pthread_mutex_unlock(&q->mu);
}

size_t sw_workqueue_len(sw_workqueue *q)
{
    pthread_mutex_lock(&q->mu);
    if (!q->shutting_down)
        promote_due(q, sw_time_mono_ms());
    size_t n = q->count;
    pthread_mutex_unlock(&q->mu);
    return n;
}

static void shut_down(sw_workqueue *q, bool discard)
{
    pthread_mutex_lock(&q->mu);
    q->shutting_down = true;
    clear_heap(q);
    while (discard && q->count)
        sw_free(ring_pop(q));
    if (discard)
        json_object_clear(q->dirty);
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->mu);
}

void sw_workqueue_shutdown(sw_workqueue *q)
{
    shut_down(q, false);
}

void sw_workqueue_discard(sw_workqueue *q)
{
    shut_down(q, true);
}
