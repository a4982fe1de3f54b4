/* watchcache: one store watch, a ring of shared events rendered on first use, and cursor-based
 * readers (see watchcache.h). */
#include "apiserver/watchcache.h"

#include "apiserver/nscache.h"
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

enum { EV_RAW, EV_RENDERED, EV_FAILED };

struct sw_watchcache {
    pthread_rwlock_t mu;   /* the ring: readers take events side by side, the writer appends */
    _Atomic uint32_t wake; /* bumped (under mu, write) on every change; watchers futex-wait on it */
    _Atomic uint32_t sleepers; /* watchers in (or about to enter) that wait */
    sw_api *api;
    sw_store_watcher *watch;
    sw_wevent **ring;
    size_t cap;
    size_t max_bytes;   /* what the ring's events may hold together */
    size_t bytes;       /* what they hold (their sw_wevent.bytes) */
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

sw_wevent *sw_wevent_new(const sw_store_event *ev)
{
    const sw_kind *k = sw_api_kind_of_key(ev->key);
    if (!k)
        return NULL;
    sw_wevent *e = sw_calloc(1, sizeof(*e));
    e->refs = 1;
    e->type = ev->type;
    e->rev = ev->rev;
    e->prev_rev = ev->prev_rev;
    e->kind = k;
    e->key = sw_strdup(ev->key);
    e->value = sw_strndup(ev->value ? ev->value : "", ev->value_len);
    e->value_len = ev->value_len;
    if (ev->prev_value && ev->type == SW_STORE_UPDATE) {
        e->prev = sw_strndup(ev->prev_value, ev->prev_value_len);
        e->prev_len = ev->prev_value_len;
    }
    key_namespace(k, ev->key, &e->ns);
    e->bytes = sizeof(*e) + strlen(e->key) + e->value_len + e->prev_len + 128;
    atomic_init(&e->state, EV_RAW);
    pthread_mutex_init(&e->mu, NULL);
    return e;
}

/* Renders the stored bytes into the shared line (called once, under e->mu). */
static int render(sw_api *api, sw_wevent *e)
{
    sw_buf b = SW_BUF_INIT(SIZE_MAX / 2);
    sw_buf_reserve(&b, e->value_len + 128);
    sw_buf_printf(&b, "{\"type\":\"%s\",\"object\":", sw_wevent_type_name(e->type));
    size_t off = b.len;
    if (sw_api_render(api, e->kind, e->key, e->value, e->value_len, e->rev, &b) < 0) {
        /* a stored value that does not render: watchers miss this revision, so say so loudly */
        sw_log(SW_LOG_ERROR, "watch: revision %lld of %s cannot be rendered, watchers miss it: %s",
               (long long)e->rev, e->key, sw_error_msg());
        sw_buf_dispose(&b);
        return EV_FAILED;
    }
    e->obj_off = off;
    e->obj_len = b.len - off;
    sw_buf_puts(&b, "}\n");
    e->line = sw_buf_detach(&b, &e->len);
    sw_free(e->value); /* the line says it all now */
    e->value = NULL;
    return EV_RENDERED;
}

int sw_wevent_render(sw_api *api, sw_wevent *e)
{
    int st = atomic_load_explicit(&e->state, memory_order_acquire);
    if (st == EV_RAW) {
        pthread_mutex_lock(&e->mu);
        st = atomic_load_explicit(&e->state, memory_order_relaxed);
        if (st == EV_RAW) {
            st = render(api, e);
            atomic_store_explicit(&e->state, st, memory_order_release);
        }
        pthread_mutex_unlock(&e->mu);
    }
    return st == EV_RENDERED ? 0 : SW_EINVALID;
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
    pthread_mutex_destroy(&e->mu);
    sw_free(e->prev);
    sw_free(e->ns);
    sw_free(e->key);
    sw_free(e->value);
    sw_free(e->line);
    sw_kind_release(e->kind); /* the reference sw_api_kind_of_key took */
    sw_free(e);
}

/* Ends a change made under mu (write-locked): bumps the wake word, unlocks, wakes every
 * waiting watcher at once. A plain futex rather than a condition variable: the woken watchers
 * do not queue on a mutex to find out what changed, they take a shared read lock side by side.
 * No watcher waiting, no system call: a sleeper counts itself before it checks the word, the
 * writer bumps the word before it reads the count (both sequentially consistent), so either the
 * writer sees the sleeper or the sleeper sees the new word. */
static void wake_all(sw_watchcache *c)
{
    atomic_fetch_add(&c->wake, 1);
    pthread_rwlock_unlock(&c->mu);
    if (atomic_load(&c->sleepers) > 0)
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
    atomic_fetch_add(&c->sleepers, 1);
    if (atomic_load(&c->wake) == seen)
        syscall(SYS_futex, &c->wake, FUTEX_WAIT_PRIVATE, seen, &left, NULL, 0);
    atomic_fetch_sub(&c->sleepers, 1);
}

/* Appends an event to the ring (the committing writer's thread, revision order). */
static void ring_push(sw_watchcache *c, int64_t rev, sw_wevent *e)
{
    pthread_rwlock_wrlock(&c->mu);
    c->last_rev = rev;
    if (e) {
        /* the oldest events leave for the count, and for the bytes (the newest always stays) */
        while (c->next_seq > c->first_seq &&
               (c->next_seq - c->first_seq == c->cap || c->bytes + e->bytes > c->max_bytes)) {
            sw_wevent *old = c->ring[c->first_seq % c->cap];
            c->floor_rev = old->rev;
            c->bytes -= old->bytes;
            sw_wevent_unref(old);
            c->first_seq++;
        }
        c->bytes += e->bytes;
        c->ring[c->next_seq % c->cap] = e;
        c->next_seq++;
    }
    wake_all(c);
}

/* After SW_STORE_GONE the ring cannot be continued: every event leaves it, and a gap in the
 * sequence puts every cursor behind the ring, so each watcher ends with 410 and re-lists. */
static void ring_reset(sw_watchcache *c, int64_t rev)
{
    pthread_rwlock_wrlock(&c->mu);
    for (uint64_t s = c->first_seq; s < c->next_seq; s++)
        sw_wevent_unref(c->ring[s % c->cap]);
    c->bytes = 0;
    c->next_seq++;
    c->first_seq = c->next_seq;
    c->floor_rev = c->last_rev = rev;
    wake_all(c);
}

/* Runs on the committing writer's thread, in revision order: copy the bytes, append, go. */
static void on_event(const sw_store_event *ev, void *payload)
{
    sw_watchcache *c = payload;
    if (c->api->nscache)
        sw_nscache_event(c->api->nscache, ev);
    if (c->api->authz)
        sw_authz_event(c->api->authz, ev);
    if (ev->type == SW_STORE_GONE)
        ring_reset(c, ev->rev);
    else
        ring_push(c, ev->rev, sw_wevent_new(ev));
}

int sw_watchcache_new(sw_watchcache **out, sw_api *api, size_t ring_cap, size_t ring_bytes,
                      int64_t after_rev)
{
    sw_watchcache *c = sw_calloc(1, sizeof(*c));
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    /* the committing writer must not wait behind a stream of watchers reading */
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&c->mu, &ra);
    pthread_rwlockattr_destroy(&ra);
    c->api = api;
    c->cap = ring_cap;
    c->max_bytes = ring_bytes;
    c->ring = sw_calloc(ring_cap, sizeof(*c->ring));
    c->floor_rev = c->last_rev = after_rev > 0 ? after_rev : sw_store_current_revision(api->store);
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
    for (uint64_t s = c->first_seq; s < c->next_seq; s++)
        sw_wevent_unref(c->ring[s % c->cap]);
    sw_free(c->ring);
    pthread_rwlock_destroy(&c->mu);
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

void sw_watchcache_stats(sw_watchcache *c, int64_t *events, int64_t *bytes)
{
    pthread_rwlock_rdlock(&c->mu);
    *events = (int64_t)(c->next_seq - c->first_seq);
    *bytes = (int64_t)c->bytes;
    pthread_rwlock_unlock(&c->mu);
}
