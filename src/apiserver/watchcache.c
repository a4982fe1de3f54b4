/* watchcache: one store watch, a ring of shared pre-encoded events, and cursor-based readers
 * (see watchcache.h). */
#include "apiserver/watchcache.h"

#include "apiserver/object.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#define QUEUE_MAX_BYTES (256u * 1024 * 1024) /* store events waiting to be rendered */

/* A store event copied off the writer's thread, waiting for the dispatcher. */
typedef struct raw_event {
    struct raw_event *next;
    sw_store_event ev; /* strings point into the allocation after this struct */
} raw_event;

struct sw_watchcache {
    pthread_rwlock_t mu;   /* the ring: readers take events side by side, the dispatcher writes */
    _Atomic uint32_t wake; /* bumped (under mu, write) on every change; watchers futex-wait on it */
    pthread_mutex_t qmu;   /* the raw queue */
    pthread_cond_t qcond;
    pthread_cond_t qspace; /* the queue fell below QUEUE_MAX_BYTES (or the cache stops) */
    raw_event *qhead, *qtail;
    size_t qbytes; /* taken by the dispatcher's current batch or waiting in the queue */
    pthread_t dispatcher;
    bool dispatching;
    bool qstop;
    sw_api *api;
    sw_store_watcher *watch;
    sw_wevent **ring;
    size_t cap;
    uint64_t first_seq; /* oldest sequence still in the ring */
    uint64_t next_seq;  /* sequence the next event gets */
    int64_t floor_rev;  /* every event with rev > floor_rev is in the ring */
    int64_t last_rev;
    bool closing;
};

const char *sw_wevent_type_name(int type)
{
    return type == SW_STORE_CREATE ? "ADDED" : type == SW_STORE_DELETE ? "DELETED" : "MODIFIED";
}

static void key_namespace(const sw_kind *k, const char *key, char **ns_out)
{
    /* /<group>/<plural>/<ns>/<name> */
    const char *p = key;
    for (int i = 0; i < 2 && p; i++) /* p ends on the slash before <ns> */
        p = strchr(p + 1, '/');
    if (!k || !k->namespaced || !p) {
        *ns_out = sw_strdup("");
        return;
    }
    const char *end = strchr(p + 1, '/');
    *ns_out = end ? sw_strndup(p + 1, (size_t)(end - p - 1)) : sw_strdup("");
}

sw_wevent *sw_wevent_new(sw_api *api, const sw_store_event *ev)
{
    const sw_kind *k = sw_api_kind_of_key(ev->key);
    if (!k)
        return NULL;
    sw_buf b = SW_BUF_INIT(SIZE_MAX / 2);
    sw_buf_reserve(&b, ev->value_len + 128);
    sw_buf_printf(&b, "{\"type\":\"%s\",\"object\":", sw_wevent_type_name(ev->type));
    size_t off = b.len;
    if (sw_api_render(api, k, ev->key, ev->value, ev->value_len, ev->rev, &b) < 0) {
        /* a stored value that does not render: watchers miss this revision, so say so loudly */
        sw_log(SW_LOG_ERROR, "watch: revision %lld of %s cannot be rendered, watchers miss it: %s",
               (long long)ev->rev, ev->key, sw_error_msg());
        sw_buf_dispose(&b);
        return NULL;
    }
    sw_wevent *e = sw_calloc(1, sizeof(*e));
    e->refs = 1;
    e->type = ev->type;
    e->rev = ev->rev;
    e->prev_rev = ev->prev_rev;
    e->kind = k;
    if (ev->prev_value && ev->type == SW_STORE_UPDATE) {
        e->prev = sw_strndup(ev->prev_value, ev->prev_value_len);
        e->prev_len = ev->prev_value_len;
    }
    key_namespace(k, ev->key, &e->ns);
    e->obj_off = off;
    e->obj_len = b.len - off;
    sw_buf_puts(&b, "}\n");
    e->line = sw_buf_detach(&b, &e->len);
    return e;
}

json_t *sw_wevent_object(const sw_wevent *e)
{
    return json_loadb(e->line + e->obj_off, e->obj_len, 0, NULL);
}

json_t *sw_wevent_prev(sw_api *api, const sw_wevent *e)
{
    json_t *obj = NULL;
    if (e->prev)
        sw_api_decode(api, e->kind, e->prev, e->prev_len, e->prev_rev, &obj);
    return obj;
}

