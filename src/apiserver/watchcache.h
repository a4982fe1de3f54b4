/* watchcache: the server's one store watch, fanned out to HTTP watchers. The committing writer
 * only copies each event's bytes onto a queue; a dispatcher thread encodes it to a JSON line
 * once, keeps it in a bounded ring and shares it by reference; a watcher that falls behind the
 * ring is closed (the client re-watches), never buffered. Events hold compact text, not decoded
 * trees, so the ring's memory stays near its byte size. */
#ifndef SW_WATCHCACHE_H
#define SW_WATCHCACHE_H

#include "apiserver/api.h"

#include <stdint.h>

typedef struct sw_wevent {
    int refs; /* atomic */
    int type; /* SW_STORE_CREATE / UPDATE / DELETE */
    int64_t rev;
    int64_t prev_rev;
    const sw_kind *kind;
    char *ns;     /* "" for cluster-scoped */
    char *line;   /* {"type":...,"object":...}\n, the shared encoding */
    size_t len;
    size_t obj_off, obj_len; /* the object's JSON inside line */
    char *prev;   /* the replaced version as stored (no resourceVersion), or NULL */
    size_t prev_len;
} sw_wevent;

/* Starts watching the store from its current revision. ring_cap events are kept. */
int sw_watchcache_new(sw_watchcache **out, sw_api *api, size_t ring_cap);
void sw_watchcache_free(sw_watchcache *c);
/* Wakes every watcher so it can end (server shutdown). */
void sw_watchcache_close(sw_watchcache *c);

/* Builds an event from a store event (also used for catch-up from the store). */
sw_wevent *sw_wevent_new(sw_api *api, const sw_store_event *ev);
/* The event's object and the version it replaced, decoded on demand (new references; prev is
 * NULL for creates). Only watchers with selectors or Table output need them. */
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
int sw_watchcache_take(sw_watchcache *c, sw_wcursor *cur, sw_wevent **out, size_t max,
                       int wait_ms);
/* Newest revision seen by the cache. */
int64_t sw_watchcache_revision(sw_watchcache *c);

#endif
