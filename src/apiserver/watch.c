/* watch: serves GET ...?watch=true as a stream of JSON events: initial state (resourceVersion
 * unset or 0, sendInitialEvents), catch-up from the store for revisions older than the cache,
 * then live events from the watch cache; selectors with ADDED/DELETED on transitions,
 * bookmarks, timeoutSeconds, 410 Expired as an ERROR event, Table rows for kubectl get -w. */
#include "apiserver/rest.h"

#include "apiserver/object.h"
#include "apiserver/selector.h"
#include "apiserver/watchcache.h"
#include "kinds/crd.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/metric.h"
#include "util/str.h"
#include "util/time.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define MAX_CATCHUP 100000                    /* events replayed from the store for one watch */
#define MAX_CATCHUP_BYTES (64u * 1024 * 1024) /* ... and their encoded size */
#define MAX_CATCHUPS 2 /* watches replaying at once: the reader pool stays free for requests */
#define BOOKMARK_MS 5000
#define FUTURE_WAIT_MS 3000 /* a watch from a revision ahead of the cache waits this long */
#define TAKE_BATCH 64
#define OUT_SOFT (256u * 1024)      /* produce() stops adding events past this much output */
#define OUT_MAX (64u * 1024 * 1024) /* hard cap: one event (at most ~3.5 MB) always fits */

typedef struct watcher {
    sw_api *api;
    const sw_kind *kind;
    char ns[256];
    bool has_ns;
    sw_selector *labels, *fields;
    sw_wcursor cur;
    int64_t progress; /* every event up to here has been considered */
    sw_buf out;       /* encoded bytes not yet handed to HTTP */
    size_t out_off;
    sw_kv_list initial; /* the initial state (ADDED events), sent first, a piece at a time */
    size_t initial_off;
    bool initial_end;    /* then the sendInitialEvents end bookmark */
    sw_wevent **backlog; /* catch-up events from the store, and ring events taken but not yet
                          * encoded (past OUT_SOFT), sent before the ring */
    size_t nbacklog, backlog_off, backlog_cap, backlog_bytes;
    bool backlog_over; /* the replay passed MAX_CATCHUP or MAX_CATCHUP_BYTES: 410 */
    bool bookmarks, table, headers_sent, ended;
    bool cut;        /* the output could not be produced whole: end the reply abnormally */
    bool filtered;   /* has a label or field selector */
    bool registered; /* counted in apiserver_registered_watchers */
    int64_t deadline_ms, next_bookmark_ms;
} watcher;

/* kube-apiserver's names */
static const sw_metric_desc m_watchers = {"apiserver_registered_watchers",
                                          "Number of currently registered watchers for a given "
                                          "resource.",
                                          SW_METRIC_GAUGE,
                                          {"group", "version", "kind"},
                                          NULL,
                                          0};
static const sw_metric_desc m_events = {"apiserver_watch_events_total",
                                        "Number of events sent in watch clients.",
                                        SW_METRIC_COUNTER,
                                        {"group", "version", "kind"},
                                        NULL,
                                        0};

static void count(const sw_metric_desc *d, const sw_kind *k, double v)
{
    const char *labels[] = {k->group, k->version, k->kind};
    sw_metric_add(d, labels, v);
}

static void watcher_free(void *state)
{
    watcher *w = state;
    if (w->registered)
        count(&m_watchers, w->kind, -1);
    sw_kind_release(w->kind);
    sw_selector_free(w->labels);
    sw_selector_free(w->fields);
    sw_buf_dispose(&w->out);
    sw_kv_list_dispose(&w->initial);
    for (size_t i = w->backlog_off; i < w->nbacklog; i++)
        sw_wevent_unref(w->backlog[i]);
    sw_free(w->backlog);
    sw_free(w);
}

static bool selected(const watcher *w, const json_t *obj)
{
    return obj && sw_selector_match_labels(w->labels, sw_json_at(obj, "metadata.labels")) &&
           sw_selector_match_fields(w->fields, obj);
}