void sw_wevent_ref(sw_wevent *e)
{
    __atomic_add_fetch(&e->refs, 1, __ATOMIC_RELAXED);
}

void sw_wevent_unref(sw_wevent *e)
{
    if (!e || __atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    sw_free(e->prev);
    sw_free(e->ns);
    sw_free(e->line);
    sw_free(e);
}

/* Ends a change made under mu (write-locked): bumps the wake word, unlocks, wakes every
 * waiting watcher at once. A plain futex rather than a condition variable: the woken watchers
 * do not queue on a mutex to find out what changed, they take a shared read lock side by side. */
static void wake_all(sw_watchcache *c)
{
    atomic_fetch_add(&c->wake, 1);
    pthread_rwlock_unlock(&c->mu);
    syscall(SYS_futex, &c->wake, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Sleeps until the wake word moves from seen, or until the monotonic deadline. */
static void wait_change(sw_watchcache *c, uint32_t seen, const struct timespec *until)
{
    struct timespec now, left;
    clock_gettime(CLOCK_MONOTONIC, &now);
    left.tv_sec = until->tv_sec - now.tv_sec;
    left.tv_nsec = until->tv_nsec - now.tv_nsec;
    if (left.tv_nsec < 0) {
        left.tv_sec--;
        left.tv_nsec += 1000000000L;
    }
    if (left.tv_sec < 0)
        return;
    syscall(SYS_futex, &c->wake, FUTEX_WAIT_PRIVATE, seen, &left, NULL, 0);
}

/* Appends an encoded event to the ring (dispatcher thread, revision order). */
static void ring_push(sw_watchcache *c, int64_t rev, sw_wevent *e)
{
    pthread_rwlock_wrlock(&c->mu);
    c->last_rev = rev;
    if (e) {
        if (c->next_seq - c->first_seq == c->cap) {
            sw_wevent *old = c->ring[c->first_seq % c->cap];
            c->floor_rev = old->rev;
            sw_wevent_unref(old);
            c->first_seq++;
        }
        c->ring[c->next_seq % c->cap] = e;
        c->next_seq++;
    }
    wake_all(c);
}

static char *copy_in(char *dst, const char *src, size_t n, const char **out)
{
    if (!src) {
        *out = NULL;
        return dst;
    }
    memcpy(dst, src, n);
    dst[n] = '\0';
    *out = dst;
    return dst + n + 1;
}

/* Runs on the committing writer's thread, in revision order: copy the bytes and go. */
static void on_event(const sw_store_event *ev, void *payload)
{
    sw_watchcache *c = payload;
    size_t klen = strlen(ev->key), need = sizeof(raw_event) + klen + 1 + ev->value_len + 1 +
                                          (ev->prev_value ? ev->prev_value_len + 1 : 0);
    raw_event *r = sw_malloc(need);
    char *p = (char *)(r + 1);
    r->next = NULL;
    r->ev = *ev;
    p = copy_in(p, ev->key, klen, &r->ev.key);
    p = copy_in(p, ev->value, ev->value_len, &r->ev.value);
    copy_in(p, ev->prev_value, ev->prev_value_len, &r->ev.prev_value);
    pthread_mutex_lock(&c->qmu);
    /* Backpressure: if rendering falls this far behind the commits, the committing writer
     * waits here (the dispatcher never needs the store) instead of memory growing without end. */
    while (c->qbytes > QUEUE_MAX_BYTES && !c->qstop)
        pthread_cond_wait(&c->qspace, &c->qmu);
    c->qbytes += need;
    if (c->qtail) {
        c->qtail->next = r; /* the dispatcher is already awake for the earlier ones */
    } else {
        c->qhead = r;
        pthread_cond_signal(&c->qcond);
    }
    c->qtail = r;
    pthread_mutex_unlock(&c->qmu);
}

static void *dispatcher_main(void *arg)
{
    sw_watchcache *c = arg;
    pthread_mutex_lock(&c->qmu);
    for (;;) {
        while (!c->qhead && !c->qstop)
            pthread_cond_wait(&c->qcond, &c->qmu);
        raw_event *r = c->qhead;
        if (!r)
            break;
        c->qhead = c->qtail = NULL;
        c->qbytes = 0; /* this batch is bounded by the cap: writers may queue the next one */
        pthread_cond_broadcast(&c->qspace);
        pthread_mutex_unlock(&c->qmu);
        while (r) {
            raw_event *next = r->next;
            ring_push(c, r->ev.rev, sw_wevent_new(c->api, &r->ev));
            sw_free(r);
            r = next;
        }
        pthread_mutex_lock(&c->qmu);
    }
    pthread_mutex_unlock(&c->qmu);
    return NULL;
}

int sw_watchcache_new(sw_watchcache **out, sw_api *api, size_t ring_cap)
{
    sw_watchcache *c = sw_calloc(1, sizeof(*c));
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    /* the dispatcher must not wait behind a stream of watchers reading */
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&c->mu, &ra);
    pthread_rwlockattr_destroy(&ra);
    pthread_mutex_init(&c->qmu, NULL);
    pthread_cond_init(&c->qcond, NULL);
    pthread_cond_init(&c->qspace, NULL);
    c->api = api;
    c->cap = ring_cap;
    c->ring = sw_calloc(ring_cap, sizeof(*c->ring));
    c->floor_rev = c->last_rev = sw_store_current_revision(api->store);
    if (pthread_create(&c->dispatcher, NULL, dispatcher_main, c) != 0) {
        sw_watchcache_free(c);
        return sw_error_set(SW_ERROR, "cannot start the watch cache dispatcher");
    }
    c->dispatching = true;
    int error = sw_store_watch(api->store, "/", c->floor_rev, on_event, c, &c->watch);
    if (error < 0) {
        sw_watchcache_free(c);
        return error;
    }
    *out = c;
    return 0;
}

void sw_watchcache_close(sw_watchcache *c)
{
    pthread_rwlock_wrlock(&c->mu);
    c->closing = true;
    wake_all(c);
}

void sw_watchcache_free(sw_watchcache *c)
{
    if (!c)
        return;
    sw_store_watch_cancel(c->api->store, c->watch);
    if (c->dispatching) {
        pthread_mutex_lock(&c->qmu);
        c->qstop = true;
        pthread_cond_signal(&c->qcond);
        pthread_cond_broadcast(&c->qspace);
        pthread_mutex_unlock(&c->qmu);
        pthread_join(c->dispatcher, NULL); /* drains what was queued first */
    }
    for (uint64_t s = c->first_seq; s < c->next_seq; s++)
        sw_wevent_unref(c->ring[s % c->cap]);
    sw_free(c->ring);
    pthread_rwlock_destroy(&c->mu);
    pthread_cond_destroy(&c->qcond);
    pthread_cond_destroy(&c->qspace);
    pthread_mutex_destroy(&c->qmu);
    sw_free(c);
}

int sw_watchcache_seek(sw_watchcache *c, int64_t after_rev, sw_wcursor *cur, int64_t *floor_out)
{
    int error = 0;
    pthread_rwlock_rdlock(&c->mu);
    *floor_out = c->floor_rev;
    if (after_rev < c->floor_rev) {
        error = SW_EGONE;
    } else {
        uint64_t s = c->next_seq;
        while (s > c->first_seq && c->ring[(s - 1) % c->cap]->rev > after_rev)
            s--;
        cur->seq = s;
    }
    pthread_rwlock_unlock(&c->mu);
    return error;
}

int sw_watchcache_take(sw_watchcache *c, sw_wcursor *cur, sw_wevent **out, size_t max, int wait_ms)
{
    struct timespec until = sw_time_mono_deadline(wait_ms);
    int n = 0;
    for (;;) {
        pthread_rwlock_rdlock(&c->mu);
        bool ready = c->closing || cur->seq < c->next_seq || cur->seq < c->first_seq;
        uint32_t seen = atomic_load(&c->wake);
        if (ready)
            break;
        pthread_rwlock_unlock(&c->mu);
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > until.tv_sec ||
            (now.tv_sec == until.tv_sec && now.tv_nsec >= until.tv_nsec))
            return 0;
        wait_change(c, seen, &until);
    }
    if (c->closing) {
        n = SW_EUNAVAILABLE;
    } else if (cur->seq < c->first_seq) {
        n = SW_EGONE;
    } else {
        while (cur->seq < c->next_seq && (size_t)n < max) {
            sw_wevent *e = c->ring[cur->seq % c->cap];
            sw_wevent_ref(e);
            out[n++] = e;
            cur->seq++;
        }
    }
    pthread_rwlock_unlock(&c->mu);
    return n;
}

int64_t sw_watchcache_revision(sw_watchcache *c)
{
    pthread_rwlock_rdlock(&c->mu);
    int64_t r = c->last_rev;
    pthread_rwlock_unlock(&c->mu);
    return r;
}
