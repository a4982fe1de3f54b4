/* watchcache: the server's one store watch, fanned out to HTTP watchers. The committing writer
 * puts each event, as the stored bytes, into a bounded ring (no other thread, no encoding on
 * the write path); the first watcher that needs an event renders it to a JSON line once, and
 * every watcher shares that line by reference; a watcher that falls behind the ring is closed
 * (the client re-watches), never buffered. Events hold compact text, not decoded trees, so the
 * ring's memory stays near its byte size. */
#ifndef SW_WATCHCACHE_H
#define SW_WATCHCACHE_H

#include "apiserver/api.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

typedef struct sw_wevent {
    int refs; /* atomic */
    int type; /* SW_STORE_CREATE / UPDATE / DELETE */
    int64_t rev;
    int64_t prev_rev;
    const sw_kind *kind;
    char *ns;     /* "" for cluster-scoped */
    size_t bytes; /* what the event holds, for the callers' memory caps */
    char *prev;   /* the replaced version as stored (no resourceVersion), or NULL */
    size_t prev_len;
    /* Rendered by sw_wevent_render; read only after it returned 0. */
    char *line; /* {"type":...,"object":...}\n, the shared encoding */
    size_t len;
    size_t obj_off, obj_len; /* the object's JSON inside line */
    /* Private to watchcache.c. */
    _Atomic int state;  /* raw, rendered or failed */
    pthread_mutex_t mu; /* one renderer */
    char *key, *value;  /* the stored bytes, until rendered */
    size_t value_len;
} sw_wevent;

/* Starts watching the store after after_rev (0: its current revision); every event also goes
 * to api->nscache when there is one. The ring keeps at most ring_cap events holding at most
 * ring_bytes together (by sw_wevent.bytes, the stored value and the version it replaced: a
 * rendered line takes the value's place), and always the newest event. */
int sw_watchcache_new(sw_watchcache **out, sw_api *api, size_t ring_cap, size_t ring_bytes,
                      int64_t after_rev);
void sw_watchcache_free(sw_watchcache *c);
/* Wakes every watcher so it can end (server shutdown). */
void sw_watchcache_close(sw_watchcache *c);

/* An event from a store event (also used for catch-up from the store): copies of its bytes,
 * not rendered yet. NULL for a key of no kind. */
sw_wevent *sw_wevent_new(const sw_store_event *ev);
/* Renders e's line once (concurrent callers wait for the first); 0, or an error when the
 * stored value does not render (logged once; watchers skip the event). */
int sw_wevent_render(sw_api *api, sw_wevent *e);
/* The event's object and the version it replaced, decoded on demand (new references; prev is
 * NULL for creates). Only watchers with selectors or Table output need them. The object needs
 * a rendered event. */
json_t *sw_wevent_object(const sw_wevent *e);
json_t *sw_wevent_prev(sw_api *api, const sw_wevent *e);
void sw_wevent_ref(sw_wevent *e);
void sw_wevent_unref(sw_wevent *e);
const char *sw_wevent_type_name(int type);

/* Reader cursor into the ring. */
typedef struct sw_wcursor {
    uint64_t seq; /* next ring sequence to read */
} sw_wcursor;

/* Positions cur after `after_rev`. Returns SW_EGONE when events after after_rev have left
 * the ring (the caller must catch up from the store first, up to *floor_out). */
int sw_watchcache_seek(sw_watchcache *c, int64_t after_rev, sw_wcursor *cur, int64_t *floor_out);
/* Takes up to max events at cur (refs held; unref each), waiting up to wait_ms for the first.
 * Returns the count, or SW_EGONE if cur fell out of the ring, or SW_EUNAVAILABLE when closing. */
int sw_watchcache_take(sw_watchcache *c, sw_wcursor *cur, sw_wevent **out, size_t max, int wait_ms);
/* How many events the ring holds, and their bytes (for /metrics). */
void sw_watchcache_stats(sw_watchcache *c, int64_t *events, int64_t *bytes);
/* Newest revision seen by the cache. */
int64_t sw_watchcache_revision(sw_watchcache *c);

#endif