static void emit(watcher *w, const char *type, const json_t *obj)
{
    if (w->table) {
        json_t *items = json_pack("[O]", obj);
        json_t *t = sw_table_build(w->kind, items, NULL, NULL, !w->headers_sent);
        w->headers_sent = true;
        json_t *ev = json_pack("{s:s, s:o}", "type", type, "object", t);
        sw_json_dump_buf(ev, &w->out);
        json_decref(ev);
        json_decref(items);
    } else {
        sw_buf_printf(&w->out, "{\"type\":\"%s\",\"object\":", type);
        sw_json_dump_buf(obj, &w->out);
        sw_buf_putc(&w->out, '}');
    }
    sw_buf_putc(&w->out, '\n');
    count(&m_events, w->kind, 1);
}

/* Whether an event of kind a is one for a watcher of kind b: the same kind, or two kinds of one
 * custom resource (another served version, or the same one registered again after its CRD
 * changed: the store keys are the same). */
static bool same_resource(const sw_kind *a, const sw_kind *b)
{
    return a == b || (a->dynamic && b->dynamic && !strcmp(a->group, b->group) &&
                      !strcmp(a->plural, b->plural));
}

/* Filters one event for this watcher; selector transitions become ADDED/DELETED. */
static void consider(watcher *w, sw_wevent *e)
{
    if (e->rev <= w->progress)
        return;
    w->progress = e->rev;
    if (!same_resource(e->kind, w->kind) || (w->has_ns && strcmp(e->ns, w->ns)))
        return;
    if (sw_wevent_render(w->api, e) < 0)
        return; /* logged by the renderer; every watcher skips it */
    const char *type = sw_wevent_type_name(e->type);
    bool shared = e->kind == w->kind; /* the shared line speaks the watcher's version */
    if (shared && !w->filtered && !w->table) {
        sw_buf_put(&w->out, e->line, e->len); /* the shared encoding, no decoding at all */
        return;
    }
    json_t *obj = sw_wevent_object(e), *prev = NULL;
    if (!shared && obj)
        sw_cr_normalize(w->kind, obj, NULL); /* read through the watcher's kind */
    bool now = selected(w, obj);
    if (w->filtered && e->type == SW_STORE_UPDATE) {
        prev = sw_wevent_prev(w->api, e);
        if (now != selected(w, prev))
            type = now ? "ADDED" : "DELETED";
        else if (!now)
            type = NULL;
    } else if (!now) {
        type = NULL;
    }
    if (type && shared && !w->table && !strcmp(type, sw_wevent_type_name(e->type)))
        sw_buf_put(&w->out, e->line, e->len);
    else if (type)
        emit(w, type, obj);
    json_decref(obj);
    json_decref(prev);
}

static void bookmark(watcher *w, bool initial_end)
{
    char av[400], rv[24];
    snprintf(rv, sizeof(rv), "%lld", (long long)w->progress);
    json_t *obj =
        json_pack("{s:s, s:s, s:{s:s}}", "kind", w->kind->kind, "apiVersion",
                  sw_kind_api_version(w->kind, av, sizeof(av)), "metadata", "resourceVersion", rv);
    if (initial_end)
        json_object_set_new(json_object_get(obj, "metadata"), "annotations",
                            json_pack("{s:s}", "k8s.io/initial-events-end", "true"));
    json_t *ev = json_pack("{s:s, s:o}", "type", "BOOKMARK", "object", obj);
    sw_json_dump_buf(ev, &w->out);
    sw_buf_putc(&w->out, '\n');
    json_decref(ev);
}

static void error_event(watcher *w, int code, const char *msg)
{
    json_t *st = sw_status_failure(code, msg, NULL, NULL);
    json_t *ev = json_pack("{s:s, s:o}", "type", "ERROR", "object", st);
    sw_json_dump_buf(ev, &w->out);
    sw_buf_putc(&w->out, '\n');
    json_decref(ev);
}

