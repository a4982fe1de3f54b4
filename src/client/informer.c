/* informer: the reflector loop (list, watch, re-watch, re-list with backoff) on one thread,
 * the cache as a jansson object keyed by namespace/name, diffing after a re-list, and resync
 * driven by the watch's tick (see informer.h and docs/internals/client.md). */
#include "client/informer.h"

#include "client/watch.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#define SHORT_WATCH_MS 1000 /* a watch ending this fast with no event counts as a failure */

typedef struct inf_index {
    char *name;
    sw_index_fn fn;
    json_t *map; /* value -> {key: true} */
} inf_index;

struct sw_informer {
    sw_client *c;
    sw_resource res; /* strings owned below */
    char *group, *version, *plural;
    char *ns, *label_selector, *field_selector;
    sw_informer_opts opts;
    sw_informer_handlers h[SW_INFORMER_MAX_HANDLERS]; /* fixed before start */
    int nh;
    pthread_mutex_t mu;  /* guards cache writes, rv, synced, stopping */
    pthread_cond_t cond; /* CLOCK_MONOTONIC: synced, stopping */
    json_t *cache;       /* key -> object; written only by the informer thread */
    char *rv;            /* resourceVersion to watch from */
    bool synced, stopping, started;
    sw_watch *watch; /* cancelled by stop */
    pthread_t thread;
    int64_t next_resync_ms;
    int events;                             /* events seen by the current watch */
    inf_index idx[SW_INFORMER_MAX_INDEXES]; /* fixed before start; maps guarded by mu */
    int nidx;
};

static char *dup_or_null(const char *s)
{
    return s && *s ? sw_strdup(s) : NULL;
}

int sw_informer_new(sw_informer **out, sw_client *c, const sw_resource *r,
                    const sw_informer_opts *opts, const sw_informer_handlers *h)
{
    sw_informer *inf = sw_calloc(1, sizeof(*inf));
    inf->c = c;
    inf->group = sw_strdup(r->group ? r->group : "");
    inf->version = sw_strdup(r->version);
    inf->plural = sw_strdup(r->plural);
    inf->res = (sw_resource){inf->group, inf->version, inf->plural, r->namespaced};
    if (opts)
        inf->opts = *opts;
    inf->ns = dup_or_null(inf->opts.ns);
    inf->label_selector = dup_or_null(inf->opts.label_selector);
    inf->field_selector = dup_or_null(inf->opts.field_selector);
    if (inf->opts.backoff_initial_ms <= 0)
        inf->opts.backoff_initial_ms = 200;
    if (inf->opts.backoff_max_ms <= 0)
        inf->opts.backoff_max_ms = 30000;
    if (h)
        inf->h[inf->nh++] = *h;
    pthread_mutex_init(&inf->mu, NULL);
    sw_time_cond_init(&inf->cond);
    inf->cache = json_object();
    inf->rv = sw_strdup("");
    sw_watch_new(&inf->watch);
    *out = inf;
    return 0;
}

void sw_informer_free(sw_informer *inf)
{
    if (!inf)
        return;
    sw_informer_stop(inf);
    sw_watch_free(inf->watch);
    json_decref(inf->cache);
    for (int i = 0; i < inf->nidx; i++) {
        sw_free(inf->idx[i].name);
        json_decref(inf->idx[i].map);
    }
    pthread_cond_destroy(&inf->cond);
    pthread_mutex_destroy(&inf->mu);
    sw_free(inf->group);
    sw_free(inf->version);
    sw_free(inf->plural);
    sw_free(inf->ns);
    sw_free(inf->label_selector);
    sw_free(inf->field_selector);
    sw_free(inf->rv);
    sw_free(inf);
}

char *sw_informer_key(const json_t *obj)
{
    const char *name = sw_json_str_at(obj, "metadata.name");
    const char *ns = sw_json_str_at(obj, "metadata.namespace");
    if (!name || !*name)
        return NULL;
    if (!ns || !*ns)
        return sw_strdup(name);
    size_t nl = strlen(ns), n = strlen(name), total;
    if (!sw_size_add(&total, nl, n) || !sw_size_add(&total, total, 2))
        return NULL;
    char *k = sw_malloc(total);
    memcpy(k, ns, nl);
    k[nl] = '/';
    memcpy(k + nl + 1, name, n + 1);
    return k;
}

