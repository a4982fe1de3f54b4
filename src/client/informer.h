/* informer: list + watch of one resource into a local cache keyed "namespace/name" (or "name"
 * for cluster-scoped objects), like client-go's shared informer. It lists, watches from the
 * list's resourceVersion, re-watches when a watch ends, re-lists (with backoff) after 410 Gone
 * or a failed stream and delivers only the differences, follows bookmarks, and resyncs
 * periodically. Handlers run on the informer's own thread. See docs/internals/client.md. */
#ifndef SW_CLIENT_INFORMER_H
#define SW_CLIENT_INFORMER_H

#include "client/rest.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct sw_informer sw_informer;

/* Handlers get borrowed objects (json_incref to keep them). Cached objects are shared with
 * every reader and must never be modified: json_deep_copy before changing one. Any handler may
 * be NULL. A handler may call sw_informer_get/list but not stop or free the informer. */
typedef struct sw_informer_handlers {
    void (*on_add)(json_t *obj, void *payload);
    /* Also called at resync with old == obj. */
    void (*on_update)(json_t *old, json_t *obj, void *payload);
    /* obj is the last state known (from the DELETED event, or the cache after a re-list). */
    void (*on_delete)(json_t *obj, void *payload);
    void *payload;
    /* After every (re)list has been delivered. A lean informer's consumer drops here what it
     * kept of objects the list no longer held (see sw_informer_opts.lean). */
    void (*on_synced)(void *payload);
    /* Before a (re)list's first object is delivered (a lean consumer starts a new generation). */
    void (*on_list_start)(void *payload);
} sw_informer_handlers;

typedef struct sw_informer_opts {
    const char *ns;             /* NULL: all namespaces */
    const char *label_selector; /* or NULL */
    const char *field_selector; /* or NULL */
    int resync_ms;              /* re-deliver every cached object as an update; 0: never */
    int watch_timeout_s;        /* per watch request; 0: 300 */
    int backoff_initial_ms;     /* first retry delay after a failure; 0: 200 */
    int backoff_max_ms;         /* retry delay cap; 0: 30000 */
    /* No cache, for a consumer that keeps its own compact state (the garbage collector's
     * graph): lists are read page by page; every object listed (a re-list's included) or
     * added or modified by the watch goes to on_add, each deletion to on_delete, and on_synced
     * follows every list. get, list, size and indexes are empty. */
    bool lean;
} sw_informer_opts;

#define SW_INFORMER_MAX_HANDLERS 4

/* Copies r, opts and handlers (h may be NULL); c must outlive the informer. Nothing runs until
 * start. */
int sw_informer_new(sw_informer **out, sw_client *c, const sw_resource *r,
                    const sw_informer_opts *opts, const sw_informer_handlers *h);
/* Shares one informer (one watch, one cache) among several consumers, like client-go's
 * SharedInformer: each handler set gets every event, in the order they were added. Only before
 * start; at most SW_INFORMER_MAX_HANDLERS sets. */
int sw_informer_add_handlers(sw_informer *inf, const sw_informer_handlers *h);
/* Starts the informer's thread. */
int sw_informer_start(sw_informer *inf);
/* Stops the thread (cancelling its watch) and waits for it; the cache stays readable. */
void sw_informer_stop(sw_informer *inf);
/* Stops if needed, then frees. */
void sw_informer_free(sw_informer *inf);

/* True once the first list has been applied to the cache. */
bool sw_informer_has_synced(sw_informer *inf);
/* Waits up to timeout_ms for has_synced; returns 0 or SW_ETIMEOUT. */
int sw_informer_wait_synced(sw_informer *inf, int timeout_ms);

/* The cached object for key as a new reference, or NULL. Thread-safe. */
json_t *sw_informer_get(sw_informer *inf, const char *key);
/* A new array holding (references to) every cached object. Thread-safe. */
json_t *sw_informer_list(sw_informer *inf);
size_t sw_informer_size(sw_informer *inf);
/* The resourceVersion the next watch starts from (copied into out), "" before the first list. */
void sw_informer_resource_version(sw_informer *inf, char *out, size_t n);

/* An index function: the index values of obj (a new array of strings; NULL or empty for
 * none). Runs under the informer's lock: it must only read obj. */
typedef json_t *(*sw_index_fn)(const json_t *obj);

#define SW_INFORMER_MAX_INDEXES 4

/* Adds an index (client-go's Indexer), only before start: objects are findable by every value
 * fn gives them. SW_ELIMIT past SW_INFORMER_MAX_INDEXES. */
int sw_informer_add_index(sw_informer *inf, const char *name, sw_index_fn fn);
/* The cached objects whose index name holds value: a new array of references (empty for an
 * unknown index or value). Thread-safe. */
json_t *sw_informer_by_index(sw_informer *inf, const char *name, const char *value);
/* Index functions shared by controllers: the uids of metadata.ownerReferences. */
json_t *sw_index_owner_uids(const json_t *obj);

/* client-go's MetaNamespaceKeyFunc: "ns/name", or "name" without a namespace. sw_malloc'd,
 * NULL when the object has no metadata.name. */
char *sw_informer_key(const json_t *obj);

#endif