/* Keeps e (a reference the caller passes on) for a later produce(), after the backlog. */
static void backlog_push(watcher *w, sw_wevent *e)
{
    if (w->backlog_off == w->nbacklog)
        w->backlog_off = w->nbacklog = 0; /* drained: reuse the array from its start */
    if (w->nbacklog == w->backlog_cap) {
        w->backlog_cap = w->backlog_cap ? w->backlog_cap * 2 : 256;
        w->backlog = sw_realloc(w->backlog, w->backlog_cap * sizeof(*w->backlog));
    }
    w->backlog[w->nbacklog++] = e;
}

/* The next piece of the initial state as ADDED events (up to OUT_SOFT of output). */
static void produce_initial(watcher *w)
{
    for (; w->initial_off < w->initial.count && w->out.len < OUT_SOFT; w->initial_off++) {
        const sw_kv *kv = &w->initial.items[w->initial_off];
        json_t *obj = NULL;
        if (sw_api_decode(w->api, w->kind, kv->value, kv->value_len, kv->mod_rev, &obj) < 0) {
            sw_log(SW_LOG_ERROR, "watch of %s: %s does not decode: %s", w->kind->plural, kv->key,
                   sw_error_msg());
            w->cut = true;
            return;
        }
        if (selected(w, obj))
            emit(w, "ADDED", obj);
        json_decref(obj);
    }
    if (w->initial_off == w->initial.count) {
        sw_kv_list_dispose(&w->initial);
        w->initial = (sw_kv_list){0};
        w->initial_off = 0;
        if (w->initial_end)
            bookmark(w, true);
        w->initial_end = false;
    }
}

/* Produces more output (about OUT_SOFT at most, one event beyond it); false when the stream
 * should end after what is buffered. */
static bool produce(watcher *w)
{
    if (w->initial.count || w->initial_end) {
        produce_initial(w);
        return true;
    }
    if (w->backlog_off < w->nbacklog) {
        for (; w->backlog_off < w->nbacklog && w->out.len < OUT_SOFT; w->backlog_off++) {
            consider(w, w->backlog[w->backlog_off]);
            sw_wevent_unref(w->backlog[w->backlog_off]);
        }
        return true;
    }
    int64_t now = sw_time_mono_ms();
    if (now >= w->deadline_ms)
        return false;
    int64_t wait = w->deadline_ms - now;
    if (w->bookmarks && w->next_bookmark_ms - now < wait)
        wait = w->next_bookmark_ms - now > 0 ? w->next_bookmark_ms - now : 0;
    if (wait > 1000)
        wait = 1000;
    sw_wevent *evs[TAKE_BATCH];
    int n = sw_watchcache_take(w->api->cache, &w->cur, evs, TAKE_BATCH, (int)wait);
    if (n < 0) {
        if (n == SW_EGONE)
            sw_log(SW_LOG_INFO, "watch of %s closed: the client fell behind the watch cache",
                   w->kind->plural);
        return false;
    }
    for (int i = 0; i < n; i++) {
        if (w->out.len >= OUT_SOFT) {
            backlog_push(w, evs[i]); /* encoded by the next call, in order */
            continue;
        }
        consider(w, evs[i]);
        sw_wevent_unref(evs[i]);
    }
    if (w->bookmarks && sw_time_mono_ms() >= w->next_bookmark_ms) {
        bookmark(w, false);
        w->next_bookmark_ms = sw_time_mono_ms() + BOOKMARK_MS;
    }
    return true;
}

static long watcher_next(void *state, char *buf, size_t max)
{
    watcher *w = state;
    while (w->out_off >= w->out.len) {
        sw_buf_clear(&w->out);
        w->out_off = 0;
        if (w->ended || !produce(w)) {
            w->ended = true;
            if (w->out.len == 0)
                return -1;
        }
        if (w->cut || sw_buf_error(&w->out) < 0) {
            /* Never send part of an event or skip one: the client sees the reply cut and
             * watches again from the last resourceVersion it got. */
            sw_log(SW_LOG_WARN, "watch of %s cut: its output could not be produced whole",
                   w->kind->plural);
            return SW_STREAM_CUT;
        }
        if (w->out.len == 0)
            return 0;
    }
    size_t n = w->out.len - w->out_off;
    if (n > max)
        n = max;
    memcpy(buf, w->out.ptr + w->out_off, n);
    w->out_off += n;
    return (long)n;
}