/* ---- state shared with readers ---- */

static bool is_stopping(sw_informer *inf)
{
    pthread_mutex_lock(&inf->mu);
    bool s = inf->stopping;
    pthread_mutex_unlock(&inf->mu);
    return s;
}

static void set_rv(sw_informer *inf, const char *rv)
{
    if (!rv || !*rv)
        return;
    char *copy = sw_strdup(rv);
    pthread_mutex_lock(&inf->mu);
    sw_free(inf->rv);
    inf->rv = copy;
    pthread_mutex_unlock(&inf->mu);
}

/* Sleeps ms unless stop is called meanwhile. */
static void sleep_unless_stopped(sw_informer *inf, int ms)
{
    struct timespec ts = sw_time_mono_deadline(ms);
    pthread_mutex_lock(&inf->mu);
    while (!inf->stopping && pthread_cond_timedwait(&inf->cond, &inf->mu, &ts) == 0)
        ;
    pthread_mutex_unlock(&inf->mu);
}

/* ---- indexes (under mu) ---- */

static void index_update(sw_informer *inf, const char *key, const json_t *old, const json_t *obj)
{
    for (int i = 0; i < inf->nidx; i++) {
        inf_index *x = &inf->idx[i];
        json_t *vals = old ? x->fn(old) : NULL, *v;
        size_t j;
        json_array_foreach(vals, j, v)
        {
            json_t *set = json_object_get(x->map, json_string_value(v));
            json_object_del(set, key);
            if (set && !json_object_size(set))
                json_object_del(x->map, json_string_value(v));
        }
        json_decref(vals);
        vals = obj ? x->fn(obj) : NULL;
        json_array_foreach(vals, j, v)
        {
            const char *val = json_string_value(v);
            if (!val)
                continue;
            json_t *set = json_object_get(x->map, val);
            if (!set) {
                set = json_object();
                json_object_set_new(x->map, val, set);
            }
            json_object_set_new(set, key, json_true());
        }
        json_decref(vals);
    }
}

int sw_informer_add_index(sw_informer *inf, const char *name, sw_index_fn fn)
{
    pthread_mutex_lock(&inf->mu);
    bool late = inf->started || inf->stopping;
    pthread_mutex_unlock(&inf->mu);
    if (late)
        return sw_error_set(SW_EINVALID, "informer %s: index added after start", inf->plural);
    if (inf->nidx == SW_INFORMER_MAX_INDEXES)
        return sw_error_set(SW_ELIMIT, "informer %s: more than %d indexes", inf->plural,
                            SW_INFORMER_MAX_INDEXES);
    inf->idx[inf->nidx++] = (inf_index){sw_strdup(name), fn, json_object()};
    return 0;
}

json_t *sw_informer_by_index(sw_informer *inf, const char *name, const char *value)
{
    json_t *out = json_array(), *v;
    const char *key;
    pthread_mutex_lock(&inf->mu);
    for (int i = 0; i < inf->nidx; i++) {
        if (strcmp(inf->idx[i].name, name))
            continue;
        json_object_foreach(json_object_get(inf->idx[i].map, value), key, v)
        {
            json_t *o = json_object_get(inf->cache, key);
            if (o)
                json_array_append(out, o);
        }
    }
    pthread_mutex_unlock(&inf->mu);
    return out;
}

json_t *sw_index_owner_uids(const json_t *obj)
{
    json_t *out = json_array(), *ref;
    size_t i;
    json_array_foreach(sw_json_at(obj, "metadata.ownerReferences"), i, ref)
    {
        const char *uid = sw_json_str_at(ref, "uid");
        if (uid && *uid)
            json_array_append_new(out, json_string(uid));
    }
    return out;
}

/* ---- delivery ---- */

static void deliver_add(sw_informer *inf, json_t *obj)
{
    for (int i = 0; i < inf->nh; i++)
        if (inf->h[i].on_add)
            inf->h[i].on_add(obj, inf->h[i].payload);
}

static void deliver_update(sw_informer *inf, json_t *old, json_t *obj)
{
    for (int i = 0; i < inf->nh; i++)
        if (inf->h[i].on_update)
            inf->h[i].on_update(old, obj, inf->h[i].payload);
}

static void deliver_delete(sw_informer *inf, json_t *obj)
{
    for (int i = 0; i < inf->nh; i++)
        if (inf->h[i].on_delete)
            inf->h[i].on_delete(obj, inf->h[i].payload);
}

