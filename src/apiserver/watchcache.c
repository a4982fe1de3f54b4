/* watchcache: one store watch, a ring of shared pre-encoded events, and cursor-based readers
 * (see watchcache.h). */
#include "apiserver/watchcache.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

struct sw_watchcache {
    pthread_mutex_t mu;
    pthread_cond_t cond;
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
    json_t *obj = NULL, *prev = NULL;
    if (!k || sw_api_decode(api, k, ev->value, ev->value_len, ev->rev, &obj) < 0)
        return NULL;
    if (ev->prev_value)
        sw_api_decode(api, k, ev->prev_value, ev->prev_value_len, ev->prev_rev, &prev);
    sw_wevent *e = sw_calloc(1, sizeof(*e));
    e->refs = 1;
    e->type = ev->type;
    e->rev = ev->rev;
    e->kind = k;
    e->obj = obj;
    e->prev = prev;
    key_namespace(k, ev->key, &e->ns);
    sw_buf b = SW_BUF_INIT(SIZE_MAX / 2);
    sw_buf_printf(&b, "{\"type\":\"%s\",\"object\":", sw_wevent_type_name(ev->type));
    sw_json_dump_buf(obj, &b);
    sw_buf_puts(&b, "}\n");
    e->line = sw_buf_detach(&b, &e->len);
    return e;
}

void sw_wevent_ref(sw_wevent *e)
{
    __atomic_add_fetch(&e->refs, 1, __ATOMIC_RELAXED);
}

void sw_wevent_unref(sw_wevent *e)
{
    if (!e || __atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    json_decref(e->obj);
    json_decref(e->prev);
    sw_free(e->ns);
    sw_free(e->line);
    sw_free(e);
}

/* Runs on the committing writer's thread, in revision order. */
static void on_event(const sw_store_event *ev, void *payload)
{
    sw_watchcache *c = payload;
    sw_wevent *e = sw_wevent_new(c->api, ev);
    pthread_mutex_lock(&c->mu);
    c->last_rev = ev->rev;
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
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->mu);
}

int sw_watchcache_new(sw_watchcache **out, sw_api *api, size_t ring_cap)
{
    sw_watchcache *c = sw_calloc(1, sizeof(*c));
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cond, &ca);
    pthread_condattr_destroy(&ca);
    c->api = api;
    c->cap = ring_cap;
    c->ring = sw_calloc(ring_cap, sizeof(*c->ring));
    c->floor_rev = c->last_rev = sw_store_current_revision(api->store);
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
    pthread_mutex_lock(&c->mu);
    c->closing = true;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->mu);
}

void sw_watchcache_free(sw_watchcache *c)
{
    if (!c)
        return;
    sw_store_watch_cancel(c->api->store, c->watch);
    for (uint64_t s = c->first_seq; s < c->next_seq; s++)
        sw_wevent_unref(c->ring[s % c->cap]);
    sw_free(c->ring);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->mu);
    sw_free(c);
}

int sw_watchcache_seek(sw_watchcache *c, int64_t after_rev, sw_wcursor *cur, int64_t *floor_out)
{
    int error = 0;
    pthread_mutex_lock(&c->mu);
    *floor_out = c->floor_rev;
    if (after_rev < c->floor_rev) {
        error = SW_EGONE;
    } else {
        uint64_t s = c->next_seq;
        while (s > c->first_seq && c->ring[(s - 1) % c->cap]->rev > after_rev)
            s--;
        cur->seq = s;
    }
    pthread_mutex_unlock(&c->mu);
    return error;
}

static void deadline_in(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

int sw_watchcache_take(sw_watchcache *c, sw_wcursor *cur, sw_wevent **out, size_t max,
                       int wait_ms)
{
    struct timespec until;
    int n = 0;
    deadline_in(&until, wait_ms);
    pthread_mutex_lock(&c->mu);
    while (!c->closing && cur->seq >= c->next_seq && cur->seq >= c->first_seq) {
        if (pthread_cond_timedwait(&c->cond, &c->mu, &until) == ETIMEDOUT)
            break;
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
    pthread_mutex_unlock(&c->mu);
    return n;
}

int64_t sw_watchcache_revision(sw_watchcache *c)
{
    pthread_mutex_lock(&c->mu);
    int64_t r = c->last_rev;
    pthread_mutex_unlock(&c->mu);
    return r;
}