static void catchup_cb(const sw_store_event *ev, void *payload)
{
    watcher *w = payload;
    if (ev->type == SW_STORE_GONE || w->backlog_over || w->nbacklog >= MAX_CATCHUP ||
        w->backlog_bytes > MAX_CATCHUP_BYTES) {
        w->backlog_over = true; /* checked by the caller; nbacklog stays the events held */
        return;
    }
    sw_wevent *e = sw_wevent_new(ev);
    if (!e)
        return;
    w->backlog_bytes += e->bytes;
    if (w->nbacklog == w->backlog_cap) {
        w->backlog_cap = w->backlog_cap ? w->backlog_cap * 2 : 256;
        w->backlog = sw_realloc(w->backlog, w->backlog_cap * sizeof(*w->backlog));
    }
    w->backlog[w->nbacklog++] = e;
}

/* At most MAX_CATCHUPS replays at once (each holds a pooled reader, then the write lock for
 * its tail): more watches from old revisions wait here instead of starving requests. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int running;
} g_catchups = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

static void catchup_enter(void)
{
    pthread_mutex_lock(&g_catchups.mu);
    while (g_catchups.running >= MAX_CATCHUPS)
        pthread_cond_wait(&g_catchups.cond, &g_catchups.mu);
    g_catchups.running++;
    pthread_mutex_unlock(&g_catchups.mu);
}

static void catchup_leave(void)
{
    pthread_mutex_lock(&g_catchups.mu);
    g_catchups.running--;
    pthread_cond_signal(&g_catchups.cond);
    pthread_mutex_unlock(&g_catchups.mu);
}

/* Events after rev that already left the ring come from the store's history: at most
 * MAX_CATCHUP of them and MAX_CATCHUP_BYTES encoded, else 410 (the client lists again). */
static int catch_up(watcher *w, int64_t rev)
{
    char prefix[SW_API_KEY_MAX];
    sw_store_watcher *sw = NULL;
    sw_api_key(w->kind, w->has_ns ? w->ns : NULL, NULL, prefix, sizeof(prefix));
    catchup_enter();
    int error = sw_store_watch(w->api->store, prefix, rev, catchup_cb, w, &sw);
    /* The backlog holds every event through `covered`; the ring continues after exactly that
     * revision (the head read any later could pass events that reached neither). */
    int64_t covered = sw_store_watch_cancel(w->api->store, sw);
    catchup_leave();
    if (error < 0)
        return error;
    if (w->backlog_over)
        return sw_error_set(SW_EGONE, "too old resource version: %lld", (long long)rev);
    int64_t last = w->nbacklog ? w->backlog[w->nbacklog - 1]->rev : rev;
    int64_t floor;
    if (last < covered)
        last = covered;
    error = sw_watchcache_seek(w->api->cache, last, &w->cur, &floor);
    return error < 0 ? sw_error_set(SW_EGONE, "too old resource version: %lld", (long long)rev) : 0;
}

/* resourceVersion unset or "0": the current state as ADDED events first. */
static int initial_state(watcher *w)
{
    char prefix[SW_API_KEY_MAX];
    sw_kv_list l = {0};
    sw_api_key(w->kind, w->has_ns ? w->ns : NULL, NULL, prefix, sizeof(prefix));
    sw_store_list_opts o = {.prefix = prefix};
    int error = sw_store_list(w->api->store, &o, &l);
    if (error == 0) {
        int64_t floor;
        w->progress = l.rev;
        if (sw_watchcache_seek(w->api->cache, l.rev, &w->cur, &floor) < 0)
            error = catch_up(w, l.rev);
    }
    if (error == 0) {
        w->initial = l; /* encoded by produce(), a piece at a time, before anything else */
        return 0;
    }
    sw_kv_list_dispose(&l);
    return error;
}