static void deliver_synced(sw_informer *inf)
{
    for (int i = 0; i < inf->nh; i++)
        if (inf->h[i].on_synced)
            inf->h[i].on_synced(inf->h[i].payload);
}

static void deliver_list_start(sw_informer *inf)
{
    for (int i = 0; i < inf->nh; i++)
        if (inf->h[i].on_list_start)
            inf->h[i].on_list_start(inf->h[i].payload);
}

/* Stores obj under its key and delivers add or update. */
static void apply_upsert(sw_informer *inf, json_t *obj)
{
    char *key = sw_informer_key(obj);
    if (!key)
        return;
    json_t *old = NULL;
    if (!inf->opts.lean) {
        pthread_mutex_lock(&inf->mu);
        old = json_incref(json_object_get(inf->cache, key));
        json_object_set(inf->cache, key, obj);
        index_update(inf, key, old, obj);
        pthread_mutex_unlock(&inf->mu);
    }
    if (old)
        deliver_update(inf, old, obj);
    else
        deliver_add(inf, obj);
    json_decref(old);
    sw_free(key);
}

static void apply_delete(sw_informer *inf, json_t *obj)
{
    char *key = sw_informer_key(obj);
    if (!key)
        return;
    pthread_mutex_lock(&inf->mu);
    index_update(inf, key, json_object_get(inf->cache, key), NULL);
    json_object_del(inf->cache, key);
    pthread_mutex_unlock(&inf->mu);
    deliver_delete(inf, obj);
    sw_free(key);
}

static void resync(sw_informer *inf)
{
    json_t *all = sw_informer_list(inf);
    size_t i;
    json_t *o;
    json_array_foreach(all, i, o)
    {
        if (is_stopping(inf))
            break;
        deliver_update(inf, o, o);
    }
    json_decref(all);
}

static void resync_if_due(sw_informer *inf)
{
    if (inf->opts.resync_ms <= 0 || sw_time_mono_ms() < inf->next_resync_ms)
        return;
    resync(inf);
    inf->next_resync_ms = sw_time_mono_ms() + inf->opts.resync_ms;
}

/* ---- list ---- */

/* Gives list items the kind and apiVersion some servers leave out of list items. */
static void fill_kind(json_t *list, json_t *item)
{
    const char *lk = sw_json_str_at(list, "kind"), *av = sw_json_str_at(list, "apiVersion");
    if (!json_object_get(item, "kind") && lk && sw_str_suffix(lk, "List") && strlen(lk) > 4)
        json_object_set_new(item, "kind", json_stringn(lk, strlen(lk) - 4));
    if (!json_object_get(item, "apiVersion") && av)
        json_object_set_new(item, "apiVersion", json_string(av));
}

/* Swaps in the listed state and delivers the differences from the previous cache. */
static void replace_cache(sw_informer *inf, json_t *list)
{
    json_t *fresh = json_object(), *item, *old, *o;
    const char *key;
    size_t i;
    json_array_foreach(json_object_get(list, "items"), i, item)
    {
        char *k = sw_informer_key(item);
        if (!k)
            continue;
        fill_kind(list, item);
        json_object_set(fresh, k, item);
        sw_free(k);
    }
    pthread_mutex_lock(&inf->mu);
    old = inf->cache;
    inf->cache = fresh;
    for (int x = 0; x < inf->nidx; x++) {
        json_decref(inf->idx[x].map);
        inf->idx[x].map = json_object();
    }
    json_object_foreach(fresh, key, item) index_update(inf, key, NULL, item);
    inf->synced = true;
    pthread_cond_broadcast(&inf->cond);
    pthread_mutex_unlock(&inf->mu);
    /* Only this thread writes the cache, so reading it here without the lock is safe. */
    json_object_foreach(fresh, key, item)
    {
        o = json_object_get(old, key);
        if (!o)
            deliver_add(inf, item);
        else if (!sw_str_eq(sw_json_str_at(o, "metadata.resourceVersion"),
                            sw_json_str_at(item, "metadata.resourceVersion")))
            deliver_update(inf, o, item);
    }
    json_object_foreach(old, key, o)
    {
        if (!json_object_get(fresh, key))
            deliver_delete(inf, o);
    }
    json_decref(old);
    deliver_synced(inf);
}

