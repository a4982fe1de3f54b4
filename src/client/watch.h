/* watch: one Kubernetes watch stream (GET ...?watch=1&resourceVersion=RV&allowWatchBookmarks=
 * true&timeoutSeconds=N): newline-delimited JSON events, each handed to a callback on the
 * calling thread. Lines are bounded; an ERROR event becomes an error code (410 -> SW_EGONE).
 * See docs/internals/client.md. */
#ifndef SW_CLIENT_WATCH_H
#define SW_CLIENT_WATCH_H

#include "client/rest.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define SW_WATCH_MAX_LINE (8u << 20) /* bytes of one event */

typedef struct sw_watch sw_watch;

/* Event types, as sent on the wire. */
typedef enum sw_watch_type {
    SW_WATCH_ADDED,
    SW_WATCH_MODIFIED,
    SW_WATCH_DELETED,
    SW_WATCH_BOOKMARK,
} sw_watch_type;

/* Gets one event; obj is borrowed (json_incref to keep it). Returns 0 to go on, a positive
 * value to end the watch cleanly, or a negative SW_E* code (message set) to fail with it. */
typedef int (*sw_watch_fn)(sw_watch_type type, json_t *obj, void *payload);
/* Called about every tick_ms while the stream is idle or busy; same return convention. */
typedef int (*sw_watch_tick_fn)(void *payload);

typedef struct sw_watch_opts {
    const char *resource_version; /* NULL or "": synthetic ADDED for the current state first */
    const char *label_selector;   /* or NULL */
    const char *field_selector;   /* or NULL */
    int timeout_seconds;          /* asked of the server; 0: 300 */
    bool no_bookmarks;            /* do not ask for BOOKMARK events */
    size_t max_line;              /* 0: SW_WATCH_MAX_LINE */
    int tick_ms;                  /* 0: no ticks */
    sw_watch_tick_fn on_tick;     /* or NULL */
} sw_watch_opts;

/* A cancellation handle that may outlive several runs. */
int sw_watch_new(sw_watch **out);
void sw_watch_free(sw_watch *w);
/* From any thread: the current (and any later) run returns 0 promptly. */
void sw_watch_cancel(sw_watch *w);
bool sw_watch_cancelled(sw_watch *w);

/* Watches r in ns (NULL: all namespaces) until the server ends the stream (timeout), fn or
 * on_tick asks to stop, or w is cancelled: all return 0. Errors: SW_EGONE when the
 * resourceVersion is too old (ERROR event with code 410, or HTTP 410); the code of any other
 * ERROR event or HTTP error; SW_ELIMIT for a line over max_line; SW_EBADREQUEST for a line that
 * is not an event; SW_EUNAVAILABLE when the connection fails or drops. w may be NULL. */
int sw_watch_run(sw_watch *w, sw_client *c, const sw_resource *r, const char *ns,
                 const sw_watch_opts *opts, sw_watch_fn fn, void *payload);

const char *sw_watch_type_name(sw_watch_type t);

#endif