static int watcher_start(watcher *w, const sw_request *req)
{
    const char *rv = sw_req_query(req, "resourceVersion");
    const char *sie = sw_req_query(req, "sendInitialEvents");
    bool initial = false;
    int64_t rev = 0, floor;
    if (sie && sw_str_to_bool(sie, &initial) < 0)
        return sw_error_set(SW_EBADREQUEST, "sendInitialEvents: invalid boolean %s", sie);
    if (rv && *rv && (sw_str_to_i64(rv, &rev) < 0 || rev < 0))
        return sw_error_set(SW_EBADREQUEST, "resourceVersion: invalid value %.64s", rv);
    if (!rv || !*rv || rev == 0 || initial) {
        int error = initial_state(w);
        w->initial_end = error == 0 && initial && w->bookmarks;
        return error;
    }
    w->progress = rev;
    if (rev < sw_store_compacted_revision(w->api->store))
        return sw_error_set(SW_EGONE, "too old resource version: %lld (%lld)", (long long)rev,
                            (long long)sw_store_compacted_revision(w->api->store));
    /* A revision the server has not seen yet: wait for it a while (another server on the same
     * etcd may be ahead), then answer as kube-apiserver does (504, retry). */
    for (int i = 0; i < FUTURE_WAIT_MS / 50 && sw_store_current_revision(w->api->store) < rev; i++)
        sw_time_sleep_ms(50);
    int64_t cur = sw_store_current_revision(w->api->store);
    if (cur < rev)
        return sw_error_set(SW_ETIMEOUT, "Too large resource version: %lld, current: %lld",
                            (long long)rev, (long long)cur);
    if (sw_watchcache_seek(w->api->cache, rev, &w->cur, &floor) == 0)
        return 0;
    return catch_up(w, rev);
}

void sw_watch_serve(sw_api *api, const sw_request *req, const sw_route *rt, sw_response *resp)
{
    watcher *w = sw_calloc(1, sizeof(*w));
    const char *ts = sw_req_query(req, "timeoutSeconds");
    const char *bm = sw_req_query(req, "allowWatchBookmarks");
    int64_t timeout = 1800;
    w->api = api;
    w->kind = sw_kind_ref(rt->kind);
    w->has_ns = rt->has_ns;
    sw_strlcpy(w->ns, rt->ns, sizeof(w->ns));
    sw_buf_init(&w->out, OUT_MAX);
    w->table = sw_table_wanted(req);
    int error = sw_rest_parse_selectors(rt->kind, req, &w->labels, &w->fields);
    w->filtered = error == 0 && (!sw_selector_empty(w->labels) || !sw_selector_empty(w->fields));
    if (error == 0 && ts && *ts && (sw_str_to_i64(ts, &timeout) < 0 || timeout < 0))
        error = sw_error_set(SW_EBADREQUEST, "timeoutSeconds: invalid value %s", ts);
    if (error == 0 && bm && sw_str_to_bool(bm, &w->bookmarks) < 0)
        error = sw_error_set(SW_EBADREQUEST, "allowWatchBookmarks: invalid boolean %s", bm);
    if (timeout == 0 || timeout > 3600)
        timeout = timeout == 0 ? 1800 : 3600;
    w->deadline_ms = sw_time_mono_ms() + timeout * 1000;
    w->next_bookmark_ms = sw_time_mono_ms() + BOOKMARK_MS;
    if (error == 0)
        error = watcher_start(w, req);
    if (error == SW_EGONE) {
        /* As the apiserver does: 200, then one ERROR event carrying the 410 Status. */
        error_event(w, SW_EGONE, sw_error_msg());
        w->ended = true;
    } else if (error < 0) {
        sw_rest_fail(resp, error, rt);
        watcher_free(w);
        return;
    }
    w->registered = true;
    count(&m_watchers, w->kind, 1);
    resp->status = 200;
    resp->content_type =
        w->table ? "application/json;as=Table;v=v1;g=meta.k8s.io" : "application/json";
    resp->stream.next = watcher_next;
    resp->stream.free = watcher_free;
    resp->stream.state = w;
}