static int lean_item(const json_t *page, json_t *item, void *payload)
{
    sw_informer *inf = payload;
    if (is_stopping(inf))
        return sw_error_set(SW_EUNAVAILABLE, "informer %s: stopping", inf->plural);
    if (!item) {
        deliver_list_start(inf); /* the list starts again from the top */
        return 0;
    }
    fill_kind((json_t *)page, item);
    deliver_add(inf, item);
    return 0;
}

/* A lean informer's list: page by page to on_add, then on_synced. */
static int relist_lean(sw_informer *inf, const sw_list_opts *lo)
{
    char rv[128] = "";
    deliver_list_start(inf);
    int error = sw_client_list_each(inf->c, &inf->res, inf->ns, lo, lean_item, inf, rv, sizeof(rv));
    if (error < 0)
        return error;
    if (!rv[0])
        return sw_error_set(SW_ERROR, "list of %s has no resourceVersion", inf->plural);
    set_rv(inf, rv);
    pthread_mutex_lock(&inf->mu);
    inf->synced = true;
    pthread_cond_broadcast(&inf->cond);
    pthread_mutex_unlock(&inf->mu);
    deliver_synced(inf);
    return 0;
}

static int relist(sw_informer *inf)
{
    sw_list_opts lo = {.label_selector = inf->label_selector,
                       .field_selector = inf->field_selector};
    json_t *list = NULL;
    if (inf->opts.lean)
        return relist_lean(inf, &lo);
    int error = sw_client_list_opts(inf->c, &inf->res, inf->ns, &lo, &list);
    if (error < 0)
        return error;
    const char *rv = sw_json_str_at(list, "metadata.resourceVersion");
    if (!rv || !*rv) {
        json_decref(list);
        return sw_error_set(SW_ERROR, "list of %s has no resourceVersion", inf->plural);
    }
    set_rv(inf, rv);
    deliver_list_start(inf);
    replace_cache(inf, list);
    json_decref(list);
    if (inf->opts.resync_ms > 0 && !inf->next_resync_ms)
        inf->next_resync_ms = sw_time_mono_ms() + inf->opts.resync_ms;
    return 0;
}

/* ---- watch ---- */

static int on_event(sw_watch_type t, json_t *obj, void *payload)
{
    sw_informer *inf = payload;
    inf->events++;
    set_rv(inf, sw_json_str_at(obj, "metadata.resourceVersion"));
    if (t == SW_WATCH_ADDED || t == SW_WATCH_MODIFIED)
        apply_upsert(inf, obj);
    else if (t == SW_WATCH_DELETED)
        apply_delete(inf, obj);
    resync_if_due(inf);
    return 0;
}

static int on_tick(void *payload)
{
    resync_if_due(payload);
    return 0;
}

static int watch_once(sw_informer *inf)
{
    char rv[128];
    sw_informer_resource_version(inf, rv, sizeof(rv));
    sw_watch_opts wo = {.resource_version = rv,
                        .label_selector = inf->label_selector,
                        .field_selector = inf->field_selector,
                        .timeout_seconds = inf->opts.watch_timeout_s};
    if (inf->opts.resync_ms > 0) {
        wo.on_tick = on_tick;
        wo.tick_ms = inf->opts.resync_ms < 1000 ? inf->opts.resync_ms : 1000;
    }
    inf->events = 0;
    return sw_watch_run(inf->watch, inf->c, &inf->res, inf->ns, &wo, on_event, inf);
}

static void *informer_main(void *arg)
{
    sw_informer *inf = arg;
    bool need_list = true;
    int backoff = inf->opts.backoff_initial_ms, error = 0;
    while (!is_stopping(inf)) {
        if (need_list && (error = relist(inf)) < 0) {
            sw_log(SW_LOG_WARN, "informer %s: list failed (retrying in %d ms): %s", inf->plural,
                   backoff, sw_error_msg());
        } else {
            need_list = false;
            backoff = inf->opts.backoff_initial_ms;
            int64_t t0 = sw_time_mono_ms();
            error = watch_once(inf);
            if (is_stopping(inf))
                break;
            if (error == 0 && (inf->events > 0 || sw_time_mono_ms() - t0 >= SHORT_WATCH_MS))
                continue; /* the server ended the watch: watch again from the last RV */
            need_list = true;
            if (error == SW_EGONE) {
                sw_log(SW_LOG_DEBUG, "informer %s: %s; re-listing", inf->plural, sw_error_msg());
                continue; /* too old: re-list at once */
            }
            sw_log(SW_LOG_INFO, "informer %s: watch ended (re-listing in %d ms): %s", inf->plural,
                   backoff, error < 0 ? sw_error_msg() : "very short watch");
        }
        sleep_unless_stopped(inf, backoff);
        backoff = backoff > inf->opts.backoff_max_ms / 2 ? inf->opts.backoff_max_ms : backoff * 2;
        resync_if_due(inf);
    }
    return NULL;
}

int sw_informer_add_handlers(sw_informer *inf, const sw_informer_handlers *h)
{
    pthread_mutex_lock(&inf->mu);
    bool late = inf->started || inf->stopping;
    pthread_mutex_unlock(&inf->mu);
    if (late)
        return sw_error_set(SW_EINVALID, "informer %s: handlers added after start", inf->plural);
    if (inf->nh == SW_INFORMER_MAX_HANDLERS)
        return sw_error_set(SW_ELIMIT, "informer %s: more than %d handler sets", inf->plural,
                            SW_INFORMER_MAX_HANDLERS);
    inf->h[inf->nh++] = *h;
    return 0;
}

int sw_informer_start(sw_informer *inf)
{
    pthread_mutex_lock(&inf->mu);
    bool again = inf->started || inf->stopping;
    inf->started = true;
    pthread_mutex_unlock(&inf->mu);
    if (again)
        return sw_error_set(SW_EINVALID, "informer %s: already started", inf->plural);
    if (pthread_create(&inf->thread, NULL, informer_main, inf) != 0) {
        pthread_mutex_lock(&inf->mu);
        inf->started = false;
        pthread_mutex_unlock(&inf->mu);
        return sw_error_set(SW_ERROR, "informer %s: cannot start its thread", inf->plural);
    }
    return 0;
}

void sw_informer_stop(sw_informer *inf)
{
    pthread_mutex_lock(&inf->mu);
    bool join = inf->started && !inf->stopping;
    inf->stopping = true;
    pthread_cond_broadcast(&inf->cond);
    pthread_mutex_unlock(&inf->mu);
    sw_watch_cancel(inf->watch);
    if (join)
        pthread_join(inf->thread, NULL);
}

/* ---- readers ---- */

bool sw_informer_has_synced(sw_informer *inf)
{
    pthread_mutex_lock(&inf->mu);
    bool s = inf->synced;
    pthread_mutex_unlock(&inf->mu);
    return s;
}

int sw_informer_wait_synced(sw_informer *inf, int timeout_ms)
{
    int64_t deadline = sw_time_mono_ms() + timeout_ms;
    pthread_mutex_lock(&inf->mu);
    while (!inf->synced && !inf->stopping && sw_time_mono_ms() < deadline) {
        struct timespec ts = sw_time_mono_deadline(20); /* short slices: simple deadline maths */
        pthread_cond_timedwait(&inf->cond, &inf->mu, &ts);
    }
    bool s = inf->synced;
    pthread_mutex_unlock(&inf->mu);
    return s ? 0
             : sw_error_set(SW_ETIMEOUT, "informer %s: not synced after %d ms", inf->plural,
                            timeout_ms);
}

json_t *sw_informer_get(sw_informer *inf, const char *key)
{
    pthread_mutex_lock(&inf->mu);
    json_t *o = json_incref(json_object_get(inf->cache, key));
    pthread_mutex_unlock(&inf->mu);
    return o;
}

json_t *sw_informer_list(sw_informer *inf)
{
    json_t *all = json_array(), *o;
    const char *key;
    pthread_mutex_lock(&inf->mu);
    json_object_foreach(inf->cache, key, o) json_array_append(all, o);
    pthread_mutex_unlock(&inf->mu);
    return all;
}

size_t sw_informer_size(sw_informer *inf)
{
    pthread_mutex_lock(&inf->mu);
    size_t n = json_object_size(inf->cache);
    pthread_mutex_unlock(&inf->mu);
    return n;
}

void sw_informer_resource_version(sw_informer *inf, char *out, size_t n)
{
    pthread_mutex_lock(&inf->mu);
    sw_strlcpy(out, inf->rv, n);
    pthread_mutex_unlock(&inf->mu);
}
